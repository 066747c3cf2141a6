/* The CUDA audio backend beyond the shared engine suite (tests/test_engine.c
 * runs the contract on the cuda-* variants): graph replay against plain
 * launches, fault injection (explicit cuda fails clearly, auto switches to
 * the CPU without losing a sample), random chunkings on both CUDA paths.
 * cf_host_alloc's pinned blocks: reused, never handed out twice. On the
 * emulated device, what a chunk may not do once the stream runs.
 * CF_TEST_QUICK=1 (bench/gpu-check's compute-sanitizer runs): shorter
 * signals, the same paths and checks.
 * Exits 77 with "skipped: no CUDA device: <reason>" where there is none. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <cudafilter/engine.h>
#include <cudafilter/kernel.h>
#include <cudafilter/memory.h>

#include "../ref.h"
#include "../test_filter.h"
#include "steady.h"

static uint64_t seed;
static int quick; /* CF_TEST_QUICK */

/* depth: pipeline_depth (0, live: the default) */
static cf_engine *make_depth(unsigned ch, unsigned block, cf_backend be,
                             cf_algorithm algo, const float *h, size_t len,
                             unsigned depth)
{
  cf_kernel *k = NULL;
  assert_int_equal(cf_kernel_new_shared(h, len, &k), CF_OK);
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = ch;
  cfg.block_size = block;
  cfg.backend = be;
  cfg.algorithm = algo;
  if (depth)
    cfg.pipeline_depth = depth;
  cf_engine *e = NULL;
  cf_status s = cf_engine_new_audio(&cfg, k, &e);
  cf_kernel_free(k);
  if (s != CF_OK)
    print_error("engine: %s: %s\n", cf_status_name(s), cf_last_error());
  return s == CF_OK ? e : NULL;
}

static cf_engine *make(unsigned ch, unsigned block, cf_backend be,
                       cf_algorithm algo, const float *h, size_t len)
{
  return make_depth(ch, block, be, algo, h, len, 0);
}

/* Run x (n frames of ch) through e in the given chunking, then drain;
 * y gets n + tail frames. */
static cf_status run(cf_engine *e, const float *x, size_t n, unsigned ch,
                     const size_t *chunks, size_t nchunks, float *y)
{
  size_t pos = 0;
  for (size_t i = 0; i < nchunks && pos < n; i++) {
    size_t m = chunks[i] < n - pos ? chunks[i] : n - pos;
    cf_status s = cf_engine_process(e, x + pos * ch, y + pos * ch, m);
    if (s != CF_OK)
      return s;
    pos += m;
  }
  if (pos < n) {
    cf_status s = cf_engine_process(e, x + pos * ch, y + pos * ch, n - pos);
    if (s != CF_OK)
      return s;
  }
  size_t w = 0;
  return cf_engine_drain(e, y + n * ch, cf_engine_tail(e), &w);
}

static void check_paths(cf_algorithm algo, size_t len, unsigned block,
                        double tol)
{
  ref_rng r;
  ref_rng_init(&r, seed ^ (len * 31 + block));
  unsigned ch = 2;
  size_t n = quick ? 6000 : 20000;
  float *h = malloc(len * sizeof *h), *x = malloc(n * ch * sizeof *x);
  float *y = calloc((n + len + block) * ch, sizeof *y);
  size_t chunks[4096];
  ref_rng_fill(&r, h, len);
  ref_rng_fill(&r, x, n * ch);
  size_t nc = ref_chunking(&r, n, block, chunks, 4096);
  cf_engine *e = make(ch, block, CF_BACKEND_CUDA, algo, h, len);
  assert_non_null(e);
  size_t lat = cf_engine_latency(e);
  assert_int_equal(run(e, x, n, ch, chunks, nc, y), CF_OK);
  double er = ref_worst_channel_l2(x, y, n, ch, h, len, lat);
  if (!(er <= tol))
    fail_msg("%s: len %zu block %u: error %g > %g (seed %llu)",
             cf_engine_describe(e), len, block, er, tol,
             (unsigned long long)seed);
  cf_engine_free(e);
  free(h), free(x), free(y);
}

static void test_random_chunks(void **state)
{
  (void)state;
  check_paths(CF_ALGO_DIRECT, 37, 64, 1e-6);
  check_paths(CF_ALGO_DIRECT, 3001, 256, 1e-6);
  check_paths(CF_ALGO_FFT_UNIFORM, 5000, 64, 2e-5);
  check_paths(CF_ALGO_FFT_UNIFORM, 131072 / 8, 1024, 2e-5);
  check_paths(CF_ALGO_AUTO, 700, 7, 2e-5);
}

/* Chunks of exactly the block replay the graph; plain launches (direct:
 * chunks of block + 1; overlap-save, whose steps are always a block:
 * CF_CUDA_GRAPHS=0) must give the same outputs. */
static void test_graph_vs_plain(void **state)
{
  (void)state;
  for (int path = 0; path < 2; path++) {
    ref_rng r;
    ref_rng_init(&r, seed + 7 + path);
    unsigned ch = 2, block = 64;
    size_t len = path ? 4096 : 48, n = 64 * 65 * 4;
    cf_algorithm a = path ? CF_ALGO_FFT_UNIFORM : CF_ALGO_DIRECT;
    float *h = malloc(len * sizeof *h), *x = malloc(n * ch * sizeof *x);
    float *y1 = calloc((n + len + block) * ch, sizeof *y1);
    float *y2 = calloc((n + len + block) * ch, sizeof *y2);
    ref_rng_fill(&r, h, len);
    ref_rng_fill(&r, x, n * ch);
    size_t c1[1] = {block}, c2[1] = {block + 1};
    size_t chunks1[4096], chunks2[4096];
    for (size_t i = 0; i < 4096; i++)
      chunks1[i] = c1[0], chunks2[i] = c2[0];
    cf_engine *e = make(ch, block, CF_BACKEND_CUDA, a, h, len);
    assert_non_null(e);
    print_message("%s\n", cf_engine_describe(e));
    assert_int_equal(run(e, x, n, ch, chunks1, 4096, y1), CF_OK);
    cf_engine_free(e);
    if (path)
      setenv("CF_CUDA_GRAPHS", "0", 1);
    e = make(ch, block, CF_BACKEND_CUDA, a, h, len);
    unsetenv("CF_CUDA_GRAPHS");
    assert_non_null(e);
    print_message("%s\n", cf_engine_describe(e));
    if (path && !strstr(cf_engine_describe(e), "graph off"))
      fail_msg("CF_CUDA_GRAPHS=0 left graphs on: %s", cf_engine_describe(e));
    assert_int_equal(run(e, x, n, ch, path ? chunks1 : chunks2, 4096, y2),
                     CF_OK);
    size_t lat = cf_engine_latency(e);
    cf_engine_free(e);
    double er = ref_worst_channel_l2(x, y1, n, ch, h, len, lat);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < (n + len - 1 + lat) * ch; i++) {
      diff += ((double)y1[i] - y2[i]) * ((double)y1[i] - y2[i]);
      norm += (double)y2[i] * y2[i];
    }
    if (!(er <= 2e-5) || !(diff <= 1e-12 * norm))
      fail_msg("graph vs plain (%s): error %g, difference %g of %g",
               path ? "ols" : "direct", er, diff, norm);
    free(h), free(x), free(y1), free(y2);
  }
}

/* The emulated device (tests/emu, suite cudaemu) follows the order of
 * the copies it queues; a real device has no such call. */
unsigned long long cf_emu_uploads_after_downloads(void) __attribute__((weak));

/* Copies overlap across steps: on either path, with graphs or without,
 * one call's steps (a chunk of many blocks) never order a step's upload
 * after the previous step's download, so that the upload of step i + 1,
 * the compute of step i and the download of step i - 1 can run at once.
 * Checked on the emulated device's copy order; a device shows it in time
 * (bench_gpu_audio). */
static void test_copies_overlap(void **state)
{
  (void)state;
  if (!cf_emu_uploads_after_downloads)
    skip(); /* the order of copies is the emulator's to tell */
  const struct {
    cf_algorithm algo;
    size_t len, chunk;
    const char *graphs;
  } cases[] = {
      {CF_ALGO_FFT_UNIFORM, 5000, 64 * 24, "1"},
      {CF_ALGO_FFT_UNIFORM, 5000, 64 * 24, "0"},
      {CF_ALGO_FFT_UNIFORM, 5000, 64, "1"},
      {CF_ALGO_DIRECT, 37, 64, "1"},
      {CF_ALGO_DIRECT, 37, 20000, "1"},
      {CF_ALGO_DIRECT, 37, 64, "0"},
  };
  ref_rng r;
  ref_rng_init(&r, seed + 11);
  unsigned ch = 2, block = 64;
  size_t n = 64 * 24 * 12;
  float *h = malloc(5000 * sizeof *h), *x = malloc(n * ch * sizeof *x);
  float *y = calloc((n + 5000 + block) * ch, sizeof *y);
  assert_non_null(h);
  assert_non_null(x);
  assert_non_null(y);
  ref_rng_fill(&r, h, 5000);
  ref_rng_fill(&r, x, n * ch);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    setenv("CF_CUDA_GRAPHS", cases[c].graphs, 1);
    cf_engine *e =
        make(ch, block, CF_BACKEND_CUDA, cases[c].algo, h, cases[c].len);
    unsetenv("CF_CUDA_GRAPHS");
    assert_non_null(e);
    size_t lat = cf_engine_latency(e);
    unsigned long long before = cf_emu_uploads_after_downloads();
    size_t nc = (n + cases[c].chunk - 1) / cases[c].chunk, chunks[4096];
    assert_true(nc <= 4096);
    for (size_t i = 0; i < nc; i++)
      chunks[i] = cases[c].chunk;
    assert_int_equal(run(e, x, n, ch, chunks, nc, y), CF_OK);
    unsigned long long waits = cf_emu_uploads_after_downloads() - before;
    double er = ref_worst_channel_l2(x, y, n, ch, h, cases[c].len, lat);
    print_message("%s, chunks of %zu: %llu uploads after the previous "
                  "download, error %g\n",
                  cf_engine_describe(e), cases[c].chunk, waits, er);
    if (waits || !(er <= 2e-5))
      fail_msg("%s, chunks of %zu: %llu of the uploads wait for the "
               "previous step's download (error %g)",
               cf_engine_describe(e), cases[c].chunk, waits, er);
    cf_engine_free(e);
  }
  free(h), free(x), free(y);
}

/* The emulated device counts the host's waits by how far behind the
 * queue they are; a real device has no such call. */
unsigned long long cf_emu_syncs_within(unsigned lag) __attribute__((weak));

/* Across calls (pipeline_depth D >= 1), a stream of calls of a block
 * each never waits for the device: a call's outputs are those of the
 * block launched D calls before, and every wait is for an event with at
 * least 2 D records after it (each block records two: compute and
 * download); live (D 0) the host waits for the block it has just
 * launched (lag 0). The output equals the reference at the latency of
 * path + D blocks. Counted on the emulated device's queue; a device
 * shows it in time (bench_gpu_audio). */
static void test_depth_no_wait(void **state)
{
  (void)state;
  if (!cf_emu_syncs_within)
    skip(); /* the queue is the emulator's to tell */
  static const struct {
    cf_algorithm algo;
    size_t len;
    unsigned block, depth;
    const char *graphs;
  } cases[] = {
      {CF_ALGO_FFT_UNIFORM, 5000, 64, 0, "1"},
      {CF_ALGO_FFT_UNIFORM, 5000, 64, 1, "1"},
      {CF_ALGO_FFT_UNIFORM, 5000, 64, 3, "0"},
      {CF_ALGO_FFT_UNIFORM, 3000, 256, CF_AUDIO_MAX_DEPTH, "1"},
      {CF_ALGO_DIRECT, 37, 64, 0, "1"},
      {CF_ALGO_DIRECT, 37, 64, 2, "1"},
      {CF_ALGO_DIRECT, 300, 32, 4, "0"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ref_rng r;
    ref_rng_init(&r, seed ^ (0xde97 + c));
    unsigned ch = 2, block = cases[c].block, depth = cases[c].depth;
    size_t len = cases[c].len, nb = quick ? 40 : 120, n = nb * block;
    float *h = malloc(len * sizeof *h), *x = malloc(n * ch * sizeof *x);
    float *y = calloc((n + len + (depth + 2) * block) * ch, sizeof *y);
    assert_true(h && x && y);
    ref_rng_fill(&r, h, len);
    ref_rng_fill(&r, x, n * ch);
    setenv("CF_CUDA_GRAPHS", cases[c].graphs, 1);
    cf_engine *e =
        make_depth(ch, block, CF_BACKEND_CUDA, cases[c].algo, h, len, depth);
    unsetenv("CF_CUDA_GRAPHS");
    assert_non_null(e);
    size_t lat = cf_engine_latency(e);
    size_t own = cases[c].algo == CF_ALGO_DIRECT ? 0 : block - 1;
    if (lat != own + (size_t)depth * block)
      fail_msg("%s: latency %zu, want %zu + %u x %u", cf_engine_describe(e),
               lat, own, depth, block);
    unsigned want = 2 * depth; /* waits closer than this are early */
    unsigned long long early = cf_emu_syncs_within(want ? want : 1);
    for (size_t b = 0; b < nb; b++)
      assert_int_equal(
          cf_engine_process(e, x + b * block * ch, y + b * block * ch, block),
          CF_OK);
    early = cf_emu_syncs_within(want ? want : 1) - early;
    size_t w = 0;
    assert_int_equal(cf_engine_drain(e, y + n * ch, cf_engine_tail(e), &w),
                     CF_OK);
    double er = ref_worst_channel_l2(x, y, n, ch, h, len, lat);
    print_message("%s: %zu calls of a block, %llu waits with fewer than %u "
                  "events after theirs, error %g\n",
                  cf_engine_describe(e), nb, early, want ? want : 1, er);
    if (depth ? early != 0 : early < nb)
      fail_msg("%s: %llu of %zu calls waited for a block launched fewer "
               "than %u blocks before (want %s)",
               cf_engine_describe(e), early, nb, depth,
               depth ? "none" : "every call, live");
    if (!(er <= 2e-5))
      fail_msg("%s: error %g (seed %llu)", cf_engine_describe(e), er,
               (unsigned long long)seed);
    cf_engine_free(e);
    free(h), free(x), free(y);
  }
}

/* Fault cases run in a fresh process each (the fault counters are
 * process-wide): this program re-runs itself with --fault CASE and
 * CF_CUDA_FAULT set. */
static const char *self;

static int fault_case(const char *which)
{
  ref_rng r;
  ref_rng_init(&r, 99);
  unsigned ch = 2, block = 64;
  const char *d = strchr(which, '/'); /* pipeline_depth */
  unsigned depth = d ? (unsigned)atoi(d + 1) : 0;
  /* launch:40 comes within the first 60 blocks on both paths */
  size_t len = 1000, n = 64 * (quick ? 200 : 800);
  float *h = malloc(len * sizeof *h), *x = malloc(n * ch * sizeof *x);
  float *y = calloc((n + len + (depth + 1) * block) * ch, sizeof *y);
  ref_rng_fill(&r, h, len);
  ref_rng_fill(&r, x, n * ch);
  static size_t chunks[800];
  for (size_t i = 0; i < 800; i++)
    chunks[i] = i % 7 == 3 ? 63 : i % 7 == 4 ? 65 : 64;
  int ok = 1;
  if (!strcmp(which, "explicit")) { /* a clear CF_E_DEVICE */
    cf_engine *e = make(ch, block, CF_BACKEND_CUDA, CF_ALGO_FFT_UNIFORM, h,
                        len);
    cf_status s = e ? run(e, x, n, ch, chunks, 800, y) : CF_E_DEVICE;
    printf("explicit cuda: %s '%s'\n", cf_status_name(s), cf_last_error());
    ok = s == CF_E_DEVICE && strstr(cf_last_error(), "launch");
    cf_engine_free(e);
  } else if (!strcmp(which, "reset")) {
    /* a step that fails half-way (some of its work enqueued), then the
     * documented recovery, cf_engine_reset: the engine then filters a new
     * stream exactly, whatever that work does after the reset */
    cf_engine *e =
        make(ch, block, CF_BACKEND_CUDA, CF_ALGO_FFT_UNIFORM, h, len);
    cf_status s = e ? run(e, x, n, ch, chunks, 800, y) : CF_E_DEVICE;
    ok = s == CF_E_DEVICE;
    if (ok) {
      cf_engine_reset(e);
      memset(y, 0, (n + len + block) * ch * sizeof *y);
      s = run(e, x, n, ch, chunks, 800, y);
      double er = s == CF_OK ? ref_worst_channel_l2(x, y, n, ch, h, len,
                                                    cf_engine_latency(e))
                             : 1.0;
      printf("reset after a failed step: %s '%s', error %g\n",
             cf_status_name(s), s == CF_OK ? "" : cf_last_error(), er);
      ok = s == CF_OK && er <= 2e-5;
    }
    cf_engine_free(e);
  } else if (!strcmp(which, "alloc")) { /* creation: NOMEM, auto = CPU */
    cf_kernel *k = NULL;
    cf_engine *e = NULL;
    cf_kernel_new_shared(h, len, &k);
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.backend = CF_BACKEND_CUDA;
    cf_status s = cf_engine_new_audio(&cfg, k, &e);
    printf("alloc fault, explicit cuda: %s '%s'\n", cf_status_name(s),
           cf_last_error());
    ok = s == CF_E_NOMEM;
    cf_kernel_free(k);
  } else { /* auto: the CPU takes over mid-stream, output still exact */
    cf_algorithm a =
        !strncmp(which, "auto-ols", 8) ? CF_ALGO_FFT_UNIFORM : CF_ALGO_DIRECT;
    cf_engine *e = make_depth(ch, block, CF_BACKEND_AUTO, a, h, len, depth);
    if (!e)
      return 1;
    size_t lat = cf_engine_latency(e);
    cf_status s = run(e, x, n, ch, chunks, 800, y);
    double er =
        s == CF_OK ? ref_worst_channel_l2(x, y, n, ch, h, len, lat) : 1.0;
    printf("%s: %s, now on %s, latency %zu, error %g\n", which,
           cf_status_name(s), cf_engine_describe(e), lat, er);
    ok = s == CF_OK && cf_engine_backend(e) == CF_BACKEND_CPU && er <= 2e-5;
    cf_engine_free(e);
  }
  free(h), free(x), free(y);
  return ok ? 0 : 1;
}

/* The emulated runtime's count of cudaHostAlloc calls and the pinned bytes
 * live (tests/emu/cudart_emu.cc, linked into the cudaemu build); NULL
 * against the real runtime. */
void cf_emu_host_allocs(unsigned long long *calls,
                        unsigned long long *live_bytes) __attribute__((weak));

/* Random chunks through CUDA engines on each path, pipeline depths 1-3,
 * with graphs and without: from the first chunk on, none of steady.h's
 * calls (and the output equals the reference). Counted on the emulated
 * device only. */
static void test_steady_state(void **state)
{
  (void)state;
  if (!steady_counted()) {
    print_message("skipped: the calls are counted on the emulated device "
                  "only (cudaemu)\n");
    return;
  }
  static const struct {
    cf_algorithm algo;
    size_t len;
    unsigned block;
    int no_graphs;
  } cases[] = {
      {CF_ALGO_DIRECT, 37, 64, 0},
      {CF_ALGO_DIRECT, 3001, 256, 0},
      {CF_ALGO_FFT_UNIFORM, 5000, 64, 0},
      {CF_ALGO_FFT_UNIFORM, 16384, 1024, 0},
      {CF_ALGO_AUTO, 700, 7, 0},
      /* again without graphs: the plans' own launches from the first */
      {CF_ALGO_FFT_UNIFORM, 5000, 64, 1},
      {CF_ALGO_DIRECT, 3001, 256, 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ref_rng r;
    ref_rng_init(&r, seed ^ (0x57ead + c));
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 3), block = cases[c].block;
    size_t len = cases[c].len, n = quick ? 8000 : 30000;
    unsigned depth = (unsigned)ref_rng_range(&r, 1, 3);
    float *h = malloc(len * sizeof *h), *x = malloc(n * ch * sizeof *x);
    float *y = calloc((n + len + (depth + 1) * block) * ch, sizeof *y);
    assert_true(h && x && y);
    ref_rng_fill(&r, h, len);
    ref_rng_fill(&r, x, n * ch);
    if (cases[c].no_graphs)
      setenv("CF_CUDA_GRAPHS", "0", 1);
    cf_engine *e =
        make_depth(ch, block, CF_BACKEND_CUDA, cases[c].algo, h, len, depth);
    unsetenv("CF_CUDA_GRAPHS");
    assert_non_null(e);
    size_t chunks[4096], pos = 0, i = 0;
    size_t nc = ref_chunking(&r, n, block, chunks, 4096);
    steady_mark mark;
    steady_take(&mark);
    for (; i < nc; i++, pos += chunks[i - 1])
      assert_int_equal(
          cf_engine_process(e, x + pos * ch, y + pos * ch, chunks[i]), CF_OK);
    unsigned long long times = 0;
    const char *call = steady_broken(&mark, NULL, &times);
    if (call)
      fail_msg("%s, depth %u: %s called %llu times in %zu chunks",
               cf_engine_describe(e), depth, call, times, nc);
    assert_true(pos == n);
    size_t w = 0, lat = cf_engine_latency(e);
    assert_int_equal(cf_engine_drain(e, y + n * ch, cf_engine_tail(e), &w),
                     CF_OK);
    double er = ref_worst_channel_l2(x, y, n, ch, h, len, lat);
    print_message("%s, depth %u, %zu chunks: no setup call; error %g\n",
                  cf_engine_describe(e), depth, nc, er);
    if (!(er <= 2e-5))
      fail_msg("%s: error %g (seed %llu)", cf_engine_describe(e), er,
               (unsigned long long)seed);
    cf_engine_free(e);
    free(h), free(x), free(y);
  }
}

typedef struct prep_job {
  const cf_engine *e;
  const cf_kernel *k;
  cf_swap_prep *p;
  cf_status st;
} prep_job;

static void *prep_thread(void *arg)
{
  prep_job *j = arg;
  j->st = cf_engine_prepare_swap(j->e, j->k, &j->p);
  return NULL;
}

/* Swaps built ahead (cf_engine_prepare_swap, in a second thread while the
 * engine runs) on each path and on backend cuda and auto: the output is
 * set_kernel's, and cf_engine_set_prepared, like the blocks after it,
 * makes none of steady.h's calls (the device's bank was built, its
 * memory allocated and its graphs captured in the other thread; the banks
 * it retires are freed with the swap). set_kernel makes them: the count
 * has teeth. Two swaps an engine, so that the second retires the first
 * kernel's bank. The calls are counted on the emulated device only; the
 * output is compared everywhere. */
static void test_prepared_swap(void **state)
{
  (void)state;
  static const struct {
    cf_algorithm algo;
    cf_backend be;
    size_t len[3];
    unsigned block, depth;
  } cases[] = {
      {CF_ALGO_DIRECT, CF_BACKEND_CUDA, {37, 41, 12}, 64, 0},
      {CF_ALGO_FFT_UNIFORM, CF_BACKEND_CUDA, {5000, 3000, 4100}, 64, 0},
      {CF_ALGO_FFT_UNIFORM, CF_BACKEND_AUTO, {2000, 2500, 700}, 256, 0},
      {CF_ALGO_DIRECT, CF_BACKEND_AUTO, {300, 200, 301}, 32, 0},
      /* across calls: the banks a swap retires may still be in use by
       * blocks in flight when the swap is freed */
      {CF_ALGO_FFT_UNIFORM, CF_BACKEND_CUDA, {5000, 3000, 4100}, 64, 2},
      {CF_ALGO_DIRECT, CF_BACKEND_AUTO, {300, 200, 301}, 32, 3},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ref_rng r;
    ref_rng_init(&r, seed ^ (0x9e9 + c));
    unsigned ch = 2, block = cases[c].block;
    size_t n = quick ? 6000 : 16000, lmax = 0;
    float *h[3], *x = malloc(n * ch * sizeof *x);
    cf_kernel *k[3];
    for (unsigned i = 0; i < 3; i++) {
      size_t l = cases[c].len[i];
      lmax = l > lmax ? l : lmax;
      h[i] = malloc(l * sizeof *h[i]);
      assert_non_null(h[i]);
      ref_rng_fill(&r, h[i], l);
      assert_int_equal(cf_kernel_new_shared(h[i], l, &k[i]), CF_OK);
    }
    float *y[2];
    for (int v = 0; v < 2; v++)
      y[v] =
          calloc((n + lmax + (cases[c].depth + 1) * block) * ch, sizeof *y[v]);
    assert_true(x && y[0] && y[1]);
    ref_rng_fill(&r, x, n * ch);
    size_t S[3] = {0, n / 3 + ref_rng_range(&r, 0, block),
                   2 * n / 3 + ref_rng_range(&r, 0, 2 * block)};
    size_t X[3] = {0, ref_rng_range(&r, 0, 3 * block), 0};
    size_t chunks[4096];
    size_t nc = ref_chunking(&r, n, block, chunks, 4096);
    cf_engine *e[2];
    for (int v = 0; v < 2; v++) {
      e[v] = make_depth(ch, block, cases[c].be, cases[c].algo, h[0],
                        cases[c].len[0], cases[c].depth);
      assert_non_null(e[v]);
      assert_int_equal(cf_engine_backend(e[v]), CF_BACKEND_CUDA);
    }
    /* v 0: set_kernel at S[s]; v 1: prepared from a frame before */
    for (int v = 0; v < 2; v++) {
      size_t pos = 0, i = 0, part = 0;
      unsigned sw = 1;
      prep_job j = {e[v], NULL, NULL, CF_OK};
      pthread_t th;
      int building = 0;
      while (pos < n) {
        if (v == 1 && sw < 3 && !building && pos + 4 * block >= S[sw]) {
          j.k = k[sw];
          j.p = NULL;
          assert_int_equal(pthread_create(&th, NULL, prep_thread, &j), 0);
          building = 1;
        }
        if (sw < 3 && pos == S[sw]) {
          steady_mark mark;
          cf_status st;
          if (v == 1) {
            pthread_join(th, NULL);
            building = 0;
            if (j.st != CF_OK)
              fail_msg("prepare_swap: %s: %s", cf_status_name(j.st),
                       cf_last_error());
          }
          steady_take(&mark); /* from here: the engine's thread alone */
          if (v == 1)
            st = cf_engine_set_prepared(e[v], j.p, X[sw]);
          else
            st = cf_engine_set_kernel(e[v], k[sw], X[sw]);
          unsigned long long times = 0;
          const char *call = steady_broken(&mark, NULL, &times);
          if (st != CF_OK)
            fail_msg("swap %u: %s: %s", sw, cf_status_name(st),
                     cf_last_error());
          if (v == 1 && call)
            fail_msg("%s: set_prepared (swap %u) called %s %llu times",
                     cf_engine_describe(e[v]), sw, call, times);
          if (v == 0 && !call && steady_counted())
            fail_msg("%s: set_kernel called none of the setup calls",
                     cf_engine_describe(e[v]));
          if (v == 1) {
            steady_take(&mark);
            size_t m = n - pos < 4 * block ? n - pos : 4 * block;
            assert_int_equal(
                cf_engine_process(e[v], x + pos * ch, y[v] + pos * ch, m),
                CF_OK);
            pos += m;
            if ((call = steady_broken(&mark, NULL, &times)) != NULL)
              fail_msg("%s: the blocks after set_prepared called %s %llu "
                       "times",
                       cf_engine_describe(e[v]), call, times);
            cf_swap_prep_free(j.p); /* the banks it retired, if any */
          }
          sw++;
          continue;
        }
        assert_true(i < nc);
        size_t m = chunks[i] - part;
        if (sw < 3 && S[sw] - pos < m)
          m = S[sw] - pos;
        if (n - pos < m)
          m = n - pos;
        assert_int_equal(
            cf_engine_process(e[v], x + pos * ch, y[v] + pos * ch, m), CF_OK);
        pos += m;
        part += m;
        if (part == chunks[i])
          i++, part = 0;
      }
      if (building)
        pthread_join(th, NULL);
      size_t w = 0;
      assert_int_equal(
          cf_engine_drain(e[v], y[v] + n * ch, cf_engine_tail(e[v]), &w),
          CF_OK);
    }
    double diff = 0, norm = 0;
    for (size_t t = 0; t < (n + lmax + (cases[c].depth + 1) * block) * ch;
         t++) {
      diff += ((double)y[0][t] - y[1][t]) * ((double)y[0][t] - y[1][t]);
      norm += (double)y[0][t] * y[0][t];
    }
    print_message("%s, swaps at %zu (crossfade %zu) and %zu: prepared vs "
                  "set_kernel: difference %g of %g\n",
                  cf_engine_describe(e[1]), S[1], X[1], S[2], diff, norm);
    if (!(diff <= 1e-12 * norm) || !(norm > 0))
      fail_msg("%s: prepared swaps differ from set_kernel's: %g of %g",
               cf_engine_describe(e[1]), diff, norm);
    for (int v = 0; v < 2; v++) {
      cf_engine_free(e[v]);
      free(y[v]);
    }
    for (unsigned i = 0; i < 3; i++) {
      cf_kernel_free(k[i]);
      free(h[i]);
    }
    free(x);
  }
}

/* A live block: every byte is a function of its tag, so a block handed out
 * twice, or written by the allocator, shows when it is checked. */
typedef struct {
  unsigned char *p;
  size_t n;
  unsigned tag;
} host_block;

static void block_new(host_block *b, size_t n, unsigned tag)
{
  int pinned = -1;
  b->p = cf_host_alloc(n, &pinned);
  if (!b->p)
    fail_msg("cf_host_alloc(%zu): %s", n, cf_last_error());
  if (pinned != 1 || (uintptr_t)b->p % 64)
    fail_msg("cf_host_alloc(%zu): pinned %d, address %p (want pinned, "
             "64-byte aligned)",
             n, pinned, (void *)b->p);
  b->n = n;
  b->tag = tag;
  for (size_t i = 0; i < n; i++)
    b->p[i] = (unsigned char)(tag * 131u + i * 7u + (i >> 8));
}

static void block_free(host_block *b)
{
  for (size_t i = 0; i < b->n; i++)
    if (b->p[i] != (unsigned char)(b->tag * 131u + i * 7u + (i >> 8)))
      fail_msg("host block %u (%zu bytes): byte %zu changed while it was "
               "live (seed %llu)",
               b->tag, b->n, i, (unsigned long long)seed);
  cf_host_free(b->p);
  b->p = NULL;
}

/* cf_host_alloc with a device: pinned, aligned, each block the caller's
 * alone while it lives, through random sizes and random orders of free.
 * Freed blocks are kept for reuse (src/engine/memory.c: cudaHostAlloc and
 * cudaFreeHost per buffer would stall a stream), within the cache's bound;
 * on the emulated device the cudaHostAlloc calls and the pinned bytes left
 * are counted too. */
static void test_host_memory(void **state)
{
  (void)state;
  enum { LIVE = 24 };
  const size_t cache_bytes = (size_t)64 << 20; /* memory.c's CACHE_BYTES */
  ref_rng r;
  ref_rng_init(&r, seed ^ 0x686f7374);
  unsigned long long calls0 = 0, live0 = 0, calls, live;
  if (cf_emu_host_allocs)
    cf_emu_host_allocs(&calls0, &live0);
  host_block b[LIVE] = {{0}};
  unsigned tag = 0;
  /* audio buffers: sizes change every time within a factor of two (a
   * host's varying period), two size classes */
  unsigned rounds = quick ? 600 : 3000;
  for (unsigned k = 0; k < rounds; k++) {
    host_block *x = &b[ref_rng_range(&r, 0, LIVE - 1)];
    if (x->p)
      block_free(x);
    else
      block_new(x, ref_rng_range(&r, 3000, 6000), ++tag);
  }
  for (unsigned i = 0; i < LIVE; i++)
    if (b[i].p)
      block_free(&b[i]);
  if (cf_emu_host_allocs) {
    cf_emu_host_allocs(&calls, &live);
    printf("host memory: %u blocks of 3000-6000 bytes took %llu "
           "cudaHostAlloc calls\n",
           tag, calls - calls0);
    if (calls - calls0 > 2 * LIVE)
      fail_msg("%u blocks of 3000-6000 bytes, at most %d live, took %llu "
               "cudaHostAlloc calls (want <= %d: freed blocks reused)",
               tag, LIVE, calls - calls0, 2 * LIVE);
  }
  /* frames: a few sizes of 0.5-12 MB, more than the cache keeps, and one
   * block larger than the whole cache */
  for (unsigned k = 0; k < (quick ? 40u : 120u); k++) {
    host_block *x = &b[ref_rng_range(&r, 0, 7)];
    if (x->p)
      block_free(x);
    else
      block_new(x, ref_rng_range(&r, 0, 3) * ((size_t)4 << 20) + (512 << 10),
                ++tag);
  }
  host_block big;
  block_new(&big, cache_bytes + 4096, ++tag);
  block_free(&big);
  for (unsigned i = 0; i < LIVE; i++)
    if (b[i].p)
      block_free(&b[i]);
  if (cf_emu_host_allocs) {
    cf_emu_host_allocs(&calls, &live);
    printf("host memory: %llu pinned bytes kept after all were freed\n",
           live - live0);
    if (live - live0 > cache_bytes)
      fail_msg("%llu pinned bytes still held after every block was freed "
               "(the cache keeps at most %zu)",
               live - live0, cache_bytes);
  }
}

static void test_faults(void **state)
{
  (void)state;
  static const char *const cases[][2] = {
      {"launch:40", "explicit"},
      {"launch:40", "auto-direct"},
      {"launch:40", "auto-ols"},
      /* across calls: blocks in flight when the device fails; the CPU
       * delays its output by the difference of the latencies */
      {"launch:40", "auto-direct/3"},
      {"launch:40", "auto-ols/2"},
      {"alloc:3", "alloc"},
      /* a failing launch at each place in a step (a step launches fewer
       * than 8 kernels on this path) */
      {"launch:40", "reset"},
      {"launch:41", "reset"},
      {"launch:42", "reset"},
      {"launch:43", "reset"},
      {"launch:44", "reset"},
      {"launch:45", "reset"},
      {"launch:46", "reset"},
      {"launch:47", "reset"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "CF_CUDA_FAULT=%s '%s' --fault %s",
             cases[i][0], self, cases[i][1]);
    int rc = system(cmd);
    if (rc != 0)
      fail_msg("fault case %s (%s) failed (status %d)", cases[i][1],
               cases[i][0], rc);
  }
}

/* Run at exit after memory.c's handler, which releases the pinned blocks
 * cf_host_free keeps for reuse (registered at the first pinned allocation,
 * after this one, so run before it): no pinned memory is left, or
 * compute-sanitizer's leak check reports every cached block (seen on an
 * H200). Counted on the emulated device. */
static void pinned_released_at_exit(void)
{
  unsigned long long calls = 0, live = 0;
  cf_emu_host_allocs(&calls, &live);
  if (live) {
    fprintf(stderr, "FAILED: %llu bytes of pinned host memory still "
            "allocated at exit\n", live);
    _exit(1);
  }
}

int main(int argc, char **argv)
{
  const char *why = NULL;
  self = argv[0];
  const char *q = getenv("CF_TEST_QUICK");
  quick = q && *q && strcmp(q, "0") != 0;
  if (cf_device_count(&why) == 0) {
    printf("skipped: no CUDA device: %s\n", why ? why : "unknown");
    return 77;
  }
  if (argc == 3 && !strcmp(argv[1], "--fault"))
    return fault_case(argv[2]);
  seed = ref_seed();
  if (cf_emu_host_allocs && atexit(pinned_released_at_exit) != 0)
    fail_msg("atexit failed");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_chunks),
      cmocka_unit_test(test_graph_vs_plain),
      cmocka_unit_test(test_copies_overlap),
      cmocka_unit_test(test_depth_no_wait),
      cmocka_unit_test(test_faults),
      cmocka_unit_test(test_host_memory),
      cmocka_unit_test(test_steady_state),
      cmocka_unit_test(test_prepared_swap),
  };
  test_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
