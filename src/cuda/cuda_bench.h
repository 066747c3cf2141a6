/* Internal, not installed nor exported (bench/meson.build links a static
 * copy of the library): the kernel-only measurement that
 * bench/bench_gpu_audio.c makes of the direct 1D kernel. */
#ifndef CF_CUDA_BENCH_H
#define CF_CUDA_BENCH_H

#include <stddef.h>

#include "cudafilter/error.h"

/* Run kernels/fir1d.cu `iters` times over `frames` frames of `channels`
 * device-resident channels (shared kernel of `taps` random taps; with
 * const_taps, in the constant pool when they fit, else in device memory,
 * which the kernel stages in shared memory; which: the kernel) and
 * return the mean seconds per run, measured with CUDA events. */
typedef enum cf_bench_fir {
  CF_BENCH_FIR_AUTO,     /* the launcher's choice (streaming to 504 taps) */
  CF_BENCH_FIR_STREAM16, /* streaming, 16 outputs a thread (to 64 taps) */
  CF_BENCH_FIR_TILED8,   /* the tiled kernel, 8 outputs a thread */
  CF_BENCH_FIR_TILED16,  /* the tiled kernel, 16 outputs a thread */
} cf_bench_fir;
cf_status
cf_cuda_bench_direct(unsigned taps, unsigned channels, size_t frames,
                     int const_taps, cf_bench_fir which, int iters,
                     double *seconds);

#endif
