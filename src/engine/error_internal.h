/* Internal: record an error message for this thread and return status. */
#ifndef CF_ERROR_INTERNAL_H
#define CF_ERROR_INTERNAL_H

#include "cudafilter/error.h"

#define CF_PUBLIC __attribute__((visibility("default")))

cf_status cf_fail(cf_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
