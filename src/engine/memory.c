/* Host memory for frames and audio blocks: pinned through the CUDA
 * backend where a device is usable, else aligned heap memory. A small
 * header in front of the block remembers which, so cf_host_free() needs
 * no flag. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "cudafilter/memory.h"
#include "engine_internal.h"

#define HDR 64 /* keeps the caller's pointer 64-byte aligned */
#define MAGIC_HEAP 0x6366686561700000ull   /* "cfheap" */
#define MAGIC_PINNED 0x6366706e6e640000ull /* "cfpnnd" */

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

CF_PUBLIC void *cf_host_alloc(size_t bytes, int *pinned)
{
  if (pinned)
    *pinned = 0;
  if (bytes == 0 || bytes > SIZE_MAX - HDR) {
    cf_fail(CF_E_INVALID, "host alloc: %zu bytes", bytes);
    return NULL;
  }
  uint64_t magic = MAGIC_PINNED;
  void *base = NULL;
  if (have_device())
    base = cf_cuda_pinned_alloc(bytes + HDR);
  if (!base) {
    magic = MAGIC_HEAP;
    if (posix_memalign(&base, HDR, bytes + HDR) != 0) {
      cf_fail(CF_E_NOMEM, "host alloc: out of memory for %zu bytes", bytes);
      return NULL;
    }
  }
  *(uint64_t *)base = magic;
  if (pinned)
    *pinned = magic == MAGIC_PINNED;
  return (char *)base + HDR;
}

CF_PUBLIC void cf_host_free(void *p)
{
  if (!p)
    return;
  void *base = (char *)p - HDR;
  if (*(uint64_t *)base == MAGIC_PINNED)
    cf_cuda_pinned_free(base);
  else
    free(base);
}
