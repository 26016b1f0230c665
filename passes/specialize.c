/* specialize.c: substitute compile-time constants (defaults or -D values) and
 * fold; the thread count becomes a number. */
#include "passes.h"

bool pass_specialize(PassContext *pc, Kernel *k)
{
  /* Constant arithmetic the types cannot hold is an error here, where the
   * constants' values are first known (grid(2147483647 * 2147483647) was one
   * block; 1 << 64 reached LLVM). */
  bool ok = ir_fold_stmt_checked(pc->arena, k, k->body, pc->diags);
  for (int i = 0; i < k->grid_rank; i++)
    k->grid[i] = ir_fold_identities(pc->arena, ir_fold_checked(pc->arena, k, k->grid[i], pc->diags, &ok));
  for (int i = 0; i < k->nbufs; i++)
    for (int d = 0; d < k->bufs[i].rank; d++) {
      k->bufs[i].shape[d] = ir_fold_checked(pc->arena, k, k->bufs[i].shape[d], pc->diags, &ok);
      if (k->bufs[i].stride[d])
        k->bufs[i].stride[d] = ir_fold_checked(pc->arena, k, k->bufs[i].stride[d], pc->diags, &ok);
    }
  k->threads = ir_fold_checked(pc->arena, k, k->threads, pc->diags, &ok);
  if (!ok)
    return false;
  int64_t t;
  if (!ex_is_const_int(k->threads, &t) || t < 1 || t > 1024)
    DIE("thread count of '%s' did not fold to 1..1024", k->name);
  k->nthreads = (int)t;
  return true;
}
