/* CPU hot loops, one table per instruction set, chosen once at run time
 * (the FFmpeg DSP-table pattern): no CPU-type branch inside a loop. */
#ifndef CF_CPU_DSP_H
#define CF_CPU_DSP_H

#include <stddef.h>

typedef struct cf_dsp {
  const char *name;
  /* out[i] = sum_{j<len} hrev[j] * x[i + j] for i < m (hrev: reversed taps,
   * x: the len - 1 samples before the first output, then m more). */
  void (*fir)(const float *x, const float *hrev, size_t len, float *out,
              size_t m);
  /* acc += sum_p X_p * H_p over nb complex bins stored interleaved
   * (re, im), nb % 16 == 0, 64-byte aligned; x and h are n pointers. */
  void (*cmac)(float *acc, const float *const *x, const float *const *h,
               size_t n, size_t nb);
} cf_dsp;

const cf_dsp *cf_dsp_get(void);

extern const cf_dsp cf_dsp_generic;
extern const cf_dsp cf_dsp_avx2;

#endif
