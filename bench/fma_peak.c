/* fma_peak — the machine's FP32 fused multiply-add peak, in GFLOP/s.
 *
 * For each vector width the CPU supports (AVX2 + FMA: 8 floats; AVX-512F:
 * 16 floats; checked at run time with __builtin_cpu_supports, the kernels
 * compiled with function-level target attributes so the rest of the
 * program stays baseline x86-64), a loop updates NACC independent
 * accumulators acc[i] = acc[i] * m + c with one FMA each. An FMA unit is
 * pipelined (latency about 4 cycles, 2 units on most cores), so at least
 * latency x units independent chains are needed to keep them busy; NACC
 * is 12 for AVX2 (16 ymm registers) and 24 for AVX-512 (32 zmm). With m
 * just below 1 the values converge to c / (1 - m): no overflow, no
 * denormals.
 *
 * Time per iteration by regression (timing.h), single thread and with all
 * threads (one per online CPU unless --threads says otherwise: the threads
 * run the same loop between two barriers, so the time is that of the
 * slowest). An FMA counts as 2 flops.
 *
 *   fma_peak [--quick] [--budget S] [--threads N] [--tsv]
 *
 * --tsv prints machine-readable lines instead of the table:
 *   isa <TAB> threads <TAB> GFLOP/s <TAB> lo <TAB> hi <TAB> r2
 */
#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timing.h"

/* FMAs per inner-loop step per accumulator chain and steps per work unit:
 * one "iteration" of the timed work is INNER steps over all chains. */
#define INNER 4096

#define NACC_AVX2 12
#define NACC_AVX512 24

static volatile float g_sink; /* keeps the results alive */

__attribute__((target("avx2,fma"), noinline))
static float fma_loop_avx2(size_t iters)
{
  const __m256 m = _mm256_set1_ps(0.999999f);
  const __m256 c = _mm256_set1_ps(1e-6f);
  __m256 a0 = _mm256_set1_ps(0.10f), a1 = _mm256_set1_ps(0.11f);
  __m256 a2 = _mm256_set1_ps(0.12f), a3 = _mm256_set1_ps(0.13f);
  __m256 a4 = _mm256_set1_ps(0.14f), a5 = _mm256_set1_ps(0.15f);
  __m256 a6 = _mm256_set1_ps(0.16f), a7 = _mm256_set1_ps(0.17f);
  __m256 a8 = _mm256_set1_ps(0.18f), a9 = _mm256_set1_ps(0.19f);
  __m256 a10 = _mm256_set1_ps(0.20f), a11 = _mm256_set1_ps(0.21f);
  for (size_t it = 0; it < iters; it++) {
    for (int k = 0; k < INNER; k++) {
      a0 = _mm256_fmadd_ps(a0, m, c);
      a1 = _mm256_fmadd_ps(a1, m, c);
      a2 = _mm256_fmadd_ps(a2, m, c);
      a3 = _mm256_fmadd_ps(a3, m, c);
      a4 = _mm256_fmadd_ps(a4, m, c);
      a5 = _mm256_fmadd_ps(a5, m, c);
      a6 = _mm256_fmadd_ps(a6, m, c);
      a7 = _mm256_fmadd_ps(a7, m, c);
      a8 = _mm256_fmadd_ps(a8, m, c);
      a9 = _mm256_fmadd_ps(a9, m, c);
      a10 = _mm256_fmadd_ps(a10, m, c);
      a11 = _mm256_fmadd_ps(a11, m, c);
      /* An empty asm that "reads and writes" the accumulators: the
       * compiler may not merge, reorder across or drop the FMAs. */
      __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3),
                            "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7));
      __asm__ volatile("" : "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
    }
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1),
                                         _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5),
                                         _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9),
                                     _mm256_add_ps(a10, a11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

/* 24 named accumulators (an array would live in memory). */
#define ACC24(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) \
  X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) \
  X(23)

__attribute__((target("avx512f"), noinline))
static float fma_loop_avx512(size_t iters)
{
  const __m512 m = _mm512_set1_ps(0.999999f);
  const __m512 c = _mm512_set1_ps(1e-6f);
#define DECL(i) __m512 b##i = _mm512_set1_ps(0.1f + 0.01f * (float)(i));
  ACC24(DECL)
#undef DECL
  for (size_t it = 0; it < iters; it++) {
    for (int k = 0; k < INNER; k++) {
#define STEP(i) b##i = _mm512_fmadd_ps(b##i, m, c);
      ACC24(STEP)
#undef STEP
      __asm__ volatile("" : "+v"(b0), "+v"(b1), "+v"(b2), "+v"(b3),
                            "+v"(b4), "+v"(b5), "+v"(b6), "+v"(b7));
      __asm__ volatile("" : "+v"(b8), "+v"(b9), "+v"(b10), "+v"(b11),
                            "+v"(b12), "+v"(b13), "+v"(b14), "+v"(b15));
      __asm__ volatile("" : "+v"(b16), "+v"(b17), "+v"(b18), "+v"(b19),
                            "+v"(b20), "+v"(b21), "+v"(b22), "+v"(b23));
    }
  }
  __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, b##i);
  ACC24(SUM)
#undef SUM
  return _mm512_reduce_add_ps(s);
}

typedef struct isa {
  const char *name;
  int width;   /* floats per vector */
  int nacc;    /* independent chains */
  float (*loop)(size_t iters);
  int supported;
} isa;

/* flops per iteration of the timed work */
static double flops_per_iter(const isa *s)
{
  return 2.0 * (double)s->width * (double)s->nacc * (double)INNER;
}

/* ------------------------------------------------- a small thread team -- */

typedef struct team {
  unsigned n;                /* threads including the caller */
  pthread_t *tid;
  pthread_barrier_t start, done;
  const isa *cur;
  size_t iters;
  int quit;
} team;

static void *worker(void *p)
{
  team *t = p;
  for (;;) {
    pthread_barrier_wait(&t->start);
    if (t->quit) return NULL;
    g_sink = t->cur->loop(t->iters);
    pthread_barrier_wait(&t->done);
  }
}

static int team_init(team *t, unsigned n)
{
  memset(t, 0, sizeof *t);
  t->n = n;
  if (n < 2) return 0;
  t->tid = calloc(n - 1, sizeof *t->tid);
  if (!t->tid) return -1;
  pthread_barrier_init(&t->start, NULL, n);
  pthread_barrier_init(&t->done, NULL, n);
  for (unsigned i = 0; i + 1 < n; i++)
    if (pthread_create(&t->tid[i], NULL, worker, t) != 0) return -1;
  return 0;
}

static void team_free(team *t)
{
  if (t->n < 2) return;
  t->quit = 1;
  pthread_barrier_wait(&t->start);
  for (unsigned i = 0; i + 1 < t->n; i++) pthread_join(t->tid[i], NULL);
  pthread_barrier_destroy(&t->start);
  pthread_barrier_destroy(&t->done);
  free(t->tid);
}

static void run_team(void *p, size_t iters)
{
  team *t = p;
  t->iters = iters;
  if (t->n >= 2) pthread_barrier_wait(&t->start);
  g_sink = t->cur->loop(iters);
  if (t->n >= 2) pthread_barrier_wait(&t->done);
}

/* ---------------------------------------------------------------- main -- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: fma_peak [--quick] [--budget S] [--threads N] [--tsv]\n"
    "  FP32 FMA peak (GFLOP/s, FMA = 2 flops) for AVX2 (8-wide) and\n"
    "  AVX-512 (16-wide) where supported, 1 thread and N threads\n"
    "  (default: one per online CPU).\n");
}

int main(int argc, char **argv)
{
  double budget = 0.5;
  long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
  int tsv = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      budget = 0.05;
    } else if (!strcmp(a, "--budget") && i + 1 < argc) {
      budget = atof(argv[++i]);
      if (!(budget > 0.0) || !isfinite(budget)) {
        fprintf(stderr, "fma_peak: bad --budget %s\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      char *end;
      errno = 0;
      nthreads = strtol(argv[++i], &end, 10);
      if (*end || errno || nthreads < 1 || nthreads > 1024) {
        fprintf(stderr, "fma_peak: bad --threads %s\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(a, "--tsv")) {
      tsv = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "fma_peak: unknown argument %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (nthreads < 1) nthreads = 1;

  __builtin_cpu_init();
  isa isas[2] = {
    {"avx2", 8, NACC_AVX2, fma_loop_avx2,
     __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
    {"avx512", 16, NACC_AVX512, fma_loop_avx512,
     __builtin_cpu_supports("avx512f")},
  };

  unsigned counts[2] = {1, (unsigned)nthreads};
  const int ncounts = nthreads > 1 ? 2 : 1;
  if (!tsv) {
    printf("# fma_peak: FP32 FMA peak, FMA = 2 flops; %ld online CPUs; "
           "%.2f s budget per point; 90%% CI by regression\n",
           sysconf(_SC_NPROCESSORS_ONLN), budget);
    printf("%-7s %6s %5s %7s %10s %18s %10s %7s\n", "isa", "width", "acc",
           "threads", "GFLOP/s", "90% CI", "per thread", "r2");
  }
  int any = 0;
  for (int s = 0; s < 2; s++) {
    if (!isas[s].supported) {
      if (!tsv) printf("%-7s   (not supported by this CPU)\n", isas[s].name);
      continue;
    }
    any = 1;
    for (int c = 0; c < ncounts; c++) {
      team t;
      if (team_init(&t, counts[c]) != 0) {
        fprintf(stderr, "fma_peak: cannot start %u threads\n", counts[c]);
        return 1;
      }
      t.cur = &isas[s];
      cf_bench_result r = cf_bench_run(run_team, &t, budget);
      team_free(&t);
      const double f = flops_per_iter(&isas[s]) * counts[c] * 1e-9;
      const double g = f / r.per_iter_s;
      const double lo = f / r.ci_hi_s, hi = f / r.ci_lo_s;
      if (tsv) {
        printf("%s\t%u\t%.2f\t%.2f\t%.2f\t%.5f\n", isas[s].name, counts[c],
               g, lo, hi, r.r2);
      } else {
        char ci[64];
        snprintf(ci, sizeof ci, "%.1f..%.1f", lo, hi);
        printf("%-7s %6d %5d %7u %10.1f %18s %10.1f %7.4f\n", isas[s].name,
               isas[s].width, isas[s].nacc, counts[c], g, ci,
               g / counts[c], r.r2);
      }
      fflush(stdout);
    }
  }
  if (!any) {
    fprintf(stderr, "fma_peak: neither AVX2+FMA nor AVX-512F on this CPU\n");
    return 1;
  }
  return 0;
}
