/* The engine front for video: validates the configuration, the kernel and
 * each frame, then forwards to the backend. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_internal.h"
#include "video_internal.h"

CF_PUBLIC void cf_video_config_init(cf_video_config *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->format = CF_PIX_GRAY8;
  cfg->components = CF_COMP_ALL;
  cfg->border = CF_BORDER_REFLECT;
  cfg->scale = 1.0f;
  cfg->backend = CF_BACKEND_AUTO;
  cfg->algorithm = CF_ALGO2D_AUTO;
  cfg->pipeline_depth = 2;
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
  e->cin = e->cout = cf_format_desc_get(cfg->format)->ncomp;
  s = CF_E_UNAVAILABLE;
  if (backend == CF_BACKEND_CUDA) {
    s = cf_cuda_video_new(cfg, k, &e->impl, &e->vops);
    /* auto takes the CPU where the CUDA path cannot serve this stream */
    if (s != CF_OK && cfg->backend == CF_BACKEND_AUTO)
      backend = CF_BACKEND_CPU;
  }
  if (backend == CF_BACKEND_CPU)
    s = cf_cpu_video_new(cfg, k, &e->impl, &e->vops);
  e->backend = backend;
  e->requested = cfg->backend;
  if (s != CF_OK) {
    free(e);
    return s;
  }
  *out = e;
  return CF_OK;
}

CF_PUBLIC cf_status cf_engine_process_frame(cf_engine *e, const cf_frame *in,
                                            const cf_frame *out)
{
  if (!e->vops)
    return cf_fail(CF_E_STATE, "process_frame: this is an audio engine");
  if (!in || !out)
    return cf_fail(CF_E_INVALID, "process_frame: %s frame is NULL",
                   in ? "output" : "input");
  return e->vops->process(e->impl, in, out);
}

CF_PUBLIC cf_status cf_engine_set_kernel2d(cf_engine *e, const cf_kernel2d *k)
{
  if (!e->vops)
    return cf_fail(CF_E_STATE, "set_kernel2d: this is an audio engine");
  cf_status s = check_kernel2d(k);
  return s == CF_OK ? e->vops->set_kernel(e->impl, k) : s;
}
