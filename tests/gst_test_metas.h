/* Metas of the tests' own, one per kind of tag set, to see which of a
 * buffer's metas an element carries onto a new output buffer: GStreamer's
 * rule (GstBaseTransformClass::transform_meta) is that a meta whose tags
 * say what it depends on stays only where the element keeps that. */
#ifndef CF_TEST_GST_TEST_METAS_H
#define CF_TEST_GST_TEST_METAS_H

#include <gst/gst.h>

enum {
  TM_PLAIN,    /* no tags: depends on nothing (kept by every element) */
  TM_VIDEO,    /* "video" */
  TM_GEOMETRY, /* "video", "size", "orientation": as GstVideoCropMeta */
  TM_OTHER,    /* a tag no element knows */
  TM_AUDIO,    /* "audio", "channels" */
  TM_KINDS
};

static const char *const tm_names[TM_KINDS] = {"plain", "video", "geometry",
                                                "other", "audio"};

static gboolean tm_init(GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  (void)meta, (void)params, (void)buffer;
  return TRUE;
}

/* A copy (the buffer's metas onto another) makes the same meta there;
 * any other transform drops it. */
static gboolean tm_transform(GstBuffer *dst, GstMeta *meta, GstBuffer *src,
                             GQuark type, gpointer data)
{
  (void)src, (void)data;
  if (!GST_META_TRANSFORM_IS_COPY(type))
    return FALSE;
  return gst_buffer_add_meta(dst, meta->info, NULL) != NULL;
}

static const GstMetaInfo *tm_info(int kind)
{
  static const GstMetaInfo *info[TM_KINDS];
  static const gchar *plain[] = {NULL};
  /* GST_META_TAG_VIDEO_STR and its kin (gst/video/video.h), spelled out:
   * the audio suite links no gstreamer-video */
  static const gchar *video[] = {"video", NULL};
  static const gchar *geometry[] = {"video", "size", "orientation", NULL};
  static const gchar *other[] = {"cf-test-other", NULL};
  static const gchar *audio[] = {"audio", "channels", NULL};
  static const gchar **tags[TM_KINDS] = {plain, video, geometry, other, audio};
  if (!info[kind]) {
    char api[64], impl[64];
    g_snprintf(api, sizeof api, "CfTest%sMetaAPI", tm_names[kind]);
    g_snprintf(impl, sizeof impl, "CfTest%sMeta", tm_names[kind]);
    GType t = gst_meta_api_type_register(api, tags[kind]);
    info[kind] = gst_meta_register(t, impl, sizeof(GstMeta), tm_init, NULL,
                                   tm_transform);
  }
  return info[kind];
}

/* One of each kind on b. FALSE where one could not be added. */
static gboolean tm_add_all(GstBuffer *b)
{
  for (int k = 0; k < TM_KINDS; k++)
    if (!tm_info(k) || !gst_buffer_add_meta(b, tm_info(k), NULL))
      return FALSE;
  return TRUE;
}

/* Bit k: b holds a meta of kind k. */
static unsigned tm_mask(GstBuffer *b)
{
  unsigned m = 0;
  for (int k = 0; k < TM_KINDS; k++)
    if (gst_buffer_get_meta(b, tm_info(k)->api))
      m |= 1u << k;
  return m;
}

/* "plain,video" for a mask, in buf. */
static const char *tm_describe(unsigned m, char *buf, size_t n)
{
  buf[0] = '\0';
  for (int k = 0; k < TM_KINDS; k++)
    if (m & (1u << k)) {
      if (buf[0])
        g_strlcat(buf, ",", n);
      g_strlcat(buf, tm_names[k], n);
    }
  if (!buf[0])
    g_strlcpy(buf, "none", n);
  return buf;
}

#endif
