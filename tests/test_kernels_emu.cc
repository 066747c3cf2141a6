// The device code of kernels/*.cu run on the CPU (tests/emu/cf_emu.h: the
// kernels compiled as C++, blocks in turn, a block's threads as fibers
// meeting at every __syncthreads), through the same extern "C" launchers
// src/cuda/ calls, against float64 references on random inputs, sizes and
// settings. What the device adds (concurrency, races, timing, cuFFT) is
// left to tests/gpu and compute-sanitizer; the index math, tiling, halos,
// borders, bands, rings, routes and store rules are checked here on every
// CI run, device or not. Shared memory starts as NaN in every block, so a
// position read before any thread wrote it shows in the results.
//
//   conv2d      cf_k_conv2d: the register-blocked kernel (odd widths
//               3..15, heights up to 16) and the generic tiled one (any
//               size, kernels beyond 64 staged in pieces), taps in the
//               constant pool or global memory, and the one whose taps
//               are launch parameters (square odd kernels 3..15, one
//               slice); u8/u16/f32, interleaved
//               components, padded pitch, every border, temporal slices
//               of a frame ring, a band of rows, scale/bias/|.|. Rows no
//               output of the band reads are NaN (float samples), and no
//               byte but the band's outputs may change.
//   separable   cf_k_conv2d_rows + cf_k_conv2d_cols, as src/cuda/video.c
//               chains them, on rank-1 kernels.
//   fir1d       cf_k_ring_write + cf_k_fir1d + cf_k_time_advance over a
//               random chunking: shared, per-channel and matrix routes;
//               the tiled kernel (8 and 16 a thread) and the streaming
//               one (its own or a few blocks, 8 and 16 a thread).
//   ols         the uniformly partitioned overlap-save chain of
//               src/cuda/fir.c (window, R2C, push, cmac, reduce, C2R,
//               extract) with FFTW standing in for cuFFT.
//   crossfade   cf_k_crossfade against its formula.
//
// CF_TEST_SEED=N replays a run; CF_TEST_FILTER=test_ols runs one test.
#include <fftw3.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <vector>

extern "C" {
#include <cmocka.h>

#include "ref.h"
#include "ref2d.h"
}
#include "kernel_samples.h"

#include "cf_kernels.h"
#include "conv2d_rb.cuh"
#include "conv2d_rbk.cuh"

static ref_rng rng;
static uint64_t seed;
static char case_desc[600];

static void emu_fail(const char *fmt, ...)
{
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("FAILED (CF_TEST_SEED=%llu)\n  case: %s\n  %s\n",
              (unsigned long long)seed, case_desc, msg);
  fail_msg("kernels on the emulated device");
}

static int range(int lo, int hi) // lo..hi inclusive, either may be < 0
{
  return (int)((long long)ref_rng_range(&rng, 0, (size_t)((long long)hi - lo)) +
               lo);
}
static double unit(void)
{
  return ref_rng_unit(&rng);
}
static uint64_t bits(void)
{
  return ref_rng_u64(&rng);
}

static void launched(cudaError_t e, const char *what)
{
  if (e != cudaSuccess)
    emu_fail("%s: launch failed (error %d)", what, (int)e);
}

// ---- video ------------------------------------------------------------------

enum { PATH_BLOCKED, PATH_GENERIC, PATH_SEPARABLE, PATH_WIDE, PATH_PARAM };

static void conv2d_case(unsigned c, int path)
{
  const unsigned type = (unsigned)range(0, 2), bytes = type == 2 ? 4 : type + 1;
  unsigned kh, kw;
  if (path == PATH_PARAM) {
    kw = kh = 2 * (unsigned)range(1, 7) + 1;
  } else if (path == PATH_BLOCKED) {
    kw = 2 * (unsigned)range(1, 7) + 1;
    kh = (unsigned)range(1, RB_KH_MAX);
  } else if (path == PATH_WIDE) { // what the fixed-width kernels do not take
    do {
      kw = (unsigned)range(1, RBW_KW_MAX);
      kh = (unsigned)(bits() % 4 ? range(1, 40) : range(30, 80));
    } while (rb_fits(kw, kh));
  } else if (bits() % 6 == 0) { // beyond one staged piece of 64
    kw = (unsigned)range(1, 80);
    kh = (unsigned)range(1, 80);
  } else {
    kw = (unsigned)range(1, 20);
    kh = (unsigned)range(1, 20);
  }
  const bool big = kw * kh > 1600;
  // a third of the widths and heights a few pixels off a tile edge
  unsigned w = (unsigned)(bits() % 3 ? range(1, big ? 60 : 300)
                                     : range(300, big ? 400 : 700));
  unsigned h = (unsigned)(bits() % 3 ? range(1, 40) : range(40, big ? 50 : 80));
  static_assert(RB_TW == RBK_TW && RB_TH == RBK_TH, "one tile edge");
  if (bits() % 3 == 0)
    w = (unsigned)(RB_TW * range(1, 2) + range(-8, 8));
  if (bits() % 3 == 0)
    h = (unsigned)(RB_TH * range(1, 4) + range(-8, 8));
  const unsigned ncomp = (unsigned)range(1, 4),
                 comp = (unsigned)range(0, (int)ncomp - 1);
  const unsigned nt = path == PATH_PARAM ? 1 : (unsigned)range(1, big ? 2 : 3),
                 nslots = nt + (unsigned)range(0, 2);
  const bool const_taps = path != PATH_SEPARABLE && bits() % 2;
  cf_conv2d_args a;
  memset(&a, 0, sizeof a);
  a.step = ncomp * bytes;
  a.offset = comp * bytes;
  a.pitch = (size_t)w * a.step + (size_t)range(0, 3) * bytes;
  a.slot_bytes = a.pitch * h + (size_t)range(0, 2) * 64;
  a.nslots = nslots;
  a.head = (unsigned)range(0, (int)nslots - 1);
  a.nt = nt;
  a.type = type;
  a.w = w, a.h = h;
  a.row0 = (unsigned)range(0, (int)h - 1);
  a.row1 = (unsigned)range((int)a.row0 + 1, (int)h);
  if (bits() % 3 == 0)
    a.row0 = 0, a.row1 = h;
  a.kh = kh, a.kw = kw, a.cy = kh / 2, a.cx = kw / 2;
  a.border = range(0, 4);
  const double maxv = type == 0 ? 255 : type == 1 ? 65535 : 1;
  a.cval = (float)(unit() * maxv);
  a.scale = (float)(bits() % 2 ? 1.0 : 0.5 + unit());
  a.bias = (float)(bits() % 2 ? 0.0 : (unit() - 0.5) * maxv * 0.2);
  a.absolute = bits() % 4 == 0;
  static const char *names[] = {"register-blocked", "generic", "separable",
                                "register-blocked, any width",
                                "register-blocked, taps as parameters"};
  snprintf(case_desc, sizeof case_desc,
           "conv2d #%u (%s%s): type %u, %ux%u, comp %u of %u, pitch %zu, "
           "kernel %ux%u, border %d, %u slices of %u (head %u), rows [%u, "
           "%u), scale %g, bias %g, abs %d",
           c, names[path], const_taps ? ", constant taps" : "", type, w, h,
           comp, ncomp, a.pitch, kh, kw, a.border, nt, nslots, a.head, a.row0,
           a.row1, a.scale, a.bias, a.absolute);

  // taps: signed, about 1 in absolute sum per slice (rank 1 if separable)
  std::vector<float> taps((size_t)nt * kh * kw), hrow((size_t)nt * kw),
      vcol((size_t)nt * kh);
  for (auto &t : hrow)
    t = (float)((unit() - 0.35) * 2.0 / kw);
  for (auto &t : vcol)
    t = (float)((unit() - 0.35) * 2.0 / kh / nt);
  for (unsigned tau = 0; tau < nt; tau++)
    for (unsigned m = 0; m < kh; m++)
      for (unsigned n = 0; n < kw; n++)
        taps[((size_t)tau * kh + m) * kw + n] =
            path == PATH_SEPARABLE
                ? (float)((double)vcol[tau * kh + m] * hrow[tau * kw + n])
                : (float)((unit() - 0.35) * 2.0 / (kh * kw) / nt);
  // rows the band's outputs read (the others are NaN for floats)
  std::vector<char> need(h, 0);
  for (unsigned y = a.row0; y < a.row1; y++)
    for (unsigned m = 0; m < kh; m++) {
      long r = ref2d_map((long)y + a.cy - m, h, (cf_border)a.border);
      if (r >= 0)
        need[(size_t)r] = 1;
    }
  std::vector<uint8_t> src(a.slot_bytes * nslots);
  for (auto &b : src)
    b = (uint8_t)bits();
  for (unsigned s = 0; s < nslots; s++)
    for (unsigned y = 0; y < h; y++)
      for (unsigned x = 0; x < w; x++) {
        uint8_t *p = src.data() + s * a.slot_bytes + a.offset + y * a.pitch +
                     (size_t)x * a.step;
        double v = type == 2 ? (need[y] ? unit() * 2 - 1 : NAN)
                             : floor(unit() * (maxv + 1));
        sample_put(p, type, v);
      }
  // floats: in half the cases a few Inf or NaN in read rows, which must
  // reach exactly the outputs whose window holds them
  unsigned nbad = 0;
  if (type == 2 && bits() % 2)
    for (unsigned i = (unsigned)range(1, 3); i > 0; i--) {
      const unsigned s = (unsigned)range(0, (int)nslots - 1),
                     y = (unsigned)range(0, (int)h - 1),
                     x = (unsigned)range(0, (int)w - 1);
      if (!need[y])
        continue;
      sample_put(src.data() + s * a.slot_bytes + a.offset + y * a.pitch +
              (size_t)x * a.step,
          type, bits() % 3 ? (bits() % 2 ? INFINITY : -INFINITY) : NAN);
      nbad++;
    }
  std::vector<uint8_t> dst(a.slot_bytes), before;
  for (auto &b : dst)
    b = (uint8_t)bits();
  before = dst;
  a.src = src.data();
  a.dst = dst.data();

  if (path == PATH_SEPARABLE) {
    int vr0 = (int)a.row0 + (int)a.cy - (int)(kh - 1);
    unsigned nrows = a.row1 - a.row0 + kh - 1;
    // NaN: a read of what the row pass did not write shows
    std::vector<float> tmp((size_t)nrows * CF_SEP_PITCH(w), NAN),
        acc((size_t)(a.row1 - a.row0) * CF_SEP_PITCH(w), NAN);
    for (unsigned tau = 0; tau < nt; tau++) {
      launched(cf_k_conv2d_rows(&a, tau, hrow.data() + (size_t)tau * kw, vr0,
                                nrows, tmp.data(), nullptr),
               "cf_k_conv2d_rows");
      launched(cf_k_conv2d_cols(&a, vcol.data() + (size_t)tau * kh, tmp.data(),
                                vr0, nrows, acc.data(), tau > 0, tau + 1 == nt,
                                nullptr),
               "cf_k_conv2d_cols");
    }
  } else {
    a.generic = path == PATH_GENERIC;
    // taps in host memory too, where they must change nothing (the
    // generic kernel asked for, a shape the parameter path does not
    // take) or must be what is used (PATH_PARAM)
    const bool param_fits = cf_k_conv2d_param_taps(kw, kh, nt) != 0;
    a.taps_host = path == PATH_PARAM || (!param_fits && bits() % 2) ||
                          (path == PATH_GENERIC && bits() % 2)
                      ? taps.data()
                      : nullptr;
    if (path == PATH_PARAM && !param_fits)
      emu_fail("cf_k_conv2d_param_taps(%u, %u, %u) = 0", kw, kh, nt);
    if (param_fits != rbk_fits(kw, kh, nt))
      emu_fail("cf_k_conv2d_param_taps(%u, %u, %u) is not rbk_fits", kw, kh,
               nt);
    if (path == PATH_BLOCKED && cf_k_conv2d_blocked(kw, kh) != 1)
      emu_fail("cf_k_conv2d_blocked(%u, %u) = %d, not 1", kw, kh,
               cf_k_conv2d_blocked(kw, kh));
    if (path == PATH_WIDE && cf_k_conv2d_blocked(kw, kh) != 2)
      emu_fail("cf_k_conv2d_blocked(%u, %u) = %d, not 2", kw, kh,
               cf_k_conv2d_blocked(kw, kh));
    size_t off = 0;
    int placed = 0;
    if (const_taps)
      launched(cf_k_conv2d_const_put(taps.data(), taps.size(), &off, &placed),
               "cf_k_conv2d_const_put");
    launched(cf_k_conv2d(&a, taps.data(), placed, off, nullptr), "cf_k_conv2d");
    if (placed)
      cf_k_conv2d_const_drop(off, taps.size());
  }

  // reference: the sum over slices of the convolution, and of |k| * |x|
  // (the scale of float32 rounding)
  std::vector<double> x((size_t)w * h), ax((size_t)w * h), k((size_t)kh * kw),
      ak(k.size()), y((size_t)w * h, 0.0), ay((size_t)w * h, 0.0);
  for (unsigned tau = 0; tau < nt; tau++) {
    unsigned slot = (a.head + a.nslots - tau) % a.nslots;
    const uint8_t *base = src.data() + slot * a.slot_bytes + a.offset;
    for (unsigned r = 0; r < h; r++)
      for (unsigned q = 0; q < w; q++) {
        double v = sample_get(base + r * a.pitch + (size_t)q * a.step, type);
        x[(size_t)r * w + q] = v;
        ax[(size_t)r * w + q] = fabs(v);
      }
    for (size_t i = 0; i < k.size(); i++) {
      k[i] = taps[(size_t)tau * kh * kw + i];
      ak[i] = fabs(k[i]);
    }
    ref2d_convolve(x.data(), w, h, k.data(), kh, kw, (cf_border)a.border,
                   a.cval, y.data(), 1);
    ref2d_convolve(ax.data(), w, h, ak.data(), kh, kw, (cf_border)a.border,
                   fabs(a.cval), ay.data(), 1);
  }
  // float32 sums of n terms: within n * 2^-24 of the sum of |terms|, and
  // the separable passes round twice
  const double n_terms =
      (double)nt * (kh + kw) * (path == PATH_SEPARABLE ? 2 : 1) +
      (path == PATH_SEPARABLE ? 0 : (double)nt * kh * kw) + 2;
  for (unsigned r = a.row0; r < a.row1; r++)
    for (unsigned q = 0; q < w; q++) {
      const size_t o = a.offset + r * a.pitch + (size_t)q * a.step;
      double v = y[(size_t)r * w + q] * a.scale + a.bias;
      if (a.absolute)
        v = fabs(v);
      const double err = n_terms * 0x1p-24 *
                         (ay[(size_t)r * w + q] * fabs(a.scale) + fabs(a.bias));
      const double got = sample_get(&dst[o], type);
      if (type == 2) {
        if (!std::isfinite(v)) { // its window holds an Inf or a NaN
          if (std::isfinite(got))
            emu_fail("pixel (%u, %u): %.9g, reference %g (%u Inf/NaN in the "
                     "input)",
                     q, r, got, v, nbad);
          continue;
        }
        if (!(fabs(got - v) <= err + 0x1p-24 * fabs(v)))
          emu_fail("pixel (%u, %u): %.9g, reference %.9g (allowed %.3g, %u "
                   "Inf/NaN in the input)",
                   q, r, got, v, err, nbad);
        continue;
      }
      const double want = v != v      ? 0
                          : v <= 0    ? 0
                          : v >= maxv ? maxv
                                      : nearbyint(v);
      const bool near_tie = fabs(v - floor(v) - 0.5) <= err;
      if (got != want && !(near_tie && fabs(got - want) <= 1))
        emu_fail("pixel (%u, %u): %g, reference %g (%.6f before rounding)", q,
                 r, got, want, v);
    }
  // nothing written but the band's samples of this component
  for (size_t i = 0; i < dst.size(); i++) {
    bool ours = false;
    if (i >= a.offset) {
      const size_t j = i - a.offset, r = j / a.pitch, rem = j % a.pitch;
      ours =
          r >= a.row0 && r < a.row1 && rem / a.step < w && rem % a.step < bytes;
    }
    if (!ours && dst[i] != before[i])
      emu_fail("byte %zu (row %zu of the frame) is not an output of the band "
               "[%u, %u) but was written",
               i, i / a.pitch, a.row0, a.row1);
  }
}

// The cases a test runs: all of them, or a third with CF_TEST_QUICK=1
// (the sanitizer builds: they look for memory errors on the same paths
// the plain build has checked in full; this suite took 76 to 109 s of
// CI's ASan half, test_conv2d_wide and test_fir1d two thirds of it).
static unsigned cases(unsigned n)
{
  static int quick = -1;
  if (quick < 0) {
    const char *q = getenv("CF_TEST_QUICK");
    quick = q && *q && strcmp(q, "0") != 0;
  }
  return quick ? (n + 2) / 3 : n;
}

static void test_conv2d_blocked(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(120); c++)
    conv2d_case(c, PATH_BLOCKED);
}

static void test_conv2d_param(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(120); c++)
    conv2d_case(c, PATH_PARAM);
}

static void test_conv2d_wide(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(60); c++)
    conv2d_case(c, PATH_WIDE);
}

static void test_conv2d_generic(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(60); c++)
    conv2d_case(c, PATH_GENERIC);
}

static void test_separable(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(60); c++)
    conv2d_case(c, PATH_SEPARABLE);
}

// ---- audio
// -------------------------------------------------------------------

// Routes of a random kernel set on cin inputs: shared (one kernel, output
// i reads input i), per-channel (kernel i), or a matrix (cout x cin, some
// pairs silent). kern[x] are the kernels, route (o, i) -> x or -1.
struct routing {
  unsigned cin, cout;
  std::vector<std::vector<float>> kern;
  std::vector<int> route; // cout * cin
  const char *kind;
};

static routing random_routing(size_t maxlen)
{
  routing R;
  R.cin = (unsigned)range(1, 4);
  int kind = range(0, 2);
  R.cout = kind == 2 ? (unsigned)range(1, 4) : R.cin;
  R.kind = kind == 0 ? "shared" : kind == 1 ? "per-channel" : "matrix";
  R.route.assign((size_t)R.cout * R.cin, -1);
  size_t nk = kind == 0 ? 1 : kind == 1 ? R.cin : (size_t)R.cout * R.cin;
  for (size_t x = 0; x < nk; x++) {
    size_t len = bits() % 4 ? ref_rng_range(&rng, 1, maxlen)
                            : ref_rng_range(&rng, 1, 16);
    std::vector<float> h(len);
    ref_rng_fill(&rng, h.data(), len);
    for (auto &v : h)
      v /= (float)sqrt((double)len);
    R.kern.push_back(h);
  }
  for (unsigned o = 0; o < R.cout; o++)
    for (unsigned i = 0; i < R.cin; i++) {
      if (kind == 0)
        R.route[o * R.cin + i] = o == i ? 0 : -1;
      else if (kind == 1)
        R.route[o * R.cin + i] = o == i ? (int)i : -1;
      else if (bits() % 5) // some pairs silent
        R.route[o * R.cin + i] = (int)(o * R.cin + i);
    }
  return R;
}

// The launchers' routes of R: output o's are [off[o], off[o + 1]), one per
// input with a kernel, made by make(input, kernel index).
template <class Route, class Make>
static void routes_of(const routing &R, Make make, std::vector<Route> &routes,
                      std::vector<unsigned> &off)
{
  for (unsigned o = 0; o < R.cout; o++) {
    off.push_back((unsigned)routes.size());
    for (unsigned i = 0; i < R.cin; i++)
      if (R.route[o * R.cin + i] >= 0)
        routes.push_back(make(i, (size_t)R.route[o * R.cin + i]));
  }
  off.push_back((unsigned)routes.size());
}

static unsigned tap_pad(size_t len)
{
  return (unsigned)((len + CF_FIR1D_TAP_PAD - 1) / CF_FIR1D_TAP_PAD *
                    CF_FIR1D_TAP_PAD);
}

// y[f][o] = sum_i sum_k h_(o,i)[k] x_i[f - k], float64.
static std::vector<double>
routed_reference(const routing &R, const std::vector<float> &x, size_t n)
{
  std::vector<double> y(n * R.cout, 0.0);
  std::vector<float> xi(n);
  for (unsigned o = 0; o < R.cout; o++)
    for (unsigned i = 0; i < R.cin; i++) {
      int r = R.route[o * R.cin + i];
      if (r < 0)
        continue;
      for (size_t f = 0; f < n; f++)
        xi[f] = x[f * R.cin + i];
      const std::vector<float> &h = R.kern[(size_t)r];
      for (size_t f = 0; f < n; f++)
        y[f * R.cout + o] += ref_conv_at(xi.data(), n, h.data(), h.size(), f);
    }
  return y;
}

static void check_audio(const char *what, const std::vector<float> &got,
                        const std::vector<double> &want, unsigned cout,
                        size_t n)
{
  for (unsigned o = 0; o < cout; o++) {
    double e = ref_rel_l2(got.data() + o, cout, want.data() + o, cout, n);
    if (!(e <= 2e-6))
      emu_fail("%s: output %u: relative L2 error %.3g over %zu frames", what, o,
               e, n);
  }
}

static void fir1d_case(unsigned c)
{
  // longest kernels: past the tiled kernel's segment (2048), past the
  // streaming kernel's reach (504), past one float chunk (64), or within
  static const size_t maxlens[] = {3000, 600, 300, 128, 128, 64};
  routing R = random_routing(maxlens[range(0, 5)]);
  bool const_taps = bits() % 2;
  // the launcher's choice (the streaming kernel where it fits, with its
  // own number of blocks or a few, each walking many tiles), or the tiled
  // kernel with 16 or 8 outputs per thread in every launch
  const int width = bits() % 3 ? 0 : bits() % 2 ? 16 : 8;
  const unsigned blocks = bits() % 2 ? 0 : (unsigned)range(1, 3);
  // the streaming kernel's 16 outputs a thread (up to 64 taps), or 8
  const int swidth = bits() % 2 ? 16 : 0;
  cf_k_fir1d_set_width(width);
  cf_k_fir1d_set_stream_blocks(blocks);
  cf_k_fir1d_set_stream_width(swidth);
  // taps padded to CF_FIR1D_TAP_PAD, routes per output
  std::vector<float> taps;
  std::vector<unsigned long long> koff;
  unsigned max_len = 0;
  for (auto &h : R.kern) {
    koff.push_back(taps.size());
    unsigned len = tap_pad(h.size());
    taps.insert(taps.end(), h.begin(), h.end());
    taps.resize(koff.back() + len, 0.0f);
    max_len = len > max_len ? len : max_len;
  }
  std::vector<cf_fir1d_route> routes;
  std::vector<unsigned> route_off;
  routes_of(
      R,
      [&](unsigned i, size_t x) {
        return cf_fir1d_route{i, tap_pad(R.kern[x].size()), koff[x]};
      },
      routes, route_off);
  int one_route = 1;
  for (unsigned o = 0; o < R.cout; o++)
    one_route &= route_off[o + 1] - route_off[o] == 1;
  // and sometimes not said
  one_route &= bits() % 4 != 0;
  size_t off = 0;
  int placed = 0;
  if (const_taps)
    launched(cf_k_fir1d_const_put(taps.data(), taps.size(), &off, &placed),
             "cf_k_fir1d_const_put");
  if (placed)
    for (auto &e : routes)
      e.off += off;
  // a ring of a power of two frames, long enough for the kernel's reach
  // back from any chunk; in most cases the stream is longer (it wraps,
  // and the kernel's reads straddle the wrap at every alignment)
  size_t cap = 1;
  while (cap < max_len + 4096 + (size_t)range(0, 3000))
    cap <<= 1;
  const size_t n = bits() % 4 == 0 || max_len > 512
                       ? ref_rng_range(&rng, 1, 6000)
                       : ref_rng_range(&rng, cap + 1, 2 * cap + 3000);
  std::vector<float> ring(cap * R.cin, NAN), x(n * R.cin), y(n * R.cout);
  ref_rng_fill(&rng, x.data(), x.size());
  unsigned long long t = 0;
  size_t sizes[4096];
  size_t nc = ref_chunking(&rng, n, 64, sizes, 4096), done = 0;
  snprintf(case_desc, sizeof case_desc,
           "fir1d #%u: %s, %u in, %u out, max len %u, %zu frames in %zu "
           "chunks, ring %zu%s, %s",
           c, R.kind, R.cin, R.cout, max_len, n, nc, cap,
           placed ? ", constant taps" : "",
           width ? (width == 16 ? "tiled, 16 a thread" : "tiled, 8 a thread")
           : one_route && max_len <= CF_FIR1D_STREAM_TAPS &&
                   R.cout <= CF_FIR1D_STREAM_COUT
               ? (swidth && max_len <= 64
                      ? (blocks ? "streaming 16 a thread, few blocks"
                                : "streaming 16 a thread")
                      : blocks ? "streaming, few blocks"
                               : "streaming")
               : "the launcher's choice (tiled)");
  for (size_t k = 0; k < nc; k++) {
    size_t m = sizes[k] > 4096 ? 4096 : sizes[k];
    if (k + 1 == nc)
      m = n - done;
    for (size_t left = m; left;) { // the launchers take up to 4096 frames
      unsigned s = (unsigned)(left > 4096 ? 4096 : left);
      launched(cf_k_ring_write(ring.data(), cap - 1, x.data() + done * R.cin,
                               R.cin, s, &t, nullptr),
               "cf_k_ring_write");
      launched(cf_k_fir1d(y.data() + done * R.cout, R.cout, ring.data(),
                          cap - 1, &t, s, routes.data(), route_off.data(),
                          max_len, taps.data(), placed,
                          one_route ? routes.data() : nullptr, nullptr),
               "cf_k_fir1d");
      launched(cf_k_time_advance(&t, s, nullptr), "cf_k_time_advance");
      done += s;
      left -= s;
    }
    if (done == n)
      break;
  }
  if (placed)
    cf_k_fir1d_const_drop(off, taps.size());
  cf_k_fir1d_set_width(0);
  cf_k_fir1d_set_stream_blocks(0);
  cf_k_fir1d_set_stream_width(0);
  if (t != n)
    emu_fail("the device time is %llu after %zu frames", t, n);
  check_audio("fir1d", y, routed_reference(R, x, n), R.cout, n);
}

static void test_fir1d(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(100); c++)
    fir1d_case(c);
}

static void ols_case(unsigned c)
{
  const unsigned B =
      (unsigned)(bits() % 2 ? 1u << range(4, 9) : (unsigned)range(8, 300));
  routing R = random_routing(bits() % 3 ? (size_t)B * 3 : (size_t)B * 12);
  const unsigned nblocks = (unsigned)range(1, 24);
  const size_t n = (size_t)B * nblocks, n2 = 2 * (size_t)B, bins = B + 1;
  // partition spectra: kernel x's partition p is taps [pB, (p+1)B) at the
  // start of a zeroed 2B window, transformed (src/cuda/fir.c, bank_ols)
  std::vector<unsigned long long> hoff;
  std::vector<float> Hre;
  unsigned pmax = 0, ptot = 0;
  for (auto &h : R.kern) {
    unsigned parts = (unsigned)((h.size() + B - 1) / B);
    hoff.push_back((unsigned long long)ptot * bins);
    ptot += parts;
    pmax = parts > pmax ? parts : pmax;
  }
  std::vector<float> real((size_t)ptot * n2, 0.0f);
  std::vector<float2> H((size_t)ptot * bins);
  for (size_t x = 0, p0 = 0; x < R.kern.size(); x++) {
    const std::vector<float> &h = R.kern[x];
    for (size_t j = 0; j < h.size(); j++)
      real[(p0 + j / B) * n2 + j % B] = h[j];
    p0 += (h.size() + B - 1) / B;
  }
  fftwf_plan plan;
  for (unsigned p = 0; p < ptot; p++) {
    plan = fftwf_plan_dft_r2c_1d((int)n2, real.data() + (size_t)p * n2,
                                 (fftwf_complex *)(H.data() + (size_t)p * bins),
                                 FFTW_ESTIMATE);
    fftwf_execute(plan);
    fftwf_destroy_plan(plan);
  }
  std::vector<cf_ols_route> routes;
  std::vector<unsigned> route_off;
  routes_of(
      R,
      [&](unsigned i, size_t x) {
        return cf_ols_route{i, (unsigned)((R.kern[x].size() + B - 1) / B),
                            hoff[x]};
      },
      routes, route_off);
  const unsigned pcap = pmax + (unsigned)range(0, 3);
  const unsigned groups = (unsigned)range(1, 3);
  // the engine's ring: 4B frames, a power of two (the stream wraps it
  // from the fourth block on)
  size_t cap = 1;
  while (cap < 2 * n2)
    cap <<= 1;
  std::vector<float> ring(cap * R.cin, NAN), x(n * R.cin), y(n * R.cout);
  ref_rng_fill(&rng, x.data(), x.size());
  std::vector<float> xw(n2 * R.cin), yw(n2 * R.cout);
  std::vector<float2> X(bins * R.cin), Y(bins * R.cout),
      fdl((size_t)R.cin * pcap * bins, float2{NAN, NAN}),
      partial((size_t)groups * R.cout * bins);
  snprintf(case_desc, sizeof case_desc,
           "ols #%u: B %u, %s, %u in, %u out, %u partitions at most, pcap "
           "%u, %u groups, %u blocks",
           c, B, R.kind, R.cin, R.cout, pmax, pcap, groups, nblocks);
  // the FDL starts as the spectra of the silence before time 0
  for (auto &v : fdl)
    v = float2{0.0f, 0.0f};
  unsigned long long t = 0;
  for (unsigned j = 0; j < nblocks; j++) {
    launched(cf_k_ring_write(ring.data(), cap - 1, x.data() + t * R.cin, R.cin,
                             B, &t, nullptr),
             "cf_k_ring_write");
    launched(
        cf_k_ols_window(xw.data(), ring.data(), cap - 1, R.cin, B, &t, nullptr),
        "cf_k_ols_window");
    for (unsigned i = 0; i < R.cin; i++) { // cuFFT's batched R2C
      plan = fftwf_plan_dft_r2c_1d((int)n2, xw.data() + i * n2,
                                   (fftwf_complex *)(X.data() + i * bins),
                                   FFTW_ESTIMATE);
      fftwf_execute(plan);
      fftwf_destroy_plan(plan);
    }
    launched(cf_k_ols_push(fdl.data(), X.data(), R.cin, B, pcap, &t, nullptr),
             "cf_k_ols_push");
    launched(cf_k_ols_cmac(partial.data(), fdl.data(), H.data(), routes.data(),
                           route_off.data(), R.cout, B, pcap, groups, &t,
                           nullptr),
             "cf_k_ols_cmac");
    launched(
        cf_k_ols_reduce(Y.data(), partial.data(), R.cout, B, groups, nullptr),
        "cf_k_ols_reduce");
    for (unsigned o = 0; o < R.cout; o++) { // cuFFT's batched C2R
      plan =
          fftwf_plan_dft_c2r_1d((int)n2, (fftwf_complex *)(Y.data() + o * bins),
                                yw.data() + o * n2, FFTW_ESTIMATE);
      fftwf_execute(plan);
      fftwf_destroy_plan(plan);
    }
    launched(cf_k_ols_extract(y.data() + t * R.cout, yw.data(), R.cout, B,
                              1.0f / (float)n2, nullptr),
             "cf_k_ols_extract");
    launched(cf_k_time_advance(&t, B, nullptr), "cf_k_time_advance");
  }
  check_audio("ols", y, routed_reference(R, x, n), R.cout, n);
}

static void test_ols(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(40); c++)
    ols_case(c);
}

static void test_crossfade(void **state)
{
  (void)state;
  for (unsigned c = 0; c < cases(40); c++) {
    const size_t frames = ref_rng_range(&rng, 1, 3000);
    const unsigned ch = (unsigned)range(1, 4);
    const size_t X = bits() % 4 ? ref_rng_range(&rng, 0, 4000) : 0;
    const size_t pos = ref_rng_range(&rng, 0, 4000);
    snprintf(case_desc, sizeof case_desc,
             "crossfade #%u: %zu frames of %u channels, X %zu, pos %zu", c,
             frames, ch, X, pos);
    std::vector<float> yn(frames * ch), yo(frames * ch);
    ref_rng_fill(&rng, yn.data(), yn.size());
    ref_rng_fill(&rng, yo.data(), yo.size());
    std::vector<float> want = yn;
    launched(cf_k_crossfade(yn.data(), yo.data(), frames, ch, pos, X, nullptr),
             "cf_k_crossfade");
    for (size_t f = 0; f < frames; f++)
      for (unsigned k = 0; k < ch; k++) {
        double w = pos + f + 1 >= X + 1
                       ? 1.0
                       : (double)(pos + f + 1) / (double)(X + 1);
        double v = (1 - w) * yo[f * ch + k] + w * want[f * ch + k];
        if (fabs(yn[f * ch + k] - v) > 1e-6 * (1 + fabs(v)))
          emu_fail("frame %zu channel %u: %.9g, want %.9g", f, k,
                   yn[f * ch + k], v);
      }
  }
}

int main(void)
{
  seed = ref_seed();
  ref_rng_init(&rng, seed);
  const char *filter = getenv("CF_TEST_FILTER");
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d_blocked),
      cmocka_unit_test(test_conv2d_param),
      cmocka_unit_test(test_conv2d_wide),
      cmocka_unit_test(test_conv2d_generic),
      cmocka_unit_test(test_separable),
      cmocka_unit_test(test_fir1d),
      cmocka_unit_test(test_ols),
      cmocka_unit_test(test_crossfade),
  };
  return cmocka_run_group_tests_name("kernels_emu", tests, NULL, NULL);
}
