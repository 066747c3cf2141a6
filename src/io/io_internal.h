/* Internal: helpers shared by the kernel-file loaders (load.c holds them). */
#ifndef CF_IO_INTERNAL_H
#define CF_IO_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "../engine/error_internal.h"
#include "cudafilter/kernel.h"

/* A growable array of taps. Callers check their limits themselves, where
 * they know the position to report. */
typedef struct cf_io_taps {
  float *v;
  size_t len, cap;
} cf_io_taps;

/* Room for `extra` more taps, growing by doubling but never past `most`
 * taps (the caller's limit: len + extra <= most); CF_E_NOMEM (message
 * names path) otherwise. */
cf_status cf_io_taps_reserve(cf_io_taps *t, size_t extra, size_t most,
                             const char *path);
void cf_io_taps_free(cf_io_taps *t);

/* CF_E_INVALID unless path and out are set; clears *out. */
cf_status cf_io_check_args(const char *path, cf_kernel **out);
/* CF_E_IO where path exists but is not a regular file (a directory, a
 * FIFO, a device): kernel files are read more than once. A path that
 * cannot be stat()ed passes (its opener says why). */
cf_status cf_io_check_file(const char *path);
/* fopen(path, "rb") of a regular file (cf_io_check_file; a FIFO never
 * blocks the open); CF_E_IO names path and errno. Both take file:NAME
 * for NAME. */
cf_status cf_io_open(const char *path, FILE **out);
/* cf_io_check_args then cf_io_open: how every loader starts. */
cf_status cf_io_begin(const char *path, cf_kernel **out, FILE **f);
/* Size of an open regular file. */
cf_status cf_io_size(const char *path, FILE *f, size_t *size);
/* Reads exactly n bytes; CF_E_FORMAT at end of file, CF_E_IO on error. */
cf_status cf_io_read(const char *path, FILE *f, void *buf, size_t n);

/* A kernel set of outputs x inputs (as `routing` counts them) kernels of
 * `len` taps each, taps[i] for kernel i. Errors are prefixed with path. */
cf_status cf_io_make_kernel(const char *path, cf_routing routing,
                            unsigned outputs, unsigned inputs,
                            const float *const *taps, size_t len,
                            cf_kernel **out);

/* "NaN", "infinite" or "finite" (for messages). */
const char *cf_io_nonfinite_name(double v);
/* Re-records the current message with "path: " in front; returns s. */
cf_status cf_io_with_path(const char *path, cf_status s);

/* The UTF-8 byte order mark, which text kernel files may start with. */
#define CF_IO_UTF8_BOM "\xef\xbb\xbf"

/* What the first bytes of a file look like. */
typedef enum cf_io_kind {
  CF_IO_KIND_NPY,   /* starts with the .npy magic */
  CF_IO_KIND_TEXT,  /* printable ASCII and whitespace only (or empty),
                       after a UTF-8 byte order mark if there is one */
  CF_IO_KIND_TEXTISH, /* text but for a few bytes (a NUL, UTF-8): not
                         audio, unless libav reads it; *at as for OTHER */
  CF_IO_KIND_OTHER, /* anything else; *at is the first non-text byte */
} cf_io_kind;
/* Opens path (cf_io_open), reads its first page and closes it. */
cf_status cf_io_sniff(const char *path, cf_io_kind *kind, size_t *at,
                      unsigned char *byte);
/* s, a text loader's answer for path; where it is CF_E_FORMAT and the
 * file is named .npy, the message says first that the file is no .npy
 * (it was read as text for want of the magic). */
cf_status cf_io_text_as_npy(const char *path, cf_status s);

/* ---- text (load_text.c) ---- */

/* A tokenizer for number files: numbers separated by whitespace and/or
 * commas, '#' comments to the end of the line. It reports numbers and line
 * ends; every number is finite as float32, else CF_E_FORMAT naming
 * path:line:column and the token. */
typedef struct cf_io_text cf_io_text;
typedef enum cf_io_text_kind {
  CF_IO_TEXT_NUMBER,
  CF_IO_TEXT_LINE_END, /* a '\n' */
  CF_IO_TEXT_EOF       /* the end of the file (and of its last line) */
} cf_io_text_kind;
typedef struct cf_io_text_event {
  cf_io_text_kind kind;
  float value;             /* CF_IO_TEXT_NUMBER */
  unsigned long line, col; /* 1-based: the number's first byte, or the line
                              end ('\n' or the end of the file) */
  int comment;             /* line ends: the line held a '#' comment */
} cf_io_text_event;
/* Reads from f (which stays the caller's, at its start: a UTF-8 byte
 * order mark there is skipped, and columns count from the byte after
 * it); messages name path. */
cf_status cf_io_text_new(const char *path, FILE *f, cf_io_text **out);
cf_status cf_io_text_next(cf_io_text *t, cf_io_text_event *ev);
void cf_io_text_free(cf_io_text *t);
/* After the last event: CF_E_FORMAT naming the first line where every
 * line of more than one number (one or more lines) holds two integers
 * joined by a lone comma, as numbers written with decimal commas read. */
cf_status cf_io_text_comma_pairs(const cf_io_text *t);

/* ---- .npy (load_npy.c) ---- */

#define CF_IO_NPY_MAX_NDIM 3

/* What a caller accepts from a .npy file. The reader refuses a number of
 * dimensions outside [min_ndim, max_ndim] ("shape (...) has N dimensions:
 * <ndim_help>"), zero dimensions and element counts that overflow, then
 * calls `limits` (before anything is allocated: the header is untrusted),
 * then checks the file size. */
typedef struct cf_io_npy_rules {
  unsigned min_ndim, max_ndim; /* 1 <= min_ndim <= max_ndim <= 3 */
  const char *ndim_help;       /* e.g. "need 2 (Kh x Kw) or 3 (T x Kh x Kw)" */
  /* CF_E_FORMAT naming path and `shape` (as numpy prints it) when a size
   * is beyond the caller's limits. */
  cf_status (*limits)(const char *path, const char *shape, unsigned ndim,
                      const uint64_t *dims, uint64_t count);
  /* Writes what element idx[0..ndim) is to the caller, e.g. "(kernel 1,
   * tap 5)", for messages about non-finite values. */
  void (*describe)(char *buf, size_t cap, unsigned ndim, const size_t *dims,
                   const size_t *idx);
} cf_io_npy_rules;

/* A whole .npy array as float32 in C order (transposed from Fortran
 * order, byte-swapped as needed); every element finite as float32. */
typedef struct cf_io_npy_array {
  unsigned ndim;
  size_t dims[CF_IO_NPY_MAX_NDIM];
  size_t count;
  float *v; /* count elements, freed with free() */
} cf_io_npy_array;

/* Reads path whole (an open file: f at its start); errors name path. */
cf_status cf_io_npy_read(const char *path, FILE *f,
                         const cf_io_npy_rules *rules, cf_io_npy_array *out);

#endif
