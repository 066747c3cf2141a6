/* Choosing a convolver plan by a cost model whose constants were measured
 * on the CPU path (bench/bench_engine --crossover; see bench/results/). */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conv.h"

/* Model constants, ns, measured on the 2-core x86-64 CI machine (AVX2):
 * FFTW interleaved real FFT + inverse, the SIMD spectral multiply-add
 * and the direct FIR (bench/results/cost-model-*.md). */
#define NS_DIRECT_MAC 0.045  /* one tap of the direct FIR per output */
#define NS_FFT_NLOGN 0.15    /* real FFT of size N costs this * N log2 N */
#define NS_FFT_FIXED 100.0   /* per FFT call */
#define NS_CMAC_BIN 0.31     /* one complex bin multiply-add, in cache */
#define NS_CMAC_BIN_BIG 0.72 /* ... for spectra past 4096 bins (L2-bound) */
#define NS_PER_SAMPLE 1.0    /* copies in and out */

double cf_plan_fft_ns(size_t n)
{
  return NS_FFT_FIXED + NS_FFT_NLOGN * (double)n * log2((double)n);
}

double cf_plan_cmac_ns(size_t p, size_t nb)
{
  return (double)nb * (p > 4096 ? NS_CMAC_BIN_BIG : NS_CMAC_BIN);
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

static double cost(const cf_conv_plan *pl, unsigned k)
{
  double c = NS_PER_SAMPLE + (double)k * (double)pl->head * NS_DIRECT_MAC;
  for (unsigned s = 0; s < pl->nstages; s++) {
    const cf_stage_plan *st = &pl->st[s];
    double p = (double)st->p;
    size_t nf = cf_conv_fft_size(st->p);
    c += (1.0 + k) * cf_plan_fft_ns(nf) / p;
    c += (double)k * (double)st->n * cf_plan_cmac_ns(st->p, nf / 2 + 1) / p;
  }
  return c;
}

/* Stages from `off` (= head) to len: the first of size p0, each next one
 * `growth` times larger, up to pmax; each stage ends where the next one
 * starts at twice its own size (q = 2: a block of it has the p samples
 * until its next block to be computed in, conv.c spreads it so), the last
 * covers the rest uniformly. */
static int build_fft(cf_conv_plan *pl, size_t len, size_t p0, size_t head,
                     size_t growth, size_t pmax)
{
  size_t covered = head, p = p0;
  pl->head = head;
  pl->nstages = 0;
  while (covered < len) {
    if (pl->nstages == CF_MAX_STAGES || covered % p)
      return 0;
    cf_stage_plan *st = &pl->st[pl->nstages++];
    st->p = p;
    st->q = covered / p;
    size_t next = p * growth;
    if (growth > 1 && next <= pmax && len > 2 * next &&
        2 * next > covered) {
      st->n = (2 * next - covered) / p;
      covered = 2 * next;
      p = next;
    } else {
      st->n = div_up(len - covered, p);
      covered += st->n * p;
    }
  }
  return 1;
}

static void consider(cf_conv_plan *best, const cf_conv_plan *cand,
                     unsigned k)
{
  double c = cost(cand, k);
  if (best->cost < 0 || c < best->cost) {
    *best = *cand;
    best->cost = c;
  }
}

static void best_fft(cf_conv_plan *best, size_t len, unsigned k, size_t block,
                     size_t latency, int uniform)
{
  cf_conv_plan c = *best;
  /* Smaller first partitions cost more FFTs per sample but fit short
   * kernels better; with latency block - 1 a q = 0 stage of p0 <= block
   * also works: its output just waits in the ring for the extra delay. */
  size_t p0_min = block < 32 ? block : 32;
  for (size_t p0 = block; p0 >= p0_min && p0 >= 1; p0 /= 2) {
    size_t head = latency ? 0 : p0;
    if (head >= len)
      head = len;
    if (uniform) {
      if (build_fft(&c, len, p0, head, 1, p0))
        consider(best, &c, k);
    } else {
      for (size_t g = 2; g <= 8; g *= 2)
        for (size_t pmax = p0; pmax <= CF_MAX_PARTITION; pmax *= g)
          if (build_fft(&c, len, p0, head, g, pmax))
            consider(best, &c, k);
    }
    if (p0 % 2)
      break;
  }
}

void cf_plan_make(cf_conv_plan *pl, size_t len, unsigned kernels,
                  size_t block, size_t latency, cf_algorithm algo)
{
  memset(pl, 0, sizeof *pl);
  pl->block = block;
  pl->latency = latency;
  pl->cost = -1;
  unsigned k = kernels ? kernels : 1;
  cf_conv_plan direct = *pl;
  direct.algorithm = CF_ALGO_DIRECT;
  direct.head = len;
  if (algo == CF_ALGO_DIRECT || len <= 1) {
    consider(pl, &direct, k);
    return;
  }
  if (algo == CF_ALGO_AUTO)
    consider(pl, &direct, k);
  if (algo == CF_ALGO_AUTO || algo == CF_ALGO_FFT_UNIFORM) {
    pl->algorithm = CF_ALGO_FFT_UNIFORM;
    best_fft(pl, len, k, block, latency, 1);
  }
  if (algo == CF_ALGO_AUTO || algo == CF_ALGO_FFT_NONUNIFORM) {
    cf_conv_plan save = *pl;
    pl->algorithm = CF_ALGO_FFT_NONUNIFORM;
    pl->cost = -1;
    best_fft(pl, len, k, block, latency, 0);
    if (algo == CF_ALGO_AUTO && save.cost >= 0 && save.cost <= pl->cost)
      *pl = save;
  }
  if (pl->nstages == 0 && pl->head == len)
    pl->algorithm = CF_ALGO_DIRECT;
}

size_t cf_plan_latency(size_t len, unsigned kernels, size_t block,
                       cf_algorithm algo)
{
  if (algo == CF_ALGO_DIRECT || block <= 1)
    return 0;
  if (algo != CF_ALGO_AUTO)
    return block - 1;
  cf_conv_plan d, f;
  cf_plan_make(&d, len, kernels, block, 0, CF_ALGO_DIRECT);
  cf_plan_make(&f, len, kernels, block, block - 1, CF_ALGO_AUTO);
  return f.cost < d.cost ? block - 1 : 0;
}

void cf_plan_describe(const cf_conv_plan *pl, char *buf, size_t n)
{
  size_t w = 0;
  buf[0] = 0;
  if (pl->head)
    w += (size_t)snprintf(buf + w, n - w, "direct %zu", pl->head);
  for (unsigned s = 0; s < pl->nstages && w < n; s++)
    w += (size_t)snprintf(buf + w, n - w, "%s%zux%zu", w ? " + " : "",
                          pl->st[s].p, pl->st[s].n);
}
