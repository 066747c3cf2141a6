/* The hot loops for AVX2 + FMA (compiled with -mavx2 -mfma). */
#define DSP_NAME cf_dsp_avx2
#define DSP_CROWS 6
#define DSP_CNV 2
#include "dsp_impl.h"
