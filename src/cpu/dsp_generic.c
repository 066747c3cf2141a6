/* The hot loops for any x86-64 (SSE2) or other CPU. */
#define DSP_NAME cf_dsp_generic
#include "dsp_impl.h"
