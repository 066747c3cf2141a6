/* Status names and the per-thread error message. */
#include "error_internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

CF_PUBLIC const char *cf_status_name(cf_status status)
{
  switch (status) {
  case CF_OK: return "ok";
  case CF_E_INVALID: return "invalid argument";
  case CF_E_NOMEM: return "out of memory";
  case CF_E_UNAVAILABLE: return "not available";
  case CF_E_IO: return "I/O error";
  case CF_E_FORMAT: return "malformed data";
  case CF_E_STATE: return "invalid state";
  case CF_E_DEVICE: return "device error";
  case CF_E_INTERNAL: return "internal error";
  }
  return "unknown status";
}

CF_PUBLIC const char *cf_last_error(void) { return last_error; }

cf_status cf_fail(cf_status status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}
