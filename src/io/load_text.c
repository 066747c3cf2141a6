/* Text kernel files: numbers separated by whitespace and/or commas, '#'
 * starts a comment that runs to the end of the line. One shared kernel. */
#define _GNU_SOURCE /* strtod_l: numbers must not depend on the locale */
#include "io_internal.h"

#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

/* Longer tokens are not numbers anyone writes; refuse rather than buffer. */
#define TOKEN_MAX 127

typedef struct text_parser {
  const char *path;
  locale_t c_locale;
  cf_io_taps taps;
  char tok[TOKEN_MAX + 1];
  size_t tok_len;                      /* may exceed TOKEN_MAX (too long) */
  unsigned long line, col;             /* of the byte just read */
  unsigned long tok_line, tok_col;     /* of the token's first byte */
} text_parser;

static bool is_separator(int ch)
{
  return ch == ',' || ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* The token as it may appear in a message: control bytes become '?'. */
static const char *printable_token(text_parser *p)
{
  for (char *c = p->tok; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
      *c = '?';
  return p->tok;
}

static cf_status bad_token(text_parser *p, const char *problem)
{
  return cf_fail(CF_E_FORMAT, "%s:%lu:%lu: '%s'%s%s", p->path, p->tok_line,
                 p->tok_col, printable_token(p),
                 p->tok_len > TOKEN_MAX ? "... " : " ", problem);
}

static cf_status end_token(text_parser *p)
{
  if (p->tok_len > TOKEN_MAX) {
    p->tok[TOKEN_MAX] = '\0';
    return bad_token(p, "is too long to be a number");
  }
  p->tok[p->tok_len] = '\0';
  char *end;
  double v = strtod_l(p->tok, &end, p->c_locale);
  if (end != p->tok + p->tok_len)
    return bad_token(p, "is not a number");
  if (!isfinite(v))
    return bad_token(p, isnan(v) ? "is NaN" : "is infinite");
  if (isinf((float)v))
    return bad_token(p, "is outside the float32 range");
  if (p->taps.len == CF_KERNEL_MAX_TAPS)
    return cf_fail(CF_E_FORMAT, "%s:%lu:%lu: more than the limit of %zu "
                   "taps", p->path, p->tok_line, p->tok_col,
                   CF_KERNEL_MAX_TAPS);
  cf_status s = cf_io_taps_reserve(&p->taps, 1, p->path);
  if (s == CF_OK)
    p->taps.v[p->taps.len++] = (float)v;
  return s;
}

/* Feeds one byte (or EOF) to the tokenizer. */
static cf_status feed(text_parser *p, int ch, bool *in_comment)
{
  cf_status s = CF_OK;
  p->col++;
  if (*in_comment && ch != '\n' && ch != EOF)
    return CF_OK;
  if (ch == EOF || ch == '#' || is_separator(ch)) {
    if (p->tok_len) {
      s = end_token(p);
      p->tok_len = 0;
    }
    *in_comment = ch == '#';
    if (ch == '\n') {
      p->line++;
      p->col = 0;
    }
    return s;
  }
  if (p->tok_len == 0) {
    p->tok_line = p->line;
    p->tok_col = p->col;
  }
  if (p->tok_len < TOKEN_MAX)
    p->tok[p->tok_len] = (char)ch;
  p->tok_len++;
  return CF_OK;
}

static cf_status parse(text_parser *p, FILE *f)
{
  bool in_comment = false;
  cf_status s;
  int ch;
  do {
    ch = getc_unlocked(f); /* the FILE is ours alone: skip the lock */
    s = feed(p, ch, &in_comment);
  } while (s == CF_OK && ch != EOF);
  if (s == CF_OK && ferror(f))
    s = cf_fail(CF_E_IO, "%s:%lu: read error", p->path, p->line);
  if (s == CF_OK && p->taps.len == 0)
    s = cf_fail(CF_E_FORMAT, "%s: no taps (the file is empty or holds only "
                "comments)", p->path);
  return s;
}

CF_PUBLIC cf_status cf_kernel_load_text(const char *path, cf_kernel **out)
{
  FILE *f;
  cf_status s = cf_io_begin(path, out, &f);
  if (s != CF_OK)
    return s;
  text_parser p = {.path = path, .line = 1};
  p.c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (!p.c_locale)
    s = cf_fail(CF_E_NOMEM, "%s: cannot create the C locale", path);
  if (s == CF_OK)
    s = parse(&p, f);
  if (s == CF_OK) {
    const float *taps = p.taps.v;
    s = cf_io_make_kernel(path, CF_ROUTING_SHARED, 1, 1, &taps, p.taps.len,
                          out);
  }
  if (p.c_locale)
    freelocale(p.c_locale);
  cf_io_taps_free(&p.taps);
  fclose(f);
  return s;
}
