/* The device code's entry points: extern "C" launchers, one file per job
 * under kernels/, callable from the C host side (src/cuda/). Each launcher
 * enqueues on `stream` and returns cudaGetLastError() (the host checks it
 * with CF_LAUNCHED). Pointers are device pointers unless named host_. */
#ifndef CF_KERNELS_H
#define CF_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel swap crossfade (kernels/crossfade.cu), in place on y_new:
 *   y_new[f][c] = (1 - w) * y_old[f][c] + w * y_new[f][c],
 *   w = min(pos + f + 1, X + 1) / (X + 1)
 * for frames f < frames of `channels` interleaved floats, where pos is the
 * first frame's distance from the swap point (engine.h's n - S). */
cudaError_t cf_k_crossfade(float *y_new, const float *y_old, size_t frames,
                           unsigned channels, size_t pos, size_t X,
                           cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
