/* The hot loops for AVX-512 (F + VL): the 2D kernels on 16-lane vectors,
 * 3 output rows x 6 vectors per pass; the 1D ones as in the AVX2 table,
 * with EVEX encodings. */
#define DSP_NAME cf_dsp_avx512
#define DSP_VW 16
#define DSP_ROWS 3
#define DSP_NV 6
#define DSP_CROWS 8
#define DSP_CNV 3
#include "dsp_impl.h"
