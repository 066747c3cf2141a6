/* Pixel formats: where each component lives, names, packed layouts. */
#include <stdint.h>
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
  [CF_PIX_I420] = {"I420", CF_SAMPLE_U8, 3, {1, 1, 1}, {0, 1, 1}, 3,
                   {{0, 0, 1, 0}, {1, 0, 1, 1}, {2, 0, 1, 1}}, 0, {0}},
  [CF_PIX_NV12] = {"NV12", CF_SAMPLE_U8, 2, {1, 2}, {0, 1}, 3,
                   {{0, 0, 1, 0}, {1, 0, 2, 1}, {1, 1, 2, 1}}, 0, {0}},
};
#define NFORMATS (sizeof formats / sizeof formats[0])

const cf_format_desc *cf_format_desc_get(cf_pixel_format f)
{
  return (unsigned)f < NFORMATS ? &formats[f] : NULL;
}

CF_PUBLIC const char *cf_pixel_format_name(cf_pixel_format f)
{
  return (unsigned)f < NFORMATS ? formats[f].name : "unknown";
}

CF_PUBLIC cf_status cf_pixel_format_from_string(const char *s,
                                                cf_pixel_format *out)
{
  for (unsigned i = 0; s && i < NFORMATS; i++)
    if (strcasecmp(s, formats[i].name) == 0) {
      *out = (cf_pixel_format)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID, "pixel format '%s': expected GRAY8, "
                 "GRAY16_LE, GRAY32F, RGBA, BGRA, RGBx, BGRx, RGB, BGR, I420 "
                 "or NV12", s ? s : "(null)");
}

CF_PUBLIC size_t cf_frame_layout(cf_pixel_format fmt, unsigned width,
                                 unsigned height, void *base, cf_frame *out)
{
  const cf_format_desc *d = cf_format_desc_get(fmt);
  if (!d || !width || !height)
    return 0;
  size_t off = 0;
  cf_frame f = {{0}, {0}};
  for (unsigned p = 0; p < d->planes; p++) {
    size_t w = cf_sub_size(width, d->plane_sub[p]);
    size_t h = cf_sub_size(height, d->plane_sub[p]);
    f.stride[p] = w * d->plane_bpp[p];
    f.data[p] = base ? (uint8_t *)base + off : NULL;
    off += f.stride[p] * h;
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
  for (unsigned i = 0; s && i < 5; i++)
    if (strcmp(s, border_names[i]) == 0) {
      *out = (cf_border)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID, "border '%s': expected constant, nearest, "
                 "reflect, mirror or wrap", s ? s : "(null)");
}

CF_PUBLIC const char *cf_algorithm2d_name(cf_algorithm2d a)
{
  return (unsigned)a < 4 ? algo2d_names[a] : "unknown";
}

CF_PUBLIC cf_status cf_algorithm2d_from_string(const char *s,
                                               cf_algorithm2d *out)
{
  for (unsigned i = 0; s && i < 4; i++)
    if (strcmp(s, algo2d_names[i]) == 0) {
      *out = (cf_algorithm2d)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID, "2D algorithm '%s': expected auto, direct, "
                 "separable or fft", s ? s : "(null)");
}
