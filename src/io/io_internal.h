/* Internal: helpers shared by the kernel-file loaders (load.c holds them). */
#ifndef CF_IO_INTERNAL_H
#define CF_IO_INTERNAL_H

#include <stdio.h>

#include "../engine/error_internal.h"
#include "cudafilter/kernel.h"

/* A growable array of taps. Callers check CF_KERNEL_MAX_TAPS themselves,
 * where they know the position to report. */
typedef struct cf_io_taps {
  float *v;
  size_t len, cap;
} cf_io_taps;

/* Room for `extra` more taps; CF_E_NOMEM (message names path) otherwise. */
cf_status cf_io_taps_reserve(cf_io_taps *t, size_t extra, const char *path);
void cf_io_taps_free(cf_io_taps *t);

/* CF_E_INVALID unless path and out are set; clears *out. */
cf_status cf_io_check_args(const char *path, cf_kernel **out);
/* fopen(path, "rb"), refusing directories; CF_E_IO names path and errno. */
cf_status cf_io_open(const char *path, FILE **out);
/* cf_io_check_args then cf_io_open: how every loader starts. */
cf_status cf_io_begin(const char *path, cf_kernel **out, FILE **f);
/* Size of an open regular file. */
cf_status cf_io_size(const char *path, FILE *f, size_t *size);
/* Reads exactly n bytes; CF_E_FORMAT at end of file, CF_E_IO on error. */
cf_status cf_io_read(const char *path, FILE *f, void *buf, size_t n);

/* A kernel set of outputs x inputs (as `routing` counts them) kernels of
 * `len` taps each, taps[i] for kernel i. Errors are prefixed with path. */
cf_status cf_io_make_kernel(const char *path, cf_routing routing,
                            unsigned outputs, unsigned inputs,
                            const float *const *taps, size_t len,
                            cf_kernel **out);

/* "NaN", "infinite" or "finite" (for messages). */
const char *cf_io_nonfinite_name(double v);

#endif
