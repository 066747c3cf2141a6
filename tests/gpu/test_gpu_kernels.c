/* The device kernels on their own, through their launchers
 * (kernels/cf_kernels.h), on device memory, against float64 references:
 * small and quick, so that compute-sanitizer's slower tools (racecheck,
 * initcheck; bench/gpu-check's sanitizer step) cover every variant in
 * their share of the time, including what the engine suites reach only at
 * sizes too large for those tools:
 *  - fir1d: the streaming kernel with a few blocks per output walking
 *    many tiles (each tile's input loaded while the one before is summed),
 *    8 or 16 outputs a thread, its float (up to 64 taps) and double sums, taps in the constant pool
 *    or staged from device memory; the tiled kernel, 8 and 16 outputs per
 *    thread; a ring that wraps, and times before 0;
 *  - conv2d: every direct kernel (register-blocked with its taps as
 *    launch parameters, square odd 3..15; register-blocked with taps in
 *    the constant pool or device memory, odd widths to 15; its "wide"
 *    variant, widths to 64; the generic one) and the separable row and
 *    column passes; u8/u16/f32, interleaved components, padded pitch,
 *    every border, scale/bias/|.|, a band of rows; no byte but the band's
 *    outputs written.
 * tests/meson.build runs it on the emulated device too (gpu_kernels-
 * cudaemu), so that it is known to pass before a GPU runs it.
 * CF_TEST_QUICK=1: fewer, smaller cases. CF_TEST_SEED=N replays a run.
 * Exits 77 with "skipped: ..." where there is no device or no CUDA. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef CF_TEST_NO_CUDART /* a build without CUDA: main() skips */
#include <cuda_runtime_api.h>

#include "cf_kernels.h"

#include "../ref.h"
#include "../ref2d.h"
#include "../kernel_samples.h"
#include "../test_filter.h"

static ref_rng rng;
static uint64_t seed;
static int quick;
static char desc[400];

static void case_fail(const char *fmt, ...)
{
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("%s\n  case: %s\n  seed %llu (CF_TEST_SEED=%llu replays)\n", msg,
              desc, (unsigned long long)seed, (unsigned long long)seed);
  fail_msg("kernel case failed");
}

static int range(int lo, int hi) /* lo..hi inclusive */
{
  return lo + (int)ref_rng_range(&rng, 0, (size_t)(hi - lo));
}

static void cu(cudaError_t e, const char *what)
{
  if (e != cudaSuccess)
    case_fail("%s: %s", what, cudaGetErrorString(e));
}

static void *dev(size_t bytes)
{
  void *p = NULL;
  cu(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  return p;
}

/* ---- fir1d ------------------------------------------------------------ */

static void fir_case(unsigned c)
{
  const unsigned cin = (unsigned)range(1, 3), cout = cin;
  const int per_channel = range(0, 1);
  const unsigned nk = per_channel ? cin : 1;
  static const unsigned maxlens[] = {16, 64, 128, 504, 900};
  const unsigned maxlen = maxlens[range(0, 4)];
  /* kernels, padded to CF_FIR1D_TAP_PAD with zeros */
  unsigned len[3], pad[3], koff[3], lmax = 0, total = 0;
  for (unsigned x = 0; x < nk; x++) {
    len[x] = (unsigned)range(1, (int)maxlen);
    pad[x] = (len[x] + CF_FIR1D_TAP_PAD - 1) / CF_FIR1D_TAP_PAD *
             CF_FIR1D_TAP_PAD;
    koff[x] = total;
    total += pad[x];
    lmax = pad[x] > lmax ? pad[x] : lmax;
  }
  float *taps = calloc(total, sizeof *taps);
  for (unsigned x = 0; x < nk; x++) {
    ref_rng_fill(&rng, taps + koff[x], len[x]);
    for (unsigned k = 0; k < len[x]; k++)
      taps[koff[x] + k] /= sqrtf((float)len[x]);
  }
  const size_t frames =
      ref_rng_range(&rng, 1, quick ? 20000 : (range(0, 3) ? 300000 : 40000));
  /* the device time: from 0 (the first taps reach before time 0) or far
   * on (the ring wraps inside the window) */
  const unsigned long long t0 =
      range(0, 2) ? ref_rng_range(&rng, 0, 3 * lmax)
                  : ref_rng_range(&rng, 0, (size_t)1 << 26);
  size_t R = 1;
  while (R < frames + lmax + ref_rng_range(&rng, 0, 5000))
    R <<= 1;
  const int variant = range(0, 3); /* 0, 1 streaming; 2 tiled 8; 3 tiled 16 */
  const unsigned blocks = variant == 1 ? (unsigned)range(1, 4) : 0;
  const int swidth = variant < 2 && range(0, 1) ? 16 : 0;
  int const_taps = range(0, 1);
  snprintf(desc, sizeof desc,
           "fir1d #%u: %s, %u channels, longest %u taps, %zu frames from "
           "time %llu, ring %zu, %s%s%s",
           c, per_channel ? "per-channel" : "shared", cin, lmax, frames,
           t0, R,
           variant == 0   ? "streaming"
           : variant == 1 ? "streaming, few blocks"
           : variant == 2 ? "tiled, 8 a thread"
                          : "tiled, 16 a thread",
           swidth && lmax <= 64 ? ", 16 a thread" : "",
           const_taps ? ", constant taps" : "");

  /* input x_i(time) for times [t0 - lmax, t0 + frames), 0 before 0;
   * the ring holds it at time & (R - 1), NaN elsewhere */
  const size_t span = frames + lmax;
  float *x = malloc(span * cin * sizeof *x);
  float *ring = malloc(R * cin * sizeof *ring);
  for (size_t i = 0; i < R * cin; i++)
    ring[i] = NAN;
  ref_rng_fill(&rng, x, span * cin);
  for (size_t j = 0; j < span; j++) {
    const long long tm = (long long)t0 - (long long)lmax + (long long)j;
    for (unsigned i = 0; i < cin; i++) {
      if (tm < 0) {
        x[j * cin + i] = 0.0f;
        continue;
      }
      ring[(size_t)i * R + ((size_t)tm & (R - 1))] = x[j * cin + i];
    }
  }
  cf_fir1d_route routes[3];
  unsigned off[4];
  size_t coff = 0;
  int placed = 0;
  if (const_taps)
    cu(cf_k_fir1d_const_put(taps, total, &coff, &placed),
       "cf_k_fir1d_const_put");
  for (unsigned o = 0; o < cout; o++) {
    const unsigned xk = per_channel ? o : 0;
    routes[o].in = o;
    routes[o].len = pad[xk];
    routes[o].off = (placed ? coff : 0) + koff[xk];
    off[o] = o;
  }
  off[cout] = cout;
  float *d_ring = dev(R * cin * sizeof(float));
  float *d_y = dev(frames * cout * sizeof(float));
  float *d_taps = dev(total * sizeof(float));
  unsigned long long *d_t = dev(sizeof *d_t);
  cf_fir1d_route *d_routes = dev(sizeof routes);
  unsigned *d_off = dev(sizeof off);
  cu(cudaMemcpy(d_ring, ring, R * cin * sizeof(float), cudaMemcpyHostToDevice),
     "cudaMemcpy");
  cu(cudaMemcpy(d_taps, taps, total * sizeof(float), cudaMemcpyHostToDevice),
     "cudaMemcpy");
  cu(cudaMemcpy(d_t, &t0, sizeof t0, cudaMemcpyHostToDevice), "cudaMemcpy");
  cu(cudaMemcpy(d_routes, routes, sizeof routes, cudaMemcpyHostToDevice),
     "cudaMemcpy");
  cu(cudaMemcpy(d_off, off, sizeof off, cudaMemcpyHostToDevice),
     "cudaMemcpy");
  cu(cudaMemset(d_y, 0xff, frames * cout * sizeof(float)), "cudaMemset");
  cf_k_fir1d_set_width(variant == 2 ? 8 : variant == 3 ? 16 : 0);
  cf_k_fir1d_set_stream_blocks(blocks);
  cf_k_fir1d_set_stream_width(swidth);
  cu(cf_k_fir1d(d_y, cout, d_ring, R - 1, d_t, (unsigned)frames, d_routes,
                d_off, lmax, d_taps, placed, routes, 0),
     "cf_k_fir1d");
  cf_k_fir1d_set_width(0);
  cf_k_fir1d_set_stream_blocks(0);
  cf_k_fir1d_set_stream_width(0);
  float *y = malloc(frames * cout * sizeof *y);
  cu(cudaMemcpy(y, d_y, frames * cout * sizeof(float), cudaMemcpyDeviceToHost),
     "cf_k_fir1d, then cudaMemcpy");
  if (placed)
    cf_k_fir1d_const_drop(coff, total);
  /* every frame where the sums are few, else the first and last 3000,
   * 3000 more at random and both sides of each tile edge */
  const int all = frames * lmax <= (quick ? 4000000u : 30000000u);
  const size_t nsample = all ? frames : 9000 + 2 * (frames / 1024);
  for (size_t s = 0; s < nsample; s++) {
    size_t f = s;
    if (!all) {
      if (s < 3000)
        f = s;
      else if (s < 6000)
        f = frames - 1 - (s - 3000);
      else if (s < 9000)
        f = ref_rng_range(&rng, 0, frames - 1);
      else
        f = ((s - 9000) / 2 + 1) * 1024 - (s % 2);
      if (f >= frames)
        continue;
    }
    for (unsigned o = 0; o < cout; o++) {
      const unsigned xk = per_channel ? o : 0;
      const float *h = taps + koff[xk];
      double want = 0, mag = 0;
      for (unsigned k = 0; k < len[xk]; k++) {
        const double v = (double)h[k] * x[(f + lmax - k) * cin + o];
        want += v;
        mag += fabs(v);
      }
      const double got = y[f * cout + o];
      const double tol = (double)pad[xk] * 0x1p-24 * mag + 1e-30;
      if (!(fabs(got - want) <= tol))
        case_fail("frame %zu, output %u: %.9g, reference %.9g (allowed %.3g)", f,
             o, got, want, tol);
    }
  }
  void *p[] = {d_ring, d_y, d_taps, d_t, d_routes, d_off};
  for (size_t i = 0; i < sizeof p / sizeof *p; i++)
    cu(cudaFree(p[i]), "cudaFree");
  free(taps), free(x), free(ring), free(y);
}

static void test_fir1d(void **state)
{
  (void)state;
  for (unsigned c = 0; c < (quick ? 12u : 40u); c++)
    fir_case(c);
}

/* ---- conv2d ----------------------------------------------------------- */

/* The integer a float32 sum within err of v may store. */
static double quantize(double v, double maxv)
{
  return v != v ? 0 : v <= 0 ? 0 : v >= maxv ? maxv : nearbyint(v);
}

enum { P_PARAM, P_RB, P_WIDE, P_GENERIC, P_SEPARABLE, P_COUNT };

static void conv2d_case(unsigned c)
{
  const unsigned type = (unsigned)range(0, 2), bytes = type == 2 ? 4 : type + 1;
  const int path = (int)(c % P_COUNT);
  unsigned kh, kw;
  switch (path) {
  case P_PARAM:
    kh = kw = 2 * (unsigned)range(1, 7) + 1;
    break;
  case P_RB: /* odd widths to 15, heights to 16, not square */
    do {
      kw = 2 * (unsigned)range(1, 7) + 1;
      kh = (unsigned)range(1, 16);
    } while (kh == kw);
    break;
  case P_WIDE: /* what the fixed widths do not take */
    do {
      kw = (unsigned)range(1, 64);
      kh = (unsigned)range(1, 24);
    } while (kw % 2 && kw >= 3 && kw <= 15 && kh <= 16);
    break;
  default:
    kw = (unsigned)range(1, 24);
    kh = (unsigned)range(1, 24);
    break;
  }
  const unsigned w = (unsigned)range(1, quick ? 300 : 700),
                 h = (unsigned)range(1, quick ? 100 : 300);
  const unsigned ncomp = (unsigned)range(1, 4),
                 comp = (unsigned)range(0, (int)ncomp - 1);
  const int const_taps = path != P_PARAM && path != P_SEPARABLE && range(0, 1);
  cf_conv2d_args a;
  memset(&a, 0, sizeof a);
  a.step = ncomp * bytes;
  a.offset = comp * bytes;
  a.pitch = (size_t)w * a.step + (size_t)range(0, 3) * bytes;
  a.slot_bytes = a.pitch * h;
  a.nslots = 1, a.head = 0, a.nt = 1;
  a.type = type;
  a.w = w, a.h = h;
  a.row0 = range(0, 1) ? 0 : (unsigned)range(0, (int)h - 1);
  a.row1 = range(0, 1) ? h : (unsigned)range((int)a.row0 + 1, (int)h);
  a.kh = kh, a.kw = kw, a.cy = kh / 2, a.cx = kw / 2;
  a.generic = path == P_GENERIC;
  a.border = range(0, 4);
  const double maxv = type == 0 ? 255 : type == 1 ? 65535 : 1;
  a.cval = (float)(ref_rng_unit(&rng) * maxv);
  a.scale = (float)(range(0, 1) ? 1.0 : 0.5 + ref_rng_unit(&rng));
  a.bias = (float)(range(0, 1) ? 0.0 : (ref_rng_unit(&rng) - 0.5) * maxv * 0.2);
  a.absolute = range(0, 3) == 0;
  snprintf(desc, sizeof desc,
           "conv2d #%u: %s%s, type %u, %ux%u, comp %u of %u, pitch %zu, "
           "kernel %ux%u, border %d, rows [%u, %u), scale %g, bias %g, abs %d",
           c,
           (const char *[]){"register-blocked, taps as parameters",
                            "register-blocked", "register-blocked, any width",
                            "generic", "separable"}[path],
           const_taps ? ", taps in the constant pool" : "", type, w, h, comp,
           ncomp, a.pitch, kh, kw, a.border, a.row0, a.row1, a.scale, a.bias,
           a.absolute);
  /* taps, rank 1 for the separable passes (hrow x vcol) */
  const unsigned nk = kh * kw;
  float *taps = malloc(nk * sizeof *taps), hrow[64], vcol[64];
  for (unsigned n = 0; n < kw; n++)
    hrow[n] = (float)((ref_rng_unit(&rng) - 0.35) * 2.0 / kw);
  for (unsigned m = 0; m < kh; m++)
    vcol[m] = (float)((ref_rng_unit(&rng) - 0.35) * 2.0 / kh);
  for (unsigned i = 0; i < nk; i++)
    taps[i] = path == P_SEPARABLE
                  ? (float)((double)vcol[i / kw] * hrow[i % kw])
                  : (float)((ref_rng_unit(&rng) - 0.35) * 2.0 / nk);
  uint8_t *src = malloc(a.slot_bytes), *dst = malloc(a.slot_bytes),
          *before = malloc(a.slot_bytes);
  for (size_t i = 0; i < a.slot_bytes; i++)
    src[i] = (uint8_t)ref_rng_u64(&rng), dst[i] = (uint8_t)ref_rng_u64(&rng);
  for (unsigned y = 0; y < h; y++)
    for (unsigned x = 0; x < w; x++)
      sample_put(src + a.offset + y * a.pitch + (size_t)x * a.step, type,
          type == 2 ? ref_rng_unit(&rng) * 2 - 1
                    : floor(ref_rng_unit(&rng) * (maxv + 1)));
  memcpy(before, dst, a.slot_bytes);
  uint8_t *d_src = dev(a.slot_bytes), *d_dst = dev(a.slot_bytes);
  float *d_taps = dev(nk * sizeof(float));
  cu(cudaMemcpy(d_src, src, a.slot_bytes, cudaMemcpyHostToDevice),
     "cudaMemcpy");
  cu(cudaMemcpy(d_dst, dst, a.slot_bytes, cudaMemcpyHostToDevice),
     "cudaMemcpy");
  cu(cudaMemcpy(d_taps, taps, nk * sizeof(float), cudaMemcpyHostToDevice),
     "cudaMemcpy");
  size_t coff = 0;
  int placed = 0;
  if (const_taps)
    cu(cf_k_conv2d_const_put(taps, nk, &coff, &placed),
       "cf_k_conv2d_const_put");
  a.src = d_src, a.dst = d_dst;
  /* host taps everywhere but the register-blocked path, where they
   * would take the parameter path */
  a.taps_host = path == P_RB ? NULL : taps;
  const int want_kernel = path == P_PARAM     ? -1
                          : path == P_RB      ? 1
                          : path == P_WIDE    ? 2
                                              : 0;
  if (path == P_PARAM && !cf_k_conv2d_param_taps(kw, kh, 1))
    case_fail("cf_k_conv2d_param_taps(%u, %u, 1) = 0", kw, kh);
  if ((path == P_RB || path == P_WIDE) &&
      (cf_k_conv2d_blocked(kw, kh) != want_kernel ||
       cf_k_conv2d_param_taps(kw, kh, 1)))
    case_fail("cf_k_conv2d_blocked(%u, %u) = %d, param_taps %d", kw, kh,
              cf_k_conv2d_blocked(kw, kh), cf_k_conv2d_param_taps(kw, kh, 1));
  if (path == P_SEPARABLE) {
    const int vr0 = (int)a.row0 + (int)a.cy - (int)(kh - 1);
    const unsigned nrows = a.row1 - a.row0 + kh - 1;
    const size_t P = CF_SEP_PITCH(w);
    float *d_h = dev(kw * sizeof(float)), *d_v = dev(kh * sizeof(float));
    float *d_tmp = dev(nrows * P * sizeof(float)),
          *d_acc = dev((a.row1 - a.row0) * P * sizeof(float));
    cu(cudaMemcpy(d_h, hrow, kw * sizeof(float), cudaMemcpyHostToDevice),
       "cudaMemcpy");
    cu(cudaMemcpy(d_v, vcol, kh * sizeof(float), cudaMemcpyHostToDevice),
       "cudaMemcpy");
    cu(cf_k_conv2d_rows(&a, 0, d_h, vr0, nrows, d_tmp, 0), "cf_k_conv2d_rows");
    cu(cf_k_conv2d_cols(&a, d_v, d_tmp, vr0, nrows, d_acc, 0, 1, 0),
       "cf_k_conv2d_cols");
    cu(cudaDeviceSynchronize(), "the separable passes");
    float *fp[] = {d_h, d_v, d_tmp, d_acc};
    for (size_t i = 0; i < sizeof fp / sizeof *fp; i++)
      cu(cudaFree(fp[i]), "cudaFree");
  } else {
    cu(cf_k_conv2d(&a, d_taps, placed, coff, 0), "cf_k_conv2d");
  }
  cu(cudaMemcpy(dst, d_dst, a.slot_bytes, cudaMemcpyDeviceToHost),
     "the kernel, then cudaMemcpy");
  if (placed)
    cf_k_conv2d_const_drop(coff, nk);
  /* reference: the convolution and its sum of |terms| */
  double *xp = malloc((size_t)w * h * sizeof *xp),
         *ax = malloc((size_t)w * h * sizeof *ax),
         *yr = malloc((size_t)w * h * sizeof *yr),
         *ay = malloc((size_t)w * h * sizeof *ay),
         *k = malloc(nk * sizeof *k), *ak = malloc(nk * sizeof *ak);
  for (unsigned y = 0; y < h; y++)
    for (unsigned x = 0; x < w; x++) {
      xp[(size_t)y * w + x] =
          sample_get(src + a.offset + y * a.pitch + (size_t)x * a.step, type);
      ax[(size_t)y * w + x] = fabs(xp[(size_t)y * w + x]);
    }
  for (unsigned i = 0; i < nk; i++)
    k[i] = taps[i], ak[i] = fabs(taps[i]);
  ref2d_convolve(xp, w, h, k, kh, kw, (cf_border)a.border, a.cval, yr, 0);
  ref2d_convolve(ax, w, h, ak, kh, kw, (cf_border)a.border, fabs(a.cval), ay,
                 0);
  /* float32 sums of n terms: within n 2^-24 of the sum of |terms|; the
   * separable passes round twice */
  const double n_terms =
      path == P_SEPARABLE ? 2.0 * (kh + kw) + 2 : (double)nk + kh + kw + 2;
  for (unsigned y = a.row0; y < a.row1; y++)
    for (unsigned x = 0; x < w; x++) {
      double v = yr[(size_t)y * w + x] * a.scale + a.bias;
      if (a.absolute)
        v = fabs(v);
      const double err = n_terms * 0x1p-24 *
                         (ay[(size_t)y * w + x] * fabs(a.scale) + fabs(a.bias));
      const double got =
          sample_get(dst + a.offset + y * a.pitch + (size_t)x * a.step, type);
      if (type == 2) {
        if (!(fabs(got - v) <= err + 0x1p-24 * fabs(v)))
          case_fail("pixel (%u, %u): %.9g, reference %.9g (allowed %.3g)", x, y,
               got, v, err);
        continue;
      }
      const double lo = quantize(v - err, maxv), hi = quantize(v + err, maxv);
      if (got < lo || got > hi)
        case_fail("pixel (%u, %u): %g, reference %g (%.6f before rounding)", x, y,
             got, quantize(v, maxv), v);
    }
  for (size_t i = 0; i < a.slot_bytes; i++) {
    int ours = 0;
    if (i >= a.offset) {
      const size_t j = i - a.offset, r = j / a.pitch, rem = j % a.pitch;
      ours = r >= a.row0 && r < a.row1 && rem / a.step < w &&
             rem % a.step < bytes;
    }
    if (!ours && dst[i] != before[i])
      case_fail("byte %zu (row %zu) is not an output of the band [%u, %u) but "
           "was written",
           i, i / a.pitch, a.row0, a.row1);
  }
  cu(cudaFree(d_src), "cudaFree");
  cu(cudaFree(d_dst), "cudaFree");
  cu(cudaFree(d_taps), "cudaFree");
  free(src), free(dst), free(before), free(xp), free(ax), free(yr), free(ay);
  free(taps), free(k), free(ak);
}

static void test_conv2d(void **state)
{
  (void)state;
  for (unsigned c = 0; c < (quick ? 15u : 60u); c++)
    conv2d_case(c);
}

int main(void)
{
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    printf("skipped: no CUDA device: %s\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
  /* loaded now, as the engines do (a device would otherwise load a
   * kernel inside a stream's work at its first launch) */
  if ((e = cf_k_fir1d_preload()) != cudaSuccess ||
      (e = cf_k_conv2d_preload()) != cudaSuccess) {
    printf("cf_k_*_preload: %s\n", cudaGetErrorString(e));
    return 1;
  }
  seed = ref_seed();
  ref_rng_init(&rng, seed);
  const char *q = getenv("CF_TEST_QUICK");
  quick = q && *q && strcmp(q, "0");
  const char *filter = getenv("CF_TEST_FILTER");
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fir1d),
      cmocka_unit_test(test_conv2d),
  };
  test_filter_from_env();
  return cmocka_run_group_tests_name("gpu_kernels", tests, NULL, NULL);
}

#else

int main(void)
{
  printf("skipped: built without CUDA\n");
  return 77;
}

#endif
