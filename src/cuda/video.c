/* The CUDA video backend: the same contract as src/cpu/video.c.
 *
 * A frame lives on the device in the host's layout made tight (planes one
 * after another, rows without padding: cf_frame_layout). Per frame: upload,
 * a device copy of the input into the output where bytes pass through
 * (alpha, unselected components), the convolution of each selected
 * component (kernels/conv2d.cu: tiled direct, or row + column passes for
 * rank-1 kernels) writing only its samples, download.
 *
 * Temporal kernels (T > 1) read a ring of the last T frames on the device
 * (raw samples): the frame being filtered is copied in first, slice tau
 * reads the slot tau frames back. The order between frames is an event
 * (ev_frame: the previous frame's compute), never a host wait.
 *
 * Two ways to overlap (cf_video_config.pipeline_depth):
 *  - 0, live: no added latency. The frame is cut into B horizontal bands
 *    and each stage has its stream: band j's upload (+ ring and
 *    pass-through copies) runs on the upload stream and records ev_up[j];
 *    band b's compute waits on the ev_up of the last band holding a row
 *    its window (border included) reads, runs on the compute stream and
 *    records ev_comp[b]; its download waits on that, on the download
 *    stream. So band b's download, a later band's compute and a later
 *    one's upload run together. process_frame returns with the frame
 *    done.
 *  - D >= 1, pipelined: D + 1 slots (pinned staging, device frames, a
 *    stream, events). process_frame enqueues frame t on slot t % (D + 1)
 *    and writes the result of frame t - D (nothing for the first D calls);
 *    cf_engine_flush_frame hands out the rest. Latency D frames.
 * Caller memory that is pinned (cudaPointerGetAttributes: host-registered,
 * e.g. cf_host_alloc) or on the device (cudaMalloc, a GstCudaMemory: any
 * context of the device, the copies are cudaMemcpyDefault) is copied from
 * and to directly (the pipelined mode waits for that upload before
 * returning, so the caller may reuse the frame); other memory goes through
 * the slot's pinned staging. Device frames thus never pass the host.
 * Everything is allocated at creation or set_kernel, nothing per frame.
 * After a device error the engine refuses further frames (CF_E_DEVICE);
 * the engine front switches backend=auto streams to the CPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/kernel_internal.h"
#include "../engine/video_internal.h"
#include "cf_kernels.h"
#include "cuda_internal.h"
#include "video_bench.h"

#define MAX_SLOTS 8
#define LIVE_STREAMS 3
#define MAX_BANDS 8
#define BAND_ROWS 128      /* live mode: at least this many rows a band */
#define CONST_TAPS_MAX 8192 /* direct taps try conv2d.cu's constant pool */
/* auto: a slice of more taps than this (and not rank 1) goes through the
 * FFT. Measured on an H200 (bench/results/gpu-nvidia-h200-2026-11-29.md,
 * GRAY32F 1080p, kernel time): direct 0.055 ms against FFT 0.087 at 15x15
 * (225 taps), 0.147 against 0.085 at 31x31 (961), 0.321 against 0.091 at
 * 47x47; the lines cross near 480 taps. Was 2048, an estimate: kernels of
 * 961-2048 taps ran direct up to 3.5x slower. */
#define FFT_AUTO_TAPS 512
#define FFT_GEOS 2 /* component sizes: luma and chroma at most */

enum { ALGO_DIRECT, ALGO_SEPARABLE, ALGO_FFT };

/* FFT path: one component size w x h with transforms of n x m (>= h + kh -
 * 1, w + kw - 1; factors 2, 3, 5, 7), the kernel's spectra (T slices of n
 * x (m / 2 + 1) complex, normalised by 1 / nm), plans per slot that
 * computes (a plan's work area serves one stream at a time). */
typedef struct fftgeo {
  unsigned w, h, n, m;
  float *d_kspec;
  cufftHandle r2c[MAX_SLOTS], c2r[MAX_SLOTS];
  int planned[MAX_SLOTS];
} fftgeo;

typedef struct slot {
  uint8_t *h_in, *h_out; /* pinned staging, frame_bytes each */
  uint8_t *d_in, *d_out;
  cudaStream_t st;
  cudaEvent_t ev_up, ev_done;
  int staged; /* pipelined: its result also copied to h_out */
} slot;

typedef struct comp {
  unsigned plane, w, h;
  size_t offset, pitch; /* within a tight frame */
  unsigned step;
} comp;

/* Everything a kernel puts on the device, and what follows from its
 * shape: built whole (kset_build) before it replaces the one in force, so
 * that a swap that fails (out of memory) leaves the engine running on the
 * old kernel. */
typedef struct kset {
  unsigned t, kh, kw, cy, cx;
  int algo;
  unsigned nbands; /* live mode's bands (the FFT path takes one) */
  uint32_t band_deps[MAX_BANDS];
  float *d_taps; /* direct, when not in the constant pool */
  int in_const;
  /* direct, where cf_k_conv2d_param_taps takes the kernel: the taps in
   * host memory, passed in each launch's parameters (d_taps and the
   * constant pool unused) */
  float *h_taps;
  size_t const_off, const_n;
  float *d_hrow, *d_vcol; /* separable factors, T x kw and T x kh */
  size_t scratch_rows;    /* rows of each slot's d_tmp / d_acc */
  float *d_tmp[MAX_SLOTS], *d_acc[MAX_SLOTS]; /* separable, per slot */
  fftgeo fg[FFT_GEOS];
  unsigned nfg, comp_geo[3];
  /* FFT, per slot that computes: plane, spectrum, sum */
  float *d_fre[MAX_SLOTS], *d_fspec[MAX_SLOTS], *d_facc[MAX_SLOTS];
  /* FFT path with T > 1: the spectrum of each frame in the temporal ring,
   * per component, at the frame's ring slot (sring_n = ring_n slots);
   * svalid[k * sring_n + slot]: that spectrum is the slot's frame's for
   * this kernel's geometry (else it is computed when needed) */
  float *d_sring[3];
  unsigned sring_n;
  unsigned char *svalid;
} kset;

typedef struct cvideo {
  cf_video_config cfg;
  const cf_format_desc *fmt;
  int dev;
  unsigned ncomp;
  comp c[3];
  size_t plane_off[3], pitch[3], rows[3], frame_bytes;
  int passthrough; /* bytes besides the selected samples to copy */
  unsigned depth, nslots;
  unsigned nbands_live; /* live mode's bands for a kernel that is not FFT */
  slot s[MAX_SLOTS];
  cudaEvent_t ev_up[MAX_BANDS], ev_comp[MAX_BANDS], ev_down[MAX_BANDS];
  cudaEvent_t ev_frame;
  int have_prev; /* ev_frame recorded */
  int generic;   /* CF_CONV2D_KERNEL=generic, read once at creation */
  int no_param;  /* CF_CONV2D_KERNEL=rb: not the taps-as-parameters one */
  kset k;        /* the kernel in force */
  /* temporal ring (T > 1) */
  uint8_t *d_ring;
  unsigned ring_n, head, seen;
  uint8_t *d_base; /* the frames the ring lacks (set_base), or NULL */
  /* pipelined queue */
  unsigned long long enq, deq;
  int broken;
  char desc[240];
} cvideo;

/* ---- geometry ---- */

/* First row of band b of plane p, the frame cut into nb bands. */
static unsigned band_row_n(const cvideo *v, unsigned nb, unsigned p, unsigned b)
{
  return (unsigned)((uint64_t)v->rows[p] * b / nb);
}

static unsigned band_of_n(const cvideo *v, unsigned nb, unsigned p, unsigned r)
{
  unsigned b = 0;
  while (b + 1 < nb && band_row_n(v, nb, p, b + 1) <= r)
    b++;
  return b;
}

/* The same for the bands of the kernel in force. */
static unsigned band_row(const cvideo *v, unsigned p, unsigned b)
{
  return band_row_n(v, v->k.nbands, p, b);
}

/* The CPU's border index map (src/cpu/video.c map_index). */
static long map_row(long i, long n, cf_border b)
{
  if (i >= 0 && i < n)
    return i;
  switch (b) {
  case CF_BORDER_CONSTANT: return -1;
  case CF_BORDER_NEAREST: return i < 0 ? 0 : n - 1;
  case CF_BORDER_REFLECT: {
    long r = i % (2 * n);
    if (r < 0)
      r += 2 * n;
    return r < n ? r : 2 * n - 1 - r;
  }
  case CF_BORDER_MIRROR: {
    if (n == 1)
      return 0;
    long r = i % (2 * n - 2);
    if (r < 0)
      r += 2 * n - 2;
    return r < n ? r : 2 * n - 2 - r;
  }
  case CF_BORDER_WRAP: {
    long r = i % n;
    return r < 0 ? r + n : r;
  }
  }
  return -1;
}

/* Bands whose rows band b's windows read, for kernel set ks (its bands). */
static void make_band_deps(const cvideo *v, kset *ks)
{
  for (unsigned b = 0; b < ks->nbands; b++) {
    uint32_t m = 1u << b;
    for (unsigned k = 0; k < v->ncomp; k++) {
      const comp *c = &v->c[k];
      long r0 = band_row_n(v, ks->nbands, c->plane, b),
           r1 = band_row_n(v, ks->nbands, c->plane, b + 1);
      if (r0 == r1)
        continue;
      long a = r0 - (long)(ks->kh - 1 - ks->cy), z = r1 - 1 + (long)ks->cy;
      if (z - a + 1 >= (long)c->h) {
        m = (1u << ks->nbands) - 1; /* reads (nearly) every row */
        break;
      }
      for (long vr = a; vr <= z; vr++) {
        long r = map_row(vr, c->h, v->cfg.border);
        if (r >= 0)
          m |= 1u << band_of_n(v, ks->nbands, c->plane, (unsigned)r);
      }
    }
    ks->band_deps[b] = m;
  }
}

/* ---- kernel ---- */

/* Give back what ks holds on the device (nothing of it may be in use). */
static void kset_free(kset *ks)
{
  if (ks->in_const)
    cf_k_conv2d_const_drop(ks->const_off, ks->const_n);
  free(ks->h_taps);
  cudaFree(ks->d_taps); /* nothing to tell at free time */
  cudaFree(ks->d_hrow);
  cudaFree(ks->d_vcol);
  for (unsigned i = 0; i < MAX_SLOTS; i++) {
    cudaFree(ks->d_tmp[i]);
    cudaFree(ks->d_acc[i]);
    cudaFree(ks->d_fre[i]);
    cudaFree(ks->d_fspec[i]);
    cudaFree(ks->d_facc[i]);
  }
  for (unsigned g = 0; g < ks->nfg; g++) {
    fftgeo *f = &ks->fg[g];
    for (unsigned i = 0; i < MAX_SLOTS; i++)
      if (f->planned[i]) {
        cufftDestroy(f->r2c[i]);
        cufftDestroy(f->c2r[i]);
      }
    cudaFree(f->d_kspec);
  }
  for (unsigned i = 0; i < 3; i++)
    cudaFree(ks->d_sring[i]);
  free(ks->svalid);
  memset(ks, 0, sizeof *ks);
}

/* FFT path, T > 1: a spectrum per component and ring slot (ring_n), none
 * valid. */
static cf_status alloc_spectra_ring(const cvideo *v, kset *ks, unsigned ring_n)
{
  ks->svalid = calloc((size_t)v->ncomp * ring_n, 1);
  if (!ks->svalid)
    return cf_fail(CF_E_NOMEM, "video: out of memory for the spectra ring");
  ks->sring_n = ring_n;
  for (unsigned k = 0; k < v->ncomp; k++) {
    const fftgeo *g = &ks->fg[ks->comp_geo[k]];
    size_t sp = (size_t)g->n * (g->m / 2 + 1) * 2;
    CF_CU(
        cf_cuda_malloc((void **)&ks->d_sring[k], ring_n * sp * sizeof(float)));
  }
  return CF_OK;
}

/* A new frame went into ring slot rs: its spectra are not computed. */
static void spectra_slot_written(cvideo *v, unsigned rs)
{
  if (v->k.svalid)
    for (unsigned k = 0; k < v->ncomp; k++)
      v->k.svalid[(size_t)k * v->k.sring_n + rs] = 0;
}

/* The spectra of k's slices for geometry f: each slice zero-padded to n x
 * m in h (host, n x m floats at least), transformed through plan r2c on
 * stream st, by way of `re` (device, n x m floats). */
static cf_status kernel_spectra(fftgeo *f, const cf_kernel2d *k, float *h,
                                float *re, cufftHandle r2c, cudaStream_t st)
{
  size_t n = (size_t)f->n * f->m, sp = (size_t)f->n * (f->m / 2 + 1) * 2;
  memset(h, 0, n * sizeof *h);
  if (!f->d_kspec) /* a kernel of the same shape reuses them */
    CF_CU(cf_cuda_malloc((void **)&f->d_kspec, k->t * sp * sizeof(float)));
  CF_FFT(cufftSetStream(r2c, st));
  for (unsigned tau = 0; tau < k->t; tau++) {
    const float *kt = k->taps + (size_t)tau * k->kh * k->kw;
    for (unsigned a = 0; a < k->kh; a++)
      memcpy(h + (size_t)a * f->m, kt + (size_t)a * k->kw,
             k->kw * sizeof(float));
    CF_CU(
        cudaMemcpyAsync(re, h, n * sizeof(float), cudaMemcpyHostToDevice, st));
    CF_FFT(cufftExecR2C(r2c, re, (cufftComplex *)(f->d_kspec + tau * sp)));
    CF_CU(cudaStreamSynchronize(st)); /* h is the next slice's */
  }
  return CF_OK;
}

/* The spectra of k for every geometry of ks, on stream st (through slot
 * 0's plan and plane, which nothing else uses meanwhile). */
static cf_status all_kernel_spectra(kset *ks, const cf_kernel2d *k,
                                    cudaStream_t st)
{
  size_t fre = 0;
  for (unsigned g = 0; g < ks->nfg; g++) {
    size_t re = (size_t)ks->fg[g].n * ks->fg[g].m;
    fre = re > fre ? re : fre;
  }
  float *h = malloc(fre * sizeof *h);
  if (!h)
    return cf_fail(CF_E_NOMEM, "video: out of memory for the FFT plan");
  cf_status s = CF_OK;
  for (unsigned g = 0; g < ks->nfg && s == CF_OK; g++)
    s = kernel_spectra(&ks->fg[g], k, h, ks->d_fre[0], ks->fg[g].r2c[0], st);
  free(h);
  return s;
}

/* FFT path: sizes, plans (each run once: cf_cufft_warm), each computing
 * slot's scratch, the spectra of kernel k; on stream st. */
static cf_status install_fft(const cvideo *v, kset *ks, const cf_kernel2d *k,
                             cudaStream_t st)
{
  size_t fre = 0, fsp = 0;
  for (unsigned i = 0; i < v->ncomp; i++) {
    const comp *c = &v->c[i];
    unsigned g = 0;
    while (g < ks->nfg && !(ks->fg[g].w == c->w && ks->fg[g].h == c->h))
      g++;
    if (g == ks->nfg) {
      fftgeo *f = &ks->fg[ks->nfg++];
      f->w = c->w, f->h = c->h;
      f->n = (unsigned)cf_fft_smooth(c->h + k->kh - 1); /* cuFFT's radices */
      f->m = (unsigned)cf_fft_smooth(c->w + k->kw - 1);
      size_t re = (size_t)f->n * f->m, sp = (size_t)f->n * (f->m / 2 + 1) * 2;
      fre = re > fre ? re : fre;
      fsp = sp > fsp ? sp : fsp;
    }
    ks->comp_geo[i] = g;
  }
  /* live mode computes on slot 0 (one band), pipelined on every slot */
  unsigned nplan = v->depth ? v->nslots : 1;
  for (unsigned i = 0; i < nplan; i++) {
    CF_CU(cf_cuda_malloc((void **)&ks->d_fre[i], fre * sizeof(float)));
    CF_CU(cf_cuda_malloc((void **)&ks->d_fspec[i], fsp * sizeof(float)));
    CF_CU(cf_cuda_malloc((void **)&ks->d_facc[i], fsp * sizeof(float)));
  }
  for (unsigned g = 0; g < ks->nfg; g++) {
    fftgeo *f = &ks->fg[g];
    int dims[2] = {(int)f->n, (int)f->m};
    for (unsigned i = 0; i < nplan; i++) {
      CF_FFT(cufftPlanMany(&f->r2c[i], 2, dims, NULL, 1, 0, NULL, 1, 0,
                           CUFFT_R2C, 1));
      cufftResult r = cufftPlanMany(&f->c2r[i], 2, dims, NULL, 1, 0, NULL, 1,
                                    0, CUFFT_C2R, 1);
      if (r != CUFFT_SUCCESS) {
        cufftDestroy(f->r2c[i]);
        return cf_cufft_status(r, "cufftPlanMany(C2R)", __FILE__, __LINE__);
      }
      f->planned[i] = 1;
      /* on the slot's own scratch, which holds this geometry's planes */
      cf_status w = cf_cufft_warm(
          f->r2c[i], f->c2r[i], ks->d_fre[i],
          (size_t)f->n * f->m * sizeof(float), (cufftComplex *)ks->d_fspec[i],
          (size_t)f->n * (f->m / 2 + 1) * sizeof(cufftComplex), st);
      if (w != CF_OK)
        return w;
    }
  }
  return all_kernel_spectra(ks, k, st);
}

/* n floats from h to a new device buffer *d, on stream st (h must stay
 * until st has run it). */
static cf_status upload_floats(float **d, const float *h, size_t n,
                               cudaStream_t st)
{
  CF_CU(cf_cuda_malloc((void **)d, n * sizeof(float)));
  CF_CU(cudaMemcpyAsync(*d, h, n * sizeof(float), cudaMemcpyHostToDevice, st));
  return CF_OK;
}

/* The path for kernel k: CF_OK with *algo, or why the request is refused. */
static cf_status choose_algo(const cvideo *v, const cf_kernel2d *k,
                             float **factors, int *algo)
{
  *factors = NULL;
  if (v->cfg.algorithm == CF_ALGO2D_FFT) {
    *algo = ALGO_FFT;
    return CF_OK;
  }
  double *u = malloc((k->kh + k->kw) * sizeof *u);
  float *f = malloc((size_t)k->t * (k->kh + k->kw) * sizeof *f);
  if (!u || !f) {
    free(u), free(f);
    return cf_fail(CF_E_NOMEM, "video: out of memory for the plan");
  }
  int separable = 1;
  for (unsigned t = 0; t < k->t && separable; t++) {
    separable = cf_rank1(k->taps + (size_t)t * k->kh * k->kw, k->kh, k->kw,
                         u, u + k->kh);
    /* f: T x kw row factors, then T x kh column factors */
    for (unsigned n = 0; n < k->kw; n++)
      f[(size_t)t * k->kw + n] = (float)u[k->kh + n];
    for (unsigned m = 0; m < k->kh; m++)
      f[(size_t)k->t * k->kw + (size_t)t * k->kh + m] = (float)u[m];
  }
  free(u);
  cf_status s = CF_OK;
  switch (v->cfg.algorithm) {
  case CF_ALGO2D_DIRECT:
    *algo = ALGO_DIRECT;
    break;
  case CF_ALGO2D_SEPARABLE:
    if (!separable)
      s = cf_fail(CF_E_INVALID, "video: algorithm separable needs a rank-1 "
                  "kernel (every temporal slice the outer product of a "
                  "column and a row); this %ux%u kernel is not",
                  k->kh, k->kw);
    *algo = ALGO_SEPARABLE;
    break;
  default: /* two passes pay once they save a third of the taps */
    *algo = separable && (size_t)k->kh * k->kw > 3 * (size_t)(k->kh + k->kw)
                ? ALGO_SEPARABLE
            : !separable && (size_t)k->kh * k->kw > FFT_AUTO_TAPS
                ? ALGO_FFT
                : ALGO_DIRECT;
  }
  if (s == CF_OK && *algo == ALGO_SEPARABLE)
    *factors = f;
  else
    free(f);
  return s;
}

/* Move the newest frames that fit of the ring into `ring` of t slots,
 * enqueued: on the first stream after the last frame's compute (which
 * wrote and read the old ring), and every stream's later work after the
 * copies. The caller puts `ring` in place. */
static cf_status move_ring(cvideo *v, uint8_t *ring, unsigned t)
{
  unsigned keep = !v->ring_n ? 0 : v->seen < t - 1 ? v->seen : t - 1;
  cudaStream_t cs = v->s[0].st;
  if (keep && v->have_prev)
    CF_CU(cudaStreamWaitEvent(cs, v->ev_frame, 0));
  for (unsigned i = 0; i < keep; i++) { /* i frames back from the newest */
    unsigned from = (v->head + v->ring_n - i) % v->ring_n;
    unsigned to = (t - i) % t;
    CF_CU(cudaMemcpyAsync(ring + (size_t)to * v->frame_bytes,
                          v->d_ring + (size_t)from * v->frame_bytes,
                          v->frame_bytes, cudaMemcpyDeviceToDevice, cs));
  }
  if (keep) { /* ev_frame: what the next pipelined frame waits for */
    CF_CU(cudaEventRecord(v->ev_frame, cs));
    v->have_prev = 1;
    for (unsigned i = 1; i < v->nslots; i++)
      CF_CU(cudaStreamWaitEvent(v->s[i].st, v->ev_frame, 0));
  }
  v->head = 0;
  v->seen = keep;
  return CF_OK;
}

/* Grow the ring to t slots (T > 1), keeping the newest frames that fit.
 * A shorter kernel keeps the ring as it is: the frames beyond its t - 1
 * are forgotten after its first frame (advance_history), not now, so that
 * a longer kernel set before that frame still finds them (two swaps in a
 * row are the last one, as on the CPU). The plain swap's: it waits for
 * the copies before the old ring goes. */
static cf_status resize_ring(cvideo *v, unsigned t)
{
  if (t <= 1 || t <= v->ring_n)
    return CF_OK;
  uint8_t *ring = NULL;
  CF_CU(cf_cuda_malloc((void **)&ring, (size_t)t * v->frame_bytes));
  cf_status s = move_ring(v, ring, t);
  cudaError_t e = s == CF_OK ? cudaStreamSynchronize(v->s[0].st) : cudaSuccess;
  if (s == CF_OK && e != cudaSuccess)
    s = cf_cuda_status(e, "cudaStreamSynchronize(ring)", __FILE__, __LINE__);
  if (s != CF_OK) {
    cudaFree(ring);
    return s;
  }
  cudaFree(v->d_ring);
  v->d_ring = ring;
  v->ring_n = t;
  return CF_OK;
}

static cf_status sync_all(cvideo *v)
{
  for (unsigned i = 0; i < v->nslots; i++)
    if (v->s[i].st)
      CF_CU(cudaStreamSynchronize(v->s[i].st));
  return CF_OK;
}

/* A kernel of the shape and path in force: its taps go into the buffers
 * there are, and for the FFT path its spectra into the spectra there are,
 * through the plans there are. No allocation, no free and no plan: a
 * cudaFree waits for the whole device, every other engine's work
 * included (cudafilterd runs a camera's next to a microphone's). */
static cf_status rewrite_kernel(cvideo *v, const cf_kernel2d *k,
                                const float *factors)
{
  kset *ks = &v->k;
  size_t ntaps = (size_t)k->t * k->kh * k->kw;
  if (ks->algo == ALGO_FFT)
    return all_kernel_spectra(ks, k, v->s[0].st);
  if (ks->algo == ALGO_SEPARABLE) {
    CF_CU(cudaMemcpy(ks->d_hrow, factors, (size_t)k->t * k->kw * sizeof(float),
                     cudaMemcpyHostToDevice));
    CF_CU(cudaMemcpy(ks->d_vcol, factors + (size_t)k->t * k->kw,
                     (size_t)k->t * k->kh * sizeof(float),
                     cudaMemcpyHostToDevice));
  } else if (ks->h_taps) {
    /* read by the next launch; none in flight reads them */
    memcpy(ks->h_taps, k->taps, ntaps * sizeof(float));
    return CF_OK;
  } else if (ks->in_const) {
    CF_CU(cf_k_conv2d_const_write(k->taps, ntaps, ks->const_off));
  } else {
    CF_CU(cudaMemcpy(ks->d_taps, k->taps, ntaps * sizeof(float),
                     cudaMemcpyHostToDevice));
  }
  /* pageable sources: on the legacy stream, maybe still in flight */
  CF_CU(cudaStreamSynchronize(cudaStreamLegacy));
  return CF_OK;
}

/* Bands whose rows band b's windows read, for kernel set ks (its bands). */
static void make_band_deps(const cvideo *v, kset *ks);

/* The direct path passes k's taps in its launches' parameters. */
static int param_taps(const cvideo *v, const cf_kernel2d *k)
{
  return !v->generic && !v->no_param &&
         cf_k_conv2d_param_taps(k->kw, k->kh, k->t);
}

/* Everything kernel k (path algo, separable factors) needs on the device,
 * into ks (zeroed; on failure what was made is in ks, for kset_free), on
 * stream st; for a ring of ring_n slots (the spectra ring of the FFT path
 * with T > 1). Waits for st before it returns: ks is ready. */
static cf_status kset_build(const cvideo *v, kset *ks, const cf_kernel2d *k,
                            int algo, const float *factors, unsigned ring_n,
                            cudaStream_t st)
{
  cf_status s = CF_OK;
  ks->t = k->t, ks->kh = k->kh, ks->kw = k->kw;
  ks->cy = k->kh / 2, ks->cx = k->kw / 2;
  ks->algo = algo;
  /* the FFT path transforms whole components: one band */
  ks->nbands = algo == ALGO_FFT ? 1 : v->nbands_live;
  size_t ntaps = (size_t)k->t * k->kh * k->kw;
  if (algo == ALGO_FFT) {
    s = install_fft(v, ks, k, st);
  } else if (algo == ALGO_DIRECT && param_taps(v, k)) {
    ks->h_taps = malloc(ntaps * sizeof(float));
    if (!ks->h_taps)
      s = cf_fail(CF_E_NOMEM, "video: out of memory");
    else
      memcpy(ks->h_taps, k->taps, ntaps * sizeof(float));
  } else if (algo == ALGO_DIRECT) {
    if (ntaps <= CONST_TAPS_MAX) {
      int placed = 0;
      cudaError_t e =
          cf_k_conv2d_const_put(k->taps, ntaps, &ks->const_off, &placed);
      if (e != cudaSuccess)
        s = cf_cuda_status(e, "cf_k_conv2d_const_put", __FILE__, __LINE__);
      ks->in_const = placed;
      ks->const_n = ntaps;
    }
    if (s == CF_OK && !ks->in_const)
      s = upload_floats(&ks->d_taps, k->taps, ntaps, st);
  } else {
    s = upload_floats(&ks->d_hrow, factors, (size_t)k->t * k->kw, st);
    if (s == CF_OK)
      s = upload_floats(&ks->d_vcol, factors + (size_t)k->t * k->kw,
                        (size_t)k->t * k->kh, st);
    /* the largest band's rows plus the kernel's halo, in each slot */
    size_t rows = 0, wmax = 0;
    for (unsigned i = 0; i < v->ncomp; i++) {
      const comp *c = &v->c[i];
      size_t r = v->depth ? c->h : (c->h + ks->nbands - 1) / ks->nbands + 1;
      rows = r > rows ? r : rows;
      wmax = CF_SEP_PITCH(c->w) > wmax ? CF_SEP_PITCH(c->w) : wmax;
    }
    ks->scratch_rows = rows;
    /* live mode computes on slot 0's stream, pipelined on every slot's */
    unsigned nscratch = v->depth ? v->nslots : 1;
    for (unsigned i = 0; s == CF_OK && i < nscratch; i++) {
      cudaError_t e = cf_cuda_malloc((void **)&ks->d_tmp[i],
                                     (rows + k->kh - 1) * wmax * sizeof(float));
      if (e == cudaSuccess)
        e = cf_cuda_malloc((void **)&ks->d_acc[i], rows * wmax * sizeof(float));
      if (e != cudaSuccess)
        s = cf_cuda_status(e, "cf_cuda_malloc(separable scratch)", __FILE__,
                           __LINE__);
    }
  }
  if (s == CF_OK && algo == ALGO_FFT && k->t > 1)
    s = alloc_spectra_ring(v, ks, ring_n);
  /* The uploads above read the caller's pageable memory on st, and the
   * constant pool's copies (cudaMemcpyToSymbol) run on the legacy stream:
   * both done before the frames' non-blocking streams read them. */
  if (s == CF_OK) {
    cudaError_t e = cudaStreamSynchronize(st);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(cudaStreamLegacy);
    if (e != cudaSuccess)
      s = cf_cuda_status(e, "cudaStreamSynchronize", __FILE__, __LINE__);
  }
  if (s == CF_OK && ks->nbands > 1)
    make_band_deps(v, ks);
  return s;
}

/* The description of the engine with kernel set ks. */
static void describe_kset(cvideo *v)
{
  const kset *ks = &v->k;
  snprintf(v->desc, sizeof v->desc,
           "%ux%u %s, kernel %ux%ux%u, %s, taps in %s, %u slot%s, %s",
           v->cfg.width, v->cfg.height, v->fmt->name, ks->t, ks->kh, ks->kw,
           ks->algo == ALGO_DIRECT
               ? (v->generic ? "direct (tile 32x32, 4 rows a thread)"
                  : ks->h_taps
                      ? "direct (register-blocked, unrolled: tile 128x32, "
                        "4x4 a thread)"
                  : cf_k_conv2d_blocked(ks->kw, ks->kh) == 1
                      ? "direct (register-blocked: tile 128x32, 8x4 a thread)"
                  : cf_k_conv2d_blocked(ks->kw, ks->kh) == 2
                      ? "direct (register-blocked, any width: tile 128x32, "
                        "8x4 a thread, 4 columns of taps at a time)"
                      : "direct (tile 32x32, 4 rows a thread)")
           : ks->algo == ALGO_FFT
               ? "fft (cuFFT R2C/C2R per component, one forward "
                 "transform a frame, products summed over slices)"
               : "separable (rows 256 a block, columns 128x32, 4x4 a "
                 "thread)",
           ks->algo == ALGO_FFT         ? "spectra in global memory"
           : ks->algo == ALGO_SEPARABLE ? "global memory"
           : ks->h_taps                 ? "launch parameters"
           : ks->in_const               ? "constant memory"
                                        : "global memory",
           v->nslots, v->nslots == 1 ? "" : "s",
           v->depth ? "pipelined" : "live");
  size_t l = strlen(v->desc);
  if (v->depth)
    snprintf(v->desc + l, sizeof v->desc - l, " (depth %u)", v->depth);
  else
    snprintf(v->desc + l, sizeof v->desc - l, " (%u band%s)", ks->nbands,
             ks->nbands == 1 ? "" : "s");
}

/* Kernel k from the next frame on. A kernel of the shape and path in
 * force is rewritten in place; any other is built whole beside the one in
 * force, which goes only once it is ready: a swap that fails leaves the
 * engine as it was. */
static cf_status install_kernel(cvideo *v, const cf_kernel2d *k)
{
  float *factors = NULL;
  int algo = ALGO_DIRECT;
  cf_status s = choose_algo(v, k, &factors, &algo);
  if (s != CF_OK)
    return s;
  /* Work already enqueued reads the old taps and scratch. */
  if ((s = sync_all(v)) != CF_OK) {
    free(factors);
    return s;
  }
  if (v->k.t && algo == v->k.algo && k->t == v->k.t && k->kh == v->k.kh &&
      k->kw == v->k.kw) {
    s = rewrite_kernel(v, k, factors);
    free(factors);
    return s;
  }
  kset nk;
  memset(&nk, 0, sizeof nk);
  unsigned ring_n = k->t > 1 && k->t > v->ring_n ? k->t : v->ring_n;
  s = kset_build(v, &nk, k, algo, factors, ring_n, v->s[0].st);
  free(factors);
  if (s == CF_OK)
    s = resize_ring(v, k->t); /* to ring_n */
  if (s != CF_OK) {
    kset_free(&nk);
    return s;
  }
  kset_free(&v->k);
  v->k = nk;
  describe_kset(v);
  return CF_OK;
}

/* ---- per frame ---- */

/* Memory the copies can reach directly: pinned host memory or device
 * memory (a GstCudaMemory, a cudaMalloc'd frame). Pageable memory goes
 * through the slot's pinned staging. */
static int is_direct(const void *p)
{
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError(); /* not ours to keep */
    return 0;
  }
  return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeDevice ||
         a.type == cudaMemoryTypeManaged;
}

static int frame_direct(const cvideo *v, const cf_frame *f)
{
  for (unsigned p = 0; p < v->fmt->planes; p++)
    if (!is_direct(f->data[p]))
      return 0;
  return 1;
}

static size_t row_bytes(const cvideo *v, unsigned p)
{
  return v->pitch[p];
}

/* Host rows [r0, r1) of every plane's band between a frame and a tight
 * staging buffer. */
static void host_rows(const cvideo *v, const cf_frame *f, uint8_t *tight,
                      unsigned b, int to_tight)
{
  for (unsigned p = 0; p < v->fmt->planes; p++) {
    unsigned r0 = v->k.nbands > 1 ? band_row(v, p, b) : 0;
    unsigned r1 =
        v->k.nbands > 1 ? band_row(v, p, b + 1) : (unsigned)v->rows[p];
    for (unsigned r = r0; r < r1; r++) {
      uint8_t *t = tight + v->plane_off[p] + (size_t)r * v->pitch[p];
      uint8_t *u = (uint8_t *)f->data[p] + (size_t)r * f->stride[p];
      if (to_tight)
        memcpy(t, u, row_bytes(v, p));
      else
        memcpy(u, t, row_bytes(v, p));
    }
  }
}

/* Rows of plane p in band b (the whole plane with one band). */
static void band_rows(const cvideo *v, unsigned p, unsigned b, unsigned *r0,
                      unsigned *r1)
{
  *r0 = band_row(v, p, b);
  *r1 = band_row(v, p, b + 1);
}

/* Upload band b of the frame into `dst` (tight), from the caller's frame
 * where it is direct (pinned or device memory) or through staging h; then
 * the pass-through copy into d_out. */
static cf_status upload_band(cvideo *v, const cf_frame *in, int direct,
                             uint8_t *h, uint8_t *dst, uint8_t *d_out,
                             unsigned b, cudaStream_t st)
{
  if (!direct)
    host_rows(v, in, h, b, 1);
  for (unsigned p = 0; p < v->fmt->planes; p++) {
    unsigned r0, r1;
    band_rows(v, p, b, &r0, &r1);
    if (r1 == r0)
      continue;
    size_t off = v->plane_off[p] + (size_t)r0 * v->pitch[p];
    size_t n = (size_t)(r1 - r0) * v->pitch[p];
    if (direct)
      CF_CU(cudaMemcpy2DAsync(dst + off, v->pitch[p],
                              (const uint8_t *)in->data[p] +
                                  (size_t)r0 * in->stride[p],
                              in->stride[p], v->pitch[p], r1 - r0,
                              cudaMemcpyDefault, st)); /* host or device */
    else
      CF_CU(cudaMemcpyAsync(dst + off, h + off, n, cudaMemcpyHostToDevice,
                            st));
    if (v->passthrough)
      CF_CU(cudaMemcpyAsync(d_out + off, dst + off, n,
                            cudaMemcpyDeviceToDevice, st));
  }
  return CF_OK;
}

static cf_status download_band(cvideo *v, const cf_frame *out, int direct,
                               uint8_t *h, const uint8_t *d_out, unsigned b,
                               cudaStream_t st)
{
  for (unsigned p = 0; p < v->fmt->planes; p++) {
    unsigned r0, r1;
    band_rows(v, p, b, &r0, &r1);
    if (r1 == r0)
      continue;
    size_t off = v->plane_off[p] + (size_t)r0 * v->pitch[p];
    if (direct)
      CF_CU(cudaMemcpy2DAsync((uint8_t *)out->data[p] +
                                  (size_t)r0 * out->stride[p],
                              out->stride[p], d_out + off, v->pitch[p],
                              v->pitch[p], r1 - r0, cudaMemcpyDefault, st));
    else
      CF_CU(cudaMemcpyAsync(h + off, d_out + off,
                            (size_t)(r1 - r0) * v->pitch[p],
                            cudaMemcpyDeviceToHost, st));
  }
  return CF_OK;
}

/* Convolve band b (all rows when nbands is 1) of every selected
 * component: source ring `src` of nslots slots with the newest at head,
 * nt slices; output frame d_out; scratch of slot sl. */
static cf_status compute_band(cvideo *v, const uint8_t *src, unsigned nslots,
                              unsigned head, unsigned nt, uint8_t *d_out,
                              unsigned b, const slot *sl)
{
  const kset *ks = &v->k;
  const unsigned si = (unsigned)(sl - v->s); /* the slot's scratch */
  for (unsigned k = 0; k < v->ncomp; k++) {
    const comp *c = &v->c[k];
    cf_conv2d_args a;
    memset(&a, 0, sizeof a);
    a.src = src, a.dst = d_out;
    a.slot_bytes = v->frame_bytes, a.offset = c->offset, a.pitch = c->pitch;
    a.nslots = nslots, a.head = head, a.nt = nt;
    a.step = c->step, a.type = (unsigned)v->fmt->sample;
    a.w = c->w, a.h = c->h;
    band_rows(v, c->plane, b, &a.row0, &a.row1);
    if (a.row1 == a.row0)
      continue;
    a.kh = v->k.kh, a.kw = v->k.kw, a.cy = v->k.cy, a.cx = v->k.cx;
    a.border = (int)v->cfg.border;
    a.cval = v->cfg.cval, a.scale = v->cfg.scale, a.bias = v->cfg.bias;
    a.absolute = v->cfg.absolute;
    a.generic = v->generic;
    a.taps_host = v->k.h_taps;
    if (v->k.algo == ALGO_FFT) {
      const fftgeo *g = &v->k.fg[v->k.comp_geo[k]];
      size_t half = (size_t)g->n * (g->m / 2 + 1);
      float norm = 1.0f / ((float)g->n * (float)g->m);
      CF_FFT(cufftSetStream(g->r2c[si], sl->st));
      CF_FFT(cufftSetStream(g->c2r[si], sl->st));
      /* T > 1: slice tau's spectrum from the ring, transformed only if
       * no earlier frame did (frames compute in order: pipelined T > 1
       * frames wait for the previous one's compute); T = 1: the slot's */
      const float *spec[CF_KERNEL2D_MAX_FRAMES];
      for (unsigned tau = 0; tau < nt; tau++) {
        float *sp = ks->d_fspec[si];
        int need = 1;
        if (v->k.d_sring[k]) {
          unsigned rs = (head + nslots - tau) % nslots;
          unsigned char *ok = &v->k.svalid[(size_t)k * v->k.sring_n + rs];
          sp = v->k.d_sring[k] + rs * half * 2;
          need = !*ok;
          *ok = 1;
        }
        if (need) {
          CF_LAUNCHED(
              cf_k_fft_stage(&a, tau, g->n, g->m, ks->d_fre[si], sl->st));
          CF_FFT(cufftExecR2C(g->r2c[si], ks->d_fre[si], (cufftComplex *)sp));
        }
        spec[tau] = sp;
      }
      CF_LAUNCHED(cf_k_fft_mac(spec, g->d_kspec, ks->d_facc[si], half, nt, norm,
                               sl->st));
      CF_FFT(cufftExecC2R(g->c2r[si], (cufftComplex *)ks->d_facc[si],
                          ks->d_fre[si]));
      CF_LAUNCHED(cf_k_fft_store(&a, ks->d_fre[si], g->m, sl->st));
      continue;
    }
    if (v->k.algo == ALGO_DIRECT) {
      CF_LAUNCHED(
          cf_k_conv2d(&a, v->k.d_taps, v->k.in_const, v->k.const_off, sl->st));
      continue;
    }
    int vr0 = (int)a.row0 + (int)v->k.cy - (int)(v->k.kh - 1);
    unsigned nrows = a.row1 - a.row0 + v->k.kh - 1;
    for (unsigned tau = 0; tau < nt; tau++) {
      CF_LAUNCHED(cf_k_conv2d_rows(&a, tau, v->k.d_hrow + (size_t)tau * v->k.kw,
                                   vr0, nrows, ks->d_tmp[si], sl->st));
      CF_LAUNCHED(cf_k_conv2d_cols(&a, v->k.d_vcol + (size_t)tau * v->k.kh,
                                   ks->d_tmp[si], vr0, nrows, ks->d_acc[si],
                                   tau > 0, tau + 1 == nt, sl->st));
    }
  }
  return CF_OK;
}

/* With a base frame (set_base): the slots of the frames the ring lacks
 * for the next frame (tau = seen + 1 .. T - 1: after a reset, at the
 * start, or for a kernel reaching further back than the frames kept) get
 * a copy of it, after the compute of the frames before (pipelined frames
 * in flight read what they had, as move_ring orders its copies), before
 * the next frame's; their spectra are stale. Then the ring holds T - 1
 * frames. */
static cf_status fill_base(cvideo *v)
{
  unsigned t = v->k.t;
  if (!v->d_base || t <= 1 || v->seen >= t - 1)
    return CF_OK;
  cudaStream_t cs = v->s[0].st;
  if (v->have_prev)
    CF_CU(cudaStreamWaitEvent(cs, v->ev_frame, 0));
  for (unsigned tau = v->seen + 1; tau < t; tau++) {
    unsigned rs = (v->head + 1 + v->ring_n - tau) % v->ring_n;
    spectra_slot_written(v, rs);
    CF_CU(cudaMemcpyAsync(v->d_ring + (size_t)rs * v->frame_bytes,
                          v->d_base, v->frame_bytes, cudaMemcpyDeviceToDevice,
                          cs));
  }
  CF_CU(cudaEventRecord(v->ev_frame, cs));
  v->have_prev = 1;
  for (unsigned i = 1; i < v->nslots; i++)
    CF_CU(cudaStreamWaitEvent(v->s[i].st, v->ev_frame, 0));
  v->seen = t - 1;
  return CF_OK;
}

static unsigned active_slices(const cvideo *v)
{
  unsigned n = v->seen + 1;
  return n < v->k.t ? n : v->k.t;
}

/* After a frame: it is the newest of the history (T > 1: it went into
 * the ring's next slot), which keeps T - 1 frames. */
static void advance_history(cvideo *v)
{
  if (v->k.t > 1)
    v->head = (v->head + 1) % v->ring_n;
  v->seen = v->seen + 1 < v->k.t - 1 ? v->seen + 1 : v->k.t - 1;
}

/* Live: the frame in bands through three streams, one per stage (see the
 * top of this file), the frame done on return. Bands rotating over the
 * streams, each stream uploading, computing and downloading its bands,
 * queued an upload behind the download of the band three before: on the
 * H200, 1080p RGBA with 13x13 took 0.65 ms a frame, more than its three
 * parts one after another (0.45; bench/results/gpu-nvidia-h200-2026-11-
 * 29.md). */
static cf_status process_live(cvideo *v, const cf_frame *in,
                              const cf_frame *out)
{
  slot *s0 = &v->s[0]; /* the frame's buffers; the compute stream and
                          its scratch (FFT plans: live mode has slot 0's) */
  const slot *sc = s0;
  cudaStream_t up_st = v->s[1].st, down_st = v->s[2].st;
  int pin_in = frame_direct(v, in), pin_out = frame_direct(v, out);
  cf_status fs = fill_base(v); /* on s0's stream, before the compute */
  if (fs != CF_OK)
    return fs;
  unsigned nt = active_slices(v);
  unsigned head = v->k.t > 1 ? (v->head + 1) % v->ring_n : 0;
  /* The frame goes straight into its ring slot: nothing else reads that
   * slot now (live mode waits for each frame). */
  uint8_t *src = v->k.t > 1 ? v->d_ring : s0->d_in;
  uint8_t *frame = src + (size_t)head * v->frame_bytes;
  unsigned nslots = v->k.t > 1 ? v->ring_n : 1, up = 0;
  spectra_slot_written(v, head); /* (no spectra ring: nothing) */
  for (unsigned b = 0; b < v->k.nbands; b++) {
    unsigned need = 0; /* uploads issued before this band's compute */
    for (unsigned j = 0; j < v->k.nbands; j++)
      if (v->k.band_deps[b] >> j & 1)
        need = j + 1;
    if (need < b + 1) /* its own rows at least */
      need = b + 1;
    for (; up < need; up++) {
      cf_status s = upload_band(v, in, pin_in, s0->h_in, frame, s0->d_out,
                                up, up_st);
      if (s != CF_OK)
        return s;
      CF_CU(cudaEventRecord(v->ev_up[up], up_st));
    }
    /* the uploads run in order: the last one needed covers the others */
    CF_CU(cudaStreamWaitEvent(sc->st, v->ev_up[need - 1], 0));
    cf_status s = compute_band(v, src, nslots, head, nt, s0->d_out, b, sc);
    if (s != CF_OK)
      return s;
    CF_CU(cudaEventRecord(v->ev_comp[b], sc->st));
    CF_CU(cudaStreamWaitEvent(down_st, v->ev_comp[b], 0));
    s = download_band(v, out, pin_out, s0->h_out, s0->d_out, b, down_st);
    if (s != CF_OK)
      return s;
    CF_CU(cudaEventRecord(v->ev_down[b], down_st));
  }
  for (unsigned b = 0; b < v->k.nbands; b++) {
    CF_CU(cudaEventSynchronize(v->ev_down[b]));
    if (!pin_out)
      host_rows(v, out, s0->h_out, b, 0);
  }
  advance_history(v); /* the frame went into slot head */
  return CF_OK;
}

/* Pipelined: write the oldest pending frame to out: from the slot's
 * device frame where out is direct (pinned or device memory; on the
 * slot's stream, after its compute), else from its pinned staging copy
 * (made now if the frame was enqueued for a direct output). In two
 * steps, so that the download can run while the caller's thread waits
 * for something else (process_pipelined: the next frame's upload).
 * out_direct: frame_direct(v, out), asked once by the caller (a runtime
 * query per plane). */
static cf_status deliver_begin(cvideo *v, const cf_frame *out, int out_direct)
{
  slot *sl = &v->s[v->deq % v->nslots];
  if (out_direct)
    return download_band(v, out, 1, NULL, sl->d_out, 0, sl->st);
  if (!sl->staged)
    CF_CU(cudaMemcpyAsync(sl->h_out, sl->d_out, v->frame_bytes,
                          cudaMemcpyDeviceToHost, sl->st));
  return CF_OK;
}

static cf_status deliver_end(cvideo *v, const cf_frame *out, int out_direct)
{
  slot *sl = &v->s[v->deq % v->nslots];
  CF_CU(cudaStreamSynchronize(sl->st));
  if (!out_direct)
    host_rows(v, out, sl->h_out, 0, 0);
  v->deq++;
  return CF_OK;
}

static cf_status deliver(cvideo *v, const cf_frame *out)
{
  int out_direct = frame_direct(v, out);
  cf_status s = deliver_begin(v, out, out_direct);
  return s == CF_OK ? deliver_end(v, out, out_direct) : s;
}

static cf_status process_pipelined(cvideo *v, const cf_frame *in,
                                   const cf_frame *out)
{
  slot *sl = &v->s[v->enq % v->nslots];
  /* The slot's previous frame was delivered (at most depth pending), so
   * its staging and device buffers are free once its events are. */
  CF_CU(cudaEventSynchronize(sl->ev_done));
  int pin_in = frame_direct(v, in);
  cf_status s = upload_band(v, in, pin_in, sl->h_in, sl->d_in,
                            v->passthrough ? sl->d_out : NULL, 0, sl->st);
  if (s != CF_OK)
    return s;
  CF_CU(cudaEventRecord(sl->ev_up, sl->st));
  if ((s = fill_base(v)) != CF_OK) /* recorded in ev_frame, waited below */
    return s;
  unsigned nt = active_slices(v), head = 0, nslots = 1;
  const uint8_t *src = sl->d_in;
  if (v->k.t > 1) {
    /* The previous frame's compute has read the slot this one takes. */
    if (v->have_prev)
      CF_CU(cudaStreamWaitEvent(sl->st, v->ev_frame, 0));
    head = (v->head + 1) % v->ring_n;
    spectra_slot_written(v, head);
    CF_CU(cudaMemcpyAsync(v->d_ring + (size_t)head * v->frame_bytes,
                          sl->d_in, v->frame_bytes, cudaMemcpyDeviceToDevice,
                          sl->st));
    src = v->d_ring, nslots = v->ring_n;
  }
  if ((s = compute_band(v, src, nslots, head, nt, sl->d_out, 0, sl)) != CF_OK)
    return s;
  if (v->k.t > 1) {
    CF_CU(cudaEventRecord(v->ev_frame, sl->st));
    v->have_prev = 1;
  }
  /* The download overlaps the next frames where the caller's outputs are
   * host memory to stage through; for direct outputs (device memory above
   * all) deliver copies from d_out. The output given now says which. */
  int out_direct = frame_direct(v, out);
  sl->staged = !out_direct;
  if (sl->staged)
    CF_CU(cudaMemcpyAsync(sl->h_out, sl->d_out, v->frame_bytes,
                          cudaMemcpyDeviceToHost, sl->st));
  CF_CU(cudaEventRecord(sl->ev_done, sl->st));
  advance_history(v);
  v->enq++;
  /* The oldest frame's download is enqueued before the wait for this
   * frame's upload, so that the two copies run together (one engine each
   * way): waiting for the upload first, then for the download, held the
   * H200 at the sum of the two, 0.34 ms a 1080p RGBA frame for 0.15 each
   * (bench/results/gpu-nvidia-h200-2026-11-29.md). Frames whose input
   * and output overlap were refused (cf_video_check_frames). */
  int due = v->enq - v->deq > v->depth;
  if (due && (s = deliver_begin(v, out, out_direct)) != CF_OK)
    return s;
  if (pin_in) /* the caller may reuse its frame when we return */
    CF_CU(cudaEventSynchronize(sl->ev_up));
  return due ? deliver_end(v, out, out_direct) : CF_OK;
}

static cf_status video_process(void *impl, const cf_frame *in,
                               const cf_frame *out)
{
  cvideo *v = impl;
  CF_CUDA_SCOPE(sc);
  cf_status s = cf_video_check_frames(&v->cfg, in, out);
  if (s != CF_OK)
    return s;
  if (v->broken)
    return cf_fail(CF_E_DEVICE, "video: the CUDA engine stopped after a "
                   "device error; create a new engine");
  if ((s = cf_cuda_enter(&sc, v->dev)) != CF_OK)
    return s;
  s = v->depth ? process_pipelined(v, in, out) : process_live(v, in, out);
  if (s != CF_OK && s != CF_E_INVALID) {
    v->broken = 1;
    /* Copies already enqueued may read the caller's pinned input or write
     * its pinned output (live mode): let them end before the caller (or
     * the CPU taking over) touches those frames again. */
    for (unsigned i = 0; i < v->nslots; i++)
      if (v->s[i].st)
        (void)cudaStreamSynchronize(v->s[i].st);
  }
  return s;
}

static cf_status video_flush(void *impl, const cf_frame *out, int *got)
{
  cvideo *v = impl;
  CF_CUDA_SCOPE(sc);
  *got = 0;
  if (v->enq == v->deq)
    return CF_OK;
  cf_status s = cf_video_check_output(&v->cfg, out);
  if (s != CF_OK)
    return s;
  if (v->broken)
    return cf_fail(CF_E_DEVICE, "video: the CUDA engine stopped after a "
                   "device error; create a new engine");
  if ((s = cf_cuda_enter(&sc, v->dev)) != CF_OK ||
      (s = deliver(v, out)) != CF_OK)
    v->broken = 1;
  else
    *got = 1;
  return s;
}

static size_t video_latency(const void *impl)
{
  return ((const cvideo *)impl)->depth;
}

static void video_reset(void *impl)
{
  cvideo *v = impl;
  v->seen = 0; /* frames already enqueued keep the history they had */
}

static cf_status video_set_kernel(void *impl, const cf_kernel2d *k)
{
  cvideo *v = impl;
  CF_CUDA_SCOPE(sc);
  cf_status s = cf_cuda_enter(&sc, v->dev);
  if (s == CF_OK && v->broken)
    s = cf_fail(CF_E_DEVICE, "video: the CUDA engine stopped after a device "
                "error; create a new engine");
  /* Out of memory leaves the kernel in force (install_kernel builds the
   * new one beside it); a device error may have left anything. */
  if (s == CF_OK && (s = install_kernel(v, k)) != CF_OK && s != CF_E_INVALID &&
      s != CF_E_UNAVAILABLE && s != CF_E_NOMEM)
    v->broken = 1;
  return s;
}

static void video_describe(const void *impl, char *buf, size_t n)
{
  snprintf(buf, n, "%s", ((const cvideo *)impl)->desc);
}

static void video_destroy(void *impl)
{
  cvideo *v = impl;
  CF_CUDA_SCOPE(sc);
  (void)cf_cuda_enter(&sc, v->dev); /* reported already; frees what it can */
  for (unsigned i = 0; i < MAX_SLOTS; i++)
    if (v->s[i].st)
      (void)cudaStreamSynchronize(v->s[i].st); /* nothing to tell */
  kset_free(&v->k);
  cudaFree(v->d_ring);
  cudaFree(v->d_base);
  for (unsigned i = 0; i < MAX_SLOTS; i++) {
    slot *sl = &v->s[i];
    cudaFreeHost(sl->h_in);
    cudaFreeHost(sl->h_out);
    cudaFree(sl->d_in);
    cudaFree(sl->d_out);
    if (sl->ev_up)
      cudaEventDestroy(sl->ev_up);
    if (sl->ev_done)
      cudaEventDestroy(sl->ev_done);
    if (sl->st)
      cudaStreamDestroy(sl->st);
  }
  for (unsigned b = 0; b < MAX_BANDS; b++) {
    if (v->ev_up[b])
      cudaEventDestroy(v->ev_up[b]);
    if (v->ev_comp[b])
      cudaEventDestroy(v->ev_comp[b]);
    if (v->ev_down[b])
      cudaEventDestroy(v->ev_down[b]);
  }
  if (v->ev_frame)
    cudaEventDestroy(v->ev_frame);
  (void)cudaGetLastError();
  free(v);
}

/* Read at each frame's launch (process): frames in flight keep theirs. */
static void video_set_output(void *impl, const cf_video_out *o)
{
  cvideo *v = impl;
  v->cfg.scale = o->scale;
  v->cfg.bias = o->bias;
  v->cfg.absolute = o->absolute;
}

/* Before the first frame (video_internal.h): the copy in device memory,
 * made here; the ring gets it before each frame that lacks frames
 * (fill_base). */
static cf_status video_set_base(void *impl, const cf_frame *f)
{
  cvideo *v = impl;
  CF_CUDA_SCOPE(sc);
  cf_status s = cf_cuda_enter(&sc, v->dev);
  if (s != CF_OK)
    return s;
  uint8_t *d = NULL;
  if (f) {
    cudaError_t ce = cf_cuda_malloc((void **)&d, v->frame_bytes);
    const char *call = "cudaMalloc(history base)";
    if (ce == cudaSuccess) {
      ce = cudaMemcpy(d, f->data[0], v->frame_bytes, cudaMemcpyHostToDevice);
      call = "cudaMemcpy(history base)";
    }
    if (ce != cudaSuccess) {
      cudaFree(d);
      return cf_cuda_status(ce, call, __FILE__, __LINE__);
    }
  }
  cudaFree(v->d_base);
  v->d_base = d;
  return CF_OK;
}

static const cf_video_ops ops_table = {
    video_process,  video_reset,   video_set_kernel, video_describe,
    video_destroy,  video_latency, video_flush,      video_set_output,
    video_set_base, NULL /* set_format: the ring holds frames' bytes */};

static cf_status make_slots(cvideo *v)
{
  const unsigned flags = cudaEventDisableTiming;
  /* live mode: one frame's buffers, LIVE_STREAMS streams for the bands */
  unsigned nbuf = v->depth ? v->nslots : 1;
  for (unsigned i = 0; i < v->nslots; i++) {
    slot *sl = &v->s[i];
    CF_CU(cudaStreamCreateWithFlags(&sl->st, cudaStreamNonBlocking));
    CF_CU(cudaEventCreateWithFlags(&sl->ev_up, flags));
    CF_CU(cudaEventCreateWithFlags(&sl->ev_done, flags));
    if (i >= nbuf)
      continue;
    CF_CU(cf_cuda_host_alloc((void **)&sl->h_in, v->frame_bytes));
    CF_CU(cf_cuda_host_alloc((void **)&sl->h_out, v->frame_bytes));
    CF_CU(cf_cuda_malloc((void **)&sl->d_in, v->frame_bytes));
    CF_CU(cf_cuda_malloc((void **)&sl->d_out, v->frame_bytes));
  }
  for (unsigned b = 0; b < v->nbands_live; b++) {
    CF_CU(cudaEventCreateWithFlags(&v->ev_up[b], flags));
    CF_CU(cudaEventCreateWithFlags(&v->ev_comp[b], flags));
    CF_CU(cudaEventCreateWithFlags(&v->ev_down[b], flags));
  }
  CF_CU(cudaEventCreateWithFlags(&v->ev_frame, flags));
  return CF_OK;
}

cf_status cf_cuda_video_new(const cf_video_config *cfg, const cf_kernel2d *k,
                            void **impl, const cf_video_ops **ops)
{
  if (cfg->pipeline_depth >= MAX_SLOTS)
    return cf_fail(CF_E_INVALID, "video: pipeline_depth %u, the CUDA "
                   "backend takes 0..%u", cfg->pipeline_depth, MAX_SLOTS - 1);
  CF_CUDA_SCOPE(sc);
  cf_status s = cf_cuda_enter(&sc, cfg->device_id);
  if (s == CF_OK)
    s = cf_cuda_preload();
  if (s != CF_OK)
    return s;
  cvideo *v = calloc(1, sizeof *v);
  if (!v)
    return cf_fail(CF_E_NOMEM, "video: out of memory");
  v->cfg = *cfg;
  const char *gk = getenv("CF_CONV2D_KERNEL"); /* for comparison (bench) */
  v->generic = gk && !strcmp(gk, "generic");
  v->no_param = gk && !strcmp(gk, "rb");
  v->fmt = cf_format_desc_get(cfg->format);
  v->dev = cfg->device_id;
  v->depth = cfg->pipeline_depth;
  v->nslots = v->depth ? v->depth + 1 : LIVE_STREAMS;
  unsigned nb = cfg->height / BAND_ROWS;
  v->nbands_live = v->depth || nb < 1 ? 1 : nb > MAX_BANDS ? MAX_BANDS : nb;
  cf_frame tight;
  v->frame_bytes = cf_frame_layout(cfg->format, cfg->width, cfg->height,
                                   NULL, &tight);
  for (unsigned p = 0; p < v->fmt->planes; p++) {
    v->pitch[p] = tight.stride[p];
    v->rows[p] = cf_sub_h(cfg->height, v->fmt->plane_sub[p]);
    v->plane_off[p] = p ? v->plane_off[p - 1] + v->pitch[p - 1] *
                                                    v->rows[p - 1]
                        : 0;
  }
  unsigned mask = v->fmt->ncomp == 1 ? 1u : cfg->components;
  for (unsigned i = 0; i < v->fmt->ncomp; i++) {
    const cf_chan_desc *d = &v->fmt->comp[i];
    if (!(mask & (1u << i))) {
      v->passthrough = 1;
      continue;
    }
    comp *c = &v->c[v->ncomp++];
    c->plane = d->plane;
    c->w = cf_sub_w(cfg->width, d->sub);
    c->h = cf_sub_h(cfg->height, d->sub);
    c->offset = v->plane_off[d->plane] + d->offset;
    c->pitch = v->pitch[d->plane];
    c->step = d->step;
  }
  if (v->fmt->has_extra)
    v->passthrough = 1;
  s = make_slots(v);
  if (s == CF_OK)
    s = install_kernel(v, k);
  if (s != CF_OK) {
    video_destroy(v);
    return s;
  }
  *impl = v;
  *ops = &ops_table;
  return CF_OK;
}

/* ---- kernels built ahead (cf_engine_prepare_swap2d) ---- */

typedef struct vprep {
  const cvideo *v; /* the engine it was built for */
  int dev;
  unsigned ring_n; /* the temporal ring it was built for */
  kset ks;         /* the kernel's, then (set_prepared) the one retired */
  /* A kernel of more temporal taps than the ring held (from_n slots): its
   * ring of ring_n slots, then (set_prepared) the one retired */
  uint8_t *ring;
  unsigned from_n;
} vprep;

int cf_cuda_video_is(const cf_video_ops *ops)
{
  return ops == &ops_table;
}

/* Kernel k's kset, built whole on a stream of its own: the engine's
 * streams go on meanwhile. Reads only what the engine was made with, and
 * the ring's size, which only a swap changes. */
cf_status cf_cuda_video_prepare(const void *impl, const cf_kernel2d *k,
                                void **out)
{
  const cvideo *v = impl;
  *out = NULL;
  CF_CUDA_SCOPE(sc);
  cf_status s = cf_cuda_enter(&sc, v->dev);
  float *factors = NULL;
  int algo = ALGO_DIRECT;
  if (s == CF_OK)
    s = choose_algo(v, k, &factors, &algo);
  if (s != CF_OK)
    return s;
  vprep *p = calloc(1, sizeof *p);
  if (!p) {
    free(factors);
    return cf_fail(CF_E_NOMEM, "video: out of memory");
  }
  p->v = v;
  p->dev = v->dev;
  p->ring_n = k->t > 1 && k->t > v->ring_n ? k->t : v->ring_n;
  p->from_n = v->ring_n;
  cudaStream_t st = NULL;
  cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    s = cf_cuda_status(e, "cudaStreamCreateWithFlags", __FILE__, __LINE__);
  if (s == CF_OK && p->ring_n > p->from_n &&
      (e = cf_cuda_malloc((void **)&p->ring,
                          (size_t)p->ring_n * v->frame_bytes)) != cudaSuccess)
    s = cf_cuda_status(e, "cudaMalloc(ring)", __FILE__, __LINE__);
  if (s == CF_OK)
    s = kset_build(v, &p->ks, k, algo, factors, p->ring_n, st);
  free(factors);
  if (st)
    (void)cudaStreamDestroy(st); /* built: its work is done */
  if (s != CF_OK) {
    cf_cuda_video_free_prepared(p);
    return s;
  }
  *out = p;
  return CF_OK;
}

/* The prepared kset in force from the next frame: no allocation, free,
 * plan or wait. Frames in flight (pipelined) keep reading the one it
 * retires, which goes into p; cf_cuda_video_free_prepared waits for them
 * before it gives that back. A kernel of more temporal taps than the
 * ring held brought a ring of its own: the frames kept move into it on
 * the device, and the old one goes into p too. */
cf_status cf_cuda_video_set_prepared(void *impl, void *prepared)
{
  cvideo *v = impl;
  vprep *p = prepared;
  int grow = p && p->ring && p->from_n == v->ring_n;
  if (!p || p->v != v || v->broken ||
      (p->ks.t > 1 && p->ring_n != v->ring_n && !grow))
    return CF_E_STATE;
  CF_CUDA_SCOPE(sc);
  cf_status s = cf_cuda_enter(&sc, v->dev);
  if (s != CF_OK)
    return s;
  if (grow) {
    if ((s = move_ring(v, p->ring, p->ring_n)) != CF_OK)
      return s;
    uint8_t *old_ring = v->d_ring;
    v->d_ring = p->ring;
    v->ring_n = p->ring_n;
    p->ring = old_ring;
  }
  kset old = v->k;
  v->k = p->ks;
  p->ks = old;
  describe_kset(v);
  return CF_OK;
}

void cf_cuda_video_free_prepared(void *prepared)
{
  vprep *p = prepared;
  if (!p)
    return;
  CF_CUDA_SCOPE(sc);
  if (cf_cuda_enter(&sc, p->dev) == CF_OK) {
    /* the frames still reading a retired kset (its constant-memory run
     * above all, which another engine may take once dropped) */
    if (cudaDeviceSynchronize() != cudaSuccess)
      (void)cudaGetLastError(); /* nothing to tell: it goes anyway */
  }
  kset_free(&p->ks);
  if (p->ring && cudaFree(p->ring) != cudaSuccess)
    (void)cudaGetLastError();
  free(p);
}

/* ---- bench/bench_gpu_video.c: the parts alone ---- */

cf_status cf_cuda_bench_video(const cf_video_config *cfg,
                              const cf_kernel2d *k, int iters,
                              double seconds[3])
{
  void *impl = NULL;
  const cf_video_ops *ops = NULL;
  cf_video_config c = *cfg;
  c.pipeline_depth = 1; /* one frame's buffers on one stream */
  cf_status s = cf_cuda_video_new(&c, k, &impl, &ops);
  if (s != CF_OK)
    return s;
  cvideo *v = impl;
  slot *sl = &v->s[0];
  cudaEvent_t e0 = NULL, e1 = NULL;
  memset(sl->h_in, 0x55, v->frame_bytes);
  float ms = 0;
  if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
    s = cf_fail(CF_E_DEVICE, "bench: cudaEventCreate failed");
  for (int part = 0; s == CF_OK && part < 3; part++) {
    cudaError_t e = cudaEventRecord(e0, sl->st);
    for (int i = 0; e == cudaSuccess && s == CF_OK && i < iters; i++) {
      if (part == 0)
        e = cudaMemcpyAsync(sl->d_in, sl->h_in, v->frame_bytes,
                            cudaMemcpyHostToDevice, sl->st);
      else if (part == 1)
        s = compute_band(v, sl->d_in, 1, 0, 1, sl->d_out, 0, sl);
      else
        e = cudaMemcpyAsync(sl->h_out, sl->d_out, v->frame_bytes,
                            cudaMemcpyDeviceToHost, sl->st);
    }
    if (e == cudaSuccess)
      e = cudaEventRecord(e1, sl->st);
    if (e == cudaSuccess)
      e = cudaEventSynchronize(e1);
    if (e == cudaSuccess)
      e = cudaEventElapsedTime(&ms, e0, e1);
    if (e != cudaSuccess && s == CF_OK)
      s = cf_cuda_status(e, "bench copies", __FILE__, __LINE__);
    seconds[part] = ms * 1e-3;
  }
  if (e0)
    cudaEventDestroy(e0);
  if (e1)
    cudaEventDestroy(e1);
  video_destroy(v);
  return s;
}
