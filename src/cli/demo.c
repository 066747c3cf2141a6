/* `cudafilter demo`: a self-contained demonstration. A generated stereo
 * test signal (a sine sweep, clicks, a little noise) goes through a
 * synthetic 1.5 s room impulse response, block by block as a live stream
 * would, and the result is written to a WAV file (raw float32 when built
 * without libav). */
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

/* The headers one by one: in the build tree version.h is generated into
 * <builddir>/include/cudafilter, which cudafilter.h's "version.h" misses. */
#include <cudafilter/engine.h>
#include <cudafilter/error.h>
#include <cudafilter/kernel.h>

#ifdef CF_CLI_HAVE_LIBAV
#include <libavutil/error.h>

#include "../io/av_lazy.h"
#endif

enum {
  RATE = 48000,
  CHANNELS = 2,
  BLOCK = 1024,
  IR_TAPS = 72000, /* 1.5 s at 48 kHz */
};

#ifdef CF_CLI_HAVE_LIBAV
#define DEFAULT_OUT "cudafilter-demo.wav"
#else
#define DEFAULT_OUT "cudafilter-demo.f32"
#endif

/* ---- deterministic noise ------------------------------------------------ */

static uint64_t rng_next(uint64_t *s) /* xorshift64* */
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

static float rng_sym(uint64_t *s) /* uniform in [-1, 1) */
{
  return (float)((double)(rng_next(s) >> 11) * (2.0 / 9007199254740992.0)
                 - 1.0);
}

/* ---- the room and the signal ----------------------------------------- */

/* A synthetic room: the direct sound, a few early reflections, then
 * exponentially decaying noise reaching -60 dB at IR_TAPS (RT60 1.5 s).
 * Each channel has its own noise, so the reverb is decorrelated. */
static cf_status make_room(cf_kernel **out)
{
  static float h[IR_TAPS];
  const double tau = IR_TAPS / log(1000.0); /* amplitude -60 dB at the end */
  const size_t predelay = RATE / 100;       /* 10 ms */
  cf_status st = cf_kernel_new(CF_ROUTING_PER_CHANNEL, CHANNELS, CHANNELS,
                               out);
  for (unsigned ch = 0; st == CF_OK && ch < CHANNELS; ch++) {
    uint64_t s = 0x9E3779B97F4A7C15ull * (ch + 1);
    double energy = 0.0;
    h[0] = 0.0f;
    for (size_t k = 1; k < IR_TAPS; k++) {
      double ramp = k < predelay ? (double)k / (double)predelay : 1.0;
      h[k] = (float)(ramp * exp(-(double)k / tau)) * rng_sym(&s);
      energy += (double)h[k] * h[k];
    }
    /* Diffuse tail at -3 dB relative to the direct sound. */
    float g = (float)sqrt(0.5 / energy);
    for (size_t k = 1; k < IR_TAPS; k++)
      h[k] *= g;
    h[0] = 1.0f;
    for (int r = 0; r < 6; r++) /* early reflections within 40 ms */
      h[1 + rng_next(&s) % (RATE / 25)] += 0.4f * rng_sym(&s);
    st = cf_kernel_set(*out, ch, h, IR_TAPS);
  }
  return st;
}

/* Frames [t0, t0 + n) of the test signal into x (interleaved stereo): an
 * exponential sweep 40 Hz..12 kHz over the whole length, a click every
 * half second alternating left and right, and low noise. */
static void make_signal(float *x, size_t t0, size_t n, size_t total,
                        uint64_t *s)
{
  const double f0 = 40.0, f1 = 12000.0, dur = (double)total / RATE;
  const double k = log(f1 / f0);
  for (size_t i = 0; i < n; i++) {
    size_t t = t0 + i;
    double sec = (double)t / RATE;
    double phase = 2.0 * M_PI * f0 * dur / k * (exp(sec / dur * k) - 1.0);
    float sweep = 0.25f * (float)sin(phase);
    size_t click_period = RATE / 2;
    int click_ch = (int)((t / click_period) % CHANNELS);
    for (int ch = 0; ch < CHANNELS; ch++) {
      float v = sweep + 0.005f * rng_sym(s);
      if (t % click_period == 0 && ch == click_ch)
        v += 0.6f;
      x[i * CHANNELS + ch] = v;
    }
  }
}

/* ---- output file --------------------------------------------------------- */

typedef struct writer {
  const char *path;
#ifdef CF_CLI_HAVE_LIBAV
  AVFormatContext *oc;
  AVStream *st;
  AVPacket *pkt;
  int64_t frames;
#else
  FILE *f;
#endif
} writer;

#ifdef CF_CLI_HAVE_LIBAV
static int av_failed(const writer *w, const char *what, int err)
{
  char msg[AV_ERROR_MAX_STRING_SIZE];
  cf_av->av_strerror(err, msg, sizeof msg);
  return cli_error("demo: %s %s: %s", what, w->path, msg);
}

static int writer_open(writer *w, const char *path)
{
  int err;
  const char *why;
  memset(w, 0, sizeof *w);
  w->path = path;
  if (!cf_av_get(&why))
    return cli_error("demo: cannot write %s: %s", path, why);
  err = cf_av->avformat_alloc_output_context2(&w->oc, NULL, "wav", path);
  if (err < 0)
    return av_failed(w, "cannot set up a WAV muxer for", err);
  if (!(w->st = cf_av->avformat_new_stream(w->oc, NULL)) ||
      !(w->pkt = cf_av->av_packet_alloc()))
    return av_failed(w, "cannot set up", AVERROR(ENOMEM));
  /* Raw PCM needs no encoder: packets of interleaved float32 go straight
   * to the muxer. */
  AVCodecParameters *par = w->st->codecpar;
  par->codec_type = AVMEDIA_TYPE_AUDIO;
  par->codec_id = AV_CODEC_ID_PCM_F32LE;
  par->format = AV_SAMPLE_FMT_FLT;
  par->sample_rate = RATE;
  cf_av->av_channel_layout_default(&par->ch_layout, CHANNELS);
  par->bits_per_coded_sample = 32;
  par->block_align = 4 * CHANNELS;
  par->bit_rate = (int64_t)RATE * CHANNELS * 32;
  w->st->time_base = (AVRational){1, RATE};
  /* `-` is standard output, as for apply (libav's "pipe:1"); a local
   * name with a ':' is that file, as for apply */
  char *name = !strcmp(path, "-")   ? strdup("pipe:1")
               : cf_av_is_url(path) ? strdup(path)
                                    : cf_av_file_name(cf_av_local(path));
  if (!name)
    return av_failed(w, "cannot create", AVERROR(ENOMEM));
  err = cf_av->avio_open(&w->oc->pb, name, AVIO_FLAG_WRITE);
  free(name);
  if (err < 0)
    return av_failed(w, "cannot create", err);
  if ((err = cf_av->avformat_write_header(w->oc, NULL)) < 0)
    return av_failed(w, "cannot write the header of", err);
  return 0;
}

static int writer_write(writer *w, const float *x, size_t frames)
{
  int size = (int)(frames * CHANNELS * sizeof *x);
  int err = cf_av->av_new_packet(w->pkt, size);
  if (err < 0)
    return av_failed(w, "cannot write", err);
  memcpy(w->pkt->data, x, (size_t)size);
  const AVRational tb = {1, RATE};
  w->pkt->pts = w->pkt->dts = cf_av->av_rescale_q(w->frames, tb, w->st->time_base);
  w->pkt->duration = cf_av->av_rescale_q((int64_t)frames, tb, w->st->time_base);
  w->pkt->stream_index = w->st->index;
  w->frames += (int64_t)frames;
  err = cf_av->av_interleaved_write_frame(w->oc, w->pkt);
  cf_av->av_packet_unref(w->pkt);
  return err < 0 ? av_failed(w, "cannot write", err) : 0;
}

/* Finish the file when ok, else just release everything (a failure
 * then is the one already said again: "cannot close" after "cannot
 * write" of a full disk, QA). */
static int writer_close(writer *w, bool ok)
{
  int rc = 0, err;
  if (ok && (err = cf_av->av_write_trailer(w->oc)) < 0)
    rc = av_failed(w, "cannot finish", err);
  if (w->oc && w->oc->pb && (err = cf_av->avio_closep(&w->oc->pb)) < 0 && ok &&
      !rc)
    rc = av_failed(w, "cannot close", err);
  cf_av->avformat_free_context(w->oc);
  cf_av->av_packet_free(&w->pkt);
  return rc;
}

static const char *writer_kind(void) { return "float32 WAV"; }
#else
static int writer_open(writer *w, const char *path)
{
  w->path = path;
  if (!strcmp(path, "-")) { /* standard output, as for apply */
    w->f = stdout;
    return 0;
  }
  if (!(w->f = fopen(path, "wb")))
    return cli_error("demo: cannot create %s: %s", path, strerror(errno));
  return 0;
}

static int writer_write(writer *w, const float *x, size_t frames)
{
  /* Interleaved float32 in host order (little-endian on x86 and ARM). */
  if (fwrite(x, sizeof *x * CHANNELS, frames, w->f) != frames)
    return cli_error("demo: cannot write %s: %s", w->path, strerror(errno));
  return 0;
}

static int writer_close(writer *w, bool ok)
{
  if (!w->f)
    return 0;
  if ((w->f == stdout ? fflush(w->f) : fclose(w->f)) != 0 && ok)
    return cli_error("demo: cannot write %s: %s", w->path, strerror(errno));
  return 0;
}

static const char *writer_kind(void)
{
  return "raw float32 little-endian, no header (built without libav)";
}
#endif

/* ---- the command ----------------------------------------------------- */

/* Where the report goes: standard output, unless the WAV went there
 * (`--out -`, /dev/stdout): then standard error, as ffmpeg reports
 * beside its output (333 bytes of report ended a piped WAV). */
static FILE *report_stream(const char *path)
{
  struct stat a, b;
  if (!strcmp(path, "-"))
    return stderr;
  if (fstat(STDOUT_FILENO, &b) == 0 && stat(path, &a) == 0 &&
      a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    return stderr;
  return stdout;
}

static char *part_name(const char *path, bool *oom);
static int part_commit(const char *tmp, const char *path);

/* `demo --ir FILE`: the room as a stereo WAV, one kernel per channel (for
 * `cudafir kernel-file=FILE` and the examples in the README); under a
 * temporary name too (a full disk left FILE cut short, a WAV whose
 * header holds no sizes yet, QA). */
static int write_room(const char *path)
{
  cf_kernel *room = NULL;
  float *ir = NULL;
  char *tmp = NULL;
  writer w = {0};
  int rc = 0;
  bool oom;
  if (make_room(&room) != CF_OK) {
    rc = cli_error("demo: cannot build the room kernel: %s", cf_last_error());
    goto done;
  }
  if (!(ir = malloc((size_t)IR_TAPS * CHANNELS * sizeof *ir))) {
    rc = cli_error("demo: out of memory");
    goto done;
  }
  for (unsigned ch = 0; ch < CHANNELS; ch++) {
    size_t len;
    const float *h = cf_kernel_taps(room, ch, &len);
    for (size_t k = 0; k < (size_t)IR_TAPS; k++)
      ir[k * CHANNELS + ch] = k < len ? 0.5f * h[k] : 0.0f;
  }
  if (!(tmp = part_name(path, &oom)) && oom) {
    rc = cli_error("demo: out of memory");
    goto done;
  }
  if ((rc = writer_open(&w, tmp ? tmp : path)))
    goto done;
  if ((rc = writer_write(&w, ir, IR_TAPS))) {
    writer_close(&w, false);
    goto done;
  }
  if ((rc = writer_close(&w, true)))
    goto done;
  if ((rc = part_commit(tmp, path)))
    goto done;
  fprintf(report_stream(path),
          "wrote %s: the demo's room impulse response at -6 dB, %d taps "
          "(%.1f s) per channel, stereo, %d Hz, %s\n",
          path, IR_TAPS, (double)IR_TAPS / RATE, RATE, writer_kind());
done:
  if (rc && tmp)
    unlink(tmp);
  free(tmp);
  free(ir);
  cf_kernel_free(room);
  return rc;
}

static int demo_parse(int argc, char **argv, const char **out_path,
                      double *seconds, cf_backend *backend,
                      const char **ir_path)
{
  static const struct option longopts[] = {
    {"out", required_argument, NULL, 'o'},
    {"ir", required_argument, NULL, 'I'},
    {"seconds", required_argument, NULL, 's'},
    {"backend", required_argument, NULL, 'B'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  int c, rc;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:s:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': *out_path = optarg; break;
    case 'I': *ir_path = optarg; break;
    case 's':
      if (!cli_parse_double("demo", "--seconds", optarg, 0.01, 3600.0,
                            seconds))
        return CLI_EXIT_USAGE;
      break;
    case 'B':
      if ((rc = cli_engine_option("demo", CLI_E_BACKEND, optarg, backend,
                                  NULL, NULL)))
        return rc;
      break;
    case 'h':
      puts("Usage: cudafilter demo [-o|--out FILE] [-s|--seconds S]\n"
           "                       [--backend auto|cpu|cuda]\n"
           "       cudafilter demo --ir FILE   (write the room impulse "
           "response only)\n"
           "Generate S seconds (0.01..3600, default 10) of 48 kHz stereo "
           "test signal\n(a sweep, clicks, noise), filter it through a "
           "synthetic 1.5 s room impulse\nresponse (72000 taps per channel, "
           "block 1024) and write the result, reverb\ntail included, to "
           "FILE (default " DEFAULT_OUT "; - is standard output,\nthe "
           "report then on standard error). Reports the speed as a multiple "
           "of real\ntime. FILE is written under a temporary name and "
           "renamed when complete.\n\nExit status: 0 ok, 1 runtime error, "
           "2 usage error, 130 interrupted.");
      exit(0);
    default: return cli_bad_option("demo", c, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("demo", "unexpected argument '%s'", argv[optind]);
  return 0;
}

static volatile sig_atomic_t demo_stopped;

static void demo_on_signal(int sig)
{
  (void)sig;
  demo_stopped = 1;
}

/* The name a FILE is written under, FILE.cf-part-PID.EXT, renamed when
 * complete, as apply writes (an interrupted or failed run left the file
 * cut short, a WAV that reads as a shorter one, over an earlier; QA);
 * NULL where FILE is written in place ("-", a URL, a FIFO, a device) or
 * out of memory (*oom). */
static char *part_name(const char *path, bool *oom)
{
  *oom = false;
  if (!strcmp(path, "-"))
    return NULL;
#ifdef CF_CLI_HAVE_LIBAV
  const char *why;
  if (!cf_av_get(&why) || cf_av_is_url(path))
    return NULL; /* writer_open says why */
  path = cf_av_local(path);
#endif
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return NULL;
  const char *base = strrchr(path, '/');
  const char *ext = strrchr(base ? base + 1 : path, '.');
  size_t n = strlen(path) + 48;
  char *tmp = malloc(n);
  if (!tmp)
    *oom = true;
  else
    snprintf(tmp, n, "%s.cf-part-%ld%s", path, (long)getpid(),
             ext ? ext : "");
  return tmp;
}

/* A complete TMP from part_name() takes PATH's place; nothing to do
 * where PATH was written in place (TMP NULL). */
static int part_commit(const char *tmp, const char *path)
{
#ifdef CF_CLI_HAVE_LIBAV
  const char *local = cf_av_local(path);
#else
  const char *local = path;
#endif
  if (tmp && rename(tmp, local) != 0)
    return cli_error("demo: cannot rename %s to %s: %s", tmp, path,
                     strerror(errno));
  return 0;
}

int cli_demo(int argc, char **argv)
{
  static float in[BLOCK * CHANNELS], out[BLOCK * CHANNELS];
  const char *path = DEFAULT_OUT;
  double seconds = 10.0, busy = 0.0, setup, t;
  cf_audio_config cfg;
  cf_kernel *room = NULL;
  cf_engine *e = NULL;
  float *tail = NULL;
  writer w = {0};
  char *tmp = NULL;
  bool opened = false;
  uint64_t noise = 12345;
  size_t tail_frames = 0, written = 0;
  bool told = false;
  int rc;

  cf_audio_config_init(&cfg);
  const char *ir_path = NULL;
  if ((rc = demo_parse(argc, argv, &path, &seconds, &cfg.backend, &ir_path)))
    return rc;
  if (ir_path)
    return write_room(ir_path);
  cfg.channels = CHANNELS;
  cfg.block_size = BLOCK;
  const size_t total = (size_t)(seconds * RATE + 0.5);

  if (make_room(&room) != CF_OK) {
    rc = cli_error("demo: cannot build the room kernel: %s", cf_last_error());
    goto done;
  }
  t = cli_now();
  if (cf_engine_new_audio(&cfg, room, &e) != CF_OK) {
    rc = cli_error("demo: cannot create the engine: %s", cf_last_error());
    goto done;
  }
  setup = cli_now() - t;
  bool oom;
  if (!(tmp = part_name(path, &oom)) && oom) {
    rc = cli_error("demo: out of memory");
    goto done;
  }
  /* No SA_RESTART: a blocked write returns, and the run ends cleanly. */
  struct sigaction sa = {.sa_handler = demo_on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  if ((rc = writer_open(&w, tmp ? tmp : path)))
    goto done;
  opened = true;

  /* Feed the engine block by block, as a live stream would; time only the
   * engine, not the signal generation or the file. Its first `latency`
   * frames of output are silence, not the signal: left out, as apply
   * does, so the file is time-aligned with the signal. */
  size_t skip = cf_engine_latency(e);
  for (size_t t0 = 0; t0 < total; t0 += BLOCK) {
    if (demo_stopped) {
      rc = 130;
      goto done;
    }
    size_t n = total - t0 < BLOCK ? total - t0 : BLOCK;
    make_signal(in, t0, n, total, &noise);
    t = cli_now();
    cf_status st = cf_engine_process(e, in, out, n);
    cli_note_fallback(e, &told);
    if (st != CF_OK) {
      rc = cli_error("demo: processing failed: %s", cf_last_error());
      goto done;
    }
    busy += cli_now() - t;
    size_t drop = skip < n ? skip : n;
    skip -= drop;
    if (n > drop && (rc = writer_write(&w, out + drop * CHANNELS, n - drop)))
      goto done;
  }
  tail_frames = cf_engine_tail(e);
  if (!(tail = malloc((tail_frames + 1) * CHANNELS * sizeof *tail))) {
    rc = cli_error("demo: out of memory");
    goto done;
  }
  t = cli_now();
  cf_status st = cf_engine_drain(e, tail, tail_frames, &written);
  cli_note_fallback(e, &told);
  if (st != CF_OK) {
    rc = cli_error("demo: drain failed: %s", cf_last_error());
    goto done;
  }
  busy += cli_now() - t;
  /* a latency longer than the signal reaches into the tail */
  size_t drop = skip < written ? skip : written;
  if (written > drop &&
      (rc = writer_write(&w, tail + drop * CHANNELS, written - drop)))
    goto done;
  opened = false;
  if ((rc = writer_close(&w, true)))
    goto done;
  if ((rc = part_commit(tmp, path)))
    goto done;

  /* the full convolution: total + taps - 1 frames */
  size_t frames = total + written - cf_engine_latency(e);
  FILE *rep = report_stream(path);
  fprintf(rep, "wrote %s: %.2f s (%zu frames), stereo, %d Hz, %s\n",
          strcmp(path, "-") ? path : "standard output",
          (double)frames / RATE, frames, RATE, writer_kind());
  fprintf(rep, "engine: %s (set up in %.2f s)\n", cf_engine_describe(e),
          setup);
  fprintf(rep, "room: %d taps per channel (%.1f s), latency %zu frames "
          "(taken out: the file starts with the signal)\n",
          IR_TAPS, (double)IR_TAPS / RATE, cf_engine_latency(e));
  fprintf(rep, "processed %.2f s of audio in %.3f s: %.1fx real time\n",
          (double)total / RATE, busy,
          busy > 0.0 ? ((double)total / RATE) / busy : INFINITY);
done:
  if (opened)
    writer_close(&w, false);
  if (rc && tmp)
    unlink(tmp);
  if (rc && demo_stopped) {
    rc = 130;
    fprintf(stderr, "cudafilter: demo: interrupted; %s %s\n",
            strcmp(path, "-") ? path : "standard output",
            tmp ? "not written" : "incomplete");
  }
  free(tmp);
  free(tail);
  cf_engine_free(e);
  cf_kernel_free(room);
  return rc;
}
