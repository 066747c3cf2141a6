/* CPU hot loops, one table per instruction set, chosen once at run time
 * (the FFmpeg DSP-table pattern): no CPU-type branch inside a loop. */
#ifndef CF_CPU_DSP_H
#define CF_CPU_DSP_H

#include <stddef.h>

/* rows and col_rows below are at most this */
#define CF_DSP_MAX_ROWS 8

typedef struct cf_dsp {
  const char *name;
  /* out[i] = sum_{j<len} hrev[j] * x[i + j] for i < m (hrev: reversed taps,
   * x: the len - 1 samples before the first output, then m more). */
  void (*fir)(const float *x, const float *hrev, size_t len, float *out,
              size_t m);
  /* acc += sum_p X_p * H_p over nb complex bins stored interleaved
   * (re, im), nb % 16 == 0, 64-byte aligned; x and h are n pointers. */
  void (*cmac)(float *acc, const float *const *x, const float *const *h,
               size_t n, size_t nb);
  /* Outputs per pass of the 2D kernels (m below is a multiple of it), and
   * output rows per pass of conv2d. */
  unsigned block, rows;
  /* 2D direct, R = rows output rows at once: for x < m and r < R,
   *   o[r][x] (+)= sum_{q<nq} sum_{j<kw} w[(q + R - 1 - r) * kw + j] *
   *                rows[q][x + j],
   * w pointing at the kernel's rows so that every row indexed exists (a
   * later call with rows + q0 and w + q0 * kw continues the sum). `add`
   * accumulates into o. */
  void (*conv2d)(const float *const *rows, const float *wpad, size_t nq,
                 size_t kw, float *const *o, size_t m, int add);
  /* o[x] += sum_{j<kw} w[j] * row[x + j] for x < m (m % block == 0). */
  void (*conv1row)(const float *row, const float *w, size_t kw, float *o,
                   size_t m);
  /* o[r][x] += sum_{j<kw} wq[j - r * kw] * row[x + j] for the output
   * rows r0 <= r < r0 + nr (nr <= rows; kw <= 128 for float32 accuracy:
   * no blocking inside). */
  void (*conv2d_edge)(const float *row, const float *wq, size_t kw,
                      float *const *o, unsigned r0, unsigned nr, size_t m);
  /* conv2d and conv2d_edge together over a whole window: o[r][x] (+)=
   * sum over the kernel's kh rows of row r + i (i < kh) with kernel row
   * i, w as conv_rows passes it (R - 1 zero rows, then the kernel's kh),
   * rows the kh + R - 1 input rows; for kh * kw <= 128 (accuracy, as
   * conv2d_edge). */
  void (*conv2d_win)(const float *const *rows, const float *wpad, size_t kh,
                     size_t kw, float *const *o, size_t m, int add);
  /* One-tap-wide 2D (the separable path's column pass), R = col_rows
   * output rows at once: o[r][x] (+)= sum_{j<kh} w[j] * rows[r + j][x]
   * for x < m (m % block == 0), r < R; `add` accumulates into o. */
  void (*conv_cols)(const float *const *rows, const float *w, size_t kh,
                    float *const *o, size_t m, int add);
  unsigned col_rows;
  /* w samples (type 0 u8, 1 u16 LE, 2 float32) `step` bytes apart to
   * float. */
  void (*pix_in)(const unsigned char *p, unsigned step, int type,
                 float *dst, size_t w);
  /* scale * acc + bias (|.| if absolute) to w samples; integers round to
   * nearest even and saturate, NaN -> 0. */
  void (*pix_out)(const float *acc, unsigned char *p, unsigned step,
                  int type, size_t w, float scale, float bias, int absolute);
} cf_dsp;

const cf_dsp *cf_dsp_get(void);

extern const cf_dsp cf_dsp_generic;
extern const cf_dsp cf_dsp_avx2;
extern const cf_dsp cf_dsp_avx512;

#endif
