/* 2D / temporal kernels: construction, copy and accessors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_internal.h"

CF_PUBLIC cf_status cf_kernel2d_new(unsigned t, unsigned kh, unsigned kw,
                                    const float *taps, cf_kernel2d **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "kernel2d: out is NULL");
  *out = NULL;
  if (t < 1 || kh < 1 || kw < 1)
    return cf_fail(CF_E_INVALID, "kernel2d: size %ux%ux%u has a zero side",
                   t, kh, kw);
  if (kh > CF_KERNEL2D_MAX_SIDE || kw > CF_KERNEL2D_MAX_SIDE)
    return cf_fail(CF_E_INVALID, "kernel2d: %ux%u is larger than the limit "
                   "of %u per side", kh, kw, CF_KERNEL2D_MAX_SIDE);
  if (t > CF_KERNEL2D_MAX_FRAMES)
    return cf_fail(CF_E_INVALID, "kernel2d: %u temporal taps, more than the "
                   "limit of %u", t, CF_KERNEL2D_MAX_FRAMES);
  size_t n = (size_t)t * kh * kw;
  if (n > CF_KERNEL2D_MAX_TAPS)
    return cf_fail(CF_E_INVALID, "kernel2d: %ux%ux%u = %zu taps, more than "
                   "the limit of %zu", t, kh, kw, n, CF_KERNEL2D_MAX_TAPS);
  if (!taps)
    return cf_fail(CF_E_INVALID, "kernel2d: taps is NULL");
  for (size_t j = 0; j < n; j++)
    if (!isfinite(taps[j]))
      return cf_fail(CF_E_INVALID, "kernel2d: tap [%zu][%zu][%zu] is %s",
                     j / ((size_t)kh * kw), j / kw % kh, j % kw,
                     isnan(taps[j]) ? "NaN" : "infinite");
  cf_kernel2d *k = malloc(sizeof *k);
  float *copy = malloc(n * sizeof *copy);
  if (!k || !copy) {
    free(k);
    free(copy);
    return cf_fail(CF_E_NOMEM, "kernel2d: out of memory for %zu taps", n);
  }
  memcpy(copy, taps, n * sizeof *copy);
  *k = (cf_kernel2d){t, kh, kw, copy};
  *out = k;
  return CF_OK;
}

CF_PUBLIC void cf_kernel2d_free(cf_kernel2d *k)
{
  if (k) {
    free(k->taps);
    free(k);
  }
}

CF_PUBLIC cf_status cf_kernel2d_copy(const cf_kernel2d *k, cf_kernel2d **out)
{
  if (!k) {
    if (out)
      *out = NULL;
    return cf_fail(CF_E_INVALID, "kernel2d: NULL kernel");
  }
  return cf_kernel2d_new(k->t, k->kh, k->kw, k->taps, out);
}

/* the accessors answer 0 (NULL) for a NULL kernel */
CF_PUBLIC unsigned cf_kernel2d_frames(const cf_kernel2d *k)
{
  return k ? k->t : 0;
}
CF_PUBLIC unsigned cf_kernel2d_height(const cf_kernel2d *k)
{
  return k ? k->kh : 0;
}
CF_PUBLIC unsigned cf_kernel2d_width(const cf_kernel2d *k)
{
  return k ? k->kw : 0;
}
CF_PUBLIC const float *cf_kernel2d_taps(const cf_kernel2d *k)
{
  return k ? k->taps : NULL;
}
