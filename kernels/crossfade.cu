// Kernel swap crossfade: old and new outputs blended by a linear ramp
// (the formula is in cf_kernels.h). One thread per sample; the ramp
// weight is computed in double so that long crossfades stay exact.
#include "cf_device.cuh"
#include "cf_kernels.h"

__global__ void cf_crossfade_kernel(float *__restrict__ y_new,
                                    const float *__restrict__ y_old,
                                    size_t samples, unsigned channels,
                                    size_t pos, size_t X)
{
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (; i < samples; i += stride) {
    size_t f = pos + i / channels + 1;
    double w = f >= X + 1 ? 1.0 : (double)f / (double)(X + 1);
    y_new[i] = (float)((1.0 - w) * y_old[i] + w * y_new[i]);
  }
}

extern "C" cudaError_t cf_k_crossfade(float *y_new, const float *y_old,
                                      size_t frames, unsigned channels,
                                      size_t pos, size_t X,
                                      cudaStream_t stream)
{
  size_t samples = frames * channels;
  if (samples == 0)
    return cudaSuccess;
  unsigned threads = 256;
  size_t blocks = (samples + threads - 1) / threads;
  if (blocks > 4096)
    blocks = 4096;
  CF_LAUNCH_NOSYNC((unsigned)blocks, threads, 0, stream,
                   cf_crossfade_kernel)(y_new, y_old, samples, channels, pos,
                       X);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_crossfade_preload(void)
{
  return cf_preload(cf_crossfade_kernel);
}
