/* Device discovery in a build without the CUDA toolkit. */
#include <stdio.h>

#include "../engine/video_internal.h"
#include "cf_config.h"

/* CF_NO_CUDA_WHY: the reason meson found (the option disabled, nvcc or
 * a library missing), not a guess: nvcc may well be installed */
static const char no_cuda[] = "built without CUDA (" CF_NO_CUDA_WHY ")";

CF_PUBLIC int cf_device_count(const char **reason)
{
  if (reason)
    *reason = no_cuda;
  return 0;
}

CF_PUBLIC cf_status cf_device_describe(int id, char *buf, size_t len)
{
  if (!buf || !len)
    return cf_fail(CF_E_INVALID, "device_describe: %s",
                   buf ? "buffer of length 0" : "NULL buffer");
  buf[0] = '\0';
  return cf_fail(CF_E_UNAVAILABLE, "CUDA device %d: %s", id, no_cuda);
}

cf_status cf_cuda_usable(int device_id, const char **reason)
{
  (void)device_id;
  if (reason)
    *reason = no_cuda;
  return CF_E_UNAVAILABLE;
}

cf_status cf_cuda_fir_new(const cf_audio_config *cfg, const cf_kernel *k,
                          unsigned out_channels, void **impl,
                          const cf_backend_ops **ops)
{
  (void)cfg, (void)k, (void)out_channels, (void)impl, (void)ops;
  return cf_fail(CF_E_UNAVAILABLE, "%s", no_cuda);
}

int cf_cuda_fir_is(const cf_backend_ops *ops)
{
  (void)ops;
  return 0; /* never called on an engine of ours: there is none */
}

cf_status cf_cuda_fir_prepare_swap(const void *impl, const cf_kernel *k,
                                   void **out)
{
  (void)impl, (void)k;
  *out = NULL;
  return cf_fail(CF_E_UNAVAILABLE, "%s", no_cuda);
}

cf_status cf_cuda_fir_set_prepared(void *impl, void *prepared, size_t crossfade,
                                   void **dead, unsigned *ndead, unsigned cap)
{
  (void)impl, (void)prepared, (void)crossfade, (void)dead, (void)ndead,
      (void)cap;
  return CF_E_STATE;
}

void cf_cuda_fir_free_prepared(void *prepared)
{
  (void)prepared;
}

cf_status cf_cuda_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                            void **impl, const cf_video_ops **ops)
{
  (void)cfg, (void)k, (void)impl, (void)ops;
  return cf_fail(CF_E_UNAVAILABLE, "%s", no_cuda);
}

int cf_cuda_video_is(const cf_video_ops *ops)
{
  (void)ops;
  return 0; /* never called on an engine of ours: there is none */
}

cf_status cf_cuda_video_prepare(const void *impl, const cf_kernel2d *k,
                                void **out)
{
  (void)impl, (void)k;
  *out = NULL;
  return cf_fail(CF_E_UNAVAILABLE, "%s", no_cuda);
}

cf_status cf_cuda_video_set_prepared(void *impl, void *prepared)
{
  (void)impl, (void)prepared;
  return CF_E_STATE;
}

void cf_cuda_video_free_prepared(void *prepared)
{
  (void)prepared;
}

void *cf_cuda_pinned_alloc(size_t bytes)
{
  (void)bytes;
  return NULL;
}

void cf_cuda_pinned_free(void *p)
{
  (void)p;
}

int cf_cuda_device_memory(int dev, const void *p)
{
  (void)dev, (void)p;
  return 0;
}
