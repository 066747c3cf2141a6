/* Persistent workers woken per job by a generation counter under a mutex;
 * items are claimed with an atomic counter so uneven lanes balance. One
 * job costs two condition-variable hand-offs, so callers only use it for
 * work well above that (tens of microseconds). */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "../engine/error_internal.h"

struct cf_pool {
  unsigned nthreads; /* workers + caller */
  pthread_t *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  unsigned long gen;
  int quit;
  cf_pool_fn fn;
  void *ctx;
  unsigned n;
  atomic_uint next;
  unsigned busy; /* workers still inside the current job */
};

static void drain_items(cf_pool *p)
{
  unsigned i;
  while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
    p->fn(p->ctx, i);
}

static void *worker(void *arg)
{
  cf_pool *p = arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->gen == seen && !p->quit)
      pthread_cond_wait(&p->wake, &p->mu);
    if (p->quit)
      break;
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    drain_items(p);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0)
      pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

unsigned cf_cpu_count(void)
{
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (unsigned)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1;
}

cf_status cf_pool_new(unsigned threads, cf_pool **out)
{
  *out = NULL;
  cf_pool *p = calloc(1, sizeof *p);
  if (!p)
    return cf_fail(CF_E_NOMEM, "thread pool: out of memory");
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
  for (unsigned i = 0; i < nw; i++)
    if (pthread_create(&p->workers[i], NULL, worker, p) != 0) {
      p->nthreads = i + 1; /* join the ones that started */
      cf_pool_free(p);
      return cf_fail(CF_E_INTERNAL, "thread pool: cannot start thread %u of "
                     "%u", i + 1, nw);
    }
  *out = p;
  return CF_OK;
}

void cf_pool_free(cf_pool *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
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

void cf_pool_run(cf_pool *p, cf_pool_fn fn, void *ctx, unsigned n)
{
  if (p->nthreads == 1 || n < 2) {
    for (unsigned i = 0; i < n; i++)
      fn(ctx, i);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  atomic_store(&p->next, 0);
  p->busy = p->nthreads - 1;
  p->gen++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  drain_items(p);
  pthread_mutex_lock(&p->mu);
  while (p->busy)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
