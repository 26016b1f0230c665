/* directives.h: the "//-" option lines of a fuzz input's source (fuzz_compile.c's header comment
 * lists them), for fuzz_compile.c and fuzz_interp.c. Header-only: each target includes it once. */
#ifndef TILEC_FUZZ_DIRECTIVES_H
#define TILEC_FUZZ_DIRECTIVES_H

#include <stdlib.h>
#include <string.h>

#include "libtilec_internal.h" /* compiler/: TILEC_COMPILE_TMA_ONLY */
#include "tilec.h"             /* tilec_define */

#define MAX_DEFINES 8

/* The "//-" option lines, as NUL-terminated copies in one allocation. */
typedef struct {
  char *store;
  tilec_define defines[MAX_DEFINES];
  int ndefines;
  const char *kernel;
  const char *dump_after;
  unsigned flags; /* //-tma-only: TILEC_COMPILE_TMA_ONLY (fuzz_compile) */
} Directives;

static inline void parse_directives(const char *src, size_t len, Directives *dv)
{
  memset(dv, 0, sizeof *dv);
  dv->store = malloc(len + 1);
  char *out = dv->store;
  for (size_t i = 0; i < len;) {
    size_t end = i;
    while (end < len && src[end] != '\n')
      end++;
    const char *line = src + i;
    size_t n = end - i;
    i = end + 1;
    if (n < 4 || memcmp(line, "//-", 3) || memchr(line, 0, n))
      continue;
    char *copy = out;
    memcpy(copy, line + 3, n - 3);
    copy[n - 3] = 0;
    out += n - 2;
    if (!strncmp(copy, "D ", 2) && dv->ndefines < MAX_DEFINES) {
      char *eq = strchr(copy + 2, '=');
      if (!eq || eq == copy + 2)
        continue;
      *eq = 0;
      dv->defines[dv->ndefines++] = (tilec_define){copy + 2, eq + 1};
    } else if (!strncmp(copy, "k ", 2)) {
      dv->kernel = copy + 2;
    } else if (!strncmp(copy, "dump ", 5)) {
      dv->dump_after = copy + 5;
    } else if (!strcmp(copy, "tma-only")) {
      dv->flags |= TILEC_COMPILE_TMA_ONLY;
    }
  }
}

#endif
