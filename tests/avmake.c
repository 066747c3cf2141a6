/* Media files for the tests, written with libav (only where the build
 * has it): what no file of ours is written by hand. */
#include "avmake.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

void frames_at(const char *path, unsigned w, unsigned h, unsigned nf, int fps,
               const int64_t *pts)
{
  AVFormatContext *oc = NULL;
  assert_true(avformat_alloc_output_context2(&oc, NULL, "matroska", path) >=
              0);
  AVStream *v = avformat_new_stream(oc, NULL);
  assert_non_null(v);
  v->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
  v->codecpar->codec_id = AV_CODEC_ID_RAWVIDEO;
  v->codecpar->codec_tag = avcodec_pix_fmt_to_codec_tag(AV_PIX_FMT_GRAY8);
  v->codecpar->format = AV_PIX_FMT_GRAY8;
  v->codecpar->width = (int)w;
  v->codecpar->height = (int)h;
  v->time_base = (AVRational){1, 1000};
  v->avg_frame_rate = (AVRational){fps, 1}; /* Matroska's DefaultDuration */
  assert_true(avio_open(&oc->pb, path, AVIO_FLAG_WRITE) >= 0);
  assert_true(avformat_write_header(oc, NULL) >= 0);
  AVPacket *pkt = av_packet_alloc();
  assert_non_null(pkt);
  for (unsigned i = 0; i < nf; i++) {
    assert_true(av_new_packet(pkt, (int)(w * h)) >= 0);
    memset(pkt->data, (int)(i * 37 % 256), w * h);
    pkt->pts = pkt->dts = pts[i];
    pkt->flags |= AV_PKT_FLAG_KEY;
    pkt->stream_index = v->index;
    av_packet_rescale_ts(pkt, (AVRational){1, 1000}, v->time_base);
    assert_true(av_interleaved_write_frame(oc, pkt) >= 0);
  }
  av_packet_free(&pkt);
  assert_true(av_write_trailer(oc) >= 0);
  avio_closep(&oc->pb);
  avformat_free_context(oc);
}
