/* FFTW3f plans for the real FFT sizes the convolvers use, split complex
 * (re and im in separate arrays, so the spectral multiply is plain SIMD). */
#ifndef CF_CPU_FFT_H
#define CF_CPU_FFT_H

#include <stddef.h>

#include "cudafilter/error.h"

typedef struct cf_fft cf_fft;

/* A forward/inverse pair for real size n (even). Plans are made once per
 * size per process (FFTW_MEASURE; the planner is serialised) and shared:
 * executing them is thread-safe. */
cf_status cf_fft_get(size_t n, const cf_fft **out);
/* re/im: n/2 + 1 bins each. All pointers 64-byte aligned. */
void cf_fft_forward(const cf_fft *f, float *in, float *re, float *im);
/* Unnormalised: out = n * ifft. re/im are clobbered. */
void cf_fft_inverse(const cf_fft *f, float *re, float *im, float *out);

/* 64-byte aligned allocation, zeroed; free with cf_free. */
void *cf_alloc(size_t bytes);
void cf_free(void *p);

#endif
