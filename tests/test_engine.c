/* The 1D streaming engine against its contract (include/cudafilter/engine.h).
 *
 * Every test runs once per variant: each available backend (CPU always, CUDA
 * where a device exists; an unavailable one prints "skipped: <backend>:
 * <reason>") and, on the CPU, each forced algorithm (direct, fft-uniform,
 * fft-nonuniform, auto). Every output is compared with the float64 naive
 * reference of tests/ref.c, on random kernels, random inputs and random
 * chunkings; seeds are printed and every failure prints its case.
 *
 * Environment: CF_TEST_SEED (replay), CF_TEST_VARIANT (run only variants
 * whose name contains it, e.g. "cpu-direct"), CF_TEST_FILTER and
 * CF_TEST_SKIP (cmocka test name patterns to run / to leave out). */
#include <cudafilter/engine.h>
#include <cudafilter/kernel.h>
#include <cudafilter/kernel2d.h>
#include <cudafilter/video.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "ref.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

/* ------------------------------------------------------------------ */
/* Variants                                                             */

typedef struct variant {
  const char *name;
  cf_backend backend;
  cf_algorithm algo;
  unsigned id;
  unsigned depth; /* pipeline_depth */
} variant;

static const variant variants[] = {
  {"cpu-direct", CF_BACKEND_CPU, CF_ALGO_DIRECT, 1, 0},
  {"cpu-fft-uniform", CF_BACKEND_CPU, CF_ALGO_FFT_UNIFORM, 2, 0},
  {"cpu-fft-nonuniform", CF_BACKEND_CPU, CF_ALGO_FFT_NONUNIFORM, 3, 0},
  {"cpu-auto", CF_BACKEND_CPU, CF_ALGO_AUTO, 4, 0},
  {"cuda-auto", CF_BACKEND_CUDA, CF_ALGO_AUTO, 5, 0},
  /* the CUDA paths forced: kernels/fir1d.cu (latency 0) and the uniform
   * overlap-save of kernels/ols.cu (latency block - 1) */
  {"cuda-direct", CF_BACKEND_CUDA, CF_ALGO_DIRECT, 6, 0},
  {"cuda-fft-uniform", CF_BACKEND_CUDA, CF_ALGO_FFT_UNIFORM, 7, 0},
  /* across calls: D blocks more latency, the CPU's a delay in the front
   * (src/engine/engine.c), CUDA's blocks left running on the device
   * between calls (src/cuda/fir.c) */
  {"cpu-auto-depth3", CF_BACKEND_CPU, CF_ALGO_AUTO, 8, 3},
  {"cuda-auto-depth2", CF_BACKEND_CUDA, CF_ALGO_AUTO, 9, 2},
};

static const variant *V;   /* the variant running now */

/* Work limits (multiply-accumulates), chosen so that the whole suite stays
 * under ~60 s in a -O2 build on 2 cores. */
#define FULL_REF_MACS 3e7     /* reference over every output up to this */
#define SAMPLE_REF_MACS 1e8   /* else sampled indices costing about this */
#define ENGINE_WORK 4e8       /* rough engine work per case */
#define MUST_MAX 400          /* boundary indices checked per region */
#define GUARD 8               /* sentinel frames after every write */
#define SENTINEL (-12345.6789f)
#define MAXK 64
#define MAXCHUNKS 4096

/* 61 and 1009 (primes): the FFT paths round their transforms up past
 * 2 x block (src/cpu/conv.c, cf_conv_fft_size) */
static const unsigned blocks[] = {1,  2,   3,   7,    32,   61,
                                  64, 100, 256, 1009, 1024, 4096};
#define NBLOCKS (sizeof blocks / sizeof *blocks)

static int is_direct(void) { return V->algo == CF_ALGO_DIRECT; }
static int is_fft(void)
{
  return V->algo == CF_ALGO_FFT_UNIFORM || V->algo == CF_ALGO_FFT_NONUNIFORM;
}
static double tol(void) { return is_direct() ? 1e-6 : 2e-5; }
/* Longest kernel a case may use: forced direct costs O(L^2) to drain. */
static size_t long_len_max(void) { return is_direct() ? 32768 : 131072; }

/* ------------------------------------------------------------------ */
/* Failure reporting                                                    */


/* Each test draws from its own stream: seed, variant and test number. */
static void test_rng(ref_rng *r, unsigned test)
{
  ref_rng_init(r, check_seed * 1000003ull + V->id * 7919ull + test);
}

/* ------------------------------------------------------------------ */
/* Kernel sets with the stream's shape                                  */

typedef struct kset {
  cf_routing routing;
  unsigned outs, ins, count; /* stream channels; count = kernels */
  size_t len[MAXK];
  float *h[MAXK];
} kset;

static void kset_init(kset *k, cf_routing routing, unsigned outs,
                      unsigned ins)
{
  memset(k, 0, sizeof *k);
  k->routing = routing;
  k->outs = outs;
  k->ins = ins;
  k->count = routing == CF_ROUTING_MATRIX ? outs * ins
             : routing == CF_ROUTING_PER_CHANNEL ? outs : 1;
  assert_true(k->count <= MAXK);
}

static void kset_free(kset *k)
{
  for (unsigned i = 0; i < k->count; i++)
    free(k->h[i]);
  memset(k, 0, sizeof *k);
}

static const float *kpair(const kset *k, unsigned o, unsigned i, size_t *len)
{
  unsigned idx;
  if (k->routing == CF_ROUTING_MATRIX)
    idx = o * k->ins + i;
  else if (o != i) {
    *len = 0;
    return NULL;
  } else
    idx = k->routing == CF_ROUTING_SHARED ? 0 : o;
  *len = k->len[idx];
  return k->h[idx];
}

static size_t kset_lmax(const kset *k)
{
  size_t m = 0;
  for (unsigned i = 0; i < k->count; i++)
    if (k->len[i] > m)
      m = k->len[i];
  return m;
}

static void fill_taps(ref_rng *r, float *h, size_t len)
{
  ref_rng_fill(r, h, len);
  if (len > 8 && ref_rng_u64(r) % 3 == 0) { /* a decaying IR */
    double d = 2.0 + 6.0 * ref_rng_unit(r);
    for (size_t j = 0; j < len; j++)
      h[j] *= (float)exp(-d * (double)j / (double)len);
  }
}

static void kset_set(kset *k, ref_rng *r, unsigned idx, size_t len)
{
  free(k->h[idx]);
  k->h[idx] = NULL;
  k->len[idx] = len;
  if (len) {
    k->h[idx] = xalloc(len * sizeof(float));
    fill_taps(r, k->h[idx], len);
  }
}

static cf_status kset_build(const kset *k, cf_kernel **out)
{
  unsigned o = k->routing == CF_ROUTING_SHARED ? 1 : k->outs;
  unsigned i = k->routing == CF_ROUTING_SHARED ? 1 : k->ins;
  cf_status s = cf_kernel_new(k->routing, o, i, out);
  for (unsigned j = 0; s == CF_OK && j < k->count; j++)
    if (k->len[j])
      s = cf_kernel_set(*out, j, k->h[j], k->len[j]);
  if (s != CF_OK) {
    cf_kernel_free(*out);
    *out = NULL;
  }
  return s;
}

static void kset_describe(const kset *k)
{
  add_case("%s %ux%u L=[", k->routing == CF_ROUTING_SHARED ? "shared"
           : k->routing == CF_ROUTING_PER_CHANNEL ? "per-channel" : "matrix",
           k->outs, k->ins);
  for (unsigned i = 0; i < k->count; i++)
    add_case("%s%zu", i ? "," : "", k->len[i]);
  add_case("] ");
}

/* Log-uniform in [lo, hi]. */
static size_t rand_len(ref_rng *r, size_t lo, size_t hi)
{
  double a = log((double)lo), b = log((double)hi + 1.0);
  size_t len = (size_t)exp(a + (b - a) * ref_rng_unit(r));
  return len < lo ? lo : len > hi ? hi : len;
}

/* A short-ish kernel length, with the sizes around the block now and then. */
static size_t rand_len_short(ref_rng *r, size_t hi, unsigned block)
{
  switch (ref_rng_u64(r) % 10) {
  case 0: return 1;
  case 1: return block < hi ? block : hi;
  case 2: return block + 1 < hi ? block + 1 : hi;
  case 3: return 2 * block - 1 < hi && block > 1 ? 2 * block - 1 : 2;
  default: return rand_len(r, 1, hi);
  }
}

static unsigned rand_block(ref_rng *r)
{
  return blocks[ref_rng_u64(r) % NBLOCKS];
}

/* What every block costs whatever its size, in engine_work's units: on
 * the CUDA backend a pass through the pipeline (copies, launches, FFTs,
 * events); on the emulated device those run one thread at a time, and a
 * 1-frame block with 2028 taps on the FFT path took 12 ms a block under
 * ASan (127 s for one case of test_drain_reuse, seed 1795834870). */
static double block_work(const kset *k, size_t n, unsigned block)
{
  double frames = (double)n + (double)kset_lmax(k) + block;
  return frames / block * (V->backend == CF_BACKEND_CUDA ? 2e5 : 1e3);
}

/* A rough cost of the engine's work for n frames (per variant). */
static double engine_work(const kset *k, size_t n, unsigned block)
{
  double frames = (double)n + (double)kset_lmax(k) + block, direct = 0,
         fft = 0;
  double per_block = block_work(k, n, block);
  for (unsigned i = 0; i < k->count; i++) {
    double len = (double)k->len[i], mult = 1.0;
    if (k->routing == CF_ROUTING_SHARED)
      mult = k->ins;
    if (!k->len[i])
      continue;
    direct += mult * frames * len;
    fft += mult * frames * 4.0 * ceil(len / block) * (block + 1.0) / block;
  }
  fft += frames * (k->ins + k->outs) * 10.0 * log2(2.0 * block);
  if (is_direct())
    return direct + per_block;
  if (is_fft())
    return fft + per_block;
  return (direct < fft ? direct : fft) + per_block;
}

/* CF_TEST_WORK, 0..1 (default 1; 0.5 for this suite under the sanitizers,
 * whose plain run has the full cases): the emulated device (suite cudaemu)
 * runs the kernels one thread at a time, tens of times slower than the
 * CPU backend, and sets it lower so that its suite keeps inside CI's
 * time, an ASan build included. It scales ENGINE_WORK and the lengths
 * of test_swap_long. */
static double work_factor(void) { return check_work(); }

static double work_cap(void) { return ENGINE_WORK * work_factor(); }

/* Shrink n, then grow the block (on the direct path only where the
 * blocks themselves cost: there the block does not change the
 * arithmetic), until the case is affordable. */
static void fit_work(const kset *k, size_t *n, unsigned *block)
{
  while (engine_work(k, *n, *block) > work_cap()) {
    if (*n > 512)
      *n /= 2;
    else if ((!is_direct() || block_work(k, *n, *block) > work_cap() / 2) &&
             *block < 4096) {
      unsigned b = *block;
      for (size_t i = 0; i < NBLOCKS; i++)
        if (blocks[i] > b) {
          *block = blocks[i];
          break;
        }
    } else
      break;
  }
}

/* The longest kernel a test draws, hi on the CPU backend; on the
 * emulated device (CF_TEST_WORK < 1) scaled by the square root of the
 * work factor, as a case's work grows with L^2 on the direct path (in
 * test_swap under ASan, seed 3, a swap from 7113 to 7912 taps on three
 * channels took 5.4 s, 28 times the cap, of the test's 24 s). */
static size_t len_limit(size_t hi)
{
  size_t l = (size_t)((double)hi * sqrt(work_factor()));
  return l < 256 ? 256 : l;
}

/* fit_work for a stream alone (the chunk tests), whose kernels may also
 * be cut short on the emulated device (CF_TEST_WORK < 1): there a
 * kernel's length alone can cost past the cap, whatever n and the block
 * (the direct path reads every tap for L_max frames of ring-out: one
 * case of 14818 taps on 7 channels took 17 s of test_chunks_shared's
 * 50 s under ASan, seed 4, 100 times the cap). The longest kernels are
 * halved, keeping their first taps, until the case fits or they are 256
 * taps; the plain suites keep every length they drew. */
static void fit_stream(kset *k, size_t *n, unsigned *block)
{
  fit_work(k, n, block);
  while (work_factor() < 1 && engine_work(k, *n, *block) > work_cap()) {
    size_t lmax = kset_lmax(k);
    if (lmax <= 256)
      break;
    for (unsigned i = 0; i < k->count; i++)
      if (k->len[i] > lmax / 2)
        k->len[i] = (k->len[i] + 1) / 2;
  }
}

static size_t rand_frames(ref_rng *r, size_t lmax, unsigned block)
{
  switch (ref_rng_u64(r) % 10) {
  case 0: return 0;
  case 1:
  case 2: return lmax > 1 ? ref_rng_range(r, 1, lmax - 1) : 1;
  case 3: return ref_rng_range(r, 1, 3 * (size_t)block + 2);
  default: return ref_rng_range(r, 1, 3 * (lmax + block) + 4000);
  }
}

/* ------------------------------------------------------------------ */
/* Inputs                                                               */

typedef struct input {
  unsigned ch;
  size_t n;
  float *x;      /* interleaved n * ch */
  float *xp[CF_MAX_CHANNELS]; /* planar copies for the reference */
} input;

static void input_make(input *in, ref_rng *r, unsigned ch, size_t n)
{
  memset(in, 0, sizeof *in);
  assert_true(ch <= CF_MAX_CHANNELS);
  in->ch = ch;
  in->n = n;
  in->x = xalloc(n * ch * sizeof(float));
  ref_rng_fill(r, in->x, n * ch);
  for (unsigned c = 0; c < ch; c++) {
    in->xp[c] = xalloc(n * sizeof(float));
    for (size_t j = 0; j < n; j++)
      in->xp[c][j] = in->x[j * ch + c];
  }
}

/* Planar view of frames [from, from + n) of `src`. */
static void input_slice(input *dst, const input *src, size_t from, size_t n)
{
  memset(dst, 0, sizeof *dst);
  dst->ch = src->ch;
  dst->n = n;
  dst->x = src->x + from * src->ch;
  for (unsigned c = 0; c < src->ch; c++)
    dst->xp[c] = src->xp[c] + from;
}

static void input_free(input *in)
{
  free(in->x);
  for (unsigned c = 0; c < in->ch; c++)
    free(in->xp[c]);
  memset(in, 0, sizeof *in);
}

/* ------------------------------------------------------------------ */
/* The expected output: a sequence of kernel sets and swaps              */

#define MODEL_STAGES 8
typedef struct model {
  unsigned nstage;      /* kernel sets in use: 1 + number of swaps */
  const kset *ks[MODEL_STAGES];
  size_t S[MODEL_STAGES], X[MODEL_STAGES]; /* swap k (k >= 1) at input
                                              frame S[k], crossfade X[k] */
  const input *in;
} model;

static double conv_o(const kset *k, const input *in, unsigned o, size_t j)
{
  double acc = 0.0;
  for (unsigned i = 0; i < k->ins; i++) {
    size_t len;
    const float *h = kpair(k, o, i, &len);
    if (len)
      acc += ref_conv_at(in->xp[i], in->n, h, len, j);
  }
  return acc;
}

/* y[j] per engine.h, the swaps settled (check_model): the last swap at or
 * before j decides, blended with the one before it while its crossfade
 * runs (crossfades never overlap). */
static double model_y(const model *m, unsigned o, size_t j)
{
  unsigned k = 0;
  for (unsigned s = 1; s < m->nstage; s++)
    if (j >= m->S[s])
      k = s;
  if (k == 0)
    return conv_o(m->ks[0], m->in, o, j);
  size_t S = m->S[k], X = m->X[k];
  double w = j >= S + X ? 1.0 : (double)(j - S + 1) / (double)(X + 1);
  double ynew = conv_o(m->ks[k], m->in, o, j);
  if (w >= 1.0)
    return ynew;
  return (1.0 - w) * conv_o(m->ks[k - 1], m->in, o, j) + w * ynew;
}

/* The size the error of y_o[j] scales with. An FFT block's rounding
 * error follows the typical size of each convolution it computes, not
 * its value at one frame, and a crossfade rounds each blended term, not
 * their (possibly cancelling) sum: so sqrt(((1-w) R_old)^2 + (w R_new)^2)
 * with R the rms of each stage's output (rms[s], from model_rms). */
static void model_rms(const model *m, unsigned o, ref_rng *r, double *rms)
{
  for (unsigned s = 0; s < m->nstage; s++) {
    double ss = 0.0;
    for (int i = 0; i < 32 && m->in->n; i++) {
      double y = conv_o(m->ks[s], m->in, o, ref_rng_range(r, 0, m->in->n - 1));
      ss += y * y;
    }
    rms[s] = sqrt(ss / 32.0);
  }
}

static double model_scale(const model *m, const double *rms, size_t j)
{
  unsigned k = 0;
  for (unsigned s = 1; s < m->nstage; s++)
    if (j >= m->S[s])
      k = s;
  size_t S = m->S[k], X = m->X[k];
  if (k == 0 || j >= S + X)
    return rms[k];
  double w = (double)(j - S + 1) / (double)(X + 1);
  double a = (1.0 - w) * rms[k - 1], b = w * rms[k];
  return sqrt(a * a + b * b);
}

static double model_cost(const model *m)
{
  double c = 1.0;
  for (unsigned s = 0; s < m->nstage; s++)
    for (unsigned i = 0; i < m->ks[s]->count; i++) {
      size_t len = m->ks[s]->len[i];
      double mult = m->ks[s]->routing == CF_ROUTING_SHARED ? m->ks[s]->ins : 1;
      c += mult * (double)(len < m->in->n ? len : m->in->n);
    }
  return c;
}

/* ------------------------------------------------------------------ */
/* Index sets                                                           */

typedef struct idxset {
  size_t *v;
  size_t n, cap;
} idxset;

static void idx_add(idxset *s, size_t t)
{
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    assert_non_null(s->v);
  }
  s->v[s->n++] = t;
}

static void idx_add3(idxset *s, size_t t)
{
  if (t)
    idx_add(s, t - 1);
  idx_add(s, t);
  idx_add(s, t + 1);
}

static int cmp_size(const void *a, const void *b)
{
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

static void idx_free(idxset *s)
{
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ */
/* Running an engine: chunks in, output collected with guard checks     */

typedef struct run {
  cf_engine *e;
  unsigned cin, cout, block;
  size_t lat, tail;
  float *out;  /* cap frames of cout, SENTINEL where not written */
  size_t cap, pos;
  idxset must; /* output indices worth checking (boundaries) */
  size_t nchunks;
} run;

static void run_start(run *ru, cf_engine *e, unsigned block, size_t frames)
{
  memset(ru, 0, sizeof *ru);
  ru->e = e;
  ru->block = block;
  ru->cin = cf_engine_in_channels(e);
  ru->cout = cf_engine_out_channels(e);
  ru->lat = cf_engine_latency(e);
  ru->tail = cf_engine_tail(e);
  ru->cap = frames + GUARD;
  ru->out = xalloc(ru->cap * ru->cout * sizeof(float));
  for (size_t i = 0; i < ru->cap * ru->cout; i++)
    ru->out[i] = SENTINEL;
}

static void run_end(run *ru)
{
  cf_engine_free(ru->e);
  free(ru->out);
  idx_free(&ru->must);
  memset(ru, 0, sizeof *ru);
}

static void check_guard(const run *ru, const char *after)
{
  for (size_t t = ru->pos; t < ru->pos + GUARD && t < ru->cap; t++)
    for (unsigned o = 0; o < ru->cout; o++)
      CHECK(ru->out[t * ru->cout + o] == SENTINEL,
            "%s wrote past its frames: output frame %zu channel %u changed",
            after, t, o);
}

/* Feed frames [0, n) of `x` (interleaved, cin channels) in a random
 * chunking; in_place copies every chunk into the output and processes it
 * there (in == out). */
static void run_feed(run *ru, ref_rng *r, const float *x, size_t n,
                     int in_place)
{
  size_t *sizes = xalloc(MAXCHUNKS * sizeof *sizes);
  size_t count = ref_chunking(r, n, ru->block, sizes, MAXCHUNKS), done = 0;
  add_case("chunks %zu [", count);
  for (size_t c = 0; c < count && c < 24; c++)
    add_case("%s%zu", c ? "," : "", sizes[c]);
  add_case("%s] ", count > 24 ? ",..." : "");
  for (size_t c = 0; c < count; c++) {
    size_t f = sizes[c];
    CHECK(ru->pos + f + GUARD <= ru->cap, "test bug: output buffer too small");
    float *out = ru->out + ru->pos * ru->cout;
    const float *in = x + done * ru->cin;
    if (in_place) {
      assert_int_equal(ru->cin, ru->cout);
      memcpy(out, in, f * ru->cin * sizeof(float));
      in = out;
    }
    cf_status st = cf_engine_process(ru->e, in, out, f);
    CHECK(st == CF_OK, "process(chunk %zu of %zu, %zu frames, at input frame "
          "%zu) returned %s: %s", c, count, f, done, cf_status_name(st),
          cf_last_error());
    idx_add3(&ru->must, ru->pos);
    done += f;
    ru->pos += f;
    check_guard(ru, "process()");
  }
  idx_add3(&ru->must, ru->pos);
  ru->nchunks += count;
  free(sizes);
}

static void run_drain(run *ru, ref_rng *r)
{
  size_t tail = cf_engine_tail(ru->e), written = (size_t)-1;
  size_t capacity = tail + ref_rng_range(r, 0, 3);
  CHECK(ru->pos + capacity + 1 <= ru->cap, "test bug: output buffer too small");
  cf_status st = cf_engine_drain(ru->e, ru->out + ru->pos * ru->cout,
                                 capacity, &written);
  CHECK(st == CF_OK, "drain(capacity %zu, tail %zu) returned %s: %s",
        capacity, tail, cf_status_name(st), cf_last_error());
  CHECK(written == tail, "drain wrote %zu frames, cf_engine_tail() said %zu",
        written, tail);
  idx_add3(&ru->must, ru->pos);
  ru->pos += written;
  idx_add3(&ru->must, ru->pos - 1);
  check_guard(ru, "drain()");
}

/* Output frames [t0, t1) (absolute) of a stream that began at output frame
 * `base` must be [latency zeros, y] with y from the model: the zeros exactly,
 * y by relative L2 per channel over every index or a sample that holds the
 * first and last few, the boundary indices and random ones. */
static void check_region(run *ru, ref_rng *r, const model *m, size_t base,
                         size_t t0, size_t t1, const char *what)
{
  size_t lat = ru->lat, cout = ru->cout;
  size_t tz = base + lat < t1 ? base + lat : t1; /* zeros in [t0, tz) */
  for (size_t t = t0; t < tz; t++)
    for (unsigned o = 0; o < cout; o++)
      CHECK(ru->out[t * cout + o] == 0.0f,
            "%s: output frame %zu channel %u is %g, expected exactly 0 "
            "(within the latency of %zu frames)", what, t, o,
            (double)ru->out[t * cout + o], lat);
  size_t ta = t0 > tz ? t0 : tz;
  if (ta >= t1)
    return;

  idxset s = {0};
  double cost = model_cost(m);
  int sampled = (double)(t1 - ta) * cost > FULL_REF_MACS;
  if (!sampled) {
    for (size_t t = ta; t < t1; t++)
      idx_add(&s, t);
  } else {
    for (size_t t = ta; t < ta + 8 && t < t1; t++)
      idx_add(&s, t);
    for (size_t t = t1 > ta + 8 ? t1 - 8 : ta; t < t1; t++)
      idx_add(&s, t);
    size_t nin = 0;
    for (size_t i = 0; i < ru->must.n; i++)
      nin += ru->must.v[i] >= ta && ru->must.v[i] < t1;
    for (size_t i = 0; i < ru->must.n; i++) {
      size_t t = ru->must.v[i];
      if (t >= ta && t < t1 &&
          (nin <= MUST_MAX || ref_rng_u64(r) % nin < MUST_MAX))
        idx_add(&s, t);
    }
    double k = SAMPLE_REF_MACS / cost;
    size_t nk = k < 200 ? 200 : k > 2000 ? 2000 : (size_t)k;
    for (size_t i = 0; i < nk; i++)
      idx_add(&s, ref_rng_range(r, ta, t1 - 1));
    qsort(s.v, s.n, sizeof *s.v, cmp_size);
    size_t u = 0;
    for (size_t i = 0; i < s.n; i++)
      if (u == 0 || s.v[i] != s.v[u - 1])
        s.v[u++] = s.v[i];
    s.n = u;
  }

  float *got = xalloc(s.n * sizeof *got);
  double *want = xalloc(s.n * sizeof *want);
  for (unsigned o = 0; o < cout; o++) {
    double ss = 0.0, sc = 0.0, se = 0.0, srms[MODEL_STAGES];
    model_rms(m, o, r, srms);
    for (size_t i = 0; i < s.n; i++) {
      got[i] = ru->out[s.v[i] * cout + o];
      want[i] = model_y(m, o, s.v[i] - base - lat);
      double sci = model_scale(m, srms, s.v[i] - base - lat);
      ss += want[i] * want[i];
      sc += sci * sci;
      se += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
    }
    double rms = sqrt(ss / (double)s.n);
    /* Relative to the scale of the convolutions computed where that is
     * larger than the output itself (see model_scale); NaN still fails. */
    double rel = ref_rel_l2(got, 1, want, 1, s.n);
    if (sc > ss && isfinite(rel))
      rel = sqrt(se / sc);
    /* The per-sample bound on that scale too: a region whose outputs are
     * all exactly 0 (a drained stream past its last kernel's reach, the
     * tail as long as the longest kernel seen) still gets the FFT's
     * rounding of the blocks it shares with the stream, 2e-7 to 8e-7 of
     * the stage's rms, which the flat 1e-5 that rms 0 left does not
     * follow (CF_TEST_SEED=1066 test_fallback, cpu-fft-uniform: 5.7e-6
     * on a stage of rms 21). */
    double lim = 1e-3 * sqrt((sc > ss ? sc : ss) / (double)s.n) + 1e-5;
    size_t bad = s.n;
    for (size_t i = 0; i < s.n && bad == s.n; i++)
      if (!isfinite(got[i]) || fabs((double)got[i] - want[i]) > lim)
        bad = i;
    /* A region of a few frames gives no L2 statistic (one sample's error
     * against its own value): there the per-sample bound above decides. */
    if (bad < s.n || (s.n >= 16 && !(rel <= tol()))) {
      if (bad == s.n) /* the worst one, to say where */
        for (size_t i = 0; i < s.n; i++)
          if (bad == s.n || fabs((double)got[i] - want[i]) >
                                fabs((double)got[bad] - want[bad]))
            bad = i;
      size_t t = s.v[bad];
      CHECK(0,
            "%s: channel %u: relative L2 error %.3g > %.1g over %zu %s "
            "output frames in [%zu, %zu); at output frame %zu (y index "
            "%zd, stream start %zu, latency %zu): got %.9g, want %.9g "
            "(rms %.3g, per-sample bound %.3g)",
            what, o, rel, tol(), s.n, sampled ? "sampled" : "(all)", ta, t1, t,
            (ptrdiff_t)(t - base - lat), base, lat, (double)got[bad], want[bad],
            rms, lim);
    }
  }
  free(got);
  free(want);
  idx_free(&s);
}

/* Add block-boundary indices of a stream starting at `base`. */
static void add_block_marks(run *ru, size_t base, size_t frames)
{
  size_t b = ru->block;
  if (b < 2)
    return;
  for (size_t t = 0; t <= frames; t += b) {
    idx_add3(&ru->must, base + t);
    idx_add3(&ru->must, base + t + ru->lat);
  }
  for (size_t p = 2 * b; p <= frames; p *= 2)
    idx_add3(&ru->must, base + p + ru->lat);
}

static size_t swap_history; /* engine_new's cfg.swap_history, 0: default */

static cf_status engine_new(const kset *k, unsigned block, cf_engine **e)
{
  cf_audio_config cfg;
  cf_kernel *kk = NULL;
  cf_audio_config_init(&cfg);
  if (swap_history)
    cfg.swap_history = swap_history;
  cfg.channels = k->ins;
  cfg.block_size = block;
  cfg.backend = V->backend;
  cfg.algorithm = V->algo;
  cfg.pipeline_depth = V->depth;
  *e = NULL;
  cf_status st = kset_build(k, &kk);
  if (st != CF_OK)
    return st;
  st = cf_engine_new_audio(&cfg, kk, e);
  cf_kernel_free(kk); /* the engine keeps a copy */
  return st;
}

static void check_shape(cf_engine *e, const kset *k, unsigned block)
{
  size_t all = cf_engine_latency(e), lmax = kset_lmax(k);
  size_t depth = (size_t)V->depth * block;
  CHECK(all >= depth, "latency %zu, less than pipeline_depth %u x block %u",
        all, V->depth, block);
  size_t lat = all - depth; /* the path's own */
  CHECK(cf_engine_in_channels(e) == k->ins, "in_channels %u, want %u",
        cf_engine_in_channels(e), k->ins);
  CHECK(cf_engine_out_channels(e) == k->outs, "out_channels %u, want %u",
        cf_engine_out_channels(e), k->outs);
  if (V->backend != CF_BACKEND_AUTO)
    CHECK(cf_engine_backend(e) == V->backend, "backend %s, asked for %s",
          cf_backend_name(cf_engine_backend(e)), cf_backend_name(V->backend));
  if (is_direct())
    CHECK(lat == 0, "latency %zu on the direct path, want 0", lat);
  else if (is_fft())
    CHECK(lat == block - 1, "latency %zu on an FFT path with block %u, want "
          "%u", lat, block, block - 1);
  else
    CHECK(lat == 0 || lat == block - 1, "latency %zu with block %u: want 0 "
          "(direct) or %u (FFT)", lat, block, block - 1);
  CHECK(cf_engine_tail(e) == all + lmax - 1,
        "tail %zu, want latency %zu + L_max %zu - 1", cf_engine_tail(e), all,
        lmax);
  const char *d = cf_engine_describe(e);
  CHECK(d && *d, "cf_engine_describe() is empty");
}

static cf_engine *make_engine(const kset *k, unsigned block)
{
  cf_engine *e = NULL;
  cf_status st = engine_new(k, block, &e);
  CHECK(st == CF_OK && e, "cf_engine_new_audio returned %s: %s",
        cf_status_name(st), cf_last_error());
  add_case("{%s} ", cf_engine_describe(e));
  check_shape(e, k, block);
  return e;
}

/* ------------------------------------------------------------------ */
/* Chunk invariance                                                     */

/* One streaming case: random chunks, drain, compare everything. */
static void stream_case(ref_rng *r, const kset *k, unsigned block, size_t n,
                        int in_place)
{
  input in;
  input_make(&in, r, k->ins, n);
  cf_engine *e = make_engine(k, block);
  run ru;
  run_start(&ru, e, block, n + cf_engine_tail(e) + 4);
  add_case("n %zu latency %zu tail %zu %s", n, ru.lat, ru.tail,
           in_place ? "in-place " : "");
  run_feed(&ru, r, in.x, n, in_place);
  add_block_marks(&ru, 0, n + ru.tail);
  run_drain(&ru, r);
  CHECK(ru.pos == n + ru.lat + kset_lmax(k) - 1, "output %zu frames, want "
        "n + latency + L_max - 1 = %zu", ru.pos,
        n + ru.lat + kset_lmax(k) - 1);
  model m = {.nstage = 1, .ks = {k}, .in = &in};
  check_region(&ru, r, &m, 0, 0, ru.pos, "stream");
  run_end(&ru);
  input_free(&in);
}

static void test_chunks_shared(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 1);
  for (unsigned c = 0; c < 22; c++) {
    kset k;
    unsigned block = rand_block(&r);
    /* to 10: every channel count the deinterleave has a case for (up to
     * 7.1), and beyond */
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 10);
    size_t len;
    if (c == 0) { /* the run's long kernel */
      len = rand_len(&r, 16384, long_len_max());
      ch = (unsigned)ref_rng_range(&r, 1, 2);
    } else
      len = rand_len_short(&r, 16383, block);
    kset_init(&k, CF_ROUTING_SHARED, ch, ch);
    kset_set(&k, &r, 0, len);
    size_t n = rand_frames(&r, len, block);
    fit_stream(&k, &n, &block);
    set_case("chunks_shared #%u: block %u ", c, block);
    kset_describe(&k);
    stream_case(&r, &k, block, n, 0);
    kset_free(&k);
  }
}

static void test_chunks_per_channel(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 2);
  for (unsigned c = 0; c < 12; c++) {
    kset k;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 6);
    kset_init(&k, CF_ROUTING_PER_CHANNEL, ch, ch);
    for (unsigned i = 0; i < ch; i++)
      kset_set(&k, &r, i, rand_len_short(&r, 4096, block));
    if (c == 0) /* one long channel among short ones */
      kset_set(&k, &r, (unsigned)ref_rng_range(&r, 0, ch - 1),
               rand_len(&r, 16384, is_direct() ? 32768 : 65536));
    size_t n = rand_frames(&r, kset_lmax(&k), block);
    fit_stream(&k, &n, &block);
    set_case("chunks_per_channel #%u: block %u ", c, block);
    kset_describe(&k);
    stream_case(&r, &k, block, n, 0);
    kset_free(&k);
  }
}

static void test_chunks_matrix(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 3);
  for (unsigned c = 0; c < 12; c++) {
    kset k;
    unsigned block = rand_block(&r);
    unsigned outs, ins;
    if (c == 0) { /* filter bank: 1 input, N bands of very different sizes */
      outs = (unsigned)ref_rng_range(&r, 2, 6);
      ins = 1;
    } else if (c == 1) { /* C_out != C_in */
      do { /* to 8 x 8 (MAXK kernels): up to 7.1 in and out */
        outs = (unsigned)ref_rng_range(&r, 1, 8);
        ins = (unsigned)ref_rng_range(&r, 1, 8);
      } while (outs == ins);
    } else {
      outs = (unsigned)ref_rng_range(&r, 1, 4);
      ins = (unsigned)ref_rng_range(&r, 1, 4);
    }
    kset_init(&k, CF_ROUTING_MATRIX, outs, ins);
    if (c == 0) {
      static const size_t dec[][2] = {{1, 8}, {9, 120}, {121, 1500},
                                      {1501, 12000}};
      unsigned sh = (unsigned)ref_rng_range(&r, 0, 3);
      for (unsigned o = 0; o < outs; o++) {
        const size_t *d = dec[(o + sh) % 4];
        kset_set(&k, &r, o, ref_rng_range(&r, d[0], d[1]));
      }
    } else {
      unsigned nonempty = 0;
      for (unsigned i = 0; i < k.count; i++)
        if (ref_rng_u64(&r) % 4) {
          kset_set(&k, &r, i, rand_len_short(&r, 4096, block));
          nonempty++;
        }
      if (!nonempty || c == 2) /* c == 2: one live path only */
        kset_set(&k, &r, (unsigned)ref_rng_range(&r, 0, k.count - 1),
                 rand_len_short(&r, 4096, block));
    }
    size_t n = rand_frames(&r, kset_lmax(&k), block);
    fit_stream(&k, &n, &block);
    set_case("chunks_matrix #%u: block %u ", c, block);
    kset_describe(&k);
    stream_case(&r, &k, block, n, 0);
    kset_free(&k);
  }
}

/* Every block size with a few kernel lengths: latency, tail, shape. */
static void test_latency_tail(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 4);
  for (size_t b = 0; b < NBLOCKS; b++) {
    static const size_t lens[] = {1, 2, 100, 5000};
    for (size_t l = 0; l < 4; l++) {
      kset k;
      kset_init(&k, CF_ROUTING_SHARED, 2, 2);
      kset_set(&k, &r, 0, lens[l]);
      set_case("latency_tail: block %u ", blocks[b]);
      kset_describe(&k);
      cf_engine *e = make_engine(&k, blocks[b]);
      cf_engine_free(e);
      kset_free(&k);
    }
  }
}

/* The non-uniform plan's layout: every stage after the first starts at
 * twice its partition or later, so that a block of it has the partition's
 * length of input time to be computed in (src/cpu/conv.c spreads it over
 * the small blocks until its next one). With each stage starting at its
 * own size, a long partition's whole block fell in one call: 5-15 ms
 * every 256th call of 128 frames (a 1.3 ms period) with a 10 s impulse
 * response (QA; bench_paced measures it). */
static void test_nonuniform_layout(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU || V->algo != CF_ALGO_FFT_NONUNIFORM) {
    print_message("skipped: the CPU's fft-nonuniform layout only\n");
    return;
  }
  ref_rng r;
  test_rng(&r, 41);
  static const unsigned bs[] = {32, 64, 128, 256, 512, 1024, 4096};
  for (int rep = 0; rep < 24; rep++) {
    unsigned block = bs[ref_rng_range(&r, 0, 6)];
    size_t len = ref_rng_range(&r, 0, 1) ? ref_rng_range(&r, 3000, 40000)
                                         : ref_rng_range(&r, 40000, 1000000);
    float *h = xalloc(len * sizeof *h);
    ref_rng_fill(&r, h, len);
    cf_kernel *k = NULL;
    CHECK_OK(cf_kernel_new_shared(h, len, &k));
    free(h);
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.channels = 1;
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = CF_ALGO_FFT_NONUNIFORM;
    cfg.block_size = block;
    cfg.threads = 1;
    cf_engine *e = NULL;
    CHECK_OK(cf_engine_new_audio(&cfg, k, &e));
    const char *d = cf_engine_describe(e);
    set_case("nonuniform_layout: %zu taps, block %u: %s", len, block, d);
    const char *p = strchr(d, '[');
    CHECK(p, "no plan in '%s'", d);
    p++;
    size_t covered = 0;
    unsigned stage = 0;
    if (!strncmp(p, "direct ", 7)) {
      covered = strtoul(p + 7, (char **)&p, 10);
      p += strspn(p, " +");
    }
    while (*p && *p != ']') {
      char *end;
      size_t part = strtoul(p, &end, 10);
      CHECK(end != p && *end == 'x', "stage %u of '%s'", stage, d);
      size_t n = strtoul(end + 1, &end, 10);
      CHECK(part > 0 && n > 0, "stage %u of '%s'", stage, d);
      if (stage > 0)
        CHECK(covered >= 2 * part,
              "stage %u (%zux%zu) starts at tap %zu: a block of it must be "
              "done in the call that ends it", stage, part, n, covered);
      covered += part * n;
      stage++;
      p = end + strspn(end, " +");
    }
    CHECK(covered >= len, "the plan covers %zu of %zu taps", covered, len);
    cf_engine_free(e);
    cf_kernel_free(k);
  }
}

/* The channel limit itself is a valid stream. */
static void test_max_channels(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 5);
  kset k;
  kset_init(&k, CF_ROUTING_SHARED, CF_MAX_CHANNELS, CF_MAX_CHANNELS);
  kset_set(&k, &r, 0, 37);
  unsigned block = 64;
  set_case("max_channels: block %u ", block);
  kset_describe(&k);
  stream_case(&r, &k, block, 700, 0);
  kset_free(&k);
}

/* ------------------------------------------------------------------ */
/* Drain and reset                                                      */

static void random_kset(ref_rng *r, kset *k, unsigned block, size_t lhi)
{
  unsigned ch = (unsigned)ref_rng_range(r, 1, 4);
  switch (ref_rng_u64(r) % 3) {
  case 0:
    kset_init(k, CF_ROUTING_SHARED, ch, ch);
    kset_set(k, r, 0, rand_len_short(r, lhi, block));
    break;
  case 1:
    kset_init(k, CF_ROUTING_PER_CHANNEL, ch, ch);
    for (unsigned i = 0; i < ch; i++)
      kset_set(k, r, i, rand_len_short(r, lhi, block));
    break;
  default:
    kset_init(k, CF_ROUTING_MATRIX, (unsigned)ref_rng_range(r, 1, 4), ch);
    for (unsigned i = 0; i < k->count; i++)
      if (i == 0 || ref_rng_u64(r) % 4)
        kset_set(k, r, i, rand_len_short(r, lhi, block));
    break;
  }
}

/* Process A, drain (checked), process B, drain: the second stream equals a
 * fresh engine's; a drain on a drained engine gives latency + L - 1 zeros. */
static void test_drain_reuse(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 6);
  for (unsigned c = 0; c < 8; c++) {
    kset k;
    unsigned block = rand_block(&r);
    random_kset(&r, &k, block, 6000);
    size_t na = rand_frames(&r, kset_lmax(&k), block);
    size_t nb = rand_frames(&r, kset_lmax(&k), block);
    fit_work(&k, &na, &block);
    fit_work(&k, &nb, &block);
    set_case("drain_reuse #%u: block %u na %zu nb %zu ", c, block, na, nb);
    kset_describe(&k);
    input a, b;
    input_make(&a, &r, k.ins, na);
    input_make(&b, &r, k.ins, nb);
    cf_engine *e = make_engine(&k, block);
    size_t tail = cf_engine_tail(e);
    run ru;
    run_start(&ru, e, block, na + nb + 3 * tail + 16);
    run_feed(&ru, &r, a.x, na, 0);
    add_block_marks(&ru, 0, na + tail);
    run_drain(&ru, &r);
    CHECK(cf_engine_tail(e) == tail, "tail changed after drain: %zu -> %zu",
          tail, cf_engine_tail(e));
    size_t base = ru.pos;
    model ma = {.nstage = 1, .ks = {&k}, .in = &a};
    check_region(&ru, &r, &ma, 0, 0, base, "first stream");
    run_feed(&ru, &r, b.x, nb, 0);
    add_block_marks(&ru, base, nb + tail);
    run_drain(&ru, &r);
    model mb = {.nstage = 1, .ks = {&k}, .in = &b};
    check_region(&ru, &r, &mb, base, base, ru.pos, "stream after a drain");
    /* drained again with no input: only zeros */
    size_t z = ru.pos;
    run_drain(&ru, &r);
    for (size_t t = z * ru.cout; t < ru.pos * ru.cout; t++)
      CHECK(ru.out[t] == 0.0f, "a drain right after a drain gave %g at "
            "value %zu, want 0", (double)ru.out[t], t - z * ru.cout);
    run_end(&ru);
    input_free(&a);
    input_free(&b);
    kset_free(&k);
  }
}

/* drain() with too small a capacity: CF_E_INVALID, nothing written, nothing
 * consumed (a proper drain afterwards gives the whole tail). */
static void test_drain_small_capacity(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 7);
  for (unsigned c = 0; c < 6; c++) {
    kset k;
    unsigned block = rand_block(&r);
    random_kset(&r, &k, block, 3000);
    if (kset_lmax(&k) < 2)
      kset_set(&k, &r, 0, 2 + ref_rng_range(&r, 0, 50));
    size_t n = ref_rng_range(&r, 1, 3 * (kset_lmax(&k) + block));
    fit_work(&k, &n, &block);
    set_case("drain_small_capacity #%u: block %u n %zu ", c, block, n);
    kset_describe(&k);
    input in;
    input_make(&in, &r, k.ins, n);
    cf_engine *e = make_engine(&k, block);
    run ru;
    run_start(&ru, e, block, n + cf_engine_tail(e) + 8);
    run_feed(&ru, &r, in.x, n, 0);
    size_t tail = cf_engine_tail(e), written = 12345;
    CHECK(tail >= 1, "tail %zu", tail);
    size_t small = ref_rng_range(&r, 0, tail - 1);
    cf_status st = cf_engine_drain(e, ru.out + ru.pos * ru.cout, small,
                                   &written);
    CHECK(st == CF_E_INVALID, "drain(capacity %zu < tail %zu) returned %s, "
          "want CF_E_INVALID", small, tail, cf_status_name(st));
    CHECK(*cf_last_error(), "no error message after a failed drain");
    for (size_t t = ru.pos * ru.cout; t < ru.cap * ru.cout; t++)
      CHECK(ru.out[t] == SENTINEL, "a failed drain wrote output value %zu",
            t - ru.pos * ru.cout);
    add_block_marks(&ru, 0, n + tail);
    run_drain(&ru, &r);
    model m = {.nstage = 1, .ks = {&k}, .in = &in};
    check_region(&ru, &r, &m, 0, 0, ru.pos, "stream drained after a failed "
                 "drain");
    run_end(&ru);
    input_free(&in);
    kset_free(&k);
  }
}

static void kset_like(ref_rng *r, kset *k, const kset *like, size_t lo,
                      size_t hi);

/* Reset mid-stream (mid-block too): what follows equals a fresh engine.
 * Odd cases swap kernels first, the reset falling inside the crossfade:
 * the swap completes, and a fresh engine with the new kernel follows. */
static void test_reset(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 8);
  for (unsigned c = 0; c < 8; c++) {
    kset k;
    unsigned block = rand_block(&r);
    random_kset(&r, &k, block, 6000);
    size_t n = ref_rng_range(&r, 1, 3 * (kset_lmax(&k) + block) + 3000);
    kset k2; /* odd cases: a swap whose crossfade the reset cuts short */
    if (c % 2)
      kset_like(&r, &k2, &k, 1, 6000);
    fit_work(&k, &n, &block);
    if (c % 2) /* the reset drains k2's tail in blocks of this size */
      fit_work(&k2, &n, &block);
    size_t cut = ref_rng_u64(&r) % 2 ? ref_rng_range(&r, 0, n)
                 : (n / block) * block + block / 2;
    if (cut > n)
      cut = n;
    set_case("reset #%u: block %u n %zu reset after %zu ", c, block, n, cut);
    kset_describe(&k);
    input in, after;
    input_make(&in, &r, k.ins, n);
    input_slice(&after, &in, cut, n - cut);
    cf_engine *e = make_engine(&k, block);
    size_t tail = cf_engine_tail(e);
    run ru;
    run_start(&ru, e, block, n + 2 * tail + 6008);
    if (c % 2) {
      size_t S = ref_rng_range(&r, 0, cut),
             X = cut - S + ref_rng_range(&r, 1, 5000);
      add_case("swap at %zu X %zu to ", S, X);
      kset_describe(&k2);
      run_feed(&ru, &r, in.x, S, 0);
      cf_kernel *kk = NULL;
      CHECK_OK(kset_build(&k2, &kk));
      cf_status st = cf_engine_set_kernel(e, kk, X);
      cf_kernel_free(kk);
      CHECK(st == CF_OK, "set_kernel returned %s: %s", cf_status_name(st),
            cf_last_error());
      run_feed(&ru, &r, in.x + S * in.ch, cut - S, 0);
      kset_free(&k);
      k = k2;
      tail = ru.lat + kset_lmax(&k) - 1;
    } else
      run_feed(&ru, &r, in.x, cut, 0);
    CHECK_OK(cf_engine_reset(e));
    CHECK(cf_engine_latency(e) == ru.lat && cf_engine_tail(e) == tail,
          "latency/tail changed by reset: %zu/%zu, want %zu/%zu",
          cf_engine_latency(e), cf_engine_tail(e), ru.lat, tail);
    size_t base = ru.pos;
    run_feed(&ru, &r, after.x, n - cut, 0);
    add_block_marks(&ru, base, n - cut + tail);
    run_drain(&ru, &r);
    model m = {.nstage = 1, .ks = {&k}, .in = &after};
    check_region(&ru, &r, &m, base, base, ru.pos, "stream after reset");
    run_end(&ru);
    input_free(&in);
    kset_free(&k);
  }
}

/* ------------------------------------------------------------------ */
/* Kernel swaps                                                         */

/* A kernel set shaped like `like` (same routing and channels). */
static void kset_like(ref_rng *r, kset *k, const kset *like, size_t lo,
                      size_t hi)
{
  kset_init(k, like->routing, like->outs, like->ins);
  for (unsigned i = 0; i < k->count; i++)
    if (like->routing != CF_ROUTING_MATRIX || i == 0 || ref_rng_u64(r) % 4)
      kset_set(k, r, i, rand_len(r, lo, hi));
}

/* Output frames [base, end) of a stream that began at output frame base
 * against model m (its swaps asked for at input frames S[k] of that
 * stream, settled to where engine.h puts them: ref_swaps_settle): the
 * region before, inside and after every crossfade, each on its own. */
static void check_model(run *ru, ref_rng *r, const model *asked,
                        size_t base, size_t end, const char *what)
{
  model settled = *asked, *m = &settled;
  unsigned idx[MODEL_STAGES];
  m->nstage = ref_swaps_settle(m->S, m->X, idx, asked->nstage);
  for (unsigned s = 0; s < m->nstage; s++)
    m->ks[s] = asked->ks[idx[s]];
  /* regions in output frames: [0, lat + S1), then each [S, S+X), ... */
  size_t cuts[16], nc = 0;
  cuts[nc++] = base;
  for (unsigned s = 1; s < m->nstage; s++) {
    cuts[nc++] = base + ru->lat + m->S[s];
    cuts[nc++] = base + ru->lat + m->S[s] + m->X[s];
  }
  cuts[nc++] = end;
  qsort(cuts, nc, sizeof *cuts, cmp_size);
  /* a region of a few frames is merged into the one before: a relative L2
   * over a handful of small values measures float rounding, not the engine
   * (its frames stay in the check, and in `must`) */
  size_t keep = 1;
  for (size_t i = 1; i < nc; i++)
    if (i == nc - 1 || cuts[i] - cuts[keep - 1] >= 32)
      cuts[keep++] = cuts[i];
  nc = keep;
  for (size_t i = 0; i + 1 < nc; i++) {
    char region[160];
    size_t a = cuts[i], b = cuts[i + 1] < end ? cuts[i + 1] : end;
    if (a >= b)
      continue;
    snprintf(region, sizeof region, "%s region %zu (output frames [%zu, "
             "%zu))", what, i, a, b);
    check_region(ru, r, m, base, a, b, region);
  }
}

/* With `prepared` set, swap_case makes each swap through
 * cf_engine_prepare_swap (built in a second thread while the main one
 * feeds the engine up to the swap point) and cf_engine_set_prepared,
 * whose output must be set_kernel's. */
static int prepared;

typedef struct prep_job {
  const cf_engine *e;
  const cf_kernel *k;
  cf_swap_prep *p;
  cf_status st;
  char err[256];
} prep_job;

static void *prep_thread(void *arg)
{
  prep_job *j = arg;
  j->st = cf_engine_prepare_swap(j->e, j->k, &j->p);
  if (j->st != CF_OK)
    snprintf(j->err, sizeof j->err, "%s", cf_last_error());
  return NULL;
}

/* Feed [done, S) and swap to kk at S, as `prepared` says. */
static void feed_and_swap(run *ru, ref_rng *r, const input *in, size_t done,
                          size_t S, const cf_kernel *kk, size_t X)
{
  if (!prepared) {
    run_feed(ru, r, in->x + done * in->ch, S - done, 0);
    cf_status st = cf_engine_set_kernel(ru->e, kk, X);
    CHECK(st == CF_OK, "set_kernel (S %zu, X %zu) returned %s: %s", S, X,
          cf_status_name(st), cf_last_error());
    return;
  }
  /* the build starts at t0 in [done, S] and runs while the rest is fed */
  size_t t0 = done + (size_t)ref_rng_range(r, 0, S - done);
  run_feed(ru, r, in->x + done * in->ch, t0 - done, 0);
  add_case("build from %zu ", t0);
  prep_job j = {ru->e, kk, NULL, CF_OK, ""};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, prep_thread, &j) == 0, "pthread_create");
  run_feed(ru, r, in->x + t0 * in->ch, S - t0, 0);
  pthread_join(th, NULL);
  CHECK(j.st == CF_OK, "prepare_swap (from frame %zu) returned %s: %s", t0,
        cf_status_name(j.st), j.err);
  cf_status st = cf_engine_set_prepared(ru->e, j.p, X);
  CHECK(st == CF_OK, "set_prepared (S %zu, X %zu) returned %s: %s", S, X,
        cf_status_name(st), cf_last_error());
  CHECK(cf_engine_set_prepared(ru->e, j.p, X) == CF_E_INVALID,
        "a prepared swap made twice");
  cf_swap_prep_free(j.p); /* with the banks it retired */
}

/* nsw swaps (1..MODEL_STAGES - 1) of ks[1..nsw] at S[k] with crossfade X[k];
 * compares the output before, inside and after every crossfade. */
static void swap_case(ref_rng *r, const kset *const *ks, unsigned nsw,
                      const size_t *S, const size_t *X, unsigned block,
                      const input *in)
{
  size_t n = in->n, lmax = 0;
  for (unsigned s = 0; s <= nsw; s++) {
    size_t l = kset_lmax(ks[s]);
    lmax = l > lmax ? l : lmax;
    kset_describe(ks[s]);
    if (s)
      add_case("@S=%zu X=%zu ", S[s], X[s]);
  }
  add_case("n %zu ", n);
  cf_engine *e = make_engine(ks[0], block);
  run ru;
  run_start(&ru, e, block, n + cf_engine_latency(e) + lmax + 8);
  size_t done = 0;
  for (unsigned s = 1; s <= nsw; s++) {
    cf_kernel *kk = NULL;
    CHECK_OK(kset_build(ks[s], &kk));
    add_case("swap %u: ", s);
    feed_and_swap(&ru, r, in, done, S[s], kk, X[s]);
    done = S[s];
    cf_kernel_free(kk);
    CHECK(cf_engine_latency(e) == ru.lat, "latency changed by set_kernel: "
          "%zu -> %zu", ru.lat, cf_engine_latency(e));
    idx_add3(&ru.must, S[s] + ru.lat);
    idx_add3(&ru.must, S[s] + X[s] + ru.lat);
  }
  run_feed(&ru, r, in->x + done * in->ch, n - done, 0);
  size_t lnew = kset_lmax(ks[nsw]), tail = cf_engine_tail(e);
  CHECK(tail >= ru.lat + lnew - 1 && tail <= ru.lat + lmax - 1,
        "tail after the swaps %zu, want latency %zu + L_new %zu - 1 (at most "
        "latency + the longest kernel seen - 1 = %zu)", tail, ru.lat, lnew,
        ru.lat + lmax - 1);
  add_block_marks(&ru, 0, n + tail);
  run_drain(&ru, r);

  model m = {.nstage = nsw + 1, .in = in};
  for (unsigned s = 0; s <= nsw; s++) {
    m.ks[s] = ks[s];
    m.S[s] = s ? S[s] : 0;
    m.X[s] = s ? X[s] : 0;
  }
  check_model(&ru, r, &m, 0, ru.pos, "swap");
  run_end(&ru);
}

static size_t rand_swap_point(ref_rng *r, size_t n, unsigned block)
{
  size_t S;
  switch (ref_rng_u64(r) % 5) {
  case 0: S = 0; break;
  case 1: S = (ref_rng_range(r, 0, n) / block) * block; break;
  case 2: S = (ref_rng_range(r, 0, n) / block) * block + block / 2; break;
  default: S = ref_rng_range(r, 0, n); break;
  }
  return S > n ? n : S;
}

static size_t rand_crossfade(ref_rng *r, size_t room)
{
  switch (ref_rng_u64(r) % 4) {
  case 0: return 0;
  case 1: return room ? 1 : 0;
  default: return ref_rng_range(r, 0, room);
  }
}

static void test_swap(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 9);
  size_t lhi = len_limit(is_direct() ? 8192 : 32768);
  for (unsigned c = 0; c < 10; c++) {
    kset k0, k1;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 4);
    if (ref_rng_u64(&r) % 3) {
      kset_init(&k0, CF_ROUTING_SHARED, ch, ch);
      kset_set(&k0, &r, 0, rand_len(&r, 1, lhi));
    } else if (ref_rng_u64(&r) % 2) {
      kset_init(&k0, CF_ROUTING_PER_CHANNEL, ch, ch);
      for (unsigned i = 0; i < ch; i++)
        kset_set(&k0, &r, i, rand_len(&r, 1, lhi));
    } else {
      kset_init(&k0, CF_ROUTING_MATRIX, (unsigned)ref_rng_range(&r, 1, 3),
                ch);
      for (unsigned i = 0; i < k0.count; i++)
        kset_set(&k0, &r, i, rand_len(&r, 1, lhi));
    }
    /* even cases: the new kernel longer; odd: shorter */
    size_t l0 = kset_lmax(&k0);
    if (c % 2 == 0)
      kset_like(&r, &k1, &k0, l0 < lhi ? l0 + 1 : lhi, lhi);
    else
      kset_like(&r, &k1, &k0, 1, l0 > 1 ? l0 - 1 : 1);
    size_t lm = l0 > kset_lmax(&k1) ? l0 : kset_lmax(&k1);
    size_t n = ref_rng_range(&r, 1, 3 * (lm + block) + 3000);
    fit_work(&k0, &n, &block);
    fit_work(&k1, &n, &block);
    size_t S[2] = {0, rand_swap_point(&r, n, block)};
    size_t X[2] = {0, rand_crossfade(&r, n - S[1])};
    set_case("swap #%u: block %u ", c, block);
    input in;
    input_make(&in, &r, k0.ins, n);
    const kset *ks[2] = {&k0, &k1};
    swap_case(&r, ks, 1, S, X, block, &in);
    input_free(&in);
    kset_free(&k0);
    kset_free(&k1);
  }
}

/* A new kernel much longer than the old one (up to swap_history): it must
 * see the input from before the swap. */
static void test_swap_long(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 10);
  kset k0, k1;
  unsigned block = is_direct() ? 64 : ref_rng_u64(&r) % 2 ? 1024 : 4096;
  double f = work_factor();
  size_t l1 = is_direct()
                  ? rand_len(&r, (size_t)(8192 * f), (size_t)(16384 * f))
                  : rand_len(&r, (size_t)(40000 * f), (size_t)(150000 * f));
  kset_init(&k0, CF_ROUTING_SHARED, 1, 1);
  kset_set(&k0, &r, 0, rand_len(&r, 1, 2000));
  kset_like(&r, &k1, &k0, l1, l1);
  size_t S[2] = {0, ref_rng_range(&r, l1 / 2, l1 + 3000)};
  size_t X[2] = {0, ref_rng_range(&r, 0, 5000)};
  size_t n = S[1] + X[1] + ref_rng_range(&r, 0, 4000);
  set_case("swap_long: block %u ", block);
  input in;
  input_make(&in, &r, 1, n);
  const kset *ks[2] = {&k0, &k1};
  swap_case(&r, ks, 1, S, X, block, &in);
  input_free(&in);
  kset_free(&k0);
  kset_free(&k1);
}

/* A second swap while the first crossfade runs: the first completes, so
 * the second fades from the first swap's new kernel. Also a third swap
 * right at the second's S. */
static void test_swap_during_crossfade(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 11);
  for (unsigned c = 0; c < 8; c++) {
    kset k[4];
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 3);
    kset_init(&k[0], CF_ROUTING_SHARED, ch, ch);
    kset_set(&k[0], &r, 0, rand_len(&r, 1, 4000));
    for (unsigned s = 1; s < 4; s++)
      kset_like(&r, &k[s], &k[0], 1, 4000);
    unsigned nsw = c % 3 == 2 || c >= 6 ? 3 : 2;
    size_t n = ref_rng_range(&r, 200, 20000);
    for (unsigned s = 0; s < 4; s++) /* up to three sets run at once */
      fit_work(&k[s], &n, &block);
    size_t S[4] = {0}, X[4] = {0};
    S[1] = ref_rng_range(&r, 0, n / 2);
    X[1] = ref_rng_range(&r, 2, n - S[1]);
    S[2] = ref_rng_range(&r, S[1] + 1, S[1] + X[1] - 1);
    X[2] = rand_crossfade(&r, n - S[2]);
    S[3] = S[2]; /* a swap at the very frame of the previous one */
    X[3] = rand_crossfade(&r, n - S[3]);
    if (c >= 6) {
      /* a swap without crossfade waiting for the first's end, replaced
       * there, at its very point, by one with a crossfade: its old side
       * is set 1 (the waiting one gave no output). With no latency (the
       * direct path) the input fed up to that point had set 1 retired,
       * and the newest blended from the replaced set (seed 1796066534) */
      X[2] = 0;
      S[3] = S[1] + X[1];
      X[3] = ref_rng_range(&r, 1, n - S[3] > 1 ? n - S[3] : 1);
    }
    set_case("swap_during_crossfade #%u: block %u ", c, block);
    input in;
    input_make(&in, &r, ch, n);
    const kset *ks[4] = {&k[0], &k[1], &k[2], &k[3]};
    swap_case(&r, ks, nsw, S, X, block, &in);
    input_free(&in);
    for (unsigned s = 0; s < 4; s++)
      kset_free(&k[s]);
  }
}

/* Swaps in a burst, as from a GUI slider: 4 to 7 of them within one
 * block (on the FFT paths, within the latency: every set still has
 * outputs to give when the next arrives), some at the same frame. */
static void test_swap_burst(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 22);
  for (unsigned c = 0; c < 6; c++) {
    kset k[MODEL_STAGES];
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 2);
    kset_init(&k[0], CF_ROUTING_SHARED, ch, ch);
    kset_set(&k[0], &r, 0, rand_len(&r, 1, 2000));
    for (unsigned s = 1; s < MODEL_STAGES; s++)
      kset_like(&r, &k[s], &k[0], 1, 2000);
    unsigned nsw = (unsigned)ref_rng_range(&r, 4, MODEL_STAGES - 1);
    size_t n = ref_rng_range(&r, 3 * (size_t)block, 3 * (size_t)block + 9000);
    fit_work(&k[0], &n, &block);
    size_t S[MODEL_STAGES] = {0}, X[MODEL_STAGES] = {0};
    size_t w = block > 1 ? block - 1 : 1; /* the burst's span */
    S[1] = ref_rng_range(&r, 0, n > w ? n - w : 0);
    for (unsigned s = 1; s <= nsw; s++) {
      if (s > 1)
        S[s] = ref_rng_u64(&r) % 4 ? S[s - 1] + ref_rng_range(&r, 0, w / nsw)
                                   : S[s - 1];
      if (S[s] > n)
        S[s] = n;
      X[s] = rand_crossfade(&r, n - S[s] < 2 * w ? n - S[s] : 2 * w);
    }
    set_case("swap_burst #%u: block %u %u swaps ", c, block, nsw);
    input in;
    input_make(&in, &r, ch, n);
    const kset *ks[MODEL_STAGES];
    for (unsigned s = 0; s < MODEL_STAGES; s++)
      ks[s] = &k[s];
    swap_case(&r, ks, nsw, S, X, block, &in);
    input_free(&in);
    for (unsigned s = 0; s < MODEL_STAGES; s++)
      kset_free(&k[s]);
  }
}

/* A kernel set of like's routing and lengths with new taps. */
static void kset_retap(ref_rng *r, kset *k, const kset *like)
{
  kset_init(k, like->routing, like->outs, like->ins);
  for (unsigned i = 0; i < k->count; i++)
    if (like->len[i])
      kset_set(k, r, i, like->len[i]);
}

/* Swaps, mostly to new taps of the same lengths, at random points (some
 * far apart, so that banks retire in between): the CPU then reuses a
 * retired bank's convolvers (src/cpu/fir.c), which must start as new. Now
 * and then a different layout, which must not reuse it. */
static void test_swap_reuse(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 23);
  for (unsigned c = 0; c < 6; c++) {
    kset k[MODEL_STAGES];
    unsigned block = rand_block(&r);
    random_kset(&r, &k[0], block, 6000);
    unsigned nsw = (unsigned)ref_rng_range(&r, 3, MODEL_STAGES - 1);
    size_t lmax = kset_lmax(&k[0]);
    for (unsigned s = 1; s <= nsw; s++) {
      if (ref_rng_u64(&r) % 4)
        kset_retap(&r, &k[s], &k[s > 1 && ref_rng_u64(&r) % 2 ? s - 2 : s - 1]);
      else
        kset_like(&r, &k[s], &k[0], 1, 6000);
      if (kset_lmax(&k[s]) > lmax)
        lmax = kset_lmax(&k[s]);
    }
    size_t n = (nsw + 1) * (lmax + (size_t)block) + 2000;
    for (unsigned s = 0; s <= nsw; s++)
      fit_work(&k[s], &n, &block);
    size_t S[MODEL_STAGES] = {0}, X[MODEL_STAGES] = {0};
    for (unsigned s = 1; s <= nsw; s++)
      S[s] = ref_rng_range(&r, 0, n);
    qsort(S + 1, nsw, sizeof *S, cmp_size);
    for (unsigned s = 1; s <= nsw; s++) {
      size_t gap = s < nsw ? S[s + 1] - S[s] : n - S[s];
      X[s] = rand_crossfade(&r, gap + block);
    }
    set_case("swap_reuse #%u: block %u %u swaps ", c, block, nsw);
    input in;
    input_make(&in, &r, k[0].ins, n);
    const kset *ks[MODEL_STAGES];
    for (unsigned s = 0; s <= nsw; s++)
      ks[s] = &k[s];
    swap_case(&r, ks, nsw, S, X, block, &in);
    input_free(&in);
    for (unsigned s = 0; s <= nsw; s++)
      kset_free(&k[s]);
  }
}

/* Same channel counts, different routing: allowed by the contract. */
static void test_swap_routing_change(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 12);
  for (unsigned c = 0; c < 4; c++) {
    kset k0, k1;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 2, 4);
    static const cf_routing rt[] = {CF_ROUTING_SHARED,
                                    CF_ROUTING_PER_CHANNEL,
                                    CF_ROUTING_MATRIX};
    cf_routing a = rt[c % 3], b = rt[(c + 1 + c / 3) % 3];
    kset_init(&k0, a, ch, ch);
    kset_init(&k1, b, ch, ch);
    for (unsigned i = 0; i < k0.count; i++)
      kset_set(&k0, &r, i, rand_len(&r, 1, 3000));
    for (unsigned i = 0; i < k1.count; i++)
      kset_set(&k1, &r, i, rand_len(&r, 1, 3000));
    size_t n = ref_rng_range(&r, 1, 15000);
    fit_work(&k0, &n, &block);
    fit_work(&k1, &n, &block);
    size_t S[2] = {0, rand_swap_point(&r, n, block)};
    size_t X[2] = {0, rand_crossfade(&r, n - S[1])};
    set_case("swap_routing_change #%u: block %u ", c, block);
    input in;
    input_make(&in, &r, ch, n);
    const kset *ks[2] = {&k0, &k1};
    swap_case(&r, ks, 1, S, X, block, &in);
    input_free(&in);
    kset_free(&k0);
    kset_free(&k1);
  }
}

/* A swap that changes the channel counts fails with CF_E_INVALID and
 * leaves the engine running the old kernel. */
/* The swaps of test_swap, test_swap_during_crossfade and test_swap_burst
 * made through cf_engine_prepare_swap / cf_engine_set_prepared, on the
 * CPU variants. */
static void test_swap_prepared(void **state)
{
  /* off the CPU, set_prepared is set_kernel (engine.h), which test_swap
   * and the rest check already; the misfit test below runs the calls */
  if (V->backend != CF_BACKEND_CPU) {
    printf("skipped: test_swap_prepared: on %s a prepared swap is "
           "set_kernel's\n", cf_backend_name(V->backend));
    skip();
  }
  prepared = 1;
  test_swap(state);
  test_swap_during_crossfade(state);
  test_swap_burst(state);
  prepared = 0;
}

static int prepared_off(void **state)
{
  (void)state;
  prepared = 0;
  swap_history = 0;
  return 0;
}

/* The rest of a one-swap stream that began at input frame 0 and stands
 * at `from`: feed to S, make p there with crossfade X, feed the rest,
 * drain, and check the whole output against k0 swapped to k1 at S. */
static void finish_prepared(run *ru, ref_rng *r, const input *in,
                            size_t from, size_t S, cf_swap_prep *p, size_t X,
                            const kset *k0, const kset *k1, const char *what)
{
  size_t n = in->n, ch = in->ch;
  run_feed(ru, r, in->x + from * ch, S - from, 0);
  CHECK_OK(cf_engine_set_prepared(ru->e, p, X));
  cf_swap_prep_free(p);
  run_feed(ru, r, in->x + S * ch, n - S, 0);
  add_block_marks(ru, 0, n + cf_engine_tail(ru->e));
  run_drain(ru, r);
  model m = {.nstage = 2, .in = in};
  m.ks[0] = k0;
  m.ks[1] = k1;
  m.S[1] = S;
  m.X[1] = X;
  check_model(ru, r, &m, 0, ru->pos, what);
  run_end(ru);
}

/* What set_prepared does where the work cannot serve: a reset between
 * (the stream starts again), more input since than the history holds;
 * and what prepare_swap refuses. Each swap must be set_kernel's. */
static void test_swap_prepared_misfit(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 31);
  for (unsigned c = 0; c < 4; c++) {
    kset k0, k1;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 3);
    kset_init(&k0, CF_ROUTING_SHARED, ch, ch);
    kset_set(&k0, &r, 0, rand_len(&r, 1, 4000));
    kset_like(&r, &k1, &k0, 1, 4000);
    size_t n = ref_rng_range(&r, 2000, 12000);
    fit_work(&k0, &n, &block);
    fit_work(&k1, &n, &block);
    set_case("swap_prepared_misfit #%u: block %u ", c, block);
    kset_describe(&k0);
    kset_describe(&k1);
    input in;
    input_make(&in, &r, ch, n);
    cf_engine *e = make_engine(&k0, block);
    cf_kernel *kk = NULL;
    CHECK_OK(kset_build(&k1, &kk));
    size_t t0 = n / 2;
    float *scratch = xalloc(sizeof(float) * n * cf_engine_out_channels(e));
    CHECK_OK(cf_engine_process(e, in.x, scratch, t0));
    /* every other case, the swap made on a second engine (engine.h: a
     * plain set_kernel of its kernel) */
    cf_engine *twin = c % 2 ? make_engine(&k0, block) : NULL;
    if (twin)
      add_case("(made on another engine) ");
    cf_swap_prep *p = NULL;
    CHECK_OK(cf_engine_prepare_swap(twin ? twin : e, kk, &p));
    /* NULL, and a set of other channel counts */
    CHECK(cf_engine_set_prepared(e, NULL, 0) == CF_E_INVALID, "NULL swap");
    kset k2;
    kset_init(&k2, CF_ROUTING_MATRIX, ch + 1, ch);
    for (unsigned i = 0; i < k2.count; i++)
      kset_set(&k2, &r, i, 3);
    cf_kernel *k2k = NULL;
    CHECK_OK(kset_build(&k2, &k2k));
    cf_swap_prep *q = NULL;
    cf_status st = cf_engine_prepare_swap(e, k2k, &q);
    CHECK(st == CF_E_INVALID && !q, "a set of %u outputs for a stream of %u "
          "was prepared: %s: %s", ch + 1, ch, cf_status_name(st),
          cf_last_error());
    cf_kernel_free(k2k);
    kset_free(&k2);
    /* a reset, and then the stream from its start: the swap lands at
     * frame S of the new stream, as set_kernel would put it */
    CHECK_OK(cf_engine_reset(e));
    size_t S = (size_t)ref_rng_range(&r, 0, n);
    size_t X = rand_crossfade(&r, n - S);
    add_case("reset, swap at %zu X %zu ", S, X);
    run ru;
    run_start(&ru, e, block, n + cf_engine_latency(e) + 8000 + 8);
    finish_prepared(&ru, &r, &in, 0, S, p, X, &k0, &k1,
                    "prepared across a reset");
    cf_engine_free(twin); /* after p (engine.h) */
    cf_kernel_free(kk);
    free(scratch);
    input_free(&in);
    kset_free(&k0);
    kset_free(&k1);
  }
  /* A swap built, then more input than the engine's history holds
   * (swap_history 1024: a ring of 16384 frames here) before it is made:
   * set_prepared swaps as set_kernel would (replaying more than the ring
   * would cost more than priming afresh; the output is the same). */
  swap_history = 1024;
  /* (the ring is the CPU backend's: elsewhere set_prepared is set_kernel) */
  for (unsigned c = 0; c < 3 && V->backend == CF_BACKEND_CPU; c++) {
    kset k0, k1;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 2);
    kset_init(&k0, CF_ROUTING_SHARED, ch, ch);
    kset_set(&k0, &r, 0, rand_len(&r, 1, 1000));
    kset_like(&r, &k1, &k0, 1, 1000);
    size_t t0 = ref_rng_range(&r, 0, 3000);
    size_t S = t0 + ref_rng_range(&r, 20000, 30000);
    size_t n = S + ref_rng_range(&r, 0, 3000);
    fit_work(&k0, &n, &block);
    fit_work(&k1, &n, &block);
    if (S > n)
      S = n;
    if (t0 > S)
      t0 = S;
    set_case("swap_prepared_misfit, history gone #%u: block %u built at %zu "
             "made at %zu ", c, block, t0, S);
    kset_describe(&k0);
    kset_describe(&k1);
    input in;
    input_make(&in, &r, ch, n);
    cf_engine *e = make_engine(&k0, block);
    cf_kernel *kk = NULL;
    CHECK_OK(kset_build(&k1, &kk));
    size_t X = rand_crossfade(&r, n - S);
    run ru;
    run_start(&ru, e, block, n + cf_engine_latency(e) + 1000 + 8);
    run_feed(&ru, &r, in.x, t0, 0);
    cf_swap_prep *p = NULL;
    CHECK_OK(cf_engine_prepare_swap(e, kk, &p));
    finish_prepared(&ru, &r, &in, t0, S, p, X, &k0, &k1,
                    "prepared, history gone");
    cf_kernel_free(kk);
    input_free(&in);
    kset_free(&k0);
    kset_free(&k1);
  }
  swap_history = 0;
}

static void test_swap_invalid(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 13);
  struct {
    cf_routing ra;
    unsigned oa, ia;
    cf_routing rb;
    unsigned ob, ib;
  } cases[] = {
    {CF_ROUTING_SHARED, 2, 2, CF_ROUTING_PER_CHANNEL, 3, 3},
    {CF_ROUTING_PER_CHANNEL, 2, 2, CF_ROUTING_PER_CHANNEL, 1, 1},
    {CF_ROUTING_MATRIX, 2, 3, CF_ROUTING_MATRIX, 3, 3},
    {CF_ROUTING_MATRIX, 2, 3, CF_ROUTING_MATRIX, 2, 2},
    {CF_ROUTING_MATRIX, 1, 1, CF_ROUTING_MATRIX, 2, 1},
    {CF_ROUTING_SHARED, 3, 3, CF_ROUTING_MATRIX, 3, 2},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    kset k0, k1;
    unsigned block = rand_block(&r);
    kset_init(&k0, cases[c].ra, cases[c].oa, cases[c].ia);
    kset_init(&k1, cases[c].rb, cases[c].ob, cases[c].ib);
    for (unsigned i = 0; i < k0.count; i++)
      kset_set(&k0, &r, i, rand_len(&r, 1, 500));
    for (unsigned i = 0; i < k1.count; i++)
      kset_set(&k1, &r, i, rand_len(&r, 1, 500));
    size_t n = ref_rng_range(&r, 1, 5000);
    fit_work(&k0, &n, &block);
    size_t cut = ref_rng_range(&r, 0, n);
    set_case("swap_invalid #%zu: block %u n %zu swap at %zu ", c, block, n,
             cut);
    kset_describe(&k0);
    add_case("-> ");
    kset_describe(&k1);
    input in;
    input_make(&in, &r, k0.ins, n);
    cf_engine *e = make_engine(&k0, block);
    run ru;
    run_start(&ru, e, block, n + cf_engine_tail(e) + 8);
    run_feed(&ru, &r, in.x, cut, 0);
    cf_kernel *kk = NULL;
    CHECK_OK(kset_build(&k1, &kk));
    cf_status st = cf_engine_set_kernel(e, kk, ref_rng_range(&r, 0, 100));
    cf_kernel_free(kk);
    CHECK(st == CF_E_INVALID, "set_kernel changing the channels returned "
          "%s, want CF_E_INVALID", cf_status_name(st));
    CHECK(*cf_last_error(), "no error message");
    /* an empty shared set is no kernel either */
    CHECK_OK(cf_kernel_new(CF_ROUTING_SHARED, 1, 1, &kk));
    st = cf_engine_set_kernel(e, kk, 0);
    cf_kernel_free(kk);
    CHECK(st == CF_E_INVALID, "set_kernel with an empty shared kernel "
            "returned %s, want CF_E_INVALID", cf_status_name(st));
    run_feed(&ru, &r, in.x + cut * in.ch, n - cut, 0);
    add_block_marks(&ru, 0, n + ru.tail);
    run_drain(&ru, &r);
    model m = {.nstage = 1, .ks = {&k0}, .in = &in};
    check_region(&ru, &r, &m, 0, 0, ru.pos, "stream after refused swaps");
    run_end(&ru);
    input_free(&in);
    kset_free(&k0);
    kset_free(&k1);
  }
}

/* Backend auto on the fake device (fake.c: the CPU wrapped as CUDA, with
 * the fallback history kept), V's algorithm and depth; `fake` is
 * CF_TEST_FAKE_DEVICE while it is made ("on", "call:N", "kernel:N"). */
static cf_engine *fake_engine(const kset *k, unsigned block, const char *fake)
{
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.channels = k->ins;
  cfg.block_size = block;
  cfg.algorithm = V->algo;
  cfg.pipeline_depth = V->depth;
  cf_kernel *kk = NULL;
  CHECK_OK(kset_build(k, &kk));
  setenv("CF_TEST_FAKE_DEVICE", fake, 1);
  cf_engine *e = NULL;
  cf_status st = cf_engine_new_audio(&cfg, kk, &e);
  unsetenv("CF_TEST_FAKE_DEVICE");
  cf_kernel_free(kk);
  CHECK(st == CF_OK, "cf_engine_new_audio (auto, fake device) returned %s: "
        "%s", cf_status_name(st), cf_last_error());
  CHECK(cf_engine_backend(e) == CF_BACKEND_CUDA &&
        strstr(cf_engine_describe(e), "fake device"),
        "the fake device is not in use: backend %s, '%s'",
        cf_backend_name(cf_engine_backend(e)), cf_engine_describe(e));
  add_case("{%s} ", cf_engine_describe(e));
  return e;
}

/* An engine to swap on: on the fake device, or V's backend. */
static cf_engine *bound_engine(const kset *k, unsigned block, int fake)
{
  return fake ? fake_engine(k, block, "on") : make_engine(k, block);
}

/* Crossfades up to CF_AUDIO_MAX_CROSSFADE (engine.h). The longest is
 * taken, by set_kernel and set_prepared, and blends by engine.h's formula
 * (w about 1e-12: the old kernel's output), a second swap during it
 * completing it; longer ones (SIZE_MAX, where X + 1 wraps) are refused
 * naming the bound, set_prepared's leaving p to be made. With backend
 * auto on a device (the fake one), the input kept for a switch to the
 * CPU during the longest would take terabytes: refused with CF_E_NOMEM,
 * nothing changed, and a crossfade that fits is taken after it. */
static void test_swap_crossfade_bound(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 31);
  for (unsigned c = 0; c < 6; c++) {
    int fake = c >= 4;
    if (fake && V->backend != CF_BACKEND_CPU)
      break; /* the fake device wraps the CPU: the cpu variants */
    kset k[3];
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 3);
    kset_init(&k[0], CF_ROUTING_SHARED, ch, ch);
    kset_set(&k[0], &r, 0, rand_len(&r, 1, 3000));
    kset_like(&r, &k[1], &k[0], 1, 3000);
    kset_like(&r, &k[2], &k[0], 1, 3000);
    size_t n = ref_rng_range(&r, 2, 3 * block + 6000), lmax = 0;
    for (int i = 0; i < 3; i++) {
      fit_work(&k[i], &n, &block);
      lmax = kset_lmax(&k[i]) > lmax ? kset_lmax(&k[i]) : lmax;
    }
    n = n < 2 ? 2 : n;
    unsigned nsw = c % 2 ? 2 : 1;
    size_t S[3] = {0, ref_rng_range(&r, 1, n - 1), 0};
    S[2] = ref_rng_range(&r, S[1], n);
    size_t X[3] = {0, CF_AUDIO_MAX_CROSSFADE - ref_rng_range(&r, 0, 1), 0};
    X[2] = ref_rng_range(&r, 0, n - S[2]);
    if (fake) /* refused: the swap made is a short one */
      X[1] = ref_rng_range(&r, 0, n - S[1]);
    set_case("crossfade_bound #%u: block %u n %zu ", c, block, n);
    for (unsigned i = 0; i <= nsw; i++) {
      kset_describe(&k[i]);
      if (i)
        add_case("@S=%zu X=%zu ", S[i], X[i]);
    }
    input in;
    input_make(&in, &r, ch, n);
    cf_engine *e = bound_engine(&k[0], block, fake);
    run ru;
    run_start(&ru, e, block, n + cf_engine_latency(e) + lmax + 8);
    run_feed(&ru, &r, in.x, S[1], 0);
    cf_kernel *kk = NULL;
    CHECK_OK(kset_build(&k[1], &kk));
    const size_t bad[] = {CF_AUDIO_MAX_CROSSFADE + 1, SIZE_MAX};
    for (int b = 0; b < 2; b++) {
      cf_status st = cf_engine_set_kernel(e, kk, bad[b]);
      CHECK(st == CF_E_INVALID &&
                strstr(cf_last_error(), "CF_AUDIO_MAX_CROSSFADE"),
            "set_kernel with a crossfade of %zu frames returned %s: '%s', "
            "want CF_E_INVALID naming CF_AUDIO_MAX_CROSSFADE", bad[b],
            cf_status_name(st), cf_last_error());
    }
    if (fake) {
      cf_status st = cf_engine_set_kernel(e, kk, CF_AUDIO_MAX_CROSSFADE);
      CHECK(st == CF_E_NOMEM && strstr(cf_last_error(), "fallback history"),
            "set_kernel with the longest crossfade on the fake device "
            "returned %s: '%s', want CF_E_NOMEM for the fallback history",
            cf_status_name(st), cf_last_error());
    }
    cf_swap_prep *p = NULL;
    CHECK_OK(cf_engine_prepare_swap(e, kk, &p));
    cf_status st = cf_engine_set_prepared(e, p, SIZE_MAX);
    CHECK(st == CF_E_INVALID, "set_prepared with a crossfade of SIZE_MAX "
          "returned %s, want CF_E_INVALID", cf_status_name(st));
    st = cf_engine_set_prepared(e, p, X[1]);
    CHECK(st == CF_OK, "set_prepared (X %zu) after a refused one returned "
          "%s: %s", X[1], cf_status_name(st), cf_last_error());
    cf_swap_prep_free(p);
    cf_kernel_free(kk);
    idx_add3(&ru.must, S[1] + ru.lat);
    if (nsw == 2) {
      run_feed(&ru, &r, in.x + S[1] * in.ch, S[2] - S[1], 0);
      CHECK_OK(kset_build(&k[2], &kk));
      st = cf_engine_set_kernel(e, kk, X[2]);
      cf_kernel_free(kk);
      CHECK(st == CF_OK, "set_kernel during the crossfade returned %s: %s",
            cf_status_name(st), cf_last_error());
      idx_add3(&ru.must, S[2] + ru.lat);
      idx_add3(&ru.must, S[2] + X[2] + ru.lat);
    }
    size_t done = nsw == 2 ? S[2] : S[1];
    run_feed(&ru, &r, in.x + done * in.ch, n - done, 0);
    add_block_marks(&ru, 0, n + cf_engine_tail(e));
    run_drain(&ru, &r);
    model m = {.nstage = nsw + 1, .in = &in};
    for (unsigned i = 0; i <= nsw; i++) {
      m.ks[i] = &k[i];
      m.S[i] = S[i];
      m.X[i] = X[i];
    }
    check_model(&ru, &r, &m, 0, ru.pos, "crossfade bound");
    run_end(&ru);
    input_free(&in);
    for (int i = 0; i < 3; i++)
      kset_free(&k[i]);
  }
}

/* ------------------------------------------------------------------ */
/* backend=auto: the switch from the device to the CPU mid-stream       */

/* Tested on the CPU through the fake device of src/engine/fake.c:
 * CF_TEST_FAKE_DEVICE=call:F (set while the engine is created) makes
 * backend=auto take the CPU as if it were CUDA, and its F-th process or
 * drain call fail as a device error (kernel:K: its K-th set_kernel fail
 * as a device allocation would). A case is one or two segments (a
 * reset or a drain between them), each a random chunking with up to three
 * kernel swaps, crossfades included, or a burst of 4 to 6 within a block; F
 * falls on the first call, the last (the final drain), the first after a swap
 * (its crossfade in flight), the first after the reset or drain, the drain
 * between the segments, the last before a swap to a longer kernel, or anywhere.
 * The whole output must match the reference with the swaps as made, the engine
 * must be on the device before call F and on the CPU from it on. Chunks stay
 * under 65536 frames, so that each non-empty process() is one backend call.
 * Mode 1 (`long_swap`): a swap to a kernel of over 2^17 taps, which reads
 * that far into the past, and the fault right after it. Mode 2: a
 * crossfade of over 200000 frames, more than the fallback's input ring
 * held (it grows, keeping what it has), and the fault inside it. */

enum { OP_PROCESS, OP_SWAP, OP_RESET, OP_DRAIN };

typedef struct fop {
  int op;
  size_t n;       /* OP_PROCESS: frames; OP_SWAP: crossfade */
  unsigned stage; /* OP_SWAP: the kernel set swapped in */
} fop;

typedef struct fplan {
  fop *ops;
  size_t nops, calls;
} fplan;

static void fplan_add(fplan *p, int op, size_t n, unsigned stage)
{
  CHECK(p->nops < 4 * MAXCHUNKS, "test bug: too many operations");
  p->ops[p->nops++] = (fop){op, n, stage};
  p->calls += op == OP_DRAIN || (op == OP_PROCESS && n);
}

/* Process calls for n frames in a random chunking. */
static void fplan_feed(fplan *p, ref_rng *r, size_t n, unsigned block)
{
  size_t *sizes = xalloc(MAXCHUNKS * sizeof *sizes);
  size_t count = ref_chunking(r, n, block, sizes, MAXCHUNKS);
  for (size_t c = 0; c < count; c++) {
    for (; sizes[c] > 65536; sizes[c] -= 65536) /* one backend call each */
      fplan_add(p, OP_PROCESS, 65536, 0);
    fplan_add(p, OP_PROCESS, sizes[c], 0);
  }
  free(sizes);
}

/* The number of the first data call at or after operation i (calls + 1
 * if none). */
static size_t fplan_call_at(const fplan *p, size_t i)
{
  size_t calls = 0;
  for (size_t j = 0; j < p->nops; j++) {
    int data = p->ops[j].op == OP_DRAIN ||
               (p->ops[j].op == OP_PROCESS && p->ops[j].n);
    if (j >= i && data)
      return calls + 1;
    calls += data;
  }
  return calls + 1;
}

/* A random operation of kind op (SIZE_MAX if none). */
static size_t fplan_pick(const fplan *p, ref_rng *r, int op)
{
  size_t n = 0, pick;
  for (size_t j = 0; j < p->nops; j++)
    n += p->ops[j].op == op;
  if (!n)
    return SIZE_MAX;
  pick = ref_rng_range(r, 0, n - 1);
  for (size_t j = 0; j < p->nops; j++)
    if (p->ops[j].op == op && !pick--)
      return j;
  return SIZE_MAX;
}

static void fault_case(ref_rng *r, unsigned c, int mode)
{
  int long_swap = mode == 1, long_fade = mode == 2;
  unsigned block = mode ? 1024u << (ref_rng_u64(r) % 3) : rand_block(r);
  enum { NK = 2 * (MODEL_STAGES - 2) + 1 }; /* two segments of <= 6 swaps */
  kset k[NK];
  if (mode) {
    kset_init(&k[0], CF_ROUTING_SHARED, 1, 1);
    kset_set(&k[0], r, 0, rand_len(r, 1, 2000));
  } else
    random_kset(r, &k[0], block, 3000);
  for (unsigned i = 1; i < NK; i++)
    kset_like(r, &k[i], &k[0], 1, 3000);
  if (long_swap) {
    kset_free(&k[1]);
    kset_like(r, &k[1], &k[0], 135000, 150000);
  }
  size_t lmax = 0, lk = 0;
  for (unsigned i = 0; i < NK; i++)
    if (kset_lmax(&k[i]) > lmax)
      lmax = kset_lmax(&k[i]), lk = i;
  unsigned nseg = ref_rng_u64(r) % 3 ? 2 : 1;
  int cut_drain = ref_rng_u64(r) % 2;
  size_t n[2], S[2][MODEL_STAGES] = {{0}}, X[2][MODEL_STAGES] = {{0}};
  unsigned nsw[2] = {0, 0}, first[2];
  for (unsigned g = 0; g < 2; g++) {
    n[g] = g < nseg ? rand_frames(r, lmax, block) : 0;
    if (n[g] > 30000)
      n[g] = 30000;
    fit_work(&k[lk], &n[g], &block);
  }
  if (long_swap) {
    nseg = 1;
    n[0] = lmax + ref_rng_range(r, 3000, 9000);
  }
  size_t fade = 0; /* long_fade: more than the fallback ring held before */
  if (long_fade) {
    nseg = 1;
    fade = ref_rng_range(r, 200000, 300000);
    n[0] = fade + ref_rng_range(r, 6000, 20000);
  }
  fplan p = {xalloc(4 * MAXCHUNKS * sizeof(fop)), 0, 0};
  unsigned stage = 0;
  set_case("fallback #%u: block %u ", c, block);
  for (unsigned g = 0; g < nseg; g++) {
    first[g] = stage; /* the set in use when the segment starts */
    /* a burst: 4 to 6 swaps within one block (test_swap_burst) */
    int burst = !mode && ref_rng_u64(r) % 4 == 0;
    nsw[g] = mode    ? 1
             : burst ? (unsigned)ref_rng_range(r, 4, MODEL_STAGES - 2)
                     : (unsigned)(ref_rng_u64(r) % 4);
    size_t done = 0;
    add_case("| segment %u: n %zu ", g, n[g]);
    kset_describe(&k[stage]);
    for (unsigned s = 1; s <= nsw[g]; s++) {
      S[g][s] = ref_rng_u64(r) % 4 ? rand_swap_point(r, n[g], block) : done;
      if (long_swap)
        S[g][s] = ref_rng_range(r, lmax - 2000, lmax + 1000);
      if (burst && s > 1)
        S[g][s] = done + ref_rng_range(r, 0, block / nsw[g]);
      if (S[g][s] > n[g])
        S[g][s] = n[g];
      if (S[g][s] < done)
        S[g][s] = done;
      X[g][s] = rand_crossfade(r, n[g] - S[g][s] + block);
      if (long_fade) {
        S[g][s] = ref_rng_range(r, 1000, 5000);
        X[g][s] = fade;
      }
      fplan_feed(&p, r, S[g][s] - done, block);
      done = S[g][s];
      fplan_add(&p, OP_SWAP, X[g][s], ++stage);
      add_case("swap@%zu X=%zu ", S[g][s], X[g][s]);
      kset_describe(&k[stage]);
    }
    fplan_feed(&p, r, n[g] - done, block);
    int drain = g + 1 == nseg || cut_drain;
    add_case("%s ", drain ? "drain" : "reset");
    fplan_add(&p, drain ? OP_DRAIN : OP_RESET, 0, 0);
  }
  /* the call that fails: a data call F, or (kernel:K) the K-th swap */
  size_t F = 0, K = 0, at, nswap = 0;
  for (at = 0; at < p.nops; at++)
    nswap += p.ops[at].op == OP_SWAP;
  if (!mode && c % 8 == 7 && nswap)
    K = ref_rng_range(r, 1, nswap);
  switch (mode ? 2 : K ? 6 : c % 8) {
  case 0: F = 1; break;
  case 1: F = p.calls; break;
  case 2: /* right after a swap: its crossfade (if any) in flight */
    if ((at = fplan_pick(&p, r, OP_SWAP)) != SIZE_MAX)
      F = fplan_call_at(&p, at + 1);
    break;
  case 3: /* right after the reset or drain between the segments */
    if (nseg == 2)
      for (at = 0; !F && at < p.nops; at++)
        if (p.ops[at].op == OP_RESET || p.ops[at].op == OP_DRAIN)
          F = fplan_call_at(&p, at + 1);
    break;
  case 4: /* the drain between the segments, or the first one */
    F = fplan_call_at(&p, fplan_pick(&p, r, OP_DRAIN));
    break;
  case 5: /* right before a swap to a longer kernel: the CPU must have the
             past it reads */
    if ((at = fplan_pick(&p, r, OP_SWAP)) != SIZE_MAX &&
        (F = fplan_call_at(&p, at) - 1) > 0) {
      kset_free(&k[p.ops[at].stage]);
      kset_like(r, &k[p.ops[at].stage], &k[0], lmax + 1, lmax + 3000);
      lmax = kset_lmax(&k[p.ops[at].stage]);
      add_case("| swap to set %u made longer: L_max %zu ", p.ops[at].stage,
               lmax);
    }
    break;
  }
  if (K)
    add_case("| fault at swap %zu of %zu ", K, nswap);
  else {
    if (F == 0 || F > p.calls)
      F = ref_rng_range(r, 1, p.calls);
    add_case("| fault at call %zu of %zu ", F, p.calls);
  }

  input in, seg[2];
  input_make(&in, r, k[0].ins, n[0] + n[1]);
  input_slice(&seg[0], &in, 0, n[0]);
  input_slice(&seg[1], &in, n[0], n[1]);
  char env[64];
  if (K)
    snprintf(env, sizeof env, "kernel:%zu", K);
  else
    snprintf(env, sizeof env, "call:%zu", F);
  cf_engine *e = fake_engine(&k[0], block, env);
  cf_kernel *kk = NULL;
  cf_status st;
  run ru;
  run_start(&ru, e, block,
            n[0] + n[1] + 2 * (cf_engine_latency(e) + lmax) + 16);
  size_t done = 0, calls = 0, swaps = 0, end[2] = {0, 0};
  unsigned g = 0;
  for (size_t i = 0; i < p.nops; i++) {
    const fop *o = &p.ops[i];
    int data = o->op == OP_DRAIN || (o->op == OP_PROCESS && o->n);
    if (data && ++calls == F) { /* the outputs around the switch */
      for (size_t d = 0; d < 4; d++)
        idx_add3(&ru.must, ru.pos + (d & 1 ? ru.lat : 0) + (d & 2 ? o->n : 0));
    }
    if (o->op == OP_PROCESS) {
      CHECK(ru.pos + o->n + GUARD <= ru.cap, "test bug: output too small");
      st = cf_engine_process(e, in.x + done * in.ch, ru.out + ru.pos * ru.cout,
                             o->n);
      CHECK(st == CF_OK, "process(%zu frames, call %zu, input frame %zu) "
            "returned %s: %s", o->n, calls, done, cf_status_name(st),
            cf_last_error());
      idx_add3(&ru.must, ru.pos);
      done += o->n;
      ru.pos += o->n;
      check_guard(&ru, "process()");
    } else if (o->op == OP_SWAP) {
      CHECK_OK(kset_build(&k[o->stage], &kk));
      if (++swaps == K) /* the outputs around the switch */
        for (size_t d = 0; d < 2; d++)
          idx_add3(&ru.must, ru.pos + (d ? ru.lat : 0));
      st = cf_engine_set_kernel(e, kk, o->n);
      cf_kernel_free(kk);
      CHECK(st == CF_OK, "set_kernel (stage %u, X %zu) returned %s: %s",
            o->stage, o->n, cf_status_name(st), cf_last_error());
      idx_add3(&ru.must, ru.pos + ru.lat);
      idx_add3(&ru.must, ru.pos + ru.lat + o->n);
    } else {
      if (o->op == OP_RESET)
        CHECK_OK(cf_engine_reset(e));
      else
        run_drain(&ru, r);
      end[g++] = ru.pos;
    }
    CHECK(cf_engine_latency(e) == ru.lat, "latency %zu, was %zu",
          cf_engine_latency(e), ru.lat);
    int off = K ? swaps >= K : calls >= F;
    cf_backend want = off ? CF_BACKEND_CPU : CF_BACKEND_CUDA;
    CHECK(cf_engine_backend(e) == want, "after call %zu, swap %zu (fault at "
          "%s %zu) the engine is on %s, want %s", calls, swaps,
          K ? "swap" : "call", K ? K : F,
          cf_backend_name(cf_engine_backend(e)), cf_backend_name(want));
    CHECK(!off == !cf_engine_fallback_reason(e) &&
              (!off || strstr(cf_engine_fallback_reason(e), "fake device")),
          "fallback reason '%s' %s the switch",
          cf_engine_fallback_reason(e) ? cf_engine_fallback_reason(e)
                                       : "(none)",
          off ? "after" : "before");
  }
  CHECK(!strstr(cf_engine_describe(e), "fake"), "after the switch the "
        "engine says '%s'", cf_engine_describe(e));
  for (g = 0; g < nseg; g++) {
    size_t base = g ? end[g - 1] : 0;
    model m = {.nstage = nsw[g] + 1, .in = &seg[g]};
    for (unsigned s = 0; s <= nsw[g]; s++) {
      m.ks[s] = &k[first[g] + s];
      m.S[s] = S[g][s];
      m.X[s] = X[g][s];
    }
    add_block_marks(&ru, base, end[g] - base);
    check_model(&ru, r, &m, base, end[g], g ? "segment 1" : "segment 0");
  }
  run_end(&ru);
  free(p.ops);
  input_free(&in);
  for (unsigned i = 0; i < NK; i++)
    kset_free(&k[i]);
}

static void test_fallback(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU) {
    print_message("note: the fallback runs on the CPU's fake device: "
                  "tested in the cpu variants\n");
    return;
  }
  ref_rng r;
  test_rng(&r, 19);
  for (unsigned c = 0; c < 32; c++)
    fault_case(&r, c, 0);
  if (!is_direct()) /* the direct path is too slow for 2^17 taps */
    fault_case(&r, 32, 1);
  fault_case(&r, 33, 2);
}

/* The CPU backend that takes over from the device keeps the device's
 * latency with the algorithm asked: a kernel the stream swapped to
 * thousands of taps long is not convolved directly at latency 0 (it was,
 * direct whatever the length: 150000 taps cost 15 s of test_fallback's
 * 22 under ASan, and a live stream far more than real time), but by the
 * plan the CPU makes for it at that latency, an FFT one with a short
 * direct head. Its output is test_fallback's (fault_case, mode 1). */
static void test_fallback_plan(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU || is_direct()) {
    print_message("note: the takeover's plan is checked in the cpu "
                  "variants that may use FFTs\n");
    return;
  }
  ref_rng r;
  test_rng(&r, 41);
  for (unsigned c = 0; c < 4; c++) {
    unsigned block = 256u << (ref_rng_u64(&r) % 5);
    kset k0, k1;
    kset_init(&k0, CF_ROUTING_SHARED, 1, 1);
    kset_set(&k0, &r, 0, rand_len(&r, 1, 32));
    kset_init(&k1, CF_ROUTING_SHARED, 1, 1);
    size_t len = rand_len(&r, 20000, 60000);
    kset_set(&k1, &r, 0, len);
    set_case("fallback plan #%u: block %u, %zu then %zu taps ", c, block,
             k0.len[0], len);
    cf_engine *e = fake_engine(&k0, block, "call:2");
    cf_kernel *kk = NULL;
    size_t lat = cf_engine_latency(e);
    add_case("latency %zu ", lat);
    float *x = xalloc(2 * block * sizeof(float));
    float *y = xalloc(2 * block * sizeof(float));
    ref_rng_fill(&r, x, 2 * block);
    CHECK_OK(cf_engine_process(e, x, y, block));
    CHECK_OK(kset_build(&k1, &kk));
    CHECK_OK(cf_engine_set_kernel(e, kk, 0));
    cf_kernel_free(kk);
    CHECK_OK(cf_engine_process(e, x + block, y + block, block));
    const char *d = cf_engine_describe(e);
    add_case("{%s} ", d);
    CHECK(cf_engine_backend(e) == CF_BACKEND_CPU &&
          cf_engine_fallback_reason(e),
          "the fake device's second call did not fail over to the CPU");
    CHECK(cf_engine_latency(e) == lat, "the latency changed from %zu to %zu",
          lat, cf_engine_latency(e));
    /* "[direct N + ..." heads the plan's description ("cpu: direct
     * [direct 49146], block 1024, ..." before: every tap directly) */
    const char *h = strstr(d, "[direct ");
    size_t head = h ? strtoull(h + 8, NULL, 10) : 0;
    CHECK(head < 4096, "the CPU that took over does %zu of the kernel's %zu "
          "taps directly, at latency %zu (%s)", head, len, lat, d);
    free(x);
    free(y);
    cf_engine_free(e);
    kset_free(&k0);
    kset_free(&k1);
  }
}

/* ------------------------------------------------------------------ */
/* Edges and errors                                                     */

static void test_zero_frames(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 14);
  kset k;
  unsigned block = rand_block(&r);
  kset_init(&k, CF_ROUTING_SHARED, 2, 2);
  kset_set(&k, &r, 0, rand_len(&r, 1, 500));
  size_t n = ref_rng_range(&r, 1, 3000);
  set_case("zero_frames: block %u n %zu ", block, n);
  kset_describe(&k);
  input in;
  input_make(&in, &r, 2, n);
  cf_engine *e = make_engine(&k, block);
  run ru;
  run_start(&ru, e, block, n + cf_engine_tail(e) + 8);
  CHECK_OK(cf_engine_process(e, in.x, ru.out, 0)); /* before anything */
  check_guard(&ru, "process(0 frames)");
  size_t half = n / 2;
  run_feed(&ru, &r, in.x, half, 0);
  for (int i = 0; i < 3; i++)
    CHECK_OK(cf_engine_process(e, in.x + half * 2, ru.out + ru.pos * 2, 0));
  check_guard(&ru, "process(0 frames)");
  run_feed(&ru, &r, in.x + half * 2, n - half, 0);
  CHECK_OK(cf_engine_process(e, in.x, ru.out + ru.pos * 2, 0));
  run_drain(&ru, &r);
  model m = {.nstage = 1, .ks = {&k}, .in = &in};
  check_region(&ru, &r, &m, 0, 0, ru.pos, "stream with empty calls");
  run_end(&ru);
  input_free(&in);
  kset_free(&k);
}

static void test_in_place(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 15);
  for (unsigned c = 0; c < 6; c++) {
    kset k;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 4);
    cf_routing rt = c % 3 == 0 ? CF_ROUTING_SHARED
                    : c % 3 == 1 ? CF_ROUTING_PER_CHANNEL : CF_ROUTING_MATRIX;
    kset_init(&k, rt, ch, ch);
    for (unsigned i = 0; i < k.count; i++)
      kset_set(&k, &r, i, rand_len_short(&r, 3000, block));
    size_t n = rand_frames(&r, kset_lmax(&k), block);
    fit_stream(&k, &n, &block);
    set_case("in_place #%u: block %u ", c, block);
    kset_describe(&k);
    stream_case(&r, &k, block, n, 1);
    kset_free(&k);
  }
}

/* Chunk invariance to the bit: engine.h promises any chunking the same
 * concatenated output as one call on the whole signal, and a host that
 * renders a stream at one buffer size and plays it at another (a DAW's
 * bounce against its playback, a null test) sees any difference. A random
 * chunking (0, 1, primes, blocks and more) against one call and a drain,
 * on two engines of the same kernel set, compared with memcmp. The AVX2
 * direct path rounded a chunk's last few outputs (fewer than a vector)
 * apart from the vector loop's FMA: 1-2 ulp differences at most chunk
 * ends (QA). On the CPU backend; the CUDA paths are checked against the
 * reference by the tests above. */
static void test_chunks_bit_exact(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU) {
    printf("skipped: test_chunks_bit_exact: checked on the CPU backend\n");
    skip();
  }
  ref_rng r;
  test_rng(&r, 40);
  for (unsigned c = 0; c < 8; c++) {
    kset k;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 3);
    cf_routing rt = c % 2 ? CF_ROUTING_PER_CHANNEL : CF_ROUTING_SHARED;
    kset_init(&k, rt, ch, ch);
    for (unsigned i = 0; i < k.count; i++) /* past fir's 128-tap block too */
      kset_set(&k, &r, i, rand_len(&r, 1, 600));
    size_t n = ref_rng_range(&r, 1000, 12000);
    fit_stream(&k, &n, &block);
    set_case("chunks_bit_exact #%u: block %u ", c, block);
    kset_describe(&k);
    input in;
    input_make(&in, &r, ch, n);
    run ru;
    cf_engine *e = make_engine(&k, block);
    run_start(&ru, e, block, n + cf_engine_tail(e) + 4);
    run_feed(&ru, &r, in.x, n, 0);
    run_drain(&ru, &r);
    /* the same stream in one call */
    cf_engine *one = make_engine(&k, block);
    float *y = xalloc((n + ru.tail) * ch * sizeof(float));
    size_t written = 0;
    CHECK(cf_engine_process(one, in.x, y, n) == CF_OK &&
          cf_engine_drain(one, y + n * ch, ru.tail, &written) == CF_OK &&
          written == ru.tail, "one call: %s", cf_last_error());
    size_t first = (size_t)-1, count = 0;
    for (size_t i = 0; i < (n + ru.tail) * ch; i++)
      if (memcmp(&y[i], &ru.out[i], sizeof(float))) {
        if (first == (size_t)-1)
          first = i;
        count++;
      }
    CHECK(count == 0, "%zu of %zu output samples differ from one call's; "
          "the first at frame %zu channel %zu: %.9g, one call %.9g", count,
          (n + ru.tail) * ch, first / ch, first % ch, ru.out[first],
          y[first]);
    free(y);
    cf_engine_free(one);
    run_end(&ru);
    input_free(&in);
    kset_free(&k);
  }
}

/* NaN in one channel: no crash, it reaches that channel's output, within
 * the span engine.h gives (exactly the kernel's window on the direct path,
 * whole FFT blocks on the others) and nowhere else; the other channel is
 * untouched, and after a reset the output is finite and right. */
static void test_nan_input(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 16);
  for (unsigned c = 0; c < 3; c++) {
    kset k;
    unsigned block = rand_block(&r);
    kset_init(&k, CF_ROUTING_SHARED, 2, 2);
    kset_set(&k, &r, 0, rand_len(&r, 1, 3000));
    size_t len = k.len[0];
    /* long enough that outputs past the FFT span are often there */
    size_t n = ref_rng_range(&r, 1, 5 * (len + block) + 1000);
    size_t nf = ref_rng_range(&r, 1, 2 * (len + block));
    /* the emulated device's share (CF_TEST_WORK): its direct path took
     * 16 s of CI's time here, on a 3000-tap kernel and 36000 frames */
    fit_work(&k, &n, &block);
    fit_work(&k, &nf, &block);
    size_t p = ref_rng_range(&r, 0, n - 1);
    set_case("nan_input #%u: block %u n %zu NaN at frame %zu channel 1 ", c,
             block, n, p);
    kset_describe(&k);
    input in;
    input_make(&in, &r, 2, n);
    float bad = c == 2 ? INFINITY : NAN;
    in.x[p * 2 + 1] = bad;
    input fresh;
    input_make(&fresh, &r, 2, nf);
    cf_engine *e = make_engine(&k, block);
    run ru;
    run_start(&ru, e, block, n + fresh.n + 2 * cf_engine_tail(e) + 16);
    run_feed(&ru, &r, in.x, n, 0);
    run_drain(&ru, &r);
    /* y_1[j] for j in [p, p + len) involves the NaN (for Inf: unless
     * the tap is 0, which random taps are not) */
    for (size_t j = p; j < p + len && j + ru.lat < ru.pos; j++)
      CHECK(!isfinite(ru.out[(j + ru.lat) * 2 + 1]),
            "NaN at input frame %zu did not reach output frame %zu (y index "
            "%zu): %g", p, j + ru.lat, j,
            (double)ru.out[(j + ru.lat) * 2 + 1]);
    /* The y indices [lo, hi) of channel 1 it may reach (engine.h): the
     * window on the direct path (CUDA's taps zero-padded to 8); from its
     * block's start to p + len - 1 + 3P on the FFT paths, P the largest
     * partition (the block on the uniform ones, CUDA's included; at most
     * the kernel's length beyond that on the non-uniform one). Elsewhere,
     * and on channel 0 all through, the output is finite and exact. */
    {
      size_t lw = V->backend == CF_BACKEND_CUDA ? (len + 7) / 8 * 8 : len;
      size_t lo = p, hi = p + lw;
      if (!is_direct()) {
        size_t P = V->backend == CF_BACKEND_CUDA ||
                           V->algo == CF_ALGO_FFT_UNIFORM || block >= len
                       ? block
                       : len;
        lo = p - p % block;
        hi = p + lw + 3 * P;
      }
      in.xp[1][p] = 0.0f; /* what the other outputs see of it */
      input in1 = in;      /* channel 1 as k0's one input */
      in1.ch = 1;
      in1.xp[0] = in.xp[1];
      kset k0;
      kset_init(&k0, CF_ROUTING_SHARED, 1, 1);
      k0.len[0] = len;
      k0.h[0] = k.h[0];
      size_t tot = ru.pos;
      float *oc = xalloc((tot + GUARD) * sizeof(float));
      for (unsigned ch = 0; ch < 2; ch++) {
        model m = {.nstage = 1, .ks = {&k0}, .in = ch ? &in1 : &in};
        run rc = ru;
        rc.must = (idxset){0};
        for (size_t t = 0; t < tot; t++)
          oc[t] = ru.out[t * 2 + ch];
        rc.out = oc;
        rc.cout = 1;
        if (!ch) {
          check_region(&rc, &r, &m, 0, 0, tot, "channel 0 beside a NaN in "
                       "channel 1");
          continue;
        }
        size_t a = lo + ru.lat < tot ? lo + ru.lat : tot, b = hi + ru.lat;
        add_case("span y [%zu, %zu) ", lo, hi);
        for (size_t t = ru.lat; t < tot; t++)
          CHECK(isfinite(oc[t]) || (t >= a && t < b),
                "the NaN at y index %zu made output frame %zu (y index %zu) "
                "non-finite, outside the span [%zu, %zu) engine.h gives",
                p, t, t - ru.lat, lo, hi);
        check_region(&rc, &r, &m, 0, 0, a, "channel 1 before the NaN's span");
        if (b < tot)
          check_region(&rc, &r, &m, 0, b, tot, "channel 1 after the NaN's "
                       "span");
      }
      free(oc);
    }
    CHECK_OK(cf_engine_reset(e));
    size_t base = ru.pos;
    run_feed(&ru, &r, fresh.x, fresh.n, 0);
    run_drain(&ru, &r);
    for (size_t t = base * 2; t < ru.pos * 2; t++)
      CHECK(isfinite(ru.out[t]), "output not finite after reset: value %zu "
            "after the reset is %g", t - base * 2, (double)ru.out[t]);
    model mf = {.nstage = 1, .ks = {&k}, .in = &fresh};
    check_region(&ru, &r, &mf, base, base, ru.pos, "stream after NaN and "
                 "reset");
    run_end(&ru);
    input_free(&fresh);
    input_free(&in);
    kset_free(&k);
  }
}

/* A signal, then denormal samples (a tail decaying to silence passes
 * there): on x86 the CPU engine computes with denormals flushed to zero
 * (engine.h), so every output that only denormal inputs reach is exactly
 * 0 (they made denormal outputs before, the FFT paths up to 2.3x slower on
 * this EPYC, many Intel CPUs far more: bench_engine --denormal); the
 * rest matches the float64 reference as always. Whatever the caller's
 * MXCSR (rounding, FTZ, DAZ), its control bits are as they were after
 * every call, swaps included, whether the work ran on the caller's thread
 * or the pool's. */
static void test_denormal_input(void **state)
{
  (void)state;
#if !defined(__SSE2__)
  print_message("skipped: denormals are flushed on x86 only\n");
#else
  if (V->backend != CF_BACKEND_CPU) {
    print_message("note: the CPU backend flushes denormals: tested in the "
                  "cpu variants\n");
    return;
  }
  if (!check_mxcsr_settable())
    skip();
  /* default; FTZ; DAZ; both with round-up (the engine keeps the caller's
   * rounding, so only the last case's numbers are not checked) */
  static const unsigned words[] = {0x1f80u, 0x9f80u, 0x1f80u, 0x1fc0u,
                                   0x1f80u, 0xdfc0u};
  const unsigned saved = _mm_getcsr();
  ref_rng r;
  test_rng(&r, 20);
  for (unsigned c = 0; c < 6; c++) {
    kset k, k2;
    unsigned block = rand_block(&r);
    unsigned ch = (unsigned)ref_rng_range(&r, 1, 4);
    cf_routing rt = c % 3 == 0 ? CF_ROUTING_SHARED
                    : c % 3 == 1 ? CF_ROUTING_PER_CHANNEL : CF_ROUTING_MATRIX;
    kset_init(&k, rt, ch, ch);
    kset_init(&k2, rt, ch, ch);
    for (unsigned i = 0; i < k.count; i++) {
      kset_set(&k, &r, i, rand_len_short(&r, 3000, block));
      kset_set(&k2, &r, i, k.len[i]);
    }
    size_t lmax = kset_lmax(&k);
    /* how far past a sample its arithmetic reaches (engine.h, the NaN
     * spans): the kernel on the direct path; 3 partitions more on the FFT
     * paths (auto's may be either) */
    size_t P = V->algo == CF_ALGO_FFT_UNIFORM || block >= lmax ? block : lmax;
    size_t reach = lmax - 1 + (is_direct() ? 0 : 3 * P);
    size_t n1 = ref_rng_range(&r, 1, 2 * (lmax + block));
    size_t n = n1 + reach + block + ref_rng_range(&r, 0, 2000);
    unsigned word = words[c];
    set_case("denormal_input #%u: MXCSR %#x block %u signal %zu then %zu "
             "denormal frames ", c, word, block, n1, n - n1);
    kset_describe(&k);
    input in;
    input_make(&in, &r, ch, n);
    for (size_t j = n1; j < n; j++)
      for (unsigned i = 0; i < ch; i++) {
        in.x[j * ch + i] = ldexpf(in.x[j * ch + i], -127);
        in.xp[i][j] = in.x[j * ch + i];
      }
    _mm_setcsr(word);
    cf_engine *e = make_engine(&k, block);
    check_mxcsr(word, "cf_engine_new_audio");
    run ru;
    run_start(&ru, e, block, n + cf_engine_tail(e) + 8);
    run_feed(&ru, &r, in.x, n, c % 2);
    check_mxcsr(word, "process");
    run_drain(&ru, &r);
    check_mxcsr(word, "drain");
    _mm_setcsr(saved);
    for (size_t t = ru.lat + n1 + reach; t < ru.pos; t++)
      for (unsigned o = 0; o < ch; o++)
        CHECK(ru.out[t * ch + o] == 0.0f,
              "output frame %zu (y index %zu) channel %u is %g: only "
              "denormal inputs reach it", t, t - ru.lat, o,
              (double)ru.out[t * ch + o]);
    model m = {.nstage = 1, .ks = {&k}, .in = &in};
    if (!(word & 0x6000u)) /* round to nearest */
      check_region(&ru, &r, &m, 0, 0, ru.pos, "signal then denormals");
    /* the swaps' calls (they prime the new kernel on the past input) */
    cf_kernel *kk = NULL, *kk2 = NULL;
    cf_swap_prep *p = NULL;
    CHECK_OK(kset_build(&k, &kk));
    CHECK_OK(kset_build(&k2, &kk2));
    _mm_setcsr(word);
    CHECK_OK(cf_engine_process(e, in.x, ru.out, n));
    CHECK_OK(cf_engine_set_kernel(e, kk2, block));
    check_mxcsr(word, "set_kernel");
    CHECK_OK(cf_engine_prepare_kernel(e, kk));
    check_mxcsr(word, "prepare_kernel");
    CHECK_OK(cf_engine_prepare_swap(e, kk, &p));
    check_mxcsr(word, "prepare_swap");
    CHECK_OK(cf_engine_process(e, in.x, ru.out, n));
    CHECK_OK(cf_engine_set_prepared(e, p, 0));
    check_mxcsr(word, "set_prepared");
    CHECK_OK(cf_engine_reset(e));
    check_mxcsr(word, "reset");
    _mm_setcsr(saved);
    cf_swap_prep_free(p);
    cf_kernel_free(kk);
    cf_kernel_free(kk2);
    run_end(&ru);
    input_free(&in);
    kset_free(&k);
    kset_free(&k2);
  }
#endif
}

static void expect_new_fails(const cf_audio_config *cfg, const cf_kernel *k,
                             cf_status want, const char *what)
{
  cf_engine *e = NULL;
  cf_status st = cf_engine_new_audio(cfg, k, &e);
  CHECK(st == want, "%s: cf_engine_new_audio returned %s, want %s", what,
        cf_status_name(st), cf_status_name(want));
  CHECK(*cf_last_error(), "%s: no error message", what);
  if (st == CF_OK)
    cf_engine_free(e);
}

static void test_bad_config(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 17);
  float taps[64];
  ref_rng_fill(&r, taps, 64);
  cf_audio_config cfg;
  cf_kernel *k = NULL;
  set_case("bad_config");

  cf_audio_config_init(NULL); /* does nothing (error.h) */
  cf_audio_config_init(&cfg);
  CHECK(cfg.channels == 1 && cfg.block_size == 1024 &&
        cfg.backend == CF_BACKEND_AUTO && cfg.algorithm == CF_ALGO_AUTO &&
        cfg.device_id == 0 && cfg.threads == 0 && cfg.pipeline_depth == 0 &&
        cfg.swap_history == 245760,
        "cf_audio_config_init defaults differ from engine.h");
  cfg.backend = V->backend;
  cfg.algorithm = V->algo;
  CHECK_OK(cf_kernel_new_shared(taps, 64, &k));

  cfg.channels = 0;
  expect_new_fails(&cfg, k, CF_E_INVALID, "channels 0");
  cfg.channels = CF_MAX_CHANNELS + 1;
  expect_new_fails(&cfg, k, CF_E_INVALID, "channels > CF_MAX_CHANNELS");
  cfg.channels = 2;
  cfg.block_size = 0;
  expect_new_fails(&cfg, k, CF_E_INVALID, "block_size 0");
  cfg.block_size = 256;
  cfg.pipeline_depth = CF_AUDIO_MAX_DEPTH + 1;
  expect_new_fails(&cfg, k, CF_E_INVALID, "pipeline_depth > max");
  cfg.pipeline_depth = V->depth;
  /* threads past engine.h's 2^20 were taken and cut to the channels
   * without a word (QA) */
  static const unsigned bad_threads[] = {(1u << 20) + 1, 4000000000u};
  for (size_t i = 0; i < 2; i++) {
    char what[64];
    snprintf(what, sizeof what, "threads %u", bad_threads[i]);
    cfg.threads = bad_threads[i];
    expect_new_fails(&cfg, k, CF_E_INVALID, what);
    CHECK(strstr(cf_last_error(), "threads"),
          "%s: the message '%s' does not name the field", what,
          cf_last_error());
  }
  cfg.threads = 0;
  /* swap_history sizes a ring: values that wrapped its size computation
   * (2^62, SIZE_MAX: a short ring overrun in process) or doubled it past
   * SIZE_MAX (2^63: an endless loop) are refused, naming the field; 2^63
   * last, so that a regression fails before it hangs */
  static const size_t bad_hist[] = {CF_AUDIO_MAX_SWAP_HISTORY + 1,
                                    (size_t)1 << 62, SIZE_MAX,
                                    (size_t)1 << 63};
  for (size_t i = 0; i < sizeof bad_hist / sizeof *bad_hist; i++) {
    char what[64];
    snprintf(what, sizeof what, "swap_history %zu", bad_hist[i]);
    cfg.swap_history = bad_hist[i];
    expect_new_fails(&cfg, k, CF_E_INVALID, what);
    CHECK(strstr(cf_last_error(), "swap_history"),
          "%s: the message '%s' does not name the field", what,
          cf_last_error());
  }
  cfg.swap_history = 0; /* the kernel's own length: valid */
  {
    cf_engine *e = NULL;
    CHECK_OK(cf_engine_new_audio(&cfg, k, &e));
    cf_engine_free(e);
  }
  cfg.swap_history = 262144;
  /* process: an output that starts inside the input (not in place), and
   * a frame count past the address space, are refused, nothing written
   * (QA: the first was taken, the output writing over input not read
   * yet; the second read past the buffer) */
  {
    cf_engine *e = NULL;
    CHECK_OK(cf_engine_new_audio(&cfg, k, &e));
    float buf[2 * 64 + 2];
    for (size_t i = 0; i < sizeof buf / sizeof *buf; i++)
      buf[i] = (float)i;
    cf_status st = cf_engine_process(e, buf, buf + 1, 64);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "overlap") &&
              buf[1] == 1.0f && buf[128] == 128.0f,
          "process with out = in + 1 returned %s: %s", cf_status_name(st),
          cf_last_error());
    st = cf_engine_process(e, buf + 1, buf, 64);
    CHECK(st == CF_E_INVALID, "process with in = out + 1 returned %s",
          cf_status_name(st));
    st = cf_engine_process(e, buf, buf, SIZE_MAX / 4);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "address space"),
          "process of SIZE_MAX / 4 frames returned %s: %s",
          cf_status_name(st), cf_last_error());
    CHECK_OK(cf_engine_process(e, buf, buf, 64)); /* in place: fine */
    cf_engine_free(e);
  }
  /* a NULL out pointer is refused, never written (error.h) */
  {
    cf_status st = cf_engine_new_audio(&cfg, k, NULL);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "out"),
          "cf_engine_new_audio(out NULL) returned %s: %s", cf_status_name(st),
          cf_last_error());
    st = cf_kernel_new(CF_ROUTING_MATRIX, 2, 2, NULL);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "out"),
          "cf_kernel_new(out NULL) returned %s: %s", cf_status_name(st),
          cf_last_error());
    st = cf_kernel_new_shared(taps, 64, NULL);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "out"),
          "cf_kernel_new_shared(out NULL) returned %s: %s",
          cf_status_name(st), cf_last_error());
    st = cf_kernel_copy(k, NULL);
    CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "out"),
          "cf_kernel_copy(k, NULL) returned %s: %s", cf_status_name(st),
          cf_last_error());
    cf_kernel *kc = k; /* must be set to NULL */
    st = cf_kernel_copy(NULL, &kc);
    CHECK(st == CF_E_INVALID && kc == NULL,
          "cf_kernel_copy(NULL, &out) returned %s, out %p",
          cf_status_name(st), (void *)kc);
    /* N per-channel kernels read as an (N / inputs) x inputs matrix,
     * entry j kernel j (a true-stereo WAV's channels); a matrix of those
     * inputs copied; other counts refused, nothing made */
    for (unsigned rep = 0; rep < 4; rep++) {
      unsigned ins = (unsigned)ref_rng_range(&r, 1, 4),
               outs = (unsigned)ref_rng_range(&r, 1, 4), n = ins * outs;
      cf_kernel *pc = NULL, *m = NULL, *m2 = NULL;
      CHECK_OK(cf_kernel_new(n == 1 ? CF_ROUTING_SHARED
                                    : CF_ROUTING_PER_CHANNEL,
                             n, n, &pc));
      for (unsigned j = 0; j < n; j++)
        CHECK_OK(cf_kernel_set(pc, j, taps + j, 1 + j % 7));
      CHECK_OK(cf_kernel_as_matrix(pc, ins, &m));
      CHECK(cf_kernel_routing(m) == CF_ROUTING_MATRIX &&
                cf_kernel_outputs(m) == outs && cf_kernel_inputs(m) == ins,
            "%u kernels as a matrix of %u inputs: %s %u x %u", n, ins,
            cf_routing_name(cf_kernel_routing(m)), cf_kernel_outputs(m),
            cf_kernel_inputs(m));
      CHECK_OK(cf_kernel_as_matrix(m, ins, &m2)); /* a copy */
      for (unsigned j = 0; j < n; j++) {
        size_t la, lb;
        const float *ta = cf_kernel_taps(m2, j, &la);
        (void)cf_kernel_taps(pc, j, &lb);
        CHECK(la == 1 + j % 7 && lb == la && !memcmp(ta, taps + j, la * 4),
              "entry %u of the matrix is not kernel %u", j, j);
      }
      if (n > 1) {
        cf_kernel *bad = pc;
        cf_status sb = cf_kernel_as_matrix(pc, n + 1, &bad);
        CHECK(sb == CF_E_INVALID && !bad && strstr(cf_last_error(),
                                                   "multiple of the inputs"),
              "%u kernels as %u inputs: %s %s", n, n + 1, cf_status_name(sb),
              cf_last_error());
      }
      cf_kernel_free(m2);
      cf_kernel_free(m);
      cf_kernel_free(pc);
    }
    CHECK(cf_kernel_as_matrix(k, 1, NULL) == CF_E_INVALID,
          "cf_kernel_as_matrix(out NULL) accepted");
    CHECK(cf_routing_from_string("shared", NULL) == CF_E_INVALID &&
              cf_backend_from_string("cpu", NULL) == CF_E_INVALID &&
              cf_algorithm_from_string("direct", NULL) == CF_E_INVALID,
          "a *_from_string with out NULL did not return CF_E_INVALID");
  }
  /* a NULL handle is refused with a message naming the call, and the
   * accessors answer 0 (error.h; QA: 31 calls crashed on one) */
  {
    float buf[16] = {0};
    size_t n = 7;
    int got = 5;
    cf_frame fr = {0};
    cf_swap_prep *sp = (cf_swap_prep *)buf;
    cf_swap_prep2d *sp2 = (cf_swap_prep2d *)buf;
    cf_kernel2d *k2 = NULL;
    CHECK_OK(cf_kernel2d_preset(CF_PRESET_BOX, 3, 0, &k2));
    const struct {
      cf_status st;
      const char *words;
    } calls[] = {
        {cf_engine_process(NULL, buf, buf, 4), "process: NULL engine"},
        {cf_engine_drain(NULL, buf, 16, &n), "drain: NULL engine"},
        {cf_engine_reset(NULL), "reset: NULL engine"},
        {cf_engine_set_kernel(NULL, k, 0), "set_kernel: NULL engine"},
        {cf_engine_prepare_kernel(NULL, k), "prepare_kernel: NULL engine"},
        {cf_engine_prepare_swap(NULL, k, &sp), "prepare_swap: NULL engine"},
        {cf_engine_set_prepared(NULL, NULL, 0), "set_prepared: NULL engine"},
        {cf_engine_process_frame(NULL, &fr, &fr),
         "process_frame: NULL engine"},
        {cf_engine_flush_frame(NULL, &fr, &got), "flush_frame: NULL engine"},
        {cf_engine_set_kernel2d(NULL, k2), "set_kernel2d: NULL engine"},
        {cf_engine_prepare_kernel2d(NULL, k2),
         "prepare_kernel2d: NULL engine"},
        {cf_engine_prepare_swap2d(NULL, k2, &sp2),
         "prepare_swap2d: NULL engine"},
        {cf_engine_set_prepared2d(NULL, NULL), "set_prepared2d: NULL engine"},
        {cf_engine_take_retired2d(NULL, &sp2), "take_retired2d: NULL engine"},
        {cf_kernel_set(NULL, 0, taps, 3), "kernel set: NULL kernel"},
        {cf_kernel_scale(NULL, 2.0f), "kernel scale: NULL kernel"},
    };
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
      CHECK(calls[i].st == CF_E_INVALID,
            "NULL handle call %zu ('%s') returned %s", i, calls[i].words,
            cf_status_name(calls[i].st));
    /* each message in turn: the calls again, one at a time */
    cf_engine_process(NULL, buf, buf, 4);
    CHECK(strstr(cf_last_error(), "process: NULL engine"), "%s",
          cf_last_error());
    cf_engine_set_prepared2d(NULL, NULL);
    CHECK(strstr(cf_last_error(), "set_prepared2d: NULL engine"), "%s",
          cf_last_error());
    cf_kernel_scale(NULL, 2.0f);
    CHECK(strstr(cf_last_error(), "kernel scale: NULL kernel"), "%s",
          cf_last_error());
    CHECK(n == 0 && got == 0 && sp == NULL && sp2 == NULL,
          "a NULL-engine call left its outputs as they were: written %zu, "
          "got %d, swaps %p %p", n, got, (void *)sp, (void *)sp2);
    size_t len = 9;
    CHECK(cf_engine_latency(NULL) == 0 && cf_engine_tail(NULL) == 0 &&
              cf_engine_in_channels(NULL) == 0 &&
              cf_engine_out_channels(NULL) == 0 &&
              cf_engine_fallback_reason(NULL) == NULL &&
              strstr(cf_engine_describe(NULL), "NULL") &&
              cf_kernel_outputs(NULL) == 0 && cf_kernel_inputs(NULL) == 0 &&
              cf_kernel_count(NULL) == 0 && cf_kernel_max_len(NULL) == 0 &&
              cf_kernel_taps(NULL, 0, &len) == NULL && len == 0 &&
              cf_kernel2d_frames(NULL) == 0 &&
              cf_kernel2d_height(NULL) == 0 &&
              cf_kernel2d_width(NULL) == 0 && cf_kernel2d_taps(NULL) == NULL,
          "an accessor on a NULL handle did not answer 0");
    cf_kernel2d_free(k2);
  }
  cf_kernel_free(k);

  CHECK_OK(cf_kernel_new(CF_ROUTING_SHARED, 1, 1, &k));
  expect_new_fails(&cfg, k, CF_E_INVALID, "shared kernel of length 0");
  cf_kernel_free(k);

  CHECK_OK(cf_kernel_new(CF_ROUTING_PER_CHANNEL, 3, 3, &k));
  for (unsigned i = 0; i < 3; i++)
    CHECK_OK(cf_kernel_set(k, i, taps, 10 + i));
  expect_new_fails(&cfg, k, CF_E_INVALID, "3 per-channel kernels, 2 "
                   "channels");
  cf_kernel_free(k);

  CHECK_OK(cf_kernel_new(CF_ROUTING_PER_CHANNEL, 2, 2, &k));
  CHECK_OK(cf_kernel_set(k, 0, taps, 10));
  expect_new_fails(&cfg, k, CF_E_INVALID, "per-channel set with an empty "
                   "kernel");
  cf_kernel_free(k);

  CHECK_OK(cf_kernel_new(CF_ROUTING_MATRIX, 2, 3, &k));
  for (unsigned i = 0; i < 6; i++)
    CHECK_OK(cf_kernel_set(k, i, taps, 1 + i));
  expect_new_fails(&cfg, k, CF_E_INVALID, "matrix with 3 inputs, 2 channels");
  cf_kernel_free(k);

  /* kernel.h's shapes: each side 1..CF_MAX_CHANNELS, at most
   * CF_KERNEL_MAX_COUNT kernels (a filter bank of 256 bands, not more) */
  static const struct {
    cf_routing r;
    unsigned outs, ins;
    cf_status want;
  } shapes[] = {
      {CF_ROUTING_MATRIX, CF_MAX_CHANNELS, 16, CF_OK},
      {CF_ROUTING_MATRIX, 16, CF_MAX_CHANNELS, CF_OK},
      {CF_ROUTING_MATRIX, 64, 64, CF_OK},
      {CF_ROUTING_MATRIX, CF_MAX_CHANNELS + 1, 1, CF_E_INVALID},
      {CF_ROUTING_MATRIX, 1, CF_MAX_CHANNELS + 1, CF_E_INVALID},
      {CF_ROUTING_MATRIX, 65, 64, CF_E_INVALID},
      {CF_ROUTING_MATRIX, 0, 1, CF_E_INVALID},
      {CF_ROUTING_PER_CHANNEL, CF_MAX_CHANNELS, CF_MAX_CHANNELS, CF_OK},
      {CF_ROUTING_PER_CHANNEL, CF_MAX_CHANNELS + 1, CF_MAX_CHANNELS + 1,
       CF_E_INVALID},
  };
  for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    k = NULL;
    cf_status s = cf_kernel_new(shapes[i].r, shapes[i].outs, shapes[i].ins,
                                &k);
    CHECK(s == shapes[i].want && (s == CF_OK) == (k != NULL),
          "cf_kernel_new(%s, %u outputs, %u inputs): %s (%s), want %s",
          cf_routing_name(shapes[i].r), shapes[i].outs, shapes[i].ins,
          cf_status_name(s), s ? cf_last_error() : "",
          cf_status_name(shapes[i].want));
    CHECK(s != CF_OK || cf_kernel_count(k) ==
                            (shapes[i].r == CF_ROUTING_MATRIX
                                 ? shapes[i].outs * shapes[i].ins
                                 : shapes[i].outs),
          "cf_kernel_new(%s, %u, %u): %u kernels",
          cf_routing_name(shapes[i].r), shapes[i].outs, shapes[i].ins,
          cf_kernel_count(k));
    cf_kernel_free(k);
  }

  /* valid after all that */
  CHECK_OK(cf_kernel_new_shared(taps, 64, &k));
  cf_engine *e = NULL;
  CHECK_OK(cf_engine_new_audio(&cfg, k, &e));
  cf_engine_free(e);
  cf_kernel_free(k);
}

static void test_kernel_nan_tap(void **state)
{
  (void)state;
  ref_rng r;
  test_rng(&r, 18);
  float taps[2000];
  ref_rng_fill(&r, taps, 2000);
  cf_kernel *k = NULL;
  set_case("kernel_nan_tap");
  CHECK_OK(cf_kernel_new(CF_ROUTING_PER_CHANNEL, 2, 2, &k));
  taps[1234] = NAN;
  cf_status st = cf_kernel_set(k, 1, taps, 2000);
  CHECK(st == CF_E_INVALID, "NaN tap: cf_kernel_set returned %s",
        cf_status_name(st));
  CHECK(strstr(cf_last_error(), "1234"), "NaN tap: message '%s' does not "
        "name tap 1234", cf_last_error());
  taps[1234] = 0.5f;
  taps[1777] = -INFINITY;
  st = cf_kernel_set(k, 0, taps, 2000);
  CHECK(st == CF_E_INVALID, "Inf tap: cf_kernel_set returned %s",
        cf_status_name(st));
  CHECK(strstr(cf_last_error(), "1777"), "Inf tap: message '%s' does not "
        "name tap 1777", cf_last_error());
  cf_kernel_free(k);

  /* cf_kernel_scale keeps the taps finite: a gain that is not finite, or
   * one that overflows a tap, is refused and changes nothing */
  taps[1777] = 4.0f; /* 4 x 1e38 overflows */
  CHECK_OK(cf_kernel_new(CF_ROUTING_PER_CHANNEL, 2, 2, &k));
  CHECK_OK(cf_kernel_set(k, 0, taps, 2000));
  CHECK_OK(cf_kernel_set(k, 1, taps, 1000));
  static const float gains[] = {NAN, INFINITY, -INFINITY, 1e38f};
  for (size_t g = 0; g < sizeof gains / sizeof *gains; g++) {
    cf_status sst = cf_kernel_scale(k, gains[g]);
    CHECK(sst == CF_E_INVALID && strstr(cf_last_error(), "scale"),
          "cf_kernel_scale(gain %g) returned %s: '%s'", (double)gains[g],
          cf_status_name(sst), cf_last_error());
    for (unsigned i = 0; i < 2; i++) {
      size_t len;
      const float *t = cf_kernel_taps(k, i, &len);
      CHECK(!memcmp(t, taps, len * sizeof *t),
            "cf_kernel_scale(gain %g) refused, but kernel %u changed",
            (double)gains[g], i);
    }
  }
  CHECK_OK(cf_kernel_scale(k, -0.5f));
  {
    size_t len;
    const float *t = cf_kernel_taps(k, 0, &len);
    CHECK(t[1777] == -2.0f && t[3] == taps[3] * -0.5f,
          "cf_kernel_scale(-0.5): tap 1777 is %g, want -2", (double)t[1777]);
  }
  cf_kernel_free(k);

  /* and the engine refuses a set whose taps turned non-finite behind the
   * kernel API's back (written through the taps pointer) */
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.backend = V->backend;
  cfg.algorithm = V->algo;
  cfg.pipeline_depth = V->depth;
  cfg.block_size = 64;
  cf_kernel *good = NULL, *bad = NULL;
  taps[1777] = 0.25f;
  CHECK_OK(cf_kernel_new_shared(taps, 300, &good));
  CHECK_OK(cf_kernel_new_shared(taps, 300, &bad));
  size_t blen;
  ((float *)cf_kernel_taps(bad, 0, &blen))[123] = NAN;
  cf_engine *e = NULL;
  st = cf_engine_new_audio(&cfg, bad, &e);
  CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "123"),
        "cf_engine_new_audio with a NaN tap returned %s: '%s'",
        cf_status_name(st), cf_last_error());
  if (st == CF_OK)
    cf_engine_free(e);
  CHECK_OK(cf_engine_new_audio(&cfg, good, &e));
  st = cf_engine_set_kernel(e, bad, 10);
  CHECK(st == CF_E_INVALID, "set_kernel with a NaN tap returned %s",
        cf_status_name(st));
  st = cf_engine_prepare_kernel(e, bad);
  CHECK(st == CF_E_INVALID, "prepare_kernel with a NaN tap returned %s",
        cf_status_name(st));
  cf_swap_prep *p = NULL;
  st = cf_engine_prepare_swap(e, bad, &p);
  CHECK(st == CF_E_INVALID && !p, "prepare_swap with a NaN tap returned %s",
        cf_status_name(st));
  cf_swap_prep_free(p);
  /* the engine still runs the good set: an impulse gives its taps */
  float x[300] = {1.0f}, y[300];
  CHECK_OK(cf_engine_process(e, x, y, 300));
  size_t lat = cf_engine_latency(e);
  for (size_t j = lat; j < 300; j++)
    CHECK(isfinite(y[j]) && fabsf(y[j] - taps[j - lat]) <= 1e-5f,
          "after refused swaps: output %zu is %g, want tap %zu = %g", j,
          (double)y[j], j - lat, (double)taps[j - lat]);
  cf_engine_free(e);
  cf_kernel_free(good);
  cf_kernel_free(bad);
}

static void test_backends(void **state)
{
  (void)state;
  const char *reason = NULL;
  set_case("backends");
  CHECK(cf_backend_available(CF_BACKEND_CPU, &reason) == CF_OK,
        "the CPU backend is not available: %s", reason ? reason : "");
  /* a failure records its own message (error.h), over an older one */
  cf_routing rt;
  CHECK(cf_routing_from_string("stale", &rt) == CF_E_INVALID,
        "routing 'stale' accepted");
  cf_status st = cf_backend_available((cf_backend)7, &reason);
  CHECK(st == CF_E_INVALID && strstr(cf_last_error(), "backend"),
        "cf_backend_available(7) returned %s, cf_last_error() '%s'",
        cf_status_name(st), cf_last_error());
  CHECK(cf_routing_from_string("stale", &rt) == CF_E_INVALID,
        "routing 'stale' accepted");
  /* devices named, and ids that name none */
  const char *why = NULL;
  int ndev = cf_device_count(&why);
  char desc[128];
  CHECK(cf_device_describe(0, NULL, 16) == CF_E_INVALID &&
            cf_device_describe(0, desc, 0) == CF_E_INVALID,
        "cf_device_describe with no buffer: not CF_E_INVALID");
  const int bad_ids[] = {-1, INT_MIN, ndev, ndev + 7};
  for (unsigned i = 0; i < 4; i++) {
    strcpy(desc, "stale");
    st = cf_device_describe(bad_ids[i], desc, sizeof desc);
    CHECK(ndev ? st == CF_E_INVALID && strstr(cf_last_error(), "out of range")
               : st == CF_E_UNAVAILABLE && why &&
                     strstr(cf_last_error(), why),
          "cf_device_describe(%d) with %d devices returned %s: '%s'",
          bad_ids[i], ndev, cf_status_name(st), cf_last_error());
    CHECK(desc[0] == '\0', "cf_device_describe(%d) failed leaving '%s'",
          bad_ids[i], desc);
  }
  for (int i = 0; i < ndev; i++) {
    CHECK_OK(cf_device_describe(i, desc, sizeof desc));
    CHECK(strlen(desc) > 3, "device %d described as '%s'", i, desc);
  }
  st = cf_backend_available(CF_BACKEND_CUDA, &reason);
  if (st != CF_OK)
    CHECK(reason && strstr(cf_last_error(), reason),
          "cf_backend_available(cuda) returned %s with reason '%s', but "
          "cf_last_error() is '%s'", cf_status_name(st),
          reason ? reason : "(null)", cf_last_error());
  if (st == CF_OK) {
    print_message("note: cuda available, the unavailable-backend check does "
                  "not apply here\n");
    return;
  }
  CHECK(st == CF_E_UNAVAILABLE, "cf_backend_available(cuda) returned %s",
        cf_status_name(st));
  CHECK(reason && *reason, "cuda unavailable without a reason");
  float taps[5] = {1, 2, 3, 4, 5};
  cf_kernel *k = NULL;
  CHECK_OK(cf_kernel_new_shared(taps, 5, &k));
  cf_audio_config cfg;
  cf_audio_config_init(&cfg);
  cfg.backend = CF_BACKEND_CUDA;
  cf_engine *e = NULL;
  st = cf_engine_new_audio(&cfg, k, &e);
  CHECK(st == CF_E_UNAVAILABLE, "engine on cuda without a device returned "
        "%s, want CF_E_UNAVAILABLE", cf_status_name(st));
  CHECK(strlen(cf_last_error()) > 5, "CF_E_UNAVAILABLE without a reason: "
        "'%s'", cf_last_error());
  /* auto falls back to the CPU */
  cfg.backend = CF_BACKEND_AUTO;
  CHECK_OK(cf_engine_new_audio(&cfg, k, &e));
  CHECK(cf_engine_backend(e) == CF_BACKEND_CPU, "auto without cuda chose %s",
        cf_backend_name(cf_engine_backend(e)));
  cf_engine_free(e);
  cf_kernel_free(k);
  /* names */
  static const char *const an[] = {"auto", "direct", "fft-uniform",
                                   "fft-nonuniform"};
  for (int i = 0; i < 4; i++) {
    cf_algorithm a;
    CHECK_OK(cf_algorithm_from_string(an[i], &a));
    CHECK((int)a == i && !strcmp(cf_algorithm_name(a), an[i]),
          "algorithm name round trip for '%s'", an[i]);
  }
  cf_algorithm a;
  CHECK(cf_algorithm_from_string("fast", &a) == CF_E_INVALID,
        "algorithm 'fast' accepted");
  for (int b = 0; b < 3; b++) {
    cf_backend bb;
    CHECK_OK(cf_backend_from_string(cf_backend_name((cf_backend)b), &bb));
    CHECK((int)bb == b, "backend name round trip for %d", b);
  }
}

/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* Address space                                                        */

/* Many engines of many threads in a small address space (RLIMIT_AS: ulimit
 * -v, a container, the daemon on a small box). 16 engines of 16 channels
 * at threads = 16 made 240 workers: on glibc's default 8 MiB stacks 1.9 GB
 * of address space (3.2 GB VmSize, 332 MB RSS in all), so under a limit
 * the engines failed with memory to spare (QA). Here 16 such engines
 * stream in a child under VmSize + 192 MiB: engine 0 against the float64
 * reference, the others bit-identical to it. */
static void test_threads_small_address_space(void **state)
{
  (void)state;
  if (V->backend != CF_BACKEND_CPU || V->algo != CF_ALGO_FFT_UNIFORM ||
      V->depth) {
    print_message("skipped: once, on cpu-fft-uniform\n");
    return;
  }
  if (!check_thread_limit_holds())
    skip();
  enum { NE = 16, CH = 16, THREADS = 16, BLOCK = 256 };
  const size_t len = 2048, n = 3000, room = (size_t)192 << 20;
  ref_rng r;
  test_rng(&r, 61);
  set_case("threads_small_address_space: %u engines of %u channels, "
           "threads %u, %zu taps, block %u", NE, CH, THREADS, len, BLOCK);
  float *h = malloc(len * sizeof *h);
  float *x = malloc(n * CH * sizeof *x);
  size_t ny = n + len - 1 + BLOCK;
  float *y = malloc(ny * CH * sizeof *y), *y0 = malloc(ny * CH * sizeof *y0);
  CHECK(h && x && y && y0, "out of memory");
  ref_rng_fill(&r, h, len);
  ref_rng_fill(&r, x, n * CH);
  cf_kernel *k = NULL;
  CHECK(cf_kernel_new_shared(h, len, &k) == CF_OK, "cf_kernel_new_shared: %s",
        cf_last_error());
  size_t vm = check_status_bytes("VmSize");
  pid_t pid = check_fork_limited(room);
  if (pid == 0) {
    cf_audio_config cfg;
    cf_audio_config_init(&cfg);
    cfg.channels = CH;
    cfg.block_size = BLOCK;
    cfg.backend = CF_BACKEND_CPU;
    cfg.algorithm = CF_ALGO_FFT_UNIFORM;
    cfg.threads = THREADS;
    cfg.swap_history = 0; /* 1 MiB a channel by default: not the point */
    cf_engine *e[NE] = {0};
    for (unsigned i = 0; i < NE; i++) {
      cf_status st = cf_engine_new_audio(&cfg, k, &e[i]);
      if (st != CF_OK) {
        fprintf(stderr, "engine %u of %u: %s: %s (VmSize %zu MiB)\n", i + 1,
                NE, cf_status_name(st), cf_last_error(),
                check_status_bytes("VmSize") >> 20);
        _exit(4);
      }
    }
    fprintf(stderr, "%u engines: VmSize %zu MiB (+%zu), VmRSS %zu MiB, %s\n",
            NE, check_status_bytes("VmSize") >> 20,
            (check_status_bytes("VmSize") - vm) >> 20, check_status_bytes("VmRSS") >> 20,
            cf_engine_describe(e[0]));
    size_t lat = cf_engine_latency(e[0]);
    for (unsigned i = 0; i < NE; i++) {
      float *out = i ? y : y0;
      size_t got = 0;
      memset(out, 0, ny * CH * sizeof *out);
      if (cf_engine_process(e[i], x, out, n) != CF_OK ||
          cf_engine_drain(e[i], out + n * CH, ny - n, &got) != CF_OK ||
          got != lat + len - 1) {
        fprintf(stderr, "engine %u: %s (drained %zu, want %zu)\n", i,
                cf_last_error(), got, lat + len - 1);
        _exit(5);
      }
      if (i && memcmp(y, y0, ny * CH * sizeof *y)) {
        fprintf(stderr, "engine %u's output differs from engine 0's\n", i);
        _exit(6);
      }
    }
    double err = ref_worst_channel_l2(x, y0, n, CH, h, len, lat);
    if (!(err < 2e-5)) {
      fprintf(stderr, "engine 0: relative L2 error %g\n", err);
      _exit(7);
    }
    for (unsigned i = 0; i < NE; i++)
      cf_engine_free(e[i]);
    _exit(0);
  }
  int st = check_child_status(pid);
  cf_kernel_free(k);
  free(h);
  free(x);
  free(y);
  free(y0);
  CHECK(st == 0,
        "child: status %d (3: setrlimit, 4: an engine not made in VmSize + "
        "%zu MiB, 5: process/drain failed, 6: engines differ, 7: wrong "
        "output)",
        st, room >> 20);
}

static check_variant_info select_variant(size_t v)
{
  V = &variants[v];
  return (check_variant_info){V->name, V->backend, V->algo != CF_ALGO_DIRECT};
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_backends),
    cmocka_unit_test(test_bad_config),
    cmocka_unit_test(test_kernel_nan_tap),
    cmocka_unit_test(test_latency_tail),
    cmocka_unit_test(test_nonuniform_layout),
    cmocka_unit_test(test_chunks_shared),
    cmocka_unit_test(test_chunks_per_channel),
    cmocka_unit_test(test_chunks_matrix),
    cmocka_unit_test(test_max_channels),
    cmocka_unit_test(test_drain_reuse),
    cmocka_unit_test(test_drain_small_capacity),
    cmocka_unit_test(test_reset),
    cmocka_unit_test(test_swap),
    cmocka_unit_test(test_swap_long),
    cmocka_unit_test(test_swap_during_crossfade),
    cmocka_unit_test(test_swap_burst),
    cmocka_unit_test(test_swap_reuse),
    cmocka_unit_test(test_swap_routing_change),
    cmocka_unit_test(test_swap_invalid),
    cmocka_unit_test(test_swap_crossfade_bound),
    cmocka_unit_test_teardown(test_swap_prepared, prepared_off),
    cmocka_unit_test_teardown(test_swap_prepared_misfit, prepared_off),
    cmocka_unit_test(test_zero_frames),
    cmocka_unit_test(test_in_place),
    cmocka_unit_test(test_chunks_bit_exact),
    cmocka_unit_test(test_nan_input),
    cmocka_unit_test(test_denormal_input),
    cmocka_unit_test(test_fallback),
    cmocka_unit_test(test_fallback_plan),
    cmocka_unit_test(test_threads_small_address_space),
  };
  return check_run_variants(tests, sizeof tests / sizeof *tests,
                            sizeof variants / sizeof *variants,
                            select_variant);
}
