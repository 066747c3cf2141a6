/* GPU audio benchmarks (needs a CUDA device; else "skipped", exit 77):
 *  (a) low latency: 48 kHz stereo, 64-frame blocks, a 131072-tap kernel
 *      on backend cuda: host-to-host time per block over 20000 blocks,
 *      p50 / p99 / max; then 15 kernel swaps on the running engine (a
 *      kernel-file change in cudafir's streaming thread), each followed
 *      by one block: the set_kernel call and that block, median / max;
 *  (b) the direct kernel alone (kernels/fir1d.cu) for 16/32/64 taps on
 *      2^24 device-resident samples of one channel: GB/s of input + output
 *      traffic, with the taps in the constant pool, staged from device
 *      memory (variant=staged-taps), and with 16 outputs per thread
 *      instead of the launcher's 8 at up to 64 taps
 *      (variant=16-per-thread; 8 ran faster on the H200, 2026-11-29).
 *  (c) overlap across calls (pipeline_depth): the kernel of (a) in blocks
 *      of 64 and 1024 frames, live (depth 0) and with 2 blocks in flight:
 *      host time per call (p50 / p99) and per second of audio, where the
 *      device's round trip leaves the caller's thread.
 * Besides the tables, one `RESULT case=... ms=...` line per case for
 * bench/gpu-check's summary (bench/README.md, "GPU check"): fir16-16M,
 * fir32-16M, fir64-16M (the peers' cases), audio-block64-131072taps (p50
 * and p99 per block), fir131072-48k-stereo-1s as the time for 1 s of
 * audio in 64-frame blocks, host to host (variant=block64-host-to-host),
 * swap-131072taps-block64 (median set_kernel, with its max and the
 * block after it), and fir131072-48k-stereo-1s variant=blockB-depthD for
 * (c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cudafilter/engine.h>
#include <cudafilter/kernel.h>

#include "kernels/cf_kernels.h"
#include "src/cuda/cuda_bench.h"

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* CF_BENCH_SMOKE=1: a few blocks and frames (tests/meson.build runs that
 * on the emulated device: every path here runs, no number counts). */
static int smoke;

static int low_latency(void)
{
  const size_t len = smoke ? 4096 : 131072, blocks = smoke ? 20 : 20000;
  const unsigned block = 64, ch = 2;
  float *h = malloc(len * sizeof *h);
  float *x = malloc(block * ch * sizeof *x), *y = malloc(block * ch * sizeof *y);
  double *t = malloc(blocks * sizeof *t);
  srand(1);
  for (size_t i = 0; i < len; i++)
    h[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * expf(-(float)i / 20000.f);
  for (size_t i = 0; i < block * ch; i++)
    x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  cf_kernel *k = NULL;
  cf_engine *e = NULL;
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = ch;
  cfg.block_size = block;
  cfg.backend = CF_BACKEND_CUDA;
  if (cf_kernel_new_shared(h, len, &k) != CF_OK ||
      cf_engine_new_audio(&cfg, k, &e) != CF_OK) {
    fprintf(stderr, "engine: %s\n", cf_last_error());
    return 1;
  }
  for (int i = 0; i < (smoke ? 2 : 200); i++) /* warm-up */
    cf_engine_process(e, x, y, block);
  for (size_t i = 0; i < blocks; i++) {
    double a = now();
    if (cf_engine_process(e, x, y, block) != CF_OK) {
      fprintf(stderr, "process: %s\n", cf_last_error());
      return 1;
    }
    t[i] = now() - a;
  }
  double sum = 0;
  for (size_t i = 0; i < blocks; i++)
    sum += t[i];
  qsort(t, blocks, sizeof *t, cmp);
  printf("## low latency: 48 kHz stereo, block %u, %zu taps, cuda\n\n%s\n\n",
         block, len, cf_engine_describe(e));
  printf("| blocks | p50 (us) | p99 (us) | max (us) | block period (us) |\n"
         "|---|---|---|---|---|\n| %zu | %.1f | %.1f | %.1f | %.1f |\n\n",
         blocks, t[blocks / 2] * 1e6, t[blocks * 99 / 100] * 1e6,
         t[blocks - 1] * 1e6, block / 48000.0 * 1e6);
  printf("RESULT case=audio-block%u-%zutaps ms=%.6f p99_ms=%.6f max_ms=%.6f\n",
         block, len, t[blocks / 2] * 1e3, t[blocks * 99 / 100] * 1e3,
         t[blocks - 1] * 1e3);
  printf("RESULT case=fir131072-48k-stereo-1s ms=%.6f "
         "variant=block%u-host-to-host\n\n",
         sum / (double)blocks * (48000.0 / block) * 1e3, block);

  /* Swaps between k and a second kernel of the same length. */
  enum { NSWAP = 15 };
  cf_kernel *k2 = NULL;
  for (size_t i = 0; i < len; i++)
    h[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * expf(-(float)i / 20000.f);
  if (cf_kernel_new_shared(h, len, &k2) != CF_OK) {
    fprintf(stderr, "kernel: %s\n", cf_last_error());
    return 1;
  }
  double ts[NSWAP], tb[NSWAP];
  for (int i = 0; i < NSWAP; i++) {
    double a = now();
    if (cf_engine_set_kernel(e, i % 2 ? k : k2, block) != CF_OK) {
      fprintf(stderr, "set_kernel: %s\n", cf_last_error());
      return 1;
    }
    double b = now();
    if (cf_engine_process(e, x, y, block) != CF_OK) {
      fprintf(stderr, "process: %s\n", cf_last_error());
      return 1;
    }
    ts[i] = b - a;
    tb[i] = now() - b;
  }
  qsort(ts, NSWAP, sizeof *ts, cmp);
  qsort(tb, NSWAP, sizeof *tb, cmp);
  printf("## kernel swaps on the running engine (%d, crossfade one block)\n\n"
         "| set_kernel median (us) | max (us) | next block median (us) | "
         "max (us) | block period (us) |\n|---|---|---|---|---|\n"
         "| %.1f | %.1f | %.1f | %.1f | %.1f |\n\n",
         NSWAP, ts[NSWAP / 2] * 1e6, ts[NSWAP - 1] * 1e6, tb[NSWAP / 2] * 1e6,
         tb[NSWAP - 1] * 1e6, block / 48000.0 * 1e6);
  printf("RESULT case=swap-%zutaps-block%u ms=%.6f max_ms=%.6f "
         "next_block_max_ms=%.6f\n\n",
         len, block, ts[NSWAP / 2] * 1e3, ts[NSWAP - 1] * 1e3,
         tb[NSWAP - 1] * 1e3);
  cf_engine_free(e);
  cf_kernel_free(k);
  cf_kernel_free(k2);
  free(h), free(x), free(y), free(t);
  return 0;
}

/* (c): calls of a block each, live and across calls. */
static int across_calls(void)
{
  const size_t len = smoke ? 4096 : 131072, calls = smoke ? 20 : 5000;
  const unsigned ch = 2, blocks[] = {64, 1024}, depths[] = {0, 2};
  float *h = malloc(len * sizeof *h);
  float *x = malloc(1024 * ch * sizeof *x), *y = malloc(1024 * ch * sizeof *y);
  double *t = malloc(calls * sizeof *t);
  if (!h || !x || !y || !t) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  srand(3);
  for (size_t i = 0; i < len; i++)
    h[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * expf(-(float)i / 20000.f);
  for (size_t i = 0; i < 1024 * ch; i++)
    x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  cf_kernel *k = NULL;
  if (cf_kernel_new_shared(h, len, &k) != CF_OK) {
    fprintf(stderr, "kernel: %s\n", cf_last_error());
    return 1;
  }
  printf("## overlap across calls: 48 kHz stereo, %zu taps, cuda, calls of "
         "a block\n\n| block | pipeline_depth | latency (frames) | p50 per "
         "call (us) | p99 (us) | per second of audio (ms) | x real time |\n"
         "|---|---|---|---|---|---|---|\n", len);
  int bad = 0;
  for (size_t b = 0; b < 2 && !bad; b++)
    for (size_t d = 0; d < 2 && !bad; d++) {
      cf_audio_config cfg;
      cf_audio_config_init(&cfg);
      cfg.channels = ch;
      cfg.block_size = blocks[b];
      cfg.backend = CF_BACKEND_CUDA;
      cfg.pipeline_depth = depths[d];
      cf_engine *e = NULL;
      if (cf_engine_new_audio(&cfg, k, &e) != CF_OK) {
        fprintf(stderr, "engine: %s\n", cf_last_error());
        bad = 1;
        break;
      }
      for (int i = 0; i < (smoke ? 2 : 200) && !bad; i++) /* warm-up */
        bad = cf_engine_process(e, x, y, blocks[b]) != CF_OK;
      double sum = 0;
      for (size_t i = 0; i < calls && !bad; i++) {
        double a = now();
        bad = cf_engine_process(e, x, y, blocks[b]) != CF_OK;
        t[i] = now() - a;
        sum += t[i];
      }
      if (bad) {
        fprintf(stderr, "process: %s\n", cf_last_error());
        cf_engine_free(e);
        break;
      }
      qsort(t, calls, sizeof *t, cmp);
      double per_s = sum / (double)calls * (48000.0 / blocks[b]);
      printf("| %u | %u | %zu | %.1f | %.1f | %.2f | %.0f |\n", blocks[b],
             depths[d], cf_engine_latency(e), t[calls / 2] * 1e6,
             t[calls * 99 / 100] * 1e6, per_s * 1e3, 1.0 / per_s);
      printf("RESULT case=fir131072-48k-stereo-1s ms=%.6f p50_call_ms=%.6f "
             "p99_call_ms=%.6f variant=block%u-depth%u\n",
             per_s * 1e3, t[calls / 2] * 1e3, t[calls * 99 / 100] * 1e3,
             blocks[b], depths[d]);
      cf_engine_free(e);
    }
  printf("\n");
  cf_kernel_free(k);
  free(h), free(x), free(y), free(t);
  return bad;
}

static int direct_kernel(void)
{
  static const unsigned taps[] = {16, 32, 64};
  /* the criterion's line first (the engine's choice: the streaming
   * kernel, kernels/fir1d.cu), then with taps staged from device memory,
   * with 16 outputs per thread (not the engine's choice until measured),
   * and the tiled kernel it replaced here with 8 outputs per thread (the
   * engine's choice after the H200 run of 2026-11-29) and 16 (before) */
  static const struct {
    int const_taps;
    cf_bench_fir which;
    const char *variant, *label;
  } how[] = {{1, CF_BENCH_FIR_AUTO, NULL, "streaming"},
             {0, CF_BENCH_FIR_AUTO, "staged-taps", "streaming, staged taps"},
             {1, CF_BENCH_FIR_STREAM16, "stream-16", "streaming, 16 per thread"},
             {1, CF_BENCH_FIR_TILED8, "tiled-8", "tiled, 8 per thread"},
             {1, CF_BENCH_FIR_TILED16, "16-per-thread", "tiled, 16 per thread"}};
  enum { NHOW = sizeof how / sizeof *how };
  const unsigned ch = 1; /* the peers' fir cases: one channel */
  const size_t frames = (size_t)1 << (smoke ? 12 : 24);
  const double bytes = 2.0 * frames * ch * sizeof(float);
  printf("## direct kernel only (device-resident, %u channels, %zu frames)\n\n"
         "ms and GB/s (input + output): the streaming kernel with taps from "
         "the constant pool (what the engine uses), with taps staged from "
         "device memory, with 16 outputs per thread, and the tiled kernel "
         "it replaced with 8 and 16 outputs per thread.\n\n| taps ",
         ch, frames);
  for (size_t k = 0; k < NHOW; k++)
    printf("| %s | GB/s ", how[k].label);
  printf("|\n|---");
  for (size_t k = 0; k < NHOW; k++)
    printf("|---|---");
  printf("|\n");
  double res[3][NHOW] = {{0}};
  for (size_t i = 0; i < 3; i++) {
    printf("| %u ", taps[i]);
    for (size_t k = 0; k < NHOW; k++) {
      if (cf_cuda_bench_direct(taps[i], ch, frames, how[k].const_taps,
                               how[k].which, smoke ? 2 : 20,
                               &res[i][k]) != CF_OK) {
        fprintf(stderr, "bench: %s\n", cf_last_error());
        return 1;
      }
      printf("| %.3f | %.1f ", res[i][k] * 1e3, bytes / res[i][k] * 1e-9);
    }
    printf("|\n");
  }
  printf("\n");
  for (size_t i = 0; i < 3; i++)
    for (size_t k = 0; k < NHOW; k++)
      printf("RESULT case=fir%u-16M%s%s ms=%.6f bytes=%.0f\n", taps[i],
             how[k].variant ? " variant=" : "",
             how[k].variant ? how[k].variant : "", res[i][k] * 1e3, bytes);
  return 0;
}

int main(void)
{
  const char *env = getenv("CF_BENCH_SMOKE");
  smoke = env && *env && strcmp(env, "0");
  const char *why = NULL;
  if (cf_device_count(&why) == 0) {
    printf("skipped: no CUDA device: %s\n", why ? why : "unknown");
    return 77;
  }
  char dev[256];
  if (cf_device_describe(0, dev, sizeof dev) == CF_OK)
    printf("# bench_gpu_audio on %s\n\n", dev);
  /* CF_BENCH_ONLY=direct: only the direct kernel's cases (what gpu-check's
   * profile step looks at, its first launches those) */
  const char *only = getenv("CF_BENCH_ONLY");
  if (only && !strcmp(only, "direct"))
    return direct_kernel();
  return low_latency() || across_calls() || direct_kernel();
}
