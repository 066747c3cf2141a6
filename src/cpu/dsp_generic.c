/* The hot loops for any x86-64 (SSE2) or other CPU. */
#define DSP_NAME cf_dsp_generic
#define DSP_NV 2 /* two SSE registers per vector: fewer accumulators */
#include "dsp_impl.h"
