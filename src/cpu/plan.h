/* How one convolver computes: a direct head and FFT partition stages. */
#ifndef CF_CPU_PLAN_H
#define CF_CPU_PLAN_H

#include <stddef.h>

#include "cudafilter/engine.h"

#define CF_MAX_STAGES 12
/* Largest partition: bigger ones add memory and FFT cost for no gain. */
#define CF_MAX_PARTITION ((size_t)1 << 15)

/* A uniform partition stage: n partitions of p taps covering kernel taps
 * [q*p, (q+n)*p). q = 0 computes the block that just ended (needs latency
 * >= p - 1); q >= 1 computes the next block ahead of time (any latency). */
typedef struct cf_stage_plan {
  size_t p, q, n;
} cf_stage_plan;

typedef struct cf_conv_plan {
  cf_algorithm algorithm; /* what it was made as (for describe) */
  size_t block;           /* B: FFT stages run on multiples of it */
  size_t latency;         /* D: output = y delayed by D */
  size_t head;            /* taps [0, head) done directly */
  unsigned nstages;
  cf_stage_plan st[CF_MAX_STAGES];
  double cost;            /* model: ns per input sample */
} cf_conv_plan;

/* Plan for kernels up to len taps with `kernels` kernels sharing one input.
 * latency must be 0 or block - 1. algo AUTO picks the cheapest plan that
 * meets the latency; a forced algo is honoured (direct also at latency
 * block - 1, as a delay). */
void cf_plan_make(cf_conv_plan *pl, size_t len, unsigned kernels,
                  size_t block, size_t latency, cf_algorithm algo);

/* The latency an engine gets: 0 for direct, block - 1 for FFT paths; with
 * AUTO, whichever the cheapest plan for len needs. */
size_t cf_plan_latency(size_t len, unsigned kernels, size_t block,
                       cf_algorithm algo);

/* The model's costs, ns: a real FFT of size n (forward or inverse); the
 * multiply-add of one partition of nb bins in a stage of partition p.
 * conv.c spreads a stage's work by them. */
double cf_plan_fft_ns(size_t n);
double cf_plan_cmac_ns(size_t p, size_t nb);

/* "1024x4 + 4096x3 + 16384x7" */
void cf_plan_describe(const cf_conv_plan *pl, char *buf, size_t n);

#endif
