/* Template for the hot loops: included once per instruction set by
 * dsp_generic.c and dsp_avx2.c, which define DSP_NAME and compile it with
 * their own -m flags. GCC vector extensions keep it portable: v8 lowers to
 * two SSE registers in the generic build and one AVX register (with FMA
 * contraction) in the AVX2 build. */
#include <string.h>

#include "dsp.h"

#define STR_(x) #x
#define STR(x) STR_(x)

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

/* 32 outputs per pass (4 accumulators): each tap is broadcast once and
 * used 4 times; loads hit L1 since the window slides by one float. */
static void fir(const float *x, const float *hrev, size_t len, float *out,
                size_t m)
{
  size_t i = 0;
  for (; i + 32 <= m; i += 32) {
    v8 t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
    const float *xi = x + i;
    for (size_t j0 = 0; j0 < len; j0 += FIR_BLOCK) {
      size_t j1 = j0 + FIR_BLOCK < len ? j0 + FIR_BLOCK : len;
      v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
      for (size_t j = j0; j < j1; j++) {
        v8 h = bcast(hrev[j]);
        a0 += h * load8(xi + j);
        a1 += h * load8(xi + j + 8);
        a2 += h * load8(xi + j + 16);
        a3 += h * load8(xi + j + 24);
      }
      t0 += a0;
      t1 += a1;
      t2 += a2;
      t3 += a3;
    }
    store8(out + i, t0);
    store8(out + i + 8, t1);
    store8(out + i + 16, t2);
    store8(out + i + 24, t3);
  }
  for (; i + 8 <= m; i += 8) {
    v8 t = {0};
    for (size_t j0 = 0; j0 < len; j0 += FIR_BLOCK) {
      size_t j1 = j0 + FIR_BLOCK < len ? j0 + FIR_BLOCK : len;
      v8 a = {0};
      for (size_t j = j0; j < j1; j++)
        a += bcast(hrev[j]) * load8(x + i + j);
      t += a;
    }
    store8(out + i, t);
  }
  for (; i < m; i++) {
    float t = 0.0f;
    for (size_t j0 = 0; j0 < len; j0 += FIR_BLOCK) {
      size_t j1 = j0 + FIR_BLOCK < len ? j0 + FIR_BLOCK : len;
      float a = 0.0f;
      for (size_t j = j0; j < j1; j++)
        a += hrev[j] * x[i + j];
      t += a;
    }
    out[i] = t;
  }
}

typedef int v8i __attribute__((vector_size(32)));

/* Interleaved complex multiply-add: a1 += x * (hr, hr) and
 * a2 += x * (hi, hi) give (xr hr, xi hr) and (xr hi, xi hi); the product
 * is a1 + (-xi hi, xr hi), i.e. a1 plus a2 with its pairs swapped and the
 * real part negated, done once per bin after all partitions. Bins are the
 * outer loop so the accumulators stay in registers (16 floats = 8 bins at
 * a time) while every partition is added. */
static void cmac(float *acc, const float *const *x, const float *const *h,
                 size_t n, size_t nb)
{
  const v8i dup_re = {0, 0, 2, 2, 4, 4, 6, 6};
  const v8i dup_im = {1, 1, 3, 3, 5, 5, 7, 7};
  const v8i swap = {1, 0, 3, 2, 5, 4, 7, 6};
  const v8 sign = {-1, 1, -1, 1, -1, 1, -1, 1};
  for (size_t b = 0; b < 2 * nb; b += 16) {
    v8 r0 = {0}, r1 = {0}, i0 = {0}, i1 = {0};
    for (size_t p = 0; p < n; p++) {
      v8 x0 = load8(x[p] + b), x1 = load8(x[p] + b + 8);
      v8 h0 = load8(h[p] + b), h1 = load8(h[p] + b + 8);
      r0 += x0 * __builtin_shuffle(h0, dup_re);
      i0 += x0 * __builtin_shuffle(h0, dup_im);
      r1 += x1 * __builtin_shuffle(h1, dup_re);
      i1 += x1 * __builtin_shuffle(h1, dup_im);
    }
    store8(acc + b, load8(acc + b) + r0 + sign * __builtin_shuffle(i0, swap));
    store8(acc + b + 8,
           load8(acc + b + 8) + r1 + sign * __builtin_shuffle(i1, swap));
  }
}

/* One input row's contribution to 32 outputs of one or two rows. */
#define CONV_TAP_LOOP(body)                                                  \
  for (size_t j = 0; j < kw; j++) {                                          \
    const float *xp = r + x + j;                                             \
    v8 x0 = load8(xp), x1 = load8(xp + 8), x2 = load8(xp + 16),              \
       x3 = load8(xp + 24);                                                  \
    body                                                                     \
  }

static void conv2d(const float *const *rows, const float *w, size_t kh,
                   size_t kw, float *o0, float *o1, size_t m, int add)
{
  for (size_t x = 0; x < m; x += 32) {
    v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    if (add) {
      a0 = load8(o0 + x), a1 = load8(o0 + x + 8);
      a2 = load8(o0 + x + 16), a3 = load8(o0 + x + 24);
    }
    if (!o1) {
      for (size_t q = 0; q < kh; q++) {
        const float *r = rows[q], *wq = w + q * kw;
        CONV_TAP_LOOP(v8 h = bcast(wq[j]); a0 += h * x0; a1 += h * x1;
                      a2 += h * x2; a3 += h * x3;)
      }
    } else {
      v8 b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
      if (add) {
        b0 = load8(o1 + x), b1 = load8(o1 + x + 8);
        b2 = load8(o1 + x + 16), b3 = load8(o1 + x + 24);
      }
      /* Row q feeds o0 with kernel row q and o1 with kernel row q - 1. */
      for (size_t q = 0; q <= kh; q++) {
        const float *r = rows[q];
        if (q == 0) {
          const float *wq = w;
          CONV_TAP_LOOP(v8 h = bcast(wq[j]); a0 += h * x0; a1 += h * x1;
                        a2 += h * x2; a3 += h * x3;)
        } else if (q == kh) {
          const float *wp = w + (q - 1) * kw;
          CONV_TAP_LOOP(v8 g = bcast(wp[j]); b0 += g * x0; b1 += g * x1;
                        b2 += g * x2; b3 += g * x3;)
        } else {
          const float *wq = w + q * kw, *wp = wq - kw;
          CONV_TAP_LOOP(v8 h = bcast(wq[j]); v8 g = bcast(wp[j]);
                        a0 += h * x0; a1 += h * x1; a2 += h * x2;
                        a3 += h * x3; b0 += g * x0; b1 += g * x1;
                        b2 += g * x2; b3 += g * x3;)
        }
      }
      store8(o1 + x, b0);
      store8(o1 + x + 8, b1);
      store8(o1 + x + 16, b2);
      store8(o1 + x + 24, b3);
    }
    store8(o0 + x, a0);
    store8(o0 + x + 8, a1);
    store8(o0 + x + 16, a2);
    store8(o0 + x + 24, a3);
  }
}

static void colsum(const float *const *rows, const float *v, size_t n,
                   float *out, size_t m, int add)
{
  for (size_t x = 0; x < m; x += 32) {
    v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    if (add) {
      a0 = load8(out + x), a1 = load8(out + x + 8);
      a2 = load8(out + x + 16), a3 = load8(out + x + 24);
    }
    for (size_t q = 0; q < n; q++) {
      const float *r = rows[q] + x;
      v8 h = bcast(v[q]);
      a0 += h * load8(r);
      a1 += h * load8(r + 8);
      a2 += h * load8(r + 16);
      a3 += h * load8(r + 24);
    }
    store8(out + x, a0);
    store8(out + x + 8, a1);
    store8(out + x + 16, a2);
    store8(out + x + 24, a3);
  }
}

const cf_dsp DSP_NAME = {STR(DSP_NAME), fir, cmac, conv2d, colsum};
