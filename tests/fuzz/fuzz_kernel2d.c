/* libFuzzer harness for the 2D / temporal kernel-file loaders:
 * cf_kernel2d_load (the format found from the content), then
 * cf_kernel2d_load_text and cf_kernel2d_load_npy on the same bytes. Built
 * and run by tests/fuzz/run. */
#include <math.h>

#include "cudafilter/kernel2d.h"
#include "fuzz_common.h"

static void check(const char *loader, cf_status s, cf_kernel2d *k)
{
  if (s != CF_OK) {
    fuzz_check_failure(loader, s, k);
    return;
  }
  FUZZ_EXPECT(k);
  size_t t = cf_kernel2d_frames(k), kh = cf_kernel2d_height(k),
         kw = cf_kernel2d_width(k);
  if (fuzz_verbose)
    fprintf(stderr, "%s: ok: %zu x %zu x %zu taps\n", loader, t, kh, kw);
  FUZZ_EXPECT(t >= 1 && t <= CF_KERNEL2D_MAX_FRAMES);
  FUZZ_EXPECT(kh >= 1 && kh <= CF_KERNEL2D_MAX_SIDE);
  FUZZ_EXPECT(kw >= 1 && kw <= CF_KERNEL2D_MAX_SIDE);
  FUZZ_EXPECT(t * kh * kw <= CF_KERNEL2D_MAX_TAPS);
  const float *taps = cf_kernel2d_taps(k);
  for (size_t i = 0; i < t * kh * kw; i++)
    FUZZ_EXPECT(isfinite(taps[i]));
  cf_kernel2d_free(k);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  fuzz_init("fuzz-kernel2d");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_write(data, size);
  cf_kernel2d *k = NULL;
  check("cf_kernel2d_load", cf_kernel2d_load(fuzz_path, &k), k);
  k = NULL;
  check("cf_kernel2d_load_text", cf_kernel2d_load_text(fuzz_path, &k), k);
  k = NULL;
  check("cf_kernel2d_load_npy", cf_kernel2d_load_npy(fuzz_path, &k), k);
  return 0;
}
