/* CUDA device discovery through cudart. With no driver (CI machines),
 * cudaGetDeviceCount fails (cudaErrorInsufficientDriver): that is "no
 * device", with the runtime's own words as the reason. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>

#include "../engine/engine_internal.h"

static _Thread_local char why[256];

CF_PUBLIC int cf_device_count(const char **reason)
{
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    /* the runtime says "driver version is insufficient" where there is
     * no driver at all (QA: misleading on a machine without one) */
    void *drv = err == cudaErrorInsufficientDriver
                    ? dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)
                    : (void *)1;
    if (!drv)
      snprintf(why, sizeof why, "no usable CUDA device: no NVIDIA driver "
               "(libcuda.so.1 not found) (%s)", cudaGetErrorName(err));
    else
      snprintf(why, sizeof why, "no usable CUDA device: %s (%s)",
               cudaGetErrorString(err), cudaGetErrorName(err));
    if (drv && drv != (void *)1)
      dlclose(drv);
    /* A failed dlopen (ours, or the runtime's own of the driver) leaves
     * its message malloc'ed for this thread until its next dlerror, read
     * or not: a GStreamer streaming thread that then ended left it to
     * LeakSanitizer (a gst_cudafir run under ASan failed so, now and
     * then). The first call hands it out, the second frees it. */
    (void)dlerror();
    (void)dlerror();
    n = 0;
  } else if (n == 0) {
    snprintf(why, sizeof why, "the CUDA driver reports no device");
  }
  if (reason)
    *reason = n ? NULL : why;
  return n;
}

CF_PUBLIC cf_status cf_device_describe(int id, char *buf, size_t len)
{
  if (!buf || !len)
    return cf_fail(CF_E_INVALID, "device_describe: %s",
                   buf ? "buffer of length 0" : "NULL buffer");
  buf[0] = '\0';
  const char *reason = NULL;
  int n = cf_device_count(&reason);
  if (n == 0)
    return cf_fail(CF_E_UNAVAILABLE, "CUDA device %d: %s", id, reason);
  if (id < 0 || id >= n)
    return cf_fail(CF_E_INVALID, "CUDA device %d: out of range (%d device%s, "
                   "0 to %d)", id, n, n == 1 ? "" : "s", n - 1);
  struct cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties(&prop, id);
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); /* reported here, not at the next launch */
    return cf_fail(CF_E_DEVICE, "CUDA device %d: %s", id,
                   cudaGetErrorString(err));
  }
  snprintf(buf, len, "%s, sm_%d%d, %.1f GiB", prop.name, prop.major,
           prop.minor, (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024));
  return CF_OK;
}

cf_status cf_cuda_usable(int device_id, const char **reason)
{
  int n = cf_device_count(reason);
  if (n == 0)
    return CF_E_UNAVAILABLE;
  if (device_id < 0 || device_id >= n) {
    snprintf(why, sizeof why, "device-id %d out of range (%d devices)",
             device_id, n);
    if (reason)
      *reason = why;
    return CF_E_UNAVAILABLE;
  }
  return CF_OK;
}
