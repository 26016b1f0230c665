/* timing.h: wall-clock samples for the benchmark programs (header-only, like read_file.h). */
#ifndef TILEC_TESTS_TIMING_H
#define TILEC_TESTS_TIMING_H

#include <stdlib.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC. */
static inline double test_now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static inline int test_compare_doubles(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v[0 .. n) (n >= 1) and returns its median. */
static inline double test_median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, test_compare_doubles);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
