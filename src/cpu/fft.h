/* FFTW3f plans for the real FFT sizes the convolvers use, in FFTW's
 * interleaved complex format (1.1-1.5x faster here than split arrays:
 * bench/results/cost-model-*.md). */
#ifndef CF_CPU_FFT_H
#define CF_CPU_FFT_H

#include <stddef.h>

#include "cudafilter/error.h"

typedef struct cf_fft cf_fft;

/* A forward/inverse pair for real size n (even). Plans are made once per
 * size per process (FFTW_MEASURE; the planner is serialised) and shared:
 * executing them is thread-safe. */
cf_status cf_fft_get(size_t n, const cf_fft **out);
/* The same for a rows x n 2D real transform (row-major, n even); the
 * spectrum is rows x (n/2 + 1) interleaved bins. */
cf_status cf_fft2_get(size_t rows, size_t n, const cf_fft **out);
/* spec: n/2 + 1 interleaved (re, im) bins. All pointers 64-byte aligned. */
void cf_fft_forward(const cf_fft *f, float *in, float *spec);
/* Unnormalised: out = n * ifft. spec is clobbered. */
void cf_fft_inverse(const cf_fft *f, float *spec, float *out);

/* 64-byte aligned allocation, zeroed; free with cf_free. */
void *cf_alloc(size_t bytes);
void cf_free(void *p);

#endif
