/* Failure reporting shared by the engine suites (see check.h). */
#include "check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ref.h"
#include "test_filter.h"

char g_case[4096];
const char *check_variant = "";
uint64_t check_seed;

void set_case(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_case, sizeof g_case, fmt, ap);
  va_end(ap);
}

void add_case(const char *fmt, ...)
{
  size_t used = strlen(g_case);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_case + used, sizeof g_case - used, fmt, ap);
  va_end(ap);
}

void check_report(const char *file, int line, const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("FAILED at %s:%d: %s\n  variant: %s (seed %llu, rerun with "
              "CF_TEST_SEED=%llu CF_TEST_VARIANT=%s)\n  case: %s\n",
              file, line, msg, check_variant,
              (unsigned long long)check_seed,
              (unsigned long long)check_seed, check_variant, g_case);
}

void *xalloc(size_t n)
{
  void *p = calloc(n ? n : 1, 1);
  if (!p) {
    print_error("out of memory (%zu bytes)\n", n);
    fail();
  }
  return p;
}

double check_work(void)
{
  const char *w = getenv("CF_TEST_WORK");
  double x = w ? atof(w) : 1.0;
  return x > 0 && x <= 1 ? x : 1.0;
}

unsigned check_cases(unsigned n)
{
  unsigned k = (unsigned)(n * check_work() + 0.999);
  return k < 1 ? 1 : k > n ? n : k;
}

void check_filter_from_env(void) { test_filter_from_env(); }

int check_run_variants(const struct CMUnitTest *tests, size_t ntests,
                       size_t nvariants, check_variant_info (*select)(size_t))
{
  int planning_set = getenv("CF_FFT_PLANNING") != NULL;
  check_seed = ref_seed();
  const char *only = getenv("CF_TEST_VARIANT");
  check_filter_from_env();
  int failed = 0;
  for (size_t v = 0; v < nvariants; v++) {
    check_variant_info info = select(v);
    check_variant = info.name;
    if (only && *only && !strstr(info.name, only))
      continue;
    const char *reason = NULL;
    if (cf_backend_available(info.backend, &reason) != CF_OK) {
      printf("skipped: %s: %s\n", cf_backend_name(info.backend),
             reason && *reason ? reason : "not available");
      fflush(stdout);
      continue;
    }
    failed += _cmocka_run_group_tests(info.name, tests, ntests, NULL, NULL);
    if (!planning_set && info.uses_fft)
      setenv("CF_FFT_PLANNING", "estimate", 1);
  }
  return failed ? 1 : 0;
}

int check_backend_skip(const char *name)
{
  cf_backend b;
  const char *reason = NULL;
  if (!name || !*name || cf_backend_from_string(name, &b) != CF_OK ||
      cf_backend_available(b, &reason) == CF_OK)
    return 0;
  printf("skipped: %s: %s\n", name,
         reason && *reason ? reason : "not available");
  return 1;
}

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#if defined(__SSE2__)
void check_mxcsr(unsigned want, const char *after)
{
  unsigned now = _mm_getcsr();
  CHECK((now & ~0x3fu) == (want & ~0x3fu),
        "after %s the caller's MXCSR is %#x, it was %#x", after, now, want);
}
#endif

int check_mxcsr_settable(void)
{
#if defined(__SSE2__)
  unsigned saved = _mm_getcsr();
  _mm_setcsr(0x9fc0u); /* FTZ, DAZ, rounding down */
  unsigned got = _mm_getcsr();
  _mm_setcsr(saved);
  if ((got & ~0x3fu) == 0x9fc0u)
    return 1;
  printf("skipped: MXCSR does not keep FTZ, DAZ and rounding (set 0x9fc0, "
         "read %#x): an emulator (valgrind runs the default mode)\n", got);
#else
  printf("skipped: no SSE control register (x86 only)\n");
#endif
  fflush(stdout);
  return 0;
}

size_t check_status_bytes(const char *field)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t flen = strlen(field), kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, flen) && line[flen] == ':' &&
        sscanf(line + flen + 1, "%zu kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb * 1024;
}

int check_fork_limited(size_t room)
{
  size_t vm = check_status_bytes("VmSize");
  CHECK(vm > 0, "no VmSize in /proc/self/status");
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    struct rlimit rl = {vm + room, vm + room};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
      _exit(3);
  }
  return (int)pid;
}

int check_thread_limit_holds(void)
{
#if defined(__SANITIZE_ADDRESS__)
  printf("skipped: RLIMIT_AS does not work under AddressSanitizer\n");
  fflush(stdout);
  return 0;
#else
  const char *p = getenv("LD_PRELOAD");
  if (!p || !strstr(p, "vgpreload"))
    return 1;
  printf("skipped: under valgrind, which makes threads' stacks its own "
         "size: no address-space limit on them holds\n");
  fflush(stdout);
  return 0;
#endif
}

int check_child_status(int pid)
{
  int st = 0;
  CHECK(waitpid((pid_t)pid, &st, 0) == (pid_t)pid, "waitpid: %s",
        strerror(errno));
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

int check_engine_thread_mask(char why[CHECK_WHY])
{
  static const int through[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM};
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  sigset_t m;
  if (pthread_sigmask(SIG_BLOCK, NULL, &m) != 0) {
    snprintf(why, CHECK_WHY, "pthread_sigmask failed");
    return 1;
  }
  for (size_t i = 0; i < sizeof through / sizeof *through; i++)
    if (sigismember(&m, through[i]) != 1) {
      snprintf(why, CHECK_WHY, "lets %s (%d) through", strsignal(through[i]),
               through[i]);
      return 1;
    }
  for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
    if (sigismember(&m, faults[i]) != 0) {
      snprintf(why, CHECK_WHY, "blocks %s (%d)", strsignal(faults[i]),
               faults[i]);
      return 1;
    }
  return 0;
}

int check_rss_shows_frees(void)
{
#if defined(__SANITIZE_ADDRESS__)
  printf("AddressSanitizer keeps freed memory in quarantine: the frames "
         "are checked, not the memory\n");
  fflush(stdout);
  return 0;
#else
  const char *p = getenv("LD_PRELOAD");
  if (p && strstr(p, "vgpreload")) {
    printf("under valgrind: the frames are checked, not the memory\n");
    fflush(stdout);
    return 0;
  }
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
  return 1;
#endif
}

int check_under_valgrind(const char *why)
{
  const char *p = getenv("LD_PRELOAD");
  if (!p || !strstr(p, "vgpreload"))
    return 0;
  printf("skipped under valgrind: %s\n", why);
  fflush(stdout);
  return 1;
}

size_t check_heap_in_use(void)
{
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

size_t check_heap_down_to(size_t want)
{
  size_t used = 0;
  for (int i = 0; i < 500; i++) {
    used = check_heap_in_use();
    if (used <= want)
      break;
    usleep(10000);
  }
  return used;
}

size_t check_rss_down_to(size_t want)
{
  size_t rss = 0;
  for (int i = 0; i < 500; i++) {
    rss = check_status_bytes("VmRSS");
    if (rss <= want)
      break;
    usleep(10000);
  }
  return rss;
}
