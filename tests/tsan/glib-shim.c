/* ThreadSanitizer cannot see GLib's GMutex and GCond on Linux: they are
 * futex based, not pthread objects, so every hand-over under
 * GST_OBJECT_LOCK or a GCond looks like a race to it. Preloaded into a
 * TSan process (tests/tsan/run), this library takes the calls other
 * libraries make to g_mutex_* and g_cond_* (GStreamer's, ours) and does
 * them with pthread objects hung off the GMutex/GCond, which TSan
 * intercepts. GLib's calls to its own locks stay inside GLib (it binds
 * them directly) and stay invisible: see tests/tsan/README.md for what
 * that leaves in the reports. Not for production use: a GMutex locked
 * both inside GLib and from outside would break (none is, in our runs). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* GLib's layouts (glib/gthread.h) */
typedef union {
  void *p;
  unsigned i[2];
} GMutex;
typedef struct {
  void *p;
  unsigned i[2];
} GCond;

/* The pthread object of a GMutex/GCond, made on first use (a GMutex is
 * zero-initialised and needs no g_mutex_init). */
static pthread_mutex_t *mutex_of(GMutex *m)
{
  pthread_mutex_t **slot = (pthread_mutex_t **)&m->p;
  pthread_mutex_t *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *fresh;
  if (p)
    return p;
  if (!(fresh = malloc(sizeof *fresh)))
    abort();
  pthread_mutex_init(fresh, NULL);
  if (__atomic_compare_exchange_n(slot, &p, fresh, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return fresh;
  pthread_mutex_destroy(fresh); /* another thread made it first */
  free(fresh);
  return p;
}

static pthread_cond_t *cond_of(GCond *c)
{
  pthread_cond_t **slot = (pthread_cond_t **)&c->p;
  pthread_cond_t *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *fresh;
  if (p)
    return p;
  if (!(fresh = malloc(sizeof *fresh)))
    abort();
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* g_get_monotonic_time */
  pthread_cond_init(fresh, &a);
  pthread_condattr_destroy(&a);
  if (__atomic_compare_exchange_n(slot, &p, fresh, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return fresh;
  pthread_cond_destroy(fresh);
  free(fresh);
  return p;
}

void g_mutex_init(GMutex *m) { m->p = NULL; }

void g_mutex_clear(GMutex *m)
{
  if (m->p) {
    pthread_mutex_destroy(m->p);
    free(m->p);
  }
  m->p = NULL;
}

void g_mutex_lock(GMutex *m) { pthread_mutex_lock(mutex_of(m)); }
void g_mutex_unlock(GMutex *m) { pthread_mutex_unlock(mutex_of(m)); }
int g_mutex_trylock(GMutex *m) { return !pthread_mutex_trylock(mutex_of(m)); }

void g_cond_init(GCond *c) { c->p = NULL; }

void g_cond_clear(GCond *c)
{
  if (c->p) {
    pthread_cond_destroy(c->p);
    free(c->p);
  }
  c->p = NULL;
}

void g_cond_wait(GCond *c, GMutex *m)
{
  pthread_cond_wait(cond_of(c), mutex_of(m));
}

void g_cond_signal(GCond *c) { pthread_cond_signal(cond_of(c)); }
void g_cond_broadcast(GCond *c) { pthread_cond_broadcast(cond_of(c)); }

/* end_time: g_get_monotonic_time() microseconds; FALSE on timeout */
int g_cond_wait_until(GCond *c, GMutex *m, int64_t end_time)
{
  struct timespec ts = {(time_t)(end_time / 1000000),
                        (long)(end_time % 1000000) * 1000};
  return pthread_cond_timedwait(cond_of(c), mutex_of(m), &ts) != ETIMEDOUT;
}
