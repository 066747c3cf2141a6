/* fft_compare — FFTW3f against libavutil's av_tx for the real FFTs that
 * overlap-save uses (size = 2 x block).
 *
 * For every size N (a power of two, 128..65536 by default) both libraries
 * get a real-to-complex forward transform of N floats to N/2+1 bins and the
 * complex-to-real inverse, out of place, unnormalized:
 *   FFTW3f: fftwf_plan_dft_r2c_1d / fftwf_plan_dft_c2r_1d, FFTW_MEASURE,
 *           buffers from fftwf_malloc;
 *   av_tx:  AV_TX_FLOAT_RDFT (present in libavutil 57, FFmpeg 5.1), forward
 *           and inverse contexts with scale 1.0, buffers from av_malloc.
 * First both spectra of the same random input are compared (relative L2),
 * (av_tx leaves the imaginary part of the Nyquist bin unwritten, where
 * FFTW writes 0: a user of av_tx must not read it), then the round trip
 * (forward + inverse) of each library is timed by
 * linear regression (timing.h) and reported with its 90% interval.
 *
 *   fft_compare [--quick] [--budget S] [--min N] [--max N] [--md FILE]
 *
 * --md FILE writes the table and a conclusion as Markdown. */
#include <errno.h>
#include <fftw3.h>
#include <libavutil/mem.h>
#include <libavutil/tx.h>
#include <libavutil/version.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

typedef struct fftw_ctx {
  fftwf_plan fwd, inv;
} fftw_ctx;

typedef struct avtx_ctx {
  AVTXContext *fwd_ctx, *inv_ctx;
  av_tx_fn fwd, inv;
  float *in, *out;
  AVComplexFloat *spec;
} avtx_ctx;

typedef struct row {
  int n;
  double fftw_plan_s;
  cf_bench_result fftw, avtx;
  double spec_err, fftw_rt_err, avtx_rt_err, cross_inv_err;
} row;

static void run_fftw(void *p, size_t iters) {
  fftw_ctx *c = p;
  for (size_t i = 0; i < iters; i++) {
    fftwf_execute(c->fwd);
    fftwf_execute(c->inv); /* c2r destroys the spectrum: the next forward
                              writes a fresh one, as overlap-save does */
  }
}

static void run_avtx(void *p, size_t iters) {
  avtx_ctx *c = p;
  for (size_t i = 0; i < iters; i++) {
    c->fwd(c->fwd_ctx, c->spec, c->in, sizeof(float));
    c->inv(c->inv_ctx, c->out, c->spec, sizeof(AVComplexFloat));
  }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* ||a - b|| / ||b|| over n floats. */
static double rel_l2(const float *a, const float *b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double d = (double)a[i] - (double)b[i];
    num += d * d;
    den += (double)b[i] * (double)b[i];
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static int measure(int n, double budget, row *r) {
  const size_t bins = (size_t)n / 2 + 1;
  memset(r, 0, sizeof(*r));
  r->n = n;

  /* FFTW: plan first (FFTW_MEASURE overwrites the arrays). */
  float *fin = fftwf_malloc(sizeof(float) * (size_t)n);
  fftwf_complex *fspec = fftwf_malloc(sizeof(fftwf_complex) * bins);
  float *fout = fftwf_malloc(sizeof(float) * (size_t)n);
  /* av_tx */
  avtx_ctx a = {0};
  a.in = av_malloc(sizeof(float) * (size_t)n);
  a.spec = av_malloc(sizeof(AVComplexFloat) * (bins + 1));
  a.out = av_malloc(sizeof(float) * ((size_t)n + 2));
  float *x = malloc(sizeof(float) * (size_t)n);
  float *spec_ref = malloc(sizeof(float) * 2 * bins);
  if (!fin || !fspec || !fout || !a.in || !a.spec || !a.out || !x ||
      !spec_ref) {
    fprintf(stderr, "fft_compare: out of memory at N=%d\n", n);
    return -1;
  }

  const double tp = cf_bench_now();
  fftw_ctx f;
  f.fwd = fftwf_plan_dft_r2c_1d(n, fin, fspec, FFTW_MEASURE);
  f.inv = fftwf_plan_dft_c2r_1d(n, fspec, fout, FFTW_MEASURE);
  r->fftw_plan_s = cf_bench_now() - tp;
  if (!f.fwd || !f.inv) {
    fprintf(stderr, "fft_compare: FFTW planning failed at N=%d\n", n);
    return -1;
  }
  const float scale = 1.0f;
  int err = av_tx_init(&a.fwd_ctx, &a.fwd, AV_TX_FLOAT_RDFT, 0, n, &scale, 0);
  if (err >= 0)
    err = av_tx_init(&a.inv_ctx, &a.inv, AV_TX_FLOAT_RDFT, 1, n, &scale, 0);
  if (err < 0) {
    fprintf(stderr, "fft_compare: av_tx_init(RDFT, %d) failed: %d\n", n, err);
    return -1;
  }

  /* Same input to both; compare spectra and round trips. */
  for (int i = 0; i < n; i++) x[i] = rnd();
  memcpy(fin, x, sizeof(float) * (size_t)n);
  memcpy(a.in, x, sizeof(float) * (size_t)n);
  fftwf_execute(f.fwd);
  a.fwd(a.fwd_ctx, a.spec, a.in, sizeof(float));
  memcpy(spec_ref, fspec, sizeof(float) * 2 * bins);
  /* The imaginary part of the Nyquist bin is 0 by definition: FFTW writes
   * it, av_tx (libavutil 57) leaves it unwritten, and neither inverse reads
   * it. Compare everything before it. */
  r->spec_err = rel_l2((const float *)a.spec, spec_ref, 2 * bins - 1);

  /* Round trips, scaled by 1/N. */
  fftwf_execute(f.inv);
  a.inv(a.inv_ctx, a.out, a.spec, sizeof(AVComplexFloat));
  for (int i = 0; i < n; i++) {
    fout[i] /= (float)n;
    a.out[i] /= (float)n;
  }
  r->fftw_rt_err = rel_l2(fout, x, (size_t)n);
  r->avtx_rt_err = rel_l2(a.out, x, (size_t)n);
  /* av_tx's inverse of FFTW's spectrum (the inverse alone). */
  memcpy(a.spec, spec_ref, sizeof(float) * 2 * bins);
  a.inv(a.inv_ctx, a.out, a.spec, sizeof(AVComplexFloat));
  for (int i = 0; i < n; i++) a.out[i] /= (float)n;
  r->cross_inv_err = rel_l2(a.out, x, (size_t)n);

  /* Timing: fresh input, alternate order is not needed (each runs alone). */
  memcpy(fin, x, sizeof(float) * (size_t)n);
  memcpy(a.in, x, sizeof(float) * (size_t)n);
  r->fftw = cf_bench_run(run_fftw, &f, budget);
  r->avtx = cf_bench_run(run_avtx, &a, budget);

  fftwf_destroy_plan(f.fwd);
  fftwf_destroy_plan(f.inv);
  fftwf_free(fin);
  fftwf_free(fspec);
  fftwf_free(fout);
  av_tx_uninit(&a.fwd_ctx);
  av_tx_uninit(&a.inv_ctx);
  av_free(a.in);
  av_free(a.spec);
  av_free(a.out);
  free(x);
  free(spec_ref);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: fft_compare [--quick] [--budget SECONDS] [--min N] "
          "[--max N] [--md FILE]\n"
          "  Round trip (r2c + c2r) time of FFTW3f and libavutil av_tx RDFT\n"
          "  for power-of-two sizes min..max (default 128..65536).\n");
}

static double half_ci_us(const cf_bench_result *r) {
  return (r->ci_hi_s - r->ci_lo_s) / 2.0 * 1e6;
}

int main(int argc, char **argv) {
  double budget = 0.5;
  int budget_set = 0, quick = 0;
  int nmin = 128, nmax = 65536;
  const char *md_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      quick = 1;
    } else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
      budget = atof(argv[++i]);
      budget_set = 1;
    } else if (!strcmp(argv[i], "--min") && i + 1 < argc) {
      nmin = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
      nmax = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--md") && i + 1 < argc) {
      md_path = argv[++i];
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (quick && !budget_set) budget = 0.05; /* --budget wins, in any order */
  /* a NaN or infinite budget never ends cf_bench_run's point set */
  if (!(budget > 0.0) || !isfinite(budget) || nmin < 4 || nmax < nmin || (nmin & (nmin - 1)) ||
      (nmax & (nmax - 1))) {
    fprintf(stderr, "fft_compare: sizes must be powers of two >= 4, "
                    "budget a finite number > 0\n");
    return 2;
  }

  row rows[32];
  size_t nrows = 0;
  printf("# FFTW %s vs libavutil %s av_tx AV_TX_FLOAT_RDFT; round trip = "
         "r2c + c2r, out of place; 90%% CI by regression\n",
         fftwf_version, AV_STRINGIFY(LIBAVUTIL_VERSION));
  printf("%7s %10s %14s %14s %9s %9s %9s %9s %9s\n", "N", "plan_ms",
         "fftw_us", "avtx_us", "avtx/fftw", "spec_err", "fftw_rt", "avtx_rt",
         "x_inv");
  for (int n = nmin; n <= nmax && nrows < 32; n *= 2) {
    row *r = &rows[nrows];
    if (measure(n, budget, r) != 0) return 1;
    nrows++;
    printf("%7d %10.2f %8.3f±%-5.3f %8.3f±%-5.3f %9.3f %9.1e %9.1e %9.1e "
           "%9.1e\n",
           n, r->fftw_plan_s * 1e3, r->fftw.per_iter_s * 1e6,
           half_ci_us(&r->fftw), r->avtx.per_iter_s * 1e6,
           half_ci_us(&r->avtx), r->avtx.per_iter_s / r->fftw.per_iter_s,
           r->spec_err, r->fftw_rt_err, r->avtx_rt_err, r->cross_inv_err);
    fflush(stdout);
    if (r->spec_err > 1e-5 || r->avtx_rt_err > 1e-5 || r->fftw_rt_err > 1e-5 ||
        r->cross_inv_err > 1e-5) {
      fprintf(stderr,
              "fft_compare: N=%d: the libraries disagree (spectrum %.2e, "
              "round trips %.2e / %.2e, av_tx inverse of FFTW spectrum %.2e)\n",
              n, r->spec_err, r->fftw_rt_err, r->avtx_rt_err,
              r->cross_inv_err);
      return 1;
    }
  }

  /* Summary: geometric mean ratio, sizes where each wins. */
  double logsum = 0.0;
  int fftw_wins = 0, avtx_wins = 0, ties = 0;
  for (size_t i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    logsum += log(r->avtx.per_iter_s / r->fftw.per_iter_s);
    if (r->avtx.ci_lo_s > r->fftw.ci_hi_s)
      fftw_wins++;
    else if (r->fftw.ci_lo_s > r->avtx.ci_hi_s)
      avtx_wins++;
    else
      ties++;
  }
  const double gmean = exp(logsum / (double)nrows);
  printf("# geometric mean av_tx/FFTW time ratio: %.3f; FFTW faster (CIs "
         "disjoint) at %d sizes, av_tx at %d, overlapping at %d\n",
         gmean, fftw_wins, avtx_wins, ties);

  if (md_path) {
    FILE *md = fopen(md_path, "w");
    if (!md) {
      fprintf(stderr, "fft_compare: %s: %s\n", md_path, strerror(errno));
      return 1;
    }
    char host[256] = "unknown";
    gethostname(host, sizeof(host) - 1);
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    char cpu[256] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
      char line[512];
      while (fgets(line, sizeof(line), ci)) {
        if (!strncmp(line, "model name", 10)) {
          char *c = strchr(line, ':');
          if (c) {
            c++;
            while (*c == ' ') c++;
            snprintf(cpu, sizeof(cpu), "%s", c);
            cpu[strcspn(cpu, "\n")] = 0;
          }
          break;
        }
      }
      fclose(ci);
    }
    fprintf(md, "# FFTW3f vs libavutil av_tx: real FFT round trip\n\n");
    fprintf(md, "- date: %s\n- host: %s, %ld CPUs, %s\n", date, host,
            sysconf(_SC_NPROCESSORS_ONLN), cpu);
    char load[128] = "unknown";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
      if (fgets(load, sizeof(load), la)) load[strcspn(load, "\n")] = 0;
      fclose(la);
    }
    fprintf(md, "- load average at the end (/proc/loadavg): %s\n", load);
    fprintf(md, "- FFTW: %s (fftwf_plan_dft_r2c_1d / c2r, FFTW_MEASURE, out "
                "of place, fftwf_malloc)\n", fftwf_version);
    fprintf(md, "- libavutil: %s, av_tx AV_TX_FLOAT_RDFT (forward and "
                "inverse contexts, scale 1.0, av_malloc)\n",
            AV_STRINGIFY(LIBAVUTIL_VERSION));
    fprintf(md, "- timing: `fft_compare` (bench/timing.c: linear regression "
                "of total time over iteration count, budget %.2f s per "
                "point set); ± is the 90%% confidence interval\n", budget);
    fprintf(md, "- one round trip = one r2c of N reals + one c2r back, "
                "single thread\n\n");
    fprintf(md, "| N | FFTW plan (ms) | FFTW round trip (µs) | av_tx round "
                "trip (µs) | av_tx / FFTW | spectrum rel. err | r^2 "
                "FFTW / av_tx |\n");
    fprintf(md, "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < nrows; i++) {
      const row *r = &rows[i];
      fprintf(md,
              "| %d | %.1f | %.3f ± %.3f | %.3f ± %.3f | %.2f | %.1e | "
              "%.4f / %.4f |\n",
              r->n, r->fftw_plan_s * 1e3, r->fftw.per_iter_s * 1e6,
              half_ci_us(&r->fftw), r->avtx.per_iter_s * 1e6,
              half_ci_us(&r->avtx), r->avtx.per_iter_s / r->fftw.per_iter_s,
              r->spec_err, r->fftw.r2, r->avtx.r2);
    }
    fprintf(md, "\nGeometric mean of av_tx / FFTW time: **%.2f** over %zu "
                "sizes. FFTW faster (disjoint 90%% intervals) at %d sizes, "
                "av_tx at %d, overlapping at %d.\n",
            gmean, nrows, fftw_wins, avtx_wins, ties);
    fclose(md);
  }
  return 0;
}
