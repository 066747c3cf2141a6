/* The cuFFT loader (src/cuda/cufft_lazy.c, compiled into this test): the
 * CUDA backend's cuFFT calls reach the real libcufft, loaded on the first
 * call, and where it cannot be loaded (built a second time naming a
 * library that does not exist: CF_TEST_CUFFT_MISSING) every call fails
 * with CUFFT_NOT_SUPPORTED and the failure names the library. No device
 * needed: without one, libcufft answers a bad handle with
 * CUFFT_INVALID_PLAN and a plan with CUFFT_INTERNAL_ERROR, its own
 * answers, which the loader's failing stand-ins never give. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../src/cuda/cufft_lazy.c"

static void test_calls_reach_libcufft(void **state)
{
  (void)state;
  /* nothing loaded before the first call */
  Dl_info info;
  assert_null(api.plan_many);
  assert_int_equal(cufftDestroy(12345), CUFFT_INVALID_PLAN);
  assert_null(cf_cufft_load_failure());
  void *fns[] = {(void *)api.plan_many, (void *)api.exec_r2c,
                 (void *)api.exec_c2r, (void *)api.set_stream,
                 (void *)api.destroy};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
    assert_non_null(fns[i]);
    assert_true(dladdr(fns[i], &info) != 0);
    assert_non_null(strstr(info.dli_fname, "libcufft.so"));
  }
  /* the calls pass their arguments on: libcufft's own answers */
  cufftHandle plan = 0;
  int n = 64;
  cufftResult r = cufftPlanMany(&plan, 1, &n, NULL, 1, 0, NULL, 1, 0,
                                CUFFT_R2C, 1);
  if (r == CUFFT_SUCCESS) { /* a device after all */
    assert_int_equal(cufftSetStream(plan, NULL), CUFFT_SUCCESS);
    assert_int_equal(cufftDestroy(plan), CUFFT_SUCCESS);
  } else {
    assert_int_not_equal(r, CUFFT_NOT_SUPPORTED);
  }
  assert_int_equal(cufftExecR2C(12345, NULL, NULL), CUFFT_INVALID_PLAN);
  assert_int_equal(cufftExecC2R(12345, NULL, NULL), CUFFT_INVALID_PLAN);
  assert_int_equal(cufftSetStream(12345, NULL), CUFFT_INVALID_PLAN);
}

static void test_missing_library(void **state)
{
  (void)state;
  cufftHandle plan = 0;
  int n = 64;
  assert_int_equal(cufftPlanMany(&plan, 1, &n, NULL, 1, 0, NULL, 1, 0,
                                 CUFFT_R2C, 1),
                   CUFFT_NOT_SUPPORTED);
  assert_int_equal(cufftExecR2C(1, NULL, NULL), CUFFT_NOT_SUPPORTED);
  assert_int_equal(cufftExecC2R(1, NULL, NULL), CUFFT_NOT_SUPPORTED);
  assert_int_equal(cufftSetStream(1, NULL), CUFFT_NOT_SUPPORTED);
  assert_int_equal(cufftDestroy(1), CUFFT_NOT_SUPPORTED);
  const char *why = cf_cufft_load_failure();
  assert_non_null(why);
  assert_non_null(strstr(why, "cannot load " CF_CUFFT_SONAME));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
#ifdef CF_TEST_CUFFT_MISSING
      cmocka_unit_test(test_missing_library),
#else
      cmocka_unit_test(test_calls_reach_libcufft),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
