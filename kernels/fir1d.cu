// Direct 1D FIR for short kernels (latency 0), shared-memory tiled.
//
// A block computes FIR_TILE consecutive outputs of one output channel. For
// each route (input channel and kernel) and each segment of at most kseg
// taps it stages the tile's input plus the segment's halo once in dynamic
// shared memory (read from the device ring, so history is included), and
// each thread computes FIR_RB consecutive outputs: a window of FIR_RB +
// FIR_KU - 1 inputs in registers serves FIR_KU taps (one shared load per
// FIR_RB multiply-adds). The staged row is padded by one float every 32 so
// that the stride-FIR_RB reads of a warp hit 32 different banks. Taps come
// from the __constant__ pool (broadcast) when they fit, else they are
// staged per segment in shared memory. Sums run in float over 64 taps and
// are collected in double, so long kernels meet the 1e-6 target.

#include "cf_device.cuh"
#include "cf_kernels.h"
#include "const_pool.cuh"

#define FIR_THREADS 128
#define FIR_RB 8
#define FIR_KU 8
#define FIR_TILE (FIR_THREADS * FIR_RB)
#define FIR_KSEG 2048u
#define FIR_DCHUNK 64u

static_assert(FIR_KU == CF_FIR1D_TAP_PAD, "taps are padded to the unroll");

// The constant pool: 60 KiB shared by every engine of the process, handed
// out in granules of 64 taps.
#define CONST_TAPS 15360u
#define CONST_GRAIN 64u
__constant__ float cf_c_taps[CONST_TAPS];
static cf_const_pool<CONST_TAPS, CONST_GRAIN> const_pool;

__host__ __device__ constexpr unsigned padded(unsigned i)
{
  return i + (i >> 5);
}

// The largest launch (kseg = FIR_KSEG, taps staged) within the 48 KiB of
// dynamic shared memory a launch gets without cudaFuncSetAttribute.
static_assert((padded(FIR_TILE + FIR_KSEG - 1) + 1 + FIR_KSEG) *
                      sizeof(float) <= 48 * 1024,
              "fir1d shared memory over 48 KiB");

template <bool CT>
__global__ void __launch_bounds__(FIR_THREADS)
    cf_fir1d_kernel(float *__restrict__ y, unsigned cout,
                    const float *__restrict__ ring, size_t rmask,
                    const unsigned long long *__restrict__ d_t,
                    unsigned frames, const cf_fir1d_route *__restrict__ routes,
                    const unsigned *__restrict__ route_off, unsigned kseg,
                    const float *__restrict__ taps)
{
  CF_DYN_SHARED(float, sm);
  float *xs = sm;
  float *hs = sm + padded(FIR_TILE + kseg - 1) + 1;
  const unsigned o = blockIdx.y;
  const unsigned long long t = *d_t;
  const size_t tile0 = (size_t)blockIdx.x * FIR_TILE;
  const int b = (int)(threadIdx.x * FIR_RB);
  double dacc[FIR_RB];
CF_UNROLL
  for (int j = 0; j < FIR_RB; j++)
    dacc[j] = 0.0;

  const unsigned e_end = route_off[o + 1];
  for (unsigned e = route_off[o]; e < e_end; e++) {
    const cf_fir1d_route r = routes[e];
    const float *xr = ring + (size_t)r.in * (rmask + 1);
    for (unsigned seg0 = 0; seg0 < r.len; seg0 += kseg) {
      const unsigned seglen = min(kseg, r.len - seg0);
      const long long base =
          (long long)(t + tile0) - (long long)seg0 - (long long)(seglen - 1);
      const unsigned nst = FIR_TILE + seglen - 1;
      __syncthreads(); // the previous segment's reads are done
      for (unsigned i = threadIdx.x; i < nst; i += FIR_THREADS) {
        long long tau = base + (long long)i;
        xs[padded(i)] =
            tau < 0 ? 0.0f : xr[(unsigned long long)tau & rmask];
      }
      if (!CT)
        for (unsigned i = threadIdx.x; i < seglen; i += FIR_THREADS)
          hs[i] = taps[r.off + seg0 + i];
      __syncthreads();
      const int c = (int)seglen - 1;
      for (unsigned k1 = 0; k1 < seglen; k1 += FIR_DCHUNK) {
        const unsigned kend = min(seglen, k1 + FIR_DCHUNK);
        float acc[FIR_RB];
CF_UNROLL
        for (int j = 0; j < FIR_RB; j++)
          acc[j] = 0.0f;
        for (unsigned kk0 = k1; kk0 < kend; kk0 += FIR_KU) {
          float v[FIR_RB + FIR_KU - 1];
          const int i0 = b + c - (int)kk0 - FIR_KU + 1;
CF_UNROLL
          for (int q = 0; q < FIR_RB + FIR_KU - 1; q++)
            v[q] = xs[padded((unsigned)(i0 + q))];
CF_UNROLL
          for (int u = 0; u < FIR_KU; u++) {
            const float h = CT ? cf_c_taps[r.off + seg0 + kk0 + u]
                               : hs[kk0 + u];
CF_UNROLL
            for (int j = 0; j < FIR_RB; j++)
              acc[j] = fmaf(h, v[j - u + FIR_KU - 1], acc[j]);
          }
        }
CF_UNROLL
        for (int j = 0; j < FIR_RB; j++)
          dacc[j] += (double)acc[j];
      }
    }
  }
CF_UNROLL
  for (int j = 0; j < FIR_RB; j++) {
    size_t f = tile0 + (size_t)b + (size_t)j;
    if (f < frames)
      y[f * cout + o] = (float)dacc[j];
  }
}

extern "C" cudaError_t cf_k_fir1d(float *y, unsigned cout, const float *ring,
                                  size_t rmask, const unsigned long long *d_t,
                                  unsigned frames,
                                  const cf_fir1d_route *routes,
                                  const unsigned *route_off, unsigned max_len,
                                  const float *taps, int const_taps,
                                  cudaStream_t stream)
{
  if (frames == 0 || cout == 0)
    return cudaSuccess;
  unsigned kseg = max_len < FIR_KSEG ? max_len : FIR_KSEG;
  if (kseg < FIR_KU)
    kseg = FIR_KU;
  size_t shared = (size_t)(padded(FIR_TILE + kseg - 1) + 1) * sizeof(float);
  if (!const_taps)
    shared += (size_t)kseg * sizeof(float);
  dim3 grid((frames + FIR_TILE - 1) / FIR_TILE, cout);
  if (const_taps)
    CF_LAUNCH(grid, FIR_THREADS, shared, stream,
              cf_fir1d_kernel<true>)(y, cout, ring, rmask, d_t, frames, routes,
                  route_off, kseg, taps);
  else
    CF_LAUNCH(grid, FIR_THREADS, shared, stream,
              cf_fir1d_kernel<false>)(y, cout, ring, rmask, d_t, frames, routes,
                  route_off, kseg, taps);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_fir1d_const_put(const float *host_taps, size_t n,
                                 size_t *off, int *placed)
{
  return const_pool.put(cf_c_taps, host_taps, n, off, placed);
}

extern "C" void cf_k_fir1d_const_drop(size_t off, size_t n)
{
  const_pool.drop(off, n);
}
