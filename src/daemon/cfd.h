/* cudafilterd: what the daemon's files share.
 *
 * config.c reads a config file into cfd_config (every value checked, every
 * kernel loaded), audio.c runs a PortAudio stream (callback -> engine ->
 * callback), pipeline.c a GStreamer pipeline, daemon.c owns the streams,
 * the control socket, reloads and signals. The daemon never touches CUDA:
 * the engine and the elements choose the backend. */
#ifndef CFD_H
#define CFD_H

#include <cudafilter/cudafilter.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/video.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CFD_ERROR (cfd_error_quark())
GQuark cfd_error_quark(void);

typedef enum cfd_type { CFD_AUDIO, CFD_PIPELINE, CFD_FILE } cfd_type;

/* What the daemon does when a stream ends (audio, pipeline). */
typedef enum cfd_restart {
  CFD_RESTART_NO,         /* it stays ended (status says why) */
  CFD_RESTART_ON_FAILURE, /* an error, a lost device: started again */
  CFD_RESTART_ALWAYS      /* also after its end (EOS, duration) */
} cfd_restart;

/* One [stream NAME] section, checked. */
typedef struct cfd_stream_conf {
  char *name;
  cfd_type type;
  /* The section's keys and values, sorted ("key=value\n"...), without the
   * kernel keys (kernel, kernel-file, gain, crossfade): on a reload, equal
   * `shape` means the running stream can take the new kernel live. */
  char *shape;
  size_t shape_keys; /* file: shape's length before the input's probe */
  /* audio and file */
  char *input, *output;    /* PortAudio device: name, part of one, index;
                              file: a path (made absolute) or a URL */
  unsigned rate, channels; /* frames per second, input channels (file:
                              the input's, read when the config loads) */
  unsigned block;          /* frames per callback (and the FFT block) */
  unsigned pipeline_depth; /* blocks in flight across callbacks (engine.h) */
  unsigned threads;
  int device_id;
  cf_backend backend;
  cf_algorithm algorithm;
  double latency;    /* PortAudio suggested latency, s; 0: low */
  double duration;   /* s of input, then the stream ends; 0: never */
  char *kernel_file; /* or NULL: kernel_taps */
  float *kernel_taps;
  size_t kernel_len;
  double gain_db;
  double crossfade;  /* s */
  int routing;       /* cf_routing the kernel is to have (matrix also reads
                        N per-channel kernels as an N/C x C matrix, as
                        apply --routing does); -1: the kernel file's own */
  cf_kernel *kernel; /* loaded at rate, gain applied, routed */
  /* file */
  double seconds;       /* the input's length as it announces it; 0 */
  char *stale_input;    /* why the input could not be probed on a reload
                           that took it as known (see cfd_config_load) */
  int stream;           /* the input\'s audio stream to filter; -1: the best */
  char *format, *codec; /* libav output format and encoder, or NULL */
  bool realtime;        /* paced at the input's rate */
  /* file, video (kernel2d or preset) */
  bool video;
  char *kernel2d_file, *preset_name; /* one of the two */
  unsigned size;                     /* preset size; 0: its default */
  double sigma;                      /* preset sigma; 0: its default */
  cf_border border;
  cf_algorithm2d algo2d;
  unsigned components;     /* CF_COMP_* mask */
  float cval, scale, bias; /* as cf_video_config */
  bool absolute;
  cf_kernel2d *kernel2d;  /* built when the config loads */
  unsigned width, height; /* the input's picture */
  cf_pixel_format pixfmt; /* ... in the format it is filtered in */
  bool overwrite;         /* replace an existing output */
  /* pipeline */
  char *pipeline; /* gst-launch-1.0 syntax */
  char *filter;   /* element that swap-kernel sets, or NULL */
  /* audio and pipeline */
  cfd_restart restart;
  double restart_delay; /* s after the end (and between tries) */
} cfd_stream_conf;

typedef struct cfd_config {
  char *path;
  char *socket;       /* NULL: the default path */
  GPtrArray *streams; /* cfd_stream_conf *, in file order */
} cfd_config;

/* What a file stream's input was probed to hold, for a reload: an input
 * that cannot be read now (a job's input deleted once filtered) is taken
 * as it was for a section whose keys did not change. */
typedef struct cfd_known_input {
  char *name, *keys; /* the section's keys: its shape before the probe */
  bool video;
  unsigned rate, channels, width, height;
  cf_pixel_format pixfmt;
  double seconds;
} cfd_known_input;

cfd_known_input *cfd_known_input_of(const cfd_stream_conf *sc);
void cfd_known_input_free(cfd_known_input *k);

/* Read and check `path`. Errors name the file, the section, the key and
 * what the value must be. known (cfd_known_input *, or NULL): the running
 * file streams' inputs; one of them that cannot be probed now is taken as
 * known, its stream's `stale_input` saying why. */
cfd_config *cfd_config_load(const char *path, const GPtrArray *known,
                            GError **err);
void cfd_config_free(cfd_config *c);
void cfd_stream_conf_free(cfd_stream_conf *sc);

/* The kernel for an audio stream: `file` (any format cf_kernel_load
 * reads, resampled to `rate`) or `taps`, scaled by gain_db, with
 * `routing` (cf_routing, or -1: as it is) on `channels` input channels:
 * matrix reads per-channel kernels as a matrix (cf_kernel_as_matrix, as
 * apply --routing and cudafir's routing do); a kernel of another routing
 * is refused. */
cf_kernel *cfd_kernel_build(const char *file, const float *taps, size_t len,
                            unsigned rate, double gain_db, int routing,
                            unsigned channels, GError **err);
/* Whether kernel k takes `channels` input channels; else err says why
 * (and, for per-channel kernels a matrix would take, that routing =
 * matrix reads them so). file: the count is a file stream's input's. */
bool cfd_kernel_fits_input(const cf_kernel *k, unsigned channels, bool file,
                           GError **err);

/* A 2D kernel: `file` (any format cf_kernel2d_load reads) or the
 * preset named `preset` (with size and sigma, 0: its defaults). */
cf_kernel2d *cfd_kernel2d_build(const char *file, const char *preset,
                                unsigned size, double sigma, GError **err);

/* Whether taps as the config writes them (kernel = ...) read as numbers
 * written with decimal commas, as text kernel files tell them: a lone
 * comma between digits, no point nor exponent, no run such as 1,2,1, and
 * taps also apart by spaces, or only two, the first 0 ("0,5" was the
 * taps 0 and 5); *err then says so. */
bool cfd_taps_decimal_commas(const char *s, GError **err);
/* A decimal number in lo..hi, the whole of v (a config's value, a live
 * change's): strtod also reads hex ("0x10" is 16), inf and nan, and an
 * underflow. False where v is not one. */
bool cfd_parse_decimal(const char *v, double lo, double hi, double *out);
/* After "'V' is not a number": where V has a comma, that a number takes a
 * point (a decimal comma, as German writes it; QA), else "". */
static inline const char *cfd_comma_hint(const char *v)
{
  return v && strchr(v, ',') ? " (write a decimal point: 0.5, not 0,5)" : "";
}
/* Parse "1, -0.5, 0.25" (commas and/or spaces); decimal commas refused. */
bool cfd_parse_taps(const char *s, float **taps, size_t *len, GError **err);

/* $XDG_RUNTIME_DIR/cudafilterd.sock, else
 * /tmp/cudafilterd-UID/cudafilterd.sock, in a folder of the user's alone
 * (cfd_private_folder). */
char *cfd_default_socket(void);
/* That /tmp fallback, whatever XDG_RUNTIME_DIR says. */
char *cfd_fallback_socket(void);
/* Where `sock` is the /tmp fallback (cfd_default_socket without
 * XDG_RUNTIME_DIR): its folder is made (with `make`, mode 0700) and must
 * be a folder (not a link) of this user's that no one else may write to
 * or read; else false with why. True for any other path, and without
 * `make` where the folder is not there yet. */
bool cfd_private_folder(const char *sock, bool make, GError **err);

/* A status value as it is, or in double quotes (with \" and \\) where
 * it holds a space, a quote, a backslash or nothing; g_free it. */
char *cfd_quoted(const char *s);
/* status lines ("NAME type=T key=value ...") as one line of JSON:
 * {"streams":[{"name":"NAME","type":"T","key":value,...},...]}; numbers
 * and true/false as such, the rest as strings. */
char *cfd_status_json(const char *lines);

/* mean, p50, p99 and max of n values (µs); zeros when n == 0. */
void cfd_percentiles(const float *v, size_t n, double *mean, double *p50,
                     double *p99, double *max);

/* Tests only: where the environment variable `env` names a path that
 * exists (a named pipe), read it to its end: the slow part it stands
 * before (a pipeline's build, stop, setter, checksum, kernel read; an
 * audio stream's stop) held as long as the test wants. */
void cfd_test_gate(const char *env);

/* ---- streams ---- */
typedef struct cfd_audio cfd_audio;
typedef struct cfd_pipeline cfd_pipeline;

/* Whether this build has the type (and why not). */
bool cfd_audio_available(const char **why);
bool cfd_file_available(const char **why);
/* A file's (or URL's) main audio stream (or stream `stream`, >= 0):
 * rate, channels, length in s. */
bool cfd_file_probe(const char *path, int stream, unsigned *rate,
                    unsigned *channels, double *seconds, GError **err);
/* Its main video stream: size, the format it is filtered in, length in
 * s. */
bool cfd_file_vprobe(const char *path, unsigned *width, unsigned *height,
                     cf_pixel_format *fmt, double *seconds, GError **err);
/* Whether sc's output can be written as its section asks (format,
 * codec), before the stream starts. */
bool cfd_file_check_output(const cfd_stream_conf *sc, GError **err);
/* Why `overwrite = false` keeps a file stream from writing its output
 * (something is there by that name), or NULL. */
char *cfd_file_output_kept(const cfd_stream_conf *sc);
bool cfd_pipeline_available(const char **why);
/* Whether sc's pipeline builds (every element there) and has its filter
 * element; nothing is started. */
bool cfd_pipeline_check(const cfd_stream_conf *sc, GError **err);

/* Start the stream sc describes (sc is copied where needed: the caller
 * keeps it): type=audio (PortAudio) or type=file (libav, in a thread of
 * its own; what goes wrong there shows in status). */
cfd_audio *cfd_audio_start(const cfd_stream_conf *sc, GError **err);
/* The same for a file stream whose input cfd_file_input_unchanged has
 * just found as the config's probe did (not probed again here). */
cfd_audio *cfd_audio_start_probed(const cfd_stream_conf *sc, GError **err);
/* Whether a file stream's input still has what the config's probe found
 * (err says how it changed, or why it cannot be read); up to 5 s for an
 * input that says nothing. Touches nothing but sc: any thread. */
bool cfd_file_input_unchanged(const cfd_stream_conf *sc, GError **err);
/* Probes under way (and to come) give up at once: the daemon stops. */
void cfd_file_probes_cancel(void);
/* A copy of sc without its kernels (its file names and taps kept), for
 * cfd_file_input_unchanged in another thread; cfd_stream_conf_free. */
cfd_stream_conf *cfd_stream_conf_copy(const cfd_stream_conf *sc);
/* Whether it has ended (file: finished, failed or stopped; audio: the
 * device stream stopped), and *failed whether by an error (a lost
 * device, an engine failure) rather than its end (duration, input). */
bool cfd_audio_ended(cfd_audio *a);
bool cfd_audio_ended_how(cfd_audio *a, bool *failed);
/* Let the buffered output play, close the devices, free. A file stream
 * still running ends where its input stands: the output is finished
 * with what was read. It takes as long as that (the output latency, or
 * more; an encoder's flush): in any thread, once nothing else touches a. */
void cfd_audio_stop(cfd_audio *a);
/* The same, but a file stream's output is dropped (its temporary file
 * removed, OUTPUT left as it was): a daemon that did not start. */
void cfd_audio_discard(cfd_audio *a);
/* key=value pairs on one line, no newline. */
void cfd_audio_status(cfd_audio *a, GString *out);
/* Take kernel k (ownership passes) with a crossfade of `crossfade` s at
 * the next callback; its FFT plans are made here, in the caller's
 * thread. */
bool cfd_audio_swap(cfd_audio *a, cf_kernel *k, double crossfade, GError **err);
/* The kernel keys of section sc, as a reload brings them where the
 * section before it was `was`: with `swap` (its kernel or gain changed)
 * its kernel is swapped in and the stream's keys become sc's; else the
 * live changes (set, swap-kernel) stay, in the stream and its status,
 * and only a crossfade the file changed is taken. */
bool cfd_audio_retune(cfd_audio *a, const cfd_stream_conf *was,
                      cfd_stream_conf *sc, bool swap,
                      GError **err);
/* Whether the kernel of section sc (a reload's) makes the running
 * stream's output channel count (a video stream's always does); if not,
 * why (a reload restarts such a stream). Nothing changes. */
bool cfd_audio_outputs_fit(const cfd_audio *a, const cfd_stream_conf *sc,
                           GError **err);
/* Whether the kernel of section sc (a reload's) fits the running
 * stream; its plans are made here. Nothing changes. */
bool cfd_audio_kernel_fits(cfd_audio *a, const cfd_stream_conf *sc,
                           GError **err);
/* A live change of a kernel key, in three steps so that a long kernel
 * (seconds to read and resample) holds no one up: cfd_audio_change
 * checks the value in the loop and says what to build, from the stream's
 * keys as they are then; cfd_change_build loads it, in any thread;
 * cfd_audio_change_apply hands it over, in the loop.
 *   key: kernel-file, kernel, gain, crossfade, routing (audio); kernel2d,
 *   preset, size, sigma (video); NULL: swap-kernel, value a file,
 *   crossfade this swap's in s (< 0: as set; ignored for a set). */
typedef struct cfd_change cfd_change;
/* False: refused (err), nothing changes. True with *ch NULL: done here
 * (crossfade); else *ch to build and apply (or free). */
bool cfd_audio_change(cfd_audio *a, const char *key, const char *value,
                      double crossfade, cfd_change **ch, GError **err);
/* Touches nothing but ch: any thread. */
void cfd_change_build(cfd_change *ch);
/* ch's kernel (or why it could not be built) to a, the stream ch was
 * asked of; its keys (and status) follow. Refused, nothing changes. ch
 * is freed. */
bool cfd_audio_change_apply(cfd_audio *a, cfd_change *ch, GError **err);
void cfd_change_free(cfd_change *ch);

cfd_pipeline *cfd_pipeline_start(const cfd_stream_conf *sc, GError **err);
/* The same in another thread (built and set playing: our elements load
 * their kernel files there, seconds for a big one), its bus not watched
 * yet: cfd_pipeline_watch, in the daemon's loop, then (the messages
 * posted meanwhile are kept for it). Nothing of the daemon's is touched. */
cfd_pipeline *cfd_pipeline_start_unwatched(const cfd_stream_conf *sc,
                                           GError **err);
void cfd_pipeline_watch(cfd_pipeline *p);
/* Its bus no longer watched (in the daemon's loop): from here nothing of
 * the loop's touches p, which cfd_pipeline_stop may stop in a thread. */
void cfd_pipeline_unwatch(cfd_pipeline *p);
/* Send EOS, wait up to 2 s for it to reach the sinks, then stop: in the
 * daemon's loop, or in any thread once p is unwatched (or never was). */
void cfd_pipeline_stop(cfd_pipeline *p);
void cfd_pipeline_status(cfd_pipeline *p, GString *out);
/* Whether the pipeline has stopped: *failed by an error, else EOS. */
bool cfd_pipeline_ended(cfd_pipeline *p, bool *failed);
/* A property set on one of our elements (set ..., swap-kernel): the
 * value is checked, and the element takes it in a thread
 * (cfd_pipeline_job_run: its setter prepares a new kernel, seconds for
 * a big one, and a kernel file is read first, on a slow disk or from a
 * named pipe longer; the loop, every other client, the log and SIGHUP
 * would wait), the answer made back in the loop
 * (cfd_pipeline_job_finish). */
typedef struct cfd_pipeline_job cfd_pipeline_job;
/* key "ELEMENT.PROPERTY" (or "PROPERTY" of the filter element). True
 * where it is made (another element's property), or (*job set) where
 * one of our elements is to take it: the rest is cfd_pipeline_job_run's. */
bool cfd_pipeline_set(cfd_pipeline *p, const char *key, const char *value,
                      cfd_pipeline_job **job, GError **err);
/* A reload: each of our elements whose kernel file's bytes changed since
 * the stream took it (started, set, swapped, reloaded) reads it again;
 * a line each in report. report NULL: the files are only noted as they
 * are (the stream took them just now). jobs (cfd_pipeline_job *), if not
 * NULL, takes instead a checksum of each file whose stamp changed since
 * it was noted (read whole: not in the daemon's loop), for
 * cfd_pipeline_job_run and then cfd_pipeline_sum_finish. */
void cfd_pipeline_reread(cfd_pipeline *p, GString *report, GPtrArray *jobs);
/* Which pipeline p is of all the daemon started (one stopped and
 * another started never share it), and which a checksum job is for. */
uint64_t cfd_pipeline_serial(const cfd_pipeline *p);
uint64_t cfd_pipeline_job_serial(const cfd_pipeline_job *j);
/* Back in the loop, a checksum job run for p (its serial the job's): the
 * file noted; where its bytes changed, a line in report and the
 * element's read of it again (a job, for after the stream's changes
 * asked before), else NULL. */
cfd_pipeline_job *cfd_pipeline_sum_finish(cfd_pipeline *p, cfd_pipeline_job *j,
                                          GString *report);
/* The filter element's kernel-file (and crossfade, for cudafir, when
 * crossfade >= 0). */
bool cfd_pipeline_swap(cfd_pipeline *p, const char *file, double crossfade,
                       cfd_pipeline_job **job, GError **err);
/* In a thread: the job's value (a file checked first) set on its
 * element (which holds a reference of its own: the stream may stop
 * meanwhile). Nothing of the daemon's is touched. */
void cfd_pipeline_job_run(cfd_pipeline_job *j);
/* Back in the loop, p the job's stream, still running: the element's
 * messages logged, its file noted for a reload; whether it took it (else
 * err says why, as a set made at once says it). */
bool cfd_pipeline_job_finish(cfd_pipeline *p, cfd_pipeline_job *j,
                             GError **err);
void cfd_pipeline_job_free(cfd_pipeline_job *j);

/* The time in front of each log line (logtime.c): auto puts it there
 * unless stderr is the systemd journal (JOURNAL_STREAM), which stamps
 * lines itself. */
typedef enum cfd_log_times {
  CFD_LOG_TIMES_AUTO,
  CFD_LOG_TIMES_ALWAYS,
  CFD_LOG_TIMES_NEVER
} cfd_log_times;
/* "auto", "always", "never"; false for anything else. */
bool cfd_log_times_parse(const char *when, cfd_log_times *out);
/* From here on stdout, stderr and GLib's messages put the time in front
 * of every line, where `when` says so; whether they do. */
bool cfd_log_times_start(cfd_log_times when);

#endif
