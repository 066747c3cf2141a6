// The register-blocked direct 2D/3D convolution (conv2d.cu launches it)
// for the common kernels: odd widths 3..15 (a template parameter, so the
// tap loops unroll) and heights up to RB_KH_MAX.
//
// The generic direct kernel does one shared-memory load per FMA, so
// shared memory caps it near a quarter of the FMA rate. Here a block of
// RB_TX x RB_TY threads owns a tile of RB_TW x RB_TH outputs; a thread
// owns RB_RX adjacent columns of RB_RY adjacent rows. It walks the
// RB_RY + kh - 1 staged rows its outputs read once, loading each row's
// window of RB_RX + KW - 1 samples into registers with float4 loads, and
// every output row that reads that staged row takes its KW x RB_RX FMAs
// from the registers: per staged row, ceil((RB_RX + KW - 1) / 4) shared
// loads, one (broadcast) tap load per RB_RX FMAs.
//
// rb_stage() is what a thread does before the barrier, rb_compute() after
// it, rb_store() at the end (tests/test_kernels_emu.cc runs them on the
// CPU through the launcher, against a float64 reference).
#ifndef CF_CONV2D_RB_CUH
#define CF_CONV2D_RB_CUH

#include "conv2d_common.cuh"

// A tile of 128 x 32: 1920 and 3840 are whole numbers of tiles wide, a
// 1080p plane is 510 tiles (3.9 per SM on 132 SMs: the busiest SM has 4,
// where 256 x 16 tiles gave 544, 4.1, the busiest 5 and half-empty tiles
// at the right edge), and a tile stages 1.5 samples per output (1.8 for
// 256 x 16) with a 13x13 kernel.
#define RB_TX 16                // threads in x
#define RB_TY 8                 // threads in y
#define RB_RX 8                 // adjacent output columns per thread
#define RB_RY 4                 // adjacent output rows per thread
#define RB_TW (RB_TX * RB_RX)   // tile width: 128
#define RB_TH (RB_TY * RB_RY)   // tile height: 32
#define RB_KW_MAX 15
#define RB_KH_MAX 16

// Floats per staged row for width kw: the tile, its halo, and the last
// thread's last float4 (a multiple of 4, so each row is 16-byte aligned).
CF_HD constexpr int rb_sw(int kw) { return (RB_TW + kw - 1 + 3) / 4 * 4; }
// float4 loads per staged row and thread.
CF_HD constexpr int rb_nv(int kw) { return (RB_RX + kw - 1 + 3) / 4; }
// Dynamic shared memory of a launch, in bytes.
CF_HD constexpr size_t rb_smem(int kw, int kh)
{
  return (size_t)rb_sw(kw) * (RB_TH + kh - 1) * sizeof(float);
}
// The kernels this path takes.
CF_HD constexpr bool rb_fits(unsigned kw, unsigned kh)
{
  return kw >= 3 && kw <= RB_KW_MAX && kw % 2 == 1 && kh >= 1 &&
         kh <= RB_KH_MAX;
}

static_assert(RB_TX * RB_RX + 4 * rb_nv(RB_KW_MAX) - RB_RX <=
                  rb_sw(RB_KW_MAX),
              "the last thread's window overruns its staged row");
static_assert(rb_smem(RB_KW_MAX, RB_KH_MAX) <= 48 * 1024,
              "register-blocked tile over 48 KiB");

// Sample (x, y) of the slice at base, as float: `inside` (the tile's
// whole staged window is in the component) skips the border mapping.
CF_HD inline float rb_sample(const cf_conv2d_args &a,
                             const unsigned char *base, bool inside, int x,
                             int y)
{
  return inside ? load_at(a, base + (size_t)y * a.pitch + (size_t)x * a.step)
                : load_sample(a, base, x, y);
}

// Stage the samples slice `base` holds for the tile at (x0, y0): staged
// s[r][c] = X[vy0 + r][vx0 + c] with vy0 = y0 + cy - (kh - 1) and vx0 =
// x0 + cx - (KW - 1), so output (y0 + li, x0 + lj) with tap (mm, nn) reads
// s[li + kh - 1 - mm][lj + KW - 1 - nn]. Rows from rlim on feed only
// outputs past row1 and are not read (their band may not be on the
// device yet); they, and the columns past the halo, are zeros.
template <int KW>
CF_HD inline void rb_stage(const cf_conv2d_args &a, const unsigned char *base,
                           float *sm, int tx, int ty, int x0, int y0,
                           int rlim)
{
  constexpr int SW = rb_sw(KW), WU = RB_TW + KW - 1;
  const int kh = (int)a.kh, n = (RB_TH + kh - 1) * SW;
  const int vy0 = y0 + (int)a.cy - (kh - 1);
  const int vx0 = x0 + (int)a.cx - (KW - 1);
  // the whole window inside the component: no border mapping
  const bool inside = vx0 >= 0 && vx0 + WU <= (int)a.w && vy0 >= 0 &&
                      vy0 + rlim <= (int)a.h;
  // the block's threads take consecutive samples of the staged rows
  // (s[r][c] is sm[r * SW + c]): whole warps on one row
  for (int i = ty * RB_TX + tx; i < n; i += RB_TX * RB_TY) {
    const int r = i / SW, c = i - r * SW; // SW is a constant
    sm[i] = r < rlim && c < WU ? rb_sample(a, base, inside, vx0 + c, vy0 + r)
                               : 0.0f;
  }
}

// A thread's window: n float4s of a staged row from p (16-byte aligned)
// into w[0 .. 4 n).
template <int N> CF_HD inline void rb_window(const float *p, float *w)
{
CF_UNROLL
  for (int v = 0; v < N; v++) {
    const float4 f = reinterpret_cast<const float4 *>(p)[v];
    w[4 * v] = f.x;
    w[4 * v + 1] = f.y;
    w[4 * v + 2] = f.z;
    w[4 * v + 3] = f.w;
  }
}

// Taps of the slice being summed: tap.row(mm * KW)(nn). A row is a
// pointer, so that its taps are loaded at constant offsets from it (one
// instruction a tap; an index summed per tap costs three).
struct rb_global_taps {
  const float *p;
  CF_HD rb_global_taps row(int i) const { return {p + i}; }
  CF_HD float operator()(int i) const
  {
#ifdef __CUDA_ARCH__
    return __ldg(p + i);
#else
    return p[i];
#endif
  }
};

// The thread's sums over one staged slice (see the top of the file).
template <int KW, typename Taps>
CF_HD inline void rb_compute(const float *sm, int tx, int ty, int kh,
                             const Taps &tap, float (&acc)[RB_RY][RB_RX])
{
  constexpr int SW = rb_sw(KW), NV = rb_nv(KW);
  const float *row = sm + ty * RB_RY * SW + tx * RB_RX;
  const int nq = RB_RY + kh - 1;
  for (int q = 0; q < nq; q++, row += SW) {
    float win[4 * NV];
    rb_window<NV>(row, win);
    // staged row ty * RB_RY + q serves output row j with tap row
    // mm = j + kh - 1 - q
CF_UNROLL
    for (int j = 0; j < RB_RY; j++) {
      const int mm = j + kh - 1 - q;
      if (mm < 0 || mm >= kh)
        continue;
      const Taps trow = tap.row(mm * KW);
CF_UNROLL
      for (int nn = 0; nn < KW; nn++) {
        const float t = trow(nn);
CF_UNROLL
        for (int i = 0; i < RB_RX; i++)
          acc[j][i] = fmaf(t, win[i + KW - 1 - nn], acc[j][i]);
      }
    }
  }
}

// ---- any width up to RBW_KW_MAX, any height: the "wide" variant -------
//
// Same tile and thread layout. The kernel's width kw is a run-time value:
// it is taken in pieces of 4 columns from a staged width of kwp = kw
// rounded up to 4 (the last piece has kw % 4 taps if any), each piece's
// window of RB_RX + 3 samples loaded as three float4s; its height in
// pieces of at most rbw_kc(kwp) rows, each staged on its own (sums
// carried in the registers).
#define RBW_KW_MAX 64
CF_HD constexpr int rbw_kwp(int kw) { return (kw + 3) / 4 * 4; }
// Floats per staged row: the tile, the kwp - 1 halo columns, one float
// of padding (a multiple of 4).
CF_HD constexpr int rbw_sw(int kwp) { return RB_TW + kwp; }
// Kernel rows per staged piece: as many as 48 KiB of staged rows allow.
CF_HD constexpr int rbw_kc(int kwp)
{
  return 48 * 1024 / (int)sizeof(float) / rbw_sw(kwp) - (RB_TH - 1);
}
CF_HD constexpr size_t rbw_smem(int kwp, int kh)
{
  return (size_t)rbw_sw(kwp) *
         (size_t)(RB_TH + (kh < rbw_kc(kwp) ? kh : rbw_kc(kwp)) - 1) *
         sizeof(float);
}
CF_HD constexpr bool rbw_fits(unsigned kw, unsigned kh)
{
  return kw >= 1 && kw <= RBW_KW_MAX && kh >= 1;
}
static_assert(rbw_kc(RBW_KW_MAX) >= 16, "wide pieces of too few rows");
static_assert(RB_TX * RB_RX + 12 - RB_RX + (RBW_KW_MAX - 4) <=
                  rbw_sw(RBW_KW_MAX),
              "the last thread's window overruns its staged row");

// Stage rows m0 .. m0 + mc - 1 of the kernel's reach for the tile at (x0,
// y0): s[r][c] = X[vy0 + r][vx0 + c], vy0 = y0 + cy - (m0 + mc - 1), vx0 =
// x0 + cx - (kwp - 1); output (y0 + li, x0 + lj) with tap (m0 + mm, nn)
// reads s[li + mc - 1 - mm][lj + kwp - 1 - nn]. Rows from rlim on, and
// the padding column, are zeros.
CF_HD inline void rbw_stage(const cf_conv2d_args &a,
                            const unsigned char *base, float *sm, int tid,
                            int x0, int y0, int m0, int mc, int kwp,
                            int rlim)
{
  const int sw = rbw_sw(kwp), wu = RB_TW + kwp - 1, sh = RB_TH + mc - 1;
  const int vy0 = y0 + (int)a.cy - (m0 + mc - 1);
  const int vx0 = x0 + (int)a.cx - (kwp - 1);
  const bool inside = vx0 >= 0 && vx0 + wu <= (int)a.w && vy0 >= 0 &&
                      vy0 + rlim <= (int)a.h;
  // consecutive threads on consecutive samples of a row (sw > the block)
  int r = 0, c = tid;
  for (int i = tid; i < sh * sw; i += RB_TX * RB_TY) {
    sm[i] = r < rlim && c < wu ? rb_sample(a, base, inside, vx0 + c, vy0 + r)
                               : 0.0f;
    c += RB_TX * RB_TY;
    if (c >= sw) {
      c -= sw;
      r++;
    }
  }
}

// One staged row's window for taps 4 p .. 4 p + 3 (win[i + 3 - u] for
// output i and tap 4 p + u), times those taps of the tap rows
// tap.row(mm * kw) that the row serves: mm = j + mc - 1 - q for output row
// j. ALLJ: every j is served (no tests); NT: the piece's taps before kw
// (4, or kw % 4 for the last piece). The staged samples the taps past kw
// would meet are not read: multiplied by a zero, an Inf or NaN there
// would reach outputs whose window does not hold it.
template <bool ALLJ, int NT, typename Taps>
CF_HD inline void rbw_piece(const float *row, int p, int q, int mc, int kw,
                            const Taps &tap, float (&acc)[RB_RY][RB_RX])
{
  float win[12];
  rb_window<3>(row - 4 * p, win);
CF_UNROLL
  for (int j = 0; j < RB_RY; j++) {
    const int mm = j + mc - 1 - q;
    if (!ALLJ && (mm < 0 || mm >= mc))
      continue;
    const Taps trow = tap.row(mm * kw + 4 * p);
    float t[NT];
CF_UNROLL
    for (int u = 0; u < NT; u++)
      t[u] = trow(u);
CF_UNROLL
    for (int u = 0; u < NT; u++)
CF_UNROLL
      for (int i = 0; i < RB_RX; i++)
        acc[j][i] = fmaf(t[u], win[i + 3 - u], acc[j][i]);
  }
}

// Every piece of staged row q (row: its window origin for piece 0).
template <bool ALLJ, typename Taps>
CF_HD inline void rbw_row(const float *row, int q, int mc, int kw,
                          const Taps &tap, float (&acc)[RB_RY][RB_RX])
{
  const int whole = kw / 4;
  for (int p = 0; p < whole; p++)
    rbw_piece<ALLJ, 4>(row, p, q, mc, kw, tap, acc);
  switch (kw % 4) {
  case 1: rbw_piece<ALLJ, 1>(row, whole, q, mc, kw, tap, acc); break;
  case 2: rbw_piece<ALLJ, 2>(row, whole, q, mc, kw, tap, acc); break;
  case 3: rbw_piece<ALLJ, 3>(row, whole, q, mc, kw, tap, acc); break;
  default: break;
  }
}

// The thread's sums over one staged piece of mc kernel rows: tap.row(mm *
// kw)(nn) is the tap at row m0 + mm, column nn. Staged rows q in [RB_RY -
// 1, mc - 1] serve all RB_RY output rows and skip the tests.
template <typename Taps>
CF_HD inline void rbw_compute(const float *sm, int tx, int ty, int mc,
                              int kw, int kwp, const Taps &tap,
                              float (&acc)[RB_RY][RB_RX])
{
  const int sw = rbw_sw(kwp);
  const float *row = sm + ty * RB_RY * sw + tx * RB_RX + kwp - 4;
  const int qend = RB_RY + mc - 1;
  const int q0 = RB_RY - 1 <= mc - 1 ? RB_RY - 1 : qend;
  const int q1 = RB_RY - 1 <= mc - 1 ? mc : qend;
  // three loops, so that the middle one is compiled without the tests
  int q = 0;
  for (; q < q0; q++)
    rbw_row<false>(row + q * sw, q, mc, kw, tap, acc);
  for (; q < q1; q++)
    rbw_row<true>(row + q * sw, q, mc, kw, tap, acc);
  for (; q < qend; q++)
    rbw_row<false>(row + q * sw, q, mc, kw, tap, acc);
}

// The thread's outputs of the tile at (x0, y0).
CF_HD inline void rb_store(const cf_conv2d_args &a, int x0, int y0, int tx,
                           int ty, const float (&acc)[RB_RY][RB_RX])
{
  tile_store<RB_RY, RB_RX>(a, x0, y0, tx, ty, acc);
}

#endif
