/* What a CUDA engine must not do once it streams (src/cuda/: everything
 * is made when the configuration or the kernel is set, nothing per chunk
 * or frame): allocate or free, create streams, events, FFT plans or
 * graphs, run an FFT plan for the first time (cuFFT loads its kernels
 * then), copy or set synchronously, or wait for the whole device.
 * Counted by the emulated runtime (tests/emu/cudart_emu.cc, linked into
 * the cudaemu builds); against the real runtime cf_emu_calls is NULL and
 * nothing is counted. */
#ifndef CF_TESTS_GPU_STEADY_H
#define CF_TESTS_GPU_STEADY_H

#include <stddef.h>
#include <string.h>

unsigned long long cf_emu_calls(const char *fn) __attribute__((weak));

static const char *const steady_forbidden[] = {
    "cudaMalloc",
    "cudaFree",
    "cudaHostAlloc",
    "cudaFreeHost",
    "cudaStreamCreateWithFlags",
    "cudaStreamDestroy",
    "cudaEventCreate",
    "cudaEventCreateWithFlags",
    "cudaEventDestroy",
    "cudaStreamBeginCapture",
    "cudaGraphInstantiate",
    "cudaGraphExecDestroy",
    "cufftPlanMany",
    "cufftDestroy",
    "cufftExec (a plan's first)", /* loads its kernels (cudart_emu.cc) */
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemset",
    "cudaDeviceSynchronize",
};
#define STEADY_N (sizeof steady_forbidden / sizeof *steady_forbidden)

typedef struct {
  unsigned long long n[STEADY_N];
} steady_mark;

/* Whether calls are counted here (the emulated device). */
static inline int steady_counted(void)
{
  return cf_emu_calls != NULL;
}

static inline void steady_take(steady_mark *m)
{
  memset(m, 0, sizeof *m);
  for (size_t i = 0; steady_counted() && i < STEADY_N; i++)
    m->n[i] = cf_emu_calls(steady_forbidden[i]);
}

/* The first forbidden function called since `since` (*times: how often),
 * or NULL; `except` (if not NULL) is allowed. */
static inline const char *steady_broken(const steady_mark *since,
                                        const char *except,
                                        unsigned long long *times)
{
  steady_mark now;
  steady_take(&now);
  for (size_t i = 0; i < STEADY_N; i++)
    if (now.n[i] != since->n[i] &&
        !(except && !strcmp(except, steady_forbidden[i]))) {
      *times = now.n[i] - since->n[i];
      return steady_forbidden[i];
    }
  return NULL;
}

#endif
