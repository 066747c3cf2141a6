/* A GStreamer pipeline stream: anything gst-launch-1.0 runs (a webcam, a
 * microphone, a network source, files), with our elements in it, or
 * none where it only carries a stream (to a daemon on another host). The
 * daemon watches its bus, changes element properties on request, and
 * times the filter element's buffers with two pad probes. */
#include "cfd.h"

#ifdef CFD_HAVE_GST

#include <errno.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#define RING 4096

struct cfd_pipeline {
  char *name;
  GstElement *pipe;
  GstElement *filter; /* cudafir/cudaconvolve (or the configured one) */
  guint watch;
  char *error; /* the bus's first error: the pipeline is stopped */
  bool eos;
  gint64 t_in; /* filter sink pad: when the buffer arrived */
  _Atomic uint64_t buffers, proc_n;
  _Atomic float proc_us[RING];
  /* our elements' kernel files as they took them: element name -> the
   * file's stamp and SHA-256, "STAMP SUM" (file_sum) */
  GHashTable *kernel_sums;
  uint64_t serial; /* this pipeline's, of all the daemon starts */
};

static _Atomic uint64_t serials;

bool cfd_pipeline_available(const char **why)
{
  (void)why;
  return true;
}

static bool is_ours(GstElement *el)
{
  GstElementFactory *f = gst_element_get_factory(el);
  const char *n = f ? GST_OBJECT_NAME(f) : "";
  return !strcmp(n, "cudafir") || !strcmp(n, "cudaconvolve");
}

/* A message's debug text (where it arose, and for our elements why) as
 * " (TEXT)" on the log line: its line breaks become "; ". */
static char *detail(const char *dbg)
{
  if (!dbg || !*dbg)
    return g_strdup("");
  char *t = g_strdup(dbg);
  g_strstrip(t);
  GString *o = g_string_new(" (");
  for (const char *c = t; *c; c++)
    if (*c == '\n')
      g_string_append(o, "; ");
    else
      g_string_append_c(o, *c);
  g_free(t);
  g_string_append_c(o, ')');
  return g_string_free(o, FALSE);
}

static gboolean on_bus(GstBus *bus, GstMessage *m, gpointer user)
{
  cfd_pipeline *p = user;
  (void)bus;
  GstMessageType type = GST_MESSAGE_TYPE(m);
  if ((type == GST_MESSAGE_ERROR && !p->error) ||
      type == GST_MESSAGE_WARNING) {
    GError *e = NULL;
    char *dbg = NULL;
    if (type == GST_MESSAGE_ERROR)
      gst_message_parse_error(m, &e, &dbg);
    else
      gst_message_parse_warning(m, &e, &dbg);
    char *more = detail(dbg);
    if (type == GST_MESSAGE_ERROR) {
      /* our elements give why after the debug text's first line; not
       * again where their message holds it already (QA: a kernel that
       * did not fit was said twice in status) */
      const char *why = dbg && strchr(dbg, '\n') && GST_IS_ELEMENT(m->src) &&
                                is_ours(GST_ELEMENT(m->src))
                            ? strchr(dbg, '\n') + 1
                            : NULL;
      if (why && (!*why || (e && strstr(e->message, why))))
        why = NULL;
      p->error = g_strdup_printf("%s: %s%s%s", GST_OBJECT_NAME(m->src),
                                 e ? e->message : "error", why ? ": " : "",
                                 why ? why : "");
      g_printerr("cudafilterd: stream %s stopped: %s%s\n", p->name, p->error,
                 more);
      gst_element_set_state(p->pipe, GST_STATE_NULL);
    } else {
      g_printerr("cudafilterd: stream %s: warning from %s: %s%s\n", p->name,
                 GST_OBJECT_NAME(m->src), e ? e->message : "?", more);
    }
    g_free(more);
    g_clear_error(&e);
    g_free(dbg);
  } else if (type == GST_MESSAGE_EOS) {
    p->eos = true;
    gst_element_set_state(p->pipe, GST_STATE_NULL);
  }
  return G_SOURCE_CONTINUE;
}

static GstPadProbeReturn probe_in(GstPad *pad, GstPadProbeInfo *info,
                                  gpointer user)
{
  (void)pad;
  (void)info;
  ((cfd_pipeline *)user)->t_in = g_get_monotonic_time();
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn probe_out(GstPad *pad, GstPadProbeInfo *info,
                                   gpointer user)
{
  cfd_pipeline *p = user;
  (void)pad;
  (void)info;
  uint64_t i = atomic_fetch_add(&p->buffers, 1);
  atomic_store_explicit(&p->proc_us[i % RING],
                        (float)(g_get_monotonic_time() - p->t_in),
                        memory_order_relaxed);
  atomic_store_explicit(&p->proc_n, i + 1, memory_order_release);
  return GST_PAD_PROBE_OK;
}

/* The configured filter, else the one cudafir/cudaconvolve. */
static GstElement *find_filter(GstElement *pipe, const char *name, GError **err)
{
  if (!GST_IS_BIN(pipe)) {
    if (!name && is_ours(pipe))
      return gst_object_ref(pipe);
    g_set_error(err, CFD_ERROR, 0, "the pipeline is a single element");
    return NULL;
  }
  if (name) {
    GstElement *el = gst_bin_get_by_name(GST_BIN(pipe), name);
    if (!el)
      g_set_error(err, CFD_ERROR, 0,
                  "filter: no element named '%s' in "
                  "the pipeline",
                  name);
    return el;
  }
  GstIterator *it = gst_bin_iterate_recurse(GST_BIN(pipe));
  GValue v = G_VALUE_INIT;
  GstElement *found = NULL;
  int n = 0;
  bool done = false;
  while (!done) {
    switch (gst_iterator_next(it, &v)) {
    case GST_ITERATOR_OK: {
      GstElement *el = g_value_get_object(&v);
      if (is_ours(el) && n++ == 0)
        found = gst_object_ref(el);
      g_value_reset(&v);
      break;
    }
    case GST_ITERATOR_RESYNC:
      gst_iterator_resync(it);
      n = 0;
      gst_clear_object(&found);
      break;
    default: done = true; break;
    }
  }
  g_value_unset(&v);
  gst_iterator_free(it);
  if (n > 1) {
    gst_clear_object(&found);
    g_set_error(err, CFD_ERROR, 0,
                "the pipeline has several cudafir/cudaconvolve elements; "
                "name the one to control with filter = NAME");
  }
  return found;
}

static void add_probe(GstElement *el, const char *pad, GstPadProbeCallback cb,
                      cfd_pipeline *p)
{
  GstPad *pd = gst_element_get_static_pad(el, pad);
  if (pd) {
    gst_pad_add_probe(pd, GST_PAD_PROBE_TYPE_BUFFER, cb, p, NULL);
    gst_object_unref(pd);
  }
}

/* sc's pipeline, built (floating reference), or NULL with why. */
static GstElement *build(const cfd_stream_conf *sc, GError **err)
{
  GError *e = NULL;
  GstElement *pipe = gst_parse_launch_full(sc->pipeline, NULL,
                                           GST_PARSE_FLAG_FATAL_ERRORS, &e);
  if (!pipe) {
    g_set_error(err, CFD_ERROR, 0, "pipeline: %s",
                e ? e->message : "cannot be built");
    g_clear_error(&e);
    return NULL;
  }
  g_clear_error(&e); /* a warning, had parsing made one */
  return pipe;
}

/* Our elements' g_warning while a check builds the pipeline (in this
 * thread: running pipelines' threads may log meanwhile, and a reload
 * checks in a thread of its own): a property value they refuse, or a
 * kernel file that does not load (which they keep, to fail negotiation
 * at start); and GObject's, for any element's property given a number
 * out of its range, which gst_parse_launch does not fail on (the
 * element keeps its default). Printed as usual too. The handler, once
 * installed, stays: a thread that took it while another check ended
 * must not find that check's record gone. */
typedef struct caught {
  GThread *thread;
  GString *text;
} caught;

static GMutex catch_lock;
static GSList *catchers; /* caught *: the checks in progress */

static void catch_warning(const gchar *domain, GLogLevelFlags level,
                          const gchar *msg, gpointer user)
{
  (void)user;
  /* GObject's: only a value refused for a property (not a deprecation
   * under G_ENABLE_DIAGNOSTIC, or a plugin's own registration noise:
   * those would refuse a valid config; review) */
  if ((level & G_LOG_LEVEL_WARNING) && domain &&
      (g_str_has_prefix(domain, "cuda") ||
       (g_str_equal(domain, "GLib-GObject") && msg &&
        strstr(msg, "out of range for property")))) {
    g_mutex_lock(&catch_lock);
    for (GSList *l = catchers; l; l = l->next) {
      caught *c = l->data;
      if (c->thread == g_thread_self() && !c->text->len)
        g_string_append(c->text, msg);
    }
    g_mutex_unlock(&catch_lock);
  }
  g_log_default_handler(domain, level, msg, NULL);
}

/* The warnings our elements post while a job's thread sets a property on
 * them (their refusal): noted by the bus's sync handler, in the thread
 * that posts them, for that thread's job; the bus watch logs them as
 * ever. */
typedef struct heard {
  GThread *thread;
  GstElement *el;
  char *why; /* the last one's text, as refusal_said takes it */
} heard;

static GSList *hearers; /* heard *, under catch_lock */

/* A warning's why: our elements give it after the debug text's first
 * line. */
static char *warning_why(GstMessage *m)
{
  GError *e = NULL;
  char *dbg = NULL;
  gst_message_parse_warning(m, &e, &dbg);
  const char *nl = dbg ? strchr(dbg, '\n') : NULL;
  char *why = g_strdup(nl && nl[1] ? nl + 1 : e ? e->message : "?");
  g_clear_error(&e);
  g_free(dbg);
  return why;
}

static GstBusSyncReply hear_warning(GstBus *bus, GstMessage *m, gpointer user)
{
  (void)bus;
  (void)user;
  if (GST_MESSAGE_TYPE(m) != GST_MESSAGE_WARNING)
    return GST_BUS_PASS;
  g_mutex_lock(&catch_lock);
  for (GSList *l = hearers; l; l = l->next) {
    heard *h = l->data;
    if (h->thread == g_thread_self() && m->src == GST_OBJECT(h->el)) {
      g_free(h->why);
      h->why = warning_why(m);
    }
  }
  g_mutex_unlock(&catch_lock);
  return GST_BUS_PASS;
}

bool cfd_pipeline_check(const cfd_stream_conf *sc, GError **err)
{
  static gsize installed;
  if (g_once_init_enter(&installed)) {
    g_log_set_default_handler(catch_warning, NULL);
    g_once_init_leave(&installed, 1);
  }
  caught warned = {g_thread_self(), g_string_new(NULL)};
  g_mutex_lock(&catch_lock);
  catchers = g_slist_prepend(catchers, &warned);
  g_mutex_unlock(&catch_lock);
  GstElement *pipe = build(sc, err);
  g_mutex_lock(&catch_lock);
  catchers = g_slist_remove(catchers, &warned);
  g_mutex_unlock(&catch_lock);
  if (pipe && warned.text->len) {
    g_set_error(err, CFD_ERROR, 0, "%s", warned.text->str);
    gst_object_unref(gst_object_ref_sink(pipe));
    pipe = NULL;
  }
  g_string_free(warned.text, TRUE);
  if (!pipe)
    return false;
  gst_object_ref_sink(pipe);
  GError *e = NULL;
  GstElement *f = find_filter(pipe, sc->filter, &e);
  gst_clear_object(&f);
  gst_object_unref(pipe);
  if (e)
    g_propagate_error(err, e);
  return e == NULL;
}

/* A file as stat sees it (which file, its size, when it was last
 * written or changed, to the nanosecond), or NULL. */
static char *file_stamp(const char *path)
{
  struct stat st;
  if (stat(path, &st) != 0)
    return NULL;
  return g_strdup_printf(
      "%ju:%ju:%jd:%jd.%09ld:%jd.%09ld", (uintmax_t)st.st_dev,
      (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
      st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

/* A file's stamp (taken before it is read: a write meanwhile makes
 * another) and the SHA-256 of its bytes, as "STAMP SUM", or NULL where
 * it cannot be read. Tests only: CF_TEST_SUM_GATE, once that path exists
 * (a named pipe), is read to its end first. */
static char *file_sum(const char *path)
{
  cfd_test_gate("CF_TEST_SUM_GATE");
  char *stamp = file_stamp(path);
  gchar *data = NULL;
  gsize n = 0;
  if (!stamp || !g_file_get_contents(path, &data, &n, NULL)) {
    g_free(stamp);
    return NULL;
  }
  char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256,
                                          (const guchar *)data, n);
  char *note = g_strdup_printf("%s %s", stamp, sum);
  g_free(data);
  g_free(sum);
  g_free(stamp);
  return note;
}

/* Whether a file noted (file_sum) is as it was noted: its stamp the
 * same. */
static bool stamp_same(const char *note, const char *path)
{
  char *stamp = file_stamp(path);
  size_t n = stamp ? strlen(stamp) : 0;
  bool same = stamp && !strncmp(note, stamp, n) && note[n] == ' ';
  g_free(stamp);
  return same;
}

/* An element of ours with a kernel file set: its path, else NULL. */
static char *kernel_file_of(GstElement *el)
{
  if (!is_ours(el) ||
      !g_object_class_find_property(G_OBJECT_GET_CLASS(el), "kernel-file"))
    return NULL;
  char *f = NULL;
  g_object_get(el, "kernel-file", &f, NULL);
  if (f && !*f)
    g_clear_pointer(&f, g_free);
  return f;
}

typedef struct kernels_walk {
  cfd_pipeline *p;
  GString *report; /* NULL: only note the files as they are */
  GPtrArray *jobs; /* the elements' reads, for a thread; NULL: made here */
} kernels_walk;

static cfd_pipeline_job *job_again(GstElement *el, const char *file);
static cfd_pipeline_job *job_sum(GstElement *el, const char *file,
                                 const char *was, uint64_t serial);

/* One element: its kernel file noted, or (report) taken again where its
 * bytes changed since they were noted; with jobs, one whose stamp
 * changed is checksummed in a thread instead (a job for the caller). */
static void walk_kernel(const GValue *v, gpointer user)
{
  kernels_walk *w = user;
  GstElement *el = g_value_get_object(v);
  char *f = kernel_file_of(el);
  const char *was = f ? g_hash_table_lookup(w->p->kernel_sums,
                                            GST_OBJECT_NAME(el))
                      : NULL;
  /* a reload looks at every kernel file: one whose stamp is as noted is
   * not read again in the daemon's loop (QA: 0.21 s of status waiting
   * for a 64 MB .npy left as it was) */
  if (was && stamp_same(was, f)) {
    g_free(f);
    return;
  }
  /* a changed one is read whole (0.21 s for 64 MB): not in the loop */
  if (f && w->report && w->jobs) {
    g_ptr_array_add(w->jobs, job_sum(el, f, was, w->p->serial));
    g_free(f);
    return;
  }
  char *sum = f ? file_sum(f) : NULL;
  if (sum) {
    /* the bytes, not the stamp: a file touched is no new kernel */
    if (w->report && was && strcmp(strchr(was, ' '), strchr(sum, ' '))) {
      /* the same path set again: the element reads it again and swaps
       * as for `set` (a kernel it refuses is on the bus, in the log),
       * in a thread where the caller takes the jobs */
      if (w->jobs)
        g_ptr_array_add(w->jobs, job_again(el, f));
      else
        g_object_set(el, "kernel-file", f, NULL);
      g_string_append_printf(w->report, "%s: new kernel (%s read %s again)\n",
                             w->p->name, GST_OBJECT_NAME(el), f);
    }
    g_hash_table_replace(w->p->kernel_sums, g_strdup(GST_OBJECT_NAME(el)),
                         sum);
  }
  g_free(f);
}

void cfd_pipeline_reread(cfd_pipeline *p, GString *report, GPtrArray *jobs)
{
  kernels_walk w = {p, report, jobs};
  GstIterator *it = gst_bin_iterate_recurse(GST_BIN(p->pipe));
  GstIteratorResult r = gst_iterator_foreach(it, walk_kernel, &w);
  if (r != GST_ITERATOR_DONE)
    g_printerr("cudafilterd: stream %s: its elements could not all be "
               "looked at for kernel files\n", p->name);
  gst_iterator_free(it);
}

/* Tests only: CF_TEST_START_GATE, a path that, once it exists (a named
 * pipe), is read to its end before a pipeline is built: the build and
 * start (where the elements load their kernel files) as slow as the test
 * wants. */
static void start_gate(void)
{
  cfd_test_gate("CF_TEST_START_GATE");
}

cfd_pipeline *cfd_pipeline_start(const cfd_stream_conf *sc, GError **err)
{
  cfd_pipeline *p = cfd_pipeline_start_unwatched(sc, err);
  if (p)
    cfd_pipeline_watch(p);
  return p;
}

void cfd_pipeline_watch(cfd_pipeline *p)
{
  GstBus *bus = gst_element_get_bus(p->pipe);
  p->watch = gst_bus_add_watch(bus, on_bus, p);
  gst_object_unref(bus);
}

cfd_pipeline *cfd_pipeline_start_unwatched(const cfd_stream_conf *sc,
                                           GError **err)
{
  GError *e = NULL;
  start_gate();
  GstElement *pipe = build(sc, err);
  if (!pipe)
    return NULL;
  cfd_pipeline *p = g_new0(cfd_pipeline, 1);
  p->name = g_strdup(sc->name);
  p->pipe = gst_object_ref_sink(pipe);
  p->kernel_sums =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  p->serial = atomic_fetch_add(&serials, 1) + 1;
  /* none: a pipeline that only carries a stream (a sender to a daemon
   * on another host); set takes ELEMENT.PROPERTY there */
  p->filter = find_filter(pipe, sc->filter, &e);
  if (e) {
    g_propagate_error(err, e);
    goto fail;
  }
  if (p->filter) {
    add_probe(p->filter, "sink", probe_in, p);
    add_probe(p->filter, "src", probe_out, p);
  }
  cfd_pipeline_reread(p, NULL, NULL);
  /* the bus keeps its messages until the loop watches it */
  GstBus *bus = gst_element_get_bus(pipe);
  gst_bus_set_sync_handler(bus, hear_warning, NULL, NULL);
  gst_object_unref(bus);
  if (gst_element_set_state(pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    /* the bus holds why */
    GstBus *b = gst_element_get_bus(pipe);
    GstMessage *m = gst_bus_pop_filtered(b, GST_MESSAGE_ERROR);
    GError *ge = NULL;
    if (m)
      gst_message_parse_error(m, &ge, NULL);
    g_set_error(err, CFD_ERROR, 0, "pipeline cannot start: %s%s%s",
                m ? GST_OBJECT_NAME(m->src) : "", m ? ": " : "",
                ge ? ge->message : "state change failed");
    g_clear_error(&ge);
    if (m)
      gst_message_unref(m);
    gst_object_unref(b);
    goto fail;
  }
  return p;
fail:
  cfd_pipeline_stop(p);
  return NULL;
}

void cfd_pipeline_unwatch(cfd_pipeline *p)
{
  if (p && p->watch) {
    g_source_remove(p->watch);
    p->watch = 0;
  }
}

/* Tests only: CF_TEST_STOP_GATE, a path that, once it exists (a named
 * pipe), is read to its end before a pipeline is stopped: the stop (an
 * EOS waited for up to 2 s) as slow as the test wants. */
static void stop_gate(void)
{
  cfd_test_gate("CF_TEST_STOP_GATE");
}

/* The EOS that lets p's sinks finish their files: whether an element
 * took it. Tests only: CF_TEST_EOS_REFUSED set (non-empty), it is not
 * sent, as if refused (no element of gst's own refuses it: every
 * GstBaseSrc takes it). */
static gboolean send_eos(cfd_pipeline *p)
{
  const char *refused = g_getenv("CF_TEST_EOS_REFUSED");
  if (refused && *refused)
    return FALSE;
  return gst_element_send_event(p->pipe, gst_event_new_eos());
}

void cfd_pipeline_stop(cfd_pipeline *p)
{
  if (!p)
    return;
  cfd_pipeline_unwatch(p);
  stop_gate();
  GstState st = GST_STATE_NULL;
  gst_element_get_state(p->pipe, &st, NULL, 0);
  if (st == GST_STATE_PLAYING && !p->error && !p->eos) {
    /* let muxers and file sinks finish their files */
    GstBus *bus = gst_element_get_bus(p->pipe);
    if (send_eos(p)) {
      GstMessage *m = gst_bus_timed_pop_filtered(
          bus, 2 * GST_SECOND,
          (GstMessageType)(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
      /* the watch is gone: an error in finishing (a sink's last write to
       * a full disk) is told here, or no one hears of it (QA: filesink
       * on /dev/full with its data held till EOS, exit 0, nothing in the
       * log) */
      if (m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR)
        on_bus(bus, m, p);
      else if (!m)
        g_printerr("cudafilterd: stream %s did not finish within 2 s of "
                   "its end (EOS): what it wrote may be cut short\n",
                   p->name);
      if (m)
        gst_message_unref(m);
    } else {
      /* no element took it (a source that cannot end, a bin without
       * one): its files are not finished, said as a late EOS is */
      g_printerr("cudafilterd: stream %s did not take its end (EOS): what "
                 "it wrote may be cut short\n",
                 p->name);
    }
    gst_object_unref(bus);
  }
  gst_element_set_state(p->pipe, GST_STATE_NULL);
  gst_clear_object(&p->filter);
  gst_object_unref(p->pipe);
  g_hash_table_unref(p->kernel_sums);
  g_free(p->error);
  g_free(p->name);
  g_free(p);
}

bool cfd_pipeline_ended(cfd_pipeline *p, bool *failed)
{
  *failed = p->error != NULL;
  return p->error || p->eos;
}

void cfd_pipeline_status(cfd_pipeline *p, GString *out)
{
  GstState st = GST_STATE_NULL;
  gst_element_get_state(p->pipe, &st, NULL, 0);
  uint64_t n = atomic_load_explicit(&p->proc_n, memory_order_acquire);
  size_t m = n < RING ? (size_t)n : RING;
  float *v = g_new(float, m ? m : 1);
  for (size_t i = 0; i < m; i++)
    v[i] = atomic_load_explicit(&p->proc_us[i], memory_order_relaxed);
  double mean, p50, p99, max;
  cfd_percentiles(v, m, &mean, &p50, &p99, &max);
  g_free(v);
  char *backend = NULL;
  if (p->filter && g_object_class_find_property(G_OBJECT_GET_CLASS(p->filter),
                                                "backend-in-use"))
    g_object_get(p->filter, "backend-in-use", &backend, NULL);
  char *filt = cfd_quoted(p->filter ? GST_OBJECT_NAME(p->filter) : "none");
  char *be = cfd_quoted(backend ? backend : "none");
  g_string_append_printf(out,
                         "state=%s filter=%s buffers=%" G_GUINT64_FORMAT
                         " proc-us-mean=%.1f proc-us-p50=%.1f proc-us-p99=%.1f "
                         "proc-us-max=%.1f backend-in-use=%s",
                         p->error ? "error"
                         : p->eos ? "finished"
                                  : gst_element_state_get_name(st),
                         filt, (guint64)atomic_load(&p->buffers), mean, p50,
                         p99, max, be);
  if (p->error) {
    char *e = cfd_quoted(p->error);
    g_string_append_printf(out, " error=%s", e);
    g_free(e);
  }
  g_free(filt);
  g_free(be);
  g_free(backend);
}

/* Why el refused a value: the text of the warning it posted while the
 * value was set (our elements post one), taken off the bus here and
 * logged as the bus watch would; NULL if none. p NULL: in a job's
 * thread, the one it posted there. */
static char *refusal_said(cfd_pipeline *p, GstElement *el)
{
  if (!p) { /* in a job's thread: what hear_warning noted */
    char *why = NULL;
    g_mutex_lock(&catch_lock);
    for (GSList *l = hearers; l && !why; l = l->next) {
      heard *h = l->data;
      if (h->thread == g_thread_self() && h->el == el)
        why = g_strdup(h->why);
    }
    g_mutex_unlock(&catch_lock);
    return why;
  }
  GstBus *bus = gst_element_get_bus(p->pipe);
  if (!bus)
    return NULL;
  char *why = NULL;
  GstMessage *m;
  while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING))) {
    /* the last: one the streaming thread posted before may be queued */
    if (m->src == GST_OBJECT(el)) {
      g_free(why);
      why = warning_why(m);
    }
    on_bus(bus, m, p);
    gst_message_unref(m);
  }
  gst_object_unref(bus);
  return why;
}

/* Whether the element's value a holds what b asks: an array whose taps
 * were parsed as doubles (the property has no element type) equals the
 * element's floats of the same values, compared at the element's type. */
static bool same_value(const GValue *a, const GValue *b)
{
  if (!GST_VALUE_HOLDS_ARRAY(a) || !GST_VALUE_HOLDS_ARRAY(b))
    return gst_value_compare(a, b) == GST_VALUE_EQUAL;
  guint n = gst_value_array_get_size(a);
  if (gst_value_array_get_size(b) != n)
    return false;
  for (guint i = 0; i < n; i++) {
    const GValue *x = gst_value_array_get_value(a, i);
    const GValue *y = gst_value_array_get_value(b, i);
    if (G_VALUE_TYPE(x) == G_VALUE_TYPE(y)) {
      if (gst_value_compare(x, y) != GST_VALUE_EQUAL)
        return false;
      continue;
    }
    GValue t = G_VALUE_INIT;
    g_value_init(&t, G_VALUE_TYPE(x));
    bool eq = g_value_transform(y, &t) &&
              gst_value_compare(x, &t) == GST_VALUE_EQUAL;
    g_value_unset(&t);
    if (!eq)
      return false;
  }
  return true;
}

/* Tests only: CF_TEST_SET_GATE, a path that, once it exists (a named
 * pipe), is read to its end before one of our elements is given a
 * property set: its setter (where cudaconvolve prepares a kernel: 2.9 s
 * for a 4095 x 4095 box) as slow as the test wants. */
static void set_gate(GstElement *el)
{
  if (is_ours(el))
    cfd_test_gate("CF_TEST_SET_GATE");
}

/* Set ps on el to v where the element's state lets it take it now, and
 * say so where the element kept its old value instead (our elements
 * refuse a bad value with a warning: the client must hear it). A value
 * read back changed but not as asked (an element that rounds or
 * normalises) counts as taken. p NULL: in a job's thread. */
static bool set_checked(cfd_pipeline *p, GstElement *el, GParamSpec *ps,
                        const GValue *v, const char *value, GError **err)
{
  /* a property the element takes only in lower states would be stored
   * and used at its next start: not now, which is what set promises */
  GstState state = GST_STATE_NULL, limit = GST_STATE_PLAYING;
  gst_element_get_state(el, &state, NULL, 0);
  if (ps->flags & GST_PARAM_MUTABLE_READY)
    limit = GST_STATE_READY;
  else if (ps->flags & GST_PARAM_MUTABLE_PAUSED)
    limit = GST_STATE_PAUSED;
  if (state > limit) {
    g_set_error(err, CFD_ERROR, 0,
                "%s.%s changes only up to the %s state and the element is "
                "%s: change it in the config (a reload restarts the stream)",
                GST_OBJECT_NAME(el), ps->name,
                gst_element_state_get_name(limit),
                gst_element_state_get_name(state));
    return false;
  }
  GValue before = G_VALUE_INIT, now = G_VALUE_INIT;
  bool readable = (ps->flags & G_PARAM_READABLE) != 0;
  if (readable) {
    g_value_init(&before, G_PARAM_SPEC_VALUE_TYPE(ps));
    g_object_get_property(G_OBJECT(el), ps->name, &before);
  }
  set_gate(el);
  g_object_set_property(G_OBJECT(el), ps->name, v);
  if (!readable)
    return true;
  g_value_init(&now, G_PARAM_SPEC_VALUE_TYPE(ps));
  g_object_get_property(G_OBJECT(el), ps->name, &now);
  /* a value asked that the element already held is taken, not kept
   * (QA: set a kernel 0.1,0.8,0.1 twice was 'refused ... and keeps
   * <0.1, 0.8, 0.1>': the taps asked are doubles, the element's floats) */
  bool kept = !same_value(&now, v) && same_value(&now, &before);
  /* an unset kernel or kernel-file kept (the kernel coming from the
   * other, or a preset) serialises as "<  >" or nothing: say unset */
  bool unset = kept && ((GST_VALUE_HOLDS_ARRAY(&now) &&
                         gst_value_array_get_size(&now) == 0) ||
                        (G_VALUE_HOLDS_STRING(&now) &&
                         !(g_value_get_string(&now) &&
                           *g_value_get_string(&now))));
  if (unset) {
    char *why = refusal_said(p, el);
    g_set_error(err, CFD_ERROR, 0, "%s refused %s = %s (%s); %s stays "
                "unset, as it was",
                GST_OBJECT_NAME(el), ps->name, value,
                why ? why : "the daemon's log has the element's message",
                ps->name);
    g_free(why);
  } else if (kept) {
    char *was = gst_value_serialize(&now);
    char *why = refusal_said(p, el);
    if (why)
      g_set_error(err, CFD_ERROR, 0, "%s refused %s = %s (%s) and keeps %s",
                  GST_OBJECT_NAME(el), ps->name, value, why,
                  was ? was : "its value");
    else
      g_set_error(err, CFD_ERROR, 0,
                  "%s refused %s = %s and keeps %s (a message the element "
                  "gave is in the daemon's log)",
                  GST_OBJECT_NAME(el), ps->name, value,
                  was ? was : "its value");
    g_free(why);
    g_free(was);
  }
  g_value_unset(&before);
  g_value_unset(&now);
  return !kept;
}

/* Why cudaconvolve cannot shape the taps `v` into a kernel with its
 * kernel-width and kernel-height as they are, or NULL. The element keeps
 * such taps as its setting (gst-launch may set kernel-width after them)
 * and refuses them only at its next frame, in its streaming thread,
 * keeping its kernel: `set` read the setting back and answered ok (QA:
 * `set cam kernel 1,2,3`). Its rules (compile_kernel), checked first. */
static char *conv_taps_unshaped(GstElement *el, const GValue *v)
{
  if (strcmp(G_OBJECT_TYPE_NAME(el), "GstCudaConvolve") ||
      !GST_VALUE_HOLDS_ARRAY(v))
    return NULL;
  guint n = gst_value_array_get_size(v), w = 0, h = 0;
  if (!n) /* unset: the kernel comes from the preset or file again */
    return NULL;
  g_object_get(el, "kernel-width", &w, "kernel-height", &h, NULL);
  if (!w && !h) {
    guint side = (guint)llround(sqrt((double)n));
    if ((guint64)side * side != n)
      return g_strdup_printf("%u taps are not a square number: set "
                             "kernel-width or kernel-height first",
                             n);
  } else if (!w || !h) {
    guint given = w ? w : h;
    if (n % given)
      return g_strdup_printf("%u taps are not a multiple of kernel-%s %u", n,
                             w ? "width" : "height", given);
  } else if (n % ((guint64)w * h)) {
    return g_strdup_printf("%u taps are not a multiple of kernel-width x "
                           "kernel-height, %u x %u",
                           n, w, h);
  }
  return NULL;
}

/* A set the daemon refuses for el: key = value, why, and what el keeps
 * (kept; NULL where the setting stays unset). */
static void refused_keeping(GError **err, GstElement *el, const char *key,
                            const char *value, const char *why,
                            const char *kept)
{
  if (kept)
    g_set_error(err, CFD_ERROR, 0, "%s refused %s = %s (%s) and keeps %s",
                GST_OBJECT_NAME(el), key, value, why, kept);
  else
    g_set_error(err, CFD_ERROR, 0,
                "%s refused %s = %s (%s); %s stays unset, as it was",
                GST_OBJECT_NAME(el), key, value, why, key);
}

/* Tests only: CF_TEST_KERNEL_GATE, a named pipe read to its end before
 * a kernel file is read, makes the read as slow as the test wants (a big
 * kernel, a slow disk). */
static void test_gate(void)
{
  cfd_test_gate("CF_TEST_KERNEL_GATE");
}

/* Why our element el cannot load `file` as its kernel, or NULL (also for
 * other elements, and an unset file). Before its stream has caps, our
 * elements keep a file that does not load as their setting (negotiation
 * then fails, naming it), so a set or swap read back as taken (QA: `set
 * hall kernel-file typo.wav` on a network stream whose sender had not
 * started answered ok; the stream failed when it did). Loaded here first
 * (at the file's own rate: the element resamples it to the stream's). */
static char *kernel_file_unloadable(GstElement *el, const char *file)
{
  const char *type = G_OBJECT_TYPE_NAME(el);
  cf_status s;
  if (!file || !*file)
    return NULL;
  test_gate();
  if (!strcmp(type, "GstCudaConvolve")) {
    cf_kernel2d *k = NULL;
    s = cf_kernel2d_load(file, &k);
    cf_kernel2d_free(k);
  } else if (!strcmp(type, "GstCudaFir")) {
    cf_kernel *k = NULL;
    s = cf_kernel_load(file, 0, &k);
    cf_kernel_free(k);
  } else {
    return NULL;
  }
  if (s == CF_OK)
    return NULL;
  /* as the elements say it: the file named once */
  return strstr(cf_last_error(), file)
             ? g_strdup(cf_last_error())
             : g_strdup_printf("%s: %s", file, cf_last_error());
}

/* " MIN..MAX" of a numeric property, or NULL. */
static char *range_of(GParamSpec *ps)
{
#define RANGE(T, f)                                                        \
  if (G_IS_PARAM_SPEC_##T(ps))                                                \
    return g_strdup_printf(" " f ".." f, G_PARAM_SPEC_##T(ps)->minimum,       \
                           G_PARAM_SPEC_##T(ps)->maximum);
  RANGE(INT, "%d")
  RANGE(UINT, "%u")
  RANGE(INT64, "%" G_GINT64_FORMAT)
  RANGE(UINT64, "%" G_GUINT64_FORMAT)
  RANGE(LONG, "%ld")
  RANGE(ULONG, "%lu")
  RANGE(FLOAT, "%g")
  RANGE(DOUBLE, "%g")
#undef RANGE
  return NULL;
}

/* set ... kernel-file of our element: the file checked (see
 * kernel_file_unloadable), then set. p NULL: in a job's thread. */
static bool set_file(cfd_pipeline *p, GstElement *el, GParamSpec *ps,
                     const GValue *v, const char *value, GError **err)
{
  char *why = kernel_file_unloadable(el, g_value_get_string(v));
  if (!why)
    return set_checked(p, el, ps, v, value, err);
  char *was = NULL;
  g_object_get(el, "kernel-file", &was, NULL);
  refused_keeping(err, el, ps->name, value, why, was && *was ? was : NULL);
  g_free(was);
  g_free(why);
  return false;
}

static bool swap_file(cfd_pipeline *p, GstElement *el, const char *file,
                      double crossfade, GError **err);

struct cfd_pipeline_job {
  GstElement *el;
  /* a reload's checksum of the kernel file (value) whose stamp changed
   * since it was noted (was, or NULL), for the pipeline of that serial */
  bool sum_only;
  char *was;
  uint64_t serial;
  GParamSpec *ps; /* set: the property; NULL: swap-kernel, or again */
  bool again;     /* a reload's: the file set again, to be read again */
  GValue v;       /* set: the value */
  char *value;    /* as asked (swap: the file) */
  double crossfade;
  bool ok;
  GError *err;
  char *sum; /* the file's SHA-256 as the element took it */
};

/* A set of a kernel file to load (not one unset). */
static bool job_loads(const cfd_pipeline_job *j)
{
  return j->ps && !strcmp(j->ps->name, "kernel-file") &&
         g_value_get_string(&j->v) && *g_value_get_string(&j->v);
}

static cfd_pipeline_job *job_new(GstElement *el, GParamSpec *ps,
                                 const GValue *v, const char *value,
                                 double crossfade)
{
  cfd_pipeline_job *j = g_new0(cfd_pipeline_job, 1);
  j->el = gst_object_ref(el);
  if (ps) {
    j->ps = g_param_spec_ref(ps);
    g_value_init(&j->v, G_VALUE_TYPE(v));
    g_value_copy(v, &j->v);
  }
  j->value = g_strdup(value);
  j->crossfade = crossfade;
  return j;
}

static cfd_pipeline_job *job_again(GstElement *el, const char *file)
{
  cfd_pipeline_job *j = job_new(el, NULL, NULL, file, -1);
  j->again = true;
  return j;
}

static cfd_pipeline_job *job_sum(GstElement *el, const char *file,
                                 const char *was, uint64_t serial)
{
  cfd_pipeline_job *j = job_new(el, NULL, NULL, file, -1);
  j->sum_only = true;
  j->was = g_strdup(was);
  j->serial = serial;
  return j;
}

uint64_t cfd_pipeline_serial(const cfd_pipeline *p)
{
  return p->serial;
}

uint64_t cfd_pipeline_job_serial(const cfd_pipeline_job *j)
{
  return j->serial;
}

cfd_pipeline_job *cfd_pipeline_sum_finish(cfd_pipeline *p, cfd_pipeline_job *j,
                                          GString *report)
{
  /* the element set to another file since: that one is noted */
  char *f = kernel_file_of(j->el);
  bool same = f && !strcmp(f, j->value);
  g_free(f);
  if (!same || !j->sum)
    return NULL;
  cfd_pipeline_job *again = NULL;
  /* the bytes, not the stamp: a file touched is no new kernel */
  if (j->was && strcmp(strchr(j->was, ' '), strchr(j->sum, ' '))) {
    /* the same path set again: the element reads it again and swaps as
     * for `set` (a kernel it refuses is on the bus, in the log) */
    again = job_again(j->el, j->value);
    g_string_append_printf(report, "%s: new kernel (%s read %s again)\n",
                           p->name, GST_OBJECT_NAME(j->el), j->value);
  }
  g_hash_table_replace(p->kernel_sums, g_strdup(GST_OBJECT_NAME(j->el)),
                       g_steal_pointer(&j->sum));
  return again;
}

void cfd_pipeline_job_run(cfd_pipeline_job *j)
{
  if (j->sum_only) {
    j->sum = file_sum(j->value);
    return;
  }
  heard h = {g_thread_self(), j->el, NULL};
  g_mutex_lock(&catch_lock);
  hearers = g_slist_prepend(hearers, &h);
  g_mutex_unlock(&catch_lock);
  if (job_loads(j)) {
    j->ok = set_file(NULL, j->el, j->ps, &j->v, j->value, &j->err);
  } else if (j->ps) {
    j->ok = set_checked(NULL, j->el, j->ps, &j->v, j->value, &j->err);
  } else if (j->again) { /* noted already: the element reads it again */
    test_gate();
    /* unless a set gave it another file since the reload */
    char *f = kernel_file_of(j->el);
    if (f && !strcmp(f, j->value))
      g_object_set(j->el, "kernel-file", j->value, NULL);
    g_free(f);
    j->ok = true;
  } else {
    j->ok = swap_file(NULL, j->el, j->value, j->crossfade, &j->err);
  }
  g_mutex_lock(&catch_lock);
  hearers = g_slist_remove(hearers, &h);
  g_mutex_unlock(&catch_lock);
  g_free(h.why);
  if (j->ok && (job_loads(j) || (!j->ps && !j->again))) {
    /* the one a reload compares with */
    char *f = kernel_file_of(j->el);
    j->sum = f ? file_sum(f) : NULL;
    g_free(f);
  }
}

bool cfd_pipeline_job_finish(cfd_pipeline *p, cfd_pipeline_job *j,
                             GError **err)
{
  /* the element's warnings logged now, as for a set made at once */
  g_free(refusal_said(p, j->el));
  if (j->sum)
    g_hash_table_replace(p->kernel_sums, g_strdup(GST_OBJECT_NAME(j->el)),
                         g_steal_pointer(&j->sum));
  if (!j->ok)
    g_propagate_error(err, g_steal_pointer(&j->err));
  return j->ok;
}

void cfd_pipeline_job_free(cfd_pipeline_job *j)
{
  if (!j)
    return;
  gst_object_unref(j->el);
  if (j->ps) {
    g_param_spec_unref(j->ps);
    g_value_unset(&j->v);
  }
  g_free(j->value);
  g_clear_error(&j->err);
  g_free(j->sum);
  g_free(j->was);
  g_free(j);
}

bool cfd_pipeline_set(cfd_pipeline *p, const char *key, const char *value,
                      cfd_pipeline_job **job, GError **err)
{
  *job = NULL;
  const char *dot = strrchr(key, '.');
  GstElement *el;
  if (dot) {
    char *en = g_strndup(key, (gsize)(dot - key));
    el = GST_IS_BIN(p->pipe) ? gst_bin_get_by_name(GST_BIN(p->pipe), en) : NULL;
    if (!el)
      g_set_error(err, CFD_ERROR, 0,
                  "no element named '%s' in the "
                  "pipeline",
                  en);
    g_free(en);
    if (!el)
      return false;
    key = dot + 1;
  } else if (p->filter) {
    el = gst_object_ref(p->filter);
  } else {
    g_set_error(err, CFD_ERROR, 0,
                "the pipeline has no cudafir or cudaconvolve: give "
                "ELEMENT.%s",
                key);
    return false;
  }
  GParamSpec *ps = g_object_class_find_property(G_OBJECT_GET_CLASS(el), key);
  bool ok = false;
  if (!ps)
    g_set_error(err, CFD_ERROR, 0, "%s has no property '%s'",
                GST_OBJECT_NAME(el), key);
  else if (!(ps->flags & G_PARAM_WRITABLE) ||
           (ps->flags & G_PARAM_CONSTRUCT_ONLY))
    g_set_error(err, CFD_ERROR, 0, "%s.%s cannot be set", GST_OBJECT_NAME(el),
                key);
  else {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(ps));
    /* an array as the config file writes one (kernel = 0.25, 0.5, 0.25)
     * is GStreamer's <0.25, 0.5, 0.25> */
    char *text = G_PARAM_SPEC_VALUE_TYPE(ps) == GST_TYPE_ARRAY &&
                         *(value + strspn(value, " \t")) != '<'
                     ? g_strdup_printf("<%s>", value)
                     : g_strdup(value);
    char *range = NULL, *unshaped = NULL;
    GError *te = NULL;
    /* decimal commas told as in the config's kernel = (GStreamer read
     * "0,5" as the taps 0 and 5; QA) */
    if (!strcmp(key, "kernel") && text[0] == '<' && value[0] != '<' &&
        cfd_taps_decimal_commas(value, &te)) {
      g_set_error(err, CFD_ERROR, 0, "%s.%s: %s", GST_OBJECT_NAME(el), key,
                  te->message);
      g_error_free(te);
    } else if (!gst_value_deserialize_with_pspec(&v, text, ps))
      g_set_error(err, CFD_ERROR, 0, "%s.%s: '%s' is not a valid %s (%s)",
                  GST_OBJECT_NAME(el), key, value,
                  g_type_name(G_PARAM_SPEC_VALUE_TYPE(ps)),
                  g_param_spec_get_blurb(ps));
    else if (g_param_value_validate(ps, &v))
      g_set_error(err, CFD_ERROR, 0, "%s.%s: %s is out of range%s (%s)",
                  GST_OBJECT_NAME(el), key, value,
                  (range = range_of(ps)) ? range : "",
                  g_param_spec_get_blurb(ps));
    else if ((unshaped = conv_taps_unshaped(el, &v))) {
      GValue was = G_VALUE_INIT;
      g_value_init(&was, G_PARAM_SPEC_VALUE_TYPE(ps));
      g_object_get_property(G_OBJECT(el), ps->name, &was);
      /* as set_checked says it (an unset kernel: the preset's or file's) */
      char *kept = gst_value_array_get_size(&was) ? gst_value_serialize(&was)
                                                  : NULL;
      refused_keeping(err, el, key, value, unshaped, kept);
      g_free(kept);
      g_value_unset(&was);
    } else if (is_ours(el)) {
      /* its setter may prepare a kernel (cudaconvolve: 2.9 s for a
       * 4095 x 4095 box; QA), or load a file: in a thread */
      *job = job_new(el, ps, &v, value, -1);
      ok = true;
    } else
      ok = set_checked(p, el, ps, &v, value, err);
    g_value_unset(&v);
    g_free(text);
    g_free(range);
    g_free(unshaped);
  }
  gst_object_unref(el);
  return ok;
}

bool cfd_pipeline_swap(cfd_pipeline *p, const char *file, double crossfade,
                       cfd_pipeline_job **job, GError **err)
{
  *job = NULL;
  /* checked here: before streaming the elements keep a file that does
   * not load (to fail at start), so a swap would seem taken */
  GStatBuf st;
  if (g_stat(file, &st) != 0) {
    int e = errno;
    if (e == ENOENT)
      g_set_error(err, CFD_ERROR, 0, "%s: no such file", file);
    else
      g_set_error(err, CFD_ERROR, 0, "%s: cannot open: %s", file,
                  g_strerror(e));
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    g_set_error(err, CFD_ERROR, 0, "%s: cannot open: is a directory", file);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    g_set_error(err, CFD_ERROR, 0,
                "%s: not a regular file (a named pipe, a device or a "
                "socket): a kernel file is read more than once; save it to "
                "a file first",
                file);
    return false;
  }
  if (!p->filter) {
    g_set_error(err, CFD_ERROR, 0,
                "the pipeline has no cudafir or cudaconvolve element");
    return false;
  }
  *job = job_new(p->filter, NULL, NULL, file, crossfade);
  return true;
}

/* swap-kernel's file checked and set on el, the filter element. p NULL:
 * in a job's thread. */
static bool swap_file(cfd_pipeline *p, GstElement *el, const char *file,
                      double crossfade, GError **err)
{
  char *unloadable = kernel_file_unloadable(el, file);
  if (unloadable) {
    g_set_error(err, CFD_ERROR, 0, "%s refused %s (%s); its kernel is "
                "unchanged",
                GST_OBJECT_NAME(el), file, unloadable);
    g_free(unloadable);
    return false;
  }
  GObjectClass *oc = G_OBJECT_GET_CLASS(el);
  guint64 was_xf = 0;
  if (crossfade >= 0) {
    if (!g_object_class_find_property(oc, "crossfade")) {
      g_set_error(err, CFD_ERROR, 0,
                  "%s has no crossfade (a video kernel "
                  "changes at the next frame)",
                  GST_OBJECT_NAME(el));
      return false;
    }
    g_object_get(el, "crossfade", &was_xf, NULL);
    g_object_set(el, "crossfade", (guint64)(crossfade * GST_SECOND),
                 NULL);
  }
  g_object_set(el, "kernel-file", file, NULL);
  /* the elements keep their kernel when a file does not load: say so */
  char *now = NULL;
  g_object_get(el, "kernel-file", &now, NULL);
  bool ok = now && !strcmp(now, file);
  /* the crossfade given is this swap's (cudafir keeps the value a change
   * is made with), not the element's from now on; a refused swap changes
   * nothing */
  if (crossfade >= 0)
    g_object_set(el, "crossfade", was_xf, NULL);
  if (!ok) {
    /* why, as set answers it: the warning the element posted */
    char *why = refusal_said(p, el);
    if (why)
      g_set_error(err, CFD_ERROR, 0, "%s refused %s (%s); its kernel is "
                  "unchanged",
                  GST_OBJECT_NAME(el), file, why);
    else
      g_set_error(err, CFD_ERROR, 0,
                  "%s refused %s (its kernel is "
                  "unchanged; the daemon's log has the element's message)",
                  GST_OBJECT_NAME(el), file);
    g_free(why);
  }
  g_free(now);
  return ok;
}

#else /* no GStreamer */

bool cfd_pipeline_available(const char **why)
{
  *why = "this cudafilterd was built without GStreamer (type=pipeline)";
  return false;
}
cfd_pipeline *cfd_pipeline_start(const cfd_stream_conf *sc, GError **err)
{
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without GStreamer");
  return NULL;
}
cfd_pipeline *cfd_pipeline_start_unwatched(const cfd_stream_conf *sc,
                                           GError **err)
{
  return cfd_pipeline_start(sc, err);
}
void cfd_pipeline_watch(cfd_pipeline *p)
{
  (void)p;
}
bool cfd_pipeline_check(const cfd_stream_conf *sc, GError **err)
{
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without GStreamer");
  return false;
}
void cfd_pipeline_unwatch(cfd_pipeline *p)
{
  (void)p;
}
void cfd_pipeline_stop(cfd_pipeline *p)
{
  (void)p;
}
void cfd_pipeline_status(cfd_pipeline *p, GString *out)
{
  (void)p;
  (void)out;
}
bool cfd_pipeline_ended(cfd_pipeline *p, bool *failed)
{
  (void)p;
  *failed = false;
  return false;
}
bool cfd_pipeline_set(cfd_pipeline *p, const char *key, const char *value,
                      cfd_pipeline_job **job, GError **err)
{
  *job = NULL;
  (void)p;
  (void)key;
  (void)value;
  g_set_error(err, CFD_ERROR, 0, "built without GStreamer");
  return false;
}
void cfd_pipeline_reread(cfd_pipeline *p, GString *report, GPtrArray *jobs)
{
  (void)p;
  (void)report;
  (void)jobs;
}
bool cfd_pipeline_swap(cfd_pipeline *p, const char *file, double crossfade,
                       cfd_pipeline_job **job, GError **err)
{
  *job = NULL;
  (void)p;
  (void)file;
  (void)crossfade;
  g_set_error(err, CFD_ERROR, 0, "built without GStreamer");
  return false;
}

void cfd_pipeline_job_run(cfd_pipeline_job *j)
{
  (void)j;
}
bool cfd_pipeline_job_finish(cfd_pipeline *p, cfd_pipeline_job *j,
                             GError **err)
{
  (void)p;
  (void)j;
  g_set_error(err, CFD_ERROR, 0, "built without GStreamer");
  return false;
}
void cfd_pipeline_job_free(cfd_pipeline_job *j)
{
  (void)j;
}
uint64_t cfd_pipeline_serial(const cfd_pipeline *p)
{
  (void)p;
  return 0;
}
uint64_t cfd_pipeline_job_serial(const cfd_pipeline_job *j)
{
  (void)j;
  return 0;
}
cfd_pipeline_job *cfd_pipeline_sum_finish(cfd_pipeline *p, cfd_pipeline_job *j,
                                          GString *report)
{
  (void)p;
  (void)j;
  (void)report;
  return NULL;
}

#endif
