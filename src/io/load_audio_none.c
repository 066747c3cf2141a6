/* Audio kernel files need libav; this build has none. */
#include "io_internal.h"

CF_PUBLIC cf_status cf_kernel_load_audio(const char *path, unsigned rate,
                                         cf_kernel **out)
{
  (void)rate;
  cf_status s = cf_io_check_args(path, out);
  if (s != CF_OK)
    return s;
  return cf_fail(CF_E_UNAVAILABLE, "%s: cannot load audio kernel files: "
                 "built without libav", path);
}
