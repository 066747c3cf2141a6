// A first-fit allocator over a __constant__ tap array, shared by every
// engine of one kind in the process (fir1d.cu, conv2d.cu): runs of
// Grain floats, guarded by a mutex. The symbol stays in its own file.
#ifndef CF_CONST_POOL_CUH
#define CF_CONST_POOL_CUH

#include "cf_device.cuh"
#include <mutex>

template <size_t Taps, size_t Grain> struct cf_const_pool {
  unsigned char used[Taps / Grain];
  std::mutex lock;

  // Copy n taps into a free run of `symbol`: *placed = 1 and *off (in
  // floats) where they went, or *placed = 0 when no run is free.
  template <typename Sym>
  cudaError_t put(const Sym &symbol, const float *host_taps, size_t n,
                  size_t *off, int *placed)
  {
    *placed = 0;
    *off = 0;
    size_t need = (n + Grain - 1) / Grain, total = Taps / Grain;
    if (n == 0 || need > total)
      return cudaSuccess;
    std::lock_guard<std::mutex> hold(lock);
    for (size_t g = 0; g + need <= total; g++) {
      size_t run = 0;
      while (run < need && !used[g + run])
        run++;
      if (run < need) {
        g += run;
        continue;
      }
      cudaError_t err = cudaMemcpyToSymbol(symbol, host_taps,
                                           n * sizeof(float),
                                           g * Grain * sizeof(float));
      if (err != cudaSuccess)
        return err;
      for (size_t i = 0; i < need; i++)
        used[g + i] = 1;
      *off = g * Grain;
      *placed = 1;
      return cudaSuccess;
    }
    return cudaSuccess;
  }

  void drop(size_t off, size_t n)
  {
    size_t need = (n + Grain - 1) / Grain;
    std::lock_guard<std::mutex> hold(lock);
    for (size_t i = 0; i < need; i++)
      used[off / Grain + i] = 0;
  }
};

#endif
