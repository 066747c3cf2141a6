// The register-blocked conv2d kernel's thread code (kernels/conv2d_rb.cuh)
// run on the CPU, block by block and phase by phase as the GPU runs it
// (every thread stages, barrier, every thread sums, ..., every thread
// stores), against tests/ref2d.c's float64 naive convolution. Runs where
// nvcc builds the CUDA backend, with or without a device: the index math,
// borders, bands, temporal slices, types and store rules of the kernel are
// checked on every CI run; races and the device itself are left to
// tests/gpu and compute-sanitizer.
//
// Random cases: u8, u16 and f32 samples, interleaved (step 1..4 samples,
// any offset, padded pitch), sizes from 1 pixel to several tiles each
// way (interior tiles take the no-border path), every supported width
// (odd 3..15) and height 1..16, every border mode, 1..3 slices in a ring
// of frames, scale, bias and absolute, and a band [row0, row1) of rows.
// For float samples every row no output of the band needs is NaN, so a
// read past the band shows. Bytes outside the band's outputs must stay
// untouched. CF_TEST_SEED=N replays a run.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

extern "C" {
#include <cmocka.h>

#include "ref2d.h"
}

#include "conv2d_rb.cuh"

static unsigned long long rng_state;

static unsigned long long rnd(void)
{ // splitmix64
  unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int range(int lo, int hi) { return lo + (int)(rnd() % (unsigned)(hi - lo + 1)); }
static double unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static char case_desc[512];
static unsigned long long seed;

static void emu_fail(const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("FAILED (CF_TEST_SEED=%llu)\n  case: %s\n  %s\n", seed,
              case_desc, msg);
  fail_msg("conv2d emulation");
}

// Run the kernel's grid on the CPU, as conv2d.cu's conv2d_rb_kernel does.
template <int KW>
static void emulate(const cf_conv2d_args &a, const float *taps)
{
  const int kh = (int)a.kh;
  const int gx = ((int)a.w + RB_TW - 1) / RB_TW;
  const int gy = ((int)(a.row1 - a.row0) + RB_TH - 1) / RB_TH;
  const size_t smem = rb_smem(KW, kh) / sizeof(float);
  std::vector<float4> sm4((smem + 3) / 4);
  float *sm = reinterpret_cast<float *>(sm4.data());
  static float acc[RB_TY][RB_TX][RB_RY][RB_RX];
  for (int by = 0; by < gy; by++)
    for (int bx = 0; bx < gx; bx++) {
      const int x0 = bx * RB_TW, y0 = (int)a.row0 + by * RB_TH;
      const int rlim = tile_rows_read(RB_TH + kh - 1, kh, (int)a.row1 - y0);
      memset(acc, 0, sizeof acc);
      for (unsigned tau = 0; tau < a.nt; tau++) {
        // stale values from the last tile or slice: NaN, so that a staged
        // position the stage phase skipped shows
        for (size_t i = 0; i < smem; i++)
          sm[i] = NAN;
        for (int ty = 0; ty < RB_TY; ty++)
          for (int tx = 0; tx < RB_TX; tx++)
            rb_stage<KW>(a, slice_base(a, tau), sm, tx, ty, x0, y0, rlim);
        // every position staged, and (float samples: the rows no output
        // of the band reads are NaN) none from such a row
        for (size_t i = 0; i < smem; i++)
          if (sm[i] != sm[i])
            emu_fail("tile (%d, %d), slice %u: staged float %zu (row %zu) is "
                     "NaN: not staged, or from a row the band does not read",
                     x0, y0, tau, i, i / rb_sw(KW));
        const rb_global_taps tp = {taps + (size_t)tau * kh * KW};
        for (int ty = 0; ty < RB_TY; ty++)
          for (int tx = 0; tx < RB_TX; tx++)
            rb_compute<KW>(sm, tx, ty, kh, tp, acc[ty][tx]);
      }
      for (int ty = 0; ty < RB_TY; ty++)
        for (int tx = 0; tx < RB_TX; tx++)
          rb_store(a, x0, y0, tx, ty, acc[ty][tx]);
    }
}

static void emulate_kw(const cf_conv2d_args &a, const float *taps)
{
  switch (a.kw) {
  case 3: emulate<3>(a, taps); break;
  case 5: emulate<5>(a, taps); break;
  case 7: emulate<7>(a, taps); break;
  case 9: emulate<9>(a, taps); break;
  case 11: emulate<11>(a, taps); break;
  case 13: emulate<13>(a, taps); break;
  case 15: emulate<15>(a, taps); break;
  default: emu_fail("test bug: kw %u", a.kw);
  }
}

static double get(const uint8_t *p, unsigned type)
{
  if (type == 0)
    return *p;
  if (type == 1) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  float f;
  memcpy(&f, p, 4);
  return f;
}

static void put(uint8_t *p, unsigned type, double v)
{
  if (type == 0)
    *p = (uint8_t)v;
  else if (type == 1) {
    uint16_t u = (uint16_t)v;
    memcpy(p, &u, 2);
  } else {
    float f = (float)v;
    memcpy(p, &f, 4);
  }
}

static void one_case(unsigned c)
{
  const unsigned type = (unsigned)range(0, 2), bytes = type == 2 ? 4 : type + 1;
  // a third of the widths and heights a few pixels off a tile edge
  unsigned w = (unsigned)(rnd() % 3 ? range(1, 300) : range(300, 900));
  unsigned h = (unsigned)(rnd() % 3 ? range(1, 40) : range(40, 90));
  if (rnd() % 3 == 0)
    w = (unsigned)(RB_TW * range(1, 3) + range(-8, 8));
  if (rnd() % 3 == 0)
    h = (unsigned)(RB_TH * range(1, 5) + range(-8, 8));
  const unsigned ncomp = (unsigned)range(1, 4), comp = (unsigned)range(0, ncomp - 1);
  const unsigned kw = 2 * (unsigned)range(1, 7) + 1, kh = (unsigned)range(1, RB_KH_MAX);
  const unsigned nt = (unsigned)range(1, 3), nslots = nt + (unsigned)range(0, 2);
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
  if (rnd() % 3 == 0)
    a.row0 = 0, a.row1 = h;
  a.kh = kh, a.kw = kw, a.cy = kh / 2, a.cx = kw / 2;
  a.border = range(0, 4);
  const double maxv = type == 0 ? 255 : type == 1 ? 65535 : 1;
  a.cval = (float)(unit() * maxv);
  a.scale = (float)(rnd() % 2 ? 1.0 : 0.5 + unit());
  a.bias = (float)(rnd() % 2 ? 0.0 : (unit() - 0.5) * maxv * 0.2);
  a.absolute = rnd() % 4 == 0;
  snprintf(case_desc, sizeof case_desc,
           "#%u: type %u, %ux%u, comp %u of %u, pitch %zu, kernel %ux%u, "
           "border %d, %u slices of %u (head %u), rows [%u, %u), scale %g, "
           "bias %g, abs %d",
           c, type, w, h, comp, ncomp, a.pitch, kh, kw, a.border, nt, nslots,
           a.head, a.row0, a.row1, a.scale, a.bias, a.absolute);

  // taps: signed, summing to about 1 in absolute value per slice
  std::vector<float> taps((size_t)nt * kh * kw);
  for (auto &t : taps)
    t = (float)((unit() - 0.35) * 2.0 / (kh * kw) / nt);
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
    b = (uint8_t)rnd();
  for (unsigned s = 0; s < nslots; s++)
    for (unsigned y = 0; y < h; y++)
      for (unsigned x = 0; x < w; x++) {
        uint8_t *p = src.data() + s * a.slot_bytes + a.offset +
                     y * a.pitch + (size_t)x * a.step;
        double v = type == 2 ? (need[y] ? unit() * 2 - 1 : NAN)
                             : floor(unit() * (maxv + 1));
        put(p, type, v);
      }
  std::vector<uint8_t> dst(a.slot_bytes), before;
  for (auto &b : dst)
    b = (uint8_t)rnd();
  before = dst;
  a.src = src.data();
  a.dst = dst.data();
  emulate_kw(a, taps.data());

  // reference: sum over slices of the convolution, and of |k| * |x| (the
  // float32 rounding scale)
  std::vector<double> x((size_t)w * h), ax((size_t)w * h), k((size_t)kh * kw),
      ak(k.size()), y((size_t)w * h, 0.0), ay((size_t)w * h, 0.0);
  for (unsigned tau = 0; tau < nt; tau++) {
    const uint8_t *base = slice_base(a, tau);
    for (unsigned r = 0; r < h; r++)
      for (unsigned q = 0; q < w; q++) {
        x[(size_t)r * w + q] = get(base + r * a.pitch + (size_t)q * a.step, type);
        ax[(size_t)r * w + q] = fabs(x[(size_t)r * w + q]);
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
  // float32 sums of n terms: within n * 2^-24 of the sum of |terms| (and
  // the scale and bias after it)
  const double n_terms = (double)nt * kh * kw + 2;
  for (unsigned r = a.row0; r < a.row1; r++)
    for (unsigned q = 0; q < w; q++) {
      const size_t o = a.offset + r * a.pitch + (size_t)q * a.step;
      double v = y[(size_t)r * w + q] * a.scale + a.bias;
      if (a.absolute)
        v = fabs(v);
      const double err = n_terms * 0x1p-24 *
                         (ay[(size_t)r * w + q] * fabs(a.scale) + fabs(a.bias));
      const double got = get(&dst[o], type);
      if (type == 2) {
        if (!(fabs(got - v) <= err + 0x1p-24 * fabs(v)))
          emu_fail("pixel (%u, %u): %.9g, reference %.9g (allowed %.3g)", q, r,
               got, v, err);
        continue;
      }
      const double want = v != v ? 0 : v <= 0 ? 0 : v >= maxv ? maxv : nearbyint(v);
      const bool near_tie = fabs(v - floor(v) - 0.5) <= err;
      if (got != want && !(near_tie && fabs(got - want) <= 1))
        emu_fail("pixel (%u, %u): %g, reference %g (%.6f before rounding)", q, r,
             got, want, v);
    }
  // nothing written but the band's samples of this component
  for (size_t i = 0; i < dst.size(); i++) {
    bool ours = false;
    if (i >= a.offset) {
      const size_t j = i - a.offset, r = j / a.pitch, rem = j % a.pitch;
      ours = r >= a.row0 && r < a.row1 && rem / a.step < w &&
             rem % a.step < bytes;
    }
    if (!ours && dst[i] != before[i])
      emu_fail("byte %zu (row %zu of the frame) is not an output of the band "
           "[%u, %u) but was written", i, i / a.pitch, a.row0, a.row1);
  }
}

static void test_emulated_kernel(void **state)
{
  (void)state;
  for (unsigned c = 0; c < 160; c++)
    one_case(c);
}

int main(void)
{
  const char *s = getenv("CF_TEST_SEED");
  seed = s ? strtoull(s, NULL, 10) : (unsigned long long)time(NULL);
  rng_state = seed;
  printf("seed %llu (rerun with CF_TEST_SEED=%llu)\n", seed, seed);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_emulated_kernel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
