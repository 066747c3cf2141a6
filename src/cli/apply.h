/* `cudafilter apply`: the command line (apply.c), the audio half and the
 * file helpers (apply_audio.c), the video half (apply_video.c). Only built
 * with libav. apply_audio.c is also cudafilterd's file stream: it uses
 * nothing of cli.h but the exit codes. */
#ifndef CF_CLI_APPLY_H
#define CF_CLI_APPLY_H

#include <signal.h>
#include <stdbool.h>

#include <cudafilter/engine.h>
#include <cudafilter/video.h>

#include "../io/av_lazy.h"
#include "cli.h"

/* Channels apply reads and writes: libswresample's SWR_CH_MAX (not in
 * its public headers). */
#define APPLY_MAX_CHANNELS 64

typedef struct apply_opts {
  const char *kernel_path, *in_path, *out_path;
  const char *codec, *format;
  bool have_routing;
  cf_routing routing;
  double gain_db;
  cf_audio_config cfg;
  bool tail, overwrite, quiet, verbose;
  int stream; /* --stream: the input's audio stream to filter; -1: best */
  /* --channel-layout: OUTPUT's (a libav name: 5.1, quad, FL+FR+LFE);
   * NULL: the input's where the count stays, else libav's usual one */
  const char *channel_layout;
  /* messages name `codec =`, `format =` (cudafilterd), not --codec */
  bool config_keys;
  /* non-zero: give up writing OUTPUT (libav's network protocols ask it
   * while they wait); NULL: the command line's signals */
  int (*out_abort)(void *user);
  void *out_abort_user;
  /* non-NULL and zero when the output is complete: it is not wanted
   * after all (cudafilterd did not start): the temporary file is removed,
   * OUTPUT left as it was, and the run ends with 130. out_abort_user is
   * its argument. */
  int (*keep)(void *user);
  /* non-NULL: called after each packet written to OUTPUT (cudafilterd
   * tells a slow output from one that takes nothing); out_abort_user is
   * its argument */
  void (*wrote)(void *user);
  /* video: --kernel2d or --preset given */
  bool video;
  cli_video_opts v;
  cf_video_config vcfg;
  /* INPUT is "-" (libav's "pipe:0") and standard input a regular file
   * (`apply - OUT < FILE`): where reading it began (the header's offsets
   * count from there), for the cut-short check; false: not so (a pipe
   * or a terminal, read through a tap: apply_open_input; the daemon's
   * files) */
  bool stdin_file;
  int64_t stdin_at;
} apply_opts;

/* "" for 1, "s" for any other count: "1 frame", "2 frames" */
static inline const char *apply_s(long long n)
{
  return n == 1 ? "" : "s";
}

/* The size of standard input where it is a regular file, from o's
 * stdin_at on; -1 where it is not or o->stdin_file is false. */
int64_t apply_stdin_size(const apply_opts *o);

/* Set by SIGINT/SIGTERM; libav's blocking calls end through
 * apply_check_interrupt (an AVIOInterruptCB callback). */
extern volatile sig_atomic_t apply_interrupted;
int apply_check_interrupt(void *opaque);

/* "cudafilter: MESSAGE" on stderr; returns CLI_EXIT_RUNTIME. In a thread
 * that called apply_capture(buf, len), the first message goes into buf
 * instead (apply_capture(NULL, 0) ends that). */
int apply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void apply_capture(char *buf, size_t len);
/* Monotonic clock, seconds. */
double apply_now(void);

/* avformat_open_input as ffmpeg and ffprobe open their inputs: an
 * MPEG-TS read for every program's table (scan_all_pmts). Without it the
 * stream information differed from ffmpeg's: on two short TS files
 * joined, 25 then 50 fps, the probe took the first part's 25 fps where
 * ffmpeg's sees 50 (and keeps every frame). libav's error code (*fmt
 * freed on failure). */
int apply_open_input(AVFormatContext **fmt, const char *path, bool tap);
/* tap (INPUT "-" where standard input is a pipe, not a regular file):
 * read it through a tap that keeps its first APPLY_TAP_HEAD bytes (the
 * header) and counts every byte read, nothing more held, so that a WAV,
 * W64, CAF or YUV4MPEG2 cut short is told at its end as a file's is:
 * the length its header states against the bytes that came. */
#define APPLY_TAP_HEAD ((size_t)64 << 10)
/* avformat_close_input, and the tap's freeing where fmt has one. */
void apply_close_input(AVFormatContext **fmt);
/* The bytes fmt's tap read from standard input, where it read them to
 * their end; -1 where fmt has no tap or it has not reached the end. */
int64_t apply_tap_size(const AVFormatContext *fmt);

/* "cudafilter: PATH: WHAT: libav's message"; returns CLI_EXIT_RUNTIME. */
int apply_av_error(const char *path, const char *what, int err);
/* Whether an error avcodec_send_packet or avcodec_receive_frame returned
 * is the input's: a damaged packet, which the decoder has dropped
 * (skipped and counted, as ffmpeg skips it), not a failure of ours (out
 * of memory) or no error (EAGAIN, EOF). */
bool apply_damaged(int err);

/* An input whose times may jump (AVFMT_TS_DISCONT: MPEG-TS, MPEG-PS;
 * files joined end to end, a broadcast's clock reset): where a stream's
 * time jumps by more than 10 s, or back by more than 0.1 s, from where
 * its next packet was due, every stream of the input gets an offset from
 * there on that makes it follow on, as ffmpeg's demuxing does, with one
 * note (not with quiet). A packet whose PTS is more than 10 s from its
 * DTS (a damaged PES header: one outlier moved every later frame after
 * it, ten minutes on) is timed by its DTS, with a note. Per stream:
 * where its next packet is due and its last one's time (input time
 * base; AV_NOPTS_VALUE before). */
typedef struct apply_discont {
  int64_t offset; /* AV_TIME_BASE units */
  int64_t *next, *last;
  unsigned n;
  bool on, told, told_pts, quiet;
  const char *path;
  const char *prog; /* the notes' first word: cudafilter, cudafilterd */
} apply_discont;
/* Whether notes on what happens to the input (its times jumping, its
 * format changing) are said: not with quiet, but always in cudafilterd,
 * whose log is where its operator learns of them (they were never
 * there), under its own name (apply_prog). */
static inline bool apply_input_notes(const apply_opts *o)
{
  return !o->quiet || o->config_keys;
}
static inline const char *apply_prog(const apply_opts *o)
{
  return o->config_keys ? "cudafilterd" : "cudafilter";
}
/* 0, or CLI_EXIT_RUNTIME out of memory (said). */
int apply_discont_init(apply_discont *d, const AVFormatContext *ic,
                       const char *path, bool quiet);
void apply_discont_free(apply_discont *d);
/* pkt, just read from ic, with the input's offset. Every packet read is
 * passed, the filtered stream's too (its frames then follow on). */
void apply_discont_packet(apply_discont *d, const AVFormatContext *ic,
                          AVPacket *pkt);

/* A stream copied as it is: the last decoding time written of it (in its
 * output time base; AV_NOPTS_VALUE before the first), and whether a time
 * moved on was told. */
typedef struct apply_subconv apply_subconv;
enum { APPLY_MAX_REORDER = 16 }; /* libavformat's MAX_REORDER_DELAY */
typedef struct apply_copied {
  const apply_opts *opt;
  int64_t last_dts;
  bool told;
  /* the last presentation times, for decoding times the input lacks
   * (apply_copy_packet); npts of them seen */
  int64_t pts[APPLY_MAX_REORDER + 1];
  unsigned npts;
  apply_subconv *sub; /* text subtitles converted (apply_subs.c), or NULL */
} apply_copied;
/* The converters of c[0..n) freed (an array from calloc: NULL ones
 * skipped), then c. */
void apply_copied_free(apply_copied *c, unsigned n);

/* Text subtitles (apply_subs.c). Where stream is holds text subtitles
 * and format oc has a text subtitle codec of its own (for MP4 and MOV:
 * mov_text), other than is's:
 * *sc decodes is's packets and encodes them in that codec (MP4's
 * mov_text as Matroska's ASS, SubRip as WebM's WebVTT), as ffmpeg
 * converts them by default. *sc NULL where not (bitmaps, no such codec,
 * a decoder or encoder libav lacks or cannot open). 0, or
 * CLI_EXIT_RUNTIME (said: out of memory). */
int apply_subs_open(const AVFormatContext *oc, const AVStream *is,
                    apply_subconv **sc);
const AVCodecContext *apply_subs_encoder(const apply_subconv *sc);
/* pkt (of input stream is, in its time base) converted into `to` (same
 * stream index and time base): *got false where it holds nothing to
 * show, or is damaged (skipped; said once a stream unless quiet). 0, or
 * CLI_EXIT_RUNTIME (said). */
int apply_subs_convert(apply_subconv *sc, const AVStream *is,
                       const AVPacket *pkt, AVPacket *to, bool *got,
                       const char *in_path, bool quiet);
void apply_subs_free(apply_subconv **sc);
/* av_interleaved_write_frame, then o->wrote where it succeeded. A
 * packet that would take OUTPUT past what its format's header can state
 * (apply_size_limit) is refused, said: APPLY_ERR_SAID. */
int apply_write(const apply_opts *o, AVFormatContext *oc, AVPacket *pkt);
/* A libav-style error already said through apply_error: apply_av_error
 * says nothing more of it. */
#define APPLY_ERR_SAID FFERRTAG('C', 'F', 'S', 'D')
/* The most bytes OUTPUT (oc, its header written) may hold, where its
 * format states its sizes in 32 bits with no wider form (AIFF, AST); 0: no
 * such limit. *name: the format as a message names it. */
int64_t apply_size_limit(const AVFormatContext *oc, const char **name);
/* Writes pkt, a packet of a copied stream of ic (apply_discont_packet
 * has had it), as output stream os_index of oc, rescaled to its time
 * base. A decoding time that still goes back (by less than a jump: a
 * short part joined; damaged input) is moved on to the least the muxer
 * takes (the last + 1, or the last where equal times are allowed), its
 * presentation time no earlier, with one note a stream (not with
 * c->opt->quiet), as ffmpeg does, instead of the muxer failing the run.
 * A decoding time the input lacks (H.264 with B-frames out of Matroska)
 * is the one the muxer would guess from the presentation times (which
 * it does with a warning: "Timestamps are unset in a packet"). 0 or
 * CLI_EXIT_RUNTIME (said). pkt is not unreferenced. */
int apply_copy_packet(AVFormatContext *ic, AVFormatContext *oc,
                      AVPacket *pkt, int os_index, apply_copied *c,
                      const char *out_path);

/* Whether format oc->oformat writes a header for the streams oc holds,
 * the copy of `extra` and the one `enc` encodes (NULL: oc holds it
 * already), in that order: avformat_query_codec answers for a codec alone, while a
 * format refuses a second audio stream (WAV) or a codec at normal
 * strictness (FLAC in MP4, MOV) only in its header, after all the
 * reading. Written to a sink that keeps nothing. 1 yes, 0 no, -1 no
 * trial could be made (a format that opens files of its own). */
int apply_trial_header(const AVFormatContext *oc, const AVCodecContext *enc,
                       const AVStream *extra);

/* Input stream is (number i), a picture, a sound, subtitles or an
 * attachment (an ASS track's font), copied unchanged into oc where its
 * format's header takes it beside the streams oc holds and the one `enc`
 * encodes (NULL: oc holds it already; apply_trial_header): *os_index
 * becomes the new stream's index, or -1 where it is left out (said on
 * stderr where the format has a codec of its kind, else only with
 * verbose: a .wav of a film's sound, a .y4m of its picture). Text
 * subtitles the format holds only in its own codec are converted to it
 * (c->sub; a note unless quiet). Data streams are left out without a
 * word, as ffmpeg leaves them. 0, or CLI_EXIT_RUNTIME (said). */
int apply_add_copy(const apply_opts *opt, AVFormatContext *oc,
                   const AVCodecContext *enc, const AVStream *is, unsigned i,
                   const char *path, int *os_index, apply_copied *c);

/* INPUT's tags (title, artist, ...) and chapters into OUTPUT, as ffmpeg
 * copies them by default (a format without them ignores them), but with
 * `sound_filtered` not its loudness tags (REPLAYGAIN_*, R128_*: a player
 * would even out the filtered sound by the unfiltered one's loudness).
 * The chapters earlier by `shift` (AV_TIME_BASE units; none before 0):
 * the time OUTPUT's streams were moved by. 0, or CLI_EXIT_RUNTIME
 * (said). */
int apply_file_metadata(AVFormatContext *oc, const AVFormatContext *ic,
                        bool sound_filtered, int64_t shift, const char *path);
/* Stream is's tags (language, title, ...) and side data (a display
 * matrix: how a phone's picture is turned; stereo 3D, HDR mastering)
 * onto os, as ffmpeg copies them. `encoder` (NULL: os is a copy) encodes
 * is again into os: os is tagged with its name ("encoder": "Lavc59...
 * libvorbis", as ffmpeg tags it), and what describes is's old encoding
 * (its encoder tag, mkvmerge's statistics: BPS, NUMBER_OF_FRAMES, ...;
 * the bit rate's CPB properties) or the sound before filtering
 * (ReplayGain tags and side data, R128 gains) is left out. 0, or
 * CLI_EXIT_RUNTIME (said). */
int apply_stream_metadata(AVStream *os, const AVStream *is,
                          const AVCodec *encoder, const char *path);

/* The temporary name OUTPUT is written under, OUTPUT.cf-part-PID.EXT
 * (*tmp NULL: OUTPUT itself); refuses an existing OUTPUT without -y, and
 * OUTPUT == INPUT. */
int apply_choose_target(const apply_opts *o, char **tmp);

/* Whether OUTPUT can be written as asked, before anything is read: its
 * format (--format or its name; one that opens files of its own only
 * where apply_write_header can keep them off OUTPUT), and --codec where
 * given (an encoder, or a codec with one, of the stream's kind that the
 * format holds). 0, CLI_EXIT_USAGE (--format or --codec as given cannot
 * be) or CLI_EXIT_RUNTIME, the message said. */
int apply_check_output(const apply_opts *o, bool video);

/* OUTPUT's muxer, from --format or OUTPUT's name. */
int apply_muxer(const apply_opts *o, AVFormatContext **oc);
/* The encoder: --codec (an encoder's name, else a codec's, for its
 * default encoder, as ffmpeg takes them; of the right type), else `id`
 * (the format's own, or what the caller makes of it); clear errors where
 * there is none. */
int apply_encoder(const apply_opts *o, const AVFormatContext *oc,
                  enum AVMediaType type, enum AVCodecID id,
                  const AVCodec **out);
/* The codec tag a copied stream keeps in format `of`: the input's where
 * the format takes it for that codec (or has no tags), else 0 (the
 * muxer's own), as ffmpeg's stream copy does. Raw video in AVI needs its
 * fourcc kept: with 0 the muxer wrote Y800 frames as palettised BI_RGB. */
unsigned apply_copy_tag(const AVOutputFormat *of, const AVCodecParameters *p);

/* Open the temporary file (or OUTPUT) and write the header. A format
 * that opens its own file (image2) is given the temporary name. */
int apply_write_header(const apply_opts *o, AVFormatContext *oc,
                       const char *tmp);

/* Give the finished temporary file OUTPUT's name (nothing when tmp is
 * NULL); 0 or an exit status. */
int apply_commit(const apply_opts *o, const char *tmp);

/* A progress line on stderr (at most ten a second; `on` where stderr is
 * a terminal and not --quiet). */
typedef struct apply_progress_state {
  bool on;
  double start, last;
} apply_progress_state;
void apply_progress(apply_progress_state *p, double secs, double total,
                    bool done);

/* What a caller other than the command line brings to an audio run
 * (cudafilterd's file streams). */
typedef struct apply_hooks {
  void *user;
  /* Non-zero: the input ends here. The output is finished with what was
   * read (the latency taken out) and committed. Also asked while libav
   * waits for input. */
  int (*stop)(void *user);
  /* The engine's work on a block, in place of cf_engine_process(engine,
   * ...): the caller takes kernel swaps there. */
  cf_status (*process)(void *user, const float *x, float *y, size_t frames);
  /* The caller's engine, made for `rate` Hz and `channels` input
   * channels, which INPUT must have; its kernel is the caller's. */
  cf_engine *engine;
  unsigned rate, channels;
} apply_hooks;

typedef struct apply_result {
  int64_t frames_in, frames_out; /* per channel; out: at `rate` */
  unsigned rate, out_channels;   /* rate: the output's (the encoder's) */
  unsigned in_rate;              /* the input's, which was filtered: other
                                    than `rate` where the encoder cannot
                                    write it and the output is resampled */
  uint64_t clipped; /* samples beyond full scale (integer outputs) */
  double peak;      /* largest |output sample| */
  unsigned corrupt; /* damaged input packets skipped */
  /* frames INPUT's header states (WAV, W64, AIFF, CAF, FLAC, AU), at
   * in_rate; 0: it states none. More than frames_in: the file is cut
   * short (apply warns). */
  int64_t stated;
  /* or, where its sound is not counted in frames (a WAV's ADPCM, a CAF's
   * ALAC), the bytes its data chunk states and those in the file, fewer:
   * cut short; else 0 */
  int64_t stated_bytes, held_bytes;
  bool stopped; /* hooks->stop ended the input early */
  char codec[32];   /* the encoder */
  char engine[160]; /* cf_engine_describe (no hooks) */
} apply_result;

/* The sentence that tells res's INPUT in cut short (its header's frames,
 * or bytes, against those there), out ending with what was there:
 * "IN is cut short: its header states 48000 frames (1.000 s), 7489 were
 * there (0.156 s); OUT ends with them", into buf (n bytes); "" and 0
 * where res tells no cut. apply's warning and cudafilterd's finished
 * line alike. */
size_t apply_cut_short_said(char *buf, size_t n, const apply_result *res,
                            const char *in, const char *out);

/* The audio half: INPUT's main audio stream through the kernel (or
 * h->engine) into tmp, renamed to OUTPUT when complete (tmp NULL: OUTPUT
 * written in place). 0, 130 (interrupted) or CLI_EXIT_RUNTIME; on an
 * error tmp is removed. h may be NULL. */
int apply_audio(const apply_opts *o, const char *tmp, const apply_hooks *h,
                apply_result *res);

/* INPUT's main audio stream (or `stream`, >= 0): its rate, channels and
 * announced length in seconds (0: not known); 0, 130 (h->stop said stop) or
 * CLI_EXIT_RUNTIME. Only h->stop is used; h may be NULL. */
int apply_probe(const char *path, int stream, unsigned *rate,
                unsigned *channels, double *seconds, const apply_hooks *h);

/* Once per engine (*told): a warning on stderr (not where messages are
 * captured) when backend auto has left the device mid-stream. */
void apply_note_fallback(const cf_engine *e, bool *told);

/* What a caller other than the command line brings to a video run. */
typedef struct apply_vhooks {
  void *user;
  /* as apply_hooks.stop: the output is finished with what was read */
  int (*stop)(void *user);
  /* the engine's work on a frame, in place of cf_engine_process_frame:
   * the caller takes kernel changes there; t is the frame's time in s
   * (its timestamp: the first frame's need not be 0) */
  cf_status (*process_frame)(void *user, cf_engine *e, const cf_frame *in,
                             cf_frame *out, double t);
  /* the caller's engine (or NULL: one is made from o->vcfg and k), made
   * for width x height frames of format, which the input must still have
   * (apply_vprobe's answer); used as it is (its history included), not
   * freed */
  cf_engine *engine;
  unsigned width, height;
  cf_pixel_format format;
} apply_vhooks;

typedef struct apply_vresult {
  int64_t frames;  /* written */
  int64_t dropped; /* filtered, not written: the frame rate rose past the
                      output's (apply_video) */
  unsigned width, height;
  unsigned corrupt;
  bool stopped;
  char codec[32];
  char shown[48]; /* how the picture was made as shown ("turned a quarter
                     clockwise"), or "" */
  /* a YUV4MPEG2 INPUT cut inside frame cut_whole + 1: its bytes there,
   * and a frame's picture bytes; cut_bytes 0: not cut */
  int64_t cut_bytes, cut_whole;
  int cut_pic;
} apply_vresult;

/* The sentence that tells res's YUV4MPEG2 INPUT cut inside a frame, out
 * ending with the whole frames before it: "IN is cut short: it ends 315
 * bytes into frame 7, which takes 774 (the FRAME line and 768 of
 * picture); OUT ends with the 6 whole frames before it", into buf (n
 * bytes); "" and 0 where res tells no cut. apply's warning and
 * cudafilterd's finished line alike. */
size_t apply_y4m_cut_said(char *buf, size_t n, const apply_vresult *res,
                          const char *in, const char *out);

/* --components for the format the frames are filtered in: a mask, or an
 * exit status after saying why. */
typedef int (*apply_components_fn)(const char *spec, cf_pixel_format fmt,
                                   unsigned *mask);

/* INPUT's main video stream: its size, the format the engine filters it
 * in, and the file's length in seconds (0: not known); 0, 130 (h->stop)
 * or CLI_EXIT_RUNTIME. */
int apply_vprobe(const char *path, unsigned *width, unsigned *height,
                 cf_pixel_format *fmt, double *seconds, const apply_vhooks *h);

/* The video half: filter INPUT's main video stream with kernel k (the
 * caller's), copy its audio; components (may be NULL) resolves
 * o->v.components. 0, 130 or CLI_EXIT_RUNTIME; on an error tmp is
 * removed. h may be NULL. */
int apply_video(const apply_opts *o, const char *tmp, const cf_kernel2d *k,
                apply_components_fn components, const apply_vhooks *h,
                apply_vresult *res);

#endif
