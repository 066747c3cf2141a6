/* YUV4MPEG2 files for the tests (y4m.h). */
#include "y4m.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

size_t y4m_frame_bytes(int i420, unsigned w, unsigned h)
{
  size_t luma = (size_t)w * h;
  return i420 ? luma + 2 * (size_t)((w + 1) / 2) * ((h + 1) / 2) : luma;
}

void y4m_write(const char *path, int i420, unsigned w, unsigned h, unsigned fps,
               unsigned char *const *frames, size_t n)
{
  FILE *o = fopen(path, "wb");
  assert_non_null(o);
  fprintf(o, "YUV4MPEG2 W%u H%u F%u:1 Ip A1:1 C%s\n", w, h, fps,
          i420 ? "420jpeg" : "mono");
  size_t fb = y4m_frame_bytes(i420, w, h);
  for (size_t t = 0; t < n; t++) {
    fputs("FRAME\n", o);
    assert_int_equal(fwrite(frames[t], 1, fb, o), fb);
  }
  assert_int_equal(fclose(o), 0);
}

size_t y4m_read(const char *path, int i420, unsigned w, unsigned h,
                unsigned char **out)
{
  FILE *i = fopen(path, "rb");
  if (!i)
    fail_msg("%s: cannot open", path);
  char line[512];
  assert_non_null(fgets(line, sizeof line, i));
  unsigned gw = 0, gh = 0;
  char *c = strstr(line, " C");
  if (sscanf(line, "YUV4MPEG2 W%u H%u", &gw, &gh) != 2 || gw != w || gh != h ||
      !c || strncmp(c + 2, i420 ? "420" : "mono", 3) != 0)
    fail_msg("%s: header '%s', want %ux%u %s", path, line, w, h,
             i420 ? "I420" : "GRAY8");
  size_t fb = y4m_frame_bytes(i420, w, h), n = 0;
  unsigned char *buf = NULL;
  while (fgets(line, sizeof line, i)) {
    if (strncmp(line, "FRAME", 5) != 0)
      fail_msg("%s: frame %zu: no FRAME line", path, n);
    buf = realloc(buf, (n + 1) * fb);
    assert_non_null(buf);
    if (fread(buf + n * fb, 1, fb, i) != fb)
      fail_msg("%s: frame %zu is cut short", path, n);
    n++;
  }
  fclose(i);
  *out = buf;
  return n;
}
