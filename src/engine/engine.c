/* The engine front: validates configurations and kernels against the
 * stream, picks the backend, and forwards to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "kernel_internal.h"
#include "video_internal.h"


#define MAX_BLOCK ((size_t)1 << 16)

CF_PUBLIC void cf_audio_config_init(cf_audio_config *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->channels = 1;
  cfg->block_size = 1024;
  cfg->backend = CF_BACKEND_AUTO;
  cfg->algorithm = CF_ALGO_AUTO;
  cfg->pipeline_depth = 2;
  cfg->swap_history = 262144;
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
  for (unsigned i = 0; i < k->count; i++)
    if (k->len[i] == 0 && k->routing != CF_ROUTING_MATRIX)
      return cf_fail(CF_E_INVALID, "kernel %u has no taps", i);
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

CF_PUBLIC cf_status cf_engine_new_audio(const cf_audio_config *cfg,
                                        const cf_kernel *kernel,
                                        cf_engine **out)
{
  *out = NULL;
  if (!cfg)
    return cf_fail(CF_E_INVALID, "engine: configuration is NULL");
  if (cfg->channels == 0 || cfg->channels > CF_MAX_CHANNELS)
    return cf_fail(CF_E_INVALID, "engine: channels = %u, must be 1..%u",
                   cfg->channels, CF_MAX_CHANNELS);
  if (cfg->block_size == 0 || cfg->block_size > MAX_BLOCK)
    return cf_fail(CF_E_INVALID, "engine: block_size = %u, must be 1..%zu",
                   cfg->block_size, MAX_BLOCK);
  if ((unsigned)cfg->algorithm > CF_ALGO_FFT_NONUNIFORM)
    return cf_fail(CF_E_INVALID, "engine: unknown algorithm %d",
                   (int)cfg->algorithm);
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
  e->cin = cfg->channels;
  e->cout = cout;
  s = CF_E_UNAVAILABLE;
  if (backend == CF_BACKEND_CUDA) {
    s = cf_cuda_fir_new(cfg, kernel, cout, &e->impl, &e->ops);
    /* auto takes the CPU where the CUDA path cannot serve this stream */
    if (s != CF_OK && cfg->backend == CF_BACKEND_AUTO)
      backend = CF_BACKEND_CPU;
  }
  if (backend == CF_BACKEND_CPU)
    s = cf_cpu_fir_new(cfg, kernel, cout, &e->impl, &e->ops);
  e->backend = backend;
  e->requested = cfg->backend;
  if (s != CF_OK) {
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
  if (e->vops)
    e->vops->destroy(e->impl);
  else
    e->ops->destroy(e->impl);
  free(e);
}

CF_PUBLIC cf_status cf_engine_process(cf_engine *e, const float *in,
                                      float *out, size_t frames)
{
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
  return e->ops->process(e->impl, in, out, frames);
}

CF_PUBLIC size_t cf_engine_latency(const cf_engine *e)
{
  return e->vops ? 0 : e->ops->latency(e->impl);
}

CF_PUBLIC size_t cf_engine_tail(const cf_engine *e)
{
  return e->vops ? 0 : e->ops->tail(e->impl);
}

CF_PUBLIC cf_status cf_engine_drain(cf_engine *e, float *out, size_t capacity,
                                    size_t *written)
{
  if (written)
    *written = 0;
  if (e->vops)
    return cf_fail(CF_E_STATE, "drain: a video engine has no tail");
  size_t need = e->ops->tail(e->impl);
  if (capacity < need)
    return cf_fail(CF_E_INVALID, "drain: the tail is %zu frames, the buffer "
                   "holds %zu", need, capacity);
  if (need && !out)
    return cf_fail(CF_E_INVALID, "drain: NULL buffer");
  return e->ops->drain(e->impl, out, capacity, written);
}

CF_PUBLIC cf_status cf_engine_reset(cf_engine *e)
{
  if (e->vops)
    e->vops->reset(e->impl);
  else
    e->ops->reset(e->impl);
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_set_kernel(cf_engine *e, const cf_kernel *kernel,
                                         size_t crossfade)
{
  if (e->vops)
    return cf_fail(CF_E_STATE, "set_kernel: this is a video engine (use "
                   "cf_engine_set_kernel2d)");
  cf_status s = check_kernel(kernel);
  if (s != CF_OK)
    return s;
  unsigned cout = fit_outputs(kernel, e->cin);
  if (!cout)
    return CF_E_INVALID;
  if (cout != e->cout)
    return cf_fail(CF_E_INVALID, "set_kernel: the new kernel set has %u "
                   "outputs, the stream has %u", cout, e->cout);
  return e->ops->set_kernel(e->impl, kernel, crossfade);
}

CF_PUBLIC unsigned cf_engine_in_channels(const cf_engine *e) { return e->cin; }
CF_PUBLIC unsigned cf_engine_out_channels(const cf_engine *e) { return e->cout; }
CF_PUBLIC cf_backend cf_engine_backend(const cf_engine *e) { return e->backend; }

CF_PUBLIC const char *cf_engine_describe(const cf_engine *e)
{
  cf_engine *m = (cf_engine *)e; /* the description is a cache */
  int w = snprintf(m->desc, sizeof m->desc, "%s: ",
                   cf_backend_name(e->backend));
  if (e->vops)
    e->vops->describe(e->impl, m->desc + w, sizeof m->desc - (size_t)w);
  else
    e->ops->describe(e->impl, m->desc + w, sizeof m->desc - (size_t)w);
  return e->desc;
}
