/* Test support: seeded random numbers and the float64 naive reference. */
#include "ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t ref_seed(void)
{
  static int printed;
  static uint64_t seed;
  if (!printed) {
    const char *env = getenv("CF_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("seed %llu (rerun with CF_TEST_SEED=%llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    fflush(stdout);
    printed = 1;
  }
  return seed;
}

void ref_rng_init(ref_rng *r, uint64_t seed)
{
  /* The seed goes through splitmix64's mixer: with a plain multiple of
   * the step, seed + 1 gave seed's stream one draw later, so successive
   * seeds (a time, CF_TEST_SEED=1..10, a suite's seed + k) drew nearly
   * the same cases. */
  r->s = seed;
  r->s = ref_rng_u64(r) ^ 0x632BE59BD9B4E019ull;
}

uint64_t ref_rng_u64(ref_rng *r) /* splitmix64 */
{
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double ref_rng_unit(ref_rng *r)
{
  return (double)(ref_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

float ref_rng_sym(ref_rng *r) { return (float)(2.0 * ref_rng_unit(r) - 1.0); }

size_t ref_rng_range(ref_rng *r, size_t lo, size_t hi)
{
  return lo + (size_t)(ref_rng_u64(r) % (uint64_t)(hi - lo + 1));
}

void ref_rng_fill(ref_rng *r, float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = ref_rng_sym(r);
}

double ref_conv_at(const float *x, size_t n, const float *h, size_t len,
                   size_t m)
{
  double acc = 0.0;
  size_t kmin = m >= n ? m - n + 1 : 0;
  size_t kmax = m < len ? m + 1 : len;
  for (size_t k = kmin; k < kmax; k++)
    acc += (double)h[k] * (double)x[m - k];
  return acc;
}

void ref_conv(const float *x, size_t n, const float *h, size_t len,
              double *y, size_t ny)
{
  for (size_t m = 0; m < ny; m++)
    y[m] = ref_conv_at(x, n, h, len, m);
}

double ref_rel_l2(const float *got, size_t got_stride, const double *want,
                  size_t want_stride, size_t n)
{
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double g = got[i * got_stride], w = want[i * want_stride];
    if (isnan(g) || isinf(g))
      return NAN;
    num += (g - w) * (g - w);
    den += w * w;
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

double ref_worst_channel_l2(const float *x, const float *y, size_t n,
                            unsigned ch, const float *h, size_t len, size_t lat)
{
  size_t ny = n + len - 1;
  double *want = malloc(ny * sizeof *want), worst = 0;
  float *xc = malloc(n * sizeof *xc), *yc = malloc(ny * sizeof *yc);
  if (!want || !xc || !yc)
    worst = NAN; /* fails every comparison */
  for (unsigned c = 0; c < ch && want && xc && yc; c++) {
    for (size_t i = 0; i < n; i++)
      xc[i] = x[i * ch + c];
    for (size_t i = 0; i < ny; i++)
      yc[i] = y[(i + lat) * ch + c];
    ref_conv(xc, n, h, len, want, ny);
    double e = ref_rel_l2(yc, 1, want, 1, ny);
    if (!(e <= worst)) /* NaN stays */
      worst = e;
  }
  free(want), free(xc), free(yc);
  return worst;
}

static const size_t primes[] = {2, 3, 5, 7, 13, 31, 61, 127, 251, 509, 1021,
                                2039, 4093, 8191};

size_t ref_chunking(ref_rng *r, size_t n, size_t block, size_t *sizes,
                    size_t cap)
{
  size_t count = 0, done = 0;
  while (done < n && count + 1 < cap) {
    size_t left = n - done, c;
    switch (ref_rng_u64(r) % 8) {
    case 0: c = 0; break;
    case 1: c = 1; break;
    case 2: c = primes[ref_rng_u64(r) % (sizeof primes / sizeof *primes)]; break;
    case 3: c = block; break;
    case 4: c = block ? block - 1 : 1; break;
    case 5: c = block + 1; break;
    case 6: c = ref_rng_range(r, 0, 4 * block + 16); break;
    default: c = ref_rng_range(r, 0, left); break;
    }
    if (c > left)
      c = left;
    sizes[count++] = c;
    done += c;
  }
  if (done < n)
    sizes[count++] = n - done;
  return count;
}

unsigned ref_swaps_settle(size_t *S, size_t *X, unsigned *keep, unsigned n)
{
  unsigned out = n ? 1 : 0;
  if (keep && n)
    keep[0] = 0;
  for (unsigned k = 1; k < n; k++) {
    size_t t = S[k], x = X[k];
    if (out > 1 && S[out - 1] >= t) /* still waiting: replaced */
      out--;
    size_t end = S[out - 1] + X[out - 1];
    S[out] = end > t ? end : t;
    X[out] = x;
    if (keep)
      keep[out] = k;
    out++;
  }
  return out;
}
