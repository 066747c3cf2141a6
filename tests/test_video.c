/* The video engine against its contract (include/cudafilter/video.h and
 * kernel2d.h).
 *
 * Every test runs once per variant: each available backend (CPU always,
 * CUDA where a device exists; an unavailable one prints "skipped: <backend>:
 * <reason>") and, on the CPU, each forced 2D algorithm (direct, separable,
 * fft, auto). Every output is compared with the float64 naive reference of
 * tests/ref2d.c (itself checked against scipy.ndimage.convolve by
 * tests/ref2d_scipy_check.py) on random frames, sizes, strides and kernels;
 * the seed is printed and every failure prints its case.
 *
 * Tolerances: float formats, relative L2 error per component and frame
 * <= 1e-6 (direct, separable) or 2e-5 (fft, auto, cuda); integer formats,
 * every sample within 1 code value. Every byte that is not a selected
 * sample (unselected components, alpha/X, stride padding) must be exactly
 * what the contract says: copied from the input, or not written at all.
 *
 * Environment: CF_TEST_SEED (replay), CF_TEST_VARIANT (run only variants
 * whose name contains it, e.g. "cpu-fft"), CF_TEST_FILTER and CF_TEST_SKIP
 * (cmocka test name patterns to run / to leave out). */
#include <cudafilter/engine.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/video.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ref.h"
#include "ref2d.h"

/* ------------------------------------------------------------------ */
/* Variants                                                             */

typedef struct variant {
  const char *name;
  cf_backend backend;
  cf_algorithm2d algo;
  unsigned id;
  int pipelined; /* random cases run with pipeline_depth 1..3 */
} variant;

static const variant variants[] = {
    {"cpu-direct", CF_BACKEND_CPU, CF_ALGO2D_DIRECT, 1, 0},
    {"cpu-separable", CF_BACKEND_CPU, CF_ALGO2D_SEPARABLE, 2, 0},
    {"cpu-fft", CF_BACKEND_CPU, CF_ALGO2D_FFT, 3, 0},
    {"cpu-auto", CF_BACKEND_CPU, CF_ALGO2D_AUTO, 4, 0},
    {"cpu-pipelined", CF_BACKEND_CPU, CF_ALGO2D_AUTO, 6, 1},
    {"cuda-auto", CF_BACKEND_CUDA, CF_ALGO2D_AUTO, 5, 0},
    {"cuda-pipelined", CF_BACKEND_CUDA, CF_ALGO2D_AUTO, 7, 1},
    {"cuda-fft", CF_BACKEND_CUDA, CF_ALGO2D_FFT, 8, 0},
};

static const variant *V; /* the variant running now */

/* Reference work per frame (multiply-accumulates), so that the suite stays
 * short on 2 shared cores. */
#define MAX_REF_MACS 3e6
#define GUARD 16 /* bytes after every plane that must stay untouched */

static const cf_pixel_format all_formats[] = {
    CF_PIX_GRAY8, CF_PIX_GRAY16_LE, CF_PIX_GRAY32F, CF_PIX_RGBA,
    CF_PIX_BGRA,  CF_PIX_RGBX,      CF_PIX_BGRX,    CF_PIX_RGB,
    CF_PIX_BGR,   CF_PIX_I420,      CF_PIX_NV12,    CF_PIX_Y444,
    CF_PIX_Y42B};
#define NFORMATS (sizeof all_formats / sizeof *all_formats)
static const char *const fmt_names[] = {"GRAY8", "GRAY16_LE", "GRAY32F", "RGBA",
                                        "BGRA",  "RGBx",      "BGRx",    "RGB",
                                        "BGR",   "I420",      "NV12",    "Y444",
                                        "Y42B"};

static int is_separable(void)
{
  return V->algo == CF_ALGO2D_SEPARABLE;
}
static int is_exact_path(void)
{
  return V->backend == CF_BACKEND_CPU &&
         (V->algo == CF_ALGO2D_DIRECT || V->algo == CF_ALGO2D_SEPARABLE);
}
/* Direct and separable paths round every product and sum in float: the
 * error of a sum of K taps grows as sqrt(K) (measured on the CPU direct
 * path: usually under 5e-8 * sqrt(K) relative, but up to 9.9e-8 * sqrt(K)
 * on the AVX2 and generic tables, e.g. CF_TEST_SEED=1795512287 CF_DSP=avx2
 * test_set_kernel: a 14x76 kernel over a 60x1 frame, mostly constant
 * border, where the rounding of every output is the same so the L2 does not
 * average it out), so beyond ~44 taps the 1e-6 grows as 1.5e-7 * sqrt(K)
 * (2.5 units of float rounding). */
static size_t g_taps = 1; /* T * Kh * Kw of the kernel checked now */
static double tol(void)
{
  if (!is_exact_path())
    return 2e-5;
  double t = 1.5e-7 * sqrt((double)g_taps);
  return t > 1e-6 ? t : 1e-6;
}

/* ------------------------------------------------------------------ */
/* Failure reporting                                                    */


/* Each test draws from its own stream: seed, variant and test number. */
static void test_rng(ref_rng *r, unsigned test)
{
  ref_rng_init(r, check_seed * 1000003ull + V->id * 7919ull + test);
}

static const char *fmt_name(cf_pixel_format f)
{
  return (unsigned)f < NFORMATS ? fmt_names[f] : "?";
}

static const char *border_name(cf_border b)
{
  static const char *const n[] = {"constant", "nearest", "reflect", "mirror",
                                  "wrap"};
  return (unsigned)b < 5 ? n[b] : "?";
}

/* ------------------------------------------------------------------ */
/* Kernels                                                              */

typedef enum kkind {
  K_GENERAL,   /* random taps (rank > 1 unless a side is 1) */
  K_RANK1,     /* every temporal slice outer(u, v) */
  K_NEAR_RANK1 /* outer(u, v) + noise of ~1e-7 relative */
} kkind;

/* Relative noise on near-rank-1 kernels. */
static double g_noise = 1e-7;

static const char *const kkind_names[] = {"general", "rank-1", "near-rank-1"};

typedef struct kern {
  unsigned t, kh, kw;
  kkind kind;
  float *taps;
} kern;

static void kern_free(kern *k)
{
  free(k->taps);
  memset(k, 0, sizeof *k);
}

/* Random taps. `positive`: mostly positive, summing to about 1 over all
 * slices (for integer formats, so that outputs stay mostly in range). */
static void kern_make(kern *k, ref_rng *r, unsigned t, unsigned kh, unsigned kw,
                      kkind kind, int positive)
{
  k->t = t;
  k->kh = kh;
  k->kw = kw;
  k->kind = kind;
  size_t slice = (size_t)kh * kw, n = slice * t;
  free(k->taps);
  k->taps = xalloc(n * sizeof(float));
  double *u = xalloc(kh * sizeof(double)), *v = xalloc(kw * sizeof(double));
  double sum = 0.0;
  for (unsigned tau = 0; tau < t; tau++) {
    float *s = k->taps + tau * slice;
    for (unsigned i = 0; i < kh; i++)
      u[i] = positive ? 0.1 + ref_rng_unit(r) : ref_rng_sym(r);
    for (unsigned j = 0; j < kw; j++)
      v[j] = positive ? 0.1 + ref_rng_unit(r) : ref_rng_sym(r);
    for (unsigned i = 0; i < kh; i++)
      for (unsigned j = 0; j < kw; j++) {
        double x;
        if (kind == K_GENERAL)
          x = positive ? ref_rng_unit(r) - 0.15 : ref_rng_sym(r);
        else
          x = u[i] * v[j];
        if (kind == K_NEAR_RANK1)
          x *= 1.0 + g_noise * ref_rng_sym(r);
        s[(size_t)i * kw + j] = (float)x;
        sum += x;
      }
  }
  if (positive && sum > 0.0)
    for (size_t i = 0; i < n; i++)
      k->taps[i] = (float)(k->taps[i] / sum);
  /* never an all-zero kernel (a side of 1 with a tap of exactly 0 is
   * harmless, but make sure the first tap is not) */
  if (k->taps[0] == 0.0f)
    k->taps[0] = 0.25f;
  free(u);
  free(v);
}

/* The kind the running variant can take: forced separable only rank 1. */
static kkind rand_kind(ref_rng *r)
{
  if (is_separable())
    return K_RANK1;
  switch (ref_rng_u64(r) % 4) {
  case 0: return K_RANK1;
  case 1: return K_NEAR_RANK1;
  default: return K_GENERAL;
  }
}

static void kern_describe(const kern *k)
{
  add_case("kernel %ux%ux%u %s ", k->t, k->kh, k->kw, kkind_names[k->kind]);
}

static cf_kernel2d *kern_build(const kern *k)
{
  cf_kernel2d *kk = NULL;
  CHECK_OK(cf_kernel2d_new(k->t, k->kh, k->kw, k->taps, &kk));
  return kk;
}

/* ------------------------------------------------------------------ */
/* Random shapes and configurations                                     */

static unsigned rand_side(ref_rng *r)
{
  switch (ref_rng_u64(r) % 10) {
  case 0: return 1;
  case 1:
  case 2:
  case 3:
  case 4: return (unsigned)ref_rng_range(r, 2, 9);
  case 9: return (unsigned)ref_rng_range(r, 41, 80);
  default: return (unsigned)ref_rng_range(r, 10, 40);
  }
}

/* A kernel side for a frame side n: small, medium, or larger than n. */
static unsigned rand_kside(ref_rng *r, unsigned n)
{
  switch (ref_rng_u64(r) % 10) {
  case 0:
  case 1: return (unsigned)ref_rng_range(r, n + 1, 2 * n + 3);
  case 2:
  case 3: return (unsigned)ref_rng_range(r, 8, 15);
  default: return (unsigned)ref_rng_range(r, 1, 7);
  }
}

/* Shrink the kernel (never below 1) until the reference is affordable. */
static void fit_kernel(unsigned w, unsigned h, unsigned t, unsigned *kh,
                       unsigned *kw)
{
  while ((double)w * h * 3.0 * t * *kh * *kw > MAX_REF_MACS &&
         (*kh > 1 || *kw > 1)) {
    if (*kh >= *kw)
      *kh = *kh / 2 + (*kh > 1 ? 0 : 1);
    else
      *kw = *kw / 2 + (*kw > 1 ? 0 : 1);
  }
}

static unsigned fmt_ncomp(cf_pixel_format f)
{
  ref2d_fmt d;
  ref2d_fmt_get(f, &d);
  return d.ncomp;
}

static unsigned rand_components(ref_rng *r, cf_pixel_format f)
{
  if (fmt_ncomp(f) == 1)
    return CF_COMP_LUMA;
  if (ref_rng_u64(r) % 3 == 0)
    return CF_COMP_ALL;
  return (unsigned)ref_rng_range(r, 1, 7);
}

static int fmt_is_int(cf_pixel_format f)
{
  return f != CF_PIX_GRAY32F;
}

static double fmt_max(cf_pixel_format f)
{
  return f == CF_PIX_GRAY16_LE ? 65535.0 : f == CF_PIX_GRAY32F ? 1.0 : 255.0;
}

/* A configuration for the running variant; scale/bias/absolute stay at
 * their defaults unless `extras`. */
static void rand_config(cf_video_config *cfg, ref_rng *r, cf_pixel_format f,
                        unsigned w, unsigned h, int extras)
{
  cf_video_config_init(cfg);
  cfg->width = w;
  cfg->height = h;
  cfg->format = f;
  cfg->components = rand_components(r, f);
  cfg->border = (cf_border)(ref_rng_u64(r) % 5);
  double m = fmt_max(f);
  /* integer formats: cval in their units, now and then fractional or
   * outside 0..max */
  switch (fmt_is_int(f) ? ref_rng_u64(r) % 4 : 4) {
  case 0: cfg->cval = (float)(ref_rng_unit(r) * m); break;
  case 1: cfg->cval = (float)(1.5 * m * ref_rng_sym(r)); break;
  case 2:
  case 3: cfg->cval = (float)floor(ref_rng_unit(r) * m); break;
  default: cfg->cval = ref_rng_sym(r); break;
  }
  cfg->backend = V->backend;
  cfg->algorithm = V->algo;
  cfg->threads = (unsigned)ref_rng_range(r, 1, 2);
  if (V->pipelined)
    cfg->pipeline_depth = (unsigned)ref_rng_range(r, 1, 3);
  if (extras) {
    cfg->scale =
        (float)(fmt_is_int(f) ? 0.5 + ref_rng_unit(r) : 4.0 * ref_rng_sym(r));
    if (cfg->scale == 0.0f)
      cfg->scale = 1.0f;
    if (fmt_is_int(f) && ref_rng_u64(r) % 4 == 0)
      cfg->scale = -cfg->scale; /* all below 0 unless absolute */
    cfg->bias = (float)(0.2 * m * ref_rng_sym(r));
    cfg->absolute = ref_rng_u64(r) % 2 == 0;
  }
}

static void config_describe(const cf_video_config *cfg)
{
  add_case("%s %ux%u comps 0x%x border %s cval %.9g scale %.9g bias %.9g "
           "abs %d threads %u depth %u ",
           fmt_name(cfg->format), cfg->width, cfg->height, cfg->components,
           border_name(cfg->border), (double)cfg->cval, (double)cfg->scale,
           (double)cfg->bias, cfg->absolute, cfg->threads,
           cfg->pipeline_depth);
}

/* ------------------------------------------------------------------ */
/* Frames in memory                                                     */

typedef struct fbuf {
  cf_frame f;
  uint8_t *raw[3]; /* allocations; mem[p] = raw[p] + shift */
  uint8_t *mem[3];
  size_t size[3];
  unsigned planes;
} fbuf;

/* Random padding per plane: none, or some samples' worth of bytes. */
static void rand_strides(ref_rng *r, const ref2d_fmt *d, unsigned w,
                         size_t stride[3], int misalign)
{
  for (unsigned p = 0; p < 3; p++) {
    stride[p] = 0;
    if (p >= d->planes)
      continue;
    size_t pad = ref_rng_u64(r) % 3 == 0 ? 0 : ref_rng_range(r, 1, 13);
    stride[p] = ref2d_row_bytes(d, p, w) + pad * d->bytes;
    if (misalign && d->bytes > 1) /* rows off the sample alignment */
      stride[p] += ref_rng_range(r, 1, d->bytes - 1);
  }
}

/* Planes of the given strides; `tight`: the last row ends the buffer (so
 * that valgrind sees any access past it), else its padding and GUARD bytes
 * follow. Filled with random bytes. */
static void fbuf_make(fbuf *b, ref_rng *r, const ref2d_fmt *d, unsigned w,
                      unsigned h, const size_t stride[3], int tight,
                      unsigned shift)
{
  memset(b, 0, sizeof *b);
  b->planes = d->planes;
  for (unsigned p = 0; p < d->planes; p++) {
    unsigned pw, ph;
    ref2d_plane_size(d, p, w, h, &pw, &ph);
    size_t row = ref2d_row_bytes(d, p, w);
    b->size[p] =
        stride[p] * (ph - 1) + row + (tight ? 0 : stride[p] - row + GUARD);
    b->raw[p] = xalloc(b->size[p] + shift);
    b->mem[p] = b->raw[p] + shift;
    for (size_t i = 0; i < b->size[p]; i++)
      b->mem[p][i] = (uint8_t)ref_rng_u64(r);
    b->f.data[p] = b->mem[p];
    b->f.stride[p] = stride[p];
  }
}

static void fbuf_free(fbuf *b)
{
  for (unsigned p = 0; p < b->planes; p++)
    free(b->raw[p]);
  memset(b, 0, sizeof *b);
}

static void fbuf_copy(fbuf *dst, const fbuf *src)
{
  for (unsigned p = 0; p < src->planes; p++)
    memcpy(dst->mem[p], src->mem[p], src->size[p]);
}

static void fbuf_randomize(fbuf *b, ref_rng *r)
{
  for (unsigned p = 0; p < b->planes; p++)
    for (size_t i = 0; i < b->size[p]; i++)
      b->mem[p][i] = (uint8_t)ref_rng_u64(r);
}

static void put_float(const ref2d_fmt *d, const fbuf *b, const ref2d_chan *c,
                      unsigned x, unsigned y, float v)
{
  memcpy((uint8_t *)ref2d_sample_ptr(d, &b->f, c, x, y), &v, sizeof v);
}

/* Random input: random bytes everywhere (integer samples over their whole
 * range, never all zero), float samples uniform in [-amp, amp). */
static void fill_input(fbuf *b, ref_rng *r, const ref2d_fmt *d, unsigned w,
                       unsigned h, double amp)
{
  fbuf_randomize(b, r);
  if (!d->is_float)
    return;
  for (unsigned c = 0; c < d->ncomp; c++) {
    unsigned cw, ch;
    ref2d_chan_size(&d->comp[c], w, h, &cw, &ch);
    for (unsigned y = 0; y < ch; y++)
      for (unsigned x = 0; x < cw; x++)
        put_float(d, b, &d->comp[c], x, y, (float)(amp * ref_rng_sym(r)));
  }
}

/* What byte i of plane p is, for messages. */
static void byte_what(const ref2d_fmt *d, const cf_frame *f, unsigned w,
                      unsigned h, unsigned p, size_t i, char *buf, size_t n)
{
  unsigned pw, ph;
  ref2d_plane_size(d, p, w, h, &pw, &ph);
  size_t row = i / f->stride[p], col = i % f->stride[p];
  if (row >= ph || col >= ref2d_row_bytes(d, p, w)) {
    snprintf(buf, n, "stride padding or guard (plane %u row %zu byte %zu)", p,
             row, col);
    return;
  }
  size_t px = col / d->plane_bpp[p], off = col % d->plane_bpp[p];
  for (unsigned c = 0; c < d->ncomp; c++)
    if (d->comp[c].plane == p && off >= d->comp[c].offset &&
        off < d->comp[c].offset + d->bytes) {
      snprintf(buf, n, "component %u at (%zu, %zu) of plane %u", c, px, row, p);
      return;
    }
  snprintf(buf, n, "alpha/X byte at (%zu, %zu) of plane %u", px, row, p);
}

/* ------------------------------------------------------------------ */
/* A running case: engine and reference side by side                    */

typedef struct vcase {
  cf_video_config cfg;
  ref2d_fmt d;
  cf_engine *e;
  ref2d_video *ref;
  fbuf in, in_copy, got, want;
  uint8_t *mask[3]; /* 1 where a byte belongs to a selected sample */
  double *val[3];
  unsigned cw[3], ch[3];
  double amp;      /* float input amplitude */
  unsigned frames; /* processed */
  /* float formats: the same filter on |x| with |k|, |scale|, |bias|, the
   * scale of the sums the engine rounds (see check_samples) */
  ref2d_video *aref;
  fbuf ain, aout;
  double *aval[3];
  size_t taps; /* T * Kh * Kw of the kernel in use */
  /* if set, frames go through one buffer holding, plane by plane, the
   * input plane and then the output plane (disjoint, spans interleaved) */
  uint8_t *shared;
  size_t sh_in[3], sh_out[3];
  /* with `side` set, plane p of `shared` at sh_in[p] is one image of
   * rows sh_stride[p] bytes apart, each an input row and then an output
   * row (rows of two ROIs side by side), the output ROI sh_out[p]
   * bytes into it */
  int side;
  size_t sh_stride[3];
  /* pipeline_depth D > 0: the result of frame t arrives with frame t + D
   * (or from cf_engine_flush_frame). Each frame's expected output waits in
   * a ring of D + 1 slots; the output buffer is always prefilled with
   * `bg`, so bytes the engine must not write are bg in both. */
  unsigned depth;
  fbuf bg;
  struct vslot {
    fbuf want;
    double *val[3], *aval[3];
    size_t taps;
    float bias; /* its output stage's (the error floor) */
    unsigned frame;
  } *q;
  unsigned qhead, qlen;
} vcase;

/* The filter on magnitudes: |taps|, and the configuration's magnitudes. */
static ref2d_video *abs_ref_new(const cf_video_config *cfg, const kern *k)
{
  cf_video_config a = *cfg;
  size_t n = (size_t)k->t * k->kh * k->kw;
  float *t = xalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    t[i] = fabsf(k->taps[i]);
  a.cval = fabsf(a.cval);
  a.scale = fabsf(a.scale);
  a.bias = fabsf(a.bias);
  a.absolute = 1;
  ref2d_video *v = ref2d_video_new(&a, k->t, k->kh, k->kw, t);
  free(t);
  return v;
}

static void vcase_masks(vcase *c)
{
  const ref2d_fmt *d = &c->d;
  for (unsigned p = 0; p < d->planes; p++) {
    free(c->mask[p]);
    c->mask[p] = xalloc(c->got.size[p]);
  }
  for (unsigned k = 0; k < d->ncomp; k++) {
    if (!(c->cfg.components & (1u << k)))
      continue;
    const ref2d_chan *ch = &d->comp[k];
    for (unsigned y = 0; y < c->ch[k]; y++)
      for (unsigned x = 0; x < c->cw[k]; x++) {
        size_t o = (size_t)y * c->got.f.stride[ch->plane] +
                   (size_t)x * ch->step + ch->offset;
        memset(c->mask[ch->plane] + o, 1, d->bytes);
      }
  }
}

/* Open engine and reference for cfg and kernel k; `st`, if not NULL,
 * receives the engine's status instead of failing on it. */
static void vcase_open_status(vcase *c, ref_rng *r, const cf_video_config *cfg,
                              const kern *k, cf_status *st)
{
  memset(c, 0, sizeof *c);
  c->cfg = *cfg;
  c->amp = 1.0;
  CHECK(ref2d_fmt_get(cfg->format, &c->d), "unknown format %d",
        (int)cfg->format);
  for (unsigned i = 0; i < c->d.ncomp; i++) {
    ref2d_chan_size(&c->d.comp[i], cfg->width, cfg->height, &c->cw[i],
                    &c->ch[i]);
    c->val[i] = xalloc((size_t)c->cw[i] * c->ch[i] * sizeof(double));
  }
  size_t sin[3], sout[3];
  /* now and then, 16- and 32-bit samples off their alignment (planes and
   * rows start at odd addresses): nothing in video.h asks for alignment */
  int mis = c->d.bytes > 1 && ref_rng_u64(r) % 6 == 0;
  unsigned shin = mis ? (unsigned)ref_rng_range(r, 1, c->d.bytes - 1) : 0;
  unsigned shout = mis ? (unsigned)ref_rng_range(r, 1, c->d.bytes - 1) : 0;
  rand_strides(r, &c->d, cfg->width, sin, mis);
  rand_strides(r, &c->d, cfg->width, sout, mis);
  if (mis)
    add_case("misaligned by %u/%u ", shin, shout);
  int tight = ref_rng_u64(r) % 2 == 0;
  add_case("strides in %zu/%zu/%zu out %zu/%zu/%zu%s ", sin[0], sin[1], sin[2],
           sout[0], sout[1], sout[2], tight ? " tight" : "");
  kern_describe(k);
  fbuf_make(&c->in, r, &c->d, cfg->width, cfg->height, sin, tight, shin);
  fbuf_make(&c->in_copy, r, &c->d, cfg->width, cfg->height, sin, tight, 0);
  fbuf_make(&c->got, r, &c->d, cfg->width, cfg->height, sout, tight, shout);
  fbuf_make(&c->want, r, &c->d, cfg->width, cfg->height, sout, tight, 0);
  vcase_masks(c);
  c->ref = ref2d_video_new(cfg, k->t, k->kh, k->kw, k->taps);
  CHECK(c->ref, "reference: out of memory");
  c->taps = (size_t)k->t * k->kh * k->kw;
  if (c->d.is_float) {
    c->aref = abs_ref_new(cfg, k);
    CHECK(c->aref, "reference: out of memory");
    fbuf_make(&c->ain, r, &c->d, cfg->width, cfg->height, sin, tight, 0);
    fbuf_make(&c->aout, r, &c->d, cfg->width, cfg->height, sout, tight, 0);
    for (unsigned i = 0; i < c->d.ncomp; i++)
      c->aval[i] = xalloc((size_t)c->cw[i] * c->ch[i] * sizeof(double));
  }
  c->depth = cfg->pipeline_depth;
  if (c->depth) {
    /* its own stream: a case draws the same frames at any depth */
    ref_rng lr;
    ref_rng_init(&lr, check_seed ^ 0x9e3779b97f4a7c15ull);
    fbuf_make(&c->bg, &lr, &c->d, cfg->width, cfg->height, sout, tight, 0);
    c->q = xalloc((c->depth + 1) * sizeof *c->q);
    for (unsigned j = 0; j <= c->depth; j++) {
      fbuf_make(&c->q[j].want, &lr, &c->d, cfg->width, cfg->height, sout, tight,
                0);
      for (unsigned i = 0; i < c->d.ncomp; i++) {
        size_t n = (size_t)c->cw[i] * c->ch[i] * sizeof(double);
        c->q[j].val[i] = xalloc(n);
        c->q[j].aval[i] = xalloc(n);
      }
    }
  }
  cf_kernel2d *kk = kern_build(k);
  cf_status s = cf_engine_new_video(cfg, kk, &c->e);
  cf_kernel2d_free(kk);
  if (s == CF_OK)
    CHECK(cf_engine_latency(c->e) == c->depth,
          "pipeline_depth %u: cf_engine_latency %zu", c->depth,
          cf_engine_latency(c->e));
  if (st)
    *st = s;
  else
    CHECK(s == CF_OK, "cf_engine_new_video returned %s: %s", cf_status_name(s),
          cf_last_error());
}

static void vcase_open(vcase *c, ref_rng *r, const cf_video_config *cfg,
                       const kern *k)
{
  vcase_open_status(c, r, cfg, k, NULL);
}

/* A case of format F at random (size, a kernel K of 1 or 2 frames, the
 * config), described after the name set_case gave it, and opened: the
 * start of the tests of where the planes lie (test_shared_buffer,
 * test_roi_side_by_side). */
static void vcase_open_rand(vcase *v, kern *k, ref_rng *r, cf_pixel_format f)
{
  unsigned w = rand_side(r), h = rand_side(r);
  unsigned t = (unsigned)ref_rng_range(r, 1, 2);
  unsigned kh = rand_kside(r, h), kw = rand_kside(r, w);
  fit_kernel(w, h, t, &kh, &kw);
  cf_video_config cfg;
  rand_config(&cfg, r, f, w, h, ref_rng_u64(r) % 2);
  *k = (kern){0};
  kern_make(k, r, t, kh, kw, rand_kind(r), fmt_is_int(f));
  config_describe(&cfg);
  vcase_open(v, r, &cfg, k);
}

static void vcase_flush(vcase *c, const char *what);

/* Closing checks the frames still in the pipeline first. */
static void vcase_close(vcase *c)
{
  if (c->e)
    vcase_flush(c, "the frames pending at the end");
  for (unsigned j = 0; c->q && j <= c->depth; j++) {
    fbuf_free(&c->q[j].want);
    for (unsigned i = 0; i < 3; i++) {
      free(c->q[j].val[i]);
      free(c->q[j].aval[i]);
    }
  }
  free(c->q);
  fbuf_free(&c->bg);
  free(c->shared);
  cf_engine_free(c->e);
  ref2d_video_free(c->ref);
  fbuf_free(&c->in);
  fbuf_free(&c->in_copy);
  fbuf_free(&c->got);
  fbuf_free(&c->want);
  ref2d_video_free(c->aref);
  fbuf_free(&c->ain);
  fbuf_free(&c->aout);
  for (unsigned i = 0; i < 3; i++) {
    free(c->mask[i]);
    free(c->val[i]);
    free(c->aval[i]);
  }
  memset(c, 0, sizeof *c);
}

static void vcase_fill(vcase *c, ref_rng *r)
{
  fill_input(&c->in, r, &c->d, c->cfg.width, c->cfg.height, c->amp);
}

/* Every byte that is not a selected sample: as the reference left it. */
static void check_other_bytes(const vcase *c, const char *what)
{
  for (unsigned p = 0; p < c->d.planes; p++)
    for (size_t i = 0; i < c->got.size[p]; i++)
      if (!c->mask[p][i] && c->got.mem[p][i] != c->want.mem[p][i]) {
        char b[160];
        byte_what(&c->d, &c->got.f, c->cfg.width, c->cfg.height, p, i, b,
                  sizeof b);
        CHECK(0,
              "%s, frame %u: byte %zu of output plane %u (%s) is 0x%02x, "
              "want 0x%02x (%s)",
              what, c->frames, i, p, b, c->got.mem[p][i], c->want.mem[p][i],
              strstr(b, "padding") ? "must not be written"
                                   : "copied from the input");
      }
}

static void check_input_unchanged(const vcase *c, const char *what)
{
  for (unsigned p = 0; p < c->d.planes; p++)
    CHECK(!memcmp(c->in.mem[p], c->in_copy.mem[p], c->in.size[p]),
          "%s, frame %u: the engine wrote into its input (plane %u)", what,
          c->frames, p);
}

/* Relative L2 error of got against want; the denominator is at least the
 * size random cancellation leaves of the sums the engine rounds (the
 * filter on magnitudes, aval, over sqrt(taps)) and the bias, which is
 * added once in float (its rounding does not shrink with the taps): a
 * tiny frame whose few outputs happen to cancel to near 0 is not held to
 * 1e-6 of themselves. den and fl receive the squared norms. NaN if got
 * is not finite. */
static double float_err(const float *got, const double *want,
                        const double *aval, size_t n, size_t taps, float bias,
                        double *den, double *fl)
{
  double e = ref_rel_l2(got, 1, want, 1, n), num = 0;
  *den = *fl = 0;
  for (size_t i = 0; i < n; i++) {
    double dd = (double)got[i] - want[i];
    num += dd * dd;
    *den += want[i] * want[i];
    *fl += aval[i] * aval[i];
  }
  *fl = *fl / (double)taps + (double)n * bias * bias;
  if (isfinite(e) && *fl > *den && *den > 0)
    e = sqrt(num / *fl);
  return e;
}

/* Selected samples against the reference. */
static void check_samples(const vcase *c, const char *what)
{
  const ref2d_fmt *d = &c->d;
  for (unsigned k = 0; k < d->ncomp; k++) {
    if (!(c->cfg.components & (1u << k)))
      continue;
    size_t n = (size_t)c->cw[k] * c->ch[k];
    if (d->is_float) {
      float *g = xalloc(n * sizeof(float));
      for (unsigned y = 0; y < c->ch[k]; y++)
        for (unsigned x = 0; x < c->cw[k]; x++)
          g[(size_t)y * c->cw[k] + x] =
              (float)ref2d_load(d, &c->got.f, &d->comp[k], x, y);
      double den, fl;
      g_taps = c->taps;
      double e = float_err(g, c->val[k], c->aval[k], n, c->taps,
                           c->cfg.bias, &den, &fl);
      size_t worst = 0;
      double wd = -1.0;
      for (size_t i = 0; i < n; i++) {
        double dd = fabs((double)g[i] - c->val[k][i]);
        if (!(dd <= wd)) {
          wd = dd;
          worst = i;
        }
      }
      float gw = g[worst];
      free(g);
      CHECK(e <= tol(),
            "%s, frame %u, component %u: relative L2 error %.3g "
            "> %.3g (||want|| %.3g, floor %.3g; worst at (%zu, %zu): got "
            "%.9g, want %.9g)",
            what, c->frames, k, e, tol(), sqrt(den), sqrt(fl), worst % c->cw[k],
            worst / c->cw[k], (double)gw, c->val[k][worst]);
    } else {
      size_t bad = 0, first = 0;
      double fg = 0, fw = 0;
      for (unsigned y = 0; y < c->ch[k]; y++)
        for (unsigned x = 0; x < c->cw[k]; x++) {
          double g = ref2d_load(d, &c->got.f, &d->comp[k], x, y);
          double w = ref2d_load(d, &c->want.f, &d->comp[k], x, y);
          if (fabs(g - w) > 1.0) {
            if (!bad++) {
              first = (size_t)y * c->cw[k] + x;
              fg = g;
              fw = w;
            }
          }
        }
      CHECK(!bad,
            "%s, frame %u, component %u: %zu of %zu samples off by "
            "more than 1 code value; first at (%zu, %zu): got %.0f, want "
            "%.0f (unrounded %.9g)",
            what, c->frames, k, bad, n, first % c->cw[k], first / c->cw[k], fg,
            fw, c->val[k][first]);
    }
  }
}

/* The oldest expected frame of the pipeline against what the engine just
 * wrote into c->got: its expectations take the place of c->want, val and
 * aval (so that a caller inspecting them sees the frame delivered). */
static void vcase_deliver(vcase *c, const char *what, int samples)
{
  struct vslot *q = &c->q[c->qhead];
  fbuf tw = c->want;
  c->want = q->want;
  q->want = tw;
  for (unsigned i = 0; i < 3; i++) {
    double *t = c->val[i];
    c->val[i] = q->val[i];
    q->val[i] = t;
    t = c->aval[i];
    c->aval[i] = q->aval[i];
    q->aval[i] = t;
  }
  size_t taps = c->taps;
  unsigned frames = c->frames;
  float bias = c->cfg.bias;
  c->taps = q->taps;
  c->cfg.bias = q->bias;
  c->frames = q->frame;
  check_other_bytes(c, what);
  if (samples)
    check_samples(c, what);
  c->taps = taps;
  c->cfg.bias = bias;
  c->frames = frames;
  c->qhead = (c->qhead + 1) % (c->depth + 1);
  c->qlen--;
}

/* The output buffer is bg, untouched (a call that delivered nothing). */
static void check_untouched(const vcase *c, const char *what)
{
  for (unsigned p = 0; p < c->d.planes; p++)
    CHECK(!memcmp(c->got.mem[p], c->bg.mem[p], c->got.size[p]),
          "%s, frame %u: the engine wrote to output plane %u with only %u "
          "of pipeline_depth %u frames in flight",
          what, c->frames, p, c->qlen, c->depth);
}

/* Hand out every pending frame (cf_engine_flush_frame) and check each;
 * then a flush with nothing pending writes nothing. */
static void vcase_flush(vcase *c, const char *what)
{
  for (;;) {
    if (c->depth)
      fbuf_copy(&c->got, &c->bg);
    int got = -1;
    cf_status s = cf_engine_flush_frame(c->e, &c->got.f, &got);
    CHECK(s == CF_OK, "%s: cf_engine_flush_frame returned %s: %s", what,
          cf_status_name(s), cf_last_error());
    if (!got) {
      CHECK(c->qlen == 0, "%s: cf_engine_flush_frame gave nothing with %u "
            "frames pending", what, c->qlen);
      if (c->depth)
        check_untouched(c, what);
      return;
    }
    CHECK(got == 1 && c->qlen > 0, "%s: cf_engine_flush_frame set got %d "
          "with %u frames pending", what, got, c->qlen);
    vcase_deliver(c, what, 1);
  }
}

/* c->ain: the input's magnitudes (float formats: the reference on |x|,
 * see check_samples). */
static void abs_input(vcase *c)
{
  fbuf_copy(&c->ain, &c->in);
  for (unsigned k = 0; k < c->d.ncomp; k++)
    for (unsigned y = 0; y < c->ch[k]; y++)
      for (unsigned x = 0; x < c->cw[k]; x++)
        put_float(
            &c->d, &c->ain, &c->d.comp[k], x, y,
            fabsf((float)ref2d_load(&c->d, &c->in.f, &c->d.comp[k], x, y)));
}

/* c->side: the rows of plane p's shared image (those of the input's
 * and the output's buffers, guard bytes included, whichever are more). */
static size_t side_nrows(const vcase *c, unsigned p)
{
  size_t si = c->in.f.stride[p], so = c->got.f.stride[p];
  size_t ri = (c->in.size[p] + si - 1) / si, ro = (c->got.size[p] + so - 1) / so;
  return ri > ro ? ri : ro;
}

/* c->side: put the input and output rows of plane p into the shared
 * image (`put`), or take the output rows back, checking the input rows
 * there are unchanged. Rows of a tight buffer's last row are short. */
static void side_rows(vcase *c, unsigned p, int put)
{
  uint8_t *img = c->shared + c->sh_in[p];
  size_t si = c->in.f.stride[p], so = c->got.f.stride[p];
  size_t rows = side_nrows(c, p);
  for (size_t r = 0; r < rows; r++) {
    size_t ni = r * si < c->in.size[p] ? c->in.size[p] - r * si : 0;
    size_t no = r * so < c->got.size[p] ? c->got.size[p] - r * so : 0;
    ni = ni < si ? ni : si;
    no = no < so ? no : so;
    uint8_t *ri = img + r * c->sh_stride[p], *ro = ri + c->sh_out[p];
    if (put) {
      memcpy(ri, c->in.mem[p] + r * si, ni);
      memcpy(ro, c->got.mem[p] + r * so, no);
    } else {
      memcpy(c->got.mem[p] + r * so, ro, no);
      CHECK(!memcmp(ri, c->in.mem[p] + r * si, ni),
            "frame %u: the engine wrote into input plane %u row %zu (ROIs "
            "side by side in one image)", c->frames, p, r);
    }
  }
}

/* Run the input now in c->in through engine and reference. `samples`: also
 * compare the selected samples (else the caller does). With a pipeline,
 * the frame checked is the one the engine hands out now, if any. */
static void vcase_run_cmp(vcase *c, ref_rng *r, const char *what, int samples)
{
  struct vslot *q = NULL;
  fbuf *want = &c->want;
  double **val = c->val, **aval = c->aval;
  if (c->depth) {
    q = &c->q[(c->qhead + c->qlen) % (c->depth + 1)];
    want = &q->want;
    val = q->val;
    aval = q->aval;
  }
  fbuf_randomize(&c->got, r); /* drawn at any depth: the same stream */
  if (q)
    fbuf_copy(&c->got, &c->bg);
  fbuf_copy(want, &c->got);
  fbuf_copy(&c->in_copy, &c->in);
  cf_status s;
  if (c->shared && c->side) {
    cf_frame fi = c->in.f, fo = c->got.f;
    for (unsigned p = 0; p < c->d.planes; p++) {
      uint8_t *img = c->shared + c->sh_in[p];
      fi.data[p] = img;
      fo.data[p] = img + c->sh_out[p];
      fi.stride[p] = fo.stride[p] = c->sh_stride[p];
      side_rows(c, p, 1);
    }
    s = cf_engine_process_frame(c->e, &fi, &fo);
    for (unsigned p = 0; p < c->d.planes; p++)
      side_rows(c, p, 0);
  } else if (c->shared) {
    cf_frame fi = c->in.f, fo = c->got.f;
    for (unsigned p = 0; p < c->d.planes; p++) {
      memcpy(c->shared + c->sh_in[p], c->in.mem[p], c->in.size[p]);
      memcpy(c->shared + c->sh_out[p], c->got.mem[p], c->got.size[p]);
      fi.data[p] = c->shared + c->sh_in[p];
      fo.data[p] = c->shared + c->sh_out[p];
    }
    s = cf_engine_process_frame(c->e, &fi, &fo);
    for (unsigned p = 0; p < c->d.planes; p++) {
      memcpy(c->got.mem[p], c->shared + c->sh_out[p], c->got.size[p]);
      CHECK(!memcmp(c->shared + c->sh_in[p], c->in.mem[p], c->in.size[p]),
            "%s, frame %u: the engine wrote into input plane %u", what,
            c->frames, p);
    }
  } else
    s = cf_engine_process_frame(c->e, &c->in.f, &c->got.f);
  CHECK(s == CF_OK, "%s, frame %u: cf_engine_process_frame returned %s: %s",
        what, c->frames, cf_status_name(s), cf_last_error());
  CHECK(ref2d_video_frame(c->ref, &c->in.f, &want->f, val),
        "reference: out of memory");
  if (c->aref) {
    abs_input(c);
    CHECK(ref2d_video_frame(c->aref, &c->ain.f, &c->aout.f, aval),
          "reference: out of memory");
  }
  check_input_unchanged(c, what);
  if (q) {
    q->taps = c->taps;
    q->bias = c->cfg.bias;
    q->frame = c->frames;
    if (++c->qlen > c->depth)
      vcase_deliver(c, what, samples);
    else {
      check_untouched(c, what);
      fbuf_copy(&c->want, &c->bg); /* nothing delivered: got == want */
    }
  } else {
    check_other_bytes(c, what);
    if (samples)
      check_samples(c, what);
  }
  c->frames++;
}

static void vcase_run(vcase *c, ref_rng *r, const char *what)
{
  vcase_run_cmp(c, r, what, 1);
}

static void vcase_step(vcase *c, ref_rng *r, const char *what)
{
  vcase_fill(c, r);
  vcase_run(c, r, what);
}

/* Every other swap is a prepared one (cf_engine_prepare_swap2d, then
 * cf_engine_set_prepared2d): the same frames out as set_kernel2d's, so
 * every test of swaps checks both against the reference. */
static unsigned swaps_made;

static void vcase_ref_kernel(vcase *c, const kern *k);

/* The swap to k: prepared (prepare_swap2d, set_prepared2d) or plain. */
static void vcase_swap(vcase *c, const kern *k, int prepared)
{
  cf_kernel2d *kk = kern_build(k);
  cf_status s;
  const char *how = "cf_engine_set_kernel2d";
  if (prepared) {
    cf_swap_prep2d *p = NULL;
    how = "cf_engine_prepare_swap2d";
    if ((s = cf_engine_prepare_swap2d(c->e, kk, &p)) == CF_OK) {
      how = "cf_engine_set_prepared2d";
      s = cf_engine_set_prepared2d(c->e, p);
      if (s == CF_OK)
        CHECK(cf_engine_set_prepared2d(c->e, p) == CF_E_INVALID,
              "a prepared swap made twice: %s", cf_last_error());
    }
    cf_swap_prep2d_free(p);
  } else {
    s = cf_engine_set_kernel2d(c->e, kk);
  }
  cf_kernel2d_free(kk);
  CHECK(s == CF_OK, "%s(%ux%ux%u) returned %s: %s", how, k->t, k->kh, k->kw,
        cf_status_name(s), cf_last_error());
  vcase_ref_kernel(c, k);
}

static void vcase_set_kernel(vcase *c, const kern *k)
{
  vcase_swap(c, k, swaps_made++ % 2);
}

/* cf_engine_take_retired2d: whether it handed something over (given
 * back here); it may not be made twice. */
static int vcase_take_retired(vcase *c)
{
  cf_swap_prep2d *p = NULL;
  cf_status s = cf_engine_take_retired2d(c->e, &p);
  CHECK(s == CF_OK, "cf_engine_take_retired2d: %s", cf_last_error());
  if (p)
    CHECK(cf_engine_set_prepared2d(c->e, p) == CF_E_INVALID,
          "set_prepared2d took what take_retired2d gave: %s", cf_last_error());
  cf_swap_prep2d_free(p);
  return p != NULL;
}

/* The references take kernel k from the next frame on. */
static void vcase_ref_kernel(vcase *c, const kern *k)
{
  CHECK(ref2d_video_set_kernel(c->ref, k->t, k->kh, k->kw, k->taps),
        "reference: out of memory");
  c->taps = (size_t)k->t * k->kh * k->kw;
  if (c->aref) {
    size_t n = c->taps;
    float *t = xalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
      t[i] = fabsf(k->taps[i]);
    CHECK(ref2d_video_set_kernel(c->aref, k->t, k->kh, k->kw, t),
          "reference: out of memory");
    free(t);
  }
}

/* A new output stage from the next frame on (cf_engine_set_output2d),
 * the history kept; drawn as rand_config draws it. */
static void vcase_set_output(vcase *c, ref_rng *r)
{
  cf_video_config n = c->cfg;
  rand_config(&n, r, c->cfg.format, c->cfg.width, c->cfg.height, 1);
  add_case("scale %.9g bias %.9g abs %d ", (double)n.scale, (double)n.bias,
           n.absolute);
  cf_status s = cf_engine_set_output2d(c->e, n.scale, n.bias, n.absolute);
  CHECK(s == CF_OK, "cf_engine_set_output2d returned %s: %s",
        cf_status_name(s), cf_last_error());
  c->cfg.scale = n.scale;
  c->cfg.bias = n.bias;
  c->cfg.absolute = n.absolute;
  ref2d_video_set_output(c->ref, n.scale, n.bias, n.absolute);
  if (c->aref)
    ref2d_video_set_output(c->aref, fabsf(n.scale), fabsf(n.bias), 1);
}

static void vcase_reset(vcase *c)
{
  CHECK_OK(cf_engine_reset(c->e));
  ref2d_video_reset(c->ref);
  if (c->aref)
    ref2d_video_reset(c->aref);
}

/* A random frame stands for the frames the history lacks: the engine's
 * (cf_engine_set_history_frame) and the references'. */
static void vcase_set_base(vcase *c, ref_rng *r)
{
  vcase_fill(c, r);
  CHECK_OK(cf_engine_set_history_frame(c->e, &c->in.f));
  CHECK(ref2d_video_set_base(c->ref, &c->in.f), "reference: out of memory");
  if (c->aref) {
    abs_input(c);
    CHECK(ref2d_video_set_base(c->aref, &c->ain.f),
          "reference: out of memory");
  }
}

/* One random single-configuration case: `frames` frames with kernel k. */
static void run_case(ref_rng *r, const cf_video_config *cfg, const kern *k,
                     unsigned frames, const char *what)
{
  vcase c;
  vcase_open(&c, r, cfg, k);
  for (unsigned i = 0; i < frames; i++)
    vcase_step(&c, r, what);
  vcase_close(&c);
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */

/* Defaults, names, cf_frame_layout against the layout written out in
 * ref2d.c. */
/* cf_components_from_string on random lists (random case, random
 * separators) of names, masks and runs of letters, for every format,
 * against what each family of formats names. Gray takes the YUV names (its
 * one component is luma) but must end up with Y chosen. */
static void check_components_names(ref_rng *r)
{
  static const struct {
    const char *name;
    unsigned mask, gray, rgb, yuv; /* where the name is allowed */
  } names[] = {
      {"all", 7, 1, 1, 1},   {"r", 1, 0, 1, 0},     {"red", 1, 0, 1, 0},
      {"g", 2, 0, 1, 0},     {"green", 2, 0, 1, 0}, {"b", 4, 0, 1, 0},
      {"blue", 4, 0, 1, 0},  {"y", 1, 1, 0, 1},     {"luma", 1, 1, 0, 1},
      {"u", 2, 1, 0, 1},     {"v", 4, 1, 0, 1},     {"chroma", 6, 1, 0, 1},
      {"alpha", 0, 0, 0, 0}, {"ry", 0, 0, 0, 0},    {"gq", 0, 0, 0, 0},
      {"rgba", 0, 0, 0, 0},  {"0", 0, 0, 0, 0},     {"8", 0, 0, 0, 0},
      {"1x", 0, 0, 0, 0}};
  const size_t nn = sizeof names / sizeof names[0], nbad = 7;
  static const char *const seps[] = {",", ", ", " ", " , ", "\t", ",,"};
  for (int i = 0; i < 600; i++) {
    unsigned fi = (unsigned)ref_rng_range(r, 0, NFORMATS - 1);
    cf_pixel_format f = all_formats[fi];
    int gray = fi < 3, yuv = f == CF_PIX_I420 || f == CF_PIX_NV12 ||
                             f == CF_PIX_Y444 || f == CF_PIX_Y42B;
    char s[160] = "";
    unsigned want = 0;
    int ok = 1;
    int n = (int)ref_rng_range(r, 1, 4);
    if (ref_rng_range(r, 0, 3) == 0)
      snprintf(s, sizeof s, "%s", ref_rng_range(r, 0, 1) ? " " : "");
    for (int j = 0; j < n; j++) {
      char w[16];
      unsigned m, a_gray, a_rgb, a_yuv;
      int kind = (int)ref_rng_range(r, 0, 5);
      if (kind == 0) { /* a mask, decimal or hex */
        m = (unsigned)ref_rng_range(r, 1, 7);
        snprintf(w, sizeof w, ref_rng_range(r, 0, 1) ? "%u" : "0x%x", m);
        a_gray = a_rgb = a_yuv = 1;
      } else if (kind == 1) { /* a run of one family's letters */
        int fy = (int)ref_rng_range(r, 0, 1);
        size_t len = (size_t)ref_rng_range(r, 1, 5);
        m = 0;
        for (size_t k = 0; k < len; k++) {
          unsigned b = (unsigned)ref_rng_range(r, 0, 2);
          w[k] = (fy ? "yuv" : "rgb")[b];
          m |= 1u << b;
        }
        w[len] = '\0';
        a_rgb = !fy;
        a_gray = a_yuv = (unsigned)fy;
      } else {
        size_t k = ref_rng_range(r, 0, nn - 1);
        if (k >= nn - nbad && ref_rng_range(r, 0, 2)) /* bad names: seldom */
          k = 0;
        snprintf(w, sizeof w, "%s", names[k].name);
        m = names[k].mask;
        a_gray = names[k].gray, a_rgb = names[k].rgb, a_yuv = names[k].yuv;
      }
      for (char *p = w; *p; p++)
        if (*p >= 'a' && *p <= 'z' && ref_rng_range(r, 0, 1))
          *p = (char)(*p - 'a' + 'A');
      const char *sep = "";
      if (j) {
        size_t k = ref_rng_range(r, 0, 5);
        if (k == 5 && ref_rng_range(r, 0, 3)) /* an empty item: seldom */
          k = 0;
        sep = seps[k];
        ok &= k != 5;
      }
      snprintf(s + strlen(s), sizeof s - strlen(s), "%s%s", sep, w);
      ok &= gray ? a_gray : yuv ? a_yuv : a_rgb;
      want |= m;
    }
    switch (ref_rng_range(r, 0, 5)) { /* what may follow the last word */
    case 0: strcat(s, " "); break;
    case 1: strcat(s, ","), ok = 0; break; /* an empty last item */
    default: break;
    }
    if (gray && ok) {
      ok = (want & 1) != 0; /* gray: the one component must be chosen */
      want &= 1;
    }
    unsigned got = 99;
    cf_status st = cf_components_from_string(s, f, &got);
    if (ok)
      CHECK(st == CF_OK && got == want,
            "components '%s' of %s: status %d mask %u (%s), want mask %u", s,
            fmt_names[fi], (int)st, got, st ? cf_last_error() : "", want);
    else
      CHECK(st == CF_E_INVALID && got == 99 &&
                strstr(cf_last_error(), "components"),
            "components '%s' of %s: status %d mask %u (%s), want a refusal", s,
            fmt_names[fi], (int)st, got, cf_last_error());
  }
  unsigned m;
  static const char *const empty[] = {"", " ", ",", " , ", "\t"};
  for (unsigned i = 0; i < 5; i++)
    CHECK(cf_components_from_string(empty[i], CF_PIX_RGBA, &m) ==
              CF_E_INVALID,
          "components: '%s' (nothing named) accepted", empty[i]);
  CHECK(cf_components_from_string(NULL, CF_PIX_RGBA, &m) == CF_E_INVALID &&
            cf_components_from_string("all", (cf_pixel_format)99, &m) ==
                CF_E_INVALID,
        "components: NULL or an unknown format accepted");
  CHECK(cf_components_from_string("ry", CF_PIX_RGBA, &m) == CF_E_INVALID &&
            strstr(cf_last_error(), "mixes"),
        "components: 'ry' not said to mix families: %s", cf_last_error());
}

static void test_api(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 1);
  set_case("api");
  cf_video_config cfg;
  memset(&cfg, 0x5a, sizeof cfg);
  cf_video_config_init(NULL); /* does nothing (error.h) */
  cf_video_config_init(&cfg);
  CHECK(cfg.format == CF_PIX_GRAY8 && cfg.components == CF_COMP_ALL &&
            cfg.border == CF_BORDER_REFLECT && cfg.cval == 0.0f &&
            cfg.scale == 1.0f && cfg.bias == 0.0f && cfg.absolute == 0 &&
            cfg.backend == CF_BACKEND_AUTO && cfg.device_id == 0 &&
            cfg.algorithm == CF_ALGO2D_AUTO && cfg.threads == 0 &&
            cfg.pipeline_depth == 0,
        "cf_video_config_init defaults differ from video.h");
  for (unsigned i = 0; i < NFORMATS; i++) {
    cf_pixel_format f = all_formats[i], g;
    ref2d_fmt d;
    ref2d_fmt_get(f, &d);
    const char *nm = cf_pixel_format_name(f);
    CHECK(nm && !strcmp(nm, fmt_names[i]), "format %u is named '%s', want '%s'",
          i, nm ? nm : "(null)", fmt_names[i]);
    char lower[32];
    size_t n = strlen(fmt_names[i]);
    for (size_t j = 0; j <= n; j++)
      lower[j] = (char)((fmt_names[i][j] >= 'A' && fmt_names[i][j] <= 'Z')
                            ? fmt_names[i][j] + 32
                            : fmt_names[i][j]);
    CHECK_OK(cf_pixel_format_from_string(lower, &g));
    CHECK(g == f, "'%s' parsed as %d", lower, (int)g);
    for (unsigned c = 0; c < 40; c++) {
      unsigned w = c < 4 ? 1 + c % 2 : rand_side(&r);
      unsigned h = c < 4 ? 1 + c / 2 : rand_side(&r);
      cf_frame fr;
      memset(&fr, 0, sizeof fr);
      size_t size = cf_frame_layout(f, w, h, NULL, NULL), off = 0;
      uint8_t *base = xalloc(size);
      CHECK(cf_frame_layout(f, w, h, base, &fr) == size,
            "cf_frame_layout(%s, %u, %u) differs with a base", fmt_names[i], w,
            h);
      for (unsigned p = 0; p < d.planes; p++) {
        unsigned pw, ph;
        ref2d_plane_size(&d, p, w, h, &pw, &ph);
        size_t row = ref2d_row_bytes(&d, p, w);
        CHECK(fr.stride[p] == row && fr.data[p] == base + off,
              "cf_frame_layout(%s, %u, %u): plane %u stride %zu at offset "
              "%td, want stride %zu at %zu",
              fmt_names[i], w, h, p, fr.stride[p], (uint8_t *)fr.data[p] - base,
              row, off);
        off += row * ph;
      }
      CHECK(size == off, "cf_frame_layout(%s, %u, %u) = %zu, want %zu",
            fmt_names[i], w, h, size, off);
      /* no base: the strides alone, every plane pointer NULL (no offset
       * added to NULL: clang's UBSan -fsanitize=pointer-overflow checks
       * this in the clang ASan build) */
      cf_frame nb;
      memset(&nb, 0x5a, sizeof nb);
      CHECK(cf_frame_layout(f, w, h, NULL, &nb) == size,
            "cf_frame_layout(%s, %u, %u, NULL, &out) differs from one with "
            "a base", fmt_names[i], w, h);
      for (unsigned p = 0; p < 3; p++)
        CHECK(nb.data[p] == NULL &&
                  nb.stride[p] == (p < d.planes ? fr.stride[p] : 0),
              "cf_frame_layout(%s, %u, %u, NULL, &out): plane %u at %p "
              "stride %zu, want NULL and %zu", fmt_names[i], w, h, p,
              nb.data[p], nb.stride[p], p < d.planes ? fr.stride[p] : 0);
      free(base);
    }
    CHECK(cf_frame_layout(f, 0, 5, NULL, NULL) == 0 &&
              cf_frame_layout(f, 5, 0, NULL, NULL) == 0,
          "cf_frame_layout(%s) of a zero size is not 0", fmt_names[i]);
  }
  CHECK(cf_frame_layout((cf_pixel_format)99, 4, 4, NULL, NULL) == 0,
        "cf_frame_layout of an unknown format is not 0");
  /* sides over CF_VIDEO_MAX_SIDE (whose sizes wrapped size_t, or were
   * frames no engine takes) give 0, a message, and leave *out alone */
  {
    static const struct {
      cf_pixel_format f;
      unsigned w, h;
    } big[] = {
        {CF_PIX_RGBA, 3356042381u, 2748288308u}, /* 22160 bytes, wrapped */
        {CF_PIX_GRAY8, 40000, 40000},
        {CF_PIX_I420, CF_VIDEO_MAX_SIDE + 1, 1},
        {CF_PIX_GRAY32F, 1, CF_VIDEO_MAX_SIDE + 1},
        {CF_PIX_NV12, 0xffffffffu, 0xffffffffu},
    };
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
      cf_frame fr, before;
      memset(&fr, 0x5a, sizeof fr);
      before = fr;
      cf_routing_from_string("stale", &(cf_routing){0});
      size_t size = cf_frame_layout(big[i].f, big[i].w, big[i].h, NULL, &fr);
      CHECK(size == 0 && !memcmp(&fr, &before, sizeof fr) &&
                strstr(cf_last_error(), "frame layout"),
            "cf_frame_layout(%s, %u, %u) = %zu (error '%s'), want 0, a "
            "message and *out untouched",
            cf_pixel_format_name(big[i].f), big[i].w, big[i].h, size,
            cf_last_error());
    }
    /* the largest frame there is: exact */
    size_t want = (size_t)CF_VIDEO_MAX_SIDE * CF_VIDEO_MAX_SIDE * 4;
    if (want / 4 / CF_VIDEO_MAX_SIDE == CF_VIDEO_MAX_SIDE) /* 64-bit */
      CHECK(cf_frame_layout(CF_PIX_RGBA, CF_VIDEO_MAX_SIDE, CF_VIDEO_MAX_SIDE,
                            NULL, NULL) == want,
            "cf_frame_layout(RGBA, %u, %u) is not %zu", CF_VIDEO_MAX_SIDE,
            CF_VIDEO_MAX_SIDE, want);
  }
  for (int b = 0; b < 5; b++) {
    cf_border bb;
    CHECK_OK(cf_border_from_string(border_name((cf_border)b), &bb));
    CHECK((int)bb == b && !strcmp(cf_border_name(bb), border_name(bb)),
          "border name round trip for %d", b);
  }
  static const char *const an[] = {"auto", "direct", "separable", "fft"};
  for (int a = 0; a < 4; a++) {
    cf_algorithm2d aa;
    CHECK_OK(cf_algorithm2d_from_string(an[a], &aa));
    CHECK((int)aa == a && !strcmp(cf_algorithm2d_name(aa), an[a]),
          "algorithm name round trip for '%s'", an[a]);
  }
  cf_border bb;
  CHECK(cf_border_from_string("clamp", &bb) == CF_E_INVALID,
        "border 'clamp' accepted");
  check_components_names(&r);
  /* CF_DSP (the video-avx2 and video-generic runs): the CPU engine runs
   * the table asked for, or a narrower one, never AVX-512 */
  const char *dsp = getenv("CF_DSP");
  if (dsp && (!strcmp(dsp, "avx2") || !strcmp(dsp, "generic")) &&
      V->backend == CF_BACKEND_CPU) {
    cf_video_config_init(&cfg);
    cfg.width = cfg.height = 16;
    cfg.backend = CF_BACKEND_CPU;
    cf_kernel2d *k;
    cf_engine *e;
    const float one = 1.0f;
    CHECK_OK(cf_kernel2d_new(1, 1, 1, &one, &k));
    CHECK_OK(cf_engine_new_video(&cfg, k, &e));
    const char *d = cf_engine_describe(e);
    CHECK(!strstr(d, "cf_dsp_avx512") &&
              (strcmp(dsp, "generic") || strstr(d, "cf_dsp_generic")),
          "CF_DSP=%s, and the engine runs %s", dsp, d);
    cf_engine_free(e);
    cf_kernel2d_free(k);
  }
}

/* Every border mode with odd and even kernel sizes, on GRAY32F and one
 * integer format; half of them with a kernel larger than the frame. */
static void test_borders(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 2);
  for (unsigned b = 0; b < 5; b++)
    for (unsigned par = 0; par < 4; par++)
      for (unsigned big = 0; big < 2; big++) {
        cf_pixel_format f =
            (par + big) % 3 == 2 ? CF_PIX_GRAY8 : CF_PIX_GRAY32F;
        unsigned w = rand_side(&r), h = rand_side(&r);
        unsigned kh = big ? (unsigned)ref_rng_range(&r, h + 1, 2 * h + 4)
                          : (unsigned)ref_rng_range(&r, 1, 9);
        unsigned kw = big ? (unsigned)ref_rng_range(&r, w + 1, 2 * w + 4)
                          : (unsigned)ref_rng_range(&r, 1, 9);
        /* parity: bit 0 -> kh even, bit 1 -> kw even */
        if ((kh % 2 == 0) != ((par & 1) != 0))
          kh++;
        if ((kw % 2 == 0) != ((par & 2) != 0))
          kw++;
        fit_kernel(w, h, 1, &kh, &kw);
        cf_video_config cfg;
        rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 3 == 0);
        cfg.border = (cf_border)b;
        kern k = {0};
        kern_make(&k, &r, 1, kh, kw, rand_kind(&r), fmt_is_int(f));
        set_case("borders: ");
        config_describe(&cfg);
        run_case(&r, &cfg, &k, 2, "borders");
        kern_free(&k);
      }
}

/* Kernels larger than the frame, on both axes, up to 12 times it. */
static void test_large_kernels(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 3);
  for (unsigned c = 0; c < 30; c++) {
    unsigned w = (unsigned)ref_rng_range(&r, 1, 7);
    unsigned h = (unsigned)ref_rng_range(&r, 1, 7);
    /* the last ten: up to 12 periods (scipy 1.10.1 itself is wrong for
     * reflect beyond ~8x; ref2d is checked against padded input there) */
    unsigned per = c < 20 ? 3 : 12;
    unsigned kh = (unsigned)ref_rng_range(&r, h + 1, per * h + 4);
    unsigned kw = (unsigned)ref_rng_range(&r, w + 1, per * w + 4);
    cf_pixel_format f = all_formats[ref_rng_u64(&r) % NFORMATS];
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 0);
    cfg.border = (cf_border)(c % 5);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 2);
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    set_case("large_kernels #%u: ", c);
    config_describe(&cfg);
    run_case(&r, &cfg, &k, 3, "large kernel");
    kern_free(&k);
  }
}

/* 1x1, 1xN and Nx1 frames in every border mode. */
static void test_thin_frames(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 4);
  for (unsigned c = 0; c < 45; c++) {
    unsigned n = (unsigned)ref_rng_range(&r, 2, 50);
    unsigned w = c % 3 == 0 ? 1 : c % 3 == 1 ? n : 1;
    unsigned h = c % 3 == 0 ? 1 : c % 3 == 1 ? 1 : n;
    cf_pixel_format f =
        c < 15 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, 1, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    cfg.border = (cf_border)(c % 5);
    kern k = {0};
    kern_make(&k, &r, (unsigned)ref_rng_range(&r, 1, 2), kh, kw, rand_kind(&r),
              fmt_is_int(f));
    set_case("thin_frames #%u: ", c);
    config_describe(&cfg);
    run_case(&r, &cfg, &k, 2, "thin frame");
    kern_free(&k);
  }
}

/* Every pixel format with every component selection (over the loop),
 * padded strides: alpha and unselected components copied, padding not
 * written. */
static void test_formats(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 5);
  for (unsigned i = 0; i < NFORMATS; i++) {
    cf_pixel_format f = all_formats[i];
    unsigned masks = fmt_ncomp(f) == 1 ? 1 : 7;
    for (unsigned m = 1; m <= masks; m++) {
      unsigned w = rand_side(&r), h = rand_side(&r);
      if (m == 1 && masks > 1) { /* odd sizes: chroma rounds up */
        w |= 1;
        h |= 1;
      }
      unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
      unsigned t = (unsigned)ref_rng_range(&r, 1, 2);
      fit_kernel(w, h, t, &kh, &kw);
      cf_video_config cfg;
      rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
      cfg.components = masks == 1 ? CF_COMP_LUMA : m;
      kern k = {0};
      kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
      set_case("formats: ");
      config_describe(&cfg);
      run_case(&r, &cfg, &k, 2, "formats");
      kern_free(&k);
    }
  }
}

/* Temporal kernels (T 2..4) with state across calls; reset() forgets it
 * (the frame after a reset matches a fresh reference); frames before the
 * first contribute nothing, not even cval through a constant border. */
static void test_temporal(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 6);
  for (unsigned c = 0; c < 16; c++) {
    cf_pixel_format f =
        c < 6 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = 2 + c % 3;
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    if (c % 4 == 0) {
      cfg.border = CF_BORDER_CONSTANT;
      cfg.cval = (float)(fmt_is_int(f) ? 0.5 * fmt_max(f) : 0.75);
    }
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    set_case("temporal #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    if (c % 5 == 1) { /* a reset before any frame is harmless */
      add_case("reset first ");
      vcase_reset(&v);
    }
    unsigned n1 = (unsigned)ref_rng_range(&r, t, t + 3);
    for (unsigned i = 0; i < n1; i++)
      vcase_step(&v, &r, "temporal, before reset");
    vcase_reset(&v);
    CHECK(ref2d_video_kept(v.ref) == 0, "reference kept frames after reset");
    unsigned n2 = (unsigned)ref_rng_range(&r, 1, t + 1);
    for (unsigned i = 0; i < n2; i++)
      vcase_step(&v, &r, "temporal, after reset");
    vcase_close(&v);
    kern_free(&k);
  }
}

/* A refused frame (CF_E_INVALID: nothing written, the state as it was) is
 * no first frame: set_history_frame is still taken after it (it answered
 * CF_E_STATE "the engine has had frames"). */
static void test_history_after_refused(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 59);
  cf_video_config cfg;
  rand_config(&cfg, &r, CF_PIX_I420, 6, 4, 0);
  kern k = {0};
  kern_make(&k, &r, 2, 1, 3, rand_kind(&r), 1);
  cf_kernel2d *kk = kern_build(&k);
  cf_engine *e = NULL;
  set_case("history after a refused frame: ");
  CHECK_OK(cf_engine_new_video(&cfg, kk, &e));
  size_t bytes = cf_frame_layout(CF_PIX_I420, 6, 4, NULL, NULL);
  uint8_t *in = xalloc(bytes), *out = xalloc(bytes);
  memset(in, 100, bytes);
  cf_frame fi, fo;
  cf_frame_layout(CF_PIX_I420, 6, 4, in, &fi);
  cf_frame_layout(CF_PIX_I420, 6, 4, out, &fo);
  cf_frame bad = fi;
  bad.data[2] = NULL;
  CHECK(cf_engine_process_frame(e, &bad, &fo) == CF_E_INVALID,
        "a frame with a NULL plane was not refused");
  cf_status st = cf_engine_set_history_frame(e, &fi);
  CHECK(st == CF_OK,
        "set_history_frame after a refused frame: %s (%s), "
        "want CF_OK",
        cf_status_name(st), cf_last_error());
  CHECK_OK(cf_engine_process_frame(e, &fi, &fo));
  CHECK(cf_engine_set_history_frame(e, &fi) == CF_E_STATE,
        "set_history_frame after a frame was not CF_E_STATE");
  cf_engine_free(e);
  cf_kernel2d_free(kk);
  kern_free(&k);
  free(in);
  free(out);
}

/* A frame of one row whose stride is below its row's bytes is refused
 * (video.h, cf_frame: the stride must hold the row, for any height), as
 * FFmpeg's av_image_copy_plane asserts and every GstVideoInfo has it, though
 * no row after the first uses it; at the row's bytes it is taken. Every
 * format, every plane, input, output and history frame. */
static void test_one_row_stride(void **state)
{
  (void)state;
  if (V->backend == CF_BACKEND_CUDA && V->pipelined)
    return; /* one CUDA variant is enough: the check is the front's */
  ref_rng r;
  test_rng(&r, 53);
  for (unsigned i = 0; i < NFORMATS; i++) {
    cf_pixel_format f = all_formats[i];
    unsigned w = (unsigned)ref_rng_range(&r, 2, 20);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, 1, 0);
    cfg.pipeline_depth = 0;
    kern k = {0};
    kern_make(&k, &r, 2, 1, 3, rand_kind(&r), fmt_is_int(f));
    cf_kernel2d *kk = kern_build(&k);
    cf_engine *e = NULL;
    set_case("one row stride: %s %ux1: ", fmt_name(f), w);
    CHECK_OK(cf_engine_new_video(&cfg, kk, &e));
    size_t bytes = cf_frame_layout(f, w, 1, NULL, NULL);
    uint8_t *in = xalloc(bytes), *out = xalloc(bytes), *keep = xalloc(bytes);
    for (size_t b = 0; b < bytes; b++)
      in[b] = (uint8_t)ref_rng_u64(&r), out[b] = (uint8_t)ref_rng_u64(&r);
    if (f == CF_PIX_GRAY32F)
      for (size_t b = 0; b < bytes; b += 4)
        memcpy(in + b, &(float){(float)ref_rng_sym(&r)}, 4);
    memcpy(keep, out, bytes);
    ref2d_fmt d;
    ref2d_fmt_get(f, &d);
    for (unsigned p = 0; p < d.planes; p++)
      for (unsigned which = 0; which < 3; which++) {
        cf_frame fi, fo;
        cf_frame_layout(f, w, 1, in, &fi);
        cf_frame_layout(f, w, 1, out, &fo);
        size_t row = fi.stride[p];
        size_t small = ref_rng_range(&r, 0, row - 1);
        (which == 1 ? &fo : &fi)->stride[p] = small;
        cf_status st = which == 2 ? cf_engine_set_history_frame(e, &fi)
                                  : cf_engine_process_frame(e, &fi, &fo);
        const char *name = which == 0   ? "input"
                           : which == 1 ? "output"
                                        : "history";
        CHECK(st == CF_E_INVALID && strstr(cf_last_error(), name) &&
                  strstr(cf_last_error(), "less than its row"),
              "%s plane %u stride %zu (row %zu bytes, one row): %s (%s), "
              "want CF_E_INVALID naming the stride",
              name, p, small, row, cf_status_name(st), cf_last_error());
        CHECK(!memcmp(out, keep, bytes), "a refused frame wrote its output");
      }
    cf_frame fi, fo;
    cf_frame_layout(f, w, 1, in, &fi);
    cf_frame_layout(f, w, 1, out, &fo);
    CHECK_OK(cf_engine_process_frame(e, &fi, &fo)); /* stride = row */
    cf_engine_free(e);
    cf_kernel2d_free(kk);
    kern_free(&k);
    free(in);
    free(out);
    free(keep);
  }
}

/* I420 and NV12 frames (tight) of one size: the same samples laid out
 * otherwise (U and V planes, or UV interleaved). `from` I420: src to
 * NV12; NV12: src to I420; any other: src copied as it is. */
static void yuv420_relayout(const uint8_t *src, cf_pixel_format from,
                            uint8_t *dst, unsigned w, unsigned h)
{
  size_t ys = (size_t)w * h, cs = (size_t)((w + 1) / 2) * ((h + 1) / 2);
  memcpy(dst, src, ys);
  for (size_t i = 0; i < cs; i++) {
    if (from == CF_PIX_I420) { /* U plane, V plane -> UV pairs */
      dst[ys + 2 * i] = src[ys + i];
      dst[ys + 2 * i + 1] = src[ys + cs + i];
    } else if (from == CF_PIX_NV12) {
      dst[ys + i] = src[ys + 2 * i];
      dst[ys + cs + i] = src[ys + 2 * i + 1];
    } else {
      dst[ys + i] = src[ys + i], dst[ys + cs + i] = src[ys + cs + i];
    }
  }
}

/* The result for frame `idx` the engine wrote into `got` (tight, in format
 * fmt) against the float64 reference's I420 frame: every sample within 1
 * code value (unselected components copied). */
static void format_switch_check(const uint8_t *got, cf_pixel_format fmt,
                                const uint8_t *want, uint8_t *tmp, unsigned w,
                                unsigned h, size_t bytes, unsigned idx)
{
  yuv420_relayout(got, fmt == CF_PIX_NV12 ? CF_PIX_NV12 : CF_PIX_GRAY8, tmp, w,
                  h);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < bytes; i++)
    if (abs((int)tmp[i] - (int)want[i]) > 1 && !bad++)
      first = i;
  CHECK(!bad,
        "frame %u (delivered in %s): %zu of %zu bytes off by more "
        "than 1 from the reference without a switch; first at I420 byte "
        "%zu (%s): got %d, want %d",
        idx, fmt_name(fmt), bad, bytes, first,
        first < (size_t)w * h ? "Y" : "U or V", tmp[first], want[first]);
}

/* cf_engine_set_pixel_format: a decoder or camera changing between I420
 * and NV12 mid-stream (the same planes, chroma laid out otherwise) keeps
 * the temporal history. A random temporal kernel over random frames, the
 * format changed at random frames (and flushed first where frames are in
 * flight: CF_E_STATE before); every output frame against a float64
 * reference that filters the same samples as I420 throughout, without a
 * switch. Also: a swap prepared before a switch and set after it, and the
 * pairs refused. Before the call existed, a change of format meant a new
 * engine, the history restarting (cudaconvolve's caps change): the
 * frames after the switch are what this checks. */
static void test_format_switch(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 47);
  if (V->backend == CF_BACKEND_CUDA) { /* its ring holds frames' bytes */
    cf_video_config cfg;
    rand_config(&cfg, &r, CF_PIX_I420, 16, 16, 0);
    kern k = {0};
    kern_make(&k, &r, 2, 3, 3, rand_kind(&r), 1);
    cf_kernel2d *kk = kern_build(&k);
    cf_engine *e = NULL;
    CHECK_OK(cf_engine_new_video(&cfg, kk, &e));
    cf_status st = cf_engine_set_pixel_format(e, CF_PIX_NV12);
    CHECK(st == CF_E_UNAVAILABLE && strstr(cf_last_error(), "new engine"),
          "set_pixel_format on CUDA: %s (%s), want CF_E_UNAVAILABLE saying "
          "to build a new engine",
          cf_status_name(st), cf_last_error());
    cf_engine_free(e);
    cf_kernel2d_free(kk);
    kern_free(&k);
    return;
  }
  for (unsigned c = 0; c < 10; c++) {
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = 2 + (unsigned)ref_rng_range(&r, 0, 3);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, CF_PIX_I420, w, h, ref_rng_u64(&r) % 2);
    cf_video_config rcfg = cfg; /* the reference: I420 throughout */
    cf_pixel_format fmt = ref_rng_u64(&r) % 2 ? CF_PIX_NV12 : CF_PIX_I420;
    cfg.format = fmt;
    kern k = {0}, k2 = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), 1);
    set_case("format_switch #%u: ", c);
    config_describe(&cfg);
    kern_describe(&k);
    cf_kernel2d *kk = kern_build(&k);
    cf_engine *e = NULL;
    CHECK_OK(cf_engine_new_video(&cfg, kk, &e));
    ref2d_video *ref = ref2d_video_new(&rcfg, k.t, k.kh, k.kw, k.taps);
    CHECK(ref != NULL, "reference: out of memory");
    if (c % 3 == 0) { /* black where the history lacks frames */
      CHECK_OK(cf_engine_set_history_black(e, 0));
      CHECK(ref2d_video_set_black(ref, 0), "reference: out of memory");
    }
    /* a swap to another temporal kernel, built before the first switch
     * and put in force after it (its state holds samples, not bytes) */
    cf_swap_prep2d *prep = NULL;
    cf_kernel2d *kk2 = NULL;
    if (c % 2) {
      kern_make(&k2, &r, 2 + (unsigned)ref_rng_range(&r, 0, 3), kh, kw,
                rand_kind(&r), 1);
      kk2 = kern_build(&k2);
      CHECK_OK(cf_engine_prepare_swap2d(e, kk2, &prep));
    }
    size_t bytes = cf_frame_layout(CF_PIX_I420, w, h, NULL, NULL);
    unsigned n = t + 4 + (unsigned)ref_rng_range(&r, 0, 6);
    uint8_t *in = xalloc(bytes), *fin = xalloc(bytes), *tmp = xalloc(bytes);
    uint8_t *out = xalloc(bytes);
    uint8_t **want = xalloc(n * sizeof *want);
    size_t depth = cf_engine_latency(e);
    unsigned done = 0, switches = 0, swapped = 0;
    for (unsigned i = 0; i < n; i++) {
      if (i > 0 && (ref_rng_u64(&r) % 3 == 0 || (i == n - 2 && !switches))) {
        cf_pixel_format to = fmt == CF_PIX_I420 ? CF_PIX_NV12 : CF_PIX_I420;
        if (i - done > 0) { /* results in flight: flush them first */
          cf_status st = cf_engine_set_pixel_format(e, to);
          CHECK(st == CF_E_STATE && strstr(cf_last_error(), "flush"),
                "set_pixel_format with %u frames pending: %s (%s), want "
                "CF_E_STATE",
                i - done, cf_status_name(st), cf_last_error());
          for (int got = 1; got;) {
            cf_frame o;
            cf_frame_layout(fmt, w, h, out, &o);
            CHECK_OK(cf_engine_flush_frame(e, &o, &got));
            if (got) {
              format_switch_check(out, fmt, want[done], tmp, w, h, bytes, done);
              done++;
            }
          }
        }
        CHECK_OK(cf_engine_set_pixel_format(e, to));
        fmt = to;
        switches++;
      }
      if (prep && switches && !swapped && ref_rng_u64(&r) % 2 == 0) {
        CHECK_OK(cf_engine_set_prepared2d(e, prep));
        CHECK(ref2d_video_set_kernel(ref, k2.t, k2.kh, k2.kw, k2.taps),
              "reference: out of memory");
        swapped = 1;
      }
      for (size_t b = 0; b < bytes; b++)
        in[b] = (uint8_t)ref_rng_u64(&r);
      want[i] = xalloc(bytes);
      cf_frame ri, ro, fi, fo;
      cf_frame_layout(CF_PIX_I420, w, h, in, &ri);
      cf_frame_layout(CF_PIX_I420, w, h, want[i], &ro);
      CHECK(ref2d_video_frame(ref, &ri, &ro, NULL), "reference: out of memory");
      yuv420_relayout(in, fmt == CF_PIX_NV12 ? CF_PIX_I420 : CF_PIX_GRAY8, fin,
                      w, h);
      for (size_t b = 0; b < bytes; b++)
        out[b] = (uint8_t)ref_rng_u64(&r);
      cf_frame_layout(fmt, w, h, fin, &fi);
      cf_frame_layout(fmt, w, h, out, &fo);
      CHECK_OK(cf_engine_process_frame(e, &fi, &fo));
      if (i + 1 - done > depth) {
        format_switch_check(out, fmt, want[done], tmp, w, h, bytes, done);
        done++;
      }
    }
    for (int got = 1; got;) {
      cf_frame o;
      cf_frame_layout(fmt, w, h, out, &o);
      CHECK_OK(cf_engine_flush_frame(e, &o, &got));
      if (got) {
        format_switch_check(out, fmt, want[done], tmp, w, h, bytes, done);
        done++;
      }
    }
    CHECK(done == n, "%u frames out of %u", done, n);
    /* pairs that are not one layout of the other */
    cf_status st = cf_engine_set_pixel_format(e, CF_PIX_Y42B);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "Y42B"),
          "set_pixel_format(%s -> Y42B): %s (%s), want CF_E_INVALID naming it",
          fmt_name(fmt), cf_status_name(st), cf_last_error());
    st = cf_engine_set_pixel_format(e, (cf_pixel_format)99);
    CHECK(st == CF_E_INVALID, "set_pixel_format(99): %s, want CF_E_INVALID",
          cf_status_name(st));
    CHECK_OK(cf_engine_set_pixel_format(e, fmt)); /* as it is: nothing */
    for (unsigned i = 0; i < n; i++)
      free(want[i]);
    free(want);
    free(in);
    free(fin);
    free(tmp);
    free(out);
    cf_swap_prep2d_free(prep);
    cf_kernel2d_free(kk2);
    cf_kernel2d_free(kk);
    cf_engine_free(e);
    ref2d_video_free(ref);
    kern_free(&k);
    kern_free(&k2);
  }
  /* a gray engine has no other layout */
  cf_video_config g;
  rand_config(&g, &r, CF_PIX_GRAY8, 8, 8, 0);
  kern k = {0};
  kern_make(&k, &r, 2, 3, 3, rand_kind(&r), 1);
  cf_kernel2d *kk = kern_build(&k);
  cf_engine *e = NULL;
  CHECK_OK(cf_engine_new_video(&g, kk, &e));
  cf_status st = cf_engine_set_pixel_format(e, CF_PIX_NV12);
  CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "GRAY8"),
        "set_pixel_format(GRAY8 -> NV12): %s (%s), want CF_E_INVALID",
        cf_status_name(st), cf_last_error());
  cf_engine_free(e);
  cf_kernel2d_free(kk);
  kern_free(&k);
}

/* A prepared swap set on another engine than the one it was made on
 * (video.h): the plain swap to its kernel, also where its engine is gone
 * and the new one was made in its place (its memory reused: on the
 * device backend the prepared state is that engine's own). */
static void test_prepared_elsewhere(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 43);
  for (unsigned c = 0; c < 8; c++) {
    cf_pixel_format f = all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = 1 + c % 3, t2 = (unsigned)ref_rng_range(&r, 1, 3);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t > t2 ? t : t2, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    int gone = c % 2 == 0;
    set_case("prepared elsewhere #%u (%s): ", c,
             gone ? "its engine freed first" : "its engine alive");
    config_describe(&cfg);
    kern k = {0}, k2 = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    kern_make(&k2, &r, t2, kh, kw, rand_kind(&r), fmt_is_int(f));
    cf_kernel2d *kk = kern_build(&k), *kk2 = kern_build(&k2);
    /* the other engine's frames of another size (the device's prepared
     * state fits its own only) */
    cf_video_config ocfg = cfg;
    ocfg.width = rand_side(&r);
    ocfg.height = rand_side(&r);
    add_case("(other engine %ux%u) ", ocfg.width, ocfg.height);
    cf_engine *other = NULL;
    CHECK_OK(cf_engine_new_video(&ocfg, kk, &other));
    cf_swap_prep2d *p = NULL;
    CHECK_OK(cf_engine_prepare_swap2d(other, kk2, &p));
    if (gone)
      cf_engine_free(other);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    unsigned n1 = (unsigned)ref_rng_range(&r, 0, 3);
    for (unsigned i = 0; i < n1; i++)
      vcase_step(&v, &r, "before the swap");
    add_case("| swap after %u frames to ", n1);
    kern_describe(&k2);
    cf_status s = cf_engine_set_prepared2d(v.e, p);
    CHECK(s == CF_OK, "set_prepared2d with another engine's swap returned "
          "%s: %s", cf_status_name(s), cf_last_error());
    vcase_ref_kernel(&v, &k2);
    unsigned n2 = (unsigned)ref_rng_range(&r, 1, 4);
    for (unsigned i = 0; i < n2; i++)
      vcase_step(&v, &r, "after another engine's prepared swap");
    vcase_close(&v);
    cf_swap_prep2d_free(p);
    if (!gone)
      cf_engine_free(other);
    cf_kernel2d_free(kk);
    cf_kernel2d_free(kk2);
    kern_free(&k);
    kern_free(&k2);
  }
}

/* The history frame is kept once on the CPU backend (its own copy), not
 * twice (the engine's front kept one more for a switch from the device
 * that a CPU engine never makes: 8 MiB more at 1448x1448 GRAY32F, 33 MiB
 * for a 4K RGBA one): glibc's mmapped bytes (mallinfo2) grow by about
 * one frame. Not under ASan (its allocator) and where mallinfo2 sees no
 * growth at all (valgrind's), said so. */
static void history_frame_memory(const cf_kernel2d *kk)
{
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  if (V->backend != CF_BACKEND_CPU)
    return;
  set_case("history frame's memory: 1448x1448 GRAY32F, CPU ");
  cf_video_config cfg;
  cf_video_config_init(&cfg);
  cfg.width = cfg.height = 1448;
  cfg.format = CF_PIX_GRAY32F;
  cfg.backend = CF_BACKEND_CPU;
  size_t bytes = (size_t)cfg.width * cfg.height * sizeof(float);
  float *px = xalloc(bytes);
  memset(px, 0, bytes);
  cf_frame fr = {{px, NULL, NULL}, {cfg.width * sizeof(float), 0, 0}};
  cf_engine *e = NULL;
  CHECK_OK(cf_engine_new_video(&cfg, kk, &e));
  struct mallinfo2 m0 = mallinfo2();
  CHECK_OK(cf_engine_set_history_frame(e, &fr));
  struct mallinfo2 m1 = mallinfo2();
  double grew = ((double)m1.hblkhd + (double)m1.uordblks -
                 (double)m0.hblkhd - (double)m0.uordblks) / (double)bytes;
  cf_engine_free(e);
  free(px);
  if (grew < 0.5) {
    print_message("note: mallinfo2 saw no allocation (another allocator: "
                  "valgrind?): the history frame's memory not checked\n");
    return;
  }
  CHECK(grew < 1.5, "set_history_frame of a %zu-byte frame on the CPU took "
        "%.2f frames of memory, want one", bytes, grew);
#else
  (void)kk;
#endif
}

/* cf_engine_set_history_frame: a random frame stands for the frames the
 * history lacks (before the first, after each reset, and those beyond the
 * frames kept when a kernel of more temporal taps comes), on every path
 * and depth; refused once a frame went in, and for a frame that does not
 * fit. */
static void test_history_frame(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 41);
  for (unsigned c = 0; c < 10; c++) {
    cf_pixel_format f =
        c < 3 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = 2 + c % 3, t2 = t + 1 + (unsigned)(ref_rng_u64(&r) % 3);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t2, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    if (c % 4 == 0)
      cfg.border = CF_BORDER_CONSTANT;
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    set_case("history frame #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    CHECK(cf_engine_set_history_frame(v.e, NULL) == CF_OK,
          "set_history_frame(NULL) before any frame: %s", cf_last_error());
    vcase_set_base(&v, &r);
    if (c % 3 == 1) { /* a reset before any frame changes nothing */
      add_case("reset first ");
      vcase_reset(&v);
    }
    unsigned n1 = (unsigned)ref_rng_range(&r, 1, t + 2);
    for (unsigned i = 0; i < n1; i++)
      vcase_step(&v, &r, "history frame, from the start");
    CHECK(cf_engine_set_history_frame(v.e, &v.in.f) == CF_E_STATE,
          "set_history_frame after a frame: not refused");
    vcase_reset(&v);
    unsigned n2 = (unsigned)ref_rng_range(&r, 1, t + 1);
    for (unsigned i = 0; i < n2; i++)
      vcase_step(&v, &r, "history frame, after a reset");
    /* a kernel reaching further back than the frames kept */
    kern_make(&k, &r, t2, kh, kw, rand_kind(&r), fmt_is_int(f));
    add_case("| then T %u ", t2);
    vcase_set_kernel(&v, &k);
    unsigned n3 = (unsigned)ref_rng_range(&r, 1, t2 + 1);
    for (unsigned i = 0; i < n3; i++)
      vcase_step(&v, &r, "history frame, longer kernel");
    vcase_close(&v);
    kern_free(&k);
  }
  /* cf_engine_set_history_black: the format's black, as this test writes
   * it (YUV: Y 16, or 0 in full range, U = V 128; else zeros) */
  for (unsigned c = 0; c < 6; c++) {
    cf_pixel_format f = all_formats[c < 4 ? 9 + c : ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r), t = 2 + c % 2;
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    cf_video_config vc;
    rand_config(&vc, &r, f, w, h, ref_rng_u64(&r) % 2);
    int full = (int)(ref_rng_u64(&r) % 2);
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    set_case("history black #%u, %s range: ", c, full ? "full" : "limited");
    config_describe(&vc);
    size_t bytes = cf_frame_layout(f, w, h, NULL, NULL);
    uint8_t *black = xalloc(bytes);
    cf_frame bf;
    cf_frame_layout(f, w, h, black, &bf);
    if (f == CF_PIX_I420 || f == CF_PIX_NV12 || f == CF_PIX_Y444 ||
        f == CF_PIX_Y42B) {
      memset(black, 128, bytes);
      memset(black, full ? 0 : 16, (size_t)w * h);
    }
    vcase v;
    vcase_open(&v, &r, &vc, &k);
    CHECK_OK(cf_engine_set_history_black(v.e, full));
    CHECK(ref2d_video_set_base(v.ref, &bf), "reference: out of memory");
    if (v.aref)
      CHECK(ref2d_video_set_base(v.aref, &bf), "reference: out of memory");
    for (unsigned i = 0; i < t; i++)
      vcase_step(&v, &r, "history black");
    vcase_reset(&v);
    vcase_step(&v, &r, "history black, after a reset");
    vcase_close(&v);
    kern_free(&k);
    free(black);
  }
  /* a frame that does not fit, and an audio engine */
  cf_video_config cfg;
  cf_video_config_init(&cfg);
  cfg.width = 4;
  cfg.height = 3;
  cfg.format = CF_PIX_GRAY32F;
  cfg.backend = V->backend;
  float taps[2] = {0.5f, 0.5f}, px[12] = {0};
  cf_kernel2d *kk = NULL;
  CHECK_OK(cf_kernel2d_new(2, 1, 1, taps, &kk));
  cf_engine *e = NULL;
  CHECK_OK(cf_engine_new_video(&cfg, kk, &e));
  cf_frame fr = {{px, NULL, NULL}, {2 * sizeof(float), 0, 0}}; /* too short */
  CHECK(cf_engine_set_history_frame(e, &fr) == CF_E_INVALID,
        "a frame with rows shorter than the width: not refused");
  fr.stride[0] = 4 * sizeof(float);
  px[5] = NAN;
  CHECK(cf_engine_set_history_frame(e, &fr) == CF_E_INVALID &&
            strstr(cf_last_error(), "row 1"),
        "a NaN sample: %s", cf_last_error());
  px[5] = 0;
  CHECK_OK(cf_engine_set_history_frame(e, &fr));
  cf_engine_free(e);
  history_frame_memory(kk);
  cf_kernel2d_free(kk);
}

/* set_kernel2d takes effect at the next frame, with other sizes and other
 * T; the history kept is what the engine kept (T - 1 frames). */
static void test_set_kernel(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 7);
  static const unsigned ts[][5] = {
      {1, 3, 2, 4, 1}, {4, 1, 4, 2, 3}, {2, 2, 3, 1, 2}, {3, 4, 1, 2, 4}};
  for (unsigned c = 0; c < 8; c++) {
    cf_pixel_format f =
        c < 3 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    if (c % 3 == 0)
      cfg.border = CF_BORDER_CONSTANT;
    kern k = {0};
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    const unsigned *tt = ts[c % 4];
    fit_kernel(w, h, tt[0], &kh, &kw);
    kern_make(&k, &r, tt[0], kh, kw, rand_kind(&r), fmt_is_int(f));
    set_case("set_kernel #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    if (c % 2) { /* a swap before the first frame */
      kh = rand_kside(&r, h);
      kw = rand_kside(&r, w);
      fit_kernel(w, h, tt[0], &kh, &kw);
      kern_make(&k, &r, tt[0], kh, kw, rand_kind(&r), fmt_is_int(f));
      add_case("| before frame 0: ");
      kern_describe(&k);
      vcase_set_kernel(&v, &k);
    }
    for (unsigned s = 0; s < 5; s++) {
      unsigned n = (unsigned)ref_rng_range(&r, 1, 4);
      for (unsigned i = 0; i < n; i++)
        vcase_step(&v, &r, "set_kernel");
      if (s == 4)
        break;
      kh = rand_kside(&r, h);
      kw = rand_kside(&r, w);
      fit_kernel(w, h, tt[s + 1], &kh, &kw);
      kern_make(&k, &r, tt[s + 1], kh, kw, rand_kind(&r), fmt_is_int(f));
      if (s == 1) { /* two swaps in a row are the second: a 1-frame kernel
                       in between forgets no history */
        kern k1 = {0};
        kern_make(&k1, &r, 1, 1 + kh / 2, 1 + kw / 2, rand_kind(&r),
                  fmt_is_int(f));
        add_case("| after frame %u: ", v.frames - 1);
        kern_describe(&k1);
        vcase_set_kernel(&v, &k1);
        kern_free(&k1);
      }
      add_case("| after frame %u: ", v.frames - 1);
      kern_describe(&k);
      vcase_set_kernel(&v, &k);
      if (s == 2) { /* and a reset with the new kernel */
        add_case("reset ");
        vcase_reset(&v);
      }
    }
    vcase_close(&v);
    kern_free(&k);
  }
}

/* cf_engine_set_output2d between frames: each frame's output stage is the
 * one in force when it went in (frames in flight keep theirs), the history
 * kept across changes (a temporal kernel sees the frames before), with
 * kernel swaps and resets among them; then what it refuses. */
static void test_set_output(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 24);
  /* the pipelined CPU backend filters a frame only once its result is
   * due: the changes meet frames still queued (which keep their stage) */
  setenv("CF_TEST_PIPE_LAZY", "1", 1);
  for (unsigned c = 0; c < 8; c++) {
    cf_pixel_format f =
        c < 2 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 3);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    set_case("set_output #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    if (c % 2) { /* a change before the first frame */
      add_case("| before frame 0: ");
      vcase_set_output(&v, &r);
    }
    for (unsigned s = 0; s < 6; s++) {
      unsigned n = (unsigned)ref_rng_range(&r, 1, 3);
      for (unsigned i = 0; i < n; i++)
        vcase_step(&v, &r, "set_output");
      add_case("| after frame %u: ", v.frames - 1);
      vcase_set_output(&v, &r);
      if (s == 2) { /* a kernel swap beside it */
        kh = rand_kside(&r, h);
        kw = rand_kside(&r, w);
        fit_kernel(w, h, t, &kh, &kw);
        kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
        kern_describe(&k);
        vcase_set_kernel(&v, &k);
      } else if (s == 4) {
        add_case("reset ");
        vcase_reset(&v);
      }
    }
    vcase_step(&v, &r, "set_output");
    /* refused: the stage stays as it was */
    CHECK(cf_engine_set_output2d(v.e, NAN, 0.0f, 0) == CF_E_INVALID &&
              strstr(cf_last_error(), "scale"),
          "a NaN scale: %s", cf_last_error());
    CHECK(cf_engine_set_output2d(v.e, 1.0f, INFINITY, 0) == CF_E_INVALID &&
              strstr(cf_last_error(), "bias"),
          "an infinite bias: %s", cf_last_error());
    vcase_step(&v, &r, "set_output: after the refusals");
    vcase_flush(&v, "set_output: flush");
    vcase_close(&v);
    kern_free(&k);
  }
  unsetenv("CF_TEST_PIPE_LAZY");
  CHECK(cf_engine_set_output2d(NULL, 1.0f, 0.0f, 0) == CF_E_INVALID,
        "a NULL engine: %s", cf_last_error());
  cf_engine *a = NULL;
  float one = 1.0f;
  cf_kernel *k1 = NULL;
  CHECK_OK(cf_kernel_new_shared(&one, 1, &k1));
  cf_audio_config ac;
  cf_audio_config_init(&ac);
  ac.backend = CF_BACKEND_CPU;
  CHECK_OK(cf_engine_new_audio(&ac, k1, &a));
  CHECK(cf_engine_set_output2d(a, 1.0f, 0.0f, 0) == CF_E_STATE,
        "an audio engine: %s", cf_last_error());
  cf_swap_prep2d *none = (cf_swap_prep2d *)&one;
  CHECK(cf_engine_take_retired2d(a, &none) == CF_E_STATE && !none &&
            strstr(cf_last_error(), "take_retired2d: this is an audio engine"),
        "take_retired2d on an audio engine: %s", cf_last_error());
  cf_engine_free(a);
  cf_kernel_free(k1);
}

/* Integer formats: kernels, scale and bias that push outputs past both
 * ends (saturation), absolute; float formats with scale, bias, absolute. */
static void test_saturation(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 8);
  for (unsigned c = 0; c < 24; c++) {
    cf_pixel_format f = all_formats[c % NFORMATS];
    unsigned w = (unsigned)ref_rng_range(&r, 12, 30);
    unsigned h = (unsigned)ref_rng_range(&r, 12, 30);
    unsigned kh = (unsigned)ref_rng_range(&r, 1, 6);
    unsigned kw = (unsigned)ref_rng_range(&r, 2, 6);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 2);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 1);
    cfg.pipeline_depth = 0; /* reads v.val of the frame it just gave */
    double m = fmt_max(f);
    /* rank-1 slices u x v with u = [1, small...], v = [1, -1, small...]
     * (slices after the first scaled by 0.1): the output is about
     * scale * (x_a - x_b), far past both ends of 0..max */
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, K_RANK1, 1);
    for (unsigned tau = 0; tau < t; tau++) {
      double u[6], vv[6];
      for (unsigned i = 0; i < 6; i++) {
        u[i] = i == 0 ? 1.0 : 0.05 * ref_rng_sym(&r);
        vv[i] = i == 0 ? 1.0 : i == 1 ? -1.0 : 0.05 * ref_rng_sym(&r);
      }
      for (unsigned i = 0; i < kh; i++)
        for (unsigned j = 0; j < kw; j++)
          k.taps[((size_t)tau * kh + i) * kw + j] =
              (float)((tau ? 0.1 : 1.0) * u[i] * vv[j]);
    }
    cfg.scale = (float)(3.0 + 2.0 * ref_rng_unit(&r));
    cfg.bias = (float)(m * (0.25 * ref_rng_sym(&r)));
    cfg.absolute = c % 3 == 1;
    set_case("saturation #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    unsigned lo = 0, hi = 0;
    for (unsigned i = 0; i < 3; i++) {
      vcase_step(&v, &r, "saturation");
      for (unsigned q = 0; q < v.d.ncomp; q++)
        if (cfg.components & (1u << q))
          for (size_t j = 0; j < (size_t)v.cw[q] * v.ch[q]; j++) {
            lo += v.val[q][j] < -1.0;
            hi += v.val[q][j] > m + 1.0;
          }
    }
    if (fmt_is_int(f) && !cfg.absolute)
      CHECK(lo && hi,
            "the case does not reach both ends (%u below 0, %u "
            "above %g): the test is too weak",
            lo, hi, m);
    if (fmt_is_int(f) && cfg.absolute)
      CHECK(hi, "the case does not saturate at the top");
    vcase_close(&v);
    kern_free(&k);
  }
}

/* Rounding to nearest, ties to even, on values a float holds exactly: a
 * 1x1 kernel, bias +-k.5 or scale 0.5. Only where the path is exact. */
static void test_round_ties(void **state)
{
  (void)state;
  if (!is_exact_path()) {
    print_message("note: %s is not an exact path, ties checked to 1 code "
                  "value elsewhere\n",
                  V->name);
    return;
  }
  ref_rng r;
  test_rng(&r, 9);
  static const cf_pixel_format fs[] = {CF_PIX_GRAY8, CF_PIX_GRAY16_LE,
                                       CF_PIX_RGBA, CF_PIX_NV12};
  for (unsigned c = 0; c < 8; c++) {
    cf_pixel_format f = fs[c % 4];
    unsigned w = (unsigned)ref_rng_range(&r, 1, 40);
    unsigned h = (unsigned)ref_rng_range(&r, 1, 20);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 0);
    cfg.pipeline_depth = 0; /* reads the output of the frame just given */
    float one = 1.0f;
    kern k = {1, 1, 1, K_RANK1, NULL};
    k.taps = xalloc(sizeof(float));
    if (c < 4) {
      k.taps[0] = one;
      cfg.bias = (float)((double)ref_rng_range(&r, 0, 6) - 3.0 + 0.5);
    } else {
      k.taps[0] = 0.5f;
      cfg.bias = (float)((double)ref_rng_range(&r, 0, 4) - 2.0);
    }
    set_case("round_ties #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    for (unsigned i = 0; i < 2; i++) {
      vcase_step(&v, &r, "round_ties");
      for (unsigned q = 0; q < v.d.ncomp; q++) {
        if (!(cfg.components & (1u << q)))
          continue;
        for (unsigned y = 0; y < v.ch[q]; y++)
          for (unsigned x = 0; x < v.cw[q]; x++) {
            double g = ref2d_load(&v.d, &v.got.f, &v.d.comp[q], x, y);
            double want = ref2d_load(&v.d, &v.want.f, &v.d.comp[q], x, y);
            CHECK(g == want,
                  "component %u at (%u, %u): value %.9g stored "
                  "as %.0f, want %.0f (nearest, ties to even)",
                  q, x, y, v.val[q][(size_t)y * v.cw[q] + x], g, want);
          }
      }
    }
    vcase_close(&v);
    kern_free(&k);
  }
}

/* NaN and Inf in a GRAY32F input reach every output whose footprint holds
 * them (IEEE; on the FFT path they may reach more) and stay away from the
 * others on the direct paths; they leave the history after T - 1 frames and
 * after reset. Integer formats: an accumulation of inf - inf stores 0. */
static void test_nan(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 10);
  for (unsigned c = 0; c < 10; c++) {
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 3);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, CF_PIX_GRAY32F, w, h, ref_rng_u64(&r) % 2);
    cfg.pipeline_depth = 0; /* reads the output of the frame just given */
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), 0);
    /* no tap exactly 0 (NaN * 0 is NaN, but a path may skip zero taps) */
    for (size_t i = 0; i < (size_t)t * kh * kw; i++)
      if (k.taps[i] == 0.0f)
        k.taps[i] = 0.125f;
    unsigned px = (unsigned)ref_rng_range(&r, 0, w - 1);
    unsigned py = (unsigned)ref_rng_range(&r, 0, h - 1);
    float bad = c % 3 == 2 ? INFINITY : NAN;
    set_case("nan #%u: %s at (%u, %u) ", c, isnan(bad) ? "NaN" : "Inf", px, py);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    vcase_step(&v, &r, "nan: before");
    for (unsigned i = 0; i < t + 1; i++) {
      vcase_fill(&v, &r);
      if (i == 0)
        put_float(&v.d, &v.in, &v.d.comp[0], px, py, bad);
      vcase_run_cmp(&v, &r, "nan", 0);
      size_t n = (size_t)w * h, fin = 0, bad_reach = 0, first = 0;
      float *g = xalloc(n * sizeof(float));
      double *wv = xalloc(n * sizeof(double));
      double *av = xalloc(n * sizeof(double));
      for (unsigned y = 0; y < h; y++)
        for (unsigned x = 0; x < w; x++) {
          size_t j = (size_t)y * w + x;
          g[j] = (float)ref2d_load(&v.d, &v.got.f, &v.d.comp[0], x, y);
          double want = v.val[0][j];
          if (!isfinite(want)) {
            if (isfinite(g[j]) && !bad_reach++)
              first = j;
            wv[j] = av[j] = 0.0;
            g[j] = 0.0f;
          } else {
            wv[j] = want;
            av[j] = v.aval[0][j];
            fin++;
          }
        }
      CHECK(!bad_reach,
            "frame %u (%u after the bad sample): %zu outputs "
            "whose footprint holds it are finite, first at (%zu, %zu): %g",
            v.frames - 1, i, bad_reach, first % w, first / w, (double)g[first]);
      if (is_exact_path() || i >= t) {
        /* outside the footprint: finite and right (FFT: once the bad
         * frame has left the history) */
        size_t nonfin = 0;
        for (size_t j = 0; j < n; j++)
          if (!isfinite(g[j]) && !nonfin++)
            first = j;
        CHECK(!nonfin,
              "frame %u (%u after the bad sample): %zu outputs "
              "outside its footprint are not finite, first at (%zu, %zu)",
              v.frames - 1, i, nonfin, first % w, first / w);
        double den, fl;
        g_taps = v.taps;
        double e = float_err(g, wv, av, n, v.taps, cfg.bias, &den, &fl);
        CHECK(fin == 0 || e <= tol(),
              "frame %u: relative L2 error %.3g of "
              "the finite outputs",
              v.frames - 1, e);
      }
      free(g);
      free(wv);
      free(av);
    }
    /* a NaN now, then reset: the next frame is clean */
    vcase_fill(&v, &r);
    put_float(&v.d, &v.in, &v.d.comp[0], px, py, NAN);
    vcase_run_cmp(&v, &r, "nan before reset", 0);
    vcase_reset(&v);
    vcase_step(&v, &r, "nan: after reset");
    vcase_close(&v);
    kern_free(&k);
  }
  /* inf - inf in an integer accumulation: NaN stores as 0 (and a path in
   * double finds the exact 0): taps +-3e38 on a uniform frame. Only on the
   * direct paths: an FFT's roundoff times taps of 3e38 is anything. */
  if (!is_exact_path())
    return;
  static const cf_pixel_format ifs[] = {CF_PIX_GRAY8, CF_PIX_GRAY16_LE,
                                        CF_PIX_RGBA, CF_PIX_I420};
  for (unsigned c = 0; c < 4; c++) {
    cf_pixel_format f = ifs[c];
    /* to 80 wide: the 8- and 16-sample store loops run, and their tails */
    unsigned w = (unsigned)ref_rng_range(&r, 1, 80);
    unsigned h = (unsigned)ref_rng_range(&r, 1, 20);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 0);
    cfg.pipeline_depth = 0;
    cfg.border = (cf_border)(ref_rng_u64(&r) % 4 + 1); /* not constant */
    cfg.components = CF_COMP_ALL;
    kern k = {1, 1, 2, K_RANK1, NULL};
    k.taps = xalloc(2 * sizeof(float));
    k.taps[0] = 3e38f;
    k.taps[1] = -3e38f;
    set_case("nan_int #%u: taps [3e38, -3e38] on a uniform frame ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    vcase_fill(&v, &r);
    uint8_t u = (uint8_t)ref_rng_range(&r, 2, 255);
    for (unsigned q = 0; q < v.d.ncomp; q++)
      for (unsigned y = 0; y < v.ch[q]; y++)
        for (unsigned x = 0; x < v.cw[q]; x++)
          memset((uint8_t *)ref2d_sample_ptr(&v.d, &v.in.f, &v.d.comp[q], x, y),
                 u, v.d.bytes);
    vcase_run(&v, &r, "nan_int");
    for (unsigned q = 0; q < v.d.ncomp; q++)
      for (unsigned y = 0; y < v.ch[q]; y++)
        for (unsigned x = 0; x < v.cw[q]; x++) {
          double g = ref2d_load(&v.d, &v.got.f, &v.d.comp[q], x, y);
          CHECK(g == 0.0, "component %u at (%u, %u): stored %.0f, want 0", q, x,
                y, g);
        }
    vcase_close(&v);
    kern_free(&k);
  }
}

/* Exactly separable and near-rank-1 kernels (outer(u, v) + ~1e-7 relative
 * noise): within tolerance whatever the path. Forced separable may refuse
 * a near-rank-1 kernel, but only with CF_E_INVALID. */
static void test_rank1(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 11);
  /* the last 16: GRAY32F, noise 1e-6 .. 1e-3, which a path that takes the
   * kernel as rank 1 (AUTO picking separable, or forced separable
   * accepting it) would get visibly wrong */
  static const double noise[] = {1e-6, 1e-5, 1e-4, 1e-3};
  for (unsigned c = 0; c < 32; c++) {
    g_noise = c < 16 ? 1e-7 : noise[c % 4];
    cf_pixel_format f = c % 2 || c >= 16
                            ? CF_PIX_GRAY32F
                            : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 3);
    unsigned kh = (unsigned)ref_rng_range(&r, 2, 15);
    unsigned kw = (unsigned)ref_rng_range(&r, 2, 15);
    fit_kernel(w, h, t, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    kern k = {0};
    kkind kind = c % 4 < 2 || c >= 16 ? K_NEAR_RANK1 : K_RANK1;
    kern_make(&k, &r, t, kh, kw, kind, fmt_is_int(f));
    g_noise = 1e-7;
    set_case("rank1 #%u: noise %g ", c,
             kind != K_NEAR_RANK1 ? 0.0
             : c < 16             ? 1e-7
                                  : noise[c % 4]);
    config_describe(&cfg);
    vcase v;
    cf_status st;
    vcase_open_status(&v, &r, &cfg, &k, &st);
    if (st != CF_OK && is_separable() && kind == K_NEAR_RANK1) {
      CHECK(st == CF_E_INVALID && *cf_last_error(),
            "forced separable refused a near-rank-1 kernel with %s: '%s'",
            cf_status_name(st), cf_last_error());
      vcase_close(&v);
      kern_free(&k);
      continue;
    }
    CHECK(st == CF_OK, "cf_engine_new_video returned %s: %s",
          cf_status_name(st), cf_last_error());
    for (unsigned i = 0; i < t + 1; i++)
      vcase_step(&v, &r, "rank1");
    vcase_close(&v);
    kern_free(&k);
  }
}

/* Forced separable refuses a clearly rank-2 kernel, at creation and in
 * set_kernel2d (where the old kernel stays); the other paths take it. */
static void test_rank2(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 12);
  for (unsigned c = 0; c < 6; c++) {
    cf_pixel_format f = c % 2 ? CF_PIX_GRAY32F : CF_PIX_RGBA;
    unsigned w = (unsigned)ref_rng_range(&r, 3, 30);
    unsigned h = (unsigned)ref_rng_range(&r, 3, 30);
    unsigned t = 1 + c % 2;
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 0);
    /* rank 2: identity-like plus a cross; in the last slice for T = 2 */
    kern k2 = {0}, k1 = {0};
    kern_make(&k1, &r, t, 3, 3, K_RANK1, fmt_is_int(f));
    kern_make(&k2, &r, t, 3, 3, K_RANK1, fmt_is_int(f));
    float *s = k2.taps + (size_t)(t - 1) * 9;
    static const float rank2[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (unsigned i = 0; i < 9; i++)
      s[i] = rank2[i] * (fmt_is_int(f) ? 0.3f : 1.0f) + (i == 1 ? 0.2f : 0);
    set_case("rank2 #%u: rank-2 slice %u ", c, t - 1);
    config_describe(&cfg);
    cf_kernel2d *kk = kern_build(&k2);
    cf_engine *e = NULL;
    cf_status st = cf_engine_new_video(&cfg, kk, &e);
    if (is_separable()) {
      CHECK(st == CF_E_INVALID,
            "forced separable with a rank-2 kernel: "
            "cf_engine_new_video returned %s, want CF_E_INVALID",
            cf_status_name(st));
      CHECK(*cf_last_error(), "no error message");
      cf_engine_free(e);
      /* set_kernel2d refuses it too; the rank-1 kernel stays */
      vcase v;
      vcase_open(&v, &r, &cfg, &k1);
      vcase_step(&v, &r, "rank2: before the refused swap");
      st = cf_engine_set_kernel2d(v.e, kk);
      CHECK(st == CF_E_INVALID && *cf_last_error(),
            "forced separable: set_kernel2d with a rank-2 kernel returned "
            "%s, want CF_E_INVALID with a message",
            cf_status_name(st));
      vcase_step(&v, &r, "rank2: after the refused swap (old kernel)");
      vcase_close(&v);
    } else {
      CHECK(st == CF_OK, "rank-2 kernel refused by %s: %s", V->name,
            cf_last_error());
      cf_engine_free(e);
      run_case(&r, &cfg, &k2, 2, "rank2");
    }
    cf_kernel2d_free(kk);
    kern_free(&k1);
    kern_free(&k2);
  }
}

/* Threads 1, 2 and 3 on the same frames (rows split between workers). */
static void test_threads(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 13);
  for (unsigned c = 0; c < 6; c++) {
    cf_pixel_format f = all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = (unsigned)ref_rng_range(&r, 1, 90);
    unsigned h = c == 0 ? 1 : c == 1 ? 2 : (unsigned)ref_rng_range(&r, 3, 70);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 2);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    uint64_t sub = ref_rng_u64(&r);
    for (unsigned th = 0; th <= 3; th++) { /* 0: one per core */
      ref_rng r2;
      ref_rng_init(&r2, sub); /* same frames for every thread count */
      cf_video_config cfg;
      rand_config(&cfg, &r2, f, w, h, 1);
      cfg.threads = th;
      set_case("threads #%u: ", c);
      config_describe(&cfg);
      run_case(&r2, &cfg, &k, 3, "threads");
    }
    kern_free(&k);
  }
}

static void expect_new_fails(const cf_video_config *cfg, const cf_kernel2d *k,
                             const char *what)
{
  cf_engine *e = NULL;
  cf_status st = cf_engine_new_video(cfg, k, &e);
  CHECK(st == CF_E_INVALID,
        "%s: cf_engine_new_video returned %s, want "
        "CF_E_INVALID",
        what, cf_status_name(st));
  CHECK(strlen(cf_last_error()) > 5, "%s: no error message", what);
  if (st == CF_OK)
    cf_engine_free(e);
}

static void test_bad_config(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 14);
  set_case("bad_config");
  float taps[9];
  ref_rng_fill(&r, taps, 9);
  taps[4] += 2.0f;
  cf_kernel2d *k = NULL, *kbad = NULL;
  /* forced separable needs rank 1 */
  for (unsigned i = 0; i < 3; i++)
    for (unsigned j = 0; j < 3; j++)
      taps[i * 3 + j] = (float)((i + 1.0) * (j + 0.5) / 10.0);
  CHECK_OK(cf_kernel2d_new(1, 3, 3, taps, &k));
  float nan_taps[9];
  memcpy(nan_taps, taps, sizeof taps);
  nan_taps[5] = NAN;
  cf_status st = cf_kernel2d_new(1, 3, 3, nan_taps, &kbad);
  CHECK(st == CF_E_INVALID && *cf_last_error(),
        "a kernel with a NaN tap: cf_kernel2d_new returned %s",
        cf_status_name(st));
  cf_video_config base;
  cf_video_config_init(&base);
  base.width = 16;
  base.height = 8;
  base.format = CF_PIX_RGBA;
  base.backend = V->backend;
  base.algorithm = V->algo;
  cf_video_config cfg = base;
  cfg.width = 0;
  expect_new_fails(&cfg, k, "width 0");
  cfg = base;
  cfg.height = 0;
  expect_new_fails(&cfg, k, "height 0");
  cfg = base;
  cfg.pipeline_depth = CF_VIDEO_MAX_DEPTH + 1;
  expect_new_fails(&cfg, k, "pipeline_depth > CF_VIDEO_MAX_DEPTH");
  cfg = base;
  cfg.width = CF_VIDEO_MAX_SIDE + 1;
  expect_new_fails(&cfg, k, "width > CF_VIDEO_MAX_SIDE");
  cfg = base;
  cfg.format = (cf_pixel_format)13;
  expect_new_fails(&cfg, k, "unknown format 13");
  cfg.format = (cf_pixel_format)-1;
  expect_new_fails(&cfg, k, "unknown format -1");
  cfg = base;
  cfg.components = 0;
  expect_new_fails(&cfg, k, "components 0");
  cfg.components = 8;
  expect_new_fails(&cfg, k, "components 8");
  cfg = base;
  cfg.format = CF_PIX_GRAY8;
  cfg.components = CF_COMP_LUMA | CF_COMP_U;
  {
    /* a gray format has one component: a mask naming U is either refused
     * or means the luma only; it must never touch anything else */
    cf_engine *e = NULL;
    st = cf_engine_new_video(&cfg, k, &e);
    CHECK(st == CF_OK || st == CF_E_INVALID,
          "GRAY8 with components 0x3 returned %s", cf_status_name(st));
    cf_engine_free(e);
  }
  cfg = base;
  cfg.scale = NAN;
  expect_new_fails(&cfg, k, "scale NaN");
  cfg = base;
  cfg.bias = INFINITY;
  expect_new_fails(&cfg, k, "bias Inf");
  cfg = base;
  cfg.cval = NAN;
  expect_new_fails(&cfg, k, "cval NaN");
  cfg = base;
  cfg.border = (cf_border)5;
  expect_new_fails(&cfg, k, "border 5");
  cfg = base;
  cfg.algorithm = (cf_algorithm2d)4;
  expect_new_fails(&cfg, k, "algorithm 4");
  cfg = base;
  expect_new_fails(&cfg, NULL, "NULL kernel");
  cf_engine *e = NULL;
  st = cf_engine_new_video(NULL, k, &e);
  CHECK(st == CF_E_INVALID, "NULL config returned %s", cf_status_name(st));
  /* a kernel whose taps turned non-finite behind cf_kernel2d_new's back
   * (written through the taps pointer) is refused by the engine too */
  CHECK_OK(cf_kernel2d_copy(k, &kbad));
  ((float *)cf_kernel2d_taps(kbad))[7] = INFINITY;
  expect_new_fails(&base, kbad, "a kernel with an Inf tap");
  /* valid after all that */
  CHECK_OK(cf_engine_new_video(&base, k, &e));
  CHECK(cf_engine_set_kernel2d(e, NULL) == CF_E_INVALID,
        "set_kernel2d(NULL) accepted");
  st = cf_engine_set_kernel2d(e, kbad);
  CHECK(st == CF_E_INVALID, "set_kernel2d with an Inf tap returned %s",
        cf_status_name(st));
  st = cf_engine_prepare_kernel2d(e, kbad);
  CHECK(st == CF_E_INVALID, "prepare_kernel2d with an Inf tap returned %s",
        cf_status_name(st));
  cf_engine_free(e);
  cf_kernel2d_free(kbad);
  cf_kernel2d_free(k);
  /* parsers refuse a NULL out (error.h) */
  CHECK(cf_pixel_format_from_string("RGBA", NULL) == CF_E_INVALID &&
            cf_border_from_string("wrap", NULL) == CF_E_INVALID &&
            cf_algorithm2d_from_string("fft", NULL) == CF_E_INVALID,
        "a *_from_string with out NULL did not return CF_E_INVALID");
}

/* Invalid frames are refused with CF_E_INVALID and a message, write
 * nothing, and leave the engine's state as it was (T = 2: the refused
 * frame does not enter the history). */
static void test_bad_frames(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 15);
  static const cf_pixel_format fs[] = {CF_PIX_GRAY16_LE, CF_PIX_RGB,
                                       CF_PIX_I420,      CF_PIX_NV12,
                                       CF_PIX_GRAY32F,   CF_PIX_Y42B};
  for (unsigned c = 0; c < sizeof fs / sizeof *fs; c++) {
    cf_pixel_format f = fs[c];
    unsigned w = (unsigned)ref_rng_range(&r, 2, 20);
    unsigned h = (unsigned)ref_rng_range(&r, 2, 20);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 0);
    kern k = {0};
    kern_make(&k, &r, 2, 3, 3, rand_kind(&r), fmt_is_int(f));
    set_case("bad_frames #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    vcase_step(&v, &r, "bad_frames: first");
    vcase_fill(&v, &r);
    fbuf_randomize(&v.got, &r);
    fbuf_copy(&v.want, &v.got);
    char what[160];
    uint8_t *ovl = NULL;
    for (unsigned kind = 0; kind < 7; kind++)
      for (unsigned p = 0; p < v.d.planes; p++) {
        cf_frame in = v.in.f, out = v.got.f;
        unsigned pw, ph;
        ref2d_plane_size(&v.d, p, w, h, &pw, &ph);
        if (kind >= 5 && ph < 2)
          continue; /* one row: its stride is never used */
        switch (kind) {
        /* strides whose rows reach past the end of memory: the span's sum
         * wrapped and the filter wrote at a wild address (QA) */
        case 5:
          snprintf(what, sizeof what, "input stride %u SIZE_MAX / 2", p);
          in.stride[p] = SIZE_MAX / 2;
          break;
        case 6:
          snprintf(what, sizeof what, "output stride %u SIZE_MAX / 3", p);
          out.stride[p] = SIZE_MAX / 3;
          break;
        case 0:
          snprintf(what, sizeof what, "input stride %u smaller than a row", p);
          in.stride[p] = ref2d_row_bytes(&v.d, p, w) - 1;
          break;
        case 1:
          snprintf(what, sizeof what, "output stride %u smaller than a row", p);
          out.stride[p] = ref2d_row_bytes(&v.d, p, w) - 1;
          break;
        case 2:
          snprintf(what, sizeof what, "input plane %u NULL", p);
          in.data[p] = NULL;
          break;
        case 3:
          snprintf(what, sizeof what, "output plane %u NULL", p);
          out.data[p] = NULL;
          break;
        default: { /* both in one buffer, less than a row apart */
          size_t off = ref_rng_range(&r, 0, ref2d_row_bytes(&v.d, p, w) - 1);
          snprintf(what, sizeof what,
                   "output plane %u overlapping input "
                   "plane %u (%zu bytes apart)",
                   p, p, off);
          ovl = xalloc(v.in.size[p] + off);
          memcpy(ovl, v.in.mem[p], v.in.size[p]);
          in.data[p] = ovl;
          out.data[p] = ovl + off;
          out.stride[p] = in.stride[p];
          break;
        }
        }
        fbuf_copy(&v.in_copy, &v.in);
        cf_status st = cf_engine_process_frame(v.e, &in, &out);
        if (ovl) {
          CHECK(!memcmp(ovl, v.in.mem[p], v.in.size[p]),
                "%s: a refused call wrote into the shared buffer", what);
          free(ovl);
          ovl = NULL;
        }
        CHECK(st == CF_E_INVALID,
              "%s: cf_engine_process_frame returned %s, "
              "want CF_E_INVALID",
              what, cf_status_name(st));
        CHECK(strlen(cf_last_error()) > 5, "%s: no error message", what);
        check_input_unchanged(&v, what);
        for (unsigned q = 0; q < v.d.planes; q++)
          CHECK(!memcmp(v.got.mem[q], v.want.mem[q], v.got.size[q]),
                "%s: a refused call wrote into output plane %u", what, q);
      }
    if (v.d.planes > 1) { /* another plane of the input as output */
      cf_frame out = v.got.f;
      out.data[1] = v.in.f.data[0];
      out.stride[1] = v.in.f.stride[0];
      cf_status st = cf_engine_process_frame(v.e, &v.in.f, &out);
      CHECK(st == CF_E_INVALID,
            "output plane 1 on input plane 0: returned "
            "%s, want CF_E_INVALID",
            cf_status_name(st));
    }
    if (v.d.planes > 1) {
      /* output planes sharing bytes (QA: U == V was taken, one plane's
       * results written over the other's); the flush refuses them too,
       * keeping its frame */
      unsigned a = (unsigned)ref_rng_range(&r, 0, v.d.planes - 2);
      unsigned b = (unsigned)ref_rng_range(&r, a + 1, v.d.planes - 1);
      size_t rb = ref2d_row_bytes(&v.d, b, w);
      cf_frame out = v.got.f;
      out.data[b] = (uint8_t *)out.data[a] +
                    ref_rng_range(&r, 0, ref2d_row_bytes(&v.d, a, w) - 1);
      out.stride[b] = out.stride[a] > rb ? out.stride[a] : rb;
      fbuf_copy(&v.want, &v.got);
      cf_status st = cf_engine_process_frame(v.e, &v.in.f, &out);
      CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "overlap"),
            "output planes %u and %u overlapping: returned %s (%s), want "
            "CF_E_INVALID naming the overlap", a, b, cf_status_name(st),
            cf_last_error());
      if (cfg.pipeline_depth) {
        int got = -1;
        st = cf_engine_flush_frame(v.e, &out, &got);
        CHECK(st == CF_E_INVALID && !got,
              "flush_frame with output planes %u and %u overlapping: "
              "returned %s, got %d, want CF_E_INVALID and 0", a, b,
              cf_status_name(st), got);
      }
      for (unsigned q = 0; q < v.d.planes; q++)
        CHECK(!memcmp(v.got.mem[q], v.want.mem[q], v.got.size[q]),
              "overlapping output planes: a refused call wrote into output "
              "plane %u", q);
    }
    { /* in == out */
      cf_status st = cf_engine_process_frame(v.e, &v.in.f, &v.in.f);
      CHECK(st == CF_E_INVALID, "in == out: returned %s, want CF_E_INVALID",
            cf_status_name(st));
      /* an OpenCV-style caller filters in place by habit: say it is not
       * how this call works (QA) */
      CHECK(strstr(cf_last_error(), "overlap") &&
                strstr(cf_last_error(), "in place is not supported"),
            "in == out: message '%s' does not say that filtering in place is "
            "not supported", cf_last_error());
    }
    CHECK(cf_engine_process_frame(v.e, NULL, &v.got.f) == CF_E_INVALID &&
              cf_engine_process_frame(v.e, &v.in.f, NULL) == CF_E_INVALID,
          "a NULL frame was not refused with CF_E_INVALID");
    /* the state is as after the first frame */
    vcase_step(&v, &r, "bad_frames: after the refused calls");
    vcase_step(&v, &r, "bad_frames: next");
    vcase_close(&v);
    kern_free(&k);
  }
}

/* Larger frames (the FFT and threaded paths at a realistic size), very
 * wide or tall ones up to CF_VIDEO_MAX_SIDE, kernels of 4096 and 1000 taps
 * on a side, and T = 64 (CF_KERNEL2D_MAX_FRAMES) and 17. */
static void test_big(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 16);
  static const struct {
    cf_pixel_format f;
    unsigned w, h, t, kh, kw;
  } cs[] = {
      {CF_PIX_GRAY32F, 128, 96, 1, 25, 25},
      {CF_PIX_RGBA, 100, 60, 2, 15, 15},
      {CF_PIX_I420, 121, 81, 1, 31, 9},
      {CF_PIX_GRAY16_LE, 96, 64, 3, 9, 11},
      {CF_PIX_GRAY8, 4097, 2, 1, 3, 5},
      {CF_PIX_GRAY32F, 1, 3000, 2, 7, 1},
      {CF_PIX_NV12, 2050, 3, 1, 2, 4},
      {CF_PIX_GRAY8, 32768, 1, 1, 1, 3},
      {CF_PIX_GRAY16_LE, 3, 2, 1, 4096, 1},
      {CF_PIX_GRAY32F, 2, 3, 1, 2, 1000},
      {CF_PIX_GRAY32F, 6, 5, 64, 3, 3},
      {CF_PIX_RGB, 4, 3, 17, 2, 2},
      {CF_PIX_GRAY8, 3, 2, 1, 1000, 1000},
      {CF_PIX_GRAY32F, 200, 150, 1, 41, 33},
      {CF_PIX_RGBA, 300, 7, 1, 3, 200},
      /* sides past 1024, where the CPU's FFT tiles ended (forced FFT
       * refused them, AUTO went direct: QA) */
      {CF_PIX_GRAY8, 2, 2, 1, 1100, 1030},
      {CF_PIX_GRAY32F, 3, 1, 1, 2, 2500},
  };
  for (unsigned c = 0; c < sizeof cs / sizeof *cs; c++) {
    cf_video_config cfg;
    rand_config(&cfg, &r, cs[c].f, cs[c].w, cs[c].h, ref_rng_u64(&r) % 2);
    cfg.threads = c % 2 ? 2 : 0;
    kern k = {0};
    kern_make(&k, &r, cs[c].t, cs[c].kh, cs[c].kw, rand_kind(&r),
              fmt_is_int(cs[c].f));
    set_case("big #%u: ", c);
    config_describe(&cfg);
    vcase v;
    cf_status st;
    vcase_open_status(&v, &r, &cfg, &k, &st);
    CHECK(st == CF_OK, "cf_engine_new_video returned %s: %s",
          cf_status_name(st), cf_last_error());
    add_case("engine: %s ", cf_engine_describe(v.e));
    if (getenv("CF_TEST_VERBOSE"))
      print_message("big #%u (%s): %s\n", c, kkind_names[k.kind],
                    cf_engine_describe(v.e));
    /* T up to CF_KERNEL2D_MAX_FRAMES: T + 1 frames, a reset, a few more */
    for (unsigned i = 0; i < cs[c].t + 1; i++)
      vcase_step(&v, &r, "big");
    if (cs[c].t > 1) {
      vcase_reset(&v);
      for (unsigned i = 0; i < 3; i++)
        vcase_step(&v, &r, "big, after reset");
    }
    vcase_close(&v);
    kern_free(&k);
  }
}

/* AUTO on the CPU takes the FFT for a kernel past 1024 a side on a large
 * frame: its tiles ended at 1024, so an 1100x1100 kernel on 1080p went
 * direct, over a minute a frame (QA). What it computes is test_big's;
 * here only the choice (FFTW_ESTIMATE plans: made, not run). */
static void test_auto_huge_kernel(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU || V->algo != CF_ALGO2D_AUTO ||
      V->pipelined)
    skip();
  ref_rng r;
  test_rng(&r, 31);
  const char *was = getenv("CF_FFT_PLANNING");
  char *keep = was ? strdup(was) : NULL;
  setenv("CF_FFT_PLANNING", "estimate", 1);
  unsigned side = (unsigned)ref_rng_range(&r, 1025, 1200);
  cf_video_config cfg;
  rand_config(&cfg, &r, CF_PIX_GRAY8, 1920, 1080, 0);
  cfg.algorithm = CF_ALGO2D_AUTO;
  cfg.threads = 1;
  kern k = {0};
  kern_make(&k, &r, 1, side, side, K_GENERAL, 1);
  cf_kernel2d *kk = kern_build(&k);
  cf_engine *e = NULL;
  cf_status st = cf_engine_new_video(&cfg, kk, &e);
  cf_kernel2d_free(kk);
  if (keep) {
    setenv("CF_FFT_PLANNING", keep, 1);
    free(keep);
  } else {
    unsetenv("CF_FFT_PLANNING");
  }
  CHECK(st == CF_OK, "a %ux%u kernel on 1080p: %s: %s", side, side,
        cf_status_name(st), cf_last_error());
  const char *d = cf_engine_describe(e);
  CHECK(strstr(d, "fft") != NULL,
        "a %ux%u kernel on 1080p not on the FFT path: %s", side, side, d);
  cf_engine_free(e);
  kern_free(&k);
}

/* Input and output planes in one buffer (in Y, out Y, in U, out U, ...):
 * disjoint, so accepted, and filtered as from separate buffers. */
static void test_shared_buffer(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 17);
  static const cf_pixel_format fs[] = {CF_PIX_I420, CF_PIX_NV12, CF_PIX_RGBA,
                                       CF_PIX_GRAY16_LE, CF_PIX_GRAY32F};
  for (unsigned c = 0; c < 5; c++) {
    set_case("shared_buffer #%u: ", c);
    vcase v;
    kern k;
    vcase_open_rand(&v, &k, &r, fs[c]);
    size_t off = 0;
    for (unsigned p = 0; p < v.d.planes; p++) {
      v.sh_in[p] = off;
      off += (v.in.size[p] + 7) & ~(size_t)7;
      v.sh_out[p] = off;
      off += (v.got.size[p] + 7) & ~(size_t)7;
    }
    v.shared = xalloc(off);
    for (unsigned i = 0; i < k.t + 1; i++)
      vcase_step(&v, &r, "shared buffer");
    vcase_close(&v);
    kern_free(&k);
  }
}

/* A helper thread for test_swap_from_thread: prepares the swaps it is
 * asked for (cf_engine_prepare_swap2d while the test's thread filters,
 * as video.h allows) and frees what it is handed back (used swaps and
 * what take_retired2d gave), in its own thread. */
typedef struct xswap {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const cf_engine *e;
  cf_kernel2d *ask;   /* to prepare (taken by the thread) */
  cf_swap_prep2d *p;  /* made, with its status and message */
  int made, quit;
  cf_status st;
  char err[512];
  cf_swap_prep2d *back[16]; /* to free */
  unsigned nback;
} xswap;

static void *xswap_main(void *arg)
{
  xswap *x = arg;
  pthread_mutex_lock(&x->mu);
  for (;;) {
    while (!x->quit && !x->ask && !x->nback)
      pthread_cond_wait(&x->cv, &x->mu);
    while (x->nback) {
      cf_swap_prep2d *b = x->back[--x->nback];
      pthread_mutex_unlock(&x->mu);
      cf_swap_prep2d_free(b);
      pthread_mutex_lock(&x->mu);
    }
    if (x->ask) {
      cf_kernel2d *k = x->ask;
      x->ask = NULL;
      pthread_mutex_unlock(&x->mu);
      cf_swap_prep2d *p = NULL;
      cf_status st = cf_engine_prepare_swap2d(x->e, k, &p);
      cf_kernel2d_free(k);
      pthread_mutex_lock(&x->mu);
      x->p = p;
      x->st = st;
      snprintf(x->err, sizeof x->err, "%s", st ? cf_last_error() : "");
      x->made = 1;
      pthread_cond_broadcast(&x->cv);
    } else if (x->quit)
      break;
  }
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

static void xswap_give_back(xswap *x, cf_swap_prep2d *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&x->mu);
  CHECK(x->nback < 16, "xswap: too many given back");
  x->back[x->nback++] = p;
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

/* Kernel swaps prepared in another thread while this one filters (the
 * live use video.h describes): each kernel is asked for at one frame,
 * prepared while the next frames run, put in force with
 * cf_engine_set_prepared2d two frames later, and every output compared
 * with the reference; what cf_engine_take_retired2d hands over after
 * each frame, and the used swaps, are freed by the other thread. Kernels
 * change shape and temporal length (the history grows and shrinks).
 * Under tests/tsan/run this is the video engine's cross-thread swap. */
static void test_swap_from_thread(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 45);
  for (unsigned c = 0; c < 4; c++) {
    cf_pixel_format f = all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    enum { NK = 4 };
    kern ks[NK + 1];
    memset(ks, 0, sizeof ks);
    for (unsigned i = 0; i <= NK; i++) {
      unsigned t = (unsigned)ref_rng_range(&r, 1, 3);
      unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
      fit_kernel(w, h, t, &kh, &kw);
      kern_make(&ks[i], &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    }
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    set_case("swap_from_thread #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &ks[0]);
    xswap x;
    memset(&x, 0, sizeof x);
    pthread_mutex_init(&x.mu, NULL);
    pthread_cond_init(&x.cv, NULL);
    x.e = v.e;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, xswap_main, &x) == 0, "pthread_create");
    unsigned asked = 0, frame = 0;
    for (unsigned i = 1; i <= NK; i++) {
      /* ask, run two frames while it is made, then put it in force */
      pthread_mutex_lock(&x.mu);
      x.ask = kern_build(&ks[i]);
      x.made = 0;
      pthread_cond_broadcast(&x.cv);
      pthread_mutex_unlock(&x.mu);
      asked = frame;
      for (; frame < asked + 2; frame++) {
        vcase_step(&v, &r, "swap from a thread: while it is prepared");
        cf_swap_prep2d *ret = NULL;
        CHECK_OK(cf_engine_take_retired2d(v.e, &ret));
        xswap_give_back(&x, ret);
      }
      pthread_mutex_lock(&x.mu);
      while (!x.made)
        pthread_cond_wait(&x.cv, &x.mu);
      cf_swap_prep2d *p = x.p;
      cf_status st = x.st;
      pthread_mutex_unlock(&x.mu);
      CHECK(st == CF_OK, "prepare_swap2d(%ux%ux%u) in another thread: %s",
            ks[i].t, ks[i].kh, ks[i].kw, x.err);
      add_case("| swap %u at frame %u to %ux%ux%u ", i, frame, ks[i].t,
               ks[i].kh, ks[i].kw);
      st = cf_engine_set_prepared2d(v.e, p);
      CHECK(st == CF_OK, "set_prepared2d: %s", cf_last_error());
      vcase_ref_kernel(&v, &ks[i]);
      xswap_give_back(&x, p);
    }
    for (unsigned i = 0; i < ks[NK].t + 1; i++) {
      vcase_step(&v, &r, "swap from a thread: after the last");
      cf_swap_prep2d *ret = NULL;
      CHECK_OK(cf_engine_take_retired2d(v.e, &ret));
      xswap_give_back(&x, ret);
    }
    pthread_mutex_lock(&x.mu);
    x.quit = 1;
    pthread_cond_broadcast(&x.cv);
    pthread_mutex_unlock(&x.mu);
    pthread_join(th, NULL);
    pthread_cond_destroy(&x.cv);
    pthread_mutex_destroy(&x.mu);
    vcase_close(&v);
    for (unsigned i = 0; i <= NK; i++)
      kern_free(&ks[i]);
  }
}

/* Input and output as two ROIs side by side in one image (OpenCV-style:
 * the left half filtered into the right half, rows of one stride, odd
 * gaps): they share no byte, so they are accepted and filtered as from
 * separate buffers (QA: the overlap check compared the spans from first
 * to last byte, which interleave, and refused them as "overlap"). An
 * output ROI one byte to the left, holding the last byte of each input
 * row, is refused, naming the overlap, writing nothing; one ending just
 * where the input row starts again is taken. */
static void test_roi_side_by_side(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 44);
  static const cf_pixel_format fs[] = {CF_PIX_GRAY8, CF_PIX_RGB, CF_PIX_I420,
                                       CF_PIX_NV12, CF_PIX_GRAY16_LE,
                                       CF_PIX_GRAY32F, CF_PIX_BGRA};
  for (unsigned c = 0; c < sizeof fs / sizeof *fs; c++) {
    set_case("roi_side_by_side #%u: ", c);
    vcase v;
    kern k;
    vcase_open_rand(&v, &k, &r, fs[c]);
    size_t off = 0;
    for (unsigned p = 0; p < v.d.planes; p++) {
      size_t gap = ref_rng_range(&r, 0, 5);
      v.sh_in[p] = off;
      v.sh_out[p] = v.in.f.stride[p] + gap;
      v.sh_stride[p] = v.sh_out[p] + v.got.f.stride[p] + ref_rng_range(&r, 0, 3);
      off += v.sh_stride[p] * side_nrows(&v, p);
    }
    add_case("image strides %zu/%zu/%zu, output ROI at byte %zu/%zu/%zu ",
             v.sh_stride[0], v.sh_stride[1], v.sh_stride[2], v.sh_out[0],
             v.sh_out[1], v.sh_out[2]);
    v.shared = xalloc(off);
    ref_rng lr = r;
    for (size_t i = 0; i < off; i++)
      v.shared[i] = (uint8_t)ref_rng_u64(&lr);
    v.side = 1;
    vcase_step(&v, &r, "ROIs side by side");
    /* output rows overlapping the input rows' last byte: refused */
    unsigned p = (unsigned)ref_rng_range(&r, 0, v.d.planes - 1);
    size_t row = ref2d_row_bytes(&v.d, p, v.cfg.width);
    cf_frame fi = v.in.f, fo = v.got.f;
    for (unsigned q = 0; q < v.d.planes; q++) {
      side_rows(&v, q, 1);
      fi.data[q] = v.shared + v.sh_in[q];
      fo.data[q] = v.shared + v.sh_in[q] + v.sh_out[q];
      fi.stride[q] = fo.stride[q] = v.sh_stride[q];
    }
    fo.data[p] = (uint8_t *)fi.data[p] + row - 1;
    uint8_t *before = xalloc(off);
    memcpy(before, v.shared, off);
    cf_status st = cf_engine_process_frame(v.e, &fi, &fo);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "overlap"),
          "output plane %u overlapping the last byte of each input row: "
          "returned %s (%s), want CF_E_INVALID naming the overlap",
          p, cf_status_name(st), cf_last_error());
    CHECK(!memcmp(before, v.shared, off),
          "a frame refused for overlapping ROIs wrote into the image");
    free(before);
    for (unsigned i = 0; i < k.t; i++)
      vcase_step(&v, &r, "ROIs side by side, after a refused frame");
    if (!v.cfg.pipeline_depth) {
      /* output rows ending where the next input row starts: taken */
      fo.data[p] = (uint8_t *)fi.data[p] + v.sh_stride[p] -
                   ref2d_row_bytes(&v.d, p, v.cfg.width);
      st = cf_engine_process_frame(v.e, &fi, &fo);
      CHECK(st == CF_OK,
            "output plane %u rows ending just before the input's next: "
            "returned %s: %s", p, cf_status_name(st), cf_last_error());
    }
    vcase_close(&v);
    kern_free(&k);
  }
}

/* Kernels with an all-zero temporal slice, and all-zero kernels (the
 * output is the bias): every path takes them, forced separable included
 * (a zero slice is the outer product of a zero column and a row). */
static void test_zero_slices(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 18);
  for (unsigned c = 0; c < 8; c++) {
    cf_pixel_format f =
        c % 2 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = c < 6 ? (unsigned)ref_rng_range(&r, 2, 4) : 1;
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 1);
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    unsigned zero = c < 6 ? (unsigned)ref_rng_range(&r, 0, t - 1) : 0;
    size_t slice = (size_t)kh * kw;
    memset(k.taps + zero * slice, 0, slice * sizeof(float));
    set_case("zero_slices #%u: slice %u of %u zero ", c, zero, t);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    for (unsigned i = 0; i < t + 1; i++)
      vcase_step(&v, &r, "zero slice");
    vcase_close(&v);
    kern_free(&k);
  }
}

/* Backends: CPU always; CUDA unavailable with a reason (an engine forced
 * onto it fails with CF_E_UNAVAILABLE, AUTO falls back to the CPU, whose
 * latency is 0 frames); a video engine refuses the audio calls. */
static void test_backends(void **state)
{
  (void)state;
  set_case("backends");
  const char *reason = NULL;
  CHECK(cf_backend_available(CF_BACKEND_CPU, &reason) == CF_OK,
        "the CPU backend is not available: %s", reason ? reason : "");
  float taps[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  cf_kernel2d *k = NULL;
  CHECK_OK(cf_kernel2d_new(1, 3, 3, taps, &k));
  cf_video_config cfg;
  cf_video_config_init(&cfg);
  cfg.width = 8;
  cfg.height = 6;
  cfg.algorithm = V->algo;
  cf_engine *e = NULL;
  cf_status st = cf_backend_available(CF_BACKEND_CUDA, &reason);
  if (st != CF_OK) {
    CHECK(st == CF_E_UNAVAILABLE && reason && *reason,
          "cf_backend_available(cuda) returned %s without a reason",
          cf_status_name(st));
    cfg.backend = CF_BACKEND_CUDA;
    st = cf_engine_new_video(&cfg, k, &e);
    CHECK(st == CF_E_UNAVAILABLE,
          "video engine on cuda without a device "
          "returned %s, want CF_E_UNAVAILABLE",
          cf_status_name(st));
    CHECK(strlen(cf_last_error()) > 5,
          "CF_E_UNAVAILABLE without a reason: "
          "'%s'",
          cf_last_error());
    cfg.backend = CF_BACKEND_AUTO;
    CHECK_OK(cf_engine_new_video(&cfg, k, &e));
    CHECK(cf_engine_backend(e) == CF_BACKEND_CPU, "auto without cuda chose %s",
          cf_backend_name(cf_engine_backend(e)));
    cf_engine_free(e);
  } else
    print_message("note: cuda available, the unavailable-backend check does "
                  "not apply here\n");
  cfg.backend = CF_BACKEND_CPU;
  CHECK_OK(cf_engine_new_video(&cfg, k, &e));
  CHECK(cf_engine_latency(e) == 0, "CPU video latency %zu, want 0",
        cf_engine_latency(e));
  const char *desc = cf_engine_describe(e);
  CHECK(desc && *desc, "empty description");
  float buf[16] = {0};
  CHECK(cf_engine_process(e, buf, buf, 4) != CF_OK,
        "cf_engine_process accepted on a video engine");
  /* an audio swap handed to a video engine by mistake is refused before it
   * is spent: it can still be made on its own engine (QA: CF_E_STATE, and
   * then its engine refused it as "made") */
  {
    cf_kernel *ka = NULL;
    CHECK_OK(cf_kernel_new_shared(taps, 3, &ka));
    cf_audio_config acfg;
    cf_audio_config_init(&acfg);
    acfg.backend = CF_BACKEND_CPU;
    acfg.threads = 1;
    cf_engine *a = NULL;
    CHECK_OK(cf_engine_new_audio(&acfg, ka, &a));
    cf_swap_prep *p = NULL;
    CHECK_OK(cf_engine_prepare_swap(a, ka, &p));
    st = cf_engine_set_prepared(e, p, 0);
    CHECK(st == CF_E_STATE && strstr(cf_last_error(), "video engine"),
          "set_prepared on a video engine returned %s: %s",
          cf_status_name(st), cf_last_error());
    st = cf_engine_set_prepared(a, p, 0);
    CHECK(st == CF_OK, "set_prepared on its engine, after a video engine "
          "refused it, returned %s: %s", cf_status_name(st), cf_last_error());
    cf_swap_prep_free(p);
    cf_engine_free(a);
    cf_kernel_free(ka);
  }
  cf_engine_free(e);
  cf_kernel2d_free(k);
}

/* The latency API on the CPU: latency 0 frames, nothing ever pending for
 * cf_engine_flush_frame, which leaves the frame untouched. */
static void test_flush_cpu(void **state)
{
  (void)state;
  set_case("flush on the CPU");
  float taps[4] = {1, 2, 3, 4};
  cf_kernel2d *k = NULL;
  CHECK_OK(cf_kernel2d_new(1, 2, 2, taps, &k));
  cf_video_config cfg;
  cf_video_config_init(&cfg);
  cfg.width = 5;
  cfg.height = 3;
  cfg.backend = CF_BACKEND_CPU;
  cf_engine *e = NULL;
  CHECK_OK(cf_engine_new_video(&cfg, k, &e));
  CHECK(cf_engine_latency(e) == 0, "CPU video latency %zu, want 0",
        cf_engine_latency(e));
  uint8_t in[15], out[15];
  for (unsigned i = 0; i < 15; i++)
    in[i] = (uint8_t)(i * 17), out[i] = 0xa5;
  cf_frame fi = {{in}, {5}}, fo = {{out}, {5}};
  int got = -1;
  CHECK_OK(cf_engine_flush_frame(e, &fo, &got));
  CHECK(got == 0, "flush before any frame: got %d, want 0", got);
  CHECK_OK(cf_engine_process_frame(e, &fi, &fo));
  uint8_t after[15];
  memcpy(after, out, sizeof after);
  got = -1;
  CHECK_OK(cf_engine_flush_frame(e, &fo, &got));
  CHECK(got == 0, "flush after a frame: got %d, want 0", got);
  CHECK(!memcmp(after, out, sizeof after), "flush wrote to the frame");
  CHECK(cf_engine_flush_frame(e, &fo, NULL) == CF_E_INVALID,
        "flush with got NULL accepted");
  CHECK(cf_engine_flush_frame(e, NULL, &got) == CF_E_INVALID,
        "flush with a NULL frame accepted");
  cf_engine_free(e);
  cf_kernel2d_free(k);
}

/* pipeline_depth 1..CF_VIDEO_MAX_DEPTH on every variant: frame t's result
 * arrives with frame t + D, the first D calls after the start or a flush
 * write nothing, flushes mid-stream hand out every pending frame (oldest
 * first) and the stream goes on; resets and kernel swaps land between the
 * frames they were made between; refused frames change nothing. */
static void test_pipeline(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 19);
  for (unsigned c = 0; c < 10; c++) {
    cf_pixel_format f =
        c < 2 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(&r) % NFORMATS];
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 3);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, ref_rng_u64(&r) % 2);
    cfg.pipeline_depth = c == 0 ? CF_VIDEO_MAX_DEPTH
                                : (unsigned)ref_rng_range(&r, 1, 4);
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
    set_case("pipeline #%u: ", c);
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &k);
    add_case("engine: %s | ", cf_engine_describe(v.e));
    unsigned ops = (unsigned)ref_rng_range(&r, 10, 24);
    for (unsigned i = 0; i < ops; i++) {
      unsigned op = (unsigned)(ref_rng_u64(&r) % 10);
      if (op == 0) {
        add_case("flush@%u ", v.frames);
        vcase_flush(&v, "pipeline: flush mid-stream");
      } else if (op == 1) {
        add_case("reset@%u ", v.frames);
        vcase_reset(&v);
      } else if (op == 2) {
        t = (unsigned)ref_rng_range(&r, 1, 3);
        kh = rand_kside(&r, h);
        kw = rand_kside(&r, w);
        fit_kernel(w, h, t, &kh, &kw);
        kern_make(&k, &r, t, kh, kw, rand_kind(&r), fmt_is_int(f));
        add_case("kernel@%u ", v.frames);
        kern_describe(&k);
        vcase_set_kernel(&v, &k);
      } else if (op == 3) { /* a refused frame: nothing enqueued */
        cf_frame in = v.in.f;
        in.data[0] = NULL;
        cf_status st = cf_engine_process_frame(v.e, &in, &v.got.f);
        CHECK(st == CF_E_INVALID, "pipeline: a NULL plane returned %s",
              cf_status_name(st));
      } else
        vcase_step(&v, &r, "pipeline");
    }
    CHECK(cf_engine_latency(v.e) == cfg.pipeline_depth,
          "pipeline: latency %zu after the run, want %u",
          cf_engine_latency(v.e), cfg.pipeline_depth);
    vcase_close(&v);
    kern_free(&k);
  }
}

/* backend=auto switching from the device to the CPU mid-stream, tested
 * through the fake device of src/engine/fake.c: CF_TEST_FAKE_DEVICE=
 * call:F (set while the engine is created) makes backend=auto take the
 * CPU as if it were CUDA (pipelined at depth D as CUDA would be) and its
 * F-th process_frame or flush_frame call fail as a device error (kernel:K:
 * its K-th kernel set fail as a device allocation would; base:1: the
 * history frame set before the first frame, so that the engine starts on
 * the CPU with it). Random
 * formats, sizes, temporal kernels, depths 0..7 and a random sequence of
 * frames, flushes, resets and kernel swaps (other sizes and T); F falls on
 * the first call, the last (a flush with nothing pending), the first
 * after a swap, a reset or a flush, a flush that owes frames, or anywhere.
 * Every frame must equal the reference, delivered in order with the
 * stream's latency, none lost or repeated; the engine must be on the
 * device before call F and on the CPU from it on. */
enum { VOP_STEP, VOP_FLUSH, VOP_RESET, VOP_KERNEL, VOP_OUTPUT };

static void fault_case(ref_rng *r, unsigned c)
{
  cf_pixel_format f =
      c < 3 ? CF_PIX_GRAY32F : all_formats[ref_rng_u64(r) % NFORMATS];
  unsigned w = rand_side(r), h = rand_side(r);
  unsigned t = c % 4 == 3 ? 1 : (unsigned)ref_rng_range(r, 2, 4);
  unsigned kh = rand_kside(r, h), kw = rand_kside(r, w);
  fit_kernel(w, h, t, &kh, &kw);
  cf_video_config cfg;
  rand_config(&cfg, r, f, w, h, ref_rng_u64(r) % 2);
  cfg.backend = CF_BACKEND_AUTO;
  cfg.pipeline_depth = c % 8 < 2 ? (c % 8 ? CF_VIDEO_MAX_DEPTH : 0)
                                 : (unsigned)ref_rng_range(r, 0, 4);
  unsigned depth = cfg.pipeline_depth;
  kern k = {0};
  kern_make(&k, r, t, kh, kw, rand_kind(r), fmt_is_int(f));
  /* the operations, and the data calls each makes (a flush: one per
   * frame owed, and the one that finds none) */
  int ops[40];
  unsigned nops = (unsigned)ref_rng_range(r, 6, 40), calls[41], qlen = 0;
  calls[0] = 0;
  for (unsigned i = 0; i < nops; i++) {
    unsigned x = (unsigned)(ref_rng_u64(r) % 13);
    ops[i] = x < 7    ? VOP_STEP
             : x < 8  ? VOP_FLUSH
             : x < 10 ? VOP_KERNEL
             : x < 12 ? VOP_RESET
                      : VOP_OUTPUT;
    calls[i + 1] = calls[i];
    if (ops[i] == VOP_STEP) {
      calls[i + 1]++;
      qlen += qlen < depth;
    } else if (ops[i] == VOP_FLUSH) {
      calls[i + 1] += qlen + 1;
      qlen = 0;
    }
  }
  unsigned total = calls[nops] + qlen + 1; /* and the final flush */
  /* the call that fails: data call F, or (kernel:K) the K-th swap */
  unsigned F = 0, K = 0, nswap = 0, pick = (unsigned)ref_rng_range(r, 0,
                                                                  nops - 1);
  for (unsigned i = 0; i < nops; i++)
    nswap += ops[i] == VOP_KERNEL;
  if (c % 8 == 7 && nswap)
    K = (unsigned)ref_rng_range(r, 1, nswap);
  int want = -1;
  switch (K ? 6 : c % 7) {
  case 0: F = 1; break;
  case 1: F = total; break;
  case 2: want = VOP_KERNEL; break;
  case 3: want = VOP_RESET; break;
  case 4: want = VOP_FLUSH; break;
  case 5: /* a flush owing frames, or the final one */
    F = calls[nops] + 1;
    break;
  }
  for (unsigned i = 0; want >= 0 && i < nops; i++) {
    unsigned j = (pick + i) % nops;
    if (ops[j] == want) {
      F = calls[j + 1] + 1; /* the first call after it */
      break;
    }
  }
  if (!K && (F == 0 || F > total))
    F = (unsigned)ref_rng_range(r, 1, total);
  /* or (base:1) the history frame, set before the first frame */
  int B = c % 12 == 2;
  if (B)
    set_case("fallback #%u: fault at the history frame: ", c);
  else if (K)
    set_case("fallback #%u: fault at swap %u of %u: ", c, K, nswap);
  else
    set_case("fallback #%u: fault at call %u of %u: ", c, F, total);
  config_describe(&cfg);
  char env[64];
  if (B)
    snprintf(env, sizeof env, "base:1");
  else
    snprintf(env, sizeof env, K ? "kernel:%u" : "call:%u", K ? K : F);
  setenv("CF_TEST_FAKE_DEVICE", env, 1);
  vcase v;
  cf_status st;
  vcase_open_status(&v, r, &cfg, &k, &st);
  unsetenv("CF_TEST_FAKE_DEVICE");
  CHECK(st == CF_OK, "cf_engine_new_video (auto, fake device) returned %s: "
        "%s", cf_status_name(st), cf_last_error());
  CHECK(cf_engine_backend(v.e) == CF_BACKEND_CUDA &&
        strstr(cf_engine_describe(v.e), "fake device"),
        "the fake device is not in use: backend %s, '%s'",
        cf_backend_name(cf_engine_backend(v.e)), cf_engine_describe(v.e));
  if (c % 3 == 2) { /* the CPU the engine moves to takes it too */
    add_case("| history frame ");
    vcase_set_base(&v, r);
  }
  add_case("| ");
  for (unsigned i = 0, swaps = 0; i <= nops; i++) {
    cf_backend b = cf_engine_backend(v.e);
    int off = B || (K ? swaps >= K : calls[i] >= F);
    CHECK(b == (off ? CF_BACKEND_CPU : CF_BACKEND_CUDA),
          "after %u calls and %u swaps (fault at %s %u) the engine is on %s",
          calls[i], swaps, K ? "swap" : "call", K ? K : F,
          cf_backend_name(b));
    CHECK(!off == !cf_engine_fallback_reason(v.e) &&
              (!off || strstr(cf_engine_fallback_reason(v.e), "fake device")),
          "fallback reason '%s' %s the switch",
          cf_engine_fallback_reason(v.e) ? cf_engine_fallback_reason(v.e)
                                         : "(none)",
          off ? "after" : "before");
    CHECK(cf_engine_latency(v.e) == depth, "latency %zu after %u calls, "
          "want %u", cf_engine_latency(v.e), calls[i], depth);
    if (i == nops)
      break;
    if (ops[i] == VOP_STEP) {
      add_case("f ");
      vcase_step(&v, r, "fallback");
    } else if (ops[i] == VOP_FLUSH) {
      add_case("flush ");
      vcase_flush(&v, "fallback: flush");
    } else if (ops[i] == VOP_RESET) {
      add_case("reset ");
      vcase_reset(&v);
    } else if (ops[i] == VOP_OUTPUT) {
      vcase_set_output(&v, r);
    } else {
      t = (unsigned)ref_rng_range(r, 1, 4);
      kh = rand_kside(r, h);
      kw = rand_kside(r, w);
      fit_kernel(w, h, t, &kh, &kw);
      kern_make(&k, r, t, kh, kw, rand_kind(r), fmt_is_int(f));
      add_case("swap to ");
      kern_describe(&k);
      vcase_set_kernel(&v, &k);
      swaps++;
    }
  }
  vcase_flush(&v, "fallback: the frames pending at the end");
  CHECK(cf_engine_backend(v.e) == CF_BACKEND_CPU &&
        !strstr(cf_engine_describe(v.e), "fake"),
        "after the last call the engine is on %s: '%s'",
        cf_backend_name(cf_engine_backend(v.e)), cf_engine_describe(v.e));
  vcase_close(&v);
  kern_free(&k);
}

static void test_fallback(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU) {
    print_message("note: the fallback runs on the CPU's fake device: "
                  "tested in the cpu variants\n");
    return;
  }
  ref_rng r;
  test_rng(&r, 20);
  for (unsigned c = 0; c < 64; c++)
    fault_case(&r, c);
}

/* ------------------------------------------------------------------ */

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

/* GRAY32F frames of denormals (a float picture fading to black, the
 * difference of two near-equal frames): on x86 the CPU backend filters
 * with denormals flushed to zero (video.h), so every output is exactly 0
 * (they came out denormal, the FFT path 1.2x slower for it on this
 * project's EPYC VM: bench/results/video-denormal-vm-2026-12-01.md).
 * Whatever the caller's MXCSR (rounding, FTZ, DAZ), its control
 * bits are as they were after every call, whether the work ran on the
 * caller's thread, the pool's or the pipeline's worker. */
static void test_denormal_input(void **state)
{
  (void)state;
#if !defined(__SSE2__)
  print_message("skipped: denormals are flushed on x86 only\n");
#else
  if (V->backend != CF_BACKEND_CPU) {
    print_message("note: the CPU backend flushes denormals: tested in the "
                  "cpu variants\n");
    return;
  }
  if (!check_mxcsr_settable())
    skip();
  /* default; FTZ; DAZ; both with rounding up */
  static const unsigned words[] = {0x1f80u, 0x9f80u, 0x1fc0u, 0xdfc0u};
  const unsigned saved = _mm_getcsr();
  ref_rng r;
  test_rng(&r, 25);
  for (unsigned c = 0; c < 8; c++) {
    unsigned w = rand_side(&r), h = rand_side(&r);
    unsigned t = (unsigned)ref_rng_range(&r, 1, 3);
    unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
    fit_kernel(w, h, t, &kh, &kw);
    kern k = {0};
    kern_make(&k, &r, t, kh, kw, rand_kind(&r), 0);
    cf_video_config cfg;
    rand_config(&cfg, &r, CF_PIX_GRAY32F, w, h, 0);
    cfg.cval = 0.0f;
    unsigned word = words[c % 4];
    set_case("denormal_input #%u: MXCSR %#x ", c, word);
    config_describe(&cfg);
    kern_describe(&k);
    size_t n = (size_t)w * h;
    float *in = xalloc(n * sizeof(float)), *out = xalloc(n * sizeof(float));
    cf_frame fi = {{in}, {w * sizeof(float)}};
    cf_frame fo = {{out}, {w * sizeof(float)}};
    cf_kernel2d *kk = kern_build(&k);
    cf_engine *e = NULL;
    _mm_setcsr(word);
    cf_status s = cf_engine_new_video(&cfg, kk, &e);
    check_mxcsr(word, "cf_engine_new_video");
    _mm_setcsr(saved);
    CHECK(s == CF_OK, "cf_engine_new_video returned %s: %s",
          cf_status_name(s), cf_last_error());
    unsigned frames = t + 2 + cfg.pipeline_depth, got_frames = 0;
    for (unsigned f = 0; f <= frames; f++) {
      int got = 1;
      for (size_t i = 0; i < n; i++)
        in[i] = ldexpf((float)ref_rng_sym(&r), -127);
      for (size_t i = 0; i < n; i++)
        out[i] = 1.0f;
      _mm_setcsr(word);
      if (f < frames) {
        s = cf_engine_process_frame(e, &fi, &fo);
        check_mxcsr(word, "cf_engine_process_frame");
        got = f >= cfg.pipeline_depth;
      } else {
        do /* the pending ones, the last one checked below */
          s = cf_engine_flush_frame(e, &fo, &got);
        while (s == CF_OK && got && ++got_frames < frames);
        check_mxcsr(word, "cf_engine_flush_frame");
      }
      _mm_setcsr(saved);
      CHECK(s == CF_OK, "frame %u: %s", f, cf_last_error());
      if (f < frames)
        got_frames += got;
      for (size_t i = 0; got && i < n; i++)
        CHECK(out[i] == 0.0f,
              "output %u at (%zu, %zu) is %g: only denormal inputs reach it",
              f < frames ? f - cfg.pipeline_depth : got_frames - 1, i % w,
              i / w, (double)out[i]);
    }
    CHECK(got_frames == frames, "%u frames out of %u", got_frames, frames);
    /* the other calls that compute (kernel spectra, plans) */
    cf_swap_prep2d *p = NULL;
    _mm_setcsr(word);
    s = cf_engine_set_kernel2d(e, kk);
    check_mxcsr(word, "cf_engine_set_kernel2d");
    if (s == CF_OK) {
      s = cf_engine_prepare_kernel2d(e, kk);
      check_mxcsr(word, "cf_engine_prepare_kernel2d");
    }
    if (s == CF_OK) {
      s = cf_engine_prepare_swap2d(e, kk, &p);
      check_mxcsr(word, "cf_engine_prepare_swap2d");
    }
    if (s == CF_OK) {
      s = cf_engine_set_prepared2d(e, p);
      check_mxcsr(word, "cf_engine_set_prepared2d");
    }
    if (s == CF_OK) {
      s = cf_engine_set_output2d(e, 2.0f, 0.0f, 1);
      check_mxcsr(word, "cf_engine_set_output2d");
    }
    if (s == CF_OK) {
      s = cf_engine_process_frame(e, &fi, &fo);
      check_mxcsr(word, "cf_engine_process_frame after the swaps");
    }
    _mm_setcsr(saved);
    CHECK(s == CF_OK, "after the frames: %s", cf_last_error());
    cf_swap_prep2d_free(p);
    cf_engine_free(e);
    if (word & 0x6000u) {
      /* not rounding to nearest: a frame computes the same in the
       * pipeline's worker as in the caller's thread (the worker took the
       * caller's rounding for each frame: it kept its own) */
      cf_video_config c0 = cfg;
      c0.algorithm = is_separable() ? CF_ALGO2D_SEPARABLE : CF_ALGO2D_DIRECT;
      c0.pipeline_depth = 0;
      cf_video_config c1 = c0;
      c1.pipeline_depth = (unsigned)ref_rng_range(&r, 1, 3);
      float *o1 = xalloc(n * sizeof(float));
      cf_frame f1 = {{o1}, {w * sizeof(float)}};
      cf_engine *e0 = NULL, *e1 = NULL;
      CHECK_OK(cf_engine_new_video(&c0, kk, &e0));
      CHECK_OK(cf_engine_new_video(&c1, kk, &e1));
      for (unsigned f = 0; f <= t + c1.pipeline_depth; f++) {
        for (size_t i = 0; i < n; i++)
          in[i] = (float)ref_rng_sym(&r) / 3.0f;
        _mm_setcsr(word);
        cf_status s0 = cf_engine_process_frame(e0, &fi, &fo);
        cf_status s1 = cf_engine_process_frame(e1, &fi, &f1);
        _mm_setcsr(saved);
        CHECK(s0 == CF_OK && s1 == CF_OK, "frame %u: %s", f, cf_last_error());
        /* e1 gives frame f - depth: compare the last frame's */
      }
      int got = 0;
      _mm_setcsr(word);
      for (unsigned j = 0; j < c1.pipeline_depth; j++)
        CHECK_OK(cf_engine_flush_frame(e1, &f1, &got));
      _mm_setcsr(saved);
      CHECK(got, "no frame pending at depth %u", c1.pipeline_depth);
      for (size_t i = 0; i < n; i++)
        CHECK(memcmp(&out[i], &o1[i], sizeof(float)) == 0,
              "MXCSR %#x, depth %u: output at (%zu, %zu) is %.9g, %.9g at "
              "depth 0", word, c1.pipeline_depth, i % w, i / w,
              (double)o1[i], (double)out[i]);
      cf_engine_free(e0);
      cf_engine_free(e1);
      free(o1);
    }
    cf_kernel2d_free(kk);
    free(in);
    free(out);
    kern_free(&k);
  }
#endif
}

/* A swap to a long temporal kernel takes its history without writing it:
 * a slot is read only once a frame is in it. The history was zeroed in
 * the swap, which stopped the streaming thread for 116 ms at 64 frames
 * of 1080p GRAY16 (515 ms in a loaded daemon; QA). Seen here as memory:
 * the swap adds far less than the history to the resident set, and the
 * frames after it still equal the reference (test_set_kernel's cases). */
static void test_swap_history_untouched(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU || V->algo != CF_ALGO2D_DIRECT ||
      V->pipelined) {
    print_message("note: tested in the cpu-direct variant\n");
    return;
  }
  ref_rng r;
  test_rng(&r, 32);
  cf_video_config cfg;
  rand_config(&cfg, &r, CF_PIX_GRAY8, 1920, 1080, 0);
  cfg.algorithm = CF_ALGO2D_DIRECT;
  cfg.threads = 1;
  kern k1 = {0}, k64 = {0};
  kern_make(&k1, &r, 1, 3, 3, K_GENERAL, 1);
  kern_make(&k64, &r, 64, 3, 3, K_GENERAL, 1);
  cf_kernel2d *a = kern_build(&k1), *b = kern_build(&k64);
  cf_engine *e = NULL;
  CHECK_OK(cf_engine_new_video(&cfg, a, &e));
  size_t hist = (size_t)63 * 1920 * 1080;
  /* meson test sets MALLOC_PERTURB_: glibc then writes every block it
   * hands out; not during the swap */
  mallopt(M_PERTURB, 0);
  size_t rss0 = check_status_bytes("VmRSS");
  CHECK_OK(cf_engine_set_kernel2d(e, b));
  size_t rss1 = check_status_bytes("VmRSS");
  const char *perturb = getenv("MALLOC_PERTURB_");
  mallopt(M_PERTURB, perturb ? atoi(perturb) : 0);
  print_message("swap to 64 frames: VmRSS %+.1f MB, history %.1f MB\n",
                ((double)rss1 - (double)rss0) / 1e6, (double)hist / 1e6);
  CHECK(rss0 > 0 && rss1 < rss0 + hist / 4,
        "the swap to a 64-frame kernel grew the resident set by %.1f MB "
        "(the history is %.1f MB): written in the swap",
        ((double)rss1 - (double)rss0) / 1e6, (double)hist / 1e6);
  cf_engine_free(e);
  cf_kernel2d_free(a);
  cf_kernel2d_free(b);
  kern_free(&k1);
  kern_free(&k64);
}

/* A swap to fewer temporal taps gives the longer history up at the
 * engine's next frame: the CPU kept the ring of the longest kernel until
 * a longer one came or the end (cudaconvolve leaving a 64-frame kernel
 * for a 3x3 one held 152 MB of 1080p GRAY8, 439 MB in RGBA; QA). Here
 * 12-16 frames of about 800x480 GRAY8, swapped to 1-3 frames by
 * set_prepared2d and by set_kernel2d: nothing to take before a frame,
 * the history at the frame after (cf_engine_take_retired2d), and VmRSS
 * down by most of the 15 frames once it is given back; the frames equal
 * the reference throughout, a longer kernel after the shorter one's
 * frames included. The pipelined engine (its worker gives the history
 * up, handed over by a later call) checks the frames and that it comes
 * once its worker has filtered a frame with the short kernel. */
static void test_history_given_back(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU ||
      (V->algo != CF_ALGO2D_DIRECT && !V->pipelined)) {
    print_message("note: tested in the cpu-direct and cpu-pipelined "
                  "variants\n");
    return;
  }
  int measure = !V->pipelined && check_rss_shows_frees();
  ref_rng r;
  test_rng(&r, 34);
  for (int prepared = 0; prepared < 2; prepared++) {
    cf_video_config cfg;
    /* large enough for VmRSS to tell (measured), small in the
     * pipelined variant */
    unsigned w =
        V->pipelined ? rand_side(&r) : (unsigned)ref_rng_range(&r, 700, 900);
    unsigned h =
        V->pipelined ? rand_side(&r) : (unsigned)ref_rng_range(&r, 400, 560);
    rand_config(&cfg, &r, CF_PIX_GRAY8, w, h, 0);
    cfg.algorithm = V->algo;
    cfg.threads = 1;
    unsigned tl = (unsigned)ref_rng_range(&r, 12, 16);
    unsigned ts = (unsigned)ref_rng_range(&r, 1, 3);
    kern kl = {0}, ks = {0}, km = {0};
    kern_make(&kl, &r, tl, 1, 1, K_GENERAL, 1);
    kern_make(&ks, &r, ts, 1, 3, K_GENERAL, 1);
    kern_make(&km, &r, ts + 3, 3, 1, K_GENERAL, 1);
    set_case("history given back (%s): ", prepared ? "prepared" : "plain");
    config_describe(&cfg);
    vcase v;
    vcase_open(&v, &r, &cfg, &kl);
    for (unsigned i = 0; i <= tl; i++) /* every slot written */
      vcase_step(&v, &r, "the long kernel");
    if (measure) /* as below */
      malloc_trim(0);
    size_t rss0 = check_status_bytes("VmRSS");
    add_case("| %ux1x3 ", ts);
    vcase_swap(&v, &ks, prepared);
    CHECK(cf_engine_take_retired2d(v.e, NULL) == CF_E_INVALID &&
              strstr(cf_last_error(), "take_retired2d: NULL out"),
          "cf_engine_take_retired2d(e, NULL): %s", cf_last_error());
    CHECK(!vcase_take_retired(&v),
          "the history was given up at the swap: a longer kernel set "
          "before the next frame would lack frames");
    int got = 0;
    for (unsigned i = 0; i < 3 + cfg.pipeline_depth; i++) {
      vcase_step(&v, &r, "the short kernel");
      got += vcase_take_retired(&v);
    }
    CHECK(got == 1,
          "%d histories handed over after the swap from %u to %u frames", got,
          tl, ts);
    size_t ring = (size_t)(tl - ts) * w * h;
    if (measure) {
      /* a ring served from free heap earlier tests left (the whole
       * suite) goes back to the heap, not to the system: trimmed (the
       * heap before the swap too, so that only the ring tells) */
      malloc_trim(0);
      size_t rss1 = check_status_bytes("VmRSS");
      print_message("swap %u -> %u frames (%s), then frames: VmRSS %+.1f "
                    "MB, the %u history slots given up %.1f MB\n",
                    tl, ts, prepared ? "prepared" : "plain",
                    ((double)rss1 - (double)rss0) / 1e6, tl - ts,
                    (double)ring / 1e6);
      CHECK(got == 1 && rss0 > 0 && rss1 + ring * 3 / 4 < rss0,
            "VmRSS %zu kB before the swap from %u to %u frames, %zu kB "
            "after frames with it: the history beyond its frames (%zu kB) "
            "kept",
            rss0 >> 10, tl, ts, rss1 >> 10, ring >> 10);
    }
    /* a longer kernel after the short one's frames: it sees only those */
    add_case("| %ux3x1 ", km.t);
    vcase_swap(&v, &km, !prepared);
    for (unsigned i = 0; i < km.t + 1; i++) {
      vcase_step(&v, &r, "a longer kernel after the short one");
      (void)vcase_take_retired(&v);
    }
    vcase_close(&v);
    kern_free(&kl);
    kern_free(&ks);
    kern_free(&km);
  }
}

/* Two swaps in a row with no frame between are the second, also where
 * the first shortened the history: the engine gives the longer history
 * up only at its own next frame (a first fix gave it up at the swap,
 * and cudaconvolve, which changes the kernel of all its engines at the
 * frame of one, then had a field engine lack the frames of a longer
 * kernel set before its next field: test_alternate_stream, QA). Two
 * engines fed in turn as two fields are, each swap made on both after
 * a frame of one: long -> short -> long, random sizes, kernels, swap
 * kinds; every frame against the reference. */
static void test_history_two_fields(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU) {
    print_message("note: tested in the cpu variants\n");
    return;
  }
  ref_rng r;
  test_rng(&r, 35);
  for (unsigned c = 0; c < 4; c++) {
    cf_pixel_format f = c < 2 ? CF_PIX_GRAY32F : CF_PIX_GRAY8;
    unsigned w = rand_side(&r), h = rand_side(&r);
    cf_video_config cfg;
    rand_config(&cfg, &r, f, w, h, 0);
    unsigned tl = (unsigned)ref_rng_range(&r, 4, 8);
    unsigned ts = (unsigned)ref_rng_range(&r, 1, tl - 1);
    unsigned t2 = (unsigned)ref_rng_range(&r, ts + 1, tl);
    kern k[4] = {{0}};
    unsigned tt[4] = {tl, ts, t2, ts};
    for (unsigned i = 0; i < 4; i++) {
      unsigned kh = rand_kside(&r, h), kw = rand_kside(&r, w);
      fit_kernel(w, h, tt[i], &kh, &kw);
      kern_make(&k[i], &r, tt[i], kh, kw, rand_kind(&r), fmt_is_int(f));
    }
    set_case("two fields #%u, %u -> %u -> %u: ", c, tl, ts, t2);
    config_describe(&cfg);
    vcase e[2];
    vcase_open(&e[0], &r, &cfg, &k[0]);
    vcase_open(&e[1], &r, &cfg, &k[0]);
    for (unsigned i = 0; i < 2 * tl + 1; i++)
      vcase_step(&e[i % 2], &r, "the long kernel");
    /* after a frame of e[1]: the short kernel on both; a frame of e[0]
     * (which gives its history up); the longer one on both, then each
     * in turn, e[1] first (its history still the long one's) */
    for (unsigned j = 0; j < 2; j++)
      vcase_swap(&e[j], &k[1], (int)(ref_rng_u64(&r) % 2));
    vcase_step(&e[0], &r, "a field with the short kernel");
    (void)vcase_take_retired(&e[0]);
    for (unsigned j = 0; j < 2; j++)
      vcase_swap(&e[j], &k[2], (int)(ref_rng_u64(&r) % 2));
    for (unsigned i = 0; i < 2 * t2 + 2; i++) {
      vcase_step(&e[(i + 1) % 2], &r, "the longer kernel after the short");
      (void)vcase_take_retired(&e[(i + 1) % 2]);
    }
    /* and the short one again, both swaps right after another frame */
    for (unsigned j = 0; j < 2; j++)
      vcase_swap(&e[j], &k[3], (int)(ref_rng_u64(&r) % 2));
    for (unsigned i = 0; i < 4; i++) {
      vcase_step(&e[i % 2], &r, "the short kernel again");
      (void)vcase_take_retired(&e[i % 2]);
    }
    vcase_close(&e[0]);
    vcase_close(&e[1]);
    for (unsigned i = 0; i < 4; i++)
      kern_free(&k[i]);
  }
}

/* A big kernel on big frames where memory is short (RLIMIT_AS 16 MiB
 * over what the process maps, in a child): CF_E_NOMEM, and the message
 * says how much the scratch wanted, for what (it said "out of memory
 * for 34-row scratch of 4352 floats" where each band wanted 308 MiB:
 * `cudafilter conv2d` of a 64x33x33 kernel on 4K RGBA under a 400 MB
 * limit; QA). A 1x4000x9 kernel on 8K GRAY8, the direct path (no FFTW planner, which aborts when its
 * malloc fails); not under ASan, whose shadow RLIMIT_AS does not allow. */
static void test_nomem_named(void **state)
{
  (void)state;
#if defined(__SANITIZE_ADDRESS__)
  print_message("skipped: RLIMIT_AS does not work under AddressSanitizer\n");
  skip();
#endif
  if (V->backend != CF_BACKEND_CPU || V->algo != CF_ALGO2D_DIRECT) {
    print_message("note: tested in the cpu-direct variant\n");
    return;
  }
  /* one ring of 4000 rows of ~7700 floats, 123 MB: an allocation glibc
   * maps anew (above its mmap threshold, 32 MiB at most), which the
   * limit refuses whatever free heap earlier tests left; over the 64 MiB
   * a glibc arena's heap may reach, for a thread arena's reserved heap
   * (one for each thread of an earlier test that allocated; counted in
   * VmSize, so not under the limit) would take 62 MB of a 4K ring:
   * glibc retries there when the main arena's mmap fails (seen after
   * test_swap_from_thread's helper thread) */
  unsigned t = 1, kh = 4000, kw = 9;
  size_t n = (size_t)t * kh * kw;
  float *taps = malloc(n * sizeof *taps);
  CHECK(taps, "out of memory");
  for (size_t i = 0; i < n; i++)
    taps[i] = (float)(1 + i % 7) / (float)n;
  cf_kernel2d *k = NULL;
  CHECK(cf_kernel2d_new(t, kh, kw, taps, &k) == CF_OK, "kernel: %s",
        cf_last_error());
  free(taps);
  pid_t pid = check_fork_limited(16u << 20);
  if (pid == 0) {
    cf_video_config cfg;
    cf_video_config_init(&cfg);
    cfg.width = 7680, cfg.height = 4320;
    cfg.format = CF_PIX_GRAY8;
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = CF_ALGO2D_DIRECT;
    cfg.threads = 1;
    cf_engine *e = NULL;
    cf_status s = cf_engine_new_video(&cfg, k, &e);
    fprintf(stderr, "cf_engine_new_video: %s: %s\n", cf_status_name(s),
            cf_last_error());
    if (s == CF_OK)
      _exit(4);
    _exit(s == CF_E_NOMEM && strstr(cf_last_error(), "MiB a band") &&
                  strstr(cf_last_error(), "direct path, kernel 1x4000x9")
              ? 0
              : 5);
  }
  cf_kernel2d_free(k);
  int st = check_child_status(pid);
  CHECK(st == 0,
        "child: status %d (3: setrlimit, 4: the engine was made, 5: not "
        "CF_E_NOMEM saying the MiB a band wanted and for what: see "
        "stderr)",
        st);
}

static check_variant_info select_variant(size_t v)
{
  V = &variants[v];
  return (check_variant_info){V->name, V->backend, V->algo == CF_ALGO2D_FFT || V->algo == CF_ALGO2D_AUTO};
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backends),
      cmocka_unit_test(test_api),
      cmocka_unit_test(test_bad_config),
      cmocka_unit_test(test_bad_frames),
      cmocka_unit_test(test_one_row_stride),
      cmocka_unit_test(test_history_after_refused),
      cmocka_unit_test(test_borders),
      cmocka_unit_test(test_large_kernels),
      cmocka_unit_test(test_thin_frames),
      cmocka_unit_test(test_formats),
      cmocka_unit_test(test_temporal),
      cmocka_unit_test(test_format_switch),
      cmocka_unit_test(test_history_frame),
      cmocka_unit_test(test_prepared_elsewhere),
      cmocka_unit_test(test_set_kernel),
      cmocka_unit_test(test_set_output),
      cmocka_unit_test(test_saturation),
      cmocka_unit_test(test_round_ties),
      cmocka_unit_test(test_nan),
      cmocka_unit_test(test_rank1),
      cmocka_unit_test(test_rank2),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_big),
      cmocka_unit_test(test_shared_buffer),
      cmocka_unit_test(test_roi_side_by_side),
      cmocka_unit_test(test_swap_from_thread),
      cmocka_unit_test(test_zero_slices),
      cmocka_unit_test(test_flush_cpu),
      cmocka_unit_test(test_pipeline),
      cmocka_unit_test(test_fallback),
      cmocka_unit_test(test_denormal_input),
      cmocka_unit_test(test_nomem_named),
      cmocka_unit_test(test_auto_huge_kernel),
      cmocka_unit_test(test_swap_history_untouched),
      cmocka_unit_test(test_history_given_back),
      cmocka_unit_test(test_history_two_fields),
  };
  return check_run_variants(tests, sizeof tests / sizeof *tests,
                            sizeof variants / sizeof *variants,
                            select_variant);
}
