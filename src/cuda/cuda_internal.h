/* Internal: what every file of the CUDA backend's host side shares.
 *
 * Every cudart and cuFFT call goes through CF_CU / CF_FFT (or
 * cf_cuda_status / cf_cufft_status): a failure becomes a cf_status with a
 * message naming the call, the runtime's words and the place, and out of
 * memory maps to CF_E_NOMEM, everything else to CF_E_DEVICE.
 *
 * Fault injection (tests/gpu, acceptance of the fallback path): with
 * CF_CUDA_FAULT="alloc:N" the N-th device or pinned allocation of the
 * process fails as out of memory; with "launch:N" the N-th kernel launch
 * check fails as a launch failure (both may be given, comma separated).
 * Allocations go through cf_cuda_malloc / cf_cuda_host_alloc and launch
 * checks through CF_LAUNCHED so the counters see them. */
#ifndef CF_CUDA_INTERNAL_H
#define CF_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>
#include <cufft.h>
#include <stddef.h>

#include "../engine/engine_internal.h"

cf_status cf_cuda_status(cudaError_t err, const char *call, const char *file,
                         int line);
cf_status cf_cufft_status(cufftResult r, const char *call, const char *file,
                          int line);
const char *cf_cufft_result_name(cufftResult r);
/* Why libcufft could not be loaded (cufft_lazy.c), or NULL once it is.
 * Weak: libcudafilter_emu (tests/emu) links an emulated cuFFT and has no
 * loader. */
const char *cf_cufft_load_failure(void) __attribute__((weak));

/* Return from the enclosing function (which returns cf_status) on error. */
#define CF_CU(call)                                                          \
  do {                                                                       \
    cudaError_t cf_e_ = (call);                                              \
    if (cf_e_ != cudaSuccess)                                                \
      return cf_cuda_status(cf_e_, #call, __FILE__, __LINE__);               \
  } while (0)

#define CF_FFT(call)                                                         \
  do {                                                                       \
    cufftResult cf_r_ = (call);                                              \
    if (cf_r_ != CUFFT_SUCCESS)                                              \
      return cf_cufft_status(cf_r_, #call, __FILE__, __LINE__);              \
  } while (0)

/* After a launch (or a launcher from kernels/cf_kernels.h, which returns
 * cudaGetLastError()): fail like CF_CU, counting the launch for faults. */
#define CF_LAUNCHED(err) CF_CU(cf_cuda_fault_launch(err))

/* Allocation wrappers that count for fault injection. */
cudaError_t cf_cuda_malloc(void **p, size_t bytes);
cudaError_t cf_cuda_host_alloc(void **p, size_t bytes);
/* err unchanged, unless this is the launch CF_CUDA_FAULT names. */
cudaError_t cf_cuda_fault_launch(cudaError_t err);

/* Every entry point of the backend works in its device's primary context
 * (the runtime's) and hands the calling thread back as it found it: an
 * application's own context current (cuCtxCreate / cuCtxPushCurrent: a
 * player's, GStreamer's CUDA elements'), another device's, or none. Each
 * declares a scope first and enters it:
 *     CF_CUDA_SCOPE(sc);
 *     cf_status r = cf_cuda_enter(&sc, f->device);
 * and the scope puts the caller's context back wherever the function
 * returns (a cleanup attribute). Entered again further in (one entry
 * point calling another), it changes nothing. */
typedef struct cf_cuda_scope {
  void *ctx;   /* the caller's current context (CUcontext), or NULL */
  int dev;     /* the runtime's device for the thread, before */
  int id;      /* the device entered */
  int restore; /* 1: the context changed on entry, put ctx back */
} cf_cuda_scope;
void cf_cuda_scope_leave(cf_cuda_scope *sc);
#define CF_CUDA_SCOPE(name)                                                    \
  cf_cuda_scope name                                                           \
      __attribute__((cleanup(cf_cuda_scope_leave))) = {NULL, -1, -1, 0}
/* Make device `id`'s primary context current on the calling thread
 * (engines may be driven from different threads over their life);
 * cf_cuda_scope_leave restores what was current. */
cf_status cf_cuda_enter(cf_cuda_scope *sc, int id);
/* The same for the device the thread is on (cudaGetDevice: the current
 * context's, else the runtime's choice): pinned host memory, which any
 * device's context reads, allocated in a primary context. */
cf_status cf_cuda_enter_current(cf_cuda_scope *sc);

/* cuFFT, like our kernels, is loaded lazily: a plan's first execution
 * loads its kernels, mid-stream unless it ran before. Run r2c (re -> cx)
 * and c2r (cx -> re) once on stream st, the scratch zeroed first (a
 * sanitizer's initcheck), and wait: engines call it where they make a
 * plan. re and cx hold re_bytes and cx_bytes, what the plans read and
 * write at least. */
cf_status cf_cufft_warm(cufftHandle r2c, cufftHandle c2r, float *re,
                        size_t re_bytes, cufftComplex *cx, size_t cx_bytes,
                        cudaStream_t st);

/* Load every kernel of kernels/ into the current device's context now
 * (cf_preload in kernels/cf_device.cuh says why): engines call it when
 * they are made, after cf_cuda_enter, so that no kernel is first
 * loaded mid-stream. Cheap once loaded (a lookup per kernel). */
cf_status cf_cuda_preload(void);

#endif
