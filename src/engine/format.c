/* Pixel formats: where each component lives, names, packed layouts. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "video_internal.h"

#define PACKED(off, step) {0, off, step, 0}
/* name, sample, planes, plane bpp, plane sub, ncomp, comp, extra */
static const cf_format_desc formats[] = {
  [CF_PIX_GRAY8] = {"GRAY8", CF_SAMPLE_U8, 1, {1}, {0}, 1,
                    {PACKED(0, 1)}, 0, {0}},
  [CF_PIX_GRAY16_LE] = {"GRAY16_LE", CF_SAMPLE_U16, 1, {2}, {0}, 1,
                        {PACKED(0, 2)}, 0, {0}},
  [CF_PIX_GRAY32F] = {"GRAY32F", CF_SAMPLE_F32, 1, {4}, {0}, 1,
                      {PACKED(0, 4)}, 0, {0}},
  [CF_PIX_RGBA] = {"RGBA", CF_SAMPLE_U8, 1, {4}, {0}, 3,
                   {PACKED(0, 4), PACKED(1, 4), PACKED(2, 4)}, 1,
                   PACKED(3, 4)},
  [CF_PIX_BGRA] = {"BGRA", CF_SAMPLE_U8, 1, {4}, {0}, 3,
                   {PACKED(2, 4), PACKED(1, 4), PACKED(0, 4)}, 1,
                   PACKED(3, 4)},
  [CF_PIX_RGBX] = {"RGBx", CF_SAMPLE_U8, 1, {4}, {0}, 3,
                   {PACKED(0, 4), PACKED(1, 4), PACKED(2, 4)}, 1,
                   PACKED(3, 4)},
  [CF_PIX_BGRX] = {"BGRx", CF_SAMPLE_U8, 1, {4}, {0}, 3,
                   {PACKED(2, 4), PACKED(1, 4), PACKED(0, 4)}, 1,
                   PACKED(3, 4)},
  [CF_PIX_RGB] = {"RGB", CF_SAMPLE_U8, 1, {3}, {0}, 3,
                  {PACKED(0, 3), PACKED(1, 3), PACKED(2, 3)}, 0, {0}},
  [CF_PIX_BGR] = {"BGR", CF_SAMPLE_U8, 1, {3}, {0}, 3,
                  {PACKED(2, 3), PACKED(1, 3), PACKED(0, 3)}, 0, {0}},
#define XY (CF_SUB_X | CF_SUB_Y)
  [CF_PIX_I420] = {"I420", CF_SAMPLE_U8, 3, {1, 1, 1}, {0, XY, XY}, 3,
                   {{0, 0, 1, 0}, {1, 0, 1, XY}, {2, 0, 1, XY}}, 0, {0}},
  [CF_PIX_NV12] = {"NV12", CF_SAMPLE_U8, 2, {1, 2}, {0, XY}, 3,
                   {{0, 0, 1, 0}, {1, 0, 2, XY}, {1, 1, 2, XY}}, 0, {0}},
  [CF_PIX_Y444] = {"Y444", CF_SAMPLE_U8, 3, {1, 1, 1}, {0, 0, 0}, 3,
                   {{0, 0, 1, 0}, {1, 0, 1, 0}, {2, 0, 1, 0}}, 0, {0}},
  [CF_PIX_Y42B] = {"Y42B", CF_SAMPLE_U8, 3, {1, 1, 1},
                   {0, CF_SUB_X, CF_SUB_X}, 3,
                   {{0, 0, 1, 0}, {1, 0, 1, CF_SUB_X}, {2, 0, 1, CF_SUB_X}},
                   0, {0}},
#undef XY
};
#define NFORMATS (sizeof formats / sizeof formats[0])

const cf_format_desc *cf_format_desc_get(cf_pixel_format f)
{
  return (unsigned)f < NFORMATS ? &formats[f] : NULL;
}

int cf_format_same_grids(cf_pixel_format a, cf_pixel_format b)
{
  /* Y444 and RGB share grids too, but not components */
  int a420 = a == CF_PIX_I420 || a == CF_PIX_NV12;
  int b420 = b == CF_PIX_I420 || b == CF_PIX_NV12;
  return cf_format_desc_get(a) && (a == b || (a420 && b420));
}

CF_PUBLIC const char *cf_pixel_format_name(cf_pixel_format f)
{
  return (unsigned)f < NFORMATS ? formats[f].name : "unknown";
}

CF_PUBLIC cf_status cf_pixel_format_from_string(const char *s,
                                                cf_pixel_format *out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "pixel format: out is NULL");
  for (unsigned i = 0; s && i < NFORMATS; i++)
    if (strcasecmp(s, formats[i].name) == 0) {
      *out = (cf_pixel_format)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID, "pixel format '%s': expected GRAY8, "
                 "GRAY16_LE, GRAY32F, RGBA, BGRA, RGBx, BGRx, RGB, BGR, I420, "
                 "NV12, Y444 or Y42B", s ? s : "(null)");
}

CF_PUBLIC size_t cf_frame_layout(cf_pixel_format fmt, unsigned width,
                                 unsigned height, void *base, cf_frame *out)
{
  const cf_format_desc *d = cf_format_desc_get(fmt);
  if (!d) {
    cf_fail(CF_E_INVALID, "frame layout: unknown pixel format %d", (int)fmt);
    return 0;
  }
  if (!width || !height || width > CF_VIDEO_MAX_SIDE ||
      height > CF_VIDEO_MAX_SIDE) {
    cf_fail(CF_E_INVALID, "frame layout: %s %ux%u, each side must be 1..%u",
            d->name, width, height, CF_VIDEO_MAX_SIDE);
    return 0;
  }
  size_t off = 0, bytes;
  cf_frame f = {{0}, {0}};
  for (unsigned p = 0; p < d->planes; p++) {
    size_t w = cf_sub_w(width, d->plane_sub[p]);
    size_t h = cf_sub_h(height, d->plane_sub[p]);
    /* 32768^2 x 4 bytes fits a 64-bit size_t, not a 32-bit one */
    if (__builtin_mul_overflow(w, (size_t)d->plane_bpp[p], &f.stride[p]) ||
        __builtin_mul_overflow(f.stride[p], h, &bytes) ||
        __builtin_add_overflow(off, bytes, &bytes)) {
      cf_fail(CF_E_INVALID, "frame layout: %s %ux%u is more bytes than "
              "size_t holds", d->name, width, height);
      return 0;
    }
    f.data[p] = base ? (uint8_t *)base + off : NULL;
    off = bytes;
  }
  if (out)
    *out = f;
  return off;
}

static const char *const border_names[] = {"constant", "nearest", "reflect",
                                           "mirror", "wrap"};
static const char *const algo2d_names[] = {"auto", "direct", "separable",
                                           "fft"};

CF_PUBLIC const char *cf_border_name(cf_border b)
{
  return (unsigned)b < 5 ? border_names[b] : "unknown";
}

CF_PUBLIC cf_status cf_border_from_string(const char *s, cf_border *out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "border: out is NULL");
  for (unsigned i = 0; s && i < 5; i++)
    if (strcmp(s, border_names[i]) == 0) {
      *out = (cf_border)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID, "border '%s': expected constant, nearest, "
                 "reflect, mirror or wrap", s ? s : "(null)");
}

/* Component names and the family of formats they belong to. */
enum { FAM_ANY, FAM_RGB, FAM_YUV };
static const struct {
  const char *name;
  unsigned mask;
  int family;
} comp_names[] = {
    {"all", CF_COMP_ALL, FAM_ANY},   {"r", CF_COMP_R, FAM_RGB},
    {"red", CF_COMP_R, FAM_RGB},     {"g", CF_COMP_G, FAM_RGB},
    {"green", CF_COMP_G, FAM_RGB},   {"b", CF_COMP_B, FAM_RGB},
    {"blue", CF_COMP_B, FAM_RGB},    {"y", CF_COMP_Y, FAM_YUV},
    {"luma", CF_COMP_LUMA, FAM_YUV}, {"u", CF_COMP_U, FAM_YUV},
    {"v", CF_COMP_V, FAM_YUV},       {"chroma", CF_COMP_U | CF_COMP_V, FAM_YUV},
};

static bool is_gray(cf_pixel_format f)
{
  return f == CF_PIX_GRAY8 || f == CF_PIX_GRAY16_LE || f == CF_PIX_GRAY32F;
}

static int format_family(cf_pixel_format f)
{
  return is_gray(f)                             ? FAM_ANY
         : f == CF_PIX_I420 || f == CF_PIX_NV12 || f == CF_PIX_Y444 ||
                 f == CF_PIX_Y42B
             ? FAM_YUV
             : FAM_RGB;
}

/* One word of a components list (len bytes at w): a mask, a name, or a
 * run of letters of one family ("gb", "uv"). Its mask and family, or
 * CF_E_INVALID saying why not. */
static cf_status component_word(const char *w, size_t len, const char *s,
                                unsigned *mask, int *family)
{
  if (w[0] >= '0' && w[0] <= '9') {
    char buf[32], *end;
    unsigned long v = 0;
    if (len < sizeof buf) {
      memcpy(buf, w, len);
      buf[len] = '\0';
      errno = 0;
      v = strtoul(buf, &end, 0);
      if (errno || *end != '\0')
        v = 0;
    }
    if (v == 0 || v > CF_COMP_ALL)
      return cf_fail(CF_E_INVALID, "components: '%.*s' is not a mask 1..7",
                     (int)len, w);
    *mask = (unsigned)v;
    *family = FAM_ANY;
    return CF_OK;
  }
  for (size_t i = 0; i < sizeof comp_names / sizeof comp_names[0]; i++)
    if (strlen(comp_names[i].name) == len &&
        strncasecmp(w, comp_names[i].name, len) == 0) {
      *mask = comp_names[i].mask;
      *family = comp_names[i].family;
      return CF_OK;
    }
  static const char rgb[] = "rgb", yuv[] = "yuv";
  unsigned m = 0;
  int fam = FAM_ANY;
  for (size_t i = 0; i < len; i++) {
    char c = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] - 'A' + 'a' : w[i]);
    const char *p;
    int f;
    if (c && (p = strchr(rgb, c)) != NULL)
      f = FAM_RGB, m |= 1u << (p - rgb);
    else if (c && (p = strchr(yuv, c)) != NULL)
      f = FAM_YUV, m |= 1u << (p - yuv);
    else
      return cf_fail(CF_E_INVALID,
                     "components: unknown component '%.*s' in '%s' "
                     "(expected all, luma, chroma, a mask 1..7, or r, g, b, "
                     "y, u, v and runs of them such as gb)",
                     (int)len, w, s);
    if (fam != FAM_ANY && f != fam)
      return cf_fail(CF_E_INVALID,
                     "components: '%.*s' mixes RGB and YUV letters",
                     (int)len, w);
    fam = f;
  }
  *mask = m;
  *family = fam;
  return CF_OK;
}

static bool comp_space(char c)
{
  return c == ' ' || c == '\t';
}

CF_PUBLIC cf_status cf_components_from_string(const char *s,
                                              cf_pixel_format fmt,
                                              unsigned *out)
{
  if (!s || !out || !cf_format_desc_get(fmt))
    return cf_fail(CF_E_INVALID, "components: %s",
                   !s     ? "empty"
                   : !out ? "no place for the mask"
                          : "unknown pixel format");
  const char *fname = cf_pixel_format_name(fmt);
  unsigned mask = 0;
  int words = 0;
  /* words apart by spaces or by one comma (spaces around it allowed) */
  for (const char *p = s;;) {
    while (comp_space(*p))
      p++;
    if (*p == '\0' && !words)
      return cf_fail(CF_E_INVALID, "components: empty");
    size_t len = 0;
    while (p[len] && p[len] != ',' && !comp_space(p[len]))
      len++;
    if (!len)
      return cf_fail(CF_E_INVALID, "components: an empty item in '%s'", s);
    unsigned m = 0;
    int fam = FAM_ANY;
    cf_status st = component_word(p, len, s, &m, &fam);
    if (st != CF_OK)
      return st;
    /* Gray has one component: "y"/"luma" name it, colours do not. */
    if ((is_gray(fmt) && fam == FAM_RGB) ||
        (!is_gray(fmt) && fam != FAM_ANY && fam != format_family(fmt)))
      return cf_fail(CF_E_INVALID,
                     "components: '%.*s' is not a component of %s", (int)len,
                     p, fname);
    mask |= m;
    words++;
    p += len;
    while (comp_space(*p))
      p++;
    if (*p == '\0')
      break;
    if (*p == ',') {
      p++;
      while (comp_space(*p))
        p++;
      if (*p == '\0' || *p == ',')
        return cf_fail(CF_E_INVALID, "components: an empty item in '%s'", s);
    }
  }
  if (is_gray(fmt) && !(mask & CF_COMP_Y))
    return cf_fail(CF_E_INVALID,
                   "components: %s has one component (mask "
                   "1); '%s' selects none of it",
                   fname, s);
  *out = is_gray(fmt) ? mask & CF_COMP_Y : mask;
  return CF_OK;
}

CF_PUBLIC const char *cf_algorithm2d_name(cf_algorithm2d a)
{
  return (unsigned)a < 4 ? algo2d_names[a] : "unknown";
}

CF_PUBLIC cf_status cf_algorithm2d_from_string(const char *s,
                                               cf_algorithm2d *out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "algorithm2d: out is NULL");
  for (unsigned i = 0; s && i < 4; i++)
    if (strcmp(s, algo2d_names[i]) == 0) {
      *out = (cf_algorithm2d)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID, "2D algorithm '%s': expected auto, direct, "
                 "separable or fft", s ? s : "(null)");
}
