/* Shared by cudafir and cudaconvolve: see common.h. */
#include "common.h"

#include <string.h>

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

/* The block behind a memory: freed when the memory is. */
typedef struct {
  void *data;
  int pinned;
} HostBlock;

static GQuark pinned_quark;

static void host_block_free(gpointer p)
{
  HostBlock *b = p;
  cf_host_free(b->data);
  g_free(b);
}

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
  HostBlock *b = g_new0(HostBlock, 1);
  b->data = cf_host_alloc(maxsize + align, &b->pinned);
  if (!b->data) {
    GST_WARNING("host allocator: %s", cf_last_error());
    g_free(b);
    return NULL;
  }
  guint8 *data = (guint8 *)(((guintptr)b->data + align) & ~(guintptr)align);
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) && params->prefix)
    memset(data, 0, params->prefix);
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PADDED) && params->padding)
    memset(data + params->prefix + size, 0, params->padding);
  GstMemory *m = gst_memory_new_wrapped(params->flags, data, maxsize,
                                        params->prefix, size, b,
                                        host_block_free);
  if (m)
    gst_mini_object_set_qdata(GST_MINI_OBJECT(m), pinned_quark,
                              GINT_TO_POINTER(b->pinned ? 2 : 1), NULL);
  return m;
}

static void host_free(GstAllocator *alloc, GstMemory *mem)
{
  /* memory from gst_memory_new_wrapped belongs to the system allocator,
   * which frees it (and calls host_block_free); nothing reaches here */
  g_warn_if_reached();
}

static void cf_gst_host_allocator_class_init(CfGstHostAllocatorClass *klass)
{
  GstAllocatorClass *ac = GST_ALLOCATOR_CLASS(klass);
  ac->alloc = host_alloc;
  ac->free = host_free;
  pinned_quark = g_quark_from_static_string("cudafilter-host-pinned");
}

static void cf_gst_host_allocator_init(CfGstHostAllocator *self)
{
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
  /* a shared sub-memory keeps its parent's data: look at the root */
  while (m->parent)
    m = m->parent;
  return pinned_quark &&
         GPOINTER_TO_INT(gst_mini_object_get_qdata(GST_MINI_OBJECT(m),
                                                   pinned_quark)) == 2;
}

void cf_gst_post_fatal(GstElement *el, gchar **posted, GQuark domain, gint code,
                       gchar *text, const gchar *detail, const gchar *func,
                       gint line)
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
  gst_element_message_full(el, GST_MESSAGE_ERROR, domain, code, text,
                           g_strdup(detail), __FILE__, func, line);
}
