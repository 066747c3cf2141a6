// The CUDA runtime and cuFFT calls src/cuda/ makes, on the CPU: what
// libcudafilter_emu links instead of libcudart and libcufft, so that the
// whole CUDA backend (host code as built for the device, kernels on
// tests/emu/cf_emu.h) runs the engine's own tests in CI.
//
// One emulated device ("cf_emu", sm_90). Device memory is host memory;
// every operation runs when it is enqueued, in call order, so streams and
// events order nothing and are always complete (what ordering the host
// code gets wrong is left to the device and compute-sanitizer); a stream
// being captured records its operations (copies, memsets, kernels, FFTs)
// into the graph, and a graph launch replays them. Pinned memory
// (cudaHostAlloc) is tracked, so cudaPointerGetAttributes tells it from
// pageable memory as the driver does. cuFFT's R2C/C2R plans are FFTW
// plans of the same layout (unnormalised, as cuFFT).
#include <cuda_runtime_api.h>
#include <cufft.h>
#include <fftw3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace cf_emu
{
// kernels' launches go through this when their stream is being captured
extern bool (*capture_hook)(cudaStream_t, const std::function<void()> &);
} // namespace cf_emu

struct CUstream_st {
  bool capturing;
  std::vector<std::function<void()>> ops;
};
struct CUevent_st {
  int unused;
};
struct CUgraph_st {
  std::vector<std::function<void()>> ops;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
};

namespace
{

std::mutex lock; // the maps below (engines may run on several threads)
std::map<const char *, size_t> pinned, device; // start -> bytes
thread_local cudaError_t last = cudaSuccess;

// 0, cudaStreamLegacy (1) and cudaStreamPerThread (2) are handles, not
// streams of ours.
bool ours(cudaStream_t s)
{
  return (uintptr_t)s > 2;
}

cudaError_t fail(cudaError_t e)
{
  last = e;
  return e;
}

// Run op now, or record it when `s` is being captured.
cudaError_t enqueue(cudaStream_t s, std::function<void()> op)
{
  if (ours(s) && s->capturing)
    s->ops.push_back(std::move(op));
  else
    op();
  return cudaSuccess;
}

bool capture(cudaStream_t s, const std::function<void()> &op)
{
  if (!ours(s) || !s->capturing)
    return false;
  s->ops.push_back(op);
  return true;
}

struct hook_setter {
  hook_setter() { cf_emu::capture_hook = capture; }
} set_hook;

bool within(const std::map<const char *, size_t> &m, const void *p)
{
  auto it = m.upper_bound((const char *)p);
  if (it == m.begin())
    return false;
  --it;
  return (const char *)p < it->first + it->second;
}

bool on_device(const void *p)
{
  std::lock_guard<std::mutex> g(lock);
  return within(device, p);
}

// Bytes copied host to device, device to host, device to device and host
// to host (cf_emu_copied).
std::atomic<unsigned long long> copied[4];

// The direction of a copy (an index of `copied`), or -1 where `kind`
// contradicts the pointers: the driver refuses a copy whose kind names
// the wrong side (cudaMemcpyDefault infers it, as on a UVA system).
int copy_dir(const void *dst, const void *src, cudaMemcpyKind kind)
{
  bool d = on_device(dst), s = on_device(src);
  int dir = s ? (d ? 2 : 1) : (d ? 0 : 3);
  switch (kind) {
  case cudaMemcpyHostToDevice: return dir == 0 ? dir : -1;
  case cudaMemcpyDeviceToHost: return dir == 1 ? dir : -1;
  case cudaMemcpyDeviceToDevice: return dir == 2 ? dir : -1;
  case cudaMemcpyHostToHost: return dir == 3 ? dir : -1;
  default: return dir;
  }
}

} // namespace

extern "C" {

// For tests: the bytes the emulated device copied so far, by direction.
void cf_emu_copied(unsigned long long *h2d, unsigned long long *d2h,
                   unsigned long long *d2d)
{
  *h2d = copied[0];
  *d2h = copied[1];
  *d2d = copied[2];
}

cudaError_t cudaGetDeviceCount(int *count)
{
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device_id)
{
  return device_id == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device_id)
{
  if (device_id != 0)
    return fail(cudaErrorInvalidDevice);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "cf_emu (CPU emulation)");
  prop->major = 9;
  prop->minor = 0;
  prop->totalGlobalMem = (size_t)16 << 30;
  prop->multiProcessorCount = 4;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->maxThreadsPerBlock = 1024;
  prop->warpSize = 32;
  prop->asyncEngineCount = 2;
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorLaunchFailure: return "unspecified launch failure";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  default: return "emulated CUDA error";
  }
}

const char *cudaGetErrorName(cudaError_t e)
{
  switch (e) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  default: return "cudaErrorUnknown";
  }
}

cudaError_t cudaGetLastError(void)
{
  cudaError_t e = last;
  last = cudaSuccess;
  return e;
}

// An allocation recorded in `m` (device or pinned memory).
static cudaError_t tracked_alloc(std::map<const char *, size_t> &m, void **p,
                                 size_t bytes)
{
  *p = malloc(bytes ? bytes : 1);
  if (!*p)
    return fail(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> g(lock);
  m[(const char *)*p] = bytes;
  return cudaSuccess;
}

static cudaError_t tracked_free(std::map<const char *, size_t> &m, void *p)
{
  if (!p)
    return cudaSuccess;
  {
    std::lock_guard<std::mutex> g(lock);
    if (!m.erase((const char *)p))
      return fail(cudaErrorInvalidValue);
  }
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
  cudaError_t e = tracked_alloc(device, p, bytes);
  if (e == cudaSuccess) // NaN bytes: a read of what was never written shows
    memset(*p, 0xff, bytes);
  return e;
}

cudaError_t cudaFree(void *p)
{
  return tracked_free(device, p);
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
  (void)flags;
  return tracked_alloc(pinned, p, bytes);
}

cudaError_t cudaFreeHost(void *p)
{
  return tracked_free(pinned, p);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
                                     const void *p)
{
  memset(a, 0, sizeof *a);
  std::lock_guard<std::mutex> g(lock);
  if (within(pinned, p)) {
    a->type = cudaMemoryTypeHost;
    a->hostPointer = (void *)p;
    a->devicePointer = (void *)p;
  } else if (within(device, p)) {
    a->type = cudaMemoryTypeDevice;
    a->devicePointer = (void *)p;
  } else {
    a->type = cudaMemoryTypeUnregistered;
    a->device = -2;
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind kind)
{
  int dir = copy_dir(dst, src, kind);
  if (dir < 0)
    return fail(cudaErrorInvalidValue);
  copied[dir] += n;
  memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind, cudaStream_t s)
{
  int dir = copy_dir(dst, src, kind);
  if (dir < 0)
    return fail(cudaErrorInvalidValue);
  return enqueue(s, [=]() {
    copied[dir] += n;
    memmove(dst, src, n);
  });
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t s)
{
  int dir = copy_dir(dst, src, kind);
  if (dir < 0 || width > dpitch || width > spitch)
    return fail(cudaErrorInvalidValue);
  return enqueue(s, [=]() {
    copied[dir] += width * height;
    for (size_t r = 0; r < height; r++)
      memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  });
}

cudaError_t cudaMemset(void *p, int v, size_t n)
{
  memset(p, v, n);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
  return enqueue(s, [=]() { memset(p, v, n); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
  (void)flags;
  *s = new CUstream_st();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
  return ours(s) && s->capturing ? fail(cudaErrorStreamCaptureUnsupported)
                                 : cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
                                unsigned int flags)
{
  (void)s, (void)e, (void)flags;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m)
{
  (void)m;
  if (!ours(s) || s->capturing)
    return fail(cudaErrorIllegalState);
  s->capturing = true;
  s->ops.clear();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
  if (!ours(s) || !s->capturing)
    return fail(cudaErrorIllegalState);
  s->capturing = false;
  *g = new CUgraph_st();
  (*g)->ops.swap(s->ops);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g,
                                 unsigned long long flags)
{
  (void)flags;
  *x = new CUgraphExec_st();
  (*x)->ops = g->ops;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
  for (auto &op : x->ops)
    enqueue(s, op);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
  delete x;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
  delete g;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
  *e = new CUevent_st();
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
  (void)flags;
  return cudaEventCreate(e);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
  (void)e, (void)s;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
  (void)e;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
  (void)a, (void)b;
  *ms = 0.0f; // no clock: everything ran when enqueued
  return cudaSuccess;
}

// ---- cuFFT ------------------------------------------------------------------

namespace
{
struct fft_plan {
  int rank, n[2], batch; // rank 1: n[0]; rank 2: n[0] x n[1], row-major
  cufftType type;
  cudaStream_t stream;
};
std::map<cufftHandle, fft_plan> plans;
cufftHandle next_plan = 1;
std::mutex fft_lock; // FFTW's planner is not thread-safe

void run_fft(const fft_plan &p, void *in, void *out)
{
  std::lock_guard<std::mutex> g(fft_lock);
  int n[2] = {p.n[0], p.n[1]};
  int last = n[p.rank - 1];
  int real = p.rank == 1 ? n[0] : n[0] * n[1];
  int cplx = real / last * (last / 2 + 1);
  fftwf_plan f;
  if (p.type == CUFFT_R2C)
    f = fftwf_plan_many_dft_r2c(p.rank, n, p.batch, (float *)in, NULL, 1,
                                real, (fftwf_complex *)out, NULL, 1, cplx,
                                FFTW_ESTIMATE | FFTW_UNALIGNED);
  else // C2R: FFTW may overwrite its input, cuFFT may too
    f = fftwf_plan_many_dft_c2r(p.rank, n, p.batch, (fftwf_complex *)in, NULL,
                                1, cplx, (float *)out, NULL, 1, real,
                                FFTW_ESTIMATE | FFTW_UNALIGNED);
  fftwf_execute(f);
  fftwf_destroy_plan(f);
}
} // namespace

cufftResult cufftPlanMany(cufftHandle *plan, int rank, int *n, int *inembed,
                          int istride, int idist, int *onembed, int ostride,
                          int odist, cufftType type, int batch)
{
  (void)istride, (void)idist, (void)ostride, (void)odist;
  if ((rank != 1 && rank != 2) || inembed || onembed ||
      (type != CUFFT_R2C && type != CUFFT_C2R))
    return CUFFT_NOT_IMPLEMENTED; // what src/cuda/ does not use
  std::lock_guard<std::mutex> g(fft_lock);
  *plan = next_plan++;
  plans[*plan] =
      fft_plan{rank, {n[0], rank == 2 ? n[1] : 1}, batch, type, nullptr};
  return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle plan, cudaStream_t s)
{
  std::lock_guard<std::mutex> g(fft_lock);
  auto it = plans.find(plan);
  if (it == plans.end())
    return CUFFT_INVALID_PLAN;
  it->second.stream = s;
  return CUFFT_SUCCESS;
}

static cufftResult exec(cufftHandle plan, cufftType type, void *in, void *out)
{
  fft_plan p;
  {
    std::lock_guard<std::mutex> g(fft_lock);
    auto it = plans.find(plan);
    if (it == plans.end() || it->second.type != type)
      return CUFFT_INVALID_PLAN;
    p = it->second;
  }
  enqueue(p.stream, [=]() { run_fft(p, in, out); });
  return CUFFT_SUCCESS;
}

cufftResult cufftExecR2C(cufftHandle plan, cufftReal *in, cufftComplex *out)
{
  return exec(plan, CUFFT_R2C, in, out);
}

cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *in, cufftReal *out)
{
  return exec(plan, CUFFT_C2R, in, out);
}

cufftResult cufftDestroy(cufftHandle plan)
{
  std::lock_guard<std::mutex> g(fft_lock);
  return plans.erase(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

} // extern "C"
