/* Choose the DSP table for this CPU once. */
#include "dsp.h"

#include <stdlib.h>
#include <string.h>

const cf_dsp *cf_dsp_get(void)
{
  /* CF_DSP=generic forces the portable table, CF_DSP=avx2 the AVX2 one
   * (for testing each). */
  const char *force = getenv("CF_DSP");
  if (force && strcmp(force, "generic") == 0)
    return &cf_dsp_generic;
  int no512 = force && strcmp(force, "avx2") == 0;
  (void)no512;
#if defined(CF_HAVE_DSP_AVX2) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
#if defined(CF_HAVE_DSP_AVX512)
  if (!no512 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512vl"))
    return &cf_dsp_avx512;
#endif
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return &cf_dsp_avx2;
#endif
  return &cf_dsp_generic;
}
