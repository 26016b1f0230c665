/* mma_policy.c: the choices about tensor-core gemm that several passes ask:
 * the warp grid of an accumulator (layout.c chooses it, gemm.c lowers with it)
 * and whether a gemm takes wgmma (layout.c, lower_tiles.c's swizzle choice and
 * gemm.c, before and after a pipelined loop stages its operands). */
#include "passes.h"

#include <stdio.h>

bool gemm_warp_policy(int nwarps, const int64_t *M, const int64_t *N, int n, int req_wm, int req_wn, int *wm,
                      int *wn, const char **why)
{
  int best_m = 0, best_n = 0;
  int64_t best_cost = INT64_MAX;
  for (int m = 1; m <= nwarps; m++) {
    if (nwarps % m)
      continue;
    int wn_ = nwarps / m;
    if ((req_wm && m != req_wm) || (req_wn && wn_ != req_wn))
      continue;
    int64_t cost = 0;
    for (int i = 0; i < n && cost >= 0; i++) {
      if (M[i] % (m * 16) || N[i] % (wn_ * 8)) {
        cost = -1;
        break;
      }
      /* Shared-memory traffic per warp grows with the warp tile's
       * perimeter; an even number of n8 pieces lets ldmatrix.x4 load B
       * two at a time. */
      int64_t tm = M[i] / m, tn = N[i] / wn_;
      cost += (tm + tn) * 4 + ((tn / 8) % 2 ? 1 : 0) + (tm < tn ? 1 : 0);
    }
    if (cost >= 0 && cost < best_cost) {
      best_cost = cost;
      best_m = m;
      best_n = wn_;
    }
  }
  if (!best_m) {
    *why =
        (req_wm || req_wn)
            ? "the requested warp grid does not use exactly the block's warps, or does not divide the accumulator into 16x8 pieces per warp"
        : n > 1
            ? "no grid of the block's warps divides every accumulator whose rows are shared into 16x8 pieces per warp"
            : "no grid of the block's warps divides the accumulator into 16x8 pieces per warp";
    return false;
  }
  *wm = best_m;
  *wn = best_n;
  return true;
}

/* An operand's 2-D tile shape, without the stage dimension a pipelined loop
 * adds (staged: the gemm reads one stage of it). */
static bool tile_2d(const Kernel *k, int buf, bool staged, int64_t *rows, int64_t *cols)
{
  const Buffer *b = &k->bufs[buf];
  int lead = staged ? 1 : 0;
  if (b->rank - lead != 2)
    return false;
  *rows = b->tile_shape[lead];
  *cols = b->tile_shape[lead + 1];
  return true;
}

/* wgmma is used when:
 *   - the target is sm_90a (wgmma does not exist on sm_90 without "a");
 *   - A and B are f16 or bf16 shared tiles, C is f32; or i8 or u8 (K-major: sema's rule), C i32;
 *     or 8-bit floats, e4m3 or e5m2 each (K-major), C f32;
 *   - the block is whole warpgroups and C is [16 * warps, N]: one m64 slice per
 *     warpgroup, N % 8 == 0 and N <= 256 (one wgmma covers all of N);
 *   - warps_m / warps_n, if given, are (warps, 1);
 *   - each operand tile [R, C] (A or B as stored, transposed or not) has
 *     R % 8 == 0 and C % 16 == 0 (8 bits: 32): whole rows of one of the swizzles' spans
 *     (wgmma_swizzle: 128 bytes when C % 64 == 0, else 64 or 32), so BK a
 *     multiple of 16 for K-major operands and BM, BN multiples of 16 for
 *     MN-major ones; or A is a fragment (registers, [M, K]: layout.c gives it
 *     C's layout, so the warpgroups' A fragments are wgmma's register operand).
 * Anything else takes mma.sync. */
const char *gemm_wgmma_refusal(const PassContext *pc, const Kernel *k, const Stmt *g, char *why, size_t size)
{
  if (pc->target->sm != 90 || !pc->target->arch_specific)
    return "";
  if (k->nthreads <= 0 || k->nthreads % 128) {
    snprintf(why, size, "the block's %d threads are not whole warpgroups of 128", k->nthreads);
    return why;
  }
  const Buffer *A = &k->bufs[g->a], *B = &k->bufs[g->b], *Cb = &k->bufs[g->c];
  bool reg_a = A->scope == SCOPE_FRAGMENT;
  bool int8 = type_is_int8(A->elem);                       /* K-major both (sema), C i32 */
  bool fp8 = type_is_fp8(A->elem) && type_is_fp8(B->elem); /* K-major both, C f32, e4m3 and e5m2 mixed */
  if ((A->scope != SCOPE_SHARED && !reg_a) || B->scope != SCOPE_SHARED)
    return "B (and A, unless a fragment) must be shared tiles";
  if ((A->elem != B->elem && !fp8) || (A->elem != TY_F16 && A->elem != TY_BF16 && !int8 && !fp8) ||
      Cb->elem != (int8 ? TY_I32 : TY_F32) || Cb->rank != 2)
    return "the types are not one of wgmma's (f16/bf16 into f32, i8/u8 into i32, e4m3/e5m2 into f32)";
  int nwarps = k->nthreads / 32;
  int64_t M = Cb->tile_shape[0], N = Cb->tile_shape[1];
  /* M / (16 * nwarps) m64 blocks per warpgroup (layout.c interleaves the warps' row pieces so);
   * their accumulators together at most 128 registers a thread; A in registers: one */
  if (M % (16 * (int64_t)nwarps)) {
    snprintf(why, size, "the accumulator's %lld rows are not a multiple of 16 per warp (%d warps: %d)",
             (long long)M, nwarps, 16 * nwarps);
    return why;
  }
  if (N % 8 || N > 256) {
    snprintf(why, size, "the accumulator's %lld columns are not a multiple of 8 up to 256", (long long)N);
    return why;
  }
  if ((M / (16 * nwarps)) * N > 256) {
    snprintf(why, size,
             "the accumulator (%lld x %lld over %d warps) would take more than 128 registers a thread",
             (long long)M, (long long)N, nwarps);
    return why;
  }
  if (reg_a && M != 16 * (int64_t)nwarps) {
    snprintf(why, size, "A in registers needs the accumulator's rows to be 16 per warp (%d), not %lld",
             16 * nwarps, (long long)M);
    return why;
  }
  if ((g->warps_m && g->warps_m != nwarps) || (g->warps_n && g->warps_n != 1)) {
    snprintf(why, size, "warps_m / warps_n ask for a %dx%d warp grid; wgmma takes %dx1", g->warps_m,
             g->warps_n, nwarps);
    return why;
  }
  int64_t ar, ac, br, bc;
  if (!tile_2d(k, g->a, g->stage_a != NULL, &ar, &ac) || !tile_2d(k, g->b, g->stage_b != NULL, &br, &bc))
    return "an operand is not a 2-D tile";
  /* rows of whole 32-byte units (16 columns of 16 bits, 32 of 8) */
  int64_t ebytes = type_bytes(A->elem);
  if (!((reg_a || (ar % 8 == 0 && ac * ebytes % 32 == 0)) && br % 8 == 0 && bc * ebytes % 32 == 0))
    return "an operand tile's rows are not a multiple of 8 or its rows not whole 32-byte units";
  return NULL;
}

bool gemm_wgmma_eligible(const PassContext *pc, const Kernel *k, const Stmt *g)
{
  char why[160];
  return gemm_wgmma_refusal(pc, k, g, why, sizeof why) == NULL;
}

SwizzleKind wgmma_swizzle(int64_t cols)
{
  return cols % 64 == 0 ? SWIZZLE_128B : cols % 32 == 0 ? SWIZZLE_64B : SWIZZLE_32B;
}

SwizzleKind wgmma_operand_swizzle(int64_t cols, int64_t elem_bytes)
{
  return wgmma_swizzle(cols * elem_bytes / 2);
}
