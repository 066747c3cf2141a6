// A CPU stand-in for the small part of CUDA that kernels/*.cu use, so that
// the device code compiles as plain C++ (with -DCF_EMU, see meson.build)
// and runs in CI where there is no GPU: tests/test_kernels_emu.cc calls
// the kernels' launchers (cf_k_*) on host memory and checks them against
// float64 references.
//
// A launch runs the grid one block at a time; the threads of a block are
// fibers (ucontext) on one OS thread, and __syncthreads() returns to the
// scheduler, which resumes every thread of the block once per round: all
// threads reach a barrier before any passes it, as on the device. The
// blocks, and the threads within each round, run in an order chosen per
// launch from a seed (CF_EMU_SEED, fixed if unset): in index order,
// reversed or shuffled, so a kernel that leans on an order the device does
// not promise (a thread reading shared memory another writes in the same
// round, a block reading another's output) gives seed-dependent results.
// Shared memory is a fresh buffer per block, filled with NaN bytes so that
// reading a position no thread wrote shows in the results; a launch the
// device would refuse (block over 1024 threads, dynamic shared memory over
// the 48 KiB a launch gets without opting in) fails as it would there.
//
// Not emulated: warps (no lockstep, no shuffles or atomics: the kernels
// use none), blocks running at the same time. Streams are the emulated
// runtime's (cudart_emu.cc): launches go into their queues.
#ifndef CF_EMU_H
#define CF_EMU_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

// ---- types and qualifiers ------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __constant__
#define __shared__ static // one block runs at a time
#define __launch_bounds__(...)

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_)
  {
  }
};
struct uint3 {
  unsigned x, y, z;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float2 make_float2(float x, float y)
{
  return float2{x, y};
}
inline float4 make_float4(float x, float y, float z, float w)
{
  return float4{x, y, z, w};
}

// int underneath: the thread's last error (cf_emu.cc) holds the runtime's
// errors too (cudart_emu.cc: cudaErrorInvalidDevice, 101, ...), which an
// enum of these values alone cannot hold (UBSan: "not a valid value for
// type 'cudaError'", the emulated runtime's failed cudaSetDevice read back)
typedef enum cudaError : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
} cudaError_t;
typedef struct CUstream_st *cudaStream_t;

template <class T> inline T __ldg(const T *p)
{
  return *p;
}
template <class A, class B>
inline typename std::common_type<A, B>::type min(A a, B b)
{
  typedef typename std::common_type<A, B>::type T;
  return (T)a < (T)b ? (T)a : (T)b;
}
template <class A, class B>
inline typename std::common_type<A, B>::type max(A a, B b)
{
  typedef typename std::common_type<A, B>::type T;
  return (T)a > (T)b ? (T)a : (T)b;
}

// ---- the emulated runtime (cf_emu.cc) ------------------------------------
namespace cf_emu
{
extern uint3 thread_idx, block_idx;
extern dim3 block_dim, grid_dim;
// Run f once per thread of every block (see the top of the file; nosync:
// a kernel without barriers, its threads as plain calls), a configuration
// check() has passed.
void run(bool nosync, dim3 grid, dim3 block, size_t smem,
         const std::function<void()> &f);
void sync_threads();
void *dyn_shared();
cudaError_t last_error(bool reset);
void set_last_error(cudaError_t e); // the runtime's failed calls (cudart_emu)

// A configuration the device refuses (block over 1024 threads, dynamic
// shared memory over 48 KiB, ...): false, and the error recorded for the
// launching thread's cudaGetLastError().
bool check(dim3 grid, dim3 block, size_t smem);

// Lazy loading: a device loads a kernel at its first launch unless
// cudaFuncGetAttributes (cf_preload) loaded it before. loaded() marks a
// kernel loaded; first_use() is told of every launch and, for a kernel
// not loaded yet, counts a load inside a stream's work (lazy_loads()) and,
// with CF_EMU_REQUIRE_PRELOAD=1 in the environment, names the kernel on
// stderr and aborts: the engines' suites run so, to prove that every
// kernel they launch was loaded when its engine was made.
void loaded(const void *kernel);
void first_use(const void *kernel);
unsigned long lazy_loads();

// Set by the emulated runtime (cudart_emu.cc): takes op into `stream`'s
// queue (or the graph being captured there) and returns true; unset (the
// kernel tests, no runtime), a launch runs at once.
extern bool (*enqueue_hook)(cudaStream_t stream,
                            const std::function<void()> &op);

template <class K> struct launcher {
  K kernel;
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  bool nosync;
  template <class... A> void operator()(A... args) const
  {
    first_use(reinterpret_cast<const void *>(kernel));
    if (!check(grid, block, smem))
      return;
    K k = kernel;
    dim3 g = grid, b = block;
    size_t s = smem;
    bool ns = nosync;
    std::function<void()> op = [=]() {
      run(ns, g, b, s, [=]() { k(args...); });
    };
    if (!enqueue_hook || !enqueue_hook(stream, op))
      op();
  }
};
template <class K>
launcher<K> launch(bool nosync, dim3 grid, dim3 block, size_t smem,
                   cudaStream_t stream, K kernel)
{
  return launcher<K>{kernel, grid, block, smem, stream, nosync};
}
} // namespace cf_emu

#define threadIdx (cf_emu::thread_idx)
#define blockIdx (cf_emu::block_idx)
#define blockDim (cf_emu::block_dim)
#define gridDim (cf_emu::grid_dim)
#define __syncthreads() cf_emu::sync_threads()

struct cudaFuncAttributes {
  size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion;
  int maxDynamicSharedSizeBytes;
};
// What the emulation knows of a kernel; it is loaded from now on.
template <class K>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, K kernel)
{
  memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = 1024;
  a->maxDynamicSharedSizeBytes = 48 * 1024;
  cf_emu::loaded(reinterpret_cast<const void *>(kernel));
  return cudaSuccess;
}

inline cudaError_t cudaGetLastError(void)
{
  return cf_emu::last_error(true);
}
inline cudaError_t cudaPeekAtLastError(void)
{
  return cf_emu::last_error(false);
}
// __constant__ symbols are plain arrays here. As on the device, the copy
// is an operation of the legacy stream, its source taken at the call.
template <class T>
inline cudaError_t cudaMemcpyToSymbol(T &symbol, const void *src, size_t count,
                                      size_t offset = 0)
{
  if (offset + count > sizeof symbol)
    return cudaErrorInvalidValue;
  std::shared_ptr<std::vector<char>> from = std::make_shared<
      std::vector<char>>((const char *)src, (const char *)src + count);
  char *to = (char *)&symbol + offset;
  std::function<void()> op = [=]() { memcpy(to, from->data(), count); };
  if (!cf_emu::enqueue_hook || !cf_emu::enqueue_hook(nullptr, op))
    op();
  return cudaSuccess;
}

#endif
