/* Shared by the loader fuzz harnesses: the loaders take a path, so each
 * input is written to a file of this process's own (in /dev/shm: no disk
 * traffic), and every result is checked against the loaders' contract. */
#ifndef CF_FUZZ_COMMON_H
#define CF_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudafilter/error.h"

static char fuzz_path[256];
static int fuzz_verbose; /* CF_FUZZ_VERBOSE set: print every result */

static void fuzz_remove_file(void)
{
  unlink(fuzz_path);
}

/* Picks the file name once per process (libFuzzer's -jobs/-fork run
 * several processes side by side). */
static void fuzz_init(const char *name)
{
  const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(fuzz_path, sizeof fuzz_path, "%s/cf-%s-%ld", dir, name,
           (long)getpid());
  atexit(fuzz_remove_file);
  fuzz_verbose = getenv("CF_FUZZ_VERBOSE") != NULL;
}

static void fuzz_write(const uint8_t *data, size_t n)
{
  FILE *f = fopen(fuzz_path, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    perror(fuzz_path);
    abort();
  }
}

/* A failed load must leave *out NULL and say what went wrong, naming the
 * file; anything else is a bug in the loader. */
static void fuzz_check_failure(const char *loader, cf_status s, const void *out)
{
  const char *msg = cf_last_error();
  if (fuzz_verbose)
    fprintf(stderr, "%s: %s: %s\n", loader, cf_status_name(s), msg);
  const char *why = out ? "left a kernel set"
                    : s < CF_E_INVALID || s > CF_E_INTERNAL ? "bad status"
                    : !strstr(msg, fuzz_path) ? "message does not name the file"
                                              : NULL;
  if (why) {
    fprintf(stderr, "%s: %s (status %d, \"%s\")\n", loader, why, (int)s, msg);
    abort();
  }
}

#define FUZZ_EXPECT(cond)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);               \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#endif
