/* bench_slider: a UI slider bound to cudaconvolve's kernel while 1080p
 * plays. A pipeline videotestsrc pattern=snow ! cudaconvolve ! fakesink
 * runs as fast as it can in its streaming thread; this (the "UI") thread
 * sets the kernel property --sets times, --every ms apart, timing each
 * g_object_set, and the sink's handoffs give the gaps between frames.
 * Prints the set times (median, max, total), the median frame gap of 10
 * frames before the first set and the longest gap from the first set to
 * --every ms after the last, and how many frames that covered. One line,
 * wall-clock: on a loaded machine compare runs made together.
 *
 *   GST_PLUGIN_PATH=build/plugins build/bench/bench_slider [--size WxH]
 *       [--format F] [--backend cpu|auto|cuda] [--preset-size N]
 *       [--sigmas "a b ..." | --files "F1 F2 ..."] [--sets N] [--every MS]
 *
 * --sigmas: the sigma slider's values (preset=gaussian, size
 * --preset-size, default 13), set in turn; --files: kernel-file values
 * set in turn (the last one is the kernel at the start). Defaults: 1920x1080
 * RGBA, backend cpu, sigmas "1 2 3 4", 20 sets 200 ms apart.
 */
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  GMutex lock;
  gint64 *t; /* handoff times (us) */
  guint n, cap;
} Stamps;

static void on_handoff(GstElement *sink, GstBuffer *buf, GstPad *pad,
                       gpointer data)
{
  (void)sink, (void)buf, (void)pad;
  Stamps *s = data;
  gint64 now = g_get_monotonic_time();
  g_mutex_lock(&s->lock);
  if (s->n < s->cap)
    s->t[s->n++] = now;
  g_mutex_unlock(&s->lock);
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, guint n)
{
  if (!n)
    return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return v[n / 2];
}

static guint wait_frames(Stamps *s, guint n)
{
  for (;;) {
    g_mutex_lock(&s->lock);
    guint got = s->n;
    g_mutex_unlock(&s->lock);
    if (got >= n)
      return got;
    g_usleep(2000);
  }
}

int main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  const char *size = "1920x1080", *format = "RGBA", *backend = "cpu";
  const char *sigmas = NULL, *files = NULL;
  guint psize = 13, sets = 20, every = 200;
  if ((argc - 1) % 2) {
    fprintf(stderr, "bench_slider: options come with a value (see the top "
            "of bench/bench_slider.c)\n");
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (!strcmp(a, "--size")) size = v;
    else if (!strcmp(a, "--format")) format = v;
    else if (!strcmp(a, "--backend")) backend = v;
    else if (!strcmp(a, "--preset-size")) psize = (guint)atoi(v);
    else if (!strcmp(a, "--sigmas")) sigmas = v;
    else if (!strcmp(a, "--files")) files = v;
    else if (!strcmp(a, "--sets")) sets = (guint)atoi(v);
    else if (!strcmp(a, "--every")) every = (guint)atoi(v);
    else {
      fprintf(stderr, "bench_slider: unknown option %s\n", a);
      return 2;
    }
  }
  guint w, h;
  if (sscanf(size, "%ux%u", &w, &h) != 2) {
    fprintf(stderr, "bench_slider: --size WxH\n");
    return 2;
  }
  gchar **vals = g_strsplit_set(files ? files : sigmas ? sigmas : "1 2 3 4",
                                " ", -1);
  guint nvals = g_strv_length(vals);
  gchar *desc = g_strdup_printf(
      "videotestsrc pattern=snow ! video/x-raw,format=%s,width=%u,height=%u,"
      "framerate=30/1 ! cudaconvolve name=c backend=%s ! fakesink name=s "
      "sync=false signal-handoffs=true", format, w, h, backend);
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch(desc, &err);
  if (!pipe) {
    fprintf(stderr, "bench_slider: %s\n", err->message);
    return 1;
  }
  GstElement *conv = gst_bin_get_by_name(GST_BIN(pipe), "c");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipe), "s");
  if (files)
    g_object_set(conv, "kernel-file", vals[nvals - 1], NULL);
  else {
    gst_util_set_object_arg(G_OBJECT(conv), "preset", "gaussian");
    g_object_set(conv, "size", psize, "sigma",
                 g_ascii_strtod(vals[nvals - 1], NULL), NULL);
  }
  Stamps st;
  g_mutex_init(&st.lock);
  st.cap = 100000;
  st.n = 0;
  st.t = g_new(gint64, st.cap);
  g_signal_connect(sink, "handoff", G_CALLBACK(on_handoff), &st);
  if (gst_element_set_state(pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    fprintf(stderr, "bench_slider: cannot play\n");
    return 1;
  }
  guint warm = wait_frames(&st, 5);
  /* baseline gaps: before any change */
  guint base_from = warm;
  guint base_to = wait_frames(&st, base_from + 10);
  double *setms = g_new(double, sets);
  gint64 t_first = g_get_monotonic_time();
  for (guint i = 0; i < sets; i++) {
    const gchar *v = vals[i % nvals];
    gint64 t0 = g_get_monotonic_time();
    if (files)
      g_object_set(conv, "kernel-file", v, NULL);
    else
      g_object_set(conv, "sigma", g_ascii_strtod(v, NULL), NULL);
    setms[i] = (g_get_monotonic_time() - t0) / 1e3;
    if (every)
      g_usleep(every * 1000);
  }
  gint64 t_last = g_get_monotonic_time();
  g_mutex_lock(&st.lock);
  guint after = st.n;
  g_mutex_unlock(&st.lock);
  wait_frames(&st, after + 5);
  gst_element_set_state(pipe, GST_STATE_NULL);

  double *gaps = g_new(double, st.n);
  guint nb = 0;
  for (guint i = base_from + 1; i < base_to; i++)
    gaps[nb++] = (st.t[i] - st.t[i - 1]) / 1e3;
  double base = median(gaps, nb);
  double maxgap = 0;
  guint during = 0;
  for (guint i = 1; i < st.n; i++)
    if (st.t[i] >= t_first && st.t[i - 1] <= t_last + 1000 * (gint64)every) {
      double g = (st.t[i] - st.t[i - 1]) / 1e3;
      maxgap = g > maxgap ? g : maxgap;
      during++;
    }
  double setmax = 0, settot = 0;
  for (guint i = 0; i < sets; i++) {
    setmax = setms[i] > setmax ? setms[i] : setmax;
    settot += setms[i];
  }
  double setmed = median(setms, sets);
  printf("%s %s %s: %u sets %u ms apart: g_object_set median %.1f ms, max "
         "%.1f ms, total %.1f ms; frame gap median %.1f ms before, max %.1f ms "
         "while setting (%u frames)\n",
         format, size, files ? "kernel-file" : "sigma", sets, every, setmed,
         setmax, settot, base, maxgap, during);
  gst_object_unref(conv);
  gst_object_unref(sink);
  gst_object_unref(pipe);
  g_free(desc);
  g_strfreev(vals);
  g_free(setms);
  g_free(gaps);
  g_free(st.t);
  return 0;
}
