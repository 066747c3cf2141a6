/* Rank-1 detection of a 2D kernel slice, shared by the CPU and CUDA video
 * backends so that both take the separable path for the same kernels. */
#include <math.h>

#include "video_internal.h"

/* Best rank-1 approximation u v^T of a kh x kw slice by a few power
 * iterations in double; true when the residual is below float noise
 * (||K - u v^T||_F <= 2e-7 ||K||_F). */
int cf_rank1(const float *k, unsigned kh, unsigned kw, double *u,
                 double *vv)
{
  double norm = 0, best = -1;
  unsigned pr = 0;
  for (unsigned m = 0; m < kh; m++)
    for (unsigned n = 0; n < kw; n++) {
      double a = fabs(k[m * kw + n]);
      norm += a * a;
      if (a > best)
        best = a, pr = m;
    }
  if (norm == 0) { /* a zero slice: the product of zeros */
    for (unsigned m = 0; m < kh; m++)
      u[m] = 0;
    for (unsigned n = 0; n < kw; n++)
      vv[n] = 0;
    return 1;
  }
  for (unsigned n = 0; n < kw; n++)
    vv[n] = k[pr * kw + n];
  for (int it = 0; it < 4; it++) {
    double vn = 0;
    for (unsigned n = 0; n < kw; n++)
      vn += vv[n] * vv[n];
    for (unsigned m = 0; m < kh; m++) {
      double s = 0;
      for (unsigned n = 0; n < kw; n++)
        s += k[m * kw + n] * vv[n];
      u[m] = s / vn;
    }
    double un = 0;
    for (unsigned m = 0; m < kh; m++)
      un += u[m] * u[m];
    for (unsigned n = 0; n < kw; n++) {
      double s = 0;
      for (unsigned m = 0; m < kh; m++)
        s += k[m * kw + n] * u[m];
      vv[n] = s / un;
    }
  }
  double res = 0;
  for (unsigned m = 0; m < kh; m++)
    for (unsigned n = 0; n < kw; n++) {
      double d = k[m * kw + n] - u[m] * vv[n];
      res += d * d;
    }
  return res <= 4e-14 * norm;
}
