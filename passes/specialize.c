/* specialize.c: substitute compile-time constants (defaults or -D values) and
 * fold; the thread count becomes a number. */
#include "passes.h"

bool pass_specialize(PassContext *pc, Kernel *k)
{
	ir_fold_stmt(pc->arena, k, k->body);
	for (int i = 0; i < k->grid_rank; i++)
		k->grid[i] = ir_fold(pc->arena, k, k->grid[i]);
	for (int i = 0; i < k->nbufs; i++)
		for (int d = 0; d < k->bufs[i].rank; d++)
			k->bufs[i].shape[d] = ir_fold(pc->arena, k, k->bufs[i].shape[d]);
	k->threads = ir_fold(pc->arena, k, k->threads);
	int64_t t;
	if (!ex_is_const_int(k->threads, &t) || t < 1 || t > 1024)
		DIE("thread count of '%s' did not fold to 1..1024", k->name);
	k->nthreads = (int)t;
	return true;
}
