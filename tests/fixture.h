/* Files the loader suites (test_loaders, test_kernel2d) write for a run:
 * a private directory under $CF_TEST_TMP (or /tmp), and .npy helpers. */
#ifndef CF_TEST_FIXTURE_H
#define CF_TEST_FIXTURE_H

#include <stddef.h>

/* The run's directory, made by fixture_init. */
extern char tmp_dir[512];

/* Make <base>/<prefix>-<pid>; nonzero (with a message) on failure. */
int fixture_init(const char *prefix);
/* cmocka group teardown: remove the directory and what is in it. */
int fixture_cleanup(void **state);
/* A path in the run's directory (a ring of 8 buffers, so a test can hold
 * a few at once). */
const char *fixture(const char *name);
/* Write n bytes to path, failing the test on any error. */
void write_bytes(const char *path, const void *data, size_t n);

/* .npy magic, version, header length and a dict padded to a multiple of
 * 64 bytes into buf; returns its size. */
size_t npy_header(char *buf, int version, const char *descr, int fortran,
                  const char *shape);
/* v as a float32 (size 4) or float64 (size 8), byte-swapped if swap. */
void npy_put_elem(unsigned char *p, double v, size_t size, int swap);

#endif
