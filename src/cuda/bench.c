/* Kernel-only timing of the direct 1D kernel (see cuda_bench.h). */
#include <stdint.h>
#include <stdlib.h>

#include "cf_kernels.h"
#include "cuda_bench.h"
#include "cuda_internal.h"

typedef struct bench_mem {
  float *ring, *y, *taps;
  unsigned long long *t;
  cf_fir1d_route *routes, *host_routes; /* one per channel */
  unsigned *off;
  cudaEvent_t a, b;
  size_t coff, cn;
  int placed;
} bench_mem;

static cf_status bench_run(bench_mem *m, unsigned taps, unsigned channels,
                           size_t frames, int const_taps, int iters,
                           double *seconds)
{
  size_t R = 1, len = (taps + CF_FIR1D_TAP_PAD - 1) / CF_FIR1D_TAP_PAD *
                      CF_FIR1D_TAP_PAD;
  while (R < frames + len)
    R <<= 1;
  float *h = calloc(len, sizeof *h);
  cf_fir1d_route *r = calloc(channels, sizeof *r);
  unsigned *off = calloc(channels + 1, sizeof *off);
  if (!h || !r || !off) {
    free(h), free(r), free(off);
    return cf_fail(CF_E_NOMEM, "bench: out of memory");
  }
  for (unsigned i = 0; i < taps; i++)
    h[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  cudaError_t e = cudaSuccess;
  if (const_taps)
    e = cf_k_fir1d_const_put(h, len, &m->coff, &m->placed);
  m->cn = len;
  for (unsigned c = 0; c < channels; c++) {
    r[c].in = c;
    r[c].len = (unsigned)len;
    r[c].off = m->placed ? m->coff : 0;
    off[c] = c;
  }
  off[channels] = channels;
  if (e == cudaSuccess)
    e = cf_cuda_malloc((void **)&m->ring, R * channels * sizeof(float));
  if (e == cudaSuccess)
    e = cf_cuda_malloc((void **)&m->y, frames * channels * sizeof(float));
  if (e == cudaSuccess)
    e = cf_cuda_malloc((void **)&m->taps, len * sizeof(float));
  if (e == cudaSuccess)
    e = cf_cuda_malloc((void **)&m->t, sizeof *m->t);
  if (e == cudaSuccess)
    e = cf_cuda_malloc((void **)&m->routes, channels * sizeof *r);
  if (e == cudaSuccess)
    e = cf_cuda_malloc((void **)&m->off, (channels + 1) * sizeof *off);
  if (e == cudaSuccess)
    e = cudaMemcpy(m->taps, h, len * sizeof(float), cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaMemcpy(m->routes, r, channels * sizeof *r, cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaMemcpy(m->off, off, (channels + 1) * sizeof *off,
                   cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaMemset(m->ring, 0, R * channels * sizeof(float));
  if (e == cudaSuccess)
    e = cudaMemset(m->t, 0, sizeof *m->t);
  free(h), free(off);
  m->host_routes = r; /* the launches' (freed by the caller) */
  CF_CU(e);
  CF_CU(cudaEventCreate(&m->a));
  CF_CU(cudaEventCreate(&m->b));
  /* one warm-up run, then the timed ones */
  for (int i = -1; i < iters; i++) {
    if (i == 0)
      CF_CU(cudaEventRecord(m->a, 0));
    CF_LAUNCHED(cf_k_fir1d(m->y, channels, m->ring, R - 1, m->t,
                           (unsigned)frames, m->routes, m->off,
                           (unsigned)len, m->taps, m->placed, m->host_routes,
                           0));
  }
  CF_CU(cudaEventRecord(m->b, 0));
  CF_CU(cudaEventSynchronize(m->b));
  float ms = 0;
  CF_CU(cudaEventElapsedTime(&ms, m->a, m->b));
  *seconds = ms * 1e-3 / (iters > 0 ? iters : 1);
  return CF_OK;
}

cf_status cf_cuda_bench_direct(unsigned taps, unsigned channels,
                               size_t frames, int const_taps,
                               cf_bench_fir which,
                               int iters, double *seconds)
{
  bench_mem m = {0};
  if (taps == 0 || channels == 0 || frames == 0 || frames > 0xffffffffu ||
      (unsigned)which > (unsigned)CF_BENCH_FIR_TILED16)
    return cf_fail(CF_E_INVALID, "bench: bad sizes");
  cf_status s = cf_cuda_preload(); /* not timed: no first-launch load */
  if (s != CF_OK)
    return s;
  cf_k_fir1d_set_width(which == CF_BENCH_FIR_TILED8    ? 8
                       : which == CF_BENCH_FIR_TILED16 ? 16
                                                       : 0);
  cf_k_fir1d_set_stream_width(which == CF_BENCH_FIR_STREAM16 ? 16 : 0);
  s = bench_run(&m, taps, channels, frames, const_taps, iters, seconds);
  cf_k_fir1d_set_width(0);
  cf_k_fir1d_set_stream_width(0);
  if (m.placed)
    cf_k_fir1d_const_drop(m.coff, m.cn);
  free(m.host_routes);
  void *p[] = {m.ring, m.y, m.taps, m.t, m.routes, m.off};
  for (size_t i = 0; i < sizeof p / sizeof *p; i++)
    if (p[i])
      (void)cudaFree(p[i]);
  if (m.a)
    (void)cudaEventDestroy(m.a);
  if (m.b)
    (void)cudaEventDestroy(m.b);
  return s;
}
