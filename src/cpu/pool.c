/* Persistent workers, handed each job by a generation counter; items are
 * claimed with an atomic counter so uneven lanes balance.
 *
 * Waking a sleeping thread costs tens of microseconds on a virtual
 * machine (measured here: about 35 us per job for a 2-thread pool, more
 * than a 1024-frame audio step's work), so both sides spin for a while
 * before they sleep: a worker watches the generation for SPIN_NS after
 * its last job, and the caller watches for the job's end for SPIN_NS
 * before waiting on it. Jobs that follow each other closely (a stream
 * processed faster than real time, the bands of consecutive frames) then
 * cost no system call; a thread idle for longer sleeps on a condition
 * variable as before, so a live stream at real-time pace burns at most
 * SPIN_NS of CPU per job. Who sleeps is counted under the mutex, and the
 * other side takes the mutex to wake it only when someone does.
 *
 * A worker joins a job through its ticket before it touches it, and the
 * caller closes the ticket once it has taken the last item itself: it then
 * waits only for the workers that joined, which are working, never for
 * one still waking up (a sleeping worker woken for a job the caller
 * finishes alone costs the caller the broadcast, not the wake-up).
 *
 * A worker runs each job in the caller's floating-point control register
 * (x86's MXCSR: the audio engine flushes denormals during its calls,
 * fpenv.h), so that an item computes the same on whichever thread takes
 * it. */
#define _GNU_SOURCE
#include "pool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../engine/error_internal.h"
#include "fpenv.h"

#define SPIN_NS 100000 /* 100 us */

/* Workers' stacks. glibc gives a thread RLIMIT_STACK (8 MiB on most
 * systems) of address space: 16 audio engines of 16 channels at threads
 * = 16 made 240 workers, 1.9 GB of stacks of which each touched a few
 * KiB (VmSize 3.2 GB, RSS 340 MB), and under RLIMIT_AS (ulimit -v, a
 * container, the daemon on a small box) engines failed to start with
 * memory to spare (QA). The jobs' stack use, measured by painting the
 * workers' stacks (high-water mark, with the thread's TLS) in the engine,
 * video, fft, rt-alloc, gst and daemon suites, bench_engine up to 480000
 * taps and bench_conv2d up to 4K FFT tiles, fresh FFTW wisdom or not
 * (x86-64 with AVX-512, glibc 2.36, FFTW 3.3.10), release and ASan
 * builds: 17 KiB at most (FIR lanes, kernel spectra, FFTW executes,
 * video bands). Before fir.c planned a new bank in the calling thread, a
 * worker planning an FFT size with FFTW_MEASURE took 64 KiB (FFTW's
 * trial transforms take buffers of up to 64 KiB on the stack, as its
 * buffered 2D transforms of video tiles may). 256 KiB leaves 4x that.
 * The guard below it is FFTW's largest stack buffer, so that one
 * overrunning the stack faults instead of landing in other memory; it
 * costs address space only. */
#define WORKER_STACK ((size_t)256 << 10)
#define WORKER_GUARD ((size_t)64 << 10)

#define TICKET_JOINED 20 /* bits counting the workers in a job */
#define TICKET_CLOSED ((uint64_t)1 << TICKET_JOINED)
#define TICKET_GEN(g) ((uint64_t)(g) << (TICKET_JOINED + 1))
#define MAX_THREADS (1u << TICKET_JOINED)

struct cf_pool {
  unsigned nthreads; /* workers + caller */
  pthread_t *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  atomic_ulong gen;
  atomic_int quit;
  /* the job: written by the caller before gen is raised */
  cf_pool_fn fn;
  void *ctx;
  unsigned n;
  cf_fpenv env; /* the caller's floating-point control register */
  atomic_uint next;
  /* the job's generation (its low bits), TICKET_CLOSED once the caller
   * has closed it, and the workers that joined it (TICKET_JOINED bits) */
  atomic_uint_fast64_t ticket;
  atomic_uint finished; /* joined workers done with the job */
  atomic_uint sleepers; /* workers waiting on `wake` (changed under mu) */
  int caller_waits;     /* the caller waits on `done` (under mu) */
  atomic_uint_fast64_t last_ask; /* cf_pool_hot's previous call, ns */
};

static uint64_t now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void drain_items(cf_pool *p)
{
  unsigned i;
  while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
    p->fn(p->ctx, i);
}

/* Spin until the generation moves past `seen` (or quit), for at most
 * SPIN_NS; true if it did. */
static int spin_for_job(cf_pool *p, unsigned long seen)
{
  uint64_t t0 = now_ns();
  for (unsigned k = 0;; k++) {
    if (atomic_load_explicit(&p->gen, memory_order_acquire) != seen ||
        atomic_load_explicit(&p->quit, memory_order_relaxed))
      return 1;
    cpu_relax();
    if ((k & 63) == 63 && now_ns() - t0 > SPIN_NS)
      return 0;
  }
}

static void *worker(void *arg)
{
  cf_pool *p = arg;
  unsigned long seen = 0;
  for (;;) {
    if (!spin_for_job(p, seen)) {
      pthread_mutex_lock(&p->mu);
      p->sleepers++;
      while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit))
        pthread_cond_wait(&p->wake, &p->mu);
      p->sleepers--;
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->quit))
      break;
    seen = atomic_load_explicit(&p->gen, memory_order_acquire);
    /* join the job `seen` unless the caller has closed it (or moved on to
     * a later one, which the next turn joins) */
    uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    int joined = 0;
    while (!joined &&
           (t & ~(TICKET_CLOSED | (TICKET_CLOSED - 1))) == TICKET_GEN(seen) &&
           !(t & TICKET_CLOSED))
      joined = atomic_compare_exchange_weak_explicit(
          &p->ticket, &t, t + 1, memory_order_acq_rel, memory_order_acquire);
    if (!joined)
      continue;
    cf_fpenv_take(p->env);
    drain_items(p);
    /* the last of the workers that joined, once the job is closed (before,
     * the caller sees `finished` when it closes). Sequentially consistent,
     * as the caller's close and read: one of the two sees the other's
     * write, so no wake-up is lost. */
    unsigned f = atomic_fetch_add(&p->finished, 1) + 1;
    t = atomic_load(&p->ticket);
    if ((t & TICKET_CLOSED) && f == (unsigned)(t & (TICKET_CLOSED - 1))) {
      pthread_mutex_lock(&p->mu);
      if (p->caller_waits)
        pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

/* The first line of PATH (at most size-1 bytes), 0 where unreadable. */
static int read_line(const char *path, char *buf, size_t size)
{
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  int ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  return ok;
}

/* ceil(quota / period) of a cgroup, 0 for no limit or an unreadable one */
static unsigned cpus_of_quota(long long quota, long long period)
{
  if (quota <= 0 || period <= 0)
    return 0;
  long long n = (quota + period - 1) / period;
  return n > (long long)UINT_MAX ? UINT_MAX : (unsigned)n;
}

/* The lowest limit found in DIR and each folder above it up to ROOT (a
 * limit on a parent holds its children), by the v2 file cpu.max ("QUOTA
 * PERIOD" or "max PERIOD") or the v1 pair cpu.cfs_quota_us (-1 for none)
 * and cpu.cfs_period_us. */
static unsigned limit_up_from(const char *root, const char *dir, int v2)
{
  char path[4096], line[128];
  size_t rlen = strlen(root);
  if (snprintf(path, sizeof path, "%s%s", root, dir) >= (int)sizeof path)
    return 0;
  unsigned best = 0;
  for (;;) {
    size_t len = strlen(path);
    unsigned n = 0;
    long long q, per;
    char file[4200], word[32];
    if (v2) {
      if (snprintf(file, sizeof file, "%s/cpu.max", path) < (int)sizeof file &&
          read_line(file, line, sizeof line) &&
          sscanf(line, "%31s %lld", word, &per) == 2 &&
          strcmp(word, "max") != 0 && sscanf(word, "%lld", &q) == 1)
        n = cpus_of_quota(q, per);
    } else if (snprintf(file, sizeof file, "%s/cpu.cfs_quota_us", path) <
                   (int)sizeof file &&
               read_line(file, line, sizeof line) &&
               sscanf(line, "%lld", &q) == 1 &&
               snprintf(file, sizeof file, "%s/cpu.cfs_period_us", path) <
                   (int)sizeof file &&
               read_line(file, line, sizeof line) &&
               sscanf(line, "%lld", &per) == 1) {
      n = cpus_of_quota(q, per);
    }
    if (n && (!best || n < best))
      best = n;
    if (len <= rlen)
      return best;
    char *slash = strrchr(path + rlen, '/');
    if (!slash)
      return best;
    *slash = '\0';
  }
}

unsigned cf_cgroup_cpu_limit(const char *proc_cgroup, const char *root)
{
  FILE *f = fopen(proc_cgroup, "re");
  if (!f)
    return 0;
  char line[4096], dir[4096];
  unsigned best = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    /* "ID:CONTROLLERS:PATH": v2 is "0::PATH", v1's CPU line names "cpu"
     * among its controllers, mounted as ROOT/cpu or ROOT/cpu,cpuacct */
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/')
      continue;
    *c2 = '\0';
    const char *ctrls = c1 + 1, *path = c2 + 1;
    unsigned n = 0;
    if (!*ctrls) {
      n = limit_up_from(root, strcmp(path, "/") ? path : "", 1);
    } else {
      int cpu = 0;
      char list[256];
      snprintf(list, sizeof list, "%s", ctrls);
      for (char *save, *w = strtok_r(list, ",", &save); w;
           w = strtok_r(NULL, ",", &save))
        cpu |= !strcmp(w, "cpu");
      if (!cpu)
        continue;
      /* v1 mounts the hierarchy under its controllers' names */
      if (snprintf(dir, sizeof dir, "%s/%s", root, ctrls) >= (int)sizeof dir)
        continue;
      struct stat st;
      if (stat(dir, &st) != 0 &&
          snprintf(dir, sizeof dir, "%s/cpu", root) >= (int)sizeof dir)
        continue;
      n = limit_up_from(dir, strcmp(path, "/") ? path : "", 0);
    }
    if (n && (!best || n < best))
      best = n;
  }
  fclose(f);
  return best;
}

unsigned cf_cpu_count(void)
{
  unsigned n = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    n = (unsigned)CPU_COUNT(&set);
  else {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (unsigned)c : 1;
  }
  /* a container's CPU quota: 16 CPUs seen, 2 CPUs' worth of time given,
   * and 16 threads would take turns at its limit (QA) */
  unsigned q = cf_cgroup_cpu_limit("/proc/self/cgroup", "/sys/fs/cgroup");
  return q && q < n ? q : n;
}

cf_status cf_pool_new(unsigned threads, cf_pool **out)
{
  *out = NULL;
  cf_pool *p = calloc(1, sizeof *p);
  if (!p)
    return cf_fail(CF_E_NOMEM, "thread pool: out of memory");
  if (threads > MAX_THREADS) {
    free(p);
    return cf_fail(CF_E_INVALID, "thread pool: %u threads (at most %u)",
                   threads, MAX_THREADS);
  }
  p->nthreads = threads ? threads : 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  unsigned nw = p->nthreads - 1;
  p->workers = calloc(nw ? nw : 1, sizeof *p->workers);
  if (!p->workers) {
    cf_pool_free(p);
    return cf_fail(CF_E_NOMEM, "thread pool: out of memory");
  }
  /* the attributes where they take (a system whose minimum stack is
   * larger keeps its default) */
  pthread_attr_t attr;
  int have_attr = nw && pthread_attr_init(&attr) == 0;
  if (have_attr && (pthread_attr_setstacksize(&attr, WORKER_STACK) != 0 ||
                    pthread_attr_setguardsize(&attr, WORKER_GUARD) != 0)) {
    pthread_attr_destroy(&attr);
    have_attr = 0;
  }
  for (unsigned i = 0; i < nw; i++) {
    int err = cf_thread_start(&p->workers[i], have_attr ? &attr : NULL,
                              worker, p);
    if (err != 0) {
      if (have_attr)
        pthread_attr_destroy(&attr);
      p->nthreads = i + 1; /* join the ones that started */
      cf_pool_free(p);
      /* EAGAIN: no memory for its stack (a memory limit: QA) or a limit
       * on threads; CF_E_NOMEM, as engine.h documents for resources */
      return cf_fail(err == EAGAIN ? CF_E_NOMEM : CF_E_INTERNAL,
                     "thread pool: cannot start thread %u of %u: %s%s", i + 1,
                     nw, strerror(err),
                     err == EAGAIN ? " (out of memory for its stack, or a "
                                     "limit on threads)"
                                   : "");
    }
  }
  if (have_attr)
    pthread_attr_destroy(&attr);
  *out = p;
  return CF_OK;
}

void cf_pool_free(cf_pool *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->quit, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; p->workers && i + 1 < p->nthreads; i++)
    pthread_join(p->workers[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p->workers);
  free(p);
}

unsigned cf_pool_threads(const cf_pool *p) { return p->nthreads; }

int cf_pool_hot(cf_pool *p)
{
  if (p->nthreads < 2)
    return 0;
  uint64_t t = now_ns();
  uint64_t last =
      atomic_exchange_explicit(&p->last_ask, t, memory_order_relaxed);
  /* Jobs asked for back to back (within a worker's spin) would have kept
   * the workers awake had the previous one used them. Without this rule a
   * pool asleep before its first job (cudafir makes its engine at caps
   * time, and the first buffer comes later) never woke for short steps,
   * and a file filtered faster than real time ran on one thread:
   * bench_engine, 1024 taps in 1024-frame blocks on 2 threads, 23.2
   * ns/frame before, 15.5 after. */
  return atomic_load_explicit(&p->sleepers, memory_order_relaxed) == 0 ||
         (last && t - last < SPIN_NS);
}

void cf_pool_run(cf_pool *p, cf_pool_fn fn, void *ctx, unsigned n)
{
  if (p->nthreads == 1 || n < 2) {
    for (unsigned i = 0; i < n; i++)
      fn(ctx, i);
    return;
  }
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  p->env = cf_fpenv_get();
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
  /* the caller alone raises gen */
  unsigned long g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
  atomic_store_explicit(&p->ticket, TICKET_GEN(g), memory_order_relaxed);
  atomic_store_explicit(&p->gen, g, memory_order_release);
  /* a worker deciding to sleep checks gen under mu: either it sees the
   * new one, or it is counted here and woken */
  pthread_mutex_lock(&p->mu);
  if (p->sleepers)
    pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  drain_items(p);
  /* every item is taken: close the job to workers not in it yet, and wait
   * for those that are */
  unsigned joined = (unsigned)(atomic_fetch_or(&p->ticket, TICKET_CLOSED) &
                               (TICKET_CLOSED - 1));
  uint64_t t0 = now_ns();
  for (unsigned k = 0; atomic_load(&p->finished) != joined; k++) {
    cpu_relax();
    if ((k & 63) == 63 && now_ns() - t0 > SPIN_NS) {
      pthread_mutex_lock(&p->mu);
      p->caller_waits = 1;
      while (atomic_load(&p->finished) != joined)
        pthread_cond_wait(&p->done, &p->mu);
      p->caller_waits = 0;
      pthread_mutex_unlock(&p->mu);
      break;
    }
  }
}
