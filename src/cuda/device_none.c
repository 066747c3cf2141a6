/* Device discovery in a build without the CUDA toolkit. */
#include <stdio.h>

#include "../engine/engine_internal.h"

static const char no_cuda[] = "built without CUDA (nvcc was not found at "
                              "configure time)";

CF_PUBLIC int cf_device_count(const char **reason)
{
  if (reason)
    *reason = no_cuda;
  return 0;
}

CF_PUBLIC cf_status cf_device_describe(int id, char *buf, size_t len)
{
  (void)buf;
  (void)len;
  return cf_fail(CF_E_UNAVAILABLE, "CUDA device %d: %s", id, no_cuda);
}

cf_status cf_cuda_usable(int device_id, const char **reason)
{
  (void)device_id;
  if (reason)
    *reason = no_cuda;
  return CF_E_UNAVAILABLE;
}
