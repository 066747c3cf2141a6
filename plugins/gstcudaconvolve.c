/* cudaconvolve: 2D (and temporal 3D) convolution of raw video on the
 * cudafilter engine, CUDA where a usable device exists, else the CPU.
 *
 * Every frame is filtered as scipy.ndimage.convolve(frame, kernel,
 * mode=border, cval=cval, origin=0) per selected component (a colour
 * channel or a YUV plane at its own resolution), then scaled, biased,
 * optionally made absolute, rounded and saturated: see
 * include/cudafilter/video.h. A 3D kernel (T x Kh x Kw, from a .npy or a
 * text file) also weighs the T - 1 previous frames; a flush, a DISCONT
 * buffer, a new stream (STREAM_START of another stream or group) and a
 * segment that moves the stream in running or stream time (a looping
 * segment seek, a gapless playlist's next item, whose first frames come
 * without DISCONT; not the same segment again, nor a new rate, in the
 * same direction, where the stream is) forget them, and in reverse
 * playback (a segment of rate < 0)
 * each frame starts anew: the frames before it came later in time (its
 * output is DISCONT only where it came so). In a trick-mode segment (a
 * seek with TRICKMODE, TRICKMODE_KEY_UNITS or TRICKMODE_FORWARD_PREDICTED:
 * key frames alone, a second apart) a frame that does not start where the
 * one before ended (within half its duration) starts anew too.
 *
 * The kernel comes from whichever of `kernel`, `kernel-file` and `preset`
 * was set last (one cleared hands back to the latest still set); with none
 * of them the kernel is the 1 x 1 identity (frames
 * pass unchanged, apart from scale/bias/absolute). Kernel changes while
 * PLAYING take effect at the next frame handed to the engine after the
 * property is set, and keep the temporal history (a kernel with more
 * temporal taps than the one before takes the frames it lacks as black
 * frames: the engine keeps only what the running kernel needs). The
 * frames before the first, and after any of those, are black frames
 * too: zeros in RGB and gray, in YUV Y 16 (0 where the caps' colorimetry
 * says full range) and U = V 128. A new kernel that runs
 * on FFT tiles of a size not planned yet has its FFT plan made (measured: up to
 * a second the first time on a machine, then from FFTW's wisdom) in the thread
 * that sets the property (g_object_set returns once it is done); that thread
 * also builds the new kernel's state (cf_engine_prepare_swap2d: on the CPU
 * its plan, spectra, scratch and history; on CUDA its device buffers, cuFFT
 * plans and spectra), so the streaming thread only puts it in force; frames
 * keep flowing with the previous kernel meanwhile. Of sets in a row, the
 * next frame takes the last one. The state a change retires is given
 * back by a thread of the element's; on the CPU the longer history of a
 * kernel with more temporal taps too, once each engine filtered a frame
 * with the shorter one (cf_engine_take_retired2d). scale,
 * bias and absolute apply from the next frame in, the engine and its temporal
 * history going on (cf_engine_set_output2d; frames held keep the values they
 * went in with). Changes to border, cval, components, backend, device-id,
 * pipeline-depth or threads rebuild the engine at the next frame (the
 * temporal history restarts), as do caps of another format, size or
 * interlace mode (caps that change only the framerate, pixel aspect ratio or
 * colorimetry keep the engine and its history, and so do I420 <-> NV12 at
 * the same size on the CPU: cf_engine_set_pixel_format; on CUDA that too
 * restarts it); the frames the old engine holds
 * are pushed out first, and before any new caps. backend=cuda set while
 * streaming where no device is usable is refused at once (a warning, as
 * below: the property keeps its value), and so are components the stream's
 * format lacks where upstream offers no format that has them, or
 * downstream takes none of those it offers, or, behind a tee, its other
 * branches take none of them, with an element warning naming which
 * (behind a tee also components the format has, where another branch
 * asked for a format that lacks them; two elements changed at once are
 * checked one after the other: components_check). A rebuild
 * the engine refuses (a device-id that does not exist, components the format
 * negotiated then lacks) is an element warning: the engine before goes on, and
 * the settings it needed go back to its values (notified), so that they
 * describe the engine running and the next change builds on them rather than
 * failing the same way.
 *
 * A property value that is wrong on its own (a size or sigma the preset
 * refuses, an unknown component name) is refused with an element warning
 * on the bus, or a g_warning where there is no bus (gst-launch sets
 * properties before there is one), and the property keeps its value;
 * refused while stopped (NULL, READY: a gst-launch line's values), it
 * also makes the next start fail with an element error naming the
 * property and why, until that property (for kernel, kernel-file and
 * preset: any of the three, the last set winning) takes a value: frames
 * passed with the kernel before, unfiltered where it was the identity,
 * and gst-launch exited 0.
 * GObject itself refuses a NaN or infinite cval, scale or bias (outside
 * every float range) with its own g_warning, before the element sees it
 * (a NaN or infinite tap the element refuses). A kernel file that does not
 * load (missing, malformed, a NaN tap) is also an element warning; while
 * streaming it is refused the same way, the kernel going on, and set
 * before, it is kept, as cudafir keeps one: negotiation fails with an
 * element error naming it, rather than frames passing with the kernel
 * from before (the identity, where it was the only one). A kernel array
 * whose length disagrees with kernel-width / kernel-height is reported
 * when the kernel is needed: at negotiation as an element error, while
 * streaming as an element warning, the stream keeping its previous kernel
 * (so that the three properties can be set in any order). Likewise a
 * preset is taken whatever size or sigma is set: a preset that does not
 * use them (the 3x3 ones; sigma for box) leaves them for the presets that
 * do; setting one while such a preset is the kernel is refused.
 *
 * Interlaced video (interlace-mode=interleaved, either field order, and
 * mixed) is filtered field by field: each field (the top one rows 0, 2,
 * 4, ... of every plane, the bottom one rows 1, 3, ...; the chroma rows
 * of 4:2:0 alternate between the fields too, as GStreamer lays them out)
 * is a picture of its own, (h + 1) / 2 and h / 2 rows high, with the
 * border at its own edges, so that a vertical tap never blends lines
 * captured at two instants (as AviSynth's SeparateFields().Blur().Weave()).
 * Each parity has its own engine, and so its own temporal history: a
 * temporal kernel's taps weigh the earlier fields of the same parity.
 * With mixed caps a frame without GST_VIDEO_BUFFER_FLAG_INTERLACED is
 * progressive and filtered whole, by a third engine; a frame of the other
 * kind than the one before pushes the frames in flight out first (at
 * pipeline-depth D > 0) and starts the temporal history of its kind anew
 * (its last frames came before the other kind's run). The latency stays
 * D frames. Caps that change the interlace mode rebuild the engines.
 *
 * interlace-mode=alternate (caps feature format:Interlaced, in system
 * memory; v4l2src gives it from some SDI and analog capture cards): each
 * buffer is one field, filtered as a picture of its own on the engine of
 * its parity, so that a temporal kernel weighs the earlier fields of that
 * parity, as with interleaved frames; the output, in the same caps, keeps
 * the buffer's field flags, timestamps and metas. The caps' height h is
 * the frame's; GStreamer lays out GST_VIDEO_INFO_FIELD_HEIGHT, (h + 1) /
 * 2 rows, in a buffer of either parity (4:2:0 chroma: half that, rounded
 * up). A top field is that many rows, a bottom field h / 2, so that with
 * an odd h its buffer's last row lies past the field: it repeats the
 * field's last row (a frame of one row: a bottom field is filtered as its
 * one row). A buffer's parity is its flags': GST_VIDEO_BUFFER_FLAG_TOP_FIELD
 * (TFF | ONEFIELD) or BOTTOM_FIELD (ONEFIELD alone), so that one flagged
 * both is TOP_FIELD, as GST_VIDEO_BUFFER_IS_TOP_FIELD reads it. A buffer
 * with neither (no ONEFIELD; TFF alone included), which the caps do not
 * allow, is taken as the field after the one before, the other parity
 * (after new caps or a flush, top), with a warning in the debug log.
 * Latency: each parity's engine holds D fields, so the latency is D
 * frames (2 D fields: D durations of the caps' framerate, which is the
 * frames'; at 0/1, 2 D times the longest field buffer). Fields leave in
 * the order they came: field t when field t + 2 D comes, where they
 * alternate; after a run of one parity the fields of the other held
 * before it leave first (flushed from their engine, its history going
 * on), at most 2 D fields after they came.
 *
 * Negotiation offers only the formats the components fit: with
 * components=luma a YUV or gray format, with components=gb an RGB one, so
 * that a videoconvert before the element converts to one of them. Caps
 * sent with a format they do not fit are an element error naming the
 * components. Components set while streaming that the current format
 * lacks make the element ask upstream for a format they fit (a
 * reconfigure event: videoconvert converts from its next frame on; the
 * frames already on their way are filtered with the previous components),
 * where upstream can give one and downstream take it, and, behind a tee,
 * its other branches take it too (with components=luma on one branch, r
 * on another is refused: the element's upstream peer, a tee's src pad,
 * does not see those branches, and the renegotiation stopped the stream:
 * QA); elsewhere a warning
 * names the components and the previous ones go on (the property goes
 * back to them).
 *
 * Latency. With pipeline-depth 0 (the default) the element adds none:
 * each frame leaves filtered in the call that brought it. With
 * pipeline-depth D in 1..7 the engine keeps D frames in flight (CUDA
 * overlaps the copies and compute of different frames; the CPU filters a
 * frame on a worker thread while the element goes on), so frame t leaves
 * when frame t + D arrives, with its own timestamps, duration, offsets,
 * flags and metas (alternate fields: D frames, see above). The latency
 * query adds D frame durations (from the
 * framerate; at a variable framerate, 0/1, D times the longest buffer
 * duration seen so far, a buffer without one lasting until the next,
 * and where a GAP event came between them, the next one's period running
 * from the gap's end; a
 * duration past a minute, a still shown until further notice, is not a
 * frame's period and is not counted) and
 * a latency message is posted when that changes (at a variable
 * framerate, by 1 ms or 1% at least: periods measured from jittering
 * timestamps grow by nanoseconds; the query says it exactly).
 * The frames in flight are pushed out at EOS and before a DISCONT buffer
 * (they are filtered with the history they had), a segment, a gap, new
 * caps or a rebuilt engine; a flush drops them. Serialized events that
 * arrive while frames are held (tags, TOC, custom events) wait among them
 * and leave in the order they came; a flush drops them, except sticky
 * ones (tags), which stay on the source pad for the next frame.
 * `backend-in-use` names the engine and its latency in frames (with
 * interlaced caps the top field's, and the bottom field's or progressive
 * frames' engine where it took another path). With
 * backend=auto, a CUDA device that fails mid-stream leaves the frames to
 * the CPU, none lost or repeated: a warning goes on the bus and
 * `backend-in-use` changes (notify).
 *
 * QoS (the `qos` property, on by default as for every video filter): a
 * frame whose running time is not after the earliest time of the last QoS
 * event from downstream is dropped before it reaches the engine, with a
 * QoS message on the bus (jitter, proportion, frames processed and
 * dropped). The element does this itself rather than leave it to
 * GstBaseTransform, which marks DISCONT on the next buffer it pushes:
 * with D frames in flight that is a frame from before the gap. Here the
 * first frame kept after a drop carries DISCONT, at any depth. A drop
 * neither restarts the temporal history (the frames kept are filtered
 * with the history of the frames kept) nor pushes the frames in flight
 * out; a dropped DISCONT frame passes its new stream on to the next frame
 * kept. For the same reason a DISCONT frame's flag is taken off before
 * GstBaseTransform's chain sees it and put back on that frame's output:
 * DISCONT comes out on the frames after a gap and on no other.
 *
 * A buffer that does not hold the frame its caps (or its GstVideoMeta)
 * describe, such as the short last block of a raw file read without a
 * parser, is dropped as a late frame is, with an element warning naming
 * the sizes (once until a flush; the ones after it in the debug log),
 * rather than filtered past its end.
 *
 * Frames are 1x1 to 32768x32768 (the pads' caps: larger ones do not
 * link); a kernel taller or wider than the frame is taken as any other,
 * its border samples from `border` (a 16384x16384 GRAY8 frame through a
 * 31x31 gaussian on the CPU: 20 s, 0.8 GB, QA).
 *
 * Upstream is offered a GstVideoBufferPool on host memory from
 * cf_host_alloc() (pinned where a CUDA device exists); output frames come
 * from such a pool too unless downstream names its own pool or allocator.
 *
 * CUDA memory. Where the plugin was built with gstreamer-cuda-1.0 and both
 * gst_cuda_load_library() and the engine find a device when the element
 * registers, the pads also take video/x-raw(memory:CUDAMemory) (RGBA,
 * BGRA, RGBx, BGRx, RGB, BGR, I420, NV12: what 1.22's GstCudaMemory
 * holds), preferred over system memory, the same on both pads. Then frames
 * stay on the device: the engine (backend cuda, also for backend=auto)
 * copies each input from its GstCudaMemory and the result into the output
 * GstCudaMemory device to device, with no host round trip. The element
 * shares its GstCudaContext with its neighbours (GstContext
 * "gst.cuda.context"), offers upstream a GstCudaBufferPool and makes one
 * for its output unless downstream offers one. With backend=cpu such
 * frames are mapped on the host (GstCudaMemory downloads and uploads
 * them). A device error with CUDA memory is an element error: the
 * frames' memory is on that device, there is nothing to fall back to.
 * Without gstcuda or a device the CUDA caps are simply not offered.
 *
 * Examples:
 *   gst-launch-1.0 videotestsrc num-buffers=100 ! \
 *     video/x-raw,format=RGBA,width=640,height=480 ! \
 *     cudaconvolve preset=gaussian size=13 ! videoconvert ! fakesink
 *   gst-launch-1.0 videotestsrc num-buffers=50 ! \
 *     video/x-raw,format=I420,width=320,height=240 ! \
 *     cudaconvolve preset=sobel-x absolute=true components=y ! \
 *     filesink location=edges.yuv
 *   gst-launch-1.0 videotestsrc num-buffers=300 ! \
 *     video/x-raw,format=RGBA,width=1280,height=720 ! \
 *     cudaconvolve preset=gaussian size=13 pipeline-depth=2 ! \
 *     filesink location=blur.rgba
 *   gst-launch-1.0 filesrc location=in.rgb ! \
 *     rawvideoparse format=rgb width=640 height=480 framerate=25/1 ! \
 *     cudaconvolve kernel="<0,-1,0,-1,5,-1,0,-1,0>" border=nearest ! \
 *     filesink location=out.rgb
 */
#define G_LOG_DOMAIN "cudaconvolve"
#define _GNU_SOURCE /* RTLD_DEFAULT */

#include "common.h"

#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include <gst/base/gstqueuearray.h>
#include <gst/video/gstvideofilter.h>
#include <gst/video/video.h>
#ifdef CF_HAVE_GSTCUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

GST_DEBUG_CATEGORY_STATIC(cudaconvolve_debug);
#define GST_CAT_DEFAULT cudaconvolve_debug

/* ---- enums --------------------------------------------------------------- */

/* Preset 0 is "none"; the others are cf_preset + 1. */
#define CF_GST_PRESET_NONE 0

static GType cf_gst_preset_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {CF_GST_PRESET_NONE, "No preset (the kernel or kernel-file, else the "
                         "1x1 identity)", "none"},
    {CF_PRESET_GAUSSIAN + 1, "Gaussian blur, size x size (default 5), "
                             "sigma", "gaussian"},
    {CF_PRESET_BOX + 1, "Box blur, size x size (default 3)", "box"},
    {CF_PRESET_SHARPEN + 1, "Sharpen 3x3", "sharpen"},
    {CF_PRESET_UNSHARP + 1, "Unsharp mask, size x size (default 5), sigma",
     "unsharp"},
    {CF_PRESET_SOBEL_X + 1, "Sobel 3x3, horizontal gradient", "sobel-x"},
    {CF_PRESET_SOBEL_Y + 1, "Sobel 3x3, vertical gradient", "sobel-y"},
    {CF_PRESET_LAPLACIAN + 1, "Laplacian 3x3", "laplacian"},
    {CF_PRESET_EMBOSS + 1, "Emboss 3x3 (add bias=128 on 8-bit video)",
     "emboss"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("CudaConvolvePreset", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

static GType cf_gst_border_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {CF_BORDER_CONSTANT, "cval outside the frame", "constant"},
    {CF_BORDER_NEAREST, "Repeat the edge sample (a a | a b c)", "nearest"},
    {CF_BORDER_REFLECT, "Half-sample symmetric (b a | a b c)", "reflect"},
    {CF_BORDER_MIRROR, "Whole-sample symmetric (c b | a b c)", "mirror"},
    {CF_BORDER_WRAP, "Periodic (b c | a b c)", "wrap"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("CudaConvolveBorder", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

/* ---- the element ------------------------------------------------------- */

typedef enum {
  SRC_IDENTITY,
  SRC_ARRAY,
  SRC_FILE,
  SRC_PRESET
} KernelSource;

/* The properties an engine is built from (make_config), components apart
 * (engine_components). */
typedef struct {
  cf_border border;
  gfloat cval, scale, bias;
  gboolean absolute;
  cf_backend backend;
  gint device_id;
  guint pipeline_depth, threads;
} EngineSettings;

/* A kernel change's way back: the kernel settings as they were before a
 * set of kernel, kernel-file, preset, size, sigma, kernel-width or
 * kernel-height, put back where the engines running cannot have the
 * memory of the new kernel (prepare_kernel). The pointers are the
 * settings' own; the change leaves those it replaces here (undo_drop),
 * and they are freed when it is taken. Under kernel_lock and the object
 * lock. */
typedef struct {
  guint depth;  /* nested sets (a bus handler setting a property from
                   within a warning): the outermost one's */
  GArray *taps; /* a reference */
  guint kernel_width, kernel_height;
  gchar *kernel_file;
  cf_kernel2d *file_kernel;
  gchar *file_error;
  gint preset;
  guint size;
  gdouble sigma;
  KernelSource source;
  guint64 set_at[SRC_PRESET + 1], settings;
  cf_kernel2d *kernel;
  gchar *kernel_error;
  guint kernel_serial;
  gchar *nomem; /* why the new kernel does not fit: put back */
} KernelUndo;

/* Components values kept (recent_components) for caps negotiated while
 * the property changed more than once. */
#define RECENT_COMPONENTS 8

typedef struct {
  GstVideoFilter parent;

  /* properties, under the object lock */
  GArray *taps; /* gfloat: the kernel property */
  /* between start and stop; values refused while not (NULL, READY) make
   * the next start fail, naming them (cf_gst_refusals_new) */
  gboolean started;
  GHashTable *refusals;
  guint kernel_width, kernel_height;
  gchar *kernel_file;
  cf_kernel2d *file_kernel; /* kernel_file, loaded when set */
  gchar *file_error;        /* or why it did not load (set before
                               streaming: kept, and negotiation fails) */
  gint preset;
  guint size;
  gdouble sigma;
  KernelSource source; /* the one of the three set last */
  /* when each source was last set (a count of settings; 0: never): one
   * cleared while it is the source hands over to the latest still set */
  guint64 set_at[SRC_PRESET + 1], settings;
  cf_border border;
  gfloat cval, scale, bias;
  gboolean absolute;
  gchar *components;
  cf_backend backend;
  gint device_id;
  guint pipeline_depth, threads;

  /* derived from the properties, under the object lock */
  cf_kernel2d *kernel; /* NULL while the settings disagree: */
  gchar *kernel_error; /* why */
  guint kernel_serial; /* bumped by every kernel change */
  guint preparing;     /* kernel changes whose FFT plan the setter is still
                          making (prepare_kernel): the streaming thread
                          keeps the kernel it has until they are done */
  guint config_serial; /* bumped by every change needing a new engine */
  guint output_serial; /* bumped by scale, bias, absolute: the engine takes
                          them between frames (cf_engine_set_output2d) */
  guint await_caps;    /* components the negotiated format does not take,
                          and upstream asked for a format they fit: frames
                          still to come in the old format before the new
                          caps (AWAIT_CAPS_FRAMES at most) */
  GstVideoFormat stream_format; /* of the caps set_info took last */
  gchar *engine_components;     /* the components the engine was built with */
  gchar *recent_components[RECENT_COMPONENTS]; /* the values set last,
                                   newest last: caps negotiated for any
                                   of them may still come */
  guint n_recent;
  EngineSettings built;         /* and the other properties: a rebuild the
                                   engine refuses puts them back */
  gchar *backend_in_use;
  gchar *posted;        /* the last "cannot filter" error posted, until caps
                           that work: the base class retries the same caps at
                           every buffer, and one error is enough (streaming
                           thread) */
  cf_backend running;   /* the engine's backend as last seen (backend=auto
                           may leave CUDA mid-stream) */
  guint on_cpu;         /* and which of engine, bottom, whole were on the
                           CPU (bits 0, 1, 2), as backend-in-use says them:
                           each may fall back at its own call */
  guint latency_frames; /* the engine's latency D */

  /* what the latency query answers from, under the object lock */
  gint fps_n, fps_d;         /* the negotiated framerate */
  GstClockTime max_duration; /* longest buffer seen (for framerate 0/1) */
  GstClockTime last_pts;     /* the frame before's, for one without a
                                duration (streaming thread) */
  GstClockTime announced;    /* our latency when last announced */
  GstClockTime next_pts;     /* where the last frame kept ended (pts +
                                duration; NONE: not known), for a trick
                                mode's frames (streaming thread) */
  /* a new stream (STREAM_START of another stream or group) or a segment
   * that moves the stream in time came: the next frame kept starts a new
   * history (streaming thread) */
  gboolean stream_moved;
  gboolean stream_seen, has_group; /* the last STREAM_START's */
  guint stream_hash, group_id;

  /* the streaming side (engine calls happen in the streaming thread or
   * with it stopped); built and swapped under the object lock and
   * engine_lock, which a setter's prepare_kernel holds without the object
   * lock: the engine it prepares for stays while it works. engine_lock
   * first, never waited for with the object lock held (a getter waited
   * for a whole prepare: QA) */
  cf_engine *engine;
  GMutex engine_lock;
  /* held by a set of a kernel setting from before it changes anything
   * until its kernel is prepared (or refused and put back: undo), so
   * that kernel changes come one at a time; before the object lock.
   * Recursive: a bus handler may set a property from within a set. */
  GRecMutex kernel_lock;
  KernelUndo undo;
  /* Interlaced caps (interleave-mode interleaved or mixed): each field is
   * filtered as a picture of its own, on an engine per field parity, so
   * that a vertical tap never reaches into the other field (captured at
   * another instant) and a temporal tap weighs the earlier fields of the
   * same parity. `engine` is then the top field's (rows 0, 2, 4, ...:
   * the frame with twice its strides), `bottom` the bottom field's (NULL
   * for a frame of one row), and with mixed caps `whole` filters the
   * frames that come without GST_VIDEO_BUFFER_FLAG_INTERLACED
   * (progressive ones) as frames. Built, fed, flushed and reset together;
   * each has its own kernel swap built ahead (prepared[1], [2]). */
  cf_engine *bottom, *whole;
  gboolean fields; /* the engines are per field (interlaced caps) */
  gboolean mixed;  /* and the caps are mixed: `whole` for progressive frames */
  /* the kind of the frames in the engines (KIND_*): with mixed caps a
   * frame of the other kind pushes the frames in flight out first and
   * starts its engines' history anew (streaming thread) */
  gint held_kind;
  /* interlace-mode alternate: every buffer is one field (of
   * GST_VIDEO_INFO_FIELD_HEIGHT rows), filtered as a picture on the
   * engine of its parity, `engine` (top) or `bottom`; the frames in
   * flight are fields, each its parity on it (field_quark) */
  gboolean alternate;
  /* the parity (0 top, 1 bottom) of the field being filtered, and of the
   * last one that came (-1: none since the caps or a flush), for a buffer
   * without a field flag; whether that was said (streaming thread) */
  guint parity;
  gint last_parity;
  gboolean told_unflagged;
  cf_kernel2d *active; /* the engine's kernel */
  /* the swaps to kernel number prepared_serial, built by the setter for
   * the engines (cf_engine_prepare_swap2d), in the order engine,
   * bottom, whole (NULL where there is no such engine or none could be
   * built: that one takes the kernel by cf_engine_set_kernel2d); made:
   * those the streaming thread put in force on the device, holding the
   * kernel state they retired, freed by the next setter
   * (cf_swap_prep2d_free waits for the device: not in the streaming
   * thread; the CPU's are given back at once, by the reaper). Under the
   * object lock. */
  cf_swap_prep2d *prepared[3], *made[3];
  /* the CPU state the streaming thread's swaps retire (cf_swap_prep2d),
   * and the histories its frames give up (process_one), given back off
   * that thread by the reaper, a GLib pool thread woken
   * for each (made at the first); what it has not taken when the element
   * goes, finalize gives back (a wake-up whose thread could not start,
   * under a memory limit, stays queued: nothing waits for it) */
  GAsyncQueue *retired;
  GThreadPool *reaper;
  guint prepared_serial;
  /* a copy of kernel number ready_serial, the setter's (prepare_kernel),
   * which the streaming thread takes rather than copying the kernel
   * under the object lock (64 MB for 4096x4096: getters waited 40 ms;
   * QA). Under the object lock. */
  cf_kernel2d *ready;
  guint ready_serial;
  /* bumped (atomically, under engine_lock) with every engine made or
   * dropped: a swap built for an engine since replaced is never handed to
   * the new one, even where the new one took the old one's address */
  gint engine_gen;
  gint prepared_gen;
  guint engine_kernel_serial, engine_config_serial, engine_output_serial;
  /* with D > 0: the metadata (timestamps, flags, metas) of the frames the
   * engine holds, oldest first, as buffers without memory, and between
   * them the serialized events that came between those frames (held so
   * that they leave in order); touched only by the streaming thread or
   * with it stopped */
  GstQueueArray *inflight;
  guint inflight_frames; /* the buffers in `inflight` */

  /* QoS, kept here and not in GstBaseTransform (see
   * gst_cuda_convolve_submit_input_buffer): the last QoS event's values,
   * under the object lock (events come from downstream's thread) */
  gdouble qos_proportion;
  GstClockTime qos_earliest; /* running time; NONE: no QoS event yet */
  /* the streaming thread's, reset under the object lock: the counts for
   * the QoS messages; whether a frame was dropped since the last one kept
   * (the next one kept carries DISCONT on its output), and whether one of
   * those was a DISCONT frame (the next one kept starts a new stream) */
  guint64 qos_processed, qos_dropped;
  gboolean qos_gap, qos_lost_discont;
  /* a frame that did not fit its buffer was dropped and said on the bus
   * (once until a flush: a source cutting every frame short would flood
   * it); the streaming thread's, reset with the QoS state */
  gboolean told_unfit;

  /* DISCONT, which GstBaseTransform never sees (gst_cuda_convolve_chain);
   * the streaming thread's: the frame being chained came DISCONT; the
   * frame in queued_buf starts a new stream (prepare_engine), its output
   * carries DISCONT */
  GstPadChainFunction base_chain;
  gboolean in_discont, frame_new_stream, frame_discont;
  /* the frame being chained starts a new history without a DISCONT of its
   * own (reverse playback) */
  gboolean in_restart;

  /* the negotiated caps are video/x-raw(memory:CUDAMemory) (set_info) */
  gboolean cuda_caps;
#ifdef CF_HAVE_GSTCUDA
  GstCudaContext *cuda_ctx; /* shared with the neighbours (GstContext) */
#endif
} GstCudaConvolve;

typedef struct {
  GstVideoFilterClass parent_class;
} GstCudaConvolveClass;

#define GST_TYPE_CUDA_CONVOLVE (gst_cuda_convolve_get_type())
#define GST_CUDA_CONVOLVE(obj)                                                 \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_CUDA_CONVOLVE, GstCudaConvolve))
GType gst_cuda_convolve_get_type(void);
G_DEFINE_TYPE(GstCudaConvolve, gst_cuda_convolve, GST_TYPE_VIDEO_FILTER)

enum {
  PROP_0,
  PROP_KERNEL,
  PROP_KERNEL_WIDTH,
  PROP_KERNEL_HEIGHT,
  PROP_KERNEL_FILE,
  PROP_PRESET,
  PROP_SIZE,
  PROP_SIGMA,
  PROP_BORDER,
  PROP_CVAL,
  PROP_SCALE,
  PROP_BIAS,
  PROP_ABSOLUTE,
  PROP_COMPONENTS,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_PIPELINE_DEPTH,
  PROP_THREADS,
  PROP_BACKEND_IN_USE
};

#define DEFAULT_KERNEL_WIDTH 0
#define DEFAULT_KERNEL_HEIGHT 0
#define DEFAULT_KERNEL_FILE NULL
#define DEFAULT_PRESET CF_GST_PRESET_NONE
#define DEFAULT_SIZE 0
#define DEFAULT_SIGMA 0.0
#define DEFAULT_BORDER CF_BORDER_REFLECT
#define DEFAULT_CVAL 0.0f
#define DEFAULT_SCALE 1.0f
#define DEFAULT_BIAS 0.0f
#define DEFAULT_ABSOLUTE FALSE
#define DEFAULT_COMPONENTS "all"
#define DEFAULT_BACKEND CF_BACKEND_AUTO
#define DEFAULT_DEVICE_ID 0
#define DEFAULT_PIPELINE_DEPTH 0
#define DEFAULT_THREADS 0
#define MAX_SIGMA 1e6

#define FORMATS_STR                                                            \
  "format = (string) { GRAY8, GRAY16_LE, RGBA, BGRA, RGBx, BGRx, RGB, BGR, "   \
  "I420, NV12, Y444, Y42B }, width = (int) [ 1, 32768 ], height = (int) "      \
  "[ 1, 32768 ], framerate = (fraction) [ 0/1, MAX ]"

/* system memory: progressive and interleaved or mixed frames; and one
 * field per buffer (interlace-mode alternate), which GStreamer puts
 * under the format:Interlaced feature */
#define CAPS_STR                                                               \
  "video/x-raw, " FORMATS_STR "; video/x-raw(format:Interlaced), " FORMATS_STR \
  ", interlace-mode = (string) alternate"

/* what 1.22's GstCudaMemory allocates (no GRAY8, GRAY16_LE) */
#define CUDA_CAPS_STR                                                          \
  "video/x-raw(memory:CUDAMemory), format = (string) { RGBA, BGRA, RGBx, "     \
  "BGRx, RGB, BGR, I420, NV12 }, width = (int) [ 1, 32768 ], height = (int) "  \
  "[ 1, 32768 ], framerate = (fraction) [ 0/1, MAX ]"

/* The pads' caps: CUDA memory first where gstcuda and the engine both
 * find a device (checked once, when the element registers). */
static GstCaps *template_caps(void)
{
  GstCaps *caps = gst_caps_from_string(CAPS_STR);
#ifdef CF_HAVE_GSTCUDA
  if (gst_cuda_load_library() && CuInit(0) == CUDA_SUCCESS &&
      cf_device_count(NULL) > 0) {
    gst_cuda_memory_init_once();
    caps = gst_caps_merge(gst_caps_from_string(CUDA_CAPS_STR), caps);
  }
#endif
  return caps;
}

static gboolean caps_cuda(GstCaps *caps)
{
  GstCapsFeatures *f =
      caps && gst_caps_get_size(caps) ? gst_caps_get_features(caps, 0) : NULL;
  return f && gst_caps_features_contains(f, "memory:CUDAMemory");
}

/* ---- components ------------------------------------------------------ */

/* A components string (cf_components_from_string's words: "all", "luma",
 * "gb", a mask, ...) that some format takes: RGB ones or YUV ones (gray
 * takes a part of YUV's). What it means is settled at negotiation. NULL,
 * or why no format takes it. */
static gchar *components_unfit(const gchar *s)
{
  unsigned m;
  if (cf_components_from_string(s, CF_PIX_RGBA, &m) == CF_OK)
    return NULL;
  gchar *rgb = g_strdup(cf_last_error());
  if (cf_components_from_string(s, CF_PIX_I420, &m) == CF_OK) {
    g_free(rgb);
    return NULL;
  }
  const char *yuv = cf_last_error();
  /* the same words refused the same way (unknown, mixed): said once */
  gchar *why = !strcmp(rgb, yuv)
                   ? g_strdup(rgb)
                   : g_strdup_printf("components: '%s' fits no format (%s; "
                                     "%s)",
                                     s, rgb, yuv);
  g_free(rgb);
  return why;
}

/* Does the components setting fit the format GStreamer names fname? */
static gboolean components_fit(const gchar *comps, const gchar *fname)
{
  cf_pixel_format f;
  unsigned mask;
  return fname && cf_pixel_format_from_string(fname, &f) == CF_OK &&
         cf_components_from_string(comps, f, &mask) == CF_OK;
}

/* v, a format or a list of them, less those comps does not fit, into out
 * (a list, or a string where one is left); FALSE where none is left. */
static gboolean keep_fitting(const gchar *comps, const GValue *v, GValue *out)
{
  GValue list = G_VALUE_INIT;
  g_value_init(&list, GST_TYPE_LIST);
  guint n = GST_VALUE_HOLDS_LIST(v) ? gst_value_list_get_size(v) : 1;
  for (guint i = 0; i < n; i++) {
    const GValue *f =
        GST_VALUE_HOLDS_LIST(v) ? gst_value_list_get_value(v, i) : v;
    if (G_VALUE_HOLDS_STRING(f) && components_fit(comps, g_value_get_string(f)))
      gst_value_list_append_value(&list, f);
  }
  guint kept = gst_value_list_get_size(&list);
  if (kept == 1)
    g_value_copy(gst_value_list_get_value(&list, 0),
                 g_value_init(out, G_TYPE_STRING));
  else if (kept > 1)
    g_value_copy(&list, g_value_init(out, GST_TYPE_LIST));
  g_value_unset(&list);
  return kept > 0;
}

/* from with only the formats comps fit (empty where none is left). */
static GstCaps *fitting_caps(GstCaps *from, const gchar *comps)
{
  GstCaps *ret = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(from); i++) {
    const GstStructure *st = gst_caps_get_structure(from, i);
    const GValue *formats = gst_structure_get_value(st, "format");
    GValue kept = G_VALUE_INIT;
    if (formats && !keep_fitting(comps, formats, &kept))
      continue;
    GstStructure *c = gst_structure_copy(st);
    if (formats)
      gst_structure_take_value(c, "format", &kept);
    GstCapsFeatures *f = gst_caps_get_features(from, i);
    ret = gst_caps_merge_structure_full(ret, c,
                                        f ? gst_caps_features_copy(f) : NULL);
  }
  return ret;
}

/* Frames that may still come in the old format after upstream was asked
 * for another (a queue's worth), before the components are reported as
 * not fitting after all. */
#define AWAIT_CAPS_FRAMES 300

/* Components an element answers the caps queries of this thread for, in
 * place of its own, while it asks the pipeline whether it could take them
 * (upstream_links_unfit): the queries go through the whole pipeline and
 * back to it within the asking thread, and the streaming threads'
 * negotiations go on with the components it has. */
typedef struct Probing {
  GstCudaConvolve *self;
  const gchar *comps;
} Probing;

static GPrivate probing = G_PRIVATE_INIT(NULL);

/* The components self answers this thread's caps queries for: the ones
 * probed, else its own (g_free). */
static gchar *answering_components(GstCudaConvolve *self, gboolean *probe)
{
  const Probing *pr = g_private_get(&probing);
  *probe = pr && pr->self == self;
  if (*probe)
    return g_strdup(pr->comps);
  GST_OBJECT_LOCK(self);
  gchar *comps = g_strdup(self->components);
  GST_OBJECT_UNLOCK(self);
  return comps;
}

/* The element's own pad that feeds sink pad `sink`: its peer, followed
 * through ghost pads across bins' edges (NULL where there is none). */
static GstPad *feeding_pad(GstPad *sink)
{
  GstPad *p = gst_pad_get_peer(sink);
  for (guint hops = 0; p && GST_IS_PROXY_PAD(p) && hops < 64; hops++) {
    GstPad *next = NULL;
    if (GST_IS_GHOST_PAD(p)) { /* a bin's src pad: the pad in the bin */
      next = gst_ghost_pad_get_target(GST_GHOST_PAD(p));
    } else { /* in a bin, from its ghost sink pad: what feeds that */
      GstProxyPad *ghost = gst_proxy_pad_get_internal(GST_PROXY_PAD(p));
      if (ghost) {
        next = gst_pad_get_peer(GST_PAD(ghost));
        gst_object_unref(ghost);
      }
    }
    gst_object_unref(p);
    p = next;
  }
  return p;
}

/* Can link `p` (a src pad) carry its stream in some format, asked of both
 * sides: what downstream of it takes (every branch a tee below sends to),
 * and of that what p's element can give? */
static gboolean link_can_carry(GstPad *p)
{
  GstCaps *same = gst_pad_get_current_caps(p);
  if (same) { /* the same stream, in any format */
    same = gst_caps_make_writable(same);
    for (guint i = 0; i < gst_caps_get_size(same); i++)
      gst_structure_remove_fields(gst_caps_get_structure(same, i), "format",
                                  "colorimetry", "chroma-site", NULL);
  }
  GstCaps *down = gst_pad_peer_query_caps(p, same);
  GstCaps *both = !gst_caps_is_empty(down) ? gst_pad_query_caps(p, down) : NULL;
  gboolean yes = both && !gst_caps_is_empty(both);
  GST_DEBUG_OBJECT(p,
                   "downstream takes %" GST_PTR_FORMAT ", of which "
                   "upstream gives %" GST_PTR_FORMAT,
                   down, both);
  if (both)
    gst_caps_unref(both);
  gst_caps_unref(down);
  if (same)
    gst_caps_unref(same);
  return yes;
}

/* The branch points above the element (elements with several src pads:
 * a tee), up to a source or an element with other than one sink pad: can
 * the link into each carry a format, were the element's components
 * comps? upstream_can_fit asks the element's upstream peer, which does not
 * see past a tee: a tee's src pad answers a caps query with what comes
 * into the tee, and what its other branches take counts only at the link
 * into it, where the renegotiation upstream asks (QA: components=luma on
 * one branch, then r on the other, were taken and the stream stopped
 * with a bare not-negotiated error). NULL where they can, else which
 * stands in the way (g_free). */
static gchar *upstream_links_unfit(GstCudaConvolve *self, const gchar *comps)
{
  Probing pr = {self, comps};
  g_private_set(&probing, &pr);
  gchar *why = NULL;
  GstPad *p = feeding_pad(GST_BASE_TRANSFORM_SINK_PAD(self));
  for (guint hops = 0; p && !why && hops < 64; hops++) {
    GstElement *el = gst_pad_get_parent_element(p);
    gst_object_unref(p);
    p = NULL;
    if (!el)
      break;
    GstPad *in = NULL;
    GST_OBJECT_LOCK(el);
    gboolean branches = el->numsrcpads > 1;
    if (el->numsinkpads == 1)
      in = gst_object_ref(el->sinkpads->data);
    GST_OBJECT_UNLOCK(el);
    if (in) {
      p = feeding_pad(in);
      gst_object_unref(in);
    }
    if (p && branches && !link_can_carry(p))
      why = g_strdup_printf("the other branches of %s take no format that "
                            "has them",
                            GST_ELEMENT_NAME(el));
    gst_object_unref(el);
  }
  if (p)
    gst_object_unref(p);
  g_private_set(&probing, NULL);
  return why;
}

/* Held by a components setter from its check (upstream_can_fit,
 * upstream_links_unfit) to its commit, so that the check of another
 * element's change sees this one's committed value: two elements behind a
 * tee set at the same instant from two threads (components=r on one,
 * luma on the other, both from all) each checked against the other's old
 * components, both were taken and the stream stopped with a bare
 * not-negotiated (QA). Process-wide (the elements may be in different bins,
 * a tee's branches anywhere below it): changes in unrelated pipelines
 * wait for each other's check only. Taken by setters only, never on the
 * streaming path (caps queries, set_info): the checks' caps queries run
 * through the pipeline to other elements' transform_caps, which take only
 * their object locks; a setter takes it with no object lock held, and
 * lets it go before posting its refusal and sending its reconfigure
 * event. Recursive: a setter that the check's queries reach in the same
 * thread (an application's query probe) does not wait for itself. */
static GRecMutex components_check;

/* Tests only: with CF_TEST_COMPONENTS_GATE set, a setter posts an element
 * message "cudaconvolve-test-components" with field point "waiting" before
 * it waits for another's check, and "checked" between its check and its
 * commit, so that a test's bus sync handler holding it there orders two
 * setters without timing. */
static void components_test_point(GstCudaConvolve *self, const char *point)
{
  if (!g_getenv("CF_TEST_COMPONENTS_GATE"))
    return;
  GstStructure *st = gst_structure_new("cudaconvolve-test-components", "point",
                                       G_TYPE_STRING, point, NULL);
  /* FALSE where the element has no bus: then nobody waits for it */
  (void)gst_element_post_message(GST_ELEMENT(self),
                                 gst_message_new_element(GST_OBJECT(self), st));
}

static void components_check_lock(GstCudaConvolve *self)
{
  if (g_rec_mutex_trylock(&components_check))
    return;
  components_test_point(self, "waiting");
  g_rec_mutex_lock(&components_check);
}

/* Can upstream give the stream of caps `cur` in a format comps fit (a
 * videoconvert before the element can), and downstream take it (the
 * output keeps the input's format)? Where not, *why says which side
 * stands in the way (g_free; why may be NULL). */
static gboolean upstream_can_fit(GstCudaConvolve *self, const gchar *comps,
                                 GstCaps *cur, gchar **why)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  /* the same stream in any format they fit */
  GstCaps *same = gst_caps_copy(cur);
  gst_structure_remove_fields(gst_caps_get_structure(same, 0), "format",
                              "colorimetry", "chroma-site", NULL);
  GstCaps *tmpl = gst_pad_get_pad_template_caps(trans->sinkpad);
  GstCaps *fits = fitting_caps(tmpl, comps);
  GstCaps *want = gst_caps_intersect(same, fits);
  GstCaps *can = gst_caps_is_empty(want)
                     ? NULL
                     : gst_pad_peer_query_caps(trans->sinkpad, want);
  GstCaps *both = can && !gst_caps_is_empty(can)
                      ? gst_pad_peer_query_caps(trans->srcpad, can)
                      : NULL;
  gboolean yes = both && !gst_caps_is_empty(both);
  /* the links above, a tee's other branches included */
  gchar *far = yes ? upstream_links_unfit(self, comps) : NULL;
  if (why)
    *why = far   ? g_strdup(far)
           : yes ? NULL
           : can && !gst_caps_is_empty(can)
               ? g_strdup("upstream offers a format that has them but "
                          "downstream takes none")
               : g_strdup("upstream offers no format that has them");
  if (far)
    yes = FALSE;
  GST_INFO_OBJECT(self,
                  "components '%s' do not fit %" GST_PTR_FORMAT
                  "; upstream can give %" GST_PTR_FORMAT
                  ", downstream take %" GST_PTR_FORMAT "%s%s",
                  comps, cur, can, both, far ? "; but " : "", far ? far : "");
  g_free(far);
  if (can)
    gst_caps_unref(can);
  if (both)
    gst_caps_unref(both);
  gst_caps_unref(want);
  gst_caps_unref(fits);
  gst_caps_unref(tmpl);
  gst_caps_unref(same);
  return yes;
}

/* What one side can take given the other's caps: the same caps, with
 * only the formats the components fit, so that negotiation picks one of
 * those ("luma" a YUV or gray format, "gb" an RGB one: an upstream
 * videoconvert converts to it). Where the components fit none of them,
 * the caps as they are: negotiation goes on and set_info refuses the
 * format with an error that names the components (empty caps would end
 * in not-negotiated, and no word of why); but none for components probed
 * (upstream_links_unfit), where that is the answer sought. */
static GstCaps *gst_cuda_convolve_transform_caps(GstBaseTransform *trans,
                                                 GstPadDirection direction,
                                                 GstCaps *caps, GstCaps *filter)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
  gboolean probe;
  gchar *comps = answering_components(self, &probe);
  GstCaps *from = gst_caps_is_any(caps)
                      ? gst_pad_get_pad_template_caps(direction == GST_PAD_SINK
                                                          ? trans->srcpad
                                                          : trans->sinkpad)
                      : gst_caps_ref(caps);
  GstCaps *ret = fitting_caps(from, comps);
  g_free(comps);
  if (gst_caps_is_empty(ret) && !probe) {
    gst_caps_unref(ret);
    ret = gst_caps_copy(from);
  }
  gst_caps_unref(from);
  if (filter) {
    GstCaps *t = gst_caps_intersect_full(filter, ret, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(ret);
    ret = t;
  }
  GST_DEBUG_OBJECT(self, "%" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, caps, ret);
  return ret;
}

/* ---- kernels --------------------------------------------------------- */

/* Does preset (cf_preset + 1) take size / sigma? gaussian, box and
 * unsharp take a size, gaussian and unsharp a sigma; the others are 3x3. */
static gboolean preset_takes_size(gint preset)
{
  cf_preset p = (cf_preset)(preset - 1);
  return p == CF_PRESET_GAUSSIAN || p == CF_PRESET_BOX ||
         p == CF_PRESET_UNSHARP;
}

static gboolean preset_takes_sigma(gint preset)
{
  cf_preset p = (cf_preset)(preset - 1);
  return p == CF_PRESET_GAUSSIAN || p == CF_PRESET_UNSHARP;
}

/* The preset's kernel, size and sigma passed only to the presets that take
 * them: a size left from a gaussian does not stand in the way of sobel-x. */
static cf_status make_preset(gint preset, guint size, gdouble sigma,
                             cf_kernel2d **k)
{
  return cf_kernel2d_preset((cf_preset)(preset - 1),
                            preset_takes_size(preset) ? size : 0,
                            preset_takes_sigma(preset) ? sigma : 0.0, k);
}

/* The kernel the settings describe, or NULL with *err set. With
 * kernel_lock held (update_kernel). */
static cf_kernel2d *compile_kernel(GstCudaConvolve *self, gchar **err)
{
  cf_kernel2d *k = NULL;
  cf_status s = CF_OK;
  *err = NULL;
  switch (self->source) {
  case SRC_IDENTITY: {
    const float one = 1.0f;
    s = cf_kernel2d_new(1, 1, 1, &one, &k);
    break;
  }
  case SRC_FILE:
    if (!self->file_kernel) { /* kept before streaming, see set_kernel_file */
      *err = g_strdup_printf("kernel-file: %s", self->file_error);
      return NULL;
    }
    s = cf_kernel2d_copy(self->file_kernel, &k);
    break;
  case SRC_PRESET:
    s = make_preset(self->preset, self->size, self->sigma, &k);
    break;
  case SRC_ARRAY: {
    guint n = self->taps->len, w = self->kernel_width, h = self->kernel_height;
    guint t = 1;
    if (!w && !h) {
      guint side = (guint)llround(sqrt((double)n));
      if ((guint64)side * side != n) {
        *err = g_strdup_printf("kernel has %u taps, not a square number: "
                               "set kernel-width and kernel-height", n);
        return NULL;
      }
      w = h = side;
    } else if (!w || !h) {
      guint given = w ? w : h;
      if (n % given) {
        *err = g_strdup_printf("kernel has %u taps, not a multiple of "
                               "kernel-%s %u", n, w ? "width" : "height",
                               given);
        return NULL;
      }
      if (w)
        h = n / w;
      else
        w = n / h;
    } else {
      guint64 slice = (guint64)w * h;
      if (n % slice) {
        *err = g_strdup_printf("kernel has %u taps, but kernel-width x "
                               "kernel-height is %u x %u = %" G_GUINT64_FORMAT
                               " (the length must be T x %" G_GUINT64_FORMAT
                               " for T temporal taps)", n, w, h, slice, slice);
        return NULL;
      }
      t = (guint)(n / slice);
    }
    s = cf_kernel2d_new(t, h, w, (const float *)self->taps->data, &k);
    break;
  }
  }
  if (s != CF_OK) {
    *err = g_strdup_printf("kernel: %s", cf_last_error());
    return NULL;
  }
  return k;
}

/* ---- a kernel change's way back (KernelUndo) ---- */

/* A set of a kernel setting begins (before it changes anything): the
 * settings as they are, kept. Takes kernel_lock. */
static void undo_begin(GstCudaConvolve *self)
{
  g_rec_mutex_lock(&self->kernel_lock);
  GST_OBJECT_LOCK(self);
  KernelUndo *u = &self->undo;
  if (u->depth++ == 0) {
    u->taps = g_array_ref(self->taps);
    u->kernel_width = self->kernel_width;
    u->kernel_height = self->kernel_height;
    u->kernel_file = self->kernel_file;
    u->file_kernel = self->file_kernel;
    u->file_error = self->file_error;
    u->preset = self->preset;
    u->size = self->size;
    u->sigma = self->sigma;
    u->source = self->source;
    memcpy(u->set_at, self->set_at, sizeof u->set_at);
    u->settings = self->settings;
    u->kernel = self->kernel;
    u->kernel_error = self->kernel_error;
    u->kernel_serial = self->kernel_serial;
  }
  GST_OBJECT_UNLOCK(self);
}

/* The change replaces the compiled kernel / the file's: the old ones are
 * freed, unless the undo holds them (freed when the change is taken).
 * Object lock held. */
static void undo_drop_kernel(GstCudaConvolve *self)
{
  if (!self->undo.depth || self->kernel != self->undo.kernel)
    cf_kernel2d_free(self->kernel);
  if (!self->undo.depth || self->kernel_error != self->undo.kernel_error)
    g_free(self->kernel_error);
  self->kernel = NULL;
  self->kernel_error = NULL;
}

static void undo_drop_file(GstCudaConvolve *self)
{
  KernelUndo *u = &self->undo;
  if (!u->depth || self->file_kernel != u->file_kernel)
    cf_kernel2d_free(self->file_kernel);
  if (!u->depth || self->kernel_file != u->kernel_file)
    g_free(self->kernel_file);
  if (!u->depth || self->file_error != u->file_error)
    g_free(self->file_error);
  self->file_kernel = NULL;
  self->kernel_file = NULL;
  self->file_error = NULL;
}

/* Put what the undo holds back in place of the current value, or free it
 * where the current value is something else and the change is taken. */
#define UNDO_SETTLE(self, field, freefn, back)                                 \
  do {                                                                         \
    if ((self)->field != (self)->undo.field) {                                 \
      if (back) {                                                              \
        freefn((self)->field);                                                 \
        (self)->field = (self)->undo.field;                                    \
      } else {                                                                 \
        freefn((self)->undo.field);                                            \
      }                                                                        \
    }                                                                          \
    (self)->undo.field = NULL;                                                 \
  } while (0)

/* The set ends: where the new kernel did not fit (undo.nomem), the
 * settings go back as they were, the kernel serial with them (the
 * streaming thread, held back by `preparing`, never saw the new one);
 * else what the change replaced is freed. Returns undo.nomem (the
 * caller's) for the refusal, or NULL. Releases kernel_lock. */
static gchar *undo_end(GstCudaConvolve *self)
{
  GST_OBJECT_LOCK(self);
  KernelUndo *u = &self->undo;
  gchar *nomem = NULL;
  if (--u->depth == 0) {
    gboolean back = (nomem = g_steal_pointer(&u->nomem)) != NULL;
    if (back && self->taps != u->taps) { /* the reference goes back */
      g_array_unref(self->taps);
      self->taps = u->taps;
    } else {
      g_array_unref(u->taps);
    }
    u->taps = NULL;
    UNDO_SETTLE(self, kernel_file, g_free, back);
    UNDO_SETTLE(self, file_kernel, cf_kernel2d_free, back);
    UNDO_SETTLE(self, file_error, g_free, back);
    UNDO_SETTLE(self, kernel, cf_kernel2d_free, back);
    UNDO_SETTLE(self, kernel_error, g_free, back);
    if (back) {
      self->kernel_width = u->kernel_width;
      self->kernel_height = u->kernel_height;
      self->preset = u->preset;
      self->size = u->size;
      self->sigma = u->sigma;
      self->source = u->source;
      memcpy(self->set_at, u->set_at, sizeof u->set_at);
      self->settings = u->settings;
      self->kernel_serial = u->kernel_serial;
    }
  }
  GST_OBJECT_UNLOCK(self);
  g_rec_mutex_unlock(&self->kernel_lock);
  return nomem;
}
#undef UNDO_SETTLE

/* A kernel change for the setter to prepare (prepare_kernel). */
typedef struct {
  cf_kernel2d *k; /* a copy of the new kernel, or NULL: nothing to do */
  guint serial;   /* its kernel_serial */
} KernelPrep;

/* Recompile after a kernel setting changed. Object lock held, and
 * kernel_lock (a kernel setter's, undo_begin; or the instance's init):
 * the lock is released while the kernel is compiled and copied (a
 * 4095x4095 preset: 100 ms, its copy 50 ms; every getter and the
 * streaming thread waited for them: QA), the settings compile_kernel
 * reads being the kernel setters' alone, which kernel_lock keeps. With
 * an engine running, returns a copy of the new kernel for
 * prepare_kernel(), which the caller must call once it has released the
 * lock (the streaming thread takes the new kernel only after that), else
 * k NULL. */
static G_GNUC_WARN_UNUSED_RESULT KernelPrep update_kernel(GstCudaConvolve *self)
{
  gchar *err;
  gboolean streaming = self->engine != NULL;
  GST_OBJECT_UNLOCK(self);
  cf_kernel2d *k = compile_kernel(self, &err);
  cf_kernel2d *copy = NULL;
  if (k && streaming && cf_kernel2d_copy(k, &copy) != CF_OK)
    copy = NULL; /* out of memory: the change just goes unprepared */
  GST_OBJECT_LOCK(self);
  undo_drop_kernel(self);
  self->kernel = k;
  self->kernel_error = err;
  self->kernel_serial++;
  if (err)
    GST_DEBUG_OBJECT(self, "kernel settings disagree for now: %s", err);
  KernelPrep prep = {NULL, self->kernel_serial};
  if (copy && self->engine) {
    prep.k = copy;
    self->preparing++;
  } else {
    cf_kernel2d_free(copy); /* the stream stopped meanwhile */
  }
  return prep; /* an engine made meanwhile takes the kernel unprepared */
}

/* The reaper's: every retired swap queued gives its CPU state back. */
static void reap_swaps(gpointer unused, gpointer queue)
{
  (void)unused;
  cf_swap_prep2d *p;
  while ((p = g_async_queue_try_pop(queue)))
    cf_swap_prep2d_free(p);
}

/* Hand retired CPU state p to the reaper (streaming thread); FALSE where
 * it has no thread (none could be made): p stays the caller's. */
static gboolean to_reaper(GstCudaConvolve *self, cf_swap_prep2d *p)
{
  if (!self->reaper && !(self->reaper = g_thread_pool_new(
                             reap_swaps, self->retired, 1, FALSE, NULL)))
    return FALSE;
  g_async_queue_push(self->retired, p);
  /* FALSE: no thread could start; the next wake-up or finalize takes it */
  (void)g_thread_pool_push(self->reaper, GINT_TO_POINTER(1), NULL);
  return TRUE;
}

/* Move the three swaps of `from` to `to` (NULL left behind). */
static void swaps_take(cf_swap_prep2d **from, cf_swap_prep2d **to)
{
  for (guint i = 0; i < 3; i++)
    to[i] = g_steal_pointer(&from[i]);
}

static void swaps_free(cf_swap_prep2d **p)
{
  for (guint i = 0; i < 3; i++)
    g_clear_pointer(&p[i], cf_swap_prep2d_free);
}

/* In the setter's thread, before the streaming thread takes the new
 * kernel (from update_kernel): build the swap to it for each engine
 * (cf_engine_prepare_swap2d; interlaced video's field engines and mixed
 * video's frame engine too): the FFT plan the engine will need, measured
 * (up to a second the first time on a machine, then from FFTW's wisdom on
 * disk: the engine's own kernel change never measures, and a new tile
 * size would run on an estimated plan, 15-30% slower per frame), on the
 * CPU the kernel's plan, spectra, scratch, border maps and history, on
 * CUDA its device buffers, plans and spectra, so that the streaming
 * thread's swap allocates, frees and waits for nothing. The
 * stream goes on with the previous kernel meanwhile. Also gives back the
 * kernel state the last swap retired. No lock held. */
static void prepare_kernel(GstCudaConvolve *self, KernelPrep prep)
{
  cf_swap_prep2d *made[3];
  GST_OBJECT_LOCK(self);
  swaps_take(self->made, made);
  GST_OBJECT_UNLOCK(self);
  swaps_free(made);
  if (!prep.k)
    return;
  cf_swap_prep2d *p[3] = {NULL, NULL, NULL};
  g_mutex_lock(&self->engine_lock);
  gint gen = g_atomic_int_get(&self->engine_gen);
  /* each engine's own (an interlaced stream's fields are pictures of
   * their own sizes, a mixed stream's frames another) */
  cf_engine *es[3] = {self->engine, self->bottom, self->whole};
  gboolean any = FALSE;
  gchar *nomem = NULL;
  for (guint i = 0; i < 3 && !nomem; i++) {
    cf_status ps =
        es[i] ? cf_engine_prepare_swap2d(es[i], prep.k, &p[i]) : CF_OK;
    if (ps == CF_E_NOMEM)
      nomem = g_strdup(cf_last_error());
    else if (ps != CF_OK)
      GST_DEBUG_OBJECT(self, "no swap built ahead for engine %u: %s", i,
                       cf_last_error());
    any |= p[i] != NULL;
  }
  g_mutex_unlock(&self->engine_lock); /* the kernel change says why again */
  gboolean fits = nomem == NULL;
  if (nomem) {
    swaps_free(p);
    any = FALSE;
  }
  cf_swap_prep2d *older[3] = {NULL, NULL, NULL};
  GST_OBJECT_LOCK(self);
  /* Memory the new kernel cannot have: the streaming thread would run out
   * the same when it swaps (in its thread, on the CPU), the failure then
   * a warning on the bus only, after the set had been taken (QA: a
   * cudafilterctl set of a kernel that did not fit under a memory limit
   * answered ok). The set is refused (undo_end), as cudafir refuses it. */
  if (nomem && self->undo.depth && prep.serial == self->kernel_serial) {
    g_free(self->undo.nomem);
    self->undo.nomem = g_steal_pointer(&nomem);
  }
  if (nomem)
    GST_WARNING_OBJECT(self, "the new kernel does not fit in memory: %s",
                       nomem);
  g_free(nomem);
  /* still the last change, for the engines running */
  if (any && prep.serial == self->kernel_serial &&
      gen == g_atomic_int_get(&self->engine_gen)) {
    swaps_take(self->prepared, older);
    swaps_take(p, self->prepared);
    self->prepared_serial = prep.serial;
    self->prepared_gen = gen;
  }
  /* the copy, for the streaming thread to take (a refused one is never
   * the kernel: undo_end puts the serial before it back) */
  cf_kernel2d *stale = NULL;
  if (fits && prep.serial == self->kernel_serial) {
    stale = self->ready;
    self->ready = g_steal_pointer(&prep.k);
    self->ready_serial = prep.serial;
  }
  self->preparing--;
  GST_OBJECT_UNLOCK(self);
  cf_kernel2d_free(stale);
  cf_kernel2d_free(prep.k);
  swaps_free(older);
  swaps_free(p);
}

/* ---- fields ------------------------------------------------------------ */

/* What a frame is filtered as (held_kind): a picture, or two fields. */
enum { KIND_NONE = -1, KIND_FRAME, KIND_FIELDS };

/* Field `parity` (0 top, 1 bottom) of frame f: every other row of each
 * plane from row `parity` on (the chroma rows of interlaced 4:2:0
 * alternate between the fields too, as GStreamer lays them out). */
static void field_of(const cf_frame *f, guint parity, cf_frame *out)
{
  memset(out, 0, sizeof *out);
  for (guint p = 0; p < 3; p++)
    if (f->data[p]) {
      out->data[p] = (guint8 *)f->data[p] + parity * f->stride[p];
      out->stride[p] = 2 * f->stride[p];
    }
}

static gboolean info_alternate(const GstVideoInfo *info)
{
  return GST_VIDEO_INFO_INTERLACE_MODE(info) ==
         GST_VIDEO_INTERLACE_MODE_ALTERNATE;
}

/* The engines for frames of `info` with cfg (its height the frame's):
 * out[0] the frame's, or with interlaced caps the top field's; out[1]
 * the bottom field's (none for a frame of one row, except with alternate
 * caps: a buffer flagged bottom there is filtered as the one row it
 * holds); out[2] with mixed caps the one for progressive frames. All or
 * none. */
static cf_status new_engines(cf_video_config *cfg, const GstVideoInfo *info,
                             const cf_kernel2d *k, cf_engine *out[3])
{
  guint h = cfg->height;
  gboolean fields = GST_VIDEO_INFO_IS_INTERLACED(info);
  gboolean mixed = GST_VIDEO_INFO_INTERLACE_MODE(info) ==
                   GST_VIDEO_INTERLACE_MODE_MIXED;
  guint bottom = info_alternate(info) ? MAX(h / 2, 1) : h / 2;
  guint heights[3] = {fields ? (h + 1) / 2 : h, fields ? bottom : 0,
                      mixed ? h : 0};
  cf_status st = CF_OK;
  out[0] = out[1] = out[2] = NULL;
  /* the frames before the first (and after a flush or a DISCONT) are
   * black frames, not zeros, which are a saturated green in YUV */
  gboolean full = GST_VIDEO_INFO_COLORIMETRY(info).range ==
                  GST_VIDEO_COLOR_RANGE_0_255;
  for (guint i = 0; i < 3 && st == CF_OK; i++)
    if (heights[i]) {
      cfg->height = heights[i];
      st = cf_engine_new_video(cfg, k, &out[i]);
      if (st == CF_OK)
        st = cf_engine_set_history_black(out[i], full);
    }
  cfg->height = h;
  if (st != CF_OK)
    for (guint i = 0; i < 3; i++)
      g_clear_pointer(&out[i], cf_engine_free);
  return st;
}

/* The engines that filter frames of `kind`, in e (NULL where none):
 * the frame engine, or the top and bottom fields'. */
static void engines_of(const GstCudaConvolve *self, gint kind, cf_engine *e[2])
{
  if (kind == KIND_FIELDS) {
    e[0] = self->engine;
    e[1] = self->bottom;
  } else {
    e[0] = self->fields ? self->whole : self->engine;
    e[1] = NULL;
  }
}

/* The kind of frame `buf` under the negotiated caps: fields with
 * interlaced caps, except the frames of mixed caps that do not carry
 * GST_VIDEO_BUFFER_FLAG_INTERLACED. */
static gint frame_kind(const GstCudaConvolve *self, GstBuffer *buf)
{
  if (!self->fields ||
      (self->mixed &&
       !GST_BUFFER_FLAG_IS_SET(buf, GST_VIDEO_BUFFER_FLAG_INTERLACED)))
    return KIND_FRAME;
  return KIND_FIELDS;
}

/* ---- alternate fields ---- */

/* The parity a field held (in flight) came as, on its metadata. */
static GQuark field_quark(void)
{
  return g_quark_from_static_string("cudaconvolve-field-parity");
}

/* The parity (0 top, 1 bottom) of field buffer `buf` under alternate
 * caps. Its flags say it: GST_VIDEO_BUFFER_FLAG_TOP_FIELD is TFF |
 * ONEFIELD, BOTTOM_FIELD is ONEFIELD alone, so that a buffer flagged both
 * is TOP_FIELD, as GST_VIDEO_BUFFER_IS_TOP_FIELD reads it. One without
 * ONEFIELD (neither flag; TFF alone is no field flag either) is taken as
 * the field after the last one, the caps requiring them to alternate:
 * the other parity, the first one top (a warning in the debug log, once
 * per caps). Every buffer that comes counts, dropped ones too
 * (streaming thread). */
static guint field_parity(GstCudaConvolve *self, GstBuffer *buf)
{
  guint p;
  if (GST_BUFFER_FLAG_IS_SET(buf, GST_VIDEO_BUFFER_FLAG_ONEFIELD)) {
    p = GST_BUFFER_FLAG_IS_SET(buf, GST_VIDEO_BUFFER_FLAG_TFF) ? 0 : 1;
  } else {
    p = self->last_parity >= 0 ? !self->last_parity : 0;
    if (!self->told_unflagged)
      GST_WARNING_OBJECT(
          self,
          "interlace-mode alternate, but a buffer (pts %" GST_TIME_FORMAT
          ") carries neither TOP_FIELD nor BOTTOM_FIELD: taken as the "
          "%s field (fields alternate)",
          GST_TIME_ARGS(GST_BUFFER_PTS(buf)), p ? "bottom" : "top");
    self->told_unflagged = TRUE;
  }
  self->last_parity = (gint)p;
  return p;
}

/* The parity of the oldest field in flight, or -1 where none is. */
static gint head_parity(GstCudaConvolve *self)
{
  guint n = gst_queue_array_get_length(self->inflight);
  for (guint i = 0; i < n; i++) {
    GstMiniObject *o = gst_queue_array_peek_nth(self->inflight, i);
    if (GST_IS_BUFFER(o))
      return GPOINTER_TO_INT(gst_mini_object_get_qdata(o, field_quark())) - 1;
  }
  return -1;
}

/* The fields of `parity` in flight (each in that parity's engine). */
static guint held_of(GstCudaConvolve *self, guint parity)
{
  guint n = gst_queue_array_get_length(self->inflight), held = 0;
  for (guint i = 0; i < n; i++) {
    GstMiniObject *o = gst_queue_array_peek_nth(self->inflight, i);
    if (GST_IS_BUFFER(o) && GPOINTER_TO_UINT(gst_mini_object_get_qdata(
                                o, field_quark())) == parity + 1)
      held++;
  }
  return held;
}

/* GStreamer lays out GST_VIDEO_INFO_FIELD_HEIGHT rows, (h + 1) / 2, in
 * a field buffer of either parity; the bottom field of a frame of odd
 * height h has h / 2, and its engine writes those. The rows past them
 * (one luma row; a 4:2:0 chroma row where (h + 1) / 2 is odd) repeat the
 * field's last row, rather than keep what the output buffer held. */
static void pad_field(GstCudaConvolve *self, guint parity, const cf_frame *out)
{
  const GstVideoInfo *info = &GST_VIDEO_FILTER(self)->out_info;
  guint h = (guint)GST_VIDEO_INFO_HEIGHT(info);
  if (!self->alternate || !parity || h % 2 == 0 || h == 1)
    return;
  const GstVideoFormatInfo *fi = info->finfo;
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(info) && p < 3; p++) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component(fi, p, comp);
    guint rows = (guint)GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(
        fi, comp[0], GST_VIDEO_INFO_FIELD_HEIGHT(info));
    guint have = (guint)GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(fi, comp[0], h / 2);
    gsize bytes = (gsize)GST_VIDEO_INFO_COMP_WIDTH(info, comp[0]) *
                  (gsize)GST_VIDEO_INFO_COMP_PSTRIDE(info, comp[0]);
    guint8 *d = out->data[p];
    for (guint y = have; y < rows; y++)
      memcpy(d + y * out->stride[p], d + (have - 1) * out->stride[p], bytes);
  }
}

/* cf_engine_process_frame, then the history engine e gave up at the
 * frame (a kernel of fewer temporal taps put its own in force at its
 * first frame: a 64-frame kernel left for a 3x3 one held 152 MB of
 * 1080p GRAY8 until a longer kernel or the end, QA) given back by the
 * reaper, as the state a swap retires (cf_engine_take_retired2d). */
static cf_status process_one(GstCudaConvolve *self, cf_engine *e,
                             const cf_frame *in, const cf_frame *out)
{
  cf_status s = cf_engine_process_frame(e, in, out);
  cf_swap_prep2d *p = NULL;
  if (s == CF_OK && cf_engine_take_retired2d(e, &p) == CF_OK && p &&
      !to_reaper(self, p))
    cf_swap_prep2d_free(p); /* no thread: here */
  return s;
}

/* Filter frame `in` of `kind` into `out` (process_one): each field
 * apart where it is fields; with alternate caps the buffer, a field, on
 * the engine of its parity (self->parity). */
static cf_status process_kind(GstCudaConvolve *self, gint kind,
                              const cf_frame *in, const cf_frame *out)
{
  cf_engine *e[2];
  engines_of(self, kind, e);
  if (self->alternate)
    return process_one(self, e[self->parity ? 1 : 0], in, out);
  if (kind != KIND_FIELDS)
    return process_one(self, e[0], in, out);
  for (guint parity = 0; parity < 2; parity++) {
    if (!e[parity])
      continue;
    cf_frame fi, fo;
    field_of(in, parity, &fi);
    field_of(out, parity, &fo);
    cf_status s = process_one(self, e[parity], &fi, &fo);
    if (s != CF_OK)
      return s;
  }
  return CF_OK;
}

/* The oldest frame the engines of the frames in flight hold, into `out`
 * (cf_engine_flush_frame); with alternate caps the oldest field, from
 * its parity's engine. */
static cf_status flush_kind(GstCudaConvolve *self, const cf_frame *out,
                            int *got)
{
  cf_engine *e[2];
  engines_of(self, self->held_kind, e);
  *got = 0;
  if (self->alternate) {
    gint parity = head_parity(self);
    if (parity < 0 || !e[parity])
      return CF_OK;
    cf_status s = cf_engine_flush_frame(e[parity], out, got);
    if (s == CF_OK && *got)
      pad_field(self, (guint)parity, out);
    return s;
  }
  if (self->held_kind != KIND_FIELDS)
    return e[0] ? cf_engine_flush_frame(e[0], out, got) : CF_OK;
  for (guint parity = 0; parity < 2; parity++) {
    if (!e[parity])
      continue;
    cf_frame fo;
    int g = 0;
    field_of(out, parity, &fo);
    cf_status s = cf_engine_flush_frame(e[parity], &fo, &g);
    if (s != CF_OK)
      return s;
    if (!parity)
      *got = g;
  }
  return CF_OK;
}

/* Restart the temporal history of the engines of `kind` (KIND_NONE: of
 * all of them). */
static void reset_kind(GstCudaConvolve *self, gint kind)
{
  cf_engine *all[3] = {self->engine, self->bottom, self->whole};
  for (guint i = 0; i < 3; i++) {
    if (!all[i])
      continue;
    gint is = i == 2 || !self->fields ? KIND_FRAME : KIND_FIELDS;
    if (kind == KIND_NONE || kind == is)
      cf_engine_reset(all[i]);
  }
}

/* The backend the engines run on: the CPU once any of them moved there
 * (backend auto after a device failure). */
static cf_backend engines_backend(const GstCudaConvolve *self)
{
  const cf_engine *all[3] = {self->engine, self->bottom, self->whole};
  for (guint i = 1; i < 3; i++)
    if (all[i] && cf_engine_backend(all[i]) == CF_BACKEND_CPU)
      return CF_BACKEND_CPU;
  return cf_engine_backend(self->engine);
}

/* Which engines run on the CPU: bit i for engine, bottom, whole. */
static guint engines_on_cpu(const GstCudaConvolve *self)
{
  const cf_engine *all[3] = {self->engine, self->bottom, self->whole};
  guint mask = 0;
  for (guint i = 0; i < 3; i++)
    if (all[i] && cf_engine_backend(all[i]) == CF_BACKEND_CPU)
      mask |= 1u << i;
  return mask;
}

/* The engine that moved to the CPU, for its reason (the first engine
 * where none did). */
static const cf_engine *fallen_engine(const GstCudaConvolve *self)
{
  const cf_engine *all[3] = {self->engine, self->bottom, self->whole};
  for (guint i = 0; i < 3; i++)
    if (all[i] && cf_engine_fallback_reason(all[i]))
      return all[i];
  return self->engine;
}

/* ---- the engine -------------------------------------------------------- */

/* Outcome of ensure_engine: what to report once the lock is released. */
typedef struct {
  gchar *msg;
  gboolean fatal;           /* no engine to go on with */
  const char *put_back[11]; /* properties a refused rebuild put back */
  gboolean described;       /* backend-in-use changed */
  /* what a new engine replaced, freed without the object lock
   * (report_note): the swaps before the engines they were built for */
  cf_swap_prep2d *old_swaps[9];
  cf_engine *old_engines[3];
} EngineNote;

/* Free what a new engine replaced (an engine outlives its swaps). No lock
 * held: freeing an 1100x1100 kernel's engine and swaps takes a while. */
static void note_retire(EngineNote *note)
{
  for (guint i = 0; i < G_N_ELEMENTS(note->old_swaps); i++)
    g_clear_pointer(&note->old_swaps[i], cf_swap_prep2d_free);
  for (guint i = 0; i < G_N_ELEMENTS(note->old_engines); i++)
    g_clear_pointer(&note->old_engines[i], cf_engine_free);
}

/* Add why (taken) to what ensure_engine reports, after what it has. */
static void note_add(EngineNote *note, gchar *why)
{
  if (note->msg) {
    gchar *both = g_strdup_printf("%s; %s", note->msg, why);
    g_free(why);
    why = both;
  }
  g_free(note->msg);
  note->msg = why;
}

/* The engine's configuration from the properties and the negotiated info.
 * Object lock held. */
static gboolean make_config(GstCudaConvolve *self, const GstVideoInfo *info,
                            const gchar *comps, cf_video_config *cfg,
                            gchar **err)
{
  cf_video_config_init(cfg);
  const gchar *fname = gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(info));
  if (!fname || cf_pixel_format_from_string(fname, &cfg->format) != CF_OK) {
    *err = g_strdup_printf("format %s is not supported", fname ? fname : "?");
    return FALSE;
  }
  cfg->width = GST_VIDEO_INFO_WIDTH(info);
  cfg->height = GST_VIDEO_INFO_HEIGHT(info);
  if (cf_components_from_string(comps, cfg->format, &cfg->components) !=
      CF_OK) {
    *err = g_strdup(cf_last_error());
    return FALSE;
  }
  cfg->border = self->border;
  cfg->cval = self->cval;
  cfg->scale = self->scale;
  cfg->bias = self->bias;
  cfg->absolute = self->absolute;
  cfg->backend = self->backend;
  /* CUDA memory: frames the engine takes on the device, which backend
   * auto refuses (it keeps host copies to fall back with) */
  if (self->cuda_caps && cfg->backend == CF_BACKEND_AUTO)
    cfg->backend = CF_BACKEND_CUDA;
  cfg->device_id = self->device_id;
  cfg->pipeline_depth = self->pipeline_depth;
  cfg->threads = self->threads;
  return TRUE;
}

/* Object lock held. */
static void settings_take(const GstCudaConvolve *self, EngineSettings *b)
{
  b->border = self->border;
  b->cval = self->cval;
  b->scale = self->scale;
  b->bias = self->bias;
  b->absolute = self->absolute;
  b->backend = self->backend;
  b->device_id = self->device_id;
  b->pipeline_depth = self->pipeline_depth;
  b->threads = self->threads;
}

/* A rebuild the engine refused while the previous engine goes on: the
 * settings go back to that engine's, so that they describe it and the
 * next change builds on them (a refused backend=cuda would otherwise
 * refuse every rebuild after it). The names of those that changed into
 * note->put_back. Object lock held. */
static void settings_put_back(GstCudaConvolve *self, EngineNote *note)
{
  const EngineSettings *b = &self->built;
  guint n = 0;
#define PUT_BACK(field, name)                                                  \
  if (self->field != b->field) {                                               \
    self->field = b->field;                                                    \
    note->put_back[n++] = name;                                                \
  }
  PUT_BACK(border, "border");
  PUT_BACK(cval, "cval");
  /* (scale, bias and absolute: the engine kept takes them) */
  PUT_BACK(backend, "backend");
  PUT_BACK(device_id, "device-id");
  PUT_BACK(pipeline_depth, "pipeline-depth");
  PUT_BACK(threads, "threads");
#undef PUT_BACK
  if (self->engine_components &&
      strcmp(self->components, self->engine_components)) {
    g_free(self->components);
    self->components = g_strdup(self->engine_components);
    self->await_caps = 0;
    note->put_back[n++] = "components";
  }
  note->put_back[n] = NULL;
}

/* Whether engine descriptions a and b ("cpu: 720x288 I420, kernel 1x5x5,
 * direct, 2 bands, ...") say the same but for the frame size: a
 * frame's fields, one row apart, usually do. */
static gboolean same_path(const char *a, const char *b)
{
  const char *ca = strchr(a, ':'), *cb = strchr(b, ':');
  const char *ra = strstr(a, ", "), *rb = strstr(b, ", ");
  if (!ca || !cb || !ra || !rb)
    return strcmp(a, b) == 0;
  return ca - a == cb - b && strncmp(a, b, (size_t)(ca - a)) == 0 &&
         strcmp(ra, rb) == 0;
}

/* backend-in-use: the engine and its latency; whether that changed.
 * Object lock held. */
static gboolean describe_engine(GstCudaConvolve *self)
{
  gchar *was = self->backend_in_use;
  /* the top field's engine (or the frame's), and the others' where they
   * took another path (a backend of their own after a fallback, another
   * algorithm or band count for their size) */
  const char *top = cf_engine_describe(self->engine);
  GString *more = g_string_new(NULL);
  const cf_engine *other[2] = {self->bottom, self->whole};
  static const char *const name[2] = {"bottom field", "progressive frames"};
  for (guint i = 0; i < 2; i++) {
    const char *d = other[i] ? cf_engine_describe(other[i]) : NULL;
    if (d && !same_path(top, d))
      g_string_append_printf(more, "; %s: %s", name[i], d);
  }
  self->backend_in_use = g_strdup_printf(
      "%s%s%s; latency %u frame%s", top,
      !self->fields ? ""
      : self->mixed ? "; interlaced frames per field, progressive ones whole"
      : self->alternate ? "; one field per buffer (alternate), per parity"
                        : "; per field (interlaced)",
      more->str, self->latency_frames, self->latency_frames == 1 ? "" : "s");
  g_string_free(more, TRUE);
  gboolean changed = g_strcmp0(was, self->backend_in_use) != 0;
  g_free(was);
  return changed;
}

/* After an engine call: backend=auto leaves a failing CUDA device for the
 * CPU inside the call, losing no frame (the engine's contract). Say so on
 * the bus, once, and in backend-in-use, for each engine that falls back
 * (interlaced video's engines each at their own call: the second one to
 * fall back, a field or frame later, was still named on the device). */
static void note_fallback(GstCudaConvolve *self)
{
  cf_backend now = engines_backend(self);
  guint on_cpu = engines_on_cpu(self);
  GST_OBJECT_LOCK(self);
  cf_backend was = self->running;
  self->running = now;
  gboolean moved = on_cpu != self->on_cpu;
  self->on_cpu = on_cpu;
  gboolean described = (moved || now != was) && describe_engine(self);
  GST_OBJECT_UNLOCK(self);
  if (now == was) {
    if (described)
      g_object_notify(G_OBJECT(self), "backend-in-use");
    return;
  }
  GST_ELEMENT_WARNING(self, RESOURCE, FAILED,
                      ("cudaconvolve: the %s backend failed; filtering goes "
                       "on on the %s, no frame lost",
                       cf_backend_name(was), cf_backend_name(now)),
                      ("%s; now: %s",
                       cf_engine_fallback_reason(fallen_engine(self))
                           ? cf_engine_fallback_reason(fallen_engine(self))
                           : "no reason given",
                       cf_engine_describe(fallen_engine(self))));
  g_object_notify(G_OBJECT(self), "backend-in-use");
}

/* The components frames of format fname are filtered with while upstream
 * is asked for a format the components set fit: those of the engine
 * before, where they fit; else the newest of those set lately that do:
 * components changed again before the caps negotiated for them came (a
 * UI stepping from "rgb" to "uv" on I420 took "uv" at once, then the
 * BGRA that "rgb" had asked for stopped the stream: QA). Object lock
 * held. */
static const gchar *interim_components(GstCudaConvolve *self,
                                       const gchar *fname)
{
  if (self->engine_components && components_fit(self->engine_components, fname))
    return self->engine_components;
  for (guint i = self->n_recent; i-- > 0;)
    if (components_fit(self->recent_components[i], fname))
      return self->recent_components[i];
  return NULL;
}

/* A components value taken by the setter, kept among the recent ones.
 * Object lock held. */
static void remember_components(GstCudaConvolve *self, const gchar *s)
{
  if (self->n_recent == RECENT_COMPONENTS) {
    g_free(self->recent_components[0]);
    memmove(self->recent_components, self->recent_components + 1,
            (RECENT_COMPONENTS - 1) * sizeof self->recent_components[0]);
    self->n_recent--;
  }
  self->recent_components[self->n_recent++] = g_strdup(s);
}

/* Bring the engine up to date with the properties: a new engine when there
 * is none, the configuration changed or `rebuild`; else a new kernel when
 * it changed. Anything refused leaves the engine and its kernel as they
 * were. Object lock held, but released while a new engine is built (which
 * may measure an FFT plan for up to a second: a setter in an application's
 * UI thread waited that long for the lock); what the build was made from
 * is a snapshot, and a setting changed meanwhile counts as pending for the
 * next frame. *note is filled for the caller to report. */
static void ensure_engine(GstCudaConvolve *self, const GstVideoInfo *info,
                          gboolean rebuild, EngineNote *note)
{
  memset(note, 0, sizeof *note);
  gboolean need_config = rebuild || !self->engine ||
                         self->config_serial != self->engine_config_serial;
  cf_kernel2d *newk = NULL;
  if ((self->kernel_serial != self->engine_kernel_serial && !self->preparing) ||
      !self->active) {
    /* the setter's copy where it made one for this kernel, else one
     * made here (a kernel set while no engine ran) */
    if (self->ready && self->ready_serial != self->kernel_serial)
      g_clear_pointer(&self->ready, cf_kernel2d_free); /* an older one */
    if (self->kernel && self->ready) {
      newk = g_steal_pointer(&self->ready);
    } else if (self->kernel) {
      if (cf_kernel2d_copy(self->kernel, &newk) != CF_OK) {
        note->msg = g_strdup_printf("kernel: %s", cf_last_error());
        note->fatal = !self->engine;
        return;
      }
    } else {
      note->msg = g_strdup_printf("%s; %s", self->kernel_error,
                                  self->active ? "keeping the previous kernel"
                                               : "no kernel to filter with");
      if (!self->active) {
        note->fatal = TRUE;
        return;
      }
    }
    /* reported once: the next try waits for the next change */
    self->engine_kernel_serial = self->kernel_serial;
  }
  /* the swaps built for this kernel, if there are */
  cf_swap_prep2d *prep[3] = {NULL, NULL, NULL};
  if (newk && self->prepared_serial == self->kernel_serial &&
      self->prepared_gen == g_atomic_int_get(&self->engine_gen))
    swaps_take(self->prepared, prep);

  /* Components the format lacks while upstream is asked for one they fit
   * (await_caps): the frames still coming in this format are filtered with
   * the components of the engine before, by that engine or, for new caps
   * that crossed the change, by one built with them. */
  const gchar *fname = gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(info));
  const gchar *comps = self->components;
  gboolean interim = FALSE;
  if (need_config && self->await_caps && !components_fit(comps, fname)) {
    if (!rebuild && self->engine) {
      self->await_caps--;
      GST_DEBUG_OBJECT(self,
                       "frame in the old format while waiting for new "
                       "caps (%u more at most)",
                       self->await_caps);
      need_config = FALSE;
    } else if ((comps = interim_components(self, fname)) != NULL) {
      interim = TRUE;
    } else {
      comps = self->components;
    }
  }
  if (need_config) {
    cf_video_config cfg;
    gchar *err = NULL;
    cf_engine *e = NULL;
    /* the settings this build is made from */
    guint seen = self->config_serial, seen_output = self->output_serial;
    if (!make_config(self, info, comps, &cfg, &err))
      goto refused;
    EngineSettings snap;
    settings_take(self, &snap);
    gboolean cpu_retry = self->cuda_caps && self->backend == CF_BACKEND_AUTO;
    gchar *made_comps = g_strdup(comps);
    /* self->active and newk: the streaming thread's alone */
    const cf_kernel2d *k = newk ? newk : self->active;
    GST_OBJECT_UNLOCK(self);
    cf_engine *es[3];
    cf_status st = new_engines(&cfg, info, k, es);
    if (st != CF_OK && cpu_retry) {
      GST_WARNING_OBJECT(self,
                         "CUDA memory, but the CUDA engine cannot run "
                         "(%s): the CPU filters it through host mappings",
                         cf_last_error());
      cfg.backend = CF_BACKEND_CPU;
      st = new_engines(&cfg, info, k, es);
    }
    e = es[0];
    /* engine_lock before the object lock, never waited for with the
     * object lock held: a setter's prepare_kernel holds engine_lock while
     * it builds the swaps for a new kernel (seconds for a big one), and
     * every getter waited that long for the object lock held here (QA) */
    if (st == CF_OK)
      g_mutex_lock(&self->engine_lock);
    GST_OBJECT_LOCK(self);
    if (st != CF_OK) {
      g_free(made_comps);
      err = g_strdup_printf("cannot build the engine (%ux%u %s, backend "
                            "%s): %s", cfg.width, cfg.height,
                            cf_pixel_format_name(cfg.format),
                            cf_backend_name(cfg.backend), cf_last_error());
      goto refused;
    }
    /* the old engine's frames in flight were pushed out before
     * (prepare_engine, set_info) */
    g_warn_if_fail(gst_queue_array_is_empty(self->inflight));
    /* swaps built for the old engines go before them, once the locks
     * are released (report_note) */
    swaps_take(prep, note->old_swaps);
    swaps_take(self->prepared, note->old_swaps + 3);
    swaps_take(self->made, note->old_swaps + 6);
    note->old_engines[0] = self->engine;
    note->old_engines[1] = self->bottom;
    note->old_engines[2] = self->whole;
    self->engine = e;
    self->bottom = es[1];
    self->whole = es[2];
    self->fields = GST_VIDEO_INFO_IS_INTERLACED(info);
    self->mixed = GST_VIDEO_INFO_INTERLACE_MODE(info) ==
                  GST_VIDEO_INTERLACE_MODE_MIXED;
    self->alternate = info_alternate(info);
    self->held_kind = KIND_NONE;
    g_atomic_int_inc(&self->engine_gen);
    g_mutex_unlock(&self->engine_lock);
    /* an interim engine leaves the settings pending: the frames after count
     * down await_caps (as does a change made while it was built) */
    self->engine_config_serial = seen - (interim ? 1 : 0);
    self->engine_output_serial = seen_output; /* built with them */
    g_free(self->engine_components);
    self->engine_components = made_comps;
    self->built = snap;
    self->latency_frames = (guint)cf_engine_latency(e);
    /* an engine that left the device as it was built (backend auto: its
     * black history frame found no device memory) is said at the first
     * frame, as one leaving it mid-stream */
    gboolean fell = FALSE;
    for (guint i = 0; i < 3; i++)
      fell |= es[i] && cf_engine_fallback_reason(es[i]) != NULL;
    self->running = fell ? CF_BACKEND_CUDA : cf_engine_backend(e);
    self->on_cpu = engines_on_cpu(self);
    note->described |= describe_engine(self);
    GST_INFO_OBJECT(self, "engine: %s", self->backend_in_use);
    goto kernel_done;
  refused:
    /* one report per change, as for kernels (a change made while it was
     * built is tried at the next frame) */
    self->engine_config_serial = seen;
    note_add(note, err);
    note->fatal = !self->engine || rebuild;
    if (note->fatal) {
      cf_kernel2d_free(newk);
      swaps_free(prep);
      return;
    }
    /* the previous engine goes on, with its settings and the new kernel
     * if there is one (unless a setting changed while the refused one was
     * built: the next frame tries the settings as they are now) */
    if (self->config_serial == seen)
      settings_put_back(self, note);
  }
  /* The engine calls below (the new kernel's swap: seconds for a big
   * kernel that no swap was built ahead for) are made without the object
   * lock: the engines are this thread's, and a getter waited for all of
   * them (QA). What they need from the settings is read before. */
  gboolean set_output = self->output_serial != self->engine_output_serial;
  gfloat scale = self->scale, bias = self->bias;
  gboolean absolute = self->absolute;
  if (set_output)
    self->engine_output_serial = self->output_serial;
  cf_engine *all[3] = {self->engine, self->bottom, self->whole};
  cf_swap_prep2d *made[3] = {NULL, NULL, NULL};
  cf_status os = CF_OK, ks = CF_OK;
  static const guint order[3] = {1, 2, 0};
  guint took = 0;
  if (set_output || newk)
    GST_OBJECT_UNLOCK(self);
  /* scale, bias, absolute: the engine's output stage from this frame on,
   * its history kept (a control binding animates them frame by frame) */
  for (guint i = 0; set_output && i < 3 && os == CF_OK; i++)
    if (all[i])
      os = cf_engine_set_output2d(all[i], scale, bias, absolute);
  gchar *output_why = os != CF_OK ? g_strdup(cf_last_error()) : NULL;
  /* each engine takes the new kernel by the swap the setter built for it
   * (allocating, planning and waiting for nothing here), else by
   * cf_engine_set_kernel2d; the top field's (or the frame's) engine last:
   * where one refuses it, those that took it go back to the kernel in
   * force */
  for (; took < 3 && newk && ks == CF_OK; took++) {
    guint i = order[took];
    if (!all[i])
      continue;
    if (prep[i]) {
      ks = cf_engine_set_prepared2d(all[i], prep[i]);
      /* the CPU state it retired (the old kernel's spectra, scratch,
       * border maps, history: 40-80 MB for an 1100x1100 kernel on 1080p
       * RGBA) given back now, in the reaper's thread, neither here nor
       * at the next set (it stayed till then: QA); CUDA's at the next
       * setter (cudaFree waits for the device) */
      if (ks == CF_OK && cf_engine_backend(all[i]) == CF_BACKEND_CPU &&
          to_reaper(self, prep[i]))
        prep[i] = NULL;
      else
        made[i] = g_steal_pointer(&prep[i]);
    } else {
      ks = cf_engine_set_kernel2d(all[i], newk);
    }
  }
  gchar *kernel_why = ks != CF_OK ? g_strdup(cf_last_error()) : NULL;
  if (ks != CF_OK)
    for (guint j = 0; j + 1 < took; j++)
      if (all[order[j]] && self->active)
        (void)cf_engine_set_kernel2d(all[order[j]], self->active);
  if (set_output || newk)
    GST_OBJECT_LOCK(self);
  for (guint i = 0; i < 3; i++)
    if (made[i]) {
      if (self->made[i]) /* never: a setter frees them before it builds */
        cf_swap_prep2d_free(self->made[i]);
      self->made[i] = made[i];
    }
  if (set_output) {
    if (os == CF_OK) {
      self->built.scale = scale;
      self->built.bias = bias;
      self->built.absolute = absolute;
    } else {
      gchar *why = g_strdup_printf("scale, bias, absolute refused by the "
                                   "engine: %s; keeping scale=%g bias=%g "
                                   "absolute=%d", output_why,
                                   self->built.scale, self->built.bias,
                                   self->built.absolute);
      note_add(note, why);
    }
  }
  g_free(output_why);
  if (ks != CF_OK) {
    gchar *why = g_strdup_printf("kernel refused by the engine: %s; keeping "
                                 "the previous kernel", kernel_why);
    g_free(kernel_why);
    note_add(note, why);
    cf_kernel2d_free(newk);
    swaps_free(prep);
    return;
  }
kernel_done:
  swaps_free(prep); /* a new engine took the kernel itself */
  if (newk) {
    cf_kernel2d_free(self->active);
    self->active = newk;
    /* the path the new kernel takes */
    note->described |= describe_engine(self);
    GST_DEBUG_OBJECT(self, "kernel %ux%ux%u in use", cf_kernel2d_frames(newk),
                     cf_kernel2d_height(newk), cf_kernel2d_width(newk));
  }
}

/* Drop the engine and the metadata of the frames it held. Takes
 * engine_lock (a setter may be preparing a kernel for the engine: it
 * waits for that) and then the object lock: call it with neither held
 * (stop waited for a prepare with the object lock held, and every getter
 * with it: QA). The engines and their swaps are freed with no lock. */
static void free_engine(GstCudaConvolve *self)
{
  EngineNote old;
  memset(&old, 0, sizeof old);
  g_mutex_lock(&self->engine_lock);
  GST_OBJECT_LOCK(self);
  /* swaps built for them: before them (an engine outlives its swaps) */
  swaps_take(self->prepared, old.old_swaps);
  swaps_take(self->made, old.old_swaps + 3);
  old.old_engines[0] = g_steal_pointer(&self->engine);
  old.old_engines[1] = g_steal_pointer(&self->bottom);
  old.old_engines[2] = g_steal_pointer(&self->whole);
  self->fields = self->mixed = self->alternate = FALSE;
  self->held_kind = KIND_NONE;
  g_atomic_int_inc(&self->engine_gen);
  g_mutex_unlock(&self->engine_lock);
  g_clear_pointer(&self->engine_components, g_free);
  while (self->n_recent)
    g_free(self->recent_components[--self->n_recent]);
  cf_kernel2d *active = g_steal_pointer(&self->active);
  if (self->inflight)
    gst_queue_array_clear(self->inflight);
  self->inflight_frames = 0;
  GST_OBJECT_UNLOCK(self);
  note_retire(&old);
  cf_kernel2d_free(active);
}

/* ---- latency ------------------------------------------------------------- */

/* The longest buffer duration the latency counts as a frame's period. */
#define MAX_FRAME_PERIOD (60 * GST_SECOND)

/* What the element adds: D frame durations from the framerate, or at a
 * variable framerate (0/1) from the longest buffer seen. With alternate
 * caps (the framerate a frame's, each buffer a field) the engine of each
 * parity holds D fields: D frames, 2 D buffers. Object lock held. */
static GstClockTime our_latency(GstCudaConvolve *self)
{
  if (!self->latency_frames)
    return 0;
  if (self->fps_n > 0 && self->fps_d > 0)
    return gst_util_uint64_scale_int_round(
        (guint64)self->latency_frames * GST_SECOND, self->fps_d, self->fps_n);
  return GST_CLOCK_TIME_IS_VALID(self->max_duration)
             ? (self->alternate ? 2 : 1) * self->latency_frames *
                   self->max_duration
             : 0;
}

/* A latency message when our latency changed (another depth, framerate,
 * or a longer buffer at a variable framerate): the pipeline asks again.
 * At a variable framerate, not for a change under 1% of the latency
 * announced and under 1 ms: periods measured from jittering timestamps
 * (rtpvrawdepay behind rtpjitterbuffer) grow by nanoseconds, and each
 * new longest posted a message (10 in 20 s), the pipeline recomputing
 * its latency for each (QA). The query says the latency exactly. */
static void announce_latency(GstCudaConvolve *self)
{
  GST_OBJECT_LOCK(self);
  GstClockTime now = our_latency(self);
  GstClockTime was = self->announced;
  GstClockTime tol = self->fps_n > 0 ? 0 : MIN(GST_MSECOND, was / 100);
  gboolean changed = now != was && (now > was ? now - was : was - now) >= tol;
  if (changed)
    self->announced = now;
  GST_OBJECT_UNLOCK(self);
  if (!changed)
    return;
  GST_INFO_OBJECT(self, "latency now %" GST_TIME_FORMAT, GST_TIME_ARGS(now));
  if (!gst_element_post_message(GST_ELEMENT(self),
                                gst_message_new_latency(GST_OBJECT(self))))
    GST_DEBUG_OBJECT(self, "no bus took the latency message");
}

/* ---- frames in flight (pipeline-depth D > 0) ---------------------------- */

static void frame_of(const GstVideoFrame *vf, cf_frame *f)
{
  memset(f, 0, sizeof *f);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(vf) && p < 3; p++) {
    f->data[p] = GST_VIDEO_FRAME_PLANE_DATA(vf, p);
    f->stride[p] = (size_t)GST_VIDEO_FRAME_PLANE_STRIDE(vf, p);
  }
}

/* A buffer mapped for the engine. CUDA memory: on the device
 * (GST_MAP_CUDA: planes as device pointers) when the engine runs on CUDA,
 * else on the host (GstCudaMemory downloads, and uploads what is written),
 * either way laid out as the memory's own info says (rows at the device's
 * pitch). Other memory: a video frame mapping on the host. */
typedef struct {
  GstVideoFrame vf;
  GstMemory *mem; /* the CUDA memory mapped, or NULL */
  GstMapInfo map;
} FrameMap;

#ifdef CF_HAVE_GSTCUDA
/* GStreamer 1.24 gave GstCudaMemory a CUDA stream: a producer (nvcodec's
 * decoders, cudaupload) may hand over a frame still being written on its
 * stream, flagged to need a sync, and a GST_MAP_CUDA mapping does not
 * wait for it ("the caller's responsibility": gst_cuda_memory_sync(),
 * which GStreamer's own CUDA elements call when their stream is not the
 * memory's; ours never is). Built against 1.22, which has neither, the
 * function is looked up at run time; NULL there, and nothing to wait
 * for. */
typedef void (*cuda_memory_sync_fn)(GstCudaMemory *mem);

static cuda_memory_sync_fn cuda_memory_sync(void)
{
  static gsize once;
  static cuda_memory_sync_fn fn;
  if (g_once_init_enter(&once)) {
    fn = (cuda_memory_sync_fn)dlsym(RTLD_DEFAULT, "gst_cuda_memory_sync");
    g_once_init_leave(&once, 1);
  }
  return fn;
}
#endif

static gboolean map_frame(GstCudaConvolve *self, const GstVideoInfo *info,
                          GstBuffer *buf, GstMapFlags flags, FrameMap *m,
                          cf_frame *f)
{
  m->mem = NULL;
#ifdef CF_HAVE_GSTCUDA
  GstMemory *mem =
      gst_buffer_n_memory(buf) == 1 ? gst_buffer_peek_memory(buf, 0) : NULL;
  if (self->cuda_caps && mem && gst_is_cuda_memory(mem)) {
    if (cf_engine_backend(self->engine) == CF_BACKEND_CUDA)
      flags |= GST_MAP_CUDA;
    if (!gst_memory_map(mem, &m->map, flags))
      return FALSE;
    /* after the mapping, which may itself upload on the memory's stream */
    cuda_memory_sync_fn sync = cuda_memory_sync();
    if (sync && (flags & GST_MAP_CUDA) && (flags & GST_MAP_READ))
      sync(GST_CUDA_MEMORY_CAST(mem));
    const GstVideoInfo *ci = &GST_CUDA_MEMORY_CAST(mem)->info;
    memset(f, 0, sizeof *f);
    for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(ci) && p < 3; p++) {
      f->data[p] = (guint8 *)m->map.data + GST_VIDEO_INFO_PLANE_OFFSET(ci, p);
      f->stride[p] = (size_t)GST_VIDEO_INFO_PLANE_STRIDE(ci, p);
    }
    m->mem = mem;
    return TRUE;
  }
#else
  (void)self;
#endif
  if (!gst_video_frame_map(&m->vf, info, buf,
                           flags | GST_VIDEO_FRAME_MAP_FLAG_NO_REF))
    return FALSE;
  frame_of(&m->vf, f);
  return TRUE;
}

static void unmap_frame(FrameMap *m)
{
  if (m->mem)
    gst_memory_unmap(m->mem, &m->map);
  else
    gst_video_frame_unmap(&m->vf);
}

/* An output buffer as the base class allocates one: from the negotiated
 * pool, else with the negotiated allocator. */
static GstFlowReturn alloc_output(GstCudaConvolve *self, GstBuffer **out)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  GstFlowReturn ret = GST_FLOW_OK;
  *out = NULL;
  GstBufferPool *pool = gst_base_transform_get_buffer_pool(trans);
  if (pool) {
    if (!gst_buffer_pool_is_active(pool) &&
        !gst_buffer_pool_set_active(pool, TRUE)) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                        ("failed to activate bufferpool"),
                        ("failed to activate bufferpool"));
      ret = GST_FLOW_ERROR;
    } else {
      ret = gst_buffer_pool_acquire_buffer(pool, out, NULL);
    }
    gst_object_unref(pool);
    return ret;
  }
  GstAllocator *alloc = NULL;
  GstAllocationParams params;
  gst_base_transform_get_allocator(trans, &alloc, &params);
  *out = gst_buffer_new_allocate(
      alloc, GST_VIDEO_INFO_SIZE(&GST_VIDEO_FILTER(self)->out_info), &params);
  if (alloc)
    gst_object_unref(alloc);
  if (!*out) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("cudaconvolve cannot allocate an output frame"), (NULL));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

/* The metadata of a frame (flags, timestamps, offsets and the metas the
 * class keeps) from `src` onto `dst`, as the base class copies it. */
static void copy_meta(GstCudaConvolve *self, GstBuffer *src, GstBuffer *dst)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  GstBaseTransformClass *bclass = GST_BASE_TRANSFORM_GET_CLASS(trans);
  if (bclass->copy_metadata && !bclass->copy_metadata(trans, src, dst))
    GST_ELEMENT_WARNING(self, STREAM, NOT_IMPLEMENTED,
                        ("could not copy metadata"), (NULL));
}

/* The events held before the oldest frame held go downstream (those that
 * came after the last frame that left and before that one). */
static void push_held_events(GstCudaConvolve *self)
{
  while (!gst_queue_array_is_empty(self->inflight) &&
         GST_IS_EVENT(gst_queue_array_peek_head(self->inflight))) {
    GstEvent *ev = gst_queue_array_pop_head(self->inflight);
    GST_DEBUG_OBJECT(self, "held %s event goes out", GST_EVENT_TYPE_NAME(ev));
    if (!gst_pad_push_event(GST_BASE_TRANSFORM_SRC_PAD(self), ev))
      GST_DEBUG_OBJECT(self, "downstream refused a held event");
  }
}

/* The metadata of the oldest frame held, once the events before it have
 * gone out (its output follows them). */
static GstBuffer *pop_frame(GstCudaConvolve *self)
{
  push_held_events(self);
  GstBuffer *meta = gst_queue_array_pop_head(self->inflight);
  g_assert(meta && GST_IS_BUFFER(meta) && self->inflight_frames > 0);
  self->inflight_frames--;
  return meta;
}

/* The oldest frame the engine holds, in a new output buffer carrying the
 * metadata its input came with; *out is NULL when none is left. */
static GstFlowReturn flush_one(GstCudaConvolve *self, GstBuffer **out)
{
  GstVideoFilter *filter = GST_VIDEO_FILTER(self);
  *out = NULL;
  if (!self->inflight_frames)
    return GST_FLOW_OK;
  GstBuffer *buf;
  GstFlowReturn ret = alloc_output(self, &buf);
  if (ret != GST_FLOW_OK)
    return ret;
  FrameMap vout;
  cf_frame f;
  if (!map_frame(self, &filter->out_info, buf, GST_MAP_WRITE, &vout, &f)) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("cudaconvolve failed"),
                      ("cannot map an output buffer"));
    return GST_FLOW_ERROR;
  }
  int got = 0;
  cf_status s = flush_kind(self, &f, &got);
  unmap_frame(&vout);
  note_fallback(self);
  if (s != CF_OK) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("cudaconvolve failed"),
                      ("flushing a frame: %s", cf_last_error()));
    return GST_FLOW_ERROR;
  }
  if (!got) { /* the engine's contract says this cannot happen */
    GST_WARNING_OBJECT(self, "the engine holds no frame, %u expected",
                       self->inflight_frames);
    gst_queue_array_clear(self->inflight);
    self->inflight_frames = 0;
    gst_buffer_unref(buf);
    return GST_FLOW_OK;
  }
  GstBuffer *meta = pop_frame(self);
  copy_meta(self, meta, buf);
  gst_buffer_unref(meta);
  *out = buf;
  return GST_FLOW_OK;
}

/* Forget the frames in flight (a flush, or a push that failed): the
 * engine hands them out into scratch memory, which is dropped. The events
 * held between them are dropped too, except that with `sticky` the sticky
 * ones (tags, TOC, ...) are handed back there, oldest first, for the
 * caller to keep on the source pad, as a flush keeps sticky events. */
static void drop_pending(GstCudaConvolve *self, GList **sticky)
{
  GstVideoFilter *filter = GST_VIDEO_FILTER(self);
  if (self->engine && self->inflight_frames) {
    GST_DEBUG_OBJECT(self, "dropping %u pending frames",
                     self->inflight_frames);
    GstBuffer *scratch = gst_buffer_new_allocate(
        NULL, GST_VIDEO_INFO_SIZE(&filter->out_info), NULL);
    GstVideoFrame v;
    if (scratch &&
        gst_video_frame_map(&v, &filter->out_info, scratch, GST_MAP_WRITE)) {
      cf_frame f;
      frame_of(&v, &f);
      for (guint i = 0; i < 2; i++) {
        /* alternate caps: each parity's engine in turn (flush_kind takes
         * the oldest field's, and the queue is not popped here) */
        cf_engine *e = i ? self->bottom : self->engine;
        if (self->alternate ? !e : i > 0)
          continue;
        int got = 1;
        while (got) {
          cf_status st = self->alternate ? cf_engine_flush_frame(e, &f, &got)
                                         : flush_kind(self, &f, &got);
          if (st != CF_OK) {
            GST_WARNING_OBJECT(self, "dropping the pending frames: %s",
                               cf_last_error());
            break;
          }
        }
      }
      gst_video_frame_unmap(&v);
    } else {
      GST_WARNING_OBJECT(self, "no scratch frame to drop the pending "
                               "frames into");
    }
    if (scratch)
      gst_buffer_unref(scratch);
  }
  GstMiniObject *o;
  while ((o = gst_queue_array_pop_head(self->inflight)) != NULL) {
    if (sticky && GST_IS_EVENT(o) && GST_EVENT_IS_STICKY(GST_EVENT_CAST(o)))
      *sticky = g_list_append(*sticky, o);
    else
      gst_mini_object_unref(o);
  }
  self->inflight_frames = 0;
}

/* Push the frames in flight downstream, oldest first, with the events
 * held between them and after them: at EOS, and before a DISCONT buffer,
 * a segment, new caps or a new engine, which they precede. What a failed
 * push leaves is dropped. */
static GstFlowReturn push_pending(GstCudaConvolve *self, const gchar *why)
{
  GstFlowReturn ret = GST_FLOW_OK;
  if (gst_queue_array_is_empty(self->inflight))
    return ret;
  GST_DEBUG_OBJECT(self, "%s: pushing the %u pending frames", why,
                   self->inflight_frames);
  while (ret == GST_FLOW_OK) {
    GstBuffer *out;
    ret = flush_one(self, &out);
    if (ret != GST_FLOW_OK || !out)
      break;
    ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), out);
  }
  if (ret == GST_FLOW_OK)
    push_held_events(self); /* those after the last frame */
  if (!gst_queue_array_is_empty(self->inflight)) {
    GST_DEBUG_OBJECT(self, "push returned %s", gst_flow_get_name(ret));
    drop_pending(self, NULL);
  }
  return ret;
}

/* Report what ensure_engine noted; FALSE when the stream cannot go on. */
static gboolean report_note(GstCudaConvolve *self, EngineNote *note)
{
  note_retire(note);
  /* it changes by itself: an application watching it hears */
  if (note->described)
    g_object_notify(G_OBJECT(self), "backend-in-use");
  if (!note->msg) {
    g_clear_pointer(&self->posted, g_free);
    return TRUE;
  }
  gboolean fatal = note->fatal || !self->engine;
  if (fatal) {
    /* a kernel-file missing or unreadable: a resource error, as filesrc
     * (and cudafir) say it */
    GST_OBJECT_LOCK(self);
    /* only where the file is why there is no kernel (not a failure of
     * the engine after a file refused mid-stream) */
    gchar *file =
        self->source == SRC_FILE && self->file_error && !self->kernel
            ? g_strdup(self->kernel_file)
            : NULL;
    GST_OBJECT_UNLOCK(self);
    if (file)
      CF_GST_POST_FATAL(self, &self->posted, GST_RESOURCE_ERROR,
                        cf_gst_kernel_file_code(file),
                        g_strdup("cudaconvolve cannot filter this stream"),
                        note->msg);
    else
      CF_GST_POST_FATAL(
          self, &self->posted, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
          g_strdup("cudaconvolve cannot filter this stream"), note->msg);
    g_free(file);
  } else {
    /* the settings put back, with the values they have again */
    GString *why = g_string_new(note->msg);
    for (guint i = 0; note->put_back[i]; i++) {
      GParamSpec *ps = g_object_class_find_property(G_OBJECT_GET_CLASS(self),
                                                    note->put_back[i]);
      if (!ps)
        continue;
      GValue v = G_VALUE_INIT;
      g_value_init(&v, ps->value_type);
      g_object_get_property(G_OBJECT(self), note->put_back[i], &v);
      gchar *text = gst_value_serialize(&v);
      g_string_append_printf(why, "%s %s=%s", i ? "," : "; back to",
                             note->put_back[i], text ? text : "?");
      g_free(text);
      g_value_unset(&v);
    }
    CF_GST_POST_WARNING(self, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
                        g_strdup("cudaconvolve refused a setting"), why->str);
    g_string_free(why, TRUE);
    for (guint i = 0; note->put_back[i]; i++)
      g_object_notify(G_OBJECT(self), note->put_back[i]);
  }
  g_free(note->msg);
  note->msg = NULL;
  return !fatal;
}

/* Before frame `in` reaches the engine: the frames in flight leave first
 * when `in` starts a new stream (it came DISCONT, or is the first frame
 * kept after a DISCONT frame QoS dropped: frame_new_stream) or the engine
 * is to be rebuilt; then the settings apply and a new stream forgets the
 * history. */
static GstFlowReturn prepare_engine(GstCudaConvolve *self, GstBuffer *in)
{
  GstVideoFilter *filter = GST_VIDEO_FILTER(self);
  gboolean discont = self->frame_new_stream;
  for (;;) {
    GST_OBJECT_LOCK(self);
    gboolean rebuild = self->engine && !self->await_caps &&
                       self->config_serial != self->engine_config_serial;
    /* mixed caps: a progressive frame after interlaced ones or the
     * reverse goes through other engines; those in flight leave first */
    gboolean other = self->held_kind != KIND_NONE &&
                     frame_kind(self, in) != self->held_kind;
    if (!self->inflight_frames || !(discont || rebuild || other))
      break; /* with the lock held: no rebuild may slip in */
    GST_OBJECT_UNLOCK(self);
    GstFlowReturn ret = push_pending(self, discont  ? "discont"
                                           : rebuild ? "new settings"
                                                     : "another kind of frame");
    if (ret != GST_FLOW_OK)
      return ret;
  }
  EngineNote note;
  ensure_engine(self, &filter->in_info, FALSE, &note);
  GstClockTime dur = GST_BUFFER_DURATION(in);
  GstClockTime pts = GST_BUFFER_PTS(in);
  /* Without a duration (a decoder at framerate 0/1 leaves it unset, as
   * do many live sources) a frame lasts until the next one: the time
   * since the frame before, where nothing was lost in between (no
   * DISCONT, no QoS drop). Else the latency stayed 0 while D frames were
   * held, and a live sink dropped or delayed every frame. */
  if (!GST_CLOCK_TIME_IS_VALID(dur) && !self->frame_discont &&
      GST_CLOCK_TIME_IS_VALID(pts) && GST_CLOCK_TIME_IS_VALID(self->last_pts) &&
      pts > self->last_pts)
    dur = pts - self->last_pts;
  self->last_pts = pts;
  /* a duration past a minute is a still shown until further notice
   * (imagefreeze at 0/1 lasts until the end of time), not a frame's
   * period: D of them made a latency of centuries, or one that wrapped
   * to below upstream's (QA) */
  if (GST_CLOCK_TIME_IS_VALID(dur) && dur <= MAX_FRAME_PERIOD &&
      (!GST_CLOCK_TIME_IS_VALID(self->max_duration) ||
       dur > self->max_duration))
    self->max_duration = dur;
  GST_OBJECT_UNLOCK(self);
  if (self->engine) /* a kernel swap may have moved it off the device */
    note_fallback(self);
  if (!report_note(self, &note))
    return GST_FLOW_ERROR;
  gint kind = frame_kind(self, in);
  if (discont) {
    GST_DEBUG_OBJECT(self, "discont: temporal history restarts");
    reset_kind(self, KIND_NONE);
  } else if (self->held_kind != KIND_NONE && kind != self->held_kind) {
    /* its engines last saw frames from before the other kind's run */
    GST_DEBUG_OBJECT(self, "mixed: %s after %s: their temporal history "
                     "restarts", kind == KIND_FIELDS ? "fields" : "a frame",
                     kind == KIND_FIELDS ? "frames" : "fields");
    reset_kind(self, kind);
  }
  self->held_kind = kind;
  announce_latency(self);
  return GST_FLOW_OK;
}

/* Alternate caps at depth D: field `parity` is about to go in, and its
 * engine, holding D fields, to hand out its oldest. The fields of the
 * other parity that came before that one leave first (flushed from their
 * engine, whose history goes on), so that fields leave in the order they
 * came. Where the fields alternate none does: field t leaves when field
 * t + 2 D comes, as with interleaved frames; after a run of one parity,
 * at most 2 D fields later. */
static GstFlowReturn make_room(GstCudaConvolve *self, guint parity)
{
  while (self->latency_frames &&
         held_of(self, parity) >= self->latency_frames &&
         head_parity(self) != (gint)parity) {
    GstBuffer *out;
    GstFlowReturn ret = flush_one(self, &out);
    if (ret != GST_FLOW_OK || !out)
      return ret;
    GST_LOG_OBJECT(self, "%s field out before the %s one it came before",
                   parity ? "top" : "bottom", parity ? "bottom" : "top");
    ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), out);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  return GST_FLOW_OK;
}

/* Pipelined (D > 0): frame t enters the engine, which writes frame t - D
 * once D frames are in flight; that output gets frame t - D's metadata
 * (with alternate caps, per parity: field t's engine writes the D-th
 * field of its parity before it, which make_room made the oldest in
 * flight). Also every frame of CUDA memory (D = 0 too): GstVideoFilter
 * would map those on the host. */
static GstFlowReturn process_delayed(GstCudaConvolve *self, GstBuffer *in,
                                     GstBuffer **outbuf)
{
  GstVideoFilter *filter = GST_VIDEO_FILTER(self);
  GstBuffer *out;
  GstFlowReturn ret =
      self->alternate ? make_room(self, self->parity) : GST_FLOW_OK;
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref(in);
    return ret;
  }
  gboolean wrote = self->alternate
                       ? held_of(self, self->parity) >= self->latency_frames
                       : self->inflight_frames >= self->latency_frames;
  /* the engine needs an output frame even when it writes nothing to it */
  ret = alloc_output(self, &out);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref(in);
    return ret;
  }
  FrameMap vin, vout;
  cf_frame fin, fout;
  if (!map_frame(self, &filter->in_info, in, GST_MAP_READ, &vin, &fin)) {
    /* as GstVideoFilter does: the frame is skipped */
    GST_ELEMENT_WARNING(self, CORE, NOT_IMPLEMENTED, (NULL),
                        ("invalid video buffer received"));
    gst_buffer_unref(in);
    gst_buffer_unref(out);
    return GST_FLOW_OK;
  }
  if (!map_frame(self, &filter->out_info, out, GST_MAP_WRITE, &vout, &fout)) {
    unmap_frame(&vin);
    gst_buffer_unref(in);
    gst_buffer_unref(out);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("cudaconvolve failed"),
                      ("cannot map an output buffer"));
    return GST_FLOW_ERROR;
  }
  cf_status s = process_kind(self, self->held_kind, &fin, &fout);
  if (s == CF_OK && wrote)
    pad_field(self, self->parity, &fout);
  unmap_frame(&vout);
  unmap_frame(&vin);
  note_fallback(self);
  if (s != CF_OK) {
    gst_buffer_unref(in);
    gst_buffer_unref(out);
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("cudaconvolve failed"),
                      ("processing a frame: %s", cf_last_error()));
    return GST_FLOW_ERROR;
  }
  GstBuffer *meta = gst_buffer_new();
  copy_meta(self, in, meta);
  gst_buffer_unref(in);
  if (self->alternate)
    gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(meta), field_quark(),
                              GUINT_TO_POINTER(self->parity + 1), NULL);
  if (self->frame_discont) /* its output, D frames later, follows a gap */
    GST_BUFFER_FLAG_SET(meta, GST_BUFFER_FLAG_DISCONT);
  gst_queue_array_push_tail(self->inflight, meta);
  self->inflight_frames++;
  if (!wrote) {
    gst_buffer_unref(out);
    return GST_FLOW_OK;
  }
  meta = pop_frame(self);
  copy_meta(self, meta, out);
  gst_buffer_unref(meta);
  *outbuf = out;
  return GST_FLOW_OK;
}

/* ---- GstBaseTransform / GstVideoFilter ---------------------------------- */

/* Whether caps `in_info` (incaps) after `was` change only I420 into NV12
 * or back: the same size, memory, interlace mode and range, engines
 * running. */
static gboolean relayout_only(GstCudaConvolve *self, const GstVideoInfo *was,
                              GstCaps *incaps, const GstVideoInfo *in_info)
{
  if (!GST_VIDEO_FILTER(self)->negotiated || !self->engine)
    return FALSE; /* `was` holds no format */
  GstVideoFormat a = GST_VIDEO_INFO_FORMAT(was);
  GstVideoFormat b = GST_VIDEO_INFO_FORMAT(in_info);
  gboolean a420 = a == GST_VIDEO_FORMAT_I420 || a == GST_VIDEO_FORMAT_NV12;
  gboolean b420 = b == GST_VIDEO_FORMAT_I420 || b == GST_VIDEO_FORMAT_NV12;
  return a420 && b420 && a != b && caps_cuda(incaps) == self->cuda_caps &&
         GST_VIDEO_INFO_WIDTH(was) == GST_VIDEO_INFO_WIDTH(in_info) &&
         GST_VIDEO_INFO_HEIGHT(was) == GST_VIDEO_INFO_HEIGHT(in_info) &&
         GST_VIDEO_INFO_INTERLACE_MODE(was) ==
             GST_VIDEO_INFO_INTERLACE_MODE(in_info) &&
         (GST_VIDEO_INFO_COLORIMETRY(was).range ==
          GST_VIDEO_COLOR_RANGE_0_255) ==
             (GST_VIDEO_INFO_COLORIMETRY(in_info).range ==
              GST_VIDEO_COLOR_RANGE_0_255);
}

static gboolean gst_cuda_convolve_set_info(GstVideoFilter *filter,
                                           GstCaps *incaps,
                                           GstVideoInfo *in_info,
                                           GstCaps *outcaps,
                                           GstVideoInfo *out_info)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(filter);
  (void)outcaps;
  (void)out_info;
  GST_DEBUG_OBJECT(self, "caps %" GST_PTR_FORMAT, incaps);
  if (caps_cuda(incaps) &&
      GST_VIDEO_INFO_FORMAT(in_info) == GST_VIDEO_FORMAT_I420 &&
      GST_VIDEO_INFO_HEIGHT(in_info) % 2) {
    CF_GST_POST_FATAL(
        self, &self->posted, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        g_strdup_printf("cudaconvolve cannot filter I420 in CUDA "
                        "memory with an odd height (%d)",
                        GST_VIDEO_INFO_HEIGHT(in_info)),
        "GStreamer 1.22's GstCudaMemory puts the last U row and the "
        "first V row of an odd height at the same address; use NV12 "
        "or system memory");
    return FALSE;
  }
  /* the old engine's frames go out in the old format, before the new caps
   * (filter->out_info and the pool are still the old ones here) */
  GstFlowReturn ret = push_pending(self, "new caps");
  if (ret != GST_FLOW_OK) /* dropped; the new format goes on regardless */
    GST_INFO_OBJECT(self, "frames held before new caps: %s",
                    gst_flow_get_name(ret));
  /* caps negotiated before the components changed to ones they lack:
   * where upstream can give a format they fit, it is asked, and the
   * components before go on until it comes */
  const gchar *fname =
      gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(in_info));
  GST_OBJECT_LOCK(self);
  self->stream_format = GST_VIDEO_INFO_FORMAT(in_info);
  const gchar *interim = !components_fit(self->components, fname)
                             ? interim_components(self, fname)
                             : NULL;
  gchar *comps = interim ? g_strdup(self->components) : NULL;
  gchar *fallback = interim ? g_strdup(interim) : NULL;
  GST_OBJECT_UNLOCK(self);
  gchar *side = NULL;
  gboolean ask = comps && upstream_can_fit(self, comps, incaps, &side);
  /* caps that change neither the frames' format and size nor their
   * memory (another framerate, pixel aspect ratio, colorimetry) keep the
   * engine and its temporal history: it would filter those frames
   * alike, and a temporal filter restarting at each such renegotiation
   * (a decoder's, videorate's) showed as a pulse (QA); but YUV of another
   * range has another black, which the engines' history starts from */
  const GstVideoInfo *was = &filter->in_info;
  gboolean new_frames =
      !filter->negotiated || caps_cuda(incaps) != self->cuda_caps ||
      GST_VIDEO_INFO_FORMAT(was) != GST_VIDEO_INFO_FORMAT(in_info) ||
      GST_VIDEO_INFO_WIDTH(was) != GST_VIDEO_INFO_WIDTH(in_info) ||
      GST_VIDEO_INFO_HEIGHT(was) != GST_VIDEO_INFO_HEIGHT(in_info) ||
      GST_VIDEO_INFO_INTERLACE_MODE(was) !=
          GST_VIDEO_INFO_INTERLACE_MODE(in_info) ||
      (GST_VIDEO_INFO_IS_YUV(in_info) &&
       (GST_VIDEO_INFO_COLORIMETRY(was).range == GST_VIDEO_COLOR_RANGE_0_255) !=
           (GST_VIDEO_INFO_COLORIMETRY(in_info).range ==
            GST_VIDEO_COLOR_RANGE_0_255));
  /* I420 <-> NV12 at the same size, memory and the rest (a decoder or
   * camera changing its output format mid-stream): the same planes laid
   * out otherwise. The engines take the new layout and keep their
   * temporal history (a temporal filter pulsed at each such switch, QA);
   * where one cannot (CUDA's ring holds the frames' bytes), new engines */
  gboolean relaid = FALSE;
  if (new_frames && relayout_only(self, was, incaps, in_info)) {
    cf_pixel_format to = GST_VIDEO_INFO_FORMAT(in_info) == GST_VIDEO_FORMAT_NV12
                             ? CF_PIX_NV12
                             : CF_PIX_I420;
    cf_engine *all[3] = {self->engine, self->bottom, self->whole};
    cf_status st = CF_OK;
    for (guint i = 0; i < 3 && st == CF_OK; i++)
      if (all[i])
        st = cf_engine_set_pixel_format(all[i], to);
    relaid = st == CF_OK;
    if (relaid)
      GST_DEBUG_OBJECT(self,
                       "%s: the engines take the new layout, their "
                       "temporal history going on",
                       fname);
    else
      GST_INFO_OBJECT(self,
                      "%s: a new engine (the temporal history "
                      "restarts): %s",
                      fname, cf_last_error());
    new_frames = !relaid;
  }
  EngineNote note;
  GST_OBJECT_LOCK(self);
  self->cuda_caps = caps_cuda(incaps);
  self->fps_n = GST_VIDEO_INFO_FPS_N(in_info);
  self->fps_d = GST_VIDEO_INFO_FPS_D(in_info);
  /* a frame's period does not change with its size or format: at 0/1 the
   * longest buffer seen still counts (forgotten here, the latency went to
   * 0 at each resolution step of a WebRTC receiver and back a frame
   * later, two latency messages a step; QA); fields and frames (another
   * interlace mode) last differently */
  if (!filter->negotiated || GST_VIDEO_INFO_INTERLACE_MODE(was) !=
                                 GST_VIDEO_INFO_INTERLACE_MODE(in_info))
    self->max_duration = GST_CLOCK_TIME_NONE;
  self->last_pts = GST_CLOCK_TIME_NONE;
  self->next_pts = GST_CLOCK_TIME_NONE;
  self->last_parity = -1;
  self->told_unflagged = FALSE;
  self->await_caps = ask ? AWAIT_CAPS_FRAMES : 0;
  /* components these caps lack, and upstream cannot give a format they
   * fit now (it is renegotiating for another value set since): those
   * they were negotiated for go on, as the property, with a warning,
   * rather than the stream stopping (QA) */
  gboolean put_back = comps && !ask && !strcmp(self->components, comps);
  if (put_back) {
    g_free(self->components);
    self->components = g_strdup(fallback);
    self->config_serial++;
  }
  /* a new format or size: a new engine (the temporal history restarts) */
  ensure_engine(self, in_info, new_frames, &note);
  if (relaid && self->engine) /* backend-in-use names the format */
    note.described |= describe_engine(self);
  if (put_back) {
    note_add(&note, g_strdup_printf("components: '%s' are not in the new "
                                    "%s and %s",
                                    comps, fname, side ? side : "?"));
    guint n = 0;
    while (note.put_back[n])
      n++;
    if (n + 1 < G_N_ELEMENTS(note.put_back)) {
      note.put_back[n] = "components";
      note.put_back[n + 1] = NULL;
    }
  }
  GST_OBJECT_UNLOCK(self);
  g_free(comps);
  g_free(fallback);
  g_free(side);
  if (ask)
    gst_base_transform_reconfigure_sink(GST_BASE_TRANSFORM(self));
  gboolean ok = report_note(self, &note);
  announce_latency(self);
  return ok;
}

/* ---- QoS ---------------------------------------------------------------- */

/* Forget the QoS state, as GstBaseTransform does at flush-stop and when
 * it starts. */
static void reset_qos(GstCudaConvolve *self)
{
  GST_OBJECT_LOCK(self);
  self->qos_proportion = 1.0;
  self->qos_earliest = GST_CLOCK_TIME_NONE;
  self->qos_processed = 0;
  self->qos_dropped = 0;
  self->qos_gap = FALSE;
  self->qos_lost_discont = FALSE;
  self->told_unfit = FALSE;
  GST_OBJECT_UNLOCK(self);
}

/* A QoS event: its values are kept here, not handed to
 * gst_base_transform_update_qos, so that the base class never drops a
 * frame itself (submit_input_buffer does); it goes upstream as the base
 * class sends it. */
static gboolean gst_cuda_convolve_src_event(GstBaseTransform *trans,
                                            GstEvent *event)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
  if (GST_EVENT_TYPE(event) != GST_EVENT_QOS)
    return GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
        ->src_event(trans, event);
  gdouble proportion;
  GstClockTimeDiff diff;
  GstClockTime timestamp;
  gst_event_parse_qos(event, NULL, &proportion, &diff, &timestamp);
  GST_OBJECT_LOCK(self);
  self->qos_proportion = proportion;
  /* as the base class: frames up to timestamp + diff (running time) are
   * late; gst_event_new_qos keeps that sum >= 0 */
  self->qos_earliest = GST_CLOCK_TIME_IS_VALID(timestamp)
                           ? (GstClockTime)((GstClockTimeDiff)timestamp + diff)
                           : GST_CLOCK_TIME_NONE;
  GST_OBJECT_UNLOCK(self);
  GST_DEBUG_OBJECT(self,
                   "qos: proportion %g, diff %" G_GINT64_FORMAT
                   ", timestamp %" GST_TIME_FORMAT,
                   proportion, diff, GST_TIME_ARGS(timestamp));
  return gst_pad_push_event(GST_BASE_TRANSFORM_SINK_PAD(trans), event);
}

/* The sink pad's chain function, around GstBaseTransform's: a DISCONT
 * buffer loses the flag first. The base class would mark the next buffer
 * its chain pushes, which at depth D is not that frame, and if that frame
 * leaves among the frames pushed out at a rebuild or a segment, a later
 * frame after no gap. The element marks the frame's own output instead
 * (submit_input_buffer). */
static GstFlowReturn gst_cuda_convolve_chain(GstPad *pad, GstObject *parent,
                                             GstBuffer *buf)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(parent);
  if (GST_BUFFER_IS_DISCONT(buf)) {
    buf = gst_buffer_make_writable(buf); /* the metadata, not the frame */
    GST_BUFFER_FLAG_UNSET(buf, GST_BUFFER_FLAG_DISCONT);
    self->in_discont = TRUE;
  }
  /* Reverse playback (a segment of rate < 0): the frames come latest
   * first, so the ones before a frame in the stream are later in time.
   * Each starts a new history, as every frame of an all-keyframe source
   * does (each comes DISCONT), rather than temporal taps weighing later
   * frames as earlier ones (a long-GOP file's middle frames differed
   * from forward playback by up to 69 levels). The segment is the
   * streaming thread's, as this call is. Its output is DISCONT only
   * where it came so (every reverse frame was marked). */
  if (GST_BASE_TRANSFORM(self)->segment.rate < 0)
    self->in_restart = TRUE;
  return self->base_chain(pad, parent, buf);
}

/* Why the frame in `buf` cannot be read as the negotiated caps say, or
 * NULL: a buffer too short for its frame (a byte source without a
 * parser, a truncated file; GstVideoFilter would push its output buffer
 * unwritten), a GstVideoMeta that puts a plane's last row past the
 * plane's memory (gst_video_frame_map looks at the plane's first byte
 * only: the engine would read past the end) or has its rows run
 * bottom-up. CUDA memory is laid out by its own info (map_frame). */
static gchar *frame_unfit(GstCudaConvolve *self, GstBuffer *buf)
{
  const GstVideoInfo *info = &GST_VIDEO_FILTER(self)->in_info;
#ifdef CF_HAVE_GSTCUDA
  GstMemory *mem =
      gst_buffer_n_memory(buf) == 1 ? gst_buffer_peek_memory(buf, 0) : NULL;
  if (self->cuda_caps && mem && gst_is_cuda_memory(mem))
    return NULL;
#endif
  const char *fmt = gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(info));
  /* without a meta the layout is the caps' own: the size alone tells, and
   * no mapping is made (one of memory on a device would copy it) */
  if (!gst_buffer_get_video_meta(buf))
    return gst_buffer_get_size(buf) >= GST_VIDEO_INFO_SIZE(info)
               ? NULL
               : g_strdup_printf("a buffer of %" G_GSIZE_FORMAT " bytes does "
                                 "not hold a %dx%d %s frame (%" G_GSIZE_FORMAT
                                 " bytes)",
                                 gst_buffer_get_size(buf),
                                 GST_VIDEO_INFO_WIDTH(info),
                                 GST_VIDEO_INFO_HEIGHT(info), fmt,
                                 GST_VIDEO_INFO_SIZE(info));
  GstVideoFrame vf;
  if (!gst_video_frame_map(&vf, info, buf,
                           GST_MAP_READ | GST_VIDEO_FRAME_MAP_FLAG_NO_REF))
    return g_strdup_printf(
        "a buffer of %" G_GSIZE_FORMAT " bytes does not hold the %dx%d %s "
        "frame its video meta lays out",
        gst_buffer_get_size(buf), GST_VIDEO_INFO_WIDTH(info),
        GST_VIDEO_INFO_HEIGHT(info), fmt);
  gchar *why = NULL;
  guint h = (guint)GST_VIDEO_INFO_HEIGHT(info);
  for (guint c = 0; c < GST_VIDEO_FRAME_N_COMPONENTS(&vf) && !why; c++) {
    guint p = GST_VIDEO_FRAME_COMP_PLANE(&vf, c);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(&vf, p);
    gsize rows = (gsize)GST_VIDEO_FRAME_COMP_HEIGHT(&vf, c);
    if (GST_VIDEO_INFO_IS_INTERLACED(info) && !info_alternate(info)) {
      /* the rows the fields' engines read: each field's own share, every
       * other row (interlaced 4:2:0 has an even number of chroma rows,
       * half of them each field's; a field of h / 2 luma rows,
       * h = 4n + 2, has n + 1 of them where the frame's own height
       * counts 2n + 1 in all) */
      gsize top = (gsize)GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(vf.info.finfo, c,
                                                            (h + 1) / 2);
      gsize bottom =
          h / 2 ? (gsize)GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(vf.info.finfo, c,
                                                            h / 2)
                : 0;
      rows = MAX(rows, MAX(2 * top - 1, 2 * bottom));
    }
    gsize row = (gsize)GST_VIDEO_FRAME_COMP_WIDTH(&vf, c) *
                (gsize)GST_VIDEO_FRAME_COMP_PSTRIDE(&vf, c);
    /* with a meta each plane is mapped apart, else the buffer is one */
    const GstMapInfo *m = &vf.map[vf.meta ? p : 0];
    gsize start = (gsize)((const guint8 *)GST_VIDEO_FRAME_PLANE_DATA(&vf, p) -
                          m->data);
    if (stride < 0)
      why = g_strdup_printf("plane %u of a %s frame runs bottom-up (stride "
                            "%d): not supported",
                            p, fmt, stride);
    else if (start > m->size || m->size - start < row ||
             (rows > 1 && (m->size - start - row) / (gsize)MAX(stride, 1) <
                              rows - 1))
      why = g_strdup_printf(
          "plane %u of a %dx%d %s frame needs %" G_GSIZE_FORMAT " rows of "
          "%" G_GSIZE_FORMAT " bytes, %d apart, from byte %" G_GSIZE_FORMAT
          " of its memory, which holds %" G_GSIZE_FORMAT,
          p, GST_VIDEO_INFO_WIDTH(info), GST_VIDEO_INFO_HEIGHT(info), fmt,
          rows, row, stride, start, m->size);
  }
  gst_video_frame_unmap(&vf);
  return why;
}

/* A frame comes in: the base class checks negotiation and stashes it in
 * queued_buf (its own QoS check never fires: it has no QoS values, see
 * src_event); then a late frame is dropped here, as the base class would,
 * with the same QoS message. Not with GST_BASE_TRANSFORM_FLOW_DROPPED:
 * on that the base class's chain marks DISCONT on the next buffer it
 * pushes, which at depth D is a frame from before the gap. The frame kept
 * next carries DISCONT instead (generate_output, process_delayed). */
static GstFlowReturn
gst_cuda_convolve_submit_input_buffer(GstBaseTransform *trans,
                                      gboolean is_discont, GstBuffer *input)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
  /* DISCONT as it came (still on the buffer in pull mode) */
  gboolean discont = self->in_discont || GST_BUFFER_IS_DISCONT(input);
  gboolean restart = self->in_restart;
  self->in_discont = self->in_restart = FALSE;
  GstFlowReturn ret = GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
                          ->submit_input_buffer(trans, is_discont, input);
  GstBuffer *in = trans->queued_buf;
  if (ret != GST_FLOW_OK || !in) {
    /* refused: its DISCONT goes to the next frame, as in the base class */
    if (discont)
      self->qos_gap = self->qos_lost_discont = TRUE;
    return ret;
  }
  /* alternate caps: which field it is (dropped ones count, for the
   * parity of the next one without a field flag) */
  if (info_alternate(&GST_VIDEO_FILTER(self)->in_info))
    self->parity = field_parity(self, in);
  /* a frame that does not fit its buffer is dropped as a late one is:
   * the next frame kept carries DISCONT, the history goes on */
  gchar *why = frame_unfit(self, in);
  if (why) {
    if (!self->told_unfit)
      GST_ELEMENT_WARNING(
          self, STREAM, FORMAT, ("cudaconvolve: dropped a frame: %s", why),
          ("pts %" GST_TIME_FORMAT "; said once until a flush, the frames "
           "dropped after it only in the debug log",
           GST_TIME_ARGS(GST_BUFFER_PTS(in))));
    else
      GST_WARNING_OBJECT(self, "dropped a frame: %s", why);
    self->told_unfit = TRUE;
    g_free(why);
    self->qos_gap = TRUE;
    if (discont)
      self->qos_lost_discont = TRUE;
    gst_buffer_replace(&trans->queued_buf, NULL);
    return GST_FLOW_OK;
  }
  /* on the running time of a TIME segment, as the base class */
  GstClockTime timestamp = GST_BUFFER_PTS(in);
  GstClockTime running_time = GST_CLOCK_TIME_NONE;
  GstClockTime earliest = GST_CLOCK_TIME_NONE;
  gdouble proportion = 1.0;
  if (trans->segment.format == GST_FORMAT_TIME &&
      gst_base_transform_is_qos_enabled(trans)) {
    running_time = gst_segment_to_running_time(&trans->segment, GST_FORMAT_TIME,
                                               timestamp);
    GST_OBJECT_LOCK(self);
    earliest = self->qos_earliest;
    proportion = self->qos_proportion;
    GST_OBJECT_UNLOCK(self);
  }
  if (!GST_CLOCK_TIME_IS_VALID(running_time) ||
      !GST_CLOCK_TIME_IS_VALID(earliest) || running_time > earliest) {
    self->qos_processed++;
    /* A trick mode (a seek with TRICKMODE, TRICKMODE_KEY_UNITS or
     * TRICKMODE_FORWARD_PREDICTED: a decoder hands on key frames alone,
     * a second apart, none DISCONT): a frame that does not follow the
     * one before in time (by half a frame) starts a new history, the
     * temporal taps having weighed a frame a second earlier as the one
     * before (vp8 in webm, rate 2, KEY_UNITS). Frames that do follow
     * (an all-key-frame source) keep it. */
    GstClockTime pts = GST_BUFFER_PTS(in), dur = GST_BUFFER_DURATION(in);
    if ((trans->segment.flags &
         (GST_SEGMENT_FLAG_TRICKMODE | GST_SEGMENT_FLAG_TRICKMODE_KEY_UNITS |
          GST_SEGMENT_FLAG_TRICKMODE_FORWARD_PREDICTED)) &&
        GST_CLOCK_TIME_IS_VALID(pts) && GST_CLOCK_TIME_IS_VALID(dur) &&
        GST_CLOCK_TIME_IS_VALID(self->next_pts)) {
      GstClockTimeDiff d = GST_CLOCK_DIFF(self->next_pts, pts);
      if (d > (GstClockTimeDiff)(dur / 2) || d < -(GstClockTimeDiff)(dur / 2)) {
        GST_DEBUG_OBJECT(self, "trick mode: frame at %" GST_TIME_FORMAT
                         " does not follow the last (ended %" GST_TIME_FORMAT
                         "): temporal history restarts",
                         GST_TIME_ARGS(pts), GST_TIME_ARGS(self->next_pts));
        restart = TRUE;
      }
    }
    self->next_pts = GST_CLOCK_TIME_IS_VALID(pts) && GST_CLOCK_TIME_IS_VALID(dur)
                         ? pts + dur
                         : GST_CLOCK_TIME_NONE;
    self->frame_new_stream =
        discont || restart || self->qos_lost_discont || self->stream_moved;
    self->stream_moved = FALSE;
    self->frame_discont = discont || self->qos_gap;
    self->qos_gap = self->qos_lost_discont = FALSE;
    return GST_FLOW_OK;
  }

  GST_DEBUG_OBJECT(self,
                   "dropping a late frame: running time %" GST_TIME_FORMAT
                   " <= %" GST_TIME_FORMAT,
                   GST_TIME_ARGS(running_time), GST_TIME_ARGS(earliest));
  self->qos_dropped++;
  self->qos_gap = TRUE;
  if (discont)
    self->qos_lost_discont = TRUE;
  GstMessage *msg = gst_message_new_qos(
      GST_OBJECT_CAST(self), FALSE, running_time,
      gst_segment_to_stream_time(&trans->segment, GST_FORMAT_TIME, timestamp),
      timestamp, GST_BUFFER_DURATION(in));
  gst_message_set_qos_values(msg, GST_CLOCK_DIFF(running_time, earliest),
                             proportion, 1000000);
  gst_message_set_qos_stats(msg, GST_FORMAT_BUFFERS, self->qos_processed,
                            self->qos_dropped);
  if (!gst_element_post_message(GST_ELEMENT_CAST(self), msg))
    GST_DEBUG_OBJECT(self, "no bus took the QoS message");
  gst_buffer_replace(&trans->queued_buf, NULL);
  /* generate_output finds no frame and pushes nothing */
  return GST_FLOW_OK;
}

/* Which of an input frame's metas its output carries (a new buffer; a
 * copy, GstBaseTransform's copy_metadata, also where frames are held):
 * the output has the input's size, orientation and colours, so metas
 * that depend on those alone stay true (GstVideoCropMeta, regions of
 * interest); GstVideoFilter keeps only those tagged "video" alone. The
 * rest as GstBaseTransform decides (the untagged ones). */
static gboolean gst_cuda_convolve_transform_meta(GstBaseTransform *trans,
                                                 GstBuffer *outbuf,
                                                 GstMeta *meta,
                                                 GstBuffer *inbuf)
{
  static const char *const kept[] = {
      GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_SIZE_STR,
      GST_META_TAG_VIDEO_ORIENTATION_STR, GST_META_TAG_VIDEO_COLORSPACE_STR};
  const gchar *const *tags = gst_meta_api_type_get_tags(meta->info->api);
  gboolean only_kept = tags && tags[0];
  for (const gchar *const *t = tags; only_kept && *t; t++) {
    gboolean known = FALSE;
    for (size_t i = 0; i < G_N_ELEMENTS(kept) && !known; i++)
      known = !strcmp(*t, kept[i]);
    only_kept = known;
  }
  if (only_kept)
    return TRUE;
  return GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
      ->transform_meta(trans, outbuf, meta, inbuf);
}

/* The controllable properties (cval, scale, bias) take the values their
 * control bindings give at frame `in`'s stream time, before the engine
 * reads them for it: GstBaseTransform leaves that to the element. */
static void sync_controlled(GstCudaConvolve *self, GstBuffer *in)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  if (trans->segment.format != GST_FORMAT_TIME || !GST_BUFFER_PTS_IS_VALID(in))
    return;
  /* also for a frame that starts before the segment (after an accurate
   * seek a decoder's first frame, the one shown, does: videotestsrc's at
   * 0.48 s for a seek to 0.5 s), which gst_segment_to_stream_time() puts
   * nowhere: it kept the values of where the stream was before the seek
   * (QA). Before stream time 0, the values at 0. */
  guint64 st = 0;
  gint sign = gst_segment_to_stream_time_full(&trans->segment, GST_FORMAT_TIME,
                                              GST_BUFFER_PTS(in), &st);
  if (sign == 0)
    return;
  if (sign < 0)
    st = 0;
  if (!gst_object_sync_values(GST_OBJECT(self), st))
    GST_DEBUG_OBJECT(self,
                     "a control binding has no value at %" GST_TIME_FORMAT,
                     GST_TIME_ARGS(st));
}

static GstFlowReturn gst_cuda_convolve_generate_output(GstBaseTransform *trans,
                                                       GstBuffer **outbuf)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
  *outbuf = NULL;
  if (!trans->queued_buf)
    return GST_FLOW_OK;
  sync_controlled(self, trans->queued_buf);
  GstFlowReturn ret = prepare_engine(self, trans->queued_buf);
  if (ret != GST_FLOW_OK) {
    gst_buffer_replace(&trans->queued_buf, NULL);
    return ret;
  }
  if (self->latency_frames == 0 && !self->inflight_frames && !self->cuda_caps) {
    /* live: the base class's frame in, frame out (transform_frame) */
    ret = GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
              ->generate_output(trans, outbuf);
    if (ret == GST_FLOW_OK && *outbuf && self->frame_discont) {
      *outbuf = gst_buffer_make_writable(*outbuf);
      GST_BUFFER_FLAG_SET(*outbuf, GST_BUFFER_FLAG_DISCONT);
    }
    return ret;
  }
  GstBuffer *in = trans->queued_buf;
  trans->queued_buf = NULL;
  return process_delayed(self, in, outbuf);
}

/* Latency 0 only (generate_output): the frame's result into `out`. */
static GstFlowReturn gst_cuda_convolve_transform_frame(GstVideoFilter *filter,
                                                       GstVideoFrame *in,
                                                       GstVideoFrame *out)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(filter);
  cf_frame fin, fout;
  frame_of(in, &fin);
  frame_of(out, &fout);
  cf_status s = process_kind(self, self->held_kind, &fin, &fout);
  if (s == CF_OK)
    pad_field(self, self->parity, &fout);
  note_fallback(self);
  if (s != CF_OK) {
    GST_ELEMENT_ERROR(self, LIBRARY, FAILED, ("cudaconvolve failed"),
                      ("processing a frame: %s", cf_last_error()));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

/* Whether the stream goes on through a new segment, as cudafir sees it:
 * where the last frame ended (else began) at the same running and stream
 * time in both, in the same direction (a seek without FLUSH to another
 * rate where the stream is); without that time, only the same segment
 * again. A looping segment seek and a playlist's next item move it: their
 * first frames come without DISCONT (Matroska, theoradec; playbin and
 * playbin3 gapless), and the temporal taps weighed the end of the loop,
 * or of the item before, as the frames before them (QA). */
static gboolean segment_continues(const GstCudaConvolve *self,
                                  const GstSegment *old, const GstSegment *seg)
{
  /* the same mapping again (a harness's with new caps): the base class
   * moves its copy's position with every frame */
  if (old->format == seg->format && old->rate == seg->rate &&
      old->applied_rate == seg->applied_rate && old->base == seg->base &&
      old->offset == seg->offset && old->start == seg->start &&
      old->stop == seg->stop && old->time == seg->time)
    return TRUE;
  return cf_gst_segment_goes_on(old, seg,
                                GST_CLOCK_TIME_IS_VALID(self->next_pts)
                                    ? self->next_pts
                                    : self->last_pts);
}

/* A new stream or a segment that moves it: the frames in flight went out
 * with the history they had; the next frame kept starts a new one. The
 * same STREAM_START again (a harness's with new caps) is no new stream. */
static void note_stream_moves(GstCudaConvolve *self, GstEvent *event)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  if (GST_EVENT_TYPE(event) == GST_EVENT_SEGMENT) {
    const GstSegment *seg;
    gst_event_parse_segment(event, &seg);
    if (!segment_continues(self, &trans->segment, seg)) {
      GST_DEBUG_OBJECT(self, "a segment that moves the stream: temporal "
                       "history restarts at the next frame");
      self->stream_moved = TRUE;
    }
  } else if (GST_EVENT_TYPE(event) == GST_EVENT_STREAM_START) {
    const gchar *id = NULL;
    guint group = 0;
    gst_event_parse_stream_start(event, &id);
    gboolean has_group = gst_event_parse_group_id(event, &group);
    guint hash = id ? g_str_hash(id) : 0;
    if (self->stream_seen &&
        (hash != self->stream_hash || has_group != self->has_group ||
         group != self->group_id)) {
      GST_DEBUG_OBJECT(self, "a new stream: temporal history restarts at "
                       "the next frame");
      self->stream_moved = TRUE;
    }
    self->stream_seen = TRUE;
    self->stream_hash = hash;
    self->has_group = has_group;
    self->group_id = group;
  }
}

static gboolean gst_cuda_convolve_sink_event(GstBaseTransform *trans,
                                             GstEvent *event)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_FLUSH_STOP: {
    /* the frames in flight belong to before the flush; the sticky events
     * held with them stay on the source pad, as a flush keeps them, and
     * go out before the next frame (not before flush-stop: a flushing pad
     * refuses them) */
    GList *sticky = NULL;
    drop_pending(self, &sticky);
    reset_qos(self); /* as the base class's own, which it never uses */
    self->last_pts = GST_CLOCK_TIME_NONE;
    self->next_pts = GST_CLOCK_TIME_NONE;
    self->last_parity = -1;
    if (self->engine) {
      GST_DEBUG_OBJECT(self, "flush: temporal history restarts");
      reset_kind(self, KIND_NONE);
    }
    gboolean ok = GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
                      ->sink_event(trans, event);
    for (GList *l = sticky; l; l = l->next) {
      GstFlowReturn fr =
          gst_pad_store_sticky_event(GST_BASE_TRANSFORM_SRC_PAD(self), l->data);
      if (fr != GST_FLOW_OK)
        GST_DEBUG_OBJECT(self, "held %s not kept after the flush: %s",
                         GST_EVENT_TYPE_NAME(l->data), gst_flow_get_name(fr));
    }
    g_list_free_full(sticky, (GDestroyNotify)gst_event_unref);
    return ok;
  }
  case GST_EVENT_EOS:
  case GST_EVENT_SEGMENT:
  case GST_EVENT_GAP:
  case GST_EVENT_STREAM_START:
  case GST_EVENT_SEGMENT_DONE: {
    /* the frames in flight come before the event */
    GstFlowReturn ret = push_pending(self, GST_EVENT_TYPE_NAME(event));
    if (ret != GST_FLOW_OK) /* dropped; the event goes on regardless */
      GST_INFO_OBJECT(self, "frames held before %s: %s",
                      GST_EVENT_TYPE_NAME(event), gst_flow_get_name(ret));
    note_stream_moves(self, event);
    if (GST_EVENT_TYPE(event) == GST_EVENT_GAP) {
      /* a frame without a duration lasts until the next one, but not
       * across a gap: the frames held went out before it and the frame
       * after it waits for none. The time since the frame before it
       * (5 s of a live source's GAP at 0/1) counted as a frame period,
       * and the latency became D times that for good (QA); from the
       * gap's end it is a frame's */
      GstClockTime ts, dur;
      gst_event_parse_gap(event, &ts, &dur);
      if (GST_CLOCK_TIME_IS_VALID(ts)) {
        GstClockTime end = GST_CLOCK_TIME_IS_VALID(dur) ? ts + dur : ts;
        if (!GST_CLOCK_TIME_IS_VALID(self->last_pts) || end > self->last_pts)
          self->last_pts = end;
      }
    }
    break;
  }
  case GST_EVENT_CAPS: break; /* set_info pushes the frames out first */
  default:
    /* tags, TOC, custom serialized events: they follow the frames that
     * came before them, which are still held */
    if (GST_EVENT_IS_SERIALIZED(event) && self->inflight_frames) {
      GST_DEBUG_OBJECT(self, "%s held behind %u frames",
                       GST_EVENT_TYPE_NAME(event), self->inflight_frames);
      gst_queue_array_push_tail(self->inflight, event);
      return TRUE;
    }
    break;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
      ->sink_event(trans, event);
}

static gboolean gst_cuda_convolve_query(GstBaseTransform *trans,
                                        GstPadDirection direction,
                                        GstQuery *query)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
#ifdef CF_HAVE_GSTCUDA
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT &&
      gst_cuda_handle_context_query(GST_ELEMENT(self), query, self->cuda_ctx))
    return TRUE;
#endif
  gboolean res = GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
                     ->query(trans, direction, query);
  if (res && direction == GST_PAD_SRC &&
      GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency(query, &live, &min, &max);
    GST_OBJECT_LOCK(self);
    guint frames = self->latency_frames;
    GstClockTime ours = our_latency(self);
    GST_OBJECT_UNLOCK(self);
    GST_DEBUG_OBJECT(self, "latency: %u frames, %" GST_TIME_FORMAT, frames,
                     GST_TIME_ARGS(ours));
    /* saturated: never wrapped below upstream's */
    min = min > G_MAXUINT64 - 1 - ours ? G_MAXUINT64 - 1 : min + ours;
    if (GST_CLOCK_TIME_IS_VALID(max))
      max = max > G_MAXUINT64 - 1 - ours ? GST_CLOCK_TIME_NONE : max + ours;
    gst_query_set_latency(query, live, min, max);
  }
  return res;
}

#ifdef CF_HAVE_GSTCUDA
/* Our GstCudaContext: a neighbour's (GstContext) or a new one for
 * device-id, shared in turn. */
static gboolean ensure_cuda_context(GstCudaConvolve *self)
{
  if (gst_cuda_ensure_element_context(GST_ELEMENT(self), self->device_id,
                                      &self->cuda_ctx))
    return TRUE;
  GST_ELEMENT_ERROR(self, RESOURCE, FAILED,
                    ("cudaconvolve has no CUDA context for CUDA memory"),
                    ("no GstCudaContext for device %d", self->device_id));
  return FALSE;
}

/* A GstCudaBufferPool for `caps` in our context; *size is the pool's
 * buffer size (rows padded to the device's pitch). NULL if refused. */
static GstBufferPool *cuda_pool_new(GstCudaConvolve *self, GstCaps *caps,
                                    guint min, guint max, guint *size)
{
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps))
    return NULL;
  GstBufferPool *pool = gst_cuda_buffer_pool_new(self->cuda_ctx);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, (guint)info.size, min, max);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config(pool, config)) {
    GST_WARNING_OBJECT(self, "the CUDA buffer pool refused its configuration");
    gst_object_unref(pool);
    return NULL;
  }
  config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_get_params(config, NULL, size, NULL, NULL);
  gst_structure_free(config);
  return pool;
}

static void gst_cuda_convolve_set_context(GstElement *element,
                                          GstContext *context)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(element);
  gst_cuda_handle_set_context(element, context, self->device_id,
                              &self->cuda_ctx);
  GST_ELEMENT_CLASS(gst_cuda_convolve_parent_class)
      ->set_context(element, context);
}
#endif

/* Upstream gets a video buffer pool on our host memory, pinned where a CUDA
 * device exists, so that frames land where the GPU copies from; for CUDA
 * memory, a GstCudaBufferPool in our context. */
static gboolean gst_cuda_convolve_propose_allocation(GstBaseTransform *trans,
                                                     GstQuery *decide_query,
                                                     GstQuery *query)
{
  if (gst_base_transform_is_passthrough(trans))
    return GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
        ->propose_allocation(trans, decide_query, query);
  GstCaps *caps;
  gboolean need_pool;
  GstVideoInfo info;
  gst_query_parse_allocation(query, &caps, &need_pool);
  if (!caps || !gst_video_info_from_caps(&info, caps))
    return FALSE;
#ifdef CF_HAVE_GSTCUDA
  if (caps_cuda(caps)) {
    GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
    if (!ensure_cuda_context(self))
      return FALSE;
    guint size = 0;
    GstBufferPool *pool =
        need_pool ? cuda_pool_new(self, caps, 0, 0, &size) : NULL;
    if (pool) {
      gst_query_add_allocation_pool(query, pool, size, 0, 0);
      gst_object_unref(pool);
    }
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
    return TRUE;
  }
#endif
  GstAllocator *alloc = cf_gst_host_allocator_get();
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 63;
  if (need_pool) {
    GstBufferPool *pool = gst_video_buffer_pool_new();
    GstStructure *config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, (guint)info.size, 0, 0);
    gst_buffer_pool_config_set_allocator(config, alloc, &params);
    gst_buffer_pool_config_add_option(config,
                                      GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config(pool, config)) {
      GST_WARNING_OBJECT(trans, "buffer pool refused its configuration");
      gst_object_unref(pool);
      gst_object_unref(alloc);
      return FALSE;
    }
    gst_query_add_allocation_pool(query, pool, (guint)info.size, 0, 0);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_param(query, alloc, &params);
  gst_object_unref(alloc);
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
  return TRUE;
}

/* Downstream offering neither a pool nor an allocator (fakesink,
 * filesink, appsink): the output pool GstVideoFilter would make uses the
 * system allocator; ours uses the host allocator instead, so that on a
 * CUDA machine frames are downloaded straight into pinned memory (no
 * staging copy). Downstream's own pool or allocator still wins. */
static gboolean gst_cuda_convolve_decide_allocation(GstBaseTransform *trans,
                                                    GstQuery *query)
{
  GstCaps *caps = NULL;
  GstVideoInfo info;
  gst_query_parse_allocation(query, &caps, NULL);
#ifdef CF_HAVE_GSTCUDA
  /* CUDA memory: a GstCudaBufferPool of ours (in our context, configured
   * for these caps), with the counts downstream asked for */
  if (caps_cuda(caps)) {
    GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
    if (!ensure_cuda_context(self))
      return FALSE;
    guint size = 0, min = 0, max = 0;
    guint n = gst_query_get_n_allocation_pools(query);
    if (n > 0)
      gst_query_parse_nth_allocation_pool(query, 0, NULL, &size, &min, &max);
    GstBufferPool *pool = cuda_pool_new(self, caps, min, max, &size);
    if (!pool) {
      GST_ELEMENT_ERROR(
          self, RESOURCE, SETTINGS,
          ("cudaconvolve cannot allocate CUDA memory"),
          ("the CUDA buffer pool refused %" GST_PTR_FORMAT, caps));
      return FALSE;
    }
    if (n > 0)
      gst_query_set_nth_allocation_pool(query, 0, pool, size, min, max);
    else
      gst_query_add_allocation_pool(query, pool, size, min, max);
    gst_object_unref(pool);
    return TRUE;
  }
#endif
  if (gst_query_get_n_allocation_pools(query) == 0 && caps &&
      gst_video_info_from_caps(&info, caps)) {
    GstAllocator *alloc = cf_gst_host_allocator_get();
    GstAllocationParams params;
    gst_allocation_params_init(&params);
    params.align = 63;
    GstBufferPool *pool = gst_video_buffer_pool_new();
    GstStructure *config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, (guint)info.size, 2, 0);
    gst_buffer_pool_config_set_allocator(config, alloc, &params);
    if (gst_buffer_pool_set_config(pool, config)) {
      gst_query_add_allocation_pool(query, pool, (guint)info.size, 2, 0);
      if (gst_query_get_n_allocation_params(query) == 0)
        gst_query_add_allocation_param(query, alloc, &params);
    } else {
      GST_WARNING_OBJECT(trans, "our output pool refused its configuration; "
                         "allocating each frame");
    }
    gst_object_unref(pool);
    gst_object_unref(alloc);
  }
  return GST_BASE_TRANSFORM_CLASS(gst_cuda_convolve_parent_class)
      ->decide_allocation(trans, query);
}

static gboolean gst_cuda_convolve_start(GstBaseTransform *trans)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
  /* a value refused while stopped: frames would pass without it (a
   * gst-launch line's NaN tap left them unfiltered, exit 0; QA) */
  if (!cf_gst_refusals_start(GST_ELEMENT(self), "cudaconvolve", self->refusals))
    return FALSE;
  reset_qos(self);
  GST_OBJECT_LOCK(self);
  self->started = TRUE;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static gboolean gst_cuda_convolve_stop(GstBaseTransform *trans)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(trans);
  reset_qos(self);
  free_engine(self); /* and the frames in flight */
  GST_OBJECT_LOCK(self);
  self->started = FALSE;
  g_clear_pointer(&self->posted, g_free);
  self->stream_format = GST_VIDEO_FORMAT_UNKNOWN;
  self->await_caps = 0;
  self->latency_frames = 0;
  self->fps_n = 0;
  self->fps_d = 1;
  self->max_duration = GST_CLOCK_TIME_NONE;
  self->last_pts = GST_CLOCK_TIME_NONE;
  self->next_pts = GST_CLOCK_TIME_NONE;
  self->stream_moved = self->stream_seen = FALSE;
  self->announced = 0;
  /* nothing runs: as before negotiation (the blurb) */
  gboolean had = self->backend_in_use != NULL;
  g_clear_pointer(&self->backend_in_use, g_free);
  GST_OBJECT_UNLOCK(self);
  if (had)
    g_object_notify(G_OBJECT(self), "backend-in-use");
  return TRUE;
}

/* ---- properties ---------------------------------------------------------- */

/* Refuse a value: a warning naming the property and why, on the bus (an
 * application watching it hears), else, where there is no bus yet
 * (gst-launch sets properties before it makes the pipeline), through
 * GLib: cf_gst_warn_without_bus. Not under the object lock: posting
 * takes it. */
/* A set this thread's set_property refused: no notify for it (the
 * property keeps its value; GParamSpecs are G_PARAM_EXPLICIT_NOTIFY). */
static _Thread_local gboolean refused_here;

#define REFUSE(self, prop, ...)                                                \
  do {                                                                         \
    refused_here = TRUE;                                                       \
    gchar *why_ = g_strdup_printf(__VA_ARGS__);                                \
    GST_WARNING_OBJECT(self, "%s refused: %s", prop, why_);                    \
    GST_OBJECT_LOCK(self);                                                     \
    if (!self->started) { /* stopped: no start until a value is taken */       \
      cf_gst_refusals_note(self->refusals, prop, why_);                        \
      gchar *more_ = g_strdup_printf("%s; no stream starts until %s is set "   \
                                     "to a value taken",                       \
                                     why_, prop);                              \
      g_free(why_);                                                            \
      why_ = more_;                                                            \
    }                                                                          \
    GST_OBJECT_UNLOCK(self);                                                   \
    if (cf_gst_warn_without_bus(GST_ELEMENT(self)))                            \
      g_warning("%s: %s refused: %s", GST_OBJECT_NAME(self), prop, why_);      \
    CF_GST_POST_WARNING(self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, \
                        g_strdup_printf("cudaconvolve refused %s, keeping "    \
                                        "the previous value",                  \
                                        prop),                                 \
                        why_);                                                 \
    g_free(why_);                                                              \
  } while (0)

/* `src` becomes the kernel's source (set to something), or where
 * `cleared` stops being one: the latest set of those still set, else the
 * identity ("The last set of kernel, kernel-file and preset is used"; a
 * cleared preset left frames unfiltered while a kernel was set and read
 * back). Under the object lock. */
static void set_source(GstCudaConvolve *self, KernelSource src,
                       gboolean cleared)
{
  if (!cleared) {
    self->source = src;
    self->set_at[src] = ++self->settings;
    return;
  }
  self->set_at[src] = 0;
  if (self->source != src)
    return;
  gboolean set[SRC_PRESET + 1] = {
      [SRC_ARRAY] = self->taps->len > 0,
      [SRC_FILE] = self->file_kernel || self->file_error,
      [SRC_PRESET] = self->preset != CF_GST_PRESET_NONE};
  self->source = SRC_IDENTITY;
  guint64 latest = 0;
  for (int i = SRC_ARRAY; i <= SRC_PRESET; i++)
    if (set[i] && self->set_at[i] > latest) {
      latest = self->set_at[i];
      self->source = (KernelSource)i;
    }
}

static void set_kernel_array(GstCudaConvolve *self, const GValue *value)
{
  guint n = gst_value_array_get_size(value);
  GArray *taps = g_array_sized_new(FALSE, FALSE, sizeof(gfloat), n);
  gchar *why = NULL;
  if (!cf_gst_value_taps(value, taps, &why)) {
    REFUSE(self, "kernel", "%s; the kernel stays as it was", why);
    g_free(why);
    g_array_unref(taps);
    return;
  }
  GST_OBJECT_LOCK(self);
  g_array_unref(self->taps);
  self->taps = taps;
  set_source(self, SRC_ARRAY, n == 0);
  KernelPrep prep = update_kernel(self);
  GST_OBJECT_UNLOCK(self);
  prepare_kernel(self, prep);
}

/* A file that does not load. While streaming it is refused and the
 * kernel goes on. Before, as cudafir does, it is kept as the kernel
 * setting, and negotiation fails with an element error naming it: frames
 * passing with the kernel from before (the identity, where the file was
 * the only kernel set) would hide the mistake. Either way a warning on
 * the bus (or with GLib, where there is no bus yet: gst-launch sets
 * properties before it makes the pipeline). */
static void set_kernel_file(GstCudaConvolve *self, const gchar *path)
{
  cf_kernel2d *k = NULL;
  gchar *why = NULL;
  if (path && *path && cf_kernel2d_load(path, &k) != CF_OK)
    why = strstr(cf_last_error(), path)
              ? g_strdup(cf_last_error())
              : g_strdup_printf("%s: %s", path, cf_last_error());
  GST_OBJECT_LOCK(self);
  gboolean streaming = self->engine != NULL;
  if (why && streaming) {
    GST_OBJECT_UNLOCK(self);
    REFUSE(self, "kernel-file", "%s; keeping the previous value and kernel",
           why);
    g_free(why);
    return;
  }
  undo_drop_file(self);
  self->file_kernel = k;
  self->kernel_file = k || why ? g_strdup(path) : NULL;
  self->file_error = why ? g_strdup(why) : NULL;
  set_source(self, SRC_FILE, !k && !why);
  KernelPrep prep = update_kernel(self);
  GST_OBJECT_UNLOCK(self);
  prepare_kernel(self, prep);
  if (!why)
    return;
  GST_WARNING_OBJECT(self, "kernel-file: %s", why);
  if (cf_gst_warn_without_bus(GST_ELEMENT(self)))
    g_warning("%s: kernel-file: %s; no stream starts with it",
              GST_OBJECT_NAME(self), why);
  gchar *detail = g_strdup_printf("%s; no stream starts with it (negotiation "
                                  "fails) until another kernel is set",
                                  why);
  CF_GST_POST_WARNING(self, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                      g_strdup("cudaconvolve: bad kernel-file"), detail);
  g_free(detail);
  g_free(why);
}

/* preset, size, sigma: the preset must accept the combination. Setting
 * size or sigma while a preset that does not take it is the kernel is
 * refused (the library's message names the preset); choosing a preset
 * never fails on a value only other presets take. The two that are not
 * being set are read under the lock: two threads setting size and sigma
 * at once must not write back each other's old value. */
static void set_preset(GstCudaConvolve *self, guint prop_id,
                       const GValue *value, const char *prop)
{
  GST_OBJECT_LOCK(self);
  gint preset = prop_id == PROP_PRESET ? g_value_get_enum(value) : self->preset;
  guint size = prop_id == PROP_SIZE ? g_value_get_uint(value) : self->size;
  gdouble sigma =
      prop_id == PROP_SIGMA ? g_value_get_double(value) : self->sigma;
  gboolean is_preset_prop = prop_id == PROP_PRESET;
  /* check what the preset would be asked for, when it is (or becomes) the
   * kernel's source; without the object lock (a 4095x4095 gaussian is
   * made in 100 ms), the values staying as they are under kernel_lock,
   * which this set holds (undo_begin) */
  if (preset != CF_GST_PRESET_NONE &&
      (is_preset_prop || self->source == SRC_PRESET)) {
    GST_OBJECT_UNLOCK(self);
    cf_kernel2d *k = NULL;
    gboolean with_size = preset_takes_size(preset) || prop_id == PROP_SIZE;
    gboolean with_sigma = preset_takes_sigma(preset) || prop_id == PROP_SIGMA;
    if (cf_kernel2d_preset((cf_preset)(preset - 1), with_size ? size : 0,
                           with_sigma ? sigma : 0.0, &k) != CF_OK) {
      gchar *why = g_strdup(cf_last_error());
      REFUSE(self, prop, "%s", why);
      g_free(why);
      return;
    }
    cf_kernel2d_free(k);
    GST_OBJECT_LOCK(self);
  }
  gboolean was = self->source == SRC_PRESET;
  self->preset = preset;
  self->size = size;
  self->sigma = sigma;
  if (is_preset_prop)
    set_source(self, SRC_PRESET, preset == CF_GST_PRESET_NONE);
  KernelPrep prep = {NULL, 0};
  if (was || self->source == SRC_PRESET)
    prep = update_kernel(self);
  GST_OBJECT_UNLOCK(self);
  prepare_kernel(self, prep);
}

static void set_finite(GstCudaConvolve *self, gfloat *field, gfloat v,
                       const char *prop, gboolean output)
{
  if (!isfinite(v)) {
    REFUSE(self, prop, "%s is not a finite number", isnan(v) ? "NaN" : "inf");
    return;
  }
  GST_OBJECT_LOCK(self);
  if (*field != v) { /* the value it has: nothing to rebuild or restart */
    *field = v;
    if (output)
      self->output_serial++;
    else
      self->config_serial++;
  }
  GST_OBJECT_UNLOCK(self);
}

static void set_property_body(GObject *object, guint prop_id,
                              const GValue *value, GParamSpec *pspec);

/* notify::<property> for a value taken, none for one refused (an
 * application binding a control to notify showed a value the element had
 * refused and did not hold) */
static void gst_cuda_convolve_set_property(GObject *object, guint prop_id,
                                           const GValue *value,
                                           GParamSpec *pspec)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(object);
  gboolean kernel_setting =
      prop_id == PROP_KERNEL || prop_id == PROP_KERNEL_FILE ||
      prop_id == PROP_PRESET || prop_id == PROP_SIZE || prop_id == PROP_SIGMA ||
      prop_id == PROP_KERNEL_WIDTH || prop_id == PROP_KERNEL_HEIGHT;
  refused_here = FALSE;
  if (kernel_setting)
    undo_begin(self);
  set_property_body(object, prop_id, value, pspec);
  gchar *nomem = kernel_setting ? undo_end(self) : NULL;
  if (nomem) {
    REFUSE(self, g_param_spec_get_name(pspec),
           "the new kernel does not fit in memory: %s; the kernel stays as "
           "it was",
           nomem);
    g_free(nomem);
  }
  if (!refused_here) {
    /* a value taken: its refusal before no longer stops a start (nor,
     * the last set of them winning, the other kernel sources') */
    GST_OBJECT_LOCK(self);
    g_hash_table_remove(self->refusals, pspec->name);
    if (prop_id == PROP_KERNEL || prop_id == PROP_KERNEL_FILE ||
        prop_id == PROP_PRESET) {
      g_hash_table_remove(self->refusals, "kernel");
      g_hash_table_remove(self->refusals, "kernel-file");
      g_hash_table_remove(self->refusals, "preset");
    }
    GST_OBJECT_UNLOCK(self);
    g_object_notify_by_pspec(object, pspec);
  }
  refused_here = FALSE;
}

static void set_property_body(GObject *object, guint prop_id,
                              const GValue *value, GParamSpec *pspec)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(object);
  switch (prop_id) {
  case PROP_KERNEL: set_kernel_array(self, value); return;
  case PROP_KERNEL_FILE: set_kernel_file(self, g_value_get_string(value));
    return;
  case PROP_PRESET:
  case PROP_SIZE:
  case PROP_SIGMA:
    set_preset(self, prop_id, value, g_param_spec_get_name(pspec));
    return;
  case PROP_CVAL: set_finite(self, &self->cval, g_value_get_float(value),
                             "cval", FALSE);
    return;
  case PROP_BACKEND: {
    /* known now, rather than at the next frame after g_object_set (and a
     * cudafilterd `set`) returned: before streaming, negotiation reports
     * it as an element error */
    const char *why = NULL;
    GST_OBJECT_LOCK(self);
    gboolean streaming = self->engine != NULL;
    GST_OBJECT_UNLOCK(self);
    if (streaming && g_value_get_enum(value) == CF_BACKEND_CUDA &&
        cf_backend_available(CF_BACKEND_CUDA, &why) != CF_OK) {
      REFUSE(self, "backend", "cuda while streaming: %s; the engine goes "
             "on as it is", why);
      return;
    }
    break;
  }
  case PROP_SCALE: set_finite(self, &self->scale, g_value_get_float(value),
                              "scale", TRUE);
    return;
  case PROP_BIAS: set_finite(self, &self->bias, g_value_get_float(value),
                             "bias", TRUE);
    return;
  case PROP_COMPONENTS: {
    const gchar *s = g_value_get_string(value);
    gchar *err = NULL;
    if (!s)
      s = DEFAULT_COMPONENTS;
    if ((err = components_unfit(s)) != NULL) {
      REFUSE(self, "components", "%s", err);
      g_free(err);
      return;
    }
    /* Components the stream's format lacks: where upstream can give a
     * format they fit, it is asked (a reconfigure event), and the frames
     * still on their way go through the engine before (await_caps); where
     * it cannot, they are refused now (the property keeps its value),
     * rather than taken and put back at the next frame, after
     * g_object_set (and a cudafilterd `set`) had returned. */
    /* The check and the commit in one piece with respect to the other
     * elements' (components_check_lock): two changed at once behind a
     * tee each checked against the other's old components (QA). */
    components_check_lock(self);
    GST_OBJECT_LOCK(self);
    GstVideoFormat fmt = self->stream_format;
    gboolean same = !strcmp(s, self->components);
    GST_OBJECT_UNLOCK(self);
    if (same) { /* as they are: no rebuild, the history goes on */
      g_rec_mutex_unlock(&components_check);
      return;
    }
    gboolean unfit = fmt != GST_VIDEO_FORMAT_UNKNOWN &&
                     !components_fit(s, gst_video_format_to_string(fmt));
    gchar *why = NULL;
    if (unfit) {
      GstCaps *cur =
          gst_pad_get_current_caps(GST_BASE_TRANSFORM_SINK_PAD(self));
      gchar *side = NULL;
      gboolean ask = cur && upstream_can_fit(self, s, cur, &side);
      if (cur)
        gst_caps_unref(cur);
      if (!ask)
        why = g_strdup_printf(
            "'%s': the stream's %s lacks them and %s; the components stay "
            "as they are",
            s, gst_video_format_to_string(fmt),
            side ? side : "upstream offers no format that has them");
      g_free(side);
    } else if (fmt != GST_VIDEO_FORMAT_UNKNOWN) {
      /* components the format has, but behind a tee another branch may
       * have asked for a format that lacks them (components=r there
       * while the stream is still YUV, then luma here): taken, the
       * renegotiation found no format for both and the stream stopped
       * with a bare not-negotiated (QA) */
      gchar *far = upstream_links_unfit(self, s);
      if (far)
        why = g_strdup_printf("'%s': %s; the components stay as they are", s,
                              far);
      g_free(far);
    }
    if (why) {
      g_rec_mutex_unlock(&components_check);
      REFUSE(self, "components", "%s", why);
      g_free(why);
      return;
    }
    components_test_point(self, "checked");
    GST_OBJECT_LOCK(self);
    g_free(self->components);
    self->components = g_strdup(s);
    self->config_serial++;
    self->await_caps = unfit ? AWAIT_CAPS_FRAMES : 0;
    if (fmt != GST_VIDEO_FORMAT_UNKNOWN) /* streaming: caps may cross */
      remember_components(self, s);
    GST_OBJECT_UNLOCK(self);
    g_rec_mutex_unlock(&components_check);
    if (unfit)
      gst_base_transform_reconfigure_sink(GST_BASE_TRANSFORM(self));
    return;
  }
  default: break;
  }

  KernelPrep prep = {NULL, 0};
  gboolean changed = TRUE; /* a setting set to the value it has rebuilds
                              nothing (a UI re-applying all its settings
                              with a new scale restarted the history) */
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_KERNEL_WIDTH:
  case PROP_KERNEL_HEIGHT:
    if (prop_id == PROP_KERNEL_WIDTH)
      self->kernel_width = g_value_get_uint(value);
    else
      self->kernel_height = g_value_get_uint(value);
    if (self->source == SRC_ARRAY)
      prep = update_kernel(self);
    break;
#define TAKE(field, v)                                                         \
  do {                                                                         \
    changed = self->field != (v);                                              \
    self->field = (v);                                                         \
  } while (0)
  case PROP_BORDER: TAKE(border, (cf_border)g_value_get_enum(value)); break;
  case PROP_ABSOLUTE:
    TAKE(absolute, g_value_get_boolean(value));
    if (changed)
      self->output_serial++;
    GST_OBJECT_UNLOCK(self);
    return;
  case PROP_BACKEND: TAKE(backend, (cf_backend)g_value_get_enum(value)); break;
  case PROP_DEVICE_ID: TAKE(device_id, g_value_get_int(value)); break;
  case PROP_PIPELINE_DEPTH: TAKE(pipeline_depth, g_value_get_uint(value));
    break;
  case PROP_THREADS: TAKE(threads, g_value_get_uint(value)); break;
#undef TAKE
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    GST_OBJECT_UNLOCK(self);
    return;
  }
  if (prop_id != PROP_KERNEL_WIDTH && prop_id != PROP_KERNEL_HEIGHT && changed)
    self->config_serial++;
  GST_OBJECT_UNLOCK(self);
  prepare_kernel(self, prep);
}

static void gst_cuda_convolve_get_property(GObject *object, guint prop_id,
                                           GValue *value, GParamSpec *pspec)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(object);
  if (prop_id == PROP_KERNEL) { /* the GValues made without the lock */
    cf_gst_taps_value(GST_OBJECT(self), &self->taps, value);
    return;
  }
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_KERNEL_WIDTH: g_value_set_uint(value, self->kernel_width); break;
  case PROP_KERNEL_HEIGHT: g_value_set_uint(value, self->kernel_height); break;
  case PROP_KERNEL_FILE: g_value_set_string(value, self->kernel_file); break;
  case PROP_PRESET: g_value_set_enum(value, self->preset); break;
  case PROP_SIZE: g_value_set_uint(value, self->size); break;
  case PROP_SIGMA: g_value_set_double(value, self->sigma); break;
  case PROP_BORDER: g_value_set_enum(value, self->border); break;
  case PROP_CVAL: g_value_set_float(value, self->cval); break;
  case PROP_SCALE: g_value_set_float(value, self->scale); break;
  case PROP_BIAS: g_value_set_float(value, self->bias); break;
  case PROP_ABSOLUTE: g_value_set_boolean(value, self->absolute); break;
  case PROP_COMPONENTS: g_value_set_string(value, self->components); break;
  case PROP_BACKEND: g_value_set_enum(value, self->backend); break;
  case PROP_DEVICE_ID: g_value_set_int(value, self->device_id); break;
  case PROP_PIPELINE_DEPTH: g_value_set_uint(value, self->pipeline_depth);
    break;
  case PROP_THREADS: g_value_set_uint(value, self->threads); break;
  case PROP_BACKEND_IN_USE: g_value_set_string(value, self->backend_in_use);
    break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_convolve_finalize(GObject *object)
{
  GstCudaConvolve *self = GST_CUDA_CONVOLVE(object);
  /* the reaper's wake-ups dropped, the one running waited for; what it
   * left given back here */
  if (self->reaper)
    g_thread_pool_free(self->reaper, TRUE, TRUE);
  reap_swaps(NULL, self->retired);
  g_async_queue_unref(self->retired);
  free_engine(self);
  cf_kernel2d_free(self->ready);
  gst_queue_array_free(self->inflight);
  g_array_unref(self->taps);
  g_hash_table_destroy(self->refusals);
  g_free(self->kernel_file);
  cf_kernel2d_free(self->file_kernel);
  g_free(self->file_error);
  g_free(self->components);
  cf_kernel2d_free(self->kernel);
  g_free(self->kernel_error);
  g_free(self->backend_in_use);
  g_free(self->posted);
  g_mutex_clear(&self->engine_lock);
  g_rec_mutex_clear(&self->kernel_lock);
#ifdef CF_HAVE_GSTCUDA
  gst_clear_object(&self->cuda_ctx);
#endif
  G_OBJECT_CLASS(gst_cuda_convolve_parent_class)->finalize(object);
}

static void unref_held(gpointer obj)
{
  gst_mini_object_unref(obj);
}

static void gst_cuda_convolve_init(GstCudaConvolve *self)
{
  self->taps = g_array_new(FALSE, FALSE, sizeof(gfloat));
  self->retired = g_async_queue_new();
  self->refusals = cf_gst_refusals_new();
  self->kernel_width = DEFAULT_KERNEL_WIDTH;
  self->kernel_height = DEFAULT_KERNEL_HEIGHT;
  self->preset = DEFAULT_PRESET;
  self->size = DEFAULT_SIZE;
  self->sigma = DEFAULT_SIGMA;
  self->source = SRC_IDENTITY;
  self->border = DEFAULT_BORDER;
  self->cval = DEFAULT_CVAL;
  self->scale = DEFAULT_SCALE;
  self->bias = DEFAULT_BIAS;
  self->absolute = DEFAULT_ABSOLUTE;
  self->components = g_strdup(DEFAULT_COMPONENTS);
  self->stream_format = GST_VIDEO_FORMAT_UNKNOWN;
  self->backend = DEFAULT_BACKEND;
  self->device_id = DEFAULT_DEVICE_ID;
  self->pipeline_depth = DEFAULT_PIPELINE_DEPTH;
  self->threads = DEFAULT_THREADS;
  self->fps_d = 1;
  self->max_duration = GST_CLOCK_TIME_NONE;
  self->last_pts = GST_CLOCK_TIME_NONE;
  self->next_pts = GST_CLOCK_TIME_NONE;
  self->qos_proportion = 1.0;
  self->qos_earliest = GST_CLOCK_TIME_NONE;
  self->inflight = gst_queue_array_new(CF_VIDEO_MAX_DEPTH + 1);
  self->held_kind = KIND_NONE;
  self->last_parity = -1;
  gst_queue_array_set_clear_func(self->inflight, unref_held);
  /* around the base class's chain (set in its instance init, before this) */
  GstPad *sink = GST_BASE_TRANSFORM_SINK_PAD(self);
  self->base_chain = GST_PAD_CHAINFUNC(sink);
  gst_pad_set_chain_function(sink, GST_DEBUG_FUNCPTR(gst_cuda_convolve_chain));
  g_mutex_init(&self->engine_lock);
  g_rec_mutex_init(&self->kernel_lock);
  GST_OBJECT_LOCK(self);
  KernelPrep prep = update_kernel(self); /* no engine yet: NULL */
  GST_OBJECT_UNLOCK(self);
  prepare_kernel(self, prep);
}

#define PARAM_FLAGS                                                            \
  (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING |     \
   G_PARAM_EXPLICIT_NOTIFY)

static void gst_cuda_convolve_class_init(GstCudaConvolveClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS(klass);

  GST_DEBUG_CATEGORY_INIT(cudaconvolve_debug, "cudaconvolve", 0,
                          "cudafilter 2D/temporal video convolution");

  gobject_class->set_property = gst_cuda_convolve_set_property;
  gobject_class->get_property = gst_cuda_convolve_get_property;
  gobject_class->finalize = gst_cuda_convolve_finalize;

  const GParamFlags flags = PARAM_FLAGS;
  g_object_class_install_property(
      gobject_class, PROP_KERNEL,
      cf_gst_param_spec_taps(
          "kernel", "Kernel",
          "Kernel taps, row-major (T x kernel-height x kernel-width, "
          "current frame first), e.g. \"<0,-1,0,-1,5,-1,0,-1,0>\"; with "
          "kernel-width and kernel-height 0 it must be square (finite "
          "numbers of any type, kept as floats). Empty: not used",
          flags));
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_WIDTH,
      g_param_spec_uint("kernel-width", "Kernel width",
                        "Columns of the kernel array (0: derived from its "
                        "length and kernel-height, or square). The centre "
                        "is column kernel-width / 2, rounded down, as "
                        "scipy.ndimage.convolve takes it (even widths "
                        "too)",
                        0, CF_KERNEL2D_MAX_SIDE, DEFAULT_KERNEL_WIDTH, flags));
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_HEIGHT,
      g_param_spec_uint("kernel-height", "Kernel height",
                        "Rows of the kernel array (0: derived from its "
                        "length and kernel-width, or square). The centre "
                        "is row kernel-height / 2, rounded down, as "
                        "scipy.ndimage.convolve takes it",
                        0, CF_KERNEL2D_MAX_SIDE, DEFAULT_KERNEL_HEIGHT, flags));
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_FILE,
      g_param_spec_string(
          "kernel-file", "Kernel file",
          "Kernel from a file: .npy (float32/64, 2D Kh x Kw or 3D T x Kh x "
          "Kw for temporal taps) or text (one row per line, a blank line "
          "between temporal taps); loaded when set. NULL: not used. One "
          "that does not load is refused while playing (a warning), kept "
          "if set before: negotiation fails, naming it. A kernel (from "
          "this, kernel or preset) that does not fit in memory while "
          "streaming is refused, the kernel before going on",
          DEFAULT_KERNEL_FILE, flags));
  g_object_class_install_property(
      gobject_class, PROP_PRESET,
      g_param_spec_enum("preset", "Preset",
                        "A built-in kernel (with size and sigma). The last "
                        "set of kernel, kernel-file and preset is used; "
                        "with none of them the 1x1 identity",
                        cf_gst_preset_get_type(), DEFAULT_PRESET, flags));
  g_object_class_install_property(
      gobject_class, PROP_SIZE,
      g_param_spec_uint("size", "Preset size",
                        "Preset kernel side N (N x N) for gaussian, box and "
                        "unsharp; 0: the preset's default. The other "
                        "presets are 3x3 and do not use it",
                        0, CF_KERNEL2D_MAX_SIDE, DEFAULT_SIZE, flags));
  g_object_class_install_property(
      gobject_class, PROP_SIGMA,
      g_param_spec_double("sigma", "Preset sigma",
                          "Gaussian sigma in pixels for gaussian and "
                          "unsharp (the other presets do not use it); 0: "
                          "0.3 * ((size - 1) / 2 - 1) + 0.8",
                          0.0, MAX_SIGMA, DEFAULT_SIGMA, flags));
  g_object_class_install_property(
      gobject_class, PROP_BORDER,
      g_param_spec_enum("border", "Border",
                        "Samples outside the frame, as "
                        "scipy.ndimage.convolve's mode",
                        cf_gst_border_get_type(), DEFAULT_BORDER, flags));
  g_object_class_install_property(
      gobject_class, PROP_CVAL,
      g_param_spec_float("cval", "Constant value",
                         "Value outside the frame for border=constant, in "
                         "sample units (0..255 for 8-bit, 0..65535 for "
                         "16-bit)",
                         -G_MAXFLOAT, G_MAXFLOAT, DEFAULT_CVAL, flags | GST_PARAM_CONTROLLABLE));
  g_object_class_install_property(
      gobject_class, PROP_SCALE,
      g_param_spec_float("scale", "Scale",
                         "Multiply the convolution by this",
                         -G_MAXFLOAT, G_MAXFLOAT, DEFAULT_SCALE, flags | GST_PARAM_CONTROLLABLE));
  g_object_class_install_property(
      gobject_class, PROP_BIAS,
      g_param_spec_float("bias", "Bias",
                         "Add this after scaling, in sample units",
                         -G_MAXFLOAT, G_MAXFLOAT, DEFAULT_BIAS, flags | GST_PARAM_CONTROLLABLE));
  g_object_class_install_property(
      gobject_class, PROP_ABSOLUTE,
      g_param_spec_boolean("absolute", "Absolute",
                           "Store |scale * conv + bias| (edge detectors)",
                           DEFAULT_ABSOLUTE, flags));
  g_object_class_install_property(
      gobject_class, PROP_COMPONENTS,
      g_param_spec_string(
          "components", "Components",
          "What is filtered (the rest and alpha pass unchanged): \"all\", "
          "letters of rgb (\"r\", \"gb\", \"red\") for RGB video, of yuv "
          "or \"luma\"/\"chroma\" for YUV video, or a mask 1..7 (1 = R/Y, "
          "2 = G/U, 4 = B/V); words apart by commas or spaces; gray video "
          "has one component (y). Negotiation offers the formats they fit; "
          "set while playing to ones the format lacks, upstream is asked "
          "for another, or where none can come (behind a tee: that its "
          "other branches take too) they are refused with a warning (behind "
          "a tee also ones the format has, where another branch asked for "
          "a format that lacks them)",
          DEFAULT_COMPONENTS, flags));
  g_object_class_install_property(
      gobject_class, PROP_BACKEND,
      g_param_spec_enum("backend", "Backend",
                        "Where the convolution runs", CF_GST_TYPE_BACKEND,
                        DEFAULT_BACKEND, flags));
  g_object_class_install_property(
      gobject_class, PROP_DEVICE_ID,
      g_param_spec_int("device-id", "Device ID",
                       "CUDA device for the cuda and auto backends",
                       0, CF_GST_MAX_DEVICE_ID, DEFAULT_DEVICE_ID,
                       flags));
  g_object_class_install_property(
      gobject_class, PROP_PIPELINE_DEPTH,
      g_param_spec_uint("pipeline-depth", "Pipeline depth",
                        "Frames in flight, the latency added in frames. 0: "
                        "none (CUDA overlaps copies and compute within a "
                        "frame, by bands). D >= 1: frame t leaves when "
                        "frame t + D arrives, with its own timestamps; "
                        "CUDA overlaps the copies and compute of "
                        "different frames, the CPU filters on a worker "
                        "thread while the element goes on. The latency "
                        "query adds D frame durations (at framerate 0/1: D "
                        "times the longest buffer duration seen, or time "
                        "between frames without one); EOS, "
                        "DISCONT, segments and caps changes push the "
                        "frames in flight out, a flush drops them",
                        0, CF_VIDEO_MAX_DEPTH, DEFAULT_PIPELINE_DEPTH, flags));
  g_object_class_install_property(
      gobject_class, PROP_THREADS,
      g_param_spec_uint("threads", "Threads",
                        "CPU worker threads (0: one per core)", 0,
                        CF_GST_MAX_THREADS,
                        DEFAULT_THREADS, flags));
  g_object_class_install_property(
      gobject_class, PROP_BACKEND_IN_USE,
      g_param_spec_string("backend-in-use", "Backend in use",
                          "The engine now running (backend, algorithm, "
                          "threads, \"; latency D frames\"); NULL before "
                          "negotiation and once stopped",
                          NULL, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata(
      element_class, "CUDA video convolution", "Filter/Effect/Video",
      "2D and temporal convolution of raw video (scipy.ndimage.convolve "
      "semantics) on CUDA or the CPU",
      "cudafilter developers");
  GstCaps *caps = template_caps();
  gst_element_class_add_pad_template(
      element_class,
      gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(
      element_class,
      gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
#ifdef CF_HAVE_GSTCUDA
  element_class->set_context = GST_DEBUG_FUNCPTR(gst_cuda_convolve_set_context);
#endif

  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR(gst_cuda_convolve_transform_caps);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_cuda_convolve_sink_event);
  trans_class->query = GST_DEBUG_FUNCPTR(gst_cuda_convolve_query);
  trans_class->propose_allocation =
      GST_DEBUG_FUNCPTR(gst_cuda_convolve_propose_allocation);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR(gst_cuda_convolve_decide_allocation);
  trans_class->src_event = GST_DEBUG_FUNCPTR(gst_cuda_convolve_src_event);
  trans_class->submit_input_buffer =
      GST_DEBUG_FUNCPTR(gst_cuda_convolve_submit_input_buffer);
  trans_class->start = GST_DEBUG_FUNCPTR(gst_cuda_convolve_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_cuda_convolve_stop);
  filter_class->set_info = GST_DEBUG_FUNCPTR(gst_cuda_convolve_set_info);
  trans_class->generate_output =
      GST_DEBUG_FUNCPTR(gst_cuda_convolve_generate_output);
  trans_class->transform_meta =
      GST_DEBUG_FUNCPTR(gst_cuda_convolve_transform_meta);
  filter_class->transform_frame =
      GST_DEBUG_FUNCPTR(gst_cuda_convolve_transform_frame);

  gst_type_mark_as_plugin_api(cf_gst_preset_get_type(), 0);
  gst_type_mark_as_plugin_api(cf_gst_border_get_type(), 0);
}

gboolean cf_gst_register_cudaconvolve(GstPlugin *plugin)
{
  return gst_element_register(plugin, "cudaconvolve", GST_RANK_NONE,
                              GST_TYPE_CUDA_CONVOLVE);
}
