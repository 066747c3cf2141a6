/* Sample conversions for cudafir (audioconv.h). Built with
 * -fno-trapping-math (plugins/meson.build), which lets the compiler
 * vectorise the compares of the scalar loops; SSE2 (x86-64's baseline)
 * does the rest. */
#include "audioconv.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Samples of the negotiated format to float (n samples). The buffer side
 * (src here, dst in cf_gst_from_float) is read and written through byte
 * pointers and memcpy: a GstBuffer's memory need not be aligned to the
 * sample (a parser's sub-buffer starts where the header ended), and a
 * misaligned gint16 or gdouble access is undefined behaviour; memcpy
 * compiles to the same unaligned moves. */
void cf_gst_to_float(GstAudioFormat f, const void *src, float *dst, size_t n)
{
  const unsigned char *s = src;
  switch (f) {
  case GST_AUDIO_FORMAT_S16LE:
    for (size_t i = 0; i < n; i++) {
      gint16 v;
      memcpy(&v, s + 2 * i, sizeof v);
      dst[i] = (float)GINT16_FROM_LE(v) * (1.0f / 32768.0f);
    }
    break;
  case GST_AUDIO_FORMAT_S32LE: {
    size_t i = 0;
#if defined(__SSE2__) && G_BYTE_ORDER == G_LITTLE_ENDIAN
    /* 4 a turn: rounding the integer to float and then scaling by a power
     * of two is the loop's one rounding of the exact product */
    const __m128 k = _mm_set1_ps(1.0f / 2147483648.0f);
    for (; i + 4 <= n; i += 4)
      _mm_storeu_ps(dst + i,
                    _mm_mul_ps(_mm_cvtepi32_ps(_mm_loadu_si128(
                                   (const __m128i *)(const void *)(s + 4 * i))),
                               k));
#endif
    for (; i < n; i++) {
      gint32 v;
      memcpy(&v, s + 4 * i, sizeof v);
      dst[i] = (float)((double)GINT32_FROM_LE(v) * (1.0 / 2147483648.0));
    }
    break;
  }
  case GST_AUDIO_FORMAT_F64LE:
    for (size_t i = 0; i < n; i++) {
      gdouble v;
      memcpy(&v, s + 8 * i, sizeof v);
      dst[i] = (float)v;
    }
    break;
  default: memcpy(dst, src, n * sizeof(float));
  }
}

/* Float to the negotiated format: integers round to nearest (ties to
 * even) and saturate; NaN becomes 0.
 *
 * Written so that the compiler vectorizes it (with -fno-trapping-math,
 * plugins/meson.build): saturate first (a NaN fails both compares and is
 * then replaced), then round by adding and subtracting 1.5 x 2^23 (2^52
 * for double), exact for the saturated range in the default rounding
 * mode. rintf() was a library call per sample: S16 stereo cost 12 us per
 * 1024-frame buffer over identity, against 3 us for F32. */
#define ROUND_F (12582912.0f)        /* 1.5 x 2^23 */
#define ROUND_D (6755399441055744.0) /* 1.5 x 2^52 */

void cf_gst_from_float(GstAudioFormat f, const float *src, void *dst, size_t n)
{
  unsigned char *d = dst;
  switch (f) {
  case GST_AUDIO_FORMAT_S16LE: {
    size_t i = 0;
#if defined(__SSE2__) && G_BYTE_ORDER == G_LITTLE_ENDIAN
    /* 8 a turn with SSE2 (x86-64's baseline): NaN zeroed, saturated with
     * max/min, rounded by the conversion (to nearest even, as below) and
     * narrowed by a signed-saturating pack; the compiler's own narrowing
     * of the loop below was half its time in word shuffles. */
    const __m128 k = _mm_set1_ps(32768.0f), lo = _mm_set1_ps(-32768.0f),
                 hi = _mm_set1_ps(32767.0f);
    for (; i + 8 <= n; i += 8) {
      __m128 a = _mm_mul_ps(_mm_loadu_ps(src + i), k);
      __m128 b = _mm_mul_ps(_mm_loadu_ps(src + i + 4), k);
      a = _mm_and_ps(a, _mm_cmpord_ps(a, a));
      b = _mm_and_ps(b, _mm_cmpord_ps(b, b));
      a = _mm_min_ps(_mm_max_ps(a, lo), hi);
      b = _mm_min_ps(_mm_max_ps(b, lo), hi);
      _mm_storeu_si128((__m128i *)(void *)(d + 2 * i),
                       _mm_packs_epi32(_mm_cvtps_epi32(a), _mm_cvtps_epi32(b)));
    }
#endif
    for (; i < n; i++) {
      float v = src[i] * 32768.0f;
      v = v > 32767.0f ? 32767.0f : v;
      v = v < -32768.0f ? -32768.0f : v;
      v = v == v ? v : 0.0f;
      v = (v + ROUND_F) - ROUND_F;
      gint16 o = GINT16_TO_LE((gint16)(gint32)v);
      memcpy(d + 2 * i, &o, sizeof o);
    }
    break;
  }
  case GST_AUDIO_FORMAT_S32LE: {
    size_t i = 0;
#if defined(__SSE2__) && G_BYTE_ORDER == G_LITTLE_ENDIAN
    /* 4 a turn in double, as below: NaN zeroed, saturated, rounded by the
     * conversion (to nearest even). The loop below is not vectorised (the
     * float-to-double widening): S32 cost twice what S16 did. */
    const __m128d k = _mm_set1_pd(2147483648.0),
                  lo = _mm_set1_pd(-2147483648.0),
                  hi = _mm_set1_pd(2147483647.0);
    for (; i + 4 <= n; i += 4) {
      __m128 v = _mm_loadu_ps(src + i);
      __m128d a = _mm_mul_pd(_mm_cvtps_pd(v), k);
      __m128d b = _mm_mul_pd(_mm_cvtps_pd(_mm_movehl_ps(v, v)), k);
      a = _mm_and_pd(a, _mm_cmpord_pd(a, a));
      b = _mm_and_pd(b, _mm_cmpord_pd(b, b));
      a = _mm_min_pd(_mm_max_pd(a, lo), hi);
      b = _mm_min_pd(_mm_max_pd(b, lo), hi);
      _mm_storeu_si128(
          (__m128i *)(void *)(d + 4 * i),
          _mm_unpacklo_epi64(_mm_cvtpd_epi32(a), _mm_cvtpd_epi32(b)));
    }
#endif
    for (; i < n; i++) {
      double v = (double)src[i] * 2147483648.0;
      v = v > 2147483647.0 ? 2147483647.0 : v;
      v = v < -2147483648.0 ? -2147483648.0 : v;
      v = v == v ? v : 0.0;
      v = (v + ROUND_D) - ROUND_D;
      gint32 o = GINT32_TO_LE((gint32)v);
      memcpy(d + 4 * i, &o, sizeof o);
    }
    break;
  }
  case GST_AUDIO_FORMAT_F64LE:
    for (size_t i = 0; i < n; i++) {
      gdouble o = src[i];
      memcpy(d + 8 * i, &o, sizeof o);
    }
    break;
  default: memcpy(dst, src, n * sizeof(float));
  }
}
