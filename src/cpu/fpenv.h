/* Denormals flushed to zero while the CPU backend filters audio.
 *
 * A reverb's tail, or any signal decaying to silence, passes through
 * denormal floats (below FLT_MIN, 1.2e-38) on its way to 0; so do the
 * products of small samples and small taps, and an FFT's sums of them. x86
 * CPUs handle some operations on them in microcode: this machine's AMD
 * EPYC (Zen 3) ran the FFT paths up to 2.3x (median 1.5x) slower on
 * denormal input (bench_engine --denormal), and many Intel CPUs are
 * reported to take far longer (a microcode assist of a hundred cycles or
 * more per operation). Real-time audio code sets the SSE control register's
 * flush-to-zero (results) and denormals-are-zero (operands) bits while it
 * computes; so does the audio engine, in the calling thread for the
 * duration of the call (cf_fpenv_enter / cf_fpenv_leave, which gives the
 * caller its control bits back and keeps the exception flags the work
 * raised), and in the pool's workers, which take the caller's control
 * register for each job (pool.c). Elsewhere than x86 these do nothing: the
 * CPU's default mode stays. */
#ifndef CF_CPU_FPENV_H
#define CF_CPU_FPENV_H

#if defined(__SSE2__)
#include <xmmintrin.h>

#define CF_FPENV_FTZ_DAZ 0x8040u /* MXCSR bits 15 (FTZ) and 6 (DAZ) */
#define CF_FPENV_FLAGS 0x3fu     /* the sticky exception flags */

typedef unsigned cf_fpenv;

static inline cf_fpenv cf_fpenv_get(void) { return _mm_getcsr(); }

/* Take e's control bits (the flags raised here stay). */
static inline void cf_fpenv_take(cf_fpenv e)
{
  unsigned now = _mm_getcsr();
  if ((now ^ e) & ~CF_FPENV_FLAGS)
    _mm_setcsr((e & ~CF_FPENV_FLAGS) | (now & CF_FPENV_FLAGS));
}

/* Flush denormals from here on; returns what cf_fpenv_leave restores. */
static inline cf_fpenv cf_fpenv_enter(void)
{
  unsigned old = _mm_getcsr();
  if ((old & CF_FPENV_FTZ_DAZ) != CF_FPENV_FTZ_DAZ)
    _mm_setcsr(old | CF_FPENV_FTZ_DAZ);
  return old;
}

static inline void cf_fpenv_leave(cf_fpenv old) { cf_fpenv_take(old); }

#else

typedef int cf_fpenv;
static inline cf_fpenv cf_fpenv_get(void) { return 0; }
static inline void cf_fpenv_take(cf_fpenv e) { (void)e; }
static inline cf_fpenv cf_fpenv_enter(void) { return 0; }
static inline void cf_fpenv_leave(cf_fpenv old) { (void)old; }

#endif
#endif
