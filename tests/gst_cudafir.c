/* The cudafir element through GstHarness, against the float64 reference
 * (tests/ref.h) on random kernels, formats, channel counts and buffer
 * sizes: content, timestamps, latency (query, property and the delay of
 * an impulse), DISCONT, flush, EOS drain, caps renegotiation, kernel swap
 * while playing, matrix routing, gain (ramps, GstController) and trim,
 * bad property values, and
 * a real filesrc ! rawaudioparse ! cudafir ! filesink pipeline, and
 * gapless playback of WAV items through playbin3, playbin and concat.
 *
 * Runs on the backend the element picks (auto: CUDA where a device is
 * usable, else the CPU); CF_GST_BACKEND=cpu|cuda forces one. Environment:
 * CF_TEST_SEED to replay, CF_TEST_FILTER / CF_TEST_SKIP. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <gst/audio/audio.h>
#include <gst/check/gstharness.h>
#include <gst/controller/gstdirectcontrolbinding.h>
#include <gst/controller/gstinterpolationcontrolsource.h>
#include <gst/gst.h>

#include <cudafilter/cudafilter.h>

#include "check.h"
#include "gst_registry.h"
#include "gst_launch.h"
#include "gst_lock_watch.h"
#include "gst_test_metas.h"
#include "fixture.h"
#include "gpu/steady.h"
#include "ref.h"

static ref_rng rng;
static const char *backend = "auto";

/* ---- helpers -------------------------------------------------------------- */

/* The taps gfloat and gdouble in turn (test_kernel_number_types tries
 * the other number types). */
static void set_taps(GstElement *e, const float *h, size_t len)
{
  static unsigned calls;
  gboolean dbl = calls++ % 2;
  GValue arr = G_VALUE_INIT;
  gst_value_array_init(&arr, (guint)len);
  for (size_t i = 0; i < len; i++) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, dbl ? G_TYPE_DOUBLE : G_TYPE_FLOAT);
    if (dbl)
      g_value_set_double(&v, h[i]);
    else
      g_value_set_float(&v, h[i]);
    gst_value_array_append_and_take_value(&arr, &v);
  }
  g_object_set_property(G_OBJECT(e), "kernel", &arr);
  g_value_unset(&arr);
}

static size_t get_ntaps(GstElement *e, float *first)
{
  GValue arr = G_VALUE_INIT;
  g_value_init(&arr, GST_TYPE_ARRAY);
  g_object_get_property(G_OBJECT(e), "kernel", &arr);
  size_t n = gst_value_array_get_size(&arr);
  if (n && first)
    *first = g_value_get_float(gst_value_array_get_value(&arr, 0));
  g_value_unset(&arr);
  return n;
}

/* Random kernel with a decaying tail, scaled to unit L2 norm (so integer
 * outputs stay in range and are not clipped). */
static float *random_kernel(size_t len)
{
  float *h = xalloc(len * sizeof *h);
  double e = 0;
  for (size_t i = 0; i < len; i++) {
    h[i] = ref_rng_sym(&rng) * (float)exp(-3.0 * (double)i / (double)len);
    e += (double)h[i] * h[i];
  }
  float g = e > 0 ? (float)(1.0 / sqrt(e)) : 1.0f;
  for (size_t i = 0; i < len; i++)
    h[i] *= g;
  return h;
}

/* min(r, left), with r drawn once (MIN would draw twice). */
static size_t pick(size_t r, size_t left)
{
  return r < left ? r : left;
}

static size_t random_len(void)
{
  switch (ref_rng_u64(&rng) % 4) {
  case 0: return ref_rng_range(&rng, 1, 8);
  case 1: return ref_rng_range(&rng, 9, 200);
  case 2: return ref_rng_range(&rng, 201, 3000);
  default: return ref_rng_range(&rng, 3001, 20000);
  }
}

static GstHarness *new_fir(void)
{
  GstElementFactory *f = gst_element_factory_find("cudafir");
  CHECK(f, "element cudafir not found: is GST_PLUGIN_PATH the build's "
        "plugins/ directory?");
  gst_object_unref(f);
  GstHarness *h = gst_harness_new("cudafir");
  gst_util_set_object_arg(G_OBJECT(h->element), "backend", backend);
  return h;
}

static void set_caps(GstHarness *h, GstAudioFormat f, unsigned rate,
                     unsigned cin, unsigned cout);

/* A cudafir of taps hk at block-size `block`, F32 ch -> ch at rate. */
static GstHarness *fir_f32(const float *hk, size_t len, guint block,
                           unsigned ch, unsigned rate)
{
  GstHarness *h = new_fir();
  set_taps(h->element, hk, len);
  g_object_set(h->element, "block-size", block, NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
  return h;
}

static const char *fmt_name(GstAudioFormat f)
{
  return gst_audio_format_to_string(f);
}

/* cout 0: downstream takes any channel count (the element's caps say).
 * Input over 2 channels is positioned (a 5.1 file's 0x3f: the element
 * took only unpositioned input with per-channel kernels, QA); output
 * keeps those positions where the count stays, and has none where a
 * matrix changes it. */
static void set_caps(GstHarness *h, GstAudioFormat f, unsigned rate,
                     unsigned cin, unsigned cout)
{
  char in[256], out[256], min[64] = "", mout[64] = "";
  guint64 mask = cin > 2 ? gst_audio_channel_get_fallback_mask((gint)cin) : 0;
  if (cin > 2)
    snprintf(min, sizeof min, ",channel-mask=(bitmask)0x%" G_GINT64_MODIFIER
             "x", mask);
  if (cout > 2)
    snprintf(mout, sizeof mout, ",channel-mask=(bitmask)0x%" G_GINT64_MODIFIER
             "x", cout == cin ? mask : 0);
  snprintf(in, sizeof in, "audio/x-raw,format=%s,rate=%u,channels=%u,"
           "layout=interleaved%s", fmt_name(f), rate, cin, min);
  snprintf(out, sizeof out, "audio/x-raw,format=%s,rate=%u,channels=%u,"
           "layout=interleaved%s", fmt_name(f), rate, cout, mout);
  if (cout)
    gst_harness_set_caps_str(h, in, out);
  else
    gst_harness_set_src_caps_str(h, in);
}

static size_t sample_size(GstAudioFormat f)
{
  return f == GST_AUDIO_FORMAT_S16LE ? 2 : f == GST_AUDIO_FORMAT_F64LE ? 8 : 4;
}

/* Float samples (values as the element reads them) to bytes of f; the
 * float values are replaced by what the format can hold, so the reference
 * sees exactly the element's input. */
static void encode(GstAudioFormat f, float *x, size_t n, void *dst)
{
  for (size_t i = 0; i < n; i++) {
    switch (f) {
    case GST_AUDIO_FORMAT_S16LE: { /* |x| <= 0.5: no clipping */
      gint16 v = (gint16)lrintf(x[i] * 32768.0f);
      ((gint16 *)dst)[i] = GINT16_TO_LE(v);
      x[i] = (float)v / 32768.0f;
      break;
    }
    case GST_AUDIO_FORMAT_S32LE: {
      gint32 v = (gint32)lrint((double)x[i] * 2147483648.0);
      ((gint32 *)dst)[i] = GINT32_TO_LE(v);
      x[i] = (float)((double)v / 2147483648.0);
      break;
    }
    case GST_AUDIO_FORMAT_F64LE:
      ((double *)dst)[i] = x[i];
      break;
    default:
      ((float *)dst)[i] = x[i];
    }
  }
}

static double decode1(GstAudioFormat f, const guint8 *p, size_t i)
{
  switch (f) {
  case GST_AUDIO_FORMAT_S16LE:
    return GINT16_FROM_LE(((const gint16 *)p)[i]) / 32768.0;
  case GST_AUDIO_FORMAT_S32LE:
    return GINT32_FROM_LE(((const gint32 *)p)[i]) / 2147483648.0;
  case GST_AUDIO_FORMAT_F64LE:
    return ((const double *)p)[i];
  default:
    return ((const float *)p)[i];
  }
}

/* What came out: samples (as float), frame count, and the check that
 * timestamps run on without gaps from `t0`. */
typedef struct {
  float *y;
  size_t frames, cap;
  unsigned channels;
  GstClockTime t0;
  unsigned rate;
  size_t buffers;
  int discont_seen;
  /* where the input's timestamps moved by less than a discontinuity:
   * from frame jump_at on, times count from jump_ts (G_MAXUINT64: no
   * move) */
  guint64 jump_at;
  GstClockTime jump_ts;
  gboolean times_unchecked; /* more moves than the element times exactly */
  size_t droppable_seen;    /* buffers flagged DROPPABLE */
  guint64 off0;             /* the offset of frame 0 (push_offset0) */
} collected;

/* The time of output frame k, as its input frame had it; end: where
 * frames up to k end (frame k - 1's count). */
static GstClockTime collected_time(const collected *c, guint64 k, int end)
{
  guint64 by = end && k ? k - 1 : k;
  if (by >= c->jump_at)
    return c->jump_ts + gst_util_uint64_scale_int_round(k - c->jump_at,
                                                        GST_SECOND,
                                                        (gint)c->rate);
  return c->t0 + gst_util_uint64_scale_int_round(k, GST_SECOND, (gint)c->rate);
}

static void collect_init(collected *c, unsigned channels, unsigned rate,
                         GstClockTime t0, size_t cap)
{
  memset(c, 0, sizeof *c);
  c->channels = channels;
  c->rate = rate;
  c->t0 = t0;
  c->cap = cap;
  c->jump_at = G_MAXUINT64;
  c->y = xalloc(cap * channels * sizeof(float));
}

/* Take one output buffer: check its size, timestamps and offsets. */
static void collect_buf(collected *c, GstBuffer *b, GstAudioFormat f)
{
  GstMapInfo m;
  assert_true(gst_buffer_map(b, &m, GST_MAP_READ));
  size_t bpf = sample_size(f) * c->channels;
  CHECK(m.size % bpf == 0, "buffer of %zu bytes, frames of %zu", m.size, bpf);
  size_t n = m.size / bpf;
  CHECK(n > 0, "buffer %zu (pts %" GST_TIME_FORMAT ") is empty", c->buffers,
        GST_TIME_ARGS(GST_BUFFER_PTS(b)));
  GstAudioMeta *am = gst_buffer_get_audio_meta(b);
  CHECK(!am || am->samples == n,
        "buffer %zu holds %zu frames, its audio meta says %zu", c->buffers, n,
        am ? am->samples : 0);
  CHECK(c->frames + n <= c->cap, "more output than expected: %zu + %zu > "
        "%zu frames", c->frames, n, c->cap);
  for (size_t i = 0; i < n * c->channels; i++)
    c->y[c->frames * c->channels + i] = (float)decode1(f, m.data, i);
  if (c->times_unchecked)
    goto stamped;
  if (!GST_CLOCK_TIME_IS_VALID(c->t0)) { /* input without timestamps */
    CHECK(!GST_BUFFER_PTS_IS_VALID(b) && !GST_BUFFER_DURATION_IS_VALID(b) &&
              GST_BUFFER_OFFSET(b) == GST_BUFFER_OFFSET_NONE,
          "buffer %zu: pts %" GST_TIME_FORMAT ", offset %" G_GUINT64_FORMAT
          " from input without timestamps or offsets",
          c->buffers, GST_TIME_ARGS(GST_BUFFER_PTS(b)), GST_BUFFER_OFFSET(b));
    goto stamped;
  }
  CHECK(c->frames >= c->jump_at || c->frames + n <= c->jump_at,
        "buffer %zu (frames %zu..%zu) spans the move of the input's "
        "timestamps at frame %" G_GUINT64_FORMAT, c->buffers, c->frames,
        c->frames + n, c->jump_at);
  GstClockTime want = collected_time(c, c->frames, 0);
  GstClockTime end = collected_time(c, c->frames + n, 1);
  CHECK(GST_BUFFER_PTS(b) == want, "buffer %zu: pts %" GST_TIME_FORMAT
        ", expected %" GST_TIME_FORMAT " (frame %zu)", c->buffers,
        GST_TIME_ARGS(GST_BUFFER_PTS(b)), GST_TIME_ARGS(want), c->frames);
  CHECK(GST_BUFFER_DURATION(b) == end - want, "buffer %zu: duration %"
        GST_TIME_FORMAT ", expected %" GST_TIME_FORMAT, c->buffers,
        GST_TIME_ARGS(GST_BUFFER_DURATION(b)), GST_TIME_ARGS(end - want));
  CHECK(GST_BUFFER_OFFSET(b) == c->off0 + c->frames &&
            GST_BUFFER_OFFSET_END(b) == c->off0 + c->frames + n,
        "buffer %zu: offsets %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT
        ", expected %" G_GUINT64_FORMAT " + %zu..%zu",
        c->buffers, GST_BUFFER_OFFSET(b), GST_BUFFER_OFFSET_END(b), c->off0,
        c->frames, c->frames + n);
stamped:
  if (GST_BUFFER_IS_DISCONT(b))
    c->discont_seen++;
  c->droppable_seen += GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_DROPPABLE);
  c->frames += n;
  c->buffers++;
  gst_buffer_unmap(b, &m);
  gst_buffer_unref(b);
}

/* Pull every queued buffer into c. */
static void collect(GstHarness *h, collected *c, GstAudioFormat f)
{
  GstBuffer *b;
  while ((b = gst_harness_try_pull(h)))
    collect_buf(c, b, f);
}

/* Pull every queued buffer: those stamped before tb into a, the rest b. */
static void collect_split(GstHarness *h, collected *a, collected *b,
                          GstClockTime tb, GstAudioFormat f)
{
  GstBuffer *buf;
  while ((buf = gst_harness_try_pull(h)))
    collect_buf(GST_BUFFER_PTS(buf) < tb ? a : b, buf, f);
}

/* Where push_frames takes its buffers' memory: NULL, system memory (as a
 * harness's source does); else what the element proposed (test_allocator). */
static GstAllocator *push_alloc;
static GstAllocationParams push_params;
static GstBufferFlags push_flags; /* set on every buffer push_frames makes */
/* push_frames' timestamps rounded to multiples of this (0: exact), down
 * where push_floor (a container's precision: Matroska's milliseconds) */
static GstClockTime push_quantum;
static gboolean push_floor;
/* the offset push_frames gives frame 0 (a source's running count, as
 * far out as a long run takes it) */
static guint64 push_offset0;

/* Push frames [from, from + n) of x (interleaved, cin channels) as one
 * buffer of format f, timestamped on the grid from t0 (frame `from`
 * counted from the segment's frame 0). */
static GstFlowReturn push_frames(GstHarness *h, GstAudioFormat f,
                                 const float *x, size_t from, size_t n,
                                 unsigned cin, unsigned rate, GstClockTime t0,
                                 gboolean discont)
{
  size_t bytes = n * cin * sample_size(f);
  GstBuffer *b = gst_buffer_new_allocate(push_alloc, bytes,
                                         push_alloc ? &push_params : NULL);
  CHECK(b, "no buffer of %zu bytes", bytes);
  GstMapInfo m;
  assert_true(gst_buffer_map(b, &m, GST_MAP_WRITE));
  float *tmp = xalloc(n * cin * sizeof(float) + 1);
  memcpy(tmp, x + from * cin, n * cin * sizeof(float));
  encode(f, tmp, n * cin, m.data); /* x already holds representable values */
  gst_buffer_unmap(b, &m);
  /* t0 GST_CLOCK_TIME_NONE: no timestamps or offsets (filesrc !
   * capsfilter) */
  if (GST_CLOCK_TIME_IS_VALID(t0)) {
    GST_BUFFER_PTS(b) = t0 + gst_util_uint64_scale_int_round(from, GST_SECOND,
                                                             (gint)rate);
    GST_BUFFER_DURATION(b) = t0 +
                             gst_util_uint64_scale_int_round(
                                 from + n, GST_SECOND, (gint)rate) -
                             GST_BUFFER_PTS(b);
    GST_BUFFER_OFFSET(b) = push_offset0 + from;
    GST_BUFFER_OFFSET_END(b) = push_offset0 + from + n;
    if (push_quantum) {
      GstClockTime q = push_quantum, t = GST_BUFFER_PTS(b);
      GST_BUFFER_PTS(b) = (push_floor ? t : t + q / 2) / q * q;
    }
  }
  if (discont)
    GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
  GST_BUFFER_FLAG_SET(b, push_flags);
  /* every other buffer says its sample count in a GstAudioMeta, as a
   * decoder's may: no output may carry it with another count (the
   * element copied it onto shorter buffers) */
  GstAudioInfo ai;
  gst_audio_info_set_format(&ai, f, rate, cin, NULL);
  if (from % 2 == 0 && cin <= 8 && n > 0)
    CHECK(gst_buffer_add_audio_meta(b, &ai, n, NULL) != NULL,
          "cannot add an audio meta");
  /* A third of the buffers stay shared with the pusher (as with a tee):
   * the element may filter only a buffer it holds alone in place, and
   * must leave this one as it was. */
  GstBuffer *held = ref_rng_u64(&rng) % 3 ? NULL : gst_buffer_ref(b);
  GstFlowReturn ret = gst_harness_push(h, b);
  if (held) {
    guint8 *want = xalloc(bytes + 1);
    encode(f, tmp, n * cin, want);
    assert_true(gst_buffer_map(held, &m, GST_MAP_READ));
    CHECK(m.size == bytes && (!bytes || !memcmp(m.data, want, bytes)),
          "a shared input buffer (%zu frames from %zu) was written to", n,
          from);
    gst_buffer_unmap(held, &m);
    gst_buffer_unref(held);
    free(want);
  }
  free(tmp);
  return ret;
}

/* x's n frames of ch channels (F32LE, from frame 0 at t0) pushed in
 * random chunks of 1 to 3000 frames, the first DISCONT. */
static void push_chunks(GstHarness *h, const float *x, size_t n, unsigned ch,
                        unsigned rate, GstClockTime t0, const char *what)
{
  for (size_t at = 0; at < n;) {
    size_t k = pick(ref_rng_range(&rng, 1, 3000), n - at);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, t0,
                      at == 0) == GST_FLOW_OK,
          "push %s at frame %zu", what, at);
    at += k;
  }
}

/* Random input in [-0.5, 0.5), made representable in format f. */
static float *random_input(GstAudioFormat f, size_t samples)
{
  float *x = xalloc(samples * sizeof *x + 4);
  void *scratch = xalloc(samples * 8 + 8);
  for (size_t i = 0; i < samples; i++)
    x[i] = 0.5f * ref_rng_sym(&rng);
  encode(f, x, samples, scratch); /* rounds x to what f holds */
  free(scratch);
  return x;
}

/* Reference: channel c of x (cin interleaved) through h, float64, for
 * output frames [0, ny). */
static double *ref_channel(const float *x, size_t n, unsigned cin, unsigned c,
                           const float *h, size_t len, size_t ny)
{
  float *xc = xalloc(n * sizeof *xc + 4);
  for (size_t i = 0; i < n; i++)
    xc[i] = x[i * cin + c];
  double *y = xalloc(ny * sizeof *y + 8);
  ref_conv(xc, n, h, len, y, ny);
  free(xc);
  return y;
}

/* The error bound for format f: float paths relative L2, integer formats
 * the quantisation of the output as well. */
static double tolerance(GstAudioFormat f, size_t len)
{
  (void)len;
  switch (f) {
  case GST_AUDIO_FORMAT_S16LE: return 1e-3; /* + the 1-LSB check */
  default: return 2e-5;
  }
}

/* ref_rel_l2 of n samples (every `stride`th of got) against want. S16
 * rounds each sample by up to half a step whatever its size, so the
 * denominator is at least sqrt(n) steps over tolerance(): one step rms
 * passes. Without that, a few frames drained through a long kernel (n
 * 1..12, 15000 taps: output rms a few hundred steps) failed on rounding
 * alone (1.1e-3 to 4.1e-3), about one run in 2000. */
static double out_rel_l2(GstAudioFormat f, const float *got, size_t stride,
                         const double *want, size_t n, size_t len)
{
  double e = ref_rel_l2(got, stride, want, 1, n);
  if (f != GST_AUDIO_FORMAT_S16LE || !isfinite(e))
    return e;
  double num = 0.0, den = 0.0, step = 1.0 / 32768.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)got[i * stride] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  double t = tolerance(f, len), least = (double)n * step * step / (t * t);
  return sqrt(num / (den > least ? den : least));
}

/* ---- content, timestamps, drain, on random everything ------------------ */

/* Takes every message of the type off the bus; whether one has needle in
 * its text or debug string and, where detail is given, detail in its
 * debug string. */
static int bus_has_detail(GstBus *bus, GstMessageType type, const char *needle,
                          const char *detail)
{
  GstMessage *m;
  int found = 0;
  while ((m = gst_bus_pop_filtered(bus, type))) {
    GError *err = NULL;
    gchar *dbg = NULL;
    if (type == GST_MESSAGE_ERROR)
      gst_message_parse_error(m, &err, &dbg);
    else
      gst_message_parse_warning(m, &err, &dbg);
    if (((err && strstr(err->message, needle)) ||
         (dbg && strstr(dbg, needle))) &&
        (!detail || (dbg && strstr(dbg, detail))))
      found = 1;
    g_clear_error(&err);
    g_free(dbg);
    gst_message_unref(m);
  }
  return found;
}

/* Whether an error's message itself (what an application shows) has
 * needle, and its debug string detail; takes the errors off the bus. */
static int bus_error_says(GstBus *bus, const char *needle, const char *detail)
{
  GstMessage *m;
  int found = 0;
  while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR))) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error(m, &err, &dbg);
    if (err && strstr(err->message, needle) && dbg && strstr(dbg, detail))
      found = 1;
    else
      printf("error message: %s\ndebug: %s\n", err ? err->message : "",
             dbg ? dbg : "");
    g_clear_error(&err);
    g_free(dbg);
    gst_message_unref(m);
  }
  return found;
}

static int bus_has(GstBus *bus, GstMessageType type, const char *needle)
{
  return bus_has_detail(bus, type, needle, NULL);
}

/* Whether a warning's message itself (what an application shows:
 * Python's parse_warning()[0].message) has needle, and all of its debug
 * string's reason (after the location line); takes the warnings off the
 * bus. "cudafir: kernel-file refused, keeping the previous value" hid
 * "cannot open: No such file or directory" in the debug string (QA). */
static int bus_warning_says(GstBus *bus, const char *needle)
{
  GstMessage *m;
  int found = 0;
  while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING))) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_warning(m, &err, &dbg);
    const gchar *why = dbg ? strchr(dbg, '\n') : NULL;
    if (err && strstr(err->message, needle) &&
        (!why || strstr(err->message, why + 1)))
      found = 1;
    else
      printf("warning message: %s\ndebug: %s\n", err ? err->message : "",
             dbg ? dbg : "");
    g_clear_error(&err);
    g_free(dbg);
    gst_message_unref(m);
  }
  return found;
}

/* Random streams through the element against the float64 reference.
 * fault: the engine is built on CF_TEST_FAKE_DEVICE (src/engine/fake.c:
 * backend=auto takes the CPU as a device whose K-th data call fails) and
 * the element must go on on the CPU with nothing lost, say so once on the
 * bus and in backend-in-use. */
static void run_random_stream(GstAudioFormat f, int cases, int fault)
{
  for (unsigned cs = 0; cs < check_cases((unsigned)cases); cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 4);
    unsigned rate = (unsigned)ref_rng_range(&rng, 8000, 96000);
    size_t len = random_len();
    unsigned block = 1u << ref_rng_range(&rng, 4, 11);
    size_t n = ref_rng_range(&rng, 1, 40000);
    gboolean drain = ref_rng_u64(&rng) % 4 != 0;
    /* a third of the streams with blocks in flight across buffers */
    guint depth = ref_rng_u64(&rng) % 3 ? 0 : (guint)ref_rng_range(&rng, 1, 3);
    set_case("format %s, %u ch, %u Hz, %zu taps, block-size %u, %zu frames, "
             "drain %d, pipeline-depth %u",
             fmt_name(f), ch, rate, len, block, n, drain, depth);
    float *hk = random_kernel(len);
    float *x = random_input(f, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "drain", drain, "threads",
                 (guint)ref_rng_range(&rng, 0, 3), "pipeline-depth", depth,
                 NULL);
    GstClockTime t0 = ref_rng_range(&rng, 0, 1000) * GST_MSECOND;
    size_t sizes[4096];
    size_t nc = ref_chunking(&rng, n, block, sizes, 4096);
    GstBus *bus = NULL;
    size_t fail_at = 0, calls = 0; /* data calls sure to happen */
    for (size_t i = 0; i < nc; i++)
      calls += sizes[i] > 0;
    if (fault) {
      fail_at = (size_t)ref_rng_range(&rng, 1, calls + 1);
      char spec[64];
      snprintf(spec, sizeof spec, "call:%zu", fail_at);
      add_case(", fake device failing at data call %zu", fail_at);
      gst_util_set_object_arg(G_OBJECT(h->element), "backend", "auto");
      bus = gst_bus_new();
      gst_element_set_bus(h->element, bus);
      setenv("CF_TEST_FAKE_DEVICE", spec, 1); /* read as the engine is built */
    }
    set_caps(h, f, rate, ch, ch);
    if (fault) {
      unsetenv("CF_TEST_FAKE_DEVICE");
      gchar *dev;
      g_object_get(h->element, "backend-in-use", &dev, NULL);
      CHECK(dev && !strcmp(dev, "cuda"), "backend-in-use = %s on the fake "
            "device", dev ? dev : "(null)");
      g_free(dev);
    }
    size_t total = n + (drain ? len - 1 : 0);
    collected c;
    collect_init(&c, ch, rate, t0, total + 1);
    size_t at = 0;
    steady_mark mark;
    for (size_t i = 0; i < nc; i++) {
      CHECK(push_frames(h, f, x, at, sizes[i], ch, rate, t0, i == 0) ==
                GST_FLOW_OK, "push %zu failed", i);
      at += sizes[i];
      collect(h, &c, f);
      /* On the emulated device (tests/gpu/steady.h): after the first
       * buffer, nothing set up or waited for device-wide per buffer; an
       * output buffer of a size not seen before may take a new pinned
       * block (test_allocator bounds those). */
      unsigned long long times = 0;
      const char *call =
          i && !fault ? steady_broken(&mark, "cudaHostAlloc", &times) : NULL;
      CHECK(!call, "buffer %zu: %s called %llu times", i, call, times);
      steady_take(&mark);
    }
    CHECK(at == n, "chunking covers %zu of %zu frames", at, n);
    guint64 lat_ns;
    g_object_get(h->element, "latency", &lat_ns, NULL);
    gchar *in_use;
    g_object_get(h->element, "backend-in-use", &in_use, NULL);
    CHECK(in_use && (!strcmp(in_use, "cpu") || !strcmp(in_use, "cuda")),
          "backend-in-use = %s while streaming", in_use ? in_use : "(null)");
    if (fault && fail_at <= calls) {
      CHECK(!strcmp(in_use, "cpu"), "backend-in-use = %s after the fake "
            "device failed", in_use);
      CHECK(bus_has(bus, GST_MESSAGE_WARNING, "backend failed"),
            "no warning on the bus after the fake device failed");
      CHECK(!bus_has(bus, GST_MESSAGE_ERROR, ""), "an error on the bus");
    }
    g_free(in_use);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, f);
    CHECK(c.frames == total, "%zu frames out, expected %zu (latency %"
          G_GUINT64_FORMAT " ns)", c.frames, total, lat_ns);
    CHECK(c.discont_seen == 1, "%d DISCONT buffers out, expected 1",
          c.discont_seen);
    for (unsigned k = 0; k < ch; k++) {
      double *want = ref_channel(x, n, ch, k, hk, len, total);
      if (f == GST_AUDIO_FORMAT_S16LE || f == GST_AUDIO_FORMAT_S32LE)
        for (size_t i = 0; i < total; i++) /* integer outputs saturate */
          want[i] = want[i] > 1.0 ? 1.0 : want[i] < -1.0 ? -1.0 : want[i];
      double err = out_rel_l2(f, c.y + k, ch, want, total, len);
      CHECK(err <= tolerance(f, len), "channel %u: relative L2 error %.3g",
            k, err);
      if (f == GST_AUDIO_FORMAT_S16LE)
        for (size_t i = 0; i < total; i++) {
          double w = want[i] * 32768.0;
          w = w > 32767 ? 32767 : w < -32768 ? -32768 : w;
          double got = c.y[i * ch + k] * 32768.0;
          CHECK(fabs(got - w) <= 1.0 + 1e-3, "channel %u frame %zu: %g, "
                "expected %g (more than 1 LSB off)", k, i, got, w);
        }
      free(want);
    }
    if (bus) {
      gst_element_set_bus(h->element, NULL);
      gst_object_unref(bus);
    }
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

static void test_random_f32(void **state)
{
  (void)state;
  run_random_stream(GST_AUDIO_FORMAT_F32LE, 14, 0);
}

/* backend=auto leaving a failing device mid-stream (a fake one, on the
 * CPU): the output still equals the reference, the element says so. */
static void test_device_fallback(void **state)
{
  (void)state;
  if (strcmp(backend, "auto")) {
    print_message("skipped: test_device_fallback needs backend auto\n");
    return;
  }
  run_random_stream(GST_AUDIO_FORMAT_F32LE, 8, 1);
  run_random_stream(GST_AUDIO_FORMAT_S16LE, 2, 1);
}

/* F32 input the element holds alone is filtered in place: the output is
 * the input's own memory (no buffer allocated); a buffer shared with the
 * pusher gets a buffer of its own and is left as it was (push_frames
 * checks that on every stream). Short kernels: no latency, so every
 * frame that comes in goes out in the same buffer. */
static void test_in_place(void **state)
{
  (void)state;
  static const GstAudioFormat fmts[] = {
      GST_AUDIO_FORMAT_F32LE, GST_AUDIO_FORMAT_S16LE, GST_AUDIO_FORMAT_S32LE,
      GST_AUDIO_FORMAT_F64LE};
  GstAudioFormat f = fmts[ref_rng_range(&rng, 0, G_N_ELEMENTS(fmts) - 1)];
  set_case("in place, %s", fmt_name(f));
  size_t len = ref_rng_range(&rng, 1, 8);
  float *hk = random_kernel(len);
  GstHarness *h = new_fir();
  set_taps(h->element, hk, len);
  set_caps(h, f, 48000, 2, 2);
  size_t n = 0;
  for (int i = 0; i < 8; i++) {
    size_t k = ref_rng_range(&rng, 1, 2000);
    gboolean shared = i % 2;
    size_t bytes = k * 2 * sample_size(f);
    GstBuffer *b = gst_buffer_new_allocate(NULL, bytes, NULL);
    gst_buffer_memset(b, 0, 0x3c, bytes);
    GST_BUFFER_PTS(b) = gst_util_uint64_scale_int_round(n, GST_SECOND, 48000);
    GstMemory *mem = gst_buffer_peek_memory(b, 0);
    GstBuffer *held = shared ? gst_buffer_ref(b) : NULL;
    CHECK(gst_harness_push(h, b) == GST_FLOW_OK, "push %d", i);
    GstBuffer *o = gst_harness_pull(h);
    CHECK(o && gst_buffer_n_memory(o) == 1, "buffer %d: no output", i);
    gboolean same = gst_buffer_peek_memory(o, 0) == mem;
    CHECK(same == !shared, "buffer %d (%s): the output %s the input's memory",
          i, shared ? "shared" : "held alone", same ? "is" : "is not");
    gst_buffer_unref(o);
    if (held)
      gst_buffer_unref(held);
    n += k;
  }
  gst_harness_teardown(h);
  free(hk);
}

/* Integer outputs round to nearest with ties to even, saturate, and lose
 * nothing else: a 1-tap kernel of 0.5, -0.5, 4 or 2^17 scales exactly in
 * float, so every output sample is known to the bit (x / 2 with its
 * halves rounded to even, or the product saturated). The S32 inputs are exact
 * in float: below 2^24, or multiples of 256. */
static void test_integer_rounding(void **state)
{
  (void)state;
  static const GstAudioFormat fmts[] = {GST_AUDIO_FORMAT_S16LE,
                                        GST_AUDIO_FORMAT_S32LE};
  /* 2^17: products past 2^31, which only a saturation before the
   * conversion to int32 keeps (a pack after it would not) */
  static const float gains[] = {0.5f, -0.5f, 4.0f, 131072.0f};
  for (size_t fi = 0; fi < G_N_ELEMENTS(fmts); fi++)
    for (size_t gi = 0; gi < G_N_ELEMENTS(gains); gi++) {
      GstAudioFormat f = fmts[fi];
      int s16 = f == GST_AUDIO_FORMAT_S16LE;
      double g = gains[gi];
      set_case("integer rounding: %s x %g", fmt_name(f), g);
      GstHarness *h = new_fir();
      float tap = gains[gi];
      set_taps(h->element, &tap, 1);
      set_caps(h, f, 48000, 1, 1);
      size_t n = ref_rng_range(&rng, 1, 5000);
      gint64 *x = xalloc(n * sizeof *x);
      for (size_t i = 0; i < n; i++) {
        if (s16)
          x[i] = (gint64)ref_rng_range(&rng, 0, 65535) - 32768;
        else if (ref_rng_range(&rng, 0, 1))
          x[i] = (gint64)ref_rng_range(&rng, 0, (1u << 25) - 1) - (1 << 24);
        else
          x[i] = ((gint64)ref_rng_range(&rng, 0, (1u << 24) - 1) - (1 << 23)) *
                 256;
      }
      x[0] = s16 ? -32768 : G_MININT32; /* the extremes, and ties */
      if (n > 1)
        x[n - 1] = s16 ? 32767 : (gint64)G_MAXINT32 - 127;
      if (n > 2)
        x[1] = 3;
      size_t ss = s16 ? 2 : 4;
      GstBuffer *b = gst_buffer_new_allocate(NULL, n * ss, NULL);
      GstMapInfo m;
      assert_true(gst_buffer_map(b, &m, GST_MAP_WRITE));
      for (size_t i = 0; i < n; i++) {
        if (s16) {
          gint16 v = GINT16_TO_LE((gint16)x[i]);
          memcpy(m.data + i * 2, &v, 2);
        } else {
          gint32 v = GINT32_TO_LE((gint32)x[i]);
          memcpy(m.data + i * 4, &v, 4);
        }
      }
      gst_buffer_unmap(b, &m);
      GST_BUFFER_PTS(b) = 0;
      GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
      CHECK(gst_harness_push(h, b) == GST_FLOW_OK, "push");
      assert_true(gst_harness_push_event(h, gst_event_new_eos()));
      size_t got = 0;
      GstBuffer *o;
      while ((o = gst_harness_try_pull(h))) {
        assert_true(gst_buffer_map(o, &m, GST_MAP_READ));
        for (size_t i = 0; i < m.size / ss && got < n; i++, got++) {
          gint64 y;
          if (s16) {
            gint16 v;
            memcpy(&v, m.data + i * 2, 2);
            y = GINT16_FROM_LE(v);
          } else {
            gint32 v;
            memcpy(&v, m.data + i * 4, 4);
            y = GINT32_FROM_LE(v);
          }
          double lo = s16 ? -32768.0 : -2147483648.0;
          double hi = s16 ? 32767.0 : 2147483647.0;
          double want = (double)x[got] * g; /* exact */
          want = want < lo ? lo : want > hi ? hi : want;
          double r = floor(want);
          if (want - r > 0.5 || (want - r == 0.5 && fmod(r, 2.0) != 0.0))
            r += 1.0; /* to nearest, ties to even */
          CHECK((double)y == r,
                "sample %zu: %" G_GINT64_FORMAT " x %g gave %" G_GINT64_FORMAT
                ", expected %.0f",
                got, x[got], g, y, r);
        }
        gst_buffer_unmap(o, &m);
        gst_buffer_unref(o);
      }
      CHECK(got == n, "%zu samples out of %zu", got, n);
      gst_harness_teardown(h);
      free(x);
    }
}

/* The engine works in float32, as the element's description (and its
 * doc comment, README) says: through the identity kernel S32LE and F64LE
 * samples come out as float32 holds them, rounded to nearest and S32LE
 * saturated (2^31 - 1 rounds up to 2^31), not as they went in. */
static void test_float32_precision(void **state)
{
  (void)state;
  GstElementFactory *fac = gst_element_factory_find("cudafir");
  CHECK(fac, "element cudafir not found");
  const gchar *desc =
      gst_element_factory_get_metadata(fac, GST_ELEMENT_METADATA_DESCRIPTION);
  CHECK(desc && strstr(desc, "float32"),
        "the description does not say the engine works in float32: '%s'",
        desc ? desc : "(none)");
  gst_object_unref(fac);
  static const GstAudioFormat fmts[] = {GST_AUDIO_FORMAT_S32LE,
                                        GST_AUDIO_FORMAT_F64LE};
  for (size_t fi = 0; fi < G_N_ELEMENTS(fmts); fi++) {
    GstAudioFormat f = fmts[fi];
    int s32 = f == GST_AUDIO_FORMAT_S32LE;
    set_case("float32 precision: %s", fmt_name(f));
    GstHarness *h = new_fir(); /* no kernel: the identity */
    set_caps(h, f, 48000, 1, 1);
    size_t n = ref_rng_range(&rng, 16, 4000), ss = sample_size(f);
    double *x = xalloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
      x[i] = s32 ? (double)(gint32)(guint32)ref_rng_u64(&rng)
                 : (double)(ref_rng_u64(&rng) >> 11) * 0x1p-52 - 1.0;
    if (s32) { /* the extremes, a tie, and the first integer float skips */
      x[0] = G_MAXINT32;
      x[1] = G_MININT32;
      x[2] = G_MAXINT32 - 63;
      x[3] = (1 << 24) + 1;
    }
    GstBuffer *b = gst_buffer_new_allocate(NULL, n * ss, NULL);
    GstMapInfo m;
    assert_true(gst_buffer_map(b, &m, GST_MAP_WRITE));
    for (size_t i = 0; i < n; i++) {
      if (s32) {
        gint32 v = GINT32_TO_LE((gint32)x[i]);
        memcpy(m.data + i * 4, &v, 4);
      } else {
        memcpy(m.data + i * 8, &x[i], 8);
      }
    }
    gst_buffer_unmap(b, &m);
    GST_BUFFER_PTS(b) = 0;
    GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
    CHECK(gst_harness_push(h, b) == GST_FLOW_OK, "push");
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    size_t got = 0, rounded = 0;
    GstBuffer *o;
    while ((o = gst_harness_try_pull(h))) {
      assert_true(gst_buffer_map(o, &m, GST_MAP_READ));
      for (size_t i = 0; i < m.size / ss && got < n; i++, got++) {
        double y, want = (double)(float)x[got];
        if (s32) {
          gint32 v;
          memcpy(&v, m.data + i * 4, 4);
          y = GINT32_FROM_LE(v);
          want = MIN(want, (double)G_MAXINT32);
        } else {
          memcpy(&y, m.data + i * 8, 8);
        }
        CHECK(y == want,
              "sample %zu: %.17g came out as %.17g, float32 holds %.17g", got,
              x[got], y, want);
        rounded += y != x[got];
      }
      gst_buffer_unmap(o, &m);
      gst_buffer_unref(o);
    }
    CHECK(got == n, "%zu samples out of %zu", got, n);
    CHECK(rounded > 0, "no sample of %zu rounded: not float32 precision", n);
    print_message("%s: %zu of %zu samples rounded to float32\n", fmt_name(f),
                  rounded, n);
    gst_harness_teardown(h);
    free(x);
  }
}

/* Buffers cut anywhere, inside frames too (a byte source without a
 * parser: filesrc ! capsfilter with any block size), some shorter than a
 * frame: every frame is read whole and in order, nothing lost; the output
 * equals the reference with timestamps on the grid from the first byte. */
static void test_partial_frames(void **state)
{
  (void)state;
  static const GstAudioFormat fmts[] = {
      GST_AUDIO_FORMAT_F32LE, GST_AUDIO_FORMAT_S16LE, GST_AUDIO_FORMAT_S32LE,
      GST_AUDIO_FORMAT_F64LE};
  for (int cs = 0; cs < 6; cs++) {
    GstAudioFormat f = fmts[ref_rng_u64(&rng) % 4];
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 4);
    unsigned rate = 48000;
    size_t len = random_len(), n = ref_rng_range(&rng, 1, 20000);
    size_t bpf = sample_size(f) * ch, bytes = n * bpf;
    set_case("partial frames: %s, %u ch, %zu taps, %zu frames", fmt_name(f), ch,
             len, n);
    float *hk = random_kernel(len);
    float *x = random_input(f, n * ch);
    guint8 *raw = xalloc(bytes + 8);
    float *tmp = xalloc(n * ch * sizeof(float) + 4);
    memcpy(tmp, x, n * ch * sizeof(float));
    encode(f, tmp, n * ch, raw);
    free(tmp);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    set_caps(h, f, rate, ch, ch);
    GstClockTime t0 = ref_rng_range(&rng, 0, 1000) * GST_MSECOND;
    collected c;
    collect_init(&c, ch, rate, t0, n + len);
    size_t cuts = 0;
    for (size_t at = 0; at < bytes;) {
      /* mostly a few hundred bytes; now and then less than a frame */
      size_t k = ref_rng_u64(&rng) % 4 ? ref_rng_range(&rng, 1, 3000)
                                       : ref_rng_range(&rng, 1, bpf + 1);
      k = pick(k, bytes - at);
      cuts += (at + k) % bpf != 0;
      GstBuffer *b = gst_buffer_new_memdup(raw + at, k);
      /* a byte's time: that of the frame it is in */
      GST_BUFFER_PTS(b) = t0 + gst_util_uint64_scale_int_round(
                                   at / bpf, GST_SECOND, (gint)rate);
      GST_BUFFER_OFFSET(b) = at % bpf ? GST_BUFFER_OFFSET_NONE : at / bpf;
      if (at == 0)
        GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
      CHECK(gst_harness_push(h, b) == GST_FLOW_OK, "push at byte %zu", at);
      at += k;
      collect(h, &c, f);
    }
    add_case(", %zu buffers ending inside a frame", cuts);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, f);
    CHECK(c.frames == n + len - 1, "%zu frames out, expected %zu", c.frames,
          n + len - 1);
    for (unsigned k = 0; k < ch; k++) {
      double *want = ref_channel(x, n, ch, k, hk, len, n + len - 1);
      if (f == GST_AUDIO_FORMAT_S16LE || f == GST_AUDIO_FORMAT_S32LE)
        for (size_t i = 0; i < n + len - 1; i++) /* integers saturate */
          want[i] = want[i] > 1.0 ? 1.0 : want[i] < -1.0 ? -1.0 : want[i];
      double err = out_rel_l2(f, c.y + k, ch, want, n + len - 1, len);
      CHECK(err <= tolerance(f, len), "channel %u: relative L2 error %.3g", k,
            err);
      free(want);
    }
    gst_harness_teardown(h);
    free(c.y);
    free(raw);
    free(x);
    free(hk);
  }
}

static void test_random_formats(void **state)
{
  (void)state;
  run_random_stream(GST_AUDIO_FORMAT_S16LE, 4, 0);
  run_random_stream(GST_AUDIO_FORMAT_S32LE, 4, 0);
  run_random_stream(GST_AUDIO_FORMAT_F64LE, 4, 0);
}

/* ---- memory: the host allocator it proposes upstream --------------------- */

/* The emulated runtime's count of cudaHostAlloc calls and the pinned bytes
 * live (tests/emu/cudart_emu.cc, preloaded in the cudaemu runs). */
typedef void (*emu_host_allocs_fn)(unsigned long long *calls,
                                   unsigned long long *live_bytes);

/* Memory m from the host allocator, `size` bytes, byte k (k * 31 + 7):
 * its type and pinned flag (plugins/common.h); shares (read-only views
 * that keep it alive), copies (memory of ours, independent) and two
 * adjacent shares in one buffer, which map as one span without a copy. */
static void check_host_memory(GstMemory *m, gsize size, int pinned)
{
  CHECK(gst_memory_is_type(m, "CudaFilterHostMemory"), "memory type %s",
        m->allocator ? m->allocator->mem_type : "none");
  CHECK(!GST_MEMORY_FLAG_IS_SET(m, GST_MEMORY_FLAG_LAST) == !pinned,
        "pinned flag %s where a device is %s",
        GST_MEMORY_FLAG_IS_SET(m, GST_MEMORY_FLAG_LAST) ? "set" : "clear",
        pinned ? "present" : "absent");
  GstMapInfo base;
  CHECK(gst_memory_map(m, &base, GST_MAP_READ), "cannot map");
  gsize o = ref_rng_range(&rng, 0, size - 1);
  gssize l =
      ref_rng_u64(&rng) % 4 ? (gssize)ref_rng_range(&rng, 1, size - o) : -1;
  gsize want = l < 0 ? size - o : (gsize)l;
  GstMemory *sh = gst_memory_share(m, (gssize)o, l);
  GstMemory *cp = gst_memory_copy(m, (gssize)o, l);
  CHECK(sh && cp, "share or copy of [%zu, +%zd) failed", o, l);
  CHECK(gst_memory_is_type(sh, "CudaFilterHostMemory") &&
            gst_memory_is_type(cp, "CudaFilterHostMemory"),
        "share or copy of another type");
  GstMapInfo mi;
  CHECK(!gst_memory_map(sh, &mi, GST_MAP_WRITE), "a share maps writable");
  GstMemory *both[2] = {sh, cp};
  for (int i = 0; i < 2; i++) {
    CHECK(gst_memory_get_sizes(both[i], NULL, NULL) == want &&
              gst_memory_map(both[i], &mi, GST_MAP_READ) && mi.size == want,
          "%s of [%zu, +%zd): %zu bytes", i ? "copy" : "share", o, l,
          gst_memory_get_sizes(both[i], NULL, NULL));
    for (gsize k = 0; k < want; k++)
      CHECK(mi.data[k] == (guint8)((o + k) * 31 + 7),
            "%s of [%zu, +%zd): "
            "byte %zu",
            i ? "copy" : "share", o, l, k);
    CHECK(i ? mi.data != base.data + o : mi.data == base.data + o,
          "%s of [%zu, +%zd) at %p, memory at %p", i ? "copy" : "share", o, l,
          (void *)mi.data, (void *)base.data);
    gst_memory_unmap(both[i], &mi);
  }
  /* the copy is its own: writing it leaves m as it was */
  CHECK(gst_memory_map(cp, &mi, GST_MAP_WRITE), "cannot map the copy");
  memset(mi.data, 0, want);
  gst_memory_unmap(cp, &mi);
  CHECK(base.data[o] == (guint8)(o * 31 + 7), "writing a copy changed m");
  gst_memory_unref(cp);
  /* a share outlives the reference it was made from */
  gst_memory_ref(m);
  gst_memory_unmap(m, &base);
  gst_memory_unref(m);
  CHECK(gst_memory_map(sh, &mi, GST_MAP_READ) &&
            mi.data[0] == (guint8)(o * 31 + 7),
        "share lost its data");
  gst_memory_unmap(sh, &mi);
  gst_memory_unref(sh);
  /* adjacent shares: one span, mapped in place */
  if (size >= 2) {
    gsize k = ref_rng_range(&rng, 1, size - 1), off = 99;
    GstMemory *a = gst_memory_share(m, 0, (gssize)k);
    GstMemory *b = gst_memory_share(m, (gssize)k, -1);
    CHECK(gst_memory_is_span(a, b, &off) && off == 0,
          "shares [0, %zu) and [%zu, %zu) not one span (offset %zu)", k, k,
          size, off);
    GstBuffer *buf = gst_buffer_new();
    gst_buffer_append_memory(buf, a);
    gst_buffer_append_memory(buf, b);
    CHECK(gst_memory_map(m, &base, GST_MAP_READ), "cannot map");
    CHECK(gst_buffer_map(buf, &mi, GST_MAP_READ) && mi.size == size &&
              mi.data == base.data,
          "two shares mapped at %p (%zu bytes), memory at %p", (void *)mi.data,
          mi.size, (void *)base.data);
    gst_buffer_unmap(buf, &mi);
    gst_memory_unmap(m, &base);
    gst_buffer_unref(buf);
  }
}

/* Upstream is offered the plugin's host allocator (pinned memory where a
 * device is usable). Its memory honours the alignment, prefix, padding and
 * zeroing asked of it; a stream written into it, in buffers whose size
 * changes every time, filters exactly. On the emulated device, input and
 * output buffers reuse pinned blocks instead of a cudaHostAlloc (and a
 * device-wide cudaFreeHost) each. */
static void test_allocator(void **state)
{
  (void)state;
  set_case("allocator");
  GstHarness *h = new_fir();
  size_t len = random_len();
  float *hk = random_kernel(len);
  set_taps(h->element, hk, len);
  g_object_set(h->element, "drain", TRUE, NULL);
  unsigned ch = (unsigned)ref_rng_range(&rng, 1, 3), rate = 48000;
  add_case(", %zu taps, %u ch", len, ch);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
  GstCaps *caps = gst_pad_get_current_caps(h->srcpad);
  CHECK(caps, "no caps on the harness's source pad");
  GstQuery *q = gst_query_new_allocation(caps, FALSE);
  gst_caps_unref(caps);
  CHECK(gst_pad_peer_query(h->srcpad, q), "allocation query failed");
  CHECK(gst_query_get_n_allocation_params(q) >= 1, "no allocator proposed");
  GstAllocator *alloc = NULL;
  gst_query_parse_nth_allocation_param(q, 0, &alloc, &push_params);
  gst_query_unref(q);
  CHECK(alloc && !strcmp(G_OBJECT_TYPE_NAME(alloc), "CfGstHostAllocator"),
        "proposed allocator %s", alloc ? G_OBJECT_TYPE_NAME(alloc) : "none");
  /* where there is a device, real or emulated, its memory is pinned (the
   * H200 found this test expecting pinned memory on the emulator only) */
  emu_host_allocs_fn emu =
      (emu_host_allocs_fn)dlsym(RTLD_DEFAULT, "cf_emu_host_allocs");
  int device = emu != NULL || cf_device_count(NULL) > 0;
  /* any alignment (a mask up to 8 KiB - 1), prefix and padding */
  for (unsigned i = 0; i < 64; i++) {
    GstAllocationParams p;
    gst_allocation_params_init(&p);
    p.align = ((gsize)1 << ref_rng_range(&rng, 0, 13)) - 1;
    p.prefix = ref_rng_u64(&rng) % 2 ? ref_rng_range(&rng, 1, 300) : 0;
    p.padding = ref_rng_u64(&rng) % 2 ? ref_rng_range(&rng, 1, 300) : 0;
    if (ref_rng_u64(&rng) % 2)
      p.flags |= GST_MEMORY_FLAG_ZERO_PREFIXED;
    if (ref_rng_u64(&rng) % 2)
      p.flags |= GST_MEMORY_FLAG_ZERO_PADDED;
    gsize size = ref_rng_range(&rng, 1, 100000), off, max;
    GstMemory *m = gst_allocator_alloc(alloc, size, &p);
    CHECK(m, "no memory of %zu bytes (align %zu, prefix %zu, padding %zu)",
          size, p.align, p.prefix, p.padding);
    gsize got = gst_memory_get_sizes(m, &off, &max);
    CHECK(got == size && off == p.prefix && max >= size + p.prefix + p.padding,
          "asked %zu bytes, prefix %zu, padding %zu: got %zu, offset %zu, "
          "maxsize %zu",
          size, p.prefix, p.padding, got, off, max);
    GstMapInfo mi;
    CHECK(gst_memory_map(m, &mi, GST_MAP_READWRITE), "cannot map");
    guint8 *block = mi.data - p.prefix;
    CHECK(((guintptr)block & p.align) == 0,
          "alignment mask %zu: memory at "
          "%p",
          p.align, (void *)block);
    for (gsize k = 0; k < p.prefix; k++)
      CHECK(!(p.flags & GST_MEMORY_FLAG_ZERO_PREFIXED) || !block[k],
            "prefix byte %zu of %zu not zero", k, p.prefix);
    for (gsize k = 0; k < p.padding; k++)
      CHECK(!(p.flags & GST_MEMORY_FLAG_ZERO_PADDED) || !mi.data[size + k],
            "padding byte %zu of %zu not zero", k, p.padding);
    memset(block, 0xa5, p.prefix + size + p.padding); /* all of it ours */
    for (gsize k = 0; k < size; k++)
      mi.data[k] = (guint8)(k * 31 + 7);
    gst_memory_unmap(m, &mi);
    check_host_memory(m, size, device);
    gst_memory_unref(m);
  }
  /* a stream in that memory, buffers of 1-1024 frames */
  unsigned long long calls0 = 0, calls = 0, live;
  if (emu)
    emu(&calls0, &live);
  size_t n = ref_rng_range(&rng, 60000, 120000), total = n + len - 1;
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
  collected c;
  collect_init(&c, ch, rate, 0, total + 1);
  push_alloc = alloc;
  size_t at = 0, nbuf = 0;
  while (at < n) {
    size_t m = pick(ref_rng_range(&rng, 1, 1024), n - at);
    GstFlowReturn fr =
        push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, m, ch, rate, 0, at == 0);
    CHECK(fr == GST_FLOW_OK, "push %zu: %s", nbuf, gst_flow_get_name(fr));
    at += m;
    nbuf++;
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
  }
  push_alloc = NULL;
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &c, GST_AUDIO_FORMAT_F32LE);
  CHECK(c.frames == total, "%zu frames out, expected %zu", c.frames, total);
  for (unsigned k = 0; k < ch; k++) {
    double *want = ref_channel(x, n, ch, k, hk, len, total);
    double err = ref_rel_l2(c.y + k, ch, want, 1, total);
    CHECK(err <= tolerance(GST_AUDIO_FORMAT_F32LE, len),
          "channel %u: relative L2 error %.3g", k, err);
    free(want);
  }
  if (emu) {
    emu(&calls, &live);
    print_message("allocator: %zu buffers in, %zu out: %llu cudaHostAlloc "
                  "calls\n",
                  nbuf, c.buffers, calls - calls0);
    CHECK(calls - calls0 <= 32,
          "%zu buffers in and %zu out took %llu "
          "cudaHostAlloc calls (want <= 32: freed blocks reused)",
          nbuf, c.buffers, calls - calls0);
  }
  gst_object_unref(alloc);
  gst_harness_teardown(h);
  free(c.y);
  free(x);
  free(hk);
}

/* ---- latency: the query, the property and an impulse agree ------------- */

static void test_latency_impulse(void **state)
{
  (void)state;
  for (int cs = 0; cs < 6; cs++) {
    unsigned rate = 48000;
    unsigned block = 1u << ref_rng_range(&rng, 5, 11);
    size_t len = cs % 2 ? ref_rng_range(&rng, 2, 6)
                        : ref_rng_range(&rng, 4000, 12000);
    guint depth = cs < 2 ? 0 : (guint)cs - 1; /* 1..4 */
    set_case("%zu taps, block-size %u, pipeline-depth %u", len, block, depth);
    float *hk = random_kernel(len);
    hk[0] = 1.0f; /* the impulse shows at once */
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, 1, 1);
    GstClockTime upstream = 7 * GST_MSECOND;
    gst_harness_set_upstream_latency(h, upstream);
    /* the impulse at frame 100, then zeros, one frame per buffer */
    size_t n = 100 + (3 + depth) * block + 16;
    float *x = xalloc(n * sizeof *x);
    x[100] = 1.0f;
    collected c;
    collect_init(&c, 1, rate, 0, n + len);
    size_t pushed_when_seen = 0;
    for (size_t i = 0; i < n; i++) {
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, i, 1, 1, rate, 0,
                        i == 0) == GST_FLOW_OK, "push failed");
      collect(h, &c, GST_AUDIO_FORMAT_F32LE);
      if (!pushed_when_seen && c.frames > 100)
        pushed_when_seen = i + 1;
    }
    CHECK(pushed_when_seen, "the impulse never came out");
    CHECK(fabsf(c.y[100] - 1.0f) < 1e-5f, "impulse came out as %g at its "
          "own timestamp", c.y[100]);
    size_t delay = pushed_when_seen - 101; /* frames held back */
    guint64 lat_prop;
    g_object_get(h->element, "latency", &lat_prop, NULL);
    GstClockTime q = gst_harness_query_latency(h);
    GstClockTime meas = gst_util_uint64_scale_int_round(delay, GST_SECOND,
                                                        (gint)rate);
    CHECK(lat_prop == meas, "latency property %" G_GUINT64_FORMAT " ns, the "
          "impulse was held %zu frames (%" G_GUINT64_FORMAT " ns)", lat_prop,
          delay, meas);
    CHECK(q == upstream + meas, "latency query %" GST_TIME_FORMAT
          ", expected upstream %" GST_TIME_FORMAT " + %" GST_TIME_FORMAT,
          GST_TIME_ARGS(q), GST_TIME_ARGS(upstream), GST_TIME_ARGS(meas));
    /* the path's own (the FFT's block - 1 for long kernels, none for
     * short ones) and a block per pipeline-depth */
    if (len < 8)
      CHECK(delay == depth * block,
            "short kernel, pipeline-depth %u: %zu frames of latency, want %u",
            depth, delay, depth * block);
    else
      CHECK(delay == depth * block || delay == (depth + 1) * block - 1,
            "pipeline-depth %u, block-size %u: %zu frames of latency", depth,
            block, delay);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* The latency query and the `latency` property agree in every state: after
 * PLAYING -> READY the element filters nothing and adds nothing (the
 * property said 0, the query still the old stream's latency: stop() kept
 * it), and a second run at another rate reports its own, which is the
 * delay its output has. Random kernels, block sizes, pipeline-depth,
 * chunkings; the output against the float64 reference. */
static void test_latency_after_stop(void **state)
{
  (void)state;
  for (int cs = 0; cs < 4; cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t len = random_len();
    unsigned block = 1u << ref_rng_range(&rng, 5, 11);
    guint depth = (guint)ref_rng_range(&rng, 0, 2);
    GstClockTime upstream = ref_rng_range(&rng, 0, 30) * GST_MSECOND;
    set_case("%zu taps, block-size %u, pipeline-depth %u, %u ch, upstream %"
             GST_TIME_FORMAT, len, block, depth, ch, GST_TIME_ARGS(upstream));
    float *hk = random_kernel(len);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 "drain", FALSE, NULL);
    gst_harness_set_upstream_latency(h, upstream);
    static const unsigned rates[2] = {48000, 22050};
    for (int run = 0; run < 2; run++) {
      unsigned rate = rates[run];
      add_case(run ? ", then %u Hz" : ", %u Hz", rate);
      if (run)
        gst_harness_play(h);
      set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
      size_t n = ref_rng_range(&rng, 2 * block * (depth + 2), 20000);
      float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
      collected c;
      collect_init(&c, ch, rate, 0, n + 1);
      push_chunks(h, x, n, ch, rate, 0, "the input");
      collect(h, &c, GST_AUDIO_FORMAT_F32LE);
      guint64 prop = G_MAXUINT64;
      g_object_get(h->element, "latency", &prop, NULL);
      GstClockTime q = gst_harness_query_latency(h);
      GstClockTime held = gst_util_uint64_scale_int_round(
          n - c.frames, GST_SECOND, (gint)rate);
      CHECK(prop == held, "run %d: latency property %" G_GUINT64_FORMAT
            " ns, the output is %zu frames behind (%" GST_TIME_FORMAT ")",
            run, prop, n - c.frames, GST_TIME_ARGS(held));
      CHECK(q == upstream + prop, "run %d: latency query %" GST_TIME_FORMAT
            ", the property %" G_GUINT64_FORMAT " ns + upstream", run,
            GST_TIME_ARGS(q), prop);
      assert_true(gst_harness_push_event(h, gst_event_new_eos()));
      collect(h, &c, GST_AUDIO_FORMAT_F32LE);
      CHECK(c.frames == n, "run %d: %zu frames out, expected %zu", run,
            c.frames, n);
      for (unsigned k = 0; k < ch; k++) {
        double *w = ref_channel(x, n, ch, k, hk, len, n);
        double e = ref_rel_l2(c.y + k, ch, w, 1, n);
        CHECK(e <= 2e-5, "run %d channel %u: error %.3g", run, k, e);
        free(w);
      }
      free(c.y);
      free(x);
      /* a flush takes the EOS off the harness's pads for the next run */
      assert_true(gst_harness_push_event(h, gst_event_new_flush_start()));
      assert_true(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
      CHECK(gst_element_set_state(h->element, GST_STATE_READY) ==
                GST_STATE_CHANGE_SUCCESS, "run %d: READY failed", run);
      g_object_get(h->element, "latency", &prop, NULL);
      q = gst_harness_query_latency(h);
      CHECK(prop == 0 && q == upstream,
            "run %d, READY: latency property %" G_GUINT64_FORMAT
            " ns, query %" GST_TIME_FORMAT " (upstream %" GST_TIME_FORMAT ")",
            run, prop, GST_TIME_ARGS(q), GST_TIME_ARGS(upstream));
    }
    gst_harness_teardown(h);
    free(hk);
  }
}

/* ---- DISCONT, flush, drain=false ------------------------------------------ */

/* Runs A and B, each against its own convolution from silence (A as
 * far as it came out, at most its input and ring-out); frees their
 * samples. */
static void check_two_runs(collected *a, collected *b, const float *xa,
                           size_t na, const float *xb, size_t nb,
                           unsigned ch, const float *hk, size_t len)
{
  for (unsigned k = 0; k < ch; k++) {
    double *wa = ref_channel(xa, na, ch, k, hk, len, na + len - 1);
    double *wb = ref_channel(xb, nb, ch, k, hk, len, nb + len - 1);
    double ea = ref_rel_l2(a->y + k, ch, wa, 1, MIN(a->frames, na + len - 1));
    double eb = ref_rel_l2(b->y + k, ch, wb, 1, b->frames);
    CHECK(ea <= 2e-5 && eb <= 2e-5, "channel %u: A error %.3g, B error %.3g "
          "(B must start from silence)", k, ea, eb);
    free(wa);
    free(wb);
  }
  free(a->y);
  free(b->y);
}

/* Two runs A and B separated by `how` (0 DISCONT buffer, 1 flush, 2 a new
 * segment whose buffers jump ahead in time without DISCONT, 3 a DISCONT
 * buffer soon after A's end, within A's ring-out): A's output is complete
 * (except after a flush, which drops what was held, and in 3, where it
 * stops where B starts: timestamps never overlap) and B restarts from
 * silence. */
static void run_break(int how)
{
  unsigned rate = 44100, ch = (unsigned)ref_rng_range(&rng, 1, 3);
  size_t len = random_len();
  unsigned block = 1u << ref_rng_range(&rng, 5, 10);
  size_t na = ref_rng_range(&rng, 1, 9000), nb = ref_rng_range(&rng, 1, 9000);
  /* in 3, B starts `hole` frames after A ends */
  size_t hole = how == 3 ? ref_rng_range(&rng, 0, len + 50) : 0;
  size_t a_total = how == 3 ? MIN(na + len - 1, na + hole) : na + len - 1;
  guint depth = (guint)ref_rng_range(&rng, 0, 2); /* pipeline-depth */
  set_case("break %d, %u ch, %zu taps, block %u, pipeline-depth %u, A %zu, "
           "B %zu frames",
           how, ch, len, block, depth, na, nb);
  if (how == 3)
    add_case(", B %zu frames after A", hole);
  float *hk = random_kernel(len);
  float *xa = random_input(GST_AUDIO_FORMAT_F32LE, na * ch);
  float *xb = random_input(GST_AUDIO_FORMAT_F32LE, nb * ch);
  GstHarness *h = new_fir();
  set_taps(h->element, hk, len);
  g_object_set(h->element, "block-size", block, "pipeline-depth", depth, NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
  collected a, b;
  collect_init(&a, ch, rate, 0, na + len);
  push_chunks(h, xa, na, ch, rate, 0, "A");
  collect(h, &a, GST_AUDIO_FORMAT_F32LE);
  size_t a_before = a.frames;
  GstClockTime tb =
      how == 3
          ? gst_util_uint64_scale_int_round(na + hole, GST_SECOND, (gint)rate)
          : 10 * GST_SECOND;
  int b_discont = how != 2; /* B's first buffer DISCONT */
  if (how == 1) {
    /* A ends inside a frame (a buffer cut mid-frame, then a seek): the
     * flush drops those bytes, B starts on a frame of its own */
    size_t bpf = ch * sizeof(float), k = ref_rng_range(&rng, 1, bpf - 1);
    GstBuffer *cut = gst_buffer_new_allocate(NULL, k, NULL);
    gst_buffer_memset(cut, 0, 0x3f, k);
    GST_BUFFER_PTS(cut) =
        gst_util_uint64_scale_int_round(na, GST_SECOND, (gint)rate);
    CHECK(gst_harness_push(h, cut) == GST_FLOW_OK, "push %zu bytes", k);
    add_case(", A ends %zu bytes into a frame", k);
    /* every other flush, B's first buffer comes without DISCONT (a
     * source that does not mark it): the flush alone drops the bytes */
    static unsigned flushes;
    b_discont = flushes++ % 2;
    if (!b_discont)
      add_case(", B unmarked");
    assert_true(gst_harness_push_event(h, gst_event_new_flush_start()));
    assert_true(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    /* the flush drops what was pending downstream too */
    GstBuffer *stale;
    while ((stale = gst_harness_try_pull(h)))
      gst_buffer_unref(stale);
  } else if (how == 2) {
    /* ahead in running time too (base 0 restarted it at 0, before A's
     * end: no ring-out goes there) */
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    seg.start = seg.time = seg.base = tb;
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
  }
  if (how == 1)
    a.frames = a_before;
  collect_init(&b, ch, rate, tb, nb + len);
  for (size_t at = 0; at < nb;) {
    size_t k = pick(ref_rng_range(&rng, 1, 3000), nb - at);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, xb, at, k, ch, rate, tb,
                      at == 0 && b_discont) == GST_FLOW_OK, "push B");
    at += k;
    if (how == 1)
      collect(h, &b, GST_AUDIO_FORMAT_F32LE);
    else
      collect_split(h, &a, &b, tb, GST_AUDIO_FORMAT_F32LE);
  }
  if (how != 1) /* A's held frames and ring-out came out before B */
    CHECK(a.frames == a_total, "A: %zu frames out, expected %zu", a.frames,
          a_total);
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &b, GST_AUDIO_FORMAT_F32LE);
  CHECK(b.frames == nb + len - 1, "B: %zu frames out, expected %zu",
        b.frames, nb + len - 1);
  check_two_runs(&a, &b, xa, na, xb, nb, ch, hk, len);
  gst_harness_teardown(h);
  free(xa);
  free(xb);
  free(hk);
}

static void test_discont(void **state)
{
  (void)state;
  for (int i = 0; i < 4; i++)
    run_break(0);
}

static void test_discont_soon(void **state)
{
  (void)state;
  for (int i = 0; i < 4; i++)
    run_break(3);
}

/* qos=true (GstBaseTransform's, off by default): a QoS event from
 * downstream saying the stream is late makes the base class drop the
 * input buffers that are late before they reach the filter, posting a QoS
 * message. A dropped buffer is a discontinuity, as a DISCONT buffer is:
 * the frames held before it go out (the ring-out, with drain, up to where
 * the next buffer starts), and the stream after it restarts from
 * silence, its first buffer DISCONT. The history ran on across the hole
 * (a drop under 40 ms: samples lost, the filter convolving across them,
 * the times moved without DISCONT; QA). */
static void test_qos_drop(void **state)
{
  (void)state;
  for (unsigned cs = 0; cs < check_cases(6); cs++) {
    unsigned rate = 44100, ch = (unsigned)ref_rng_range(&rng, 1, 3);
    size_t len = random_len();
    unsigned block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 2);
    size_t na = ref_rng_range(&rng, 1, 9000), nb = ref_rng_range(&rng, 1, 6000);
    /* frames dropped, in 1..3 buffers: under 40 ms mostly (a timestamp
     * jump already restarted the filter), under 1 ms now and then (taken
     * as a container's rounding) */
    size_t drop = cs % 3 == 0 ? ref_rng_range(&rng, 1, 40)
                  : cs % 3 == 1 ? ref_rng_range(&rng, 41, 1700)
                                : ref_rng_range(&rng, 1701, 6000);
    unsigned nd = (unsigned)MIN(drop, (size_t)ref_rng_range(&rng, 1, 3));
    set_case("qos drop of %zu frames in %u buffers, %u ch, %zu taps, block "
             "%u, pipeline-depth %u, A %zu, B %zu frames",
             drop, nd, ch, len, block, depth, na, nb);
    float *hk = random_kernel(len);
    size_t n = na + drop + nb;
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 "qos", TRUE, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    collected a, b;
    collect_init(&a, ch, rate, 0, na + len);
    push_chunks(h, x, na, ch, rate, 0, "A");
    collect(h, &a, GST_AUDIO_FORMAT_F32LE);
    /* downstream: late up to the start of B (buffers starting before it,
     * in running time, are dropped) */
    GstClockTime td = gst_util_uint64_scale_int_round(na, GST_SECOND,
                                                      (gint)rate);
    GstClockTime tb = gst_util_uint64_scale_int_round(na + drop, GST_SECOND,
                                                      (gint)rate);
    CHECK(gst_harness_push_upstream_event(
              h, gst_event_new_qos(GST_QOS_TYPE_UNDERFLOW, 1.5,
                                   GST_CLOCK_DIFF(td, tb - 1), td)),
          "QoS event refused");
    for (size_t at = na, i = 0; at < na + drop; i++) {
      size_t k = i + 1 == nd ? na + drop - at : MIN(drop / nd, na + drop - at);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, 0,
                        FALSE) == GST_FLOW_OK, "push a late buffer");
      at += k;
    }
    GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_QOS);
    CHECK(m, "no QoS message for the %u buffers dropped", nd);
    gst_message_unref(m);
    collect_init(&b, ch, rate, tb, nb + len);
    b.off0 = na + drop;
    for (size_t at = na + drop; at < n;) {
      size_t k = pick(ref_rng_range(&rng, 1, 3000), n - at);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, 0,
                        FALSE) == GST_FLOW_OK, "push B");
      at += k;
      collect_split(h, &a, &b, tb, GST_AUDIO_FORMAT_F32LE);
    }
    /* A: its input and the ring-out up to where B starts */
    size_t a_total = MIN(na + len - 1, na + drop);
    CHECK(a.frames == a_total, "A: %zu frames out, expected %zu", a.frames,
          a_total);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &b, GST_AUDIO_FORMAT_F32LE);
    CHECK(b.frames == nb + len - 1, "B: %zu frames out, expected %zu",
          b.frames, nb + len - 1);
    CHECK(b.discont_seen == 1, "B: %d DISCONT buffers, expected its first",
          b.discont_seen);
    check_two_runs(&a, &b, x, na, x + (na + drop) * ch, nb, ch, hk, len);
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(h);
    free(x);
    free(hk);
  }
}

static void test_flush(void **state)
{
  (void)state;
  for (int i = 0; i < 4; i++)
    run_break(1);
}

static void test_new_segment(void **state)
{
  (void)state;
  for (int i = 0; i < 3; i++)
    run_break(2);
}

/* Run A, then the stream resumes at or before where A's input ended (by
 * `back` frames, 0 included, even before A's start): `how` 0 a DISCONT
 * buffer, 1 a new segment whose running time starts there (B's
 * timestamps from 0), 2 a GAP without a duration there (a discontinuity
 * at its time) and B after it. input-selector switching live sources
 * resumes 3-19 ms back. With drain, A's held frames still come out (their
 * input came: its own overlap) but no ring-out, which would all lie past
 * the resume point (it did: latency + L - 1 frames, QA); B starts from
 * silence. */
static void run_resume_back(int how)
{
  unsigned rate = 44100, ch = (unsigned)ref_rng_range(&rng, 1, 3);
  size_t len = random_len();
  unsigned block = 1u << ref_rng_range(&rng, 5, 10);
  guint depth = (guint)ref_rng_range(&rng, 0, 2);
  size_t na = ref_rng_range(&rng, 1, 9000), nb = ref_rng_range(&rng, 1, 5000);
  size_t back = ref_rng_u64(&rng) % 4 == 0 ? 0 : ref_rng_range(&rng, 1, na + 100);
  set_case("resume %zu frames back by %s, %u ch, %zu taps, block %u, "
           "pipeline-depth %u, A %zu, B %zu frames",
           back, how == 0 ? "DISCONT" : how == 1 ? "segment" : "GAP", ch,
           len, block, depth, na, nb);
  float *hk = random_kernel(len);
  float *xa = random_input(GST_AUDIO_FORMAT_F32LE, na * ch);
  float *xb = random_input(GST_AUDIO_FORMAT_F32LE, nb * ch);
  GstHarness *h = new_fir();
  set_taps(h->element, hk, len);
  g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
               "drain", TRUE, NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
  GstClockTime ta = GST_SECOND; /* room for B before A's start */
  collected a, b;
  collect_init(&a, ch, rate, ta, na + len);
  push_chunks(h, xa, na, ch, rate, ta, "A");
  collect(h, &a, GST_AUDIO_FORMAT_F32LE);
  size_t held = na - a.frames;
  /* where B resumes, in A's timestamps */
  GstClockTime tr = ta + gst_util_uint64_scale_int_round(na, GST_SECOND,
                                                         (gint)rate) -
                    gst_util_uint64_scale_int_round(back, GST_SECOND,
                                                    (gint)rate);
  GstClockTime tb = tr; /* B's own timestamps */
  if (how == 1) {
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    seg.base = tr; /* a new item from 0, running time going on at tr */
    tb = 0;
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    collect(h, &a, GST_AUDIO_FORMAT_F32LE);
  } else if (how == 2) {
    assert_true(gst_harness_push_event(
        h, gst_event_new_gap(tr, GST_CLOCK_TIME_NONE)));
    collect(h, &a, GST_AUDIO_FORMAT_F32LE);
  }
  collect_init(&b, ch, rate, tb, nb + len);
  for (size_t at = 0; at < nb;) {
    size_t k = pick(ref_rng_range(&rng, 1, 3000), nb - at);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, xb, at, k, ch, rate, tb,
                      at == 0) == GST_FLOW_OK, "push B");
    GstBuffer *buf;
    /* A's held frames go out before B's first (as one buffer; a DISCONT
     * one only where A had nothing out before) */
    if (at == 0 && how == 0 && (buf = gst_harness_try_pull(h))) {
      if (held || !GST_BUFFER_IS_DISCONT(buf))
        collect_buf(&a, buf, GST_AUDIO_FORMAT_F32LE);
      else
        collect_buf(&b, buf, GST_AUDIO_FORMAT_F32LE);
    }
    at += k;
    collect(h, &b, GST_AUDIO_FORMAT_F32LE);
  }
  CHECK(a.frames == na, "A: %zu frames out, expected %zu (its input; the "
        "stream resumed %zu frames before its end)", a.frames, na, back);
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &b, GST_AUDIO_FORMAT_F32LE);
  CHECK(b.frames == nb + len - 1, "B: %zu frames out, expected %zu",
        b.frames, nb + len - 1);
  check_two_runs(&a, &b, xa, na, xb, nb, ch, hk, len);
  gst_harness_teardown(h);
  free(xa);
  free(xb);
  free(hk);
}

static void test_resume_before_end(void **state)
{
  (void)state;
  for (int i = 0; i < 9; i++)
    run_resume_back(i % 3);
}

/* ---- segments: loops, gapless items, the same segment again -------------- */

/* What reached the harness's sink pad, in order: each buffer with the
 * item of the segment it came in (segments carry the item as seqnum
 * SEQ_BASE + item), and whether a buffer ever lay outside its segment or
 * before the running time already played. */
#define SEQ_BASE 7000u
typedef struct {
  GPtrArray *bufs; /* GstBuffer, ref'd */
  GArray *item;    /* guint, one per buffer */
  GstSegment seg;
  guint cur;      /* item of seg; G_MAXUINT before the first of ours */
  guint64 rt_end; /* running time where the last buffer ended */
  char bad[256];  /* the first broken rule, "" if none */
} seg_watch;

static GstPadProbeReturn on_sink_data(GstPad *pad, GstPadProbeInfo *info,
                                      gpointer data)
{
  (void)pad;
  seg_watch *w = data;
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT(info);
    if (GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT) {
      gst_event_copy_segment(ev, &w->seg);
      guint32 sn = gst_event_get_seqnum(ev);
      w->cur = sn >= SEQ_BASE && sn < SEQ_BASE + 64 ? sn - SEQ_BASE : G_MAXUINT;
    }
    return GST_PAD_PROBE_OK;
  }
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER(info);
  GstClockTime pts = GST_BUFFER_PTS(b), dur = GST_BUFFER_DURATION(b);
  guint64 start, stop;
  if (!w->bad[0] && !gst_segment_clip(&w->seg, GST_FORMAT_TIME, pts, pts + dur,
                                      &start, &stop))
    snprintf(w->bad, sizeof w->bad,
             "a buffer at %" GST_TIME_FORMAT " outside its segment (item %u)",
             GST_TIME_ARGS(pts), w->cur);
  guint64 rt = gst_segment_to_running_time(&w->seg, GST_FORMAT_TIME, pts);
  if (!w->bad[0] && GST_CLOCK_TIME_IS_VALID(rt) && rt < w->rt_end)
    snprintf(w->bad, sizeof w->bad,
             "a buffer at running time %" GST_TIME_FORMAT
             " before %" GST_TIME_FORMAT " already played "
             "(item %u)",
             GST_TIME_ARGS(rt), GST_TIME_ARGS(w->rt_end), w->cur);
  if (GST_CLOCK_TIME_IS_VALID(rt))
    w->rt_end = rt + dur;
  g_ptr_array_add(w->bufs, gst_buffer_ref(b));
  g_array_append_val(w->item, w->cur);
  return GST_PAD_PROBE_OK;
}

/* A stream in items, each a segment of its own: a segment seek looping
 * (SEGMENT_DONE, then the same stretch again after where it ended in
 * running time), the next item of a gapless playlist (timestamps from 0
 * again, running time going on), or the same segment again, which goes on
 * seamlessly. Every item's output lies in its own segment, after what was
 * played, and equals its input filtered from silence, or, for a loop
 * and for a next item after a STREAM_START of another stream, going on
 * from the item before (its ring-out added to the next one's first
 * frames, no DISCONT); the held frames
 * come out before the next segment, and the ring-out as frames of its own
 * only where nothing follows (EOS, with drain). */
static void test_segments(void **state)
{
  (void)state;
  for (int cs = 0; cs < 6; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 3);
    size_t len = random_len();
    unsigned block = 1u << ref_rng_range(&rng, 5, 10);
    /* the first case loops without a stop, with drain, at least once */
    gboolean drain = ref_rng_u64(&rng) % 2 || cs == 0;
    int items = (int)ref_rng_range(&rng, 2, 5);
    set_case("segments: %u ch, %zu taps, block %u, drain %d, %d items:", ch,
             len, block, drain, items);
    float *hk = random_kernel(len);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "drain", drain, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    seg_watch w = {.bufs = g_ptr_array_new(),
                   .item = g_array_new(FALSE, FALSE, sizeof(guint)),
                   .cur = G_MAXUINT};
    gst_segment_init(&w.seg, GST_FORMAT_TIME);
    gst_pad_add_probe(h->sinkpad,
                      GST_PAD_PROBE_TYPE_BUFFER |
                          GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
                      on_sink_data, &w, NULL);
    /* the output item each segment's frames belong to (an item going on
     * through the same segment again is one), its input, and how it ends */
    float *x[64];
    size_t n[64], want[64];
    GstClockTime first[64]; /* where each output item starts */
    /* the item before rings on into this one: a playlist's next item
     * (a STREAM_START of another stream, the segment where its data
     * ended in running time) */
    gboolean carried[64];
    int outs = 0, prev_how = -1;
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    size_t at = 0; /* frames of the current output item so far */
    GstClockTime t0 = 0, data_end = GST_CLOCK_TIME_NONE;
    for (int it = 0; it < items; it++) {
      size_t k = ref_rng_range(&rng, 1, 12000);
      int how = it + 1 < items ? (int)(ref_rng_u64(&rng) % 3) : 3;
      if (cs == 0 && it == 0)
        how = 0;
      add_case(" %zu frames then %s", k,
               how == 0   ? "loop"
               : how == 1 ? "next item"
               : how == 2 ? "same segment"
                          : "EOS");
      if (at == 0) { /* a new output item starts */
        x[outs] = NULL;
        n[outs] = 0;
        carried[outs] = FALSE;
        outs++;
      }
      int o = outs - 1;
      x[o] = realloc(x[o], (n[o] + k) * ch * sizeof(float));
      float *more = random_input(GST_AUDIO_FORMAT_F32LE, k * ch);
      memcpy(x[o] + n[o] * ch, more, k * ch * sizeof(float));
      free(more);
      if (at == 0) {
        if (it > 0 && ref_rng_u64(&rng) % 2) { /* as a playlist does */
          add_case(" (after a STREAM_START)");
          char sid[32];
          snprintf(sid, sizeof sid, "cf-next-%d", it);
          assert_true(
              gst_harness_push_event(h, gst_event_new_stream_start(sid)));
          carried[o] = prev_how == 1;
        }
        /* a loop goes on from where it was done, its new segment
         * starting there in running time (below): seamless */
        if (prev_how == 0)
          carried[o] = TRUE;
        t0 = ref_rng_range(&rng, 0, 3) * GST_SECOND;
        /* a seek's new base: the running time where the segment ended,
         * its stop or, without one, where its data did */
        guint64 base =
            seg.base + (seg.stop != GST_CLOCK_TIME_NONE ? seg.stop - seg.start
                        : data_end != GST_CLOCK_TIME_NONE
                            ? data_end - seg.start
                            : 0);
        gst_segment_init(&seg, GST_FORMAT_TIME);
        seg.start = seg.time = t0;
        seg.base = base;
        first[o] = t0;
      }
      GstClockTime end =
          t0 + gst_util_uint64_scale_int_round(at + k, GST_SECOND, (gint)rate);
      /* a loop's segment ends where its data does (a segment seek with
       * a stop), or has no stop (a player's loop seek to 0 with stop
       * NONE, as wavparse takes it: its SEGMENT_DONE says where the data
       * ended) */
      gboolean no_stop = how == 0 && (ref_rng_u64(&rng) % 2 || cs == 0);
      if (no_stop)
        add_case(" (no stop)");
      seg.stop = how == 0 && !no_stop ? end : GST_CLOCK_TIME_NONE;
      data_end = GST_CLOCK_TIME_NONE;
      GstEvent *ev = gst_event_new_segment(&seg);
      gst_event_set_seqnum(ev, SEQ_BASE + (guint32)o);
      assert_true(gst_harness_push_event(h, ev));
      for (size_t done = 0; done < k;) {
        size_t c = pick(ref_rng_range(&rng, 1, 3000), k - done);
        CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x[o], at + done, c, ch,
                          rate, t0, it == 0 && done == 0) == GST_FLOW_OK,
              "push");
        done += c;
      }
      n[o] += k;
      at += k;
      want[o] = n[o];
      if (how == 0) {
        assert_true(gst_harness_push_event(
            h, gst_event_new_segment_done(GST_FORMAT_TIME, end)));
        data_end = end;
      }
      if (how == 2) {
        /* the same again: the stream goes on in it */
        seg.stop = GST_CLOCK_TIME_NONE;
        continue;
      }
      if (how == 1) /* the next item plays where this one's data ends */
        seg.stop = end;
      if (how == 3) {
        want[o] += drain ? len - 1 : 0;
        assert_true(gst_harness_push_event(h, gst_event_new_eos()));
      }
      prev_how = how;
      at = 0;
    }
    CHECK(!w.bad[0], "%s", w.bad);
    collected c[64];
    for (int o = 0; o < outs; o++)
      collect_init(&c[o], ch, rate, first[o], want[o] + 1);
    GstBuffer *b;
    while ((b = gst_harness_try_pull(h)))
      gst_buffer_unref(b);
    for (guint i = 0; i < w.bufs->len; i++) {
      guint o = g_array_index(w.item, guint, i);
      CHECK(o < (guint)outs, "a buffer in a segment not sent (%u)", o);
      GstBuffer *ob = g_ptr_array_index(w.bufs, i);
      collect_buf(&c[o], ob, GST_AUDIO_FORMAT_F32LE); /* takes the ref */
    }
    for (int o = 0; o < outs; o++) {
      CHECK(c[o].frames == want[o], "item %d: %zu frames out, expected %zu", o,
            c[o].frames, want[o]);
      /* one DISCONT where the output starts from silence; none where
       * it goes on from the item before */
      CHECK(c[o].discont_seen == !carried[o], "item %d: %d DISCONT buffers "
            "(%s)", o, c[o].discont_seen,
            carried[o] ? "going on from the one before" : "from silence");
      /* the items this one goes on from, as one signal */
      int from = o;
      while (from > 0 && carried[from])
        from--;
      size_t pre = 0;
      for (int q = from; q < o; q++)
        pre += n[q];
      float *xs = xalloc((pre + n[o]) * ch * sizeof *xs + 4);
      for (size_t q = (size_t)from, p0 = 0; q <= (size_t)o; p0 += n[q++])
        memcpy(xs + p0 * ch, x[q], n[q] * ch * sizeof *xs);
      for (unsigned k = 0; k < ch; k++) {
        double *r = ref_channel(xs, pre + n[o], ch, k, hk, len, pre + want[o]);
        double err = ref_rel_l2(c[o].y + k, ch, r + pre, 1, want[o]);
        CHECK(err <= 2e-5,
              "item %d channel %u: relative L2 error %.3g "
              "(from silence, or going on from %d item(s) before)",
              o, k, err, o - from);
        free(r);
      }
      free(xs);
      free(c[o].y);
    }
    for (int o = 0; o < outs; o++)
      free(x[o]);
    g_ptr_array_free(w.bufs, TRUE);
    g_array_free(w.item, TRUE);
    gst_harness_teardown(h);
    free(hk);
  }
}

/* Output frames that reached the harness's sink pad before it saw a
 * STREAM_GROUP_DONE (G_MAXSIZE: none seen), in frames of `bpf` bytes. */
typedef struct {
  size_t frames, at_done, bpf;
} group_watch;

static GstPadProbeReturn on_group_data(GstPad *pad, GstPadProbeInfo *info,
                                       gpointer data)
{
  (void)pad;
  group_watch *w = data;
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER)
    w->frames += gst_buffer_get_size(GST_PAD_PROBE_INFO_BUFFER(info)) / w->bpf;
  else if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) ==
           GST_EVENT_STREAM_GROUP_DONE)
    w->at_done = w->frames;
  return GST_PAD_PROBE_OK;
}

/* STREAM_GROUP_DONE (a gapless player switching items: playbin, a
 * stream-start and a segment for the next item after it): every frame of
 * the group ends before it (the held frames; a gapless item's output
 * followed it, in the next stream's start), with no ring-out where the
 * next item starts, since that item starts where the input ended; where
 * EOS comes instead (the last item) the ring-out goes out before it with
 * drain=true, as at an EOS alone. The next item goes on from the group's
 * history: its ring-out is added to the next item's first frames. */
static void test_stream_group_done(void **state)
{
  (void)state;
  for (unsigned cs = 0; cs < check_cases(8); cs++) {
    unsigned rate = 44100, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t len = random_len() % 4000 + 1;
    unsigned block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 1);
    gboolean last = cs % 2, drain = cs % 4 != 3;
    size_t na = ref_rng_range(&rng, 1, 9000),
           nb = last ? 0 : ref_rng_range(&rng, 1, 5000);
    set_case("group done then %s, drain %d, %u ch, %zu taps, block %u, "
             "pipeline-depth %u, A %zu, B %zu frames",
             last ? "EOS" : "the next item", drain, ch, len, block, depth, na,
             nb);
    float *hk = random_kernel(len);
    float *xa = random_input(GST_AUDIO_FORMAT_F32LE, na * ch);
    float *xb = random_input(GST_AUDIO_FORMAT_F32LE, (nb + 1) * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 "drain", drain, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    group_watch w = {0, G_MAXSIZE, ch * sizeof(float)};
    gulong probe = gst_pad_add_probe(
        h->sinkpad,
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        on_group_data, &w, NULL);
    collected a, b;
    collect_init(&a, ch, rate, 0, na + len);
    push_chunks(h, xa, na, ch, rate, 0, "A");
    assert_true(gst_harness_push_event(h, gst_event_new_stream_group_done(1)));
    CHECK(w.at_done == na, "%zu frames out before STREAM_GROUP_DONE, "
          "expected the group's %zu", w.at_done, na);
    GstClockTime ta = gst_util_uint64_scale_int_round(na, GST_SECOND,
                                                      (gint)rate);
    if (last) {
      assert_true(gst_harness_push_event(h, gst_event_new_eos()));
      collect(h, &a, GST_AUDIO_FORMAT_F32LE);
      size_t want = drain ? na + len - 1 : na;
      CHECK(a.frames == want, "A: %zu frames out by EOS, expected %zu",
            a.frames, want);
      for (unsigned c = 0; c < ch; c++) {
        double *wa = ref_channel(xa, na, ch, c, hk, len, want);
        double e = ref_rel_l2(a.y + c, ch, wa, 1, want);
        CHECK(e <= 2e-5, "A channel %u: error %.3g", c, e);
        free(wa);
      }
      free(a.y);
    } else {
      /* the next item: its own timestamps from 0, running time going on
       * where A's input ended */
      assert_true(
          gst_harness_push_event(h, gst_event_new_stream_start("cf-b")));
      GstSegment seg;
      gst_segment_init(&seg, GST_FORMAT_TIME);
      seg.base = ta;
      assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
      collect(h, &a, GST_AUDIO_FORMAT_F32LE);
      CHECK(a.frames == na, "A: %zu frames out, expected %zu (no ring-out "
            "into the next item)", a.frames, na);
      collect_init(&b, ch, rate, 0, nb + len);
      push_chunks(h, xb, nb, ch, rate, 0, "B");
      assert_true(gst_harness_push_event(h, gst_event_new_eos()));
      collect(h, &b, GST_AUDIO_FORMAT_F32LE);
      size_t want_b = drain ? nb + len - 1 : nb;
      CHECK(b.frames == want_b, "B: %zu frames out, expected %zu", b.frames,
            want_b);
      /* B's first buffer came DISCONT (a decoder's first of an item), but
       * the output goes on from A's: no DISCONT on it (it said one) */
      CHECK(b.discont_seen == 0, "B: %d DISCONT buffers out, expected none "
            "(the output goes on from A)", b.discont_seen);
      /* A then B filtered as one signal: A's ring-out goes on into B */
      float *xab = xalloc((na + nb) * ch * sizeof *xab);
      memcpy(xab, xa, na * ch * sizeof *xab);
      memcpy(xab + na * ch, xb, nb * ch * sizeof *xab);
      for (unsigned c = 0; c < ch; c++) {
        double *wr = ref_channel(xab, na + nb, ch, c, hk, len, na + want_b);
        double ea = ref_rel_l2(a.y + c, ch, wr, 1, na);
        double eb = ref_rel_l2(b.y + c, ch, wr + na, 1, want_b);
        CHECK(ea <= 2e-5 && eb <= 2e-5, "channel %u: A error %.3g, B error "
              "%.3g (B goes on from A's history)", c, ea, eb);
        free(wr);
      }
      free(xab);
      free(a.y);
      free(b.y);
    }
    gst_pad_remove_probe(h->sinkpad, probe);
    gst_harness_teardown(h);
    free(xa);
    free(xb);
    free(hk);
  }
}

/* A kernel or gain change at a gapless change of item (a player setting
 * the next track's kernel-file in about-to-finish, or as the item
 * ends): the items play as one signal, so `crossfade` means there what
 * it means anywhere in a stream. A change made since the last buffer
 * takes effect at the next one, the new item's first (frame S of the
 * one signal): y[n] = (1 - w) y_old[n] + w y_new[n], w = (n - S + 1) /
 * (X + 1) over X = crossfade frames, y_old and y_new the whole signal
 * through either kernel, the old item's ring-out included; a gain ramps
 * so over the whole output; a crossfade started late in the item before
 * goes on across the change. The carried ring-out was the old kernel's
 * and gain's alone, and the new item started on the new kernel and gain
 * at once, with no crossfade (QA). Checked against that float64
 * reference, with STREAM_GROUP_DONE (playbin) or without (playbin3,
 * concat), the change set before or after the change of item's events,
 * or inside the item before. */
static void test_gapless_kernel_change(void **state)
{
  (void)state;
  for (unsigned cs = 0; cs < check_cases(8); cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t len = ref_rng_range(&rng, 2, 3000);
    unsigned block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 1);
    gboolean drain = ref_rng_u64(&rng) % 2, group = cs % 2;
    /* 0: kernel set after A, before the change of item; 1: kernel set
     * between the next item's segment and its first buffer; 2: kernel
     * set inside A, its crossfade running on into B; 3: gain set
     * after A */
    int when = (int)(cs / 2 % 4);
    guint64 xf_ms = ref_rng_range(&rng, 1, 30);
    size_t xf = (size_t)gst_util_uint64_scale_int_round(
        xf_ms * GST_MSECOND, (gint)rate, GST_SECOND);
    size_t na = ref_rng_range(&rng, 2 * xf + 1, 9000),
           nb = ref_rng_range(&rng, 2 * xf + 1, 6000);
    size_t early = when == 2 ? ref_rng_range(&rng, 1, xf) : 0;
    size_t S = na - early; /* where the change takes effect */
    double g1 = when == 3 ? pow(10.0, -6.0 / 20.0) : 1.0;
    set_case("gapless %s, change %s, drain %d, %u ch, %zu taps, block %u, "
             "pipeline-depth %u, crossfade %zu frames, A %zu, B %zu frames",
             group ? "with STREAM_GROUP_DONE" : "without",
             when == 0   ? "of kernel after A"
             : when == 1 ? "of kernel before B's first buffer"
             : when == 2 ? "of kernel inside A"
                         : "of gain after A",
             drain, ch, len, block, depth, xf, na, nb);
    if (when == 2)
      add_case(", %zu frames before its end", early);
    float *h0 = random_kernel(len), *h1 = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, (na + nb) * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, h0, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 "drain", drain, "crossfade", xf_ms * GST_MSECOND, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    collected a, b;
    collect_init(&a, ch, rate, 0, na + len);
    for (size_t at = 0; at < na;) {
      size_t end = at < S ? S : na;
      size_t k = pick(ref_rng_range(&rng, 1, 3000), end - at);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, 0,
                        at == 0) == GST_FLOW_OK, "push A at %zu", at);
      at += k;
      if (at == S && when == 2)
        set_taps(h->element, h1, len);
    }
    if (when == 0)
      set_taps(h->element, h1, len);
    if (when == 3)
      g_object_set(h->element, "gain", -6.0, NULL);
    GstClockTime ta = gst_util_uint64_scale_int_round(na, GST_SECOND,
                                                      (gint)rate);
    if (group)
      assert_true(
          gst_harness_push_event(h, gst_event_new_stream_group_done(1)));
    assert_true(gst_harness_push_event(h, gst_event_new_stream_start("cf-b")));
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    seg.base = ta;
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    collect(h, &a, GST_AUDIO_FORMAT_F32LE);
    CHECK(a.frames == na, "A: %zu frames out, expected %zu", a.frames, na);
    if (when == 1)
      set_taps(h->element, h1, len);
    collect_init(&b, ch, rate, 0, nb + len);
    for (size_t at = 0; at < nb;) {
      size_t k = pick(ref_rng_range(&rng, 1, 3000), nb - at);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x + na * ch, at, k, ch,
                        rate, 0, at == 0) == GST_FLOW_OK,
            "push B at %zu", at);
      at += k;
    }
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &b, GST_AUDIO_FORMAT_F32LE);
    size_t want_b = drain ? nb + len - 1 : nb, ny = na + want_b;
    CHECK(b.frames == want_b, "B: %zu frames out, expected %zu", b.frames,
          want_b);
    for (unsigned c = 0; c < ch; c++) {
      double *r0 = ref_channel(x, na + nb, ch, c, h0, len, ny);
      double *r1 = ref_channel(x, na + nb, ch, c, h1, len, ny);
      for (size_t n = 0; n < ny; n++) {
        double w = n < S ? 0 : n >= S + xf ? 1
                   : (double)(n - S + 1) / (double)(xf + 1);
        if (when == 3) /* a gain ramp on the one kernel */
          r0[n] *= 1.0 + (g1 - 1.0) * w;
        else
          r0[n] = (1 - w) * r0[n] + w * r1[n];
      }
      double ea = ref_rel_l2(a.y + c, ch, r0, 1, na);
      double eb = ref_rel_l2(b.y + c, ch, r0 + na, 1, want_b);
      size_t i = 0; /* where B first differs, for the message */
      while (i < want_b && fabs(b.y[i * ch + c] - r0[na + i]) <= 1e-4)
        i++;
      CHECK(ea <= 2e-5 && eb <= 2e-5, "channel %u: A error %.3g, B error "
            "%.3g, first off at B's frame %zu (one signal, crossfading at "
            "frame %zu)", c, ea, eb, i, S);
      free(r0);
      free(r1);
    }
    free(a.y);
    free(b.y);
    gst_harness_teardown(h);
    free(x);
    free(h0);
    free(h1);
  }
}

/* A player's smooth rate change (a seek without FLUSH to rate 2.0, 0.5,
 * ..., at the position the stream reached): the new segment starts where
 * the input is, running and stream time going on, so the samples go on
 * and so does the filter, as through the same segment sent again: one
 * run, filtered from silence once, its timestamps without a gap, one
 * DISCONT. It restarted there (QA: the held frames pushed, a reverb's
 * tail cut at the change and the history started from silence). */
static void test_rate_change_goes_on(void **state)
{
  (void)state;
  const double rates[] = {2.0, 0.5, 1.5, 4.0};
  for (int cs = 0; cs < 4; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 3);
    size_t len = ref_rng_range(&rng, 201, 6000);
    unsigned block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 2);
    size_t na = ref_rng_range(&rng, 1, 9000), nb = ref_rng_range(&rng, 1, 9000);
    double r = rates[cs];
    set_case("rate change to %g: %u ch, %zu taps, block %u, pipeline-depth %u, "
             "%zu frames then %zu", r, ch, len, block, depth, na, nb);
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, (na + nb) * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 "drain", TRUE, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    GstClockTime t0 = GST_SECOND;
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    seg.start = seg.time = seg.position = t0;
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    collected c;
    collect_init(&c, ch, rate, t0, na + nb + len);
    for (size_t at = 0; at < na + nb;) {
      if (at == na) { /* the seek: the new rate from where the input is */
        GstClockTime tr =
            t0 + gst_util_uint64_scale_int_round(na, GST_SECOND, (gint)rate);
        GstSegment s2 = seg;
        s2.base = gst_segment_to_running_time(&seg, GST_FORMAT_TIME, tr);
        s2.start = s2.time = s2.position = tr;
        s2.rate = r;
        assert_true(gst_harness_push_event(h, gst_event_new_segment(&s2)));
      }
      size_t end = at < na ? na : na + nb;
      size_t k = pick(ref_rng_range(&rng, 1, 3000), end - at);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, t0,
                        at == 0) == GST_FLOW_OK, "push");
      at += k;
      collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    }
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == na + nb + len - 1, "%zu frames out, expected %zu (the "
          "input and one ring-out)", c.frames, na + nb + len - 1);
    CHECK(c.discont_seen == 1, "%d DISCONT buffers, expected 1",
          c.discont_seen);
    for (unsigned k = 0; k < ch; k++) {
      double *w = ref_channel(x, na + nb, ch, k, hk, len, na + nb + len - 1);
      double err = ref_rel_l2(c.y + k, ch, w, 1, c.frames);
      CHECK(err <= 2e-5, "channel %u: relative L2 error %.3g against the "
            "whole stream filtered once", k, err);
      free(w);
    }
    free(c.y);
    gst_harness_teardown(h);
    free(x);
    free(hk);
  }
}

/* ---- caps renegotiation mid-stream ---------------------------------------- */

/* Reverse playback (a segment of rate -1): the chunks come latest
 * first, each DISCONT or just stamped before the last one, and each comes
 * out filtered from silence, at its own timestamps (one buffer in, one
 * out: the input's duration, not one the frame count rounds): as many
 * frames out as in, none overlapping, with drain=true too (the ring-out
 * of a chunk would repeat the time the chunk after it in time has
 * played). */
static void test_reverse_playback(void **state)
{
  (void)state;
  for (int cs = 0; cs < 4; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 3);
    size_t len = cs % 2 ? ref_rng_range(&rng, 1, 8)
                        : ref_rng_range(&rng, 1500, 4000);
    unsigned block = 1u << ref_rng_range(&rng, 6, 10);
    gboolean flagged = ref_rng_u64(&rng) % 2;
    int chunks = (int)ref_rng_range(&rng, 2, 6);
    size_t k = ref_rng_range(&rng, 2000, 6000); /* frames a chunk */
    set_case("reverse: %u ch, %zu taps, block %u, %d chunks of %zu frames%s",
             ch, len, block, chunks, k, flagged ? ", DISCONT" : "");
    float *hk = random_kernel(len);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "drain", TRUE, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    size_t total = (size_t)chunks * k;
    GstClockTime t_end =
        gst_util_uint64_scale_int_round(total, GST_SECOND, (gint)rate);
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    seg.rate = -1.0;
    seg.stop = seg.position = t_end;
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, total * ch);
    for (int c = chunks - 1; c >= 0; c--)
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, (size_t)c * k, k, ch,
                        rate, 0, flagged) == GST_FLOW_OK,
            "push chunk %d", c);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    /* each chunk's output, by where its timestamps put it */
    collected c[8];
    for (int i = 0; i < chunks; i++)
      collect_init(&c[i], ch, rate,
                   gst_util_uint64_scale_int_round((size_t)i * k, GST_SECOND,
                                                   (gint)rate),
                   k + len);
    GstBuffer *b;
    size_t out = 0;
    while ((b = gst_harness_try_pull(h))) {
      GstClockTime t = GST_BUFFER_PTS(b);
      CHECK(GST_CLOCK_TIME_IS_VALID(t) && t < t_end,
            "output at %" GST_TIME_FORMAT ", the input ends at %"
            GST_TIME_FORMAT, GST_TIME_ARGS(t), GST_TIME_ARGS(t_end));
      size_t i = (size_t)gst_util_uint64_scale_int_round(t, (gint)rate,
                                                        GST_SECOND) /
                 k;
      CHECK(i < (size_t)chunks, "output at %" GST_TIME_FORMAT,
            GST_TIME_ARGS(t));
      out += gst_buffer_get_size(b) / (ch * sizeof(float));
      /* a chunk (one buffer) out as one buffer with its times exactly */
      GstClockTime ct = gst_util_uint64_scale_int_round((size_t)i * k,
                                                        GST_SECOND, (gint)rate),
                   ce = gst_util_uint64_scale_int_round(
                       (size_t)(i + 1) * k, GST_SECOND, (gint)rate);
      CHECK(t == ct && GST_BUFFER_DURATION(b) == ce - ct,
            "chunk %zu: output at %" GST_TIME_FORMAT " for %" GST_TIME_FORMAT
            ", its input at %" GST_TIME_FORMAT " for %" GST_TIME_FORMAT,
            i, GST_TIME_ARGS(t), GST_TIME_ARGS(GST_BUFFER_DURATION(b)),
            GST_TIME_ARGS(ct), GST_TIME_ARGS(ce - ct));
      c[i].times_unchecked = TRUE;
      /* offsets are the input's, counted from the stream's frame 0 */
      CHECK(GST_BUFFER_OFFSET(b) == i * k + c[i].frames,
            "offset %" G_GUINT64_FORMAT ", expected %zu",
            GST_BUFFER_OFFSET(b), i * k + c[i].frames);
      b = gst_buffer_make_writable(b);
      GST_BUFFER_OFFSET(b) = c[i].frames; /* as collect_buf counts them */
      collect_buf(&c[i], b, GST_AUDIO_FORMAT_F32LE);
    }
    CHECK(out == total, "%zu frames out of %zu in", out, total);
    for (int i = 0; i < chunks; i++) {
      CHECK(c[i].frames == k, "chunk %d: %zu frames out, expected %zu "
            "(its timestamps only)", i, c[i].frames, k);
      for (unsigned q = 0; q < ch; q++) {
        double *r = ref_channel(x + (size_t)i * k * ch, k, ch, q, hk, len, k);
        double err = ref_rel_l2(c[i].y + q, ch, r, 1, k);
        CHECK(err <= 2e-5, "chunk %d channel %u: relative L2 error %.3g "
              "(each chunk starts from silence)", i, q, err);
        free(r);
      }
      free(c[i].y);
    }
    free(x);
    free(hk);
    gst_harness_teardown(h);
  }
}

/* Reverse playback after a decoder (vorbisdec, opusdec: GstAudioDecoder
 * pushes a chunk's buffers latest first, DISCONT on the first alone,
 * each buffer's frames in forward order), buffers of up to 20 ms at 48
 * kHz: each ends where the one before it started, so none follows the
 * one before in time. Every buffer comes out as one buffer of exactly
 * its frames, at exactly its timestamps and offsets, in the order it
 * came (decreasing, as a reverse-playing sink wants them), filtered
 * from silence; DISCONT where the input had it. Seen before (QA): a
 * 20 ms opus buffer, moved back 40 ms from where the frame count put it,
 * was no discontinuity (the tolerance is 40 ms): the history of the
 * buffer later in time went into it; and with an FFT kernel each buffer
 * left in two, its last block-size - 1 frames (later in time) pushed
 * after its first ones, with the next buffer: timestamps going up. */
static void test_reverse_decoded(void **state)
{
  (void)state;
  for (int cs = 0; cs < 6; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 3);
    size_t len = cs % 3 == 0 ? ref_rng_range(&rng, 1, 8)
                             : ref_rng_range(&rng, 300, 4000);
    unsigned block = 1u << ref_rng_range(&rng, 6, 10);
    gboolean drain = ref_rng_u64(&rng) % 2;
    int nb = (int)ref_rng_range(&rng, 3, 24);
    size_t sz[24], at[24], total = 0;
    for (int i = 0; i < nb; i++) {
      /* 1 frame to 20 ms; mostly a codec's frame sizes */
      static const size_t codec[] = {960, 1024, 480, 120, 576};
      sz[i] = ref_rng_u64(&rng) % 3 ? codec[ref_rng_u64(&rng) % 5]
                                    : ref_rng_range(&rng, 1, 960);
      at[i] = total;
      total += sz[i];
    }
    set_case("reverse decoded: %u ch, %zu taps, block %u, drain %d, %d "
             "buffers, %zu frames",
             ch, len, block, drain, nb, total);
    float *hk = random_kernel(len);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "drain", drain, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    GstClockTime t0 = GST_SECOND;
    GstClockTime t_end =
        t0 + gst_util_uint64_scale_int_round(total, GST_SECOND, (gint)rate);
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    seg.rate = -1.0;
    seg.start = seg.time = t0;
    seg.stop = seg.position = t_end;
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, total * ch);
    /* offsets as push_frames gives them: from the first frame, at t0 */
    for (int i = nb - 1; i >= 0; i--)
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at[i], sz[i], ch, rate,
                        t0, i == nb - 1) == GST_FLOW_OK,
            "push buffer %d", i);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    int i = nb - 1;
    GstBuffer *b;
    while ((b = gst_harness_try_pull(h))) {
      CHECK(i >= 0, "more buffers out than the %d in (one at %" GST_TIME_FORMAT
            ")", nb, GST_TIME_ARGS(GST_BUFFER_PTS(b)));
      GstClockTime t =
          t0 + gst_util_uint64_scale_int_round(at[i], GST_SECOND, (gint)rate);
      GstClockTime e = t0 + gst_util_uint64_scale_int_round(
                                at[i] + sz[i], GST_SECOND, (gint)rate);
      size_t n = gst_buffer_get_size(b) / (ch * sizeof(float));
      CHECK(GST_BUFFER_PTS(b) == t && GST_BUFFER_DURATION(b) == e - t &&
                n == sz[i],
            "output %d: %zu frames at %" GST_TIME_FORMAT " for %" GST_TIME_FORMAT
            ", expected input buffer %d's: %zu frames at %" GST_TIME_FORMAT
            " for %" GST_TIME_FORMAT,
            nb - 1 - i, n, GST_TIME_ARGS(GST_BUFFER_PTS(b)),
            GST_TIME_ARGS(GST_BUFFER_DURATION(b)), i, sz[i], GST_TIME_ARGS(t),
            GST_TIME_ARGS(e - t));
      CHECK(GST_BUFFER_OFFSET(b) == at[i] &&
                GST_BUFFER_OFFSET_END(b) == at[i] + sz[i],
            "output %d: offsets %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT
            ", expected %zu..%zu",
            nb - 1 - i, GST_BUFFER_OFFSET(b), GST_BUFFER_OFFSET_END(b), at[i],
            at[i] + sz[i]);
      CHECK(!GST_BUFFER_IS_DISCONT(b) == (i != nb - 1),
            "output %d: DISCONT %d, the input's %d", nb - 1 - i,
            GST_BUFFER_IS_DISCONT(b), i == nb - 1);
      collected c;
      collect_init(&c, ch, rate, GST_CLOCK_TIME_NONE, sz[i]);
      c.times_unchecked = TRUE;
      collect_buf(&c, b, GST_AUDIO_FORMAT_F32LE);
      for (unsigned q = 0; q < ch; q++) {
        double *r = ref_channel(x + at[i] * ch, sz[i], ch, q, hk, len, sz[i]);
        double err = ref_rel_l2(c.y + q, ch, r, 1, sz[i]);
        CHECK(err <= 2e-5,
              "output %d channel %u: relative L2 error %.3g (each buffer "
              "filtered from silence)",
              nb - 1 - i, q, err);
        free(r);
      }
      free(c.y);
      i--;
    }
    CHECK(i == -1, "%d buffers out of %d in", nb - 1 - i, nb);
    free(x);
    free(hk);
    gst_harness_teardown(h);
  }
}

static void test_renegotiate(void **state)
{
  (void)state;
  for (int cs = 0; cs < 3; cs++) {
    size_t len = random_len();
    unsigned ch1 = (unsigned)ref_rng_range(&rng, 1, 3),
             ch2 = (unsigned)ref_rng_range(&rng, 1, 3);
    unsigned r1 = 48000, r2 = 22050;
    size_t n1 = ref_rng_range(&rng, 100, 5000),
           n2 = ref_rng_range(&rng, 100, 5000);
    /* the second format where the first ends (a rate change upstream,
     * a playlist's next item) or later */
    gboolean abut = ref_rng_u64(&rng) % 2;
    GstClockTime t2 =
        abut ? gst_util_uint64_scale_int_round(n1, GST_SECOND, (gint)r1)
             : 5 * GST_SECOND;
    set_case(
        "%zu taps, %u ch F32 at %u then %u ch S16 at %u from %" GST_TIME_FORMAT
        ", %zu + %zu frames",
        len, ch1, r1, ch2, r2, GST_TIME_ARGS(t2), n1, n2);
    float *hk = random_kernel(len);
    float *x1 = random_input(GST_AUDIO_FORMAT_F32LE, n1 * ch1);
    float *x2 = random_input(GST_AUDIO_FORMAT_S16LE, n2 * ch2);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, r1, ch1, ch1);
    collected a, b;
    collect_init(&a, ch1, r1, 0, n1 + len);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x1, 0, n1, ch1, r1, 0,
                      TRUE) == GST_FLOW_OK, "push 1");
    collect(h, &a, GST_AUDIO_FORMAT_F32LE);
    set_caps(h, GST_AUDIO_FORMAT_S16LE, r2, ch2, ch2);
    collect(h, &a, GST_AUDIO_FORMAT_F32LE);
    /* the held frames in the old format, before the new caps; not the
     * ring-out, which would overlap the stream going on where the input
     * ended */
    CHECK(a.frames == n1, "first format: %zu frames, expected %zu", a.frames,
          n1);
    collect_init(&b, ch2, r2, t2, n2 + len);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_S16LE, x2, 0, n2, ch2, r2, t2,
                      TRUE) == GST_FLOW_OK, "push 2");
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &b, GST_AUDIO_FORMAT_S16LE);
    CHECK(b.frames == n2 + len - 1, "second format: %zu frames, expected %zu",
          b.frames, n2 + len - 1);
    for (unsigned k = 0; k < ch1; k++) {
      double *w = ref_channel(x1, n1, ch1, k, hk, len, a.frames);
      double e = ref_rel_l2(a.y + k, ch1, w, 1, a.frames);
      CHECK(e <= 2e-5, "first format channel %u: error %.3g", k, e);
      free(w);
    }
    for (unsigned k = 0; k < ch2; k++) {
      double *w = ref_channel(x2, n2, ch2, k, hk, len, b.frames);
      for (size_t i = 0; i < b.frames; i++) /* S16 saturates */
        w[i] = w[i] > 1.0 ? 1.0 : w[i] < -1.0 ? -1.0 : w[i];
      double e = ref_rel_l2(b.y + k, ch2, w, 1, b.frames);
      CHECK(e <= 1e-3, "second format channel %u: error %.3g", k, e);
      free(w);
    }
    gst_harness_teardown(h);
    free(a.y);
    free(b.y);
    free(x1);
    free(x2);
    free(hk);
  }
}

/* c's output is x (n frames of ch channels) through one uninterrupted
 * filter with hk (len taps), against the float64 reference. */
static void check_one_filter(const collected *c, const float *x, size_t n,
                             unsigned ch, const float *hk, size_t len)
{
  for (unsigned k = 0; k < ch; k++) {
    double *w = ref_channel(x, n, ch, k, hk, len, c->frames);
    double e = ref_rel_l2(c->y + k, ch, w, 1, c->frames);
    CHECK(e <= 2e-5, "channel %u: error %.3g", k, e);
    free(w);
  }
}

/* taps[i] as a GValue of type t (a number type GLib converts to double) */
static void tap_value(GValue *v, GType t, float tap)
{
  g_value_init(v, t);
  switch (t) {
  case G_TYPE_FLOAT: g_value_set_float(v, tap); break;
  case G_TYPE_DOUBLE: g_value_set_double(v, tap); break;
  case G_TYPE_INT: g_value_set_int(v, (gint)tap); break;
  case G_TYPE_UINT: g_value_set_uint(v, (guint)tap); break;
  case G_TYPE_INT64: g_value_set_int64(v, (gint64)tap); break;
  case G_TYPE_UINT64: g_value_set_uint64(v, (guint64)tap); break;
  default: g_value_set_long(v, (glong)tap); break;
  }
}

/* The kernel property takes its taps as any number type: doubles
 * (Python's floats, most C code's), ints and 64-bit ints (gst-launch
 * reads "<1, 2>" as ints), not only gfloat: GObject refused the others
 * (its array spec said gfloat) before the element saw them, with a
 * GLib warning that named no tap. The output equals the float64
 * reference of the taps; a tap that is no number (a string) is refused
 * with a warning on the bus naming it, the kernel kept. */
static void test_kernel_number_types(void **state)
{
  (void)state;
  static const GType types[] = {G_TYPE_DOUBLE, G_TYPE_FLOAT,  G_TYPE_INT,
                                G_TYPE_UINT,   G_TYPE_INT64,  G_TYPE_UINT64,
                                G_TYPE_LONG};
  for (size_t ti = 0; ti < G_N_ELEMENTS(types); ti++) {
    GType t = types[ti];
    gboolean integer = t != G_TYPE_DOUBLE && t != G_TYPE_FLOAT;
    gboolean sign = t != G_TYPE_UINT && t != G_TYPE_UINT64;
    size_t len = integer ? ref_rng_range(&rng, 1, 40) : random_len();
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2), rate = 48000;
    size_t n = ref_rng_range(&rng, 1, 20000);
    set_case("%zu taps as %s, %u ch, %zu frames", len, g_type_name(t), ch,
             n);
    float *hk = random_kernel(len);
    if (integer) /* whole numbers the type holds: -3..3 (0..3 unsigned) */
      for (size_t i = 0; i < len; i++)
        hk[i] = (float)((sign ? -3 : 0) +
                        (int)ref_rng_range(&rng, 0, sign ? 6 : 3));
    GstHarness *h = new_fir();
    GValue arr = G_VALUE_INIT;
    gst_value_array_init(&arr, (guint)len);
    for (size_t i = 0; i < len; i++) {
      GValue v = G_VALUE_INIT;
      tap_value(&v, t, hk[i]);
      gst_value_array_append_and_take_value(&arr, &v);
    }
    g_object_set_property(G_OBJECT(h->element), "kernel", &arr);
    g_value_unset(&arr);
    g_value_init(&arr, GST_TYPE_ARRAY);
    g_object_get_property(G_OBJECT(h->element), "kernel", &arr);
    CHECK(gst_value_array_get_size(&arr) == len, "%u taps read back, %zu "
          "set", gst_value_array_get_size(&arr), len);
    for (size_t i = 0; i < len; i++) {
      float got = g_value_get_float(gst_value_array_get_value(&arr, (guint)i));
      CHECK(got == hk[i], "tap %zu reads back %g, set %g", i, got, hk[i]);
    }
    g_value_unset(&arr);
    /* strings (an array holds one type): refused, the kernel as it was */
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    gst_value_array_init(&arr, 2);
    for (int i = 0; i < 2; i++) {
      GValue v = G_VALUE_INIT;
      g_value_init(&v, G_TYPE_STRING);
      g_value_set_string(&v, i ? "1" : "0.5");
      gst_value_array_append_and_take_value(&arr, &v);
    }
    g_object_set_property(G_OBJECT(h->element), "kernel", &arr);
    g_value_unset(&arr);
    CHECK(bus_has(bus, GST_MESSAGE_WARNING, "tap 0 (0.5, a gchararray) is "
                  "not a number"),
          "no warning naming the tap that is no number");
    CHECK(get_ntaps(h->element, NULL) == len, "the refused kernel was taken");
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    collected c;
    collect_init(&c, ch, rate, 0, n + len);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ch, rate, 0,
                      TRUE) == GST_FLOW_OK, "push");
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n + len - 1, "%zu frames out, expected %zu", c.frames,
          n + len - 1);
    check_one_filter(&c, x, n, ch, hk, len);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* The same caps (and segment) sent again mid-stream, as elements do, and
 * a few ms of timestamp jitter must not cut the stream: the output equals
 * one uninterrupted filter. The frames after the jitter leave with their
 * own input's times (they kept the frame count's: a live source resumed
 * after a pause, +20 ms without DISCONT, left every later buffer 20 ms
 * off its sound). */
static void test_same_caps_again(void **state)
{
  (void)state;
  for (int cs = 0; cs < 3; cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2), rate = 48000;
    size_t len = random_len(), n = ref_rng_range(&rng, 2, 20000);
    size_t cut = ref_rng_range(&rng, 1, n - 1);
    set_case("%zu taps, %u ch, caps resent after %zu of %zu frames", len, ch,
             cut, n);
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    collected c;
    collect_init(&c, ch, rate, 0, n + len);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, cut, ch, rate, 0,
                      TRUE) == GST_FLOW_OK, "push 1");
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    /* and its timestamps jitter by a few ms, as a live source's do */
    GstClockTime jitter = ref_rng_range(&rng, 0, 5) * GST_MSECOND;
    if (jitter) {
      c.jump_at = cut;
      c.jump_ts = jitter + gst_util_uint64_scale_int_round(cut, GST_SECOND,
                                                           (gint)rate);
    }
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, cut, n - cut, ch, rate,
                      jitter, FALSE) == GST_FLOW_OK, "push 2");
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n + len - 1, "%zu frames out, expected %zu", c.frames,
          n + len - 1);
    CHECK(c.discont_seen == 1, "%d DISCONT buffers: the resent caps cut the "
          "stream", c.discont_seen);
    check_one_filter(&c, x, n, ch, hk, len);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* F32 frames x pushed in the nc chunks `sizes`, stamped from t0 and,
 * from chunk jump_chunk on, `move` later (no DISCONT), the output
 * collected into c after each, which is told where the move is. */
static void push_moving(GstHarness *h, collected *c, const float *x,
                        const size_t *sizes, size_t nc, unsigned ch,
                        unsigned rate, GstClockTime t0, GstClockTimeDiff move,
                        size_t jump_chunk)
{
  size_t at = 0;
  for (size_t k = 0; k < nc; k++) {
    if (k == jump_chunk) {
      c->jump_at = at;
      c->jump_ts = t0 + move +
                   gst_util_uint64_scale_int_round(at, GST_SECOND, (gint)rate);
    }
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, sizes[k], ch, rate,
                      k >= jump_chunk ? t0 + move : t0, k == 0) == GST_FLOW_OK,
          "push %zu", k);
    at += sizes[k];
    collect(h, c, GST_AUDIO_FORMAT_F32LE);
  }
}

/* A live source resumed after a pause moves its timestamps by a few ms
 * to tens of ms without DISCONT (audiotestsrc: +20 ms): less than a
 * discontinuity, so the history goes on, and every output frame leaves
 * with its input frame's time; an output buffer that holds frames from
 * both sides of the move is cut there. Random kernels (direct and FFT
 * paths), block sizes, chunkings, moves of -39..+39 ms; values against
 * the float64 reference of one uninterrupted filter. */
static void test_timestamp_moves(void **state)
{
  (void)state;
  for (int cs = 0; cs < 8; cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2), rate = 48000;
    size_t len = random_len(), n = ref_rng_range(&rng, 3000, 20000);
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    GstClockTimeDiff move =
        (GstClockTimeDiff)ref_rng_range(&rng, 1, 39) * GST_MSECOND;
    if (cs % 2)
      move = -move;
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = fir_f32(hk, len, block, ch, rate);
    size_t sizes[4096];
    size_t nc = ref_chunking(&rng, n, block, sizes, 4096);
    size_t jump_chunk = nc > 1 ? ref_rng_range(&rng, 1, nc - 1) : 1;
    GstClockTime t0 = GST_SECOND;
    collected c;
    collect_init(&c, ch, rate, t0, n + len);
    set_case("%zu taps, block %u, %u ch, %zu frames in %zu chunks, "
             "timestamps move by %" G_GINT64_FORMAT " ms at chunk %zu",
             len, block, ch, n, nc, move / GST_MSECOND, jump_chunk);
    /* every input flagged: a cut output's second part is not (it
     * carried the flags and metas once more) */
    push_flags = GST_BUFFER_FLAG_DROPPABLE;
    push_moving(h, &c, x, sizes, nc, ch, rate, t0, move, jump_chunk);
    push_flags = 0;
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n + len - 1, "%zu frames out, expected %zu", c.frames,
          n + len - 1);
    CHECK(c.discont_seen == 1, "%d DISCONT buffers: the move cut the stream",
          c.discont_seen);
    CHECK(c.droppable_seen <= nc, "%zu outputs flagged DROPPABLE from %zu "
          "inputs", c.droppable_seen, nc);
    check_one_filter(&c, x, n, ch, hk, len);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
  /* more moves held than the element times one by one (a 20 ms move on
   * each of 125 16-frame buffers, 4095 frames held): each is still no
   * discontinuity (they were summed into one once 64 were held: a
   * ring-out mid-stream, the history cut) */
  for (int drain = 0; drain < 2; drain++) {
    const size_t len = 3000, n = 2000, each = 16;
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", 4096u, "drain", drain, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 1, 1);
    collected c;
    collect_init(&c, 1, 48000, 0, n + len);
    c.times_unchecked = TRUE;
    set_case("%zu moves of 20 ms held, drain=%d", n / each, drain);
    for (size_t at = 0; at < n; at += each)
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, each, 1, 48000,
                        (at / each) * 20 * GST_MSECOND, at == 0) ==
                GST_FLOW_OK,
            "push at %zu", at);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    size_t want = n + (drain ? len - 1 : 0);
    CHECK(c.frames == want, "%zu frames out, expected %zu", c.frames, want);
    CHECK(c.discont_seen == 1, "%d DISCONT buffers: the moves cut the stream",
          c.discont_seen);
    check_one_filter(&c, x, n, 1, hk, len);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* A stream met where a long run takes it (QA, a 24/7 broadcast): first
 * timestamps at 30 days, a year, an hour before GST_CLOCK_TIME_NONE;
 * offsets crossing 2^32 and 2^53, or near G_MAXUINT64; rates up to
 * 192 kHz; a move of the input's timestamps mid-stream (a live source
 * resumed). Output times are the frame count's from the first buffer
 * (gst_util_uint64_scale of the frame count, as far out as that), the
 * offsets that count from the first's, the values one uninterrupted
 * filter's, the latency query that of the frames held. */
static void test_far_timestamps(void **state)
{
  (void)state;
  static const unsigned rates[] = {44100, 48000, 96000, 192000};
  const GstClockTime day = 24 * 3600 * GST_SECOND;
  for (int cs = 0; cs < 6; cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2);
    unsigned rate = cs % 5 == 4 ? (unsigned)ref_rng_range(&rng, 8000, 192000)
                                : rates[ref_rng_range(&rng, 0, 3)];
    /* direct and FFT paths, the reference kept short */
    size_t len = ref_rng_range(&rng, 1, 4000);
    size_t n = ref_rng_range(&rng, 3000, 12000);
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 2);
    GstClockTime jitter = ref_rng_range(&rng, 0, GST_SECOND - 1);
    GstClockTime t0 = cs % 3 == 0   ? 30 * day + jitter
                      : cs % 3 == 1 ? 365 * day + jitter
                                    : GST_CLOCK_TIME_NONE - 3600 * GST_SECOND -
                                          jitter;
    guint64 off0 = cs % 3 == 0   ? ((guint64)1 << 32) - ref_rng_range(&rng, 1, n)
                   : cs % 3 == 1 ? ((guint64)1 << 53) - ref_rng_range(&rng, 1, n)
                                 : G_MAXUINT64 - ((guint64)1 << 33);
    GstClockTimeDiff move =
        (GstClockTimeDiff)ref_rng_range(&rng, 2, 39) * GST_MSECOND;
    if (cs % 2)
      move = -move;
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    size_t sizes[4096];
    size_t nc = ref_chunking(&rng, n, block, sizes, 4096);
    size_t jump_chunk = nc > 1 ? ref_rng_range(&rng, 1, nc - 1) : 1;
    set_case("first pts %" G_GUINT64_FORMAT " ns, offset %" G_GUINT64_FORMAT
             ", %u Hz, %u ch, %zu taps, block %u, depth %u, %zu frames in "
             "%zu chunks, timestamps move by %" G_GINT64_FORMAT
             " ms at chunk %zu",
             t0, off0, rate, ch, len, block, depth, n, nc, move / GST_MSECOND,
             jump_chunk);
    collected c;
    collect_init(&c, ch, rate, t0, n + len);
    c.off0 = push_offset0 = off0;
    push_moving(h, &c, x, sizes, nc, ch, rate, t0, move, jump_chunk);
    push_offset0 = 0;
    guint64 lat;
    g_object_get(h->element, "latency", &lat, NULL);
    GstClockTime held = gst_util_uint64_scale_int_round(n - c.frames,
                                                        GST_SECOND, (gint)rate);
    /* all of it held: a latency longer than the stream */
    CHECK(c.frames ? lat == held : lat >= held, "latency %" G_GUINT64_FORMAT
          " ns with %zu frames (%" G_GUINT64_FORMAT " ns) held", lat,
          n - c.frames, held);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n + len - 1, "%zu frames out, expected %zu", c.frames,
          n + len - 1);
    CHECK(c.discont_seen == 1, "%d DISCONT buffers: the stream was cut",
          c.discont_seen);
    check_one_filter(&c, x, n, ch, hk, len);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* A container that keeps its timestamps rounded (Matroska: to 1 ms;
 * matroskademux ! cudafir on raw PCM) puts each buffer up to 1 ms off
 * where the frame count puts it: rounding, not a move. The output runs on
 * the frame count's times from the first buffer, one output buffer an
 * input at most before EOS (each input left as two where the element
 * holds frames back, cut at every rounded time), values of one
 * uninterrupted filter. Random rates, kernels, block sizes, depths,
 * chunkings, rounding to nearest or down. */
static void test_timestamp_rounding(void **state)
{
  (void)state;
  static const unsigned rates[] = {22050, 44100, 48000, 96000};
  for (int cs = 0; cs < 6; cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2);
    unsigned rate = rates[ref_rng_range(&rng, 0, 3)];
    size_t len = random_len(), n = ref_rng_range(&rng, 3000, 20000);
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 2);
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    size_t sizes[4096];
    size_t nc = ref_chunking(&rng, n, block, sizes, 4096), at = 0;
    GstClockTime t0 = ref_rng_range(&rng, 0, 1000000) * 997;
    push_quantum = GST_MSECOND;
    push_floor = cs % 2;
    GstClockTime t0r = (push_floor ? t0 : t0 + GST_MSECOND / 2) /
                       GST_MSECOND * GST_MSECOND;
    set_case("%zu taps, block %u, depth %u, %u ch at %u Hz, %zu frames in "
             "%zu chunks, timestamps rounded %s to 1 ms",
             len, block, depth, ch, rate, n, nc,
             push_floor ? "down" : "to nearest");
    collected c;
    collect_init(&c, ch, rate, t0r, n + len);
    for (size_t k = 0; k < nc; k++) {
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, sizes[k], ch, rate,
                        t0, k == 0) == GST_FLOW_OK,
            "push %zu", k);
      at += sizes[k];
      collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    }
    push_quantum = 0;
    CHECK(c.buffers <= nc, "%zu output buffers from %zu inputs before EOS",
          c.buffers, nc);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n + len - 1, "%zu frames out, expected %zu", c.frames,
          n + len - 1);
    CHECK(c.discont_seen == 1, "%d DISCONT buffers: the rounding cut the "
          "stream", c.discont_seen);
    check_one_filter(&c, x, n, ch, hk, len);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* Buffers without timestamps first, then with (an appsrc stamping from
 * its second buffer on): from the first timestamp on, every output
 * buffer is timed, the held frames included, as the frame count from
 * the run's first frame puts them counted back from it (with offsets
 * likewise); the whole run left untimed. Random channels (stereo, 5.1,
 * 7.1), kernel (FFT paths: frames held), block and buffer sizes; the
 * samples against the float64 reference. */
static void test_timestamps_from_later_buffer(void **state)
{
  (void)state;
  static const unsigned chans[] = {2, 6, 8};
  for (int cs = 0; cs < 3; cs++) {
    unsigned ch = chans[ref_rng_range(&rng, 0, 2)], rate = 96000;
    size_t len = ref_rng_range(&rng, 1, 2000), n = ref_rng_range(&rng, 2, 6000);
    size_t n0 = ref_rng_range(&rng, 1, n - 1); /* frames without timestamps */
    guint block = 1u << ref_rng_range(&rng, 6, 10);
    GstClockTime t0 = ref_rng_range(&rng, 1, 3600) * GST_SECOND;
    set_case("%u ch, %zu taps, block %u, %zu frames, the first %zu untimed, "
             "then from %" GST_TIME_FORMAT, ch, len, block, n, n0,
             GST_TIME_ARGS(t0));
    float *hk = random_kernel(len);
    GstHarness *h = fir_f32(hk, len, block, ch, rate);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    float *y = xalloc(n * ch * sizeof *y + 4);
    size_t got = 0;
    gboolean timed = FALSE; /* a timestamped buffer went in */
    for (size_t at = 0; at < n;) {
      size_t m = pick(ref_rng_range(&rng, 1, 1200), (at < n0 ? n0 : n) - at);
      gboolean stamp = at >= n0;
      GstBuffer *b = gst_buffer_new_allocate(NULL, m * ch * 4, NULL);
      CHECK(b && gst_buffer_fill(b, 0, x + at * ch, m * ch * 4) == m * ch * 4,
            "a buffer of %zu frames", m);
      if (stamp) {
        GST_BUFFER_PTS(b) = t0 + gst_util_uint64_scale_int_round(
                                     at, GST_SECOND, (gint)rate);
        GST_BUFFER_DURATION(b) =
            t0 + gst_util_uint64_scale_int_round(at + m, GST_SECOND,
                                                 (gint)rate) -
            GST_BUFFER_PTS(b);
        GST_BUFFER_OFFSET(b) = at;
        GST_BUFFER_OFFSET_END(b) = at + m;
      }
      if (at == 0)
        GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
      CHECK(gst_harness_push(h, b) == GST_FLOW_OK, "push at frame %zu", at);
      at += m;
      timed |= stamp;
      GstBuffer *o;
      while ((o = gst_harness_try_pull(h))) {
        size_t k = gst_buffer_get_size(o) / (ch * 4);
        CHECK(got + k <= n, "more frames out than in");
        gst_buffer_extract(o, 0, y + got * ch, k * ch * 4);
        GstClockTime want = t0 + gst_util_uint64_scale_int_round(
                                     got, GST_SECOND, (gint)rate),
                     end = t0 + gst_util_uint64_scale_int_round(
                                    got + k, GST_SECOND, (gint)rate);
        if (timed)
          CHECK(GST_BUFFER_PTS(o) == want &&
                    GST_BUFFER_DURATION(o) == end - want &&
                    GST_BUFFER_OFFSET(o) == got &&
                    GST_BUFFER_OFFSET_END(o) == got + k,
                "output frames %zu..%zu: pts %" GST_TIME_FORMAT " + %"
                GST_TIME_FORMAT ", offsets %" G_GUINT64_FORMAT "..%"
                G_GUINT64_FORMAT "; expected %" GST_TIME_FORMAT " + %"
                GST_TIME_FORMAT ", the same frames",
                got, got + k, GST_TIME_ARGS(GST_BUFFER_PTS(o)),
                GST_TIME_ARGS(GST_BUFFER_DURATION(o)), GST_BUFFER_OFFSET(o),
                GST_BUFFER_OFFSET_END(o), GST_TIME_ARGS(want),
                GST_TIME_ARGS(end - want));
        got += k;
        gst_buffer_unref(o);
      }
    }
    g_object_set(h->element, "drain", FALSE, NULL);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    GstBuffer *o;
    while ((o = gst_harness_try_pull(h))) {
      size_t k = gst_buffer_get_size(o) / (ch * 4);
      CHECK(got + k <= n, "more frames out than in at EOS");
      GstClockTime want = t0 + gst_util_uint64_scale_int_round(
                                   got, GST_SECOND, (gint)rate);
      CHECK(GST_BUFFER_PTS(o) == want, "held frames %zu..: pts %"
            GST_TIME_FORMAT ", expected %" GST_TIME_FORMAT, got,
            GST_TIME_ARGS(GST_BUFFER_PTS(o)), GST_TIME_ARGS(want));
      gst_buffer_extract(o, 0, y + got * ch, k * ch * 4);
      got += k;
      gst_buffer_unref(o);
    }
    CHECK(got == n, "%zu frames out, expected %zu", got, n);
    for (unsigned j = 0; j < ch; j++) {
      double *w = ref_channel(x, n, ch, j, hk, len, n);
      double e = ref_rel_l2(y + j, ch, w, 1, n);
      CHECK(e <= 2e-5, "channel %u: error %.3g", j, e);
      free(w);
    }
    gst_harness_teardown(h);
    free(hk);
    free(x);
    free(y);
  }
}

/* Finite input whose filtering overflows float (a sample of 3e38 through
 * a tap of 2; S16 through taps of 2e38 and more): the output is not finite, and
 * nothing said so on the bus (the input check looks for NaN and infinity
 * in the input only; the CLI warns): a warning once a run, naming the
 * output channel, at or after the sample's push (on the FFT paths its
 * block's outputs before it too), none for the same stream without the
 * overflow, again after a flush. */
static void test_overflow_output(void **state)
{
  (void)state;
  for (int round = 0; round < 6; round++) {
    GstAudioFormat f = round % 3 == 2 ? GST_AUDIO_FORMAT_S16LE
                                      : GST_AUDIO_FORMAT_F32LE;
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 3), rate = 48000;
    size_t len = ref_rng_range(&rng, 2, 3000),
           n = ref_rng_range(&rng, 3000, 9000);
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    float *h = xalloc(len * sizeof *h);
    ref_rng_fill(&rng, h, len);
    size_t s = ref_rng_range(&rng, 0, n - 2);
    size_t c = ref_rng_range(&rng, 0, ch - 1);
    for (int bad = round < 4; bad >= 0; bad--) {
      float *x = random_input(f, n * ch);
      if (f == GST_AUDIO_FORMAT_S16LE && !bad) {
        ref_rng_fill(&rng, h, len); /* taps of a plain kernel */
      } else if (f == GST_AUDIO_FORMAT_S16LE) {
        for (size_t i = 0; i < len; i++) /* taps of 2e38 and more */
          h[i] = (float)(2e38 * (1.0 + 0.5 * ref_rng_unit(&rng)));
        for (size_t i = 0; i < n * ch; i++) /* silence but two samples */
          x[i] = 0.0f;
        x[s * ch + c] = 0.875f;
        x[(s + 1) * ch + c] = 0.875f;
      } else {
        h[0] = 2.0f;
        x[s * ch + c] = bad ? 3e38f : 0.5f;
      }
      GstHarness *hh = new_fir();
      GstBus *bus = gst_bus_new();
      gst_element_set_bus(hh->element, bus);
      set_taps(hh->element, h, len);
      g_object_set(hh->element, "block-size", block, NULL);
      set_caps(hh, f, rate, ch, ch);
      set_case("round %d: %s, %u ch, %zu taps, block %u, %s at frame %zu "
               "channel %zu",
               round, fmt_name(f), ch, len, block,
               bad ? "overflow" : "no overflow", s, c);
      collected out;
      collect_init(&out, ch, rate, 0, n + len);
      size_t sizes[4096];
      size_t nc = ref_chunking(&rng, n, block, sizes, 4096), at = 0;
      int said = 0;
      char want[64];
      snprintf(want, sizeof want, "(channel %zu), the input finite", c);
      for (size_t k = 0; k < nc; k++) {
        CHECK(push_frames(hh, f, x, at, sizes[k], ch, rate, 0, k == 0) ==
                  GST_FLOW_OK,
              "push");
        at += sizes[k];
        collect(hh, &out, f);
        GstMessage *m;
        while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING))) {
          GError *err = NULL;
          gst_message_parse_warning(m, &err, NULL);
          /* such taps may overflow a backend's kernel spectra (the FFT
           * paths on CUDA: 0 x inf from the first output on, every
           * channel): where is not checked there */
          int anywhere = f == GST_AUDIO_FORMAT_S16LE;
          CHECK(bad && (anywhere || at > s), "a warning %s: %s",
                bad ? "before the sample was pushed" : "without overflow",
                err->message);
          CHECK(strstr(err->message, "the output is") &&
                    (anywhere || strstr(err->message, want)),
                "warning \"%s\", want \"the output is ...%s\"",
                err->message, want);
          said++;
          g_clear_error(&err);
          gst_message_unref(m);
        }
      }
      assert_true(gst_harness_push_event(hh, gst_event_new_eos()));
      collect(hh, &out, f);
      said += bus_has(bus, GST_MESSAGE_WARNING, "the output is");
      size_t nonfinite = 0;
      for (size_t i = 0; i < out.frames * ch; i++)
        nonfinite += !isfinite(out.y[i]);
      if (f == GST_AUDIO_FORMAT_F32LE)
        CHECK(bad ? nonfinite > 0 : nonfinite == 0,
              "%zu outputs not finite", nonfinite);
      CHECK(said == bad, "%d warnings, want %d", said, bad);
      if (bad) { /* after a flush, said again */
        gst_harness_push_event(hh, gst_event_new_flush_start());
        gst_harness_push_event(hh, gst_event_new_flush_stop(TRUE));
        GstSegment seg;
        gst_segment_init(&seg, GST_FORMAT_TIME);
        gst_harness_push_event(hh, gst_event_new_segment(&seg));
        CHECK(push_frames(hh, f, x, s, MIN(n - s, (size_t)block), ch, rate,
                          0, TRUE) == GST_FLOW_OK,
              "push after the flush");
        assert_true(gst_harness_push_event(hh, gst_event_new_eos()));
        CHECK(bus_has(bus, GST_MESSAGE_WARNING, "the output is"),
              "not said again after a flush");
      }
      gst_element_set_bus(hh->element, NULL);
      gst_object_unref(bus);
      gst_harness_teardown(hh);
      free(out.y);
      free(x);
    }
    free(h);
  }
}

/* ---- kernel swap while playing: the crossfade of engine.h --------------- */

/* Cases 4 and 5 run on a fake device (src/engine/fake.c) whose kernel
 * swap fails as a device allocation would: with backend=auto the element
 * must go on on the CPU with the new kernel and the same crossfade, and
 * say so on the bus and in backend-in-use. */
static void test_kernel_swap(void **state)
{
  (void)state;
  for (int cs = 0; cs < 6; cs++) {
    int fault = cs >= 4;
    if (fault && strcmp(backend, "auto")) {
      print_message("skipped: the swap on a failing device needs backend "
                    "auto\n");
      break;
    }
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t l1 = ref_rng_range(&rng, 1, 300), l2 = ref_rng_range(&rng, 1, 300);
    size_t xf = ref_rng_range(&rng, 0, 2000);
    size_t n1 = ref_rng_range(&rng, 1, 6000), n2 = ref_rng_range(&rng, 1, 6000);
    set_case("swap %zu -> %zu taps after %zu frames, crossfade %zu frames, "
             "%zu more frames, %u ch", l1, l2, n1, xf, n2, ch);
    float *h1 = random_kernel(l1), *h2 = random_kernel(l2);
    size_t n = n1 + n2;
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, h1, l1);
    g_object_set(h->element, "crossfade",
                 (guint64)gst_util_uint64_scale_int(xf, GST_SECOND,
                                                    (gint)rate),
                 "drain", FALSE, NULL);
    GstBus *bus = NULL;
    if (fault) {
      add_case(", fake device failing the swap");
      gst_util_set_object_arg(G_OBJECT(h->element), "backend", "auto");
      bus = gst_bus_new();
      gst_element_set_bus(h->element, bus);
      setenv("CF_TEST_FAKE_DEVICE", "kernel:1", 1);
    }
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    unsetenv("CF_TEST_FAKE_DEVICE");
    collected c;
    collect_init(&c, ch, rate, 0, n + 1);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n1, ch, rate, 0,
                      TRUE) == GST_FLOW_OK, "push 1");
    set_taps(h->element, h2, l2);
    for (size_t at = n1; at < n;) {
      size_t k = pick(ref_rng_range(&rng, 1, 999), n - at);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, 0,
                        FALSE) == GST_FLOW_OK, "push 2");
      at += k;
    }
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
    for (unsigned k = 0; k < ch; k++) {
      double *y1 = ref_channel(x, n, ch, k, h1, l1, n);
      double *y2 = ref_channel(x, n, ch, k, h2, l2, n);
      for (size_t i = 0; i < n; i++) {
        double w = i < n1 ? 0.0
                   : i - n1 + 1 >= xf + 1
                       ? 1.0
                       : (double)(i - n1 + 1) / (double)(xf + 1);
        y1[i] = (1.0 - w) * y1[i] + w * y2[i];
      }
      double e = ref_rel_l2(c.y + k, ch, y1, 1, n);
      CHECK(e <= 2e-5, "channel %u: error %.3g against the crossfade", k, e);
      free(y1);
      free(y2);
    }
    float first = 0;
    CHECK(get_ntaps(h->element, &first) == l2 && first == h2[0],
          "kernel property does not read back the new taps");
    if (bus) {
      gchar *in_use;
      g_object_get(h->element, "backend-in-use", &in_use, NULL);
      CHECK(in_use && !strcmp(in_use, "cpu"), "backend-in-use = %s after "
            "the fake device failed the swap", in_use ? in_use : "(null)");
      g_free(in_use);
      CHECK(bus_has(bus, GST_MESSAGE_WARNING, "fake device: out of memory"),
            "no warning naming the device's error on the bus");
      CHECK(!bus_has(bus, GST_MESSAGE_ERROR, ""), "an error on the bus");
      gst_element_set_bus(h->element, NULL);
      gst_object_unref(bus);
    }
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(h1);
    free(h2);
  }
}

/* A kernel change just before a flush (a seek) or a DISCONT buffer, or
 * after a flush before any buffer: what follows is filtered from silence
 * by the newest kernel alone (engine.h: a reset completes every swap), no
 * crossfade from the old one; the change was applied after the reset, at
 * the next buffer, and crossfaded from the old kernel after the flush
 * (QA). `how`: 0 change, flush; 1 change, DISCONT buffer (A's held frames
 * and ring-out are A's, the old kernel's); 2 flush, change. Random
 * kernels, crossfade, chunking; A and B against the float64 reference. */
static void run_change_then_break(int how)
{
  unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
  size_t l1 = random_len(), l2 = random_len();
  size_t xf = ref_rng_range(&rng, 200, 4000);
  size_t na = ref_rng_range(&rng, 1, 6000), nb = ref_rng_range(&rng, 1, 6000);
  unsigned block = 1u << ref_rng_range(&rng, 5, 10);
  gboolean drain = ref_rng_u64(&rng) % 2;
  set_case("%s: %zu -> %zu taps, crossfade %zu frames, block %u, drain %d, "
           "A %zu, B %zu frames, %u ch",
           how == 0   ? "change, flush"
           : how == 1 ? "change, DISCONT"
                      : "flush, change",
           l1, l2, xf, block, drain, na, nb, ch);
  float *h1 = random_kernel(l1), *h2 = random_kernel(l2);
  float *xa = random_input(GST_AUDIO_FORMAT_F32LE, na * ch);
  float *xb = random_input(GST_AUDIO_FORMAT_F32LE, nb * ch);
  GstHarness *h = new_fir();
  set_taps(h->element, h1, l1);
  g_object_set(h->element, "block-size", block, "drain", drain, "crossfade",
               (guint64)gst_util_uint64_scale_int(xf, GST_SECOND, (gint)rate),
               NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
  size_t a_total = na + (drain ? l1 - 1 : 0), b_total = nb + (drain ? l2 - 1 : 0);
  collected a, b;
  collect_init(&a, ch, rate, 0, a_total + 1);
  for (size_t at = 0; at < na;) {
    size_t k = pick(ref_rng_range(&rng, 1, 2000), na - at);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, xa, at, k, ch, rate, 0,
                      at == 0) == GST_FLOW_OK, "push A");
    at += k;
  }
  collect(h, &a, GST_AUDIO_FORMAT_F32LE);
  if (how != 2)
    set_taps(h->element, h2, l2);
  if (how != 1) {
    assert_true(gst_harness_push_event(h, gst_event_new_flush_start()));
    assert_true(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    GstBuffer *stale; /* the flush drops what was pending downstream */
    while ((stale = gst_harness_try_pull(h)))
      gst_buffer_unref(stale);
  }
  if (how == 2)
    set_taps(h->element, h2, l2);
  GstClockTime tb = how == 1 ? 10 * GST_SECOND : 0;
  collect_init(&b, ch, rate, tb, b_total + 1);
  for (size_t at = 0; at < nb;) {
    size_t k = pick(ref_rng_range(&rng, 1, 2000), nb - at);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, xb, at, k, ch, rate, tb,
                      at == 0) == GST_FLOW_OK, "push B");
    at += k;
    if (how == 1)
      collect_split(h, &a, &b, tb, GST_AUDIO_FORMAT_F32LE);
    else
      collect(h, &b, GST_AUDIO_FORMAT_F32LE);
  }
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &b, GST_AUDIO_FORMAT_F32LE);
  if (how == 1)
    CHECK(a.frames == a_total, "A: %zu frames out, expected %zu", a.frames,
          a_total);
  CHECK(b.frames == b_total, "B: %zu frames out, expected %zu", b.frames,
        b_total);
  for (unsigned k = 0; k < ch; k++) {
    double *wa = ref_channel(xa, na, ch, k, h1, l1, a_total);
    double *wb = ref_channel(xb, nb, ch, k, h2, l2, b_total);
    double ea = ref_rel_l2(a.y + k, ch, wa, 1, MIN(a.frames, a_total));
    double eb = ref_rel_l2(b.y + k, ch, wb, 1, MIN(b.frames, b_total));
    CHECK(ea <= 2e-5, "channel %u: A error %.3g against the old kernel", k,
          ea);
    CHECK(eb <= 2e-5, "channel %u: B error %.3g against the new kernel "
          "alone", k, eb);
    free(wa);
    free(wb);
  }
  gst_harness_teardown(h);
  free(a.y);
  free(b.y);
  free(xa);
  free(xb);
  free(h1);
  free(h2);
}

static void test_kernel_change_then_break(void **state)
{
  (void)state;
  for (int i = 0; i < 9; i++)
    run_change_then_break(i % 3);
}

/* A gate on opening one file: the library's fopen64 and open64 (its
 * loaders open kernel files with open(), _FILE_OFFSET_BITS=64) come here
 * (the executable's definitions are found first), and opening
 * `gate_path` waits until the gate opens. A test holds a kernel-file
 * load still so. */
static GMutex gate_mu;
static GCond gate_cv;
static const char *gate_path;
static gboolean gate_shut, gate_hit;

static void gate_pass(const char *path)
{
  g_mutex_lock(&gate_mu);
  if (gate_path && path && strcmp(path, gate_path) == 0) {
    gate_hit = TRUE;
    g_cond_broadcast(&gate_cv);
    while (gate_shut)
      g_cond_wait(&gate_cv, &gate_mu);
  }
  g_mutex_unlock(&gate_mu);
}

__attribute__((visibility("default"))) FILE *fopen64(const char *path,
                                                     const char *mode);
FILE *fopen64(const char *path, const char *mode)
{
  static FILE *(*real)(const char *, const char *);
  if (!real)
    real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen64");
  gate_pass(path);
  return real(path, mode);
}

__attribute__((visibility("default"))) int open64(const char *path,
                                                  int flags, ...);
int open64(const char *path, int flags, ...)
{
  static int (*real)(const char *, int, ...);
  if (!real)
    real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
  mode_t mode = 0;
#ifdef O_TMPFILE
  int with_mode = flags & (O_CREAT | O_TMPFILE);
#else
  int with_mode = flags & O_CREAT;
#endif
  if (with_mode) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  gate_pass(path);
  return real(path, flags, mode);
}

static void gate_set(const char *path, gboolean shut)
{
  g_mutex_lock(&gate_mu);
  gate_path = path;
  gate_shut = shut;
  gate_hit = FALSE;
  g_cond_broadcast(&gate_cv);
  g_mutex_unlock(&gate_mu);
}

/* Wait up to 10 s for *flag (under gate_mu); whether it came. */
static gboolean gate_wait(gboolean *flag)
{
  gint64 end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&gate_mu);
  while (!*flag && g_cond_wait_until(&gate_cv, &gate_mu, end))
    ;
  gboolean got = *flag;
  g_mutex_unlock(&gate_mu);
  return got;
}

typedef struct loader_job {
  GstElement *e;
  const char *path;
} loader_job;

static gpointer set_file_thread(gpointer data)
{
  loader_job *j = data;
  g_object_set(j->e, "kernel-file", j->path, NULL);
  return NULL;
}

typedef struct push_job {
  GstHarness *h;
  const float *x;
  size_t from, n;
  unsigned ch, rate;
  gboolean done;
  GstFlowReturn ret;
} push_job;

static gpointer push_thread(gpointer data)
{
  push_job *j = data;
  GstFlowReturn r = GST_FLOW_OK;
  for (size_t at = j->from; r == GST_FLOW_OK && at < j->from + j->n;) {
    size_t k = MIN((size_t)97, j->from + j->n - at);
    r = push_frames(j->h, GST_AUDIO_FORMAT_F32LE, j->x, at, k, j->ch, j->rate,
                    0, FALSE);
    at += k;
  }
  g_mutex_lock(&gate_mu);
  j->ret = r;
  j->done = TRUE;
  g_cond_broadcast(&gate_cv);
  g_mutex_unlock(&gate_mu);
  return NULL;
}

/* cf_engine_new_audio, as the element calls it, held while build_shut is
 * set (exported as the file gate's stand-ins); the real one after. */
static gboolean build_shut, build_hit;

__attribute__((visibility("default"))) cf_status
cf_engine_new_audio(const cf_audio_config *cfg, const cf_kernel *k,
                    cf_engine **out);
cf_status cf_engine_new_audio(const cf_audio_config *cfg, const cf_kernel *k,
                              cf_engine **out)
{
  static cf_status (*real)(const cf_audio_config *, const cf_kernel *,
                           cf_engine **);
  if (!real)
    real = (cf_status(*)(const cf_audio_config *, const cf_kernel *,
                         cf_engine **))dlsym(RTLD_NEXT, "cf_engine_new_audio");
  g_mutex_lock(&gate_mu);
  if (build_shut) {
    build_hit = TRUE;
    g_cond_broadcast(&gate_cv);
    while (build_shut)
      g_cond_wait(&gate_cv, &gate_mu);
  }
  g_mutex_unlock(&gate_mu);
  return real ? real(cfg, k, out) : CF_E_INTERNAL;
}

typedef struct caps_job {
  GstHarness *h;
  unsigned ch, rate;
} caps_job;

static gpointer caps_thread(gpointer data)
{
  caps_job *j = data;
  set_caps(j->h, GST_AUDIO_FORMAT_F32LE, j->rate, j->ch, j->ch);
  return NULL;
}

typedef struct ready_set_job {
  GstElement *e;
  guint threads, block;
  gboolean done;
} ready_set_job;

/* A UI thread setting what it shows: threads as it is, and another
 * block-size */
static gpointer ready_set_thread(gpointer data)
{
  ready_set_job *j = data;
  g_object_set(j->e, "threads", j->threads, NULL);
  g_object_set(j->e, "block-size", j->block, NULL);
  g_mutex_lock(&gate_mu);
  j->done = TRUE;
  g_cond_broadcast(&gate_cv);
  g_mutex_unlock(&gate_mu);
  return NULL;
}

/* block-size, threads (the settings the engine is made from) set from an
 * application's thread while the streaming thread makes the engine (a
 * 2^20-tap one takes 0.1 s and more; held here): the set returns at once
 * (it waited for the whole build: 93 ms for the same threads; QA). The
 * build took the settings as they were: the other block-size is refused,
 * as once the engine runs, and reads back as the one the stream uses;
 * the stream then filters as the reference does. */
static void test_setter_during_build(void **state)
{
  (void)state;
  unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
  size_t len = ref_rng_range(&rng, 1, 3000), n = ref_rng_range(&rng, 1, 5000);
  guint block = 256u << ref_rng_range(&rng, 0, 3);
  set_case("setter during a build: %u ch, taps %zu, block %u, %zu frames",
           ch, len, block, n);
  float *hk = random_kernel(len);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
  GstHarness *h = new_fir();
  set_taps(h->element, hk, len);
  g_object_set(h->element, "block-size", block, "drain", FALSE, NULL);
  guint threads;
  g_object_get(h->element, "threads", &threads, NULL);
  g_mutex_lock(&gate_mu);
  build_shut = TRUE;
  build_hit = FALSE;
  g_mutex_unlock(&gate_mu);
  caps_job cj = {h, ch, rate};
  GThread *ct = g_thread_new("caps", caps_thread, &cj);
  gboolean held = gate_wait(&build_hit);
  ready_set_job sj = {h->element, threads, block * 2, FALSE};
  GThread *st = held ? g_thread_new("set", ready_set_thread, &sj) : NULL;
  gboolean set_returned = held && gate_wait(&sj.done);
  g_mutex_lock(&gate_mu);
  build_shut = FALSE;
  g_cond_broadcast(&gate_cv);
  g_mutex_unlock(&gate_mu);
  g_thread_join(ct);
  if (st)
    g_thread_join(st);
  CHECK(held, "no engine was built at the caps");
  CHECK(set_returned, "g_object_set(threads, block-size) waited for the "
        "engine build");
  guint now;
  g_object_get(h->element, "block-size", &now, NULL);
  CHECK(now == block, "block-size reads back %u while the engine was built "
        "with %u", now, block);
  collected c;
  collect_init(&c, ch, rate, 0, n + 1);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ch, rate, 0, TRUE) ==
            GST_FLOW_OK,
        "push");
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &c, GST_AUDIO_FORMAT_F32LE);
  CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
  for (unsigned k = 0; k < ch; k++) {
    double *y = ref_channel(x, n, ch, k, hk, len, n);
    double e = ref_rel_l2(c.y + k, ch, y, 1, n);
    CHECK(e <= 2e-5, "channel %u: error %.3g after the build", k, e);
    free(y);
  }
  gst_harness_teardown(h);
  free(c.y);
  free(hk);
  free(x);
}


/* `kernel` read back while streaming: the GValues of its taps (1M for a
 * 2^20-tap kernel: 61 ms) are made without the object lock, which the
 * streaming thread and every other getter waited for (QA); the taps are
 * those set. */
static void test_kernel_get_unlocked(void **state)
{
  (void)state;
  unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
  size_t len = ref_rng_range(&rng, 1, 3000), n = ref_rng_range(&rng, 1, 3000);
  set_case("kernel read back: %u ch, taps %zu", ch, len);
  float *hk = random_kernel(len);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
  GstHarness *h = fir_f32(hk, len, 256, ch, rate);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ch, rate, 0, TRUE) ==
            GST_FLOW_OK,
        "push");
  guint got;
  float *back = kernel_read_watched(h->element, &got);
  CHECK(lock_watch_calls == len, "%u taps made by the getter, %zu set (the "
        "stand-in not reached?)", lock_watch_calls, len);
  CHECK(!lock_watch_held, "the kernel getter made its GValues with the "
        "object lock held");
  CHECK(got == len && memcmp(back, hk, len * sizeof *hk) == 0,
        "kernel reads back as %u other taps, %zu set", got, len);
  g_free(back);
  gst_harness_teardown(h);
  free(hk);
  free(x);
}

/* kernel-file set while PLAYING, its file slow to read (held at open):
 * buffers keep flowing with the old kernel meanwhile (the streaming
 * thread never waits for a file), and once it is read the new kernel
 * crossfades in at the next buffer, exactly, over the crossfade set when
 * the change was made. */
static void test_file_load_off_thread(void **state)
{
  (void)state;
  unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
  size_t l1 = ref_rng_range(&rng, 1, 3000), l2 = ref_rng_range(&rng, 1, 3000);
  size_t n1 = ref_rng_range(&rng, 1, 5000), n2 = ref_rng_range(&rng, 1, 5000),
         n3 = ref_rng_range(&rng, 1, 5000), n = n1 + n2 + n3;
  size_t xf = ref_rng_range(&rng, 0, 2000);
  set_case("kernel-file while playing: %u ch, taps %zu -> %zu, swap after "
           "%zu + %zu frames, crossfade %zu",
           ch, l1, l2, n1, n2, xf);
  float *h1 = random_kernel(l1), *h2 = random_kernel(l2);
  const char *path = fixture("slow-kernel.txt");
  GString *text = g_string_new(NULL);
  for (size_t i = 0; i < l2; i++)
    g_string_append_printf(text, "%.9g\n", (double)h2[i]);
  write_bytes(path, text->str, text->len);
  g_string_free(text, TRUE);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
  GstHarness *h = new_fir();
  set_taps(h->element, h1, l1);
  g_object_set(h->element, "crossfade",
               (guint64)gst_util_uint64_scale_int(xf, GST_SECOND, (gint)rate),
               "drain", FALSE, NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
  collected c;
  collect_init(&c, ch, rate, 0, n + 1);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n1, ch, rate, 0, TRUE) ==
            GST_FLOW_OK,
        "push 1");

  gate_set(path, TRUE);
  loader_job lj = {h->element, path};
  GThread *loader = g_thread_new("set-kernel-file", set_file_thread, &lj);
  gboolean held = gate_wait(&gate_hit);
  push_job pj = {h, x, n1, n2, ch, rate, FALSE, GST_FLOW_OK};
  GThread *pusher = held ? g_thread_new("push", push_thread, &pj) : NULL;
  gboolean flowed = held && gate_wait(&pj.done);
  gate_set(NULL, FALSE); /* let the file be read */
  g_thread_join(loader);
  if (pusher)
    g_thread_join(pusher);
  CHECK(held, "setting kernel-file never opened %s", path);
  CHECK(flowed,
        "buffers pushed while kernel-file was being read did not "
        "get through within 10 s: the streaming thread waited for the file");
  CHECK(pj.ret == GST_FLOW_OK, "push 2: %s", gst_flow_get_name(pj.ret));
  /* a crossfade set after the change is for the next one: this one
   * blends over the value it was made with (cudafilterd's swap-kernel
   * sets its own and puts the element's back at once) */
  g_object_set(h->element, "crossfade",
               (guint64)gst_util_uint64_scale_int(xf + 1000, GST_SECOND,
                                                  (gint)rate),
               NULL);

  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, n1 + n2, n3, ch, rate, 0,
                    FALSE) == GST_FLOW_OK,
        "push 3");
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &c, GST_AUDIO_FORMAT_F32LE);
  CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
  size_t S = n1 + n2;
  for (unsigned k = 0; k < ch; k++) {
    double *y1 = ref_channel(x, n, ch, k, h1, l1, n);
    double *y2 = ref_channel(x, n, ch, k, h2, l2, n);
    for (size_t i = S; i < n; i++) {
      double w = i - S >= xf ? 1.0 : (double)(i - S + 1) / (double)(xf + 1);
      y1[i] = w == 1.0 ? y2[i] : (1.0 - w) * y1[i] + w * y2[i];
    }
    double e = ref_rel_l2(c.y + k, ch, y1, 1, n);
    CHECK(e <= 2e-5,
          "channel %u: error %.3g against the old kernel, then "
          "the file's crossfading in at frame %zu",
          k, e, S);
    free(y1);
    free(y2);
  }
  gst_harness_teardown(h);
  free(c.y);
  free(x);
  free(h1);
  free(h2);
}

/* Kernel changes as from a slider: a new kernel before many of the small
 * buffers, several within one FFT block (the engine's latency), each
 * crossfading from the one before (engine.h: a change during a crossfade
 * takes effect where it ends; one still waiting when the next comes never
 * does). */
static void test_kernel_burst(void **state)
{
  (void)state;
  enum { NK = 10 };
  for (int cs = 0; cs < 3; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    guint block = 256u << (2 * (unsigned)ref_rng_range(&rng, 0, 2));
    size_t xf = ref_rng_range(&rng, 0, 600),
           n = ref_rng_range(&rng, 3000, 9000);
    float *hk[NK];
    size_t lk[NK], S[NK] = {0};
    for (int k = 0; k < NK; k++) {
      lk[k] = ref_rng_range(&rng, 129, 1500);
      hk[k] = random_kernel(lk[k]);
    }
    set_case("slider: block %u, crossfade %zu frames, %zu frames, %u ch", block,
             xf, n, ch);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk[0], lk[0]);
    g_object_set(h->element, "block-size", block, "crossfade",
                 (guint64)gst_util_uint64_scale_int(xf, GST_SECOND, (gint)rate),
                 "drain", FALSE, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    collected c;
    collect_init(&c, ch, rate, 0, n + 1);
    int nsw = 0;
    for (size_t at = 0; at < n;) {
      size_t k = pick(ref_rng_range(&rng, 16, 200), n - at);
      if (at && nsw + 1 < NK && ref_rng_u64(&rng) % 3) {
        S[++nsw] = at;
        set_taps(h->element, hk[nsw], lk[nsw]);
      }
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, 0,
                        at == 0) == GST_FLOW_OK,
            "push at frame %zu", at);
      at += k;
    }
    add_case(", %d swaps at", nsw);
    for (int j = 1; j <= nsw; j++)
      add_case(" %zu", S[j]);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
    size_t X[NK];
    unsigned idx[NK];
    for (int j = 0; j <= nsw; j++)
      X[j] = j ? xf : 0;
    unsigned ns = ref_swaps_settle(S, X, idx, (unsigned)nsw + 1);
    for (unsigned k = 0; k < ch; k++) {
      double *y[NK], *want = xalloc(n * sizeof *want);
      for (unsigned j = 0; j < ns; j++)
        y[j] = ref_channel(x, n, ch, k, hk[idx[j]], lk[idx[j]], n);
      for (size_t i = 0, j = 0; i < n; i++) {
        while (j + 1 < ns && S[j + 1] <= i)
          j++;
        double w = j == 0 || i - S[j] >= xf
                       ? 1.0
                       : (double)(i - S[j] + 1) / (double)(xf + 1);
        want[i] = w == 1.0 ? y[j][i] : (1.0 - w) * y[j - 1][i] + w * y[j][i];
      }
      double e = ref_rel_l2(c.y + k, ch, want, 1, n);
      CHECK(e <= 2e-5, "channel %u: error %.3g against the crossfades", k, e);
      for (unsigned j = 0; j < ns; j++)
        free(y[j]);
      free(want);
    }
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    for (int k = 0; k < NK; k++)
      free(hk[k]);
  }
}

/* GAP events (a jitter buffer's lost packets, a mixer's silent input): the
 * gap is silence the held frames and the kernel's tail ring out through,
 * in timestamp order. Short gaps: the output is one contiguous stream
 * equal to the reference of the input with zeros in the gap. Long gaps
 * (past the engine's tail): the data before and after are exact, the
 * frames the output leaves out are silent in the reference, and the rest
 * of the gap goes on downstream as a GAP event after the data before it.
 * A GAP-flagged buffer of zeros in the stream: its output carries the
 * tail, so it must not keep the flag (a sink skips GAP buffers). */
static void test_gap(void **state)
{
  (void)state;
  for (int cs = 0; cs < 8; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    guint block = cs % 2 ? 256 : 1024;
    size_t len = ref_rng_range(&rng, 129, 1500);
    size_t n1 = ref_rng_range(&rng, 500, 5000),
           n2 = ref_rng_range(&rng, 1, 5000);
    /* as asked: 0-1 up to a block and the kernel, 2-3 far longer, 4-5 a
     * GAP buffer, 6-7 just past the engine's tail (shorter than the tail
     * with the ring-out after it) */
    int long_gap = cs >= 2 && cs < 4, flagged = cs >= 4 && cs < 6;
    float *h1 = random_kernel(len);
    GstHarness *hn = new_fir();
    set_taps(hn->element, h1, len);
    g_object_set(hn->element, "block-size", block, NULL);
    set_caps(hn, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    /* the engine's tail: a gap up to this long comes out as data */
    guint64 lat_ns = 0;
    g_object_get(hn->element, "latency", &lat_ns, NULL);
    size_t tail =
        (size_t)gst_util_uint64_scale_round(lat_ns, rate, GST_SECOND) + len - 1;
    size_t g = cs >= 6    ? ref_rng_range(&rng, tail + 1, tail + len - 1)
               : long_gap ? ref_rng_range(&rng, 2 * (block + len), 30000)
                          : ref_rng_range(&rng, 1, block + len);
    if (!flagged)
      long_gap = g > tail;
    size_t n = n1 + g + n2, total = n + len - 1;
    /* every other case where a long run takes it: a year in */
    GstClockTime t0 = cs % 2 ? 365 * 24 * 3600 * GST_SECOND +
                                   ref_rng_u64(&rng) % GST_SECOND
                             : 0;
    set_case("%s of %zu frames after %zu, %zu more, block %u, %zu taps, %u "
             "ch, tail %zu: %s",
             flagged    ? "GAP buffer"
             : long_gap ? "long gap"
                        : "gap",
             g, n1, n2, block, len, ch, tail, long_gap ? "long" : "short");
    add_case(", first pts %" G_GUINT64_FORMAT " ns", t0);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    memset(x + n1 * ch, 0, g * ch * sizeof *x);
    CHECK(push_frames(hn, GST_AUDIO_FORMAT_F32LE, x, 0, n1, ch, rate, t0,
                      TRUE) == GST_FLOW_OK,
          "push before the gap");
    GstClockTime t1 = t0 + gst_util_uint64_scale_int_round(n1, GST_SECOND,
                                                           (gint)rate),
                 t2 = t0 + gst_util_uint64_scale_int_round(n1 + g, GST_SECOND,
                                                           (gint)rate);
    if (flagged) {
      GstBuffer *b =
          gst_buffer_new_allocate(NULL, g * ch * sizeof(float), NULL);
      gst_buffer_memset(b, 0, 0, g * ch * sizeof(float));
      GST_BUFFER_PTS(b) = t1;
      GST_BUFFER_DURATION(b) = t2 - t1;
      GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_GAP);
      CHECK(gst_harness_push(hn, b) == GST_FLOW_OK, "push the GAP buffer");
    } else
      assert_true(gst_harness_push_event(hn, gst_event_new_gap(t1, t2 - t1)));
    CHECK(push_frames(hn, GST_AUDIO_FORMAT_F32LE, x, n1 + g, n2, ch, rate,
                      t0, FALSE) == GST_FLOW_OK,
          "push after the gap");
    assert_true(gst_harness_push_event(hn, gst_event_new_eos()));
    /* place every output buffer by its timestamp */
    float *y = xalloc(total * ch * sizeof *y);
    unsigned char *have = xalloc(total);
    memset(have, 0, total);
    GstClockTime last_end = t0, gap_at = GST_CLOCK_TIME_NONE;
    GstBuffer *b;
    GstEvent *ev;
    while ((ev = gst_harness_try_pull_event(hn))) {
      if (GST_EVENT_TYPE(ev) == GST_EVENT_GAP) {
        GstClockTime ts, dur;
        gst_event_parse_gap(ev, &ts, &dur);
        gap_at = ts;
      }
      gst_event_unref(ev);
    }
    size_t nbuf = 0;
    while ((b = gst_harness_try_pull(hn))) {
      GstClockTime pts = GST_BUFFER_PTS(b);
      CHECK(GST_CLOCK_TIME_IS_VALID(pts) && pts >= last_end,
            "buffer %zu at "
            "%" GST_TIME_FORMAT
            " before the end of the one before, %" GST_TIME_FORMAT,
            nbuf, GST_TIME_ARGS(pts), GST_TIME_ARGS(last_end));
      CHECK(!GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_GAP),
            "buffer %zu at %" GST_TIME_FORMAT " is flagged GAP", nbuf,
            GST_TIME_ARGS(pts));
      size_t at = pts >= t0 ? (size_t)gst_util_uint64_scale_round(
                                  pts - t0, rate, GST_SECOND)
                            : total;
      GstMapInfo m;
      assert_true(gst_buffer_map(b, &m, GST_MAP_READ));
      size_t fr = m.size / (ch * sizeof(float));
      CHECK(at + fr <= total,
            "buffer %zu: frames [%zu, %zu) past the %zu "
            "expected",
            nbuf, at, at + fr, total);
      memcpy(y + at * ch, m.data, fr * ch * sizeof(float));
      memset(have + at, 1, fr);
      gst_buffer_unmap(b, &m);
      last_end = pts + GST_BUFFER_DURATION(b);
      gst_buffer_unref(b);
      nbuf++;
    }
    size_t missing = 0, first_missing = total;
    for (size_t i = 0; i < total; i++)
      if (!have[i]) {
        missing++;
        if (first_missing == total)
          first_missing = i;
      }
    if (!long_gap)
      CHECK(missing == 0, "%zu output frames missing, the first at %zu",
            missing, first_missing);
    else {
      CHECK(missing > 0 && first_missing >= n1 + len - 1 &&
                first_missing + missing <= n1 + g,
            "long gap: %zu frames left out from %zu; the silence in the "
            "reference is [%zu, %zu)",
            missing, first_missing, n1 + len - 1, n1 + g);
      CHECK(GST_CLOCK_TIME_IS_VALID(gap_at), "long gap: no GAP event "
                                             "downstream");
      GstClockTime hole = t0 + gst_util_uint64_scale_int_round(
                                    first_missing, GST_SECOND, (gint)rate);
      CHECK(gap_at + GST_MSECOND / 10 >= hole,
            "the GAP event at %" GST_TIME_FORMAT
            " is before the data it follows (to %" GST_TIME_FORMAT ")",
            GST_TIME_ARGS(gap_at), GST_TIME_ARGS(hole));
    }
    for (unsigned k = 0; k < ch; k++) {
      double *want = ref_channel(x, n, ch, k, h1, len, total);
      for (size_t i = 0; i < total; i++)
        if (!have[i])
          want[i] = 0.0, y[i * ch + k] = 0.0f;
      double e = ref_rel_l2(y + k, ch, want, 1, total);
      CHECK(e <= 2e-5,
            "channel %u: error %.3g against the input with "
            "silence in the gap",
            k, e);
      free(want);
    }
    gst_harness_teardown(hn);
    free(y);
    free(have);
    free(x);
    free(h1);
  }
}

/* Random buffers and GAP events, each gap's start before the stream's
 * end by up to 39 ms (a jitter buffer's estimates) or up to 208 ms (a
 * gap back over frames already sent), or after it by under 1 ms, its end before
 * the stream's end, within the engine's tail or far past it, sometimes
 * two gaps in a row, the next buffer at the gap's end (or where the
 * stream is, for a gap it covers). The stream is the input with every
 * gap's time as silence: every output frame comes out at most once, in
 * timestamp order, equal to the float64 reference of that signal; frames
 * left out are only those the reference has at exactly zero (a long
 * gap's silence goes on as a GAP event). */
static void test_gap_random(void **state)
{
  (void)state;
  for (unsigned cs = 0; cs < check_cases(10); cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t len = ref_rng_range(&rng, 1, 1500);
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 1);
    int steps = (int)ref_rng_range(&rng, 2, 8);
    float *hk = random_kernel(len);
    GstHarness *hn = new_fir();
    set_taps(hn->element, hk, len);
    g_object_set(hn->element, "block-size", block, "pipeline-depth", depth,
                 "drain", TRUE, NULL);
    set_caps(hn, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    guint64 lat_ns = 0;
    g_object_get(hn->element, "latency", &lat_ns, NULL);
    size_t tail =
        (size_t)gst_util_uint64_scale_round(lat_ns, rate, GST_SECOND) + len - 1;
    GstClockTime t0 = cs % 2 ? GST_SECOND : 0;
    set_case("%zu taps, block %u, pipeline-depth %u, tail %zu, %u ch, t0 %"
             G_GUINT64_FORMAT ":", len, block, depth, tail, ch, t0);
    size_t cap = 400000;
    float *x = xalloc(cap * ch * sizeof *x);
    size_t e = 0; /* the stream's end, in frames from t0 */
#define AT(f)                                                                  \
  (t0 + gst_util_uint64_scale_int_round((f), GST_SECOND, (gint)rate))
    for (int st = 0; st < steps; st++) {
      size_t nb = ref_rng_range(&rng, 1, 4000);
      float *in = random_input(GST_AUDIO_FORMAT_F32LE, nb * ch);
      memcpy(x + e * ch, in, nb * ch * sizeof *x);
      free(in);
      for (size_t at = e; at < e + nb;) {
        size_t k = pick(ref_rng_range(&rng, 1, 1500), e + nb - at);
        CHECK(push_frames(hn, GST_AUDIO_FORMAT_F32LE, x, at, k, ch, rate, t0,
                          at == 0) == GST_FLOW_OK, "push at %zu", at);
        at += k;
      }
      e += nb;
      add_case(" %zu frames;", nb);
      if (st + 1 == steps)
        break;
      int gaps = ref_rng_u64(&rng) % 3 == 0 ? 2 : 1;
      for (int gi = 0; gi < gaps; gi++) {
        /* start: up to 1900 frames (39.6 ms) before the end, or up to 40
         * after it; end: before the stream's end, or within twice the
         * tail past it, or far past */
        long s = (long)e - (long)ref_rng_range(&rng, 0, MIN(e, 1900));
        unsigned where = (unsigned)(ref_rng_u64(&rng) % 4);
        if (where == 0)
          s = (long)e + (long)ref_rng_range(&rng, 0, 40);
        else if (where == 1) /* far back: from up to 10000 frames before */
          s = (long)e - (long)ref_rng_range(&rng, MIN(e, 1900), MIN(e, 10000));
        size_t end;
        switch (ref_rng_u64(&rng) % 4) {
        case 0: /* ending before the stream's end */
          end = (size_t)s +
                ref_rng_range(&rng, 1, e - (size_t)MIN((long)e, s) + 1);
          break;
        case 1: end = e + ref_rng_range(&rng, 1, tail + 1); break;
        case 2: end = e + ref_rng_range(&rng, tail, 2 * tail + 2); break;
        default:
          end = e + ref_rng_range(&rng, 2 * tail + 2, 2 * tail + 20000);
          break;
        }
        if (end <= (size_t)s)
          end = (size_t)s + 1;
        add_case(" gap [%ld, %zu);", s, end);
        assert_true(gst_harness_push_event(
            hn, gst_event_new_gap(AT((size_t)s), AT(end) - AT((size_t)s))));
        if (end > e) {
          memset(x + e * ch, 0, (end - e) * ch * sizeof *x);
          e = end;
        }
      }
    }
    assert_true(gst_harness_push_event(hn, gst_event_new_eos()));
    size_t total = e + len - 1;
    float *y = xalloc(total * ch * sizeof *y + 4);
    unsigned char *have = xalloc(total + 1);
    GstClockTime last_end = t0;
    GstBuffer *b;
    size_t nbuf = 0;
    while ((b = gst_harness_try_pull(hn))) {
      GstClockTime pts = GST_BUFFER_PTS(b);
      CHECK(GST_CLOCK_TIME_IS_VALID(pts) && pts + 10417 >= last_end,
            "buffer %zu at %" GST_TIME_FORMAT " before the end of the one "
            "before, %" GST_TIME_FORMAT, nbuf, GST_TIME_ARGS(pts),
            GST_TIME_ARGS(last_end));
      size_t at = (size_t)gst_util_uint64_scale_round(pts - t0, rate,
                                                      GST_SECOND);
      GstMapInfo m;
      assert_true(gst_buffer_map(b, &m, GST_MAP_READ));
      size_t fr = m.size / (ch * sizeof(float));
      CHECK(at + fr <= total, "buffer %zu: frames [%zu, %zu) past the %zu "
            "expected", nbuf, at, at + fr, total);
      for (size_t i = at; i < at + fr; i++)
        CHECK(!have[i]++, "buffer %zu: frame %zu came out twice", nbuf, i);
      memcpy(y + at * ch, m.data, fr * ch * sizeof(float));
      gst_buffer_unmap(b, &m);
      last_end = pts + GST_BUFFER_DURATION(b);
      gst_buffer_unref(b);
      nbuf++;
    }
    for (unsigned c = 0; c < ch; c++) {
      double *w = ref_channel(x, e, ch, c, hk, len, total);
      for (size_t i = 0; i < total; i++) {
        CHECK(have[i] || w[i] == 0.0, "frame %zu missing, its reference %g",
              i, w[i]);
        if (!have[i])
          y[i * ch + c] = 0.0f;
      }
      double err = ref_rel_l2(y + c, ch, w, 1, total);
      CHECK(err <= 2e-5, "channel %u: error %.3g", c, err);
      free(w);
    }
#undef AT
    free(y);
    free(have);
    free(x);
    free(hk);
    gst_harness_teardown(hn);
  }
}

/* A GAP event whose start is off the stream's end by up to the 40 ms a
 * timestamp may move: a jitter buffer's lost-packet gap is an estimate
 * (rtpjitterbuffer do-lost=true ! rtpL16depay, 3% of the packets dropped:
 * a GAP of 4.24 ms starting 1.47 ms before the last buffer's end, the
 * next buffer at the gap's end). The silence runs from where the stream
 * is to the gap's end: the next buffer, at that end, follows it. It ran
 * the gap's duration from the stream's end instead, 1.47 ms past the
 * gap's end, and the buffer after it came out overlapping the silence's
 * output by as much (a gap starting after the stream's end: a hole in
 * the output instead) (QA). Live: the buffer after the gap is DISCONT
 * (every other case), as rtpL16depay pushes it, or not. */
static void test_gap_moved(void **state)
{
  (void)state;
  for (int cs = 0; cs < 8; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t len = ref_rng_range(&rng, 129, 1500);
    size_t n1 = ref_rng_range(&rng, 2000, 5000),
           n2 = ref_rng_range(&rng, 1, 3000);
    gboolean discont = cs % 4 >= 2;
    float *h1 = random_kernel(len);
    GstHarness *hn = new_fir();
    set_taps(hn->element, h1, len);
    g_object_set(hn->element, "block-size", 256, "drain", TRUE, NULL);
    set_caps(hn, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    /* a gap shorter than the engine's tail: all of it comes out as data
     * (test_gap has the longer ones) */
    guint64 lat_ns = 0;
    g_object_get(hn->element, "latency", &lat_ns, NULL);
    size_t tail =
        (size_t)gst_util_uint64_scale_round(lat_ns, rate, GST_SECOND) + len - 1;
    size_t g = ref_rng_range(&rng, MAX(tail / 4, 60), tail - 1);
    /* the gap's start off the stream's end by o frames, 1 to 37 ms,
     * before it (cs even) or after it (cs odd: inside the gap) */
    size_t o = ref_rng_range(&rng, 48, cs % 2 ? g - 1 : 1800);
    size_t n = n1 + g + n2, total = n + len - 1;
    GstClockTime t0 = cs % 3 ? GST_SECOND : 0;
    set_case("gap of %zu frames after %zu, starting %zu frames %s the "
             "stream's end, %zu more%s, %zu taps, %u ch",
             g, n1, o, cs % 2 ? "after" : "before", n2,
             discont ? " (DISCONT)" : "", len, ch);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    memset(x + n1 * ch, 0, g * ch * sizeof *x);
    CHECK(push_frames(hn, GST_AUDIO_FORMAT_F32LE, x, 0, n1, ch, rate, t0,
                      TRUE) == GST_FLOW_OK,
          "push before the gap");
    GstClockTime gs = t0 +
                      gst_util_uint64_scale_int_round(cs % 2 ? n1 + o : n1 - o,
                                                      GST_SECOND, (gint)rate),
                 ge = t0 + gst_util_uint64_scale_int_round(n1 + g, GST_SECOND,
                                                           (gint)rate);
    assert_true(gst_harness_push_event(hn, gst_event_new_gap(gs, ge - gs)));
    CHECK(push_frames(hn, GST_AUDIO_FORMAT_F32LE, x, n1 + g, n2, ch, rate, t0,
                      discont) == GST_FLOW_OK,
          "push after the gap");
    assert_true(gst_harness_push_event(hn, gst_event_new_eos()));
    float *y = xalloc(total * ch * sizeof *y);
    unsigned char *have = xalloc(total);
    memset(have, 0, total);
    GstClockTime last_end = t0;
    GstBuffer *b;
    size_t nbuf = 0;
    while ((b = gst_harness_try_pull(hn))) {
      GstClockTime pts = GST_BUFFER_PTS(b);
      /* half a frame of rounding */
      CHECK(GST_CLOCK_TIME_IS_VALID(pts) && pts + 10417 >= last_end,
            "buffer %zu at %" GST_TIME_FORMAT
            " overlaps the one before, ending at %" GST_TIME_FORMAT,
            nbuf, GST_TIME_ARGS(pts), GST_TIME_ARGS(last_end));
      size_t at =
          (size_t)gst_util_uint64_scale_round(pts - t0, rate, GST_SECOND);
      GstMapInfo m;
      assert_true(gst_buffer_map(b, &m, GST_MAP_READ));
      size_t fr = m.size / (ch * sizeof(float));
      CHECK(at + fr <= total,
            "buffer %zu: frames [%zu, %zu) past the %zu expected", nbuf, at,
            at + fr, total);
      memcpy(y + at * ch, m.data, fr * ch * sizeof(float));
      memset(have + at, 1, fr);
      gst_buffer_unmap(b, &m);
      last_end = pts + GST_BUFFER_DURATION(b);
      gst_buffer_unref(b);
      nbuf++;
    }
    /* with DISCONT the history restarts at the buffer after the gap:
     * the ring-out of the frames before it stops there */
    size_t missing = 0, first_missing = total;
    for (size_t i = 0; i < total; i++)
      if (!have[i] && !missing++)
        first_missing = i;
    CHECK(missing == 0, "%zu output frames missing, the first at %zu", missing,
          first_missing);
    for (unsigned k = 0; k < ch; k++) {
      double *want = ref_channel(x, n, ch, k, h1, len, total);
      if (discont) { /* two runs: before the gap's end, and after */
        double *w2 =
            ref_channel(x + (n1 + g) * ch, n2, ch, k, h1, len, n2 + len - 1);
        double *w1 = ref_channel(x, n1 + g, ch, k, h1, len, n1 + g);
        for (size_t i = 0; i < total; i++)
          want[i] = i < n1 + g ? w1[i] : w2[i - n1 - g];
        free(w1);
        free(w2);
      }
      double e = ref_rel_l2(y + k, ch, want, 1, total);
      CHECK(e <= 2e-5,
            "channel %u: error %.3g against the input with silence in the "
            "gap",
            k, e);
      free(want);
    }
    gst_harness_teardown(hn);
    free(y);
    free(have);
    free(x);
    free(h1);
  }
}

/* ---- gain: ramps and GstController --------------------------------------- */

/* `gain` set while PLAYING, as a fader: each change ramps linearly in
 * amplitude over `crossfade` (its value then) from the first input frame
 * after it, frame S + k getting g0 + (g1 - g0) (k + 1) / (X + 1), g0 what
 * frame S - 1 had (as a kernel crossfade weighs, engine.h), also while a
 * kernel crossfade runs and while an earlier gain ramp runs; a flush or
 * discontinuity is not tested here. The gain was baked into the kernel,
 * so a change during a kernel crossfade waited for its end (a fader
 * moved during a 500 ms crossfade to another room went unheard for up to
 * 500 ms), and every change rebuilt and re-planned the kernel (QA).
 * Random kernels (direct and FFT paths, so with latency: the ramp is in
 * content time, not where the output leaves), crossfades, buffer sizes,
 * against the float64 reference. */
static void test_gain_ramp(void **state)
{
  (void)state;
  for (int cs = 0; cs < 6; cs++) {
    unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t l1 = ref_rng_range(&rng, 1, 3000), l2 = ref_rng_range(&rng, 1, 3000);
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    size_t kx = ref_rng_range(&rng, 500, 3000); /* the kernel's crossfade */
    size_t n0 = ref_rng_range(&rng, 1, 3000);   /* the kernel change */
    enum { NG = 3 };
    size_t gs[NG], gx[NG];
    double gdb[NG];
    /* gain changes: the first during the kernel crossfade (cs odd) or
     * without one, the next ones while the ramp before runs or not */
    size_t at = n0 + ref_rng_range(&rng, 1, kx - 1);
    for (int i = 0; i < NG; i++) {
      gs[i] = at;
      gx[i] = ref_rng_range(&rng, 0, 1500);
      gdb[i] = (double)ref_rng_range(&rng, 0, 240) / 10.0 - 18.0;
      at += ref_rng_range(&rng, 1, 2000);
    }
    size_t n = at + ref_rng_range(&rng, 1, 2000);
    gboolean swap = cs % 2;
    set_case("gain ramps: %u ch, %zu%s taps, block %u, kernel change at %zu "
             "over %zu; gain %g dB at %zu over %zu, %g at %zu over %zu, %g "
             "at %zu over %zu; %zu frames",
             ch, l1, swap ? "" : " (no change)", block, n0, kx, gdb[0], gs[0],
             gx[0], gdb[1], gs[1], gx[1], gdb[2], gs[2], gx[2], n);
    float *h1 = random_kernel(l1), *h2 = random_kernel(l2);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, h1, l1);
    g_object_set(h->element, "block-size", block, "drain", FALSE, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    collected c;
    collect_init(&c, ch, rate, 0, n + 1);
    size_t pos = 0;
    int next = 0;
    gboolean swapped = FALSE;
    while (pos < n) {
      size_t stop = n;
      if (!swapped)
        stop = n0;
      else if (next < NG)
        stop = gs[next];
      if (pos == stop) {
        if (!swapped) {
          g_object_set(h->element, "crossfade",
                       (guint64)gst_util_uint64_scale_int(kx, GST_SECOND,
                                                          (gint)rate),
                       NULL);
          if (swap)
            set_taps(h->element, h2, l2);
          swapped = TRUE;
        } else {
          g_object_set(h->element, "crossfade",
                       (guint64)gst_util_uint64_scale_int(gx[next], GST_SECOND,
                                                          (gint)rate),
                       "gain", gdb[next], NULL);
          next++;
        }
        continue;
      }
      size_t k = pick(ref_rng_range(&rng, 1, 700), stop - pos);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, pos, k, ch, rate, 0,
                        pos == 0) == GST_FLOW_OK, "push at frame %zu", pos);
      pos += k;
    }
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
    /* the gain the documentation promises, frame by frame */
    double *g = xalloc(n * sizeof *g);
    for (size_t i = 0; i < n; i++)
      g[i] = 1.0;
    for (int j = 0; j < NG; j++) {
      double g0 = g[gs[j] - 1], g1 = pow(10.0, gdb[j] / 20.0);
      for (size_t i = gs[j]; i < n; i++)
        g[i] = i - gs[j] + 1 <= gx[j]
                   ? g0 + (g1 - g0) * (double)(i - gs[j] + 1) /
                              (double)(gx[j] + 1)
                   : g1;
    }
    for (unsigned k = 0; k < ch; k++) {
      double *y1 = ref_channel(x, n, ch, k, h1, l1, n);
      double *y2 = ref_channel(x, n, ch, k, h2, l2, n);
      for (size_t i = 0; i < n; i++) {
        double w = !swap || i < n0 ? 0.0
                   : i - n0 + 1 >= kx + 1
                       ? 1.0
                       : (double)(i - n0 + 1) / (double)(kx + 1);
        y1[i] = g[i] * ((1.0 - w) * y1[i] + w * y2[i]);
      }
      double e = ref_rel_l2(c.y + k, ch, y1, 1, n);
      CHECK(e <= 2e-5, "channel %u: error %.3g against the gain ramps", k, e);
      free(y1);
      free(y2);
    }
    gdouble now = 0;
    g_object_get(h->element, "gain", &now, NULL);
    CHECK(now == gdb[NG - 1], "gain reads %g, %g was set", now, gdb[NG - 1]);
    gst_harness_teardown(h);
    free(g);
    free(c.y);
    free(x);
    free(h1);
    free(h2);
  }
}

/* fakesink's handoff: frames of F32 stereo counted */
static void count_frames(GstElement *sink, GstBuffer *b, GstPad *pad,
                         gpointer data)
{
  (void)sink, (void)pad;
  *(guint64 *)data += gst_buffer_get_size(b) / 8;
}

/* The linear interpolation GstInterpolationControlSource makes between
 * points (t[i], v[i]), at time tt (the last value after the last). */
static double ctl_at(const GstClockTime *t, const double *v, int np,
                     GstClockTime tt)
{
  if (tt <= t[0])
    return v[0];
  for (int i = 0; i + 1 < np; i++)
    if (tt < t[i + 1])
      return v[i] + (v[i + 1] - v[i]) * (double)(tt - t[i]) /
                        (double)(t[i + 1] - t[i]);
  return v[np - 1];
}

/* `gain` under a GstController, as a live application automates it:
 * gst_object_add_control_binding with a linear
 * GstInterpolationControlSource; each output frame gets the control
 * source's value at its stream time (a frame apart within a buffer), on
 * every path (the FFT path's latency held back: its content's time, not
 * when it leaves), and `gain` reads back the value in force. No property
 * was controllable: the binding was refused with a CRITICAL (QA). Rates
 * whose frame is a whole number of ns (the values a frame apart are
 * then exactly at each frame's time); random points, kernels, buffer
 * sizes, against the float64 reference. */
static void test_gain_controlled(void **state)
{
  (void)state;
  static const unsigned rates[] = {8000, 16000, 32000, 40000, 50000};
  GstElement *fir = gst_element_factory_make("cudafir", NULL);
  GParamSpec *ps =
      g_object_class_find_property(G_OBJECT_GET_CLASS(fir), "gain");
  CHECK(ps && (ps->flags & GST_PARAM_CONTROLLABLE),
        "gain is not GST_PARAM_CONTROLLABLE");
  gst_object_unref(fir);
  for (int cs = 0; cs < 4; cs++) {
    unsigned rate = rates[ref_rng_u64(&rng) % G_N_ELEMENTS(rates)];
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t len = random_len();
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    size_t n = ref_rng_range(&rng, 2000, 12000);
    GstClockTime dur = gst_util_uint64_scale_int(n, GST_SECOND, (gint)rate);
    enum { NP = 4 };
    GstClockTime t[NP];
    double v[NP];
    for (int i = 0; i < NP; i++) {
      t[i] = i ? t[i - 1] + 1 + ref_rng_u64(&rng) % (dur / 2) : 0;
      v[i] = (double)ref_rng_range(&rng, 0, 300) / 10.0 - 24.0;
    }
    set_case("controlled gain: %u Hz, %u ch, %zu taps, block %u, %zu frames, "
             "%g dB, %g at %" G_GUINT64_FORMAT " ns, %g at %" G_GUINT64_FORMAT
             ", %g at %" G_GUINT64_FORMAT,
             rate, ch, len, block, n, v[0], v[1], t[1], v[2], t[2], v[3], t[3]);
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "drain", FALSE, NULL);
    GstControlSource *src = gst_interpolation_control_source_new();
    g_object_set(src, "mode", GST_INTERPOLATION_MODE_LINEAR, NULL);
    for (int i = 0; i < NP; i++)
      CHECK(gst_timed_value_control_source_set(
                GST_TIMED_VALUE_CONTROL_SOURCE(src), t[i], v[i]),
            "control point %d refused", i);
    CHECK(gst_object_add_control_binding(
              GST_OBJECT(h->element),
              gst_direct_control_binding_new_absolute(GST_OBJECT(h->element),
                                                      "gain", src)),
          "the control binding on gain was refused");
    gst_object_unref(src);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    /* every other case a live pipeline that has run for days: its
     * timestamps and running time far out (the segment's start and base),
     * its stream time, on which the control points are, from 0 */
    GstClockTime t0 = 0;
    if (cs % 2) {
      GstSegment seg;
      gst_segment_init(&seg, GST_FORMAT_TIME);
      const GstClockTime day = 24 * 3600 * GST_SECOND;
      t0 = seg.start = 30 * day + ref_rng_u64(&rng) % GST_SECOND;
      seg.base = 7 * day + ref_rng_u64(&rng) % GST_SECOND;
      seg.position = t0;
      add_case(", segment start %" G_GUINT64_FORMAT " base %" G_GUINT64_FORMAT,
               seg.start, seg.base);
      assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
    }
    collected c;
    collect_init(&c, ch, rate, t0, n + 1);
    for (size_t pos = 0; pos < n;) {
      size_t k = pick(ref_rng_range(&rng, 1, 900), n - pos);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, pos, k, ch, rate, t0,
                        pos == 0) == GST_FLOW_OK, "push at frame %zu", pos);
      pos += k;
      /* the value in force for the last output frame's buffer */
      if (c.frames < n) {
        size_t before = c.frames;
        collect(h, &c, GST_AUDIO_FORMAT_F32LE);
        if (c.frames > before) {
          gdouble now = 0;
          g_object_get(h->element, "gain", &now, NULL);
          double want = ctl_at(t, v, NP,
                               gst_util_uint64_scale_int(before, GST_SECOND,
                                                         (gint)rate));
          CHECK(fabs(now - want) <= 1e-9, "gain reads %.9g for the buffer "
                "from frame %zu, the control source says %.9g", now, before,
                want);
        }
      }
    }
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
    for (unsigned k = 0; k < ch; k++) {
      double *y = ref_channel(x, n, ch, k, hk, len, n);
      for (size_t i = 0; i < n; i++)
        y[i] *= pow(10.0, ctl_at(t, v, NP,
                                 gst_util_uint64_scale_int(i, GST_SECOND,
                                                           (gint)rate)) /
                              20.0);
      double e = ref_rel_l2(c.y + k, ch, y, 1, n);
      CHECK(e <= 2e-5, "channel %u: error %.3g against the controlled gain",
            k, e);
      free(y);
    }
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* An application's automation starting and ending while audio flows:
 * a control binding on `gain` added and removed (and `gain` set) from
 * the application's thread as fast as it goes, while small buffers
 * stream. gst_object_sync_values walks the bindings without the
 * object's lock, so a binding removed meanwhile was read after it was
 * freed (ASan: heap-use-after-free in g_param_spec_pool_lookup; QA). The
 * stream runs to EOS, without errors, every frame out. */
static void test_gain_control_threads(void **state)
{
  (void)state;
  set_case("gain bindings added and removed while streaming");
  char desc[256];
  const guint nbuf = 20000, spb = 16;
  snprintf(desc, sizeof desc,
           "audiotestsrc num-buffers=%u samplesperbuffer=%u ! "
           "audio/x-raw,format=F32LE,rate=48000,channels=2 ! "
           "cudafir name=f backend=%s drain=false ! "
           "fakesink name=s sync=false signal-handoffs=true",
           nbuf, spb, backend);
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  CHECK(p && !err, "gst_parse_launch: %s", err ? err->message : "?");
  GstElement *f = gst_bin_get_by_name(GST_BIN(p), "f");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "s");
  guint64 frames = 0;
  g_signal_connect(sink, "handoff", G_CALLBACK(count_frames), &frames);
  CHECK(gst_element_set_state(p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE,
        "PLAYING failed");
  GstBus *bus = gst_element_get_bus(p);
  GstMessage *m = NULL;
  for (unsigned i = 0; !m; i++) {
    GstControlBinding *b = gst_object_get_control_binding(GST_OBJECT(f), "gain");
    if (b) {
      gst_object_remove_control_binding(GST_OBJECT(f), b);
      gst_object_unref(b);
      g_object_set(f, "gain", (double)(i % 13) - 6.0, NULL);
    } else {
      GstControlSource *cs = gst_interpolation_control_source_new();
      g_object_set(cs, "mode", GST_INTERPOLATION_MODE_LINEAR, NULL);
      gst_timed_value_control_source_set(GST_TIMED_VALUE_CONTROL_SOURCE(cs), 0,
                                         -12.0);
      gst_timed_value_control_source_set(GST_TIMED_VALUE_CONTROL_SOURCE(cs),
                                         GST_SECOND, 6.0);
      CHECK(gst_object_add_control_binding(
                GST_OBJECT(f), gst_direct_control_binding_new_absolute(
                                   GST_OBJECT(f), "gain", cs)),
            "binding refused");
      gst_object_unref(cs);
    }
    m = gst_bus_pop_filtered(bus, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  }
  CHECK(GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS, "the stream ended in an error");
  gst_message_unref(m);
  CHECK(frames == (guint64)nbuf * spb, "%" G_GUINT64_FORMAT " frames out, %u "
        "in", frames, nbuf * spb);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(sink);
  gst_object_unref(f);
  gst_object_unref(p);
}

/* ---- kernel files: matrix routing, gain, trim, per-channel .npy -------- */

/* Write a float32 .npy of `shape` ("(2, 3, 100)") holding v. */
static void write_npy(const char *path, const char *shape, const float *v,
                      size_t n)
{
  char hdr[256];
  size_t hl = npy_header(hdr, 1, "<f4", 0, shape);
  unsigned char *buf = xalloc(hl + n * 4);
  memcpy(buf, hdr, hl);
  for (size_t i = 0; i < n; i++)
    npy_put_elem(buf + hl + 4 * i, v[i], 4, 0);
  write_bytes(path, buf, hl + n * 4);
  free(buf);
}

/* Each of c's outputs o against g * sum_i (x_i * h_oi) in float64, for
 * output frames [0, total): h_oi = hm[(o * ci + i) * len], or with hm
 * NULL, `diag` for i == o and nothing else. */
static void check_routed(const collected *c, const float *x, size_t n,
                         unsigned ci, const float *hm, const float *diag,
                         size_t len, double g, size_t total)
{
  for (unsigned o = 0; o < c->channels; o++) {
    double *want = xalloc(total * sizeof *want);
    for (unsigned i = 0; i < ci; i++) {
      const float *hk = hm       ? hm + ((size_t)o * ci + i) * len
                        : i == o ? diag
                                 : NULL;
      if (!hk)
        continue;
      double *y = ref_channel(x, n, ci, i, hk, len, total);
      for (size_t t = 0; t < total; t++)
        want[t] += g * y[t];
      free(y);
    }
    double e = ref_rel_l2(c->y + o, c->channels, want, 1, total);
    CHECK(e <= 2e-5, "output %u: error %.3g", o, e);
    free(want);
  }
}

static void test_matrix_file(void **state)
{
  (void)state;
  for (int cs = 0; cs < 4; cs++) {
    unsigned ci = (unsigned)ref_rng_range(&rng, 1, 3),
             co = (unsigned)ref_rng_range(&rng, 1, 4);
    size_t len = ref_rng_range(&rng, 1, 2500);
    size_t n = ref_rng_range(&rng, 1, 8000);
    double gain_db = (double)ref_rng_range(&rng, 0, 24) - 18.0;
    set_case("matrix %u out x %u in, %zu taps, %zu frames, gain %g dB", co,
             ci, len, n, gain_db);
    float *hm = random_kernel((size_t)ci * co * len);
    char shape[64];
    snprintf(shape, sizeof shape, "(%u, %u, %zu)", co, ci, len);
    const char *path = fixture("matrix.npy");
    write_npy(path, shape, hm, (size_t)ci * co * len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ci);
    GstHarness *h = new_fir();
    g_object_set(h->element, "kernel-file", path, "gain", gain_db, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, 32000, ci, co);
    collected c;
    collect_init(&c, co, 32000, 0, n + len);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ci, 32000, 0,
                      TRUE) == GST_FLOW_OK, "push (negotiation of %u -> %u "
          "channels?)", ci, co);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    size_t total = n + len - 1;
    CHECK(c.frames == total, "%zu frames out, expected %zu", c.frames, total);
    check_routed(&c, x, n, ci, hm, NULL, len, pow(10.0, gain_db / 20.0),
                 total);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hm);
  }
}

/* A matrix that changes the channel count to over 2: the output takes
 * the positions downstream asks for (5.1 side, unpositioned), else the
 * count's usual layout (5.1 for six), where it was always unpositioned,
 * which audioconvert cannot remix nor flacenc take (QA). A downmix to
 * stereo (from 5.1, 7.1, 16 unpositioned) takes downstream's
 * channel-mask=0x3 too: an appsink or capsfilter asking for it was
 * not-negotiated, the output caps having no mask (QA). The samples
 * against the reference in each case. */
static void test_matrix_positions(void **state)
{
  (void)state;
  static const unsigned many[] = {6, 8, 16};
  for (int cs = 0; cs < 6; cs++) {
    unsigned ci = cs < 4 ? (unsigned)ref_rng_range(&rng, 1, 2)
                         : many[ref_rng_range(&rng, 0, 2)],
             co = cs < 3 ? 6 : cs == 3 ? (unsigned)ref_rng_range(&rng, 3, 8)
                                       : 2;
    size_t len = ref_rng_range(&rng, 1, 300), n = ref_rng_range(&rng, 1, 4000);
    guint64 down = cs == 0 ? 0x60f : cs >= 4 ? 0x3 : 0, want =
        cs == 0 ? 0x60f : cs == 1 ? 0 : cs >= 4 ? 0x3
                : gst_audio_channel_get_fallback_mask(co);
    set_case("%u -> %u channels, downstream %s", ci, co,
             cs == 0 ? "5.1 side" : cs == 1 ? "unpositioned"
             : cs >= 4 ? "stereo 0x3" : "open");
    float *hm = random_kernel((size_t)ci * co * len);
    char shape[64];
    snprintf(shape, sizeof shape, "(%u, %u, %zu)", co, ci, len);
    const char *path = fixture("positions.npy");
    write_npy(path, shape, hm, (size_t)ci * co * len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ci);
    GstHarness *h = new_fir();
    g_object_set(h->element, "kernel-file", path, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, ci, 0);
    if (cs < 2 || cs >= 4) {
      char caps[96];
      snprintf(caps, sizeof caps,
               "audio/x-raw,channel-mask=(bitmask)0x%" G_GINT64_MODIFIER "x",
               down);
      gst_harness_set_sink_caps_str(h, caps);
    }
    collected c;
    collect_init(&c, co, 48000, 0, n + len);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ci, 48000, 0,
                      TRUE) == GST_FLOW_OK,
          "push");
    GstCaps *oc = gst_pad_get_current_caps(h->sinkpad);
    guint64 mask = 1;
    CHECK(oc && gst_structure_get(gst_caps_get_structure(oc, 0),
                                  "channel-mask", GST_TYPE_BITMASK, &mask,
                                  NULL) && mask == want,
          "output channel-mask 0x%" G_GINT64_MODIFIER "x, want 0x%"
          G_GINT64_MODIFIER "x", mask, want);
    if (oc)
      gst_caps_unref(oc);
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    size_t total = n + len - 1;
    CHECK(c.frames == total, "%zu frames out, expected %zu", c.frames, total);
    check_routed(&c, x, n, ci, hm, NULL, len, 1.0, total);
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hm);
  }
}

/* The `routing` property against the float64 reference: matrix
 * reinterprets an N-kernel file on a C-channel stream as (N / C) x C
 * (the doc's true-stereo IR: LL, LR, RL, RR), shared and per-channel
 * take a single kernel for every channel; a file routing cannot serve is a
 * negotiation error naming the problem. open_out: downstream takes any
 * channel count (as fakesink or audioconvert), so the element's own caps
 * say how many come out. */
static void routing_case(const char *routing, const char *path,
                         const float *taps, size_t ntaps, unsigned ci,
                         unsigned co, const float *hm, size_t len,
                         int open_out)
{
  size_t n = ref_rng_range(&rng, 1, 6000), total = n + len - 1;
  add_case(", routing=%s, %u -> %u channels, %zu taps, %zu frames", routing, ci,
           co, len, n);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ci);
  GstHarness *h = new_fir();
  gst_util_set_object_arg(G_OBJECT(h->element), "routing", routing);
  if (path)
    g_object_set(h->element, "kernel-file", path, NULL);
  else
    set_taps(h->element, taps, ntaps);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, 44100, ci, open_out ? 0 : co);
  collected c;
  collect_init(&c, co, 44100, 0, total);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ci, 44100, 0, TRUE) ==
            GST_FLOW_OK,
        "push");
  GstCaps *oc = gst_pad_get_current_caps(h->sinkpad);
  gint och = 0;
  CHECK(oc && gst_structure_get_int(gst_caps_get_structure(oc, 0), "channels",
                                    &och) && och == (gint)co,
        "routing=%s, %u channels in: the output caps say %d channels, the "
        "kernels give %u", routing, ci, och, co);
  gst_caps_unref(oc);
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &c, GST_AUDIO_FORMAT_F32LE);
  CHECK(c.frames == total, "%zu frames out, expected %zu", c.frames, total);
  check_routed(&c, x, n, ci, hm, taps, len, 1.0, total);
  gst_harness_teardown(h);
  free(c.y);
  free(x);
}

/* by_caps: refused at the caps event, whose error names the caps */
static void routing_refused(const char *routing, const char *path, unsigned ch,
                            const char *needle, gboolean by_caps)
{
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_util_set_object_arg(G_OBJECT(h->element), "routing", routing);
  g_object_set(h->element, "kernel-file", path, NULL);
  char caps[160];
  snprintf(caps, sizeof caps,
           "audio/x-raw,format=F32LE,rate=44100,"
           "channels=%u,layout=interleaved",
           ch);
  gst_harness_set_caps_str(h, caps, caps);
  float x[2 * 64] = {0.5f};
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64 / ch, ch, 44100, 0,
                    TRUE) != GST_FLOW_OK,
        "routing=%s with %s on %u "
        "channels streamed",
        routing, path, ch);
  /* the debug string names the caps refused, as text */
  char detail[40] = "";
  if (by_caps)
    snprintf(detail, sizeof detail, "channels=(int)%u", ch);
  CHECK(bus_has_detail(bus, GST_MESSAGE_ERROR, needle, by_caps ? detail : NULL),
        "routing=%s with %s on %u "
        "channels: no element error saying '%s' with '%s' in its details",
        routing, path, ch, needle, detail);
  /* the base class retries the caps at the next buffer: not posted twice */
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64 / ch, ch, 44100, 0,
                    TRUE) != GST_FLOW_OK,
        "routing=%s with %s on %u channels: the second buffer streamed",
        routing, path, ch);
  CHECK(!bus_has(bus, GST_MESSAGE_ERROR, ""),
        "routing=%s with %s on %u channels: the error posted again", routing,
        path, ch);
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

static void test_routing(void **state)
{
  (void)state;
  for (int cs = 0; cs < 4; cs++) {
    /* with the output caps open, 2 or 3 inputs: co * ci kernels then
     * also divide into other (in, out) pairs than (ci, co) */
    unsigned ci = (unsigned)ref_rng_range(&rng, cs % 2 ? 2 : 1, 3),
             co = (unsigned)ref_rng_range(&rng, 1, 2);
    size_t len = ref_rng_range(&rng, 1, 2000);
    set_case("case %d", cs);
    /* a 2D file of co * ci kernels, taken as a co x ci matrix */
    float *hm = random_kernel((size_t)co * ci * len);
    char shape[64];
    snprintf(shape, sizeof shape, "(%u, %zu)", co * ci, len);
    const char *path = fixture("routing.npy");
    write_npy(path, shape, hm, (size_t)co * ci * len);
    routing_case("matrix", path, NULL, 0, ci, co, hm, len, cs % 2);
    /* one kernel (the property) for every channel */
    routing_case(cs % 2 ? "shared" : "per-channel", NULL, hm, len, ci, ci, NULL,
                 len, cs % 2 == 0);
    free(hm);
  }
  /* `kernel`'s taps are one kernel: routing=matrix takes them as a 1 x 1
   * matrix on mono, as it takes a one-channel kernel-file (QA: refused,
   * "kernel is one kernel (of 1 taps), not a multiple of the stream's 1
   * channels") */
  set_case("kernel taps as a 1 x 1 matrix");
  size_t len1 = ref_rng_range(&rng, 1, 2000);
  float *h1 = random_kernel(len1);
  routing_case("matrix", NULL, h1, len1, 1, 1, NULL, len1, 0);
  free(h1);
  set_case("routings a file cannot serve");
  float m[3 * 4] = {1, 0, 0, 0, 0.5f, 0, 0, 0, 0.25f};
  const char *p2 = fixture("routing-2.npy"), *p3 = fixture("routing-3.npy"),
             *pm = fixture("routing-m.npy");
  write_npy(p2, "(2, 4)", m, 8);
  write_npy(p3, "(3, 4)", m, 12);
  write_npy(pm, "(1, 2, 4)", m, 8);
  routing_refused("shared", p2, 2, "routing=shared", FALSE);
  routing_refused("per-channel", pm, 2, "routing=per-channel", FALSE);
  routing_refused("matrix", p3, 2, "not a multiple", TRUE);
  /* per-channel kernels said as such, not as a matrix */
  routing_refused("auto", p2, 3,
                  "has 2 per-channel kernels, the stream has 3 channels", TRUE);
  routing_refused("auto", p2, 1,
                  "has 2 per-channel kernels, the stream has 1 channel", TRUE);
  /* ... and where they divide the stream's channels, the routing that
   * takes them (a stereo IR on mono: QA, coming from afir) */
  routing_refused("auto", p2, 1,
                  "routing=matrix reads them as a 2 x 1 matrix (1 channel "
                  "in, 2 out)", TRUE);
  routing_refused("auto", pm, 1, "maps 2 input channels to 1", TRUE);
}

/* Caps of over 2 channels without a channel-mask (raw files:
 * filesrc ! audio/x-raw,channels=6,...): an element error saying so,
 * where the stream ended "not negotiated", the reason only in the debug
 * log (QA); with channel-mask=0 (unpositioned) they stream. */
static void test_caps_without_mask(void **state)
{
  (void)state;
  unsigned ch = (unsigned)ref_rng_range(&rng, 3, 8);
  set_case("%u channels", ch);
  float *hk = random_kernel((size_t)ch * 4);
  char shape[32];
  snprintf(shape, sizeof shape, "(%u, 4)", ch);
  const char *path = fixture("nomask.npy");
  write_npy(path, shape, hk, (size_t)ch * 4);
  for (int masked = 0; masked < 2; masked++) {
    GstHarness *h = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    g_object_set(h->element, "kernel-file", path, NULL);
    char caps[160];
    snprintf(caps, sizeof caps,
             "audio/x-raw,format=F32LE,rate=44100,channels=%u,"
             "layout=interleaved%s",
             ch, masked ? ",channel-mask=(bitmask)0x0" : "");
    gst_harness_set_src_caps_str(h, caps);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, (size_t)ch * 64);
    GstFlowReturn ret =
        push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, ch, 44100, 0, TRUE);
    if (masked)
      CHECK(ret == GST_FLOW_OK && !bus_has(bus, GST_MESSAGE_ERROR, ""),
            "channel-mask=0: %s", gst_flow_get_name(ret));
    else
      CHECK(ret != GST_FLOW_OK &&
                bus_has(bus, GST_MESSAGE_ERROR, "no channel-mask in the caps"),
            "no channel-mask: %s, and no element error saying so",
            gst_flow_get_name(ret));
    free(x);
    gst_element_set_bus(h->element, NULL);
    gst_harness_teardown(h);
    gst_object_unref(bus);
  }
  free(hk);
}

/* New caps the kernel cannot take (a stereo file's two per-channel
 * kernels, the stream turning mono): the held frames go out in the old
 * format as before caps it takes, the ring-out stopping where the input
 * ended, then the error; the EOS after pushes nothing (the whole ring-out
 * went out there, stamped past where the input ended). */
static void test_refused_caps(void **state)
{
  (void)state;
  const GstAudioFormat f = GST_AUDIO_FORMAT_F32LE;
  const unsigned rate = 48000;
  size_t len = ref_rng_range(&rng, 2000, 6000),
         n = ref_rng_range(&rng, 300, 5000);
  set_case("2 x %zu taps, %zu stereo frames, then mono caps", len, n);
  float *hk = random_kernel(2 * len);
  char shape[64];
  snprintf(shape, sizeof shape, "(2, %zu)", len);
  const char *path = fixture("refused-caps.npy");
  write_npy(path, shape, hk, 2 * len);
  float *x = random_input(f, n * 2);
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  g_object_set(h->element, "kernel-file", path, "block-size", 256u, NULL);
  set_caps(h, f, rate, 2, 2);
  collected c;
  collect_init(&c, 2, rate, 0, n + 2 * len);
  CHECK(push_frames(h, f, x, 0, n, 2, rate, 0, TRUE) == GST_FLOW_OK, "push");
  set_caps(h, f, rate, 1, 1);
  CHECK(bus_has(bus, GST_MESSAGE_ERROR, "2 per-channel kernels"),
        "no error for mono caps");
  float mono[64] = {0.5f};
  GstClockTime end = gst_util_uint64_scale_int_round(n, GST_SECOND, rate);
  CHECK(push_frames(h, f, mono, 0, 64, 1, rate, end, FALSE) != GST_FLOW_OK,
        "mono streamed through a stereo kernel");
  /* the caps it refused are retried before the EOS too */
  if (!gst_harness_push_event(h, gst_event_new_eos()))
    print_message("(EOS after the refused caps: not forwarded)\n");
  collect(h, &c, f);
  CHECK(c.frames == n,
        "%zu frames out for %zu in: the ring-out went %zu frames past where "
        "the input ended",
        c.frames, n, c.frames > n ? c.frames - n : 0);
  for (unsigned k = 0; k < 2; k++) {
    double *w = ref_channel(x, n, 2, k, hk + k * len, len, n);
    double e = ref_rel_l2(c.y + k, 2, w, 1, n);
    CHECK(e <= 2e-5, "channel %u: error %.3g", k, e);
    free(w);
  }
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);
  gst_object_unref(bus);
  free(c.y);
  free(x);
  free(hk);
}

static void test_trim_and_per_channel(void **state)
{
  (void)state;
  for (int cs = 0; cs < 3; cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 2, 3);
    size_t lead = ref_rng_range(&rng, 0, 300), len = ref_rng_range(&rng, 2, 900);
    size_t n = ref_rng_range(&rng, 10, 5000);
    set_case("%u per-channel kernels of %zu taps after %zu near-silent ones, "
             "%zu frames", ch, len, lead, n);
    size_t L = lead + len;
    float *hk = xalloc(ch * L * sizeof *hk);
    for (unsigned k = 0; k < ch; k++) {
      for (size_t i = 0; i < lead; i++)
        hk[k * L + i] = 1e-5f * ref_rng_sym(&rng); /* below -60 dB */
      for (size_t i = 0; i < len; i++)
        hk[k * L + lead + i] = ref_rng_sym(&rng);
      hk[k * L + lead] = k == 0 ? 0.9f : 0.1f; /* channel 0 sets the start */
      hk[k * L + lead + len - 1] = 1.0f;      /* the peak */
    }
    char shape[64];
    snprintf(shape, sizeof shape, "(%u, %zu)", ch, L);
    const char *path = fixture("perch.npy");
    write_npy(path, shape, hk, ch * L);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    g_object_set(h->element, "kernel-file", path, "trim", TRUE, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, 16000, ch, ch);
    collected c;
    collect_init(&c, ch, 16000, 0, n + L);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ch, 16000, 0,
                      TRUE) == GST_FLOW_OK, "push");
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n + len - 1, "%zu frames out, expected %zu (trimmed "
          "kernel of %zu taps)", c.frames, n + len - 1, len);
    for (unsigned k = 0; k < ch; k++) {
      double *w = ref_channel(x, n, ch, k, hk + k * L + lead, len, c.frames);
      double e = ref_rel_l2(c.y + k, ch, w, 1, c.frames);
      CHECK(e <= 2e-5, "channel %u: error %.3g", k, e);
      free(w);
    }
    gst_harness_teardown(h);
    free(c.y);
    free(x);
    free(hk);
  }
}

/* ---- an audio kernel file (WAV), at the stream's rate and resampled ---- */

/* A float32 WAV of `ch` channels at `rate` holding frames x[n][ch]. */
static void write_wav(const char *path, const float *x, size_t frames,
                      unsigned ch, unsigned rate)
{
  size_t data = frames * ch * 4;
  unsigned char *b = xalloc(44 + data);
  memcpy(b, "RIFF", 4);
  guint32 v = GUINT32_TO_LE((guint32)(36 + data));
  memcpy(b + 4, &v, 4);
  memcpy(b + 8, "WAVEfmt ", 8);
  v = GUINT32_TO_LE(16);
  memcpy(b + 16, &v, 4);
  guint16 w = GUINT16_TO_LE(3); /* IEEE float */
  memcpy(b + 20, &w, 2);
  w = GUINT16_TO_LE((guint16)ch);
  memcpy(b + 22, &w, 2);
  v = GUINT32_TO_LE(rate);
  memcpy(b + 24, &v, 4);
  v = GUINT32_TO_LE(rate * ch * 4);
  memcpy(b + 28, &v, 4);
  w = GUINT16_TO_LE((guint16)(ch * 4));
  memcpy(b + 32, &w, 2);
  w = GUINT16_TO_LE(32);
  memcpy(b + 34, &w, 2);
  memcpy(b + 36, "data", 4);
  v = GUINT32_TO_LE((guint32)data);
  memcpy(b + 40, &v, 4);
  for (size_t i = 0; i < frames * ch; i++) {
    guint32 u;
    memcpy(&u, &x[i], 4);
    u = GUINT32_TO_LE(u);
    memcpy(b + 44 + 4 * i, &u, 4);
  }
  write_bytes(path, b, 44 + data);
  free(b);
}

static void test_wav_kernel(void **state)
{
  (void)state;
  const char *path = fixture("ir.wav");
  for (int cs = 0; cs < 3; cs++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2);
    unsigned file_rate = 48000;
    unsigned rate = cs == 0 ? 48000 : cs == 1 ? 44100 : 96000;
    size_t len = ref_rng_range(&rng, 16, 3000);
    size_t n = ref_rng_range(&rng, 100, 8000);
    set_case("%u-channel WAV kernel of %zu taps at %u Hz on a %u Hz stream, "
             "%zu frames", ch, len, file_rate, rate, n);
    float *ir = random_kernel(len * ch);
    write_wav(path, ir, len, ch, file_rate);
    /* the reference kernel: the engine's own loader at the stream rate
     * (libswresample does the resampling; the element must use it as is) */
    cf_kernel *k = NULL;
    cf_status st = cf_kernel_load(path, rate, &k);
    if (st == CF_E_UNAVAILABLE) {
      print_message("skipped: WAV kernels: %s\n", cf_last_error());
      free(ir);
      return;
    }
    CHECK(st == CF_OK, "cf_kernel_load: %s", cf_last_error());
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    g_object_set(h->element, "kernel-file", path, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    size_t kl = cf_kernel_max_len(k);
    collected c;
    collect_init(&c, ch, rate, 0, n + kl);
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ch, rate, 0,
                      TRUE) == GST_FLOW_OK, "push");
    assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n + kl - 1, "%zu frames out, expected %zu (kernel of "
          "%zu taps at the stream rate)", c.frames, n + kl - 1, kl);
    if (rate == file_rate)
      CHECK(kl == len, "at the file's rate the kernel has %zu taps, not %zu",
            kl, len);
    for (unsigned j = 0; j < ch; j++) {
      size_t tl;
      const float *taps = cf_kernel_taps(k, ch == 1 ? 0 : j, &tl);
      if (rate == file_rate)
        for (size_t i = 0; i < tl; i++)
          CHECK(taps[i] == ir[i * ch + j], "tap %zu of channel %u: %g in the "
                "file, %g loaded", i, j, ir[i * ch + j], taps[i]);
      double *w = ref_channel(x, n, ch, j, taps, tl, c.frames);
      double e = ref_rel_l2(c.y + j, ch, w, 1, c.frames);
      CHECK(e <= 2e-5, "channel %u: error %.3g", j, e);
      free(w);
    }
    gst_harness_teardown(h);
    cf_kernel_free(k);
    free(c.y);
    free(x);
    free(ir);
  }
}

/* Kernel j of a kernel set as the element makes it from the file: the
 * leading `cut` taps off, times `gain` (float, as cf_kernel_scale);
 * *len its length. */
static float *kept_taps(const cf_kernel *k, unsigned j, size_t cut,
                        float gain, size_t *len)
{
  size_t tl;
  const float *t = cf_kernel_taps(k, cf_kernel_count(k) == 1 ? 0 : j, &tl);
  *len = tl - cut;
  float *h = xalloc(*len * sizeof *h + 4);
  for (size_t i = 0; i < *len; i++)
    h[i] = t[cut + i] * gain;
  return h;
}

/* Leading taps `trim` cuts from every kernel of k (the same count). */
static size_t trim_cut(const cf_kernel *k)
{
  float peak = 0.0f;
  size_t cut = SIZE_MAX, tl;
  for (unsigned i = 0; i < cf_kernel_count(k); i++) {
    const float *t = cf_kernel_taps(k, i, &tl);
    for (size_t j = 0; j < tl; j++)
      peak = fmaxf(peak, fabsf(t[j]));
  }
  float thr = peak * (float)pow(10.0, -60.0 / 20.0);
  for (unsigned i = 0; i < cf_kernel_count(k); i++) {
    const float *t = cf_kernel_taps(k, i, &tl);
    size_t j = 0;
    while (j < tl && fabsf(t[j]) < thr)
      j++;
    cut = MIN(cut, j);
  }
  return cut;
}

/* trim and routing changed while PLAYING rebuild the kernel from the
 * taps kernel-file had when it was set (gain scales the output), without
 * reading the file again:
 * a gain change re-read it, so a file overwritten since swapped in its
 * new taps, and one removed since failed the change while `gain` and
 * `trim` read back the new value, the audio going on with the old one,
 * nothing on the bus (QA). A .npy, a text file, a WAV; random kernels,
 * buffer sizes, gain; every change against the float64 reference. A new
 * rate needs no file for a .npy or text (the same taps at every rate);
 * a WAV, resampled to the stream's rate, is read again then, and where
 * it has gone, the error says so. A gain the taps would overflow with
 * is taken: it scales the output, not the taps. */
static void test_kernel_file_kept(void **state)
{
  (void)state;
  const char *path[3] = {fixture("kept.npy"), fixture("kept.txt"),
                         fixture("kept.wav")};
  for (int cs = 0; cs < 3; cs++) {
    unsigned rate = 48000, r2 = 44100;
    unsigned ch = cs == 2 ? (unsigned)ref_rng_range(&rng, 1, 2) : 1;
    /* fewer leading zeros than taps (lead up to 40 over 16-39 taps wrote
     * past the kernel: ASan, CI seed 1796157516) */
    size_t len = ref_rng_range(&rng, 16, 2000),
           lead = ref_rng_range(&rng, 1, MIN(40, len - 1));
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    double gain_db = (double)ref_rng_range(&rng, 1, 18) - 12.5;
    size_t seg[4], n = 0;
    for (int i = 0; i < 4; i++)
      n += seg[i] = ref_rng_range(&rng, 1, 3000);
    set_case("%s, %u ch, %zu taps (%zu leading zeros), block %u, gain %g dB, "
             "changes after %zu, %zu, %zu frames, then %zu",
             path[cs], ch, len, lead, block, gain_db, seg[0], seg[1], seg[2],
             seg[3]);
    float *h1 = random_kernel(len * ch), *h2 = random_kernel(len * ch);
    memset(h1, 0, lead * ch * sizeof *h1); /* for trim to cut */
    char shape[32];
    snprintf(shape, sizeof shape, "(%zu,)", len);
    if (cs == 0) {
      write_npy(path[cs], shape, h1, len);
    } else if (cs == 1) {
      GString *t = g_string_new(NULL);
      for (size_t i = 0; i < len; i++)
        g_string_append_printf(t, "%.9g\n", (double)h1[i]);
      write_bytes(path[cs], t->str, t->len);
      g_string_free(t, TRUE);
    } else {
      write_wav(path[cs], h1, len, ch, rate);
    }
    /* the taps as the element reads them (a WAV through libav) */
    cf_kernel *k = NULL;
    cf_status st = cf_kernel_load(path[cs], rate, &k);
    if (st == CF_E_UNAVAILABLE) {
      print_message("skipped: WAV kernels: %s\n", cf_last_error());
      free(h1);
      free(h2);
      break;
    }
    CHECK(st == CF_OK, "cf_kernel_load: %s", cf_last_error());
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    g_object_set(h->element, "kernel-file", path[cs], "crossfade",
                 (guint64)0, "drain", FALSE, "block-size", block, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, rate, ch, ch);
    collected c;
    collect_init(&c, ch, rate, 0, n + 1);
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
      if (i == 1) { /* the file overwritten, then a gain change */
        if (cs == 0)
          write_npy(path[cs], shape, h2, len);
        else if (cs == 1)
          write_bytes(path[cs], "0.5 0.25\n", 9);
        else
          write_wav(path[cs], h2, len, ch, rate);
        gate_set(path[cs], FALSE); /* open it: seen */
        g_object_set(h->element, "gain", gain_db, NULL);
        g_mutex_lock(&gate_mu);
        gboolean opened = gate_hit;
        g_mutex_unlock(&gate_mu);
        gate_set(NULL, FALSE);
        CHECK(!opened, "a gain change opened %s again", path[cs]);
      } else if (i == 2) { /* the file removed, then trim */
        CHECK(unlink(path[cs]) == 0, "unlink %s", path[cs]);
        g_object_set(h->element, "trim", TRUE, NULL);
      } else if (i == 3) { /* and routing (the same kernels) */
        gst_util_set_object_arg(G_OBJECT(h->element), "routing",
                                ch == 1 ? "shared" : "per-channel");
      }
      for (size_t end = at + seg[i]; at < end;) {
        size_t m = pick(ref_rng_range(&rng, 1, 1500), end - at);
        CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, at, m, ch, rate, 0,
                          at == 0) == GST_FLOW_OK, "push at frame %zu", at);
        at += m;
      }
    }
    gdouble g_now = 0;
    gboolean trim_now = FALSE;
    g_object_get(h->element, "gain", &g_now, "trim", &trim_now, NULL);
    CHECK(g_now == gain_db && trim_now, "gain %g, trim %d read back, "
          "expected %g, 1", g_now, trim_now, gain_db);
    CHECK(!bus_has(bus, GST_MESSAGE_WARNING, ""), "a warning on the bus "
          "for a gain, trim or routing change");
    /* a new rate: the same taps for a .npy or text, from memory; a WAV is
     * read again to be resampled, and it has gone */
    set_caps(h, GST_AUDIO_FORMAT_F32LE, r2, ch, ch);
    collect(h, &c, GST_AUDIO_FORMAT_F32LE);
    CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
    float g = (float)pow(10.0, gain_db / 20.0);
    size_t cut = trim_cut(k);
    for (unsigned j = 0; j < ch; j++) {
      size_t l[3];
      float *kk[3] = {kept_taps(k, j, 0, 1.0f, &l[0]),
                      kept_taps(k, j, 0, g, &l[1]),
                      kept_taps(k, j, cut, g, &l[2])};
      double *y[3], *want = xalloc(n * sizeof *want);
      for (int i = 0; i < 3; i++)
        y[i] = ref_channel(x, n, ch, j, kk[i], l[i], n);
      /* crossfade 0: the new kernel over all the input from the change */
      for (size_t i = 0; i < n; i++)
        want[i] = i < seg[0] ? y[0][i] : i < seg[0] + seg[1] ? y[1][i] : y[2][i];
      double e = ref_rel_l2(c.y + j, ch, want, 1, n);
      CHECK(e <= 2e-5, "channel %u: error %.3g against the file's taps as "
            "set, then with gain, then trimmed", j, e);
      for (int i = 0; i < 3; i++) {
        free(kk[i]);
        free(y[i]);
      }
      free(want);
    }
    size_t nb = ref_rng_range(&rng, 1, 3000);
    float *xb = random_input(GST_AUDIO_FORMAT_F32LE, nb * ch);
    GstClockTime tb = 10 * GST_SECOND;
    GstFlowReturn fr =
        push_frames(h, GST_AUDIO_FORMAT_F32LE, xb, 0, nb, ch, r2, tb, TRUE);
    if (cs == 2) {
      CHECK(fr != GST_FLOW_OK, "a WAV gone streamed at a new rate");
      CHECK(bus_has_detail(bus, GST_MESSAGE_ERROR, path[cs], "resample"),
            "no error naming %s and its resampling to the new rate",
            path[cs]);
    } else {
      CHECK(fr == GST_FLOW_OK, "push at %u Hz: %s", r2,
            gst_flow_get_name(fr));
      assert_true(gst_harness_push_event(h, gst_event_new_eos()));
      collected b;
      collect_init(&b, ch, r2, tb, nb + 1);
      collect(h, &b, GST_AUDIO_FORMAT_F32LE);
      CHECK(b.frames == nb, "%zu frames out at %u Hz, expected %zu",
            b.frames, r2, nb);
      size_t l;
      float *kk = kept_taps(k, 0, cut, g, &l);
      double *w = ref_channel(xb, nb, ch, 0, kk, l, nb);
      double e = ref_rel_l2(b.y, ch, w, 1, nb);
      CHECK(e <= 2e-5, "at %u Hz: error %.3g against the taps kept", r2, e);
      CHECK(!bus_has(bus, GST_MESSAGE_ERROR, ""), "an error at %u Hz", r2);
      free(kk);
      free(w);
      free(b.y);
    }
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(h);
    cf_kernel_free(k);
    unlink(path[cs]);
    free(c.y);
    free(x);
    free(xb);
    free(h1);
    free(h2);
  }

  /* a gain the taps would overflow with, were it applied to them (as it
   * was, and refused on the bus): the output is scaled, not the taps, so
   * it is taken, crossfade 0: at the next buffer */
  set_case("a gain on taps near float's limit while playing");
  float big[3] = {1e33f, -5e32f, 2.5e32f};
  const char *bp = fixture("big.npy");
  write_npy(bp, "(3,)", big, 3);
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  g_object_set(h->element, "kernel-file", bp, "gain", -6.0, "drain", FALSE,
               "crossfade", (guint64)0, NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 1, 1);
  size_t n = ref_rng_range(&rng, 100, 3000), n1 = ref_rng_range(&rng, 1, n);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n1, 1, 48000, 0, TRUE) ==
            GST_FLOW_OK, "push 1");
  g_object_set(h->element, "gain", 50.0, NULL);
  gdouble g_now = 0;
  g_object_get(h->element, "gain", &g_now, NULL);
  CHECK(g_now == 50.0, "gain reads back %g, 50 was set", g_now);
  CHECK(!bus_has(bus, GST_MESSAGE_WARNING, ""), "a warning for the gain");
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, n1, n - n1, 1, 48000, 0,
                    FALSE) == GST_FLOW_OK, "push 2");
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collected c;
  collect_init(&c, 1, 48000, 0, n + 1);
  collect(h, &c, GST_AUDIO_FORMAT_F32LE);
  CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
  double *w = ref_channel(x, n, 1, 0, big, 3, n);
  for (size_t i = 0; i < n; i++)
    w[i] *= pow(10.0, (i < n1 ? -6.0 : 50.0) / 20.0);
  double e = ref_rel_l2(c.y, 1, w, 1, n);
  CHECK(e <= 2e-5, "error %.3g against the kernel at -6 dB, then 50", e);
  free(w);
  free(c.y);
  free(x);
  gst_element_set_bus(h->element, NULL);
  gst_object_unref(bus);
  gst_harness_teardown(h);
  unlink(bp);
}

/* ---- bad values ------------------------------------------------------------ */


/* Float input holding NaN or infinity is filtered as the engine does it
 * and said once a run on the bus, naming the value, its channel and time
 * (its frame where the buffers have no timestamps: rounds 3-5; the
 * time of an unset one had come out as 99:99:99.999999999): the output
 * went non-finite without a word (FFT paths: up to a block
 * before the sample too). Random format (F32LE, F64LE), channels, kernel,
 * block size and chunking; the outputs before the sample's block are
 * the float64 reference's; a second bad sample is not said again, after
 * a flush it is. */
static void test_nonfinite_input(void **state)
{
  (void)state;
  for (int round = 0; round < 6; round++) {
    GstAudioFormat f =
        round % 2 ? GST_AUDIO_FORMAT_F64LE : GST_AUDIO_FORMAT_F32LE;
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 3), rate = 48000;
    size_t len = ref_rng_range(&rng, 1, 400), n = ref_rng_range(&rng, 3000,
                                                                 9000);
    guint block = 1u << ref_rng_range(&rng, 5, 9);
    float *h = xalloc(len * sizeof *h);
    ref_rng_fill(&rng, h, len);
    float *x = random_input(f, n * ch);
    size_t s = ref_rng_range(&rng, 2 * block, n / 2), c = ref_rng_range(&rng, 0,
                                                                      ch - 1);
    int inf = round % 3 == 2;
    x[s * ch + c] = inf ? -INFINITY : NAN;
    x[(n - 100) * ch + c] = NAN; /* a second one: not said again */
    GstHarness *hh = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(hh->element, bus);
    set_taps(hh->element, h, len);
    g_object_set(hh->element, "block-size", block, NULL);
    set_caps(hh, f, rate, ch, ch);
    GstClockTime t0 = round >= 3 ? GST_CLOCK_TIME_NONE : 0;
    collected out;
    collect_init(&out, ch, rate, t0, n + 1);
    size_t sizes[4096];
    size_t nc = ref_chunking(&rng, n, block, sizes, 4096), at = 0;
    int said = 0;
    for (size_t k = 0; k < nc; k++) {
      CHECK(push_frames(hh, f, x, at, sizes[k], ch, rate, t0, k == 0) ==
                GST_FLOW_OK,
            "push");
      at += sizes[k];
      collect(hh, &out, f);
      char want[160];
      if (GST_CLOCK_TIME_IS_VALID(t0))
        snprintf(want, sizeof want, "holds %s at %" GST_TIME_FORMAT
                 " (channel %zu)",
                 inf ? "infinity" : "NaN",
                 GST_TIME_ARGS(gst_util_uint64_scale_int_round(s, GST_SECOND,
                                                               (gint)rate)),
                 c);
      else
        snprintf(want, sizeof want, "holds %s at frame %zu (channel %zu)",
                 inf ? "infinity" : "NaN", s, c);
      GstMessage *m;
      while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING))) {
        GError *err = NULL;
        gst_message_parse_warning(m, &err, NULL);
        CHECK(at > s, "a warning before the bad sample was pushed: %s",
              err->message);
        CHECK(strstr(err->message, want), "warning \"%s\", want \"...%s\"",
              err->message, want);
        said++;
        g_clear_error(&err);
        gst_message_unref(m);
      }
    }
    CHECK(said == 1, "round %d (%s, %u ch, %zu taps, block %u, sample %zu): "
          "%d warnings, want one",
          round, f == GST_AUDIO_FORMAT_F32LE ? "F32LE" : "F64LE", ch, len,
          block, s, said);
    /* before the sample's block: the reference's */
    size_t clean = s / block * block - (s / block * block > 0 ? 1 : 0);
    clean = MIN(clean, out.frames);
    for (unsigned o = 0; o < ch; o++) {
      double *want = ref_channel(x, n, ch, o, h, len, clean);
      for (size_t k = 0; k < clean; k++)
        CHECK(isfinite(out.y[k * ch + o]) &&
                  fabs(out.y[k * ch + o] - want[k]) <= 1e-4,
              "round %d: output %zu, channel %u is %g, want %g (the bad "
              "sample is at %zu)",
              round, k, o, out.y[k * ch + o], want[k], s);
      free(want);
    }
    /* after a flush, said again */
    gst_harness_push_event(hh, gst_event_new_flush_start());
    gst_harness_push_event(hh, gst_event_new_flush_stop(TRUE));
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    gst_harness_push_event(hh, gst_event_new_segment(&seg));
    CHECK(push_frames(hh, f, x, s, 10, ch, rate, 0, TRUE) == GST_FLOW_OK,
          "push after the flush");
    CHECK(bus_has(bus, GST_MESSAGE_WARNING, inf ? "holds infinity"
                                                : "holds NaN"),
          "round %d: not said again after a flush", round);
    gst_element_set_bus(hh->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(hh);
    free(out.y);
    free(x);
    free(h);
  }
}
/* Memory that neither maps nor copies (memory that lives on a device
 * can be so): an allocator of it, for test_unreadable_input. */
typedef GstAllocator NoMapAllocator;
typedef GstAllocatorClass NoMapAllocatorClass;
GType no_map_allocator_get_type(void);
G_DEFINE_TYPE(NoMapAllocator, no_map_allocator, GST_TYPE_ALLOCATOR)

static gpointer no_map(GstMemory *m, gsize max, GstMapFlags f)
{
  (void)m, (void)max, (void)f;
  return NULL;
}
static void no_unmap(GstMemory *m)
{
  (void)m;
}
static GstMemory *no_copy(GstMemory *m, gssize o, gssize n)
{
  (void)m, (void)o, (void)n;
  return NULL;
}
static void no_map_free(GstAllocator *a, GstMemory *m)
{
  (void)a;
  g_free(m);
}
static void no_map_allocator_class_init(NoMapAllocatorClass *k)
{
  k->free = no_map_free;
}
static void no_map_allocator_init(NoMapAllocator *a)
{
  a->mem_type = "NoMapMemory";
  a->mem_map = no_map;
  a->mem_unmap = no_unmap;
  a->mem_copy = no_copy;
  a->mem_share = no_copy;
  GST_OBJECT_FLAG_SET(a, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

/* Input that does not map fails the stream, naming it, and nothing goes
 * out; also where the buffer does not end on a frame and its bytes are
 * joined to the next: there they were gst_buffer_extract'ed unchecked,
 * and the bytes of a fresh allocation filtered and pushed as sound (QA).
 * Cases: a buffer ending inside a frame; one after such a buffer (the
 * carried bytes joined to it); one shorter than a frame; one of whole
 * frames. */
static void test_unreadable_input(void **state)
{
  (void)state;
  GstAllocator *alloc = g_object_new(no_map_allocator_get_type(), NULL);
  for (int how = 0; how < 4; how++) {
    unsigned ch = (unsigned)ref_rng_range(&rng, 2, 4);
    gsize bpf = ch * sizeof(float);
    size_t frames = ref_rng_range(&rng, 1, 500);
    float h[2] = {0.5f, 0.25f};
    GstHarness *hh = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(hh->element, bus);
    set_taps(hh->element, h, 2);
    set_caps(hh, GST_AUDIO_FORMAT_F32LE, 48000, ch, ch);
    if (how == 1) { /* a readable buffer ending inside a frame first */
      GstBuffer *first = gst_buffer_new_allocate(NULL, bpf + 2, NULL);
      gst_buffer_memset(first, 0, 0, bpf + 2);
      CHECK(gst_harness_push(hh, first) == GST_FLOW_OK, "readable push");
    }
    gsize size = how == 2   ? bpf - 1
                 : how == 3 ? frames * bpf
                            : frames * bpf + (how == 0 ? 3 : 0);
    GstMemory *m = g_new0(GstMemory, 1);
    gst_memory_init(m, 0, alloc, NULL, size, 0, 0, size);
    GstBuffer *b = gst_buffer_new();
    gst_buffer_append_memory(b, m);
    guint before = gst_harness_buffers_received(hh);
    GstFlowReturn fr = gst_harness_push(hh, b);
    guint out = gst_harness_buffers_received(hh) - before;
    CHECK(fr == GST_FLOW_ERROR && out == 0 &&
              bus_has(bus, GST_MESSAGE_ERROR, "cannot map input"),
          "case %d (%u ch, %" G_GSIZE_FORMAT " bytes): flow %s, %u buffers "
          "out, or the error does not say the input does not map",
          how, ch, size, gst_flow_get_name(fr), out);
    gst_element_set_bus(hh->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(hh);
  }
  gst_object_unref(alloc);
}

/* The properties both elements have (device-id, threads, backend, ...)
 * take the same values on both: an application or a cudafilterd config
 * that sets them on one sets them on the other (cudafir's device-id and
 * threads stopped at 255 and 256, cudaconvolve's at 1023 and 1024).
 * pipeline-depth counts different things (blocks, frames) with the
 * engines' own limits. Their nicks are the same too. */
static void test_shared_property_ranges(void **state)
{
  (void)state;
  GstElement *a = gst_element_factory_make("cudafir", NULL);
  GstElement *v = gst_element_factory_make("cudaconvolve", NULL);
  CHECK(a && v, "cudafir or cudaconvolve missing");
  guint n = 0, compared = 0;
  GParamSpec **ps = g_object_class_list_properties(G_OBJECT_GET_CLASS(a), &n);
  for (guint i = 0; i < n; i++) {
    GParamSpec *q = g_object_class_find_property(G_OBJECT_GET_CLASS(v),
                                                 ps[i]->name);
    if (!q || ps[i]->owner_type != G_OBJECT_TYPE(a))
      continue;
    /* the label a UI shows (a PyGObject settings dialog showed "Device
     * ID" for one and "Device id" for the other) */
    CHECK(!strcmp(g_param_spec_get_nick(ps[i]), g_param_spec_get_nick(q)),
          "%s: nick '%s' on cudafir, '%s' on cudaconvolve", ps[i]->name,
          g_param_spec_get_nick(ps[i]), g_param_spec_get_nick(q));
    if (!strcmp(ps[i]->name, "pipeline-depth"))
      continue;
    CHECK(G_PARAM_SPEC_VALUE_TYPE(ps[i]) == G_PARAM_SPEC_VALUE_TYPE(q),
          "%s: %s on cudafir, %s on cudaconvolve", ps[i]->name,
          g_type_name(G_PARAM_SPEC_VALUE_TYPE(ps[i])),
          g_type_name(G_PARAM_SPEC_VALUE_TYPE(q)));
    if (G_IS_PARAM_SPEC_INT(ps[i]))
      CHECK(G_PARAM_SPEC_INT(ps[i])->minimum == G_PARAM_SPEC_INT(q)->minimum &&
                G_PARAM_SPEC_INT(ps[i])->maximum ==
                    G_PARAM_SPEC_INT(q)->maximum,
            "%s: %d..%d on cudafir, %d..%d on cudaconvolve", ps[i]->name,
            G_PARAM_SPEC_INT(ps[i])->minimum, G_PARAM_SPEC_INT(ps[i])->maximum,
            G_PARAM_SPEC_INT(q)->minimum, G_PARAM_SPEC_INT(q)->maximum);
    if (G_IS_PARAM_SPEC_UINT(ps[i]))
      CHECK(G_PARAM_SPEC_UINT(ps[i])->minimum ==
                    G_PARAM_SPEC_UINT(q)->minimum &&
                G_PARAM_SPEC_UINT(ps[i])->maximum ==
                    G_PARAM_SPEC_UINT(q)->maximum,
            "%s: %u..%u on cudafir, %u..%u on cudaconvolve", ps[i]->name,
            G_PARAM_SPEC_UINT(ps[i])->minimum,
            G_PARAM_SPEC_UINT(ps[i])->maximum, G_PARAM_SPEC_UINT(q)->minimum,
            G_PARAM_SPEC_UINT(q)->maximum);
    compared++;
  }
  g_free(ps);
  /* backend, device-id, threads, kernel, kernel-file, backend-in-use */
  CHECK(compared >= 6, "only %u properties in common", compared);
  gst_object_unref(a);
  gst_object_unref(v);
}

/* A kernel-file that cannot be used fails the stream with a resource
 * error an application tells apart by its code, as filesrc's: NOT_FOUND
 * for no such file, SETTINGS for what it holds (both were SETTINGS). */
static void test_kernel_file_error_codes(void **state)
{
  (void)state;
  for (int bad = 0; bad < 2; bad++) {
    const char *path = fixture(bad ? "garbage-ir.txt" : "absent-ir.wav");
    set_case("kernel-file %s", bad ? "with bad content" : "missing");
    unlink(path);
    if (bad) {
      FILE *f = fopen(path, "w");
      CHECK(f && fputs("0.5 x\n", f) >= 0 && fclose(f) == 0, "%s: %s", path,
            strerror(errno));
    }
    GstHarness *h = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    g_object_set(h->element, "kernel-file", path, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 1, 1);
    float x[64] = {0.5f};
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 1, 48000, 0,
                      TRUE) != GST_FLOW_OK,
          "a stream ran on an unusable kernel-file");
    GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    CHECK(m, "no element error");
    GError *err = NULL;
    gst_message_parse_error(m, &err, NULL);
    gint want = bad ? GST_RESOURCE_ERROR_SETTINGS : GST_RESOURCE_ERROR_NOT_FOUND;
    CHECK(err && err->domain == GST_RESOURCE_ERROR && err->code == want &&
              strstr(err->message, path),
          "error %s %d '%s', expected %s %d naming the file",
          err ? g_quark_to_string(err->domain) : "none", err ? err->code : 0,
          err ? err->message : "", g_quark_to_string(GST_RESOURCE_ERROR),
          want);
    g_clear_error(&err);
    gst_message_unref(m);
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(h);
    unlink(path);
  }
}

/* A kernel file holding zeros only (an impulse response bounced or
 * exported empty, a WAV or a text file, trim or not) is refused as a
 * malformed one is, naming it: set before the stream, the start fails
 * with an element error; set while streaming on a good kernel, a warning,
 * the previous kernel filtering on. It muted the output without a word
 * (QA). Explicit `kernel` taps of 0 are a mute meant: taken. */
static void test_silent_kernel_file(void **state)
{
  (void)state;
  const char *path = NULL;
  for (int cs = 0; cs < 4; cs++) {
    gboolean wav = cs % 2, streaming = cs / 2, trim = ref_rng_u64(&rng) % 2;
    size_t len = ref_rng_range(&rng, 1, 3000);
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 2);
    path = fixture(wav ? "silent-ir.wav" : "silent-ir.txt");
    set_case("%s of %zu zeros, %u ch, trim %d, set %s", wav ? "WAV" : "text",
             len, ch, trim, streaming ? "while streaming" : "before");
    float *zeros = calloc(len * ch, sizeof *zeros);
    assert_non_null(zeros);
    if (wav) {
      write_wav(path, zeros, len, ch, 48000);
      cf_kernel *k = NULL;
      cf_status st = cf_kernel_load(path, 48000, &k);
      cf_kernel_free(k);
      if (st == CF_E_UNAVAILABLE) { /* a build without libav */
        print_message("skipped: WAV kernels: %s\n", cf_last_error());
        unlink(path);
        free(zeros);
        continue;
      }
    } else {
      FILE *f = fopen(path, "w");
      CHECK(f, "%s: %s", path, strerror(errno));
      for (size_t i = 0; i < len; i++)
        fprintf(f, "%s0", i ? " " : "");
      CHECK(fputs("\n", f) >= 0 && fclose(f) == 0, "%s: %s", path,
            strerror(errno));
    }
    GstHarness *h = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    g_object_set(h->element, "trim", trim, NULL);
    const float half = 0.5f;
    if (streaming)
      set_taps(h->element, &half, 1);
    else
      g_object_set(h->element, "kernel-file", path, NULL);
    set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, ch, ch);
    size_t n = 256;
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, 2 * n * ch);
    GstFlowReturn r =
        push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, n, ch, 48000, 0, TRUE);
    if (!streaming) {
      CHECK(r != GST_FLOW_OK, "a stream ran on a silent kernel-file");
      CHECK(bus_has_detail(bus, GST_MESSAGE_ERROR, path, "silent"),
            "no element error naming %s and saying it is silent", path);
    } else {
      CHECK(r == GST_FLOW_OK, "push on <0.5> failed");
      g_object_set(h->element, "kernel-file", path, NULL);
      CHECK(bus_has_detail(bus, GST_MESSAGE_WARNING, path, "silent"),
            "no warning naming %s and saying it is silent", path);
      gchar *kf = NULL;
      g_object_get(h->element, "kernel-file", &kf, NULL);
      CHECK(kf == NULL, "kernel-file reads back %s after it was refused", kf);
      g_free(kf);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, n, n, ch, 48000, 0,
                        FALSE) == GST_FLOW_OK,
            "push after the refusal failed");
      size_t got = 0;
      GstBuffer *o;
      while ((o = gst_harness_try_pull(h))) {
        GstMapInfo m;
        assert_true(gst_buffer_map(o, &m, GST_MAP_READ));
        for (size_t i = 0; i < m.size / sizeof(float); i++, got++) {
          float y;
          memcpy(&y, m.data + i * sizeof y, sizeof y);
          CHECK(y == 0.5f * x[got], "sample %zu: %g, expected %g (<0.5>)", got,
                y, 0.5f * x[got]);
        }
        gst_buffer_unmap(o, &m);
        gst_buffer_unref(o);
      }
      CHECK(got == 2 * n * ch, "%zu samples out of %zu", got, 2 * n * ch);
    }
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(h);
    unlink(path);
    free(x);
    free(zeros);
  }
  /* kernel=<0, 0, 0>: taken, the output silence */
  set_case("kernel of zeros");
  static const float z[3] = {0};
  GstHarness *h = new_fir();
  set_taps(h->element, z, 3);
  set_caps(h, GST_AUDIO_FORMAT_S16LE, 48000, 1, 1);
  float *x = random_input(GST_AUDIO_FORMAT_S16LE, 100);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_S16LE, x, 0, 100, 1, 48000, 0, TRUE) ==
            GST_FLOW_OK,
        "kernel=<0, 0, 0> refused");
  GstBuffer *o = gst_harness_pull(h);
  CHECK(o && gst_buffer_memcmp(o, 0, (gint16[100]){0}, 200) == 0,
        "kernel=<0, 0, 0>: the output is not silence");
  gst_buffer_unref(o);
  gst_harness_teardown(h);
  free(x);
}

/* An F64LE sample finite as a double but past float32's 3.4e38 is
 * infinite in the engine: the warning said "the input holds infinity"
 * of a finite 1e39 (QA); it now says it may be a value beyond float32's
 * range. */
static void test_f64_beyond_float(void **state)
{
  (void)state;
  double big = ref_rng_range(&rng, 0, 1) ? 1e39 : -3.5e38;
  set_case("F64LE sample %g", big);
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  set_caps(h, GST_AUDIO_FORMAT_F64LE, 48000, 1, 1);
  double x[4] = {0.5, big, 1e-3, 0.25};
  GstBuffer *b = gst_buffer_new_memdup(x, sizeof x);
  GST_BUFFER_PTS(b) = 0;
  CHECK(gst_harness_push(h, b) == GST_FLOW_OK, "push");
  CHECK(bus_has(bus, GST_MESSAGE_WARNING, "beyond float32's range"),
        "no warning saying %g is beyond float32's range", big);
  gst_element_set_bus(h->element, NULL);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

/* An element error or warning on the element's bus naming `needle`. */
static void count_notify(GObject *obj, GParamSpec *pspec, gpointer data)
{
  (void)obj;
  (void)pspec;
  (*(int *)data)++;
}

/* A refused kernel or kernel-file leaves no notify::<property> (the
 * value did not change: an application showing it from its notify showed
 * a value the element did not take); a value taken gives one. Streaming,
 * random bad and good values. */
static void test_refused_no_notify(void **state)
{
  (void)state;
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  float one = 0.75f;
  set_taps(h->element, &one, 1);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 2, 2);
  float x[2 * 64] = {0.5f};
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 2, 48000, 0, TRUE) ==
            GST_FLOW_OK,
        "push");
  char good_file[1024]; /* fixture's names are a ring of 8 */
  g_strlcpy(good_file, fixture("notify-good.npy"), sizeof good_file);
  float taps[40];
  for (unsigned rep = 0; rep < 12; rep++) {
    unsigned what = (unsigned)(ref_rng_u64(&rng) % 3);
    const char *prop = what < 2 ? "kernel" : "kernel-file";
    set_case("refused %s, no notify (#%u)", prop, rep);
    int n = 0;
    gchar *sig = g_strdup_printf("notify::%s", prop);
    gulong id = g_signal_connect(h->element, sig, G_CALLBACK(count_notify),
                                 &n);
    g_free(sig);
    size_t len = ref_rng_range(&rng, 1, 40);
    for (size_t i = 0; i < len; i++)
      taps[i] = (float)ref_rng_sym(&rng);
    if (what < 2) { /* a tap not finite */
      taps[ref_rng_u64(&rng) % len] = what ? NAN : -INFINITY;
      set_taps(h->element, taps, len);
    } else {
      g_object_set(h->element, "kernel-file",
                   ref_rng_u64(&rng) % 2 ? "/nonexistent/ir.wav"
                                         : fixture("notify-missing.npy"),
                   NULL);
    }
    CHECK(bus_has(bus, GST_MESSAGE_WARNING, "refused"),
          "the bad %s was not refused", prop);
    CHECK(n == 0, "a refused %s notified %d times", prop, n);
    /* a value taken notifies once */
    for (size_t i = 0; i < len; i++)
      taps[i] = (float)ref_rng_sym(&rng);
    if (what < 2) {
      set_taps(h->element, taps, len);
    } else {
      write_npy(good_file, "(5,)", taps, 5);
      g_object_set(h->element, "kernel-file", good_file, NULL);
    }
    CHECK(!bus_has(bus, GST_MESSAGE_WARNING, ""), "a good %s was refused",
          prop);
    CHECK(n == 1, "a %s taken notified %d times, want once", prop, n);
    g_signal_handler_disconnect(h->element, id);
    set_taps(h->element, &one, 1);
  }
  gst_element_set_bus(h->element, NULL);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

/* block-size, pipeline-depth, threads, backend and device-id shape the
 * engine made at the stream's caps: set while it runs they were stored
 * and read back, the engine going on with the old ones (the latency
 * unchanged: QA). Refused there with a warning naming the property, no
 * notify, the value and the latency kept and the stream going on; the
 * same value is no change; set before the caps (PLAYING, no engine yet)
 * or back in READY they are taken. */
static void test_ready_only_running(void **state)
{
  (void)state;
  static const guint blocks[] = {64, 256, 1000};
  for (unsigned rep = 0; rep < 3; rep++) {
    guint b1 = blocks[ref_rng_range(&rng, 0, 2)];
    set_case("engine-shaping properties while streaming, block %u (#%u)", b1,
             rep);
    GstHarness *h = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    float taps[700];
    size_t len = ref_rng_range(&rng, 600, 700); /* the FFT path */
    for (size_t i = 0; i < len; i++)
      taps[i] = (float)ref_rng_sym(&rng) / 16;
    set_taps(h->element, taps, len);
    g_object_set(h->element, "block-size", b1, NULL); /* PLAYING, no caps */
    CHECK(!bus_has(bus, GST_MESSAGE_WARNING, ""),
          "block-size set before the caps was refused");
    set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 1, 1);
    float x[512 * 6]; /* a buffer before the sets and one after each */
    ref_rng_fill(&rng, x, G_N_ELEMENTS(x));
    CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 512, 1, 48000, 0,
                      TRUE) == GST_FLOW_OK, "push");
    guint64 lat0, lat1;
    g_object_get(h->element, "latency", &lat0, NULL);
    static const char *const props[] = {"block-size", "pipeline-depth",
                                        "threads", "device-id", "backend"};
    for (unsigned i = 0; i < G_N_ELEMENTS(props); i++) {
      const char *prop = props[i];
      int n = 0;
      gchar *sig = g_strdup_printf("notify::%s", prop);
      gulong id = g_signal_connect(h->element, sig, G_CALLBACK(count_notify),
                                   &n);
      g_free(sig);
      GValue was = G_VALUE_INIT, now = G_VALUE_INIT;
      GParamSpec *ps =
          g_object_class_find_property(G_OBJECT_GET_CLASS(h->element), prop);
      g_value_init(&was, ps->value_type);
      g_value_init(&now, ps->value_type);
      g_object_get_property(G_OBJECT(h->element), prop, &was);
      /* the same value: no change, no warning */
      g_object_set_property(G_OBJECT(h->element), prop, &was);
      CHECK(!bus_has(bus, GST_MESSAGE_WARNING, ""),
            "%s set to its own value was refused", prop);
      const char *other = !strcmp(prop, "block-size")       ? "2048"
                          : !strcmp(prop, "pipeline-depth") ? "2"
                          : !strcmp(prop, "threads")        ? "3"
                          : !strcmp(prop, "device-id")      ? "1"
                          : !strcmp(backend, "cpu")         ? "auto"
                                                            : "cpu";
      gst_util_set_object_arg(G_OBJECT(h->element), prop, other);
      CHECK(bus_has_detail(bus, GST_MESSAGE_WARNING, prop,
                           "cannot change while a stream runs"),
            "%s=%s set while streaming was not refused", prop, other);
      g_object_get_property(G_OBJECT(h->element), prop, &now);
      CHECK(g_param_values_cmp(ps, &was, &now) == 0,
            "%s read back another value than the engine's after a refused "
            "set", prop);
      CHECK(n == 1, "%s: %d notifies for a set to the same value and a "
            "refused one, want 1 (GObject's for the first)", prop, n);
      g_signal_handler_disconnect(h->element, id);
      g_value_unset(&was);
      g_value_unset(&now);
      CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 512 * (i + 1), 512, 1,
                        48000, 0, FALSE) == GST_FLOW_OK,
            "the stream stopped after a refused %s", prop);
    }
    g_object_get(h->element, "latency", &lat1, NULL);
    CHECK(lat1 == lat0, "latency %" G_GUINT64_FORMAT " ns, was %"
          G_GUINT64_FORMAT, lat1, lat0);
    /* back in READY: taken, for the next stream */
    CHECK(gst_element_set_state(h->element, GST_STATE_READY) ==
              GST_STATE_CHANGE_SUCCESS, "to READY");
    g_object_set(h->element, "block-size", 2048u, "pipeline-depth", 1u, NULL);
    guint bs, depth;
    g_object_get(h->element, "block-size", &bs, "pipeline-depth", &depth,
                 NULL);
    CHECK(bs == 2048 && depth == 1 && !bus_has(bus, GST_MESSAGE_WARNING, ""),
          "block-size %u, pipeline-depth %u set in READY: not taken", bs,
          depth);
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(h);
  }
}

/* g_warnings from the element ("cudafir" domain) while counted. */
static int fir_g_warnings;
static char fir_last_warning[1024];

static void count_fir_warning(const gchar *domain, GLogLevelFlags level,
                              const gchar *msg, gpointer data)
{
  (void)domain, (void)level, (void)data;
  fir_g_warnings++;
  snprintf(fir_last_warning, sizeof fir_last_warning, "%s", msg);
}

/* A setting refused (a NaN tap) or kept though it cannot be used (a
 * kernel-file that does not load, in NULL) is said once: on the bus
 * where the element has one, as an application in a pipeline hears of
 * it, and with GLib only where it has none (gst-launch sets properties
 * before there is a bus). The kept file was said with GLib alone, which
 * an application heard only on stderr, and which aborted one run with
 * G_DEBUG=fatal-warnings (QA: a Python application). */
static void test_said_once(void **state)
{
  (void)state;
  set_case("refusals said once");
  char *missing = g_strdup_printf("/nonexistent/said-once-%u.wav",
                                  (unsigned)ref_rng_range(&rng, 0, 100000));
  float nan_taps[3] = {0.5f, 0.25f, 0.125f};
  unsigned at = (unsigned)ref_rng_range(&rng, 0, 2); /* inclusive */
  nan_taps[at] = NAN;
  char nan_said[32];
  snprintf(nan_said, sizeof nan_said, "tap %u is NaN", at);
  guint lh = g_log_set_handler("cudafir", G_LOG_LEVEL_WARNING,
                               count_fir_warning, NULL);
  fir_g_warnings = 0;
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  g_object_set(h->element, "kernel-file", missing, NULL);
  CHECK(fir_g_warnings == 0, "a kept kernel-file said with GLib besides the "
        "bus: %s", fir_last_warning);
  CHECK(bus_warning_says(bus, missing),
        "no warning on the bus naming the kept kernel-file %s", missing);
  set_taps(h->element, nan_taps, 3);
  CHECK(fir_g_warnings == 0, "a refused kernel said with GLib besides the "
        "bus: %s", fir_last_warning);
  CHECK(bus_warning_says(bus, nan_said), "no warning naming %s", nan_said);
  /* no bus: with GLib */
  gst_element_set_bus(h->element, NULL);
  g_object_set(h->element, "kernel-file", missing, NULL);
  CHECK(fir_g_warnings == 1 && strstr(fir_last_warning, missing),
        "%d warnings with GLib for a kept kernel-file without a bus, the "
        "last '%s'", fir_g_warnings, fir_last_warning);
  set_taps(h->element, nan_taps, 3);
  CHECK(fir_g_warnings == 2 && strstr(fir_last_warning, nan_said),
        "%d warnings with GLib for a refused kernel without a bus, the last "
        "'%s'", fir_g_warnings, fir_last_warning);
  gst_harness_teardown(h);
  g_log_remove_handler("cudafir", lh);
  gst_object_unref(bus);
  g_free(missing);
}

/* A kernel refused while stopped (a gst-launch line's NaN tap) makes the
 * start fail with an element error naming the property and why, as a
 * kernel-file that does not load does; the audio passed unfiltered, exit
 * 0, the refusal only a GLib warning on stderr (QA). A value taken for
 * it (or the other kernel source) after lets the stream start. */
static void test_refused_before_start(void **state)
{
  (void)state;
  set_case("a value refused before the start");
  guint lh = g_log_set_handler("cudafir", G_LOG_LEVEL_WARNING,
                               count_fir_warning, NULL);
  unsigned at = (unsigned)ref_rng_range(&rng, 0, 2);
  int inf = (int)ref_rng_range(&rng, 0, 1);
  char taps[64] = "", want[64];
  for (unsigned i = 0; i < 3; i++)
    g_strlcat(taps, i == at ? (inf ? ",inf" : ",nan") : ",0.25", sizeof taps);
  snprintf(want, sizeof want, "kernel (tap %u is %s", at,
           inf ? "infinite" : "NaN");
  char desc[512];
  snprintf(desc, sizeof desc,
           "audiotestsrc num-buffers=3 ! cudafir kernel=<%s> ! fakesink",
           taps + 1);
  fir_g_warnings = 0;
  gchar *said = launch_outcome(desc);
  CHECK(said && strstr(said, want) && strstr(said, "refused"),
        "%s: the start's error '%s' does not name '%s'", desc,
        said ? said : "(none: EOS)", want);
  CHECK(fir_g_warnings == 1 && strstr(fir_last_warning, "no stream starts"),
        "%s: %d warnings, the last '%s'", desc, fir_g_warnings,
        fir_last_warning);
  g_free(said);
  const char *after[] = {"kernel=<0.5,0.5>", "kernel-file=%s"};
  const char *fpath = fixture("refused-then.txt");
  CHECK(g_file_set_contents(fpath, "0.5 0.5\n", -1, NULL), "write %s", fpath);
  for (unsigned i = 0; i < 2; i++) {
    char then[160];
    snprintf(then, sizeof then, after[i], fpath);
    snprintf(desc, sizeof desc,
             "audiotestsrc num-buffers=3 ! cudafir kernel=<%s> %s ! "
             "fakesink",
             taps + 1, then);
    said = launch_outcome(desc);
    CHECK(!said, "%s: %s", desc, said);
  }
  g_log_remove_handler("cudafir", lh);
}

/* The warnings cudafir posted while a gst-launch line ran to an error
 * or EOS (g_free; "" where none), and whether it ended in an error. */
static gchar *launch_warnings(const char *desc, gboolean *failed)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  CHECK(p && !err, "gst_parse_launch(%s): %s", desc, err ? err->message : "?");
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(p);
  GString *said = g_string_new(NULL);
  *failed = FALSE;
  for (;;) {
    GstMessage *m = gst_bus_timed_pop_filtered(
        bus, 20 * GST_SECOND,
        GST_MESSAGE_ERROR | GST_MESSAGE_EOS | GST_MESSAGE_WARNING);
    CHECK(m, "%s: neither EOS nor an error", desc);
    GstMessageType t = GST_MESSAGE_TYPE(m);
    if (t == GST_MESSAGE_WARNING && GST_IS_ELEMENT(m->src) &&
        g_str_has_prefix(GST_OBJECT_NAME(m->src), "cudafir")) {
      gst_message_parse_warning(m, &err, NULL);
      g_string_append_printf(said, "%s\n", err->message);
      g_clear_error(&err);
    }
    gst_message_unref(m);
    if (t != GST_MESSAGE_WARNING) {
      *failed = t == GST_MESSAGE_ERROR;
      break;
    }
  }
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return g_string_free(said, FALSE);
}

/* A gst-launch line whose caps give cudafir a channel count its kernel
 * set does not take links, and the stream fails with a warning naming
 * the kernel against the count (the --routing matrix hint of the CLI
 * where per-channel kernels would fit as a matrix): it failed to link,
 * "can't handle caps", and GST_DEBUG=cudafir:4 said no reason (QA). */
static void test_channels_said(void **state)
{
  (void)state;
  set_case("a channel count the kernel does not take, said");
  unsigned ntaps = (unsigned)ref_rng_range(&rng, 2, 6);
  char taps[64] = "";
  for (unsigned i = 0; i < ntaps; i++)
    g_strlcat(taps, i ? ",0.5" : "1", sizeof taps);
  gchar *desc = g_strdup_printf("audiotestsrc num-buffers=3 ! "
                                "audio/x-raw,channels=2 ! cudafir "
                                "kernel=<%s> routing=matrix ! fakesink",
                                taps);
  gboolean failed = FALSE;
  gchar *said = launch_warnings(desc, &failed);
  gchar *want = g_strdup_printf("kernel is one kernel (of %u taps), not a "
                                "multiple of the stream's 2 channels",
                                ntaps);
  CHECK(failed && strstr(said, want), "%s: %s, warnings '%s', not '%s'", desc,
        failed ? "failed" : "ran", said, want);
  g_free(want);
  g_free(said);
  g_free(desc);
  /* per-channel kernels a matrix would read: the hint */
  unsigned outs = (unsigned)ref_rng_range(&rng, 2, 3), len = 8;
  const char *path = fixture("said-per-channel.npy");
  float *h = xalloc(sizeof(float) * 2 * outs * len);
  for (unsigned i = 0; i < 2 * outs * len; i++)
    h[i] = (float)ref_rng_range(&rng, 1, 100) / 100.0f;
  char shape[32];
  snprintf(shape, sizeof shape, "(%u, %u)", 2 * outs, len);
  write_npy(path, shape, h, 2 * outs * len);
  free(h);
  desc = g_strdup_printf("audiotestsrc num-buffers=3 ! audio/x-raw,channels=2 "
                         "! cudafir kernel-file=%s ! fakesink",
                         path);
  said = launch_warnings(desc, &failed);
  want = g_strdup_printf("has %u per-channel kernels, the stream has 2 "
                         "channels; routing=matrix reads them as a %u x 2 "
                         "matrix",
                         2 * outs, outs);
  CHECK(failed && strstr(said, want), "%s: %s, warnings '%s', not '%s'", desc,
        failed ? "failed" : "ran", said, want);
  g_free(want);
  g_free(said);
  g_free(desc);
}

/* routing=matrix sets the output's channel count: where downstream takes
 * none the kernel gives (a capsfilter after cudafir), the stream fails
 * with a warning naming the kernel's count against downstream's. It
 * failed "not negotiated", the reason in no message (QA). Input fixed
 * upstream (a capsfilter before) or converted (audioconvert) alike. */
static void test_output_channels_said(void **state)
{
  (void)state;
  for (int cs = 0; cs < 2; cs++) {
    unsigned outs = (unsigned)ref_rng_range(&rng, 1, 4), len = 6;
    unsigned down =
        outs == 1 ? 2 : outs - 1 + (unsigned)(ref_rng_u64(&rng) % 2) * 2;
    if (down == outs)
      down = outs + 1;
    set_case("a %u x 2 matrix, downstream takes %u channels, upstream %s",
             outs, down, cs ? "audioconvert" : "fixed at 2");
    const char *path = fixture("said-matrix-out.npy");
    float *h = xalloc(sizeof(float) * 2 * outs * len);
    for (unsigned i = 0; i < 2 * outs * len; i++)
      h[i] = (float)ref_rng_range(&rng, 1, 100) / 100.0f;
    char shape[32];
    snprintf(shape, sizeof shape, "(%u, 2, %u)", outs, len);
    write_npy(path, shape, h, 2 * outs * len);
    free(h);
    gchar *desc = g_strdup_printf(
        "audiotestsrc num-buffers=3 ! %s ! cudafir kernel-file=%s ! "
        "audio/x-raw,channels=%u%s ! fakesink",
        cs ? "audioconvert ! audio/x-raw,channels=2" : "audio/x-raw,channels=2",
        path, down, down > 2 ? ",channel-mask=(bitmask)0x0" : "");
    gboolean failed = FALSE;
    gchar *said = launch_warnings(desc, &failed);
    gchar *want = g_strdup_printf("gives %u output channel%s from 2 in; "
                                  "downstream accepts %u",
                                  outs, outs == 1 ? "" : "s", down);
    CHECK(failed && strstr(said, want), "%s: %s, warnings '%s', not '%s'",
          desc, failed ? "failed" : "ran", said, want);
    g_free(want);
    g_free(said);
    g_free(desc);
  }
}

/* The same through a harness, which pushes its caps event with no caps
 * query first (an application's appsrc with caps set, a source that
 * decides alone): where downstream takes no output count the matrix
 * gives, the stream fails not-negotiated with the warning naming the
 * counts. Only a caps query said it; a caps event alone failed with no
 * word (QA). */
static void test_output_channels_caps_event(void **state)
{
  (void)state;
  unsigned outs = (unsigned)ref_rng_range(&rng, 1, 4), len = 6;
  unsigned down = outs == 1 ? 2 : outs - 1;
  set_case("a %u x 2 matrix, downstream takes %u channels, caps pushed "
           "without a query", outs, down);
  const char *path = fixture("said-matrix-event.npy");
  float *hm = xalloc(sizeof(float) * 2 * outs * len);
  for (unsigned i = 0; i < 2 * outs * len; i++)
    hm[i] = (float)ref_rng_range(&rng, 1, 100) / 100.0f;
  char shape[32];
  snprintf(shape, sizeof shape, "(%u, 2, %u)", outs, len);
  write_npy(path, shape, hm, 2 * outs * len);
  free(hm);
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  g_object_set(h->element, "kernel-file", path, NULL);
  char in[128], out[160];
  snprintf(in, sizeof in, "audio/x-raw,format=F32LE,rate=48000,channels=2,"
           "layout=interleaved");
  snprintf(out, sizeof out, "audio/x-raw,format=F32LE,rate=48000,"
           "channels=%u,layout=interleaved%s", down,
           down > 2 ? ",channel-mask=(bitmask)0x0" : "");
  gst_harness_set_sink_caps_str(h, out);
  /* the caps event straight away: no query has asked the element yet */
  gst_harness_set_src_caps_str(h, in);
  float x[2 * 64];
  for (unsigned i = 0; i < 2 * 64; i++)
    x[i] = 0.25f;
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 2, 48000, 0, TRUE) ==
            GST_FLOW_NOT_NEGOTIATED,
        "caps downstream does not take streamed");
  gchar *want = g_strdup_printf("gives %u output channel%s from 2 in; "
                                "downstream accepts %u",
                                outs, outs == 1 ? "" : "s", down);
  CHECK(bus_warning_says(bus, want), "no warning saying '%s'", want);
  g_free(want);
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

static void test_bad_values(void **state)
{
  (void)state;
  set_case("bad property values");
  /* before streaming: kept, then a clear element error at negotiation */
  GstHarness *h = new_fir();
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  g_object_set(h->element, "kernel-file", "/nonexistent/ir.wav", NULL);
  gst_harness_set_caps_str(h, "audio/x-raw,format=F32LE,rate=48000,"
                              "channels=1,layout=interleaved",
                           "audio/x-raw,format=F32LE,rate=48000,channels=1,"
                           "layout=interleaved");
  float x[64] = {0.5f};
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 1, 48000, 0, TRUE) !=
            GST_FLOW_OK, "a missing kernel file streamed");
  /* the debug string's source location is the element's own code, where
   * the error arose (it named common.c with gstcudafir.c's line) */
  CHECK(bus_error_says(bus, "/nonexistent/ir.wav", "gstcudafir.c("),
        "no element error naming the missing file in its message, raised "
        "in gstcudafir.c");
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 1, 48000, 0, TRUE) !=
            GST_FLOW_OK,
        "a missing kernel file streamed at the second buffer");
  CHECK(!bus_has(bus, GST_MESSAGE_ERROR, ""),
        "the missing file's error posted again");
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);

  /* NaN and Inf taps are refused, a warning naming the tap, and the
   * kernel stays as it was */
  h = new_fir();
  gst_element_set_bus(h->element, bus);
  float nan_taps[3] = {0.5f, NAN, 0.25f};
  float one = 0.75f;
  set_taps(h->element, &one, 1);
  set_taps(h->element, nan_taps, 3);
  float first = 0;
  CHECK(get_ntaps(h->element, &first) == 1 && first == 0.75f,
        "a NaN kernel was taken");
  CHECK(bus_warning_says(bus, "tap 1 is NaN"), "no warning naming the NaN tap");
  nan_taps[2] = INFINITY;
  nan_taps[1] = 0;
  set_taps(h->element, nan_taps, 3);
  CHECK(get_ntaps(h->element, &first) == 1 && first == 0.75f,
        "an infinite kernel was taken");
  CHECK(bus_warning_says(bus, "tap 2 is infinite"),
        "no warning naming the infinite tap");
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);

  /* while streaming: refused with a warning, the old kernel keeps going */
  h = new_fir();
  gst_element_set_bus(h->element, bus);
  float good[2] = {0.5f, 0.25f};
  set_taps(h->element, good, 2);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 1, 1);
  float *xr = random_input(GST_AUDIO_FORMAT_F32LE, 4000);
  collected c;
  collect_init(&c, 1, 48000, 0, 4001);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, xr, 0, 1000, 1, 48000, 0,
                    TRUE) == GST_FLOW_OK, "push");
  set_taps(h->element, nan_taps, 3);
  CHECK(get_ntaps(h->element, NULL) == 2, "the refused kernel replaced the "
        "property");
  g_object_set(h->element, "kernel-file", "/nonexistent/ir.wav", NULL);
  CHECK(bus_warning_says(bus, "/nonexistent/ir.wav"),
        "missing file while playing: no warning naming it");
  const char *mpath = fixture("bad-matrix.npy");
  float m[2 * 3 * 4] = {0};
  m[0] = 1;
  write_npy(mpath, "(2, 3, 4)", m, 24);
  g_object_set(h->element, "kernel-file", mpath, NULL);
  CHECK(bus_warning_says(bus, "maps 3 to 2 channels"),
        "a 2x3 matrix on a mono stream while playing: no warning naming "
        "its shape");
  gchar *kf = NULL;
  g_object_get(h->element, "kernel-file", &kf, NULL);
  CHECK(kf == NULL, "refused kernel-file reads back as %s", kf);
  g_free(kf);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, xr, 1000, 3000, 1, 48000, 0,
                    FALSE) == GST_FLOW_OK, "the stream stopped after a "
        "refused change");
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  collect(h, &c, GST_AUDIO_FORMAT_F32LE);
  double *w = ref_channel(xr, 4000, 1, 0, good, 2, 4001);
  CHECK(c.frames == 4001, "%zu frames", c.frames);
  double e = ref_rel_l2(c.y, 1, w, 1, 4001);
  CHECK(e <= 1e-6, "the old kernel did not keep going: error %.3g", e);
  free(w);
  free(c.y);
  free(xr);
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);

  /* per-channel kernels for another channel count while playing: said
   * as such (they were worded as a matrix, "maps 2 to 2 channels") */
  h = new_fir();
  gst_element_set_bus(h->element, bus);
  const char *p1 = fixture("per-channel-1.npy"),
             *p2 = fixture("per-channel-2.npy");
  float pc[2 * 3] = {0.5f, 0.25f, 0.125f, 1, 0, 0};
  write_npy(p1, "(1, 3)", pc, 3);
  write_npy(p2, "(2, 3)", pc, 6);
  gst_util_set_object_arg(G_OBJECT(h->element), "routing", "per-channel");
  g_object_set(h->element, "kernel-file", p1, NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 1, 1);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 1, 48000, 0,
                    TRUE) == GST_FLOW_OK, "push (per-channel)");
  g_object_set(h->element, "kernel-file", p2, NULL);
  CHECK(bus_warning_says(bus, "has 2 per-channel kernels; the "
                              "running stream has 1 channel"),
        "2 per-channel kernels on a mono stream while playing: no warning "
        "saying so");
  g_object_get(h->element, "kernel-file", &kf, NULL);
  CHECK(kf && !strcmp(kf, p1), "refused per-channel file reads back as %s",
        kf);
  g_free(kf);
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);

  /* as many per-channel kernels as the stream has input channels, but
   * the stream a 2 -> 3 matrix: the output count is what does not fit
   * (it was "has 2 per-channel kernels; the running stream has 2
   * channels") */
  h = new_fir();
  gst_element_set_bus(h->element, bus);
  const char *m32 = fixture("matrix-3x2.npy");
  float mm[3 * 2 * 3] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0.5f, 0, 0, 0.5f};
  write_npy(m32, "(3, 2, 3)", mm, 18);
  gst_util_set_object_arg(G_OBJECT(h->element), "routing", "matrix");
  g_object_set(h->element, "kernel-file", m32, NULL);
  set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 2, 3);
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 32, 2, 48000, 0,
                    TRUE) == GST_FLOW_OK, "push (3x2 matrix)");
  gst_util_set_object_arg(G_OBJECT(h->element), "routing", "auto");
  g_object_set(h->element, "kernel-file", p2, NULL);
  CHECK(bus_warning_says(bus, "maps 2 to 2 channels; the "
                              "running stream has 2 in, 3 out"),
        "2 per-channel kernels on a 2 -> 3 matrix stream while playing: no "
        "warning naming the output count");
  g_object_get(h->element, "kernel-file", &kf, NULL);
  CHECK(kf && !strcmp(kf, m32), "refused per-channel file reads back as %s",
        kf);
  g_free(kf);
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);

  /* a matrix that does not fit the stream: a negotiation error */
  h = new_fir();
  gst_element_set_bus(h->element, bus);
  g_object_set(h->element, "kernel-file", mpath, NULL);
  gst_harness_set_caps_str(h, "audio/x-raw,format=F32LE,rate=48000,"
                              "channels=1,layout=interleaved",
                           "audio/x-raw,format=F32LE,rate=48000,channels=1,"
                           "layout=interleaved");
  CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 1, 48000, 0, TRUE) !=
            GST_FLOW_OK, "a 2x3 matrix streamed on mono");
  gst_element_set_bus(h->element, NULL);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

/* A bad kernel set once the element runs (PAUSED or PLAYING) but before
 * its first buffer (no caps yet, so no engine) where a good kernel was
 * set before: refused with a warning, the property and the kernel
 * staying as they were, as while streaming. It was kept, and the stream
 * then failed at its first buffer (an operator's typo in a kernel-file
 * just after PLAYING took a broadcast chain down). In NULL or READY the
 * bad set is still kept and the start fails with an error naming it
 * (test_bad_values, test_kernel_file_error_codes). Random multichannel
 * layouts (5.1, 7.1, 16 unpositioned), formats and kernels; the stream
 * is checked against the float64 reference of the good kernel. */
static void test_bad_kernel_before_first_buffer(void **state)
{
  (void)state;
  static const unsigned chans[] = {6, 8, 16};
  static const GstAudioFormat fmts[] = {
      GST_AUDIO_FORMAT_F32LE, GST_AUDIO_FORMAT_S16LE, GST_AUDIO_FORMAT_S32LE};
  const char *good = fixture("early-good.npy"),
             *garbage = fixture("early-garbage.txt"),
             *missing = fixture("early-missing.wav");
  unlink(missing);
  write_bytes(garbage, "0.5 x\n", 6);
  for (int cs = 0; cs < 4; cs++) {
    /* 0: taps, then a missing file, PLAYING; 1: a per-channel file, then
     * a garbage one, PAUSED; 2: that file, then routing=shared, PLAYING;
     * 3: taps, then a missing file, READY: kept, the start fails */
    unsigned ch = chans[ref_rng_range(&rng, 0, 2)];
    GstAudioFormat f = fmts[ref_rng_range(&rng, 0, 2)];
    size_t len = ref_rng_range(&rng, 1, 1500);
    size_t n = ref_rng_range(&rng, 1, 3000);
    unsigned rate = ref_rng_range(&rng, 0, 1) ? 48000 : 96000;
    GstState st = cs == 1 ? GST_STATE_PAUSED
                  : cs == 3 ? GST_STATE_READY
                            : GST_STATE_PLAYING;
    set_case("case %d: %u ch %s at %u Hz, %zu taps, %zu frames, %s", cs, ch,
             fmt_name(f), rate, len, n, gst_element_state_get_name(st));
    int file = cs == 1 || cs == 2;
    float *hk = random_kernel(len * (file ? ch : 1));
    for (size_t i = 0; i < len * (file ? ch : 1); i++)
      hk[i] *= 0.5f; /* integer output unclipped */
    char shape[32];
    snprintf(shape, sizeof shape, "(%u, %zu)", ch, len);
    if (file)
      write_npy(good, shape, hk, ch * len);
    GstHarness *h = new_fir();
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    g_object_set(h->element, "drain", FALSE, NULL);
    if (st != GST_STATE_PLAYING)
      CHECK(gst_element_set_state(h->element, st) == GST_STATE_CHANGE_SUCCESS,
            "to %s", gst_element_state_get_name(st));
    if (file)
      g_object_set(h->element, "kernel-file", good, NULL);
    else
      set_taps(h->element, hk, len);
    const char *bad = cs == 1 ? garbage : missing;
    if (cs == 2)
      gst_util_set_object_arg(G_OBJECT(h->element), "routing", "shared");
    else
      g_object_set(h->element, "kernel-file", bad, NULL);
    gchar *kf = NULL;
    gint routing = -2;
    g_object_get(h->element, "kernel-file", &kf, "routing", &routing, NULL);
    if (cs == 3) { /* kept: said at the start */
      CHECK(kf && !strcmp(kf, bad), "in READY the bad kernel-file reads "
            "back as %s", kf ? kf : "(null)");
      /* on the bus as kept (test_said_once), not as refused */
      GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING);
      GError *err = NULL;
      if (m)
        gst_message_parse_warning(m, &err, NULL);
      CHECK(err && strstr(err->message, bad) &&
                strstr(err->message, "no stream starts with it") &&
                !strstr(err->message, "refused"),
            "in READY the bad kernel-file was refused, or not said as kept: "
            "%s", err ? err->message : "no warning");
      g_clear_error(&err);
      if (m)
        gst_message_unref(m);
      CHECK(!bus_has(bus, GST_MESSAGE_WARNING, bad),
            "in READY the bad kernel-file was said twice");
      g_free(kf);
      gst_harness_play(h);
      set_caps(h, f, rate, ch, ch);
      float *x = random_input(f, 64 * ch);
      CHECK(push_frames(h, f, x, 0, 64, ch, rate, 0, TRUE) != GST_FLOW_OK,
            "a stream started on a missing kernel-file set in READY");
      CHECK(bus_has(bus, GST_MESSAGE_ERROR, bad),
            "no error naming %s at the start", bad);
      free(x);
    } else {
      CHECK(bus_warning_says(bus, cs == 2 ? "routing=shared" : bad),
            "a bad %s in %s before the first buffer: no warning naming it",
            cs == 2 ? "routing" : "kernel-file",
            gst_element_state_get_name(st));
      if (file)
        CHECK(kf && !strcmp(kf, good) && routing == -1,
              "kernel-file %s, routing %d read back, expected %s, auto",
              kf ? kf : "(null)", routing, good);
      else
        CHECK(!kf && get_ntaps(h->element, NULL) == len,
              "kernel-file %s, %zu taps read back, expected none, %zu",
              kf ? kf : "(null)", get_ntaps(h->element, NULL), len);
      g_free(kf);
      set_caps(h, f, rate, ch, ch);
      float *x = random_input(f, n * ch);
      collected c;
      collect_init(&c, ch, rate, 0, n + 1);
      for (size_t at = 0; at < n;) {
        size_t m = pick(ref_rng_range(&rng, 1, 1500), n - at);
        CHECK(push_frames(h, f, x, at, m, ch, rate, 0, at == 0) ==
                  GST_FLOW_OK,
              "push at frame %zu: the stream failed on a refused kernel", at);
        at += m;
      }
      assert_true(gst_harness_push_event(h, gst_event_new_eos()));
      collect(h, &c, f);
      CHECK(c.frames == n, "%zu frames out, expected %zu", c.frames, n);
      CHECK(!bus_has(bus, GST_MESSAGE_ERROR, ""), "an error on the bus");
      for (unsigned j = 0; j < ch; j++) {
        double *w = ref_channel(x, n, ch, j, hk + (file ? j * len : 0), len,
                                n);
        double e = out_rel_l2(f, c.y + j, ch, w, n, len);
        CHECK(e <= tolerance(f, len), "channel %u: error %.3g against the "
              "good kernel", j, e);
        free(w);
      }
      free(c.y);
      free(x);
    }
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(h);
    free(hk);
  }
  unlink(good);
  unlink(garbage);
}

/* ---- a real pipeline from file to file ----------------------------------- */

static void test_pipeline_files(void **state)
{
  (void)state;
  unsigned ch = 2, rate = 48000;
  size_t n = ref_rng_range(&rng, 1000, 60000), len = random_len();
  set_case("filesrc ! rawaudioparse ! cudafir ! filesink, %zu frames, %zu "
           "taps", n, len);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
  float *hk = random_kernel(len);
  const char *in = fixture("pipe-in.raw");
  char inp[512], outp[512], kp[512];
  snprintf(inp, sizeof inp, "%s", in);
  snprintf(outp, sizeof outp, "%s", fixture("pipe-out.raw"));
  snprintf(kp, sizeof kp, "%s", fixture("pipe-k.txt"));
  write_bytes(inp, x, n * ch * sizeof(float));
  FILE *f = fopen(kp, "w");
  assert_non_null(f);
  for (size_t i = 0; i < len; i++)
    fprintf(f, "%.9g\n", hk[i]);
  fclose(f);
  char desc[2048];
  snprintf(desc, sizeof desc,
           "filesrc location=%s blocksize=%u ! rawaudioparse format=pcm "
           "pcm-format=f32le sample-rate=%u num-channels=%u ! cudafir "
           "kernel-file=%s backend=%s ! filesink location=%s",
           inp, (unsigned)ref_rng_range(&rng, 1, 9000) * 8, rate, ch, kp,
           backend, outp);
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  CHECK(p && !err, "gst_parse_launch: %s", err ? err->message : "?");
  CHECK(gst_element_set_state(p, GST_STATE_PLAYING) !=
            GST_STATE_CHANGE_FAILURE, "PLAYING failed");
  GstBus *bus = gst_element_get_bus(p);
  GstMessage *m = gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND,
                                             GST_MESSAGE_EOS |
                                                 GST_MESSAGE_ERROR);
  CHECK(m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS, "pipeline ended with %s",
        m ? GST_MESSAGE_TYPE_NAME(m) : "a timeout");
  gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  gchar *data = NULL;
  gsize got = 0;
  assert_true(g_file_get_contents(outp, &data, &got, NULL));
  size_t total = n + len - 1;
  CHECK(got == total * ch * sizeof(float), "output file holds %zu bytes, "
        "expected %zu frames", (size_t)got, total);
  for (unsigned k = 0; k < ch; k++) {
    double *w = ref_channel(x, n, ch, k, hk, len, total);
    double e = ref_rel_l2((const float *)data + k, ch, w, 1, total);
    CHECK(e <= 2e-5, "channel %u: error %.3g", k, e);
    free(w);
  }
  g_free(data);
  free(x);
  free(hk);
}

/* ---- gapless playback: playbin3, playbin, concat over WAV files ---------- */

/* What cudafir received (sink) and sent (src) in a gapless run: a log of
 * the serialized events and DISCONT buffers at its sink pad, and at its src
 * pad every output frame (F32, interleaved) with the running time of each
 * buffer, checked to go on without a gap or overlap. */
typedef struct {
  GString *log;      /* sink side: events in order, DISCONT buffers */
  GArray *out;       /* float: the output frames */
  unsigned ch, rate;
  GstSegment seg;    /* src side */
  guint64 rt_next;   /* running time where the last output ended */
  double worst_jump; /* frames: the largest |rt - rt_next| seen */
  guint64 buffers;
  gboolean not_f32;  /* caps other than F32LE at the src pad */
  guint disconts;    /* DISCONT buffers at the src pad */
} gapless_watch;

static GstPadProbeReturn on_gapless_in(GstPad *pad, GstPadProbeInfo *info,
                                       gpointer data)
{
  (void)pad;
  gapless_watch *w = data;
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER(info);
    if (GST_BUFFER_IS_DISCONT(b))
      g_string_append_printf(w->log, " DISCONT@%" GST_TIME_FORMAT,
                             GST_TIME_ARGS(GST_BUFFER_PTS(b)));
    return GST_PAD_PROBE_OK;
  }
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT(info);
  if (!GST_EVENT_IS_SERIALIZED(ev))
    return GST_PAD_PROBE_OK;
  g_string_append_printf(w->log, " %s", GST_EVENT_TYPE_NAME(ev));
  if (GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT) {
    const GstSegment *s;
    gst_event_parse_segment(ev, &s);
    g_string_append_printf(w->log, "(start %" GST_TIME_FORMAT " base %"
                           GST_TIME_FORMAT ")", GST_TIME_ARGS(s->start),
                           GST_TIME_ARGS(s->base));
  } else if (GST_EVENT_TYPE(ev) == GST_EVENT_STREAM_START) {
    guint g = 0;
    if (gst_event_parse_group_id(ev, &g))
      g_string_append_printf(w->log, "(group %u)", g);
  }
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn on_gapless_out(GstPad *pad, GstPadProbeInfo *info,
                                        gpointer data)
{
  (void)pad;
  gapless_watch *w = data;
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT(info);
    if (GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT)
      gst_event_copy_segment(ev, &w->seg);
    if (GST_EVENT_TYPE(ev) == GST_EVENT_FLUSH_STOP) { /* a flushing seek */
      g_array_set_size(w->out, 0);
      w->buffers = w->disconts = 0;
      w->worst_jump = 0;
    }
    if (GST_EVENT_TYPE(ev) == GST_EVENT_CAPS) {
      GstCaps *c;
      GstAudioInfo ai;
      gst_event_parse_caps(ev, &c);
      if (!gst_audio_info_from_caps(&ai, c) ||
          GST_AUDIO_INFO_FORMAT(&ai) != GST_AUDIO_FORMAT_F32LE)
        w->not_f32 = TRUE;
    }
    return GST_PAD_PROBE_OK;
  }
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER(info);
  GstMapInfo m;
  if (!gst_buffer_map(b, &m, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  size_t frames = m.size / (sizeof(float) * w->ch);
  g_array_append_vals(w->out, m.data, (guint)(frames * w->ch));
  gst_buffer_unmap(b, &m);
  guint64 rt = gst_segment_to_running_time(&w->seg, GST_FORMAT_TIME,
                                           GST_BUFFER_PTS(b));
  if (GST_CLOCK_TIME_IS_VALID(rt) && w->buffers) {
    double d = fabs(((double)rt - (double)w->rt_next) * w->rate / 1e9);
    if (d > w->worst_jump)
      w->worst_jump = d;
  }
  if (GST_CLOCK_TIME_IS_VALID(rt))
    w->rt_next = rt + gst_util_uint64_scale_int_round(frames, GST_SECOND,
                                                      (gint)w->rate);
  w->buffers++;
  w->disconts += GST_BUFFER_IS_DISCONT(b);
  return GST_PAD_PROBE_OK;
}

typedef struct {
  char uri[8][600];
  int n, next;
} gapless_list;

static void on_about_to_finish(GstElement *pb, gpointer data)
{
  gapless_list *l = data;
  if (l->next < l->n)
    g_object_set(pb, "uri", l->uri[l->next++], NULL);
}

/* Two or three WAV items cut from one random recording, played gaplessly
 * through a cudafir of a random kernel with drain=true: `how` 0 playbin3
 * (about-to-finish setting the next uri), 1 playbin, 2 concat of filesrc
 * ! wavparse per item. The output is the concatenated recording filtered
 * as one signal (the history carried over each change of item, no
 * ring-out between them), its full convolution, running time going on. */
static void run_gapless(int how)
{
  static const char *const names[] = {"playbin3", "playbin", "concat"};
  unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
  int items = (int)ref_rng_range(&rng, 2, 3);
  size_t len = ref_rng_range(&rng, 1, 3000);
  size_t n[3], total = 0;
  for (int i = 0; i < items; i++)
    total += n[i] = ref_rng_range(&rng, 2000, 20000);
  set_case("gapless %s: %d items, %u ch, %zu taps, %zu frames", names[how],
           items, ch, len, total);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, total * ch);
  float *hk = random_kernel(len);
  gapless_list l = {.n = items, .next = 1};
  char path[3][512];
  size_t at = 0;
  for (int i = 0; i < items; i++) {
    char name[32];
    snprintf(name, sizeof name, "gapless-%d.wav", i);
    snprintf(path[i], sizeof path[i], "%s", fixture(name));
    write_wav(path[i], x + at * ch, n[i], ch, rate);
    at += n[i];
    gchar *u = gst_filename_to_uri(path[i], NULL);
    CHECK(u, "no uri for %s", path[i]);
    g_strlcpy(l.uri[i], u ? u : "", sizeof l.uri[i]);
    g_free(u);
  }
  GstElement *p, *fir;
  GError *err = NULL;
  if (how < 2) {
    p = gst_element_factory_make(names[how], NULL);
    CHECK(p, "no %s element", names[how]);
    fir = gst_element_factory_make("cudafir", NULL);
    GstElement *sink = gst_element_factory_make("fakesink", NULL);
    CHECK(fir && sink, "no cudafir or fakesink");
    g_object_set(sink, "sync", FALSE, NULL);
    g_object_set(p, "uri", l.uri[0], "audio-filter", fir, "audio-sink", sink,
                 NULL);
    g_signal_connect(p, "about-to-finish", G_CALLBACK(on_about_to_finish), &l);
    gst_object_ref(fir);
  } else {
    GString *d = g_string_new("concat name=c ! cudafir name=f ! fakesink "
                              "sync=false");
    for (int i = 0; i < items; i++)
      g_string_append_printf(d, " filesrc location=%s ! wavparse ! c.",
                             path[i]);
    p = gst_parse_launch(d->str, &err);
    g_string_free(d, TRUE);
    CHECK(p && !err, "gst_parse_launch: %s", err ? err->message : "?");
    fir = gst_bin_get_by_name(GST_BIN(p), "f");
  }
  set_taps(fir, hk, len);
  g_object_set(fir, "drain", TRUE, "block-size",
               1u << ref_rng_range(&rng, 6, 11), NULL);
  gst_util_set_object_arg(G_OBJECT(fir), "backend", backend);
  gapless_watch w = {.log = g_string_new(""),
                     .out = g_array_new(FALSE, FALSE, sizeof(float)),
                     .ch = ch, .rate = rate};
  gst_segment_init(&w.seg, GST_FORMAT_TIME);
  GstPad *sp = gst_element_get_static_pad(fir, "sink");
  GstPad *op = gst_element_get_static_pad(fir, "src");
  gst_pad_add_probe(sp, GST_PAD_PROBE_TYPE_BUFFER |
                    GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_gapless_in, &w,
                    NULL);
  gst_pad_add_probe(op, GST_PAD_PROBE_TYPE_BUFFER |
                    GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_gapless_out, &w,
                    NULL);
  gst_object_unref(sp);
  gst_object_unref(op);
  CHECK(gst_element_set_state(p, GST_STATE_PLAYING) !=
            GST_STATE_CHANGE_FAILURE, "PLAYING failed");
  GstBus *bus = gst_element_get_bus(p);
  GstMessage *m = gst_bus_timed_pop_filtered(bus, 20 * GST_SECOND,
                                             GST_MESSAGE_EOS |
                                                 GST_MESSAGE_ERROR);
  gchar *dbg = NULL;
  if (m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gst_message_parse_error(m, &e, &dbg);
    g_free(dbg);
    dbg = g_strdup(e->message);
    g_error_free(e);
  }
  print_message("  cudafir received:%s\n", w.log->str);
  if (!m && how == 0) {
    /* GStreamer 1.22's playbin3 stalls now and then at a change of item,
     * upstream of its audio-filter (CI, 1 run in 3 under load: cudafir
     * had its first buffer and no more; at the end decodebin3's
     * multiqueue threads were blocked, one on a pad lock, one pushing
     * into a full queue, and playsink's aqueue waited for data): not the
     * element's to mend. Stopped here (left PLAYING, it held gst_deinit
     * at the program's end until the suite's timeout), and skipped */
    gst_object_unref(bus);
    gst_element_set_state(p, GST_STATE_NULL);
    print_message("skipped: playbin3 did not end within 20 s: it stalled "
                  "upstream of cudafir (GStreamer 1.22's decodebin3 at a "
                  "change of item)\n");
    g_free(dbg);
    g_string_free(w.log, TRUE);
    g_array_free(w.out, TRUE);
    gst_object_unref(fir);
    gst_object_unref(p);
    for (int i = 0; i < items; i++)
      unlink(path[i]);
    free(x);
    free(hk);
    skip();
  }
  if (!m || GST_MESSAGE_TYPE(m) != GST_MESSAGE_EOS)
    gst_element_set_state(p, GST_STATE_NULL); /* not left running */
  CHECK(m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS, "ended with %s: %s",
        m ? GST_MESSAGE_TYPE_NAME(m) : "a timeout", dbg ? dbg : "");
  gst_message_unref(m);
  gst_object_unref(bus);
  CHECK(gst_element_set_state(p, GST_STATE_NULL) == GST_STATE_CHANGE_SUCCESS,
        "NULL failed");
  size_t want = total + len - 1, got = w.out->len / ch;
  CHECK(!w.not_f32, "cudafir's output was not F32LE");
  CHECK(how == 2 || l.next == items, "about-to-finish gave %d of %d items", l.next, items);
  CHECK(got == want, "%zu frames out, expected %zu (%zu in + %zu - 1 taps)",
        got, want, total, len);
  CHECK(w.worst_jump < 1.0, "output running time jumps by %.1f frames",
        w.worst_jump);
  /* every item's first buffer comes DISCONT; the output goes on as one
   * signal, DISCONT at its start alone (each item's first said it) */
  CHECK(w.disconts == 1, "%u DISCONT buffers out, expected 1 (the "
        "output goes on over each change of item)", w.disconts);
  const float *y = (const float *)(void *)w.out->data;
  for (unsigned k = 0; k < ch; k++) {
    double *r = ref_channel(x, total, ch, k, hk, len, want);
    double e = ref_rel_l2(y + k, ch, r, 1, want);
    size_t i = 0; /* where it first differs, for the message */
    while (i < want && fabs(y[i * ch + k] - r[i]) <= 1e-3)
      i++;
    CHECK(e <= 2e-5, "channel %u: error %.3g against the whole recording "
          "filtered as one signal, first off at frame %zu (items of %zu, "
          "%zu, %zu frames)", k, e, i, n[0], n[1], items > 2 ? n[2] : 0);
    free(r);
  }
  g_free(dbg);
  g_string_free(w.log, TRUE);
  g_array_free(w.out, TRUE);
  gst_object_unref(fir);
  gst_object_unref(p);
  for (int i = 0; i < items; i++)
    unlink(path[i]);
  free(x);
  free(hk);
}

static void test_gapless_playbin3(void **state)
{
  (void)state;
  run_gapless(0);
}

static void test_gapless_playbin(void **state)
{
  (void)state;
  run_gapless(1);
}

static void test_gapless_concat(void **state)
{
  (void)state;
  run_gapless(2);
}

/* A looping player: a WAV played, then at each SEGMENT_DONE a segment
 * seek without FLUSH to its start (gst_element_seek with
 * GST_SEEK_FLAG_SEGMENT, as an application loops a sample), the last
 * play a plain seek without FLUSH that ends in EOS. wavparse sends
 * SEGMENT_DONE, then a segment whose running time goes on where the
 * data ended, its first buffer DISCONT. The loop is seamless: the output
 * is the looped signal filtered as one (each loop's ring-out going on
 * into the next, the history carried), DISCONT at its start alone,
 * running time without a gap. It was filtered from silence at every
 * loop, the ring-out cut at the segment's end (QA). */
static void run_loop(gboolean playbin)
{
  unsigned rate = 48000, ch = (unsigned)ref_rng_range(&rng, 1, 2);
  size_t len = ref_rng_range(&rng, 2, 3000), n = ref_rng_range(&rng, 2000,
                                                                12000);
  int loops = (int)ref_rng_range(&rng, 1, 3); /* seeks back to the start */
  unsigned block = 1u << ref_rng_range(&rng, 6, 11);
  set_case("loop seek through %s: %d loops of %zu frames, %u ch, %zu taps, "
           "block %u", playbin ? "playbin" : "filesrc ! wavparse", loops, n,
           ch, len, block);
  float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
  float *hk = random_kernel(len);
  const char *path = fixture("loop.wav");
  write_wav(path, x, n, ch, rate);
  GstElement *p, *fir;
  if (playbin) { /* as run_gapless: the float WAV decodes to F32LE */
    p = gst_element_factory_make("playbin", NULL);
    fir = gst_element_factory_make("cudafir", NULL);
    GstElement *sink = gst_element_factory_make("fakesink", NULL);
    CHECK(p && fir && sink, "no playbin, cudafir or fakesink");
    g_object_set(sink, "sync", FALSE, NULL);
    gchar *u = gst_filename_to_uri(path, NULL);
    CHECK(u, "no uri for %s", path);
    g_object_set(p, "uri", u, "audio-filter", fir, "audio-sink", sink, NULL);
    g_free(u);
    gst_object_ref(fir);
  } else {
    gchar *d = g_strdup_printf("filesrc location=%s ! wavparse ! "
                               "audioconvert ! audio/x-raw,format=F32LE ! "
                               "cudafir name=f ! fakesink sync=false",
                               path);
    GError *err = NULL;
    p = gst_parse_launch(d, &err);
    g_free(d);
    CHECK(p && !err, "gst_parse_launch: %s", err ? err->message : "?");
    fir = gst_bin_get_by_name(GST_BIN(p), "f");
  }
  set_taps(fir, hk, len);
  g_object_set(fir, "drain", TRUE, "block-size", block, NULL);
  gst_util_set_object_arg(G_OBJECT(fir), "backend", backend);
  gapless_watch w = {.log = g_string_new(""),
                     .out = g_array_new(FALSE, FALSE, sizeof(float)),
                     .ch = ch, .rate = rate};
  gst_segment_init(&w.seg, GST_FORMAT_TIME);
  GstPad *sp = gst_element_get_static_pad(fir, "sink");
  GstPad *op = gst_element_get_static_pad(fir, "src");
  gst_pad_add_probe(sp, GST_PAD_PROBE_TYPE_BUFFER |
                    GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_gapless_in, &w,
                    NULL);
  gst_pad_add_probe(op, GST_PAD_PROBE_TYPE_BUFFER |
                    GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM |
                    GST_PAD_PROBE_TYPE_EVENT_FLUSH, on_gapless_out, &w,
                    NULL);
  gst_object_unref(sp);
  gst_object_unref(op);
  CHECK(gst_element_set_state(p, GST_STATE_PAUSED) !=
            GST_STATE_CHANGE_FAILURE, "PAUSED failed");
  CHECK(gst_element_get_state(p, NULL, NULL, 10 * GST_SECOND) ==
            GST_STATE_CHANGE_SUCCESS, "no preroll");
  CHECK(gst_element_seek(p, 1.0, GST_FORMAT_TIME,
                         GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_SEGMENT,
                         GST_SEEK_TYPE_SET, 0, GST_SEEK_TYPE_NONE, -1),
        "the first segment seek failed");
  CHECK(gst_element_set_state(p, GST_STATE_PLAYING) !=
            GST_STATE_CHANGE_FAILURE, "PLAYING failed");
  GstBus *bus = gst_element_get_bus(p);
  int played = 0;
  GstMessage *m;
  for (;;) {
    m = gst_bus_timed_pop_filtered(bus, 20 * GST_SECOND,
                                   GST_MESSAGE_EOS | GST_MESSAGE_ERROR |
                                       GST_MESSAGE_SEGMENT_DONE);
    if (!m || GST_MESSAGE_TYPE(m) != GST_MESSAGE_SEGMENT_DONE)
      break;
    gst_message_unref(m);
    played++;
    /* again from the start: looping on, or once more to the end */
    GstSeekFlags f = played < loops ? GST_SEEK_FLAG_SEGMENT : 0;
    CHECK(gst_element_seek(p, 1.0, GST_FORMAT_TIME, f, GST_SEEK_TYPE_SET, 0,
                           GST_SEEK_TYPE_NONE, -1),
          "the loop seek %d failed", played);
  }
  print_message("  cudafir received:%s\n", w.log->str);
  gst_element_set_state(p, GST_STATE_NULL);
  CHECK(m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS, "ended with %s",
        m ? GST_MESSAGE_TYPE_NAME(m) : "a timeout");
  gst_message_unref(m);
  gst_object_unref(bus);
  CHECK(played == loops, "%d SEGMENT_DONE, expected %d", played, loops);
  size_t total = (size_t)(loops + 1) * n, want = total + len - 1;
  size_t got = w.out->len / ch;
  CHECK(got == want, "%zu frames out, expected %zu (%d plays of %zu + %zu - "
        "1 taps)", got, want, loops + 1, n, len);
  CHECK(w.worst_jump < 1.0, "output running time jumps by %.1f frames",
        w.worst_jump);
  float *xl = xalloc(total * ch * sizeof *xl);
  for (int i = 0; i <= loops; i++)
    memcpy(xl + (size_t)i * n * ch, x, n * ch * sizeof *xl);
  const float *y = (const float *)(void *)w.out->data;
  for (unsigned k = 0; k < ch; k++) {
    double *r = ref_channel(xl, total, ch, k, hk, len, want);
    double e = ref_rel_l2(y + k, ch, r, 1, want);
    size_t i = 0; /* where it first differs, for the message */
    while (i < want && fabs(y[i * ch + k] - r[i]) <= 1e-3)
      i++;
    CHECK(e <= 2e-5, "channel %u: error %.3g against the looped signal "
          "filtered as one, first off at frame %zu (loops of %zu)", k, e, i,
          n);
    free(r);
  }
  free(xl);
  CHECK(w.disconts == 1, "%u DISCONT buffers out, expected 1 (the loop "
        "goes on)", w.disconts);
  g_string_free(w.log, TRUE);
  g_array_free(w.out, TRUE);
  gst_object_unref(fir);
  gst_object_unref(p);
  unlink(path);
  free(x);
  free(hk);
}

static void test_loop_seek(void **state)
{
  (void)state;
  run_loop(FALSE);
}

static void test_loop_seek_playbin(void **state)
{
  (void)state;
  run_loop(TRUE);
}

/* ---- misuse: state cycling, changes while running, data before caps ---- */

/* Which metas an output carries (gst_test_metas.h): on a new output
 * buffer (the input shared with the pusher, so only read), only those
 * whose tags tie them to nothing the element changes, by
 * GstBaseTransform's rule: the untagged ones. The samples are new, so a
 * meta tagged "audio", "video" or unknown is dropped (one was copied onto
 * every output, whatever its tags: QA). A buffer filtered in place keeps
 * all of its own, as volume's do. Random kernels (direct and FFT paths),
 * block sizes and chunkings; the values are checked elsewhere. */
static void test_meta_tags(void **state)
{
  (void)state;
  const unsigned all = (1u << TM_KINDS) - 1, plain = 1u << TM_PLAIN;
  for (int cs = 0; cs < 6; cs++) {
    gboolean shared = cs % 2 == 0;
    unsigned ch = (unsigned)ref_rng_range(&rng, 1, 3), rate = 48000;
    size_t len = cs < 2 ? ref_rng_range(&rng, 1, 8) : random_len();
    size_t n = ref_rng_range(&rng, 2000, 12000);
    guint block = 1u << ref_rng_range(&rng, 5, 10);
    float *hk = random_kernel(len);
    float *x = random_input(GST_AUDIO_FORMAT_F32LE, n * ch);
    GstHarness *h = fir_f32(hk, len, block, ch, rate);
    size_t sizes[4096];
    size_t nc = ref_chunking(&rng, n, block, sizes, 4096), at = 0;
    set_case("%zu taps, block %u, %u ch, %zu frames in %zu chunks, input %s",
             len, block, ch, n, nc, shared ? "shared" : "the element's alone");
    size_t outs = 0, with = 0;
    for (size_t k = 0; k < nc; k++) {
      GstBuffer *b = gst_buffer_new_allocate(NULL, sizes[k] * ch * 4, NULL);
      CHECK(b && gst_buffer_fill(b, 0, x + at * ch, sizes[k] * ch * 4) ==
                     sizes[k] * ch * 4,
            "cannot make a buffer of %zu frames", sizes[k]);
      GST_BUFFER_PTS(b) = gst_util_uint64_scale_int_round(at, GST_SECOND,
                                                          (gint)rate);
      CHECK(tm_add_all(b), "cannot add the test metas");
      GstBuffer *held = shared ? gst_buffer_ref(b) : NULL;
      CHECK(gst_harness_push(h, b) == GST_FLOW_OK, "push %zu", k);
      if (held)
        gst_buffer_unref(held);
      at += sizes[k];
      GstBuffer *o;
      while ((o = gst_harness_try_pull(h)) != NULL) {
        unsigned m = tm_mask(o);
        char got[96], want[96];
        /* alone: in place, or (frames held back by the FFT path's
         * latency) a new buffer as for shared input */
        CHECK((m & ~plain) == 0 || (!shared && m == all),
              "output %zu carries the metas %s, want %s%s", outs,
              tm_describe(m, got, sizeof got),
              tm_describe(plain, want, sizeof want),
              shared ? "" : " (or all, in place)");
        with += m != 0;
        outs++;
        gst_buffer_unref(o);
      }
    }
    /* an output of only held frames carries no input's metas; one of
     * every buffer's frames carries its input's */
    CHECK(with > 0, "no output of %zu carries a meta", outs);
    gst_harness_teardown(h);
    free(x);
    free(hk);
  }
}

static void test_misuse(void **state)
{
  (void)state;
  set_case("misuse");
  GstElement *e = gst_element_factory_make("cudafir", NULL);
  assert_non_null(e);
  static const GstState cycle[] = {GST_STATE_READY, GST_STATE_PAUSED,
                                   GST_STATE_PLAYING, GST_STATE_PAUSED,
                                   GST_STATE_NULL, GST_STATE_PLAYING,
                                   GST_STATE_NULL};
  for (size_t i = 0; i < G_N_ELEMENTS(cycle); i++)
    gst_element_set_state(e, cycle[i]);
  gst_object_unref(e);

  /* data before caps: refused with an error, not a crash */
  GstHarness *h = new_fir();
  gst_harness_play(h);
  GstBuffer *b = gst_buffer_new_allocate(NULL, 64, NULL);
  CHECK(gst_harness_push(h, b) != GST_FLOW_OK, "a buffer without caps was "
        "taken");
  gst_harness_teardown(h);

  /* a pipeline run twice, with every live property changed while it runs */
  char desc[512];
  snprintf(desc, sizeof desc,
           "audiotestsrc num-buffers=300 samplesperbuffer=257 ! "
           "audio/x-raw,channels=2 ! cudafir name=f backend=%s ! "
           "fakesink sync=false", backend);
  GError *err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  CHECK(p && !err, "gst_parse_launch: %s", err ? err->message : "?");
  GstElement *f = gst_bin_get_by_name(GST_BIN(p), "f");
  for (int run = 0; run < 2; run++) {
    g_object_set(f, "block-size", run ? 64u : 512u, NULL);
    CHECK(gst_element_set_state(p, GST_STATE_PLAYING) !=
              GST_STATE_CHANGE_FAILURE, "PLAYING failed");
    GstBus *bus = gst_element_get_bus(p);
    GstMessage *m = NULL;
    for (int i = 0; !m; i++) {
      float taps[5];
      for (int k = 0; k < 5; k++)
        taps[k] = ref_rng_sym(&rng);
      switch (i % 5) {
      case 0: set_taps(f, taps, 1 + (size_t)(i % 5)); break;
      case 1: g_object_set(f, "gain", -3.0 * (i % 7), NULL); break;
      case 2: g_object_set(f, "trim", i % 2, NULL); break;
      case 3: g_object_set(f, "crossfade", (guint64)(i % 3) * GST_MSECOND,
                           NULL); break;
      default: g_object_set(f, "drain", i % 2, NULL); break;
      }
      guint64 lat;
      gchar *use;
      g_object_get(f, "latency", &lat, "backend-in-use", &use, NULL);
      g_free(use);
      m = gst_bus_timed_pop_filtered(bus, GST_MSECOND,
                                     GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    }
    CHECK(GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS, "run %d ended with %s", run,
          GST_MESSAGE_TYPE_NAME(m));
    gst_message_unref(m);
    gst_object_unref(bus);
    gst_element_set_state(p, GST_STATE_NULL);
  }
  gst_object_unref(f);
  gst_object_unref(p);
}

/* ---- read-only properties tell their changes ----------------------------- */

/* What a notify:: handler saw: how many notifies, and the value the
 * property had when the last came. */
typedef struct {
  guint n;
  guint64 latency;
  gchar *in_use;
} seen_notify;

static void on_notify(GObject *obj, GParamSpec *ps, gpointer data)
{
  seen_notify *s = data;
  s->n++;
  if (!strcmp(ps->name, "latency")) {
    g_object_get(obj, "latency", &s->latency, NULL);
  } else {
    g_free(s->in_use);
    g_object_get(obj, "backend-in-use", &s->in_use, NULL);
  }
}

/* `latency` and `backend-in-use` change by themselves (new caps, stop): an
 * application watching them with notify:: (a Python UI showing the delay
 * or the backend) heard nothing until the stream stopped (neither was
 * notified when the engine was built or dropped; QA). A notify for every
 * change, none without one; the value at the last is the property's.
 * And the pipeline is told: a LATENCY message on the bus wherever new
 * caps change the latency, as the query (the harness's) then says it;
 * none was posted for the same block at another rate (48 to 22.05 kHz:
 * block-size - 1 frames, but 2.2 times as long) or for the first
 * caps, so a live pipeline kept the latency it had configured (QA). */
static void test_notify_read_only(void **state)
{
  (void)state;
  for (int cs = 0; cs < 4; cs++) {
    size_t len = cs % 2 ? ref_rng_range(&rng, 1, 8) : random_len();
    unsigned block = 1u << ref_rng_range(&rng, 5, 10);
    guint depth = (guint)ref_rng_range(&rng, 0, 2);
    set_case("%zu taps, block-size %u, pipeline-depth %u", len, block, depth);
    float *hk = random_kernel(len);
    GstHarness *h = new_fir();
    set_taps(h->element, hk, len);
    g_object_set(h->element, "block-size", block, "pipeline-depth", depth,
                 NULL);
    seen_notify lat = {0, 0, NULL}, use = {0, 0, g_strdup("none")};
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    g_signal_connect(h->element, "notify::latency", G_CALLBACK(on_notify),
                     &lat);
    g_signal_connect(h->element, "notify::backend-in-use",
                     G_CALLBACK(on_notify), &use);
    guint64 was_lat = 0;
    gchar *was_use = g_strdup("none");
    static const unsigned rates[3] = {48000, 22050, 22050};
    for (int step = 0; step < 5; step++) {
      guint nlat = lat.n, nuse = use.n;
      if (step < 3) { /* caps, new caps, the same caps again */
        add_case(", %u Hz", rates[step]);
        set_caps(h, GST_AUDIO_FORMAT_F32LE, rates[step], 1, 1);
        float *x = random_input(GST_AUDIO_FORMAT_F32LE, 64);
        CHECK(push_frames(h, GST_AUDIO_FORMAT_F32LE, x, 0, 64, 1, rates[step],
                          0, TRUE) == GST_FLOW_OK,
              "step %d: push", step);
        free(x);
      } else if (step == 3) {
        add_case(", READY");
        CHECK(gst_element_set_state(h->element, GST_STATE_READY) ==
                  GST_STATE_CHANGE_SUCCESS,
              "READY failed");
      } else {
        add_case(", PLAYING");
        gst_harness_play(h);
        set_caps(h, GST_AUDIO_FORMAT_F32LE, 48000, 1, 1);
      }
      guint64 now_lat;
      gchar *now_use;
      g_object_get(h->element, "latency", &now_lat, "backend-in-use", &now_use,
                   NULL);
      CHECK((lat.n != nlat) == (now_lat != was_lat),
            "step %d: latency %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
            " ns, %u notify",
            step, was_lat, now_lat, lat.n - nlat);
      CHECK(lat.latency == now_lat,
            "step %d: notify::latency last said %" G_GUINT64_FORMAT
            " ns, the property is %" G_GUINT64_FORMAT,
            step, lat.latency, now_lat);
      int posted = 0;
      GstMessage *m;
      while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_LATENCY))) {
        posted++;
        gst_message_unref(m);
      }
      if (step != 3) { /* new caps (READY: nothing plays to tell) */
        CHECK(posted == (now_lat != was_lat),
              "step %d: latency %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
              " ns, %d LATENCY message%s",
              step, was_lat, now_lat, posted, posted == 1 ? "" : "s");
        GstClockTime q = gst_harness_query_latency(h);
        CHECK(q == now_lat, "step %d: the latency query says %" G_GUINT64_FORMAT
              " ns, the property %" G_GUINT64_FORMAT, step, q, now_lat);
      }
      CHECK((use.n != nuse) == (strcmp(now_use, was_use) != 0),
            "step %d: backend-in-use %s -> %s, %u notify", step, was_use,
            now_use, use.n - nuse);
      CHECK(!strcmp(use.in_use, now_use),
            "step %d: notify::backend-in-use "
            "last said %s, the property is %s",
            step, use.in_use, now_use);
      was_lat = now_lat;
      g_free(was_use);
      was_use = now_use;
    }
    g_free(was_use);
    gst_element_set_bus(h->element, NULL);
    gst_object_unref(bus);
    gst_harness_teardown(h); /* notifies too (stop) */
    g_free(use.in_use);
    free(hk);
  }
}

/* ---- properties read back ------------------------------------------------- */

static void test_properties(void **state)
{
  (void)state;
  set_case("properties");
  GstElement *e = gst_element_factory_make("cudafir", NULL);
  assert_non_null(e);
  guint bs;
  gboolean drain, trim;
  guint64 xf, lat;
  gdouble gain;
  gchar *inuse;
  g_object_get(e, "block-size", &bs, "drain", &drain, "trim", &trim,
               "crossfade", &xf, "gain", &gain, "latency", &lat,
               "backend-in-use", &inuse, NULL);
  CHECK(bs == 1024 && drain && !trim && xf == 20 * GST_MSECOND &&
            gain == 0.0 && lat == 0 && !strcmp(inuse, "none"),
        "defaults: block %u drain %d trim %d crossfade %" G_GUINT64_FORMAT
        " gain %g latency %" G_GUINT64_FORMAT " in use %s", bs, drain, trim,
        xf, gain, lat, inuse);
  g_free(inuse);
  g_object_set(e, "block-size", 256, "drain", FALSE, "trim", TRUE,
               "crossfade", (guint64)GST_SECOND, "gain", 100.0, "threads", 1u,
               NULL);
  guint thr;
  g_object_get(e, "threads", &thr, NULL);
  CHECK(thr == 1, "threads reads back %u", thr);
  gst_util_set_object_arg(G_OBJECT(e), "routing", "matrix");
  gst_util_set_object_arg(G_OBJECT(e), "backend", "cpu");
  gint routing, be;
  g_object_get(e, "block-size", &bs, "drain", &drain, "trim", &trim,
               "crossfade", &xf, "gain", &gain, "routing", &routing,
               "backend", &be, NULL);
  CHECK(bs == 256 && !drain && trim && xf == GST_SECOND && gain == 100.0 &&
            routing == CF_ROUTING_MATRIX && be == CF_BACKEND_CPU,
        "values did not read back");
  /* the gain range every face takes */
  GParamSpecDouble *gp = G_PARAM_SPEC_DOUBLE(
      g_object_class_find_property(G_OBJECT_GET_CLASS(e), "gain"));
  CHECK(gp->minimum == -CF_GAIN_DB_MAX && gp->maximum == CF_GAIN_DB_MAX,
        "gain range %g..%g", gp->minimum, gp->maximum);
  gst_object_unref(e);
}

static int setup(void **state)
{
  (void)state;
  gst_registry_prebuild();
  gst_init(NULL, NULL);
  gst_test_keep_idle_threads();
  const char *b = getenv("CF_GST_BACKEND");
  if (b && *b)
    backend = b;
  check_variant = backend;
  check_seed = ref_seed();
  ref_rng_init(&rng, check_seed);
  return fixture_init("gst-cudafir");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_properties),
      cmocka_unit_test(test_random_f32),
      cmocka_unit_test(test_random_formats),
      cmocka_unit_test(test_partial_frames),
      cmocka_unit_test(test_in_place),
      cmocka_unit_test(test_integer_rounding),
      cmocka_unit_test(test_float32_precision),
      cmocka_unit_test(test_device_fallback),
      cmocka_unit_test(test_allocator),
      cmocka_unit_test(test_latency_impulse),
      cmocka_unit_test(test_latency_after_stop),
      cmocka_unit_test(test_notify_read_only),
      cmocka_unit_test(test_discont),
      cmocka_unit_test(test_discont_soon),
      cmocka_unit_test(test_qos_drop),
      cmocka_unit_test(test_flush),
      cmocka_unit_test(test_new_segment),
      cmocka_unit_test(test_resume_before_end),
      cmocka_unit_test(test_segments),
      cmocka_unit_test(test_stream_group_done),
      cmocka_unit_test(test_gapless_kernel_change),
      cmocka_unit_test(test_rate_change_goes_on),
      cmocka_unit_test(test_reverse_playback),
      cmocka_unit_test(test_reverse_decoded),
      cmocka_unit_test(test_renegotiate),
      cmocka_unit_test(test_refused_caps),
      cmocka_unit_test(test_same_caps_again),
      cmocka_unit_test(test_kernel_number_types),
      cmocka_unit_test(test_kernel_file_error_codes),
      cmocka_unit_test(test_said_once),
      cmocka_unit_test(test_silent_kernel_file),
      cmocka_unit_test(test_f64_beyond_float),
      cmocka_unit_test(test_timestamp_moves),
      cmocka_unit_test(test_timestamp_rounding),
      cmocka_unit_test(test_timestamps_from_later_buffer),
      cmocka_unit_test(test_far_timestamps),
      cmocka_unit_test(test_kernel_swap),
      cmocka_unit_test(test_kernel_change_then_break),
      cmocka_unit_test(test_kernel_burst),
      cmocka_unit_test(test_gain_ramp),
      cmocka_unit_test(test_gain_controlled),
      cmocka_unit_test(test_gain_control_threads),
      cmocka_unit_test(test_file_load_off_thread),
      cmocka_unit_test(test_setter_during_build),
      cmocka_unit_test(test_kernel_get_unlocked),
      cmocka_unit_test(test_routing),
      cmocka_unit_test(test_gap),
      cmocka_unit_test(test_gap_moved),
      cmocka_unit_test(test_gap_random),
      cmocka_unit_test(test_matrix_file),
      cmocka_unit_test(test_matrix_positions),
      cmocka_unit_test(test_caps_without_mask),
      cmocka_unit_test(test_trim_and_per_channel),
      cmocka_unit_test(test_wav_kernel),
      cmocka_unit_test(test_kernel_file_kept),
      cmocka_unit_test(test_shared_property_ranges),
      cmocka_unit_test(test_bad_values),
      cmocka_unit_test(test_refused_before_start),
      cmocka_unit_test(test_channels_said),
      cmocka_unit_test(test_output_channels_said),
      cmocka_unit_test(test_output_channels_caps_event),
      cmocka_unit_test(test_refused_no_notify),
      cmocka_unit_test(test_ready_only_running),
      cmocka_unit_test(test_bad_kernel_before_first_buffer),
      cmocka_unit_test(test_nonfinite_input),
      cmocka_unit_test(test_unreadable_input),
      cmocka_unit_test(test_overflow_output),
      cmocka_unit_test(test_pipeline_files),
      cmocka_unit_test(test_gapless_playbin3),
      cmocka_unit_test(test_gapless_playbin),
      cmocka_unit_test(test_gapless_concat),
      cmocka_unit_test(test_loop_seek),
      cmocka_unit_test(test_loop_seek_playbin),
      cmocka_unit_test(test_meta_tags),
      cmocka_unit_test(test_misuse),
  };
  if (check_backend_skip(getenv("CF_GST_BACKEND")))
    return 77;
  check_filter_from_env();
  int rc = cmocka_run_group_tests(tests, setup, fixture_cleanup);
  gst_deinit();
  return rc;
}
