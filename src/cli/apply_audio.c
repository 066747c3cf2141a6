/* `cudafilter apply`'s audio half, and the file helpers both halves use:
 * an audio file through the engine into another, through libav. Also run
 * by cudafilterd's file streams (src/daemon/audio.c), which bring their
 * own engine and hooks (apply.h); so nothing here prints through cli.h:
 * messages go through apply_error, to stderr or to the caller's buffer. */
#include "apply.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cudafilter/engine.h>
#include <cudafilter/error.h>
#include <cudafilter/kernel.h>

/* The options' names in messages: the command line's, or the daemon's
 * config keys, as a sentence names them (OPT) and as a message starts
 * with them (KEY). */
#define FMT_OPT(o) ((o)->config_keys ? "format =" : "--format")
#define CODEC_OPT(o) ((o)->config_keys ? "codec =" : "--codec")
#define FMT_KEY(o) ((o)->config_keys ? "format" : "--format")
#define CODEC_KEY(o) ((o)->config_keys ? "codec" : "--codec")

/* Frames per encoder frame where the encoder takes any size (PCM). */
enum { PCM_FRAME = 4096 };

typedef struct input {
  const char *path;
  AVFormatContext *fmt;
  AVCodecContext *dec;
  SwrContext *swr;
  AVPacket *pkt;
  AVFrame *frame;
  int stream, rate;
  unsigned channels;
  int swr_format; /* what swr converts from, -1 before */
  AVChannelLayout swr_layout;
  int swr_rate;              /* the rate swr converts from */
  AVChannelLayout out_layout; /* the start's: what swr converts to */
  bool swr_flushed;           /* a resampling swr's delay went out at EOF */
  bool quiet;                 /* no notes */
  const char *prog;           /* the notes' first word */
  float *buf; /* interleaved float32, cap frames */
  size_t cap;
  int64_t frames;   /* decoded, per channel */
  int64_t expect;   /* frames the container announces, or 0 */
  int64_t stated;   /* frames the header states exactly (stated_length) */
  /* or, not in frames, a data chunk's bytes said and those in the file:
   * the file is cut short */
  int64_t stated_bytes, held_bytes;
  /* its data chunk (data_chunk): where it starts and its bytes, its
   * frames' size (0: not counted in frames); chunk_size 0: none read */
  int64_t chunk_off, chunk_size;
  int chunk_align;
  unsigned corrupt; /* packets the decoder refused */
  bool eof;
  bool draining; /* the decoder is told the input ended */
  bool stopped;  /* hooks->stop ended it before its end */
  const apply_hooks *h;
  int want;           /* the audio stream asked for, or -1: the best */
  int64_t first_pts;  /* the first decoded frame's, in 1/rate; or NOPTS */
  struct output *out; /* other streams' packets are copied there */
  apply_discont disc; /* the input's jumps in time */
} input;

typedef struct output {
  const apply_opts *opt;
  const char *path, *tmp; /* tmp: written there, renamed to path */
  int *map;      /* input stream -> output stream for copied streams, or -1 */
  apply_copied *copied; /* per input stream: what was written of it */
  unsigned ncopied;      /* its length */
  int64_t start; /* the audio's first pts where streams are copied, in the
                    encoder's time base; or 0 */
  AVFormatContext *oc;
  AVCodecContext *enc;
  AVStream *st;
  SwrContext *swr;
  AVFrame *frame;
  AVPacket *pkt;
  unsigned channels;
  SwrContext *rs; /* the input's rate to the encoder's, where they differ */
  float *rsbuf;   /* its output, interleaved float32, rscap frames */
  size_t rscap;
  int in_rate;           /* the filtered frames' rate (the input's) */
  int64_t rs_in, rs_out; /* frames into rs, and out of it */
  size_t frame_size; /* frames per encoder frame */
  float *pend;       /* filtered frames not yet encoded */
  size_t npend, cap;
  int64_t frames;   /* frames sent to the encoder, at its rate */
  bool integer;     /* the encoder stores integers: values clip at 1.0 */
  uint64_t clipped; /* samples beyond full scale */
  double peak;
  unsigned copies; /* streams copied */
} output;

volatile sig_atomic_t apply_interrupted;
#define interrupted apply_interrupted

/* Where apply_error writes, in this thread (NULL: stderr). */
static _Thread_local char *capture;
static _Thread_local size_t capture_len;

void apply_capture(char *buf, size_t len)
{
  capture = buf;
  capture_len = len;
  if (buf && len)
    buf[0] = 0;
}

int apply_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (!capture) {
    fputs("cudafilter: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  } else if (capture_len && !capture[0]) {
    /* the first: what followed it is its consequence */
    vsnprintf(capture, capture_len, fmt, ap);
  }
  va_end(ap);
  return CLI_EXIT_RUNTIME;
}

double apply_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void apply_note_fallback(const cf_engine *e, bool *told)
{
  const char *why = cf_engine_fallback_reason(e);
  if (!why || *told)
    return;
  *told = true;
  if (!capture)
    fprintf(stderr,
            "cudafilter: warning: the cuda backend failed (%s); "
            "filtering goes on on the cpu, nothing lost\n",
            why);
}

int apply_commit(const apply_opts *o, const char *tmp)
{
  if (tmp && o->keep && !o->keep(o->out_abort_user))
    return 130; /* the caller removes tmp, as after any failure */
  /* a file replaced (-y) keeps its permission bits (the new one was
   * made with the umask's) */
  struct stat so;
  const char *out = cf_av_local(o->out_path); /* tmp: a local file's */
  if (tmp && stat(out, &so) == 0 && S_ISREG(so.st_mode) &&
      chmod(tmp, so.st_mode & 07777) != 0)
    return apply_error("cannot give %s the mode of %s: %s", tmp,
                       o->out_path, strerror(errno));
  if (!tmp)
    return 0;
  if (o->overwrite) {
    if (rename(tmp, out) != 0)
      return apply_error("cannot rename %s to %s: %s", tmp, o->out_path,
                         strerror(errno));
    return 0;
  }
  /* Without -y, OUTPUT is put in place only where it still is not there:
   * another run may have made it since apply_choose_target looked (two
   * INPUTs of one name, song.flac and song.wav, into song.mp3 under
   * xargs -P: rename replaced the first's and both exited 0, QA). A hard
   * link fails where the name exists; a file system without links (FAT,
   * many FUSE ones: EPERM, ENOSYS, ...) is renamed into, as before. */
  if (link(tmp, out) == 0) {
    if (unlink(tmp) != 0)
      return apply_error("%s written, but %s, its temporary name, cannot "
                         "be removed: %s",
                         o->out_path, tmp, strerror(errno));
    return 0;
  }
  if (errno == EEXIST)
    return apply_error("%s exists (made while this run worked); use -y to "
                       "replace it",
                       o->out_path);
  if (rename(tmp, out) == 0)
    return 0;
  return apply_error("cannot rename %s to %s: %s", tmp, o->out_path,
                     strerror(errno));
}

int apply_check_interrupt(void *opaque)
{
  (void)opaque;
  return interrupted;
}

/* The command line's signals, or the caller's stop (libav asks this while
 * it waits). */
static int input_stopping(void *opaque)
{
  const input *in = opaque;
  return in->h ? in->h->stop(in->h->user) : interrupted;
}

int apply_av_error(const char *path, const char *what, int err)
{
  /* libav stopped because the command line was signalled: the caller
   * says it was interrupted ("writing failed: Immediate exit requested"
   * read as an I/O error, QA) */
  if ((err == AVERROR_EXIT && interrupted) || err == APPLY_ERR_SAID)
    return CLI_EXIT_RUNTIME;
  char msg[AV_ERROR_MAX_STRING_SIZE];
  cf_av->av_strerror(err, msg, sizeof msg);
  return apply_error("%s: %s: %s", path, what, msg);
}

/* ---- input ------------------------------------------------------------- */

/* Standard input read through a tap (apply_open_input): its first
 * bytes, and how many came. */
typedef struct apply_tap {
  unsigned char head[APPLY_TAP_HEAD];
  size_t held;   /* bytes of head */
  int64_t total; /* bytes read */
  bool eof;      /* read to its end */
} apply_tap;

static int tap_read(void *opaque, uint8_t *buf, int n)
{
  apply_tap *t = opaque;
  ssize_t got;
  while ((got = read(STDIN_FILENO, buf, (size_t)n)) < 0 && errno == EINTR)
    if (interrupted)
      return AVERROR_EXIT;
  if (got < 0)
    return AVERROR(errno);
  if (got == 0) {
    t->eof = true;
    return AVERROR_EOF;
  }
  if (t->held < APPLY_TAP_HEAD) {
    size_t k = APPLY_TAP_HEAD - t->held < (size_t)got ? APPLY_TAP_HEAD - t->held
                                                        : (size_t)got;
    memcpy(t->head + t->held, buf, k);
    t->held += k;
  }
  t->total += got;
  return (int)got;
}

/* fmt's tap, or NULL */
static apply_tap *tap_of(const AVFormatContext *fmt)
{
  return fmt && (fmt->flags & AVFMT_FLAG_CUSTOM_IO) && fmt->pb &&
                 fmt->pb->read_packet == tap_read
             ? fmt->pb->opaque
             : NULL;
}

static void tap_free(AVIOContext *pb)
{
  if (!pb)
    return;
  free(pb->opaque);
  cf_av->av_freep(&pb->buffer);
  cf_av->avio_context_free(&pb);
}

int64_t apply_tap_size(const AVFormatContext *fmt)
{
  const apply_tap *t = tap_of(fmt);
  return t && t->eof ? t->total : -1;
}

void apply_close_input(AVFormatContext **fmt)
{
  AVIOContext *pb = tap_of(*fmt) ? (*fmt)->pb : NULL;
  cf_av->avformat_close_input(fmt);
  tap_free(pb);
}

int apply_open_input(AVFormatContext **fmt, const char *path, bool tap)
{
  AVDictionary *opts = NULL;
  AVIOContext *pb = NULL;
  if (tap) {
    enum { TAP_BUF = 32768 }; /* libav's pipe protocol's */
    apply_tap *t = calloc(1, sizeof *t);
    unsigned char *buf = cf_av->av_malloc(TAP_BUF);
    if (!*fmt)
      *fmt = cf_av->avformat_alloc_context();
    if (t && buf && *fmt)
      pb = cf_av->avio_alloc_context(buf, TAP_BUF, 0, t, tap_read, NULL, NULL);
    if (!pb) {
      free(t);
      cf_av->av_freep(&buf);
      return AVERROR(ENOMEM);
    }
    (*fmt)->pb = pb;
  }
  /* a local name with a ':' ("take:2.wav") is that file, where libav
   * took "take" for a protocol (QA) */
  char *name = cf_av_is_url(path) ? NULL : cf_av_file_name(cf_av_local(path));
  int err = cf_av->av_dict_set(&opts, "scan_all_pmts", "1", 0);
  if (err >= 0)
    err = cf_av->avformat_open_input(fmt, name ? name : path, NULL, &opts);
  else if (pb) /* not opened: the caller frees fmt */
    (*fmt)->pb = NULL;
  cf_av->av_dict_free(&opts);
  free(name);
  if (err < 0) /* libav leaves a custom pb to its owner */
    tap_free(pb);
  return err;
}

/* Whether st's length is one its file's header states, sample for
 * sample (a WAV's data size or fact chunk, an AIFF's frame count,
 * FLAC's STREAMINFO, an AU's data size), so
 * that fewer samples read mean the file was cut short (a copy or a
 * recording stopped early). Not a length libav estimates (from the bit
 * rate, the last timestamp of an Ogg) or a container's rounded duration
 * that priming and padding make differ from the samples decoded. */
static bool stated_length(const AVFormatContext *fmt, const AVStream *st)
{
  /* (not a CAF's: libav counts its packet table's packets whole, an
   * ALAC .caf of 48000 frames 49152, not the frames it says are valid;
   * its data chunk is read instead, data_chunk) */
  static const char *const formats[] = {"wav", "w64", "aiff", "flac", "au"};
  if (st->duration == AV_NOPTS_VALUE || st->duration <= 0 ||
      fmt->duration_estimation_method != AVFMT_DURATION_FROM_STREAM)
    return false;
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
    if (!strcmp(fmt->iformat->name, formats[i]))
      return true;
  return false;
}

static uint64_t get_le_n(const unsigned char *p, unsigned n)
{
  uint64_t v = 0;
  while (n--)
    v = v << 8 | p[n];
  return v;
}

static uint64_t get_be_n(const unsigned char *p, unsigned n)
{
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

int64_t apply_stdin_size(const apply_opts *o)
{
  struct stat sb;
  if (!o->stdin_file || fstat(STDIN_FILENO, &sb) || !S_ISREG(sb.st_mode))
    return -1;
  return sb.st_size > o->stdin_at ? sb.st_size - o->stdin_at : 0;
}

/* Where a header is read from: a file (pread from base on, libav
 * reading it meanwhile) or a tap's first bytes. */
typedef struct hdr_src {
  int fd;
  int64_t base;
  const apply_tap *tap;
} hdr_src;

static bool hdr_read(const hdr_src *s, void *b, size_t n, int64_t at)
{
  if (s->tap) {
    if (at < 0 || (uint64_t)at + n > s->tap->held)
      return false;
    memcpy(b, s->tap->head + at, n);
    return true;
  }
  return pread(s->fd, b, n, s->base + at) == (ssize_t)n;
}

/* The sound a WAV (RF64, BW64), W64 or CAF header says its data chunk
 * holds: where it starts and its bytes, and the file's size (-1 read
 * through a pipe: known at its end, apply_tap_size); false where it is
 * not a regular file or a pipe read through fmt's tap, or the header
 * says no size (a stream's WAV, 0 or 0xFFFFFFFF; a CAF's -1: to the
 * end). libav reads these files up to their end without a word, and
 * gives no length for a data chunk that runs past it (wavdec) or for
 * none of them (w64, caf), so the header is read here: o's INPUT, or
 * standard input where it is "-" and a regular file (read with pread
 * from where apply began, libav reading it meanwhile) or a pipe (the
 * tap's first bytes). */
static bool data_chunk(const apply_opts *o, const AVFormatContext *fmt,
                       int64_t *off, int64_t *size, int64_t *file_size)
{
  const char *format = fmt->iformat->name;
  bool wav = !strcmp(format, "wav"), w64 = !strcmp(format, "w64"),
       caf = !strcmp(format, "caf");
  const char *path = o->in_path;
  hdr_src src = {.fd = -1, .tap = tap_of(fmt)};
  bool in0 = !strcmp(path, "pipe:0") && (o->stdin_file || src.tap);
  if ((!wav && !w64 && !caf) || (cf_av_is_url(path) && !in0))
    return false;
  /* O_NONBLOCK: a FIFO's open waits for a writer, long gone by now */
  if (!src.tap)
    src.fd = in0 ? STDIN_FILENO
                 : open(cf_av_local(path), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  src.base = in0 && !src.tap ? o->stdin_at : 0;
  struct stat sb;
  if (!src.tap && src.fd < 0)
    return false;
  bool found = false;
  unsigned char b[40];
  int64_t end; /* the chunks are looked for up to there */
  if (src.tap)
    end = (int64_t)src.tap->held;
  else if (fstat(src.fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size < src.base)
    goto done;
  else
    end = sb.st_size - src.base;
  if (!hdr_read(&src, b, w64 ? 40 : 12, 0))
    goto done;
  *file_size = src.tap ? -1 : end;
  bool rf64 = wav && (!memcmp(b, "RF64", 4) || !memcmp(b, "BW64", 4));
  uint64_t ds64 = 0; /* RF64's data size */
  int64_t at = wav ? 12 : w64 ? 40 : 8;
  for (int i = 0; i < 4096 && at < end; i++) {
    unsigned hl = w64 ? 24 : caf ? 12 : 8; /* a chunk's header */
    if (!hdr_read(&src, b, hl, at))
      break;
    uint64_t n = w64 ? get_le_n(b + 16, 8) : caf ? get_be_n(b + 4, 8)
                                                  : get_le_n(b + 4, 4);
    if (rf64 && !memcmp(b, "ds64", 4) && hdr_read(&src, b + 8, 16, at + 8))
      ds64 = get_le_n(b + 16, 8);
    if (!memcmp(b, "data", 4)) {
      if (wav) {
        *size = (int64_t)(rf64 && n == 0xFFFFFFFFu ? ds64 : n);
        found = *size > 0 && (rf64 || n != 0xFFFFFFFFu);
        *off = at + 8;
      } else if (w64) {
        found = n > 24 && n < INT64_MAX;
        *size = (int64_t)n - 24;
        *off = at + 24;
      } else { /* after a 4-byte edit count */
        found = n > 4 && n < INT64_MAX;
        *size = (int64_t)n - 4;
        *off = at + 16;
      }
      break;
    }
    if (w64 ? n < 24 || n > (uint64_t)end : n > (uint64_t)end)
      break;
    at += w64 ? (int64_t)((n + 7) & ~(uint64_t)7)
              : (int64_t)(hl + n + (wav ? n & 1 : 0));
  }
done:
  if (!in0 && src.fd >= 0)
    close(src.fd);
  return found;
}

/* in's data chunk (chunk_off, chunk_size) against file_size, the
 * bytes its file holds: where they are fewer, it is cut short (stated,
 * or stated_bytes and held_bytes). */
static void input_cut(input *in, int64_t file_size)
{
  if (in->chunk_size <= 0 || in->chunk_off + in->chunk_size <= file_size)
    return;
  if (in->chunk_align > 0)
    in->stated = in->chunk_size / in->chunk_align;
  else {
    in->stated_bytes = in->chunk_size;
    in->held_bytes = file_size > in->chunk_off ? file_size - in->chunk_off : 0;
  }
}

/* The bytes o's INPUT holds now (a local file, or standard input where
 * it is one), after its read; -1 where not known (a URL, a pipe). */
static int64_t input_size_now(const apply_opts *o)
{
  if (!strcmp(o->in_path, "pipe:0"))
    return apply_stdin_size(o);
  struct stat sb;
  if (cf_av_is_url(o->in_path) || stat(cf_av_local(o->in_path), &sb) ||
      !S_ISREG(sb.st_mode))
    return -1;
  return sb.st_size;
}

size_t apply_cut_short_said(char *buf, size_t n, const apply_result *res,
                            const char *in, const char *out)
{
  int w = 0;
  long long got = (long long)res->frames_in;
  if (res->stated > res->frames_in)
    w = snprintf(buf, n,
                 "%s is cut short: its header states %lld frame%s (%.3f s), "
                 "%lld %s there (%.3f s); %s ends with %s",
                 in, (long long)res->stated, apply_s(res->stated),
                 (double)res->stated / res->in_rate, got,
                 got == 1 ? "was" : "were", (double)got / res->in_rate, out,
                 got == 1 ? "it" : "them");
  else if (res->stated_bytes > res->held_bytes)
    w = snprintf(buf, n,
                 "%s is cut short: its header states %lld byte%s of sound, "
                 "%lld %s there (%lld frame%s, %.3f s); %s ends with %s",
                 in, (long long)res->stated_bytes, apply_s(res->stated_bytes),
                 (long long)res->held_bytes,
                 res->held_bytes == 1 ? "was" : "were", got, apply_s(got),
                 (double)got / res->in_rate, out, got == 1 ? "it" : "them");
  else if (n)
    buf[0] = 0;
  return w > 0 ? (size_t)w : 0;
}

static int input_open(input *in, const char *path, const apply_opts *o)
{
  int err;
  in->path = path;
  in->swr_format = -1;
  in->first_pts = AV_NOPTS_VALUE;
  if (!(in->fmt = cf_av->avformat_alloc_context()))
    return apply_error("out of memory");
  in->fmt->interrupt_callback.callback = input_stopping;
  in->fmt->interrupt_callback.opaque = in;
  if ((err = apply_open_input(&in->fmt, path, o && !strcmp(path, "pipe:0") &&
                                                   !o->stdin_file)) < 0)
    return input_stopping(in) ? 130 : apply_av_error(path, "cannot open", err);
  if ((err = cf_av->avformat_find_stream_info(in->fmt, NULL)) < 0)
    return input_stopping(in)
               ? 130
               : apply_av_error(path, "cannot read its stream info", err);
  if ((err = apply_discont_init(&in->disc, in->fmt, path, in->quiet)))
    return err;
  in->disc.prog = in->prog;
  const AVCodec *codec = NULL;
  if (in->want >= 0) { /* --stream: that one, and it must be sound */
    if ((unsigned)in->want >= in->fmt->nb_streams)
      return apply_error("%s: no stream %d (it has %u, from 0)", path, in->want,
                         in->fmt->nb_streams);
    enum AVMediaType t = in->fmt->streams[in->want]->codecpar->codec_type;
    if (t != AVMEDIA_TYPE_AUDIO)
      return apply_error("%s: stream %d is %s, not audio", path, in->want,
                         cf_av->av_get_media_type_string(t)
                             ? cf_av->av_get_media_type_string(t)
                             : "not audio");
  }
  in->stream = cf_av->av_find_best_stream(in->fmt, AVMEDIA_TYPE_AUDIO, in->want,
                                          -1, &codec, 0);
  if (in->stream < 0)
    return apply_av_error(path,
                          in->want >= 0 ? "that audio stream cannot be decoded"
                                        : "no audio stream libav can decode",
                          in->stream);
  AVStream *st = in->fmt->streams[in->stream];
  if (!(in->dec = cf_av->avcodec_alloc_context3(codec)) ||
      !(in->pkt = cf_av->av_packet_alloc()) ||
      !(in->frame = cf_av->av_frame_alloc()))
    return apply_error("out of memory");
  if ((err = cf_av->avcodec_parameters_to_context(in->dec, st->codecpar)) < 0)
    return apply_av_error(path, "cannot open the audio decoder", err);
  /* the packets' time base, as ffmpeg gives it: an MP3's encoder delay
   * is skipped with its time ("Could not update timestamps for skipped
   * samples" without it) */
  in->dec->pkt_timebase = st->time_base;
  if ((err = cf_av->avcodec_open2(in->dec, codec, NULL)) < 0)
    return apply_av_error(path, "cannot open the audio decoder", err);
  int n = in->dec->ch_layout.nb_channels;
  if (in->dec->sample_rate <= 0 || n <= 0)
    return apply_error("%s: the audio stream has no rate or channel count",
                       path);
  /* every frame goes through libswresample, which takes 64 channels at
   * most (SWR_CH_MAX): said here, before anything is read (and by the
   * daemon's --check, which probes), not as "cannot set up the sample
   * converter: Invalid argument" once under way (QA) */
  if ((unsigned)n > APPLY_MAX_CHANNELS)
    return apply_error("%s: %d channels: apply takes at most %d (the limit "
                       "of libswresample, which converts its samples); "
                       "cudafir and 'cudafilter fir' take up to %u",
                       path, n, APPLY_MAX_CHANNELS, CF_MAX_CHANNELS);
  in->rate = in->dec->sample_rate;
  in->channels = (unsigned)n;
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
    in->expect = cf_av->av_rescale_q(st->duration, st->time_base,
                                     (AVRational){1, in->rate});
  else if (in->fmt->duration > 0)
    in->expect = cf_av->av_rescale_q(in->fmt->duration, AV_TIME_BASE_Q,
                                     (AVRational){1, in->rate});
  int64_t off, size, file_size;
  if (stated_length(in->fmt, st))
    in->stated = in->expect;
  else if (o && data_chunk(o, in->fmt, &off, &size, &file_size)) {
    /* in frames where they have a size (PCM), else in bytes */
    int bits = cf_av->av_get_bits_per_sample(st->codecpar->codec_id);
    int align = st->codecpar->block_align;
    in->chunk_off = off;
    in->chunk_size = size;
    in->chunk_align = bits > 0 && bits % 8 == 0 && align == n * bits / 8
                          ? align
                          : 0;
    if (file_size >= 0) /* a pipe's: at its end (input_cut) */
      input_cut(in, file_size);
  }
  return 0;
}

/* in->buf holds at least `frames` frames. */
static int input_reserve(input *in, size_t frames)
{
  if (frames <= in->cap)
    return 0;
  float *b = realloc(in->buf, frames * in->channels * sizeof *b);
  if (!b)
    return apply_error("out of memory");
  in->buf = b;
  in->cap = frames;
  return 0;
}

/* What a resampling converter still holds (its filter's delay) into
 * in->buf from frame `at`: *got frames. Nothing for a converter that
 * keeps the rate. */
static int input_flush(input *in, size_t at, int *got)
{
  *got = 0;
  if (!in->swr || in->swr_rate == in->rate)
    return 0;
  int n = cf_av->swr_get_out_samples(in->swr, 0);
  if (n < 0)
    return apply_av_error(in->path, "sample conversion failed", n);
  int err = input_reserve(in, at + (size_t)n);
  if (err)
    return err;
  uint8_t *dst = (uint8_t *)(in->buf + at * in->channels);
  *got = cf_av->swr_convert(in->swr, &dst, n, NULL, 0);
  if (*got < 0)
    return apply_av_error(in->path, "sample conversion failed", *got);
  return 0;
}

/* Convert a decoded frame to interleaved float32 in in->buf; its frame
 * count in *frames. The engine and the output are built for the start's
 * rate and channels: audio that changes either later (a broadcast
 * recording, files joined end to end) is resampled and remixed to them,
 * as ffmpeg's filters would have it, with a note; the filter's history
 * goes on through the change. A change of sample format or layout alone
 * only rebuilds the converter. */
static int input_convert(input *in, const AVFrame *fr, size_t *frames)
{
  int err;
  size_t done = 0; /* frames in in->buf before this frame's */
  if (fr->format != in->swr_format || fr->sample_rate != in->swr_rate ||
      cf_av->av_channel_layout_compare(&fr->ch_layout, &in->swr_layout)) {
    AVChannelLayout layout = {0};
    if (fr->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC)
      cf_av->av_channel_layout_default(&layout, fr->ch_layout.nb_channels);
    else if ((err = cf_av->av_channel_layout_copy(&layout, &fr->ch_layout)) < 0)
      return apply_av_error(in->path, "channel layout", err);
    if (!in->swr) {
      /* the start's layout is what every frame becomes: the first
       * frame's, of the channels the engine and output were made for */
      if ((unsigned)layout.nb_channels != in->channels)
        cf_av->av_channel_layout_default(&in->out_layout, (int)in->channels);
      else if ((err = cf_av->av_channel_layout_copy(&in->out_layout,
                                                    &layout)) < 0) {
        cf_av->av_channel_layout_uninit(&layout);
        return apply_av_error(in->path, "channel layout", err);
      }
    } else {
      /* a resampling converter's delay first, whatever changed */
      int got;
      if ((err = input_flush(in, 0, &got))) {
        cf_av->av_channel_layout_uninit(&layout);
        return err;
      }
      done = (size_t)got;
    }
    /* the first frame unlike what libav said of the stream (its probe
     * read a later part of a short file joined from two): converted to
     * that, as the engine and the output were made for it, and said */
    if (!in->swr && !in->quiet &&
        (fr->sample_rate != (int)in->rate ||
         layout.nb_channels != (int)in->channels)) {
      char from[64], to[64];
      if (cf_av->av_channel_layout_describe(&layout, from, sizeof from) < 0)
        snprintf(from, sizeof from, "%d channels", layout.nb_channels);
      if (cf_av->av_channel_layout_describe(&in->out_layout, to, sizeof to) <
          0)
        snprintf(to, sizeof to, "%u channels", in->channels);
      fprintf(stderr,
              "%s: note: %s: the audio starts as %d Hz, %s, where "
              "libav gives the stream as %d Hz, %s (what its probe read "
              "further in): converted to that\n",
              in->prog, in->path, fr->sample_rate, from, in->rate, to);
    }
    if (in->swr && !in->quiet &&
        (fr->sample_rate != in->swr_rate ||
         fr->ch_layout.nb_channels != in->swr_layout.nb_channels)) {
      char from[64], to[64];
      if (cf_av->av_channel_layout_describe(&layout, from, sizeof from) < 0)
        snprintf(from, sizeof from, "%d channels", layout.nb_channels);
      if (cf_av->av_channel_layout_describe(&in->out_layout, to, sizeof to) <
          0)
        snprintf(to, sizeof to, "%u channels", in->channels);
      /* back to the output's own (after a first part converted to it):
       * "converted to" the same read as if it were */
      bool own = fr->sample_rate == (int)in->rate &&
                 layout.nb_channels == (int)in->channels;
      fprintf(stderr,
              "%s: note: %s: the audio changes to %d Hz, %s at "
              "%.3f s: %s %d Hz, %s\n",
              in->prog, in->path, fr->sample_rate, from,
              (double)(in->frames + (int64_t)done) / in->rate,
              own ? "as written from there," : "converted to", in->rate, to);
    }
    cf_av->swr_free(&in->swr);
    cf_av->av_channel_layout_uninit(&in->swr_layout);
    err = cf_av->swr_alloc_set_opts2(&in->swr, &in->out_layout,
                                     AV_SAMPLE_FMT_FLT, in->rate, &layout,
                                     fr->format, fr->sample_rate, 0, NULL);
    /* A downmix into an encoder of integers keeps each output's sum of
     * coefficients within 1 (stereo to mono (L + R) / 2, not / sqrt 2:
     * +3 dB and clipping for a tone in both), as ffmpeg's conversion
     * straight to the integer format does; into float, libswresample's
     * plain matrix, as ffmpeg's too. */
    if (err >= 0 && in->out && in->out->integer)
      err = cf_av->av_opt_set_double(in->swr, "rematrix_maxval", 1.0, 0);
    if (err >= 0)
      err = cf_av->swr_init(in->swr);
    cf_av->av_channel_layout_uninit(&layout);
    if (err < 0)
      return apply_av_error(in->path, "cannot set up the sample converter",
                            err);
    if ((err = cf_av->av_channel_layout_copy(&in->swr_layout, &fr->ch_layout)) <
        0)
      return apply_av_error(in->path, "channel layout", err);
    in->swr_format = fr->format;
    in->swr_rate = fr->sample_rate;
  }
  int want = cf_av->swr_get_out_samples(in->swr, fr->nb_samples);
  if (want < 0)
    return apply_av_error(in->path, "sample conversion failed", want);
  if ((err = input_reserve(in, done + (size_t)want)))
    return err;
  uint8_t *dst = (uint8_t *)(in->buf + done * in->channels);
  int got =
      cf_av->swr_convert(in->swr, &dst, (int)(in->cap - done),
                         (const uint8_t **)fr->extended_data, fr->nb_samples);
  if (got < 0)
    return apply_av_error(in->path, "sample conversion failed", got);
  got += (int)done;
  /* NaN or infinity would spread over a kernel's length of output. */
  for (size_t i = 0; i < (size_t)got * in->channels; i++)
    if (!isfinite(in->buf[i]))
      return apply_error(
          "%s: sample %lld of channel %zu (%.6f s) is %s: "
          "refused",
          in->path, (long long)(in->frames + (int64_t)(i / in->channels)),
          i % in->channels,
          (double)(in->frames + (int64_t)(i / in->channels)) / in->rate,
          isnan(in->buf[i]) ? "NaN" : "infinite");
  if (in->frames == 0 && in->first_pts == AV_NOPTS_VALUE &&
      fr->pts != AV_NOPTS_VALUE)
    in->first_pts =
        cf_av->av_rescale_q(fr->pts, in->fmt->streams[in->stream]->time_base,
                            (AVRational){1, in->rate});
  *frames = (size_t)got;
  in->frames += got;
  return 0;
}

bool apply_damaged(int err)
{
  return err < 0 && err != AVERROR(EAGAIN) && err != AVERROR_EOF &&
         err != AVERROR(ENOMEM) && err != AVERROR_EXIT;
}

/* pkt's decoding time where it has none but a presentation time, as
 * libavformat's muxing guesses it (compute_muxer_pkt_fields): the least
 * of the last `delay` + 1 presentation times, the first packet's
 * predecessors taken a duration apart. */
static void guess_dts(AVPacket *pkt, int delay, apply_copied *c)
{
  if (pkt->dts != AV_NOPTS_VALUE || pkt->pts == AV_NOPTS_VALUE ||
      delay < 0 || delay > APPLY_MAX_REORDER)
    return;
  if (!c->npts++)
    for (int i = 1; i <= delay; i++)
      c->pts[i] = pkt->pts + (i - delay - 1) * pkt->duration;
  c->pts[0] = pkt->pts;
  for (int i = 0; i < delay && c->pts[i] > c->pts[i + 1]; i++) {
    int64_t t = c->pts[i];
    c->pts[i] = c->pts[i + 1];
    c->pts[i + 1] = t;
  }
  pkt->dts = c->pts[0];
}

int apply_copy_packet(AVFormatContext *ic, AVFormatContext *oc,
                      AVPacket *pkt, int os_index, apply_copied *c,
                      const char *out_path)
{
  AVStream *is = ic->streams[pkt->stream_index];
  AVStream *os = oc->streams[os_index];
  AVPacket *conv = NULL; /* pkt converted (text subtitles) */
  if (c->sub) {
    bool got;
    if (!(conv = cf_av->av_packet_alloc()))
      return apply_error("out of memory");
    int rc = apply_subs_convert(c->sub, is, pkt, conv, &got, c->opt->in_path,
                                c->opt->quiet);
    if (rc || !got) {
      cf_av->av_packet_free(&conv);
      return rc;
    }
    pkt = conv;
  }
  cf_av->av_packet_rescale_ts(pkt, is->time_base, os->time_base);
  pkt->stream_index = os_index;
  pkt->pos = -1;
  guess_dts(pkt, os->codecpar->video_delay, c);
  if (!(oc->oformat->flags & AVFMT_NOTIMESTAMPS) &&
      pkt->dts != AV_NOPTS_VALUE && c->last_dts != AV_NOPTS_VALUE) {
    int64_t least =
        c->last_dts + !(oc->oformat->flags & AVFMT_TS_NONSTRICT);
    if (pkt->dts < least) {
      if (!c->told && !c->opt->quiet)
        fprintf(stderr,
                "cudafilter: note: %s: the times of stream %d go back at "
                "%.3f s (joined input?): moved on to the least the format "
                "takes, as ffmpeg does\n",
                out_path, os_index,
                (double)pkt->dts * av_q2d(os->time_base));
      c->told = true;
      if (pkt->pts != AV_NOPTS_VALUE && pkt->pts >= pkt->dts &&
          pkt->pts < least)
        pkt->pts = least;
      pkt->dts = least;
    }
  }
  if (pkt->dts != AV_NOPTS_VALUE)
    c->last_dts = pkt->dts;
  int err = apply_write(c->opt, oc, pkt);
  cf_av->av_packet_free(&conv);
  return err < 0 ? apply_av_error(out_path, "writing failed", err) : 0;
}

int apply_discont_init(apply_discont *d, const AVFormatContext *ic,
                       const char *path, bool quiet)
{
  memset(d, 0, sizeof *d);
  d->on = ic->iformat->flags & AVFMT_TS_DISCONT;
  d->path = path;
  d->quiet = quiet;
  d->n = ic->nb_streams;
  if (!d->on || !d->n)
    return 0;
  if (!(d->next = malloc(d->n * sizeof *d->next)) ||
      !(d->last = malloc(d->n * sizeof *d->last)))
    return apply_error("out of memory");
  for (unsigned i = 0; i < d->n; i++)
    d->next[i] = d->last[i] = AV_NOPTS_VALUE;
  return 0;
}

void apply_discont_free(apply_discont *d)
{
  free(d->next);
  free(d->last);
  d->next = d->last = NULL;
}

void apply_discont_packet(apply_discont *d, const AVFormatContext *ic,
                          AVPacket *pkt)
{
  int si = pkt->stream_index;
  if (!d->on || pkt->dts == AV_NOPTS_VALUE || si < 0 || (unsigned)si >= d->n)
    return;
  AVRational tb = ic->streams[si]->time_base;
  int64_t off = cf_av->av_rescale_q(d->offset, AV_TIME_BASE_Q, tb);
  int64_t far =
      cf_av->av_rescale_q(10 * (int64_t)AV_TIME_BASE, AV_TIME_BASE_Q, tb);
  /* a PTS this far from its DTS is no reordering but damage (or a jump
   * the DTS has not made yet): the DTS, which the jump test below
   * follows, times it */
  if (pkt->pts != AV_NOPTS_VALUE &&
      (pkt->pts - pkt->dts > far || pkt->dts - pkt->pts > far)) {
    if (!d->told_pts && !d->quiet)
      fprintf(stderr,
              "%s: note: %s: a packet of stream %d is shown %.3f s "
              "from when it is decoded (%.3f s; damaged?): timed by its "
              "decoding time\n",
              d->prog ? d->prog : "cudafilter", d->path, si,
              (double)(pkt->pts - pkt->dts) * av_q2d(tb),
              (double)pkt->dts * av_q2d(tb));
    d->told_pts = true;
    pkt->pts = pkt->dts;
  }
  int64_t dts = pkt->dts + off;
  if (d->next[si] != AV_NOPTS_VALUE) {
    int64_t delta = dts - d->next[si];
    int64_t back = cf_av->av_rescale_q(AV_TIME_BASE / 10, AV_TIME_BASE_Q, tb);
    if (delta < -far || delta > far || dts + back < d->last[si]) {
      d->offset -= cf_av->av_rescale_q(delta, tb, AV_TIME_BASE_Q);
      if (!d->told && !d->quiet)
        fprintf(stderr,
                "%s: note: %s: the times jump %s by %.3f s at "
                "%.3f s (files joined?): every stream goes on from where "
                "it was, as ffmpeg's\n",
                d->prog ? d->prog : "cudafilter", d->path,
                delta < 0 ? "back" : "ahead",
                fabs((double)delta * av_q2d(tb)),
                (double)d->next[si] * av_q2d(tb));
      d->told = true;
      off = cf_av->av_rescale_q(d->offset, AV_TIME_BASE_Q, tb);
      dts = pkt->dts + off;
    }
  }
  pkt->dts = dts;
  if (pkt->pts != AV_NOPTS_VALUE)
    pkt->pts += off;
  d->last[si] = dts;
  d->next[si] = dts + (pkt->duration > 0 ? pkt->duration : 0);
}

/* AIFF (and AIFF-C) states its FORM and SSND chunk sizes and its frame
 * count in 32 bits: libav's aiffenc wrapped them past 4 GiB without a
 * word, exit 0 (QA: a 4.01 GiB file said 11 MiB, 2.9 million frames of
 * its 1.08 billion). A WAV is RF64 there (apply_write_header); the other
 * muxers apply writes PCM with state wider sizes (W64, CAF, Sox, MP4,
 * Matroska, FLAC) or none (IRCAM, raw PCM), or, as AU, write "unknown"
 * (0xFFFFFFFF, which readers read to the end) past 2 GiB. Only a file
 * whose header is updated at its end (seekable) states sizes: a pipe's
 * AIFF has none to be wrong. AST (.ast, GameCube sound) wraps its 32-bit
 * size the same way (seen past 4 GiB as AIFF was). CF_TEST_SIZE_LIMIT=
 * BYTES (for tests only) sets a lower limit, so that it is reached
 * without writing 4 GiB. */
int64_t apply_size_limit(const AVFormatContext *oc, const char **name)
{
  const char *f = oc->oformat->name;
  if (!oc->pb || !(oc->pb->seekable & AVIO_SEEKABLE_NORMAL))
    return 0;
  if (!strcmp(f, "aiff"))
    *name = "an AIFF file";
  else if (!strcmp(f, "ast")) /* GameCube sound: its STRM size too */
    *name = "an AST file";
  else
    return 0;
  const char *t = getenv("CF_TEST_SIZE_LIMIT");
  long long v = t && *t ? strtoll(t, NULL, 10) : 0;
  return v > 0 ? (int64_t)v : (int64_t)UINT32_MAX;
}

int apply_write(const apply_opts *o, AVFormatContext *oc, AVPacket *pkt)
{
  const char *name = NULL;
  int64_t limit = apply_size_limit(oc, &name);
  if (limit && cf_av->avio_seek(oc->pb, 0, SEEK_CUR) + pkt->size > limit) {
    apply_error("%s: stopped: %s holds at most %lld bytes (4 GiB: its "
                "sizes are 32-bit); write .w64, .caf or .wav (RF64 past "
                "4 GiB), or cut INPUT into parts",
                o->out_path, name, (long long)limit);
    return APPLY_ERR_SAID;
  }
  int err = cf_av->av_interleaved_write_frame(oc, pkt);
  if (err >= 0 && o->wrote)
    o->wrote(o->out_abort_user);
  return err;
}

/* The next decoded frame, converted: *frames = 0 and in->eof at the end. */
static int input_read(input *in, size_t *frames)
{
  bool next = false; /* a damaged packet: read on before receiving more */
  *frames = 0;
  for (;;) {
    int err = next ? AVERROR(EAGAIN)
                   : cf_av->avcodec_receive_frame(in->dec, in->frame);
    next = false;
    if (err == 0) {
      int rc = input_convert(in, in->frame, frames);
      cf_av->av_frame_unref(in->frame);
      return rc;
    }
    if (err == AVERROR_EOF) {
      /* a resampling converter's last frames first */
      int got = 0;
      if (!in->swr_flushed) {
        in->swr_flushed = true;
        if ((err = input_flush(in, 0, &got)))
          return err;
      }
      if (got > 0) {
        *frames = (size_t)got;
        in->frames += got;
        return 0;
      }
      in->eof = true;
      return 0;
    }
    /* Decoders that take packets whole (PCM, most audio) tell a damaged
     * packet here, not where it is sent (below): a WAV cut inside its
     * last frame ends in a partial one, a PNG frame's zlib data can be
     * broken. Counted and skipped; at the end, the end. */
    if (apply_damaged(err)) {
      in->corrupt++;
      if (in->draining) {
        in->eof = true;
        return 0;
      }
      next = true;
      continue;
    }
    if (err != AVERROR(EAGAIN))
      return apply_av_error(in->path, "decoding failed", err);
    err = cf_av->av_read_frame(in->fmt, in->pkt);
    if (err == AVERROR_EOF) {
      /* (sending may tell a damaged packet before it: the end is sent) */
      if ((err = cf_av->avcodec_send_packet(in->dec, NULL)) < 0 &&
          !apply_damaged(err))
        return apply_av_error(in->path, "decoding failed", err);
      in->corrupt += err < 0;
      in->draining = true;
      continue;
    }
    if (input_stopping(in)) {
      if (!in->h)
        return 130;
      in->eof = in->stopped = true; /* the output ends here */
      return 0;
    }
    if (err < 0)
      return apply_av_error(in->path, "reading failed", err);
    apply_discont_packet(&in->disc, in->fmt, in->pkt);
    int si = in->pkt->stream_index;
    if (si == in->stream) {
      err = cf_av->avcodec_send_packet(in->dec, in->pkt);
      /* A damaged packet is skipped, as ffmpeg does; counted and told. */
      if (apply_damaged(err))
        in->corrupt++;
      else if (err < 0) {
        cf_av->av_packet_unref(in->pkt);
        return apply_av_error(in->path, "decoding failed", err);
      }
    } else if (in->out && in->out->map && si >= 0 &&
               (unsigned)si < in->fmt->nb_streams && in->out->map[si] >= 0) {
      /* another stream (the picture, another track): copied as it is */
      int rc = apply_copy_packet(in->fmt, in->out->oc, in->pkt,
                                 in->out->map[si], &in->out->copied[si],
                                 in->out->path);
      if (rc) {
        cf_av->av_packet_unref(in->pkt);
        return rc;
      }
    }
    cf_av->av_packet_unref(in->pkt);
  }
}

static void input_close(input *in)
{
  apply_discont_free(&in->disc);
  cf_av->swr_free(&in->swr);
  cf_av->av_channel_layout_uninit(&in->swr_layout);
  cf_av->av_channel_layout_uninit(&in->out_layout);
  cf_av->av_frame_free(&in->frame);
  cf_av->av_packet_free(&in->pkt);
  cf_av->avcodec_free_context(&in->dec);
  apply_close_input(&in->fmt);
  free(in->buf);
}

/* ---- output ------------------------------------------------------------ */

/* For a format whose own codec is 16-bit PCM (WAV, AIFF, ...), the PCM
 * codec that keeps the input's precision. */
static enum AVCodecID pcm_for_input(const AVOutputFormat *of,
                                    const input *in)
{
  enum AVCodecID def = of->audio_codec;
  bool le = def == AV_CODEC_ID_PCM_S16LE;
  if (!le && def != AV_CODEC_ID_PCM_S16BE)
    return def;
  /* a raw muxer (-f s16le) is its sample format: no file says another */
  if (!strcmp(of->name, le ? "s16le" : "s16be"))
    return def;
  enum AVSampleFormat f = cf_av->av_get_packed_sample_fmt(in->dec->sample_fmt);
  int bits = in->dec->bits_per_raw_sample;
  switch (f) {
  case AV_SAMPLE_FMT_FLT:
  case AV_SAMPLE_FMT_DBL:
    return le ? AV_CODEC_ID_PCM_F32LE : AV_CODEC_ID_PCM_F32BE;
  case AV_SAMPLE_FMT_S32:
  case AV_SAMPLE_FMT_S64:
    if (bits > 0 && bits <= 24)
      return le ? AV_CODEC_ID_PCM_S24LE : AV_CODEC_ID_PCM_S24BE;
    return le ? AV_CODEC_ID_PCM_S32LE : AV_CODEC_ID_PCM_S32BE;
  default: return def;
  }
}

static bool is_float_fmt(enum AVSampleFormat f)
{
  f = cf_av->av_get_packed_sample_fmt(f);
  return f == AV_SAMPLE_FMT_FLT || f == AV_SAMPLE_FMT_DBL;
}

/* The encoder's sample format closest to the input's precision: float
 * where both are, else the smallest at least as wide, else the widest.
 * A lossy encoder that takes float gets float, as ffmpeg gives it a
 * filter's output: the input's precision means nothing past it, and 16
 * bits clipped what the filter lifted past full scale (QA: a 16-bit WAV
 * into .mp3 or .opus, where a float one was not clipped). */
static enum AVSampleFormat pick_sample_fmt(const AVCodec *c, const input *in)
{
  const enum AVSampleFormat *f = c->sample_fmts;
  if (!f)
    return AV_SAMPLE_FMT_FLT;
  const AVCodecDescriptor *d = cf_av->avcodec_descriptor_get(c->id);
  bool lossy = d && (d->props & AV_CODEC_PROP_LOSSY) &&
               !(d->props & AV_CODEC_PROP_LOSSLESS);
  bool want_float = lossy || is_float_fmt(in->dec->sample_fmt);
  int want = cf_av->av_get_bytes_per_sample(in->dec->sample_fmt);
  enum AVSampleFormat best = AV_SAMPLE_FMT_NONE, widest = f[0];
  for (; *f != AV_SAMPLE_FMT_NONE; f++) {
    int b = cf_av->av_get_bytes_per_sample(*f);
    if (want_float && is_float_fmt(*f) && b == 4)
      return *f;
    if (b > cf_av->av_get_bytes_per_sample(widest))
      widest = *f;
    if (b >= want && (best == AV_SAMPLE_FMT_NONE ||
                      b < cf_av->av_get_bytes_per_sample(best)))
      best = *f;
  }
  return best != AV_SAMPLE_FMT_NONE ? best : widest;
}

int apply_muxer(const apply_opts *o, AVFormatContext **oc)
{
  bool pipe = !strncmp(o->out_path, "pipe:", 5);
  /* no format from the name: said in our words alone (libav's own
   * "Unable to find a suitable output format for 'pipe:1'" came too) */
  if (!o->format && !cf_av->av_guess_format(NULL, o->out_path, NULL))
    return apply_error(
        pipe ? "%s: standard output has no name to tell its format by: give "
               "%s (e.g. wav, flac, matroska)"
             : "%s: cannot tell the output format from the name; use an "
               "extension such as .wav, .flac or .mkv, or %s",
        pipe ? "-" : o->out_path, FMT_OPT(o));
  int err =
      cf_av->avformat_alloc_output_context2(oc, NULL, o->format, o->out_path);
  if (err >= 0 && *oc) {
    /* a network output that stops taking data must not hold us forever */
    (*oc)->interrupt_callback.callback =
        o->out_abort ? o->out_abort : apply_check_interrupt;
    (*oc)->interrupt_callback.opaque = o->out_abort_user;
    return 0;
  }
  if (o->format)
    return apply_error("%s: libav has no output format '%s'", FMT_KEY(o),
                       o->format);
  return apply_error("%s: cannot tell the output format from the name; use "
                     "an extension such as .wav, .flac or .mkv, or %s",
                     o->out_path, FMT_OPT(o));
}

int apply_encoder(const apply_opts *o, const AVFormatContext *oc,
                  enum AVMediaType type, enum AVCodecID id, const AVCodec **out)
{
  const char *kind = type == AVMEDIA_TYPE_AUDIO ? "audio" : "video";
  const AVCodec *codec;
  if (o->codec) {
    /* an encoder's name, else a codec's: its default encoder, as ffmpeg
     * takes -c mp3 for libmp3lame. Where the name is both, an encoder
     * libav calls experimental (opus, vorbis: refused unless asked for
     * with -strict) gives way to the codec's default (libopus,
     * libvorbis). */
    const AVCodecDescriptor *d =
        cf_av->avcodec_descriptor_get_by_name(o->codec);
    const AVCodec *def = d ? cf_av->avcodec_find_encoder(d->id) : NULL;
    codec = cf_av->avcodec_find_encoder_by_name(o->codec);
    if (!codec || (def && (codec->capabilities & AV_CODEC_CAP_EXPERIMENTAL) &&
                   codec->id == d->id))
      codec = def;
    if (!codec && d)
      return apply_error("%s: libav has no encoder for codec '%s'",
                         CODEC_KEY(o), o->codec);
    if (!codec)
      return apply_error("%s: libav has no encoder '%s'", CODEC_KEY(o),
                         o->codec);
    if (codec->type != type)
      return apply_error("%s: '%s' is not %s %s encoder", CODEC_KEY(o),
                         o->codec, type == AVMEDIA_TYPE_AUDIO ? "an" : "a",
                         kind);
  } else {
    if (id == AV_CODEC_ID_NONE)
      return apply_error("%s: format '%s' holds no %s", o->out_path,
                         oc->oformat->name, kind);
    if (!(codec = cf_av->avcodec_find_encoder(id)))
      return apply_error("%s: libav has no encoder for %s (format '%s'); "
                         "choose one with %s",
                         o->out_path, cf_av->avcodec_get_name(id),
                         oc->oformat->name, CODEC_OPT(o));
  }
  *out = codec;
  return 0;
}

/* Whether OUTPUT is written as it is, not under a temporary name: a
 * URL, or what exists and is not a regular file (a FIFO, /dev/null). */
static bool in_place(const char *path)
{
  struct stat st;
  return cf_av_is_url(path) ||
         (stat(cf_av_local(path), &st) == 0 && !S_ISREG(st.st_mode));
}

/* Whether format `oc` can write OUTPUT: a format that opens its own files
 * (AVFMT_NOFILE) would write them under OUTPUT's name, past the
 * temporary one. image2 writes one picture to the temporary name
 * (apply_write_header); a numbered sequence (img-%03d.png), segments and
 * playlists (hls, dash, segment) or tee's outputs cannot be renamed into
 * place as one file: refused unless written in place. */
static int check_nofile(const apply_opts *o, const AVFormatContext *oc,
                        bool tmp)
{
  const char *name = oc->oformat->name;
  if (!(oc->oformat->flags & AVFMT_NOFILE) || !tmp)
    return 0;
  if (strcmp(name, "image2") != 0)
    return apply_error("%s: format '%s' writes files of its own, which "
                       "cannot be written under a temporary name and "
                       "renamed; write one file (.mkv, .wav, ...), or to a "
                       "URL or a device (/dev/null)",
                       o->out_path, name);
  if (cf_av->av_filename_number_test(o->out_path))
    return apply_error("%s: a numbered image sequence cannot be written "
                       "under a temporary name and renamed; write a video "
                       "file (.mkv, .y4m) and split it with ffmpeg, or one "
                       "picture (a name without %%d)",
                       o->out_path);
  return 0;
}

/* Settings `codec` takes for a trial: the first it lists (or common
 * ones); a small picture for video. */
static int trial_settings(AVCodecContext *enc, const AVCodec *codec,
                          const AVOutputFormat *of)
{
  int err = 0;
  if (codec->type == AVMEDIA_TYPE_AUDIO) {
    enc->sample_fmt = codec->sample_fmts ? codec->sample_fmts[0]
                                         : AV_SAMPLE_FMT_FLT;
    enc->sample_rate = codec->supported_samplerates
                           ? codec->supported_samplerates[0]
                           : 48000;
    enc->time_base = (AVRational){1, enc->sample_rate};
    if (codec->ch_layouts && codec->ch_layouts[0].nb_channels)
      err = cf_av->av_channel_layout_copy(&enc->ch_layout,
                                          &codec->ch_layouts[0]);
    else
      cf_av->av_channel_layout_default(&enc->ch_layout, 2);
  } else {
    enc->pix_fmt = codec->pix_fmts ? codec->pix_fmts[0] : AV_PIX_FMT_YUV420P;
    enc->width = 64;
    enc->height = 48;
    enc->time_base = (AVRational){1, 25};
    enc->framerate = (AVRational){25, 1};
  }
  if (of->flags & AVFMT_GLOBALHEADER)
    enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  return err;
}

/* A seekable output that keeps nothing, for the trials of a format's
 * header (MP4 and MOV refuse an output they cannot seek, and look at it
 * in their init). */
typedef struct sink {
  int64_t pos, size;
} sink;

#if LIBAVFORMAT_VERSION_MAJOR >= 61
#define SINK_CONST const
#else
#define SINK_CONST
#endif
static int sink_write(void *opaque, SINK_CONST uint8_t *buf, int n)
{
  sink *s = opaque;
  (void)buf;
  s->pos += n;
  if (s->pos > s->size)
    s->size = s->pos;
  return n;
}

static int64_t sink_seek(void *opaque, int64_t off, int whence)
{
  sink *s = opaque;
  switch (whence & ~AVSEEK_FORCE) {
  case AVSEEK_SIZE: return s->size;
  case SEEK_SET: s->pos = off; break;
  case SEEK_CUR: s->pos += off; break;
  case SEEK_END: s->pos = s->size + off; break;
  default: return AVERROR(EINVAL);
  }
  return s->pos;
}

/* t->pb: a sink (s), till sink_close; < 0: out of memory. */
static int sink_open(AVFormatContext *t, sink *s)
{
  unsigned char *buf = cf_av->av_malloc(4096);
  if (buf && (t->pb = cf_av->avio_alloc_context(buf, 4096, 1, s, NULL,
                                                sink_write, sink_seek)))
    return 0;
  cf_av->av_freep(&buf);
  return AVERROR(ENOMEM);
}

static void sink_close(AVFormatContext *t)
{
  if (t && t->pb) {
    cf_av->av_freep(&t->pb->buffer);
    cf_av->avio_context_free(&t->pb);
  }
}

/* The trial's own muxer, whose refusals are answers, not errors: its
 * log lines ("[ogg] Unsupported codec id in stream 1", even with -q)
 * are not printed. So with checks_quiet, nothing libav logs while
 * apply_check_output looks at -f, -c and OUTPUT: each refusal is said
 * in our words ("[NULL @ 0x...] Requested output format 'x' is not a
 * suitable output format" came before it). Per thread: cudafilterd runs
 * streams side by side. */
static __thread const void *trial_ctx;
static __thread bool checks_quiet;
static pthread_once_t trial_log_once = PTHREAD_ONCE_INIT;

/* libav's warnings that say nothing to apply's user, shown as notes
 * (-v) instead: a demuxer's "Estimating duration from bitrate, this may
 * be inaccurate" (CAF, W64 and other PCM inputs without a stated frame
 * count, on every run: QA), where the duration is only the progress
 * line's total and every frame is read whatever it says. */
static bool libav_noise(int level, const char *fmt)
{
  return level == AV_LOG_WARNING && fmt &&
         strstr(fmt, "Estimating duration from bitrate") != NULL;
}

static void trial_log(void *avcl, int level, const char *fmt, va_list vl)
{
  if (checks_quiet || (avcl && avcl == trial_ctx))
    return;
  cf_av->av_log_default_callback(
      avcl, libav_noise(level, fmt) ? AV_LOG_INFO : level, fmt, vl);
}

static void trial_log_install(void)
{
  cf_av->av_log_set_callback(trial_log);
}

/* Whether OUTPUT's format takes `codec`, which avformat_query_codec
 * cannot always tell (flac, mp3, ogg, adts: muxers without a tag table;
 * FLAC in MP4 or MOV, which has a tag but is refused at normal
 * strictness): refused only when the header is written, after all the
 * reading. A trial: the encoder opened with settings it takes (for its
 * extradata) and the header written to a sink. 1 yes, 0 no, -1 no trial
 * could be made (the run finds out). */
static int trial_codec(const apply_opts *o, const AVCodec *codec)
{
  AVFormatContext *oc = NULL;
  AVCodecContext *enc = NULL;
  AVStream *st;
  int ok = -1;
  if (cf_av->avformat_alloc_output_context2(&oc, NULL, o->format,
                                            o->out_path) < 0 ||
      !oc)
    return -1;
  /* a format that opens files of its own would do so in its init */
  if (!(oc->oformat->flags & AVFMT_NOFILE) &&
      (enc = cf_av->avcodec_alloc_context3(codec)) &&
      trial_settings(enc, codec, oc->oformat) >= 0 &&
      cf_av->avcodec_open2(enc, codec, NULL) >= 0 &&
      (st = cf_av->avformat_new_stream(oc, NULL)) &&
      cf_av->avcodec_parameters_from_context(st->codecpar, enc) >= 0) {
    st->time_base = enc->time_base;
    sink s = {0};
    if (sink_open(oc, &s) == 0)
      ok = cf_av->avformat_write_header(oc, NULL) >= 0;
  }
  cf_av->avcodec_free_context(&enc);
  sink_close(oc);
  cf_av->avformat_free_context(oc);
  return ok;
}

int apply_check_output(const apply_opts *o, bool video)
{
  AVFormatContext *oc = NULL;
  pthread_once(&trial_log_once, trial_log_install);
  checks_quiet = !o->verbose; /* -v: libav's notes too */
  int rc = apply_muxer(o, &oc);
  const AVCodec *codec = NULL;
  /* -f and -c as given are usage errors (exit 2), and so is an OUTPUT
   * whose name tells no format without -f ('-', /dev/null: the help says
   * OUTPUT then needs --format; it was exit 1); one that cannot be
   * written is not */
  if (rc)
    rc = CLI_EXIT_USAGE;
  if (!rc && o->codec &&
      (rc =
           apply_encoder(o, oc, video ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO,
                         AV_CODEC_ID_NONE, &codec)))
    rc = CLI_EXIT_USAGE;
  int q = !rc && codec ? cf_av->avformat_query_codec(
                              oc->oformat, codec->id, FF_COMPLIANCE_NORMAL)
                        : 1;
  /* the muxer's own word where a trial can be had: the query says no to
   * what Matroska writes through VFW (PNG, HuffYUV, UtVideo: ffmpeg
   * writes them) and yes to what MP4 refuses (FLAC) */
  int t = !rc && codec ? trial_codec(o, codec) : -1;
  if (t == 0 || (t < 0 && q == 0)) {
    apply_error("%s: format '%s' cannot hold %s", CODEC_KEY(o),
                oc->oformat->name, o->codec);
    rc = CLI_EXIT_USAGE;
  }
  /* a format with no codec of the kind by default (video into .wav):
   * the daemon's config says the kind; the command line finds it once
   * the input is probed, where an input without video says more */
  if (!rc && !o->codec && o->config_keys &&
      (video ? oc->oformat->video_codec : oc->oformat->audio_codec) ==
          AV_CODEC_ID_NONE)
    rc = apply_error("%s: format '%s' holds no %s", o->out_path,
                     oc->oformat->name, video ? "video" : "audio");
  /* a format that writes files of its own (-f hls, dash, segment) into
   * an OUTPUT renamed into place: -f as given cannot be, as above (it
   * was exit 1) */
  if (!rc && check_nofile(o, oc, !in_place(o->out_path)))
    rc = CLI_EXIT_USAGE;
  if (oc)
    cf_av->avformat_free_context(oc);
  checks_quiet = false;
  return rc;
}

int apply_write_header(const apply_opts *o, AVFormatContext *oc,
                       const char *tmp)
{
  int err, rc;
  if (!(oc->oformat->flags & AVFMT_NOFILE)) {
    /* a local file by the name libav opens it by (cf_av_file_name) */
    const char *target = tmp ? tmp : o->out_path;
    char *name = !tmp && cf_av_is_url(target)
                     ? NULL
                     : cf_av_file_name(cf_av_local(target));
    char why[AV_ERROR_MAX_STRING_SIZE];
    err = cf_av->avio_open2(&oc->pb, name ? name : target, AVIO_FLAG_WRITE,
                            &oc->interrupt_callback, NULL);
    free(name);
    if (err < 0 && !tmp)
      return apply_av_error(target, "cannot create", err);
    /* named as OUTPUT, which the user gave: its directory must exist and
     * be writable (an OUTPUT writable in place is not enough) */
    if (err < 0) {
      cf_av->av_strerror(err, why, sizeof why);
      return apply_error("%s: cannot create %s, the temporary file it is "
                         "written under and renamed from when complete "
                         "(its directory must exist and be writable): %s",
                         o->out_path, tmp, why);
    }
  } else {
    /* The format opens its file itself, by oc->url: the temporary name,
     * which keeps OUTPUT's extension (apply_choose_target). */
    if ((rc = check_nofile(o, oc, tmp != NULL)))
      return rc;
    if (tmp) {
      char *name = cf_av_file_name(tmp);
      cf_av->av_freep(&oc->url);
      oc->url = name ? cf_av->av_strdup(name) : NULL;
      free(name);
      if (!oc->url)
        return apply_error("out of memory");
    }
    /* One picture to one file, not a numbered sequence (apply_video
     * refuses a second frame). */
    if (!strcmp(oc->oformat->name, "image2") &&
        !cf_av->av_filename_number_test(o->out_path) &&
        (err = cf_av->av_opt_set_int(oc->priv_data, "update", 1, 0)) < 0)
      return apply_av_error(o->out_path, "image2 option update", err);
  }
  /* A WAV past 4 GiB (a day of 8 kHz float, 6.2 hours of 16-bit stereo
   * at 48 kHz) was written with sizes of 0xFFFFFFFF ("output file will
   * be broken", exit 0: QA); it is RF64 there, as ffmpeg's -rf64 auto
   * writes it (its ds64 room, a 28-byte JUNK chunk, in every WAV).
   * wavenc's RF64_AUTO is -1. */
  if (!strcmp(oc->oformat->name, "wav") &&
      (err = cf_av->av_opt_set_int(oc->priv_data, "rf64", -1, 0)) < 0)
    return apply_av_error(o->out_path, "wav option rf64", err);
  if ((err = cf_av->avformat_write_header(oc, NULL)) < 0)
    return apply_av_error(o->out_path, "cannot write the header", err);
  return 0;
}

unsigned apply_copy_tag(const AVOutputFormat *of, const AVCodecParameters *p)
{
  unsigned tmp;
  if (!of->codec_tag ||
      cf_av->av_codec_get_id(of->codec_tag, p->codec_tag) == p->codec_id ||
      !cf_av->av_codec_get_tag2(of->codec_tag, p->codec_id, &tmp))
    return p->codec_tag;
  return 0;
}

static int trial_stream(AVFormatContext *t, const AVStream *from)
{
  AVStream *st = cf_av->avformat_new_stream(t, NULL);
  /* its tags too: Matroska wants an attachment's filename and type */
  if (!st || cf_av->avcodec_parameters_copy(st->codecpar, from->codecpar) < 0 ||
      cf_av->av_dict_copy(&st->metadata, from->metadata, 0) < 0)
    return -1;
  st->time_base = from->time_base;
  st->disposition = from->disposition;
  st->avg_frame_rate = from->avg_frame_rate; /* as add_copies copies it */
  return 0;
}

int apply_trial_header(const AVFormatContext *oc, const AVCodecContext *enc,
                       const AVStream *extra)
{
  AVFormatContext *t = NULL;
  sink s = {0};
  AVStream *st;
  int ok = -1;
  if ((oc->oformat->flags & AVFMT_NOFILE) ||
      cf_av->avformat_alloc_output_context2(&t, oc->oformat, NULL, NULL) < 0 ||
      !t)
    return -1;
  pthread_once(&trial_log_once, trial_log_install);
  trial_ctx = t;
  /* in the output's order: the streams in oc, the copy, then the encoded
   * one where oc does not hold it yet (a copy before it: MXF and GXF
   * want the picture first) */
  for (unsigned i = 0; i < oc->nb_streams; i++)
    if (trial_stream(t, oc->streams[i]) < 0)
      goto done;
  if (trial_stream(t, extra) < 0)
    goto done;
  t->streams[t->nb_streams - 1]->codecpar->codec_tag =
      apply_copy_tag(t->oformat, extra->codecpar);
  if (enc) {
    if (!(st = cf_av->avformat_new_stream(t, NULL)) ||
        cf_av->avcodec_parameters_from_context(st->codecpar, enc) < 0)
      goto done;
    st->time_base = enc->time_base;
  }
  if (sink_open(t, &s) == 0)
    ok = cf_av->avformat_write_header(t, NULL) >= 0;
done:
  sink_close(t);
  cf_av->avformat_free_context(t);
  trial_ctx = NULL;
  return ok;
}

/* Tags that give a sound's loudness for players to even out (ReplayGain,
 * Opus's R128 gains): stale once it is filtered. */
static bool loudness_key(const char *k)
{
  return !strncasecmp(k, "REPLAYGAIN_", 11) || !strncasecmp(k, "R128_", 5);
}

/* Keys of a stream's metadata that describe its encoding, not its
 * content: stale once it is encoded again (mkvmerge's statistics, each
 * also with a language suffix: "BPS-eng"). */
static bool encoding_key(const char *k)
{
  static const char *const keys[] = {
      "encoder",         "BPS",
      "DURATION",        "NUMBER_OF_FRAMES",
      "NUMBER_OF_BYTES", "_STATISTICS_WRITING_APP",
      "_STATISTICS_WRITING_DATE_UTC", "_STATISTICS_TAGS"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    size_t n = strlen(keys[i]);
    if (!strncasecmp(k, keys[i], n) && (k[n] == 0 || k[n] == '-'))
      return true;
  }
  return loudness_key(k);
}

/* Side data of a stream that describes its encoding or the sound
 * before filtering: stale once it is encoded again. */
static bool encoding_side_data(enum AVPacketSideDataType t)
{
  return t == AV_PKT_DATA_CPB_PROPERTIES || t == AV_PKT_DATA_REPLAYGAIN;
}

int apply_stream_metadata(AVStream *os, const AVStream *is,
                          const AVCodec *encoder, const char *path)
{
  bool encoded = encoder != NULL;
  const AVDictionaryEntry *e = NULL;
  while ((e = cf_av->av_dict_get(is->metadata, "", e, AV_DICT_IGNORE_SUFFIX)))
    if (!encoded || !encoding_key(e->key)) {
      int err = cf_av->av_dict_set(&os->metadata, e->key, e->value, 0);
      if (err < 0)
        return apply_av_error(path, "stream metadata", err);
    }
  /* the new encoder's name, as ffmpeg tags it */
  if (encoded) {
    char tag[96];
    snprintf(tag, sizeof tag, "%s %s", LIBAVCODEC_IDENT, encoder->name);
    int err = cf_av->av_dict_set(&os->metadata, "encoder", tag, 0);
    if (err < 0)
      return apply_av_error(path, "stream metadata", err);
  }
#if LIBAVFORMAT_VERSION_MAJOR < 61
  for (int i = 0; i < is->nb_side_data; i++) {
    const AVPacketSideData *sd = &is->side_data[i];
    if (encoded && encoding_side_data(sd->type))
      continue;
    uint8_t *d = cf_av->av_stream_new_side_data(os, sd->type, sd->size);
    if (!d)
      return apply_error("out of memory");
    memcpy(d, sd->data, sd->size);
  }
#else
  /* a copy has them already (avcodec_parameters_copy) */
  const AVCodecParameters *ip = is->codecpar;
  AVCodecParameters *op = os->codecpar;
  for (int i = 0; encoded && i < ip->nb_coded_side_data; i++) {
    const AVPacketSideData *sd = &ip->coded_side_data[i];
    if (encoding_side_data(sd->type))
      continue;
    AVPacketSideData *d = cf_av->av_packet_side_data_new(
        &op->coded_side_data, &op->nb_coded_side_data, sd->type, sd->size, 0);
    if (!d)
      return apply_error("out of memory");
    memcpy(d->data, sd->data, sd->size);
  }
#endif
  return 0;
}

int apply_file_metadata(AVFormatContext *oc, const AVFormatContext *ic,
                        bool sound_filtered, int64_t shift, const char *path)
{
  int err;
  const AVDictionaryEntry *e = NULL;
  while ((e = cf_av->av_dict_get(ic->metadata, "", e, AV_DICT_IGNORE_SUFFIX)))
    if (!sound_filtered || !loudness_key(e->key))
      if ((err = cf_av->av_dict_set(&oc->metadata, e->key, e->value, 0)) < 0)
        return apply_av_error(path, "metadata", err);
  for (unsigned i = 0; i < ic->nb_chapters; i++) {
    const AVChapter *from = ic->chapters[i];
    AVChapter *c = cf_av->av_mallocz(sizeof *c);
    if (!c)
      return apply_error("out of memory");
    c->id = from->id;
    c->time_base = from->time_base;
    int64_t by = cf_av->av_rescale_q(shift, AV_TIME_BASE_Q, from->time_base);
    c->start = from->start - by > 0 ? from->start - by : 0;
    c->end = from->end - by > c->start ? from->end - by : c->start;
    /* oc frees it (avformat_free_context) once it holds it */
    int n = (int)oc->nb_chapters;
    if ((err = cf_av->av_dict_copy(&c->metadata, from->metadata, 0)) < 0 ||
        (err = cf_av->av_dynarray_add_nofree(&oc->chapters, &n, c)) < 0) {
      cf_av->av_dict_free(&c->metadata);
      cf_av->av_freep(&c);
      return apply_av_error(path, "chapters", err);
    }
    oc->nb_chapters = (unsigned)n;
  }
  return 0;
}

void apply_copied_free(apply_copied *c, unsigned n)
{
  for (unsigned i = 0; c && i < n; i++)
    apply_subs_free(&c[i].sub);
  free(c);
}

/* Text subtitle stream is (number i), which format oc cannot hold as it
 * is, converted to the format's own text subtitle codec where its header
 * takes that (apply_subs_open): *os_index the new stream, c->sub its
 * converter; else left as they were (-1, NULL). */
static int add_converted(const apply_opts *opt, AVFormatContext *oc,
                         const AVCodecContext *enc, const AVStream *is,
                         unsigned i, const char *path, int *os_index,
                         apply_copied *c)
{
  apply_subconv *sc;
  int rc = apply_subs_open(oc, is, &sc);
  if (rc || !sc)
    return rc;
  const AVCodecContext *se = apply_subs_encoder(sc);
  /* the header's trial on the converted stream's parameters */
  AVFormatContext *t = cf_av->avformat_alloc_context();
  AVStream *ts = t ? cf_av->avformat_new_stream(t, NULL) : NULL;
  if (!ts || cf_av->avcodec_parameters_from_context(ts->codecpar, se) < 0 ||
      cf_av->av_dict_copy(&ts->metadata, is->metadata, 0) < 0) {
    cf_av->avformat_free_context(t);
    apply_subs_free(&sc);
    return apply_error("out of memory");
  }
  ts->time_base = is->time_base;
  ts->disposition = is->disposition;
  int trial = apply_trial_header(oc, enc, ts);
  cf_av->avformat_free_context(t);
  if (trial == 0) { /* -1: no trial; the format's own codec */
    apply_subs_free(&sc);
    return 0;
  }
  AVStream *os = cf_av->avformat_new_stream(oc, NULL);
  int err = os ? cf_av->avcodec_parameters_from_context(os->codecpar, se)
               : AVERROR(ENOMEM);
  if (err < 0) {
    apply_subs_free(&sc);
    return apply_av_error(path, "stream parameters", err);
  }
  os->time_base = is->time_base;
  os->disposition = is->disposition;
  if (!opt->quiet)
    fprintf(stderr,
            "cudafilter: note: %s: subtitle stream %u (%s) converted to %s: "
            "format '%s' holds no %s\n",
            path, i, cf_av->avcodec_get_name(is->codecpar->codec_id),
            cf_av->avcodec_get_name(se->codec_id), oc->oformat->name,
            cf_av->avcodec_get_name(is->codecpar->codec_id));
  c->sub = sc;
  *os_index = os->index;
  return apply_stream_metadata(os, is, se->codec, path);
}

int apply_add_copy(const apply_opts *opt, AVFormatContext *oc,
                   const AVCodecContext *enc, const AVStream *is, unsigned i,
                   const char *path, int *os_index, apply_copied *c)
{
  int err;
  enum AVMediaType t = is->codecpar->codec_type;
  *os_index = -1;
  if (t != AVMEDIA_TYPE_VIDEO && t != AVMEDIA_TYPE_AUDIO &&
      t != AVMEDIA_TYPE_SUBTITLE && t != AVMEDIA_TYPE_ATTACHMENT)
    return 0;
  /* cover art (an attached picture) is copied too where it fits, but
   * only -v says when it does not (a .ogg of a .flac) */
  bool pic = is->disposition & AV_DISPOSITION_ATTACHED_PIC;
  enum AVCodecID own = t == AVMEDIA_TYPE_VIDEO      ? oc->oformat->video_codec
                       : t == AVMEDIA_TYPE_AUDIO    ? oc->oformat->audio_codec
                       : t == AVMEDIA_TYPE_SUBTITLE ? oc->oformat->subtitle_codec
                                                    : AV_CODEC_ID_NONE;
  /* copied where the format's header takes it, with the streams
   * before it: the muxer's own word (a WAV holds one stream, MP4
   * refuses FLAC unless asked -strict, Matroska writes PNG or HuffYUV
   * through VFW though its query says no); where no trial can be
   * had, where the query says it holds the codec or, where that
   * cannot tell (ogg, y4m), when the codec is the format's own */
  int q = cf_av->avformat_query_codec(oc->oformat, is->codecpar->codec_id,
                                      FF_COMPLIANCE_NORMAL);
  bool query = q > 0 || (q < 0 && is->codecpar->codec_id == own);
  /* a format without a codec of the kind may still hold some (MP4 has no
   * default subtitle codec, but takes mov_text); attachments (an ASS
   * track's fonts, which Matroska holds) are the muxer's word alone */
  bool tried =
      own != AV_CODEC_ID_NONE || q > 0 || t == AVMEDIA_TYPE_ATTACHMENT;
  /* formats whose pictures are cover art (MP3's ID3, FLAC's, AIFF's:
   * their video codec is PNG) hold stills in an image codec alone: a
   * film's H.264 passed their header and failed at its first packet
   * ("No mimetype is known", QA) */
  enum AVCodecID vc = is->codecpar->codec_id;
  bool stills_only = t == AVMEDIA_TYPE_VIDEO && own == AV_CODEC_ID_PNG &&
                     vc != AV_CODEC_ID_PNG && vc != AV_CODEC_ID_MJPEG &&
                     vc != AV_CODEC_ID_BMP && vc != AV_CODEC_ID_GIF &&
                     vc != AV_CODEC_ID_TIFF && vc != AV_CODEC_ID_WEBP;
  if (stills_only)
    query = false;
  int trial = stills_only ? -1 : tried ? apply_trial_header(oc, enc, is) : 0;
  bool beside = trial == 0 && query && own != AV_CODEC_ID_NONE;
  if (trial == 0 || (trial < 0 && !query)) {
    int rc;
    if (t == AVMEDIA_TYPE_SUBTITLE &&
        ((rc = add_converted(opt, oc, enc, is, i, path, os_index, c)) ||
         *os_index >= 0))
      return rc;
    /* not tried: a format for other kinds (.mka: Matroska for sound, as
     * ffmpeg maps nothing else there) */
    if ((own == AV_CODEC_ID_NONE || pic) && !opt->verbose)
      return 0;
    const char *kind = cf_av->av_get_media_type_string(t);
    const char *codec = cf_av->avcodec_get_name(is->codecpar->codec_id);
    if (tried)
      fprintf(stderr,
              "cudafilter: %s: %s stream %u (%s) left out: format '%s' "
              "cannot hold it%s\n",
              path, kind, i, codec, oc->oformat->name,
              beside ? " beside the filtered stream" : "");
    else
      fprintf(stderr,
              "cudafilter: %s: %s stream %u (%s) left out: format '%s' "
              "(%s) takes no %s streams\n",
              path, kind, i, codec, oc->oformat->name,
              oc->oformat->long_name ? oc->oformat->long_name : "?", kind);
    return 0;
  }
  AVStream *os = cf_av->avformat_new_stream(oc, NULL);
  if (!os)
    return apply_error("out of memory");
  if ((err = cf_av->avcodec_parameters_copy(os->codecpar, is->codecpar)) < 0)
    return apply_av_error(path, "stream parameters", err);
  os->codecpar->codec_tag = apply_copy_tag(oc->oformat, is->codecpar);
  os->time_base = is->time_base;
  os->disposition = is->disposition;
  os->avg_frame_rate = is->avg_frame_rate;
  *os_index = os->index;
  return apply_stream_metadata(os, is, NULL, path);
}

/* The input's other streams from..to, copied (apply_add_copy). */
static int add_copies(output *o, const apply_opts *opt, const input *in,
                      unsigned from, unsigned to)
{
  int rc;
  unsigned n = in->fmt->nb_streams;
  if (!o->map && !(o->map = malloc(n * sizeof *o->map)))
    return apply_error("out of memory");
  if (!o->copied) {
    if (!(o->copied = calloc(n, sizeof *o->copied)))
      return apply_error("out of memory");
    o->ncopied = n;
  }
  for (unsigned i = from; i < to; i++) {
    o->map[i] = -1;
    o->copied[i] = (apply_copied){.opt = opt, .last_dts = AV_NOPTS_VALUE};
    if ((int)i == in->stream)
      continue;
    if ((rc = apply_add_copy(opt, o->oc, o->st ? NULL : o->enc,
                             in->fmt->streams[i], i, o->path, &o->map[i],
                             &o->copied[i])))
      return rc;
    if (o->map[i] >= 0)
      o->copies++;
  }
  return 0;
}

/* The rate `codec` writes for input at `rate`: that one where it takes it
 * (or lists none), else the one it lists closest to it, the first of two
 * as close: the rate ffmpeg's format negotiation chooses
 * (swap_samplerates in libavfilter). 0: it lists none at all. */
static int pick_rate(const AVCodec *codec, int rate)
{
  const int *r = codec->supported_samplerates;
  if (!r)
    return rate;
  int best = 0;
  long long best_diff = 0;
  for (; *r; r++) {
    long long d = llabs((long long)*r - rate);
    if (!d)
      return rate;
    if (!best || d < best_diff) {
      best = *r;
      best_diff = d;
    }
  }
  return best;
}

/* OUTPUT refused before anything is read where INPUT's length, as its
 * header states it, makes it larger than its format can hold (AIFF: 4
 * GiB; apply_size_limit). A length estimated from the bit rate is not
 * trusted: apply_write stops at the limit. */
static int check_size(const output *o, const input *in)
{
  const char *name = NULL;
  int64_t limit = apply_size_limit(o->oc, &name);
  int bits = cf_av->av_get_bits_per_sample(o->enc->codec_id);
  if (!limit || in->expect <= 0 || bits <= 0 ||
      in->fmt->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE)
    return 0;
  double frames = (double)in->expect * o->enc->sample_rate / in->rate;
  double bytes = (double)cf_av->avio_seek(o->oc->pb, 0, SEEK_CUR) +
                 frames * o->channels * bits / 8.0;
  if (bytes <= (double)limit)
    return 0;
  return apply_error(
      "%s: %s holds at most %lld bytes (4 GiB: its sizes "
      "are 32-bit), and %s's %lld frames (%.1f hours) make "
      "%.2f GiB of %u-channel %d-bit %s: write .w64, .caf "
      "or .wav (RF64 past 4 GiB), or cut INPUT into parts",
      o->path, name, (long long)limit, in->path, (long long)in->expect,
      (double)in->expect / in->rate / 3600.0, bytes / 1073741824.0, o->channels,
      bits, o->enc->codec->name);
}

static int output_open(output *o, const apply_opts *opt, const input *in,
                       unsigned channels)
{
  int err = 0;
  const char *path = opt->out_path;
  o->opt = opt;
  o->path = path;
  o->channels = channels;
  const AVCodec *codec;
  int rc = apply_muxer(opt, &o->oc);
  if (rc || (rc = apply_encoder(opt, o->oc, AVMEDIA_TYPE_AUDIO,
                                pcm_for_input(o->oc->oformat, in),
                                &codec)))
    return rc;
  int rate = pick_rate(codec, in->rate);
  if (rate <= 0)
    return apply_error("%s: encoder %s cannot write %d Hz and lists no "
                       "other rate; choose another with %s",
                       path, codec->name, in->rate, CODEC_OPT(opt));
  if (channels > APPLY_MAX_CHANNELS)
    return apply_error("%s: the kernel gives %u channels: apply writes at "
                       "most %d (the limit of libswresample, which converts "
                       "its samples)",
                       path, channels, APPLY_MAX_CHANNELS);
  if (!(o->enc = cf_av->avcodec_alloc_context3(codec)))
    return apply_error("out of memory");
  o->enc->sample_fmt = pick_sample_fmt(codec, in);
  o->enc->sample_rate = rate;
  o->enc->time_base = (AVRational){1, rate};
  if (opt->channel_layout) {
    err = cf_av->av_channel_layout_from_string(&o->enc->ch_layout,
                                               opt->channel_layout);
    if (err < 0)
      return apply_av_error(opt->channel_layout, "channel layout", err);
    if (o->enc->ch_layout.nb_channels != (int)channels)
      return apply_error("--channel-layout %s has %d channel%s; OUTPUT has "
                         "%u (the kernel's outputs)",
                         opt->channel_layout, o->enc->ch_layout.nb_channels,
                         o->enc->ch_layout.nb_channels == 1 ? "" : "s",
                         channels);
  } else if (channels == in->channels &&
             in->dec->ch_layout.order != AV_CHANNEL_ORDER_UNSPEC) {
    err =
        cf_av->av_channel_layout_copy(&o->enc->ch_layout, &in->dec->ch_layout);
  } else {
    cf_av->av_channel_layout_default(&o->enc->ch_layout, (int)channels);
    /* a matrix's outputs are what its rows make them; libav's usual
     * layout for the count labels them (3: 2.1, its third the LFE, which
     * AAC and AC-3 treat as such): said, as ffmpeg says its guess (QA) */
    char name[64] = "";
    if (channels > 2 && channels != in->channels && !opt->quiet &&
        cf_av->av_channel_layout_describe(&o->enc->ch_layout, name,
                                          sizeof name) > 0)
      fprintf(stderr,
              "%s: note: the kernel's %u outputs are written as %s, "
              "libav's usual layout for %u channels; --channel-layout "
              "names another\n",
              apply_prog(opt), channels, name, channels);
  }
  if (err < 0)
    return apply_av_error(path, "channel layout", err);
  enum AVSampleFormat ef = cf_av->av_get_packed_sample_fmt(o->enc->sample_fmt);
  o->integer = !is_float_fmt(ef);
  if (ef == AV_SAMPLE_FMT_S32) {
    int bits = is_float_fmt(in->dec->sample_fmt)  ? 24
               : in->dec->bits_per_raw_sample > 0 ? in->dec->bits_per_raw_sample
                                                  : 32;
    if (codec->id == AV_CODEC_ID_FLAC && bits > 24)
      bits = 24;
    o->enc->bits_per_raw_sample = bits;
  }
  if (o->oc->oformat->flags & AVFMT_GLOBALHEADER)
    o->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if ((err = cf_av->avcodec_open2(o->enc, codec, NULL)) < 0) {
    char what[224], from[48] = "";
    if (rate != in->rate)
      snprintf(from, sizeof from, " (resampled from %d Hz)", in->rate);
    snprintf(what, sizeof what,
             "encoder %s refuses %d Hz%s, %u channels, %s (choose another "
             "with %s)",
             codec->name, rate, from, channels,
             cf_av->av_get_sample_fmt_name(o->enc->sample_fmt),
             CODEC_OPT(opt));
    return apply_av_error(path, what, err);
  }
  o->frame_size = o->enc->frame_size > 0 && !(codec->capabilities &
                                              AV_CODEC_CAP_VARIABLE_FRAME_SIZE)
                      ? (size_t)o->enc->frame_size
                      : PCM_FRAME;

  if ((rc = add_copies(o, opt, in, 0, (unsigned)in->stream)))
    return rc;
  if (!(o->st = cf_av->avformat_new_stream(o->oc, NULL)) ||
      !(o->frame = cf_av->av_frame_alloc()) ||
      !(o->pkt = cf_av->av_packet_alloc()))
    return apply_error("out of memory");
  if ((err = cf_av->avcodec_parameters_from_context(o->st->codecpar, o->enc)) <
      0)
    return apply_av_error(path, "stream parameters", err);
  o->st->time_base = o->enc->time_base;
  o->st->disposition = in->fmt->streams[in->stream]->disposition;
  if ((rc = apply_stream_metadata(o->st, in->fmt->streams[in->stream], codec,
                                  path)))
    return rc;

  err = cf_av->swr_alloc_set_opts2(
      &o->swr, &o->enc->ch_layout, o->enc->sample_fmt, rate,
      &o->enc->ch_layout, AV_SAMPLE_FMT_FLT, rate, 0, NULL);
  if (err >= 0)
    err = cf_av->swr_init(o->swr);
  if (err < 0)
    return apply_av_error(path, "cannot set up the sample converter", err);
  if (rate != in->rate) {
    /* filtered at the input's rate (the kernel was made for it), then
     * resampled for the encoder, as ffmpeg does */
    err = cf_av->swr_alloc_set_opts2(
        &o->rs, &o->enc->ch_layout, AV_SAMPLE_FMT_FLT, rate,
        &o->enc->ch_layout, AV_SAMPLE_FMT_FLT, in->rate, 0, NULL);
    if (err >= 0)
      err = cf_av->swr_init(o->rs);
    if (err < 0)
      return apply_av_error(path, "cannot set up the resampler", err);
    o->in_rate = in->rate;
    if (!capture && !opt->quiet)
      fprintf(stderr,
              "cudafilter: note: %s: resampled from %d Hz to %d Hz for "
              "encoder %s, which cannot write %d Hz\n",
              path, in->rate, rate, codec->name, in->rate);
  }

  /* the streams after it (those before are in already: the input's
   * order is kept) */
  if ((rc = add_copies(o, opt, in, (unsigned)in->stream + 1,
                       in->fmt->nb_streams)))
    return rc;
  /* the tags and chapters; alone, the sound starts at 0 (beside copies
   * it keeps its input time): the chapters move with it */
  const AVStream *fst = in->fmt->streams[in->stream];
  int64_t shift = !o->copies && fst->start_time != AV_NOPTS_VALUE
                      ? cf_av->av_rescale_q(fst->start_time, fst->time_base,
                                            AV_TIME_BASE_Q)
                      : 0;
  if ((rc = apply_file_metadata(o->oc, in->fmt, true, shift, path)))
    return rc;
  if ((rc = apply_write_header(opt, o->oc, o->tmp)))
    return rc;
  return check_size(o, in);
}

/* Write the packets the encoder has ready. */
static int output_packets(output *o)
{
  for (;;) {
    int err = cf_av->avcodec_receive_packet(o->enc, o->pkt);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF)
      return 0;
    if (err < 0)
      return apply_av_error(o->path, "encoding failed", err);
    cf_av->av_packet_rescale_ts(o->pkt, o->enc->time_base, o->st->time_base);
    o->pkt->stream_index = o->st->index;
    err = apply_write(o->opt, o->oc, o->pkt);
    cf_av->av_packet_unref(o->pkt);
    if (err < 0)
      return apply_av_error(o->path, "writing failed", err);
  }
}

/* Encode x[0..frames) of interleaved float32. */
static int output_encode(output *o, const float *x, size_t frames)
{
  int err;
  cf_av->av_frame_unref(o->frame);
  o->frame->nb_samples = (int)frames;
  o->frame->format = o->enc->sample_fmt;
  o->frame->sample_rate = o->enc->sample_rate;
  if ((err = cf_av->av_channel_layout_copy(&o->frame->ch_layout,
                                           &o->enc->ch_layout)) < 0 ||
      (err = cf_av->av_frame_get_buffer(o->frame, 0)) < 0)
    return apply_av_error(o->path, "encoder frame", err);
  const uint8_t *src = (const uint8_t *)x;
  err = cf_av->swr_convert(o->swr, o->frame->extended_data, (int)frames, &src,
                           (int)frames);
  if (err != (int)frames)
    return apply_av_error(o->path, "sample conversion failed",
                          err < 0 ? err : AVERROR_BUG);
  o->frame->pts = o->start + o->frames;
  o->frames += (int64_t)frames;
  if ((err = cf_av->avcodec_send_frame(o->enc, o->frame)) < 0)
    return apply_av_error(o->path, "encoding failed", err);
  return output_packets(o);
}

/* Measure frames x[0..frames) and append them to o->pend (room made):
 * an integer output's samples clipped at full scale here, as swr's float
 * to integer conversion does not (past about 65536 times full scale its
 * int32 intermediate wraps: +100 was stored as -32768). A sample that is
 * not finite (the kernel and gain overflow float) is refused, as a NaN
 * input is: it has no value to write. */
static int output_append(output *o, const float *x, size_t frames)
{
  const size_t ch = o->channels;
  if (!frames) /* pend may still be NULL */
    return 0;
  float *dst = o->pend + o->npend * ch;
  for (size_t i = 0; i < frames * ch; i++) {
    float v = x[i];
    if (!isfinite(v)) {
      int64_t at = o->frames + (int64_t)(o->npend + i / ch);
      return apply_error("%s: output sample %lld of channel %zu (%.6f s) is "
                         "%s (the kernel and gain overflow float); lower "
                         "--gain or check the kernel",
                         o->path, (long long)at, i % ch,
                         (double)at / o->enc->sample_rate,
                         isnan(v) ? "NaN" : "infinite");
    }
    double a = fabs((double)v);
    if (a > o->peak)
      o->peak = a;
    if (o->integer && a > 1.0) {
      o->clipped++;
      v = v > 0.0f ? 1.0f : -1.0f;
    }
    dst[i] = v;
  }
  o->npend += frames;
  return 0;
}

/* Queue frames at the encoder's rate; encode whole encoder frames (all,
 * when final). */
static int output_queue(output *o, const float *x, size_t frames, bool final)
{
  const size_t ch = o->channels;
  if (o->npend + frames > o->cap) {
    size_t cap = o->npend + frames + o->frame_size;
    float *p = realloc(o->pend, cap * ch * sizeof *p);
    if (!p)
      return apply_error("out of memory");
    o->pend = p;
    o->cap = cap;
  }
  int rc = output_append(o, x, frames);
  if (rc)
    return rc;
  size_t done = 0;
  while (!rc &&
         (o->npend - done >= o->frame_size || (final && done < o->npend))) {
    size_t n =
        o->npend - done < o->frame_size ? o->npend - done : o->frame_size;
    rc = output_encode(o, o->pend + done * ch, n);
    done += n;
  }
  if (done && o->npend > done)
    memmove(o->pend, o->pend + done * ch, (o->npend - done) * ch * sizeof *x);
  o->npend -= done;
  return rc;
}

/* Resample frames x[0..frames) and queue what comes out, no more than
 * `limit` frames in all. */
static int resample(output *o, const float *x, size_t frames, int64_t limit)
{
  const size_t ch = o->channels;
  int want = cf_av->swr_get_out_samples(o->rs, (int)frames);
  if (want < 0)
    return apply_av_error(o->path, "resampling failed", want);
  if ((size_t)want > o->rscap) {
    float *b = realloc(o->rsbuf, (size_t)want * ch * sizeof *b);
    if (!b)
      return apply_error("out of memory");
    o->rsbuf = b;
    o->rscap = (size_t)want;
  }
  uint8_t *dst = (uint8_t *)o->rsbuf;
  const uint8_t *src = (const uint8_t *)x;
  int got = frames ? cf_av->swr_convert(o->rs, &dst, (int)o->rscap, &src,
                                        (int)frames)
                   : 0;
  if (got < 0)
    return apply_av_error(o->path, "resampling failed", got);
  if (got > limit - o->rs_out)
    got = limit - o->rs_out > 0 ? (int)(limit - o->rs_out) : 0;
  o->rs_out += got;
  return output_queue(o, o->rsbuf, (size_t)got, false);
}

/* Queue filtered frames (at the input's rate), resampled first where the
 * encoder writes another rate: clipping and the peak are measured on what
 * is written. When final, the output is made as long as the input at the
 * encoder's rate, round(frames * rate / input rate): libswresample holds
 * back a filter's length, and its flush gives nothing at all from an
 * input shorter than that (40 frames at 96 kHz: none at 48 kHz, in
 * ffmpeg too), so silence is fed after the end till the output is that
 * long, and it is cut there. */
static int output_write(output *o, const float *x, size_t frames, bool final)
{
  if (!o->rs)
    return output_queue(o, x, frames, final);
  o->rs_in += (int64_t)frames;
  int rc = resample(o, x, frames, INT64_MAX);
  if (rc || !final)
    return rc;
  const int64_t rate = o->enc->sample_rate;
  const int64_t target = (o->rs_in * rate + o->in_rate / 2) / o->in_rate;
  enum { SILENCE = 1024 };
  float *zero = calloc(SILENCE * o->channels, sizeof *zero);
  if (!zero)
    return apply_error("out of memory");
  /* a filter spans at most a few hundred input frames: a few rounds */
  for (int round = 0; !rc && o->rs_out < target && round < 256; round++)
    rc = resample(o, zero, SILENCE, target);
  free(zero);
  if (!rc && o->rs_out < target)
    return apply_error("%s: the resampler gave %lld of %lld frames",
                       o->path, (long long)o->rs_out, (long long)target);
  return rc ? rc : output_queue(o, NULL, 0, true);
}

/* libav's W64 muxer (5.1) counts the padding after the data chunk (to
 * 8 bytes) in its size, which Sony's Wave64 leaves out: readers took 1
 * to 7 bytes of zeros for sound (QA: 1001 frames of 16-bit mono read
 * back as 1004; 24-bit: "Invalid PCM packet, data has size 2"). In the
 * file written (the temporary one), the data chunk's size is made what
 * it holds, `end` its end, where the muxer's is that and the padding. */
static int w64_data_size(const output *o, int64_t end)
{
  if (!o->tmp || strcmp(o->oc->oformat->name, "w64"))
    return 0;
  FILE *f = fopen(o->tmp, "r+b");
  if (!f)
    return apply_error("%s: cannot reopen %s to finish it: %s", o->path, o->tmp,
                       strerror(errno));
  unsigned char c[24];
  int64_t at = 40; /* past the riff GUID, its size and the wave GUID */
  bool ok = true;
  while (fseeko(f, (off_t)at, SEEK_SET) == 0 && fread(c, 1, 24, f) == 24) {
    uint64_t size = 0;
    for (int i = 7; i >= 0; i--)
      size = size << 8 | c[16 + i];
    if (memcmp(c, "data", 4) != 0) {
      if (size < 24 || size > (uint64_t)INT64_MAX - 8)
        break;
      at += (int64_t)((size + 7) & ~(uint64_t)7);
      continue;
    }
    uint64_t want = (uint64_t)(end - at);
    if (end >= at + 24 && size > want && size - want < 8) {
      for (int i = 0; i < 8; i++)
        c[i] = (unsigned char)(want >> (8 * i));
      ok =
          fseeko(f, (off_t)(at + 16), SEEK_SET) == 0 && fwrite(c, 1, 8, f) == 8;
    }
    break;
  }
  if (fclose(f) != 0 || !ok)
    return apply_error("%s: cannot finish %s: %s", o->path, o->tmp,
                       strerror(errno));
  return 0;
}

static int output_finish(output *o)
{
  int err = cf_av->avcodec_send_frame(o->enc, NULL);
  if (err < 0)
    return apply_av_error(o->path, "encoding failed", err);
  int rc = output_packets(o);
  if (rc)
    return rc;
  int64_t end = o->oc->pb ? cf_av->avio_seek(o->oc->pb, 0, SEEK_CUR) : -1;
  if ((err = cf_av->av_write_trailer(o->oc)) < 0)
    return apply_av_error(o->path, "cannot finish", err);
  if (o->oc->pb && (err = cf_av->avio_closep(&o->oc->pb)) < 0)
    return apply_av_error(o->path, "cannot close", err);
  return end > 0 ? w64_data_size(o, end) : 0;
}

static void output_close(output *o)
{
  if (o->oc && o->oc->pb)
    cf_av->avio_closep(&o->oc->pb);
  cf_av->avformat_free_context(o->oc);
  cf_av->avcodec_free_context(&o->enc);
  cf_av->swr_free(&o->swr);
  cf_av->swr_free(&o->rs);
  free(o->rsbuf);
  cf_av->av_frame_free(&o->frame);
  cf_av->av_packet_free(&o->pkt);
  free(o->pend);
  free(o->map);
  apply_copied_free(o->copied, o->ncopied);
}

/* ---- the run ------------------------------------------------------------ */

void apply_progress(apply_progress_state *p, double secs, double total,
                    bool done)
{
  double t = apply_now();
  if (!p->on || (!done && t - p->last < 0.1))
    return;
  p->last = t;
  double el = t - p->start;
  char bar[64] = "";
  if (total > 0) {
    double f = secs / total;
    f = f > 1.0 ? 1.0 : f;
    int fill = (int)(f * 24.0 + 0.5);
    snprintf(bar, sizeof bar, "[%.*s%.*s] %3d%% ", fill,
             "########################", 24 - fill, "........................",
             (int)(f * 100.0 + 0.5));
  }
  fprintf(stderr, "\r%s%8.2f s", bar, secs);
  if (total > 0)
    fprintf(stderr, " of %.2f s", total);
  if (el > 0.0 && secs > 0.0)
    fprintf(stderr, "  %.1fx real time", secs / el);
  fputs(done ? "\n" : "   ", stderr);
  fflush(stderr);
}

/* Hand frames [made, made + n) of the engine's output to the file: the
 * first `skip` frames (the latency) are dropped, and nothing past `limit`
 * frames of output is written (SIZE_MAX while the length is unknown). */
static int emit(output *o, const float *y, size_t n, size_t *made, size_t skip,
                size_t limit, bool final)
{
  size_t first = *made < skip ? skip - *made : 0;
  *made += n;
  if (first > n)
    first = n;
  size_t at = *made - n + first - skip; /* output frame index of y[first] */
  size_t keep = n - first;
  if (at >= limit)
    keep = 0;
  else if (keep > limit - at)
    keep = limit - at;
  return output_write(o, y + first * o->channels, keep, final);
}

static int run(const apply_opts *opt, input *in, output *o, cf_engine *e,
               size_t kernel_len)
{
  const size_t lat = cf_engine_latency(e);
  const unsigned cout = cf_engine_out_channels(e);
  size_t made = 0, cap = 0;
  float *y = NULL;
  bool told = false;
  apply_progress_state p = {.on = !opt->quiet && isatty(STDERR_FILENO),
                            .start = apply_now()};
  const double total = (double)in->expect / in->rate;
  int rc = 0;

  while (!rc && !in->eof) {
    size_t n;
    if (input_stopping(in)) {
      if (!in->h) {
        rc = 130;
        break;
      }
      in->stopped = true; /* the output ends with what was read */
      break;
    }
    if ((rc = input_read(in, &n)) || n == 0)
      continue;
    /* with copied streams the sound keeps its place beside them: the
     * output starts where the input's first frame did (the latency is
     * taken out, so output frame i is input frame i) */
    if (o->copies && made == 0 && in->first_pts != AV_NOPTS_VALUE)
      o->start = cf_av->av_rescale_q(in->first_pts, (AVRational){1, in->rate},
                                     o->enc->time_base);
    if (n > cap) {
      float *b = realloc(y, n * cout * sizeof *b);
      if (!b) {
        rc = apply_error("out of memory");
        break;
      }
      y = b;
      cap = n;
    }
    cf_status st = in->h ? in->h->process(in->h->user, in->buf, y, n)
                         : cf_engine_process(e, in->buf, y, n);
    apply_note_fallback(e, &told);
    if (st != CF_OK)
      rc = apply_error("filtering failed: %s", cf_last_error());
    else
      rc = emit(o, y, n, &made, lat, SIZE_MAX, false);
    apply_progress(&p, (double)in->frames / in->rate, total, false);
  }
  if (!rc) {
    /* Without --tail only the `lat` frames behind the input are still to
     * come: the input continued by that much silence gives them, the
     * drain's own arithmetic, without computing the kernel's whole
     * ring-out to throw it away (a 4M-tap kernel's took seconds, and a
     * stopped cudafilterd stream gave up its output meanwhile: QA). */
    bool ring = opt->tail && kernel_len;
    size_t tail = ring ? cf_engine_tail(e) : lat, written = 0;
    size_t limit = (size_t)in->frames + (ring ? kernel_len - 1 : 0);
    if (tail > cap) {
      float *b = realloc(y, tail * cout * sizeof *b);
      if (!b)
        rc = apply_error("out of memory for the %zu-frame tail", tail);
      else
        y = b;
    }
    float *zeros = NULL;
    if (!rc && !ring && tail &&
        !(zeros = calloc(tail * cf_engine_in_channels(e), sizeof *zeros)))
      rc = apply_error("out of memory for the %zu-frame tail", tail);
    cf_status st = CF_OK;
    if (!rc && ring)
      st = cf_engine_drain(e, y, tail, &written);
    else if (!rc && tail && (st = cf_engine_process(e, zeros, y, tail)) == CF_OK)
      written = tail;
    if (!rc && !ring && st == CF_OK)
      st = cf_engine_reset(e); /* as a drain leaves it */
    free(zeros);
    apply_note_fallback(e, &told);
    if (st != CF_OK)
      rc = apply_error("filtering failed: %s", cf_last_error());
    else if (!rc)
      rc = emit(o, y, written, &made, lat, limit, true);
  }
  if (!rc)
    rc = output_finish(o);
  if (!rc)
    apply_progress(&p, (double)in->frames / in->rate, total, true);
  else if (p.on)
    fputc('\n', stderr);
  free(y);
  return rc;
}

/* The temporary name OUTPUT is written under (NULL: write OUTPUT itself,
 * which is not a regular file: a FIFO, /dev/null, a protocol URL). Checks
 * -y and that OUTPUT is not INPUT. */
/* OUTPUT's temporary files left by runs that ended without finishing
 * them (killed, a crash: under a service manager's restarts one more at
 * each), removed: those whose process is gone and that have not been
 * written for a minute (another machine's run, on a shared folder,
 * cannot be asked). Said unless quiet (cudafilterd's log says it). */
static void remove_stale_parts(const char *out, const char *base,
                               size_t blen, const char *ext, bool quiet,
                               bool daemon)
{
  size_t dlen = (size_t)(base - out);
  char *dir = dlen ? strndup(out, dlen) : strdup(".");
  DIR *d = dir ? opendir(dir) : NULL;
  size_t elen = strlen(ext);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    const char *n = e->d_name;
    size_t len = strlen(n);
    if (len <= blen + 9 + elen || strncmp(n, base, blen) ||
        strncmp(n + blen, ".cf-part-", 9) || strcmp(n + len - elen, ext))
      continue;
    char *end;
    long pid = strtol(n + blen + 9, &end, 10);
    if (pid <= 0 || end != n + len - elen || pid == (long)getpid() ||
        kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    char path[4096];
    struct stat st;
    if (snprintf(path, sizeof path, "%s%s", dlen ? dir : "", n) >=
        (int)sizeof path)
      continue;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        time(NULL) - st.st_mtime < 60 || unlink(path) != 0)
      continue;
    if (!quiet || daemon)
      fprintf(stderr,
              "%s: note: removed %s, left unfinished by an earlier run "
              "(process %ld, gone)\n",
              daemon ? "cudafilterd" : "cudafilter", path, pid);
  }
  if (d)
    closedir(d);
  free(dir);
}

int apply_choose_target(const apply_opts *o, char **tmp)
{
  struct stat so, si;
  *tmp = NULL;
  if (cf_av_is_url(o->out_path))
    return 0;
  /* a local file: its name without a "file:" prefix */
  const char *out = cf_av_local(o->out_path);
  if (stat(out, &so) == 0) {
    if (!cf_av_is_url(o->in_path) && stat(cf_av_local(o->in_path), &si) == 0 &&
        si.st_dev == so.st_dev &&
        si.st_ino == so.st_ino)
      return apply_error("%s: OUTPUT is INPUT; write to another file",
                         o->out_path);
    if (!S_ISREG(so.st_mode))
      return 0;
    if (!o->overwrite)
      return apply_error("%s exists; use -y to replace it", o->out_path);
  } else if (lstat(out, &so) == 0 && !o->overwrite) {
    /* a symbolic link to nothing yet: replaced by the file (QA: without
     * -y) */
    return apply_error("%s exists (a symbolic link to a missing file); use "
                       "-y to replace it",
                       o->out_path);
  }
  /* OUTPUT.cf-part-PID.EXT: the extension kept, for formats that look at
   * the name they write (image2) */
  const char *base = strrchr(out, '/');
  base = base ? base + 1 : out;
  const char *ext = strrchr(base, '.');
  if (!ext || ext == base)
    ext = "";
  /* a name near NAME_MAX keeps what fits of it (QA: the temporary name
   * was too long to make, "File name too long", for an OUTPUT that was
   * not) */
  size_t blen = strlen(base), room = strlen(".cf-part-") + 20 + strlen(ext);
  if (blen + room > NAME_MAX)
    blen = room < NAME_MAX - 1 ? NAME_MAX - room : 1;
  remove_stale_parts(out, base, blen, ext, o->quiet, o->config_keys);
  size_t len = strlen(out) + strlen(ext) + 32;
  if (!(*tmp = malloc(len)))
    return apply_error("out of memory");
  snprintf(*tmp, len, "%.*s.cf-part-%ld%s", (int)(base - out + blen), out,
           (long)getpid(), ext);
  return 0;
}

/* --routing matrix reads a set of per-channel kernels (a true-stereo
 * WAV's four channels) as a matrix of the input's channels, as cudafir's
 * routing=matrix does (QA: refused, "kernel ... is per-channel"); the
 * other routings check the file's. */
static int check_kernel(const apply_opts *o, cf_kernel **kp,
                        unsigned channels)
{
  if (o->have_routing && o->routing == CF_ROUTING_MATRIX &&
      cf_kernel_routing(*kp) == CF_ROUTING_PER_CHANNEL &&
      cf_kernel_count(*kp) % channels == 0) {
    cf_kernel *m;
    if (cf_kernel_as_matrix(*kp, channels, &m) != CF_OK)
      return apply_error("kernel %s as a matrix: %s", o->kernel_path,
                         cf_last_error());
    cf_kernel_free(*kp);
    *kp = m;
  }
  const cf_kernel *k = *kp;
  cf_routing r = cf_kernel_routing(k);
  unsigned ins = cf_kernel_inputs(k), outs = cf_kernel_outputs(k);
  if (o->have_routing && r != o->routing)
    return apply_error("--routing %s given, but kernel %s is %s",
                       cf_routing_name(o->routing), o->kernel_path,
                       cf_routing_name(r));
  /* a stereo IR on mono, a true-stereo IR's four channels on stereo:
   * the usual wish is the matrix, which the message names (QA: afir
   * users were left to find --routing in the help) */
  if (r == CF_ROUTING_PER_CHANNEL && ins != channels && ins % channels == 0)
    return apply_error("kernel %s has %u per-channel kernels, but %s has %u "
                       "channel%s; --routing matrix reads them as a %u x %u "
                       "matrix (%u channel%s in, %u out)",
                       o->kernel_path, ins, o->in_path, channels,
                       channels == 1 ? "" : "s", ins / channels, channels,
                       channels, channels == 1 ? "" : "s", ins / channels);
  if (r == CF_ROUTING_PER_CHANNEL && ins != channels)
    return apply_error("kernel %s has %u per-channel kernels, but %s has %u "
                       "channel%s",
                       o->kernel_path, ins, o->in_path, channels,
                       channels == 1 ? "" : "s");
  if (r == CF_ROUTING_MATRIX && ins != channels)
    return apply_error("kernel %s is a %u x %u matrix (outputs x inputs), but "
                       "%s has %u channel%s",
                       o->kernel_path, outs, ins, o->in_path, channels,
                       channels == 1 ? "" : "s");
  return 0;
}

static void describe(const apply_opts *opt, const input *in, const output *o,
                     const cf_kernel *k, const cf_engine *e)
{
  char layout[64] = "";
  cf_av->av_channel_layout_describe(&in->dec->ch_layout, layout, sizeof layout);
  fprintf(stderr, "cudafilter: %s: %s, %s, %d Hz, %u channels (%s)\n", in->path,
          in->fmt->iformat->name, in->dec->codec->name, in->rate, in->channels,
          layout);
  fprintf(stderr,
          "cudafilter: kernel %s: %s, %u output(s) x %u input(s), "
          "%zu taps, gain %+.2f dB\n",
          opt->kernel_path, cf_routing_name(cf_kernel_routing(k)),
          cf_kernel_outputs(k), cf_kernel_inputs(k), cf_kernel_max_len(k),
          opt->gain_db);
  fprintf(stderr, "cudafilter: engine: %s\n", cf_engine_describe(e));
  fprintf(stderr,
          "cudafilter: latency %zu frames (taken out), tail %zu "
          "frames\n",
          cf_engine_latency(e), cf_engine_tail(e));
  fprintf(stderr, "cudafilter: %s: %s, %s (%s, %d bits), %d Hz%s, %u "
          "channels\n",
          o->path, o->oc->oformat->name, o->enc->codec->name,
          cf_av->av_get_sample_fmt_name(o->enc->sample_fmt),
          o->enc->bits_per_raw_sample
              ? o->enc->bits_per_raw_sample
              : 8 * cf_av->av_get_bytes_per_sample(o->enc->sample_fmt),
          o->enc->sample_rate, o->rs ? " (resampled)" : "", o->channels);
}

int apply_probe(const char *path, int stream, unsigned *rate,
                unsigned *channels, double *seconds, const apply_hooks *h)
{
  input in = {.h = h, .want = stream};
  int rc = input_open(&in, path, NULL);
  if (!rc) {
    *rate = (unsigned)in.rate;
    *channels = in.channels;
    *seconds = (double)in.expect / in.rate;
  }
  input_close(&in);
  return rc;
}

int apply_audio(const apply_opts *opt, const char *tmp, const apply_hooks *h,
                apply_result *res)
{
  input in = {.h = h,
              .want = opt->stream,
              .quiet = !apply_input_notes(opt),
              .prog = apply_prog(opt)};
  output out = {.tmp = tmp};
  cf_kernel *k = NULL;
  cf_engine *e = h ? h->engine : NULL;
  size_t kernel_len = 0;
  int rc;
  memset(res, 0, sizeof *res);
  if ((rc = input_open(&in, opt->in_path, opt)))
    goto done;
  if (h && ((unsigned)in.rate != h->rate || in.channels != h->channels)) {
    rc = apply_error("%s: %d Hz, %u channel(s): the stream was set up for "
                     "%u Hz, %u channel(s) (the file changed?)",
                     opt->in_path, in.rate, in.channels, h->rate, h->channels);
    goto done;
  }
  if (!h) {
    if (cf_kernel_load(opt->kernel_path, (unsigned)in.rate, &k) != CF_OK) {
      const char *msg = cf_last_error();
      rc =
          strstr(msg, opt->kernel_path)
              ? apply_error("cannot load kernel: %s", msg)
              : apply_error("cannot load kernel %s: %s", opt->kernel_path, msg);
      goto done;
    }
    if ((rc = check_kernel(opt, &k, in.channels)))
      goto done;
    if (opt->gain_db != 0.0 &&
        cf_kernel_scale(k, (float)pow(10.0, opt->gain_db / 20.0)) != CF_OK) {
      rc = apply_error("gain %g dB: %s", opt->gain_db, cf_last_error());
      goto done;
    }
    cf_audio_config cfg = opt->cfg;
    cfg.channels = in.channels;
    if (cf_engine_new_audio(&cfg, k, &e) != CF_OK) {
      rc = apply_error("cannot create the engine: %s", cf_last_error());
      goto done;
    }
    kernel_len = cf_kernel_max_len(k);
  }
  if ((rc = output_open(&out, opt, &in, cf_engine_out_channels(e))))
    goto done;
  in.out = &out;
  if (opt->verbose && k)
    describe(opt, &in, &out, k, e);

  rc = run(opt, &in, &out, e, kernel_len);
  /* a pipe read to its end: its bytes are known now */
  int64_t piped = apply_tap_size(in.fmt);
  if (!rc && piped >= 0 && !in.stopped)
    input_cut(&in, piped);
  /* a file cut while it was read (whole at its open: a W64's or CAF's
   * data chunk, whose length libav does not give as it gives a WAV's,
   * was compared with its size then only): its bytes now, as a pipe's
   * (QA: a daemon's file stream of a W64 cut while read said nothing) */
  int64_t now = !rc && piped < 0 && !in.stopped && in.chunk_size > 0 &&
                        !in.stated && !in.stated_bytes
                    ? input_size_now(opt)
                    : -1;
  if (now >= 0)
    input_cut(&in, now);
  /* cut short before its first sample: nothing of it to write (read in
   * part, apply warns and writes what there is) */
  if (!rc && !h && in.frames == 0 && in.stated > 0)
    rc = apply_error("%s is cut short: its header states %lld frame%s "
                     "(%.3f s at %d Hz), %s; nothing written",
                     opt->in_path, (long long)in.stated, apply_s(in.stated),
                     (double)in.stated / in.rate, in.rate,
                     in.stated == 1 ? "it is not there"
                                    : "none of them are there");
  else if (!rc && !h && in.frames == 0 && in.stated_bytes > 0)
    rc = apply_error("%s is cut short: its header states %lld byte%s of "
                     "sound, %lld of them %s there and none could be "
                     "decoded; nothing written",
                     opt->in_path, (long long)in.stated_bytes,
                     apply_s(in.stated_bytes), (long long)in.held_bytes,
                     in.held_bytes == 1 ? "is" : "are");
  /* no exact length, but a container that gives it one (Matroska's
   * Duration, rounded; an estimate) and no frame decoded: damaged or cut
   * before its first frame (libav: "File ended prematurely"), not the
   * empty file "holds no frame" would call it (QA: a FLAC or Opus .mka
   * cut after its header, exit 0 and an empty OUTPUT) */
  else if (!rc && !h && in.frames == 0 && in.expect > 0)
    rc = apply_error("%s: no frame of it could be decoded, though its "
                     "container gives it %.3f s: the file is damaged or cut "
                     "short; nothing written",
                     opt->in_path, (double)in.expect / in.rate);
  if (!rc)
    rc = apply_commit(opt, tmp);
  res->frames_in = in.frames;
  res->frames_out = out.frames;
  res->out_channels = out.channels;
  res->in_rate = (unsigned)in.rate;
  res->rate = out.enc ? (unsigned)out.enc->sample_rate : (unsigned)in.rate;
  res->clipped = out.clipped;
  res->peak = out.peak;
  res->corrupt = in.corrupt;
  res->stopped = in.stopped;
  if (!in.stopped) {
    res->stated = in.stated;
    res->stated_bytes = in.stated_bytes;
    res->held_bytes = in.held_bytes;
  }
  snprintf(res->codec, sizeof res->codec, "%s", out.enc->codec->name);
  if (!h)
    snprintf(res->engine, sizeof res->engine, "%s", cf_engine_describe(e));
done:
  output_close(&out);
  if (rc && tmp)
    unlink(tmp);
  input_close(&in);
  if (!h)
    cf_engine_free(e);
  cf_kernel_free(k);
  return rc;
}
