/* Names of backends and algorithms, backend availability, version. */
#include <string.h>

#include "cudafilter/version.h"
#include "engine_internal.h"

static const char *const backend_names[] = {"auto", "cpu", "cuda"};
static const char *const algo_names[] = {"auto", "direct", "fft-uniform",
                                         "fft-nonuniform"};

CF_PUBLIC const char *cf_version(void) { return CF_VERSION_STRING; }

CF_PUBLIC const char *cf_backend_name(cf_backend b)
{
  return (unsigned)b < 3 ? backend_names[b] : "unknown";
}

CF_PUBLIC const char *cf_algorithm_name(cf_algorithm a)
{
  return (unsigned)a < 4 ? algo_names[a] : "unknown";
}

static int lookup(const char *s, const char *const *names, unsigned n)
{
  for (unsigned i = 0; s && i < n; i++)
    if (strcmp(s, names[i]) == 0)
      return (int)i;
  return -1;
}

CF_PUBLIC cf_status cf_backend_from_string(const char *s, cf_backend *out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "backend: out is NULL");
  int i = lookup(s, backend_names, 3);
  if (i < 0)
    return cf_fail(CF_E_INVALID, "backend '%s': expected auto, cpu or cuda",
                   s ? s : "(null)");
  *out = (cf_backend)i;
  return CF_OK;
}

CF_PUBLIC cf_status cf_algorithm_from_string(const char *s, cf_algorithm *out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "algorithm: out is NULL");
  int i = lookup(s, algo_names, 4);
  if (i < 0)
    return cf_fail(CF_E_INVALID, "algorithm '%s': expected auto, direct, "
                   "fft-uniform or fft-nonuniform", s ? s : "(null)");
  *out = (cf_algorithm)i;
  return CF_OK;
}

CF_PUBLIC cf_status cf_backend_available(cf_backend b, const char **reason)
{
  const char *why = NULL;
  cf_status s = CF_OK;
  switch (b) {
  case CF_BACKEND_AUTO:
  case CF_BACKEND_CPU:
    break;
  case CF_BACKEND_CUDA:
    s = cf_cuda_usable(0, &why);
    break;
  default:
    why = "unknown backend";
    s = CF_E_INVALID;
  }
  if (reason)
    *reason = why;
  if (s == CF_E_INVALID)
    cf_fail(s, "backend %d: unknown backend", (int)b);
  else if (s != CF_OK) /* error.h: a failure records its message */
    cf_fail(s, "backend %s is not available: %s", cf_backend_name(b), why);
  return s;
}
