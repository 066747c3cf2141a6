/* FFTW3f plans for the real FFT sizes the convolvers use, in FFTW's
 * interleaved complex format (1.1-1.5x faster here than split arrays:
 * bench/results/cost-model-*.md). */
#ifndef CF_CPU_FFT_H
#define CF_CPU_FFT_H

#include <stddef.h>

#include "cudafilter/error.h"

typedef struct cf_fft cf_fft;

/* How a plan not made yet is made. CF_FFT_MEASURE: FFTW_MEASURE (or what
 * CF_FFT_PLANNING says), 0.1-1.5 s per size the first time on a machine
 * and milliseconds once FFTW's wisdom is on disk. CF_FFT_QUICK, for a
 * stream already running (a kernel swap, a switch to the CPU): never
 * measures; a plan FFTW's wisdom has, else FFTW_ESTIMATE's. */
typedef enum cf_fft_mode { CF_FFT_MEASURE, CF_FFT_QUICK } cf_fft_mode;

/* The least size >= n whose only prime factors are 2, 3, 5 and 7: what
 * FFTW's and cuFFT's fast codelets cover (FFTW takes Rader's algorithm,
 * which allocates in every transform, for a large prime factor). */
size_t cf_fft_smooth(size_t n);

/* A forward/inverse pair for real size n (even). Plans are made once per
 * size and mode per process (the planner is serialised) and shared:
 * executing them is thread-safe. */
cf_status cf_fft_get(size_t n, cf_fft_mode mode, const cf_fft **out);
/* The same for a rows x n 2D real transform (row-major, n even), run
 * with cf_fft2_forward/inverse. */
cf_status cf_fft2_get(size_t rows, size_t n, cf_fft_mode mode,
                      const cf_fft **out);
/* 1 if the plan was estimated where CF_FFT_PLANNING asked for measuring
 * (CF_FFT_QUICK without wisdom): it may run up to ~1.8x slower. */
int cf_fft_hasty(const cf_fft *f);
/* spec: n/2 + 1 interleaved (re, im) bins. All pointers 64-byte aligned. */
void cf_fft_forward(const cf_fft *f, float *in, float *spec);
/* Unnormalised: out = n * ifft. spec is clobbered. */
void cf_fft_inverse(const cf_fft *f, float *spec, float *out);

/* 2D plans. The spectrum is transposed: (n/2 + 1) columns of rows
 * interleaved bins each, bin (u, k) at spec[2 * (k * rows + u)] (what a
 * pointwise product needs, and the layout whose column transforms are
 * contiguous). scratch: cf_fft2_scratch(f) floats, the caller's (the
 * transforms allocate nothing), neither in, out nor spec; its contents
 * are clobbered. All pointers 64-byte aligned. */
size_t cf_fft2_scratch(const cf_fft *f);
void cf_fft2_forward(const cf_fft *f, float *in, float *spec, float *scratch);
/* Unnormalised: out = rows * n * ifft. spec is clobbered. */
void cf_fft2_inverse(const cf_fft *f, float *spec, float *out, float *scratch);

/* 64-byte aligned allocation, zeroed; free with cf_free. */
/* FFTW's planner is one per process and not thread-safe: code outside
 * this file that plans with FFTW (the tests' emulated cuFFT,
 * tests/emu/cudart_emu.cc) holds this lock while it does. */
void cf_fft_planner_lock(void);
void cf_fft_planner_unlock(void);

void *cf_alloc(size_t bytes);
void cf_free(void *p);

#endif
