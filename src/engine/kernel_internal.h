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

/* Kernel index of (output o, input i) in k, or -1 if it does not route. */
static inline int cf_kernel_route(const cf_kernel *k, unsigned o, unsigned i)
{
  switch (k->routing) {
  case CF_ROUTING_SHARED:
    return o == i ? 0 : -1;
  case CF_ROUTING_PER_CHANNEL:
    return o == i ? (int)i : -1;
  case CF_ROUTING_MATRIX:
    return k->len[o * k->inputs + i] ? (int)(o * k->inputs + i) : -1;
  }
  return -1;
}

#endif
