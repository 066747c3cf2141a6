/* Media files for the tests, written with libav (only where the build
 * has it): what no file of ours is written by hand. */
#include "avmake.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
#include <libavutil/mem.h>
#include <libavutil/samplefmt.h>

AVFormatContext *avmake_new(const char *path, const char *format)
{
  AVFormatContext *oc = NULL;
  assert_true(avformat_alloc_output_context2(&oc, NULL, format, path) >= 0);
  assert_non_null(oc);
  return oc;
}

AVStream *avmake_gray(AVFormatContext *oc, int w, int h, AVRational tb)
{
  AVStream *v = avformat_new_stream(oc, NULL);
  assert_non_null(v);
  v->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
  v->codecpar->codec_id = AV_CODEC_ID_RAWVIDEO;
  v->codecpar->codec_tag = avcodec_pix_fmt_to_codec_tag(AV_PIX_FMT_GRAY8);
  v->codecpar->format = AV_PIX_FMT_GRAY8;
  v->codecpar->width = w;
  v->codecpar->height = h;
  v->time_base = tb;
  return v;
}

AVStream *avmake_pcm(AVFormatContext *oc, int rate, AVRational tb)
{
  AVStream *a = avformat_new_stream(oc, NULL);
  assert_non_null(a);
  a->codecpar->codec_type = AVMEDIA_TYPE_AUDIO;
  a->codecpar->codec_id = AV_CODEC_ID_PCM_S16LE;
  a->codecpar->format = AV_SAMPLE_FMT_S16;
  a->codecpar->sample_rate = rate;
  av_channel_layout_default(&a->codecpar->ch_layout, 1);
  a->codecpar->bits_per_coded_sample = 16;
  a->codecpar->block_align = 2;
  a->time_base = tb;
  return a;
}

void avmake_chapter(AVFormatContext *oc, int id, int64_t start, int64_t end,
                    const char *title)
{
  AVChapter *ch = av_mallocz(sizeof *ch);
  assert_non_null(ch);
  ch->id = id;
  ch->time_base = (AVRational){1, 1000};
  ch->start = start;
  ch->end = end;
  if (title)
    av_dict_set(&ch->metadata, "title", title, 0);
  int n = (int)oc->nb_chapters;
  assert_true(av_dynarray_add_nofree(&oc->chapters, &n, ch) >= 0);
  oc->nb_chapters = (unsigned)n;
}

void avmake_begin(AVFormatContext *oc)
{
  assert_true(avio_open(&oc->pb, oc->url, AVIO_FLAG_WRITE) >= 0);
  assert_true(avformat_write_header(oc, NULL) >= 0);
}

void avmake_put(AVFormatContext *oc, const AVStream *st, const void *data,
                size_t n, int64_t pts, int64_t dur, AVRational tb)
{
  AVPacket *pkt = av_packet_alloc();
  assert_non_null(pkt);
  assert_true(av_new_packet(pkt, (int)n) >= 0);
  memcpy(pkt->data, data, n);
  pkt->pts = pkt->dts = pts;
  pkt->duration = dur;
  pkt->flags |= AV_PKT_FLAG_KEY;
  pkt->stream_index = st->index;
  av_packet_rescale_ts(pkt, tb, st->time_base);
  assert_true(av_interleaved_write_frame(oc, pkt) >= 0);
  av_packet_free(&pkt);
}

void avmake_end(AVFormatContext *oc)
{
  assert_true(av_write_trailer(oc) >= 0);
  avio_closep(&oc->pb);
  avformat_free_context(oc);
}

/* Sends fr (NULL flushes) and writes every packet that comes out. */
void avmake_encode_frame(AVCodecContext *enc, const AVFrame *fr,
                         AVFormatContext *oc, AVStream *st)
{
  AVPacket *pkt = av_packet_alloc();
  assert_non_null(pkt);
  assert_true(avcodec_send_frame(enc, fr) >= 0);
  while (avcodec_receive_packet(enc, pkt) >= 0) {
    av_packet_rescale_ts(pkt, enc->time_base, st->time_base);
    pkt->stream_index = st->index;
    assert_true(av_interleaved_write_frame(oc, pkt) >= 0);
  }
  av_packet_free(&pkt);
}

void avmake_encoded(const char *path, const char *encoder, int rate,
                    int channels, float *const *x, size_t n)
{
  const AVCodec *codec = avcodec_find_encoder_by_name(encoder);
  assert_non_null(codec);
  AVFormatContext *oc = NULL;
  assert_true(avformat_alloc_output_context2(&oc, NULL, NULL, path) >= 0);
  AVCodecContext *enc = avcodec_alloc_context3(codec);
  assert_non_null(enc);
  /* float where the encoder takes it, else 16-bit (FLAC) */
  enc->sample_fmt = AV_SAMPLE_FMT_NONE;
  for (const enum AVSampleFormat *f = codec->sample_fmts; *f >= 0; f++)
    if (*f == AV_SAMPLE_FMT_FLT || *f == AV_SAMPLE_FMT_FLTP ||
        ((*f == AV_SAMPLE_FMT_S16 || *f == AV_SAMPLE_FMT_S16P) &&
         enc->sample_fmt == AV_SAMPLE_FMT_NONE))
      enc->sample_fmt = *f;
  assert_true(enc->sample_fmt != AV_SAMPLE_FMT_NONE);
  bool s16 = av_get_packed_sample_fmt(enc->sample_fmt) == AV_SAMPLE_FMT_S16;
  enc->sample_rate = rate;
  enc->time_base = (AVRational){1, rate};
  enc->bit_rate = 64000 * channels;
  av_channel_layout_default(&enc->ch_layout, channels);
  if (oc->oformat->flags & AVFMT_GLOBALHEADER)
    enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  /* libav's own Vorbis encoder is marked experimental */
  enc->strict_std_compliance = FF_COMPLIANCE_EXPERIMENTAL;
  assert_true(avcodec_open2(enc, codec, NULL) >= 0);
  AVStream *st = avformat_new_stream(oc, NULL);
  assert_non_null(st);
  assert_true(avcodec_parameters_from_context(st->codecpar, enc) >= 0);
  st->time_base = enc->time_base;
  avmake_begin(oc);
  bool fixed = enc->frame_size > 0 &&
               !(codec->capabilities & (AV_CODEC_CAP_VARIABLE_FRAME_SIZE |
                                        AV_CODEC_CAP_SMALL_LAST_FRAME));
  size_t block = enc->frame_size > 0 ? (size_t)enc->frame_size : 1024;
  bool planar = av_sample_fmt_is_planar(enc->sample_fmt);
  AVFrame *fr = av_frame_alloc();
  assert_non_null(fr);
  for (size_t at = 0; at < n; at += block) {
    fr->nb_samples = (int)(fixed || n - at >= block ? block : n - at);
    fr->format = enc->sample_fmt;
    fr->sample_rate = rate;
    assert_true(av_channel_layout_copy(&fr->ch_layout, &enc->ch_layout) >= 0);
    assert_true(av_frame_get_buffer(fr, 0) >= 0);
    for (int i = 0; i < fr->nb_samples; i++)
      for (int c = 0; c < channels; c++) {
        float v = at + (size_t)i < n ? x[c][at + (size_t)i] : 0.0f;
        size_t at_c = planar ? (size_t)i : (size_t)i * (size_t)channels + (size_t)c;
        uint8_t *plane = fr->data[planar ? c : 0];
        if (s16)
          ((int16_t *)plane)[at_c] = (int16_t)lrintf(
              fminf(fmaxf(v * 32768.0f, -32768.0f), 32767.0f));
        else
          ((float *)plane)[at_c] = v;
      }
    fr->pts = (int64_t)at;
    avmake_encode_frame(enc, fr, oc, st);
    av_frame_unref(fr);
  }
  avmake_encode_frame(enc, NULL, oc, st);
  av_frame_free(&fr);
  avcodec_free_context(&enc);
  avmake_end(oc);
}

void frames_at(const char *path, unsigned w, unsigned h, unsigned nf, int fps,
               const int64_t *pts)
{
  AVRational ms = {1, 1000};
  AVFormatContext *oc = avmake_new(path, "matroska");
  AVStream *v = avmake_gray(oc, (int)w, (int)h, ms);
  v->avg_frame_rate = (AVRational){fps, 1}; /* Matroska's DefaultDuration */
  avmake_begin(oc);
  unsigned char *px = malloc(w * h);
  assert_non_null(px);
  for (unsigned i = 0; i < nf; i++) {
    memset(px, (int)(i * 37 % 256), w * h);
    avmake_put(oc, v, px, w * h, pts[i], 0, ms);
  }
  free(px);
  avmake_end(oc);
}
