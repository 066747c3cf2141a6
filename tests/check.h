/* Failure reporting shared by the engine suites (test_engine, test_video):
 * a failed CHECK prints the message, the variant and seed to rerun with,
 * and the parameters of the case running now, then fails the test. */
#ifndef CF_TEST_CHECK_H
#define CF_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include <cudafilter/engine.h>

struct CMUnitTest;

extern char g_case[4096];         /* parameters of the case running now */
extern const char *check_variant; /* the variant running now */
extern uint64_t check_seed;

void set_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void add_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void check_report(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* calloc that fails the test instead of returning NULL. */
void *xalloc(size_t n);

/* How the runner sees variant v: its name and backend, and whether it
 * plans FFTs (the first such variant plans with the engine's default,
 * the later ones with CF_FFT_PLANNING=estimate, unless that is set:
 * random sizes mean hundreds of FFT sizes, and plans are cached per
 * process). select() also makes v the suite's current variant. */
typedef struct check_variant_info {
  const char *name;
  cf_backend backend;
  int uses_fft;
} check_variant_info;

/* Run `tests` once per variant, honouring CF_TEST_VARIANT (a substring of
 * the names), CF_TEST_FILTER and CF_TEST_SKIP; a variant whose backend is
 * unavailable prints "skipped: <backend>: <reason>". Sets check_seed from
 * ref_seed() first. Returns the process exit code. */
int check_run_variants(const struct CMUnitTest *tests, size_t ntests,
                       size_t nvariants,
                       check_variant_info (*select)(size_t v));

/* CF_TEST_WORK, 0..1 (default 1): the share of its random cases a suite
 * runs. The sanitizer builds set it below 1 for their longest suites
 * (tests/meson.build): the plain build runs every case, the sanitizers
 * look for memory errors on the same paths, and CI's two builds must fit
 * its 20 minutes. check_cases(n): n cases scaled by it, at least one. */
double check_work(void);
unsigned check_cases(unsigned n);

/* Honour CF_TEST_FILTER and CF_TEST_SKIP (cmocka's patterns: * and ?,
 * e.g. 'test_gap' or 'test_file_video*') for the next group run. Every
 * suite calls it (check_run_variants does). */
void check_filter_from_env(void);

/* A suite forced onto backend `name` (cpu, cuda, auto; NULL or "" for
 * none) where that backend is unavailable: prints "skipped: <name>:
 * <reason>" and returns 1 (the suite then exits 77), else 0. */
int check_backend_skip(const char *name);
/* Whether the SSE control register keeps what is written to it (FTZ,
 * DAZ, rounding): 0 under valgrind, which runs every thread in the
 * default mode whatever is set, and where there is no SSE; says why. */
int check_mxcsr_settable(void);
/* /proc/self/status's FIELD ("VmSize", "VmRSS") in bytes, 0 if absent:
 * the tests under RLIMIT_AS (a small box) give a child what it maps now
 * and some room. */
size_t check_status_bytes(const char *field);
/* fork() a child whose address space (RLIMIT_AS) is what this process
 * maps now and ROOM bytes more: 0 in the child (which _exit(3)s where the
 * limit cannot be set), the child's pid in the parent. */
int check_fork_limited(size_t room);
/* Whether an address-space limit (RLIMIT_AS) holds for threads' stacks
 * here: not under AddressSanitizer (its shadow memory) nor valgrind (its
 * preload library in LD_PRELOAD: it makes thread stacks its own size,
 * whatever their attributes ask). Says why where it does not. */
int check_thread_limit_holds(void);
/* Waits for the child PID (check_fork_limited's): its exit status, or
 * minus the signal that ended it. */
int check_child_status(int pid);
/* The calling thread's signal mask against cf_thread_start's (pool.h):
 * nonzero where it lets an asynchronous signal through (SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM) or blocks a fault's
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL), saying which in why: to be called in
 * one of the engine's threads. */
/* Whether VmRSS can show memory given back here: not under
 * AddressSanitizer (its quarantine keeps freed blocks) nor valgrind; says
 * why where it cannot. Where it can, glibc is made to map blocks of 128
 * KiB and more on their own (M_MMAP_THRESHOLD), so that a free gives them
 * back: it raises that threshold past each mapped block freed (up to 32
 * MiB), after which earlier tests' frees left large blocks on the heap. */
int check_rss_shows_frees(void);
/* Whether this test runs under valgrind (its preload in LD_PRELOAD); if
 * so, says "skipped under valgrind: " and why (a part of a test that
 * valgrind itself makes impossible). */
int check_under_valgrind(const char *why);
/* VmRSS once it is at most WANT bytes (memory given back in another
 * thread), read every 10 ms for up to 5 s: the last value read. */
size_t check_rss_down_to(size_t want);
/* Bytes malloc has handed out and not had back, in every arena, mapped
 * blocks included (mallinfo2: uordblks + hblkhd): what a free shows at
 * once, where VmRSS may not (a block served from heap pages an earlier
 * test left resident; malloc_trim cannot give back every such page). As
 * check_rss_shows_frees says, not under AddressSanitizer nor valgrind. */
size_t check_heap_in_use(void);
/* check_heap_in_use() once it is at most WANT bytes, read every 10 ms for
 * up to 5 s: the last value read. */
size_t check_heap_down_to(size_t want);
enum { CHECK_WHY = 96 };
int check_engine_thread_mask(char why[CHECK_WHY]);
#if defined(__SSE2__)
/* CHECK that the caller's MXCSR control bits (the exception flags aside)
 * are `want` after the call named `after`. */
void check_mxcsr(unsigned want, const char *after);
#endif

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      check_report(__FILE__, __LINE__, __VA_ARGS__);                           \
      fail();                                                                  \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    cf_status st_ = (expr);                                                    \
    CHECK(st_ == CF_OK, "%s returned %s: %s", #expr, cf_status_name(st_),      \
          cf_last_error());                                                    \
  } while (0)

#endif
