// What every kernel file includes: the CUDA runtime, or with CF_EMU the
// CPU stand-in of tests/emu/cf_emu.h (the kernels then compile as C++ and
// run on the host, for the tests); and the few macros that keep the device
// code the same for both.
#ifndef CF_DEVICE_CUH
#define CF_DEVICE_CUH

#ifdef CF_EMU
#include "cf_emu.h"
// kernel<<<grid, block, smem, stream>>>(args), as CF_LAUNCH(grid, block,
// smem, stream, kernel)(args); CF_LAUNCH_NOSYNC for a kernel that has no
// __syncthreads (the emulation then runs its threads as plain calls)
#define CF_LAUNCH(g, b, s, st, ...)                                           \
  cf_emu::launch(false, g, b, s, st, __VA_ARGS__)
#define CF_LAUNCH_NOSYNC(g, b, s, st, ...)                                    \
  cf_emu::launch(true, g, b, s, st, __VA_ARGS__)
// extern __shared__ T name[]: the block's dynamic shared memory
#define CF_DYN_SHARED(T, name) T *name = static_cast<T *>(cf_emu::dyn_shared())
#else
#include <cuda_runtime.h>
#define CF_LAUNCH(g, b, s, st, ...) __VA_ARGS__<<<g, b, s, st>>>
#define CF_LAUNCH_NOSYNC(g, b, s, st, ...) __VA_ARGS__<<<g, b, s, st>>>
#define CF_DYN_SHARED(T, name) extern __shared__ T name[]
#endif

#define CF_HD __host__ __device__

// CUDA 12.2 and later load a kernel at its first launch (lazy loading, the
// default on Linux). That load may wait for the whole context and takes
// device memory, and for us it would come mid-stream: the first crossfade,
// the first block long enough for the wide 1D kernel, the first kernel
// swap to another 2D shape. Each kernel file's cf_k_*_preload loads its
// kernels through cudaFuncGetAttributes, which loads what it describes;
// engines call them all when they are made (cf_cuda_preload).
template <class K> inline cudaError_t cf_preload(K kernel)
{
  cudaFuncAttributes fa;
  return cudaFuncGetAttributes(&fa, kernel);
}
// Every kernel given, in order; the first error.
inline cudaError_t cf_preload_all(void)
{
  return cudaSuccess;
}
template <class K, class... R>
inline cudaError_t cf_preload_all(K kernel, R... rest)
{
  cudaError_t e = cf_preload(kernel);
  return e != cudaSuccess ? e : cf_preload_all(rest...);
}
// #pragma unroll for the device pass only (the host compiler warns)
#ifdef __CUDA_ARCH__
#define CF_UNROLL _Pragma("unroll")
#define CF_UNROLL2 _Pragma("unroll 2")
#else
#define CF_UNROLL
#define CF_UNROLL2
#endif

#endif
