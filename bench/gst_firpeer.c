/* gst_firpeer — GStreamer's audiofirfilter as a peer in the FIR benchmark.
 *
 * Runs, in-process,
 *   filesrc location=IN ! rawaudioparse format=pcm pcm-format=f32le
 *       sample-rate=RATE num-channels=C ! audiofirfilter ! fakesink sync=false
 * (filesink location=OUT instead of fakesink with --out), with
 * audiofirfilter's "kernel" property (a GValueArray of gdouble in GStreamer
 * 1.22) set from a text file of taps (numbers separated by whitespace or
 * commas, '#' to end of line is a comment). The "latency" property stays at
 * its default unless --latency is given. Prints wall time and x-realtime.
 *
 *   gst_firpeer --kernel K.txt --in IN.f32 [--channels 2] [--rate 48000]
 *               [--out OUT.f32] [--latency N] [--low-latency]
 *
 * Exit status 0 on EOS, 1 on any GStreamer error (printed), 2 on bad usage. */
#include <errno.h>
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read taps from a text file. Returns a malloc'd array, *len set; NULL on
 * error (message printed). */
static double *read_taps(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "gst_firpeer: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1024, n = 0;
  double *taps = malloc(cap * sizeof(*taps));
  char line[4096];
  size_t lineno = 0;
  int ok = taps != NULL;
  while (ok && fgets(line, sizeof(line), f)) {
    lineno++;
    if (!strchr(line, '\n') && !feof(f)) {
      fprintf(stderr, "gst_firpeer: %s:%zu: line too long\n", path, lineno);
      ok = 0;
      break;
    }
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *p = line;
    for (;;) {
      while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r' ||
             *p == '\n')
        p++;
      if (!*p) break;
      char *end;
      errno = 0;
      const double v = strtod(p, &end);
      if (end == p || errno == ERANGE) {
        fprintf(stderr, "gst_firpeer: %s:%zu:%ld: not a number\n", path,
                lineno, (long)(p - line) + 1);
        ok = 0;
        break;
      }
      if (n == cap) {
        cap *= 2;
        double *t = realloc(taps, cap * sizeof(*taps));
        if (!t) {
          ok = 0;
          break;
        }
        taps = t;
      }
      taps[n++] = v;
      p = end;
    }
  }
  if (ok && ferror(f)) {
    fprintf(stderr, "gst_firpeer: %s: read error\n", path);
    ok = 0;
  }
  fclose(f);
  if (ok && n == 0) {
    fprintf(stderr, "gst_firpeer: %s: no taps\n", path);
    ok = 0;
  }
  if (!ok) {
    free(taps);
    return NULL;
  }
  *len = n;
  return taps;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: gst_firpeer --kernel K.txt --in IN.f32 [--channels C] "
          "[--rate HZ]\n"
          "                   [--out OUT.f32] [--latency N] "
          "[--low-latency]\n");
}

/* Print an error or warning message from the bus. */
static void print_message(GstMessage *msg, const char *what) {
  GError *err = NULL;
  gchar *dbg = NULL;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR)
    gst_message_parse_error(msg, &err, &dbg);
  else
    gst_message_parse_warning(msg, &err, &dbg);
  fprintf(stderr, "gst_firpeer: %s from %s: %s\n%s%s", what,
          GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)),
          err ? err->message : "(no message)", dbg ? dbg : "",
          dbg ? "\n" : "");
  g_clear_error(&err);
  g_free(dbg);
}

int main(int argc, char **argv) {
  const char *kernel_path = NULL, *in_path = NULL, *out_path = NULL;
  unsigned channels = 2, rate = 48000;
  long long latency = -1;
  int low_latency = 0;

  gst_init(&argc, &argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--kernel") && i + 1 < argc) {
      kernel_path = argv[++i];
    } else if (!strcmp(a, "--in") && i + 1 < argc) {
      in_path = argv[++i];
    } else if (!strcmp(a, "--out") && i + 1 < argc) {
      out_path = argv[++i];
    } else if (!strcmp(a, "--channels") && i + 1 < argc) {
      channels = (unsigned)strtoul(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--rate") && i + 1 < argc) {
      rate = (unsigned)strtoul(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--latency") && i + 1 < argc) {
      latency = strtoll(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--low-latency")) {
      low_latency = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!kernel_path || !in_path || channels == 0 || channels > 64 ||
      rate == 0) {
    usage(stderr);
    return 2;
  }

  struct stat st;
  if (stat(in_path, &st) != 0) {
    fprintf(stderr, "gst_firpeer: %s: %s\n", in_path, strerror(errno));
    return 1;
  }
  const double frames = (double)st.st_size / (4.0 * channels);
  const double audio_s = frames / rate;

  size_t ntaps = 0;
  const double t_setup = now_s();
  double *taps = read_taps(kernel_path, &ntaps);
  if (!taps) return 1;

  char desc[512];
  snprintf(desc, sizeof(desc),
           "filesrc name=src ! rawaudioparse format=pcm pcm-format=f32le "
           "sample-rate=%u num-channels=%u ! audiofirfilter name=fir ! %s",
           rate, channels,
           out_path ? "filesink name=sink" : "fakesink name=sink sync=false");
  GError *perr = NULL;
  GstElement *pipeline = gst_parse_launch(desc, &perr);
  if (!pipeline || perr) {
    fprintf(stderr, "gst_firpeer: pipeline '%s': %s\n", desc,
            perr ? perr->message : "failed");
    g_clear_error(&perr);
    if (pipeline) gst_object_unref(pipeline);
    free(taps);
    return 1;
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *fir = gst_bin_get_by_name(GST_BIN(pipeline), "fir");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  if (!src || !fir || !sink) {
    fprintf(stderr, "gst_firpeer: elements missing from the pipeline\n");
    free(taps);
    return 1;
  }
  g_object_set(src, "location", in_path, NULL);
  if (out_path) g_object_set(sink, "location", out_path, "sync", FALSE, NULL);
  if (low_latency) g_object_set(fir, "low-latency", TRUE, NULL);
  if (latency >= 0) g_object_set(fir, "latency", (guint64)latency, NULL);

  /* "kernel": GValueArray of gdouble (GStreamer 1.22; GValueArray is
   * deprecated in GLib but it is what the property takes). */
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  GValueArray *va = g_value_array_new((guint)ntaps);
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_TYPE_DOUBLE);
  for (size_t i = 0; i < ntaps; i++) {
    g_value_set_double(&v, taps[i]);
    g_value_array_append(va, &v);
  }
  g_value_unset(&v);
  g_object_set(fir, "kernel", va, NULL);
  g_value_array_free(va);
  G_GNUC_END_IGNORE_DEPRECATIONS
  free(taps);

  GstBus *bus = gst_element_get_bus(pipeline);
  int rc = 0;
  const double t0 = now_s();
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    /* The reason, if any, is on the bus. */
    GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    if (m) {
      print_message(m, "error");
      gst_message_unref(m);
    } else {
      fprintf(stderr, "gst_firpeer: the pipeline does not start\n");
    }
    rc = 1;
  }
  while (rc == 0) {
    GstMessage *m = gst_bus_timed_pop_filtered(
        bus, GST_CLOCK_TIME_NONE,
        GST_MESSAGE_ERROR | GST_MESSAGE_WARNING | GST_MESSAGE_EOS);
    if (!m) {
      fprintf(stderr, "gst_firpeer: bus closed before EOS\n");
      rc = 1;
      break;
    }
    const GstMessageType type = GST_MESSAGE_TYPE(m);
    if (type == GST_MESSAGE_ERROR) {
      print_message(m, "error");
      rc = 1;
    } else if (type == GST_MESSAGE_WARNING) {
      print_message(m, "warning");
    }
    gst_message_unref(m);
    if (type == GST_MESSAGE_EOS) break;
  }
  const double t1 = now_s();
  if (gst_element_set_state(pipeline, GST_STATE_NULL) ==
      GST_STATE_CHANGE_FAILURE) {
    fprintf(stderr, "gst_firpeer: stopping the pipeline failed\n");
    rc = 1;
  }
  guint64 fir_latency = 0;
  g_object_get(fir, "latency", &fir_latency, NULL);
  gst_object_unref(bus);
  gst_object_unref(src);
  gst_object_unref(fir);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  if (rc != 0) return rc;

  const double wall = t1 - t0;
  printf("gst_firpeer: taps=%zu channels=%u rate=%u audio=%.3f s "
         "setup=%.3f s run=%.3f s x-realtime=%.2f latency-property=%llu\n",
         ntaps, channels, rate, audio_s, t0 - t_setup, wall,
         wall > 0.0 ? audio_s / wall : 0.0, (unsigned long long)fir_latency);
  gst_deinit();
  return 0;
}
