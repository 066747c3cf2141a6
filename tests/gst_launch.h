/* A gst-launch line run to its end in a GStreamer test (gst_cudafir.c,
 * gst_cudaconvolve.c). Include after check.h (CHECK). */
#ifndef CF_TEST_GST_LAUNCH_H
#define CF_TEST_GST_LAUNCH_H

#include <gst/gst.h>

/* The outcome of a gst-launch line: the first error's message (g_free),
 * or NULL where the stream reached EOS. The line's properties are set
 * before there is a bus: their refusals are said with GLib. */
static gchar *launch_outcome(const char *desc)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  CHECK(p && !err, "gst_parse_launch(%s): %s", desc, err ? err->message : "?");
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(p);
  GstMessage *m = gst_bus_timed_pop_filtered(
      bus, 20 * GST_SECOND, GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  CHECK(m, "%s: neither EOS nor an error", desc);
  gchar *said = NULL;
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
    gst_message_parse_error(m, &err, NULL);
    said = g_strdup(err->message);
    g_clear_error(&err);
  }
  gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return said;
}

#endif
