// 2D and temporal (3D) convolution of one video component (the contract is
// include/cudafilter/video.h; the arguments are in cf_kernels.h).
//
// Generic direct (kernels wider than 64, or CF_CONV2D_KERNEL=generic): a
// block of 32 x 8 threads owns an output tile of 32 x 32 pixels
// (each thread 4 rows, 8 apart: register blocking with conflict-free
// shared loads). For each temporal slice it stages the tile plus the
// (kh - 1) x (kw - 1) halo once in dynamic shared memory, converting the
// samples to float and applying the border mode as it loads; kernels
// larger than KC x KC are staged in KC x KC pieces of taps (same sums,
// 64 KiB-free shared memory). Taps come from a __constant__ pool when they
// fit (broadcast to the warp), else from global memory (one address per
// warp: L1 broadcast).
//
// Register-blocked (conv2d_rb.cuh): odd widths 3..15 and heights up to
// 16 take a kernel whose threads hold 8 x 4 outputs and reuse each staged
// sample from registers, so that the FMAs, not shared memory, set its pace.
// Other widths up to 64 (any height) take its "wide" variant: the same
// tile, the taps four columns at a time, the rows in staged pieces.
//
// Register-blocked with the taps as parameters (conv2d_rbk.cuh): square
// odd kernels 3..15 of one slice, when the caller has the taps in host
// memory (args.taps_host): every loop unrolled, the taps at constant
// offsets of the launch's parameters (uniform registers), threads of
// 4 x 4 outputs.
//
// Separable: a row pass into a float band (kh - 1 rows of halo) and a
// column pass that stores, both with the same border and store rules.

#include <string.h>

#include "cf_device.cuh"
#include "cf_kernels.h"
#include "const_pool.cuh"
#include "conv2d_common.cuh"
#include "conv2d_rb.cuh"
#include "conv2d_rbk.cuh"

#define TW 32             // tile width = threads in x
#define TY 8              // threads in y
#define RY 4              // output rows per thread
#define TH (TY * RY)      // tile height
#define KC 64             // kernel rows / columns staged at once
#define CONST_TAPS 8192   // 32 KiB constant pool for video taps
#define CONST_GRAIN 64
#define ROW_T 256         // row pass: outputs per block
#define ROW_KC 1024       // row pass: taps staged at once
#define COL_RY 4          // column pass: rows per thread

// Dynamic shared memory stays within the 48 KiB a launch gets without
// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize).
static_assert((TW + KC - 1) * (TH + KC - 1) * sizeof(float) <= 48 * 1024,
              "conv2d tile over 48 KiB");
static_assert((ROW_T + ROW_KC - 1) * sizeof(float) <= 48 * 1024,
              "row pass over 48 KiB");

__constant__ float cf_c2d_taps[CONST_TAPS];
static cf_const_pool<CONST_TAPS, CONST_GRAIN> const_pool;

// Host-side check of tile_rows_read against the definition, for piece
// heights at the edges (and every number of rows left in the tile).
template <int T> constexpr bool tile_rows_read_ok()
{
  constexpr int mcs[] = {1, 2, 3, 7, T - 1, T, T + 1, KC - 1, KC};
  for (int mc : mcs)
    for (int left = 1; left <= T + 2; left++) {
      const int sh = T + mc - 1;
      int need = 0; // 1 + the last staged row an output below row1 reads
      for (int li = 0; li < T && li < left; li++)
        for (int mm = 0; mm < mc; mm++)
          need = li + mc - 1 - mm + 1 > need ? li + mc - 1 - mm + 1 : need;
      if (tile_rows_read(sh, mc, left) != need)
        return false;
    }
  return true;
}
static_assert(tile_rows_read_ok<TH>() && tile_rows_read_ok<RB_TH>(),
              "tile rows read");

template <bool CT>
__global__ void __launch_bounds__(TW *TY)
    conv2d_kernel(const cf_conv2d_args a, const float *__restrict__ taps,
                  unsigned toff)
{
  CF_DYN_SHARED(float, sm);
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
  const int tid = ty * TW + tx;
  const int x0 = (int)(blockIdx.x * TW);
  const int y0 = (int)(a.row0 + blockIdx.y * TH);
  float acc[RY];
CF_UNROLL
  for (int j = 0; j < RY; j++)
    acc[j] = 0.0f;
  const unsigned kh = a.kh, kw = a.kw;
  for (unsigned tau = 0; tau < a.nt; tau++) {
    const unsigned char *base = slice_base(a, tau);
    const unsigned tbase = toff + tau * kh * kw;
    for (unsigned m0 = 0; m0 < kh; m0 += KC) {
      const int mc = (int)min(KC, kh - m0);
      for (unsigned n0 = 0; n0 < kw; n0 += KC) {
        const int nc = (int)min(KC, kw - n0);
        const int sw = TW + nc - 1, sh = TH + mc - 1;
        // s[r][c] = X[vy0 + r][vx0 + c]: output row y0 + li with kernel
        // row m0 + mm reads r = li + mc - 1 - mm (columns alike).
        const int vy0 = y0 + (int)a.cy - (int)(m0 + mc - 1);
        const int vx0 = x0 + (int)a.cx - (int)(n0 + nc - 1);
        // Rows from rlim on feed only outputs at or past row1 (the last
        // tile of a band): they are not read, as in live mode their band
        // may not be uploaded yet (a race with its copy, and on the first
        // frames an uninitialised read for compute-sanitizer initcheck).
        const int rlim = tile_rows_read(sh, mc, (int)a.row1 - y0);
        __syncthreads(); // the previous piece's readers are done
        for (int i = tid; i < sw * sh; i += TW * TY) {
          int r = i / sw, c = i - r * sw;
          sm[i] = r < rlim ? load_sample(a, base, vx0 + c, vy0 + r) : 0.0f;
        }
        __syncthreads();
        for (int mm = 0; mm < mc; mm++) {
          const float *trow = CT ? cf_c2d_taps + tbase + (m0 + mm) * kw + n0
                                 : taps + tbase + (m0 + mm) * kw + n0;
          const float *srow = sm + (ty + mc - 1 - mm) * sw + tx + nc - 1;
          // walked by pointers: the unrolled loads take constant offsets
          for (int nn = 0; nn < nc; nn++, trow++, srow--) {
            const float k = CT ? *trow : __ldg(trow);
CF_UNROLL
            for (int j = 0; j < RY; j++)
              acc[j] = fmaf(k, srow[j * TY * sw], acc[j]);
          }
        }
      }
    }
  }
  const unsigned x = (unsigned)(x0 + tx);
  if (x >= a.w)
    return;
CF_UNROLL
  for (int j = 0; j < RY; j++) {
    const unsigned y = (unsigned)(y0 + ty + j * TY);
    if (y < a.row1)
      store_pixel(a, x, y, acc[j]);
  }
}

// ---- register-blocked (conv2d_rb.cuh) -------------------------------------

struct rb_const_taps {
  const float *p; // into cf_c2d_taps
  __device__ rb_const_taps row(int i) const { return {p + i}; }
  __device__ float operator()(int i) const { return p[i]; }
};

// Blocks per SM the register-blocked kernel asks ptxas to allow for.
// Without a number, ptxas 13 on sm_80 squeezes the small widths (3..9)
// into 64 registers and spills 8 bytes (8 blocks of 128 threads); 7
// blocks allow 73, and it takes 70-72 with no spill, as the wider ones
// take anyway (one block less per SM, 28 warps, for a kernel whose FMAs
// come from registers). sm_90 is left to ptxas (54-71, no spill): the
// hint there would raise its registers for nothing. tests/kernel_spills.py
// checks every kernel of every architecture we build for.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define RB_MIN_BLOCKS 7
#else
#define RB_MIN_BLOCKS 0
#endif

template <int KW, bool CT>
__global__ void __launch_bounds__(RB_TX *RB_TY, RB_MIN_BLOCKS)
    conv2d_rb_kernel(const cf_conv2d_args a, const float *__restrict__ taps,
                     unsigned toff)
{
  CF_DYN_SHARED(float4, sm4); // float4: the rows' loads are aligned
  float *sm = reinterpret_cast<float *>(sm4);
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
  const int x0 = (int)(blockIdx.x * RB_TW);
  const int y0 = (int)(a.row0 + blockIdx.y * RB_TH);
  const int kh = (int)a.kh;
  const int rlim = tile_rows_read(RB_TH + kh - 1, kh, (int)a.row1 - y0);
  float acc[RB_RY][RB_RX];
CF_UNROLL
  for (int j = 0; j < RB_RY; j++)
CF_UNROLL
    for (int i = 0; i < RB_RX; i++)
      acc[j][i] = 0.0f;
  for (unsigned tau = 0; tau < a.nt; tau++) {
    if (tau)
      __syncthreads(); // the previous slice's readers are done
    rb_stage<KW>(a, slice_base(a, tau), sm, tx, ty, x0, y0, rlim);
    __syncthreads();
    const unsigned tb = toff + tau * (unsigned)kh * KW;
    if (CT)
      rb_compute<KW>(sm, tx, ty, kh, rb_const_taps{cf_c2d_taps + tb}, acc);
    else
      rb_compute<KW>(sm, tx, ty, kh, rb_global_taps{taps + tb}, acc);
  }
  rb_store(a, x0, y0, tx, ty, acc);
}

template <int KW>
static void rb_launch(const cf_conv2d_args *a, const float *taps,
                      int const_taps, size_t const_off, cudaStream_t stream)
{
  dim3 block(RB_TX, RB_TY);
  dim3 grid((a->w + RB_TW - 1) / RB_TW,
            (a->row1 - a->row0 + RB_TH - 1) / RB_TH);
  size_t smem = rb_smem(KW, (int)a->kh);
  if (const_taps)
    CF_LAUNCH(grid, block, smem, stream,
              conv2d_rb_kernel<KW, true>)(*a, nullptr, (unsigned)const_off);
  else
    CF_LAUNCH(grid, block, smem, stream,
              conv2d_rb_kernel<KW, false>)(*a, taps, 0u);
}

// ---- register-blocked, taps as parameters (conv2d_rbk.cuh) ---------------

// Four blocks of 256 threads an SM (64 registers a thread): a 1080p plane
// is 510 tiles, one wave on 132 SMs only if 4 fit.
#define RBK_MIN_BLOCKS 4

template <int K>
__global__ void __launch_bounds__(RBK_THREADS, RBK_MIN_BLOCKS)
    conv2d_rbk_kernel(const cf_conv2d_args a, const rbk_taps<K> tp)
{
  CF_DYN_SHARED(float4, sm4); // float4: the windows' loads are aligned
  float *sm = reinterpret_cast<float *>(sm4);
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
  const int x0 = (int)(blockIdx.x * RBK_TW);
  const int y0 = (int)(a.row0 + blockIdx.y * RBK_TH);
  const int rlim = tile_rows_read(RBK_TH + K - 1, K, (int)a.row1 - y0);
  rbk_stage<K>(a, slice_base(a, 0), sm, ty * RBK_TX + tx, x0, y0, rlim);
  __syncthreads();
  float acc[RBK_RY][RBK_RX];
CF_UNROLL
  for (int j = 0; j < RBK_RY; j++)
CF_UNROLL
    for (int i = 0; i < RBK_RX; i++)
      acc[j][i] = 0.0f;
  rbk_compute<K>(sm, tx, ty, tp, acc);
  rbk_store(a, x0, y0, tx, ty, acc);
}

template <int K> static void rbk_launch(const cf_conv2d_args *a,
                                        cudaStream_t stream)
{
  rbk_taps<K> tp;
  memcpy(tp.t, a->taps_host, sizeof tp.t);
  dim3 block(RBK_TX, RBK_TY);
  dim3 grid((a->w + RBK_TW - 1) / RBK_TW,
            (a->row1 - a->row0 + RBK_TH - 1) / RBK_TH);
  CF_LAUNCH(grid, block, rbk_smem(K), stream, conv2d_rbk_kernel<K>)(*a, tp);
}

template <bool CT>
__global__ void __launch_bounds__(RB_TX *RB_TY)
    conv2d_rbw_kernel(const cf_conv2d_args a, const float *__restrict__ taps,
                      unsigned toff)
{
  CF_DYN_SHARED(float4, sm4); // float4: the windows' loads are aligned
  float *sm = reinterpret_cast<float *>(sm4);
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
  const int x0 = (int)(blockIdx.x * RB_TW);
  const int y0 = (int)(a.row0 + blockIdx.y * RB_TH);
  const int kh = (int)a.kh, kw = (int)a.kw, kwp = rbw_kwp(kw);
  const int kc = rbw_kc(kwp);
  float acc[RB_RY][RB_RX];
CF_UNROLL
  for (int j = 0; j < RB_RY; j++)
CF_UNROLL
    for (int i = 0; i < RB_RX; i++)
      acc[j][i] = 0.0f;
  bool first = true;
  for (unsigned tau = 0; tau < a.nt; tau++) {
    const unsigned char *base = slice_base(a, tau);
    const unsigned tb = toff + tau * (unsigned)kh * (unsigned)kw;
    for (int m0 = 0; m0 < kh; m0 += kc) {
      const int mc = kh - m0 < kc ? kh - m0 : kc;
      const int rlim =
          tile_rows_read(RB_TH + mc - 1, mc, (int)a.row1 - y0);
      if (!first)
        __syncthreads(); // the previous piece's readers are done
      first = false;
      rbw_stage(a, base, sm, ty * RB_TX + tx, x0, y0, m0, mc, kwp, rlim);
      __syncthreads();
      const unsigned t0 = tb + (unsigned)m0 * (unsigned)kw;
      if (CT)
        rbw_compute(sm, tx, ty, mc, kw, kwp,
                    rb_const_taps{cf_c2d_taps + t0}, acc);
      else
        rbw_compute(sm, tx, ty, mc, kw, kwp, rb_global_taps{taps + t0},
                    acc);
    }
  }
  rb_store(a, x0, y0, tx, ty, acc);
}

extern "C" int cf_k_conv2d_blocked(unsigned kw, unsigned kh)
{
  return rb_fits(kw, kh) ? 1 : rbw_fits(kw, kh) ? 2 : 0;
}

extern "C" int cf_k_conv2d_param_taps(unsigned kw, unsigned kh, unsigned nt)
{
  return rbk_fits(kw, kh, nt);
}

extern "C" cudaError_t cf_k_conv2d(const cf_conv2d_args *a, const float *taps,
                                   int const_taps, size_t const_off,
                                   cudaStream_t stream)
{
  if (a->row1 <= a->row0 || a->w == 0 || a->nt == 0)
    return cudaSuccess;
  if (!a->generic && a->taps_host &&
      cf_k_conv2d_param_taps(a->kw, a->kh, a->nt)) {
    switch (a->kw) {
    case 3: rbk_launch<3>(a, stream); break;
    case 5: rbk_launch<5>(a, stream); break;
    case 7: rbk_launch<7>(a, stream); break;
    case 9: rbk_launch<9>(a, stream); break;
    case 11: rbk_launch<11>(a, stream); break;
    case 13: rbk_launch<13>(a, stream); break;
    default: rbk_launch<15>(a, stream); break;
    }
    return cudaGetLastError();
  }
  const int blocked = a->generic ? 0 : cf_k_conv2d_blocked(a->kw, a->kh);
  if (blocked == 2) {
    dim3 block(RB_TX, RB_TY);
    dim3 grid((a->w + RB_TW - 1) / RB_TW,
              (a->row1 - a->row0 + RB_TH - 1) / RB_TH);
    size_t smem = rbw_smem(rbw_kwp((int)a->kw), (int)a->kh);
    if (const_taps)
      CF_LAUNCH(grid, block, smem, stream,
                conv2d_rbw_kernel<true>)(*a, nullptr, (unsigned)const_off);
    else
      CF_LAUNCH(grid, block, smem, stream,
                conv2d_rbw_kernel<false>)(*a, taps, 0u);
    return cudaGetLastError();
  }
  if (blocked == 1) {
    switch (a->kw) {
    case 3: rb_launch<3>(a, taps, const_taps, const_off, stream); break;
    case 5: rb_launch<5>(a, taps, const_taps, const_off, stream); break;
    case 7: rb_launch<7>(a, taps, const_taps, const_off, stream); break;
    case 9: rb_launch<9>(a, taps, const_taps, const_off, stream); break;
    case 11: rb_launch<11>(a, taps, const_taps, const_off, stream); break;
    case 13: rb_launch<13>(a, taps, const_taps, const_off, stream); break;
    default: rb_launch<15>(a, taps, const_taps, const_off, stream); break;
    }
    return cudaGetLastError();
  }
  unsigned mc = a->kh < KC ? a->kh : KC, nc = a->kw < KC ? a->kw : KC;
  size_t smem = (size_t)(TW + nc - 1) * (TH + mc - 1) * sizeof(float);
  dim3 block(TW, TY);
  dim3 grid((a->w + TW - 1) / TW, (a->row1 - a->row0 + TH - 1) / TH);
  if (const_taps)
    CF_LAUNCH(grid, block, smem, stream,
              conv2d_kernel<true>)(*a, nullptr, (unsigned)const_off);
  else
    CF_LAUNCH(grid, block, smem, stream, conv2d_kernel<false>)(*a, taps, 0u);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_conv2d_const_put(const float *host_taps, size_t n,
                                  size_t *off, int *placed)
{
  return const_pool.put(cf_c2d_taps, host_taps, n, off, placed);
}

extern "C" cudaError_t cf_k_conv2d_const_write(const float *host_taps, size_t n,
                                               size_t off)
{
  return cudaMemcpyToSymbol(cf_c2d_taps, host_taps, n * sizeof(float),
                            off * sizeof(float));
}

extern "C" void cf_k_conv2d_const_drop(size_t off, size_t n)
{
  const_pool.drop(off, n);
}

// ---- separable -----------------------------------------------------------

__global__ void __launch_bounds__(ROW_T)
    conv2d_rows_kernel(const cf_conv2d_args a, unsigned tau,
                       const float *__restrict__ hrow, int vr0, float *tmp)
{
  CF_DYN_SHARED(float, sm);
  const int tx = (int)threadIdx.x;
  const int x0 = (int)(blockIdx.x * ROW_T);
  const int q = (int)blockIdx.y;
  const unsigned char *base = slice_base(a, tau);
  const int vy = vr0 + q;
  float acc = 0.0f;
  for (unsigned n0 = 0; n0 < a.kw; n0 += ROW_KC) {
    const int nc = (int)min(ROW_KC, a.kw - n0);
    const int sw = ROW_T + nc - 1;
    const int vx0 = x0 + (int)a.cx - (int)(n0 + nc - 1);
    __syncthreads();
    for (int i = tx; i < sw; i += ROW_T)
      sm[i] = load_sample(a, base, vx0 + i, vy);
    __syncthreads();
    // walked by pointers, so that the unrolled loads take constant
    // offsets (an index sums and widens an address per tap)
    const float *s = sm + tx + nc - 1;
    const float *h = hrow + n0;
    for (int nn = 0; nn < nc; nn++)
      acc = fmaf(__ldg(h++), *s--, acc);
  }
  const unsigned x = (unsigned)(x0 + tx);
  const size_t pitch = CF_SEP_PITCH(a.w);
  if (x < pitch) // the pitch's padding: zeros, read by the column pass
    tmp[(size_t)q * pitch + x] = x < a.w ? acc : 0.0f;
}

extern "C" cudaError_t cf_k_conv2d_rows(const cf_conv2d_args *a, unsigned tau,
                                        const float *hrow, int vr0,
                                        unsigned nrows, float *tmp,
                                        cudaStream_t stream)
{
  if (nrows == 0 || a->w == 0)
    return cudaSuccess;
  unsigned nc = a->kw < ROW_KC ? a->kw : ROW_KC;
  size_t smem = (size_t)(ROW_T + nc - 1) * sizeof(float);
  dim3 grid((unsigned)((CF_SEP_PITCH(a->w) + ROW_T - 1) / ROW_T), nrows);
  CF_LAUNCH(grid, ROW_T, smem, stream,
            conv2d_rows_kernel)(*a, tau, hrow, vr0, tmp);
  return cudaGetLastError();
}

// Thread (columns x .. x + 3, rows ib .. ib + COL_RY): tmp row ib - vr0 +
// cy - m + j feeds output row ib + j through vcol[m]; q = j + kh - 1 - m
// walks the rows once, each row's four columns (one float4) serving every
// output that needs them: per row, one load and COL_RY taps for 4 COL_RY
// FMAs. Rows q in [COL_RY - 1, kh - 1] that are in tmp serve every j and
// go through a loop without tests; the others test each j.
template <bool ALL>
__device__ __forceinline__ void cols_row(const float *col, size_t pitch,
                                         int r, const float *vcol, int kh,
                                         int q, float4 (&acc)[COL_RY])
{
  const float4 v = *reinterpret_cast<const float4 *>(col + (size_t)r * pitch);
  const float *vq = vcol + (kh - 1 - q); // tap m = kh - 1 - q + j
CF_UNROLL
  for (int j = 0; j < COL_RY; j++) {
    const int m = kh - 1 - q + j;
    if (ALL || (m >= 0 && m < kh)) {
      const float t = __ldg(vq + j);
      acc[j].x = fmaf(t, v.x, acc[j].x);
      acc[j].y = fmaf(t, v.y, acc[j].y);
      acc[j].z = fmaf(t, v.z, acc[j].z);
      acc[j].w = fmaf(t, v.w, acc[j].w);
    }
  }
}

__global__ void __launch_bounds__(TW *TY)
    conv2d_cols_kernel(const cf_conv2d_args a, const float *__restrict__ vcol,
                       const float *__restrict__ tmp, int vr0, unsigned nrows,
                       float *acc_buf, int acc_in, int store)
{
  const size_t pitch = CF_SEP_PITCH(a.w);
  const unsigned x = (blockIdx.x * TW + threadIdx.x) * 4;
  const int ib = (int)(a.row0 + (blockIdx.y * TY + threadIdx.y) * COL_RY);
  if (x >= pitch || ib >= (int)a.row1)
    return;
  const int kh = (int)a.kh;
  const int base = ib - vr0 + (int)a.cy - (kh - 1);
  float4 acc[COL_RY];
CF_UNROLL
  for (int j = 0; j < COL_RY; j++)
    acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float *col = tmp + x;
  // [q0, q1): the rows q in tmp (r = base + q in [0, nrows)) that serve
  // every j; the rows before and after test theirs
  const int qend = kh + COL_RY - 1;
  const int qa = max(COL_RY - 1, -base);
  const int qb = min(kh - 1, (int)nrows - 1 - base);
  const int q0 = qa <= qb ? qa : qend, q1 = qa <= qb ? qb + 1 : qend;
  // three loops, so that the middle one is compiled without the tests
  int q = 0;
  for (; q < q0; q++)
    if (base + q >= 0 && base + q < (int)nrows) // only rows past row1 lack
      cols_row<false>(col, pitch, base + q, vcol, kh, q, acc);
  for (; q < q1; q++)
    cols_row<true>(col, pitch, base + q, vcol, kh, q, acc);
  for (; q < qend; q++)
    if (base + q >= 0 && base + q < (int)nrows)
      cols_row<false>(col, pitch, base + q, vcol, kh, q, acc);
CF_UNROLL
  for (int j = 0; j < COL_RY; j++) {
    const unsigned y = (unsigned)(ib + j);
    if (y >= a.row1)
      break;
    float4 *ap = reinterpret_cast<float4 *>(acc_buf +
                                            (size_t)(y - a.row0) * pitch + x);
    float4 s = acc[j];
    if (acc_in) {
      const float4 p = *ap;
      s.x += p.x;
      s.y += p.y;
      s.z += p.z;
      s.w += p.w;
    }
    if (!store) {
      *ap = s;
      continue;
    }
    const float sv[4] = {s.x, s.y, s.z, s.w};
CF_UNROLL
    for (int i = 0; i < 4; i++)
      if (x + i < a.w)
        store_pixel(a, x + i, y, sv[i]);
  }
}

extern "C" cudaError_t cf_k_conv2d_cols(const cf_conv2d_args *a,
                                        const float *vcol, const float *tmp,
                                        int vr0, unsigned nrows, float *acc,
                                        int acc_in, int store,
                                        cudaStream_t stream)
{
  if (a->row1 <= a->row0 || a->w == 0)
    return cudaSuccess;
  dim3 block(TW, TY);
  unsigned rows = a->row1 - a->row0;
  const unsigned quads = (unsigned)(CF_SEP_PITCH(a->w) / 4);
  dim3 grid((quads + TW - 1) / TW, (rows + TY * COL_RY - 1) / (TY * COL_RY));
  CF_LAUNCH_NOSYNC(grid, block, 0, stream,
                   conv2d_cols_kernel)(*a, vcol, tmp, vr0, nrows, acc, acc_in,
                       store);
  return cudaGetLastError();
}

// rb_launch's kernels, for each kw it takes
template <int... KW> static cudaError_t rb_preload(void)
{
  return cf_preload_all(conv2d_rb_kernel<KW, true>...,
                        conv2d_rb_kernel<KW, false>...);
}

extern "C" cudaError_t cf_k_conv2d_preload(void)
{
  cudaError_t e = cf_preload_all(
      conv2d_kernel<true>, conv2d_kernel<false>, conv2d_rbw_kernel<true>,
      conv2d_rbw_kernel<false>, conv2d_rows_kernel, conv2d_cols_kernel);
  if (e == cudaSuccess)
    e = rb_preload<3, 5, 7, 9, 11, 13, 15>();
  return e != cudaSuccess
             ? e
             : cf_preload_all(conv2d_rbk_kernel<3>, conv2d_rbk_kernel<5>,
                              conv2d_rbk_kernel<7>, conv2d_rbk_kernel<9>,
                              conv2d_rbk_kernel<11>, conv2d_rbk_kernel<13>,
                              conv2d_rbk_kernel<15>);
}
