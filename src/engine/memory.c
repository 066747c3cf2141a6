/* Host memory for frames and audio blocks: pinned through the CUDA
 * backend where a device is usable, else aligned heap memory. A small
 * header in front of the block remembers which, so cf_host_free() needs
 * no flag.
 *
 * Freed pinned blocks are kept for reuse (the caches below): cudaHostAlloc
 * maps and locks pages in the driver, and cudaFreeHost waits for the whole
 * device, so a stream that allocates a buffer per block (cudafir's output,
 * and every upstream element writing into the memory it proposes) would
 * otherwise pay both per buffer and stall the engine's overlapped copies
 * each time downstream lets one go. Small heap blocks are kept too. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "cudafilter/memory.h"
#include "engine_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif

#define HDR 64 /* keeps the caller's pointer 64-byte aligned */
#define MAGIC_HEAP 0x6366686561700000ull   /* "cfheap" */
#define MAGIC_PINNED 0x6366706e6e640000ull /* "cfpnnd" */

/* In front of the caller's pointer (HDR bytes). */
typedef struct {
  uint64_t magic;
  uint64_t bytes; /* the whole block, header included */
} block_hdr;

/* Whether a CUDA device is usable, asked once: the runtime's answer does
 * not change within a process, and asking costs a cudart call per buffer
 * (the GStreamer allocator allocates per buffer). 0 unknown, 1 yes, 2 no. */
static atomic_int device_state;

static int have_device(void)
{
  int st = atomic_load(&device_state);
  if (st == 0) {
    st = cf_cuda_usable(0, NULL) == CF_OK ? 1 : 2;
    atomic_store(&device_state, st);
  }
  return st == 1;
}

/* ---- the caches ---------------------------------------------------------- */

/* Blocks come in size classes, so that buffers whose size changes a little
 * every time (a host's varying period) still find a block: 4 KiB steps up
 * to 32 KiB, then four classes per octave (at most 25% unused). */
static size_t size_class(size_t n)
{
  size_t step = 4096;
  while (step < (SIZE_MAX >> 3) && n > step * 8)
    step <<= 1;
  return n > SIZE_MAX - (step - 1) ? 0 : (n + step - 1) / step * step;
}

static void release_pinned(void *base)
{
  cf_cuda_pinned_free(base);
}
static void release_heap(void *base)
{
  free(base);
}

/* At most CACHE_BLOCKS blocks and max_bytes wait for reuse; a block larger
 * than max_bytes is released at once.
 * - Pinned: 64 MiB, room for a few video frames or hundreds of audio
 *   buffers.
 * - Heap (no device): 4 MiB, audio buffers and small frames. glibc serves
 *   a request above 1 KiB by consolidating its fastbins first, which
 *   GStreamer's small frees keep filling: cudafir's output buffer cost
 *   0.3 us in posix_memalign alone (perf, 1-tap kernel, 1024-frame
 *   buffers), more than the rest of its allocation. */
#define CACHE_BLOCKS 64

typedef struct {
  pthread_mutex_t lock;
  void *blocks[CACHE_BLOCKS]; /* oldest first */
  unsigned n;
  size_t bytes;
  size_t max_bytes;
  void (*release)(void *base);
} block_cache;

static block_cache pinned_cache = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                   .max_bytes = (size_t)64 << 20,
                                   .release = release_pinned};
static block_cache heap_cache = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                 .max_bytes = (size_t)4 << 20,
                                 .release = release_heap};

static size_t block_bytes(void *base)
{
  return (size_t)((block_hdr *)base)->bytes;
}

/* A cached block of exactly `bytes` (a class size), or NULL. */
static void *cache_take(block_cache *c, size_t bytes)
{
  void *base = NULL;
  pthread_mutex_lock(&c->lock);
  for (unsigned i = c->n; i-- > 0;) /* newest first: warm in cache */
    if (block_bytes(c->blocks[i]) == bytes) {
      base = c->blocks[i];
      for (unsigned j = i + 1; j < c->n; j++)
        c->blocks[j - 1] = c->blocks[j];
      c->n--;
      c->bytes -= bytes;
      break;
    }
  pthread_mutex_unlock(&c->lock);
  if (base)
    ASAN_UNPOISON_MEMORY_REGION((char *)base + HDR, bytes - HDR);
  return base;
}

/* Keep `base` for reuse, letting the oldest blocks go where it needs the
 * room; they (or base itself, if larger than the cache) are released
 * outside the lock. */
static void cache_put(block_cache *c, void *base)
{
  void *release[CACHE_BLOCKS + 1];
  unsigned n_release = 0;
  size_t bytes = block_bytes(base);
  /* a use after cf_host_free shows in a sanitizer build, as with free() */
  ASAN_POISON_MEMORY_REGION((char *)base + HDR, bytes - HDR);
  pthread_mutex_lock(&c->lock);
  if (bytes > c->max_bytes) {
    release[n_release++] = base;
  } else {
    unsigned drop = 0;
    while (c->n - drop == CACHE_BLOCKS || c->bytes + bytes > c->max_bytes) {
      c->bytes -= block_bytes(c->blocks[drop]);
      release[n_release++] = c->blocks[drop++];
    }
    for (unsigned j = drop; j < c->n; j++)
      c->blocks[j - drop] = c->blocks[j];
    c->n -= drop;
    c->blocks[c->n++] = base;
    c->bytes += bytes;
  }
  pthread_mutex_unlock(&c->lock);
  for (unsigned i = 0; i < n_release; i++) {
    ASAN_UNPOISON_MEMORY_REGION(release[i], block_bytes(release[i]));
    c->release(release[i]);
  }
}

/* At exit, the pinned blocks kept for reuse go back to the driver. The
 * handler is registered at the first pinned allocation, after the CUDA
 * runtime registered its own teardown, so it runs before that (exit
 * handlers run last registered first) while cudaFreeHost still works;
 * compute-sanitizer's leak check counted every cached block as leaked. A
 * handler registered from a shared library runs when it is unloaded too. */
static pid_t drain_pid; /* a forked child that exits leaves CUDA alone */

static void drain_pinned(void)
{
  if (getpid() != drain_pid)
    return;
  block_cache *c = &pinned_cache;
  void *release[CACHE_BLOCKS];
  pthread_mutex_lock(&c->lock);
  unsigned n = c->n;
  for (unsigned i = 0; i < n; i++)
    release[i] = c->blocks[i];
  c->n = 0;
  c->bytes = 0;
  pthread_mutex_unlock(&c->lock);
  for (unsigned i = 0; i < n; i++) {
    ASAN_UNPOISON_MEMORY_REGION(release[i], block_bytes(release[i]));
    c->release(release[i]);
  }
}

static pthread_once_t drain_once = PTHREAD_ONCE_INIT;

static void register_drain(void)
{
  /* atexit fails only out of memory; the blocks then stay cached until
   * the process ends, which costs nothing but the leak report */
  drain_pid = getpid();
  (void)atexit(drain_pinned);
}

/* ---- allocation --------------------------------------------------------- */

CF_PUBLIC void *cf_host_alloc(size_t bytes, int *pinned)
{
  if (pinned)
    *pinned = 0;
  if (bytes == 0 || bytes > SIZE_MAX - HDR) {
    cf_fail(CF_E_INVALID, "host alloc: %zu bytes", bytes);
    return NULL;
  }
  uint64_t magic = MAGIC_PINNED;
  size_t total = bytes + HDR, cls = size_class(total);
  void *base = NULL;
  if (have_device() && cls) {
    total = cls;
    base = cache_take(&pinned_cache, total);
    if (!base) {
      base = cf_cuda_pinned_alloc(total);
      if (base)
        pthread_once(&drain_once, register_drain);
    }
  }
  if (!base) {
    magic = MAGIC_HEAP;
    total = cls && cls <= heap_cache.max_bytes ? cls : bytes + HDR;
    if (total == cls)
      base = cache_take(&heap_cache, total);
    if (!base && posix_memalign(&base, HDR, total) != 0) {
      cf_fail(CF_E_NOMEM, "host alloc: out of memory for %zu bytes", bytes);
      return NULL;
    }
  }
  block_hdr *h = base;
  h->magic = magic;
  h->bytes = total;
  if (pinned)
    *pinned = magic == MAGIC_PINNED;
  return (char *)base + HDR;
}

CF_PUBLIC void cf_host_free(void *p)
{
  if (!p)
    return;
  void *base = (char *)p - HDR;
  cache_put(((block_hdr *)base)->magic == MAGIC_PINNED ? &pinned_cache
                                                       : &heap_cache,
            base);
}
