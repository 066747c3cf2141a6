/* Test support: seeded random numbers and the float64 naive reference that
 * every path is checked against. */
#ifndef CF_TEST_REF_H
#define CF_TEST_REF_H

#include <stddef.h>
#include <stdint.h>

/* The run's seed: $CF_TEST_SEED if set, else from the clock. Printed once
 * as "seed N (rerun with CF_TEST_SEED=N)" so every failure can be replayed. */
uint64_t ref_seed(void);

typedef struct ref_rng { uint64_t s; } ref_rng;
void ref_rng_init(ref_rng *r, uint64_t seed);
uint64_t ref_rng_u64(ref_rng *r);
double ref_rng_unit(ref_rng *r);                 /* [0, 1) */
float ref_rng_sym(ref_rng *r);                   /* [-1, 1) */
size_t ref_rng_range(ref_rng *r, size_t lo, size_t hi); /* lo..hi inclusive */
void ref_rng_fill(ref_rng *r, float *x, size_t n); /* uniform [-1, 1) */

/* y[m] = sum_k h[k] * x[m - k] in float64, x[<0] = x[>=n] = 0. */
double ref_conv_at(const float *x, size_t n, const float *h, size_t len,
                   size_t m);
/* ref_conv_at for m in [0, ny). */
void ref_conv(const float *x, size_t n, const float *h, size_t len,
              double *y, size_t ny);

/* ||got - want|| / ||want|| over n values taken every `stride`; when the
 * reference is all zero, returns ||got|| (so zero output matches). A NaN
 * anywhere makes the result NaN (so the comparison fails). */
double ref_rel_l2(const float *got, size_t got_stride, const double *want,
                  size_t want_stride, size_t n);

/* The worst of ref_rel_l2 over the ch channels of interleaved y against
 * x (n frames, interleaved) through h, y delayed by lat: the n + len - 1
 * frames of the full convolution, y[lat ..] (NaN anywhere: NaN). */
double ref_worst_channel_l2(const float *x, const float *y, size_t n,
                            unsigned ch, const float *h, size_t len,
                            size_t lat);

/* Random chunking of n frames: writes sizes to `sizes` (capacity cap) and
 * returns their count. Mixes 0, 1, primes, block-sized and large pieces. */
size_t ref_chunking(ref_rng *r, size_t n, size_t block, size_t *sizes,
                    size_t cap);

/* Kernel swaps as engine.h's cf_engine_set_kernel makes them. Entry 0 is
 * the first kernel (S[0] = X[0] = 0); swap k = 1..n-1 is asked for at input
 * frame S[k] (ascending) with a crossfade of X[k] frames. A swap asked for
 * while a crossfade runs takes effect where that crossfade ends; one still
 * waiting for its point when the next is asked for never happens. S and X
 * become the swaps that happen, at the frames they take effect, and
 * keep[i] the index each had (may be NULL); returns how many. */
unsigned ref_swaps_settle(size_t *S, size_t *X, unsigned *keep, unsigned n);

#endif
