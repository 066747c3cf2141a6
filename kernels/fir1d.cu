// Direct 1D FIR for short kernels (latency 0), shared-memory tiled.
//
// A block computes FIR_TILE consecutive outputs of one output channel. For
// each route (input channel and kernel) and each segment of at most kseg
// taps it stages the tile's input plus the segment's halo once in dynamic
// shared memory (read from the device ring, so history is included), and
// each thread computes FIR_RB = 8 consecutive outputs. Taps go in steps of
// FIR_KU = 8: a step needs a window of 15 inputs, of which 8 are the last
// step's, so a thread loads 8 new inputs (two float4 loads) per 64
// multiply-adds and keeps the rest in registers. The window of thread t
// starts at 8 t + (a multiple of 8); stored in order, a quarter warp's
// float4 loads would fall on half the banks twice. So the staged input is
// kept in two planes: the first four of each 8 samples in one, the last
// four in the other, and each load of a quarter warp reads 128 contiguous
// bytes. Taps come from the __constant__ pool (uniform loads at constant
// offsets from the segment's first tap) when they fit, else they are
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
static_assert(FIR_RB == 8 && FIR_KU == 8,
              "the window and the planes are written for 8 x 8");
static_assert(FIR_DCHUNK % FIR_KU == 0 && FIR_KSEG % FIR_KU == 0,
              "segments and chunks are whole steps");

// The constant pool: 60 KiB shared by every engine of the process, handed
// out in granules of 64 taps.
#define CONST_TAPS 15360u
#define CONST_GRAIN 64u
__constant__ float cf_c_taps[CONST_TAPS];
static cf_const_pool<CONST_TAPS, CONST_GRAIN> const_pool;

// Staged floats for a segment of kseg taps: the tile, its halo, and the
// sample the last thread's first window reads past them, in whole rows of 8.
__host__ __device__ constexpr unsigned staged(unsigned kseg)
{
  return (FIR_TILE + kseg + 7u) / 8u * 8u;
}
// The offset of the second plane: past the first, and 16 banks from it, so
// that a warp's 32 consecutive staged samples go to 32 banks.
__host__ __device__ constexpr unsigned plane(unsigned kseg)
{
  return (staged(kseg) / 2u + 31u) / 32u * 32u + 16u;
}
// Staged sample i lives in plane (i >> 2) & 1 (at xs or xs + pl), at
// (i >> 3) * 4 + (i & 3) in it.
// Shared floats of a launch: both planes, then the staged taps (aligned).
__host__ __device__ constexpr unsigned shared_floats(unsigned kseg, bool ct)
{
  return (plane(kseg) + staged(kseg) / 2u + 3u) / 4u * 4u + (ct ? 0u : kseg);
}

// The largest launch (kseg = FIR_KSEG, taps staged) within the 48 KiB of
// dynamic shared memory a launch gets without cudaFuncSetAttribute.
static_assert(shared_floats(FIR_KSEG, false) * sizeof(float) <= 48 * 1024,
              "fir1d shared memory over 48 KiB");

// The 8 inputs from staged index i (a multiple of 8) on.
__device__ __forceinline__ void load8(const float *xs, unsigned pl,
                                      unsigned i, float (&v)[8])
{
  const float4 a = *reinterpret_cast<const float4 *>(xs + i / 2);
  const float4 b = *reinterpret_cast<const float4 *>(xs + pl + i / 2);
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
  v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

template <bool CT>
__global__ void __launch_bounds__(FIR_THREADS)
    cf_fir1d_kernel(float *__restrict__ y, unsigned cout,
                    const float *__restrict__ ring, size_t rmask,
                    const unsigned long long *__restrict__ d_t,
                    unsigned frames, const cf_fir1d_route *__restrict__ routes,
                    const unsigned *__restrict__ route_off, unsigned kseg,
                    const float *__restrict__ taps)
{
  CF_DYN_SHARED(float4, sm4); // float4: the window loads are aligned
  float *xs = reinterpret_cast<float *>(sm4);
  const unsigned pl = plane(kseg);
  float *hs = xs + shared_floats(kseg, true);
  const unsigned o = blockIdx.y;
  const unsigned long long t = *d_t;
  const size_t tile0 = (size_t)blockIdx.x * FIR_TILE;
  const unsigned b = threadIdx.x * FIR_RB;
  double dacc[FIR_RB];
CF_UNROLL
  for (int j = 0; j < FIR_RB; j++)
    dacc[j] = 0.0;

  const unsigned e_end = route_off[o + 1];
  for (unsigned e = route_off[o]; e < e_end; e++) {
    const cf_fir1d_route r = routes[e];
    const float *xr = ring + (size_t)r.in * (rmask + 1);
    for (unsigned seg0 = 0; seg0 < r.len; seg0 += kseg) {
      // a multiple of FIR_KU (the route's len and kseg are)
      const unsigned seglen = min(kseg, r.len - seg0);
      const long long base =
          (long long)(t + tile0) - (long long)seg0 - (long long)(seglen - 1);
      const unsigned nst = FIR_TILE + seglen - 1;
      // staged sample i is x[base + i], at ring index (r0 + i) & rm; the
      // first `lead` are before time 0 and the ones from nst on past the
      // halo: zeros (the launcher keeps the ring within 32-bit indices)
      const unsigned rm = (unsigned)rmask;
      const unsigned r0 = (unsigned)((unsigned long long)base & rmask);
      const unsigned lead =
          base >= 0 ? 0u : (unsigned)min(-base, (long long)nst);
      __syncthreads(); // the previous segment's reads are done
      // a thread stages a float4 chunk: four samples into one plane
      for (unsigned c = threadIdx.x; c < staged(seglen) / 4;
           c += FIR_THREADS) {
        float v[4];
        const unsigned i0 = 4 * c, q0 = (r0 + i0) & rm;
        if (i0 >= lead && i0 + 3 < nst && q0 + 3 <= rm) {
          const float *p = xr + q0; // all four in range, none wrapping
CF_UNROLL
          for (unsigned k = 0; k < 4; k++)
            v[k] = p[k];
        } else {
CF_UNROLL
          for (unsigned k = 0; k < 4; k++) {
            const unsigned i = i0 + k;
            v[k] = i < lead || i >= nst ? 0.0f : xr[(r0 + i) & rm];
          }
        }
        *reinterpret_cast<float4 *>(xs + (c & 1u) * pl + (c >> 1) * 4) =
            make_float4(v[0], v[1], v[2], v[3]);
      }
      if (!CT)
        for (unsigned i = threadIdx.x; i < seglen; i += FIR_THREADS)
          hs[i] = taps[r.off + seg0 + i];
      __syncthreads();
      const float *hseg = CT ? cf_c_taps + r.off + seg0 : hs;
      for (unsigned k1 = 0; k1 < seglen; k1 += FIR_DCHUNK) {
        const unsigned kend = min(seglen, k1 + FIR_DCHUNK);
        float acc[FIR_RB];
CF_UNROLL
        for (int j = 0; j < FIR_RB; j++)
          acc[j] = 0.0f;
        // taps kk0..kk0+7 read inputs i0..i0+14, i0 = b + seglen - 8 - kk0
        unsigned i0 = b + seglen - FIR_KU - k1;
        float hi[8];
        load8(xs, pl, i0 + 8, hi);
CF_UNROLL2 // no copies of lo into hi: the two swap roles
        for (unsigned kk0 = k1; kk0 < kend; kk0 += FIR_KU, i0 -= FIR_KU) {
          float lo[8];
          load8(xs, pl, i0, lo);
          const float *h = hseg + kk0;
CF_UNROLL
          for (int u = 0; u < FIR_KU; u++) {
            const float hu = h[u];
CF_UNROLL
            for (int j = 0; j < FIR_RB; j++) {
              const int q = j - u + FIR_KU - 1; // window index, 0..14
              acc[j] = fmaf(hu, q < 8 ? lo[q] : hi[q - 8], acc[j]);
            }
          }
CF_UNROLL
          for (int q = 0; q < 8; q++)
            hi[q] = lo[q];
        }
CF_UNROLL
        for (int j = 0; j < FIR_RB; j++)
          dacc[j] += (double)acc[j];
      }
    }
  }
  const size_t f0 = tile0 + b;
  if (cout == 1 && f0 + FIR_RB <= frames &&
      ((uintptr_t)(y + f0) & 15u) == 0) {
    float4 *y4 = reinterpret_cast<float4 *>(y + f0);
    y4[0] = make_float4((float)dacc[0], (float)dacc[1], (float)dacc[2],
                        (float)dacc[3]);
    y4[1] = make_float4((float)dacc[4], (float)dacc[5], (float)dacc[6],
                        (float)dacc[7]);
    return;
  }
CF_UNROLL
  for (int j = 0; j < FIR_RB; j++) {
    size_t f = f0 + (size_t)j;
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
  if (rmask > 0xffffffffu) // the kernel indexes a channel's ring in 32 bits
    return cudaErrorInvalidValue;
  unsigned kseg = max_len < FIR_KSEG ? max_len : FIR_KSEG;
  if (kseg < FIR_KU)
    kseg = FIR_KU;
  kseg = (kseg + FIR_KU - 1) / FIR_KU * FIR_KU; // whole steps
  const size_t shared =
      (size_t)shared_floats(kseg, const_taps != 0) * sizeof(float);
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
