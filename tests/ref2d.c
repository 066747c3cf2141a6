/* Test support: the float64 naive reference of the video contract. */
#include "ref2d.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

long ref2d_map(long i, long n, cf_border b)
{
  if (i >= 0 && i < n)
    return i;
  switch (b) {
  case CF_BORDER_CONSTANT: return -1;
  case CF_BORDER_NEAREST: return i < 0 ? 0 : n - 1;
  case CF_BORDER_REFLECT: { /* d c b a | a b c d | d c b a */
    long p = 2 * n, j = i % p;
    if (j < 0)
      j += p;
    return j < n ? j : p - 1 - j;
  }
  case CF_BORDER_MIRROR: { /* c b | a b c d | c b */
    if (n == 1)
      return 0;
    long p = 2 * n - 2, j = i % p;
    if (j < 0)
      j += p;
    return j < n ? j : p - j;
  }
  case CF_BORDER_WRAP: {
    long j = i % n;
    return j < 0 ? j + n : j;
  }
  }
  return -1;
}

/* map[s + off] for source indices s in [-(k - 1 - k / 2), n - 1 + k / 2]. */
static long *index_map(long n, long k, cf_border b, long *off)
{
  long c = k / 2, lo = c - (k - 1), hi = n - 1 + c;
  long *m = malloc((size_t)(hi - lo + 1) * sizeof *m);
  if (!m)
    return NULL;
  for (long s = lo; s <= hi; s++)
    m[s - lo] = ref2d_map(s, n, b);
  *off = -lo;
  return m;
}

void ref2d_convolve(const double *x, unsigned w, unsigned h, const double *k,
                    unsigned kh, unsigned kw, cf_border b, double cval,
                    double *y, int accumulate)
{
  long roff, coff, cy = kh / 2, cx = kw / 2;
  long *rm = index_map(h, kh, b, &roff), *cm = index_map(w, kw, b, &coff);
  if (!rm || !cm)
    abort();
  for (long i = 0; i < (long)h; i++)
    for (long c = 0; c < (long)w; c++) {
      double acc = 0.0;
      for (long m = 0; m < (long)kh; m++) {
        long r = rm[i - m + cy + roff];
        const double *km = k + (size_t)m * kw;
        if (r < 0) {
          for (long n = 0; n < (long)kw; n++)
            acc += km[n] * cval;
          continue;
        }
        const double *xr = x + (size_t)r * w;
        for (long n = 0; n < (long)kw; n++) {
          long s = cm[c - n + cx + coff];
          acc += km[n] * (s < 0 ? cval : xr[s]);
        }
      }
      if (accumulate)
        y[(size_t)i * w + c] += acc;
      else
        y[(size_t)i * w + c] = acc;
    }
  free(rm);
  free(cm);
}

/* ------------------------------------------------------------------ */
/* Pixel layouts, written out from video.h                              */

/* sub: the grid halved in x and y (4:2:0); CH2: in x only (4:2:2) */
#define CH(p, o, s, sub)                                                       \
  {                                                                            \
    p, o, s, sub, sub                                                          \
  }
#define CH2(p, o, s, subx)                                                     \
  {                                                                            \
    p, o, s, subx, 0                                                           \
  }

int ref2d_fmt_get(cf_pixel_format f, ref2d_fmt *d)
{
  memset(d, 0, sizeof *d);
  d->bytes = 1;
  d->maxv = 255.0;
  d->planes = 1;
  d->ncomp = 3;
  switch (f) {
  case CF_PIX_GRAY8:
    d->ncomp = 1;
    d->plane_bpp[0] = 1;
    d->comp[0] = (ref2d_chan)CH(0, 0, 1, 0);
    return 1;
  case CF_PIX_GRAY16_LE:
    d->ncomp = 1;
    d->bytes = 2;
    d->maxv = 65535.0;
    d->plane_bpp[0] = 2;
    d->comp[0] = (ref2d_chan)CH(0, 0, 2, 0);
    return 1;
  case CF_PIX_GRAY32F:
    d->ncomp = 1;
    d->bytes = 4;
    d->is_float = 1;
    d->maxv = 0.0;
    d->plane_bpp[0] = 4;
    d->comp[0] = (ref2d_chan)CH(0, 0, 4, 0);
    return 1;
  case CF_PIX_RGBA:
  case CF_PIX_RGBX:
  case CF_PIX_BGRA:
  case CF_PIX_BGRX: {
    int bgr = f == CF_PIX_BGRA || f == CF_PIX_BGRX;
    d->plane_bpp[0] = 4;
    d->comp[0] = (ref2d_chan)CH(0, bgr ? 2 : 0, 4, 0); /* R */
    d->comp[1] = (ref2d_chan)CH(0, 1, 4, 0);           /* G */
    d->comp[2] = (ref2d_chan)CH(0, bgr ? 0 : 2, 4, 0); /* B */
    d->nextra = 1;
    d->extra = (ref2d_chan)CH(0, 3, 4, 0);
    return 1;
  }
  case CF_PIX_RGB:
  case CF_PIX_BGR: {
    int bgr = f == CF_PIX_BGR;
    d->plane_bpp[0] = 3;
    d->comp[0] = (ref2d_chan)CH(0, bgr ? 2 : 0, 3, 0);
    d->comp[1] = (ref2d_chan)CH(0, 1, 3, 0);
    d->comp[2] = (ref2d_chan)CH(0, bgr ? 0 : 2, 3, 0);
    return 1;
  }
  case CF_PIX_I420:
    d->planes = 3;
    for (unsigned p = 0; p < 3; p++) {
      d->plane_bpp[p] = 1;
      d->plane_subx[p] = d->plane_suby[p] = p > 0;
      d->comp[p] = (ref2d_chan)CH(p, 0, 1, p > 0);
    }
    return 1;
  case CF_PIX_Y444: /* three full planes */
    d->planes = 3;
    for (unsigned p = 0; p < 3; p++) {
      d->plane_bpp[p] = 1;
      d->comp[p] = (ref2d_chan)CH(p, 0, 1, 0);
    }
    return 1;
  case CF_PIX_Y42B: /* chroma halved across, full height */
    d->planes = 3;
    for (unsigned p = 0; p < 3; p++) {
      d->plane_bpp[p] = 1;
      d->plane_subx[p] = p > 0;
      d->comp[p] = (ref2d_chan)CH2(p, 0, 1, p > 0);
    }
    return 1;
  case CF_PIX_NV12:
    d->planes = 2;
    d->plane_bpp[0] = 1;
    d->plane_bpp[1] = 2;
    d->plane_subx[1] = d->plane_suby[1] = 1;
    d->comp[0] = (ref2d_chan)CH(0, 0, 1, 0);
    d->comp[1] = (ref2d_chan)CH(1, 0, 2, 1);
    d->comp[2] = (ref2d_chan)CH(1, 1, 2, 1);
    return 1;
  }
  return 0;
}

static unsigned half_up(unsigned n)
{
  return n / 2 + n % 2;
}

void ref2d_plane_size(const ref2d_fmt *f, unsigned p, unsigned w, unsigned h,
                      unsigned *pw, unsigned *ph)
{
  *pw = f->plane_subx[p] ? half_up(w) : w;
  *ph = f->plane_suby[p] ? half_up(h) : h;
}

size_t ref2d_row_bytes(const ref2d_fmt *f, unsigned p, unsigned w)
{
  unsigned pw, ph;
  ref2d_plane_size(f, p, w, 1, &pw, &ph);
  return (size_t)pw * f->plane_bpp[p];
}

void ref2d_chan_size(const ref2d_chan *c, unsigned w, unsigned h, unsigned *cw,
                     unsigned *ch)
{
  *cw = c->subx ? half_up(w) : w;
  *ch = c->suby ? half_up(h) : h;
}

const uint8_t *ref2d_sample_ptr(const ref2d_fmt *f, const cf_frame *fr,
                                const ref2d_chan *c, unsigned x, unsigned y)
{
  (void)f;
  return (const uint8_t *)fr->data[c->plane] +
         (size_t)y * fr->stride[c->plane] + (size_t)x * c->step + c->offset;
}

double ref2d_load(const ref2d_fmt *f, const cf_frame *fr, const ref2d_chan *c,
                  unsigned x, unsigned y)
{
  const uint8_t *p = ref2d_sample_ptr(f, fr, c, x, y);
  if (f->is_float) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  if (f->bytes == 2)
    return (double)(p[0] | (unsigned)p[1] << 8);
  return (double)p[0];
}

double ref2d_quantize(const ref2d_fmt *f, double v)
{
  if (isnan(v))
    return 0.0;
  v = nearbyint(v); /* default rounding mode: nearest, ties to even */
  return v < 0.0 ? 0.0 : v > f->maxv ? f->maxv : v;
}

void ref2d_store(const ref2d_fmt *f, const cf_frame *fr, const ref2d_chan *c,
                 unsigned x, unsigned y, double v)
{
  uint8_t *p = (uint8_t *)ref2d_sample_ptr(f, fr, c, x, y);
  if (f->is_float) {
    float s = (float)v;
    memcpy(p, &s, sizeof s);
    return;
  }
  unsigned q = (unsigned)ref2d_quantize(f, v);
  p[0] = (uint8_t)(q & 0xff);
  if (f->bytes == 2)
    p[1] = (uint8_t)(q >> 8);
}

/* ------------------------------------------------------------------ */
/* The video engine                                                     */

struct ref2d_video {
  cf_video_config cfg;
  ref2d_fmt fmt;
  unsigned cw[3], ch[3];
  size_t total;   /* doubles in one frame: all components */
  size_t coff[3]; /* component c's plane within a frame */
  unsigned t, kh, kw;
  double *k;     /* t x kh x kw */
  double **hist; /* hist[0]: the frame before, ...; kept of them */
  unsigned kept, cap;
  double *cur;
  double *base; /* the frames not kept (ref2d_video_set_base), or NULL */
};

static int set_taps(ref2d_video *v, unsigned t, unsigned kh, unsigned kw,
                    const float *taps)
{
  size_t n = (size_t)t * kh * kw;
  double *k = malloc((n ? n : 1) * sizeof *k);
  if (!k)
    return 0;
  for (size_t i = 0; i < n; i++)
    k[i] = taps[i];
  free(v->k);
  v->k = k;
  v->t = t;
  v->kh = kh;
  v->kw = kw;
  if (t > v->cap + 1) {
    double **h = realloc(v->hist, (size_t)t * sizeof *h);
    if (!h)
      return 0;
    v->hist = h;
    for (unsigned i = v->cap; i < t - 1; i++)
      v->hist[i] = NULL;
    v->cap = t - 1;
  }
  return 1;
}

ref2d_video *ref2d_video_new(const cf_video_config *cfg, unsigned t,
                             unsigned kh, unsigned kw, const float *taps)
{
  ref2d_video *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->cfg = *cfg;
  if (!ref2d_fmt_get(cfg->format, &v->fmt))
    goto fail;
  for (unsigned c = 0; c < v->fmt.ncomp; c++) {
    ref2d_chan_size(&v->fmt.comp[c], cfg->width, cfg->height, &v->cw[c],
                    &v->ch[c]);
    v->coff[c] = v->total;
    v->total += (size_t)v->cw[c] * v->ch[c];
  }
  v->cur = malloc(v->total * sizeof *v->cur);
  if (!v->cur || !set_taps(v, t, kh, kw, taps))
    goto fail;
  return v;
fail:
  ref2d_video_free(v);
  return NULL;
}

void ref2d_video_free(ref2d_video *v)
{
  if (!v)
    return;
  for (unsigned i = 0; i < v->cap; i++)
    free(v->hist[i]);
  free(v->hist);
  free(v->cur);
  free(v->base);
  free(v->k);
  free(v);
}

int ref2d_video_set_format(ref2d_video *v, cf_pixel_format f)
{
  ref2d_fmt d;
  if (!ref2d_fmt_get(f, &d) || d.ncomp != v->fmt.ncomp ||
      d.is_float != v->fmt.is_float || d.bytes != v->fmt.bytes)
    return 0;
  for (unsigned c = 0; c < d.ncomp; c++) {
    unsigned cw, ch;
    ref2d_chan_size(&d.comp[c], v->cfg.width, v->cfg.height, &cw, &ch);
    if (cw != v->cw[c] || ch != v->ch[c])
      return 0;
  }
  v->fmt = d; /* the history holds samples: it goes on */
  v->cfg.format = f;
  return 1;
}

int ref2d_video_set_black(ref2d_video *v, int full_range)
{
  free(v->base);
  if (!(v->base = calloc(v->total, sizeof *v->base)))
    return 0;
  cf_pixel_format f = v->cfg.format;
  if (f == CF_PIX_I420 || f == CF_PIX_NV12 || f == CF_PIX_Y444 ||
      f == CF_PIX_Y42B)
    for (unsigned c = 0; c < 3; c++)
      for (size_t i = 0; i < (size_t)v->cw[c] * v->ch[c]; i++)
        v->base[v->coff[c] + i] = c ? 128 : full_range ? 0 : 16;
  return 1;
}

int ref2d_video_set_base(ref2d_video *v, const cf_frame *f)
{
  free(v->base);
  v->base = NULL;
  if (!f)
    return 1;
  if (!(v->base = malloc(v->total * sizeof *v->base)))
    return 0;
  for (unsigned c = 0; c < v->fmt.ncomp; c++)
    for (unsigned y = 0; y < v->ch[c]; y++)
      for (unsigned x = 0; x < v->cw[c]; x++)
        v->base[v->coff[c] + (size_t)y * v->cw[c] + x] =
            ref2d_load(&v->fmt, f, &v->fmt.comp[c], x, y);
  return 1;
}

void ref2d_video_set_output(ref2d_video *v, float scale, float bias,
                            int absolute)
{
  v->cfg.scale = scale;
  v->cfg.bias = bias;
  v->cfg.absolute = absolute;
}

int ref2d_video_set_kernel(ref2d_video *v, unsigned t, unsigned kh, unsigned kw,
                           const float *taps)
{
  return set_taps(v, t, kh, kw, taps);
}

void ref2d_video_reset(ref2d_video *v)
{
  v->kept = 0;
}

unsigned ref2d_video_kept(const ref2d_video *v)
{
  return v->kept;
}

int ref2d_video_frame(ref2d_video *v, const cf_frame *in, const cf_frame *out,
                      double *const val[3])
{
  const ref2d_fmt *f = &v->fmt;
  const cf_video_config *cfg = &v->cfg;
  size_t kslice = (size_t)v->kh * v->kw;
  double *acc = NULL;
  for (unsigned c = 0; c < f->ncomp; c++)
    for (unsigned y = 0; y < v->ch[c]; y++)
      for (unsigned x = 0; x < v->cw[c]; x++)
        v->cur[v->coff[c] + (size_t)y * v->cw[c] + x] =
            ref2d_load(f, in, &f->comp[c], x, y);
  for (unsigned c = 0; c < f->ncomp; c++) {
    unsigned cw = v->cw[c], ch = v->ch[c];
    if (!(cfg->components & (1u << c))) {
      for (unsigned y = 0; y < ch; y++)
        for (unsigned x = 0; x < cw; x++)
          memcpy((uint8_t *)ref2d_sample_ptr(f, out, &f->comp[c], x, y),
                 ref2d_sample_ptr(f, in, &f->comp[c], x, y), f->bytes);
      continue;
    }
    free(acc);
    acc = malloc((size_t)cw * ch * sizeof *acc);
    if (!acc)
      return 0;
    /* frames before the first (or a reset) contribute nothing at all, not
     * even cval through the border; with a base frame, they are it */
    ref2d_convolve(v->cur + v->coff[c], cw, ch, v->k, v->kh, v->kw, cfg->border,
                   cfg->cval, acc, 0);
    for (unsigned tau = 1; tau < v->t && (tau <= v->kept || v->base); tau++)
      ref2d_convolve((tau <= v->kept ? v->hist[tau - 1] : v->base) + v->coff[c],
                     cw, ch, v->k + tau * kslice, v->kh, v->kw, cfg->border,
                     cfg->cval, acc, 1);
    for (unsigned y = 0; y < ch; y++)
      for (unsigned x = 0; x < cw; x++) {
        double s =
            (double)cfg->scale * acc[(size_t)y * cw + x] + (double)cfg->bias;
        if (cfg->absolute)
          s = fabs(s);
        if (val && val[c])
          val[c][(size_t)y * cw + x] = s;
        ref2d_store(f, out, &f->comp[c], x, y, s);
      }
  }
  free(acc);
  for (unsigned e = 0; e < f->nextra; e++) {
    unsigned cw, ch;
    ref2d_chan_size(&f->extra, cfg->width, cfg->height, &cw, &ch);
    for (unsigned y = 0; y < ch; y++)
      for (unsigned x = 0; x < cw; x++)
        memcpy((uint8_t *)ref2d_sample_ptr(f, out, &f->extra, x, y),
               ref2d_sample_ptr(f, in, &f->extra, x, y), f->bytes);
  }
  /* keep the last t - 1 frames: this one in front */
  unsigned keep = v->t - 1;
  if (keep) {
    unsigned n = v->kept + 1 < keep ? v->kept + 1 : keep;
    double *last = v->hist[n - 1];
    if (!last && !(last = malloc(v->total * sizeof *last)))
      return 0;
    memmove(v->hist + 1, v->hist, (size_t)(n - 1) * sizeof *v->hist);
    memcpy(last, v->cur, v->total * sizeof *last);
    v->hist[0] = last;
    v->kept = n;
  } else
    v->kept = 0;
  return 1;
}
