/* Text subtitles an output format cannot hold as they are (an MP4's
 * mov_text in Matroska, SubRip in WebM or MP4), converted to the format's
 * own text subtitle codec (ASS, WebVTT; MP4's and MOV's mov_text), as
 * ffmpeg converts them by default (MP4 and MOV only with -c:s mov_text):
 * each packet decoded to its text and encoded again, at its time. Both
 * `apply` halves and cudafilterd's file streams copy through
 * apply_copy_packet, which calls apply_subs_convert for such a stream. */
#include "apply.h"

#include <stdlib.h>
#include <string.h>

/* ffmpeg's bound for one encoded subtitle (subtitle_out_max_size) */
enum { SUB_MAX = 1 << 20 };

struct apply_subconv {
  AVCodecContext *dec, *enc;
  uint8_t *buf;      /* SUB_MAX bytes, the encoder's output */
  bool told_damaged; /* a packet that could not be read was said */
};

void apply_subs_free(apply_subconv **sc)
{
  if (!*sc)
    return;
  cf_av->avcodec_free_context(&(*sc)->dec);
  cf_av->avcodec_free_context(&(*sc)->enc);
  cf_av->av_freep(&(*sc)->buf);
  free(*sc);
  *sc = NULL;
}

/* The AV_CODEC_PROP_TEXT_SUB of codec id, 0 where it has none or is
 * unknown. */
static int text_sub(enum AVCodecID id)
{
  const AVCodecDescriptor *d = cf_av->avcodec_descriptor_get(id);
  return d && (d->props & AV_CODEC_PROP_TEXT_SUB);
}

int apply_subs_open(const AVFormatContext *oc, const AVStream *is,
                    apply_subconv **out)
{
  *out = NULL;
  /* the format's own; else MP4's and MOV's text, where ffmpeg would leave
   * the subtitles out unless told -c:s mov_text (nothing lost here) */
  enum AVCodecID to = oc->oformat->subtitle_codec;
  if (to == AV_CODEC_ID_NONE &&
      cf_av->avformat_query_codec(oc->oformat, AV_CODEC_ID_MOV_TEXT,
                                  FF_COMPLIANCE_NORMAL) > 0)
    to = AV_CODEC_ID_MOV_TEXT;
  enum AVCodecID from = is->codecpar->codec_id;
  if (is->codecpar->codec_type != AVMEDIA_TYPE_SUBTITLE ||
      to == AV_CODEC_ID_NONE || to == from || !text_sub(from) ||
      !text_sub(to))
    return 0; /* bitmaps stay bitmaps: ffmpeg converts text to text only */
  const AVCodec *dc = cf_av->avcodec_find_decoder(from);
  const AVCodec *ec = cf_av->avcodec_find_encoder(to);
  if (!dc || !ec)
    return 0;
  apply_subconv *sc = calloc(1, sizeof *sc);
  if (!sc || !(sc->dec = cf_av->avcodec_alloc_context3(dc)) ||
      !(sc->enc = cf_av->avcodec_alloc_context3(ec)) ||
      !(sc->buf = cf_av->av_malloc(SUB_MAX))) {
    apply_subs_free(&sc);
    return apply_error("out of memory");
  }
  int err = cf_av->avcodec_parameters_to_context(sc->dec, is->codecpar);
  if (err >= 0) {
    sc->dec->pkt_timebase = is->time_base;
    err = cf_av->avcodec_open2(sc->dec, dc, NULL);
  }
  if (err < 0) {
    /* an input whose subtitles cannot be read is left out, as one
     * the format cannot hold: said by the caller */
    apply_subs_free(&sc);
    return err == AVERROR(ENOMEM) ? apply_error("out of memory") : 0;
  }
  /* as ffmpeg sets up a subtitle encoder: times in AV_TIME_BASE, the
   * decoder's ASS header (the styles the text refers to) its own */
  sc->enc->time_base = AV_TIME_BASE_Q;
  if (sc->dec->subtitle_header && sc->dec->subtitle_header_size > 0) {
    sc->enc->subtitle_header =
        cf_av->av_mallocz((size_t)sc->dec->subtitle_header_size + 1);
    if (!sc->enc->subtitle_header) {
      apply_subs_free(&sc);
      return apply_error("out of memory");
    }
    memcpy(sc->enc->subtitle_header, sc->dec->subtitle_header,
           (size_t)sc->dec->subtitle_header_size);
    sc->enc->subtitle_header_size = sc->dec->subtitle_header_size;
  }
  if ((err = cf_av->avcodec_open2(sc->enc, ec, NULL)) < 0) {
    apply_subs_free(&sc);
    return err == AVERROR(ENOMEM) ? apply_error("out of memory") : 0;
  }
  *out = sc;
  return 0;
}

const AVCodecContext *apply_subs_encoder(const apply_subconv *sc)
{
  return sc->enc;
}

int apply_subs_convert(apply_subconv *sc, const AVStream *is,
                       const AVPacket *pkt, AVPacket *to, bool *got,
                       const char *in_path, bool quiet)
{
  AVSubtitle s;
  int have = 0;
  *got = false;
  /* the decoder takes a const packet in later libavcodec only */
  int err = cf_av->avcodec_decode_subtitle2(sc->dec, &s, &have,
                                            (AVPacket *)pkt);
  if (err < 0) {
    if (!apply_damaged(err))
      return apply_av_error(in_path, "subtitle decoding failed", err);
    /* damaged: skipped, as ffmpeg skips it */
    if (!sc->told_damaged && !quiet)
      fprintf(stderr,
              "cudafilter: warning: %s: a damaged subtitle packet of stream "
              "%d at %.3f s was skipped\n",
              in_path, pkt->stream_index,
              pkt->pts == AV_NOPTS_VALUE
                  ? 0.0
                  : (double)pkt->pts * av_q2d(is->time_base));
    sc->told_damaged = true;
    return 0;
  }
  /* nothing to show (an empty sample: MP4's end of the last line), or no
   * time to show it at: nothing written, as ffmpeg writes none */
  if (!have || !s.num_rects || s.pts == AV_NOPTS_VALUE) {
    if (have)
      cf_av->avsubtitle_free(&s);
    return 0;
  }
  /* the encoder wants its text shown from its time on (ffmpeg moves
   * start_display_time into pts the same way) */
  s.pts += cf_av->av_rescale_q(s.start_display_time, (AVRational){1, 1000},
                               AV_TIME_BASE_Q);
  s.end_display_time -= s.start_display_time;
  s.start_display_time = 0;
  int n = cf_av->avcodec_encode_subtitle(sc->enc, sc->buf, SUB_MAX, &s);
  int64_t pts = s.pts;
  uint32_t shown = s.end_display_time;
  cf_av->avsubtitle_free(&s);
  if (n < 0)
    return apply_av_error(in_path, "subtitle encoding failed", n);
  if ((err = cf_av->av_new_packet(to, n)) < 0)
    return apply_error("out of memory");
  memcpy(to->data, sc->buf, (size_t)n);
  to->stream_index = pkt->stream_index;
  to->pts = to->dts = cf_av->av_rescale_q(pts, AV_TIME_BASE_Q, is->time_base);
  /* 0 or all ones: shown until the next one (no end known) */
  to->duration =
      shown && shown != UINT32_MAX
          ? cf_av->av_rescale_q(shown, (AVRational){1, 1000}, is->time_base)
          : pkt->duration;
  to->flags |= AV_PKT_FLAG_KEY;
  *got = true;
  return 0;
}
