/* plan_shared.c: place shared tiles in the block's shared memory and check the
 * target's budget. */
#include "passes.h"

#include <inttypes.h>

int64_t shared_memory_limit(int sm)
{
	/* Per-block maximum with the opt-in attribute (CUDA programming guide,
	 * compute capabilities table). */
	switch (sm) {
	case 80: return 163 * 1024;
	case 86:
	case 89: return 99 * 1024;
	default: return 227 * 1024;
	}
}

bool pass_plan_shared(PassContext *pc, Kernel *k)
{
	int64_t off = 0;
	for (int i = 0; i < k->nbufs; i++) {
		Buffer *b = &k->bufs[i];
		if (b->scope != SCOPE_SHARED)
			continue;
		int64_t n = buffer_elems(b) * type_bytes(b->elem);
		/* Swizzled tiles take whole 128-byte lines; wgmma's 128-byte swizzle is
		 * applied by the hardware to address bits 4-9, so its tiles (and each
		 * stage, a multiple of 1024 bytes) start on 1024-byte atoms. */
		int64_t align = b->swizzle == SWIZZLE_128B ? 1024 : 128;
		off = (off + align - 1) & ~(align - 1);
		b->smem_offset = off;
		off += n;
	}
	k->smem_bytes = off;
	int64_t limit = shared_memory_limit(pc->sm);
	if (off > limit) {
		error_at(pc->diags, k->loc, "kernel '%s' needs %" PRId64 " bytes of shared memory, more than the %" PRId64
			 " bytes a block can have on sm_%d; use smaller tiles or fewer stages", k->name, off, limit, pc->sm);
		return false;
	}
	return true;
}
