/* cudafilter benchmarks — per-iteration time by linear regression.
 *
 * After Moreno & Fischmeister, "Accurate measurement of small execution
 * times — getting around measurement errors" (IEEE Embedded Systems
 * Letters, 2017): the work is run for a geometric sequence of iteration
 * counts n_1 < n_2 < ... (steps of about 1.1x) until a time budget is
 * spent; each sample point records the total wall time T_j of n_j
 * iterations. A least-squares fit T = a + b * n separates the fixed cost
 * per measurement (a: clock reads, call overhead, cache warm-up) from the
 * per-iteration cost b, which is reported with a 90% confidence interval
 * from the t distribution with (points - 2) degrees of freedom, and the
 * coefficient of determination r^2 (close to 1: the time really grows
 * linearly with n; well below 1: noise, frequency scaling, a neighbour).
 *
 * Times come from clock_gettime(CLOCK_MONOTONIC). */
#ifndef CF_BENCH_TIMING_H
#define CF_BENCH_TIMING_H

#include <stddef.h>

typedef struct cf_bench_result {
  double per_iter_s;   /* b: seconds per iteration (the slope) */
  double ci_lo_s;      /* 90% confidence interval of b */
  double ci_hi_s;
  double intercept_s;  /* a: fixed cost per sample point */
  double r2;           /* coefficient of determination of the fit */
  size_t points;       /* sample points in the fit */
  size_t total_iters;  /* iterations run, warm-up excluded */
  double total_s;      /* time spent in timed runs */
} cf_bench_result;

/* The work: run `iters` iterations of the thing measured. */
typedef void (*cf_bench_fn)(void *ctx, size_t iters);

/* Time fn by regression. One untimed warm-up call with iters = 1 comes
 * first. Sample points are taken until budget_s seconds of timed runs are
 * spent and at least 8 points exist (or, for very slow work, until
 * 4 * budget_s have passed with at least 3 points). With fewer than 3
 * points the slope is total time / total iterations and the interval is
 * NaN. */
cf_bench_result cf_bench_run(cf_bench_fn fn, void *ctx, double budget_s);

/* Least-squares fit of t[j] = a + b * n[j] into *r (per_iter_s, ci_*,
 * intercept_s, r2, points); exposed for tests and for callers that take
 * their own sample points. */
void cf_bench_fit(const double *n, const double *t, size_t points,
                  cf_bench_result *r);

/* Two-sided 90% quantile of Student's t: t_{0.95, dof} (dof >= 1). */
double cf_bench_t90(size_t dof);

/* Monotonic clock in seconds. */
double cf_bench_now(void);

/* Relative half-width of the interval, (hi - lo) / 2 / b; NaN if unknown. */
double cf_bench_rel_ci(const cf_bench_result *r);

#endif
