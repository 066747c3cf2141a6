/* The CUDA 1D engine backend: the same contract as src/cpu/fir.c.
 *
 * Two paths, chosen at creation (the latency may not change later):
 *  - direct (kernels/fir1d.cu), latency 0: every process() call is cut
 *    into steps of at most `cap` frames, each step's outputs are ready
 *    when the call returns;
 *  - uniformly partitioned overlap-save (kernels/ols.cu + cuFFT), latency
 *    B - 1 like the CPU's FFT paths: input collects into blocks of B
 *    frames; when frame jB + B - 1 arrives, block j is computed and its
 *    outputs y[jB .. jB + B) leave at output times jB + B - 1 ..
 *    jB + 2B - 2.
 * The input history lives on the device (a ring per channel, and for
 * overlap-save a frequency-domain delay line of past block spectra), so a
 * swapped-in kernel reads the past like the old one and needs no priming.
 *
 * Steps go through N slots (pinned staging, device buffers, a stream and
 * two events each): step i waits on an event of step i - 1 (the compute
 * is ordered through the device state), never on the host; the host waits
 * only for outputs it must return.
 *
 * Two ways to overlap (cf_audio_config.pipeline_depth):
 *  - live (depth 0): within a call. A call's steps overlap one another
 *    (upload of i + 1, compute of i, download of i - 1), and every output
 *    the call owes is back when it returns: nothing added to the latency;
 *  - across calls (depth D >= 1): steps are blocks of B frames on either
 *    path and the output leaves D blocks later (latency + D x B). A call
 *    launches the blocks its input completes and returns the outputs of
 *    blocks launched D blocks before, which the device finished while the
 *    host was away: a stream of calls of a block each never waits for
 *    the device (D + 2 slots: a slot comes round again only once its
 *    outputs are all handed out). A step of the graph size (the block)
 * with one kernel bank replays its compute from a CUDA graph captured at
 * creation or set_kernel (the copies around it are plain calls); other
 * steps are enqueued call by call. Nothing is allocated
 * in process(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/kernel_internal.h"
#include "cf_kernels.h"
#include "cuda_internal.h"

#define LIVE_SLOTS 2
#define MAX_SLOTS (CF_AUDIO_MAX_DEPTH + 2)
#define DIRECT_STEP 8192     /* direct path: frames per step, at least */
#define AUTO_DIRECT_TAPS 128 /* CF_ALGO_AUTO: direct up to this length */
#define AUTO_DIRECT_BLOCK 16 /* ... and for any length below this block */
#define CONST_TAPS_MAX 4096  /* a bank's taps try the constant pool */

typedef struct slot {
  float *h_in, *h_out; /* pinned */
  float *d_in, *d_out;
  cudaStream_t st;
  cudaEvent_t ev_comp, ev_done; /* after the compute / after the download */
  int busy;                     /* launched, not yet waited for */
  int valid;                    /* h_out holds a finished step */
  uint64_t w;                   /* output time of h_out[0] */
  size_t len, emitted;          /* frames in h_out, frames handed out */
} slot;

typedef struct bank {
  size_t lmax;
  unsigned nroutes, max_len, groups, pmax;
  /* direct, where every output has exactly one route: output o's at
   * [o], in host memory (cf_k_fir1d passes them to its streaming
   * kernel in the launch's parameters) */
  cf_fir1d_route *h_routes;
  unsigned *d_route_off;
  void *d_routes;
  float *d_taps; /* direct, when not in the constant pool */
  int in_const;
  size_t const_off, const_n;
  cufftComplex *d_H, *d_partial, *d_Y; /* overlap-save */
  float *d_yw;
  float *d_y; /* its output (cap x cout) while blended */
  cudaGraphExec_t gx[MAX_SLOTS];
  int graph;
  const char *graph_off; /* why graph is 0 */
  /* a bank built in another thread (cf_cuda_fir_prepare_swap) captures
   * its graphs with FFT plans of its own: setting the stream of the
   * engine's plans there would race with the engine's thread */
  cufftHandle r2c, c2r;
  int own_plans;
  int device;
} bank;

typedef struct cfir {
  unsigned cin, cout;
  int device;
  int ols;
  int nonuniform_asked;
  unsigned depth; /* blocks across calls (0: live) */
  size_t B, cap, latency, hcap;
  size_t rmask;
  float *d_ring;
  unsigned long long *d_t;
  unsigned pcap; /* overlap-save: spectra kept per input */
  float *d_xw;
  cufftComplex *d_X, *d_fdl;
  cufftHandle r2c, c2r;
  int have_r2c, have_c2r;
  slot s[MAX_SLOTS];
  unsigned ns, cur;
  int last; /* slot of the last launched step, -1 none */
  size_t pos;
  uint64_t t;
  cf_swaps banks; /* bank pointers, oldest first */
  float *zeros;
  int broken;
} cfir;

/* ---- banks ------------------------------------------------------------- */


static void bank_free(bank *b)
{
  if (!b)
    return;
  for (unsigned i = 0; i < MAX_SLOTS; i++)
    if (b->gx[i])
      (void)cudaGraphExecDestroy(b->gx[i]);
  if (b->in_const)
    cf_k_fir1d_const_drop(b->const_off, b->const_n);
  if (b->own_plans) {
    (void)cufftDestroy(b->r2c);
    (void)cufftDestroy(b->c2r);
  }
  free(b->h_routes);
  void *p[] = {b->d_route_off, b->d_routes, b->d_taps, b->d_H, b->d_partial,
               b->d_Y, b->d_yw, b->d_y};
  for (size_t i = 0; i < sizeof p / sizeof *p; i++)
    if (p[i])
      (void)cudaFree(p[i]); /* nothing to tell at free time */
  free(b);
}

static size_t pad8(size_t n)
{
  return (n + CF_FIR1D_TAP_PAD - 1) / CF_FIR1D_TAP_PAD * CF_FIR1D_TAP_PAD;
}

static cf_status dev_alloc(void **p, size_t bytes)
{
  CF_CU(cf_cuda_malloc(p, bytes ? bytes : 1));
  return CF_OK;
}

/* The overlap-save plans r2c (cin transforms of 2B) and c2r (cout) run
 * once on scratch of their own, on stream st (cf_cufft_warm): where they
 * are made, not at their first block. */
static cf_status warm_plans(const cfir *f, cufftHandle r2c, cufftHandle c2r,
                            cudaStream_t st)
{
  size_t ch = f->cin > f->cout ? f->cin : f->cout;
  size_t re = 2 * f->B * ch * sizeof(float);
  size_t cx = (f->B + 1) * ch * sizeof(cufftComplex);
  float *d_re = NULL;
  cufftComplex *d_cx = NULL;
  cf_status s = dev_alloc((void **)&d_re, re);
  if (s == CF_OK)
    s = dev_alloc((void **)&d_cx, cx);
  if (s == CF_OK)
    s = cf_cufft_warm(r2c, c2r, d_re, re, d_cx, cx, st);
  (void)cudaFree(d_re); /* nothing in flight: warm waited */
  (void)cudaFree(d_cx);
  return s;
}

/* The direct bank: padded taps (constant pool or device), routes. */
/* The bank's routes (`bytes` of them) and the per-output offsets into
 * them, copied to the device. */
static cf_status upload_routes(cfir *f, bank *b, const void *r, size_t bytes,
                               const unsigned *off)
{
  cf_status s = dev_alloc(&b->d_routes, bytes);
  if (s == CF_OK)
    s = dev_alloc((void **)&b->d_route_off, (f->cout + 1) * sizeof *off);
  if (s != CF_OK)
    return s;
  cudaError_t err = cudaMemcpy(b->d_routes, r, bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess)
    err = cudaMemcpy(b->d_route_off, off, (f->cout + 1) * sizeof *off,
                     cudaMemcpyHostToDevice);
  if (err != cudaSuccess)
    return cf_cuda_status(err, "cudaMemcpy(routes)", __FILE__, __LINE__);
  return CF_OK;
}

static cf_status bank_direct(cfir *f, bank *b, const cf_kernel *k,
                             const int *kidx_off, float *host_taps,
                             size_t ntaps)
{
  cf_fir1d_route *r = calloc(b->nroutes ? b->nroutes : 1, sizeof *r);
  unsigned *off = calloc(f->cout + 1, sizeof *off);
  cf_status s = CF_OK;
  if (!r || !off)
    s = cf_fail(CF_E_NOMEM, "cuda: out of memory");
  unsigned e = 0;
  for (unsigned o = 0; s == CF_OK && o < f->cout; o++) {
    off[o] = e;
    for (unsigned i = 0; i < f->cin; i++) {
      int x = cf_kernel_route(k, o, i);
      if (x < 0)
        continue;
      r[e].in = i;
      r[e].len = (unsigned)pad8(k->len[x]);
      r[e].off = (unsigned long long)kidx_off[x];
      e++;
    }
  }
  off[f->cout] = e;
  if (s == CF_OK && ntaps <= CONST_TAPS_MAX) {
    size_t coff = 0;
    int placed = 0;
    cudaError_t err = cf_k_fir1d_const_put(host_taps, ntaps, &coff, &placed);
    if (err != cudaSuccess)
      s = cf_cuda_status(err, "cf_k_fir1d_const_put", __FILE__, __LINE__);
    else if (placed) {
      b->in_const = 1;
      b->const_off = coff;
      b->const_n = ntaps;
      for (unsigned j = 0; j < e; j++)
        r[j].off += coff;
    }
  }
  if (s == CF_OK && !b->in_const) {
    s = dev_alloc((void **)&b->d_taps, ntaps * sizeof(float));
    if (s == CF_OK) {
      cudaError_t err = cudaMemcpy(b->d_taps, host_taps, ntaps * sizeof(float),
                                   cudaMemcpyHostToDevice);
      if (err != cudaSuccess)
        s = cf_cuda_status(err, "cudaMemcpy(taps)", __FILE__, __LINE__);
    }
  }
  if (s == CF_OK)
    s = upload_routes(f, b, r, (e ? e : 1) * sizeof *r, off);
  int one_route = s == CF_OK;
  for (unsigned o = 0; one_route && o < f->cout; o++)
    one_route = off[o + 1] - off[o] == 1;
  if (one_route) /* then r[o] is output o's route: kept */
    b->h_routes = r;
  else
    free(r);
  free(off);
  return s;
}

/* The overlap-save bank: partition spectra of every kernel (one batched
 * R2C at creation), routes, per-bank accumulation buffers. */
static cf_status bank_ols(cfir *f, bank *b, const cf_kernel *k, cudaStream_t st)
{
  size_t B = f->B, n = 2 * B, bins = B + 1, ptot = 0;
  size_t *hoff = calloc(k->count, sizeof *hoff);
  cf_ols_route *r = calloc(b->nroutes ? b->nroutes : 1, sizeof *r);
  unsigned *off = calloc(f->cout + 1, sizeof *off);
  float *host = NULL, *d_real = NULL;
  cufftHandle plan = 0;
  int have_plan = 0;
  cf_status s = CF_OK;
  if (!hoff || !r || !off)
    s = cf_fail(CF_E_NOMEM, "cuda: out of memory");
  for (unsigned x = 0; s == CF_OK && x < k->count; x++) {
    hoff[x] = ptot;
    size_t parts = (k->len[x] + B - 1) / B;
    ptot += parts;
    if (parts > b->pmax)
      b->pmax = (unsigned)parts;
  }
  if (s == CF_OK && (host = calloc(ptot * n, sizeof *host)) == NULL)
    s = cf_fail(CF_E_NOMEM, "cuda: out of memory for %zu kernel partitions",
                ptot);
  for (unsigned x = 0; s == CF_OK && x < k->count; x++)
    for (size_t j = 0; j < k->len[x]; j++)
      host[(hoff[x] + j / B) * n + j % B] = k->taps[x][j];
  unsigned e = 0;
  for (unsigned o = 0; s == CF_OK && o < f->cout; o++) {
    off[o] = e;
    for (unsigned i = 0; i < f->cin; i++) {
      int x = cf_kernel_route(k, o, i);
      if (x < 0)
        continue;
      r[e].in = i;
      r[e].parts = (unsigned)((k->len[x] + B - 1) / B);
      r[e].hoff = (unsigned long long)(hoff[x] * bins);
      e++;
    }
  }
  off[f->cout] = e;
  b->groups = (b->pmax + 63) / 64;
  if (b->groups < 1)
    b->groups = 1;
  if (b->groups > 4096)
    b->groups = 4096;
  if (s == CF_OK && ptot) {
    s = dev_alloc((void **)&d_real, ptot * n * sizeof(float));
    if (s == CF_OK)
      s = dev_alloc((void **)&b->d_H, ptot * bins * sizeof(cufftComplex));
    /* On the stream of the transform that reads it: a plain cudaMemcpy
     * from pageable memory may return before its DMA lands, on the legacy
     * stream, which orders nothing on our non-blocking streams. */
    if (s == CF_OK) {
      cudaError_t err = cudaMemcpyAsync(d_real, host, ptot * n * sizeof(float),
                                        cudaMemcpyHostToDevice, st);
      if (err != cudaSuccess)
        s = cf_cuda_status(err, "cudaMemcpyAsync(partitions)", __FILE__,
                           __LINE__);
    }
    int nn = (int)n;
    cufftResult fr = CUFFT_SUCCESS;
    if (s == CF_OK) {
      fr = cufftPlanMany(&plan, 1, &nn, NULL, 1, 0, NULL, 1, 0, CUFFT_R2C,
                         (int)ptot);
      have_plan = fr == CUFFT_SUCCESS;
      if (fr == CUFFT_SUCCESS)
        fr = cufftSetStream(plan, st);
      if (fr == CUFFT_SUCCESS)
        fr = cufftExecR2C(plan, d_real, b->d_H);
      if (fr != CUFFT_SUCCESS)
        s = cf_cufft_status(fr, "kernel spectra (cufftPlanMany/ExecR2C)",
                            __FILE__, __LINE__);
    }
    if (s == CF_OK) {
      cudaError_t err = cudaStreamSynchronize(st);
      if (err != cudaSuccess)
        s = cf_cuda_status(err, "cudaStreamSynchronize", __FILE__, __LINE__);
    }
  }
  if (have_plan)
    (void)cufftDestroy(plan);
  if (d_real)
    (void)cudaFree(d_real);
  free(host);
  if (s == CF_OK)
    s = dev_alloc((void **)&b->d_partial,
                  (size_t)b->groups * f->cout * bins * sizeof(cufftComplex));
  if (s == CF_OK)
    s = dev_alloc((void **)&b->d_Y, f->cout * bins * sizeof(cufftComplex));
  if (s == CF_OK)
    s = dev_alloc((void **)&b->d_yw, f->cout * n * sizeof(float));
  if (s == CF_OK)
    s = upload_routes(f, b, r, (e ? e : 1) * sizeof *r, off);
  free(hoff);
  free(r);
  free(off);
  return s;
}

/* Bank k's output for the step (frames m) into dst, on stream st, its
 * inverse transform through c2r. */
static cf_status bank_run(cfir *f, const bank *b, float *dst, size_t m,
                          cudaStream_t st, cufftHandle c2r)
{
  if (!f->ols) {
    CF_LAUNCHED(cf_k_fir1d(dst, f->cout, f->d_ring, f->rmask, f->d_t,
                           (unsigned)m, b->d_routes, b->d_route_off,
                           b->max_len, b->d_taps, b->in_const, b->h_routes,
                           st));
    return CF_OK;
  }
  CF_LAUNCHED(cf_k_ols_cmac(b->d_partial, f->d_fdl, b->d_H, b->d_routes,
                            b->d_route_off, f->cout, (unsigned)f->B, f->pcap,
                            b->groups, f->d_t, st));
  CF_LAUNCHED(cf_k_ols_reduce(b->d_Y, b->d_partial, f->cout, (unsigned)f->B,
                              b->groups, st));
  CF_FFT(cufftSetStream(c2r, st));
  CF_FFT(cufftExecC2R(c2r, b->d_Y, b->d_yw));
  CF_LAUNCHED(cf_k_ols_extract(dst, b->d_yw, f->cout, (unsigned)f->B,
                               1.0f / (float)(2 * f->B), st));
  return CF_OK;
}

static bank *bk(const cfir *f, unsigned k)
{
  return f->banks.bank[k];
}

/* The compute of one step of m frames starting at input time y0 (already
 * uploaded to s->d_in), output into s->d_out, on stream st: with the
 * banks of the swap list, or with bank `only` alone (a graph's capture,
 * through its own FFT plans if it has them). */
static cf_status compute(cfir *f, slot *s, cudaStream_t st, size_t m,
                         uint64_t y0, bank *only)
{
  cf_status r;
  int own = only && only->own_plans;
  cufftHandle r2c = own ? only->r2c : f->r2c, c2r = own ? only->c2r : f->c2r;
  CF_LAUNCHED(cf_k_ring_write(f->d_ring, f->rmask, s->d_in, f->cin,
                              (unsigned)m, f->d_t, st));
  if (f->ols) {
    CF_LAUNCHED(cf_k_ols_window(f->d_xw, f->d_ring, f->rmask, f->cin,
                                (unsigned)f->B, f->d_t, st));
    CF_FFT(cufftSetStream(r2c, st));
    CF_FFT(cufftExecR2C(r2c, f->d_xw, f->d_X));
    CF_LAUNCHED(cf_k_ols_push(f->d_fdl, f->d_X, f->cin, (unsigned)f->B,
                              f->pcap, f->d_t, st));
  }
  unsigned nb = only ? 1 : f->banks.n;
  for (unsigned k = 0; k < nb; k++) {
    bank *b = only ? only : bk(f, k);
    if ((r = bank_run(f, b, k + 1 == nb ? s->d_out : b->d_y, m, st, c2r)) !=
        CF_OK)
      return r;
  }
  /* The fold of engine.h's crossfades: swap k blends over the banks
   * before it from S_k, and is complete from the next swap's point. A
   * bank whose successor was retired gives no output this step reads in
   * between (engine_internal.h, cf_swaps). */
  const float *prev = nb > 1 ? bk(f, 0)->d_y : NULL;
  size_t cs = f->cout * sizeof(float);
  for (unsigned k = 1; k < nb; k++) {
    float *dst = k + 1 == nb ? s->d_out : bk(f, k)->d_y;
    const cf_swap *sw = &f->banks.sw[k];
    uint64_t S = sw->s, y1 = y0 + m, next = sw->end;
    uint64_t a = y0, e = S < y1 ? S : y1;
    if (e > a)
      CF_CU(cudaMemcpyAsync(dst, prev, (size_t)(e - a) * cs,
                            cudaMemcpyDeviceToDevice, st));
    a = S > y0 ? S : y0;
    e = next < y1 ? next : y1;
    if (e > a)
      CF_LAUNCHED(cf_k_crossfade(dst + (a - y0) * f->cout,
                                 prev + (a - y0) * f->cout, (size_t)(e - a),
                                 f->cout, (size_t)(a - S), sw->x, st));
    prev = dst;
  }
  CF_LAUNCHED(cf_k_time_advance(f->d_t, (unsigned)m, st));
  return CF_OK;
}

/* Capture bank b's compute of a step for slot i. The copies stay outside
 * the graph, in launch(): the next step waits for this one's compute, not
 * for its download, so the copies of consecutive steps overlap (with
 * them inside, each step's upload waited for the previous download:
 * gpu_audio's copies_overlap, on the emulated device's copy order). The
 * capture runs on stream st (a graph is not bound to a stream). */
static cf_status capture(cfir *f, bank *b, unsigned i, cudaStream_t st)
{
  slot *s = &f->s[i];
  cudaGraph_t g = NULL;
  size_t m = f->ols ? f->B : f->B < f->cap ? f->B : f->cap;
  CF_CU(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  cf_status r = compute(f, s, st, m, 0, b);
  cudaError_t err = cudaStreamEndCapture(st, &g);
  if (r == CF_OK && err != cudaSuccess)
    r = cf_cuda_status(err, "cudaStreamEndCapture", __FILE__, __LINE__);
  if (r == CF_OK) {
    err = cudaGraphInstantiate(&b->gx[i], g, 0);
    if (err != cudaSuccess)
      r = cf_cuda_status(err, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  if (g)
    (void)cudaGraphDestroy(g);
  return r;
}

/* A bank for kernel set k. Its spectra and graphs are made on stream st;
 * own_plans: with FFT plans of its own (a bank built outside the engine's
 * thread, see bank). */
static cf_status bank_new(cfir *f, const cf_kernel *k, bank **out,
                          cudaStream_t st, int own_plans)
{
  *out = NULL;
  bank *b = calloc(1, sizeof *b);
  int *kidx_off = calloc(k->count, sizeof *kidx_off);
  float *host_taps = NULL;
  cf_status s = CF_OK;
  if (!b || !kidx_off) {
    free(b);
    free(kidx_off);
    return cf_fail(CF_E_NOMEM, "cuda: out of memory");
  }
  b->lmax = cf_kernel_max_len(k);
  b->device = f->device;
  for (unsigned o = 0; o < f->cout; o++)
    for (unsigned i = 0; i < f->cin; i++)
      b->nroutes += cf_kernel_route(k, o, i) >= 0;
  if (!f->ols) {
    size_t ntaps = 0;
    for (unsigned x = 0; x < k->count; x++) {
      kidx_off[x] = (int)ntaps;
      ntaps += pad8(k->len[x]);
      if (pad8(k->len[x]) > b->max_len)
        b->max_len = (unsigned)pad8(k->len[x]);
    }
    host_taps = calloc(ntaps ? ntaps : 1, sizeof *host_taps);
    if (!host_taps)
      s = cf_fail(CF_E_NOMEM, "cuda: out of memory for %zu taps", ntaps);
    for (unsigned x = 0; s == CF_OK && x < k->count; x++)
      if (k->len[x]) /* a matrix's silent pairs have no taps (NULL) */
        memcpy(host_taps + kidx_off[x], k->taps[x], k->len[x] * sizeof(float));
    if (s == CF_OK)
      s = bank_direct(f, b, k, kidx_off, host_taps, ntaps);
  } else {
    s = bank_ols(f, b, k, st);
  }
  free(host_taps);
  free(kidx_off);
  if (s == CF_OK)
    s = dev_alloc((void **)&b->d_y, f->cap * f->cout * sizeof(float));
  /* The taps, routes and constant-pool copies above went through the
   * legacy stream from pageable memory: they may still be in flight when
   * cudaMemcpy returns, and nothing orders them before the kernels on the
   * slots' non-blocking streams. */
  if (s == CF_OK) {
    cudaError_t err = cudaStreamSynchronize(cudaStreamLegacy);
    if (err != cudaSuccess)
      s = cf_cuda_status(err, "cudaStreamSynchronize(cudaStreamLegacy)",
                         __FILE__, __LINE__);
  }
  /* Graphs: a capture that fails leaves this bank on plain launches (the
   * same work; a real device fault shows again in process()).
   * CF_CUDA_GRAPHS=0 turns them off (tests/gpu compares both ways: on
   * the overlap-save path every step is a block, so without it plain
   * launches would only run during crossfades). */
  const char *ge = getenv("CF_CUDA_GRAPHS");
  b->graph = !(ge && strcmp(ge, "0") == 0);
  if (!b->graph)
    b->graph_off = "off (CF_CUDA_GRAPHS=0)";
  if (s == CF_OK && b->graph && f->ols && own_plans) {
    int n = (int)(2 * f->B);
    cufftResult fr = cufftPlanMany(&b->r2c, 1, &n, NULL, 1, 0, NULL, 1, 0,
                                   CUFFT_R2C, (int)f->cin);
    if (fr == CUFFT_SUCCESS) {
      fr = cufftPlanMany(&b->c2r, 1, &n, NULL, 1, 0, NULL, 1, 0, CUFFT_C2R,
                         (int)f->cout);
      if (fr != CUFFT_SUCCESS)
        (void)cufftDestroy(b->r2c);
    }
    if (fr == CUFFT_SUCCESS)
      b->own_plans = 1;
    else
      s = cf_cufft_status(fr, "cufftPlanMany (a prepared swap's graphs)",
                          __FILE__, __LINE__);
    if (s == CF_OK)
      s = warm_plans(f, b->r2c, b->c2r, st);
  }
  for (unsigned i = 0; s == CF_OK && i < f->ns && b->graph; i++) {
    cf_status g = capture(f, b, i, st);
    if (g != CF_OK) {
      b->graph = 0;
      b->graph_off = "off (capture failed)";
      (void)cudaGetLastError();
    }
  }
  if (s != CF_OK) {
    bank_free(b);
    return s;
  }
  *out = b;
  return CF_OK;
}

/* ---- streaming ----------------------------------------------------------- */

static cf_status slot_wait(slot *s)
{
  if (!s->busy)
    return CF_OK;
  CF_CU(cudaEventSynchronize(s->ev_done));
  s->busy = 0;
  s->valid = 1;
  return CF_OK;
}

/* Hand out the frames of s's finished step that fall in [T0, T1). */
static void emit(const cfir *f, slot *s, uint64_t T0, uint64_t T1, float *out)
{
  if (!s->valid)
    return;
  uint64_t a = s->w + s->emitted, e = s->w + s->len;
  if (a < T0)
    a = T0;
  if (e > T1)
    e = T1;
  if (a >= e)
    return;
  memcpy(out + (size_t)(a - T0) * f->cout, s->h_out + (size_t)(a - s->w) * f->cout,
         (size_t)(e - a) * f->cout * sizeof(float));
  s->emitted = (size_t)(e - s->w);
}

/* Launch the step of m frames in slot i (input time f->t - m ..). */
static cf_status launch(cfir *f, unsigned i, size_t m)
{
  slot *s = &f->s[i];
  uint64_t y0 = f->t - m;
  cudaEvent_t prev = f->last >= 0 ? f->s[f->last].ev_comp : NULL;
  size_t gsize = f->ols ? f->B : f->B < f->cap ? f->B : f->cap;
  CF_CU(cudaMemcpyAsync(s->d_in, s->h_in, m * f->cin * sizeof(float),
                        cudaMemcpyHostToDevice, s->st));
  if (prev)
    CF_CU(cudaStreamWaitEvent(s->st, prev, 0));
  if (f->banks.n == 1 && bk(f, 0)->graph && m == gsize) {
    CF_LAUNCHED(cudaGraphLaunch(bk(f, 0)->gx[i], s->st));
  } else {
    cf_status r = compute(f, s, s->st, m, y0, NULL);
    if (r != CF_OK)
      return r;
  }
  CF_CU(cudaEventRecord(s->ev_comp, s->st));
  CF_CU(cudaMemcpyAsync(s->h_out, s->d_out, m * f->cout * sizeof(float),
                        cudaMemcpyDeviceToHost, s->st));
  CF_CU(cudaEventRecord(s->ev_done, s->st));
  s->busy = 1;
  s->valid = 0;
  s->w = y0 + f->latency; /* y[y0] leaves at output time y0 + latency */
  s->len = m;
  s->emitted = 0;
  f->last = (int)i;
  /* banks no future output needs (y >= y0 + m) step back */
  cf_swaps_retire(&f->banks, y0 + m);
  return CF_OK;
}

static cf_status wait_all(cfir *f, uint64_t T0, uint64_t T1, float *out)
{
  for (unsigned i = 0; i < f->ns; i++) {
    cf_status r = slot_wait(&f->s[i]);
    if (r != CF_OK)
      return r;
    if (out)
      emit(f, &f->s[i], T0, T1, out);
  }
  return CF_OK;
}

/* Wait for and hand out the steps with outputs in [T0, T1) still owed:
 * live, every step launched; across calls, those launched D blocks ago. */
static cf_status wait_owed(cfir *f, uint64_t T0, uint64_t T1, float *out)
{
  for (unsigned i = 0; i < f->ns; i++) {
    slot *s = &f->s[i];
    if (s->busy && s->w + s->emitted < T1) {
      cf_status r = slot_wait(s);
      if (r != CF_OK)
        return r;
    }
    emit(f, s, T0, T1, out);
  }
  return CF_OK;
}

/* Every slot's stream idle: wait_all, and also the work a step that
 * failed half-way left behind (enqueued, but the slot never became busy,
 * so wait_all does not wait for it). Before reset zeroes the state on one
 * stream, a swap frees buffers or the engine goes: such work landing
 * after a reset's zeroing (a ring write, a spectrum pushed, the time
 * advanced) corrupted the next stream's first blocks (gpu_audio's
 * "reset" fault cases, on the emulated device). */
static cf_status quiesce(cfir *f)
{
  cf_status r = wait_all(f, 0, 0, NULL);
  for (unsigned i = 0; i < MAX_SLOTS; i++) {
    if (!f->s[i].st)
      continue;
    cudaError_t e = cudaStreamSynchronize(f->s[i].st);
    if (e != cudaSuccess && r == CF_OK)
      r = cf_cuda_status(e, "cudaStreamSynchronize", __FILE__, __LINE__);
  }
  return r;
}

static cf_status cfir_process(void *impl, const float *in, float *out,
                              size_t n)
{
  cfir *f = impl;
  if (f->broken)
    return cf_fail(CF_E_DEVICE, "cuda: the engine failed earlier (device "
                   "error); reset it or build a new one");
  CF_CUDA_SCOPE(sc);
  cf_status r = cf_cuda_enter(&sc, f->device);
  if (r != CF_OK)
    goto fail;
  /* out may alias in: a frame of out is written only once its input frame
   * is taken. The last block's outputs may reach into this call
   * (overlap-save, or across calls): they go out as the input advances. */
  uint64_t T0 = f->t, T1 = T0 + n;
  size_t done = 0;
  while (done < n) {
    slot *s = &f->s[f->cur];
    if (f->pos == 0) {
      if ((r = slot_wait(s)) != CF_OK)
        goto fail;
      emit(f, s, T0, f->t, out);
      s->valid = 0;
    }
    size_t m = n - done < f->cap - f->pos ? n - done : f->cap - f->pos;
    memcpy(s->h_in + f->pos * f->cin, in + done * f->cin,
           m * f->cin * sizeof(float));
    f->pos += m;
    done += m;
    f->t += m;
    for (unsigned i = 0; (f->ols || f->depth) && i < f->ns; i++)
      if (i != f->cur)
        emit(f, &f->s[i], T0, f->t, out);
    if (f->pos == f->cap || (!f->ols && !f->depth && done == n)) {
      if ((r = launch(f, f->cur, f->pos)) != CF_OK)
        goto fail;
      f->pos = 0;
      f->cur = (f->cur + 1) % f->ns;
    }
  }
  if ((r = wait_owed(f, T0, T1, out)) != CF_OK)
    goto fail;
  if (T0 < f->latency) { /* before the first block's output: silence */
    uint64_t z = (T1 < f->latency ? T1 : f->latency) - T0;
    memset(out, 0, (size_t)z * f->cout * sizeof(float));
  }
  return CF_OK;
fail:
  f->broken = 1;
  return r;
}

static size_t cfir_latency(const void *impl)
{
  return ((const cfir *)impl)->latency;
}

static size_t cfir_tail(const void *impl)
{
  const cfir *f = impl;
  size_t l = 0;
  for (unsigned k = 0; k < f->banks.n; k++)
    if (bk(f, k)->lmax > l)
      l = bk(f, k)->lmax;
  return f->latency + l - 1;
}

static void free_retired(cfir *f)
{
  for (unsigned i = 0; i < f->banks.nretired; i++)
    bank_free(f->banks.retired[i]);
  f->banks.nretired = 0;
}

static cf_status zero_state(cfir *f)
{
  cudaStream_t st = f->s[0].st;
  CF_CU(cudaMemsetAsync(f->d_ring, 0,
                        (f->rmask + 1) * f->cin * sizeof(float), st));
  CF_CU(cudaMemsetAsync(f->d_t, 0, sizeof *f->d_t, st));
  if (f->ols)
    CF_CU(cudaMemsetAsync(f->d_fdl, 0,
                          (size_t)f->pcap * (f->B + 1) * f->cin *
                              sizeof(cufftComplex),
                          st));
  CF_CU(cudaStreamSynchronize(st));
  return CF_OK;
}

static void cfir_reset(void *impl)
{
  cfir *f = impl;
  CF_CUDA_SCOPE(sc);
  cf_status r = cf_cuda_enter(&sc, f->device);
  if (r == CF_OK)
    r = quiesce(f);
  cf_swaps_reset(&f->banks); /* a discontinuity completes every swap */
  if (r == CF_OK)
    free_retired(f);
  if (r == CF_OK)
    r = zero_state(f);
  for (unsigned i = 0; i < f->ns; i++)
    f->s[i].busy = f->s[i].valid = 0;
  f->t = 0;
  f->pos = 0;
  f->cur = 0;
  f->last = -1;
  f->broken = r != CF_OK; /* a reset that worked clears an earlier fault */
}

static cf_status cfir_drain(void *impl, float *out, size_t cap,
                            size_t *written)
{
  cfir *f = impl;
  size_t left = cfir_tail(f);
  (void)cap;
  *written = 0;
  while (left) {
    size_t m = left < f->cap ? left : f->cap;
    cf_status r = cfir_process(f, f->zeros, out, m);
    if (r != CF_OK)
      return r;
    out += m * f->cout;
    left -= m;
    *written += m;
  }
  cfir_reset(f);
  return f->broken ? cf_fail(CF_E_DEVICE, "cuda: reset after drain failed")
                   : CF_OK;
}

static cf_status cfir_set_kernel(void *impl, const cf_kernel *k,
                                 size_t crossfade)
{
  cfir *f = impl;
  size_t l = cf_kernel_max_len(k);
  if (l > f->hcap)
    return cf_fail(CF_E_INVALID, "set_kernel: the CUDA engine keeps %zu "
                   "frames of history (swap_history or the first kernel); "
                   "a %zu-tap kernel needs a new engine", f->hcap, l);
  CF_CUDA_SCOPE(sc);
  cf_status r = cf_cuda_enter(&sc, f->device);
  if (r == CF_OK)
    r = quiesce(f); /* outputs are all handed out already */
  if (r != CF_OK)
    return r;
  free_retired(f);
  if ((r = cf_swaps_reserve(&f->banks)) != CF_OK)
    return r;
  bank *b;
  if ((r = bank_new(f, k, &b, f->s[0].st, 0)) != CF_OK)
    return r;
  cf_swaps_push(&f->banks, b, f->t, crossfade);
  return CF_OK;
}

/* ---- swaps built ahead (engine_internal.h) ------------------------------ */

cf_status cf_cuda_fir_prepare_swap(const void *impl, const cf_kernel *k,
                                   void **out)
{
  /* Reads only what the engine was built with (f->ns, the slots' and the
   * state's device pointers, sizes); works on a stream of its own. */
  cfir *f = (cfir *)impl;
  *out = NULL;
  size_t l = cf_kernel_max_len(k);
  if (l > f->hcap)
    return cf_fail(CF_E_INVALID,
                   "prepare_swap: the CUDA engine keeps %zu "
                   "frames of history (swap_history or the first kernel); "
                   "a %zu-tap kernel needs a new engine",
                   f->hcap, l);
  CF_CUDA_SCOPE(sc);
  cf_status r = cf_cuda_enter(&sc, f->device);
  if (r != CF_OK)
    return r;
  cudaStream_t st = NULL;
  CF_CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  bank *b = NULL;
  r = bank_new(f, k, &b, st, 1);
  cudaError_t err = cudaStreamSynchronize(st);
  if (r == CF_OK && err != cudaSuccess)
    r = cf_cuda_status(err, "cudaStreamSynchronize", __FILE__, __LINE__);
  err = cudaStreamDestroy(st);
  if (r == CF_OK && err != cudaSuccess)
    r = cf_cuda_status(err, "cudaStreamDestroy", __FILE__, __LINE__);
  if (r != CF_OK) {
    bank_free(b);
    return r;
  }
  *out = b;
  return CF_OK;
}

cf_status cf_cuda_fir_set_prepared(void *impl, void *prepared, size_t crossfade,
                                   void **dead, unsigned *ndead, unsigned cap)
{
  cfir *f = impl;
  if (f->broken)
    return CF_E_STATE; /* set_kernel says why */
  CF_CUDA_SCOPE(sc);
  cf_status r = cf_cuda_enter(&sc, f->device);
  if (r != CF_OK)
    return r;
  /* No wait. The banks retired since the last swap go to the caller, to
   * free outside this thread (cf_cuda_fir_free_prepared waits for the
   * device first: across calls, steps that used them may still run). */
  cf_swaps_take_retired(&f->banks, dead, ndead, cap);
  if ((r = cf_swaps_reserve(&f->banks)) != CF_OK)
    return r;
  cf_swaps_push(&f->banks, prepared, f->t, crossfade);
  return CF_OK;
}

void cf_cuda_fir_free_prepared(void *prepared)
{
  bank *b = prepared;
  CF_CUDA_SCOPE(sc);
  if (b && cf_cuda_enter(&sc, b->device) == CF_OK) {
    /* a retired bank: steps enqueued before it retired may be running
     * (across calls); nothing enqueued later uses it. The bank's
     * constant-pool range goes back only once they are done. */
    (void)cudaDeviceSynchronize(); /* a fault shows in process() */
    bank_free(b);
  } else
    free(b); /* no device to give its memory back to */
}

static void cfir_describe(const void *impl, char *buf, size_t n)
{
  const cfir *f = impl;
  const bank *b = bk(f, f->banks.n - 1);
  char path[96];
  if (f->ols)
    snprintf(path, sizeof path, "fft-uniform%s, %u partitions of %zu",
             f->nonuniform_asked ? " (for fft-nonuniform: same latency)" : "",
             b->pmax, f->B);
  else
    snprintf(path, sizeof path, "direct %zu taps (%s)", b->lmax,
             b->in_const ? "constant memory" : "device memory");
  char mode[48] = "live";
  if (f->depth)
    snprintf(mode, sizeof mode, "across calls, depth %u", f->depth);
  snprintf(buf, n, "%s, block %zu, latency %zu, %s, %u slots, graph %s", path,
           f->B, f->latency, mode, f->ns,
           b->graph       ? "on"
           : b->graph_off ? b->graph_off
                          : "off");
}

static void cfir_destroy(void *impl)
{
  cfir *f = impl;
  if (!f)
    return;
  CF_CUDA_SCOPE(sc);
  if (cf_cuda_enter(&sc, f->device) == CF_OK)
    (void)quiesce(f);
  for (unsigned k = 0; k < f->banks.n; k++)
    bank_free(bk(f, k));
  free_retired(f);
  cf_swaps_free(&f->banks);
  for (unsigned i = 0; i < MAX_SLOTS; i++) {
    slot *s = &f->s[i];
    if (s->h_in)
      (void)cudaFreeHost(s->h_in);
    if (s->h_out)
      (void)cudaFreeHost(s->h_out);
    if (s->d_in)
      (void)cudaFree(s->d_in);
    if (s->d_out)
      (void)cudaFree(s->d_out);
    if (s->ev_comp)
      (void)cudaEventDestroy(s->ev_comp);
    if (s->ev_done)
      (void)cudaEventDestroy(s->ev_done);
    if (s->st)
      (void)cudaStreamDestroy(s->st);
  }
  if (f->have_r2c)
    (void)cufftDestroy(f->r2c);
  if (f->have_c2r)
    (void)cufftDestroy(f->c2r);
  void *p[] = {f->d_ring, f->d_t, f->d_xw, f->d_X, f->d_fdl};
  for (size_t i = 0; i < sizeof p / sizeof *p; i++)
    if (p[i])
      (void)cudaFree(p[i]);
  free(f->zeros);
  free(f);
}

static const cf_backend_ops cfir_ops = {
    cfir_process, cfir_latency, cfir_tail,     cfir_drain,
    cfir_reset,   cfir_set_kernel, cfir_describe, cfir_destroy,
};

static cf_status slot_init(cfir *f, slot *s)
{
  CF_CU(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking));
  CF_CU(cudaEventCreateWithFlags(&s->ev_comp, cudaEventDisableTiming));
  CF_CU(cudaEventCreateWithFlags(&s->ev_done, cudaEventDisableTiming));
  CF_CU(cf_cuda_host_alloc((void **)&s->h_in, f->cap * f->cin * sizeof(float)));
  CF_CU(cf_cuda_host_alloc((void **)&s->h_out,
                           f->cap * f->cout * sizeof(float)));
  CF_CU(cf_cuda_malloc((void **)&s->d_in, f->cap * f->cin * sizeof(float)));
  CF_CU(cf_cuda_malloc((void **)&s->d_out, f->cap * f->cout * sizeof(float)));
  memset(s->h_in, 0, f->cap * f->cin * sizeof(float));
  return CF_OK;
}

static cf_status engine_init(cfir *f)
{
  cf_status r;
  for (unsigned i = 0; i < f->ns; i++)
    if ((r = slot_init(f, &f->s[i])) != CF_OK)
      return r;
  /* direct: the longest kernel's history (its taps padded to 8: the
   * zero taps read the ring too, and an aliased Inf or NaN times 0 would
   * leak into the sum) plus a step; overlap-save: the 2B window (older
   * input lives in the delay line) */
  size_t need = f->ols ? 4 * f->B : pad8(f->hcap) + f->cap + 1, R = 1;
  while (R < need)
    R <<= 1;
  f->rmask = R - 1;
  CF_CU(cf_cuda_malloc((void **)&f->d_ring, R * f->cin * sizeof(float)));
  CF_CU(cf_cuda_malloc((void **)&f->d_t, sizeof *f->d_t));
  if (f->ols) {
    size_t bins = f->B + 1;
    f->pcap = (unsigned)((f->hcap + f->B - 1) / f->B + 1);
    CF_CU(cf_cuda_malloc((void **)&f->d_xw, 2 * f->B * f->cin * sizeof(float)));
    CF_CU(cf_cuda_malloc((void **)&f->d_X,
                         bins * f->cin * sizeof(cufftComplex)));
    CF_CU(cf_cuda_malloc((void **)&f->d_fdl, (size_t)f->pcap * bins * f->cin *
                                                  sizeof(cufftComplex)));
    int n = (int)(2 * f->B);
    CF_FFT(cufftPlanMany(&f->r2c, 1, &n, NULL, 1, 0, NULL, 1, 0, CUFFT_R2C,
                         (int)f->cin));
    f->have_r2c = 1;
    CF_FFT(cufftPlanMany(&f->c2r, 1, &n, NULL, 1, 0, NULL, 1, 0, CUFFT_C2R,
                         (int)f->cout));
    f->have_c2r = 1;
    cf_status w = warm_plans(f, f->r2c, f->c2r, f->s[0].st);
    if (w != CF_OK)
      return w;
  }
  f->zeros = calloc(f->cap * f->cin, sizeof(float));
  if (!f->zeros)
    return cf_fail(CF_E_NOMEM, "cuda: out of memory");
  return zero_state(f);
}

cf_status cf_cuda_fir_new(const cf_audio_config *cfg, const cf_kernel *k,
                          unsigned out_channels, void **impl,
                          const cf_backend_ops **ops)
{
  CF_CUDA_SCOPE(sc);
  cf_status r = cf_cuda_enter(&sc, cfg->device_id);
  if (r == CF_OK)
    r = cf_cuda_preload();
  if (r != CF_OK)
    return r;
  cfir *f = calloc(1, sizeof *f);
  if (!f)
    return cf_fail(CF_E_NOMEM, "cuda: out of memory");
  size_t lmax = cf_kernel_max_len(k);
  f->cin = cfg->channels;
  f->cout = out_channels;
  f->device = cfg->device_id;
  f->B = cfg->block_size;
  f->last = -1;
  switch (cfg->algorithm) {
  case CF_ALGO_DIRECT:
    f->ols = 0;
    break;
  case CF_ALGO_FFT_NONUNIFORM:
    /* The CPU's non-uniform plans have the uniform path's latency
     * (block - 1), so uniform partitions serve it exactly. */
    f->nonuniform_asked = 1;
    f->ols = 1;
    break;
  case CF_ALGO_FFT_UNIFORM:
    f->ols = 1;
    break;
  default:
    f->ols = lmax > AUTO_DIRECT_TAPS && f->B >= AUTO_DIRECT_BLOCK;
    break;
  }
  f->depth = cfg->pipeline_depth; /* the front checked the range */
  f->latency = (f->ols ? f->B - 1 : 0) + (size_t)f->depth * f->B;
  f->hcap = cfg->swap_history > lmax ? cfg->swap_history : lmax;
  if (f->hcap > CF_KERNEL_MAX_TAPS)
    f->hcap = CF_KERNEL_MAX_TAPS;
  /* steps: blocks, except the live direct path's (whole calls, cut) */
  f->cap = f->ols || f->depth ? f->B : f->B > DIRECT_STEP ? f->B : DIRECT_STEP;
  f->ns = f->depth ? f->depth + 2 : LIVE_SLOTS;
  r = engine_init(f);
  bank *b0 = NULL;
  if (r == CF_OK)
    r = bank_new(f, k, &b0, f->s[0].st, 0);
  if (r == CF_OK && (r = cf_swaps_init(&f->banks, b0)) != CF_OK)
    bank_free(b0);
  if (r != CF_OK) {
    cfir_destroy(f);
    return r;
  }
  *impl = f;
  *ops = &cfir_ops;
  return CF_OK;
}

int cf_cuda_fir_is(const cf_backend_ops *ops)
{
  return ops == &cfir_ops;
}
