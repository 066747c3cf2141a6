/* cudafilter — command-line tool: stream FIR filtering of raw float32
 * audio through a pipe (fir), 2D filtering of raw video frames (conv2d, in
 * conv2d.c), library and device facts (info), and a self-contained demo
 * (demo, in demo.c). */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The headers one by one: in the build tree version.h is generated into
 * <builddir>/include/cudafilter, which cudafilter.h's "version.h" misses. */
#include <cudafilter/engine.h>
#include <cudafilter/error.h>
#include <cudafilter/kernel.h>
#include <cudafilter/version.h>

#include "cf_config.h"

#define PROG "cudafilter"

/* Bytes read from stdin at most per read(); nothing is allocated per read. */
enum { READ_BYTES = 64 * 1024 };

/* ---- shared helpers (cli.h) ---------------------------------------- */

int cli_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs(PROG ": ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return CLI_EXIT_RUNTIME;
}

void cli_note_fallback(const cf_engine *e, bool *told)
{
  const char *why = cf_engine_fallback_reason(e);
  if (!why || *told)
    return;
  *told = true;
  fprintf(stderr, PROG ": warning: the cuda backend failed (%s); filtering "
          "goes on on the cpu, nothing lost\n", why);
}

int cli_engine_option(const char *cmd, int c, const char *arg,
                      cf_backend *backend, unsigned *threads, int *device)
{
  unsigned long v;
  switch (c) {
  case CLI_E_BACKEND:
    if (cf_backend_from_string(arg, backend) != CF_OK)
      return cli_usage_error(cmd, "--backend: '%s' is not auto, cpu or cuda",
                             arg);
    return 0;
  case CLI_E_THREADS:
    if (!cli_parse_uint(cmd, "--threads", arg, 0, 1024, &v))
      return CLI_EXIT_USAGE;
    *threads = (unsigned)v;
    return 0;
  default:
    if (!cli_parse_uint(cmd, "--device", arg, 0, 1023, &v))
      return CLI_EXIT_USAGE;
    *device = (int)v;
    return 0;
  }
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs(PROG ": ", stderr);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '" PROG "%s%s --help' for more information.\n",
          cmd ? " " : "", cmd ? cmd : "");
  va_end(ap);
  return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
  /* getopt_long has already advanced optind past the offending word. */
  const char *word = argv[optind - 1];
  if (c == ':')
    return cli_usage_error(cmd, "option '%s' needs a value", word);
  if (optopt && strncmp(word, "--", 2) != 0)
    return cli_usage_error(cmd, "unknown option '-%c'", optopt);
  return cli_usage_error(cmd, "unknown option '%s'", word);
}

bool cli_parse_uint(const char *cmd, const char *opt, const char *s,
                    unsigned long lo, unsigned long hi, unsigned long *out)
{
  char *end = NULL;
  unsigned long v = 0;
  errno = 0;
  /* strtoul accepts " -1" and wraps it: insist on a leading digit. */
  if (s[0] >= '0' && s[0] <= '9')
    v = strtoul(s, &end, 10);
  if (!end || (errno && errno != ERANGE) || *end != '\0') {
    /* a negative whole number is a number, out of range ('-1' was
     * called not a number: QA) */
    char *e2 = NULL;
    if (s[0] == '-' && s[1] >= '0' && s[1] <= '9' &&
        (strtol(s, &e2, 10), *e2 == '\0'))
      cli_usage_error(cmd, "%s: %s is out of range %lu..%lu", opt, s, lo, hi);
    else
      cli_usage_error(cmd, "%s: '%s' is not a number", opt, s);
    return false;
  }
  if (errno == ERANGE || v < lo || v > hi) {
    cli_usage_error(cmd, "%s: %s is out of range %lu..%lu", opt, s, lo, hi);
    return false;
  }
  *out = v;
  return true;
}

bool cli_parse_double(const char *cmd, const char *opt, const char *s,
                      double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  /* decimal only: strtod also reads hex ('0x10' was 16 dB) and skips
   * leading spaces (' 3' taken, '3 ' refused) */
  if (end == s || errno || *end != '\0' || !isfinite(v) ||
      s[strspn(s, "0123456789+-.eE")] != '\0') {
    cli_usage_error(cmd, "%s: '%s' is not a number%s", opt, s,
                    strchr(s, ',') ? " (write a decimal point: 0.5, not 0,5)"
                                   : "");
    return false;
  }
  /* the value as typed, the bounds in full (QA: %g made 1000001 "1e+06",
   * out of range "0..1e+06") */
  if (v < lo || v > hi) {
    cli_usage_error(cmd, "%s: %s is out of range %.15g..%.15g", opt, s, lo,
                    hi);
    return false;
  }
  *out = v;
  return true;
}

int cli_write_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

double cli_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- usage texts ----------------------------------------------------- */

static void usage_main(FILE *f)
{
  fputs(
    "Usage: " PROG " COMMAND [OPTIONS]\n"
    "Real-time streaming convolution (FIR filtering) on CPU or CUDA.\n"
    "\n"
    "Commands:\n"
    "  fir     filter interleaved float32 audio from stdin to stdout\n"
    "  conv2d  filter raw video frames (2D or temporal kernel, presets)\n"
    "          from stdin to stdout\n"
#ifdef CF_CLI_HAVE_LIBAV
    "  apply   filter an audio or video file into another (any format\n"
    "          libav reads and writes: WAV, FLAC, MKV, MP4, ...)\n"
#else
    "  apply   (not in this build: reading and writing files needs libav)\n"
#endif
    "  info    version, backends, CUDA devices and build features\n"
    "  demo    filter a generated test signal through a synthetic room\n"
    "          and write it to a WAV file\n"
    "\n"
    "Options:\n"
    "  -h, --help     show this help ('" PROG " COMMAND --help' for a "
    "command)\n"
    "  -V, --version  show the version\n", f);
}

static void usage_fir(FILE *f)
{
  fputs(
    "Usage: " PROG " fir --kernel FILE --channels C [OPTIONS] < in > out\n"
    "Filter raw interleaved float32 little-endian audio from stdin to stdout.\n"
    "Input is processed as it arrives and each piece is written at once, so\n"
    "the command works inside a live pipe. A WAV file is refused (raw only);\n"
    "NaN or infinity in, or output past float's range, is warned of once;\n"
    "input that ends inside a frame fails the run (exit 1) after the whole\n"
    "frames are written.\n"
    "\n"
    "  -k, --kernel FILE    kernel file: .npy (1D shared, 2D per-channel,\n"
    "                       3D matrix), text (shared) or any audio file\n"
    "  -c, --channels C     input channels, 1..256 (for a matrix kernel: its\n"
    "                       inputs)\n"
    "      --routing R      shared|per-channel|matrix: fail unless the kernel\n"
    "                       file has this routing; matrix also reads N\n"
    "                       per-channel kernels (a true-stereo WAV's four) as\n"
    "                       an N/C x C matrix, output-major (L<-L, L<-R, ...)\n"
    "      --rate R         sample rate, 1..1000000; audio kernel files are\n"
    "                       resampled to it, their gain kept (default 48000)\n"
    "  -b, --block N        block size in frames, 1..65536 (FFT paths add\n"
    "                       N-1 frames of latency; default 1024)\n"
    "      --backend B      auto|cpu|cuda (default auto)\n"
    "      --algorithm A    auto|direct|fft-uniform|fft-nonuniform\n"
    "      --pipeline-depth D  blocks kept in flight across reads, 0..8: adds\n"
    "                       D x block frames of latency; with CUDA the device\n"
    "                       filters them while the next input is read\n"
    "                       (default 0)\n"
    "      --threads N      worker threads, 0 = one per core (default 0)\n"
    "      --device ID      CUDA device (default 0)\n"
    "      --drain          at end of input also write the tail\n"
    "  -v, --verbose        describe the engine and its latency on stderr\n"
    "  -h, --help           show this help\n"
    "\n"
    "Output has the kernel's output channel count (C for shared and\n"
    "per-channel kernels, the matrix's outputs for a matrix). It is the\n"
    "convolution delayed by the engine's latency (see -v). Without --drain\n"
    "the output has exactly as many frames as the input; with --drain it\n"
    "has latency + L - 1 more (L = longest kernel), the full convolution.\n"
    "\n"
    "Exit status: 0 ok, 1 runtime error, 2 usage error.\n", f);
}

/* ---- fir --------------------------------------------------------------- */

typedef struct fir_opts {
  const char *kernel_path;
  unsigned long channels;
  bool have_routing;
  cf_routing routing;
  unsigned long rate;
  cf_audio_config cfg;
  bool drain;
  bool verbose;
} fir_opts;

static void to_host_order(float *x, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  /* The stream is little-endian; swap on big-endian hosts. */
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &x[i], 4);
    u = __builtin_bswap32(u);
    memcpy(&x[i], &u, 4);
  }
#else
  (void)x;
  (void)n;
#endif
}

static int write_failed(void)
{
  /* The reader went away (head, a closed pipe): end quietly. */
  if (errno == EPIPE)
    return CLI_EXIT_RUNTIME;
  return cli_error("writing to stdout: %s", strerror(errno));
}

/* Write out[0..frames) of C channels to stdout in stream byte order. */
static int emit(float *out, size_t frames, unsigned channels)
{
  to_host_order(out, frames * channels); /* the swap is its own inverse */
  if (cli_write_all(STDOUT_FILENO, out, frames * channels * sizeof *out))
    return write_failed();
  return 0;
}

/* Parse fir's options into o; returns 0 or an exit status. */
static int fir_parse(int argc, char **argv, fir_opts *o)
{
  enum { OPT_ROUTING = 256, OPT_RATE, OPT_ALGORITHM, OPT_DRAIN, OPT_DEPTH };
  static const struct option longopts[] = {
    {"kernel", required_argument, NULL, 'k'},
    {"channels", required_argument, NULL, 'c'},
    {"routing", required_argument, NULL, OPT_ROUTING},
    {"rate", required_argument, NULL, OPT_RATE},
    {"block", required_argument, NULL, 'b'},
    {"algorithm", required_argument, NULL, OPT_ALGORITHM},
    {"pipeline-depth", required_argument, NULL, OPT_DEPTH},
    CLI_ENGINE_OPTIONS,
    {"drain", no_argument, NULL, OPT_DRAIN},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  unsigned long v;
  int c, rc;

  memset(o, 0, sizeof *o);
  o->rate = 48000;
  cf_audio_config_init(&o->cfg);
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":k:c:b:vh", longopts, NULL)) != -1) {
    switch (c) {
    case 'k': o->kernel_path = optarg; break;
    case 'c':
      if (!cli_parse_uint("fir", "--channels", optarg, 1, CF_MAX_CHANNELS,
                          &o->channels))
        return CLI_EXIT_USAGE;
      break;
    case OPT_ROUTING:
      if (cf_routing_from_string(optarg, &o->routing) != CF_OK)
        return cli_usage_error("fir", "--routing: '%s' is not shared, "
                               "per-channel or matrix", optarg);
      o->have_routing = true;
      break;
    case OPT_RATE:
      /* the loaders' range (an audio kernel file's rate) */
      if (!cli_parse_uint("fir", "--rate", optarg, 1, 1000000, &o->rate))
        return CLI_EXIT_USAGE;
      break;
    case 'b':
      if (!cli_parse_uint("fir", "--block", optarg, 1, CF_AUDIO_MAX_BLOCK, &v))
        return CLI_EXIT_USAGE;
      o->cfg.block_size = (unsigned)v;
      break;
    case CLI_E_BACKEND:
    case CLI_E_THREADS:
    case CLI_E_DEVICE:
      if ((rc = cli_engine_option("fir", c, optarg, &o->cfg.backend,
                                  &o->cfg.threads, &o->cfg.device_id)))
        return rc;
      break;
    case OPT_ALGORITHM:
      if (cf_algorithm_from_string(optarg, &o->cfg.algorithm) != CF_OK)
        return cli_usage_error("fir", "--algorithm: '%s' is not auto, "
                               "direct, fft-uniform or fft-nonuniform",
                               optarg);
      break;
    case OPT_DEPTH:
      if (!cli_parse_uint("fir", "--pipeline-depth", optarg, 0,
                          CF_AUDIO_MAX_DEPTH, &v))
        return CLI_EXIT_USAGE;
      o->cfg.pipeline_depth = (unsigned)v;
      break;
    case OPT_DRAIN: o->drain = true; break;
    case 'v': o->verbose = true; break;
    case 'h': usage_fir(stdout); exit(0);
    default: return cli_bad_option("fir", c, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("fir", "unexpected argument '%s' (audio is read "
                           "from stdin)", argv[optind]);
  if (!o->kernel_path)
    return cli_usage_error("fir", "missing --kernel FILE");
  if (!o->channels)
    return cli_usage_error("fir", "missing --channels C");
  o->cfg.channels = (unsigned)o->channels;
  return 0;
}

/* Check that the kernel file fits what the user asked for; --routing
 * matrix reads per-channel kernels (a true-stereo WAV's four) as a
 * matrix of --channels inputs, as cudafir's routing=matrix does. */
static int fir_check_kernel(const fir_opts *o, cf_kernel **kp)
{
  if (o->have_routing && o->routing == CF_ROUTING_MATRIX &&
      cf_kernel_routing(*kp) == CF_ROUTING_PER_CHANNEL &&
      cf_kernel_count(*kp) % o->channels == 0) {
    cf_kernel *m;
    if (cf_kernel_as_matrix(*kp, (unsigned)o->channels, &m) != CF_OK)
      return cli_error("kernel %s as a matrix: %s", o->kernel_path,
                       cf_last_error());
    cf_kernel_free(*kp);
    *kp = m;
  }
  const cf_kernel *k = *kp;
  cf_routing r = cf_kernel_routing(k);
  unsigned ins = cf_kernel_inputs(k), outs = cf_kernel_outputs(k);
  if (o->have_routing && r != o->routing)
    return cli_error("--routing %s given, but kernel %s is %s",
                     cf_routing_name(o->routing), o->kernel_path,
                     cf_routing_name(r));
  if (r == CF_ROUTING_PER_CHANNEL && ins != o->channels &&
      ins % o->channels == 0)
    return cli_error("kernel %s has %u per-channel kernels, but --channels "
                     "is %lu; --routing matrix reads them as a %lu x %lu "
                     "matrix (%lu channel%s in, %lu out)",
                     o->kernel_path, ins, o->channels, ins / o->channels,
                     o->channels, o->channels, o->channels == 1 ? "" : "s",
                     ins / o->channels);
  if (r == CF_ROUTING_PER_CHANNEL && ins != o->channels)
    return cli_error("kernel %s has %u per-channel kernels, but --channels "
                     "is %lu", o->kernel_path, ins, o->channels);
  if (r == CF_ROUTING_MATRIX && ins != o->channels)
    return cli_error("kernel %s is a %u x %u matrix (outputs x inputs), but "
                     "--channels is %lu", o->kernel_path, outs, ins,
                     o->channels);
  return 0;
}

/* Pump stdin through the engine to stdout until end of input. */
static int fir_stream(cf_engine *e, bool drain)
{
  static float in[READ_BYTES / sizeof(float)];
  const unsigned cin = cf_engine_in_channels(e);
  const unsigned cout = cf_engine_out_channels(e);
  const size_t frame_bytes = cin * sizeof(float);
  const size_t max_frames = sizeof in / frame_bytes;
  size_t have = 0; /* bytes in `in`: a partial frame left from last read */
  bool told = false, told_in = false, told_out = false, looked = false;
  unsigned long long done = 0; /* frames read */
  int rc = 0;

  float *out = malloc(max_frames * cout * sizeof *out);
  if (!out)
    return cli_error("out of memory");
  for (;;) {
    ssize_t got = read(STDIN_FILENO, (char *)in + have, sizeof in - have);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      rc = cli_error("reading stdin: %s", strerror(errno));
      goto done;
    }
    if (got == 0)
      break;
    have += (size_t)got;
    /* a WAV file piped in (ffmpeg -f wav -): its header read as samples
     * (12690.3, 1.3e-41, ...) and 16-bit data as float, exit 0 (QA) */
    if (!looked && (have >= 12 || done)) {
      looked = true;
      const char *b = (const char *)in;
      if (have >= 12 && (!memcmp(b, "RIFF", 4) || !memcmp(b, "RF64", 4)) &&
          !memcmp(b + 8, "WAVE", 4)) {
        rc = cli_error("standard input is a WAV file: fir reads raw "
                       "float32 samples (ffmpeg -f f32le, or `cudafilter "
                       "apply` for files)");
        goto done;
      }
    }
    size_t frames = have / frame_bytes;
    if (frames == 0)
      continue;
    to_host_order(in, frames * cin);
    /* NaN or infinity in: said once, as cudafir says it on the bus (the
     * outputs it reaches are not finite: on the FFT paths its blocks') */
    if (!told_in) {
      for (size_t i = 0; i < frames * cin; i++)
        if (!isfinite(in[i])) {
          fprintf(stderr,
                  PROG ": warning: input sample %llu of channel %zu is %s: "
                  "the outputs it reaches are not finite (on the FFT paths, "
                  "whole blocks of them)\n",
                  done + i / cin, i % cin, isnan(in[i]) ? "NaN" : "infinite");
          told_in = true;
          break;
        }
    }
    cf_status st = cf_engine_process(e, in, out, frames);
    cli_note_fallback(e, &told);
    if (st != CF_OK) {
      rc = cli_error("processing failed: %s", cf_last_error());
      goto done;
    }
    /* finite in, infinite out: past float's range (3e38 through a tap
     * of 2), said once */
    if (!told_in && !told_out)
      for (size_t i = 0; i < frames * cout; i++)
        if (!isfinite(out[i])) {
          fprintf(stderr,
                  PROG ": warning: output sample %llu of channel %zu is past "
                  "float's range (the kernel and the input's levels)\n",
                  done + i / cout, i % cout);
          told_out = true;
          break;
        }
    done += frames;
    if ((rc = emit(out, frames, cout)))
      goto done;
    have -= frames * frame_bytes;
    memmove(in, (char *)in + frames * frame_bytes, have);
  }
  /* the input cut inside a frame: its whole frames (and the drain) are
   * written, and the run fails, as conv2d's does (QA: exit 0) */
  bool cut = have != 0;
  if (cut)
    fprintf(stderr, PROG ": input ended inside frame %llu: %zu bytes left "
            "over (a frame of %u channel%s is %zu bytes)\n", done + 1, have,
            cin, cin == 1 ? "" : "s", frame_bytes); /* from 1, as conv2d */
  if (drain) {
    size_t tail = cf_engine_tail(e), written = 0;
    /* Allocated once, at the end of the stream. */
    float *t = malloc((tail ? tail : 1) * cout * sizeof *t);
    if (!t) {
      rc = cli_error("out of memory for the %zu-frame tail", tail);
      goto done;
    }
    cf_status st = cf_engine_drain(e, t, tail, &written);
    cli_note_fallback(e, &told);
    if (st != CF_OK)
      rc = cli_error("drain failed: %s", cf_last_error());
    else
      rc = emit(t, written, cout);
    free(t);
  }
  if (!rc && cut)
    rc = CLI_EXIT_RUNTIME;
done:
  free(out);
  return rc;
}

static int cmd_fir(int argc, char **argv)
{
  fir_opts o;
  cf_kernel *k = NULL;
  cf_engine *e = NULL;
  int rc = fir_parse(argc, argv, &o);
  if (rc)
    return rc;

  if (cf_kernel_load(o.kernel_path, (unsigned)o.rate, &k) != CF_OK) {
    /* The loader's messages usually name the file already. */
    const char *why = cf_last_error();
    if (strstr(why, o.kernel_path))
      return cli_error("cannot load kernel: %s", why);
    return cli_error("cannot load kernel %s: %s", o.kernel_path, why);
  }
  if ((rc = fir_check_kernel(&o, &k)))
    goto done;
  if (cf_engine_new_audio(&o.cfg, k, &e) != CF_OK) {
    rc = cli_error("cannot create the engine: %s", cf_last_error());
    goto done;
  }
  if (o.verbose) {
    size_t lat = cf_engine_latency(e);
    fprintf(stderr, PROG ": kernel %s: %s, %u output(s) x %u input(s), "
            "%zu taps\n", o.kernel_path, cf_routing_name(cf_kernel_routing(k)),
            cf_kernel_outputs(k), cf_kernel_inputs(k), cf_kernel_max_len(k));
    fprintf(stderr, PROG ": engine: %s\n", cf_engine_describe(e));
    fprintf(stderr, PROG ": channels %u in, %u out\n",
            cf_engine_in_channels(e), cf_engine_out_channels(e));
    fprintf(stderr, PROG ": latency %zu frames (%.2f ms at %lu Hz), tail "
            "%zu frames\n", lat, 1000.0 * (double)lat / (double)o.rate,
            o.rate, cf_engine_tail(e));
  }
  rc = fir_stream(e, o.drain);
done:
  cf_engine_free(e);
  cf_kernel_free(k);
  return rc;
}

/* ---- info -------------------------------------------------------------- */

static int cmd_info(int argc, char **argv)
{
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  static const cf_backend backends[] = {CF_BACKEND_CPU, CF_BACKEND_CUDA};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    if (c != 'h')
      return cli_bad_option("info", c, argv);
    puts("Usage: " PROG " info\n"
         "Show the version, the backends and whether they can run here, the "
         "CUDA\ndevices and the features the library was built with.");
    return 0;
  }
  if (optind < argc)
    return cli_usage_error("info", "unexpected argument '%s'", argv[optind]);

  printf(PROG " %s\n", cf_version());
  puts("backends:");
  for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
    const char *why = NULL;
    if (cf_backend_available(backends[i], &why) == CF_OK)
      printf("  %-5s available\n", cf_backend_name(backends[i]));
    else
      printf("  %-5s unavailable: %s\n", cf_backend_name(backends[i]),
             why && *why ? why : "no reason given");
  }
  const char *fake = getenv("CF_TEST_FAKE_DEVICE"); /* src/engine/fake.c */
  if (fake && *fake)
    printf("  note: CF_TEST_FAKE_DEVICE=%s: backend=auto runs the CPU as a "
           "fake device (tests only)\n", fake);
  const char *why = NULL;
  int n = cf_device_count(&why);
  if (n <= 0)
    printf("CUDA devices: none (%s)\n", why && *why ? why : "none found");
  else
    printf("CUDA devices: %d\n", n);
  for (int i = 0; i < n; i++) {
    char desc[256];
    if (cf_device_describe(i, desc, sizeof desc) == CF_OK)
      printf("  %d: %s\n", i, desc);
    else
      printf("  %d: (cannot describe: %s)\n", i, cf_last_error());
  }
  puts("build features:");
  printf("  CUDA toolkit linked (device discovery): %s\n",
         CF_HAVE_CUDA ? "yes" : "no");
  printf("  libav kernel files (WAV, FLAC, ...): %s\n",
         CF_HAVE_LIBAV ? "yes" : "no");
#ifdef CF_CLI_HAVE_LIBAV
  puts("  demo output: WAV (libav)");
#else
  puts("  demo output: raw float32 (built without libav)");
#endif
  return 0;
}

/* ---- main -------------------------------------------------------------- */

static int run(int argc, char **argv);

/* At exit, what stdio still holds for standard output (help, info, a
 * report) is written: a failure there (a full disk, /dev/full) fails the
 * command, as coreutils' close_stdout makes it (`info > /dev/full` said
 * nothing and exited 0; the subcommands' --help exit from their option
 * parsing). A reader gone (EPIPE: `--help | head -1`) is not an error. */
static void close_stdout(void)
{
  errno = 0;
  if ((fflush(stdout) == 0 && !ferror(stdout)) || errno == EPIPE)
    return;
  int err = errno;
  fprintf(stderr, PROG ": standard output: %s\n",
          err ? strerror(err) : "write error");
  _exit(CLI_EXIT_RUNTIME);
}

int main(int argc, char **argv)
{
  atexit(close_stdout);
  return run(argc, argv);
}

static int run(int argc, char **argv)
{
  /* A closed stdout shows up as EPIPE from write(), handled there. */
  signal(SIGPIPE, SIG_IGN);
  /* A file size limit (ulimit -f) reached: EFBIG from write(), said as a
   * failed write (exit 1, apply's temporary file removed), not death by
   * SIGXFSZ (exit 153, OUTPUT.cf-part-PID left behind: QA). */
  signal(SIGXFSZ, SIG_IGN);
  /* a one-line error and where help is, as for any other usage error
   * (and cudafilterd's, cudafilterctl's): the whole help buried it */
  if (argc < 2)
    return cli_usage_error(NULL, "missing COMMAND (fir, conv2d, apply, "
                                 "info or demo)");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage_main(stdout);
    return 0;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
    printf(PROG " %s", CF_VERSION_STRING);
    if (strcmp(cf_version(), CF_VERSION_STRING) != 0)
      printf(" (library %s)", cf_version());
    putchar('\n');
    return 0;
  }
  /* Each subcommand parses argv[1..] with getopt_long from index 1. */
  if (!strcmp(cmd, "fir"))
    return cmd_fir(argc - 1, argv + 1);
  if (!strcmp(cmd, "conv2d"))
    return cli_conv2d(argc - 1, argv + 1);
  if (!strcmp(cmd, "apply"))
    return cli_apply(argc - 1, argv + 1);
  if (!strcmp(cmd, "info"))
    return cmd_info(argc - 1, argv + 1);
  if (!strcmp(cmd, "demo"))
    return cli_demo(argc - 1, argv + 1);
  if (cmd[0] == '-')
    return cli_usage_error(NULL, "unknown option '%s'", cmd);
  return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
