// Uniformly partitioned overlap-save, the device side: the 2B input
// window, the frequency-domain delay line (FDL) push, the complex
// multiply-accumulate over partitions and routes, and the output
// extraction. cuFFT (R2C/C2R, batched over channels) runs between them,
// driven by the host (src/cuda/fir.c).
//
// The FDL of input c is a ring of pcap spectra; block j's spectrum sits at
// slot j % pcap, so partition p of a kernel pairs with slot (j - p) % pcap.
#include "cf_device.cuh"
#include "cf_kernels.h"

#define CMAC_BINS 32
#define CMAC_SPLIT 8

__global__ void cf_ols_window_kernel(float *__restrict__ xw,
                                     const float *__restrict__ ring,
                                     size_t rmask, unsigned channels,
                                     unsigned B,
                                     const unsigned long long *d_t)
{
  const long long t = (long long)*d_t;
  const size_t n = 2 * (size_t)B, total = n * channels;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    size_t c = i / n, k = i - c * n;
    long long tau = t - (long long)B + (long long)k;
    xw[i] = tau < 0 ? 0.0f
                    : ring[c * (rmask + 1) + ((unsigned long long)tau & rmask)];
  }
}

__global__ void cf_ols_push_kernel(float2 *__restrict__ fdl,
                                   const float2 *__restrict__ X,
                                   unsigned channels, unsigned B,
                                   unsigned pcap,
                                   const unsigned long long *d_t)
{
  const unsigned bins = B + 1;
  const size_t slot = (size_t)((*d_t / B) % pcap);
  const size_t total = (size_t)bins * channels;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    size_t c = i / bins, k = i - c * bins;
    fdl[(c * pcap + slot) * bins + k] = X[i];
  }
}

// Block (CMAC_BINS, CMAC_SPLIT): bins across x, partitions split across y
// and across grid.z groups; the y split is summed here in a fixed order,
// the groups by cf_ols_reduce_kernel (no atomics: replays are bit-equal).
__global__ void __launch_bounds__(CMAC_BINS *CMAC_SPLIT)
    cf_ols_cmac_kernel(float2 *__restrict__ partial,
                       const float2 *__restrict__ fdl,
                       const float2 *__restrict__ H,
                       const cf_ols_route *__restrict__ routes,
                       const unsigned *__restrict__ route_off, unsigned cout,
                       unsigned B, unsigned pcap, unsigned groups,
                       const unsigned long long *__restrict__ d_t)
{
  __shared__ float2 red[CMAC_SPLIT][CMAC_BINS + 1];
  const unsigned bins = B + 1;
  const unsigned k = blockIdx.x * CMAC_BINS + threadIdx.x;
  const unsigned o = blockIdx.y, g = blockIdx.z;
  const long long jm = (long long)((*d_t / B) % pcap);
  float ax = 0.0f, ay = 0.0f;
  if (k < bins) {
    const unsigned e_end = route_off[o + 1];
    for (unsigned e = route_off[o]; e < e_end; e++) {
      const cf_ols_route r = routes[e];
      const float2 *F = fdl + (size_t)r.in * pcap * bins + k;
      const float2 *Hk = H + r.hoff + k;
      for (unsigned p = g * CMAC_SPLIT + threadIdx.y; p < r.parts;
           p += groups * CMAC_SPLIT) {
        long long s = jm - (long long)p;
        if (s < 0)
          s += pcap;
        const float2 h = Hk[(size_t)p * bins];
        const float2 x = F[(size_t)s * bins];
        ax = fmaf(h.x, x.x, fmaf(-h.y, x.y, ax));
        ay = fmaf(h.x, x.y, fmaf(h.y, x.x, ay));
      }
    }
  }
  red[threadIdx.y][threadIdx.x] = make_float2(ax, ay);
  __syncthreads();
  if (threadIdx.y == 0 && k < bins) {
    float sx = 0.0f, sy = 0.0f;
CF_UNROLL
    for (int q = 0; q < CMAC_SPLIT; q++) {
      sx += red[q][threadIdx.x].x;
      sy += red[q][threadIdx.x].y;
    }
    partial[((size_t)g * cout + o) * bins + k] = make_float2(sx, sy);
  }
}

__global__ void cf_ols_reduce_kernel(float2 *__restrict__ Y,
                                     const float2 *__restrict__ partial,
                                     unsigned cout, unsigned bins,
                                     unsigned groups)
{
  const size_t n = (size_t)cout * bins;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float sx = 0.0f, sy = 0.0f;
    for (unsigned g = 0; g < groups; g++) {
      float2 v = partial[(size_t)g * n + i];
      sx += v.x;
      sy += v.y;
    }
    Y[i] = make_float2(sx, sy);
  }
}

__global__ void cf_ols_extract_kernel(float *__restrict__ y,
                                      const float *__restrict__ yw,
                                      unsigned cout, unsigned B, float scale)
{
  const size_t total = (size_t)B * cout;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    size_t f = i / cout, o = i - f * cout;
    y[i] = scale * yw[o * 2 * (size_t)B + B + f];
  }
}

static unsigned grid_for(size_t n, unsigned threads)
{
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b > 4096 ? 4096 : b ? b : 1);
}

extern "C" cudaError_t cf_k_ols_window(float *xw, const float *ring,
                                       size_t rmask, unsigned channels,
                                       unsigned B,
                                       const unsigned long long *d_t,
                                       cudaStream_t stream)
{
  CF_LAUNCH_NOSYNC(grid_for(2 * (size_t)B * channels, 256), 256, 0, stream,
                   cf_ols_window_kernel)(xw, ring, rmask, channels, B, d_t);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_ols_push(void *fdl, const void *X,
                                     unsigned channels, unsigned B,
                                     unsigned pcap,
                                     const unsigned long long *d_t,
                                     cudaStream_t stream)
{
  const unsigned grid = grid_for((size_t)(B + 1) * channels, 256);
  CF_LAUNCH_NOSYNC(grid, 256, 0, stream,
                   cf_ols_push_kernel)((float2 *)fdl, (const float2 *)X,
                                       channels, B, pcap, d_t);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_ols_cmac(void *partial, const void *fdl,
                                     const void *H,
                                     const cf_ols_route *routes,
                                     const unsigned *route_off, unsigned cout,
                                     unsigned B, unsigned pcap,
                                     unsigned groups,
                                     const unsigned long long *d_t,
                                     cudaStream_t stream)
{
  dim3 block(CMAC_BINS, CMAC_SPLIT);
  dim3 grid((B + 1 + CMAC_BINS - 1) / CMAC_BINS, cout, groups);
  CF_LAUNCH(grid, block, 0, stream,
            cf_ols_cmac_kernel)((float2 *)partial, (const float2 *)fdl,
                (const float2 *)H, routes, route_off, cout, B, pcap, groups,
                d_t);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_ols_reduce(void *Y, const void *partial,
                                       unsigned cout, unsigned B,
                                       unsigned groups, cudaStream_t stream)
{
  CF_LAUNCH_NOSYNC(grid_for((size_t)cout * (B + 1), 256), 256, 0, stream,
                   cf_ols_reduce_kernel)((float2 *)Y, (const float2 *)partial,
                       cout, B + 1, groups);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_ols_extract(float *y, const float *yw,
                                        unsigned cout, unsigned B,
                                        float scale, cudaStream_t stream)
{
  CF_LAUNCH_NOSYNC(grid_for((size_t)B * cout, 256), 256, 0, stream,
                   cf_ols_extract_kernel)(y, yw, cout, B, scale);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_ols_preload(void)
{
  return cf_preload_all(cf_ols_window_kernel, cf_ols_push_kernel,
                        cf_ols_cmac_kernel, cf_ols_reduce_kernel,
                        cf_ols_extract_kernel);
}
