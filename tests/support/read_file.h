/* read_file.h: the whole of a file, for the test and benchmark programs (header-only, so that
 * programs built against different libraries, and the standalone GPU build, all share it). */
#ifndef TILEC_TESTS_READ_FILE_H
#define TILEC_TESTS_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes with a NUL after them (malloc'd), and their count in *len (if len is not
 * NULL); NULL if it cannot be opened or read. */
static inline char *test_read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *s = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
    s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  fclose(f);
  if (s) {
    s[n] = 0;
    if (len)
      *len = (size_t)n;
  }
  return s;
}

#endif
