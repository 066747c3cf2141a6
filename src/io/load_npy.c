/* NumPy .npy files (format versions 1, 2 and 3), float32/float64 in either
 * byte order, C or Fortran order: cf_io_npy_read reads one whole array for
 * every .npy loader; 1D kernel sets take 1D -> shared, 2D (C x L) ->
 * per-channel, 3D (C_out x C_in x L) -> matrix. Every size is checked
 * against the limits and the real file size before anything is allocated:
 * the header is untrusted. */
#include "io_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Real headers are ~120 bytes; numpy itself refuses more than 10000. */
#define NPY_HEADER_MAX 65536u
/* Dimensions parsed before giving up (more than 3 are refused anyway). */
#define NPY_DIMS_MAX 32

typedef struct npy_str {
  const char *s;
  size_t len;
} npy_str;

typedef struct npy_header {
  char descr[40]; /* longer ones are refused anyway */
  size_t descr_len;
  bool fortran;
  unsigned ndim;
  uint64_t dims[NPY_DIMS_MAX];
  bool have_descr, have_order, have_shape;
} npy_header;

/* The header dict as a python literal, parsed by hand. */
typedef struct npy_cursor {
  const char *path;
  const char *s;
  size_t len, i, base; /* base: file offset of s[0], for messages */
} npy_cursor;

static cf_status syntax(npy_cursor *c, const char *what)
{
  return cf_fail(CF_E_FORMAT, "%s: .npy header, byte %zu: %s", c->path,
                 c->base + c->i, what);
}

static void skip_space(npy_cursor *c)
{
  while (c->i < c->len && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
                           c->s[c->i] == '\r' || c->s[c->i] == '\n'))
    c->i++;
}

/* Skips spaces, then consumes ch if it is next. */
static bool accept(npy_cursor *c, char ch)
{
  skip_space(c);
  if (c->i < c->len && c->s[c->i] == ch) {
    c->i++;
    return true;
  }
  return false;
}

static cf_status expect(npy_cursor *c, char ch, const char *what)
{
  return accept(c, ch) ? CF_OK : syntax(c, what);
}

static cf_status parse_string(npy_cursor *c, npy_str *out)
{
  skip_space(c);
  char q = c->i < c->len ? c->s[c->i] : '\0';
  if (q != '\'' && q != '"')
    return syntax(c, "expected a quoted string");
  size_t start = ++c->i;
  while (c->i < c->len && c->s[c->i] != q) {
    if (c->s[c->i] == '\\')
      return syntax(c, "escapes in strings are not supported");
    c->i++;
  }
  if (c->i == c->len)
    return syntax(c, "unterminated string");
  *out = (npy_str){c->s + start, c->i - start};
  c->i++;
  return CF_OK;
}

static bool str_is(npy_str s, const char *lit)
{
  return s.len == strlen(lit) && memcmp(s.s, lit, s.len) == 0;
}

static cf_status parse_bool(npy_cursor *c, bool *out)
{
  skip_space(c);
  npy_str rest = {c->s + c->i, c->len - c->i};
  for (int v = 0; v < 2; v++) {
    const char *lit = v ? "True" : "False";
    size_t n = strlen(lit);
    if (rest.len >= n && memcmp(rest.s, lit, n) == 0) {
      c->i += n;
      *out = v;
      return CF_OK;
    }
  }
  return syntax(c, "expected True or False");
}

/* A non-negative integer; python 2 wrote longs as "3L". */
static cf_status parse_dim(npy_cursor *c, uint64_t *out)
{
  skip_space(c);
  size_t start = c->i;
  uint64_t v = 0;
  while (c->i < c->len && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, (uint64_t)(c->s[c->i] - '0'), &v))
      return syntax(c, "absurd dimension: more than 64 bits");
    c->i++;
  }
  if (c->i == start)
    return syntax(c, "expected a non-negative integer dimension");
  if (c->i < c->len && c->s[c->i] == 'L')
    c->i++;
  *out = v;
  return CF_OK;
}

/* "(a, b, c)" with an optional trailing comma, "()" or a bare "(n)". */
static cf_status parse_shape(npy_cursor *c, npy_header *h)
{
  cf_status s = expect(c, '(', "expected '(' to start the shape");
  h->ndim = 0;
  while (s == CF_OK && !accept(c, ')')) {
    if (h->ndim == NPY_DIMS_MAX)
      return syntax(c, "too many dimensions");
    s = parse_dim(c, &h->dims[h->ndim++]);
    if (s == CF_OK && !accept(c, ',')) {
      s = expect(c, ')', "expected ',' or ')' in the shape");
      break;
    }
  }
  return s;
}

static cf_status parse_entry(npy_cursor *c, npy_header *h)
{
  npy_str key;
  cf_status s = parse_string(c, &key);
  if (s == CF_OK)
    s = expect(c, ':', "expected ':' after a key");
  if (s != CF_OK)
    return s;
  bool *seen = str_is(key, "descr")           ? &h->have_descr
               : str_is(key, "fortran_order") ? &h->have_order
               : str_is(key, "shape")         ? &h->have_shape
                                              : NULL;
  if (!seen)
    return syntax(c, "unexpected key (need 'descr', 'fortran_order' and "
                  "'shape')");
  if (*seen)
    return syntax(c, "duplicate key");
  *seen = true;
  if (seen == &h->have_order)
    return parse_bool(c, &h->fortran);
  if (seen == &h->have_shape)
    return parse_shape(c, h);
  skip_space(c);
  if (c->i < c->len && c->s[c->i] == '[')
    return syntax(c, "structured dtypes are not supported (need float32 or "
                  "float64)");
  npy_str d = {0};
  s = parse_string(c, &d);
  if (s != CF_OK)
    return s;
  h->descr_len = d.len < sizeof h->descr ? d.len : sizeof h->descr - 1;
  memcpy(h->descr, d.s, h->descr_len);
  return CF_OK;
}

static cf_status parse_header(npy_cursor *c, npy_header *h)
{
  cf_status s = expect(c, '{', "expected '{'");
  while (s == CF_OK && !accept(c, '}')) {
    s = parse_entry(c, h);
    if (s == CF_OK && !accept(c, ',')) {
      s = expect(c, '}', "expected ',' or '}'");
      break;
    }
  }
  skip_space(c);
  if (s == CF_OK && c->i != c->len)
    s = syntax(c, "unexpected bytes after the header dict");
  if (s == CF_OK && !(h->have_descr && h->have_order && h->have_shape))
    s = syntax(c, "missing key (need 'descr', 'fortran_order' and 'shape')");
  return s;
}

/* Kinds numpy may name, for messages about dtypes we refuse. */
static const char *kind_name(char kind)
{
  switch (kind) {
  case 'f': return "float";
  case 'i': return "int";
  case 'u': return "uint";
  case 'c': return "complex";
  case 'b': case '?': return "bool";
  case 'S': case 'a': return "bytes";
  case 'U': return "str";
  case 'O': return "object";
  case 'M': return "datetime";
  case 'm': return "timedelta";
  case 'V': return "void";
  default: return NULL;
  }
}

/* Accepts float32/float64 in any byte order; sets the item size and
 * whether bytes must be swapped on this host. */
static cf_status parse_dtype(const char *path, const npy_header *h,
                             size_t *size, bool *swap)
{
  const char *p = h->descr, *end = h->descr + h->descr_len;
  char order = p < end && *p && strchr("<>=|", *p) ? *p++ : '=';
  char kind = p < end ? *p++ : '\0';
  unsigned long bytes = 0;
  while (p < end && *p >= '0' && *p <= '9' && bytes < 1000)
    bytes = bytes * 10 + (unsigned long)(*p++ - '0');
  bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  if (p == end && kind == 'f' && (bytes == 4 || bytes == 8)) {
    *size = bytes;
    *swap = (order == '<' && !little) || (order == '>' && little);
    return CF_OK;
  }
  const char *name = kind_name(kind);
  char what[48] = "";
  if (name && strchr("fiuc", kind) && p == end && bytes && bytes < 1000)
    snprintf(what, sizeof what, " (%s%lu)", name, bytes * 8);
  else if (name)
    snprintf(what, sizeof what, " (%s)", name);
  return cf_fail(CF_E_FORMAT, "%s: dtype '%.*s'%s is not supported: need "
                 "float32 or float64 ('<f4', '>f4', '<f8', '>f8')", path,
                 (int)h->descr_len, h->descr, what);
}

static void format_shape(const npy_header *h, char *buf, size_t cap)
{
  size_t n = (size_t)snprintf(buf, cap, "(");
  for (unsigned i = 0; i < h->ndim && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? ", " : "",
                          (unsigned long long)h->dims[i]);
  if (n < cap)
    snprintf(buf + n, cap - n, h->ndim == 1 ? ",)" : ")");
}

/* Refuses shapes the caller cannot hold; sets the element count. */
static cf_status check_shape(const char *path, const npy_header *h,
                             const cf_io_npy_rules *rules, uint64_t *count)
{
  char shape[128];
  format_shape(h, shape, sizeof shape);
  if (h->ndim < rules->min_ndim || h->ndim > rules->max_ndim ||
      h->ndim > CF_IO_NPY_MAX_NDIM)
    return cf_fail(CF_E_FORMAT, "%s: shape %s has %u dimensions: %s", path,
                   shape, h->ndim, rules->ndim_help);
  *count = 1;
  for (unsigned i = 0; i < h->ndim; i++) {
    if (h->dims[i] == 0)
      return cf_fail(CF_E_FORMAT, "%s: shape %s: dimension %u is 0 (no "
                     "taps)", path, shape, i);
    if (__builtin_mul_overflow(*count, h->dims[i], count))
      return cf_fail(CF_E_FORMAT, "%s: shape %s: element count overflows",
                     path, shape);
  }
  return rules->limits(path, shape, h->ndim, h->dims, *count);
}

static cf_status read_preamble(const char *path, FILE *f, size_t file_size,
                               size_t *header_at, size_t *header_len)
{
  unsigned char pre[12];
  if (file_size < 10)
    return cf_fail(CF_E_FORMAT, "%s: %zu bytes, too short for a .npy file",
                   path, file_size);
  cf_status s = cf_io_read(path, f, pre, 10);
  if (s != CF_OK)
    return s;
  if (memcmp(pre, "\x93NUMPY", 6) != 0)
    return cf_fail(CF_E_FORMAT, "%s: not a .npy file (bad magic at byte 0)",
                   path);
  if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0)
    return cf_fail(CF_E_FORMAT, "%s: unsupported .npy version %u.%u (byte "
                   "6): need 1.0, 2.0 or 3.0", path, pre[6], pre[7]);
  *header_at = pre[6] == 1 ? 10 : 12;
  if (pre[6] > 1 && (s = cf_io_read(path, f, pre + 10, 2)) != CF_OK)
    return s;
  *header_len = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] > 1)
    *header_len |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  if (*header_len > NPY_HEADER_MAX)
    return cf_fail(CF_E_FORMAT, "%s: .npy header of %zu bytes is too long "
                   "(limit %u)", path, *header_len, NPY_HEADER_MAX);
  if (*header_at + *header_len > file_size)
    return cf_fail(CF_E_FORMAT, "%s: truncated .npy header: expected %zu "
                   "bytes, the file has %zu", path, *header_at + *header_len,
                   file_size);
  return CF_OK;
}

static cf_status read_header(const char *path, FILE *f, size_t file_size,
                             npy_header *h, size_t *data_at)
{
  size_t at = 0, len = 0;
  cf_status s = read_preamble(path, f, file_size, &at, &len);
  if (s != CF_OK)
    return s;
  char *text = malloc(len + 1);
  if (!text)
    return cf_fail(CF_E_NOMEM, "%s: out of memory for the header", path);
  s = cf_io_read(path, f, text, len);
  if (s == CF_OK) {
    npy_cursor c = {.path = path, .s = text, .len = len, .base = at};
    *h = (npy_header){0};
    s = parse_header(&c, h);
  }
  free(text);
  *data_at = at + len;
  return s;
}

/* One element of either width, byte-swapped if needed. */
static double load_elem(const unsigned char *p, size_t size, bool swap)
{
  if (size == 4) {
    uint32_t u;
    float v;
    memcpy(&u, p, 4);
    u = swap ? __builtin_bswap32(u) : u;
    memcpy(&v, &u, 4);
    return v;
  }
  uint64_t u;
  double v;
  memcpy(&u, p, 8);
  u = swap ? __builtin_bswap64(u) : u;
  memcpy(&v, &u, 8);
  return v;
}

typedef struct npy_layout {
  size_t dims[3];    /* padded to 3 with leading 1s */
  size_t strides[3]; /* in elements, in the file */
  size_t size;       /* bytes per element */
  bool swap;
} npy_layout;

static void make_layout(const npy_header *h, size_t size, bool swap,
                        npy_layout *l)
{
  *l = (npy_layout){.dims = {1, 1, 1}, .size = size, .swap = swap};
  for (unsigned i = 0; i < h->ndim; i++)
    l->dims[3 - h->ndim + i] = (size_t)h->dims[i];
  if (h->fortran) {
    l->strides[0] = 1;
    l->strides[1] = l->dims[0];
    l->strides[2] = l->dims[0] * l->dims[1];
  } else {
    l->strides[2] = 1;
    l->strides[1] = l->dims[2];
    l->strides[0] = l->dims[1] * l->dims[2];
  }
}

static cf_status bad_value(const char *path, const cf_io_npy_rules *rules,
                           const npy_layout *l, unsigned ndim,
                           const size_t idx[3], double v)
{
  const size_t *d = idx + 3 - ndim;
  char where[160];
  size_t n = (size_t)snprintf(where, sizeof where, "[");
  for (unsigned i = 0; i < ndim; i++)
    n += (size_t)snprintf(where + n, sizeof where - n, "%s%zu", i ? ", " : "",
                          d[i]);
  n += (size_t)snprintf(where + n, sizeof where - n, "] ");
  rules->describe(where + n, sizeof where - n, ndim, l->dims + 3 - ndim, d);
  if (isfinite(v))
    return cf_fail(CF_E_FORMAT, "%s: element %s = %g is outside the float32 "
                   "range", path, where, v);
  return cf_fail(CF_E_FORMAT, "%s: element %s is %s", path, where,
                 cf_io_nonfinite_name(v));
}

/* Converts the file's elements to float32 in C order, refusing any value
 * that is not finite as float32. */
static cf_status convert(const char *path, const cf_io_npy_rules *rules,
                         const unsigned char *raw, const npy_layout *l,
                         unsigned ndim, float *dst)
{
  size_t i[3], n = 0;
  for (i[0] = 0; i[0] < l->dims[0]; i[0]++)
    for (i[1] = 0; i[1] < l->dims[1]; i[1]++)
      for (i[2] = 0; i[2] < l->dims[2]; i[2]++) {
        size_t at = i[0] * l->strides[0] + i[1] * l->strides[1] +
                    i[2] * l->strides[2];
        double v = load_elem(raw + at * l->size, l->size, l->swap);
        float f = (float)v;
        if (!isfinite(f))
          return bad_value(path, rules, l, ndim, i, v);
        dst[n++] = f;
      }
  return CF_OK;
}

static cf_status load_data(const char *path, FILE *f, size_t file_size,
                           const npy_header *h, size_t data_at,
                           const cf_io_npy_rules *rules, cf_io_npy_array *out)
{
  size_t size = 0;
  bool swap = false;
  uint64_t count = 0, bytes;
  cf_status s = parse_dtype(path, h, &size, &swap);
  if (s == CF_OK)
    s = check_shape(path, h, rules, &count);
  if (s != CF_OK)
    return s;
  size_t have = file_size - data_at;
  if (__builtin_mul_overflow(count, size, &bytes))
    return cf_fail(CF_E_FORMAT, "%s: data size overflows", path);
  if (bytes != have)
    return cf_fail(CF_E_FORMAT, "%s: %s: data at byte %zu: expected %llu "
                   "bytes, the file has %zu", path,
                   bytes > have ? "truncated" : "trailing bytes", data_at,
                   (unsigned long long)bytes, have);
  npy_layout l;
  make_layout(h, size, swap, &l);
  unsigned char *raw = malloc(have ? have : 1);
  float *v = malloc((size_t)count * sizeof *v);
  if (!raw || !v)
    s = cf_fail(CF_E_NOMEM, "%s: out of memory for %llu taps", path,
                (unsigned long long)count);
  if (s == CF_OK)
    s = cf_io_read(path, f, raw, have);
  if (s == CF_OK)
    s = convert(path, rules, raw, &l, h->ndim, v);
  free(raw);
  if (s != CF_OK) {
    free(v);
    return s;
  }
  out->ndim = h->ndim;
  for (unsigned i = 0; i < h->ndim; i++)
    out->dims[i] = (size_t)h->dims[i];
  out->count = (size_t)count;
  out->v = v;
  return CF_OK;
}

cf_status cf_io_npy_read(const char *path, FILE *f,
                         const cf_io_npy_rules *rules, cf_io_npy_array *out)
{
  *out = (cf_io_npy_array){0};
  size_t file_size = 0, data_at = 0;
  npy_header h;
  cf_status s = cf_io_size(path, f, &file_size);
  if (s == CF_OK)
    s = read_header(path, f, file_size, &h, &data_at);
  if (s == CF_OK)
    s = load_data(path, f, file_size, &h, data_at, rules, out);
  return s;
}

/* ---- 1D kernel sets ------------------------------------------------ */

static cf_status kernel_limits(const char *path, const char *shape,
                               unsigned ndim, const uint64_t *dims,
                               uint64_t count)
{
  uint64_t len = dims[ndim - 1];
  if (len > CF_KERNEL_MAX_TAPS)
    return cf_fail(CF_E_FORMAT, "%s: shape %s: %llu taps, more than the "
                   "limit of %zu", path, shape, (unsigned long long)len,
                   CF_KERNEL_MAX_TAPS);
  for (unsigned i = 0; i + 1 < ndim; i++)
    if (dims[i] > CF_MAX_CHANNELS)
      return cf_fail(CF_E_FORMAT, "%s: shape %s: %llu channels, more than "
                     "the limit of %u", path, shape,
                     (unsigned long long)dims[i], CF_MAX_CHANNELS);
  if (count / len > CF_KERNEL_MAX_COUNT)
    return cf_fail(CF_E_FORMAT, "%s: shape %s: %llu kernels, more than the "
                   "limit of %u", path, shape,
                   (unsigned long long)(count / len), CF_KERNEL_MAX_COUNT);
  return CF_OK;
}

static void kernel_describe(char *buf, size_t cap, unsigned ndim,
                            const size_t *dims, const size_t *idx)
{
  if (ndim == 1)
    snprintf(buf, cap, "(tap %zu)", idx[0]);
  else if (ndim == 2)
    snprintf(buf, cap, "(kernel %zu, tap %zu)", idx[0], idx[1]);
  else
    snprintf(buf, cap, "(kernel %zu, tap %zu)", idx[0] * dims[1] + idx[1],
             idx[2]);
}

static const cf_io_npy_rules kernel_rules = {
    1, 3, "need 1 (shared), 2 (per-channel) or 3 (matrix)", kernel_limits,
    kernel_describe};

static cf_status build(const char *path, const cf_io_npy_array *a,
                       cf_kernel **out)
{
  static const cf_routing routing[] = {CF_ROUTING_SHARED,
                                       CF_ROUTING_PER_CHANNEL,
                                       CF_ROUTING_MATRIX};
  size_t len = a->dims[a->ndim - 1], count = a->count / len;
  const float **ptr = malloc(count * sizeof *ptr);
  if (!ptr)
    return cf_fail(CF_E_NOMEM, "%s: out of memory", path);
  for (size_t k = 0; k < count; k++)
    ptr[k] = a->v + k * len;
  unsigned outputs = a->ndim == 1 ? 1 : (unsigned)a->dims[0];
  unsigned inputs = a->ndim == 3 ? (unsigned)a->dims[1] : outputs;
  cf_status s = cf_io_make_kernel(path, routing[a->ndim - 1], outputs,
                                  inputs, ptr, len, out);
  free(ptr);
  return s;
}

CF_PUBLIC cf_status cf_kernel_load_npy(const char *path, cf_kernel **out)
{
  FILE *f;
  cf_status s = cf_io_begin(path, out, &f);
  if (s != CF_OK)
    return s;
  cf_io_npy_array a;
  s = cf_io_npy_read(path, f, &kernel_rules, &a);
  fclose(f);
  if (s == CF_OK)
    s = build(path, &a, out);
  free(a.v);
  return s;
}
