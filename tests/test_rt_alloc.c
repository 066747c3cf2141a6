/* engine.h promises that cf_engine_process() never allocates (a real-time
 * audio callback, the daemon's PortAudio one among them, must not wait on
 * the allocator's locks or the kernel). This suite counts every call of
 * the malloc family, in every thread, while CPU engines stream: random
 * kernels, paths, thread counts, pipeline depths (the front's delay) and
 * chunkings, a reset and a kernel swap with its crossfade in the counted
 * stretch; the video engine the same per frame, live and pipelined,
 * the FFT path included. The audio
 * output is checked against the float64 reference, GRAY32F frames
 * against ref2d. And cf_host_alloc, which keeps freed blocks: audio-sized
 * ones cost no heap allocation once a stream runs. And prepared swaps:
 * set_prepared and the chunks after it (test_prepared; built again as
 * rt-alloc-cudaemu, CF_RT_EMU, for set_prepared with backend auto on the
 * emulated device), and video's set_prepared2d (test_prepared2d: on the
 * CPU here, with backend auto on the emulated device there); there what
 * the emulated runtime allocates inside its own functions (its queues of
 * device work) is not counted.
 *
 * And a kernel swap that runs out of memory (each allocation in turn
 * made to fail: test_swap2d_nomem) leaves the kernel in force running;
 * engine creation that runs out of memory (test_new_nomem: each
 * allocation of cf_engine_new_audio / _video in turn) says CF_E_NOMEM
 * and leaks nothing (a count of live blocks).
 *
 * The counting replaces malloc, calloc, realloc, free, posix_memalign,
 * aligned_alloc and memalign for the whole process (glibc's __libc_*
 * underneath). Sanitizer builds keep their own allocator: there the suite
 * says skipped. Suite 'rt' (not under valgrind, which replaces them too). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#include "check.h"
#include "ref.h"
#include "ref2d.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RT_NO_COUNT 1
#endif

static atomic_int counting;
static atomic_long allocs;
/* test_swap2d_nomem: while fail_in is n > 0, the n-th allocation from
 * then on fails (and sets failed; the shim below, not in sanitizer
 * builds, where the suite is skipped). */
static atomic_long fail_in;
static atomic_int failed;
/* test_new_nomem: blocks allocated and not yet freed (while counting) */
static atomic_long live;

#ifndef RT_NO_COUNT
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);

/* visible: the build hides symbols by default, and these must replace the
 * C library's for libcudafilter too */
#define RT_EXPORT __attribute__((visibility("default")))

/* The emulated runtime's own (rt-alloc-cudaemu): its queues stand for
 * the device's work, as a driver's memory is not the caller's. */
int cf_emu_in_runtime(void) __attribute__((weak));

static void note(void)
{
  if (atomic_load_explicit(&counting, memory_order_relaxed) &&
      !(cf_emu_in_runtime && cf_emu_in_runtime()))
    atomic_fetch_add(&allocs, 1);
}

static void *born(void *p)
{
  if (p)
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
  return p;
}

static int fail_here(void)
{
  if (atomic_load_explicit(&fail_in, memory_order_relaxed) <= 0 ||
      atomic_fetch_sub(&fail_in, 1) != 1)
    return 0;
  atomic_store(&failed, 1);
  return 1;
}

RT_EXPORT void *malloc(size_t n)
{
  note();
  if (fail_here())
    return NULL;
  return born(__libc_malloc(n));
}

RT_EXPORT void *calloc(size_t a, size_t b)
{
  note();
  if (fail_here())
    return NULL;
  return born(__libc_calloc(a, b));
}

RT_EXPORT void *realloc(void *p, size_t n)
{
  note();
  if (fail_here())
    return NULL;
  void *q = __libc_realloc(p, n);
  if (!p && q)
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
  else if (p && !n && !q)
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
  return q;
}

RT_EXPORT void free(void *p)
{
  if (p) {
    note();
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
  }
  __libc_free(p);
}

RT_EXPORT int posix_memalign(void **p, size_t align, size_t n)
{
  note();
  if (align < sizeof(void *) || (align & (align - 1)))
    return EINVAL;
  if (fail_here())
    return ENOMEM;
  void *q = __libc_memalign(align, n);
  if (!q)
    return ENOMEM;
  *p = born(q);
  return 0;
}

RT_EXPORT void *aligned_alloc(size_t align, size_t n)
{
  note();
  if (fail_here())
    return NULL;
  return born(__libc_memalign(align, n));
}

RT_EXPORT void *memalign(size_t align, size_t n)
{
  note();
  if (fail_here())
    return NULL;
  return born(__libc_memalign(align, n));
}
#endif

static ref_rng rng;

/* The cudaemu build runs test_prepared alone: the emulated device
 * allocates for every operation it queues. */
#ifdef CF_RT_EMU
#define PLAIN_BUILD_ONLY()                                                     \
  do {                                                                         \
    print_message("skipped: counted in the plain build (rt-alloc); the "       \
                  "emulated device allocates as it runs\n");                   \
    skip();                                                                    \
  } while (0)
#else
#define PLAIN_BUILD_ONLY() ((void)0)
#endif

/* The audio swap tests' engines: backend auto on the emulated device (the
 * cudaemu build), the CPU otherwise. */
#ifdef CF_RT_EMU
#define RT_AUDIO_BACKEND CF_BACKEND_AUTO
#else
#define RT_AUDIO_BACKEND CF_BACKEND_CPU
#endif

static void count_from_here(void)
{
  atomic_store(&allocs, 0);
  atomic_store(&counting, 1);
}

static long counted(void)
{
  atomic_store(&counting, 0);
  return atomic_load(&allocs);
}

static float *random_taps(size_t len)
{
  float *h = xalloc(len * sizeof *h);
  for (size_t i = 0; i < len; i++)
    h[i] = ref_rng_sym(&rng) / (float)(1 + i / 64);
  return h;
}

/* y (n frames of ch) is x through h delayed by lat, each channel within
 * 2e-5 of the float64 reference (relative L2). */
static void check_output(const float *x, const float *y, size_t n, unsigned ch,
                         const float *h, size_t len, size_t lat,
                         const char *what)
{
  float *xc = xalloc(n * sizeof *xc);
  double *want = xalloc(n * sizeof *want);
  for (unsigned j = 0; j < ch; j++) {
    for (size_t i = 0; i < n; i++)
      xc[i] = x[i * ch + j];
    ref_conv(xc, n, h, len, want, n - lat);
    double err = ref_rel_l2(y + lat * ch + j, ch, want, 1, n - lat);
    CHECK(err <= 2e-5, "channel %u%s: relative L2 error %.3g", j, what, err);
  }
  free(xc);
  free(want);
}

/* Random audio engines: chunks after the first few, a reset, a kernel
 * swap (the call itself may allocate) and its crossfade: no allocation. */
static void test_audio(void **state)
{
  (void)state;
  PLAIN_BUILD_ONLY();
  static const cf_algorithm algos[] = {CF_ALGO_DIRECT, CF_ALGO_FFT_UNIFORM,
                                       CF_ALGO_FFT_NONUNIFORM, CF_ALGO_AUTO};
  for (unsigned c = 0; c < 12; c++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 3);
    /* powers of two, and any size (primes such as 61 or 1009 once made
     * FFTW allocate in every transform, Rader's algorithm) */
    static const unsigned odd[] = {61, 101, 1009, 3 << 7};
    unsigned block = c % 2        ? 1u << ref_rng_range(&rng, 4, 10)
                     : c % 4 == 0 ? odd[c / 4 % 4]
                                  : (unsigned)ref_rng_range(&rng, 16, 1100);
    size_t len = c % 3 == 0   ? ref_rng_range(&rng, 1, 64)
                 : c % 3 == 1 ? ref_rng_range(&rng, 65, 4000)
                              : ref_rng_range(&rng, 4001, 70000);
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.channels = ch;
    cfg.block_size = block;
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = algos[c % 4];
    if (cfg.algorithm == CF_ALGO_DIRECT && len > 4000)
      cfg.algorithm = CF_ALGO_AUTO;
    cfg.threads = (unsigned)ref_rng_range(&rng, 0, 2);
    /* a third with pipeline_depth: the front's delay ring */
    cfg.pipeline_depth = c % 3 == 2 ? (unsigned)ref_rng_range(&rng, 1, 3) : 0;
    float *h = random_taps(len);
    cf_kernel *k = NULL;
    CHECK(cf_kernel_new_shared(h, len, &k) == CF_OK, "kernel: %s",
          cf_last_error());
    cf_engine *e = NULL;
    CHECK(cf_engine_new_audio(&cfg, k, &e) == CF_OK, "engine: %s",
          cf_last_error());
    cf_kernel_free(k);
    set_case("%s, %u ch, %zu taps", cf_engine_describe(e), ch, len);
    size_t n = ref_rng_range(&rng, 20000, 60000), lat = cf_engine_latency(e);
    float *x = xalloc(n * ch * sizeof *x), *y = xalloc(n * ch * sizeof *y);
    ref_rng_fill(&rng, x, n * ch);
    size_t sizes[4096];
    size_t nc = ref_chunking(&rng, n, block, sizes, 4096), pos = 0;
    for (size_t i = 0; i < nc; i++) {
      if (i == 3)
        count_from_here();
      CHECK(cf_engine_process(e, x + pos * ch, y + pos * ch, sizes[i]) == CF_OK,
            "process: %s", cf_last_error());
      pos += sizes[i];
    }
    long got = counted();
    CHECK(got == 0, "%ld allocations or frees in %zu chunks", got, nc - 3);
    /* what came out: the stream delayed by the latency */
    check_output(x, y, n, ch, h, len, lat, "");
    /* a reset, then a swap with a crossfade, then chunks again */
    CHECK(cf_engine_reset(e) == CF_OK, "reset: %s", cf_last_error());
    float *h2 = random_taps(len);
    CHECK(cf_kernel_new_shared(h2, len, &k) == CF_OK, "kernel: %s",
          cf_last_error());
    CHECK(cf_engine_set_kernel(e, k, ref_rng_range(&rng, 0, 5000)) == CF_OK,
          "set_kernel: %s", cf_last_error());
    cf_kernel_free(k);
    count_from_here();
    pos = 0;
    for (size_t i = 0; i < nc; i++) {
      CHECK(cf_engine_process(e, x + pos * ch, y + pos * ch, sizes[i]) == CF_OK,
            "process after the swap: %s", cf_last_error());
      pos += sizes[i];
    }
    got = counted();
    CHECK(got == 0,
          "%ld allocations or frees in %zu chunks after a reset "
          "and a swap",
          got, nc);
    cf_engine_free(e);
    free(h);
    free(h2);
    free(x);
    free(y);
  }
}

/* Kernel swaps built ahead (engine.h, cf_engine_prepare_swap): the
 * prepare and the free outside the counted stretch, set_prepared and the
 * chunks after it inside. On the CPU backend (this build), and with
 * backend auto on the emulated CUDA device (the cudaemu build,
 * CF_RT_EMU): there only set_prepared is counted (the emulator allocates
 * for every operation it queues), the call that keeps the CPU fallback's
 * stage, which once copied the kernel there. Swaps to the same kernel
 * with random crossfades, some before the last one's ended: the output
 * stays the convolution, checked against the float64 reference. */
static void test_prepared(void **state)
{
  (void)state;
  const cf_backend be = RT_AUDIO_BACKEND;
  for (unsigned c = 0; c < 6; c++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 3);
    unsigned block = 1u << ref_rng_range(&rng, 5, 9);
    size_t len =
        c % 2 ? ref_rng_range(&rng, 1, 300) : ref_rng_range(&rng, 301, 6000);
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.channels = ch;
    cfg.block_size = block;
    cfg.backend = be;
    cfg.threads = (unsigned)ref_rng_range(&rng, 0, 2);
    /* a third with pipeline_depth: the front's delay ring */
    cfg.pipeline_depth = c % 3 == 2 ? (unsigned)ref_rng_range(&rng, 1, 3) : 0;
    float *h = random_taps(len);
    cf_kernel *k = NULL;
    CHECK(cf_kernel_new_shared(h, len, &k) == CF_OK, "kernel: %s",
          cf_last_error());
    cf_engine *e = NULL;
    CHECK(cf_engine_new_audio(&cfg, k, &e) == CF_OK, "engine: %s",
          cf_last_error());
#ifdef CF_RT_EMU
    CHECK(cf_engine_backend(e) == CF_BACKEND_CUDA,
          "backend auto on the emulated device: %s", cf_engine_describe(e));
#endif
    set_case("%s, %u ch, %zu taps", cf_engine_describe(e), ch, len);
    size_t n = ref_rng_range(&rng, 20000, 40000), lat = cf_engine_latency(e);
    float *x = xalloc(n * ch * sizeof *x), *y = xalloc(n * ch * sizeof *y);
    ref_rng_fill(&rng, x, n * ch);
    size_t sizes[4096];
    /* chunk 3 is the first with a swap: a chunking of 3 chunks or fewer
     * (a random size can take the rest) is drawn again (seed 1795996644
     * failed with "no swap in 3 chunks") */
    size_t nc = 0, pos = 0;
    for (unsigned t = 0; t < 100 && nc < 4; t++)
      nc = ref_chunking(&rng, n, block, sizes, 4096);
    CHECK(nc >= 4, "100 chunkings of %zu frames in 3 chunks or fewer", n);
    unsigned swaps = 0;
    for (size_t i = 0; i < nc; i++) {
      int swap = i >= 3 && i % 5 == 3;
      cf_swap_prep *p = NULL;
      if (swap)
        CHECK(cf_engine_prepare_swap(e, k, &p) == CF_OK, "prepare_swap: %s",
              cf_last_error());
#ifndef CF_RT_EMU
      if (i >= 3)
        count_from_here();
#else
      if (swap)
        count_from_here();
#endif
      if (swap)
        CHECK(cf_engine_set_prepared(e, p, ref_rng_range(&rng, 0, 3000)) ==
                  CF_OK,
              "set_prepared: %s", cf_last_error());
#ifdef CF_RT_EMU
      long got = swap ? counted() : 0;
#endif
      CHECK(cf_engine_process(e, x + pos * ch, y + pos * ch, sizes[i]) == CF_OK,
            "process: %s", cf_last_error());
#ifndef CF_RT_EMU
      long got = i >= 3 ? counted() : 0;
#endif
      CHECK(got == 0, "%ld allocations or frees in chunk %zu%s", got, i,
            swap ? ", with a prepared swap before it" : "");
      cf_swap_prep_free(p);
      swaps += swap;
      pos += sizes[i];
    }
    CHECK(swaps > 0, "no swap in %zu chunks", nc);
    check_output(x, y, n, ch, h, len, lat, " after the swaps");
    cf_kernel_free(k);
    cf_engine_free(e);
    free(h);
    free(x);
    free(y);
  }
}

/* A swap prepared, then a reset (a host's transport locate) before it is
 * made: on the CPU set_prepared keeps the prepared spectra, primed again
 * on the frames since the reset, and allocates nothing (it was a plain
 * set_kernel: 26 ms and 69 allocations at 480000 taps, QA). The same
 * kernel swapped in: the output after the reset stays the convolution of
 * the input since, checked against the float64 reference. */
static void test_prepared_after_reset(void **state)
{
  (void)state;
#ifdef CF_RT_EMU
  print_message("skipped: on the emulated device set_prepared does not "
                "replay (the device keeps no history)\n");
  skip();
#else
  for (unsigned c = 0; c < 4; c++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 3);
    unsigned block = 1u << ref_rng_range(&rng, 5, 10);
    size_t len = c % 2 ? ref_rng_range(&rng, 1, 300)
                       : ref_rng_range(&rng, 2000, 40000);
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.channels = ch;
    cfg.block_size = block;
    cfg.backend = CF_BACKEND_CPU;
    cfg.threads = (unsigned)ref_rng_range(&rng, 0, 2);
    float *h = random_taps(len);
    cf_kernel *k = NULL;
    CHECK(cf_kernel_new_shared(h, len, &k) == CF_OK, "kernel: %s",
          cf_last_error());
    cf_engine *e = NULL;
    CHECK(cf_engine_new_audio(&cfg, k, &e) == CF_OK, "engine: %s",
          cf_last_error());
    set_case("%s, %u ch, %zu taps", cf_engine_describe(e), ch, len);
    size_t before = ref_rng_range(&rng, 1000, 20000);
    size_t since = ref_rng_range(&rng, 0, 5000); /* after the reset */
    size_t n = since + ref_rng_range(&rng, 5000, 20000);
    size_t lat = cf_engine_latency(e);
    float *x = xalloc((before + n) * ch * sizeof *x),
          *y = xalloc((before + n) * ch * sizeof *y);
    ref_rng_fill(&rng, x, (before + n) * ch);
    CHECK(cf_engine_process(e, x, y, before) == CF_OK, "process: %s",
          cf_last_error());
    cf_swap_prep *p = NULL;
    CHECK(cf_engine_prepare_swap(e, k, &p) == CF_OK, "prepare_swap: %s",
          cf_last_error());
    CHECK(cf_engine_reset(e) == CF_OK, "reset: %s", cf_last_error());
    const float *xr = x + before * ch;
    float *yr = y + before * ch;
    CHECK(cf_engine_process(e, xr, yr, since) == CF_OK, "process: %s",
          cf_last_error());
    count_from_here();
    CHECK(cf_engine_set_prepared(e, p, ref_rng_range(&rng, 0, 3000)) ==
              CF_OK,
          "set_prepared: %s", cf_last_error());
    CHECK(cf_engine_process(e, xr + since * ch, yr + since * ch, n - since) ==
              CF_OK,
          "process: %s", cf_last_error());
    long got = counted();
    CHECK(got == 0, "%ld allocations or frees in set_prepared after a reset "
          "(%zu frames since) and the %zu frames after it", got, since,
          n - since);
    cf_swap_prep_free(p);
    check_output(xr, yr, n, ch, h, len, lat, " after the reset and the swap");
    cf_kernel_free(k);
    cf_engine_free(e);
    free(h);
    free(x);
    free(y);
  }
#endif
}

/* A burst of prepared swaps, one per 64-frame chunk on an FFT engine of
 * latency 1023 (a knob dragged: 16 or more kernel sets in force at once,
 * then all retired): set_prepared hands every retired set to its p and
 * grows no list. It freed the sets past the 8 p held, in the engine's
 * thread, and realloc'ed its lists past 4, 8 and 16 sets in force. */
static void test_prepared_burst(void **state)
{
  (void)state;
  const cf_backend be = RT_AUDIO_BACKEND;
  size_t len = 2000, n = 40 * 64 + 8 * 1024;
  float *h = random_taps(len);
  cf_kernel *k = NULL;
  CHECK(cf_kernel_new_shared(h, len, &k) == CF_OK, "kernel: %s",
        cf_last_error());
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.block_size = 1024;
  cfg.algorithm = CF_ALGO_FFT_UNIFORM;
  cfg.backend = be;
  cfg.threads = 1;
  cf_engine *e = NULL;
  CHECK(cf_engine_new_audio(&cfg, k, &e) == CF_OK, "engine: %s",
        cf_last_error());
  set_case("burst: %s", cf_engine_describe(e));
  float *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y);
  ref_rng_fill(&rng, x, n);
  cf_swap_prep *p[48] = {NULL};
  size_t pos = 0;
  for (unsigned i = 0; pos < n; i++) {
    size_t m = i < 48 ? 64 : n - pos < 1024 ? n - pos : 1024;
    if (i < 48)
      CHECK(cf_engine_prepare_swap(e, k, &p[i]) == CF_OK, "prepare_swap: %s",
            cf_last_error());
    count_from_here();
    if (i < 48)
      CHECK(cf_engine_set_prepared(e, p[i], i % 3 ? 100 : 0) == CF_OK,
            "set_prepared: %s", cf_last_error());
#ifdef CF_RT_EMU
    long got = counted(); /* set_prepared's own: the device queues allocate */
#endif
    CHECK(cf_engine_process(e, x + pos, y + pos, m) == CF_OK, "process: %s",
          cf_last_error());
#ifndef CF_RT_EMU
    long got = counted();
#endif
    CHECK(got == 0, "%ld allocations or frees at chunk %u (frame %zu)%s", got,
          i, pos, i < 48 ? ", a prepared swap before it" : "");
    pos += m;
  }
  for (unsigned i = 0; i < 48; i++)
    cf_swap_prep_free(p[i]);
  check_output(x, y, n, 1, h, len, cf_engine_latency(e), " after the burst");
  cf_kernel_free(k);
  cf_engine_free(e);
  free(h);
  free(x);
  free(y);
}

/* Video kernel swaps built ahead (video.h, cf_engine_prepare_swap2d)
 * with backend auto on the emulated device (the cudaemu build), and on
 * the CPU backend (the plain build; the FFT path every other case). Only
 * set_prepared2d is counted (the emulator allocates for every operation
 * it queues, inside its own functions, which are not counted): on the
 * device the call that keeps the CPU fallback's record of the kernel,
 * which once copied the kernel there and freed the kernels no frame held
 * used any more, and, for a kernel of more temporal taps than any before,
 * lengthened its history there (and the device's ring through a plain
 * swap); on the CPU the call that was the plain swap, making the plan,
 * scratch, maps and history prepare_swap2d had made as a trial already
 * (QA). Random shapes and temporal lengths 1..3, pipeline depths 0..2;
 * every frame out against the float64 reference with the kernel it was
 * taken with. On the CPU the frames are counted too (but the first). */
static void test_prepared2d(void **state)
{
  (void)state;
  enum { NF = 14 };
  for (unsigned c = 0; c < 6; c++) {
    cf_video_config cfg;
    cf_video_config_init(&cfg);
    cfg.format = CF_PIX_GRAY32F;
    cfg.width = (unsigned)ref_rng_range(&rng, 8, 90);
    cfg.height = (unsigned)ref_rng_range(&rng, 8, 60);
#ifdef CF_RT_EMU
    cfg.backend = CF_BACKEND_AUTO;
#else
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = c % 2 ? CF_ALGO2D_FFT : CF_ALGO2D_AUTO;
#endif
    cfg.border = (cf_border)(ref_rng_u64(&rng) % 5);
    cfg.pipeline_depth = c % 3;
    float *taps[NF];
    unsigned t[NF], kh[NF], kw[NF];
    cf_kernel2d *k[NF];
    for (unsigned i = 0; i < NF; i++) { /* the kernel from frame i on */
      t[i] = (unsigned)ref_rng_range(&rng, 1, 3);
      kh[i] = (unsigned)ref_rng_range(&rng, 1, 9);
      kw[i] = (unsigned)ref_rng_range(&rng, 1, 9);
      size_t nt = (size_t)t[i] * kh[i] * kw[i];
      taps[i] = xalloc(nt * sizeof *taps[i]);
      for (size_t j = 0; j < nt; j++)
        taps[i][j] = (float)(ref_rng_sym(&rng) / (double)nt);
      CHECK(cf_kernel2d_new(t[i], kh[i], kw[i], taps[i], &k[i]) == CF_OK,
            "kernel: %s", cf_last_error());
    }
    cf_engine *e = NULL;
    CHECK(cf_engine_new_video(&cfg, k[0], &e) == CF_OK, "engine: %s",
          cf_last_error());
#ifdef CF_RT_EMU
    CHECK(cf_engine_backend(e) == CF_BACKEND_CUDA,
          "backend auto on the emulated device: %s", cf_engine_describe(e));
#endif
    ref2d_video *ref = ref2d_video_new(&cfg, t[0], kh[0], kw[0], taps[0]);
    CHECK(ref, "reference: out of memory");
    size_t np = (size_t)cfg.width * cfg.height;
    float *in = xalloc(np * sizeof *in), *out = xalloc(np * sizeof *out);
    float *scratch = xalloc(np * sizeof *scratch);
    double *want = xalloc(NF * np * sizeof *want);
    cf_frame fi, fo, fs;
    cf_frame_layout(cfg.format, cfg.width, cfg.height, in, &fi);
    cf_frame_layout(cfg.format, cfg.width, cfg.height, out, &fo);
    cf_frame_layout(cfg.format, cfg.width, cfg.height, scratch, &fs);
    unsigned swaps = 0, got_frames = 0;
    for (unsigned f = 0; f < NF; f++) {
      int swap = f >= 2 && f % 2 == 0;
      if (swap) {
        cf_swap_prep2d *p = NULL;
        CHECK(cf_engine_prepare_swap2d(e, k[f], &p) == CF_OK,
              "prepare_swap2d: %s", cf_last_error());
        count_from_here();
        cf_status s = cf_engine_set_prepared2d(e, p);
        long got = counted();
        CHECK(s == CF_OK, "set_prepared2d: %s", cf_last_error());
        CHECK(got == 0,
              "%ld allocations or frees in set_prepared2d before frame %u "
              "(%s)",
              got, f, cf_engine_describe(e));
        cf_swap_prep2d_free(p);
        CHECK(ref2d_video_set_kernel(ref, t[f], kh[f], kw[f], taps[f]),
              "reference: out of memory");
        swaps++;
      }
      ref_rng_fill(&rng, in, np);
      double *val[3] = {want + f * np, NULL, NULL};
      CHECK(ref2d_video_frame(ref, &fi, &fs, val), "reference: out of memory");
      memset(out, 0xff, np * sizeof *out); /* NaN where nothing is written */
#ifndef CF_RT_EMU
      /* the frames too (a shorter kernel's first puts the history of its
       * length, made with the swap, in force and sets the longer one
       * aside: nothing freed there); a pipelined engine's worker is
       * counted while the call runs, and in set_prepared2d (which waits
       * for it) */
      if (f >= 1)
        count_from_here();
#endif
      cf_status ps = cf_engine_process_frame(e, &fi, &fo);
#ifndef CF_RT_EMU
      if (f >= 1) {
        long fgot = counted();
        CHECK(fgot == 0,
              "%ld allocations or frees in frame %u, %u swaps "
              "(%s)",
              fgot, f, swaps, cf_engine_describe(e));
      }
#endif
      CHECK(ps == CF_OK, "frame %u: %s", f, cf_last_error());
      if (f < cfg.pipeline_depth)
        continue;
      /* frame f - depth comes out, with the kernel it went in with */
      unsigned w = f - cfg.pipeline_depth;
      double err = ref_rel_l2(out, 1, want + w * np, 1, np);
      CHECK(err <= 2e-5, "frame %u (out at frame %u, %u swaps): relative L2 "
            "error %.3g (%s)", w, f, swaps, err, cf_engine_describe(e));
      got_frames++;
    }
    CHECK(swaps > 0 && got_frames > 0, "no swap or no frame");
    cf_engine_free(e);
    ref2d_video_free(ref);
    for (unsigned i = 0; i < NF; i++) {
      cf_kernel2d_free(k[i]);
      free(taps[i]);
    }
    free(in);
    free(out);
    free(scratch);
    free(want);
  }
}

/* Video engines on random formats, paths, temporal depths and pipeline
 * depths: no allocation per frame after the first, on every path. */
static void test_video(void **state)
{
  (void)state;
  PLAIN_BUILD_ONLY();
  static const cf_pixel_format fmts[] = {CF_PIX_GRAY32F, CF_PIX_GRAY8,
                                         CF_PIX_RGBA,    CF_PIX_I420,
                                         CF_PIX_NV12,    CF_PIX_GRAY16_LE};
  static const cf_algorithm2d algos[] = {CF_ALGO2D_DIRECT, CF_ALGO2D_SEPARABLE,
                                         CF_ALGO2D_FFT, CF_ALGO2D_AUTO};
  for (unsigned c = 0; c < 16; c++) {
    cf_video_config cfg;
    cf_video_config_init(&cfg);
    cfg.format = c < 4 ? CF_PIX_GRAY32F : fmts[ref_rng_u64(&rng) % 6];
    cfg.width = (unsigned)ref_rng_range(&rng, 2, 200) * 2;
    cfg.height = (unsigned)ref_rng_range(&rng, 2, 150) * 2;
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = algos[c % 4];
    cfg.threads = (unsigned)ref_rng_range(&rng, 0, 2);
    cfg.border = (cf_border)(ref_rng_u64(&rng) % 5);
    cfg.pipeline_depth = c < 4 ? 0 : (unsigned)ref_rng_range(&rng, 0, 2);
    unsigned t = c < 4 ? 1 : (unsigned)ref_rng_range(&rng, 1, 3);
    unsigned kh = (unsigned)ref_rng_range(&rng, 1, 15);
    unsigned kw = (unsigned)ref_rng_range(&rng, 1, 15);
    size_t nt = (size_t)t * kh * kw;
    float *taps = xalloc(nt * sizeof *taps);
    for (size_t i = 0; i < nt; i++) /* rank 1, so separable applies */
      taps[i] =
          (float)(1 + i / kw % 3) * (float)(1 + i % kw % 4) / (float)(8 * nt);
    cf_kernel2d *k = NULL;
    CHECK(cf_kernel2d_new(t, kh, kw, taps, &k) == CF_OK, "kernel: %s",
          cf_last_error());
    cf_engine *e = NULL;
    CHECK(cf_engine_new_video(&cfg, k, &e) == CF_OK, "engine: %s",
          cf_last_error());
    cf_kernel2d_free(k);
    set_case("%s", cf_engine_describe(e));
    size_t bytes =
        cf_frame_layout(cfg.format, cfg.width, cfg.height, NULL, NULL);
    uint8_t *in = xalloc(bytes), *out = xalloc(bytes);
    if (cfg.format == CF_PIX_GRAY32F)
      ref_rng_fill(&rng, (float *)in, bytes / sizeof(float));
    else
      for (size_t i = 0; i < bytes; i++)
        in[i] = (uint8_t)ref_rng_u64(&rng);
    cf_frame fi, fo;
    cf_frame_layout(cfg.format, cfg.width, cfg.height, in, &fi);
    cf_frame_layout(cfg.format, cfg.width, cfg.height, out, &fo);
    for (unsigned f = 0; f < 12; f++) {
      if (f == 1)
        count_from_here();
      CHECK(cf_engine_process_frame(e, &fi, &fo) == CF_OK, "frame %u: %s", f,
            cf_last_error());
    }
    long got = counted();
    /* the FFT path too: FFTW's buffered 2D plans allocated scratch in each
     * transform, and aborted the process where it could not be had */
    CHECK(got == 0, "%ld allocations or frees in 11 frames", got);
    if (cfg.format == CF_PIX_GRAY32F && t == 1 && !cfg.pipeline_depth) {
      /* the same frame each time: the spatial convolution */
      size_t np = (size_t)cfg.width * cfg.height;
      double *xd = xalloc(np * sizeof *xd), *kd = xalloc(nt * sizeof *kd);
      double *want = xalloc(np * sizeof *want);
      for (size_t i = 0; i < np; i++)
        xd[i] = ((const float *)in)[i];
      for (size_t i = 0; i < nt; i++)
        kd[i] = taps[i];
      ref2d_convolve(xd, cfg.width, cfg.height, kd, kh, kw, cfg.border,
                     cfg.cval, want, 0);
      double err = ref_rel_l2((const float *)out, 1, want, 1, np);
      CHECK(err <= 2e-5, "relative L2 error %.3g", err);
      free(xd);
      free(kd);
      free(want);
    }
    cf_engine_free(e);
    free(taps);
    free(in);
    free(out);
  }
}

/* cf_host_alloc (memory.h): each block the caller's alone while it lives,
 * 64-byte aligned, and audio-sized blocks freed are handed out again: a
 * buffer per audio block (cudafir's output, and upstream's in the memory
 * it proposes) costs no heap allocation once the stream runs, pinned or
 * not. Blocks of random sizes within a factor of two, freed in random
 * order, at most LIVE at a time; then frame-sized blocks, larger than the
 * heap cache, which still work. */
static void test_host_memory(void **state)
{
  (void)state;
  PLAIN_BUILD_ONLY();
  enum { LIVE = 24 };
  unsigned char *p[LIVE] = {NULL};
  size_t n[LIVE] = {0};
  unsigned tag[LIVE] = {0}, next = 0;
  for (int phase = 0; phase < 3; phase++) {
    /* phase 0 warms the cache; 1 is counted; 2 makes frames */
    if (phase == 1)
      count_from_here();
    unsigned rounds = phase == 2 ? 40 : 3000;
    for (unsigned k = 0; k < rounds; k++) {
      unsigned i = (unsigned)ref_rng_range(&rng, 0, phase == 2 ? 3 : LIVE - 1);
      if (p[i]) {
        for (size_t b = 0; b < n[i]; b++)
          CHECK(p[i][b] == (unsigned char)(tag[i] * 131u + b * 7u + (b >> 8)),
                "block %u (%zu bytes): byte %zu changed while it was live",
                tag[i], n[i], b);
        cf_host_free(p[i]);
        p[i] = NULL;
        continue;
      }
      n[i] = phase == 2 ? ref_rng_range(&rng, 5u << 20, 9u << 20)
                        : ref_rng_range(&rng, 3000, 6000);
      int pinned = -1;
      p[i] = cf_host_alloc(n[i], &pinned);
      CHECK(p[i] && (uintptr_t)p[i] % 64 == 0 && (pinned == 0 || pinned == 1),
            "cf_host_alloc(%zu): %p, pinned %d: %s", n[i], (void *)p[i], pinned,
            p[i] ? "" : cf_last_error());
      tag[i] = ++next;
      for (size_t b = 0; b < n[i]; b++)
        p[i][b] = (unsigned char)(tag[i] * 131u + b * 7u + (b >> 8));
    }
    if (phase == 1) {
      long a = counted();
      print_message("host memory: 3000 cf_host_alloc and cf_host_free calls "
                    "(3000-6000 bytes): %ld calls of the malloc family\n",
                    a);
      CHECK(a <= 2 * LIVE,
            "3000 cf_host_alloc and cf_host_free calls (3000-6000 bytes), "
            "at most %d live, made %ld calls of the malloc family (want <= %d: "
            "freed blocks reused)",
            LIVE, a, 2 * LIVE);
    }
  }
  for (unsigned i = 0; i < LIVE; i++)
    cf_host_free(p[i]);
}

/* A video kernel swap that runs out of memory leaves the kernel in force
 * running (the CPU's set_kernel2d once freed the old plan before making
 * the border maps and the temporal history of the new one: a failure
 * there left maps missing and rings of two sizes, and the next frame
 * crashed). Each allocation of set_kernel2d (and of prepare_swap2d with
 * set_prepared2d) in turn fails; the frames after it are checked against
 * the reference, with the old kernel where the swap failed. Every path;
 * on the FFT path the tile sizes are planned first (FFTW's planner aborts
 * when its malloc fails), and the kernel's spectra, which run FFTW's
 * transforms, once aborted the process too (buffered 2D plans allocated
 * their scratch in each transform). */
static void test_swap2d_nomem(void **state)
{
  (void)state;
  PLAIN_BUILD_ONLY();
  static const cf_algorithm2d algos[] = {CF_ALGO2D_DIRECT,
                                         CF_ALGO2D_SEPARABLE, CF_ALGO2D_FFT};
  const unsigned t[2] = {1, 3}, kh[2] = {5, 7}, kw[2] = {3, 4};
  float *taps[2];
  cf_kernel2d *k[2];
  for (unsigned i = 0; i < 2; i++) {
    size_t nt = (size_t)t[i] * kh[i] * kw[i];
    taps[i] = xalloc(nt * sizeof *taps[i]);
    for (size_t j = 0; j < nt; j++) /* rank 1, so separable applies */
      taps[i][j] = (float)(1 + j / kw[i] % 3 + i) *
                   (float)(1 + j % kw[i] % 4) / (float)(8 * nt);
    CHECK(cf_kernel2d_new(t[i], kh[i], kw[i], taps[i], &k[i]) == CF_OK,
          "kernel: %s", cf_last_error());
  }
  for (unsigned c = 0; c < 12; c++) {
    cf_video_config cfg;
    cf_video_config_init(&cfg);
    cfg.format = CF_PIX_GRAY32F;
    cfg.width = (unsigned)ref_rng_range(&rng, 6, 40);
    cfg.height = (unsigned)ref_rng_range(&rng, 6, 30);
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = algos[c % 3];
    cfg.threads = 1;
    cfg.border = (cf_border)(ref_rng_u64(&rng) % 5);
    int prepared = c >= 6;
    if (cfg.algorithm == CF_ALGO2D_FFT) { /* both kernels' tiles planned */
      cf_engine *e = NULL;
      CHECK(cf_engine_new_video(&cfg, k[0], &e) == CF_OK &&
                cf_engine_prepare_kernel2d(e, k[1]) == CF_OK,
            "planning: %s", cf_last_error());
      cf_engine_free(e);
    }
    size_t np = (size_t)cfg.width * cfg.height;
    float *in = xalloc(np * sizeof *in), *out = xalloc(np * sizeof *out);
    float *scratch = xalloc(np * sizeof *scratch);
    double *want = xalloc(np * sizeof *want);
    cf_frame fi, fo, fs;
    cf_frame_layout(cfg.format, cfg.width, cfg.height, in, &fi);
    cf_frame_layout(cfg.format, cfg.width, cfg.height, out, &fo);
    cf_frame_layout(cfg.format, cfg.width, cfg.height, scratch, &fs);
    int swapped = 0;
    for (long n = 1; !swapped && n < 1000; n++) {
      cf_engine *e = NULL;
      CHECK(cf_engine_new_video(&cfg, k[0], &e) == CF_OK, "engine: %s",
            cf_last_error());
      set_case("%s, %s, allocation %ld failing", cf_engine_describe(e),
               prepared ? "prepare_swap2d + set_prepared2d" : "set_kernel2d",
               n);
      ref2d_video *ref = ref2d_video_new(&cfg, t[0], kh[0], kw[0], taps[0]);
      CHECK(ref, "reference: out of memory");
      double *val[3] = {want, NULL, NULL};
      for (unsigned f = 0; f < 4; f++) {
        if (f == 2) { /* the swap, between frames */
          cf_swap_prep2d *p = NULL;
          atomic_store(&failed, 0);
          atomic_store(&fail_in, n);
          cf_status s = prepared ? cf_engine_prepare_swap2d(e, k[1], &p)
                                 : cf_engine_set_kernel2d(e, k[1]);
          if (prepared && s == CF_OK)
            s = cf_engine_set_prepared2d(e, p);
          atomic_store(&fail_in, 0);
          cf_swap_prep2d_free(p);
          swapped = !atomic_load(&failed);
          CHECK(s == CF_OK || atomic_load(&failed),
                "the swap failed with no allocation failing: %s",
                cf_last_error());
          CHECK(s == CF_OK || s == CF_E_NOMEM,
                "the swap returned %s (%s), not CF_E_NOMEM",
                cf_status_name(s), cf_last_error());
          if (s == CF_OK)
            CHECK(ref2d_video_set_kernel(ref, t[1], kh[1], kw[1], taps[1]),
                  "reference: out of memory");
        }
        ref_rng_fill(&rng, in, np);
        CHECK(ref2d_video_frame(ref, &fi, &fs, val),
              "reference: out of memory");
        CHECK(cf_engine_process_frame(e, &fi, &fo) == CF_OK, "frame %u: %s",
              f, cf_last_error());
        double err = ref_rel_l2(out, 1, want, 1, np);
        CHECK(err <= 2e-5, "frame %u: relative L2 error %.3g", f, err);
      }
      cf_engine_free(e);
      ref2d_video_free(ref);
    }
    CHECK(swapped, "the swap never succeeded");
    free(in);
    free(out);
    free(scratch);
    free(want);
  }
  for (unsigned i = 0; i < 2; i++) {
    cf_kernel2d_free(k[i]);
    free(taps[i]);
  }
}

typedef cf_status (*engine_new_fn)(const void *cfg, const void *k,
                                   cf_engine **e);

static cf_status new_audio(const void *cfg, const void *k, cf_engine **e)
{
  return cf_engine_new_audio(cfg, k, e);
}

static cf_status new_video(const void *cfg, const void *k, cf_engine **e)
{
  return cf_engine_new_video(cfg, k, e);
}

/* make(cfg, k) with its 1st, 2nd, ... allocation failing, until one
 * where none fails (the engine made); each failure checked. */
static void fail_each_alloc(const char *what, engine_new_fn make,
                            const void *cfg, const void *k)
{
  int made = 0;
  for (long n = 1; !made && n < 5000; n++) {
    long before = atomic_load(&live);
    atomic_store(&failed, 0);
    atomic_store(&fail_in, n);
    cf_engine *e = NULL;
    cf_status s = make(cfg, k, &e);
    atomic_store(&fail_in, 0);
    made = !atomic_load(&failed);
    cf_engine_free(e);
    long left = atomic_load(&live) - before;
    int f = atomic_load(&failed);
    CHECK(s == CF_OK || f, "%s failed with no allocation failing: %s", what,
          cf_last_error());
    CHECK(s == CF_OK || s == CF_E_NOMEM,
          "%s, allocation %ld failing: returned %s (%s), not CF_E_NOMEM", what,
          n, cf_status_name(s), cf_last_error());
    CHECK(s == CF_OK || cf_last_error()[0] != '\0',
          "%s, allocation %ld failing: CF_E_NOMEM with no message", what, n);
    CHECK(left == 0, "%s, allocation %ld failing (%s): %ld block(s) leaked",
          what, n, s == CF_OK ? "created" : cf_last_error(), left);
  }
  CHECK(made, "%s: never created", what);
}

/* Engine creation on a box with little memory: each allocation of
 * cf_engine_new_audio / cf_engine_new_video in turn made to fail (random
 * configurations: paths, channels, threads, pipeline depths, a temporal
 * kernel). Every failure is CF_E_NOMEM with a message, and leaves no
 * block behind (the live count of the shim above).
 * Each configuration is built once first, so that the FFT plans it needs are
 * made (FFTW's planner aborts when its malloc fails) and kept. */
static void test_new_nomem(void **state)
{
  (void)state;
  PLAIN_BUILD_ONLY();
  static const cf_algorithm algos[] = {CF_ALGO_DIRECT, CF_ALGO_FFT_UNIFORM,
                                       CF_ALGO_FFT_NONUNIFORM};
  for (unsigned c = 0; c < 6; c++) {
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = algos[c % 3];
    cfg.channels = (unsigned)ref_rng_range(&rng, 1, 4);
    cfg.threads = (unsigned)ref_rng_range(&rng, 1, 3);
    cfg.pipeline_depth = (unsigned)ref_rng_range(&rng, 0, 3);
    cfg.block_size = 1u << ref_rng_range(&rng, 5, 8);
    cfg.swap_history = (size_t)ref_rng_range(&rng, 0, 4096);
    size_t len = (size_t)ref_rng_range(&rng, 1, 3000);
    float *h = random_taps(len);
    cf_kernel *k = NULL;
    CHECK(cf_kernel_new_shared(h, len, &k) == CF_OK, "kernel: %s",
          cf_last_error());
    cf_engine *e = NULL;
    CHECK(cf_engine_new_audio(&cfg, k, &e) == CF_OK, "engine: %s",
          cf_last_error());
    char what[256];
    snprintf(what, sizeof what, "cf_engine_new_audio (%s, %u ch, %zu taps, "
             "depth %u)", cf_engine_describe(e), cfg.channels, len,
             cfg.pipeline_depth);
    cf_engine_free(e);
    fail_each_alloc(what, new_audio, &cfg, k);
    cf_kernel_free(k);
    free(h);
  }
  /* video's FFT path too: its 2D plans kept FFTW's buffered solvers,
   * whose scratch (allocated in each transform, the kernel's spectra made
   * here among them) aborted the process when it could not be had */
  static const cf_algorithm2d algos2d[] = {
      CF_ALGO2D_DIRECT, CF_ALGO2D_SEPARABLE, CF_ALGO2D_FFT};
  for (unsigned c = 0; c < 6; c++) {
    cf_video_config cfg;
    cf_video_config_init(&cfg);
    cfg.format = c % 2 ? CF_PIX_RGBA : CF_PIX_GRAY32F;
    cfg.width = (unsigned)ref_rng_range(&rng, 6, 64);
    cfg.height = (unsigned)ref_rng_range(&rng, 6, 48);
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = algos2d[c % 3];
    cfg.threads = (unsigned)ref_rng_range(&rng, 1, 3);
    cfg.pipeline_depth = (unsigned)ref_rng_range(&rng, 0, 2);
    unsigned t = (unsigned)ref_rng_range(&rng, 1, 4);
    unsigned kh = (unsigned)ref_rng_range(&rng, 1, 7);
    unsigned kw = (unsigned)ref_rng_range(&rng, 1, 7);
    if (cfg.algorithm == CF_ALGO2D_FFT) { /* tiles of 128 to 512 a side:
                                             FFTW's buffered scratch of
                                             more than 64 KiB was malloc'ed */
      cfg.width = (unsigned)ref_rng_range(&rng, 100, 300);
      cfg.height = (unsigned)ref_rng_range(&rng, 100, 300);
      kh = (unsigned)ref_rng_range(&rng, 20, 70);
      kw = (unsigned)ref_rng_range(&rng, 20, 70);
    }
    size_t nt = (size_t)t * kh * kw;
    float *taps = xalloc(nt * sizeof *taps);
    for (size_t j = 0; j < nt; j++) /* rank 1, so separable applies */
      taps[j] = (float)(1 + j / kw % 3) * (float)(1 + j % kw % 4) /
                (float)(8 * nt);
    cf_kernel2d *k = NULL;
    CHECK(cf_kernel2d_new(t, kh, kw, taps, &k) == CF_OK, "kernel: %s",
          cf_last_error());
    cf_engine *e = NULL;
    CHECK(cf_engine_new_video(&cfg, k, &e) == CF_OK, "engine: %s",
          cf_last_error());
    char what[256];
    snprintf(what, sizeof what, "cf_engine_new_video (%s, %ux%u, %ux%ux%u "
             "kernel, depth %u)", cf_engine_describe(e), cfg.width,
             cfg.height, t, kh, kw, cfg.pipeline_depth);
    cf_engine_free(e);
    fail_each_alloc(what, new_video, &cfg, k);
    cf_kernel2d_free(k);
    free(taps);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_audio),
      cmocka_unit_test(test_video),
      cmocka_unit_test(test_host_memory),
      cmocka_unit_test(test_prepared),
      cmocka_unit_test(test_prepared_after_reset),
      cmocka_unit_test(test_prepared_burst),
      cmocka_unit_test(test_prepared2d),
      cmocka_unit_test(test_swap2d_nomem),
      cmocka_unit_test(test_new_nomem),
  };
#ifdef RT_NO_COUNT
  (void)tests;
  printf("skipped: a sanitizer build keeps its own allocator; the malloc "
         "family is counted in the plain builds\n");
  return 77;
#else
  check_seed = ref_seed();
  ref_rng_init(&rng, check_seed);
#ifdef CF_RT_EMU
  check_variant = "cuda-auto";
#else
  check_variant = "cpu";
#endif
  check_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
