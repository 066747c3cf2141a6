/* FFTW3f plan cache. FFTW's planner is not thread-safe and FFTW_MEASURE
 * costs milliseconds per size, so plans are made once per size under a
 * lock and kept for the life of the process; fftwf_execute_split_dft_*
 * with new arrays is thread-safe. */
#include "fft.h"

#include <fftw3.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/error_internal.h"

struct cf_fft {
  size_t n;
  fftwf_plan fwd, inv;
};

#define MAX_SIZES 48

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cf_fft cache[MAX_SIZES];
static size_t cached;

/* FFTW_MEASURE by default; CF_FFT_PLANNING=estimate trades speed for
 * start-up time (tests create many engines of random sizes). */
static unsigned planner_flags(void)
{
  const char *e = getenv("CF_FFT_PLANNING");
  return e && strcmp(e, "estimate") == 0 ? FFTW_ESTIMATE : FFTW_MEASURE;
}

static cf_status make(size_t n, cf_fft *f)
{
  /* Plan on arrays laid out as the convolvers execute them: 64-byte
   * aligned, im at re + nbs in one block. */
  size_t nbs = (n / 2 + 1 + 15) & ~(size_t)15;
  float *in = cf_alloc(n * sizeof *in);
  float *re = cf_alloc(2 * nbs * sizeof *re);
  float *im = re ? re + nbs : NULL;
  cf_status s = CF_OK;
  if (!in || !re) {
    s = cf_fail(CF_E_NOMEM, "FFT size %zu: out of memory for planning", n);
    goto out;
  }
  fftw_iodim dim = {(int)n, 1, 1};
  unsigned flags = planner_flags();
  f->fwd = fftwf_plan_guru_split_dft_r2c(1, &dim, 0, NULL, in, re, im, flags);
  f->inv = fftwf_plan_guru_split_dft_c2r(1, &dim, 0, NULL, re, im, in,
                                         flags | FFTW_DESTROY_INPUT);
  if (!f->fwd || !f->inv)
    s = cf_fail(CF_E_INTERNAL, "FFTW could not plan a real FFT of size %zu",
                n);
  f->n = n;
out:
  cf_free(in);
  cf_free(re);
  return s;
}

cf_status cf_fft_get(size_t n, const cf_fft **out)
{
  if (n < 2 || n % 2 || n > ((size_t)1 << 24))
    return cf_fail(CF_E_INVALID, "FFT size %zu: must be even, 2..2^24", n);
  cf_status s = CF_OK;
  pthread_mutex_lock(&lock);
  size_t i = 0;
  while (i < cached && cache[i].n != n)
    i++;
  if (i == cached) {
    if (cached == MAX_SIZES)
      s = cf_fail(CF_E_INTERNAL, "FFT plan cache full (%d sizes)", MAX_SIZES);
    else if ((s = make(n, &cache[i])) == CF_OK)
      cached++;
  }
  pthread_mutex_unlock(&lock);
  *out = s == CF_OK ? &cache[i] : NULL;
  return s;
}

void cf_fft_forward(const cf_fft *f, float *in, float *re, float *im)
{
  fftwf_execute_split_dft_r2c(f->fwd, in, re, im);
}

void cf_fft_inverse(const cf_fft *f, float *re, float *im, float *out)
{
  fftwf_execute_split_dft_c2r(f->inv, re, im, out);
}

void *cf_alloc(size_t bytes)
{
  void *p = NULL;
  if (bytes == 0)
    bytes = 64;
  if (posix_memalign(&p, 64, (bytes + 63) & ~(size_t)63) != 0)
    return NULL;
  memset(p, 0, bytes);
  return p;
}

void cf_free(void *p) { free(p); }
