/* Template for the hot loops: included once per instruction set by
 * dsp_generic.c and dsp_avx2.c, which define DSP_NAME and compile it with
 * their own -m flags. GCC vector extensions keep it portable: v8 lowers to
 * two SSE registers in the generic build and one AVX register (with FMA
 * contraction) in the AVX2 build. */
#include <string.h>

#include "dsp.h"

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

/* Bins in blocks that stay in L1 while every partition is added. */
#define CMAC_BLOCK 512

static void cmac(float *acc, const float *const *x, const float *const *h,
                 size_t n, size_t nb)
{
  float *are = acc, *aim = acc + nb;
  for (size_t b0 = 0; b0 < nb; b0 += CMAC_BLOCK) {
    size_t b1 = b0 + CMAC_BLOCK < nb ? b0 + CMAC_BLOCK : nb;
    for (size_t p = 0; p < n; p++) {
      const float *xr = x[p], *xim = x[p] + nb;
      const float *hr = h[p], *him = h[p] + nb;
      for (size_t b = b0; b < b1; b += 8) {
        v8 a = load8(xr + b), c = load8(xim + b);
        v8 e = load8(hr + b), f = load8(him + b);
        store8(are + b, load8(are + b) + a * e - c * f);
        store8(aim + b, load8(aim + b) + a * f + c * e);
      }
    }
  }
}

const cf_dsp DSP_NAME = {STR(DSP_NAME), fir, cmac};
