/* Kernel-file loaders: text, .npy and audio fixtures are written at run
 * time with seeded random data and sizes, loaded back and compared; hostile
 * files must fail with a message naming the file and the problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cudafilter/kernel.h"
#include "cudafilter/kernel2d.h"
#include "fixture.h"
#ifdef CF_TEST_HAVE_LIBAV
#include "avmake.h"
#endif
#include "ref.h"

#ifdef CF_TEST_HAVE_LIBAV
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#endif

static ref_rng rng;

static unsigned char *read_bytes(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  rewind(f);
  unsigned char *p = malloc(*n + 1);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, *n, f), *n);
  fclose(f);
  return p;
}

static void truncate_file(const char *path, size_t len)
{
  assert_int_equal(truncate(path, (off_t)len), 0);
}

/* A failed load: status, no kernel, and a message with the path and key. */
static void expect_error(cf_status got, cf_kernel *const *k, cf_status want,
                         const char *path, const char *key)
{
  const char *msg = cf_last_error();
  if (got != want || !strstr(msg, path) || !strstr(msg, key))
    print_error("got %s \"%s\"; want %s with \"%s\"\n", cf_status_name(got),
                msg, cf_status_name(want), key);
  assert_int_equal(got, want);
  assert_null(*k);
  assert_non_null(strstr(msg, path));
  assert_non_null(strstr(msg, key));
}

static void expect_ok(cf_status got, const char *path)
{
  if (got != CF_OK)
    print_error("%s: %s\n", path, cf_last_error());
  assert_int_equal(got, CF_OK);
}

static void expect_shape(const cf_kernel *k, cf_routing r, unsigned outputs,
                         unsigned inputs)
{
  assert_int_equal(cf_kernel_routing(k), r);
  assert_int_equal(cf_kernel_outputs(k), outputs);
  assert_int_equal(cf_kernel_inputs(k), inputs);
}

/* Kernel `index` holds n taps, each within tol of want (tol 0: equal). */
static void expect_taps(const cf_kernel *k, unsigned index, const float *want,
                        size_t n, double tol)
{
  size_t len;
  const float *got = cf_kernel_taps(k, index, &len);
  assert_int_equal(len, n);
  for (size_t i = 0; i < n; i++)
    if (!(fabs((double)got[i] - want[i]) <= tol)) {
      print_error("kernel %u tap %zu: got %.9g, want %.9g (tol %g)\n", index,
                  i, got[i], want[i], tol);
      fail();
    }
}

/* Random taps spread over several decades, so exponents show up. */
static void random_taps(float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = ref_rng_sym(&rng) * powf(10.0f, (float)ref_rng_range(&rng, 0, 9) -
                                               6.0f);
}

/* ---- text ---------------------------------------------------------- */

static void write_text(const char *path, const float *x, size_t n)
{
  static const char *const seps[] = {
      " ", ",", ", ", "\t", " ,\t", "\n", "\r\n", ",\r\n",
      "  # a comment: 1 2 abc, nan\n", "\t#\r\n", "#x\n\n"};
  static const char *const fmts[] = {"%.9g", "%.8e", "%.8E", "%+.9g"};
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (ref_rng_range(&rng, 0, 1))
    fputs("# taps of a test kernel\n  ", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, fmts[ref_rng_range(&rng, 0, 3)], (double)x[i]);
    if (i + 1 < n || ref_rng_range(&rng, 0, 1))
      fputs(seps[ref_rng_range(&rng, 0, 10)], f);
  }
  assert_int_equal(fclose(f), 0);
}

/* Every LF of the file at path made a CR: "\r\n" becomes "\r\r", two
 * line ends, as the loader reads a file whose first line ends with a CR. */
static void lf_to_cr(const char *path)
{
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  for (int ch; (ch = getc(f)) != EOF;)
    if (ch == '\n') {
      assert_int_equal(fseek(f, -1, SEEK_CUR), 0);
      assert_int_equal(putc('\r', f), '\r');
      assert_int_equal(fseek(f, 0, SEEK_CUR), 0);
    }
  assert_int_equal(fclose(f), 0);
}

static void test_text_formats(void **state)
{
  (void)state;
  for (int round = 0; round < 20; round++) {
    size_t n = ref_rng_range(&rng, 1, round < 10 ? 20 : 3000);
    float *x = malloc(n * sizeof *x);
    random_taps(x, n);
    const char *path = fixture("taps.txt");
    write_text(path, x, n);
    if (round % 4 == 3)
      lf_to_cr(path); /* lines ended by a lone CR (classic Mac OS) */
    cf_kernel *k;
    cf_status s = round % 2 ? cf_kernel_load(path, 48000, &k)
                            : cf_kernel_load_text(path, &k);
    expect_ok(s, path);
    expect_shape(k, CF_ROUTING_SHARED, 1, 1);
    expect_taps(k, 0, x, n, 0.0);
    cf_kernel_free(k);
    free(x);
  }
}

/* A file of random number lines with `bad` at the end of one line; checks
 * the message names that line and column. */
static void expect_bad_text(const char *bad, cf_status want, const char *key)
{
  char text[4096] = "";
  size_t len = 0, lines = ref_rng_range(&rng, 1, 8);
  size_t bad_line = ref_rng_range(&rng, 1, lines), bad_col = 0;
  for (size_t l = 1; l <= lines; l++) {
    size_t m = ref_rng_range(&rng, l == bad_line ? 0 : 1, 5);
    for (size_t j = 0; j < m; j++)
      len += (size_t)snprintf(text + len, sizeof text - len, "%.6f, ",
                              (double)ref_rng_sym(&rng));
    if (l == bad_line) {
      size_t line_start = len;
      while (line_start && text[line_start - 1] != '\n')
        line_start--;
      bad_col = len - line_start + 1;
      len += (size_t)snprintf(text + len, sizeof text - len, "%s", bad);
    }
    len += (size_t)snprintf(text + len, sizeof text - len, " # c\n");
  }
  const char *path = fixture("bad.txt");
  write_bytes(path, text, len);
  char where[1100];
  snprintf(where, sizeof where, "%s:%zu:%zu:", path, bad_line, bad_col);
  cf_kernel *k;
  cf_status s = cf_kernel_load_text(path, &k);
  expect_error(s, &k, want, where, key);
  s = cf_kernel_load(path, 0, &k);
  expect_error(s, &k, want, where, key);
}

static void test_text_bad_token(void **state)
{
  (void)state;
  /* text named .npy: read as text (it loads where it is good text),
   * and where it is not, the message says first that the file is no
   * .npy (it read as a text error alone, QA) */
  {
    const char *path = fixture("named.npy");
    cf_kernel *k;
    cf_kernel2d *k2;
    write_bytes(path, "garbage\n", 8);
    expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT,
                 "named .npy, but not a .npy file",
                 ":1:1: 'garbage' is not a number");
    assert_int_equal(cf_kernel2d_load(path, &k2), CF_E_FORMAT);
    assert_null(k2);
    assert_non_null(strstr(cf_last_error(), "not a .npy file"));
    assert_non_null(strstr(cf_last_error(), "'garbage' is not a number"));
    write_bytes(path, "0.5 0.25\n", 9);
    expect_ok(cf_kernel_load(path, 0, &k), path);
    cf_kernel_free(k);
    unlink(path);
  }
  /* an empty field between commas: refused where the number after it
   * starts (it was read as nothing: "0.5,,0.5" two taps, QA); a comma
   * ending a line is no field */
  {
    const char *path = fixture("empty-field.txt");
    cf_kernel *k;
    cf_kernel2d *k2;
    write_bytes(path, "0.25, 0.5,,0.25\n", 16);
    expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, ":1:12:",
                 "(an empty field)");
    write_bytes(path, "1 2,\n3, ,4\n", 11);
    assert_int_equal(cf_kernel2d_load(path, &k2), CF_E_FORMAT);
    assert_null(k2);
    assert_non_null(strstr(cf_last_error(), ":2:5: two commas"));
    write_bytes(path, "1, 2,\n3, 4,\n", 12);
    expect_ok(cf_kernel2d_load(path, &k2), path);
    assert_int_equal(cf_kernel2d_width(k2), 2);
    cf_kernel2d_free(k2);
    unlink(path);
  }
  expect_bad_text("abc", CF_E_FORMAT, "'abc' is not a number");
  /* another separator (a spreadsheet's ;) is named as such (QA) */
  expect_bad_text("0.25;0.5", CF_E_FORMAT,
                  "'0.25;0.5' is not a number (numbers are apart by spaces "
                  "or commas)");
  expect_bad_text("1.5x", CF_E_FORMAT, "not a number");
  expect_bad_text("1e5e5", CF_E_FORMAT, "not a number");
  /* decimal only: strtod read 0x10 as 16 (QA) */
  expect_bad_text("0x10", CF_E_FORMAT,
                  "'0x10' is hexadecimal: kernel numbers are decimal");
  expect_bad_text("0X1p3", CF_E_FORMAT, "is hexadecimal");
  char longtok[300];
  memset(longtok, '7', sizeof longtok - 1);
  longtok[sizeof longtok - 1] = '\0';
  expect_bad_text(longtok, CF_E_FORMAT, "too long");
}

static void test_text_nonfinite(void **state)
{
  (void)state;
  expect_bad_text("nan", CF_E_FORMAT, "is NaN");
  expect_bad_text("-NaN", CF_E_FORMAT, "is NaN");
  expect_bad_text("inf", CF_E_FORMAT, "is infinite");
  expect_bad_text("-Infinity", CF_E_FORMAT, "is infinite");
  expect_bad_text("1e39", CF_E_FORMAT, "float32 range");
}

/* Numbers written with decimal commas ("0,25 0,5") are refused, not read
 * as twice the taps; commas alone or spaces alone separate numbers. */
static void test_text_decimal_comma(void **state)
{
  (void)state;
  /* "0,25, 0,5, 0,25": a list as German writes it (QA: 6 taps) */
  static const char *const bad[] = {"0,25 0,5 0,25", "3,75\t-1,5",
                                    "2 1,5", "1,5 2 # 0.5",
                                    "0,25, 0,5, 0,25", "1, 2,5"};
  static const unsigned long col[] = {1, 1, 3, 1, 1, 4};
  for (int i = 0; i < 6; i++) {
    char text[256];
    int line = (int)ref_rng_range(&rng, 1, 4);
    size_t len = 0;
    for (int l = 1; l < line; l++) /* lines that are lists: 1 2, 3,4 */
      len += (size_t)snprintf(text + len, sizeof text - len, l % 2 ?
                              "%d %d\n" : "%d,%d\n", l, l + 1);
    snprintf(text + len, sizeof text - len, "%s\n7 8\n", bad[i]);
    const char *path = fixture("commas.txt");
    write_bytes(path, text, strlen(text));
    char where[1100];
    snprintf(where, sizeof where, "%s:%d:%lu:", path, line, col[i]);
    cf_kernel *k;
    cf_status s = i % 2 ? cf_kernel_load(path, 0, &k)
                        : cf_kernel_load_text(path, &k);
    expect_error(s, &k, CF_E_FORMAT, where, "decimal commas?");
  }
  /* a point anywhere: the commas separate */
  const char *ok = "0.25, 0.5,0.25 # a,b c\n1,5 2\n1 2 3\n4,5,6\n7 ,8\n"
                   "9, 10\n11,12 13\n";
  const float want[] = {0.25f, 0.5f, 0.25f, 1,  5,  2,  1, 2, 3, 4,
                        5,     6,    7,     8,  9,  10, 11, 12, 13};
  const char *path = fixture("commas.txt");
  write_bytes(path, ok, strlen(ok));
  cf_kernel *k;
  expect_ok(cf_kernel_load_text(path, &k), path);
  expect_taps(k, 0, want, sizeof want / sizeof *want, 0.0);
  cf_kernel_free(k);
  /* one number a line, with decimal commas: 2 to 9 lines such as
   * "0,25" (comments, blank lines and CR LF between them) */
  unsigned nl = (unsigned)ref_rng_range(&rng, 2, 9);
  char text[512];
  size_t len = (size_t)snprintf(text, sizeof text, "# taps\n\n");
  for (unsigned l = 0; l < nl; l++)
    len += (size_t)snprintf(text + len, sizeof text - len, "%s%u,%u%s",
                            ref_rng_u64(&rng) % 2 ? "-" : "", l % 3,
                            (unsigned)ref_rng_range(&rng, 0, 999),
                            l % 2 ? "\r\n" : "  # tap\n");
  write_bytes(path, text, len);
  char where[1100];
  snprintf(where, sizeof where, "%s:3:1:", path);
  expect_error(ref_rng_u64(&rng) % 2 ? cf_kernel_load(path, 0, &k)
                                     : cf_kernel_load_text(path, &k),
               &k, CF_E_FORMAT, where, "decimal commas (0,25)?");
  /* one line such as "0,5" alone, or among lines of one number (QA:
   * read as the taps 0 and 5, and "0,125 0,25 0,5 1" one a line as 7) */
  static const char *const pairs[] = {"0,5\n", "0,125\n0,25\n0,5\n1\n",
                                      "1\n\n0,5", "# x\n3\n-0,5\n",
                                      "1,5\n2,5\n"};
  static const char *const at[] = {":1:1:", ":1:1:", ":3:1:", ":3:1:",
                                   ":1:1:"};
  for (int i = 0; i < 5; i++) {
    write_bytes(path, pairs[i], strlen(pairs[i]));
    snprintf(where, sizeof where, "%s%s", path, at[i]);
    expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT, where,
                 "decimal commas (0,25)?");
  }
  /* lists that are not: other lines of numbers among them, or a point
   * anywhere, or a space after the comma */
  /* (review: "1,1" alone, exponents, and runs such as 1,2,1 beside
   * spaces are lists too) */
  static const char *const lists[] = {"0,25\n0,5,1\n", "0,25\n1 2\n",
                                      "0,25\n0,5\n# 0.5\n1.5\n",
                                      "1, 0\n", "1,0,0\n", "1,1\n",
                                      "-1,5\n2\n", "1e-3,2e-3\n",
                                      "1,2,1, 2,4,2\n", "1,2,1 1,2,1\n"};
  static const size_t nwant[] = {5, 4, 5, 2, 3, 2, 3, 2, 6, 6};
  for (int i = 0; i < 10; i++) {
    write_bytes(path, lists[i], strlen(lists[i]));
    expect_ok(cf_kernel_load_text(path, &k), lists[i]);
    CHECK(cf_kernel_max_len(k) == nwant[i], "'%s': %zu taps, want %zu",
          lists[i], cf_kernel_max_len(k), nwant[i]);
    cf_kernel_free(k);
  }
}

static void test_text_empty(void **state)
{
  (void)state;
  const char *path = fixture("empty.txt");
  cf_kernel *k;
  write_bytes(path, "", 0);
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT, path, "no taps");
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path, "no taps");
  const char *comments = "# only\n  # comments, 1 2 3\r\n\n , ,\n";
  write_bytes(path, comments, strlen(comments));
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path, "no taps");
}

/* A NUL inside a token: the message showed the token cut at it ("'1'
 * is not a number" for "1\0x"). */
static void test_text_nul(void **state)
{
  (void)state;
  const char *path = fixture("nul.txt");
  write_bytes(path, "0.5 1\0x 2\n", 10);
  cf_kernel *k;
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT, path,
               ":1:5: '1?x' is not a number");
}

/* Text with a stray byte (a UTF-8 non-breaking space, a control byte, a
 * NUL) was sniffed as audio: libav's "Invalid data found when processing
 * input", no line:column. It gets the text loader's message, naming the
 * byte; UTF-8 in comments loads. */
static void test_text_stray_byte(void **state)
{
  (void)state;
  expect_bad_text("0.5\xc2\xa0" "0.5", CF_E_FORMAT, "is byte 0xc2, not ASCII");
  expect_bad_text("0.25\x01", CF_E_FORMAT, "is control byte 0x01");
  const char *path = fixture("stray.txt");
  cf_kernel *k;
  cf_kernel2d *k2;
  write_bytes(path, "0.5\xc2\xa0" "0.5\n", 9);
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, ":1:1: '0.5",
               "(1:4 is byte 0xc2");
  assert_int_equal(cf_kernel2d_load(path, &k2), CF_E_FORMAT);
  assert_null(k2);
  assert_non_null(strstr(cf_last_error(), "(1:4 is byte 0xc2"));
  write_bytes(path, "0.5 1\0x 2\n", 10);
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, ":1:5: '1?x'",
               "(1:6 is a NUL byte)");
  const char *utf8 = "# r\xc3\xa9glage \xe2\x80\x94 3 dB\n0.5, 0.25\n";
  write_bytes(path, utf8, strlen(utf8));
  expect_ok(cf_kernel_load(path, 0, &k), path);
  const float want[] = {0.5f, 0.25f};
  expect_taps(k, 0, want, 2, 0.0);
  cf_kernel_free(k);
  const char *utf8_2d = "# \xc3\xa9\n1 2\n3 4\n";
  write_bytes(path, utf8_2d, strlen(utf8_2d));
  expect_ok(cf_kernel2d_load(path, &k2), path);
  cf_kernel2d_free(k2);
  unlink(path);
}

/* A token without end (a sparse file of a TiB of NUL bytes: /dev/zero is
 * no regular file) is refused once it is too long, not read until its
 * end. */
static void test_text_endless(void **state)
{
  (void)state;
  const char *path = fixture("endless.txt");
  write_bytes(path, "", 0);
  if (truncate(path, (off_t)1 << 40) != 0)
    truncate_file(path, (size_t)1 << 31);
  cf_kernel *k;
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT,
               ":1:1: '???", "is too long to be a number");
  unlink(path);
}

/* path, by either 2D loader: 2 temporal blocks of 2 x 3, taps 1..12. */
static void expect_1_to_12(const char *path)
{
  for (int how = 0; how < 2; how++) {
    cf_kernel2d *k2;
    cf_status s =
        how ? cf_kernel2d_load(path, &k2) : cf_kernel2d_load_text(path, &k2);
    expect_ok(s, path);
    assert_int_equal(cf_kernel2d_frames(k2), 2);
    assert_int_equal(cf_kernel2d_height(k2), 2);
    assert_int_equal(cf_kernel2d_width(k2), 3);
    const float *t = cf_kernel2d_taps(k2);
    for (unsigned i = 0; i < 12; i++)
      assert_true(t[i] == (float)(i + 1));
    cf_kernel2d_free(k2);
  }
}

/* A UTF-8 byte order mark at the start (Windows Notepad saves one) is
 * skipped by the text loaders and by the sniffing that picks the loader:
 * it made a 1D kernel "cannot open as audio" and a 2D one "neither text
 * nor .npy". Anywhere else it is a bad token; columns count after it. */
static void test_text_bom(void **state)
{
  (void)state;
  const char *path = fixture("bom.txt");
  static const char one[] = "\xef\xbb\xbf# taps\r\n0.5, -0.25\r\n1e-3\r\n";
  static const float want[] = {0.5f, -0.25f, 1e-3f};
  write_bytes(path, one, sizeof one - 1);
  cf_kernel *k;
  for (int how = 0; how < 2; how++) {
    cf_status s =
        how ? cf_kernel_load(path, 48000, &k) : cf_kernel_load_text(path, &k);
    expect_ok(s, path);
    expect_shape(k, CF_ROUTING_SHARED, 1, 1);
    expect_taps(k, 0, want, 3, 0.0);
    cf_kernel_free(k);
  }
  /* the mark alone, or right before a number */
  write_bytes(path, "\xef\xbb\xbf", 3);
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path, "no taps");
  write_bytes(path,
              "\xef\xbb\xbf"
              "2",
              4);
  expect_ok(cf_kernel_load(path, 0, &k), path);
  expect_taps(k, 0, (const float[]){2.0f}, 1, 0.0);
  cf_kernel_free(k);
  /* columns count from the byte after the mark */
  write_bytes(path,
              "\xef\xbb\xbf"
              "1 x",
              6);
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT, path,
               ":1:3: 'x' is not a number");
  /* a second mark is not skipped */
  write_bytes(path,
              "\xef\xbb\xbf\xef\xbb\xbf"
              "1",
              7);
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT, path,
               ":1:1: '???1' is not a number");
  /* part of a mark is no mark: the bytes are read as they are */
  write_bytes(path,
              "\xef\xbb"
              "1",
              3);
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT, path,
               ":1:1: '??1' is not a number");

  /* 2D: rows and temporal blocks as without the mark */
  static const char two[] = "\xef\xbb\xbf"
                            "1 2 3\r\n4 5 6\r\n\r\n7 8 9\r\n"
                            "10 11 12\r\n";
  write_bytes(path, two, sizeof two - 1);
  expect_1_to_12(path);
}

/* Line ends as the text loaders read them: LF and CR LF, and in a file
 * whose first line ends with a lone CR (classic Mac OS, and Excel for
 * Mac's "CSV (Macintosh)"), CR. A lone CR once read as a mere separator
 * there: a comment ran on to the end of the file ("1 # first\r2\r3" gave
 * one tap) and a 2D kernel's rows made one row. In a file of LF lines a
 * CR stays a separator. */
static void test_text_cr_lines(void **state)
{
  (void)state;
  const char *path = fixture("cr.txt");
  cf_kernel *k;
  static const char one[] = "# taps\r1 # the first\r2, 3\r\r4\r";
  write_bytes(path, one, sizeof one - 1);
  for (int how = 0; how < 2; how++) {
    cf_status s =
        how ? cf_kernel_load(path, 48000, &k) : cf_kernel_load_text(path, &k);
    expect_ok(s, path);
    expect_shape(k, CF_ROUTING_SHARED, 1, 1);
    expect_taps(k, 0, (const float[]){1, 2, 3, 4}, 4, 0.0);
    cf_kernel_free(k);
  }
  /* lines counted at each CR, a CR LF once */
  static const char lines[] = "1\r2\r\n3 x\r";
  write_bytes(path, lines, sizeof lines - 1);
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_FORMAT, path,
               ":3:3: 'x' is not a number");
  /* LF lines (the first line says so): a CR later separates numbers, as
   * a space, and a comment runs on to the LF */
  static const char lf[] = "1 2\n3\r4 # c\r5\n6\r\n";
  write_bytes(path, lf, sizeof lf - 1);
  expect_ok(cf_kernel_load_text(path, &k), path);
  expect_taps(k, 0, (const float[]){1, 2, 3, 4, 6}, 5, 0.0);
  cf_kernel_free(k);
  /* 2D: rows and temporal blocks */
  static const char two[] = "# 2 x 2 x 3\r1,2,3\r4,5,6\r\r7,8,9 # c\r"
                            "10,11,12\r";
  write_bytes(path, two, sizeof two - 1);
  expect_1_to_12(path);
}

/* ---- .npy ---------------------------------------------------------- */

typedef struct npy_spec {
  unsigned ndim;
  size_t dims[3];
  size_t size;  /* 4 or 8 */
  char order;   /* '<', '>' or '=' */
  int fortran;
  int version;
} npy_spec;

static void shape_text(const npy_spec *sp, char *buf, size_t cap)
{
  if (sp->ndim == 1)
    snprintf(buf, cap, "(%zu,)", sp->dims[0]);
  else if (sp->ndim == 2)
    snprintf(buf, cap, "(%zu, %zu)", sp->dims[0], sp->dims[1]);
  else
    snprintf(buf, cap, "(%zu, %zu, %zu)", sp->dims[0], sp->dims[1],
             sp->dims[2]);
}

/* Writes values (in C order) as the spec says; returns the file size. */
static size_t write_npy(const char *path, const npy_spec *sp, const double *v)
{
  char head[640], shape[128], descr[8];
  shape_text(sp, shape, sizeof shape);
  snprintf(descr, sizeof descr, "%cf%zu", sp->order, sp->size);
  size_t hl = npy_header(head, sp->version, descr, sp->fortran, shape);
  size_t d[3] = {1, 1, 1};
  memcpy(d + 3 - sp->ndim, sp->dims, sp->ndim * sizeof *d);
  size_t count = d[0] * d[1] * d[2];
  unsigned char *data = malloc(hl + count * sp->size);
  memcpy(data, head, hl);
  int swap = sp->order == '>';
  size_t n = 0;
  for (size_t a = 0; a < d[0]; a++)
    for (size_t b = 0; b < d[1]; b++)
      for (size_t c = 0; c < d[2]; c++) {
        size_t at = sp->fortran ? a + b * d[0] + c * d[0] * d[1] : n;
        npy_put_elem(data + hl + at * sp->size, v[n++], sp->size, swap);
      }
  write_bytes(path, data, hl + count * sp->size);
  free(data);
  return hl + count * sp->size;
}

static void random_spec(npy_spec *sp, unsigned i)
{
  sp->size = i & 1 ? 8 : 4;
  sp->order = i & 2 ? '>' : i % 3 ? '<' : '=';
  sp->fortran = (i >> 2) & 1;
  sp->ndim = 1 + (i >> 3) % 3;
  sp->version = 1 + (int)(i % 3);
  static const size_t max_len[] = {3000, 400, 200};
  for (unsigned j = 0; j + 1 < sp->ndim; j++)
    sp->dims[j] = ref_rng_range(&rng, 1, sp->ndim == 2 ? 6 : 4);
  sp->dims[sp->ndim - 1] = ref_rng_range(&rng, 1, max_len[sp->ndim - 1]);
}

static size_t spec_count(const npy_spec *sp)
{
  size_t n = 1;
  for (unsigned j = 0; j < sp->ndim; j++)
    n *= sp->dims[j];
  return n;
}

/* Random values: float32 ones, or full float64 ones for '<f8'. */
static double *random_values(const npy_spec *sp)
{
  size_t n = spec_count(sp);
  double *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = sp->size == 4 ? (double)ref_rng_sym(&rng)
                         : (2.0 * ref_rng_unit(&rng) - 1.0) * 1e3;
  return v;
}

static void expect_npy_kernel(const cf_kernel *k, const npy_spec *sp,
                              const double *v)
{
  static const cf_routing routing[] = {CF_ROUTING_SHARED,
                                       CF_ROUTING_PER_CHANNEL,
                                       CF_ROUTING_MATRIX};
  unsigned outputs = sp->ndim == 1 ? 1 : (unsigned)sp->dims[0];
  unsigned inputs = sp->ndim == 3 ? (unsigned)sp->dims[1] : outputs;
  expect_shape(k, routing[sp->ndim - 1], outputs, inputs);
  size_t len = sp->dims[sp->ndim - 1];
  float *want = malloc(len * sizeof *want);
  for (unsigned i = 0; i < cf_kernel_count(k); i++) {
    for (size_t t = 0; t < len; t++)
      want[t] = (float)v[i * len + t]; /* float32 rounding of f8 input */
    expect_taps(k, i, want, len, 0.0);
  }
  free(want);
}

static void test_npy_roundtrip(void **state)
{
  (void)state;
  for (unsigned i = 0; i < 48; i++) {
    npy_spec sp;
    random_spec(&sp, i);
    double *v = random_values(&sp);
    const char *path = fixture("k.npy");
    write_npy(path, &sp, v);
    cf_kernel *k;
    cf_status s = i % 2 ? cf_kernel_load(path, 0, &k)
                        : cf_kernel_load_npy(path, &k);
    expect_ok(s, path);
    expect_npy_kernel(k, &sp, v);
    cf_kernel_free(k);
    free(v);
  }
}

/* A .npy file with a hand-written dtype and shape and `data` bytes. */
static const char *write_raw_npy(const char *name, int version,
                                 const char *descr, const char *shape,
                                 size_t data)
{
  char head[640];
  size_t hl = npy_header(head, version, descr, 0, shape);
  unsigned char *buf = calloc(1, hl + data);
  memcpy(buf, head, hl);
  const char *path = fixture(name);
  write_bytes(path, buf, hl + data);
  free(buf);
  return path;
}

static void expect_npy_error(const char *path, const char *key)
{
  cf_kernel *k;
  expect_error(cf_kernel_load_npy(path, &k), &k, CF_E_FORMAT, path, key);
}

static void test_npy_truncated(void **state)
{
  (void)state;
  npy_spec sp = {.ndim = 2, .dims = {2, ref_rng_range(&rng, 2, 500)},
                 .size = 4, .order = '<', .version = 1};
  double *v = random_values(&sp);
  const char *path = fixture("trunc.npy");
  size_t size = write_npy(path, &sp, v);
  free(v);
  size_t cut = ref_rng_range(&rng, 1, spec_count(&sp) * 4);
  truncate_file(path, size - cut);
  char key[96];
  snprintf(key, sizeof key, "expected %zu bytes, the file has %zu",
           spec_count(&sp) * 4, spec_count(&sp) * 4 - cut);
  expect_npy_error(path, key);
  truncate_file(path, 40); /* inside the header */
  expect_npy_error(path, "truncated .npy header");
  /* One byte too many is refused as well. */
  path = write_raw_npy("long.npy", 1, "<f4", "(3,)", 13);
  expect_npy_error(path, "trailing bytes");
}

static void test_npy_bad_magic(void **state)
{
  (void)state;
  const char *path = write_raw_npy("magic.npy", 1, "<f4", "(2,)", 8);
  size_t n;
  unsigned char *p = read_bytes(path, &n);
  p[1 + ref_rng_range(&rng, 0, 4)] ^= 0x20;
  write_bytes(path, p, n);
  expect_npy_error(path, "magic");
  memcpy(p, "\x93NUMPY\x04\x00", 8);
  write_bytes(path, p, n);
  expect_npy_error(path, "version 4.0");
  /* numpy writes and reads 1.0, 2.0 and 3.0 only: a minor version is
   * another format (it passed as 1.0) */
  memcpy(p, "\x93NUMPY\x01\x01", 8);
  write_bytes(path, p, n);
  expect_npy_error(path, "version 1.1");
  write_bytes(path, p, 7);
  expect_npy_error(path, "too short");
  free(p);
}

static void test_npy_dtypes(void **state)
{
  (void)state;
  static const char *const bad[][2] = {
      {"<i4", "'<i4' (int32)"},      {">u2", "'>u2' (uint16)"},
      {"<c8", "'<c8' (complex64)"},  {"<c16", "(complex128)"},
      {"|b1", "'|b1' (bool)"},      {"<f2", "'<f2' (float16)"},
      {"<f16", "(float128)"},        {"|O", "'|O' (object)"},
      {"<U8", "'<U8'"},              {"xyz", "'xyz'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *path = write_raw_npy("dtype.npy", 1, bad[i][0], "(4,)", 32);
    expect_npy_error(path, bad[i][1]);
  }
  /* '|' (no byte order) and '=' (native) mean this host's order. */
  const char *path = write_raw_npy("native.npy", 2, "|f8", "(4,)", 32);
  cf_kernel *k;
  expect_ok(cf_kernel_load_npy(path, &k), path);
  cf_kernel_free(k);
}

static void test_npy_absurd_shape(void **state)
{
  (void)state;
  static const char *const bad[][2] = {
      {"(1099511627776,)", "1099511627776 taps, more than the limit"},
      {"(99999999999999999999999,)", "more than 64 bits"},
      {"(18446744073709551615, 18446744073709551615, 2)", "overflows"},
      {"(3, 0)", "dimension 1 is 0"},
      {"()", "0 dimensions"},
      {"(2, 2, 2, 2)", "4 dimensions"},
      {"(300, 4)", "300 channels"},
      {"(200, 200, 4)", "40000 kernels"},
      {"(4,", "expected"},
      {"(-4,)", "non-negative"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *path = write_raw_npy("shape.npy", 1, "<f4", bad[i][0], 64);
    expect_npy_error(path, bad[i][1]);
  }
  /* A header claiming 1e9 elements, within every limit, in a tiny file:
   * refused from the file size, before any allocation. */
  const char *path = write_raw_npy("huge.npy", 2, "<f4", "(64, 64, 244141)",
                                   16);
  expect_npy_error(path, "expected 4000006144 bytes, the file has 16");
}

/* Shapes at the limits load, random values checked: 256 channels
 * (CF_MAX_CHANNELS) per-channel and as a matrix's side, 4096 kernels
 * (CF_KERNEL_MAX_COUNT) as a matrix; one more kernel is refused by the
 * loader, naming its limit. */
static void test_npy_limit_edges(void **state)
{
  (void)state;
  static const npy_spec edges[] = {
      {2, {CF_MAX_CHANNELS, 0}, 4, '<', 0, 1},
      {3, {1, CF_MAX_CHANNELS, 0}, 8, '>', 1, 2},
      {3, {CF_KERNEL_MAX_COUNT / CF_MAX_CHANNELS, CF_MAX_CHANNELS, 0}, 4,
       '<', 0, 3},
  };
  for (size_t e = 0; e < sizeof edges / sizeof *edges; e++) {
    npy_spec sp = edges[e];
    sp.dims[sp.ndim - 1] = ref_rng_range(&rng, 1, 3);
    double *v = random_values(&sp);
    const char *path = fixture("edge.npy");
    write_npy(path, &sp, v);
    cf_kernel *k;
    expect_ok(cf_kernel_load(path, 0, &k), path);
    expect_npy_kernel(k, &sp, v);
    cf_kernel_free(k);
    free(v);
  }
  /* 17 x 241 = 4097 kernels, each side within the channel limit */
  const char *path = write_raw_npy("edge.npy", 1, "<f4", "(17, 241, 1)",
                                   4097 * 4);
  expect_npy_error(path, "4097 kernels, more than the limit of 4096");
}

static void test_npy_header_syntax(void **state)
{
  (void)state;
  static const char *const bad[][2] = {
      {"{'descr': '<f4', 'shape': (2,)}", "missing key"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (2,)}", "duplicate key"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}",
       "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
       "unexpected key"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
       "structured"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk",
       "unexpected bytes"},
      {"{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}", "expected"},
      {"'descr': '<f4'", "expected '{'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char buf[256] = {0};
    size_t n = strlen(bad[i][0]);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(n + 1);
    buf[9] = 0;
    memcpy(buf + 10, bad[i][0], n);
    buf[10 + n] = '\n';
    const char *path = fixture("syntax.npy");
    write_bytes(path, buf, 11 + n + 8);
    expect_npy_error(path, bad[i][1]);
  }
  /* A version 2 header claiming 1 MiB. */
  unsigned char big[16] = "\x93NUMPY\x02\x00\x00\x00\x10\x00{";
  const char *path = fixture("bighead.npy");
  write_bytes(path, big, sizeof big);
  expect_npy_error(path, "too long");
  /* Python 2 longs and double quotes are fine. */
  path = fixture("py2.npy");
  const char *py2 = "{\"descr\": \"<f4\", \"fortran_order\": False, "
                    "\"shape\": (2L,)}";
  char buf[128] = {0};
  size_t n = strlen(py2);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(n + 1);
  buf[9] = 0;
  memcpy(buf + 10, py2, n);
  buf[10 + n] = '\n';
  float two[2] = {0.25f, -3.0f};
  memcpy(buf + 11 + n, two, sizeof two);
  write_bytes(path, buf, 11 + n + sizeof two);
  cf_kernel *k;
  expect_ok(cf_kernel_load_npy(path, &k), path);
  expect_taps(k, 0, two, 2, 0.0);
  cf_kernel_free(k);
}

static void test_npy_nonfinite(void **state)
{
  (void)state;
  static const double bad[] = {NAN, INFINITY, -INFINITY, 1e300};
  static const char *const names[] = {"is NaN", "is infinite", "is infinite",
                                      "outside the float32 range"};
  for (unsigned i = 0; i < 4; i++) {
    npy_spec sp = {.ndim = 3,
                   .dims = {ref_rng_range(&rng, 1, 3),
                            ref_rng_range(&rng, 1, 3),
                            ref_rng_range(&rng, 1, 50)},
                   .size = i == 3 || ref_rng_range(&rng, 0, 1) ? 8 : 4,
                   .order = ref_rng_range(&rng, 0, 1) ? '>' : '<',
                   .fortran = (int)ref_rng_range(&rng, 0, 1),
                   .version = 1};
    double *v = random_values(&sp);
    size_t o = ref_rng_range(&rng, 0, sp.dims[0] - 1);
    size_t in = ref_rng_range(&rng, 0, sp.dims[1] - 1);
    size_t t = ref_rng_range(&rng, 0, sp.dims[2] - 1);
    v[(o * sp.dims[1] + in) * sp.dims[2] + t] = bad[i];
    const char *path = fixture("nan.npy");
    write_npy(path, &sp, v);
    free(v);
    char key[160];
    snprintf(key, sizeof key, "element [%zu, %zu, %zu] (kernel %zu, tap %zu)",
             o, in, t, o * sp.dims[1] + in, t);
    expect_npy_error(path, key);
    expect_npy_error(path, names[i]);
  }
}

/* Every truncation and random byte flips of a valid file: never a crash,
 * and whatever loads is a valid kernel set. */
static void test_npy_fuzz(void **state)
{
  (void)state;
  npy_spec sp = {.ndim = 2, .dims = {2, 7}, .size = 8, .order = '<',
                 .version = 1};
  double *v = random_values(&sp);
  const char *path = fixture("fuzz.npy");
  size_t size = write_npy(path, &sp, v);
  free(v);
  unsigned char *orig = read_bytes(path, &size);
  cf_kernel *k;
  for (size_t n = 0; n < size; n++) {
    write_bytes(path, orig, n);
    assert_int_not_equal(cf_kernel_load_npy(path, &k), CF_OK);
    assert_null(k);
  }
  unsigned char *p = malloc(size);
  for (int round = 0; round < 2000; round++) {
    memcpy(p, orig, size);
    for (size_t j = ref_rng_range(&rng, 1, 4); j > 0; j--)
      p[ref_rng_range(&rng, 0, 127)] = (unsigned char)ref_rng_u64(&rng);
    write_bytes(path, p, size);
    cf_status s = cf_kernel_load_npy(path, &k);
    assert_true(s == CF_OK || s == CF_E_FORMAT);
    if (s == CF_OK) {
      assert_true(cf_kernel_max_len(k) >= 1);
      cf_kernel_free(k);
    } else {
      assert_non_null(strstr(cf_last_error(), path));
    }
  }
  free(p);
  free(orig);
}

/* ---- any file ------------------------------------------------------ */

static void test_missing_file(void **state)
{
  (void)state;
  const char *path = fixture("does-not-exist.txt");
  cf_kernel *k;
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_IO, path, "cannot open");
  expect_error(cf_kernel_load_text(path, &k), &k, CF_E_IO, path,
               "No such file");
  expect_error(cf_kernel_load_npy(path, &k), &k, CF_E_IO, path,
               "cannot open");
  expect_error(cf_kernel_load(tmp_dir, 0, &k), &k, CF_E_IO, tmp_dir,
               "directory");
  expect_error(cf_kernel_load(NULL, 0, &k), &k, CF_E_INVALID, "", "NULL");
}

/* A kernel given as a FIFO (or the shell's <(...), a pipe): sniffing read
 * its first page and the loader opened it again, which hung with no
 * writer left (or read a second writer's content). Every loader refuses
 * it as not a regular file without opening it; a writer child stands for
 * the shell's. alarm(): a hang fails the test. */
static pid_t fifo_writer(const char *path, const void *data, size_t n)
{
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(60);
    int fd = open(path, O_WRONLY);
    _exit(fd >= 0 && write(fd, data, n) == (ssize_t)n ? 0 : 1);
  }
  return pid;
}

static void expect_fifo_refused(cf_status got, const char *path)
{
  cf_kernel *none = NULL;
  expect_error(got, &none, CF_E_IO, path, "not a regular file but a FIFO");
}

static void fifo_case(const char *path, const void *data, size_t n)
{
  unlink(path);
  assert_int_equal(mkfifo(path, 0600), 0);
  pid_t pid = fifo_writer(path, data, n);
  cf_kernel *k;
  cf_kernel2d *k2;
  alarm(20);
  expect_fifo_refused(cf_kernel_load(path, 0, &k), path);
  assert_null(k);
  expect_fifo_refused(cf_kernel2d_load(path, &k2), path);
  assert_null(k2);
  expect_fifo_refused(cf_kernel_load_text(path, &k), path);
  expect_fifo_refused(cf_kernel_load_npy(path, &k), path);
  expect_fifo_refused(cf_kernel2d_load_text(path, &k2), path);
  expect_fifo_refused(cf_kernel2d_load_npy(path, &k2), path);
#ifdef CF_TEST_HAVE_LIBAV
  expect_fifo_refused(cf_kernel_load_audio(path, 0, &k), path);
#endif
  alarm(0);
  kill(pid, SIGKILL);
  assert_int_equal(waitpid(pid, NULL, 0), pid);
  unlink(path);
}

static void test_fifo(void **state)
{
  (void)state;
  const char *path = fixture("kernel.fifo");
  static const char text[] = "0.5 0.5\n";
  fifo_case(path, text, sizeof text - 1);
  /* a WAV of two float taps */
  unsigned char wav[44 + 8] = "RIFF....WAVEfmt ";
  static const unsigned char fmt[] = {16, 0, 0, 0, 3, 0, 1, 0, 0x80, 0xbb,
                                      0, 0, 0, 0xee, 2, 0, 4, 0, 32, 0};
  float taps[2] = {0.5f, 0.5f};
  uint32_t riff = sizeof wav - 8, data = sizeof taps;
  memcpy(wav + 4, &riff, 4);
  memcpy(wav + 16, fmt, sizeof fmt);
  memcpy(wav + 36, "data", 4);
  memcpy(wav + 40, &data, 4);
  memcpy(wav + 44, taps, sizeof taps);
  fifo_case(path, wav, sizeof wav);
  char npy[256];
  size_t hl = npy_header(npy, 1, "<f4", 0, "(2,)");
  memcpy(npy + hl, taps, sizeof taps);
  fifo_case(path, npy, hl + sizeof taps);
}

static void test_random_bytes(void **state)
{
  (void)state;
  size_t n = ref_rng_range(&rng, 100, 8192);
  unsigned char *p = malloc(n);
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)ref_rng_u64(&rng);
  p[0] = 0; /* surely not text */
  const char *path = fixture("random.dat");
  write_bytes(path, p, n);
  free(p);
  cf_kernel *k;
  cf_status s = cf_kernel_load(path, 0, &k);
#ifdef CF_TEST_HAVE_LIBAV
  expect_error(s, &k, CF_E_FORMAT, path, "audio");
#else
  expect_error(s, &k, CF_E_UNAVAILABLE, path, "libav");
#endif
}

/* ---- audio --------------------------------------------------------- */

#ifdef CF_TEST_HAVE_LIBAV

static int16_t to_s16(float x)
{
  long q = lrintf(x * 32768.0f);
  return (int16_t)(q > 32767 ? 32767 : q < -32768 ? -32768 : q);
}

static void fill_frame(AVFrame *fr, float *const *x, size_t at)
{
  int ch = fr->ch_layout.nb_channels;
  for (int i = 0; i < fr->nb_samples; i++)
    for (int c = 0; c < ch; c++) {
      float v = x[c][at + (size_t)i];
      if (fr->format == AV_SAMPLE_FMT_S16)
        ((int16_t *)fr->data[0])[i * ch + c] = to_s16(v);
      else if (fr->format == AV_SAMPLE_FMT_U8) /* x already on its grid */
        fr->data[0][i * ch + c] = (uint8_t)(lrintf(v * 128.0f) + 128);
      else if (fr->format == AV_SAMPLE_FMT_DBL)
        ((double *)fr->data[0])[i * ch + c] = v;
      else
        ((float *)fr->data[0])[i * ch + c] = v;
    }
}

/* Writes channels x[c][0..n) with libav; the container from the name. */
static void write_audio(const char *path, enum AVCodecID id,
                        enum AVSampleFormat sf, int rate, int channels,
                        float *const *x, size_t n)
{
  AVFormatContext *oc = NULL;
  assert_true(avformat_alloc_output_context2(&oc, NULL, NULL, path) >= 0);
  const AVCodec *codec = avcodec_find_encoder(id);
  assert_non_null(codec);
  AVCodecContext *enc = avcodec_alloc_context3(codec);
  enc->sample_fmt = sf;
  enc->sample_rate = rate;
  enc->time_base = (AVRational){1, rate};
  av_channel_layout_default(&enc->ch_layout, channels);
  assert_true(avcodec_open2(enc, codec, NULL) >= 0);
  AVStream *st = avformat_new_stream(oc, NULL);
  assert_true(avcodec_parameters_from_context(st->codecpar, enc) >= 0);
  st->time_base = enc->time_base;
  assert_true(avio_open(&oc->pb, path, AVIO_FLAG_WRITE) >= 0);
  assert_true(avformat_write_header(oc, NULL) >= 0);
  size_t block = enc->frame_size > 0 ? (size_t)enc->frame_size : 1024;
  AVFrame *fr = av_frame_alloc();
  for (size_t at = 0; at < n; at += block) {
    fr->nb_samples = (int)(n - at < block ? n - at : block);
    fr->format = sf;
    fr->sample_rate = rate;
    av_channel_layout_copy(&fr->ch_layout, &enc->ch_layout);
    assert_true(av_frame_get_buffer(fr, 0) >= 0);
    fill_frame(fr, x, at);
    fr->pts = (int64_t)at;
    avmake_encode_frame(enc, fr, oc, st);
    av_frame_unref(fr);
  }
  avmake_encode_frame(enc, NULL, oc, st);
  assert_true(av_write_trailer(oc) >= 0);
  av_frame_free(&fr);
  avio_closep(&oc->pb);
  avcodec_free_context(&enc);
  avformat_free_context(oc);
}

typedef struct audio_case {
  const char *name;
  enum AVCodecID codec;
  enum AVSampleFormat format;
  int channels;
  double tol;
} audio_case;

static float **random_channels(int channels, size_t n)
{
  float **x = malloc((size_t)channels * sizeof *x);
  for (int c = 0; c < channels; c++) {
    x[c] = malloc(n * sizeof **x);
    ref_rng_fill(&rng, x[c], n);
  }
  return x;
}

static void free_channels(float **x, int channels)
{
  for (int c = 0; c < channels; c++)
    free(x[c]);
  free(x);
}

/* Writes random audio, loads it at the file's rate (0 and explicit) and
 * with cf_kernel_load, and compares every channel. */
static void audio_roundtrip(const audio_case *ac)
{
  static const int rates[] = {8000, 44100, 48000, 96000};
  int rate = rates[ref_rng_range(&rng, 0, 3)];
  size_t n = ref_rng_range(&rng, 1, 20000);
  float **x = random_channels(ac->channels, n);
  const char *path = fixture(ac->name);
  write_audio(path, ac->codec, ac->format, rate, ac->channels, x, n);
  for (int how = 0; how < 3; how++) {
    cf_kernel *k;
    cf_status s = how == 0   ? cf_kernel_load_audio(path, 0, &k)
                  : how == 1 ? cf_kernel_load_audio(path, (unsigned)rate, &k)
                             : cf_kernel_load(path, (unsigned)rate, &k);
    expect_ok(s, path);
    unsigned ch = (unsigned)ac->channels;
    expect_shape(k, ch == 1 ? CF_ROUTING_SHARED : CF_ROUTING_PER_CHANNEL, ch,
                 ch);
    for (unsigned c = 0; c < ch; c++)
      expect_taps(k, c, x[c], n, ac->tol);
    cf_kernel_free(k);
  }
  free_channels(x, ac->channels);
}

static const double s16_tol = 1.0 / 32768.0;

#define SKIP_WITHOUT_LIBAV() ((void)0)
#else
#define SKIP_WITHOUT_LIBAV()                                                 \
  do {                                                                       \
    cf_kernel *k_;                                                           \
    assert_int_equal(cf_kernel_load_audio("x.wav", 0, &k_),                  \
                     CF_E_UNAVAILABLE);                                      \
    assert_non_null(strstr(cf_last_error(), "built without libav"));        \
    print_message("skipped: built without libav\n");                        \
    skip();                                                                  \
  } while (0)
#endif

static void test_audio_wav_s16(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  for (int ch = 1; ch <= 2; ch++)
    audio_roundtrip(&(audio_case){"s16.wav", AV_CODEC_ID_PCM_S16LE,
                                  AV_SAMPLE_FMT_S16, ch, s16_tol});
#endif
}

static void test_audio_wav_f32(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  for (int ch = 1; ch <= 3; ch++)
    audio_roundtrip(&(audio_case){"f32.wav", AV_CODEC_ID_PCM_F32LE,
                                  AV_SAMPLE_FMT_FLT, ch, 0.0});
#endif
}

static void test_audio_flac(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  for (int ch = 1; ch <= 2; ch++)
    audio_roundtrip(&(audio_case){"k.flac", AV_CODEC_ID_FLAC,
                                  AV_SAMPLE_FMT_S16, ch, s16_tol});
#endif
}

/* Taps of an n-tap kernel at `from` Hz loaded at `to`: its span at the
 * new rate, ceil(n * to / from), and the resampler's ring after it
 * (kernel.h). */
static size_t resampled_len(size_t n, size_t from, size_t to)
{
  return (n * to + from - 1) / from + 16 * ((to + from - 1) / from) + 8;
}

/* A 1 kHz sine at 44.1 kHz loaded at 48 kHz, against the analytic sine. */
static void test_audio_resample(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  const double f0 = 1000.0, pi = 3.14159265358979323846;
  size_t n = 8820; /* 0.2 s */
  float **x = random_channels(1, n);
  for (size_t i = 0; i < n; i++)
    x[0][i] = (float)sin(2.0 * pi * f0 * (double)i / 44100.0);
  const char *path = fixture("sine.wav");
  write_audio(path, AV_CODEC_ID_PCM_F32LE, AV_SAMPLE_FMT_FLT, 44100, 1, x, n);
  free_channels(x, 1);
  cf_kernel *k;
  expect_ok(cf_kernel_load(path, 48000, &k), path);
  size_t len;
  const float *y = cf_kernel_taps(k, 0, &len);
  if (len != resampled_len(n, 44100, 48000))
    print_error("resampled length %zu, want %zu\n", len,
                resampled_len(n, 44100, 48000));
  assert_int_equal(len, resampled_len(n, 44100, 48000));
  /* the taps scaled by 44100 / 48000: the filter's gain is kept */
  double worst = 0.0;
  for (size_t i = 64; i + 64 < 9600; i++) {
    double want = 44100.0 / 48000.0 * sin(2.0 * pi * f0 * (double)i / 48000.0);
    worst = fmax(worst, fabs(y[i] - want));
  }
  if (!(worst <= 1e-3))
    print_error("resampled sine off by %g\n", worst);
  assert_true(worst <= 1e-3);
  cf_kernel_free(k);

  /* Kernels shorter than the resampler's filter (libswresample alone
   * gives nothing for them) come out with their span and its ring of
   * finite, bounded taps. */
  for (size_t m = 1; m <= 40; m += 13) {
    float **c = random_channels(1, m);
    for (size_t i = 0; i < m; i++)
      c[0][i] = 0.5f;
    path = fixture("short.wav");
    write_audio(path, AV_CODEC_ID_PCM_F32LE, AV_SAMPLE_FMT_FLT, 48000, 1, c,
                m);
    free_channels(c, 1);
    expect_ok(cf_kernel_load(path, 44100, &k), path);
    y = cf_kernel_taps(k, 0, &len);
    size_t want = resampled_len(m, 48000, 44100);
    if (len != want)
      print_error("%zu taps at 48 kHz: %zu at 44.1 kHz, want %zu\n", m, len,
                  want);
    assert_int_equal(len, want);
    for (size_t i = 0; i < len; i++)
      assert_true(isfinite(y[i]) && fabsf(y[i]) < 1.0f);
    cf_kernel_free(k);
  }
#endif
}

#ifdef CF_TEST_HAVE_LIBAV
/* The frequency response of h (n taps at `rate` Hz) at f Hz. */
static void response(const float *h, size_t n, double rate, double f,
                     double *re, double *im)
{
  const double w = -2.0 * 3.14159265358979323846 * f / rate;
  *re = *im = 0.0;
  for (size_t i = 0; i < n; i++) {
    *re += (double)h[i] * cos(w * (double)i);
    *im += (double)h[i] * sin(w * (double)i);
  }
}

/* x (n taps at a Hz) against y (m taps at b Hz) at steps + 1 frequencies
 * over [0, span x the lower rate]: the largest |H_y - H_x| and where, the
 * largest |H_x|, and both DC gains. */
typedef struct response_diff {
  double peak, worst, worst_f, dc_a, dc_b;
} response_diff;

static response_diff compare_responses(const float *x, size_t n, int a,
                                       const float *y, size_t m, int b,
                                       double span, int steps)
{
  response_diff d = {0};
  for (int j = 0; j <= steps; j++) {
    double f = span * (a < b ? a : b) * j / steps, ra, ia, rb, ib;
    response(x, n, a, f, &ra, &ia);
    response(y, m, b, f, &rb, &ib);
    d.peak = fmax(d.peak, hypot(ra, ia));
    if (hypot(rb - ra, ib - ia) > d.worst) {
      d.worst = hypot(rb - ra, ib - ia);
      d.worst_f = f;
    }
    if (j == 0) {
      d.dc_a = ra;
      d.dc_b = rb;
    }
  }
  return d;
}
#endif

/* An impulse response loaded at another rate is the same filter: the same
 * gain at DC (the taps' sum), the same response over the band both rates
 * carry, and the same energy (by Parseval, the sum of squares times the
 * rate: the response's squared magnitude integrated over frequency).
 * libswresample keeps sample values, so the taps' sum grew by out/in (a
 * 48 kHz IR 6x too quiet at 8 kHz, 2x too loud at 96 kHz).
 *
 * The IR: noise low-passed to 0.35 of the lower rate (0.7 of its Nyquist
 * frequency) under a Hann window: no content where the resampler's
 * anti-alias filter (Kaiser-windowed sinc, cutoff 0.97 of the lower
 * Nyquist) rolls off, and smooth ends, so that cutting the resampled
 * kernel to ceil(n * out / in) taps loses next to nothing. What is left
 * is the filter's passband ripple, its 1024 phases interpolated and
 * float32 rounding: the cases measure 1e-5 to 2e-5 of the response's
 * peak (energy: up to 2e-5). 2e-4 (energy 4e-4) leaves 10x for other
 * seeds and libav versions, and is 400x below the smallest error of the
 * gain bug (44.1 -> 48 kHz: 8.8%). */
static void test_audio_resample_gain(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  static const int pairs[][2] = {{48000, 8000},  {48000, 96000},
                                 {44100, 48000}, {96000, 44100},
                                 {8000, 48000},  {22050, 16000}};
  const double pi = 3.14159265358979323846;
  for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
    const int a = pairs[p][0], b = pairs[p][1];
    const double band = 0.35 * (a < b ? a : b) / a; /* cycles per sample */
    size_t n = ref_rng_range(&rng, 400, 4000);
    enum { HALF = 64 };
    float *noise = malloc((n + 2 * HALF) * sizeof *noise);
    float **x = random_channels(1, n);
    ref_rng_fill(&rng, noise, n + 2 * HALF);
    for (size_t i = 0; i < n; i++) {
      double acc = 0.0; /* Blackman-windowed sinc low-pass at `band` */
      for (int j = -HALF; j <= HALF; j++) {
        double t = 2.0 * band * j;
        double sinc = j ? sin(pi * t) / (pi * t) : 1.0;
        double win =
            0.42 + 0.5 * cos(pi * j / HALF) + 0.08 * cos(2.0 * pi * j / HALF);
        acc += 2.0 * band * sinc * win * noise[(size_t)((int)i + HALF - j)];
      }
      double hann = 0.5 - 0.5 * cos(2.0 * pi * ((double)i + 0.5) / (double)n);
      x[0][i] = (float)(hann * acc);
    }
    free(noise);
    const char *path = fixture("ir-rate.wav");
    write_audio(path, AV_CODEC_ID_PCM_F32LE, AV_SAMPLE_FMT_FLT, a, 1, x, n);
    cf_kernel *k;
    expect_ok(cf_kernel_load(path, (unsigned)b, &k), path);
    size_t m;
    const float *y = cf_kernel_taps(k, 0, &m);
    assert_int_equal(m, resampled_len(n, (size_t)a, (size_t)b));

    /* the response over [0, 0.3 of the lower rate], relative to its peak */
    response_diff d = compare_responses(x[0], n, a, y, m, b, 0.3, 64);
    double peak = d.peak, worst = d.worst, worst_f = d.worst_f;
    double ea = 0.0, eb = 0.0, dc_a = d.dc_a, dc_b = d.dc_b;
    for (size_t i = 0; i < n; i++)
      ea += (double)x[0][i] * x[0][i] * a;
    for (size_t i = 0; i < m; i++)
      eb += (double)y[i] * y[i] * b;
    double rel = worst / peak, dc = fabs(dc_b - dc_a) / peak;
    double energy = fabs(eb / ea - 1.0);
    print_message("%d Hz -> %d Hz, %zu -> %zu taps: DC %.6g -> %.6g, "
                  "response off by %.3g of its peak (at %.0f Hz), energy "
                  "by %.3g\n",
                  a, b, n, m, dc_a, dc_b, rel, worst_f, energy);
    if (!(dc <= 2e-4 && rel <= 2e-4 && energy <= 4e-4))
      print_error("%d Hz -> %d Hz: DC gain %.6g, want %.6g; response off by "
                  "%.3g; energy by %.3g (tolerance 2e-4, 2e-4, 4e-4)\n",
                  a, b, dc_b, dc_a, rel, energy);
    assert_true(dc <= 2e-4 && rel <= 2e-4 && energy <= 4e-4);
    cf_kernel_free(k);
    free_channels(x, 1);
  }
#endif
}

/* An impulse response whose first and last taps carry weight (the
 * direct sound at sample 0, as trimmed IRs start; a single tap; a last
 * tap), loaded at another rate: the band-limited kernel rings before
 * its first sample and after its last, and cutting the rings off
 * changed its gain (QA: a single tap at 44.1 kHz kept 0.81 of its gain
 * at 96 kHz; a room's response +2.8 dB at DC, -2.4 dB at 1 kHz). The
 * ring after is kept, the ring before added to the first tap: the DC
 * gain (the taps' sum) stays exact, and the response up to a tenth of
 * the lower rate within 0.08 of the first tap's weight (measured, 8
 * seeds: 0.005 down, 0.012 44.1 -> 48 kHz, 0.053 -> 96 kHz, 0.063
 * 8 -> 48 kHz, the same for a single tap and a room's IR; cut off, the
 * ring was 0.31 of it for the room at 96 kHz). */
static void test_audio_resample_edges(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  static const int pairs[][2] = {{44100, 96000}, {44100, 48000},
                                 {48000, 22050}, {48000, 8000},
                                 {8000, 48000},  {96000, 44100}};
  for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
    for (int shape = 0; shape < 2; shape++) {
      const int a = pairs[p][0], b = pairs[p][1];
      /* a room's: the direct sound, silence while the resampler's filter
       * spans (16 samples at the lower rate), then a decaying tail;
       * or a single tap */
      size_t gap = 16 * (size_t)((a + b - 1) / b) + 4;
      size_t n = shape ? 1 : gap + ref_rng_range(&rng, 16, 2000);
      float **x = random_channels(1, n);
      for (size_t i = 0; i < n; i++)
        x[0][i] *= i < gap ? 0.0f
                           : (float)(0.3 * exp(-5.0 * (double)i / (double)n));
      x[0][0] = (float)(ref_rng_range(&rng, 0, 1) ? 1 : -1) *
                (0.5f + (float)ref_rng_range(&rng, 0, 500) / 1000.0f);
      if (n > 1)
        x[0][n - 1] = 0.2f + (float)ref_rng_range(&rng, 0, 300) / 1000.0f;
      const char *path = fixture("ir-edges.wav");
      write_audio(path, AV_CODEC_ID_PCM_F32LE, AV_SAMPLE_FMT_FLT, a, 1, x, n);
      cf_kernel *k;
      expect_ok(cf_kernel_load(path, (unsigned)b, &k), path);
      size_t m;
      const float *y = cf_kernel_taps(k, 0, &m);
      response_diff d = compare_responses(x[0], n, a, y, m, b, 0.1, 32);
      double peak = d.peak, worst = d.worst, worst_f = d.worst_f;
      double dc_a = d.dc_a, dc_b = d.dc_b;
      double rel = worst / fabs(x[0][0]), dc = fabs(dc_b - dc_a) / peak;
      print_message("%d Hz -> %d Hz, %zu -> %zu taps, first %.3f: DC %.6g -> "
                    "%.6g, response off by %.3g of the first tap (at %.0f "
                    "Hz)\n",
                    a, b, n, m, x[0][0], dc_a, dc_b, rel, worst_f);
      if (!(dc <= 2e-5 && rel <= 0.08))
        print_error("%d Hz -> %d Hz, %zu taps: DC gain %.6g, want %.6g; "
                    "response to %.0f Hz off by %.3g of the first tap "
                    "(tolerance 2e-5 of the peak, 0.08)\n",
                    a, b, n, dc_b, dc_a, 0.1 * (a < b ? a : b), rel);
      assert_true(dc <= 2e-5 && rel <= 0.08);
      cf_kernel_free(k);
      free_channels(x, 1);
    }
#endif
}

/* Unsigned 8-bit samples resampled: the silence fed around the kernel
 * is 0x80 (0.0), not 0x00 (-1.0). The same values written as float32
 * give the reference: every tap alike. */
static void test_audio_u8_resampled(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  static const int pairs[][2] = {{48000, 44100}, {8000, 48000},
                                 {44100, 22050}};
  for (unsigned ch = 1; ch <= 2; ch++) {
    const int *r = pairs[ref_rng_range(&rng, 0, 2)];
    size_t n = ref_rng_range(&rng, 1, 3000);
    float **x = random_channels((int)ch, n);
    for (unsigned c = 0; c < ch; c++)
      for (size_t i = 0; i < n; i++) /* on the 8-bit grid: -1 .. 127/128 */
        x[c][i] = (float)((double)ref_rng_range(&rng, 0, 255) - 128.0) / 128.0f;
    const char *u8 = fixture("u8.wav"), *f32 = fixture("u8-as-f32.wav");
    write_audio(u8, AV_CODEC_ID_PCM_U8, AV_SAMPLE_FMT_U8, r[0], (int)ch, x, n);
    write_audio(f32, AV_CODEC_ID_PCM_F32LE, AV_SAMPLE_FMT_FLT, r[0], (int)ch,
                x, n);
    free_channels(x, (int)ch);
    cf_kernel *k, *want;
    expect_ok(cf_kernel_load(u8, (unsigned)r[1], &k), u8);
    expect_ok(cf_kernel_load(f32, (unsigned)r[1], &want), f32);
    assert_int_equal(cf_kernel_count(k), ch);
    for (unsigned c = 0; c < ch; c++) {
      size_t m;
      const float *w = cf_kernel_taps(want, c, &m);
      assert_int_equal(m, resampled_len(n, (size_t)r[0], (size_t)r[1]));
      expect_taps(k, c, w, m, 1e-6);
    }
    cf_kernel_free(k);
    cf_kernel_free(want);
  }
#endif
}

static void test_audio_nonfinite(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  for (int f64 = 0; f64 < 2; f64++) { /* float, double samples */
    size_t n = ref_rng_range(&rng, 10, 5000);
    float **x = random_channels(2, n);
    size_t c = ref_rng_range(&rng, 0, 1), i = ref_rng_range(&rng, 0, n - 1);
    x[c][i] = ref_rng_range(&rng, 0, 1) ? NAN : -INFINITY;
    const char *path = fixture("nan.wav");
    write_audio(path, f64 ? AV_CODEC_ID_PCM_F64LE : AV_CODEC_ID_PCM_F32LE,
                f64 ? AV_SAMPLE_FMT_DBL : AV_SAMPLE_FMT_FLT, 48000, 2, x, n);
    char key[96];
    snprintf(key, sizeof key, "channel %zu, sample %zu is %s", c, i,
             isnan(x[c][i]) ? "NaN" : "infinite");
    free_channels(x, 2);
    cf_kernel *k;
    expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path, key);
  }
#endif
}

static void test_audio_truncated(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  size_t n = ref_rng_range(&rng, 100, 5000);
  float **x = random_channels(2, n);
  const char *path = fixture("cut.wav");
  write_audio(path, AV_CODEC_ID_PCM_S16LE, AV_SAMPLE_FMT_S16, 48000, 2, x, n);
  free_channels(x, 2);
  cf_kernel *k;
  /* Cut inside the data (at the file's end): fewer samples than the
   * header states. */
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  size_t data_at = (size_t)st.st_size - 4 * n;
  truncate_file(path, data_at + 4 * ref_rng_range(&rng, 1, n - 1));
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path,
               "truncated");
  /* Cut inside the header. */
  truncate_file(path, ref_rng_range(&rng, 1, 30));
  cf_status s = cf_kernel_load(path, 0, &k);
  assert_int_not_equal(s, CF_OK);
  assert_null(k);
  assert_non_null(strstr(cf_last_error(), path));
  /* FLAC states its length in STREAMINFO. */
  n = ref_rng_range(&rng, 20000, 40000);
  x = random_channels(1, n);
  path = fixture("cut.flac");
  write_audio(path, AV_CODEC_ID_FLAC, AV_SAMPLE_FMT_S16, 44100, 1, x, n);
  free_channels(x, 1);
  assert_int_equal(stat(path, &st), 0);
  truncate_file(path, (size_t)st.st_size / 2);
  /* A cut frame fails to decode; a cut between frames is short. */
  s = cf_kernel_load(path, 0, &k);
  const char *msg = cf_last_error();
  expect_error(s, &k, CF_E_FORMAT, path,
               strstr(msg, "truncated") ? "truncated" : "decoding audio");
  /* STREAMINFO stating one sample more than the frames hold (its 36-bit
   * count at bytes 21..25) */
  n = ref_rng_range(&rng, 100, 5000);
  x = random_channels(1, n);
  write_audio(path, AV_CODEC_ID_FLAC, AV_SAMPLE_FMT_S16, 44100, 1, x, n);
  free_channels(x, 1);
  size_t len;
  unsigned char *b = read_bytes(path, &len);
  assert_true(len > 42 && !memcmp(b, "fLaC", 4) && (b[4] & 0x7f) == 0);
  uint64_t total = (uint64_t)(b[21] & 0x0f) << 32 | (uint64_t)b[22] << 24 |
                   (uint64_t)b[23] << 16 | (uint64_t)b[24] << 8 | b[25];
  assert_int_equal(total, n);
  total++;
  b[21] = (unsigned char)((b[21] & 0xf0) | (total >> 32));
  for (int i = 0; i < 4; i++)
    b[22 + i] = (unsigned char)(total >> (24 - 8 * i));
  write_bytes(path, b, len);
  free(b);
  char key[96];
  snprintf(key, sizeof key, "the header says %zu samples, the file holds %zu",
           n + 1, n);
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path, key);
#endif
}

#ifdef CF_TEST_HAVE_LIBAV
/* A 16-bit PCM WAV file written by hand, so its header may say anything
 * (a rate libav's own writer would refuse). */
static void write_wav(const char *path, unsigned channels, uint32_t rate,
                      const int16_t *x, size_t frames)
{
  uint32_t data = (uint32_t)(frames * channels * 2);
  uint32_t fmt[4] = {1 | channels << 16, rate, rate * channels * 2,
                     (channels * 2) | 16u << 16};
  unsigned char head[44];
  memcpy(head, "RIFF", 4);
  for (int i = 0; i < 4; i++)
    head[4 + i] = (unsigned char)((36 + data) >> (8 * i));
  memcpy(head + 8, "WAVEfmt \x10\0\0\0", 12);
  for (int w = 0; w < 4; w++)
    for (int i = 0; i < 4; i++)
      head[20 + 4 * w + i] = (unsigned char)(fmt[w] >> (8 * i));
  memcpy(head + 36, "data", 4);
  for (int i = 0; i < 4; i++)
    head[40 + i] = (unsigned char)(data >> (8 * i));
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(head, 1, sizeof head, f), sizeof head);
  for (size_t i = 0; i < frames * channels; i++) {
    unsigned char b[2] = {(unsigned char)x[i], (unsigned char)(x[i] >> 8)};
    assert_int_equal(fwrite(b, 1, 2, f), 2);
  }
  assert_int_equal(fclose(f), 0);
}
#endif

#ifdef CF_TEST_HAVE_LIBAV
/* Mono PCM of `bits` (24 or 32) at 48 kHz, little-endian, written by
 * hand as RIFF WAV or Sony Wave64 (its chunks named by GUIDs, sizes in
 * 64 bits counting their 24-byte headers). */
static void write_pcm(const char *path, bool w64, unsigned bits,
                      const int32_t *v, size_t n)
{
  static const unsigned char riff[16] = {'r', 'i', 'f', 'f', 0x2e, 0x91,
      0xcf, 0x11, 0xa5, 0xd6, 0x28, 0xdb, 0x04, 0xc1, 0x00, 0x00};
  static const unsigned char tail[12] = {0xf3, 0xac, 0xd3, 0x11, 0x8c, 0xd1,
      0x00, 0xc0, 0x4f, 0x8e, 0xdb, 0x8a}; /* of the wave, fmt, data GUIDs */
  unsigned bps = bits / 8;
  size_t data = n * bps, fmt_at = w64 ? 40 : 12, hs = w64 ? 24 : 8;
  size_t head = fmt_at + hs + 16 + hs;
  unsigned char *b = calloc(1, head + data);
  assert_non_null(b);
#define PUT(at, val, len)                                                    \
  for (size_t i_ = 0; i_ < (len); i_++)                                      \
    b[(at) + i_] = (unsigned char)((uint64_t)(val) >> (8 * i_))
  if (w64) {
    memcpy(b, riff, 16);
    PUT(16, head + data, 8);
    memcpy(b + 24, "wave", 4);
    memcpy(b + 28, tail, 12);
    memcpy(b + 40, "fmt ", 4);
    memcpy(b + 44, tail, 12);
    PUT(56, 24 + 16, 8);
    memcpy(b + 80, "data", 4);
    memcpy(b + 84, tail, 12);
    PUT(96, 24 + data, 8);
  } else {
    memcpy(b, "RIFFxxxxWAVEfmt ", 16);
    PUT(4, head + data - 8, 4);
    PUT(16, 16, 4);
    memcpy(b + 36, "data", 4);
    PUT(40, data, 4);
  }
  size_t f = fmt_at + hs;
  PUT(f, 1, 2); /* PCM */
  PUT(f + 2, 1, 2);
  PUT(f + 4, 48000, 4);
  PUT(f + 8, 48000 * bps, 4);
  PUT(f + 12, bps, 2);
  PUT(f + 14, bits, 2);
  for (size_t i = 0; i < n; i++)
    PUT(head + i * bps, (uint32_t)v[i], bps);
#undef PUT
  write_bytes(path, b, head + data);
  free(b);
}
#endif

/* 24- and 32-bit PCM in WAV and Wave64 at full scale 1.0 (kernel.h): each
 * tap is the float nearest v / 2^(bits-1), from the float64 reference,
 * over random values and both extremes. */
static void test_audio_pcm_levels(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  for (int c = 0; c < 4; c++) {
    bool w64 = c & 1;
    unsigned bits = c & 2 ? 32 : 24;
    size_t n = ref_rng_range(&rng, 3, 5000);
    int32_t *v = malloc(n * sizeof *v);
    float *want = malloc(n * sizeof *want);
    assert_true(v && want);
    double top = ldexp(1.0, (int)bits - 1);
    for (size_t i = 0; i < n; i++) {
      double u = (double)ref_rng_range(&rng, 0, 1u << 30) / (double)(1u << 30);
      v[i] = i == 0   ? (int32_t)-top
             : i == 1 ? (int32_t)(top - 1.0)
                      : (int32_t)floor((2.0 * u - 1.0) * (top - 1.0));
      want[i] = (float)((double)v[i] / top);
    }
    const char *path = fixture(w64 ? "pcm.w64" : "pcm.wav");
    write_pcm(path, w64, bits, v, n);
    cf_kernel *k;
    expect_ok(cf_kernel_load(path, 0, &k), path);
    expect_taps(k, 0, want, n, 0.0);
    cf_kernel_free(k);
    free(v);
    free(want);
  }
#endif
}

/* A WAV written while recording (a live capture, a pipe into a file)
 * states no data size: 0, or 0xFFFFFFFF. Its data runs to the end of the
 * file, libav's last read of it coming up short. */
static void test_audio_wav_streamed(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  static const uint32_t sizes[] = {0, UINT32_MAX};
  for (unsigned channels = 1; channels <= 4; channels *= 2)
    for (size_t z = 0; z < 2; z++) {
      /* not a whole number of libav's reads (4096 bytes) */
      size_t n = ref_rng_range(&rng, 1, 20000) | 1;
      int16_t *x = malloc(n * channels * sizeof *x);
      for (size_t i = 0; i < n * channels; i++)
        x[i] = (int16_t)ref_rng_range(&rng, 0, 65535);
      const char *path = fixture("streamed.wav");
      write_wav(path, channels, 48000, x, n);
      FILE *f = fopen(path, "r+b");
      assert_non_null(f);
      unsigned char size[4];
      for (int i = 0; i < 4; i++)
        size[i] = (unsigned char)(sizes[z] >> (8 * i));
      assert_int_equal(fseek(f, 40, SEEK_SET), 0);
      assert_int_equal(fwrite(size, 1, 4, f), 4);
      assert_int_equal(fclose(f), 0);
      cf_kernel *k;
      expect_ok(cf_kernel_load(path, 0, &k), path);
      float *want = malloc(n * sizeof *want);
      for (unsigned c = 0; c < channels; c++) {
        for (size_t i = 0; i < n; i++)
          want[i] = (float)((double)x[i * channels + c] / 32768.0);
        expect_taps(k, c, want, n, 0.0);
      }
      free(want);
      free(x);
      cf_kernel_free(k);
    }
#endif
}

#ifdef CF_TEST_HAVE_LIBAV
/* An integer of `bytes` bytes at p, little- or big-endian. */
static unsigned char *put_int(unsigned char *p, uint64_t v, int bytes, bool be)
{
  for (int i = 0; i < bytes; i++)
    p[be ? bytes - 1 - i : i] = (unsigned char)(v >> (8 * i));
  return p + bytes;
}
#endif

/* Valid WAV files libav 5.1 decodes as noise without a word: RIFX (the
 * big-endian WAV, 16, 24 or 32 bits: its samples were read as
 * little-endian; cut short, refused as a RIFF file is) and
 * WAVE_FORMAT_EXTENSIBLE PCM of 24 valid bits in 32-bit containers
 * (taken for 24-bit floats: a NaN tap, or a false "truncated"). Every tap
 * against the file's integers in float64. */
static void test_audio_wav_libav_misreads(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  for (int kind = 0; kind < 4; kind++) /* RIFX 16, 24, 24 in 32, RIFX 32 */
    for (unsigned ch = 1; ch <= 4; ch++) {
      bool be = kind != 2, ext = kind == 2;
      int bytes = kind == 0 ? 2 : kind == 1 ? 3 : 4;
      int bits = kind == 0 ? 16 : kind == 3 ? 32 : 24;
      size_t n = ref_rng_range(&rng, 1, 3000);
      size_t data = n * ch * (size_t)bytes;
      size_t fmt = ext ? 40 : 16, total = 12 + 8 + fmt + 8 + data;
      unsigned char *w = calloc(1, total + 1), *p = w;
      int32_t *x = malloc(n * ch * sizeof *x);
      memcpy(p, be ? "RIFX" : "RIFF", 4);
      p = put_int(p + 4, total - 8 + (data & 1), 4, be);
      memcpy(p, "WAVEfmt ", 8);
      p = put_int(p + 8, fmt, 4, be);
      p = put_int(p, ext ? 0xFFFE : 1, 2, be);
      p = put_int(p, ch, 2, be);
      p = put_int(p, 48000, 4, be);
      p = put_int(p, 48000u * ch * (unsigned)bytes, 4, be);
      p = put_int(p, ch * (unsigned)bytes, 2, be);
      p = put_int(p, (unsigned)bytes * 8, 2, be);
      if (ext) {
        static const unsigned char pcm[16] = {1,    0, 0,    0,    0,    0,
                                              0x10, 0, 0x80, 0,    0,    0xaa,
                                              0,    0x38, 0x9b, 0x71};
        p = put_int(p, 22, 2, be);
        p = put_int(p, (unsigned)bits, 2, be); /* valid bits */
        p = put_int(p, 0, 4, be);              /* no channel mask */
        memcpy(p, pcm, 16);
        p += 16;
      }
      memcpy(p, "data", 4);
      p = put_int(p + 4, data, 4, be);
      for (size_t i = 0; i < n * ch; i++) {
        x[i] = (int32_t)((int64_t)ref_rng_range(&rng, 0,
                                                ((uint64_t)1 << bits) - 1) -
                         ((int64_t)1 << (bits - 1)));
        /* 24 valid bits in 32: the high ones (left-justified) */
        uint64_t v = (uint32_t)x[i] << (ext ? 8 : 0);
        p = put_int(p, v, bytes, be);
      }
      const char *path = fixture("misread.wav");
      FILE *f = fopen(path, "wb");
      assert_non_null(f);
      assert_int_equal(fwrite(w, 1, total, f), total);
      assert_int_equal(fclose(f), 0);
      cf_kernel *k;
      expect_ok(cf_kernel_load(path, 0, &k), path);
      float *want = malloc(n * sizeof *want);
      for (unsigned c = 0; c < ch; c++) {
        for (size_t i = 0; i < n; i++)
          want[i] = (float)((double)x[i * ch + c] /
                            (double)((int64_t)1 << (bits - 1)));
        expect_taps(k, c, want, n, 0.0);
      }
      cf_kernel_free(k);
      if (be) { /* a few bytes short of the header's data size */
        truncate_file(path, total - ref_rng_range(&rng, 1, data < 8 ? data : 8));
        expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path,
                     "truncated: the WAV header says");
      }
      free(want);
      free(x);
      free(w);
    }
#endif
}

/* Rates libswresample would need gigabytes for: tests/fuzz found a WAV
 * header's 520 MHz, resampled to 48 kHz, asking for 1.6 GB. */
static void test_audio_rates(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  int16_t x[1000];
  for (size_t i = 0; i < 1000; i++)
    x[i] = 16384;
  const char *path = fixture("rate.wav");
  cf_kernel *k;
  write_wav(path, 2, 520110080u, x, 8);
  expect_error(cf_kernel_load(path, 48000, &k), &k, CF_E_FORMAT, path,
               "2 channels at 520110080 Hz");
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path,
               "rate of 1..1000000 Hz");
  write_wav(path, 1, 1024, x, 16);
  expect_error(cf_kernel_load(path, 1, &k), &k, CF_E_INVALID, path,
               "cannot resample 1024 Hz to 1 Hz: more than 256x down");
  /* and up: the silence before the kernel grows with the ratio (QA: a
   * 56-byte WAV at 1 Hz took 4 GB and 10 s to reach 1 MHz) */
  write_wav(path, 5, 1, x, 1);
  expect_error(cf_kernel_load(path, 1000000, &k), &k, CF_E_INVALID, path,
               "cannot resample 1 Hz to 1000000 Hz: more than 256x up");
  write_wav(path, 1, 1000, x, 16);
  expect_error(cf_kernel_load(path, 257000, &k), &k, CF_E_INVALID, path,
               "cannot resample 1000 Hz to 257000 Hz: more than 256x up");
  expect_ok(cf_kernel_load(path, 256000, &k), path);
  assert_int_equal(cf_kernel_max_len(k), resampled_len(16, 1000, 256000));
  cf_kernel_free(k);
  /* ratios between 256 and 257 (QA: 187 Hz to 48 kHz, 256.7x, passed
   * an integer division as 256) */
  expect_error(cf_kernel_load(path, 256001, &k), &k, CF_E_INVALID, path,
               "cannot resample 1000 Hz to 256001 Hz: more than 256x up");
  write_wav(path, 1, 187, x, 16);
  expect_error(cf_kernel_load(path, 48000, &k), &k, CF_E_INVALID, path,
               "cannot resample 187 Hz to 48000 Hz: more than 256x up");
  write_wav(path, 1, 48000, x, 16);
  expect_error(cf_kernel_load(path, 187, &k), &k, CF_E_INVALID, path,
               "cannot resample 48000 Hz to 187 Hz: more than 256x down");
  /* exactly 256x down is within the limit, as 256x up is */
  write_wav(path, 1, 256000, x, 16);
  expect_ok(cf_kernel_load(path, 1000, &k), path);
  assert_int_equal(cf_kernel_max_len(k), resampled_len(16, 256000, 1000));
  cf_kernel_free(k);
  /* libswresample converts at most 64 channels: 65 were an internal
   * error ("cannot set up the audio resampler: Invalid argument") */
  write_wav(path, 65, 48000, x, 8);
  expect_error(cf_kernel_load(path, 48000, &k), &k, CF_E_FORMAT, path,
               "65 channels: an audio kernel file holds at most 64");
  write_wav(path, 64, 48000, x, 8);
  expect_ok(cf_kernel_load(path, 48000, &k), path);
  assert_int_equal(cf_kernel_count(k), 64);
  cf_kernel_free(k);
  /* too long once resampled: the limit said is the kernel's, without
   * the silence held before it (it said 16777216 + that) */
  {
    size_t m = ((size_t)1 << 24) / 256 + 64;
    int16_t *y = calloc(m, sizeof *y);
    assert_non_null(y);
    y[0] = 16384;
    write_wav(path, 1, 1000, y, m);
    free(y);
    expect_error(cf_kernel_load(path, 256000, &k), &k, CF_E_FORMAT, path,
                 "longer than the limit of 16777216 samples per channel (1 "
                 "channel at 256000 Hz)");
  }
  /* a header libav fails on with EIO or ENOMEM is a malformed file, not
   * an I/O or memory error (QA: a fmt chunk said 1000 bytes long) */
  {
    write_wav(path, 1, 48000, x, 8);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    const unsigned char big[4] = {0xe8, 0x03, 0, 0};
    assert_int_equal(fseek(f, 16, SEEK_SET), 0);
    assert_int_equal(fwrite(big, 1, 4, f), 4);
    assert_int_equal(fclose(f), 0);
    expect_error(cf_kernel_load(path, 48000, &k), &k, CF_E_FORMAT, path,
                 "malformed or not audio");
  }
  /* 24x down: the resampler's delay is more than one piece of silence
   * (these kernels came out empty), yet every kernel keeps its length
   * (and its ring after it). */
  for (size_t m = 16; m <= 1000; m = m * 4 + 3) {
    write_wav(path, 1, 192000, x, m);
    expect_ok(cf_kernel_load(path, 8000, &k), path);
    size_t len;
    const float *y = cf_kernel_taps(k, 0, &len);
    if (len != resampled_len(m, 192000, 8000))
      print_error("%zu taps at 192 kHz: %zu at 8 kHz, want %zu\n", m, len,
                  resampled_len(m, 192000, 8000));
    assert_int_equal(len, resampled_len(m, 192000, 8000));
    /* 0.5 at 192 kHz: 12 at 8 kHz (the taps scaled by 24, the gain
     * kept); a resampler's overshoot stays well within 1.5x */
    for (size_t i = 0; i < len; i++)
      assert_true(isfinite(y[i]) && fabsf(y[i]) < 18.0f);
    cf_kernel_free(k);
  }
#endif
}

/* Decoded samples are capped, not only resampled ones: a small FLAC file
 * of silence holds billions of samples (230 kB: 3 billion), which took
 * seconds to minutes to downsample into a kernel within the limits. */
#ifdef CF_TEST_HAVE_LIBAV
/* A lossy-coded impulse response: the encoder's name, the file, the
 * rate, and the most taps past the IR's own length the file leaves
 * (padding it does not state: an MP4's length is in whole ms, rounded,
 * and the loader keeps a ms more; ADTS and Matroska state no AAC
 * padding, up to a frame; libav's MP3 demuxer trims at most the last
 * frame of the LAME header's padding, 18 samples seen left). */
typedef struct lossy_case {
  const char *encoder, *name;
  int rate;
  size_t extra;
  int channels; /* 0: 1 or 2 */
} lossy_case;

/* libvorbis states the exact length in Ogg (its last granule); libav's
 * own Vorbis encoder (stereo only) rounds it up to its 64-sample
 * blocks. */
static const lossy_case lossy_cases[] = {
    {"aac", "ir.m4a", 44100, 89, 0},      {"aac", "ir.m4a", 48000, 96, 0},
    {"aac", "ir.aac", 48000, 1024, 0},    {"aac", "ir.mka", 44100, 1024, 0},
    {"libmp3lame", "ir.mp3", 44100, 1152, 0},
    {"libopus", "ir.opus", 48000, 0, 0},  {"libvorbis", "ir.ogg", 44100, 0, 0},
    {"libvorbis", "ir.ogg", 48000, 0, 0}, {"vorbis", "ir.ogg", 48000, 63, 2},
};

/* Channel c's direct sound, at `at` + 7c (0.5), and a decaying random
 * tail after it, n samples in all. */
static float **lossy_ir(int channels, size_t at, size_t n)
{
  float **x = random_channels(channels, n);
  for (int c = 0; c < channels; c++)
    for (size_t i = 0; i < n; i++) {
      size_t d = at + 7 * (size_t)c;
      x[c][i] = i < d ? 0.0f
                : i == d ? 0.5f
                         : 0.05f * x[c][i] *
                               expf(-(float)(i - d) / (float)(n / 8));
    }
  return x;
}

/* The lag (-64..64) at which taps t best match the IR x of n samples at
 * r times its rate (linearly interpolated there): a codec's band limit
 * spreads the direct sound over its neighbours (AAC at 64 kb/s made
 * the tap 2 before it the largest), the whole IR still lines up. */
static int best_lag(const float *t, size_t len, const float *x, size_t n,
                    double r)
{
  int best = 0;
  double top = -INFINITY;
  for (int lag = -64; lag <= 64; lag++) {
    double sum = 0.0;
    for (size_t j = 0; (double)j < (double)(n - 1) * r; j++) {
      double p = (double)j / r, f = p - floor(p);
      size_t i = (size_t)p;
      /* j / r rounds up to n - 1 at the last j: no x[n] */
      double xr = i + 1 < n ? (1.0 - f) * x[i] + f * x[i + 1] : x[i];
      long at = (long)j + lag;
      if (at >= 0 && (size_t)at < len)
        sum += xr * (double)t[at];
    }
    if (sum > top) {
      top = sum;
      best = lag;
    }
  }
  return best;
}
#endif

/* Lossy files start with the encoder's priming (AAC 1024 samples, LAME
 * 1105, Opus 312) and end padded to a frame: loaded, the IR's direct
 * sound must stay where it was (where the file says where it starts, and
 * for AAC, whose first frame is always priming, where it does not) and
 * the taps end where the file says; resampled, the direct sound moves to
 * at * out / in (within a tap of the IR linearly interpolated there). */
static void test_audio_lossy_priming(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  for (size_t i = 0; i < sizeof lossy_cases / sizeof *lossy_cases; i++) {
    const lossy_case *lc = &lossy_cases[i];
    if (!avcodec_find_encoder_by_name(lc->encoder)) {
      print_message("skipped %s: no %s encoder\n", lc->name, lc->encoder);
      continue;
    }
    int channels = lc->channels ? lc->channels
                                : (int)ref_rng_range(&rng, 1, 2);
    size_t at = ref_rng_range(&rng, 100, 3000);
    /* a last frame of 256 samples or more: FFmpeg 5.1's AAC encoder left
     * the last 13 of 6157 out of the file */
    size_t n = (at + ref_rng_range(&rng, 2000, 6000)) / 1024 * 1024 +
               ref_rng_range(&rng, 256, 1023);
    float **x = lossy_ir(channels, at, n);
    const char *path = fixture(lc->name);
    avmake_encoded(path, lc->encoder, lc->rate, channels, x, n);
    static const unsigned outs[] = {0, 32000, 96000};
    for (int o = 0; o < 3; o++) {
      unsigned out = outs[o];
      cf_kernel *k;
      expect_ok(cf_kernel_load(path, out, &k), path);
      assert_int_equal(cf_kernel_count(k), channels);
      double r = out ? (double)out / lc->rate : 1.0;
      /* the taps: the IR's span at the new rate and the resampler's ring
       * after it (kernel.h), and the file's unstated padding */
      size_t lo = out ? resampled_len(n, (size_t)lc->rate, out) : n;
      size_t hi = lo + (size_t)ceil((double)lc->extra * r);
      for (int c = 0; c < channels; c++) {
        size_t len;
        const float *t = cf_kernel_taps(k, (unsigned)c, &len);
        int lag = best_lag(t, len, x[c], n, r);
        int tol = out ? 1 : 0;
        if (abs(lag) > tol || len < lo || len > hi)
          print_error("%s (%s at %d Hz, %d ch) loaded at %u Hz: channel %d "
                      "%d taps late; %zu taps, want %zu..%zu\n", path,
                      lc->encoder, lc->rate, channels, out, c, lag, len, lo,
                      hi);
        assert_true(abs(lag) <= tol);
        assert_in_range(len, lo, hi);
      }
      cf_kernel_free(k);
    }
    free_channels(x, channels);
  }
#endif
}

/* A load writes nothing to the process's stderr (the embedding
 * application's): libav's decoders said "Could not update timestamps
 * for skipped samples" on every MP3 and Opus load with a LAME header or
 * a pre-skip, at libav's default log level. */
static void test_audio_lossy_quiet(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  static const char *const files[][2] = {
      {"libmp3lame", "quiet.mp3"}, {"libopus", "quiet.opus"}, {"aac", "quiet.m4a"}};
  const char *log = fixture("stderr.txt");
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    if (!avcodec_find_encoder_by_name(files[i][0]))
      continue;
    float **x = lossy_ir(2, 500, 5000);
    const char *path = fixture(files[i][1]);
    avmake_encoded(path, files[i][0], 48000, 2, x, 5000);
    free_channels(x, 2);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
    av_log_set_level(AV_LOG_INFO); /* libav's default, quiet in main */
    cf_kernel *k;
    cf_status s = cf_kernel_load(path, 44100, &k);
    av_log_set_level(AV_LOG_QUIET);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    expect_ok(s, path);
    cf_kernel_free(k);
    size_t len;
    unsigned char *said = read_bytes(log, &len);
    said[len] = 0;
    if (len)
      print_error("%s: the load wrote to stderr: %s\n", path, said);
    free(said);
    assert_int_equal(len, 0);
  }
#endif
}

/* Lossy files cut short (a download broken off, `head -c`): libav
 * plays what is left, only logging "filesize and duration do not match"
 * (MP3) or "File ended prematurely" (Matroska), and an Ogg file's length
 * comes from its last page, so the half of an IR loaded as the kernel.
 * The whole file loads; cut anywhere from 20 % to 80 % of its size it
 * fails, naming the file and that it is truncated (an Ogg file cut at a
 * page boundary loads: test_audio_ogg_whole). Long enough (about 1.5 s)
 * for several Ogg pages. */
static void test_audio_lossy_truncated(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  static const char *const files[][2] = {
      {"libmp3lame", "cut.mp3"}, {"libopus", "cut.opus"},
      {"libvorbis", "cut.ogg"},  {"libopus", "cut.mka"},
      {"aac", "cut.mka"},        {"libmp3lame", "cut.mka"},
      {"flac", "cut.oga"}};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    if (!avcodec_find_encoder_by_name(files[i][0])) {
      print_message("skipped %s: no %s encoder\n", files[i][1], files[i][0]);
      continue;
    }
    int channels = (int)ref_rng_range(&rng, 1, 2);
    size_t n = ref_rng_range(&rng, 60000, 80000);
    float **x = lossy_ir(channels, ref_rng_range(&rng, 100, 3000), n);
    const char *path = fixture(files[i][1]);
    avmake_encoded(path, files[i][0], 48000, channels, x, n);
    free_channels(x, channels);
    cf_kernel *k;
    expect_ok(cf_kernel_load(path, 0, &k), path);
    cf_kernel_free(k);
    size_t size;
    unsigned char *whole = read_bytes(path, &size);
    truncate_file(path, size * ref_rng_range(&rng, 20, 80) / 100);
    expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path,
                 "truncated");
    free(whole);
  }
#endif
}

#ifdef CF_TEST_HAVE_LIBAV
/* An Ogg page's CRC (RFC 3533: polynomial 0x04c11db7, not reflected,
 * over the page with its CRC field 0). */
static uint32_t ogg_crc(const unsigned char *p, size_t n)
{
  uint32_t c = 0;
  for (size_t i = 0; i < n; i++) {
    c ^= (uint32_t)(i >= 22 && i < 26 ? 0 : p[i]) << 24;
    for (int b = 0; b < 8; b++)
      c = c & 0x80000000u ? c << 1 ^ 0x04c11db7u : c << 1;
  }
  return c;
}

/* Edits every Ogg page of b[0..n) (a whole file, as libav wrote it):
 * granule positions over 0 moved by shift, the serial made serial
 * (where not 0), the end-of-stream flag cleared where clear_eos; each
 * page's CRC made right again. The pages edited. */
static unsigned ogg_edit(unsigned char *b, size_t n, int64_t shift,
                         uint32_t serial, bool clear_eos)
{
  unsigned pages = 0;
  for (size_t at = 0; at < n; pages++) {
    unsigned char *p = b + at;
    assert_true(n - at >= 27 && memcmp(p, "OggS", 4) == 0);
    size_t len = 27 + p[26];
    for (unsigned i = 0; i < p[26]; i++)
      len += p[27 + i];
    assert_true(len <= n - at);
    int64_t g = 0;
    for (int i = 7; i >= 0; i--)
      g = g << 8 | p[6 + i];
    if (g > 0)
      for (int i = 0; i < 8; i++)
        p[6 + i] = (unsigned char)((uint64_t)(g + shift) >> (8 * i));
    for (int i = 0; serial && i < 4; i++)
      p[14 + i] = (unsigned char)(serial >> (8 * i));
    if (clear_eos)
      p[5] &= (unsigned char)~0x04;
    uint32_t c = ogg_crc(p, len);
    for (int i = 0; i < 4; i++)
      p[22 + i] = (unsigned char)(c >> (8 * i));
    at += len;
  }
  return pages;
}

#endif

/* Whole Ogg files that are not one stream from granule 0 to an
 * end-of-stream page load, as a player plays them (QA):
 * - an Opus stream starting at a granule past 0 (a capture of a live
 *   stream, RFC 7845 4.3) was refused as "truncated: the file states
 *   501312 samples, 60000 decoded": libav states its last granule as its
 *   length; it loads as the same stream from 0 does, tap for tap;
 * - a chained file (cat a.opus b.opus, links with their own serials)
 *   loaded cut at its last link's length (60000 and 2000 samples: 2312
 *   taps), and, uncut, its second link decoded with the first link's
 *   decoder state (its direct sound at a tenth); it loads as its links
 *   one after the other, each tap for tap as the file of it alone;
 * - a file whose last page lacks the end-of-stream flag (a recorder
 *   stopped without one) was refused as truncated; it loads, at least
 *   the samples its pages hold.
 * A chain whose links change codec, which libav 5.1 cannot read, said
 * "I/O error: reading audio: Invalid argument"; it names the problem. */
static void test_audio_ogg_whole(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  if (!avcodec_find_encoder_by_name("libopus")) {
    print_message("skipped: no libopus encoder\n");
    return;
  }
  size_t n[2], at[2];
  unsigned char *bytes[2];
  size_t size[2];
  const char *path = fixture("link.opus");
  for (int i = 0; i < 2; i++) {
    /* two Ogg pages of audio or more (libav's are about 1 s) */
    n[i] = ref_rng_range(&rng, i ? 2000 : 60000, i ? 80000 : 80000);
    at[i] = ref_rng_range(&rng, 100, 1500);
    float **x = lossy_ir(1, at[i], n[i]);
    avmake_encoded(path, "libopus", 48000, 1, x, n[i]);
    free_channels(x, 1);
    bytes[i] = read_bytes(path, &size[i]);
  }
  cf_kernel *whole, *k;
  write_bytes(path, bytes[0], size[0]);
  expect_ok(cf_kernel_load(path, 0, &whole), path);
  size_t len;
  const float *want = cf_kernel_taps(whole, 0, &len);
  assert_int_equal(len, n[0]);

  /* starting past granule 0 */
  const char *moved = fixture("moved.opus");
  unsigned char *b = malloc(size[0]);
  assert_non_null(b);
  memcpy(b, bytes[0], size[0]);
  int64_t shift = (int64_t)ref_rng_range(&rng, 1, 48000 * 600);
  ogg_edit(b, size[0], shift, 0, false);
  write_bytes(moved, b, size[0]);
  expect_ok(cf_kernel_load(moved, 0, &k), moved);
  expect_taps(k, 0, want, len, 0.0);
  cf_kernel_free(k);

  /* without its end-of-stream flag: its samples, and at most its
   * last packet's padding (20 ms) */
  const char *open_end = fixture("open-end.opus");
  memcpy(b, bytes[0], size[0]);
  ogg_edit(b, size[0], 0, 0, true);
  write_bytes(open_end, b, size[0]);
  expect_ok(cf_kernel_load(open_end, 0, &k), open_end);
  const float *t = cf_kernel_taps(k, 0, &len);
  assert_in_range(len, n[0], n[0] + 960);
  for (size_t i = 0; i < n[0]; i++)
    assert_true(t[i] == want[i]);
  cf_kernel_free(k);
  free(b);

  /* chained: the second link with a serial of its own */
  const char *chain = fixture("chain.opus");
  b = malloc(size[0] + size[1]);
  assert_non_null(b);
  memcpy(b, bytes[0], size[0]);
  memcpy(b + size[0], bytes[1], size[1]);
  uint32_t serial = (uint32_t)(b[14] | b[15] << 8 | b[16] << 16) ^ 0x5a5a5au;
  ogg_edit(b + size[0], size[1], 0, serial | 1u, false);
  write_bytes(chain, b, size[0] + size[1]);
  expect_ok(cf_kernel_load(chain, 0, &k), chain);
  t = cf_kernel_taps(k, 0, &len);
  if (len != n[0] + n[1])
    print_error("%s: links of %zu and %zu samples loaded as %zu taps\n",
                chain, n[0], n[1], len);
  assert_int_equal(len, n[0] + n[1]);
  /* each link as the file of it alone loads */
  for (size_t i = 0; i < n[0]; i++)
    assert_true(t[i] == want[i]);
  cf_kernel *link;
  write_bytes(path, bytes[1], size[1]);
  expect_ok(cf_kernel_load(path, 0, &link), path);
  const float *want2 = cf_kernel_taps(link, 0, &len);
  assert_int_equal(len, n[1]);
  for (size_t i = 0; i < n[1]; i++)
    if (t[n[0] + i] != want2[i]) {
      print_error("%s: the second link's sample %zu (tap %zu) is %g, alone "
                  "%g\n", chain, i, n[0] + i, t[n[0] + i], want2[i]);
      fail();
    }
  cf_kernel_free(link);
  /* links of two codecs, which libav cannot read, say so */
  if (avcodec_find_encoder_by_name("libvorbis")) {
    float **x = lossy_ir(1, at[1], n[1]);
    avmake_encoded(path, "libvorbis", 44100, 1, x, n[1]);
    free_channels(x, 1);
    size_t vsize;
    unsigned char *v = read_bytes(path, &vsize);
    unsigned char *two = malloc(size[0] + vsize);
    assert_non_null(two);
    memcpy(two, bytes[0], size[0]);
    memcpy(two + size[0], v, vsize);
    write_bytes(chain, two, size[0] + vsize);
    free(v);
    free(two);
    expect_error(cf_kernel_load(chain, 0, &link), &link, CF_E_FORMAT, chain,
                 "a chained Ogg file whose links change codec");
  }
  cf_kernel_free(k);
  free(b);
  cf_kernel_free(whole);
  free(bytes[0]);
  free(bytes[1]);
#endif
}

/* Files with no audio to load fail naming the file and why: a video
 * (it said "no decodable audio stream: Stream not found"), an MP4
 * whose audio track has no samples (libav drops the track), Matroska
 * and Ogg files with an audio stream and no packets (they said "End of
 * file"), a WAV of no samples, an MP3 of no frames. */
static void test_audio_no_audio(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  cf_kernel *k;
  unsigned w = (unsigned)ref_rng_range(&rng, 2, 64);
  int64_t pts[3] = {0, 40, 80};
  const char *path = fixture("video.mkv");
  frames_at(path, w, w, 3, 25, pts);
  expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path,
               "no audio stream: libav took it for 'matroska,webm', holding "
               "video (rawvideo)");
  static const char *const empty[][3] = {
      {"empty.mka", NULL, "the file ends before its audio starts"},
      {"empty.wav", NULL, "no audio samples decoded"},
      {"empty.m4a", "aac", "no audio stream"},
      {"empty.opus", "libopus", "the file ends before its audio starts"},
      {"empty.mp3", "libmp3lame", "malformed or not audio"}};
  for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
    path = fixture(empty[i][0]);
    if (empty[i][1]) {
      if (!avcodec_find_encoder_by_name(empty[i][1]))
        continue;
      float none = 0.0f, *x[1] = {&none};
      avmake_encoded(path, empty[i][1], 48000, 1, x, 0);
    } else {
      AVFormatContext *oc = avmake_new(path, NULL);
      avmake_pcm(oc, 48000, (AVRational){1, 48000});
      avmake_begin(oc);
      avmake_end(oc);
    }
    expect_error(cf_kernel_load(path, 0, &k), &k, CF_E_FORMAT, path,
                 empty[i][2]);
  }
#endif
}

static void test_audio_decoded_limit(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  size_t n = ((size_t)1 << 24) + 1; /* 2^27 samples over 8 channels, +1 */
  float *zero = calloc(n, sizeof *zero);
  assert_non_null(zero);
  float *x[8] = {zero, zero, zero, zero, zero, zero, zero, zero};
  const char *path = fixture("long.flac");
  write_audio(path, AV_CODEC_ID_FLAC, AV_SAMPLE_FMT_S16, 48000, 8, x, n);
  free(zero);
  cf_kernel *k;
  expect_error(cf_kernel_load(path, 8000, &k), &k, CF_E_FORMAT, path,
               "longer than the limit of 16777216 samples per channel (8 "
               "channels at 48000 Hz)");
#endif
}

/* file:NAME names the file NAME (file:///a the path ///a), for kernel
 * files as for apply's INPUT and OUTPUT (README): every loader took the
 * prefix for part of the name, "cannot open: No such file or
 * directory". The taps are those of the plain name. */
static void test_file_prefix(void **state)
{
  (void)state;
  size_t n = ref_rng_range(&rng, 1, 500);
  float *x = malloc(n * sizeof *x);
  assert_non_null(x);
  random_taps(x, n);
  const char *path = fixture("prefixed.txt");
  write_text(path, x, n);
  char name[2][4096];
  snprintf(name[0], sizeof name[0], "file:%s", path);
  snprintf(name[1], sizeof name[1], "file://%s", path); /* absolute */
  assert_true(path[0] == '/');
  for (int i = 0; i < 2; i++) {
    cf_kernel *k, *t;
    expect_ok(cf_kernel_load(path, 0, &t), path);
    size_t len;
    const float *want = cf_kernel_taps(t, 0, &len);
    expect_ok(cf_kernel_load(name[i], 0, &k), name[i]);
    expect_taps(k, 0, want, len, 0.0);
    cf_kernel_free(k);
    expect_ok(cf_kernel_load_text(name[i], &k), name[i]);
    expect_taps(k, 0, want, len, 0.0);
    cf_kernel_free(k);
    cf_kernel_free(t);
  }
#ifdef CF_TEST_HAVE_LIBAV
  path = fixture("prefixed.wav");
  float *ch[1] = {x};
  for (size_t i = 0; i < n; i++)
    x[i] = fmaxf(-1.0f, fminf(1.0f, x[i]));
  write_audio(path, AV_CODEC_ID_PCM_F32LE, AV_SAMPLE_FMT_FLT, 48000, 1, ch, n);
  snprintf(name[0], sizeof name[0], "file:%s", path);
  cf_kernel *a;
  expect_ok(cf_kernel_load(name[0], 0, &a), name[0]);
  expect_taps(a, 0, x, n, 0.0);
  cf_kernel_free(a);
  expect_ok(cf_kernel_load_audio(name[0], 0, &a), name[0]);
  expect_taps(a, 0, x, n, 0.0);
  cf_kernel_free(a);
#endif
  free(x);
  path = fixture("missing.txt");
  snprintf(name[0], sizeof name[0], "file:%s", path);
  cf_kernel *k;
  expect_error(cf_kernel_load(name[0], 0, &k), &k, CF_E_IO, name[0],
               "No such file");
}

/* A file of zeros only (an impulse response exported empty) is refused
 * by cf_kernel_load in every format, naming it; one tap not 0, anywhere,
 * and it loads. Text, .npy (per-channel) and a 16-bit WAV. */
static void test_silent_file(void **state)
{
  (void)state;
  for (unsigned c = 0; c < 12; c++) {
    unsigned kind = c % 3, ch = 1 + (unsigned)ref_rng_range(&rng, 0, 3);
    size_t n = ref_rng_range(&rng, 1, 300), all = kind == 0 ? n : n * ch;
    /* the one tap that is not 0 in the odd cases (text: one channel) */
    size_t hot = c & 1 ? ref_rng_range(&rng, 0, all - 1) : SIZE_MAX;
    char name[32];
    snprintf(name, sizeof name, "silent-%u.%s", c,
             kind == 0 ? "txt" : kind == 1 ? "npy" : "wav");
    const char *path = fixture(name);
    if (kind == 0) {
      FILE *f = fopen(path, "w");
      assert_non_null(f);
      for (size_t i = 0; i < n; i++)
        fputs(i == hot ? "0.25 " : ref_rng_range(&rng, 0, 1) ? "-0.0\n" : "0, ",
              f);
      fclose(f);
    } else if (kind == 1) {
      npy_spec sp = {2, {ch, n, 0}, c & 2 ? 8 : 4, '<', 0, 1};
      double *v = calloc(n * ch, sizeof *v);
      if (hot != SIZE_MAX)
        v[hot] = -1e-3;
      write_npy(path, &sp, v);
      free(v);
    } else {
#ifdef CF_TEST_HAVE_LIBAV
      int16_t *x = calloc(n * ch, sizeof *x);
      if (hot != SIZE_MAX)
        x[hot] = 1;
      write_wav(path, ch, 48000, x, n);
      free(x);
#else
      continue;
#endif
    }
    cf_kernel *k = NULL;
    cf_status s = cf_kernel_load(path, 0, &k);
    if (hot == SIZE_MAX) {
      expect_error(s, &k, CF_E_FORMAT, path, "is silent: every tap is 0");
    } else {
      if (s != CF_OK)
        print_error("%s (tap %zu of %zu not 0): %s\n", path, hot, all,
                    cf_last_error());
      assert_int_equal(s, CF_OK);
      cf_kernel_free(k);
    }
  }
}

/* A kernel given as a libav URL to cf_kernel_load_audio (cache:NAME
 * here: no network needed) loads as the file does. A WAV failed as
 * "cannot open: No such file or directory": its length check opened the
 * URL as a path (Ogg and MP3 ones loaded). */
static void test_audio_url(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  size_t n = ref_rng_range(&rng, 1, 4000);
  float **x = random_channels(1, n);
  const char *path = fixture("url.wav");
  write_audio(path, AV_CODEC_ID_PCM_F32LE, AV_SAMPLE_FMT_FLT, 48000, 1, x, n);
  char url[4096];
  snprintf(url, sizeof url, "cache:%s", path);
  cf_kernel *k;
  expect_ok(cf_kernel_load_audio(url, 0, &k), url);
  expect_taps(k, 0, x[0], n, 0.0);
  cf_kernel_free(k);
  free_channels(x, 1);
#endif
}

static void test_audio_missing(void **state)
{
  (void)state;
  SKIP_WITHOUT_LIBAV();
#ifdef CF_TEST_HAVE_LIBAV
  const char *path = fixture("missing.wav");
  cf_kernel *k;
  expect_error(cf_kernel_load_audio(path, 0, &k), &k, CF_E_IO, path,
               "No such file");
  expect_error(cf_kernel_load_audio(path, 4000000, &k), &k, CF_E_INVALID, path,
               "rate");
#endif
}

/* ---- main ---------------------------------------------------------- */

int main(void)
{
  ref_rng_init(&rng, ref_seed());
  if (fixture_init("loaders"))
    return 1;
#ifdef CF_TEST_HAVE_LIBAV
  av_log_set_level(AV_LOG_QUIET); /* our messages carry libav's reason */
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_formats),
      cmocka_unit_test(test_text_bad_token),
      cmocka_unit_test(test_text_nonfinite),
      cmocka_unit_test(test_text_decimal_comma),
      cmocka_unit_test(test_text_empty),
      cmocka_unit_test(test_silent_file),
      cmocka_unit_test(test_text_nul),
      cmocka_unit_test(test_text_endless),
      cmocka_unit_test(test_text_stray_byte),
      cmocka_unit_test(test_text_bom),
      cmocka_unit_test(test_text_cr_lines),
      cmocka_unit_test(test_npy_roundtrip),
      cmocka_unit_test(test_npy_truncated),
      cmocka_unit_test(test_npy_bad_magic),
      cmocka_unit_test(test_npy_dtypes),
      cmocka_unit_test(test_npy_absurd_shape),
      cmocka_unit_test(test_npy_limit_edges),
      cmocka_unit_test(test_npy_header_syntax),
      cmocka_unit_test(test_npy_nonfinite),
      cmocka_unit_test(test_npy_fuzz),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_file_prefix),
      cmocka_unit_test(test_fifo),
      cmocka_unit_test(test_random_bytes),
      cmocka_unit_test(test_audio_wav_s16),
      cmocka_unit_test(test_audio_wav_f32),
      cmocka_unit_test(test_audio_flac),
      cmocka_unit_test(test_audio_resample),
      cmocka_unit_test(test_audio_resample_gain),
      cmocka_unit_test(test_audio_resample_edges),
      cmocka_unit_test(test_audio_u8_resampled),
      cmocka_unit_test(test_audio_nonfinite),
      cmocka_unit_test(test_audio_truncated),
      cmocka_unit_test(test_audio_pcm_levels),
      cmocka_unit_test(test_audio_wav_streamed),
    cmocka_unit_test(test_audio_wav_libav_misreads),
      cmocka_unit_test(test_audio_rates),
      cmocka_unit_test(test_audio_lossy_priming),
      cmocka_unit_test(test_audio_lossy_quiet),
      cmocka_unit_test(test_audio_lossy_truncated),
      cmocka_unit_test(test_audio_ogg_whole),
      cmocka_unit_test(test_audio_no_audio),
      cmocka_unit_test(test_audio_decoded_limit),
      cmocka_unit_test(test_audio_url),
      cmocka_unit_test(test_audio_missing),
  };
  check_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, fixture_cleanup);
}
