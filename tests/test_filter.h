/* CF_TEST_FILTER and CF_TEST_SKIP (cmocka's patterns: * and ?, e.g.
 * 'test_gap' or 'test_file_video*') for the next group run. check.c's
 * check_filter_from_env(); the device suites (tests/gpu), which link no
 * check.c, call it directly. Include after <cmocka.h>. */
#ifndef CF_TEST_FILTER_H
#define CF_TEST_FILTER_H

#include <stdlib.h>

static inline void test_filter_from_env(void)
{
  const char *filter = getenv("CF_TEST_FILTER");
  const char *skip = getenv("CF_TEST_SKIP");
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  if (skip && *skip)
    cmocka_set_skip_filter(skip);
}

#endif
