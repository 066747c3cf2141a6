/* bench_engine — in-process throughput of the cudafilter CPU engine.
 *
 * Grid mode (default): for every kernel length x block size x algorithm x
 * thread count, build an engine (C channels, a shared decaying-noise
 * kernel, CPU backend) and time cf_engine_process() on one block of
 * `block` frames per iteration by linear regression (timing.h). Reported:
 * ns per frame (all channels) with its 90% interval, x-realtime at the
 * sample rate (48 kHz), r^2, the engine's latency and description. A
 * series (algorithm, block, threads) stops growing L once its predicted
 * cost passes the cap (--cap-xrt: default 0.25 x realtime), so direct
 * convolution with 131072 taps is not timed.
 *
 * --crossover: per block size (and thread count), the kernel length where
 * fft-uniform and fft-nonuniform become cheaper than direct: a doubling
 * scan brackets it, then bisection over L on measured times narrows it to
 * about 3%. The result is what CF_ALGO_AUTO should use.
 *
 * --swap: per kernel length x block (algorithm auto, the first thread
 * count), the time cf_engine_set_kernel() takes on a running engine (the
 * CPU builds the new kernel's plan and primes it on the past input), 15
 * swaps each followed by one block: median and max, against the block's
 * duration (a live stream's budget per block). The call runs in the
 * streaming thread of cudafir. --gap N processes N blocks after each swap
 * instead of one (enough for the crossfade to end and the old kernel's
 * bank to retire: the next swap of the same layout reuses it). first_ms
 * is the first swap (to the same
 * plan sizes as the engine's). --cold runs each row in a process of its
 * own with FFTW wisdom off (CF_FFT_WISDOM=none) and fft-nonuniform forced:
 * the engine starts on a kernel 1/16 as long, so the first swap needs FFT
 * sizes this process never planned (a kernel-file change on a live
 * stream, the first time on a machine).
 *
 * --denormal: per kernel length x block x algorithm x thread count, the
 * same engine timed on normal input (uniform in +-0.5) and on denormal
 * input (the same scaled by 2^-127, below FLT_MIN: a tail decaying to
 * silence passes there), and their ratio. x86 CPUs compute some
 * operations on denormals in microcode; the engine flushes them to zero
 * during its calls (src/cpu/fpenv.h), so the ratio should stay near 1.
 *
 *   bench_engine [--quick] [--crossover | --swap | --denormal] [--budget S]
 *                [--channels C]
 *                [--rate HZ] [--lengths L,L,..] [--blocks B,..]
 *                [--algos a,..] [--threads T,..] [--cap-xrt X]
 *                [--max-len L] [--tsv FILE]
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudafilter/engine.h"
#include "cudafilter/kernel.h"
#include "timing.h"

#define MAX_LIST 64

typedef struct list {
  size_t v[MAX_LIST];
  size_t n;
} list;

typedef struct options {
  double budget;
  unsigned channels;
  unsigned rate;
  list lengths, blocks, threads;
  cf_algorithm algos[4];
  size_t nalgos;
  double cap_xrt;
  size_t max_len; /* crossover: scan limit */
  const char *tsv_path;
  int crossover;
  int swap;
  int denormal;
  int cold;
  size_t gap; /* --swap: blocks after each swap */
  int quick;
} options;

typedef struct measurement {
  int ok;                /* 0: engine could not be built (message printed) */
  cf_bench_result r;     /* per iteration = one block */
  double ns_frame;       /* per frame, all channels */
  double ns_lo, ns_hi;   /* 90% interval */
  double xrt;            /* x-realtime at opts.rate */
  size_t latency;
  char describe[256];
} measurement;

typedef struct work {
  cf_engine *e;
  const float *in;
  float *out;
  size_t block;
} work;

static void run_blocks(void *p, size_t iters) {
  work *w = p;
  for (size_t i = 0; i < iters; i++) {
    if (cf_engine_process(w->e, w->in, w->out, w->block) != CF_OK) {
      fprintf(stderr, "bench_engine: process failed: %s\n", cf_last_error());
      exit(1);
    }
  }
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* Decaying noise, unit L2 norm: a reverb-like kernel. */
static float *make_taps(size_t len) {
  float *t = malloc(len * sizeof(*t));
  if (!t) return NULL;
  const double tau = len > 5 ? (double)len / 5.0 : 1.0;
  double norm = 0.0;
  for (size_t k = 0; k < len; k++) {
    const double v = (urand() * 2.0 - 1.0) * exp(-(double)k / tau);
    t[k] = (float)v;
    norm += v * v;
  }
  norm = sqrt(norm);
  for (size_t k = 0; k < len; k++) t[k] = (float)(t[k] / norm);
  return t;
}

static float *g_in, *g_out;
static size_t g_cap; /* frames */

static int g_denormal; /* the input g_in holds: 0 normal, 1 denormal */

static int ensure_buffers(size_t frames, unsigned channels) {
  if (frames <= g_cap) return 0;
  free(g_in);
  free(g_out);
  g_in = malloc(frames * channels * sizeof(float));
  g_out = malloc(frames * channels * sizeof(float));
  if (!g_in || !g_out) return -1;
  for (size_t i = 0; i < frames * channels; i++)
    g_in[i] = (float)(urand() - 0.5);
  g_cap = frames;
  g_denormal = 0;
  return 0;
}

/* Scale g_in to denormals (x 2^-127) or back: exact, as powers of 2 are
 * (the denormals keep 23 - (127 - 126 + 1) bits; back up, the ones lost
 * are zeros). */
static void set_denormal(unsigned channels, int on) {
  if (on == g_denormal) return;
  for (size_t i = 0; i < g_cap * channels; i++)
    g_in[i] = on ? ldexpf(g_in[i], -127) : ldexpf(g_in[i], 127);
  g_denormal = on;
}

static measurement measure(const options *o, size_t len, size_t block,
                           cf_algorithm algo, unsigned threads) {
  measurement m;
  memset(&m, 0, sizeof(m));
  float *taps = make_taps(len);
  cf_kernel *k = NULL;
  if (!taps || cf_kernel_new_shared(taps, len, &k) != CF_OK) {
    fprintf(stderr, "bench_engine: kernel of %zu taps: %s\n", len,
            cf_last_error());
    free(taps);
    return m;
  }
  free(taps);
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = o->channels;
  cfg.block_size = (unsigned)block;
  cfg.backend = CF_BACKEND_CPU;
  cfg.algorithm = algo;
  cfg.threads = threads;
  cf_engine *e = NULL;
  if (cf_engine_new_audio(&cfg, k, &e) != CF_OK) {
    fprintf(stderr, "bench_engine: engine L=%zu block=%zu %s threads=%u: "
                    "%s\n", len, block, cf_algorithm_name(algo), threads,
            cf_last_error());
    cf_kernel_free(k);
    return m;
  }
  cf_kernel_free(k);
  if (ensure_buffers(block, o->channels) != 0) {
    fprintf(stderr, "bench_engine: out of memory\n");
    exit(1);
  }
  work w = {e, g_in, g_out, block};
  m.r = cf_bench_run(run_blocks, &w, o->budget);
  m.ok = 1;
  m.ns_frame = m.r.per_iter_s * 1e9 / (double)block;
  m.ns_lo = m.r.ci_lo_s * 1e9 / (double)block;
  m.ns_hi = m.r.ci_hi_s * 1e9 / (double)block;
  m.xrt = 1e9 / ((double)o->rate * m.ns_frame);
  m.latency = cf_engine_latency(e);
  snprintf(m.describe, sizeof(m.describe), "%s", cf_engine_describe(e));
  cf_engine_free(e);
  return m;
}

/* ------------------------------------------------------------ options -- */

static int parse_list(const char *s, list *l) {
  l->n = 0;
  while (*s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || l->n == MAX_LIST) return -1;
    l->v[l->n++] = (size_t)v;
    s = end;
    if (*s == ',') s++;
    else if (*s) return -1;
  }
  return l->n ? 0 : -1;
}

static int parse_algos(const char *s, options *o) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", s);
  o->nalgos = 0;
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    cf_algorithm a;
    if (cf_algorithm_from_string(tok, &a) != CF_OK || o->nalgos == 4)
      return -1;
    o->algos[o->nalgos++] = a;
  }
  return o->nalgos ? 0 : -1;
}

static void usage(FILE *f) {
  fprintf(f,
    "usage: bench_engine [--quick] [--crossover | --denormal |\n"
    "                    --swap [--cold] [--gap N]]\n"
    "                    [--budget S]\n"
    "                    [--channels C]\n"
    "                    [--rate HZ] [--lengths L,..] [--blocks B,..]\n"
    "                    [--algos a,..] [--threads T,..] [--cap-xrt X]\n"
    "                    [--max-len L] [--tsv FILE]\n"
    "  grid (default): ns/frame with 90%% CI and x-realtime for every\n"
    "    kernel length x block x algorithm x threads (0 = all cores);\n"
    "  --crossover: per block and thread count, the kernel length where\n"
    "    fft-uniform / fft-nonuniform become cheaper than direct.\n"
    "  --swap: ms per cf_engine_set_kernel() on a running engine, per\n"
    "    kernel length x block, against the block's duration; with\n"
    "    --cold, each row in a new process, from a 1/16 kernel, no wisdom;\n"
    "    --gap N: N blocks after each swap (default 1).\n"    "  --denormal: ns/frame on normal and on denormal input (x 2^-127)\n"
    "    and their ratio, per kernel length x block x algorithm.\n"
    "  algorithms: auto, direct, fft-uniform, fft-nonuniform.\n");
}

static void set_list(list *l, const size_t *v, size_t n) {
  l->n = n;
  memcpy(l->v, v, n * sizeof(*v));
}

/* ---------------------------------------------------------------- grid -- */

static FILE *open_tsv(const options *o) {
  if (!o->tsv_path) return NULL;
  FILE *f = fopen(o->tsv_path, "w");
  if (!f) {
    fprintf(stderr, "bench_engine: %s: %s\n", o->tsv_path, strerror(errno));
    exit(1);
  }
  return f;
}

static void print_env(FILE *f, const options *o) {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  char date[64];
  time_t now = time(NULL);
  strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
  fprintf(f, "# bench_engine %s on %s (%ld CPUs); channels=%u rate=%u "
             "budget=%.3f s per point; 90%% CI by regression\n",
          date, host, sysconf(_SC_NPROCESSORS_ONLN), o->channels, o->rate,
          o->budget);
}

static int grid(const options *o) {
  FILE *tsv = open_tsv(o);
  print_env(stdout, o);
  if (tsv) {
    print_env(tsv, o);
    fprintf(tsv, "len\tblock\talgorithm\tthreads\tns_frame\tns_lo\tns_hi\t"
                 "xrt\tr2\tpoints\tlatency\tdescribe\n");
  }
  printf("%7s %6s %-14s %3s %12s %10s %9s %7s %6s  %s\n", "len", "block",
         "algorithm", "thr", "ns/frame", "±90%", "x-rt", "r2", "lat",
         "engine");
  size_t nl = o->lengths.n;
  /* best forced time per (L, block, threads) for the auto check */
  double *best = malloc(sizeof(double) * nl * o->blocks.n * o->threads.n);
  double *autot = malloc(sizeof(double) * nl * o->blocks.n * o->threads.n);
  /* the engines' descriptions: where auto built the very plan of the best
   * forced algorithm, a ratio far from 1 is timing noise, not a bad pick */
  char(*best_desc)[256] = calloc(nl * o->blocks.n * o->threads.n, 256);
  char(*auto_desc)[256] = calloc(nl * o->blocks.n * o->threads.n, 256);
  if (!best || !autot || !best_desc || !auto_desc) return 1;
  for (size_t i = 0; i < nl * o->blocks.n * o->threads.n; i++)
    best[i] = autot[i] = NAN;

  for (size_t bi = 0; bi < o->blocks.n; bi++) {
    const size_t block = o->blocks.v[bi];
    for (size_t ti = 0; ti < o->threads.n; ti++) {
      const unsigned thr = (unsigned)o->threads.v[ti];
      for (size_t ai = 0; ai < o->nalgos; ai++) {
        const cf_algorithm algo = o->algos[ai];
        double last_ns = NAN;
        size_t last_len = 0;
        for (size_t li = 0; li < nl; li++) {
          const size_t len = o->lengths.v[li];
          /* Cost cap: direct grows linearly with L; the FFT paths about
           * logarithmically (take the last cost as the prediction). */
          if (!isnan(last_ns)) {
            double pred = last_ns;
            if (algo == CF_ALGO_DIRECT)
              pred = last_ns * (double)len / (double)last_len;
            const double pred_xrt = 1e9 / ((double)o->rate * pred);
            if (pred_xrt < o->cap_xrt) {
              printf("%7zu %6zu %-14s %3u %12s  (skipped: predicted %.3f x "
                     "realtime < cap %.2f)\n", len, block,
                     cf_algorithm_name(algo), thr, "-", pred_xrt, o->cap_xrt);
              continue;
            }
          }
          measurement m = measure(o, len, block, algo, thr);
          if (!m.ok) continue;
          last_ns = m.ns_frame;
          last_len = len;
          const size_t idx = (li * o->blocks.n + bi) * o->threads.n + ti;
          if (algo == CF_ALGO_AUTO) {
            autot[idx] = m.ns_frame;
            snprintf(auto_desc[idx], 256, "%s", m.describe);
          } else if (isnan(best[idx]) || m.ns_frame < best[idx]) {
            best[idx] = m.ns_frame;
            snprintf(best_desc[idx], 256, "%s", m.describe);
          }
          printf("%7zu %6zu %-14s %3u %12.2f %10.2f %9.1f %7.4f %6zu  %s\n",
                 len, block, cf_algorithm_name(algo), thr, m.ns_frame,
                 (m.ns_hi - m.ns_lo) / 2.0, m.xrt, m.r.r2, m.latency,
                 m.describe);
          fflush(stdout);
          if (tsv) {
            fprintf(tsv, "%zu\t%zu\t%s\t%u\t%.4f\t%.4f\t%.4f\t%.3f\t%.5f\t"
                         "%zu\t%zu\t%s\n",
                    len, block, cf_algorithm_name(algo), thr, m.ns_frame,
                    m.ns_lo, m.ns_hi, m.xrt, m.r.r2, m.r.points, m.latency,
                    m.describe);
            fflush(tsv);
          }
        }
      }
    }
  }

  /* Does auto pick well? Compare with the best forced algorithm. */
  int any = 0;
  for (size_t li = 0; li < nl; li++)
    for (size_t bi = 0; bi < o->blocks.n; bi++)
      for (size_t ti = 0; ti < o->threads.n; ti++) {
        const size_t idx = (li * o->blocks.n + bi) * o->threads.n + ti;
        if (isnan(autot[idx]) || isnan(best[idx])) continue;
        if (!any) {
          printf("\n# auto vs the best forced algorithm (ratio > 1.10 "
                 "flagged)\n%7s %6s %3s %12s %12s %7s\n", "len", "block",
                 "thr", "auto ns", "best ns", "ratio");
          any = 1;
        }
        const double ratio = autot[idx] / best[idx];
        printf("%7zu %6zu %3zu %12.2f %12.2f %7.3f%s\n", o->lengths.v[li],
               o->blocks.v[bi], o->threads.v[ti], autot[idx], best[idx],
               ratio,
               ratio <= 1.10 ? ""
               : !strcmp(auto_desc[idx], best_desc[idx])
                   ? "  (same plan as the best: timing noise)"
                   : "  <-- auto is slower");
      }
  free(best);
  free(autot);
  free(best_desc);
  free(auto_desc);
  if (tsv) fclose(tsv);
  return 0;
}

/* ------------------------------------------------------------ denormal -- */

static int denormal(const options *o) {
  FILE *tsv = open_tsv(o);
  print_env(stdout, o);
  printf("# denormal: ns/frame on normal input (+-0.5) and on the same "
         "x 2^-127 (denormal), same engine settings\n");
  if (tsv) {
    print_env(tsv, o);
    fprintf(tsv, "len\tblock\talgorithm\tthreads\tns_normal\tci_normal\t"
                 "ns_denormal\tci_denormal\tratio\tdescribe\n");
  }
  printf("%7s %6s %-14s %3s %12s %8s %12s %8s %7s  %s\n", "len", "block",
         "algorithm", "thr", "normal ns", "±90%", "denorm ns", "±90%",
         "ratio", "engine");
  for (size_t bi = 0; bi < o->blocks.n; bi++)
    for (size_t ti = 0; ti < o->threads.n; ti++)
      for (size_t ai = 0; ai < o->nalgos; ai++)
        for (size_t li = 0; li < o->lengths.n; li++) {
          const size_t len = o->lengths.v[li], block = o->blocks.v[bi];
          const cf_algorithm algo = o->algos[ai];
          const unsigned thr = (unsigned)o->threads.v[ti];
          if (algo == CF_ALGO_DIRECT && len > 8192) continue; /* O(L) */
          if (ensure_buffers(block, o->channels) != 0) {
            fprintf(stderr, "bench_engine: out of memory\n");
            exit(1);
          }
          measurement m[2];
          for (int d = 0; d < 2; d++) {
            set_denormal(o->channels, d);
            rng = 0x2545F4914F6CDD1Dull; /* the same kernel both times */
            m[d] = measure(o, len, block, algo, thr);
          }
          set_denormal(o->channels, 0);
          if (!m[0].ok || !m[1].ok) continue;
          const double ratio = m[1].ns_frame / m[0].ns_frame;
          printf("%7zu %6zu %-14s %3u %12.2f %8.2f %12.2f %8.2f %7.2f  %s\n",
                 len, block, cf_algorithm_name(algo), thr, m[0].ns_frame,
                 (m[0].ns_hi - m[0].ns_lo) / 2.0, m[1].ns_frame,
                 (m[1].ns_hi - m[1].ns_lo) / 2.0, ratio, m[0].describe);
          fflush(stdout);
          if (tsv) {
            fprintf(tsv, "%zu\t%zu\t%s\t%u\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t"
                         "%s\n",
                    len, block, cf_algorithm_name(algo), thr, m[0].ns_frame,
                    (m[0].ns_hi - m[0].ns_lo) / 2.0, m[1].ns_frame,
                    (m[1].ns_hi - m[1].ns_lo) / 2.0, ratio, m[0].describe);
            fflush(tsv);
          }
        }
  if (tsv) fclose(tsv);
  return 0;
}

/* ---------------------------------------------------------------- swap -- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One row: an engine on kernel k[0] (cold: a 1/16 one), the first swap to
 * k[1], then NSWAP swaps between k[1] and k[2]. */
static int swap_row(const options *o, size_t len, size_t block) {
  enum { NSWAP = 15 };
  size_t warm = 2 * (size_t)o->rate;
  size_t short_len = len / 16 > 64 ? len / 16 : 64;
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = o->channels;
  cfg.block_size = block;
  cfg.backend = CF_BACKEND_CPU;
  cfg.threads = (unsigned)o->threads.v[0];
  if (o->cold) cfg.algorithm = CF_ALGO_FFT_NONUNIFORM;
  size_t lens[3] = {o->cold ? short_len : len, len, len};
  float *taps[3] = {make_taps(lens[0]), make_taps(len), make_taps(len)};
  cf_kernel *k[3] = {NULL, NULL, NULL};
  cf_engine *e = NULL;
  int bad = !taps[0] || !taps[1] || !taps[2];
  for (int i = 0; i < 3 && !bad; i++)
    bad = cf_kernel_new_shared(taps[i], lens[i], &k[i]) != CF_OK;
  if (bad || cf_engine_new_audio(&cfg, k[0], &e) ||
      cf_engine_process(e, g_in, g_out, warm)) {
    fprintf(stderr, "bench_engine: swap %zu taps, block %zu: %s\n", len,
            block, cf_last_error());
    return 1;
  }
  double first = 0, t[NSWAP];
  for (int i = -1; i < NSWAP; i++) {
    double t0 = now_s();
    if (cf_engine_set_kernel(e, k[i < 0 ? 1 : 1 + (i + 1) % 2], block)) {
      fprintf(stderr, "bench_engine: set_kernel: %s\n", cf_last_error());
      return 1;
    }
    double ms = (now_s() - t0) * 1e3;
    if (i < 0)
      first = ms;
    else
      t[i] = ms;
    for (size_t b = 0; b < o->gap; b++)
      if (cf_engine_process(e, g_in, g_out, block))
        return 1;
  }
  qsort(t, NSWAP, sizeof *t, cmp_double);
  printf("%8zu %6zu %10.3f %10.3f %10.3f %10.3f  %s\n", len, block, first,
         t[NSWAP / 2], t[NSWAP - 1], 1e3 * (double)block / o->rate,
         cf_engine_describe(e));
  fflush(stdout);
  cf_engine_free(e);
  for (int i = 0; i < 3; i++) {
    cf_kernel_free(k[i]);
    free(taps[i]);
  }
  return 0;
}

static int swap_cost(const options *o) {
  print_env(stdout, o);
  printf("# set_kernel on a running engine (algorithm %s, %zu thread(s), "
         "0 = all cores): ms per call; median and max over 15 swaps%s\n",
         o->cold ? "fft-nonuniform" : "auto", o->threads.v[0],
         o->cold ? "; each row a new process without FFTW wisdom, first_ms "
                   "from a kernel 1/16 as long" : "");
  printf("%8s %6s %10s %10s %10s %10s  %s\n", "taps", "block", "first_ms",
         "median_ms", "max_ms", "block_ms", "engine");
  fflush(stdout);
  if (ensure_buffers(2 * (size_t)o->rate, o->channels)) return 1;
  if (o->cold) setenv("CF_FFT_WISDOM", "none", 1);
  for (size_t li = 0; li < o->lengths.n; li++)
    for (size_t bi = 0; bi < o->blocks.n; bi++) {
      size_t len = o->lengths.v[li], block = o->blocks.v[bi];
      if (!o->cold) {
        if (swap_row(o, len, block)) return 1;
        continue;
      }
      pid_t pid = fork();
      if (pid < 0) {
        perror("bench_engine: fork");
        return 1;
      }
      if (pid == 0) _exit(swap_row(o, len, block));
      int st = 0;
      if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return 1;
    }
  return 0;
}

/* ----------------------------------------------------------- crossover -- */

#define CACHE_MAX 512
typedef struct cached {
  size_t len, block;
  unsigned threads;
  cf_algorithm algo;
  double ns;
} cached;
static cached cache[CACHE_MAX];
static size_t ncache;

static double cost_ns(const options *o, size_t len, size_t block,
                      cf_algorithm algo, unsigned threads) {
  for (size_t i = 0; i < ncache; i++)
    if (cache[i].len == len && cache[i].block == block &&
        cache[i].algo == algo && cache[i].threads == threads)
      return cache[i].ns;
  measurement m = measure(o, len, block, algo, threads);
  const double ns = m.ok ? m.ns_frame : NAN;
  fprintf(stderr, "  L=%-6zu block=%-5zu %-14s thr=%u: %10.2f ns/frame "
                  "(±%.2f) %s\n", len, block, cf_algorithm_name(algo),
          threads, ns, m.ok ? (m.ns_hi - m.ns_lo) / 2.0 : NAN, m.describe);
  if (ncache < CACHE_MAX)
    cache[ncache++] = (cached){len, block, threads, algo, ns};
  return ns;
}

typedef struct xover {
  size_t block;
  unsigned threads;
  cf_algorithm algo;
  size_t lo, hi; /* direct cheaper at lo, FFT cheaper at hi (0: none) */
  double d_lo, f_lo, d_hi, f_hi;
  const char *note;
} xover;

static xover find_crossover(const options *o, size_t block, unsigned thr,
                            cf_algorithm fft) {
  xover x = {block, thr, fft, 0, 0, NAN, NAN, NAN, NAN, ""};
  /* Doubling scan from L = 8 (below that a forced FFT path falls back to
   * direct, and both costs are the per-frame overhead: noise decides).
   * The bracket is the LAST length where direct was cheaper and the next
   * one, so a noisy win of the FFT path at short L does not end the scan;
   * it stops once the FFT path is under half the direct cost twice. */
  size_t last_direct = 0, first_fft_after = 0;
  double dl = NAN, fl = NAN, dh = NAN, fh = NAN;
  int clear_wins = 0;
  for (size_t len = 8; len <= o->max_len && clear_wins < 2; len *= 2) {
    const double d = cost_ns(o, len, block, CF_ALGO_DIRECT, thr);
    const double f = cost_ns(o, len, block, fft, thr);
    if (isnan(d) || isnan(f)) {
      x.note = "engine failed";
      return x;
    }
    if (f < d) {
      if (first_fft_after == 0) {
        first_fft_after = len;
        dh = d;
        fh = f;
      }
      clear_wins = f < 0.5 * d ? clear_wins + 1 : 0;
    } else {
      last_direct = len;
      dl = d;
      fl = f;
      first_fft_after = 0;
      clear_wins = 0;
    }
  }
  if (first_fft_after == 0) {
    x.lo = last_direct;
    x.d_lo = dl;
    x.f_lo = fl;
    x.note = "direct cheaper up to --max-len";
    return x;
  }
  x.lo = last_direct;
  x.hi = first_fft_after;
  x.d_lo = dl;
  x.f_lo = fl;
  x.d_hi = dh;
  x.f_hi = fh;
  if (last_direct == 0) {
    x.note = "FFT cheaper already at L=8";
    return x;
  }
  /* Bisection: keep direct cheaper at lo, FFT cheaper at hi. */
  while (x.hi - x.lo > 1 && (double)(x.hi - x.lo) > 0.03 * (double)x.lo) {
    const size_t mid = x.lo + (x.hi - x.lo) / 2;
    const double d = cost_ns(o, mid, block, CF_ALGO_DIRECT, thr);
    const double f = cost_ns(o, mid, block, fft, thr);
    if (isnan(d) || isnan(f)) {
      x.note = "engine failed during bisection";
      break;
    }
    if (f < d) {
      x.hi = mid;
      x.d_hi = d;
      x.f_hi = f;
    } else {
      x.lo = mid;
      x.d_lo = d;
      x.f_lo = f;
    }
  }
  return x;
}

static int crossover(const options *o) {
  FILE *tsv = open_tsv(o);
  print_env(stdout, o);
  printf("# crossover: the smallest kernel length where the FFT path is "
         "cheaper than direct (measured; bisection to ~3%%)\n");
  xover res[4 * MAX_LIST * 4];
  size_t nres = 0;
  const cf_algorithm ffts[2] = {CF_ALGO_FFT_UNIFORM, CF_ALGO_FFT_NONUNIFORM};
  for (size_t ti = 0; ti < o->threads.n; ti++)
    for (size_t bi = 0; bi < o->blocks.n; bi++)
      for (int a = 0; a < 2; a++) {
        fprintf(stderr, "crossover: block %zu, threads %zu, %s\n",
                o->blocks.v[bi], o->threads.v[ti],
                cf_algorithm_name(ffts[a]));
        res[nres++] = find_crossover(o, o->blocks.v[bi],
                                     (unsigned)o->threads.v[ti], ffts[a]);
      }

  /* Direct cost per tap and channel: slope of the cached direct times. */
  printf("\n%6s %3s %-14s %10s %10s %12s %12s %12s %12s  %s\n", "block",
         "thr", "fft path", "direct<=L", "fft<L", "direct@lo", "fft@lo",
         "direct@hi", "fft@hi", "note");
  if (tsv) {
    print_env(tsv, o);
    fprintf(tsv, "block\tthreads\tfft_algorithm\tdirect_cheaper_at\t"
                 "fft_cheaper_at\tdirect_ns_lo\tfft_ns_lo\tdirect_ns_hi\t"
                 "fft_ns_hi\tnote\n");
  }
  for (size_t i = 0; i < nres; i++) {
    const xover *x = &res[i];
    printf("%6zu %3u %-14s %10zu %10zu %12.2f %12.2f %12.2f %12.2f  %s\n",
           x->block, x->threads, cf_algorithm_name(x->algo), x->lo, x->hi,
           x->d_lo, x->f_lo, x->d_hi, x->f_hi, x->note);
    if (tsv)
      fprintf(tsv, "%zu\t%u\t%s\t%zu\t%zu\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n",
              x->block, x->threads, cf_algorithm_name(x->algo), x->lo, x->hi,
              x->d_lo, x->f_lo, x->d_hi, x->f_hi, x->note);
  }

  /* Least-squares slope of direct ns/frame over L (single thread rows):
   * the direct path's cost per tap, per channel. */
  for (size_t ti = 0; ti < o->threads.n; ti++) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    size_t n = 0;
    for (size_t i = 0; i < ncache; i++) {
      if (cache[i].algo != CF_ALGO_DIRECT || isnan(cache[i].ns) ||
          cache[i].threads != o->threads.v[ti] || cache[i].len < 16)
        continue;
      const double x = (double)cache[i].len, y = cache[i].ns;
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
      n++;
    }
    if (n >= 3) {
      const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
      printf("# direct path (threads %zu): %.4f ns per tap per channel "
             "(slope over %zu measurements with L >= 16)\n",
             o->threads.v[ti], b / o->channels, n);
    }
  }
  printf("# suggestion for AUTO: per block, use direct below the "
         "fft<L column of the cheaper FFT path\n");
  if (tsv) fclose(tsv);
  return 0;
}

/* ---------------------------------------------------------------- main -- */

int main(int argc, char **argv) {
  options o;
  memset(&o, 0, sizeof(o));
  o.budget = 0.2;
  o.gap = 1;
  o.channels = 2;
  o.rate = 48000;
  o.cap_xrt = 0.25;
  o.max_len = 65536;
  const size_t def_lengths[] = {1,    4,    16,   32,    48,    64,   96,
                                128,  192,  256,  384,   512,   768,  1024,
                                2048, 4096, 8192, 16384, 32768, 65536,
                                131072};
  const size_t def_blocks[] = {64, 256, 1024, 8192};
  const size_t def_threads[] = {1, 0};
  const size_t quick_lengths[] = {16, 256, 4096, 65536};
  const size_t quick_blocks[] = {256, 1024};
  const size_t quick_threads[] = {1};
  int lengths_set = 0, blocks_set = 0, threads_set = 0, budget_set = 0;
  int algos_set = 0;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) {
      o.quick = 1;
    } else if (!strcmp(a, "--crossover")) {
      o.crossover = 1;
    } else if (!strcmp(a, "--swap")) {
      o.swap = 1;
    } else if (!strcmp(a, "--denormal")) {
      o.denormal = 1;
    } else if (!strcmp(a, "--cold")) {
      o.cold = 1;
    } else if (!strcmp(a, "--gap") && v) {
      o.gap = (size_t)atol(v);
      i++;
    } else if (!strcmp(a, "--budget") && v) {
      o.budget = atof(v);
      budget_set = 1;
      i++;
    } else if (!strcmp(a, "--channels") && v) {
      o.channels = (unsigned)atoi(v);
      i++;
    } else if (!strcmp(a, "--rate") && v) {
      o.rate = (unsigned)atoi(v);
      i++;
    } else if (!strcmp(a, "--lengths") && v) {
      if (parse_list(v, &o.lengths)) {
        fprintf(stderr, "bench_engine: bad --lengths %s\n", v);
        goto bad;
      }
      lengths_set = 1;
      i++;
    } else if (!strcmp(a, "--blocks") && v) {
      if (parse_list(v, &o.blocks)) {
        fprintf(stderr, "bench_engine: bad --blocks %s\n", v);
        goto bad;
      }
      blocks_set = 1;
      i++;
    } else if (!strcmp(a, "--threads") && v) {
      if (parse_list(v, &o.threads)) {
        fprintf(stderr, "bench_engine: bad --threads %s\n", v);
        goto bad;
      }
      threads_set = 1;
      i++;
    } else if (!strcmp(a, "--algos") && v) {
      if (parse_algos(v, &o)) {
        fprintf(stderr, "bench_engine: bad --algos %s\n", v);
        goto bad;
      }
      algos_set = 1;
      i++;
    } else if (!strcmp(a, "--cap-xrt") && v) {
      o.cap_xrt = atof(v);
      i++;
    } else if (!strcmp(a, "--max-len") && v) {
      o.max_len = (size_t)strtoull(v, NULL, 10);
      i++;
    } else if (!strcmp(a, "--tsv") && v) {
      o.tsv_path = v;
      i++;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "bench_engine: unknown option or missing value: %s\n",
              a);
      goto bad;
    }
  }
  if (!lengths_set) {
    if (o.quick) set_list(&o.lengths, quick_lengths, 4);
    else set_list(&o.lengths, def_lengths, sizeof(def_lengths) / sizeof(size_t));
  }
  if (!blocks_set) {
    if (o.quick) set_list(&o.blocks, quick_blocks, 2);
    else set_list(&o.blocks, def_blocks, 4);
  }
  if (!threads_set) {
    /* crossover: single thread unless asked (the AUTO choice is made per
     * convolver; threads split channels) */
    if (o.quick || o.crossover) set_list(&o.threads, quick_threads, 1);
    else set_list(&o.threads, def_threads, 2);
  }
  if (!budget_set && o.quick) o.budget = 0.03;
  if (o.quick && o.crossover && o.max_len > 8192) o.max_len = 8192;
  if (!algos_set) {
    o.nalgos = 4;
    o.algos[0] = CF_ALGO_DIRECT;
    o.algos[1] = CF_ALGO_FFT_UNIFORM;
    o.algos[2] = CF_ALGO_FFT_NONUNIFORM;
    o.algos[3] = CF_ALGO_AUTO;
  }
  /* !(x > 0) and isfinite: a NaN or infinite budget never ends a point set
   * (cf_bench_run would run until its iteration counts overflow) */
  if (o.channels == 0 || o.channels > CF_MAX_CHANNELS || o.rate == 0 ||
      !(o.budget > 0.0) || !isfinite(o.budget) || isnan(o.cap_xrt) ||
      o.max_len == 0) {
    fprintf(stderr,
            "bench_engine: need --channels 1..%d, --rate > 0, --budget a "
            "finite number > 0, --cap-xrt a number, --max-len > 0\n",
            (int)CF_MAX_CHANNELS);
    goto bad;
  }
  for (size_t i = 0; i < o.lengths.n; i++)
    if (o.lengths.v[i] == 0 || o.lengths.v[i] > CF_KERNEL_MAX_TAPS) {
      fprintf(stderr, "bench_engine: --lengths: each 1..%zu\n",
              (size_t)CF_KERNEL_MAX_TAPS);
      goto bad;
    }
  for (size_t i = 0; i < o.blocks.n; i++)
    if (o.blocks.v[i] == 0) {
      fprintf(stderr, "bench_engine: --blocks: each > 0\n");
      goto bad;
    }

  if (o.swap && !lengths_set) {
    const size_t swap_lengths[] = {4096, 16384, 65536, 131072};
    set_list(&o.lengths, swap_lengths, 4);
  }
  if (o.denormal && !o.quick) {
    const size_t dn_lengths[] = {64, 1024, 4096, 65536};
    const size_t dn_blocks[] = {64, 256, 1024};
    if (!lengths_set) set_list(&o.lengths, dn_lengths, 4);
    if (!blocks_set) set_list(&o.blocks, dn_blocks, 3);
    if (!threads_set) set_list(&o.threads, quick_threads, 1);
  }
  if (o.denormal && !algos_set) o.nalgos = 3; /* auto picks one of them */
  const int rc = o.swap        ? swap_cost(&o)
                 : o.crossover ? crossover(&o)
                 : o.denormal  ? denormal(&o)
                               : grid(&o);
  free(g_in);
  free(g_out);
  return rc;
bad:
  usage(stderr);
  return 2;
}
