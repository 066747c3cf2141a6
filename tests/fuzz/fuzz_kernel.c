/* libFuzzer harness for the 1D kernel-file loaders: cf_kernel_load (the
 * format found from the content, audio through libav) at a rate picked by
 * the first input byte, then cf_kernel_load_text and cf_kernel_load_npy on
 * the same bytes. Built and run by tests/fuzz/run. */
#include <math.h>

#include "cudafilter/kernel.h"
#include "fuzz_common.h"

#ifdef CF_FUZZ_HAVE_LIBAV
#include "../../src/io/av_lazy.h"
#endif

/* Rates worth trying: 0 (the file's own), common ones, odd ones and the
 * edges of the accepted range (1..1000000). */
static const unsigned rates[] = {
    0,     0,     1,      7,      8000,    11025,   22050,       44100,
    48000, 96000, 192000, 999999, 1000000, 1000001, 4294967295u, 0};

/* A loaded kernel set is usable: its shape holds together and every tap
 * is finite. */
static void check_kernel(const cf_kernel *k)
{
  unsigned outputs = cf_kernel_outputs(k), inputs = cf_kernel_inputs(k);
  FUZZ_EXPECT(outputs >= 1 && outputs <= CF_MAX_CHANNELS);
  FUZZ_EXPECT(inputs >= 1 && inputs <= CF_MAX_CHANNELS);
  FUZZ_EXPECT(cf_kernel_count(k) >= 1 &&
              cf_kernel_count(k) <= CF_KERNEL_MAX_COUNT);
  FUZZ_EXPECT(cf_kernel_max_len(k) >= 1 &&
              cf_kernel_max_len(k) <= CF_KERNEL_MAX_TAPS);
  for (unsigned i = 0; i < cf_kernel_count(k); i++) {
    size_t len;
    const float *t = cf_kernel_taps(k, i, &len);
    for (size_t j = 0; j < len; j++)
      FUZZ_EXPECT(isfinite(t[j]));
  }
}

static void check(const char *loader, cf_status s, cf_kernel *k)
{
  if (s == CF_OK) {
    FUZZ_EXPECT(k);
    if (fuzz_verbose)
      fprintf(stderr, "%s: ok: %u x %u kernels, %zu taps at most\n", loader,
              cf_kernel_outputs(k), cf_kernel_inputs(k), cf_kernel_max_len(k));
    check_kernel(k);
    cf_kernel_free(k);
  } else {
    fuzz_check_failure(loader, s, k);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  fuzz_init("fuzz-kernel");
#ifdef CF_FUZZ_HAVE_LIBAV
  /* libav's log on garbage is noise; our messages carry its reason */
  if (cf_av_get(NULL))
    cf_av->av_log_set_level(AV_LOG_QUIET);
#endif
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  unsigned rate = rates[data[0] % (sizeof rates / sizeof *rates)];
  fuzz_write(data + 1, size - 1);
  cf_kernel *k = NULL;
  check("cf_kernel_load", cf_kernel_load(fuzz_path, rate, &k), k);
  k = NULL;
  check("cf_kernel_load_text", cf_kernel_load_text(fuzz_path, &k), k);
  k = NULL;
  check("cf_kernel_load_npy", cf_kernel_load_npy(fuzz_path, &k), k);
  return 0;
}
