/* The FFT plan cache (src/cpu/fft.c, compiled into this test) and what a
 * running stream gets from it: CF_FFT_QUICK never runs FFTW's measuring
 * planner (0.1-1.5 s per size the first time: a kernel swap on a live
 * stream stalled that long), takes FFTW's wisdom where it has the size,
 * else an estimated plan, and every plan computes the DFT (float64 naive
 * reference). Then the same through the library: a swap to a kernel that
 * needs new sizes says "not measured" in the engine's description, and a
 * new engine for that kernel measures.
 * Last, engines made and run at once in threads of their own, as an
 * application with many streams does, against the reference and against
 * each run alone.
 *
 * Measuring is on here (CF_FFT_PLANNING unset) and wisdom is in memory
 * only (CF_FFT_WISDOM=none), so each size this process has not planned is
 * new to FFTW: the suite must run in a process of its own. */
#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cudafilter/engine.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/video.h>

#include "../src/cpu/fft.h"
#include "../src/engine/error_internal.h"
#include "check.h"
#include "ref.h"

/* fft.c's error reporting (the library's own copy is hidden). */
static char fft_error[512];
cf_status cf_fail(cf_status status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fft_error, sizeof fft_error, fmt, ap);
  va_end(ap);
  return status;
}

/* Sizes no other case of this process plans: each case draws from its own
 * range (1D: even sizes, 2D: rows x even columns). FFTW's wisdom is
 * shared by every plan (sub-problems included) and by the library: a case
 * that needs a size new to FFTW forgets it first. */
static size_t fresh_even(ref_rng *r, size_t lo, size_t hi)
{
  return 2 * ref_rng_range(r, lo / 2, hi / 2);
}

/* Forward then inverse against a float64 DFT of random input. 2D: the
 * spectrum transposed (fft.h), the transforms on a scratch of their own
 * (its contents from an earlier transform must not matter). */
static void check_transform(const cf_fft *f, size_t rows, size_t n, ref_rng *r)
{
  size_t nb = n / 2 + 1, count = rows * n;
  float *x = cf_alloc(count * sizeof *x), *in = cf_alloc(count * sizeof *in);
  float *spec = cf_alloc(2 * rows * nb * sizeof *spec);
  float *back = cf_alloc(count * sizeof *back);
  size_t ns = rows > 1 ? cf_fft2_scratch(f) : 1;
  float *scratch = cf_alloc(ns * sizeof *scratch);
  CHECK(x && in && spec && back && scratch, "out of memory");
  CHECK(rows == 1 || ns >= 2 * rows * nb, "scratch of %zu floats", ns);
  ref_rng_fill(r, x, count);
  ref_rng_fill(r, scratch, ns);
  memcpy(in, x, count * sizeof *x);
  if (rows == 1)
    cf_fft_forward(f, in, spec);
  else
    cf_fft2_forward(f, in, spec, scratch);
  double err = 0, norm = 0;
  for (size_t u = 0; u < rows; u++)
    for (size_t k = 0; k < nb; k++) {
      double re = 0, im = 0;
      for (size_t a = 0; a < rows; a++)
        for (size_t b = 0; b < n; b++) {
          double ph = -2 * M_PI *
                      ((double)(u * a % rows) / (double)rows +
                       (double)(k * b % n) / (double)n);
          re += x[a * n + b] * cos(ph);
          im += x[a * n + b] * sin(ph);
        }
      const float *g = spec + 2 * (rows == 1 ? k : k * rows + u);
      err += (g[0] - re) * (g[0] - re) + (g[1] - im) * (g[1] - im);
      norm += re * re + im * im;
    }
  CHECK(sqrt(err / norm) < 1e-5, "%zux%zu forward: relative L2 %.3g", rows, n,
        sqrt(err / norm));
  ref_rng_fill(r, scratch, ns);
  if (rows == 1) /* unnormalised: count * x */
    cf_fft_inverse(f, spec, back);
  else
    cf_fft2_inverse(f, spec, back, scratch);
  err = norm = 0;
  for (size_t i = 0; i < count; i++) {
    double d = back[i] / (double)count - x[i];
    err += d * d;
    norm += (double)x[i] * x[i];
  }
  CHECK(sqrt(err / norm) < 1e-5, "%zux%zu inverse: relative L2 %.3g", rows, n,
        sqrt(err / norm));
  cf_free(x), cf_free(in), cf_free(spec), cf_free(back), cf_free(scratch);
}

static const cf_fft *get(size_t rows, size_t n, cf_fft_mode mode)
{
  const cf_fft *f = NULL;
  cf_status s =
      rows == 1 ? cf_fft_get(n, mode, &f) : cf_fft2_get(rows, n, mode, &f);
  CHECK(s == CF_OK && f, "%zux%zu %s: %s", rows, n,
        mode == CF_FFT_QUICK ? "quick" : "measure", fft_error);
  return f;
}

/* Quick on a new size estimates; measure then makes a second, measured
 * plan; quick afterwards prefers it. */
static void test_quick_then_measure(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed);
  for (size_t i = 0; i < 6; i++) {
    size_t rows = i % 2 ? ref_rng_range(&r, 2, 24) : 1;
    size_t n = rows == 1 ? fresh_even(&r, 100 * i + 2, 100 * i + 100)
                         : fresh_even(&r, 6 * i + 2, 6 * i + 6);
    set_case("%zux%zu", rows, n);
    fftwf_forget_wisdom(); /* what planning other sizes taught FFTW */
    const cf_fft *q = get(rows, n, CF_FFT_QUICK);
    CHECK(cf_fft_hasty(q), "quick on a size never planned was measured");
    CHECK(get(rows, n, CF_FFT_QUICK) == q, "quick made a second plan");
    check_transform(q, rows, n, &r);
    const cf_fft *m = get(rows, n, CF_FFT_MEASURE);
    CHECK(m != q && !cf_fft_hasty(m), "measure took the estimated plan");
    CHECK(get(rows, n, CF_FFT_QUICK) == m, "quick ignored the measured plan");
    CHECK(get(rows, n, CF_FFT_MEASURE) == m, "measure planned twice");
    check_transform(m, rows, n, &r);
  }
}

/* 2D transforms wide enough for the column blocks of src/cpu/fft.c (64
 * columns of bins a block): whole blocks only, whole blocks and a
 * remainder, rows a multiple of its 8-row transpose strips or not, on
 * measured and estimated plans. Sizes of their own (n 126..300). */
static void test_2d_column_blocks(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 3);
  static const size_t sizes[][2] = {
      {13, 254}, /* 128 bins a row: two blocks */
      {24, 130}, /* 66: a block and 2 more */
      {3, 128},  /* 65: a block and 1 */
      {8, 126},  /* 64: one block */
  };
  for (size_t i = 0; i < 5; i++) {
    size_t rows, n;
    if (i < 4)
      rows = sizes[i][0], n = sizes[i][1];
    else /* a random one */
      rows = ref_rng_range(&r, 2, 21), n = fresh_even(&r, 132, 300);
    set_case("%zux%zu", rows, n);
    check_transform(get(rows, n, CF_FFT_QUICK), rows, n, &r);
    check_transform(get(rows, n, CF_FFT_MEASURE), rows, n, &r);
  }
}

/* Measure first: quick takes that plan, never a new one. */
static void test_measure_then_quick(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 1);
  for (int i = 0; i < 4; i++) {
    size_t rows = i % 2 ? ref_rng_range(&r, 25, 40) : 1;
    size_t n = rows == 1 ? fresh_even(&r, 602, 1200) : fresh_even(&r, 42, 60);
    set_case("%zux%zu", rows, n);
    const cf_fft *m = get(rows, n, CF_FFT_MEASURE);
    CHECK(!cf_fft_hasty(m), "measure estimated");
    CHECK(get(rows, n, CF_FFT_QUICK) == m, "quick did not take the plan");
  }
}

/* A size FFTW has wisdom for (here: measured by FFTW directly, as wisdom
 * loaded from disk would give, with the flags src/cpu/fft.c plans 1D
 * sizes with) comes out measured in quick mode. */
static void test_quick_from_wisdom(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 2);
  size_t n = fresh_even(&r, 1202, 1800);
  set_case("n %zu", n);
  fftwf_forget_wisdom();
  float *in = cf_alloc(n * sizeof *in), *spec = cf_alloc((n + 2) * 4);
  CHECK(in && spec, "out of memory");
  const unsigned flags = FFTW_MEASURE | FFTW_NO_BUFFERING;
  fftwf_plan a =
      fftwf_plan_dft_r2c_1d((int)n, in, (fftwf_complex *)spec, flags);
  fftwf_plan b = fftwf_plan_dft_c2r_1d((int)n, (fftwf_complex *)spec, in,
                                       flags | FFTW_DESTROY_INPUT);
  CHECK(a && b, "FFTW could not plan %zu", n);
  fftwf_destroy_plan(a), fftwf_destroy_plan(b);
  cf_free(in), cf_free(spec);
  const cf_fft *q = get(1, n, CF_FFT_QUICK);
  CHECK(!cf_fft_hasty(q), "quick estimated a size FFTW has wisdom for");
  CHECK(get(1, n, CF_FFT_MEASURE) == q, "measure planned again");
  check_transform(q, 1, n, &r);
}

/* A child's exit status, 0 where it has plan p, having freed what it
 * made: under valgrind (--setup valgrind traces children) a child's leak
 * turns its exit status into the error exit code 1, which read "not
 * saved" (the test failed in the suite under valgrind only). */
static int child_done(fftwf_plan p, float *in, float *spec)
{
  if (p)
    fftwf_destroy_plan(p);
  cf_free(in);
  cf_free(spec);
  return p ? 0 : 1;
}

/* Whether the wisdom file at path has real size n (1D, as fft.c plans
 * it): asked in a child, so this process's wisdom stays as it is. */
static int file_has_wisdom(const char *path, size_t n)
{
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0, "fork");
  if (pid == 0) {
    fftwf_forget_wisdom();
    float *in = cf_alloc(n * sizeof *in), *spec = cf_alloc((n + 2) * 4);
    if (!in || !spec || !fftwf_import_wisdom_from_filename(path))
      _exit(2);
    fftwf_plan a = fftwf_plan_dft_r2c_1d(
        (int)n, in, (fftwf_complex *)spec,
        FFTW_MEASURE | FFTW_NO_BUFFERING | FFTW_WISDOM_ONLY);
    _exit(child_done(a, in, spec));
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) < 2, "reading %s failed", path);
  return WEXITSTATUS(st) == 0;
}

/* Runs in parallel (xargs -P 8) share one wisdom file: a run saves what
 * it measured over what another saved since this one loaded, not in its
 * place (each save was this process's wisdom alone, so the last to save
 * dropped the others' sizes and the next runs measured them again, 0.5 s
 * each; QA). Here the other run is a child that measures size b and
 * saves only it between this process's sizes a and c. */
static void test_wisdom_saves_merge(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 4);
  size_t a = fresh_even(&r, 2402, 2800), b = fresh_even(&r, 2802, 3200),
         c = fresh_even(&r, 3202, 3600);
  set_case("a %zu, b %zu, c %zu", a, b, c);
  const char *dir = getenv("CF_TEST_TMP");
  char path[1024];
  snprintf(path, sizeof path, "%s/fft-merge-%ld.wisdom", dir ? dir : "/tmp",
           (long)getpid());
  mkdir(dir ? dir : "/tmp", 0777);
  unlink(path);
  setenv("CF_FFT_WISDOM", path, 1);
  get(1, a, CF_FFT_MEASURE);
  CHECK(file_has_wisdom(path, a), "size %zu not saved", a);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0, "fork");
  if (pid == 0) { /* another run: it loaded before a was saved */
    fftwf_forget_wisdom();
    float *in = cf_alloc(b * sizeof *in), *spec = cf_alloc((b + 2) * 4);
    fftwf_plan p = in && spec ? fftwf_plan_dft_r2c_1d(
                                    (int)b, in, (fftwf_complex *)spec,
                                    FFTW_MEASURE | FFTW_NO_BUFFERING)
                              : NULL;
    if (p && !fftwf_export_wisdom_to_filename(path)) {
      fftwf_destroy_plan(p);
      p = NULL;
    }
    _exit(child_done(p, in, spec));
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0,
        "the other run failed");
  get(1, c, CF_FFT_MEASURE);
  int has_a = file_has_wisdom(path, a), has_b = file_has_wisdom(path, b),
      has_c = file_has_wisdom(path, c);
  setenv("CF_FFT_WISDOM", "none", 1);
  unlink(path);
  CHECK(has_a && has_b && has_c,
        "after the other run's save and ours: a %d, b %d, c %d", has_a, has_b,
        has_c);
}

/* CF_FFT_PLANNING=estimate: one plan per size whatever the mode, and it is
 * not "hasty" (nothing better was asked for). */
static void test_estimate_setting(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 3);
  size_t n = fresh_even(&r, 1802, 2400);
  set_case("n %zu", n);
  setenv("CF_FFT_PLANNING", "estimate", 1);
  const cf_fft *m = get(1, n, CF_FFT_MEASURE);
  const cf_fft *q = get(1, n, CF_FFT_QUICK);
  unsetenv("CF_FFT_PLANNING");
  CHECK(m == q && !cf_fft_hasty(m), "estimate setting: two plans, or hasty");
}

/* More sizes than the cache once held (512: then every new size failed,
 * "FFT plan cache full", for the rest of the process). */
#define MANY_SIZES 1300

typedef struct many_sizes {
  size_t rows[MANY_SIZES], n[MANY_SIZES];
  const cf_fft *f[MANY_SIZES];
  _Atomic size_t published; /* f[0, published) are set */
  _Atomic int stop;
  _Atomic size_t lookups, wrong;
} many_sizes;

typedef struct many_reader_arg {
  many_sizes *m;
  uint64_t seed;
} many_reader_arg;

/* Looks up sizes already planned while another thread plans more. */
static void *many_reader(void *arg)
{
  many_reader_arg *a = arg;
  many_sizes *m = a->m;
  ref_rng r;
  ref_rng_init(&r, a->seed);
  while (!atomic_load(&m->stop)) {
    size_t k = atomic_load_explicit(&m->published, memory_order_acquire);
    if (k == 0)
      continue;
    size_t j = (size_t)(ref_rng_u64(&r) % k);
    const cf_fft *f = NULL;
    cf_status s = m->rows[j] == 1
                      ? cf_fft_get(m->n[j], CF_FFT_QUICK, &f)
                      : cf_fft2_get(m->rows[j], m->n[j], CF_FFT_QUICK, &f);
    if (s != CF_OK || f != m->f[j])
      atomic_fetch_add(&m->wrong, 1);
    atomic_fetch_add_explicit(&m->lookups, 1, memory_order_relaxed);
  }
  return NULL;
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* MANY_SIZES distinct sizes (1D, every tenth 2D) all plan and compute the
 * DFT; a size planned early keeps its plan (the same pointer) while the
 * cache grows; two threads looking up planned sizes while this one plans
 * always find the very plan, and keep finding them while this thread
 * holds the planner's lock (lookups take no lock). Estimated plans
 * (CF_FFT_PLANNING=estimate): a second or so. */
static void test_many_sizes(void **state)
{
  (void)state;
  many_sizes *m = xalloc(sizeof *m);
  /* Sizes above what the other cases draw, 7-smooth as the engines' (a
   * size with a large prime factor takes milliseconds to estimate): 1D
   * 2402..20000 (186), then 2D rows 41..512 (80) x 2, 4, ..., 28 */
  size_t k = 0;
  for (size_t n = 2402; n <= 20000; n = cf_fft_smooth(n + 2))
    if (n % 2 == 0)
      m->rows[k] = 1, m->n[k++] = n;
  for (size_t n = 2; k < MANY_SIZES; n += 2)
    for (size_t rows = 41; rows <= 512 && k < MANY_SIZES;
         rows = cf_fft_smooth(rows + 1))
      m->rows[k] = rows, m->n[k++] = n;
  setenv("CF_FFT_PLANNING", "estimate", 1);
  pthread_t th[2];
  many_reader_arg args[2];
  for (int t = 0; t < 2; t++) {
    args[t] = (many_reader_arg){m, check_seed + 10 + (uint64_t)t};
    CHECK(pthread_create(&th[t], NULL, many_reader, &args[t]) == 0,
          "pthread_create");
  }
  size_t failed = MANY_SIZES;
  cf_status fs = CF_OK;
  char msg[512] = "";
  size_t locked_lookups = 0;
  for (k = 0; k < MANY_SIZES; k++) {
    const cf_fft *f = NULL;
    fs = m->rows[k] == 1 ? cf_fft_get(m->n[k], CF_FFT_MEASURE, &f)
                         : cf_fft2_get(m->rows[k], m->n[k], CF_FFT_MEASURE, &f);
    if (fs != CF_OK || !f) {
      failed = k;
      snprintf(msg, sizeof msg, "%s", fft_error);
      break;
    }
    m->f[k] = f;
    atomic_store_explicit(&m->published, k + 1, memory_order_release);
    if (k == MANY_SIZES / 2) { /* readers must not wait on the planner */
      cf_fft_planner_lock();
      size_t l0 = atomic_load(&m->lookups);
      double t0 = now_s();
      while (atomic_load(&m->lookups) < l0 + 1000 && now_s() - t0 < 5)
        ;
      locked_lookups = atomic_load(&m->lookups) - l0;
      cf_fft_planner_unlock();
    }
  }
  atomic_store(&m->stop, 1);
  for (int t = 0; t < 2; t++)
    pthread_join(th[t], NULL);
  unsetenv("CF_FFT_PLANNING");
  set_case("size %zu of %d", failed, MANY_SIZES);
  CHECK(failed == MANY_SIZES, "%zux%zu: %s (%s)", m->rows[failed],
        m->n[failed], cf_status_name(fs), msg);
  CHECK(atomic_load(&m->wrong) == 0,
        "%zu of %zu concurrent lookups failed or found another plan",
        atomic_load(&m->wrong), atomic_load(&m->lookups));
  CHECK(locked_lookups >= 1000,
        "%zu lookups in 5 s while the planner's lock was held",
        locked_lookups);
  for (k = 0; k < MANY_SIZES; k++) {
    set_case("%zux%zu (size %zu)", m->rows[k], m->n[k], k);
    CHECK(get(m->rows[k], m->n[k], CF_FFT_MEASURE) == m->f[k] &&
              get(m->rows[k], m->n[k], CF_FFT_QUICK) == m->f[k],
          "a planned size has another plan now");
  }
  /* Against the naive DFT: in each third of the sizes, the first and the
   * last it can afford and a random one. */
  ref_rng r;
  ref_rng_init(&r, check_seed + 12);
  for (size_t part = 0; part < 3; part++) {
    size_t lo = part * MANY_SIZES / 3, hi = (part + 1) * MANY_SIZES / 3 - 1;
    size_t pick[3] = {lo, hi, ref_rng_range(&r, lo, hi)};
    for (int i = 0; i < 3; i++) {
      for (int tries = 0; tries < 1000; tries++) {
        k = pick[i];
        size_t count = m->rows[k] * m->n[k];
        if (count * m->rows[k] * (m->n[k] / 2 + 1) <= 15000000)
          break;
        pick[i] = i == 0 ? k + 1 : i == 1 ? k - 1 : ref_rng_range(&r, lo, hi);
      }
      k = pick[i];
      set_case("%zux%zu (size %zu)", m->rows[k], m->n[k], k);
      check_transform(m->f[k], m->rows[k], m->n[k], &r);
    }
  }
  free(m);
}

static int described_hasty(const cf_engine *e)
{
  return strstr(cf_engine_describe(e), "not measured") != NULL;
}

/* Through the library (its own plan cache): an audio kernel swap to
 * partition sizes the engine never planned, and a video kernel change to
 * FFT tiles, estimate; a new engine for the same kernel measures. */
static void test_engine_swap_is_quick(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 4);
  size_t l0 = 100, l1 = ref_rng_range(&r, 20000, 40000);
  fftwf_forget_wisdom();
  set_case("audio: %zu -> %zu taps, block 16", l0, l1);
  float *h = xalloc(l1 * sizeof *h);
  ref_rng_fill(&r, h, l1);
  cf_kernel *k0, *k1;
  CHECK_OK(cf_kernel_new_shared(h, l0, &k0));
  CHECK_OK(cf_kernel_new_shared(h, l1, &k1));
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.backend = CF_BACKEND_CPU;
  cfg.block_size = 16;
  cfg.algorithm = CF_ALGO_FFT_NONUNIFORM;
  cf_engine *e, *e2;
  CHECK_OK(cf_engine_new_audio(&cfg, k0, &e));
  CHECK(!described_hasty(e), "a new engine did not measure: %s",
        cf_engine_describe(e));
  float x[64] = {0}, y[64];
  CHECK_OK(cf_engine_process(e, x, y, 64));
  CHECK_OK(cf_engine_set_kernel(e, k1, 0));
  CHECK(described_hasty(e), "the swap measured: %s", cf_engine_describe(e));
  CHECK_OK(cf_engine_new_audio(&cfg, k1, &e2));
  CHECK(!described_hasty(e2), "a new engine took the estimated plans: %s",
        cf_engine_describe(e2));
  cf_engine_free(e), cf_engine_free(e2);
  cf_kernel_free(k0), cf_kernel_free(k1);

  unsigned side = (unsigned)ref_rng_range(&r, 35, 45);
  set_case("video: 3x3 -> %ux%u, GRAY8 160x120", side, side);
  cf_kernel2d *v0, *v1;
  float *t = xalloc((size_t)side * side * sizeof *t);
  ref_rng_fill(&r, t, (size_t)side * side);
  CHECK_OK(cf_kernel2d_new(1, 3, 3, t, &v0));
  CHECK_OK(cf_kernel2d_new(1, side, side, t, &v1));
  cf_video_config vc;
  cf_video_config_init(&vc);
  vc.width = 160, vc.height = 120, vc.format = CF_PIX_GRAY8;
  vc.backend = CF_BACKEND_CPU;
  vc.algorithm = CF_ALGO2D_FFT;
  CHECK_OK(cf_engine_new_video(&vc, v0, &e));
  CHECK_OK(cf_engine_set_kernel2d(e, v1));
  CHECK(described_hasty(e), "the kernel change measured: %s",
        cf_engine_describe(e));
  CHECK_OK(cf_engine_new_video(&vc, v1, &e2));
  CHECK(!described_hasty(e2), "a new engine took the estimated plan: %s",
        cf_engine_describe(e2));
  cf_engine_free(e), cf_engine_free(e2);
  cf_kernel2d_free(v0), cf_kernel2d_free(v1);
  free(t), free(h);
}

/* A random GRAY8 input frame and an output frame, tightly packed. */
static void gray8_frames(ref_rng *r, unsigned w, unsigned h, uint8_t **in,
                         uint8_t **out, cf_frame *fi, cf_frame *fo)
{
  *in = xalloc((size_t)w * h);
  *out = xalloc((size_t)w * h);
  for (size_t i = 0; i < (size_t)w * h; i++)
    (*in)[i] = (uint8_t)ref_rng_range(r, 0, 255);
  cf_frame_layout(CF_PIX_GRAY8, w, h, *in, fi);
  cf_frame_layout(CF_PIX_GRAY8, w, h, *out, fo);
}

/* A prepare call for a second thread: audio (k) or video (k2d). */
typedef struct prep_job {
  const cf_engine *e;
  const cf_kernel *k;
  const cf_kernel2d *k2d;
  cf_status s;
} prep_job;

static void *prepare_thread(void *arg)
{
  prep_job *j = arg;
  j->s = j->k2d ? cf_engine_prepare_kernel2d(j->e, j->k2d)
                : cf_engine_prepare_kernel(j->e, j->k);
  return NULL;
}

/* cf_engine_prepare_kernel, in another thread while the engine runs (TSan
 * watches this in build-tsan): the swap that follows finds measured plans
 * for the sizes it lacked. Sets that do not fit are refused as by
 * set_kernel. */
static void test_prepare_kernel(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 5);
  unsigned ch = (unsigned)ref_rng_range(&r, 1, 3);
  size_t l0 = ref_rng_range(&r, 50, 200), l1 = ref_rng_range(&r, 40000, 60000);
  set_case("%u ch, %zu -> %zu taps, block 32", ch, l0, l1);
  fftwf_forget_wisdom();
  float *h = xalloc(l1 * sizeof *h);
  ref_rng_fill(&r, h, l1);
  cf_kernel *k0, *k1, *bad;
  CHECK_OK(cf_kernel_new_shared(h, l0, &k0));
  CHECK_OK(cf_kernel_new_shared(h, l1, &k1));
  CHECK_OK(cf_kernel_new(CF_ROUTING_MATRIX, 1, ch + 1, &bad));
  for (unsigned i = 0; i < ch + 1; i++)
    CHECK_OK(cf_kernel_set(bad, i, h, 10));
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = ch;
  cfg.backend = CF_BACKEND_CPU;
  cfg.block_size = 32;
  cfg.algorithm = CF_ALGO_FFT_NONUNIFORM;
  cf_engine *e;
  CHECK_OK(cf_engine_new_audio(&cfg, k0, &e));
  size_t frames = 32 * 64;
  float *x = xalloc(frames * ch * sizeof *x), *y = xalloc(frames * ch * 4);
  ref_rng_fill(&r, x, frames * ch);
  prep_job j = {e, k1, NULL, CF_E_INTERNAL};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, prepare_thread, &j) == 0, "pthread_create");
  for (int i = 0; i < 20; i++)
    CHECK_OK(cf_engine_process(e, x, y, frames));
  pthread_join(t, NULL);
  CHECK(j.s == CF_OK, "prepare_kernel: %s", cf_last_error());
  CHECK_OK(cf_engine_set_kernel(e, k1, 100));
  CHECK(!described_hasty(e), "the swap after prepare_kernel estimated: %s",
        cf_engine_describe(e));
  CHECK_OK(cf_engine_process(e, x, y, frames));
  CHECK(cf_engine_prepare_kernel(e, bad) == CF_E_INVALID,
        "a matrix of %u inputs on %u channels was not refused", ch + 1, ch);
  cf_engine_free(e);
  cf_kernel_free(k0), cf_kernel_free(k1), cf_kernel_free(bad);
  free(h), free(x), free(y);
}

/* The same for video: cf_engine_prepare_kernel2d in another thread while
 * the engine filters frames; the kernel change that follows finds the
 * measured tile plan. A twin engine changed before the prepare shows the
 * tile was new (estimated). */
static void test_prepare_kernel2d(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 6);
  fftwf_forget_wisdom();
  /* sizes whose tile is new to this process (an earlier case may have
   * measured the one a draw lands on): the twin's change estimates */
  unsigned w = 0, h = 0, side = 0;
  float *t = NULL;
  cf_kernel2d *v0 = NULL, *v1 = NULL;
  cf_video_config vc;
  cf_engine *e = NULL, *twin = NULL;
  for (int attempt = 0; attempt < 8 && !twin; attempt++) {
    w = (unsigned)ref_rng_range(&r, 200, 300);
    h = (unsigned)ref_rng_range(&r, 150, 250);
    side = (unsigned)ref_rng_range(&r, 47, 60);
    set_case("GRAY8 %ux%u, 3x3 -> %ux%u", w, h, side, side);
    cf_kernel2d_free(v0), cf_kernel2d_free(v1);
    free(t);
    t = xalloc((size_t)side * side * sizeof *t);
    ref_rng_fill(&r, t, (size_t)side * side);
    CHECK_OK(cf_kernel2d_new(1, 3, 3, t, &v0));
    CHECK_OK(cf_kernel2d_new(1, side, side, t, &v1));
    cf_video_config_init(&vc);
    vc.width = w, vc.height = h, vc.format = CF_PIX_GRAY8;
    vc.backend = CF_BACKEND_CPU;
    vc.algorithm = CF_ALGO2D_FFT;
    vc.threads = 2;
    CHECK_OK(cf_engine_new_video(&vc, v0, &twin));
    CHECK_OK(cf_engine_set_kernel2d(twin, v1));
    if (!described_hasty(twin)) {
      cf_engine_free(twin);
      twin = NULL;
    }
  }
  CHECK(twin != NULL, "8 draws, every tile planned before the prepare");
  vc.pipeline_depth = (unsigned)ref_rng_range(&r, 0, 1);
  add_case(", depth %u", vc.pipeline_depth);
  CHECK_OK(cf_engine_new_video(&vc, v0, &e));
  uint8_t *in, *out;
  cf_frame fi, fo;
  gray8_frames(&r, w, h, &in, &out, &fi, &fo);
  prep_job j = {e, NULL, v1, CF_E_INTERNAL};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, prepare_thread, &j) == 0, "pthread_create");
  for (int i = 0; i < 10; i++)
    CHECK_OK(cf_engine_process_frame(e, &fi, &fo));
  pthread_join(th, NULL);
  CHECK(j.s == CF_OK, "prepare_kernel2d: %s", cf_last_error());
  CHECK_OK(cf_engine_set_kernel2d(e, v1));
  CHECK(!described_hasty(e),
        "the change after prepare_kernel2d estimated: "
        "%s",
        cf_engine_describe(e));
  CHECK_OK(cf_engine_process_frame(e, &fi, &fo));
  cf_engine_free(e), cf_engine_free(twin);

  /* refused as set_kernel2d refuses: a kernel the algorithm cannot run */
  vc.algorithm = CF_ALGO2D_SEPARABLE;
  cf_kernel2d *sep, *full;
  float col[3] = {1, 2, 1};
  CHECK_OK(cf_kernel2d_new(1, 1, 3, col, &sep));
  CHECK_OK(
      cf_kernel2d_new(1, 3, 3, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, &full));
  CHECK_OK(cf_engine_new_video(&vc, sep, &e));
  CHECK(cf_engine_prepare_kernel2d(e, full) == CF_E_INVALID,
        "a rank-3 kernel for algorithm separable was not refused");
  CHECK(cf_engine_set_kernel2d(e, full) == CF_E_INVALID,
        "set_kernel2d took what prepare_kernel2d refused");
  CHECK(cf_engine_prepare_kernel2d(e, NULL) == CF_E_INVALID,
        "a NULL kernel was not refused");
  cf_engine_free(e);
  cf_audio_config ac;
  cf_audio_config_init(&ac);
  ac.backend = CF_BACKEND_CPU;
  cf_kernel *a;
  CHECK_OK(cf_kernel_new_shared(t, 8, &a));
  CHECK_OK(cf_engine_new_audio(&ac, a, &e));
  CHECK(cf_engine_prepare_kernel2d(e, v1) == CF_E_STATE,
        "an audio engine took a video kernel");
  cf_engine_free(e);
  cf_kernel_free(a);
  cf_kernel2d_free(v0), cf_kernel2d_free(v1);
  cf_kernel2d_free(sep), cf_kernel2d_free(full);
  free(t), free(in), free(out);
}

/* backend=auto on a device (the fake one, src/engine/fake.c) that fails
 * after a kernel change: the CPU that takes over builds its plan quick,
 * and finds the tile prepare_kernel2d measured beforehand. The same
 * without the prepare (first, so the size is new) runs estimated. */
static int takeover_hasty(const cf_video_config *vc, const cf_kernel2d *v0,
                          const cf_kernel2d *v1, int prepare,
                          const cf_frame *fi, const cf_frame *fo)
{
  cf_engine *e;
  setenv("CF_TEST_FAKE_DEVICE", "call:3", 1);
  cf_status s = cf_engine_new_video(vc, v0, &e);
  unsetenv("CF_TEST_FAKE_DEVICE");
  CHECK_OK(s);
  CHECK(cf_engine_backend(e) == CF_BACKEND_CUDA, "the fake device is %s",
        cf_engine_describe(e));
  CHECK_OK(cf_engine_process_frame(e, fi, fo));
  if (prepare)
    CHECK_OK(cf_engine_prepare_kernel2d(e, v1));
  CHECK_OK(cf_engine_set_kernel2d(e, v1));
  for (int i = 0; i < 3; i++) /* the third call fails: the CPU takes over */
    CHECK_OK(cf_engine_process_frame(e, fi, fo));
  CHECK(cf_engine_backend(e) == CF_BACKEND_CPU && cf_engine_fallback_reason(e),
        "no switch to the CPU: %s", cf_engine_describe(e));
  CHECK(strstr(cf_engine_describe(e), "fft tiles"),
        "the CPU did not take FFT tiles: %s", cf_engine_describe(e));
  int hasty = described_hasty(e);
  cf_engine_free(e);
  return hasty;
}

static void test_prepare_kernel2d_takeover(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed + 7);
  fftwf_forget_wisdom();
  int fresh = 0;
  for (int attempt = 0; attempt < 8 && !fresh; attempt++) {
    unsigned w = (unsigned)ref_rng_range(&r, 400, 480);
    unsigned h = (unsigned)ref_rng_range(&r, 64, 100);
    unsigned kh = (unsigned)ref_rng_range(&r, 15, 20);
    unsigned kw = (unsigned)ref_rng_range(&r, 90, 110);
    set_case("fake device, GRAY8 %ux%u, 3x3 -> %ux%u", w, h, kh, kw);
    float *t = xalloc((size_t)kh * kw * sizeof *t);
    ref_rng_fill(&r, t, (size_t)kh * kw);
    cf_kernel2d *v0, *v1;
    CHECK_OK(cf_kernel2d_new(1, 3, 3, t, &v0));
    CHECK_OK(cf_kernel2d_new(1, kh, kw, t, &v1));
    cf_video_config vc;
    cf_video_config_init(&vc);
    vc.width = w, vc.height = h, vc.format = CF_PIX_GRAY8;
    vc.backend = CF_BACKEND_AUTO;
    vc.algorithm = CF_ALGO2D_FFT;
    vc.threads = 1;
    uint8_t *in, *out;
    cf_frame fi, fo;
    gray8_frames(&r, w, h, &in, &out, &fi, &fo);
    /* without a prepare first: a tile new to the process is estimated */
    fresh = takeover_hasty(&vc, v0, v1, 0, &fi, &fo);
    if (fresh)
      CHECK(!takeover_hasty(&vc, v0, v1, 1, &fi, &fo),
            "the takeover after prepare_kernel2d estimated");
    cf_kernel2d_free(v0), cf_kernel2d_free(v1);
    free(t), free(in), free(out);
  }
  CHECK(fresh, "8 draws, every tile planned before the prepare");
}

/* The application's own FFTW plans, in a thread of its own, while engines
 * plan theirs: an audio host whose other plug-ins use FFTW, a video app
 * with its own spectra. FFTW's planner is one per process; the library's
 * lock covered only its own planning, and this crashed the process in
 * FFTW (double free, corrupted heap) or hung it (QA). fft.c hooks FFTW's
 * planner to its lock when the library is loaded. Fresh engine sizes
 * (FFT sizes above every other case's), each checked on an impulse. */
typedef struct host_planner {
  atomic_int stop;
  atomic_size_t plans, failed;
  uint64_t seed;
} host_planner;

static void *host_plans(void *arg)
{
  host_planner *h = arg;
  float *in = fftwf_malloc(20000 * sizeof *in);
  fftwf_complex *out = fftwf_malloc(10001 * sizeof *out);
  ref_rng r;
  ref_rng_init(&r, h->seed);
  while (!atomic_load(&h->stop)) {
    int n = 2 * (int)ref_rng_range(&r, 32, 2048);
    fftwf_plan p = in && out ? fftwf_plan_dft_r2c_1d(n, in, out,
                                                      FFTW_ESTIMATE)
                             : NULL;
    if (p)
      fftwf_destroy_plan(p);
    else
      atomic_fetch_add(&h->failed, 1);
    atomic_fetch_add(&h->plans, 1);
  }
  fftwf_free(in);
  fftwf_free(out);
  return NULL;
}

static void test_host_plans_meanwhile(void **state)
{
  (void)state;
  setenv("CF_FFT_PLANNING", "estimate", 1);
  host_planner h = {.seed = check_seed + 40};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, host_plans, &h) == 0, "pthread_create");
  ref_rng r;
  ref_rng_init(&r, check_seed + 41);
  enum { ENGINES = 12 };
  unsigned made = 0;
  for (unsigned i = 0; i < ENGINES; i++) {
    /* FFT sizes of 2 x block and more: above test_many_sizes' 20000 */
    unsigned block = 10001 + 131 * i + (unsigned)ref_rng_range(&r, 0, 130);
    size_t len = block, n = 2 * (size_t)block;
    float *taps = xalloc(len * sizeof *taps), *x = xalloc(n * sizeof *x);
    float *y = xalloc(n * sizeof *y);
    ref_rng_fill(&r, taps, len);
    memset(x, 0, n * sizeof *x);
    x[0] = 1;
    cf_kernel *k = NULL;
    cf_engine *e = NULL;
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = CF_ALGO_FFT_UNIFORM;
    cfg.block_size = block;
    cfg.threads = 1;
    set_case("engine %u of %d: block %u, %zu taps", i, ENGINES, block, len);
    cf_status s = cf_kernel_new_shared(taps, len, &k);
    if (s == CF_OK)
      s = cf_engine_new_audio(&cfg, k, &e);
    if (s == CF_OK)
      s = cf_engine_process(e, x, y, n);
    CHECK(s == CF_OK, "%s: %s", cf_status_name(s), cf_last_error());
    /* the impulse response: the taps, latency frames later */
    size_t lat = cf_engine_latency(e);
    double err = 0, norm = 0;
    for (size_t j = 0; j < len && lat + j < n; j++) {
      err += (y[lat + j] - taps[j]) * (double)(y[lat + j] - taps[j]);
      norm += (double)taps[j] * taps[j];
    }
    CHECK(lat + len <= n && sqrt(err / norm) < 2e-5,
          "latency %zu: impulse response off by relative L2 %.3g", lat,
          sqrt(err / norm));
    made++;
    cf_engine_free(e);
    cf_kernel_free(k);
    free(taps), free(x), free(y);
  }
  atomic_store(&h.stop, 1);
  pthread_join(th, NULL);
  unsetenv("CF_FFT_PLANNING");
  set_case("%u engines", made);
  CHECK(atomic_load(&h.plans) > 0 && atomic_load(&h.failed) == 0,
        "the application's thread made %zu plans, %zu failed",
        atomic_load(&h.plans), atomic_load(&h.failed));
}

/* One stream of test_engines_in_threads: an engine made, fed a random
 * chunking and drained in its own thread. */
typedef struct stream_job {
  uint64_t seed;
  pthread_barrier_t *start; /* NULL: alone */
  unsigned ch;
  size_t len, n, frames; /* frames: y's length, n + the engine's tail */
  size_t lat;            /* the engine's latency */
  float *h, *x, *y;
  cf_status s;
  char why[600];
} stream_job;

static void *stream_thread(void *arg)
{
  stream_job *j = arg;
  ref_rng r;
  ref_rng_init(&r, j->seed);
  j->ch = (unsigned)ref_rng_range(&r, 1, 3);
  /* kernels past the direct path, some long enough for the non-uniform
   * partitions: FFT sizes that threads plan at once */
  j->len = ref_rng_range(&r, 200, 6000);
  j->n = ref_rng_range(&r, 2000, 6000);
  j->h = xalloc(j->len * sizeof *j->h);
  j->x = xalloc(j->n * j->ch * sizeof *j->x);
  ref_rng_fill(&r, j->h, j->len);
  ref_rng_fill(&r, j->x, j->n * j->ch);
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = j->ch;
  cfg.backend = CF_BACKEND_CPU;
  cfg.block_size = (unsigned)ref_rng_range(&r, 16, 700);
  cfg.algorithm = ref_rng_range(&r, 0, 1) ? CF_ALGO_FFT_NONUNIFORM
                                          : CF_ALGO_FFT_UNIFORM;
  cfg.threads = (unsigned)ref_rng_range(&r, 0, 3);
  cf_kernel *k = NULL;
  cf_engine *e = NULL;
  if (j->start)
    pthread_barrier_wait(j->start);
  cf_status s = cf_kernel_new_shared(j->h, j->len, &k);
  if (s == CF_OK)
    s = cf_engine_new_audio(&cfg, k, &e);
  size_t sizes[4096], m = 0, pos = 0, wrote = 0;
  if (s == CF_OK) {
    j->frames = j->n + cf_engine_tail(e);
    j->y = xalloc(j->frames * j->ch * sizeof *j->y);
    m = ref_chunking(&r, j->n, cfg.block_size, sizes, 4096);
  }
  for (size_t i = 0; s == CF_OK && i < m; pos += sizes[i++])
    s = cf_engine_process(e, j->x + pos * j->ch, j->y + pos * j->ch,
                          sizes[i]);
  if (s == CF_OK)
    s = cf_engine_drain(e, j->y + j->n * j->ch, j->frames - j->n, &wrote);
  snprintf(j->why, sizeof j->why, "%u ch, %zu taps, %zu frames in %zu "
           "calls, %s: %s", j->ch, j->len, j->n, m,
           e ? cf_engine_describe(e) : "no engine",
           s == CF_OK ? "ok" : cf_last_error());
  j->frames = s == CF_OK ? j->frames : 0;
  j->lat = e ? cf_engine_latency(e) : 0;
  j->s = s;
  cf_engine_free(e);
  cf_kernel_free(k);
  return NULL;
}

/* An application running many streams in one process: THREADS engines
 * made at once (their FFT sizes planned concurrently, with the plan cache
 * and FFTW's planner shared), each streaming random chunks in its own
 * thread with its own worker pool (threads 0..3: more threads than cores
 * in all). Every output matches the float64 reference, and each stream
 * run again alone afterwards gives the very same samples: running beside
 * others changes nothing. */
static void test_engines_in_threads(void **state)
{
  (void)state;
  enum { THREADS = 8 };
  setenv("CF_FFT_PLANNING", "estimate", 1);
  stream_job jobs[THREADS], alone;
  pthread_t th[THREADS];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, THREADS);
  for (unsigned i = 0; i < THREADS; i++) {
    jobs[i] = (stream_job){.seed = check_seed + 60 + i, .start = &start};
    CHECK(pthread_create(&th[i], NULL, stream_thread, &jobs[i]) == 0,
          "pthread_create");
  }
  for (unsigned i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  for (unsigned i = 0; i < THREADS; i++) {
    stream_job *j = &jobs[i];
    set_case("stream %u of %d: %s", i, THREADS, j->why);
    CHECK(j->s == CF_OK, "%s: %s", cf_status_name(j->s), j->why);
    double err = ref_worst_channel_l2(j->x, j->y, j->n, j->ch, j->h, j->len,
                                      j->lat);
    CHECK(err <= 2e-5, "relative L2 error %.3g beside %d other streams", err,
          THREADS - 1);
    alone = (stream_job){.seed = check_seed + 60 + i};
    stream_thread(&alone);
    CHECK(alone.s == CF_OK && alone.frames == j->frames &&
              memcmp(alone.y, j->y, j->frames * j->ch * sizeof *j->y) == 0,
          "alone, the stream gives other samples (%s)", alone.why);
    free(alone.h), free(alone.x), free(alone.y);
    free(j->h), free(j->x), free(j->y);
  }
  unsetenv("CF_FFT_PLANNING");
}

int main(void)
{
  setenv("CF_FFT_WISDOM", "none", 1);
  unsetenv("CF_FFT_PLANNING");
  check_seed = ref_seed();
  const struct CMUnitTest tests[] = {
      /* first: its engines' sizes new to the process */
      cmocka_unit_test(test_host_plans_meanwhile),
      cmocka_unit_test(test_engine_swap_is_quick),
      cmocka_unit_test(test_prepare_kernel),
      cmocka_unit_test(test_prepare_kernel2d),
      cmocka_unit_test(test_prepare_kernel2d_takeover),
      cmocka_unit_test(test_quick_then_measure),
      cmocka_unit_test(test_measure_then_quick),
      cmocka_unit_test(test_2d_column_blocks),
      cmocka_unit_test(test_quick_from_wisdom),
      cmocka_unit_test(test_wisdom_saves_merge),
      cmocka_unit_test(test_estimate_setting),
      cmocka_unit_test(test_many_sizes),
      cmocka_unit_test(test_engines_in_threads),
  };
  check_filter_from_env();
  return cmocka_run_group_tests_name("fft", tests, NULL, NULL);
}
