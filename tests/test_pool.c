/* The CPU engine's worker pool (src/cpu/pool.c, compiled into this test):
 * every item of every job runs exactly once, whatever the pool's size, the
 * job's size and the gaps between jobs (back to back, workers spinning;
 * longer than their spin, workers asleep and woken); and cf_pool_hot, the
 * hint the FIR engine parallelises its short steps on, says hot for jobs
 * that come back to back even where the workers have fallen asleep, and
 * cold after a pause with nobody awake. Without the back-to-back rule an
 * engine made before its stream started (cudafir builds it at caps time)
 * never woke its workers for short steps: a file filtered through the
 * element ran on one thread. Workers run each job in the caller's
 * floating-point control register (x86: the audio engine flushes
 * denormals during its calls, src/cpu/fpenv.h). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/cpu/fpenv.h"
#include "../src/cpu/pool.h"
#include "../src/engine/error_internal.h"
#include "check.h"
#include "ref.h"

/* pool.c's error reporting (the library's own copy is hidden). */
static char pool_error[512];
cf_status cf_fail(cf_status status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pool_error, sizeof pool_error, fmt, ap);
  va_end(ap);
  return status;
}

static void sleep_us(long us)
{
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&t, &t) != 0) {
  }
}

#define MAX_ITEMS 257

typedef struct {
  atomic_uint count[MAX_ITEMS];
  atomic_uint extra; /* items asked for beyond n */
  unsigned n;
  unsigned spin; /* busy work per item, loop turns */
} job;

static void run_item(void *ctx, unsigned i)
{
  job *j = ctx;
  if (i >= j->n) {
    atomic_fetch_add(&j->extra, 1);
    return;
  }
  volatile unsigned x = 0;
  for (unsigned k = 0; k < j->spin; k++)
    x += k;
  (void)x;
  atomic_fetch_add(&j->count[i], 1);
}

/* Random pool sizes, job sizes, item lengths and gaps; each item counted
 * exactly once and nothing past n. */
static void test_every_item_once(void **state)
{
  (void)state;
  ref_rng r;
  ref_rng_init(&r, check_seed);
  job *j = xalloc(sizeof *j);
  for (unsigned threads = 1; threads <= 4; threads++) {
    cf_pool *p;
    assert_int_equal(cf_pool_new(threads, &p), CF_OK);
    assert_int_equal(cf_pool_threads(p), threads);
    for (int run = 0; run < 60; run++) {
      unsigned n = (unsigned)ref_rng_range(&r, 0, MAX_ITEMS);
      j->n = n;
      j->spin = (unsigned)ref_rng_range(&r, 0, 4000);
      for (unsigned i = 0; i < MAX_ITEMS; i++)
        atomic_store(&j->count[i], 0);
      atomic_store(&j->extra, 0);
      /* back to back, a short gap (workers spinning), or one past their
       * spin (asleep: the job wakes them) */
      unsigned gap = (unsigned)ref_rng_range(&r, 0, 2);
      if (gap == 1)
        sleep_us(20);
      else if (gap == 2)
        sleep_us(300 + (long)ref_rng_range(&r, 0, 700));
      if (ref_rng_range(&r, 0, 1))
        (void)cf_pool_hot(p); /* the hint changes nothing about the job */
      cf_pool_run(p, run_item, j, n);
      set_case("threads %u, run %d, %u items, gap %u", threads, run, n, gap);
      for (unsigned i = 0; i < MAX_ITEMS; i++)
        CHECK(atomic_load(&j->count[i]) == (i < n ? 1u : 0u),
              "item %u ran %u times", i, atomic_load(&j->count[i]));
      CHECK(atomic_load(&j->extra) == 0, "%u items past n ran",
            atomic_load(&j->extra));
    }
    cf_pool_free(p);
  }
  free(j);
}

/* Asleep, asked twice in a row: the first ask is cold, the second hot.
 * Retried where the two asks were preempted apart (a loaded machine); the
 * first is checked cold every time. */
static void test_hot_back_to_back(void **state)
{
  (void)state;
  cf_pool *p;
  assert_int_equal(cf_pool_new(2, &p), CF_OK);
  /* the worker spins 100 us after it starts, then sleeps; nothing wakes
   * it but a job, so once an ask after a pause is cold it stays asleep */
  int asleep = 0;
  for (int k = 0; k < 2000 && !asleep; k++) {
    sleep_us(2000);
    asleep = !cf_pool_hot(p);
  }
  assert_true(asleep);
  int hot = 0;
  for (int k = 0; k < 50 && !hot; k++) {
    sleep_us(2000);
    CHECK(!cf_pool_hot(p), "try %d: asleep, asked after 2 ms: said hot", k);
    hot = cf_pool_hot(p);
  }
  CHECK(hot, "50 asks right after another ask said cold: back-to-back jobs "
             "would never wake the workers");
  /* a job then runs on it, every item once */
  job *j = xalloc(sizeof *j);
  j->n = 64;
  cf_pool_run(p, run_item, j, j->n);
  for (unsigned i = 0; i < j->n; i++)
    assert_int_equal(atomic_load(&j->count[i]), 1);
  free(j);
  cf_pool_free(p);

  /* one thread: never hot, nothing to wake */
  assert_int_equal(cf_pool_new(1, &p), CF_OK);
  assert_false(cf_pool_hot(p));
  assert_false(cf_pool_hot(p));
  cf_pool_free(p);
}

#if defined(__SSE2__)
#define ENV_ITEMS 32

typedef struct {
  pthread_t caller;
  unsigned csr[ENV_ITEMS];
  atomic_uint on_worker; /* items a worker took */
} env_job;

static void env_item(void *ctx, unsigned i)
{
  env_job *j = ctx;
  j->csr[i] = _mm_getcsr();
  if (!pthread_equal(pthread_self(), j->caller))
    atomic_fetch_add(&j->on_worker, 1);
  sleep_us(300); /* long enough that the workers join */
}

/* The caller's MXCSR control bits (rounding, flush-to-zero,
 * denormals-are-zero) in every item, whichever thread takes it; the
 * workers' own stayed at the default before (QA: denormals flushed on the
 * caller's lanes and not on the workers'). Each control word until a
 * worker took part (a loaded machine may keep them out of a job). */
static void test_caller_fpenv(void **state)
{
  (void)state;
  static const unsigned words[] = {0x9fc0u, 0x7f80u, 0x1fc0u, 0x1f80u};
  if (!check_mxcsr_settable())
    skip();
  unsigned saved = _mm_getcsr();
  cf_pool *p;
  assert_int_equal(cf_pool_new(3, &p), CF_OK);
  env_job *j = xalloc(sizeof *j);
  for (unsigned w = 0; w < sizeof words / sizeof *words; w++) {
    int tries = 0;
    do {
      memset(j->csr, 0, sizeof j->csr);
      atomic_store(&j->on_worker, 0);
      j->caller = pthread_self();
      _mm_setcsr(words[w]);
      cf_pool_run(p, env_item, j, ENV_ITEMS);
      unsigned after = _mm_getcsr();
      _mm_setcsr(saved);
      set_case("control word %#x, try %d", words[w], tries);
      CHECK((after & ~CF_FPENV_FLAGS) == words[w],
            "the caller's MXCSR is %#x after the job", after);
      for (unsigned i = 0; i < ENV_ITEMS; i++)
        CHECK((j->csr[i] & ~CF_FPENV_FLAGS) == words[w],
              "item %u ran with MXCSR %#x", i, j->csr[i]);
    } while (atomic_load(&j->on_worker) == 0 && ++tries < 50);
    CHECK(atomic_load(&j->on_worker) > 0,
          "no worker took an item in 50 jobs of %d items of 0.3 ms",
          ENV_ITEMS);
  }
  free(j);
  cf_pool_free(p);
}
#else
static void test_caller_fpenv(void **state)
{
  (void)state;
  print_message("skipped: the control register is x86's MXCSR\n");
}
#endif

typedef struct {
  pthread_t caller;
  atomic_int on_worker, bad;
  char why[CHECK_WHY]; /* the first bad worker's */
} mask_job;

static void mask_item(void *ctx, unsigned i)
{
  (void)i;
  mask_job *j = ctx;
  if (!pthread_equal(pthread_self(), j->caller)) {
    atomic_fetch_add(&j->on_worker, 1);
    char why[CHECK_WHY];
    if (check_engine_thread_mask(why) && atomic_exchange(&j->bad, 1) == 0)
      memcpy(j->why, why, sizeof why);
  }
  sleep_us(300); /* long enough that the workers join */
}

/* The workers start with the application's signals blocked (a fault's
 * not), though the pool is made from a thread that blocks none: a SIGINT
 * or SIGCHLD went to whichever thread the kernel chose, a worker's too,
 * where the application's handler interrupted nothing it waited in, and
 * a sigwait() thread never saw it (QA). The caller's mask is kept. */
static void test_workers_block_signals(void **state)
{
  (void)state;
  sigset_t none, was, after;
  sigemptyset(&none);
  CHECK(pthread_sigmask(SIG_SETMASK, &none, &was) == 0, "sigmask");
  cf_pool *p;
  assert_int_equal(cf_pool_new(3, &p), CF_OK);
  pthread_sigmask(SIG_BLOCK, NULL, &after);
  pthread_sigmask(SIG_SETMASK, &was, NULL);
  CHECK(sigismember(&after, SIGINT) == 0 && sigismember(&after, SIGCHLD) == 0,
        "cf_pool_new left the caller's signals blocked");
  mask_job *j = xalloc(sizeof *j);
  j->caller = pthread_self();
  atomic_store(&j->on_worker, 0);
  atomic_store(&j->bad, 0);
  for (int tries = 0; atomic_load(&j->on_worker) == 0 && tries < 50; tries++)
    cf_pool_run(p, mask_item, j, 16);
  int on = atomic_load(&j->on_worker), bad = atomic_load(&j->bad);
  char why[CHECK_WHY];
  memcpy(why, j->why, sizeof why);
  free(j);
  cf_pool_free(p);
  CHECK(on > 0, "no worker took an item in 50 jobs of 16 items of 0.3 ms");
  CHECK(!bad, "a worker thread %s", why);
}

/* A box with little memory: a worker's stack that cannot be had (RLIMIT_AS
 * a few MiB over what the process maps, in a child) fails cf_pool_new
 * with CF_E_NOMEM and a message saying so (it said CF_E_INTERNAL
 * "cannot start thread 1 of 1", under a daemon's memory limit: QA). Not
 * under AddressSanitizer, whose shadow memory RLIMIT_AS does not allow. */
static void test_no_memory_for_threads(void **state)
{
  (void)state;
#if defined(__SANITIZE_ADDRESS__)
  print_message("skipped: RLIMIT_AS does not work under AddressSanitizer\n");
  skip();
#endif
  /* room for small allocations, not for 31 workers' stacks (320 KiB
   * each with their guards, pool.c) */
  pid_t pid = check_fork_limited(2u << 20);
  if (pid == 0) {
    cf_pool *p = NULL;
    pool_error[0] = 0;
    /* more than glibc's cache of the earlier tests' stacks holds (it
     * keeps up to 40 MiB: their threads, a few at a time) */
    cf_status s = cf_pool_new(32, &p);
    if (s == CF_OK)
      _exit(5);
    if (p)
      _exit(6);
    fprintf(stderr, "cf_pool_new: %d: %s\n", (int)s, pool_error);
    _exit(s == CF_E_NOMEM && strstr(pool_error, "out of memory") ? 0 : 7);
  }
  int st = check_child_status(pid);
  CHECK(st == 0,
        "child: status %d (3: setrlimit, 5: the pool started, 6: out set on "
        "failure, 7: not CF_E_NOMEM saying out of memory)",
        st);
}

/* A job that needs DEEP bytes of stack, as the deepest measured (FFTW
 * planning a size, pool.c), and counts its item. */
#define DEEP (64u << 10)
static void deep_item(void *ctx, unsigned i)
{
  volatile unsigned char buf[DEEP];
  for (size_t k = 0; k < DEEP; k += 4096)
    buf[k] = (unsigned char)i;
  buf[DEEP - 1] = (unsigned char)i;
  atomic_fetch_add((atomic_uint *)ctx, 1u + buf[0] - (unsigned char)i);
}

/* 16 engines of 16 channels at threads = 16 had 240 workers on 8 MiB
 * stacks: 1.9 GB of address space for a few KiB used each, and under
 * RLIMIT_AS (ulimit -v, a container) they failed with memory to spare
 * (QA). 16 pools of 16 threads, each running a job 64 KiB deep on every
 * thread, in a child given VmSize + 128 MiB. */
static void test_threads_small_address_space(void **state)
{
  (void)state;
  if (!check_thread_limit_holds())
    skip();
  enum { NP = 16, NT = 16, ITEMS = 64 };
  size_t vm = check_status_bytes("VmSize"), room = (size_t)128 << 20;
  pid_t pid = check_fork_limited(room);
  if (pid == 0) {
    cf_pool *p[NP] = {0};
    for (unsigned i = 0; i < NP; i++)
      if (cf_pool_new(NT, &p[i]) != CF_OK) {
        fprintf(stderr, "pool %u of %u: %s (VmSize %zu MiB)\n", i + 1, NP,
                pool_error, check_status_bytes("VmSize") >> 20);
        _exit(4);
      }
    fprintf(stderr, "%u pools of %u threads: VmSize %zu MiB (+%zu)\n", NP,
            NT, check_status_bytes("VmSize") >> 20, (check_status_bytes("VmSize") - vm) >> 20);
    for (unsigned i = 0; i < NP; i++) {
      atomic_uint done = 0;
      cf_pool_run(p[i], deep_item, &done, ITEMS);
      if (atomic_load(&done) != ITEMS)
        _exit(5);
      cf_pool_free(p[i]);
    }
    _exit(0);
  }
  int st = check_child_status(pid);
  CHECK(st == 0,
        "child: status %d (3: setrlimit, 4: a pool not made in VmSize + "
        "%zu MiB, 5: items lost)",
        st, room >> 20);
}

/* A file of the fake cgroup tree, its folders made as needed. */
static void put(const char *root, const char *rel, const char *text)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
    *s = '\0';
    (void)mkdir(path, 0700);
    *s = '/';
  }
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* cf_cpu_count follows a container's CPU quota (cgroup v2 cpu.max, v1
 * cpu.cfs_quota_us / cpu.cfs_period_us), rounded up, the lowest over a
 * cgroup and its parents; none, "max", -1 and unreadable files are no
 * limit. Before, a container given two CPUs' time on a 16-CPU host ran
 * 16 threads per engine, taking turns at the limit. Checked on fake
 * trees, and the real count against the real tree. */
static void test_cgroup_quota(void **state)
{
  (void)state;
  char root[] = "/tmp/cf-cgroup-XXXXXX";
  assert_non_null(mkdtemp(root));
  char proc[1100], fs[1100];
  snprintf(proc, sizeof proc, "%s/cgroup", root);
  snprintf(fs, sizeof fs, "%s/fs", root);

  /* v2, in a nested cgroup */
  put(root, "cgroup", "0::/a/b\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 0); /* no files */
  put(root, "fs/a/b/cpu.max", "max 100000\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 0);
  put(root, "fs/a/b/cpu.max", "150000 100000\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 2); /* 1.5 rounds up */
  put(root, "fs/a/cpu.max", "50000 100000\n"); /* the parent's is lower */
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 1);
  put(root, "fs/a/cpu.max", "900000 100000\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 2);
  put(root, "fs/cpu.max", "300000 300000\n"); /* the root folder counts */
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 1);
  put(root, "fs/cpu.max", "garbage\n");
  put(root, "fs/a/b/cpu.max", "0 100000\n"); /* nonsense is no limit */
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 9);
  /* a container without its own cgroup namespace: the path is the
   * host's, the tree mounted is its own: the root's file holds */
  put(root, "cgroup", "0::/docker/xyz\n");
  put(root, "fs/cpu.max", "400000 100000\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 4);

  /* v1, cpu and cpuacct mounted together, or cpu alone */
  put(root, "cgroup", "9:memory:/m\n4:cpu,cpuacct:/c\n0::/\n");
  put(root, "fs/cpu.max", "max 100000\n");
  put(root, "fs/cpu,cpuacct/c/cpu.cfs_quota_us", "-1\n");
  put(root, "fs/cpu,cpuacct/c/cpu.cfs_period_us", "100000\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 0);
  put(root, "fs/cpu,cpuacct/c/cpu.cfs_quota_us", "250000\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 3);
  put(root, "cgroup", "2:cpu:/d\n");
  put(root, "fs/cpu/d/cpu.cfs_quota_us", "100000\n");
  put(root, "fs/cpu/d/cpu.cfs_period_us", "50000\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 2);
  put(root, "cgroup", "not a cgroup line\n");
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 0);
  snprintf(proc, sizeof proc, "%s/none", root);
  assert_int_equal(cf_cgroup_cpu_limit(proc, fs), 0);

  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);

  /* this process: its affinity, lowered by its real quota if any */
  cpu_set_t set;
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  unsigned aff = (unsigned)CPU_COUNT(&set);
  unsigned q = cf_cgroup_cpu_limit("/proc/self/cgroup", "/sys/fs/cgroup");
  assert_int_equal(cf_cpu_count(), q && q < aff ? q : aff);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_item_once),
      cmocka_unit_test(test_hot_back_to_back),
      cmocka_unit_test(test_caller_fpenv),
      cmocka_unit_test(test_workers_block_signals),
      cmocka_unit_test(test_no_memory_for_threads),
      cmocka_unit_test(test_threads_small_address_space),
      cmocka_unit_test(test_cgroup_quota),
  };
  check_seed = ref_seed();
  check_filter_from_env();
  return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
