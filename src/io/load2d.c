/* 2D / temporal kernel files (kernel2d.h): text and .npy, the format found
 * from the content.
 *
 * Text: each line that holds numbers is a kernel row; every row has the
 * same length. Lines that hold nothing (or only spaces and commas) end a
 * temporal block (several in a row count once; at the start or the end of
 * the file they do nothing); a line holding only a '#' comment is skipped
 * and ends nothing. Every block has the same number of rows. */
#include "io_internal.h"

#include <stdbool.h>
#include <stdlib.h>

#include "../engine/kernel_internal.h"

static cf_status check_args(const char *path, cf_kernel2d **out)
{
  if (out)
    *out = NULL;
  if (!path || !out)
    return cf_fail(CF_E_INVALID, "kernel file: %s is NULL",
                   path ? "out" : "path");
  return CF_OK;
}

static cf_status begin(const char *path, cf_kernel2d **out, FILE **f)
{
  *f = NULL;
  cf_status s = check_args(path, out);
  return s == CF_OK ? cf_io_open(path, f) : s;
}

/* A file whose every tap is 0 (an array saved before it was filled, a
 * wrong file) would black the picture out without a word, as a silent
 * impulse response mutes a stream (cf_kernel_load): refused, naming it.
 * Zeros given as such (cf_kernel2d_new: a `kernel` typed by the user,
 * with a bias to paint a flat picture) are meant, and taken. */
static cf_status make(const char *path, unsigned t, unsigned kh, unsigned kw,
                      const float *taps, cf_kernel2d **out)
{
  size_t n = (size_t)t * kh * kw, i = 0;
  while (i < n && taps[i] == 0.0f)
    i++;
  if (n && i == n)
    return cf_fail(CF_E_FORMAT, "%s holds only zeros: every tap of its "
                   "%ux%ux%u kernel is 0, which would black out every "
                   "filtered picture", path, t, kh, kw);
  cf_status s = cf_kernel2d_new(t, kh, kw, taps, out);
  return s == CF_OK ? s : cf_io_with_path(path, s);
}

/* ---- text ---------------------------------------------------------- */

typedef struct grid {
  const char *path;
  cf_io_taps taps;
  unsigned kw, kh, t;    /* kw, kh: 0 until the first row / block ends */
  unsigned long kw_line; /* the first row's line */
  unsigned long kh_line; /* the first block's first line */
  size_t row;            /* numbers in the current row */
  unsigned long row_line, row_col;     /* its first number */
  unsigned long long_line, long_col;   /* its number kw + 1, if any */
  unsigned rows;                       /* rows in the current block */
  unsigned long block_line, block_col; /* its first number */
} grid;

static cf_status add_number(grid *g, const cf_io_text_event *ev)
{
  if (g->row == 0) {
    if (g->rows == 0) {
      if (g->t == CF_KERNEL2D_MAX_FRAMES)
        return cf_fail(CF_E_FORMAT,
                       "%s:%lu:%lu: more than the limit of %u "
                       "temporal blocks",
                       g->path, ev->line, ev->col, CF_KERNEL2D_MAX_FRAMES);
      g->block_line = ev->line;
      g->block_col = ev->col;
    }
    if (g->rows == CF_KERNEL2D_MAX_SIDE)
      return cf_fail(CF_E_FORMAT,
                     "%s:%lu:%lu: more than the limit of %u "
                     "rows in a temporal block",
                     g->path, ev->line, ev->col, CF_KERNEL2D_MAX_SIDE);
    g->row_line = ev->line;
    g->row_col = ev->col;
  }
  if (g->kw && g->row >= g->kw) { /* too long: counted, reported at its end */
    if (g->row == g->kw) {
      g->long_line = ev->line;
      g->long_col = ev->col;
    }
    g->row++;
    return CF_OK;
  }
  if (g->row == CF_KERNEL2D_MAX_SIDE)
    return cf_fail(CF_E_FORMAT,
                   "%s:%lu:%lu: more than the limit of %u "
                   "numbers in a row",
                   g->path, ev->line, ev->col, CF_KERNEL2D_MAX_SIDE);
  if (g->taps.len == CF_KERNEL2D_MAX_TAPS)
    return cf_fail(CF_E_FORMAT,
                   "%s:%lu:%lu: more than the limit of %zu "
                   "taps",
                   g->path, ev->line, ev->col, CF_KERNEL2D_MAX_TAPS);
  cf_status s = cf_io_taps_reserve(&g->taps, 1, CF_KERNEL2D_MAX_TAPS, g->path);
  if (s == CF_OK) {
    g->taps.v[g->taps.len++] = ev->value;
    g->row++;
  }
  return s;
}

static cf_status end_row(grid *g)
{
  if (g->kw == 0) {
    g->kw = (unsigned)g->row;
    g->kw_line = g->row_line;
  } else if (g->row != g->kw) {
    bool longer = g->row > g->kw;
    return cf_fail(CF_E_FORMAT,
                   "%s:%lu:%lu: row has %zu numbers, expected "
                   "%u as in the first row (line %lu)",
                   g->path, longer ? g->long_line : g->row_line,
                   longer ? g->long_col : g->row_col, g->row, g->kw,
                   g->kw_line);
  }
  g->row = 0;
  g->rows++;
  return CF_OK;
}

static cf_status end_block(grid *g)
{
  if (g->kh == 0) {
    g->kh = g->rows;
    g->kh_line = g->block_line;
  } else if (g->rows != g->kh) {
    return cf_fail(CF_E_FORMAT,
                   "%s:%lu:%lu: temporal block %u (tau = %u) "
                   "has %u row%s, expected %u as in the first block (line "
                   "%lu)",
                   g->path, g->block_line, g->block_col, g->t + 1, g->t,
                   g->rows, g->rows == 1 ? "" : "s", g->kh, g->kh_line);
  }
  g->rows = 0;
  g->t++;
  return CF_OK;
}

static cf_status parse_grid(grid *g, FILE *f)
{
  cf_io_text *t = NULL;
  cf_status s = cf_io_text_new(g->path, f, &t);
  cf_io_text_event ev = {.kind = CF_IO_TEXT_EOF};
  while (s == CF_OK && (s = cf_io_text_next(t, &ev)) == CF_OK) {
    if (ev.kind == CF_IO_TEXT_NUMBER) {
      s = add_number(g, &ev);
      continue;
    }
    if (g->row)
      s = end_row(g);
    else if (!ev.comment && g->rows)
      s = end_block(g); /* a blank line */
    if (s == CF_OK && ev.kind == CF_IO_TEXT_EOF) {
      if (g->rows)
        s = end_block(g);
      break;
    }
  }
  cf_io_text_free(t);
  if (s == CF_OK && g->t == 0)
    s = cf_fail(CF_E_FORMAT,
                "%s: no taps (the file is empty or holds only "
                "comments)",
                g->path);
  return s;
}

CF_PUBLIC cf_status cf_kernel2d_load_text(const char *path, cf_kernel2d **out)
{
  FILE *f;
  cf_status s = begin(path, out, &f);
  if (s != CF_OK)
    return s;
  grid g = {.path = path};
  s = parse_grid(&g, f);
  fclose(f);
  if (s == CF_OK)
    s = make(path, g.t, g.kh, g.kw, g.taps.v, out);
  cf_io_taps_free(&g.taps);
  return s;
}

/* ---- .npy ---------------------------------------------------------- */

static cf_status npy_limits(const char *path, const char *shape, unsigned ndim,
                            const uint64_t *dims, uint64_t count)
{
  const uint64_t *side = dims + ndim - 2;
  for (unsigned i = 0; i < 2; i++)
    if (side[i] > CF_KERNEL2D_MAX_SIDE)
      return cf_fail(CF_E_FORMAT,
                     "%s: shape %s: %s %llu is more than the "
                     "limit of %u",
                     path, shape, i ? "width" : "height",
                     (unsigned long long)side[i], CF_KERNEL2D_MAX_SIDE);
  if (ndim == 3 && dims[0] > CF_KERNEL2D_MAX_FRAMES)
    return cf_fail(CF_E_FORMAT,
                   "%s: shape %s: %llu temporal taps, more "
                   "than the limit of %u",
                   path, shape, (unsigned long long)dims[0],
                   CF_KERNEL2D_MAX_FRAMES);
  if (count > CF_KERNEL2D_MAX_TAPS)
    return cf_fail(CF_E_FORMAT,
                   "%s: shape %s: %llu taps, more than the "
                   "limit of %zu",
                   path, shape, (unsigned long long)count,
                   CF_KERNEL2D_MAX_TAPS);
  return CF_OK;
}

static void npy_describe(char *buf, size_t cap, unsigned ndim,
                         const size_t *dims, const size_t *idx)
{
  (void)dims;
  if (ndim == 2)
    snprintf(buf, cap, "(row %zu, column %zu)", idx[0], idx[1]);
  else
    snprintf(buf, cap, "(tau %zu, row %zu, column %zu)", idx[0], idx[1],
             idx[2]);
}

static const cf_io_npy_rules npy_rules = {
    2, 3, "need 2 (Kh x Kw) or 3 (T x Kh x Kw)", npy_limits, npy_describe};

CF_PUBLIC cf_status cf_kernel2d_load_npy(const char *path, cf_kernel2d **out)
{
  FILE *f;
  cf_status s = begin(path, out, &f);
  if (s != CF_OK)
    return s;
  cf_io_npy_array a;
  s = cf_io_npy_read(path, f, &npy_rules, &a);
  fclose(f);
  if (s == CF_OK) {
    const size_t *d = a.dims + a.ndim - 2;
    unsigned t = a.ndim == 3 ? (unsigned)a.dims[0] : 1;
    s = make(path, t, (unsigned)d[0], (unsigned)d[1], a.v, out);
  }
  free(a.v);
  return s;
}

/* ---- any ----------------------------------------------------------- */

CF_PUBLIC cf_status cf_kernel2d_load(const char *path, cf_kernel2d **out)
{
  cf_status s = check_args(path, out);
  cf_io_kind kind;
  size_t at;
  unsigned char byte;
  if (s == CF_OK)
    s = cf_io_sniff(path, &kind, &at, &byte);
  if (s != CF_OK)
    return s;
  if (kind == CF_IO_KIND_NPY)
    return cf_kernel2d_load_npy(path, out);
  /* text with a stray byte: the text loader says where */
  if (kind == CF_IO_KIND_TEXT || kind == CF_IO_KIND_TEXTISH)
    return cf_io_text_as_npy(path, cf_kernel2d_load_text(path, out));
  return cf_fail(CF_E_FORMAT,
                 "%s: neither text nor .npy (byte %zu is 0x%02x "
                 "and there is no .npy magic): cannot read a 2D kernel",
                 path, at, byte);
}
