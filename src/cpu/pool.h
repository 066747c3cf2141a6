/* A small persistent worker pool: run fn(ctx, i) for i < n on the caller
 * and the workers that join in time (one still waking up when the caller
 * has taken the last item stays out), and return when every item is
 * done. */
#ifndef CF_CPU_POOL_H
#define CF_CPU_POOL_H

#include "cudafilter/error.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

typedef struct cf_pool cf_pool;
typedef void (*cf_pool_fn)(void *ctx, unsigned item);

/* pthread_create for the engine's own threads: they start with every
 * signal blocked but a fault's (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS, SIGABRT), whatever the creating thread's mask, so that the
 * application's SIGINT, SIGTERM, SIGCHLD... reach one of its threads, its
 * handler interrupting the call it was meant to (a read without
 * SA_RESTART), or the thread that sigwait()s for them, never one of ours
 * (GLib's threads start so too). The caller's mask is as it was. */
static inline int cf_thread_start(pthread_t *t, const pthread_attr_t *attr,
                                  void *(*fn)(void *), void *arg)
{
  sigset_t all, was;
  sigfillset(&all);
  /* a fault's signal blocked is a kill without its handler (a sanitizer's
   * report, a crash handler's dump) */
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                               SIGTRAP, SIGSYS, SIGABRT};
  for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
    sigdelset(&all, faults[i]);
  int masked = pthread_sigmask(SIG_SETMASK, &all, &was) == 0;
  int err = pthread_create(t, attr, fn, arg);
  if (masked)
    pthread_sigmask(SIG_SETMASK, &was, NULL);
  return err;
}

/* threads: total including the caller; 1 makes a pool that runs inline. */
cf_status cf_pool_new(unsigned threads, cf_pool **out);
void cf_pool_free(cf_pool *p);
unsigned cf_pool_threads(const cf_pool *p);
void cf_pool_run(cf_pool *p, cf_pool_fn fn, void *ctx, unsigned n);
/* Whether a job now would find every worker awake (spinning after a
 * recent job, or working), or would keep them awake: the previous call
 * came less than the workers' spin time ago, so jobs follow each other
 * faster than the workers fall asleep. Ask once per job that could use
 * the pool, from the thread that runs its jobs: a hint, read without a
 * lock. */
int cf_pool_hot(cf_pool *p);

/* The CPUs this process may use: those of its sched affinity, fewer
 * where its cgroup's CPU quota allows less time (ceil(quota / period)),
 * at least 1. */
unsigned cf_cpu_count(void);
/* The CPUs' worth of time that the cgroups named in PROC_CGROUP (the
 * format of /proc/self/cgroup) allow, with the cgroup file system at ROOT
 * (v2: ROOT/PATH/cpu.max; v1: ROOT/cpu,cpuacct/PATH/cpu.cfs_quota_us and
 * cpu.cfs_period_us), the lowest over each cgroup and its parents: 0 for
 * no limit or none readable. */
unsigned cf_cgroup_cpu_limit(const char *proc_cgroup, const char *root);

#endif
