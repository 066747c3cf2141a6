/* CUDA backend: error mapping, checked allocation and fault injection
 * (see cuda_internal.h). */
#include <cuda.h>
#include <pthread.h>
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
  const char *why = r == CUFFT_NOT_SUPPORTED && cf_cufft_load_failure
                        ? cf_cufft_load_failure()
                        : NULL;
  return cf_fail(st, "cuFFT: %s failed: %s (%d)%s%s at %s:%d", call,
                 cf_cufft_result_name(r), (int)r, why ? ": " : "",
                 why ? why : "", base(file), line);
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

/* ---- the caller's context (cuda_internal.h, CF_CUDA_SCOPE) ---- */

/* The driver's context calls, CUDA 4.0's ABI, looked up through the
 * runtime (cudaGetDriverEntryPointByVersion): nothing links libcuda, which
 * a machine without a driver does not have. NULL where the lookup
 * failed: then only the runtime's device is put back. */
static struct {
  CUresult (*get)(CUcontext *ctx);
  CUresult (*set)(CUcontext ctx);
  CUresult (*primary_state)(CUdevice dev, unsigned *flags, int *active);
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void *driver_call(const char *name)
{
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 4000, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    fn = NULL;
  (void)cudaGetLastError(); /* not found is an answer, not an error */
  return fn;
}

static void drv_load(void)
{
  drv.get = (CUresult(*)(CUcontext *))driver_call("cuCtxGetCurrent");
  drv.set = (CUresult(*)(CUcontext))driver_call("cuCtxSetCurrent");
  drv.primary_state = (CUresult(*)(CUdevice, unsigned *, int *))driver_call(
      "cuDevicePrimaryCtxGetState");
  if (!drv.get || !drv.set)
    drv.get = NULL, drv.set = NULL;
}

static CUcontext current_ctx(void)
{
  CUcontext c = NULL;
  if (drv.get && drv.get(&c) != CUDA_SUCCESS)
    c = NULL;
  return c;
}

cf_status cf_cuda_enter(cf_cuda_scope *sc, int id)
{
  pthread_once(&drv_once, drv_load);
  sc->ctx = current_ctx();
  sc->id = id;
  sc->restore = 0;
  if (cudaGetDevice(&sc->dev) != cudaSuccess)
    sc->dev = -1;
  CF_CU(cudaSetDevice(id));
  /* Entered from further out (one entry point calling another), or the
   * caller works in this very context: nothing to put back. */
  sc->restore = drv.get ? current_ctx() != sc->ctx : sc->dev != id;
  /* A failed runtime call leaves its error as the thread's last error,
   * and every launcher returns cudaGetLastError(): an error some other
   * code left on this thread (an application's, another library's) would
   * be taken for our next launch's and take the engine off the device.
   * Not ours: forget it. A sticky error (the context is lost) fails the
   * next call anyway. */
  (void)cudaGetLastError();
  return CF_OK;
}

cf_status cf_cuda_enter_current(cf_cuda_scope *sc)
{
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    dev = 0;
  }
  return cf_cuda_enter(sc, dev);
}

void cf_cuda_scope_leave(cf_cuda_scope *sc)
{
  if (!sc->restore)
    return;
  sc->restore = 0;
  /* The runtime's device for the thread first: ours since cudaSetDevice,
   * even once the driver has the caller's context current again. Where
   * that device's primary context exists already (setting the device
   * makes one: memory on a device the caller may never use). */
  if (sc->dev >= 0 && sc->dev != sc->id) {
    int active = 0;
    unsigned flags = 0;
    if (!drv.set) /* no driver calls: the device is all we can put back */
      active = 1;
    else if (drv.primary_state &&
             drv.primary_state(sc->dev, &flags, &active) != CUDA_SUCCESS)
      active = 0;
    if (active)
      (void)cudaSetDevice(sc->dev);
  }
  /* then the context, in place of ours (NULL: none was current, ours is
   * popped) */
  if (drv.set)
    (void)drv.set(sc->ctx);
  (void)cudaGetLastError(); /* nothing to tell, no one to tell it to */
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

cf_status cf_cufft_warm(cufftHandle r2c, cufftHandle c2r, float *re,
                        size_t re_bytes, cufftComplex *cx, size_t cx_bytes,
                        cudaStream_t st)
{
  CF_CU(cudaMemsetAsync(re, 0, re_bytes, st));
  CF_CU(cudaMemsetAsync(cx, 0, cx_bytes, st));
  CF_FFT(cufftSetStream(r2c, st));
  CF_FFT(cufftExecR2C(r2c, re, cx));
  CF_FFT(cufftSetStream(c2r, st));
  CF_FFT(cufftExecC2R(c2r, cx, re));
  CF_CU(cudaStreamSynchronize(st));
  return CF_OK;
}

int cf_cuda_device_memory(int dev, const void *p)
{
  CF_CUDA_SCOPE(sc);
  if (cf_cuda_enter(&sc, dev) != CF_OK)
    return 0;
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
  CF_CUDA_SCOPE(sc);
  if (cf_cuda_enter_current(&sc) != CF_OK)
    return NULL;
  void *p = NULL;
  if (cf_cuda_host_alloc(&p, bytes) == cudaSuccess)
    return p;
  (void)cudaGetLastError();
  return NULL;
}

void cf_cuda_pinned_free(void *p)
{
  CF_CUDA_SCOPE(sc);
  if (!p)
    return;
  (void)cf_cuda_enter_current(&sc); /* failing, the free says so too */
  if (cudaFreeHost(p) != cudaSuccess)
    (void)cudaGetLastError(); /* a failure at free time has no one to tell */
}
