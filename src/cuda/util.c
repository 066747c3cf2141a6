/* CUDA backend: error mapping, checked allocation and fault injection
 * (see cuda_internal.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_kernels.h"
#include "cuda_internal.h"

static const char *base(const char *file)
{
  const char *s = strrchr(file, '/');
  return s ? s + 1 : file;
}

cf_status cf_cuda_status(cudaError_t err, const char *call, const char *file,
                         int line)
{
  cf_status st = err == cudaErrorMemoryAllocation ? CF_E_NOMEM : CF_E_DEVICE;
  /* A failing runtime call also leaves its error as the thread's last
   * error, which the next launcher's cudaGetLastError() would return: an
   * out-of-memory at one engine's creation (auto then takes the CPU) would
   * fail the first launch of the next engine built on this thread. It is
   * reported now; clear it (a sticky error stays, as it must). */
  (void)cudaGetLastError();
  return cf_fail(st, "CUDA: %s failed: %s (%s) at %s:%d", call,
                 cudaGetErrorString(err), cudaGetErrorName(err), base(file),
                 line);
}

const char *cf_cufft_result_name(cufftResult r)
{
  switch (r) {
  case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
  case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
  case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
  case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
  case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
  case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
  case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
  case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
  case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
  case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
  case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
  case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
  case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
  case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
  case CUFFT_MISSING_DEPENDENCY: return "CUFFT_MISSING_DEPENDENCY";
  case CUFFT_NVRTC_FAILURE: return "CUFFT_NVRTC_FAILURE";
  case CUFFT_NVJITLINK_FAILURE: return "CUFFT_NVJITLINK_FAILURE";
  case CUFFT_NVSHMEM_FAILURE: return "CUFFT_NVSHMEM_FAILURE";
  default: return "unknown cufftResult";
  }
}

cf_status cf_cufft_status(cufftResult r, const char *call, const char *file,
                          int line)
{
  cf_status st = r == CUFFT_ALLOC_FAILED ? CF_E_NOMEM : CF_E_DEVICE;
  return cf_fail(st, "cuFFT: %s failed: %s (%d) at %s:%d", call,
                 cf_cufft_result_name(r), (int)r, base(file), line);
}

/* ---- fault injection ---------------------------------------------------- */

static atomic_long n_alloc, n_launch;

/* The count CF_CUDA_FAULT gives for `key` ("alloc" or "launch"), or 0. */
static long fault_at(const char *key)
{
  const char *env = getenv("CF_CUDA_FAULT");
  if (!env)
    return 0;
  size_t kl = strlen(key);
  for (const char *p = env; p && *p;) {
    if (!strncmp(p, key, kl) && p[kl] == ':')
      return strtol(p + kl + 1, NULL, 10);
    p = strchr(p, ',');
    if (p)
      p++;
  }
  return 0;
}

cudaError_t cf_cuda_malloc(void **p, size_t bytes)
{
  long at = fault_at("alloc");
  if (at > 0 && atomic_fetch_add(&n_alloc, 1) + 1 == at) {
    *p = NULL;
    return cudaErrorMemoryAllocation;
  }
  return cudaMalloc(p, bytes);
}

cudaError_t cf_cuda_host_alloc(void **p, size_t bytes)
{
  long at = fault_at("alloc");
  if (at > 0 && atomic_fetch_add(&n_alloc, 1) + 1 == at) {
    *p = NULL;
    return cudaErrorMemoryAllocation;
  }
  return cudaHostAlloc(p, bytes, cudaHostAllocPortable);
}

cudaError_t cf_cuda_fault_launch(cudaError_t err)
{
  long at = fault_at("launch");
  if (at > 0 && atomic_fetch_add(&n_launch, 1) + 1 == at)
    return cudaErrorLaunchFailure;
  return err;
}

cf_status cf_cuda_use_device(int id)
{
  CF_CU(cudaSetDevice(id));
  /* Every entry point comes here first. A failed runtime call leaves its
   * error as the thread's last error, and every launcher returns
   * cudaGetLastError(): an error some other code left on this thread (an
   * application's, another library's) would be taken for our next
   * launch's and take the engine off the device. Not ours: forget it. A
   * sticky error (the context is lost) fails the next call anyway. */
  (void)cudaGetLastError();
  return CF_OK;
}

cf_status cf_cuda_preload(void)
{
  static const struct {
    const char *file;
    cudaError_t (*load)(void);
  } files[] = {
      {"crossfade.cu", cf_k_crossfade_preload},
      {"ring.cu", cf_k_ring_preload},
      {"fir1d.cu", cf_k_fir1d_preload},
      {"ols.cu", cf_k_ols_preload},
      {"conv2d.cu", cf_k_conv2d_preload},
      {"conv2d_fft.cu", cf_k_conv2d_fft_preload},
  };
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    cudaError_t err = files[i].load();
    if (err != cudaSuccess) {
      char what[64];
      snprintf(what, sizeof what, "loading the kernels of %s", files[i].file);
      return cf_cuda_status(err, what, __FILE__, __LINE__);
    }
  }
  return CF_OK;
}

int cf_cuda_device_memory(const void *p)
{
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError(); /* pageable memory on older runtimes */
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* The caller falls back to heap memory: the failure's error must not stay
 * behind as the thread's last error (see cf_cuda_use_device). */
void *cf_cuda_pinned_alloc(size_t bytes)
{
  void *p = NULL;
  if (cf_cuda_host_alloc(&p, bytes) == cudaSuccess)
    return p;
  (void)cudaGetLastError();
  return NULL;
}

void cf_cuda_pinned_free(void *p)
{
  if (p && cudaFreeHost(p) != cudaSuccess)
    (void)cudaGetLastError(); /* a failure at free time has no one to tell */
}
