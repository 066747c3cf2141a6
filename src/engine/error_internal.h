/* Internal: record an error message for this thread and return status. */
#ifndef CF_ERROR_INTERNAL_H
#define CF_ERROR_INTERNAL_H

#include "cudafilter/error.h"

#define CF_PUBLIC __attribute__((visibility("default")))

cf_status cf_fail(cf_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A NULL handle (error.h): refused with CF_E_INVALID and a message naming
 * the call, never dereferenced. */
#define CF_NEED(h, call, what)                                               \
  do {                                                                       \
    if (!(h))                                                                \
      return cf_fail(CF_E_INVALID, "%s: NULL %s", call, what);               \
  } while (0)

#endif
