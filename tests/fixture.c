/* Files the loader suites write for a run (see fixture.h). */
#include "fixture.h"

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

char tmp_dir[512];

int fixture_init(const char *prefix)
{
  const char *base = getenv("CF_TEST_TMP");
  if (!base || !*base)
    base = "/tmp";
  mkdir(base, 0777); /* may exist */
  snprintf(tmp_dir, sizeof tmp_dir, "%s/%s-%ld", base, prefix,
           (long)getpid());
  if (mkdir(tmp_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "cannot create %s: %s\n", tmp_dir, strerror(errno));
    return 1;
  }
  return 0;
}

const char *fixture(const char *name)
{
  static char ring[8][1024];
  static unsigned next;
  char *p = ring[next++ % 8];
  snprintf(p, sizeof ring[0], "%s/%s", tmp_dir, name);
  return p;
}

int fixture_cleanup(void **state)
{
  (void)state;
  DIR *d = opendir(tmp_dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      unlink(fixture(e->d_name));
  if (d)
    closedir(d);
  rmdir(tmp_dir);
  return 0;
}

void write_bytes(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

size_t npy_header(char *buf, int version, const char *descr, int fortran,
                  const char *shape)
{
  size_t pre = version == 1 ? 10 : 12;
  char dict[512];
  int n = snprintf(dict, sizeof dict,
                   "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }",
                   descr, fortran ? "True" : "False", shape);
  size_t len = (size_t)n + 1;
  while ((pre + len) % 64)
    len++;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (char)version;
  buf[7] = 0;
  for (size_t i = 0; i < pre - 8; i++)
    buf[8 + i] = (char)(len >> (8 * i));
  memset(buf + pre, ' ', len);
  memcpy(buf + pre, dict, (size_t)n);
  buf[pre + len - 1] = '\n';
  return pre + len;
}

void npy_put_elem(unsigned char *p, double v, size_t size, int swap)
{
  unsigned char b[8];
  if (size == 4) {
    float f = (float)v;
    memcpy(b, &f, 4);
  } else {
    memcpy(b, &v, 8);
  }
  for (size_t i = 0; i < size; i++)
    p[i] = b[swap ? size - 1 - i : i];
}
