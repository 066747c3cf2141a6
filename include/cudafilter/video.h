/* cudafilter — streaming 2D and temporal convolution of video frames.
 *
 * A video engine filters frames of one size and pixel format. For every
 * selected component (a colour channel or a YUV plane, each at its own
 * resolution) and every frame t:
 *
 *     y_t = scale * sum_tau k_tau (*) x_(t-tau) + bias   (then |.| if
 *                                                         absolute)
 *
 * where (*) is scipy.ndimage.convolve(x, k_tau, mode=border, cval=cval,
 * origin=0) (see kernel2d.h for the index formula). Frames before the first
 * (and before a reset) contribute nothing, unless
 * cf_engine_set_history_frame() gave a frame to stand for them. Samples are converted to float
 * in their own units (GRAY8 0..255, GRAY16 0..65535, float as is; cval is
 * in the same units); integer formats round to nearest (ties to even) and
 * saturate on store, NaN storing as 0. Components not selected, and alpha,
 * are copied unchanged. Border modes, as scipy.ndimage names them, for a
 * row a b c d:
 *     constant  k k | a b c d | k k   (k = cval)
 *     nearest   a a | a b c d | d d
 *     reflect   b a | a b c d | d c   (half-sample symmetric)
 *     mirror    c b | a b c d | c b   (whole-sample symmetric)
 *     wrap      c d | a b c d | a b
 * repeated as often as needed when the kernel is larger than the frame.
 *
 * NaN or Inf in a float input reaches the outputs whose window holds it on
 * the direct and separable paths, and its whole FFT tile on the FFT path.
 *
 * Denormals (x86): the CPU backend filters with denormal floats flushed to
 * zero, as the audio engine does (engine.h): cf_engine_process_frame() and
 * the kernel changes set the SSE control register's flush-to-zero and
 * denormals-are-zero bits for the call, in the calling thread and in the
 * threads working for it (with pipeline_depth > 0 the worker filters each
 * frame with the control bits, rounding included, of the call that gave
 * it), and give the caller back its control bits as they were. GRAY32F
 * samples, taps, products and sums below FLT_MIN (1.2e-38) count as 0, so
 * an output that only such samples reach is exactly 0; GRAY32F frames
 * holding denormals then cost no more than others (without: the FFT path
 * 1.2x slower on this project's AMD EPYC VM, direct and separable alike
 * there; many Intel CPUs are reported to take far longer on them).
 * Elsewhere than x86 the CPU's mode is left as it is; on CUDA the device's
 * own rules hold.
 *
 * Frames are processed one per call; the engine keeps the last T - 1 input
 * frames (their filtered components) as state. cf_engine_reset() forgets them.
 * cf_engine_set_kernel2d() takes effect at the next frame. The engine
 * allocates nothing per frame, on any path (the CPU's FFT plans are made
 * without FFTW's buffered solvers, which allocate scratch inside each
 * transform and abort the process where they cannot have it).
 *
 * Latency. With pipeline_depth 0 (the default, "live") no latency is
 * added: cf_engine_process_frame() returns with the frame's result in
 * `out`, and cf_engine_latency() is 0 (on CUDA the frame is cut into bands
 * whose copies and compute overlap). With pipeline_depth D >= 1
 * ("throughput": D frames in flight) cf_engine_latency() is D, on either
 * backend: the call for frame t enqueues it (its input is copied; the
 * caller may reuse it at once) and writes into `out` the result of frame
 * t - D, so the first D calls (and the first D after a flush emptied the
 * pipeline) write nothing to `out`; cf_engine_flush_frame() hands out the
 * frames still pending, oldest first, e.g. at end of stream. On CUDA the
 * copies and compute of different frames overlap; on the CPU a worker
 * thread filters frame t while the caller goes on (upstream and
 * downstream work overlap the filtering), at the cost of two frame copies.
 * A reset keeps the pending results (their frames were filtered with the
 * history they had); a kernel set takes effect from the next frame
 * enqueued. With backend auto, a device failure mid-stream (in a frame,
 * a flush or a kernel set) moves the engine to the CPU (cf_engine_backend()
 * and cf_engine_fallback_reason() say so) without losing or repeating a
 * frame and with the same latency: the engine keeps host copies of the
 * last T - 1 + D input frames for that, each with the kernel it was
 * filtered with. */
#ifndef CUDAFILTER_VIDEO_H
#define CUDAFILTER_VIDEO_H

#include <stddef.h>

#include "engine.h"
#include "kernel2d.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_pixel_format {
  CF_PIX_GRAY8,
  CF_PIX_GRAY16_LE,
  CF_PIX_GRAY32F, /* native float32, host byte order */
  CF_PIX_RGBA,
  CF_PIX_BGRA,
  CF_PIX_RGBX,
  CF_PIX_BGRX,
  CF_PIX_RGB,
  CF_PIX_BGR,
  CF_PIX_I420,    /* planes Y, U, V; chroma (w + 1) / 2 x (h + 1) / 2 */
  CF_PIX_NV12,    /* planes Y, UV interleaved; chroma as I420 */
  CF_PIX_Y444,    /* planes Y, U, V, all w x h (4:4:4) */
  CF_PIX_Y42B     /* planes Y, U, V; chroma (w + 1) / 2 x h (4:2:2) */
} cf_pixel_format;

/* Component selection: a mask of colours (RGB family), planes (YUV) or the
 * one gray component. Alpha and X bytes are never filtered. */
#define CF_COMP_R 1u
#define CF_COMP_G 2u
#define CF_COMP_B 4u
#define CF_COMP_Y 1u
#define CF_COMP_U 2u
#define CF_COMP_V 4u
#define CF_COMP_LUMA CF_COMP_Y
#define CF_COMP_ALL 7u

typedef enum cf_border {
  CF_BORDER_CONSTANT,
  CF_BORDER_NEAREST,
  CF_BORDER_REFLECT,
  CF_BORDER_MIRROR,
  CF_BORDER_WRAP
} cf_border;

/* How each 2D slice is computed. AUTO: separable where the kernel is
 * rank 1 (within float tolerance), else on the CPU direct or FFT by
 * measured cost, on CUDA direct up to 2048 taps a slice and FFT beyond
 * (whole components through cuFFT). */
typedef enum cf_algorithm2d {
  CF_ALGO2D_AUTO,
  CF_ALGO2D_DIRECT,
  CF_ALGO2D_SEPARABLE, /* refused for a kernel that is not rank 1 */
  CF_ALGO2D_FFT        /* CPU: tiles of up to 8192 a side, for any
                          kernel up to CF_KERNEL2D_MAX_SIDE */
} cf_algorithm2d;

/* Largest frame side accepted. */
#define CF_VIDEO_MAX_SIDE 32768u
/* Largest pipeline_depth accepted. */
#define CF_VIDEO_MAX_DEPTH 7u

typedef struct cf_video_config {
  unsigned width, height;  /* luma / full-resolution size, >= 1 */
  cf_pixel_format format;
  unsigned components;     /* CF_COMP_* mask; default CF_COMP_ALL */
  cf_border border;        /* default CF_BORDER_REFLECT (scipy's default) */
  float cval;              /* value outside the frame for CONSTANT */
  float scale;             /* default 1 */
  float bias;              /* default 0 */
  int absolute;            /* store |scale * conv + bias|; default 0 */
  cf_backend backend;      /* default CF_BACKEND_AUTO */
  int device_id;           /* CUDA device, default 0 */
  cf_algorithm2d algorithm;/* default CF_ALGO2D_AUTO */
  unsigned threads;        /* 0 = one per core the process may use (its
                              CPU affinity, lowered to its cgroup's CPU
                              quota; the default); any count is
                              taken, the CPU runs at most one band (a
                              thread) per 16 rows, one for small work:
                              cf_engine_describe() says how many */
  unsigned pipeline_depth; /* frames in flight, 0..CF_VIDEO_MAX_DEPTH
                              (default 0): the latency in frames, see
                              above */
} cf_video_config;

void cf_video_config_init(cf_video_config *cfg);

/* One frame: plane pointers and the bytes between the starts of rows.
 * Packed formats use plane 0; I420, Y444 and Y42B planes Y, U, V; NV12
 * planes Y, UV.
 * A stride may exceed the row's bytes (padded rows), never fall below them
 * (CF_E_INVALID naming the plane): also for a plane of one row (a frame of
 * height 1, or 2 for I420/NV12 chroma), whose stride no later row uses,
 * as FFmpeg (av_image_copy_plane asserts it) and GStreamer (GstVideoInfo)
 * keep it; above them any stride is taken there, it being unused. */
typedef struct cf_frame {
  void *data[3];
  size_t stride[3];
} cf_frame;

/* Describe a tightly packed frame starting at `base` (rows without
 * padding, planes one after another as in a raw .yuv file; `out` may be
 * NULL; `base` may be NULL: out's strides alone, its plane pointers
 * NULL, no offset added to a null pointer). Returns the frame's size in bytes, or 0 (with a message for
 * cf_last_error(), *out untouched) for an unknown format, a zero side, a
 * side over CF_VIDEO_MAX_SIDE or a size that size_t cannot hold. */
size_t cf_frame_layout(cf_pixel_format fmt, unsigned width, unsigned height,
                       void *base, cf_frame *out);

/* Build a video engine for frames described by cfg, with kernel k (copied).
 * CF_E_INVALID names the bad field; CF_E_UNAVAILABLE when the backend
 * cannot run here. */
cf_status cf_engine_new_video(const cf_video_config *cfg,
                              const cf_kernel2d *k, cf_engine **out);

/* Filter one frame. `in` and `out` are frames of the configured size and
 * format that share no byte: no in-place filtering (CF_E_INVALID naming
 * the planes that overlap, nothing written). Only the rows' bytes count,
 * not the stride padding between them: two ROIs of one image side by
 * side (the left half filtered into the right half, one stride) are
 * taken. Nor may the planes of `out` share a byte with one another
 * (those of `in` may). Host memory always; with backend
 * CF_BACKEND_CUDA the planes may also be device memory of the engine's
 * device (cudaMalloc, a GstCudaMemory mapped with GST_MAP_CUDA, any
 * context), copied device to device and never through the host; the
 * result is there when the call returns (as with host memory). Backend
 * auto refuses device frames (CF_E_INVALID): it keeps host copies to fall
 * back to the CPU. */
cf_status cf_engine_process_frame(cf_engine *e, const cf_frame *in,
                                  const cf_frame *out);

/* Write the oldest result still pending (pipeline_depth > 0) to `out` and
 * set *got = 1, or set *got = 0 when none is pending (always with
 * pipeline_depth 0). `out` is checked as process_frame's (CF_E_INVALID,
 * the result kept for the next call). */
cf_status cf_engine_flush_frame(cf_engine *e, const cf_frame *out, int *got);

/* Replace the kernel from the next frame on. The temporal state is kept:
 * a kernel with more temporal taps than before sees only the frames the
 * engine kept (older ones contribute nothing). May allocate; never runs
 * FFTW's measuring planner: an FFT tile size not planned yet is estimated
 * (15-30% slower per frame at 1080p) unless cf_engine_prepare_kernel2d()
 * measured it beforehand. On CUDA the new kernel's device state is built
 * before the old one goes: CF_E_NOMEM (backend cuda) leaves the kernel in
 * force running; backend auto moves to the CPU instead. */
cf_status cf_engine_set_kernel2d(cf_engine *e, const cf_kernel2d *k);

/* The frames the history lacks are f (a frame of the engine's size and
 * format, copied; its strides may be padded), not zeros: those before the
 * first frame, before the first after each reset, and those further back
 * than the frames kept when a kernel with more temporal taps is set. A
 * temporal kernel then reads, say, the format's black there, where zeros
 * are black only in RGB and gray formats (in YUV: Y 0, U = V 0, a
 * saturated green; black is Y 16 (0 in full range), U = V 128). NULL goes
 * back to zeros. Only before the first frame (CF_E_STATE after);
 * CF_E_INVALID for a frame that does not fit and for a GRAY32F sample
 * that is not finite. Costs nothing per frame on the CPU; on CUDA a
 * device copy of f and, at each frame after a reset, a device-side copy
 * into each slot the history lacks. Where the device cannot hold that
 * copy (CF_E_NOMEM, a device error), backend auto moves to the CPU (with
 * f; cf_engine_fallback_reason says why), backend cuda returns the error
 * with the history as it was. */
cf_status cf_engine_set_history_frame(cf_engine *e, const cf_frame *f);
/* cf_engine_set_history_frame with a frame of the format's black: in YUV
 * formats Y 16 (0 with full_range) and U = V 128, in RGB and gray formats
 * zeros. Unlike no history frame, black frames are filtered as frames:
 * with border CONSTANT, cval reaches the output through their borders. */
cf_status cf_engine_set_history_black(cf_engine *e, int full_range);

/* Change the output stage (scale, bias, absolute: the formula above) from
 * the next frame on, the temporal state kept; frames in flight
 * (pipeline_depth) keep the stage they were given. Allocates nothing and
 * waits for nothing: a value animated frame by frame (a GStreamer control
 * binding) costs no engine rebuild. CF_E_INVALID for a scale or bias that
 * is not finite. */
cf_status cf_engine_set_output2d(cf_engine *e, float scale, float bias,
                                 int absolute);

/* Change the frames' pixel format from the next frame on, the temporal
 * history kept (the frames before still count in the temporal sum), where
 * the new format holds the same components on the same grids laid out
 * otherwise: I420 <-> NV12 (both Y, U, V at 4:2:0; a decoder or camera
 * changing its output format mid-stream). The format it has: nothing.
 * The history frame, kernel, output stage and kernel swaps built ahead
 * stay; frames and cf_frame_layout follow the new format from then on.
 * CF_E_INVALID for another pair (naming both; build a new engine);
 * CF_E_STATE while results are pending (pipeline_depth > 0: flush them
 * first with cf_engine_flush_frame); CF_E_UNAVAILABLE on CUDA (and backend
 * auto running there), whose device history holds the frames' bytes in
 * their layout: build a new engine there (its history starts anew). */
cf_status cf_engine_set_pixel_format(cf_engine *e, cf_pixel_format format);

/* Get ready for a later cf_engine_set_kernel2d(e, k): make, in the calling
 * thread, the FFT plan the CPU would use for k (measured, as at creation:
 * up to a second the first time on a machine, then from FFTW's wisdom on
 * disk); nothing when k runs direct or separable. It may run in another
 * thread while the engine runs (it reads only what the engine was built
 * with); the engine must outlive it. On an engine that started on CUDA
 * with backend auto it prepares what a switch to the CPU would use; with
 * backend cuda there is nothing to prepare. CF_E_INVALID where the CPU's
 * set_kernel2d would refuse k (a kernel the configured algorithm cannot
 * run). */
cf_status cf_engine_prepare_kernel2d(const cf_engine *e, const cf_kernel2d *k);

/* A kernel swap built ahead, for live video (as cf_engine_prepare_swap
 * for audio). cf_engine_set_kernel2d does its work in the calling thread,
 * which is the streaming one: on the CUDA backend a kernel of another
 * shape allocates device memory, makes and runs cuFFT plans and frees the
 * old kernel's buffers (cudaFree waits for the whole device, other
 * engines' work included), after waiting for the frames in flight. Here:
 *   - cf_engine_prepare_swap2d(e, k, &p), in any thread, also while
 *     another thread calls process_frame (not while one swaps kernels):
 *     what cf_engine_prepare_kernel2d makes, and on CUDA the new kernel's
 *     device buffers, plans (each run once) and spectra, built on a
 *     stream of their own; on the CPU the new kernel's plan, spectra,
 *     scratch, border maps and history of T frames (made even where the
 *     engine keeps one already), CF_E_NOMEM where they cannot be had;
 *   - cf_engine_set_prepared2d(e, p), later, in the engine's thread:
 *     exactly cf_engine_set_kernel2d(e, k) at that moment (the same
 *     frames out); it allocates, frees, plans and waits for nothing (on
 *     CUDA frames in flight keep the kernel they were enqueued with; a
 *     pipelined CPU engine waits for its worker, as set_kernel2d does),
 *     and the kernel state it retires goes into p (with backend auto,
 *     also the kernels the CPU fallback's record no longer needs: p's
 *     copy of k is kept there instead of a new one);
 *   - cf_swap_prep2d_free(p) then, in any thread but a real-time one
 *     (made or not; it gives device memory back, after the frames that
 *     read it), also after the engine is gone. set_prepared2d on another
 *     engine than p's (even one made where p's engine was, after it was
 *     freed) makes the plain swap to p's kernel.
 * A kernel with more temporal taps than any before brings the longer
 * history of frames it needs, made here too (on the device, and with
 * backend auto the CPU fallback's host copies): set_prepared2d moves the
 * frames kept into it on the device. Where the prepared state cannot serve
 * (an engine that moved to the CPU since, another swap in between that
 * lengthened the history), set_prepared2d makes the plain swap. A p is
 * made once. */
typedef struct cf_swap_prep2d cf_swap_prep2d;
cf_status cf_engine_prepare_swap2d(const cf_engine *e, const cf_kernel2d *k,
                                   cf_swap_prep2d **out);
cf_status cf_engine_set_prepared2d(cf_engine *e, cf_swap_prep2d *p);
void cf_swap_prep2d_free(cf_swap_prep2d *p);

/* A kernel with fewer temporal taps than the history holds (by
 * set_kernel2d or set_prepared2d) keeps the longer history until the
 * engine's next frame (a longer kernel set before it still finds every
 * frame); on the CPU that frame puts a history of the kernel's length in
 * force (made with the swap, the frames it needs copied there) and sets
 * the longer one aside, freeing nothing. cf_engine_take_retired2d(e,
 * &p), in the engine's thread, hands what was set aside over in *p, to
 * give back with cf_swap_prep2d_free in any thread (set_prepared2d
 * refuses it); *p is NULL where there is none (always on CUDA, whose
 * history stays). It allocates one small block where there is some; the
 * next kernel change gives it back too (set_kernel2d freeing it,
 * set_prepared2d putting it into its p). */
cf_status cf_engine_take_retired2d(cf_engine *e, cf_swap_prep2d **out);

const char *cf_pixel_format_name(cf_pixel_format f);
/* GStreamer's names: "GRAY8", "GRAY16_LE", "GRAY32F", "RGBA", "BGRA",
 * "RGBx", "BGRx", "RGB", "BGR", "I420", "NV12", "Y444", "Y42B"
 * (case-insensitive). */
cf_status cf_pixel_format_from_string(const char *s, cf_pixel_format *out);
/* Which components of format fmt to filter, as cf_video_config's
 * `components`: a list of words apart by commas or spaces, their masks
 * OR'ed. A word (case-insensitive) is a mask 1..7 (decimal or 0x hex;
 * 1 = R/Y, 2 = G/U, 4 = B/V), "all", a name (r, g, b, red, green, blue for
 * RGB formats; y, u, v, luma, chroma for the YUV ones) or a run of letters
 * of one family ("gb", "rgb", "uv"). Gray formats have one component,
 * which y, luma and all name; it must be chosen. CF_E_INVALID, naming the
 * word that does not fit fmt ("ry" mixes families, "r" on I420, ...). */
cf_status cf_components_from_string(const char *s, cf_pixel_format fmt,
                                    unsigned *mask);
const char *cf_border_name(cf_border b);
/* "constant", "nearest", "reflect", "mirror", "wrap". */
cf_status cf_border_from_string(const char *s, cf_border *out);
const char *cf_algorithm2d_name(cf_algorithm2d a);
/* "auto", "direct", "separable", "fft". */
cf_status cf_algorithm2d_from_string(const char *s, cf_algorithm2d *out);

#ifdef __cplusplus
}
#endif
#endif
