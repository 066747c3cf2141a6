/* Kernel sets: routing, shape and the taps of every kernel. */
#include "kernel_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned count_for(cf_routing r, unsigned outputs, unsigned inputs)
{
  return r == CF_ROUTING_MATRIX ? outputs * inputs
         : r == CF_ROUTING_PER_CHANNEL ? outputs : 1;
}

CF_PUBLIC cf_status cf_kernel_new(cf_routing routing, unsigned outputs,
                                  unsigned inputs, cf_kernel **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "kernel set: out is NULL");
  *out = NULL;
  if (outputs == 0 || inputs == 0 || outputs > CF_MAX_CHANNELS ||
      inputs > CF_MAX_CHANNELS)
    return cf_fail(CF_E_INVALID, "kernel set: %u outputs x %u inputs, each "
                   "must be 1..%u", outputs, inputs, CF_MAX_CHANNELS);
  switch (routing) {
  case CF_ROUTING_SHARED:
    if (outputs != 1 || inputs != 1)
      return cf_fail(CF_E_INVALID, "shared kernel set: outputs and inputs "
                     "must be 1, got %u x %u", outputs, inputs);
    break;
  case CF_ROUTING_PER_CHANNEL:
    if (outputs != inputs)
      return cf_fail(CF_E_INVALID, "per-channel kernel set: outputs (%u) "
                     "must equal inputs (%u)", outputs, inputs);
    break;
  case CF_ROUTING_MATRIX:
    if ((size_t)outputs * inputs > CF_KERNEL_MAX_COUNT)
      return cf_fail(CF_E_INVALID, "matrix kernel set: %u x %u kernels, "
                     "more than %u", outputs, inputs, CF_KERNEL_MAX_COUNT);
    break;
  default:
    return cf_fail(CF_E_INVALID, "kernel set: unknown routing %d",
                   (int)routing);
  }
  cf_kernel *k = calloc(1, sizeof *k);
  unsigned n = count_for(routing, outputs, inputs);
  if (k) {
    k->taps = calloc(n, sizeof *k->taps);
    k->len = calloc(n, sizeof *k->len);
  }
  if (!k || !k->taps || !k->len) {
    cf_kernel_free(k);
    return cf_fail(CF_E_NOMEM, "kernel set: out of memory for %u kernels", n);
  }
  k->routing = routing;
  k->outputs = outputs;
  k->inputs = inputs;
  k->count = n;
  *out = k;
  return CF_OK;
}

CF_PUBLIC cf_status cf_kernel_new_shared(const float *taps, size_t len,
                                         cf_kernel **out)
{
  cf_status s = cf_kernel_new(CF_ROUTING_SHARED, 1, 1, out);
  if (s == CF_OK && (s = cf_kernel_set(*out, 0, taps, len)) != CF_OK) {
    cf_kernel_free(*out);
    *out = NULL;
  }
  return s;
}

CF_PUBLIC void cf_kernel_free(cf_kernel *k)
{
  if (!k)
    return;
  for (unsigned i = 0; k->taps && i < k->count; i++)
    free(k->taps[i]);
  free(k->taps);
  free(k->len);
  free(k);
}

/* k's kernels, in their order, in a new set of that shape (as many
 * kernels as k's: cf_kernel_copy, cf_kernel_as_matrix). */
static cf_status copy_as(const cf_kernel *k, cf_routing routing,
                         unsigned outputs, unsigned inputs, cf_kernel **out)
{
  cf_status s = cf_kernel_new(routing, outputs, inputs, out);
  for (unsigned i = 0; s == CF_OK && i < k->count; i++)
    if (k->len[i])
      s = cf_kernel_set(*out, i, k->taps[i], k->len[i]);
  if (s != CF_OK) {
    cf_kernel_free(*out);
    *out = NULL;
  }
  return s;
}

CF_PUBLIC cf_status cf_kernel_copy(const cf_kernel *k, cf_kernel **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "kernel copy: out is NULL");
  *out = NULL;
  if (!k)
    return cf_fail(CF_E_INVALID, "kernel copy: NULL kernel set");
  return copy_as(k, k->routing, k->outputs, k->inputs, out);
}

CF_PUBLIC cf_status cf_kernel_as_matrix(const cf_kernel *k, unsigned inputs,
                                        cf_kernel **out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "kernel as matrix: out is NULL");
  *out = NULL;
  if (!k)
    return cf_fail(CF_E_INVALID, "kernel as matrix: NULL kernel set");
  if (k->routing == CF_ROUTING_MATRIX && k->inputs == inputs)
    return cf_kernel_copy(k, out);
  if (inputs == 0 || inputs > CF_MAX_CHANNELS || k->count % inputs ||
      k->count / inputs > CF_MAX_CHANNELS)
    return cf_fail(CF_E_INVALID, "kernel as matrix: %u kernel%s cannot be "
                   "read as a matrix of %u input%s (their number must be a "
                   "multiple of the inputs, and the outputs at most %u)",
                   k->count, k->count == 1 ? "" : "s", inputs,
                   inputs == 1 ? "" : "s", CF_MAX_CHANNELS);
  return copy_as(k, CF_ROUTING_MATRIX, k->count / inputs, inputs, out);
}

CF_PUBLIC cf_status cf_kernel_set(cf_kernel *k, unsigned index,
                                  const float *taps, size_t len)
{
  CF_NEED(k, "kernel set", "kernel");
  if (index >= k->count)
    return cf_fail(CF_E_INVALID, "kernel index %u out of range (set has %u)",
                   index, k->count);
  if (len > CF_KERNEL_MAX_TAPS)
    return cf_fail(CF_E_INVALID, "kernel %u: %zu taps, more than the limit "
                   "of %zu", index, len, CF_KERNEL_MAX_TAPS);
  if (len == 0 && k->routing != CF_ROUTING_MATRIX)
    return cf_fail(CF_E_INVALID, "kernel %u: no taps (only matrix entries "
                   "may be empty)", index);
  if (len && !taps)
    return cf_fail(CF_E_INVALID, "kernel %u: taps is NULL", index);
  for (size_t j = 0; j < len; j++)
    if (!isfinite(taps[j]))
      return cf_fail(CF_E_INVALID, "kernel %u: tap %zu is %s", index, j,
                     isnan(taps[j]) ? "NaN" : "infinite");
  float *copy = NULL;
  if (len) {
    copy = malloc(len * sizeof *copy);
    if (!copy)
      return cf_fail(CF_E_NOMEM, "kernel %u: out of memory for %zu taps",
                     index, len);
    memcpy(copy, taps, len * sizeof *copy);
  }
  free(k->taps[index]);
  k->taps[index] = copy;
  k->len[index] = len;
  return CF_OK;
}

CF_PUBLIC cf_status cf_kernel_scale(cf_kernel *k, float gain)
{
  CF_NEED(k, "kernel scale", "kernel");
  if (!isfinite(gain))
    return cf_fail(CF_E_INVALID, "kernel scale: gain is %s",
                   isnan(gain) ? "NaN" : "infinite");
  /* all or nothing: no tap changes unless every product is finite */
  for (unsigned i = 0; i < k->count; i++)
    for (size_t j = 0; j < k->len[i]; j++)
      if (!isfinite(k->taps[i][j] * gain))
        return cf_fail(CF_E_INVALID, "kernel scale: gain %g makes tap %zu "
                       "of kernel %u (%g) overflow to infinity",
                       (double)gain, j, i, (double)k->taps[i][j]);
  for (unsigned i = 0; i < k->count; i++)
    for (size_t j = 0; j < k->len[i]; j++)
      k->taps[i][j] *= gain;
  return CF_OK;
}

/* the accessors answer 0 (NULL) for a NULL kernel */
CF_PUBLIC cf_routing cf_kernel_routing(const cf_kernel *k)
{
  return k ? k->routing : CF_ROUTING_SHARED;
}
CF_PUBLIC unsigned cf_kernel_outputs(const cf_kernel *k)
{
  return k ? k->outputs : 0;
}
CF_PUBLIC unsigned cf_kernel_inputs(const cf_kernel *k)
{
  return k ? k->inputs : 0;
}
CF_PUBLIC unsigned cf_kernel_count(const cf_kernel *k)
{
  return k ? k->count : 0;
}

CF_PUBLIC const float *cf_kernel_taps(const cf_kernel *k, unsigned index,
                                      size_t *len)
{
  if (!k || index >= k->count) {
    if (len)
      *len = 0;
    return NULL;
  }
  if (len)
    *len = k->len[index];
  return k->taps[index];
}

CF_PUBLIC size_t cf_kernel_max_len(const cf_kernel *k)
{
  size_t m = 0;
  for (unsigned i = 0; k && i < k->count; i++)
    if (k->len[i] > m)
      m = k->len[i];
  return m;
}

static const char *const routing_names[] = {"shared", "per-channel", "matrix"};

CF_PUBLIC const char *cf_routing_name(cf_routing r)
{
  return (unsigned)r < 3 ? routing_names[r] : "unknown";
}

CF_PUBLIC cf_status cf_routing_from_string(const char *s, cf_routing *out)
{
  if (!out)
    return cf_fail(CF_E_INVALID, "routing: out is NULL");
  for (unsigned i = 0; i < 3; i++)
    if (s && strcmp(s, routing_names[i]) == 0) {
      *out = (cf_routing)i;
      return CF_OK;
    }
  return cf_fail(CF_E_INVALID, "routing '%s': expected shared, per-channel "
                 "or matrix", s ? s : "(null)");
}
