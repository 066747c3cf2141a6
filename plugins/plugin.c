/* The cudafilter GStreamer plugin: cudafir (audio) and cudaconvolve
 * (video), on the cudafilter engine (CUDA where a device exists, else
 * the CPU). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common.h"

static gboolean plugin_init(GstPlugin *plugin)
{
  gboolean ok = cf_gst_register_cudafir(plugin);
  ok = cf_gst_register_cudaconvolve(plugin) && ok;
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, cudafilter,
                  "Real-time convolution of audio and video, on CUDA or "
                  "the CPU",
                  plugin_init, CF_GST_VERSION, "LGPL", "cudafilter",
                  "https://github.com/cudafilter/cudafilter")
