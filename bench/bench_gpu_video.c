/* GPU video benchmarks (needs a CUDA device; else "skipped", exit 77).
 * For 300 frames of 1080p and of 4K RGBA (R, G, B filtered, alpha passing
 * through) with a 13x13 non-separable kernel:
 *  - the parts alone, device-timed with events on one stream
 *    (src/cuda/video.c cf_cuda_bench_video): pinned upload, the kernels
 *    with the data resident on the device, download;
 *  - the engine end to end (host clock, pinned caller frames from
 *    cf_host_alloc): pipeline_depth 2 (with the final flush) and 0;
 * and the direct kernel's rate on GRAY32F 1080p and 4K: 2 * 169 FLOP per
 * pixel. Prints markdown tables, then one `RESULT case=... ms=...` line per
 * case for bench/gpu-check's summary (bench/README.md, "GPU check"), times
 * per frame: conv2d-13x13-1080p / -2160p (the peers' cases: one float32
 * plane, kernel time only) and video-rgba-<size>-depth2 / -depth0 (wall
 * time end to end, with the parts alone and the bytes each way). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cudafilter/engine.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/memory.h>
#include <cudafilter/video.h>

#include "src/cuda/video_bench.h"

#define KS 13

/* CF_BENCH_SMOKE=1: 2 frames of 96x64 and 136x72 (tests/meson.build runs
 * that on the emulated device: every path here runs, no number counts). */
static unsigned FRAMES = 300;

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void config(cf_video_config *c, cf_pixel_format f, unsigned w,
                   unsigned h)
{
  cf_video_config_init(c);
  c->width = w;
  c->height = h;
  c->format = f;
  c->backend = CF_BACKEND_CUDA;
  c->algorithm = CF_ALGO2D_DIRECT;
}

/* Wall seconds for FRAMES frames through an engine of the given depth. */
static int end_to_end(const cf_video_config *base, const cf_kernel2d *k,
                      unsigned depth, double *sec)
{
  cf_video_config c = *base;
  c.pipeline_depth = depth;
  cf_engine *e = NULL;
  if (cf_engine_new_video(&c, k, &e) != CF_OK) {
    fprintf(stderr, "engine: %s\n", cf_last_error());
    return 1;
  }
  size_t bytes = cf_frame_layout(c.format, c.width, c.height, NULL, NULL);
  int pin_in = 0, pin_out = 0;
  unsigned char *in = cf_host_alloc(bytes, &pin_in);
  unsigned char *out = cf_host_alloc(bytes, &pin_out);
  if (!in || !out) {
    fprintf(stderr, "cf_host_alloc: %s\n", cf_last_error());
    return 1;
  }
  for (size_t i = 0; i < bytes; i++)
    in[i] = (unsigned char)(i * 131 + (i >> 9));
  cf_frame fi, fo;
  cf_frame_layout(c.format, c.width, c.height, in, &fi);
  cf_frame_layout(c.format, c.width, c.height, out, &fo);
  /* one frame first: first-touch costs stay out of the timing */
  cf_status s = cf_engine_process_frame(e, &fi, &fo);
  int got = 1;
  while (s == CF_OK && got)
    s = cf_engine_flush_frame(e, &fo, &got);
  double t0 = now();
  for (unsigned i = 0; s == CF_OK && i < FRAMES; i++)
    s = cf_engine_process_frame(e, &fi, &fo);
  got = 1;
  while (s == CF_OK && got)
    s = cf_engine_flush_frame(e, &fo, &got);
  *sec = now() - t0;
  if (s != CF_OK)
    fprintf(stderr, "process: %s\n", cf_last_error());
  if (!pin_in || !pin_out)
    fprintf(stderr, "note: caller frames are not pinned\n");
  cf_host_free(in);
  cf_host_free(out);
  cf_engine_free(e);
  return s != CF_OK;
}

int main(void)
{
  const char *why = NULL;
  if (cf_device_count(&why) == 0) {
    printf("skipped: no CUDA device: %s\n", why ? why : "unknown");
    return 77;
  }
  float taps[KS * KS];
  srand(7);
  for (unsigned i = 0; i < KS * KS; i++) /* random: rank > 1 */
    taps[i] = ((float)rand() / (float)RAND_MAX - 0.3f) / (KS * KS);
  cf_kernel2d *k = NULL;
  if (cf_kernel2d_new(1, KS, KS, taps, &k) != CF_OK) {
    fprintf(stderr, "kernel: %s\n", cf_last_error());
    return 1;
  }
  static struct {
    const char *name;
    unsigned w, h;
  } sizes[] = {{"1080p", 1920, 1080}, {"4K", 3840, 2160}};
  const char *smoke = getenv("CF_BENCH_SMOKE");
  if (smoke && *smoke && strcmp(smoke, "0")) {
    FRAMES = 2;
    sizes[0].w = 96, sizes[0].h = 64;
    sizes[1].w = 136, sizes[1].h = 72;
  }
  /* CF_BENCH_ONLY=kernels: only the GRAY32F kernel rates (what
   * gpu-check's profile step looks at, its first launches those) */
  const char *only = getenv("CF_BENCH_ONLY");
  const int kernels_only = only && !strcmp(only, "kernels");
  printf("| %u frames RGBA, 13x13 direct | upload (ms) | compute (ms) | "
         "download (ms) | depth 2 wall (ms) | depth 0 wall (ms) | "
         "depth 2 fps | depth 0 fps |\n",
         FRAMES);
  printf("|---|---|---|---|---|---|---|---|\n");
  int rc = 0;
  char results[24][512];
  unsigned nres = 0;
  for (unsigned i = 0; i < 2 && !kernels_only; i++) {
    cf_video_config c;
    config(&c, CF_PIX_RGBA, sizes[i].w, sizes[i].h);
    double parts[3] = {0}, d2 = 0, d0 = 0;
    if (cf_cuda_bench_video(&c, k, FRAMES, parts) != CF_OK) {
      fprintf(stderr, "bench: %s\n", cf_last_error());
      rc = 1;
      continue;
    }
    rc |= end_to_end(&c, k, 2, &d2);
    rc |= end_to_end(&c, k, 0, &d0);
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f |\n",
           sizes[i].name, parts[0] * 1e3, parts[1] * 1e3, parts[2] * 1e3,
           d2 * 1e3, d0 * 1e3, FRAMES / d2, FRAMES / d0);
    size_t fb = cf_frame_layout(c.format, c.width, c.height, NULL, NULL);
    for (unsigned d = 0; d < 2; d++)
      snprintf(results[nres++], sizeof *results,
               "RESULT case=video-rgba-%s-depth%u ms=%.6f upload_ms=%.6f "
               "compute_ms=%.6f download_ms=%.6f h2d_bytes=%zu "
               "d2h_bytes=%zu",
               sizes[i].h == 1080 ? "1080p" : "2160p", d ? 0u : 2u,
               (d ? d0 : d2) * 1e3 / FRAMES, parts[0] * 1e3 / FRAMES,
               parts[1] * 1e3 / FRAMES, parts[2] * 1e3 / FRAMES, fb, fb);
  }
  /* the kernel the engine takes (conv2d_rbk.cuh: register-blocked, taps
   * as launch parameters), then the ones it replaced for these sizes, in
   * the same run: register-blocked with taps in the constant pool
   * (conv2d_rb.cuh) and the generic direct one */
  static const struct {
    const char *env, *label, *suffix;
  } kv[] = {
      {NULL, "", ""},
      {"rb", " (register-blocked, taps in constant memory)", "-rb"},
      {"generic", " (generic kernel)", "-generic"},
  };
  printf("\n| kernel only, GRAY32F, 13x13 direct | ms / frame | GFLOP/s |\n"
         "|---|---|---|\n");
  for (unsigned g = 0; g < sizeof kv / sizeof *kv; g++) {
    if (kv[g].env)
      setenv("CF_CONV2D_KERNEL", kv[g].env, 1);
    for (unsigned i = 0; i < 2; i++) {
      cf_video_config c;
      config(&c, CF_PIX_GRAY32F, sizes[i].w, sizes[i].h);
      double parts[3] = {0};
      if (cf_cuda_bench_video(&c, k, FRAMES, parts) == CF_OK) {
        double px = (double)sizes[i].w * sizes[i].h;
        double flop = 2.0 * KS * KS * px * FRAMES;
        printf("| conv2d %s%s | %.3f | %.0f |\n", sizes[i].name, kv[g].label,
               parts[1] * 1e3 / FRAMES, flop / parts[1] * 1e-9);
        snprintf(results[nres++], sizeof *results,
                 "RESULT case=conv2d-13x13-%s%s ms=%.6f flops=%.0f",
                 sizes[i].h == 1080 ? "1080p" : "2160p", kv[g].suffix,
                 parts[1] * 1e3 / FRAMES, 2.0 * KS * KS * px);
      } else {
        fprintf(stderr, "bench: %s\n", cf_last_error());
        rc = 1;
      }
    }
  }
  unsetenv("CF_CONV2D_KERNEL");
  /* direct against FFT for larger kernels, GRAY32F 1080p kernel time:
   * where auto's FFT_AUTO_TAPS (2048, an estimate) should be */
  printf("\n| kernel only, GRAY32F 1080p, not separable | direct ms | fft ms "
         "|\n|---|---|---|\n");
  static const unsigned ks[] = {15, 31, 47, 63};
  unsigned cframes = FRAMES / 10 > 2 ? FRAMES / 10 : 2;
  for (unsigned i = 0; i < sizeof ks / sizeof *ks && !kernels_only; i++) {
    unsigned n = ks[i] * ks[i];
    float *t = malloc(n * sizeof *t);
    cf_kernel2d *kk = NULL;
    for (unsigned j = 0; t && j < n; j++)
      t[j] = (float)((j * 2654435761u % 1000) / 1000.0 - 0.3) / (float)n;
    if (!t || cf_kernel2d_new(1, ks[i], ks[i], t, &kk) != CF_OK) {
      fprintf(stderr, "bench: %s\n", cf_last_error());
      free(t);
      rc = 1;
      continue;
    }
    free(t);
    double ms[2] = {0, 0};
    for (unsigned a = 0; a < 2; a++) {
      cf_video_config c;
      config(&c, CF_PIX_GRAY32F, sizes[0].w, sizes[0].h);
      c.algorithm = a ? CF_ALGO2D_FFT : CF_ALGO2D_DIRECT;
      double parts[3] = {0};
      if (cf_cuda_bench_video(&c, kk, (int)cframes, parts) != CF_OK) {
        fprintf(stderr, "bench: %s\n", cf_last_error());
        rc = 1;
        continue;
      }
      ms[a] = parts[1] * 1e3 / cframes;
      if (nres < sizeof results / sizeof *results)
        snprintf(results[nres++], sizeof *results,
                 "RESULT case=conv2d-%s-%ux%u-1080p ms=%.6f",
                 a ? "fft" : "direct", ks[i], ks[i], ms[a]);
    }
    printf("| %ux%u (%u taps) | %.3f | %.3f |\n", ks[i], ks[i], n, ms[0],
           ms[1]);
    cf_kernel2d_free(kk);
  }
  printf("\n");
  for (unsigned i = 0; i < nres; i++)
    printf("%s\n", results[i]);
  cf_kernel2d_free(k);
  return rc;
}
