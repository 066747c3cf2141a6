/* What the two elements of the cudafilter plugin share: the backend
 * property's enum type, an allocator of host memory the engine copies
 * from fastest (pinned where a CUDA device exists), and engine errors as
 * GStreamer errors. The plugin never touches CUDA itself: memory comes
 * from cf_host_alloc(). */
#ifndef CF_GST_COMMON_H
#define CF_GST_COMMON_H

#include <cudafilter/cudafilter.h>
#include <gst/gst.h>

G_BEGIN_DECLS

/* GEnum of cf_backend: "auto", "cpu", "cuda". */
#define CF_GST_TYPE_BACKEND (cf_gst_backend_get_type())

/* device-id and threads: the same ranges on both elements (cudafir's
 * were 0..255 and 0..256, cudaconvolve's 0..1023 and 0..1024) */
#define CF_GST_MAX_DEVICE_ID 1023
#define CF_GST_MAX_THREADS 1024u
GType cf_gst_backend_get_type(void);

/* An allocator handing out cf_host_alloc() memory: its memories have
 * mem_type CF_GST_HOST_MEMORY_TYPE (gst_memory_is_type), and carry the
 * custom flag CF_GST_MEMORY_FLAG_PINNED where the block is pinned. */
#define CF_GST_HOST_MEMORY_TYPE "CudaFilterHostMemory"
#define CF_GST_MEMORY_FLAG_PINNED GST_MEMORY_FLAG_LAST
#define CF_GST_TYPE_HOST_ALLOCATOR (cf_gst_host_allocator_get_type())
GType cf_gst_host_allocator_get_type(void);
/* The process-wide instance (a new reference). */
GstAllocator *cf_gst_host_allocator_get(void);
/* Whether memory `m` came from our allocator and is pinned. */
gboolean cf_gst_memory_is_pinned(GstMemory *m);

/* Post a stream-ending error (text and detail; text is taken) unless the
 * same one is the last *posted (then say so in the debug log only); the
 * element keeps *posted (g_free it, and clear it once it works again).
 * GstBaseTransform retries refused caps at every buffer: one error is
 * enough. */
void cf_gst_post_fatal(GstElement *el, gchar **posted, GQuark domain, gint code,
                       gchar *text, const gchar *detail, const gchar *file,
                       const gchar *func, gint line);
#define CF_GST_POST_FATAL(el, posted, domain, code, text, detail)              \
  cf_gst_post_fatal(GST_ELEMENT(el), posted, domain, code, text, detail,       \
                    __FILE__, GST_FUNCTION, __LINE__)

/* Post a warning (text is taken) whose message carries the detail too,
 * "text: detail", as the errors' do: an application shows the message
 * (Python's msg.parse_warning()[0].message), often alone, and "cudafir:
 * kernel-file refused" hid "cannot open: No such file or directory". */
void cf_gst_post_warning(GstElement *el, GQuark domain, gint code, gchar *text,
                         const gchar *detail, const gchar *file,
                         const gchar *func, gint line);
#define CF_GST_POST_WARNING(el, domain, code, text, detail)                    \
  cf_gst_post_warning(GST_ELEMENT(el), domain, code, text, detail, __FILE__,   \
                      GST_FUNCTION, __LINE__)

/* Whether a setting refused (or kept, not usable) is also said with
 * g_warning: only where el has no bus to carry the warning (gst-launch
 * and gst_parse_launch set properties before there is one). Where it
 * has one, the application hears of it there; a g_warning besides went
 * to its stderr, and aborted one run with G_DEBUG=fatal-warnings, as
 * test suites and many applications run, for a value the element had
 * refused and gone on from (QA: a Python UI setting a NaN tap). */
gboolean cf_gst_warn_without_bus(GstElement *el);

/* Settings refused while the element was stopped (NULL, READY): they
 * make its next start fail with an element error naming them, where the
 * stream ran with the value before (QA: `cudafir 'kernel=<0.5,nan>'` in
 * gst-launch passed the audio unfiltered, exit 0, while a bad kernel-file
 * failed the start). A table of property name -> why (object lock held
 * for all three); a value taken for a property forgets its refusal. */
GHashTable *cf_gst_refusals_new(void);
void cf_gst_refusals_note(GHashTable *t, const gchar *prop, const gchar *why);
/* At start: FALSE, having posted the element error that names them
 * ("<who>: refused before the start: prop (why); prop2 (why2)"), where
 * t holds refusals; TRUE where none. Takes the object lock. */
gboolean cf_gst_refusals_start(GstElement *el, const gchar *who,
                               GHashTable *t);

/* The kernel properties: a GstValueArray of any numbers (no element
 * type in the spec: GObject refused the doubles Python's floats and most
 * C code make where the spec said gfloat, before the element saw them).
 * Its taps as floats, or FALSE with *why (g_free) naming the first
 * element that is not a number GLib converts to double, or not finite
 * (NaN, infinite, past float's range). */
GParamSpec *cf_gst_param_spec_taps(const gchar *name, const gchar *nick,
                                   const gchar *blurb, GParamFlags flags);
gboolean cf_gst_value_taps(const GValue *array, GArray *taps, gchar **why);
/* The `kernel` property's value (a GstValueArray of floats) from the taps
 * in `taps`, read under the object lock and copied: the copy is taken
 * (g_free). The GValues (1M for a 2^20-tap kernel: 61 ms) are made
 * without the lock, which the streaming thread and every other getter
 * waited for meanwhile (QA). */
void cf_gst_taps_value(GstObject *obj, GArray *const *taps, GValue *value);

/* The resource error code for a kernel-file that could not be used:
 * NOT_FOUND (no such file), OPEN_READ (there, not readable), else
 * SETTINGS (what it holds), so an application tells them apart as it
 * does for filesrc, whichever element it is. */
gint cf_gst_kernel_file_code(const gchar *path);

/* The element registrations, one per element file. */
/* Whether a new TIME segment seg carries on the stream old mapped: at
 * time t (where the stream is), the same running and stream time in both,
 * in the same direction (the signs of rate and applied rate); FALSE
 * without a valid t. What makes a filter's history go on through it. */
gboolean cf_gst_segment_goes_on(const GstSegment *old, const GstSegment *seg,
                                GstClockTime t);

gboolean cf_gst_register_cudafir(GstPlugin *plugin);
gboolean cf_gst_register_cudaconvolve(GstPlugin *plugin);

G_END_DECLS

#endif
