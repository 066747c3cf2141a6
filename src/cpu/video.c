/* CPU video backend (work in progress). */
#include "../engine/video_internal.h"

cf_status cf_cpu_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                           void **impl, const cf_video_ops **ops)
{
  (void)cfg; (void)k; (void)impl; (void)ops;
  return cf_fail(CF_E_UNAVAILABLE, "CPU video path not built yet");
}
