/* cudafilter — the streaming convolution engine.
 *
 * A 1D (audio) engine takes interleaved float32 frames of C_in channels and
 * returns interleaved float32 frames of C_out channels (C_out = C_in for
 * shared and per-channel kernels, the matrix's output count for matrix
 * kernels). For every output channel o:
 *
 *     y_o[n] = sum_i sum_k h_oi[k] * x_i[n - k],   x[n < 0] = 0.
 *
 * Streaming contract:
 *  - cf_engine_process() accepts ANY number of frames (0, 1, a prime, a
 *    million) and writes exactly as many frames as it reads. The output is
 *    the convolution delayed by cf_engine_latency() frames:
 *        out[n] = y[n - latency]   (zeros for n < latency),
 *    so cutting the input into any chunks gives the same concatenated
 *    output as one call on the whole signal.
 *  - cf_engine_drain() emits the remaining latency + L_max - 1 frames (the
 *    delayed tail) and returns the engine to its initial state.
 *  - cf_engine_reset() forgets all history (a discontinuity).
 *  - cf_engine_set_kernel() swaps kernels while running, with a linear
 *    crossfade (see there).
 * Nothing is allocated and no plan is built inside process()
 * (tests/test_rt_alloc.c counts).
 *
 * An engine is not thread-safe: one thread at a time may call it. Its
 * latency never changes (a fallback to the CPU keeps it): a host reads it
 * once, after creation. cf_engine_tail() and cf_engine_describe() change
 * with swaps: ask them in the engine's thread (a plugin's main thread
 * keeps the value its audio thread last read).
 *
 * Real-time threads: process() never allocates. On the CPU with threads
 * = 0 (one per core) or > 1 it hands channels to worker threads of normal
 * priority and waits for them (a mutex and a condition variable); with
 * threads = 1 it takes no lock and waits for nothing (a host whose audio
 * callback must not block sets it, and runs one engine per core). The
 * engine's threads (these workers, a pipelined video engine's thread)
 * start with every signal blocked but a fault's (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGTRAP, SIGSYS, SIGABRT), whatever the creating thread's mask:
 * the application's signals go to its own threads.
 *
 * On the CUDA backend every call (of audio and video engines, and
 * cf_host_alloc / cf_host_free) works in the primary context of the
 * engine's device (the CUDA runtime's) and leaves the calling thread's
 * current CUDA context as it found it: an application's own context
 * (cuCtxCreate, cuCtxPushCurrent, GStreamer's CUDA elements), another
 * device's, or none. Where none was current, the runtime's device for
 * the thread (cudaGetDevice) is put back too if that device's primary
 * context exists already. */
#ifndef CUDAFILTER_ENGINE_H
#define CUDAFILTER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_backend {
  CF_BACKEND_AUTO, /* CUDA where a usable device exists, else CPU */
  CF_BACKEND_CPU,
  CF_BACKEND_CUDA
} cf_backend;

/* How the CPU (or GPU) computes a 1D convolution. AUTO picks by measured
 * cost for the kernel length and block size; the others force a path
 * (on the CPU a kernel of one tap, a plain multiply, takes the direct
 * path whatever is forced, with the latency of the path forced). The
 * latency is fixed when the engine is made: AUTO on a short kernel picks
 * the direct path (latency 0), and a longer kernel swapped in later runs
 * with a direct head at latency 0, dearer than an FFT path at block - 1;
 * make the engine with the longest kernel it will take, or force an FFT
 * path, where the latency may be block - 1. */
typedef enum cf_algorithm {
  CF_ALGO_AUTO,
  CF_ALGO_DIRECT,         /* time domain, SIMD; latency 0 */
  CF_ALGO_FFT_UNIFORM,    /* overlap-save, uniform partitions of block_size */
  CF_ALGO_FFT_NONUNIFORM  /* overlap-save, partitions growing from block_size */
} cf_algorithm;

typedef struct cf_audio_config {
  unsigned channels;     /* C_in, 1..CF_MAX_CHANNELS */
  unsigned block_size;   /* FFT block in frames: the latency the FFT paths
                            add is block_size - 1; 1..CF_AUDIO_MAX_BLOCK,
                            default 1024 */
  cf_backend backend;    /* default CF_BACKEND_AUTO */
  int device_id;         /* CUDA device, default 0 */
  cf_algorithm algorithm;/* default CF_ALGO_AUTO */
  unsigned threads;      /* worker threads, 0 = one per core the process
                            may use (its CPU affinity, lowered to its
                            cgroup's CPU quota; the default);
                            on the CPU at most one per input channel (a
                            channel is the unit of work: cf_engine_describe
                            says how many run), at most 2^20 */
  unsigned pipeline_depth; /* blocks in flight across calls, 0..
                              CF_AUDIO_MAX_DEPTH (default 0): see below */
  size_t swap_history;   /* input frames kept so that a kernel swapped in
                            later sees the past: a new kernel up to this
                            long (or as long as the current one, if longer)
                            starts exactly; 0..CF_AUDIO_MAX_SWAP_HISTORY,
                            default 245760 (5.1 s at 48 kHz; the CPU
                            keeps it in 1 MiB a channel) */
} cf_audio_config;

/* Largest block_size accepted. */
#define CF_AUDIO_MAX_BLOCK 65536u
/* Largest pipeline_depth accepted. */
#define CF_AUDIO_MAX_DEPTH 8u
/* Largest swap_history accepted: the longest kernel there is (no swapped-in
 * kernel reads further back). */
#define CF_AUDIO_MAX_SWAP_HISTORY CF_KERNEL_MAX_TAPS
/* Longest crossfade a kernel swap takes, in frames (2^40: over 260 days
 * at 48 kHz, a minute at any rate GStreamer can carry; 2^31 where size_t
 * is 32 bits, and not 0 there, as (size_t)1 << 40 was). */
#define CF_AUDIO_MAX_CROSSFADE                                               \
  ((size_t)1 << (SIZE_MAX > 0xffffffffu ? 40 : 31))
/* FFT plans on the CPU (audio FFT paths, video FFT tiles, the CPU side of
 * backend auto) are made once per distinct FFT size and kept, shared, for
 * the life of the process: at most this many sizes. A call that needs a
 * size new to a process that has planned as many (engine and video engine
 * creation, set_kernel*, prepare_*) fails with CF_E_NOMEM. There are only
 * ~2000 1D sizes the engines use up to 2^24; a plan pair holds ~2-3
 * floats per point of a 1D size (~1 MB at 131072) or ~5 per row and
 * column of a 2D tile, plus 10-30 KB (32768 1080p tiles: ~1.6 GB). */
#define CF_FFT_MAX_SIZES 32768u

/* Fill cfg with the defaults above (channels = 1).
 *
 * pipeline_depth D. With 0 (live) every call returns the outputs its
 * input makes ready: the latency is the path's own (0 direct, block - 1
 * FFT). With D >= 1 the output is delayed by D more blocks (latency +
 * D x block_size frames, on every backend, so that it does not change
 * with where the engine runs): on CUDA, a block's work runs on the
 * device while the calls of the next D blocks bring more input, so a
 * stream of calls of a block each never waits for the device (throughput
 * of the copies and compute, not of their round trip); on the CPU it is
 * a plain delay. */
void cf_audio_config_init(cf_audio_config *cfg);

typedef struct cf_engine cf_engine;

/* Build a 1D engine. The kernel set must fit the stream: shared any
 * channels; per-channel exactly cfg->channels kernels; matrix
 * inputs == cfg->channels; every tap finite. The kernel is copied.
 * CF_E_INVALID names the field out of range (or what does not fit). */
cf_status cf_engine_new_audio(const cf_audio_config *cfg,
                              const cf_kernel *kernel, cf_engine **out);
void cf_engine_free(cf_engine *e);

/* in: frames * in_channels floats, out: frames * out_channels floats.
 * in == out is allowed when the channel counts are equal.
 *
 * NaN/Inf in the input never enter the kernel (a kernel set holds finite
 * taps only: cf_kernel_set, cf_kernel_scale and the engine refuse others)
 * and reach only outputs whose kernel reads that input channel. A
 * non-finite x_i[s] (y index s: output frame s + latency) makes
 * non-finite, with L = the length of h_oi (the longest of the sets in
 * force around a swap):
 *  - on the direct path, exactly y_o[s .. s + L - 1], as IEEE arithmetic
 *    does (on CUDA the taps are zero-padded to a multiple of 8, and
 *    NaN x 0 is NaN: L counts rounded up so);
 *  - on the FFT paths (and auto where it plans FFT partitions:
 *    cf_engine_describe() lists them), whole FFT blocks: y_o[n] for n in
 *    [B * floor(s / B), s + L - 1 + 3P] may be non-finite, outputs
 *    before s in its block included, with B = block_size and P the
 *    largest partition (at most B on fft-uniform and on CUDA; at most the
 *    larger of B and the longest kernel reading input i on
 *    fft-nonuniform).
 * Outputs outside that span are unaffected; cf_engine_reset() forgets
 * the sample. Finite samples near float's range act so on the FFT paths
 * too, where the direct path's outputs stay finite: a transform frame
 * (2 x partition samples) whose magnitudes sum to about FLT_MAX (3.4e38:
 * one sample of 2e38, or 256 of 1.5e36; +750 dBFS) overflows to
 * infinity, and that span's outputs are not finite.
 *
 * Denormals (x86): the CPU backend filters with denormal floats flushed
 * to zero: process(), drain(), set_kernel(), prepare_swap() and
 * set_prepared() set the SSE control register's flush-to-zero and
 * denormals-are-zero bits (MXCSR) for the call, in the calling thread
 * and in the worker threads, and give the caller back its control bits
 * (rounding, FTZ, DAZ, masks) as they were. A signal decaying into
 * denormals (a reverb's tail, a fade to silence) then costs no more than
 * a signal: with them, this project's AMD EPYC VM ran the FFT paths
 * up to 2.3x slower (bench_engine --denormal), and many x86 CPUs are
 * reported to be far slower still. Input samples, products and
 * sums below FLT_MIN (1.2e-38, -758 dBFS) count as 0, so an output
 * differs from IEEE arithmetic's by about FLT_MIN times the terms it sums
 * (the kernel's length L, or the FFT's) at most, and one that only
 * denormal inputs reach is exactly 0. Elsewhere than x86 the CPU's mode
 * is left as it is; on CUDA the device's own rules hold. */
/* in and out are one buffer (in place: equal channel counts) or do not
 * overlap at all; CF_E_INVALID otherwise. */
cf_status cf_engine_process(cf_engine *e, const float *in, float *out,
                            size_t frames);

/* Frames the engine delays its output by (0 on the direct path,
 * block_size - 1 on the FFT paths, plus pipeline_depth x block_size). */
size_t cf_engine_latency(const cf_engine *e);
/* Frames cf_engine_drain() will write: latency + L_max - 1. */
size_t cf_engine_tail(const cf_engine *e);
/* Write the tail (cf_engine_tail() frames, out holds capacity frames) and
 * reset. CF_E_INVALID if capacity is too small (nothing written). */
cf_status cf_engine_drain(cf_engine *e, float *out, size_t capacity,
                          size_t *written);
cf_status cf_engine_reset(cf_engine *e);

/* Replace the kernel set. With S the number of input frames processed so
 * far and X = crossfade frames, the convolution becomes
 *     y[n] = (1 - w(n)) * y_old[n] + w(n) * y_new[n],
 *     w(n) = 0 for n < S, (n - S + 1) / (X + 1) for S <= n < S + X,
 *            1 for n >= S + X,
 * where y_old and y_new are the convolutions of the whole input with the
 * old and new kernels (the new kernel sees the past input: see
 * swap_history). X = 0 switches at S; X is 0..CF_AUDIO_MAX_CROSSFADE.
 * With backend auto on CUDA the engine keeps the input since the swap
 * (X + latency frames at most) for a switch to the CPU during the
 * crossfade: a crossfade too long for that memory is refused
 * (CF_E_NOMEM, nothing changed). The in/out channel counts must stay
 * the same; the latency may not change (same block size and path family).
 * Crossfades never overlap or stop short, so the output has no step: a
 * swap asked for while a crossfade runs takes effect where that one ends
 * (S is then that frame, not the frames processed), and one still waiting
 * for its point when another is asked for never happens (the newer one
 * takes its place; a slider moved faster than the crossfade lands on its
 * latest value). cf_engine_reset() and cf_engine_drain() complete every
 * swap, waiting ones included: the newest kernel alone filters what comes
 * after them.
 * This call may allocate; process() never does. It never runs FFTW's
 * measuring planner: FFT sizes no plan exists for yet are estimated
 * (cf_engine_prepare_kernel() measures them beforehand). But FFTW plans
 * one size at a time in a process: an estimate waits for another
 * thread's measuring (an engine being made, prepare_kernel, prepare_swap:
 * up to a second or so per size the first time on a machine). A
 * real-time thread swaps with prepare_swap and set_prepared, which plans
 * nothing. */
cf_status cf_engine_set_kernel(cf_engine *e, const cf_kernel *kernel,
                               size_t crossfade);

/* Get ready for a later cf_engine_set_kernel(e, kernel, ...): make, in the
 * calling thread, the FFT plans the CPU needs for it (measured, as at
 * creation: up to a second or so the first time on a machine, then from
 * FFTW's wisdom on disk). set_kernel never measures on a running engine:
 * without this it plans what it lacks by estimate, which runs up to ~40%
 * slower. Unlike the other calls, it may run in another thread while the
 * engine runs (it reads only what the engine was built with); the engine
 * must outlive it. On an engine that started on CUDA with backend auto it
 * prepares the plans a switch to the CPU would use (with backend cuda
 * there is nothing to prepare). CF_E_INVALID where set_kernel would
 * refuse the set. */
cf_status cf_engine_prepare_kernel(const cf_engine *e,
                                   const cf_kernel *kernel);

/* A kernel swap built ahead, for real-time streams. set_kernel builds the
 * new set's spectra and replays the input history through it (at 131072
 * taps, a millisecond or more: longer than a small block). Here that work
 * runs in the calling thread while the engine runs in another:
 *   - cf_engine_prepare_swap(e, kernel, &p), in any thread (like
 *     prepare_kernel, it may run while another thread calls process()):
 *     the new set built and run over the engine's input history up to the
 *     frame process() had reached;
 *   - cf_engine_set_prepared(e, p, crossfade), later, in the engine's
 *     thread: exactly cf_engine_set_kernel(e, kernel, crossfade) at that
 *     moment (the same swap point, the same output up to rounding), but
 *     it replays only the frames since prepare_swap, and frees nothing:
 *     the memory of the kernel sets the swap retires goes into p (nor
 *     does it allocate, while at most 64 kernel sets are in
 *     force at once: a burst of swaps closer together than the latency
 *     or a crossfade keeps them all; past 64 the engine's lists grow,
 *     doubling at 64, 128, 256 and so on, and sets p cannot hold are freed there);
 *   - cf_swap_prep_free(p) then, in any thread (made or not; not in a
 *     real-time one: it gives memory back). The engine must outlive p.
 * On the CUDA backend prepare_swap builds the new set's device buffers,
 * spectra and graphs (the device keeps the input history, nothing is
 * replayed), and set_prepared neither allocates, frees nor waits for the
 * device; with backend auto it keeps p's copy of the kernel for a switch
 * to the CPU and gives p what that no longer needs, allocating only where
 * a crossfade longer than any before outgrows the input kept for such a
 * switch (tests/test_rt_alloc.c counts); a switch to the CPU waits for
 * a prepare_swap running on the device's engine to finish.
 * After a reset or drain since prepare_swap, the CPU's set_prepared keeps
 * the new set's spectra and replays only the frames since the reset
 * (clearing the set's state: a memset of its delay lines), allocating
 * nothing. Where the prepared work cannot serve (on the CPU: more input
 * since than the history holds, about swap_history frames; an engine
 * that moved to the CPU since; another engine than the one p was made
 * on), set_prepared makes a plain set_kernel of p's kernel.
 * A p is made once. */
typedef struct cf_swap_prep cf_swap_prep;
cf_status cf_engine_prepare_swap(const cf_engine *e, const cf_kernel *kernel,
                                 cf_swap_prep **out);
cf_status cf_engine_set_prepared(cf_engine *e, cf_swap_prep *p,
                                 size_t crossfade);
void cf_swap_prep_free(cf_swap_prep *p);

unsigned cf_engine_in_channels(const cf_engine *e);
unsigned cf_engine_out_channels(const cf_engine *e);
/* The backend running now. With CF_BACKEND_AUTO on CUDA, a device
 * failure (CF_E_DEVICE, CF_E_NOMEM) in process, drain or set_kernel moves
 * the engine to the CPU for good, within that call and without losing or
 * repeating a sample (a crossfade running goes on); the call succeeds if
 * the CPU could take over. Any other error is returned as it is. */
cf_backend cf_engine_backend(const cf_engine *e);
/* Why backend auto left the device (the device's error message), or NULL
 * while it has not. */
const char *cf_engine_fallback_reason(const cf_engine *e);
/* One line: backend, algorithm, block, partitions, threads. */
const char *cf_engine_describe(const cf_engine *e);

/* CF_OK if the backend can run here; else CF_E_UNAVAILABLE (CF_E_INVALID
 * for an unknown backend) and *reason (if reason is not NULL) says why,
 * as cf_last_error() does. */
cf_status cf_backend_available(cf_backend b, const char **reason);
const char *cf_backend_name(cf_backend b);
cf_status cf_backend_from_string(const char *s, cf_backend *out);
const char *cf_algorithm_name(cf_algorithm a);
/* "auto", "direct", "fft-uniform", "fft-nonuniform". */
cf_status cf_algorithm_from_string(const char *s, cf_algorithm *out);

/* CUDA devices this process can use (0 when none: reason says why). */
int cf_device_count(const char **reason);
/* Device id's name into buf (len bytes, truncated to fit): "NVIDIA H100
 * 80GB HBM3, sm_90, 79.1 GiB". CF_E_UNAVAILABLE where there is no device
 * (cf_last_error says why, as cf_device_count's reason), CF_E_INVALID for
 * an id outside 0 .. cf_device_count() - 1 or a NULL buf or len 0; buf
 * is then "" (when it can hold that). */
cf_status cf_device_describe(int id, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
