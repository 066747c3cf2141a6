/* The engine front for video: validates the configuration, the kernel and
 * each frame, then forwards to the backend. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_internal.h"
#include "video_internal.h"

CF_PUBLIC void cf_video_config_init(cf_video_config *cfg)
{
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->format = CF_PIX_GRAY8;
  cfg->components = CF_COMP_ALL;
  cfg->border = CF_BORDER_REFLECT;
  cfg->scale = 1.0f;
  cfg->backend = CF_BACKEND_AUTO;
  cfg->algorithm = CF_ALGO2D_AUTO;
  cfg->pipeline_depth = 0; /* live: no latency unless asked */
}

static cf_status check_config(const cf_video_config *c)
{
  if (!c)
    return cf_fail(CF_E_INVALID, "video engine: configuration is NULL");
  if (!cf_format_desc_get(c->format))
    return cf_fail(CF_E_INVALID, "video engine: unknown pixel format %d",
                   (int)c->format);
  if (c->width < 1 || c->height < 1 || c->width > CF_VIDEO_MAX_SIDE ||
      c->height > CF_VIDEO_MAX_SIDE)
    return cf_fail(CF_E_INVALID, "video engine: frame %ux%u, each side must "
                   "be 1..%u", c->width, c->height, CF_VIDEO_MAX_SIDE);
  if (c->components == 0 || (c->components & ~CF_COMP_ALL))
    return cf_fail(CF_E_INVALID, "video engine: components mask 0x%x, must "
                   "be a non-empty subset of 0x7", c->components);
  if (cf_format_desc_get(c->format)->ncomp == 1 && !(c->components & 1u))
    return cf_fail(CF_E_INVALID, "video engine: %s has one component; the "
                   "mask 0x%x does not select it",
                   cf_pixel_format_name(c->format), c->components);
  if ((unsigned)c->border > CF_BORDER_WRAP)
    return cf_fail(CF_E_INVALID, "video engine: unknown border mode %d",
                   (int)c->border);
  if (c->pipeline_depth > CF_VIDEO_MAX_DEPTH)
    return cf_fail(CF_E_INVALID, "video engine: pipeline_depth %u, must be "
                   "0..%u", c->pipeline_depth, CF_VIDEO_MAX_DEPTH);
  if ((unsigned)c->algorithm > CF_ALGO2D_FFT)
    return cf_fail(CF_E_INVALID, "video engine: unknown algorithm %d",
                   (int)c->algorithm);
  if (!isfinite(c->cval) || !isfinite(c->scale) || !isfinite(c->bias))
    return cf_fail(CF_E_INVALID, "video engine: %s is %s",
                   !isfinite(c->cval) ? "cval"
                   : !isfinite(c->scale) ? "scale" : "bias",
                   isnan(!isfinite(c->cval) ? c->cval
                         : !isfinite(c->scale) ? c->scale : c->bias)
                       ? "NaN" : "infinite");
  return CF_OK;
}

static cf_status check_kernel2d(const cf_kernel2d *k)
{
  if (!k)
    return cf_fail(CF_E_INVALID, "video engine: kernel is NULL");
  /* cf_kernel2d_new keeps taps finite; this catches a kernel changed
   * behind its back (one pass, cheap beside building the engine) */
  size_t n = (size_t)k->t * k->kh * k->kw;
  for (size_t j = 0; j < n; j++)
    if (!isfinite(k->taps[j]))
      return cf_fail(CF_E_INVALID, "video engine: kernel tap [%zu][%zu][%zu] "
                     "is %s", j / ((size_t)k->kh * k->kw), j / k->kw % k->kh,
                     j % k->kw, isnan(k->taps[j]) ? "NaN" : "infinite");
  return CF_OK;
}

/* ---- frames (both backends check them the same way) ---- */

cf_status cf_video_check_frame(const cf_video_config *c, const cf_frame *f,
                               const char *which)
{
  const cf_format_desc *d = cf_format_desc_get(c->format);
  for (unsigned p = 0; p < d->planes; p++) {
    size_t w = cf_sub_w(c->width, d->plane_sub[p]);
    if (!f->data[p])
      return cf_fail(CF_E_INVALID, "process_frame: %s plane %u is NULL",
                     which, p);
    if (f->stride[p] < w * d->plane_bpp[p])
      return cf_fail(CF_E_INVALID, "process_frame: %s plane %u stride %zu "
                     "is less than its row of %zu bytes", which, p,
                     f->stride[p], w * d->plane_bpp[p]);
    /* rows that would reach past the end of the address space (QA: a
     * stride of SIZE_MAX / 2 wrapped the span's sum, and the filter
     * wrote at a wild address; SIZE_MAX / 3 read one). No machine maps
     * memory at or above 2^57 (5-level paging's user space is 2^56) */
    size_t h = cf_sub_h(c->height, d->plane_sub[p]);
    size_t row = w * d->plane_bpp[p];
#if UINTPTR_MAX > 0xffffffffu
    const uintptr_t limit = (uintptr_t)1 << 57;
#else
    const uintptr_t limit = UINTPTR_MAX;
#endif
    uintptr_t at = (uintptr_t)f->data[p];
    if ((h > 1 && f->stride[p] > (SIZE_MAX - row) / (h - 1)) || at > limit ||
        f->stride[p] * (h - 1) + row > limit - at)
      return cf_fail(CF_E_INVALID, "process_frame: %s plane %u stride %zu: "
                     "its %zu rows reach past the end of the address space",
                     which, p, f->stride[p], h);
  }
  return CF_OK;
}

/* Plane p of f as rows: h rows of `row` bytes, `stride` apart. */
typedef struct plane_rows {
  uintptr_t at;
  size_t stride, row, h;
} plane_rows;

static plane_rows rows_of(const cf_video_config *c, const cf_frame *f,
                          unsigned p)
{
  const cf_format_desc *d = cf_format_desc_get(c->format);
  plane_rows r = {(uintptr_t)f->data[p], f->stride[p],
                  cf_sub_w(c->width, d->plane_sub[p]) * d->plane_bpp[p],
                  cf_sub_h(c->height, d->plane_sub[p])};
  return r;
}

/* Whether a byte of some row of a is a byte of some row of b. Not the
 * spans from first to last byte (QA: two ROIs side by side in one
 * image, an OpenCV-style left half filtered into the right half, share
 * no byte, but their rows interleave and the spans overlap: that was
 * refused as "overlap"). Planes passed cf_video_check_frame (strides >=
 * rows, every address below 2^57), so no sum here wraps. O(rows of a). */
static int rows_overlap(plane_rows a, plane_rows b)
{
  uintptr_t a_end = a.at + a.stride * (a.h - 1) + a.row;
  uintptr_t b_end = b.at + b.stride * (b.h - 1) + b.row;
  if (!(a.at < b_end && b.at < a_end))
    return 0;
  for (size_t i = 0; i < a.h; i++) {
    uintptr_t x = a.at + a.stride * i; /* row [x, x + a.row) */
    /* b's rows j with b.at + j * stride < x + a.row and
     * b.at + j * stride + b.row > x: the first j past the second bound */
    size_t j = 0;
    if (x >= b.at + b.row)
      j = (x - b.at - b.row) / b.stride + 1;
    if (j < b.h && b.at + b.stride * j < x + a.row)
      return 1;
  }
  return 0;
}

cf_status cf_video_check_output(const cf_video_config *c, const cf_frame *out)
{
  cf_status s = cf_video_check_frame(c, out, "output");
  if (s != CF_OK)
    return s;
  /* QA: I420 with out U == out V (or U inside Y's rows) was taken, one
   * plane's results written over the other's, OK returned */
  unsigned planes = cf_format_desc_get(c->format)->planes;
  for (unsigned a = 0; a < planes; a++)
    for (unsigned b = a + 1; b < planes; b++)
      if (rows_overlap(rows_of(c, out, a), rows_of(c, out, b)))
        return cf_fail(CF_E_INVALID, "process_frame: output planes %u and %u "
                       "overlap", a, b);
  return CF_OK;
}

cf_status cf_video_check_frames(const cf_video_config *c, const cf_frame *in,
                                const cf_frame *out)
{
  cf_status s = cf_video_check_frame(c, in, "input");
  if (s == CF_OK)
    s = cf_video_check_output(c, out);
  if (s != CF_OK)
    return s;
  unsigned planes = cf_format_desc_get(c->format)->planes;
  for (unsigned a = 0; a < planes; a++)
    for (unsigned b = 0; b < planes; b++)
      if (rows_overlap(rows_of(c, in, a), rows_of(c, out, b)))
        return cf_fail(CF_E_INVALID, "process_frame: input plane %u and "
                       "output plane %u overlap (filtering in place is not "
                       "supported: give the output its own memory)", a, b);
  return CF_OK;
}

/* ---- backend=auto: switching from CUDA to the CPU mid-stream ----------
 * While auto runs on CUDA, the front keeps host copies (tight layout) of
 * the last T - 1 + depth input frames, each with the kernel it was
 * processed with, whether a reset came before it, and how many frames
 * before it the engine used (T - 1 at most; fewer after a reset, at the
 * start, or when a shorter kernel ran just before). When the device fails
 * in process_frame or flush_frame, a CPU backend of the same pipeline
 * depth is built and fed, from the oldest frame an undelivered one
 * depends on, every frame with its resets and kernel swaps; the outputs
 * before the oldest undelivered frame are discarded, and the CPU then
 * owes exactly the frames the device owed: none is lost or repeated and
 * the latency stays. */
typedef struct front_frame {
  const cf_kernel2d *k;
  unsigned used;      /* frames before this one its output depends on */
  int reset;          /* a reset came just before it */
  cf_video_out o;     /* its output stage */
} front_frame;

struct cf_video_front {
  /* fixed at creation (prepare_kernel2d reads them from any thread) */
  cf_video_config cfg;
  size_t frame_bytes;
  unsigned depth;
  unsigned bands; /* the CPU backend's, when the engine started on it */
  cf_video_out out; /* the next frame's output stage (set_output2d) */
  /* the frames' format now: cfg.format, or the other layout of its grids
   * that cf_engine_set_pixel_format put in force (only on the CPU, never
   * while the front watches the device); the engine's thread's */
  cf_pixel_format format;
  uint8_t *base;    /* set_history_frame's (tight), or NULL */
  int begun;        /* a frame was given */
  /* while auto runs on CUDA: frames [n - hcap, n) in hist and meta; the
   * kernels they and the next frame use (the newest last) */
  int watch;
  uint8_t *hist;
  front_frame *meta;
  unsigned hcap;
  cf_kernel2d **kern;
  unsigned nkern, kcap;
  unsigned long long n, delivered;
  unsigned seen;     /* frames before the next one the engine holds */
  int reset_pending; /* a reset came after frame n - 1 */
};

static cf_frame tight_at(const struct cf_video_front *f, uint8_t *base)
{
  cf_frame t;
  cf_frame_layout(f->format, f->cfg.width, f->cfg.height, base, &t);
  return t;
}

static uint8_t *hist_frame(const struct cf_video_front *f,
                           unsigned long long i)
{
  return f->hist + (size_t)(i % f->hcap) * f->frame_bytes;
}

void cf_video_copy_frame(const cf_video_config *c, const cf_frame *src,
                         const cf_frame *dst)
{
  const cf_format_desc *d = cf_format_desc_get(c->format);
  for (unsigned p = 0; p < d->planes; p++) {
    size_t row = cf_sub_w(c->width, d->plane_sub[p]) * d->plane_bpp[p];
    size_t h = cf_sub_h(c->height, d->plane_sub[p]);
    for (size_t r = 0; r < h; r++)
      memcpy((uint8_t *)dst->data[p] + r * dst->stride[p],
             (const uint8_t *)src->data[p] + r * src->stride[p], row);
  }
}

static int front_watching(const cf_engine *e)
{
  return e->vfront && e->vfront->watch && e->backend == CF_BACKEND_CUDA;
}

static void front_forget(struct cf_video_front *f)
{
  for (unsigned i = 0; i < f->nkern; i++)
    cf_kernel2d_free(f->kern[i]);
  free(f->kern);
  free(f->hist);
  free(f->meta);
  f->kern = NULL;
  f->hist = NULL;
  f->meta = NULL;
  f->nkern = f->kcap = 0;
  __atomic_store_n(&f->hcap, 0, __ATOMIC_RELAXED); /* prepare_swap2d */
  f->watch = 0;
}

/* What a prepared swap gives front_prepare, so that it allocates and frees
 * nothing: the kernel itself (*own, taken and set NULL); room for the
 * kernels it drops (dead[0 .. *ndead), at most dcap; those that do not
 * fit stay for a later swap); and, for a kernel that lengthens the
 * history to hist_cap frames, the history made ahead (*hist, *meta, taken;
 * the old one put in their place). The prepared swap frees what it holds,
 * later, in another thread. */
typedef struct front_give {
  cf_kernel2d **own;
  cf_kernel2d **dead;
  unsigned *ndead, dcap;
  uint8_t **hist;
  front_frame **meta;
  unsigned hist_cap;
} front_give;

/* The history's length for kernel k: T - 1 + depth frames. */
static unsigned front_cap(const struct cf_video_front *f, const cf_kernel2d *k)
{
  return k->t - 1 + f->depth;
}

/* The next frames use kernel k: keep it (g's, or a copy), drop the
 * kernels no frame held uses (but the current one, which a failed swap
 * goes back to; into g when given, else freed), and (re)size the history
 * for k, keeping the frames in it. What it allocates comes first, so that
 * a failure changes nothing the frames see. The list of kernels has room
 * for the longest history any kernel can ask for and two more (the
 * history's kernels, the current one and k). */
static cf_status front_prepare(cf_engine *e, const cf_kernel2d *k,
                               const front_give *g)
{
  struct cf_video_front *f = e->vfront;
  if (e->backend != CF_BACKEND_CUDA || e->requested != CF_BACKEND_AUTO)
    return CF_OK;
  f->watch = 1;
  unsigned long long first = f->n > f->hcap ? f->n - f->hcap : 0;
  unsigned keep = 0;
  for (unsigned j = 0; j < f->nkern; j++) {
    int used = j + 1 == f->nkern; /* the current one: a failed swap keeps it */
    for (unsigned long long i = first; i < f->n && !used; i++)
      used = f->meta[i % f->hcap].k == f->kern[j];
    if (!used && !g)
      cf_kernel2d_free(f->kern[j]);
    else if (!used && *g->ndead < g->dcap)
      g->dead[(*g->ndead)++] = f->kern[j];
    else
      f->kern[keep++] = f->kern[j];
  }
  f->nkern = keep;
  unsigned cap = front_cap(f, k);
  unsigned most = CF_KERNEL2D_MAX_FRAMES - 1 + f->depth + 2;
  unsigned need = keep + 1 > most ? keep + 1 : most;
  if (need > f->kcap) {
    cf_kernel2d **kern = realloc(f->kern, need * sizeof *kern);
    if (!kern)
      return cf_fail(CF_E_NOMEM, "video engine: out of memory");
    f->kern = kern;
    f->kcap = need;
  }
  uint8_t *h = NULL;
  front_frame *m = NULL;
  int given = 0;
  if (cap > f->hcap && g && g->hist && *g->hist && g->hist_cap == cap) {
    h = *g->hist; /* its meta all zeros: k NULL, never recorded */
    m = *g->meta;
    given = 1;
  } else if (cap > f->hcap) {
    h = malloc((size_t)cap * f->frame_bytes);
    m = calloc(cap, sizeof *m); /* k NULL: never recorded */
    if (!h || !m) {
      free(h);
      free(m);
      return cf_fail(CF_E_NOMEM, "video engine: out of memory for the CPU "
                     "fallback history (%u frames)", cap);
    }
  }
  if (g && g->own && *g->own) {
    f->kern[keep] = *g->own;
    *g->own = NULL;
  } else {
    cf_status s = cf_kernel2d_copy(k, &f->kern[keep]);
    if (s != CF_OK) {
      if (!given) {
        free(h);
        free(m);
      }
      return s;
    }
  }
  f->nkern++;
  if (!h)
    return CF_OK;
  for (unsigned long long i = first; i < f->n; i++) {
    memcpy(h + (size_t)(i % cap) * f->frame_bytes, hist_frame(f, i),
           f->frame_bytes);
    m[i % cap] = f->meta[i % f->hcap];
  }
  if (given) { /* the old history goes to the prepared swap */
    *g->hist = f->hist;
    *g->meta = f->meta;
  } else {
    free(f->hist);
    free(f->meta);
  }
  f->hist = h;
  f->meta = m;
  __atomic_store_n(&f->hcap, cap, __ATOMIC_RELAXED); /* prepare_swap2d */
  return CF_OK;
}

/* Frame i's record: from the history, or for i == n the frame coming. */
static front_frame front_meta(const struct cf_video_front *f,
                              unsigned long long i)
{
  if (i < f->n)
    return f->meta[i % f->hcap];
  const cf_kernel2d *k = f->kern[f->nkern - 1];
  return (front_frame){k, f->seen < k->t - 1 ? f->seen : k->t - 1,
                       f->reset_pending, f->out};
}

/* The device failed: continue on the CPU. The undelivered frames
 * [delivered, n) and the current one `cur` (NULL when flushing or
 * swapping kernels) go to a CPU backend of the same depth, after the
 * frames they depend on; then with `cur` the call's result (if the stream
 * owes one now) goes to out, and when flushing (out not NULL) the oldest
 * pending frame (*got). */
static cf_status front_switch(cf_engine *e, const cf_frame *cur,
                              const cf_frame *out, int *got)
{
  struct cf_video_front *f = e->vfront;
  char reason[256];
  snprintf(reason, sizeof reason, "%s", cf_last_error());
  unsigned long long from = f->delivered, end = f->n + (cur != NULL);
  /* the frames the engine holds for the next frame, and those each
   * undelivered one depends on */
  unsigned held = f->seen;
  if (cur) {
    unsigned t1 = f->kern[f->nkern - 1]->t - 1;
    held = held + 1 < t1 ? held + 1 : t1;
  }
  unsigned long long start = end - held;
  for (unsigned long long i = from; i < end; i++)
    if (i - front_meta(f, i).used < start)
      start = i - front_meta(f, i).used;
  cf_video_config cfg = f->cfg;
  cfg.backend = CF_BACKEND_CPU;
  cfg.pipeline_depth = f->depth;
  cf_video_out o = front_meta(f, start).o;
  cfg.scale = o.scale;
  cfg.bias = o.bias;
  cfg.absolute = o.absolute;
  void *impl = NULL;
  const cf_video_ops *ops = NULL;
  const cf_kernel2d *k = front_meta(f, start).k;
  cf_status s = cf_cpu_video_new(&cfg, k, CF_FFT_QUICK, &impl, &ops);
  if (s == CF_OK && f->base) {
    cf_frame b = tight_at(f, f->base);
    if ((s = ops->set_base(impl, &b)) != CF_OK)
      ops->destroy(impl);
  }
  if (s != CF_OK)
    return s;
  uint8_t *scratch = malloc(f->frame_bytes);
  if (!scratch) {
    ops->destroy(impl);
    return cf_fail(CF_E_NOMEM, "video engine: out of memory switching to "
                   "the CPU");
  }
  cf_frame sf = tight_at(f, scratch);
  for (unsigned long long i = start; s == CF_OK && i < end; i++) {
    front_frame m = front_meta(f, i);
    if (m.reset && i > start)
      ops->reset(impl);
    if (m.k != k)
      s = ops->set_kernel(impl, k = m.k);
    if (!cf_video_out_same(&m.o, &o)) {
      o = m.o;
      ops->set_output(impl, &o);
    }
    cf_frame in = i == f->n ? *cur : tight_at(f, hist_frame(f, i));
    if (s == CF_OK)
      s = ops->process(impl, &in, i == f->n ? out : &sf);
    if (s == CF_OK && i + 1 == from) /* the outputs before it go */
      for (int any = 1; s == CF_OK && any;)
        s = ops->flush(impl, &sf, &any);
  }
  free(scratch);
  if (!cur) { /* what came after the last frame, for the next one */
    if (s == CF_OK && f->reset_pending && end > start)
      ops->reset(impl);
    if (s == CF_OK && k != f->kern[f->nkern - 1])
      s = ops->set_kernel(impl, f->kern[f->nkern - 1]);
    if (s == CF_OK && !cf_video_out_same(&f->out, &o))
      ops->set_output(impl, &f->out);
    if (s == CF_OK && out)
      s = ops->flush(impl, out, got);
  }
  if (s != CF_OK) {
    ops->destroy(impl);
    return s;
  }
  pthread_mutex_lock(&e->impl_lock); /* a prepare_swap2d may build on it */
  e->vops->destroy(e->impl);
  e->impl = impl;
  e->vops = ops;
  e->backend = CF_BACKEND_CPU;
  pthread_mutex_unlock(&e->impl_lock);
  front_forget(f);
  snprintf(e->fallback, sizeof e->fallback, "%s", reason);
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_new_video(const cf_video_config *cfg,
                                        const cf_kernel2d *k, cf_engine **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "video engine: out is NULL");
  *out = NULL;
  cf_status s = check_config(cfg);
  if (s == CF_OK)
    s = check_kernel2d(k);
  cf_backend backend = CF_BACKEND_CPU;
  if (s == CF_OK)
    s = cf_engine_pick_backend(cfg->backend, cfg->device_id, &backend);
  if (s != CF_OK)
    return s;
  cf_engine *e = calloc(1, sizeof *e);
  if (!e)
    return cf_fail(CF_E_NOMEM, "video engine: out of memory");
  e->id = cf_engine_new_id();
  /* guards e->impl against a switch to the CPU while prepare_swap2d
   * builds on it in another thread */
  if (pthread_mutex_init(&e->impl_lock, NULL) != 0) {
    free(e);
    return cf_fail(CF_E_NOMEM, "video engine: cannot make a mutex");
  }
  e->cin = e->cout = cf_format_desc_get(cfg->format)->ncomp;
  s = CF_E_UNAVAILABLE;
  cf_fake_fault fail_at;
  if (cfg->backend == CF_BACKEND_AUTO && cf_fake_device(&fail_at)) {
    backend = CF_BACKEND_CUDA; /* a test's stand-in for the device */
    s = cf_fake_video_new(cfg, k, fail_at, &e->impl, &e->vops);
  } else if (backend == CF_BACKEND_CUDA) {
    s = cf_cuda_video_new(cfg, k, &e->impl, &e->vops);
    /* auto takes the CPU where the CUDA path cannot serve this stream */
    if (s != CF_OK && cfg->backend == CF_BACKEND_AUTO)
      backend = CF_BACKEND_CPU;
  }
  if (backend == CF_BACKEND_CPU)
    s = cf_cpu_video_new(cfg, k, CF_FFT_MEASURE, &e->impl, &e->vops);
  e->backend = backend;
  e->requested = cfg->backend;
  if (s == CF_OK && !(e->vfront = calloc(1, sizeof *e->vfront)))
    s = cf_fail(CF_E_NOMEM, "video engine: out of memory");
  if (s == CF_OK) {
    struct cf_video_front *f = e->vfront;
    f->cfg = *cfg;
    f->format = cfg->format;
    f->out = (cf_video_out){cfg->scale, cfg->bias, cfg->absolute};
    f->depth = (unsigned)e->vops->latency(e->impl);
    f->frame_bytes = cf_frame_layout(cfg->format, cfg->width, cfg->height,
                                     NULL, NULL);
    e->started = backend;
    if (backend == CF_BACKEND_CPU)
      f->bands = cf_cpu_video_bands(cfg, k);
    s = front_prepare(e, k, NULL);
  }
  if (s != CF_OK) {
    if (e->vops)
      cf_video_front_free(e);
    else
      pthread_mutex_destroy(&e->impl_lock);
    free(e);
    return s;
  }
  *out = e;
  return CF_OK;
}

void cf_video_front_free(cf_engine *e)
{
  if (e->impl)
    e->vops->destroy(e->impl);
  e->impl = NULL;
  if (e->vfront) {
    front_forget(e->vfront);
    free(e->vfront->base);
    free(e->vfront);
    e->vfront = NULL;
  }
  pthread_mutex_destroy(&e->impl_lock);
}

size_t cf_video_latency(const cf_engine *e)
{
  return e->vops->latency(e->impl);
}

void cf_video_reset(cf_engine *e)
{
  e->vops->reset(e->impl);
  if (front_watching(e)) {
    e->vfront->seen = 0;
    e->vfront->reset_pending = 1;
  }
}

/* backend=auto keeps host copies to go on on the CPU: frames in device
 * memory are for backend cuda only (memory.h). */
static cf_status front_host_frame(const struct cf_video_front *f,
                                  const cf_frame *fr, const char *what)
{
  unsigned planes = cf_format_desc_get(f->cfg.format)->planes;
  for (unsigned p = 0; p < planes; p++)
    if (cf_cuda_device_memory(f->cfg.device_id, fr->data[p]))
      return cf_fail(CF_E_INVALID,
                     "process_frame: the %s frame is in device "
                     "memory, which needs backend cuda (backend auto keeps "
                     "host copies to fall back to the CPU)",
                     what);
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_process_frame(cf_engine *e, const cf_frame *in,
                                            const cf_frame *out)
{
  CF_NEED(e, "process_frame", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "process_frame: this is an audio engine");
  if (!in || !out)
    return cf_fail(CF_E_INVALID, "process_frame: %s frame is NULL",
                   in ? "output" : "input");
  /* a refused frame (CF_E_INVALID: nothing written, the state as it
   * was) is no first frame: set_history_frame stays open after it */
  if (!front_watching(e)) {
    cf_status s = e->vops->process(e->impl, in, out);
    if (s != CF_E_INVALID)
      e->vfront->begun = 1;
    return s;
  }
  struct cf_video_front *f = e->vfront;
  cf_status s = cf_video_check_frames(&f->cfg, in, out);
  if (s == CF_OK)
    s = front_host_frame(f, in, "input");
  if (s == CF_OK)
    s = front_host_frame(f, out, "output");
  if (s != CF_OK)
    return s;
  f->begun = 1;
  s = e->vops->process(e->impl, in, out);
  if (s == CF_OK) {
    front_frame m = front_meta(f, f->n);
    if (f->hcap) {
      cf_frame h = tight_at(f, hist_frame(f, f->n));
      cf_video_copy_frame(&f->cfg, in, &h);
      f->meta[f->n % f->hcap] = m;
    }
    f->seen = f->seen + 1 < m.k->t - 1 ? f->seen + 1 : m.k->t - 1;
    f->reset_pending = 0;
    if (++f->n - f->delivered > f->depth)
      f->delivered++;
  }
  if (!cf_device_failure(s))
    return s;
  int got = 0;
  return front_switch(e, in, out, &got);
}

CF_PUBLIC cf_status cf_engine_flush_frame(cf_engine *e, const cf_frame *out,
                                          int *got)
{
  if (!got)
    return cf_fail(CF_E_INVALID, "flush_frame: got is NULL");
  *got = 0;
  CF_NEED(e, "flush_frame", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "flush_frame: this is an audio engine");
  if (!out)
    return cf_fail(CF_E_INVALID, "flush_frame: output frame is NULL");
  cf_status s =
      front_watching(e) ? front_host_frame(e->vfront, out, "output") : CF_OK;
  if (s != CF_OK)
    return s;
  s = e->vops->flush(e->impl, out, got);
  if (front_watching(e) && s == CF_OK && *got)
    e->vfront->delivered++;
  if (!front_watching(e) || !cf_device_failure(s))
    return s;
  return front_switch(e, NULL, out, got);
}

CF_PUBLIC cf_status cf_engine_set_kernel2d(cf_engine *e, const cf_kernel2d *k)
{
  CF_NEED(e, "set_kernel2d", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "set_kernel2d: this is an audio engine");
  cf_status s = check_kernel2d(k);
  if (s != CF_OK || !front_watching(e))
    return s != CF_OK ? s : e->vops->set_kernel(e->impl, k);
  /* The copy first: once the device has swapped, a switch must know. */
  struct cf_video_front *f = e->vfront;
  if ((s = front_prepare(e, k, NULL)) != CF_OK)
    return s;
  if ((s = e->vops->set_kernel(e->impl, k)) == CF_OK)
    return CF_OK;
  cf_kernel2d_free(f->kern[--f->nkern]); /* the device did not swap */
  if (!cf_device_failure(s) || (s = front_switch(e, NULL, NULL, NULL)) !=
                                   CF_OK)
    return s;
  return e->vops->set_kernel(e->impl, k);
}

CF_PUBLIC cf_status cf_engine_set_history_frame(cf_engine *e,
                                               const cf_frame *f)
{
  CF_NEED(e, "set_history_frame", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "set_history_frame: this is an audio engine");
  struct cf_video_front *fr = e->vfront;
  if (fr->begun)
    return cf_fail(CF_E_STATE, "set_history_frame: the engine has had "
                   "frames; set it before the first");
  uint8_t *copy = NULL;
  cf_frame t;
  if (f) {
    cf_video_config now = fr->cfg; /* in the frames' format now */
    now.format = fr->format;
    cf_status s = cf_video_check_frame(&now, f, "history");
    if (s != CF_OK)
      return s;
    if (!(copy = malloc(fr->frame_bytes)))
      return cf_fail(CF_E_NOMEM, "set_history_frame: out of memory");
    t = tight_at(fr, copy);
    cf_video_copy_frame(&now, f, &t);
    if (fr->cfg.format == CF_PIX_GRAY32F) /* a NaN would stay for good */
      for (size_t i = 0; i < fr->frame_bytes / sizeof(float); i++) {
        float x;
        memcpy(&x, copy + i * sizeof x, sizeof x);
        if (!isfinite(x)) {
          free(copy);
          return cf_fail(CF_E_INVALID, "set_history_frame: sample %zu "
                         "(row %zu) is %g, not a finite number",
                         i % fr->cfg.width, i / fr->cfg.width, (double)x);
        }
      }
  }
  cf_status s = e->vops->set_base(e->impl, copy ? &t : NULL);
  if (s != CF_OK && front_watching(e) && cf_device_failure(s)) {
    /* backend=auto: the device could not take it (its copy of the frame
     * not allocated): the CPU, which takes it from the front */
    uint8_t *old = fr->base;
    fr->base = copy;
    if ((s = front_switch(e, NULL, NULL, NULL)) == CF_OK) {
      free(old);
      copy = NULL; /* fr->base, freed below: the CPU is for good */
    } else {
      fr->base = old;
    }
  }
  if (s != CF_OK) {
    free(copy);
    return s;
  }
  /* the front's copy serves only a switch from the device to the CPU
   * (front_switch); the backend keeps its own */
  free(fr->base);
  fr->base = front_watching(e) ? copy : NULL;
  if (!fr->base)
    free(copy);
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_set_history_black(cf_engine *e,
                                               int full_range)
{
  CF_NEED(e, "set_history_black", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "set_history_black: this is an audio engine");
  const struct cf_video_front *fr = e->vfront;
  const cf_format_desc *d = cf_format_desc_get(fr->format);
  /* RGB and gray: zeros; YUV: 8-bit planes Y, then U, V */
  uint8_t *b = calloc(1, fr->frame_bytes);
  if (!b)
    return cf_fail(CF_E_NOMEM, "set_history_black: out of memory");
  cf_frame t = tight_at(fr, b);
  for (unsigned p = 0; d->planes > 1 && p < d->planes; p++) {
    size_t n = (size_t)cf_sub_w(fr->cfg.width, d->plane_sub[p]) *
               d->plane_bpp[p] *
               cf_sub_h(fr->cfg.height, d->plane_sub[p]);
    memset(t.data[p], p ? 128 : full_range ? 0 : 16, n);
  }
  cf_status s = cf_engine_set_history_frame(e, &t);
  free(b);
  return s;
}

CF_PUBLIC cf_status cf_engine_set_pixel_format(cf_engine *e,
                                               cf_pixel_format format)
{
  CF_NEED(e, "set_pixel_format", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "set_pixel_format: this is an audio engine");
  struct cf_video_front *fr = e->vfront;
  if (format == fr->format)
    return CF_OK;
  if (!cf_format_same_grids(fr->format, format))
    return cf_fail(CF_E_INVALID,
                   "set_pixel_format: %s frames cannot change "
                   "to %s (%s): only I420 and NV12, the same planes laid "
                   "out otherwise, change into each other; build a new "
                   "engine",
                   cf_pixel_format_name(fr->format),
                   cf_pixel_format_name(format),
                   cf_format_desc_get(format) ? "other components or grids"
                                              : "an unknown format");
  /* the device's history (and the host copies a switch to the CPU
   * replays) are frames' bytes in their layout */
  if (front_watching(e) || !e->vops->set_format)
    return cf_fail(CF_E_UNAVAILABLE,
                   "set_pixel_format: the %s backend "
                   "keeps its history as frames of %s; build a new engine "
                   "for %s (the history starts anew)",
                   cf_backend_name(e->backend),
                   cf_pixel_format_name(fr->format),
                   cf_pixel_format_name(format));
  cf_status s = e->vops->set_format(e->impl, format);
  if (s == CF_OK)
    fr->format = format;
  return s;
}

CF_PUBLIC cf_status cf_engine_set_output2d(cf_engine *e, float scale,
                                           float bias, int absolute)
{
  CF_NEED(e, "set_output2d", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "set_output2d: this is an audio engine");
  if (!isfinite(scale) || !isfinite(bias))
    return cf_fail(CF_E_INVALID, "set_output2d: %s %g is not a finite number",
                   isfinite(scale) ? "bias" : "scale",
                   (double)(isfinite(scale) ? bias : scale));
  cf_video_out o = {scale, bias, absolute != 0};
  e->vops->set_output(e->impl, &o);
  e->vfront->out = o; /* for the frames a switch to the CPU replays */
  return CF_OK;
}

/* ---- kernel swaps built ahead (video.h) ---- */

/* The kernels a prepared swap can take from the fallback's record */
#define PREP2D_DEAD 8

struct cf_swap_prep2d {
  unsigned long long engine; /* the id of the engine it was made on */
  cf_kernel2d *k;   /* for the plain swap; with backend auto on the device,
                       the fallback's record takes it (then NULL) */
  void *cuda;       /* the CUDA backend's kernel state, or NULL */
  cf_cpu_built *cpu; /* the CPU backend's, or NULL */
  const void *impl; /* the engine it was built for */
  int used;         /* set_prepared2d ran */
  cf_kernel2d *dead[PREP2D_DEAD]; /* the record's, dropped at the swap */
  unsigned ndead;
  /* with backend auto on the device, for a kernel that lengthens the
   * fallback's history: the new history (hist_cap frames), then the old */
  uint8_t *hist;
  front_frame *meta;
  unsigned hist_cap;
};

CF_PUBLIC void cf_swap_prep2d_free(cf_swap_prep2d *p)
{
  if (!p)
    return;
  cf_cuda_video_free_prepared(p->cuda);
  cf_cpu_video_free_built(p->cpu);
  cf_kernel2d_free(p->k);
  for (unsigned i = 0; i < p->ndead; i++)
    cf_kernel2d_free(p->dead[i]);
  free(p->hist);
  free(p->meta);
  free(p);
}

CF_PUBLIC cf_status cf_engine_prepare_swap2d(const cf_engine *e,
                                             const cf_kernel2d *k,
                                             cf_swap_prep2d **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "prepare_swap2d: NULL out");
  *out = NULL;
  CF_NEED(e, "prepare_swap2d", "engine");
  if (!e->vfront)
    return cf_fail(CF_E_STATE, "prepare_swap2d: this is an audio engine");
  cf_status s = check_kernel2d(k);
  if (s != CF_OK)
    return s;
  cf_swap_prep2d *p = calloc(1, sizeof *p);
  if (!p)
    return cf_fail(CF_E_NOMEM, "prepare_swap2d: out of memory");
  p->engine = e->id;
  if ((s = cf_kernel2d_copy(k, &p->k)) != CF_OK) {
    free(p);
    return s;
  }
  /* the CPU's plan, or the one a switch from the device would use */
  s = cf_engine_prepare_kernel2d(e, k);
  if (s == CF_OK && e->started != CF_BACKEND_CUDA)
    /* The CPU's kernel state (plan, spectra, scratch, border maps, the
     * history rings of a longer kernel), made here and kept for
     * set_prepared2d, which then makes, plans and frees nothing in the
     * engine's thread (it made it all again there after a trial here:
     * a 255x255 kernel on 1080p stopped the stream for 35-75 ms, an
     * 1100x1100 one for 165-320 ms: bench/results/
     * swap-prepared-cpu-vm-2026-12-02.md, QA); made where
     * the caller can still refuse a kernel whose memory cannot be had
     * (cudaconvolve's setter, as cudafir's refuses an audio kernel that
     * does not fit) */
    s = cf_cpu_video_build(&e->vfront->cfg, e->vfront->bands, k, &p->cpu);
  if (s == CF_OK && e->started == CF_BACKEND_CUDA) {
    /* The device's kernel state, built here; under impl_lock, as a switch
     * to the CPU in the engine's thread destroys the CUDA impl. A device
     * failure leaves the swap to set_prepared2d's plain one (which falls
     * back to the CPU with backend auto). */
    pthread_mutex_t *lock = (pthread_mutex_t *)&e->impl_lock; /* mutable */
    pthread_mutex_lock(lock);
    if (e->backend == CF_BACKEND_CUDA && cf_cuda_video_is(e->vops)) {
      p->impl = e->impl;
      s = cf_cuda_video_prepare(e->impl, k, &p->cuda);
      if (cf_device_failure(s))
        s = CF_OK;
    }
    pthread_mutex_unlock(lock);
    /* A longer history for the CPU fallback, made here: the engine's
     * thread may change its length meanwhile only by a swap, which the
     * contract rules out, or drop it by a switch to the CPU (then this
     * one goes unused). */
    const struct cf_video_front *f = e->vfront;
    unsigned cap = front_cap(f, k);
    if (s == CF_OK && e->requested == CF_BACKEND_AUTO && p->cuda &&
        cap > __atomic_load_n(&f->hcap, __ATOMIC_RELAXED)) {
      p->hist = malloc((size_t)cap * f->frame_bytes);
      p->meta = calloc(cap, sizeof *p->meta);
      p->hist_cap = cap;
      if (!p->hist || !p->meta)
        s = cf_fail(CF_E_NOMEM, "prepare_swap2d: out of memory for the CPU "
                    "fallback history (%u frames)", cap);
    }
  }
  if (s != CF_OK) {
    cf_swap_prep2d_free(p);
    return s;
  }
  *out = p;
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_set_prepared2d(cf_engine *e, cf_swap_prep2d *p)
{
  CF_NEED(e, "set_prepared2d", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "set_prepared2d: this is an audio engine");
  if (!p)
    return cf_fail(CF_E_INVALID, "set_prepared2d: NULL swap");
  if (p->used)
    return cf_fail(CF_E_INVALID, "set_prepared2d: this swap was made");
  p->used = 1;
  if (p->cuda && p->engine == e->id && p->impl == e->impl &&
      e->backend == CF_BACKEND_CUDA) {
    /* with backend auto, the kernel's record first, as in set_kernel2d:
     * p's kernel goes into it, and the kernels it drops into p (nothing
     * allocated or freed here while the history is long enough) */
    struct cf_video_front *f = e->vfront;
    int watched = front_watching(e);
    front_give g = {&p->k, p->dead, &p->ndead, PREP2D_DEAD,
                    &p->hist, &p->meta, p->hist_cap};
    cf_status s = watched ? front_prepare(e, p->k, &g) : CF_OK;
    if (s != CF_OK)
      return s;
    if ((s = cf_cuda_video_set_prepared(e->impl, p->cuda)) == CF_OK)
      return CF_OK; /* p->cuda holds the kernel state retired */
    if (watched && !p->k)
      p->k = f->kern[--f->nkern]; /* the device did not swap */
  }
  if (p->cpu && p->engine == e->id && e->backend == CF_BACKEND_CPU &&
      !front_watching(e)) {
    /* the state it retires goes into p->cpu (CF_E_STATE: built for
     * another shape of engine: the plain swap) */
    cf_status s = cf_cpu_video_set_built(e->impl, e->vops, p->cpu);
    if (s != CF_E_STATE)
      return s;
  }
  return cf_engine_set_kernel2d(e, p->k);
}

CF_PUBLIC cf_status cf_engine_take_retired2d(cf_engine *e, cf_swap_prep2d **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "take_retired2d: NULL out");
  *out = NULL;
  CF_NEED(e, "take_retired2d", "engine");
  if (!e->vops)
    return cf_fail(CF_E_STATE, "take_retired2d: this is an audio engine");
  if (e->backend != CF_BACKEND_CPU)
    return CF_OK;
  cf_cpu_built *b = NULL;
  cf_status s = cf_cpu_video_take_spent(e->impl, e->vops, &b);
  if (s != CF_OK || !b)
    return s;
  cf_swap_prep2d *p = calloc(1, sizeof *p);
  if (!p) {
    cf_cpu_video_free_built(b); /* given back here then */
    return cf_fail(CF_E_NOMEM, "take_retired2d: out of memory");
  }
  p->engine = e->id;
  p->used = 1; /* no kernel to set */
  p->cpu = b;
  *out = p;
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_prepare_kernel2d(const cf_engine *e,
                                               const cf_kernel2d *k)
{
  CF_NEED(e, "prepare_kernel2d", "engine");
  if (!e->vfront)
    return cf_fail(CF_E_STATE, "prepare_kernel2d: this is an audio engine");
  cf_status s = check_kernel2d(k);
  if (s != CF_OK ||
      (e->started == CF_BACKEND_CUDA && e->requested != CF_BACKEND_AUTO))
    return s; /* CUDA for good: no CPU plan to make */
  /* the CPU's plan, or the one a switch from the device would make (its
   * bands from the kernel it starts with: this one, or one before) */
  return cf_cpu_video_prepare(&e->vfront->cfg, e->vfront->bands, k);
}
