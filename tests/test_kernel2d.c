/* 2D / temporal kernels: presets against values computed here in float64
 * (or written out), and the text / .npy loaders: seeded random kernels are
 * written in every supported form and read back; hostile files must fail
 * with the right status and a message naming the file and the position. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cudafilter/kernel2d.h"
#include "fixture.h"
#include "ref.h"

static ref_rng rng;

static void expect_ok(cf_status got, const char *what)
{
  if (got != CF_OK)
    print_error("%s: %s\n", what, cf_last_error());
  assert_int_equal(got, CF_OK);
}

/* A failed call: status, no kernel, and a message holding both keys. */
static void expect_error(cf_status got, cf_kernel2d *const *k, cf_status want,
                         const char *key1, const char *key2)
{
  const char *msg = cf_last_error();
  if (got != want || !strstr(msg, key1) || !strstr(msg, key2))
    print_error("got %s \"%s\"; want %s with \"%s\" and \"%s\"\n",
                cf_status_name(got), msg, cf_status_name(want), key1, key2);
  assert_int_equal(got, want);
  assert_null(*k);
  assert_non_null(strstr(msg, key1));
  assert_non_null(strstr(msg, key2));
}

/* k is t x kh x kw and each tap within rel * |want| + abs of want. */
static void expect_kernel(const cf_kernel2d *k, unsigned t, unsigned kh,
                          unsigned kw, const double *want, double rel,
                          double abs_tol)
{
  assert_non_null(k);
  if (cf_kernel2d_frames(k) != t || cf_kernel2d_height(k) != kh ||
      cf_kernel2d_width(k) != kw)
    print_error("shape %ux%ux%u, want %ux%ux%u\n", cf_kernel2d_frames(k),
                cf_kernel2d_height(k), cf_kernel2d_width(k), t, kh, kw);
  assert_int_equal(cf_kernel2d_frames(k), t);
  assert_int_equal(cf_kernel2d_height(k), kh);
  assert_int_equal(cf_kernel2d_width(k), kw);
  const float *got = cf_kernel2d_taps(k);
  size_t n = (size_t)t * kh * kw;
  for (size_t i = 0; i < n; i++)
    if (!(fabs((double)got[i] - want[i]) <= rel * fabs(want[i]) + abs_tol)) {
      print_error("tap [%zu][%zu][%zu]: got %.9g, want %.17g\n",
                  i / ((size_t)kh * kw), i / kw % kh, i % kw, got[i], want[i]);
      fail();
    }
}

/* Float rounding of a double: |float(x) - x| <= 2^-24 |x|, with a little
 * room for the last bits of the library's own double arithmetic. */
static const double float_rel = 5.9604645e-8 * (1.0 + 1e-6);

/* ---- presets ------------------------------------------------------- */

static const char *const names[] = {"gaussian",  "box",     "sharpen",
                                    "unsharp",   "sobel-x", "sobel-y",
                                    "laplacian", "emboss"};

static void test_preset_names(void **state)
{
  (void)state;
  for (int p = 0; p < 8; p++) {
    assert_string_equal(cf_preset_name((cf_preset)p), names[p]);
    cf_preset q = (cf_preset)-1;
    expect_ok(cf_preset_from_string(names[p], &q), names[p]);
    assert_int_equal(q, p);
  }
  assert_int_equal(CF_PRESET_SOBEL_Y, 5);
  assert_string_equal(cf_preset_name((cf_preset)8), "unknown");
  assert_string_equal(cf_preset_name((cf_preset)-1), "unknown");
  static const char *const bad[] = {"Gaussian", "",     "blur",
                                    "sobel",    "box ", "sobel_x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cf_preset q = CF_PRESET_BOX;
    char key[32];
    snprintf(key, sizeof key, "'%s'", bad[i]);
    assert_int_equal(cf_preset_from_string(bad[i], &q), CF_E_INVALID);
    assert_non_null(strstr(cf_last_error(), key));
    assert_non_null(strstr(cf_last_error(), "expected gaussian, box"));
    assert_int_equal(q, CF_PRESET_BOX); /* untouched */
  }
  cf_preset q;
  assert_int_equal(cf_preset_from_string(NULL, &q), CF_E_INVALID);
  assert_non_null(strstr(cf_last_error(), "(null)"));
  assert_int_equal(cf_preset_from_string("box", NULL), CF_E_INVALID);
}

/* A preset that must be made; *k is freed by the caller. */
static cf_kernel2d *preset(cf_preset p, unsigned size, double sigma)
{
  cf_kernel2d *k = NULL;
  char what[96];
  snprintf(what, sizeof what, "preset %s size %u sigma %g", cf_preset_name(p),
           size, sigma);
  expect_ok(cf_kernel2d_preset(p, size, sigma, &k), what);
  return k;
}

static void test_preset_fixed(void **state)
{
  (void)state;
  static const struct {
    cf_preset p;
    double taps[9];
  } fixed[] = {
      {CF_PRESET_SHARPEN, {0, -1, 0, -1, 5, -1, 0, -1, 0}},
      {CF_PRESET_SOBEL_X, {1, 0, -1, 2, 0, -2, 1, 0, -1}},
      {CF_PRESET_SOBEL_Y, {1, 2, 1, 0, 0, 0, -1, -2, -1}},
      {CF_PRESET_LAPLACIAN, {0, 1, 0, 1, -4, 1, 0, 1, 0}},
      {CF_PRESET_EMBOSS, {-2, -1, 0, -1, 1, 1, 0, 1, 2}},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    for (unsigned size = 0; size <= 3; size += 3) {
      cf_kernel2d *k = preset(fixed[i].p, size, 0.0);
      expect_kernel(k, 1, 3, 3, fixed[i].taps, 0.0, 0.0);
      cf_kernel2d_free(k);
    }
}

static void test_preset_box(void **state)
{
  (void)state;
  unsigned sizes[12] = {0, 1, 2, 3, 4, 5, 9, 16};
  for (size_t i = 8; i < 12; i++)
    sizes[i] = (unsigned)ref_rng_range(&rng, 1, 64);
  for (size_t i = 0; i < 12; i++) {
    unsigned n = sizes[i] ? sizes[i] : 3;
    cf_kernel2d *k = preset(CF_PRESET_BOX, sizes[i], 0.0);
    double *want = malloc((size_t)n * n * sizeof *want);
    for (size_t j = 0; j < (size_t)n * n; j++)
      want[j] = 1.0 / ((double)n * (double)n);
    expect_kernel(k, 1, n, n, want, float_rel, 0.0);
    free(want);
    cf_kernel2d_free(k);
  }
  /* The largest side is accepted. */
  cf_kernel2d *k = preset(CF_PRESET_BOX, CF_KERNEL2D_MAX_SIDE, 0.0);
  assert_int_equal(cf_kernel2d_width(k), CF_KERNEL2D_MAX_SIDE);
  assert_true(cf_kernel2d_taps(k)[12345] == (float)(1.0 / (4096.0 * 4096.0)));
  cf_kernel2d_free(k);
}

/* The reference: outer(g, g), g[i] = exp(-(i - c)^2 / (2 sigma^2)) / sum,
 * with delta_weight * delta(n/2, n/2) added (unsharp: 2, gaussian: 0) and
 * the gaussian part scaled by sign. */
static double *gaussian_ref(unsigned n, double sigma, double delta_weight,
                            double sign)
{
  double *g = malloc(n * sizeof *g), sum = 0.0;
  double *k = malloc((size_t)n * n * sizeof *k);
  for (unsigned i = 0; i < n; i++) {
    double d = i - (n - 1) / 2.0;
    g[i] = exp(-(d * d) / (2.0 * sigma * sigma));
    sum += g[i];
  }
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++)
      k[i * n + j] = sign * (g[i] / sum) * (g[j] / sum) +
                     (i == n / 2 && j == n / 2 ? delta_weight : 0.0);
  free(g);
  return k;
}

/* Sizes with their default sigma, 0.3 ((N - 1) / 2 - 1) + 0.8, written
 * out. */
static const struct {
  unsigned n;
  double sigma;
} default_sigma[] = {{1, 0.5}, {2, 0.65}, {3, 0.8},  {4, 0.95}, {5, 1.1},
                     {7, 1.4}, {9, 1.7},  {15, 2.6}, {31, 5.0}, {0, 1.1}};

static void check_gaussian(unsigned size, double sigma, double ref_sigma)
{
  unsigned n = size ? size : 5;
  cf_kernel2d *k = preset(CF_PRESET_GAUSSIAN, size, sigma);
  double *want = gaussian_ref(n, ref_sigma, 0.0, 1.0);
  expect_kernel(k, 1, n, n, want, float_rel, 1e-45); /* subnormals */
  const float *t = cf_kernel2d_taps(k);
  double sum = 0.0;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++) {
      float v = t[i * n + j];
      sum += v;
      /* Exactly symmetric: transposed and mirrored both ways. */
      assert_true(v == t[j * n + i]);
      assert_true(v == t[(n - 1 - i) * n + j]);
      assert_true(v == t[i * n + (n - 1 - j)]);
      assert_true(v > 0.0f || (v == 0.0f && want[i * n + j] < 1e-38));
    }
  if (!(fabs(sum - 1.0) <= 1e-6))
    print_error("gaussian %u sigma %g: taps sum to %.17g\n", n, sigma, sum);
  assert_true(fabs(sum - 1.0) <= 1e-6);
  free(want);
  cf_kernel2d_free(k);
}

static void test_preset_gaussian(void **state)
{
  (void)state;
  /* The default: 5 x 5, sigma 1.1; g written out (from the formula). */
  static const double g5[5] = {0.07076637133154648, 0.24446039891162386,
                               0.3695464595136593, 0.24446039891162386,
                               0.07076637133154648};
  double want[25];
  for (int i = 0; i < 25; i++)
    want[i] = g5[i / 5] * g5[i % 5];
  cf_kernel2d *k = preset(CF_PRESET_GAUSSIAN, 0, 0.0);
  expect_kernel(k, 1, 5, 5, want, 1e-7, 0.0);
  cf_kernel2d_free(k);
  k = preset(CF_PRESET_GAUSSIAN, 5, 1.1);
  expect_kernel(k, 1, 5, 5, want, 1e-7, 0.0);
  cf_kernel2d_free(k);
  k = preset(CF_PRESET_GAUSSIAN, 0, 1.1);
  expect_kernel(k, 1, 5, 5, want, 1e-7, 0.0);
  cf_kernel2d_free(k);
  for (size_t i = 0; i < sizeof default_sigma / sizeof *default_sigma; i++)
    check_gaussian(default_sigma[i].n, 0.0, default_sigma[i].sigma);
  for (int round = 0; round < 20; round++) {
    unsigned n = (unsigned)ref_rng_range(&rng, round < 10 ? 1 : 0, 41);
    double sigma = 0.2 * pow(100.0, ref_rng_unit(&rng)); /* 0.2 .. 20 */
    check_gaussian(n, sigma, sigma);
  }
  /* A 1 x 1 Gaussian is the identity whatever sigma. */
  double one = 1.0;
  k = preset(CF_PRESET_GAUSSIAN, 1, 3.0);
  expect_kernel(k, 1, 1, 1, &one, 0.0, 0.0);
  cf_kernel2d_free(k);
  /* Tiny sigma: all weight on the central tap(s), no 0/0; huge sigma: a
   * box. */
  double delta3[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
  k = preset(CF_PRESET_GAUSSIAN, 3, 1e-3);
  expect_kernel(k, 1, 3, 3, delta3, 0.0, 0.0);
  cf_kernel2d_free(k);
  double mid4[16] = {0, 0, 0, 0, 0, .25, .25, 0, 0, .25, .25, 0, 0, 0, 0, 0};
  k = preset(CF_PRESET_GAUSSIAN, 4, 1e-300);
  expect_kernel(k, 1, 4, 4, mid4, 0.0, 0.0);
  cf_kernel2d_free(k);
  double box4[16];
  for (int i = 0; i < 16; i++)
    box4[i] = 1.0 / 16;
  k = preset(CF_PRESET_GAUSSIAN, 4, 1e300);
  expect_kernel(k, 1, 4, 4, box4, 0.0, 0.0);
  cf_kernel2d_free(k);
}

static void check_unsharp(unsigned size, double sigma, double ref_sigma)
{
  unsigned n = size ? size : 5;
  cf_kernel2d *k = preset(CF_PRESET_UNSHARP, size, sigma);
  double *want = gaussian_ref(n, ref_sigma, 2.0, -1.0);
  expect_kernel(k, 1, n, n, want, float_rel, 1e-15);
  double sum = 0.0;
  for (size_t i = 0; i < (size_t)n * n; i++)
    sum += cf_kernel2d_taps(k)[i];
  assert_true(fabs(sum - 1.0) <= 1e-6); /* 2 - 1: brightness kept */
  free(want);
  cf_kernel2d_free(k);
}

static void test_preset_unsharp(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof default_sigma / sizeof *default_sigma; i++)
    check_unsharp(default_sigma[i].n, 0.0, default_sigma[i].sigma);
  for (int round = 0; round < 10; round++) {
    unsigned n = (unsigned)ref_rng_range(&rng, 1, 25);
    double sigma = 0.2 * pow(50.0, ref_rng_unit(&rng));
    check_unsharp(n, sigma, sigma);
  }
  /* Unsharp 5 at its centre: 2 - g5[2]^2. */
  cf_kernel2d *k = preset(CF_PRESET_UNSHARP, 0, 0.0);
  double centre = 2.0 - 0.3695464595136593 * 0.3695464595136593;
  assert_true(cf_kernel2d_taps(k)[12] == (float)centre);
  cf_kernel2d_free(k);
}

/* A refused preset: CF_E_INVALID, no kernel, message with both keys. */
static void expect_refused(cf_preset p, unsigned size, double sigma,
                           const char *key1, const char *key2)
{
  cf_kernel2d *k = (cf_kernel2d *)&rng; /* must be cleared */
  cf_status s = cf_kernel2d_preset(p, size, sigma, &k);
  expect_error(s, &k, CF_E_INVALID, key1, key2);
}

static void test_preset_refused(void **state)
{
  (void)state;
  static const cf_preset fixed[] = {CF_PRESET_SHARPEN, CF_PRESET_SOBEL_X,
                                    CF_PRESET_SOBEL_Y, CF_PRESET_LAPLACIAN,
                                    CF_PRESET_EMBOSS};
  static const unsigned sizes[] = {1, 2, 4, 5, 4097, UINT_MAX};
  char key[64];
  for (size_t i = 0; i < 5; i++)
    for (size_t j = 0; j < sizeof sizes / sizeof *sizes; j++) {
      snprintf(key, sizeof key, "size %u", sizes[j]);
      expect_refused(fixed[i], sizes[j], 0.0, cf_preset_name(fixed[i]), key);
    }
  /* Presets without a sigma refuse one, even a NaN. */
  static const cf_preset no_sigma[] = {CF_PRESET_BOX,       CF_PRESET_SHARPEN,
                                       CF_PRESET_SOBEL_X,   CF_PRESET_SOBEL_Y,
                                       CF_PRESET_LAPLACIAN, CF_PRESET_EMBOSS};
  static const double sigmas[] = {1.0, -1.0, 1e-9, NAN, INFINITY};
  for (size_t i = 0; i < 6; i++)
    for (size_t j = 0; j < sizeof sigmas / sizeof *sigmas; j++)
      expect_refused(no_sigma[i], 0, sigmas[j], cf_preset_name(no_sigma[i]),
                     "takes no sigma");
  /* Gaussian and unsharp: sigma finite and > 0; sizes within the limit. */
  static const double bad_sigma[] = {NAN,       -NAN, INFINITY,
                                     -INFINITY, -1.0, -1e-300};
  for (int p = 0; p < 2; p++) {
    cf_preset pr = p ? CF_PRESET_UNSHARP : CF_PRESET_GAUSSIAN;
    for (size_t j = 0; j < sizeof bad_sigma / sizeof *bad_sigma; j++)
      expect_refused(pr, 5, bad_sigma[j], cf_preset_name(pr),
                     "must be finite and > 0");
  }
  static const cf_preset sized[] = {CF_PRESET_GAUSSIAN, CF_PRESET_BOX,
                                    CF_PRESET_UNSHARP};
  for (size_t i = 0; i < 3; i++) {
    expect_refused(sized[i], 4097, 0.0, cf_preset_name(sized[i]),
                   "size 4097 is larger than the limit of 4096");
    snprintf(key, sizeof key, "size %u", UINT_MAX);
    expect_refused(sized[i], UINT_MAX, 0.0, cf_preset_name(sized[i]), key);
  }
  expect_refused((cf_preset)8, 0, 0.0, "preset 8", "not a preset");
  expect_refused((cf_preset)-1, 0, 0.0, "preset -1", "not a preset");
  assert_int_equal(cf_kernel2d_preset(CF_PRESET_BOX, 0, 0.0, NULL),
                   CF_E_INVALID);
  assert_non_null(strstr(cf_last_error(), "NULL"));
  /* -0.0 is 0: the default. */
  cf_kernel2d *k = preset(CF_PRESET_SOBEL_X, 0, -0.0);
  cf_kernel2d_free(k);
}

/* ---- kernels for the loaders --------------------------------------- */

typedef struct ref_kernel {
  unsigned t, kh, kw;
  double *v; /* t * kh * kw, row-major */
} ref_kernel;

static size_t ref_count(const ref_kernel *r)
{
  return (size_t)r->t * r->kh * r->kw;
}

/* Random sizes (T 1..4, Kh, Kw 1..9) and float32 taps spread over several
 * decades, or (f64) full doubles. */
static void random_kernel(ref_kernel *r, int f64)
{
  r->t = (unsigned)ref_rng_range(&rng, 1, 4);
  r->kh = (unsigned)ref_rng_range(&rng, 1, 9);
  r->kw = (unsigned)ref_rng_range(&rng, 1, 9);
  r->v = malloc(ref_count(r) * sizeof *r->v);
  for (size_t i = 0; i < ref_count(r); i++) {
    double scale = pow(10.0, (double)ref_rng_range(&rng, 0, 9) - 6.0);
    r->v[i] = f64 ? (2.0 * ref_rng_unit(&rng) - 1.0) * scale
                  : (double)(ref_rng_sym(&rng) * (float)scale);
  }
}

/* What the loaders must give: each value rounded to float. */
static void expect_ref(const cf_kernel2d *k, const ref_kernel *r)
{
  double *want = malloc(ref_count(r) * sizeof *want);
  for (size_t i = 0; i < ref_count(r); i++)
    want[i] = (double)(float)r->v[i];
  expect_kernel(k, r->t, r->kh, r->kw, want, 0.0, 0.0);
  free(want);
}

/* ---- text ---------------------------------------------------------- */

/* A text buffer that knows the line and column of its next byte. */
typedef struct text {
  char *buf;
  size_t len, cap;
  unsigned long line, col;
} text;

static void text_init(text *t)
{
  *t = (text){.line = 1, .col = 1};
}

static void put(text *t, const char *s)
{
  size_t n = strlen(s);
  if (t->len + n + 1 > t->cap) {
    t->cap = (t->len + n + 1) * 2;
    t->buf = realloc(t->buf, t->cap);
    assert_non_null(t->buf);
  }
  memcpy(t->buf + t->len, s, n + 1);
  t->len += n;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\n')
      t->line++, t->col = 1;
    else
      t->col++;
}

/* Numbers in %e form only (test_all_zeros: "%g" writes 0 and 1e-30
 * without a point, and a line of them apart by commas and spaces is
 * refused as decimal commas, as the loader is meant to) */
static int numbers_with_point;

static void put_number(text *t, double v)
{
  static const char *const fmts[] = {"%.9g", "%.8e", "%.8E", "%+.9g"};
  char num[64];
  snprintf(num, sizeof num,
           fmts[numbers_with_point ? ref_rng_range(&rng, 1, 2)
                                   : ref_rng_range(&rng, 0, 3)],
           v);
  put(t, num);
}

static const char *pick(const char *const *list, size_t n)
{
  return list[ref_rng_range(&rng, 0, n - 1)];
}
#define PICK(list) pick(list, sizeof list / sizeof *list)

static const char *const seps[] = {" ", ",", ", ", "\t", " ,\t", "  ", " , "};
static const char *const comments[] = {"# a comment: 1 2 abc, nan", "#", "#x 3",
                                       "  # 4, 5"};
static const char *const blanks[] = {"", " ", "\t", " , ", ",", "\r"};

/* A line end: CRLF or LF (as the file's style says), maybe a comment. */
static void put_eol(text *t, int crlf, int comment_ok)
{
  if (comment_ok && ref_rng_range(&rng, 0, 3) == 0)
    put(t, PICK(comments));
  put(t, crlf ? "\r\n" : "\n");
}

static void write_text(const char *path, const ref_kernel *r)
{
  int crlf = (int)ref_rng_range(&rng, 0, 1);
  text t;
  text_init(&t);
  if (ref_rng_range(&rng, 0, 1)) {
    put(&t, "# a test kernel");
    put_eol(&t, crlf, 0);
  }
  if (ref_rng_range(&rng, 0, 3) == 0)
    put_eol(&t, crlf, 0); /* a leading blank line */
  for (unsigned tau = 0; tau < r->t; tau++) {
    if (tau) { /* one or more blank lines, maybe a comment line after */
      for (size_t b = ref_rng_range(&rng, 1, 3); b > 0; b--) {
        put(&t, PICK(blanks));
        put_eol(&t, crlf, 0);
      }
      if (ref_rng_range(&rng, 0, 1)) {
        put(&t, "# tau");
        put_eol(&t, crlf, 0);
      }
    }
    for (unsigned m = 0; m < r->kh; m++) {
      if (m && ref_rng_range(&rng, 0, 5) == 0) { /* a comment-only line */
        put(&t, PICK(comments));
        put_eol(&t, crlf, 0);
      }
      if (ref_rng_range(&rng, 0, 2) == 0)
        put(&t, PICK(seps)); /* leading separators */
      for (unsigned n = 0; n < r->kw; n++) {
        put_number(&t, r->v[((size_t)tau * r->kh + m) * r->kw + n]);
        if (n + 1 < r->kw || ref_rng_range(&rng, 0, 2) == 0)
          put(&t, PICK(seps));
      }
      /* The last line may end without a newline. */
      if (tau + 1 < r->t || m + 1 < r->kh || ref_rng_range(&rng, 0, 1))
        put_eol(&t, crlf, 1);
    }
  }
  if (ref_rng_range(&rng, 0, 3) == 0) {
    put(&t, crlf ? "\r\n\r\n# end" : "\n\n# end");
  }
  write_bytes(path, t.buf, t.len);
  free(t.buf);
}

static void test_text_roundtrip(void **state)
{
  (void)state;
  for (int round = 0; round < 60; round++) {
    ref_kernel r;
    random_kernel(&r, 0);
    const char *path = fixture("k.txt");
    write_text(path, &r);
    cf_kernel2d *k;
    cf_status s = round % 2 ? cf_kernel2d_load(path, &k)
                            : cf_kernel2d_load_text(path, &k);
    expect_ok(s, path);
    expect_ref(k, &r);
    cf_kernel2d_free(k);
    free(r.v);
  }
}

static void test_text_example(void **state)
{
  (void)state;
  /* CRLF, comments, a separator of a blank line and a line of only
   * spaces and commas; comment-only lines neither rows nor separators. */
  const char *body = "# two temporal taps\r\n1, 2\r\n  3 4 # row 2\r\n"
                     "# not a separator\r\n\r\n \t, \r\n# tau 1\r\n5 6\r\n"
                     "# still tau 1\r\n7,8,\r\n\r\n";
  const char *path = fixture("example.txt");
  write_bytes(path, body, strlen(body));
  cf_kernel2d *k;
  expect_ok(cf_kernel2d_load(path, &k), path);
  double want8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  expect_kernel(k, 2, 2, 2, want8, 0.0, 0.0);
  cf_kernel2d_free(k);
  /* A blank line inside the second block makes it ragged. */
  body = "# two temporal taps\r\n1, 2\r\n  3 4 # row 2\r\n"
         "# not a separator\r\n\r\n \t, \r\n# tau 1\r\n5 6\r\n"
         "\r\n7,8,\r\n";
  write_bytes(path, body, strlen(body));
  char where[1100];
  snprintf(where, sizeof where, "%s:8:1: ", path);
  expect_error(cf_kernel2d_load_text(path, &k), &k, CF_E_FORMAT, where,
               "temporal block 2 (tau = 1) has 1 row, expected 2 as in the "
               "first block (line 2)");
  /* One number; one line (a 1D kernel as a single row). */
  write_bytes(path, "0.5", 3);
  expect_ok(cf_kernel2d_load(path, &k), path);
  double half = 0.5;
  expect_kernel(k, 1, 1, 1, &half, 0.0, 0.0);
  cf_kernel2d_free(k);
  write_bytes(path, "1,2,3,\n", 7);
  expect_ok(cf_kernel2d_load_text(path, &k), path);
  expect_kernel(k, 1, 1, 3, want8, 0.0, 0.0);
  cf_kernel2d_free(k);
}

/* Text of `rows` rows in blocks: row i of block b has lens[b][i] numbers.
 * Records the position of number `mark_n` of row `mark_row` (counted over
 * the whole file), or of its first number when mark_n is past its end. */
typedef struct grid_spec {
  unsigned blocks;
  unsigned rows[8];
  unsigned lens[8][12];
} grid_spec;

static void write_grid(const char *path, const grid_spec *g, unsigned mark_row,
                       unsigned mark_n, unsigned long *line, unsigned long *col,
                       const char *bad_token, unsigned bad_row, unsigned bad_n)
{
  text t;
  text_init(&t);
  int crlf = (int)ref_rng_range(&rng, 0, 1);
  unsigned row = 0;
  for (unsigned b = 0; b < g->blocks; b++) {
    if (b) {
      put(&t, PICK(blanks));
      put_eol(&t, crlf, 0);
    }
    for (unsigned i = 0; i < g->rows[b]; i++, row++) {
      if (row == mark_row) {
        *line = t.line;
        *col = t.col;
      }
      for (unsigned n = 0; n < g->lens[b][i]; n++) {
        if (row == mark_row && n == mark_n) {
          *line = t.line;
          *col = t.col;
        }
        if (row == bad_row && n == bad_n && bad_token)
          put(&t, bad_token);
        else
          put_number(&t, (double)ref_rng_sym(&rng));
        put(&t, n + 1 < g->lens[b][i] ? PICK(seps) : "");
      }
      put_eol(&t, crlf, 1);
    }
  }
  write_bytes(path, t.buf, t.len);
  free(t.buf);
}

/* A regular grid: blocks x kh rows of kw numbers. */
static void regular_grid(grid_spec *g, unsigned blocks, unsigned kh,
                         unsigned kw)
{
  *g = (grid_spec){.blocks = blocks};
  for (unsigned b = 0; b < blocks; b++) {
    g->rows[b] = kh;
    for (unsigned i = 0; i < kh; i++)
      g->lens[b][i] = kw;
  }
}

static void expect_bad_file(const char *path, cf_status want,
                            unsigned long line, unsigned long col,
                            const char *key)
{
  char where[1100];
  snprintf(where, sizeof where, "%s:%lu:%lu: ", path, line, col);
  cf_kernel2d *k = (cf_kernel2d *)&rng;
  expect_error(cf_kernel2d_load_text(path, &k), &k, want, where, key);
  k = (cf_kernel2d *)&rng;
  expect_error(cf_kernel2d_load(path, &k), &k, want, where, key);
}

static void test_text_ragged_rows(void **state)
{
  (void)state;
  for (int round = 0; round < 30; round++) {
    int longer = round % 2;
    unsigned blocks = (unsigned)ref_rng_range(&rng, 1, 4);
    unsigned kh = (unsigned)ref_rng_range(&rng, blocks == 1 ? 2 : 1, 6);
    unsigned kw = (unsigned)ref_rng_range(&rng, longer ? 1 : 2, 8);
    grid_spec g;
    regular_grid(&g, blocks, kh, kw);
    unsigned bad = (unsigned)ref_rng_range(&rng, 1, blocks * kh - 1);
    unsigned len = longer ? kw + (unsigned)ref_rng_range(&rng, 1, 3)
                          : (unsigned)ref_rng_range(&rng, 1, kw - 1);
    g.lens[bad / kh][bad % kh] = len;
    unsigned long line = 0, col = 0;
    const char *path = fixture("ragged.txt");
    /* Longer: the position of the first extra number; shorter: the row. */
    write_grid(path, &g, bad, longer ? kw : 99, &line, &col, NULL, 0, 0);
    char key[128];
    snprintf(key, sizeof key,
             "row has %u numbers, expected %u as in the "
             "first row (line ",
             len, kw);
    expect_bad_file(path, CF_E_FORMAT, line, col, key);
  }
}

static void test_text_ragged_blocks(void **state)
{
  (void)state;
  for (int round = 0; round < 20; round++) {
    unsigned blocks = (unsigned)ref_rng_range(&rng, 2, 5);
    unsigned kh = (unsigned)ref_rng_range(&rng, 1, 6);
    unsigned kw = (unsigned)ref_rng_range(&rng, 1, 8);
    grid_spec g;
    regular_grid(&g, blocks, kh, kw);
    unsigned b = (unsigned)ref_rng_range(&rng, 1, blocks - 1);
    unsigned rows = kh == 1 || round % 2 ? kh + 1 : kh - 1;
    g.rows[b] = rows;
    for (unsigned i = 0; i < rows; i++)
      g.lens[b][i] = kw;
    unsigned long line = 0, col = 0;
    const char *path = fixture("blocks.txt");
    write_grid(path, &g, b * kh, 0, &line, &col, NULL, 0, 0);
    char key[160];
    snprintf(key, sizeof key,
             "temporal block %u (tau = %u) has %u row%s, "
             "expected %u as in the first block (line ",
             b + 1, b, rows, rows == 1 ? "" : "s", kh);
    expect_bad_file(path, CF_E_FORMAT, line, col, key);
  }
}

static void test_text_bad_tokens(void **state)
{
  (void)state;
  static const char *const bad[][2] = {
      {"nan", "'nan' is NaN"},
      {"-NaN", "is NaN"},
      {"inf", "'inf' is infinite"},
      {"-Infinity", "is infinite"},
      {"1e39", "is outside the float32 range"},
      {"abc", "'abc' is not a number"},
      {"1.5x", "'1.5x' is not a number"},
      {"--1", "is not a number"},
      {"1;2", "is not a number"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    grid_spec g;
    unsigned blocks = (unsigned)ref_rng_range(&rng, 1, 3);
    unsigned kh = (unsigned)ref_rng_range(&rng, 1, 5);
    unsigned kw = (unsigned)ref_rng_range(&rng, 1, 6);
    regular_grid(&g, blocks, kh, kw);
    unsigned row = (unsigned)ref_rng_range(&rng, 0, blocks * kh - 1);
    unsigned n = (unsigned)ref_rng_range(&rng, 0, kw - 1);
    unsigned long line = 0, col = 0;
    const char *path = fixture("token.txt");
    write_grid(path, &g, row, n, &line, &col, bad[i][0], row, n);
    expect_bad_file(path, CF_E_FORMAT, line, col, bad[i][1]);
  }
}

/* A 3x3 kernel written with decimal commas is refused where its first
 * row shows them, not read as a 3x6 grid. */
static void test_text_decimal_comma(void **state)
{
  (void)state;
  const char *body = "# blur\n0,0625 0,125 0,0625\n0,125 0,25 0,125\n"
                     "0,0625 0,125 0,0625\n";
  const char *path = fixture("commas.txt");
  write_bytes(path, body, strlen(body));
  expect_bad_file(path, CF_E_FORMAT, 2, 1, "decimal commas?");
}

static void expect_no_taps(const char *body)
{
  const char *path = fixture("empty.txt");
  write_bytes(path, body, strlen(body));
  cf_kernel2d *k;
  expect_error(cf_kernel2d_load_text(path, &k), &k, CF_E_FORMAT, path,
               "no taps");
  expect_error(cf_kernel2d_load(path, &k), &k, CF_E_FORMAT, path, "no taps");
}

static void test_text_empty(void **state)
{
  (void)state;
  expect_no_taps("");
  expect_no_taps("# only\n  # comments, 1 2 3\r\n");
  expect_no_taps("\n\n \t\r\n , ,\n\n");
}

/* A token without end (a sparse file of a TiB of NUL bytes) is refused
 * once it is too long, not read until its end; /dev/zero, no regular
 * file, is refused as such (a kernel file is read more than once); a NUL
 * in a token shows in the message. */
static void test_text_endless(void **state)
{
  (void)state;
  cf_kernel2d *k;
  const char *endless = fixture("endless.txt");
  write_bytes(endless, "", 0);
  if (truncate(endless, (off_t)1 << 40) != 0)
    assert_int_equal(truncate(endless, (off_t)1 << 31), 0);
  expect_error(cf_kernel2d_load_text(endless, &k), &k, CF_E_FORMAT,
               ":1:1: '???", "is too long to be a number");
  unlink(endless);
  if (access("/dev/zero", R_OK) == 0)
    expect_error(cf_kernel2d_load_text("/dev/zero", &k), &k, CF_E_IO,
                 "/dev/zero", "not a regular file but a character device");
  const char *path = fixture("nul.txt");
  write_bytes(path, "1 2\n3 4\0x\n", 11);
  expect_error(cf_kernel2d_load_text(path, &k), &k, CF_E_FORMAT, path,
               ":2:3: '4?x' is not a number");
}

static void test_text_limits(void **state)
{
  (void)state;
  const char *path = fixture("limits.txt");
  text t;
  /* 65 temporal blocks of 1 x 1. */
  text_init(&t);
  for (unsigned b = 0; b < CF_KERNEL2D_MAX_FRAMES; b++)
    put(&t, "1\n\n");
  unsigned long line = t.line;
  put(&t, "2\n");
  write_bytes(path, t.buf, t.len);
  free(t.buf);
  expect_bad_file(path, CF_E_FORMAT, line, 1,
                  "more than the limit of 64 temporal blocks");
  /* 64 of them are fine. */
  text_init(&t);
  for (unsigned b = 0; b < CF_KERNEL2D_MAX_FRAMES; b++)
    put(&t, "1\n\n");
  write_bytes(path, t.buf, t.len);
  free(t.buf);
  cf_kernel2d *k;
  expect_ok(cf_kernel2d_load(path, &k), path);
  assert_int_equal(cf_kernel2d_frames(k), CF_KERNEL2D_MAX_FRAMES);
  cf_kernel2d_free(k);
  /* A row of 4097 numbers. */
  text_init(&t);
  for (unsigned n = 0; n < CF_KERNEL2D_MAX_SIDE; n++)
    put(&t, "0 ");
  unsigned long col = t.col;
  put(&t, "1\n");
  write_bytes(path, t.buf, t.len);
  free(t.buf);
  expect_bad_file(path, CF_E_FORMAT, 1, col,
                  "more than the limit of 4096 numbers in a row");
  /* 4097 rows. */
  text_init(&t);
  for (unsigned n = 0; n < CF_KERNEL2D_MAX_SIDE; n++)
    put(&t, "0\n");
  put(&t, " 1\n");
  write_bytes(path, t.buf, t.len);
  free(t.buf);
  expect_bad_file(path, CF_E_FORMAT, CF_KERNEL2D_MAX_SIDE + 1, 2,
                  "more than the limit of 4096 rows");
}

/* Random printable junk: never a crash; a kernel or a message with the
 * file name. */
static void test_text_fuzz(void **state)
{
  (void)state;
  static const char alphabet[] = "0123456789 ,\t\n\r#.e-+nai";
  char body[256];
  const char *path = fixture("fuzz.txt");
  for (int round = 0; round < 300; round++) {
    size_t n = ref_rng_range(&rng, 0, sizeof body);
    for (size_t i = 0; i < n; i++)
      body[i] = alphabet[ref_rng_range(&rng, 0, sizeof alphabet - 2)];
    write_bytes(path, body, n);
    cf_kernel2d *k;
    cf_status s = cf_kernel2d_load(path, &k);
    assert_true(s == CF_OK || s == CF_E_FORMAT);
    if (s == CF_OK) {
      assert_true(cf_kernel2d_frames(k) >= 1 && cf_kernel2d_width(k) >= 1);
      cf_kernel2d_free(k);
    } else {
      assert_null(k);
      assert_non_null(strstr(cf_last_error(), path));
    }
  }
}

/* ---- .npy ---------------------------------------------------------- */

typedef struct npy_spec {
  int ndim3;   /* 3D (T, Kh, Kw) rather than 2D (Kh, Kw) */
  size_t size; /* 4 or 8 */
  char order;  /* '<', '>', '=' or '|' */
  int fortran;
  int version;
} npy_spec;

/* Writes r as the spec says; returns the file size. */
static size_t write_npy(const char *path, const npy_spec *sp,
                        const ref_kernel *r)
{
  char head[640], shape[96], descr[8];
  if (sp->ndim3)
    snprintf(shape, sizeof shape, "(%u, %u, %u)", r->t, r->kh, r->kw);
  else
    snprintf(shape, sizeof shape, "(%u, %u)", r->kh, r->kw);
  snprintf(descr, sizeof descr, "%cf%zu", sp->order, sp->size);
  size_t hl = npy_header(head, sp->version, descr, sp->fortran, shape);
  size_t d[3] = {r->t, r->kh, r->kw}, count = ref_count(r);
  unsigned char *data = malloc(hl + count * sp->size);
  memcpy(data, head, hl);
  int swap = sp->order == '>'; /* the tests run on little-endian hosts */
  size_t n = 0;
  for (size_t a = 0; a < d[0]; a++)
    for (size_t b = 0; b < d[1]; b++)
      for (size_t c = 0; c < d[2]; c++) {
        size_t at = sp->fortran ? a + b * d[0] + c * d[0] * d[1] : n;
        npy_put_elem(data + hl + at * sp->size, r->v[n++], sp->size, swap);
      }
  write_bytes(path, data, hl + count * sp->size);
  free(data);
  return hl + count * sp->size;
}

static void test_npy_roundtrip(void **state)
{
  (void)state;
  assert_int_equal(__BYTE_ORDER__, __ORDER_LITTLE_ENDIAN__);
  static const char orders[] = {'<', '>', '=', '|'};
  for (unsigned i = 0; i < 64; i++) {
    npy_spec sp = {.size = i & 1 ? 8 : 4,
                   .order = orders[(i >> 1) & 3],
                   .fortran = (i >> 3) & 1,
                   .ndim3 = (i >> 4) & 1,
                   .version = 1 + (int)(i % 3)};
    ref_kernel r;
    random_kernel(&r, sp.size == 8);
    if (!sp.ndim3)
      r.t = 1; /* keeps the first Kh x Kw taps */
    const char *path = fixture("k.npy");
    write_npy(path, &sp, &r);
    cf_kernel2d *k;
    cf_status s =
        i & 32 ? cf_kernel2d_load(path, &k) : cf_kernel2d_load_npy(path, &k);
    expect_ok(s, path);
    expect_ref(k, &r);
    cf_kernel2d_free(k);
    free(r.v);
  }
}

/* A .npy file with a hand-written dtype and shape and `data` zero bytes. */
static const char *write_raw_npy(const char *descr, const char *shape,
                                 size_t data)
{
  char head[640];
  size_t hl = npy_header(head, 1, descr, 0, shape);
  unsigned char *buf = calloc(1, hl + data);
  memcpy(buf, head, hl);
  const char *path = fixture("raw.npy");
  write_bytes(path, buf, hl + data);
  free(buf);
  return path;
}

/* The first 4 bytes of the data of a version 1 .npy file become those of
 * v, in host order. */
static void raw_npy_set_first(const char *path, uint32_t v)
{
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  unsigned char h[10];
  assert_int_equal(fread(h, 1, 10, f), 10);
  long data = 10 + (long)(h[8] | h[9] << 8);
  assert_int_equal(fseek(f, data, SEEK_SET), 0);
  assert_int_equal(fwrite(&v, 4, 1, f), 1);
  assert_int_equal(fclose(f), 0);
}

static void expect_npy_error(const char *path, const char *key)
{
  cf_kernel2d *k = (cf_kernel2d *)&rng;
  expect_error(cf_kernel2d_load_npy(path, &k), &k, CF_E_FORMAT, path, key);
  k = (cf_kernel2d *)&rng;
  expect_error(cf_kernel2d_load(path, &k), &k, CF_E_FORMAT, path, key);
}

static void test_npy_truncated(void **state)
{
  (void)state;
  ref_kernel r;
  random_kernel(&r, 0);
  r.kw += 1; /* at least 2 taps */
  free(r.v);
  r.v = calloc(ref_count(&r), sizeof *r.v);
  npy_spec sp = {.ndim3 = 1, .size = 4, .order = '<', .version = 1};
  const char *path = fixture("trunc.npy");
  size_t size = write_npy(path, &sp, &r);
  size_t bytes = ref_count(&r) * 4, cut = ref_rng_range(&rng, 1, bytes);
  assert_int_equal(truncate(path, (off_t)(size - cut)), 0);
  char key[128];
  snprintf(key, sizeof key,
           "truncated: data at byte %zu: expected %zu "
           "bytes, the file has %zu",
           size - bytes, bytes, bytes - cut);
  expect_npy_error(path, key);
  assert_int_equal(truncate(path, 40), 0); /* inside the header */
  expect_npy_error(path, "truncated .npy header");
  free(r.v);
  path = write_raw_npy("<f4", "(2, 3)", 25);
  expect_npy_error(path, "trailing bytes");
}

static void test_npy_shapes(void **state)
{
  (void)state;
  static const char *const bad[][2] = {
      {"(5,)", "shape (5,) has 1 dimensions: need 2 (Kh x Kw) or 3 "
               "(T x Kh x Kw)"},
      {"()", "shape () has 0 dimensions"},
      {"(1, 2, 3, 4)", "shape (1, 2, 3, 4) has 4 dimensions"},
      {"(2, 2, 2, 2, 2)", "has 5 dimensions"},
      {"(0, 3)", "shape (0, 3): dimension 0 is 0"},
      {"(3, 0)", "dimension 1 is 0"},
      {"(2, 0, 3)", "dimension 1 is 0"},
      {"(2, 3, 0)", "dimension 2 is 0"},
      {"(4097, 1)", "height 4097 is more than the limit of 4096"},
      {"(1, 4097)", "width 4097 is more than the limit of 4096"},
      {"(2, 5000, 3)", "height 5000"},
      {"(65, 1, 1)", "65 temporal taps, more than the limit of 64"},
      {"(2, 4096, 4096)", "33554432 taps, more than the limit of 16777216"},
      {"(18446744073709551615, 18446744073709551615, 2)", "overflows"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    expect_npy_error(write_raw_npy("<f4", bad[i][0], 64), bad[i][1]);
  expect_npy_error(write_raw_npy("<i4", "(2, 2)", 16), "'<i4' (int32)");
  expect_npy_error(write_raw_npy("<f2", "(2, 2)", 8), "(float16)");
  /* Within the limits, but a tiny file: refused before allocating. */
  expect_npy_error(write_raw_npy("<f8", "(64, 512, 512)", 16),
                   "expected 134217728 bytes, the file has 16");
  /* The largest shapes the header allows are read (a tap not 0: a file
   * of zeros is refused, test_all_zeros). */
  const char *path = write_raw_npy("<f4", "(1, 4096)", 4 * 4096);
  raw_npy_set_first(path, 0x3f800000u); /* 1.0f */
  cf_kernel2d *k;
  expect_ok(cf_kernel2d_load_npy(path, &k), path);
  assert_int_equal(cf_kernel2d_width(k), 4096);
  cf_kernel2d_free(k);
  path = write_raw_npy(">f4", "(64, 1, 2)", 4 * 128);
  raw_npy_set_first(path, 0x0000803fu); /* 1.0f, big-endian */
  expect_ok(cf_kernel2d_load(path, &k), path);
  assert_int_equal(cf_kernel2d_frames(k), 64);
  cf_kernel2d_free(k);
}

static void test_npy_nonfinite(void **state)
{
  (void)state;
  static const double bad[] = {NAN, INFINITY, -INFINITY, 1e300};
  static const char *const what[] = {"is NaN", "is infinite", "is infinite",
                                     "outside the float32 range"};
  for (unsigned i = 0; i < 8; i++) {
    npy_spec sp = {.ndim3 = (int)(i & 1),
                   .size = (i & 3) == 3 || ref_rng_range(&rng, 0, 1) ? 8 : 4,
                   .order = ref_rng_range(&rng, 0, 1) ? '>' : '<',
                   .fortran = (int)ref_rng_range(&rng, 0, 1),
                   .version = 1};
    ref_kernel r;
    random_kernel(&r, 1);
    if (!sp.ndim3)
      r.t = 1;
    unsigned tau = (unsigned)ref_rng_range(&rng, 0, r.t - 1);
    unsigned m = (unsigned)ref_rng_range(&rng, 0, r.kh - 1);
    unsigned n = (unsigned)ref_rng_range(&rng, 0, r.kw - 1);
    r.v[((size_t)tau * r.kh + m) * r.kw + n] = bad[i & 3];
    const char *path = fixture("nan.npy");
    write_npy(path, &sp, &r);
    free(r.v);
    char key[160];
    if (sp.ndim3)
      snprintf(key, sizeof key,
               "element [%u, %u, %u] (tau %u, row %u, "
               "column %u)",
               tau, m, n, tau, m, n);
    else
      snprintf(key, sizeof key, "element [%u, %u] (row %u, column %u)", m, n, m,
               n);
    expect_npy_error(path, key);
    expect_npy_error(path, what[i & 3]);
  }
}

/* Every truncation and random byte flips of a valid file: never a crash,
 * and whatever loads is a valid kernel. */
static void test_npy_fuzz(void **state)
{
  (void)state;
  ref_kernel r = {2, 3, 2, NULL};
  r.v = calloc(ref_count(&r), sizeof *r.v);
  npy_spec sp = {.ndim3 = 1, .size = 8, .order = '<', .version = 1};
  const char *path = fixture("fuzz.npy");
  size_t size = write_npy(path, &sp, &r);
  free(r.v);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char *orig = malloc(size), *p = malloc(size);
  assert_int_equal(fread(orig, 1, size, f), size);
  fclose(f);
  cf_kernel2d *k;
  for (size_t n = 0; n < size; n++) {
    write_bytes(path, orig, n);
    assert_int_not_equal(cf_kernel2d_load_npy(path, &k), CF_OK);
    assert_null(k);
  }
  for (int round = 0; round < 1000; round++) {
    memcpy(p, orig, size);
    for (size_t j = ref_rng_range(&rng, 1, 4); j > 0; j--)
      p[ref_rng_range(&rng, 0, 127)] = (unsigned char)ref_rng_u64(&rng);
    write_bytes(path, p, size);
    cf_status s = cf_kernel2d_load(path, &k);
    assert_true(s == CF_OK || s == CF_E_FORMAT);
    if (s == CF_OK) {
      assert_true(cf_kernel2d_frames(k) >= 1);
      cf_kernel2d_free(k);
    } else {
      assert_null(k);
      assert_non_null(strstr(cf_last_error(), path));
    }
  }
  free(p);
  free(orig);
}

/* ---- any file ------------------------------------------------------ */

/* A kernel file whose every tap is 0 (or -0) blacks out every picture it
 * is set on: refused by every loader, naming the file and saying so,
 * as the 1D loader refuses a silent one. One tap of 1e-30 anywhere, and
 * the file loads as it is. Random shapes, text and .npy forms. */
static void test_all_zeros(void **state)
{
  (void)state;
  for (unsigned i = 0; i < 24; i++) {
    ref_kernel r;
    random_kernel(&r, i & 1);
    int npy = (i >> 1) & 1;
    npy_spec sp = {.size = i & 1 ? 8 : 4, .order = i & 4 ? '>' : '<',
                   .fortran = (i >> 3) & 1, .ndim3 = 1, .version = 1};
    for (size_t j = 0; j < ref_count(&r); j++)
      r.v[j] = ref_rng_range(&rng, 0, 1) ? -0.0 : 0.0;
    const char *path = fixture(npy ? "zeros.npy" : "zeros.txt");
    set_case("%ux%ux%u, %s", r.t, r.kh, r.kw, npy ? "npy" : "text");
    for (int one = 0; one < 2; one++) {
      if (one)
        r.v[ref_rng_range(&rng, 0, ref_count(&r) - 1)] = 1e-30;
      numbers_with_point = 1;
      if (npy)
        write_npy(path, &sp, &r);
      else
        write_text(path, &r);
      numbers_with_point = 0;
      for (int how = 0; how < 2; how++) {
        cf_kernel2d *k = NULL;
        cf_status s = how ? cf_kernel2d_load(path, &k)
                          : npy ? cf_kernel2d_load_npy(path, &k)
                                : cf_kernel2d_load_text(path, &k);
        if (one) {
          expect_ok(s, path);
          expect_ref(k, &r);
          cf_kernel2d_free(k);
        } else {
          expect_error(s, &k, CF_E_FORMAT, path, "every tap of its");
        }
      }
    }
    free(r.v);
  }
}

static void test_not_text_nor_npy(void **state)
{
  (void)state;
  size_t n = ref_rng_range(&rng, 100, 8192);
  unsigned char *p = malloc(n);
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)ref_rng_u64(&rng);
  p[0] = 0;
  const char *path = fixture("random.dat");
  write_bytes(path, p, n);
  cf_kernel2d *k = (cf_kernel2d *)&rng;
  expect_error(cf_kernel2d_load(path, &k), &k, CF_E_FORMAT, path,
               "neither text nor .npy (byte 0 is 0x00");
  /* Text with one binary byte; a near-miss of the .npy magic. */
  size_t at = ref_rng_range(&rng, 0, 99);
  memset(p, '1', 100);
  p[at] = 0xff;
  write_bytes(path, p, 100);
  char key[64]; /* the text loader's own message, line:column */
  snprintf(key, sizeof key, "1:%zu is byte 0xff", at + 1);
  expect_error(cf_kernel2d_load(path, &k), &k, CF_E_FORMAT, path, key);
  /* the near miss then digits alone: its three odd bytes in 100 are
   * within what the "mostly text" sniff lets the text loader explain,
   * but .npy's first byte is never text */
  memset(p, '1', 100);
  memcpy(p, "\x93NUMPX\x01\x00", 8);
  write_bytes(path, p, 100);
  expect_error(cf_kernel2d_load(path, &k), &k, CF_E_FORMAT, path,
               "neither text nor .npy");
  /* Asked for .npy, a text file is not one. */
  write_bytes(path, "1 2\n3 4\n", 8);
  expect_error(cf_kernel2d_load_npy(path, &k), &k, CF_E_FORMAT, path,
               "too short for a .npy file");
  write_bytes(path, "1 2 3 4 5 6 7 8\n", 16);
  expect_error(cf_kernel2d_load_npy(path, &k), &k, CF_E_FORMAT, path,
               "bad magic");
  free(p);
}

static void test_missing_file(void **state)
{
  (void)state;
  const char *path = fixture("does-not-exist.txt");
  cf_kernel2d *k = (cf_kernel2d *)&rng;
  expect_error(cf_kernel2d_load(path, &k), &k, CF_E_IO, path,
               "cannot open: No such file");
  expect_error(cf_kernel2d_load_text(path, &k), &k, CF_E_IO, path,
               "No such file");
  expect_error(cf_kernel2d_load_npy(path, &k), &k, CF_E_IO, path,
               "No such file");
  expect_error(cf_kernel2d_load(tmp_dir, &k), &k, CF_E_IO, tmp_dir,
               "is a directory");
  expect_error(cf_kernel2d_load_text(tmp_dir, &k), &k, CF_E_IO, tmp_dir,
               "is a directory");
  expect_error(cf_kernel2d_load_npy(tmp_dir, &k), &k, CF_E_IO, tmp_dir,
               "is a directory");
  expect_error(cf_kernel2d_load(NULL, &k), &k, CF_E_INVALID, "path", "NULL");
  expect_error(cf_kernel2d_load_text(NULL, &k), &k, CF_E_INVALID, "path",
               "NULL");
  assert_int_equal(cf_kernel2d_load(path, NULL), CF_E_INVALID);
  assert_int_equal(cf_kernel2d_load_npy(path, NULL), CF_E_INVALID);
}

/* ---- main ---------------------------------------------------------- */

int main(void)
{
  ref_rng_init(&rng, ref_seed());
  if (fixture_init("kernel2d"))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_preset_names),
      cmocka_unit_test(test_preset_fixed),
      cmocka_unit_test(test_preset_box),
      cmocka_unit_test(test_preset_gaussian),
      cmocka_unit_test(test_preset_unsharp),
      cmocka_unit_test(test_preset_refused),
      cmocka_unit_test(test_text_roundtrip),
      cmocka_unit_test(test_text_example),
      cmocka_unit_test(test_text_ragged_rows),
      cmocka_unit_test(test_text_ragged_blocks),
      cmocka_unit_test(test_text_bad_tokens),
      cmocka_unit_test(test_text_decimal_comma),
      cmocka_unit_test(test_text_empty),
      cmocka_unit_test(test_text_endless),
      cmocka_unit_test(test_text_limits),
      cmocka_unit_test(test_text_fuzz),
      cmocka_unit_test(test_npy_roundtrip),
      cmocka_unit_test(test_npy_truncated),
      cmocka_unit_test(test_npy_shapes),
      cmocka_unit_test(test_npy_nonfinite),
      cmocka_unit_test(test_npy_fuzz),
      cmocka_unit_test(test_all_zeros),
      cmocka_unit_test(test_not_text_nor_npy),
      cmocka_unit_test(test_missing_file),
  };
  check_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, fixture_cleanup);
}
