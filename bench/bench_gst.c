/* What the GStreamer elements cost on top of the engine: the same data
 * through `appsrc ! cudafir ! fakesink` (or cudaconvolve) and through the
 * engine alone, in the same process, rounds interleaved (each round's
 * measurements in a shuffled order: round_order). Prints the
 * median time of each and the median of per-round ratios engine/element
 * (1.0: the element adds nothing; the issue asks >= 0.9).
 *
 *   bench_gst [--rounds N] [--audio-seconds S] [--frames N] [--threads N]
 *             [--only audio|video|swap] [--backend cpu|cuda|auto]
 *             [--depth D] [--size WxH]
 *
 * --only swap: what a kernel change costs cudafir's streaming thread
 * instead (bench_swap below; --audio-seconds of input per case, at real
 * time).
 *
 * --backend: both sides' backend (default cpu). --depth: cudaconvolve's
 * pipeline-depth and the engine's pipeline_depth (default 0; the held
 * frames are flushed inside the timing on both sides). --size: the video
 * frames (default 1920x1080, RGBA, 13x13 kernel, 60 fps timestamps).
 * Video frames are allocated with cf_host_alloc() (pinned where a CUDA
 * device exists) and the line says whether the input and the element's
 * output buffers were pinned, and how many times faster than real time
 * (60 fps) the element ran.
 *
 * The element is found through GST_PLUGIN_PATH (the build's plugins/).
 * Buffers are made before timing and pushed by reference, so neither side
 * pays for producing the input; both write their output to memory the
 * harness does not read (fakesink / a scratch buffer). Each audio case is
 * timed twice: with the pushing, the kernel load and the engine build in
 * the time, and "queued" (every buffer pushed during preroll, the time
 * from PLAYING: the streaming alone). Then `filesrc ! wavparse ! cudafir
 * ! fakesink` on a float WAV of the same data, source and parser inside
 * the time (bench_audio_file).
 *
 * Each audio case also has a row against the engine on the very memory
 * the element gets: the pushed GstBuffers mapped one by one (not one
 * array), and for the file, read() from it in wavparse's buffer size
 * (the I/O any program filtering that file pays). */
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#ifdef CF_HAVE_GSTCUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cudafilter/cudafilter.h>
#include <cudafilter/memory.h>

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* What the first output buffer's memory was: 2 pinned, 1 the element's
 * host memory not pinned, 0 another allocator's (the plugin's host memory
 * type, and its custom flag for pinned: plugins/common.h); -1 none seen. */
static int out_mark = -1;
static GstContext *pipeline_context; /* set on the pipeline if not NULL */

static void on_handoff(GstElement *sink, GstBuffer *buf, GstPad *pad,
                       gpointer data)
{
  (void)sink, (void)pad, (void)data;
  if (out_mark >= 0 || gst_buffer_n_memory(buf) == 0)
    return;
  GstMemory *m = gst_buffer_peek_memory(buf, 0);
  out_mark = !gst_memory_is_type(m, "CudaFilterHostMemory")    ? 0
             : GST_MEMORY_FLAG_IS_SET(m, GST_MEMORY_FLAG_LAST) ? 2
                                                               : 1;
}

/* Run `desc` (which holds an appsrc named src, and maybe a fakesink named
 * sink, whose first buffer sets out_mark) with bufs pushed in order; the
 * wall time from PLAYING to EOS, or -1. queued: every buffer is pushed
 * while the pipeline prerolls (caps, the element's engine and the first
 * buffer done there) and the time runs from PLAYING: the streaming alone,
 * as a source whose data is ready gives it, without the pushing thread
 * competing for the 2 cores; else the buffers are pushed from PLAYING on,
 * inside the time. */
static double run_pipeline(const char *desc, GstBuffer **bufs, size_t nbuf,
                           const char *caps, int queued)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  if (!p) {
    fprintf(stderr, "bench_gst: %s: %s\n", desc, err ? err->message : "?");
    g_clear_error(&err);
    return -1;
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(p), "src");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  if (sink) {
    out_mark = -1;
    g_object_set(sink, "signal-handoffs", TRUE, NULL);
    g_signal_connect(sink, "handoff", G_CALLBACK(on_handoff), NULL);
    gst_object_unref(sink);
  }
  if (pipeline_context)
    gst_element_set_context(p, pipeline_context);
  GstCaps *c = gst_caps_from_string(caps);
  /* An unbounded queue (max-bytes 0): with a bound, the pushing thread
   * blocks once it is full and is woken for every buffer the streaming
   * thread takes, a ping-pong of wake-ups on 2 cores that a filesrc
   * pipeline (and the engine-alone loop) does not have; it cost the
   * 1024-tap case a quarter of its speed (ratio 0.75 against 0.90). */
  g_object_set(src, "caps", c, "format", GST_FORMAT_TIME, "block", TRUE,
               "max-bytes", (guint64)0, NULL);
  gst_caps_unref(c);
  /* queued: push while prerolling, then time from PLAYING */
  GstState first = queued ? GST_STATE_PAUSED : GST_STATE_PLAYING;
  if (gst_element_set_state(p, first) == GST_STATE_CHANGE_FAILURE) {
    fprintf(stderr, "bench_gst: %s failed\n",
            gst_element_state_get_name(first));
    gst_object_unref(src);
    gst_object_unref(p);
    return -1;
  }
  double t0 = now();
  for (size_t i = 0; i < nbuf; i++)
    if (gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(bufs[i])) !=
        GST_FLOW_OK)
      break;
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  if (queued) {
    /* prerolled (or failed: the bus says why below) */
    gst_element_get_state(p, NULL, NULL, GST_CLOCK_TIME_NONE);
    t0 = now();
    if (gst_element_set_state(p, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE) {
      fprintf(stderr, "bench_gst: PLAYING failed\n");
      gst_object_unref(src);
      gst_object_unref(p);
      return -1;
    }
  }
  GstBus *bus = gst_element_get_bus(p);
  GstMessage *m = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  double t = now() - t0;
  if (m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
    gst_message_parse_error(m, &err, NULL);
    fprintf(stderr, "bench_gst: pipeline error: %s\n", err->message);
    g_clear_error(&err);
    t = -1;
  }
  if (m)
    gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(p);
  return t;
}

/* The order of a round's k measurements (k <= 8), shuffled round by
 * round: the VM slows down for stretches of a few hundred milliseconds
 * (the same engine call 40% slower), and a fixed order let such a
 * rhythm fall on one side round after round, biasing the median ratio
 * by 0.1 either way between runs. Seeded by the round, so runs repeat. */
static void round_order(int round, int *order, int k)
{
  unsigned seed = 2654435761u * (unsigned)(round + 1);
  for (int i = 0; i < k; i++)
    order[i] = i;
  for (int i = k - 1; i > 0; i--) {
    int j = (int)(rand_r(&seed) % (unsigned)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

static void report(const char *name, double *te, double *tg, int rounds,
                   double units, const char *unit)
{
  double ratio[64];
  for (int r = 0; r < rounds; r++)
    ratio[r] = te[r] / tg[r];
  double me = median(te, rounds), mg = median(tg, rounds);
  double mr = median(ratio, rounds);
  printf("| %s | %.1f | %.1f | %.3g | %.3g | %.2f |\n", name, me * 1e3,
         mg * 1e3, units / me, units / mg, mr);
  printf("RESULT case=%s engine_ms=%.3f element_ms=%.3f ratio=%.3f\n", name,
         me * 1e3, mg * 1e3, mr);
  (void)unit;
}

/* ---- audio ----------------------------------------------------------------- */

static unsigned threads; /* --threads: the engine's, both sides */
static cf_backend backend = CF_BACKEND_CPU; /* --backend, both sides */
static unsigned depth;                       /* --depth (video) */

/* A decaying test kernel, sin(f i) exp(-4 i / taps), as a text file at a
 * fresh name made from the template `path`. */
static void write_kernel(char *path, size_t taps, double f)
{
  int fd = mkstemp(path);
  FILE *kf = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!kf) {
    perror("bench_gst: kernel file");
    exit(1);
  }
  for (size_t i = 0; i < taps; i++)
    fprintf(kf, "%.9g\n", sin(f * (double)i) * exp(-4.0 * (double)i / taps));
  fclose(kf);
}

/* The engine-alone side's engine: the kernel file at `rate`, `ch`
 * channels, the bench's threads and backend. Exits on failure. */
static cf_engine *audio_engine(const char *kpath, unsigned rate, unsigned ch)
{
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = ch;
  cfg.threads = threads;
  cfg.backend = backend;
  cf_kernel *k = NULL;
  cf_engine *e = NULL;
  if (cf_kernel_load(kpath, rate, &k) != CF_OK ||
      cf_engine_new_audio(&cfg, k, &e) != CF_OK) {
    fprintf(stderr, "bench_gst: %s\n", cf_last_error());
    exit(1);
  }
  cf_kernel_free(k); /* the engine has its copy */
  return e;
}

/* `frames` frames of b's memory through e into out; FALSE on an error. */
static gboolean process_buffer(cf_engine *e, GstBuffer *b, float *out,
                               size_t frames)
{
  GstMapInfo mi;
  if (!gst_buffer_map(b, &mi, GST_MAP_READ)) {
    fprintf(stderr, "bench_gst: cannot map a buffer\n");
    return FALSE;
  }
  cf_status s = cf_engine_process(e, (const float *)mi.data, out, frames);
  gst_buffer_unmap(b, &mi);
  if (s != CF_OK)
    fprintf(stderr, "bench_gst: %s\n", cf_last_error());
  return s == CF_OK;
}

static void bench_audio(int rounds, double seconds, size_t taps, size_t block)
{
  const unsigned rate = 48000, ch = 2;
  size_t nbuf = (size_t)(seconds * rate / block);
  GstBuffer **bufs = malloc(nbuf * sizeof *bufs);
  float *x = malloc(nbuf * block * ch * sizeof *x);
  for (size_t i = 0; i < nbuf * block * ch; i++)
    x[i] = (float)sin(0.001 * (double)i);
  for (size_t i = 0; i < nbuf; i++) {
    bufs[i] = gst_buffer_new_memdup(x + i * block * ch,
                                    block * ch * sizeof(float));
    GST_BUFFER_PTS(bufs[i]) = gst_util_uint64_scale(i * block, GST_SECOND,
                                                    rate);
    GST_BUFFER_DURATION(bufs[i]) =
        gst_util_uint64_scale((i + 1) * block, GST_SECOND, rate) -
        GST_BUFFER_PTS(bufs[i]);
  }
  /* the kernel as a text file for kernel-file */
  char kpath[] = "/tmp/bench_gst_kXXXXXX";
  write_kernel(kpath, taps, 0.37);
  char desc[1024];
  snprintf(desc, sizeof desc,
           "appsrc name=src ! cudafir kernel-file=%s backend=%s "
           "threads=%u drain=false ! fakesink sync=false", kpath,
           cf_backend_name(backend), threads);
  const char *caps = "audio/x-raw,format=F32LE,rate=48000,channels=2,"
                     "layout=interleaved";
  /* q: queued (streaming only: from PLAYING, the engine built and the
   * buffers handed over before); the others with the pushing and the
   * kernel load and engine build inside the time */
  double te[64], tg[64], tb[64], teq[64], tgq[64], tbq[64], tm[64], tmq[64];
  float *out = malloc(block * ch * sizeof *out);
  const char *bare = "appsrc name=src ! fakesink sync=false";
  for (int r = 0; r < rounds; r++) {
    int order[6];
    round_order(r, order, 6);
    for (int o = 0; o < 6; o++) {
      double t0, t1;
      cf_engine *e;
      switch (order[o]) {
      case 0:
        /* the engine on the pushed buffers themselves (mapped), where
         * the element reads them: separate allocations, their data and
         * their GstBuffer each a cache miss away, cost a 1-tap engine
         * 0.9 us more per 1024-frame buffer than one array (at 1024
         * taps, nothing seen) */
        t0 = now();
        e = audio_engine(kpath, rate, ch);
        if (!process_buffer(e, bufs[0], out, block))
          exit(1);
        t1 = now();
        for (size_t i = 1; i < nbuf; i++)
          if (!process_buffer(e, bufs[i], out, block))
            exit(1);
        tm[r] = now() - t0;
        tmq[r] = now() - t1;
        cf_engine_free(e);
        break;
      case 1:
        /* the element loads the file and builds the engine inside its
         * run: so does the engine's; the element's preroll takes the
         * first buffer too */
        t0 = now();
        e = audio_engine(kpath, rate, ch);
        if (cf_engine_process(e, x, out, block) != CF_OK)
          exit(1);
        t1 = now();
        for (size_t i = 1; i < nbuf; i++)
          if (cf_engine_process(e, x + i * block * ch, out, block) != CF_OK)
            exit(1);
        te[r] = now() - t0;
        teq[r] = now() - t1;
        cf_engine_free(e);
        break;
      case 2: tg[r] = run_pipeline(desc, bufs, nbuf, caps, 0); break;
      case 3: tgq[r] = run_pipeline(desc, bufs, nbuf, caps, 1); break;
      /* the same buffers through the pipeline without the element */
      case 4: tb[r] = run_pipeline(bare, bufs, nbuf, caps, 0); break;
      case 5: tbq[r] = run_pipeline(bare, bufs, nbuf, caps, 1); break;
      }
    }
    if (tg[r] <= 0 || tb[r] <= 0 || tgq[r] <= 0 || tbq[r] <= 0)
      exit(1);
  }
  char name[96];
  snprintf(name, sizeof name, "cudafir %zu taps, stereo F32, %zu-frame "
           "buffers", taps, block);
  double base = median(tb, rounds), baseq = median(tbq, rounds);
  report(name, te, tg, rounds, (double)nbuf * block / 1e6, "Mframes/s");
  printf("|  (appsrc ! fakesink alone: %.1f ms, %.2f us per buffer) | | | | "
         "| |\n", base * 1e3, base * 1e6 / (double)nbuf);
  size_t at = strlen(name);
  snprintf(name + at, sizeof name - at, ", engine on the pushed buffers");
  report(name, tm, tg, rounds, (double)nbuf * block / 1e6, "Mframes/s");
  snprintf(name + at, sizeof name - at, ", queued");
  report(name, teq, tgq, rounds, (double)(nbuf - 1) * block / 1e6, "Mframes/s");
  printf("|  (queued appsrc ! fakesink alone: %.1f ms, %.2f us per buffer) "
         "| | | | | |\n",
         baseq * 1e3, baseq * 1e6 / (double)nbuf);
  snprintf(name + at, sizeof name - at,
           ", queued, engine on the pushed buffers");
  report(name, tmq, tgq, rounds, (double)(nbuf - 1) * block / 1e6, "Mframes/s");
  unlink(kpath);
  for (size_t i = 0; i < nbuf; i++)
    gst_buffer_unref(bufs[i]);
  free(bufs);
  free(x);
  free(out);
}

/* The same through `filesrc ! wavparse ! cudafir ! fakesink`, as
 * gst-launch runs a file: a float WAV of the data in /tmp (read from the
 * page cache), wavparse's buffers (its size: 1920 frames at 48 kHz), the
 * element taking them over (it may filter in place), the time from
 * PLAYING to EOS after preroll; against the engine alone on the same data
 * in calls of the size wavparse gave (all but its first buffer, which is
 * shorter), from its second call. The source
 * and the parser are inside the element's time: what a file pipeline
 * costs (their time alone is printed). */
static size_t file_frames; /* frames in wavparse's largest buffer */

static GstPadProbeReturn on_file_buffer(GstPad *pad, GstPadProbeInfo *info,
                                        gpointer data)
{
  (void)pad, (void)data;
  size_t f = gst_buffer_get_size(GST_PAD_PROBE_INFO_BUFFER(info)) / 8;
  if (f > file_frames)
    file_frames = f;
  return GST_PAD_PROBE_OK;
}

static double run_file(const char *desc)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  if (!p) {
    fprintf(stderr, "bench_gst: %s: %s\n", desc, err ? err->message : "?");
    exit(1);
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  GstPad *pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_file_buffer, NULL, NULL);
  gst_object_unref(pad);
  gst_object_unref(sink);
  double t = -1;
  if (gst_element_set_state(p, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE &&
      gst_element_get_state(p, NULL, NULL, GST_CLOCK_TIME_NONE) !=
          GST_STATE_CHANGE_FAILURE) {
    double t0 = now();
    if (gst_element_set_state(p, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE) {
      GstBus *bus = gst_element_get_bus(p);
      GstMessage *m = gst_bus_timed_pop_filtered(
          bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
      if (m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS)
        t = now() - t0;
      if (m)
        gst_message_unref(m);
      gst_object_unref(bus);
    }
  }
  if (t < 0)
    fprintf(stderr, "bench_gst: %s failed\n", desc);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return t;
}

static void put_le(FILE *f, uint32_t v, int bytes)
{
  for (int i = 0; i < bytes; i++)
    fputc((int)((v >> (8 * i)) & 0xff), f);
}

static void bench_audio_file(int rounds, double seconds, size_t taps)
{
  const unsigned rate = 48000, ch = 2;
  size_t n = (size_t)(seconds * rate);
  float *x = malloc(n * ch * sizeof *x);
  for (size_t i = 0; i < n * ch; i++)
    x[i] = (float)sin(0.001 * (double)i);
  char wpath[] = "/tmp/bench_gst_wXXXXXX";
  int fd = mkstemp(wpath);
  FILE *wf = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!wf) {
    perror("bench_gst: WAV file");
    exit(1);
  }
  uint32_t data = (uint32_t)(n * ch * sizeof(float));
  fwrite("RIFF", 1, 4, wf);
  put_le(wf, 36 + data, 4);
  fwrite("WAVEfmt ", 1, 8, wf);
  put_le(wf, 16, 4);
  put_le(wf, 3, 2); /* IEEE float */
  put_le(wf, ch, 2);
  put_le(wf, rate, 4);
  put_le(wf, rate * ch * 4, 4);
  put_le(wf, ch * 4, 2);
  put_le(wf, 32, 2);
  fwrite("data", 1, 4, wf);
  put_le(wf, data, 4);
  if (fwrite(x, sizeof *x, n * ch, wf) != n * ch || fclose(wf)) {
    perror("bench_gst: WAV file");
    exit(1);
  }
  char kpath[] = "/tmp/bench_gst_kXXXXXX";
  write_kernel(kpath, taps, 0.37);
  char desc[1024], bare[512];
  snprintf(desc, sizeof desc,
           "filesrc location=%s ! wavparse ! cudafir kernel-file=%s "
           "backend=%s threads=%u drain=false ! fakesink name=sink "
           "sync=false",
           wpath, kpath, cf_backend_name(backend), threads);
  snprintf(bare, sizeof bare,
           "filesrc location=%s ! wavparse ! fakesink name=sink sync=false",
           wpath);
  double te[64], tg[64], tb[64], tr[64];
  /* a first run, not timed, for wavparse's buffer size (the engine's
   * chunks on the other side) */
  file_frames = 0;
  if (run_file(desc) <= 0 || !file_frames)
    exit(1);
  size_t block = file_frames;
  float *out = malloc(block * ch * sizeof *out);
  float *rbuf = malloc(block * ch * sizeof *rbuf);
  for (int r = 0; r < rounds; r++) {
    int order[4];
    round_order(r, order, 4);
    for (int o = 0; o < 4; o++) {
      double t0;
      cf_engine *e;
      int in;
      switch (order[o]) {
      case 0:
        tg[r] = run_file(desc);
        if (tg[r] <= 0)
          exit(1);
        break;
      case 1: /* the array in wavparse's chunks, the first one untimed
                 (the element's preroll takes it) */
        e = audio_engine(kpath, rate, ch);
        if (cf_engine_process(e, x, out, block) != CF_OK) {
          fprintf(stderr, "bench_gst: %s\n", cf_last_error());
          exit(1);
        }
        t0 = now();
        for (size_t at = block; at < n;) {
          size_t m = n - at < block ? n - at : block;
          if (cf_engine_process(e, x + at * ch, out, m) != CF_OK)
            exit(1);
          at += m;
        }
        te[r] = now() - t0;
        cf_engine_free(e);
        break;
      case 2:
        /* reading the file as filesrc does, read() into a buffer of the
         * same size, wavparse's header skipped: the I/O a program using
         * the engine alone on this file pays as well */
        e = audio_engine(kpath, rate, ch);
        if (cf_engine_process(e, x, out, block) != CF_OK)
          exit(1);
        in = open(wpath, O_RDONLY);
        t0 = now();
        if (in < 0 ||
            lseek(in, (off_t)(44 + block * ch * sizeof *x), SEEK_SET) < 0) {
          perror("bench_gst: WAV file");
          exit(1);
        }
        for (;;) {
          ssize_t got = read(in, rbuf, block * ch * sizeof *x);
          if (got < 0) {
            perror("bench_gst: WAV file");
            exit(1);
          }
          size_t m = (size_t)got / (ch * sizeof *x);
          if (!m)
            break;
          if (cf_engine_process(e, rbuf, out, m) != CF_OK)
            exit(1);
        }
        tr[r] = now() - t0;
        close(in);
        cf_engine_free(e);
        break;
      case 3:
        tb[r] = run_file(bare);
        if (tb[r] <= 0)
          exit(1);
        break;
      }
    }
  }
  char name[128];
  snprintf(name, sizeof name,
           "cudafir %zu taps, stereo F32, filesrc ! "
           "wavparse (%zu-frame buffers)",
           taps, block);
  double base = median(tb, rounds);
  report(name, te, tg, rounds, (double)(n - block) / 1e6, "Mframes/s");
  printf("|  (filesrc ! wavparse ! fakesink alone: %.1f ms, %.2f us per "
         "buffer) | | | | | |\n",
         base * 1e3, base * 1e6 * (double)block / (double)n);
  size_t at = strlen(name);
  snprintf(name + at, sizeof name - at, ", engine reading the file");
  report(name, tr, tg, rounds, (double)(n - block) / 1e6, "Mframes/s");
  unlink(kpath);
  unlink(wpath);
  free(x);
  free(out);
  free(rbuf);
}

/* ---- kernel changes while playing (--only swap) ---------------------------- */

/* What a kernel change costs the streaming thread: 64-frame stereo
 * buffers through appsrc ! cudafir ! fakesink, pushed at real time
 * (CF_BENCH_PACE=N: N times faster),
 * while a second thread sets kernel-file to one of two kernels of `taps`
 * every 100 ms. Two pad probes time each buffer inside the element; the
 * slowest buffers are the swaps (every other buffer takes microseconds).
 * Prints the swaps made, the buffers' p50 and p99, and the mean and max
 * of the `swaps` slowest buffers, timed from 20 ms before the first
 * change (the element builds its engine at the first buffer). */
typedef struct swap_run {
  gint64 t_in;
  GArray *us;          /* per buffer, in the streaming thread */
  GstElement *fir;
  const char *file[2];
  volatile gint stop;
  volatile gint on; /* timing: from just before the first change (the
                       element builds its engine at the first buffer) to
                       the last buffer pushed */
  int changes;
} swap_run;

static GstPadProbeReturn sw_in(GstPad *pad, GstPadProbeInfo *info, gpointer u)
{
  (void)pad, (void)info;
  ((swap_run *)u)->t_in = g_get_monotonic_time();
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn sw_out(GstPad *pad, GstPadProbeInfo *info,
                                gpointer u)
{
  swap_run *r = u;
  (void)pad, (void)info;
  double d = (double)(g_get_monotonic_time() - r->t_in);
  if (g_atomic_int_get(&r->on))
    g_array_append_val(r->us, d);
  return GST_PAD_PROBE_OK;
}

static gpointer sw_setter(gpointer u)
{
  swap_run *r = u;
  g_usleep(200000);
  g_atomic_int_set(&r->on, 1);
  g_usleep(20000);
  for (int i = 1; !g_atomic_int_get(&r->stop); i++) {
    g_object_set(r->fir, "kernel-file", r->file[i % 2], NULL);
    r->changes++;
    g_usleep(100000);
  }
  return NULL;
}

static void bench_swap(double seconds, size_t taps)
{
  const unsigned rate = 48000, ch = 2, block = 64;
  size_t nbuf = (size_t)(seconds * rate / block);
  char ka[] = "/tmp/bench_gst_kaXXXXXX", kb[] = "/tmp/bench_gst_kbXXXXXX";
  write_kernel(ka, taps, 0.37);
  write_kernel(kb, taps, 0.11);
  char desc[1024];
  snprintf(desc, sizeof desc,
           "appsrc name=src ! cudafir name=f kernel-file=%s backend=%s "
           "block-size=%u threads=%u crossfade=50000000 drain=false ! "
           "fakesink sync=false",
           ka, cf_backend_name(backend), block, threads);
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  if (!p) {
    fprintf(stderr, "bench_gst: %s\n", err ? err->message : desc);
    exit(1);
  }
  swap_run r = {0, g_array_new(FALSE, FALSE, sizeof(double)), NULL,
                {ka, kb}, 0, 0, 0};
  r.fir = gst_bin_get_by_name(GST_BIN(p), "f");
  GstPad *in = gst_element_get_static_pad(r.fir, "sink");
  GstPad *out = gst_element_get_static_pad(r.fir, "src");
  gst_pad_add_probe(in, GST_PAD_PROBE_TYPE_BUFFER, sw_in, &r, NULL);
  gst_pad_add_probe(out, GST_PAD_PROBE_TYPE_BUFFER, sw_out, &r, NULL);
  gst_object_unref(in);
  gst_object_unref(out);
  GstElement *src = gst_bin_get_by_name(GST_BIN(p), "src");
  GstCaps *c = gst_caps_from_string("audio/x-raw,format=F32LE,rate=48000,"
                                    "channels=2,layout=interleaved");
  g_object_set(src, "caps", c, "format", GST_FORMAT_TIME, NULL);
  gst_caps_unref(c);
  gst_element_set_state(p, GST_STATE_PLAYING);
  GThread *setter = g_thread_new("setter", sw_setter, &r);
  float *x = malloc(block * ch * sizeof *x);
  const double pace = getenv("CF_BENCH_PACE") ? atof(getenv("CF_BENCH_PACE"))
                                              : 1.0;
  double t0 = now();
  for (size_t i = 0; i < nbuf; i++) {
    for (size_t j = 0; j < block * ch; j++)
      x[j] = (float)sin(0.001 * (double)(i * block * ch + j));
    GstBuffer *b = gst_buffer_new_memdup(x, block * ch * sizeof *x);
    GST_BUFFER_PTS(b) = gst_util_uint64_scale(i * block, GST_SECOND, rate);
    if (gst_app_src_push_buffer(GST_APP_SRC(src), b) != GST_FLOW_OK)
      break;
    double wait = t0 + (double)(i + 1) * block / rate / pace - now();
    if (wait > 0)
      g_usleep((gulong)(wait * 1e6));
  }
  /* the end (EOS, the last change) is not timed */
  g_atomic_int_set(&r.on, 0);
  g_atomic_int_set(&r.stop, 1);
  g_thread_join(setter);
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstBus *bus = gst_element_get_bus(p);
  GstMessage *m = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (m)
    gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(r.fir);
  gst_object_unref(p);
  double *v = (double *)r.us->data;
  size_t n = r.us->len;
  qsort(v, n, sizeof *v, cmp_d);
  size_t k = (size_t)r.changes < n ? (size_t)r.changes : n;
  double top = 0;
  for (size_t i = n - k; i < n; i++)
    top += v[i];
  printf("| cudafir %zu taps, stereo, 64-frame buffers | %d | %.1f | %.1f | "
         "%.1f | %.1f |\n",
         taps, r.changes, v[n / 2], v[(size_t)(0.99 * (double)(n - 1))],
         k ? top / (double)k : 0.0, v[n - 1]);
  printf("RESULT case=swap taps=%zu changes=%d p50_us=%.1f p99_us=%.1f "
         "swap_mean_us=%.1f max_us=%.1f\n",
         taps, r.changes, v[n / 2], v[(size_t)(0.99 * (double)(n - 1))],
         k ? top / (double)k : 0.0, v[n - 1]);
  g_array_free(r.us, TRUE);
  free(x);
  unlink(ka);
  unlink(kb);
}

/* ---- video ----------------------------------------------------------------- */

/* The video cases' 13x13 kernel: not separable, near the identity. */
#define K 13
static void video_taps(float taps[K * K])
{
  for (unsigned i = 0; i < K * K; i++)
    taps[i] = (float)(0.01 * sin(1.7 * i) + (i == K * K / 2));
}

/* appsrc ! cudaconvolve (those taps, backend be, depth) ! fakesink */
static char *video_desc(const float *taps, cf_backend be)
{
  GString *arr = g_string_new("<");
  for (unsigned i = 0; i < K * K; i++)
    g_string_append_printf(arr, "%s%.9g", i ? ", " : "", taps[i]);
  g_string_append(arr, ">");
  char *desc = g_strdup_printf(
      "appsrc name=src ! cudaconvolve kernel=\"%s\" kernel-width=%u "
      "kernel-height=%u backend=%s threads=%u pipeline-depth=%u ! "
      "fakesink name=sink sync=false",
      arr->str, K, K, cf_backend_name(be), threads, depth);
  g_string_free(arr, TRUE);
  return desc;
}

/* The engine-alone side's engine, RGBA w x h (built inside the timed run,
 * as the element builds its own). Exits on failure. */
static cf_engine *video_engine(unsigned w, unsigned hgt, cf_backend be,
                               const float *taps)
{
  cf_video_config cfg;
  cf_video_config_init(&cfg);
  cfg.width = w;
  cfg.height = hgt;
  cfg.format = CF_PIX_RGBA;
  cfg.backend = be;
  cfg.threads = threads;
  cfg.pipeline_depth = depth;
  cf_kernel2d *k = NULL;
  cf_engine *e = NULL;
  if (cf_kernel2d_new(1, K, K, taps, &k) != CF_OK ||
      cf_engine_new_video(&cfg, k, &e) != CF_OK) {
    fprintf(stderr, "bench_gst: %s\n", cf_last_error());
    exit(1);
  }
  cf_kernel2d_free(k);
  return e;
}

static void bench_video(int rounds, size_t frames, unsigned w, unsigned hgt)
{
  float taps[K * K];
  video_taps(taps);
  size_t fsize = (size_t)w * hgt * 4;
  /* 8 distinct frames in host memory from cf_host_alloc (pinned where a
   * CUDA device exists), cycled: both sides read the same memory */
  enum { NDISTINCT = 8 };
  guint8 *pix[NDISTINCT];
  int in_pinned = 1;
  for (unsigned f = 0; f < NDISTINCT; f++) {
    int pinned = 0;
    pix[f] = cf_host_alloc(fsize, &pinned);
    if (!pix[f]) {
      fprintf(stderr, "bench_gst: %s\n", cf_last_error());
      exit(1);
    }
    in_pinned &= pinned;
    for (size_t i = 0; i < fsize; i++)
      pix[f][i] = (guint8)((i + 7919 * f) * 2654435761u >> 24);
  }
  GstBuffer **bufs = malloc(frames * sizeof *bufs);
  for (size_t i = 0; i < frames; i++) {
    /* wrapped, not copied: the element reads the pinned frames */
    bufs[i] = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY,
                                          pix[i % NDISTINCT], fsize, 0, fsize,
                                          NULL, NULL);
    GST_BUFFER_PTS(bufs[i]) = gst_util_uint64_scale(i, GST_SECOND, 60);
    GST_BUFFER_DURATION(bufs[i]) = GST_SECOND / 60;
  }
  char *desc = video_desc(taps, backend);
  char caps[256];
  snprintf(caps, sizeof caps, "video/x-raw,format=RGBA,width=%u,height=%u,"
           "framerate=60/1", w, hgt);
  double te[64], tg[64];
  guint8 *out = cf_host_alloc(fsize, NULL);
  char used[320] = "";
  int marks = -1;
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    cf_engine *e = video_engine(w, hgt, backend, taps);
    cf_frame in, o;
    cf_frame_layout(CF_PIX_RGBA, w, hgt, out, &o);
    for (size_t i = 0; i < frames; i++) {
      cf_frame_layout(CF_PIX_RGBA, w, hgt, pix[i % NDISTINCT], &in);
      if (cf_engine_process_frame(e, &in, &o) != CF_OK) {
        fprintf(stderr, "bench_gst: %s\n", cf_last_error());
        exit(1);
      }
    }
    for (int got = 1; got;)
      if (cf_engine_flush_frame(e, &o, &got) != CF_OK)
        exit(1);
    te[r] = now() - t0;
    snprintf(used, sizeof used, "%s", cf_engine_describe(e));
    cf_engine_free(e);
    tg[r] = run_pipeline(desc, bufs, frames, caps, 0);
    if (tg[r] <= 0)
      exit(1);
    marks = out_mark;
  }
  char name[96];
  snprintf(name, sizeof name, "cudaconvolve 13x13 RGBA %ux%u", w, hgt);
  report(name, te, tg, rounds, (double)frames, "frames/s");
  double fps = (double)frames / median(tg, rounds);
  printf("|  (%s, depth %u: %.1f frames/s through the element = %.1fx real "
         "time at 60 fps; input %s, element output %s; engine: %s) | | | | "
         "| |\n",
         cf_backend_name(backend), depth, fps, fps / 60.0,
         in_pinned ? "pinned" : "not pinned",
         marks == 2   ? "pinned"
         : marks == 1 ? "host memory, not pinned"
         : marks == 0 ? "another allocator's memory"
                      : "not seen",
         used);
  printf("RESULT case=%s backend=%s depth=%u element_fps=%.2f "
         "x_realtime_60=%.2f in_pinned=%d out_mark=%d\n",
         name, cf_backend_name(backend), depth, fps, fps / 60.0, in_pinned,
         marks);
  for (size_t i = 0; i < frames; i++)
    gst_buffer_unref(bufs[i]);
  free(bufs);
  for (unsigned f = 0; f < NDISTINCT; f++)
    cf_host_free(pix[f]);
  cf_host_free(out);
  g_free(desc);
}

#ifdef CF_HAVE_GSTCUDA
/* Frames that stay on the device: GstCudaMemory in (the context shared
 * with the element through a GstContext), GstCudaMemory out of the
 * element's own pool; the engine alone on the same device frames (mapped
 * with GST_MAP_CUDA) into one device output. No host copy on either side:
 * the figure a decoder-to-encoder pipeline (nvcodec) would see. */
static void bench_video_cuda(int rounds, size_t frames, unsigned w,
                             unsigned hgt)
{
  if (!gst_cuda_load_library()) {
    printf("| cudaconvolve, CUDA memory | no libcuda for gstcuda | | | | |\n");
    return;
  }
  GstCudaContext *ctx = gst_cuda_context_new(0);
  if (!ctx) {
    printf("| cudaconvolve, CUDA memory | no GstCudaContext | | | | |\n");
    return;
  }
  gst_cuda_memory_init_once();
  GstAllocator *alloc = gst_allocator_find(GST_CUDA_MEMORY_TYPE_NAME);
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGBA, w, hgt);
  float taps[K * K];
  video_taps(taps);
  enum { NDISTINCT = 8 };
  GstMemory *mem[NDISTINCT + 1];
  for (unsigned f = 0; f <= NDISTINCT; f++) { /* the last: engine output */
    mem[f] = gst_cuda_allocator_alloc(GST_CUDA_ALLOCATOR(alloc), ctx, &info);
    GstMapInfo map;
    if (!mem[f] || !gst_memory_map(mem[f], &map, GST_MAP_WRITE)) {
      fprintf(stderr, "bench_gst: cannot allocate CUDA memory\n");
      exit(1);
    }
    for (size_t i = 0; i < map.size; i++)
      map.data[i] = (guint8)((i + 7919 * f) * 2654435761u >> 24);
    gst_memory_unmap(mem[f], &map);
    /* uploaded now, not in the timed runs */
    if (!gst_memory_map(mem[f], &map, GST_MAP_READ | GST_MAP_CUDA))
      exit(1);
    gst_memory_unmap(mem[f], &map);
  }
  GstBuffer **bufs = malloc(frames * sizeof *bufs);
  for (size_t i = 0; i < frames; i++) {
    bufs[i] = gst_buffer_new();
    gst_buffer_append_memory(bufs[i], gst_memory_ref(mem[i % NDISTINCT]));
    GST_BUFFER_PTS(bufs[i]) = gst_util_uint64_scale(i, GST_SECOND, 60);
    GST_BUFFER_DURATION(bufs[i]) = GST_SECOND / 60;
  }
  char *desc = video_desc(taps, CF_BACKEND_CUDA);
  char caps[256];
  snprintf(caps, sizeof caps, "video/x-raw(memory:CUDAMemory),format=RGBA,"
           "width=%u,height=%u,framerate=60/1", w, hgt);
  pipeline_context = gst_context_new_cuda_context(ctx);
  double te[64], tg[64];
  char used[320] = "";
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    cf_engine *e = video_engine(w, hgt, CF_BACKEND_CUDA, taps);
    GstMapInfo om;
    if (!gst_memory_map(mem[NDISTINCT], &om, GST_MAP_WRITE | GST_MAP_CUDA))
      exit(1);
    const GstVideoInfo *ci = &GST_CUDA_MEMORY_CAST(mem[NDISTINCT])->info;
    cf_frame o = {{om.data}, {(size_t)GST_VIDEO_INFO_PLANE_STRIDE(ci, 0)}};
    for (size_t i = 0; i < frames; i++) {
      GstMemory *m = mem[i % NDISTINCT];
      GstMapInfo im;
      if (!gst_memory_map(m, &im, GST_MAP_READ | GST_MAP_CUDA))
        exit(1);
      cf_frame in = {{im.data},
                     {(size_t)GST_VIDEO_INFO_PLANE_STRIDE(
                         &GST_CUDA_MEMORY_CAST(m)->info, 0)}};
      cf_status st = cf_engine_process_frame(e, &in, &o);
      gst_memory_unmap(m, &im);
      if (st != CF_OK) {
        fprintf(stderr, "bench_gst: %s\n", cf_last_error());
        exit(1);
      }
    }
    for (int got = 1; got;)
      if (cf_engine_flush_frame(e, &o, &got) != CF_OK)
        exit(1);
    gst_memory_unmap(mem[NDISTINCT], &om);
    te[r] = now() - t0;
    snprintf(used, sizeof used, "%s", cf_engine_describe(e));
    cf_engine_free(e);
    tg[r] = run_pipeline(desc, bufs, frames, caps, 0);
    if (tg[r] <= 0)
      exit(1);
  }
  char name[96];
  snprintf(name, sizeof name, "cudaconvolve 13x13 RGBA %ux%u CUDA memory", w,
           hgt);
  report(name, te, tg, rounds, (double)frames, "frames/s");
  double fps = (double)frames / median(tg, rounds);
  printf("|  (depth %u: %.1f frames/s through the element = %.1fx real time "
         "at 60 fps, frames on the device both sides; engine: %s) | | | | "
         "| |\n",
         depth, fps, fps / 60.0, used);
  printf("RESULT case=%s backend=cuda depth=%u element_fps=%.2f "
         "x_realtime_60=%.2f\n",
         name, depth, fps, fps / 60.0);
  gst_context_unref(pipeline_context);
  pipeline_context = NULL;
  for (size_t i = 0; i < frames; i++)
    gst_buffer_unref(bufs[i]);
  free(bufs);
  for (unsigned f = 0; f <= NDISTINCT; f++)
    gst_memory_unref(mem[f]);
  g_free(desc);
  gst_object_unref(alloc);
  gst_object_unref(ctx);
}
#endif

int main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  int rounds = 5;
  double seconds = 20;
  size_t frames = 60;
  const char *only = NULL;
  unsigned vw = 1920, vh = 1080;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--audio-seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
      frames = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--backend") && i + 1 < argc &&
             cf_backend_from_string(argv[i + 1], &backend) == CF_OK)
      i++;
    else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
      depth = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--size") && i + 1 < argc &&
             sscanf(argv[i + 1], "%ux%u", &vw, &vh) == 2 && vw && vh)
      i++;
    else {
      fprintf(stderr, "usage: bench_gst [--rounds N] [--audio-seconds S] "
              "[--frames N] [--threads N] [--only audio|video|swap] "
              "[--backend cpu|cuda|auto] [--depth D] [--size WxH]\n");
      return 2;
    }
  }
  /* (--rounds 0 became 5 in silence; --audio-seconds inf or nan made a
   * buffer count past size_t) */
  if (rounds < 1 || rounds > 64 || !(seconds > 0.0) || seconds > 3600.0 ||
      frames < 1 || frames > 100000) {
    fprintf(stderr, "bench_gst: need --rounds 1..64, --audio-seconds in "
            "(0, 3600], --frames 1..100000\n");
    return 2;
  }
  /* without the plugin every pipeline fails with only "Internal data
   * stream error" (appsrc not linked): say what is missing instead */
  static const char *const need[] = {"cudafir", "cudaconvolve"};
  for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
    GstElementFactory *f = gst_element_factory_find(need[i]);
    if (!f) {
      fprintf(stderr,
              "bench_gst: no element %s: set GST_PLUGIN_PATH to the "
              "build's plugins folder (GST_PLUGIN_PATH=build/plugins "
              "from the source root) or meson install\n",
              need[i]);
      return 1;
    }
    gst_object_unref(f);
  }
  if (only && !strcmp(only, "swap")) {
    printf("| case | kernel changes | buffer p50 us | p99 us | the "
           "changes' buffers, mean us | max us |\n"
           "|---|---:|---:|---:|---:|---:|\n");
    for (int r = 0; r < rounds; r++) {
      bench_swap(seconds, 16384);
      bench_swap(seconds, 131072);
    }
    return 0;
  }
  printf("| case | engine ms | element ms | engine units/s | element "
         "units/s | engine/element (median of rounds) |\n"
         "|---|---:|---:|---:|---:|---:|\n");
  if (!only || !strcmp(only, "audio")) {
    bench_audio(rounds, seconds, 1024, 1024);
    bench_audio(rounds, seconds, 65536, 1024);
    bench_audio(rounds, seconds, 1024, 4096);
    bench_audio(rounds, seconds, 65536, 4096);
    bench_audio_file(rounds, seconds, 1024);
    bench_audio_file(rounds, seconds, 65536);
  }
  if (!only || !strcmp(only, "video")) {
    GstElementFactory *f = gst_element_factory_find("cudaconvolve");
    if (f) {
      gst_object_unref(f);
      bench_video(rounds, frames, vw, vh);
#ifdef CF_HAVE_GSTCUDA
      if (backend == CF_BACKEND_CUDA)
        bench_video_cuda(rounds, frames, vw, vh);
#endif
    } else {
      printf("| cudaconvolve | not found (GST_PLUGIN_PATH?) | | | | |\n");
    }
  }
  return 0;
}
