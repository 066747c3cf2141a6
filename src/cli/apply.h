/* `cudafilter apply`: what the audio (apply.c) and video (apply_video.c)
 * halves share. Only built with libav. */
#ifndef CF_CLI_APPLY_H
#define CF_CLI_APPLY_H

#include <signal.h>
#include <stdbool.h>

#include <cudafilter/engine.h>
#include <cudafilter/video.h>

#include "../io/av_lazy.h"
#include "cli.h"

typedef struct apply_opts {
  const char *kernel_path, *in_path, *out_path;
  const char *codec, *format;
  bool have_routing;
  cf_routing routing;
  double gain_db;
  cf_audio_config cfg;
  bool tail, overwrite, quiet, verbose;
  /* video: --kernel2d or --preset given */
  bool video;
  cli_video_opts v;
  cf_video_config vcfg;
} apply_opts;

/* Set by SIGINT/SIGTERM; libav's blocking calls end through
 * apply_check_interrupt (an AVIOInterruptCB callback). */
extern volatile sig_atomic_t apply_interrupted;
int apply_check_interrupt(void *opaque);

/* "cudafilter: PATH: WHAT: libav's message"; returns CLI_EXIT_RUNTIME. */
int apply_av_error(const char *path, const char *what, int err);

/* The temporary name OUTPUT is written under (*tmp NULL: OUTPUT itself);
 * refuses an existing OUTPUT without -y, and OUTPUT == INPUT. */
int apply_choose_target(const apply_opts *o, char **tmp);

/* OUTPUT's muxer, from --format or OUTPUT's name. */
int apply_muxer(const apply_opts *o, AVFormatContext **oc);
/* The encoder: --codec (of the right type), else `id` (the format's own,
 * or what the caller makes of it); clear errors where there is none. */
int apply_encoder(const apply_opts *o, const AVFormatContext *oc,
                  enum AVMediaType type, enum AVCodecID id,
                  const AVCodec **out);
/* Open the temporary file (or OUTPUT) and write the header. */
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

/* The video half: filter INPUT's main video stream, copy its audio. */
int apply_video(const apply_opts *o, const char *tmp);

#endif
