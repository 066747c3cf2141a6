/* Sample conversions between cudafir's negotiated formats (S16LE, S32LE,
 * F32LE, F64LE) and the engine's float, kept apart so that
 * tests/test_audioconv.c can hold them to a float64 reference. */
#ifndef CF_GST_AUDIOCONV_H
#define CF_GST_AUDIOCONV_H

#include <stddef.h>

#include <gst/audio/audio.h>

/* n samples of format f at src to float: integers scaled to [-1, 1). */
void cf_gst_to_float(GstAudioFormat f, const void *src, float *dst, size_t n);

/* n floats to format f: integers scaled by 2^15 or 2^31, rounded to
 * nearest (ties to even), saturated; NaN becomes 0. */
void cf_gst_from_float(GstAudioFormat f, const float *src, void *dst, size_t n);

#endif
