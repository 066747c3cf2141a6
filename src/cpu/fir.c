/* The CPU 1D engine backend.
 *
 * A bank is one convolver per input channel (a lane), each feeding the
 * output channels its kernels route to. Input is taken in steps of at most
 * STEP frames: lanes deinterleave and convolve their channel (in parallel
 * when the step is worth a thread hand-off), then outputs are summed where
 * several lanes feed one channel and interleaved.
 *
 * A kernel swap builds a new bank with the same latency, primes it by
 * replaying the input history (so it starts as if it had always run), and
 * blends it in over the crossfade window. Swaps form a list, oldest first:
 * output y comes from the last bank whose swap point is at or before y,
 * blended with the one before it while its crossfade runs (engine.h: a
 * swap during a crossfade waits for its end, cf_swaps_push). A bank no future output depends on is
 * retired (freed at the next swap, reset or free: never in process()); the
 * list grows in set_kernel when swaps come faster than the latency lets
 * banks go, as a burst of swaps within one block does. One retired bank
 * is kept as a spare: a swap to a kernel set of the same layout (the same
 * lengths, as a slider or an A/B switch between impulse responses gives)
 * loads it in place, with no allocation and no page to fault in.
 *
 * The lanes of a new bank are built and primed in parallel on the pool,
 * and a running engine plans new FFT sizes with CF_FFT_QUICK (fft.h):
 * the swap's cost in the calling thread is the kernel's spectra and the
 * replay, divided among the cores. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "../engine/engine_internal.h"
#include "../engine/kernel_internal.h"
#include "conv.h"
#include "dsp.h"
#include "fft.h"
#include "fpenv.h"
#include "pool.h"

#define STEP 8192
/* Below this much work per step (ns by the plan's cost model) threads cost
 * more than they give: waking a sleeping worker costs tens of us on a VM.
 * While the workers still spin after the last step (steps back to back),
 * a hand-off costs about a microsecond and smaller steps gain. */
#define PARALLEL_MIN_NS 40000.0
#define PARALLEL_MIN_HOT_NS 10000.0
/* A bank is built on the pool from this many taps over its lanes (input
 * channels x the longest kernel) on: below, waking a sleeping worker
 * (0.1-0.3 ms on a VM) costs more than the work (0.03 ms for 4096 taps
 * stereo, bench_engine --swap --gap 20). */
#define BUILD_PARALLEL_MIN_TAPS 32768.0

typedef struct lane {
  cf_conv *conv; /* NULL when no kernel reads this input */
  unsigned nk;
  unsigned *outc; /* output channel of each kernel */
  float *x;       /* STEP deinterleaved input frames */
  float **y;      /* nk outputs of STEP frames */
  /* What building it found (lanes are built in parallel) */
  size_t lmax;
  double cost;
  char plan[160];
  cf_status status;
  char error[256];
} lane;

typedef struct bank {
  lane *lanes;       /* one per input channel */
  unsigned cout;
  const float **src; /* per output channel: its samples for this step */
  float *sum;        /* cout * STEP, for outputs with several sources */
  unsigned *nsrc;
  size_t lmax;
  double cost;       /* model ns per frame, all lanes */
  char plan[160];
} bank;

typedef struct fir {
  unsigned cin, cout;
  size_t block, latency;
  cf_algorithm algo;
  cf_fft_mode fft_mode; /* CF_FFT_QUICK once the stream runs */
  cf_pool *pool;
  cf_swaps banks;    /* bank pointers, oldest first */
  bank *spare;       /* a retired bank kept for the next swap to reuse */
  uint64_t t;        /* input frames since start or reset */
  uint64_t tpub;     /* t, published after its history is written
                        (__atomic: prepare_swap reads it in any thread) */
  float *hist;       /* cin rings of input history, for priming swaps */
  size_t hmask;
  float *zeros;      /* STEP * cin, input while draining */
  float *xs;         /* 3 channels on: the step's input, deinterleaved
                        once (channel c at c * STEP) for every lane */
  const float *in;   /* the step being processed */
  size_t m;
} fir;

static bank *bk(const fir *f, unsigned k)
{
  return f->banks.bank[k];
}

static void lane_free(lane *l)
{
  cf_conv_free(l->conv);
  free(l->outc);
  cf_free(l->x);
  if (l->y)
    cf_free(l->y[0]);
  free(l->y);
}

static void bank_free(bank *b, unsigned cin)
{
  if (!b)
    return;
  for (unsigned i = 0; b->lanes && i < cin; i++)
    lane_free(&b->lanes[i]);
  free(b->lanes);
  free(b->src);
  cf_free(b->sum);
  free(b->nsrc);
  free(b);
}

/* The kernels of k that read input `in`: taps, lengths and output channel
 * of each, their number and the longest. */
typedef struct lane_kernels {
  const float *taps[CF_MAX_CHANNELS];
  size_t lens[CF_MAX_CHANNELS];
  unsigned outc[CF_MAX_CHANNELS];
  unsigned nk;
  size_t lmax;
} lane_kernels;

/* Route k's kernels for input `in` into r and, where any reads it, plan
 * their convolver into pl. Returns their number. */
static unsigned lane_route(const fir *f, const cf_kernel *k, unsigned in,
                           lane_kernels *r, cf_conv_plan *pl)
{
  r->nk = 0;
  r->lmax = 0;
  for (unsigned o = 0; o < f->cout; o++) {
    int idx = cf_kernel_route(k, o, in);
    if (idx < 0)
      continue;
    r->taps[r->nk] = k->taps[idx];
    r->lens[r->nk] = k->len[idx];
    if (r->lens[r->nk] > r->lmax)
      r->lmax = r->lens[r->nk];
    r->outc[r->nk++] = o;
  }
  if (r->nk)
    cf_plan_make(pl, r->lmax, r->nk, f->block, f->latency, f->algo);
  return r->nk;
}

/* What a lane records of its plan (lanes are built in parallel). */
static void lane_describe(lane *l, const cf_conv_plan *pl, size_t lmax)
{
  l->cost = pl->cost;
  l->lmax = lmax;
  char desc[96];
  cf_plan_describe(pl, desc, sizeof desc);
  snprintf(l->plan, sizeof l->plan, "%s [%s]%s",
           cf_algorithm_name(pl->algorithm), desc,
           cf_conv_hasty(l->conv) ? ", FFT plans not measured" : "");
}

/* A new lane for input `in` of k; with `load` 0 its convolver is made but
 * not loaded (lane_reload loads it, allocating nothing). */
static cf_status lane_init(const fir *f, lane *l, const cf_kernel *k,
                           unsigned in, int load)
{
  lane_kernels r;
  cf_conv_plan pl;
  lane_route(f, k, in, &r, &pl);
  l->outc = calloc(f->cout, sizeof *l->outc);
  l->x = cf_alloc(STEP * sizeof(float));
  if (!l->outc || !l->x)
    return cf_fail(CF_E_NOMEM, "engine: out of memory for channel %u", in);
  l->nk = r.nk;
  memcpy(l->outc, r.outc, r.nk * sizeof *l->outc);
  if (!l->nk)
    return CF_OK;
  l->y = calloc(l->nk, sizeof *l->y);
  float *ybuf = cf_alloc((size_t)l->nk * STEP * sizeof(float));
  if (!l->y || !ybuf) {
    cf_free(ybuf);
    return cf_fail(CF_E_NOMEM, "engine: out of memory for channel %u", in);
  }
  for (unsigned j = 0; j < l->nk; j++)
    l->y[j] = ybuf + (size_t)j * STEP;
  cf_status s =
      cf_conv_new(&pl, load ? r.taps : NULL, r.lens, l->nk, STEP,
                  f->fft_mode, &l->conv);
  if (s == CF_OK)
    lane_describe(l, &pl, r.lmax);
  return s;
}

/* Whether lane l (of a retired bank) can take k's kernels for input `in`
 * as they are: the same outputs, and a convolver of the same layout. */
static int lane_fits(const fir *f, const lane *l, const cf_kernel *k,
                     unsigned in)
{
  lane_kernels r;
  cf_conv_plan pl;
  if (lane_route(f, k, in, &r, &pl) != l->nk ||
      memcmp(r.outc, l->outc, r.nk * sizeof *r.outc))
    return 0;
  return !r.nk || cf_conv_fits(l->conv, &pl, r.lens, r.nk);
}

/* Load k into a lane that fits (lane_fits): nothing allocated. */
static void lane_reload(const fir *f, lane *l, const cf_kernel *k, unsigned in)
{
  lane_kernels r;
  cf_conv_plan pl;
  if (!lane_route(f, k, in, &r, &pl))
    return;
  cf_conv_reload(l->conv, r.taps, r.lens);
  lane_describe(l, &pl, r.lmax);
}

static void prime(const fir *f, bank *b, unsigned c);

/* Building a bank: one job per input channel (the kernel spectra, then
 * with `prime` the replay of its history), on the pool: a swap's cost in
 * the streaming thread is divided among the cores. */
typedef struct build_job {
  const fir *f;
  bank *b;
  const cf_kernel *k;
  int prime, reuse;
} build_job;

static void build_lane(void *ctx, unsigned c)
{
  build_job *j = ctx;
  lane *l = &j->b->lanes[c];
  l->status = CF_OK;
  if (j->reuse)
    lane_reload(j->f, l, j->k, c);
  else
    l->status = lane_init(j->f, l, j->k, c, 1);
  if (l->status != CF_OK)
    snprintf(l->error, sizeof l->error, "%s", cf_last_error());
  else if (j->prime && l->conv)
    prime(j->f, j->b, c);
}

/* A bank for k: `reuse` (a retired bank k fits: nothing allocated) or a
 * new one, built on `pool` (NULL: in this thread). With `primed`, its
 * convolvers are brought to time f->t. */
static cf_status bank_make(const fir *f, bank *reuse, cf_pool *pool,
                           const cf_kernel *k, int primed, bank **out)
{
  bank *b = reuse;
  if (reuse) {
    b->cost = 0;
    b->lmax = 0;
    memset(b->nsrc, 0, f->cout * sizeof *b->nsrc);
  } else {
    b = calloc(1, sizeof *b);
  }
  cf_status s = CF_OK;
  *out = NULL;
  if (!b)
    return cf_fail(CF_E_NOMEM, "engine: out of memory");
  if (!reuse) {
    b->cout = f->cout;
    b->lanes = calloc(f->cin, sizeof *b->lanes);
    b->src = calloc(f->cout, sizeof *b->src);
    b->nsrc = calloc(f->cout, sizeof *b->nsrc);
    b->sum = cf_alloc((size_t)f->cout * STEP * sizeof(float));
    if (!b->lanes || !b->src || !b->nsrc || !b->sum)
      s = cf_fail(CF_E_NOMEM, "engine: out of memory");
  }
  if (s == CF_OK) {
    build_job job = {f, b, k, primed, reuse != NULL};
    if (pool && ((double)f->cin * (double)cf_kernel_max_len(k) >=
                     BUILD_PARALLEL_MIN_TAPS ||
                 cf_pool_hot(pool))) {
      /* a new bank is allocated (and its FFT sizes planned) here, its
       * kernels loaded on the pool: a worker that allocates takes a glibc
       * malloc arena of its own, 64 MiB of address space kept for the
       * life of the process (16 engines of 16 channels at threads = 16 on
       * 2 CPUs: 15 arenas, 960 MiB of VmSize; under RLIMIT_AS engines
       * failed to start with memory to spare: QA) */
      for (unsigned i = 0; !reuse && s == CF_OK && i < f->cin; i++)
        s = lane_init(f, &b->lanes[i], k, i, 0);
      job.reuse = 1;
      if (s == CF_OK)
        cf_pool_run(pool, build_lane, &job, f->cin);
    } else
      for (unsigned i = 0; i < f->cin; i++)
        build_lane(&job, i);
  }
  for (unsigned i = 0; s == CF_OK && i < f->cin; i++) {
    const lane *l = &b->lanes[i];
    if (l->status != CF_OK) /* the worker's message, in this thread */
      s = cf_fail(l->status, "%s", l->error);
    b->cost += l->cost;
    if (l->nk && l->lmax >= b->lmax) {
      b->lmax = l->lmax;
      snprintf(b->plan, sizeof b->plan, "%s", l->plan);
    }
  }
  if (s != CF_OK) {
    bank_free(b, f->cin);
    return s;
  }
  for (unsigned i = 0; i < f->cin; i++)
    for (unsigned j = 0; j < b->lanes[i].nk; j++)
      b->nsrc[b->lanes[i].outc[j]]++;
  *out = b;
  return CF_OK;
}

/* bank_make with the spare bank where k fits it (a swap between kernels of
 * the same layout allocates nothing), on the engine's pool. */
static cf_status bank_new(fir *f, const cf_kernel *k, int primed, bank **out)
{
  bank *b = f->spare;
  int reuse = b != NULL;
  for (unsigned i = 0; reuse && i < f->cin; i++)
    reuse = lane_fits(f, &b->lanes[i], k, i);
  if (reuse)
    f->spare = NULL;
  return bank_make(f, reuse ? b : NULL, f->pool, k, primed, out);
}

/* After the lanes ran: point src[o] at output o's samples, summing where
 * several lanes feed it; zeros where none does. */
static void bank_gather(bank *b, unsigned cin, size_t m)
{
  for (unsigned o = 0; o < b->cout; o++) {
    b->src[o] = b->sum + (size_t)o * STEP;
    if (b->nsrc[o] != 1)
      memset(b->sum + (size_t)o * STEP, 0, m * sizeof(float));
  }
  for (unsigned i = 0; i < cin; i++) {
    const lane *l = &b->lanes[i];
    for (unsigned j = 0; j < l->nk; j++) {
      unsigned o = l->outc[j];
      if (b->nsrc[o] == 1) {
        b->src[o] = l->y[j];
        continue;
      }
      float *d = b->sum + (size_t)o * STEP;
      for (size_t n = 0; n < m; n++)
        d[n] += l->y[j][n];
    }
  }
}

/* t for cf_cpu_fir_prepare_swap's reader, after the history up to it is
 * written; the history writes that follow stay behind the store (a
 * seqlock writer's barrier: x86 keeps stores in order anyway, ARM does
 * not, and the reader would take frames the ring overwrote). */
static void publish(fir *f)
{
  __atomic_store_n(&f->tpub, f->t, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

/* x[n] = in[n * ch + c] for n < m, for one or two channels (each lane
 * takes its own, in parallel): a constant stride, which the compiler
 * turns into vector shuffles; scalar strided reads cost more than a short
 * kernel's arithmetic. */
static void take_channel(float *x, const float *in, unsigned ch, unsigned c,
                         size_t m)
{
  if (ch == 1)
    memcpy(x, in, m * sizeof *x);
  else
    for (size_t n = 0; n < m; n++)
      x[n] = in[2 * n + c];
}

/* xs[c * STEP + n] = in[n * ch + c] for n < m, c < ch: three channels or
 * more in one pass over the input, a frame at a time. A lane taking its
 * channel alone read every cache line of the input once per channel, one
 * float at a time, and at 8 channels that was half a 1-tap step's time.
 * The channel count is a constant for 3 to 8 (up to 7.1), which lets the
 * compiler load whole frames and shuffle. */
#define SPLIT_CASE(K)                                                          \
  case K:                                                                      \
    for (size_t n = 0; n < m; n++)                                             \
      for (unsigned c = 0; c < (K); c++)                                       \
        xs[c * STEP + n] = in[n * (K) + c];                                    \
    break;

static void deinterleave(float *xs, const float *in, unsigned ch, size_t m)
{
  switch (ch) {
    SPLIT_CASE(3)
    SPLIT_CASE(4)
    SPLIT_CASE(5)
    SPLIT_CASE(6)
    SPLIT_CASE(7)
    SPLIT_CASE(8)
  default:
    for (size_t n = 0; n < m; n++)
      for (unsigned c = 0; c < ch; c++)
        xs[c * STEP + n] = in[n * ch + c];
  }
}
#undef SPLIT_CASE

/* out[n * co + o] = src[o][n] for n < m, o < co: one pass over the output,
 * a frame at a time, with the channel count a constant for 1 to 8
 * channels (vector shuffles where the compiler finds them). */
#define PUT_CASE(K)                                                            \
  case K:                                                                      \
    for (size_t n = 0; n < m; n++)                                             \
      for (unsigned o = 0; o < (K); o++)                                       \
        out[n * (K) + o] = src[o][n];                                          \
    break;

static void put_channels(float *out, const float *const *src, unsigned co,
                         size_t m)
{
  switch (co) {
  case 1: memcpy(out, src[0], m * sizeof *out); break;
  case 2: {
    const float *a = src[0], *b = src[1];
    for (size_t n = 0; n < m; n++) {
      out[2 * n] = a[n];
      out[2 * n + 1] = b[n];
    }
    break;
  }
    PUT_CASE(3)
    PUT_CASE(4)
    PUT_CASE(5)
    PUT_CASE(6)
    PUT_CASE(7)
    PUT_CASE(8)
  default:
    for (unsigned o = 0; o < co; o++) {
      const float *s = src[o];
      for (size_t n = 0; n < m; n++)
        out[n * co + o] = s[n];
    }
  }
}
#undef PUT_CASE

/* dst[0..n) = src[0..n) into the history ring. The ring is large (1 MiB a
 * channel for the default swap_history) and read only when a kernel is
 * swapped in. Where a step writes much of it (HIST_NT_BYTES over all
 * channels), plain stores missed the cache on every block, each fetching
 * the line it overwrote, and pushed the filter's own state out: a third
 * of a short kernel's time at 6 channels in 1024-frame steps. There
 * non-temporal stores write around the cache; hist_fence() orders them
 * before the pool's hand-back publishes the step (they are weakly
 * ordered). Small steps keep plain stores: a few partial lines written
 * around the cache, and the fence, cost more than the misses (1 tap,
 * stereo, 64-frame steps: 3.5 ns/frame with plain stores, 6-7 with
 * non-temporal ones). */
#define HIST_NT_BYTES 16384

static void hist_put(float *dst, const float *src, size_t n, int nt)
{
#if defined(__SSE__)
  if (nt) {
    size_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 15); i++)
      dst[i] = src[i];
    for (; i + 4 <= n; i += 4)
      _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    for (; i < n; i++)
      dst[i] = src[i];
    return;
  }
#else
  (void)nt;
#endif
  memcpy(dst, src, n * sizeof *dst);
}

static void hist_fence(void)
{
#if defined(__SSE__)
  _mm_sfence();
#endif
}

static void lane_job(void *ctx, unsigned item)
{
  fir *f = ctx;
  unsigned c = item % f->cin;
  bank *b = bk(f, item / f->cin);
  lane *l = &b->lanes[c];
  /* one or two channels: taken straight into the convolver's input
   * history where there is one (no copy in) */
  const float *x = l->x;
  float *staged = NULL;
  if (f->xs) {
    x = f->xs + (size_t)c * STEP;
  } else {
    if (l->conv)
      x = staged = cf_conv_stage(l->conv, f->m);
    take_channel(staged ? staged : l->x, f->in, f->cin, c, f->m);
  }
  if (item < f->cin) { /* once per channel: keep the history */
    float *h = f->hist + (size_t)c * (f->hmask + 1);
    size_t at = (size_t)(f->t & f->hmask), first = f->hmask + 1 - at;
    if (first > f->m)
      first = f->m;
    int nt = (size_t)f->cin * f->m * sizeof(float) >= HIST_NT_BYTES;
    hist_put(h + at, x, first, nt);
    hist_put(h, x + first, f->m - first, nt);
    if (nt)
      hist_fence();
  }
  if (staged)
    cf_conv_process_staged(l->conv, f->m, l->y);
  else if (l->conv)
    cf_conv_process(l->conv, x, f->m, l->y);
}

/* Banks no output needs any more: one is kept for the next swap. */
static void free_retired(fir *f)
{
  for (unsigned i = 0; i < f->banks.nretired; i++) {
    bank *b = f->banks.retired[i];
    if (!f->spare)
      f->spare = b;
    else
      bank_free(b, f->cin);
  }
  f->banks.nretired = 0;
}

static void step(fir *f, const float *in, float *out, size_t m)
{
  f->in = in;
  f->m = m;
  double work = 0;
  unsigned nb = f->banks.n;
  for (unsigned k = 0; k < nb; k++)
    work += (double)m * bk(f, k)->cost;
  unsigned items = f->cin * nb;
  if (f->xs)
    deinterleave(f->xs, in, f->cin, m);
  if (work >= PARALLEL_MIN_NS ||
      (work >= PARALLEL_MIN_HOT_NS && cf_pool_hot(f->pool)))
    cf_pool_run(f->pool, lane_job, f, items);
  else
    for (unsigned i = 0; i < items; i++)
      lane_job(f, i);
  for (unsigned k = 0; k < nb; k++)
    bank_gather(bk(f, k), f->cin, m);
  unsigned co = f->cout;
  const bank *b0 = bk(f, 0);
  if (nb == 1) {
    put_channels(out, (const float *const *)b0->src, co, m);
  } else {
    /* The blend in double: where old and new outputs nearly cancel, a
     * float blend alone would cost more than the 1e-6 the paths meet.
     * Within the first latency frames every bank gives zeros. */
    for (size_t n = 0; n < m; n++) {
      uint64_t z = f->t + n;
      double w = 1.0;
      unsigned k =
          z < f->latency ? 0 : cf_swaps_pick(&f->banks, z - f->latency, &w);
      const bank *bn = bk(f, k);
      if (w == 1.0) {
        for (unsigned o = 0; o < co; o++)
          out[n * co + o] = bn->src[o][n];
        continue;
      }
      const bank *bp = bk(f, k - 1);
      for (unsigned o = 0; o < co; o++) /* engine.h's form, as CUDA's */
        out[n * co + o] =
            (float)((1.0 - w) * bp->src[o][n] + w * bn->src[o][n]);
    }
  }
  f->t += m;
  publish(f);
  if (nb > 1)
    cf_swaps_retire(&f->banks, f->t >= f->latency ? f->t - f->latency : 0);
}

/* Every call that filters (process, drain, the swaps' priming) runs with
 * denormals flushed to zero (fpenv.h), so a tail decaying into them costs
 * no more than the signal, and the state they leave is the same whichever
 * call computed it. */
static cf_status fir_process(void *impl, const float *in, float *out,
                             size_t frames)
{
  fir *f = impl;
  cf_fpenv env = cf_fpenv_enter();
  while (frames) {
    size_t m = frames < STEP ? frames : STEP;
    step(f, in, out, m);
    in += m * f->cin;
    out += m * f->cout;
    frames -= m;
  }
  cf_fpenv_leave(env);
  return CF_OK;
}

static size_t fir_latency(const void *impl) { return ((const fir *)impl)->latency; }

static size_t fir_tail(const void *impl)
{
  const fir *f = impl;
  size_t l = 0;
  for (unsigned k = 0; k < f->banks.n; k++)
    if (bk(f, k)->lmax > l)
      l = bk(f, k)->lmax;
  return f->latency + l - 1;
}

static void fir_reset(void *impl)
{
  fir *f = impl;
  cf_swaps_reset(&f->banks); /* a discontinuity completes every swap */
  free_retired(f);
  for (unsigned i = 0; i < f->cin; i++)
    if (bk(f, 0)->lanes[i].conv)
      cf_conv_reset(bk(f, 0)->lanes[i].conv);
  /* the history stays: priming reads no frame before 0 of the new run,
   * and prepare_swap may be reading it */
  f->t = 0;
  publish(f);
}

static cf_status fir_drain(void *impl, float *out, size_t cap, size_t *written)
{
  fir *f = impl;
  size_t left = fir_tail(f);
  (void)cap;
  *written = left;
  cf_fpenv env = cf_fpenv_enter();
  while (left) {
    size_t m = left < STEP ? left : STEP;
    step(f, f->zeros, out, m);
    out += m * f->cout;
    left -= m;
  }
  cf_fpenv_leave(env);
  fir_reset(f);
  return CF_OK;
}

/* Bring lane c of a new bank to time f->t by replaying its input history:
 * from max(0, t - latency - lmax + 1) on, every output it will give is
 * exact (lmax: this lane's longest kernel). */
static void prime(const fir *f, bank *b, unsigned c)
{
  lane *l = &b->lanes[c];
  uint64_t need = f->latency + l->lmax - 1, have = f->hmask + 1 - STEP;
  if (need > have)
    need = have; /* a longer kernel than the history: approximate start */
  uint64_t from = f->t > need ? f->t - need : 0;
  /* its outputs before the swap point are never read (y < S: the blend
   * takes the banks before it): only the state is built */
  cf_conv_skip_before(l->conv, f->t - from);
  const float *h = f->hist + (size_t)c * (f->hmask + 1);
  for (uint64_t t = from; t < f->t;) {
    size_t m = f->t - t < STEP ? (size_t)(f->t - t) : STEP;
    for (size_t n = 0; n < m; n++)
      l->x[n] = h[(t + n) & f->hmask];
    cf_conv_process(l->conv, l->x, m, l->y);
    t += m;
  }
}

static cf_status fir_set_kernel(void *impl, const cf_kernel *k,
                                size_t crossfade)
{
  fir *f = impl;
  bank *b;
  free_retired(f);
  cf_status s = cf_swaps_reserve(&f->banks);
  if (s == CF_OK) {
    cf_fpenv env = cf_fpenv_enter();
    s = bank_new(f, k, 1, &b);
    cf_fpenv_leave(env);
  }
  if (s != CF_OK)
    return s;
  cf_swaps_push(&f->banks, b, f->t, crossfade);
  return CF_OK;
}

/* ---- swaps built ahead (engine.h, cf_engine_prepare_swap) ----
 * A bank built and primed in another thread on the engine's own input
 * history up to frame t0 (the frames the streaming thread had published),
 * then, in the streaming thread, brought from t0 to f->t and pushed as
 * set_kernel would. The convolvers see the same input as prime()'s, from
 * an earlier frame on: the state they reach at f->t is the same (up to
 * rounding). The history is a ring the streaming thread goes on writing:
 * what the priming read counts only if the ring did not come round to it
 * meanwhile (checked after, as a seqlock reader does). */

/* Input frames [t, t + m) of the history ring h into x, while the
 * streaming thread may be writing the ring: a seqlock reader's optimistic
 * read, which cf_cpu_fir_prepare_swap throws away when the writer came
 * round (so it is not shown to ThreadSanitizer as a race). */
__attribute__((no_sanitize_thread)) static void
read_history(const fir *f, const float *h, uint64_t t, size_t m, float *x)
{
  for (size_t i = 0; i < m; i++)
    x[i] = h[(t + i) & f->hmask];
}

/* Frames before t0 that a lane of longest kernel lmax needs, as prime()
 * takes them (no further back than the ring holds). */
static uint64_t prime_from(const fir *f, size_t lmax, uint64_t t0)
{
  uint64_t need = f->latency + lmax - 1, have = f->hmask + 1 - STEP;
  if (need > have)
    need = have;
  return t0 > need ? t0 - need : 0;
}

static cf_status prepare_swap(const fir *f, const cf_kernel *k,
                              uint64_t *t0_out, void **out)
{
  *out = NULL;
  for (int tries = 0; tries < 3; tries++) {
    uint64_t t0 = __atomic_load_n(&f->tpub, __ATOMIC_ACQUIRE), first = t0;
    bank *b;
    cf_status s = bank_make(f, NULL, NULL, k, 0, &b);
    if (s != CF_OK)
      return s;
    for (unsigned c = 0; c < f->cin; c++) {
      lane *l = &b->lanes[c];
      if (!l->conv)
        continue;
      uint64_t from = prime_from(f, l->lmax, t0);
      if (from < first)
        first = from;
      const float *h = f->hist + (size_t)c * (f->hmask + 1);
      cf_conv_skip_before(l->conv, t0 - from);
      for (uint64_t t = from; t < t0;) {
        size_t m = t0 - t < STEP ? (size_t)(t0 - t) : STEP;
        read_history(f, h, t, m, l->x);
        cf_conv_process(l->conv, l->x, m, l->y);
        t += m;
      }
    }
    /* the streaming thread writes at most a step past what it published:
     * was [first, t0) still there all along? (a reset publishes 0) */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t now = __atomic_load_n(&f->tpub, __ATOMIC_ACQUIRE);
    if (now >= t0 && now + STEP - first <= f->hmask + 1) {
      *t0_out = t0;
      *out = b;
      return CF_OK;
    }
    bank_free(b, f->cin);
  }
  return CF_OK; /* the stream runs too fast to copy from: no bank */
}

cf_status cf_cpu_fir_prepare_swap(const void *impl, const cf_kernel *k,
                                  uint64_t *t0_out, void **out)
{
  cf_fpenv env = cf_fpenv_enter();
  cf_status s = prepare_swap(impl, k, t0_out, out);
  cf_fpenv_leave(env);
  return s;
}

void cf_cpu_fir_free_prepared(const void *impl, void *prepared)
{
  bank_free(prepared, ((const fir *)impl)->cin);
}

typedef struct catchup_job {
  const fir *f;
  bank *b;
  uint64_t t0;
} catchup_job;

static void catchup_lane(void *ctx, unsigned c)
{
  catchup_job *j = ctx;
  const fir *f = j->f;
  lane *l = &j->b->lanes[c];
  if (!l->conv)
    return;
  cf_conv_skip_before(l->conv, f->t - prime_from(f, l->lmax, j->t0));
  const float *h = f->hist + (size_t)c * (f->hmask + 1);
  for (uint64_t t = j->t0; t < f->t;) {
    size_t m = f->t - t < STEP ? (size_t)(f->t - t) : STEP;
    for (size_t n = 0; n < m; n++)
      l->x[n] = h[(t + n) & f->hmask];
    cf_conv_process(l->conv, l->x, m, l->y);
    t += m;
  }
}

cf_status cf_cpu_fir_set_prepared(void *impl, void *prepared, uint64_t t0,
                                  int reset, size_t crossfade, void **dead,
                                  unsigned *ndead, unsigned cap)
{
  fir *f = impl;
  bank *b = prepared;
  if (reset) {
    /* the stream began again at 0: the history before it counts no
     * more (prime() reads none of it); the kernel spectra serve */
    for (unsigned c = 0; c < f->cin; c++)
      if (b->lanes[c].conv)
        cf_conv_reset(b->lanes[c].conv);
    t0 = 0;
  }
  if (t0 > f->t)
    return cf_fail(CF_E_INVALID,
                   "set_prepared: the swap was built on "
                   "%llu frames, the engine has processed %llu",
                   (unsigned long long)t0, (unsigned long long)f->t);
  if (f->t - t0 > f->hmask + 1 - STEP)
    return CF_E_STATE; /* the history since t0 is gone: swap as usual */
  /* retired banks go to the caller, to free outside this thread (a bank
   * of 131072 taps takes 0.3 ms to give back to the system); the spare
   * stays for plain swaps */
  cf_swaps_take_retired(&f->banks, dead, ndead, cap);
  free_retired(f);
  cf_status s = cf_swaps_reserve(&f->banks);
  if (s != CF_OK)
    return s;
  catchup_job job = {f, b, t0};
  cf_fpenv env = cf_fpenv_enter();
  if ((double)(f->t - t0) * b->cost >= PARALLEL_MIN_NS)
    cf_pool_run(f->pool, catchup_lane, &job, f->cin);
  else
    for (unsigned c = 0; c < f->cin; c++)
      catchup_lane(&job, c);
  cf_fpenv_leave(env);
  cf_swaps_push(&f->banks, b, f->t, crossfade);
  return CF_OK;
}

void cf_cpu_fir_preload(void *impl, const float *in, size_t n)
{
  fir *f = impl;
  for (size_t i = 0; i < n; i++, f->t++)
    for (unsigned c = 0; c < f->cin; c++)
      f->hist[(size_t)c * (f->hmask + 1) + (f->t & f->hmask)] =
          in[i * f->cin + c];
  publish(f);
}

cf_status cf_cpu_fir_prepare(const cf_audio_config *cfg, unsigned out_channels,
                             size_t latency, cf_algorithm algo,
                             const cf_kernel *k)
{
  fir f = {.cin = cfg->channels,
           .cout = out_channels,
           .block = cfg->block_size,
           .latency = latency,
           .algo = algo};
  lane_kernels r;
  cf_conv_plan pl;
  for (unsigned in = 0; in < f.cin; in++) {
    if (!lane_route(&f, k, in, &r, &pl))
      continue;
    for (unsigned s = 0; s < pl.nstages; s++) {
      const cf_fft *fft;
      cf_status st =
          cf_fft_get(cf_conv_fft_size(pl.st[s].p), CF_FFT_MEASURE, &fft);
      if (st != CF_OK)
        return st;
    }
  }
  return CF_OK;
}

static void fir_describe(const void *impl, char *buf, size_t n)
{
  const fir *f = impl;
  snprintf(buf, n, "%s, block %zu, latency %zu, %u thread%s, %s",
           bk(f, f->banks.n - 1)->plan, f->block, f->latency,
           cf_pool_threads(f->pool), cf_pool_threads(f->pool) == 1 ? "" : "s",
           cf_dsp_get()->name);
}

static void fir_destroy(void *impl)
{
  fir *f = impl;
  if (!f)
    return;
  for (unsigned k = 0; k < f->banks.n; k++)
    bank_free(bk(f, k), f->cin);
  free_retired(f);
  bank_free(f->spare, f->cin);
  cf_swaps_free(&f->banks);
  cf_pool_free(f->pool);
  cf_free(f->hist);
  cf_free(f->zeros);
  cf_free(f->xs);
  free(f);
}

static const cf_backend_ops fir_ops = {
    fir_process, fir_latency, fir_tail, fir_drain, fir_reset,
    fir_set_kernel, fir_describe, fir_destroy,
};

int cf_cpu_fir_is(const cf_backend_ops *ops) { return ops == &fir_ops; }

static unsigned max_kernels_per_lane(const cf_kernel *k, unsigned cin,
                                     unsigned cout)
{
  unsigned best = 1;
  for (unsigned i = 0; i < cin; i++) {
    unsigned n = 0;
    for (unsigned o = 0; o < cout; o++)
      n += cf_kernel_route(k, o, i) >= 0;
    if (n > best)
      best = n;
  }
  return best;
}

cf_status cf_cpu_fir_new(const cf_audio_config *cfg, const cf_kernel *k,
                         unsigned cout, cf_fft_mode fft_mode, size_t latency,
                         void **impl, const cf_backend_ops **ops)
{
  fir *f = calloc(1, sizeof *f);
  if (!f)
    return cf_fail(CF_E_NOMEM, "engine: out of memory");
  f->cin = cfg->channels;
  f->cout = cout;
  f->block = cfg->block_size;
  f->algo = cfg->algorithm;
  f->fft_mode = fft_mode;
  size_t lmax = cf_kernel_max_len(k);
  f->latency = latency != CF_CPU_LATENCY_PLAN
                   ? latency
                   : cf_plan_latency(lmax, max_kernels_per_lane(k, f->cin, cout),
                                     f->block, f->algo);
  size_t keep = cfg->swap_history > lmax ? cfg->swap_history : lmax;
  /* The front bounds swap_history (CF_AUDIO_MAX_SWAP_HISTORY) and the
   * latency; still, a size that wraps or doubles past SIZE_MAX is no
   * memory rather than a short ring or an endless loop. */
  size_t hcap = 1, need = 0, bytes = 0;
  int huge = __builtin_add_overflow(keep, f->latency + STEP, &need) ||
             need > SIZE_MAX / 2 + 1;
  while (!huge && hcap < need)
    hcap <<= 1;
  huge = huge || __builtin_mul_overflow((size_t)f->cin * sizeof(float), hcap,
                                        &bytes);
  f->hmask = hcap - 1;
  f->hist = huge ? NULL : cf_alloc(bytes);
  f->zeros = cf_alloc((size_t)f->cin * STEP * sizeof(float));
  if (f->cin >= 3)
    f->xs = cf_alloc((size_t)f->cin * STEP * sizeof(float));
  unsigned threads = cfg->threads ? cfg->threads : cf_cpu_count();
  if (threads > f->cin)
    threads = f->cin; /* lanes are the unit of parallel work */
  cf_status s = CF_OK;
  if (!f->hist || !f->zeros || (f->cin >= 3 && !f->xs))
    s = cf_fail(CF_E_NOMEM, "engine: out of memory for %zu frames of "
                "history", huge ? keep : hcap);
  if (s == CF_OK)
    s = cf_pool_new(threads, &f->pool);
  bank *b0 = NULL;
  if (s == CF_OK)
    s = bank_new(f, k, 0, &b0);
  if (s == CF_OK && (s = cf_swaps_init(&f->banks, b0)) != CF_OK)
    bank_free(b0, f->cin);
  if (s != CF_OK) {
    fir_destroy(f);
    return s;
  }
  f->fft_mode = CF_FFT_QUICK; /* from now on the stream may be running */
  *impl = f;
  *ops = &fir_ops;
  return CF_OK;
}
