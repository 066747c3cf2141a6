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

/* Make device `id` current on the calling thread (engines may be driven
 * from different threads over their life). */
cf_status cf_cuda_use_device(int id);

/* Load every kernel of kernels/ into the current device's context now
 * (cf_preload in kernels/cf_device.cuh says why): engines call it when
 * they are made, after cf_cuda_use_device, so that no kernel is first
 * loaded mid-stream. Cheap once loaded (a lookup per kernel). */
cf_status cf_cuda_preload(void);

#endif
