/* The engine front: validates configurations and kernels against the
 * stream, picks the backend, and forwards to it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "kernel_internal.h"
#include "video_internal.h"

/* backend=auto on CUDA: process() goes to the device in pieces of at most
 * this many frames, each first kept in the fallback ring. */
#define FB_PIECE ((size_t)1 << 16)
/* Largest CPU fallback history allocated (fb_prepare). */
#define FB_MAX_BYTES ((uint64_t)1 << 40)

CF_PUBLIC void cf_audio_config_init(cf_audio_config *cfg)
{
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->channels = 1;
  cfg->block_size = 1024;
  cfg->backend = CF_BACKEND_AUTO;
  cfg->algorithm = CF_ALGO_AUTO;
  cfg->pipeline_depth = 0;
  /* 2^18 - 2^14: with the CPU path's step and a latency of up to 8192
   * frames (block 8192, or 4096 at depth 1) its history ring is 2^18
   * frames, 1 MiB a channel; 262144 itself, plus those, made it 2^19
   * whatever the kernel (QA: 586 MB for 256 channels of 2 taps) */
  cfg->swap_history = 245760;
}

/* Output channel count of kernel k on a stream of `channels`, or 0 with an
 * error recorded when they do not fit. */
static unsigned fit_outputs(const cf_kernel *k, unsigned channels)
{
  switch (k->routing) {
  case CF_ROUTING_SHARED:
    return channels;
  case CF_ROUTING_PER_CHANNEL:
    if (k->inputs != channels) {
      cf_fail(CF_E_INVALID, "per-channel kernel set has %u kernels but the "
              "stream has %u channels", k->inputs, channels);
      return 0;
    }
    return channels;
  case CF_ROUTING_MATRIX:
    if (k->inputs != channels) {
      cf_fail(CF_E_INVALID, "matrix kernel set has %u inputs but the stream "
              "has %u channels", k->inputs, channels);
      return 0;
    }
    return k->outputs;
  }
  cf_fail(CF_E_INVALID, "kernel set: unknown routing");
  return 0;
}

static cf_status check_kernel(const cf_kernel *k)
{
  if (!k)
    return cf_fail(CF_E_INVALID, "kernel set is NULL");
  for (unsigned i = 0; i < k->count; i++) {
    if (k->len[i] == 0 && k->routing != CF_ROUTING_MATRIX)
      return cf_fail(CF_E_INVALID, "kernel %u has no taps", i);
    /* cf_kernel_set and cf_kernel_scale keep taps finite; this catches a
     * set changed behind their back (one pass, far cheaper than the
     * spectra a new bank computes) */
    for (size_t j = 0; j < k->len[i]; j++)
      if (!isfinite(k->taps[i][j]))
        return cf_fail(CF_E_INVALID, "kernel %u: tap %zu is %s", i, j,
                       isnan(k->taps[i][j]) ? "NaN" : "infinite");
  }
  if (cf_kernel_max_len(k) == 0)
    return cf_fail(CF_E_INVALID, "every kernel of the set is empty");
  return CF_OK;
}

cf_status cf_engine_pick_backend(cf_backend requested, int device_id,
                                 cf_backend *out)
{
  const char *why = NULL;
  switch (requested) {
  case CF_BACKEND_CUDA:
    if (cf_cuda_usable(device_id, &why) != CF_OK)
      return cf_fail(CF_E_UNAVAILABLE, "backend cuda is not available: %s",
                     why);
    *out = CF_BACKEND_CUDA;
    return CF_OK;
  case CF_BACKEND_AUTO:
    *out = cf_cuda_usable(device_id, NULL) == CF_OK ? CF_BACKEND_CUDA
                                                     : CF_BACKEND_CPU;
    return CF_OK;
  case CF_BACKEND_CPU:
    *out = CF_BACKEND_CPU;
    return CF_OK;
  }
  return cf_fail(CF_E_INVALID, "engine: unknown backend %d", (int)requested);
}

/* ---- backend=auto: switching from CUDA to the CPU mid-stream ----------
 * While auto runs on CUDA, the front keeps on the host what a CPU backend
 * needs to take over at any call: a ring of the last input frames and the
 * stages, the kernel sets the coming outputs may still depend on (the one
 * in use, or the one before it while a crossfade runs, and every swap
 * since, with its swap point and crossfade). When the device fails, a
 * CPU backend of the same latency and algorithm (at latency 0 an FFT plan
 * has a direct head: a long kernel is not done directly) is built with
 * the oldest stage, fed the input from far
 * enough back (its output discarded) with the later swaps made at their
 * points, and it processes the failed piece: no sample is lost or
 * repeated, and a crossfade running at that moment goes on. */

static int fb_active(const cf_engine *e)
{
  return e->requested == CF_BACKEND_AUTO && e->backend == CF_BACKEND_CUDA &&
         e->fb;
}

/* ---- pipeline_depth on a backend that does not pipeline ----------------
 * The CPU's output goes out through a ring of `delay` frames, so the
 * latency is the same wherever the engine runs (engine.h). */

/* Frames pipeline_depth adds to the latency. */
static size_t depth_frames(const cf_audio_config *cfg)
{
  return (size_t)cfg->pipeline_depth * cfg->block_size;
}

/* n frames the backend wrote to out swap with the ring's oldest. */
static void delay_run(cf_engine *e, float *out, size_t n)
{
  size_t c = e->cout;
  while (n) {
    size_t m = e->delay - e->dpos < n ? e->delay - e->dpos : n;
    float *r = e->dring + e->dpos * c;
    for (size_t i = 0; i < m * c; i++) {
      float t = r[i];
      r[i] = out[i];
      out[i] = t;
    }
    out += m * c;
    n -= m;
    e->dpos = (e->dpos + m) % e->delay;
  }
}

/* The ring's frames, oldest first, to out; then it holds silence. */
static void delay_flush(cf_engine *e, float *out)
{
  size_t c = e->cout, a = e->delay - e->dpos;
  memcpy(out, e->dring + e->dpos * c, a * c * sizeof(float));
  memcpy(out + a * c, e->dring, e->dpos * c * sizeof(float));
  memset(e->dring, 0, e->delay * c * sizeof(float));
  e->dpos = 0;
}

static void delay_clear(cf_engine *e)
{
  if (e->delay)
    memset(e->dring, 0, e->delay * e->cout * sizeof(float));
  e->dpos = 0;
}

/* The engine's latency: the backend's and the front's delay. */
static size_t total_latency(const cf_engine *e)
{
  return e->ops->latency(e->impl) + e->delay;
}

/* The oldest stage the outputs from y index y on depend on, input frame
 * `now` (>= y) reached. A stage at `now` or later still waits for its
 * point: a swap asked for next may replace it (cf_swaps_push), so it is
 * no stage to start from. Stages at one point are swaps a later one
 * replaced while they waited (engine.h; the backends drop them: here they
 * stay, and a switch replays them to the CPU, which drops them the same
 * way): a crossfade's old side is the stage before the group. */
static unsigned fb_first_stage(const cf_engine *e, unsigned long long y,
                               unsigned long long now)
{
  unsigned k = 0;
  while (k + 1 < e->nstage && e->stage[k + 1].s <= y &&
         e->stage[k + 1].s < now)
    k++;
  if (!k || y >= e->stage[k].s + e->stage[k].x)
    return k;
  unsigned j = k - 1;
  while (j && e->stage[j].s == e->stage[k].s)
    j--;
  return j;
}

/* Where a swap asked for at input frame t takes effect (cf_swaps_push,
 * on the stages): past the stages still waiting for their point, at the
 * end of the crossfade before them if that is later than t. */
static unsigned long long fb_point(const cf_engine *e, unsigned long long t)
{
  if (!e->nstage)
    return t;
  unsigned j = e->nstage - 1;
  while (j && e->stage[j].s >= t)
    j--;
  unsigned long long end = e->stage[j].s + e->stage[j].x;
  return end > t ? end : t;
}

/* Kernels of dropped stages, to be freed by whoever holds the list (a
 * prepared swap's: not in the engine's thread), where it has room. */
typedef struct fb_dead {
  cf_kernel **k;
  unsigned *n, cap;
} fb_dead;

/* Drop the stages before `keep`: their kernels into dead where it has
 * room (dead may be NULL), else freed. */
static void fb_drop(cf_engine *e, unsigned keep, const fb_dead *dead)
{
  if (!keep)
    return;
  for (unsigned k = 0; k < keep; k++)
    if (dead && *dead->n < dead->cap)
      dead->k[(*dead->n)++] = e->stage[k].k;
    else
      cf_kernel_free(e->stage[k].k);
  memmove(e->stage, e->stage + keep, (e->nstage - keep) * sizeof *e->stage);
  e->nstage -= keep;
}

/* A swap to k with crossfade x now (at creation: the first kernel): add
 * its stage, and (re)size the ring to hold what a switch may replay,
 * keeping its contents. A swap sees up to swap_history frames of the past
 * (engine.h), so the ring holds that much from the start. The stage holds
 * a copy of k, or `owned` itself (k NULL: a prepared swap's copy, made in
 * its thread); the stages dropped go to dead (may be NULL). On failure
 * nothing changed but the dropped stages, and owned is still the
 * caller's. Where a prepared swap's kernel fits the ring and the stage
 * array's room (CF_SWAPS_START stages from the start, doubled when a swap
 * needs more), nothing is allocated or freed here. */
static cf_status fb_prepare(cf_engine *e, const cf_kernel *k, cf_kernel *owned,
                            size_t x, const fb_dead *dead)
{
  if (e->requested != CF_BACKEND_AUTO || e->backend != CF_BACKEND_CUDA)
    return CF_OK;
  size_t lat = total_latency(e);
  if (e->nstage) /* the stages no coming output depends on go */
    fb_drop(e, fb_first_stage(e, e->fb_t > lat ? e->fb_t - lat : 0, e->fb_t),
            dead);
  if (e->nstage + 1 > e->stage_cap) {
    unsigned cap = e->stage_cap ? 2 * e->stage_cap : CF_SWAPS_START;
    cf_fb_stage *st = realloc(e->stage, cap * sizeof *st);
    if (!st)
      return cf_fail(CF_E_NOMEM, "engine: out of memory");
    e->stage = st;
    e->stage_cap = cap;
  }
  cf_fb_stage *st = e->stage;
  cf_kernel *kc = owned;
  cf_status s = k ? cf_kernel_copy(k, &kc) : CF_OK;
  if (s != CF_OK)
    return s;
  st[e->nstage].k = kc;
  st[e->nstage].s = fb_point(e, e->fb_t);
  st[e->nstage++].x = x;
  size_t lmax = e->cfg.swap_history, xmax = 0, cap = 1;
  for (unsigned i = 0; i < e->nstage; i++) {
    if (cf_kernel_max_len(st[i].k) > lmax)
      lmax = cf_kernel_max_len(st[i].k);
    if (st[i].x > xmax)
      xmax = st[i].x;
  }
  /* every term is bounded (taps, crossfade, block, depth): no wrap */
  size_t need = lmax + xmax + lat + e->cfg.block_size + FB_PIECE;
  while (cap < need)
    cap <<= 1;
  if (!e->fb || cap > e->fb_mask + 1) {
    /* past FB_MAX_BYTES no machine has the memory (and sanitizers abort
     * on such a request rather than fail it) */
    float *fb = (uint64_t)cap * e->cin * sizeof *fb <= FB_MAX_BYTES
                    ? calloc(cap * e->cin, sizeof *fb)
                    : NULL;
    if (!fb) {
      e->nstage--; /* the swap is not made: no stage for it */
      if (k)
        cf_kernel_free(kc);
      return cf_fail(CF_E_NOMEM, "engine: out of memory for the CPU "
                     "fallback history (%zu frames, for a crossfade of %zu "
                     "and kernels of up to %zu)", cap, xmax, lmax);
    }
    if (e->fb) /* keep the frames already seen */
      for (size_t i = 0; i <= e->fb_mask && i < e->fb_t; i++) {
        unsigned long long t = e->fb_t - 1 - i;
        memcpy(fb + (t & (cap - 1)) * e->cin,
               e->fb + (t & e->fb_mask) * e->cin, e->cin * sizeof(float));
      }
    free(e->fb);
    e->fb = fb;
    e->fb_mask = cap - 1;
  }
  return CF_OK;
}

static void fb_record(cf_engine *e, const float *in, size_t n)
{
  for (size_t i = 0; i < n;) {
    size_t at = (size_t)(e->fb_t & e->fb_mask), m = e->fb_mask + 1 - at;
    if (m > n - i)
      m = n - i;
    memcpy(e->fb + at * e->cin, in + i * e->cin, m * e->cin * sizeof(float));
    e->fb_t += m;
    i += m;
  }
}

/* Input frames [t, t + m) from the ring to x. */
static void fb_gather(const cf_engine *e, unsigned long long t, size_t m,
                      float *x)
{
  for (size_t i = 0; i < m; i++)
    memcpy(x + i * e->cin, e->fb + ((t + i) & e->fb_mask) * e->cin,
           e->cin * sizeof(float));
}

/* A reset or drain: the history goes, and every swap completes. */
static void fb_clear(cf_engine *e)
{
  if (e->nstage) {
    fb_drop(e, e->nstage - 1, NULL);
    e->stage[0].s = 0;
    e->stage[0].x = 0;
  }
  e->fb_t = 0;
}

/* The device failed on the last `piece` frames recorded: continue on the
 * CPU, writing that piece's output to out (NULL: nothing to replay). */
static cf_status fb_switch(cf_engine *e, size_t piece, float *out,
                           cf_status why)
{
  char reason[256];
  snprintf(reason, sizeof reason, "%s", cf_last_error());
  size_t lat = total_latency(e);
  unsigned long long end = e->fb_t, from = end - piece;
  unsigned long long y0 = from > lat ? from - lat : 0;
  unsigned next = fb_first_stage(e, y0, end);
  cf_audio_config cfg = e->cfg;
  cfg.backend = CF_BACKEND_CPU;
  void *impl = NULL;
  const cf_backend_ops *ops = NULL;
  cf_status s = cf_cpu_fir_new(&cfg, e->stage[next].k, e->cout, CF_FFT_QUICK,
                               e->latency, &impl, &ops);
  if (s != CF_OK)
    return s;
  if (ops->latency(impl) > lat) {
    ops->destroy(impl);
    return cf_fail(why, "engine: the CUDA backend failed (%s) and the CPU "
                   "cannot take over at latency %zu", reason, lat);
  }
  /* The CPU's output for input frame c leaves at c + d (the front's
   * delay): to out for the failed piece, to the new ring from end on. */
  size_t d = lat - ops->latency(impl);
  float *ring = d ? calloc(d * e->cout, sizeof *ring) : NULL;
  if (d && !ring) {
    ops->destroy(impl);
    return cf_fail(CF_E_NOMEM, "engine: out of memory switching to the CPU");
  }
  if (piece)
    memset(out, 0, piece * e->cout * sizeof(float));
  /* Convolved from start on, every stage's output at y >= y0 is exact,
   * and the later swaps happen at their points; before that, the frames
   * a swap after the switch may prime from go into the history only. */
  size_t lmax = 0;
  for (unsigned k = next; k < e->nstage; k++)
    if (cf_kernel_max_len(e->stage[k].k) > lmax)
      lmax = cf_kernel_max_len(e->stage[k].k);
  unsigned long long start = y0 > lmax - 1 ? y0 - (lmax - 1) : 0;
  if (++next < e->nstage && e->stage[next].s < start)
    start = e->stage[next].s;
  size_t keep = (e->cfg.swap_history > lmax ? e->cfg.swap_history : lmax) +
                lat;
  unsigned long long t = end > keep ? end - keep : 0;
  size_t step = 4096;
  float *x = malloc(step * e->cin * sizeof(float));
  float *y = malloc(step * e->cout * sizeof(float));
  if (!x || !y) {
    free(x), free(y), free(ring);
    ops->destroy(impl);
    return cf_fail(CF_E_NOMEM, "engine: out of memory switching to the CPU");
  }
  for (; t < start;) {
    size_t m = start - t < step ? (size_t)(start - t) : step;
    fb_gather(e, t, m, x);
    cf_cpu_fir_preload(impl, x, m);
    t += m;
  }
  for (t = start; s == CF_OK;) {
    for (; s == CF_OK && next < e->nstage && e->stage[next].s == t; next++)
      s = ops->set_kernel(impl, e->stage[next].k, e->stage[next].x);
    if (t == end || s != CF_OK)
      break;
    size_t m = end - t < step ? (size_t)(end - t) : step;
    if (next < e->nstage && e->stage[next].s - t < m)
      m = (size_t)(e->stage[next].s - t);
    fb_gather(e, t, m, x);
    if ((s = ops->process(impl, x, y, m)) == CF_OK)
      for (size_t i = 0; i < m; i++) {
        unsigned long long o = t + i + d; /* its output time */
        float *dst = o < from  ? NULL
                     : o < end ? out + (size_t)(o - from) * e->cout
                               : ring + (size_t)(o - end) * e->cout;
        if (dst)
          memcpy(dst, y + i * e->cout, e->cout * sizeof(float));
      }
    t += m;
  }
  /* swaps still waiting for their point (at most the ones at the last
   * point): asked for now, the CPU puts them there too */
  for (; s == CF_OK && next < e->nstage; next++)
    s = ops->set_kernel(impl, e->stage[next].k, e->stage[next].x);
  free(x);
  free(y);
  if (s != CF_OK) {
    free(ring);
    ops->destroy(impl);
    return s;
  }
  /* not while another thread builds a swap on the CUDA impl */
  pthread_mutex_lock(&e->impl_lock);
  e->ops->destroy(e->impl);
  e->impl = impl;
  e->ops = ops;
  e->backend = CF_BACKEND_CPU;
  pthread_mutex_unlock(&e->impl_lock);
  free(e->fb);
  e->fb = NULL;
  free(e->dring);
  e->dring = ring;
  e->delay = d;
  e->dpos = 0;
  fb_drop(e, e->nstage, NULL);
  snprintf(e->fallback, sizeof e->fallback, "%s", reason);
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_new_audio(const cf_audio_config *cfg,
                                        const cf_kernel *kernel,
                                        cf_engine **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "engine: out is NULL");
  *out = NULL;
  if (!cfg)
    return cf_fail(CF_E_INVALID, "engine: configuration is NULL");
  if (cfg->channels == 0 || cfg->channels > CF_MAX_CHANNELS)
    return cf_fail(CF_E_INVALID, "engine: channels = %u, must be 1..%u",
                   cfg->channels, CF_MAX_CHANNELS);
  if (cfg->block_size == 0 || cfg->block_size > CF_AUDIO_MAX_BLOCK)
    return cf_fail(CF_E_INVALID, "engine: block_size = %u, must be 1..%u",
                   cfg->block_size, CF_AUDIO_MAX_BLOCK);
  if ((unsigned)cfg->algorithm > CF_ALGO_FFT_NONUNIFORM)
    return cf_fail(CF_E_INVALID, "engine: unknown algorithm %d",
                   (int)cfg->algorithm);
  if (cfg->pipeline_depth > CF_AUDIO_MAX_DEPTH)
    return cf_fail(CF_E_INVALID, "engine: pipeline_depth = %u, must be 0..%u",
                   cfg->pipeline_depth, CF_AUDIO_MAX_DEPTH);
  if (cfg->threads > 1u << 20) /* engine.h; the pool's limit */
    return cf_fail(CF_E_INVALID, "engine: threads = %u, must be 0..%u",
                   cfg->threads, 1u << 20);
  if (cfg->swap_history > CF_AUDIO_MAX_SWAP_HISTORY)
    return cf_fail(CF_E_INVALID, "engine: swap_history = %zu, must be "
                   "0..%zu (CF_AUDIO_MAX_SWAP_HISTORY)", cfg->swap_history,
                   CF_AUDIO_MAX_SWAP_HISTORY);
  cf_status s = check_kernel(kernel);
  if (s != CF_OK)
    return s;
  unsigned cout = fit_outputs(kernel, cfg->channels);
  if (!cout)
    return CF_E_INVALID;

  cf_backend backend = CF_BACKEND_CPU;
  if ((s = cf_engine_pick_backend(cfg->backend, cfg->device_id, &backend)) !=
      CF_OK)
    return s;

  cf_engine *e = calloc(1, sizeof *e);
  if (!e)
    return cf_fail(CF_E_NOMEM, "engine: out of memory");
  e->id = cf_engine_new_id();
  if (pthread_mutex_init(&e->impl_lock, NULL) != 0) {
    free(e);
    return cf_fail(CF_E_NOMEM, "engine: no mutex");
  }
  e->cin = cfg->channels;
  e->cout = cout;
  s = CF_E_UNAVAILABLE;
  cf_fake_fault fail_at;
  if (cfg->backend == CF_BACKEND_AUTO && cf_fake_device(&fail_at)) {
    backend = CF_BACKEND_CUDA; /* a test's stand-in for the device */
    s = cf_fake_fir_new(cfg, kernel, cout, fail_at, &e->impl, &e->ops);
  } else if (backend == CF_BACKEND_CUDA) {
    s = cf_cuda_fir_new(cfg, kernel, cout, &e->impl, &e->ops);
    /* auto takes the CPU where the CUDA path cannot serve this stream */
    if (s != CF_OK && cfg->backend == CF_BACKEND_AUTO)
      backend = CF_BACKEND_CPU;
  }
  if (backend == CF_BACKEND_CPU)
    s = cf_cpu_fir_new(cfg, kernel, cout, CF_FFT_MEASURE, CF_CPU_LATENCY_PLAN,
                       &e->impl, &e->ops);
  e->backend = e->started = backend;
  e->requested = cfg->backend;
  e->cfg = *cfg;
  if (s == CF_OK) {
    /* the CUDA backend pipelines across calls itself; elsewhere the
     * front delays */
    e->latency = e->ops->latency(e->impl);
    if (cf_cuda_fir_is(e->ops))
      e->latency -= depth_frames(cfg);
    else if ((e->delay = depth_frames(cfg)) &&
             !(e->dring = calloc(e->delay * cout, sizeof(float))))
      s = cf_fail(CF_E_NOMEM,
                  "engine: out of memory for a pipeline_depth delay of %zu "
                  "frames", e->delay);
    if (s != CF_OK)
      e->ops->destroy(e->impl);
  }
  if (s == CF_OK && (s = fb_prepare(e, kernel, NULL, 0, NULL)) != CF_OK)
    e->ops->destroy(e->impl);
  if (s != CF_OK) {
    free(e->dring);
    fb_drop(e, e->nstage, NULL);
    free(e->stage);
    free(e->fb);
    pthread_mutex_destroy(&e->impl_lock);
    free(e);
    return s;
  }
  *out = e;
  return CF_OK;
}

CF_PUBLIC void cf_engine_free(cf_engine *e)
{
  if (!e)
    return;
  if (e->vops) {
    cf_video_front_free(e);
  } else {
    e->ops->destroy(e->impl);
    pthread_mutex_destroy(&e->impl_lock);
  }
  fb_drop(e, e->nstage, NULL);
  free(e->stage);
  free(e->fb);
  free(e->dring);
  free(e);
}

/* The backend's process, then the front's delay. */
static cf_status backend_process(cf_engine *e, const float *in, float *out,
                                 size_t n)
{
  cf_status s = e->ops->process(e->impl, in, out, n);
  if (s == CF_OK && e->delay)
    delay_run(e, out, n);
  return s;
}

/* The backend's drain behind the front's delay: the ring's frames, then
 * the backend's tail. */
static cf_status drain_through(cf_engine *e, float *out, size_t capacity,
                               size_t *written)
{
  size_t d = e->delay, w = 0;
  cf_status s =
      e->ops->drain(e->impl, d ? out + d * e->cout : out, capacity - d, &w);
  if (s == CF_OK && d)
    delay_flush(e, out);
  *written = s == CF_OK ? w + d : 0;
  return s;
}

CF_PUBLIC cf_status cf_engine_process(cf_engine *e, const float *in,
                                      float *out, size_t frames)
{
  CF_NEED(e, "process", "engine");
  if (e->vops)
    return cf_fail(CF_E_STATE, "process: this is a video engine (use "
                   "cf_engine_process_frame)");
  if (frames == 0)
    return CF_OK;
  if (!in || !out)
    return cf_fail(CF_E_INVALID, "process: NULL buffer for %zu frames",
                   frames);
  if (in == out && e->cin != e->cout)
    return cf_fail(CF_E_INVALID, "process: in-place needs equal channel "
                   "counts (%u in, %u out)", e->cin, e->cout);
  unsigned widest = e->cin > e->cout ? e->cin : e->cout;
  if (frames > SIZE_MAX / sizeof(float) / widest)
    return cf_fail(CF_E_INVALID, "process: %zu frames of %u channels is "
                   "past the address space", frames, widest);
  /* the same buffer (in place) or apart: an output that starts inside
   * the input wrote over samples not read yet */
  const char *ib = (const char *)in, *ob = (const char *)out;
  size_t ni = frames * e->cin * sizeof(float);
  size_t no = frames * e->cout * sizeof(float);
  if (in != out && ib < ob + no && ob < ib + ni)
    return cf_fail(CF_E_INVALID, "process: the input and the output "
                   "overlap without being the same buffer");
  if (!fb_active(e))
    return backend_process(e, in, out, frames);
  while (frames) {
    size_t m = frames < FB_PIECE ? frames : FB_PIECE;
    fb_record(e, in, m);
    /* a switch writes the piece's output itself, delayed */
    cf_status s = backend_process(e, in, out, m);
    if (s != CF_OK &&
        (!cf_device_failure(s) || (s = fb_switch(e, m, out, s)) != CF_OK))
      return s;
    in += m * e->cin;
    out += m * e->cout;
    frames -= m;
    if (!fb_active(e) && frames)
      return backend_process(e, in, out, frames);
  }
  return CF_OK;
}

CF_PUBLIC size_t cf_engine_latency(const cf_engine *e)
{
  if (!e)
    return 0;
  return e->vops ? cf_video_latency(e) : total_latency(e);
}

CF_PUBLIC size_t cf_engine_tail(const cf_engine *e)
{
  if (!e)
    return 0;
  return e->vops ? 0 : e->ops->tail(e->impl) + e->delay;
}

CF_PUBLIC cf_status cf_engine_drain(cf_engine *e, float *out, size_t capacity,
                                    size_t *written)
{
  if (written)
    *written = 0;
  CF_NEED(e, "drain", "engine");
  if (e->vops)
    return cf_fail(CF_E_STATE, "drain: a video engine has no tail");
  size_t need = cf_engine_tail(e), w = 0;
  if (capacity < need)
    return cf_fail(CF_E_INVALID, "drain: the tail is %zu frames, the buffer "
                   "holds %zu", need, capacity);
  if (need && !out)
    return cf_fail(CF_E_INVALID, "drain: NULL buffer");
  cf_status s = drain_through(e, out, capacity, &w);
  if (s == CF_OK && written)
    *written = w;
  if (s != CF_OK && fb_active(e) && cf_device_failure(s) &&
      (s = fb_switch(e, 0, NULL, s)) == CF_OK) {
    /* The CPU took only the stages the tail depends on (the device may
     * still have held one that no longer counts): its tail may be shorter,
     * and past it the tail is zeros. */
    size_t got = cf_engine_tail(e);
    if (got > need) /* never: the device held every stage the CPU took */
      return cf_fail(CF_E_INTERNAL, "drain: the CPU taking over has a tail "
                     "of %zu frames, not %zu", got, need);
    if ((s = drain_through(e, out, capacity, &got)) == CF_OK) {
      if (got < need)
        memset(out + got * e->cout, 0,
               (need - got) * e->cout * sizeof(float));
      if (written)
        *written = need;
    }
  }
  if (s == CF_OK)
    fb_clear(e);
  __atomic_add_fetch(&e->resets, 1, __ATOMIC_RELEASE);
  return s;
}

CF_PUBLIC cf_status cf_engine_reset(cf_engine *e)
{
  CF_NEED(e, "reset", "engine");
  if (e->vops)
    cf_video_reset(e);
  else
    e->ops->reset(e->impl);
  delay_clear(e);
  fb_clear(e);
  __atomic_add_fetch(&e->resets, 1, __ATOMIC_RELEASE);
  return CF_OK;
}

/* A set an audio engine can swap to: the same output channels. `what`
 * names the call in messages. */
static cf_status check_crossfade(size_t crossfade, const char *what)
{
  if (crossfade > CF_AUDIO_MAX_CROSSFADE)
    return cf_fail(CF_E_INVALID, "%s: crossfade = %zu frames, must be "
                   "0..%zu (CF_AUDIO_MAX_CROSSFADE)", what, crossfade,
                   CF_AUDIO_MAX_CROSSFADE);
  return CF_OK;
}

static cf_status check_swap(const cf_engine *e, const cf_kernel *kernel,
                            const char *what)
{
  CF_NEED(e, what, "engine");
  if (e->vops)
    return cf_fail(CF_E_STATE, "%s: this is a video engine (use "
                   "cf_engine_set_kernel2d)", what);
  cf_status s = check_kernel(kernel);
  if (s != CF_OK)
    return s;
  unsigned cout = fit_outputs(kernel, e->cin);
  if (!cout)
    return CF_E_INVALID;
  if (cout != e->cout)
    return cf_fail(CF_E_INVALID, "%s: the new kernel set has %u outputs, "
                   "the stream has %u", what, cout, e->cout);
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_set_kernel(cf_engine *e, const cf_kernel *kernel,
                                         size_t crossfade)
{
  cf_status s = check_swap(e, kernel, "set_kernel");
  if (s == CF_OK)
    s = check_crossfade(crossfade, "set_kernel");
  if (s != CF_OK)
    return s;
  if (!fb_active(e))
    return e->ops->set_kernel(e->impl, kernel, crossfade);
  /* The stage first: once the device has swapped, a switch must know. */
  if ((s = fb_prepare(e, kernel, NULL, crossfade, NULL)) != CF_OK)
    return s;
  if ((s = e->ops->set_kernel(e->impl, kernel, crossfade)) == CF_OK)
    return CF_OK;
  cf_kernel_free(e->stage[--e->nstage].k); /* the device did not swap */
  if (!cf_device_failure(s) || (s = fb_switch(e, 0, NULL, s)) != CF_OK)
    return s;
  return e->ops->set_kernel(e->impl, kernel, crossfade);
}

CF_PUBLIC cf_status cf_engine_prepare_kernel(const cf_engine *e,
                                             const cf_kernel *kernel)
{
  cf_status s = check_swap(e, kernel, "prepare_kernel");
  if (s != CF_OK ||
      (e->started == CF_BACKEND_CUDA && e->requested != CF_BACKEND_AUTO))
    return s; /* CUDA for good: no CPU plan to make */
  /* the CPU plan the backend uses, or a switch from the device would
   * (the same algorithm at the device's latency) */
  return cf_cpu_fir_prepare(&e->cfg, e->cout, e->latency, e->cfg.algorithm,
                            kernel);
}

#define PREP_DEAD CF_SWAPS_START

unsigned long long cf_engine_new_id(void)
{
  static unsigned long long last;
  return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

struct cf_swap_prep {
  unsigned long long engine; /* the id of the engine it was made on */
  cf_kernel *k;       /* for a plain swap where the bank cannot serve */
  void *bank;         /* the CPU's bank primed to t0, the CUDA backend's
                         bank, or NULL */
  int cuda;           /* bank and dead are the CUDA backend's */
  const void *impl;   /* the backend it was built for */
  unsigned long long t0;
  unsigned resets;
  int used;           /* set_prepared ran */
  void *dead[PREP_DEAD]; /* banks the engine let go at set_prepared */
  unsigned ndead;
  /* backend auto on CUDA: the kernels of the CPU fallback's stages that
   * set_prepared dropped (k itself went into the new stage) */
  cf_kernel *dead_k[PREP_DEAD];
  unsigned ndead_k;
};

CF_PUBLIC void cf_swap_prep_free(cf_swap_prep *p)
{
  if (!p)
    return;
  if (p->cuda) {
    cf_cuda_fir_free_prepared(p->bank);
    for (unsigned i = 0; i < p->ndead; i++)
      cf_cuda_fir_free_prepared(p->dead[i]);
  } else {
    if (p->bank)
      cf_cpu_fir_free_prepared(p->impl, p->bank);
    for (unsigned i = 0; i < p->ndead; i++)
      cf_cpu_fir_free_prepared(p->impl, p->dead[i]);
  }
  for (unsigned i = 0; i < p->ndead_k; i++)
    cf_kernel_free(p->dead_k[i]);
  cf_kernel_free(p->k);
  free(p);
}

/* The CPU backend it started on runs for good: its impl never changes,
 * and another thread may build on it. */
static int cpu_for_good(const cf_engine *e)
{
  return e->started == CF_BACKEND_CPU && cf_cpu_fir_is(e->ops);
}

CF_PUBLIC cf_status cf_engine_prepare_swap(const cf_engine *e,
                                           const cf_kernel *kernel,
                                           cf_swap_prep **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "prepare_swap: NULL out");
  *out = NULL;
  CF_NEED(e, "prepare_swap", "engine");
  cf_status s = check_swap(e, kernel, "prepare_swap");
  if (s != CF_OK)
    return s;
  cf_swap_prep *p = calloc(1, sizeof *p);
  if (!p)
    return cf_fail(CF_E_NOMEM, "prepare_swap: out of memory");
  /* p->impl is set with a bank built on it, below: an engine on CUDA
   * with backend auto may replace its impl meanwhile (read under
   * impl_lock). The resets before the history is read: a reset meanwhile
   * shows at set_prepared. */
  p->resets = __atomic_load_n(&e->resets, __ATOMIC_ACQUIRE);
  p->engine = e->id;
  if ((s = cf_kernel_copy(kernel, &p->k)) != CF_OK) {
    free(p);
    return s;
  }
  uint64_t t0 = 0;
  if (cpu_for_good(e)) {
    p->impl = e->impl;
    s = cf_cpu_fir_prepare_swap(e->impl, kernel, &t0, &p->bank);
  } else { /* the plans a CPU taking over would use */
    s = cf_engine_prepare_kernel(e, kernel);
  }
  if (s == CF_OK && e->started == CF_BACKEND_CUDA) {
    /* The device's bank, built here; under impl_lock, as a switch to the
     * CPU in the engine's thread destroys the CUDA impl. A device failure
     * leaves the swap to set_prepared's set_kernel (which falls back to
     * the CPU with backend auto). */
    pthread_mutex_t *lock = (pthread_mutex_t *)&e->impl_lock; /* mutable */
    pthread_mutex_lock(lock);
    if (e->backend == CF_BACKEND_CUDA && cf_cuda_fir_is(e->ops)) {
      p->impl = e->impl;
      p->cuda = 1;
      s = cf_cuda_fir_prepare_swap(e->impl, kernel, &p->bank);
      if (cf_device_failure(s))
        s = CF_OK;
    }
    pthread_mutex_unlock(lock);
  }
  p->t0 = t0;
  if (s != CF_OK) {
    cf_swap_prep_free(p);
    return s;
  }
  *out = p;
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_set_prepared(cf_engine *e, cf_swap_prep *p,
                                           size_t crossfade)
{
  CF_NEED(e, "set_prepared", "engine");
  if (e->vops) /* before p is spent: it can still be made on its engine */
    return cf_fail(CF_E_STATE, "set_prepared: this is a video engine (use "
                   "cf_engine_set_prepared2d)");
  if (!p)
    return cf_fail(CF_E_INVALID, "set_prepared: NULL swap");
  if (p->used)
    return cf_fail(CF_E_INVALID, "set_prepared: this swap was made");
  cf_status s = check_crossfade(crossfade, "set_prepared");
  if (s != CF_OK)
    return s; /* p can still be made */
  p->used = 1;
  s = CF_E_STATE;
  if (p->bank && !p->cuda && p->engine == e->id && p->impl == e->impl &&
      !fb_active(e)) {
    /* a reset (or drain) since: the bank's spectra serve, primed again on
     * the frames since (QA: a transport locate made it a set_kernel, 26 ms
     * and 69 allocations in the audio thread at 480000 taps) */
    int reset = p->resets != __atomic_load_n(&e->resets, __ATOMIC_ACQUIRE);
    s = cf_cpu_fir_set_prepared(e->impl, p->bank, p->t0, reset, crossfade,
                                p->dead, &p->ndead, PREP_DEAD);
    if (s == CF_OK)
      p->bank = NULL; /* the engine's now */
  }
  if (p->bank && p->cuda && p->engine == e->id && p->impl == e->impl &&
      e->backend == CF_BACKEND_CUDA) {
    /* the device's bank needs no history (resets do not matter); with
     * backend auto, the stage first, as in set_kernel: p's copy of the
     * kernel goes into it, and what the stages let go into p (nothing
     * allocated or freed here) */
    fb_dead dead = {p->dead_k, &p->ndead_k, PREP_DEAD};
    int staged = fb_active(e);
    if (staged && (s = fb_prepare(e, NULL, p->k, crossfade, &dead)) != CF_OK)
      return s;
    s = cf_cuda_fir_set_prepared(e->impl, p->bank, crossfade, p->dead,
                                 &p->ndead, PREP_DEAD);
    if (s == CF_OK) {
      p->bank = NULL; /* the engine's now */
      if (staged)
        p->k = NULL; /* the stage's */
      return CF_OK;
    }
    if (staged)
      e->nstage--; /* the device did not swap: p->k stays p's */
    if (s != CF_E_STATE)
      return s;
  }
  if (s == CF_E_STATE) /* built for another time line: swap as usual */
    s = cf_engine_set_kernel(e, p->k, crossfade);
  return s;
}

/* the accessors answer 0 (NULL) for a NULL engine */
CF_PUBLIC unsigned cf_engine_in_channels(const cf_engine *e)
{
  return e ? e->cin : 0;
}
CF_PUBLIC unsigned cf_engine_out_channels(const cf_engine *e)
{
  return e ? e->cout : 0;
}
CF_PUBLIC cf_backend cf_engine_backend(const cf_engine *e)
{
  return e ? e->backend : CF_BACKEND_AUTO;
}

CF_PUBLIC const char *cf_engine_fallback_reason(const cf_engine *e)
{
  return e && e->fallback[0] ? e->fallback : NULL;
}

CF_PUBLIC const char *cf_engine_describe(const cf_engine *e)
{
  if (!e)
    return "no engine (NULL)";
  cf_engine *m = (cf_engine *)e; /* the description is a cache */
  int w = snprintf(m->desc, sizeof m->desc, "%s: ",
                   cf_backend_name(e->backend));
  if (e->vops)
    e->vops->describe(e->impl, m->desc + w, sizeof m->desc - (size_t)w);
  else
    e->ops->describe(e->impl, m->desc + w, sizeof m->desc - (size_t)w);
  size_t l = strlen(m->desc);
  if (e->delay)
    snprintf(m->desc + l, sizeof m->desc - l,
             "; then a delay of %zu frames (pipeline_depth %u)", e->delay,
             e->cfg.pipeline_depth);
  return e->desc;
}
