// The register-blocked direct 2D convolution with its taps in the kernel's
// parameters (conv2d.cu launches it): square kernels K x K, K odd 3..15
// (a template parameter), one slice (no temporal taps).
//
// conv2d_rb.cuh's kernel reads its taps from the constant pool or global
// memory at run-time offsets: a load a tap (ULDC or LDG), one for every
// RB_RX = 8 FMAs, about a tenth of the instructions of its sums. Here
// the kernel's rows are a template parameter too, every loop of the sums
// unrolls, and each tap is a constant offset into the launch's parameter
// block: ptxas loads them into uniform registers, mostly two at a time
// (ULDC.64), which the FFMAs read. For K = 13 the sums are 2704 FFMAs,
// 101 ULDCs and 64 LDS.128 (a staged row's window is 16 floats, 4 float4
// loads, for up to 4 x 13 x 4 = 208 FFMAs): 91% FFMA, against 83% in
// conv2d_rb_kernel's loop. With the tap loads no longer shared by a
// thread's outputs, a thread owns 4 x 4 outputs (not 8 x 4), so a
// 1080p plane is 32 warps an SM, not 16, in the same 510 tiles of 128 x
// 32; and a warp's window loads (threads 16 bytes apart) are contiguous,
// free of bank conflicts.
//
// Staging takes the sample type out of the loop and has each thread
// issue RBK_STAGE_U loads before it stores any: the staged loop of
// conv2d_rb.cuh waits for each load (a few hundred cycles) before the
// next, and with one or two waves of tiles every SM spends that wait at
// once.
//
// rbk_stage(), rbk_compute() and rbk_store() are what a thread does
// (tests/test_kernels_emu.cc runs the launcher on the CPU against a
// float64 reference).
#ifndef CF_CONV2D_RBK_CUH
#define CF_CONV2D_RBK_CUH

#include "conv2d_common.cuh"

#define RBK_TX 32                  // threads in x
#define RBK_TY 8                   // threads in y
#define RBK_RX 4                   // adjacent output columns per thread
#define RBK_RY 4                   // adjacent output rows per thread
#define RBK_TW (RBK_TX * RBK_RX)   // tile width: 128
#define RBK_TH (RBK_TY * RBK_RY)   // tile height: 32
#define RBK_THREADS (RBK_TX * RBK_TY)
#define RBK_K_MAX 15
#define RBK_STAGE_U 8              // staging loads in flight per thread

// The taps, row-major (tap (m, n) is t[m * K + n]), by value.
template <int K> struct rbk_taps {
  float t[K * K];
};

// Floats per staged row: the tile, its halo, and the last thread's last
// float4 (a multiple of 4: every row 16-byte aligned).
CF_HD constexpr int rbk_sw(int k) { return (RBK_TW + k - 1 + 3) / 4 * 4; }
// float4 loads of a thread's window of a staged row.
CF_HD constexpr int rbk_nv(int k) { return (RBK_RX + k - 1 + 3) / 4; }
// Dynamic shared memory of a launch, in bytes.
CF_HD constexpr size_t rbk_smem(int k)
{
  return (size_t)rbk_sw(k) * (RBK_TH + k - 1) * sizeof(float);
}
// The kernels this path takes.
CF_HD constexpr bool rbk_fits(unsigned kw, unsigned kh, unsigned nt)
{
  return kw == kh && kw >= 3 && kw <= RBK_K_MAX && kw % 2 == 1 && nt == 1;
}

static_assert((RBK_TX - 1) * RBK_RX + 4 * rbk_nv(RBK_K_MAX) <=
                  rbk_sw(RBK_K_MAX),
              "the last thread's window overruns its staged row");
static_assert(rbk_smem(RBK_K_MAX) <= 48 * 1024,
              "register-blocked tile over 48 KiB");
static_assert(sizeof(rbk_taps<RBK_K_MAX>) + sizeof(cf_conv2d_args) <= 4096,
              "parameters over the 4 KiB every toolkit allows");

// Staged samples [tid, n) of the block's rows (s[r][c] is sm[r * SW + c]
// = X[vy0 + r][vx0 + c]), RBK_STAGE_U loads at a time, all issued before
// the first is converted or stored. INSIDE: the whole window is in the
// component, read as T without the border's mapping; else through
// load_sample (T unused).
template <int SW, bool INSIDE, typename T>
CF_HD inline void rbk_stage_loop(const cf_conv2d_args &a,
                                 const unsigned char *base, float *sm,
                                 int tid, int n, int wu, int rlim, int vx0,
                                 int vy0)
{
  for (int i0 = tid; i0 < n; i0 += RBK_THREADS * RBK_STAGE_U) {
    T raw[RBK_STAGE_U];
    float v[RBK_STAGE_U];
CF_UNROLL
    for (int u = 0; u < RBK_STAGE_U; u++) {
      const int i = i0 + u * RBK_THREADS, r = i / SW, c = i - r * SW;
      const bool in = i < n && r < rlim && c < wu;
      if (INSIDE) {
        raw[u] = T(0);
        if (in)
          raw[u] = *reinterpret_cast<const T *>(
              base + (size_t)(vy0 + r) * a.pitch + (size_t)(vx0 + c) * a.step);
      } else {
        v[u] = in ? load_sample(a, base, vx0 + c, vy0 + r) : 0.0f;
      }
    }
CF_UNROLL
    for (int u = 0; u < RBK_STAGE_U; u++)
      if (i0 + u * RBK_THREADS < n)
        sm[i0 + u * RBK_THREADS] = INSIDE ? (float)raw[u] : v[u];
  }
}

// Stage the slice at base for the tile at (x0, y0): s[r][c] = X[vy0 +
// r][vx0 + c], vy0 = y0 + cy - (K - 1), vx0 = x0 + cx - (K - 1), so that
// output (y0 + li, x0 + lj) with tap (mm, nn) reads s[li + K - 1 -
// mm][lj + K - 1 - nn]. Rows from rlim on feed only outputs past row1
// and are not read (their band may not be on the device yet); they, and
// the columns past the halo, are zeros.
template <int K>
CF_HD inline void rbk_stage(const cf_conv2d_args &a, const unsigned char *base,
                            float *sm, int tid, int x0, int y0, int rlim)
{
  constexpr int SW = rbk_sw(K), WU = RBK_TW + K - 1;
  constexpr int n = (RBK_TH + K - 1) * SW;
  const int vy0 = y0 + (int)a.cy - (K - 1);
  const int vx0 = x0 + (int)a.cx - (K - 1);
  const bool inside = vx0 >= 0 && vx0 + WU <= (int)a.w && vy0 >= 0 &&
                      vy0 + rlim <= (int)a.h;
  if (!inside)
    rbk_stage_loop<SW, false, float>(a, base, sm, tid, n, WU, rlim, vx0, vy0);
  else if (a.type == 0)
    rbk_stage_loop<SW, true, unsigned char>(a, base, sm, tid, n, WU, rlim,
                                            vx0, vy0);
  else if (a.type == 1)
    rbk_stage_loop<SW, true, unsigned short>(a, base, sm, tid, n, WU, rlim,
                                             vx0, vy0);
  else
    rbk_stage_loop<SW, true, float>(a, base, sm, tid, n, WU, rlim, vx0, vy0);
}

// The thread's sums: staged row ty * RBK_RY + q serves its output row j
// with tap row mm = j + K - 1 - q. Every loop has constant bounds, so
// every tap index is a constant.
template <int K>
CF_HD inline void rbk_compute(const float *sm, int tx, int ty,
                              const rbk_taps<K> &tp,
                              float (&acc)[RBK_RY][RBK_RX])
{
  constexpr int SW = rbk_sw(K), NV = rbk_nv(K);
  const float *row = sm + ty * RBK_RY * SW + tx * RBK_RX;
CF_UNROLL
  for (int q = 0; q < RBK_RY + K - 1; q++) {
    float win[4 * NV];
CF_UNROLL
    for (int v = 0; v < NV; v++) {
      const float4 f = reinterpret_cast<const float4 *>(row + q * SW)[v];
      win[4 * v] = f.x;
      win[4 * v + 1] = f.y;
      win[4 * v + 2] = f.z;
      win[4 * v + 3] = f.w;
    }
CF_UNROLL
    for (int j = 0; j < RBK_RY; j++) {
      const int mm = j + K - 1 - q;
      if (mm < 0 || mm >= K)
        continue;
CF_UNROLL
      for (int nn = 0; nn < K; nn++) {
        const float t = tp.t[mm * K + nn];
CF_UNROLL
        for (int i = 0; i < RBK_RX; i++)
          acc[j][i] = fmaf(t, win[i + K - 1 - nn], acc[j][i]);
      }
    }
  }
}

// The thread's outputs of the tile at (x0, y0).
CF_HD inline void rbk_store(const cf_conv2d_args &a, int x0, int y0, int tx,
                            int ty, const float (&acc)[RBK_RY][RBK_RX])
{
  tile_store<RBK_RY, RBK_RX>(a, x0, y0, tx, ty, acc);
}

#endif
