/* `cudafilter apply`: the command line (the audio half is apply_audio.c,
 * the video half apply_video.c). Audio: filter an audio file into another.
 * Any input libav decodes (the first, or best, audio stream); any output
 * format and encoder libav writes. The output is time-aligned with the
 * input (the engine's latency is taken out), as long as the input or,
 * with --tail, as long as the full convolution. It is written under a
 * temporary name and renamed at the end, so a failed or interrupted run
 * leaves an existing OUTPUT as it was. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cudafilter/engine.h>
#include <cudafilter/error.h>
#include <cudafilter/kernel.h>

#ifdef CF_CLI_HAVE_LIBAV
#include "../io/av_lazy.h"
#include "apply.h"

#define interrupted apply_interrupted
/* Default FFT block (see apply_parse). */
enum { APPLY_BLOCK = 4096 };

static int components(const char *spec, cf_pixel_format fmt, unsigned *mask)
{
  return cli_video_components("apply", spec, fmt, mask);
}

static void on_signal(int sig)
{
  (void)sig;
  interrupted = 1;
}

static void usage_apply(FILE *f)
{
  fputs(
      "Usage: cudafilter apply --kernel FILE [OPTIONS] INPUT OUTPUT   (audio)\n"
      "       cudafilter apply (--kernel2d FILE | --preset NAME) [OPTIONS]\n"
      "                        INPUT OUTPUT                           (video)\n"
      "Filter a media file. INPUT is anything libav decodes; OUTPUT's format\n"
      "comes from its name (.wav, .flac, .mkv, .mp4, .y4m, ...) or --format.\n"
      "'-' is standard input or output (OUTPUT then needs --format).\n"
      "\n"
      "Audio (--kernel): INPUT's main audio stream is filtered (WAV, FLAC, "
      "MP3,\n"
      "Ogg, the sound of a video file, ...). The output starts with the input\n"
      "(the engine's latency is taken out) and is as long as the input; "
      "--tail\n"
      "adds the kernel's L-1 frames of tail. INPUT's other streams (a\n"
      "video's picture, other tracks, subtitles) are copied unchanged where\n"
      "OUTPUT's format holds them (a .wav of a film is its filtered sound);\n"
      "its tags (title, artist, a track's language; not the filtered\n"
      "sound's ReplayGain) and chapters too, and attachments (fonts).\n"
      "  -k, --kernel FILE    kernel file: .npy (1D shared, 2D per-channel,\n"
      "                       3D matrix), text (shared) or an audio file (an\n"
      "                       impulse response, resampled to INPUT's rate,\n"
      "                       its gain kept: not normalised, as afir's\n"
      "                       gtype=none)\n"
      "      --routing R      shared|per-channel|matrix: fail unless the "
      "kernel\n"
      "                       file has this routing; matrix also reads N\n"
      "                       per-channel kernels (a true-stereo WAV's four)\n"
      "                       as an N/C x C matrix, output-major (L<-L,\n"
      "                       L<-R, R<-L, R<-R; a stereo IR on mono: 2 x 1)\n"
      "      --gain DB        gain in dB applied to the kernel, -120..120\n"
      "                       (default 0)\n"
      "      --tail           also write the tail: the full convolution\n"
      "      --stream N       filter INPUT's stream N (from 0, as ffprobe\n"
      "                       counts), an audio one; default: the main one\n"
      "      --channel-layout L  OUTPUT's channel layout, a libav name (5.1,\n"
      "                       quad, 3.0, FL+FR+LFE) of as many channels as\n"
      "                       the kernel gives; default: INPUT's where the\n"
      "                       count stays, else libav's usual one for the\n"
      "                       count (a note names it)\n"
      "  -b, --block N        FFT block size in frames, 1..65536 (default\n"
      "                       4096; the latency it adds is taken out of the\n"
      "                       file)\n"
      "      --pipeline-depth D  blocks in flight, 0..8 (default 0): with\n"
      "                       CUDA the device filters them while the next\n"
      "                       are decoded (their latency is taken out too)\n"
      "      --algorithm A    auto|direct|fft-uniform|fft-nonuniform\n"
      "\n"
      "Video (--kernel2d or --preset): INPUT's main video stream is filtered\n"
      "frame by frame as 'cudafilter conv2d' filters raw frames; its other\n"
      "streams (sound, subtitles, other pictures), tags and chapters are\n"
      "copied unchanged, as in audio mode. A picture shown turned (a\n"
      "phone's) is turned upright first, as ffmpeg turns it.\n"
      "8-bit YUV (4:2:0, 4:2:2, 4:4:4, with or without alpha) is filtered\n"
      "as decoded, alpha copied. Pixel formats the engine does not take\n"
      "(10-bit, 4:1:1, ...) are converted to the nearest one it does (a\n"
      "note says what that costs), and the result back to the input's\n"
      "format where the encoder takes it. Interlaced video is filtered\n"
      "field by field (each field a picture of its own, a temporal kernel\n"
      "over the fields of its parity), as the cudaconvolve element does;\n"
      "progressive frames of the same stream whole; the output keeps the\n"
      "field order. An image OUTPUT\n"
      "(.png, .jpg, ...) holds one picture: INPUT must have one frame.\n"
      "      --kernel2d FILE  text or .npy, 2D (Kh x Kw) or 3D (T x Kh x Kw:\n"
      "                       temporal taps over the last T frames)\n"
      "  -p, --preset NAME    gaussian, box, sharpen, unsharp, sobel-x,\n"
      "                       sobel-y, laplacian or emboss\n"
      "      --size N, --sigma S   preset size and sigma (as in conv2d)\n"
      "      --border MODE    reflect (default), mirror, nearest, wrap,\n"
      "                       constant\n"
      "      --cval V, --scale S, --bias B, --absolute   as in conv2d\n"
      "      --components C   as conv2d's -c (long form only here): a mask\n"
      "                       (1 = R/Y, 2 = G/U, 4 = B/V) or names: all\n"
      "                       (default), luma, chroma, r,g,b or y,u,v, runs\n"
      "                       such as gb, uv\n"
      "      --algorithm A    auto|direct|separable|fft\n"
      "\n"
      "Both:\n"
      "  -c, --codec NAME     encoder, or codec for its default encoder\n"
      "                       (mp3: libmp3lame); default: the format's own;\n"
      "                       for WAV and AIFF the PCM codec of INPUT's\n"
      "                       sample format: 16-bit, 24-bit, 32-bit or\n"
      "                       float (the filtering is float32: 24 bits);\n"
      "                       a WAV past 4 GiB is RF64, an AIFF cannot\n"
      "                       pass 4 GiB (its sizes are 32-bit): refused\n"
      "                       or stopped there, exit 1\n"
      "  -f, --format NAME    output format, where the name does not tell it\n"
      "  -y, --overwrite      replace OUTPUT if it exists\n"
      "      --backend B      auto|cpu|cuda (default auto)\n"
      "      --threads N      worker threads, 0 = one per core (default 0)\n"
      "      --device ID      CUDA device (default 0)\n"
      "  -q, --quiet          no progress line, no summary, no notes: only\n"
      "                       warnings (clipping, damaged packets, INPUT\n"
      "                       cut short or empty) and errors, libav's too\n"
      "  -v, --verbose        describe the files and the engine (and show\n"
      "                       libav's notes)\n"
      "  -h, --help           show this help\n"
      "\n"
      "Integer audio outputs clip at full scale: the number of clipped "
      "samples\n"
      "and the peak are reported (lower --gain to avoid them). A float input\n"
      "with NaN or infinity is refused, naming the sample, as is an output\n"
      "sample past float's range (kernel and gain). OUTPUT is written\n"
      "under a temporary name and renamed when complete: a failed or\n"
      "interrupted run (SIGINT, SIGTERM, SIGHUP) leaves no partial file and\n"
      "an existing OUTPUT untouched.\n"
      "\n"
      "INPUT cut short (a copy or a recording stopped early) is filtered\n"
      "up to where it ends, with a warning that names it and says what its\n"
      "header states against what was there (WAV, W64, AIFF, CAF, FLAC, AU:\n"
      "their frames; YUV4MPEG2: its size, a partial last frame); cut before\n"
      "its first whole frame it is an error, nothing written. Formats that\n"
      "state no length (raw streams, Ogg) cannot tell it. INPUT '-' is\n"
      "checked too: from a pipe, its header against the bytes that came\n"
      "(a streaming WAV's unknown size, 0 or 0xFFFFFFFF, is not cut\n"
      "short); redirected from a file (< FILE), as FILE. INPUT that\n"
      "holds no frame and is whole (a WAV of 0 frames, a YUV4MPEG2 header\n"
      "alone) is no error: OUTPUT is written empty, with a warning; one of\n"
      "which no frame decodes though its container gives it a length (a\n"
      ".mka cut after its header) is an error.\n"
      "\n"
      "The kernel runs at INPUT's rate. Where the encoder cannot write that\n"
      "rate (libopus: 48, 24, 16, 12 or 8 kHz; MP3: 8 to 48 kHz), the\n"
      "filtered sound is resampled (libswresample) to the rate it takes\n"
      "closest to INPUT's, as ffmpeg chooses it; a note says so (not with\n"
      "-q), and clipping and the peak are measured on what is written.\n"
      "\n"
      "Exit status: 0 ok, 1 runtime error (the files, or an option they\n"
      "contradict: a --channel-layout or --routing the kernel does not fit,\n"
      "a --stream INPUT lacks), 2 usage error (the command line alone, said\n"
      "before anything is read: an option's value, a -f or -c that cannot\n"
      "be, a -f whose files cannot be renamed into place), 130 interrupted.\n",
      f);
}

static int apply_parse(int argc, char **argv, apply_opts *o)
{
  enum {
    OPT_ROUTING = 256,
    OPT_GAIN,
    OPT_TAIL,
    OPT_ALGORITHM,
    OPT_STREAM,
    OPT_DEPTH,
    OPT_LAYOUT
  };
  static const struct option longopts[] = {
      {"kernel", required_argument, NULL, 'k'},
      {"routing", required_argument, NULL, OPT_ROUTING},
      {"gain", required_argument, NULL, OPT_GAIN},
      {"tail", no_argument, NULL, OPT_TAIL},
      {"stream", required_argument, NULL, OPT_STREAM},
      {"codec", required_argument, NULL, 'c'},
      {"format", required_argument, NULL, 'f'},
      {"overwrite", no_argument, NULL, 'y'},
      {"block", required_argument, NULL, 'b'},
      {"algorithm", required_argument, NULL, OPT_ALGORITHM},
      {"pipeline-depth", required_argument, NULL, OPT_DEPTH},
      {"channel-layout", required_argument, NULL, OPT_LAYOUT},
      CLI_ENGINE_OPTIONS,
      {"kernel2d", required_argument, NULL, CLI_V_KERNEL},
      {"preset", required_argument, NULL, 'p'},
      {"size", required_argument, NULL, CLI_V_SIZE},
      {"sigma", required_argument, NULL, CLI_V_SIGMA},
      {"border", required_argument, NULL, CLI_V_BORDER},
      {"cval", required_argument, NULL, CLI_V_CVAL},
      {"scale", required_argument, NULL, CLI_V_SCALE},
      {"bias", required_argument, NULL, CLI_V_BIAS},
      {"absolute", no_argument, NULL, CLI_V_ABSOLUTE},
      {"components", required_argument, NULL, CLI_V_COMPONENTS},
      {"quiet", no_argument, NULL, 'q'},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  unsigned long v;
  int c, rc;
  const char *algorithm = NULL;
  bool audio_only = false; /* an audio option was given */

  memset(o, 0, sizeof *o);
  o->stream = -1;
  cf_audio_config_init(&o->cfg);
  cf_video_config_init(&o->vcfg);
  /* The latency is taken out of a file, so the FFT paths may use larger
   * blocks than live use would: 4096 is 17% faster than 1024 for a 1.5 s
   * stereo IR (bench/run-apply). */
  o->cfg.block_size = APPLY_BLOCK;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":k:p:c:f:yb:qvh", longopts, NULL)) !=
         -1) {
    if (c == OPT_ROUTING || c == OPT_GAIN || c == OPT_TAIL || c == 'b' ||
        c == OPT_STREAM || c == OPT_DEPTH || c == OPT_LAYOUT)
      audio_only = true;
    switch (c) {
    case 'p':
    case CLI_V_KERNEL:
    case CLI_V_SIZE:
    case CLI_V_SIGMA:
    case CLI_V_BORDER:
    case CLI_V_CVAL:
    case CLI_V_SCALE:
    case CLI_V_BIAS:
    case CLI_V_ABSOLUTE:
    case CLI_V_COMPONENTS:
      rc = cli_video_option("apply", c == 'p' ? CLI_V_PRESET : c, optarg, &o->v,
                            &o->vcfg);
      if (rc)
        return rc;
      break;
    case 'k': o->kernel_path = optarg; break;
    case OPT_ROUTING:
      if (cf_routing_from_string(optarg, &o->routing) != CF_OK)
        return cli_usage_error("apply",
                               "--routing: '%s' is not shared, "
                               "per-channel or matrix",
                               optarg);
      o->have_routing = true;
      break;
    case OPT_GAIN:
      if (!cli_parse_double("apply", "--gain", optarg, -CF_GAIN_DB_MAX,
                            CF_GAIN_DB_MAX,
                            &o->gain_db))
        return CLI_EXIT_USAGE;
      break;
    case OPT_TAIL: o->tail = true; break;
    case OPT_STREAM:
      if (!cli_parse_uint("apply", "--stream", optarg, 0, 1023, &v))
        return CLI_EXIT_USAGE;
      o->stream = (int)v;
      break;
    case OPT_LAYOUT: o->channel_layout = optarg; break;
    case 'c': o->codec = optarg; break;
    case 'f': o->format = optarg; break;
    case 'y': o->overwrite = true; break;
    case 'b':
      if (!cli_parse_uint("apply", "--block", optarg, 1, CF_AUDIO_MAX_BLOCK, &v))
        return CLI_EXIT_USAGE;
      o->cfg.block_size = (unsigned)v;
      break;
    case CLI_E_BACKEND:
    case CLI_E_THREADS:
    case CLI_E_DEVICE:
      if ((rc = cli_engine_option("apply", c, optarg, &o->cfg.backend,
                                  &o->cfg.threads, &o->cfg.device_id)))
        return rc;
      break;
    case OPT_ALGORITHM: algorithm = optarg; break;
    case OPT_DEPTH:
      if (!cli_parse_uint("apply", "--pipeline-depth", optarg, 0,
                          CF_AUDIO_MAX_DEPTH, &v))
        return CLI_EXIT_USAGE;
      o->cfg.pipeline_depth = (unsigned)v;
      break;
    case 'q': o->quiet = true; break;
    case 'v': o->verbose = true; break;
    case 'h': usage_apply(stdout); exit(0);
    default: return cli_bad_option("apply", c, argv);
    }
  }
  o->video = o->v.kernel_path || o->v.preset_name;
  if (o->video && o->kernel_path)
    return cli_usage_error("apply", "filter the audio (--kernel) or the "
                                    "video (--kernel2d, --preset), not both");
  if (!o->video && !o->kernel_path)
    return cli_usage_error("apply", "missing --kernel FILE (audio) or "
                                    "--kernel2d FILE / --preset NAME (video)");
  if (o->video && audio_only)
    return cli_usage_error("apply",
                           "--routing, --gain, --tail, --block, "
                           "--pipeline-depth, --stream and --channel-layout "
                           "apply to audio (--kernel)");
  if ((rc = cli_video_check("apply", &o->v)))
    return rc;
  if (!o->video &&
      (o->v.components || o->vcfg.absolute || o->vcfg.scale != 1.0f ||
       o->vcfg.bias != 0.0f || o->vcfg.cval != 0.0f ||
       o->vcfg.border != CF_BORDER_REFLECT))
    return cli_usage_error("apply",
                           "--border, --cval, --scale, --bias, "
                           "--absolute and --components apply to video "
                           "(--kernel2d, --preset)");
  if (algorithm && !o->video &&
      cf_algorithm_from_string(algorithm, &o->cfg.algorithm) != CF_OK)
    return cli_usage_error("apply",
                           "--algorithm: '%s' is not auto, direct, "
                           "fft-uniform or fft-nonuniform (audio)",
                           algorithm);
  if (algorithm && o->video &&
      (rc = cli_video_option("apply", CLI_V_ALGORITHM, algorithm, &o->v,
                             &o->vcfg)))
    return rc;
  o->vcfg.backend = o->cfg.backend;
  o->vcfg.threads = o->cfg.threads;
  o->vcfg.device_id = o->cfg.device_id;
  if (argc - optind < 2)
    return cli_usage_error("apply", "missing %s",
                           argc - optind == 0 ? "INPUT and OUTPUT" : "OUTPUT");
  if (argc - optind > 2)
    return cli_usage_error("apply", "unexpected argument '%s'",
                           argv[optind + 2]);
  /* "-" is standard input or output, as ffmpeg takes it (to libav it is
   * a file of that name) */
  o->in_path = strcmp(argv[optind], "-") ? argv[optind] : "pipe:0";
  /* `apply - OUT < FILE`: FILE's size and header tell whether it is cut
   * short, as a named one's (libav reads it as a pipe, whose size it
   * does not know); where reading begins, before libav reads */
  struct stat sb;
  if (!strcmp(argv[optind], "-") && fstat(STDIN_FILENO, &sb) == 0 &&
      S_ISREG(sb.st_mode)) {
    off_t at = lseek(STDIN_FILENO, 0, SEEK_CUR);
    o->stdin_file = at >= 0;
    o->stdin_at = at >= 0 ? (int64_t)at : 0;
  }
  o->out_path = strcmp(argv[optind + 1], "-") ? argv[optind + 1] : "pipe:1";
  return 0;
}

/* A float PCM codec OUTPUT's format holds (WAV: pcm_f32le, AIFF:
 * pcm_f32be), as -c would take it, or NULL (FLAC, MP2): the clipping
 * warning's advice (it said -c pcm_f32le to every format, QA). */
static const char *float_codec(const apply_opts *o)
{
  static const char *const pcm[] = {"pcm_f32le", "pcm_f32be"};
  for (size_t i = 0; i < sizeof pcm / sizeof *pcm; i++) {
    apply_opts t = *o;
    char msg[512];
    t.codec = pcm[i];
    t.verbose = false;
    apply_capture(msg, sizeof msg);
    int rc = apply_check_output(&t, false);
    apply_capture(NULL, 0);
    if (!rc)
      return pcm[i];
  }
  return NULL;
}

int cli_apply(int argc, char **argv)
{
  apply_opts opt;
  apply_result res;
  char *tmp = NULL;
  const char *why = NULL;
  int rc = apply_parse(argc, argv, &opt);
  if (rc)
    return rc;
  if (!cf_av_get(&why))
    return cli_error("apply needs libav: %s", why);
  AVChannelLayout named = {0};
  if (opt.channel_layout) {
    int bad =
        cf_av->av_channel_layout_from_string(&named, opt.channel_layout) < 0;
    cf_av->av_channel_layout_uninit(&named);
    if (bad)
      return cli_usage_error("apply",
                             "--channel-layout: '%s' is no channel layout "
                             "libav knows (5.1, quad, 3.0, FL+FR+LFE, ...)",
                             opt.channel_layout);
  }
  /* libav's own notes (encoder settings, statistics) only with -v. */
  cf_av->av_log_set_level(opt.quiet     ? AV_LOG_ERROR
                          : opt.verbose ? AV_LOG_INFO
                                        : AV_LOG_WARNING);
  /* --format and --codec checked before any work: bad values are usage
   * errors */
  char msg[512];
  apply_capture(msg, sizeof msg);
  rc = apply_check_output(&opt, opt.video);
  apply_capture(NULL, 0);
  if (rc == CLI_EXIT_USAGE)
    return cli_usage_error("apply", "%s", msg);
  if (rc)
    return cli_error("%s", msg);
  if ((rc = apply_choose_target(&opt, &tmp)))
    return rc;
  /* No SA_RESTART: a blocked open or read returns, and the run ends
   * cleanly (the temporary file removed). SIGHUP too: a closed terminal
   * or ssh session. */
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  double t0 = cli_now();
  if (opt.video) {
    cf_kernel2d *k = NULL;
    apply_vresult vres;
    rc = cli_video_kernel("apply", &opt.v, &k);
    if (!rc)
      rc = apply_video(&opt, tmp, k, components, NULL, &vres);
    cf_kernel2d_free(k);
  } else {
    rc = apply_audio(&opt, tmp, NULL, &res);
  }
  if (!rc && !opt.video) {
    if (res.corrupt)
      fprintf(stderr,
              "cudafilter: warning: %s: %u damaged packet(s) "
              "skipped\n",
              opt.in_path, res.corrupt);
    /* empty, and said so by its header (a WAV's data chunk of 0 bytes):
     * not an error, as a file cut before its first frame is, but said
     * (with -q too), as ffmpeg says "Output file is empty" */
    if (res.frames_in == 0 && res.frames_out == 0 && !res.stopped)
      fprintf(stderr,
              "cudafilter: warning: %s holds no frame: %s is written "
              "empty\n",
              opt.in_path, opt.out_path);
    char said[2 * PATH_MAX + 200];
    if (apply_cut_short_said(said, sizeof said, &res, opt.in_path,
                             opt.out_path))
      fprintf(stderr, "cudafilter: warning: %s\n", said);
    if (res.clipped) {
      const char *fc = float_codec(&opt);
      fprintf(stderr,
              "cudafilter: warning: %llu sample(s) clipped (peak "
              "%+.2f dBFS); lower --gain by %.1f dB%s%s%s\n",
              (unsigned long long)res.clipped, 20.0 * log10(res.peak),
              ceil(20.0 * log10(res.peak) * 10) / 10,
              fc ? " or write float (-c " : "", fc ? fc : "", fc ? ")" : "");
    }
    if (!opt.quiet || opt.verbose) {
      double secs = (double)res.frames_out / res.rate, el = cli_now() - t0;
      char from[48] = "";
      if (res.in_rate != res.rate)
        snprintf(from, sizeof from, " (resampled from %u Hz)", res.in_rate);
      fprintf(stderr,
              "cudafilter: wrote %s: %lld frames (%.2f s), %u "
              "channel%s, %u Hz%s, %s, peak %+.2f dBFS; %.1fx real time on "
              "%s\n",
              opt.out_path, (long long)res.frames_out, secs, res.out_channels,
              res.out_channels == 1 ? "" : "s", res.rate, from, res.codec,
              res.peak > 0.0 ? 20.0 * log10(res.peak) : -INFINITY,
              el > 0.0 ? secs / el : 0.0, res.engine);
    }
  }
  if (rc && tmp)
    unlink(tmp);
  if (rc && interrupted) {
    rc = 130;
    /* a FIFO, a device or a URL is written in place: it holds what was
     * written ("not written", QA) */
    fprintf(stderr, "cudafilter: interrupted; %s %s\n", opt.out_path,
            tmp ? "not written" : "incomplete");
  }
  free(tmp);
  return rc;
}

#else /* !CF_CLI_HAVE_LIBAV */

int cli_apply(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  return cli_error("apply: this build has no libav (files cannot be read "
                   "or written); use 'cudafilter fir' with raw float32");
}

#endif
