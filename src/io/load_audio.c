/* Audio kernel files (WAV, FLAC, anything libav decodes): each channel is
 * one kernel, resampled with libswresample to the wanted rate, its gain
 * (frequency response) kept. */
#include "io_internal.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "av_lazy.h"

/* Samples over all channels: a tiny compressed file can decode to
 * gigabytes, so the total is capped as well as each kernel, both as
 * decoded and as resampled (a 230 kB FLAC file of silence held 3 billion
 * samples: 13 s of work to downsample). */
#define AUDIO_MAX_TOTAL ((size_t)1 << 27)
/* Highest rate accepted (Hz), asked for or in the file. */
#define AUDIO_MAX_RATE 1000000u
/* Most downsampling: libswresample's filter grows with the ratio (32 taps
 * times the ratio, for up to 1024 phases: some 33 MB at 256x; a hostile
 * header's 520 MHz to 48 kHz asked for 1.6 GB). Most upsampling too: the
 * silence before the kernel (feed_lead) grows with it (a 56-byte WAV at
 * 1 Hz took 4 GB and 10 s to reach 1 MHz). */
#define AUDIO_MAX_RATIO 256u
/* Most channels: libswresample, which converts every file to float,
 * takes at most 64 (its SWR_CH_MAX); more failed as an internal error. */
#define AUDIO_MAX_CHANNELS 64u

typedef struct audio_loader {
  const char *path;
  AVFormatContext *fmt;
  AVCodecContext *dec;
  SwrContext *swr;
  AVPacket *pkt;
  AVFrame *frame;
  int stream;
  int out_rate;
  /* Set from the first decoded frame; later frames must match. */
  AVChannelLayout layout;
  int in_format, in_rate;
  unsigned channels;
  size_t max_in;      /* per channel, at the file's rate */
  size_t max_len;     /* per channel, after resampling */
  int64_t decoded;    /* samples per channel at the file's rate */
  /* Encoder priming and end padding (lossy codecs): decoded samples to
   * drop before the first (AAC whose file states no priming) and the
   * most to keep (a lossy stream's stated length; 0: no limit) */
  int64_t skip, end;
  /* whether the file states its priming (a packet's skip samples, which
   * the decoder drops, or the codec's initial padding) */
  bool priming_stated;
  /* samples the file says to drop (its packets' skip samples at the
   * start and end, AAC's first frame where unstated) and the longest
   * frame decoded: what a whole lossy file may decode short of its
   * stated length (check_complete) */
  int64_t dropped;
  int max_frame;
  /* silence fed before the kernel, at the file's rate and as resampled:
   * the resampler's ringing before the kernel's first sample comes out
   * there (lead_out samples) */
  size_t lead_in, lead_out;
  /* a RIFF WAV whose header states no data size (0 or 0xFFFFFFFF, as a
   * recording in progress writes it): its data ends with the file */
  bool open_ended;
  /* a WAV whose codec wav_codec corrected: libav's stated length came
   * from the codec it took (check_wav_length checks the length) */
  bool recoded;
  /* a chained Ogg file (walk_ogg): it states its last link's length */
  bool chained;
  /* the stream's decoder, and its last packet's time (chained: a link
   * starts where it goes back) */
  const AVCodec *codec;
  int64_t last_pts;
  cf_io_taps *chan;   /* channels arrays */
} audio_loader;

/* A libav error as a message naming the file and the step that failed. */
static cf_status av_fail(const audio_loader *a, cf_status s, const char *what,
                         int err)
{
  char buf[AV_ERROR_MAX_STRING_SIZE];
  cf_av->av_strerror(err, buf, sizeof buf);
  if (err == AVERROR(ENOMEM))
    s = CF_E_NOMEM;
  const char *format = a->fmt ? a->fmt->iformat->name : NULL;
  return cf_fail(s, "%s: %s%s%s%s: %s", a->path, what,
                 format ? " (libav took it for '" : "", format ? format : "",
                 format ? "')" : "", buf);
}

/* A WAV file's first bytes and its fmt chunk's format tag (the
 * extensible format's subformat), little- or big-endian (RIFX) as its
 * magic says; FALSE where it cannot be read so (a URL, not RIFF/RIFX). */
static bool wav_header(const audio_loader *a, bool *rifx, unsigned *tag)
{
  FILE *f = cf_av_is_url(a->path) ? NULL : fopen(cf_av_local(a->path), "rb");
  unsigned char h[26];
  bool ok = false;
  *tag = 0;
  if (f && fread(h, 1, 12, f) == 12 &&
      (!memcmp(h, "RIFF", 4) || !memcmp(h, "RIFX", 4))) {
    *rifx = !memcmp(h, "RIFX", 4);
    ok = true;
    for (int chunk = 0; chunk < 64 && fread(h, 1, 8, f) == 8; chunk++) {
      uint32_t len = *rifx ? (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 |
                                 (uint32_t)h[6] << 8 | h[7]
                           : h[4] | (uint32_t)h[5] << 8 |
                                 (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
      if (!memcmp(h, "fmt ", 4)) {
        size_t got = fread(h, 1, len < 26 ? len : 26, f);
        unsigned t = got >= 2 ? (*rifx ? (unsigned)h[0] << 8 | h[1]
                                       : h[0] | (unsigned)h[1] << 8)
                              : 0;
        if (t == 0xFFFE && got >= 26) /* extensible: its subformat */
          t = *rifx ? (unsigned)h[24] << 8 | h[25] : h[24] | (unsigned)h[25] << 8;
        *tag = t;
        break;
      }
      if (fseek(f, (long)len + (long)(len & 1), SEEK_CUR) != 0)
        break;
    }
  }
  if (f)
    fclose(f);
  return ok;
}

/* The codec a WAV file's samples really are where libav 5.1 misreads a
 * valid file, decoding noise without a word (QA): RIFX, the big-endian
 * WAV, whose header it reads but whose samples it takes as
 * little-endian; and PCM of 24 valid bits in 32-bit containers
 * (WAVE_FORMAT_EXTENSIBLE), which it takes for 24-bit floats: the bits
 * are left-justified integers, read as 32-bit ones. Else id. */
static enum AVCodecID wav_codec(const audio_loader *a, enum AVCodecID id)
{
  bool rifx;
  unsigned tag;
  if (strcmp(a->fmt->iformat->name, "wav") != 0 ||
      !wav_header(a, &rifx, &tag))
    return id;
  if (id == AV_CODEC_ID_PCM_F24LE && tag == 1)
    id = AV_CODEC_ID_PCM_S32LE;
  if (!rifx)
    return id;
  switch (id) {
  case AV_CODEC_ID_PCM_S16LE: return AV_CODEC_ID_PCM_S16BE;
  case AV_CODEC_ID_PCM_S24LE: return AV_CODEC_ID_PCM_S24BE;
  case AV_CODEC_ID_PCM_S32LE: return AV_CODEC_ID_PCM_S32BE;
  case AV_CODEC_ID_PCM_F32LE: return AV_CODEC_ID_PCM_F32BE;
  case AV_CODEC_ID_PCM_F64LE: return AV_CODEC_ID_PCM_F64BE;
  default: return id;
  }
}

/* No audio stream to decode (err from av_find_best_stream): a video
 * file said "no decodable audio stream: Stream not found"; it now says
 * what the file holds (an MP4 whose audio track has no samples holds
 * none: libav drops the track), or which codec has no decoder here. */
static cf_status no_audio(const audio_loader *a, int err)
{
  char held[128] = "";
  size_t at = 0;
  const AVStream *audio = NULL;
  for (unsigned i = 0; i < a->fmt->nb_streams && at < sizeof held; i++) {
    const AVCodecParameters *p = a->fmt->streams[i]->codecpar;
    const char *type = cf_av->av_get_media_type_string(p->codec_type);
    if (p->codec_type == AVMEDIA_TYPE_AUDIO && !audio)
      audio = a->fmt->streams[i];
    int w = snprintf(held + at, sizeof held - at, "%s%s (%s)", i ? ", " : "",
                     type ? type : "unknown",
                     cf_av->avcodec_get_name(p->codec_id));
    at += w > 0 ? (size_t)w : 0;
  }
  if (err == AVERROR_DECODER_NOT_FOUND && audio)
    return cf_fail(CF_E_FORMAT, "%s: no decoder for its audio (codec '%s') "
                   "in this libav", a->path,
                   cf_av->avcodec_get_name(audio->codecpar->codec_id));
  if (err == AVERROR_STREAM_NOT_FOUND)
    return cf_fail(CF_E_FORMAT, "%s: no audio stream: libav took it for "
                   "'%s', holding %s", a->path, a->fmt->iformat->name,
                   a->fmt->nb_streams ? held : "no streams");
  return av_fail(a, CF_E_FORMAT, "no decodable audio stream", err);
}

/* A decoder for the stream from its parameters, in a->dec (a fresh one
 * where one was open): an AVERROR. */
static int open_decoder(audio_loader *a)
{
  const AVStream *st = a->fmt->streams[a->stream];
  cf_av->avcodec_free_context(&a->dec);
  if (!(a->dec = cf_av->avcodec_alloc_context3(a->codec)))
    return AVERROR(ENOMEM);
  int err = cf_av->avcodec_parameters_to_context(a->dec, st->codecpar);
  if (err < 0)
    return err;
  /* The decoder drops the priming and end padding the demuxer states
   * (MP3's LAME delay, Opus's pre-skip, an MP4 edit list); without the
   * packets' time base it wrote "Could not update timestamps for skipped
   * samples" to stderr on every such load. Its other messages (a
   * corrupt frame's) are demoted to verbose: the load's own error says
   * what failed, and an embedding application's stderr is its own (the
   * log callback is process-wide; this offset is the decoder's). */
  a->dec->pkt_timebase = st->time_base;
  a->dec->log_level_offset = AV_LOG_VERBOSE - AV_LOG_ERROR;
  return cf_av->avcodec_open2(a->dec, a->codec, NULL);
}

static cf_status open_input(audio_loader *a)
{
  /* a local name with a ':' ("ir:1.wav") is that file, where libav took
   * "ir" for a protocol */
  char *name = cf_av_is_url(a->path) ? NULL
                                     : cf_av_file_name(cf_av_local(a->path));
  int err = cf_av->avformat_open_input(&a->fmt, name ? name : a->path, NULL,
                                       NULL);
  free(name);
  if (err < 0) {
    bool io = err == AVERROR(ENOENT) || err == AVERROR(EACCES) ||
              err == AVERROR(EISDIR) || err == AVERROR(EIO);
    /* a file that opens, whose header libav cannot make sense of, is
     * malformed: libav says EIO or ENOMEM for some (a FLAC block length
     * past the file, a WAV fmt chunk of 1000 bytes), EINVAL for an MP3
     * of no frames */
    FILE *f = (err == AVERROR(EIO) || err == AVERROR(ENOMEM) ||
               err == AVERROR(EINVAL) || err == AVERROR_EOF)
                  ? fopen(cf_av_local(a->path), "rb")
                  : NULL;
    if (f) {
      fclose(f);
      char buf[AV_ERROR_MAX_STRING_SIZE];
      cf_av->av_strerror(err, buf, sizeof buf);
      /* an Ogg file cut short, or a container with no audio packets,
       * ends before libav has read the stream's headers */
      return cf_fail(CF_E_FORMAT, "%s: cannot open as audio: %s (libav "
                     "says: %s)", a->path, err == AVERROR_EOF
                     ? "the file ends before its audio starts: truncated, "
                       "or it holds none"
                     : "malformed or not audio", buf);
    }
    return av_fail(a, io ? CF_E_IO : CF_E_FORMAT, "cannot open as audio",
                   err);
  }
  if ((err = cf_av->avformat_find_stream_info(a->fmt, NULL)) < 0)
    return av_fail(a, CF_E_FORMAT, "cannot read audio stream info", err);
  const AVCodec *codec = NULL;
  a->stream = cf_av->av_find_best_stream(a->fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &codec,
                                  0);
  if (a->stream < 0)
    return no_audio(a, a->stream);
  AVStream *st = a->fmt->streams[a->stream];
  enum AVCodecID id = wav_codec(a, st->codecpar->codec_id);
  if (id != st->codecpar->codec_id) {
    st->codecpar->codec_id = id;
    a->recoded = true;
    if (!(codec = cf_av->avcodec_find_decoder(id)))
      return av_fail(a, CF_E_FORMAT, "no decoder for its samples",
                     AVERROR_DECODER_NOT_FOUND);
  }
  a->codec = codec;
  if ((err = open_decoder(a)) < 0)
    return av_fail(a, err == AVERROR(ENOMEM) ? CF_E_NOMEM : CF_E_FORMAT,
                   "cannot open the audio decoder", err);
  a->priming_stated = st->codecpar->initial_padding > 0;
  /* A lossy stream of a stated length (an MP4's edit list, an Ogg's last
   * granule) decodes to whole frames: the encoder's padding after the
   * end came out as taps (an AAC IR of 12000 samples in .m4a loaded as
   * 12288). */
  const AVCodecDescriptor *d = cf_av->avcodec_descriptor_get(id);
  if (d && !(d->props & AV_CODEC_PROP_LOSSLESS) &&
      a->fmt->duration_estimation_method == AVFMT_DURATION_FROM_STREAM &&
      st->duration != AV_NOPTS_VALUE && st->duration > 0)
    a->end = st->duration; /* in samples at the first frame (take_frame) */
  if (!(a->pkt = cf_av->av_packet_alloc()) || !(a->frame = cf_av->av_frame_alloc()))
    return av_fail(a, CF_E_NOMEM, "audio frame", AVERROR(ENOMEM));
  return CF_OK;
}

/* The resampler and the channel arrays, from the first frame's format
 * (some decoders only know the layout once they have decoded). */
static cf_status open_resampler(audio_loader *a, const AVFrame *fr)
{
  unsigned n = (unsigned)fr->ch_layout.nb_channels;
  if (n < 1 || n > CF_MAX_CHANNELS || fr->sample_rate <= 0 ||
      (unsigned)fr->sample_rate > AUDIO_MAX_RATE)
    return cf_fail(CF_E_FORMAT, "%s: %u channels at %d Hz: need 1..%u "
                   "channels and a rate of 1..%u Hz", a->path, n,
                   fr->sample_rate, CF_MAX_CHANNELS, AUDIO_MAX_RATE);
  if (n > AUDIO_MAX_CHANNELS)
    return cf_fail(CF_E_FORMAT, "%s: %u channels: an audio kernel file holds "
                   "at most %u (libswresample's limit; a .npy file holds "
                   "more kernels)", a->path, n, AUDIO_MAX_CHANNELS);
  /* in 64 bits, not divided: 187 Hz to 48 kHz (256.7x) passed as 256 */
  if (a->out_rate &&
      ((int64_t)fr->sample_rate > (int64_t)a->out_rate * AUDIO_MAX_RATIO ||
       (int64_t)a->out_rate > (int64_t)fr->sample_rate * AUDIO_MAX_RATIO))
    return cf_fail(CF_E_INVALID, "%s: cannot resample %d Hz to %d Hz: more "
                   "than %ux %s", a->path, fr->sample_rate, a->out_rate,
                   AUDIO_MAX_RATIO, fr->sample_rate > a->out_rate ? "down"
                                                                  : "up");
  int err = 0;
  if (fr->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC)
    cf_av->av_channel_layout_default(&a->layout, (int)n); /* swr wants an order */
  else
    err = cf_av->av_channel_layout_copy(&a->layout, &fr->ch_layout);
  if (err < 0)
    return av_fail(a, CF_E_INTERNAL, "audio channel layout", err);
  a->channels = n;
  a->in_format = fr->format;
  a->in_rate = fr->sample_rate;
  if (!a->out_rate)
    a->out_rate = a->in_rate;
  a->max_in = AUDIO_MAX_TOTAL / n;
  a->max_len = a->max_in < CF_KERNEL_MAX_TAPS ? a->max_in : CF_KERNEL_MAX_TAPS;
  /* Same layout in and out: no remixing, each channel stays a kernel. */
  err = cf_av->swr_alloc_set_opts2(&a->swr, &a->layout, AV_SAMPLE_FMT_FLTP,
                            a->out_rate, &a->layout, fr->format,
                            fr->sample_rate, 0, NULL);
  if (err >= 0)
    err = cf_av->swr_init(a->swr);
  if (err < 0)
    return av_fail(a, CF_E_INTERNAL, "cannot set up the audio resampler", err);
  if (!(a->chan = calloc(n, sizeof *a->chan)))
    return cf_fail(CF_E_NOMEM, "%s: out of memory", a->path);
  return CF_OK;
}

/* Float input is checked before resampling, so the position is exact:
 * n samples from in[] (a plane a channel, or one packed plane). */
static cf_status check_finite(const audio_loader *a, const uint8_t *const *in,
                              size_t n)
{
  enum AVSampleFormat f = a->in_format;
  enum AVSampleFormat packed = cf_av->av_get_packed_sample_fmt(f);
  if (packed != AV_SAMPLE_FMT_FLT && packed != AV_SAMPLE_FMT_DBL)
    return CF_OK;
  bool planar = cf_av->av_sample_fmt_is_planar(f);
  size_t bps = (size_t)cf_av->av_get_bytes_per_sample(f), nc = a->channels;
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < nc; c++) {
      const uint8_t *p = planar ? in[c] + i * bps : in[0] + (i * nc + c) * bps;
      float fv;
      double v;
      if (bps == 4) {
        memcpy(&fv, p, 4);
        v = fv;
      } else {
        memcpy(&v, p, 8);
      }
      if (!isfinite(v))
        return cf_fail(CF_E_FORMAT, "%s: channel %zu, sample %lld is %s",
                       a->path, c, (long long)a->decoded + (long long)i,
                       cf_io_nonfinite_name(v));
    }
  return CF_OK;
}

static cf_status too_long(const audio_loader *a, size_t limit, int rate)
{
  return cf_fail(CF_E_FORMAT, "%s: longer than the limit of %zu samples per "
                 "channel (%u channel%s at %d Hz)", a->path, limit,
                 a->channels, a->channels == 1 ? "" : "s", rate);
}

/* Resamples n input samples (NULL, 0 drains) into the channel arrays;
 * *got says how many came out. */
static cf_status resample(audio_loader *a, const uint8_t **in, int n,
                          int *got)
{
  int want = cf_av->swr_get_out_samples(a->swr, n);
  if (want < 0)
    return av_fail(a, CF_E_INTERNAL, "resampler", want);
  /* Draining, that bound can be 0 while the filter still holds samples
   * (a kernel shorter than the resampling filter came out empty): ask for
   * a generous piece; the caller loops until nothing more comes. */
  if (n == 0 && want < 1024)
    want = 1024;
  /* One more than fits tells "too long" without buffering it all. */
  size_t room = a->max_len - a->chan[0].len + 1;
  if ((size_t)want > room)
    want = (int)room;
  uint8_t *outp[CF_MAX_CHANNELS];
  for (unsigned c = 0; c < a->channels; c++) {
    /* at least 1: no NULL + 0 for the output pointer */
    cf_status s = cf_io_taps_reserve(&a->chan[c], want ? (size_t)want : 1,
                                     a->max_len + 1, a->path);
    if (s != CF_OK)
      return s;
    outp[c] = (uint8_t *)(a->chan[c].v + a->chan[c].len);
  }
  *got = cf_av->swr_convert(a->swr, outp, want, in, n);
  if (*got < 0)
    return av_fail(a, CF_E_INTERNAL, "resampling", *got);
  for (unsigned c = 0; c < a->channels; c++)
    a->chan[c].len += (size_t)*got;
  return a->chan[0].len > a->max_len
             ? too_long(a, a->max_len - a->lead_out, a->out_rate)
             : CF_OK;
}

/* n samples of silence into the resampler, in pieces; stops once the
 * channel arrays hold `until` samples (0: no limit). */
static cf_status feed_silence(audio_loader *a, size_t n, size_t until)
{
  enum { PAD = 256 };
  int bps = cf_av->av_get_bytes_per_sample(a->in_format);
  int planar = cf_av->av_sample_fmt_is_planar(a->in_format);
  size_t plane = (size_t)PAD * (size_t)bps * (planar ? 1 : a->channels);
  uint8_t *zeros = bps > 0 ? malloc(plane) : NULL;
  if (!zeros)
    return cf_fail(CF_E_NOMEM, "%s: out of memory", a->path);
  /* silence is 0, except unsigned 8-bit, whose middle is 0x80 */
  memset(zeros, a->in_format == AV_SAMPLE_FMT_U8 ||
                    a->in_format == AV_SAMPLE_FMT_U8P ? 0x80 : 0, plane);
  const uint8_t *in[CF_MAX_CHANNELS];
  for (unsigned c = 0; c < a->channels; c++)
    in[c] = zeros;
  cf_status s = CF_OK;
  int got;
  for (size_t fed = 0; s == CF_OK && fed < n && (!until ||
                                                 a->chan[0].len < until);
       fed += PAD)
    s = resample(a, in, (int)(n - fed < PAD ? n - fed : PAD), &got);
  free(zeros);
  return s;
}

static size_t gcd_size(size_t x, size_t y)
{
  while (y) {
    size_t t = x % y;
    x = y;
    y = t;
  }
  return x;
}

/* Before the kernel, silence long enough for the resampler's filter (16
 * taps either side at the lower rate: libswresample's 32) and a whole
 * number of output samples long, so that the kernel's first sample stays
 * on the output's grid: the ringing before it (a band-limited sample
 * rings on both sides) comes out there, to be folded back (finish). */
static cf_status feed_lead(audio_loader *a)
{
  size_t in = (size_t)a->in_rate, out = (size_t)a->out_rate;
  size_t g = gcd_size(in, out), q = in / g;
  size_t half = 16 * ((in + out - 1) / out) + 8; /* input samples */
  size_t lead = (half + q - 1) / q * q;
  a->lead_in = lead;
  a->lead_out = lead / q * (out / g);
  /* rates prime to each other make it up to a second long (44101 Hz to
   * 48 kHz: 48000 samples a channel): held with the kernel, it counts
   * against the total as the kernel does */
  if (a->lead_out > AUDIO_MAX_TOTAL / 2 / a->channels)
    return cf_fail(CF_E_INVALID, "%s: cannot resample %d Hz to %d Hz with "
                   "%u channels: the rates' ratio (%zu/%zu) needs %zu "
                   "samples a channel before the kernel, more than %zu",
                   a->path, a->in_rate, a->out_rate, a->channels, out / g, q,
                   a->lead_out, (size_t)AUDIO_MAX_TOTAL / 2 / a->channels);
  a->max_len += a->lead_out; /* the arrays hold it until it is folded */
  return feed_silence(a, lead, 0);
}

static cf_status take_frame(audio_loader *a, const AVFrame *fr)
{
  cf_status s = CF_OK;
  if (!a->swr) {
    s = open_resampler(a, fr);
    if (s == CF_OK && a->out_rate != a->in_rate)
      s = feed_lead(a);
    const AVStream *st = a->fmt->streams[a->stream];
    /* An MP4 states its length in the movie's time scale (1 ms from
     * libav, 1/600 s from QuickTime): rounded, it cut the last 5
     * samples off a 12000-sample AAC IR at 44.1 kHz. A millisecond more
     * is kept there, of the encoder's 288 samples of padding or more. */
    if (a->end)
      a->end = cf_av->av_rescale_q(a->end, st->time_base,
                                   (AVRational){1, a->in_rate}) +
               (strstr(a->fmt->iformat->name, "mp4") ? (a->in_rate + 999) / 1000
                                                     : 0);
    /* AAC's first frame is the decoder's warm-up (its MDCT overlaps the
     * frame before, which every encoder primes with 1024 samples or
     * more): where the file states no priming (ADTS, Matroska, an MP4
     * without an edit list) the IR came out 1024 samples late. The
     * frame is dropped, as an MP4's edit list would have it. */
    if (st->codecpar->codec_id == AV_CODEC_ID_AAC && !a->priming_stated) {
      a->skip = fr->nb_samples;
      a->dropped += a->skip;
    }
  }
  if (s != CF_OK)
    return s;
  if (fr->format != a->in_format || fr->sample_rate != a->in_rate ||
      (unsigned)fr->ch_layout.nb_channels != a->channels)
    return cf_fail(CF_E_FORMAT, "%s: the audio format changes at sample "
                   "%lld", a->path, (long long)a->decoded);
  if (fr->nb_samples > a->max_frame)
    a->max_frame = fr->nb_samples;
  /* the samples kept: after the priming, up to the stated end */
  int64_t from = a->skip < fr->nb_samples ? a->skip : fr->nb_samples;
  int64_t n = fr->nb_samples - from;
  a->skip -= from;
  if (a->end && n > a->end - a->decoded)
    n = a->end > a->decoded ? a->end - a->decoded : 0;
  if (n == 0)
    return CF_OK;
  if ((size_t)a->decoded + (size_t)n > a->max_in)
    return too_long(a, a->max_in, a->in_rate);
  const uint8_t *in[CF_MAX_CHANNELS];
  size_t bps = (size_t)cf_av->av_get_bytes_per_sample(a->in_format);
  bool planar = cf_av->av_sample_fmt_is_planar(a->in_format);
  for (unsigned c = 0; c < (planar ? a->channels : 1); c++)
    in[c] = fr->extended_data[c] +
            (size_t)from * bps * (planar ? 1 : a->channels);
  if ((s = check_finite(a, in, (size_t)n)) != CF_OK)
    return s;
  int got;
  s = resample(a, in, (int)n, &got);
  a->decoded += n;
  return s;
}

/* A count in AV_PKT_DATA_SKIP_SAMPLES (32 bits, little-endian). */
static uint32_t skip_count(const uint8_t *p)
{
  return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Sends one packet (NULL flushes) and takes every frame it yields. A
 * packet that runs to the end of the file and does not decode is the
 * file's last frame cut off: an MP3 cut inside a frame failed as
 * "Invalid data found when processing input", not a word of the cut
 * (test_audio_lossy_truncated, seed 1796290762). */
static cf_status decode(audio_loader *a, const AVPacket *pkt)
{
  char what[160];
  int64_t size = a->fmt && a->fmt->pb ? cf_av->avio_size(a->fmt->pb) : -1;
  if (pkt && pkt->pos >= 0 && size > 0 && pkt->pos + pkt->size >= size)
    snprintf(what, sizeof what, "truncated: its last packet (byte %lld of "
             "%lld) is cut off: decoding audio after sample %lld",
             (long long)pkt->pos, (long long)size, (long long)a->decoded);
  else
    snprintf(what, sizeof what, "decoding audio after sample %lld",
             (long long)a->decoded);
  int err = cf_av->avcodec_send_packet(a->dec, pkt);
  if (err < 0)
    return av_fail(a, CF_E_FORMAT, what, err);
  for (;;) {
    err = cf_av->avcodec_receive_frame(a->dec, a->frame);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF)
      return CF_OK;
    if (err < 0)
      return av_fail(a, CF_E_FORMAT, what, err);
    cf_status s = take_frame(a, a->frame);
    cf_av->av_frame_unref(a->frame);
    if (s != CF_OK)
      return s;
  }
}

/* The last link's frames out of the decoder, and a fresh one for the
 * next (from the stream's parameters, which libav's Ogg demuxer takes
 * from the new link's headers). */
static cf_status next_link(audio_loader *a)
{
  cf_status s = decode(a, NULL);
  int err;
  if (s == CF_OK && (err = open_decoder(a)) < 0)
    s = av_fail(a, err == AVERROR(ENOMEM) ? CF_E_NOMEM : CF_E_FORMAT,
                "cannot open the audio decoder for a chained link", err);
  return s;
}

static cf_status decode_all(audio_loader *a)
{
  cf_status s = CF_OK;
  int err;
  while (s == CF_OK && (err = cf_av->av_read_frame(a->fmt, a->pkt)) >= 0) {
    if (a->pkt->stream_index != a->stream)
      ; /* another stream */
    /* a short read; where the data runs to the end of the file, its
     * last read is short (a streamed WAV of 12289 samples failed) */
    else if ((a->pkt->flags & AV_PKT_FLAG_CORRUPT) && !a->open_ended)
      s = cf_fail(CF_E_FORMAT, "%s: truncated or corrupt data at byte %lld "
                  "(after %lld samples)", a->path, (long long)a->pkt->pos,
                  (long long)a->decoded);
    else {
      /* A chained Ogg file's next link starts over at time 0 where
       * libav goes on with the same decoder, its state the last link's:
       * the second link's direct sound came out at a tenth (0.04 for
       * 0.40). The link decodes as the file of it alone does. */
      if (a->chained && a->pkt->pts != AV_NOPTS_VALUE) {
        if (a->last_pts != AV_NOPTS_VALUE && a->pkt->pts < a->last_pts)
          s = next_link(a);
        a->last_pts = a->pkt->pts;
      }
      size_t size;
      uint8_t *skip = cf_av->av_packet_get_side_data(
          a->pkt, AV_PKT_DATA_SKIP_SAMPLES, &size);
      if (skip && size >= 8) {
        uint32_t start = skip_count(skip), end = skip_count(skip + 4);
        if (start)
          a->priming_stated = true; /* the decoder drops it */
        /* libav's Ogg demuxer times Vorbis's first packet as 128
         * samples (two short blocks) that the decoder never outputs, so
         * its end trim, from the last granule, cut 128 samples too many
         * (an IR of 12000 samples loaded as 11872): the stated length
         * (a->end) cuts there instead */
        if (end && a->end &&
            a->fmt->streams[a->stream]->codecpar->codec_id ==
                AV_CODEC_ID_VORBIS) {
          memset(skip + 4, 0, 4);
          end = 0;
        }
        a->dropped += (int64_t)start + end;
      }
      if (s == CF_OK)
        s = decode(a, a->pkt);
    }
    cf_av->av_packet_unref(a->pkt);
  }
  if (s != CF_OK)
    return s;
  /* libav 5.1 reads a chained Ogg file's links of its first link's
   * codec only: Opus then Vorbis said "I/O error: reading audio:
   * Invalid argument" */
  if (err == AVERROR(EINVAL) && a->chained)
    return cf_fail(CF_E_FORMAT, "%s: a chained Ogg file whose links "
                   "change codec (after %lld samples of %s): libav reads "
                   "links of one codec only", a->path, (long long)a->decoded,
                   cf_av->avcodec_get_name(
                       a->fmt->streams[a->stream]->codecpar->codec_id));
  if (err != AVERROR_EOF)
    return av_fail(a, CF_E_IO, "reading audio", err);
  return decode(a, NULL);
}

/* libav plays a WAV file cut inside its data without complaint (it trusts
 * the file size over the header): compare the header's data size with
 * the file. Sizes 0 and 0xFFFFFFFF mean "unknown" (streams, RF64): in a
 * RIFF file the data then runs to its end (RF64 and BW64 state the size
 * in their ds64 chunk). */
static cf_status check_wav_length(audio_loader *a)
{
  /* not a URL's: the path is no file's (a WAV at http://... or
   * cache:NAME failed as "cannot open: No such file or directory",
   * where Ogg and MP3 ones load; QA) */
  if (strcmp(a->fmt->iformat->name, "wav") != 0 || cf_av_is_url(a->path))
    return CF_OK;
  FILE *f;
  size_t size = 0, at = 12;
  cf_status s = cf_io_open(a->path, &f);
  if (s != CF_OK)
    return s;
  s = cf_io_size(a->path, f, &size);
  unsigned char h[8];
  bool magic = s == CF_OK && fread(h, 1, 4, f) == 4;
  bool riff = magic && memcmp(h, "RIFF", 4) == 0;
  bool rifx = magic && memcmp(h, "RIFX", 4) == 0; /* big-endian sizes */
  while (s == CF_OK && at + 8 <= size && fseek(f, (long)at, SEEK_SET) == 0 &&
         fread(h, 1, 8, f) == 8) {
    size_t len = rifx ? (size_t)h[4] << 24 | (size_t)h[5] << 16 |
                            (size_t)h[6] << 8 | h[7]
                      : h[4] | (size_t)h[5] << 8 | (size_t)h[6] << 16 |
                            (size_t)h[7] << 24;
    if (memcmp(h, "data", 4) == 0) {
      a->open_ended = (riff || rifx) && (len == 0 || len == UINT32_MAX);
      if (len != 0 && len != UINT32_MAX && len > size - at - 8)
        s = cf_fail(CF_E_FORMAT, "%s: truncated: the WAV header says %zu "
                    "bytes of data at byte %zu, the file holds %zu",
                    a->path, len, at + 8, size - at - 8);
      break;
    }
    if (len > size - at - 8)
      break; /* past the file (and `at` cannot wrap on 32 bits) */
    at += 8 + len + (len & 1);
  }
  fclose(f);
  return s;
}

/* The length a file states, in samples at its rate (0: none): its
 * stream's, else the container's where the audio is all it holds
 * (Matroska states the segment's, in ms). */
static int64_t stated_length(const audio_loader *a)
{
  const AVStream *st = a->fmt->streams[a->stream];
  AVRational rate = {1, a->in_rate};
  if (a->fmt->duration_estimation_method != AVFMT_DURATION_FROM_STREAM ||
      a->chained)
    return 0;
  /* A stream that starts after 0 (an Ogg Opus stream's first granule
   * past its samples: a capture of a live stream, RFC 7845 4.3): libav
   * 5.1 gives an Opus stream's last granule as its duration, a Vorbis
   * one's less the start; an Opus capture 10 s in was refused as
   * "truncated: the file states 501312 samples, 60000 decoded" (QA).
   * Less the start it is the length, or less than it: never more. */
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0 &&
      st->start_time != AV_NOPTS_VALUE && st->start_time > 0)
    return st->duration > st->start_time
               ? cf_av->av_rescale_q(st->duration - st->start_time,
                                     st->time_base, rate)
               : 0;
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
    return cf_av->av_rescale_q(st->duration, st->time_base, rate);
  if (a->fmt->nb_streams == 1 && a->fmt->duration != AV_NOPTS_VALUE &&
      a->fmt->duration > 0)
    return cf_av->av_rescale_q(a->fmt->duration, AV_TIME_BASE_Q, rate);
  return 0;
}

/* libav takes an Ogg file's length from its last whole page, so a file
 * cut short loaded as what was left (half an Opus IR, without a word):
 * its pages are walked before decoding, each must lie whole in the file.
 * A file that ends on a whole page without an end-of-stream flag loads:
 * a recorder stopped without one (gst-launch-1.0 without -e, a stream
 * dump) writes it so, and a whole file refused is worse than a file cut
 * at a page boundary loaded. A chained file (links one after another,
 * as `cat a.opus b.opus` makes it: a beginning-of-stream page after
 * other pages) states only its last link's length, which cut the kernel
 * there (a 60000-sample link and a 2000-sample one loaded as 2312 taps,
 * QA): a->chained says so. */
static cf_status walk_ogg(audio_loader *a)
{
  if (strcmp(a->fmt->iformat->name, "ogg") != 0 || cf_av_is_url(a->path))
    return CF_OK;
  FILE *f;
  size_t size = 0, at = 0;
  cf_status s = cf_io_open(a->path, &f);
  if (s != CF_OK)
    return s;
  s = cf_io_size(a->path, f, &size);
  bool others = false; /* a page that begins no stream seen */
  unsigned char h[27 + 255];
  while (s == CF_OK && at < size) {
    size_t got = fseeko(f, (off_t)at, SEEK_SET) == 0 ? fread(h, 1, 27, f)
                                                      : 0;
    if (got == 0 || memcmp(h, "OggS", got < 4 ? got : 4) != 0 ||
        (got > 4 && h[4] != 0))
      break; /* no page where one should start: libav resyncs */
    size_t body = 0;
    bool whole = got == 27 && fread(h + 27, 1, h[26], f) == h[26];
    for (unsigned i = 0; whole && i < h[26]; i++)
      body += h[27 + i];
    if (!whole || body > size - at - 27 - h[26]) {
      s = cf_fail(CF_E_FORMAT, "%s: truncated: its Ogg page at byte %zu "
                  "runs past the end of the file (%zu bytes)", a->path, at,
                  size);
      break;
    }
    if (h[5] & 0x02)
      a->chained = a->chained || others;
    else
      others = true;
    at += 27 + h[26] + body;
  }
  fclose(f);
  if (s == CF_OK && a->chained)
    a->end = 0; /* the last link's length: decoded whole */
  return s;
}

/* Lossless streams whose header states the length (WAV, FLAC) must
 * decode to that length: otherwise the file was cut short. Others
 * (lossy, or a length the container states) decode to it within the
 * priming and padding the file states, two frames (AAC's priming in
 * Matroska, a frame's unstated padding) and a millisecond (a length in
 * ms): a truncated MP3 with a Xing header loaded as the half that was
 * left, libav only logging "filesize and duration do not match". */
static cf_status check_complete(const audio_loader *a)
{
  const AVStream *st = a->fmt->streams[a->stream];
  const AVCodecDescriptor *d = cf_av->avcodec_descriptor_get(st->codecpar->codec_id);
  int64_t want = a->recoded ? 0 : stated_length(a);
  if (d && (d->props & AV_CODEC_PROP_LOSSLESS) && want > 0 &&
      st->duration != AV_NOPTS_VALUE && st->duration > 0) {
    if (a->decoded < want)
      return cf_fail(CF_E_FORMAT, "%s: truncated: the header says %lld "
                     "samples, the file holds %lld", a->path,
                     (long long)want, (long long)a->decoded);
  } else if (want > 0 && a->decoded + a->dropped + 2 * (int64_t)a->max_frame +
                                 a->in_rate / 1000 + 1 < want) {
    return cf_fail(CF_E_FORMAT, "%s: truncated: the file states %lld "
                   "samples, %lld decoded (and %lld of priming and padding "
                   "dropped)", a->path, (long long)want,
                   (long long)a->decoded, (long long)a->dropped);
  }
  return CF_OK;
}

static cf_status finish(audio_loader *a, cf_kernel **out)
{
  if (!a->swr || a->decoded == 0)
    return cf_fail(CF_E_FORMAT, "%s: no audio samples decoded", a->path);
  cf_status s = check_complete(a);
  int got = 1;
  /* Resampling: libswresample keeps back its filter's delay and gives
   * nothing at all for a kernel shorter than it (a 16-tap FIR at 48 kHz
   * came out empty at 44.1 kHz). Feed silence past the end until the
   * kernel's own length at the new rate, ceil(samples * out / in), and the
   * ringing after its last sample (the filter's half at the new rate) have
   * come out, then drain. */
  size_t keep = 0;
  if (s == CF_OK && a->out_rate != a->in_rate) {
    size_t ri = (size_t)a->in_rate, ro = (size_t)a->out_rate;
    size_t ring = 16 * ((ro + ri - 1) / ri) + 8;
    keep = (size_t)(((unsigned long long)a->decoded * ro + ri - 1) / ri) +
           ring;
    s = feed_silence(a, a->lead_in + 32 * (ri / ro + 1) + 2 * ring + 512,
                     a->lead_out + keep);
  }
  while (s == CF_OK && got > 0) /* the resampler's tail */
    s = resample(a, NULL, 0, &got);
  if (s != CF_OK)
    return s;
  /* The kernel at the new rate is the band-limited one, which rings
   * after its last sample (kept: `ring` samples more) and before its
   * first, which cannot be kept without delaying the filter. Cut off,
   * that ring changed the kernel's gain (a single tap at 44.1 kHz kept
   * 0.81 of it at 96 kHz; a room's response came out 2.8 dB louder at
   * DC); it is added to the first tap instead: the gain at DC stays
   * exact, and at a frequency f a sample moved by d changes the response
   * by at most 2 sin(pi f d / rate) of that sample. */
  if (keep) {
    if (a->chan[0].len <= a->lead_out)
      return cf_fail(CF_E_FORMAT, "%s: no samples after resampling to %d Hz",
                     a->path, a->out_rate);
    if (keep > a->chan[0].len - a->lead_out)
      keep = a->chan[0].len - a->lead_out;
    for (unsigned c = 0; c < a->channels; c++) {
      float *v = a->chan[c].v;
      double pre = 0.0;
      for (size_t i = 0; i < a->lead_out; i++)
        pre += v[i];
      memmove(v, v + a->lead_out, keep * sizeof *v);
      v[0] = (float)(v[0] + pre);
      a->chan[c].len = keep;
    }
  }
  if (a->chan[0].len == 0)
    return cf_fail(CF_E_FORMAT, "%s: no samples after resampling to %d Hz",
                   a->path, a->out_rate);
  /* libswresample keeps the signal's amplitude, so an impulse response's
   * taps come out out/in times as many at about the same values: its
   * gain (the taps' sum at DC, and at every frequency both rates carry)
   * would grow by out/in (a 48 kHz IR at 8 kHz: 6x too quiet). Scaled by
   * in/out, the filter sounds the same at every rate. */
  if (a->out_rate != a->in_rate) {
    double g = (double)a->in_rate / (double)a->out_rate;
    for (unsigned c = 0; c < a->channels; c++)
      for (size_t i = 0; i < a->chan[c].len; i++)
        a->chan[c].v[i] = (float)(g * (double)a->chan[c].v[i]);
  }
  const float *taps[CF_MAX_CHANNELS];
  for (unsigned c = 0; c < a->channels; c++)
    taps[c] = a->chan[c].v;
  cf_routing r = a->channels == 1 ? CF_ROUTING_SHARED
                                  : CF_ROUTING_PER_CHANNEL;
  return cf_io_make_kernel(a->path, r, a->channels, a->channels, taps,
                           a->chan[0].len, out);
}

static void close_loader(audio_loader *a)
{
  for (unsigned c = 0; a->chan && c < a->channels; c++)
    cf_io_taps_free(&a->chan[c]);
  free(a->chan);
  cf_av->av_channel_layout_uninit(&a->layout);
  cf_av->swr_free(&a->swr);
  cf_av->av_frame_free(&a->frame);
  cf_av->av_packet_free(&a->pkt);
  cf_av->avcodec_free_context(&a->dec);
  cf_av->avformat_close_input(&a->fmt);
}

CF_PUBLIC cf_status cf_kernel_load_audio(const char *path, unsigned rate,
                                         cf_kernel **out)
{
  cf_status s = cf_io_check_args(path, out);
  const char *why;
  if (s != CF_OK)
    return s;
  if (!cf_av_get(&why))
    return cf_fail(CF_E_UNAVAILABLE, "%s: cannot decode audio files: %s",
                   path, why);
  if (rate > AUDIO_MAX_RATE)
    return cf_fail(CF_E_INVALID, "%s: rate %u Hz is out of range (0 = the "
                   "file's rate, else 1..%u)", path, rate, AUDIO_MAX_RATE);
  /* libav would open a FIFO blocking, and read a pipe's rest */
  if ((s = cf_io_check_file(path)) != CF_OK)
    return s;
  audio_loader a = {.path = path, .out_rate = (int)rate,
                   .last_pts = AV_NOPTS_VALUE};
  s = open_input(&a);
  if (s == CF_OK)
    s = check_wav_length(&a);
  if (s == CF_OK)
    s = walk_ogg(&a);
  if (s == CF_OK)
    s = decode_all(&a);
  if (s == CF_OK)
    s = finish(&a, out);
  close_loader(&a);
  return s;
}
