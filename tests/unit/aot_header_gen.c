/* aot_header_gen: tilec --emit=header for PTX that tilec did not compile (hand-written PTX with a
 * tilec-meta block, such as unit/tmap_kernels.ptx, whose tensor maps the compiler does not emit
 * yet), so that test_aot can build and run the launchers of any metadata.
 *   aot_header_gen IN.ptx OUT.h */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_header.h"
#include "../support/read_file.h"

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: aot_header_gen IN.ptx OUT.h\n");
    return 2;
  }
  size_t len = 0;
  char *ptx = test_read_file(argv[1], &len);
  if (!ptx) {
    fprintf(stderr, "aot_header_gen: cannot read %s\n", argv[1]);
    return 1;
  }
  char err[1024];
  tl_meta *meta = NULL;
  if (tl_meta_parse(ptx, len, &meta, err, sizeof err) != TL_OK) {
    fprintf(stderr, "%s: %s\n", argv[1], err);
    free(ptx);
    return 1;
  }
  /* the header's names come from the file's base name: drop ".ptx" as tilec drops ".tl" */
  char *name = strdup(argv[1]);
  size_t n = name ? strlen(name) : 0;
  if (n > 4 && !strcmp(name + n - 4, ".ptx"))
    name[n - 4] = 0;
  char *header = name ? emit_c_header((const char *const *)&ptx, (const tl_meta *const *)&meta, 1, name,
                                      "aot_header_gen", err, sizeof err)
                      : NULL;
  free(name);
  FILE *out = header ? fopen(argv[2], "w") : NULL;
  int rc = out && fputs(header, out) >= 0 ? 0 : 1;
  if (out && fclose(out) != 0)
    rc = 1;
  if (rc)
    fprintf(stderr, "aot_header_gen: %s\n", header ? "cannot write the header" : err);
  free(header);
  tl_meta_free(meta);
  free(ptx);
  return rc;
}
