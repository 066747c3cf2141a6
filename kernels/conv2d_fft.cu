// 2D (and temporal 3D) convolution through cuFFT for large kernels: the
// three kernels around the transforms (src/cuda/video.c runs the plan).
//
// For one component (w x h samples) and a kernel of kh x kw taps, the
// padded plane X of (h + kh - 1) x (w + kw - 1) holds the border-extended
// samples, X[p][q] = x_b(q - (kw - 1 - cx), p - (kh - 1 - cy)), zero up to
// the transform size n x m (n >= h + kh - 1, m >= w + kw - 1: the circular
// convolution does not wrap onto the rows and columns kept). Its full
// linear convolution with the slice at [i + kh - 1][j + kw - 1] is the
// output (i, j) = sum k[a][b] x_b(j + cx - b, i + cy - a), as the direct
// kernels compute. Slices add up in the frequency domain (one inverse
// transform a frame and component); the store applies scale, bias,
// |.|, rounding and saturation as every other path (store_pixel).
#include "conv2d_common.cuh"

#define FFT_TX 32
#define FFT_TY 8
#define MAC_T 256

__global__ void __launch_bounds__(FFT_TX *FFT_TY)
    fft_stage_kernel(const cf_conv2d_args a, unsigned tau, unsigned n,
                     unsigned m, float *plane)
{
  const unsigned q = blockIdx.x * FFT_TX + threadIdx.x;
  const unsigned p = blockIdx.y * FFT_TY + threadIdx.y;
  if (q >= m || p >= n)
    return;
  float v = 0.0f;
  if (p < a.h + a.kh - 1 && q < a.w + a.kw - 1)
    v = load_sample(a, slice_base(a, tau), (int)q - (int)(a.kw - 1 - a.cx),
                    (int)p - (int)(a.kh - 1 - a.cy));
  plane[(size_t)p * m + q] = v;
}

extern "C" cudaError_t cf_k_fft_stage(const cf_conv2d_args *a, unsigned tau,
                                      unsigned n, unsigned m, float *plane,
                                      cudaStream_t stream)
{
  dim3 block(FFT_TX, FFT_TY);
  dim3 grid((m + FFT_TX - 1) / FFT_TX, (n + FFT_TY - 1) / FFT_TY);
  CF_LAUNCH_NOSYNC(grid, block, 0, stream, fft_stage_kernel)
  (*a, tau, n, m, plane);
  return cudaGetLastError();
}

// The spectra of up to CF_FFT_MAC_SLICES slices, by value.
struct fft_specs {
  const float2 *p[CF_FFT_MAC_SLICES];
};

// acc = (first ? 0 : acc) + norm * sum over the ns slices of spec[t] *
// kspec[t * count ..], complex, count values: one pass over acc for all
// of a frame's slices.
__global__ void __launch_bounds__(MAC_T)
    fft_mac_kernel(const fft_specs spec, unsigned ns,
                   const float2 *__restrict__ kspec, float2 *acc,
                   size_t count, int first, float norm)
{
  const size_t i = (size_t)blockIdx.x * MAC_T + threadIdx.x;
  if (i >= count)
    return;
  float2 sum = make_float2(0.0f, 0.0f);
  // unrolled, so that each pointer is read from the parameters, not from
  // a local copy of them indexed at run time
CF_UNROLL
  for (unsigned t = 0; t < CF_FFT_MAC_SLICES; t++) {
    if (t >= ns)
      break;
    const float2 x = spec.p[t][i], k = kspec[t * count + i];
    sum.x += x.x * k.x - x.y * k.y;
    sum.y += x.x * k.y + x.y * k.x;
  }
  float2 r = make_float2(sum.x * norm, sum.y * norm);
  if (!first) {
    const float2 o = acc[i];
    r.x += o.x;
    r.y += o.y;
  }
  acc[i] = r;
}

extern "C" cudaError_t cf_k_fft_mac(const float *const *spec,
                                    const float *kspec, float *acc,
                                    size_t count, unsigned nt, float norm,
                                    cudaStream_t stream)
{
  if (count == 0 || nt == 0)
    return cudaSuccess;
  unsigned blocks = (unsigned)((count + MAC_T - 1) / MAC_T);
  for (unsigned t0 = 0; t0 < nt; t0 += CF_FFT_MAC_SLICES) {
    const unsigned ns =
        nt - t0 < CF_FFT_MAC_SLICES ? nt - t0 : CF_FFT_MAC_SLICES;
    fft_specs sp = {};
    for (unsigned t = 0; t < ns; t++)
      sp.p[t] = (const float2 *)spec[t0 + t];
    CF_LAUNCH_NOSYNC(blocks, MAC_T, 0, stream, fft_mac_kernel)
    (sp, ns, (const float2 *)(kspec + 2 * t0 * count), (float2 *)acc, count,
     t0 == 0, norm);
  }
  return cudaGetLastError();
}

__global__ void __launch_bounds__(FFT_TX *FFT_TY)
    fft_store_kernel(const cf_conv2d_args a, const float *__restrict__ full,
                     unsigned m)
{
  const unsigned x = blockIdx.x * FFT_TX + threadIdx.x;
  const unsigned y = a.row0 + blockIdx.y * FFT_TY + threadIdx.y;
  if (x >= a.w || y >= a.row1)
    return;
  store_pixel(a, x, y, full[(size_t)(y + a.kh - 1) * m + x + a.kw - 1]);
}

extern "C" cudaError_t cf_k_fft_store(const cf_conv2d_args *a,
                                      const float *full, unsigned m,
                                      cudaStream_t stream)
{
  if (a->row1 <= a->row0 || a->w == 0)
    return cudaSuccess;
  dim3 block(FFT_TX, FFT_TY);
  dim3 grid((a->w + FFT_TX - 1) / FFT_TX,
            (a->row1 - a->row0 + FFT_TY - 1) / FFT_TY);
  CF_LAUNCH_NOSYNC(grid, block, 0, stream, fft_store_kernel)(*a, full, m);
  return cudaGetLastError();
}

extern "C" cudaError_t cf_k_conv2d_fft_preload(void)
{
  return cf_preload_all(fft_stage_kernel, fft_mac_kernel, fft_store_kernel);
}
