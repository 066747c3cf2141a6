/* Shared by cudafir and cudaconvolve: see common.h. */
#include "common.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

GType cf_gst_backend_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {CF_BACKEND_AUTO, "CUDA where a usable device exists, else the CPU",
     "auto"},
    {CF_BACKEND_CPU, "CPU (SIMD direct and FFTW)", "cpu"},
    {CF_BACKEND_CUDA, "CUDA (fails where no device is usable)", "cuda"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("CudaFilterBackend", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

/* ---- host allocator ------------------------------------------------------ */

typedef struct {
  GstAllocator parent;
} CfGstHostAllocator;
typedef struct {
  GstAllocatorClass parent_class;
} CfGstHostAllocatorClass;

G_DEFINE_TYPE(CfGstHostAllocator, cf_gst_host_allocator, GST_TYPE_ALLOCATOR)

/* A memory of ours. A root memory lives at the start of its own
 * cf_host_alloc() block, data after it: one allocation per memory (the
 * block, a wrapping GstMemory, its owner record and a qdata mark cost four,
 * and twice the time: 0.76 us against 0.38 us for the system allocator,
 * allocating and freeing 8 KiB). A share is a separate small struct that
 * points into its root's data. */
typedef struct {
  GstMemory mem;
  guint8 *data; /* the first of mem.maxsize bytes */
} HostMemory;

#define HOST_HEAD ((sizeof(HostMemory) + 63) & ~(gsize)63)

static GstMemory *host_alloc(GstAllocator *alloc, gsize size,
                             GstAllocationParams *params)
{
  /* params->align is a mask (alignment - 1); cf_host_alloc aligns to 64,
   * a larger alignment takes up to `align` bytes more */
  gsize align = params->align | 63;
  if (size > G_MAXSIZE / 2 || params->prefix > G_MAXSIZE / 8 ||
      params->padding > G_MAXSIZE / 8 || align > G_MAXSIZE / 8) {
    GST_WARNING("host allocator: %" G_GSIZE_FORMAT
                " bytes (prefix %" G_GSIZE_FORMAT ", padding %" G_GSIZE_FORMAT
                ", align %" G_GSIZE_FORMAT "): too large",
                size, params->prefix, params->padding, params->align);
    return NULL;
  }
  gsize maxsize = size + params->prefix + params->padding;
  int pinned = 0;
  guint8 *block = cf_host_alloc(HOST_HEAD + align + maxsize, &pinned);
  if (!block) {
    GST_WARNING("host allocator: %s", cf_last_error());
    return NULL;
  }
  HostMemory *hm = (HostMemory *)block;
  guint8 *data =
      (guint8 *)(((guintptr)block + HOST_HEAD + align) & ~(guintptr)align);
  gst_memory_init(GST_MEMORY_CAST(hm),
                  params->flags | (pinned ? CF_GST_MEMORY_FLAG_PINNED : 0),
                  alloc, NULL, maxsize, align, params->prefix, size);
  hm->data = data;
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) && params->prefix)
    memset(data, 0, params->prefix);
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PADDED) && params->padding)
    memset(data + params->prefix + size, 0, params->padding);
  return GST_MEMORY_CAST(hm);
}

static void host_free(GstAllocator *alloc, GstMemory *mem)
{
  (void)alloc;
  /* a root is its cf_host_alloc() block; a share (it has a parent) is a
   * struct of its own */
  if (mem->parent)
    g_free(mem);
  else
    cf_host_free(mem);
}

static gpointer host_map(GstMemory *mem, gsize maxsize, GstMapFlags flags)
{
  (void)maxsize, (void)flags;
  return ((HostMemory *)mem)->data;
}

static void host_unmap(GstMemory *mem)
{
  (void)mem;
}

/* A read-only view of `size` bytes at `offset` (-1: to the end), as the
 * system allocator's share: it keeps the root alive. */
static GstMemory *host_share(GstMemory *mem, gssize offset, gssize size)
{
  GstMemory *parent = mem->parent ? mem->parent : mem;
  if (size == -1)
    size = (gssize)mem->size > offset ? (gssize)mem->size - offset : 0;
  HostMemory *sub = g_new0(HostMemory, 1);
  gst_memory_init(GST_MEMORY_CAST(sub),
                  GST_MINI_OBJECT_FLAGS(parent) |
                      GST_MINI_OBJECT_FLAG_LOCK_READONLY,
                  mem->allocator, parent, mem->maxsize, mem->align,
                  mem->offset + offset, size);
  sub->data = ((HostMemory *)mem)->data;
  return GST_MEMORY_CAST(sub);
}

/* A new memory of ours (pinned again where a device is) holding a copy. */
static GstMemory *host_copy(GstMemory *mem, gssize offset, gssize size)
{
  if (size == -1)
    size = (gssize)mem->size > offset ? (gssize)mem->size - offset : 0;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = mem->align;
  GstMemory *copy = host_alloc(mem->allocator, (gsize)size, &params);
  if (copy && size > 0)
    memcpy(((HostMemory *)copy)->data,
           ((HostMemory *)mem)->data + mem->offset + offset, (gsize)size);
  return copy;
}

static gboolean host_is_span(GstMemory *m1, GstMemory *m2, gsize *offset)
{
  if (offset)
    *offset = m1->offset - m1->parent->offset;
  return ((HostMemory *)m1)->data + m1->offset + m1->size ==
         ((HostMemory *)m2)->data + m2->offset;
}

static void cf_gst_host_allocator_class_init(CfGstHostAllocatorClass *klass)
{
  GstAllocatorClass *ac = GST_ALLOCATOR_CLASS(klass);
  ac->alloc = host_alloc;
  ac->free = host_free;
}

static void cf_gst_host_allocator_init(CfGstHostAllocator *self)
{
  GstAllocator *a = GST_ALLOCATOR_CAST(self);
  a->mem_type = CF_GST_HOST_MEMORY_TYPE;
  a->mem_map = host_map;
  a->mem_unmap = host_unmap;
  a->mem_share = host_share;
  a->mem_copy = host_copy;
  a->mem_is_span = host_is_span;
  GST_OBJECT_FLAG_SET(self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *cf_gst_host_allocator_get(void)
{
  static GstAllocator *instance;
  if (g_once_init_enter(&instance)) {
    GstAllocator *a = g_object_new(CF_GST_TYPE_HOST_ALLOCATOR, NULL);
    gst_object_ref_sink(a);
    GST_OBJECT_FLAG_SET(a, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    g_once_init_leave(&instance, a);
  }
  return gst_object_ref(instance);
}

gboolean cf_gst_memory_is_pinned(GstMemory *m)
{
  /* a share keeps its root's flags */
  return gst_memory_is_type(m, CF_GST_HOST_MEMORY_TYPE) &&
         GST_MEMORY_FLAG_IS_SET(m, CF_GST_MEMORY_FLAG_PINNED);
}

/* "text: detail" (text is taken), or text without a detail. */
static gchar *with_detail(gchar *text, const gchar *detail)
{
  if (!detail || !*detail)
    return text;
  gchar *full = g_strdup_printf("%s: %s", text, detail);
  g_free(text);
  return full;
}

void cf_gst_post_fatal(GstElement *el, gchar **posted, GQuark domain, gint code,
                       gchar *text, const gchar *detail, const gchar *file,
                       const gchar *func, gint line)
{
  gchar *key = g_strconcat(text, "\n", detail, NULL);
  if (*posted && !strcmp(*posted, key)) {
    GST_DEBUG_OBJECT(el, "again, not posted: %s", key);
    g_free(key);
    g_free(text);
    return;
  }
  g_free(*posted);
  *posted = key;
  /* the reason in the message too: an application shows the message,
   * often alone ("cudafir: cannot filter 1 channels at 44100 Hz" hid
   * "backend cuda is not available: ..." in the debug string) */
  gst_element_message_full(el, GST_MESSAGE_ERROR, domain, code,
                           with_detail(text, detail), g_strdup(detail), file,
                           func, line);
}

void cf_gst_post_warning(GstElement *el, GQuark domain, gint code, gchar *text,
                         const gchar *detail, const gchar *file,
                         const gchar *func, gint line)
{
  gst_element_message_full(el, GST_MESSAGE_WARNING, domain, code,
                           with_detail(text, detail), g_strdup(detail), file,
                           func, line);
}

gboolean cf_gst_warn_without_bus(GstElement *el)
{
  GstBus *bus = gst_element_get_bus(el);
  if (!bus)
    return TRUE;
  gst_object_unref(bus);
  return FALSE;
}

GHashTable *cf_gst_refusals_new(void)
{
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

void cf_gst_refusals_note(GHashTable *t, const gchar *prop, const gchar *why)
{
  g_hash_table_replace(t, g_strdup(prop), g_strdup(why));
}

/* "prop (why); prop2 (why2)", sorted by name, or NULL where none */
static gchar *refusals_text(GHashTable *t)
{
  if (!g_hash_table_size(t))
    return NULL;
  GList *keys = g_list_sort(g_hash_table_get_keys(t), (GCompareFunc)strcmp);
  GString *s = g_string_new(NULL);
  for (GList *l = keys; l; l = l->next)
    g_string_append_printf(s, "%s%s (%s)", s->len ? "; " : "",
                           (const gchar *)l->data,
                           (const gchar *)g_hash_table_lookup(t, l->data));
  g_list_free(keys);
  return g_string_free(s, FALSE);
}

gboolean cf_gst_refusals_start(GstElement *el, const gchar *who,
                               GHashTable *t)
{
  GST_OBJECT_LOCK(el);
  gchar *refused = refusals_text(t);
  guint n = g_hash_table_size(t);
  GST_OBJECT_UNLOCK(el);
  if (!refused)
    return TRUE;
  GST_ELEMENT_ERROR(el, RESOURCE, SETTINGS,
                    ("%s: refused before the start: %s", who, refused),
                    ("set %s to a value taken (or unset it) to start",
                     n == 1 ? "it" : "them"));
  g_free(refused);
  return FALSE;
}

GParamSpec *cf_gst_param_spec_taps(const gchar *name, const gchar *nick,
                                   const gchar *blurb, GParamFlags flags)
{
  return gst_param_spec_array(name, nick, blurb, NULL, flags);
}

gboolean cf_gst_value_taps(const GValue *array, GArray *taps, gchar **why)
{
  guint n = gst_value_array_get_size(array);
  g_array_set_size(taps, 0);
  for (guint i = 0; i < n; i++) {
    const GValue *v = gst_value_array_get_value(array, i);
    GValue d = G_VALUE_INIT;
    g_value_init(&d, G_TYPE_DOUBLE);
    gboolean ok = G_VALUE_TYPE(v) != G_TYPE_BOOLEAN &&
                  g_value_type_transformable(G_VALUE_TYPE(v), G_TYPE_DOUBLE) &&
                  g_value_transform(v, &d);
    if (!ok) {
      gchar *text = gst_value_serialize(v);
      *why = g_strdup_printf("tap %u (%s, a %s) is not a number", i,
                             text ? text : "?", G_VALUE_TYPE_NAME(v));
      g_free(text);
      g_value_unset(&d);
      g_array_set_size(taps, 0);
      return FALSE;
    }
    gfloat f = (gfloat)g_value_get_double(&d);
    g_value_unset(&d);
    if (!isfinite(f)) {
      *why = g_strdup_printf("tap %u is %s", i,
                             isnan(f) ? "NaN"
                                      : "infinite or past float's range");
      g_array_set_size(taps, 0);
      return FALSE;
    }
    g_array_append_val(taps, f);
  }
  return TRUE;
}

void cf_gst_taps_value(GstObject *obj, GArray *const *taps, GValue *value)
{
  GST_OBJECT_LOCK(obj);
  guint n = (*taps)->len;
  gfloat *copy = n ? g_malloc(n * sizeof *copy) : NULL;
  if (n)
    memcpy(copy, (*taps)->data, n * sizeof *copy);
  GST_OBJECT_UNLOCK(obj);
  for (guint i = 0; i < n; i++) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_TYPE_FLOAT);
    g_value_set_float(&v, copy[i]);
    gst_value_array_append_and_take_value(value, &v);
  }
  g_free(copy);
}

gint cf_gst_kernel_file_code(const gchar *path)
{
  if (!path || !*path)
    return GST_RESOURCE_ERROR_SETTINGS;
  if (!g_file_test(path, G_FILE_TEST_EXISTS))
    return GST_RESOURCE_ERROR_NOT_FOUND;
  if (g_access(path, R_OK) != 0)
    return GST_RESOURCE_ERROR_OPEN_READ;
  return GST_RESOURCE_ERROR_SETTINGS;
}

gboolean cf_gst_segment_goes_on(const GstSegment *old, const GstSegment *seg,
                                GstClockTime t)
{
  if (old->format != GST_FORMAT_TIME || seg->format != GST_FORMAT_TIME ||
      !GST_CLOCK_TIME_IS_VALID(t) || (old->rate < 0) != (seg->rate < 0) ||
      (old->applied_rate < 0) != (seg->applied_rate < 0))
    return FALSE;
  guint64 r0 = gst_segment_to_running_time(old, GST_FORMAT_TIME, t);
  guint64 r1 = gst_segment_to_running_time(seg, GST_FORMAT_TIME, t);
  return GST_CLOCK_TIME_IS_VALID(r0) && r0 == r1 &&
         gst_segment_to_stream_time(old, GST_FORMAT_TIME, t) ==
             gst_segment_to_stream_time(seg, GST_FORMAT_TIME, t);
}
