/* passes.h: the lowering passes, each Kernel -> Kernel in place, run in order
 * by run_pipeline (pipeline.c, the one list of them), with the verifier
 * between them.
 *
 *   specialize.c         fold constants (-D values); fix the thread count
 *   layout.c             fragment layouts (elementwise, rows, MMA); conflicts diagnosed
 *   mma_policy.c         the warp grid of gemm accumulators, and when gemm takes wgmma
 *   lower_tiles.c        the seven lowering steps: tile statements -> per-thread ones
 *     (lower.h)            with lower_copy.c, lower_reduce.c, lower_parallel.c, gemm.c
 *                          (ldmatrix + mma.sync, wgmma on sm_90a), software_pipeline.c
 *                          (cp.async stages) and the builders of lower_build.c
 *   plan_shared.c        shared-memory offsets and the per-target budget
 */
#ifndef TILEC_PASSES_H
#define TILEC_PASSES_H

#include "ir.h"
#include "target.h"

typedef struct {
  Arena *arena;
  Diags *diags;
  const Target *target; /* the row of ir/target.h compiled for */
  bool tma_only;        /* TILEC_COMPILE_TMA_ONLY (tilec --tma-only): TMA forms without the form for
                           tmap_ok = 0 */
} PassContext;

bool pass_specialize(PassContext *pc, Kernel *k);
bool pass_infer_layouts(PassContext *pc, Kernel *k);
/* lower_tiles.c: the steps of the lowering, in order */
bool pass_linearize_locals(PassContext *pc, Kernel *k);
bool pass_stage_stores(PassContext *pc, Kernel *k);
bool pass_choose_swizzles(PassContext *pc, Kernel *k);
bool pass_shared_lifetimes(PassContext *pc, Kernel *k);
bool pass_renumber_blocks(PassContext *pc, Kernel *k);
bool pass_lower_tile_ops(PassContext *pc, Kernel *k);
bool pass_drop_scratch_barriers(PassContext *pc, Kernel *k);
bool pass_fragments_to_locals(PassContext *pc, Kernel *k);
bool pass_fold(PassContext *pc, Kernel *k);
bool pass_plan_shared(PassContext *pc, Kernel *k);

/* A fragment of the parallel loop's full shape used in its body, or -1: its
 * layout decides which thread runs which iteration (layout.c). */
int loop_full_fragment(const Kernel *k, const Stmt *loop);

/* mma_policy.c: one warp grid for n accumulators of shapes M[i] x N[i] over nwarps
 * warps (several when they must lay out their rows alike): the requested one
 * (req_* > 0) if it fits them all, else the one with the squarest warp tiles
 * summed over them.  False (with *why) if none fits the m16n8 pieces. */
bool gemm_warp_policy(int nwarps, const int64_t *M, const int64_t *N, int n, int req_wm, int req_wn, int *wm,
                      int *wn, const char **why);

/* mma_policy.c: whether gemm g may be lowered to wgmma (sm_90a, shapes, types and
 * warp grid allow it; the conditions are listed there).  The one test that
 * layout.c (the accumulator's warp grid), lower_tiles.c (the operands' shared
 * layout) and gemm.c (the lowering) all ask, before and after staging. */
bool gemm_wgmma_eligible(const PassContext *pc, const Kernel *k, const Stmt *g);
/* Why a gemm cannot take wgmma: NULL when it can, "" when the target has no wgmma, else a
 * sentence (in why, or a constant) for the remark lower_gemm gives (-Rpass-missed=wgmma). */
const char *gemm_wgmma_refusal(const PassContext *pc, const Kernel *k, const Stmt *g, char *why, size_t size);
/* The layout of a wgmma operand tile whose rows are cols 16-bit elements
 * (cols % 16 == 0): the widest swizzle whose panels divide the rows. */
SwizzleKind wgmma_swizzle(int64_t cols);
/* A gemm operand's: by the bytes of its rows (cols of elem_bytes: 8-bit rows are half as long). */
SwizzleKind wgmma_operand_swizzle(int64_t cols, int64_t elem_bytes);

/* The steps of the pipeline, in order: pass_name(i, &group) for i below
 * pass_count() (NULL beyond).  --dump-after takes a step's name, a group's,
 * "all" (every step) or "groups" (the end of every group: --emit=tir). */
int pass_count(void);
const char *pass_name(int i, const char **group);
bool pass_name_valid(const char *name);

/* Runs every step over every kernel.  If dump_after names a step or group (or
 * "all", "groups"), the IR after it is appended to dump.  Returns false after
 * a user error. */
bool run_pipeline(PassContext *pc, Module *m, const char *dump_after, StrBuf *dump);
/* The same, stopping after the step named last (a step's name, not a group's):
 * the tile-level interpreter runs the IR after "specialize". */
bool run_pipeline_through(PassContext *pc, Module *m, const char *last);

/* plan_shared.c: local memory a thread may have, on every target. */
enum { MAX_LOCAL_BYTES = 512 * 1024 };

#endif
