/* The CUDA engine paths not built yet: the engine front hears
 * CF_E_UNAVAILABLE and (for backend=auto) takes the CPU. Replaced file by
 * file as src/cuda/video.c lands (the audio path is src/cuda/fir.c). */
#include "../engine/video_internal.h"

cf_status cf_cuda_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                            void **impl, const cf_video_ops **ops)
{
  (void)cfg, (void)k, (void)impl, (void)ops;
  return cf_fail(CF_E_UNAVAILABLE, "the CUDA video path is not built yet");
}
