/* Text kernel files: numbers separated by whitespace and/or commas, '#'
 * starts a comment that runs to the end of the line (LF, CR LF, or in a
 * file whose lines end with a lone CR, CR). The tokenizer is shared with
 * the 2D loader (which also needs the line ends); here the numbers make
 * one shared kernel. */
#define _GNU_SOURCE /* strtod_l: numbers must not depend on the locale */
#include "io_internal.h"

#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Longer tokens are not numbers anyone writes; refuse rather than buffer. */
#define TOKEN_MAX 127

struct cf_io_text {
  const char *path;
  FILE *f;
  locale_t c_locale;
  char tok[TOKEN_MAX + 1];
  size_t tok_len;                  /* TOKEN_MAX + 1: too long */
  unsigned long line, col;         /* of the byte just read */
  unsigned long tok_line, tok_col; /* of the token's first byte */
  bool in_comment, line_comment;
  /* Decimal commas ("0,25 0,5"): on one line, a lone comma between two
   * digits and numbers apart by spaces alone, in a file without a decimal
   * point. Either is a plain list; both on one line, where no number has
   * a point, are numbers written with a comma for the point. */
  bool line_tok;       /* a number seen on this line */
  char last_end;       /* the last byte of that number */
  unsigned long last_col; /* and the column of its first */
  unsigned sep_len;    /* separator bytes since it */
  bool sep_comma;      /* one of them a comma */
  unsigned sep_commas; /* how many */
  unsigned long comma_col; /* 0: no comma between digits yet, else the
                            * column of the number before it */
  bool spaces_only;    /* two numbers apart by spaces alone */
  bool spaced_comma;   /* two numbers apart by a comma and spaces */
  bool lone_before;    /* the last number came after a lone comma
                        * between digits */
  bool chain;          /* a number between two such commas (1,2,1): a
                        * list, not decimal commas */
  bool first_zero;     /* the line's first number is 0 (0,5 reads as a
                        * decimal comma, 1,1 as two taps) */
  bool pair_zero;      /* the first line such as "0,25" starts with 0 */
  bool point;          /* a number with a decimal point seen in the file */
  /* One number a line written with a decimal comma ("0,25" on each
   * line): every line with numbers holds two joined by a lone comma
   * between digits (cf_io_text_comma_pairs) */
  unsigned line_nums;        /* numbers on this line */
  unsigned long pair_lines;  /* lines such as "0,25" */
  bool other_lines;          /* a line with numbers that is not */
  unsigned long pair_line, pair_col; /* the first of them */
  enum { EOL_UNKNOWN, EOL_LF, EOL_CR } eol; /* how lines end (next_byte) */
  int peek; /* a byte read ahead after a CR */
  bool have_peek;
  int pending; /* a byte read but not handled yet (it ended a token) */
  bool have_pending;
  /* The file's first bytes, read to look for a byte order mark that was
   * not there: they come before the rest of the file. */
  unsigned char ahead[3];
  unsigned ahead_len, ahead_at;
};

static bool is_separator(int ch)
{
  return ch == ',' || ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* The token as it may appear in a message: control bytes become '?', NUL
 * too (it would end the message inside the token: "1\0x" read as '1'). */
static const char *printable_token(cf_io_text *t)
{
  size_t n = t->tok_len < TOKEN_MAX ? t->tok_len : TOKEN_MAX;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)t->tok[i] < 0x20 || (unsigned char)t->tok[i] > 0x7e)
      t->tok[i] = '?';
  return t->tok;
}

/* Where the token holds a byte that is not printable ASCII, " (L:C is
 * ...)" naming the first; else "". Before printable_token hides it. */
static void odd_byte(const cf_io_text *t, char *buf, size_t cap)
{
  size_t n = t->tok_len < TOKEN_MAX ? t->tok_len : TOKEN_MAX;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    unsigned c = (unsigned char)t->tok[i];
    unsigned long col = t->tok_col + i;
    if (c >= 0x20 && c <= 0x7e)
      continue;
    if (c == 0)
      snprintf(buf, cap, " (%lu:%lu is a NUL byte)", t->tok_line, col);
    else if (c >= 0x80)
      snprintf(buf, cap, " (%lu:%lu is byte 0x%02x, not ASCII: a UTF-8 "
               "character such as a non-breaking space? separate numbers "
               "with spaces or commas)", t->tok_line, col, c);
    else
      snprintf(buf, cap, " (%lu:%lu is control byte 0x%02x)", t->tok_line,
               col, c);
    return;
  }
}

static cf_status bad_token(cf_io_text *t, const char *problem)
{
  char odd[192];
  odd_byte(t, odd, sizeof odd);
  return cf_fail(CF_E_FORMAT, "%s:%lu:%lu: '%s'%s%s%s", t->path, t->tok_line,
                 t->tok_col, printable_token(t),
                 t->tok_len > TOKEN_MAX ? "... " : " ", problem, odd);
}

static cf_status end_token(cf_io_text *t, float *out)
{
  if (t->tok_len > TOKEN_MAX) {
    t->tok[TOKEN_MAX] = '\0';
    return bad_token(t, "is too long to be a number");
  }
  t->tok[t->tok_len] = '\0';
  char *end;
  double v = strtod_l(t->tok, &end, t->c_locale);
  if (end != t->tok + t->tok_len)
    return bad_token(t, strpbrk(t->tok, ";|")
                            ? "is not a number (numbers are apart by spaces "
                              "or commas)"
                            : "is not a number");
  /* strtod reads hex floats too (0x10 is 16): numbers here are decimal,
   * as in the daemon's config and on the command line */
  if (strpbrk(t->tok, "xX"))
    return bad_token(t, "is hexadecimal: kernel numbers are decimal");
  if (!isfinite(v))
    return bad_token(t, isnan(v) ? "is NaN" : "is infinite");
  if (isinf((float)v))
    return bad_token(t, "is outside the float32 range");
  *out = (float)v;
  return CF_OK;
}

static bool is_digit(int ch) { return ch >= '0' && ch <= '9'; }

/* A number starts with byte ch: what lies between it and the line's last
 * number. */
static void between_numbers(cf_io_text *t, int ch)
{
  if (!t->line_tok)
    return;
  bool lone = t->sep_comma && t->sep_len == 1 && is_digit(t->last_end) &&
              is_digit(ch);
  if (!t->sep_comma)
    t->spaces_only = true;
  else if (t->sep_len > 1)
    t->spaced_comma = true;
  else if (lone && !t->comma_col)
    t->comma_col = t->last_col;
  t->chain |= lone && t->lone_before;
  t->lone_before = lone;
}

/* At a line's end: the refusal where it reads as decimal commas. */
static cf_status decimal_comma(cf_io_text *t)
{
  if ((!t->spaces_only && !t->spaced_comma) || !t->comma_col || t->point ||
      t->chain)
    return CF_OK;
  /* "0,25 0,5" and "0,25, 0,5, 0,25" (a list as German writes it: QA) */
  return cf_fail(CF_E_FORMAT, "%s:%lu:%lu: a comma between digits, and "
                 "numbers apart by %s on the same line, and no decimal "
                 "point: decimal commas? Write numbers with a point (0.25); "
                 "commas and spaces both separate numbers", t->path, t->line,
                 t->comma_col,
                 t->spaces_only ? "spaces" : "a comma and spaces");
}

cf_status cf_io_text_new(const char *path, FILE *f, cf_io_text **out)
{
  cf_io_text *t = calloc(1, sizeof *t);
  if (!t)
    return cf_fail(CF_E_NOMEM, "%s: out of memory", path);
  t->path = path;
  t->f = f;
  t->line = 1;
  t->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (!t->c_locale) {
    free(t);
    return cf_fail(CF_E_NOMEM, "%s: cannot create the C locale", path);
  }
  /* Skip a UTF-8 byte order mark (Windows Notepad starts files with it);
   * read byte by byte, so that a pipe works as well as a file. */
  while (t->ahead_len < 3) {
    int ch = getc_unlocked(f);
    if (ch == EOF)
      break;
    t->ahead[t->ahead_len++] = (unsigned char)ch;
    if (ch != (unsigned char)CF_IO_UTF8_BOM[t->ahead_len - 1])
      break;
  }
  if (t->ahead_len == 3 && memcmp(t->ahead, CF_IO_UTF8_BOM, 3) == 0)
    t->ahead_len = 0;
  *out = t;
  return CF_OK;
}

void cf_io_text_free(cf_io_text *t)
{
  if (t) {
    freelocale(t->c_locale);
    free(t);
  }
}

static int raw_byte(cf_io_text *t)
{
  if (t->have_peek) {
    t->have_peek = false;
    return t->peek;
  }
  return t->ahead_at < t->ahead_len
             ? t->ahead[t->ahead_at++]
             : getc_unlocked(t->f); /* the FILE is ours alone */
}

/* The file's next byte, its line ends as '\n'. A file's first line end
 * says how its lines end: LF or CR LF (a CR elsewhere is a separator, as
 * it always was), or a lone CR (classic Mac OS, as Excel for Mac still
 * writes "CSV (Macintosh)"): then a CR, or CR LF, ends every line. Read
 * as a separator there, a lone CR ran a comment on to the end of the file
 * and made a 2D kernel's rows one. */
static int next_byte(cf_io_text *t)
{
  int ch = raw_byte(t);
  t->col++;
  if (ch == '\n' && t->eol == EOL_UNKNOWN)
    t->eol = EOL_LF;
  if (ch != '\r' || t->eol == EOL_LF)
    return ch;
  int next = raw_byte(t);
  if (t->eol == EOL_UNKNOWN)
    t->eol = next == '\n' ? EOL_LF : EOL_CR;
  if (t->eol == EOL_LF || next != '\n') {
    t->peek = next;
    t->have_peek = true;
  }
  return t->eol == EOL_LF ? ch : '\n'; /* CR mode: a CR LF is one end */
}

cf_status cf_io_text_next(cf_io_text *t, cf_io_text_event *ev)
{
  for (;;) {
    int ch;
    if (t->have_pending) {
      ch = t->pending;
      t->have_pending = false;
    } else {
      ch = next_byte(t);
    }
    if (t->in_comment && ch != '\n' && ch != EOF)
      continue;
    if (ch != EOF && ch != '#' && !is_separator(ch)) {
      if (t->tok_len == 0) {
        t->tok_line = t->line;
        t->tok_col = t->col;
        /* an empty field ("0.5,,0.5", a CSV's missing value) read as
         * nothing made two taps of three (QA) */
        if (t->line_tok && t->sep_commas > 1)
          return cf_fail(CF_E_FORMAT, "%s:%lu:%lu: two commas with no "
                         "number between them before this one (an empty "
                         "field): write the missing number (0)", t->path,
                         t->line, t->col);
        between_numbers(t, ch);
      }
      if (t->tok_len < TOKEN_MAX) {
        t->tok[t->tok_len++] = (char)ch;
        continue;
      }
      /* Too long: said now, not at its end, which a device such as
       * /dev/zero never reaches. */
      t->tok_len++;
      *ev = (cf_io_text_event){
          .kind = CF_IO_TEXT_NUMBER, .line = t->tok_line, .col = t->tok_col};
      return end_token(t, &ev->value);
    }
    if (t->tok_len) { /* ch ends a token: handle ch on the next call */
      t->line_tok = true;
      t->line_nums++;
      t->last_end = t->tok[t->tok_len - 1];
      t->last_col = t->tok_col;
      /* a point, or an exponent (1e-3): not an integer split in two */
      t->point |= memchr(t->tok, '.', t->tok_len) != NULL ||
                  memchr(t->tok, 'e', t->tok_len) != NULL ||
                  memchr(t->tok, 'E', t->tok_len) != NULL;
      if (t->line_nums == 1)
        t->first_zero = (t->tok_len == 1 && t->tok[0] == '0') ||
                        (t->tok_len == 2 && t->tok[1] == '0' &&
                         (t->tok[0] == '-' || t->tok[0] == '+'));
      t->sep_len = 0;
      t->sep_comma = false;
      t->sep_commas = 0;
      t->pending = ch;
      t->have_pending = true;
      *ev = (cf_io_text_event){
          .kind = CF_IO_TEXT_NUMBER, .line = t->tok_line, .col = t->tok_col};
      cf_status s = end_token(t, &ev->value);
      t->tok_len = 0;
      return s;
    }
    if (ch == '#') {
      t->in_comment = t->line_comment = true;
      continue;
    }
    if (ch != '\n' && ch != EOF) {
      t->sep_len++;
      t->sep_comma |= ch == ',';
      t->sep_commas += ch == ',';
      continue;
    }
    cf_status s = decimal_comma(t);
    if (s != CF_OK)
      return s;
    if (t->line_nums == 2 && t->comma_col && !t->spaces_only &&
        !t->spaced_comma) {
      if (!t->pair_lines++) {
        t->pair_line = t->line;
        t->pair_col = t->comma_col;
        t->pair_zero = t->first_zero;
      }
    } else if (t->line_nums > 1) {
      /* a line of one number says nothing ("0,125 / 0,25 / 1", the
       * last a whole number, was read as 5 taps: QA) */
      t->other_lines = true;
    }
    t->line_nums = 0;
    t->line_tok = t->spaces_only = t->spaced_comma = false;
    t->lone_before = t->chain = t->first_zero = false;
    t->comma_col = 0;
    *ev = (cf_io_text_event){
        .kind = ch == EOF ? CF_IO_TEXT_EOF : CF_IO_TEXT_LINE_END,
        .line = t->line, .col = t->col, .comment = t->line_comment};
    t->in_comment = t->line_comment = false;
    if (ch == '\n') {
      t->line++;
      t->col = 0;
      return CF_OK;
    }
    t->pending = EOF; /* stay at the end */
    t->have_pending = true;
    if (ferror(t->f))
      return cf_fail(CF_E_IO, "%s:%lu: read error", t->path, t->line);
    return CF_OK;
  }
}

cf_status cf_io_text_comma_pairs(const cf_io_text *t)
{
  /* one line is enough where it starts with 0: "0,5" alone was read as
   * the taps 0 and 5 (QA); "1,1" alone stays two taps */
  if (!t->pair_lines || t->other_lines || t->point ||
      (t->pair_lines == 1 && !t->pair_zero))
    return CF_OK;
  return cf_fail(CF_E_FORMAT, "%s:%lu:%lu: %s two numbers joined by a "
                 "comma, and no number has a decimal point: %s written "
                 "with decimal commas (0,25)? Write numbers with a point "
                 "(0.25), or a space after the comma for two taps (1, 0); "
                 "commas and spaces both separate numbers", t->path,
                 t->pair_line, t->pair_col,
                 t->pair_lines > 1 ? "every line of more than one number "
                                     "holds"
                                   : "the only line of more than one number "
                                     "holds",
                 t->pair_lines > 1 ? "one number a line" : "a number");
}

static cf_status parse(const char *path, FILE *f, cf_io_taps *taps)
{
  cf_io_text *t = NULL;
  cf_status s = cf_io_text_new(path, f, &t);
  cf_io_text_event ev = {.kind = CF_IO_TEXT_EOF};
  while (s == CF_OK && (s = cf_io_text_next(t, &ev)) == CF_OK &&
         ev.kind != CF_IO_TEXT_EOF) {
    if (ev.kind != CF_IO_TEXT_NUMBER)
      continue;
    if (taps->len == CF_KERNEL_MAX_TAPS)
      s = cf_fail(CF_E_FORMAT, "%s:%lu:%lu: more than the limit of %zu "
                  "taps", path, ev.line, ev.col, CF_KERNEL_MAX_TAPS);
    if (s == CF_OK)
      s = cf_io_taps_reserve(taps, 1, CF_KERNEL_MAX_TAPS, path);
    if (s == CF_OK)
      taps->v[taps->len++] = ev.value;
  }
  /* a 1D kernel's lines carry no shape: pairs such as "0,25" on every
   * one are decimal commas (a 2D kernel two columns wide is not refused:
   * load2d.c) */
  if (s == CF_OK)
    s = cf_io_text_comma_pairs(t);
  cf_io_text_free(t);
  if (s == CF_OK && taps->len == 0)
    s = cf_fail(CF_E_FORMAT, "%s: no taps (the file is empty or holds only "
                "comments)", path);
  return s;
}

CF_PUBLIC cf_status cf_kernel_load_text(const char *path, cf_kernel **out)
{
  FILE *f;
  cf_status s = cf_io_begin(path, out, &f);
  if (s != CF_OK)
    return s;
  cf_io_taps taps = {0};
  s = parse(path, f, &taps);
  if (s == CF_OK) {
    const float *v = taps.v;
    s = cf_io_make_kernel(path, CF_ROUTING_SHARED, 1, 1, &v, taps.len, out);
  }
  cf_io_taps_free(&taps);
  fclose(f);
  return s;
}
