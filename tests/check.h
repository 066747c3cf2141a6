/* Failure reporting shared by the engine suites (test_engine, test_video):
 * a failed CHECK prints the message, the variant and seed to rerun with,
 * and the parameters of the case running now, then fails the test. */
#ifndef CF_TEST_CHECK_H
#define CF_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>

extern char g_case[4096];         /* parameters of the case running now */
extern const char *check_variant; /* the variant running now */
extern uint64_t check_seed;

void set_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void add_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void check_report(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* calloc that fails the test instead of returning NULL. */
void *xalloc(size_t n);

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      check_report(__FILE__, __LINE__, __VA_ARGS__);                           \
      fail();                                                                  \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    cf_status st_ = (expr);                                                    \
    CHECK(st_ == CF_OK, "%s returned %s: %s", #expr, cf_status_name(st_),      \
          cf_last_error());                                                    \
  } while (0)

#endif
