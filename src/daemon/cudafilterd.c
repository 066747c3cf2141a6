/* cudafilterd: runs the streams of a config file until SIGTERM: live
 * audio (PortAudio), GStreamer pipelines, and audio and video files
 * (libav).
 *
 *   cudafilterd -c FILE [-s SOCKET] [--check]
 *
 * A control socket (mode 0600) takes one command per connection, a line of
 * words (a word with spaces in "..." or '...'; in "...", \" and \\ stand
 * for " and \), and answers with lines, the last "ok" or "error: MESSAGE".
 * Clients are read and answered as their bytes come and go (each has
 * CFD_CLIENT_SECONDS for both): one that is slow holds no one else up;
 * with CFD_MAX_CLIENTS in, a new one takes the place of a silent one.
 *   status [--json] [STREAM]       a line per stream, key=value pairs
 *                                  (values with spaces in quotes); or
 *                                  one line of JSON
 *   set STREAM KEY VALUE...        a live change (audio, file:
 *                                  kernel-file, kernel, gain, crossfade,
 *                                  routing;
 *                                  video file: kernel2d, preset, size,
 *                                  sigma; pipeline: [ELEMENT.]PROPERTY)
 *   swap-kernel STREAM FILE [S]    a new kernel, crossfaded over S seconds
 *                                  (video: from the next frame, no S)
 *   restart STREAM                 stop it and start it from its section
 *                                  (a finished file stream runs again)
 *   reload                         what SIGHUP does
 * Reload reads the file again. A file that does not check out changes
 * nothing; a stream whose only changes are its kernel keys takes the new
 * kernel live (all of them fit, or nothing changes); a changed stream
 * restarts (the old one comes back if the new cannot start, but a
 * finished file stream stays finished); a stream
 * that is down is tried again with its new section; streams no longer in
 * the file stop. A finished file
 * stream runs again when its kernel or its input changes. Streams with
 * `restart` are started again when they fail (or end), and kept down,
 * tried again, when they cannot start. */
#include "cfd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#ifdef CFD_HAVE_GST
#include <gst/gst.h>
#endif

/* The longest control command taken (a `set` with a kernel of a hundred
 * thousand taps fits). */
#define CFD_MAX_COMMAND (1u << 20)

typedef struct stream {
  cfd_stream_conf *sc; /* the section it was started from */
  cfd_audio *audio;
  cfd_pipeline *pipe;
  /* restart (sc->restart): neither audio nor pipe while down */
  unsigned restarts; /* times started again */
  double ended_at;   /* monotonic s when seen ended (or a try failed); 0 */
  char *down_error;  /* why the last try failed, while down */
  bool told_end;     /* a live audio stream's end was logged */
  /* A file stream started again (`restart`, its restart policy) has its
   * input probed in a thread first (up to 5 s for a network input that
   * says nothing: the loop, and every client, would wait): the probe's
   * id while it runs (neither audio nor pipe meanwhile), else 0 */
  guint64 probing;
  /* a pipeline stream's start under way is of a section a reload has
   * changed since: once it is done, that pipeline is stopped and the
   * stream started again from its new section (two copies of one
   * pipeline would open the same device and write the same files) */
  bool start_again;
  /* its probe's thread stops what ran before (its sound or file stream,
   * or pipeline) before it starts again, or makes the daemon's own start
   * of its sound or file stream: a reload starts its new section only
   * once that start is done, as start_again says */
  bool handed;
  GPtrArray *waiting; /* client *: a `restart` answered once it is done */
  /* Live changes (set, swap-kernel), made one after another in the
   * order asked, each answered once made: the one whose kernel is read in
   * a thread (a long kernel takes seconds; the loop, and every other
   * client, would wait), and those asked meanwhile. A pipeline's: the
   * kernel file its element reads in a thread (cfd_pipeline_job) */
  struct change_job *job;
  GQueue *changes; /* queued_change * */
} stream;

typedef struct client client;
static void client_reply(client *c);
static GString *client_out(client *c);

static double now_s(void)
{
  return (double)g_get_monotonic_time() * 1e-6;
}

typedef struct daemon_state {
  char *config_path;
  char *socket_path;
  GPtrArray *streams; /* stream * */
  GSocket *listener;
  /* the socket file this daemon made (removed at exit only if it is
   * still that file: another daemon may have made its own there since) */
  dev_t socket_dev;
  ino_t socket_ino;
  GSource *accepting; /* the listener's; NULL while max_clients are in, or
                         while an accept failed (accept_retry) */
  /* an accept failed (out of descriptors: EMFILE): taken up again when a
   * client is done, or by this timer where none is in */
  GSource *accept_retry;
  bool accept_failed; /* logged once until an accept succeeds again */
  unsigned max_clients; /* CFD_MAX_CLIENTS, fewer under a low RLIMIT_NOFILE */
  GPtrArray *clients; /* client *: control connections being served */
  char *config_socket; /* the config's `socket`, to tell a reload's change */
  /* A reload reads the file in a thread (kernels decoded, a file
   * stream's input probed: up to seconds for a silent network input)
   * while the loop serves clients; the streams change back in the loop.
   * The clients who asked wait for it; a reload asked meanwhile reads
   * the file again once this one is made. */
  bool reloading, reload_again, stopping;
  GPtrArray *reload_waiting, *reload_next; /* client * */
  /* the reload made, while pipelines it starts are built in threads
   * (reloading stays set): answered once the last is done */
  struct reload_answer *answer;
  guint64 probe_ids; /* the last probe's id (stream.probing) */
  unsigned probes;   /* probes whose thread has not returned */
  unsigned loads;    /* live changes' kernels whose thread has not returned */
  unsigned stops;    /* pipelines given up, stopped in a thread not done */
  unsigned booting;  /* the daemon's own pipeline starts not done */
  GMainLoop *loop;
  int exit_code;
} daemon_state;

static void say(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *m = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  fprintf(stderr, "cudafilterd: %s\n", m);
  g_free(m);
}

/* The clients waiting on s's start get `error: why` (its probe given
 * up: the stream stopped, or a reload took it over). */
static void stream_tell_waiting(stream *s, const char *why)
{
  s->probing = 0;
  if (!s->waiting)
    return;
  for (guint i = 0; i < s->waiting->len; i++) {
    client *cl = s->waiting->pdata[i];
    g_string_append_printf(client_out(cl), "error: %s\n", why);
    client_reply(cl);
  }
  g_ptr_array_set_size(s->waiting, 0);
}

/* A kernel change asked of a stream, waiting for the one before it. */
typedef struct queued_change {
  client *cl; /* NULL: a reload's (pj), no one to answer */
  char *key;  /* NULL: swap-kernel */
  char *value;
  double crossfade;     /* swap-kernel's; < 0: the stream's */
  cfd_pipeline_job *pj; /* a reload's kernel file read again, or NULL */
} queued_change;

/* A change whose kernel is read in a thread. */
typedef struct change_job {
  daemon_state *d;
  stream *s;            /* NULL once the stream no longer wants it */
  client *cl;           /* answered when it is made (NULL: answered already) */
  cfd_change *ch;       /* an audio or file stream's */
  cfd_pipeline_job *pj; /* a pipeline's */
} change_job;

static void queued_change_free(queued_change *q)
{
  cfd_pipeline_job_free(q->pj);
  g_free(q->key);
  g_free(q->value);
  g_free(q);
}

static void answer_error(client *cl, const char *why)
{
  if (!cl) /* a reload's change: the reload was answered */
    return;
  g_string_append_printf(client_out(cl), "error: %s\n", why);
  client_reply(cl);
}

/* The kernel changes asked of s and not made are given up (the stream
 * stops, starts again, or a reload gives it its file's kernel): their
 * clients get `error: why`; a kernel being read is dropped once read. */
static void stream_drop_changes(stream *s, const char *why)
{
  if (s->job) {
    answer_error(s->job->cl, why);
    s->job->cl = NULL;
    s->job->s = NULL;
    s->job = NULL;
  }
  if (!s->changes)
    return;
  queued_change *q;
  while ((q = g_queue_pop_head(s->changes))) {
    answer_error(q->cl, why);
    queued_change_free(q);
  }
}

static void stream_stop(stream *s);

/* s stopped, its pipeline (unwatched) added to stops, its sound or file
 * stream to audio_stops: stopped in a thread (stop_later), its EOS (its
 * queued sound played, its output file finished) waited for there. */
static void stream_stop_into(stream *s, GPtrArray *stops,
                             GPtrArray *audio_stops)
{
  if (s && s->pipe) {
    cfd_pipeline_unwatch(s->pipe);
    g_ptr_array_add(stops, g_steal_pointer(&s->pipe));
  }
  if (s && s->audio)
    g_ptr_array_add(audio_stops, g_steal_pointer(&s->audio));
  stream_stop(s);
}

static void stream_stop(stream *s)
{
  if (!s)
    return;
  stream_tell_waiting(s, "the stream was stopped before it started");
  stream_drop_changes(s, "the stream was stopped before the change was "
                         "made (its kernel read, or its element's setter "
                         "done); the change is not made");
  if (s->changes)
    g_queue_free(s->changes);
  if (s->waiting)
    g_ptr_array_free(s->waiting, TRUE);
  cfd_audio_stop(s->audio);
  cfd_pipeline_stop(s->pipe);
  cfd_stream_conf_free(s->sc);
  g_free(s->down_error);
  g_free(s);
}

/* How a file stream's input is known when the stream starts: probed at
 * the start (PROBE_NOW), in a thread just before (PROBED: a restart's),
 * or by the config's load just before (LOAD_PROBED: the daemon's start,
 * a reload's sections). The last starts without probing again, which
 * held the loop as long again for a network input slow to answer; an
 * input that load could not read (taken as the running stream's,
 * stale_input saying why) is not tried again in the loop either. */
typedef enum start_probe { PROBE_NOW, PROBED, LOAD_PROBED } start_probe;

static cfd_audio *start_audio(const cfd_stream_conf *sc, start_probe how,
                              GError **err)
{
  if (sc->type != CFD_FILE || how == PROBE_NOW)
    return cfd_audio_start(sc, err);
  if (how == LOAD_PROBED && sc->stale_input) {
    g_set_error(err, CFD_ERROR, 0, "its input cannot be read now: %s",
                sc->stale_input);
    return NULL;
  }
  return cfd_audio_start_probed(sc, err);
}

/* Start sc (ownership passes on success), its input known as `how`
 * says. A stream with a restart policy that cannot start is kept down,
 * and tried again. */
static stream *stream_start(cfd_stream_conf *sc, start_probe how,
                            GError **err)
{
  stream *s = g_new0(stream, 1);
  GError *e = NULL;
  if (sc->type != CFD_PIPELINE)
    s->audio = start_audio(sc, how, &e);
  else
    s->pipe = cfd_pipeline_start(sc, &e);
  if (!s->audio && !s->pipe && sc->restart != CFD_RESTART_NO) {
    say("stream %s cannot start: %s; trying every %g s", sc->name, e->message,
        sc->restart_delay);
    s->down_error = g_strdup(e->message);
    s->ended_at = now_s();
    g_error_free(e);
  } else if (!s->audio && !s->pipe) {
    g_propagate_prefixed_error(err, e, "stream %s: ", sc->name);
    g_free(s);
    return NULL;
  }
  s->sc = sc;
  return s;
}

/* ---- restart ---- */

/* Whether s has ended in a way its restart policy starts again. */
static bool wants_restart(stream *s)
{
  if (s->sc->restart == CFD_RESTART_NO)
    return false;
  if (!s->audio && !s->pipe)
    return true; /* down: a try failed */
  bool failed = false;
  bool ended = s->audio ? cfd_audio_ended_how(s->audio, &failed)
                        : cfd_pipeline_ended(s->pipe, &failed);
  return ended && (failed || s->sc->restart == CFD_RESTART_ALWAYS);
}

/* What of s runs is taken from it, for the caller to stop (in a thread:
 * a pipeline's EOS is waited for up to 2 s, a sound stream's queued
 * output played, a file stream's output finished with what it read):
 * its pipeline returned unwatched, its sound or file stream in *audio,
 * one that has ended too (its device closed, its thread joined and its
 * engine freed there: in the loop, every client waited for them). */
static cfd_pipeline *stream_halt(stream *s, cfd_audio **audio)
{
  stream_drop_changes(s, "the stream was started again before the change "
                         "was made (its kernel read, or its element's "
                         "setter done); the change is not made");
  *audio = g_steal_pointer(&s->audio);
  cfd_pipeline_unwatch(s->pipe);
  return g_steal_pointer(&s->pipe);
}

/* Start s from its section (a file stream's input known as `how`
 * says); s is halted. On failure it is down: why is kept for status, and
 * the time for the next try (with a restart policy). */
static bool stream_begin(stream *s, start_probe how, GError **err)
{
  GError *e = NULL;
  if (s->sc->type == CFD_PIPELINE)
    s->pipe = cfd_pipeline_start(s->sc, &e);
  else
    s->audio = start_audio(s->sc, how, &e);
  s->ended_at = 0;
  s->told_end = false;
  if (s->audio || s->pipe) {
    g_clear_pointer(&s->down_error, g_free);
    return true;
  }
  g_free(s->down_error);
  s->down_error = g_strdup(e->message);
  s->ended_at = now_s();
  g_propagate_error(err, e);
  return false;
}

static bool stream_try_later(daemon_state *d, stream *s, bool asked,
                             GError **err);

/* How a start that waited for its probe went, in the log (and to the
 * clients that asked). */
static void stream_started(stream *s, bool asked, bool was_down,
                           GError *e);

typedef struct probe_job {
  daemon_state *d;
  guint64 id;
  cfd_stream_conf *sc; /* a copy: the stream's may change meanwhile */
  bool asked;          /* by `restart` (else by the restart policy) */
  bool was_down;
  bool boot;           /* the daemon's own start of the stream */
  /* a sound or file stream of the daemon's own start, started in the
   * thread from sc (a copy with its kernels: its engine is made there,
   * an FFT plan, a CUDA context; its device or files opened), or why sc
   * could not be copied */
  cfd_audio *audio;
  char *no_copy;
  bool skip;           /* not built: the daemon stops (a reload's start) */
  cfd_pipeline *pipe;  /* a pipeline stream's, started in the thread */
  /* what ran before (unwatched): stopped in the thread first, so that
   * the start finds its device (or files) let go */
  cfd_pipeline *old_pipe;
  cfd_audio *old_audio;
  /* nothing to probe (a sound stream, or a reload's section the load
   * probed): the start is made in the loop once the old is stopped */
  bool no_probe;
  /* A reload's start (of a new or changed section, or one that was
   * down): `said` its report's word; fallback the old section, started
   * again should the new one fail (a pipeline's in the thread too,
   * from its copy: fell_back then, and first why the new one failed) */
  const char *said;
  char *said_own; /* where said is made for it */
  cfd_stream_conf *fallback, *fallback_copy;
  bool fell_back;
  char *first;
} probe_job;

static void probe_job_free(probe_job *j)
{
  cfd_pipeline_stop(j->old_pipe); /* never: the thread stopped it */
  cfd_audio_stop(j->old_audio);   /* nor this */
  g_free(j->said_own);
  cfd_pipeline_stop(j->pipe); /* never: probe_done gave it up */
  cfd_audio_stop(j->audio);   /* nor this */
  g_free(j->no_copy);
  cfd_stream_conf_free(j->sc);
  cfd_stream_conf_free(j->fallback);
  cfd_stream_conf_free(j->fallback_copy);
  g_free(j->first);
  g_free(j);
}

/* A pipeline stream's section as its start in a thread needs it. */
static cfd_stream_conf *pipeline_conf_copy(const cfd_stream_conf *sc)
{
  cfd_stream_conf *c = g_new0(cfd_stream_conf, 1);
  c->name = g_strdup(sc->name);
  c->type = sc->type;
  c->pipeline = g_strdup(sc->pipeline);
  c->filter = g_strdup(sc->filter);
  return c;
}

/* In the probe's thread: nothing of the daemon's is touched here. A
 * pipeline stream's pipeline is built and started here (its elements
 * load their kernel files: seconds for a big one), unwatched. */
static void probe_read(GTask *t, gpointer src, gpointer data,
                       GCancellable *cancel)
{
  (void)src;
  (void)cancel;
  probe_job *j = data;
  GError *e = NULL;
  cfd_pipeline_stop(g_steal_pointer(&j->old_pipe));
  cfd_audio_stop(g_steal_pointer(&j->old_audio));
  if (j->skip) {
    g_task_return_new_error(t, CFD_ERROR, 0, "the daemon is stopping");
    return;
  }
  if (j->no_copy) {
    g_task_return_new_error(t, CFD_ERROR, 0, "%s", j->no_copy);
    return;
  }
  bool ok = j->no_probe ? true
            : j->boot && j->sc->type != CFD_PIPELINE
                ? (j->audio = start_audio(j->sc, LOAD_PROBED, &e)) != NULL
            : j->sc->type == CFD_PIPELINE
                ? (j->pipe = cfd_pipeline_start_unwatched(j->sc, &e)) != NULL
                : cfd_file_input_unchanged(j->sc, &e);
  if (!ok && j->fallback_copy) { /* a reload's: the old section again */
    j->first = g_strdup(e->message);
    g_clear_error(&e);
    ok = j->fell_back =
        (j->pipe = cfd_pipeline_start_unwatched(j->fallback_copy, &e)) != NULL;
  }
  if (ok)
    g_task_return_boolean(t, TRUE);
  else
    g_task_return_error(t, e);
}

static void reload_started(daemon_state *d, stream *s, probe_job *j, bool ok,
                           GError *e);

/* Pipelines given up (unwatched), stopped in threads, one each: each
 * waits up to 2 s for its EOS to reach its sinks (the loop, and every
 * client, waited; one after another, as long again for each). Sound and
 * file streams too: Pa_StopStream plays what is queued (the output
 * latency, or more), a file stream's output is finished. done, if
 * not NULL, is called back in the loop once they are all stopped; the
 * daemon's own stop waits for them (d->stops). */
typedef struct stop_batch {
  daemon_state *d;
  unsigned left;
  void (*done)(daemon_state *d);
} stop_batch;

typedef struct stop_job {
  stop_batch *b;
  cfd_pipeline *pipe; /* or */
  cfd_audio *audio;
} stop_job;

static void stop_job_free(stop_job *j)
{
  cfd_pipeline_stop(j->pipe); /* none: stopped in the thread */
  cfd_audio_stop(j->audio);
  g_free(j);
}

static void stop_read(GTask *t, gpointer src, gpointer data,
                      GCancellable *cancel)
{
  (void)src;
  (void)cancel;
  stop_job *j = data;
  cfd_pipeline_stop(g_steal_pointer(&j->pipe)); /* nothing of the daemon's */
  cfd_audio_stop(g_steal_pointer(&j->audio));
  g_task_return_boolean(t, TRUE);
}

static void stop_done(GObject *src, GAsyncResult *res, gpointer user)
{
  (void)src;
  (void)user;
  stop_batch *b = ((stop_job *)g_task_get_task_data(G_TASK(res)))->b;
  b->d->stops--;
  if (--b->left)
    return;
  if (b->done)
    b->done(b->d);
  g_free(b);
}

/* pipes and audios (NULL: none; at least one of them all) taken */
static void stop_later(daemon_state *d, GPtrArray *pipes, GPtrArray *audios,
                       void (*done)(daemon_state *d))
{
  stop_batch *b = g_new0(stop_batch, 1);
  b->d = d;
  guint np = pipes->len, n = np + (audios ? audios->len : 0);
  b->left = n;
  b->done = done;
  for (guint i = 0; i < n; i++) {
    stop_job *j = g_new0(stop_job, 1);
    j->b = b;
    if (i < np)
      j->pipe = pipes->pdata[i];
    else
      j->audio = audios->pdata[i - np];
    d->stops++;
    GTask *t = g_task_new(NULL, NULL, stop_done, NULL);
    g_task_set_task_data(t, j, (GDestroyNotify)stop_job_free);
    g_task_run_in_thread(t, stop_read);
    g_object_unref(t);
  }
  g_ptr_array_free(pipes, TRUE);
  if (audios)
    g_ptr_array_free(audios, TRUE);
}

static void probe_made(daemon_state *d, probe_job *j, bool ok, GError *e);

/* The daemon's own start done (its pipelines built in threads): said
 * in the log, unless it stops (or exits, a stream not started). */
static void boot_said(daemon_state *d)
{
  if (d->stopping || d->exit_code)
    return;
  unsigned down = 0, again = 0;
  for (guint i = 0; i < d->streams->len; i++) {
    stream *s = d->streams->pdata[i];
    /* started again from a section a reload changed meanwhile: not down */
    again += s->probing != 0;
    down += !s->audio && !s->pipe && !s->probing;
  }
  unsigned up = d->streams->len - down - again;
  char *more = again ? g_strdup_printf(", %u starting again (a reload "
                                       "changed %s)",
                                       again, again == 1 ? "it" : "them")
                     : g_strdup("");
  say("%u stream%s running%s%s; control socket %s", up, up == 1 ? "" : "s",
      more, down ? " (and some down, tried again)" : "", d->socket_path);
  g_free(more);
}

/* Back in the loop: the stream (if it is still the one probed for)
 * starts, or is down with the probe's error; a pipeline built that no
 * stream took (it stopped, or a reload took it over, meanwhile) is
 * stopped in a thread. */
static void probe_done(GObject *src, GAsyncResult *res, gpointer user)
{
  (void)src;
  probe_job *j = g_task_get_task_data(G_TASK(res));
  daemon_state *d = j->d;
  d->probes--;
  GError *e = NULL;
  bool ok = g_task_propagate_boolean(G_TASK(res), &e);
  probe_made(d, j, ok, e);
  /* a daemon that exits for a stream its start could not start leaves
   * the outputs of the file streams it started as they were */
  if (j->audio && d->exit_code)
    cfd_audio_discard(g_steal_pointer(&j->audio));
  if (j->pipe || j->audio) {
    GPtrArray *pipes = g_ptr_array_new(), *audios = g_ptr_array_new();
    if (j->pipe)
      g_ptr_array_add(pipes, g_steal_pointer(&j->pipe));
    if (j->audio)
      g_ptr_array_add(audios, g_steal_pointer(&j->audio));
    stop_later(d, pipes, audios, NULL);
  }
  if (j->boot && !--d->booting)
    boot_said(d);
}

static void probe_made(daemon_state *d, probe_job *j, bool ok, GError *e)
{
  stream *s = NULL;
  for (guint i = 0; !s && i < d->streams->len; i++) {
    stream *t = d->streams->pdata[i];
    if (t->probing == j->id)
      s = t;
  }
  if (j->said) { /* a reload's start */
    reload_started(d, s, j, ok, e);
    g_clear_error(&e);
    return;
  }
  if (!s) { /* stopped, or taken over by a reload, meanwhile */
    g_clear_error(&e);
    return;
  }
  s->probing = 0;
  s->handed = false;
  if (d->stopping) {
    g_clear_error(&e);
    stream_tell_waiting(s, "the daemon is stopping");
    return;
  }
  if (j->boot && !s->start_again) { /* the daemon's own start */
    if (ok && j->audio) {
      s->audio = g_steal_pointer(&j->audio);
    } else if (ok) {
      s->pipe = g_steal_pointer(&j->pipe);
      cfd_pipeline_watch(s->pipe);
    } else if (s->sc->restart != CFD_RESTART_NO) {
      say("stream %s cannot start: %s; trying every %g s", s->sc->name,
          e->message, s->sc->restart_delay);
      s->down_error = g_strdup(e->message);
      s->ended_at = now_s();
    } else {
      /* as when it was built before the loop ran: the daemon exits 1,
       * the outputs of the file streams it started as they were */
      say("stream %s: %s", s->sc->name, e->message);
      if (!d->exit_code)
        d->exit_code = 1;
      g_main_loop_quit(d->loop);
    }
    /* a `restart` asked meanwhile is answered with this start */
    if (s->waiting && s->waiting->len)
      stream_started(s, true, false, ok ? NULL : e);
    g_clear_error(&e);
    return;
  }
  if (s->start_again) {
    /* that pipeline is stopped before the next starts (in its thread,
     * stream_try_later) */
    s->start_again = false;
    s->pipe = g_steal_pointer(&j->pipe);
    s->audio = g_steal_pointer(&j->audio);
    g_clear_error(&e);
    /* a reload's: told as a restart's, not counted as the policy's */
    ok = stream_try_later(d, s, true, &e);
    if (ok || !s->probing)
      stream_started(s, true, j->was_down, ok ? NULL : e);
    g_clear_error(&e);
    return;
  }
  if (ok && j->pipe) {
    s->pipe = g_steal_pointer(&j->pipe);
    cfd_pipeline_watch(s->pipe);
    g_clear_pointer(&s->down_error, g_free);
  } else if (ok) {
    ok = stream_begin(s, PROBED, &e);
  } else {
    g_free(s->down_error);
    s->down_error = g_strdup(e->message);
    s->ended_at = now_s();
  }
  stream_started(s, j->asked, j->was_down, ok ? NULL : e);
  g_clear_error(&e);
}

/* Start s again from its section, whatever runs stopped first; a file
 * stream's input is probed in a thread, and the start made when it is
 * done (probe_done), a pipeline stream's pipeline built and started in a
 * thread (its elements load their kernels there): false then, s->probing
 * set. Else (a sound stream that was down) started at once. What ran is
 * stopped in that thread before (a pipeline's EOS waited for up to 2 s,
 * a sound stream's queued output played, a file stream's output
 * finished: the loop, and every client, waited), and before the start
 * (a device, its files let go); a sound stream is started in the loop
 * once it is done. */
static bool stream_try_later(daemon_state *d, stream *s, bool asked,
                             GError **err)
{
  bool was_down = s->down_error != NULL;
  cfd_audio *old_audio;
  cfd_pipeline *old = stream_halt(s, &old_audio);
  if (s->sc->type == CFD_AUDIO && !old && !old_audio)
    return stream_begin(s, PROBE_NOW, err);
  probe_job *j = g_new0(probe_job, 1);
  j->d = d;
  j->id = ++d->probe_ids;
  j->old_pipe = old;
  j->old_audio = old_audio;
  j->no_probe = s->sc->type == CFD_AUDIO;
  j->sc = s->sc->type == CFD_PIPELINE ? pipeline_conf_copy(s->sc)
                                      : cfd_stream_conf_copy(s->sc);
  j->asked = asked;
  j->was_down = was_down;
  /* a finished file stream (its output written) is stopped there too,
   * but a reload may take the stream over meanwhile, as it starts a
   * finished file stream's new section beside its stop */
  s->handed = old || (old_audio && !(s->sc->type == CFD_FILE &&
                                     cfd_audio_ended(old_audio)));
  s->probing = j->id;
  s->ended_at = 0;
  s->told_end = false;
  d->probes++;
  GTask *t = g_task_new(NULL, NULL, probe_done, NULL);
  g_task_set_task_data(t, j, (GDestroyNotify)probe_job_free);
  g_task_run_in_thread(t, probe_read);
  g_object_unref(t);
  return false;
}

/* A stream of the daemon's own start (s, from s->sc), started in a
 * thread once the loop runs, s starting meanwhile: a pipeline built and
 * set playing as a restart's is (its elements load their kernel files
 * there, seconds for a big one), a sound or file stream's engine made
 * there (its FFT plans, a CUDA context: seconds for a long kernel) and
 * its device or files opened. Started before the loop ran, one after
 * another, no client was answered and no other stream ran meanwhile. */
static void boot_start_later(daemon_state *d, stream *s)
{
  probe_job *j = g_new0(probe_job, 1);
  j->d = d;
  j->id = ++d->probe_ids;
  if (s->sc->type == CFD_PIPELINE) {
    j->sc = pipeline_conf_copy(s->sc);
  } else {
    /* the thread's own: a reload meanwhile replaces the stream's */
    const cfd_stream_conf *sc = s->sc;
    j->sc = cfd_stream_conf_copy(sc);
    if ((sc->kernel && cf_kernel_copy(sc->kernel, &j->sc->kernel) != CF_OK) ||
        (sc->kernel2d &&
         cf_kernel2d_copy(sc->kernel2d, &j->sc->kernel2d) != CF_OK))
      j->no_copy = g_strdup_printf("its kernel cannot be copied for its "
                                   "start: %s",
                                   cf_last_error());
    s->handed = true; /* a reload waits for this start */
  }
  j->boot = true;
  s->probing = j->id;
  d->probes++;
  d->booting++;
  GTask *t = g_task_new(NULL, NULL, probe_done, NULL);
  g_task_set_task_data(t, j, (GDestroyNotify)probe_job_free);
  g_task_run_in_thread(t, probe_read);
  g_object_unref(t);
}

/* Every 50 ms: streams that ended (or could not start again) are started
 * again restart-delay seconds later. */
static gboolean on_tick(gpointer user)
{
  daemon_state *d = user;
  if (d->stopping)
    return G_SOURCE_CONTINUE; /* waiting for a reload's thread to stop */
  GPtrArray *streams = d->streams;
  double t = now_s();
  for (guint i = 0; i < streams->len; i++) {
    stream *s = streams->pdata[i];
    /* a live sound's end, logged as a file stream's is (its `duration`
     * reached, or its device stopping, left no line) */
    bool failed;
    if (s->audio && s->sc->type == CFD_AUDIO && !s->told_end &&
        cfd_audio_ended_how(s->audio, &failed)) {
      s->told_end = true;
      if (failed)
        say("stream %s stopped: its device stopped (gone or unplugged?)",
            s->sc->name);
      else
        say("stream %s finished: its duration (%g s) is reached",
            s->sc->name, s->sc->duration);
    }
    if (s->probing)
      continue; /* being started again */
    if (!wants_restart(s)) {
      s->ended_at = 0;
      continue;
    }
    if (s->ended_at == 0)
      s->ended_at = t;
    if (t - s->ended_at < s->sc->restart_delay)
      continue;
    bool was_down = s->down_error != NULL;
    GError *e = NULL;
    bool ok = stream_try_later(d, s, false, &e);
    if (ok || !s->probing)
      stream_started(s, false, was_down, ok ? NULL : e);
    g_clear_error(&e);
  }
  return G_SOURCE_CONTINUE;
}

static void stream_started(stream *s, bool asked, bool was_down, GError *e)
{
  if (asked) {
    if (e)
      say("stream %s cannot start (restart), it is down: %s", s->sc->name,
          e->message);
    else
      say("stream %s started again (restart)", s->sc->name);
  } else if (!e) {
    s->restarts++;
    say("stream %s started again (%u)", s->sc->name, s->restarts);
  } else if (!was_down) {
    /* said once a time down, not at every try */
    say("stream %s cannot start again: %s; trying every %g s", s->sc->name,
        e->message, s->sc->restart_delay);
  }
  if (!s->waiting)
    return;
  for (guint i = 0; i < s->waiting->len; i++) {
    client *cl = s->waiting->pdata[i];
    if (e)
      g_string_append_printf(client_out(cl),
                             "error: %s cannot start, it is down: %s\n",
                             s->sc->name, e->message);
    else
      g_string_append_printf(client_out(cl), "%s: started again\nok\n",
                             s->sc->name);
    client_reply(cl);
  }
  g_ptr_array_set_size(s->waiting, 0);
}

static stream *find_stream(daemon_state *d, const char *name)
{
  for (guint i = 0; i < d->streams->len; i++) {
    stream *s = d->streams->pdata[i];
    if (!strcmp(s->sc->name, name))
      return s;
  }
  return NULL;
}

/* Steal stream conf i of c (c keeps a NULL there). */
static cfd_stream_conf *take_conf(cfd_config *c, guint i)
{
  cfd_stream_conf *sc = c->streams->pdata[i];
  c->streams->pdata[i] = NULL;
  return sc;
}

/* The same kernel sets, taps and all (a reload reads the files again: an
 * edited impulse response at the same path is a new kernel). */
static bool same_kernel2d(const cf_kernel2d *a, const cf_kernel2d *b)
{
  if (!a || !b)
    return a == b;
  unsigned t = cf_kernel2d_frames(a), h = cf_kernel2d_height(a),
           w = cf_kernel2d_width(a);
  return t == cf_kernel2d_frames(b) && h == cf_kernel2d_height(b) &&
         w == cf_kernel2d_width(b) &&
         !memcmp(cf_kernel2d_taps(a), cf_kernel2d_taps(b),
                 (size_t)t * h * w * sizeof(float));
}

static bool same_kernel(const cf_kernel *a, const cf_kernel *b)
{
  if (!a || !b)
    return a == b;
  if (cf_kernel_routing(a) != cf_kernel_routing(b) ||
      cf_kernel_outputs(a) != cf_kernel_outputs(b) ||
      cf_kernel_inputs(a) != cf_kernel_inputs(b) ||
      cf_kernel_count(a) != cf_kernel_count(b))
    return false;
  for (unsigned i = 0; i < cf_kernel_count(a); i++) {
    size_t la, lb;
    const float *ta = cf_kernel_taps(a, i, &la),
                *tb = cf_kernel_taps(b, i, &lb);
    if (la != lb || (la && memcmp(ta, tb, la * sizeof *ta)))
      return false;
  }
  return true;
}

/* ---- reload ---- */

/* How a reload treats a stream the new file still has. */
typedef enum retune_how {
  RELOAD_START,  /* new, or changed beyond its kernel keys: (re)started */
  RELOAD_RETUNE, /* running, only its kernel keys changed (maybe none) */
  RELOAD_DOWN    /* down: its new section is tried now */
} retune_how;

static retune_how reload_how(const stream *old, const cfd_stream_conf *sc,
                             bool *swap)
{
  *swap = old && (!same_kernel(old->sc->kernel, sc->kernel) ||
                  !same_kernel2d(old->sc->kernel2d, sc->kernel2d));
  if (!old)
    return RELOAD_START;
  if (!old->audio && !old->pipe)
    return RELOAD_DOWN;
  /* a file stream that has ended runs again when its kernel changes */
  bool rerun = sc->type == CFD_FILE && old->audio &&
               cfd_audio_ended(old->audio) && *swap;
  return !rerun && old->sc->type == sc->type &&
                 !strcmp(old->sc->shape, sc->shape)
             ? RELOAD_RETUNE
             : RELOAD_START;
}

static void change_again(daemon_state *d, stream *s, cfd_pipeline_job *pj);

/* A reload made, answered (and logged) once the pipelines it starts in
 * threads are running, or have failed (d->answer meanwhile). */
typedef struct reload_answer {
  GPtrArray *waiting; /* client * */
  GString *report;
  bool ok;
  GError *err; /* the reload's own: refused, or some streams failed */
  unsigned pending;
  /* the pipelines it stops (of streams removed or restarted), stopped
   * in threads (their EOS waited for up to 2 s each), and only then the
   * pipeline starts it has to make (GTask *: a start finds its device,
   * or its files, let go, a renamed section's too) */
  GPtrArray *stops, *starts;
  GPtrArray *audio_stops; /* cfd_audio *: stopped with stops */
} reload_answer;

static void reload_finish(daemon_state *d);

/* A pipeline stream a reload starts (s, from s->sc; halted, or new):
 * built and set playing in a thread (probe_read), s starting
 * meanwhile; reload_started makes the rest. Another kind (what ran
 * there stopped in a thread: its start waits for that) is started by
 * reload_started, in the loop. old_sc (taken; NULL: none)
 * is started again should the new section fail, as at once it was;
 * said is the report's word for a start, was_down for a stream that was
 * down (still down if it fails). */
static probe_job *reload_start_later(daemon_state *d, stream *s,
                                     cfd_stream_conf *old_sc, const char *said,
                                     bool was_down)
{
  probe_job *j = g_new0(probe_job, 1);
  j->d = d;
  j->id = ++d->probe_ids;
  if (s->sc->type == CFD_PIPELINE) {
    j->sc = pipeline_conf_copy(s->sc);
  } else { /* started in the loop once the reload's stops are done */
    j->sc = cfd_stream_conf_copy(s->sc);
    j->no_probe = true;
  }
  j->said = said;
  j->was_down = was_down;
  /* with a restart policy a failed start is down, tried again */
  if (old_sc && s->sc->restart == CFD_RESTART_NO) {
    j->fallback = old_sc;
    if (old_sc->type == CFD_PIPELINE && !j->no_probe)
      j->fallback_copy = pipeline_conf_copy(old_sc);
  } else {
    cfd_stream_conf_free(old_sc);
  }
  s->probing = j->id;
  s->ended_at = 0;
  s->told_end = false;
  d->probes++;
  d->answer->pending++;
  GTask *t = g_task_new(NULL, NULL, probe_done, NULL);
  g_task_set_task_data(t, j, (GDestroyNotify)probe_job_free);
  g_ptr_array_add(d->answer->starts, t); /* reload_stopped runs it */
  return j;
}

/* A reload's pipelines stopped (its stops), or none to stop: its
 * pipeline starts are made. */
static void reload_stopped(daemon_state *d)
{
  reload_answer *ra = d->answer;
  for (guint i = 0; i < ra->starts->len; i++) {
    GTask *t = ra->starts->pdata[i];
    /* the daemon stopping meanwhile: not built, only answered so */
    if (d->stopping)
      ((probe_job *)g_task_get_task_data(t))->skip = true;
    g_task_run_in_thread(t, probe_read);
    g_object_unref(t);
  }
  g_ptr_array_set_size(ra->starts, 0);
}

/* Back in the loop, a reload's start done (probe_done): what the
 * synchronous start made (the report's lines, the old section again, or
 * down) made now; the reload answered once the last is done. */
static void reload_started(daemon_state *d, stream *s, probe_job *j, bool ok,
                           GError *e)
{
  reload_answer *ra = d->answer;
  GString *report = ra->report;
  const char *name = j->sc->name;
  if (!s) { /* none can stop it meanwhile: reloads wait for this one */
    g_string_append_printf(report, "%s: stopped before it started\n", name);
    ra->ok = false;
  } else if (d->stopping) {
    stream_tell_waiting(s, "the daemon is stopping");
    g_string_append_printf(report,
                           "%s: not started: the daemon is "
                           "stopping\n",
                           name);
    ra->ok = false;
  } else {
    s->probing = 0;
    GError *own = NULL;
    if (ok && j->no_probe) { /* a sound or file stream: started here */
      ok = stream_begin(s, LOAD_PROBED, &own);
      if (!ok)
        e = own;
    }
    if (ok && j->no_probe) {
      g_clear_pointer(&s->down_error, g_free);
      g_string_append_printf(report, "%s: %s\n", name, j->said);
    } else if (ok) {
      s->pipe = g_steal_pointer(&j->pipe);
      cfd_pipeline_watch(s->pipe);
      g_clear_pointer(&s->down_error, g_free);
      if (j->fell_back) {
        ra->ok = false;
        g_string_append_printf(report,
                               "stream %s: %s\n%s: the old section runs "
                               "again\n",
                               name, j->first, name);
        cfd_stream_conf_free(s->sc);
        s->sc = g_steal_pointer(&j->fallback);
      } else {
        g_string_append_printf(report, "%s: %s\n", name, j->said);
      }
    } else if (j->was_down || s->sc->restart != CFD_RESTART_NO) {
      g_free(s->down_error);
      s->down_error = g_strdup(e->message);
      s->ended_at = now_s();
      if (j->was_down) {
        g_string_append_printf(report, "%s: still down: %s\n", name,
                               e->message);
      } else {
        say("stream %s cannot start: %s; trying every %g s", name, e->message,
            s->sc->restart_delay);
        g_string_append_printf(report, "%s: %s\n", name, j->said);
      }
    } else {
      ra->ok = false;
      char *why = g_strdup_printf("stream %s: %s", name,
                                  j->first ? j->first : e->message);
      g_string_append_printf(report, "%s\n", why);
      bool back = false;
      if (j->fallback_copy) { /* tried in the thread */
        g_string_append_printf(report,
                               "%s: the old section cannot start again: "
                               "%s\n",
                               name, e->message);
      } else if (j->fallback) { /* not a pipeline: here, as it was */
        cfd_stream_conf *tried = s->sc;
        s->sc = j->fallback;
        GError *e2 = NULL;
        back = stream_begin(s, PROBE_NOW, &e2); /* probed long ago */
        g_string_append_printf(report, "%s: %s%s\n", name,
                               back ? "the old section runs again"
                                    : "the old section cannot start again: ",
                               back ? "" : e2->message);
        g_clear_error(&e2);
        if (back) {
          j->fallback = NULL;
          cfd_stream_conf_free(tried);
        } else {
          s->sc = tried;
        }
      }
      if (!back) {
        /* kept, down with its new section: status shows why; `restart`,
         * a later reload (or its restart policy) tries it again */
        g_free(s->down_error);
        s->down_error = g_steal_pointer(&why);
        s->ended_at = now_s();
        say("stream %s is down: %s", name, s->down_error);
        g_string_append_printf(report,
                               "%s: down (status shows why; "
                               "restart tries it again)\n",
                               name);
      }
      g_free(why);
    }
    g_clear_error(&own);
    /* a `restart` asked meanwhile is answered with this start */
    if (s->waiting && s->waiting->len) {
      GError *de = NULL;
      if (!s->audio && !s->pipe)
        g_set_error(&de, CFD_ERROR, 0, "%s",
                    s->down_error ? s->down_error : "?");
      stream_started(s, true, j->was_down, de);
      g_clear_error(&de);
    }
  }
  if (!--ra->pending)
    reload_finish(d);
}

/* A reload's checksum of a pipeline's kernel file (pj), made in a
 * thread; the reload answered once it is done. */
typedef struct sum_job {
  daemon_state *d;
  char *name; /* the stream's */
  cfd_pipeline_job *pj;
} sum_job;

static void sum_job_free(sum_job *j)
{
  cfd_pipeline_job_free(j->pj);
  g_free(j->name);
  g_free(j);
}

static void sum_read(GTask *t, gpointer src, gpointer data,
                     GCancellable *cancel)
{
  (void)src;
  (void)cancel;
  sum_job *j = data;
  cfd_pipeline_job_run(j->pj); /* nothing of the daemon's is touched */
  g_task_return_boolean(t, TRUE);
}

/* Back in the loop: the file noted, and read again by its element where
 * its bytes changed, if the stream still runs that pipeline (a restart
 * meanwhile started another, which read its files itself). */
static void sum_done(GObject *src, GAsyncResult *res, gpointer user)
{
  (void)src;
  (void)user;
  sum_job *j = g_task_get_task_data(G_TASK(res));
  daemon_state *d = j->d;
  reload_answer *ra = d->answer;
  stream *s = find_stream(d, j->name);
  if (!d->stopping && s && s->pipe &&
      cfd_pipeline_serial(s->pipe) == cfd_pipeline_job_serial(j->pj)) {
    cfd_pipeline_job *again =
        cfd_pipeline_sum_finish(s->pipe, j->pj, ra->report);
    if (again)
      change_again(d, s, again);
  }
  if (!--ra->pending)
    reload_finish(d);
}

static void reload_sum_later(daemon_state *d, const char *name,
                             cfd_pipeline_job *pj)
{
  sum_job *j = g_new0(sum_job, 1);
  j->d = d;
  j->name = g_strdup(name);
  j->pj = pj;
  d->answer->pending++;
  GTask *t = g_task_new(NULL, NULL, sum_done, NULL);
  g_task_set_task_data(t, j, (GDestroyNotify)sum_job_free);
  g_task_run_in_thread(t, sum_read);
  g_object_unref(t);
}

/* The file as read (c), or why it could not be (load_err, taken). */
static bool reload(daemon_state *d, cfd_config *c, GError *load_err,
                   GString *report, GError **err)
{
  if (!c) {
    g_propagate_prefixed_error(err, load_err,
                               "reload refused, the running streams stay: ");
    return false;
  }
  /* every kernel a running stream is to take must fit it, or nothing
   * changes; one that makes another count of output channels than the
   * stream writes cannot be swapped in: that stream is restarted with its
   * new section, as for a change beyond its kernel (name -> why) */
  GHashTable *regrown =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 0; i < c->streams->len; i++) {
    cfd_stream_conf *sc = c->streams->pdata[i];
    stream *old = find_stream(d, sc->name);
    bool swap;
    GError *e = NULL;
    if (reload_how(old, sc, &swap) != RELOAD_RETUNE || !swap ||
        sc->type == CFD_PIPELINE)
      continue;
    if (!cfd_audio_outputs_fit(old->audio, sc, &e)) {
      g_hash_table_insert(regrown, g_strdup(sc->name), g_strdup(e->message));
      g_clear_error(&e);
    } else if (!cfd_audio_kernel_fits(old->audio, sc, &e)) {
      g_set_error(err, CFD_ERROR, 0,
                  "reload refused, the running streams stay: stream %s "
                  "cannot take its new kernel: %s",
                  sc->name, e->message);
      g_error_free(e);
      g_hash_table_destroy(regrown);
      cfd_config_free(c);
      return false;
    }
  }
  /* -s on the command line wins over the file's socket: only a change of
   * the file's is news */
  if (g_strcmp0(c->socket, d->config_socket))
    g_string_append_printf(report,
                           "socket: a new path takes a restart; "
                           "still %s\n",
                           d->socket_path);
  g_free(d->config_socket);
  d->config_socket = g_strdup(c->socket);
  GPtrArray *next = g_ptr_array_new();
  bool ok = true;
  for (guint i = 0; i < c->streams->len; i++) {
    cfd_stream_conf *sc = c->streams->pdata[i];
    stream *old = find_stream(d, sc->name);
    if (old) /* taken over or replaced below; not stopped as removed */
      g_ptr_array_remove(d->streams, old);
    if (old && old->probing && (old->sc->type == CFD_PIPELINE || old->handed)) {
      /* its pipeline being built (or the daemon's own start of its
       * sound or file stream made): the same section goes on starting;
       * another is started once that start is done (not beside it) */
      bool same = sc->type == old->sc->type &&
                  !strcmp(old->sc->shape, sc->shape) &&
                  (sc->type == CFD_PIPELINE ||
                   (same_kernel(old->sc->kernel, sc->kernel) &&
                    same_kernel2d(old->sc->kernel2d, sc->kernel2d) &&
                    old->sc->crossfade == sc->crossfade));
      old->start_again = old->start_again || !same;
      cfd_stream_conf_free(old->sc);
      old->sc = take_conf(c, i);
      g_string_append_printf(report,
                             same ? "%s: starting (as it was)\n"
                                  : "%s: restarts with its new section "
                                    "once its start under way is done\n",
                             old->sc->name);
      g_ptr_array_add(next, old);
      continue;
    }
    if (old && old->probing) /* down until then: tried now, as down */
      stream_tell_waiting(old, "a reload took the stream over before it "
                               "started; status shows how it is");
    bool swap;
    retune_how how = reload_how(old, sc, &swap);
    const char *regrow = g_hash_table_lookup(regrown, sc->name);
    if (how == RELOAD_RETUNE && regrow) {
      if (sc->stale_input) {
        /* restarted, it could not read its input: it runs on as it was */
        g_string_append_printf(report,
                               "%s: keeps its old section: its new kernel "
                               "takes a restart (%s), and its input cannot "
                               "be read now (%s)\n",
                               sc->name, regrow, sc->stale_input);
        ok = false;
        g_ptr_array_add(next, old);
        continue;
      }
      how = RELOAD_START;
    }
    if (how == RELOAD_DOWN) {
      /* its new section, tried now; with restart again later */
      cfd_stream_conf_free(old->sc);
      old->sc = take_conf(c, i);
      if (old->sc->type == CFD_PIPELINE) {
        reload_start_later(d, old, NULL, "restarted (it was down)", true);
        g_ptr_array_add(next, old);
        continue;
      }
      GError *e = NULL;
      if (stream_begin(old, LOAD_PROBED, &e))
        g_string_append_printf(report, "%s: restarted (it was down)\n",
                               old->sc->name);
      else {
        g_string_append_printf(report, "%s: still down: %s\n", old->sc->name,
                               e->message);
        g_error_free(e);
      }
      g_ptr_array_add(next, old);
      continue;
    }
    if (how == RELOAD_RETUNE) {
      if (sc->stale_input)
        g_string_append_printf(report,
                               "%s: its input cannot be read now (%s); the "
                               "stream stays as it was\n",
                               sc->name, sc->stale_input);
      if (sc->type != CFD_PIPELINE) {
        GError *e = NULL;
        /* the file's kernel, read after them, wins over live changes
         * still being read */
        if (swap)
          stream_drop_changes(old, "a reload gave the stream its file's "
                                   "new kernel before this one was read; "
                                   "the change is not made");
        if (cfd_audio_retune(old->audio, old->sc, sc, swap, &e)) {
          if (swap)
            g_string_append_printf(report, "%s: new kernel\n", sc->name);
          cfd_stream_conf_free(old->sc);
          old->sc = take_conf(c, i);
        } else {
          g_string_append_printf(report,
                                 "%s: kernel refused (%s); the old "
                                 "one stays\n",
                                 sc->name, e->message);
          g_error_free(e);
          ok = false;
        }
      } else if (old->pipe) {
        /* its kernel files, edited in place, are a change too: one whose
         * stamp changed is checksummed in a thread, and where its bytes
         * did, its element reads it again in a thread, after the
         * stream's changes asked before */
        GPtrArray *jobs = g_ptr_array_new();
        cfd_pipeline_reread(old->pipe, report, jobs);
        for (guint k = 0; k < jobs->len; k++)
          reload_sum_later(d, old->sc->name, jobs->pdata[k]);
        g_ptr_array_free(jobs, TRUE);
      }
      g_ptr_array_add(next, old);
      continue;
    }
    /* new, or changed beyond its kernel: restart. The old section is
     * kept to start again should the new one fail; a finished file
     * stream is kept as it is (its job done: run again, it would write
     * its output again, which an `overwrite = false` that failed the new
     * section had asked to keep) */
    cfd_stream_conf *old_sc = NULL;
    if (old && old->audio && sc->type == CFD_FILE &&
        old->sc->type == CFD_FILE && cfd_audio_ended(old->audio)) {
      GError *e = NULL;
      stream *s = stream_start(take_conf(c, i), LOAD_PROBED, &e);
      if (!s) {
        ok = false;
        g_string_append_printf(report,
                               "%s\n%s: stays finished with its old "
                               "section\n",
                               e->message, old->sc->name);
        g_clear_error(&e);
        cfd_stream_conf_free(sc); /* taken from c: not freed with it */
        g_ptr_array_add(next, old);
        continue;
      }
      /* in a thread, as a running one's stop (its device closed, its
       * thread joined, its engine freed: the loop waited for them) */
      stream_stop_into(old, d->answer->stops, d->answer->audio_stops);
      g_string_append_printf(report, "%s: restarted\n", s->sc->name);
      g_ptr_array_add(next, s);
      continue;
    }
    bool ran = old && (old->audio || old->pipe);
    if (old) {
      old_sc = old->sc;
      old->sc = NULL;
      /* the start waits for the old stream's stop (in a thread: a
       * pipeline's EOS, a sound stream's queued output, a file stream's
       * output finished) */
      stream_stop_into(old, d->answer->stops, d->answer->audio_stops);
    }
    if (sc->type == CFD_PIPELINE || ran) {
      /* a pipeline built and set playing in a thread (its elements load
       * their kernels there: seconds for a big one), another kind
       * started in the loop once what ran is stopped; the reload
       * answered once it is done */
      stream *s = g_new0(stream, 1);
      s->sc = take_conf(c, i);
      probe_job *j = reload_start_later(d, s, old_sc,
                                        old ? "restarted" : "started", false);
      if (old && regrow)
        j->said = j->said_own = g_strdup_printf("restarted (%s)", regrow);
      g_ptr_array_add(next, s);
      continue;
    }
    GError *e = NULL;
    stream *s = stream_start(take_conf(c, i), LOAD_PROBED, &e);
    if (!s) {
      ok = false;
      g_string_append_printf(report, "%s\n", e->message);
      char *why = g_strdup(e->message);
      g_clear_error(&e);
      if (old_sc) {
        const char *name = sc->name;
        s = stream_start(old_sc, PROBE_NOW, &e); /* probed long ago */
        g_string_append_printf(report, "%s: %s%s\n", name,
                               s ? "the old section runs again"
                                 : "the old section cannot start again: ",
                               s ? "" : e->message);
        g_clear_error(&e);
        if (!s)
          cfd_stream_conf_free(old_sc);
      }
      if (!s) {
        /* kept, down with its new section: status shows why; `restart`,
         * a later reload (or its restart policy) tries it again */
        s = g_new0(stream, 1);
        s->sc = sc;
        s->down_error = why;
        s->ended_at = now_s();
        why = NULL;
        say("stream %s is down: %s", sc->name, s->down_error);
        g_string_append_printf(report, "%s: down (status shows why; "
                               "restart tries it again)\n", sc->name);
      } else
        cfd_stream_conf_free(sc); /* taken from c: not freed with it */
      g_free(why);
      g_ptr_array_add(next, s);
      continue;
    }
    cfd_stream_conf_free(old_sc);
    if (old && regrow)
      g_string_append_printf(report, "%s: restarted (%s)\n", s->sc->name,
                             regrow);
    else
      g_string_append_printf(report, "%s: %s\n", s->sc->name,
                             old ? "restarted" : "started");
    g_ptr_array_add(next, s);
  }
  g_hash_table_destroy(regrown);
  /* what is left ran from sections the file no longer has */
  for (guint i = 0; i < d->streams->len; i++) {
    stream *s = d->streams->pdata[i];
    g_string_append_printf(report, "%s: stopped (not in the file)\n",
                           s->sc->name);
    stream_stop_into(s, d->answer->stops, d->answer->audio_stops);
  }
  g_ptr_array_free(d->streams, TRUE);
  d->streams = next;
  cfd_config_free(c);
  if (!ok)
    g_set_error(err, CFD_ERROR, 0,
                "reload: some streams did not take the "
                "new config (above)");
  return ok;
}

/* ---- control commands ---- */

static bool cmd_status(daemon_state *d, char **argv, GString *out, GError **err)
{
  bool json = argv[1] && !strcmp(argv[1], "--json");
  if (json)
    argv++;
  if (argv[1] && argv[2]) {
    g_set_error(err, CFD_ERROR, 0, "usage: status [--json] [STREAM]");
    return false;
  }
  GString *lines = json ? g_string_new(NULL) : out;
  bool any = false;
  for (guint i = 0; i < d->streams->len; i++) {
    stream *s = d->streams->pdata[i];
    if (argv[1] && strcmp(argv[1], s->sc->name))
      continue;
    any = true;
    g_string_append_printf(lines, "%s type=%s ", s->sc->name,
                           s->sc->type == CFD_AUDIO  ? "audio"
                           : s->sc->type == CFD_FILE ? "file"
                                                     : "pipeline");
    if (s->audio)
      cfd_audio_status(s->audio, lines);
    else if (s->pipe)
      cfd_pipeline_status(s->pipe, lines);
    else if (s->probing)
      g_string_append(lines, "state=starting");
    else {
      char *why = cfd_quoted(s->down_error ? s->down_error : "?");
      g_string_append_printf(lines, "state=down error=%s", why);
      g_free(why);
    }
    if (s->sc->restart != CFD_RESTART_NO)
      g_string_append_printf(lines, " restarts=%u", s->restarts);
    g_string_append_c(lines, '\n');
  }
  if (argv[1] && !any) {
    g_set_error(err, CFD_ERROR, 0, "no stream named '%s'", argv[1]);
    if (json)
      g_string_free(lines, TRUE);
    return false;
  }
  if (json) {
    char *j = cfd_status_json(lines->str);
    g_string_append_printf(out, "%s\n", j);
    g_free(j);
    g_string_free(lines, TRUE);
  }
  return true;
}

static stream *need_stream(daemon_state *d, const char *name, GError **err)
{
  stream *s = name ? find_stream(d, name) : NULL;
  if (!s)
    g_set_error(err, CFD_ERROR, 0, "no stream named '%s'", name ? name : "");
  else if (s->probing) {
    g_set_error(err, CFD_ERROR, 0,
                "stream %s is starting (%s); try again once status says it "
                "runs", name,
                s->sc->type == CFD_PIPELINE
                    ? "its pipeline being built, its kernels loaded"
                    : "its input being probed, or its engine made and its "
                      "device or files opened");
    return NULL;
  } else if (!s->audio && !s->pipe) {
    g_set_error(err, CFD_ERROR, 0,
                "stream %s is down (%s); it is started again every %g s", name,
                s->down_error ? s->down_error : "?", s->sc->restart_delay);
    return NULL;
  }
  return s;
}

static void change_done(GObject *src, GAsyncResult *res, gpointer user);

/* In the change's thread: its kernel read (cf_kernel_load is
 * thread-safe). Nothing of the daemon's is touched here. */
static void change_read(GTask *t, gpointer src, gpointer data,
                        GCancellable *cancel)
{
  (void)src;
  (void)data;
  (void)cancel;
  change_job *j = g_task_get_task_data(t);
  if (j->pj)
    cfd_pipeline_job_run(j->pj);
  else
    cfd_change_build(j->ch);
  g_task_return_boolean(t, TRUE);
}

static void change_job_free(change_job *j)
{
  cfd_change_free(j->ch);
  cfd_pipeline_job_free(j->pj);
  g_free(j);
}

/* A change of s (running), asked by cl (key NULL: swap-kernel; pj: a
 * reload's, whose job is given, cl NULL): its value checked, and its
 * kernel read in a thread (*later set: cl is answered once it is made);
 * a change with no kernel to read is made at once. */
static bool change_start(daemon_state *d, stream *s, client *cl,
                         const char *key, const char *value, double crossfade,
                         cfd_pipeline_job *pj, bool *later, GError **err)
{
  if (d->stopping) {
    cfd_pipeline_job_free(pj);
    g_set_error(err, CFD_ERROR, 0, "the daemon is stopping: no change");
    return false;
  }
  cfd_change *ch = NULL;
  if (pj) {
    /* given */
  } else if (s->pipe) {
    bool ok = key ? cfd_pipeline_set(s->pipe, key, value, &pj, err)
                  : cfd_pipeline_swap(s->pipe, value, crossfade, &pj, err);
    if (!pj)
      return ok;
  } else {
    if (!cfd_audio_change(s->audio, key, value, crossfade, &ch, err))
      return false;
    if (!ch)
      return true;
  }
  change_job *j = g_new0(change_job, 1);
  j->d = d;
  j->s = s;
  j->cl = cl;
  j->ch = ch;
  j->pj = pj;
  s->job = j;
  d->loads++;
  GTask *t = g_task_new(NULL, NULL, change_done, NULL);
  g_task_set_task_data(t, j, (GDestroyNotify)change_job_free);
  g_task_run_in_thread(t, change_read);
  g_object_unref(t);
  *later = true;
  return false;
}

/* The changes asked of s while one was read, in their order, until one
 * has a kernel to read. */
static void change_next(daemon_state *d, stream *s)
{
  queued_change *q;
  while (!s->job && s->changes && (q = g_queue_pop_head(s->changes))) {
    GError *e = NULL;
    bool later = false;
    cfd_pipeline_job *pj = g_steal_pointer(&q->pj);
    bool ok = change_start(d, s, q->cl, q->key, q->value, q->crossfade, pj,
                           &later, &e);
    if (!later) {
      if (!q->cl) {
        g_clear_error(&e); /* a reload's, not made: the daemon stops */
      } else if (ok) {
        g_string_append(client_out(q->cl), "ok\n");
        client_reply(q->cl);
      } else {
        answer_error(q->cl, e->message);
        g_error_free(e);
      }
    }
    queued_change_free(q);
  }
}

/* Back in the loop: the kernel (or why it could not be read) goes to
 * the stream, if it still wants it; its client is answered, and the
 * stream's next change begins. */
static void change_done(GObject *src, GAsyncResult *res, gpointer user)
{
  (void)src;
  (void)user;
  change_job *j = g_task_get_task_data(G_TASK(res));
  daemon_state *d = j->d;
  d->loads--;
  stream *s = j->s;
  if (!s) /* given up, its client answered */
    return;
  s->job = NULL;
  if (d->stopping) {
    stream_drop_changes(s, "the daemon is stopping: the change is not made");
    answer_error(j->cl, "the daemon is stopping: the change is not made");
    return;
  }
  GError *e = NULL;
  bool ok;
  if (j->pj) {
    ok = cfd_pipeline_job_finish(s->pipe, j->pj, &e);
  } else {
    cfd_change *ch = j->ch;
    j->ch = NULL;
    ok = cfd_audio_change_apply(s->audio, ch, &e);
  }
  if (ok && j->cl) {
    g_string_append(client_out(j->cl), "ok\n");
    client_reply(j->cl);
  } else if (!ok) {
    answer_error(j->cl, e->message);
    g_error_free(e);
  }
  change_next(d, s);
}

/* A kernel change of s: made after those asked before it (*later: cl
 * waits), or begun now. */
static bool change_ask(daemon_state *d, stream *s, client *cl, const char *key,
                       const char *value, double crossfade, bool *later,
                       GError **err)
{
  if (!s->job && (!s->changes || g_queue_is_empty(s->changes)))
    return change_start(d, s, cl, key, value, crossfade, NULL, later, err);
  queued_change *q = g_new0(queued_change, 1);
  q->cl = cl;
  q->key = g_strdup(key);
  q->value = g_strdup(value);
  q->crossfade = crossfade;
  if (!s->changes)
    s->changes = g_queue_new();
  g_queue_push_tail(s->changes, q);
  *later = true;
  return false;
}

/* A reload's kernel file read again by a pipeline's element (pj): after
 * the changes asked before, no client answered. */
static void change_again(daemon_state *d, stream *s, cfd_pipeline_job *pj)
{
  if (!s->job && (!s->changes || g_queue_is_empty(s->changes))) {
    bool later = false;
    GError *e = NULL;
    change_start(d, s, NULL, NULL, NULL, -1, pj, &later, &e);
    g_clear_error(&e); /* none: the job is given */
    return;
  }
  queued_change *q = g_new0(queued_change, 1);
  q->pj = pj;
  q->crossfade = -1;
  if (!s->changes)
    s->changes = g_queue_new();
  g_queue_push_tail(s->changes, q);
}

static bool cmd_set(daemon_state *d, client *cl, char **argv, const char *rest,
                    bool *later, GError **err)
{
  if (!argv[1] || !argv[2] || !rest) {
    g_set_error(err, CFD_ERROR, 0, "usage: set STREAM KEY VALUE");
    return false;
  }
  stream *s = need_stream(d, argv[1], err);
  if (!s)
    return false;
  return change_ask(d, s, cl, argv[2], rest, -1, later, err);
}

static bool cmd_swap(daemon_state *d, client *cl, char **argv, bool *later,
                     GError **err)
{
  if (!argv[1] || !argv[2] || (argv[3] && argv[4])) {
    g_set_error(err, CFD_ERROR, 0,
                "usage: swap-kernel STREAM FILE [CROSSFADE_SECONDS]");
    return false;
  }
  stream *s = need_stream(d, argv[1], err);
  if (!s)
    return false;
  double xf = -1;
  if (argv[3]) {
    /* decimal, as in the config (QA: 0x1 was 1 s, '' was 0) */
    if (!cfd_parse_decimal(argv[3], 0, 60, &xf)) {
      g_set_error(err, CFD_ERROR, 0,
                  "crossfade '%s' is not a number of "
                  "seconds in 0..60%s",
                  argv[3], cfd_comma_hint(argv[3]));
      return false;
    }
  }
  if (!s->pipe && s->sc->video && xf >= 0) {
    g_set_error(err, CFD_ERROR, 0,
                "a video kernel changes at the next frame: no crossfade");
    return false;
  }
  return change_ask(d, s, cl, NULL, argv[2], xf, later, err);
}

/* restart STREAM: stop it (a file stream finishes its output with what
 * it read) and start it again from its section; a stream that cannot
 * start stays down (with restart set it is tried again as usual). A file
 * stream's answer waits for the probe of its input (cl waits: false,
 * *later set), as does one asked while such a start is under way. */
static bool cmd_restart(daemon_state *d, client *cl, char **argv,
                        GString *out, bool *later, GError **err)
{
  if (!argv[1] || argv[2]) {
    g_set_error(err, CFD_ERROR, 0, "usage: restart STREAM");
    return false;
  }
  if (d->stopping) {
    g_set_error(err, CFD_ERROR, 0, "the daemon is stopping: no restart");
    return false;
  }
  stream *s = find_stream(d, argv[1]);
  if (!s) {
    g_set_error(err, CFD_ERROR, 0, "no stream named '%s'", argv[1]);
    return false;
  }
  GError *e = NULL;
  bool was_down = s->down_error != NULL;
  if (s->probing || !stream_try_later(d, s, true, &e)) {
    if (s->probing) {
      if (!s->waiting)
        s->waiting = g_ptr_array_new();
      g_ptr_array_add(s->waiting, cl);
      *later = true;
      return false;
    }
    stream_started(s, true, was_down, e);
    g_set_error(err, CFD_ERROR, 0, "%s cannot start, it is down: %s",
                s->sc->name, e->message);
    g_error_free(e);
    return false;
  }
  stream_started(s, true, was_down, NULL);
  g_string_append_printf(out, "%s: started again\n", s->sc->name);
  return true;
}

/* The words of a command line: separated by spaces or tabs; "..." (in
 * which \" and \\ stand for " and \) and '...' hold spaces. NULL (err
 * set) for a quote left open. */
static char **split_words(const char *line, GError **err)
{
  GPtrArray *words = g_ptr_array_new_with_free_func(g_free);
  const char *p = line;
  for (;;) {
    p += strspn(p, " \t");
    if (!*p)
      break;
    GString *w = g_string_new(NULL);
    while (*p && *p != ' ' && *p != '\t') {
      if (*p != '"' && *p != '\'') {
        g_string_append_c(w, *p++);
        continue;
      }
      char q = *p++;
      while (*p && *p != q) {
        if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
          p++;
        g_string_append_c(w, *p++);
      }
      if (!*p) {
        g_set_error(err, CFD_ERROR, 0, "a %s quote is not closed",
                    q == '"' ? "double" : "single");
        g_string_free(w, TRUE);
        g_ptr_array_free(words, TRUE);
        return NULL;
      }
      p++;
    }
    g_ptr_array_add(words, g_string_free(w, FALSE));
  }
  g_ptr_array_add(words, NULL);
  return (char **)g_ptr_array_free(words, FALSE);
}

static void reload_request(daemon_state *d, client *cl);

/* One request line from cl; the answer in out, the last line "ok" or
 * "error:". False where the answer comes later (a reload, a restart's
 * probe, a kernel being read). */
static bool handle(daemon_state *d, client *cl, const char *line,
                   GString *out)
{
  GError *err = NULL;
  char **argv = split_words(line, &err);
  guint n = argv ? g_strv_length(argv) : 0;
  bool ok = false;
  if (!argv) {
    /* err says which quote */
  } else if (n == 0) {
    g_set_error(&err, CFD_ERROR, 0, "empty command");
  } else if (!strcmp(argv[0], "status")) {
    ok = cmd_status(d, argv, out, &err);
  } else if (!strcmp(argv[0], "set") || !strcmp(argv[0], "swap-kernel")) {
    /* the value is the words after KEY: `set s kernel 1, 2, 3` */
    char *value = n >= 4 ? g_strjoinv(" ", argv + 3) : NULL;
    bool later = false;
    ok = !strcmp(argv[0], "set") ? cmd_set(d, cl, argv, value, &later, &err)
                                 : cmd_swap(d, cl, argv, &later, &err);
    g_free(value);
    if (later) { /* a kernel being read: answered once it is taken */
      g_strfreev(argv);
      return false;
    }
  } else if (!strcmp(argv[0], "reload") && n == 1 && !d->stopping) {
    reload_request(d, cl);
    g_strfreev(argv);
    return false;
  } else if (!strcmp(argv[0], "reload")) {
    g_set_error(&err, CFD_ERROR, 0,
                n == 1 ? "the daemon is stopping: no reload"
                       : "usage: reload");
  } else if (!strcmp(argv[0], "restart")) {
    bool later = false;
    ok = cmd_restart(d, cl, argv, out, &later, &err);
    if (later) {
      g_strfreev(argv);
      return false;
    }
  } else {
    g_set_error(&err, CFD_ERROR, 0,
                "unknown command '%s' (status, set, "
                "swap-kernel, restart, reload)",
                argv[0]);
  }
  g_strfreev(argv);
  if (ok) {
    g_string_append(out, "ok\n");
  } else {
    g_string_append_printf(out, "error: %s\n", err->message);
    g_error_free(err);
  }
  return true;
}

/* ---- control clients ---- */

/* A client has this long to send its line and take the answer. */
#define CFD_CLIENT_SECONDS 5
/* Clients served at once; more wait in the listen queue. */
#define CFD_MAX_CLIENTS 64
/* A client that has sent nothing for this long gives its place to a new
 * one when CFD_MAX_CLIENTS are in. */
#define CFD_CLIENT_IDLE_S 0.1

static void accept_more(daemon_state *d);

struct client {
  daemon_state *d;
  GSocket *sock;
  GSource *io;      /* readable (the line), then writable (the answer) */
  GSource *timer;   /* CFD_CLIENT_SECONDS to send the line, and again to
                       take the answer (a command may take long) */
  GString *in, *out;
  gsize sent;
  double since; /* now_s() at its connection */
  /* WAITING: for a reload (a restart's probe, a kernel), neither watched nor
   * timed */
  enum { READING, WAITING, ANSWERING, DRAINING } state;
  bool too_long; /* once answered, the rest of the line is read (closed
                    with bytes unread, the client would see a reset, not
                    the answer); so are bytes sent after the newline */
};

/* Detach and release *src (if any); *src becomes NULL. */
static void drop_source(GSource **src)
{
  if (*src) {
    g_source_destroy(*src);
    g_source_unref(*src);
    *src = NULL;
  }
}

static void client_free(client *c)
{
  drop_source(&c->io);
  drop_source(&c->timer);
  g_socket_close(c->sock, NULL);
  g_object_unref(c->sock);
  g_string_free(c->in, TRUE);
  g_string_free(c->out, TRUE);
  daemon_state *d = c->d;
  g_ptr_array_remove_fast(d->clients, c);
  g_free(c);
  if (!d->accepting && d->listener)
    accept_more(d);
}

static gboolean on_client_io(GSocket *sock, GIOCondition cond, gpointer user);
static gboolean on_client_timeout(gpointer user);

/* The client's time from now on. */
static void client_timer(client *c)
{
  drop_source(&c->timer);
  c->timer = g_timeout_source_new_seconds(CFD_CLIENT_SECONDS);
  g_source_set_callback(c->timer, on_client_timeout, c, NULL);
  g_source_attach(c->timer, NULL);
}

static void client_watch(client *c, GIOCondition cond)
{
  drop_source(&c->io);
  c->io = g_socket_create_source(c->sock, cond | G_IO_HUP | G_IO_ERR, NULL);
  g_source_set_callback(c->io, (GSourceFunc)(void (*)(void))on_client_io, c,
                        NULL);
  g_source_attach(c->io, NULL);
}

static GString *client_out(client *c)
{
  return c->out;
}

/* c->out holds the answer: writing it. */
static void client_reply(client *c)
{
  c->state = ANSWERING;
  client_watch(c, G_IO_OUT);
  client_timer(c);
}

/* The line is in (or the client stopped sending, or it is too long):
 * the answer, then writing it. */
static void client_answer(client *c)
{
  char *nl = memchr(c->in->str, '\n', c->in->len);
  bool too_long = !nl && c->in->len >= CFD_MAX_COMMAND;
  if (too_long) {
    g_string_append_printf(c->out,
                           "error: a command is at most %u bytes (a kernel "
                           "that long: kernel-file)\n",
                           CFD_MAX_COMMAND);
    c->too_long = true;
  } else if (!nl) {
    g_string_append(c->out, "error: a command is one line, ended by a "
                            "newline\n");
  } else if (memchr(c->in->str, 0, (size_t)(nl - c->in->str))) {
    /* it ended the command there: "status\0r" was all streams' status */
    g_string_append(c->out, "error: a command holds a NUL byte\n");
  } else {
    /* bytes after the line: read to the end once answered (QA: the
     * client saw a reset, not the answer) */
    c->too_long = nl + 1 < c->in->str + c->in->len;
    *nl = 0;
    /* the command ends at the newline, less a CR before it */
    size_t len = strlen(c->in->str);
    if (len && c->in->str[len - 1] == '\r')
      c->in->str[len - 1] = 0;
    if (!handle(c->d, c, c->in->str, c->out)) {
      c->state = WAITING; /* client_reply, once the answer is known */
      drop_source(&c->io);
      drop_source(&c->timer);
      return;
    }
  }
  client_reply(c);
}

static gboolean on_client_io(GSocket *sock, GIOCondition cond, gpointer user)
{
  client *c = user;
  (void)cond;
  char buf[4096];
  GError *e = NULL;
  if (c->state != ANSWERING) {
    gssize r = g_socket_receive(sock, buf, sizeof buf, NULL, &e);
    if (r < 0 && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
      g_error_free(e);
      return G_SOURCE_CONTINUE;
    }
    g_clear_error(&e);
    if (c->state == DRAINING) { /* until the client closes */
      if (r > 0)
        return G_SOURCE_CONTINUE;
      client_free(c);
      return G_SOURCE_REMOVE;
    }
    if (r > 0) {
      gsize at = c->in->len;
      g_string_append_len(c->in, buf, r);
      if (!memchr(c->in->str + at, '\n', (gsize)r) &&
          c->in->len < CFD_MAX_COMMAND)
        return G_SOURCE_CONTINUE;
    }
    client_answer(c);
    return G_SOURCE_REMOVE; /* client_watch made the writable source */
  }
  while (c->sent < c->out->len) {
    gssize w = g_socket_send(sock, c->out->str + c->sent,
                             c->out->len - c->sent, NULL, &e);
    if (w < 0 && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
      g_error_free(e);
      return G_SOURCE_CONTINUE;
    }
    g_clear_error(&e);
    if (w <= 0)
      break; /* the client went away */
    c->sent += (gsize)w;
  }
  if ((c->too_long || g_socket_get_available_bytes(sock) > 0) &&
      c->sent == c->out->len) {
    g_socket_shutdown(sock, FALSE, TRUE, NULL);
    c->state = DRAINING;
    client_watch(c, G_IO_IN);
    return G_SOURCE_REMOVE;
  }
  client_free(c);
  return G_SOURCE_REMOVE;
}

/* Too slow: a line not in yet is answered as a line without its
 * newline; an answer not taken is given up. */
static gboolean on_client_timeout(gpointer user)
{
  client *c = user;
  g_source_unref(c->timer);
  c->timer = NULL;
  if (c->state == READING) {
    client_answer(c);
    /* one try to hand over the error, then closed */
    g_socket_send(c->sock, c->out->str, c->out->len, NULL, NULL);
  }
  client_free(c);
  return G_SOURCE_REMOVE;
}

static gboolean accept_again(gpointer user)
{
  daemon_state *d = user;
  g_source_unref(d->accept_retry);
  d->accept_retry = NULL;
  accept_more(d);
  return G_SOURCE_REMOVE;
}

/* Accepting paused for ms (or until a client is done). */
static void accept_pause(daemon_state *d, guint ms)
{
  drop_source(&d->accepting);
  drop_source(&d->accept_retry);
  d->accept_retry = g_timeout_source_new(ms);
  g_source_set_callback(d->accept_retry, accept_again, d, NULL);
  g_source_attach(d->accept_retry, NULL);
}

/* The client that has sent nothing for longest, at least
 * CFD_CLIENT_IDLE_S since it connected; NULL where there is none. */
static client *idlest_client(daemon_state *d)
{
  double now = now_s();
  client *best = NULL;
  for (guint i = 0; i < d->clients->len; i++) {
    client *c = d->clients->pdata[i];
    if (c->state == READING && c->in->len == 0 &&
        now - c->since >= CFD_CLIENT_IDLE_S &&
        g_socket_get_available_bytes(c->sock) <= 0 &&
        (!best || c->since < best->since))
      best = c;
  }
  return best;
}

/* Every client waiting on the listener, each taken as it comes. With
 * max_clients in, a new one takes the place of one that has sent
 * nothing for CFD_CLIENT_IDLE_S (QA: 200 clients connected and silent
 * held `cudafilterctl status` 10 s, 5 s a round of 64); where none is
 * that idle the rest wait in the listen queue. */
static gboolean on_accept(GSocket *listener, GIOCondition cond, gpointer user)
{
  daemon_state *d = user;
  (void)cond;
  for (;;) {
    /* chosen before the accept: a client that sends meanwhile is no
     * longer idle, and none might be left to make room */
    client *old = NULL;
    if (d->clients->len >= d->max_clients && !(old = idlest_client(d))) {
      accept_pause(d, 50); /* until one is done, or one is that idle */
      return G_SOURCE_REMOVE;
    }
    GError *e = NULL;
    GSocket *s = g_socket_accept(listener, NULL, &e);
    if (!s && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
      g_error_free(e);
      return G_SOURCE_CONTINUE;
    }
    if (!s) {
      /* out of descriptors (EMFILE) or another failure: the connection
       * stays queued, the listener readable, and taken again at once
       * this was a loop at full CPU writing the log (QA: 230,000 lines in
       * 5 s at ulimit -n 40). Accepting pauses until a client is done,
       * or for a second; logged once. */
      if (!d->accept_failed)
        say("control socket: %s (clients wait until one is done; "
            "RLIMIT_NOFILE too low?)",
            e->message);
      d->accept_failed = true;
      g_error_free(e);
      accept_pause(d, 1000);
      return G_SOURCE_REMOVE;
    }
    d->accept_failed = false;
    if (old) {
      static const char gone[] = "error: too many clients at once: this "
                                 "one, silent longest, is closed\n";
      g_socket_send(old->sock, gone, sizeof gone - 1, NULL, NULL);
      client_free(old);
    }
    g_socket_set_blocking(s, FALSE);
    client *c = g_new0(client, 1);
    c->d = d;
    c->sock = s;
    c->since = now_s();
    c->in = g_string_new(NULL);
    c->out = g_string_new(NULL);
    g_ptr_array_add(d->clients, c);
    client_watch(c, G_IO_IN);
    client_timer(c);
  }
}

static void accept_more(daemon_state *d)
{
  drop_source(&d->accept_retry);
  d->accepting = g_socket_create_source(d->listener, G_IO_IN, NULL);
  g_source_set_callback(d->accepting, (GSourceFunc)(void (*)(void))on_accept,
                        d, NULL);
  g_source_attach(d->accepting, NULL);
}

/* Whether a socket can be bound at path: its length. */
/* Whether the socket can be made at path as far as the config (or -s)
 * says: a path short enough, not a file of another kind, in a folder
 * that is there (the /tmp fallback's is made, and must be private).
 * Checked with --check and before the start, which exits 2 on it, as on
 * any config error (QA: a regular file, a folder or a missing folder as
 * the socket passed --check and the start exited 1, which the unit
 * restarts for ever). */
static bool socket_fits(const char *path, bool make, GError **err)
{
  if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    g_set_error(err, CFD_ERROR, 0,
                "socket path too long (%zu bytes, at most %zu): %s",
                strlen(path),
                sizeof(((struct sockaddr_un *)0)->sun_path) - 1, path);
    return false;
  }
  if (!cfd_private_folder(path, make, err))
    return false;
  struct stat st;
  if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
    g_set_error(err, CFD_ERROR, 0, "socket %s exists and is not a socket",
                path);
    return false;
  }
  g_autofree char *folder = g_path_get_dirname(path);
  g_autofree char *fallback = cfd_fallback_socket();
  /* (the fallback's folder is made at the start) */
  if ((make || strcmp(path, fallback)) &&
      !g_file_test(folder, G_FILE_TEST_IS_DIR)) {
    g_set_error(err, CFD_ERROR, 0, "socket %s: its folder %s is not there",
                path, folder);
    return false;
  }
  /* QA: a folder the daemon may not write in passed --check, and the
   * start exited 1 ("Error binding to address: Permission denied"),
   * which the unit restarts for ever (access() also says EROFS) */
  if (g_file_test(folder, G_FILE_TEST_IS_DIR) &&
      access(folder, W_OK | X_OK) != 0) {
    g_set_error(err, CFD_ERROR, 0,
                "socket %s: no file can be made in its folder %s: %s", path,
                folder, g_strerror(errno));
    return false;
  }
  return true;
}

/* Why no file can be made in output's folder (a temporary one is made
 * and removed: permissions alone do not tell, as root or in /proc), or
 * NULL where one can, or output is a URL. */
static char *folder_unwritable(const char *output)
{
  if (strstr(output, "://") || g_str_has_prefix(output, "pipe:"))
    return NULL;
  /* (QA: --check said ok, the stream failed at start) */
  if (g_file_test(output, G_FILE_TEST_IS_DIR))
    return g_strdup_printf("%s is a folder", output);
  g_autofree char *folder = g_path_get_dirname(output);
  g_autofree char *probe =
      g_build_filename(folder, ".cudafilterd-check-XXXXXX", NULL);
  int fd = g_mkstemp(probe);
  if (fd < 0)
    return g_strdup_printf("no file can be made in its folder %s: %s",
                           folder, g_strerror(errno));
  close(fd);
  unlink(probe);
  return NULL;
}

/* Bind the control socket, mode 0600. An existing path is taken over only
 * when no daemon answers there. */
static bool listen_socket(daemon_state *d, GError **err)
{
  /* (socket_fits has seen the path) */
  GSocketAddress *addr = g_unix_socket_address_new(d->socket_path);
  struct stat st;
  if (g_file_test(d->socket_path, G_FILE_TEST_EXISTS)) {
    GSocket *probe = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                  G_SOCKET_PROTOCOL_DEFAULT, NULL);
    /* without waiting: a daemon there whose listen queue is full (one
     * stopped, or swamped) is live too (QA: the blocking connect waited
     * for ever, and the start with it) */
    GError *pe = NULL;
    if (probe)
      g_socket_set_blocking(probe, FALSE);
    bool live = probe && (g_socket_connect(probe, addr, NULL, &pe) ||
                          g_error_matches(pe, G_IO_ERROR,
                                          G_IO_ERROR_WOULD_BLOCK) ||
                          g_error_matches(pe, G_IO_ERROR, G_IO_ERROR_PENDING));
    g_clear_error(&pe);
    if (probe)
      g_object_unref(probe);
    if (live) {
      g_set_error(err, CFD_ERROR, 0, "another cudafilterd answers on %s",
                  d->socket_path);
      g_object_unref(addr);
      return false;
    }
    unlink(d->socket_path); /* stale */
  }
  /* bound and listening under a temporary name, then renamed: a client
   * that sees the path can connect. A path within a few bytes of
   * sun_path's size has no room for ".PID": bound as .cfdPID in its
   * folder, else where it is (QA: GLib
   * cut the temporary name to the path's own length, bound that, then
   * chmod of the full name failed, "No such file or directory", and a
   * socket file was left at the path) */
  const size_t cap = sizeof(((struct sockaddr_un *)0)->sun_path);
  char *tmp = g_strdup_printf("%s.%d", d->socket_path, (int)getpid());
  if (strlen(tmp) >= cap) { /* a shorter one in the same folder */
    char *dir = g_path_get_dirname(d->socket_path);
    g_free(tmp);
    tmp = g_strdup_printf("%s/.cfd%d", dir, (int)getpid());
    g_free(dir);
  }
  /* bound at the path itself, the file is there before the listen: a
   * client that comes between is refused (the tests' start saw it under
   * ASan); only where not even the short name fits */
  bool direct = strlen(tmp) >= cap;
  if (direct) {
    g_free(tmp);
    tmp = g_strdup(d->socket_path);
  }
  GSocketAddress *taddr = g_unix_socket_address_new(tmp);
  unlink(tmp);
  d->listener = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                             G_SOCKET_PROTOCOL_DEFAULT, err);
  bool ok = d->listener != NULL;
  if (ok) {
    mode_t old = umask(0077); /* no moment when others may connect */
    ok = g_socket_bind(d->listener, taddr, FALSE, err);
    umask(old);
  }
  g_object_unref(taddr);
  g_object_unref(addr);
  if (ok && chmod(tmp, 0600) != 0) {
    g_set_error(err, CFD_ERROR, 0, "chmod %s: %s", tmp, g_strerror(errno));
    ok = false;
  }
  if (ok) {
    /* many clients at once queue rather than being refused (GLib's
     * default backlog is 10) */
    g_socket_set_listen_backlog(d->listener, 128);
    g_socket_set_blocking(d->listener, FALSE);
    ok = g_socket_listen(d->listener, err);
  }
  if (ok && lstat(tmp, &st) == 0) {
    d->socket_dev = st.st_dev;
    d->socket_ino = st.st_ino;
  }
  if (ok && !direct && rename(tmp, d->socket_path) != 0) {
    g_set_error(err, CFD_ERROR, 0, "rename to %s: %s", d->socket_path,
                g_strerror(errno));
    ok = false;
  }
  if (!ok)
    unlink(tmp);
  g_free(tmp);
  if (!ok) {
    g_prefix_error(err, "control socket %s: ", d->socket_path);
    return false;
  }
  accept_more(d);
  return true;
}

/* A reload, from SIGHUP or the control socket, with the file as read:
 * the report goes into the log line by line, and to the clients. */
/* What a reload's thread reads: the file, and the file streams' inputs
 * as they were probed (copied: the streams may change meanwhile). */
typedef struct reload_job {
  char *path;
  GPtrArray *known; /* cfd_known_input * */
} reload_job;

static void reload_job_free(reload_job *j)
{
  g_free(j->path);
  g_ptr_array_unref(j->known);
  g_free(j);
}

/* In the reload's thread: the file, its kernels loaded, its inputs
 * probed. Nothing of the daemon's is touched here. */
static void reload_read(GTask *t, gpointer src, gpointer data,
                        GCancellable *cancel)
{
  (void)src;
  (void)cancel;
  const reload_job *j = data;
  GError *e = NULL;
  cfd_config *c = cfd_config_load(j->path, j->known, &e);
  if (c)
    g_task_return_pointer(t, c, (GDestroyNotify)cfd_config_free);
  else
    g_task_return_error(t, e);
}

static void reload_done(GObject *src, GAsyncResult *res, gpointer user);
static void reload_stops_done(daemon_state *d);

static void reload_run(daemon_state *d)
{
  d->reloading = true;
  GTask *t = g_task_new(NULL, NULL, reload_done, d);
  reload_job *j = g_new0(reload_job, 1);
  j->path = g_strdup(d->config_path);
  j->known = g_ptr_array_new_with_free_func(
      (GDestroyNotify)cfd_known_input_free);
  for (guint i = 0; i < d->streams->len; i++) {
    const stream *s = d->streams->pdata[i];
    cfd_known_input *k = cfd_known_input_of(s->sc);
    if (k)
      g_ptr_array_add(j->known, k);
  }
  g_task_set_task_data(t, j, (GDestroyNotify)reload_job_free);
  g_task_run_in_thread(t, reload_read);
  g_object_unref(t);
}

/* A reload asked (cl NULL: by SIGHUP): read now, or again after the one
 * being read (whose file may predate the change). */
static void reload_request(daemon_state *d, client *cl)
{
  if (d->stopping)
    return; /* a SIGHUP while a reload's thread is waited for */
  if (cl)
    g_ptr_array_add(d->reloading ? d->reload_next : d->reload_waiting, cl);
  if (d->reloading)
    d->reload_again = true;
  else
    reload_run(d);
}

/* Back in the loop: the streams change; each waiting client gets the
 * report and ok or the error once the pipelines the reload starts in
 * threads are done (reload_finish). */
static void reload_done(GObject *src, GAsyncResult *res, gpointer user)
{
  (void)src;
  daemon_state *d = user;
  GError *load_err = NULL;
  cfd_config *c = g_task_propagate_pointer(G_TASK(res), &load_err);
  reload_answer *ra = g_new0(reload_answer, 1);
  ra->waiting = d->reload_waiting;
  ra->report = g_string_new(NULL);
  ra->ok = true;
  ra->stops = g_ptr_array_new();
  ra->audio_stops = g_ptr_array_new();
  ra->starts = g_ptr_array_new();
  d->reload_waiting = d->reload_next;
  d->reload_next = g_ptr_array_new();
  d->answer = ra; /* d->reloading stays set until it is answered */
  if (d->stopping) {
    cfd_config_free(c);
    g_clear_error(&load_err);
    g_set_error(&ra->err, CFD_ERROR, 0, "the daemon is stopping: no reload");
    ra->ok = false;
  } else if (!reload(d, c, load_err, ra->report, &ra->err)) {
    ra->ok = false;
  }
  if (ra->stops->len || ra->audio_stops->len) { /* the starts after */
    ra->pending++;
    stop_later(d, g_steal_pointer(&ra->stops),
               g_steal_pointer(&ra->audio_stops), reload_stops_done);
  } else {
    reload_stopped(d);
  }
  if (!ra->pending)
    reload_finish(d);
}

/* Back in the loop, the pipelines a reload stops stopped: its starts. */
static void reload_stops_done(daemon_state *d)
{
  reload_stopped(d);
  if (!--d->answer->pending)
    reload_finish(d);
}

/* The reload made (d->answer), its starts done: logged, and answered. */
static void reload_finish(daemon_state *d)
{
  reload_answer *ra = d->answer;
  d->answer = NULL;
  d->reloading = false;
  char **lines = g_strsplit(ra->report->str, "\n", -1);
  for (char **l = lines; *l; l++)
    if (**l)
      say("reload: %s", *l);
  g_strfreev(lines);
  if (!ra->ok && !ra->err)
    g_set_error(&ra->err, CFD_ERROR, 0,
                "reload: some streams did not take the new config (above)");
  if (ra->ok)
    say("reloaded %s", d->config_path);
  else
    say("%s", ra->err->message);
  for (guint i = 0; i < ra->waiting->len; i++) {
    client *cl = ra->waiting->pdata[i];
    g_string_append(cl->out, ra->report->str);
    if (ra->ok)
      g_string_append(cl->out, "ok\n");
    else
      g_string_append_printf(cl->out, "error: %s\n", ra->err->message);
    client_reply(cl);
  }
  g_ptr_array_free(ra->waiting, TRUE);
  g_string_free(ra->report, TRUE);
  g_clear_error(&ra->err);
  if (ra->stops)
    g_ptr_array_free(ra->stops, TRUE);
  if (ra->audio_stops)
    g_ptr_array_free(ra->audio_stops, TRUE);
  g_ptr_array_free(ra->starts, TRUE);
  g_free(ra);
  /* nothing is read now: those asked meanwhile, whenever, take the
   * next read */
  for (guint i = 0; i < d->reload_next->len; i++)
    g_ptr_array_add(d->reload_waiting, d->reload_next->pdata[i]);
  g_ptr_array_set_size(d->reload_next, 0);
  if (d->reload_again) {
    d->reload_again = false;
    if (d->stopping) {
      GPtrArray *waiting = d->reload_waiting;
      d->reload_waiting = g_ptr_array_new();
      for (guint i = 0; i < waiting->len; i++) {
        client *cl = waiting->pdata[i];
        g_string_append(cl->out, "error: the daemon is stopping: no "
                                 "reload\n");
        client_reply(cl);
      }
      g_ptr_array_free(waiting, TRUE);
    } else {
      reload_run(d);
    }
  }
}

static gboolean on_hup(gpointer user)
{
  reload_request(user, NULL);
  return G_SOURCE_CONTINUE;
}

static gboolean on_term(gpointer user)
{
  daemon_state *d = user;
  g_main_loop_quit(d->loop);
  return G_SOURCE_CONTINUE;
}

static void usage(FILE *f)
{
  fprintf(f,
          "usage: cudafilterd -c FILE [-s SOCKET] [-t WHEN] [--check]\n"
          "Filter live audio (PortAudio), GStreamer pipelines, and audio "
          "and video\nfiles (libav) through cudafilter, as the config FILE "
          "says (an example,\nevery key explained: "
          CFD_EXAMPLES "/cudafilterd.conf;\nconfig/cudafilterd.conf in the "
          "source tree)."
          "\n\n"
          "  -c, --config FILE   the streams to run\n"
          "  -s, --socket PATH   control socket (default: the config's, "
          "else\n"
          "                      $XDG_RUNTIME_DIR/cudafilterd.sock, or\n"
          "                      /tmp/cudafilterd-UID/cudafilterd.sock)\n"
          "      --check         check FILE (kernels loaded) and exit\n"
          "  -t, --timestamps WHEN  the local time in front of each log line\n"
          "                      (stderr): auto (the default: unless stderr is\n"
          "                      the systemd journal, which stamps its own),\n"
          "                      always or never (a supervisor that stamps)\n"
          "  -h, --help          show this help\n"
          "  -V, --version       show the version\n\n"
          "SIGHUP reloads FILE; SIGTERM and SIGINT stop. cudafilterctl talks "
          "to\nthe control socket.\n\n"
          "Exit status: 0 stopped (or FILE checked out), 1 a stream could "
          "not start\n(or another runtime error), 2 usage error or FILE does "
          "not check out.\n");
}

/* After a usage error's one line naming the problem, as GNU tools do
 * (and cudafilter): the whole usage buried the line above it. */
static void try_help(void)
{
  fputs("Try 'cudafilterd --help' for more information.\n", stderr);
}

int main(int argc, char **argv)
{
  static const struct option opts[] = {{"config", 1, NULL, 'c'},
                                       {"socket", 1, NULL, 's'},
                                       {"check", 0, NULL, 'k'},
                                       {"timestamps", 1, NULL, 't'},
                                       {"help", 0, NULL, 'h'},
                                       {"version", 0, NULL, 'V'},
                                       {NULL, 0, NULL, 0}};
  /* stdin, stdout or stderr closed (`cudafilterd ... >&- 2>&-`, a
   * supervisor's): the next files opened took their numbers, and the log
   * went into them (QA: GLib's eventfd was fd 1 and 2; an output file or
   * the control socket could as well be): /dev/null holds them */
  int nul;
  while ((nul = open("/dev/null", O_RDWR)) >= 0 && nul <= 2)
    ;
  if (nul > 2)
    close(nul);
  const char *cfg_path = NULL, *sock = NULL;
  bool check = false;
  cfd_log_times times = CFD_LOG_TIMES_AUTO;
  int o;
  opterr = 0; /* its messages said here, as cudafilter says them */
  while ((o = getopt_long(argc, argv, ":c:s:t:hV", opts, NULL)) != -1) {
    switch (o) {
    case 'c': cfg_path = optarg; break;
    case 's': sock = optarg; break;
    case 'k': check = true; break;
    case 't':
      if (!cfd_log_times_parse(optarg, &times)) {
        fprintf(stderr, "cudafilterd: --timestamps takes auto, always or "
                        "never, not '%s'\n", optarg);
        try_help();
        return 2;
      }
      break;
    case 'h': usage(stdout); return 0;
    case 'V': printf("cudafilterd %s\n", cf_version()); return 0;
    case ':': /* optind is past the word */
      fprintf(stderr, "cudafilterd: option '%s' needs a value\n",
              argv[optind - 1]);
      try_help();
      return 2;
    default:
      if (optopt && strncmp(argv[optind - 1], "--", 2))
        fprintf(stderr, "cudafilterd: unknown option '-%c'\n", optopt);
      else
        fprintf(stderr, "cudafilterd: unknown option '%s'\n",
                argv[optind - 1]);
      try_help();
      return 2;
    }
  }
  /* say what is wrong before the usage: `cudafilterd --check FILE` and
   * `cudafilterd FILE` are the likely slips */
  if (optind != argc) {
    fprintf(stderr, "cudafilterd: unexpected argument '%s'%s\n", argv[optind],
            cfg_path ? "" : " (the config is given with -c FILE)");
    try_help();
    return 2;
  }
  if (!cfg_path) {
    fprintf(stderr, "cudafilterd: no config (give one with -c FILE)\n");
    try_help();
    return 2;
  }
  /* a daemon's log (not --check's answer): every line with its time,
   * the libraries' lines too (from here: GStreamer takes its log stream
   * when it starts) */
  if (!check)
    cfd_log_times_start(times);
  /* The config's folder is the daemon's: a relative path in a pipeline
   * line (GStreamer's own, out of the config's sight) is then relative to
   * the config, as every other path in it. The paths given here are
   * taken from where the daemon was started. */
  const char *cfg_name = cfg_path;
  g_autofree char *cfg_abs = g_canonicalize_filename(cfg_path, NULL);
  g_autofree char *sock_abs = sock ? g_canonicalize_filename(sock, NULL) : NULL;
  g_autofree char *cfg_dir = g_path_get_dirname(cfg_abs);
  cfg_path = cfg_abs;
  sock = sock_abs;
  if (chdir(cfg_dir) != 0) {
    say("%s: cannot enter its folder %s: %s", cfg_name, cfg_dir,
        g_strerror(errno));
    return 2;
  }
  daemon_state d = {0};
  if (!check) {
    /* from the start: a signal while the kernels load (a reload the
     * service manager sends, a stop) waits for the main loop, rather
     * than killing the daemon half started */
    g_unix_signal_add(SIGHUP, on_hup, &d);
    g_unix_signal_add(SIGTERM, on_term, &d);
    g_unix_signal_add(SIGINT, on_term, &d);
  }
#ifdef CFD_HAVE_GST
  /* GStreamer's debug lines (GST_DEBUG) come in colour unless told
   * otherwise, escape codes in a log file or the journal (QA); where
   * stderr is no terminal they come plain, unless GST_DEBUG_NO_COLOR or
   * GST_DEBUG_COLOR_MODE says how */
  if (!isatty(STDERR_FILENO) && !g_getenv("GST_DEBUG_NO_COLOR") &&
      !g_getenv("GST_DEBUG_COLOR_MODE"))
    g_setenv("GST_DEBUG_COLOR_MODE", "off", FALSE);
  GError *ge = NULL;
  if (!gst_init_check(NULL, NULL, &ge)) {
    say("GStreamer: %s", ge ? ge->message : "cannot initialise");
    return 1;
  }
#endif
  GError *err = NULL;
  cfd_config *c = cfd_config_load(cfg_path, NULL, &err);
  if (!c) {
    say("%s", err->message);
    g_error_free(err);
    return 2;
  }
  if (check) {
    /* what a start refuses that a reload need not (a finished stream's
     * output is there then), or that only a start meets: the socket's
     * path, a folder a file cannot be made in (QA: both said ok) */
    g_autofree char *sp = sock        ? g_strdup(sock)
                          : c->socket ? g_strdup(c->socket)
                                      : cfd_default_socket();
    if (!socket_fits(sp, false, &err)) {
      fprintf(stderr, "cudafilterd: %s: %s: the daemon would not start\n",
              cfg_path, err->message);
      g_error_free(err);
      cfd_config_free(c);
      return 2;
    }
    for (guint i = 0; i < c->streams->len; i++) {
      const cfd_stream_conf *sc = c->streams->pdata[i];
      if (sc->type != CFD_FILE)
        continue;
      g_autofree char *why = cfd_file_output_kept(sc);
      if (!why)
        why = folder_unwritable(sc->output);
      if (why) {
        fprintf(stderr,
                "cudafilterd: %s: [stream %s] output: %s: the stream would "
                "not start\n",
                cfg_path, sc->name, why);
        cfd_config_free(c);
        return 2;
      }
    }
    printf("%s: %u stream%s, ok\n", cfg_name, c->streams->len,
           c->streams->len == 1 ? "" : "s");
    cfd_config_free(c);
    return 0;
  }
  d.loop = g_main_loop_new(NULL, FALSE);
  d.config_path = g_strdup(cfg_path);
  d.config_socket = g_strdup(c->socket);
  d.clients = g_ptr_array_new();
  d.reload_waiting = g_ptr_array_new();
  d.reload_next = g_ptr_array_new();
  d.socket_path = sock        ? g_strdup(sock)
                  : c->socket ? g_strdup(c->socket)
                              : cfd_default_socket();
  d.streams = g_ptr_array_new();
  signal(SIGPIPE, SIG_IGN); /* a client that hangs up */
  /* clients take at most a quarter of the descriptors: the streams keep
   * theirs (a restart opens its files, a reload its kernels) */
  d.max_clients = CFD_MAX_CLIENTS;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur / 4 < CFD_MAX_CLIENTS)
    d.max_clients = MAX((unsigned)(rl.rlim_cur / 4), 4u);
  if (!socket_fits(d.socket_path, true, &err))
    d.exit_code = 2; /* the config's (or -s's) to mend: not restarted */
  bool ok = !d.exit_code && listen_socket(&d, &err);
  for (guint i = 0; ok && i < c->streams->len; i++) {
    stream *s = g_new0(stream, 1); /* started once the loop runs */
    s->sc = take_conf(c, i);
    g_ptr_array_add(d.streams, s);
  }
  cfd_config_free(c);
  if (ok) {
    g_timeout_add(50, on_tick, &d);
    /* its streams started in threads, side by side, the control socket
     * served meanwhile (status shows them starting); said once they
     * run */
    for (guint i = 0; i < d.streams->len; i++)
      boot_start_later(&d, d.streams->pdata[i]);
    if (!d.booting)
      boot_said(&d);
    g_main_loop_run(d.loop);
    if (!d.exit_code) /* else a stream of its start said why */
      say("stopping");
    /* a reload being read: its thread finishes before the streams go
     * (its clients are told no) */
    d.stopping = true;
    cfd_file_probes_cancel();
    while (d.reloading || d.probes || d.loads || d.stops)
      g_main_context_iteration(NULL, TRUE);
  } else {
    say("%s", err->message);
    g_error_free(err);
    if (!d.exit_code)
      d.exit_code = 1;
  }
  /* every stream stopped at once, each in a thread (a pipeline waits up
   * to 2 s for its EOS, a sound stream plays what is queued, a file
   * stream finishes its output): one after another, a daemon of many
   * streams took their sum, past a service manager's stop timeout */
  GPtrArray *pipes = g_ptr_array_new(), *audios = g_ptr_array_new();
  for (guint i = 0; i < d.streams->len; i++) {
    stream *s = d.streams->pdata[i];
    if (d.exit_code) { /* not started: outputs as they were */
      cfd_audio_discard(s->audio);
      s->audio = NULL;
    }
    stream_stop_into(s, pipes, audios);
  }
  g_ptr_array_free(d.streams, TRUE);
  if (pipes->len || audios->len) {
    stop_later(&d, pipes, audios, NULL);
    while (d.stops)
      g_main_context_iteration(NULL, TRUE);
  } else {
    g_ptr_array_free(pipes, TRUE);
    g_ptr_array_free(audios, TRUE);
  }
  while (d.clients->len) {
    /* an answer not yet sent (a restart or a reload the stop ended):
     * one try to hand it over */
    client *cl = d.clients->pdata[0];
    if (cl->state == ANSWERING && cl->sent < cl->out->len)
      g_socket_send(cl->sock, cl->out->str + cl->sent,
                    cl->out->len - cl->sent, NULL, NULL);
    client_free(cl);
  }
  g_ptr_array_free(d.clients, TRUE);
  g_ptr_array_free(d.reload_waiting, TRUE);
  g_ptr_array_free(d.reload_next, TRUE);
  drop_source(&d.accepting);
  drop_source(&d.accept_retry);
  if (d.listener) {
    g_socket_close(d.listener, NULL);
    g_object_unref(d.listener);
    /* ours only: removed while this daemon ran, the path may be another
     * daemon's now (QA: stopping the first took the second's socket) */
    struct stat st;
    if (lstat(d.socket_path, &st) == 0 && st.st_dev == d.socket_dev &&
        st.st_ino == d.socket_ino)
      unlink(d.socket_path);
  }
  g_main_loop_unref(d.loop);
  g_free(d.socket_path);
  g_free(d.config_path);
  g_free(d.config_socket);
#ifdef CFD_HAVE_GST
  gst_deinit();
#endif
  return d.exit_code;
}
