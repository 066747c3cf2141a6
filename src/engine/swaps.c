/* The swap list of the 1D backends (engine_internal.h, cf_swaps). */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

cf_status cf_swaps_init(cf_swaps *l, void *first)
{
  cf_status s = cf_swaps_reserve(l);
  if (s == CF_OK)
    cf_swaps_push(l, first, 0, 0);
  return s;
}

cf_status cf_swaps_reserve(cf_swaps *l)
{
  /* the retired ones count: cf_swaps_retire moves banks there */
  if (l->n + l->nretired < l->cap)
    return CF_OK;
  unsigned cap = l->cap ? 2 * l->cap : CF_SWAPS_START;
  void **b = realloc(l->bank, cap * sizeof *b);
  if (b)
    l->bank = b;
  cf_swap *w = b ? realloc(l->sw, cap * sizeof *w) : NULL;
  if (w)
    l->sw = w;
  void **r = w ? realloc(l->retired, cap * sizeof *r) : NULL;
  if (r)
    l->retired = r;
  if (!r)
    return cf_fail(CF_E_NOMEM, "engine: out of memory for %u kernel sets", cap);
  l->cap = cap;
  return CF_OK;
}

void cf_swaps_take_retired(cf_swaps *l, void **dead, unsigned *ndead,
                           unsigned cap)
{
  unsigned i = 0;
  for (; i < l->nretired && *ndead < cap; i++)
    dead[(*ndead)++] = l->retired[i];
  memmove(l->retired, l->retired + i, (l->nretired - i) * sizeof *l->retired);
  l->nretired -= i;
}

/* The last swap has not reached its point by t: it waits for the
 * crossfade before it (the first bank is no swap). */
static int waiting(const cf_swaps *l, uint64_t t)
{
  return l->n > 1 && l->sw[l->n - 1].s >= t;
}

/* The y index from which a swap asked for at t is in force. */
static uint64_t point(const cf_swaps *l, uint64_t t)
{
  unsigned n = l->n - (waiting(l, t) ? 1 : 0);
  if (!n)
    return t;
  const cf_swap *p = &l->sw[n - 1];
  return p->s + p->x > t ? p->s + p->x : t;
}

void cf_swaps_push(cf_swaps *l, void *bank, uint64_t t, size_t x)
{
  uint64_t s = point(l, t);
  /* a waiting swap gave no output yet: the newer one takes its place
   * (cf_swaps_reserve left room for it among the retired) */
  if (waiting(l, t))
    l->retired[l->nretired++] = l->bank[--l->n];
  if (l->n)
    l->sw[l->n - 1].end = s;
  l->bank[l->n] = bank;
  l->sw[l->n++] = (cf_swap){s, UINT64_MAX, x};
}

/* Does an output at a y index >= y need bank i? It does as the bank in
 * force on [s, end), or as the old side of the next bank's crossfade.
 * When bank i's successor was retired, the bank now after it has its
 * crossfade over for every coming output (else the successor would have
 * been kept for it), so the answer stays right. */
static int needed(const cf_swaps *l, unsigned i, uint64_t y)
{
  const cf_swap *w = &l->sw[i];
  if (i + 1 == l->n || (y > w->s ? y : w->s) < w->end)
    return 1;
  const cf_swap *nx = &l->sw[i + 1];
  /* the last swap, no output of it given yet, may still be replaced by a
   * newer one (cf_swaps_push) whose crossfade blends from bank i: kept
   * while it waits (a crossfade of 0 had it retired as soon as the
   * output reached its point, and the newer swap then blended from the
   * replaced one) */
  if (i + 2 == l->n && nx->s >= y)
    return 1;
  uint64_t fade_end = nx->s + nx->x < nx->end ? nx->s + nx->x : nx->end;
  return (y > nx->s ? y : nx->s) < fade_end;
}

void cf_swaps_retire(cf_swaps *l, uint64_t y)
{
  unsigned keep = 0;
  for (unsigned i = 0; i < l->n; i++) { /* entries i, i + 1 still in place */
    if (needed(l, i, y)) {
      l->sw[keep] = l->sw[i];
      l->bank[keep++] = l->bank[i];
    } else
      l->retired[l->nretired++] = l->bank[i];
  }
  l->n = keep;
}

void cf_swaps_reset(cf_swaps *l)
{
  for (unsigned i = 0; i + 1 < l->n; i++)
    l->retired[l->nretired++] = l->bank[i];
  l->bank[0] = l->bank[l->n - 1];
  l->sw[0] = (cf_swap){0, UINT64_MAX, 0};
  l->n = 1;
}

unsigned cf_swaps_pick(const cf_swaps *l, uint64_t y, double *w)
{
  unsigned k = l->n - 1;
  while (k > 0 && l->sw[k].s > y)
    k--;
  const cf_swap *sw = &l->sw[k];
  *w = k == 0 || y - sw->s >= sw->x ? 1.0
                                    : (double)(y - sw->s + 1) / (sw->x + 1.0);
  return k;
}

void cf_swaps_free(cf_swaps *l)
{
  free(l->bank);
  free(l->sw);
  free(l->retired);
  memset(l, 0, sizeof *l);
}
