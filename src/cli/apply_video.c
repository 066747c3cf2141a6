/* `cudafilter apply` on video: INPUT's main video stream decoded,
 * filtered frame by frame by the video engine, encoded into OUTPUT; its
 * audio streams copied as they are (no re-encoding). Frames in a pixel
 * format the engine takes (GRAY8, GRAY16LE, GRAYF32, RGBA/BGRA/RGB0/BGR0,
 * RGB24/BGR24, YUV420P, NV12, YUV444P, YUV422P, their full-range YUVJ
 * twins and their YUVA ones, alpha copied) are filtered as decoded;
 * others are converted with libswscale to the closest one first, and the
 * result back to the input's format where the encoder takes it (else to
 * the nearest it takes). Interlaced frames (AV_FRAME_FLAG_INTERLACED)
 * are filtered field by field, as the cudaconvolve element filters them
 * (fields_of), and written with their field order. */
#ifdef CF_CLI_HAVE_LIBAV
#include "apply.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudafilter/error.h>
#include <cudafilter/kernel2d.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "../io/av_lazy.h"

#define interrupted apply_interrupted

/* libswscale, loaded here on first use (only video needs it; the
 * library's own libav loader leaves it out). */
#define SWS_FUNCTIONS(X)                                                       \
  X(sws_getContext) X(sws_scale_frame) X(sws_scale) X(sws_freeContext)         \
  X(sws_isSupportedOutput)
static struct {
#define SWS_POINTER(f) __typeof__(f) *f;
  SWS_FUNCTIONS(SWS_POINTER)
#undef SWS_POINTER
} sws;

static int sws_load(void)
{
  static const char lib[] =
      "libswscale.so." AV_STRINGIFY(LIBSWSCALE_VERSION_MAJOR);
  if (sws.sws_getContext)
    return 0;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return apply_error("cannot load %s: %s", lib, dlerror());
#define SWS_FIND(f)                                                            \
  if (!(sws.f = (__typeof__(f) *)dlsym(h, #f)))                                \
    return apply_error("%s has no function %s", lib, #f);
  SWS_FUNCTIONS(SWS_FIND)
#undef SWS_FIND
  return 0;
}

/* The engine's formats as libav names them. */
static const struct {
  enum AVPixelFormat av;
  cf_pixel_format cf;
} formats[] = {
    {AV_PIX_FMT_GRAY8, CF_PIX_GRAY8},
    {AV_PIX_FMT_GRAY16LE, CF_PIX_GRAY16_LE},
    {AV_PIX_FMT_GRAYF32LE, CF_PIX_GRAY32F},
    {AV_PIX_FMT_RGBA, CF_PIX_RGBA},
    {AV_PIX_FMT_BGRA, CF_PIX_BGRA},
    {AV_PIX_FMT_RGB0, CF_PIX_RGBX},
    {AV_PIX_FMT_BGR0, CF_PIX_BGRX},
    {AV_PIX_FMT_RGB24, CF_PIX_RGB},
    {AV_PIX_FMT_BGR24, CF_PIX_BGR},
    {AV_PIX_FMT_YUV420P, CF_PIX_I420},
    {AV_PIX_FMT_YUVJ420P, CF_PIX_I420},
    {AV_PIX_FMT_NV12, CF_PIX_NV12},
    {AV_PIX_FMT_YUV444P, CF_PIX_Y444},
    {AV_PIX_FMT_YUVJ444P, CF_PIX_Y444},
    {AV_PIX_FMT_YUV422P, CF_PIX_Y42B},
    {AV_PIX_FMT_YUVJ422P, CF_PIX_Y42B},
    /* with an alpha plane (a VP8/VP9 overlay, ProRes 4444's 8-bit
     * twin): the engine filters the three colour planes, alpha is copied
     * (copy_alpha) */
    {AV_PIX_FMT_YUVA420P, CF_PIX_I420},
    {AV_PIX_FMT_YUVA422P, CF_PIX_Y42B},
    {AV_PIX_FMT_YUVA444P, CF_PIX_Y444},
};
#define NFORMATS (sizeof formats / sizeof *formats)

/* Whether format f is one of the engine's YUV layouts with an alpha
 * plane after them (plane 3), which the engine does not see. */
static bool alpha_plane(enum AVPixelFormat f)
{
  return f == AV_PIX_FMT_YUVA420P || f == AV_PIX_FMT_YUVA422P ||
         f == AV_PIX_FMT_YUVA444P;
}

static bool engine_format(enum AVPixelFormat f, cf_pixel_format *out)
{
  for (size_t i = 0; i < NFORMATS; i++)
    if (formats[i].av == f) {
      *out = formats[i].cf;
      return true;
    }
  return false;
}

typedef struct vrun {
  const apply_opts *o;
  const apply_vhooks *h; /* or NULL: the command line */
  bool stopped;          /* h->stop ended the input early */
  const char *out_path;  /* for messages */
  AVFormatContext *fmt, *oc;
  AVCodecContext *dec, *enc;
  AVStream *ist, *ost;
  int vstream;
  int *map; /* input stream -> output stream for copied streams, or -1 */
  apply_copied *copied; /* per input stream: what was written of it */
  unsigned ncopied;      /* its length */
  apply_discont disc;   /* the input's jumps in time */
  AVPacket *pkt, *opkt;
  AVFrame *frame;
  /* what the engine filters; to_proc/to_enc convert where needed */
  enum AVPixelFormat proc;
  int width, height;
  enum AVPixelFormat dec_fmt;
  struct SwsContext *to_proc, *to_enc;
  AVFrame *pin, *pout, *penc;
  /* frames of another size or format than the first (the stream changed
   * part way): scaled and converted to the first's, into pstart */
  struct SwsContext *to_start;
  int from_w, from_h;
  enum AVPixelFormat from_fmt;
  AVFrame *pstart;
  cf_engine *e;
  bool own_e; /* made here (not the caller's h->engine): freed here */
  int64_t frames, last_pts;
  int64_t dropped; /* frames filtered but not written (filter_frame) */
  /* the output's format is not marked as holding a variable frame rate
   * (Y4M, raw streams, MPEG-PS, MP4, MOV: ffmpeg's vsync auto makes them
   * constant): a gap is filled with the last frame written, `repeated`
   * times in all, as ffmpeg fills it */
  bool cfr;
  int64_t repeated;
  AVFrame *sent; /* the last frame sent to the encoder */
  /* the picture as shown (its display matrix, as ffmpeg's autorotation
   * reads it), made from the decoded width x height before it is
   * filtered: a frame of ow x oh (prot) whose pixel (x, y) is the
   * decoded one at (x', y'), x and y swapped where `swap` (a quarter
   * turn), then each mirrored where fx, fy (x' = width - 1 - x', ...);
   * `turn`: whether any of them is done; `odd`: shown at an angle other
   * than a quarter's (filtered as stored, its matrix kept) */
  bool turn, swap, fx, fy, odd;
  int ow, oh;
  char shown[48]; /* what was done, for the note */
  AVFrame *prot;
  unsigned corrupt;
  /* a YUV4MPEG2 file's (cut_short): where its frames start, where the
   * last one read ends, how many were read; y4m_at -1: not one */
  int64_t y4m_at, y4m_end, y4m_frames;
  bool told;
  bool one_image; /* OUTPUT holds one picture (image2, no %d) */
  /* read ahead by open_input: the first decoded frame, the packets of
   * other streams read before it, and whether the decoder was sent its
   * end on the way (an input of one picture) */
  AVFrame *first;
  AVPacket **held;
  size_t nheld, held_bytes;
  bool dec_ended;
  /* Interlaced frames (the command line's; not under hooks, whose
   * engine is the caller's, nor turned a quarter, where the fields
   * become columns): each field a picture of its own (field_of), on
   * fe[0] (the top field: rows 0, 2, ...) and fe[1] (the bottom one;
   * none for a frame of one row), made from fcfg and k at the first
   * such frame; a progressive frame of the same stream whole, on e.
   * kind: what the last frame was (-1 none, 0 a frame, 1 fields); a
   * change starts the history of the kind it goes to anew. The
   * conversions of interlaced frames go field by field too (to_proc_f,
   * to_enc_f: the top and the bottom field's). pdec, pfield: 4:2:0
   * frames of 4n + 2 rows with their bottom field's last chroma row
   * (pad_field_chroma). */
  cf_video_config fcfg;
  const cf_kernel2d *k;
  cf_engine *fe[2];
  int kind;
  struct SwsContext *to_proc_f[2], *to_enc_f[2];
  AVFrame *pdec, *pfield;
  bool told_fields;
  int64_t field_frames; /* filtered per field, for the summary */
} vrun;

static int av_err(const vrun *r, const char *path, const char *what, int err)
{
  (void)r;
  return apply_av_error(path, what, err);
}

/* A frame buffer of w x h in format f. */
static int new_frame_of(const vrun *r, enum AVPixelFormat f, int w, int h,
                        AVFrame **out)
{
  AVFrame *fr = cf_av->av_frame_alloc();
  if (!fr)
    return apply_error("out of memory");
  fr->format = f;
  fr->width = w;
  /* rows for a multiple of 4: the bottom field of a 4:2:0 frame of
   * 4n + 2 rows has a chroma row past the frame's (pad_field_chroma) */
  fr->height = (h + 3) & ~3;
  int err = cf_av->av_frame_get_buffer(fr, 0);
  if (err < 0) {
    cf_av->av_frame_free(&fr);
    return apply_av_error(r->out_path, "frame buffer", err);
  }
  /* zeroed once: libswscale's vector loops read past a row's last pixel
   * (an odd width, 4:1:0 chroma) into the padding and weigh it by 0;
   * memcheck cannot see the 0 and took the muxer's write of the frame for
   * uninitialised bytes (cli under valgrind: yuv410p 5x16 through the
   * field conversions), so the padding holds zeros, not heap contents */
  for (int p = 0; p < AV_NUM_DATA_POINTERS && fr->buf[p]; p++)
    memset(fr->buf[p]->data, 0, fr->buf[p]->size);
  fr->height = h;
  *out = fr;
  return 0;
}

/* A frame buffer of the decoded size in format f. */
static int new_frame(const vrun *r, enum AVPixelFormat f, AVFrame **out)
{
  return new_frame_of(r, f, r->width, r->height, out);
}

/* A frame buffer of the size filtered and written (turned) in format f. */
static int new_out_frame(const vrun *r, enum AVPixelFormat f, AVFrame **out)
{
  return new_frame_of(r, f, r->ow, r->oh, out);
}

/* The stream's display matrix (how its picture is to be shown), or NULL. */
static int32_t *display_matrix(const AVStream *st)
{
#if LIBAVFORMAT_VERSION_MAJOR < 61
  size_t size = 0;
  uint8_t *m =
      cf_av->av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
#else
  const AVPacketSideData *sd = cf_av->av_packet_side_data_get(
      st->codecpar->coded_side_data, st->codecpar->nb_coded_side_data,
      AV_PKT_DATA_DISPLAYMATRIX);
  uint8_t *m = sd ? sd->data : NULL;
  size_t size = sd ? sd->size : 0;
#endif
  return m && size >= 9 * sizeof(int32_t) ? (int32_t *)(void *)m : NULL;
}

/* How r->ist's picture is shown upright, as ffmpeg 5.1's autorotation
 * reads its display matrix m: the angle theta (clockwise, 0..360) and the
 * matrix's signs pick a transpose (a quarter turn, with its mirror where
 * m[3] says) or flips; sets swap, fx, fy, turn, odd and shown. */
static void read_orientation(vrun *r)
{
  const int32_t *m = display_matrix(r->ist);
  r->turn = r->swap = r->fx = r->fy = r->odd = false;
  if (!m)
    return;
  double theta = -round(cf_av->av_display_rotation_get(m));
  if (isnan(theta))
    return;
  theta -= 360 * floor(theta / 360 + 0.9 / 360);
  const char *what = NULL;
  if (fabs(theta - 90) < 1.0) {
    r->swap = true;
    if (m[3] > 0) /* transpose=cclock_flip: the matrix transposed */
      what = "turned a quarter clockwise and mirrored";
    else /* transpose=clock */
      r->fy = true, what = "turned a quarter clockwise";
  } else if (fabs(theta - 180) < 1.0) {
    r->fx = m[0] < 0; /* hflip */
    r->fy = m[4] < 0; /* vflip */
    what = r->fx && r->fy ? "turned a half" : "mirrored";
  } else if (fabs(theta - 270) < 1.0) {
    r->swap = true;
    if (m[3] < 0) /* transpose=clock_flip */
      r->fx = r->fy = true, what = "turned a quarter counterclockwise and "
                                   "mirrored";
    else /* transpose=cclock */
      r->fx = true, what = "turned a quarter counterclockwise";
  } else if (fabs(theta) > 1.0 && fabs(theta - 360) > 1.0) {
    r->odd = true;
    snprintf(r->shown, sizeof r->shown, "turned by %.0f degrees", theta);
    return;
  } else {
    r->fy = m[4] < 0; /* vflip */
    what = "mirrored upside down";
  }
  r->turn = r->swap || r->fx || r->fy;
  snprintf(r->shown, sizeof r->shown, "%s", what);
}

/* A pixel's aspect ratio once the picture is turned: a quarter turn
 * swaps its sides (as ffmpeg's transpose does). */
static AVRational turned_sar(const vrun *r, AVRational sar)
{
  if (r->swap && sar.num > 0 && sar.den > 0)
    return (AVRational){sar.den, sar.num};
  return sar;
}

/* src (the decoded size, format f) into dst (r->ow x r->oh) as shown
 * (read_orientation), plane by plane; chroma planes turn with their
 * subsampled size (4:2:0 and 4:4:4 are the same both ways; proc_format
 * keeps 4:2:2 from a quarter turn), NV12's UV pairs as one
 * element. */
static void turn_frame(const vrun *r, AVFrame *dst, const AVFrame *src)
{
  const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(src->format);
  int planes = cf_av->av_pix_fmt_count_planes(src->format);
  for (int p = 0; p < planes; p++) {
    int step = 1;
    bool sub = false;
    for (int c = 0; c < d->nb_components; c++)
      if (d->comp[c].plane == p) {
        step = d->comp[c].step;
        sub = !(d->flags & AV_PIX_FMT_FLAG_RGB) && (c == 1 || c == 2);
      }
    int w = src->width, h = src->height;
    if (sub) {
      w = -((-w) >> d->log2_chroma_w);
      h = -((-h) >> d->log2_chroma_h);
    }
    int dw = r->swap ? h : w, dh = r->swap ? w : h;
    const uint8_t *s = src->data[p];
    ptrdiff_t sl = src->linesize[p], dl = dst->linesize[p];
    for (int y = 0; y < dh; y++) {
      uint8_t *o = dst->data[p] + y * dl;
      for (int x = 0; x < dw; x++, o += step) {
        int sx = r->swap ? y : x, sy = r->swap ? x : y;
        if (r->fx)
          sx = w - 1 - sx;
        if (r->fy)
          sy = h - 1 - sy;
        const uint8_t *i = s + sy * sl + (ptrdiff_t)sx * step;
        switch (step) {
        case 1: *o = *i; break;
        case 2: memcpy(o, i, 2); break;
        case 3: memcpy(o, i, 3); break;
        case 4: memcpy(o, i, 4); break;
        default: memcpy(o, i, (size_t)step); break;
        }
      }
    }
  }
}

/* The command line's signals, or the caller's stop (libav asks this while
 * it waits). */
static int vstopping(void *opaque)
{
  const vrun *r = opaque;
  return r->h ? r->h->stop(r->h->user) : interrupted;
}

/* Read ahead to the first decoded frame (r->first; NULL where there is
 * none): the run keeps its size and pixel format, as ffmpeg's filters
 * take them from the first frame. avformat's stream parameters are those
 * of the last frame it decoded while probing, another where the stream
 * switches within its first seconds. Other streams' packets read on the
 * way are held for the output (pump), up to HELD_MAX, past which the
 * stream's parameters are taken and the rest is read as it comes. */
/* What open_input may hold of other streams before the first frame: the
 * packets' bytes and about what libav allocates for each (AVPacket,
 * AVBufferRef, AVBuffer, padding), 64 MiB in all: an hour of 48 kHz AAC
 * before a late video stream. */
#define HELD_MAX ((size_t)64 << 20)
#define HELD_EACH ((size_t)256)

/* A YUV4MPEG2 frame read: where it ends. */
static void y4m_packet(vrun *r, const AVPacket *pkt)
{
  if (r->y4m_at < 0 || pkt->pos < 0)
    return;
  if (pkt->pos + pkt->size > r->y4m_end)
    r->y4m_end = pkt->pos + pkt->size;
  r->y4m_frames++;
}

/* The bytes a YUV4MPEG2 file read to its end holds past its whole
 * frames, 0 where none (or not such a file; a pipe's size is the bytes
 * its tap counted to its end): it is cut inside the next frame (a copy or a
 * recording stopped early). libav's demuxer drops that partial frame
 * without a word, and the header states no frame count: the file's size
 * tells. *pic: a frame's picture bytes. */
static int64_t y4m_cut(const vrun *r, int *pic)
{
  if (r->y4m_at < 0 || r->stopped)
    return 0;
  /* `apply - OUT < FILE`: libav reads a pipe, of no size; FILE's */
  int64_t size = cf_av->avio_size(r->fmt->pb);
  if (size < 0 && !strcmp(r->o->in_path, "pipe:0"))
    size = r->o->stdin_file ? apply_stdin_size(r->o)
                            : apply_tap_size(r->fmt); /* a pipe's */
  if (size <= r->y4m_end)
    return 0;
  *pic = cf_av->av_image_get_buffer_size(r->ist->codecpar->format,
                                         r->ist->codecpar->width,
                                         r->ist->codecpar->height, 1);
  return size - r->y4m_end;
}

size_t apply_y4m_cut_said(char *buf, size_t n, const apply_vresult *res,
                          const char *in, const char *out)
{
  int w = 0;
  if (res->cut_bytes > 0)
    w = snprintf(buf, n,
                 "%s is cut short: it ends %lld byte%s into frame %lld, "
                 "which takes %d (the FRAME line and %d of picture); %s "
                 "ends with the %lld whole frame%s before it",
                 in, (long long)res->cut_bytes, apply_s(res->cut_bytes),
                 (long long)res->cut_whole + 1, res->cut_pic + 6,
                 res->cut_pic, out, (long long)res->cut_whole,
                 apply_s(res->cut_whole));
  else if (n)
    buf[0] = 0;
  return w > 0 ? (size_t)w : 0;
}

static int read_first(vrun *r)
{
  const char *path = r->o->in_path;
  if (!(r->first = cf_av->av_frame_alloc()))
    return apply_error("out of memory");
  for (;;) {
    int err = cf_av->avcodec_receive_frame(r->dec, r->first);
    if (err == 0)
      return 0;
    if (err == AVERROR_EOF)
      break; /* no frame at all */
    if (apply_damaged(err))
      r->corrupt++; /* skipped, as in decode_ready */
    else if (err != AVERROR(EAGAIN))
      return apply_av_error(path, "decoding failed", err);
    if (r->held_bytes >= HELD_MAX)
      break;
    if (vstopping(r)) {
      if (!r->h)
        return 130;
      r->stopped = true; /* the stream's parameters; nothing to filter */
      break;
    }
    err = cf_av->av_read_frame(r->fmt, r->pkt);
    if (err == AVERROR_EOF) {
      err = cf_av->avcodec_send_packet(r->dec, NULL);
      if (err < 0 && !apply_damaged(err))
        return apply_av_error(path, "decoding failed", err);
      r->corrupt += err < 0;
      r->dec_ended = true;
      continue;
    }
    if (err < 0 && vstopping(r) && r->h) {
      r->stopped = true;
      break;
    }
    if (err < 0)
      return vstopping(r) ? 130 : apply_av_error(path, "reading failed", err);
    apply_discont_packet(&r->disc, r->fmt, r->pkt);
    if (r->pkt->stream_index == r->vstream) {
      y4m_packet(r, r->pkt);
      err = cf_av->avcodec_send_packet(r->dec, r->pkt);
      cf_av->av_packet_unref(r->pkt);
      if (apply_damaged(err))
        r->corrupt++;
      else if (err < 0)
        return apply_av_error(path, "decoding failed", err);
      continue;
    }
    /* held as it is: this packet becomes the list's, a new one reads */
    AVPacket **h = realloc(r->held, (r->nheld + 1) * sizeof *h);
    if (!h)
      return apply_error("out of memory");
    r->held = h;
    r->held_bytes += (size_t)r->pkt->size + HELD_EACH;
    r->held[r->nheld++] = r->pkt;
    if (!(r->pkt = cf_av->av_packet_alloc()))
      return apply_error("out of memory");
  }
  cf_av->av_frame_free(&r->first);
  return 0;
}

static int open_input(vrun *r)
{
  const char *path = r->o->in_path;
  int err;
  if (!(r->fmt = cf_av->avformat_alloc_context()))
    return apply_error("out of memory");
  r->fmt->interrupt_callback.callback = vstopping;
  r->fmt->interrupt_callback.opaque = r;
  if ((err = apply_open_input(&r->fmt, path,
                              !strcmp(path, "pipe:0") && !r->o->stdin_file)) <
      0)
    return vstopping(r) ? 130 : av_err(r, path, "cannot open", err);
  /* its header read, nothing more yet */
  r->y4m_at = r->y4m_end =
      !strcmp(r->fmt->iformat->name, "yuv4mpegpipe") && r->fmt->pb
          ? cf_av->avio_seek(r->fmt->pb, 0, SEEK_CUR)
          : -1;
  if ((err = cf_av->avformat_find_stream_info(r->fmt, NULL)) < 0)
    return vstopping(r) ? 130
                        : av_err(r, path, "cannot read its stream info", err);
  if ((err = apply_discont_init(&r->disc, r->fmt, path,
                                !apply_input_notes(r->o))))
    return err;
  r->disc.prog = apply_prog(r->o);
  const AVCodec *codec = NULL;
  r->vstream =
      cf_av->av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (r->vstream < 0)
    return av_err(r, path, "no video stream libav can decode", r->vstream);
  r->ist = r->fmt->streams[r->vstream];
  if (!(r->dec = cf_av->avcodec_alloc_context3(codec)) ||
      !(r->pkt = cf_av->av_packet_alloc()) ||
      !(r->opkt = cf_av->av_packet_alloc()) ||
      !(r->frame = cf_av->av_frame_alloc()))
    return apply_error("out of memory");
  if ((err = cf_av->avcodec_parameters_to_context(r->dec, r->ist->codecpar)) <
      0)
    return av_err(r, path, "video decoder parameters", err);
  r->dec->thread_count = 0; /* libav picks */
  r->dec->pkt_timebase = r->ist->time_base; /* as ffmpeg gives it */
  if ((err = cf_av->avcodec_open2(r->dec, codec, NULL)) < 0)
    return av_err(r, path, "cannot open the video decoder", err);
  int rc = read_first(r);
  if (rc)
    return rc;
  r->width = r->first ? r->first->width : r->dec->width;
  r->height = r->first ? r->first->height : r->dec->height;
  r->dec_fmt = r->first ? (enum AVPixelFormat)r->first->format
                        : r->dec->pix_fmt;
  if (r->width <= 0 || r->height <= 0 || r->dec_fmt == AV_PIX_FMT_NONE)
    return apply_error("%s: the video stream has no size or pixel format",
                       path);
  if ((unsigned)r->width > CF_VIDEO_MAX_SIDE ||
      (unsigned)r->height > CF_VIDEO_MAX_SIDE)
    return apply_error("%s: %dx%d: a side over %u is not supported", path,
                       r->width, r->height, CF_VIDEO_MAX_SIDE);
  /* shown turned (a phone's picture): filtered and written as shown, as
   * ffmpeg turns it, so that a kernel's x is the picture's */
  read_orientation(r);
  r->ow = r->swap ? r->height : r->width;
  r->oh = r->swap ? r->width : r->height;
  return 0;
}

/* The engine's format for the decoder's: the same where the engine takes
 * it, else the one libav loses least in converting to. */
static int proc_format(vrun *r, cf_pixel_format *cf)
{
  /* 4:2:2 turned a quarter is 4:4:0, which no format here holds: it is
   * turned as 4:4:4 (its chroma doubled across, then halved again for
   * the encoder) */
  if (engine_format(r->dec_fmt, cf) && !(r->swap && *cf == CF_PIX_Y42B)) {
    r->proc = r->dec_fmt;
    return 0;
  }
  enum AVPixelFormat list[NFORMATS + 1];
  size_t n = 0;
  for (size_t i = 0; i < NFORMATS; i++) {
    const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(formats[i].av);
    /* the YUVJ twins have the same layout; 4:2:2 as above; the alpha
     * planes only for frames decoded with one */
    if (strncmp(d->name, "yuvj", 4) && !alpha_plane(formats[i].av) &&
        !(r->swap && formats[i].cf == CF_PIX_Y42B))
      list[n++] = formats[i].av;
  }
  list[n] = AV_PIX_FMT_NONE;
  const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(r->dec_fmt);
  int alpha = d && (d->flags & AV_PIX_FMT_FLAG_ALPHA);
  r->proc =
      cf_av->avcodec_find_best_pix_fmt_of_list(list, r->dec_fmt, alpha, NULL);
  if (r->proc == AV_PIX_FMT_NONE || !engine_format(r->proc, cf))
    return apply_error("%s: no filterable pixel format for %s", r->o->in_path,
                       cf_av->av_get_pix_fmt_name(r->dec_fmt));
  return 0;
}

/* proc_format, and the conversion to it where the decoder's differs
 * (open_output tells, once it knows the encoder's format). */
static int choose_proc(vrun *r, cf_pixel_format *cf)
{
  int rc = proc_format(r, cf);
  if (rc || r->proc == r->dec_fmt)
    return rc;
  if ((rc = sws_load()))
    return rc;
  r->to_proc = sws.sws_getContext(
      r->width, r->height, r->dec_fmt, r->width, r->height, r->proc,
      SWS_BICUBIC | SWS_ACCURATE_RND, NULL, NULL, NULL);
  if (!r->to_proc)
    return apply_error("%s: libswscale cannot convert %s to %s", r->o->in_path,
                       cf_av->av_get_pix_fmt_name(r->dec_fmt),
                       cf_av->av_get_pix_fmt_name(r->proc));
  return new_frame(r, r->proc, &r->pin);
}

/* What filtering in r->proc loses of the decoder's format, for the note
 * (empty: nothing worth saying). */
static void proc_losses(const vrun *r, char *buf, size_t cap)
{
  const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(r->dec_fmt);
  const AVPixFmtDescriptor *p = cf_av->av_pix_fmt_desc_get(r->proc);
  buf[0] = '\0';
  if (!d || !p)
    return;
  bool yuv = !(p->flags & AV_PIX_FMT_FLAG_RGB) && p->nb_components >= 3;
  /* the resolution of the format filtered in (it said 4:2:0 whatever it
   * was) */
  if (yuv && d->nb_components >= 3 &&
      (p->log2_chroma_w > d->log2_chroma_w ||
       p->log2_chroma_h > d->log2_chroma_h))
    snprintf(buf, cap, ": chroma filtered at 4:%s resolution",
             p->log2_chroma_w == 0   ? (p->log2_chroma_h ? "4:0" : "4:4")
             : p->log2_chroma_w == 1 ? (p->log2_chroma_h ? "2:0" : "2:2")
                                     : (p->log2_chroma_h ? "1:0" : "1:1"));
  if (p->comp[0].depth < d->comp[0].depth)
    snprintf(buf + strlen(buf), cap - strlen(buf), "%s%d bits",
             buf[0] ? ", " : ": ", p->comp[0].depth);
  if ((d->flags & AV_PIX_FMT_FLAG_ALPHA) && !(p->flags & AV_PIX_FMT_FLAG_ALPHA))
    snprintf(buf + strlen(buf), cap - strlen(buf), "%sno alpha",
             buf[0] ? ", " : ": ");
}

/* Whether YUV format a holds chroma at a finer resolution than b. */
static bool finer_chroma(enum AVPixelFormat a, enum AVPixelFormat b)
{
  const AVPixFmtDescriptor *da = cf_av->av_pix_fmt_desc_get(a);
  const AVPixFmtDescriptor *db = cf_av->av_pix_fmt_desc_get(b);
  return da && db && !(da->flags & AV_PIX_FMT_FLAG_RGB) &&
         !(db->flags & AV_PIX_FMT_FLAG_RGB) && da->nb_components >= 3 &&
         db->nb_components >= 3 &&
         (da->log2_chroma_w < db->log2_chroma_w ||
          da->log2_chroma_h < db->log2_chroma_h);
}

static bool takes(const enum AVPixelFormat *list, enum AVPixelFormat f)
{
  while (*list != AV_PIX_FMT_NONE && *list != f)
    list++;
  return *list == f;
}

/* The formats a JPEG encoder takes at normal compliance, as ffmpeg
 * chooses among (its get_compliance_normal_pix_fmts): MJPEG lists
 * limited-range YUV too, but refuses it unless -strict unofficial
 * ("mjpeg refuses 64x48 yuv420p"); ffmpeg writes yuvj420p. NULL: the
 * encoder's own list holds, as where the input is full-range YUV the
 * encoder takes as it is. */
static const enum AVPixelFormat *jpeg_formats(const vrun *r,
                                              const AVCodec *codec)
{
  static const enum AVPixelFormat mjpeg[] = {
      AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P,
      AV_PIX_FMT_NONE};
  static const enum AVPixelFormat ljpeg[] = {
      AV_PIX_FMT_BGR24,    AV_PIX_FMT_BGRA,     AV_PIX_FMT_BGR0,
      AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUVJ422P,
      AV_PIX_FMT_NONE};
  if (codec->id != AV_CODEC_ID_MJPEG && codec->id != AV_CODEC_ID_LJPEG)
    return NULL;
  if (r->dec->color_range == AVCOL_RANGE_JPEG && codec->pix_fmts &&
      takes(codec->pix_fmts, r->dec_fmt))
    return NULL;
  return codec->id == AV_CODEC_ID_MJPEG ? mjpeg : ljpeg;
}

/* Whether the filtered frames (r->proc) can be had in format f: as they
 * are, or through libswscale, which writes most formats but not all
 * (pal8). */
static bool writable(const vrun *r, enum AVPixelFormat f)
{
  return f == r->proc || (sws_load() == 0 && sws.sws_isSupportedOutput(f) > 0);
}

/* The encoder's format: the input's own where the encoder takes it, as
 * ffmpeg keeps it (frames filtered in another converted back: a 4:4:4 or
 * odd-sized input stays 4:4:4, which 4:2:0 encoders refuse at odd
 * sizes), else the one of its formats nearest to the input's. */
static enum AVPixelFormat encoder_format(const vrun *r, const AVCodec *codec)
{
  /* YUV4MPEG2's encoder takes any format, its muxer only these without
   * -strict -1 (ffmpeg fails on a 10-bit input there) */
  static const enum AVPixelFormat y4m[] = {
      AV_PIX_FMT_GRAY8,    AV_PIX_FMT_YUV420P,  AV_PIX_FMT_YUV422P,
      AV_PIX_FMT_YUV444P,  AV_PIX_FMT_YUV411P,  AV_PIX_FMT_YUVJ420P,
      AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_NONE};
  const enum AVPixelFormat *list =
      !strcmp(r->oc->oformat->name, "yuv4mpegpipe") ? y4m
      : jpeg_formats(r, codec)                      ? jpeg_formats(r, codec)
                                                    : codec->pix_fmts;
  if ((!list || takes(list, r->dec_fmt)) && writable(r, r->dec_fmt))
    return r->dec_fmt;
  if (!list)
    return r->proc;
  /* of those libswscale writes (not pal8: a palette PNG is written as
   * RGBA, as ffmpeg writes it) */
  enum AVPixelFormat ok[AV_PIX_FMT_NB + 1];
  size_t n = 0;
  for (; *list != AV_PIX_FMT_NONE && n < AV_PIX_FMT_NB; list++)
    if (writable(r, *list))
      ok[n++] = *list;
  ok[n] = AV_PIX_FMT_NONE;
  const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(r->dec_fmt);
  int alpha = d && (d->flags & AV_PIX_FMT_FLAG_ALPHA);
  return cf_av->avcodec_find_best_pix_fmt_of_list(ok, r->dec_fmt, alpha, NULL);
}

/* The note on a conversion for the engine: what it costs, and where the
 * frames go after it (ef: the encoder's format). */
static void note_conversion(const vrun *r, enum AVPixelFormat ef)
{
  char lost[96];
  proc_losses(r, lost, sizeof lost);
  fprintf(stderr,
          "cudafilter: note: %s is %s, filtered as %s (the nearest format "
          "the engine takes%s)%s%s%s\n",
          r->o->in_path, cf_av->av_get_pix_fmt_name(r->dec_fmt),
          cf_av->av_get_pix_fmt_name(r->proc), lost,
          ef == r->proc      ? ""
          : ef == r->dec_fmt ? ", then converted back to "
                             : ", then converted to ",
          ef == r->proc ? "" : cf_av->av_get_pix_fmt_name(ef),
          ef == r->proc               ? ""
          : finer_chroma(ef, r->proc) ? " (chroma upsampled) for the encoder"
                                      : " for the encoder");
}

/* ---- interlaced frames ------------------------------------------------- */

static bool frame_interlaced(const AVFrame *f)
{
#ifdef AV_FRAME_FLAG_INTERLACED
  return f->flags & AV_FRAME_FLAG_INTERLACED;
#else
  return f->interlaced_frame;
#endif
}

static bool frame_tff(const AVFrame *f)
{
#ifdef AV_FRAME_FLAG_TOP_FIELD_FIRST
  return f->flags & AV_FRAME_FLAG_TOP_FIELD_FIRST;
#else
  return f->top_field_first;
#endif
}

/* dst marked interlaced (top field first) or progressive as src is, for
 * the encoder and the muxer. */
static void copy_field_flags(AVFrame *dst, const AVFrame *src)
{
#ifdef AV_FRAME_FLAG_INTERLACED
  const int m = AV_FRAME_FLAG_INTERLACED | AV_FRAME_FLAG_TOP_FIELD_FIRST;
  dst->flags = (dst->flags & ~m) | (src->flags & m);
#else
  dst->interlaced_frame = src->interlaced_frame;
  dst->top_field_first = src->top_field_first;
#endif
}

/* The output's field order: the input stream's where it says one, else
 * the first frame's where it is interlaced (its top or bottom field
 * first), else unknown (as before: a progressive file stays as it was). */
static enum AVFieldOrder field_order(const vrun *r)
{
  enum AVFieldOrder o = r->ist->codecpar->field_order;
  if (o != AV_FIELD_UNKNOWN || !r->first || !frame_interlaced(r->first))
    return o;
  return frame_tff(r->first) ? AV_FIELD_TT : AV_FIELD_BB;
}

/* Field `parity` (0 top, 1 bottom) of frame f: every other row of each
 * plane from row `parity` on, as the element takes it (the chroma rows
 * of 4:2:0 alternate between the fields too). */
static void field_of(const cf_frame *f, unsigned parity, cf_frame *out)
{
  memset(out, 0, sizeof *out);
  for (int p = 0; p < 3; p++)
    if (f->data[p]) {
      out->data[p] = (uint8_t *)f->data[p] + parity * f->stride[p];
      out->stride[p] = 2 * f->stride[p];
    }
}

/* Whether the fields of frame f reach a chroma row past its own: 4:2:0
 * of 4n + 2 rows, whose bottom field (2n + 1 rows, rows 1, 3, ...) has
 * n + 1 chroma rows (1, 3, ..., 2n + 1) where the frame has 2n + 1. */
static bool field_chroma_short(const AVFrame *f)
{
  const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(f->format);
  return d && !(d->flags & AV_PIX_FMT_FLAG_RGB) && d->nb_components >= 3 &&
         d->log2_chroma_h == 1 && f->height % 4 == 2;
}

/* src, where its fields reach a chroma row past it (field_chroma_short),
 * copied into *pad (made here, with the rows: new_frame_of) with that row
 * a copy of the one above it in the bottom field (row 2n - 1; a frame of
 * 2 rows: its one chroma row), as a field's last row extends; *out: the
 * frame to take (src or *pad). */
static int pad_field_chroma(vrun *r, AVFrame **pad, const AVFrame *src,
                            const AVFrame **out)
{
  int err;
  *out = src;
  if (!field_chroma_short(src))
    return 0;
  if (!*pad && (err = new_frame_of(r, src->format, src->width, src->height,
                                   pad)))
    return err;
  if ((err = cf_av->av_frame_make_writable(*pad)) < 0)
    return apply_av_error(r->out_path, "frame buffer", err);
  const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(src->format);
  int planes = cf_av->av_pix_fmt_count_planes(src->format);
  for (int p = 0; p < planes; p++) {
    int step = 1, w = src->width, h = src->height;
    bool sub = false;
    for (int c = 0; c < d->nb_components; c++)
      if (d->comp[c].plane == p) {
        step = d->comp[c].step;
        sub = c == 1 || c == 2;
      }
    if (sub) {
      w = -((-w) >> d->log2_chroma_w);
      h = -((-h) >> d->log2_chroma_h);
    }
    size_t bytes = (size_t)w * (size_t)step;
    ptrdiff_t sl = src->linesize[p], dl = (*pad)->linesize[p];
    for (int y = 0; y < h; y++)
      memcpy((*pad)->data[p] + y * dl, src->data[p] + y * sl, bytes);
    if (sub) /* h = 2n + 1: row 2n + 1 from row 2n - 1 (2 rows: from 0) */
      memcpy((*pad)->data[p] + h * dl,
             (*pad)->data[p] + (h > 1 ? h - 2 : 0) * dl, bytes);
  }
  *out = *pad;
  return 0;
}

/* src converted into dst (of src's size) field by field, ctx[0] the top
 * field's conversion and ctx[1] the bottom one's (made here): a 4:2:0
 * conversion of an interlaced frame never blends the fields' rows. src's
 * fields must have their rows (pad_field_chroma). */
static int scale_fields(struct SwsContext *ctx[2], AVFrame *dst,
                        const AVFrame *src, const char *path)
{
  int w = src->width, h = src->height;
  int sp = cf_av->av_pix_fmt_count_planes(src->format);
  int dp = cf_av->av_pix_fmt_count_planes(dst->format);
  for (int parity = 0; parity < 2; parity++) {
    int fh = parity ? h / 2 : (h + 1) / 2;
    if (!fh)
      continue;
    if (!ctx[parity] &&
        !(ctx[parity] = sws.sws_getContext(
              w, fh, src->format, w, fh, dst->format,
              SWS_BICUBIC | SWS_ACCURATE_RND, NULL, NULL, NULL)))
      return apply_error("%s: libswscale cannot convert %s to %s", path,
                         cf_av->av_get_pix_fmt_name(src->format),
                         cf_av->av_get_pix_fmt_name(dst->format));
    const uint8_t *s[4];
    uint8_t *d[4];
    int sl[4], dl[4];
    for (int p = 0; p < 4; p++) { /* a palette (past the planes) as it is */
      s[p] = src->data[p] && p < sp
                 ? src->data[p] + parity * src->linesize[p]
                 : src->data[p];
      sl[p] = p < sp ? 2 * src->linesize[p] : src->linesize[p];
      d[p] = dst->data[p] && p < dp
                 ? dst->data[p] + parity * dst->linesize[p]
                 : dst->data[p];
      dl[p] = p < dp ? 2 * dst->linesize[p] : dst->linesize[p];
    }
    int err = sws.sws_scale(ctx[parity], s, sl, 0, fh, d, dl);
    if (err < 0)
      return apply_av_error(path, "pixel format conversion", err);
  }
  return 0;
}

/* The frames before the first (and after each DISCONT) are black frames
 * of the range the engine's frames are in: the decoded pixels' own, or
 * libswscale's (full for the yuvj formats only), not zeros (a saturated
 * green in YUV). An engine that has had frames (a daemon's, looping a
 * file) keeps the black it had. */
static int history_black(const vrun *r, cf_engine *e)
{
  const char *n = cf_av->av_get_pix_fmt_name(r->proc);
  bool full = (n && !strncmp(n, "yuvj", 4)) ||
              (r->proc == r->dec_fmt && r->dec->color_range == AVCOL_RANGE_JPEG);
  cf_status s = cf_engine_set_history_black(e, full);
  if (s != CF_OK && s != CF_E_STATE)
    return apply_error("the engine's history: %s", cf_last_error());
  return 0;
}

/* The fields' engines (fe), made at the first interlaced frame from the
 * run's config and kernel: (oh + 1) / 2 and oh / 2 rows. */
static int field_engines(vrun *r)
{
  if (r->fe[0])
    return 0;
  for (unsigned parity = 0; parity < 2; parity++) {
    cf_video_config cfg = r->fcfg;
    cfg.height = parity ? (unsigned)r->oh / 2 : ((unsigned)r->oh + 1) / 2;
    if (cfg.height && cf_engine_new_video(&cfg, r->k, &r->fe[parity]) != CF_OK)
      return apply_error("cannot create the engine of the %s field "
                         "(%ux%u): %s",
                         parity ? "bottom" : "top", cfg.width, cfg.height,
                         cf_last_error());
    int rc = cfg.height ? history_black(r, r->fe[parity]) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

/* in filtered into out: field by field where `fields` (on fe), else
 * whole (on e, or the caller's hook); a frame of the other kind than
 * the last one starts the history of its kind anew (its last frames
 * came before the other kind's run), as the element does. */
static cf_status process(vrun *r, bool fields, const cf_frame *in,
                         cf_frame *out, double t)
{
  if (r->kind >= 0 && r->kind != (int)fields) {
    cf_engine *e[2] = {fields ? r->fe[0] : r->own_e ? r->e : NULL,
                       fields ? r->fe[1] : NULL};
    for (int i = 0; i < 2; i++) {
      cf_status st = e[i] ? cf_engine_reset(e[i]) : CF_OK;
      if (st != CF_OK)
        return st;
    }
  }
  r->kind = fields;
  r->field_frames += fields;
  if (!fields)
    return r->h ? r->h->process_frame(r->h->user, r->e, in, out, t)
                : cf_engine_process_frame(r->e, in, out);
  for (unsigned parity = 0; parity < 2; parity++) {
    if (!r->fe[parity])
      continue;
    cf_frame fi, fo;
    field_of(in, parity, &fi);
    field_of(out, parity, &fo);
    cf_status st = cf_engine_process_frame(r->fe[parity], &fi, &fo);
    if (st != CF_OK)
      return st;
  }
  return CF_OK;
}

static int open_output(vrun *r, const char *tmp)
{
  const apply_opts *o = r->o;
  const char *path = o->out_path;
  const AVCodec *codec;
  int err, rc = apply_muxer(o, &r->oc);
  /* the format's codec for OUTPUT's name, as ffmpeg guesses it: image2
   * holds PNG for .png, not its default MJPEG */
  if (rc ||
      (rc = apply_encoder(o, r->oc, AVMEDIA_TYPE_VIDEO,
                          cf_av->av_guess_codec(r->oc->oformat, NULL, path,
                                                NULL, AVMEDIA_TYPE_VIDEO),
                          &codec)))
    return rc;
  if (!(r->enc = cf_av->avcodec_alloc_context3(codec)))
    return apply_error("out of memory");
  /* a constant rate where the format has no other (ffmpeg's vsync auto:
   * AVI takes variable rates its own way) */
  r->cfr = !(r->oc->oformat->flags & AVFMT_VARIABLE_FPS) &&
           strcmp(r->oc->oformat->name, "avi");
  /* image2 writes one picture to one file (apply_write_header) */
  r->one_image = (r->oc->oformat->flags & AVFMT_NOFILE) &&
                 !strcmp(r->oc->oformat->name, "image2") &&
                 !cf_av->av_filename_number_test(path);
  enum AVPixelFormat ef = encoder_format(r, codec);
  if (r->to_proc && !o->quiet)
    note_conversion(r, ef);
  if (ef != r->proc) {
    rc = sws_load();
    if (rc)
      return rc;
    r->to_enc = sws.sws_getContext(r->ow, r->oh, r->proc, r->ow, r->oh, ef,
                                   SWS_BICUBIC | SWS_ACCURATE_RND, NULL, NULL,
                                   NULL);
    if (!r->to_enc)
      return apply_error("%s: libswscale cannot convert %s to %s", path,
                         cf_av->av_get_pix_fmt_name(r->proc),
                         cf_av->av_get_pix_fmt_name(ef));
    if ((rc = new_out_frame(r, ef, &r->penc)))
      return rc;
  }
  AVRational fps = cf_av->av_guess_frame_rate(r->fmt, r->ist, NULL);
  r->enc->width = r->ow;
  r->enc->height = r->oh;
  r->enc->pix_fmt = ef;
  /* the container's where it says (MOV's pasp, Matroska's display size:
   * the decoder's alone lost a DVD's 16:9), as ffmpeg takes it */
  r->enc->sample_aspect_ratio = turned_sar(
      r, cf_av->av_guess_sample_aspect_ratio(r->fmt, r->ist, r->first));
  if (ef == r->dec_fmt) {
    /* the decoded pixels, filtered: their colour description holds */
    r->enc->color_range = r->dec->color_range;
    r->enc->color_primaries = r->dec->color_primaries;
    r->enc->color_trc = r->dec->color_trc;
    r->enc->colorspace = r->dec->colorspace;
    r->enc->chroma_sample_location = r->dec->chroma_sample_location;
  } else {
    /* libswscale's conversions write limited-range YUV, full range for
     * the JPEG formats (yuvj*) */
    const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(ef);
    if (d && !(d->flags & AV_PIX_FMT_FLAG_RGB) && d->nb_components >= 3)
      r->enc->color_range =
          !strncmp(d->name, "yuvj", 4) ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
  }
  r->enc->framerate = fps;
  /* the input's field order, as ffmpeg keeps it (frames are sent with
   * their interlaced and top-field-first flags: filter_frame) */
  r->enc->field_order = field_order(r);
  /* 1/fps as ffmpeg does (some encoders want a small time base); the
   * stream's own where the rate is unknown. */
  r->enc->time_base = fps.num > 0 && fps.den > 0
                          ? (AVRational){fps.den, fps.num}
                          : r->ist->time_base;
  if (r->oc->oformat->flags & AVFMT_GLOBALHEADER)
    r->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if ((err = cf_av->avcodec_open2(r->enc, codec, NULL)) < 0) {
    char what[320];
    const AVPixFmtDescriptor *d = cf_av->av_pix_fmt_desc_get(ef);
    bool odd = d && (((r->ow & 1) && d->log2_chroma_w) ||
                     ((r->oh & 1) && d->log2_chroma_h));
    snprintf(what, sizeof what, "encoder %s refuses %dx%d %s%s", codec->name,
             r->ow, r->oh, cf_av->av_get_pix_fmt_name(ef),
             odd ? " (an odd size with subsampled chroma, which many "
                   "encoders refuse: choose one that takes the input's "
                   "format or 4:4:4 with --codec, e.g. ffv1)"
                 : "");
    return apply_av_error(path, what, err);
  }
  if (!(r->ost = cf_av->avformat_new_stream(r->oc, NULL)))
    return apply_error("out of memory");
  if ((err = cf_av->avcodec_parameters_from_context(r->ost->codecpar, r->enc)) <
      0)
    return apply_av_error(path, "stream parameters", err);
  r->ost->time_base = r->enc->time_base;
  r->ost->avg_frame_rate = fps;
  r->ost->sample_aspect_ratio = r->enc->sample_aspect_ratio; /* as ffmpeg */
  r->ost->disposition = r->ist->disposition;
  if ((rc = apply_stream_metadata(r->ost, r->ist, codec, path)) ||
      (rc = apply_file_metadata(r->oc, r->fmt, false, 0, path)))
    return rc;
  /* turned upright: shown as it is now, as ffmpeg leaves its matrix */
  int32_t *m = r->turn ? display_matrix(r->ost) : NULL;
  if (m)
    cf_av->av_display_rotation_set(m, 0);

  /* The input's other streams (its sound, subtitles, other pictures),
   * copied where the format can hold them, as `apply` copies them beside
   * a filtered sound. */
  if (!(r->map = malloc(r->fmt->nb_streams * sizeof *r->map)) ||
      !(r->copied = calloc(r->fmt->nb_streams, sizeof *r->copied)))
    return apply_error("out of memory");
  r->ncopied = r->fmt->nb_streams;
  for (unsigned i = 0; i < r->fmt->nb_streams; i++) {
    r->map[i] = -1;
    r->copied[i] =
        (apply_copied){.opt = o, .last_dts = AV_NOPTS_VALUE};
    if (r->fmt->streams[i] != r->ist &&
        (rc = apply_add_copy(o, r->oc, NULL, r->fmt->streams[i], i, path,
                             &r->map[i], &r->copied[i])))
      return rc;
  }

  if ((rc = apply_write_header(o, r->oc, tmp)))
    return rc;
  if (r->turn && (rc = new_out_frame(r, r->proc, &r->prot)))
    return rc;
  return new_out_frame(r, r->proc, &r->pout);
}

static int write_packets(vrun *r)
{
  for (;;) {
    int err = cf_av->avcodec_receive_packet(r->enc, r->opkt);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF)
      return 0;
    if (err < 0)
      return apply_av_error(r->out_path, "encoding failed", err);
    cf_av->av_packet_rescale_ts(r->opkt, r->enc->time_base, r->ost->time_base);
    r->opkt->stream_index = r->ost->index;
    err = apply_write(r->o, r->oc, r->opkt);
    if (err < 0)
      return apply_av_error(r->out_path, "writing failed", err);
  }
}

static void as_cf_frame(const AVFrame *f, cf_frame *out)
{
  memset(out, 0, sizeof *out);
  for (int i = 0; i < 3; i++) {
    out->data[i] = f->data[i];
    out->stride[i] = f->linesize[i] > 0 ? (size_t)f->linesize[i] : 0;
  }
}

/* fr, of another size or format than the stream's first frame, scaled
 * and converted to those into r->pstart, as ffmpeg's filters have it (a
 * scaler where the stream changes); a note where it changes. */
static int to_start(vrun *r, const AVFrame *fr)
{
  int err;
  if (!r->to_start || fr->width != r->from_w || fr->height != r->from_h ||
      fr->format != r->from_fmt) {
    if ((err = sws_load()))
      return err;
    if (r->to_start)
      sws.sws_freeContext(r->to_start);
    r->to_start = sws.sws_getContext(
        fr->width, fr->height, (enum AVPixelFormat)fr->format, r->width,
        r->height, r->dec_fmt, SWS_BICUBIC | SWS_ACCURATE_RND, NULL, NULL,
        NULL);
    if (!r->to_start)
      return apply_error("%s: the video changes to %dx%d %s at frame %lld, "
                         "which libswscale cannot convert to %dx%d %s",
                         r->o->in_path, fr->width, fr->height,
                         cf_av->av_get_pix_fmt_name(fr->format),
                         (long long)r->frames + 1, r->width, r->height,
                         cf_av->av_get_pix_fmt_name(r->dec_fmt));
    r->from_w = fr->width, r->from_h = fr->height, r->from_fmt = fr->format;
    if (apply_input_notes(r->o))
      fprintf(stderr,
              "%s: note: %s: the video changes to %dx%d %s at frame "
              "%lld: scaled to %dx%d %s\n",
              apply_prog(r->o), r->o->in_path, fr->width, fr->height,
              cf_av->av_get_pix_fmt_name(fr->format), (long long)r->frames + 1,
              r->width, r->height, cf_av->av_get_pix_fmt_name(r->dec_fmt));
  }
  if (!r->pstart && (err = new_frame(r, r->dec_fmt, &r->pstart)))
    return err;
  if ((err = cf_av->av_frame_make_writable(r->pstart)) < 0 ||
      (err = sws.sws_scale_frame(r->to_start, r->pstart, fr)) < 0)
    return apply_av_error(r->o->in_path, "scaling to the first frame's size",
                          err);
  return 0;
}

/* Filter one decoded frame and hand it to the encoder. */
static int filter_frame(vrun *r, AVFrame *fr)
{
  int err;
  for (int i = 0; i < 4; i++)
    if (fr->linesize[i] < 0)
      return apply_error("%s: bottom-up frames are not supported",
                         r->o->in_path);
  /* the picture: fr's, or fr scaled to the stream's first frame's */
  AVFrame *img = fr;
  if (fr->width != r->width || fr->height != r->height ||
      fr->format != r->dec_fmt) {
    if ((err = to_start(r, fr)))
      return err;
    img = r->pstart;
  }
  if (r->one_image && r->frames == 1)
    return apply_error("%s holds one picture, but %s has more than one "
                       "frame: write a video file (.mkv, .y4m), or take one "
                       "frame first (ffmpeg -frames:v 1)",
                       r->out_path, r->o->in_path);
  /* interlaced: field by field (not under hooks, nor turned a quarter:
   * whole there, with a note) */
  bool fields = frame_interlaced(fr) && !r->h && !r->swap;
  if (frame_interlaced(fr) && !fields && !r->told_fields &&
      apply_input_notes(r->o)) {
    r->told_fields = true;
    fprintf(stderr,
            "%s: note: %s is interlaced: filtered here as progressive "
            "frames, its fields together (%s)\n",
            apply_prog(r->o), r->o->in_path,
            r->h ? "the daemon filters whole frames"
                 : "turned a quarter, its fields are columns");
  }
  if (fields && (err = field_engines(r)))
    return err;
  AVFrame *src = img;
  bool padded = false; /* src's fields have their chroma rows */
  if (r->to_proc) {
    const AVFrame *from = img;
    if ((err = cf_av->av_frame_make_writable(r->pin)) < 0)
      return apply_av_error(r->o->in_path, "pixel format conversion", err);
    if (fields) {
      if ((err = pad_field_chroma(r, &r->pdec, img, &from)) ||
          (err = scale_fields(r->to_proc_f, r->pin, from, r->o->in_path)))
        return err;
      padded = true;
    } else if ((err = sws.sws_scale_frame(r->to_proc, r->pin, img)) < 0)
      return apply_av_error(r->o->in_path, "pixel format conversion", err);
    src = r->pin;
  }
  if (r->turn) {
    if ((err = cf_av->av_frame_make_writable(r->prot)) < 0)
      return apply_av_error(r->out_path, "frame buffer", err);
    turn_frame(r, r->prot, src);
    src = r->prot;
    padded = false;
  }
  if (fields && !padded) {
    const AVFrame *from;
    if ((err = pad_field_chroma(r, &r->pfield, src, &from)))
      return err;
    src = (AVFrame *)from;
  }
  if ((err = cf_av->av_frame_make_writable(r->pout)) < 0)
    return apply_av_error(r->out_path, "frame buffer", err);
  /* Timestamps from the decoder, in the encoder's time base (1/fps of
   * the stream's start); strictly increasing, as encoders require: a
   * frame that rounds onto the last one written or before is moved on a
   * tick (a jittery capture; a joined file whose time goes back). Where
   * that leaves it more than 0.6 of a tick behind the last one written,
   * and less than 2 (the frame rate rose part way: a 50 fps part joined
   * after a 25 fps one), it is filtered (a temporal kernel sees it) but
   * not written, as ffmpeg's variable-rate output drops it: moved on, every
   * later frame fell further behind its sound (the 50 fps part played at
   * half speed). */
  int64_t ts = fr->best_effort_timestamp, pts;
  bool drop = false;
  if (ts == AV_NOPTS_VALUE) {
    pts = r->last_pts + 1;
  } else {
    pts = cf_av->av_rescale_q(ts, r->ist->time_base, r->enc->time_base);
    if (r->frames - r->dropped > 0 && pts <= r->last_pts) {
      double exact = (double)ts * av_q2d(r->ist->time_base) /
                     av_q2d(r->enc->time_base);
      double behind = (double)r->last_pts - exact;
      drop = behind >= 0.6 && behind < 2.0;
      pts = r->last_pts + 1;
    }
  }
  if (!drop && r->cfr && r->sent && pts > r->last_pts + 1) {
    /* the frames between: the last one again, before the engine writes
     * over it */
    for (int64_t t = r->last_pts + 1; t < pts; t++) {
      r->sent->pts = t;
      if ((err = cf_av->avcodec_send_frame(r->enc, r->sent)) < 0)
        return apply_av_error(r->out_path, "encoding failed", err);
      r->repeated++;
      if ((err = write_packets(r)))
        return err;
    }
    r->last_pts = pts - 1;
  }
  cf_frame in, out;
  as_cf_frame(src, &in);
  as_cf_frame(r->pout, &out);
  cf_status st =
      process(r, fields, &in, &out, (double)pts * av_q2d(r->enc->time_base));
  apply_note_fallback(r->e, &r->told);
  if (st != CF_OK)
    return apply_error("frame %lld: filtering failed: %s",
                       (long long)r->frames + 1, cf_last_error());
  if (alpha_plane(r->proc)) /* alpha passes through, as in RGBA */
    for (int y = 0; y < r->oh; y++)
      memcpy(r->pout->data[3] + (ptrdiff_t)y * r->pout->linesize[3],
             src->data[3] + (ptrdiff_t)y * src->linesize[3], (size_t)r->ow);
  if (drop) {
    if (r->dropped++ == 0 && !r->o->quiet && !r->h)
      fprintf(stderr,
              "cudafilter: note: %s: the frame rate rises past the "
              "output's %d/%d fps at frame %lld (%.3f s): frames that fall "
              "behind by over 0.6 of its frames are dropped, to keep the "
              "picture with its sound\n",
              r->o->in_path, r->enc->time_base.den, r->enc->time_base.num,
              (long long)r->frames + 1,
              (double)ts * av_q2d(r->ist->time_base));
    r->frames++;
    return 0;
  }
  AVFrame *dst = r->pout;
  if (r->to_enc) {
    if ((err = cf_av->av_frame_make_writable(r->penc)) < 0)
      return apply_av_error(r->out_path, "pixel format conversion", err);
    if (fields) { /* pout's fields have their rows: the engines wrote them */
      if ((err = scale_fields(r->to_enc_f, r->penc, r->pout, r->out_path)))
        return err;
    } else if ((err = sws.sws_scale_frame(r->to_enc, r->penc, r->pout)) < 0)
      return apply_av_error(r->out_path, "pixel format conversion", err);
    dst = r->penc;
  }
  copy_field_flags(dst, fr);
  r->last_pts = pts;
  dst->pts = pts;
  dst->sample_aspect_ratio = turned_sar(
      r, cf_av->av_guess_sample_aspect_ratio(r->fmt, r->ist, fr));
  dst->pict_type = AV_PICTURE_TYPE_NONE;
  r->frames++;
  r->sent = dst;
  if ((err = cf_av->avcodec_send_frame(r->enc, dst)) < 0)
    return apply_av_error(r->out_path, "encoding failed", err);
  return write_packets(r);
}

static int decode_ready(vrun *r)
{
  for (unsigned damaged = 0;;) {
    int err = cf_av->avcodec_receive_frame(r->dec, r->frame);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF)
      return 0;
    /* a damaged frame (a PNG's broken zlib data): skipped, on to the
     * next packet; while the decoder is drained, on to the frames it
     * still holds (a damaged last packet of H.264 with B-frames lost the
     * two good frames delayed behind it), as long as it gives any */
    if (apply_damaged(err)) {
      r->corrupt++;
      if (!r->dec_ended || ++damaged > 64)
        return 0;
      continue;
    }
    if (err < 0)
      return apply_av_error(r->o->in_path, "decoding failed", err);
    int rc = filter_frame(r, r->frame);
    cf_av->av_frame_unref(r->frame);
    if (rc)
      return rc;
  }
}

static int pump(vrun *r)
{
  apply_progress_state p = {.on = !r->o->quiet && isatty(STDERR_FILENO),
                            .start = apply_now()};
  double total =
      r->fmt->duration > 0 ? (double)r->fmt->duration / AV_TIME_BASE : 0.0;
  int rc = 0, err;
  /* what open_input read ahead: the packets of other streams before the
   * first frame, then that frame */
  for (size_t i = 0; i < r->nheld && !rc; i++) {
    int si = r->held[i]->stream_index;
    if (si >= 0 && (unsigned)si < r->fmt->nb_streams && r->map[si] >= 0)
      rc = apply_copy_packet(r->fmt, r->oc, r->held[i], r->map[si],
                             &r->copied[si], r->out_path);
    cf_av->av_packet_unref(r->held[i]);
  }
  if (!rc && r->first) {
    rc = filter_frame(r, r->first);
    cf_av->av_frame_free(&r->first);
    if (!rc) /* frames the decoder has ready after it */
      rc = decode_ready(r);
  }
  while (!rc && !r->stopped) {
    if (vstopping(r)) {
      if (!r->h)
        return 130;
      r->stopped = true; /* the output ends with what was read */
      break;
    }
    err = cf_av->av_read_frame(r->fmt, r->pkt);
    if (err == AVERROR_EOF)
      break;
    if (err < 0 && vstopping(r) && r->h) {
      r->stopped = true;
      break;
    }
    if (err < 0)
      return vstopping(r)
                 ? 130
                 : apply_av_error(r->o->in_path, "reading failed", err);
    apply_discont_packet(&r->disc, r->fmt, r->pkt);
    int si = r->pkt->stream_index;
    if (si == r->vstream) {
      y4m_packet(r, r->pkt);
      err = cf_av->avcodec_send_packet(r->dec, r->pkt);
      if (apply_damaged(err))
        r->corrupt++; /* skipped, as ffmpeg does; told at the end */
      else if (err < 0)
        rc = apply_av_error(r->o->in_path, "decoding failed", err);
      else
        rc = decode_ready(r);
    } else if (si >= 0 && (unsigned)si < r->fmt->nb_streams &&
               r->map[si] >= 0) {
      rc = apply_copy_packet(r->fmt, r->oc, r->pkt, r->map[si],
                             &r->copied[si], r->out_path);
    }
    cf_av->av_packet_unref(r->pkt);
    if (r->frames > 0)
      apply_progress(&p, (double)r->last_pts * av_q2d(r->enc->time_base), total,
                     false);
  }
  if (rc)
    return rc;
  /* (sending may tell a damaged packet before it: the end is sent, once:
   * read_first may have) */
  if (!r->dec_ended) {
    if ((err = cf_av->avcodec_send_packet(r->dec, NULL)) < 0 &&
        !apply_damaged(err))
      return apply_av_error(r->o->in_path, "decoding failed", err);
    r->corrupt += err < 0;
    r->dec_ended = true;
  }
  if ((rc = decode_ready(r)))
    return rc;
  if ((err = cf_av->avcodec_send_frame(r->enc, NULL)) < 0)
    return apply_av_error(r->out_path, "encoding failed", err);
  if ((rc = write_packets(r)))
    return rc;
  if ((err = cf_av->av_write_trailer(r->oc)) < 0)
    return apply_av_error(r->out_path, "cannot finish", err);
  if (r->oc->pb && (err = cf_av->avio_closep(&r->oc->pb)) < 0)
    return apply_av_error(r->out_path, "cannot close", err);
  apply_progress(&p, (double)r->last_pts * av_q2d(r->enc->time_base), total,
                 true);
  return 0;
}

static void describe(const vrun *r, const cf_kernel2d *k)
{
  const apply_opts *o = r->o;
  fprintf(stderr, "cudafilter: %s: %s, %s, %dx%d %s\n", o->in_path,
          r->fmt->iformat->name, r->dec->codec->name, r->width, r->height,
          cf_av->av_get_pix_fmt_name(r->dec_fmt));
  if (o->v.preset_name)
    fprintf(stderr, "cudafilter: kernel: preset %s",
            cf_preset_name(o->v.preset));
  else
    fprintf(stderr, "cudafilter: kernel: %s", o->v.kernel_path);
  fprintf(stderr, ", %u x %u x %u (frames x rows x columns)\n",
          cf_kernel2d_frames(k), cf_kernel2d_height(k), cf_kernel2d_width(k));
  fprintf(stderr, "cudafilter: engine: %s\n", cf_engine_describe(r->e));
  fprintf(stderr, "cudafilter: filtering %s%s%s\n",
          cf_av->av_get_pix_fmt_name(r->proc),
          r->to_proc ? " (converted from " : "",
          r->to_proc ? cf_av->av_get_pix_fmt_name(r->dec_fmt) : "");
  fprintf(stderr, "cudafilter: %s: %s, %s (%s)\n", o->out_path,
          r->oc->oformat->name, r->enc->codec->name,
          cf_av->av_get_pix_fmt_name(r->enc->pix_fmt));
}

static void close_run(vrun *r)
{
  if (r->oc && r->oc->pb)
    cf_av->avio_closep(&r->oc->pb);
  cf_av->avformat_free_context(r->oc);
  cf_av->avcodec_free_context(&r->enc);
  cf_av->avcodec_free_context(&r->dec);
  apply_close_input(&r->fmt);
  cf_av->av_packet_free(&r->pkt);
  cf_av->av_packet_free(&r->opkt);
  cf_av->av_frame_free(&r->frame);
  cf_av->av_frame_free(&r->pin);
  cf_av->av_frame_free(&r->prot);
  cf_av->av_frame_free(&r->pout);
  cf_av->av_frame_free(&r->penc);
  cf_av->av_frame_free(&r->pstart);
  if (r->to_start)
    sws.sws_freeContext(r->to_start);
  if (r->to_proc)
    sws.sws_freeContext(r->to_proc);
  if (r->to_enc)
    sws.sws_freeContext(r->to_enc);
  for (int i = 0; i < 2; i++) {
    if (r->to_proc_f[i])
      sws.sws_freeContext(r->to_proc_f[i]);
    if (r->to_enc_f[i])
      sws.sws_freeContext(r->to_enc_f[i]);
    if (r->fe[i])
      cf_engine_free(r->fe[i]);
  }
  cf_av->av_frame_free(&r->pdec);
  cf_av->av_frame_free(&r->pfield);
  if (r->own_e)
    cf_engine_free(r->e);
  free(r->map);
  apply_copied_free(r->copied, r->ncopied);
  apply_discont_free(&r->disc);
  cf_av->av_frame_free(&r->first);
  for (size_t i = 0; i < r->nheld; i++)
    cf_av->av_packet_free(&r->held[i]);
  free(r->held);
}

int apply_vprobe(const char *path, unsigned *width, unsigned *height,
                 cf_pixel_format *fmt, double *seconds, const apply_vhooks *h)
{
  apply_opts o;
  memset(&o, 0, sizeof o);
  o.in_path = path;
  o.quiet = true;
  vrun r = {.o = &o, .h = h, .out_path = path, .vstream = -1};
  int rc = open_input(&r);
  if (!rc)
    rc = proc_format(&r, fmt);
  if (!rc) {
    *width = (unsigned)r.ow;
    *height = (unsigned)r.oh;
    *seconds =
        r.fmt->duration > 0 ? (double)r.fmt->duration / AV_TIME_BASE : 0.0;
  }
  close_run(&r);
  return rc;
}

int apply_video(const apply_opts *o, const char *tmp, const cf_kernel2d *k,
                apply_components_fn components, const apply_vhooks *h,
                apply_vresult *res)
{
  vrun r = {.o = o, .h = h, .out_path = o->out_path, .vstream = -1,
            .kind = -1, .k = k};
  cf_pixel_format cf = CF_PIX_GRAY8;
  cf_video_config cfg = o->vcfg;
  double t0 = apply_now();
  int rc;
  memset(res, 0, sizeof *res);
  if ((rc = open_input(&r)) || (rc = choose_proc(&r, &cf)))
    goto done;
  if ((r.turn || r.odd) && !o->quiet && !h)
    fprintf(stderr,
            r.turn ? "cudafilter: note: %s is shown %s: filtered and written "
                     "as shown, as ffmpeg turns it\n"
                   : "cudafilter: note: %s is shown %s: filtered as stored, "
                     "its display matrix kept\n",
            o->in_path, r.shown);
  cfg.width = (unsigned)r.ow;
  cfg.height = (unsigned)r.oh;
  cfg.format = cf;
  if (h && h->engine) { /* made for the input as it was probed */
    if (cfg.width != h->width || cfg.height != h->height ||
        cf != h->format) {
      rc = apply_error("%s is now %ux%u %s; the engine was made for %ux%u "
                       "%s (the input changed since it was probed)",
                       o->in_path, cfg.width, cfg.height,
                       cf_pixel_format_name(cf), h->width, h->height,
                       cf_pixel_format_name(h->format));
      goto done;
    }
    r.e = h->engine;
  } else {
    if (o->v.components && components &&
        (rc = components(o->v.components, cf, &cfg.components)))
      goto done;
    if (cf_engine_new_video(&cfg, k, &r.e) != CF_OK) {
      rc = apply_error("cannot create the engine: %s", cf_last_error());
      goto done;
    }
    r.own_e = true;
    r.fcfg = cfg; /* for the fields' engines (field_engines) */
  }
  if ((rc = history_black(&r, r.e)) || (rc = open_output(&r, tmp)))
    goto done;
  if (o->verbose)
    describe(&r, k);
  rc = pump(&r);
  /* image2 writes a picture as it comes: none, no file to rename */
  if (!rc && r.one_image && r.frames == 0)
    rc = apply_error("%s has no video frame: there is no picture to write "
                     "to %s",
                     o->in_path, o->out_path);
  /* cut short before its first whole frame: nothing to write (a cut
   * later: a warning, what there is written) */
  int pic = 0;
  int64_t cut = rc ? 0 : y4m_cut(&r, &pic);
  if (cut && !r.y4m_frames && !h)
    rc = apply_error("%s is cut short: it ends %lld byte%s into its first "
                     "frame, which takes %d (the FRAME line and %d of "
                     "picture); there is no whole frame, nothing written",
                     o->in_path, (long long)cut, apply_s(cut), pic + 6, pic);
  res->frames = r.frames - r.dropped + r.repeated;
  res->dropped = r.dropped;
  if (r.turn)
    snprintf(res->shown, sizeof res->shown, "%s", r.shown);
  res->width = (unsigned)r.ow;
  res->height = (unsigned)r.oh;
  res->stopped = r.stopped;
  res->corrupt = r.corrupt;
  res->cut_bytes = cut;
  res->cut_whole = r.y4m_frames;
  res->cut_pic = pic;
  snprintf(res->codec, sizeof res->codec, "%s",
           r.enc ? r.enc->codec->name : "?");
  if (rc || (rc = apply_commit(o, tmp)))
    goto done;
  if (r.corrupt && !h) /* cudafilterd says it in its own words */
    fprintf(stderr,
            "cudafilter: warning: %s: %u damaged packet(s) "
            "skipped\n",
            o->in_path, r.corrupt);
  /* empty (a YUV4MPEG2 header alone, not cut inside a frame): not an
   * error, as a file cut before its first whole frame is, but said, as
   * for an empty audio INPUT (image2 OUTPUT: an error above) */
  if (!h && !r.frames && !r.stopped && !cut)
    fprintf(stderr,
            "cudafilter: warning: %s holds no frame: %s is written empty\n",
            o->in_path, o->out_path);
  char said[2 * PATH_MAX + 200];
  if (!h && apply_y4m_cut_said(said, sizeof said, res, o->in_path,
                               o->out_path))
    fprintf(stderr, "cudafilter: warning: %s\n", said);
  if (!o->quiet || o->verbose) {
    double el = apply_now() - t0;
    char extra[96] = "";
    if (r.repeated && r.dropped)
      snprintf(extra, sizeof extra, " (%lld repeated, %lld more dropped)",
               (long long)r.repeated, (long long)r.dropped);
    else if (r.repeated || r.dropped)
      snprintf(extra, sizeof extra, " (%lld %s)",
               (long long)(r.repeated ? r.repeated : r.dropped),
               r.repeated ? "repeated" : "more dropped");
    fprintf(stderr,
            "cudafilter: wrote %s: %lld frames%s, %dx%d, %s (%s); "
            "%.1f frames/s on %s%s\n",
            o->out_path, (long long)(r.frames - r.dropped + r.repeated), extra,
            r.ow, r.oh,
            r.enc->codec->name, cf_av->av_get_pix_fmt_name(r.enc->pix_fmt),
            el > 0.0 ? (double)r.frames / el : 0.0, cf_engine_describe(r.e),
            !r.field_frames ? ""
            : r.field_frames < r.frames
                ? "; interlaced frames per field, progressive ones whole"
                : "; per field (interlaced)");
  }
done:
  close_run(&r);
  if (rc && tmp)
    unlink(tmp);
  return rc;
}
#endif
