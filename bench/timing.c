/* cudafilter benchmarks — per-iteration time by linear regression.
 * See timing.h. */
#include "timing.h"

#include <math.h>
#include <time.h>

#define CF_BENCH_MAX_POINTS 4096
#define CF_BENCH_MIN_POINTS 8

double cf_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* t_{0.95, dof}: two-sided 90%. Exact to 4 decimals up to 30 degrees of
 * freedom (table); beyond, the Cornish-Fisher expansion around the normal
 * quantile, which is within 1e-4 there. */
double cf_bench_t90(size_t dof) {
  static const double table[31] = {
      NAN,    6.3138, 2.9200, 2.3534, 2.1318, 2.0150, 1.9432, 1.8946,
      1.8595, 1.8331, 1.8125, 1.7959, 1.7823, 1.7709, 1.7613, 1.7531,
      1.7459, 1.7396, 1.7341, 1.7291, 1.7247, 1.7207, 1.7171, 1.7139,
      1.7109, 1.7081, 1.7056, 1.7033, 1.7011, 1.6991, 1.6973};
  if (dof <= 30) return table[dof];
  const double z = 1.6448536269514722; /* normal quantile 0.95 */
  const double v = (double)dof;
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2;
  return z + (z3 + z) / (4.0 * v) +
         (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v) +
         (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v * v * v);
}

void cf_bench_fit(const double *n, const double *t, size_t points,
                  cf_bench_result *r) {
  r->points = points;
  r->ci_lo_s = r->ci_hi_s = NAN;
  r->r2 = NAN;
  if (points == 0) {
    r->per_iter_s = r->intercept_s = NAN;
    return;
  }
  double sn = 0.0, st = 0.0;
  for (size_t j = 0; j < points; j++) {
    sn += n[j];
    st += t[j];
  }
  if (points < 3) {
    /* Not enough points for an interval: plain average. */
    r->per_iter_s = st / sn;
    r->intercept_s = 0.0;
    return;
  }
  const double mn = sn / (double)points, mt = st / (double)points;
  double sxx = 0.0, sxy = 0.0, syy = 0.0;
  for (size_t j = 0; j < points; j++) {
    const double dx = n[j] - mn, dy = t[j] - mt;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx <= 0.0) {
    r->per_iter_s = st / sn;
    r->intercept_s = 0.0;
    return;
  }
  const double b = sxy / sxx;
  const double a = mt - b * mn;
  double sse = 0.0;
  for (size_t j = 0; j < points; j++) {
    const double e = t[j] - (a + b * n[j]);
    sse += e * e;
  }
  const double se_b = sqrt(sse / (double)(points - 2) / sxx);
  const double q = cf_bench_t90(points - 2);
  r->per_iter_s = b;
  r->intercept_s = a;
  r->ci_lo_s = b - q * se_b;
  r->ci_hi_s = b + q * se_b;
  r->r2 = syy > 0.0 ? 1.0 - sse / syy : 1.0;
}

cf_bench_result cf_bench_run(cf_bench_fn fn, void *ctx, double budget_s) {
  static double ns[CF_BENCH_MAX_POINTS], ts[CF_BENCH_MAX_POINTS];
  cf_bench_result r = {0};

  fn(ctx, 1); /* warm-up: caches, lazily built state, page faults */

  size_t points = 0, iters = 1, total_iters = 0;
  double spent = 0.0;
  for (;;) {
    const double t0 = cf_bench_now();
    fn(ctx, iters);
    const double dt = cf_bench_now() - t0;
    ns[points] = (double)iters;
    ts[points] = dt;
    points++;
    total_iters += iters;
    spent += dt;
    if (points >= CF_BENCH_MAX_POINTS) break;
    if (spent >= budget_s && points >= CF_BENCH_MIN_POINTS) break;
    if (spent >= 4.0 * budget_s && points >= 3) break;
    size_t next = (size_t)ceil((double)iters * 1.1);
    iters = next > iters ? next : iters + 1;
  }
  cf_bench_fit(ns, ts, points, &r);
  r.total_iters = total_iters;
  r.total_s = spent;
  return r;
}

double cf_bench_rel_ci(const cf_bench_result *r) {
  if (isnan(r->ci_lo_s) || r->per_iter_s == 0.0) return NAN;
  return (r->ci_hi_s - r->ci_lo_s) / 2.0 / fabs(r->per_iter_s);
}
