// Direct 1D FIR for short kernels (latency 0), shared-memory tiled.
//
// A block of FIR_THREADS threads computes FIR_THREADS x RB consecutive
// outputs of one output channel, RB = 8, or 16 for launches large enough
// to fill the device with the larger tiles. For each route (input channel
// and kernel) and each segment of at most kseg taps it stages the tile's
// input plus the segment's halo once in dynamic shared memory (read from
// the device ring, so history is included), and each thread computes RB
// consecutive outputs. Taps go in steps of FIR_KU = 8: a step needs a
// window of RB + 7 inputs, of which all but 8 are the last step's, so a
// thread loads 8 new inputs (two float4 loads) per 8 RB multiply-adds and
// keeps the rest in registers (the steps of a chunk are unrolled, so the
// window shifts by renaming). The window of thread t starts at RB t + (a
// multiple of 8); stored in order, a quarter warp's float4 loads would
// fall on a fraction of the banks several times over. So the staged input
// is kept in RB / 4 planes: float4 chunk c of the staged input goes to
// plane c % (RB / 4), and each load of a quarter warp reads 128
// contiguous bytes. Taps come from the __constant__ pool (uniform loads at
// constant offsets from the segment's first tap) when they fit, else they
// are staged per segment in shared memory. Sums run in float over 64 taps
// and are collected in double, so long kernels meet the 1e-6 target.
//
// The streaming kernel (cf_fir1d_stream_kernel) takes launches where
// every output has one route of at most CF_FIR1D_STREAM_TAPS taps (shared
// and per-channel routing, up to CF_FIR1D_STREAM_COUT outputs): the tile
// and sums above, but the routes come in the launch's parameters (so its
// taps' offset is uniform: constant-pool taps are uniform loads, ULDC,
// not LDC), a block reads the device time once and then walks tiles
// gridDim.x apart, each tile's input loaded into registers while the one before is
// summed. The tiled kernel's block waits on three global loads in a row
// (time and routes, then the input) for 4 KiB of input: on the H200 it
// moved 42-57% of the device's copy rate at 16-64 taps. Up to 64 taps its
// sums stay in float (one chunk: the double collection rounds back to the
// same float).

#include <string.h>

#include "cf_device.cuh"
#include "cf_kernels.h"
#include "const_pool.cuh"

#define FIR_THREADS 128
#define FIR_KU 8
#define FIR_KSEG 2048u
#define FIR_DCHUNK 64u
#define FIR_STEPS (FIR_DCHUNK / FIR_KU) // steps of a chunk

static_assert(FIR_KU == CF_FIR1D_TAP_PAD, "taps are padded to the unroll");
static_assert(FIR_DCHUNK % FIR_KU == 0 && FIR_KSEG % FIR_KU == 0,
              "segments and chunks are whole steps");

// 8 or 16 outputs per thread in every launch, or 0: the rule of
// cf_kernels.h (cf_k_fir1d_set_width).
static int forced_width;

// The constant pool: 60 KiB shared by every engine of the process, handed
// out in granules of 64 taps.
#define CONST_TAPS 15360u
#define CONST_GRAIN 64u
__constant__ float cf_c_taps[CONST_TAPS];
static cf_const_pool<CONST_TAPS, CONST_GRAIN> const_pool;

// Staged floats for a segment of kseg taps: the tile, its halo, and the
// samples the last thread's first window reads past them, in whole rows
// of RB.
template <int RB> __host__ __device__ constexpr unsigned staged(unsigned kseg)
{
  return (FIR_THREADS * RB + kseg + RB - 1u) / RB * RB;
}
// The offset between planes: one plane's floats, rounded so that the
// planes start 32 / (RB / 4) banks apart (a warp's float4 chunks of
// staging then cover all 32 banks).
template <int RB> __host__ __device__ constexpr unsigned plane(unsigned kseg)
{
  return (staged<RB>(kseg) / (RB / 4) + 31u) / 32u * 32u + 32u / (RB / 4);
}
// Shared floats of a launch: the planes, then the staged taps (aligned).
template <int RB>
__host__ __device__ constexpr unsigned shared_floats(unsigned kseg, bool ct)
{
  return ((RB / 4 - 1) * plane<RB>(kseg) + staged<RB>(kseg) / (RB / 4) +
          3u) / 4u * 4u + (ct ? 0u : kseg);
}

// The largest launch (kseg = FIR_KSEG, taps staged) within the 48 KiB of
// dynamic shared memory a launch gets without cudaFuncSetAttribute.
static_assert(shared_floats<8>(FIR_KSEG, false) * sizeof(float) <= 48 * 1024 &&
                  shared_floats<16>(FIR_KSEG, false) * sizeof(float) <=
                      48 * 1024,
              "fir1d shared memory over 48 KiB");

// Where float4 chunk c of the staged input lives (RB / 4 planes).
template <int RB>
__device__ __forceinline__ float *chunk(float *xs, unsigned pl, unsigned c)
{
  return xs + (c % (RB / 4)) * pl + (c / (RB / 4)) * 4;
}

// The first float of input group g (staged inputs 8 g .. 8 g + 7: chunks
// 2 g and 2 g + 1, the second one plane further).
template <int RB>
__device__ __forceinline__ const float *group(const float *xs, unsigned pl,
                                              int g)
{
  return xs + (2 * g % (RB / 4)) * pl + (2 * g / (RB / 4)) * 4;
}

// The 8 inputs of the group at p into v[0..7].
__device__ __forceinline__ void load8(const float *p, unsigned pl, float *v)
{
  const float4 a = *reinterpret_cast<const float4 *>(p);
  const float4 b = *reinterpret_cast<const float4 *>(p + pl);
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
  v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

// Float4 chunk c of a staged segment: staged sample i is x[base + i], at
// ring index (r0 + i) & rm of the channel at xr; the first `lead` are
// before time 0 and the ones from nst on past the halo: zeros.
__device__ __forceinline__ float4 load_chunk(const float *xr, unsigned r0,
                                             unsigned rm, unsigned lead,
                                             unsigned nst, unsigned c)
{
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
  return make_float4(v[0], v[1], v[2], v[3]);
}

// The float sums over taps k1 .. k1 + FIR_DCHUNK - 1 (those below seglen)
// of the segment staged in xs (planes pl apart) with taps hseg, for the
// RB outputs from b: acc[j] (set here).
template <int RB>
__device__ __forceinline__ void chunk_sums(const float *xs, unsigned pl,
                                           unsigned b, unsigned seglen,
                                           unsigned k1, const float *hseg,
                                           float (&acc)[RB])
{
CF_UNROLL
  for (int j = 0; j < RB; j++)
    acc[j] = 0.0f;
  // taps kk0..kk0+7 read inputs i0..i0+RB+6, i0 = b + seglen - 8 -
  // kk0 (a multiple of 8): w[q] = staged[i0 + q]; each step loads
  // group i0 / 8 into w[0..7], at constant offsets from gp[0] (even
  // steps) or gp[1] (odd): groups of a parity step 16 / (RB / 4)
  // floats apart within their planes
  const int g0 = (int)(b + seglen - FIR_KU - k1) / 8;
  // (g0 = 0: one step only, gp[1] unused but kept inside xs)
  const float *gp[2] = {group<RB>(xs, pl, g0),
                        group<RB>(xs, pl, g0 > 0 ? g0 - 1 : 0)};
  float w[RB + 8];
CF_UNROLL
  for (int g = 1; g <= RB / 8; g++)
    load8(group<RB>(xs, pl, g0 + g), pl, w + 8 * g);
CF_UNROLL
  for (int st = 0; st < (int)FIR_STEPS; st++) {
    const unsigned kk0 = k1 + (unsigned)st * FIR_KU;
    if (kk0 >= seglen)
      break;
    if (st) // the window moves 8 inputs back: renamed, not copied
CF_UNROLL
      for (int q = RB + 7; q >= 8; q--)
        w[q] = w[q - 8];
    load8(gp[st % 2] - (16 / (RB / 4)) * (st / 2), pl, w);
    const float *h = hseg + kk0;
CF_UNROLL
    for (int u = 0; u < FIR_KU; u++) {
      const float hu = h[u];
CF_UNROLL
      for (int j = 0; j < RB; j++)
        acc[j] = fmaf(hu, w[j - u + FIR_KU - 1], acc[j]);
    }
  }
}

// The RB outputs from frame f0 of output o (those before `frames`).
template <int RB>
__device__ __forceinline__ void store_outputs(float *y, unsigned cout,
                                              unsigned o, unsigned frames,
                                              size_t f0, const float *out)
{
  if (cout == 1 && f0 + RB <= frames && ((uintptr_t)(y + f0) & 15u) == 0) {
    float4 *y4 = reinterpret_cast<float4 *>(y + f0);
CF_UNROLL
    for (int j = 0; j < RB; j += 4)
      y4[j / 4] = make_float4(out[j], out[j + 1], out[j + 2], out[j + 3]);
    return;
  }
CF_UNROLL
  for (int j = 0; j < RB; j++) {
    size_t f = f0 + (size_t)j;
    if (f < frames)
      y[f * cout + o] = out[j];
  }
}

template <int RB, bool CT>
__global__ void __launch_bounds__(FIR_THREADS)
    cf_fir1d_kernel(float *__restrict__ y, unsigned cout,
                    const float *__restrict__ ring, size_t rmask,
                    const unsigned long long *__restrict__ d_t,
                    unsigned frames, const cf_fir1d_route *__restrict__ routes,
                    const unsigned *__restrict__ route_off, unsigned kseg,
                    const float *__restrict__ taps)
{
  constexpr unsigned TILE = FIR_THREADS * RB;
  CF_DYN_SHARED(float4, sm4); // float4: the window loads are aligned
  float *xs = reinterpret_cast<float *>(sm4);
  const unsigned pl = plane<RB>(kseg);
  float *hs = xs + shared_floats<RB>(kseg, true);
  const unsigned o = blockIdx.y;
  const unsigned long long t = *d_t;
  const size_t tile0 = (size_t)blockIdx.x * TILE;
  const unsigned b = threadIdx.x * RB;
  // a thread whose outputs are all past the call's frames (a block shorter
  // than the tile) stages its share and keeps the barriers, but sums no
  // taps: its outputs are not stored
  const bool busy = tile0 + b < frames;
  double dacc[RB];
CF_UNROLL
  for (int j = 0; j < RB; j++)
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
      const unsigned nst = TILE + seglen - 1;
      // staged sample i is x[base + i], at ring index (r0 + i) & rm; the
      // first `lead` are before time 0 and the ones from nst on past the
      // halo: zeros (the launcher keeps the ring within 32-bit indices)
      const unsigned rm = (unsigned)rmask;
      const unsigned r0 = (unsigned)((unsigned long long)base & rmask);
      const unsigned lead =
          base >= 0 ? 0u : (unsigned)min(-base, (long long)nst);
      __syncthreads(); // the previous segment's reads are done
      // a thread stages a float4 chunk: four samples into one plane
      for (unsigned c = threadIdx.x; c < staged<RB>(seglen) / 4;
           c += FIR_THREADS)
        *reinterpret_cast<float4 *>(chunk<RB>(xs, pl, c)) =
            load_chunk(xr, r0, rm, lead, nst, c);
      if (!CT)
        for (unsigned i = threadIdx.x; i < seglen; i += FIR_THREADS)
          hs[i] = taps[r.off + seg0 + i];
      __syncthreads();
      const float *hseg = CT ? cf_c_taps + r.off + seg0 : hs;
      for (unsigned k1 = 0; busy && k1 < seglen; k1 += FIR_DCHUNK) {
        float acc[RB];
        chunk_sums<RB>(xs, pl, b, seglen, k1, hseg, acc);
CF_UNROLL
        for (int j = 0; j < RB; j++)
          dacc[j] += (double)acc[j];
      }
    }
  }
  float out[RB];
CF_UNROLL
  for (int j = 0; j < RB; j++)
    out[j] = (float)dacc[j];
  store_outputs<RB>(y, cout, o, frames, tile0 + b, out);
}

// ---- the streaming kernel -------------------------------------------------

#define FIR_STREAM_MAX_TAPS CF_FIR1D_STREAM_TAPS
// Resident blocks an SM the streaming kernel asks ptxas for: with 8
// outputs a thread, 8 (64 registers) with float sums, 6 (84) with the
// double collection, whose 16 more registers spilled at 64 on sm_90;
// with 16 (float sums only), 6.
#define FIR_STREAM_MIN_BLOCKS(rb, fsum) ((rb) == 8 && (fsum) ? 8 : 6)
// Blocks of a launch, all outputs together: about as many as are
// resident on the 132 SMs of an H100/H200 (fewer tiles: a block a tile).
#define FIR_STREAM_BLOCKS(rb, fsum) (128u * FIR_STREAM_MIN_BLOCKS(rb, fsum))
// The longest route of each width: 16 outputs a thread only with float
// sums (one chunk of taps).
template <int RB> __host__ __device__ constexpr unsigned stream_max_taps()
{
  return RB == 8 ? FIR_STREAM_MAX_TAPS : FIR_DCHUNK;
}
// Prefetch registers: float4 chunks a thread of the largest tile.
template <int RB> __host__ __device__ constexpr int stream_chunks()
{
  return (int)((staged<RB>(stream_max_taps<RB>()) / 4 + FIR_THREADS - 1) /
               FIR_THREADS);
}
static_assert(stream_chunks<8>() == 3 && stream_chunks<16>() == 5,
              "the streaming kernel's prefetch registers");
static_assert(FIR_STREAM_MAX_TAPS % FIR_KU == 0, "whole steps");

// Blocks per output in every streaming launch, or 0 (the rule above):
// cf_k_fir1d_set_stream_blocks, for the tests. Outputs per thread, or 0
// (8): cf_k_fir1d_set_stream_width, for the tests and benchmarks.
static unsigned forced_blocks;
static int forced_stream_width;

// Tile `tile`'s staged input (the route's taps reach back len - 1
// samples) into pre: chunk threadIdx.x + k FIR_THREADS in pre[k].
template <int RB>
__device__ __forceinline__ void
stream_load(const float *xr, unsigned rm, unsigned long long t, unsigned tile,
            unsigned len, unsigned nch, float4 (&pre)[stream_chunks<RB>()])
{
  constexpr unsigned TILE = FIR_THREADS * RB;
  const long long base = (long long)(t + (unsigned long long)tile * TILE) -
                         (long long)(len - 1);
  const unsigned nst = TILE + len - 1;
  const unsigned r0 = (unsigned)((unsigned long long)base & rm);
  const unsigned lead = base >= 0 ? 0u : (unsigned)min(-base, (long long)nst);
CF_UNROLL
  for (int k = 0; k < stream_chunks<RB>(); k++) {
    const unsigned c = threadIdx.x + (unsigned)k * FIR_THREADS;
    if (c < nch)
      pre[k] = load_chunk(xr, r0, rm, lead, nst, c);
  }
}

// Output o's route at r[o], by value in the launch's parameters.
struct fir_stream_routes {
  cf_fir1d_route r[CF_FIR1D_STREAM_COUT];
};

template <int RB, bool CT, bool FSUM>
__global__ void __launch_bounds__(FIR_THREADS, FIR_STREAM_MIN_BLOCKS(RB, FSUM))
    cf_fir1d_stream_kernel(float *__restrict__ y, unsigned cout,
                           const float *__restrict__ ring, size_t rmask,
                           const unsigned long long *__restrict__ d_t,
                           unsigned frames, const fir_stream_routes routes,
                           const float *__restrict__ taps)
{
  static_assert(RB == 8 || FSUM, "16 outputs a thread: float sums only");
  constexpr unsigned TILE = FIR_THREADS * RB;
  constexpr int NC = stream_chunks<RB>();
  CF_DYN_SHARED(float4, sm4); // float4: the window loads are aligned
  float *xs = reinterpret_cast<float *>(sm4);
  const unsigned o = blockIdx.y;
  const unsigned long long t = *d_t;
  const cf_fir1d_route r = routes.r[o];
  const unsigned len = r.len; // <= stream_max_taps<RB>(), whole steps
  const unsigned pl = plane<RB>(len);
  float *hs = xs + shared_floats<RB>(len, true);
  const float *xr = ring + (size_t)r.in * (rmask + 1);
  const unsigned rm = (unsigned)rmask;
  const unsigned nch = staged<RB>(len) / 4;
  const unsigned ntiles = (frames + TILE - 1) / TILE;
  const unsigned b = threadIdx.x * RB;
  if (!CT) // read after the first barrier
    for (unsigned i = threadIdx.x; i < len; i += FIR_THREADS)
      hs[i] = taps[r.off + i];
  const float *h = CT ? cf_c_taps + r.off : hs;
  float4 pre[NC];
  unsigned tile = blockIdx.x;
  stream_load<RB>(xr, rm, t, tile, len, nch, pre); // blockIdx.x < ntiles
  for (; tile < ntiles; tile += gridDim.x) {
    __syncthreads(); // the last tile's sums are done with xs
CF_UNROLL
    for (int k = 0; k < NC; k++) {
      const unsigned c = threadIdx.x + (unsigned)k * FIR_THREADS;
      if (c < nch)
        *reinterpret_cast<float4 *>(chunk<RB>(xs, pl, c)) = pre[k];
    }
    __syncthreads();
    if (tile + gridDim.x < ntiles) // in flight while this tile is summed
      stream_load<RB>(xr, rm, t, tile + gridDim.x, len, nch, pre);
    float out[RB];
    if (FSUM) {
      chunk_sums<RB>(xs, pl, b, len, 0, h, out);
    } else {
      double dacc[RB];
CF_UNROLL
      for (int j = 0; j < RB; j++)
        dacc[j] = 0.0;
      for (unsigned k1 = 0; k1 < len; k1 += FIR_DCHUNK) {
        float acc[RB];
        chunk_sums<RB>(xs, pl, b, len, k1, h, acc);
CF_UNROLL
        for (int j = 0; j < RB; j++)
          dacc[j] += (double)acc[j];
      }
CF_UNROLL
      for (int j = 0; j < RB; j++)
        out[j] = (float)dacc[j];
    }
    store_outputs<RB>(y, cout, o, frames, (size_t)tile * TILE + b, out);
  }
}

template <int RB, bool CT, bool FSUM>
static void stream_launch_as(float *y, unsigned cout, const float *ring,
                             size_t rmask, const unsigned long long *d_t,
                             unsigned frames,
                             const fir_stream_routes &routes,
                             unsigned max_len, const float *taps,
                             cudaStream_t stream)
{
  constexpr unsigned TILE = FIR_THREADS * RB;
  const unsigned ntiles = (frames + TILE - 1) / TILE;
  unsigned per = forced_blocks ? forced_blocks
                               : FIR_STREAM_BLOCKS(RB, FSUM) / cout;
  per = per < 1 ? 1 : per > ntiles ? ntiles : per;
  const dim3 grid(per, cout);
  const size_t shared = (size_t)shared_floats<RB>(max_len, CT) * sizeof(float);
  CF_LAUNCH(grid, FIR_THREADS, shared, stream,
            cf_fir1d_stream_kernel<RB, CT, FSUM>)(y, cout, ring, rmask, d_t,
                                                  frames, routes, taps);
}

static void stream_launch(float *y, unsigned cout, const float *ring,
                          size_t rmask, const unsigned long long *d_t,
                          unsigned frames, const cf_fir1d_route *host_routes,
                          unsigned max_len, const float *taps, int const_taps,
                          cudaStream_t stream)
{
  fir_stream_routes routes;
  memset(&routes, 0, sizeof routes);
  memcpy(routes.r, host_routes, cout * sizeof *host_routes);
  const bool fsum = max_len <= FIR_DCHUNK;
  // 8 outputs a thread unless 16 is asked for and the taps fit
  const bool w16 = forced_stream_width == 16 && fsum;
  if (w16 && const_taps)
    stream_launch_as<16, true, true>(y, cout, ring, rmask, d_t, frames,
                                     routes, max_len, taps, stream);
  else if (w16)
    stream_launch_as<16, false, true>(y, cout, ring, rmask, d_t, frames,
                                      routes, max_len, taps, stream);
  else if (const_taps && fsum)
    stream_launch_as<8, true, true>(y, cout, ring, rmask, d_t, frames, routes,
                                    max_len, taps, stream);
  else if (const_taps)
    stream_launch_as<8, true, false>(y, cout, ring, rmask, d_t, frames,
                                     routes, max_len, taps, stream);
  else if (fsum)
    stream_launch_as<8, false, true>(y, cout, ring, rmask, d_t, frames,
                                     routes, max_len, taps, stream);
  else
    stream_launch_as<8, false, false>(y, cout, ring, rmask, d_t, frames,
                                      routes, max_len, taps, stream);
}

template <int RB>
static void fir1d_launch(float *y, unsigned cout, const float *ring,
                         size_t rmask, const unsigned long long *d_t,
                         unsigned frames, const cf_fir1d_route *routes,
                         const unsigned *route_off, unsigned kseg,
                         const float *taps, int const_taps,
                         cudaStream_t stream)
{
  const size_t shared =
      (size_t)shared_floats<RB>(kseg, const_taps != 0) * sizeof(float);
  constexpr unsigned TILE = FIR_THREADS * RB;
  dim3 grid((frames + TILE - 1) / TILE, cout);
  if (const_taps)
    CF_LAUNCH(grid, FIR_THREADS, shared, stream,
              cf_fir1d_kernel<RB, true>)(y, cout, ring, rmask, d_t, frames,
                  routes, route_off, kseg, taps);
  else
    CF_LAUNCH(grid, FIR_THREADS, shared, stream,
              cf_fir1d_kernel<RB, false>)(y, cout, ring, rmask, d_t, frames,
                  routes, route_off, kseg, taps);
}

extern "C" cudaError_t cf_k_fir1d(float *y, unsigned cout, const float *ring,
                                  size_t rmask, const unsigned long long *d_t,
                                  unsigned frames,
                                  const cf_fir1d_route *routes,
                                  const unsigned *route_off, unsigned max_len,
                                  const float *taps, int const_taps,
                                  const cf_fir1d_route *host_routes,
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
  if (!forced_width && host_routes && cout <= CF_FIR1D_STREAM_COUT &&
      kseg <= FIR_STREAM_MAX_TAPS) {
    stream_launch(y, cout, ring, rmask, d_t, frames, host_routes, kseg, taps,
                  const_taps, stream);
    return cudaGetLastError();
  }
  const bool wide = forced_width ? forced_width == 16
                                 : (size_t)frames * cout >= CF_FIR1D_WIDE_MIN &&
                                       max_len > CF_FIR1D_WIDE_TAPS;
  if (wide)
    fir1d_launch<16>(y, cout, ring, rmask, d_t, frames, routes, route_off,
                     kseg, taps, const_taps, stream);
  else
    fir1d_launch<8>(y, cout, ring, rmask, d_t, frames, routes, route_off,
                    kseg, taps, const_taps, stream);
  return cudaGetLastError();
}

extern "C" void cf_k_fir1d_set_width(int per_thread)
{
  forced_width = per_thread == 8 || per_thread == 16 ? per_thread : 0;
}

extern "C" void cf_k_fir1d_set_stream_blocks(unsigned per_output)
{
  forced_blocks = per_output;
}

extern "C" void cf_k_fir1d_set_stream_width(int per_thread)
{
  forced_stream_width = per_thread == 8 || per_thread == 16 ? per_thread : 0;
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

extern "C" cudaError_t cf_k_fir1d_preload(void)
{
  return cf_preload_all(
      cf_fir1d_kernel<8, true>, cf_fir1d_kernel<8, false>,
      cf_fir1d_kernel<16, true>, cf_fir1d_kernel<16, false>,
      cf_fir1d_stream_kernel<8, true, true>,
      cf_fir1d_stream_kernel<8, true, false>,
      cf_fir1d_stream_kernel<8, false, true>,
      cf_fir1d_stream_kernel<8, false, false>,
      cf_fir1d_stream_kernel<16, true, true>,
      cf_fir1d_stream_kernel<16, false, true>);
}
