/* Media files for the tests, written with libav (avmake.c): what no file
 * of ours is written by hand. Failures end the test (cmocka). */
#ifndef CF_TESTS_AVMAKE_H
#define CF_TESTS_AVMAKE_H

#include <stddef.h>
#include <stdint.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

/* An output of `format` at path; streams are added, then avmake_begin. */
AVFormatContext *avmake_new(const char *path, const char *format);
/* A GRAY8 rawvideo stream of w x h (tagged Y800, as Matroska wants it). */
AVStream *avmake_gray(AVFormatContext *oc, int w, int h, AVRational tb);
/* A 16-bit mono PCM stream at rate. */
AVStream *avmake_pcm(AVFormatContext *oc, int rate, AVRational tb);
/* A chapter from start to end (ms), titled where title is not NULL. */
void avmake_chapter(AVFormatContext *oc, int id, int64_t start, int64_t end,
                    const char *title);
/* Opens the file and writes the header. */
void avmake_begin(AVFormatContext *oc);
/* A key packet of data[0..n) on st at pts for dur, both in tb. */
void avmake_put(AVFormatContext *oc, const AVStream *st, const void *data,
                size_t n, int64_t pts, int64_t dur, AVRational tb);
/* Writes the trailer, closes the file, frees oc. */
void avmake_end(AVFormatContext *oc);
/* Sends fr to enc (NULL flushes) and writes every packet that comes out
 * on st. */
void avmake_encode_frame(AVCodecContext *enc, const AVFrame *fr,
                         AVFormatContext *oc, AVStream *st);

/* channels x[c][0..n) at rate, encoded with `encoder` (libav's name:
 * "aac", "libmp3lame", "libopus", "flac", ...) at 64 kb/s a channel from
 * float samples (16-bit ones, rounded, where it takes no float); the container from path's extension; the codec's priming
 * and padding as libav writes them (an MP4's edit list, a LAME header,
 * Opus's pre-skip; none in ADTS or Matroska for AAC). The last frame of
 * a fixed-size codec is padded with zeros. */
void avmake_encoded(const char *path, const char *encoder, int rate,
                    int channels, float *const *x, size_t n);

/* GRAY8 frames (rawvideo) in Matroska at times pts[] (ms), said to be at
 * fps (its DefaultDuration); frame i's pixels all (i * 37) % 256. */
void frames_at(const char *path, unsigned w, unsigned h, unsigned nf, int fps,
               const int64_t *pts);

#endif
