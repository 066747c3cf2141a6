// The device-resident input history of the audio paths: planar rings
// written from the uploaded interleaved block, and the stream time that
// the other audio kernels read (so that CUDA graphs replay unchanged).
#include "cf_device.cuh"
#include "cf_kernels.h"

__global__ void cf_ring_write_kernel(float *__restrict__ ring, size_t rmask,
                                     const float *__restrict__ in,
                                     unsigned channels, unsigned frames,
                                     const unsigned long long *d_t)
{
  unsigned long long t = *d_t;
  size_t samples = (size_t)frames * channels;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < samples;
       i += stride) {
    size_t f = i / channels, c = i - f * channels;
    ring[c * (rmask + 1) + ((t + f) & rmask)] = in[i];
  }
}

__global__ void cf_time_advance_kernel(unsigned long long *d_t,
                                       unsigned frames)
{
  if (threadIdx.x == 0 && blockIdx.x == 0)
    *d_t += frames;
}

extern "C" cudaError_t cf_k_ring_write(float *ring, size_t rmask,
                                       const float *in, unsigned channels,
                                       unsigned frames,
                                       const unsigned long long *d_t,
                                       cudaStream_t stream)
{
  size_t samples = (size_t)frames * channels;
  if (samples == 0)
    return cudaSuccess;
  unsigned threads = 256;
  size_t blocks = (samples + threads - 1) / threads;
  if (blocks > 2048)
    blocks = 2048;
  CF_LAUNCH_NOSYNC((unsigned)blocks, threads, 0, stream,
                   cf_ring_write_kernel)(ring, rmask, in, channels, frames,
                       d_t);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_time_advance(unsigned long long *d_t,
                                         unsigned frames, cudaStream_t stream)
{
  CF_LAUNCH_NOSYNC(1, 32, 0, stream, cf_time_advance_kernel)(d_t, frames);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_ring_preload(void)
{
  return cf_preload_all(cf_ring_write_kernel, cf_time_advance_kernel);
}
