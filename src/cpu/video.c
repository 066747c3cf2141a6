/* CPU video backend. Each filtered component is cut into bands of rows,
 * one per thread. A band streams its input rows through a small ring of
 * padded float rows: a row is converted from the pixel format and
 * border-extended once, as it is loaded, and stays in cache while the
 * kernel rows that need it run (conversion fused into the pass, no
 * separate sweep). Each temporal slice k_tau reads its own source: the
 * input frame for tau = 0, a history plane for older frames (the
 * component's samples as they came, densely packed: a quarter of the
 * memory traffic of floats for 8-bit video).
 * Three ways to compute a slice (plan.algo, one for all slices):
 *  - direct: dsp->conv2d, several output rows per pass;
 *  - separable (rank-1 slices): dsp->fir along rows into a ring of
 *    filtered rows, then dsp->conv2d with a one-column kernel down them;
 *  - FFT: tiles of nh x nw, 2D r2c (fft.h: the spectra transposed), the
 *    spectra of all slices summed, one inverse per tile.
 * Rounding, saturation, scale, bias and |.| happen in the store of each
 * finished row. Everything is allocated when the kernel is set. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/kernel_internal.h"
#include "../engine/video_internal.h"
#include "dsp.h"
#include "fft.h"
#include "fpenv.h"
#include "pool.h"

enum { ALGO_DIRECT, ALGO_SEPARABLE, ALGO_FFT };
static const char *const algo_names[] = {"direct", "separable", "fft"};

/* Rows of taps summed into registers before they are added to the output
 * row: bounds the float32 rounding of long direct kernels. */
#define DIRECT_GROUP_TAPS 128

/* A component's grid and where its samples are. */
typedef struct chan {
  unsigned plane, offset, step, w, h;
  cf_sample type;
  int filter;
  int *xmap;   /* padl + padr source columns for the pads (-1: cval) */
  uint8_t *hist; /* t planes of w * h samples (temporal kernels), a ring */
  uint8_t *base; /* w * h samples: the frames the history lacks (set_base),
                    or NULL: those contribute nothing */
} chan;

typedef struct slice {
  float *wpad;       /* direct: kh * kw taps flipped in both axes, with
                        dsp->rows - 1 zero rows above and below */
  float *hrev, *vrev; /* separable: kw row taps and kh column taps,
                         each reversed */
  float *spec;       /* FFT: the kernel's spectrum / (nh * nw) */
} slice;

typedef struct plan {
  unsigned t, kh, kw, cy, cx, padl, padr;
  int algo;
  slice *s;
  size_t nh, nw, nbins; /* FFT tile and its bins (padded to 16) */
  const cf_fft *fft;
} plan;

/* Rows a ring holds, tagged with the virtual row each slot has. */
typedef struct ring {
  float *buf;
  long *tag;
  unsigned n;
  size_t len;
} ring;

typedef struct band {
  ring *rings; /* one per slice, or per slice and component (chunked) */
  unsigned nrings;
  ring *cur;    /* the rings of the component being filtered */
  float *tmp;   /* separable: one padded input row */
  float **rows; /* row pointers handed to the dsp */
  float *out;   /* output rows (dsp->rows, dsp->col_rows for separable, vh
                   for FFT), mb floats each */
  float *tile, *spec, *acc; /* FFT */
  float *bandbuf;           /* FFT: t * nh padded rows */
} band;

typedef struct video {
  cf_video_config cfg;
  const cf_format_desc *fmt;
  const cf_dsp *dsp;
  cf_fft_mode fft_mode; /* CF_FFT_QUICK once frames may be flowing */
  cf_pool *pool;
  unsigned nchan, nbands;
  int copy_rows; /* packed format with bytes passing through: copy each
                    band's rows whole first, then filter over them */
  unsigned chunk; /* packed format, several components filtered (direct
                     or separable): rows of a band done a chunk at a
                     time, every component of it before the next; 0 for
                     a component at a time over the whole band */
  chan ch[4]; /* filtered components, then those copied */
  plan p;
  band *bands;
  size_t rowlen, mb; /* padded row length, output row length (floats) */
  unsigned head, seen;/* history: slot of the current frame, frames kept */
  unsigned hist_t;    /* slots in each history ring */
  /* A kernel of fewer temporal taps than the rings hold keeps them until
   * its first frame (a longer kernel set before that frame still finds
   * every frame: two swaps in a row are the last one); rings of its
   * length wait in fit (fit_t slots, 0: none; NULL rings for 1), and
   * that frame (video_process, the engine's own: a field engine of
   * cudaconvolve's at its own next field) moves the frames still needed
   * there and parks the longer rings in spent. A 64-frame kernel left
   * for a 3x3 one held 63 frames of 1080p (152 MB GRAY8, 439 MB RGBA)
   * until a longer kernel or the end (QA). Nothing is freed in the
   * frame: spent is given back by cf_cpu_video_take_spent (the element's
   * reaper) or by the next kernel change. spent_ready (atomic) hands
   * spent from a pipelined engine's worker to the engine's thread. */
  uint8_t *fit[4], *spent[4];
  unsigned fit_t;
  int spent_ready;
  /* per frame */
  const cf_frame *in, *out;
  char desc[200];
} video;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Index of virtual position i in a line of n samples, or -1 for cval. */
static long map_index(long i, long n, cf_border b)
{
  if (i >= 0 && i < n)
    return i;
  switch (b) {
  case CF_BORDER_CONSTANT:
    return -1;
  case CF_BORDER_NEAREST:
    return i < 0 ? 0 : n - 1;
  case CF_BORDER_REFLECT: { /* d c b a | a b c d | d c b a, period 2n */
    long r = i % (2 * n);
    if (r < 0)
      r += 2 * n;
    return r < n ? r : 2 * n - 1 - r;
  }
  case CF_BORDER_MIRROR: { /* d c b | a b c d | c b a, period 2n - 2 */
    if (n == 1)
      return 0;
    long r = i % (2 * n - 2);
    if (r < 0)
      r += 2 * n - 2;
    return r < n ? r : 2 * n - 2 - r;
  }
  case CF_BORDER_WRAP: {
    long r = i % n;
    return r < 0 ? r + n : r;
  }
  }
  return -1;
}

static unsigned sample_bytes(cf_sample t)
{
  return t == CF_SAMPLE_U8 ? 1 : t == CF_SAMPLE_U16 ? 2 : 4;
}

/* ---- rows ---- */

static const uint8_t *row_ptr(const cf_frame *f, const chan *c, long r)
{
  return (const uint8_t *)f->data[c->plane] + (size_t)r * f->stride[c->plane] +
         c->offset;
}

static unsigned sample_bytes(cf_sample t);

/* Row r of history slot `slot`. */
static uint8_t *hist_row(const chan *c, unsigned slot, long r)
{
  size_t sb = sample_bytes(c->type);
  return c->hist + ((size_t)slot * c->h + (size_t)r) * c->w * sb;
}

/* Padded row for virtual row `vr` of slice tau's source into dst:
 * dst[padl + x] = sample x, pads from the border mode. Rows of the
 * current frame in [own0, own1) are also kept for later frames. */
static void fetch_row(video *v, const chan *c, unsigned tau, long vr,
                      float *dst, long own0, long own1)
{
  const plan *p = &v->p;
  long r = map_index(vr, c->h, v->cfg.border);
  size_t total = (size_t)p->padl + c->w + p->padr;
  if (r < 0) {
    for (size_t j = 0; j < total; j++)
      dst[j] = v->cfg.cval;
    return;
  }
  float *mid = dst + p->padl;
  if (tau == 0) {
    const uint8_t *src = row_ptr(v->in, c, r);
    v->dsp->pix_in(src, c->step, (int)c->type, mid, c->w);
    if (c->hist && r >= own0 && r < own1) {
      uint8_t *h = hist_row(c, v->head, r);
      unsigned sb = sample_bytes(c->type);
      if (c->step == sb)
        memcpy(h, src, (size_t)c->w * sb);
      else
        for (unsigned x = 0; x < c->w; x++)
          memcpy(h + (size_t)x * sb, src + (size_t)x * c->step, sb);
    }
  } else if (tau > v->seen) { /* a frame the engine has not got */
    size_t sb = sample_bytes(c->type);
    v->dsp->pix_in(c->base + (size_t)r * c->w * sb, (unsigned)sb,
                   (int)c->type, mid, c->w);
  } else {
    unsigned slot = (v->head + v->hist_t - tau) % v->hist_t;
    v->dsp->pix_in(hist_row(c, slot, r), sample_bytes(c->type), (int)c->type,
                   mid, c->w);
  }
  for (unsigned j = 0; j < p->padl; j++)
    dst[j] = c->xmap[j] < 0 ? v->cfg.cval : mid[c->xmap[j]];
  for (unsigned j = 0; j < p->padr; j++) {
    int s = c->xmap[p->padl + j];
    mid[c->w + j] = s < 0 ? v->cfg.cval : mid[s];
  }
}

static void ring_reset(ring *r)
{
  for (unsigned i = 0; i < r->n; i++)
    r->tag[i] = LONG_MIN;
}

static unsigned ring_slot(const ring *r, long vr)
{
  long s = vr % (long)r->n;
  return (unsigned)(s < 0 ? s + (long)r->n : s);
}

/* The padded input row vr of slice tau, loading it if the ring lacks it. */
static float *ring_raw(video *v, band *b, const chan *c, unsigned tau,
                       long vr, long own0, long own1)
{
  ring *r = &b->cur[tau];
  unsigned s = ring_slot(r, vr);
  float *row = r->buf + s * r->len;
  if (r->tag[s] != vr) {
    fetch_row(v, c, tau, vr, row, own0, own1);
    r->tag[s] = vr;
  }
  return row;
}

/* The horizontally filtered row vr of slice tau (separable path). */
static float *ring_hfilt(video *v, band *b, const chan *c, unsigned tau,
                         long vr, long own0, long own1)
{
  ring *r = &b->cur[tau];
  unsigned s = ring_slot(r, vr);
  float *row = r->buf + s * r->len;
  if (r->tag[s] != vr) {
    fetch_row(v, c, tau, vr, b->tmp, own0, own1);
    v->dsp->fir(b->tmp, v->p.s[tau].hrev, v->p.kw, row, v->mb);
    r->tag[s] = vr;
  }
  return row;
}

/* Slices with a source: the current frame and the frames kept, or all
 * of them where the frames the engine lacks are a base frame (the
 * filtered channels have one each or none). */
static unsigned active_slices(const video *v)
{
  unsigned n = v->seen + 1;
  return n < v->p.t && !v->ch[0].base ? n : v->p.t;
}

static void store_row(video *v, const chan *c, const float *acc, long r)
{
  uint8_t *dst = (uint8_t *)v->out->data[c->plane] +
                 (size_t)r * v->out->stride[c->plane] + c->offset;
  v->dsp->pix_out(acc, dst, c->step, (int)c->type, c->w, v->cfg.scale,
                  v->cfg.bias, v->cfg.absolute);
}

/* o[r] (+)= sum over input rows q < kh + R - 1 of kernel row q - r (taps
 * w, flipped, with R - 1 zero rows above and below) applied to rows[q],
 * for the r < R output rows the window serves. Rows that feed all R
 * outputs go through dsp->conv2d; the first and last R - 1 feed only
 * some, and go through conv1row for just those, so a NaN in them never
 * meets a padding zero. A kernel of up to DIRECT_GROUP_TAPS taps goes
 * through dsp->conv2d_win instead: all of it in one pass, the same rule
 * kept row by row. */
static void conv_rows(const video *v, float *const *rows, const float *w,
                      unsigned kh, unsigned kw, float *const *o, int add)
{
  const cf_dsp *d = v->dsp;
  if ((size_t)kh * kw <= DIRECT_GROUP_TAPS) { /* the window in one pass */
    d->conv2d_win((const float *const *)rows, w, kh, kw, o, v->mb, add);
    return;
  }
  unsigned R = d->rows, z = R - 1, nq = kh + z;
  unsigned group = DIRECT_GROUP_TAPS / kw ? DIRECT_GROUP_TAPS / kw : 1;
  if (!add && kh <= z) /* no interior row to start the sums */
    for (unsigned r = 0; r < R; r++)
      memset(o[r], 0, v->mb * sizeof(float));
  for (unsigned g = z; g < kh; g += group) {
    unsigned n = kh - g < group ? kh - g : group;
    d->conv2d((const float *const *)rows + g, w + (size_t)g * kw, n, kw, o,
              v->mb, add || g > z);
  }
  for (unsigned q = 0; q < nq; q++) {
    if (q >= z && q < kh)
      continue;
    unsigned r0 = q + 1 > kh ? q + 1 - kh : 0, r1 = q < z ? q : z;
    if (kw <= DIRECT_GROUP_TAPS) /* the outputs it feeds share its loads */
      d->conv2d_edge(rows[q], w + (size_t)(q + z) * kw, kw, o, r0,
                     r1 - r0 + 1, v->mb);
    else
      for (unsigned r = r0; r <= r1; r++)
        d->conv1row(rows[q], w + (size_t)(q - r + z) * kw, kw, o[r], v->mb);
  }
}

/* Output rows [ya, yb) of the band [y0, y1) (whose rows the rings keep
 * from one call to the next). */
static void band_direct(video *v, band *b, const chan *c, long y0, long y1,
                        long ya, long yb)
{
  const plan *p = &v->p;
  unsigned kh = p->kh, nt = active_slices(v), R = v->dsp->rows;
  unsigned nq = kh + R - 1;
  float *o[CF_DSP_MAX_ROWS];
  for (unsigned r = 0; r < R; r++)
    o[r] = b->out + r * v->mb;
  /* R output rows per pass; past yb they are computed and dropped (a
   * chunk is a multiple of R rows: only at the band's end). */
  for (long i = ya; i < yb; i += R) {
    for (unsigned tau = 0; tau < nt; tau++) {
      long v0 = i + p->cy - kh + 1;
      for (unsigned q = 0; q < nq; q++)
        b->rows[q] = ring_raw(v, b, c, tau, v0 + q, y0, y1);
      conv_rows(v, b->rows, p->s[tau].wpad, kh, p->kw, o, tau > 0);
    }
    for (unsigned r = 0; r < R && i + (long)r < yb; r++)
      store_row(v, c, o[r], i + r);
  }
}

/* The rows pass filters each row once into the band's ring (ring_hfilt);
 * the column pass (dsp->conv_cols) makes R output rows a pass from the
 * kh + R - 1 filtered rows they span. */
static void band_separable(video *v, band *b, const chan *c, long y0, long y1,
                           long ya, long yb)
{
  const plan *p = &v->p;
  unsigned nt = active_slices(v), R = v->dsp->col_rows, nq = p->kh + R - 1;
  float *o[CF_DSP_MAX_ROWS];
  for (unsigned r = 0; r < R; r++)
    o[r] = b->out + r * v->mb;
  for (long i = ya; i < yb; i += R) {
    for (unsigned tau = 0; tau < nt; tau++) {
      long v0 = i + p->cy - p->kh + 1;
      for (unsigned q = 0; q < nq; q++)
        b->rows[q] = ring_hfilt(v, b, c, tau, v0 + q, y0, y1);
      v->dsp->conv_cols((const float *const *)b->rows, p->s[tau].vrev, p->kh, o,
                        v->mb, tau > 0);
    }
    for (unsigned r = 0; r < R && i + (long)r < yb; r++)
      store_row(v, c, o[r], i + r);
  }
}

static void band_fft(video *v, band *b, const chan *c, long y0, long y1)
{
  const plan *p = &v->p;
  unsigned nt = active_slices(v);
  size_t nh = p->nh, nw = p->nw, vh = nh - p->kh + 1, vw = nw - p->kw + 1;
  size_t valid = (size_t)p->padl + c->w + p->padr;
  for (long ty = y0; ty < y1; ty += (long)vh) {
    long rows = y1 - ty < (long)vh ? y1 - ty : (long)vh;
    for (unsigned tau = 0; tau < nt; tau++)
      for (size_t a = 0; a < nh; a++)
        fetch_row(v, c, tau, ty + p->cy - p->kh + 1 + (long)a,
                  b->bandbuf + (tau * nh + a) * v->rowlen, y0, y1);
    for (size_t tx = 0; tx < c->w; tx += vw) {
      for (unsigned tau = 0; tau < nt; tau++) {
        for (size_t a = 0; a < nh; a++) {
          const float *src = b->bandbuf + (tau * nh + a) * v->rowlen + tx;
          float *dst = b->tile + a * nw;
          size_t n = valid - tx < nw ? valid - tx : nw;
          memcpy(dst, src, n * sizeof *dst);
          memset(dst + n, 0, (nw - n) * sizeof *dst);
        }
        /* acc: the scratch (make_bands) */
        cf_fft2_forward(p->fft, b->tile, b->spec + tau * 2 * p->nbins, b->acc);
      }
      const float *xs[CF_KERNEL2D_MAX_FRAMES], *hs[CF_KERNEL2D_MAX_FRAMES];
      for (unsigned tau = 0; tau < nt; tau++) {
        xs[tau] = b->spec + tau * 2 * p->nbins;
        hs[tau] = p->s[tau].spec;
      }
      memset(b->acc, 0, 2 * p->nbins * sizeof *b->acc);
      v->dsp->cmac(b->acc, xs, hs, nt, p->nbins);
      /* spec: the scratch (make_bands) */
      cf_fft2_inverse(p->fft, b->acc, b->tile, b->spec);
      size_t n = c->w - tx < vw ? c->w - tx : vw;
      for (long r = 0; r < rows; r++)
        memcpy(b->out + (size_t)r * v->mb + tx,
               b->tile + (r + p->kh - 1) * nw + p->kw - 1, n * sizeof(float));
    }
    for (long r = 0; r < rows; r++)
      store_row(v, c, b->out + (size_t)r * v->mb, ty + r);
  }
}

static void band_copy(video *v, const chan *c, long y0, long y1)
{
  unsigned sb = sample_bytes(c->type);
  for (long r = y0; r < y1; r++) {
    const uint8_t *s = row_ptr(v->in, c, r);
    uint8_t *d = (uint8_t *)v->out->data[c->plane] +
                 (size_t)r * v->out->stride[c->plane] + c->offset;
    if (c->step == sb)
      memcpy(d, s, (size_t)c->w * sb);
    else
      for (unsigned x = 0; x < c->w; x++)
        memcpy(d + (size_t)x * c->step, s + (size_t)x * c->step, sb);
  }
}

static void copy_band_rows(video *v, long y0, long y1)
{
  size_t row = (size_t)v->cfg.width * v->fmt->plane_bpp[0];
  for (long r = y0; r < y1; r++)
    memcpy((uint8_t *)v->out->data[0] + (size_t)r * v->out->stride[0],
           (const uint8_t *)v->in->data[0] + (size_t)r * v->in->stride[0], row);
}

static void filter_rows(video *v, band *b, const chan *c, long y0, long y1,
                        long ya, long yb)
{
  if (v->p.algo == ALGO_DIRECT)
    band_direct(v, b, c, y0, y1, ya, yb);
  else
    band_separable(v, b, c, y0, y1, ya, yb);
}

/* Packed pixels, several components filtered: a chunk of rows at a time,
 * each component over it before the next chunk, so that the chunk's
 * input and output rows stay in cache from one component to the next
 * (a component at a time over the whole band read an RGBA band from
 * memory three times and rewrote its output three times). Each component
 * keeps its own rings from chunk to chunk. */
static void run_band_chunked(video *v, band *b, long y0, long y1)
{
  for (unsigned i = 0; i < b->nrings; i++)
    ring_reset(&b->rings[i]);
  for (long ya = y0; ya < y1; ya += v->chunk) {
    long yb = ya + (long)v->chunk < y1 ? ya + (long)v->chunk : y1;
    if (v->copy_rows)
      copy_band_rows(v, ya, yb);
    for (unsigned k = 0; k < v->nchan; k++) {
      const chan *c = &v->ch[k];
      if (!c->filter) {
        band_copy(v, c, ya, yb);
        continue;
      }
      b->cur = b->rings + (size_t)k * v->p.t;
      filter_rows(v, b, c, y0, y1, ya, yb);
    }
  }
}

/* Band bi's first row of a plane h rows high (its end: bi + 1). */
static long band_row(const video *v, unsigned h, unsigned bi)
{
  return (long)((uint64_t)h * bi / v->nbands);
}

static void run_band(void *ctx, unsigned bi)
{
  video *v = ctx;
  band *b = &v->bands[bi];
  long f0 = band_row(v, v->cfg.height, bi);
  long f1 = band_row(v, v->cfg.height, bi + 1);
  if (v->chunk) { /* every component has the frame's height */
    if (f0 < f1)
      run_band_chunked(v, b, f0, f1);
    return;
  }
  if (v->copy_rows)
    copy_band_rows(v, f0, f1);
  b->cur = b->rings;
  for (unsigned k = 0; k < v->nchan; k++) {
    const chan *c = &v->ch[k];
    long y0 = band_row(v, c->h, bi), y1 = band_row(v, c->h, bi + 1);
    if (y0 == y1)
      continue;
    if (!c->filter) {
      band_copy(v, c, y0, y1);
      continue;
    }
    for (unsigned t = 0; t < v->p.t; t++)
      ring_reset(&b->rings[t]);
    if (v->p.algo == ALGO_FFT)
      band_fft(v, b, c, y0, y1);
    else
      filter_rows(v, b, c, y0, y1, y0, y1);
  }
}

/* ---- planning ---- */

/* Costs in ns on one core, from bench/results/conv2d-crossover-*.md
 * (1080p GRAY32F, AVX-512): direct per tap and sample, separable per tap
 * and sample, loading and storing per sample; the FFT per n log2 n of a
 * tile transform, per bin and slice of the spectral multiply-add, and
 * per tile sample copied in and out. Direct beats the FFT up to about
 * 25x25 there. */
#define NS_DIRECT_TAP 0.034
#define NS_SEP_TAP 0.08
#define NS_SAMPLE 0.6
#define NS_FFT_NLOGN 0.3
#define NS_FFT_BIN 0.5
#define NS_FFT_COPY 0.5

/* Up to 8192, the 2D FFT's limit: any kernel side up to
 * CF_KERNEL2D_MAX_SIDE has a tile. They ended at 1024, and AUTO took a
 * larger kernel direct (an 1100x1100 kernel on 1080p: over a minute a
 * frame, QA); forced FFT refused it. */
static const unsigned tile_sizes[] = {8,    12,   16,   24,   32,  48,  64,
                                      96,   128,  192,  256,  384, 512, 768,
                                      1024, 1536, 2048, 3072, 4096, 6144, 8192};
#define NTILE (sizeof tile_sizes / sizeof tile_sizes[0])

/* FFT tile for a kh x kw kernel on a w x h grid, and its cost per frame
 * (ns, one core, t slices). 0 when no tile fits the kernel. */
static double fft_tile(unsigned kh, unsigned kw, unsigned t, unsigned w,
                       unsigned h, size_t *nh, size_t *nw)
{
  double best = 0;
  for (unsigned a = 0; a < NTILE; a++)
    for (unsigned bb = 0; bb < NTILE; bb++) {
      size_t th = tile_sizes[a], tw = tile_sizes[bb];
      if (th < kh || tw < kw)
        continue;
      /* No point in tiles far beyond the padded frame. */
      if (a > 0 && tile_sizes[a - 1] >= h + kh - 1)
        continue;
      if (bb > 0 && tile_sizes[bb - 1] >= w + kw - 1)
        continue;
      size_t vh = th - kh + 1, vw = tw - kw + 1;
      double tiles = (double)((h + vh - 1) / vh) * (double)((w + vw - 1) / vw);
      double n = (double)(th * tw), bins = (double)(th * (tw / 2 + 1));
      double cost = tiles * ((t + 1) * NS_FFT_NLOGN * n * log2(n) +
                             t * NS_FFT_BIN * bins + (t + 1) * NS_FFT_COPY * n);
      if (best == 0 || cost < best)
        best = cost, *nh = th, *nw = tw;
    }
  return best;
}

static void free_plan(plan *p)
{
  if (p->s)
    for (unsigned t = 0; t < p->t; t++) {
      cf_free(p->s[t].wpad);
      cf_free(p->s[t].hrev);
      cf_free(p->s[t].vrev);
      cf_free(p->s[t].spec);
    }
  free(p->s);
  memset(p, 0, sizeof *p);
}

static cf_status fft_spectra(plan *p, const float *taps, cf_fft_mode mode)
{
  cf_status s = cf_fft2_get(p->nh, p->nw, mode, &p->fft);
  if (s != CF_OK)
    return s;
  p->nbins = round_up(p->nh * (p->nw / 2 + 1), 16);
  float *tile = cf_alloc(p->nh * p->nw * sizeof *tile);
  float *scratch = cf_alloc(cf_fft2_scratch(p->fft) * sizeof *scratch);
  if (!tile || !scratch) {
    cf_free(tile);
    cf_free(scratch);
    return cf_fail(CF_E_NOMEM, "video: out of memory for the FFT tile");
  }
  float norm = 1.0f / (float)(p->nh * p->nw);
  for (unsigned t = 0; t < p->t; t++) {
    p->s[t].spec = cf_alloc(2 * p->nbins * sizeof(float));
    if (!p->s[t].spec) {
      cf_free(tile);
      cf_free(scratch);
      return cf_fail(CF_E_NOMEM, "video: out of memory for kernel spectra");
    }
    memset(tile, 0, p->nh * p->nw * sizeof *tile);
    const float *k = taps + (size_t)t * p->kh * p->kw;
    for (unsigned m = 0; m < p->kh; m++)
      for (unsigned n = 0; n < p->kw; n++)
        tile[m * p->nw + n] = k[m * p->kw + n] * norm;
    cf_fft2_forward(p->fft, tile, p->s[t].spec, scratch);
  }
  cf_free(tile);
  cf_free(scratch);
  return CF_OK;
}

/* The path a plan for k takes on frames of cfg cut into nbands bands, and
 * for ALGO_FFT its tile (*nh x *nw). u: kh + kw doubles of scratch.
 * Reads nothing else: cf_cpu_video_prepare() asks it from any thread. */
static cf_status choose_algo(const cf_video_config *cfg, unsigned nbands,
                             const cf_kernel2d *k, double *u, int *algo,
                             size_t *nh, size_t *nw)
{
  int separable = 1;
  for (unsigned t = 0; t < k->t && separable; t++)
    separable = cf_rank1(k->taps + (size_t)t * k->kh * k->kw, k->kh, k->kw, u,
                      u + k->kh);
  unsigned w = cfg->width, h = cfg->height;
  double px = (double)w * h;
  double c_direct = px * (k->t * NS_DIRECT_TAP * k->kh * k->kw + NS_SAMPLE);
  double c_sep = px * (k->t * NS_SEP_TAP * (k->kh + k->kw) + NS_SAMPLE);
  *nh = *nw = 0;
  /* Tiles cover one band of rows (each thread's), not the whole frame. */
  unsigned hb = (h + nbands - 1) / nbands;
  double c_fft = nbands * fft_tile(k->kh, k->kw, k->t, w, hb, nh, nw);
  switch (cfg->algorithm) {
  case CF_ALGO2D_DIRECT: *algo = ALGO_DIRECT; return CF_OK;
  case CF_ALGO2D_SEPARABLE:
    *algo = ALGO_SEPARABLE;
    if (!separable)
      return cf_fail(CF_E_INVALID,
                     "video: algorithm separable needs a "
                     "rank-1 kernel (every temporal slice the outer product "
                     "of a column and a row); this %ux%u kernel is not",
                     k->kh, k->kw);
    return CF_OK;
  case CF_ALGO2D_FFT:
    *algo = ALGO_FFT;
    if (c_fft == 0)
      return cf_fail(CF_E_INVALID,
                     "video: a %ux%u kernel is too large for "
                     "the FFT path (tiles up to 8192)",
                     k->kh, k->kw);
    return CF_OK;
  default:
    *algo = separable && c_sep < c_direct ? ALGO_SEPARABLE : ALGO_DIRECT;
    double best = *algo == ALGO_SEPARABLE ? c_sep : c_direct;
    if (c_fft > 0 && c_fft < best)
      *algo = ALGO_FFT;
    return CF_OK;
  }
}

static cf_status make_plan(const video *v, const cf_kernel2d *k, plan *p)
{
  memset(p, 0, sizeof *p);
  p->t = k->t, p->kh = k->kh, p->kw = k->kw;
  p->cy = k->kh / 2, p->cx = k->kw / 2;
  p->padl = k->kw - 1 - p->cx, p->padr = p->cx;
  p->s = calloc(p->t, sizeof *p->s);
  double *u = malloc((k->kh + k->kw) * sizeof *u);
  if (!p->s || !u) {
    free(u);
    free(p->s);
    return cf_fail(CF_E_NOMEM, "video: out of memory for the plan");
  }
  size_t nh, nw;
  cf_status s = choose_algo(&v->cfg, v->nbands, k, u, &p->algo, &nh, &nw);
  for (unsigned t = 0; s == CF_OK && t < p->t; t++) {
    const float *kt = k->taps + (size_t)t * k->kh * k->kw;
    slice *sl = &p->s[t];
    if (p->algo == ALGO_DIRECT) {
      unsigned z = v->dsp->rows - 1;
      if (!(sl->wpad = cf_alloc((size_t)(k->kh + 2 * z) * k->kw *
                                sizeof(float))))
        s = cf_fail(CF_E_NOMEM, "video: out of memory for taps");
      else
        for (unsigned q = 0; q < k->kh; q++)
          for (unsigned j = 0; j < k->kw; j++)
            sl->wpad[(q + z) * k->kw + j] =
                kt[(k->kh - 1 - q) * k->kw + (k->kw - 1 - j)];
    } else if (p->algo == ALGO_SEPARABLE) {
      cf_rank1(kt, k->kh, k->kw, u, u + k->kh);
      sl->hrev = cf_alloc(k->kw * sizeof(float));
      sl->vrev = cf_alloc(k->kh * sizeof(float));
      if (!sl->hrev || !sl->vrev)
        s = cf_fail(CF_E_NOMEM, "video: out of memory for taps");
      else {
        for (unsigned j = 0; j < k->kw; j++)
          sl->hrev[j] = (float)u[k->kh + k->kw - 1 - j];
        for (unsigned q = 0; q < k->kh; q++)
          sl->vrev[q] = (float)u[k->kh - 1 - q];
      }
    }
  }
  free(u);
  if (s == CF_OK && p->algo == ALGO_FFT) {
    p->nh = nh, p->nw = nw;
    s = fft_spectra(p, k->taps, v->fft_mode);
  }
  if (s != CF_OK)
    free_plan(p);
  return s;
}

/* ---- scratch and history ---- */

static void free_bands(video *v)
{
  if (!v->bands)
    return;
  for (unsigned i = 0; i < v->nbands; i++) {
    band *b = &v->bands[i];
    if (b->rings)
      for (unsigned j = 0; j < b->nrings; j++) {
        cf_free(b->rings[j].buf);
        free(b->rings[j].tag);
      }
    free(b->rings);
    free(b->rows);
    cf_free(b->tmp);
    cf_free(b->out);
    cf_free(b->tile);
    cf_free(b->spec);
    cf_free(b->acc);
    cf_free(b->bandbuf);
  }
  free(v->bands);
  v->bands = NULL;
}

static cf_status make_bands(video *v)
{
  const plan *p = &v->p;
  unsigned wmax = 0;
  for (unsigned k = 0; k < v->nchan; k++)
    if (v->ch[k].filter && v->ch[k].w > wmax)
      wmax = v->ch[k].w;
  v->mb = round_up(wmax, v->dsp->block);
  /* Reads run up to mb + kw - 1 floats into a row. */
  v->rowlen = round_up(v->mb + p->padl + p->padr + 32, 16);
  if (p->algo == ALGO_FFT && v->rowlen < v->mb + p->nw)
    v->rowlen = round_up(v->mb + p->nw, 16);
  v->bands = calloc(v->nbands, sizeof *v->bands);
  if (!v->bands)
    return cf_fail(CF_E_NOMEM, "video: out of memory for bands");
  /* output rows a pass (direct, separable), or a tile's (FFT) */
  size_t outrows = p->algo == ALGO_FFT         ? p->nh - p->kh + 1
                   : p->algo == ALGO_SEPARABLE ? v->dsp->col_rows
                                               : v->dsp->rows;
  unsigned nf = 0; /* filtered components: the first ones of v->ch */
  for (unsigned k = 0; k < v->nchan; k++)
    nf += v->ch[k].filter;
  /* chunks of about 32 rows, a whole number of passes: 32 RGBA rows of
   * 1920 in and out and the rings of three components are ~1 MB */
  v->chunk = v->fmt->planes == 1 && nf > 1 && p->algo != ALGO_FFT
                 ? (unsigned)((32 + outrows - 1) / outrows * outrows)
                 : 0;
  unsigned nrings = p->t * (v->chunk ? nf : 1);
  /* what a band asks for, said where it cannot be had */
  size_t need = outrows * v->mb * sizeof(float);
  if (p->algo != ALGO_FFT)
    need += (size_t)nrings * (p->kh + outrows - 1) *
            (p->algo == ALGO_DIRECT ? v->rowlen : v->mb) * sizeof(float);
  if (p->algo == ALGO_SEPARABLE)
    need += v->rowlen * sizeof(float);
  /* FFT: acc is the forward transforms' scratch (free until the spectra
   * are summed into it), spec the inverse's (the spectra spent by then):
   * each at least cf_fft2_scratch() floats */
  size_t nspec = 0, nacc = 0;
  if (p->algo == ALGO_FFT) {
    size_t scratch = cf_fft2_scratch(p->fft);
    nspec = p->t * 2 * p->nbins > scratch ? p->t * 2 * p->nbins : scratch;
    nacc = 2 * p->nbins > scratch ? 2 * p->nbins : scratch;
    need += (p->nh * p->nw + nspec + nacc + p->t * p->nh * v->rowlen) *
            sizeof(float);
  }
  for (unsigned i = 0; i < v->nbands; i++) {
    band *b = &v->bands[i];
    int ok = (b->rings = calloc(nrings, sizeof *b->rings)) &&
             (b->rows = calloc(p->kh + outrows, sizeof *b->rows)) &&
             (b->out = cf_alloc(outrows * v->mb * sizeof(float)));
    b->nrings = b->rings ? nrings : 0;
    for (unsigned t = 0; ok && t < nrings && p->algo != ALGO_FFT; t++) {
      ring *r = &b->rings[t];
      r->n = p->kh + (unsigned)outrows - 1;
      r->len = p->algo == ALGO_DIRECT ? v->rowlen : v->mb;
      ok = (r->buf = cf_alloc(r->n * r->len * sizeof(float))) &&
           (r->tag = malloc(r->n * sizeof *r->tag));
    }
    if (ok && p->algo == ALGO_SEPARABLE)
      ok = (b->tmp = cf_alloc(v->rowlen * sizeof(float))) != NULL;
    if (ok && p->algo == ALGO_FFT)
      ok = (b->tile = cf_alloc(p->nh * p->nw * sizeof(float))) &&
           (b->spec = cf_alloc(nspec * sizeof(float))) &&
           (b->acc = cf_alloc(nacc * sizeof(float))) &&
           (b->bandbuf = cf_alloc(p->t * p->nh * v->rowlen * sizeof(float)));
    if (!ok)
      return cf_fail(CF_E_NOMEM, "video: out of memory for the scratch of "
                     "%u band%s, %.1f MiB a band (%s path, kernel %ux%ux%u)",
                     v->nbands, v->nbands == 1 ? "" : "s",
                     (double)need / (1 << 20), algo_names[p->algo], p->t,
                     p->kh, p->kw);
  }
  return CF_OK;
}

/* The border maps of plan p, one per filtered channel, into xm (NULL for
 * the others): all made, or none (nothing else changes). */
static cf_status make_xmaps(const video *v, const plan *p, int **xm)
{
  for (unsigned k = 0; k < v->nchan; k++) {
    const chan *c = &v->ch[k];
    xm[k] = NULL;
    if (!c->filter)
      continue;
    xm[k] = malloc(((size_t)p->padl + p->padr + 1) * sizeof *xm[k]);
    if (!xm[k]) {
      for (unsigned j = 0; j < k; j++)
        free(xm[j]);
      return cf_fail(CF_E_NOMEM, "video: out of memory for border maps");
    }
    for (unsigned j = 0; j < p->padl; j++)
      xm[k][j] = (int)map_index((long)j - p->padl, c->w, v->cfg.border);
    for (unsigned j = 0; j < p->padr; j++)
      xm[k][p->padl + j] = (int)map_index((long)c->w + j, c->w, v->cfg.border);
  }
  return CF_OK;
}

/* History rings of t slots for every filtered channel, into nh (NULL for
 * the others, and for all when t is 1): all made, or none. */
static cf_status alloc_history(const video *v, unsigned t, uint8_t **nh)
{
  for (unsigned k = 0; k < v->nchan; k++) {
    const chan *c = &v->ch[k];
    nh[k] = NULL;
    if (!c->filter || t <= 1)
      continue;
    size_t plane = (size_t)c->w * c->h * sample_bytes(c->type);
    size_t bytes = (size_t)t * plane;
    void *p = NULL;
    /* Not zeroed: a slot is read only once a frame is written to it
     * (frames the engine has not had come from the base frame, or are
     * not in the sum: active_slices), so its pages are touched one frame at
     * a time as frames come. Zeroed (cf_alloc), a swap to 64 frames of
     * 1080p GRAY16 stopped the streaming thread for 116 ms (bench_conv2d
     * --swap-from 3 --temporal 64 --format GRAY16_LE, 515 ms seen in a
     * loaded daemon: QA). A trial (cf_cpu_video_try) asks for the address
     * space alone so. */
    if (posix_memalign(&p, 64, bytes) == 0)
      nh[k] = p;
    if (!nh[k]) {
      for (unsigned j = 0; j < k; j++)
        cf_free(nh[j]);
      return cf_fail(CF_E_NOMEM, "video: out of memory for %u frames of "
                     "temporal state", t - 1);
    }
  }
  return CF_OK;
}

/* Take the rings nh (alloc_history(v, t)), keeping the most recent frames
 * that fit; the rings they replace go into nh, for the caller to free. */
static void set_history(video *v, unsigned t, uint8_t **nh)
{
  unsigned keep = v->seen < t - 1 ? v->seen : t - 1;
  for (unsigned k = 0; k < v->nchan; k++) {
    chan *c = &v->ch[k];
    if (!c->filter)
      continue;
    size_t plane = (size_t)c->w * c->h * sample_bytes(c->type);
    for (unsigned tau = 1; tau <= keep; tau++)
      memcpy(nh[k] + (t - tau) * plane,
             hist_row(c, (v->head + v->hist_t - tau) % v->hist_t, 0), plane);
    uint8_t *old = c->hist;
    c->hist = nh[k];
    nh[k] = old;
  }
  v->hist_t = t;
  v->head = 0;
  v->seen = keep;
}

/* A kernel's state, all made before anything changes (make_kstate), then
 * put in force (put_kstate), which leaves the state it replaced in its
 * place for free_kstate. */
typedef struct {
  plan p;
  band *bands;
  unsigned nbands;
  size_t mb, rowlen;
  unsigned chunk;
  int *xm[4];
  uint8_t *nh[4];
  unsigned hist_t; /* the rings in nh are of hist_t slots (0: none) */
  uint8_t *back[2][4]; /* rings v gave up (fit, spent), freed with ks */
} kstate;

static void free_kstate(kstate *ks)
{
  video tmp = {.bands = ks->bands, .nbands = ks->nbands};
  free_bands(&tmp);
  free_plan(&ks->p);
  for (unsigned j = 0; j < 4; j++) {
    free(ks->xm[j]);
    cf_free(ks->nh[j]);
    cf_free(ks->back[0][j]);
    cf_free(ks->back[1][j]);
  }
  memset(ks, 0, sizeof *ks);
}

/* Whether a change of v to a kernel of t temporal taps makes new history
 * rings (t slots): a shorter kernel keeps the ring as it is until its
 * first frame (the frames beyond its t - 1 are forgotten then, not now,
 * so that a longer kernel set before that frame still finds them: two
 * swaps in a row are the last one), which puts v->fit in force. */
static int history_grows(const video *v, unsigned t)
{
  return t > v->hist_t || (t > 1 && !v->ch[0].hist);
}

/* The plan, scratch and maps of kernel k for v, and with `grow` its
 * history rings: all made, or none (ks zeroed; v unchanged either
 * way). */
static cf_status make_kstate(const video *v, const cf_kernel2d *k, int grow,
                             kstate *ks)
{
  memset(ks, 0, sizeof *ks);
  cf_fpenv env = cf_fpenv_enter(); /* the spectra as the frames see taps */
  cf_status s = make_plan(v, k, &ks->p);
  cf_fpenv_leave(env);
  if (s != CF_OK) { /* it gave back what it made (not always zeroed) */
    memset(ks, 0, sizeof *ks);
    return s;
  }
  video trial = *v;
  trial.p = ks->p;
  trial.bands = NULL;
  s = make_bands(&trial);
  ks->bands = trial.bands;
  ks->nbands = trial.nbands;
  ks->mb = trial.mb;
  ks->rowlen = trial.rowlen;
  ks->chunk = trial.chunk;
  if (s == CF_OK && (s = make_xmaps(v, &ks->p, ks->xm)) != CF_OK)
    memset(ks->xm, 0, sizeof ks->xm);
  if (s == CF_OK && grow) {
    if ((s = alloc_history(v, k->t, ks->nh)) == CF_OK)
      ks->hist_t = k->t;
    else
      memset(ks->nh, 0, sizeof ks->nh);
  }
  if (s != CF_OK)
    free_kstate(ks);
  return s;
}

/* Put kernel state ks (make_kstate for v's shape, with its history rings
 * where history_grows) in force; what it replaces goes into ks. */
static void put_kstate(video *v, kstate *ks)
{
  int grow = history_grows(v, ks->p.t);
  plan op = v->p;
  band *ob = v->bands;
  v->p = ks->p;
  v->bands = ks->bands;
  ks->p = op;
  ks->bands = ob;
  size_t mb = v->mb, rowlen = v->rowlen;
  unsigned chunk = v->chunk;
  v->mb = ks->mb, v->rowlen = ks->rowlen, v->chunk = ks->chunk;
  ks->mb = mb, ks->rowlen = rowlen, ks->chunk = chunk;
  for (unsigned j = 0; j < v->nchan; j++) {
    int *x = v->ch[j].xmap;
    v->ch[j].xmap = ks->xm[j];
    ks->xm[j] = x;
  }
  if (grow)
    set_history(v, ks->hist_t, ks->nh);
  snprintf(v->desc, sizeof v->desc, "kernel %ux%ux%u, %s%s, %u band%s", v->p.t,
           v->p.kh, v->p.kw, algo_names[v->p.algo],
           v->p.algo == ALGO_FFT ? " tiles" : "", v->nbands,
           v->nbands == 1 ? "" : "s");
  if (v->p.algo == ALGO_FFT) {
    size_t l = strlen(v->desc);
    snprintf(v->desc + l, sizeof v->desc - l, " (%zux%zu%s)", v->p.nh, v->p.nw,
             cf_fft_hasty(v->p.fft) ? ", FFT plan not measured" : "");
  }
}

/* Move v's rings waiting for a shorter kernel's first frame into to
 * (empty), none waiting then. */
static void take_fit(video *v, uint8_t **to)
{
  for (unsigned j = 0; j < 4; j++) {
    to[j] = v->fit[j];
    v->fit[j] = NULL;
  }
  v->fit_t = 0;
}

/* Move the rings a frame gave up into to (empty), if there are. */
static int take_spent(video *v, uint8_t **to)
{
  if (!__atomic_load_n(&v->spent_ready, __ATOMIC_ACQUIRE))
    return 0;
  for (unsigned j = 0; j < 4; j++) {
    to[j] = v->spent[j];
    v->spent[j] = NULL;
  }
  __atomic_store_n(&v->spent_ready, 0, __ATOMIC_RELEASE);
  return 1;
}

/* After a frame filtered with a kernel of fewer temporal taps than the
 * rings hold: the rings of its length in force, the frames it needs
 * copied there, the longer ones parked for take_spent (where the last
 * ones are still parked: at a later frame). Allocates and frees
 * nothing. */
static void fit_history(video *v)
{
  if (!v->fit_t || v->fit_t != v->p.t || v->fit_t >= v->hist_t ||
      __atomic_load_n(&v->spent_ready, __ATOMIC_ACQUIRE))
    return;
  set_history(v, v->fit_t, v->fit); /* v->fit: the longer rings now */
  take_fit(v, v->spent);
  __atomic_store_n(&v->spent_ready, 1, __ATOMIC_RELEASE);
}

/* Build plan, scratch and maps for kernel k; on failure v is unchanged.
 * The maps and the history too before anything changes: a failure
 * leaves the kernel in force running. */
static cf_status install_kernel(video *v, const cf_kernel2d *k)
{
  kstate ks;
  int grow = history_grows(v, k->t);
  cf_status s = make_kstate(v, k, grow, &ks);
  if (s != CF_OK)
    return s;
  put_kstate(v, &ks);
  /* rings of an earlier shorter kernel, and those a frame gave up, freed
   * with the state replaced */
  take_fit(v, ks.back[0]);
  take_spent(v, ks.back[1]);
  free_kstate(&ks);
  /* rings of a shorter kernel's length, for its first frame (none
   * to be had: the longer ones stay) */
  if (!grow && k->t < v->hist_t) {
    if (alloc_history(v, k->t, v->fit) == CF_OK)
      v->fit_t = k->t;
    else
      memset(v->fit, 0, sizeof v->fit);
  }
  return CF_OK;
}

/* ---- frames ---- */

static cf_status video_process(void *impl, const cf_frame *in,
                               const cf_frame *out)
{
  video *v = impl;
  cf_status s = cf_video_check_frames(&v->cfg, in, out);
  if (s != CF_OK)
    return s;
  v->in = in;
  v->out = out;
  /* denormals flushed, as the audio engine does (fpenv.h): in this
   * thread, and in the pool's workers, which take this thread's control
   * register (GRAY32F frames of denormals ran the FFT path 1.2x slower
   * on this project's EPYC VM, the others alike: bench/results/
   * video-denormal-vm-2026-12-01.md; many Intel CPUs are reported to
   * be far slower on them) */
  cf_fpenv env = cf_fpenv_enter();
  cf_pool_run(v->pool, run_band, v, v->nbands);
  cf_fpenv_leave(env);
  if (v->hist_t > 1) { /* this frame went into the ring's head */
    v->head = (v->head + 1) % v->hist_t;
    v->seen = v->seen + 1 < v->p.t - 1 ? v->seen + 1 : v->p.t - 1;
  }
  fit_history(v);
  v->in = v->out = NULL;
  return CF_OK;
}

static void video_reset(void *impl)
{
  video *v = impl;
  v->seen = 0;
  v->head = 0;
}

static cf_status video_set_kernel(void *impl, const cf_kernel2d *k)
{
  return install_kernel(impl, k);
}

static size_t video_latency(const void *impl)
{
  (void)impl;
  return 0;
}

static cf_status video_flush(void *impl, const cf_frame *out, int *got)
{
  (void)impl, (void)out;
  *got = 0; /* no latency (video_pipe.c delays): nothing is ever pending */
  return CF_OK;
}

static void video_describe(const void *impl, char *buf, size_t n)
{
  const video *v = impl;
  snprintf(buf, n, "%ux%u %s, %s, %s", v->cfg.width, v->cfg.height,
           v->fmt->name, v->desc, v->dsp->name);
}

static void video_destroy(void *impl)
{
  video *v = impl;
  free_bands(v);
  free_plan(&v->p);
  for (unsigned k = 0; k < v->nchan; k++) {
    free(v->ch[k].xmap);
    cf_free(v->ch[k].hist);
    cf_free(v->ch[k].base);
  }
  for (unsigned k = 0; k < 4; k++) {
    cf_free(v->fit[k]);
    cf_free(v->spent[k]);
  }
  cf_pool_free(v->pool);
  free(v);
}

/* The frames the history lacks: f's filtered components (a tight frame
 * of the engine's size and format), kept in the history's sample format;
 * NULL: none (they contribute nothing). All made or none changed. */
static cf_status video_set_base(void *impl, const cf_frame *f)
{
  video *v = impl;
  uint8_t *nb[4] = {NULL, NULL, NULL, NULL};
  for (unsigned k = 0; f && k < v->nchan; k++) {
    const chan *c = &v->ch[k];
    if (!c->filter)
      continue;
    size_t sb = sample_bytes(c->type);
    if (!(nb[k] = cf_alloc((size_t)c->w * c->h * sb))) {
      for (unsigned j = 0; j < k; j++)
        cf_free(nb[j]);
      return cf_fail(CF_E_NOMEM, "video: out of memory for the history's "
                     "base frame");
    }
    for (unsigned r = 0; r < c->h; r++) {
      const uint8_t *src = row_ptr(f, c, r);
      uint8_t *dst = nb[k] + (size_t)r * c->w * sb;
      for (unsigned x = 0; x < c->w; x++)
        memcpy(dst + (size_t)x * sb, src + (size_t)x * c->step, sb);
    }
  }
  for (unsigned k = 0; k < v->nchan; k++) {
    cf_free(v->ch[k].base);
    v->ch[k].base = nb[k];
  }
  return CF_OK;
}

static void video_set_output(void *impl, const cf_video_out *o)
{
  video *v = impl;
  v->cfg.scale = o->scale;
  v->cfg.bias = o->bias;
  v->cfg.absolute = o->absolute;
}

static void video_setup(video *v, const cf_video_config *cfg,
                        cf_fft_mode fft_mode);

/* Another layout of the same grids (I420 <-> NV12): only where each
 * component's samples are read and written changes; the history, base
 * frame, border maps and kernel state hold samples, not bytes. */
static cf_status video_set_format(void *impl, cf_pixel_format f)
{
  video *v = impl;
  if (!cf_format_same_grids(v->cfg.format, f))
    return cf_fail(CF_E_INVALID, "video: cannot change %s frames to %s",
                   v->fmt->name, cf_pixel_format_name(f));
  video w; /* the channels of f, in v's order (allocates nothing) */
  memset(&w, 0, sizeof w);
  cf_video_config c = v->cfg;
  c.format = f;
  video_setup(&w, &c, v->fft_mode);
  for (unsigned k = 0; k < v->nchan; k++) {
    v->ch[k].plane = w.ch[k].plane;
    v->ch[k].offset = w.ch[k].offset;
    v->ch[k].step = w.ch[k].step;
  }
  v->cfg.format = f;
  v->fmt = w.fmt;
  return CF_OK;
}

static const cf_video_ops ops_table = {
    video_process,  video_reset,     video_set_kernel, video_describe,
    video_destroy,  video_latency,   video_flush,      video_set_output,
    video_set_base, video_set_format};

static void add_chan(video *v, const cf_chan_desc *d, int filter)
{
  chan *c = &v->ch[v->nchan++];
  c->plane = d->plane, c->offset = d->offset, c->step = d->step;
  c->w = cf_sub_w(v->cfg.width, d->sub);
  c->h = cf_sub_h(v->cfg.height, d->sub);
  c->type = v->fmt->sample;
  c->filter = filter;
}

unsigned cf_cpu_video_bands(const cf_video_config *cfg, const cf_kernel2d *k)
{
  unsigned threads = cfg->threads ? cfg->threads : cf_cpu_count();
  /* Bands below ~16 rows or tiny frames are not worth a hand-off. */
  unsigned nb = cfg->height / 16 ? cfg->height / 16 : 1;
  if ((uint64_t)cfg->width * cfg->height * k->kh * k->kw * k->t < 200000)
    nb = 1;
  return threads < nb ? threads : nb;
}

cf_status cf_cpu_video_prepare(const cf_video_config *cfg, unsigned nbands,
                               const cf_kernel2d *k)
{
  double *u = malloc((k->kh + k->kw) * sizeof *u);
  if (!u)
    return cf_fail(CF_E_NOMEM, "video: out of memory");
  size_t nh, nw;
  int algo;
  cf_status s = choose_algo(cfg, nbands ? nbands : cf_cpu_video_bands(cfg, k),
                            k, u, &algo, &nh, &nw);
  free(u);
  if (s == CF_OK && algo == ALGO_FFT) {
    const cf_fft *fft;
    s = cf_fft2_get(nh, nw, CF_FFT_MEASURE, &fft);
  }
  return s;
}

/* v (zeroed) for frames of cfg: its components, no kernel, no threads. */
static void video_setup(video *v, const cf_video_config *cfg,
                        cf_fft_mode fft_mode)
{
  v->cfg = *cfg;
  v->fmt = cf_format_desc_get(cfg->format);
  v->dsp = cf_dsp_get();
  v->fft_mode = fft_mode;
  unsigned mask = v->fmt->ncomp == 1 ? 1u : cfg->components;
  for (unsigned i = 0; i < v->fmt->ncomp; i++)
    if (mask & (1u << i))
      add_chan(v, &v->fmt->comp[i], 1);
  /* Packed pixels: one memcpy per row beats copying alpha (or unselected
   * components) a byte at a time. */
  unsigned unselected = 0;
  for (unsigned i = 0; i < v->fmt->ncomp; i++)
    unselected += !(mask & (1u << i));
  v->copy_rows = v->fmt->planes == 1 && (unselected || v->fmt->has_extra);
  for (unsigned i = 0; i < v->fmt->ncomp && !v->copy_rows; i++)
    if (!(mask & (1u << i)))
      add_chan(v, &v->fmt->comp[i], 0);
}

/* A kernel's state built ahead (cf_cpu_video_build): the shape it was
 * built for (a video without kernel or threads) and the state. */
struct cf_cpu_built {
  video *shape;
  kstate ks;
  int used; /* put in force: ks holds the state it replaced */
};

cf_status cf_cpu_video_build(const cf_video_config *cfg, unsigned nbands,
                             const cf_kernel2d *k, cf_cpu_built **out)
{
  *out = NULL;
  cf_cpu_built *b = calloc(1, sizeof *b);
  if (!b || !(b->shape = calloc(1, sizeof *b->shape))) {
    free(b);
    return cf_fail(CF_E_NOMEM, "video: out of memory");
  }
  video_setup(b->shape, cfg, CF_FFT_QUICK);
  b->shape->nbands = nbands ? nbands : cf_cpu_video_bands(cfg, k);
  /* the history too, as from none */
  cf_status s = make_kstate(b->shape, k, 1, &b->ks);
  if (s != CF_OK) {
    cf_cpu_video_free_built(b);
    return s;
  }
  *out = b;
  return CF_OK;
}

void cf_cpu_video_free_built(cf_cpu_built *b)
{
  if (!b)
    return;
  free_kstate(&b->ks);
  free(b->shape);
  free(b);
}

cf_status cf_cpu_video_try(const cf_video_config *cfg, unsigned nbands,
                           const cf_kernel2d *k)
{
  cf_cpu_built *b;
  cf_status s = cf_cpu_video_build(cfg, nbands, k, &b);
  cf_cpu_video_free_built(b);
  return s;
}

/* Whether state built for `shape` serves v: the same bands and the same
 * components of the same sizes, border and algorithm choice. */
static int same_shape(const video *shape, const video *v)
{
  const cf_video_config *a = &shape->cfg, *c = &v->cfg;
  /* the state holds samples: a layout of the same grids (I420 <-> NV12,
   * cf_engine_set_pixel_format since it was built) serves */
  int relaid = shape->fmt != v->fmt;
  if (shape->nbands != v->nbands || shape->nchan != v->nchan ||
      !cf_format_same_grids(a->format, c->format) || shape->dsp != v->dsp ||
      shape->copy_rows != v->copy_rows || a->width != c->width ||
      a->height != c->height || a->border != c->border ||
      a->algorithm != c->algorithm)
    return 0;
  for (unsigned j = 0; j < v->nchan; j++) {
    const chan *x = &shape->ch[j], *y = &v->ch[j];
    if (x->w != y->w || x->h != y->h || x->type != y->type ||
        x->filter != y->filter ||
        (!relaid && (x->plane != y->plane || x->offset != y->offset ||
                     x->step != y->step)))
      return 0;
  }
  return 1;
}

cf_status cf_cpu_video_set_built(void *impl, const cf_video_ops *ops,
                                 cf_cpu_built *b)
{
  if (ops != &ops_table)
    return cf_cpu_video_pipe_set_built(impl, ops, b);
  video *v = impl;
  if (b->used || !same_shape(b->shape, v) ||
      (history_grows(v, b->ks.p.t) && b->ks.hist_t != b->ks.p.t))
    return CF_E_STATE;
  b->used = 1;
  kstate *ks = &b->ks;
  take_spent(v, ks->back[1]);
  if (!history_grows(v, ks->p.t) && ks->p.t < v->hist_t &&
      ks->hist_t == ks->p.t) {
    /* b's rings wait for the kernel's first frame (fit_history); those
     * of a shorter kernel set before, if any, go into b */
    for (unsigned j = 0; j < 4; j++) {
      uint8_t *x = ks->nh[j];
      ks->nh[j] = v->fit[j];
      v->fit[j] = x;
    }
    v->fit_t = ks->p.t;
  } else {
    take_fit(v, ks->back[0]);
  }
  put_kstate(v, ks);
  return CF_OK;
}

cf_status cf_cpu_video_take_spent(void *impl, const cf_video_ops *ops,
                                  cf_cpu_built **out)
{
  *out = NULL;
  if (ops != &ops_table)
    return cf_cpu_video_pipe_take_spent(impl, ops, out);
  video *v = impl;
  if (!__atomic_load_n(&v->spent_ready, __ATOMIC_ACQUIRE))
    return CF_OK;
  cf_cpu_built *b = calloc(1, sizeof *b);
  if (!b) /* taken at a later call */
    return cf_fail(CF_E_NOMEM, "video: out of memory");
  b->used = 1; /* holds rings, no kernel */
  take_spent(v, b->ks.back[1]);
  *out = b;
  return CF_OK;
}

cf_status cf_cpu_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                           cf_fft_mode fft_mode, void **impl,
                           const cf_video_ops **ops)
{
  if (cfg->pipeline_depth)
    return cf_cpu_video_pipe_new(cfg, k, fft_mode, impl, ops);
  video *v = calloc(1, sizeof *v);
  if (!v)
    return cf_fail(CF_E_NOMEM, "video: out of memory");
  video_setup(v, cfg, fft_mode);
  v->nbands = cf_cpu_video_bands(cfg, k);
  cf_status s = cf_pool_new(v->nbands, &v->pool);
  if (s == CF_OK)
    s = install_kernel(v, k);
  if (s != CF_OK) {
    video_destroy(v);
    return s;
  }
  v->fft_mode = CF_FFT_QUICK; /* a kernel change comes between frames */
  *impl = v;
  *ops = &ops_table;
  return CF_OK;
}
