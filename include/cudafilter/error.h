/* cudafilter — status codes and error messages.
 *
 * Every fallible call returns a cf_status. On failure it also records a
 * message for the calling thread that names the problem (file, position,
 * argument, limit); cf_last_error() returns it.
 *
 * Pointers. A call that makes an object or parses a name into *out (the
 * constructors, copies, loaders, presets, prepare_swap*, *_from_string)
 * refuses out == NULL with CF_E_INVALID. A handle (cf_kernel, cf_kernel2d,
 * cf_engine, cf_swap_prep*) passed to any other call must be one the
 * library made and has not freed (a freed one is not detected). A NULL
 * handle is refused: the calls that return a cf_status return
 * CF_E_INVALID with a message naming the call ("process: NULL engine"),
 * the accessors answer 0 or NULL (cf_engine_describe a sentence saying
 * so), the *_free and *_config_init calls do nothing. */
#ifndef CUDAFILTER_ERROR_H
#define CUDAFILTER_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_status {
  CF_OK = 0,
  CF_E_INVALID,     /* an argument is out of range or inconsistent */
  CF_E_NOMEM,       /* host or device memory exhausted */
  CF_E_UNAVAILABLE, /* backend or feature not available (reason in message) */
  CF_E_IO,          /* a file could not be opened, read or written */
  CF_E_FORMAT,      /* a file's content is malformed or hostile */
  CF_E_STATE,       /* the call is not valid in the object's current state */
  CF_E_DEVICE,      /* a device (GPU) failed: launch error, lost device */
  CF_E_INTERNAL     /* a library we depend on failed unexpectedly */
} cf_status;

/* Short constant name of a status, e.g. "invalid argument". */
const char *cf_status_name(cf_status status);

/* Message of the last failed cf_ call in this thread ("" if none). The
 * pointer stays valid until the next failing cf_ call in the same thread. */
const char *cf_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
