/* bench_conv2d — in-process throughput of the cudafilter video engine.
 *
 * Builds a video engine for frames of one size and format (default 1080p
 * GRAY32F) with a kernel of T x Kh x Kw taps and times
 * cf_engine_process_frame() on one frame per iteration by linear
 * regression (timing.h). The input is a ring of --frames distinct frames
 * (random non-zero samples, or read from a raw file with --in) so a
 * temporal kernel sees different frames; the output goes to one frame.
 *
 * Kernels: random (uniform positive taps normalised to sum 1: full rank,
 * so not separable, and 8-bit output stays in range) unless --preset
 * names one (cf_kernel2d_preset(); T > 1 repeats it over the temporal
 * taps, scaled by 1 / T) or --kernel-file gives one (cf_kernel2d_load():
 * text or .npy, 2D or 3D).
 *
 * Reported: ms per frame with its 90% interval, r^2, megapixels per second
 * and the arithmetic rate: T * Kh * Kw multiply-adds per output sample (what
 * direct convolution does; for the separable and FFT paths it is the
 * direct-equivalent rate) x output samples per frame (pixels x filtered
 * components) / time, in GFMA/s and GFLOP/s (2 flops per FMA).
 *
 *   bench_conv2d [--quick] [--budget S] [--size WxH] [--format F]
 *                [--kernel N|KhxKw] [--temporal T] [--preset NAME]
 *                [--sigma S] [--kernel-file F] [--algo A] [--threads N]
 *                [--border B] [--components MASK] [--frames N] [--in FILE]
 *                [--seed N] [--check-out FILE]
 *                [--swap-from N [--prepare | --prepared]]
 *                [--tsv]
 *
 * --swap-from N: the engine starts on a random N x N kernel and filters one
 * frame; the kernel is then changed to the one benchmarked
 * (cf_engine_set_kernel2d(), as cudaconvolve does while PLAYING) and the
 * call and the next frame are timed once ("swap:" line). With
 * CF_FFT_WISDOM=none in a new process that is the first change to an FFT
 * size on a machine; the frames timed after it run on the plan the change
 * made (estimated where the size was new). --prepare calls
 * cf_engine_prepare_kernel2d() first (timed too), as cudaconvolve does in
 * the thread that sets the property: the change then finds a measured
 * plan. --prepared builds the whole swap first
 * (cf_engine_prepare_swap2d(), timed: what cudaconvolve's setter does
 * now) and makes the change by cf_engine_set_prepared2d() (the streaming
 * thread's part).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudafilter/engine.h"
#include "cudafilter/kernel2d.h"
#include "cudafilter/video.h"
#include "timing.h"

typedef struct options {
  double budget;
  unsigned width, height;
  cf_pixel_format format;
  unsigned kh, kw, t;
  int have_preset;
  cf_preset preset;
  double sigma;
  const char *kernel_file;
  cf_algorithm2d algo;
  unsigned threads;
  cf_border border;
  unsigned components;
  unsigned nframes;
  const char *in_path;
  uint64_t seed;
  const char *check_out;
  unsigned swap_from; /* --swap-from N: start on an N x N kernel */
  int prepare;        /* --prepare: cf_engine_prepare_kernel2d first;
                         2 (--prepared): cf_engine_prepare_swap2d */
  int tsv;
} options;

static uint64_t rng_state;
static double urand(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

static void die(const char *what)
{
  fprintf(stderr, "bench_conv2d: %s: %s\n", what, cf_last_error());
  exit(1);
}

/* ------------------------------------------------------------- frames -- */

static int is_float(cf_pixel_format f) { return f == CF_PIX_GRAY32F; }
static int is_16(cf_pixel_format f) { return f == CF_PIX_GRAY16_LE; }

/* Filtered samples per frame: pixels x selected components, chroma planes
 * of I420/NV12 counted at their size. */
static double samples_per_frame(const options *o)
{
  const double w = o->width, h = o->height;
  const double cw = (o->width + 1) / 2, ch = (o->height + 1) / 2;
  const unsigned c = o->components;
  switch (o->format) {
  case CF_PIX_GRAY8:
  case CF_PIX_GRAY16_LE:
  case CF_PIX_GRAY32F:
    return w * h;
  case CF_PIX_I420:
  case CF_PIX_NV12:
    return ((c & CF_COMP_Y) ? w * h : 0.0) + ((c & CF_COMP_U) ? cw * ch : 0.0) +
           ((c & CF_COMP_V) ? cw * ch : 0.0);
  case CF_PIX_Y42B:
    return ((c & CF_COMP_Y) ? w * h : 0.0) + ((c & CF_COMP_U) ? cw * h : 0.0) +
           ((c & CF_COMP_V) ? cw * h : 0.0);
  default:
    return w * h * (double)__builtin_popcount(c & CF_COMP_ALL);
  }
}

/* Random non-zero samples: 8-bit 1..255, 16-bit 1..65535, float in
 * (0, 1]. Alpha / X bytes get random values too (they pass through). */
static void fill_random(uint8_t *p, size_t bytes, cf_pixel_format f)
{
  if (is_float(f)) {
    float *q = (float *)p;
    for (size_t i = 0; i < bytes / sizeof(float); i++)
      q[i] = (float)(1.0 - urand());
  } else if (is_16(f)) {
    uint16_t *q = (uint16_t *)p;
    for (size_t i = 0; i < bytes / 2; i++)
      q[i] = (uint16_t)(1 + (unsigned)(urand() * 65535.0) % 65535);
  } else {
    for (size_t i = 0; i < bytes; i++)
      p[i] = (uint8_t)(1 + (unsigned)(urand() * 255.0) % 255);
  }
}

/* ------------------------------------------------------------- kernel -- */

static cf_kernel2d *make_kernel(const options *o)
{
  cf_kernel2d *k = NULL;
  if (o->kernel_file) {
    if (cf_kernel2d_load(o->kernel_file, &k) != CF_OK) die("kernel file");
    return k;
  }
  if (o->have_preset) {
    cf_kernel2d *p = NULL;
    if (cf_kernel2d_preset(o->preset, o->kh, o->sigma, &p) != CF_OK)
      die("preset");
    if (o->t == 1) return p;
    const unsigned kh = cf_kernel2d_height(p), kw = cf_kernel2d_width(p);
    const float *src = cf_kernel2d_taps(p);
    float *taps = malloc(sizeof(float) * o->t * kh * kw);
    if (!taps) die("out of memory");
    for (unsigned tau = 0; tau < o->t; tau++)
      for (unsigned i = 0; i < kh * kw; i++)
        taps[(size_t)tau * kh * kw + i] = src[i] / (float)o->t;
    cf_kernel2d_free(p);
    if (cf_kernel2d_new(o->t, kh, kw, taps, &k) != CF_OK) die("kernel");
    free(taps);
    return k;
  }
  const size_t n = (size_t)o->t * o->kh * o->kw;
  float *taps = malloc(sizeof(float) * n);
  if (!taps) die("out of memory");
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) {
    taps[i] = (float)(0.05 + urand());
    sum += taps[i];
  }
  for (size_t i = 0; i < n; i++) taps[i] = (float)(taps[i] / sum);
  if (cf_kernel2d_new(o->t, o->kh, o->kw, taps, &k) != CF_OK) die("kernel");
  free(taps);
  return k;
}

/* -------------------------------------------------------------- timing -- */

typedef struct work {
  cf_engine *e;
  cf_frame *in;   /* nframes */
  cf_frame out;
  unsigned nframes, next;
} work;

static void run_frames(void *p, size_t iters)
{
  work *w = p;
  for (size_t i = 0; i < iters; i++) {
    if (cf_engine_process_frame(w->e, &w->in[w->next], &w->out) != CF_OK)
      die("process_frame");
    w->next = w->next + 1 == w->nframes ? 0 : w->next + 1;
  }
}

/* ------------------------------------------------------------ options -- */

static void usage(FILE *f)
{
  fprintf(f,
    "usage: bench_conv2d [--quick] [--budget S] [--size WxH] [--format F]\n"
    "                    [--kernel N|KhxKw] [--temporal T] [--preset NAME]\n"
    "                    [--sigma S] [--kernel-file F] [--algo A]\n"
    "                    [--threads N] [--border B] [--components MASK]\n"
    "                    [--frames N] [--in FILE] [--seed N]\n"
    "                    [--check-out FILE]\n"
    "                    [--swap-from N [--prepare | --prepared]]\n"
    "                    [--tsv]\n"
    "  Times cf_engine_process_frame() on 1080p (default) frames by\n"
    "  regression: ms/frame (90%% CI), Mpixel/s, and T*Kh*Kw multiply-adds\n"
    "  per output sample x samples / time (GFMA/s, GFLOP/s).\n"
    "  --format GRAY8|GRAY16_LE|GRAY32F|RGBA|BGRA|RGBx|BGRx|RGB|BGR|I420|NV12|\n"
    "           Y444|Y42B\n"
    "           (default GRAY32F)\n"
    "  --kernel N or KhxKw (default 13); --temporal T taps (default 1);\n"
    "  --preset gaussian|box|sharpen|unsharp|sobel-x|sobel-y|laplacian|emboss\n"
    "           (cf_kernel2d_preset; size from --kernel, 0 or none = the\n"
    "           preset's default; --sigma), repeated over T taps scaled 1/T;\n"
    "  --kernel-file F: text or .npy kernel (cf_kernel2d_load), overrides\n"
    "           the above;\n"
    "  random kernels otherwise (full rank, positive, sum 1);\n"
    "  --algo auto|direct|separable|fft (default auto);\n"
    "  --threads N (0 = one per core, the default);\n"
    "  --border constant|nearest|reflect|mirror|wrap (default reflect);\n"
    "  --frames N distinct input frames in the ring (default 8);\n"
    "  --in FILE: read the frames from a raw file (tightly packed frames of\n"
    "           the format and size; fewer frames than --frames is fine);\n"
    "  --check-out FILE: no timing; process the ring's frames once, in\n"
    "           order, from a fresh engine and write the outputs there;\n"
    "  --swap-from N: start on an N x N kernel, change to this one, time\n"
    "           the change; --prepare: cf_engine_prepare_kernel2d() first;\n"
    "           --prepared: cf_engine_prepare_swap2d() first, the change\n"
    "           by cf_engine_set_prepared2d();\n"
    "  --tsv: one tab-separated result line (see bench/README.md).\n");
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *v)
{
  char *end;
  errno = 0;
  unsigned long x = strtoul(s, &end, 10);
  if (end == s || *end || errno || x < lo || x > hi) return -1;
  *v = (unsigned)x;
  return 0;
}

static int parse_pair(const char *s, unsigned *a, unsigned *b)
{
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  char *x = strchr(buf, 'x');
  if (!x) {
    if (parse_uint(buf, 1, 1u << 20, a) != 0) return -1;
    *b = *a;
    return 0;
  }
  *x = 0;
  if (parse_uint(buf, 1, 1u << 20, a) != 0 ||
      parse_uint(x + 1, 1, 1u << 20, b) != 0)
    return -1;
  return 0;
}

static void bad(const char *opt, const char *val)
{
  fprintf(stderr, "bench_conv2d: bad %s '%s'\n", opt, val);
  usage(stderr);
  exit(2);
}

static void parse(int argc, char **argv, options *o)
{
  memset(o, 0, sizeof *o);
  o->budget = 1.0;
  o->width = 1920;
  o->height = 1080;
  o->format = CF_PIX_GRAY32F;
  o->kh = o->kw = 13;
  o->t = 1;
  o->algo = CF_ALGO2D_AUTO;
  o->threads = 0;
  o->border = CF_BORDER_REFLECT;
  o->components = CF_COMP_ALL;
  o->nframes = 8;
  o->seed = 20261122;
  int kernel_set = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV()                                              \
  do {                                                       \
    if (!v) bad(a, "(missing)");                             \
    i++;                                                     \
  } while (0)
    if (!strcmp(a, "--quick")) {
      o->budget = 0.1;
    } else if (!strcmp(a, "--tsv")) {
      o->tsv = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--budget")) {
      NEEDV();
      o->budget = atof(v);
      /* inf (or nan) would never end a measurement */
      if (!(o->budget > 0.0) || !isfinite(o->budget)) bad(a, v);
    } else if (!strcmp(a, "--size")) {
      NEEDV();
      if (parse_pair(v, &o->width, &o->height) != 0) bad(a, v);
    } else if (!strcmp(a, "--format")) {
      NEEDV();
      if (cf_pixel_format_from_string(v, &o->format) != CF_OK) bad(a, v);
    } else if (!strcmp(a, "--kernel")) {
      NEEDV();
      if (!strcmp(v, "0")) {
        o->kh = o->kw = 0; /* a preset's default size */
      } else if (parse_pair(v, &o->kh, &o->kw) != 0) {
        bad(a, v);
      }
      kernel_set = 1;
    } else if (!strcmp(a, "--temporal")) {
      NEEDV();
      if (parse_uint(v, 1, CF_KERNEL2D_MAX_FRAMES, &o->t) != 0) bad(a, v);
    } else if (!strcmp(a, "--preset")) {
      NEEDV();
      if (cf_preset_from_string(v, &o->preset) != CF_OK) bad(a, v);
      o->have_preset = 1;
    } else if (!strcmp(a, "--sigma")) {
      NEEDV();
      o->sigma = atof(v);
      if (!(o->sigma > 0.0) || !isfinite(o->sigma)) bad(a, v);
    } else if (!strcmp(a, "--kernel-file")) {
      NEEDV();
      o->kernel_file = v;
    } else if (!strcmp(a, "--algo")) {
      NEEDV();
      if (cf_algorithm2d_from_string(v, &o->algo) != CF_OK) bad(a, v);
    } else if (!strcmp(a, "--threads")) {
      NEEDV();
      if (parse_uint(v, 0, 1024, &o->threads) != 0) bad(a, v);
    } else if (!strcmp(a, "--border")) {
      NEEDV();
      if (cf_border_from_string(v, &o->border) != CF_OK) bad(a, v);
    } else if (!strcmp(a, "--components")) {
      NEEDV();
      char *end;
      unsigned long m = strtoul(v, &end, 0);
      if (*end || m == 0 || m > CF_COMP_ALL) bad(a, v);
      o->components = (unsigned)m;
    } else if (!strcmp(a, "--frames")) {
      NEEDV();
      if (parse_uint(v, 1, 1024, &o->nframes) != 0) bad(a, v);
    } else if (!strcmp(a, "--in")) {
      NEEDV();
      o->in_path = v;
    } else if (!strcmp(a, "--seed")) {
      NEEDV();
      o->seed = strtoull(v, NULL, 0);
    } else if (!strcmp(a, "--check-out")) {
      NEEDV();
      o->check_out = v;
    } else if (!strcmp(a, "--swap-from")) {
      NEEDV();
      if (parse_uint(v, 1, 1024, &o->swap_from) != 0) bad(a, v);
    } else if (!strcmp(a, "--prepare")) {
      o->prepare = 1;
    } else if (!strcmp(a, "--prepared")) {
      o->prepare = 2;
    } else {
      fprintf(stderr, "bench_conv2d: unknown argument %s\n", a);
      usage(stderr);
      exit(2);
    }
#undef NEEDV
  }
  if (o->have_preset && !kernel_set) o->kh = o->kw = 0; /* its default */
  if (o->have_preset && o->kh != o->kw)
    bad("--kernel", "presets are square: give one size");
  if (!o->have_preset && !o->kernel_file && o->kh == 0)
    bad("--kernel", "0 (only with --preset)");
  if (o->seed == 0) o->seed = 1;
}

/* --------------------------------------------------------------- main -- */

int main(int argc, char **argv)
{
  options o;
  parse(argc, argv, &o);
  rng_state = o.seed;

  cf_kernel2d *k = make_kernel(&o);
  const unsigned kt = cf_kernel2d_frames(k), kh = cf_kernel2d_height(k),
                 kw = cf_kernel2d_width(k);

  /* Input ring and output frame. */
  const size_t fbytes = cf_frame_layout(o.format, o.width, o.height, NULL,
                                        NULL);
  if (fbytes == 0) die("frame layout");
  uint8_t *inbuf = aligned_alloc(64, ((fbytes * o.nframes + 63) / 64) * 64);
  uint8_t *outbuf = aligned_alloc(64, ((fbytes + 63) / 64) * 64);
  work w = {0};
  w.in = calloc(o.nframes, sizeof *w.in);
  if (!inbuf || !outbuf || !w.in) {
    fprintf(stderr, "bench_conv2d: out of memory\n");
    return 1;
  }
  if (o.in_path) {
    FILE *f = fopen(o.in_path, "rb");
    if (!f) {
      fprintf(stderr, "bench_conv2d: %s: %s\n", o.in_path, strerror(errno));
      return 1;
    }
    size_t got = fread(inbuf, fbytes, o.nframes, f);
    fclose(f);
    if (got == 0) {
      fprintf(stderr, "bench_conv2d: %s: shorter than one %ux%u %s frame "
                      "(%zu bytes)\n", o.in_path, o.width, o.height,
              cf_pixel_format_name(o.format), fbytes);
      return 1;
    }
    o.nframes = (unsigned)got;
  } else {
    fill_random(inbuf, fbytes * o.nframes, o.format);
  }
  memset(outbuf, 0, fbytes);
  for (unsigned i = 0; i < o.nframes; i++)
    cf_frame_layout(o.format, o.width, o.height, inbuf + fbytes * i,
                    &w.in[i]);
  cf_frame_layout(o.format, o.width, o.height, outbuf, &w.out);
  w.nframes = o.nframes;

  cf_video_config cfg;
  cf_video_config_init(&cfg);
  cfg.width = o.width;
  cfg.height = o.height;
  cfg.format = o.format;
  cfg.components = o.components;
  cfg.border = o.border;
  cfg.backend = CF_BACKEND_CPU;
  cfg.algorithm = o.algo;
  cfg.threads = o.threads;
  double swap_ms = -1, after_ms = 0, prep_ms = -1;
  const double t_new0 = cf_bench_now();
  if (o.swap_from) {
    options so = o;
    so.kh = so.kw = o.swap_from;
    so.t = 1;
    so.have_preset = 0;
    so.kernel_file = NULL;
    cf_kernel2d *k0 = make_kernel(&so);
    if (cf_engine_new_video(&cfg, k0, &w.e) != CF_OK) die("engine");
    cf_kernel2d_free(k0);
    if (cf_engine_process_frame(w.e, &w.in[0], &w.out) != CF_OK)
      die("process_frame");
    cf_swap_prep2d *sp = NULL;
    if (o.prepare) {
      const double tp = cf_bench_now();
      if (o.prepare == 2 ? cf_engine_prepare_swap2d(w.e, k, &sp) != CF_OK
                         : cf_engine_prepare_kernel2d(w.e, k) != CF_OK)
        die(o.prepare == 2 ? "prepare_swap2d" : "prepare_kernel2d");
      prep_ms = (cf_bench_now() - tp) * 1e3;
    }
    const double t0 = cf_bench_now();
    if (sp ? cf_engine_set_prepared2d(w.e, sp) != CF_OK
           : cf_engine_set_kernel2d(w.e, k) != CF_OK)
      die(sp ? "set_prepared2d" : "set_kernel2d");
    const double t1 = cf_bench_now();
    if (cf_engine_process_frame(w.e, &w.in[1 % o.nframes], &w.out) != CF_OK)
      die("process_frame");
    cf_swap_prep2d_free(sp); /* the kernel state the change retired */
    swap_ms = (t1 - t0) * 1e3;
    after_ms = (cf_bench_now() - t1) * 1e3;
  } else if (cf_engine_new_video(&cfg, k, &w.e) != CF_OK) {
    die("engine");
  }
  const double t_new = cf_bench_now() - t_new0;
  char describe[512];
  snprintf(describe, sizeof describe, "%s", cf_engine_describe(w.e));

  if (o.check_out) {
    FILE *f = fopen(o.check_out, "wb");
    if (!f) {
      fprintf(stderr, "bench_conv2d: %s: %s\n", o.check_out,
              strerror(errno));
      return 1;
    }
    for (unsigned i = 0; i < o.nframes; i++) {
      if (cf_engine_process_frame(w.e, &w.in[i], &w.out) != CF_OK)
        die("process_frame");
      if (fwrite(outbuf, 1, fbytes, f) != fbytes) {
        fprintf(stderr, "bench_conv2d: %s: write failed\n", o.check_out);
        return 1;
      }
    }
    if (fclose(f) != 0) {
      fprintf(stderr, "bench_conv2d: %s: %s\n", o.check_out,
              strerror(errno));
      return 1;
    }
    fprintf(stderr, "bench_conv2d: wrote %u frames to %s (%s)\n",
            o.nframes, o.check_out, describe);
    cf_engine_free(w.e);
    cf_kernel2d_free(k);
    return 0;
  }

  cf_bench_result r = cf_bench_run(run_frames, &w, o.budget);

  const double samples = samples_per_frame(&o);
  const double fma_per_sample = (double)kt * kh * kw;
  const double ms = r.per_iter_s * 1e3;
  const double ms_lo = r.ci_lo_s * 1e3, ms_hi = r.ci_hi_s * 1e3;
  const double mpix = (double)o.width * o.height / r.per_iter_s * 1e-6;
  const double gfma = fma_per_sample * samples / r.per_iter_s * 1e-9;
  char kdesc[128];
  if (o.kernel_file)
    snprintf(kdesc, sizeof kdesc, "file:%ux%ux%u", kt, kh, kw);
  else if (o.have_preset)
    snprintf(kdesc, sizeof kdesc, "%s:%ux%ux%u", cf_preset_name(o.preset),
             kt, kh, kw);
  else
    snprintf(kdesc, sizeof kdesc, "random:%ux%ux%u", kt, kh, kw);

  if (o.tsv) {
    /* format size kernel algo threads border ms ms_lo ms_hi r2 points
     * mpix_s gfma_s fma_per_sample samples new_s describe */
    printf("%s\t%ux%u\t%s\t%s\t%u\t%s\t%.4f\t%.4f\t%.4f\t%.5f\t%zu\t%.2f\t"
           "%.3f\t%.0f\t%.0f\t%.4f\t%s\n",
           cf_pixel_format_name(o.format), o.width, o.height, kdesc,
           cf_algorithm2d_name(o.algo), o.threads,
           cf_border_name(o.border), ms, ms_lo, ms_hi, r.r2, r.points, mpix,
           gfma, fma_per_sample, samples, t_new, describe);
  } else {
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    printf("# bench_conv2d %s on %s (%ld CPUs); budget %.2f s; 90%% CI by "
           "regression\n", date, host, sysconf(_SC_NPROCESSORS_ONLN),
           o.budget);
    printf("frames:    %ux%u %s, %u distinct in the ring%s%s\n", o.width,
           o.height, cf_pixel_format_name(o.format), o.nframes,
           o.in_path ? " from " : " (random)", o.in_path ? o.in_path : "");
    printf("kernel:    %s (T x Kh x Kw), border %s, algorithm %s, threads "
           "%u%s\n", kdesc, cf_border_name(o.border),
           cf_algorithm2d_name(o.algo), o.threads,
           o.threads ? "" : " (one per core)");
    printf("engine:    %s (built in %.1f ms)\n", describe, t_new * 1e3);
    if (swap_ms >= 0)
      printf("swap:      %s from %ux%u %.2f ms, the next frame %.2f ms\n",
             o.prepare == 2 ? "set_prepared2d" : "set_kernel2d", o.swap_from,
             o.swap_from, swap_ms, after_ms);
    if (prep_ms >= 0)
      printf("prepare:   %s %.2f ms (before the change)\n",
             o.prepare == 2 ? "prepare_swap2d" : "prepare_kernel2d", prep_ms);
    printf("time:      %.3f ms/frame, 90%% CI %.3f..%.3f, r2 %.4f, %zu "
           "points, %zu frames\n", ms, ms_lo, ms_hi, r.r2, r.points,
           r.total_iters);
    printf("rate:      %.1f Mpixel/s, %.1f frames/s\n", mpix, 1e3 / ms);
    printf("arith:     %.0f FMA/sample x %.0f samples/frame: %.2f GFMA/s = "
           "%.2f GFLOP/s%s\n", fma_per_sample, samples, gfma, 2.0 * gfma,
           strstr(describe, " direct") ? "" : " (direct-equivalent)");
  }
  cf_engine_free(w.e);
  cf_kernel2d_free(k);
  free(w.in);
  free(inbuf);
  free(outbuf);
  return 0;
}
