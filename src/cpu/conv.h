/* One streaming convolver: one input channel feeding k kernels (k outputs),
 * computed as a plan says (direct head + FFT partition stages). Output is
 * the convolution delayed by the plan's latency. */
#ifndef CF_CPU_CONV_H
#define CF_CPU_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "fft.h"
#include "plan.h"

typedef struct cf_conv cf_conv;

/* taps[i], lens[i]: kernel i (len 0 allowed: outputs zeros). Every
 * cf_conv_process() call must pass at most max_chunk frames. mode: how
 * FFT plans not made yet are made (CF_FFT_QUICK in a running stream).
 * taps NULL: made (allocated, planned) for kernels of these lengths but
 * not loaded, for cf_conv_reload() to load them in another thread. */
/* The FFT size of a stage of partition p: 2p, rounded up to a size with
 * no prime factor above 7, whose transforms FFTW does without allocating
 * (a prime p would take Rader's algorithm, which allocates per call, and
 * runs slower). */
size_t cf_conv_fft_size(size_t p);

cf_status cf_conv_new(const cf_conv_plan *pl, const float *const *taps,
                      const size_t *lens, unsigned k, size_t max_chunk,
                      cf_fft_mode mode, cf_conv **out);
/* Whether c's partition layout is the one plan pl gives kernels of these
 * lengths (same stages, head and partitions per kernel): then
 * cf_conv_reload() can take them without allocating. */
int cf_conv_fits(const cf_conv *c, const cf_conv_plan *pl, const size_t *lens,
                 unsigned k);
/* New taps (lengths that fit, see above), and reset. Allocates nothing
 * and plans nothing: a kernel swap reuses a retired convolver so. */
void cf_conv_reload(cf_conv *c, const float *const *taps, const size_t *lens);
/* 1 if a stage runs on an estimated FFT plan (cf_fft_hasty). */
int cf_conv_hasty(const cf_conv *c);
void cf_conv_free(cf_conv *c);
void cf_conv_reset(cf_conv *c);
/* x: m samples; out[i]: m outputs of kernel i. Never allocates. */
void cf_conv_process(cf_conv *c, const float *x, size_t m, float *const *out);
/* The same without the copy in: cf_conv_stage() says where the next m
 * (<= max_chunk) samples go, the caller writes them there and calls
 * cf_conv_process_staged() with the same m, nothing else on c between. */
float *cf_conv_stage(cf_conv *c, size_t m);
void cf_conv_process_staged(cf_conv *c, size_t m, float *const *out);
/* Outputs of y index < y (y[j], the convolution before the delay) are not
 * wanted: process() skips their work (the FFT stages' multiply-adds and
 * inverse transforms, the head) and writes anything there, but keeps the
 * state later outputs need. For priming a convolver on past input. Reset
 * forgets it. */
void cf_conv_skip_before(cf_conv *c, uint64_t y);

#endif
