/* FFTW3f plan cache. FFTW's planner is not thread-safe and FFTW_MEASURE
 * costs 0.1-1.5 s per size here (for plans up to 1.8x faster than
 * FFTW_ESTIMATE's), so plans are made once per size under a lock, kept for
 * the life of the process, and FFTW's wisdom is kept on disk so the next
 * process plans in milliseconds. fftwf_execute_dft_r2c/c2r with new arrays
 * is thread-safe.
 *
 * A stream that is running (a kernel swap, a switch to the CPU) cannot wait
 * for FFTW_MEASURE: CF_FFT_QUICK takes any plan already made for the size,
 * else one from FFTW's wisdom (loaded from disk, or measured earlier in
 * this process), else FFTW_ESTIMATE's, made in well under a millisecond.
 * Such a plan is kept beside the measured one a later CF_FFT_MEASURE
 * request makes: entries never change once made, so a plan in use is
 * never replaced under a convolver.
 *
 * The cache grows in segments of SEG_SIZES entries allocated as needed,
 * so entries never move, up to CF_FFT_MAX_SIZES (engine.h) sizes in all;
 * past that a new size is refused with CF_E_NOMEM. A plan pair holds
 * about 2-3 floats per point of a 1D size (~1 MB at 131072) or ~5 per
 * row and column of a 2D one, plus 10-30 KB of FFTW's structures; an
 * entry here is 72 bytes. Only ~2000 even 7-smooth 1D sizes exist up to
 * 2^24, so the bound matters for 2D tiles: at 1080p tiles, ~50 KB each,
 * 32768 sizes would hold ~1.6 GB. */
#include "fft.h"

#include <fftw3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../engine/error_internal.h"
#include "cf_config.h"
#include "cudafilter/engine.h"

/* Columns of a 2D spectrum transformed at a go: transposed into a block
 * of the scratch (COL_BLOCK x rows bins, in cache), then out of place
 * into the spectrum. 64: 8 to 256 were measured on tiles of 128x512 to
 * 3072x3072 here, none better throughout
 * (bench/results/fft2d-columns-vm-2026-12-02.md). */
#define COL_BLOCK 64

struct cf_fft {
  size_t rows, n; /* rows = 1: a 1D transform */
  /* 1D: the pair. 2D: fwd/inv the rows' r2c/c2r (row-major, rows x
   * (n/2 + 1) bins, on the scratch), cf/cb the columns' c2c forward
   * (block to spectrum) and backward (spectrum to block) on COL_BLOCK
   * contiguous columns, rf/rb the same on the last nb % COL_BLOCK (NULL
   * where there are none). */
  fftwf_plan fwd, inv, cf, cb, rf, rb;
  int hasty; /* FFTW_ESTIMATE where FFTW_MEASURE was asked for */
};

#define SEG_SIZES 512
#define MAX_SEGS (CF_FFT_MAX_SIZES / SEG_SIZES)
_Static_assert(CF_FFT_MAX_SIZES % SEG_SIZES == 0, "whole segments");

/* The lock serialises FFTW's planner and the cache's growth. Entries
 * [0, cached) are complete and never change: finding one takes no lock,
 * so a swap that needs only sizes already planned never waits for another
 * thread's planning (an engine being built, cf_engine_prepare_kernel).
 * Entry i is seg[i / SEG_SIZES][i % SEG_SIZES]; a segment is allocated
 * (under the lock) and its pointer stored before any of its entries is
 * published by the release store of `cached`, so a reader that acquired
 * `cached` sees the segments of [0, cached). Segments are never freed. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cf_fft *_Atomic seg[MAX_SEGS];
static _Atomic size_t cached;

static cf_fft *entry(size_t i)
{
  cf_fft *s = atomic_load_explicit(&seg[i / SEG_SIZES], memory_order_acquire);
  return &s[i % SEG_SIZES];
}

/* FFTW's planner is one per process: the application that embeds the
 * library (an audio host, a video editor, another plug-in, any library it
 * links that plans with libfftw3f) shares it, and `lock` serialises only
 * this library's planning. Planner hooks (FFTW 3.3.5+), installed when
 * the library is loaded, make every fftwf_plan_* and fftwf_destroy_plan
 * in the process take `fftw_lock`, as fftwf_make_planner_thread_safe()
 * (libfftw3f_threads) would; an application that calls that later puts
 * its own lock in place, which serialises the same calls. Wisdom import
 * and export, which FFTW does not hook, take it here. A plan begun before
 * the hooks were in place ends without having taken the lock: the after
 * hook releases it only in a thread that holds it. QA: a host thread
 * making its own plans while engines were made crashed the process in
 * FFTW's planner (double free, corrupted heap) or hung it, 6 runs of 6;
 * with the hooks installed at the first planning instead of at load, 3
 * of 8 still did (the host's plan under way then). */
static pthread_mutex_t fftw_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int fftw_held;

static void fftw_before(void)
{
  pthread_mutex_lock(&fftw_lock);
  fftw_held = 1;
}

static void fftw_after(void)
{
  if (fftw_held) {
    fftw_held = 0;
    pthread_mutex_unlock(&fftw_lock);
  }
}

#if CF_HAVE_FFTW_HOOKS
/* libfftw3f's since 3.3.5, what fftwf_make_planner_thread_safe() calls;
 * fftw3.h does not declare it */
void fftwf_set_planner_hooks(void (*before)(void), void (*after)(void));

__attribute__((constructor)) static void fftw_hooks_install(void)
{
  fftwf_set_planner_hooks(fftw_before, fftw_after);
}
#endif

void cf_fft_planner_lock(void)
{
  pthread_mutex_lock(&lock);
}

void cf_fft_planner_unlock(void)
{
  pthread_mutex_unlock(&lock);
}

/* FFTW_MEASURE by default; CF_FFT_PLANNING=estimate trades speed for
 * start-up time (tests create many engines of random sizes). */
static unsigned planner_flags(void)
{
  const char *e = getenv("CF_FFT_PLANNING");
  return e && strcmp(e, "estimate") == 0 ? FFTW_ESTIMATE : FFTW_MEASURE;
}

/* $CF_FFT_WISDOM, else $XDG_CACHE_HOME or ~/.cache + cudafilter/;
 * CF_FFT_WISDOM=none keeps nothing on disk. Empty when there is none. */
static void wisdom_path(char *buf, size_t n, int make_dir)
{
  const char *e = getenv("CF_FFT_WISDOM"), *base = getenv("XDG_CACHE_HOME");
  buf[0] = 0;
  if (e) {
    if (strcmp(e, "none") != 0)
      snprintf(buf, n, "%s", e);
    return;
  }
  char dir[512];
  if (base && *base)
    snprintf(dir, sizeof dir, "%s/cudafilter", base);
  else if ((base = getenv("HOME")) && *base)
    snprintf(dir, sizeof dir, "%s/.cache/cudafilter", base);
  else
    return;
  if (make_dir) {
    char parent[512];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
      *slash = 0;
      mkdir(parent, 0755);
    }
    mkdir(dir, 0755);
  }
  snprintf(buf, n, "%s/fftw3f.wisdom", dir);
}

static void wisdom_load(void)
{
  static int done;
  char path[600];
  if (done)
    return;
  done = 1;
  wisdom_path(path, sizeof path, 0);
  if (path[0]) {
    fftw_before();
    fftwf_import_wisdom_from_filename(path); /* absent or stale: ignored */
    fftw_after();
  }
}

/* Write to a temporary name and rename, so readers never see half a file;
 * failing to save only costs planning time next run. What other
 * processes saved since this one loaded is merged in first: runs in
 * parallel (xargs -P) share the file, and each save of this process's
 * wisdom alone dropped the sizes the others had measured (QA). */
static void wisdom_save(void)
{
  char path[600], tmp[640];
  wisdom_path(path, sizeof path, 1);
  if (!path[0])
    return;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  fftw_before();
  fftwf_import_wisdom_from_filename(path); /* absent or stale: ignored */
  int saved = fftwf_export_wisdom_to_filename(tmp);
  fftw_after();
  if (!saved || rename(tmp, path) != 0)
    unlink(tmp);
}

/* Floats of a 2D transform's scratch: the row-major spectrum, then (at a
 * 64-byte boundary) the column block. */
static size_t scratch_block(size_t rows, size_t n)
{
  return (2 * rows * (n / 2 + 1) + 15) / 16 * 16;
}

static size_t scratch_floats(size_t rows, size_t n)
{
  size_t nb = n / 2 + 1;
  return scratch_block(rows, n) + 2 * rows * (nb < COL_BLOCK ? nb : COL_BLOCK);
}

/* The plans of f, the 2D ones made on in (rows x n), spec (the
 * transposed spectrum) and scratch (scratch_floats). 1 if all are. */
static int plan_pair(size_t rows, size_t n, float *in, float *spec,
                     float *scratch, unsigned flags, cf_fft *f)
{
  /* No buffered solver: their transforms allocate scratch on every call
   * (engine.h and video.h promise process() never allocates), and FFTW
   * aborts the process when that allocation fails (QA: a 2D tile's
   * transform under a memory limit, the kernel spectra of a swap among
   * them, could not return CF_E_NOMEM). 1D: measured here it changed no
   * plan's speed (power-of-2 and smooth sizes were unbuffered already).
   * 2D (video tiles): FFTW's own 2D plans were 13-20% slower unbuffered
   * (bench/results/fft2d-buffering-vm-2026-12-02.md), their column
   * transforms strided or in place; the 2D transform is therefore made
   * here of contiguous out-of-place ones on the caller's scratch: the
   * rows r2c, then blocks of COL_BLOCK columns transposed and transformed
   * into the spectrum (what FFTW's buffered solver does on a buffer of
   * its own), the spectrum left transposed. */
  flags |= FFTW_NO_BUFFERING;
  fftwf_complex *sp = (fftwf_complex *)spec;
  if (rows == 1) {
    f->fwd = fftwf_plan_dft_r2c_1d((int)n, in, sp, flags);
    f->inv = fftwf_plan_dft_c2r_1d((int)n, sp, in, flags | FFTW_DESTROY_INPUT);
    return f->fwd && f->inv;
  }
  int ni = (int)n, ri = (int)rows, nb = (int)(n / 2 + 1);
  fftwf_complex *sc = (fftwf_complex *)scratch;
  fftwf_complex *blk = (fftwf_complex *)(scratch + scratch_block(rows, n));
  f->fwd = fftwf_plan_many_dft_r2c(1, &ni, ri, in, NULL, 1, ni, sc, NULL, 1, nb,
                                   flags);
  f->inv = fftwf_plan_many_dft_c2r(1, &ni, ri, sc, NULL, 1, nb, in, NULL, 1, ni,
                                   flags | FFTW_DESTROY_INPUT);
  int ok = f->fwd && f->inv;
  for (int w = COL_BLOCK, i = 0; i < 2; w = nb % COL_BLOCK, i++) {
    if (w > nb || w == 0)
      continue;
    fftwf_plan *fp = i ? &f->rf : &f->cf, *bp = i ? &f->rb : &f->cb;
    *fp = fftwf_plan_many_dft(1, &ri, w, blk, NULL, 1, ri, sp, NULL, 1, ri,
                              FFTW_FORWARD, flags | FFTW_DESTROY_INPUT);
    *bp = fftwf_plan_many_dft(1, &ri, w, sp, NULL, 1, ri, blk, NULL, 1, ri,
                              FFTW_BACKWARD, flags | FFTW_DESTROY_INPUT);
    ok = ok && *fp && *bp;
  }
  return ok;
}

static void plan_drop(cf_fft *f)
{
  fftwf_plan *all[] = {&f->fwd, &f->inv, &f->cf, &f->cb, &f->rf, &f->rb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (*all[i])
      fftwf_destroy_plan(*all[i]);
    *all[i] = NULL;
  }
}

static cf_status make(size_t rows, size_t n, cf_fft_mode mode, cf_fft *f)
{
  /* Plan on arrays laid out as the convolvers execute them: 64-byte
   * aligned (FFTW only reuses a plan on arrays of the same alignment). */
  size_t nb = rows * (n / 2 + 1);
  float *in = cf_alloc(rows * n * sizeof *in);
  float *spec = cf_alloc(2 * nb * sizeof *spec);
  float *scratch =
      rows > 1 ? cf_alloc(scratch_floats(rows, n) * sizeof *scratch) : NULL;
  cf_status s = CF_OK;
  if (!in || !spec || (rows > 1 && !scratch)) {
    s = cf_fail(CF_E_NOMEM, "FFT size %zu: out of memory for planning", n);
    goto out;
  }
  unsigned flags = planner_flags();
  f->hasty = 0;
  /* the slot may hold a failed attempt's */
  f->fwd = f->inv = f->cf = f->cb = f->rf = f->rb = NULL;
  int ok = 0;
  if (flags == FFTW_MEASURE && mode == CF_FFT_QUICK) {
    ok = plan_pair(rows, n, in, spec, scratch, flags | FFTW_WISDOM_ONLY, f);
    if (!ok) { /* no wisdom for this size */
      plan_drop(f);
      flags = FFTW_ESTIMATE;
      f->hasty = 1;
    }
  }
  if (!ok)
    ok = plan_pair(rows, n, in, spec, scratch, flags, f);
  if (!ok) {
    plan_drop(f);
    s = cf_fail(CF_E_INTERNAL, "FFTW could not plan a real FFT of size "
                "%zux%zu", rows, n);
  }
  f->rows = rows;
  f->n = n;
out:
  cf_free(in);
  cf_free(spec);
  cf_free(scratch);
  return s;
}

/* The entry for the size as good as `mode` asks (in quick mode a hasty
 * one will do, a measured one first) among the first m; m if none. */
static size_t find(size_t m, size_t rows, size_t n, cf_fft_mode mode)
{
  size_t i = m;
  for (size_t b = 0; b < m; b += SEG_SIZES) {
    const cf_fft *c = entry(b);
    size_t end = m - b < SEG_SIZES ? m - b : SEG_SIZES;
    for (size_t j = 0; j < end; j++)
      if (c[j].n == n && c[j].rows == rows &&
          (!c[j].hasty || (mode == CF_FFT_QUICK && i == m)))
        i = b + j;
  }
  return i;
}

static cf_status get(size_t rows, size_t n, cf_fft_mode mode,
                     const cf_fft **out)
{
  size_t m = atomic_load_explicit(&cached, memory_order_acquire);
  size_t i = find(m, rows, n, mode);
  if (i < m) {
    *out = entry(i);
    return CF_OK;
  }
  cf_status s = CF_OK;
  pthread_mutex_lock(&lock);
  m = atomic_load_explicit(&cached, memory_order_relaxed);
  i = find(m, rows, n, mode);
  if (i == m) {
    if (m == CF_FFT_MAX_SIZES)
      s = cf_fail(CF_E_NOMEM, "FFT size %zux%zu: the process has planned "
                  "CF_FFT_MAX_SIZES (%u) FFT sizes, the most it keeps",
                  rows, n, CF_FFT_MAX_SIZES);
    else if (!atomic_load_explicit(&seg[m / SEG_SIZES], memory_order_relaxed)) {
      cf_fft *c = calloc(SEG_SIZES, sizeof *c);
      if (c)
        atomic_store_explicit(&seg[m / SEG_SIZES], c, memory_order_release);
      else
        s = cf_fail(CF_E_NOMEM, "FFT size %zux%zu: out of memory for the "
                    "plan cache", rows, n);
    }
    if (s == CF_OK) {
      cf_fft *f = entry(m);
      wisdom_load();
      if ((s = make(rows, n, mode, f)) == CF_OK) {
        atomic_store_explicit(&cached, m + 1, memory_order_release);
        if (planner_flags() == FFTW_MEASURE && !f->hasty &&
            mode == CF_FFT_MEASURE)
          wisdom_save();
      }
    }
  }
  pthread_mutex_unlock(&lock);
  *out = s == CF_OK ? entry(i) : NULL;
  return s;
}

size_t cf_fft_smooth(size_t n)
{
  for (size_t m = n;; m++) {
    size_t r = m;
    for (size_t f = 2; f <= 7; f++)
      while (r % f == 0)
        r /= f;
    if (r == 1)
      return m;
  }
}

cf_status cf_fft_get(size_t n, cf_fft_mode mode, const cf_fft **out)
{
  if (n < 2 || n % 2 || n > ((size_t)1 << 24))
    return cf_fail(CF_E_INVALID, "FFT size %zu: must be even, 2..2^24", n);
  return get(1, n, mode, out);
}

cf_status cf_fft2_get(size_t rows, size_t n, cf_fft_mode mode,
                      const cf_fft **out)
{
  if (rows < 2 || n < 2 || n % 2 || rows > 8192 || n > 8192)
    return cf_fail(CF_E_INVALID, "2D FFT size %zux%zu: must be 2..8192 with "
                   "an even row length", rows, n);
  return get(rows, n, mode, out);
}

int cf_fft_hasty(const cf_fft *f)
{
  return f->hasty;
}

void cf_fft_forward(const cf_fft *f, float *in, float *spec)
{
  fftwf_execute_dft_r2c(f->fwd, in, (fftwf_complex *)spec);
}

void cf_fft_inverse(const cf_fft *f, float *spec, float *out)
{
  fftwf_execute_dft_c2r(f->inv, (fftwf_complex *)spec, out);
}

size_t cf_fft2_scratch(const cf_fft *f)
{
  return scratch_floats(f->rows, f->n);
}

/* Bins move as pairs of floats. */
typedef struct bin {
  float re, im;
} bin;

/* The w columns of a (row-major, nb bins a row, from the block's first
 * column) to the block t (w x rows), or back when back; 8 rows at a
 * time, so that each of t's rows is written (or read) 64 bytes at once. */
static void transpose_block(bin *restrict a, bin *restrict t, size_t rows,
                            size_t nb, size_t w, int back)
{
  size_t j0 = 0;
  for (; j0 + 8 <= rows; j0 += 8)
    for (size_t i = 0; i < w; i++) {
      bin *tc = t + i * rows + j0, *ac = a + j0 * nb + i;
      if (back)
        for (size_t j = 0; j < 8; j++)
          ac[j * nb] = tc[j];
      else
        for (size_t j = 0; j < 8; j++)
          tc[j] = ac[j * nb];
    }
  for (; j0 < rows; j0++)
    for (size_t i = 0; i < w; i++) {
      if (back)
        a[j0 * nb + i] = t[i * rows + j0];
      else
        t[i * rows + j0] = a[j0 * nb + i];
    }
}

void cf_fft2_forward(const cf_fft *f, float *in, float *spec, float *scratch)
{
  size_t rows = f->rows, nb = f->n / 2 + 1;
  bin *sc = (bin *)scratch, *blk = (bin *)(scratch + scratch_block(rows, f->n));
  fftwf_execute_dft_r2c(f->fwd, in, (fftwf_complex *)sc);
  for (size_t k0 = 0; k0 < nb; k0 += COL_BLOCK) {
    size_t w = nb - k0 < COL_BLOCK ? nb - k0 : COL_BLOCK;
    transpose_block(sc + k0, blk, rows, nb, w, 0);
    fftwf_execute_dft(w == COL_BLOCK ? f->cf : f->rf, (fftwf_complex *)blk,
                      (fftwf_complex *)spec + k0 * rows);
  }
}

void cf_fft2_inverse(const cf_fft *f, float *spec, float *out, float *scratch)
{
  size_t rows = f->rows, nb = f->n / 2 + 1;
  bin *sc = (bin *)scratch, *blk = (bin *)(scratch + scratch_block(rows, f->n));
  for (size_t k0 = 0; k0 < nb; k0 += COL_BLOCK) {
    size_t w = nb - k0 < COL_BLOCK ? nb - k0 : COL_BLOCK;
    fftwf_execute_dft(w == COL_BLOCK ? f->cb : f->rb,
                      (fftwf_complex *)spec + k0 * rows, (fftwf_complex *)blk);
    transpose_block(sc + k0, blk, rows, nb, w, 1);
  }
  fftwf_execute_dft_c2r(f->inv, (fftwf_complex *)sc, out);
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
