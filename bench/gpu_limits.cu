/* gpu_limits — the device's own ceilings, measured, for bench/gpu-check.
 *
 *   build/bench/gpu_limits [--quick] [--device N] [--reps R] [--mib M]
 *
 * Measures, each by R timed repetitions with CUDA events after one warm-up
 * (median and minimum time reported):
 *   - device-to-device copy bandwidth: cudaMemcpy D2D and a float4
 *     grid-stride copy kernel, GB/s counting bytes read + bytes written;
 *   - pinned (cudaHostAlloc) host-to-device and device-to-host bandwidth,
 *     each alone, then both at once on two streams (GB/s per direction and
 *     together);
 *   - the FP32 FMA rate: a kernel whose threads run 8 independent
 *     register-resident FMA chains, GFLOP/s (an FMA = 2 flops), with the
 *     theoretical peak SMs x clock x FP32 lanes per SM x 2 beside it.
 * Prints a markdown table and one `RESULT case=limit-<name> ms=<median>
 * <unit>=<value>` line per measurement (bench/README.md, "GPU check").
 *
 * Then one probe, not a limit: whether the runtime's cudaMemcpy2DAsync
 * (cudaMemcpyDefault, on a stream of the primary context, as the engine
 * copies) moves pitched device memory of another context of the same
 * device both ways: the memory gstcuda 1.22 hands cudaconvolve
 * (GstCudaMemory, cuMemAllocPitch in a context of its own). One line
 * `RESULT case=probe-cross-context to=<ok|error> from=<ok|error>` with
 * the error named.
 * Without a usable device it prints "skipped: no CUDA device: <reason>" and
 * exits 77. */
#include <cuda.h> /* driver API types only: its functions come through
                     cudaGetDriverEntryPointByVersion, libcuda is not linked */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(call)                                                          \
  do {                                                                    \
    cudaError_t e_ = (call);                                              \
    if (e_ != cudaSuccess) {                                              \
      std::fprintf(stderr, "gpu_limits: %s:%d: %s: %s\n", __FILE__,       \
                   __LINE__, #call, cudaGetErrorString(e_));              \
      std::exit(1);                                                       \
    }                                                                     \
  } while (0)

#define CKLAUNCH() CK(cudaGetLastError())

namespace {

struct stats {
  double med_ms, min_ms;
};

stats summarize(std::vector<float> &t)
{
  std::sort(t.begin(), t.end());
  size_t n = t.size();
  double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  return {med, t[0]};
}

__global__ void copy_kernel(const float4 *__restrict__ src,
                            float4 *__restrict__ dst, size_t n)
{
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

/* Poison/fill with a non-zero pattern (timing on zeros can flatter). */
__global__ void fill_kernel(float *p, size_t n, float seed)
{
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    p[i] = seed + (float)(i & 1023) * 0.001f;
}

#define FMA_CHAINS 8

/* FMA_CHAINS independent chains acc = acc * m + c per thread, `iters` times
 * each. m and c are kernel arguments, so nothing folds at compile time; the
 * store is conditional on a value that never occurs, so nothing is dead. */
__global__ void fma_kernel(float *out, int iters, float m, float c)
{
  float acc[FMA_CHAINS];
#pragma unroll
  for (int k = 0; k < FMA_CHAINS; k++)
    acc[k] = (float)(threadIdx.x + k) * 1e-3f;
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int u = 0; u < 4; u++) {
#pragma unroll
      for (int k = 0; k < FMA_CHAINS; k++)
        acc[k] = fmaf(acc[k], m, c);
    }
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < FMA_CHAINS; k++)
    s += acc[k];
  if (s == -1.0f)
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* FP32 lanes per SM by compute capability (CUDA C Programming Guide,
 * "Arithmetic Instructions" throughput table). */
int fp32_lanes_per_sm(int major, int minor)
{
  if (major == 8 && minor == 0)
    return 64;  /* A100 */
  if (major == 7)
    return 64;
  if (major == 6 && minor == 0)
    return 64;
  return 128;   /* 6.1/6.2, 8.6, 8.7, 8.9, 9.0, 10.x, 12.x */
}

struct timer {
  cudaEvent_t a, b;
  timer()
  {
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
  }
  ~timer()
  {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
};

struct row {
  char name[48];
  char what[96];
  double bytes_or_flops; /* per repetition */
  stats s;
  bool flops;
};

std::vector<row> rows;

void add_row(const char *name, const char *what, double amount, stats s,
             bool flops)
{
  row r;
  std::snprintf(r.name, sizeof r.name, "%s", name);
  std::snprintf(r.what, sizeof r.what, "%s", what);
  r.bytes_or_flops = amount;
  r.s = s;
  r.flops = flops;
  rows.push_back(r);
}

void usage(void)
{
  std::fprintf(stderr,
               "usage: gpu_limits [--quick] [--device N] [--reps R] "
               "[--mib M]\n");
  std::exit(2);
}

} // namespace


/* ---- cross-context copies ------------------------------------------------ */

namespace {

typedef CUresult (*fn_DeviceGet)(CUdevice *, int);
typedef CUresult (*fn_CtxCreate)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*fn_CtxPop)(CUcontext *);
typedef CUresult (*fn_CtxPush)(CUcontext);
typedef CUresult (*fn_CtxDestroy)(CUcontext);
typedef CUresult (*fn_MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t,
                                     unsigned);
typedef CUresult (*fn_MemFree)(CUdeviceptr);

/* `version`: the one whose signature the typedef has; cuCtxCreate at
 * 12000 is cuCtxCreate_v3 (affinity parameters first), hence 3020 there,
 * the (flags, device) one that GStreamer's CUDA loader uses too. */
template <typename F> bool driver_fn(const char *name, F *f,
                                     int version = 12000)
{
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, version,
                                                   cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
    std::printf("probe: no driver entry point %s (%s)\n", name,
                cudaGetErrorName(e));
    return false;
  }
  *f = reinterpret_cast<F>(p);
  return true;
}

/* A pattern of w x h bytes through `dst` (pitch dp) from `src` (pitch
 * sp), both device memory; "ok", or what went wrong. */
const char *probe_copy(void *dst, size_t dp, const void *src, size_t sp,
                       size_t w, size_t h, const void *src_host,
                       cudaStream_t st, char *why, size_t n)
{
  cudaError_t e = cudaMemcpy2DAsync(dst, dp, src, sp, w, h, cudaMemcpyDefault,
                                    st);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(st);
  std::vector<unsigned char> back(w * h);
  if (e == cudaSuccess)
    e = cudaMemcpy2D(back.data(), w, dst, dp, w, h, cudaMemcpyDefault);
  if (e != cudaSuccess) {
    std::snprintf(why, n, "error:%s", cudaGetErrorName(e));
    (void)cudaGetLastError();
    return why;
  }
  return std::memcmp(back.data(), src_host, w * h) ? "wrong-data" : "ok";
}

void probe_cross_context(int dev)
{
  fn_DeviceGet device_get;
  fn_CtxCreate ctx_create;
  fn_CtxPop ctx_pop;
  fn_CtxPush ctx_push;
  fn_CtxDestroy ctx_destroy;
  fn_MemAllocPitch alloc_pitch;
  fn_MemFree mem_free;
  if (!driver_fn("cuDeviceGet", &device_get) ||
      !driver_fn("cuCtxCreate", &ctx_create, 3020) ||
      !driver_fn("cuCtxPopCurrent", &ctx_pop) ||
      !driver_fn("cuCtxPushCurrent", &ctx_push) ||
      !driver_fn("cuCtxDestroy", &ctx_destroy) ||
      !driver_fn("cuMemAllocPitch", &alloc_pitch) ||
      !driver_fn("cuMemFree", &mem_free)) {
    std::printf("RESULT case=probe-cross-context to=skipped from=skipped\n");
    return;
  }
  const size_t w = 1920 * 4 + 12, h = 67; /* an RGBA row, unaligned */
  CUdevice cdev;
  CUcontext other = nullptr, popped = nullptr;
  CUdeviceptr d_other = 0;
  size_t other_pitch = 0;
  const char *step = "cuDeviceGet";
  CUresult r = device_get(&cdev, dev);
  if (r == CUDA_SUCCESS) {
    step = "cuCtxCreate";
    r = ctx_create(&other, 0, cdev); /* now current */
  }
  if (r == CUDA_SUCCESS) {
    step = "cuMemAllocPitch";
    r = alloc_pitch(&d_other, &other_pitch, w, h, 4);
    CUresult r2 = ctx_pop(&popped); /* back to the primary context */
    if (r == CUDA_SUCCESS) {
      step = "cuCtxPopCurrent";
      r = r2;
    }
  }
  if (r != CUDA_SUCCESS) {
    int mode = -1;
    (void)cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, dev);
    std::printf("probe: another context: %s gave CUresult %d (device %d, "
                "compute mode %d)\n", step, (int)r, dev, mode);
    std::printf("RESULT case=probe-cross-context to=error:setup "
                "from=error:setup\n");
    if (other)
      ctx_destroy(other);
    return;
  }
  std::vector<unsigned char> pat(w * h), pat2(w * h);
  for (size_t i = 0; i < pat.size(); i++) {
    pat[i] = (unsigned char)(i * 2654435761u >> 13);
    pat2[i] = (unsigned char)~pat[i];
  }
  void *d_ours = nullptr;
  size_t ours_pitch = 0;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaMallocPitch(&d_ours, &ours_pitch, w, h));
  CK(cudaMemcpy2D(d_ours, ours_pitch, pat.data(), w, w, h,
                  cudaMemcpyHostToDevice));
  char why_to[96], why_from[96];
  /* ours -> the other context's memory, then back into ours over pat2 */
  const char *to = probe_copy((void *)d_other, other_pitch, d_ours,
                              ours_pitch, w, h, pat.data(), st, why_to,
                              sizeof why_to);
  CK(cudaMemcpy2D(d_ours, ours_pitch, pat2.data(), w, w, h,
                  cudaMemcpyHostToDevice));
  const char *from = std::strcmp(to, "ok")
                         ? "untried"
                         : probe_copy(d_ours, ours_pitch, (void *)d_other,
                                      other_pitch, w, h, pat.data(), st,
                                      why_from, sizeof why_from);
  std::printf("\nCopies with memory of another context of the device "
              "(cuMemAllocPitch, pitch %zu; ours pitch %zu): to it %s, from "
              "it %s\n",
              other_pitch, ours_pitch, to, from);
  std::printf("RESULT case=probe-cross-context to=%s from=%s\n", to, from);
  CK(cudaStreamDestroy(st));
  CK(cudaFree(d_ours));
  if (ctx_push(other) == CUDA_SUCCESS) {
    mem_free(d_other);
    ctx_pop(&popped);
  }
  ctx_destroy(other);
}

} // namespace

int main(int argc, char **argv)
{
  int dev = 0, reps = 20;
  size_t mib = 1024; /* device copy buffer, MiB (pinned copies use mib/4) */
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      dev = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = (size_t)std::atol(argv[++i]);
    } else {
      usage();
    }
  }
  if (quick) {
    reps = std::min(reps, 7);
    mib = std::min(mib, (size_t)256);
  }
  if (reps < 1 || mib < 16)
    usage();

  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    std::printf("skipped: no CUDA device: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    return 77;
  }
  if (dev < 0 || dev >= ndev) {
    std::printf("skipped: no CUDA device: device %d of %d\n", dev, ndev);
    return 77;
  }
  CK(cudaSetDevice(dev));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  CK(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev));
  CK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
  int rt = 0, drv = 0;
  CK(cudaRuntimeGetVersion(&rt));
  CK(cudaDriverGetVersion(&drv));
  std::printf("device %d: %s, cc %d.%d, %d SMs, max clock %.0f MHz, "
              "%.1f GiB, L2 %.0f MB, memory clock %.0f MHz x %d bit\n",
              dev, p.name, p.major, p.minor, p.multiProcessorCount,
              clock_khz / 1e3, p.totalGlobalMem / 1073741824.0,
              p.l2CacheSize / 1e6, mem_clock_khz / 1e3, bus_bits);
  std::printf("runtime %d, driver %d; %d repetitions each, median and "
              "minimum by CUDA events\n\n",
              rt, drv, reps);

  timer t;
  std::vector<float> ms((size_t)reps);

  /* ---- device-to-device --------------------------------------------- */
  size_t bytes = mib << 20;
  size_t n4 = bytes / sizeof(float4);
  float *d_a = nullptr, *d_b = nullptr;
  CK(cudaMalloc(&d_a, bytes));
  CK(cudaMalloc(&d_b, bytes));
  fill_kernel<<<p.multiProcessorCount * 4, 256>>>(d_a, bytes / 4, 1.5f);
  CKLAUNCH();
  fill_kernel<<<p.multiProcessorCount * 4, 256>>>(d_b, bytes / 4, -2.5f);
  CKLAUNCH();
  CK(cudaDeviceSynchronize());

  CK(cudaMemcpy(d_b, d_a, bytes, cudaMemcpyDeviceToDevice)); /* warm-up */
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(t.a));
    CK(cudaMemcpyAsync(d_b, d_a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(t.b));
    CK(cudaEventSynchronize(t.b));
    CK(cudaEventElapsedTime(&ms[(size_t)r], t.a, t.b));
  }
  char what[96];
  std::snprintf(what, sizeof what, "cudaMemcpy D2D, %zu MiB", mib);
  add_row("d2d-memcpy", what, 2.0 * bytes, summarize(ms), false);

  int copy_blocks = p.multiProcessorCount * 8;
  copy_kernel<<<copy_blocks, 256>>>((const float4 *)d_a, (float4 *)d_b, n4);
  CKLAUNCH();
  CK(cudaDeviceSynchronize());
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(t.a));
    copy_kernel<<<copy_blocks, 256>>>((const float4 *)d_a, (float4 *)d_b,
                                      n4);
    CKLAUNCH();
    CK(cudaEventRecord(t.b));
    CK(cudaEventSynchronize(t.b));
    CK(cudaEventElapsedTime(&ms[(size_t)r], t.a, t.b));
  }
  std::snprintf(what, sizeof what, "float4 copy kernel, %d x 256 threads",
                copy_blocks);
  add_row("d2d-kernel", what, 2.0 * bytes, summarize(ms), false);
  {
    /* The copy must have copied: check a few words. */
    float probe[4], want[4];
    size_t idx[4] = {0, 12345, bytes / 8, bytes / 4 - 1};
    for (int k = 0; k < 4; k++) {
      CK(cudaMemcpy(&probe[k], d_b + idx[k], 4, cudaMemcpyDeviceToHost));
      want[k] = 1.5f + (float)(idx[k] & 1023) * 0.001f;
      if (probe[k] != want[k]) {
        std::fprintf(stderr, "gpu_limits: copy kernel wrong at %zu: %g != %g\n",
                     idx[k], probe[k], want[k]);
        return 1;
      }
    }
  }

  /* ---- pinned host <-> device ---------------------------------------- */
  size_t hbytes = bytes / 4;
  float *h_up = nullptr, *h_down = nullptr;
  CK(cudaHostAlloc((void **)&h_up, hbytes, cudaHostAllocDefault));
  CK(cudaHostAlloc((void **)&h_down, hbytes, cudaHostAllocDefault));
  for (size_t i = 0; i < hbytes / 4; i++)
    h_up[i] = (float)(i & 4095) * 0.25f + 1.0f;
  std::memset(h_down, 0x7f, hbytes);
  cudaStream_t s_up, s_down;
  CK(cudaStreamCreateWithFlags(&s_up, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s_down, cudaStreamNonBlocking));

  CK(cudaMemcpy(d_a, h_up, hbytes, cudaMemcpyHostToDevice));
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(t.a, s_up));
    CK(cudaMemcpyAsync(d_a, h_up, hbytes, cudaMemcpyHostToDevice, s_up));
    CK(cudaEventRecord(t.b, s_up));
    CK(cudaEventSynchronize(t.b));
    CK(cudaEventElapsedTime(&ms[(size_t)r], t.a, t.b));
  }
  std::snprintf(what, sizeof what, "pinned H2D alone, %zu MiB", mib / 4);
  add_row("h2d-pinned", what, (double)hbytes, summarize(ms), false);

  CK(cudaMemcpy(h_down, d_b, hbytes, cudaMemcpyDeviceToHost));
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(t.a, s_down));
    CK(cudaMemcpyAsync(h_down, d_b, hbytes, cudaMemcpyDeviceToHost, s_down));
    CK(cudaEventRecord(t.b, s_down));
    CK(cudaEventSynchronize(t.b));
    CK(cudaEventElapsedTime(&ms[(size_t)r], t.a, t.b));
  }
  std::snprintf(what, sizeof what, "pinned D2H alone, %zu MiB", mib / 4);
  add_row("d2h-pinned", what, (double)hbytes, summarize(ms), false);

  /* Both at once: the upload on s_up, the download on s_down, started
   * together (s_down waits for the start event) and timed until both end.
   * Each direction is also timed on its own stream. */
  {
    cudaEvent_t up_end, down_start, down_end;
    CK(cudaEventCreate(&up_end));
    CK(cudaEventCreate(&down_start));
    CK(cudaEventCreate(&down_end));
    std::vector<float> ms_up((size_t)reps), ms_down((size_t)reps);
    for (int r = 0; r <= reps; r++) { /* r == 0: warm-up */
      CK(cudaEventRecord(t.a, s_up));
      CK(cudaStreamWaitEvent(s_down, t.a, 0));
      CK(cudaEventRecord(down_start, s_down));
      CK(cudaMemcpyAsync(d_a, h_up, hbytes, cudaMemcpyHostToDevice, s_up));
      CK(cudaMemcpyAsync(h_down, d_b, hbytes, cudaMemcpyDeviceToHost,
                         s_down));
      CK(cudaEventRecord(up_end, s_up));
      CK(cudaEventRecord(down_end, s_down));
      CK(cudaStreamWaitEvent(s_up, down_end, 0));
      CK(cudaEventRecord(t.b, s_up));
      CK(cudaEventSynchronize(t.b));
      if (r == 0)
        continue;
      CK(cudaEventElapsedTime(&ms[(size_t)r - 1], t.a, t.b));
      CK(cudaEventElapsedTime(&ms_up[(size_t)r - 1], t.a, up_end));
      CK(cudaEventElapsedTime(&ms_down[(size_t)r - 1], down_start,
                              down_end));
    }
    std::snprintf(what, sizeof what,
                  "pinned H2D + D2H together, 2 streams, %zu MiB each way",
                  mib / 4);
    add_row("both-pinned", what, 2.0 * hbytes, summarize(ms), false);
    add_row("both-pinned-h2d", "  its H2D part (own stream)", (double)hbytes,
            summarize(ms_up), false);
    add_row("both-pinned-d2h", "  its D2H part (own stream)", (double)hbytes,
            summarize(ms_down), false);
    CK(cudaEventDestroy(up_end));
    CK(cudaEventDestroy(down_start));
    CK(cudaEventDestroy(down_end));
  }
  {
    /* The download must have brought the device data back. */
    float want = 1.5f + (float)(777 & 1023) * 0.001f; /* d_b = d_a's fill */
    if (h_down[777] != want) {
      std::fprintf(stderr, "gpu_limits: D2H copy wrong: %g\n", h_down[777]);
      return 1;
    }
  }

  /* ---- FP32 FMA rate -------------------------------------------------- */
  int lanes = fp32_lanes_per_sm(p.major, p.minor);
  double peak_gflops =
      (double)p.multiProcessorCount * clock_khz * 1e3 * lanes * 2.0 / 1e9;
  int fma_threads = 256;
  int per_sm = std::max(1, p.maxThreadsPerMultiProcessor / fma_threads);
  int fma_blocks = p.multiProcessorCount * per_sm * 4; /* 4 full waves */
  int iters = quick ? 1024 : 4096;
  /* Aim for a launch of about 5 ms at the theoretical peak. */
  double fma_per_iter = (double)fma_blocks * fma_threads * 4 * FMA_CHAINS;
  if (peak_gflops > 0) {
    double want = 5e-3 * peak_gflops * 1e9 / 2.0;
    iters = (int)std::max(256.0, std::min(1e6, want / fma_per_iter));
  }
  double flops = 2.0 * fma_per_iter * iters;
  fma_kernel<<<fma_blocks, fma_threads>>>(d_a, iters, 0.9999f, 1e-4f);
  CKLAUNCH();
  CK(cudaDeviceSynchronize());
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(t.a));
    fma_kernel<<<fma_blocks, fma_threads>>>(d_a, iters, 0.9999f, 1e-4f);
    CKLAUNCH();
    CK(cudaEventRecord(t.b));
    CK(cudaEventSynchronize(t.b));
    CK(cudaEventElapsedTime(&ms[(size_t)r], t.a, t.b));
  }
  std::snprintf(what, sizeof what, "FMA chains, %d x %d threads, %d chains",
                fma_blocks, fma_threads, FMA_CHAINS);
  add_row("fp32-fma", what, flops, summarize(ms), true);

  /* ---- report --------------------------------------------------------- */
  std::printf("| limit | what | median ms | min ms | rate (median) | "
              "rate (best) |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
  for (const row &r : rows) {
    const char *unit = r.flops ? "GFLOP/s" : "GB/s";
    std::printf("| %s | %s | %.4f | %.4f | %.1f %s | %.1f %s |\n", r.name,
                r.what, r.s.med_ms, r.s.min_ms,
                r.bytes_or_flops / (r.s.med_ms * 1e-3) / 1e9, unit,
                r.bytes_or_flops / (r.s.min_ms * 1e-3) / 1e9, unit);
  }
  std::printf("| fp32-peak | %d SMs x %.0f MHz x %d lanes x 2 | | | "
              "%.1f GFLOP/s | |\n",
              p.multiProcessorCount, clock_khz / 1e3, lanes, peak_gflops);
  std::printf("\nD2D counts bytes read + written; H2D/D2H count bytes "
              "moved; 'together' counts both directions.\n\n");
  for (const row &r : rows)
    std::printf("RESULT case=limit-%s ms=%.6f %s=%.3f\n", r.name, r.s.med_ms,
                r.flops ? "gflops" : "gbps",
                r.bytes_or_flops / (r.s.med_ms * 1e-3) / 1e9);
  std::printf("RESULT case=limit-fp32-peak gflops=%.3f\n", peak_gflops);
  probe_cross_context(dev);

  CK(cudaStreamDestroy(s_up));
  CK(cudaStreamDestroy(s_down));
  CK(cudaFreeHost(h_up));
  CK(cudaFreeHost(h_down));
  CK(cudaFree(d_a));
  CK(cudaFree(d_b));
  return 0;
}
