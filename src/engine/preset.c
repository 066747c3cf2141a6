/* 2D kernel presets (kernel2d.h): computed in double, stored as float. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_internal.h"

#define PRESET_COUNT 8u

/* Indexed by cf_preset. */
static const char *const preset_names[PRESET_COUNT] = {
    "gaussian", "box",     "sharpen",   "unsharp",
    "sobel-x",  "sobel-y", "laplacian", "emboss"};

/* The fixed 3 x 3 presets, as kernel2d.h writes them. */
static const float sharpen[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
static const float sobel_x[9] = {1, 0, -1, 2, 0, -2, 1, 0, -1};
static const float sobel_y[9] = {1, 2, 1, 0, 0, 0, -1, -2, -1};
static const float laplacian[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
static const float emboss[9] = {-2, -1, 0, -1, 1, 1, 0, 1, 2};

CF_PUBLIC const char *cf_preset_name(cf_preset p)
{
  return (unsigned)p < PRESET_COUNT ? preset_names[p] : "unknown";
}

CF_PUBLIC cf_status cf_preset_from_string(const char *s, cf_preset *out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "preset: out is NULL");
  for (unsigned i = 0; s && i < PRESET_COUNT; i++)
    if (strcmp(s, preset_names[i]) == 0) {
      *out = (cf_preset)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID,
                 "preset '%s': expected gaussian, box, "
                 "sharpen, unsharp, sobel-x, sobel-y, laplacian or emboss",
                 s ? s : "(null)");
}

/* OpenCV's rule for a Gaussian of n taps without a given sigma. */
static double default_sigma(unsigned n)
{
  return 0.3 * (((double)n - 1.0) / 2.0 - 1.0) + 0.8;
}

/* g[0..n): exp(-(i - c)^2 / (2 sigma^2)), c = (n - 1) / 2, sum 1. The
 * exponent is taken relative to the central tap(s), which cancels in the
 * normalisation but keeps the sum >= 1 when sigma is tiny (no 0 / 0). */
static double *gaussian_1d(unsigned n, double sigma)
{
  double *g = malloc(n * sizeof *g), sum = 0.0, c = ((double)n - 1.0) / 2.0;
  if (!g)
    return NULL;
  double d0 = n % 2 ? 0.0 : 0.5; /* distance of the central tap(s) */
  for (unsigned i = 0; i < n; i++) {
    double d = (double)i - c, e = d * d - d0 * d0;
    g[i] = e == 0.0 ? 1.0 : exp(-e / (2.0 * sigma * sigma));
    sum += g[i];
  }
  for (unsigned i = 0; i < n; i++)
    g[i] /= sum;
  return g;
}

/* An n x n kernel of taps computed by kind: gaussian, box or unsharp. */
static cf_status make_square(cf_preset p, unsigned n, double sigma,
                             cf_kernel2d **out)
{
  size_t count = (size_t)n * n;
  float *taps = malloc(count * sizeof *taps);
  double *g = p == CF_PRESET_BOX ? NULL : gaussian_1d(n, sigma);
  if (!taps || (p != CF_PRESET_BOX && !g)) {
    free(taps);
    free(g);
    return cf_fail(CF_E_NOMEM, "preset '%s': out of memory for %ux%u taps",
                   cf_preset_name(p), n, n);
  }
  double box = 1.0 / ((double)n * n);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++) {
      double v = p == CF_PRESET_BOX ? box : g[i] * g[j];
      if (p == CF_PRESET_UNSHARP) /* the delta at the origin, n/2 */
        v = (i == n / 2 && j == n / 2 ? 2.0 : 0.0) - v;
      taps[(size_t)i * n + j] = (float)v;
    }
  free(g);
  cf_status s = cf_kernel2d_new(1, n, n, taps, out);
  free(taps);
  return s;
}

CF_PUBLIC cf_status cf_kernel2d_preset(cf_preset p, unsigned size, double sigma,
                                       cf_kernel2d **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "preset: out is NULL");
  *out = NULL;
  const char *name = cf_preset_name(p);
  if ((unsigned)p >= PRESET_COUNT)
    return cf_fail(CF_E_INVALID, "preset %d: not a preset", (int)p);
  bool has_sigma = p == CF_PRESET_GAUSSIAN || p == CF_PRESET_UNSHARP;
  bool fixed = !has_sigma && p != CF_PRESET_BOX;
  if (!has_sigma && sigma != 0.0)
    return cf_fail(CF_E_INVALID,
                   "preset '%s' takes no sigma (got %g; pass "
                   "0)",
                   name, sigma);
  if (has_sigma && sigma != 0.0 && !(isfinite(sigma) && sigma > 0.0))
    return cf_fail(CF_E_INVALID,
                   "preset '%s': sigma %g must be finite and "
                   "> 0 (or 0 for the default)",
                   name, sigma);
  if (fixed && size != 0 && size != 3)
    return cf_fail(CF_E_INVALID,
                   "preset '%s' is 3x3 only: size %u refused "
                   "(pass 0 or 3)",
                   name, size);
  if (size > CF_KERNEL2D_MAX_SIDE)
    return cf_fail(CF_E_INVALID,
                   "preset '%s': size %u is larger than the "
                   "limit of %u",
                   name, size, CF_KERNEL2D_MAX_SIDE);
  switch (p) {
  case CF_PRESET_GAUSSIAN:
  case CF_PRESET_UNSHARP:
    size = size ? size : 5;
    return make_square(p, size, sigma != 0.0 ? sigma : default_sigma(size),
                       out);
  case CF_PRESET_BOX: return make_square(p, size ? size : 3, 0.0, out);
  case CF_PRESET_SHARPEN: return cf_kernel2d_new(1, 3, 3, sharpen, out);
  case CF_PRESET_SOBEL_X: return cf_kernel2d_new(1, 3, 3, sobel_x, out);
  case CF_PRESET_SOBEL_Y: return cf_kernel2d_new(1, 3, 3, sobel_y, out);
  case CF_PRESET_LAPLACIAN: return cf_kernel2d_new(1, 3, 3, laplacian, out);
  case CF_PRESET_EMBOSS: return cf_kernel2d_new(1, 3, 3, emboss, out);
  }
  return cf_fail(CF_E_INTERNAL, "preset '%s': no taps", name);
}
