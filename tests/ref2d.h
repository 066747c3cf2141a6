/* Test support: an independent float64 naive reference of the video
 * contract (include/cudafilter/video.h and kernel2d.h).
 *
 * Nothing here uses the library: the pixel layouts are written out again
 * from the contract, the border modes are index mappings as scipy.ndimage
 * defines them (checked against scipy by tests/ref2d_scipy_check.py), and
 * every sum is a plain loop in double. Only the public types (cf_border,
 * cf_frame, cf_pixel_format, cf_video_config) are shared. */
#ifndef CF_TEST_REF2D_H
#define CF_TEST_REF2D_H

#include <stddef.h>
#include <stdint.h>

#include <cudafilter/video.h>

/* Where sample i of index range [0, n) comes from for an index i that may
 * lie outside: the source index, or -1 for "the constant" (only
 * CF_BORDER_CONSTANT). reflect: period 2n (d c b a | a b c d | d c b a);
 * mirror: period 2n - 2 (n == 1: always 0); wrap: modulo; nearest: clamp. */
long ref2d_map(long i, long n, cf_border b);

/* y[i][x] = sum_m sum_n k[m][n] * X(i - m + kh / 2, x - n + kw / 2) for a
 * w x h plane x (row-major, w doubles a row) and a kh x kw kernel k
 * (row-major), X applying border b (cval outside for CONSTANT). With
 * accumulate the result is added to y, else stored. x and y must not
 * overlap. This is scipy.ndimage.convolve(x, k, mode, cval, origin=0). */
void ref2d_convolve(const double *x, unsigned w, unsigned h, const double *k,
                    unsigned kh, unsigned kw, cf_border b, double cval,
                    double *y, int accumulate);

/* A pixel format's layout, from video.h: one sample (component) lives in
 * `plane` at byte `offset` of each pixel, `step` bytes from one pixel to
 * the next along a row, on a grid halved (rounded up) in x if subx, in y
 * if suby. */
typedef struct ref2d_chan {
  unsigned plane, offset, step, subx, suby;
} ref2d_chan;

typedef struct ref2d_fmt {
  unsigned bytes; /* bytes per sample: 1 (u8), 2 (u16 LE), 4 (f32) */
  int is_float;
  double maxv; /* largest integer sample (255, 65535) */
  unsigned planes;
  unsigned plane_bpp[3]; /* bytes per pixel of each plane's grid */
  unsigned plane_subx[3], plane_suby[3];
  unsigned ncomp; /* 1 or 3: R G B or Y U V (mask bits 1, 2, 4) */
  ref2d_chan comp[3];
  unsigned nextra; /* alpha or X bytes, copied unchanged */
  ref2d_chan extra;
} ref2d_fmt;

/* 0 for an unknown format. */
int ref2d_fmt_get(cf_pixel_format f, ref2d_fmt *out);
/* Plane p's grid and the bytes of one of its rows (no padding). */
void ref2d_plane_size(const ref2d_fmt *f, unsigned p, unsigned w, unsigned h,
                      unsigned *pw, unsigned *ph);
size_t ref2d_row_bytes(const ref2d_fmt *f, unsigned p, unsigned w);
/* A component's grid. */
void ref2d_chan_size(const ref2d_chan *c, unsigned w, unsigned h, unsigned *cw,
                     unsigned *ch);
/* The bytes of sample (x, y) of channel c in frame fr. */
const uint8_t *ref2d_sample_ptr(const ref2d_fmt *f, const cf_frame *fr,
                                const ref2d_chan *c, unsigned x, unsigned y);
/* Sample (x, y) of c in its own units, as a double. */
double ref2d_load(const ref2d_fmt *f, const cf_frame *fr, const ref2d_chan *c,
                  unsigned x, unsigned y);
/* Store v: floats as (float)v; integers NaN -> 0, rounded to nearest (ties
 * to even), saturated to 0..maxv. */
void ref2d_store(const ref2d_fmt *f, const cf_frame *fr, const ref2d_chan *c,
                 unsigned x, unsigned y, double v);
/* The integer a value stores as (NaN -> 0, nearest-even, saturated). */
double ref2d_quantize(const ref2d_fmt *f, double v);

/* The whole video engine: kernel, history, scale/bias/absolute, store. */
typedef struct ref2d_video ref2d_video;

/* cfg: width, height, format, components, border, cval, scale, bias,
 * absolute are used (defaults are not applied: pass what the engine gets
 * after cf_video_config_init). taps: t x kh x kw floats as cf_kernel2d.
 * Returns NULL on an unknown format or out of memory. */
ref2d_video *ref2d_video_new(const cf_video_config *cfg, unsigned t,
                             unsigned kh, unsigned kw, const float *taps);
void ref2d_video_free(ref2d_video *v);
/* Next frame on: the kept history stays (frames beyond the new t - 1 are
 * forgotten after the next frame). */
int ref2d_video_set_kernel(ref2d_video *v, unsigned t, unsigned kh, unsigned kw,
                           const float *taps);
void ref2d_video_reset(ref2d_video *v);
/* The frames not kept (before the first, after a reset, beyond those
 * kept) are f (loaded now), not zeros; NULL: zeros. 0: out of memory. */
int ref2d_video_set_base(ref2d_video *v, const cf_frame *f);
/* ref2d_video_set_base with the format's black: YUV Y 16 (0 in full
 * range), U = V 128; zeros in the others. */
int ref2d_video_set_black(ref2d_video *v, int full_range);
/* Next frame on: frames in format f, whose components lie on the same
 * grids as the current format's (I420 <-> NV12), the history kept. 0 where
 * they do not. */
int ref2d_video_set_format(ref2d_video *v, cf_pixel_format f);
/* Next frame on: the output stage (scale, bias, absolute). */
void ref2d_video_set_output(ref2d_video *v, float scale, float bias,
                            int absolute);
/* Frames kept for later kernels (<= t - 1). */
unsigned ref2d_video_kept(const ref2d_video *v);
/* Filter one frame. `out` is written only where the engine must write: the
 * samples of every component (selected: the filtered value; unselected:
 * copied from `in`) and alpha/X (copied); stride padding is left alone.
 * If val is not NULL, val[c] (when not NULL; cw x ch doubles) receives,
 * for each selected component c, scale * conv + bias (|.| if absolute)
 * before the store. Returns 0 on out of memory. */
int ref2d_video_frame(ref2d_video *v, const cf_frame *in, const cf_frame *out,
                      double *const val[3]);

#endif
