/* CPU video, pipelined (pipeline_depth D >= 1): the caller hands in frame
 * t and goes on while a worker thread filters it; the call returns the
 * result of frame t - D, which had D calls' worth of the caller's time to
 * finish. In a GStreamer pipeline that lets upstream (a decoder, a source)
 * and downstream work on other frames while this one is filtered; the
 * price is D frames of latency and two frame copies per frame.
 *
 * The filtering itself is the plain CPU backend (video.c), driven only by
 * the worker: jobs run strictly in order, each on a tight copy of its
 * input, into one of D + 1 result slots. A reset or a kernel change
 * between two frames applies between them: a reset is carried by the next
 * job; a kernel change waits until the queued jobs are done (they keep
 * the kernel they were enqueued with), as on the CUDA pipeline. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/video_internal.h"
#include "fpenv.h"
#include "pool.h"

typedef struct job {
  uint8_t *in, *out; /* tight frames */
  int reset_first;   /* reset the history before filtering this one */
  cf_video_out o;    /* its output stage */
  cf_fpenv env;      /* the caller's floating-point control register, which
                        the worker takes for it (rounding), as the pool's
                        workers do */
  int done;
  cf_status status;
  char err[256];
} job;

typedef struct vpipe {
  void *inner;
  const cf_video_ops *iops;
  cf_video_config cfg;
  cf_video_out out;       /* the next job's output stage (caller's) */
  cf_video_out inner_out; /* the inner backend's (worker's) */
  unsigned depth, nslots;
  job *jobs;
  /* jobs [head, head + count) are pending, in order; those before `next`
   * are done, `next` is the one the worker runs or waits for. Frame
   * numbers, in 64 bits: job i is in slot i % nslots, and a 32-bit count
   * wrapping at 2^32 frames (2.3 years at 60 fps, 207 days at 240) moved
   * that by 2^32 % nslots, two pending jobs in one slot (depth 2: the
   * output of frame 2^32 - 1 was frame 2^32's; QA) */
  uint64_t head, next;
  unsigned count;
  int reset_pending, quit, started;
  /* test only (CF_TEST_PIPE_LAZY set at creation): the worker starts a job
   * only once the caller waits for it (jobs before `wanted`), so that a
   * test's changes between calls meet jobs still queued, as a loaded
   * machine's would */
  int lazy;
  uint64_t wanted;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t work, done;
} vpipe;

static cf_frame tight(const vpipe *p, uint8_t *base)
{
  cf_frame f;
  cf_frame_layout(p->cfg.format, p->cfg.width, p->cfg.height, base, &f);
  return f;
}

static void *worker(void *arg)
{
  vpipe *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && (p->next == p->head + p->count ||
                        (p->lazy && p->next >= p->wanted)))
      pthread_cond_wait(&p->work, &p->mu);
    if (p->quit)
      break;
    job *j = &p->jobs[p->next % p->nslots];
    pthread_mutex_unlock(&p->mu);
    if (j->reset_first)
      p->iops->reset(p->inner);
    if (!cf_video_out_same(&j->o, &p->inner_out)) {
      p->inner_out = j->o;
      p->iops->set_output(p->inner, &j->o);
    }
    cf_fpenv_take(j->env);
    cf_frame in = tight(p, j->in), out = tight(p, j->out);
    j->status = p->iops->process(p->inner, &in, &out);
    if (j->status != CF_OK)
      snprintf(j->err, sizeof j->err, "%s", cf_last_error());
    pthread_mutex_lock(&p->mu);
    j->done = 1;
    p->next++;
    pthread_cond_broadcast(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Wait until the worker has finished every job enqueued so far. */
static void wait_idle(vpipe *p)
{
  pthread_mutex_lock(&p->mu);
  p->wanted = p->head + p->count;
  pthread_cond_signal(&p->work);
  while (p->next != p->head + p->count)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

/* Hand the oldest pending result to out (waiting for it) and free its
 * slot. A frame the worker failed on gives its error, once. */
static cf_status deliver(vpipe *p, const cf_frame *out)
{
  job *j = &p->jobs[p->head % p->nslots];
  pthread_mutex_lock(&p->mu);
  p->wanted = p->head + 1;
  pthread_cond_signal(&p->work);
  while (!j->done)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
  cf_status s = j->status;
  if (s == CF_OK) {
    cf_frame r = tight(p, j->out);
    cf_video_copy_frame(&p->cfg, &r, out);
  }
  pthread_mutex_lock(&p->mu);
  p->head++;
  p->count--;
  pthread_mutex_unlock(&p->mu);
  if (s != CF_OK)
    return cf_fail(s, "%s", j->err);
  return CF_OK;
}

static cf_status pipe_process(void *impl, const cf_frame *in,
                              const cf_frame *out)
{
  vpipe *p = impl;
  cf_status s = cf_video_check_frames(&p->cfg, in, out);
  if (s != CF_OK)
    return s;
  /* count <= depth here, so the slot after the pending ones is free: its
   * last job was delivered, and the worker is done with it */
  job *j = &p->jobs[(p->head + p->count) % p->nslots];
  cf_frame t = tight(p, j->in);
  cf_video_copy_frame(&p->cfg, in, &t);
  j->reset_first = p->reset_pending;
  p->reset_pending = 0;
  j->o = p->out;
  j->env = cf_fpenv_get();
  j->done = 0;
  pthread_mutex_lock(&p->mu);
  p->count++;
  pthread_cond_signal(&p->work);
  pthread_mutex_unlock(&p->mu);
  return p->count > p->depth ? deliver(p, out) : CF_OK;
}

static cf_status pipe_flush(void *impl, const cf_frame *out, int *got)
{
  vpipe *p = impl;
  *got = 0;
  if (!p->count)
    return CF_OK;
  cf_status s = cf_video_check_output(&p->cfg, out);
  if (s == CF_OK)
    s = deliver(p, out);
  *got = s == CF_OK;
  return s;
}

static void pipe_reset(void *impl)
{
  ((vpipe *)impl)->reset_pending = 1;
}

static cf_status pipe_set_kernel(void *impl, const cf_kernel2d *k)
{
  vpipe *p = impl;
  wait_idle(p);
  return p->iops->set_kernel(p->inner, k);
}

/* Carried by the next job: the queued ones keep theirs, and the pipeline
 * does not drain for it. */
static void pipe_set_output(void *impl, const cf_video_out *o)
{
  ((vpipe *)impl)->out = *o;
}

/* Before the first frame (video_internal.h): the worker is idle, but
 * waited for all the same, as a kernel set is. */
static cf_status pipe_set_base(void *impl, const cf_frame *f)
{
  vpipe *p = impl;
  wait_idle(p);
  return p->iops->set_base(p->inner, f);
}

/* The queued frames' tight copies are in the format they came in: only
 * with none pending (flushed), the worker idle then. */
static cf_status pipe_set_format(void *impl, cf_pixel_format f)
{
  vpipe *p = impl;
  pthread_mutex_lock(&p->mu);
  unsigned pending = p->count;
  pthread_mutex_unlock(&p->mu);
  if (pending)
    return cf_fail(CF_E_STATE,
                   "video: %u frame%s of %s still pending; flush "
                   "them (cf_engine_flush_frame) before changing to %s",
                   pending, pending == 1 ? "" : "s",
                   cf_pixel_format_name(p->cfg.format),
                   cf_pixel_format_name(f));
  cf_status s = p->iops->set_format(p->inner, f);
  if (s == CF_OK)
    p->cfg.format = f;
  return s;
}

static size_t pipe_latency(const void *impl)
{
  return ((const vpipe *)impl)->depth;
}

static void pipe_describe(const void *impl, char *buf, size_t n)
{
  const vpipe *p = impl;
  char inner[200];
  p->iops->describe(p->inner, inner, sizeof inner);
  snprintf(buf, n, "%s, pipelined (%u frame%s in flight)", inner, p->depth,
           p->depth == 1 ? "" : "s");
}

static void pipe_destroy(void *impl)
{
  vpipe *p = impl;
  if (p->started) {
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
  }
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->work);
  pthread_cond_destroy(&p->done);
  for (unsigned i = 0; p->jobs && i < p->nslots; i++) {
    free(p->jobs[i].in);
    free(p->jobs[i].out);
  }
  free(p->jobs);
  if (p->inner)
    p->iops->destroy(p->inner);
  free(p);
}

static const cf_video_ops pipe_ops = {
    pipe_process, pipe_reset, pipe_set_kernel, pipe_describe, pipe_destroy,
    pipe_latency, pipe_flush, pipe_set_output, pipe_set_base, pipe_set_format};

cf_status cf_cpu_video_pipe_set_built(void *impl, const cf_video_ops *ops,
                                      cf_cpu_built *b)
{
  if (ops != &pipe_ops)
    return CF_E_STATE;
  vpipe *p = impl;
  wait_idle(p);
  return cf_cpu_video_set_built(p->inner, p->iops, b);
}

cf_status cf_cpu_video_pipe_take_spent(void *impl, const cf_video_ops *ops,
                                       cf_cpu_built **out)
{
  if (ops != &pipe_ops)
    return CF_OK; /* not a CPU engine: nothing */
  /* no wait for the worker: it hands the rings over (spent_ready) */
  vpipe *p = impl;
  return cf_cpu_video_take_spent(p->inner, p->iops, out);
}

static uint8_t *alloc_frame(size_t bytes)
{
  return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

cf_status cf_cpu_video_pipe_new(const cf_video_config *cfg,
                                const cf_kernel2d *k, cf_fft_mode fft_mode,
                                void **impl, const cf_video_ops **ops)
{
  vpipe *p = calloc(1, sizeof *p);
  if (!p)
    return cf_fail(CF_E_NOMEM, "video: out of memory");
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_cond_init(&p->done, NULL);
  p->cfg = *cfg;
  p->out = p->inner_out = (cf_video_out){cfg->scale, cfg->bias, cfg->absolute};
  p->depth = cfg->pipeline_depth;
  p->nslots = p->depth + 1;
  p->lazy = getenv("CF_TEST_PIPE_LAZY") != NULL;
  cf_video_config plain = *cfg;
  plain.pipeline_depth = 0;
  cf_status s = cf_cpu_video_new(&plain, k, fft_mode, &p->inner, &p->iops);
  if (s != CF_OK) {
    p->inner = NULL;
    pipe_destroy(p);
    return s;
  }
  size_t bytes =
      cf_frame_layout(cfg->format, cfg->width, cfg->height, NULL, NULL);
  p->jobs = calloc(p->nslots, sizeof *p->jobs);
  for (unsigned i = 0; p->jobs && i < p->nslots; i++) {
    p->jobs[i].in = alloc_frame(bytes);
    p->jobs[i].out = alloc_frame(bytes);
    if (!p->jobs[i].in || !p->jobs[i].out) {
      s = cf_fail(CF_E_NOMEM,
                  "video: out of memory for %u pipelined "
                  "frames of %zu bytes",
                  2 * p->nslots, bytes);
      break;
    }
  }
  if (s == CF_OK && !p->jobs)
    s = cf_fail(CF_E_NOMEM, "video: out of memory");
  if (s == CF_OK) {
    int err = cf_thread_start(&p->thread, NULL, worker, p);
    p->started = err == 0;
    /* EAGAIN: no memory for its stack (a memory limit) or a limit on
     * threads: CF_E_NOMEM, as video.h documents for resources (it was
     * CF_E_INTERNAL, as the pool's was: QA) */
    if (!p->started)
      s = cf_fail(err == EAGAIN ? CF_E_NOMEM : CF_E_INTERNAL,
                  "video: cannot start the pipeline thread: %s%s",
                  strerror(err),
                  err == EAGAIN ? " (out of memory for its stack, or a "
                                  "limit on threads)"
                                : "");
  }
  if (s != CF_OK) {
    pipe_destroy(p);
    return s;
  }
  *impl = p;
  *ops = &pipe_ops;
  return CF_OK;
}
