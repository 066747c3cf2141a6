/* The elements' `kernel` getter watched (gst_cudafir.c,
 * gst_cudaconvolve.c): a stand-in for gst_value_array_append_and_take_value,
 * which the getter calls for each tap, notes whether lock_watch's object
 * lock was held then (trylock fails; nothing else takes it while the test
 * reads). Exported as the other stand-ins; the real one after. Include
 * once, in a test program that links GStreamer. */
#ifndef CF_GST_LOCK_WATCH_H
#define CF_GST_LOCK_WATCH_H

#include <dlfcn.h>
#include <gst/gst.h>
#include <stdlib.h>

static GstElement *lock_watch;
static guint lock_watch_calls;
static gboolean lock_watch_held;

__attribute__((visibility("default"))) void
gst_value_array_append_and_take_value(GValue *value, GValue *append_value);
void gst_value_array_append_and_take_value(GValue *value, GValue *append_value)
{
  static void (*real)(GValue *, GValue *);
  if (!real)
    real = (void (*)(GValue *, GValue *))dlsym(
        RTLD_NEXT, "gst_value_array_append_and_take_value");
  GstElement *w = g_atomic_pointer_get(&lock_watch);
  if (w) {
    lock_watch_calls++;
    if (g_mutex_trylock(GST_OBJECT_GET_LOCK(w)))
      g_mutex_unlock(GST_OBJECT_GET_LOCK(w));
    else
      lock_watch_held = TRUE;
  }
  real(value, append_value);
}

/* The taps `kernel` reads back as, in *n; lock_watch_held says whether
 * the object lock was held while its GValues were made. */
static float *kernel_read_watched(GstElement *e, guint *n)
{
  lock_watch_calls = 0;
  lock_watch_held = FALSE;
  g_atomic_pointer_set(&lock_watch, e);
  GValue v = G_VALUE_INIT;
  g_value_init(&v, GST_TYPE_ARRAY);
  g_object_get_property(G_OBJECT(e), "kernel", &v);
  g_atomic_pointer_set(&lock_watch, NULL);
  *n = gst_value_array_get_size(&v);
  float *taps = g_new0(float, *n + 1);
  for (guint i = 0; i < *n; i++)
    taps[i] = g_value_get_float(gst_value_array_get_value(&v, i));
  g_value_unset(&v);
  return taps;
}

#endif
