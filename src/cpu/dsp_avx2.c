/* The hot loops for AVX2 + FMA (compiled with -mavx2 -mfma). */
#define DSP_NAME cf_dsp_avx2
#include "dsp_impl.h"
