/* compiler_only: a host of tilec::compiler (tilec.h alone): FILE.tl to PTX for sm_80 in the process,
 * checked for its metadata block and target. Prints one "OK" line; exit 1 on any failure.
 */
#include <stdio.h>
#include <string.h>

#include <tilec.h>

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: compiler_only FILE.tl\n");
    return 1;
  }
  tilec_options opt = {0};
  opt.arch = "sm_80";
  opt.opt_level = 3;
  tilec_result *r = NULL;
  tilec_status st = tilec_compile_file(argv[1], &opt, &r);
  const char *ptx = st == TILEC_OK ? tilec_result_output(r) : NULL;
  int ok = ptx && !strncmp(ptx, "// tilec-meta v1\n", 17) && strstr(ptx, "\n.target sm_80") &&
           tilec_result_num_kernels(r) == 1;
  if (!ok)
    fprintf(stderr, "compiler_only: status %d\n%s", (int)st, r ? tilec_result_diagnostics_text(r) : "");
  else
    printf("compiler_only: %s to PTX for sm_80 (%zu bytes): OK\n", tilec_result_kernel(r, 0)->name,
           strlen(ptx));
  tilec_result_free(r);
  return ok ? 0 : 1;
}
