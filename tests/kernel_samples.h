/* One sample of the video kernels' component types (cf_conv2d_args.type:
 * 0 uint8, 1 uint16 in native order, 2 float32) at p, read or written as
 * a double: for the tests that run kernels/conv2d.cu through its
 * launchers (test_kernels_emu.cc, gpu/test_gpu_kernels.c). */
#ifndef CF_TEST_KERNEL_SAMPLES_H
#define CF_TEST_KERNEL_SAMPLES_H

#include <stdint.h>
#include <string.h>

static inline double sample_get(const uint8_t *p, unsigned type)
{
  if (type == 0)
    return *p;
  if (type == 1) {
    uint16_t u;
    memcpy(&u, p, 2);
    return u;
  }
  float f;
  memcpy(&f, p, 4);
  return f;
}

static inline void sample_put(uint8_t *p, unsigned type, double v)
{
  if (type == 0)
    *p = (uint8_t)v;
  else if (type == 1) {
    uint16_t u = (uint16_t)v;
    memcpy(p, &u, 2);
  } else {
    float f = (float)v;
    memcpy(p, &f, 4);
  }
}

#endif
