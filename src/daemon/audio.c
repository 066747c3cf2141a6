/* A live audio stream: PortAudio input -> engine -> PortAudio output, in
 * PortAudio's callback (the lowest latency PortAudio offers: one period).
 * A file stream (type=file): an audio file (or URL) through the engine
 * into another, `cudafilter apply`'s audio half (src/cli/apply_audio.c) in
 * a thread of its own, as fast as it goes or paced at the input's rate.
 * Both take kernel changes and report the same statistics.
 *
 * The callback never waits for the control thread. A new kernel is loaded
 * in a thread of the daemon's (cfd_change_build), the swap built in its
 * loop (cf_engine_prepare_swap, on the engine's input history): the
 * callback then only replays the periods since (cf_engine_set_prepared)
 * instead of the whole kernel's length. It is handed over through one
 * atomic pointer that the callback takes at its next period; the engine
 * crossfades. */
#include "cfd.h"

#if defined(CFD_HAVE_PORTAUDIO) || defined(CFD_HAVE_LIBAV)

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef CFD_HAVE_PORTAUDIO
#include <dlfcn.h>
#include <portaudio.h>
#include <stdarg.h>
#endif
#ifdef CFD_HAVE_LIBAV
#include "../cli/apply.h"
#include "../io/av_lazy.h"
#endif

#define RING 4096    /* periods the processing-time statistics cover */
#define STOP_GRACE 3 /* s a stopped file stream's output may take no
                      * packet before it is given up */

struct cfd_audio {
  cfd_stream_conf *sc; /* live keys (kernel, gain, crossfade) follow set */
  cf_engine *e;
#ifdef CFD_HAVE_PORTAUDIO
  PaStream *pa;
#endif
  unsigned out_channels;
  cf_routing routing; /* the kernel's in use, for status */
  float *silence;   /* block * channels zeros: a period with no input */
  double budget_us; /* one period */
  uint64_t limit;   /* input frames before the stream ends; 0: none */
  size_t latency;   /* frames the engine delays its output by */

  _Atomic(cf_swap_prep *) prep; /* a swap built ahead */
  _Atomic(cf_swap_prep *) made; /* one the callback made: to free */
  _Atomic double pending_crossfade;

  /* written by the callback, read by status */
  _Atomic uint64_t frames, periods, xruns, errors, swaps, swap_frame;
  _Atomic int backend;    /* cf_backend now running */
  _Atomic int last_error; /* cf_status of the last failed call, or 0 */
  _Atomic bool finished;
  _Atomic float swap_us; /* the last cf_engine_set_kernel, in the callback */
  _Atomic float proc_us[RING];
  _Atomic uint64_t proc_n;
  /* type=file */
  bool file;
  GThread *thread;
  char *tmp;          /* the output is written there, then renamed */
  _Atomic bool stop;  /* end the input where it stands */
  _Atomic bool abort; /* give up on an output that takes nothing */
  _Atomic double wrote_us; /* when the output last took a packet */
  _Atomic bool discard; /* the output is not wanted: OUTPUT left as it was */
  _Atomic int state;  /* file_state */
  double t0;          /* the run's start, s (monotonic) */
  /* the thread's, read once state is no longer running */
  char error[512];
  double wall; /* s the run took */
#ifdef CFD_HAVE_LIBAV
  apply_result res;
  apply_vresult vres;
#endif
  /* a video file: its kernel (the thread's), and one to take at the next
   * frame */
  cf_kernel2d *k2d;
  _Atomic(cf_kernel2d *) pending2d;
  double t_first; /* the first frame's time (s), for realtime */
  double t_last;  /* the last frame's (video thread only) */
};

typedef enum file_state {
  FILE_RUNNING,
  FILE_FINISHED, /* the whole input, the output written */
  FILE_STOPPED,  /* stopped early; the output holds what was read */
  FILE_FAILED    /* error: no output */
} file_state;

static const char *const file_state_names[] = {"running", "finished", "stopped",
                                               "failed"};

static double now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* One block through the engine, a swap built ahead taken first, timed
 * and counted: the PortAudio callback's work and a file's. */
static cf_status step(cfd_audio *a, const float *x, float *y, size_t n,
                      double t0)
{
  uint64_t done = atomic_load_explicit(&a->frames, memory_order_relaxed);
  cf_swap_prep *p = atomic_exchange(&a->prep, NULL);
  if (p) {
    size_t xf =
        (size_t)llround(atomic_load(&a->pending_crossfade) * a->sc->rate);
    double t1 = now_us();
    cf_status s = cf_engine_set_prepared(a->e, p, xf);
    atomic_store(&a->swap_us, (float)(now_us() - t1));
    if (s == CF_OK) {
      atomic_store(&a->swap_frame, done);
      atomic_fetch_add(&a->swaps, 1);
    } else {
      atomic_fetch_add(&a->errors, 1);
      atomic_store(&a->last_error, (int)s);
    }
    /* what the swap let go is freed in the control thread; one made
     * before it and still there (never: one swap is built at a time) is
     * freed here */
    cf_swap_prep_free(atomic_exchange(&a->made, p));
  }
  cf_status s = cf_engine_process(a->e, x, y, n);
  if (s != CF_OK) {
    atomic_fetch_add(&a->errors, 1);
    atomic_store(&a->last_error, (int)s);
  }
  atomic_store_explicit(&a->frames, done + n, memory_order_relaxed);
  atomic_store_explicit(&a->backend, (int)cf_engine_backend(a->e),
                        memory_order_relaxed);
  uint64_t i = atomic_fetch_add_explicit(&a->periods, 1, memory_order_relaxed);
  atomic_store_explicit(&a->proc_us[i % RING], (float)(now_us() - t0),
                        memory_order_relaxed);
  atomic_store_explicit(&a->proc_n, i + 1, memory_order_release);
  return s;
}

#ifdef CFD_HAVE_PORTAUDIO

static int pa_users;
static G_LOCK_DEFINE(pa_lock);

bool cfd_audio_available(const char **why)
{
  (void)why;
  return true;
}

static bool pa_ok(PaError pe, const char *what, GError **err)
{
  if (pe >= 0)
    return true;
  const PaHostErrorInfo *h =
      pe == paUnanticipatedHostError ? Pa_GetLastHostErrorInfo() : NULL;
  g_set_error(err, CFD_ERROR, 0, "PortAudio: %s: %s%s%s", what,
              Pa_GetErrorText(pe), h && h->errorText ? ": " : "",
              h && h->errorText ? h->errorText : "");
  return false;
}

/* Pa_Initialize probes every host API: ALSA and JACK print what they do
 * not find (about 60 lines here, none of them PortAudio's error, which
 * pa_ok reports). A stream that is down tries again every restart-delay,
 * so from the second initialisation on their messages go to GLib's debug
 * log (G_MESSAGES_DEBUG=cudafilterd-portaudio) rather than to stderr at
 * each try. Their hooks are looked up in the process (PortAudio loaded
 * them, or it was built without them and there is nothing to quiet), so
 * that the daemon links neither. */
#define PA_HOST_DOMAIN "cudafilterd-portaudio"

static void alsa_to_debug(const char *file, int line, const char *function,
                          int err, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *m = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_log(PA_HOST_DOMAIN, G_LOG_LEVEL_DEBUG, "ALSA lib %s:%d:(%s) %s%s%s",
        file ? file : "?", line, function ? function : "?", m,
        err ? ": " : "", err ? g_strerror(err < 0 ? -err : err) : "");
  g_free(m);
}

static void jack_to_debug(const char *msg)
{
  g_log(PA_HOST_DOMAIN, G_LOG_LEVEL_DEBUG, "JACK: %s", msg ? msg : "");
}

static void quiet_host_apis(void)
{
  typedef void (*alsa_handler)(const char *, int, const char *, int,
                               const char *, ...);
  typedef int (*alsa_set)(alsa_handler);
  typedef void (*jack_set)(void (*)(const char *));
  alsa_set a = (alsa_set)dlsym(RTLD_DEFAULT, "snd_lib_error_set_handler");
  jack_set je = (jack_set)dlsym(RTLD_DEFAULT, "jack_set_error_function");
  jack_set ji = (jack_set)dlsym(RTLD_DEFAULT, "jack_set_info_function");
  if (a)
    a(alsa_to_debug); /* its status: only "no such handler" */
  if (je)
    je(jack_to_debug);
  if (ji)
    ji(jack_to_debug);
}

static bool pa_ref(GError **err)
{
  static unsigned inits;
  bool ok = true;
  G_LOCK(pa_lock);
  if (pa_users == 0 && inits++ == 1)
    quiet_host_apis();
  if (pa_users == 0)
    ok = pa_ok(Pa_Initialize(), "initialising", err);
  if (ok)
    pa_users++;
  G_UNLOCK(pa_lock);
  return ok;
}

static void pa_unref(void)
{
  G_LOCK(pa_lock);
  if (--pa_users == 0)
    Pa_Terminate(); /* its error, if any, changes nothing here */
  G_UNLOCK(pa_lock);
}

/* "default", a device index, its exact name, or a part of exactly one
 * name (case-insensitive); for input or output. */
static PaDeviceIndex find_device(const char *want, bool input,
                                 unsigned channels, GError **err)
{
  const char *dir = input ? "input" : "output";
  int n = Pa_GetDeviceCount();
  if (n < 0) {
    pa_ok(n, "listing devices", err);
    return paNoDevice;
  }
  PaDeviceIndex found = paNoDevice;
  if (!strcmp(want, "default")) {
    found = input ? Pa_GetDefaultInputDevice() : Pa_GetDefaultOutputDevice();
    if (found == paNoDevice) {
      g_set_error(err, CFD_ERROR, 0, "no default %s device (%d devices)", dir,
                  n);
      return paNoDevice;
    }
  } else {
    char *end;
    long idx = strtol(want, &end, 10);
    if (*want && !*end) {
      if (idx < 0 || idx >= n) {
        g_set_error(err, CFD_ERROR, 0, "%s device %ld: there are devices 0..%d",
                    dir, idx, n - 1);
        return paNoDevice;
      }
      found = (PaDeviceIndex)idx;
    }
    for (int i = 0; found == paNoDevice && i < n; i++) {
      const PaDeviceInfo *d = Pa_GetDeviceInfo(i);
      if (d && !strcmp(d->name, want))
        found = i;
    }
    char *lw = g_utf8_strdown(want, -1);
    int matches = 0;
    /* every device whose name holds it: two are ambiguous (the loop
     * stopped at the first match, so "names several" was never said) */
    bool exact = found != paNoDevice;
    for (int i = 0; !exact && i < n; i++) {
      const PaDeviceInfo *d = Pa_GetDeviceInfo(i);
      char *ln = d ? g_utf8_strdown(d->name, -1) : NULL;
      if (ln && strstr(ln, lw) &&
          (input ? d->maxInputChannels : d->maxOutputChannels) > 0) {
        matches++;
        found = i;
      }
      g_free(ln);
    }
    if (matches > 1)
      found = paNoDevice;
    g_free(lw);
    if (found == paNoDevice) {
      GString *list = g_string_new(NULL);
      for (int i = 0; i < n; i++) {
        const PaDeviceInfo *d = Pa_GetDeviceInfo(i);
        if (d)
          g_string_append_printf(list, "%s %d '%s' (in %d, out %d)",
                                 i ? "," : "", i, d->name, d->maxInputChannels,
                                 d->maxOutputChannels);
      }
      g_set_error(err, CFD_ERROR, 0, "%s device '%s': %s; devices:%s", dir,
                  want,
                  matches > 1 ? "names several, give more of the name"
                              : "no device has that name",
                  list->len ? list->str : " none");
      g_string_free(list, TRUE);
      return paNoDevice;
    }
  }
  const PaDeviceInfo *d = Pa_GetDeviceInfo(found);
  int have = d ? (input ? d->maxInputChannels : d->maxOutputChannels) : 0;
  if (have < (int)channels) {
    g_set_error(err, CFD_ERROR, 0,
                "%s device %d '%s' has %d %s channels, "
                "the stream needs %u",
                dir, found, d ? d->name : "?", have, dir, channels);
    return paNoDevice;
  }
  return found;
}

static int callback(const void *in, void *out, unsigned long n,
                    const PaStreamCallbackTimeInfo *ti,
                    PaStreamCallbackFlags flags, void *user)
{
  cfd_audio *a = user;
  (void)ti;
  double t0 = now_us();
  if (flags & (paInputUnderflow | paInputOverflow | paOutputUnderflow |
               paOutputOverflow))
    atomic_fetch_add_explicit(&a->xruns, 1, memory_order_relaxed);
  uint64_t done = atomic_load_explicit(&a->frames, memory_order_relaxed);
  size_t todo = n;
  if (a->limit && done + todo > a->limit)
    todo = (size_t)(a->limit - done);
  cf_status s = step(a, in ? in : a->silence, out, todo, t0);
  if (s != CF_OK) /* the stream goes on: a period of silence, counted */
    memset(out, 0, (size_t)n * a->out_channels * sizeof(float));
  else if (todo < n)
    memset((float *)out + todo * a->out_channels, 0,
           (n - todo) * a->out_channels * sizeof(float));
  return a->limit && done + todo >= a->limit ? paComplete : paContinue;
}

static void finished(void *user)
{
  cfd_audio *a = user;
  atomic_store(&a->finished, true);
}

/* PortAudio's calls on streams, one at a time in the process: a stream's
 * stop and close run in a thread of their own (a restart's or a
 * reload's), while the loop or another thread may open and start another
 * stream, and PortAudio does not promise that calls on several streams at
 * once are safe (its host APIs: ALSA, JACK, Pulse). A start waits for a
 * stop under way (Pa_StopStream plays what is queued: up to the output's
 * latency). */
static GMutex pa_calls;

static bool pa_start_locked(cfd_audio *a, GError **err);

/* Open the devices and start the callback. */
static bool pa_start(cfd_audio *a, GError **err)
{
  g_mutex_lock(&pa_calls);
  bool ok = pa_start_locked(a, err);
  g_mutex_unlock(&pa_calls);
  return ok;
}

static bool pa_start_locked(cfd_audio *a, GError **err)
{
  const cfd_stream_conf *sc = a->sc;
  GError *e = NULL;
  PaDeviceIndex din = find_device(sc->input, true, sc->channels, &e);
  PaDeviceIndex dout =
      din == paNoDevice ? paNoDevice
                        : find_device(sc->output, false, a->out_channels, &e);
  if (dout == paNoDevice) {
    g_propagate_error(err, e);
    return false;
  }
  const PaDeviceInfo *ii = Pa_GetDeviceInfo(din);
  const PaDeviceInfo *oi = Pa_GetDeviceInfo(dout);
  if (!ii || !oi) { /* find_device checked the indices: never, but PA's */
    g_set_error(err, CFD_ERROR, 0,
                "PortAudio has no information on device %d (%s)",
                ii ? (int)dout : (int)din, ii ? "output" : "input");
    return false;
  }
  PaStreamParameters ip = {
      din, (int)sc->channels, paFloat32,
      sc->latency > 0 ? sc->latency : ii->defaultLowInputLatency, NULL};
  PaStreamParameters op = {
      dout, (int)a->out_channels, paFloat32,
      sc->latency > 0 ? sc->latency : oi->defaultLowOutputLatency, NULL};
  char *what = g_strdup_printf("opening '%s' -> '%s' at %u Hz, %u frames a "
                               "period",
                               ii->name, oi->name, sc->rate, sc->block);
  bool ok = pa_ok(Pa_OpenStream(&a->pa, &ip, &op, sc->rate, sc->block, paNoFlag,
                                callback, a),
                  what, err);
  g_free(what);
  return ok &&
         pa_ok(Pa_SetStreamFinishedCallback(a->pa, finished), "stream", err) &&
         pa_ok(Pa_StartStream(a->pa), "starting the stream", err);
}

#else

bool cfd_audio_available(const char **why)
{
  *why = "this cudafilterd was built without PortAudio (type=audio); "
         "a type=pipeline stream can use GStreamer's audio sources";
  return false;
}

#endif /* CFD_HAVE_PORTAUDIO */

static cfd_stream_conf *conf_copy(const cfd_stream_conf *sc)
{
  cfd_stream_conf *c = g_new0(cfd_stream_conf, 1);
  *c = *sc;
  c->name = g_strdup(sc->name);
  c->shape = g_strdup(sc->shape);
  c->stale_input = g_strdup(sc->stale_input);
  c->input = g_strdup(sc->input);
  c->output = g_strdup(sc->output);
  c->kernel_file = g_strdup(sc->kernel_file);
  c->kernel_taps = g_memdup2(sc->kernel_taps, sc->kernel_len * sizeof(float));
  c->kernel = NULL;
  c->pipeline = NULL;
  c->filter = NULL;
  c->format = g_strdup(sc->format);
  c->codec = g_strdup(sc->codec);
  c->kernel2d_file = g_strdup(sc->kernel2d_file);
  c->preset_name = g_strdup(sc->preset_name);
  c->kernel2d = NULL;
  return c;
}

/* ---- files ---- */

/* The engine's configuration for a video file stream. */
static void video_config(const cfd_stream_conf *sc, cf_video_config *cfg)
{
  cf_video_config_init(cfg);
  cfg->width = sc->width;
  cfg->height = sc->height;
  cfg->format = sc->pixfmt;
  cfg->border = sc->border;
  cfg->algorithm = sc->algo2d;
  cfg->components = sc->components;
  cfg->cval = sc->cval;
  cfg->scale = sc->scale;
  cfg->bias = sc->bias;
  cfg->absolute = sc->absolute;
  cfg->backend = sc->backend;
  cfg->device_id = sc->device_id;
  cfg->threads = sc->threads;
}

/* Whether a file stream's input still has what the config's probe found
 * (a `restart` after the file was replaced): the picture, or the rate and
 * channels. */
static bool input_unchanged(const cfd_stream_conf *sc, GError **err)
{
  double seconds;
  if (sc->video) {
    unsigned w, h;
    cf_pixel_format f;
    if (!cfd_file_vprobe(sc->input, &w, &h, &f, &seconds, err))
      return false;
    if (w == sc->width && h == sc->height && f == sc->pixfmt)
      return true;
    g_set_error(err, CFD_ERROR, 0,
                "%s is now %ux%u %s, not the %ux%u %s the config was read "
                "for; `reload` takes the new picture",
                sc->input, w, h, cf_pixel_format_name(f), sc->width,
                sc->height, cf_pixel_format_name(sc->pixfmt));
    return false;
  }
  unsigned rate, channels;
  if (!cfd_file_probe(sc->input, sc->stream, &rate, &channels, &seconds, err))
    return false;
  if (rate == sc->rate && channels == sc->channels)
    return true;
  g_set_error(err, CFD_ERROR, 0,
              "%s is now %u Hz, %u channel(s), not the %u Hz, %u channel(s) "
              "the config was read for; `reload` takes the new format",
              sc->input, rate, channels, sc->rate, sc->channels);
  return false;
}

#ifdef CFD_HAVE_LIBAV

bool cfd_file_available(const char **why)
{
  return cf_av_get(why) != NULL;
}

enum { PROBE_SECONDS = 5 };

/* Set once the daemon stops: a probe under way gives up. */
static atomic_bool probes_cancelled;

void cfd_file_probes_cancel(void)
{
  atomic_store(&probes_cancelled, true);
}

static int probe_late(void *user)
{
  return now_us() > *(const double *)user || atomic_load(&probes_cancelled);
}

/* The input's audio stream (rate, channels) or its main video stream
 * (width, height, the format it is filtered in). */
static bool file_probe(const char *path, bool video, int stream, unsigned *a,
                       unsigned *b, cf_pixel_format *fmt, double *seconds,
                       GError **err)
{
  const char *why = NULL;
  /* A named pipe: its open() waits in the kernel for a writer, where the
   * probe's deadline and a stop cannot reach it (QA: --check, the start
   * and a reload hung, and SIGTERM did not end the daemon), and what the
   * probe read of it would be gone when the stream opens it again. */
  struct stat st;
  if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
    g_set_error(err, CFD_ERROR, 0,
                "%s is a named pipe: a file stream's input is opened twice "
                "(probed when the config is read, then streamed), which a "
                "pipe cannot give; use a file, a URL (udp://, tcp://, ...) "
                "or a pipeline stream", path);
    return false;
  }
  if (!cf_av_get(&why)) {
    g_set_error(err, CFD_ERROR, 0, "libav: %s", why);
    return false;
  }
  cf_av->av_log_set_level(AV_LOG_ERROR);
  char msg[512];
  /* an input that says nothing (a live URL with no sender yet) must not
   * hold the daemon's start, nor a reload (read in a thread of its own,
   * its clients waiting) */
  double deadline = now_us() + PROBE_SECONDS * 1e6;
  apply_hooks h = {.user = &deadline, .stop = probe_late};
  apply_vhooks vh = {.user = &deadline, .stop = probe_late};
  apply_capture(msg, sizeof msg);
  int rc = video ? apply_vprobe(path, a, b, fmt, seconds, &vh)
                 : apply_probe(path, stream, a, b, seconds, &h);
  apply_capture(NULL, 0);
  if (rc == 130)
    g_set_error(err, CFD_ERROR, 0,
                "%s: nothing to read within %d s (the input must be there "
                "when the config is read)",
                path, PROBE_SECONDS);
  else if (rc)
    g_set_error(err, CFD_ERROR, 0, "%s", msg);
  return rc == 0;
}

bool cfd_file_probe(const char *path, int stream, unsigned *rate,
                    unsigned *channels, double *seconds, GError **err)
{
  return file_probe(path, false, stream, rate, channels, NULL, seconds, err);
}

bool cfd_file_check_output(const cfd_stream_conf *sc, GError **err)
{
  const char *why = NULL;
  if (!cf_av_get(&why)) {
    g_set_error(err, CFD_ERROR, 0, "libav: %s", why);
    return false;
  }
  apply_opts o;
  memset(&o, 0, sizeof o);
  o.out_path = sc->output;
  o.format = sc->format;
  o.codec = sc->codec;
  o.config_keys = true;
  char msg[512];
  apply_capture(msg, sizeof msg);
  int rc = apply_check_output(&o, sc->video);
  apply_capture(NULL, 0);
  if (rc)
    g_set_error(err, CFD_ERROR, 0, "%s", msg);
  return rc == 0;
}

bool cfd_file_vprobe(const char *path, unsigned *width, unsigned *height,
                     cf_pixel_format *fmt, double *seconds, GError **err)
{
  return file_probe(path, true, -1, width, height, fmt, seconds, err);
}

static int file_stop(void *user)
{
  cfd_audio *a = user;
  return atomic_load(&a->stop);
}

static int file_abort(void *user)
{
  cfd_audio *a = user;
  return atomic_load(&a->abort);
}

static void file_wrote(void *user)
{
  cfd_audio *a = user;
  atomic_store(&a->wrote_us, now_us());
}

static int file_keep(void *user)
{
  cfd_audio *a = user;
  return !atomic_load(&a->discard);
}

/* realtime: the input at its own rate (a file played as a live source,
 * an output that is a live destination): wait until `due` (us) or a
 * stop. */
static void pace(cfd_audio *a, double due)
{
  while (a->sc->realtime && !atomic_load(&a->stop)) {
    double wait = due - now_us();
    if (wait <= 0)
      break;
    g_usleep((gulong)(wait < 20000 ? wait : 20000));
  }
}

static cf_status file_process(void *user, const float *x, float *y, size_t n)
{
  cfd_audio *a = user;
  cf_status s = step(a, x, y, n, now_us());
  if (s == CF_OK)
    pace(a, a->t0 + 1e6 * (double)atomic_load(&a->frames) / a->sc->rate);
  return s;
}

/* What apply's audio and video halves take from a file stream's section. */
static void file_opts(cfd_audio *a, apply_opts *o)
{
  const cfd_stream_conf *sc = a->sc;
  memset(o, 0, sizeof *o);
  o->in_path = sc->input;
  o->out_path = sc->output;
  o->stream = sc->stream;
  o->codec = sc->codec;
  o->format = sc->format;
  /* the commit replaces OUTPUT as `overwrite` says (file_start has looked
   * already; one made while the stream ran is kept where it is false) */
  o->overwrite = sc->overwrite;
  o->quiet = true;
  o->config_keys = true;
  o->out_abort = file_abort;
  o->keep = file_keep;
  o->wrote = file_wrote;
  o->out_abort_user = a;
}

/* The run's end: its state, said in the log; `wrote` tells how much. */
static void file_done(cfd_audio *a, int rc, bool stopped, const char *wrote,
                      const char *tail)
{
  const cfd_stream_conf *sc = a->sc;
  a->wall = (now_us() - a->t0) * 1e-6;
  file_state st = rc == 0 && !stopped    ? FILE_FINISHED
                  : rc == 0 || rc == 130 ? FILE_STOPPED
                                         : FILE_FAILED;
  if (st == FILE_FAILED)
    fprintf(stderr, "cudafilterd: stream %s failed: %s\n", sc->name, a->error);
  else if (rc == 130 && atomic_load(&a->discard))
    fprintf(stderr,
            "cudafilterd: stream %s stopped; its output is dropped, %s "
            "left as it was\n",
            sc->name, sc->output);
  else if (rc == 130)
    fprintf(stderr,
            "cudafilterd: stream %s stopped before its input "
            "opened; nothing written\n",
            sc->name);
  else
    fprintf(stderr,
            "cudafilterd: stream %s %s: wrote %s, %s%s, in %.3f s%s\n",
            sc->name, file_state_names[st], sc->output, wrote,
            st == FILE_STOPPED ? " (the input read so far)" : "", a->wall,
            tail);
  atomic_store(&a->state, (int)st);
}

/* A file stream's end (file_done), its finished line ended, after its
 * run time, with where its input ended (read_s) well before the length
 * it was probed to hold (where it ran to its end), and `said` (apply's
 * cut-short sentence, or ""), each after "; " (docs helper: after the
 * output's own words, the run time read as the cut-short sentence's). */
static void file_end(cfd_audio *a, int rc, bool stopped, const char *wrote,
                     double read_s, const char *said)
{
  double seconds = a->sc->seconds;
  char tail[2 * PATH_MAX + 400] = "";
  size_t w = 0;
  if (rc == 0 && !stopped && seconds > 0 &&
      read_s < seconds - fmax(1.0, 0.02 * seconds))
    w = (size_t)snprintf(tail, sizeof tail,
                         "; the input ended at %.2f s of the %.2f s it was "
                         "probed to hold",
                         read_s, seconds);
  if (said[0] && w < sizeof tail)
    snprintf(tail + w, sizeof tail - w, "; %s", said);
  file_done(a, rc, stopped, wrote, tail);
}

static gpointer file_thread(gpointer user)
{
  cfd_audio *a = user;
  const cfd_stream_conf *sc = a->sc;
  apply_opts o;
  file_opts(a, &o);
  apply_hooks h = {.user = a,
                   .stop = file_stop,
                   .process = file_process,
                   .engine = a->e,
                   .rate = sc->rate,
                   .channels = sc->channels};
  apply_capture(a->error, sizeof a->error);
  int rc = apply_audio(&o, a->tmp, &h, &a->res);
  apply_capture(NULL, 0);
  char wrote[2 * PATH_MAX + 640];
  int w = snprintf(wrote, sizeof wrote, "%.2f s",
                   (double)a->res.frames_out /
                       (a->res.rate ? a->res.rate : sc->rate));
  if (a->res.clipped && w > 0 && (size_t)w < sizeof wrote)
    w += snprintf(wrote + w, sizeof wrote - (size_t)w,
                  ", %" G_GUINT64_FORMAT " samples clipped (peak %+.2f dBFS)",
                  (guint64)a->res.clipped, 20 * log10(a->res.peak));
  if (a->res.corrupt && w > 0 && (size_t)w < sizeof wrote)
    w += snprintf(wrote + w, sizeof wrote - (size_t)w,
                  ", %u damaged input packet(s) skipped", a->res.corrupt);
  /* an input that ended well before the length it was probed to hold
   * (cut short since, or a length libav estimated): said, where
   * "finished" alone told nothing (QA: a 60 s WAV truncated to 1 s while
   * it was read) */
  double read_s = (double)atomic_load(&a->frames) / sc->rate;
  /* and its header's length against what was there, as apply says it
   * (QA: a WAV cut while read said only where it ended) */
  char said[2 * PATH_MAX + 200] = "";
  if (rc == 0)
    apply_cut_short_said(said, sizeof said, &a->res, sc->input, sc->output);
  file_end(a, rc, a->res.stopped, wrote, read_s, said);
  return NULL;
}

/* A video frame: a kernel handed over is taken first; timed, counted;
 * with realtime, held until its time (t, from the first frame's) comes. */
static cf_status video_process(void *user, cf_engine *e, const cf_frame *in,
                               cf_frame *out, double t)
{
  cfd_audio *a = user;
  if (atomic_load_explicit(&a->frames, memory_order_relaxed) == 0)
    a->t_first = t;
  a->t_last = t;
  pace(a, a->t0 + 1e6 * (t - a->t_first));
  double t0 = now_us();
  uint64_t done = atomic_load_explicit(&a->frames, memory_order_relaxed);
  cf_kernel2d *k = atomic_exchange(&a->pending2d, NULL);
  if (k) {
    double t1 = now_us();
    cf_status s = cf_engine_set_kernel2d(e, k);
    atomic_store(&a->swap_us, (float)(now_us() - t1));
    if (s == CF_OK) {
      atomic_store(&a->swap_frame, done);
      atomic_fetch_add(&a->swaps, 1);
    } else {
      atomic_fetch_add(&a->errors, 1);
      atomic_store(&a->last_error, (int)s);
    }
    cf_kernel2d_free(k);
  }
  cf_status s = cf_engine_process_frame(e, in, out);
  if (s != CF_OK) {
    atomic_fetch_add(&a->errors, 1);
    atomic_store(&a->last_error, (int)s);
  }
  atomic_store_explicit(&a->frames, done + 1, memory_order_relaxed);
  atomic_store_explicit(&a->backend, (int)cf_engine_backend(e),
                        memory_order_relaxed);
  uint64_t i = atomic_fetch_add_explicit(&a->periods, 1, memory_order_relaxed);
  atomic_store_explicit(&a->proc_us[i % RING], (float)(now_us() - t0),
                        memory_order_relaxed);
  atomic_store_explicit(&a->proc_n, i + 1, memory_order_release);
  return s;
}

static gpointer video_thread(gpointer user)
{
  cfd_audio *a = user;
  const cfd_stream_conf *sc = a->sc;
  apply_opts o;
  file_opts(a, &o);
  o.video = true;
  video_config(sc, &o.vcfg);
  apply_vhooks h = {.user = a,
                    .stop = file_stop,
                    .process_frame = video_process,
                    .engine = a->e,
                    .width = sc->width,
                    .height = sc->height,
                    .format = sc->pixfmt};
  apply_capture(a->error, sizeof a->error);
  int rc = apply_video(&o, a->tmp, a->k2d, NULL, &h, &a->vres);
  apply_capture(NULL, 0);
  char wrote[2 * PATH_MAX + 640];
  size_t w = 0;
  w += (size_t)snprintf(wrote, sizeof wrote, "%lld frames",
                        (long long)a->vres.frames);
  /* what apply says in notes, said here (its notes are off for hooks) */
  if (a->vres.dropped && w < sizeof wrote)
    w += (size_t)snprintf(wrote + w, sizeof wrote - w,
                          ", %lld dropped (the frame rate rose past the "
                          "output's)",
                          (long long)a->vres.dropped);
  if (a->vres.shown[0] && w < sizeof wrote)
    w += (size_t)snprintf(wrote + w, sizeof wrote - w,
                          ", the picture %s as shown", a->vres.shown);
  if (a->vres.corrupt && w < sizeof wrote)
    w += (size_t)snprintf(wrote + w, sizeof wrote - w,
                          ", %u damaged input packet(s) skipped",
                          a->vres.corrupt);
  /* where the input ended well before the length it was probed to hold,
   * as for sound (the last frame's start: a frame short at most) */
  double read_s = atomic_load(&a->frames) ? a->t_last - a->t_first : 0.0;
  /* and a YUV4MPEG2 cut inside a frame, as apply says it */
  char said[2 * PATH_MAX + 200] = "";
  if (rc == 0)
    apply_y4m_cut_said(said, sizeof said, &a->vres, sc->input, sc->output);
  file_end(a, rc, a->vres.stopped, wrote, read_s, said);
  return NULL;
}

char *cfd_file_output_kept(const cfd_stream_conf *sc)
{
  if (sc->overwrite || strstr(sc->output, "://"))
    return NULL;
  const char *out = cf_av_local(sc->output);
  struct stat st;
  if (stat(out, &st) == 0)
    return S_ISREG(st.st_mode) ? g_strdup_printf("%s exists (overwrite = "
                                                 "false keeps it)",
                                                 sc->output)
                               : NULL; /* written in place (a FIFO) */
  int e = errno;
  /* a symbolic link to a missing file: the commit's link() fails on
   * it, which was said after the whole run (QA) */
  if (lstat(out, &st) == 0)
    return e == ENOENT
               ? g_strdup_printf("%s exists (a symbolic link to a missing "
                                 "file; overwrite = false keeps it)",
                                 sc->output)
               : g_strdup_printf("%s exists (a symbolic link: %s; "
                                 "overwrite = false keeps it)",
                                 sc->output, g_strerror(e));
  return NULL;
}

/* Check the output, choose its temporary name, start the thread. */
static bool file_start(cfd_audio *a, GError **err)
{
  const cfd_stream_conf *sc = a->sc;
  char *kept = cfd_file_output_kept(sc);
  if (kept) {
    g_set_error(err, CFD_ERROR, 0, "%s", kept);
    g_free(kept);
    return false;
  }
  apply_opts o;
  memset(&o, 0, sizeof o);
  o.in_path = sc->input;
  o.out_path = sc->output;
  o.overwrite = true;
  char msg[512];
  apply_capture(msg, sizeof msg);
  int rc = apply_choose_target(&o, &a->tmp);
  apply_capture(NULL, 0);
  if (rc) {
    g_set_error(err, CFD_ERROR, 0, "%s", msg);
    return false;
  }
  a->t0 = now_us(); /* before the thread: status reads it */
  a->thread = g_thread_try_new(sc->name, sc->video ? video_thread : file_thread,
                               a, err);
  return a->thread != NULL;
}

#else

void cfd_file_probes_cancel(void)
{
}

bool cfd_file_available(const char **why)
{
  *why = "this cudafilterd was built without libav (type=file); a "
         "type=pipeline stream can read and write files through GStreamer";
  return false;
}

bool cfd_file_probe(const char *path, int stream, unsigned *rate,
                    unsigned *channels, double *seconds, GError **err)
{
  (void)path;
  (void)stream;
  (void)rate;
  (void)channels;
  (void)seconds;
  g_set_error(err, CFD_ERROR, 0, "built without libav");
  return false;
}
bool cfd_file_vprobe(const char *path, unsigned *width, unsigned *height,
                     cf_pixel_format *fmt, double *seconds, GError **err)
{
  (void)path;
  (void)width;
  (void)height;
  (void)fmt;
  (void)seconds;
  g_set_error(err, CFD_ERROR, 0, "built without libav");
  return false;
}
bool cfd_file_check_output(const cfd_stream_conf *sc, GError **err)
{
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without libav");
  return false;
}
char *cfd_file_output_kept(const cfd_stream_conf *sc)
{
  (void)sc;
  return NULL;
}

#endif /* CFD_HAVE_LIBAV */

bool cfd_file_input_unchanged(const cfd_stream_conf *sc, GError **err)
{
  return input_unchanged(sc, err);
}

cfd_stream_conf *cfd_stream_conf_copy(const cfd_stream_conf *sc)
{
  return conf_copy(sc);
}

static cfd_audio *audio_start(const cfd_stream_conf *sc, bool probed,
                              GError **err)
{
  /* tests only: CF_TEST_AUDIO_START_GATE_<NAME>, a named pipe read to
   * its end here, before stream NAME's engine is made (an FFT plan, a
   * CUDA context: seconds for a long kernel), as long as the test wants */
  char *gate = g_strdup_printf("CF_TEST_AUDIO_START_GATE_%s", sc->name);
  cfd_test_gate(gate);
  g_free(gate);
  bool file = sc->type == CFD_FILE;
#ifndef CFD_HAVE_PORTAUDIO
  if (!file) {
    g_set_error(err, CFD_ERROR, 0, "built without PortAudio");
    return NULL;
  }
#else
  if (!file && !pa_ref(err))
    return NULL;
#endif
#ifndef CFD_HAVE_LIBAV
  if (file) {
    g_set_error(err, CFD_ERROR, 0, "built without libav");
    return NULL;
  }
#endif
  cfd_audio *a = g_new0(cfd_audio, 1);
  a->file = file;
  a->sc = conf_copy(sc);
  if (sc->video) {
    /* the engine for the input as the config's probe found it (the
     * thread checks the file still is): kernel changes are checked and
     * planned against it here, not at the frame that takes them */
    bool ok = false;
    cf_video_config cfg;
    video_config(sc, &cfg);
    if (!probed && !input_unchanged(sc, err)) {
      /* err says how it changed */
    } else if (cf_kernel2d_copy(sc->kernel2d, &a->k2d) != CF_OK)
      g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
    else if (cf_engine_new_video(&cfg, a->k2d, &a->e) != CF_OK)
      g_set_error(err, CFD_ERROR, 0, "engine: %s", cf_last_error());
#ifdef CFD_HAVE_LIBAV
    else {
      atomic_store(&a->backend, (int)cf_engine_backend(a->e));
      ok = file_start(a, err);
    }
#endif
    if (ok)
      return a;
    cfd_audio_stop(a);
    return NULL;
  }
  if (file && !probed && !input_unchanged(sc, err))
    goto fail;
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = sc->channels;
  cfg.block_size = sc->block;
  cfg.pipeline_depth = sc->pipeline_depth;
  cfg.backend = sc->backend;
  cfg.device_id = sc->device_id;
  cfg.algorithm = sc->algorithm;
  cfg.threads = sc->threads;
  cf_status s = cf_engine_new_audio(&cfg, sc->kernel, &a->e);
  if (s != CF_OK) {
    g_set_error(err, CFD_ERROR, 0, "engine: %s", cf_last_error());
    goto fail;
  }
  a->out_channels = cf_engine_out_channels(a->e);
  a->routing = cf_kernel_routing(sc->kernel);
  a->silence = g_new0(float, (size_t)sc->block * sc->channels);
  a->budget_us = 1e6 * sc->block / sc->rate;
  a->limit = (uint64_t)llround(sc->duration * sc->rate);
  a->latency = cf_engine_latency(a->e);
  atomic_store(&a->backend, (int)cf_engine_backend(a->e));
  bool ok = false;
#ifdef CFD_HAVE_LIBAV
  if (file)
    ok = file_start(a, err);
#endif
#ifdef CFD_HAVE_PORTAUDIO
  if (!file)
    ok = pa_start(a, err);
#endif
  if (ok)
    return a;
fail:
  cfd_audio_stop(a);
  return NULL;
}

cfd_audio *cfd_audio_start(const cfd_stream_conf *sc, GError **err)
{
  return audio_start(sc, false, err);
}

cfd_audio *cfd_audio_start_probed(const cfd_stream_conf *sc, GError **err)
{
  return audio_start(sc, true, err);
}

bool cfd_audio_ended(cfd_audio *a)
{
  bool failed;
  return cfd_audio_ended_how(a, &failed);
}

bool cfd_audio_ended_how(cfd_audio *a, bool *failed)
{
  if (a->file) {
    int st = atomic_load(&a->state);
    *failed = st == FILE_FAILED;
    return st != FILE_RUNNING;
  }
  bool ended = atomic_load(&a->finished);
  /* the device stream stops by itself only at `duration`, or when the
   * device fails (gone, unplugged) */
  *failed = ended && !(a->limit && atomic_load(&a->frames) >= a->limit);
  return ended;
}

/* Tests only: CF_TEST_STOP_GATE, a path that, once it exists (a named
 * pipe), is read to its end before a stream is stopped (as a pipeline's
 * stop reads it): the stop (Pa_StopStream playing what is queued, a file
 * stream's output finished) as slow as the test wants. */
static void stop_gate(void)
{
  cfd_test_gate("CF_TEST_STOP_GATE");
}

void cfd_audio_stop(cfd_audio *a)
{
  if (!a)
    return;
  stop_gate();
#ifdef CFD_HAVE_PORTAUDIO
  if (a->pa) {
    /* Pa_StopStream plays what is queued; failing, closing anyway, but
     * said: the end of the output may not have played (a device gone) */
    GError *e = NULL;
    g_mutex_lock(&pa_calls);
    if (Pa_IsStreamStopped(a->pa) == 0 &&
        !pa_ok(Pa_StopStream(a->pa), "stopping the stream", &e))
      fprintf(stderr, "cudafilterd: stream %s: %s\n", a->sc->name, e->message);
    g_clear_error(&e);
    if (!pa_ok(Pa_CloseStream(a->pa), "closing the stream", &e))
      fprintf(stderr, "cudafilterd: stream %s: %s\n", a->sc->name, e->message);
    g_mutex_unlock(&pa_calls);
    g_clear_error(&e);
  }
#endif
  if (a->thread) { /* the output is finished with what was read */
    atomic_store(&a->stop, true);
    /* an output that takes nothing (a network peer that stopped
     * reading) is given up after STOP_GRACE s without a packet: the
     * daemon must stop. One that takes packets is waited for, however
     * slow its encoder's flush (x264's lookahead at 4K took 7 s, and
     * the whole output was lost when a fixed 3 s ran out). */
    double since = now_us();
    while (atomic_load(&a->state) == FILE_RUNNING) {
      double w = atomic_load(&a->wrote_us);
      if (now_us() - (w > since ? w : since) >= STOP_GRACE * 1e6)
        break;
      g_usleep(10000);
    }
    atomic_store(&a->abort, true);
    g_thread_join(a->thread);
  }
  cf_swap_prep_free(atomic_exchange(&a->prep, NULL));
  cf_swap_prep_free(atomic_exchange(&a->made, NULL));
  cf_kernel2d_free(atomic_exchange(&a->pending2d, NULL));
  cf_kernel2d_free(a->k2d);
  cf_engine_free(a->e);
  g_free(a->silence);
  g_free(a->tmp);
  bool file = a->file;
  cfd_stream_conf_free(a->sc);
  g_free(a);
#ifdef CFD_HAVE_PORTAUDIO
  if (!file)
    pa_unref();
#else
  (void)file;
#endif
}

void cfd_audio_discard(cfd_audio *a)
{
  if (a)
    atomic_store(&a->discard, true);
  cfd_audio_stop(a);
}

/* A file stream's end of input, in its status line: whether its input
 * was read to its end (input-ended), and once its run is over, whether
 * its header states more than was there (cut-short, as the finished
 * line's sentence says it); for sound the frames read (input-frames)
 * and, cut short, the frames (or the bytes, where its sound is not
 * counted in frames) its header states against those there. */
static void file_input_status(cfd_audio *a, file_state st, GString *out)
{
  g_string_append_printf(out, " input-ended=%s",
                         st == FILE_FINISHED ? "true" : "false");
#ifdef CFD_HAVE_LIBAV
  if (st != FILE_FINISHED && st != FILE_STOPPED)
    return;
  if (a->sc->video) {
    g_string_append_printf(
        out, " cut-short=%s",
        apply_y4m_cut_said(NULL, 0, &a->vres, "", "") ? "true" : "false");
    return;
  }
  bool cut = apply_cut_short_said(NULL, 0, &a->res, "", "") > 0;
  g_string_append_printf(out, " input-frames=%" G_GINT64_FORMAT " cut-short=%s",
                         (gint64)a->res.frames_in, cut ? "true" : "false");
  if (cut && a->res.stated > a->res.frames_in)
    g_string_append_printf(out, " stated-frames=%" G_GINT64_FORMAT,
                           (gint64)a->res.stated);
  else if (cut)
    g_string_append_printf(out,
                           " stated-bytes=%" G_GINT64_FORMAT
                           " held-bytes=%" G_GINT64_FORMAT,
                           (gint64)a->res.stated_bytes,
                           (gint64)a->res.held_bytes);
#endif
}

/* A video file stream's status line. */
static void video_status(cfd_audio *a, GString *out, double mean, double p50,
                         double p99, double max)
{
  const cfd_stream_conf *sc = a->sc;
  file_state st = (file_state)atomic_load(&a->state);
  uint64_t n = atomic_load(&a->frames);
  double el = st == FILE_RUNNING ? (now_us() - a->t0) * 1e-6 : a->wall;
  int err = atomic_load(&a->last_error);
  char *in = cfd_quoted(sc->input), *outp = cfd_quoted(sc->output);
  char *kern = sc->kernel2d_file
                   ? cfd_quoted(sc->kernel2d_file)
                   : g_strdup_printf("preset:%s", sc->preset_name);
  g_string_append_printf(
      out,
      "state=%s backend=%s input=%s output=%s size=%ux%u pixel-format=%s "
      "frames=%" G_GUINT64_FORMAT " length=%.3f fps=%.1f realtime=%s "
      "errors=%" G_GUINT64_FORMAT
      " proc-us-mean=%.1f proc-us-p50=%.1f proc-us-p99=%.1f proc-us-max=%.1f"
      " swaps=%" G_GUINT64_FORMAT " last-swap-frame=%" G_GUINT64_FORMAT
      " last-swap-us=%.1f kernel=%s",
      file_state_names[st],
      cf_backend_name((cf_backend)atomic_load(&a->backend)), in, outp,
      sc->width, sc->height, cf_pixel_format_name(sc->pixfmt), (guint64)n,
      sc->seconds, el > 0 ? (double)n / el : 0.0,
      sc->realtime ? "true" : "false", (guint64)atomic_load(&a->errors), mean,
      p50, p99, max, (guint64)atomic_load(&a->swaps),
      (guint64)atomic_load(&a->swap_frame), (double)atomic_load(&a->swap_us),
      kern);
  g_free(in);
  g_free(outp);
  g_free(kern);
#ifdef CFD_HAVE_LIBAV
  if (st == FILE_FINISHED || st == FILE_STOPPED)
    g_string_append_printf(out,
                           " written-frames=%" G_GINT64_FORMAT
                           " codec=%s damaged=%u dropped=%" G_GINT64_FORMAT,
                           (gint64)a->vres.frames, a->vres.codec,
                           a->vres.corrupt, (gint64)a->vres.dropped);
#endif
  file_input_status(a, st, out);
  if (st == FILE_FAILED) {
    char *e = cfd_quoted(a->error);
    g_string_append_printf(out, " error=%s", e);
    g_free(e);
  }
  if (err)
    g_string_append_printf(out, " last-error=%s",
                           cf_status_name((cf_status)err));
}

static void file_status(cfd_audio *a, GString *out, double mean, double p50,
                        double p99, double max)
{
  const cfd_stream_conf *sc = a->sc;
  if (sc->video) {
    video_status(a, out, mean, p50, p99, max);
    return;
  }
  file_state st = (file_state)atomic_load(&a->state);
  double secs = (double)atomic_load(&a->frames) / sc->rate;
  double el = st == FILE_RUNNING ? (now_us() - a->t0) * 1e-6 : a->wall;
  int err = atomic_load(&a->last_error);
  char *in = cfd_quoted(sc->input), *outp = cfd_quoted(sc->output);
  char *kern = cfd_quoted(sc->kernel_file ? sc->kernel_file : "(taps)");
  g_string_append_printf(
      out,
      "state=%s backend=%s input=%s output=%s rate=%u channels=%u->%u "
      "block=%u pipeline-depth=%u latency-frames=%zu frames=%" G_GUINT64_FORMAT
      " seconds=%.3f length=%.3f speed=%.1f realtime=%s "
      "blocks=%" G_GUINT64_FORMAT " errors=%" G_GUINT64_FORMAT
      " proc-us-mean=%.1f proc-us-p50=%.1f "
      "proc-us-p99=%.1f proc-us-max=%.1f swaps=%" G_GUINT64_FORMAT
      " last-swap-frame=%" G_GUINT64_FORMAT " last-swap-us=%.1f"
      " kernel=%s gain=%g crossfade=%g routing=%s",
      file_state_names[st],
      cf_backend_name((cf_backend)atomic_load(&a->backend)), in, outp, sc->rate,
      sc->channels, a->out_channels, sc->block, sc->pipeline_depth, a->latency,
      (guint64)atomic_load(&a->frames), secs, sc->seconds,
      el > 0 ? secs / el : 0.0, sc->realtime ? "true" : "false",
      (guint64)atomic_load(&a->periods), (guint64)atomic_load(&a->errors), mean,
      p50, p99, max, (guint64)atomic_load(&a->swaps),
      (guint64)atomic_load(&a->swap_frame), (double)atomic_load(&a->swap_us),
      kern, sc->gain_db, sc->crossfade, cf_routing_name(a->routing));
  g_free(in);
  g_free(outp);
  g_free(kern);
#ifdef CFD_HAVE_LIBAV
  if (st == FILE_FINISHED || st == FILE_STOPPED)
    g_string_append_printf(
        out,
        " written-frames=%" G_GINT64_FORMAT " clipped=%" G_GUINT64_FORMAT
        " peak-dbfs=%.2f codec=%s damaged=%u",
        (gint64)a->res.frames_out, (guint64)a->res.clipped,
        a->res.peak > 0 ? 20 * log10(a->res.peak) : -999.0, a->res.codec,
        a->res.corrupt);
#endif
  file_input_status(a, st, out);
  if (st == FILE_FAILED) {
    char *e = cfd_quoted(a->error);
    g_string_append_printf(out, " error=%s", e);
    g_free(e);
  }
  if (err)
    g_string_append_printf(out, " last-error=%s",
                           cf_status_name((cf_status)err));
}

void cfd_audio_status(cfd_audio *a, GString *out)
{
  uint64_t n = atomic_load_explicit(&a->proc_n, memory_order_acquire);
  size_t m = n < RING ? (size_t)n : RING;
  float *v = g_new(float, m ? m : 1);
  for (size_t i = 0; i < m; i++)
    v[i] = atomic_load_explicit(&a->proc_us[i], memory_order_relaxed);
  double mean, p50, p99, max;
  cfd_percentiles(v, m, &mean, &p50, &p99, &max);
  g_free(v);
  int err = atomic_load(&a->last_error);
  if (a->file) {
    file_status(a, out, mean, p50, p99, max);
    return;
  }
#ifdef CFD_HAVE_PORTAUDIO
  const PaStreamInfo *info = Pa_GetStreamInfo(a->pa);
#else
  const struct {
    double inputLatency, outputLatency;
  } *info = NULL;
#endif
  char *kern = cfd_quoted(a->sc->kernel_file ? a->sc->kernel_file : "(taps)");
  g_string_append_printf(
      out,
      "state=%s backend=%s rate=%u channels=%u->%u block=%u "
      "pipeline-depth=%u latency-frames=%zu device-latency-ms=%.1f/%.1f "
      "frames=%" G_GUINT64_FORMAT " periods=%" G_GUINT64_FORMAT
      " xruns=%" G_GUINT64_FORMAT " errors=%" G_GUINT64_FORMAT
      " proc-us-mean=%.1f proc-us-p50=%.1f proc-us-p99=%.1f "
      "proc-us-max=%.1f budget-us=%.1f "
      "swaps=%" G_GUINT64_FORMAT " last-swap-frame=%" G_GUINT64_FORMAT
      " last-swap-us=%.1f"
      " kernel=%s gain=%g crossfade=%g routing=%s",
      atomic_load(&a->finished) ? "finished" : "running",
      cf_backend_name((cf_backend)atomic_load(&a->backend)), a->sc->rate,
      a->sc->channels, a->out_channels, a->sc->block, a->sc->pipeline_depth,
      a->latency, info ? info->inputLatency * 1e3 : 0.0,
      info ? info->outputLatency * 1e3 : 0.0, (guint64)atomic_load(&a->frames),
      (guint64)atomic_load(&a->periods), (guint64)atomic_load(&a->xruns),
      (guint64)atomic_load(&a->errors), mean, p50, p99, max, a->budget_us,
      (guint64)atomic_load(&a->swaps), (guint64)atomic_load(&a->swap_frame),
      (double)atomic_load(&a->swap_us), kern, a->sc->gain_db, a->sc->crossfade,
      cf_routing_name(a->routing));
  g_free(kern);
  if (err)
    g_string_append_printf(out, " last-error=%s",
                           cf_status_name((cf_status)err));
}

/* A file stream's thread takes a change handed over at its next block
 * (frame): one that came after its last block would never be taken, yet
 * be reported made. Wait (2 s at most: a stream that slow takes it later)
 * until the thread takes it or ends: true if it ended with the change
 * still there, for the caller to take back. */
static bool file_ended_before(cfd_audio *a, bool video)
{
  for (int i = 0; i < 2000; i++) {
    if (!(video ? atomic_load(&a->pending2d) != NULL
                : atomic_load(&a->prep) != NULL))
      return false;
    if (cfd_audio_ended(a))
      return true;
    g_usleep(1000);
  }
  return false;
}

static void not_taken(cfd_audio *a, GError **err)
{
  g_set_error(err, CFD_ERROR, 0,
              "the file stream ended (%s) before its next block took the "
              "change, which is not made; `restart` (or a reload with a new "
              "kernel) runs it again",
              file_state_names[atomic_load(&a->state)]);
}

/* A video file stream takes k at its next frame (replacing one not taken
 * yet); ownership passes. */
static bool video_handover(cfd_audio *a, cf_kernel2d *k, GError **err)
{
  if (cfd_audio_ended(a)) {
    g_set_error(err, CFD_ERROR, 0,
                "the file stream has ended (%s); `restart` (or a reload "
                "with a new kernel) runs it again",
                file_state_names[atomic_load(&a->state)]);
    cf_kernel2d_free(k);
    return false;
  }
  /* refused here (a kernel the configured algorithm cannot run), not at
   * the frame; the frame then finds its FFT plan made */
  if (cf_engine_prepare_kernel2d(a->e, k) != CF_OK) {
    g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
    cf_kernel2d_free(k);
    return false;
  }
  cf_kernel2d_free(atomic_exchange(&a->pending2d, k));
  cf_kernel2d *back = file_ended_before(a, true)
                          ? atomic_exchange(&a->pending2d, NULL)
                          : NULL;
  if (back) { /* else it was taken just before the end */
    cf_kernel2d_free(back);
    not_taken(a, err);
    return false;
  }
  return true;
}

/* Whether kernel k (its inputs checked when it was built) makes the
 * running stream's output channels: a device opened, an output file's
 * stream written with that many cannot take another count (the engine
 * refuses it too, naming neither the routing nor why) */
static bool outputs_fit(const cfd_audio *a, const cf_kernel *k, GError **err)
{
  cf_routing r = cf_kernel_routing(k);
  unsigned outs =
      r == CF_ROUTING_MATRIX ? cf_kernel_outputs(k) : a->sc->channels;
  if (outs == a->out_channels)
    return true;
  g_set_error(err, CFD_ERROR, 0,
              "the new kernel set (%s, %u x %u) makes %u output channel%s, "
              "but the running stream writes %u: its %s cannot change its "
              "channel count while it runs",
              cf_routing_name(r), cf_kernel_outputs(k), cf_kernel_inputs(k),
              outs, outs == 1 ? "" : "s", a->out_channels,
              a->file ? "output file" : "output device");
  return false;
}

bool cfd_audio_swap(cfd_audio *a, cf_kernel *k, double crossfade, GError **err)
{
  if (a->file && cfd_audio_ended(a)) {
    g_set_error(err, CFD_ERROR, 0,
                "the file stream has ended (%s); `restart` (or a "
                "reload with a new kernel) runs it again",
                file_state_names[atomic_load(&a->state)]);
    cf_kernel_free(k);
    return false;
  }
  /* refusals (a kernel set that does not fit the stream) come here, not
   * in the callback; the plans are measured in this thread */
  if (!outputs_fit(a, k, err)) {
    cf_kernel_free(k);
    return false;
  }
  if (cf_engine_prepare_kernel(a->e, k) != CF_OK) {
    g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
    cf_kernel_free(k);
    return false;
  }
  cf_swap_prep_free(atomic_exchange(&a->made, NULL));
  cf_swap_prep *p = NULL;
  if (cf_engine_prepare_swap(a->e, k, &p) != CF_OK) {
    g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
    cf_kernel_free(k);
    return false;
  }
  cf_routing routing = cf_kernel_routing(k);
  cf_kernel_free(k);
  atomic_store(&a->pending_crossfade, crossfade);
  /* a swap the callback has not taken yet is replaced */
  cf_swap_prep_free(atomic_exchange(&a->prep, p));
  cf_swap_prep *back = a->file && file_ended_before(a, false)
                           ? atomic_exchange(&a->prep, NULL)
                           : NULL;
  if (back) {
    cf_swap_prep_free(back);
    not_taken(a, err);
    return false;
  }
  a->routing = routing;
  return true;
}

bool cfd_audio_outputs_fit(const cfd_audio *a, const cfd_stream_conf *sc,
                           GError **err)
{
  return a->sc->video || outputs_fit(a, sc->kernel, err);
}

bool cfd_audio_kernel_fits(cfd_audio *a, const cfd_stream_conf *sc,
                           GError **err)
{
  if (!cfd_audio_outputs_fit(a, sc, err))
    return false;
  cf_status s = a->sc->video ? cf_engine_prepare_kernel2d(a->e, sc->kernel2d)
                             : cf_engine_prepare_kernel(a->e, sc->kernel);
  if (s != CF_OK)
    g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
  return s == CF_OK;
}

bool cfd_audio_retune(cfd_audio *a, const cfd_stream_conf *was,
                      cfd_stream_conf *sc, bool swap, GError **err)
{
  /* the section's kernel as it was: what a `set` made of it stays, in
   * the stream and in what status says of it (QA: status went back to
   * the file's gain and kernel while the stream kept the live ones) */
  if (!swap) {
    if (!a->sc->video && sc->crossfade != was->crossfade)
      a->sc->crossfade = sc->crossfade;
    return true;
  }
  if (a->sc->video) {
    cf_kernel2d *k2 = NULL;
    if (cf_kernel2d_copy(sc->kernel2d, &k2) != CF_OK) {
      g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
      return false;
    }
    if (!video_handover(a, k2, err))
      return false;
    cfd_stream_conf *own = a->sc;
    g_free(own->kernel2d_file);
    g_free(own->preset_name);
    own->kernel2d_file = g_strdup(sc->kernel2d_file);
    own->preset_name = g_strdup(sc->preset_name);
    own->size = sc->size;
    own->sigma = sc->sigma;
    return true;
  }
  cf_kernel *k = NULL;
  if (cf_kernel_copy(sc->kernel, &k) != CF_OK) {
    g_set_error(err, CFD_ERROR, 0, "%s", cf_last_error());
    return false;
  }
  if (!cfd_audio_swap(a, k, sc->crossfade, err))
    return false;
  cfd_stream_conf *own = a->sc;
  g_free(own->kernel_file);
  g_free(own->kernel_taps);
  own->kernel_file = g_strdup(sc->kernel_file);
  own->kernel_taps = g_memdup2(sc->kernel_taps, sc->kernel_len * sizeof(float));
  own->kernel_len = sc->kernel_len;
  own->gain_db = sc->gain_db;
  own->crossfade = sc->crossfade;
  own->routing = sc->routing;
  return true;
}

/* A live change of a kernel key (set, swap-kernel): what to build, from
 * the stream's keys as they are when it is asked; the kernel built in
 * any thread; taken in the loop. */
struct cfd_change {
  bool video;
  char *file;  /* audio: kernel-file, or NULL (taps); video: kernel2d */
  float *taps; /* audio: kernel */
  size_t len;
  unsigned rate, channels; /* audio: the stream's, in */
  int routing;             /* audio: as cfd_stream_conf's */
  bool file_stream;
  double gain, crossfade;
  char *preset; /* video */
  unsigned size;
  double sigma;
  cf_kernel *k; /* built */
  cf_kernel2d *k2;
  GError *error; /* why not */
};

void cfd_change_free(cfd_change *ch)
{
  if (!ch)
    return;
  g_free(ch->file);
  g_free(ch->taps);
  g_free(ch->preset);
  cf_kernel_free(ch->k);
  cf_kernel2d_free(ch->k2);
  g_clear_error(&ch->error);
  g_free(ch);
}

void cfd_change_build(cfd_change *ch)
{
  if (ch->video)
    ch->k2 = cfd_kernel2d_build(ch->file, ch->preset, ch->size, ch->sigma,
                                &ch->error);
  else if ((ch->k = cfd_kernel_build(ch->file, ch->taps, ch->len, ch->rate,
                                     ch->gain, ch->routing, ch->channels,
                                     &ch->error)) &&
           !cfd_kernel_fits_input(ch->k, ch->channels, ch->file_stream,
                                  &ch->error)) {
    cf_kernel_free(ch->k);
    ch->k = NULL;
  }
}

/* Live keys of a video file stream: kernel2d, preset, size, sigma. */
static bool video_change(cfd_audio *a, const char *key, const char *value,
                         cfd_change **out, GError **err)
{
  cfd_stream_conf *sc = a->sc;
  char *file = g_strdup(sc->kernel2d_file);
  char *preset = g_strdup(sc->preset_name);
  unsigned size = sc->size;
  double sigma = sc->sigma;
  char *end;
  bool ok = true;
  if (!strcmp(key, "kernel2d")) {
    g_free(file);
    g_free(preset);
    file = g_strdup(value);
    preset = NULL;
  } else if (!strcmp(key, "preset")) { /* with its own size and sigma */
    g_free(file);
    g_free(preset);
    file = NULL;
    preset = g_strdup(value);
    size = 0;
    sigma = 0;
  } else if (!strcmp(key, "size")) {
    unsigned long v = strtoul(value, &end, 10);
    if (!*value || *end || value[0] == '-' || v > 1023) {
      g_set_error(err, CFD_ERROR, 0,
                  "size: '%s' is not a whole number in "
                  "0..1023 (0: the preset's own)",
                  value);
      ok = false;
    }
    size = (unsigned)v;
  } else if (!strcmp(key, "sigma")) {
    if (!cfd_parse_decimal(value, 0, 1e6, &sigma)) {
      g_set_error(err, CFD_ERROR, 0,
                  "sigma: '%s' is not a number in "
                  "0..1e6%s",
                  value, cfd_comma_hint(value));
      ok = false;
    }
  } else {
    g_set_error(err, CFD_ERROR, 0,
                "'%s' cannot change while the stream runs (kernel2d, "
                "preset, size and sigma can; reload for the rest)",
                key);
    ok = false;
  }
  if ((!strcmp(key, "size") || !strcmp(key, "sigma")) && ok && !preset) {
    g_set_error(err, CFD_ERROR, 0,
                "%s applies to a preset; this stream "
                "has kernel2d = %s",
                key, file);
    ok = false;
  }
  if (!ok) {
    g_free(file);
    g_free(preset);
    return false;
  }
  cfd_change *ch = g_new0(cfd_change, 1);
  ch->video = true;
  ch->file = file;
  ch->preset = preset;
  ch->size = size;
  ch->sigma = sigma;
  *out = ch;
  return true;
}

bool cfd_audio_change(cfd_audio *a, const char *key, const char *value,
                      double crossfade, cfd_change **out, GError **err)
{
  cfd_stream_conf *sc = a->sc;
  *out = NULL;
  if (sc->video)
    return video_change(a, key ? key : "kernel2d", value, out, err);
  if (!key) /* swap-kernel: its crossfade is this swap's alone */
    key = "kernel-file";
  else
    crossfade = -1;
  char *file = NULL;
  float *taps = NULL;
  size_t len = 0;
  double gain = sc->gain_db;
  int routing = sc->routing;
  if (!strcmp(key, "crossfade")) {
    /* decimal, as in the config (QA: 0x1 was taken as 1 s) */
    double x = 0;
    if (!cfd_parse_decimal(value, 0, 60, &x)) {
      g_set_error(err, CFD_ERROR, 0,
                  "crossfade: '%s' is not a number of "
                  "seconds in 0..60%s",
                  value, cfd_comma_hint(value));
      return false;
    }
    sc->crossfade = x;
    return true;
  }
  if (!strcmp(key, "gain")) {
    /* decimal, as in the config (QA: 0x10 was taken as 16 dB) */
    if (!cfd_parse_decimal(value, -CF_GAIN_DB_MAX, CF_GAIN_DB_MAX, &gain)) {
      g_set_error(err, CFD_ERROR, 0,
                  "gain: '%s' is not a number of dB in "
                  "%.15g..%.15g%s",
                  value, -CF_GAIN_DB_MAX, CF_GAIN_DB_MAX,
                  cfd_comma_hint(value));
      return false;
    }
  } else if (!strcmp(key, "routing")) {
    cf_routing r;
    if (cf_routing_from_string(value, &r) != CF_OK) {
      g_set_error(err, CFD_ERROR, 0,
                  "routing: '%s' is not shared, per-channel or matrix", value);
      return false;
    }
    routing = (int)r;
  } else if (!strcmp(key, "kernel-file")) {
    file = g_strdup(value);
  } else if (!strcmp(key, "kernel")) {
    if (!cfd_parse_taps(value, &taps, &len, err))
      return false;
  } else {
    g_set_error(err, CFD_ERROR, 0,
                "'%s' cannot change while the stream "
                "runs (kernel-file, kernel, gain, crossfade and routing "
                "can; reload for the rest)",
                key);
    return false;
  }
  if (!file && !taps) { /* gain, routing: the same kernel again */
    file = g_strdup(sc->kernel_file);
    taps = g_memdup2(sc->kernel_taps, sc->kernel_len * sizeof(float));
    len = sc->kernel_len;
  }
  cfd_change *ch = g_new0(cfd_change, 1);
  ch->file = file;
  ch->taps = taps;
  ch->len = len;
  ch->rate = sc->rate;
  ch->channels = sc->channels;
  ch->routing = routing;
  ch->file_stream = a->file;
  ch->gain = gain;
  ch->crossfade = crossfade >= 0 ? crossfade : sc->crossfade;
  *out = ch;
  return true;
}

bool cfd_audio_change_apply(cfd_audio *a, cfd_change *ch, GError **err)
{
  cfd_stream_conf *sc = a->sc;
  bool ok;
  if (ch->error) {
    g_propagate_error(err, ch->error);
    ch->error = NULL;
    ok = false;
  } else if (ch->video) {
    cf_kernel2d *k = ch->k2;
    ch->k2 = NULL;
    ok = video_handover(a, k, err);
    if (ok) {
      g_free(sc->kernel2d_file);
      g_free(sc->preset_name);
      sc->kernel2d_file = g_steal_pointer(&ch->file);
      sc->preset_name = g_steal_pointer(&ch->preset);
      sc->size = ch->size;
      sc->sigma = ch->sigma;
    }
  } else {
    cf_kernel *k = ch->k;
    ch->k = NULL;
    ok = cfd_audio_swap(a, k, ch->crossfade, err);
    if (ok) {
      g_free(sc->kernel_file);
      g_free(sc->kernel_taps);
      sc->kernel_file = g_steal_pointer(&ch->file);
      sc->kernel_taps = g_steal_pointer(&ch->taps);
      sc->kernel_len = ch->len;
      sc->gain_db = ch->gain;
      sc->routing = ch->routing;
    }
  }
  cfd_change_free(ch);
  return ok;
}

#else /* neither PortAudio nor libav */

bool cfd_audio_outputs_fit(const cfd_audio *a, const cfd_stream_conf *sc,
                           GError **err)
{
  (void)a;
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without PortAudio or libav");
  return false;
}
bool cfd_audio_kernel_fits(cfd_audio *a, const cfd_stream_conf *sc,
                           GError **err)
{
  (void)a;
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without PortAudio or libav");
  return false;
}
void cfd_audio_discard(cfd_audio *a)
{
  (void)a;
}
bool cfd_file_check_output(const cfd_stream_conf *sc, GError **err)
{
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without libav");
  return false;
}
char *cfd_file_output_kept(const cfd_stream_conf *sc)
{
  (void)sc;
  return NULL;
}

bool cfd_audio_retune(cfd_audio *a, const cfd_stream_conf *was,
                      cfd_stream_conf *sc, bool swap, GError **err)
{
  (void)a;
  (void)was;
  (void)sc;
  (void)swap;
  g_set_error(err, CFD_ERROR, 0, "built without PortAudio or libav");
  return false;
}

bool cfd_audio_available(const char **why)
{
  *why = "this cudafilterd was built without PortAudio (type=audio); "
         "a type=pipeline stream can use GStreamer's audio sources";
  return false;
}
bool cfd_file_available(const char **why)
{
  *why = "this cudafilterd was built without libav (type=file); a "
         "type=pipeline stream can read and write files through GStreamer";
  return false;
}
bool cfd_file_probe(const char *path, int stream, unsigned *rate,
                    unsigned *channels, double *seconds, GError **err)
{
  (void)path;
  (void)stream;
  (void)rate;
  (void)channels;
  (void)seconds;
  g_set_error(err, CFD_ERROR, 0, "built without libav");
  return false;
}
bool cfd_file_vprobe(const char *path, unsigned *width, unsigned *height,
                     cf_pixel_format *fmt, double *seconds, GError **err)
{
  (void)path;
  (void)width;
  (void)height;
  (void)fmt;
  (void)seconds;
  g_set_error(err, CFD_ERROR, 0, "built without libav");
  return false;
}
bool cfd_audio_ended(cfd_audio *a)
{
  (void)a;
  return true;
}
bool cfd_audio_ended_how(cfd_audio *a, bool *failed)
{
  (void)a;
  *failed = false;
  return true;
}
cfd_audio *cfd_audio_start(const cfd_stream_conf *sc, GError **err)
{
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without PortAudio or libav");
  return NULL;
}
cfd_audio *cfd_audio_start_probed(const cfd_stream_conf *sc, GError **err)
{
  return cfd_audio_start(sc, err);
}
bool cfd_file_input_unchanged(const cfd_stream_conf *sc, GError **err)
{
  (void)sc;
  g_set_error(err, CFD_ERROR, 0, "built without libav");
  return false;
}
void cfd_file_probes_cancel(void)
{
}
cfd_stream_conf *cfd_stream_conf_copy(const cfd_stream_conf *sc)
{
  cfd_stream_conf *c = g_new0(cfd_stream_conf, 1);
  c->name = g_strdup(sc->name);
  return c;
}
void cfd_audio_stop(cfd_audio *a)
{
  (void)a;
}
void cfd_audio_status(cfd_audio *a, GString *out)
{
  (void)a;
  (void)out;
}
bool cfd_audio_swap(cfd_audio *a, cf_kernel *k, double crossfade, GError **err)
{
  (void)a;
  (void)crossfade;
  cf_kernel_free(k);
  g_set_error(err, CFD_ERROR, 0, "built without PortAudio or libav");
  return false;
}
bool cfd_audio_change(cfd_audio *a, const char *key, const char *value,
                      double crossfade, cfd_change **ch, GError **err)
{
  (void)a;
  (void)key;
  (void)value;
  (void)crossfade;
  *ch = NULL;
  g_set_error(err, CFD_ERROR, 0, "built without PortAudio or libav");
  return false;
}
void cfd_change_build(cfd_change *ch)
{
  (void)ch;
}
bool cfd_audio_change_apply(cfd_audio *a, cfd_change *ch, GError **err)
{
  (void)a;
  (void)ch;
  g_set_error(err, CFD_ERROR, 0, "built without PortAudio or libav");
  return false;
}
void cfd_change_free(cfd_change *ch)
{
  (void)ch;
}

#endif
