/* Many pipelines in one process, as a video wall or a multi-room mixer
 * runs them: WORKERS threads each make a pipeline with cudafir or
 * cudaconvolve (in turn), play it to its end and tear it down, over and
 * over, while a "UI" thread changes the kernel (kernel-file, gain; size,
 * sigma, preset) of whichever pipelines are playing: for ThreadSanitizer
 * (tests/tsan/run), which reports unlocked accesses between elements,
 * their engines and the library's shared state (the FFT plan cache,
 * FFTW's planner, the host memory caches). It checks no samples (the
 * suites do, tests/test_fft.c's test_engines_in_threads for engines in
 * threads); it fails where a pipeline posts an error or does not reach
 * its end within 20 s (a deadlock between a state change and a setter),
 * and prints the process's threads and resident memory as it goes (a
 * leak grows them).
 *
 *   many SECONDS SEED AUDIO-KERNEL-FILE...
 */
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 8

static GMutex live_lock;
static GstElement *live[WORKERS]; /* the filter of each worker's pipeline */
static gint stop, made, failures;
static const char **files;
static int nfiles;

/* Threads and VmRSS from /proc/self/status, on one line. */
static void print_status(const char *when)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256], threads[64] = "?", rss[64] = "?";
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "Threads:", 8))
      g_strlcpy(threads, g_strstrip(line + 8), sizeof threads);
    else if (!strncmp(line, "VmRSS:", 6))
      g_strlcpy(rss, g_strstrip(line + 6), sizeof rss);
  }
  if (f)
    fclose(f);
  printf("many: %s: %d pipelines, %s threads, RSS %s\n", when,
         g_atomic_int_get(&made), threads, rss);
  fflush(stdout);
}

static gpointer worker(gpointer arg)
{
  int id = GPOINTER_TO_INT(arg);
  for (int round = 0; !g_atomic_int_get(&stop); round++) {
    gchar *desc =
        (id + round) % 2
            ? g_strdup("videotestsrc num-buffers=30 ! video/x-raw,width=160,"
                       "height=120,format=I420 ! cudaconvolve name=f "
                       "preset=gaussian size=5 ! fakesink sync=false")
            : g_strdup_printf("audiotestsrc num-buffers=100 "
                              "samplesperbuffer=480 ! audio/x-raw,channels=2,"
                              "rate=48000 ! cudafir name=f kernel-file=%s "
                              "crossfade=1000000 ! fakesink sync=false",
                              files[(id + round) % nfiles]);
    GError *err = NULL;
    GstElement *pipe = gst_parse_launch(desc, &err);
    g_free(desc);
    if (!pipe) {
      printf("many: worker %d: %s\n", id, err->message);
      g_error_free(err);
      g_atomic_int_inc(&failures);
      break;
    }
    GstElement *f = gst_bin_get_by_name(GST_BIN(pipe), "f");
    g_mutex_lock(&live_lock);
    live[id] = f;
    g_mutex_unlock(&live_lock);
    GstBus *bus = gst_element_get_bus(pipe);
    gst_element_set_state(pipe, GST_STATE_PLAYING);
    GstMessage *m = gst_bus_timed_pop_filtered(
        bus, 20 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (!m) {
      printf("many: worker %d: no end of stream in 20 s\n", id);
      g_atomic_int_inc(&failures);
    } else if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
      GError *e = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error(m, &e, &dbg);
      printf("many: worker %d: %s (%s)\n", id, e->message, dbg);
      g_error_free(e);
      g_free(dbg);
      g_atomic_int_inc(&failures);
    }
    if (m)
      gst_message_unref(m);
    g_mutex_lock(&live_lock);
    live[id] = NULL;
    g_mutex_unlock(&live_lock);
    if (gst_element_set_state(pipe, GST_STATE_NULL) ==
        GST_STATE_CHANGE_FAILURE) {
      printf("many: worker %d: the pipeline did not stop\n", id);
      g_atomic_int_inc(&failures);
    }
    gst_object_unref(bus);
    gst_object_unref(f);
    gst_object_unref(pipe);
    g_atomic_int_inc(&made);
  }
  return NULL;
}

/* Changes a kernel every 0.5-2 ms on whichever pipeline it finds. */
static gpointer ui(gpointer seed)
{
  GRand *r = g_rand_new_with_seed(GPOINTER_TO_UINT(seed));
  while (!g_atomic_int_get(&stop)) {
    g_mutex_lock(&live_lock);
    GstElement *f = live[g_rand_int_range(r, 0, WORKERS)];
    if (f)
      gst_object_ref(f);
    g_mutex_unlock(&live_lock);
    if (f && g_object_class_find_property(G_OBJECT_GET_CLASS(f), "sigma")) {
      switch (g_rand_int_range(r, 0, 3)) {
      case 0:
        g_object_set(f, "sigma", g_rand_double_range(r, 0.5, 3), NULL);
        break;
      case 1:
        g_object_set(f, "size", (guint)g_rand_int_range(r, 1, 6) * 2 + 1,
                     NULL);
        break;
      default:
        /* the presets that take a size and a sigma */
        gst_util_set_object_arg(G_OBJECT(f), "preset",
                                g_rand_boolean(r) ? "gaussian" : "unsharp");
        break;
      }
    } else if (f) {
      if (g_rand_boolean(r))
        g_object_set(f, "kernel-file", files[g_rand_int_range(r, 0, nfiles)],
                     NULL);
      else
        g_object_set(f, "gain", g_rand_double_range(r, -6, 0), NULL);
    }
    if (f)
      gst_object_unref(f);
    g_usleep((gulong)g_rand_int_range(r, 500, 2000));
  }
  g_rand_free(r);
  return NULL;
}

int main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (argc < 4) {
    fprintf(stderr, "usage: many SECONDS SEED AUDIO-KERNEL-FILE...\n");
    return 2;
  }
  int seconds = atoi(argv[1]);
  files = (const char **)argv + 3;
  nfiles = argc - 3;
  print_status("start");
  GThread *t[WORKERS + 1];
  for (int i = 0; i < WORKERS; i++)
    t[i] = g_thread_new("worker", worker, GINT_TO_POINTER(i));
  t[WORKERS] = g_thread_new("ui", ui, GUINT_TO_POINTER(atoi(argv[2])));
  for (int s = 0; s < seconds; s += 10) {
    g_usleep((gulong)MIN(10, seconds - s) * G_USEC_PER_SEC);
    print_status("running");
  }
  g_atomic_int_set(&stop, 1);
  for (int i = 0; i <= WORKERS; i++)
    g_thread_join(t[i]);
  print_status("end");
  printf("many: %d failures\n", g_atomic_int_get(&failures));
  return g_atomic_int_get(&failures) ? 1 : 0;
}
