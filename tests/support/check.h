/* check.h: the unit tests' CHECK macros (header-only, like read_file.h): each failed check prints
 * FAIL file:line: condition: message, and the test's main reports `checks` and `failures`.
 * Thread-safe counters, so that tests may check from several threads. CHECK_STATUS needs
 * tilec_runtime.h (tl_status_name). */
#ifndef TILEC_TESTS_CHECK_H
#define TILEC_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int checks, failures;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    __atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);        \
    if (!(cond)) {                                           \
      __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);    \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
    }                                                        \
  } while (0)

#define CHECK_STATUS(st, expected, msg)                                             \
  CHECK((st) == (expected), "got %s, expected %s; message: %s", tl_status_name(st), \
        tl_status_name(expected), (msg))

#define CHECK_CONTAINS(msg, needle) \
  CHECK(strstr((msg), (needle)) != NULL, "message \"%s\" lacks \"%s\"", (msg), (needle))

#endif
