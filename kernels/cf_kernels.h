/* The device code's entry points: extern "C" launchers, one file per job
 * under kernels/, callable from the C host side (src/cuda/). Each launcher
 * enqueues on `stream` and returns cudaGetLastError() (the host checks it
 * with CF_LAUNCHED). Pointers are device pointers unless named host_. */
#ifndef CF_KERNELS_H
#define CF_KERNELS_H

#ifdef CF_EMU
#include "cf_emu.h" /* the CPU stand-in: tests/emu */
#else
#include <cuda_runtime_api.h>
#endif
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Load every kernel of one file now rather than at its first launch (see
 * cf_preload in cf_device.cuh); the host side calls them all when an
 * engine is made (cf_cuda_preload in src/cuda/util.c). */
cudaError_t cf_k_crossfade_preload(void);
cudaError_t cf_k_ring_preload(void);
cudaError_t cf_k_fir1d_preload(void);
cudaError_t cf_k_ols_preload(void);
cudaError_t cf_k_conv2d_preload(void);
cudaError_t cf_k_conv2d_fft_preload(void);

/* Kernel swap crossfade (kernels/crossfade.cu), in place on y_new:
 *   y_new[f][c] = (1 - w) * y_old[f][c] + w * y_new[f][c],
 *   w = min(pos + f + 1, X + 1) / (X + 1)
 * for frames f < frames of `channels` interleaved floats, where pos is the
 * first frame's distance from the swap point (engine.h's n - S). */
cudaError_t cf_k_crossfade(float *y_new, const float *y_old, size_t frames,
                           unsigned channels, size_t pos, size_t X,
                           cudaStream_t stream);

/* ---- audio: 1D streaming (kernels/ring.cu, fir1d.cu, ols.cu) -----------
 * The input lives on the device as planar rings: channel c's frame at
 * absolute time tau is ring[c * (rmask + 1) + (tau & rmask)]. The time of
 * the step being computed is read from device memory (*d_t), so that a
 * captured CUDA graph replays unchanged; cf_k_time_advance moves it on. */

/* ring <- `frames` interleaved frames of `in` at times *d_t + f. */
cudaError_t cf_k_ring_write(float *ring, size_t rmask, const float *in,
                            unsigned channels, unsigned frames,
                            const unsigned long long *d_t,
                            cudaStream_t stream);
/* *d_t += frames (one thread). */
cudaError_t cf_k_time_advance(unsigned long long *d_t, unsigned frames,
                              cudaStream_t stream);

/* Direct FIR (kernels/fir1d.cu). Output o sums its routes
 * [route_off[o], route_off[o + 1]): input `in` convolved with the `len`
 * taps at `off` (len a multiple of CF_FIR1D_TAP_PAD, zero padded). */
#define CF_FIR1D_TAP_PAD 8u
typedef struct cf_fir1d_route {
  unsigned in, len;
  unsigned long long off; /* into `taps`, or into the constant pool */
} cf_fir1d_route;
/* y[f * cout + o] = sum_routes sum_k h[k] x_in[*d_t + f - k] for f <
 * frames (x before time 0 is 0). const_taps != 0: `off` is into the
 * constant pool (cf_k_fir1d_const_put), else into the device array taps.
 * max_len: the longest route's len. host_routes: NULL, or where every
 * output has exactly one route (shared and per-channel routing) those
 * routes in host memory, output o's at [o] (read when called): with
 * cout <= CF_FIR1D_STREAM_COUT and max_len <= CF_FIR1D_STREAM_TAPS the
 * streaming kernel (kernels/fir1d.cu) takes them in its launch's
 * parameters. */
#define CF_FIR1D_STREAM_COUT 16u
#define CF_FIR1D_STREAM_TAPS 504u
cudaError_t cf_k_fir1d(float *y, unsigned cout, const float *ring,
                       size_t rmask, const unsigned long long *d_t,
                       unsigned frames, const cf_fir1d_route *routes,
                       const unsigned *route_off, unsigned max_len,
                       const float *taps, int const_taps,
                       const cf_fir1d_route *host_routes,
                       cudaStream_t stream);
/* Place n taps in the __constant__ pool shared by all engines of the
 * process: *off where they went, or *placed = 0 when the pool is full
 * (then use device memory). Blocking copy; release with ..._drop. */
cudaError_t cf_k_fir1d_const_put(const float *host_taps, size_t n,
                                 size_t *off, int *placed);
void cf_k_fir1d_const_drop(size_t off, size_t n);
/* Outputs per thread of cf_k_fir1d: 8, or 16 in launches of at least
 * CF_FIR1D_WIDE_MIN outputs (frames x cout: the larger tiles still fill
 * the device) for kernels longer than CF_FIR1D_WIDE_TAPS. On an H200
 * (bench/results/gpu-nvidia-h200-2026-11-29.md, 16M frames) 8 per thread
 * ran 1.25-1.4x faster than 16 at 16, 32 and 64 taps; longer kernels are
 * not measured yet and keep 16. Launches the streaming kernel takes
 * (host_routes) have 8. cf_k_fir1d_set_width forces the tiled kernel with 8
 * or 16 in every launch, 0 restores those rules. For tests and
 * benchmarks; not thread-safe against running launches. */
#define CF_FIR1D_WIDE_MIN ((size_t)1 << 20)
#define CF_FIR1D_WIDE_TAPS 64u
void cf_k_fir1d_set_width(int per_thread);
/* The streaming kernel's blocks per output in every launch (each walks
 * the launch's tiles that many apart), or 0: its rule (about 1024 blocks
 * a launch). For tests; not thread-safe against running launches. */
void cf_k_fir1d_set_stream_blocks(unsigned per_output);
/* The streaming kernel's outputs per thread: 16 (in launches whose
 * routes have at most 64 taps; others keep 8), 8, or 0: 8, its rule until
 * a GPU has measured 16 (bench_gpu_audio's variant stream-16). For tests
 * and benchmarks; not thread-safe against running launches. */
void cf_k_fir1d_set_stream_width(int per_thread);

/* Uniformly partitioned overlap-save (kernels/ols.cu), block B, FFT size
 * 2B, bins = B + 1; spectra are float2 (cufftComplex). */
typedef struct cf_ols_route {
  unsigned in, parts;     /* input channel, partitions of this kernel */
  unsigned long long hoff; /* its spectra: parts x bins, from here */
} cf_ols_route;
/* xw[c * 2B + i] = x_c[*d_t - B + i], i < 2B (0 before time 0). */
cudaError_t cf_k_ols_window(float *xw, const float *ring, size_t rmask,
                            unsigned channels, unsigned B,
                            const unsigned long long *d_t,
                            cudaStream_t stream);
/* fdl[(c * pcap + (*d_t / B) % pcap) * bins + k] = X[c * bins + k]. */
cudaError_t cf_k_ols_push(void *fdl, const void *X, unsigned channels,
                          unsigned B, unsigned pcap,
                          const unsigned long long *d_t, cudaStream_t stream);
/* partial[(g * cout + o) * bins + k] = the part g of groups of
 * sum_routes sum_p H[hoff + p * bins + k] * fdl[in][block - p][k]. */
cudaError_t cf_k_ols_cmac(void *partial, const void *fdl, const void *H,
                          const cf_ols_route *routes,
                          const unsigned *route_off, unsigned cout,
                          unsigned B, unsigned pcap, unsigned groups,
                          const unsigned long long *d_t,
                          cudaStream_t stream);
/* Y[o * bins + k] = sum_g partial[(g * cout + o) * bins + k], in order. */
cudaError_t cf_k_ols_reduce(void *Y, const void *partial, unsigned cout,
                            unsigned B, unsigned groups, cudaStream_t stream);
/* y[f * cout + o] = scale * yw[o * 2B + B + f], f < B. */
cudaError_t cf_k_ols_extract(float *y, const float *yw, unsigned cout,
                             unsigned B, float scale, cudaStream_t stream);

/* ---- video (kernels/conv2d.cu) -------------------------------------
 * One component of a frame held on the device in the host's layout made
 * tight: sample (x, y) of tau-th previous frame is at
 *   src + slot * slot_bytes + offset + y * pitch + x * step,
 *   slot = (head + nslots - tau) % nslots,
 * of type 0 = uint8, 1 = uint16 (native order), 2 = float32. Outputs go
 * to dst + offset + y * pitch + x * step, same type. Everything follows
 * scipy.ndimage.convolve (origin 0, true convolution, cy = kh / 2,
 * cx = kw / 2) and the store rules of video.h (scale, bias, |.|, round
 * half to even and saturate for integers, NaN -> 0). */
typedef struct cf_conv2d_args {
  const unsigned char *src;
  unsigned char *dst;
  size_t slot_bytes, offset, pitch;
  unsigned nslots, head, nt; /* frame ring; slices with a source */
  unsigned step, type, w, h;
  unsigned row0, row1; /* output rows computed: [row0, row1) */
  unsigned kh, kw, cy, cx;
  int border; /* cf_border */
  float cval, scale, bias;
  int absolute;
  int generic; /* the generic direct kernel even where the register-
                  blocked one fits (CF_CONV2D_KERNEL=generic) */
  /* The nt x kh x kw taps in host memory, or NULL: where
   * cf_k_conv2d_param_taps says so, cf_k_conv2d passes them in the
   * launch's parameters (read when it is called, not when it runs). */
  const float *taps_host;
} cf_conv2d_args;

/* Direct 2D/3D convolution: taps T x kh x kw as in kernel2d.h (all nt
 * slices used), from the constant pool at const_off when const_taps,
 * else from the device array taps. */
cudaError_t cf_k_conv2d(const cf_conv2d_args *a, const float *taps,
                        int const_taps, size_t const_off,
                        cudaStream_t stream);
/* Which kernel cf_k_conv2d takes for a kh x kw kernel unless
 * args.generic is set: 1 the register-blocked one of a fixed width (odd
 * kw 3..15, kh <= 16), 2 the register-blocked one of any width (kw <= 64,
 * any kh), 0 the generic tiled one. */
int cf_k_conv2d_blocked(unsigned kw, unsigned kh);
/* 1 where cf_k_conv2d (args.generic unset) takes the register-blocked
 * kernel whose taps are launch parameters, given args.taps_host: square
 * odd kernels 3..15, one slice. */
int cf_k_conv2d_param_taps(unsigned kw, unsigned kh, unsigned nt);
/* Place n taps in conv2d.cu's __constant__ pool (shared by every video
 * engine of the process): *placed = 0 when it is full. Blocking copy;
 * release with cf_k_conv2d_const_drop. */
cudaError_t cf_k_conv2d_const_put(const float *host_taps, size_t n,
                                  size_t *off, int *placed);
void cf_k_conv2d_const_drop(size_t off, size_t n);
/* n taps over the run at off that cf_k_conv2d_const_put gave (at least n
 * long): a kernel of the same shape, where no launch reads the run. */
cudaError_t cf_k_conv2d_const_write(const float *host_taps, size_t n,
                                    size_t off);

/* 2D FFT path (conv2d_fft.cu), one component: the padded plane of slice
 * tau into plane (n x m floats, row-major: the samples border-extended by
 * kh - 1 - cy rows above, kw - 1 - cx columns left, zero beyond (h + kh -
 * 1) x (w + kw - 1)); the products of the slices' spectra with the
 * kernel's (interleaved re, im), summed; the store of rows [row0,
 * row1) from the inverse transform full (n x m): pixel (x, y) is full[(y +
 * kh - 1) * m + x + kw - 1], then scale, bias, |.|, the format's store. */
cudaError_t cf_k_fft_stage(const cf_conv2d_args *a, unsigned tau, unsigned n,
                           unsigned m, float *plane, cudaStream_t stream);
/* acc = norm * sum over slices t < nt of spec[t] * kspec[t * count ..]
 * (complex, count values; spec: nt device pointers in a host array),
 * one pass over acc per CF_FFT_MAC_SLICES slices. */
#define CF_FFT_MAC_SLICES 8
cudaError_t cf_k_fft_mac(const float *const *spec, const float *kspec,
                         float *acc, size_t count, unsigned nt, float norm,
                         cudaStream_t stream);
cudaError_t cf_k_fft_store(const cf_conv2d_args *a, const float *full,
                           unsigned m, cudaStream_t stream);

/* Row pitch, in floats, of the separable passes' tmp and acc buffers
 * (whole float4s: the column pass reads four columns at once). */
#define CF_SEP_PITCH(w) (((size_t)(w) + 3u) / 4u * 4u)
/* Separable pass 1 for slice tau: tmp[q * P + x] = sum_n hrow[n] *
 * X_tau[vr0 + q][x - n + cx] for q < nrows, x < w (border applied in both
 * axes), 0 for w <= x < P; P = CF_SEP_PITCH(w), hrow = the kw
 * column-direction factors (device). */
cudaError_t cf_k_conv2d_rows(const cf_conv2d_args *a, unsigned tau,
                             const float *hrow, int vr0, unsigned nrows,
                             float *tmp, cudaStream_t stream);
/* Separable pass 2: s = sum_m vcol[m] * tmp[(i - m + cy - vr0) * P + x]
 * for output rows i in [row0, row1); acc_in: add acc[(i - row0) * P + x];
 * store: write the pixel to dst, else s (+ acc) back to acc. tmp and acc
 * 16-byte aligned. */
cudaError_t cf_k_conv2d_cols(const cf_conv2d_args *a, const float *vcol,
                             const float *tmp, int vr0, unsigned nrows,
                             float *acc, int acc_in, int store,
                             cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
