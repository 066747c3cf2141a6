/* cudafir's sample conversions (plugins/audioconv.c, compiled in with the
 * plugin's flags) against a float64 reference of their contract: to float,
 * integers scaled to [-1, 1) and rounded once; from float, integers scaled
 * by 2^15 or 2^31, rounded to nearest with ties to even (rint in double),
 * saturated, NaN to 0; F64 widened exactly. Random lengths 0-67 (the
 * vector loops and their tails) at random offsets (unaligned), values
 * drawn from the edges: ties at every magnitude the format's steps reach,
 * values one step inside and outside full scale, NaN, infinities,
 * subnormals, -0. The element tests see these through a pipeline; only
 * here do NaN and the ties reach every lane of the vector loops. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audioconv.h"
#include "check.h"
#include "ref.h"

#define MAXN 67
#define ROUNDS 4000

/* One float from the edges for an integer format of `bits` (16 or 32). */
static float edge_float(ref_rng *r, int bits)
{
  double step = ldexp(1.0, -(bits - 1)); /* one integer step */
  double s = ref_rng_u64(r) & 1 ? -1.0 : 1.0;
  switch (ref_rng_u64(r) % 12) {
  case 0: /* a tie k + 1/2 steps: k small enough for float to hold it */
    return (float)(s * ((double)ref_rng_range(r, 0, 1u << 21) + 0.5) * step);
  case 1: /* a tie near full scale (16-bit) or at 2^23 steps (32-bit) */
    return (float)(s * ((double)ref_rng_range(r, 32000, 32767) + 0.5) /
                   32768.0);
  case 2: /* at and around full scale */
    return (float)s * nextafterf(1.0f, (float)ref_rng_range(r, 0, 2));
  case 3: return (float)(s * (1.0 + ref_rng_unit(r))); /* beyond it */
  case 4: return NAN;
  case 5: return (float)s * INFINITY;
  case 6: return (float)s * FLT_MAX;
  case 7: return (float)s * FLT_MIN * (float)ref_rng_unit(r); /* subnormal */
  case 8: return s < 0 ? -0.0f : 0.0f;
  case 9: /* an exact integer count of steps */
    return (float)(s * (double)ref_rng_range(r, 0, 1u << 23) * step);
  default: return ref_rng_sym(r);
  }
}

static double want_int(float x, int bits)
{
  if (isnan(x))
    return 0.0;
  double lo = -ldexp(1.0, bits - 1), hi = ldexp(1.0, bits - 1) - 1.0;
  double v = rint((double)x * ldexp(1.0, bits - 1)); /* ties to even */
  return v < lo ? lo : v > hi ? hi : v;
}

static void test_from_float(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed);
  float src[MAXN + 4];
  unsigned char dst[(MAXN + 4) * 8 + 8];
  static const GstAudioFormat fs[] = {
      GST_AUDIO_FORMAT_S16LE, GST_AUDIO_FORMAT_S32LE, GST_AUDIO_FORMAT_F32LE,
      GST_AUDIO_FORMAT_F64LE};
  for (unsigned round = 0; round < ROUNDS; round++) {
    GstAudioFormat f = fs[round % 4];
    int bits = f == GST_AUDIO_FORMAT_S16LE ? 16 : 32;
    size_t n = ref_rng_range(&r, 0, MAXN);
    size_t so = ref_rng_range(&r, 0, 3), doff = ref_rng_range(&r, 0, 7);
    for (size_t i = 0; i < n; i++)
      src[so + i] = edge_float(&r, bits);
    memset(dst, 0xa5, sizeof dst);
    set_case("from_float round %u: %s, %zu samples, offsets %zu/%zu", round,
             gst_audio_format_to_string(f), n, so, doff);
    cf_gst_from_float(f, src + so, dst + doff, n);
    size_t w = f == GST_AUDIO_FORMAT_S16LE   ? 2
               : f == GST_AUDIO_FORMAT_F64LE ? 8
                                             : 4;
    for (size_t i = 0; i < n; i++) {
      const unsigned char *p = dst + doff + i * w;
      float x = src[so + i];
      if (f == GST_AUDIO_FORMAT_S16LE) {
        int16_t g;
        memcpy(&g, p, 2);
        CHECK(g == want_int(x, 16), "sample %zu: %.9g gave %d, want %.0f", i,
              (double)x, g, want_int(x, 16));
      } else if (f == GST_AUDIO_FORMAT_S32LE) {
        int32_t g;
        memcpy(&g, p, 4);
        CHECK(g == want_int(x, 32), "sample %zu: %.9g gave %d, want %.0f", i,
              (double)x, g, want_int(x, 32));
      } else if (f == GST_AUDIO_FORMAT_F32LE) {
        CHECK(!memcmp(p, &x, 4), "sample %zu: %.9g not copied", i, (double)x);
      } else {
        double g;
        memcpy(&g, p, 8);
        CHECK(isnan(x) ? isnan(g)
                       : g == (double)x && !signbit(g) == !signbit(x),
              "sample %zu: %.9g gave %.17g", i, (double)x, g);
      }
    }
    /* nothing written past the n samples */
    for (size_t i = doff + n * w; i < sizeof dst; i++)
      CHECK(dst[i] == 0xa5, "byte %zu past the %zu samples written", i, n);
    for (size_t i = 0; i < doff; i++)
      CHECK(dst[i] == 0xa5, "byte %zu before the samples written", i);
  }
}

static void test_to_float(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed ^ 0x9e3779b97f4a7c15u);
  unsigned char src[(MAXN + 4) * 8 + 8];
  float dst[MAXN + 4];
  static const GstAudioFormat fs[] = {
      GST_AUDIO_FORMAT_S16LE, GST_AUDIO_FORMAT_S32LE, GST_AUDIO_FORMAT_F32LE,
      GST_AUDIO_FORMAT_F64LE};
  for (unsigned round = 0; round < ROUNDS; round++) {
    GstAudioFormat f = fs[round % 4];
    size_t w = f == GST_AUDIO_FORMAT_S16LE   ? 2
               : f == GST_AUDIO_FORMAT_F64LE ? 8
                                             : 4;
    size_t n = ref_rng_range(&r, 0, MAXN);
    size_t so = ref_rng_range(&r, 0, 7);
    for (size_t i = 0; i < n; i++) {
      unsigned char *p = src + so + i * w;
      /* a random integer of the format, or one of its extremes */
      static const int64_t ends[] = {0, -1, 1, -2, 2};
      int bits = f == GST_AUDIO_FORMAT_S16LE ? 16 : 32;
      int64_t v = (int64_t)(ref_rng_u64(&r) >> (64 - bits)) -
                  ((int64_t)1 << (bits - 1));
      if (ref_rng_u64(&r) % 4 == 0) {
        int64_t e = ends[ref_rng_u64(&r) % 5];
        v = e < 0 ? -((int64_t)1 << (bits - 1)) - e - 1
                  : ((int64_t)1 << (bits - 1)) - 1 - e;
      }
      if (f == GST_AUDIO_FORMAT_S16LE) {
        int16_t v16 = (int16_t)v;
        memcpy(p, &v16, 2);
      } else if (f == GST_AUDIO_FORMAT_S32LE) {
        int32_t v32 = (int32_t)v;
        memcpy(p, &v32, 4);
      } else if (f == GST_AUDIO_FORMAT_F32LE) {
        float x = ref_rng_u64(&r) % 8 ? ref_rng_sym(&r) : NAN;
        memcpy(p, &x, 4);
      } else {
        double d = (double)ref_rng_sym(&r) + ref_rng_unit(&r) * 1e-12;
        switch (ref_rng_u64(&r) % 8) {
        case 0: d = NAN; break;
        case 1: d = -INFINITY; break;
        case 2: d = 1e300; break;
        case 3: d = 1e-310; break;
        }
        memcpy(p, &d, 8);
      }
    }
    set_case("to_float round %u: %s, %zu samples, offset %zu", round,
             gst_audio_format_to_string(f), n, so);
    cf_gst_to_float(f, src + so, dst, n);
    for (size_t i = 0; i < n; i++) {
      const unsigned char *p = src + so + i * w;
      float want;
      if (f == GST_AUDIO_FORMAT_S16LE) {
        int16_t v;
        memcpy(&v, p, 2);
        want = (float)ldexp((double)v, -15);
      } else if (f == GST_AUDIO_FORMAT_S32LE) {
        int32_t v;
        memcpy(&v, p, 4);
        want = (float)ldexp((double)v, -31); /* the one rounding */
      } else if (f == GST_AUDIO_FORMAT_F32LE) {
        memcpy(&want, p, 4);
      } else {
        double v;
        memcpy(&v, p, 8);
        want = (float)v;
      }
      CHECK(isnan(want) ? isnan(dst[i]) : dst[i] == want,
            "sample %zu: gave %.9g, want %.9g", i, (double)dst[i],
            (double)want);
    }
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_from_float),
      cmocka_unit_test(test_to_float),
  };
  check_seed = ref_seed();
  check_filter_from_env();
  return cmocka_run_group_tests_name("audioconv", tests, NULL, NULL);
}
