/* bench_paced — the CPU engine at a live pace: the time of each
 * cf_engine_process() call when calls come with a pause between them (a
 * sound card's period, a camera's frame), not back to back as in
 * bench_engine. A paused engine starts each call with its worker threads
 * asleep and its data out of the caches; what a live stream's callback
 * waits is this, and its tail (p99, max) is what drops a period.
 *
 *   bench_paced [--lengths 1024,65536] [--buffers 1024,4096]
 *               [--block 1024] [--threads 0] [--channels 2]
 *               [--calls 400] [--gap-ms 3]
 *
 * For each kernel length x buffer size: an engine (CPU backend, a shared
 * kernel of decaying random taps, algorithm auto, the block given), then
 * `calls` calls of `buffer` frames each, with a sleep of `gap-ms` before
 * each; prints the per-call time's percentiles in microseconds against
 * the buffer's duration at 48 kHz. The first 10 calls are not counted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cudafilter/engine.h>
#include <cudafilter/kernel.h>

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static size_t parse_list(const char *s, size_t *v, size_t max)
{
  size_t n = 0;
  while (*s && n < max) {
    char *end;
    unsigned long x = strtoul(s, &end, 10);
    if (end == s || x == 0) {
      fprintf(stderr, "bench_paced: bad list '%s'\n", s);
      exit(2);
    }
    v[n++] = x;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* xorshift: reproducible taps and input */
static float rnd(unsigned long long *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

int main(int argc, char **argv)
{
  size_t lengths[16] = {1024, 65536}, nl = 2;
  size_t buffers[16] = {1024, 4096}, nb = 2;
  unsigned block = 1024, threads = 0, channels = 2, calls = 400;
  double gap_ms = 3;
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "usage: bench_paced [--lengths L,..] [--buffers N,..] "
                      "[--block B] [--threads T] [--channels C] [--calls N] "
                      "[--gap-ms G]\n");
      return 2;
    }
    if (!strcmp(a, "--lengths"))
      nl = parse_list(v, lengths, 16);
    else if (!strcmp(a, "--buffers"))
      nb = parse_list(v, buffers, 16);
    else if (!strcmp(a, "--block"))
      block = (unsigned)atoi(v);
    else if (!strcmp(a, "--threads"))
      threads = (unsigned)atoi(v);
    else if (!strcmp(a, "--channels"))
      channels = (unsigned)atoi(v);
    else if (!strcmp(a, "--calls"))
      calls = (unsigned)atoi(v);
    else if (!strcmp(a, "--gap-ms"))
      gap_ms = atof(v);
    else {
      fprintf(stderr, "bench_paced: unknown option %s\n", a);
      return 2;
    }
  }
  if (calls < 20 || channels == 0 || !(gap_ms >= 0) || !isfinite(gap_ms)) {
    fprintf(stderr, "bench_paced: --calls >= 20, --channels >= 1, "
                    "--gap-ms >= 0\n");
    return 2;
  }
  printf("| taps | buffer | engine | p50 us | p90 us | p99 us | max us | "
         "buffer at 48 kHz us |\n|---:|---:|---|---:|---:|---:|---:|---:|\n");
  unsigned long long seed = 0x9e3779b97f4a7c15ull;
  for (size_t li = 0; li < nl; li++)
    for (size_t bi = 0; bi < nb; bi++) {
      size_t len = lengths[li], buf = buffers[bi];
      float *h = malloc(len * sizeof *h);
      float *x = malloc(buf * channels * sizeof *x);
      float *y = malloc(buf * channels * sizeof *y);
      double *t = malloc(calls * sizeof *t);
      if (!h || !x || !y || !t) {
        fprintf(stderr, "bench_paced: out of memory\n");
        return 1;
      }
      for (size_t i = 0; i < len; i++)
        h[i] = rnd(&seed) / (float)(1 + i / 256);
      for (size_t i = 0; i < buf * channels; i++)
        x[i] = rnd(&seed);
      cf_kernel *k;
      cf_engine *e;
      cf_audio_config cfg;
      cf_audio_config_init(&cfg);
      cfg.channels = channels;
      cfg.backend = CF_BACKEND_CPU;
      cfg.block_size = block;
      cfg.threads = threads;
      if (cf_kernel_new_shared(h, len, &k) != CF_OK ||
          cf_engine_new_audio(&cfg, k, &e) != CF_OK) {
        fprintf(stderr, "bench_paced: %s\n", cf_last_error());
        return 1;
      }
      struct timespec gap = {(time_t)(gap_ms / 1000),
                             (long)(gap_ms * 1e6) % 1000000000L};
      size_t n = 0;
      for (unsigned c = 0; c < calls + 10; c++) {
        nanosleep(&gap, NULL);
        double t0 = now();
        if (cf_engine_process(e, x, y, buf) != CF_OK) {
          fprintf(stderr, "bench_paced: %s\n", cf_last_error());
          return 1;
        }
        if (c >= 10)
          t[n++] = (now() - t0) * 1e6;
      }
      qsort(t, n, sizeof *t, cmp_d);
      printf("| %zu | %zu | %s | %.1f | %.1f | %.1f | %.1f | %.0f |\n", len,
             buf, cf_engine_describe(e), t[n / 2], t[n * 9 / 10],
             t[n * 99 / 100], t[n - 1], (double)buf / 48000 * 1e6);
      fflush(stdout);
      cf_engine_free(e);
      cf_kernel_free(k);
      free(h);
      free(x);
      free(y);
      free(t);
    }
  return 0;
}
