/* passes.h: the lowering passes, each Kernel -> Kernel in place, run in order
 * by run_pipeline (pipeline.c), with the verifier between them.
 *
 *   specialize.c         fold constants (-D values); fix the thread count
 *   layout.c             fragment layouts (elementwise, rows, MMA); conflicts diagnosed
 *   lower_tiles.c        copy, fill, parallel loops, reductions -> per-thread statements,
 *     gemm.c               with gemm -> ldmatrix + mma.sync (wgmma on sm_90a),
 *     software_pipeline.c  and pipelined loops -> cp.async stages (lower.h is their shared part)
 *   plan_shared.c        shared-memory offsets and the per-target budget
 */
#ifndef TILEC_PASSES_H
#define TILEC_PASSES_H

#include "ir.h"
#include "target.h"

typedef struct {
	Arena *arena;
	Diags *diags;
	int sm;        /* 80, 86, 89, 90: the target's compute capability (target->sm) */
	bool sm90a;    /* the target is sm_90a: sm_90 with its arch-specific features (wgmma) */
	const Target *target; /* the row of ir/target.h that sm and sm90a come from */
} PassContext;

bool pass_specialize(PassContext *pc, Kernel *k);
bool pass_infer_layouts(PassContext *pc, Kernel *k);
bool pass_lower_tiles(PassContext *pc, Kernel *k);
bool pass_plan_shared(PassContext *pc, Kernel *k);

/* A fragment of the parallel loop's full shape used in its body, or -1: its
 * layout decides which thread runs which iteration (layout.c). */
int loop_full_fragment(const Kernel *k, const Stmt *loop);

/* gemm.c: one warp grid for n accumulators of shapes M[i] x N[i] over nwarps
 * warps (several when they must lay out their rows alike): the requested one
 * (req_* > 0) if it fits them all, else the one with the squarest warp tiles
 * summed over them.  False (with *why) if none fits the m16n8 pieces. */
bool gemm_warp_policy(int nwarps, const int64_t *M, const int64_t *N, int n, int req_wm, int req_wn, int *wm,
		      int *wn, const char **why);

/* gemm.c: whether gemm g may be lowered to wgmma (sm_90a, shapes, types and
 * warp grid allow it; the conditions are listed there).  The one test that
 * layout.c (the accumulator's warp grid), lower_tiles.c (the operands' shared
 * layout) and gemm.c (the lowering) all ask, before and after staging. */
bool gemm_wgmma_eligible(const PassContext *pc, const Kernel *k, const Stmt *g);

/* Names accepted by --dump-after, in pipeline order, NULL-terminated. */
extern const char *const pass_names[];
bool pass_name_valid(const char *name);

/* Runs every pass over every kernel.  If dump_after names a pass (or "all"),
 * the IR after it is appended to dump.  Returns false after a user error. */
bool run_pipeline(PassContext *pc, Module *m, const char *dump_after, StrBuf *dump);

/* Shared memory a block may use on a target of compute capability sm, in bytes
 * (the target table's shared_per_block). */
int64_t shared_memory_limit(int sm);
/* plan_shared.c: local memory a thread may have, on every target. */
enum { MAX_LOCAL_BYTES = 512 * 1024 };

#endif
