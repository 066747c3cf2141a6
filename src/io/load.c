/* Kernel files: find the format from the content, and the helpers every
 * loader shares. */
#include "io_internal.h"
#include "file_kind.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes looked at to tell text from binary. */
#define SNIFF_BYTES 4096

cf_status cf_io_taps_reserve(cf_io_taps *t, size_t extra, size_t most,
                             const char *path)
{
  if (extra <= t->cap - t->len)
    return CF_OK;
  size_t cap = t->cap ? t->cap : 1024;
  while (cap - t->len < extra)
    cap *= 2; /* no overflow: len + extra <= most, a limit near 2^24 */
  if (cap > most && t->len + extra <= most)
    cap = most; /* doubling for a file's last tap must not double memory */
  float *v = realloc(t->v, cap * sizeof *v);
  if (!v)
    return cf_fail(CF_E_NOMEM, "%s: out of memory for %zu taps", path, cap);
  t->v = v;
  t->cap = cap;
  return CF_OK;
}

void cf_io_taps_free(cf_io_taps *t)
{
  free(t->v);
  *t = (cf_io_taps){0};
}

cf_status cf_io_check_args(const char *path, cf_kernel **out)
{
  if (out)
    *out = NULL;
  if (!path || !out)
    return cf_fail(CF_E_INVALID, "kernel file: %s is NULL",
                   path ? "out" : "path");
  return CF_OK;
}

/* Kernel files are read twice (sniffed, then loaded) and their size is
 * checked: a pipe would give its first page to the sniffer and the rest
 * (or a hang in open(), with no writer left) to the loader. */
static cf_status not_regular(const char *path, mode_t mode)
{
  if (S_ISDIR(mode))
    return cf_fail(CF_E_IO, "%s: cannot open: is a directory", path);
  return cf_fail(CF_E_IO, "%s: not a regular file but %s: a kernel file "
                 "is read more than once; save it to a file first", path,
                 cf_file_kind(mode));
}

/* The file a kernel path names: file:NAME is NAME (file:///a the path
 * ///a), as libav and the README have it for every file we open; every
 * kernel file named so failed as "cannot open: No such file or
 * directory" (QA). */
static const char *local_name(const char *path)
{
  return strncmp(path, "file:", 5) ? path : path + 5;
}

cf_status cf_io_check_file(const char *path)
{
  struct stat st;
  if (stat(local_name(path), &st) == 0 && !S_ISREG(st.st_mode))
    return not_regular(path, st.st_mode);
  return CF_OK;
}

cf_status cf_io_open(const char *path, FILE **out)
{
  *out = NULL;
  /* stat first: opening a FIFO, even without blocking, would wake a
   * writer waiting in its open() */
  cf_status s = cf_io_check_file(path);
  if (s != CF_OK)
    return s;
  /* O_NONBLOCK: a FIFO put there since the stat must not block open() */
  int fd = open(local_name(path), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return cf_fail(CF_E_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  int flags;
  if (fstat(fd, &st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    s = cf_fail(CF_E_IO, "%s: cannot open: %s", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    s = not_regular(path, st.st_mode);
  } else if (!(*out = fdopen(fd, "rb"))) {
    s = cf_fail(CF_E_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  if (s != CF_OK)
    close(fd);
  return s;
}

cf_status cf_io_begin(const char *path, cf_kernel **out, FILE **f)
{
  *f = NULL;
  cf_status s = cf_io_check_args(path, out);
  return s == CF_OK ? cf_io_open(path, f) : s;
}

cf_status cf_io_size(const char *path, FILE *f, size_t *size)
{
  struct stat st;
  if (fstat(fileno(f), &st) != 0)
    return cf_fail(CF_E_IO, "%s: cannot stat: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return not_regular(path, st.st_mode);
  *size = (size_t)st.st_size;
  return CF_OK;
}

cf_status cf_io_read(const char *path, FILE *f, void *buf, size_t n)
{
  size_t got = fread(buf, 1, n, f);
  if (got == n)
    return CF_OK;
  if (ferror(f))
    return cf_fail(CF_E_IO, "%s: read error: %s", path, strerror(errno));
  return cf_fail(CF_E_FORMAT, "%s: truncated: expected %zu more bytes, "
                 "got %zu", path, n, got);
}

cf_status cf_io_with_path(const char *path, cf_status s)
{
  char msg[512];
  snprintf(msg, sizeof msg, "%s", cf_last_error());
  return cf_fail(s, "%s: %s", path, msg);
}

cf_status cf_io_make_kernel(const char *path, cf_routing routing,
                            unsigned outputs, unsigned inputs,
                            const float *const *taps, size_t len,
                            cf_kernel **out)
{
  cf_kernel *k;
  cf_status s = cf_kernel_new(routing, outputs, inputs, &k);
  if (s != CF_OK)
    return cf_io_with_path(path, s);
  for (unsigned i = 0; i < cf_kernel_count(k); i++)
    if ((s = cf_kernel_set(k, i, taps[i], len)) != CF_OK) {
      cf_kernel_free(k);
      return cf_io_with_path(path, s);
    }
  *out = k;
  return CF_OK;
}

const char *cf_io_nonfinite_name(double v)
{
  return isnan(v) ? "NaN" : isinf(v) ? "infinite" : "finite";
}

/* Text means printable ASCII and whitespace only: audio containers and
 * .npy data hold control bytes or bytes >= 0x80 within the first page.
 * Returns the offset of the first other byte, or n. */
static size_t text_prefix(const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if ((p[i] < 0x20 || p[i] > 0x7e) && (p[i] < '\t' || p[i] > '\r'))
      return i;
  return n;
}

/* Whether p[0..n) is text with a few stray bytes: well-formed UTF-8 (a
 * sequence cut at the end of the page included) with at most a couple of
 * control bytes. Audio containers hold far more in their first page. */
static bool mostly_text(const unsigned char *p, size_t n)
{
  size_t bad = 0;
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    size_t len = c < 0x80                ? 1
                 : c >= 0xc2 && c < 0xe0 ? 2
                 : c >= 0xe0 && c < 0xf0 ? 3
                 : c >= 0xf0 && c < 0xf5 ? 4
                                         : 0;
    size_t k = 1;
    while (k < len && i + k < n && (p[i + k] & 0xc0) == 0x80)
      k++;
    if (len == 0 || (k < len && i + k < n) ||
        (len == 1 && text_prefix(p + i, 1) == 0))
      bad++, k = 1;
    i += k;
  }
  return bad <= 2 + n / 64;
}

cf_status cf_io_sniff(const char *path, cf_io_kind *kind, size_t *at,
                      unsigned char *byte)
{
  FILE *f;
  cf_status s = cf_io_open(path, &f);
  if (s != CF_OK)
    return s;
  unsigned char head[SNIFF_BYTES];
  size_t n = fread(head, 1, sizeof head, f);
  bool failed = ferror(f);
  fclose(f);
  if (failed)
    return cf_fail(CF_E_IO, "%s: read error: %s", path, strerror(errno));
  /* A UTF-8 byte order mark (Windows Notepad writes one) is not part of
   * the text: the text loaders skip it too (cf_io_text_new). */
  size_t bom = n >= 3 && memcmp(head, CF_IO_UTF8_BOM, 3) == 0 ? 3 : 0;
  *at = bom + text_prefix(head + bom, n - bom);
  *byte = *at < n ? head[*at] : 0;
  /* A first byte 0x93 is .npy's: a near miss of its magic is not text
   * whatever follows. */
  bool textish =
      *at < n && head[bom] != 0x93 && mostly_text(head + bom, n - bom);
  *kind = n >= 6 && memcmp(head, "\x93NUMPY", 6) == 0 ? CF_IO_KIND_NPY
          : *at == n                                  ? CF_IO_KIND_TEXT
          : textish                                   ? CF_IO_KIND_TEXTISH
                                                      : CF_IO_KIND_OTHER;
  return CF_OK;
}

cf_status cf_io_text_as_npy(const char *path, cf_status s)
{
  size_t n = strlen(path);
  if (s != CF_E_FORMAT || n < 4 || strcasecmp(path + n - 4, ".npy") != 0)
    return s;
  char text[768];
  snprintf(text, sizeof text, "%s", cf_last_error());
  return cf_fail(s, "%s: named .npy, but not a .npy file (no \\x93NUMPY "
                 "magic at byte 0); read as text: %s", path, text);
}

/* A file whose every tap is 0 (an impulse response bounced or exported
 * empty, a wrong file) would mute every stream it is set on without a
 * word: refused, naming it. Taps of 0 given as such (cf_kernel_new) are
 * a mute meant, and taken. */
static cf_status refuse_silent(const char *path, cf_status s, cf_kernel **out)
{
  if (s != CF_OK)
    return s;
  unsigned n = cf_kernel_count(*out);
  for (unsigned i = 0; i < n; i++) {
    size_t len;
    const float *t = cf_kernel_taps(*out, i, &len);
    for (size_t j = 0; j < len; j++)
      if (t[j] != 0.0f)
        return CF_OK;
  }
  cf_kernel_free(*out);
  *out = NULL;
  return cf_fail(CF_E_FORMAT, "%s is silent: every tap is 0, which would "
                 "make the output silence", path);
}

static cf_status kernel_load(const char *path, unsigned rate, cf_kernel **out)
{
  cf_status s = cf_io_check_args(path, out);
  cf_io_kind kind;
  size_t at;
  unsigned char byte;
  if (s == CF_OK)
    s = cf_io_sniff(path, &kind, &at, &byte);
  if (s != CF_OK)
    return s;
  if (kind == CF_IO_KIND_NPY)
    return cf_kernel_load_npy(path, out);
  if (kind == CF_IO_KIND_TEXT)
    return cf_io_text_as_npy(path, cf_kernel_load_text(path, out));
  s = cf_kernel_load_audio(path, rate, out);
  /* Text with a stray byte (a UTF-8 non-breaking space, a NUL) that libav
   * cannot read either: the text loader's message, at line:column, says
   * more than libav's "Invalid data" (and UTF-8 in comments loads). */
  if (kind == CF_IO_KIND_TEXTISH &&
      (s == CF_E_FORMAT || s == CF_E_UNAVAILABLE))
    return cf_io_text_as_npy(path, cf_kernel_load_text(path, out));
  return s;
}

CF_PUBLIC cf_status cf_kernel_load(const char *path, unsigned rate,
                                   cf_kernel **out)
{
  return refuse_silent(path, kernel_load(path, rate, out), out);
}
