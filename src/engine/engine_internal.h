/* Internal: what a backend provides to the engine front (engine.c). */
#ifndef CF_ENGINE_INTERNAL_H
#define CF_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "../cpu/fft.h"
#include "cudafilter/engine.h"
#include "error_internal.h"

typedef struct cf_backend_ops {
  cf_status (*process)(void *impl, const float *in, float *out, size_t n);
  size_t (*latency)(const void *impl);
  size_t (*tail)(const void *impl);
  cf_status (*drain)(void *impl, float *out, size_t cap, size_t *written);
  void (*reset)(void *impl);
  cf_status (*set_kernel)(void *impl, const cf_kernel *k, size_t crossfade);
  void (*describe)(const void *impl, char *buf, size_t n);
  void (*destroy)(void *impl);
} cf_backend_ops;

struct cf_video_ops;
typedef struct cf_fb_stage cf_fb_stage;

/* One engine: audio engines have ops, video engines vops. */
struct cf_engine {
  /* unique in the process (cf_engine_new_id): the engine a prepared swap
   * was made on, where another may have taken its memory since */
  unsigned long long id;
  const cf_backend_ops *ops;
  const struct cf_video_ops *vops;
  void *impl;
  cf_backend backend;   /* the backend running now */
  cf_backend requested; /* what the configuration asked for (auto may fall
                           back to the CPU mid-stream) */
  unsigned cin, cout;
  /* fixed at creation (prepare_kernel reads them from any thread): the
   * backend it started on; audio: the latency of its path (without
   * what pipeline_depth adds) */
  size_t latency;
  cf_backend started;
  /* audio, pipeline_depth on a backend that does not pipeline across
   * calls itself (the CPU's, the fake device's, the CPU after a switch
   * from the device): the front delays the output by `delay` frames
   * through a ring of as many output frames (dring, next at dpos) */
  size_t delay, dpos;
  float *dring;
  char desc[320];
  char fallback[256]; /* why auto left the device ("" while it has not) */
  /* resets and drains so far (__atomic: prepare_swap reads it from any
   * thread): a swap built before one does not fit after it */
  unsigned resets;
  /* backend=auto running on CUDA: what a switch to the CPU mid-stream
   * needs (engine.c, fb_*): the configuration, the stages (kernel sets
   * with the input frame of their swap and its crossfade, oldest first),
   * and a ring of the last input frames (fb_mask + 1 frames). */
  cf_audio_config cfg;
  struct cf_fb_stage {
    cf_kernel *k;
    unsigned long long s;
    size_t x;
  } *stage;
  unsigned nstage, stage_cap;
  float *fb;
  size_t fb_mask;
  unsigned long long fb_t;
  /* video: the front's state (src/engine/video.c), NULL for audio */
  struct cf_video_front *vfront;
  /* audio: held by cf_engine_prepare_swap while it builds on a CUDA impl
   * from another thread, and by the switch to the CPU that destroys it */
  pthread_mutex_t impl_lock;
};

/* CF_OK with *out set to the backend that will run, or the reason the
 * requested one cannot. */
cf_status cf_engine_pick_backend(cf_backend requested, int device_id,
                                 cf_backend *out);

/* The CPU 1D backend (src/cpu/fir.c). fft_mode: CF_FFT_QUICK when the
 * stream is already running (a switch from the device); its kernel swaps
 * are always quick. latency: CF_CPU_LATENCY_PLAN for the one the plan of
 * cfg->algorithm for k needs (cf_plan_latency), else 0 or block - 1, held
 * with that algorithm's cheapest plan at it (a switch from the device
 * keeps the device's). */
#define CF_CPU_LATENCY_PLAN SIZE_MAX
cf_status cf_cpu_fir_new(const cf_audio_config *cfg, const cf_kernel *k,
                         unsigned out_channels, cf_fft_mode fft_mode,
                         size_t latency, void **impl,
                         const cf_backend_ops **ops);
/* Kernel swaps built ahead on the CPU backend (engine.h,
 * cf_engine_prepare_swap): whether ops are the CPU's; a bank for k primed
 * on the engine's history up to the frame it had published (*t0), from
 * any thread while the engine runs (no bank, CF_OK: the stream overwrote
 * the history while it was read, three times); taking it at the engine's
 * time, the banks it retired moved to dead (up to cap) for the caller to
 * free (CF_E_STATE: the engine's history no longer reaches back to t0,
 * nothing done; `reset`: the engine was reset or drained
 * since t0, the bank's state is cleared and primed on the frames since);
 * freeing one. */
int cf_cpu_fir_is(const cf_backend_ops *ops);
cf_status cf_cpu_fir_prepare_swap(const void *impl, const cf_kernel *k,
                                  uint64_t *t0, void **out);
cf_status cf_cpu_fir_set_prepared(void *impl, void *prepared, uint64_t t0,
                                  int reset, size_t crossfade, void **dead,
                                  unsigned *ndead, unsigned cap);
void cf_cpu_fir_free_prepared(const void *impl, void *prepared);
/* Make (measured) the FFT plans a CPU engine of cfg->channels in,
 * out_channels out, at `latency` with cfg's block and `algo` needs to take
 * kernel set k. Touches no engine: any thread. */
cf_status cf_cpu_fir_prepare(const cf_audio_config *cfg, unsigned out_channels,
                             size_t latency, cf_algorithm algo,
                             const cf_kernel *k);

/* Take n input frames into the history a later swap primes from, and
 * not into the convolutions (whose output until they have seen L - 1
 * frames is then wrong): a CPU backend taking over from CUDA gets the
 * past of the stream at the cost of a copy (src/cpu/fir.c). */
void cf_cpu_fir_preload(void *impl, const float *in, size_t n);

/* The CUDA 1D backend (src/cuda/; CF_E_UNAVAILABLE with a recorded
 * reason where it cannot serve this stream: built without CUDA, or a
 * configuration the CUDA path does not take yet). */
cf_status cf_cuda_fir_new(const cf_audio_config *cfg, const cf_kernel *k,
                          unsigned out_channels, void **impl,
                          const cf_backend_ops **ops);
/* Kernel swaps built ahead on the CUDA backend (engine.h,
 * cf_engine_prepare_swap): whether ops are the CUDA backend's; a bank for
 * k, made from any thread while the engine runs in another (its device
 * buffers, spectra and graphs, on a stream of its own: the device history
 * serves every bank, nothing to prime); taking it at the engine's time
 * (no allocation, no wait), the banks retired since moved to dead (up to
 * cap) for the caller to free (CF_E_STATE: the engine failed earlier,
 * swap as usual); freeing one, in any thread (it waits for the device). */
int cf_cuda_fir_is(const cf_backend_ops *ops);
cf_status cf_cuda_fir_prepare_swap(const void *impl, const cf_kernel *k,
                                   void **out);
cf_status cf_cuda_fir_set_prepared(void *impl, void *prepared, size_t crossfade,
                                   void **dead, unsigned *ndead, unsigned cap);
void cf_cuda_fir_free_prepared(void *prepared);

/* A new engine's id (struct cf_engine), never 0. */
unsigned long long cf_engine_new_id(void);

/* Test only (src/engine/fake.c): which call of a fake device fails (0:
 * none), counting the calls that move data, the kernel swaps and (video)
 * the history frames set. */
typedef struct cf_fake_fault {
  unsigned long long call, swap, base;
} cf_fake_fault;
/* 1 with *at set where CF_TEST_FAKE_DEVICE asks backend=auto to take the
 * CPU as if it were the device, else 0. */
int cf_fake_device(cf_fake_fault *at);
/* The CPU 1D backend wrapped so that its at->call-th process or drain
 * call fails with CF_E_DEVICE, and its at->swap-th set_kernel with
 * CF_E_NOMEM (fake.c). */
cf_status cf_fake_fir_new(const cf_audio_config *cfg, const cf_kernel *k,
                          unsigned out_channels, cf_fake_fault at,
                          void **impl, const cf_backend_ops **ops);

/* backend=auto: the errors that move an engine off the device (a failed
 * allocation, launch or copy); any other error is the caller's. */
static inline int cf_device_failure(cf_status s)
{
  return s == CF_E_DEVICE || s == CF_E_NOMEM;
}

/* A backend's kernel sets in swap order (src/cpu/fir.c, src/cuda/fir.c;
 * engine.h's cf_engine_set_kernel): output y comes from the last bank
 * whose swap point s is at or before y, blended with the bank before it
 * while y < s + x. Banks no coming output needs move to `retired`, for the
 * backend to free outside process(). The list grows (in set_kernel) when
 * swaps come faster than the latency lets banks go, as a burst of swaps
 * within one block does. src/engine/swaps.c. */
typedef struct cf_swap {
  uint64_t s;   /* swap point: in force from this y index */
  uint64_t end; /* the next swap's point (UINT64_MAX while the last) */
  size_t x;     /* crossfade frames from the bank before it */
} cf_swap;

typedef struct cf_swaps {
  void **bank;    /* n banks, oldest first */
  cf_swap *sw;    /* bank[i]'s place */
  void **retired; /* nretired banks to free */
  unsigned n, nretired, cap;
} cf_swaps;

/* Banks (in force and retired, not yet freed) the list holds before it
 * grows: a burst of up to this many swaps in force at once, prepared
 * ones handing every retired bank over (PREP_DEAD), allocates and frees
 * nothing in the engine's thread (engine.h, cf_engine_set_prepared). */
#define CF_SWAPS_START 64u

/* The first bank, in force from 0 (l zeroed before). */
cf_status cf_swaps_init(cf_swaps *l, void *first);
/* Room for one more bank beside the banks in force and retired (the
 * only call that allocates). */
cf_status cf_swaps_reserve(cf_swaps *l);
/* Move retired banks, oldest first, to dead[*ndead ..] up to cap (a
 * prepared swap takes them to free outside the engine's thread). */
void cf_swaps_take_retired(cf_swaps *l, void **dead, unsigned *ndead,
                           unsigned cap);
/* After cf_swaps_reserve: a swap to bank, asked for at y index t, with
 * a crossfade of x. It is in force from t, or where the crossfade before
 * it ends if that is later (engine.h: swaps never cut a crossfade short);
 * a swap still waiting for its point is retired in its favour. */
void cf_swaps_push(cf_swaps *l, void *bank, uint64_t t, size_t x);
/* Retire the banks no output at a y index >= y needs. */
void cf_swaps_retire(cf_swaps *l, uint64_t y);
/* A discontinuity: every swap completes, the newest bank is in force
 * from 0, the others are retired. */
void cf_swaps_reset(cf_swaps *l);
/* The bank in force at y, and in *w its weight against the bank before
 * it (1: alone). */
unsigned cf_swaps_pick(const cf_swaps *l, uint64_t y, double *w);
/* The arrays (the banks are the backend's). */
void cf_swaps_free(cf_swaps *l);

/* CUDA device query (src/cuda/device.c or device_none.c). */
cf_status cf_cuda_usable(int device_id, const char **reason);
/* Page-locked host memory, or NULL (no device, or the runtime refused). */
void *cf_cuda_pinned_alloc(size_t bytes);
void cf_cuda_pinned_free(void *p);
/* 1 when p is device memory of a CUDA device (cudaMalloc, cuMemAlloc,
 * any context), else 0; asked in device dev's primary context. */
int cf_cuda_device_memory(int dev, const void *p);

#endif
