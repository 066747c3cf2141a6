/* Failure reporting shared by the engine suites (see check.h). */
#include "check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

char g_case[4096];
const char *check_variant = "";
uint64_t check_seed;

void set_case(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_case, sizeof g_case, fmt, ap);
  va_end(ap);
}

void add_case(const char *fmt, ...)
{
  size_t used = strlen(g_case);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_case + used, sizeof g_case - used, fmt, ap);
  va_end(ap);
}

void check_report(const char *file, int line, const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("FAILED at %s:%d: %s\n  variant: %s (seed %llu, rerun with "
              "CF_TEST_SEED=%llu CF_TEST_VARIANT=%s)\n  case: %s\n",
              file, line, msg, check_variant,
              (unsigned long long)check_seed,
              (unsigned long long)check_seed, check_variant, g_case);
}

void *xalloc(size_t n)
{
  void *p = calloc(n ? n : 1, 1);
  if (!p) {
    print_error("out of memory (%zu bytes)\n", n);
    fail();
  }
  return p;
}
