/* Internal, not installed: the kernel-only measurement that
 * bench/bench_gpu_audio.c makes of the direct 1D kernel. */
#ifndef CF_CUDA_BENCH_H
#define CF_CUDA_BENCH_H

#include <stddef.h>

#include "cudafilter/error.h"

/* Run kernels/fir1d.cu `iters` times over `frames` frames of `channels`
 * device-resident channels (shared kernel of `taps` random taps; with
 * const_taps, in the constant pool when they fit, else in device memory,
 * which the kernel stages in shared memory; per_thread: the tiled kernel
 * with 8 or 16 outputs per thread, 0 for the launcher's choice, the
 * streaming kernel up to 504 taps) and return the mean seconds per run,
 * measured with CUDA events. */
__attribute__((visibility("default"))) cf_status
cf_cuda_bench_direct(unsigned taps, unsigned channels, size_t frames,
                     int const_taps, int per_thread, int iters,
                     double *seconds);

#endif
