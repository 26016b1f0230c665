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
 */
#include "lower.h"

#include <inttypes.h>
#include <stdlib.h>

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
		*why = (req_wm || req_wn) ? "the requested warp grid does not use exactly the block's warps, or does not divide the accumulator into 16x8 pieces per warp"
			: n > 1 ? "no grid of the block's warps divides every accumulator whose rows are shared into 16x8 pieces per warp"
				: "no grid of the block's warps divides the accumulator into 16x8 pieces per warp";
		return false;
	}
	*wm = best_m;
	*wn = best_n;
	return true;
}

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

static Expr *C(Lw *w, Expr *e) { return ex_clone(w->a, e); }
static Expr *ADD(Lw *w, Expr *a, Expr *b) { return ex_add(w->a, a, b); }
static Expr *MUL(Lw *w, Expr *a, int64_t b) { return ex_mul(w->a, a, lw_i32(w, b)); }
static Expr *DIV(Lw *w, Expr *a, int64_t b) { return lw_bin(w, OP_DIV, a, lw_i32(w, b)); }
static Expr *MOD(Lw *w, Expr *a, int64_t b) { return lw_bin(w, OP_MOD, a, lw_i32(w, b)); }

void lw_mma_coords(Lw *w, const FragLayout *L, Expr *fm, Expr *fn, Expr *r, Expr **row, Expr **col)
{
	Expr *lane = MOD(w, lw_var(w, w->tid), 32), *warp = DIV(w, lw_var(w, w->tid), 32);
	Expr *wm = DIV(w, warp, L->warps_n), *wn = MOD(w, C(w, warp), L->warps_n);
	*row = ADD(w, ADD(w, ADD(w, MUL(w, wm, (int64_t)L->frag_m * 16), MUL(w, fm, 16)), DIV(w, lane, 4)),
		   MUL(w, DIV(w, C(w, r), 2), 8));
	*col = ADD(w, ADD(w, ADD(w, MUL(w, wn, (int64_t)L->frag_n * 8), MUL(w, fn, 8)), MUL(w, MOD(w, C(w, lane), 4), 2)),
		   MOD(w, C(w, r), 2));
}

/* Loops over this thread's pairs of neighbouring registers (r0 r1, r2 r3) of
 * each 16x8 piece: body(fm, fn, h) at register (fm*FN + fn)*4 + 2h. */
typedef struct {
	int fm, fn, h;
	Expr *reg, *row, *col;
} PairPos;

static Stmt *over_pairs(Lw *w, const FragLayout *L, SrcLoc loc, void (*body)(Lw *, StmtList *, PairPos *, void *),
			void *ctx)
{
	PairPos p;
	p.fm = lw_fresh(w, "fm", VAR_LOOP);
	p.fn = lw_fresh(w, "fn", VAR_LOOP);
	p.h = lw_fresh(w, "h", VAR_LOOP);
	StmtList l = {0};
	p.reg = ADD(w, MUL(w, ADD(w, MUL(w, lw_var(w, p.fm), L->frag_n), lw_var(w, p.fn)), 4), MUL(w, lw_var(w, p.h), 2));
	Expr *row, *col;
	lw_mma_coords(w, L, lw_var(w, p.fm), lw_var(w, p.fn), MUL(w, lw_var(w, p.h), 2), &row, &col);
	p.row = lw_var(w, lw_let(w, &l, "row", row));
	p.col = lw_var(w, lw_let(w, &l, "col", col));
	body(w, &l, &p, ctx);
	Stmt *s = lw_unrolled(w, p.h, 2, stlist_seq(w->a, &l, loc));
	s = lw_unrolled(w, p.fn, L->frag_n, s);
	return lw_unrolled(w, p.fm, L->frag_m, s);
}

typedef struct {
	const Stmt *s;
	bool load;
	int tile;
} CopyCtx;

static void copy_pair_global(Lw *w, StmtList *out, PairPos *p, void *ctx)
{
	CopyCtx *c = ctx;
	const Region *gr = c->load ? &c->s->src : &c->s->dst;
	Expr *t[2] = {p->row, p->col};
	lw_copy_vector(w, out, c->load, gr, c->tile, p->reg, t, 2, NULL, false, c->s->loc);
}

Stmt *lower_copy_mma_global(Lw *w, Stmt *s, bool load)
{
	CopyCtx c = {s, load, load ? s->dst.buf : s->src.buf};
	return over_pairs(w, &w->k->bufs[c.tile].layout, s->loc, copy_pair_global, &c);
}

static void copy_pair_shared(Lw *w, StmtList *out, PairPos *p, void *ctx)
{
	CopyCtx *c = ctx;
	const Stmt *s = c->s;
	Expr **ri = lw_idx1(w, C(w, p->reg));
	/* A pipelined loop's staged tile (stage_a) has the stage as its leading index. */
	int staged = c->load && s->stage_a ? 1 : 0;
	Expr **si = ARENA_ARRAY(w->a, Expr *, 2 + staged);
	if (staged)
		si[0] = C(w, s->stage_a);
	si[staged] = C(w, p->row);
	si[staged + 1] = C(w, p->col);
	if (c->load) /* shared -> fragment */
		lw_vcopy(w, out, s->dst.buf, ri, 1, s->src.buf, si, 2 + staged, 2, 0, 1 + staged);
	else
		lw_vcopy(w, out, s->dst.buf, si, 2, s->src.buf, ri, 1, 2, 1, 0);
}

/* shared <-> MMA fragment: each thread moves its register pairs (r0 r1, r2 r3
 * of every 16x8 piece) to or from the row and column the accumulator layout
 * gives them, not the flat order an elementwise fragment uses. */
Stmt *lower_copy_mma_shared(Lw *w, Stmt *s)
{
	bool to_frag = w->k->bufs[s->dst.buf].scope == SCOPE_FRAGMENT;
	CopyCtx c = {s, to_frag, to_frag ? s->dst.buf : s->src.buf};
	return over_pairs(w, &w->k->bufs[c.tile].layout, s->loc, copy_pair_shared, &c);
}

/* ldmatrix of `count` 8x8 matrices from shared `buf` (with an optional stage
 * index) at this lane's row and column, into registers regs[base..]. */
static Stmt *ldmatrix(Lw *w, int regs, Expr *base, int count, bool trans, int buf, Expr *stage, Expr *row, Expr *col)
{
	Stmt *s = st_new(w->a, ST_LDMATRIX, NO_LOC);
	s->buf = regs;
	s->idx = lw_idx1(w, base);
	s->nidx = 1;
	s->lanes = count;
	s->trans_a = trans;
	s->src_buf = buf;
	s->nsrc_idx = stage ? 3 : 2;
	s->src_idx = ARENA_ARRAY(w->a, Expr *, 3);
	int i = 0;
	if (stage)
		s->src_idx[i++] = C(w, stage);
	s->src_idx[i++] = row;
	s->src_idx[i] = col;
	return s;
}

static Stmt *lower_gemm_wgmma(Lw *w, Stmt *s);

Stmt *lower_gemm(Lw *w, Stmt *s)
{
	if (lw_gemm_uses_wgmma(w, s))
		return lower_gemm_wgmma(w, s);
	const Buffer *A = &w->k->bufs[s->a], *Cb = &w->k->bufs[s->c];
	const FragLayout *L = &Cb->layout;
	int sa = s->stage_a != NULL;
	int64_t K = A->tile_shape[sa + !s->trans_a];
	int FM = L->frag_m, FN = L->frag_n;
	StmtList out = {0};
	if (!w->k->min_blocks_per_sm) /* unless the kernel says: registers matter more than occupancy */
		w->k->min_blocks_per_sm = 1;
	WarpPos p = warp_pos(w, &out, L);
	int afrag = lw_new_buffer(w, "afrag", SCOPE_LOCAL, TY_U32, (int64_t)FM * 4);
	int bfrag = lw_new_buffer(w, "bfrag", SCOPE_LOCAL, TY_U32, (int64_t)(FN + 1) / 2 * 4);
	int kk = lw_fresh(w, "kk", VAR_LOOP);
	StmtList step = {0};
	Expr *k0 = MUL(w, lw_var(w, kk), 16);
	Expr *m_base = MUL(w, C(w, p.wm), (int64_t)FM * 16), *n_base = MUL(w, C(w, p.wn), (int64_t)FN * 8);

	/* A pieces: one ldmatrix.x4 per 16x16. */
	int fm = lw_fresh(w, "fm", VAR_LOOP);
	Expr *m0 = ADD(w, C(w, m_base), MUL(w, lw_var(w, fm), 16));
	Expr *row, *col;
	if (!s->trans_a) {
		row = ADD(w, m0, MOD(w, C(w, p.lane), 16));
		col = ADD(w, C(w, k0), MUL(w, DIV(w, C(w, p.lane), 16), 8));
	} else {
		row = ADD(w, ADD(w, C(w, k0), MOD(w, C(w, p.lane), 8)), MUL(w, DIV(w, C(w, p.lane), 16), 8));
		col = ADD(w, m0, MUL(w, MOD(w, DIV(w, C(w, p.lane), 8), 2), 8));
	}
	stlist_push(w->a, &step, lw_unrolled(w, fm, FM, ldmatrix(w, afrag, MUL(w, lw_var(w, fm), 4), 4, s->trans_a, s->a,
								 s->stage_a, row, col)));

	/* B pieces: ldmatrix.x4 covers two n8 pieces; an odd last one takes x2. */
	for (int pair = 0; pair < (FN + 1) / 2; pair++) {
		int count = 2 * pair + 1 < FN ? 4 : 2;
		Expr *n0 = ADD(w, C(w, n_base), lw_i32(w, (int64_t)pair * 16));
		if (!s->trans_b) {
			row = ADD(w, C(w, k0), MOD(w, C(w, p.lane), 16));
			col = ADD(w, n0, MUL(w, DIV(w, C(w, p.lane), 16), 8));
		} else {
			row = ADD(w, ADD(w, n0, MOD(w, C(w, p.lane), 8)), MUL(w, DIV(w, C(w, p.lane), 16), 8));
			col = ADD(w, C(w, k0), MUL(w, MOD(w, DIV(w, C(w, p.lane), 8), 2), 8));
		}
		if (count == 2 && s->trans_b) /* x2: lanes 0-15 address n0 + l%8, k + ((l/8)%2)*8 */
			row = ADD(w, C(w, n0), MOD(w, C(w, p.lane), 8));
		stlist_push(w->a, &step, ldmatrix(w, bfrag, lw_i32(w, (int64_t)pair * 4), count, !s->trans_b, s->b, s->stage_b,
						  row, col));
	}
	/* The FM x FN mma instructions. */
	int mi = lw_fresh(w, "mi", VAR_LOOP), ni = lw_fresh(w, "ni", VAR_LOOP);
	Stmt *mma = st_new(w->a, ST_MMA, s->loc);
	mma->a = afrag;
	mma->b = bfrag;
	mma->c = s->c;
	mma->elem = A->elem;
	mma->nidx = 3;
	mma->idx = ARENA_ARRAY(w->a, Expr *, 3);
	mma->idx[0] = MUL(w, lw_var(w, mi), 4);
	mma->idx[1] = MUL(w, lw_var(w, ni), 2);
	mma->idx[2] = MUL(w, ADD(w, MUL(w, lw_var(w, mi), FN), lw_var(w, ni)), 4);
	stlist_push(w->a, &step, lw_unrolled(w, mi, FM, lw_unrolled(w, ni, FN, mma)));

	Stmt *loop = lw_unrolled(w, kk, K / 16, stlist_seq(w->a, &step, s->loc));
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
 * Layout"), K-major for A [M, K] and B^T [N, K], MN-major for A^T [K, M] and
 * B [K, N].  Each wgmma covers 16 of K; its descriptor starts at the operand's
 * element
 *
 *   A [M, K]    (64g, 16kk)     K-major: +32 bytes per step inside a 128-byte row
 *   A^T [K, M]  (16kk, 64g)     M-major: panel g, +2048 bytes (16 rows) per step
 *   B [K, N]    (16kk, 0)       N-major: all N/64 panels
 *   B^T [N, K]  (0, 16kk)       K-major
 *
 * Each start is in a row r with r % 8 == 0, where the swizzle moves nothing, so
 * its address is the element's ordinary address (codegen's tile_offset), and
 * codegen adds the layout's strides (cg_wgmma_desc).  One K tile:
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
 *   - A and B are f16 or bf16 shared tiles, C is f32;
 *   - the block is whole warpgroups and C is [16 * warps, N]: one m64 slice per
 *     warpgroup, N % 8 == 0 and N <= 256 (one wgmma covers all of N);
 *   - warps_m / warps_n, if given, are (warps, 1);
 *   - each operand tile [R, C] (A or B as stored, transposed or not) has
 *     R % 8 == 0 and C % 64 == 0: whole 128-byte rows and 1024-byte atoms, so
 *     BK = 64 or 128 for K-major operands and BM, BN multiples of 64 for
 *     MN-major ones.
 * Anything else takes mma.sync. */
bool gemm_wgmma_eligible(const PassContext *pc, const Kernel *k, const Stmt *g)
{
	if (pc->sm != 90 || !pc->sm90a || k->nthreads <= 0 || k->nthreads % 128)
		return false;
	const Buffer *A = &k->bufs[g->a], *B = &k->bufs[g->b], *Cb = &k->bufs[g->c];
	if (A->scope != SCOPE_SHARED || B->scope != SCOPE_SHARED || A->elem != B->elem ||
	    (A->elem != TY_F16 && A->elem != TY_BF16) || Cb->elem != TY_F32 || Cb->rank != 2)
		return false;
	int nwarps = k->nthreads / 32;
	int64_t M = Cb->tile_shape[0], N = Cb->tile_shape[1];
	if (M != 16 * (int64_t)nwarps || N % 8 || N > 256)
		return false;
	if ((g->warps_m && g->warps_m != nwarps) || (g->warps_n && g->warps_n != 1))
		return false;
	int64_t ar, ac, br, bc;
	if (!tile_2d(k, g->a, g->stage_a != NULL, &ar, &ac) || !tile_2d(k, g->b, g->stage_b != NULL, &br, &bc))
		return false;
	return ar % 8 == 0 && ac % 64 == 0 && br % 8 == 0 && bc % 64 == 0;
}

bool lw_gemm_uses_wgmma(Lw *w, const Stmt *s)
{
	const FragLayout *L = &w->k->bufs[s->c].layout;
	return gemm_wgmma_eligible(w->pc, w->k, s) && L->kind == LAYOUT_MMA && L->warps_m == w->k->nthreads / 32 &&
	       L->warps_n == 1 && L->frag_m == 1;
}

static Stmt *wgmma_stmt(Lw *w, StmtKind kind, int acc, int regs, int n)
{
	Stmt *s = st_new(w->a, kind, NO_LOC);
	s->c = acc;
	s->lanes = regs;
	s->stages = n;
	return s;
}

/* The element (stage, row, col) a descriptor starts at. */
static Expr **start_elem(Lw *w, Expr *stage, Expr *row, Expr *col, int *n)
{
	Expr **v = ARENA_ARRAY(w->a, Expr *, 3);
	int i = 0;
	if (stage)
		v[i++] = C(w, stage);
	v[i++] = row;
	v[i++] = col;
	*n = i;
	return v;
}

static Stmt *lower_gemm_wgmma(Lw *w, Stmt *s)
{
	const Buffer *A = &w->k->bufs[s->a], *Cb = &w->k->bufs[s->c];
	int64_t K = A->tile_shape[(s->stage_a != NULL) + !s->trans_a];
	int regs = Cb->layout.regs; /* N / 2 */
	StmtList out = {0};
	if (!w->k->min_blocks_per_sm) /* as for mma.sync: registers matter more than occupancy */
		w->k->min_blocks_per_sm = 1;
	int wg = lw_let(w, &out, "wg", DIV(w, lw_var(w, w->tid), 128));
	stlist_push(w->a, &out, wgmma_stmt(w, ST_WGMMA_FENCE, s->c, regs, 0));
	int kk = lw_fresh(w, "kk", VAR_LOOP);
	Expr *k0 = MUL(w, lw_var(w, kk), 16), *m0 = MUL(w, lw_var(w, wg), 64);
	Stmt *mma = wgmma_stmt(w, ST_WGMMA, s->c, regs, 0);
	mma->loc = s->loc;
	mma->a = s->a;
	mma->b = s->b;
	mma->elem = A->elem;
	mma->trans_a = s->trans_a;
	mma->trans_b = !s->trans_b; /* B [K, N] is N-major */
	mma->src_idx = s->trans_a ? start_elem(w, s->stage_a, C(w, k0), C(w, m0), &mma->nsrc_idx)
				  : start_elem(w, s->stage_a, C(w, m0), C(w, k0), &mma->nsrc_idx);
	mma->idx = s->trans_b ? start_elem(w, s->stage_b, lw_i32(w, 0), C(w, k0), &mma->nidx)
			      : start_elem(w, s->stage_b, C(w, k0), lw_i32(w, 0), &mma->nidx);
	stlist_push(w->a, &out, lw_unrolled(w, kk, K / 16, mma));
	stlist_push(w->a, &out, wgmma_stmt(w, ST_WGMMA_COMMIT, s->c, regs, 0));
	stlist_push(w->a, &out, wgmma_stmt(w, ST_WGMMA_WAIT, s->c, regs, 0));
	return stlist_seq(w->a, &out, s->loc);
}
