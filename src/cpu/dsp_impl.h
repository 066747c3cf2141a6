/* Template for the hot loops: included once per instruction set by
 * dsp_generic.c, dsp_avx2.c and dsp_avx512.c, which define DSP_NAME (and
 * the vector shape) and compile it with their own -m flags. GCC vector
 * extensions keep it portable: an 8-lane vector lowers to two SSE
 * registers in the generic build and one AVX register (with FMA
 * contraction) in the AVX2 build; 16 lanes to one AVX-512 register. */
#include <string.h>

#include "dsp.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The 2D kernels work on vectors of DSP_VW lanes (8: SSE pairs or AVX2;
 * 16: AVX-512), DSP_NV of them per output row and DSP_ROWS output rows per
 * pass: as many accumulators as the registers hold (AVX-512: 3 x 6 = 18
 * of 32; AVX2: 2 x 4 = 8 of 16), so each input vector loaded feeds
 * DSP_ROWS FMAs (bench/results/conv2d-*.md). */
#ifndef DSP_VW
#define DSP_VW 8
#endif
#ifndef DSP_ROWS
#define DSP_ROWS 2
#endif
#ifndef DSP_NV
#define DSP_NV 4
#endif
/* conv_cols (one tap wide) has no taps across to share loads over, so it
 * takes more output rows a pass instead, DSP_CROWS of DSP_CNV vectors:
 * each filtered row it pulls from L2 then serves more outputs. */
#ifndef DSP_CROWS
#define DSP_CROWS 4
#endif
#ifndef DSP_CNV
#define DSP_CNV 1
#endif
typedef float vf __attribute__((vector_size(DSP_VW * 4)));
typedef int vi __attribute__((vector_size(DSP_VW * 4)));
#define BLOCK (DSP_NV * DSP_VW)
#define CBLOCK (DSP_CNV * DSP_VW)
_Static_assert(BLOCK % CBLOCK == 0, "conv_cols' block must divide BLOCK");
_Static_assert(DSP_ROWS <= CF_DSP_MAX_ROWS && DSP_CROWS <= CF_DSP_MAX_ROWS,
               "more output rows a pass than video.c holds");

static inline vf loadv(const float *p)
{
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void storev(float *p, vf v) { memcpy(p, &v, sizeof v); }

static inline vf bcastv(float x) { return x - (vf){0}; } /* exact */

/* Keep a loaded vector in a register: otherwise GCC folds the load into
 * each FMA that uses it, loading (and splitting across cache lines) once
 * per output row. */
#if defined(__AVX__)
#define IN_REG(v) __asm__("" : "+v"(v))
#else /* the generic build's vectors span two registers */
#define IN_REG(v) ((void)0)
#endif


typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float *p)
{
  v8 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void store8(float *p, v8 v) { memcpy(p, &v, sizeof v); }

static inline v8 bcast(float x) { return (v8){x, x, x, x, x, x, x, x}; }

/* Taps are summed in blocks of FIR_BLOCK into fresh accumulators that are
 * then added to the totals: float32 rounding then grows with the block
 * size and len / FIR_BLOCK rather than with len (long direct kernels stay
 * within 1e-6 of the float64 reference). */
#define FIR_BLOCK 128

#if DSP_VW == 16
/* x[s .. s + 16) from vectors a = x[0 .. 16) and b = x[16 .. 32)
 * (valignd, or vpermi2ps as GCC 12 emits it). */
#define WIN16(a, b, s)                                                         \
  __builtin_shufflevector(a, b, s, s + 1, s + 2, s + 3, s + 4, s + 5, s + 6,   \
                          s + 7, s + 8, s + 9, s + 10, s + 11, s + 12, s + 13, \
                          s + 14, s + 15)
#define FIR_TAP(s)                                                             \
  if (j0 + (s) < len) {                                                        \
    vf h = bcastv(hrev[j0 + s]);                                               \
    a0 += h * WIN16(x0, x1, s);                                                \
    a1 += h * WIN16(x1, x2, s);                                                \
    a2 += h * WIN16(x2, x3, s);                                                \
    a3 += h * WIN16(x3, x4, s);                                                \
  }

/* fir's 4 x 16 outputs a pass for len <= FIR_BLOCK (one block: the same
 * sums in the same order), from five loads per 16 taps shifted in
 * registers instead of four loads per tap, which split across cache
 * lines on 15 taps of 16: ~15% faster on a row of 1920. It reads up to
 * 15 samples further than fir's loop, so it stops while 80 outputs are
 * left and fir finishes. Returns the outputs done. */
static size_t fir_shifted(const float *x, const float *hrev, size_t len,
                          float *out, size_t m)
{
  size_t i = 0;
  for (; i + 80 <= m; i += 64) {
    vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    const float *xi = x + i;
    for (size_t j0 = 0; j0 < len; j0 += 16) {
      vf x0 = loadv(xi + j0), x1 = loadv(xi + j0 + 16);
      vf x2 = loadv(xi + j0 + 32), x3 = loadv(xi + j0 + 48);
      vf x4 = loadv(xi + j0 + 64);
      FIR_TAP(0);
      FIR_TAP(1);
      FIR_TAP(2);
      FIR_TAP(3);
      FIR_TAP(4);
      FIR_TAP(5);
      FIR_TAP(6);
      FIR_TAP(7);
      FIR_TAP(8);
      FIR_TAP(9);
      FIR_TAP(10);
      FIR_TAP(11);
      FIR_TAP(12);
      FIR_TAP(13);
      FIR_TAP(14);
      FIR_TAP(15);
    }
    storev(out + i, a0);
    storev(out + i + 16, a1);
    storev(out + i + 32, a2);
    storev(out + i + 48, a3);
  }
  return i;
}
#endif

/* fir's last outputs, fewer than a vector, one at a time and rounded as
 * the vector loops round them: their h * x contracts to an FMA where the
 * build has one (-mfma; __FP_FAST_FMAF), and a plain a += h * x here
 * became a product rounded apart from its sum (GCC vectorises the
 * products, vmulps, and keeps the sum in order, vaddss). An output then
 * came out 1-2 ulp apart by where a process() call's chunk ended, and
 * engine.h promises any chunking the same output as one call (QA: every
 * direct-path stream on the AVX2 table differed from its one-call run). */
#ifdef __FP_FAST_FMAF
#define FIR_MADD(acc, h, x) ((acc) = __builtin_fmaf((h), (x), (acc)))
#else
#define FIR_MADD(acc, h, x) ((acc) += (h) * (x))
#endif

/* 4 * DSP_VW outputs per pass (4 accumulators): each tap is broadcast
 * once and used 4 times; loads hit L1 since the window slides by one
 * float. */
static void fir(const float *x, const float *hrev, size_t len, float *out,
                size_t m)
{
  const size_t W = DSP_VW;
  size_t i = 0;
#if DSP_VW == 16
  if (len <= FIR_BLOCK)
    i = fir_shifted(x, hrev, len, out, m);
#endif
  for (; i + 4 * W <= m; i += 4 * W) {
    vf t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
    const float *xi = x + i;
    for (size_t j0 = 0; j0 < len; j0 += FIR_BLOCK) {
      size_t j1 = j0 + FIR_BLOCK < len ? j0 + FIR_BLOCK : len;
      vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
      for (size_t j = j0; j < j1; j++) {
        vf h = bcastv(hrev[j]);
        a0 += h * loadv(xi + j);
        a1 += h * loadv(xi + j + W);
        a2 += h * loadv(xi + j + 2 * W);
        a3 += h * loadv(xi + j + 3 * W);
      }
      t0 += a0;
      t1 += a1;
      t2 += a2;
      t3 += a3;
    }
    storev(out + i, t0);
    storev(out + i + W, t1);
    storev(out + i + 2 * W, t2);
    storev(out + i + 3 * W, t3);
  }
  for (; i + W <= m; i += W) {
    vf t = {0};
    for (size_t j0 = 0; j0 < len; j0 += FIR_BLOCK) {
      size_t j1 = j0 + FIR_BLOCK < len ? j0 + FIR_BLOCK : len;
      vf a = {0};
      for (size_t j = j0; j < j1; j++)
        a += bcastv(hrev[j]) * loadv(x + i + j);
      t += a;
    }
    storev(out + i, t);
  }
  for (; i < m; i++) {
    float t = 0.0f;
    for (size_t j0 = 0; j0 < len; j0 += FIR_BLOCK) {
      size_t j1 = j0 + FIR_BLOCK < len ? j0 + FIR_BLOCK : len;
      float a = 0.0f;
      for (size_t j = j0; j < j1; j++)
        FIR_MADD(a, hrev[j], x[i + j]);
      t += a;
    }
    out[i] = t;
  }
}

/* GCC's __builtin_shuffle takes a mask vector; clang has only
 * __builtin_shufflevector (constant indices), which GCC has since 12. */
#if defined(__clang__)
#define SHUF8(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
typedef int v8i __attribute__((vector_size(32)));
#define SHUF8(v, ...) __builtin_shuffle(v, (v8i){__VA_ARGS__})
#endif

/* Interleaved complex multiply-add: a1 += x * (hr, hr) and
 * a2 += x * (hi, hi) give (xr hr, xi hr) and (xr hi, xi hi); the product
 * is a1 + (-xi hi, xr hi), i.e. a1 plus a2 with its pairs swapped and the
 * real part negated, done once per bin after all partitions. Bins are the
 * outer loop so the accumulators stay in registers (16 floats = 8 bins at
 * a time) while every partition is added. */
#define CMAC_RE 0, 0, 2, 2, 4, 4, 6, 6
#define CMAC_IM 1, 1, 3, 3, 5, 5, 7, 7
#define CMAC_SWAP 1, 0, 3, 2, 5, 4, 7, 6
static void cmac(float *acc, const float *const *x, const float *const *h,
                 size_t n, size_t nb)
{
  const v8 sign = {-1, 1, -1, 1, -1, 1, -1, 1};
  for (size_t b = 0; b < 2 * nb; b += 16) {
    v8 r0 = {0}, r1 = {0}, i0 = {0}, i1 = {0};
    for (size_t p = 0; p < n; p++) {
      v8 x0 = load8(x[p] + b), x1 = load8(x[p] + b + 8);
      v8 h0 = load8(h[p] + b), h1 = load8(h[p] + b + 8);
      r0 += x0 * SHUF8(h0, CMAC_RE);
      i0 += x0 * SHUF8(h0, CMAC_IM);
      r1 += x1 * SHUF8(h1, CMAC_RE);
      i1 += x1 * SHUF8(h1, CMAC_IM);
    }
    store8(acc + b, load8(acc + b) + r0 + sign * SHUF8(i0, CMAC_SWAP));
    store8(acc + b + 8,
           load8(acc + b + 8) + r1 + sign * SHUF8(i1, CMAC_SWAP));
  }
}
#undef CMAC_RE
#undef CMAC_IM
#undef CMAC_SWAP

/* The accumulators of DSP_ROWS output rows of one block of conv2d and
 * conv2d_win: loaded from o (add) or zero, and stored back. */
static inline __attribute__((always_inline)) void
acc_load(vf a[DSP_ROWS][DSP_NV], float *const *o, size_t x, int add)
{
  for (int r = 0; r < DSP_ROWS; r++)
    for (int v = 0; v < DSP_NV; v++)
      a[r][v] = add ? loadv(o[r] + x + v * DSP_VW) : (vf){0};
}

static inline __attribute__((always_inline)) void
acc_store(vf a[DSP_ROWS][DSP_NV], float *const *o, size_t x)
{
  for (int r = 0; r < DSP_ROWS; r++)
    for (int v = 0; v < DSP_NV; v++)
      storev(o[r] + x + v * DSP_VW, a[r][v]);
}

/* One input row xr into output rows r0..r1 (constants where it is
 * inlined, so the accumulators stay in registers): a[r] += kernel row
 * wq - r * kw across it. */
static inline __attribute__((always_inline)) void
row_into(vf a[DSP_ROWS][DSP_NV], const float *xr, const float *wq, size_t kw,
         const int r0, const int r1)
{
  for (size_t j = 0; j < kw; j++) {
    vf xv[DSP_NV];
    for (int v = 0; v < DSP_NV; v++) {
      xv[v] = loadv(xr + j + v * DSP_VW);
      IN_REG(xv[v]);
    }
    for (int r = r0; r <= r1; r++) {
      vf h = bcastv(wq[(ptrdiff_t)j - (ptrdiff_t)r * (ptrdiff_t)kw]);
      for (int v = 0; v < DSP_NV; v++)
        a[r][v] += h * xv[v];
    }
  }
}

/* Input row q feeds output row r with kernel row q - r. Callers pass
 * only input rows that feed every one of the R output rows (the first and
 * last R - 1 rows of a window go through conv1row instead), so no tap
 * outside the kernel ever meets an input: 0 * NaN would spread NaN. */
static void conv2d(const float *const *rows, const float *wpad, size_t nq,
                   size_t kw, float *const *o, size_t m, int add)
{
  for (size_t x = 0; x < m; x += BLOCK) {
    vf a[DSP_ROWS][DSP_NV];
    acc_load(a, o, x, add);
    for (size_t q = 0; q < nq; q++)
      row_into(a, rows[q] + x, wpad + (q + DSP_ROWS - 1) * kw, kw, 0,
               DSP_ROWS - 1);
    acc_store(a, o, x);
  }
}

/* The separable path's column pass: o[r][x] (+)= sum_{j<kh} w[j] *
 * rows[r + j][x] for r < DSP_CROWS, x < m. Tap-major: each tap is
 * broadcast once and every aligned load feeds one FMA, with no edge rows
 * apart (conv2d's window shares loads across taps of a row, which a
 * one-tap-wide kernel does not have, and its first and last rows went
 * through conv2d_edge's loads and stores of the accumulators). The kh +
 * DSP_CROWS - 1 rows a pass reads come from L2 (a band's ring is larger
 * than L1); the more output rows a pass, the fewer times each is read.
 * An output only meets its own kh rows, never a padding zero. */
static void conv_cols(const float *const *rows, const float *w, size_t kh,
                      float *const *o, size_t m, int add)
{
  for (size_t x = 0; x < m; x += CBLOCK) {
    vf a[DSP_CROWS][DSP_CNV];
    for (int r = 0; r < DSP_CROWS; r++)
      for (int v = 0; v < DSP_CNV; v++)
        a[r][v] = add ? loadv(o[r] + x + v * DSP_VW) : (vf){0};
    for (size_t j = 0; j < kh; j++) {
      vf h = bcastv(w[j]);
      for (int r = 0; r < DSP_CROWS; r++) {
        const float *p = rows[r + j] + x;
        for (int v = 0; v < DSP_CNV; v++)
          a[r][v] += h * loadv(p + v * DSP_VW);
      }
    }
    for (int r = 0; r < DSP_CROWS; r++)
      for (int v = 0; v < DSP_CNV; v++)
        storev(o[r] + x + v * DSP_VW, a[r][v]);
  }
}

/* One input row into output rows r0 .. r0 + nr - 1 of an R-row window
 * (the window's first and last rows feed only some outputs):
 * o[r][x] += sum_j wq[j - r * kw] * row[x + j]. nr is a constant in each
 * instance below, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void
edge_rows(const float *row, const float *wq, size_t kw, float *const *o,
          unsigned r0, const int nr, size_t m)
{
  for (size_t x = 0; x < m; x += BLOCK) {
    vf a[DSP_ROWS][DSP_NV];
    for (int r = 0; r < nr; r++)
      for (int v = 0; v < DSP_NV; v++)
        a[r][v] = loadv(o[r0 + r] + x + v * DSP_VW);
    for (size_t j = 0; j < kw; j++) {
      vf xv[DSP_NV];
      for (int v = 0; v < DSP_NV; v++) {
        xv[v] = loadv(row + x + j + v * DSP_VW);
        IN_REG(xv[v]);
      }
      for (int r = 0; r < nr; r++) {
        vf h = bcastv(wq[(ptrdiff_t)j - (ptrdiff_t)(r0 + r) * (ptrdiff_t)kw]);
        for (int v = 0; v < DSP_NV; v++)
          a[r][v] += h * xv[v];
      }
    }
    for (int r = 0; r < nr; r++)
      for (int v = 0; v < DSP_NV; v++)
        storev(o[r0 + r] + x + v * DSP_VW, a[r][v]);
  }
}

static void conv2d_edge(const float *row, const float *wq, size_t kw,
                        float *const *o, unsigned r0, unsigned nr, size_t m)
{
  switch (nr) {
  case 1:
    edge_rows(row, wq, kw, o, r0, 1, m);
    break;
#if DSP_ROWS >= 2
  case 2:
    edge_rows(row, wq, kw, o, r0, 2, m);
    break;
#endif
#if DSP_ROWS >= 3
  case 3:
    edge_rows(row, wq, kw, o, r0, 3, m);
    break;
#endif
#if DSP_ROWS >= 4
  case 4:
    edge_rows(row, wq, kw, o, r0, 4, m);
    break;
#endif
  default:
    break;
  }
}

/* The whole window of a short kernel in one pass: conv2d's interior rows
 * and conv2d_edge's first and last R - 1 together, each input row q into
 * the output rows it feeds (r0..r1, with 0 <= q - r < kh: never a padding
 * zero), the accumulators in registers from the first row to the last.
 * Through conv2d and conv2d_edge, a 3x3 kernel's five rows a pass were
 * one conv2d call and four edge calls that each loaded and stored their
 * output rows' accumulators: the edge calls took more time than conv2d
 * (AVX-512, 3x3 on NV12: 31% against 22% of the filter). Each (r0, r1)
 * is its own instance, so every accumulator index is a constant. */
#define WIN_CASE(R0, R1)                                                       \
  case (R0)*CF_DSP_MAX_ROWS + (R1): row_into(a, xr, wq, kw, R0, R1); break;

static void conv2d_win(const float *const *rows, const float *wpad, size_t kh,
                       size_t kw, float *const *o, size_t m, int add)
{
  const size_t z = DSP_ROWS - 1, nq = kh + z;
  for (size_t x = 0; x < m; x += BLOCK) {
    vf a[DSP_ROWS][DSP_NV];
    acc_load(a, o, x, add);
    for (size_t q = 0; q < nq; q++) {
      const float *xr = rows[q] + x;
      const float *wq = wpad + (q + z) * kw;
      size_t r0 = q + 1 > kh ? q + 1 - kh : 0, r1 = q < z ? q : z;
      switch (r0 * CF_DSP_MAX_ROWS + r1) {
        WIN_CASE(0, 0)
        WIN_CASE(0, 1)
        WIN_CASE(1, 1)
#if DSP_ROWS >= 3
        WIN_CASE(0, 2)
        WIN_CASE(1, 2)
        WIN_CASE(2, 2)
#endif
#if DSP_ROWS >= 4
        WIN_CASE(0, 3)
        WIN_CASE(1, 3)
        WIN_CASE(2, 3)
        WIN_CASE(3, 3)
#endif
      default: break;
      }
    }
    acc_store(a, o, x);
  }
}
#undef WIN_CASE
_Static_assert(DSP_ROWS <= 4, "conv2d_win has cases for up to 4 rows");

/* o[x] += sum_j w[j] * row[x + j] for x < m (one input row into one
 * output row; taps summed in blocks of FIR_BLOCK like fir). */
static void conv1row(const float *row, const float *w, size_t kw, float *o,
                     size_t m)
{
  for (size_t x = 0; x < m; x += BLOCK) {
    vf t[DSP_NV];
    for (int v = 0; v < DSP_NV; v++)
      t[v] = loadv(o + x + v * DSP_VW);
    for (size_t j0 = 0; j0 < kw; j0 += FIR_BLOCK) {
      size_t j1 = j0 + FIR_BLOCK < kw ? j0 + FIR_BLOCK : kw;
      vf a[DSP_NV];
      for (int v = 0; v < DSP_NV; v++)
        a[v] = (vf){0};
      for (size_t j = j0; j < j1; j++) {
        vf h = bcastv(w[j]);
        for (int v = 0; v < DSP_NV; v++)
          a[v] += h * loadv(row + x + j + v * DSP_VW);
      }
      for (int v = 0; v < DSP_NV; v++)
        t[v] += a[v];
    }
    for (int v = 0; v < DSP_NV; v++)
      storev(o + x + v * DSP_VW, t[v]);
  }
}

/* The conversions below serve the AVX-512 table too (built with -mavx2
 * as well), with 16-lane forms where AVX-512 has the instruction
 * (vpmovusdw, vpmovusdb, 16-wide widening): without them it fell back to
 * the generic loops, slower than the AVX2 table on a Xeon with AVX-512.
 * 3x3 box, 1080p, one thread, best of five, Mpixel/s: GRAY16 1263 with
 * the generic loops, 1516 with the 8-lane forms, 1780 with the 16-lane
 * ones; RGB 275, 403, 440; GRAY8 (8-lane store before) 1755, 1755, 2009
 * (bench/results/video-formats-avx512-vm-2026-11-29.md). */
#if defined(__AVX2__)
#include <immintrin.h>
/* u16 samples (GRAY16_LE) to float, 8 a turn: widen and convert. GCC
 * vectorised the generic loop's two byte loads and shift as byte
 * shuffles and word packs: 20% of a 3x3 GRAY16 filter's time. */
static size_t pix_in_u16(const unsigned char *p, float *dst, size_t w)
{
  size_t x = 0;
#if defined(__AVX512F__) /* 16 a turn */
  for (; x + 16 <= w; x += 16) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * x));
    _mm512_storeu_ps(dst + x, _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(v)));
  }
#endif
  for (; x + 8 <= w; x += 8) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 2 * x));
    _mm256_storeu_ps(dst + x, _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(v)));
  }
  return x;
}

/* u8 samples 2 bytes apart (NV12's U or V) to float: the 16-bit words
 * widened, the other component masked off, 16 a turn (AVX-512) or 8.
 * GCC's stride-2 gather was byte shuffles and packs; a small gain (1-7%
 * of a 3x3 NV12 filter), the loads mostly waiting on memory. Stops one
 * pixel short: from V, the last word read reaches the next pixel's U. */
static size_t pix_in_u8x2(const unsigned char *p, float *dst, size_t w)
{
  size_t x = 0;
#if defined(__AVX512F__)
  const __m512i lo = _mm512_set1_epi32(0xff);
  for (; x + 16 < w; x += 16) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * x));
    _mm512_storeu_ps(dst + x, _mm512_cvtepi32_ps(_mm512_and_si512(
                                  _mm512_cvtepu16_epi32(v), lo)));
  }
#endif
  const __m256i lo8 = _mm256_set1_epi32(0xff);
  for (; x + 8 < w; x += 8) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 2 * x));
    _mm256_storeu_ps(dst + x, _mm256_cvtepi32_ps(_mm256_and_si256(
                                  _mm256_cvtepu16_epi32(v), lo8)));
  }
  return x;
}

/* u8 samples 3 bytes apart (RGB, BGR) to float, 16 a turn: three 16-byte
 * loads and byte shuffles. GCC's stride-3 gather was a scalar loop.
 * Stops one pixel short: the component may be a pixel's last byte, and
 * the 48 bytes read from it reach 2 bytes into the next pixel. */
static size_t pix_in_u8x3(const unsigned char *p, float *dst, size_t w)
{
  const __m128i s0 =
      _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i s1 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1,
                                   -1, -1, -1, -1);
  const __m128i s2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                   1, 4, 7, 10, 13);
  size_t x = 0;
  for (; x + 16 < w; x += 16) {
    const __m128i *q = (const __m128i *)(const void *)(p + 3 * x);
    __m128i v =
        _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(_mm_loadu_si128(q), s0),
                                  _mm_shuffle_epi8(_mm_loadu_si128(q + 1), s1)),
                     _mm_shuffle_epi8(_mm_loadu_si128(q + 2), s2));
#if defined(__AVX512F__)
    _mm512_storeu_ps(dst + x, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v)));
#else
    _mm256_storeu_ps(dst + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)));
    _mm256_storeu_ps(dst + x + 8, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                      _mm_unpackhi_epi64(v, v))));
#endif
  }
  return x;
}
#endif

/* Samples of one component to float. Constant strides in each case let
 * the compiler vectorise the gathers. */
static void pix_in(const unsigned char *p, unsigned step, int type,
                   float *dst, size_t w)
{
#if defined(__AVX2__)
  if (type == 1) {
    size_t x = pix_in_u16(p, dst, w);
    p += 2 * x, dst += x, w -= x;
  } else if (type == 0 && step == 3) {
    size_t x = pix_in_u8x3(p, dst, w);
    p += 3 * x, dst += x, w -= x;
  } else if (type == 0 && step == 2) {
    size_t x = pix_in_u8x2(p, dst, w);
    p += 2 * x, dst += x, w -= x;
  }
#endif
  if (type == 2) { /* float32 */
    if (step == 4)
      memcpy(dst, p, w * 4);
    else
      for (size_t x = 0; x < w; x++)
        memcpy(dst + x, p + x * step, 4);
  } else if (type == 1) { /* u16 little-endian */
    for (size_t x = 0; x < w; x++)
      dst[x] = (float)(p[2 * x] | (unsigned)p[2 * x + 1] << 8);
  } else if (step == 1) {
    for (size_t x = 0; x < w; x++)
      dst[x] = p[x];
  } else if (step == 2) {
    for (size_t x = 0; x < w; x++)
      dst[x] = p[2 * x];
  } else if (step == 3) {
    for (size_t x = 0; x < w; x++)
      dst[x] = p[3 * x];
  } else {
    /* 4-byte pixels: whole pixels as 32-bit words, the sample in the low
     * byte (little-endian hosts). The last pixel is read alone, so no
     * word reaches past the row. */
    size_t x = 0;
    for (; x + DSP_VW < w; x += DSP_VW) {
      vi wv;
      memcpy(&wv, p + 4 * x, sizeof wv);
      storev(dst + x, __builtin_convertvector(wv & 0xff, vf));
    }
    for (; x < w; x++)
      dst[x] = p[4 * x];
  }
}

/* v = scale * acc + bias, |v| if absolute; integers round half to even
 * ((v + 1.5 * 2^23) - 1.5 * 2^23, exact for 0 <= v < 2^22) and saturate,
 * NaN -> 0 (both comparisons fail). */
#define PIX_LOOP(T, maxv, stepv, absv)                                       \
  for (size_t i = 0; i < w; i++) {                                           \
    float v = acc[i] * scale + bias;                                         \
    if (absv)                                                                \
      v = __builtin_fabsf(v);                                                \
    v = v > 0.0f ? v : 0.0f;                                                 \
    v = v < (maxv) ? v : (maxv);                                             \
    T o = (T)(int)((v + 12582912.0f) - 12582912.0f);                         \
    memcpy(p + i * (stepv), &o, sizeof o);                                   \
  }
#define PIX_INT(T, maxv, stepv)                                              \
  do {                                                                       \
    if (absolute)                                                            \
      PIX_LOOP(T, maxv, stepv, 1)                                            \
    else                                                                     \
      PIX_LOOP(T, maxv, stepv, 0)                                            \
  } while (0)

/* The low byte (u8) or low half (u16) of each lane of a vi of values that
 * fit, in lane order. On 8 lanes a byte shuffle: GCC 12 narrows
 * element-wise (__builtin_convertvector too) into a scalar loop of
 * extracts, shifts and ors, which took 40% of an AVX2 separable filter's
 * time; AVX-512 has an instruction for it (vpmovdb, vpmovdw). */
typedef unsigned char vu8 __attribute__((vector_size(DSP_VW)));
typedef unsigned short vu16 __attribute__((vector_size(DSP_VW * 2)));
#if DSP_VW == 8
typedef unsigned char vbytes __attribute__((vector_size(DSP_VW * 4)));
typedef unsigned short vhalves __attribute__((vector_size(DSP_VW * 4)));
static inline vu8 low8(vi q)
{
  vbytes b = (vbytes)q;
  return __builtin_shufflevector(b, b, 0, 4, 8, 12, 16, 20, 24, 28);
}
static inline vu16 low16(vi q)
{
  vhalves h = (vhalves)q;
  return __builtin_shufflevector(h, h, 0, 2, 4, 6, 8, 10, 12, 14);
}
#else
/* Through an array, which GCC vectorises (a vector's lanes set one by one
 * it does not). */
static inline vu8 low8(vi q)
{
  unsigned char o[DSP_VW];
  for (int k = 0; k < DSP_VW; k++)
    o[k] = (unsigned char)q[k];
  vu8 v;
  memcpy(&v, o, sizeof v);
  return v;
}
static inline vu16 low16(vi q)
{
  unsigned short o[DSP_VW];
  for (int k = 0; k < DSP_VW; k++)
    o[k] = (unsigned short)q[k];
  vu16 v;
  memcpy(&v, o, sizeof v);
  return v;
}
#endif

/* One vector of pix_out: the same arithmetic as PIX_LOOP, in bit masks
 * (a comparison with NaN is false, so NaN stores as 0). */
static inline vi pix_round(vf v, vf vmax, int absolute)
{
  const vf magic = bcastv(12582912.0f);
  if (absolute)
    v = (vf)((vi)v & 0x7fffffff);
  v = (vf)((vi)v & (v > 0.0f));
  vi lo = v < vmax;
  v = (vf)(((vi)v & lo) | ((vi)vmax & ~lo));
  return __builtin_convertvector((v + magic) - magic, vi);
}

#if defined(__AVX2__)
#include <immintrin.h>
/* 8 samples from acc as 32-bit integers, for AVX2: the same values as
 * pix_round, with max/min for the saturation to [0, vmax] (maxps gives
 * its second operand, 0, for NaN) and the conversion's own rounding (to
 * nearest even, as the magic add). */
static inline __m256i round8(const float *acc, __m256 vs, __m256 vb,
                             __m256 vmax, int absolute)
{
  __m256 a = _mm256_fmadd_ps(_mm256_loadu_ps(acc), vs, vb);
  if (absolute)
    a = _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  return _mm256_cvtps_epi32(
      _mm256_min_ps(_mm256_max_ps(a, _mm256_setzero_ps()), vmax));
}

#if defined(__AVX512F__)
/* round8 on 16 samples, for AVX-512 */
static inline __m512i round16(const float *acc, float scale, float bias,
                              float vmax, int absolute)
{
  __m512 a = _mm512_fmadd_ps(_mm512_loadu_ps(acc), _mm512_set1_ps(scale),
                             _mm512_set1_ps(bias));
  if (absolute)
    a = _mm512_abs_ps(a);
  return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(a, _mm512_setzero_ps()),
                                          _mm512_set1_ps(vmax)));
}
#endif

/* 16 u8 samples from acc: round8 twice, narrowed by unsigned-saturating
 * packs (AVX-512: round16 and one narrowing move). */
static inline __m128i u8x16(const float *acc, float scale, float bias,
                            int absolute)
{
#if defined(__AVX512F__)
  return _mm512_cvtusepi32_epi8(round16(acc, scale, bias, 255.0f, absolute));
#else
  const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
  const __m256 vmax = _mm256_set1_ps(255.0f);
  /* lane 0: a0..3 b0..3, lane 1: a4..7 b4..7 */
  __m256i h = _mm256_packus_epi32(round8(acc, vs, vb, vmax, absolute),
                                  round8(acc + 8, vs, vb, vmax, absolute));
  __m256i q = _mm256_packus_epi16(h, h);
  __m128i r = _mm_unpacklo_epi64(_mm256_castsi256_si128(q),
                                 _mm256_extracti128_si256(q, 1));
  return _mm_shuffle_epi32(r, _MM_SHUFFLE(3, 1, 2, 0));
#endif
}

/* u8 samples one byte apart (gray, planar YUV), 16 a turn. The generic
 * form took 2 cycles a pixel on the 2-core Zen VM (blends and cross-lane
 * byte shuffles: 40% of a 3x3 GRAY8 filter's time). */
static size_t pix_out_u8(const float *acc, unsigned char *p, size_t w,
                         float scale, float bias, int absolute)
{
  size_t x = 0;
  for (; x + 16 <= w; x += 16)
    _mm_storeu_si128((__m128i *)(void *)(p + x),
                     u8x16(acc + x, scale, bias, absolute));
  return x;
}

/* u8 samples 3 bytes apart (RGB, BGR), 16 a turn: u8x16's bytes spread
 * over 48 by byte shuffles and blended into the pixels (the other
 * components written back as they were; one thread owns the row). The
 * generic loop stored a byte at a time: half of a 3x3 RGB filter's time.
 * Stops one pixel short, as pix_in_u8x3. */
static size_t pix_out_u8x3(const float *acc, unsigned char *p, size_t w,
                           float scale, float bias, int absolute)
{
  const __m128i t0 =
      _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5);
  const __m128i t1 =
      _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1);
  const __m128i t2 = _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14,
                                   -1, -1, 15, -1, -1);
  const __m128i none = _mm_set1_epi8(-1);
  const __m128i m0 = _mm_cmpgt_epi8(t0, none), m1 = _mm_cmpgt_epi8(t1, none),
                m2 = _mm_cmpgt_epi8(t2, none);
  size_t x = 0;
  for (; x + 16 < w; x += 16) {
    __m128i r = u8x16(acc + x, scale, bias, absolute);
    __m128i *q = (__m128i *)(void *)(p + 3 * x);
    _mm_storeu_si128(
        q, _mm_blendv_epi8(_mm_loadu_si128(q), _mm_shuffle_epi8(r, t0), m0));
    _mm_storeu_si128(q + 1, _mm_blendv_epi8(_mm_loadu_si128(q + 1),
                                            _mm_shuffle_epi8(r, t1), m1));
    _mm_storeu_si128(q + 2, _mm_blendv_epi8(_mm_loadu_si128(q + 2),
                                            _mm_shuffle_epi8(r, t2), m2));
  }
  return x;
}

/* u16 samples (GRAY16_LE), 16 a turn, as pix_out_u8 with one pack:
 * the generic loop's word shuffles took a third of a 3x3 GRAY16 filter's
 * time. */
static size_t pix_out_u16(const float *acc, unsigned char *p, size_t w,
                          float scale, float bias, int absolute)
{
#if defined(__AVX512F__) /* round16 and one narrowing move */
  size_t x = 0;
  for (; x + 16 <= w; x += 16)
    _mm256_storeu_si256((__m256i *)(void *)(p + 2 * x),
                        _mm512_cvtusepi32_epi16(
                            round16(acc + x, scale, bias, 65535.0f, absolute)));
  return x;
#else
  const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
  const __m256 vmax = _mm256_set1_ps(65535.0f);
  size_t x = 0;
  for (; x + 16 <= w; x += 16) {
    /* lane 0: a0..3 b0..3, lane 1: a4..7 b4..7 */
    __m256i h =
        _mm256_packus_epi32(round8(acc + x, vs, vb, vmax, absolute),
                            round8(acc + x + 8, vs, vb, vmax, absolute));
    h = _mm256_permute4x64_epi64(h, _MM_SHUFFLE(3, 1, 2, 0));
    _mm256_storeu_si256((__m256i *)(void *)(p + 2 * x), h);
  }
  return x;
#endif
}

/* u8 samples in 4-byte pixels (RGBA and kin): each pixel's low byte
 * replaced as in pix_out's generic loop, stopping one pixel short so no
 * word reaches past the row. */
static size_t pix_out_u8x4(const float *acc, unsigned char *p, size_t w,
                           float scale, float bias, int absolute)
{
#if defined(__AVX512F__) /* 16 a turn */
  const __m512i keep = _mm512_set1_epi32(~0xff);
  size_t x = 0;
  for (; x + 16 < w; x += 16) {
    __m512i *q = (__m512i *)(void *)(p + 4 * x);
    __m512i wv = _mm512_and_si512(_mm512_loadu_si512(q), keep);
    _mm512_storeu_si512(q, _mm512_or_si512(wv, round16(acc + x, scale, bias,
                                                       255.0f, absolute)));
  }
  return x;
#else
  const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
  const __m256 vmax = _mm256_set1_ps(255.0f);
  const __m256i keep = _mm256_set1_epi32(~0xff);
  size_t x = 0;
  for (; x + 8 < w; x += 8) {
    __m256i *q = (__m256i *)(void *)(p + 4 * x);
    __m256i wv = _mm256_and_si256(_mm256_loadu_si256(q), keep);
    _mm256_storeu_si256(
        q, _mm256_or_si256(wv, round8(acc + x, vs, vb, vmax, absolute)));
  }
  return x;
#endif
}
#endif

static void pix_out(const float *acc, unsigned char *p, unsigned step,
                    int type, size_t w, float scale, float bias, int absolute)
{
  const vf vs = bcastv(scale), vb = bcastv(bias);
  size_t x = 0;
#if defined(__AVX2__)
  if (type == 0 && step == 1)
    x = pix_out_u8(acc, p, w, scale, bias, absolute);
  else if (type == 0 && step == 4)
    x = pix_out_u8x4(acc, p, w, scale, bias, absolute);
  else if (type == 0 && step == 3)
    x = pix_out_u8x3(acc, p, w, scale, bias, absolute);
  else if (type == 1)
    x = pix_out_u16(acc, p, w, scale, bias, absolute);
#endif
  if (type == 2 && step == 4) {
    for (; x + DSP_VW <= w; x += DSP_VW) {
      vf v = loadv(acc + x) * vs + vb;
      if (absolute)
        v = (vf)((vi)v & 0x7fffffff);
      storev((float *)(void *)(p + 4 * x), v);
    }
  } else if (type == 1) {
    const vf vmax = bcastv(65535.0f);
    for (; x + DSP_VW <= w; x += DSP_VW) {
      vu16 o = low16(pix_round(loadv(acc + x) * vs + vb, vmax, absolute));
      memcpy(p + 2 * x, &o, sizeof o);
    }
  } else if (type == 0 && step == 2) {
    /* Two interleaved components (NV12's UV plane): replace the low byte
     * of each 16-bit word, as below with 32-bit ones, rather than store a
     * byte at a time. */
    const vf vmax = bcastv(255.0f);
    for (; x + DSP_VW < w; x += DSP_VW) {
      vu16 lo = low16(pix_round(loadv(acc + x) * vs + vb, vmax, absolute));
      vu16 wv;
      memcpy(&wv, p + 2 * x, sizeof wv);
      wv = (wv & 0xff00) | lo;
      memcpy(p + 2 * x, &wv, sizeof wv);
    }
  } else if (type == 0 && step != 4) { /* 1, or 3 (RGB, BGR) */
    const vf vmax = bcastv(255.0f);
    for (; x + DSP_VW <= w; x += DSP_VW) {
      vu8 o = low8(pix_round(loadv(acc + x) * vs + vb, vmax, absolute));
      if (step == 1)
        memcpy(p + x, &o, sizeof o);
      else
        for (int k = 0; k < DSP_VW; k++)
          p[(x + k) * step] = o[k];
    }
  } else if (type == 0 && step == 4) {
    /* Replace the low byte of each pixel's 32-bit word (the other bytes
     * are written back as they are; one thread owns the row). Stops one
     * pixel short so no word reaches past the row. */
    const vf vmax = bcastv(255.0f);
    for (; x + DSP_VW < w; x += DSP_VW) {
      vi q = pix_round(loadv(acc + x) * vs + vb, vmax, absolute);
      vi wv;
      memcpy(&wv, p + 4 * x, sizeof wv);
      wv = (wv & ~0xff) | q;
      memcpy(p + 4 * x, &wv, sizeof wv);
    }
  }
  /* The rest (and float with a pixel step) one sample at a time. */
  acc += x, p += x * step, w -= x;
  if (type == 2) {
    for (x = 0; x < w; x++) {
      float v = acc[x] * scale + bias;
      if (absolute)
        v = __builtin_fabsf(v);
      memcpy(p + x * step, &v, 4);
    }
  } else if (type == 1) {
    PIX_INT(unsigned short, 65535.0f, 2);
  } else {
    PIX_INT(unsigned char, 255.0f, step);
  }
}

const cf_dsp DSP_NAME = {
    STR(DSP_NAME), fir,        cmac,      BLOCK,     DSP_ROWS, conv2d, conv1row,
    conv2d_edge,   conv2d_win, conv_cols, DSP_CROWS, pix_in,   pix_out};
