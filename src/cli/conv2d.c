/* `cudafilter conv2d`: stream 2D (and temporal) convolution of raw video
 * frames from stdin to stdout. Each frame is written as soon as it has
 * been read whole and filtered, so the command works inside a live pipe. */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The headers one by one: in the build tree version.h is generated into
 * <builddir>/include/cudafilter, which cudafilter.h's "version.h" misses. */
#include <cudafilter/engine.h>
#include <cudafilter/error.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/video.h>

#define PROG "cudafilter"
#define CMD "conv2d"

static void usage_conv2d(FILE *f)
{
  fputs(
    "Usage: " PROG " conv2d (--kernel FILE | --preset NAME) --width W\n"
    "         --height H --format FMT [OPTIONS] < in > out\n"
    "Filter raw video frames from stdin to stdout with a 2D (or temporal 3D)\n"
    "kernel, as scipy.ndimage.convolve does. Frames are tightly packed rows,\n"
    "the planes of I420, NV12, Y444 and Y42B one after another (as in a raw\n"
    ".yuv file). Each frame is written as soon as it is complete.\n"
    "\n"
    "  -k, --kernel FILE    kernel file: text (one row per line; a blank line\n"
    "                       separates temporal taps) or .npy, 2D (Kh x Kw) or\n"
    "                       3D (T x Kh x Kw, tau = 0 the current frame)\n"
    "  -p, --preset NAME    gaussian, box, sharpen, unsharp, sobel-x,\n"
    "                       sobel-y, laplacian or emboss\n"
    "      --size N         preset size N x N, 0..4096 (gaussian, box,\n"
    "                       unsharp; 0 or absent: 5, 3 and 5)\n"
    "      --sigma S        preset sigma, 0..1000000 (gaussian, unsharp;\n"
    "                       0 or absent: 0.3 * ((N - 1) / 2 - 1) + 0.8, as\n"
    "                       OpenCV)\n"
    "  -W, --width W        frame width in pixels\n"
    "  -H, --height H       frame height in pixels\n"
    "  -f, --format FMT     GRAY8, GRAY16_LE, GRAY32F, RGBA, BGRA, RGBx,\n"
    "                       BGRx, RGB, BGR, I420, NV12, Y444 or Y42B\n"
    "      --border MODE    reflect (default), mirror, nearest, wrap or\n"
    "                       constant\n"
    "      --cval V         value outside the frame for --border constant\n"
    "                       (in sample units, e.g. 0..255 for 8-bit\n"
    "                       formats; default 0)\n"
    "      --scale S        multiply the convolution by S (default 1)\n"
    "      --bias B         then add B (default 0)\n"
    "      --absolute       then take the absolute value\n"
    "      --range R        limited (default) or full: the YUV frames'\n"
    "                       sample range, for the black frames a temporal\n"
    "                       kernel reads before the first (Y 16 or 0, U and\n"
    "                       V 128; RGB and gray: zeros either way)\n"
    "  -c, --components C   what to filter: a mask (1 = R/Y, 2 = G/U,\n"
    "                       4 = B/V) or names: all, luma, chroma, r,g,b or\n"
    "                       y,u,v, or runs such as gb, uv (default all; the\n"
    "                       rest, and alpha, pass through unchanged)\n"
    "      --algorithm A    auto|direct|separable|fft (default auto)\n"
    "      --threads N      worker threads, 0 = one per core (default 0)\n"
    "      --backend B      auto|cpu|cuda (default auto)\n"
    "      --device ID      CUDA device (default 0)\n"
    "  -v, --verbose        describe the kernel and the engine on stderr\n"
    "  -h, --help           show this help\n"
    "\n"
    "Integer formats round to nearest and saturate. Input that ends inside a\n"
    "frame is an error (after every whole frame has been written).\n"
    "\n"
    "Exit status: 0 ok, 1 runtime error, 2 usage error.\n",
    f);
}

typedef struct conv2d_opts {
  cli_video_opts v;
  bool have_width, have_height, have_format;
  cf_video_config cfg;
  bool verbose;
  bool full_range; /* --range full */
} conv2d_opts;

int cli_video_components(const char *cmd, const char *s,
                         cf_pixel_format fmt, unsigned *out)
{
  if (cf_components_from_string(s, fmt, out) != CF_OK)
    return cli_usage_error(cmd, "--%s", cf_last_error());
  return 0;
}

int cli_video_option(const char *cmd, int c, const char *arg,
                     cli_video_opts *o, cf_video_config *cfg)
{
  double d;
  switch (c) {
  case CLI_V_KERNEL: o->kernel_path = arg; return 0;
  case CLI_V_PRESET:
    if (cf_preset_from_string(arg, &o->preset) != CF_OK)
      return cli_usage_error(cmd, "--preset: '%s' is not gaussian, box, "
                             "sharpen, unsharp, sobel-x, sobel-y, "
                             "laplacian or emboss", arg);
    o->preset_name = arg;
    return 0;
  case CLI_V_SIZE:
    /* 0: the preset's default, as for cudaconvolve and the daemon (QA:
     * refused, where sharpen's refusal says "pass 0 or 3") */
    if (!cli_parse_uint(cmd, "--size", arg, 0, CF_KERNEL2D_MAX_SIDE,
                        &o->size))
      return CLI_EXIT_USAGE;
    o->have_size = true;
    return 0;
  case CLI_V_SIGMA:
    /* 0: the preset's default, as cudaconvolve's sigma and the daemon's
     * take it (QA: refused, "must be greater than 0") */
    if (!cli_parse_double(cmd, "--sigma", arg, 0.0, 1e6, &o->sigma))
      return CLI_EXIT_USAGE;
    o->have_sigma = true;
    return 0;
  case CLI_V_BORDER:
    if (cf_border_from_string(arg, &cfg->border) != CF_OK)
      return cli_usage_error(cmd, "--border: '%s' is not reflect, mirror, "
                             "nearest, wrap or constant", arg);
    o->border_constant = cfg->border == CF_BORDER_CONSTANT;
    return 0;
  case CLI_V_CVAL:
  case CLI_V_SCALE:
  case CLI_V_BIAS:
    if (!cli_parse_double(cmd, c == CLI_V_CVAL    ? "--cval"
                               : c == CLI_V_SCALE ? "--scale"
                                                  : "--bias",
                          arg, -FLT_MAX, FLT_MAX, &d))
      return CLI_EXIT_USAGE;
    if (c == CLI_V_CVAL) {
      cfg->cval = (float)d;
      o->have_cval = true;
    }
    else if (c == CLI_V_SCALE)
      cfg->scale = (float)d;
    else
      cfg->bias = (float)d;
    return 0;
  case CLI_V_ABSOLUTE: cfg->absolute = 1; return 0;
  case CLI_V_COMPONENTS: o->components = arg; return 0;
  case CLI_V_ALGORITHM:
    if (cf_algorithm2d_from_string(arg, &cfg->algorithm) != CF_OK)
      return cli_usage_error(cmd, "--algorithm: '%s' is not auto, direct, "
                             "separable or fft", arg);
    return 0;
  default: return cli_usage_error(cmd, "internal: option %d", c);
  }
}

int cli_video_check(const char *cmd, const cli_video_opts *o)
{
  if (o->kernel_path && o->preset_name)
    return cli_usage_error(cmd, "give either a kernel file or --preset, "
                           "not both");
  if (o->kernel_path && (o->have_size || o->have_sigma))
    return cli_usage_error(cmd, "%s only applies to --preset",
                           o->have_size ? "--size" : "--sigma");
  if (!o->preset_name && (o->have_size || o->have_sigma))
    return cli_usage_error(cmd, "%s needs --preset",
                           o->have_size ? "--size" : "--sigma");
  /* taken and ignored otherwise, while --size without --preset is
   * refused (QA) */
  if (o->have_cval && !o->border_constant)
    return cli_usage_error(cmd, "--cval only applies to --border constant");
  return 0;
}

/* Parse conv2d's options into o; returns 0 or an exit status. */
static int conv2d_parse(int argc, char **argv, conv2d_opts *o)
{
  static const struct option longopts[] = {
    {"kernel", required_argument, NULL, 'k'},
    {"preset", required_argument, NULL, 'p'},
    {"size", required_argument, NULL, CLI_V_SIZE},
    {"sigma", required_argument, NULL, CLI_V_SIGMA},
    {"width", required_argument, NULL, 'W'},
    {"height", required_argument, NULL, 'H'},
    {"format", required_argument, NULL, 'f'},
    {"border", required_argument, NULL, CLI_V_BORDER},
    {"cval", required_argument, NULL, CLI_V_CVAL},
    {"scale", required_argument, NULL, CLI_V_SCALE},
    {"bias", required_argument, NULL, CLI_V_BIAS},
    {"absolute", no_argument, NULL, CLI_V_ABSOLUTE},
    {"components", required_argument, NULL, 'c'},
    {"algorithm", required_argument, NULL, CLI_V_ALGORITHM},
    {"range", required_argument, NULL, 'R'},
    CLI_ENGINE_OPTIONS,
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  unsigned long v;
  int c, rc;

  memset(o, 0, sizeof *o);
  cf_video_config_init(&o->cfg);
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":k:p:W:H:f:c:vh", longopts, NULL)) !=
         -1) {
    switch (c) {
    case 'k':
    case 'p':
    case 'c':
    case CLI_V_SIZE:
    case CLI_V_SIGMA:
    case CLI_V_BORDER:
    case CLI_V_CVAL:
    case CLI_V_SCALE:
    case CLI_V_BIAS:
    case CLI_V_ABSOLUTE:
    case CLI_V_ALGORITHM:
      rc = cli_video_option(CMD, c == 'k' ? CLI_V_KERNEL : c == 'p'
                            ? CLI_V_PRESET : c == 'c' ? CLI_V_COMPONENTS : c,
                            optarg, &o->v, &o->cfg);
      if (rc)
        return rc;
      break;
    case 'W':
    case 'H':
      if (!cli_parse_uint(CMD, c == 'W' ? "--width" : "--height", optarg, 1,
                          CF_VIDEO_MAX_SIDE, &v))
        return CLI_EXIT_USAGE;
      if (c == 'W') {
        o->cfg.width = (unsigned)v;
        o->have_width = true;
      } else {
        o->cfg.height = (unsigned)v;
        o->have_height = true;
      }
      break;
    case 'f':
      if (cf_pixel_format_from_string(optarg, &o->cfg.format) != CF_OK)
        return cli_usage_error(CMD, "--format: '%s' is not GRAY8, GRAY16_LE, "
                               "GRAY32F, RGBA, BGRA, RGBx, BGRx, RGB, BGR, "
                               "I420, NV12, Y444 or Y42B", optarg);
      o->have_format = true;
      break;
    case CLI_E_BACKEND:
    case CLI_E_THREADS:
    case CLI_E_DEVICE:
      if ((rc = cli_engine_option(CMD, c, optarg, &o->cfg.backend,
                                  &o->cfg.threads, &o->cfg.device_id)))
        return rc;
      break;
    case 'R':
      if (!strcasecmp(optarg, "full"))
        o->full_range = true;
      else if (!strcasecmp(optarg, "limited"))
        o->full_range = false;
      else
        return cli_usage_error(CMD, "--range: '%s' is not limited or full",
                               optarg);
      break;
    case 'v': o->verbose = true; break;
    case 'h': usage_conv2d(stdout); exit(0);
    default: return cli_bad_option(CMD, c, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error(CMD, "unexpected argument '%s' (frames are read "
                           "from stdin)", argv[optind]);
  if ((rc = cli_video_check(CMD, &o->v)))
    return rc;
  if (!o->v.kernel_path && !o->v.preset_name)
    return cli_usage_error(CMD, "missing --kernel FILE or --preset NAME");
  if (!o->have_width)
    return cli_usage_error(CMD, "missing --width W");
  if (!o->have_height)
    return cli_usage_error(CMD, "missing --height H");
  if (!o->have_format)
    return cli_usage_error(CMD, "missing --format FMT");
  if (o->v.components &&
      (rc = cli_video_components(CMD, o->v.components, o->cfg.format,
                                 &o->cfg.components)))
    return rc;
  return 0;
}

int cli_video_kernel(const char *cmd, const cli_video_opts *o,
                     cf_kernel2d **k)
{
  if (o->preset_name) {
    cf_status s = cf_kernel2d_preset(o->preset, (unsigned)o->size,
                                     o->have_sigma ? o->sigma : 0.0, k);
    if (s == CF_OK)
      return 0;
    /* A size or sigma the preset refuses is the user's choice. */
    if (s == CF_E_INVALID)
      return cli_usage_error(cmd, "--preset %s: %s",
                             cf_preset_name(o->preset), cf_last_error());
    return cli_error("preset %s: %s", cf_preset_name(o->preset),
                     cf_last_error());
  }
  if (cf_kernel2d_load(o->kernel_path, k) != CF_OK) {
    /* The loader's messages usually name the file already. */
    const char *why = cf_last_error();
    if (strstr(why, o->kernel_path))
      return cli_error("cannot load kernel: %s", why);
    return cli_error("cannot load kernel %s: %s", o->kernel_path, why);
  }
  return 0;
}

/* Read until buf holds len bytes or input ends; *got says how many came.
 * Returns 0, or -1 with errno set. */
static int read_full(int fd, unsigned char *buf, size_t len, size_t *got)
{
  size_t have = 0;
  while (have < len) {
    ssize_t n = read(fd, buf + have, len - have);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      *got = have;
      return -1;
    }
    if (n == 0)
      break;
    have += (size_t)n;
  }
  *got = have;
  return 0;
}

/* Pump frames from stdin through the engine to stdout until end of input. */
static int conv2d_stream(cf_engine *e, const cf_video_config *cfg,
                         size_t frame_bytes, bool verbose)
{
  unsigned char *in = malloc(frame_bytes), *out = malloc(frame_bytes);
  cf_frame fin, fout;
  unsigned long long frames = 0;
  bool told = false;
  int rc = 0;

  if (!in || !out) {
    rc = cli_error("out of memory for two frames of %zu bytes", frame_bytes);
    goto done;
  }
  cf_frame_layout(cfg->format, cfg->width, cfg->height, in, &fin);
  cf_frame_layout(cfg->format, cfg->width, cfg->height, out, &fout);
  for (;;) {
    size_t got;
    if (read_full(STDIN_FILENO, in, frame_bytes, &got)) {
      rc = cli_error("reading stdin: %s", strerror(errno));
      goto done;
    }
    if (got == 0)
      break;
    if (got < frame_bytes) {
      rc = cli_error("input ended inside frame %llu: %zu bytes left over "
                     "(a %ux%u %s frame is %zu bytes)", frames + 1, got,
                     cfg->width, cfg->height,
                     cf_pixel_format_name(cfg->format), frame_bytes);
      goto done;
    }
    cf_status st = cf_engine_process_frame(e, &fin, &fout);
    cli_note_fallback(e, &told);
    if (st != CF_OK) {
      rc = cli_error("frame %llu: processing failed: %s", frames + 1,
                     cf_last_error());
      goto done;
    }
    /* Unbuffered: the frame leaves at once (no stdio buffer to flush). */
    if (cli_write_all(STDOUT_FILENO, out, frame_bytes)) {
      /* The reader went away (head, a closed pipe): end quietly. */
      rc = errno == EPIPE ? CLI_EXIT_RUNTIME
                          : cli_error("writing to stdout: %s",
                                      strerror(errno));
      goto done;
    }
    frames++;
  }
  if (verbose)
    fprintf(stderr, PROG ": %llu frames\n", frames);
done:
  free(in);
  free(out);
  return rc;
}

int cli_conv2d(int argc, char **argv)
{
  conv2d_opts o;
  cf_kernel2d *k = NULL;
  cf_engine *e = NULL;
  int rc = conv2d_parse(argc, argv, &o);
  if (rc)
    return rc;
  if ((rc = cli_video_kernel(CMD, &o.v, &k)))
    return rc;

  size_t frame_bytes = cf_frame_layout(o.cfg.format, o.cfg.width,
                                       o.cfg.height, NULL, NULL);
  /* raw frames: the frames before the first are black, of --range (a
   * .yuv file says no range; limited, video's, unless told) */
  if (cf_engine_new_video(&o.cfg, k, &e) != CF_OK ||
      cf_engine_set_history_black(e, o.full_range) != CF_OK) {
    rc = cli_error("cannot create the engine: %s", cf_last_error());
    goto done;
  }
  if (o.verbose) {
    if (o.v.preset_name)
      fprintf(stderr, PROG ": kernel: preset %s",
              cf_preset_name(o.v.preset));
    else
      fprintf(stderr, PROG ": kernel: %s", o.v.kernel_path);
    fprintf(stderr, ", %u x %u x %u (frames x rows x columns)\n",
            cf_kernel2d_frames(k), cf_kernel2d_height(k),
            cf_kernel2d_width(k));
    fprintf(stderr, PROG ": engine: %s\n", cf_engine_describe(e));
    fprintf(stderr, PROG ": frames %ux%u %s, %zu bytes each\n", o.cfg.width,
            o.cfg.height, cf_pixel_format_name(o.cfg.format), frame_bytes);
  }
  rc = conv2d_stream(e, &o.cfg, frame_bytes, o.verbose);
done:
  cf_engine_free(e);
  cf_kernel2d_free(k);
  return rc;
}
