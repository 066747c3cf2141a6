/* A running pipeline with cudafir or cudaconvolve while two threads set
 * its properties at random, a third reads every property and queries the
 * latency, and the main thread changes the caps, seeks, pauses and
 * restarts it: for
 * ThreadSanitizer (tests/tsan/run), which reports unlocked accesses
 * between the streaming thread and the setters. It checks no output;
 * the GStreamer suites do that.
 *
 *   props audio|video SECONDS SEED FILE...   FILE: kernel files to set
 */
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static GstElement *element;
static gint stop;
static int video;
static const char **files;
static int nfiles;

static gint flowing; /* buffers that reached the sink */

static GstPadProbeReturn count_buffer(GstPad *pad, GstPadProbeInfo *info,
                                      gpointer unused)
{
  (void)pad, (void)info, (void)unused;
  g_atomic_int_inc(&flowing);
  return GST_PAD_PROBE_OK;
}

static guint pick(GRand *r, guint lo, guint hi)
{
  return (guint)g_rand_int_range(r, (gint32)lo, (gint32)hi + 1);
}

/* A value for p: in range, small enough to keep the stream running. */
static gboolean random_value(GParamSpec *p, GValue *v, GRand *r)
{
  GType t = G_PARAM_SPEC_VALUE_TYPE(p);
  const char *name = g_param_spec_get_name(p);
  g_value_init(v, t);
  if (t == G_TYPE_BOOLEAN)
    g_value_set_boolean(v, g_rand_boolean(r));
  else if (t == G_TYPE_UINT && g_str_has_prefix(name, "kernel-")) /* w, h */
    g_value_set_uint(v, pick(r, 0, 3) ? 0 : pick(r, 1, 7));
  else if (t == G_TYPE_UINT && !strcmp(name, "block-size"))
    g_value_set_uint(v, 1u << pick(r, 4, 12));
  else if (t == G_TYPE_UINT) {
    GParamSpecUInt *u = G_PARAM_SPEC_UINT(p);
    g_value_set_uint(v, pick(r, u->minimum, MIN(u->maximum, u->minimum + 40)));
  } else if (t == G_TYPE_INT) {
    GParamSpecInt *i = G_PARAM_SPEC_INT(p);
    g_value_set_int(v, g_rand_int_range(r, i->minimum,
                                        MIN(i->maximum, i->minimum + 3) + 1));
  } else if (t == G_TYPE_UINT64)
    g_value_set_uint64(v, pick(r, 0, 50) * GST_MSECOND);
  else if (t == G_TYPE_DOUBLE) {
    GParamSpecDouble *d = G_PARAM_SPEC_DOUBLE(p);
    g_value_set_double(
        v, g_rand_double_range(r, MAX(d->minimum, -10), MIN(d->maximum, 10)));
  } else if (t == G_TYPE_FLOAT) {
    GParamSpecFloat *f = G_PARAM_SPEC_FLOAT(p);
    g_value_set_float(v, (gfloat)g_rand_double_range(r, MAX(f->minimum, -10),
                                                     MIN(f->maximum, 10)));
  } else if (G_TYPE_IS_ENUM(t)) {
    GEnumClass *c = g_type_class_ref(t);
    g_value_set_enum(v, c->values[pick(r, 0, c->n_values - 1)].value);
    g_type_class_unref(c);
  } else if (t == G_TYPE_STRING && !strcmp(name, "components")) {
    static const char *const c[] = {"all", "r", "gb", "1", "luma", "y"};
    g_value_set_string(v, c[pick(r, 0, G_N_ELEMENTS(c) - 1)]);
  } else if (t == G_TYPE_STRING)
    g_value_set_string(v, nfiles ? files[pick(r, 0, nfiles - 1)] : NULL);
  else if (t == GST_TYPE_ARRAY) {
    guint side = 2 * pick(r, 0, 3) + 1,
          n = video ? side * side : pick(r, 1, 200);
    for (guint i = 0; i < n; i++) {
      GValue f = G_VALUE_INIT;
      g_value_init(&f, G_TYPE_FLOAT);
      g_value_set_float(&f, (gfloat)g_rand_double_range(r, -1, 1) / n);
      gst_value_array_append_and_take_value(v, &f);
    }
  } else {
    g_value_unset(v);
    return FALSE;
  }
  return TRUE;
}

static gpointer setter(gpointer seed)
{
  GRand *r = g_rand_new_with_seed(GPOINTER_TO_UINT(seed));
  guint n;
  GParamSpec **ps =
      g_object_class_list_properties(G_OBJECT_GET_CLASS(element), &n);
  while (!g_atomic_int_get(&stop)) {
    GParamSpec *p = ps[pick(r, 0, n - 1)];
    const char *name = g_param_spec_get_name(p);
    GValue v = G_VALUE_INIT;
    if (!(p->flags & G_PARAM_WRITABLE) || (p->flags & G_PARAM_CONSTRUCT_ONLY) ||
        !strcmp(name, "name") || !strcmp(name, "parent") ||
        !random_value(p, &v, r))
      continue;
    g_object_set_property(G_OBJECT(element), name, &v);
    g_value_unset(&v);
    g_usleep(pick(r, 0, 3000));
  }
  g_free(ps);
  g_rand_free(r);
  return NULL;
}

static gpointer getter(gpointer unused)
{
  (void)unused;
  guint n;
  GParamSpec **ps =
      g_object_class_list_properties(G_OBJECT_GET_CLASS(element), &n);
  while (!g_atomic_int_get(&stop)) {
    for (guint i = 0; i < n; i++) {
      GValue v = G_VALUE_INIT;
      if (!(ps[i]->flags & G_PARAM_READABLE))
        continue;
      g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(ps[i]));
      g_object_get_property(G_OBJECT(element), g_param_spec_get_name(ps[i]),
                            &v);
      g_value_unset(&v);
    }
    GstQuery *q = gst_query_new_latency();
    gst_element_query(element, q);
    gst_query_unref(q);
    g_usleep(1000);
  }
  g_free(ps);
  return NULL;
}

int main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (argc < 4 || (strcmp(argv[1], "audio") && strcmp(argv[1], "video") &&
                   strcmp(argv[1], "video-convert"))) {
    fprintf(stderr,
            "usage: props audio|video|video-convert SECONDS SEED FILE...\n");
    return 2;
  }
  /* video-convert: a videoconvert before cudaconvolve, which components
   * the caps lack make it renegotiate */
  int convert = !strcmp(argv[1], "video-convert");
  video = convert || !strcmp(argv[1], "video");
  int seconds = atoi(argv[2]);
  guint seed = (guint)strtoul(argv[3], NULL, 10);
  files = (const char **)argv + 4;
  nfiles = argc - 4;
  const char *line =
      convert ? "videotestsrc pattern=snow ! capsfilter name=caps "
                "caps=video/x-raw,format=RGBA,width=96,height=64 ! "
                "videoconvert ! cudaconvolve name=f backend=cpu ! "
                "fakesink name=sink sync=false"
      : video
          ? "videotestsrc pattern=snow ! capsfilter name=caps "
            "caps=video/x-raw,format=RGBA,width=96,height=64 ! "
            "cudaconvolve name=f backend=cpu ! fakesink name=sink sync=false"
          : "audiotestsrc wave=white-noise samplesperbuffer=333 ! "
            "capsfilter name=caps "
            "caps=audio/x-raw,format=F32LE,channels=2,rate=48000 ! "
            "cudafir name=f backend=cpu kernel=\"<0.5,0.25>\" ! "
            "fakesink name=sink sync=false";
  /* caps the main thread switches between (not below 32x32: videotestsrc
   * 1.22 frees a wrong pointer on caps changes to tiny frames) */
  static const char *const audio_caps[] = {
      "audio/x-raw,format=F32LE,channels=2,rate=48000",
      "audio/x-raw,format=S16LE,channels=1,rate=44100",
      "audio/x-raw,format=S32LE,channels=3,rate=32000",
      "audio/x-raw,format=F64LE,channels=2,rate=96000"};
  static const char *const video_caps[] = {
      "video/x-raw,format=RGBA,width=96,height=64",
      "video/x-raw,format=GRAY8,width=64,height=48",
      "video/x-raw,format=I420,width=80,height=60",
      "video/x-raw,format=NV12,width=64,height=64",
      "video/x-raw,format=BGR,width=66,height=34"};
  GError *err = NULL;
  /* a pipeline comes back with err set when an element is missing */
  GstElement *pipe = gst_parse_launch(line, &err);
  if (!pipe || err) {
    fprintf(stderr, "props: %s\n", err ? err->message : "no pipeline");
    return 1;
  }
  element = gst_bin_get_by_name(GST_BIN(pipe), "f");
  GstElement *capsfilter = gst_bin_get_by_name(GST_BIN(pipe), "caps");
  if (gst_element_set_state(pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    fprintf(stderr, "props: the pipeline does not start\n");
    return 1;
  }
  GThread *t[3] = {g_thread_new("set1", setter, GUINT_TO_POINTER(seed)),
                   g_thread_new("set2", setter, GUINT_TO_POINTER(seed + 1)),
                   g_thread_new("get", getter, NULL)};
  GRand *r = g_rand_new_with_seed(seed + 2);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipe), "sink");
  GstPad *sinkpad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(sinkpad, GST_PAD_PROBE_TYPE_BUFFER, count_buffer, NULL,
                    NULL);
  gst_object_unref(sinkpad);
  gst_object_unref(sink);
  /* a stream that stops flowing with no error posted is a fault: the
   * element refuses what it cannot do with an error, it never just stops */
  gint last_count = 0;
  gint64 last_flow = g_get_monotonic_time();
  unsigned stalls = 0;
  GstBus *bus = gst_element_get_bus(pipe);
  gint64 end = g_get_monotonic_time() + seconds * G_TIME_SPAN_SECOND;
  unsigned steps = 0, restarts = 0;
  GHashTable *errors = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                             NULL); /* message: count */
  while (g_get_monotonic_time() < end) {
    GstMessage *m;
    /* refused kernels and the like end the stream: start it again */
    while (
        (m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR | GST_MESSAGE_EOS))) {
      if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
        GError *e = NULL;
        gchar *dbg = NULL;
        gst_message_parse_error(m, &e, &dbg);
        /* the detail without the source location GStreamer puts first */
        const char *d = dbg ? strrchr(dbg, ':') : NULL;
        gchar *what =
            g_strdup_printf("%s: %s (%s)", GST_OBJECT_NAME(m->src),
                            e ? e->message : "?", d ? d + 1 : (dbg ? dbg : ""));
        g_strdelimit(what, "\n", ' ');
        g_free(dbg);
        g_hash_table_replace(
            errors, what,
            GUINT_TO_POINTER(
                GPOINTER_TO_UINT(g_hash_table_lookup(errors, what)) + 1));
        g_clear_error(&e);
      }
      gst_message_unref(m);
      restarts++;
      gst_element_set_state(pipe, GST_STATE_NULL);
      gst_element_set_state(pipe, GST_STATE_PLAYING);
    }
    switch (pick(r, 0, 9)) {
    case 3: {
      const char *c =
          video ? video_caps[pick(r, 0, G_N_ELEMENTS(video_caps) - 1)]
                : audio_caps[pick(r, 0, G_N_ELEMENTS(audio_caps) - 1)];
      GstCaps *caps = gst_caps_from_string(c);
      g_object_set(capsfilter, "caps", caps, NULL);
      gst_caps_unref(caps);
      break;
    }
    case 0:
      gst_element_seek_simple(pipe, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, 0);
      break;
    case 1:
      gst_element_set_state(pipe, GST_STATE_PAUSED);
      g_usleep(5000);
      gst_element_set_state(pipe, GST_STATE_PLAYING);
      break;
    case 2:
      gst_element_set_state(pipe, GST_STATE_READY);
      gst_element_set_state(pipe, GST_STATE_PLAYING);
      break;
    default: break;
    }
    steps++;
    gint now_count = g_atomic_int_get(&flowing);
    gint64 now = g_get_monotonic_time();
    if (now_count != last_count) {
      last_count = now_count;
      last_flow = now;
    } else if (now - last_flow > 10 * G_TIME_SPAN_SECOND &&
               !gst_bus_have_pending(bus)) {
      GstState st, pending;
      gst_element_get_state(pipe, &st, &pending, 0);
      printf("props %s: no buffer for 10 s and no error (state %s, pending "
             "%s)\n",
             argv[1], gst_element_state_get_name(st),
             gst_element_state_get_name(pending));
      stalls++;
      last_flow = now;
      gst_element_set_state(pipe, GST_STATE_NULL);
      gst_element_set_state(pipe, GST_STATE_PLAYING);
    }
    g_usleep(pick(r, 10000, 100000));
  }
  g_atomic_int_set(&stop, 1);
  for (int i = 0; i < 3; i++)
    g_thread_join(t[i]);
  gst_element_set_state(pipe, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(element);
  gst_object_unref(capsfilter);
  gst_object_unref(pipe);
  g_rand_free(r);
  printf("props %s: %u steps, %u restarts after an error or EOS\n", argv[1],
         steps, restarts);
  GHashTableIter it;
  gpointer key, count;
  g_hash_table_iter_init(&it, errors);
  while (g_hash_table_iter_next(&it, &key, &count))
    printf("  %5u x %s\n", GPOINTER_TO_UINT(count), (const char *)key);
  g_hash_table_destroy(errors);
  return stalls ? 1 : 0;
}
