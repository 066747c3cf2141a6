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

/* The 2D kernels work on vectors of DSP_VW lanes (8: SSE pairs or AVX2;
 * 16: AVX-512), four per pass. */
#ifndef DSP_VW
#define DSP_VW 8
#endif
typedef float vf __attribute__((vector_size(DSP_VW * 4)));
#define BLOCK (4 * DSP_VW)

static inline vf loadv(const float *p)
{
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void storev(float *p, vf v) { memcpy(p, &v, sizeof v); }

static inline vf bcastv(float x) { return x - (vf){0}; } /* exact */

/* Keep a loaded vector in a register: otherwise GCC folds the load into
 * each FMA that uses it, loading (and splitting across cache lines) twice. */
#if defined(__AVX__)
#define IN_REG(v) __asm__("" : "+v"(v))
#else /* the generic build's vectors span two registers */
#define IN_REG(v) ((void)0)
#endif

/* One input row's contribution to BLOCK outputs of one or two rows. */
#define CONV_TAP_LOOP(body)                                                  \
  for (size_t j = 0; j < kw; j++) {                                          \
    const float *xp = r + x + j;                                             \
    vf x0 = loadv(xp), x1 = loadv(xp + DSP_VW), x2 = loadv(xp + 2 * DSP_VW), \
       x3 = loadv(xp + 3 * DSP_VW);                                          \
    IN_REG(x0);                                                              \
    IN_REG(x1);                                                              \
    IN_REG(x2);                                                              \
    IN_REG(x3);                                                              \
    body                                                                     \
  }

#define LOAD4(a, p)                                                          \
  a##0 = loadv(p), a##1 = loadv(p + DSP_VW), a##2 = loadv(p + 2 * DSP_VW),   \
  a##3 = loadv(p + 3 * DSP_VW)
#define STORE4(p, a)                                                         \
  storev(p, a##0), storev(p + DSP_VW, a##1), storev(p + 2 * DSP_VW, a##2),   \
      storev(p + 3 * DSP_VW, a##3)

static void conv2d(const float *const *rows, const float *w, size_t kh,
                   size_t kw, float *o0, float *o1, size_t m, int add)
{
  for (size_t x = 0; x < m; x += BLOCK) {
    vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    if (add)
      LOAD4(a, o0 + x);
    if (!o1) {
      for (size_t q = 0; q < kh; q++) {
        const float *r = rows[q], *wq = w + q * kw;
        CONV_TAP_LOOP(vf h = bcastv(wq[j]); a0 += h * x0; a1 += h * x1;
                      a2 += h * x2; a3 += h * x3;)
      }
    } else {
      vf b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
      if (add)
        LOAD4(b, o1 + x);
      /* Row q feeds o0 with kernel row q and o1 with kernel row q - 1. */
      for (size_t q = 0; q <= kh; q++) {
        const float *r = rows[q];
        if (q == 0) {
          const float *wq = w;
          CONV_TAP_LOOP(vf h = bcastv(wq[j]); a0 += h * x0; a1 += h * x1;
                        a2 += h * x2; a3 += h * x3;)
        } else if (q == kh) {
          const float *wp = w + (q - 1) * kw;
          CONV_TAP_LOOP(vf g = bcastv(wp[j]); b0 += g * x0; b1 += g * x1;
                        b2 += g * x2; b3 += g * x3;)
        } else {
          const float *wq = w + q * kw, *wp = wq - kw;
          CONV_TAP_LOOP(vf h = bcastv(wq[j]); vf g = bcastv(wp[j]);
                        a0 += h * x0; a1 += h * x1; a2 += h * x2;
                        a3 += h * x3; b0 += g * x0; b1 += g * x1;
                        b2 += g * x2; b3 += g * x3;)
        }
      }
      STORE4(o1 + x, b);
    }
    STORE4(o0 + x, a);
  }
}

static void colsum(const float *const *rows, const float *v, size_t n,
                   float *out, size_t m, int add)
{
  for (size_t x = 0; x < m; x += BLOCK) {
    vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    if (add)
      LOAD4(a, out + x);
    for (size_t q = 0; q < n; q++) {
      const float *r = rows[q] + x;
      vf h = bcastv(v[q]);
      a0 += h * loadv(r);
      a1 += h * loadv(r + DSP_VW);
      a2 += h * loadv(r + 2 * DSP_VW);
      a3 += h * loadv(r + 3 * DSP_VW);
    }
    STORE4(out + x, a);
  }
}

/* Samples of one component to float. Constant strides in each case let
 * the compiler vectorise the gathers. */
static void pix_in(const unsigned char *p, unsigned step, int type,
                   float *dst, size_t w)
{
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
    for (size_t x = 0; x < w; x++)
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

typedef int vi __attribute__((vector_size(DSP_VW * 4)));

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

static void pix_out(const float *acc, unsigned char *p, unsigned step,
                    int type, size_t w, float scale, float bias, int absolute)
{
  const vf vs = bcastv(scale), vb = bcastv(bias);
  size_t x = 0;
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
      vi q = pix_round(loadv(acc + x) * vs + vb, vmax, absolute);
      unsigned short o[DSP_VW];
      for (int k = 0; k < DSP_VW; k++)
        o[k] = (unsigned short)q[k];
      memcpy(p + 2 * x, o, sizeof o);
    }
  } else if (type == 0) {
    const vf vmax = bcastv(255.0f);
    for (; x + DSP_VW <= w; x += DSP_VW) {
      vi q = pix_round(loadv(acc + x) * vs + vb, vmax, absolute);
      unsigned char o[DSP_VW];
      for (int k = 0; k < DSP_VW; k++)
        o[k] = (unsigned char)q[k];
      if (step == 1)
        memcpy(p + x, o, sizeof o);
      else
        for (int k = 0; k < DSP_VW; k++)
          p[(x + k) * step] = o[k];
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

const cf_dsp DSP_NAME = {STR(DSP_NAME), fir, cmac, BLOCK, conv2d, colsum,
                         pix_in, pix_out};
