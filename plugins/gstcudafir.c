/* cudafir: streaming FIR convolution of audio, on the cudafilter engine
 * (CUDA where a device exists, else the CPU).
 *
 * SECTION:element-cudafir
 *
 * Convolves every channel of an interleaved audio stream with a kernel
 * (an impulse response): a reverb from a recorded room, a cabinet, an
 * equaliser designed elsewhere, a filter bank. Long kernels run on
 * uniformly partitioned FFT convolution with a block of `block-size`
 * frames, which is also the latency it adds (block-size - 1 frames, told
 * truthfully in the latency query and in the read-only `latency`
 * property, with a LATENCY message where new caps change it in time,
 * another rate included); short kernels run directly, with no latency. With
 * `pipeline-depth` D >= 1 the engine keeps D blocks in flight across
 * buffers and the latency grows by D x block-size frames: on CUDA the
 * device filters a block while the next D buffers arrive, so the
 * streaming thread never waits for it (for files and transcoding, where
 * throughput counts more than delay); on the CPU it is only a delay, so
 * that the latency does not depend on where the engine runs.
 *
 * The output is timestamped for its content: the element holds back
 * `latency` frames, so the first buffers come out shorter and the held
 * frames (plus, with drain=true, the filter's ring-out) come out at EOS or
 * before a discontinuity: a DISCONT buffer, or timestamps that jump by more
 * than 40 ms from where the frame count puts them (the ring-out then stops
 * where the stream resumes, none where it resumes at or before the input's
 * end: output timestamps overlap no more than the input's). A smaller
 * move (a live source resumed after a pause: +20 ms without DISCONT) is
 * no discontinuity, the history going on, but the frames after it leave
 * with their moved times, an output buffer cut where it falls; a move
 * under 1 ms (a container's rounding: Matroska keeps milliseconds) is
 * jitter, the frame count's times going on. Buffers without
 * timestamps leave without them; where they start on a later buffer
 * (an appsrc stamping from its second buffer on), the timeline is
 * counted back from it to the run's first frame, so the held frames and
 * all after leave timed. A new
 * segment that moves the stream in running or stream time (a segment seek
 * looping; the next item of a gapless playlist only as said below) and
 * the end of a segment
 * (SEGMENT_DONE) do the same, and the held frames go out in the segment
 * they belong to, before the new one (a segment that only changes the
 * rate, in the same direction, where the stream is, running and stream
 * time going on, moves neither: the filter goes on through it); so does new caps, in the old format
 * (the ring-out then stops where the input ended), also caps the kernel
 * cannot take, before their error. STREAM_GROUP_DONE (a gapless
 * player's item ending, playbin) has the group's held frames go out
 * before it; the ring-out, with drain=true, waits for an EOS right
 * after it (the last item). The next item of a gapless playlist (a
 * STREAM_START of another stream, then a segment starting within 1 ms
 * of the running time where the input ended, the same format: playbin,
 * playbin3, concat) goes on as one signal with the item before, whose
 * ring-out goes on into its first frames, drain or not, its first output
 * buffer not DISCONT though its input came so (anything else
 * drops it); a kernel or gain set after an item's last buffer
 * crossfades (ramps) from the next item's first frame, the ring-out
 * included, and one running goes on across (the item's last input
 * frames, the engine's tail of them, are replayed into the reset
 * engine). So does a loop: SEGMENT_DONE where the input ended, then
 * a segment starting there in running time (a segment seek without
 * FLUSH looping a sample), the loop seamless, not cut at its end. A discontinuity, a flush and new caps
 * restart the filter history (a kernel change not yet in force then
 * takes effect at once, no crossfade); the same caps or segment sent
 * again do not. With qos=true a buffer GstBaseTransform drops as late
 * (a QoS message on the bus) makes the next one a discontinuity: its
 * samples are lost, and nothing is filtered across them. A GAP event is
 * silence: the held frames and the
 * kernel's tail ring out through it in order (a gap longer than the tail
 * goes on downstream as a GAP after them); it runs from the stream's end
 * to the gap's end where the gap starts before it or up to 40 ms after
 * it (a jitter buffer's lost-packet gap is an estimate; a gap ending
 * before the stream's end changes nothing), and output buffers never carry
 * the GAP flag, since a sink skips those. In reverse playback (a segment
 * of rate < 0: a decoder pushes a chunk's buffers latest first, none
 * following the one before it in time) every buffer is a run of its
 * own, filtered from silence with its held frames flushed by silence
 * after it: one buffer out of exactly its frames, at its timestamps and
 * offsets, in the order it came, DISCONT where it came so, no ring-out
 * (a reverb restarts at every buffer: the reversed filtered stream would
 * need the whole chunk first). Changing `kernel` or `kernel-file`
 * while PLAYING blends from the old to the new kernel over `crossfade`
 * (its value when the change is made), without a click (a change made
 * while a crossfade runs, as a slider makes them, starts when that one
 * ends; the latest of several waiting wins): the file is read, the FFT plans the new kernel needs are
 * made (measured: up to a second the first time on a machine), and the swap
 * itself is built on the engine's input history (cf_engine_prepare_swap), in
 * the thread that sets the property (g_object_set returns once that is
 * done). The streaming thread takes it at its next buffer and replays only
 * the buffers since: a swap to a 131072-tap stereo kernel costs it
 * microseconds, not the milliseconds of replaying the whole kernel's length
 * there.
 *
 * `gain` scales the output (after the kernel, so a matrix's every
 * output; before integer output is rounded and saturated). Set while
 * PLAYING it ramps, linearly in amplitude, over `crossfade` (its value
 * then) from the first frame of the next buffer, as a kernel crossfade
 * weighs (frame S + k of X gets g0 + (g1 - g0) (k + 1) / (X + 1)); a
 * change made during a ramp or a kernel crossfade starts at once from
 * where the gain is, so a fader is heard as it moves and never steps
 * (crossfade=0: a step at the buffer). `gain` is controllable: with a
 * GstController binding (gst_object_add_control_binding: a direct binding
 * on an interpolation or LFO control source) each output frame gets the
 * control source's value at its stream time (values a frame apart, from
 * each output buffer's time: the content's time, the latency held back
 * not counted), so a ramp is smooth within buffers, not stepped per
 * buffer; `gain` reads back the value at the last output buffer's start.
 * A flush, a discontinuity or new caps take the gain set at once.
 *
 * Buffers may have any size, change size every time, and even end inside
 * a frame (a byte source without a parser, `filesrc ! audio/x-raw,...`):
 * the partial frame waits for the rest of its bytes.
 *
 * The engine works in float32, 24 bits of precision, whatever the format:
 * F32LE and S16LE pass an identity kernel bit for bit (F32LE's
 * denormals, below 1.2e-38, excepted: the CPU backend flushes them to 0
 * on x86, engine.h), but S32LE and F64LE samples are rounded to float32
 * on the way in (S32LE beyond |x| = 2^24 by up to 64 LSB; F64LE within a
 * relative 2^-24, 6e-8, where float32 reaches: from 1.2e-38 to 3.4e38).
 *
 * The kernel comes from `kernel` (one kernel for every channel) or
 * `kernel-file`: a WAV/FLAC/any audio file libav decodes (resampled to
 * the stream's rate, its gain kept; mono gives one shared kernel, more channels one per
 * channel), a NumPy .npy (1D shared, 2D per channel, 3D C_out x C_in
 * matrix) or a text file of numbers. `routing` reinterprets a file: with
 * routing=matrix an N-channel file on a C-channel stream is an
 * (N / C) x C matrix, output-major: file channel k feeds output k / C
 * from input k % C (a 4-channel true-stereo IR on stereo: L<-L, L<-R,
 * R<-L, R<-R; a file written input-major, L->L, L->R, R->L, R->R, has its
 * middle two channels the other way round), and the output has N / C
 * channels (over two: at the positions downstream asks for, else the
 * count's usual layout, 5.1 for six). Input of a channel count the kernel
 * set does not take (fixed upstream: `audio/x-raw,channels=2 ! cudafir
 * kernel=<1,2,3,4> routing=matrix`) fails the stream with a warning or an
 * element error on the bus naming the kernel against the count; an
 * audioconvert before the element picks a count that fits. Downstream
 * that takes none of the output counts the matrix gives (a capsfilter
 * after the element) fails the stream not-negotiated with a warning
 * naming the kernel's output count against downstream's, whether
 * upstream asked with a caps query or pushed its caps straight away; an
 * audioconvert after the element converts it.
 * The file is read when `kernel-file` is set; `trim` and `routing`
 * rebuild the kernel from those taps (the file may have changed or gone
 * since), and only a new stream rate
 * reads an audio file again, to resample it. A kernel change that
 * cannot be used (a file missing, malformed or silent: every tap 0, as
 * an impulse response exported empty is; a routing its kernels
 * do not fit) is refused with a warning on the bus while the element
 * runs (PAUSED or PLAYING, before the first buffer too) where the
 * kernel set before is good, the properties and the kernel staying as
 * they were; set in NULL or READY, or with nothing good set before, it
 * is kept and the stream fails to start with an error naming it.
 * A value refused at once (a tap that is no number, NaN or infinite)
 * keeps the property as it was; refused in NULL or READY (as a
 * gst-launch line sets it), it also makes the next start fail with an
 * element error naming the property and why, until the property (or,
 * for `kernel`, `kernel-file`) is set to a value taken: the stream would
 * have run without it, unfiltered where it was the only kernel.
 * Integer output (S16LE,
 * S32LE) is rounded to nearest, ties to even, and saturated; no dither. Without a kernel the element
 * passes audio through unchanged (the identity kernel).
 *
 * With backend=auto, a CUDA device that fails mid-stream leaves the
 * filtering to the CPU inside the call that failed, losing nothing: a
 * warning goes on the bus and `backend-in-use` changes (notify).
 *
 * Float input holding NaN or infinity is filtered as the engine defines
 * it (the outputs it reaches are not finite; on the FFT paths its whole
 * block's, up to block-size frames before it) and said once a run with
 * a warning on the bus naming its time and channel (again after a
 * flush); the stream goes on. So is finite input whose filtering
 * overflows float (samples near 3.4e38, or a kernel and gain that
 * large), naming the first output that is not finite.
 *
 * Examples:
 * |[
 * gst-launch-1.0 autoaudiosrc ! audioconvert ! cudafir kernel-file=hall.wav ! audioconvert ! autoaudiosink
 * gst-launch-1.0 filesrc location=in.wav ! wavparse ! audioconvert ! cudafir kernel-file=hall.wav gain=-6 ! audioconvert ! wavenc ! filesink location=out.wav
 * gst-launch-1.0 audiotestsrc num-buffers=100 ! audio/x-raw,format=F32LE,rate=48000,channels=2 ! cudafir kernel="<0.25, 0.5, 0.25>" ! fakesink
 * ]|
 */
#define G_LOG_DOMAIN "cudafir"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gst/audio/audio.h>
#include <gst/audio/gstaudiofilter.h>

#include "audioconv.h"
#include "common.h"

GST_DEBUG_CATEGORY_STATIC(cudafir_debug);
#define GST_CAT_DEFAULT cudafir_debug

/* How a kernel file's kernels map onto the stream's channels. */
typedef enum {
  ROUTING_AUTO = -1,
  ROUTING_SHARED = CF_ROUTING_SHARED,
  ROUTING_PER_CHANNEL = CF_ROUTING_PER_CHANNEL,
  ROUTING_MATRIX = CF_ROUTING_MATRIX,
} GstCudaFirRouting;

static GType cf_gst_routing_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {ROUTING_AUTO, "As the kernel file says (mono or 1D: shared; several "
                   "channels or 2D: per channel; 3D .npy: matrix)", "auto"},
    {ROUTING_SHARED, "One kernel for every channel", "shared"},
    {ROUTING_PER_CHANNEL, "One kernel per channel (a mono kernel is used "
                          "for every channel)", "per-channel"},
    {ROUTING_MATRIX, "C_out x C_in kernels: the output has C_out channels",
     "matrix"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("CudaFirRouting", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

#define DEFAULT_BLOCK_SIZE 1024
#define DEFAULT_PIPELINE_DEPTH 0
#define DEFAULT_CROSSFADE (20 * GST_MSECOND)
#define DEFAULT_GAIN 0.0
#define DEFAULT_DRAIN TRUE
#define DEFAULT_TRIM FALSE
#define TRIM_DB (-60.0) /* `trim` cuts leading taps below this re. peak */
#define JUMP_TOLERANCE ((GstClockTimeDiff)(40 * GST_MSECOND))
/* timestamps closer than this to the frame count's are on time
 * (anchor_move) */
#define JITTER_TOLERANCE ((GstClockTimeDiff)GST_MSECOND)
/* timestamp moves kept while their frames are held (anchor_move) */
#define MAX_ANCHORS 64
#define MAX_CHANNELS 256 /* the pad templates' */
/* gain ramps held at once (a `gain` set at every small buffer, with a
 * long latency behind): the oldest points in between give way */
#define MAX_GAINS 64

enum {
  PROP_0,
  PROP_KERNEL,
  PROP_KERNEL_FILE,
  PROP_ROUTING,
  PROP_BLOCK_SIZE,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_PIPELINE_DEPTH,
  PROP_THREADS,
  PROP_CROSSFADE,
  PROP_GAIN,
  PROP_DRAIN,
  PROP_TRIM,
  PROP_LATENCY,
  PROP_BACKEND_IN_USE,
};

typedef struct {
  GstAudioFilter parent;

  /* properties (object lock) */
  GArray *taps;       /* `kernel`, floats; empty = none */
  gchar *kernel_file;
  /* kernel_file as read when set (before trim and routing, which
   * are rebuilt from it without reading the file again), at file_rate
   * (0: the file's own); file_fixed: the same at every rate (.npy,
   * text: only audio files are resampled). NULL where it did not load,
   * file_error saying why (set before streaming: kept). Written with
   * kernel_lock held too, so that a holder of kernel_lock reads it
   * without the object lock. */
  cf_kernel *file_kernel;
  guint file_rate;
  gboolean file_fixed;
  gchar *file_error;
  GstCudaFirRouting routing;
  guint block_size;
  cf_backend backend;
  gint device_id;
  guint pipeline_depth;
  guint threads;
  guint64 crossfade;
  gdouble gain_db;
  /* a `gain` set that the streaming thread has not taken yet, and
   * `crossfade` when it was set */
  gboolean gain_new;
  guint64 gain_xf;
  gboolean drain;
  gboolean trim;
  /* a checked kernel change waiting for the streaming thread: the swap
   * built ahead (pending_prep) or, where it could not be, the kernel set;
   * `made`: a built swap the streaming thread made, whose memory the next
   * kernel change or engine free gives back (object lock) */
  cf_kernel *pending;
  cf_swap_prep *pending_prep, *made;
  guint64 pending_crossfade; /* `crossfade` when the change was made */
  /* Serialises kernel changes and engine builds and frees: kernel changes
   * read files (libav decoding and resampling: tens of ms) and plan FFTs
   * with the object lock free, since the streaming thread takes it at
   * every buffer; while it is held the engine, rate and channels stay as
   * they are. Taken before the object lock. */
  GMutex kernel_lock;
  /* How the properties map channels, for caps: mat_in x mat_out for a
   * matrix kernel, or mat_in = mat_out per-channel kernels (per_channel;
   * 0: the count stays); mat_n kernels read as a matrix on whatever
   * channel count divides it (routing=matrix on a file of per-channel
   * kernels). */
  guint mat_in, mat_out, mat_n;
  /* the input count whose refusal in a caps query was said (0: none),
   * once for the kernel set (update_shape clears it) */
  guint told_channels;
  /* the output-side refusal last said (NULL: none), once for the kernel
   * set and downstream's counts (update_shape clears it) */
  gchar *told_out;
  gboolean per_channel;

  /* between start and stop (PAUSED, PLAYING): a bad kernel set then is
   * refused where a good one is set, the engine made or not (object
   * lock) */
  gboolean started;
  /* values refused while stopped (NULL, READY): the next start fails,
   * naming them (cf_gst_refusals_new; object lock) */
  GHashTable *refusals;
  /* build_engine is making an engine from block-size, backend,
   * device-id, pipeline-depth and threads as they were when it began
   * (object lock): those are refused meanwhile, as once it runs */
  gboolean building;

  /* streaming state (streaming thread; engine pointer also read under the
   * object lock for the read-only properties) */
  cf_engine *engine;
  gchar *posted;        /* the last engine error posted, until an engine is
                           made: the base class retries the same caps at
                           every buffer, and one error is enough */
  cf_backend running;   /* the engine's backend as last seen (object lock;
                           backend=auto may leave CUDA mid-stream) */
  GstAudioFormat format;
  guint rate, cin, cout;
  gsize in_bpf;
  GstAudioInfo info;    /* the format the engine was built for */
  size_t latency;       /* frames the engine delays by */
  size_t skip;          /* leading output frames still to drop */
  GstClockTime base_ts; /* timestamp of the first frame since a restart */
  guint64 base_offset;
  /* Where the input's timestamps moved off the frame count by less than
   * a discontinuity (a live source resumed after a pause: +20 ms, no
   * DISCONT): from input frame `frame` on, frame times count from `ts`.
   * anchors[0] is the one the next output frame is timed by; the first
   * is (0, base_ts). Output buffers are cut where one starts, so each
   * frame leaves with its own input frame's time (they kept the frame
   * count's: 20 ms off for the rest of the stream). */
  struct {
    guint64 frame;
    GstClockTime ts;
  } anchors[MAX_ANCHORS];
  guint n_anchors;
  GQueue parts; /* output parts cut at an anchor, for generate_output */
  guint64 frames_in, frames_out; /* since the restart */
  gboolean discont;     /* the next output buffer starts a new run */
  /* the ring-out of a stream group that STREAM_GROUP_DONE ended, timed,
   * for an EOS after it (the last item); the next item's start, or
   * anything else, drops it (push_group_done) */
  GstBuffer *group_tail;
  /* Gapless: the ring-out of the playlist item before (float, gain
   * applied, cout channels interleaved), added to the output frames
   * that follow from ring_pos on, so the items play as one signal
   * (add_ring). ring_pending: made at STREAM_GROUP_DONE, waiting for a
   * segment that starts at running time pend_rt (where the item's input
   * ended); anything else drops it. keep_ring: push_held keeps the
   * ring-out it computes there. new_item: a STREAM_START of another
   * stream came since the last segment. */
  float *ring;
  size_t ring_frames, ring_pos, ring_cap;
  gboolean ring_pending, keep_ring, new_item;
  /* the ring-out pending is a loop's: SEGMENT_DONE, where the input
   * ended (a segment seek looping), not a change of item */
  gboolean pend_loop;
  /* the output goes on from the run before (a gapless item's next one):
   * the next input buffer's DISCONT is no discontinuity, and goes
   * (fir_chain) */
  gboolean goes_on;
  gboolean in_discont; /* the input buffer came DISCONT (fir_chain) */
  GstPadChainFunction base_chain; /* GstBaseTransform's */
  GstClockTime pend_rt;
  gchar *stream_id;
  /* qos=true: GstBaseTransform dropped a late input buffer since the
   * last one filtered (submit_input_buffer): a discontinuity */
  gboolean qos_dropped;
  GstClockTime out_end; /* end of the last buffer pushed (NONE: unknown) */
  float *fin, *fout;   /* conversion scratch */
  size_t scratch_frames;
  /* the start of a frame the last buffer cut (a byte source without a
   * parser), waiting for the rest in the next one, and its timestamp */
  guint8 carry[MAX_CHANNELS * 8];
  gsize carry_len;
  GstClockTime carry_pts;
  guint64 carry_offset;
  gboolean told_nonfinite; /* NaN/Inf in the input said, since a restart */
  gboolean told_overflow;  /* ... or in the output of finite input */
  /* `gain`, applied to the output: linear amplitude over output frames
   * (counted as their input frames since the restart), piecewise linear
   * through gains[0..n_gains) (frame ascending), each end's value beyond
   * it. A `gain` set adds a ramp from the next input frame (take_gain);
   * a controlled one is read for every frame instead (apply_gain). */
  struct {
    guint64 frame;
    double g;
  } gains[MAX_GAINS];
  guint n_gains;
  /* gains[] frames count from this many frames before the run's first:
   * a run going on from the item before (a gapless change of item, a
   * loop) keeps that item's schedule, a ramp going on across */
  guint64 gain_origin;
  gdouble *ctl; /* controlled gain values, scratch */
  /* The kernels in the engine (streaming thread), for a change of item
   * to build again after the reset that carries the ring-out over
   * (resume_carry): k_cur alone, or a crossfade from k_cur to k_to over
   * input frames [fade_start, fade_start + fade_len) of the run (frames
   * before its first are negative), k_wait waiting for it to end
   * (wait_len: its crossfade). */
  cf_kernel *k_cur, *k_to, *k_wait;
  gint64 fade_start;
  guint64 fade_len, wait_len;
  /* the run goes on from the one before (resume_carry): a kernel change
   * at its first buffer crossfades, as mid-stream */
  gboolean resumed;
  /* The last input frames (cin floats each, a ring of hist_cap frames,
   * the newest ending at hist_pos; up to cf_engine_tail of them), of the
   * run and of those it goes on from: at a change of item the engine,
   * reset to carry the ring-out over, is brought back by replaying them
   * (resume_carry), so that a kernel change at the next item's first
   * buffer crossfades the item before's ring-out too. hist_lost: some
   * could not be kept (memory): the ring-out is added instead. */
  float *hist;
  size_t hist_cap, hist_len, hist_pos;
  gboolean hist_lost;
  /* At a change of item whose ring-out is carried (push_group_done):
   * the crossfade running there (its kernels, copies; `d` frames of it
   * done) and the gain schedule, for the next item's segment to take
   * on where it follows (resume_carry); dropped with the ring-out. */
  struct {
    gboolean valid;
    cf_kernel *from, *to, *wait;
    guint64 fade_len, wait_len, d;
    size_t tail; /* the engine's tail there (cf_engine_tail) */
    struct {
      guint64 frame;
      double g;
    } gains[MAX_GAINS];
    guint n_gains;
    guint64 origin;
  } pass;
  size_t ctl_len;
} GstCudaFir;

typedef struct {
  GstAudioFilterClass parent_class;
} GstCudaFirClass;

GType gst_cuda_fir_get_type(void);
G_DEFINE_TYPE(GstCudaFir, gst_cuda_fir, GST_TYPE_AUDIO_FILTER)

/* The last problem found in this thread: ours, or the engine's words. */
static _Thread_local char fir_error[512];

static cf_status fir_fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static cf_status fir_fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_vsnprintf(fir_error, sizeof fir_error, fmt, ap);
  va_end(ap);
  return CF_E_INVALID;
}

/* After a failed cf_ call: keep its message. */
static cf_status fir_engine_error(cf_status s)
{
  g_strlcpy(fir_error, cf_last_error(), sizeof fir_error);
  return s;
}

#define GST_CUDA_FIR(o) ((GstCudaFir *)(o))

/* ---- kernels -------------------------------------------------------- */

/* Cut the leading taps below TRIM_DB of the set's peak from every kernel
 * (the same count from each, keeping the channels aligned). */
static cf_status trim_kernel(cf_kernel **kp)
{
  cf_kernel *k = *kp;
  unsigned n = cf_kernel_count(k);
  float peak = 0.0f;
  for (unsigned i = 0; i < n; i++) {
    size_t len;
    const float *t = cf_kernel_taps(k, i, &len);
    for (size_t j = 0; j < len; j++)
      peak = fmaxf(peak, fabsf(t[j]));
  }
  float thr = peak * (float)pow(10.0, TRIM_DB / 20.0);
  size_t cut = SIZE_MAX;
  for (unsigned i = 0; i < n; i++) {
    size_t len, j = 0;
    const float *t = cf_kernel_taps(k, i, &len);
    if (len == 0)
      continue;
    while (j < len && fabsf(t[j]) < thr)
      j++;
    cut = MIN(cut, j);
  }
  if (cut == 0 || cut == SIZE_MAX)
    return CF_OK;
  cf_kernel *t2;
  cf_status s = cf_kernel_new(cf_kernel_routing(k), cf_kernel_outputs(k),
                              cf_kernel_inputs(k), &t2);
  for (unsigned i = 0; s == CF_OK && i < n; i++) {
    size_t len;
    const float *t = cf_kernel_taps(k, i, &len);
    if (len > cut)
      s = cf_kernel_set(t2, i, t + cut, len - cut);
  }
  if (s != CF_OK) {
    cf_kernel_free(t2);
    return s;
  }
  cf_kernel_free(k);
  *kp = t2;
  return CF_OK;
}

/* Reshape a loaded set to the routing asked for, on a stream of
 * `channels` (0: not known yet, only the shape is checked). */
static cf_status apply_routing(cf_kernel **kp, GstCudaFirRouting routing,
                               unsigned channels, const char *what)
{
  cf_kernel *k = *kp;
  cf_routing r = cf_kernel_routing(k);
  unsigned n = cf_kernel_count(k);
  cf_kernel *t = NULL;
  cf_status s = CF_OK;
  switch (routing) {
  case ROUTING_AUTO:
    return CF_OK;
  case ROUTING_SHARED:
    if (r != CF_ROUTING_SHARED)
      return fir_fail("routing=shared needs one kernel, %s "
                     "holds %u", what, n);
    return CF_OK;
  case ROUTING_PER_CHANNEL:
    if (r == CF_ROUTING_PER_CHANNEL || r == CF_ROUTING_SHARED)
      return CF_OK; /* a shared kernel serves every channel */
    return fir_fail("routing=per-channel: %s is a %u x %u "
                   "matrix", what, cf_kernel_outputs(k), cf_kernel_inputs(k));
  case ROUTING_MATRIX:
    if (r == CF_ROUTING_MATRIX)
      return CF_OK;
    if (channels == 0)
      return CF_OK;
    if (n % channels != 0)
      return fir_fail("routing=matrix: %s holds %u kernel%s, "
                     "not a multiple of the stream's %u channels", what, n,
                     n == 1 ? "" : "s", channels);
    if ((s = cf_kernel_as_matrix(k, channels, &t)) != CF_OK)
      return fir_engine_error(s);
    cf_kernel_free(k);
    *kp = t;
    return CF_OK;
  }
  return fir_fail("unknown routing %d", (int)routing);
}

/* The properties a kernel set is built from: a copy, so that a file is
 * read without the object lock. */
typedef struct kernel_params {
  gchar *file;
  GArray *taps;
  GstCudaFirRouting routing;
  gboolean trim;
  /* the element's file_kernel (borrowed: kernel_lock keeps it), its
   * rate and file_error; `read`: the file read here (owned), which
   * replaces it when p is stored, as does `forget` (a new file or none) */
  const cf_kernel *loaded;
  guint loaded_rate;
  gboolean loaded_fixed;
  gchar *file_error;
  cf_kernel *read;
  guint read_rate;
  gboolean read_fixed, read_failed, forget;
} kernel_params;

/* Object lock and kernel_lock held. */
static void params_take(const GstCudaFir *self, kernel_params *p)
{
  memset(p, 0, sizeof *p);
  p->file = g_strdup(self->kernel_file);
  p->taps = g_array_sized_new(FALSE, FALSE, sizeof(float), self->taps->len);
  g_array_append_vals(p->taps, self->taps->data, self->taps->len);
  p->routing = self->routing;
  p->trim = self->trim;
  p->loaded = self->file_kernel;
  p->loaded_rate = self->file_rate;
  p->loaded_fixed = self->file_fixed;
  p->file_error = g_strdup(self->file_error);
}

/* Another kernel file, or none: what was read of the old one goes. */
static void params_forget_file(kernel_params *p)
{
  p->forget = TRUE;
  p->loaded = NULL;
  g_clear_pointer(&p->read, cf_kernel_free);
  g_clear_pointer(&p->file_error, g_free);
}

/* Object lock and kernel_lock held: p's values become the properties'
 * (p keeps only what is to be freed, the lock released: params_clear). */
static void params_store(GstCudaFir *self, kernel_params *p)
{
  g_free(self->kernel_file);
  self->kernel_file = p->file;
  g_array_free(self->taps, TRUE);
  self->taps = p->taps;
  self->routing = p->routing;
  self->trim = p->trim;
  if (p->forget || p->read) {
    cf_kernel *old = self->file_kernel;
    self->file_kernel = p->read;
    self->file_rate = p->read_rate;
    self->file_fixed = p->read_fixed;
    p->read = old;
  }
  g_free(self->file_error);
  self->file_error = p->file_error;
  p->file = NULL;
  p->taps = NULL;
  p->file_error = NULL;
  p->loaded = NULL;
}

static void params_clear(kernel_params *p)
{
  g_clear_pointer(&p->file, g_free);
  if (p->taps)
    g_array_free(p->taps, TRUE);
  p->taps = NULL;
  g_clear_pointer(&p->file_error, g_free);
  g_clear_pointer(&p->read, cf_kernel_free);
}

/* Whether a kernel file's taps are the same at every stream rate: a .npy
 * or text (only audio files are resampled to the stream's rate), so a
 * new rate needs no new read of it. */
static gboolean file_rate_free(const char *path)
{
  char head[6];
  FILE *f = fopen(path, "rb");
  if (!f)
    return FALSE;
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  if (n == sizeof head && memcmp(head, "\x93NUMPY", sizeof head) == 0)
    return TRUE;
  cf_kernel *t = NULL;
  gboolean text = cf_kernel_load_text(path, &t) == CF_OK;
  cf_kernel_free(t);
  return text;
}

/* p's kernel file as read for a stream at `rate` (0: any rate, for
 * validation and caps before the stream is known), in a copy of its own:
 * the taps read when the file was set where they serve; the file read
 * again only for a stream at another rate that an audio file must be
 * resampled to (into p->read), or where nothing of it was read yet.
 * CF_OK, or fir_error set. */
static cf_status file_taps(kernel_params *p, unsigned rate, cf_kernel **out)
{
  const cf_kernel *have = p->read ? p->read : p->loaded;
  guint have_rate = p->read ? p->read_rate : p->loaded_rate;
  gboolean fixed = p->read ? p->read_fixed : p->loaded_fixed;
  cf_status s;
  if (have && (fixed || rate == 0 || have_rate == rate)) {
    if ((s = cf_kernel_copy(have, out)) != CF_OK)
      fir_engine_error(s);
    return s;
  }
  if (!have && p->file_error) /* as it failed when set: not read again */
    return fir_fail("%s", p->file_error);
  cf_kernel *k = NULL;
  if ((s = cf_kernel_load(p->file, rate, &k)) != CF_OK) {
    p->read_failed = TRUE;
    if (!have)
      return fir_engine_error(s);
    char why[sizeof fir_error];
    g_strlcpy(why, cf_last_error(), sizeof why);
    return fir_fail("%s was read again to resample it to the stream's "
                    "%u Hz (it was read at %u Hz), and that failed: %s",
                    p->file, rate, have_rate, why);
  }
  if ((s = cf_kernel_copy(k, out)) != CF_OK) {
    cf_kernel_free(k);
    return fir_engine_error(s);
  }
  cf_kernel_free(p->read);
  p->read = k;
  p->read_rate = rate;
  p->read_fixed = file_rate_free(p->file);
  return CF_OK;
}

/* The kernel set the properties p describe, for a stream of `channels` at
 * `rate` (0, 0: for validation and caps before the stream is known).
 * May read the file (file_taps): call it without the object lock, with
 * kernel_lock held. NULL with fir_error set on failure. */
static cf_kernel *build_kernel(kernel_params *p, unsigned rate,
                               unsigned channels)
{
  cf_kernel *k = NULL;
  cf_status s;
  const char *what;
  if (p->file) {
    what = p->file;
    s = file_taps(p, rate, &k);
  } else if (p->taps->len) {
    what = "kernel";
    s = cf_kernel_new_shared((const float *)p->taps->data, p->taps->len, &k);
  } else {
    static const float one = 1.0f;
    what = "the identity kernel";
    s = cf_kernel_new_shared(&one, 1, &k);
  }
  if (s != CF_OK && !p->file)
    fir_engine_error(s);
  if (s == CF_OK && p->trim && (s = trim_kernel(&k)) != CF_OK)
    fir_engine_error(s);
  if (s == CF_OK)
    s = apply_routing(&k, p->routing, channels, what);
  /* per-channel with a shared kernel: the engine takes shared as is */
  if (s != CF_OK) {
    cf_kernel_free(k);
    return NULL;
  }
  return k;
}

/* Update mat_in/mat_out/mat_n (the caps' channel mapping) from the
 * kernel the properties give. Object lock held. */
static void update_shape(GstCudaFir *self, const cf_kernel *k)
{
  self->mat_in = self->mat_out = self->mat_n = 0;
  self->per_channel = FALSE;
  self->told_channels = 0;
  g_clear_pointer(&self->told_out, g_free);
  if (k && cf_kernel_routing(k) != CF_ROUTING_SHARED &&
      !(cf_kernel_routing(k) == CF_ROUTING_PER_CHANNEL &&
        self->routing == ROUTING_MATRIX)) {
    /* a matrix maps C_in to C_out; per-channel kernels fix the count */
    self->mat_in = cf_kernel_inputs(k);
    self->mat_out = cf_kernel_outputs(k);
    self->per_channel = cf_kernel_routing(k) == CF_ROUTING_PER_CHANNEL;
  } else if (k && self->routing == ROUTING_MATRIX) {
    self->mat_n = cf_kernel_count(k);
  }
}

/* Why a stream of ch channels cannot take the kernel set the properties
 * give (NULL: it can). transform_caps refuses such caps; this names the
 * reason where "not negotiated" would not. Object lock held. */
static gchar *channels_refused(GstCudaFir *self, guint ch)
{
  const char *what = self->kernel_file ? self->kernel_file : "kernel";
  if (self->mat_in && ch != self->mat_in && self->per_channel &&
      self->mat_in % ch == 0 && self->mat_in / ch <= 256)
    return g_strdup_printf("%s has %u per-channel kernels, the stream has "
                           "%u channel%s; routing=matrix reads them as a "
                           "%u x %u matrix (%u channel%s in, %u out)",
                           what, self->mat_in, ch, ch == 1 ? "" : "s",
                           self->mat_in / ch, ch, ch, ch == 1 ? "" : "s",
                           self->mat_in / ch);
  if (self->mat_in && ch != self->mat_in && self->per_channel)
    return g_strdup_printf("%s has %u per-channel kernels, the stream has "
                           "%u channel%s",
                           what, self->mat_in, ch, ch == 1 ? "" : "s");
  if (self->mat_in && ch != self->mat_in)
    return g_strdup_printf("%s maps %u input channels to %u (%u x %u "
                           "kernels), the stream has %u",
                           what, self->mat_in, self->mat_out, self->mat_out,
                           self->mat_in, ch);
  /* the taps of `kernel` are one kernel, however many: a 1 x 1 matrix on
   * mono, nothing else */
  if (self->mat_n == 1 && !self->kernel_file && ch != 1) {
    gchar *one =
        self->taps->len
            ? g_strdup_printf("kernel is one kernel (of %u tap%s)",
                              self->taps->len, self->taps->len == 1 ? "" : "s")
            : g_strdup("no kernel is set: the identity is one "
                       "kernel");
    gchar *why = g_strdup_printf(
        "routing=matrix: %s, not a multiple of the stream's %u channels: "
        "a matrix of C_out x C_in kernels comes from a kernel-file (a 3D "
        ".npy, or per-channel kernels read as one)",
        one, ch);
    g_free(one);
    return why;
  }
  if (self->mat_n && (self->mat_n % ch || self->mat_n / ch > 256))
    return g_strdup_printf("routing=matrix: %s holds %u kernel%s, not a "
                           "multiple of the stream's %u channels",
                           what, self->mat_n, self->mat_n == 1 ? "" : "s",
                           ch);
  return NULL;
}

/* Input caps of one channel count that the kernel set does not take:
 * upstream asking with them (a caps query, its caps fixed) cannot start
 * (basesrc fails not-negotiated, the reason in no message: QA, a
 * gst-launch line with audio/x-raw,channels=2 before a 1-kernel matrix).
 * A warning on the bus names why, once for the kernel set; the caps
 * event's element error does where the caps come that far. */
static void say_channels_refused(GstCudaFir *self, GstCaps *caps)
{
  gint ch = 0;
  if (gst_caps_get_size(caps) != 1 ||
      !gst_structure_get_int(gst_caps_get_structure(caps, 0), "channels",
                             &ch) ||
      ch <= 0)
    return;
  /* a caps query before the element is in a pipeline (gst_parse_launch
   * links before it adds them): told when it can be heard */
  GstBus *bus = gst_element_get_bus(GST_ELEMENT(self));
  if (!bus)
    return;
  gst_object_unref(bus);
  GST_OBJECT_LOCK(self);
  gchar *why = self->told_channels != (guint)ch
                   ? channels_refused(self, (guint)ch)
                   : NULL;
  if (why)
    self->told_channels = (guint)ch;
  GST_OBJECT_UNLOCK(self);
  if (!why)
    return;
  GST_WARNING_OBJECT(self, "%s", why);
  CF_GST_POST_WARNING(self, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                      g_strdup("cudafir: the input's channels do not fit "
                               "the kernel"),
                      why);
  g_free(why);
}

/* Downstream (its caps `down`, on the source pad) takes none of the
 * channel counts the matrix kernel gives, for the input counts upstream
 * offers (`up`, NULL: any): the stream cannot start, and upstream fails
 * "not negotiated", the reason in no message (QA: a capsfilter of 2
 * channels after a 4 x 2 matrix). A warning on the bus names the counts,
 * once for the kernel set and downstream's caps. pin/pout: the kernel's
 * (in, out) pairs. */
static void say_output_refused(GstCudaFir *self, GstCaps *down, GstCaps *up,
                               const guint *pin, const guint *pout, guint np)
{
  GstBus *bus = gst_element_get_bus(GST_ELEMENT(self));
  if (!bus)
    return;
  gst_object_unref(bus);
  /* the counts downstream accepts, as its caps write them */
  GString *acc = g_string_new(NULL);
  for (guint i = 0; i < gst_caps_get_size(down); i++) {
    const GValue *v =
        gst_structure_get_value(gst_caps_get_structure(down, i), "channels");
    gchar *t = v ? gst_value_serialize(v) : g_strdup("any count");
    if (t && !strstr(acc->str, t))
      g_string_append_printf(acc, "%s%s", acc->len ? " or " : "", t);
    g_free(t);
  }
  /* the pairs upstream can give the input of */
  GString *pairs = g_string_new(NULL);
  guint shown = 0, last = 0, last_in = 0;
  for (guint p = 0; p < np; p++) {
    gboolean offered = !up;
    for (guint i = 0; up && i < gst_caps_get_size(up); i++) {
      const GValue *v =
          gst_structure_get_value(gst_caps_get_structure(up, i), "channels");
      GValue want = G_VALUE_INIT;
      g_value_init(&want, G_TYPE_INT);
      g_value_set_int(&want, (gint)pin[p]);
      offered |= !v || gst_value_intersect(NULL, v, &want);
      g_value_unset(&want);
    }
    if (!offered)
      continue;
    g_string_append_printf(pairs, "%s%u from %u in", shown ? ", " : "",
                           pout[p], pin[p]);
    last = pout[p];
    last_in = pin[p];
    shown++;
  }
  GST_OBJECT_LOCK(self);
  const char *what = self->kernel_file ? self->kernel_file : "kernel";
  gchar *why =
      shown == 1
          ? g_strdup_printf("routing=matrix: %s gives %u output channel%s "
                            "from %u in; downstream accepts %s (an "
                            "audioconvert after cudafir converts the count)",
                            what, last, last == 1 ? "" : "s", last_in,
                            acc->str)
          : g_strdup_printf("routing=matrix: %s gives output channels %s; "
                            "downstream accepts %s (an audioconvert after "
                            "cudafir converts the count)",
                            what, shown ? pairs->str : "for no input count "
                            "upstream offers", acc->str);
  gboolean told = self->told_out && !strcmp(self->told_out, why);
  if (!told) {
    g_free(self->told_out);
    self->told_out = g_strdup(why);
  }
  GST_OBJECT_UNLOCK(self);
  g_string_free(acc, TRUE);
  g_string_free(pairs, TRUE);
  if (!told) {
    GST_WARNING_OBJECT(self, "%s", why);
    CF_GST_POST_WARNING(self, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
                        g_strdup("cudafir: the output's channels do not fit "
                                 "downstream"),
                        why);
  }
  g_free(why);
}

/* ---- conversion ------------------------------------------------------- */

static gboolean ensure_scratch(GstCudaFir *self, size_t frames)
{
  if (frames <= self->scratch_frames)
    return TRUE;
  size_t n = MAX(frames, 1024);
  float *a = g_try_realloc(self->fin, n * self->cin * sizeof(float));
  if (a)
    self->fin = a;
  float *b = g_try_realloc(self->fout, n * MAX(self->cout, 1) * sizeof(float));
  if (b)
    self->fout = b;
  if (!a || !b)
    return FALSE;
  self->scratch_frames = n;
  return TRUE;
}

/* ---- engine ------------------------------------------------------------ */

/* The swaps built for the engine going away (object lock held; they
 * must go before the engine). */
static void drop_swaps(GstCudaFir *self)
{
  g_clear_pointer(&self->pending_prep, cf_swap_prep_free);
  g_clear_pointer(&self->made, cf_swap_prep_free);
}

static void kernels_clear(GstCudaFir *self);

static void free_engine(GstCudaFir *self)
{
  g_mutex_lock(&self->kernel_lock); /* a kernel change may be preparing it */
  GST_OBJECT_LOCK(self);
  drop_swaps(self);
  cf_engine *e = self->engine;
  self->engine = NULL;
  GST_OBJECT_UNLOCK(self);
  g_mutex_unlock(&self->kernel_lock);
  cf_engine_free(e);
  kernels_clear(self);
}

static gboolean apply_kernel_change(GstCudaFir *self, gboolean at_once);
static void reset_gain(GstCudaFir *self);

/* ---- the kernels in force, for a change of item ----------------------- */

/* Crossfades that ended by input frame `at` of the run: their kernel
 * alone from there. */
static void fade_settle(GstCudaFir *self, gint64 at)
{
  while (self->k_to && self->fade_start + (gint64)self->fade_len <= at) {
    cf_kernel_free(self->k_cur);
    self->k_cur = self->k_to;
    self->k_to = self->k_wait;
    self->k_wait = NULL;
    self->fade_start += (gint64)self->fade_len;
    self->fade_len = self->wait_len;
  }
}

/* A reset or drain: every swap completes, the newest kernel alone
 * (engine.h). */
static void fade_complete(GstCudaFir *self)
{
  cf_kernel *newest = self->k_wait   ? self->k_wait
                      : self->k_to ? self->k_to
                                   : self->k_cur;
  if (self->k_cur != newest)
    cf_kernel_free(self->k_cur);
  if (self->k_to != newest)
    cf_kernel_free(self->k_to);
  self->k_cur = newest;
  self->k_to = self->k_wait = NULL;
}

/* The engine took a swap to k (taken) over xf frames at the run's next
 * input frame: as the engine does, after a crossfade running, where it
 * ends, the newest of those waiting. */
static void fade_note(GstCudaFir *self, cf_kernel *k, guint64 xf)
{
  gint64 at = (gint64)self->frames_in;
  fade_settle(self, at);
  if (!self->k_to || self->fade_start >= at) {
    /* none running, or one asked for at this same frame: the newer takes
     * its place (no output of it given yet) */
    cf_kernel_free(self->k_to);
    self->k_to = k;
    self->fade_start = at;
    self->fade_len = xf;
  } else {
    cf_kernel_free(self->k_wait);
    self->k_wait = k;
    self->wait_len = xf;
  }
  fade_settle(self, at); /* xf 0: in force at once */
}

static void pass_clear(GstCudaFir *self)
{
  g_clear_pointer(&self->pass.from, cf_kernel_free);
  g_clear_pointer(&self->pass.to, cf_kernel_free);
  g_clear_pointer(&self->pass.wait, cf_kernel_free);
  self->pass.valid = FALSE;
}

static void kernels_clear(GstCudaFir *self)
{
  g_clear_pointer(&self->k_cur, cf_kernel_free);
  g_clear_pointer(&self->k_to, cf_kernel_free);
  g_clear_pointer(&self->k_wait, cf_kernel_free);
  pass_clear(self);
}

/* At a change of item whose ring-out is carried (push_group_done, before
 * the drain): the crossfade running at the run's input end and the gain
 * schedule, for the next item to go on with (resume_carry). Without
 * memory for the kernels' copies, the next item starts on the newest
 * kernel, as after a discontinuity. */
static void pass_take(GstCudaFir *self)
{
  pass_clear(self);
  gint64 at = (gint64)self->frames_in;
  fade_settle(self, at);
  if (self->k_to) {
    if (!self->k_cur || cf_kernel_copy(self->k_cur, &self->pass.from) ||
        cf_kernel_copy(self->k_to, &self->pass.to) ||
        (self->k_wait && cf_kernel_copy(self->k_wait, &self->pass.wait))) {
      GST_WARNING_OBJECT(self, "no memory to carry a crossfade over the "
                         "change of item: %s", cf_last_error());
      pass_clear(self);
      return;
    }
    self->pass.d = (guint64)(at - self->fade_start);
    self->pass.fade_len = self->fade_len;
    self->pass.wait_len = self->wait_len;
  }
  self->pass.tail = cf_engine_tail(self->engine);
  memcpy(self->pass.gains, self->gains, sizeof self->gains);
  self->pass.n_gains = self->n_gains;
  self->pass.origin = self->gain_origin + self->frames_in;
  self->pass.valid = TRUE;
}

static gboolean ensure_scratch(GstCudaFir *self, size_t frames);
static void note_fallback(GstCudaFir *self);
static void drop_ring(GstCudaFir *self);

/* Input frames x[0..n) kept as the last ones (hist). */
static void hist_add(GstCudaFir *self, const float *x, size_t n)
{
  size_t c = self->cin, want = cf_engine_tail(self->engine);
  if (n == 0 || (want == 0 && self->hist_cap == 0))
    return; /* no frame of history counts (one tap, no latency) */
  if (want > self->hist_cap) { /* a longer kernel: the oldest first */
    float *h = g_try_malloc(want * c * sizeof(float));
    if (!h) {
      self->hist_lost = TRUE;
      return;
    }
    size_t len = self->hist_len, cap = self->hist_cap;
    size_t start = cap ? (self->hist_pos + cap - len) % cap : 0;
    size_t first = MIN(len, cap - start);
    if (len) {
      memcpy(h, self->hist + start * c, first * c * sizeof(float));
      memcpy(h + first * c, self->hist, (len - first) * c * sizeof(float));
    }
    g_free(self->hist);
    self->hist = h;
    self->hist_cap = want;
    self->hist_pos = len % want;
  }
  size_t cap = self->hist_cap;
  if (n >= cap) {
    x += (n - cap) * c;
    n = cap;
  }
  size_t first = MIN(n, cap - self->hist_pos);
  memcpy(self->hist + self->hist_pos * c, x, first * c * sizeof(float));
  memcpy(self->hist, x + first * c, (n - first) * c * sizeof(float));
  self->hist_pos = (self->hist_pos + n) % cap;
  self->hist_len = MIN(self->hist_len + n, cap);
}

/* m frames from `back` frames before the newest end, into out. */
static void hist_read(const GstCudaFir *self, float *out, size_t back,
                      size_t m)
{
  size_t c = self->cin, cap = self->hist_cap;
  size_t start = (self->hist_pos + cap - back) % cap;
  size_t first = MIN(m, cap - start);
  memcpy(out, self->hist + start * c, first * c * sizeof(float));
  memcpy(out + first * c, self->hist, (m - first) * c * sizeof(float));
}

/* The next item follows, its ring-out carried (the engine reset since,
 * on the newest kernel). The items are one signal: the engine is
 * brought back to where the item before ended by replaying its last
 * input frames (the engine's tail of them: every output from there on
 * is exact, as a swap's priming), the kernels as they were in force
 * (a crossfade running goes on; one that started before those frames
 * from silence before them), the outputs thrown away; the ring-out is
 * then in the engine and is not added. A kernel change at the next
 * item's first buffer then crossfades the item before's ring-out too,
 * as anywhere in a stream, and the gain schedule goes on. Where the
 * frames were not kept, the ring-out is added (the engine going on from
 * silence on the newest kernel). */
static void resume_carry(GstCudaFir *self)
{
  if (!self->pass.valid || !self->engine) {
    pass_clear(self);
    return;
  }
  memcpy(self->gains, self->pass.gains, sizeof self->gains);
  self->n_gains = self->pass.n_gains;
  self->gain_origin = self->pass.origin;
  self->resumed = TRUE;
  size_t r = MIN(self->hist_len, self->pass.tail);
  if (self->hist_lost || r == 0) {
    GST_DEBUG_OBJECT(self, "no input kept: the ring-out is added");
    pass_clear(self);
    return;
  }
  cf_engine *e = self->engine;
  gboolean fade = self->pass.to != NULL, wait = self->pass.wait != NULL;
  guint64 d = fade ? self->pass.d : 0;
  guint64 z = d > r ? d - r : 0; /* silence before the frames kept */
  guint64 total = z + r, at = z + r - d; /* where the crossfade starts */
  gboolean swapped = FALSE, waited = FALSE, ours = FALSE;
  cf_status s = CF_OK;
  if (fade) { /* `from` alone: a reset completes the swap */
    s = cf_engine_set_kernel(e, self->pass.from, 0);
    if (s == CF_OK)
      s = cf_engine_reset(e);
  }
  for (guint64 t = 0; s == CF_OK && t < total;) {
    if (fade && !swapped && t == at) {
      s = cf_engine_set_kernel(e, self->pass.to, self->pass.fade_len);
      swapped = TRUE;
      continue;
    }
    /* asked for during that crossfade, after its start (one at the
     * same frame took its place), it waits for the crossfade's end */
    if (wait && swapped && !waited && t > at) {
      s = cf_engine_set_kernel(e, self->pass.wait, self->pass.wait_len);
      waited = TRUE;
      continue;
    }
    guint64 stop = total;
    if (fade && !swapped)
      stop = MIN(stop, at);
    if (wait && swapped && !waited)
      stop = MIN(stop, at + 1);
    size_t m = (size_t)MIN(stop - t, 4096);
    if (!ensure_scratch(self, m)) {
      s = fir_fail("out of memory for %zu frames of replay", m);
      ours = TRUE;
      break;
    }
    size_t zeros = t < z ? (size_t)MIN(z - t, m) : 0;
    memset(self->fin, 0, zeros * self->cin * sizeof(float));
    if (m > zeros)
      hist_read(self, self->fin + zeros * self->cin,
                (size_t)(total - (t + zeros)), m - zeros);
    s = cf_engine_process(e, self->fin, self->fout, m);
    t += m;
  }
  if (s == CF_OK && fade && !swapped) /* at the end: the next item's start */
    s = cf_engine_set_kernel(e, self->pass.to, self->pass.fade_len);
  if (s != CF_OK && !ours)
    fir_engine_error(s); /* the engine's words */
  note_fallback(self);
  if (s != CF_OK) {
    GST_ELEMENT_WARNING(self, STREAM, FAILED,
                        ("cudafir: the filter could not go on into the "
                         "next item; it starts from silence"),
                        ("%s", fir_error));
    cf_engine_reset(e);
    fade_complete(self);
    drop_ring(self);
    pass_clear(self);
    return;
  }
  self->ring_frames = self->ring_pos = 0; /* in the engine now */
  if (fade) {
    g_clear_pointer(&self->k_cur, cf_kernel_free);
    g_clear_pointer(&self->k_to, cf_kernel_free);
    g_clear_pointer(&self->k_wait, cf_kernel_free);
    self->k_cur = g_steal_pointer(&self->pass.from);
    self->k_to = g_steal_pointer(&self->pass.to);
    self->k_wait = g_steal_pointer(&self->pass.wait);
    self->fade_start = -(gint64)d;
    self->fade_len = self->pass.fade_len;
    self->wait_len = self->pass.wait_len;
  }
  GST_DEBUG_OBJECT(self, "going on into the next item: %zu input frames "
                   "replayed (%" G_GUINT64_FORMAT " of silence before), "
                   "%s", r, z,
                   fade ? "the crossfade running there going on"
                        : "no crossfade running");
  pass_clear(self);
}

/* Forget the history: the next buffer starts a new run of timestamps. */
static void restart(GstCudaFir *self)
{
  /* nothing waits across a restart: generate_output hands the parts on
   * before it looks at its input (flush and stop restart too) */
  g_queue_clear_full(&self->parts, (GDestroyNotify)gst_buffer_unref);
  if (self->engine) {
    /* a kernel change waiting for the next buffer goes in first: the
     * reset completes it (engine.h), so the newest kernel alone filters
     * what follows; applied after the reset, it crossfaded from the old
     * kernel after a flush or a discontinuity (QA). Not at a change of
     * item carried over (keep_ring): the next item's first buffer takes
     * it, crossfading (resume_carry) */
    if (!self->keep_ring)
      apply_kernel_change(self, TRUE);
    cf_engine_reset(self->engine);
    fade_complete(self);
  }
  self->resumed = FALSE;
  if (!self->keep_ring) /* a new run: no input before it */
    self->hist_len = self->hist_pos = 0, self->hist_lost = FALSE;
  self->skip = self->latency;
  self->base_ts = GST_CLOCK_TIME_NONE;
  self->base_offset = GST_BUFFER_OFFSET_NONE;
  self->n_anchors = 0;
  self->frames_in = self->frames_out = 0;
  self->discont = TRUE;
  self->goes_on = FALSE;
  self->qos_dropped = FALSE;
  gst_buffer_replace(&self->group_tail, NULL);
  self->carry_len = 0;
  self->told_nonfinite = FALSE;
  self->told_overflow = FALSE;
  reset_gain(self);
}

/* The index of x[0..n)'s first NaN or infinity, or n: a test of the
 * exponent bits that gcc vectorises, in an AVX2 clone where the CPU has
 * it: 0.05-0.1 ns a sample on a 2-vCPU AMD EPYC VM (SSE2 alone:
 * 0.17-0.32), 2048 floats in cache, where the engine takes 7-50 ns a
 * stereo frame (1024-65536 taps); it was the element's largest cost of
 * its own in a profile (perf, bench_gst --only audio). */
__attribute__((target_clones("avx2", "default"))) static size_t
first_nonfinite(const float *x, size_t n)
{
  for (size_t i0 = 0; i0 < n; i0 += 4096) {
    size_t i1 = MIN(n, i0 + 4096);
    uint32_t any = 0;
    for (size_t i = i0; i < i1; i++) {
      uint32_t b;
      memcpy(&b, &x[i], sizeof b);
      any |= (b & 0x7f800000u) == 0x7f800000u;
    }
    for (size_t i = i0; any && i < i1; i++)
      if (!isfinite(x[i]))
        return i;
  }
  return n;
}

static GstClockTime frame_time(const GstCudaFir *self, guint64 k);

/* Where frame k is, for a message: its time, or (buffers without
 * timestamps, as filesrc ! capsfilter gives) its frame, counted from the
 * stream's start. */
static void frame_where(const GstCudaFir *self, guint64 k, char *buf,
                        size_t n)
{
  if (GST_CLOCK_TIME_IS_VALID(self->base_ts))
    g_snprintf(buf, n, "%" GST_TIME_FORMAT,
               GST_TIME_ARGS(frame_time(self, k)));
  else
    g_snprintf(buf, n, "frame %" G_GUINT64_FORMAT, k);
}

/* Float input that holds NaN or infinity is filtered as the engine does
 * it (engine.h: the outputs it reaches are not finite, on the FFT paths
 * those of its whole block, before it too), and said once a run on the
 * bus, naming where: nothing else would tell an application why its
 * output went NaN. x: the n frames about to be filtered. */
static void check_finite(GstCudaFir *self, const float *x, size_t n)
{
  if (self->told_nonfinite || (self->format != GST_AUDIO_FORMAT_F32LE &&
                               self->format != GST_AUDIO_FORMAT_F64LE))
    return;
  size_t at = first_nonfinite(x, n * self->cin);
  if (at == n * self->cin)
    return;
  self->told_nonfinite = TRUE;
  guint64 frame = self->frames_in + at / self->cin;
  char where[64];
  frame_where(self, frame, where, sizeof where);
  GST_ELEMENT_WARNING(
      self, STREAM, FORMAT,
      ("cudafir: the input holds %s at %s (channel %zu)%s",
       isnan(x[at]) ? "NaN" : "infinity", where, at % self->cin,
       /* a finite double past FLT_MAX is infinite once in float32 */
       !isnan(x[at]) && self->format == GST_AUDIO_FORMAT_F64LE
           ? ", or a value beyond float32's range (3.4e38)"
           : ""),
      ("frame %" G_GUINT64_FORMAT " since the last restart; the outputs it "
       "reaches are not finite (on the FFT paths its whole block's, up to "
       "block-size frames before it); said once until a flush",
       frame));
}

/* Finite input whose filtering overflows float gives output that is not
 * finite where the input check said nothing: samples near float's range
 * (3.4e38; the FFT paths sum a block's magnitudes: engine.h), or a kernel
 * and gain that large. Said once a run too, naming where (integer
 * formats store such outputs as silence or full scale, and nothing
 * else tells why). y: n output frames (float, after the gain), the first
 * of them output frame f0, timed as its input frame. */
static void check_output(GstCudaFir *self, const float *y, size_t n,
                         guint64 f0)
{
  if (self->told_nonfinite || self->told_overflow || n == 0)
    return;
  size_t at = first_nonfinite(y, n * self->cout);
  if (at == n * self->cout)
    return;
  self->told_overflow = TRUE;
  guint64 frame = f0 + at / self->cout;
  char where[64];
  frame_where(self, frame, where, sizeof where);
  GST_ELEMENT_WARNING(
      self, STREAM, FORMAT,
      ("cudafir: the output is %s at %s (channel %zu), the input finite: "
       "the filter overflowed float's range",
       isnan(y[at]) ? "NaN" : "infinite", where, at % self->cout),
      ("output frame %" G_GUINT64_FORMAT " since the last restart: input "
       "samples near 3.4e38 (the FFT paths sum a block's magnitudes), or a "
       "kernel and gain that large; said once until a flush",
       frame));
}

/* A buffer that is not whole frames, or one after such a buffer (a byte
 * source without a parser: filesrc ! capsfilter, whose block size need
 * not be a multiple of the frame): *inp becomes the frames made whole
 * with the bytes carried from before, timestamped where the first of them
 * starts (its offset too, counted in frames), and the partial frame at
 * its end is carried on; NULL where no
 * frame is whole yet. So no frame is misread or lost. FALSE: out of
 * memory, or input that does not map, said on the bus (*inp is
 * released). Mapped, not gst_buffer_extract'ed: that copies nothing of
 * memory that does not map, telling no one (and puts NULL in the
 * buffer's place for it), and the bytes of a fresh allocation went out
 * as sound (QA). */
static gboolean join_frames(GstCudaFir *self, GstBuffer **inp)
{
  GstBuffer *in = *inp;
  gsize size = gst_buffer_get_size(in), bpf = self->in_bpf;
  gsize have = self->carry_len, total = have + size;
  gsize whole = total - total % bpf;
  GstClockTime pts = have ? self->carry_pts : GST_BUFFER_PTS(in);
  guint64 offset = have ? self->carry_offset : GST_BUFFER_OFFSET(in);
  *inp = NULL;
  GstMapInfo im;
  if (!gst_buffer_map(in, &im, GST_MAP_READ)) {
    gst_buffer_unref(in);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("cudafir: cannot map input"),
                      (NULL));
    return FALSE;
  }
  if (whole == 0) { /* still inside the first frame */
    memcpy(self->carry + have, im.data, size);
    gst_buffer_unmap(in, &im);
    self->carry_len = total;
    self->carry_pts = pts;
    self->carry_offset = offset;
    gst_buffer_unref(in);
    return TRUE;
  }
  GstBuffer *out = gst_buffer_new_allocate(NULL, whole, NULL);
  GstMapInfo m;
  if (!out || !gst_buffer_map(out, &m, GST_MAP_WRITE)) {
    if (out)
      gst_buffer_unref(out);
    gst_buffer_unmap(in, &im);
    gst_buffer_unref(in);
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("cudafir: out of memory"),
                      (NULL));
    return FALSE;
  }
  memcpy(m.data, self->carry, have);
  memcpy(m.data + have, im.data, whole - have);
  gst_buffer_unmap(out, &m);
  self->carry_len = total - whole;
  memcpy(self->carry, im.data + (whole - have), self->carry_len);
  gst_buffer_unmap(in, &im);
  GstClockTime dur = gst_util_uint64_scale_int_round(whole / bpf, GST_SECOND,
                                                     (gint)self->rate);
  self->carry_pts = GST_CLOCK_TIME_IS_VALID(pts) ? pts + dur : pts;
  self->carry_offset =
      offset != GST_BUFFER_OFFSET_NONE ? offset + whole / bpf : offset;
  gst_buffer_copy_into(out, in, GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_META, 0,
                       -1);
  GST_BUFFER_PTS(out) = pts;
  GST_BUFFER_DURATION(out) = GST_CLOCK_TIME_IS_VALID(pts) ? dur : pts;
  /* in frames from the first buffer's offset (a byte source's: bytes,
   * but 0 at the start) */
  GST_BUFFER_OFFSET(out) = offset;
  GST_BUFFER_OFFSET_END(out) =
      offset != GST_BUFFER_OFFSET_NONE ? offset + whole / bpf : offset;
  gst_buffer_unref(in);
  *inp = out;
  return TRUE;
}

/* The time of input frame k (counted since the restart) by the count of
 * the last anchor at or before frame `by`; GST_CLOCK_TIME_NONE without
 * timestamps. */
static GstClockTime time_by(const GstCudaFir *self, guint64 by, guint64 k)
{
  if (!GST_CLOCK_TIME_IS_VALID(self->base_ts) || self->n_anchors == 0)
    return GST_CLOCK_TIME_NONE;
  guint i = self->n_anchors - 1;
  while (i > 0 && self->anchors[i].frame > by)
    i--;
  guint64 f = self->anchors[i].frame;
  return self->anchors[i].ts +
         (k >= f ? gst_util_uint64_scale_int_round(k - f, GST_SECOND,
                                                   (gint)self->rate)
                 : 0);
}

static GstClockTime frame_time(const GstCudaFir *self, guint64 k)
{
  return time_by(self, k, k);
}

/* Where frames up to k end: frame k - 1's time plus a frame, by the
 * count of its anchor (the next may start elsewhere). */
static GstClockTime end_time(const GstCudaFir *self, guint64 k)
{
  return time_by(self, k ? k - 1 : 0, k);
}

/* Where the next input frame belongs, by the frame count since the
 * last anchor; GST_CLOCK_TIME_NONE without timestamps. */
static GstClockTime input_end(const GstCudaFir *self)
{
  return frame_time(self, self->frames_in);
}

/* The first input frame after the restart: the timeline starts at its
 * timestamp (NONE: none). */
static void anchor_start(GstCudaFir *self, GstClockTime pts)
{
  self->base_ts = pts;
  self->anchors[0].frame = 0;
  self->anchors[0].ts = pts;
  self->n_anchors = GST_CLOCK_TIME_IS_VALID(pts) ? 1 : 0;
}

/* The run's first timestamp on a later buffer, those before it having
 * none (an appsrc stamping from its second buffer on): the timeline
 * starts where it puts the run's first frame, counted back, so that the
 * frames held and all after leave timed (and with offsets, where the
 * buffer has one); the whole run left untimed (QA). Where it cannot be
 * counted back (a time or offset before the frames' length), that stays
 * untimed. */
static void anchor_late(GstCudaFir *self, GstClockTime pts, guint64 offset)
{
  GstClockTime back = gst_util_uint64_scale_int_round(
      self->frames_in, GST_SECOND, (gint)self->rate);
  if (GST_CLOCK_TIME_IS_VALID(pts) && pts >= back) {
    anchor_start(self, pts - back);
    if (self->base_offset == GST_BUFFER_OFFSET_NONE &&
        offset != GST_BUFFER_OFFSET_NONE && offset >= self->frames_in)
      self->base_offset = offset - self->frames_in;
  }
}

/* A buffer whose timestamp is off the frame count by JITTER_TOLERANCE
 * or more (and half a frame, at rates under 500 Hz) but less than a
 * discontinuity: its frames are timed from it. Within it the frame
 * count's times go on: a container's rounding (Matroska keeps
 * milliseconds: each buffer up to 1 ms off the first) moved the times
 * at every buffer, so every input buffer left as two output buffers
 * where the element holds frames back. */
static void anchor_move(GstCudaFir *self, GstClockTime pts)
{
  GstClockTime expect = input_end(self);
  if (!GST_CLOCK_TIME_IS_VALID(pts) || !GST_CLOCK_TIME_IS_VALID(expect))
    return;
  GstClockTimeDiff d = GST_CLOCK_DIFF(expect, pts);
  if (d < 0)
    d = -d;
  if (d < JITTER_TOLERANCE || (GstClockTime)d * 2 * self->rate <= GST_SECOND)
    return;
  guint last = self->n_anchors - 1;
  if (self->anchors[last].frame == self->frames_in) {
    self->anchors[last].ts = pts; /* nothing timed by it yet */
    return;
  }
  /* full (tiny buffers, a long latency, jitter on each): the newest
   * gives way, its frames then timed by the one before it, so that the
   * next move is still measured from this buffer's time; leaving it out
   * summed the moves after it into a false discontinuity (64 moves of
   * 20 ms held: a ring-out mid-stream, the history cut) */
  if (self->n_anchors == MAX_ANCHORS)
    self->n_anchors--;
  GST_LOG_OBJECT(self, "timestamps move by %" G_GINT64_FORMAT " ns at "
                 "frame %" G_GUINT64_FORMAT,
                 GST_CLOCK_DIFF(expect, pts), self->frames_in);
  self->anchors[self->n_anchors].frame = self->frames_in;
  self->anchors[self->n_anchors].ts = pts;
  self->n_anchors++;
}

/* ---- gain ------------------------------------------------------------- */

/* The gain schedule's value at output frame f; *i: the point to search
 * from (frames ascending: the one found is kept for the next). */
static double gain_at(const GstCudaFir *self, guint64 f, guint *i)
{
  guint j = *i;
  while (j + 1 < self->n_gains && self->gains[j + 1].frame <= f)
    j++;
  *i = j;
  if (j + 1 == self->n_gains || f < self->gains[j].frame)
    return self->gains[j].g;
  double t = (double)(f - self->gains[j].frame) /
             (double)(self->gains[j + 1].frame - self->gains[j].frame);
  return self->gains[j].g + (self->gains[j + 1].g - self->gains[j].g) * t;
}

/* `gain` from here on, at once: a restart (flush, discontinuity, new
 * caps), where there is nothing to ramp from. Not under the object
 * lock. */
static void reset_gain(GstCudaFir *self)
{
  GST_OBJECT_LOCK(self);
  double db = self->gain_db;
  self->gain_new = FALSE;
  GST_OBJECT_UNLOCK(self);
  self->gains[0].frame = 0;
  self->gains[0].g = pow(10.0, db / 20.0);
  self->n_gains = 1;
  self->gain_origin = 0;
}

/* A `gain` set since the last buffer: it ramps from the input frame S
 * about to be filtered, as a kernel change crossfades (engine.h): frame
 * S + k, 0 <= k < X (X = `crossfade` when it was set, in frames), gets
 * g0 + (g1 - g0) * (k + 1) / (X + 1), g0 being what frame S - 1 has
 * (mid-ramp: where the last ramp is then), g1 the new gain. Taken at
 * once, whatever a kernel crossfade is doing: gain is applied to the
 * output, so that a fader moved in the middle of a long kernel crossfade
 * is heard when it moves, not when the crossfade ends. */
static void take_gain(GstCudaFir *self)
{
  GST_OBJECT_LOCK(self);
  gboolean fresh = self->gain_new;
  double g1 = pow(10.0, self->gain_db / 20.0);
  guint64 xf = gst_util_uint64_scale_int_round(self->gain_xf, (gint)self->rate,
                                               GST_SECOND);
  self->gain_new = FALSE;
  GST_OBJECT_UNLOCK(self);
  if (!fresh)
    return;
  guint64 s = self->frames_in + self->gain_origin;
  if (s == 0) { /* nothing out yet: nothing to ramp from */
    self->gains[0].frame = 0;
    self->gains[0].g = g1;
    self->n_gains = 1;
    return;
  }
  guint from = 0;
  double g0 = gain_at(self, s - 1, &from);
  guint n = self->n_gains;
  while (n > 0 && self->gains[n - 1].frame >= s - 1)
    n--;
  if (n + 2 > MAX_GAINS) { /* the oldest points in between give way */
    guint drop = n + 2 - MAX_GAINS;
    memmove(&self->gains[1], &self->gains[1 + drop],
            (n - 1 - drop) * sizeof self->gains[0]);
    n -= drop;
  }
  self->gains[n].frame = s - 1;
  self->gains[n].g = g0;
  self->gains[n + 1].frame = s + xf;
  self->gains[n + 1].g = g1;
  self->n_gains = n + 2;
  GST_DEBUG_OBJECT(self, "gain %g -> %g over %" G_GUINT64_FORMAT
                   " frames from frame %" G_GUINT64_FORMAT, g0, g1, xf, s);
}

/* The stream time of output frame f (NONE: not known). */
static GstClockTime stream_time_of(const GstCudaFir *self, guint64 f)
{
  const GstSegment *seg = &GST_BASE_TRANSFORM(self)->segment;
  GstClockTime ts = frame_time(self, f);
  if (!GST_CLOCK_TIME_IS_VALID(ts) || seg->format != GST_FORMAT_TIME)
    return GST_CLOCK_TIME_NONE;
  return gst_segment_to_stream_time(seg, GST_FORMAT_TIME, ts);
}

/* A `gain` under a GstController (a control binding, enabled): its
 * value at every output frame's stream time, as GstControlBinding gives
 * it for times a frame apart, multiplies y[0..n), output frames f0...
 * FALSE where there is none, or it gives no values there (no control
 * point yet). */
static gboolean apply_controlled_gain(GstCudaFir *self, float *y, guint64 f0,
                                      size_t n)
{
  GstControlBinding *b =
      gst_object_get_control_binding(GST_OBJECT(self), "gain");
  if (!b)
    return FALSE;
  gboolean ok = FALSE;
  GstClockTime st = stream_time_of(self, f0);
  if (!gst_control_binding_is_disabled(b) && GST_CLOCK_TIME_IS_VALID(st)) {
    if (n > self->ctl_len) {
      g_free(self->ctl);
      self->ctl = g_try_new(gdouble, n);
      self->ctl_len = self->ctl ? n : 0;
    }
    if (self->ctl)
      ok = gst_control_binding_get_value_array(
          b, st, gst_util_uint64_scale_int_round(1, GST_SECOND, (gint)self->rate),
          (guint)n, self->ctl);
  }
  gst_object_unref(b);
  if (!ok)
    return FALSE;
  size_t c = self->cout;
  double g = 1.0;
  for (size_t k = 0; k < n; k++) {
    g = pow(10.0, self->ctl[k] / 20.0);
    float gf = (float)g;
    for (size_t j = 0; j < c; j++)
      y[k * c + j] *= gf;
  }
  /* the last value goes on where the control ends (unbound, disabled);
   * the property set by gst_object_sync_values is this value already */
  self->gains[0].frame = self->gain_origin + f0 + n;
  self->gains[0].g = g;
  self->n_gains = 1;
  GST_OBJECT_LOCK(self);
  self->gain_new = FALSE;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

/* `gain` on output frames f0 .. f0 + n, y interleaved cout channels:
 * a controlled gain's values, else the schedule (nothing to do at 0 dB,
 * bit for bit). The schedule's points behind them go. */
static void apply_gain(GstCudaFir *self, float *y, guint64 f0, size_t n)
{
  if (n == 0 || apply_controlled_gain(self, y, f0, n))
    return;
  if (self->n_gains == 1 && self->gains[0].g == 1.0)
    return;
  size_t c = self->cout;
  guint i = 0;
  f0 += self->gain_origin;
  for (size_t k = 0; k < n; k++) {
    float gf = (float)gain_at(self, f0 + k, &i);
    for (size_t j = 0; j < c; j++)
      y[k * c + j] *= gf;
  }
  /* points before the last at or before the last frame out go (the
   * next ramp starts from its value) */
  guint keep = 0;
  while (keep + 1 < self->n_gains && self->gains[keep + 1].frame < f0 + n)
    keep++;
  if (keep) {
    memmove(self->gains, self->gains + keep,
            (self->n_gains - keep) * sizeof self->gains[0]);
    self->n_gains -= keep;
  }
}

/* Under a GstController, `gain` (the one controllable property) takes
 * its value for the output about to go, read back as it is applied.
 * Through a binding of our own reference: gst_object_sync_values walks
 * the object's bindings without its lock, and a binding removed by
 * another thread meanwhile (an application ending its automation) was
 * read after it was freed (ASan, GStreamer 1.22). */
static void sync_controlled(GstCudaFir *self)
{
  GstControlBinding *b =
      gst_object_get_control_binding(GST_OBJECT(self), "gain");
  if (!b)
    return;
  GstClockTime st = stream_time_of(self, self->frames_out);
  if (GST_CLOCK_TIME_IS_VALID(st) && !gst_control_binding_is_disabled(b))
    gst_control_binding_sync_values(b, GST_OBJECT(self), st,
                                    GST_CLOCK_TIME_NONE);
  gst_object_unref(b);
}

/* A GstAudioMeta on an input filtered in place (a copy leaves it out:
 * it is tagged) counts the input's samples, not the output's (parts of
 * a cut buffer are shorter: 191 frames said 446); an interleaved buffer
 * needs none, so it goes. */
static void drop_audio_meta(GstBuffer *buf)
{
  GstAudioMeta *am;
  while ((am = gst_buffer_get_audio_meta(buf)) != NULL)
    if (!gst_buffer_remove_meta(buf, (GstMeta *)am))
      break;
}

/* part holds output frames [f0, f1): their input frames' times, and
 * offsets. */
static void stamp_part(GstCudaFir *self, GstBuffer *part, guint64 f0,
                       guint64 f1)
{
  if (GST_CLOCK_TIME_IS_VALID(self->base_ts)) {
    GstClockTime t0 = frame_time(self, f0), t1 = end_time(self, f1);
    GST_BUFFER_PTS(part) = t0;
    GST_BUFFER_DTS(part) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(part) = t1 - t0;
    self->out_end = t1;
  } else {
    GST_BUFFER_PTS(part) = GST_BUFFER_DURATION(part) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DTS(part) = GST_CLOCK_TIME_NONE;
  }
  if (self->base_offset != GST_BUFFER_OFFSET_NONE) {
    GST_BUFFER_OFFSET(part) = self->base_offset + f0;
    GST_BUFFER_OFFSET_END(part) = self->base_offset + f1;
  } else {
    GST_BUFFER_OFFSET(part) = GST_BUFFER_OFFSET_END(part) =
        GST_BUFFER_OFFSET_NONE;
  }
}

/* Anchors before the last at or before f (the next output's) go. */
static void drop_anchors(GstCudaFir *self, guint64 f)
{
  guint keep = 0;
  while (keep + 1 < self->n_anchors && self->anchors[keep + 1].frame <= f)
    keep++;
  if (keep) {
    memmove(self->anchors, self->anchors + keep,
            (self->n_anchors - keep) * sizeof self->anchors[0]);
    self->n_anchors -= keep;
  }
}

/* Output frames [f0, f1) leave in `out`: timestamps (and offsets) of
 * their input frames. Where an anchor starts inside them, `out` is cut
 * there into parts (sharing its memory), each timed exactly. `queue`
 * (generate_output): *outp is the first part and the others wait in
 * self->parts, which generate_output hands to GstBaseTransform's loop
 * next (its pending DISCONT goes on the first); else the parts but the
 * last are pushed here and *outp is the last. Anchors before the last
 * at or before f1 are dropped. The flow of a push that failed, else
 * GST_FLOW_OK (*outp NULL on failure). */
static GstFlowReturn stamp_output(GstCudaFir *self, GstBuffer **outp,
                                  guint64 f0, guint64 f1, gsize bpf,
                                  gboolean queue)
{
  GstBuffer *out = *outp;
  /* mostly no anchor inside: the buffer as it is */
  gboolean inside = FALSE;
  for (guint i = 0; i < self->n_anchors; i++)
    inside |= self->anchors[i].frame > f0 && self->anchors[i].frame < f1;
  if (!inside) {
    stamp_part(self, out, f0, f1);
    drop_anchors(self, f1);
    return GST_FLOW_OK;
  }
  GQueue parts = G_QUEUE_INIT;
  *outp = NULL;
  while (f0 < f1) {
    guint64 cut = f1;
    for (guint i = 0; i < self->n_anchors; i++)
      if (self->anchors[i].frame > f0 && self->anchors[i].frame < cut)
        cut = self->anchors[i].frame;
    GstBuffer *part = out;
    if (cut < f1) {
      /* the buffer itself, its metas and flags with it, is the first
       * part; the rest shares its memory alone (copied with everything,
       * each part carried the flags and metas once more, and a region
       * copy lost the metas that refuse one: GstProtectionMeta) */
      GstBuffer *rest = gst_buffer_copy_region(
          out, GST_BUFFER_COPY_MEMORY, (gsize)(cut - f0) * bpf,
          (gsize)(f1 - cut) * bpf);
      if (!rest) {
        gst_buffer_unref(out);
        g_queue_clear_full(&parts, (GDestroyNotify)gst_buffer_unref);
        return GST_FLOW_ERROR;
      }
      gst_buffer_resize(part, 0, (gssize)((cut - f0) * bpf));
      out = rest;
    }
    stamp_part(self, part, f0, cut);
    g_queue_push_tail(&parts, part);
    if (part == out)
      break;
    f0 = cut;
  }
  drop_anchors(self, f1);
  if (queue) {
    *outp = g_queue_pop_head(&parts);
    GstBuffer *b;
    while ((b = g_queue_pop_head(&parts)))
      g_queue_push_tail(&self->parts, b);
    return GST_FLOW_OK;
  }
  GstFlowReturn ret = GST_FLOW_OK;
  while (g_queue_get_length(&parts) > 1 && ret == GST_FLOW_OK)
    ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self),
                       g_queue_pop_head(&parts));
  if (ret == GST_FLOW_OK)
    *outp = g_queue_pop_head(&parts);
  g_queue_clear_full(&parts, (GDestroyNotify)gst_buffer_unref);
  return ret;
}

/* The latency the element adds, in ns, for the query and the `latency`
 * property alike: 0 without an engine (before caps, after stop: the
 * query said the stopped stream's while the property said 0). Object
 * lock held. */
static GstClockTime our_latency(const GstCudaFir *self)
{
  return self->engine && self->rate
             ? gst_util_uint64_scale_int_round(self->latency, GST_SECOND,
                                               self->rate)
             : 0;
}

/* backend-in-use: the backend filtering now. Object lock held. */
static const gchar *in_use(const GstCudaFir *self)
{
  return self->engine ? cf_backend_name(self->running) : "none";
}

/* The read-only properties, which change by themselves (new caps, stop,
 * a device failing), as they are now. */
typedef struct {
  GstClockTime latency;
  const gchar *in_use; /* cf_backend_name's, or "none" */
} ReadOnly;

static ReadOnly read_only_now(GstCudaFir *self)
{
  GST_OBJECT_LOCK(self);
  ReadOnly now = {our_latency(self), in_use(self)};
  GST_OBJECT_UNLOCK(self);
  return now;
}

/* A notify for each read-only property changed since `was`: an application
 * watching them (notify::latency) hears the change. Not under the object
 * lock. */
static void notify_read_only(GstCudaFir *self, ReadOnly was)
{
  ReadOnly now = read_only_now(self);
  if (now.latency != was.latency)
    g_object_notify(G_OBJECT(self), "latency");
  if (strcmp(now.in_use, was.in_use))
    g_object_notify(G_OBJECT(self), "backend-in-use");
}

static gboolean build_engine(GstCudaFir *self, const GstAudioInfo *info)
{
  ReadOnly was = read_only_now(self);
  guint rate = GST_AUDIO_INFO_RATE(info);
  guint channels = GST_AUDIO_INFO_CHANNELS(info);

  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = channels;
  kernel_params p;
  /* no kernel change between reading the properties and installing */
  g_mutex_lock(&self->kernel_lock);
  GST_OBJECT_LOCK(self);
  cfg.block_size = self->block_size;
  cfg.backend = self->backend;
  cfg.device_id = self->device_id;
  cfg.pipeline_depth = self->pipeline_depth;
  cfg.threads = self->threads;
  params_take(self, &p);
  self->building = TRUE;
  GST_OBJECT_UNLOCK(self);
  cf_kernel *k = build_kernel(&p, rate, channels);
  /* a kernel-file missing or unreadable: as filesrc says it */
  gint code = !k && p.file && (p.read_failed || p.file_error)
                  ? cf_gst_kernel_file_code(p.file)
                  : GST_RESOURCE_ERROR_SETTINGS;
  GST_OBJECT_LOCK(self);
  if (p.read) /* the file read for this rate: kept for the next change */
    params_store(self, &p);
  self->building = k != NULL;
  GST_OBJECT_UNLOCK(self);
  params_clear(&p);
  if (!k) {
    g_mutex_unlock(&self->kernel_lock);
    CF_GST_POST_FATAL(self, &self->posted, GST_RESOURCE_ERROR, code,
                      g_strdup("cudafir: bad kernel"), fir_error);
    return FALSE;
  }
  cf_engine *e = NULL;
  cf_status s = cf_engine_new_audio(&cfg, k, &e);
  if (s != CF_OK) {
    cf_kernel_free(k);
    GST_OBJECT_LOCK(self);
    self->building = FALSE;
    GST_OBJECT_UNLOCK(self);
    g_mutex_unlock(&self->kernel_lock);
    CF_GST_POST_FATAL(
        self, &self->posted, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
        g_strdup_printf("cudafir: cannot filter %u channel%s at %u Hz",
                        channels, channels == 1 ? "" : "s", rate),
        cf_last_error());
    return FALSE;
  }
  size_t latency = cf_engine_latency(e);
  GST_OBJECT_LOCK(self);
  g_clear_pointer(&self->pending, cf_kernel_free); /* built for the old one */
  drop_swaps(self);
  cf_engine *old = self->engine;
  self->engine = e;
  self->building = FALSE;
  g_clear_pointer(&self->posted, g_free);
  self->running = cf_engine_backend(e);
  self->rate = rate;
  self->cin = channels;
  self->cout = cf_engine_out_channels(e);
  self->format = GST_AUDIO_INFO_FORMAT(info);
  self->info = *info;
  self->in_bpf = GST_AUDIO_INFO_BPF(info);
  self->latency = latency;
  GST_OBJECT_UNLOCK(self);
  g_mutex_unlock(&self->kernel_lock);
  cf_engine_free(old);
  kernels_clear(self);
  self->k_cur = k; /* the kernel in force (resume_carry) */
  self->scratch_frames = 0; /* channel counts may have changed */
  g_clear_pointer(&self->hist, g_free); /* so has the frame's size */
  self->hist_cap = self->hist_len = self->hist_pos = 0;
  restart(self);
  GST_INFO_OBJECT(self, "%s, latency %zu frames", cf_engine_describe(e),
                  latency);
  notify_read_only(self, was);
  /* The latency in time, as the query says it, not in frames: the same
   * block at another rate (caps renegotiated from 48 to 44.1 kHz) is
   * another latency (21.3 ms, then 23.2), and the first format's too
   * (0 before it); neither was posted, so a live pipeline went on with
   * the latency it had configured (QA) */
  if (read_only_now(self).latency != was.latency &&
      !gst_element_post_message(GST_ELEMENT(self),
                                gst_message_new_latency(GST_OBJECT(self))))
    GST_DEBUG_OBJECT(self, "no bus took the latency message");
  return TRUE;
}

/* After an engine call: backend=auto leaves a failing CUDA device for the
 * CPU inside the call, losing nothing (the engine's contract). Say so on
 * the bus, once, and in backend-in-use. */
static void note_fallback(GstCudaFir *self)
{
  cf_backend now = cf_engine_backend(self->engine);
  GST_OBJECT_LOCK(self);
  cf_backend was = self->running;
  self->running = now;
  GST_OBJECT_UNLOCK(self);
  if (now == was)
    return;
  GST_ELEMENT_WARNING(self, RESOURCE, FAILED,
                      ("cudafir: the %s backend failed; filtering goes on "
                       "on the %s, nothing lost",
                       cf_backend_name(was), cf_backend_name(now)),
                      ("%s; now: %s",
                       cf_engine_fallback_reason(self->engine)
                           ? cf_engine_fallback_reason(self->engine)
                           : "no reason given",
                       cf_engine_describe(self->engine)));
  g_object_notify(G_OBJECT(self), "backend-in-use");
}

/* The ring-out carried over a change of item, dropped: a flush, a
 * stop, a discontinuity, new caps, a segment elsewhere, EOS. */
static void drop_ring(GstCudaFir *self)
{
  self->ring_frames = self->ring_pos = 0;
  self->ring_pending = self->pend_loop = FALSE;
  if (!self->keep_ring)
    pass_clear(self);
}

/* Add the carried ring-out to the next `frames` output frames y. */
static void add_ring(GstCudaFir *self, float *y, size_t frames)
{
  if (self->ring_pending || self->ring_pos >= self->ring_frames)
    return;
  size_t k = MIN(frames, self->ring_frames - self->ring_pos);
  const float *c = self->ring + self->ring_pos * self->cout;
  for (size_t i = 0; i < k * self->cout; i++)
    y[i] += c[i];
  self->ring_pos += k;
}

/* Keep frames y[0..n) as the ring-out to carry (keep_ring); FALSE when
 * out of memory (nothing carried then). */
static gboolean save_ring(GstCudaFir *self, const float *y, size_t n)
{
  size_t need = n * self->cout;
  if (need > self->ring_cap) {
    float *r = g_try_realloc(self->ring, need * sizeof(float));
    if (!r) {
      drop_ring(self);
      return FALSE;
    }
    self->ring = r;
    self->ring_cap = need;
  }
  memcpy(self->ring, y, need * sizeof(float));
  self->ring_frames = n;
  self->ring_pos = 0;
  return TRUE;
}

static GstFlowReturn push_held_run(GstCudaFir *self, gboolean ring_out,
                                   GstClockTime until, GstBuffer **keep);

/* push_held_run; the run ending there, what is left of a ring-out carried
 * into it goes too (it rang on past where the run's output stops: a
 * loop's segment end, a discontinuity), unless a new one is kept for the
 * next item (keep_ring) */
static GstFlowReturn push_held(GstCudaFir *self, gboolean ring_out,
                               GstClockTime until, GstBuffer **keep)
{
  GstFlowReturn r = push_held_run(self, ring_out, until, keep);
  if (!self->keep_ring)
    drop_ring(self);
  return r;
}

/* Push what the engine still holds: the `latency` frames behind the
 * input, and with `ring_out` the kernel's ring-out too, but none of the
 * ring-out past `until` (where the stream resumes after a discontinuity;
 * GST_CLOCK_TIME_NONE: no limit): output timestamps overlap no more than
 * the input's do. With `keep`, the ring-out past the input's end is not
 * pushed but left there, timed (NULL: none). A ring-out carried into
 * the run is added to what goes out; with keep_ring, the ring-out past the
 * input's end is kept in `ring` for the next item (and goes out only as
 * `keep` asks). Then restart. */
static GstFlowReturn push_held_run(GstCudaFir *self, gboolean ring_out,
                                   GstClockTime until, GstBuffer **keep)
{
  GstFlowReturn ret = GST_FLOW_OK;
  if (!self->engine || self->frames_in == 0) {
    restart(self);
    return ret;
  }
  size_t tail = cf_engine_tail(self->engine);
  /* never more than what the held input accounts for, unless draining */
  size_t held = self->latency - MIN(self->latency, self->skip);
  size_t want = ring_out ? tail - MIN(tail, self->skip) : held;
  /* Without the ring-out, only the first `latency` frames of the drain
   * are wanted (want > 0: skip < latency): the input continued by that
   * much silence gives them, the drain's own arithmetic, without
   * computing the whole tail and throwing it away: a 65536-tap kernel's
   * tail cost 2.8 ms at every discontinuity and EOS (latency + 65535
   * frames against 1023; now 0.04 ms), a 10 s reverb's 38 ms (now 0.47;
   * engine alone, stereo, one thread). */
  size_t need = ring_out ? tail : self->latency;
  if (tail == 0 || want == 0 || !ensure_scratch(self, need)) {
    restart(self);
    return ret;
  }
  size_t got = 0;
  cf_status s;
  if (ring_out) {
    s = cf_engine_drain(self->engine, self->fout, self->scratch_frames, &got);
  } else {
    memset(self->fin, 0, need * self->cin * sizeof(float));
    s = cf_engine_process(self->engine, self->fin, self->fout, need);
    got = need;
  }
  note_fallback(self);
  if (s != CF_OK) {
    GST_ELEMENT_WARNING(self, STREAM, FAILED, ("cudafir: drain failed"),
                        ("%s", cf_last_error()));
    restart(self);
    return ret;
  }
  size_t skip = MIN(self->skip, got);
  want = MIN(want, got - skip);
  if (GST_CLOCK_TIME_IS_VALID(until) &&
      GST_CLOCK_TIME_IS_VALID(self->base_ts) && self->n_anchors) {
    /* the frame `until` falls on, by the last anchor's count (0: at or
     * before that anchor) */
    guint last = self->n_anchors - 1;
    guint64 at = until > self->anchors[last].ts
                     ? self->anchors[last].frame +
                           gst_util_uint64_scale_int_round(
                               until - self->anchors[last].ts,
                               (gint)self->rate, GST_SECOND)
                     : 0;
    size_t room = at > self->frames_out ? (size_t)(at - self->frames_out) : 0;
    /* Resumed at or before the input's end (input-selector switching live
     * sources: 3-19 ms back), the held frames still go out, their input
     * having come, but no ring-out: the input's own overlap, nothing
     * added. Only a resume ahead left the ring-out room; one before had
     * it all, the whole tail (latency + L - 1 frames) overlapping the
     * next stream (QA: 135 ms with 6000 taps, resumed 10 ms back). */
    want = MIN(want, MAX(room, held));
  }
  if (want == 0) { /* the stream resumes where the held output ends */
    restart(self);
    return ret;
  }
  apply_gain(self, self->fout + skip * self->cout, self->frames_out, want);
  add_ring(self, self->fout + skip * self->cout, want);
  if (self->keep_ring) { /* a change of item: the ring-out carried over */
    drop_ring(self);
    if (want > held)
      save_ring(self, self->fout + (skip + held) * self->cout, want - held);
    if (!keep)
      want = held;
    if (want == 0) {
      restart(self);
      return ret;
    }
  }
  gsize bpf = (gsize)self->cout * GST_AUDIO_FORMAT_INFO_WIDTH(
                  gst_audio_format_get_info(self->format)) / 8;
  GstAllocator *alloc = cf_gst_host_allocator_get();
  GstBuffer *out = gst_buffer_new_allocate(alloc, want * bpf, NULL);
  gst_object_unref(alloc);
  if (!out) {
    restart(self);
    return GST_FLOW_ERROR;
  }
  GstMapInfo map;
  if (!gst_buffer_map(out, &map, GST_MAP_WRITE)) {
    gst_buffer_unref(out);
    restart(self);
    return GST_FLOW_ERROR;
  }
  check_output(self, self->fout + skip * self->cout, want, self->frames_out);
  cf_gst_from_float(self->format, self->fout + skip * self->cout, map.data,
                    want * self->cout);
  gst_buffer_unmap(out, &map);
  if (self->discont)
    GST_BUFFER_FLAG_SET(out, GST_BUFFER_FLAG_DISCONT);
  GstBuffer *rest = NULL;
  if (keep && want > held) { /* the ring-out waits */
    if (held == 0) {
      rest = out;
      out = NULL;
    } else {
      rest = gst_buffer_copy_region(out, GST_BUFFER_COPY_MEMORY, held * bpf,
                                    (want - held) * bpf);
      if (!rest) {
        gst_buffer_unref(out);
        restart(self);
        return GST_FLOW_ERROR;
      }
      gst_buffer_resize(out, 0, (gssize)(held * bpf));
    }
    GstClockTime end = self->out_end; /* what was pushed ends there */
    stamp_part(self, rest, self->frames_out + held, self->frames_out + want);
    self->out_end = end;
    want = held;
  }
  GST_DEBUG_OBJECT(self, "pushing %zu residual frames%s", want,
                   rest ? ", the ring-out kept" : "");
  /* the held frames timed as their input frames were (the ring-out, past
   * the input, by the last anchor's count) */
  GstFlowReturn r = out ? stamp_output(self, &out, self->frames_out,
                                       self->frames_out + want, bpf, FALSE)
                        : GST_FLOW_OK;
  restart(self);
  if (keep)
    *keep = rest;
  if (r != GST_FLOW_OK || !out)
    return r;
  return gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), out);
}

/* STREAM_GROUP_DONE (a gapless player ending an item: playbin, the next
 * item's STREAM_START and SEGMENT after it), or (`for_eos` FALSE) that
 * segment where no STREAM_GROUP_DONE came (playbin3, concat): the
 * group's frames all go out before it, the held ones too (they came
 * after it, in the next stream, as the new segment pushed them). The
 * next item starts where the input ended, so the ring-out would overlap
 * it: it is kept (ring) to be added to the next item's first frames
 * where that item starts there in running time, the items playing as one
 * signal (a live album's tracks); with `drain` and `for_eos` also as a
 * buffer for an EOS that may follow instead (the last item: it goes out
 * then, as at an EOS alone). Anything else drops both. */
static GstFlowReturn push_group_done(GstCudaFir *self, gboolean for_eos)
{
  if (!self->engine || !self->frames_in)
    return GST_FLOW_OK;
  GST_OBJECT_LOCK(self);
  gboolean drain = self->drain && for_eos;
  GST_OBJECT_UNLOCK(self);
  const GstSegment *seg = &GST_BASE_TRANSFORM(self)->segment;
  if (seg->rate < 0)
    drain = FALSE; /* as push_residue */
  /* the ring-out, drain or not, is carried into the next item if it
   * starts where this one ended in running time (item_follows) */
  GstClockTime rt = GST_CLOCK_TIME_NONE;
  if (seg->rate > 0 && seg->format == GST_FORMAT_TIME &&
      GST_CLOCK_TIME_IS_VALID(self->base_ts))
    rt = gst_segment_to_running_time(seg, GST_FORMAT_TIME, input_end(self));
  gboolean carry = GST_CLOCK_TIME_IS_VALID(rt);
  GstBuffer *tail = NULL;
  if (carry) {
    /* the items are one signal: a kernel or gain set since the last
     * buffer takes effect here, at the next frame of it, crossfading
     * (ramping) through the ring-out and on into the next item as
     * anywhere in a stream; the ring-out was the old kernel's and
     * gain's, the next item on the new ones at once (QA) */
    take_gain(self);
    apply_kernel_change(self, FALSE);
    pass_take(self);
  }
  self->keep_ring = carry;
  GstFlowReturn r = push_held(self, drain || carry, GST_CLOCK_TIME_NONE,
                              drain ? &tail : NULL);
  self->keep_ring = FALSE;
  self->group_tail = tail;
  /* pending with no ring-out too (a kernel of one tap): the next item's
   * segment still says whether the output goes on (no DISCONT) */
  self->ring_pending = carry;
  self->pend_rt = rt;
  return r;
}

/* A segment starting where an item ended, at running time `rt` (within
 * a millisecond: a container's rounding), forward: the next item of a
 * gapless playlist, played back to back. */
static gboolean item_follows(GstClockTime rt, const GstSegment *seg)
{
  if (seg->format != GST_FORMAT_TIME || seg->rate <= 0 ||
      !GST_CLOCK_TIME_IS_VALID(rt))
    return FALSE;
  guint64 at = gst_segment_to_running_time(seg, GST_FORMAT_TIME, seg->start);
  if (!GST_CLOCK_TIME_IS_VALID(at))
    return FALSE;
  GstClockTimeDiff d = GST_CLOCK_DIFF(rt, at);
  return d <= (GstClockTimeDiff)GST_MSECOND &&
         d >= -(GstClockTimeDiff)GST_MSECOND;
}

/* The end of a stream (EOS, new caps, a discontinuity: the stream goes on
 * at `until`, or GST_CLOCK_TIME_NONE where that is not known): the
 * ring-out goes out too when `drain` asks for it, except in reverse
 * playback (a segment of rate < 0): there the chunks come latest first,
 * each a discontinuity ending where the chunk before it started, so a
 * chunk's ring-out would repeat the time that chunk has played already
 * (a 3000-tap kernel on 100 ms chunks: 62% more frames out than in,
 * overlapping). */
static GstFlowReturn push_residue(GstCudaFir *self, GstClockTime until)
{
  GST_OBJECT_LOCK(self); /* set_property writes it from any thread */
  gboolean drain = self->drain;
  GST_OBJECT_UNLOCK(self);
  if (GST_BASE_TRANSFORM(self)->segment.rate < 0)
    drain = FALSE;
  return push_held(self, drain, until, NULL);
}

/* Apply a kernel change made while streaming (checked when it was set):
 * at the next buffer, or `at_once` (no crossfade: the caller resets the
 * engine, which completes the swap). Whether one was waiting. */
static gboolean apply_kernel_change(GstCudaFir *self, gboolean at_once)
{
  GST_OBJECT_LOCK(self);
  cf_kernel *k = self->pending;
  cf_swap_prep *p = self->pending_prep;
  self->pending = NULL;
  self->pending_prep = NULL;
  guint64 xf = gst_util_uint64_scale_int_round(self->pending_crossfade,
                                               self->rate, GST_SECOND);
  GST_OBJECT_UNLOCK(self);
  if (!k && !p)
    return FALSE;
  if (at_once)
    xf = 0;
  /* a built swap replays only the buffers since it was built */
  cf_status s = p ? cf_engine_set_prepared(self->engine, p, (size_t)xf)
                  : cf_engine_set_kernel(self->engine, k, (size_t)xf);
  if (s == CF_OK && k)
    fade_note(self, k, xf); /* the kernels in force (resume_carry) */
  else
    cf_kernel_free(k);
  if (p) { /* its memory goes back in the setter's thread */
    GST_OBJECT_LOCK(self);
    cf_swap_prep *older = self->made;
    self->made = p;
    GST_OBJECT_UNLOCK(self);
    cf_swap_prep_free(older); /* never: one change is built at a time */
  }
  note_fallback(self); /* the device may have failed the swap */
  if (s != CF_OK)
    CF_GST_POST_WARNING(self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                        g_strdup("cudafir: kernel change refused, keeping the "
                                 "current kernel"),
                        cf_last_error());
  else
    GST_INFO_OBJECT(self, "kernel swapped (crossfade %" G_GUINT64_FORMAT
                    " frames)", xf);
  return TRUE;
}

/* ---- GstBaseTransform ---------------------------------------------------- */

static gboolean gst_cuda_fir_setup(GstAudioFilter *filter,
                                 const GstAudioInfo *info)
{
  GstCudaFir *self = GST_CUDA_FIR(filter);
  /* the same format again (elements resend caps): keep the stream going */
  if (self->engine && gst_audio_info_is_equal(info, &self->info))
    return TRUE;
  return build_engine(self, info);
}

/* The (in, out) channel pairs the kernel set allows (64 at most); 0:
 * the count stays. */
static guint kernel_pairs(GstCudaFir *self, guint pin[64], guint pout[64])
{
  guint np = 0;
  GST_OBJECT_LOCK(self);
  if (self->mat_in) {
    pin[0] = self->mat_in;
    pout[0] = self->mat_out;
    np = 1;
  } else if (self->mat_n) {
    for (guint c = 1; c <= MIN(self->mat_n, 256u) && np < 64; c++)
      if (self->mat_n % c == 0 && self->mat_n / c <= 256) {
        pin[np] = c;
        pout[np++] = self->mat_n / c;
      }
  }
  GST_OBJECT_UNLOCK(self);
  return np;
}

/* Matrix routing maps C_in channels to C_out: caps change accordingly. */
static GstCaps *gst_cuda_fir_transform_caps(GstBaseTransform *bt,
                                          GstPadDirection dir, GstCaps *caps,
                                          GstCaps *filter)
{
  GstCudaFir *self = GST_CUDA_FIR(bt);
  guint pin[64], pout[64], np = kernel_pairs(self, pin, pout);
  GstCaps *res;
  if (np == 0) {
    res = gst_caps_ref(caps);
  } else {
    res = gst_caps_new_empty();
    /* see below */
    /* a pad being linked, or links checked before streaming (inactive
     * pads: gst_parse_launch links a capsfilter after the element once
     * both its pads are linked, and checks the caps against those the
     * element gives through it) */
    gboolean link_check = !gst_pad_is_linked(bt->sinkpad) ||
                          !gst_pad_is_linked(bt->srcpad) ||
                          !GST_PAD_IS_ACTIVE(bt->srcpad);
    for (guint i = 0; i < gst_caps_get_size(caps); i++) {
      GstStructure *st = gst_caps_get_structure(caps, i);
      const GValue *ch = gst_structure_get_value(st, "channels");
      for (guint p = 0; p < np; p++) {
        guint from = dir == GST_PAD_SINK ? pin[p] : pout[p];
        guint to = dir == GST_PAD_SINK ? pout[p] : pin[p];
        GValue want = G_VALUE_INIT;
        g_value_init(&want, G_TYPE_INT);
        g_value_set_int(&want, (gint)from);
        /* gst_value_can_intersect would compare the types only: every
         * pair passed, and downstream was offered (and took) the output
         * count of another input count (QA: a 4-kernel file with
         * routing=matrix on stereo announced 4 channels, not 2) */
        gboolean fits = !ch || gst_value_intersect(NULL, ch, &want);
        g_value_unset(&want);
        if (!fits)
          continue;
        GstStructure *n = gst_structure_copy(st);
        gst_structure_set(n, "channels", G_TYPE_INT, (gint)to, NULL);
        /* The same count (per-channel kernels, a square matrix): channel
         * k stays channel k, its position with it. Another count: the
         * input may have any positions, and the output takes those
         * downstream asks for (a matrix's outputs are what its rows make
         * them), else the count's usual layout (fixate_caps; 5.1 for
         * six, as apply and ffmpeg label them). Every count over 2 was
         * made unpositioned both ways: a 5.1 stream with its six kernels
         * did not link after decodebin, nor downmix after; then an
         * upmix's output was unpositioned, which audioconvert cannot
         * remix nor flacenc take (QA). */
        if (to != from)
          gst_structure_remove_field(n, "channel-mask");
        res = gst_caps_merge_structure(res, n);
      }
      /* Asked while nothing is linked on the side the caps are for: a
       * link check (gst-launch, gst_element_link), not a negotiation.
       * Input counts the kernel set does not take are offered last (and
       * outputs for an input count it does not take), so that the link
       * holds: it failed, "can't handle caps", and a gst-launch user met
       * the reason nowhere (QA: audio/x-raw,channels=2 ! cudafir
       * kernel=<1,2,3,4> routing=matrix). Negotiation then says why (a
       * warning below, or the caps event's element error). Once linked,
       * a peer is offered the counts that fit alone, which an
       * audioconvert picks from. */
      /* Likewise outputs downstream may not take (a capsfilter after the
       * element): the link holds, negotiation says why
       * (say_output_refused). */
      if (link_check) {
        GstStructure *n = gst_structure_copy(st);
        gst_structure_remove_fields(n, "channels", "channel-mask", NULL);
        res = gst_caps_merge_structure(res, n);
      }
    }
  }
  if (filter) {
    GstCaps *t = gst_caps_intersect_full(filter, res,
                                         GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(res);
    res = t;
  }
  GST_DEBUG_OBJECT(self, "transformed %" GST_PTR_FORMAT " to %" GST_PTR_FORMAT,
                   caps, res);
  if (np && dir == GST_PAD_SINK && gst_caps_is_empty(res))
    say_channels_refused(self, caps);
  return res;
}

/* Output caps whose positions are still open (a matrix changing the
 * count): those downstream takes first (GstBaseTransform asks it nothing
 * once the rest is fixed), else, over 2 channels, the count's usual
 * layout (an unpositioned 0 where GStreamer has none for it). A mask
 * downstream gives is taken only where it fits the count (0: unpositioned).
 * Stereo and mono too: a downmix to 2 left the mask out, and downstream
 * asking for channel-mask=0x3 (an appsink's or a capsfilter's caps) was
 * not-negotiated (QA). */
static GstCaps *gst_cuda_fir_fixate_caps(GstBaseTransform *bt,
                                         GstPadDirection dir, GstCaps *caps,
                                         GstCaps *othercaps)
{
  (void)caps;
  othercaps = gst_caps_truncate(othercaps);
  othercaps = gst_caps_make_writable(othercaps);
  GstStructure *st = gst_caps_get_structure(othercaps, 0);
  gint ch = 0;
  if (dir == GST_PAD_SINK && gst_structure_get_int(st, "channels", &ch) &&
      ch > 0 && !gst_structure_has_field(st, "channel-mask")) {
    GstCaps *peer = gst_pad_peer_query_caps(bt->srcpad, othercaps);
    guint64 mask = 0;
    gboolean down =
        peer && !gst_caps_is_empty(peer) && !gst_caps_is_any(peer) &&
        gst_structure_get(gst_caps_get_structure(peer, 0), "channel-mask",
                          GST_TYPE_BITMASK, &mask, NULL) &&
        (mask == 0 || __builtin_popcountll(mask) == ch);
    if (peer)
      gst_caps_unref(peer);
    if (down)
      GST_DEBUG_OBJECT(bt, "downstream's positions first: 0x%" G_GINT64_MODIFIER
                       "x", mask);
    else
      mask = ch > 2 ? gst_audio_channel_get_fallback_mask(ch) : 0;
    if (down || ch > 2)
      gst_structure_set(st, "channel-mask", GST_TYPE_BITMASK, mask, NULL);
  }
  return gst_caps_fixate(othercaps);
}

/* Caps whose channel count the kernel set cannot take: the caps query
 * (transform_caps) leaves that count out, so upstream that can convert
 * (audioconvert) picks one that fits; caps fixed upstream with such a
 * count are still accepted here, so that the caps event reaches
 * sink_event, whose element error names why (channels_refused), where a
 * refusal here would end the stream as "not negotiated", unexplained. */
static gboolean gst_cuda_fir_accept_caps(GstBaseTransform *bt,
                                         GstPadDirection dir, GstCaps *caps)
{
  if (GST_BASE_TRANSFORM_CLASS(gst_cuda_fir_parent_class)
          ->accept_caps(bt, dir, caps))
    return TRUE;
  GstCudaFir *self = GST_CUDA_FIR(bt);
  gint ch = 0;
  if (dir != GST_PAD_SINK || !gst_caps_is_fixed(caps) ||
      !gst_structure_get_int(gst_caps_get_structure(caps, 0), "channels",
                             &ch) ||
      ch <= 0)
    return FALSE;
  GST_OBJECT_LOCK(self);
  gchar *why = channels_refused(self, (guint)ch);
  GST_OBJECT_UNLOCK(self);
  gboolean named = why != NULL;
  g_free(why);
  /* the rest of the caps must fit the template */
  if (named) {
    GstCaps *tmpl = gst_pad_get_pad_template_caps(bt->sinkpad);
    named = gst_caps_can_intersect(caps, tmpl);
    gst_caps_unref(tmpl);
  }
  return named;
}

static gboolean gst_cuda_fir_transform_size(GstBaseTransform *bt,
                                          GstPadDirection dir, GstCaps *caps,
                                          gsize size, GstCaps *othercaps,
                                          gsize *othersize)
{
  GstAudioInfo a, b;
  if (!gst_audio_info_from_caps(&a, caps) ||
      !gst_audio_info_from_caps(&b, othercaps) || a.bpf == 0)
    return FALSE;
  *othersize = size / (gsize)a.bpf * (gsize)b.bpf;
  return TRUE;
}

static gboolean gst_cuda_fir_start(GstBaseTransform *bt)
{
  GstCudaFir *self = GST_CUDA_FIR(bt);
  /* a value refused while stopped: the stream would run without it
   * (unfiltered where it was the only kernel) */
  if (!cf_gst_refusals_start(GST_ELEMENT(self), "cudafir", self->refusals))
    return FALSE;
  restart(self);
  GST_OBJECT_LOCK(self);
  self->started = TRUE;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static gboolean gst_cuda_fir_stop(GstBaseTransform *bt)
{
  GstCudaFir *self = GST_CUDA_FIR(bt);
  ReadOnly was = read_only_now(self);
  free_engine(self);
  GST_OBJECT_LOCK(self);
  self->started = FALSE;
  self->latency = 0; /* nothing filtered: nothing added (our_latency) */
  self->rate = 0;
  GST_OBJECT_UNLOCK(self);
  notify_read_only(self, was);
  g_queue_clear_full(&self->parts, (GDestroyNotify)gst_buffer_unref);
  gst_buffer_replace(&self->group_tail, NULL);
  drop_ring(self);
  g_clear_pointer(&self->ring, g_free);
  self->ring_cap = 0;
  g_clear_pointer(&self->stream_id, g_free);
  self->new_item = FALSE;
  g_clear_pointer(&self->posted, g_free);
  g_clear_pointer(&self->fin, g_free);
  g_clear_pointer(&self->fout, g_free);
  self->scratch_frames = 0;
  g_clear_pointer(&self->hist, g_free);
  self->hist_cap = self->hist_len = self->hist_pos = 0;
  return TRUE;
}

static GstFlowReturn gst_cuda_fir_generate_output(GstBaseTransform *bt,
                                                  GstBuffer **outbuf);

/* A GAP event while frames are held: the gap is silence, through which
 * the held frames and the kernel's tail ring out. The silence runs from
 * where the stream is to the gap's end, the gap starting before the
 * stream's end or after it by up to JUMP_TOLERANCE as a buffer may: a jitter
 * buffer's lost-packet gap is an estimate (rtpjitterbuffer's: a GAP
 * starting 1.47 ms before the last buffer's end, the next buffer at its
 * end), and silence of the gap's duration from the stream's end ran
 * past the next buffer, which came out overlapping it (QA). Up to the
 * engine's tail of it is filtered as zeros, as a buffer would be; the
 * rest, if any, follows as a GAP event after the held frames, and the
 * stream restarts at the next buffer (its state is all zeros by then).
 * A gap the stream's frames already cover is nothing more. TRUE when
 * the event was taken care of here; FALSE: forward it as it is. */
static gboolean gap_as_silence(GstCudaFir *self, GstEvent *ev,
                               GstFlowReturn *ret)
{
  GstBaseTransform *bt = GST_BASE_TRANSFORM(self);
  GstClockTime ts, dur;
  gst_event_parse_gap(ev, &ts, &dur);
  *ret = GST_FLOW_OK;
  if (!self->engine || !self->frames_in ||
      !GST_CLOCK_TIME_IS_VALID(self->base_ts) || !GST_CLOCK_TIME_IS_VALID(ts))
    return FALSE;
  GstClockTime expect = input_end(self);
  GstClockTimeDiff d = GST_CLOCK_DIFF(expect, ts);
  /* A gap starting further back (by more than a buffer may move) but
   * reaching the stream's end or not: the frames sent cover its start,
   * and the rest is silence from the stream's end as for one nearer. As a
   * discontinuity at its start, it cut the ring-out there, and a gap
   * wholly in the past restarted the history, the buffer after it
   * following the stream all the same (QA: gaps 41 ms to 200 ms back). */
  if (!GST_CLOCK_TIME_IS_VALID(dur) || dur == 0 || d > JUMP_TOLERANCE) {
    /* not where the stream is: a discontinuity */
    *ret = push_residue(self, ts);
    return FALSE;
  }
  GstClockTime end = ts + dur;
  if (end <= expect) { /* covered by the frames before it */
    GST_DEBUG_OBJECT(self,
                     "gap to %" GST_TIME_FORMAT " before the stream's "
                     "end, %" GST_TIME_FORMAT ": nothing to fill",
                     GST_TIME_ARGS(end), GST_TIME_ARGS(expect));
    return TRUE;
  }
  guint64 n = gst_util_uint64_scale_int_round(end - expect, (gint)self->rate,
                                              GST_SECOND);
  if (n == 0)
    return TRUE;
  guint64 k = MIN(n, (guint64)cf_engine_tail(self->engine));
  GstBuffer *zeros = gst_buffer_new_allocate(NULL, k * self->in_bpf, NULL);
  if (!zeros) {
    *ret = push_residue(self, ts);
    return FALSE;
  }
  gst_buffer_memset(zeros, 0, 0, k * self->in_bpf);
  GstClockTime kdur =
      gst_util_uint64_scale_int_round(k, GST_SECOND, (gint)self->rate);
  GST_BUFFER_PTS(zeros) = expect;
  GST_BUFFER_DURATION(zeros) = kdur;
  GST_BUFFER_FLAG_SET(zeros, GST_BUFFER_FLAG_GAP);
  GST_DEBUG_OBJECT(self,
                   "gap of %" G_GUINT64_FORMAT " frames: %" G_GUINT64_FORMAT
                   " filtered as silence",
                   n, k);
  gst_buffer_replace(&bt->queued_buf, NULL);
  bt->queued_buf = zeros; /* generate_output takes it */
  GstBuffer *out = NULL;
  *ret = gst_cuda_fir_generate_output(bt, &out);
  if (*ret == GST_FLOW_OK && out)
    *ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(bt), out);
  else if (out)
    gst_buffer_unref(out);
  /* and the parts it was cut into, if any */
  while (*ret == GST_FLOW_OK && !g_queue_is_empty(&self->parts))
    *ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(bt),
                        g_queue_pop_head(&self->parts));
  g_queue_clear_full(&self->parts, (GDestroyNotify)gst_buffer_unref);
  if (*ret != GST_FLOW_OK || n == k)
    return TRUE;
  /* a longer gap: the held frames (silence by now) go out, then the rest
   * of the gap from where they end. Not the ring-out, even with drain: it
   * is silence the gap covers, and the stream after it starts inside that
   * time. */
  GstClockTime rest = expect + kdur;
  *ret = push_held(self, FALSE, GST_CLOCK_TIME_NONE, NULL);
  if (GST_CLOCK_TIME_IS_VALID(self->out_end) && self->out_end > rest)
    rest = self->out_end;
  if (*ret == GST_FLOW_OK && rest < end)
    gst_pad_push_event(GST_BASE_TRANSFORM_SRC_PAD(bt),
                       gst_event_new_gap(rest, end - rest));
  return TRUE;
}

/* Whether the stream goes on through a new segment: the next input frame
 * (where the frame count puts it) at the same running and stream time in
 * both. Without timestamps, only the same segment again. Another rate in
 * the same direction goes on too (a player's seek without FLUSH to rate
 * 2.0 where the stream is: the samples go on; the history restarted
 * there, a reverb's tail cut, QA); one that turns the direction round
 * does not (reverse playback filters every buffer on its own). */
static gboolean segment_continues(const GstCudaFir *self, const GstSegment *old,
                                  const GstSegment *seg)
{
  if (gst_segment_is_equal(old, seg))
    return TRUE;
  return cf_gst_segment_goes_on(old, seg, input_end(self));
}

/* Where, in the old segment's timestamps, the new one starts playing (its
 * start at its running time); GST_CLOCK_TIME_NONE where that is not in
 * the old segment. */
static GstClockTime segment_resumes_at(const GstSegment *old,
                                       const GstSegment *seg)
{
  if (old->format != GST_FORMAT_TIME || seg->format != GST_FORMAT_TIME)
    return GST_CLOCK_TIME_NONE;
  guint64 rt = gst_segment_to_running_time(
      seg, GST_FORMAT_TIME, seg->rate >= 0 ? seg->start : seg->stop);
  return GST_CLOCK_TIME_IS_VALID(rt)
             ? gst_segment_position_from_running_time(old, GST_FORMAT_TIME, rt)
             : GST_CLOCK_TIME_NONE;
}

/* Where the segment that SEGMENT_DONE ends stops playing, the next one
 * (a looping player's segment seek) starting there in running time: its
 * stop or, a loop seek to 0 having none (wavparse keeps stop NONE), the
 * end SEGMENT_DONE names, else where the input ended. The ring-out went
 * on past it and overlapped the next loop (QA: playbin looping a WAV). */
static GstClockTime segment_done_at(const GstCudaFir *self, GstEvent *ev)
{
  const GstSegment *seg = &GST_BASE_TRANSFORM(self)->segment;
  if (seg->format != GST_FORMAT_TIME || seg->rate < 0)
    return GST_CLOCK_TIME_NONE; /* reverse: no ring-out anyway */
  if (GST_CLOCK_TIME_IS_VALID(seg->stop))
    return seg->stop;
  GstFormat fmt;
  gint64 pos;
  gst_event_parse_segment_done(ev, &fmt, &pos);
  if (fmt == GST_FORMAT_TIME && pos >= 0 &&
      GST_CLOCK_TIME_IS_VALID((GstClockTime)pos))
    return (GstClockTime)pos;
  return input_end(self);
}

/* Caps pushed with no caps query before them (an appsrc with caps set,
 * a harness, a source that decides alone): where downstream takes none
 * of the output counts the matrix gives for them, GstBaseTransform
 * fails them not-negotiated, and only the query said why
 * (gst_cuda_fir_query): the stream failed with no word (QA). The same
 * warning here, naming the counts, once (say_output_refused). */
static void say_caps_refused_downstream(GstCudaFir *self, GstCaps *caps)
{
  GstBaseTransform *bt = GST_BASE_TRANSFORM(self);
  guint pin[64], pout[64], np = kernel_pairs(self, pin, pout);
  if (np == 0 || !gst_caps_is_fixed(caps))
    return;
  GstCaps *out = gst_cuda_fir_transform_caps(bt, GST_PAD_SINK, caps, NULL);
  GstCaps *down = gst_pad_peer_query_caps(bt->srcpad, NULL);
  if (down && !gst_caps_is_empty(down) && !gst_caps_is_any(down) &&
      !gst_caps_can_intersect(out, down))
    say_output_refused(self, down, caps, pin, pout, np);
  gst_caps_unref(out);
  if (down)
    gst_caps_unref(down);
}

static gboolean gst_cuda_fir_sink_event(GstBaseTransform *bt, GstEvent *ev)
{
  GstCudaFir *self = GST_CUDA_FIR(bt);
  /* a group's kept ring-out is for an EOS right after it: the stream
   * going on in any way drops it (a buffer: generate_output) */
  if (self->group_tail && (GST_EVENT_TYPE(ev) == GST_EVENT_CAPS ||
                           GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT ||
                           GST_EVENT_TYPE(ev) == GST_EVENT_GAP))
    gst_buffer_replace(&self->group_tail, NULL);
  /* a ring-out waiting for the next item's segment: a gap first */
  if (self->ring_pending && GST_EVENT_TYPE(ev) == GST_EVENT_GAP)
    drop_ring(self);
  switch (GST_EVENT_TYPE(ev)) {
  case GST_EVENT_CAPS: {
    /* the held frames go out in the old format, before the new caps; the
     * same caps again change nothing */
    GstCaps *caps;
    GstAudioInfo info;
    gst_event_parse_caps(ev, &caps);
    gint ch = 0;
    gchar *why = NULL;
    GST_OBJECT_LOCK(self);
    if (gst_caps_get_size(caps) == 1 &&
        gst_structure_get_int(gst_caps_get_structure(caps, 0), "channels",
                              &ch) &&
        ch > 0)
      why = channels_refused(self, (guint)ch);
    GST_OBJECT_UNLOCK(self);
    /* GstAudioInfo takes no caps of over 2 channels without positions:
     * the stream ended "not negotiated", the reason only in the debug
     * log (QA: filesrc ! audio/x-raw,channels=6,... as for raw files) */
    if (!why && ch > 2 &&
        !gst_structure_has_field(gst_caps_get_structure(caps, 0),
                                 "channel-mask"))
      why = g_strdup_printf(
          "%d channels and no channel-mask in the caps: GStreamer needs "
          "one over 2 channels (channel-mask=(bitmask)0x0 for unpositioned "
          "channels, or the layout's, e.g. 0x3f for 5.1; audioconvert "
          "before cudafir gives one)",
          ch);
    /* the stream goes on where the input ended (a playlist's next item,
     * a rate change upstream): a ring-out past that would overlap it.
     * Also before caps refused below: the held frames are the old
     * format's, and an EOS after the error would push the whole tail */
    if (self->frames_in && self->engine &&
        !(gst_audio_info_from_caps(&info, caps) &&
          gst_audio_info_is_equal(&info, &self->info)))
      push_residue(self, input_end(self));
    /* nothing carried into another format */
    if (self->ring_frames && !(gst_audio_info_from_caps(&info, caps) &&
                               gst_audio_info_is_equal(&info, &self->info)))
      drop_ring(self);
    if (why) {
      /* GST_PTR_FORMAT is for GStreamer's own printf, not GLib's */
      gchar *text = gst_caps_to_string(caps);
      gchar *detail = g_strdup_printf("caps %s", text);
      g_free(text);
      CF_GST_POST_FATAL(self, &self->posted, GST_STREAM_ERROR,
                        GST_STREAM_ERROR_FORMAT,
                        g_strdup_printf("cudafir: %s", why), detail);
      g_free(detail);
      g_free(why);
      gst_event_unref(ev);
      return FALSE;
    }
    say_caps_refused_downstream(self, caps);
    break;
  }
  case GST_EVENT_FLUSH_STOP:
    restart(self);
    drop_ring(self);
    break;
  case GST_EVENT_SEGMENT: {
    /* the held frames belong to the old segment: out before the new one
     * replaces it downstream (bt->segment is still the old one here) */
    const GstSegment *seg;
    gst_event_parse_segment(ev, &seg);
    gboolean item = self->new_item;
    self->new_item = FALSE;
    /* the next item of a gapless playlist, starting where the one before
     * ended: its ring-out goes on into this one, as one signal (playbin3
     * and concat: STREAM_START, SEGMENT; playbin: STREAM_GROUP_DONE
     * before them, which pushed the held frames) */
    if (item && !self->ring_pending && self->frames_in && self->engine &&
        bt->segment.rate > 0 && bt->segment.format == GST_FORMAT_TIME &&
        GST_CLOCK_TIME_IS_VALID(self->base_ts) &&
        item_follows(gst_segment_to_running_time(&bt->segment,
                                                 GST_FORMAT_TIME,
                                                 input_end(self)),
                     seg)) {
      GST_DEBUG_OBJECT(self, "next item: its ring-out carried over");
      push_group_done(self, FALSE);
    }
    gboolean loop = self->pend_loop;
    self->pend_loop = FALSE;
    if (self->ring_pending) {
      if ((item || loop) && item_follows(self->pend_rt, seg)) {
        self->ring_pending = FALSE; /* add_ring from here on */
        /* the output goes on from the item before: its first buffer is
         * no discontinuity, though the input's comes DISCONT (a
         * decoder's first of an item); it said one, and a sink
         * resynchronised there */
        self->discont = FALSE;
        self->goes_on = TRUE;
        resume_carry(self);
      } else {
        drop_ring(self);
      }
    }
    if (self->frames_in && self->engine &&
        !segment_continues(self, &bt->segment, seg)) {
      GST_DEBUG_OBJECT(self, "new segment: pushing the held frames");
      push_residue(self, segment_resumes_at(&bt->segment, seg));
      drop_ring(self);
    }
    break;
  }
  case GST_EVENT_STREAM_GROUP_DONE:
    push_group_done(self, TRUE);
    break;
  case GST_EVENT_STREAM_START: { /* the next item: no ring-out into it */
    const gchar *sid = NULL;
    gst_event_parse_stream_start(ev, &sid);
    if (g_strcmp0(sid, self->stream_id)) {
      self->new_item = self->stream_id != NULL;
      g_free(self->stream_id);
      self->stream_id = g_strdup(sid);
    }
    gst_buffer_replace(&self->group_tail, NULL);
    break;
  }
  case GST_EVENT_SEGMENT_DONE: { /* nothing goes past the segment's end */
    if (!self->frames_in)
      break;
    /* A looping player's segment seek: the next segment (no FLUSH) starts
     * at the running time where this one is done. Where the input ran up
     * to that end, the loop goes on from it as one signal, as a gapless
     * item does: the held frames go out now, the ring-out is kept for
     * the next segment if it starts there (item_follows), else dropped.
     * It was cut at the end, the next loop filtered from silence (QA). */
    GstClockTime at = segment_done_at(self, ev);
    const GstSegment *seg = &bt->segment;
    GstClockTime end = input_end(self);
    if (GST_CLOCK_TIME_IS_VALID(at) && GST_CLOCK_TIME_IS_VALID(end) &&
        GST_CLOCK_TIME_IS_VALID(self->base_ts) && seg->rate > 0 &&
        seg->format == GST_FORMAT_TIME &&
        GST_CLOCK_DIFF(end, at) <= (GstClockTimeDiff)GST_MSECOND &&
        GST_CLOCK_DIFF(at, end) <= (GstClockTimeDiff)GST_MSECOND) {
      GST_DEBUG_OBJECT(self, "segment done where the input ended: its "
                       "ring-out waits for the loop's next segment");
      push_group_done(self, FALSE);
      self->pend_loop = self->ring_pending;
    } else {
      push_residue(self, at);
    }
    break;
  }
  case GST_EVENT_GAP: {
    GstFlowReturn ret;
    if (self->carry_len) { /* the rest of that frame is not coming */
      GST_WARNING_OBJECT(self,
                         "dropping %" G_GSIZE_FORMAT " bytes of a "
                         "frame cut before a gap",
                         self->carry_len);
      self->carry_len = 0;
    }
    /* after buffers dropped for QoS the gap does not follow the stream:
     * a discontinuity at its time */
    GstClockTime gts;
    gst_event_parse_gap(ev, &gts, NULL);
    if (self->qos_dropped && self->frames_in)
      push_residue(self, gts);
    self->qos_dropped = FALSE;
    if (gap_as_silence(self, ev, &ret)) {
      gst_event_unref(ev);
      return ret == GST_FLOW_OK;
    }
    break;
  }
  case GST_EVENT_EOS:
    if (self->carry_len)
      GST_WARNING_OBJECT(self,
                         "dropping %" G_GSIZE_FORMAT " bytes of a "
                         "frame cut at the end of the stream",
                         self->carry_len);
    if (self->group_tail) { /* the last item's ring-out */
      GstBuffer *t = self->group_tail;
      self->group_tail = NULL;
      gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), t);
    }
    push_residue(self, GST_CLOCK_TIME_NONE);
    drop_ring(self);
    break;
  default:
    break;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_cuda_fir_parent_class)->sink_event(bt, ev);
}

/* GstBaseTransform's chain, the input's DISCONT flag taken off and kept
 * in in_discont for generate_output: the base class marks the next
 * buffer it outputs DISCONT for any DISCONT input, whatever
 * generate_output says, and the element's own DISCONT (self->discont,
 * the first output of a run) is the truthful one. Where the input's
 * frames were all held back, the pending mark went on a later buffer
 * in the middle of a run (the first after a gapless change of item,
 * whose held frames the element pushed itself); and a gapless item's
 * first buffer, DISCONT from its decoder, marked an output that goes on
 * from the item before (goes_on: the next buffer after that segment
 * only; new caps or a flush in between restart the run and clear it). */
static GstFlowReturn fir_chain(GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstCudaFir *self = GST_CUDA_FIR(parent);
  self->in_discont = FALSE;
  if (GST_BUFFER_IS_DISCONT(buf)) {
    self->in_discont = !self->goes_on;
    if (self->goes_on)
      GST_DEBUG_OBJECT(self, "the next item's first buffer is DISCONT: the "
                       "output goes on from the item before");
    buf = gst_buffer_make_writable(buf);
    GST_BUFFER_FLAG_UNSET(buf, GST_BUFFER_FLAG_DISCONT);
  }
  self->goes_on = FALSE;
  return self->base_chain(pad, parent, buf);
}

/* qos=true: the base class drops input whose running time is at or
 * before the earliest time downstream's QoS events ask for, posting a QoS
 * message, and marks its next output DISCONT. The next buffer is then a
 * discontinuity here too (generate_output): the frames held before the
 * hole go out, the history restarts. */
static GstFlowReturn gst_cuda_fir_submit_input_buffer(GstBaseTransform *bt,
                                                      gboolean is_discont,
                                                      GstBuffer *in)
{
  GstCudaFir *self = GST_CUDA_FIR(bt);
  GstFlowReturn r = GST_BASE_TRANSFORM_CLASS(gst_cuda_fir_parent_class)
                        ->submit_input_buffer(bt, is_discont, in);
  if (r == GST_BASE_TRANSFORM_FLOW_DROPPED) {
    GST_DEBUG_OBJECT(self, "a late buffer dropped for QoS");
    self->qos_dropped = TRUE;
  }
  return r;
}

static gboolean gst_cuda_fir_query(GstBaseTransform *bt, GstPadDirection dir,
                                 GstQuery *q)
{
  GstCudaFir *self = GST_CUDA_FIR(bt);
  if (GST_QUERY_TYPE(q) == GST_QUERY_CAPS && dir == GST_PAD_SINK) {
    gboolean ok =
        GST_BASE_TRANSFORM_CLASS(gst_cuda_fir_parent_class)->query(bt, dir, q);
    GstCaps *res = NULL;
    gst_query_parse_caps_result(q, &res);
    guint pin[64], pout[64], np;
    /* upstream negotiating (pads active and linked) finds no input: where
     * downstream takes no output count the matrix gives, say so */
    if (ok && res && gst_caps_is_empty(res) &&
        GST_PAD_IS_ACTIVE(bt->srcpad) && gst_pad_is_linked(bt->srcpad) &&
        gst_pad_is_linked(bt->sinkpad) &&
        (np = kernel_pairs(self, pin, pout)) > 0) {
      GstCaps *up = NULL;
      gst_query_parse_caps(q, &up);
      GstCaps *down = gst_pad_peer_query_caps(bt->srcpad, NULL);
      if (down && !gst_caps_is_empty(down) && !gst_caps_is_any(down)) {
        GstCaps *in = gst_cuda_fir_transform_caps(bt, GST_PAD_SRC, down, up);
        if (gst_caps_is_empty(in))
          say_output_refused(self, down, up, pin, pout, np);
        gst_caps_unref(in);
      }
      if (down)
        gst_caps_unref(down);
    }
    return ok;
  }
  if (GST_QUERY_TYPE(q) != GST_QUERY_LATENCY || dir != GST_PAD_SRC)
    return GST_BASE_TRANSFORM_CLASS(gst_cuda_fir_parent_class)
        ->query(bt, dir, q);
  if (!gst_pad_peer_query(GST_BASE_TRANSFORM_SINK_PAD(bt), q))
    return FALSE;
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(q, &live, &min, &max);
  GST_OBJECT_LOCK(self);
  GstClockTime ours = our_latency(self);
  GST_OBJECT_UNLOCK(self);
  min += ours;
  if (GST_CLOCK_TIME_IS_VALID(max))
    max += ours;
  GST_DEBUG_OBJECT(self, "latency: ours %" GST_TIME_FORMAT ", total min %"
                   GST_TIME_FORMAT, GST_TIME_ARGS(ours), GST_TIME_ARGS(min));
  gst_query_set_latency(q, live, min, max);
  return TRUE;
}

/* Upstream writes into host memory the engine copies from fastest (pinned
 * with CUDA). Not passed on downstream, as GstBaseTransform would before
 * its first buffer: the output is always new memory of ours, so what
 * downstream would allocate has no bearing on the input. */
static gboolean gst_cuda_fir_propose_allocation(GstBaseTransform *bt,
                                              GstQuery *decide, GstQuery *q)
{
  (void)bt, (void)decide;
  GstAllocator *alloc = cf_gst_host_allocator_get();
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 63;
  gst_query_add_allocation_param(q, alloc, &params);
  gst_object_unref(alloc);
  return TRUE;
}

static GstFlowReturn gst_cuda_fir_generate_output(GstBaseTransform *bt,
                                                GstBuffer **outbuf)
{
  GstCudaFir *self = GST_CUDA_FIR(bt);
  /* the parts of the last output cut where the timestamps moved: the
   * base class calls again while it gets buffers */
  if (!g_queue_is_empty(&self->parts)) {
    *outbuf = g_queue_pop_head(&self->parts);
    return GST_FLOW_OK;
  }
  GstBuffer *in = bt->queued_buf;
  bt->queued_buf = NULL;
  *outbuf = NULL;
  if (!in)
    return GST_FLOW_OK;
  gst_buffer_replace(&self->group_tail, NULL); /* push_group_done */
  if (self->ring_pending) /* no segment of the next item came first */
    drop_ring(self);
  if (!self->engine) {
    gst_buffer_unref(in);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("cudafir: no format"),
                      ("a buffer came before caps"));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GstFlowReturn ret = GST_FLOW_OK;
  /* A discontinuity: the DISCONT flag, or timestamps that jump by more
   * than JUMP_TOLERANCE from where the stream's frame count puts them
   * (live sources jitter by less). A new segment was seen to in
   * sink_event. */
  gboolean jump = FALSE;
  if (self->frames_in && GST_BUFFER_PTS_IS_VALID(in) &&
      GST_CLOCK_TIME_IS_VALID(self->base_ts)) {
    GstClockTime expect = input_end(self);
    GstClockTimeDiff d = GST_CLOCK_DIFF(expect, GST_BUFFER_PTS(in));
    jump = d > JUMP_TOLERANCE || d < -JUMP_TOLERANCE;
  }
  /* A buffer dropped for QoS before this one: its samples are gone, and
   * the history convolved across the hole as if the input went on (under
   * 40 ms, no jump seen: the times moved, nothing DISCONT, QA). */
  gboolean dropped = self->qos_dropped;
  self->qos_dropped = FALSE;
  gboolean in_discont = self->in_discont;
  self->in_discont = FALSE;
  if ((in_discont || jump || dropped) && self->frames_in) {
    GST_DEBUG_OBJECT(self, "discontinuity%s: pushing the held frames",
                     jump ? " (timestamp jump)"
                          : dropped ? " (buffers dropped for QoS)" : "");
    ret = push_residue(self, GST_BUFFER_PTS(in));
    drop_ring(self);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref(in);
      return ret;
    }
  }
  /* Nothing filtered since a restart (a flush, a discontinuity, new
   * caps): nothing to blend from, the stream starts from silence with the
   * new kernel alone. The reset (a no-op on no history) completes the
   * swap, so the old kernel's length no longer counts in the ring-out
   * (it added its silent tail at EOS). */
  gboolean fresh = self->frames_in == 0 && !self->resumed;
  self->resumed = FALSE;
  if (fresh) /* from silence (a change of item not followed) */
    self->hist_len = self->hist_pos = 0, self->hist_lost = FALSE;
  if (apply_kernel_change(self, fresh) && fresh) {
    cf_engine_reset(self->engine);
    fade_complete(self);
  }
  if ((in_discont || dropped) && self->carry_len) {
    GST_WARNING_OBJECT(self,
                       "dropping %" G_GSIZE_FORMAT " bytes of a frame "
                       "cut before a discontinuity",
                       self->carry_len);
    self->carry_len = 0;
  }
  if (self->carry_len || gst_buffer_get_size(in) % self->in_bpf) {
    if (!self->carry_len)
      GST_LOG_OBJECT(self,
                     "buffer of %" G_GSIZE_FORMAT " bytes ends inside "
                     "a frame: carrying the rest over",
                     gst_buffer_get_size(in));
    if (!join_frames(self, &in))
      return GST_FLOW_ERROR;
    if (!in)
      return GST_FLOW_OK;
  }

  /* Reverse playback (a segment of rate < 0): a decoder pushes a chunk's
   * buffers latest first, each ending where the one before it started,
   * so no buffer follows another in time, whatever their size (a 20 ms
   * opus buffer moved back by 40 ms, within the tolerance, carried the
   * history of the later one into it). Each buffer is a run of its own:
   * filtered from silence, the frames the engine holds back flushed
   * with it by silence after it, so that it leaves as one buffer of its
   * own frames at its own times, in the order the buffers came; the
   * ring-out would repeat time already played. (Its held frames used to
   * follow it with the next buffer, their times going up.) */
  gboolean reverse = bt->segment.rate < 0;
  if (reverse && in_discont)
    self->discont = TRUE;
  GstClockTime in_pts = GST_BUFFER_PTS(in), in_dur = GST_BUFFER_DURATION(in);
  guint64 in_off = GST_BUFFER_OFFSET(in), in_off_end = GST_BUFFER_OFFSET_END(in);
  gsize in_bpf = self->in_bpf;
  gsize sample = in_bpf / self->cin;
  gsize out_bpf = sample * self->cout;
  /* As many channels out as in (the same size out, in any format) and no
   * frames to drop, and the input ours alone (as a file source or a
   * decoder hands it over): filter it in place and push it on, without an
   * output buffer to allocate. Input someone else still holds is only
   * read. */
  gboolean inplace = self->skip == 0 && !reverse && self->cin == self->cout &&
                     gst_buffer_n_memory(in) == 1 &&
                     gst_buffer_is_writable(in) &&
                     gst_buffer_is_all_memory_writable(in);
  GstMapInfo im;
  if (!gst_buffer_map(in, &im, inplace ? GST_MAP_READWRITE : GST_MAP_READ)) {
    gst_buffer_unref(in);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("cudafir: cannot map input"),
                      (NULL));
    return GST_FLOW_ERROR;
  }
  size_t n = im.size / in_bpf; /* whole frames: join_frames saw to it */
  /* the silence that flushes a reverse buffer's held frames */
  size_t pad = reverse && n ? self->skip : 0;
  if (self->frames_in == 0) {
    anchor_start(self, GST_BUFFER_PTS(in));
    self->base_offset = GST_BUFFER_OFFSET(in);
    if (gst_buffer_n_memory(in) > 0)
      GST_DEBUG_OBJECT(self, "input memory is %spinned",
                       cf_gst_memory_is_pinned(gst_buffer_peek_memory(in, 0))
                           ? ""
                           : "not ");
  } else if (!GST_CLOCK_TIME_IS_VALID(self->base_ts)) {
    anchor_late(self, GST_BUFFER_PTS(in), GST_BUFFER_OFFSET(in));
  } else {
    anchor_move(self, GST_BUFFER_PTS(in));
  }
  sync_controlled(self);
  take_gain(self);
  size_t skip = MIN(self->skip, n + pad);
  size_t m = n + pad - skip;
  /* F32 without frames to drop: the engine reads the mapped input and
   * writes straight into the output buffer (no conversion copies) */
  gboolean direct = self->format == GST_AUDIO_FORMAT_F32LE && skip == 0 &&
                    ((guintptr)im.data % sizeof(float)) == 0;
  if (n && !direct && !ensure_scratch(self, n + pad)) {
    gst_buffer_unmap(in, &im);
    gst_buffer_unref(in);
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("cudafir: out of memory"),
                      ("%zu frames", n));
    return GST_FLOW_ERROR;
  }
  GstBuffer *out = NULL;
  GstMapInfo om;
  if (m && !inplace) {
    GstAllocator *alloc = cf_gst_host_allocator_get();
    out = gst_buffer_new_allocate(alloc, m * out_bpf, NULL);
    gst_object_unref(alloc);
    if (!out || !gst_buffer_map(out, &om, GST_MAP_WRITE)) {
      if (out)
        gst_buffer_unref(out);
      gst_buffer_unmap(in, &im);
      gst_buffer_unref(in);
      GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("cudafir: out of memory"),
                        (NULL));
      return GST_FLOW_ERROR;
    }
  }
  cf_status s = CF_OK;
  if (n && direct) {
    check_finite(self, (const float *)im.data, n);
    if (!reverse) /* before: in place, the output overwrites it */
      hist_add(self, (const float *)im.data, n);
    s = cf_engine_process(self->engine, (const float *)im.data,
                          (float *)(inplace ? im.data : om.data), n);
    if (s == CF_OK) {
      float *y = (float *)(inplace ? im.data : om.data);
      apply_gain(self, y, self->frames_out, n);
      add_ring(self, y, n);
      check_output(self, y, n, self->frames_out);
    }
  } else if (n) {
    cf_gst_to_float(self->format, im.data, self->fin, n * self->cin);
    memset(self->fin + n * self->cin, 0, pad * self->cin * sizeof(float));
    check_finite(self, self->fin, n);
    if (!reverse)
      hist_add(self, self->fin, n);
    s = cf_engine_process(self->engine, self->fin, self->fout, n + pad);
    if (s == CF_OK) {
      apply_gain(self, self->fout + skip * self->cout, self->frames_out, m);
      add_ring(self, self->fout + skip * self->cout, m);
      check_output(self, self->fout + skip * self->cout, m, self->frames_out);
    }
    if (s == CF_OK && m) /* in place: read into fin already */
      cf_gst_from_float(self->format, self->fout + skip * self->cout,
                        inplace ? im.data : om.data, m * self->cout);
  }
  gst_buffer_unmap(in, &im);
  if (out)
    gst_buffer_unmap(out, &om);
  if (n)
    note_fallback(self);
  if (s != CF_OK) {
    if (out)
      gst_buffer_unref(out);
    gst_buffer_unref(in);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("cudafir: filtering failed"),
                      ("%s", cf_last_error()));
    return GST_FLOW_ERROR;
  }
  self->frames_in += n;
  self->skip -= skip;
  if (m == 0) {
    gst_buffer_unref(in);
    return GST_FLOW_OK;
  }
  /* a new buffer: the input's flags, and the metas transform_meta keeps
   * (the untagged ones: the samples are new, and a meta tagged audio,
   * video or unknown may describe what they were) */
  if (inplace) { /* its flags and metas are there already */
    out = in;
    drop_audio_meta(out);
  } else if (!GST_BASE_TRANSFORM_GET_CLASS(bt)->copy_metadata(bt, in, out)) {
    GST_WARNING_OBJECT(self, "could not copy the input's metadata");
  }
  /* silence in, but the kernel's tail out: a sink skips GAP buffers */
  GST_BUFFER_FLAG_UNSET(out, GST_BUFFER_FLAG_GAP);
  /* DISCONT marks the first buffer after a restart only */
  if (self->discont)
    GST_BUFFER_FLAG_SET(out, GST_BUFFER_FLAG_DISCONT);
  else
    GST_BUFFER_FLAG_UNSET(out, GST_BUFFER_FLAG_DISCONT);
  self->discont = FALSE;
  if (!inplace)
    gst_buffer_unref(in);
  /* timed as their input frames (cut where the input's timestamps
   * moved: the part before is pushed here) */
  GstFlowReturn r = stamp_output(self, &out, self->frames_out,
                                 self->frames_out + m, out_bpf, TRUE);
  self->frames_out += m;
  if (reverse && r == GST_FLOW_OK && out) {
    /* one buffer out for one in: its times exactly (the frame count
     * rounds its duration on its own, 1 ns off the input's) */
    if (GST_CLOCK_TIME_IS_VALID(in_pts) && GST_CLOCK_TIME_IS_VALID(in_dur)) {
      GST_BUFFER_PTS(out) = in_pts;
      GST_BUFFER_DURATION(out) = in_dur;
      self->out_end = in_pts + in_dur;
    }
    if (in_off != GST_BUFFER_OFFSET_NONE &&
        in_off_end != GST_BUFFER_OFFSET_NONE && in_off_end - in_off == m) {
      GST_BUFFER_OFFSET(out) = in_off;
      GST_BUFFER_OFFSET_END(out) = in_off_end;
    }
  }
  if (reverse) { /* the next buffer starts anew, DISCONT if it came so;
                    * a NaN warning stays once a run of buffers */
    gboolean told = self->told_nonfinite, told_out = self->told_overflow;
    restart(self);
    self->discont = FALSE;
    self->told_nonfinite = told;
    self->told_overflow = told_out;
  }
  if (r != GST_FLOW_OK)
    return r;
  *outbuf = out;
  return ret;
}

/* ---- GObject -------------------------------------------------------------- */

/* A set this thread's set_property refused: no notify for it (the
 * property keeps its value; GParamSpecs are G_PARAM_EXPLICIT_NOTIFY). */
static _Thread_local gboolean refused_here;

static void refuse(GstCudaFir *self, const char *prop)
{
  refused_here = TRUE;
  char msg[512];
  g_strlcpy(msg, fir_error, sizeof msg);
  GST_WARNING_OBJECT(self, "%s refused: %s", prop, msg);
  /* stopped: no stream starts until the property takes a value */
  GST_OBJECT_LOCK(self);
  gboolean stopped = !self->started;
  if (stopped)
    cf_gst_refusals_note(self->refusals, prop, msg);
  GST_OBJECT_UNLOCK(self);
  const char *then = stopped ? "; no stream starts until it is set to a "
                               "value taken"
                             : "";
  /* gst-launch sets properties before the element has a bus: the
   * message would be lost */
  if (cf_gst_warn_without_bus(GST_ELEMENT(self)))
    g_warning("%s: %s refused, keeping the previous value: %s%s",
              GST_OBJECT_NAME(self), prop, msg, then);
  gchar *detail = g_strdup_printf("%s%s", msg, then);
  CF_GST_POST_WARNING(
      self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
      g_strdup_printf("cudafir: %s refused, keeping the previous value", prop),
      detail);
  g_free(detail);
}

/* A change of kernel, kernel-file, routing or trim. The new set is
 * built (a new kernel-file decoded and resampled: tens of ms; routing
 * and trim from the taps read when it was set, the file not read
 * again: it may have gone or changed since) and, while streaming, its
 * FFT plans made (cf_engine_prepare_kernel) with only kernel_lock held,
 * so the streaming thread never waits for either. It is checked before
 * the value is taken: while streaming, a set that cannot be built or
 * maps channels differently is refused with a warning on the bus, the
 * property and the kernel staying as they were (a trim was taken
 * anyway: it read back what did not play); a checked set goes to
 * the streaming thread (pending), which swaps it in at its next buffer.
 * So is a set that cannot be built once the element runs (PAUSED,
 * PLAYING) before its first caps, where the kernel set before can be.
 * Otherwise (NULL, READY; or nothing good set yet) a set that cannot be
 * built is kept: starting fails with its message as an element error. */
static void set_kernel_property(GstCudaFir *self, guint id, const GValue *value,
                                const char *name)
{
  kernel_params p;
  cf_kernel *k = NULL;
  gboolean ok, streaming, not_numbers = FALSE;
  /* kernel_lock also keeps the stream as it is (engine, rate, channels):
   * build_engine and free_engine take it */
  g_mutex_lock(&self->kernel_lock);
  GST_OBJECT_LOCK(self);
  cf_swap_prep *made = self->made; /* freed below, the lock released */
  self->made = NULL;
  params_take(self, &p);
  cf_engine *engine = self->engine;
  streaming = engine != NULL;
  gboolean started = self->started;
  guint rate = self->rate, cin = self->cin, cout = self->cout;
  GST_OBJECT_UNLOCK(self);
  cf_swap_prep_free(made);
  /* Running (PAUSED, PLAYING) but before the first caps, no engine yet:
   * a good kernel set already stays against a bad one, as while
   * streaming. The bad one was kept, and the stream failed at its first
   * buffer (QA: a typo in a kernel-file set just after PLAYING). A file
   * that did not load when set is not read again here. */
  gboolean guard = streaming;
  if (!streaming && started && (p.file ? p.loaded != NULL : p.taps->len > 0)) {
    cf_kernel *cur = build_kernel(&p, 0, 0);
    guard = cur != NULL;
    cf_kernel_free(cur);
  }
  switch (id) {
  case PROP_KERNEL: {
    gchar *why = NULL;
    /* a non-number, NaN or Inf refused here, whether streaming or not
     * (the kernel set would refuse the latter two only once streaming) */
    if (!cf_gst_value_taps(value, p.taps, &why)) {
      fir_fail("%s", why);
      g_free(why);
      not_numbers = TRUE;
      break;
    }
    g_clear_pointer(&p.file, g_free); /* the last one set wins */
    params_forget_file(&p);
    break;
  }
  case PROP_KERNEL_FILE: {
    const gchar *path = g_value_get_string(value);
    g_free(p.file);
    p.file = path && *path ? g_strdup(path) : NULL;
    if (p.file)
      g_array_set_size(p.taps, 0);
    params_forget_file(&p); /* read again, even where the name is the same */
    break;
  }
  case PROP_ROUTING: p.routing = g_value_get_enum(value); break;
  case PROP_TRIM: p.trim = g_value_get_boolean(value); break;
  }
  k = not_numbers ? NULL
                  : build_kernel(&p, streaming ? rate : 0, streaming ? cin : 0);
  ok = !not_numbers && (k != NULL || !guard);
  if (!streaming && p.read_failed) { /* kept, and said at negotiation */
    g_free(p.file_error);
    p.file_error = g_strdup(fir_error);
  }
  if (k && streaming) {
    unsigned out = cf_kernel_routing(k) == CF_ROUTING_MATRIX
                       ? cf_kernel_outputs(k)
                       : cin;
    unsigned in =
        cf_kernel_routing(k) == CF_ROUTING_MATRIX ? cf_kernel_inputs(k) : cin;
    if (cf_kernel_routing(k) == CF_ROUTING_PER_CHANNEL)
      in = out = cf_kernel_inputs(k);
    /* per-channel kernels said as such where their count is what does
     * not fit; against a matrix stream's other output count, as a map */
    if (in != cin && cf_kernel_routing(k) == CF_ROUTING_PER_CHANNEL) {
      fir_fail("the new kernel set has %u per-channel kernels; the running "
               "stream has %u channel%s (change it in READY)",
               in, cin, cin == 1 ? "" : "s");
      g_clear_pointer(&k, cf_kernel_free);
      ok = FALSE;
    } else if (in != cin || out != cout) {
      fir_fail("the new kernel set maps %u to %u channels; the running "
               "stream has %u in, %u out (change it in READY)",
               in, out, cin, cout);
      g_clear_pointer(&k, cf_kernel_free);
      ok = FALSE;
    }
  }
  /* the FFT plans the swap needs, measured here rather than estimated
   * in the streaming thread */
  if (k && streaming && cf_engine_prepare_kernel(engine, k) != CF_OK)
    GST_WARNING_OBJECT(self, "preparing the new kernel: %s", cf_last_error());
  /* and the swap itself, on the engine's input history: the streaming
   * thread then replays only the buffers since */
  cf_swap_prep *prep = NULL;
  cf_status ps = ok && k && streaming ? cf_engine_prepare_swap(engine, k, &prep)
                                      : CF_OK;
  if (ps == CF_E_NOMEM) {
    /* refused here, where the setter hears of it: the streaming thread
     * would run out of memory the same (QA: under a memory limit a
     * daemon's `set` of a 2^24-tap kernel-file answered ok, the swap
     * failing later with a warning on the bus only, after the streaming
     * thread had stalled 100 ms allocating) */
    fir_fail("the new kernel does not fit in memory: %s", cf_last_error());
    g_clear_pointer(&k, cf_kernel_free);
    ok = FALSE;
  } else if (ps != CF_OK) {
    GST_WARNING_OBJECT(self, "building the swap: %s", cf_last_error());
  }
  GST_OBJECT_LOCK(self);
  if (ok)
    params_store(self, &p);
  if (ok && streaming) {
    /* the last change wins */
    g_clear_pointer(&self->pending, cf_kernel_free);
    g_clear_pointer(&self->pending_prep, cf_swap_prep_free);
    if (prep)
      self->pending_prep = g_steal_pointer(&prep);
    /* with the swap too: the streaming thread keeps the kernels in force,
     * for a change of item to go on crossfading (resume_carry) */
    self->pending = g_steal_pointer(&k);
    self->pending_crossfade = self->crossfade;
  } else if (ok) {
    update_shape(self, k);
  }
  GST_OBJECT_UNLOCK(self);
  g_mutex_unlock(&self->kernel_lock);
  if (!ok)
    refuse(self, name);
  else if (!k && !streaming) { /* kept: see above */
    /* said now, as cudaconvolve says it: an application (and
     * cudafilterd's --check and reload, which catch it) hears of it
     * before the stream fails to start (QA: a reload took a pipeline
     * whose kernel-file did not exist, and its stream died); on the bus
     * where there is one (it was said with GLib alone, which an
     * application set in NULL or READY heard only on stderr: QA) */
    char msg[512];
    g_strlcpy(msg, fir_error, sizeof msg);
    GST_WARNING_OBJECT(self, "kernel: %s", msg);
    if (cf_gst_warn_without_bus(GST_ELEMENT(self)))
      g_warning("%s: %s: %s; no stream starts with it",
                GST_OBJECT_NAME(self), name, msg);
    gchar *detail = g_strdup_printf("%s; no stream starts with it", msg);
    CF_GST_POST_WARNING(self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                        g_strdup_printf("cudafir: bad %s", name), detail);
    g_free(detail);
  }
  cf_kernel_free(k);
  params_clear(&p);
}

static void set_property_body(GObject *obj, guint id, const GValue *value,
                              GParamSpec *pspec);

/* notify::<property> for a value taken, none for one refused (an
 * application showing the property from its notify showed a value the
 * element had refused and did not hold) */
static void gst_cuda_fir_set_property(GObject *obj, guint id,
                                      const GValue *value, GParamSpec *pspec)
{
  refused_here = FALSE;
  set_property_body(obj, id, value, pspec);
  if (!refused_here) {
    /* a value taken: its refusal before no longer stops a start (nor,
     * the last set of the two winning, the other kernel source's) */
    GstCudaFir *self = GST_CUDA_FIR(obj);
    GST_OBJECT_LOCK(self);
    g_hash_table_remove(self->refusals, pspec->name);
    if (id == PROP_KERNEL || id == PROP_KERNEL_FILE) {
      g_hash_table_remove(self->refusals, "kernel");
      g_hash_table_remove(self->refusals, "kernel-file");
    }
    GST_OBJECT_UNLOCK(self);
    g_object_notify_by_pspec(obj, pspec);
  }
  refused_here = FALSE;
}

/* block-size, backend, device-id, pipeline-depth and threads shape the
 * engine built for the stream: set while it runs (GObject does not hold
 * to their MUTABLE_READY flag; a harness or an application sets them in
 * PLAYING) they were stored and read back, while the running engine went
 * on with the old ones until a caps change rebuilt it (QA: pipeline-depth
 * set while PLAYING, the latency unchanged). Refused once the engine is
 * made or being made (build_engine took them); before (NULL, READY, or
 * running without caps yet) taken, for the engine about to be made. The
 * same value is no change. Without kernel_lock, which build_engine holds
 * while it makes the engine (a set of the same threads from a UI thread
 * waited 93 ms for a 2^20-tap engine; QA): where it is not refused it
 * returns with the object lock held, for the caller to store the value
 * under it, so that build_engine takes the settings before or after. */
static gboolean refused_ready_only(GstCudaFir *self, GParamSpec *pspec,
                                   const GValue *value)
{
  GValue now = G_VALUE_INIT;
  g_value_init(&now, G_PARAM_SPEC_VALUE_TYPE(pspec));
  g_object_get_property(G_OBJECT(self), pspec->name, &now);
  gboolean same = g_param_values_cmp(pspec, value, &now) == 0;
  GST_OBJECT_LOCK(self);
  gboolean building = self->engine == NULL && self->building;
  gboolean running = self->engine != NULL || building;
  gboolean refused = running && !same;
  if (refused)
    GST_OBJECT_UNLOCK(self);
  if (refused) {
    gchar *was = g_strdup_value_contents(&now);
    fir_fail("%s cannot change while a stream runs (the engine %s with "
             "it at the stream's start): set it in NULL or READY; it stays "
             "%s",
             pspec->name, building ? "is being built" : "was built", was);
    g_free(was);
    refuse(self, pspec->name);
  }
  g_value_unset(&now);
  return refused;
}

static void set_property_body(GObject *obj, guint id, const GValue *value,
                              GParamSpec *pspec)
{
  GstCudaFir *self = GST_CUDA_FIR(obj);
  gboolean ready_only = (pspec->flags & GST_PARAM_MUTABLE_READY) != 0;
  switch (id) {
  case PROP_KERNEL:
  case PROP_KERNEL_FILE:
  case PROP_ROUTING:
  case PROP_TRIM:
    g_return_if_fail(!ready_only);
    set_kernel_property(self, id, value, g_param_spec_get_name(pspec));
    return;
  default: break;
  }
  /* (a ready-only one returns with the object lock held if taken) */
  if (ready_only && refused_ready_only(self, pspec, value))
    return;
  if (!ready_only)
    GST_OBJECT_LOCK(self);
  switch (id) {
  case PROP_BLOCK_SIZE:
    self->block_size = g_value_get_uint(value);
    break;
  case PROP_BACKEND:
    self->backend = g_value_get_enum(value);
    break;
  case PROP_DEVICE_ID:
    self->device_id = g_value_get_int(value);
    break;
  case PROP_PIPELINE_DEPTH:
    self->pipeline_depth = g_value_get_uint(value);
    break;
  case PROP_THREADS:
    self->threads = g_value_get_uint(value);
    break;
  case PROP_CROSSFADE:
    self->crossfade = g_value_get_uint64(value);
    break;
  case PROP_GAIN: /* the streaming thread ramps to it (take_gain) */
    self->gain_db = g_value_get_double(value);
    self->gain_new = TRUE;
    self->gain_xf = self->crossfade;
    break;
  case PROP_DRAIN:
    self->drain = g_value_get_boolean(value);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(obj, id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_fir_get_property(GObject *obj, guint id, GValue *value,
                                    GParamSpec *pspec)
{
  GstCudaFir *self = GST_CUDA_FIR(obj);
  if (id == PROP_KERNEL) { /* the GValues made without the lock */
    cf_gst_taps_value(GST_OBJECT(self), &self->taps, value);
    return;
  }
  GST_OBJECT_LOCK(self);
  switch (id) {
  case PROP_KERNEL_FILE:
    g_value_set_string(value, self->kernel_file);
    break;
  case PROP_ROUTING:
    g_value_set_enum(value, self->routing);
    break;
  case PROP_BLOCK_SIZE:
    g_value_set_uint(value, self->block_size);
    break;
  case PROP_BACKEND:
    g_value_set_enum(value, self->backend);
    break;
  case PROP_DEVICE_ID:
    g_value_set_int(value, self->device_id);
    break;
  case PROP_PIPELINE_DEPTH:
    g_value_set_uint(value, self->pipeline_depth);
    break;
  case PROP_THREADS:
    g_value_set_uint(value, self->threads);
    break;
  case PROP_CROSSFADE:
    g_value_set_uint64(value, self->crossfade);
    break;
  case PROP_GAIN:
    g_value_set_double(value, self->gain_db);
    break;
  case PROP_DRAIN:
    g_value_set_boolean(value, self->drain);
    break;
  case PROP_TRIM:
    g_value_set_boolean(value, self->trim);
    break;
  case PROP_LATENCY:
    g_value_set_uint64(value, our_latency(self));
    break;
  case PROP_BACKEND_IN_USE:
    g_value_set_string(value, in_use(self));
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(obj, id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_fir_finalize(GObject *obj)
{
  GstCudaFir *self = GST_CUDA_FIR(obj);
  drop_swaps(self); /* before the engine they were built for */
  cf_engine_free(self->engine);
  cf_kernel_free(self->pending);
  kernels_clear(self);
  g_queue_clear_full(&self->parts, (GDestroyNotify)gst_buffer_unref);
  gst_buffer_replace(&self->group_tail, NULL);
  g_free(self->ring);
  g_free(self->stream_id);
  g_mutex_clear(&self->kernel_lock);
  g_array_free(self->taps, TRUE);
  g_hash_table_destroy(self->refusals);
  g_free(self->kernel_file);
  cf_kernel_free(self->file_kernel);
  g_free(self->file_error);
  g_free(self->fin);
  g_free(self->fout);
  g_free(self->hist);
  g_free(self->posted);
  g_free(self->told_out);
  g_free(self->ctl);
  G_OBJECT_CLASS(gst_cuda_fir_parent_class)->finalize(obj);
}

static void gst_cuda_fir_init(GstCudaFir *self)
{
  self->taps = g_array_new(FALSE, FALSE, sizeof(float));
  self->refusals = cf_gst_refusals_new();
  g_mutex_init(&self->kernel_lock);
  self->routing = ROUTING_AUTO;
  self->block_size = DEFAULT_BLOCK_SIZE;
  self->backend = CF_BACKEND_AUTO;
  self->pipeline_depth = DEFAULT_PIPELINE_DEPTH;
  self->crossfade = DEFAULT_CROSSFADE;
  self->gain_db = DEFAULT_GAIN;
  self->drain = DEFAULT_DRAIN;
  self->trim = DEFAULT_TRIM;
  self->out_end = GST_CLOCK_TIME_NONE;
  restart(self);
  GstPad *sink = GST_BASE_TRANSFORM_SINK_PAD(self);
  self->base_chain = GST_PAD_CHAINFUNC(sink);
  gst_pad_set_chain_function(sink, fir_chain);
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), FALSE);
  gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), FALSE);
}

#define FORMATS "{ F32LE, S16LE, S32LE, F64LE }"

static void gst_cuda_fir_class_init(GstCudaFirClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS(klass);
  GstElementClass *ec = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *bc = GST_BASE_TRANSFORM_CLASS(klass);
  GstAudioFilterClass *ac = GST_AUDIO_FILTER_CLASS(klass);
  const GParamFlags rw =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
  const GParamFlags live = rw | GST_PARAM_MUTABLE_PLAYING;
  const GParamFlags ready = rw | GST_PARAM_MUTABLE_READY;

  oc->set_property = gst_cuda_fir_set_property;
  oc->get_property = gst_cuda_fir_get_property;
  oc->finalize = gst_cuda_fir_finalize;

  g_object_class_install_property(oc, PROP_KERNEL,
      cf_gst_param_spec_taps("kernel", "Kernel",
          "FIR taps applied to every channel, e.g. \"<0.25, 0.5, 0.25>\" "
          "(finite numbers of any type, kept as floats; others are "
          "refused, and if set in NULL or READY the next start fails "
          "until a kernel is taken; setting it clears kernel-file; empty: "
          "the identity). Changes while PLAYING crossfade",
          live));
  g_object_class_install_property(oc, PROP_KERNEL_FILE,
      g_param_spec_string("kernel-file", "Kernel file",
          "Impulse response: an audio file (WAV, FLAC, ...: resampled to "
          "the stream rate, its gain kept), .npy or text; setting it clears kernel. "
          "Read when set (trim and routing reuse its taps; an audio "
          "file is read again for a new rate). Changes while PLAYING "
          "crossfade; one that does not load is refused in PAUSED or "
          "PLAYING where a good kernel is set (kept in NULL or READY: the "
          "start then fails naming it), and so is one that does not fit "
          "in memory while streaming",
          NULL, live));
  g_object_class_install_property(oc, PROP_ROUTING,
      g_param_spec_enum("routing", "Routing",
          "How the kernels map onto channels (matrix changes the output "
          "channel count). While PLAYING, a change that keeps the "
          "stream's channel counts crossfades; one that would change them "
          "is refused",
          cf_gst_routing_get_type(), ROUTING_AUTO, live));
  g_object_class_install_property(oc, PROP_BLOCK_SIZE,
      g_param_spec_uint("block-size", "Block size",
          "Frames per FFT block: the latency of the FFT path is "
          "block-size - 1 frames (short kernels run directly, latency 0)",
          1, CF_AUDIO_MAX_BLOCK, DEFAULT_BLOCK_SIZE, ready));
  g_object_class_install_property(oc, PROP_BACKEND,
      g_param_spec_enum("backend", "Backend",
          "Where the convolution runs", CF_GST_TYPE_BACKEND, CF_BACKEND_AUTO,
          ready));
  g_object_class_install_property(oc, PROP_DEVICE_ID,
      g_param_spec_int("device-id", "Device ID",
          "CUDA device index (backend cuda or auto)", 0,
          CF_GST_MAX_DEVICE_ID, 0, ready));
  g_object_class_install_property(oc, PROP_PIPELINE_DEPTH,
      g_param_spec_uint("pipeline-depth", "Pipeline depth",
          "Blocks of block-size frames kept in flight across buffers, each "
          "adding block-size frames of latency (0: live, nothing added). "
          "On CUDA the device filters while the element goes on; on the "
          "CPU it is a plain delay, so the latency is the same on both",
          0, CF_AUDIO_MAX_DEPTH, DEFAULT_PIPELINE_DEPTH, ready));
  g_object_class_install_property(oc, PROP_THREADS,
      g_param_spec_uint("threads", "Threads",
          "CPU worker threads (0: one per core); channels are spread over "
          "them", 0, CF_GST_MAX_THREADS, 0, ready));
  g_object_class_install_property(oc, PROP_CROSSFADE,
      g_param_spec_uint64("crossfade", "Crossfade",
          "Time in ns over which a kernel change blends linearly from the "
          "old kernel to the new one (0: switch at once); a change made "
          "during a crossfade starts when it ends. A gain change ramps "
          "over it",
          0, 60 * GST_SECOND, DEFAULT_CROSSFADE, live));
  g_object_class_install_property(oc, PROP_GAIN,
      g_param_spec_double("gain", "Gain",
          "Gain in dB applied to the output. A change ramps linearly (in "
          "amplitude) over `crossfade` from the next buffer on, at once "
          "even during a kernel crossfade; controllable (GstController): "
          "then the control source's value at each frame's stream time",
          -CF_GAIN_DB_MAX, CF_GAIN_DB_MAX, DEFAULT_GAIN,
          live | GST_PARAM_CONTROLLABLE));
  g_object_class_install_property(
      oc, PROP_DRAIN,
      g_param_spec_boolean(
          "drain", "Drain",
          "At EOS, and before a discontinuity, a segment that moves the "
          "stream in time or caps of another format (not a new rate where "
          "the stream is, nor the same caps again), "
          "also emit the filter's ring-out (kernel length - 1 frames) "
          "after the held frames; but never past where the stream resumes "
          "(for new caps: where the input ended)",
          DEFAULT_DRAIN, live));
  g_object_class_install_property(oc, PROP_TRIM,
      g_param_spec_boolean("trim", "Trim",
          "Cut the leading silence of the kernel (taps below -60 dB of its "
          "peak, the same count from every channel)",
          DEFAULT_TRIM, live));
  g_object_class_install_property(oc, PROP_LATENCY,
      g_param_spec_uint64("latency", "Latency",
          "Latency the filter adds, in ns, as the latency query says it "
          "(0 until the format is known, and once stopped)",
          0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property(oc, PROP_BACKEND_IN_USE,
      g_param_spec_string("backend-in-use", "Backend in use",
          "The backend filtering now: cpu, cuda, or none before the format "
          "is known (cuda turns to cpu if the device fails mid-stream with "
          "backend=auto)", "none", G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata(ec, "CUDA FIR filter",
      "Filter/Effect/Audio",
      "Convolves audio with an FIR kernel or impulse response (any length, "
      "partitioned FFT), on CUDA or the CPU, in float32 (24-bit precision: "
      "S32LE and F64LE samples are rounded to it)",
      "cudafilter developers");
  GstCaps *caps = gst_caps_from_string(
      "audio/x-raw, format = (string) " FORMATS ", rate = (int) [ 1, MAX ], "
      "channels = (int) [ 1, " G_STRINGIFY(
          MAX_CHANNELS) " ], layout = (string) interleaved");
  gst_audio_filter_class_add_pad_templates(ac, caps);
  gst_caps_unref(caps);

  ac->setup = gst_cuda_fir_setup;
  bc->transform_caps = gst_cuda_fir_transform_caps;
  bc->fixate_caps = gst_cuda_fir_fixate_caps;
  bc->accept_caps = gst_cuda_fir_accept_caps;
  bc->transform_size = gst_cuda_fir_transform_size;
  bc->start = gst_cuda_fir_start;
  bc->stop = gst_cuda_fir_stop;
  bc->sink_event = gst_cuda_fir_sink_event;
  bc->query = gst_cuda_fir_query;
  bc->propose_allocation = gst_cuda_fir_propose_allocation;
  bc->generate_output = gst_cuda_fir_generate_output;
  bc->submit_input_buffer = gst_cuda_fir_submit_input_buffer;
  bc->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api(cf_gst_routing_get_type(), 0);
  gst_type_mark_as_plugin_api(CF_GST_TYPE_BACKEND, 0);
}

gboolean cf_gst_register_cudafir(GstPlugin *plugin)
{
  GST_DEBUG_CATEGORY_INIT(cudafir_debug, "cudafir", 0,
                          "cudafilter FIR convolution of audio");
  return gst_element_register(plugin, "cudafir", GST_RANK_NONE,
                              gst_cuda_fir_get_type());
}
