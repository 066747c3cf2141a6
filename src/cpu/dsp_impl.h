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

const cf_dsp DSP_NAME = {STR(DSP_NAME), fir, cmac};
