/* cudafir: being written (issue 5); registers nothing yet. */
#include "common.h"

gboolean cf_gst_register_cudafir(GstPlugin *plugin)
{
  (void)plugin;
  return TRUE;
}
