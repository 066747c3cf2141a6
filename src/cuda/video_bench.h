/* Internal, not installed nor exported (bench/meson.build links a static
 * copy of the library): the parts of the CUDA video path measured
 * alone by bench/bench_gpu_video.c. */
#ifndef CF_CUDA_VIDEO_BENCH_H
#define CF_CUDA_VIDEO_BENCH_H

#include "cudafilter/kernel2d.h"
#include "cudafilter/video.h"

/* Build a CUDA video engine's buffers for cfg and k (T = 1), then time
 * `iters` back-to-back runs on one stream, with CUDA events, of: [0] the
 * pinned upload of a whole frame, [1] the convolution of all selected
 * components with the data resident on the device, [2] the download.
 * seconds[] are totals over the iters runs. */
cf_status
cf_cuda_bench_video(const cf_video_config *cfg, const cf_kernel2d *k,
                    int iters, double seconds[3]);

#endif
