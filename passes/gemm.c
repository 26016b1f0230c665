/* gemm.c: gemm(A, B, C) on tensor cores: wgmma on sm_90a when the gemm
 * qualifies (gemm_wgmma_eligible, lower_gemm_wgmma at the end of this file),
 * otherwise mma.sync.m16n8k16 (sm_80 and up), described here.
 *
 * The accumulator C has the MMA layout (ir.h): warps_m x warps_n warps, each
 * owning frag_m x frag_n pieces of 16x8.  For every 16-wide step kk of K, each
 * warp loads its A pieces and B pieces from shared memory with ldmatrix and
 * issues frag_m * frag_n mma instructions:
 *
 *   A [M, K] row-major:   ldmatrix.x4, lane l addresses row m0 + l%16, col kk + (l/16)*8
 *   A^T [K, M]:           ldmatrix.x4.trans, row kk + l%8 + (l/16)*8, col m0 + ((l/8)%2)*8
 *   B [K, N]:             ldmatrix.x4.trans, row kk + l%16, col n0 + (l/16)*8   (two n8 pieces)
 *   B^T [N, K]:           ldmatrix.x4, row n0 + l%8 + (l/16)*8, col kk + ((l/8)%2)*8
 *
 * The four 8x8 matrices arrive in the register order mma wants: a0..a3 for A
 * (rows 0-7/8-15 x k 0-7/8-15), {b0, b1} of piece n0 then of n0+8 for B.
 * Shared tiles that gemm reads are swizzled (codegen's tile_offset), so the
 * eight rows one ldmatrix matrix reads fall in eight different bank groups.
 *
 * A in a fragment (registers; attention's P = S cast to 16 bits) has the
 * accumulator layout (layout.c: one column of warps), and the accumulator's
 * pieces (fm, 2kk) and (fm, 2kk + 1) are register for register the A operand
 * of step kk: c0 c1 (row g, cols 2q, 2q+1) = a0 a1, c2 c3 (row g+8) = a2 a3,
 * and the next piece's, 8 columns on, a4 .. a7.  So the mma reads 8
 * consecutive 16-bit registers of the fragment, packed in pairs, and no
 * ldmatrix runs for A.
 */
#include "lower.h"

#include <inttypes.h>
#include <stdlib.h>

typedef struct {
  Expr *lane, *wm, *wn; /* this thread's lane and warp position */
} WarpPos;

static WarpPos warp_pos(Lw *w, StmtList *out, const FragLayout *L)
{
  WarpPos p;
  p.lane = lw_var(w, lw_let(w, out, "lane", lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, 32))));
  int warp = lw_let(w, out, "warp", lw_bin(w, OP_DIV, lw_var(w, w->tid), lw_i32(w, 32)));
  p.wm = lw_var(w, lw_let(w, out, "wm", lw_bin(w, OP_DIV, lw_var(w, warp), lw_i32(w, L->warps_n))));
  p.wn = lw_var(w, lw_let(w, out, "wn", lw_bin(w, OP_MOD, lw_var(w, warp), lw_i32(w, L->warps_n))));
  return p;
}

static Stmt *ldmatrix(Lw *w, int regs, Expr *base, int count, bool trans, int buf, Expr *stage, Expr *row,
                      Expr *col)
{
  Stmt *s = st_new(w->a, ST_LDMATRIX, NO_LOC);
  s->buf = regs;
  s->idx = lw_idx1(w, base);
  s->nidx = 1;
  s->matrices = count;
  s->trans = trans;
  s->src_buf = buf;
  s->nsrc_idx = stage ? 3 : 2;
  s->src_idx = ARENA_ARRAY(w->a, Expr *, 3);
  int i = 0;
  if (stage)
    s->src_idx[i++] = lw_clone(w, stage);
  s->src_idx[i++] = row;
  s->src_idx[i] = col;
  return s;
}

static Stmt *lower_gemm_wgmma(Lw *w, Stmt *s);

Stmt *lower_gemm(Lw *w, Stmt *s)
{
  if (lw_gemm_uses_wgmma(w, s))
    return lower_gemm_wgmma(w, s);
  char why[160];
  const char *refusal = gemm_wgmma_refusal(w->pc, w->k, s, why, sizeof why);
  if (!refusal)
    refusal = "layout inference gave the accumulator a warp grid other than one column of warpgroups "
              "(another gemm or an epilogue shares it)";
  if (*refusal)
    remark_at(w->pc->diags, s->loc, "gemm takes mma.sync, not wgmma: %s", refusal);
  const Buffer *A = &w->k->bufs[s->a], *Cb = &w->k->bufs[s->c];
  if (type_is_fp8(A->elem)) /* layout.c reports an fp8 gemm wgmma cannot take; this is its backstop */
    error_at(w->pc->diags, s->loc,
             "gemm on 8-bit floats runs only on wgmma, and its accumulator's layout does not allow it");
  const FragLayout *L = &Cb->layout;
  int sa = s->stage_a != NULL;
  int64_t K = A->tile_shape[sa + !s->trans_a];
  int FM = L->frag_m, FN = L->frag_n;
  /* The instruction's K: 32 bytes of each row, m16n8k16 for 16 bits, m16n8k32 for 8 (K-major
   * operands only, sema), whose fragments are the 16-bit ones byte for byte; half a step is the
   * second 8x8 matrix of 16-byte rows. */
  const int64_t KS = 32 / type_bytes(A->elem), KH = KS / 2;
  StmtList out = {0};
  if (!w->k->min_blocks_per_sm) /* unless the kernel says: registers matter more than occupancy */
    w->k->min_blocks_per_sm = 1;
  WarpPos p = warp_pos(w, &out, L);
  bool reg_a = A->scope == SCOPE_FRAGMENT;
  /* A in quads (ir.h, k_quads; layout.c gives it only with B^T [N, K] in shared memory and 16-bit
   * inputs): B's registers of piece ni are its 16-bit elements ni * 4 .. + 3, read as one vector. */
  bool quads = reg_a && A->layout.k_quads;
  int afrag = reg_a ? -1 : lw_new_buffer(w, "afrag", SCOPE_LOCAL, TY_U32, (int64_t)FM * 4);
  int bfrag = quads ? lw_new_buffer(w, "bquad", SCOPE_LOCAL, w->k->bufs[s->b].elem, (int64_t)FN * 4)
                    : lw_new_buffer(w, "bfrag", SCOPE_LOCAL, TY_U32, (int64_t)(FN + 1) / 2 * 4);
  int kk = lw_fresh(w, "kk", VAR_LOOP);
  StmtList step = {0};
  Expr *k0 = lw_mul_c(w, lw_var(w, kk), KS);
  Expr *n_base = lw_mul_c(w, lw_clone(w, p.wn), (int64_t)FN * 8);
  Expr *row, *col;

  /* A pieces: one ldmatrix.x4 per 16x16; A in registers is read by the mma itself. */
  if (!reg_a) {
    int fm = lw_fresh(w, "fm", VAR_LOOP);
    Expr *m0 = lw_mma_row0(w, L, lw_clone(w, p.wm), lw_var(w, fm));
    if (!s->trans_a) {
      row = lw_add(w, m0, lw_mod_c(w, lw_clone(w, p.lane), 16));
      col = lw_add(w, lw_clone(w, k0), lw_mul_c(w, lw_div_c(w, lw_clone(w, p.lane), 16), KH));
    } else {
      row = lw_add(w, lw_add(w, lw_clone(w, k0), lw_mod_c(w, lw_clone(w, p.lane), 8)),
                   lw_mul_c(w, lw_div_c(w, lw_clone(w, p.lane), 16), 8));
      col = lw_add(w, m0, lw_mul_c(w, lw_mod_c(w, lw_div_c(w, lw_clone(w, p.lane), 8), 2), 8));
    }
    stlist_push(w->a, &step,
                lw_unrolled(w, fm, FM,
                            ldmatrix(w, afrag, lw_mul_c(w, lw_var(w, fm), 4), 4, s->trans_a, s->a, s->stage_a,
                                     row, col)));
  }

  /* B pieces in quads: lane l reads B^T's row n0 + l/4, columns kk*16 + 4 (l%4) .. + 3 (8 bytes,
   * conflict-free in the swizzled tile: the 8 rows of a half-warp's loads fall in 8 chunks). */
  for (int ni = 0; quads && ni < FN; ni++) {
    Expr *idx[3];
    int n = 0;
    if (s->stage_b)
      idx[n++] = lw_clone(w, s->stage_b);
    idx[n++] = lw_add(w, lw_add(w, lw_clone(w, n_base), lw_i32(w, (int64_t)ni * 8)),
                      lw_div_c(w, lw_clone(w, p.lane), 4));
    idx[n++] = lw_add(w, lw_clone(w, k0), lw_mul_c(w, lw_mod_c(w, lw_clone(w, p.lane), 4), 4));
    lw_vcopy(w, &step, bfrag, lw_idx1(w, lw_i32(w, (int64_t)ni * 4)), 1, s->b, idx, n, 4, 0, n - 1);
  }
  /* B pieces: ldmatrix.x4 covers two n8 pieces; an odd last one takes x2. */
  for (int pair = 0; !quads && pair < (FN + 1) / 2; pair++) {
    int count = 2 * pair + 1 < FN ? 4 : 2;
    Expr *n0 = lw_add(w, lw_clone(w, n_base), lw_i32(w, (int64_t)pair * 16));
    if (!s->trans_b) {
      row = lw_add(w, lw_clone(w, k0), lw_mod_c(w, lw_clone(w, p.lane), 16));
      col = lw_add(w, n0, lw_mul_c(w, lw_div_c(w, lw_clone(w, p.lane), 16), 8));
    } else {
      row = lw_add(w, lw_add(w, n0, lw_mod_c(w, lw_clone(w, p.lane), 8)),
                   lw_mul_c(w, lw_div_c(w, lw_clone(w, p.lane), 16), 8));
      col = lw_add(w, lw_clone(w, k0), lw_mul_c(w, lw_mod_c(w, lw_div_c(w, lw_clone(w, p.lane), 8), 2), KH));
    }
    if (count == 2 && s->trans_b) /* x2: lanes 0-15 address n0 + l%8, k + ((l/8)%2)*8 */
      row = lw_add(w, lw_clone(w, n0), lw_mod_c(w, lw_clone(w, p.lane), 8));
    stlist_push(
        w->a, &step,
        ldmatrix(w, bfrag, lw_i32(w, (int64_t)pair * 4), count, !s->trans_b, s->b, s->stage_b, row, col));
  }
  /* The FM x FN mma instructions. */
  int mi = lw_fresh(w, "mi", VAR_LOOP), ni = lw_fresh(w, "ni", VAR_LOOP);
  Stmt *mma = st_new(w->a, ST_MMA, s->loc);
  mma->a = reg_a ? s->a : afrag;
  mma->b = bfrag;
  mma->c = s->c;
  mma->elem = A->elem;
  /* A in registers (the accumulator layout, layout.c): the 16 x 16 piece (mi, kk) is the
   * accumulator's pieces (mi, 2kk) and (mi, 2kk + 1), 8 registers from (mi * frag_n + 2kk) * 4,
   * which pair up as a0a1 (row g), a2a3 (g + 8), a4a5 (g, k + 8), a6a7 (g + 8, k + 8). */
  mma->a_reg = reg_a ? lw_mul_c(w,
                                lw_add(w, lw_mul_c(w, lw_var(w, mi), A->layout.frag_n),
                                       lw_mul_c(w, lw_var(w, kk), 2)),
                                4)
                     : lw_mul_c(w, lw_var(w, mi), 4);
  mma->b_reg = lw_mul_c(w, lw_var(w, ni), quads ? 4 : 2);
  mma->c_reg = lw_mul_c(w, lw_add(w, lw_mul_c(w, lw_var(w, mi), FN), lw_var(w, ni)), 4);
  stlist_push(w->a, &step, lw_unrolled(w, mi, FM, lw_unrolled(w, ni, FN, mma)));

  Stmt *loop = lw_unrolled(w, kk, K / KS, stlist_seq(w->a, &step, s->loc));
  stlist_push(w->a, &out, loop);
  return stlist_seq(w->a, &out, s->loc);
}

/* ---------------------------------------------------------------- wgmma (sm_90a)
 *
 * wgmma.mma_async m64nNk16 is issued by a warpgroup (4 consecutive warps) and
 * reads A and B from shared memory through 64-bit matrix descriptors.  Its f32
 * accumulator is the MMA layout (ir.h) with warps_m = the block's warps,
 * warps_n = 1, frag_m = 1: warp w holds rows 16w .. 16w+15, and register
 * 4j + 2h + e is at row 16w + lane/4 + 8h, column 8j + 2(lane%4) + e, exactly
 * what wgmma leaves in d[4j + 2h + e] (PTX ISA, "Register Fragments and Shared
 * Memory Matrix Layouts", the m64nNk16 accumulator D).  So layout.c gives the
 * accumulator that grid and nothing downstream changes; warpgroup g computes
 * rows 64g .. 64g+63 of C with all of B.
 *
 * The operands are stored SWIZZLE_128B (ir.h: panels of 64 columns, 1024-byte
 * atoms of 8 rows x 128 bytes, chunk c of row r at c ^ (r % 8)), which is the
 * canonical "128-byte swizzle" layout of the PTX ISA ("Shared Memory Matrix
 * Layout"), or, for rows of 32 or 16 columns (a 32-wide B tile), the 64- and
 * 32-byte swizzles (panels of 32 and 16 columns; mma_policy.c's
 * wgmma_swizzle), K-major for A [M, K] and B^T [N, K], MN-major for A^T [K, M]
 * and B [K, N].  Each wgmma covers 16 of K; its descriptor starts at the operand's
 * element
 *
 *   A [M, K]    (64g, 16kk)     K-major: +32 bytes per step inside a 128-byte row
 *   A^T [K, M]  (16kk, 64g)     M-major: panel g, +2048 bytes (16 rows) per step
 *   B [K, N]    (16kk, 0)       N-major: all N/64 panels
 *   B^T [N, K]  (0, 16kk)       K-major
 *
 * Each start is in a row r with r % 8 == 0, where the swizzle moves nothing, so
 * its address is the element's ordinary address (codegen's tile_offset), and
 * codegen adds the layout's strides (smem_wgmma_desc, ir/smem.c).  One K tile:
 *
 *   wgmma.fence                          acc was written by ordinary code (clear, epilogue)
 *   for kk in unrolled(K / 16):  wgmma   one instruction per 16 of K, same accumulator
 *   wgmma.commit_group
 *   wgmma.wait_group 0                   acc readable; the stage may be refilled
 *
 * Writers of the operands go through the generic proxy (cp.async, st.shared);
 * wgmma reads through the async proxy, so each writer runs fence.proxy.async
 * before the barrier that publishes the tile (software_pipeline.c, lw_fenced).
 */


bool lw_gemm_register_a(Lw *w, const Stmt *s)
{
  const Buffer *A = &w->k->bufs[s->a];
  return A->scope == SCOPE_FRAGMENT && type_bytes(A->elem) == 2 && lw_gemm_uses_wgmma(w, s);
}

bool lw_gemm_uses_wgmma(Lw *w, const Stmt *s)
{
  const FragLayout *L = &w->k->bufs[s->c].layout;
  return gemm_wgmma_eligible(w->pc, w->k, s) && L->kind == LAYOUT_MMA && L->warps_m == w->k->nthreads / 32 &&
         L->warps_n == 1 && (L->frag_m == 1 || L->m_interleaved);
}

Stmt *lw_wgmma_stmt(Lw *w, StmtKind kind, int acc, int regs, int pending)
{
  Stmt *s = st_new(w->a, kind, NO_LOC);
  s->c = acc;
  s->acc_regs = regs;
  s->pending = pending;
  return s;
}

/* The element (stage, row, col) a descriptor starts at. */
static Expr **start_elem(Lw *w, Expr *stage, Expr *row, Expr *col, int *n)
{
  Expr **v = ARENA_ARRAY(w->a, Expr *, 3);
  int i = 0;
  if (stage)
    v[i++] = lw_clone(w, stage);
  v[i++] = row;
  v[i++] = col;
  *n = i;
  return v;
}

static Stmt *lower_gemm_wgmma(Lw *w, Stmt *s)
{
  const Buffer *A = &w->k->bufs[s->a], *Cb = &w->k->bufs[s->c];
  int64_t K = A->tile_shape[(s->stage_a != NULL) + !s->trans_a];
  int regs = Cb->layout.regs, FM = Cb->layout.frag_m; /* FM m64 row blocks of N / 2 registers each */
  int per = regs / FM;
  StmtList out = {0};
  if (!w->k->min_blocks_per_sm) /* as for mma.sync: registers matter more than occupancy */
    w->k->min_blocks_per_sm = 1;
  /* ptxas needs the instruction's accumulator and about 26 registers more in one thread (the
   * C7602 "Insufficient registers" it stops with: 154 for m64n256, 4 more with A in registers, 158);
   * min_blocks_per_sm(B) caps a thread at 65536 / (B x threads), a multiple of 8. */
  int need = per + 26 + (A->scope == SCOPE_FRAGMENT ? 4 : 0);
  int B = w->k->min_blocks_per_sm, threads = (int)w->k->nthreads;
  int cap = B > 1 && threads > 0 ? 65536 / (B * ((threads + 31) / 32 * 32)) / 8 * 8 : 255;
  if (cap < need) /* reported, and lowered as usual: the compilation fails after this pass */
    error_at(w->pc->diags, s->loc,
             "min_blocks_per_sm(%d) leaves each of the block's %d threads %d registers, and this gemm's "
             "wgmma (m64n%d, f32 accumulator) needs at least %d: ptxas cannot compile it (a narrower tile, "
             "or min_blocks_per_sm(1))",
             B, threads, cap, per * 2, need);
  int wg = lw_let(w, &out, "wg", lw_div_c(w, lw_var(w, w->tid), 128));
  Stmt *fence = lw_wgmma_stmt(w, ST_WGMMA_FENCE, s->c, regs, 0);
  if (A->scope == SCOPE_FRAGMENT) { /* A's registers too (codegen packs them before the fence) */
    fence->a = s->a;
    fence->a_reg = lw_i32(w, A->layout.regs);
  }
  stlist_push(w->a, &out, fence);
  int kk = lw_fresh(w, "kk", VAR_LOOP), fm = FM > 1 ? lw_fresh(w, "fm", VAR_LOOP) : -1;
  const int64_t KS = 32 / type_bytes(A->elem); /* k16, k32 for 8 bits: 32 bytes of K per wgmma */
  Expr *k0 = lw_mul_c(w, lw_var(w, kk), KS), *m0 = lw_mul_c(w, lw_var(w, wg), 64);
  Stmt *mma = lw_wgmma_stmt(w, ST_WGMMA, s->c, per, 0);
  if (FM > 1) { /* row block fm: rows fm * warps_m * 16 + 64 wg .., registers fm * per .. */
    m0 = lw_add(w, lw_mul_c(w, lw_var(w, fm), (int64_t)Cb->layout.warps_m * 16), m0);
    mma->c_reg = lw_mul_c(w, lw_var(w, fm), per);
  }
  mma->loc = s->loc;
  mma->a = s->a;
  mma->b = s->b;
  mma->elem = A->elem;
  mma->a_mn_major = s->trans_a;   /* A^T [K, M] */
  mma->b_mn_major = !s->trans_b;  /* B [K, N] */
  if (A->scope == SCOPE_FRAGMENT) /* registers 8kk .. 8kk + 7 of each thread (frag_m = 1), as for mma.sync */
    mma->a_reg = lw_mul_c(w, lw_var(w, kk), 8);
  else
    mma->a_start = s->trans_a ? start_elem(w, s->stage_a, lw_clone(w, k0), lw_clone(w, m0), &mma->na_start)
                              : start_elem(w, s->stage_a, lw_clone(w, m0), lw_clone(w, k0), &mma->na_start);
  mma->b_start = s->trans_b ? start_elem(w, s->stage_b, lw_i32(w, 0), lw_clone(w, k0), &mma->nb_start)
                            : start_elem(w, s->stage_b, lw_clone(w, k0), lw_i32(w, 0), &mma->nb_start);
  stlist_push(w->a, &out, lw_unrolled(w, kk, K / KS, FM > 1 ? lw_unrolled(w, fm, FM, mma) : mma));
  stlist_push(w->a, &out, lw_wgmma_stmt(w, ST_WGMMA_COMMIT, s->c, regs, 0));
  stlist_push(w->a, &out, lw_wgmma_stmt(w, ST_WGMMA_WAIT, s->c, regs, 0));
  return stlist_seq(w->a, &out, s->loc);
}

/* ---------------------------------------------------------------- the fill of a register A, interleaved
 *
 * A dequantizing GEMM's K step fills a register fragment A (the weights
 * widened in a parallel loop) and multiplies it: wgmma k step kk reads A's
 * registers R kk .. R kk + R - 1 (R = 8 for 16-bit A).  In a pipelined loop
 * with `overlap` (software_pipeline.c sets w->interleave_a), the fill's
 * statements are split by the K step whose registers they write, and each
 * step's multiply is issued as soon as its registers are written:
 *
 *   fill step 0; wgmma.fence (A's registers of step 0); wgmma step 0
 *   fill step 1; wgmma.fence (step 1's);                wgmma step 1   -- step 0 multiplies
 *   ...
 *   wgmma.commit; wgmma.wait 0
 *
 * so the tensor cores multiply step kk while the threads widen step kk + 1.
 * No register is written while a multiply that reads it is in flight (each
 * step's registers are written once, before its own multiply), and there
 * are no moves between registers (what made the earlier two-copy form wrong
 * on the GPU: docs/language.md, "A register A operand is not refilled under
 * its multiply").  The split needs every write of A in the lowered fill to
 * have a constant register index once its unrolled loops are enumerated, the
 * steps written in order, and no read of A; otherwise the two statements
 * stay as they were. */

typedef struct {
  Lw *w;
  int buf, n; /* A; the unrolled loop variables fixed so far */
  int vars[16];
  int64_t vals[16];
  int64_t lo, hi; /* the registers of A written (hi < 0: none) */
  bool ok;
} Fill;

typedef struct {
  Stmt **s;
  int64_t *step; /* -1: writes no register of A */
  int n, cap;
} Units;

static Expr *fix_vars(void *ctx, Expr *e)
{
  Fill *f = ctx;
  if (e->kind == EX_VAR)
    for (int i = 0; i < f->n; i++)
      if (e->var == f->vars[i])
        return ex_int(f->w->a, e->type, f->vals[i]);
  return e;
}

/* Does statement s itself (not those inside it) read *buf (ctx), or write it other than by a STORE or
 * VCOPY?  other_use: does s or a statement inside it. */
static bool uses_other_than_store(const Stmt *s, const void *ctx)
{
  const int buf = *(const int *)ctx;
  if (lw_expr_reads(s->value, buf) || lw_expr_reads(s->cond, buf))
    return true;
  for (int i = 0; i < s->nidx; i++)
    if (lw_expr_reads(s->idx[i], buf))
      return true;
  for (int i = 0; i < s->nsrc_idx; i++)
    if (lw_expr_reads(s->src_idx[i], buf))
      return true;
  return (s->kind == ST_VCOPY && s->src_buf == buf) || (s->kind == ST_LDMATRIX && s->buf == buf) ||
         ((s->kind == ST_MMA || s->kind == ST_WGMMA || s->kind == ST_WGMMA_FENCE || s->kind == ST_GEMM) &&
          (s->a == buf || s->b == buf || s->c == buf)) ||
         (s->kind == ST_ATOMIC && s->buf == buf);
}

static bool other_use(const Stmt *s, int buf) { return stmt_any(s, uses_other_than_store, &buf); }

static bool fixed_index(Fill *f, const Expr *e, int64_t *out)
{
  Expr *c = expr_rewrite(ex_clone(f->w->a, e), fix_vars, f);
  return ir_eval_int(f->w->a, f->w->k, c, out);
}

static void widen(Fill *f, int64_t lo, int64_t hi)
{
  f->lo = f->hi < 0 || lo < f->lo ? lo : f->lo;
  f->hi = hi > f->hi ? hi : f->hi;
}

static bool writes_here(const Stmt *s, const void *buf)
{
  return (s->kind == ST_STORE || s->kind == ST_VCOPY) && s->buf == *(const int *)buf;
}

static bool writes_buf(const Stmt *s, int buf) { return stmt_any(s, writes_here, &buf); }

/* Widens [f->lo, f->hi] by the registers of A that s writes, its unrolled loops enumerated;
 * clears f->ok where an index is not constant then, or a loop that writes A is not unrolled. */
static void written(Fill *f, const Stmt *s)
{
  int64_t i, n;
  if (!s || !f->ok)
    return;
  switch (s->kind) {
  case ST_SEQ:
    for (int j = 0; j < s->nbody; j++)
      written(f, s->body[j]);
    return;
  case ST_IF:
    written(f, s->then_s);
    written(f, s->else_s);
    return;
  case ST_FOR:
    if (!writes_buf(s, f->buf))
      return;
    if (s->for_kind != FOR_UNROLLED || s->nvars != 1 || f->n == 16 || !ex_is_const_int(s->extents[0], &n)) {
      f->ok = false;
      return;
    }
    f->vars[f->n++] = s->vars[0];
    for (int64_t v = 0; v < n && f->ok; v++) {
      f->vals[f->n - 1] = v;
      written(f, s->then_s);
    }
    f->n--;
    return;
  case ST_STORE:
  case ST_VCOPY:
    if (s->buf != f->buf)
      return;
    if (s->nidx != 1 || !fixed_index(f, s->idx[0], &i)) {
      f->ok = false;
      return;
    }
    widen(f, i, i + (s->kind == ST_VCOPY ? s->lanes : 1) - 1);
    return;
  default: return;
  }
}

static void push_unit(Lw *w, Units *u, Stmt *s, int64_t step)
{
  if (u->n == u->cap) {
    int cap = u->cap ? 2 * u->cap : 32;
    Stmt **ns = ARENA_ARRAY(w->a, Stmt *, cap);
    int64_t *nstep = ARENA_ARRAY(w->a, int64_t, cap);
    for (int i = 0; i < u->n; i++) {
      ns[i] = u->s[i];
      nstep[i] = u->step[i];
    }
    u->s = ns;
    u->step = nstep;
    u->cap = cap;
  }
  u->s[u->n] = s;
  u->step[u->n++] = step;
}

/* s in units that each write the registers of one K step (R registers a step), in order;
 * f's fixed variables replaced by their values. */
static void split_fill(Fill *f, const Stmt *s, int R, Units *u)
{
  Fill g = *f;
  g.lo = 0;
  g.hi = -1;
  g.ok = true;
  written(&g, s);
  if (!g.ok) {
    f->ok = false;
    return;
  }
  if (g.hi < 0 || g.lo / R == g.hi / R) {
    Stmt *c = st_clone(f->w->a, s);
    stmt_rewrite_exprs(c, fix_vars, f);
    ir_fold_stmt(f->w->a, f->w->k, c);
    push_unit(f->w, u, c, g.hi < 0 ? -1 : g.lo / R);
    return;
  }
  int64_t n;
  if (s->kind == ST_SEQ) {
    for (int j = 0; j < s->nbody && f->ok; j++)
      split_fill(f, s->body[j], R, u);
  } else if (s->kind == ST_FOR && s->for_kind == FOR_UNROLLED && s->nvars == 1 && f->n < 16 &&
             ex_is_const_int(s->extents[0], &n)) {
    f->vars[f->n++] = s->vars[0];
    for (int64_t v = 0; v < n && f->ok; v++) {
      f->vals[f->n - 1] = v;
      split_fill(f, s->then_s, R, u);
    }
    f->n--;
  } else
    f->ok = false; /* an IF or a loop whose body writes several steps: not split */
}

/* wgmma.fence (the accumulator, and A's registers of steps [from, to)), then those steps'
 * multiplies: copies of wgmma (in the loop over kk) with kk fixed. */
static void issue_steps(Lw *w, StmtList *out, const Stmt *fence, const Stmt *mma, int kk, int R, int64_t from,
                        int64_t to)
{
  if (from >= to)
    return;
  Stmt *f = st_clone(w->a, fence);
  f->a_first = (int)(from * R);
  f->a_reg = lw_i32(w, (to - from) * R);
  stlist_push(w->a, out, f);
  for (int64_t step = from; step < to; step++) {
    Fill fix = {.w = w, .n = 1, .vars = {kk}, .vals = {step}};
    Stmt *m = st_clone(w->a, mma);
    stmt_rewrite_exprs(m, fix_vars, &fix);
    ir_fold_stmt(w->a, w->k, m);
    stlist_push(w->a, out, m);
  }
}

Stmt *lw_interleave_register_a(Lw *w, Stmt *fill, Stmt *gemm)
{
  /* the gemm as lower_gemm_wgmma makes it: let wg; fence; for kk unrolled { wgmma }; commit; wait */
  w->interleave_why = "the gemm was not lowered to one wgmma per K step";
  if (!fill || !gemm || gemm->kind != ST_SEQ || gemm->nbody != 5)
    return NULL;
  Stmt *fence = gemm->body[1], *loop = gemm->body[2];
  int64_t steps;
  if (gemm->body[0]->kind != ST_LET || fence->kind != ST_WGMMA_FENCE || !fence->a_reg ||
      loop->kind != ST_FOR || loop->for_kind != FOR_UNROLLED || !ex_is_const_int(loop->extents[0], &steps) ||
      loop->then_s->kind != ST_WGMMA || !loop->then_s->a_reg || gemm->body[3]->kind != ST_WGMMA_COMMIT ||
      gemm->body[4]->kind != ST_WGMMA_WAIT)
    return NULL;
  Stmt *mma = loop->then_s;
  int buf = mma->a, kk = loop->vars[0];
  const Buffer *A = &w->k->bufs[buf];
  if (type_bytes(A->elem) != 2 || steps < 2 || fence->a_reg->i != steps * 8)
    return NULL;
  /* step kk reads registers 8 kk .. 8 kk + 7 */
  Fill probe = {.w = w, .n = 1, .vars = {kk}};
  int64_t r0, r1;
  probe.vals[0] = 0;
  bool ok0 = fixed_index(&probe, mma->a_reg, &r0);
  probe.vals[0] = 1;
  if (!ok0 || !fixed_index(&probe, mma->a_reg, &r1) || r0 != 0 || r1 != 8)
    return NULL;
  const int R = 8;
  if (other_use(fill, buf)) {
    w->interleave_why = "the parallel loop right before the gemm reads its A operand too";
    return NULL;
  }
  Fill f = {.w = w, .buf = buf, .hi = -1, .ok = true};
  Units u = {0};
  split_fill(&f, fill, R, &u);
  if (!f.ok) {
    w->interleave_why = "a write of its A operand has no constant register index, or one of its "
                        "statements writes the registers of several K steps";
    return NULL;
  }
  int64_t last = -1;
  for (int i = 0; i < u.n; i++) {
    if (u.step[i] < 0)
      continue;
    if (u.step[i] < last || u.step[i] >= steps) {
      w->interleave_why = "its A operand's K steps are not written in order";
      return NULL;
    }
    last = u.step[i];
  }
  if (last < 1) {
    w->interleave_why = last < 0 ? "the parallel loop right before the gemm does not write its A operand"
                                 : "its A operand's registers of one K step only are written";
    return NULL;
  }
  StmtList out = {0};
  stlist_push(w->a, &out, gemm->body[0]); /* let wg */
  int64_t next = 0;                       /* the first step not issued */
  for (int i = 0; i < u.n; i++) {
    if (u.step[i] > next) {               /* every write of the steps before it is done */
      issue_steps(w, &out, fence, mma, kk, R, next, u.step[i]);
      next = u.step[i];
    }
    stlist_push(w->a, &out, u.s[i]);
  }
  issue_steps(w, &out, fence, mma, kk, R, next, steps);
  stlist_push(w->a, &out, gemm->body[3]);
  stlist_push(w->a, &out, gemm->body[4]);
  w->interleaved++;
  return stlist_seq(w->a, &out, gemm->loc);
}
