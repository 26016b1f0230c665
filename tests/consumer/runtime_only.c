/* runtime_only: a host of tilec::runtime alone (libtilec_runtime.a: no compiler, no LLVM, no tilec
 * .so), as a host of ahead-of-time PTX is: reads FILE.ptx (vector_add, which run.sh compiles with
 * the installed tilec), parses its metadata block (docs/abi.md) and plans a launch, which needs no
 * GPU. Prints one "OK" line; exit 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tilec_runtime.h>

int main(int argc, char **argv)
{
  static char ptx[1 << 20];
  FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
  size_t len = f ? fread(ptx, 1, sizeof ptx, f) : 0;
  if (f)
    fclose(f);
  if (len == 0) {
    fprintf(stderr, "usage: runtime_only FILE.ptx (a readable one)\n");
    return 1;
  }
  char err[512] = "";
  tl_meta *meta = NULL;
  tl_status st = tl_meta_parse(ptx, len, &meta, err, sizeof err);
  const tl_kernel_info *k = st == TL_OK ? tl_meta_find_kernel(meta, "vector_add") : NULL;
  if (st == TL_OK && !k)
    st = TL_ERR_NOT_FOUND;
  int64_t shape[1] = {10007};
  tl_arg args[3] = {tl_arg_tensor(256, TL_F32, 1, shape), tl_arg_tensor(512, TL_F32, 1, shape),
                    tl_arg_tensor(1024, TL_F32, 1, shape)};
  tl_launch_plan plan;
  if (st == TL_OK)
    st = tl_plan_launch(k, args, 3, &plan, err, sizeof err);
  int ok = st == TL_OK && plan.grid[0] == 3 && plan.block[0] == 256 && plan.nparams == 4;
  if (st == TL_OK)
    tl_launch_plan_release(&plan);
  tl_meta_free(meta);
  if (!ok) {
    fprintf(stderr, "runtime_only: %s: %s\n", tl_status_name(st), err);
    return 1;
  }
  printf("runtime_only: vector_add N=10007 plans a grid of 3 blocks of 256: OK\n");
  return 0;
}
