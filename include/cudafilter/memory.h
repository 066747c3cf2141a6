/* cudafilter — host memory the engine copies from and to fastest.
 *
 * With a usable CUDA device, cf_host_alloc() returns page-locked (pinned)
 * memory registered with the CUDA runtime: the CUDA backend copies it to
 * and from the device directly, without a staging copy. Without one it
 * returns ordinary memory aligned to 64 bytes. Either way, free it with
 * cf_host_free(). Applications (and the GStreamer buffer pool) allocate
 * their frames here so that data lands where the GPU copies from.
 *
 * Pinning is slow (cudaHostAlloc maps and locks the pages; cudaFreeHost
 * waits for the whole device), so freed pinned blocks are kept and handed
 * out again for requests of about the same size (within 25%): at most 64
 * blocks and 64 MiB in all, the oldest released first; a block larger
 * than that is released at once. Ordinary blocks are kept the same way,
 * up to 64 blocks and 4 MiB (a buffer per audio block costs a heap
 * allocation that glibc makes slow). The kept pinned blocks go back to
 * the driver when the process exits (an exit handler, registered at the
 * first pinned allocation, that runs before the CUDA runtime's teardown),
 * so leak checkers such as compute-sanitizer see none. Both functions are
 * thread-safe. */
#ifndef CUDAFILTER_MEMORY_H
#define CUDAFILTER_MEMORY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* bytes > 0. Returns NULL when out of memory (cf_last_error() says why).
 * *pinned (if not NULL) is set to 1 for pinned memory, else 0. */
void *cf_host_alloc(size_t bytes, int *pinned);
void cf_host_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
