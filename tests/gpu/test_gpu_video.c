/* The CUDA video backend beyond the shared suite (tests/test_video.c runs
 * the contract on the cuda-auto variant with small frames, one band):
 *  - live mode (pipeline_depth 0) on frames tall enough for several bands,
 *    every border mode, kernels up to larger than the frame, T up to 3,
 *    pinned and ordinary caller memory, forced direct, separable and fft
 *    (cuFFT), auto taking the FFT for large kernels;
 *  - pipelined mode (depth 1, 2): latency reported, nothing written by the
 *    first `depth` calls, the rest handed out by cf_engine_flush_frame;
 *  - frames in device memory (cudaMalloc, rows padded), as a
 *    GstCudaMemory hands them: same results, both modes; on the emulated
 *    device, no byte of them crosses to the host; backend auto refuses
 *    them with a message;
 *  - on the emulated device, no allocation, plan, graph or device-wide
 *    wait per frame (steady.h) once the first frame is through;
 *  - fault injection (CF_CUDA_FAULT, one child process per case): explicit
 *    cuda fails with CF_E_NOMEM / CF_E_DEVICE and a message, auto moves to
 *    the CPU without losing or repeating a frame.
 * The reference is the CPU engine (direct path, itself checked against the
 * float64 reference by tests/test_video.c): integer samples within 1 code
 * value (more for long kernels on 16-bit video: vcase_tol), every other
 * byte equal; float frames relative L2 <= 2e-5.
 * CF_TEST_QUICK=1 (bench/gpu-check's compute-sanitizer runs): fewer cases,
 * frames at most 64 wide, "big" kernels only tall or only wide (still past
 * the 64-tap pieces), 4 fault processes instead of 24; the same checks.
 * Exits 77 with "skipped: no CUDA device: <reason>" where there is none. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include <cudafilter/engine.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/memory.h>
#include <cudafilter/video.h>

#ifndef CF_TEST_NO_CUDART /* a build without CUDA: main() skips */
#include <cuda_runtime_api.h>
#endif

#include "../ref.h"
#include "../test_filter.h"
#include "steady.h"

/* The emulated device (tests/emu, suite cudaemu) counts the bytes it
 * copies; a real device has no such call. */
void cf_emu_copied(unsigned long long *h2d, unsigned long long *d2h,
                   unsigned long long *d2d) __attribute__((weak));
/* ... and the order of its copies (tests/emu/cudart_emu.cc) */
unsigned long long cf_emu_uploads_after_downloads(void) __attribute__((weak));
/* ... and the uploads queued behind a download of the same frame */
void cf_emu_copy_epoch(void) __attribute__((weak));
unsigned long long cf_emu_uploads_after_epoch_downloads(void)
    __attribute__((weak));
/* ... and the host's waits for an upload with no download queued */
unsigned long long cf_emu_lone_upload_waits(void) __attribute__((weak));
/* ... and can run out of device memory on request */
void cf_emu_device_limit(size_t bytes) __attribute__((weak));
void cf_emu_fft_plan_fail(int fail) __attribute__((weak));

static uint64_t seed;
static const char *self;
static int quick; /* CF_TEST_QUICK */

static const cf_pixel_format formats[] = {
    CF_PIX_GRAY8, CF_PIX_GRAY16_LE, CF_PIX_GRAY32F, CF_PIX_RGBA,
    CF_PIX_BGRX,  CF_PIX_RGB,       CF_PIX_I420,    CF_PIX_NV12,
    CF_PIX_Y444,  CF_PIX_Y42B};
#define NFMT (sizeof formats / sizeof *formats)

typedef struct fr {
  uint8_t *mem;
  size_t bytes;
  cf_frame f;
  int pinned;
} fr;

static void fr_make(fr *b, const cf_video_config *c, int pinned)
{
  b->bytes = cf_frame_layout(c->format, c->width, c->height, NULL, NULL);
  b->pinned = pinned;
  b->mem = pinned ? cf_host_alloc(b->bytes, NULL) : malloc(b->bytes);
  assert_non_null(b->mem);
  cf_frame_layout(c->format, c->width, c->height, b->mem, &b->f);
}

static void fr_free(fr *b)
{
  if (b->pinned)
    cf_host_free(b->mem);
  else
    free(b->mem);
}

/* A run's frames in ordinary memory: the input, nw wanted and ng got. */
static void frames_make(fr *in, fr *want, unsigned nw, fr *got, unsigned ng,
                        const cf_video_config *c)
{
  fr_make(in, c, 0);
  for (unsigned t = 0; t < nw; t++)
    fr_make(&want[t], c, 0);
  for (unsigned t = 0; t < ng; t++)
    fr_make(&got[t], c, 0);
}

static void frames_free(fr *in, fr *want, unsigned nw, fr *got, unsigned ng)
{
  fr_free(in);
  for (unsigned t = 0; t < nw; t++)
    fr_free(&want[t]);
  for (unsigned t = 0; t < ng; t++)
    fr_free(&got[t]);
}

static void fr_random(fr *b, const cf_video_config *c, ref_rng *r)
{
  if (c->format == CF_PIX_GRAY32F) {
    for (size_t i = 0; i + 4 <= b->bytes; i += 4) {
      float v = (float)ref_rng_sym(r);
      memcpy(b->mem + i, &v, 4);
    }
  } else
    for (size_t i = 0; i < b->bytes; i++)
      b->mem[i] = (uint8_t)ref_rng_u64(r);
}

/* got against want: 1 when within the tolerances above, integer samples
 * within `tol` code values. */
static int fr_close(const fr *got, const fr *want, const cf_video_config *c,
                    double tol, char *why, size_t n)
{
  if (c->format == CF_PIX_GRAY32F) {
    double e = 0, w = 0;
    for (size_t i = 0; i + 4 <= got->bytes; i += 4) {
      float a, b;
      memcpy(&a, got->mem + i, 4);
      memcpy(&b, want->mem + i, 4);
      if (isnan(a) != isnan(b)) {
        snprintf(why, n, "float sample %zu: %g, want %g", i / 4, a, b);
        return 0;
      }
      e += ((double)a - b) * ((double)a - b);
      w += (double)b * b;
    }
    if (e > 4e-10 * w) {
      snprintf(why, n, "relative L2 error %.3g", sqrt(e / (w ? w : 1)));
      return 0;
    }
    return 1;
  }
  for (size_t i = 0; i < got->bytes; i++) {
    int d = (int)got->mem[i] - (int)want->mem[i];
    if (c->format == CF_PIX_GRAY16_LE && (i & 1)) { /* compare words */
      int a = got->mem[i - 1] | got->mem[i] << 8;
      int b = want->mem[i - 1] | want->mem[i] << 8;
      d = a - b;
    } else if (c->format == CF_PIX_GRAY16_LE)
      continue;
    if (d > tol || d < -tol) {
      snprintf(why, n, "byte %zu: %d, want %d", i, got->mem[i],
               want->mem[i]);
      return 0;
    }
  }
  return 1;
}

typedef struct vcase {
  cf_video_config cfg;
  unsigned t, kh, kw;
  float *taps;
  char desc[256];
} vcase;

/* Integer samples: 1 code value for rounding, plus the float32 summation
 * error of both sides, each up to ~1e-7 sqrt(taps) times the size of the
 * sums (|scale| sum|k| max: the CPU direct path's measured bound, see
 * tests/test_video.c). Only long kernels on 16-bit video get past 1:
 * 3x80x80 random taps on GRAY16 allow ~1.9. (test_live_bands failed once
 * in CI with a fixed 1, under ASan, on a seed the log did not keep; 80
 * seeds here did not repeat it; this is the likely cause.) */
static double vcase_tol(const vcase *v)
{
  size_t n = (size_t)v->t * v->kh * v->kw;
  double sum = 0.0;
  for (size_t i = 0; i < n; i++)
    sum += fabs((double)v->taps[i]);
  double maxv = v->cfg.format == CF_PIX_GRAY16_LE ? 65535.0 : 255.0;
  return 1.0 + 2e-7 * sqrt((double)n) * fabs((double)v->cfg.scale) * sum * maxv;
}

static void vcase_random(vcase *v, ref_rng *r, unsigned hmin, unsigned hmax)
{
  cf_video_config *c = &v->cfg;
  cf_video_config_init(c);
  c->format = formats[ref_rng_u64(r) % NFMT];
  c->width = (unsigned)ref_rng_range(r, 1, quick ? 64 : 300);
  c->height = (unsigned)ref_rng_range(r, hmin, hmax);
  c->components = (unsigned)ref_rng_range(r, 1, 7);
  if (c->format == CF_PIX_GRAY8 || c->format == CF_PIX_GRAY16_LE ||
      c->format == CF_PIX_GRAY32F) /* one component: the mask must name it */
    c->components |= 1;
  c->border = (cf_border)(ref_rng_u64(r) % 5);
  c->cval = (float)(c->format == CF_PIX_GRAY32F ? ref_rng_sym(r)
                                                : 255 * ref_rng_unit(r));
  if (ref_rng_u64(r) % 2) {
    c->scale = (float)(0.5 + ref_rng_unit(r));
    c->bias = (float)(20 * ref_rng_sym(r));
    c->absolute = (int)(ref_rng_u64(r) % 2);
  }
  v->t = (unsigned)ref_rng_range(r, 1, 3);
  unsigned big = (unsigned)(ref_rng_u64(r) % 8 == 0);
  v->kh = big ? (unsigned)ref_rng_range(r, 20, 80)
              : (unsigned)ref_rng_range(r, 1, 15);
  v->kw = big ? (unsigned)ref_rng_range(r, 20, 80)
              : (unsigned)ref_rng_range(r, 1, 15);
  if (big && quick) { /* one side past KC = 64, the other short */
    int tall = ref_rng_u64(r) % 2;
    v->kh = tall ? (unsigned)ref_rng_range(r, 65, 70)
                 : (unsigned)ref_rng_range(r, 1, 5);
    v->kw = tall ? (unsigned)ref_rng_range(r, 1, 5)
                 : (unsigned)ref_rng_range(r, 65, 70);
  }
  size_t n = (size_t)v->t * v->kh * v->kw;
  v->taps = malloc(n * sizeof *v->taps);
  assert_non_null(v->taps);
  int rank1 = ref_rng_u64(r) % 3 == 0;
  for (unsigned tau = 0; tau < v->t; tau++)
    for (unsigned m = 0; m < v->kh; m++)
      for (unsigned k = 0; k < v->kw; k++)
        v->taps[((size_t)tau * v->kh + m) * v->kw + k] =
            rank1 ? (float)((0.2 + m % 5) * (0.3 + k % 7)) /
                        (float)(v->kh * v->kw * 4 * v->t)
                  : (float)((ref_rng_unit(r) - 0.2) / (v->kh * v->kw * v->t));
  snprintf(v->desc, sizeof v->desc,
           "%s %ux%u comps %u border %s cval %g scale %g bias %g abs %d, "
           "kernel %ux%ux%u%s",
           cf_pixel_format_name(c->format), c->width, c->height,
           c->components, cf_border_name(c->border), (double)c->cval,
           (double)c->scale, (double)c->bias, c->absolute, v->t, v->kh,
           v->kw, rank1 ? " rank-1" : "");
}

static cf_engine *vcase_engine(const vcase *v, cf_backend be, unsigned depth,
                               cf_algorithm2d algo, cf_status *st)
{
  cf_kernel2d *k = NULL;
  assert_int_equal(cf_kernel2d_new(v->t, v->kh, v->kw, v->taps, &k), CF_OK);
  cf_video_config c = v->cfg;
  c.backend = be;
  c.pipeline_depth = depth;
  c.algorithm = algo;
  cf_engine *e = NULL;
  cf_status s = cf_engine_new_video(&c, k, &e);
  cf_kernel2d_free(k);
  if (st)
    *st = s;
  else if (s != CF_OK) {
    print_error("engine (%s): %s: %s\n", v->desc, cf_status_name(s),
                cf_last_error());
    fail();
  }
  return e;
}

#define FRAMES 7

/* Run FRAMES random frames (a reset before frame 4) through the CPU and
 * through `gpu` (latency `depth`), flush, compare frame by frame. */
static void run_compare(const vcase *v, cf_engine *gpu, unsigned depth,
                        ref_rng *r, int pinned)
{
  cf_engine *cpu = vcase_engine(v, CF_BACKEND_CPU, 0, CF_ALGO2D_DIRECT, NULL);
  assert_int_equal(cf_engine_latency(gpu), depth);
  fr in, want[FRAMES], got[FRAMES + 1];
  fr_make(&in, &v->cfg, pinned);
  for (unsigned i = 0; i < FRAMES; i++) {
    fr_make(&want[i], &v->cfg, 0);
    memset(want[i].mem, 0x3c, want[i].bytes);
  }
  for (unsigned i = 0; i <= FRAMES; i++) {
    fr_make(&got[i], &v->cfg, pinned && i % 2);
    memset(got[i].mem, 0x3c, got[i].bytes);
  }
  steady_mark mark;
  steady_take(&mark);
  unsigned long long waits0 =
      cf_emu_uploads_after_downloads ? cf_emu_uploads_after_downloads() : 0;
  unsigned long long behind0 = cf_emu_uploads_after_epoch_downloads
                                   ? cf_emu_uploads_after_epoch_downloads()
                                   : 0;
  for (unsigned t = 0; t < FRAMES; t++) {
    if (cf_emu_copy_epoch)
      cf_emu_copy_epoch();
    if (t == 4) {
      cf_engine_reset(cpu);
      cf_engine_reset(gpu);
    }
    fr_random(&in, &v->cfg, r);
    assert_int_equal(cf_engine_process_frame(cpu, &in.f, &want[t].f), CF_OK);
    cf_status s = cf_engine_process_frame(gpu, &in.f, &got[t].f);
    if (s != CF_OK) {
      print_error("%s: frame %u: %s: %s\n", v->desc, t, cf_status_name(s),
                  cf_last_error());
      fail();
    }
    /* after the first frame (and the reset's), none of steady.h's calls;
     * not in the fault cases, where the engine gives up the device */
    unsigned long long times = 0;
    const char *call =
        !getenv("CF_CUDA_FAULT") ? steady_broken(&mark, NULL, &times) : NULL;
    if (call) {
      print_error("%s, depth %u%s: frame %u called %s %llu times (%s)\n",
                  v->desc, depth, pinned ? ", pinned" : "", t, call, times,
                  cf_engine_describe(gpu));
      fail();
    }
    steady_take(&mark);
  }
  /* the emulated device's copy order: no upload (a band's, a frame's)
   * waits for the download before it, so that they overlap */
  unsigned long long waits = cf_emu_uploads_after_downloads
                                 ? cf_emu_uploads_after_downloads() - waits0
                                 : 0;
  if (waits && !getenv("CF_CUDA_FAULT")) {
    print_error("%s, depth %u%s: %llu uploads wait for the download before "
                "them (%s)\n",
                v->desc, depth, pinned ? ", pinned" : "", waits,
                cf_engine_describe(gpu));
    fail();
  }
  /* ... nor, within a frame, for a download of its own stream (live
   * bands rotating over streams that each upload, compute and download:
   * on the H200 no faster than the three parts one after another) */
  unsigned long long behind = cf_emu_uploads_after_epoch_downloads
                                  ? cf_emu_uploads_after_epoch_downloads() -
                                        behind0
                                  : 0;
  if (behind && !getenv("CF_CUDA_FAULT")) {
    print_error("%s, depth %u%s: %llu uploads queued behind a download of "
                "the same frame (%s)\n",
                v->desc, depth, pinned ? ", pinned" : "", behind,
                cf_engine_describe(gpu));
    fail();
  }
  /* call t wrote frame t - depth; the first depth calls wrote nothing */
  unsigned flushed = 0;
  for (int g = 1; flushed <= depth;) {
    fr *o = &got[FRAMES];
    assert_int_equal(cf_engine_flush_frame(gpu, &o->f, &g), CF_OK);
    if (!g)
      break;
    /* flush k (from 0) hands out frame FRAMES - depth + k */
    unsigned f = FRAMES - depth + flushed++;
    char why[200];
    if (!fr_close(o, &want[f], &v->cfg, vcase_tol(v), why, sizeof why)) {
      print_error("%s, depth %u: flushed frame %u: %s\n", v->desc, depth, f,
                  why);
      fail();
    }
    memset(o->mem, 0x3c, o->bytes);
  }
  if (flushed != depth) {
    print_error("%s: flushed %u frames, want %u\n", v->desc, flushed, depth);
    fail();
  }
  for (unsigned t = 0; t < FRAMES; t++) {
    char why[200];
    if (t < depth) { /* untouched */
      for (size_t i = 0; i < got[t].bytes; i++)
        if (got[t].mem[i] != 0x3c) {
          print_error("%s: call %u (< depth %u) wrote byte %zu\n", v->desc, t,
                      depth, i);
          fail();
        }
      continue;
    }
    if (!fr_close(&got[t], &want[t - depth], &v->cfg, vcase_tol(v), why,
                  sizeof why)) {
      print_error("%s, depth %u%s: frame %u: %s\n", v->desc, depth,
                  pinned ? ", pinned" : "", t - depth, why);
      fail();
    }
  }
  for (unsigned i = 0; i < FRAMES; i++)
    fr_free(&want[i]);
  for (unsigned i = 0; i <= FRAMES; i++)
    fr_free(&got[i]);
  fr_free(&in);
  cf_engine_free(cpu);
}

/* Live mode on frames of 130..700 rows: several bands. */
/* n cases, times CF_TEST_WORK (0..1, default 1; the emulated device,
 * suite cudaemu, runs a quarter), at least 4. */
static unsigned cases(unsigned n)
{
  const char *w = getenv("CF_TEST_WORK");
  double f = w ? atof(w) : 1.0;
  unsigned m = f > 0 && f < 1 ? (unsigned)(n * f) : n;
  return m < 4 && n >= 4 ? 4 : m;
}

static void test_live_bands(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, seed + 1);
  for (unsigned i = 0; i < cases(quick ? 6u : 40u); i++) {
    vcase v;
    vcase_random(&v, &r, quick ? 256 : 130, quick ? 400 : 700);
    cf_algorithm2d algo = i % 4 == 3   ? CF_ALGO2D_DIRECT
                          : i % 4 == 2 ? CF_ALGO2D_FFT
                                       : CF_ALGO2D_AUTO;
    cf_engine *e = vcase_engine(&v, CF_BACKEND_CUDA, 0, algo, NULL);
    run_compare(&v, e, 0, &r, i % 2);
    cf_engine_free(e);
    free(v.taps);
  }
}

/* Pipelined: depth 1 and 2. */
static void test_pipelined(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, seed + 2);
  for (unsigned i = 0; i < cases(quick ? 6u : 40u); i++) {
    vcase v;
    vcase_random(&v, &r, 1, 300);
    unsigned depth = 1 + i % 2;
    cf_engine *e = vcase_engine(&v, CF_BACKEND_CUDA, depth,
                                i % 3 == 2 ? CF_ALGO2D_FFT : CF_ALGO2D_AUTO,
                                NULL);
    run_compare(&v, e, depth, &r, i % 3 == 0);
    cf_engine_free(e);
    free(v.taps);
  }
}

/* Pipelined with pinned frames both ways (the benchmark's case): each
 * result against the CPU's, and, on the emulated device, no call waits
 * for its frame's upload before the oldest frame's download is queued.
 * Waiting for the upload first, then for the download, held an H200 at
 * the sum of the two copies, 0.34 ms a 1080p RGBA frame for 0.15 each
 * (bench/results/gpu-nvidia-h200-2026-11-29.md). */
static void test_pipelined_pinned(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, seed + 7);
  for (unsigned i = 0; i < cases(quick ? 6u : 24u); i++) {
    vcase v;
    vcase_random(&v, &r, 1, 200);
    unsigned depth = 1 + i % 3;
    cf_engine *gpu = vcase_engine(&v, CF_BACKEND_CUDA, depth,
                                  CF_ALGO2D_AUTO, NULL);
    cf_engine *cpu = vcase_engine(&v, CF_BACKEND_CPU, 0, CF_ALGO2D_DIRECT,
                                  NULL);
    fr in, want[FRAMES], out;
    fr_make(&in, &v.cfg, 1);
    fr_make(&out, &v.cfg, 1);
    for (unsigned t = 0; t < FRAMES; t++)
      fr_make(&want[t], &v.cfg, 0);
    unsigned long long lone = 0;
    for (unsigned t = 0; t < FRAMES + depth; t++) {
      int got = 1;
      unsigned long long w0 =
          cf_emu_lone_upload_waits ? cf_emu_lone_upload_waits() : 0;
      if (t < FRAMES) {
        fr_random(&in, &v.cfg, &r);
        assert_int_equal(cf_engine_process_frame(cpu, &in.f, &want[t].f),
                         CF_OK);
        cf_status s = cf_engine_process_frame(gpu, &in.f, &out.f);
        if (s != CF_OK) {
          print_error("%s: frame %u: %s: %s\n", v.desc, t, cf_status_name(s),
                      cf_last_error());
          fail();
        }
        if (t >= depth && cf_emu_lone_upload_waits)
          lone += cf_emu_lone_upload_waits() - w0;
      } else {
        assert_int_equal(cf_engine_flush_frame(gpu, &out.f, &got), CF_OK);
        assert_true(got);
      }
      if (t < depth)
        continue; /* nothing written yet */
      char why[200];
      if (!fr_close(&out, &want[t - depth], &v.cfg, vcase_tol(&v), why,
                    sizeof why)) {
        print_error("%s, depth %u, pinned both ways: frame %u: %s\n", v.desc,
                    depth, t - depth, why);
        fail();
      }
    }
    if (lone) {
      print_error("%s, depth %u, pinned both ways: %llu calls waited for "
                  "their upload before the download was queued (%s)\n",
                  v.desc, depth, lone, cf_engine_describe(gpu));
      fail();
    }
    for (unsigned t = 0; t < FRAMES; t++)
      fr_free(&want[t]);
    fr_free(&in);
    fr_free(&out);
    cf_engine_free(cpu);
    cf_engine_free(gpu);
    free(v.taps);
  }
}

/* Forced separable on rank-1 kernels; forced fft on the same frames with
 * a kernel that is not rank 1, and auto's choice of fft for a large one
 * (the engine says which path it took). */
static void test_paths(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, seed + 3);
  vcase v;
  vcase_random(&v, &r, 200, 300);
  for (size_t i = 0; i < (size_t)v.t * v.kh * v.kw; i++) /* rank 1 */
    v.taps[i] = (float)(1 + i / v.kw % 3) * (float)(1 + i % v.kw % 4) / 64.f;
  cf_engine *e = vcase_engine(&v, CF_BACKEND_CUDA, 0, CF_ALGO2D_SEPARABLE,
                              NULL);
  run_compare(&v, e, 0, &r, 0);
  cf_engine_free(e);
  for (size_t i = 0; i < (size_t)v.t * v.kh * v.kw; i++)
    v.taps[i] = (float)((ref_rng_unit(&r) - 0.3) / (v.t * v.kh * v.kw));
  e = vcase_engine(&v, CF_BACKEND_CUDA, 0, CF_ALGO2D_FFT, NULL);
  assert_non_null(strstr(cf_engine_describe(e), "fft"));
  run_compare(&v, e, 0, &r, 0);
  cf_engine_free(e);
  free(v.taps);
  /* auto: the FFT above 512 taps a slice (the H200's crossover near 480
   * at 1080p), direct below; 2115 taps went to the FFT before too */
  static const struct {
    unsigned kh, kw;
    const char *path;
  } sizes[] = {{47, 45, "fft"}, {31, 31, "fft"}, {23, 23, "fft"},
               {21, 21, "direct"}};
  for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
    v.t = 1, v.kh = sizes[c].kh, v.kw = sizes[c].kw;
    v.taps = malloc((size_t)v.kh * v.kw * sizeof *v.taps);
    assert_non_null(v.taps);
    for (size_t i = 0; i < (size_t)v.kh * v.kw; i++)
      v.taps[i] = (float)((ref_rng_unit(&r) - 0.3) / (v.kh * v.kw));
    e = vcase_engine(&v, CF_BACKEND_CUDA, 1, CF_ALGO2D_AUTO, NULL);
    if (!strstr(cf_engine_describe(e), sizes[c].path))
      fail_msg("%ux%u, auto: %s, want %s", v.kh, v.kw, cf_engine_describe(e),
               sizes[c].path);
    run_compare(&v, e, 1, &r, 1);
    cf_engine_free(e);
    free(v.taps);
  }
}

/* Kernel swaps to a kernel of the same shape on the same path (direct
 * with taps in constant and in global memory and in the launches'
 * parameters, separable, FFT with one
 * and two slices; live and pipelined): the frames before and after equal
 * the CPU engine's with the same swap, and on the emulated device the
 * swap allocates, frees and plans nothing (a cudaFree waits for the whole
 * device, other engines' work included). */
static void test_same_shape_swap(void **state)
{
  (void)state;
  static const struct {
    cf_algorithm2d algo;
    unsigned t, kh, kw;
    int rank1;
    const char *path; /* in the description */
  } cases[] = {
      {CF_ALGO2D_DIRECT, 1, 5, 7, 0, "constant memory"},
      {CF_ALGO2D_DIRECT, 1, 7, 7, 0, "launch parameters"},
      {CF_ALGO2D_DIRECT, 1, 91, 91, 0, "taps in global memory"},
      {CF_ALGO2D_SEPARABLE, 2, 9, 5, 1, "separable"},
      {CF_ALGO2D_FFT, 1, 9, 9, 0, "fft"},
      {CF_ALGO2D_FFT, 2, 5, 6, 0, "fft"},
  };
  static const char *const calls[] = {"cudaMalloc",    "cudaFree",
                                      "cudaHostAlloc", "cudaFreeHost",
                                      "cufftPlanMany", "cufftDestroy"};
  enum { NCALLS = sizeof calls / sizeof *calls, SWAP_AT = 3, NF = 6 };
  ref_rng r;
  ref_rng_init(&r, seed + 11);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    vcase v;
    vcase_random(&v, &r, 4, 40);
    v.cfg.width = (unsigned)ref_rng_range(&r, 8, cases[c].kh > 64 ? 24 : 64);
    v.t = cases[c].t, v.kh = cases[c].kh, v.kw = cases[c].kw;
    snprintf(v.desc, sizeof v.desc, "%s %ux%u, kernel %ux%ux%u",
             cf_pixel_format_name(v.cfg.format), v.cfg.width, v.cfg.height, v.t,
             v.kh, v.kw);
    size_t n = (size_t)v.t * v.kh * v.kw;
    float *taps[2];
    for (int k = 0; k < 2; k++) {
      taps[k] = malloc(n * sizeof *taps[k]);
      assert_non_null(taps[k]);
      double a = 1 + ref_rng_unit(&r), b = 1 + ref_rng_unit(&r);
      for (size_t i = 0; i < n; i++)
        taps[k][i] =
            cases[c].rank1
                ? (float)((a + i / v.kw % 3) * (b + i % v.kw % 4) / (16.0 * n))
                : (float)((ref_rng_unit(&r) - 0.3) / n);
    }
    free(v.taps);
    v.taps = taps[0];
    unsigned depth = (unsigned)(ref_rng_u64(&r) % 2);
    cf_engine *gpu =
        vcase_engine(&v, CF_BACKEND_CUDA, depth, cases[c].algo, NULL);
    cf_engine *cpu =
        vcase_engine(&v, CF_BACKEND_CPU, 0, CF_ALGO2D_DIRECT, NULL);
    if (!strstr(cf_engine_describe(gpu), cases[c].path))
      fail_msg("case %zu: not the path asked for (%s): %s", c, cases[c].path,
               cf_engine_describe(gpu));
    cf_kernel2d *kb = NULL;
    assert_int_equal(cf_kernel2d_new(v.t, v.kh, v.kw, taps[1], &kb), CF_OK);
    fr in, want[NF], got[NF + 1];
    frames_make(&in, want, NF, got, NF + 1, &v.cfg);
    for (unsigned t = 0; t < NF; t++) {
      if (t == SWAP_AT) {
        unsigned long long before[NCALLS];
        for (unsigned i = 0; i < NCALLS; i++)
          before[i] = steady_counted() ? cf_emu_calls(calls[i]) : 0;
        assert_int_equal(cf_engine_set_kernel2d(gpu, kb), CF_OK);
        for (unsigned i = 0; i < NCALLS && steady_counted(); i++)
          if (cf_emu_calls(calls[i]) != before[i])
            fail_msg("%s, depth %u: a swap to a kernel of the same shape "
                     "called %s %llu times (%s)",
                     v.desc, depth, calls[i],
                     cf_emu_calls(calls[i]) - before[i],
                     cf_engine_describe(gpu));
        assert_int_equal(cf_engine_set_kernel2d(cpu, kb), CF_OK);
      }
      fr_random(&in, &v.cfg, &r);
      assert_int_equal(cf_engine_process_frame(cpu, &in.f, &want[t].f), CF_OK);
      assert_int_equal(cf_engine_process_frame(gpu, &in.f, &got[t].f), CF_OK);
    }
    int g = 0;
    assert_int_equal(cf_engine_flush_frame(gpu, &got[NF].f, &g), CF_OK);
    assert_int_equal(g, depth ? 1 : 0);
    vcase vb = v;
    vb.taps = taps[1];
    double tol = fmax(vcase_tol(&v), vcase_tol(&vb));
    for (unsigned t = 0; t < NF; t++) {
      char why[200];
      if (!fr_close(&got[t + depth], &want[t], &v.cfg, tol, why, sizeof why))
        fail_msg("%s, depth %u, swap at frame %u: frame %u: %s (%s)", v.desc,
                 depth, SWAP_AT, t, why, cf_engine_describe(gpu));
    }
    print_message("%s, depth %u: same-shape swap at frame %u: frames equal "
                  "the CPU's%s (%s)\n",
                  v.desc, depth, SWAP_AT,
                  steady_counted() ? ", no allocation, free or plan" : "",
                  cf_engine_describe(gpu));
    frames_free(&in, want, NF, got, NF + 1);
    cf_kernel2d_free(kb);
    cf_engine_free(gpu);
    cf_engine_free(cpu);
    free(taps[0]);
    free(taps[1]);
  }
}

/* A swap to another shape the device has no memory for (the emulated
 * device's cf_emu_device_limit: every cudaMalloc fails; for the FFT, a
 * second one whose plans find none, cf_emu_fft_plan_fail): set_kernel2d
 * says CF_E_NOMEM, and the engine (backend cuda) goes on with the kernel
 * in force, its frames equal to the CPU's with it; a later swap works.
 * The new kernel goes separable or FFT (device buffers of its own), live
 * and pipelined. */
static void test_failed_swap(void **state)
{
  (void)state;
  if (!cf_emu_device_limit) {
    print_message("skipped: device memory runs out on the emulated device "
                  "only (cudaemu)\n");
    skip();
  }
  enum { NF = 6, FAIL_AT = 2, SWAP_AT = 4 };
  ref_rng r;
  ref_rng_init(&r, seed + 13);
  for (unsigned c = 0; c < 4; c++) {
    vcase v;
    vcase_random(&v, &r, 4, 60);
    v.cfg.width = (unsigned)ref_rng_range(&r, 8, 80);
    int fft = c % 2;
    unsigned depth = c / 2;
    /* A: small, direct (constant memory); B: rank 1 (separable) or large
     * (the FFT) */
    unsigned kh[2] = {(unsigned)ref_rng_range(&r, 1, 7),
                      fft ? (unsigned)ref_rng_range(&r, 47, 52) : 13};
    unsigned kw[2] = {(unsigned)ref_rng_range(&r, 1, 7),
                      fft ? (unsigned)ref_rng_range(&r, 47, 52) : 11};
    float *taps[2];
    for (int k = 0; k < 2; k++) {
      size_t n = (size_t)kh[k] * kw[k];
      taps[k] = malloc(n * sizeof *taps[k]);
      assert_non_null(taps[k]);
      for (size_t i = 0; i < n; i++)
        taps[k][i] = k && !fft ? (float)((1 + i / kw[k] % 3) *
                                         (1 + i % kw[k] % 4) / (12.0 * n))
                               : (float)((ref_rng_unit(&r) - 0.3) / n);
    }
    free(v.taps);
    v.t = 1, v.kh = kh[0], v.kw = kw[0], v.taps = taps[0];
    snprintf(v.desc, sizeof v.desc, "%s %ux%u, kernel %ux%u then %ux%u",
             cf_pixel_format_name(v.cfg.format), v.cfg.width, v.cfg.height,
             kh[0], kw[0], kh[1], kw[1]);
    cf_engine *gpu =
        vcase_engine(&v, CF_BACKEND_CUDA, depth, CF_ALGO2D_AUTO, NULL);
    cf_engine *cpu =
        vcase_engine(&v, CF_BACKEND_CPU, 0, CF_ALGO2D_DIRECT, NULL);
    cf_kernel2d *kb = NULL;
    assert_int_equal(cf_kernel2d_new(1, kh[1], kw[1], taps[1], &kb), CF_OK);
    fr in, want[NF], got[NF + 1];
    frames_make(&in, want, NF, got, NF + 1, &v.cfg);
    for (unsigned t = 0; t < NF; t++) {
      if (t == FAIL_AT) {
        cf_emu_device_limit(0);
        cf_status s = cf_engine_set_kernel2d(gpu, kb);
        cf_emu_device_limit(SIZE_MAX);
        if (s != CF_E_NOMEM || !strstr(cf_last_error(), "out of memory"))
          fail_msg("%s, depth %u: a swap with no device memory: %s: %s", v.desc,
                   depth, cf_status_name(s), cf_last_error());
      }
      if (t == FAIL_AT + 1 && fft && cf_emu_fft_plan_fail) {
        /* memory for the buffers, none for cuFFT's plans: out of memory
         * too (CUFFT_ALLOC_FAILED), not a device fault that stops the
         * engine */
        cf_emu_fft_plan_fail(1);
        cf_status s = cf_engine_set_kernel2d(gpu, kb);
        cf_emu_fft_plan_fail(0);
        if (s != CF_E_NOMEM || !strstr(cf_last_error(), "CUFFT_ALLOC_FAILED"))
          fail_msg("%s, depth %u: a swap whose FFT plans find no memory: "
                   "%s: %s, want CF_E_NOMEM",
                   v.desc, depth, cf_status_name(s), cf_last_error());
      }
      if (t == SWAP_AT) {
        assert_int_equal(cf_engine_set_kernel2d(gpu, kb), CF_OK);
        assert_int_equal(cf_engine_set_kernel2d(cpu, kb), CF_OK);
        if (!strstr(cf_engine_describe(gpu), fft ? "fft" : "separable"))
          fail_msg("%s: not the path meant: %s", v.desc,
                   cf_engine_describe(gpu));
      }
      fr_random(&in, &v.cfg, &r);
      assert_int_equal(cf_engine_process_frame(cpu, &in.f, &want[t].f), CF_OK);
      cf_status s = cf_engine_process_frame(gpu, &in.f, &got[t].f);
      if (s != CF_OK)
        fail_msg("%s, depth %u: frame %u after the failed swap: %s: %s", v.desc,
                 depth, t, cf_status_name(s), cf_last_error());
    }
    int g = 0;
    assert_int_equal(cf_engine_flush_frame(gpu, &got[NF].f, &g), CF_OK);
    assert_int_equal(g, depth ? 1 : 0);
    vcase vb = v;
    vb.kh = kh[1], vb.kw = kw[1], vb.taps = taps[1];
    double tol = fmax(vcase_tol(&v), vcase_tol(&vb));
    for (unsigned t = 0; t < NF; t++) {
      char why[200];
      if (!fr_close(&got[t + depth], &want[t], &v.cfg, tol, why, sizeof why))
        fail_msg("%s, depth %u, failed swap at frame %u, swap at %u: frame "
                 "%u: %s (%s)",
                 v.desc, depth, FAIL_AT, SWAP_AT, t, why,
                 cf_engine_describe(gpu));
    }
    print_message("%s, depth %u: a swap with no device memory failed "
                  "(CF_E_NOMEM), the frames went on with the old kernel, a "
                  "later swap worked (%s)\n",
                  v.desc, depth, cf_engine_describe(gpu));
    frames_free(&in, want, NF, got, NF + 1);
    cf_kernel2d_free(kb);
    cf_engine_free(gpu);
    cf_engine_free(cpu);
    free(taps[0]);
    free(taps[1]);
  }
}

typedef struct prep2d_job {
  const cf_engine *e;
  const cf_kernel2d *k;
  cf_swap_prep2d *p;
  cf_status st;
} prep2d_job;

static void *prep2d_thread(void *arg)
{
  prep2d_job *j = arg;
  j->st = cf_engine_prepare_swap2d(j->e, j->k, &j->p);
  return NULL;
}

/* Swaps built ahead (cf_engine_prepare_swap2d, in a second thread while
 * frames go through) to kernels of other shapes and paths (direct,
 * separable, FFT, temporal), backend cuda and auto, live and pipelined:
 * the frames equal the CPU's with set_kernel2d at the same frame, and
 * set_prepared2d, like the frames after it, makes none of steady.h's
 * calls (counted on the emulated device; compared everywhere), also where
 * the kernel has more temporal taps than the ring held. A plain
 * set_kernel2d there makes them: the count has teeth. */
static void test_prepared_swap(void **state)
{
  (void)state;
  static const struct {
    cf_backend be;
    unsigned t[3], kh[3], kw[3];
    int rank1[3];
  } cases[] = {
      /* direct -> FFT -> separable */
      {CF_BACKEND_CUDA, {1, 1, 1}, {5, 47, 9}, {3, 49, 13}, {0, 0, 1}},
      /* separable -> direct (same size) -> FFT */
      {CF_BACKEND_AUTO, {1, 1, 1}, {11, 11, 50}, {9, 9, 47}, {1, 0, 0}},
      /* temporal: the ring holds 3 from the start, then fewer taps */
      {CF_BACKEND_CUDA, {3, 2, 3}, {3, 7, 5}, {3, 5, 5}, {0, 0, 1}},
      /* temporal, the ring grows: from none to 2 (no frame kept), then
       * to 4 (the newest kept, moved on the device) */
      {CF_BACKEND_CUDA, {1, 2, 4}, {3, 5, 7}, {3, 5, 3}, {0, 0, 0}},
      /* the same on the FFT path, and with backend auto (the CPU
       * fallback's history grows too) */
      {CF_BACKEND_AUTO, {2, 3, 4}, {5, 47, 3}, {5, 49, 9}, {0, 0, 1}},
  };
  enum { NF = 9 };
  static const unsigned swap_at[2] = {3, 6};
  ref_rng r;
  ref_rng_init(&r, seed + 17);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    for (unsigned depth = 0; depth < 3; depth += 2) {
      vcase v;
      vcase_random(&v, &r, 4, 60);
      v.cfg.width = (unsigned)ref_rng_range(&r, 8, 80);
      /* a growing ring: tall enough for 3 live bands (BAND_ROWS 128), on
       * streams other than the one the frames move on */
      if (cases[c].t[2] > cases[c].t[0])
        v.cfg.height = (unsigned)ref_rng_range(&r, 384, 420);
      float *taps[3];
      cf_kernel2d *k[3];
      for (int i = 0; i < 3; i++) {
        size_t n = (size_t)cases[c].t[i] * cases[c].kh[i] * cases[c].kw[i];
        unsigned kw = cases[c].kw[i];
        taps[i] = malloc(n * sizeof *taps[i]);
        assert_non_null(taps[i]);
        for (size_t j = 0; j < n; j++)
          taps[i][j] =
              cases[c].rank1[i]
                  ? (float)((1 + j / kw % 3) * (1 + j % kw % 4) / (12.0 * n))
                  : (float)((ref_rng_unit(&r) - 0.3) / n);
        assert_int_equal(cf_kernel2d_new(cases[c].t[i], cases[c].kh[i],
                                         cases[c].kw[i], taps[i], &k[i]),
                         CF_OK);
      }
      free(v.taps);
      v.t = cases[c].t[0], v.kh = cases[c].kh[0], v.kw = cases[c].kw[0];
      v.taps = taps[0];
      snprintf(v.desc, sizeof v.desc,
               "%s %ux%u comps %u border %s cval %g "
               "scale %g bias %g abs %d, kernels %ux%ux%u, %ux%ux%u, "
               "%ux%ux%u, %s",
               cf_pixel_format_name(v.cfg.format), v.cfg.width, v.cfg.height,
               v.cfg.components, cf_border_name(v.cfg.border),
               (double)v.cfg.cval, (double)v.cfg.scale, (double)v.cfg.bias,
               v.cfg.absolute, cases[c].t[0], cases[c].kh[0], cases[c].kw[0],
               cases[c].t[1], cases[c].kh[1], cases[c].kw[1], cases[c].t[2],
               cases[c].kh[2], cases[c].kw[2], cf_backend_name(cases[c].be));
      cf_engine *gpu =
          vcase_engine(&v, cases[c].be, depth, CF_ALGO2D_AUTO, NULL);
      if (cf_engine_backend(gpu) != CF_BACKEND_CUDA)
        fail_msg("%s: not on the device: %s", v.desc, cf_engine_describe(gpu));
      cf_engine *cpu =
          vcase_engine(&v, CF_BACKEND_CPU, 0, CF_ALGO2D_DIRECT, NULL);
      /* got: depth frames more, and one for the flush that finds none */
      fr in, want[NF], got[NF + 3];
      frames_make(&in, want, NF, got, NF + 3, &v.cfg);
      prep2d_job j = {gpu, NULL, NULL, CF_OK};
      pthread_t th;
      int building = 0;
      unsigned sw = 0;
      steady_mark mark;
      for (unsigned t = 0; t < NF; t++) {
        if (sw < 2 && t + 1 == swap_at[sw]) { /* built during frame t */
          j.k = k[sw + 1];
          j.p = NULL;
          assert_int_equal(pthread_create(&th, NULL, prep2d_thread, &j), 0);
          building = 1;
        }
        if (sw < 2 && t == swap_at[sw]) {
          assert_int_equal(pthread_join(th, NULL), 0);
          building = 0;
          if (j.st != CF_OK)
            fail_msg("%s: prepare_swap2d: %s: %s", v.desc, cf_status_name(j.st),
                     cf_last_error());
          steady_take(&mark);
          assert_int_equal(cf_engine_set_prepared2d(gpu, j.p), CF_OK);
          assert_int_equal(cf_engine_set_kernel2d(cpu, k[sw + 1]), CF_OK);
        }
        fr_random(&in, &v.cfg, &r);
        assert_int_equal(cf_engine_process_frame(cpu, &in.f, &want[t].f),
                         CF_OK);
        assert_int_equal(cf_engine_process_frame(gpu, &in.f, &got[t].f), CF_OK);
        if (sw < 2 && t == swap_at[sw]) {
          unsigned long long times = 0;
          const char *call = steady_broken(&mark, NULL, &times);
          if (call)
            fail_msg("%s, depth %u: set_prepared2d and the frame after it "
                     "called %s %llu times (%s)",
                     v.desc, depth, call, times, cf_engine_describe(gpu));
          cf_swap_prep2d_free(j.p); /* the kernel state it retired */
          j.p = NULL;
          sw++;
        }
      }
      assert_false(building);
      unsigned extra = 0;
      for (int more = 1; more;) {
        assert_int_equal(cf_engine_flush_frame(gpu, &got[NF + extra].f, &more),
                         CF_OK);
        extra += (unsigned)more;
      }
      assert_int_equal(extra, depth);
      double tol = 0;
      for (int i = 0; i < 3; i++) {
        vcase vi = v;
        vi.t = cases[c].t[i], vi.kh = cases[c].kh[i], vi.kw = cases[c].kw[i];
        vi.taps = taps[i];
        tol = fmax(tol, vcase_tol(&vi));
      }
      for (unsigned t = 0; t < NF; t++) {
        char why[200];
        if (!fr_close(&got[t + depth], &want[t], &v.cfg, tol, why, sizeof why))
          fail_msg("%s, depth %u, prepared swaps before frames %u and %u: "
                   "frame %u: %s (%s)",
                   v.desc, depth, swap_at[0], swap_at[1], t, why,
                   cf_engine_describe(gpu));
      }
      print_message("%s, depth %u: prepared swaps at frames %u and %u: "
                    "frames equal the CPU's%s (%s)\n",
                    v.desc, depth, swap_at[0], swap_at[1],
                    steady_counted() ? ", no setup call" : "",
                    cf_engine_describe(gpu));
      frames_free(&in, want, NF, got, NF + 3);
      cf_engine_free(gpu);
      cf_engine_free(cpu);
      for (int i = 0; i < 3; i++) {
        cf_kernel2d_free(k[i]);
        free(taps[i]);
      }
    }
  }
}

#ifndef CF_TEST_NO_CUDART
static unsigned fmt_planes(const cf_video_config *c)
{
  return c->format == CF_PIX_I420 || c->format == CF_PIX_Y444 ||
                 c->format == CF_PIX_Y42B
             ? 3
         : c->format == CF_PIX_NV12 ? 2
                                    : 1;
}

/* A frame in device memory: each plane's rows padded by `pad` bytes. */
typedef struct dfr {
  uint8_t *mem;
  cf_frame f;
  size_t rows[3];
} dfr;

static void dfr_make(dfr *d, const fr *host, const cf_video_config *c,
                     size_t pad)
{
  unsigned planes = fmt_planes(c);
  size_t total = 0;
  for (unsigned p = 0; p < planes; p++) {
    const uint8_t *end = p + 1 < planes ? (const uint8_t *)host->f.data[p + 1]
                                        : host->mem + host->bytes;
    d->rows[p] =
        (size_t)(end - (const uint8_t *)host->f.data[p]) / host->f.stride[p];
    d->f.stride[p] = host->f.stride[p] + pad;
    total += d->rows[p] * d->f.stride[p];
  }
  assert_int_equal(cudaMalloc((void **)&d->mem, total), cudaSuccess);
  assert_int_equal(cudaMemset(d->mem, 0x3c, total), cudaSuccess);
  size_t off = 0;
  for (unsigned p = 0; p < 3; p++) {
    d->f.data[p] = p < planes ? d->mem + off : NULL;
    if (p < planes)
      off += d->rows[p] * d->f.stride[p];
  }
}

/* host -> device (up) or device -> host, plane by plane */
static void dfr_copy(dfr *d, fr *host, const cf_video_config *c, int up)
{
  unsigned planes = fmt_planes(c);
  for (unsigned p = 0; p < planes; p++) {
    void *dst = up ? d->f.data[p] : host->f.data[p];
    const void *src = up ? host->f.data[p] : d->f.data[p];
    size_t dp = up ? d->f.stride[p] : host->f.stride[p];
    size_t sp = up ? host->f.stride[p] : d->f.stride[p];
    assert_int_equal(cudaMemcpy2DAsync(dst, dp, src, sp, host->f.stride[p],
                                       d->rows[p], cudaMemcpyDefault, 0),
                     cudaSuccess);
  }
  assert_int_equal(cudaStreamSynchronize(0), cudaSuccess);
}

static void copied_now(unsigned long long c[3])
{
  c[0] = c[1] = c[2] = 0;
  if (cf_emu_copied)
    cf_emu_copied(&c[0], &c[1], &c[2]);
}

/* Frames in device memory, padded rows, depth 0 and 1: equal to the CPU
 * on host frames; the padding untouched; no host traffic (emulated). */
static void test_device_frames(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, seed + 5);
  for (unsigned i = 0; i < (quick ? 4u : 12u); i++) {
    vcase v;
    vcase_random(&v, &r, 1, i % 3 == 0 ? 300 : 60);
    unsigned depth = i % 2;
    cf_engine *gpu =
        vcase_engine(&v, CF_BACKEND_CUDA, depth, CF_ALGO2D_AUTO, NULL);
    cf_engine *cpu =
        vcase_engine(&v, CF_BACKEND_CPU, 0, CF_ALGO2D_DIRECT, NULL);
    size_t pad = 1 + ref_rng_u64(&r) % 64;
    fr in, want[FRAMES], got;
    fr_make(&in, &v.cfg, 0);
    fr_make(&got, &v.cfg, 0);
    dfr din, dout[FRAMES + 1];
    dfr_make(&din, &in, &v.cfg, pad);
    for (unsigned t = 0; t <= FRAMES; t++)
      dfr_make(&dout[t], &in, &v.cfg, pad);
    unsigned long long host_bytes = 0;
    for (unsigned t = 0; t < FRAMES; t++) {
      fr_make(&want[t], &v.cfg, 0);
      fr_random(&in, &v.cfg, &r);
      assert_int_equal(cf_engine_process_frame(cpu, &in.f, &want[t].f), CF_OK);
      dfr_copy(&din, &in, &v.cfg, 1);
      unsigned long long c0[3], c1[3];
      copied_now(c0);
      cf_status s = cf_engine_process_frame(gpu, &din.f, &dout[t].f);
      copied_now(c1);
      host_bytes += c1[0] - c0[0] + c1[1] - c0[1];
      if (s != CF_OK) {
        print_error("%s, depth %u, device frames: frame %u: %s: %s\n", v.desc,
                    depth, t, cf_status_name(s), cf_last_error());
        fail();
      }
    }
    int g = 0;
    unsigned long long c0[3], c1[3];
    copied_now(c0);
    assert_int_equal(cf_engine_flush_frame(gpu, &dout[FRAMES].f, &g), CF_OK);
    copied_now(c1);
    host_bytes += c1[0] - c0[0] + c1[1] - c0[1];
    assert_int_equal(g, (int)depth);
    for (unsigned t = depth; t <= FRAMES; t++) {
      if (t == FRAMES && !depth)
        break;
      char why[200];
      dfr_copy(&dout[t], &got, &v.cfg, 0);
      if (!fr_close(&got, &want[t - depth], &v.cfg, vcase_tol(&v), why,
                    sizeof why)) {
        print_error("%s, depth %u, device frames, pad %zu: frame %u: %s\n",
                    v.desc, depth, pad, t - depth, why);
        fail();
      }
    }
    /* the rows' padding of an output is not the engine's to write */
    uint8_t *pb = malloc(pad);
    assert_non_null(pb);
    const dfr *last = &dout[FRAMES - 1]; /* written in both modes */
    for (unsigned p = 0; p < 3 && last->f.data[p]; p++)
      for (size_t row = 0; row < last->rows[p]; row++) {
        const uint8_t *at = (const uint8_t *)last->f.data[p] +
                            row * last->f.stride[p] + last->f.stride[p] - pad;
        assert_int_equal(cudaMemcpy(pb, at, pad, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        for (size_t k = 0; k < pad; k++)
          if (pb[k] != 0x3c) {
            print_error("%s: padding byte %zu of row %zu, plane %u written\n",
                        v.desc, k, row, p);
            fail();
          }
      }
    free(pb);
    if (host_bytes) {
      print_error("%s, depth %u: device frames moved %llu bytes through the "
                  "host\n",
                  v.desc, depth, host_bytes);
      fail();
    }
    /* auto keeps host copies: it refuses device frames, with a message */
    cf_status s;
    cf_engine *a = vcase_engine(&v, CF_BACKEND_AUTO, depth, CF_ALGO2D_AUTO, &s);
    assert_non_null(a);
    if (cf_engine_backend(a) == CF_BACKEND_CUDA) {
      assert_int_equal(cf_engine_process_frame(a, &din.f, &dout[0].f),
                       CF_E_INVALID);
      assert_non_null(strstr(cf_last_error(), "device memory"));
    }
    cf_engine_free(a);
    cudaFree(din.mem);
    for (unsigned t = 0; t <= FRAMES; t++)
      cudaFree(dout[t].mem);
    for (unsigned t = 0; t < FRAMES; t++)
      fr_free(&want[t]);
    fr_free(&in);
    fr_free(&got);
    cf_engine_free(gpu);
    cf_engine_free(cpu);
    free(v.taps);
  }
}
#endif

/* ---- faults: one child process per case (the counters are global) ---- */

/* argv: --fault SPEC MODE DEPTH, with CF_CUDA_FAULT=SPEC set by the
 * parent (the fault counters count from the process start): MODE "cuda"
 * expects success or CF_E_NOMEM / CF_E_DEVICE with a message; "auto"
 * expects the CPU's results, the latency kept, and (for a launch fault)
 * the engine on the CPU at the end. RGBA with T = 2. Returns 0 when
 * right. */
static int fault_case(const char *spec, const char *mode, unsigned depth)
{
  ref_rng r;
  ref_rng_init(&r, seed + 4);
  vcase v;
  vcase_random(&v, &r, 260, 300);
  v.cfg.format = CF_PIX_RGBA;
  /* R, G and B: 3 launches a frame and band, so that "launch:9" is reached
   * within the frames run (with one component and depth 2, 7 frames make
   * 7 launches and the auto case would never see its fault). */
  v.cfg.components = 7;
  v.t = 2 <= v.t ? v.t : 2;
  free(v.taps);
  v.taps = malloc((size_t)v.t * v.kh * v.kw * sizeof *v.taps);
  for (size_t i = 0; i < (size_t)v.t * v.kh * v.kw; i++)
    v.taps[i] = (float)ref_rng_unit(&r) / (float)(v.t * v.kh * v.kw);
  cf_status s;
  if (!strcmp(mode, "cuda")) {
    cf_engine *e = vcase_engine(&v, CF_BACKEND_CUDA, depth, CF_ALGO2D_AUTO,
                                &s);
    for (unsigned t = 0; e && s == CF_OK && t < 6; t++) {
      fr in, out;
      fr_make(&in, &v.cfg, 0);
      fr_make(&out, &v.cfg, 0);
      fr_random(&in, &v.cfg, &r);
      s = cf_engine_process_frame(e, &in.f, &out.f);
      fr_free(&in);
      fr_free(&out);
    }
    cf_engine_free(e);
    if (s != CF_OK && ((s != CF_E_NOMEM && s != CF_E_DEVICE) ||
                       strlen(cf_last_error()) < 10)) {
      fprintf(stderr, "%s: explicit cuda: %s '%s'\n", spec,
              cf_status_name(s), cf_last_error());
      return 1;
    }
    fprintf(stderr, "%s depth %u: explicit cuda: %s: %s\n", spec, depth,
            cf_status_name(s), s == CF_OK ? "" : cf_last_error());
  } else {
    cf_engine *e = vcase_engine(&v, CF_BACKEND_AUTO, depth, CF_ALGO2D_AUTO,
                                &s);
    if (!e) {
      fprintf(stderr, "%s: auto creation: %s '%s'\n", spec,
              cf_status_name(s), cf_last_error());
      return 1;
    }
    unsigned lat = (unsigned)cf_engine_latency(e);
    if (cf_engine_backend(e) == CF_BACKEND_CUDA && lat != depth) {
      fprintf(stderr, "%s: latency %u, want %u\n", spec, lat, depth);
      return 1;
    }
    run_compare(&v, e, lat, &r, 0);
    if (cf_engine_latency(e) != lat) {
      fprintf(stderr, "%s: latency changed to %zu from %u\n", spec,
              cf_engine_latency(e), lat);
      return 1;
    }
    cf_backend b = cf_engine_backend(e);
    fprintf(stderr, "%s depth %u: auto ends on %s (%s)\n", spec, depth,
            cf_backend_name(b), cf_engine_describe(e));
    cf_engine_free(e);
    if (!strncmp(spec, "launch:", 7) && b != CF_BACKEND_CPU) {
      fprintf(stderr, "%s: auto did not switch to the CPU\n", spec);
      return 1;
    }
  }
  free(v.taps);
  return 0;
}

static void test_faults(void **state)
{
  (void)state;
  static const char *const specs[] = {"alloc:3", "launch:4", "alloc:1",
                                      "alloc:6", "launch:1", "launch:9"};
  unsigned nspecs = quick ? 2 : sizeof specs / sizeof *specs;
  for (unsigned i = 0; i < nspecs; i++)
    for (unsigned m = 0; m < 2; m++)
      for (unsigned depth = 0; depth <= 2; depth += 2) {
        if (quick && depth != (i == 0 ? 2u : 0u))
          continue; /* alloc:3 pipelined, launch:4 live */
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "CF_CUDA_FAULT=%s CF_TEST_SEED=%llu '%s' --fault %s %s %u",
                 specs[i], (unsigned long long)seed, self, specs[i],
                 m ? "auto" : "cuda", depth);
        int rc = system(cmd);
        if (rc != 0) {
          print_error("fault case %s %s depth %u failed (status %d)\n",
                      specs[i], m ? "auto" : "cuda", depth, rc);
          fail();
        }
      }
}

int main(int argc, char **argv)
{
  const char *why = NULL;
  self = argv[0];
  if (cf_device_count(&why) == 0) {
    printf("skipped: no CUDA device: %s\n", why ? why : "unknown");
    return 77;
  }
  seed = ref_seed();
  const char *q = getenv("CF_TEST_QUICK");
  quick = q && *q && strcmp(q, "0") != 0;
  if (argc == 5 && !strcmp(argv[1], "--fault"))
    return fault_case(argv[2], argv[3], (unsigned)atoi(argv[4]));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_live_bands),
      cmocka_unit_test(test_pipelined),
      cmocka_unit_test(test_pipelined_pinned),
      cmocka_unit_test(test_paths),
      cmocka_unit_test(test_same_shape_swap),
      cmocka_unit_test(test_failed_swap),
      cmocka_unit_test(test_prepared_swap),
#ifndef CF_TEST_NO_CUDART
      cmocka_unit_test(test_device_frames),
#endif
      cmocka_unit_test(test_faults),
  };
  test_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
