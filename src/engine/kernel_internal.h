/* Internal layout of a kernel set. */
#ifndef CF_KERNEL_INTERNAL_H
#define CF_KERNEL_INTERNAL_H

#include "cudafilter/kernel.h"
#include "cudafilter/kernel2d.h"
#include "error_internal.h"

struct cf_kernel {
  cf_routing routing;
  unsigned outputs, inputs, count;
  float **taps; /* count arrays */
  size_t *len;  /* count lengths */
};

struct cf_kernel2d {
  unsigned t, kh, kw;
  float *taps; /* t * kh * kw, row-major */
};

#endif
