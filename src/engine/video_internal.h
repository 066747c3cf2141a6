/* Internal: pixel format descriptions, and the CPU video backend's entry. */
#ifndef CF_VIDEO_INTERNAL_H
#define CF_VIDEO_INTERNAL_H

#include "cudafilter/video.h"
#include "engine_internal.h"

typedef enum cf_sample { CF_SAMPLE_U8, CF_SAMPLE_U16, CF_SAMPLE_F32 } cf_sample;

/* Where one component's samples live: plane, byte offset within a pixel,
 * bytes from one sample to the next along a row, and whether its grid is
 * halved (rounded up) in x (CF_SUB_X), in y (CF_SUB_Y) or both. */
typedef struct cf_chan_desc {
  unsigned plane, offset, step, sub;
} cf_chan_desc;

typedef struct cf_format_desc {
  const char *name;
  cf_sample sample;
  unsigned planes;
  unsigned plane_bpp[3];  /* bytes per pixel of each plane's grid */
  unsigned plane_sub[3];  /* CF_SUB_X | CF_SUB_Y: how the plane's grid is
                             halved (chroma subsampling) */
  unsigned ncomp;         /* colour components: 1 (gray) or 3 */
  cf_chan_desc comp[3];   /* R, G, B or Y, U, V */
  int has_extra;          /* an alpha or X byte that passes through */
  cf_chan_desc extra;
} cf_format_desc;

const cf_format_desc *cf_format_desc_get(cf_pixel_format f);
/* Whether formats a and b hold the same components on the same grids in
 * the same sample type, only laid out otherwise (I420 and NV12, or a == b):
 * an engine's filtered state serves either. */
int cf_format_same_grids(cf_pixel_format a, cf_pixel_format b);
#define CF_SUB_X 1u
#define CF_SUB_Y 2u
/* Width and height of a grid subsampled by `sub`: a halved side rounds
 * up (an odd width's last chroma sample covers one luma column). */
static inline unsigned cf_sub_w(unsigned n, unsigned sub)
{
  return sub & CF_SUB_X ? (n + 1) / 2 : n;
}
static inline unsigned cf_sub_h(unsigned n, unsigned sub)
{
  return sub & CF_SUB_Y ? (n + 1) / 2 : n;
}

/* The output stage: y = scale * conv + bias, then |y| if absolute. */
typedef struct cf_video_out {
  float scale, bias;
  int absolute;
} cf_video_out;

static inline int cf_video_out_same(const cf_video_out *a,
                                    const cf_video_out *b)
{
  return a->scale == b->scale && a->bias == b->bias &&
         a->absolute == b->absolute;
}

/* What a video backend provides to the engine front. */
typedef struct cf_video_ops {
  cf_status (*process)(void *impl, const cf_frame *in, const cf_frame *out);
  void (*reset)(void *impl);
  cf_status (*set_kernel)(void *impl, const cf_kernel2d *k);
  void (*describe)(const void *impl, char *buf, size_t n);
  void (*destroy)(void *impl);
  /* Frames between a frame's process call and the call that writes its
   * result (video.h: pipeline_depth, on either backend). */
  size_t (*latency)(const void *impl);
  /* Write the oldest pending result to out (*got = 1), or *got = 0. */
  cf_status (*flush)(void *impl, const cf_frame *out, int *got);
  /* The output stage of the frames processed from now on (those in
   * flight keep theirs). */
  void (*set_output)(void *impl, const cf_video_out *o);
  /* The frames the history lacks (cf_engine_set_history_frame): a tight
   * frame of the engine's size and format, copied; NULL for none. Called
   * before the first frame only. */
  cf_status (*set_base)(void *impl, const cf_frame *f);
  /* The frames' format from the next frame on, one that
   * cf_format_same_grids() pairs with the engine's: the history kept.
   * CF_E_STATE with results pending. NULL: the backend cannot (its
   * history holds frames in their layout: CUDA). */
  cf_status (*set_format)(void *impl, cf_pixel_format f);
} cf_video_ops;

/* The checks every backend makes of a frame pair: planes present, strides
 * large enough, input and output not overlapping, nor output planes one
 * another (src/engine/video.c); cf_video_check_output: an output frame
 * alone (flush_frame). */
cf_status cf_video_check_frame(const cf_video_config *cfg, const cf_frame *f,
                               const char *which);
cf_status cf_video_check_output(const cf_video_config *cfg,
                                const cf_frame *out);
cf_status cf_video_check_frames(const cf_video_config *cfg,
                                const cf_frame *in, const cf_frame *out);

/* Copy the samples of frame src to frame dst (any strides; row padding
 * is left alone). */
void cf_video_copy_frame(const cf_video_config *cfg, const cf_frame *src,
                         const cf_frame *dst);

/* The engine front's video calls that engine.c forwards (video.c). */
size_t cf_video_latency(const cf_engine *e);
void cf_video_reset(cf_engine *e);
/* Destroys the backend and the front's state. */
void cf_video_front_free(cf_engine *e);

/* Best rank-1 approximation u v^T (u: kh rows, v: kw columns) of a kh x kw
 * slice by power iterations in double; true when the residual is below
 * float noise (src/engine/rank1.c). */
int cf_rank1(const float *k, unsigned kh, unsigned kw, double *u, double *v);

/* The CPU video backend (src/cpu/video.c); with cfg->pipeline_depth > 0
 * the pipelined wrapper around it (src/cpu/video_pipe.c). fft_mode:
 * CF_FFT_QUICK when frames are already flowing (a switch from the
 * device); its kernel changes are always quick. */
cf_status cf_cpu_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                           cf_fft_mode fft_mode, void **impl,
                           const cf_video_ops **ops);
cf_status cf_cpu_video_pipe_new(const cf_video_config *cfg,
                                const cf_kernel2d *k, cf_fft_mode fft_mode,
                                void **impl, const cf_video_ops **ops);
/* The bands (threads' shares of rows) a CPU engine built for cfg and
 * kernel k cuts frames into; its kernel changes keep them. */
unsigned cf_cpu_video_bands(const cf_video_config *cfg, const cf_kernel2d *k);
/* Measure the FFT plan a CPU engine for cfg cut into nbands bands (0: as
 * many as one built with k would) would use for kernel k, if it would use
 * one; CF_E_INVALID where its set_kernel would refuse k. Reads only its
 * arguments: any thread (cf_engine_prepare_kernel2d). */
cf_status cf_cpu_video_prepare(const cf_video_config *cfg, unsigned nbands,
                               const cf_kernel2d *k);
/* Whether the memory a CPU engine for cfg cut into nbands bands (0: as
 * cf_cpu_video_prepare) needs for a change to kernel k can be had now:
 * the plan, scratch, border maps and (for T > 1) a history of T frames
 * are made, and given back; CF_E_NOMEM where they cannot, CF_E_INVALID
 * where set_kernel would refuse k. Plans an FFT size not planned yet as
 * CF_FFT_QUICK does. Reads only its arguments: any thread
 * (cf_engine_prepare_swap2d). */
cf_status cf_cpu_video_try(const cf_video_config *cfg, unsigned nbands,
                           const cf_kernel2d *k);
/* cf_cpu_video_try keeping what it made, for a later change to k in the
 * engine's thread (cf_engine_set_prepared2d) that then makes, plans and
 * frees nothing: cf_cpu_video_set_built puts it in force on CPU engine
 * impl (ops: its ops; a pipelined one waits for its worker), the state it
 * replaces going into b; CF_E_STATE where b was made for another shape
 * of engine or was put in force already (make a plain swap then).
 * cf_cpu_video_free_built gives b back, in any thread. */
typedef struct cf_cpu_built cf_cpu_built;
cf_status cf_cpu_video_build(const cf_video_config *cfg, unsigned nbands,
                             const cf_kernel2d *k, cf_cpu_built **out);
cf_status cf_cpu_video_set_built(void *impl, const cf_video_ops *ops,
                                 cf_cpu_built *b);
void cf_cpu_video_free_built(cf_cpu_built *b);
/* The history rings CPU engine impl (ops: its ops or a pipelined one's;
 * any other: none) gave up at a frame since: a kernel of fewer temporal
 * taps than its rings hold keeps them until its first frame, which puts
 * rings of its length in force and parks the longer ones, given back
 * here (*out, to free with cf_cpu_video_free_built in any thread; NULL
 * where there are none) or by the next kernel change. In the engine's
 * thread; allocates one small block where there are some. */
cf_status cf_cpu_video_take_spent(void *impl, const cf_video_ops *ops,
                                  cf_cpu_built **out);
/* video_pipe.c's part of cf_cpu_video_set_built: CF_E_STATE where ops are
 * not a pipelined CPU engine's. */
cf_status cf_cpu_video_pipe_set_built(void *impl, const cf_video_ops *ops,
                                      cf_cpu_built *b);
/* video_pipe.c's part of cf_cpu_video_take_spent: none where ops are
 * not a pipelined CPU engine's. */
cf_status cf_cpu_video_pipe_take_spent(void *impl, const cf_video_ops *ops,
                                       cf_cpu_built **out);

/* The CPU video backend wrapped so that its at.call-th process or flush
 * call fails with CF_E_DEVICE, and its at.swap-th set_kernel with
 * CF_E_NOMEM (test only, src/engine/fake.c). */
cf_status cf_fake_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                            cf_fake_fault at, void **impl,
                            const cf_video_ops **ops);

/* The CUDA video backend (src/cuda/; CF_E_UNAVAILABLE with a recorded
 * reason where it cannot serve this stream). */
cf_status cf_cuda_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                            void **impl, const cf_video_ops **ops);
/* Kernels built ahead (video.h, cf_engine_prepare_swap2d): whether ops
 * are the CUDA backend's; kernel k's device state built for engine impl
 * in the calling thread (while the engine runs in another; not while it
 * swaps kernels); put in force at the engine's next frame, the state it
 * retires going into `prepared` (CF_E_STATE: built for another engine or
 * ring, or the engine stopped: make a plain swap); given back (in a
 * thread that may wait for the device). */
int cf_cuda_video_is(const cf_video_ops *ops);
cf_status cf_cuda_video_prepare(const void *impl, const cf_kernel2d *k,
                                void **out);
cf_status cf_cuda_video_set_prepared(void *impl, void *prepared);
void cf_cuda_video_free_prepared(void *prepared);

#endif
