/* The streaming convolver: a direct head (taps [0, head), SIMD FIR read
 * `latency` samples back) plus uniform partition stages (overlap-save with
 * a frequency-domain delay line each). Stage outputs accumulate in a ring
 * indexed by output time; the ring is read and cleared as output leaves.
 *
 * Time: t counts input samples. Every `blk` samples (the smallest stage's
 * partition) the stages whose partition divides t run. A stage with q = 0
 * produces y[t - p, t) (it includes the block just ended, so the plan's
 * latency is p - 1); a stage with q >= 1 produces y[t + (q-1)p, t + qp)
 * ahead of time. Output sample n is y[n - latency].
 *
 * A stage with q >= 2 and p > blk is not needed before the p samples
 * after t have come: its work (forward transform at t, then per kernel
 * the multiply-adds and the inverse) is spread over the p / blk small
 * blocks until its next block, done by a cost estimate, so that a call
 * costs about the mean, not the whole of a long partition's block at
 * once (QA: 5-15 ms every 256th call of 128 frames, 1.3 ms each, with a
 * 10 s impulse response). */
#include "conv.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/error_internal.h"
#include "dsp.h"
#include "fft.h"

typedef struct stage {
  cf_stage_plan pl;
  const cf_fft *fft;
  size_t nf;           /* FFT size (cf_conv_fft_size(pl.p), >= 2 pl.p) */
  size_t nbs;          /* complex bins per spectrum, padded to 16 */
  float *fdl;          /* pl.n interleaved input spectra, 2 * nbs floats */
  size_t pos;          /* slot of the newest spectrum */
  const float **xs;    /* newest-first slot pointers, for cmac */
  const float **h;     /* k * pl.n kernel spectrum pointers */
  size_t *nk;          /* partitions kernel i has in this stage */
  float *hbuf;
  /* spread (q >= 2, p > blk): the block under way */
  int spread, busy;
  float *acc;          /* its kernel's sum so far (2 * nbs) */
  unsigned ki;         /* the kernel being done */
  size_t pj;           /* its partitions summed so far */
  uint64_t from;       /* the block's first y index */
  double cost, done;   /* the block's work (estimate) and what is done */
  size_t beat, beats;  /* small blocks of it gone, and in all (p / blk) */
  double part_cost, fft_cost;
} stage;

struct cf_conv {
  cf_conv_plan pl;
  const cf_dsp *dsp;
  unsigned k;
  size_t *headk;       /* head taps kernel i has (<= pl.head) */
  float **hrev;        /* reversed head taps */
  size_t blk, fill;
  uint64_t t;
  uint64_t skip;       /* y indices below this are not wanted */
  float *xbuf;         /* input history: keep samples before xpos */
  size_t xcap, xpos, keep;
  stage st[CF_MAX_STAGES];
  float *ring;         /* k rings of rcap output samples */
  size_t rmask;
  float *win, *acc, *tmp;
};

static size_t pow2_at_least(size_t n)
{
  size_t p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

size_t cf_conv_fft_size(size_t p)
{
  return 2 * cf_fft_smooth(p);
}

void cf_conv_free(cf_conv *c)
{
  if (!c)
    return;
  for (unsigned s = 0; s < c->pl.nstages; s++) {
    cf_free(c->st[s].fdl);
    free(c->st[s].xs);
    free(c->st[s].h);
    free(c->st[s].nk);
    cf_free(c->st[s].hbuf);
    cf_free(c->st[s].acc);
  }
  for (unsigned i = 0; c->hrev && i < c->k; i++)
    free(c->hrev[i]);
  free(c->hrev);
  free(c->headk);
  cf_free(c->xbuf);
  cf_free(c->ring);
  cf_free(c->win);
  cf_free(c->acc);
  cf_free(c->tmp);
  free(c);
}

/* Partitions kernel i (len taps) has in a stage. */
static size_t stage_parts(const cf_stage_plan *pl, size_t len)
{
  size_t first = pl->q * pl->p;
  size_t parts = len > first ? (len - first + pl->p - 1) / pl->p : 0;
  return parts < pl->n ? parts : pl->n;
}

/* Kernel spectra of one stage: partition j of kernel i holds taps
 * [(q + j) p, (q + j + 1) p) at the start of an nf frame (nf >= 2p),
 * scaled by 1 / nf so the unnormalised inverse FFT comes out right. */
static void stage_fill(cf_conv *c, stage *st, const float *const *taps,
                       const size_t *lens)
{
  size_t p = st->pl.p, n = st->pl.n, nf = st->nf;
  for (unsigned i = 0; i < c->k; i++)
    for (size_t j = 0; j < st->nk[i]; j++) {
      size_t from = (st->pl.q + j) * p;
      size_t cnt = lens[i] - from < p ? lens[i] - from : p;
      memset(c->win, 0, nf * sizeof(float));
      for (size_t x = 0; x < cnt; x++)
        c->win[x] = taps[i][from + x] / (float)nf;
      cf_fft_forward(st->fft, c->win, (float *)st->h[i * n + j]);
    }
}

static cf_status stage_init(cf_conv *c, stage *st, const float *const *taps,
                            const size_t *lens, cf_fft_mode mode)
{
  size_t p = st->pl.p, n = st->pl.n;
  st->nf = cf_conv_fft_size(p);
  size_t nb = st->nf / 2 + 1;
  cf_status s = cf_fft_get(st->nf, mode, &st->fft);
  if (s != CF_OK)
    return s;
  st->nbs = round16(nb);
  st->fdl = cf_alloc(n * 2 * st->nbs * sizeof(float));
  st->xs = calloc(n, sizeof *st->xs);
  st->h = calloc((size_t)c->k * n, sizeof *st->h);
  st->nk = calloc(c->k, sizeof *st->nk);
  size_t total = 0;
  for (unsigned i = 0; st->nk && i < c->k; i++)
    total += st->nk[i] = stage_parts(&st->pl, lens[i]);
  st->hbuf = cf_alloc(total * 2 * st->nbs * sizeof(float));
  /* spread over its small blocks, by the plan's cost model (only the
   * proportions count) */
  st->spread = st->pl.q >= 2 && p > c->blk;
  if (st->spread) {
    st->acc = cf_alloc(2 * st->nbs * sizeof(float));
    st->beats = p / c->blk;
    st->fft_cost = cf_plan_fft_ns(st->nf);
    st->part_cost = cf_plan_cmac_ns(p, nb);
  }
  if (!st->fdl || !st->xs || !st->h || !st->nk || !st->hbuf ||
      (st->spread && !st->acc))
    return cf_fail(CF_E_NOMEM, "convolver: out of memory for a stage of "
                   "%zu x %zu", p, n);
  float *slot = st->hbuf;
  for (unsigned i = 0; i < c->k; i++)
    for (size_t j = 0; j < st->nk[i]; j++, slot += 2 * st->nbs)
      st->h[i * n + j] = slot;
  if (taps)
    stage_fill(c, st, taps, lens);
  return CF_OK;
}

/* Reversed head taps of kernel i. */
static void head_fill(cf_conv *c, unsigned i, const float *taps)
{
  for (size_t j = 0; j < c->headk[i]; j++)
    c->hrev[i][j] = taps[c->headk[i] - 1 - j];
}

cf_status cf_conv_new(const cf_conv_plan *pl, const float *const *taps,
                      const size_t *lens, unsigned k, size_t max_chunk,
                      cf_fft_mode mode, cf_conv **out)
{
  *out = NULL;
  cf_conv *c = calloc(1, sizeof *c);
  if (!c)
    return cf_fail(CF_E_NOMEM, "convolver: out of memory");
  c->pl = *pl;
  c->dsp = cf_dsp_get();
  c->k = k;
  size_t pmax = 0, nfmax = 0, ahead = 0;
  for (unsigned s = 0; s < pl->nstages; s++) {
    if (pl->st[s].p > pmax)
      pmax = pl->st[s].p;
    if (cf_conv_fft_size(pl->st[s].p) > nfmax)
      nfmax = cf_conv_fft_size(pl->st[s].p);
    size_t reach = (pl->st[s].q + 1) * pl->st[s].p;
    if (reach > ahead)
      ahead = reach;
  }
  c->blk = pl->nstages ? pl->st[0].p : max_chunk;
  c->keep = nfmax > pl->latency + pl->head ? nfmax : pl->latency + pl->head;
  size_t room = c->keep;
  if (room < c->blk)
    room = c->blk;
  if (room < max_chunk)
    room = max_chunk;
  c->xcap = c->keep + room;
  c->xbuf = cf_alloc(c->xcap * sizeof(float));
  c->headk = calloc(k ? k : 1, sizeof *c->headk);
  c->hrev = calloc(k ? k : 1, sizeof *c->hrev);
  cf_status s = CF_OK;
  if (!c->xbuf || !c->headk || !c->hrev) {
    s = cf_fail(CF_E_NOMEM, "convolver: out of memory for %zu samples of "
                "history", c->xcap);
    goto fail;
  }
  for (unsigned i = 0; i < k; i++) {
    size_t hk = lens[i] < pl->head ? lens[i] : pl->head;
    c->headk[i] = hk;
    if (!hk)
      continue;
    if (!(c->hrev[i] = malloc(hk * sizeof(float)))) {
      s = cf_fail(CF_E_NOMEM, "convolver: out of memory for %zu taps", hk);
      goto fail;
    }
    if (taps)
      head_fill(c, i, taps[i]);
  }
  if (pl->nstages) {
    size_t rcap = pow2_at_least(ahead + pl->latency + 2 * c->blk);
    c->rmask = rcap - 1;
    c->ring = cf_alloc((size_t)k * rcap * sizeof(float));
    c->win = cf_alloc(nfmax * sizeof(float));
    c->acc = cf_alloc(2 * round16(nfmax / 2 + 1) * sizeof(float));
    c->tmp = cf_alloc(nfmax * sizeof(float));
    if (!c->ring || !c->win || !c->acc || !c->tmp) {
      s = cf_fail(CF_E_NOMEM, "convolver: out of memory for partitions of "
                  "up to %zu", pmax);
      goto fail;
    }
    for (unsigned i = 0; i < pl->nstages && s == CF_OK; i++) {
      c->st[i].pl = pl->st[i];
      s = stage_init(c, &c->st[i], taps, lens, mode);
    }
    if (s != CF_OK)
      goto fail;
  }
  cf_conv_reset(c);
  *out = c;
  return CF_OK;
fail:
  cf_conv_free(c);
  return s;
}

int cf_conv_fits(const cf_conv *c, const cf_conv_plan *pl, const size_t *lens,
                 unsigned k)
{
  if (k != c->k || pl->nstages != c->pl.nstages || pl->head != c->pl.head ||
      pl->latency != c->pl.latency || pl->block != c->pl.block)
    return 0;
  for (unsigned s = 0; s < pl->nstages; s++)
    if (pl->st[s].p != c->pl.st[s].p || pl->st[s].q != c->pl.st[s].q ||
        pl->st[s].n != c->pl.st[s].n)
      return 0;
  for (unsigned i = 0; i < k; i++) {
    if ((lens[i] < pl->head ? lens[i] : pl->head) != c->headk[i])
      return 0;
    for (unsigned s = 0; s < pl->nstages; s++)
      if (stage_parts(&pl->st[s], lens[i]) != c->st[s].nk[i])
        return 0;
  }
  return 1;
}

void cf_conv_reload(cf_conv *c, const float *const *taps, const size_t *lens)
{
  for (unsigned i = 0; i < c->k; i++)
    head_fill(c, i, taps[i]);
  for (unsigned s = 0; s < c->pl.nstages; s++)
    stage_fill(c, &c->st[s], taps, lens);
  cf_conv_reset(c);
}

int cf_conv_hasty(const cf_conv *c)
{
  for (unsigned s = 0; s < c->pl.nstages; s++)
    if (cf_fft_hasty(c->st[s].fft))
      return 1;
  return 0;
}

void cf_conv_reset(cf_conv *c)
{
  memset(c->xbuf, 0, c->xcap * sizeof(float));
  c->xpos = c->keep;
  c->fill = 0;
  c->t = 0;
  c->skip = 0;
  for (unsigned s = 0; s < c->pl.nstages; s++) {
    stage *st = &c->st[s];
    memset(st->fdl, 0, st->pl.n * 2 * st->nbs * sizeof(float));
    st->pos = 0;
    st->busy = 0;
  }
  if (c->ring)
    memset(c->ring, 0, (size_t)c->k * (c->rmask + 1) * sizeof(float));
}

/* Add v[0..n) into ring r at output times from..from+n (wrapping). */
static void ring_add(float *r, size_t mask, uint64_t from, const float *v,
                     size_t n)
{
  size_t i0 = (size_t)(from & mask), first = mask + 1 - i0;
  if (first > n)
    first = n;
  for (size_t i = 0; i < first; i++)
    r[i0 + i] += v[i];
  for (size_t i = first; i < n; i++)
    r[i - first] += v[i];
}

/* out[0..n) += ring at times from..from+n, clearing what was read. */
static void ring_take(float *r, size_t mask, uint64_t from, float *out,
                      size_t n)
{
  while (n) {
    size_t i0 = (size_t)(from & mask), run = mask + 1 - i0;
    if (run > n)
      run = n;
    for (size_t i = 0; i < run; i++)
      out[i] += r[i0 + i];
    memset(r + i0, 0, run * sizeof(float));
    out += run;
    from += run;
    n -= run;
  }
}

/* A block of the stage begins (t a multiple of p): its input's spectrum
 * into the delay line; the block's outputs to make from t - p + qp (from
 * *from), or none wanted (0). */
static int stage_begin(cf_conv *c, stage *st, uint64_t *from)
{
  size_t p = st->pl.p, n = st->pl.n, nbs = st->nbs, nf = st->nf;
  st->pos = st->pos + 1 == n ? 0 : st->pos + 1;
  /* The blocks reading this spectrum run at t .. t + (n - 1) p and give
   * y up to (their time) + qp: none wanted, no transform. */
  if (c->t + (n - 1 + st->pl.q) * p <= c->skip)
    return 0;
  /* the last nf inputs; of their circular convolution with p taps, the
   * last p outputs are free of wrap-around (nf >= 2p) */
  memcpy(c->win, c->xbuf + c->xpos - nf, nf * sizeof(float));
  float *slot = st->fdl + st->pos * 2 * nbs;
  cf_fft_forward(st->fft, c->win, slot);
  for (size_t j = 0, i = st->pos; j < n; j++, i = i ? i - 1 : n - 1)
    st->xs[j] = st->fdl + i * 2 * nbs;
  /* This stage's block: y[(j + q) p, ...) with j = t / p - 1. */
  *from = c->t - p + st->pl.q * p;
  /* its spectrum is kept for later blocks; its outputs may not be */
  return *from + p > c->skip;
}

/* Kernel i's block from its sum acc. */
static void stage_out(cf_conv *c, stage *st, unsigned i, float *acc,
                      uint64_t from)
{
  size_t p = st->pl.p, nf = st->nf;
  cf_fft_inverse(st->fft, acc, c->tmp);
  ring_add(c->ring + (size_t)i * (c->rmask + 1), c->rmask, from,
           c->tmp + nf - p, p);
}

static void stage_run(cf_conv *c, stage *st)
{
  uint64_t from;
  if (!stage_begin(c, st, &from))
    return;
  size_t n = st->pl.n, nbs = st->nbs;
  for (unsigned i = 0; i < c->k; i++) {
    if (!st->nk[i])
      continue;
    memset(c->acc, 0, 2 * nbs * sizeof(float));
    c->dsp->cmac(c->acc, st->xs, st->h + (size_t)i * n, st->nk[i], nbs);
    stage_out(c, st, i, c->acc, from);
  }
}

/* A spread stage's block: its work until `target` (of st->cost) is done
 * (past it by at most one transform or one sum's partitions). */
static void spread_work(cf_conv *c, stage *st, double target)
{
  size_t n = st->pl.n, nbs = st->nbs;
  while (st->busy && st->done < target) {
    if (st->ki == c->k) {
      st->busy = 0;
      break;
    }
    size_t left = st->nk[st->ki] - st->pj;
    if (left) {
      /* as many partitions as the target asks, at least one */
      double want = (target - st->done) / st->part_cost;
      size_t cnt = want < 1 ? 1 : want >= (double)left ? left : (size_t)ceil(want);
      if (st->pj == 0)
        memset(st->acc, 0, 2 * nbs * sizeof(float));
      c->dsp->cmac(st->acc, st->xs + st->pj,
                   st->h + (size_t)st->ki * n + st->pj, cnt, nbs);
      st->pj += cnt;
      st->done += (double)cnt * st->part_cost;
      continue;
    }
    if (st->nk[st->ki]) {
      stage_out(c, st, st->ki, st->acc, st->from);
      st->done += st->fft_cost;
    }
    st->ki++;
    st->pj = 0;
  }
}

/* At a small block's end: a spread stage finishes its block when the
 * next begins (nothing left by then, normally), and does its share. */
static void spread_beat(cf_conv *c, stage *st)
{
  if (c->t % st->pl.p == 0) {
    spread_work(c, st, INFINITY);
    uint64_t from;
    if (stage_begin(c, st, &from)) {
      st->busy = 1;
      st->from = from;
      st->ki = 0;
      st->pj = 0;
      st->beat = 0;
      st->done = st->fft_cost; /* the forward transform, done */
      st->cost = st->fft_cost;
      for (unsigned i = 0; i < c->k; i++)
        if (st->nk[i])
          st->cost += (double)st->nk[i] * st->part_cost + st->fft_cost;
    }
  }
  if (st->busy) {
    st->beat++;
    spread_work(c, st, st->beat >= st->beats
                           ? INFINITY
                           : st->cost * (double)st->beat / (double)st->beats);
  }
}

/* Write outputs for input times t0..t0+m whose samples start at xbuf[seg]. */
static void emit(cf_conv *c, size_t seg, uint64_t t0, size_t m,
                 float *const *out, size_t at)
{
  size_t d = c->pl.latency;
  for (unsigned i = 0; i < c->k; i++) {
    float *o = out[i] + at;
    size_t hk = c->headk[i];
    if (hk && t0 + m > d + c->skip) /* some of these outputs are wanted */
      c->dsp->fir(c->xbuf + seg - d - hk + 1, c->hrev[i], hk, o, m);
    else
      memset(o, 0, m * sizeof(float));
    if (!c->pl.nstages)
      continue;
    /* Output n is y[n - d]; nothing precedes time 0. */
    size_t skip = t0 < d ? (size_t)(d - t0 < m ? d - t0 : m) : 0;
    ring_take(c->ring + (size_t)i * (c->rmask + 1), c->rmask,
              t0 + skip - d, o + skip, m - skip);
  }
}

void cf_conv_skip_before(cf_conv *c, uint64_t y)
{
  c->skip = y;
}

/* x: the input, copied into xbuf chunk by chunk; NULL: it is there already
 * (cf_conv_stage). */
static void process(cf_conv *c, const float *x, size_t m, float *const *out)
{
  size_t done = 0;
  while (done < m) {
    size_t t = m - done;
    if (c->pl.nstages && t > c->blk - c->fill)
      t = c->blk - c->fill;
    if (x && c->xpos + t > c->xcap) {
      memmove(c->xbuf, c->xbuf + c->xpos - c->keep, c->keep * sizeof(float));
      c->xpos = c->keep;
    }
    size_t seg = c->xpos;
    uint64_t t0 = c->t;
    if (x)
      memcpy(c->xbuf + seg, x + done, t * sizeof(float));
    c->xpos += t;
    c->t += t;
    if (c->pl.nstages && (c->fill += t) == c->blk) {
      c->fill = 0;
      for (unsigned s = 0; s < c->pl.nstages; s++)
        if (c->st[s].spread)
          spread_beat(c, &c->st[s]);
        else if (c->t % c->st[s].pl.p == 0)
          stage_run(c, &c->st[s]);
    }
    emit(c, seg, t0, t, out, done);
    done += t;
  }
}

void cf_conv_process(cf_conv *c, const float *x, size_t m, float *const *out)
{
  process(c, x, m, out);
}

float *cf_conv_stage(cf_conv *c, size_t m)
{
  /* room for max_chunk after the kept history (cf_conv_new) */
  if (c->xpos + m > c->xcap) {
    memmove(c->xbuf, c->xbuf + c->xpos - c->keep, c->keep * sizeof(float));
    c->xpos = c->keep;
  }
  return c->xbuf + c->xpos;
}

void cf_conv_process_staged(cf_conv *c, size_t m, float *const *out)
{
  process(c, NULL, m, out);
}
