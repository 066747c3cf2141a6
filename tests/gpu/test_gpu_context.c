/* The CUDA engines leave the calling thread's CUDA context as they found
 * it. An application that embeds the library (or GStreamer's CUDA
 * elements around ours) may have a context of its own current, or another
 * device's, when it calls in: every call (creation, process, drain, reset,
 * kernel swaps, prepared swaps, free, cf_host_alloc / cf_host_free) must
 * do its work in the engine device's primary context and put the caller's
 * context back before it returns. Checked through the driver's
 * cuCtxGetCurrent (cudaGetDriverEntryPointByVersion: no link to libcuda)
 * after each call, with the engine's output against the float64
 * reference, for:
 *  - a context of the application's own (cuCtxCreate) current;
 *  - no context current: none current after;
 *  - the primary context of another device current, the engine on device
 *    1 (two devices at least: CF_EMU_DEVICES=2 on the emulated device; a
 *    one-GPU machine skips it, saying so).
 * On the emulated device also: no runtime call of the library ran in the
 * application's context (cf_emu_foreign_ctx_calls).
 * And the caller's other runtime state: an error its own calls left on
 * the thread (test_pending_error) is not taken for the engines', and a
 * device-id past the last device is refused as unavailable
 * (test_device_range).
 * Exits 77 with "skipped: ..." where there is no device or no CUDA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cudafilter/engine.h>
#include <cudafilter/kernel.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/memory.h>
#include <cudafilter/video.h>

#ifndef CF_TEST_NO_CUDART /* a build without CUDA: main() skips */
#include <cuda_runtime_api.h>
#endif

#include "../ref.h"
#include "../ref2d.h"
#include "../test_filter.h"

/* the emulated runtime's count (tests/emu/ctx_emu.h); NULL on a device */
unsigned long long cf_emu_foreign_ctx_calls(void) __attribute__((weak));

#ifndef CF_TEST_NO_CUDART

static uint64_t seed;
static int quick; /* CF_TEST_QUICK */

/* The driver's calls, CUDA 4.0's ABI (CUresult is an int, 0 success). */
static struct {
  int (*get)(void **ctx);
  int (*set)(void *ctx);
  int (*create)(void **ctx, unsigned flags, int dev);
  int (*destroy)(void *ctx);
  int (*pop)(void **ctx);
} drv;

static int load_driver(char *why, size_t n)
{
  static const char *const names[] = {"cuCtxGetCurrent", "cuCtxSetCurrent",
                                      "cuCtxCreate", "cuCtxDestroy",
                                      "cuCtxPopCurrent"};
  void **slots[] = {(void **)&drv.get, (void **)&drv.set, (void **)&drv.create,
                    (void **)&drv.destroy, (void **)&drv.pop};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    enum cudaDriverEntryPointQueryResult q;
    cudaError_t e = cudaGetDriverEntryPointByVersion(names[i], slots[i], 4000,
                                                     cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*slots[i]) {
      snprintf(why, n, "the driver has no %s (%s)", names[i],
               cudaGetErrorString(e));
      return 0;
    }
  }
  return 1;
}

static void *current(void)
{
  void *c = NULL;
  assert_int_equal(drv.get(&c), 0);
  return c;
}

/* After each call: the context the caller had, and on the emulated device
 * no runtime call made in it since `mark`. */
static unsigned long long foreign_now(void)
{
  return cf_emu_foreign_ctx_calls ? cf_emu_foreign_ctx_calls() : 0;
}

static int want_dev; /* cudaGetDevice() before the calls (all_calls) */

/* test_pending_error: after each call checked, a failed runtime call of
 * the application's own leaves its error as the thread's last error */
static int pending_error;

/* cudaErrorInvalidDevice left behind: no context or device touched */
static void leave_error(void)
{
  assert_int_equal(cudaSetDevice(1 << 20), cudaErrorInvalidDevice);
}

static int device_now(void)
{
  int d = -1;
  assert_int_equal(cudaGetDevice(&d), cudaSuccess);
  return d;
}

#define CHECK_CTX(want, mark, what)                                            \
  do {                                                                         \
    void *now_ = current();                                                    \
    if (now_ != (want))                                                        \
      fail_msg("after %s: the thread's current context is %p, the caller's "   \
               "was %p (seed %llu)",                                           \
               what, now_, (void *)(want), (unsigned long long)seed);          \
    if (device_now() != want_dev)                                              \
      fail_msg("after %s: cudaGetDevice() says %d, said %d before (seed "      \
               "%llu)",                                                        \
               what, device_now(), want_dev, (unsigned long long)seed);        \
    unsigned long long f_ = foreign_now();                                     \
    if (f_ != (mark))                                                          \
      fail_msg("%s: %llu runtime calls ran in the caller's own context "       \
               "(seed %llu)",                                                  \
               what, f_ - (mark), (unsigned long long)seed);                   \
    if (pending_error)                                                         \
      leave_error();                                                           \
  } while (0)

/* ---- audio ------------------------------------------------------------- */

/* One stream on device `dev`, backend cuda, random channels, kernel, block
 * and chunking; kernel swaps to the same taps (plain and prepared) half-way,
 * which leave the output as it was: the whole output against the float64
 * reference. The thread's context must stay `want` after every call. */
static void audio_stream(ref_rng *r, int dev, void *want)
{
  unsigned long long mark = foreign_now();
  unsigned ch = (unsigned)ref_rng_range(r, 1, 3);
  size_t len = ref_rng_range(r, 1, quick ? 600 : 3000);
  unsigned block = (unsigned)ref_rng_range(r, 16, 1024);
  size_t n = ref_rng_range(r, 2000, quick ? 6000 : 16000);
  float *h = malloc(len * sizeof *h), *x = malloc(n * ch * sizeof *x);
  assert_non_null(h);
  assert_non_null(x);
  ref_rng_fill(r, h, len);
  ref_rng_fill(r, x, n * ch);
  cf_kernel *k = NULL;
  assert_int_equal(cf_kernel_new_shared(h, len, &k), CF_OK);
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = ch;
  cfg.block_size = block;
  cfg.backend = CF_BACKEND_CUDA;
  cfg.device_id = dev;
  cf_engine *e = NULL;
  cf_status s = cf_engine_new_audio(&cfg, k, &e);
  if (s != CF_OK)
    fail_msg("engine: %s: %s", cf_status_name(s), cf_last_error());
  CHECK_CTX(want, mark, "cf_engine_new_audio");
  size_t lat = cf_engine_latency(e), tail = cf_engine_tail(e);
  float *y = calloc((n + tail) * ch, sizeof *y);
  assert_non_null(y);
  size_t chunks[4096];
  size_t nc = ref_chunking(r, n, block, chunks, 4096), pos = 0;
  for (size_t i = 0; i <= nc && pos < n; i++) {
    size_t m = i < nc ? chunks[i] : n - pos;
    m = m < n - pos ? m : n - pos;
    assert_int_equal(cf_engine_process(e, x + pos * ch, y + pos * ch, m),
                     CF_OK);
    CHECK_CTX(want, mark, "cf_engine_process");
    pos += m;
    if (i == nc / 3) {
      assert_int_equal(cf_engine_set_kernel(e, k, block), CF_OK);
      CHECK_CTX(want, mark, "cf_engine_set_kernel");
    } else if (i == 2 * nc / 3) {
      cf_swap_prep *p = NULL;
      assert_int_equal(cf_engine_prepare_swap(e, k, &p), CF_OK);
      CHECK_CTX(want, mark, "cf_engine_prepare_swap");
      assert_int_equal(cf_engine_set_prepared(e, p, 0), CF_OK);
      CHECK_CTX(want, mark, "cf_engine_set_prepared");
      cf_swap_prep_free(p);
      CHECK_CTX(want, mark, "cf_swap_prep_free");
    }
  }
  size_t w = 0;
  assert_int_equal(cf_engine_drain(e, y + n * ch, tail, &w), CF_OK);
  CHECK_CTX(want, mark, "cf_engine_drain");
  assert_int_equal(w, tail);
  cf_engine_reset(e);
  CHECK_CTX(want, mark, "cf_engine_reset");
  cf_engine_free(e);
  CHECK_CTX(want, mark, "cf_engine_free");
  cf_kernel_free(k);

  double er = ref_worst_channel_l2(x, y, n, ch, h, len, lat);
  if (!(er <= 1e-5))
    fail_msg("audio: %u channels, %zu taps, block %u: error %g (seed %llu)", ch,
             len, block, er, (unsigned long long)seed);
  free(h), free(x), free(y);
}

/* ---- video ------------------------------------------------------------- */

/* One GRAY32F stream on device `dev`: random size, border, depth (0..2),
 * algorithm (auto or the FFT) and kernel, a swap to another shape after the
 * second frame (from the next frame on); each output frame against the float64
 * reference with the kernel in force for it. */
static void video_stream(ref_rng *r, int dev, void *want)
{
  unsigned long long mark = foreign_now();
  cf_video_config cfg;
  cf_video_config_init(&cfg);
  cfg.format = CF_PIX_GRAY32F;
  cfg.width = (unsigned)ref_rng_range(r, 8, quick ? 48 : 160);
  cfg.height = (unsigned)ref_rng_range(r, 8, quick ? 48 : 300);
  cfg.border = (cf_border)ref_rng_range(r, 0, CF_BORDER_WRAP);
  cfg.cval = ref_rng_sym(r);
  cfg.backend = CF_BACKEND_CUDA;
  cfg.device_id = dev;
  cfg.pipeline_depth = (unsigned)ref_rng_range(r, 0, 2);
  /* cuFFT's plans and transforms too, where they are forced */
  cfg.algorithm = ref_rng_range(r, 0, 1) ? CF_ALGO2D_FFT : CF_ALGO2D_AUTO;
  enum { FRAMES = 5 };
  unsigned kh[2], kw[2];
  float *taps[2];
  cf_kernel2d *k[2];
  for (int i = 0; i < 2; i++) {
    kh[i] = (unsigned)ref_rng_range(r, 1, 9);
    kw[i] = (unsigned)ref_rng_range(r, 1, 9);
    taps[i] = malloc((size_t)kh[i] * kw[i] * sizeof(float));
    assert_non_null(taps[i]);
    ref_rng_fill(r, taps[i], (size_t)kh[i] * kw[i]);
    assert_int_equal(cf_kernel2d_new(1, kh[i], kw[i], taps[i], &k[i]), CF_OK);
  }
  cf_engine *e = NULL;
  cf_status s = cf_engine_new_video(&cfg, k[0], &e);
  if (s != CF_OK)
    fail_msg("video engine: %s: %s", cf_status_name(s), cf_last_error());
  CHECK_CTX(want, mark, "cf_engine_new_video");
  size_t px = (size_t)cfg.width * cfg.height;
  float *in = malloc(FRAMES * px * sizeof(float));
  float *out = calloc(FRAMES * px, sizeof(float));
  assert_non_null(in);
  assert_non_null(out);
  ref_rng_fill(r, in, FRAMES * px);
  int kernel_of[FRAMES];
  unsigned got = 0;
  for (unsigned f = 0; f < FRAMES; f++) {
    if (f == 2) {
      assert_int_equal(cf_engine_set_kernel2d(e, k[1]), CF_OK);
      CHECK_CTX(want, mark, "cf_engine_set_kernel2d");
    }
    kernel_of[f] = f >= 2;
    cf_frame fi, fo;
    cf_frame_layout(cfg.format, cfg.width, cfg.height, in + f * px, &fi);
    /* pipelined: this call writes frame f - depth */
    unsigned o = f >= cfg.pipeline_depth ? f - cfg.pipeline_depth : 0;
    cf_frame_layout(cfg.format, cfg.width, cfg.height, out + o * px, &fo);
    cf_status ps = cf_engine_process_frame(e, &fi, &fo);
    if (ps != CF_OK)
      fail_msg("frame %u: %s: %s", f, cf_status_name(ps), cf_last_error());
    CHECK_CTX(want, mark, "cf_engine_process_frame");
    if (f >= cfg.pipeline_depth)
      got++;
  }
  for (int more = 1; more;) {
    cf_frame fo;
    cf_frame_layout(cfg.format, cfg.width, cfg.height,
                    out + (got < FRAMES ? got : 0) * px, &fo);
    assert_int_equal(cf_engine_flush_frame(e, &fo, &more), CF_OK);
    CHECK_CTX(want, mark, "cf_engine_flush_frame");
    got += (unsigned)more;
  }
  assert_int_equal(got, FRAMES);
  cf_engine_reset(e);
  CHECK_CTX(want, mark, "cf_engine_reset");
  cf_engine_free(e);
  CHECK_CTX(want, mark, "cf_engine_free");

  double *xd = malloc(px * sizeof *xd), *yd = malloc(px * sizeof *yd);
  double *kd = malloc(81 * sizeof *kd);
  assert_non_null(xd);
  assert_non_null(yd);
  assert_non_null(kd);
  for (unsigned f = 0; f < FRAMES; f++) {
    int j = kernel_of[f];
    for (size_t i = 0; i < (size_t)kh[j] * kw[j]; i++)
      kd[i] = taps[j][i];
    for (size_t i = 0; i < px; i++)
      xd[i] = in[f * px + i];
    ref2d_convolve(xd, cfg.width, cfg.height, kd, kh[j], kw[j], cfg.border,
                   cfg.cval, yd, 0);
    double er = ref_rel_l2(out + f * px, 1, yd, 1, px);
    if (!(er <= 2e-5))
      fail_msg("video: %ux%u, %s border, %s, depth %u, frame %u (kernel "
               "%ux%u): error %g (seed %llu)",
               cfg.width, cfg.height, cf_border_name(cfg.border),
               cf_algorithm2d_name(cfg.algorithm), cfg.pipeline_depth, f, kh[j],
               kw[j], er, (unsigned long long)seed);
  }
  free(xd), free(yd), free(kd);
  free(in), free(out);
  for (int i = 0; i < 2; i++) {
    cf_kernel2d_free(k[i]);
    free(taps[i]);
  }
}

/* ---- pinned memory ----------------------------------------------------- */

static void pinned_blocks(ref_rng *r, void *want)
{
  unsigned long long mark = foreign_now();
  /* sizes past the allocator's caches' classes as well as within */
  for (int i = 0; i < 4; i++) {
    size_t bytes = ref_rng_range(r, 1, (size_t)1 << (12 + 4 * (i & 1)));
    int pinned = 0;
    unsigned char *p = cf_host_alloc(bytes, &pinned);
    assert_non_null(p);
    CHECK_CTX(want, mark, "cf_host_alloc");
    assert_true(pinned);
    memset(p, 0x5a, bytes);
    cf_host_free(p);
    CHECK_CTX(want, mark, "cf_host_free");
  }
}

static void all_calls(int dev, void *want, uint64_t salt)
{
  ref_rng r;
  ref_rng_init(&r, seed ^ salt);
  want_dev = device_now();
  pinned_blocks(&r, want);
  for (int i = 0; i < (quick ? 1 : 3); i++) {
    audio_stream(&r, dev, want);
    video_stream(&r, dev, want);
  }
}

/* ---- the cases --------------------------------------------------------- */

/* A context of the application's own on device 0 is current. */
static void test_own_context(void **state)
{
  (void)state;
  void *mine = NULL;
  assert_int_equal(drv.create(&mine, 0, 0), 0); /* created current */
  assert_ptr_equal(current(), mine);
  all_calls(0, mine, 1);
  void *popped = NULL;
  assert_int_equal(drv.pop(&popped), 0);
  assert_ptr_equal(popped, mine);
  assert_int_equal(drv.destroy(mine), 0);
}

/* No context current (the thread's stack emptied first: the runtime may
 * have bound one when it started): none after either. */
static void test_no_context(void **state)
{
  (void)state;
  while (current() != NULL)
    assert_int_equal(drv.set(NULL), 0); /* pops */
  all_calls(0, NULL, 2);
}

/* The caller works on device 0 (its primary context current; then none
 * current, device 0 the runtime's for the thread), the engines on device
 * 1. */
static void test_other_device(void **state)
{
  (void)state;
  if (cf_device_count(NULL) < 2) {
    printf("skipped: one CUDA device here; engines on another device than "
           "the caller's need two\n");
    skip();
  }
  assert_int_equal(cudaSetDevice(0), cudaSuccess);
  assert_int_equal(cudaFree(NULL), cudaSuccess); /* the context made */
  void *primary0 = current();
  assert_non_null(primary0);
  all_calls(1, primary0, 3); /* which checks cudaGetDevice() too */
  /* none current, the runtime's device for the thread 0 (its primary
   * context exists): both as they were after */
  while (current() != NULL)
    assert_int_equal(drv.set(NULL), 0);
  assert_int_equal(device_now(), 0);
  all_calls(1, NULL, 4); /* which checks cudaGetDevice() after each call */
}

/* An error the application's own runtime calls left on the thread (not
 * read back with cudaGetLastError) before each call: not the engines',
 * every call still works (cf_cuda_enter forgets it; the launchers return
 * cudaGetLastError(), which would hand it to the first launch: the engine
 * stopped with CF_E_DEVICE, or auto on the CPU). The primary context of
 * device 0 current. */
static void test_pending_error(void **state)
{
  (void)state;
  assert_int_equal(cudaSetDevice(0), cudaSuccess);
  assert_int_equal(cudaFree(NULL), cudaSuccess); /* the context made */
  void *primary0 = current();
  assert_non_null(primary0);
  pending_error = 1;
  leave_error();
  all_calls(0, primary0, 5);
  pending_error = 0;
  (void)cudaGetLastError();
}

/* device-id one past the last device: backend cuda refused as unavailable,
 * the range named (cudaSetDevice's "invalid device ordinal" as a device
 * fault, CF_E_DEVICE, was the message with an id allowed one too far),
 * audio and video; the caller's context as it was. */
static void test_device_range(void **state)
{
  (void)state;
  int n = cf_device_count(NULL);
  void *want = current();
  want_dev = device_now();
  unsigned long long mark = foreign_now();
  float h[3] = {0.5f, -0.25f, 0.125f};
  cf_kernel *k = NULL;
  assert_int_equal(cf_kernel_new_shared(h, 3, &k), CF_OK);
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.backend = CF_BACKEND_CUDA;
  cfg.device_id = n;
  cf_engine *e = NULL;
  cf_status s = cf_engine_new_audio(&cfg, k, &e);
  if (s != CF_E_UNAVAILABLE || !strstr(cf_last_error(), "out of range"))
    fail_msg("audio, device-id %d of %d devices: %s: %s, want "
             "CF_E_UNAVAILABLE naming the range",
             n, n, cf_status_name(s), s == CF_OK ? "" : cf_last_error());
  CHECK_CTX(want, mark, "cf_engine_new_audio (device-id out of range)");
  cf_kernel_free(k);
  cf_kernel2d *k2 = NULL;
  assert_int_equal(cf_kernel2d_new(1, 1, 3, h, &k2), CF_OK);
  cf_video_config vc;
  cf_video_config_init(&vc);
  vc.format = CF_PIX_GRAY32F;
  vc.width = 16;
  vc.height = 8;
  vc.backend = CF_BACKEND_CUDA;
  vc.device_id = n;
  s = cf_engine_new_video(&vc, k2, &e);
  if (s != CF_E_UNAVAILABLE || !strstr(cf_last_error(), "out of range"))
    fail_msg("video, device-id %d of %d devices: %s: %s, want "
             "CF_E_UNAVAILABLE naming the range",
             n, n, cf_status_name(s), s == CF_OK ? "" : cf_last_error());
  CHECK_CTX(want, mark, "cf_engine_new_video (device-id out of range)");
  cf_kernel2d_free(k2);
}

#endif /* CF_TEST_NO_CUDART */

int main(void)
{
  const char *why = NULL;
#ifdef CF_TEST_NO_CUDART
  (void)why;
  printf("skipped: built without CUDA\n");
  return 77;
#else
  /* two devices on the emulated one (read there once, ignored on a GPU) */
  setenv("CF_EMU_DEVICES", "2", 0);
  if (cf_device_count(&why) == 0) {
    printf("skipped: no CUDA device: %s\n", why ? why : "unknown");
    return 77;
  }
  char reason[256];
  if (!load_driver(reason, sizeof reason)) {
    printf("skipped: %s\n", reason);
    return 77;
  }
  seed = ref_seed();
  const char *q = getenv("CF_TEST_QUICK");
  quick = q && *q && strcmp(q, "0") != 0;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_context),
      cmocka_unit_test(test_own_context),
      cmocka_unit_test(test_other_device),
      cmocka_unit_test(test_pending_error),
      cmocka_unit_test(test_device_range),
  };
  test_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
