/* lower_tiles.c: tile-level statements -> per-thread statements.
 *
 *   copy      global <-> fragment/shared: each thread moves its vectors; a vector
 *             wholly inside the tensor and aligned goes as one wide access
 *             (VCOPY), otherwise element by element with a bounds check, reading
 *             zeros and writing nothing outside the tensor.
 *             shared <-> fragment, fragment <-> fragment: per-thread, no bounds.
 *   fill      every owned element (fragment), or cooperatively (shared).
 *   parallel  each thread runs the iterations whose elements it owns.
 *
 * Fragments then become per-thread LOCAL arrays of chunks * vec elements, and
 * multi-dimensional alloc_local buffers are linearized.  Index arithmetic is
 * built on unrolled loop counters so that after unrolling every register index
 * is a constant (the arrays become registers in LLVM).  Writes to shared memory
 * are fenced by barriers before (readers of the old contents) and after
 * (readers of the new).
 */
#include "lower.h"

#include <math.h>
#include <string.h>


Expr *lw_i32(Lw *w, int64_t v) { return ex_int(w->a, TY_I32, v); }
Expr *lw_var(Lw *w, int v) { return ex_var(w->a, w->k, v); }
Expr *lw_bin(Lw *w, OpKind op, Expr *x, Expr *y) { return ex_binary(w->a, op, x, y); }

Expr *lw_unary_not(Lw *w, Expr *x) { return ex_unary(w->a, OP_NOT, x); }

Expr *lw_and(Lw *w, Expr *x, Expr *y)
{
	if (!x)
		return y;
	if (!y)
		return x;
	return lw_bin(w, OP_LAND, x, y);
}

int lw_fresh(Lw *w, const char *base, VarKind kind)
{
	Var v = {0};
	v.name = arena_printf(w->a, "%s.%d", base, w->counter++);
	v.kind = kind;
	v.type = TY_I32;
	v.param_index = -1;
	return kernel_add_var(w->a, w->k, v);
}

/* let NAME = value; returns the new variable. */
int lw_let(Lw *w, StmtList *out, const char *name, Expr *value)
{
	int v = lw_fresh(w, name, VAR_LET);
	w->k->vars[v].type = value->type;
	Stmt *s = st_new(w->a, ST_LET, NO_LOC);
	s->var = v;
	s->value = value;
	stlist_push(w->a, out, s);
	return v;
}

Stmt *lw_unrolled(Lw *w, int var, int64_t n, Stmt *body)
{
	Stmt *s = st_new(w->a, ST_FOR, body->loc);
	s->for_kind = FOR_UNROLLED;
	s->nvars = 1;
	s->vars[0] = var;
	s->extents[0] = lw_i32(w, n);
	s->then_s = body;
	return s;
}

/* A loop over chunks: unrolled when it indexes registers (fragments) or is
 * short; a plain loop otherwise, so that large shared tiles stay small code. */
Stmt *lw_chunk_loop(Lw *w, int var, int64_t n, Stmt *body, bool indexes_registers)
{
	Stmt *s = lw_unrolled(w, var, n, body);
	if (!indexes_registers && n > 8)
		s->for_kind = FOR_SERIAL;
	return s;
}

Stmt *lw_if(Lw *w, Expr *cond, Stmt *then_s, Stmt *else_s)
{
	if (!cond)
		return then_s;
	Stmt *s = st_new(w->a, ST_IF, then_s->loc);
	s->cond = cond;
	s->then_s = then_s;
	s->else_s = else_s;
	return s;
}

Stmt *lw_barrier(Lw *w)
{
	return st_new(w->a, ST_BARRIER, NO_LOC);
}

Stmt *lw_store(Lw *w, int buf, Expr **idx, int n, Expr *value)
{
	Stmt *s = st_new(w->a, ST_STORE, NO_LOC);
	s->buf = buf;
	s->idx = idx;
	s->nidx = n;
	TypeKind t = w->k->bufs[buf].elem;
	s->value = value->type == t ? value : ex_cast(w->a, t, value);
	return s;
}

Expr *lw_zero(Lw *w, TypeKind t)
{
	return type_is_float(t) ? ex_float(w->a, t, 0) : ex_int(w->a, t, 0);
}

Expr **lw_idx1(Lw *w, Expr *x)
{
	Expr **v = ARENA_ARRAY(w->a, Expr *, 1);
	v[0] = x;
	return v;
}

/* Coordinates of flat row-major element `flat` in a tile of `shape`. */
void lw_coords(Lw *w, const int64_t *shape, int rank, Expr *flat, Expr **out)
{
	int64_t stride = 1;
	for (int d = rank - 1; d >= 0; d--) {
		Expr *q = stride == 1 ? flat : lw_bin(w, OP_DIV, ex_clone(w->a, flat), lw_i32(w, stride));
		out[d] = d == 0 ? q : lw_bin(w, OP_MOD, q, lw_i32(w, shape[d]));
		stride *= shape[d];
	}
}

/* ---------------------------------------------------------------- vectors */

/* How the vectors of a tile are dealt to threads: chunk c of thread tid
 * starts at flat element (c * threads + tid) * vec. */
typedef struct {
	int vec;
	int chunks;
	int64_t total;
	bool guard; /* the last chunk can fall off the tile */
} Deal;

static Deal deal_for(Lw *w, int vec, int64_t total)
{
	Deal d;
	d.vec = vec;
	d.total = total;
	int64_t vectors = (total + vec - 1) / vec;
	d.chunks = (int)((vectors + w->k->nthreads - 1) / w->k->nthreads);
	d.guard = (int64_t)d.chunks * w->k->nthreads * vec != total;
	return d;
}

/* The widest vector of at most 16 bytes on both sides that divides the last dim. */
int lw_coop_vec(const Buffer *tile, TypeKind other)
{
	int v = 16 / type_bytes(tile->elem);
	int v2 = 16 / type_bytes(other);
	if (v2 < v)
		v = v2;
	while (v > 1 && tile->tile_shape[tile->rank - 1] % v)
		v /= 2;
	return v;
}

/* Elements per piece when n contiguous elements move between types a and b:
 * at most 16 bytes on either side (the widest access there is). */
int lw_piece_lanes(TypeKind a, TypeKind b, int n)
{
	int piece = n;
	while (piece > 1 && (piece * type_bytes(a) > 16 || piece * type_bytes(b) > 16))
		piece /= 2;
	return piece;
}

/* Copies n contiguous elements, in pieces of at most 16 bytes on either side. */
void lw_vcopy(Lw *w, StmtList *out, int dst, Expr **didx, int dn, int src, Expr **sidx, int sn, int n,
		  int last_d, int last_s)
{
	TypeKind td = w->k->bufs[dst].elem, ts = w->k->bufs[src].elem;
	int piece = lw_piece_lanes(td, ts, n);
	for (int off = 0; off < n; off += piece) {
		Stmt *s = st_new(w->a, ST_VCOPY, NO_LOC);
		s->lanes = piece;
		s->buf = dst;
		s->nidx = dn;
		s->idx = ARENA_ARRAY(w->a, Expr *, dn);
		for (int i = 0; i < dn; i++)
			s->idx[i] = i == last_d ? ex_add(w->a, ex_clone(w->a, didx[i]), lw_i32(w, off)) : ex_clone(w->a, didx[i]);
		s->src_buf = src;
		s->nsrc_idx = sn;
		s->src_idx = ARENA_ARRAY(w->a, Expr *, sn);
		for (int i = 0; i < sn; i++)
			s->src_idx[i] = i == last_s ? ex_add(w->a, ex_clone(w->a, sidx[i]), lw_i32(w, off)) : ex_clone(w->a, sidx[i]);
		stlist_push(w->a, out, s);
	}
}

/* ---------------------------------------------------------------- copy */

/* The tile-side index of element `off` of a vector: register creg + off of a
 * fragment (creg != NULL), else the coordinates t[] with off added to the last. */
static Expr **tile_index(Lw *w, Expr *creg, Expr **t, int rank, Expr *off, int *n)
{
	if (creg) {
		*n = 1;
		return lw_idx1(w, ex_add(w->a, ex_clone(w->a, creg), off));
	}
	Expr **v = ARENA_ARRAY(w->a, Expr *, rank);
	for (int d = 0; d < rank; d++)
		v[d] = d == rank - 1 ? ex_add(w->a, ex_clone(w->a, t[d]), off) : ex_clone(w->a, t[d]);
	*n = rank;
	return v;
}

void lw_copy_vector(Lw *w, StmtList *body, bool load, const Region *gr, int tb, Expr *creg, Expr **t, int vec,
		    Expr *stage, bool async, SrcLoc loc)
{
	const Buffer *G = &w->k->bufs[gr->buf], *T = &w->k->bufs[tb];
	int R = G->rank, r = T->rank - (stage != NULL), lead = R - r;
	/* A staged shared tile (pipelined loop) takes the stage as its first index. */
	Expr *ts[TL_MAX_RANK + 1];
	int toff = 0;
	if (stage && !creg)
		ts[toff++] = stage;
	for (int d = 0; d < r; d++)
		ts[toff + d] = t[d];
	Expr **tt = creg ? t : ts;
	int trank = creg ? r : r + toff;

	/* Global coordinates and the in-bounds test of all but the last dimension. */
	Expr *g[TL_MAX_RANK];
	Expr *inb = NULL;
	for (int d = 0; d < R; d++) {
		Expr *o = ex_clone(w->a, gr->origin[d]);
		g[d] = d < lead ? o : lw_var(w, lw_let(w, body, "g", ex_add(w->a, o, ex_clone(w->a, t[d - lead]))));
		if (d < R - 1)
			inb = lw_and(w, inb, lw_and(w, lw_bin(w, OP_GE, ex_clone(w->a, g[d]), lw_i32(w, 0)),
						    lw_bin(w, OP_LT, ex_clone(w->a, g[d]), ex_clone(w->a, G->shape[d]))));
	}
	Expr *glast = g[R - 1], *extent = G->shape[R - 1];

	/* Fast path: the whole vector inside the tensor and aligned for one access. */
	StmtList fast = {0};
	int tn;
	Expr **ti = tile_index(w, creg, tt, trank, lw_i32(w, 0), &tn);
	if (async) {
		Stmt *cp = st_new(w->a, ST_CP_ASYNC, loc);
		cp->buf = tb;
		cp->idx = ti;
		cp->nidx = tn;
		cp->src_buf = gr->buf;
		cp->src_idx = ARENA_ARRAY(w->a, Expr *, R);
		for (int d = 0; d < R; d++)
			cp->src_idx[d] = ex_clone(w->a, g[d]);
		cp->nsrc_idx = R;
		cp->value = lw_i32(w, 16);
		cp->lanes = vec;
		stlist_push(w->a, &fast, cp);
	} else if (load)
		lw_vcopy(w, &fast, tb, ti, tn, gr->buf, g, R, vec, tn - 1, R - 1);
	else
		lw_vcopy(w, &fast, gr->buf, g, R, tb, ti, tn, vec, R - 1, tn - 1);

	/* Slow path: element by element, zeros outside the tensor. */
	StmtList slow = {0};
	int v = lw_fresh(w, "v", VAR_LOOP);
	{
		StmtList one = {0};
		int gv = lw_let(w, &one, "gv", ex_add(w->a, ex_clone(w->a, glast), lw_var(w, v)));
		Expr *ok = lw_and(w, ex_clone(w->a, inb), lw_and(w, lw_bin(w, OP_GE, lw_var(w, gv), lw_i32(w, 0)),
								 lw_bin(w, OP_LT, lw_var(w, gv), ex_clone(w->a, extent))));
		Expr **ge = ARENA_ARRAY(w->a, Expr *, R);
		for (int d = 0; d < R; d++)
			ge[d] = d == R - 1 ? lw_var(w, gv) : ex_clone(w->a, g[d]);
		Expr **te = tile_index(w, creg, tt, trank, lw_var(w, v), &tn);
		if (load) {
			Stmt *ld = lw_store(w, tb, te, tn, ex_load(w->a, w->k, gr->buf, ge, R));
			Expr **te0 = tile_index(w, creg, tt, trank, lw_var(w, v), &tn);
			stlist_push(w->a, &one, lw_if(w, ok, ld, lw_store(w, tb, te0, tn, lw_zero(w, T->elem))));
		} else {
			stlist_push(w->a, &one, lw_if(w, ok, lw_store(w, gr->buf, ge, R, ex_load(w->a, w->k, tb, te, tn)), NULL));
		}
		stlist_push(w->a, &slow, lw_unrolled(w, v, vec, stlist_seq(w->a, &one, loc)));
	}
	Stmt *fast_s = stlist_seq(w->a, &fast, loc), *slow_s = stlist_seq(w->a, &slow, loc);
	if (vec == 1) {
		stlist_push(w->a, body, slow_s);
		return;
	}
	Expr *whole = lw_and(w, ex_clone(w->a, inb),
			     lw_and(w, lw_bin(w, OP_GE, ex_clone(w->a, glast), lw_i32(w, 0)),
				    lw_bin(w, OP_LE, ex_add(w->a, ex_clone(w->a, glast), lw_i32(w, vec)), ex_clone(w->a, extent))));
	Expr **ga = ARENA_ARRAY(w->a, Expr *, R);
	for (int d = 0; d < R; d++)
		ga[d] = ex_clone(w->a, g[d]);
	/* Each piece must be aligned; pieces sit at multiples of their size. */
	int piece = async ? vec : lw_piece_lanes(G->elem, T->elem, vec);
	Expr *aligned = ex_aligned(w->a, gr->buf, ga, R, piece * type_bytes(G->elem));
	Stmt *chunk = lw_if(w, lw_and(w, whole, aligned), fast_s, slow_s);
	if (async) {
		/* Wholly outside the tensor: let the copy engine write the zeros. */
		Expr *outside = lw_bin(w, OP_GE, ex_clone(w->a, glast), ex_clone(w->a, extent));
		if (inb)
			outside = lw_bin(w, OP_LOR, lw_unary_not(w, ex_clone(w->a, inb)), outside);
		Stmt *zf = st_new(w->a, ST_CP_ASYNC, loc);
		zf->buf = tb;
		zf->idx = tile_index(w, creg, tt, trank, lw_i32(w, 0), &zf->nidx);
		zf->src_buf = gr->buf;
		zf->nsrc_idx = R;
		zf->src_idx = ARENA_ARRAY(w->a, Expr *, R);
		for (int d = 0; d < R; d++)
			zf->src_idx[d] = lw_i32(w, 0); /* a valid address; no byte is read */
		zf->value = lw_i32(w, 0);
		zf->lanes = vec;
		chunk->else_s = lw_if(w, outside, zf, slow_s);
	}
	stlist_push(w->a, body, chunk);
}

/* global <-> fragment (ELEMWISE) or shared tile, with masks at the tensor's edges. */
static Stmt *lower_copy_global(Lw *w, Stmt *s, bool load)
{
	const Region *gr = load ? &s->src : &s->dst;
	int tb = load ? s->dst.buf : s->src.buf;
	const Buffer *G = &w->k->bufs[gr->buf], *T = &w->k->bufs[tb];
	bool is_frag = T->scope == SCOPE_FRAGMENT;
	if (is_frag && T->layout.kind == LAYOUT_MMA)
		return lower_copy_mma_global(w, s, load);
	int vec = is_frag ? T->layout.vec : lw_coop_vec(T, G->elem);
	Deal dl = deal_for(w, vec, buffer_elems(T));
	StmtList body = {0};
	int c = lw_fresh(w, "c", VAR_LOOP);
	Expr *creg = is_frag ? ex_mul(w->a, lw_var(w, c), lw_i32(w, vec)) : NULL;
	Expr *base = lw_bin(w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
			    lw_i32(w, vec));
	int basev = lw_let(w, &body, "base", ex_clone(w->a, base));
	Expr *t[TL_MAX_RANK];
	lw_coords(w, T->tile_shape, T->rank, lw_var(w, basev), t);
	for (int d = 0; d < T->rank; d++)
		t[d] = lw_var(w, lw_let(w, &body, "t", t[d]));
	lw_copy_vector(w, &body, load, gr, tb, creg, t, vec, NULL, false, s->loc);
	Stmt *inner = stlist_seq(w->a, &body, s->loc);
	if (dl.guard) /* `base` is bound inside the guard, so the guard repeats its expression */
		inner = lw_if(w, lw_bin(w, OP_LT, ex_clone(w->a, base), lw_i32(w, dl.total)), inner, NULL);
	return lw_chunk_loop(w, c, dl.chunks, inner, is_frag);
}

/* shared <-> fragment: per thread, both sides in bounds by construction. */
static Stmt *lower_copy_shared_frag(Lw *w, Stmt *s)
{
	bool to_frag = w->k->bufs[s->dst.buf].scope == SCOPE_FRAGMENT;
	int fb = to_frag ? s->dst.buf : s->src.buf, sb = to_frag ? s->src.buf : s->dst.buf;
	const Buffer *F = &w->k->bufs[fb], *S = &w->k->bufs[sb];
	int vec = F->layout.vec;
	Deal dl = deal_for(w, vec, buffer_elems(F));
	StmtList body = {0};
	int c = lw_fresh(w, "c", VAR_LOOP);
	Expr *base = lw_bin(w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
			 lw_i32(w, vec));
	/* A pipelined loop's staged tile (stage_a, set by software_pipeline.c)
	 * has the stage as its leading index. */
	int staged = to_frag && s->stage_a ? 1 : 0, rank = S->rank - staged;
	Expr *t[TL_MAX_RANK + 1];
	if (staged)
		t[0] = ex_clone(w->a, s->stage_a);
	lw_coords(w, S->tile_shape + staged, rank, ex_clone(w->a, base), t + staged);
	Expr **fi = lw_idx1(w, ex_mul(w->a, lw_var(w, c), lw_i32(w, vec)));
	if (to_frag)
		lw_vcopy(w, &body, fb, fi, 1, sb, t, S->rank, vec, 0, S->rank - 1);
	else
		lw_vcopy(w, &body, sb, t, S->rank, fb, fi, 1, vec, S->rank - 1, 0);
	Stmt *inner = stlist_seq(w->a, &body, s->loc);
	if (dl.guard)
		inner = lw_if(w, lw_bin(w, OP_LT, ex_clone(w->a, base), lw_i32(w, dl.total)), inner, NULL);
	return lw_unrolled(w, c, dl.chunks, inner);
}

/* Elementwise over a tile, spread over the threads: body(flat coordinates). */
static Stmt *coop_elementwise(Lw *w, const Buffer *shape_of, SrcLoc loc,
			      Stmt *(*body)(Lw *, Expr **t, void *ctx), void *ctx)
{
	Deal dl = deal_for(w, 1, buffer_elems(shape_of));
	int c = lw_fresh(w, "c", VAR_LOOP);
	StmtList l = {0};
	int flat = lw_let(w, &l, "flat", lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)));
	Expr *t[TL_MAX_RANK];
	lw_coords(w, shape_of->tile_shape, shape_of->rank, lw_var(w, flat), t);
	stlist_push(w->a, &l, body(w, t, ctx));
	Stmt *inner = stlist_seq(w->a, &l, loc);
	if (dl.guard) {
		StmtList g = {0};
		int f2 = lw_let(w, &g, "flat", lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)));
		stlist_push(w->a, &g, lw_if(w, lw_bin(w, OP_LT, lw_var(w, f2), lw_i32(w, dl.total)), inner, NULL));
		inner = stlist_seq(w->a, &g, loc);
	}
	return lw_chunk_loop(w, c, dl.chunks, inner, false);
}

typedef struct {
	int src, dst;
	Expr *value;
} CoopCtx;

static Stmt *shared_copy_body(Lw *w, Expr **t, void *ctx)
{
	CoopCtx *c = ctx;
	int r = w->k->bufs[c->dst].rank;
	Expr **ti = ARENA_ARRAY(w->a, Expr *, r), **ts = ARENA_ARRAY(w->a, Expr *, r);
	for (int d = 0; d < r; d++) {
		ti[d] = ex_clone(w->a, t[d]);
		ts[d] = ex_clone(w->a, t[d]);
	}
	return lw_store(w, c->dst, ti, r, ex_load(w->a, w->k, c->src, ts, r));
}

static Stmt *shared_fill_body(Lw *w, Expr **t, void *ctx)
{
	CoopCtx *c = ctx;
	int r = w->k->bufs[c->dst].rank;
	Expr **ti = ARENA_ARRAY(w->a, Expr *, r);
	for (int d = 0; d < r; d++)
		ti[d] = ex_clone(w->a, t[d]);
	return lw_store(w, c->dst, ti, r, ex_clone(w->a, c->value));
}

/* Per-thread registers src -> dst, same layout. */
static Stmt *lower_copy_frag_frag(Lw *w, Stmt *s)
{
	const Buffer *D = &w->k->bufs[s->dst.buf];
	int64_t n = D->layout.regs;
	int i = lw_fresh(w, "r", VAR_LOOP);
	return lw_unrolled(w, i, n, lw_store(w, s->dst.buf, lw_idx1(w, lw_var(w, i)), 1,
					 ex_load(w->a, w->k, s->src.buf, lw_idx1(w, lw_var(w, i)), 1)));
}

/* The row of register `reg` (= fm * 2 + h) of an MMA_ROWS fragment. */
static Expr *mma_row(Lw *w, const FragLayout *L, Expr *reg)
{
	Expr *row, *col;
	lw_mma_coords(w, L, lw_bin(w, OP_DIV, reg, lw_i32(w, 2)), lw_i32(w, 0),
		      ex_mul(w->a, lw_bin(w, OP_MOD, ex_clone(w->a, reg), lw_i32(w, 2)), lw_i32(w, 2)), &row, &col);
	return row;
}

/* Registers of a ROWS fragment and where their rows are: row coordinates in
 * rc[] (rank of the fragment), `valid` when the chunk exists, `first` when the
 * chunk starts its row (so that one thread per row stores it). */
typedef struct {
	Expr *rc[TL_MAX_RANK];
	Expr *valid, *first;
} RowPos;

static RowPos row_pos(Lw *w, StmtList *out, const Buffer *F, int c)
{
	const FragLayout *L = &F->layout;
	RowPos r;
	if (L->kind == LAYOUT_MMA_ROWS) {
		/* Register c = fm * 2 + h; lane 0 of each quad in warp column 0 stores. */
		r.rc[0] = lw_var(w, lw_let(w, out, "row", mma_row(w, L, lw_var(w, c))));
		r.valid = NULL;
		Expr *lane = lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, 32));
		Expr *wn = lw_bin(w, OP_MOD, lw_bin(w, OP_DIV, lw_var(w, w->tid), lw_i32(w, 32)), lw_i32(w, L->warps_n));
		r.first = lw_and(w, lw_bin(w, OP_EQ, lw_bin(w, OP_MOD, lane, lw_i32(w, 4)), lw_i32(w, 0)),
				 L->warps_n > 1 ? lw_bin(w, OP_EQ, wn, lw_i32(w, 0)) : NULL);
		return r;
	}
	int64_t ptotal = 1;
	for (int d = 0; d < L->parent_rank; d++)
		ptotal *= L->parent_shape[d];
	int flat = lw_let(w, out, "flat", lw_bin(w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, L->threads)),
							  lw_var(w, w->tid)), lw_i32(w, L->vec)));
	Expr *pc[TL_MAX_RANK];
	lw_coords(w, L->parent_shape, L->parent_rank, lw_var(w, flat), pc);
	for (int d = 0; d < F->rank; d++)
		r.rc[d] = L->parent_rank == 1 ? lw_i32(w, 0) : pc[d];
	r.valid = lw_bin(w, OP_LT, lw_var(w, flat), lw_i32(w, ptotal));
	r.first = lw_bin(w, OP_EQ, pc[L->parent_rank - 1], lw_i32(w, 0));
	return r;
}

/* Copies between a ROWS fragment and global or shared memory: one element per
 * register; a store comes from the one thread whose chunk starts the row. */
static Stmt *lower_copy_rows(Lw *w, Stmt *s)
{
	bool to_frag = w->k->bufs[s->dst.buf].scope == SCOPE_FRAGMENT;
	const Region *other = to_frag ? &s->src : &s->dst;
	int fb = to_frag ? s->dst.buf : s->src.buf, ob = other->buf;
	const Buffer *F = &w->k->bufs[fb], *O = &w->k->bufs[ob];
	int c = lw_fresh(w, "c", VAR_LOOP);
	StmtList body = {0};
	RowPos r = row_pos(w, &body, F, c);
	Expr **oi = ARENA_ARRAY(w->a, Expr *, O->rank);
	Expr *inb = r.valid;
	int lead = O->rank - F->rank;
	for (int d = 0; d < O->rank; d++) {
		if (O->scope != SCOPE_GLOBAL) {
			oi[d] = ex_clone(w->a, r.rc[d]);
			continue;
		}
		Expr *o = ex_clone(w->a, other->origin[d]);
		oi[d] = d < lead ? o : ex_add(w->a, o, ex_clone(w->a, r.rc[d - lead]));
		inb = lw_and(w, inb, lw_and(w, lw_bin(w, OP_GE, ex_clone(w->a, oi[d]), lw_i32(w, 0)),
				      lw_bin(w, OP_LT, ex_clone(w->a, oi[d]), ex_clone(w->a, O->shape[d]))));
	}
	Expr **fi = lw_idx1(w, lw_var(w, c));
	if (to_frag) {
		Stmt *ld = lw_store(w, fb, fi, 1, ex_load(w->a, w->k, ob, oi, O->rank));
		stlist_push(w->a, &body, lw_if(w, inb, ld, lw_store(w, fb, lw_idx1(w, lw_var(w, c)), 1, lw_zero(w, F->elem))));
	} else {
		Stmt *st = lw_store(w, ob, oi, O->rank, ex_load(w->a, w->k, fb, fi, 1));
		stlist_push(w->a, &body, lw_if(w, lw_and(w, inb, r.first), st, NULL));
	}
	return lw_unrolled(w, c, F->layout.chunks, stlist_seq(w->a, &body, s->loc));
}

/* ---------------------------------------------------------------- reductions */

/* The barriers around a reduction's shared scratch: the guard before the
 * partials are written (the previous execution's readers are done) and the
 * one that publishes them.  A guard is dropped later when nothing can still
 * be reading (elide_scratch_guards). */
enum { SCRATCH_GUARD = 1, SCRATCH_PUBLISH = 2 };

static Stmt *scratch_barrier(Lw *w, int scratch, int role)
{
	Stmt *b = lw_barrier(w);
	b->buf = scratch;
	b->stages = role;
	return b;
}

/* Is there a barrier, other than those of `scratch`'s reduction, among the
 * statements every iteration of a loop with this body runs? */
static bool other_barrier(const Stmt *s, int scratch)
{
	if (s->kind == ST_BARRIER)
		return !(s->stages && s->buf == scratch);
	if (s->kind != ST_SEQ)
		return false;
	for (int i = 0; i < s->nbody; i++)
		if (other_barrier(s->body[i], scratch))
			return true;
	return false;
}

/* A scratch guard protects the partials of the reduction's previous run from
 * being overwritten before every thread read them.  Outside any loop there is
 * no previous run; in a loop whose body has another barrier on every
 * iteration, that barrier already separates the last reads from the next
 * writes (the reduction's own statements are contiguous).  Both guards go. */
static void elide_scratch_guards(Stmt *s, const Stmt *loop_body)
{
	if (!s)
		return;
	switch (s->kind) {
	case ST_SEQ:
		for (int i = 0; i < s->nbody; i++) {
			Stmt *c = s->body[i];
			if (c->kind == ST_BARRIER && c->stages == SCRATCH_GUARD &&
			    (!loop_body || other_barrier(loop_body, c->buf))) {
				c->kind = ST_SEQ; /* empty */
				c->nbody = 0;
				continue;
			}
			elide_scratch_guards(c, loop_body);
		}
		return;
	case ST_FOR:
		elide_scratch_guards(s->then_s, s->then_s);
		return;
	case ST_IF:
		elide_scratch_guards(s->then_s, loop_body);
		elide_scratch_guards(s->else_s, loop_body);
		return;
	default:
		return;
	}
}

static Expr *reduce_identity(Lw *w, ReduceKind r, TypeKind t)
{
	if (r == RED_SUM)
		return lw_zero(w, t);
	bool max = r == RED_MAX;
	if (type_is_float(t))
		return ex_float(w->a, t, max ? -INFINITY : INFINITY);
	if (type_is_signed(t))
		return ex_int(w->a, t, max ? INT32_MIN : INT32_MAX);
	return ex_int(w->a, t, max ? 0 : (int64_t)UINT32_MAX);
}

static Expr *reduce_op(Lw *w, ReduceKind r, Expr *a, Expr *b)
{
	return lw_bin(w, r == RED_SUM ? OP_ADD : r == RED_MAX ? OP_MAX : OP_MIN, a, b);
}

/* v combined with lane (this lane ^ off)'s v: one butterfly step. */
static Expr *bfly(Lw *w, ReduceKind r, Expr *v, int64_t off)
{
	Expr **a2 = ARENA_ARRAY(w->a, Expr *, 2);
	a2[0] = ex_clone(w->a, v);
	a2[1] = lw_i32(w, off);
	return reduce_op(w, r, v, ex_call(w->a, FN_SHFL_BFLY, v->type, a2, 2));
}

/* Register reg of the reduction's source, in the destination's type. */
static Expr *src_elem(Lw *w, const Stmt *s, Expr *reg)
{
	Expr *x = ex_load(w->a, w->k, s->src_buf, lw_idx1(w, reg), 1);
	TypeKind t = w->k->bufs[s->buf].elem;
	if (w->k->bufs[s->src_buf].elem == t)
		return x;
	Expr *c = ex_cast(w->a, t, x);
	c->i = 1; /* opaque (ir.h) */
	return c;
}

int lw_new_buffer(Lw *w, const char *name, Scope scope, TypeKind t, int64_t n)
{
	Buffer b = {0};
	b.name = arena_printf(w->a, "%s.%d", name, w->counter++);
	b.scope = scope;
	b.elem = t;
	b.rank = 1;
	b.tile_shape[0] = n;
	b.shape[0] = lw_i32(w, n);
	b.local_size = n;
	b.param_index = -1;
	return kernel_add_buffer(w->a, w->k, b);
}

/* reduce_op(src, dst) over the last dimension, src ELEMWISE, dst its ROWS.
 *
 *   1. in each thread, each chunk's vec elements (one row's) -> part[c]; when a
 *      row spans several chunks of every thread (G = last/vec vectors per row,
 *      a multiple of the thread count), the thread first combines those cpr =
 *      G / threads chunks, so each of its rows is reduced once from here on;
 *   2. the row's partials lie in consecutive lanes: when G is a power of two,
 *      butterfly shuffles combine groups of min(G, 32) lanes;
 *   3. rows wider than a warp (or G not a power of two) go through shared
 *      memory: one partial per warp (per thread), then every thread combines
 *      the partials of each of its rows: when a row spans whole warps and has
 *      at most 32 of them, each lane reads one partial and a butterfly over
 *      the warp combines them; otherwise each thread reads all, in order.
 * Every thread ends with its rows' values in each of its chunks: ROWS. */
static Stmt *lower_reduce(Lw *w, Stmt *s)
{
	const Buffer *S = &w->k->bufs[s->src_buf];
	const FragLayout *L = &S->layout;
	TypeKind t = w->k->bufs[s->buf].elem; /* a 16-bit source is combined in f32 */
	int T = L->threads, vec = L->vec, chunks = L->chunks;
	int64_t last = S->tile_shape[S->rank - 1], G = last / vec;
	int64_t vectors = buffer_elems(S) / vec;
	bool pow2 = (G & (G - 1)) == 0, use_shfl = pow2 && G > 1 && T % 32 == 0;
	int cpr = G > T && G % T == 0 ? (int)(G / T) : 1; /* chunks per row, per thread */
	int groups = chunks / cpr;
	int part = lw_new_buffer(w, "part", SCOPE_LOCAL, t, chunks);
	StmtList out = {0};

	/* 1. In-thread: part[c] = op over the chunk's vector (identity past the tile). */
	{
		int c = lw_fresh(w, "c", VAR_LOOP);
		Expr *acc = NULL;
		for (int v = 0; v < vec; v++) {
			Expr *x = src_elem(w, s, ex_add(w->a, ex_mul(w->a, lw_var(w, c), lw_i32(w, vec)), lw_i32(w, v)));
			acc = acc ? reduce_op(w, s->reduce, acc, x) : x;
		}
		if ((int64_t)chunks * T > vectors) {
			Expr *valid = lw_bin(w, OP_LT, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, T)), lw_var(w, w->tid)),
					     lw_i32(w, vectors));
			acc = ex_select(w->a, valid, acc, reduce_identity(w, s->reduce, t));
		}
		stlist_push(w->a, &out, lw_unrolled(w, c, chunks, lw_store(w, part, lw_idx1(w, lw_var(w, c)), 1, acc)));
	}
	/* The first chunk of each of the thread's rows leads: part[g * cpr]. */
	if (cpr > 1) {
		int g = lw_fresh(w, "g", VAR_LOOP);
		Expr *lead = ex_mul(w->a, lw_var(w, g), lw_i32(w, cpr));
		Expr *acc = ex_load(w->a, w->k, part, lw_idx1(w, ex_clone(w->a, lead)), 1);
		for (int j = 1; j < cpr; j++)
			acc = reduce_op(w, s->reduce, acc,
					ex_load(w->a, w->k, part, lw_idx1(w, ex_add(w->a, ex_clone(w->a, lead), lw_i32(w, j))), 1));
		stlist_push(w->a, &out, lw_unrolled(w, g, groups, lw_store(w, part, lw_idx1(w, lead), 1, acc)));
	}
	/* 2. Butterfly shuffles within groups of lanes that share a row. */
	if (use_shfl)
		for (int64_t off = (G < 32 ? G : 32) / 2; off >= 1; off /= 2) {
			int g = lw_fresh(w, "g", VAR_LOOP);
			Expr *lead = ex_mul(w->a, lw_var(w, g), lw_i32(w, cpr));
			Expr *v = bfly(w, s->reduce, ex_load(w->a, w->k, part, lw_idx1(w, ex_clone(w->a, lead)), 1), off);
			stlist_push(w->a, &out, lw_unrolled(w, g, groups, lw_store(w, part, lw_idx1(w, lead), 1, v)));
		}
	/* 3. Across warps (or for any G) through shared memory.  Slot of a leader
	 * g: (g*T + tid) / slot; the slots of row r: r * per_row ... + per_row. */
	if (G > 1 && !(use_shfl && G <= 32)) {
		int64_t slot = use_shfl ? 32 : 1; /* the lanes whose partial one slot holds */
		int64_t nslots = ((int64_t)groups * T + slot - 1) / slot;
		int64_t per_row = G / slot / cpr;
		int scratch = lw_new_buffer(w, "scratch", SCOPE_SHARED, t, nslots);
		stlist_push(w->a, &out, scratch_barrier(w, scratch, SCRATCH_GUARD));
		int g = lw_fresh(w, "g", VAR_LOOP);
		Expr *vidx = lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, g), lw_i32(w, T)), lw_var(w, w->tid));
		Expr *writer = lw_bin(w, OP_LT, ex_mul(w->a, ex_clone(w->a, vidx), lw_i32(w, cpr)), lw_i32(w, vectors));
		if (slot > 1)
			writer = lw_and(w, writer, lw_bin(w, OP_EQ, lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, 32)), lw_i32(w, 0)));
		Stmt *put = lw_store(w, scratch, lw_idx1(w, lw_bin(w, OP_DIV, ex_clone(w->a, vidx), lw_i32(w, slot))), 1,
				     ex_load(w->a, w->k, part, lw_idx1(w, ex_mul(w->a, lw_var(w, g), lw_i32(w, cpr))), 1));
		stlist_push(w->a, &out, lw_unrolled(w, g, groups, lw_if(w, writer, put, NULL)));
		stlist_push(w->a, &out, scratch_barrier(w, scratch, SCRATCH_PUBLISH));
		/* Each leader: its row's per_row partials, in order. */
		int g2 = lw_fresh(w, "g", VAR_LOOP);
		StmtList one = {0};
		Expr *lead = ex_mul(w->a, lw_var(w, g2), lw_i32(w, cpr));
		int row = lw_let(w, &one, "row", lw_bin(w, OP_DIV, lw_bin(w, OP_ADD, ex_mul(w->a, ex_clone(w->a, lead), lw_i32(w, T)),
									      lw_var(w, w->tid)), lw_i32(w, G)));
		Var av = {0};
		av.name = arena_printf(w->a, "acc.%d", w->counter++);
		av.kind = VAR_MUT;
		av.type = t;
		av.param_index = -1;
		int acc = kernel_add_var(w->a, w->k, av);
		Stmt *init = st_new(w->a, ST_ASSIGN, NO_LOC);
		init->var = acc;
		init->value = reduce_identity(w, s->reduce, t);
		stlist_push(w->a, &one, init);
		if (slot == 32 && per_row <= 32 && (per_row & (per_row - 1)) == 0) {
			/* A row spans whole warps (G >= 64), so all lanes of a warp share
			 * it: lane l reads partial l % per_row, and a butterfly over
			 * per_row lanes leaves the row's value in every lane. */
			Expr *at = lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, row), lw_i32(w, per_row)),
					  lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, per_row)));
			at = lw_bin(w, OP_MIN, at, lw_i32(w, nslots - 1)); /* padding chunks: unused */
			init->value = ex_load(w->a, w->k, scratch, lw_idx1(w, at), 1);
			for (int64_t off = per_row / 2; off >= 1; off /= 2) {
				Stmt *step = st_new(w->a, ST_ASSIGN, NO_LOC);
				step->var = acc;
				step->value = bfly(w, s->reduce, lw_var(w, acc), off);
				stlist_push(w->a, &one, step);
			}
		} else {
			int q = lw_fresh(w, "q", VAR_LOOP);
			Expr *at = lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, row), lw_i32(w, per_row)), lw_var(w, q));
			/* Rows of a padding chunk point past the scratch: clamp, the value is unused. */
			at = lw_bin(w, OP_MIN, at, lw_i32(w, nslots - 1));
			Stmt *step = st_new(w->a, ST_ASSIGN, NO_LOC);
			step->var = acc;
			step->value = reduce_op(w, s->reduce, lw_var(w, acc), ex_load(w->a, w->k, scratch, lw_idx1(w, at), 1));
			Stmt *loop = lw_unrolled(w, q, per_row, step);
			if (per_row > 16)
				loop->for_kind = FOR_SERIAL;
			stlist_push(w->a, &one, loop);
		}
		stlist_push(w->a, &one, lw_store(w, part, lw_idx1(w, lead), 1, lw_var(w, acc)));
		stlist_push(w->a, &out, lw_unrolled(w, g2, groups, stlist_seq(w->a, &one, s->loc)));
	}
	/* dst[c] = the value of c's row (its leader's), or combined with what dst held. */
	int c = lw_fresh(w, "c", VAR_LOOP);
	Expr *lead = cpr == 1 ? lw_var(w, c) : ex_mul(w->a, lw_bin(w, OP_DIV, lw_var(w, c), lw_i32(w, cpr)), lw_i32(w, cpr));
	Expr *v = ex_load(w->a, w->k, part, lw_idx1(w, lead), 1);
	if (s->accumulate)
		v = reduce_op(w, s->reduce, ex_load(w->a, w->k, s->buf, lw_idx1(w, lw_var(w, c)), 1), v);
	stlist_push(w->a, &out, lw_unrolled(w, c, chunks, lw_store(w, s->buf, lw_idx1(w, lw_var(w, c)), 1, v)));
	return stlist_seq(w->a, &out, s->loc);
}

/* reduce_op(src, dst) over the last dimension, src MMA, dst its MMA_ROWS.
 *
 *   1. in each thread, register fm * 2 + h of part combines the 2 * frag_n
 *      registers of its row (r = 2h, 2h + 1 of pieces (fm, 0 .. frag_n-1));
 *   2. the four lanes of a quad share the row: butterfly shuffles 1 and 2;
 *   3. with warps_n > 1, lane 0 of each quad puts its partial in shared
 *      scratch[wn][row], and every thread combines the warps_n partials of its
 *      rows, in order. */
static Stmt *lower_reduce_mma(Lw *w, Stmt *s)
{
	const Buffer *S = &w->k->bufs[s->src_buf];
	const FragLayout *L = &S->layout;
	TypeKind t = w->k->bufs[s->buf].elem;
	int FN = L->frag_n, R = L->frag_m * 2;
	int part = lw_new_buffer(w, "part", SCOPE_LOCAL, t, R);
	StmtList out = {0};
	int c = lw_fresh(w, "c", VAR_LOOP);
	{
		/* register (fm * FN + fn) * 4 + 2h + j, fm = c / 2, h = c % 2 */
		Expr *acc = NULL;
		for (int fn = 0; fn < FN; fn++)
			for (int j = 0; j < 2; j++) {
				Expr *fm = lw_bin(w, OP_DIV, lw_var(w, c), lw_i32(w, 2));
				Expr *h = lw_bin(w, OP_MOD, lw_var(w, c), lw_i32(w, 2));
				Expr *reg = ex_add(w->a, ex_mul(w->a, ex_add(w->a, ex_mul(w->a, fm, lw_i32(w, FN)), lw_i32(w, fn)),
								 lw_i32(w, 4)),
						   ex_add(w->a, ex_mul(w->a, h, lw_i32(w, 2)), lw_i32(w, j)));
				Expr *x = src_elem(w, s, reg);
				acc = acc ? reduce_op(w, s->reduce, acc, x) : x;
			}
		stlist_push(w->a, &out, lw_unrolled(w, c, R, lw_store(w, part, lw_idx1(w, lw_var(w, c)), 1, acc)));
	}
	for (int off = 1; off <= 2; off *= 2) {
		int g = lw_fresh(w, "g", VAR_LOOP);
		Expr *v = bfly(w, s->reduce, ex_load(w->a, w->k, part, lw_idx1(w, lw_var(w, g)), 1), off);
		stlist_push(w->a, &out, lw_unrolled(w, g, R, lw_store(w, part, lw_idx1(w, lw_var(w, g)), 1, v)));
	}
	if (L->warps_n > 1) {
		int64_t BM = S->tile_shape[0];
		int scratch = lw_new_buffer(w, "scratch", SCOPE_SHARED, t, BM * L->warps_n);
		Expr *wn = lw_bin(w, OP_MOD, lw_bin(w, OP_DIV, lw_var(w, w->tid), lw_i32(w, 32)), lw_i32(w, L->warps_n));
		Expr *quad0 = lw_bin(w, OP_EQ, lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, 4)), lw_i32(w, 0));
		stlist_push(w->a, &out, scratch_barrier(w, scratch, SCRATCH_GUARD));
		int g = lw_fresh(w, "g", VAR_LOOP);
		StmtList put = {0};
		int row = lw_let(w, &put, "row", mma_row(w, L, lw_var(w, g)));
		Expr *at = ex_add(w->a, ex_mul(w->a, wn, lw_i32(w, BM)), lw_var(w, row));
		stlist_push(w->a, &put, lw_if(w, quad0, lw_store(w, scratch, lw_idx1(w, at), 1,
							      ex_load(w->a, w->k, part, lw_idx1(w, lw_var(w, g)), 1)), NULL));
		stlist_push(w->a, &out, lw_unrolled(w, g, R, stlist_seq(w->a, &put, s->loc)));
		stlist_push(w->a, &out, scratch_barrier(w, scratch, SCRATCH_PUBLISH));
		int g2 = lw_fresh(w, "g", VAR_LOOP);
		StmtList one = {0};
		int row2 = lw_let(w, &one, "row", mma_row(w, L, lw_var(w, g2)));
		Expr *acc = NULL;
		for (int q = 0; q < L->warps_n; q++) {
			Expr *x = ex_load(w->a, w->k, scratch,
					  lw_idx1(w, ex_add(w->a, lw_i32(w, (int64_t)q * BM), lw_var(w, row2))), 1);
			acc = acc ? reduce_op(w, s->reduce, acc, x) : x;
		}
		stlist_push(w->a, &one, lw_store(w, part, lw_idx1(w, lw_var(w, g2)), 1, acc));
		stlist_push(w->a, &out, lw_unrolled(w, g2, R, stlist_seq(w->a, &one, s->loc)));
	}
	int d = lw_fresh(w, "c", VAR_LOOP);
	Expr *v = ex_load(w->a, w->k, part, lw_idx1(w, lw_var(w, d)), 1);
	if (s->accumulate)
		v = reduce_op(w, s->reduce, ex_load(w->a, w->k, s->buf, lw_idx1(w, lw_var(w, d)), 1), v);
	stlist_push(w->a, &out, lw_unrolled(w, d, R, lw_store(w, s->buf, lw_idx1(w, lw_var(w, d)), 1, v)));
	return stlist_seq(w->a, &out, s->loc);
}

bool writes_shared(const Lw *w, int buf) { return w->k->bufs[buf].scope == SCOPE_SHARED; }

/* Does lowered s store into a shared tile that wgmma reads? */
static bool writes_wgmma_operand(const Kernel *k, const Stmt *s)
{
	if (!s)
		return false;
	if ((s->kind == ST_STORE || s->kind == ST_VCOPY || s->kind == ST_CP_ASYNC) && k->bufs[s->buf].scope == SCOPE_SHARED &&
	    k->bufs[s->buf].swizzle == SWIZZLE_128B)
		return true;
	for (int i = 0; i < s->nbody; i++)
		if (writes_wgmma_operand(k, s->body[i]))
			return true;
	return writes_wgmma_operand(k, s->then_s) || writes_wgmma_operand(k, s->else_s);
}

Stmt *lw_fenced(Lw *w, Stmt *s)
{
	/* wgmma reads shared memory through the async proxy: this thread's stores
	 * must be fenced for it before the barrier that publishes them. */
	bool proxy = writes_wgmma_operand(w->k, s);
	Stmt **v = ARENA_ARRAY(w->a, Stmt *, 4);
	int n = 0;
	v[n++] = lw_barrier(w);
	v[n++] = s;
	if (proxy)
		v[n++] = st_new(w->a, ST_FENCE_PROXY_ASYNC, NO_LOC);
	v[n++] = lw_barrier(w);
	return st_seq(w->a, v, n);
}

static bool is_rows(const Buffer *b) { return b->layout.kind == LAYOUT_ROWS || b->layout.kind == LAYOUT_MMA_ROWS; }

static Stmt *lower_copy(Lw *w, Stmt *s)
{
	const Buffer *A = &w->k->bufs[s->src.buf], *B = &w->k->bufs[s->dst.buf];
	Stmt *r;
	if (A->scope == SCOPE_LOCAL || B->scope == SCOPE_LOCAL) {
		error_at(w->pc->diags, s->loc, "copy() of an alloc_local buffer is not supported yet; "
					       "assign its elements in a loop");
		return NULL;
	}
	bool rows = (A->scope == SCOPE_FRAGMENT && is_rows(A)) || (B->scope == SCOPE_FRAGMENT && is_rows(B));
	if (rows && !(A->scope == SCOPE_FRAGMENT && B->scope == SCOPE_FRAGMENT))
		r = lower_copy_rows(w, s);
	else if (A->scope == SCOPE_GLOBAL)
		r = lower_copy_global(w, s, true);
	else if (B->scope == SCOPE_GLOBAL)
		r = lower_copy_global(w, s, false);
	else if (A->scope == SCOPE_FRAGMENT && B->scope == SCOPE_FRAGMENT)
		r = lower_copy_frag_frag(w, s);
	else if (A->scope == SCOPE_SHARED && B->scope == SCOPE_SHARED) {
		CoopCtx c = {s->src.buf, s->dst.buf, NULL};
		r = coop_elementwise(w, B, s->loc, shared_copy_body, &c);
	} else if ((A->scope == SCOPE_FRAGMENT ? A : B)->layout.kind == LAYOUT_MMA)
		r = lower_copy_mma_shared(w, s);
	else
		r = lower_copy_shared_frag(w, s);
	return writes_shared(w, s->dst.buf) ? lw_fenced(w, r) : r;
}

static Stmt *lower_fill(Lw *w, Stmt *s)
{
	const Buffer *b = &w->k->bufs[s->buf];
	if (b->scope == SCOPE_SHARED) {
		CoopCtx c = {-1, s->buf, s->value};
		return lw_fenced(w, coop_elementwise(w, b, s->loc, shared_fill_body, &c));
	}
	int64_t n = b->scope == SCOPE_FRAGMENT ? b->layout.regs : buffer_elems(b);
	int i = lw_fresh(w, "r", VAR_LOOP);
	return lw_unrolled(w, i, n, lw_store(w, s->buf, lw_idx1(w, lw_var(w, i)), 1, s->value));
}

/* ---------------------------------------------------------------- parallel */

typedef struct {
	Lw *w;
	const Stmt *loop;
	int lets[TL_MAX_RANK]; /* the loop variables, rebound per element */
	Expr *reg;             /* the register of the current element, in ELEMWISE fragments */
	Expr *row_reg;         /* the register of its row, in ROWS fragments */
	bool shared_store;
} ParCtx;

static Expr *reg_of(ParCtx *p, int buf)
{
	return ex_clone(p->w->a, is_rows(&p->w->k->bufs[buf]) ? p->row_reg : p->reg);
}

static Expr *par_expr(void *ctx, Expr *e)
{
	ParCtx *p = ctx;
	if (e->kind == EX_VAR)
		for (int d = 0; d < p->loop->nvars; d++)
			if (e->var == p->loop->vars[d])
				return lw_var(p->w, p->lets[d]);
	if (e->kind == EX_LOAD && p->w->k->bufs[e->buf].scope == SCOPE_FRAGMENT) {
		e->args = lw_idx1(p->w, reg_of(p, e->buf));
		e->nargs = 1;
	}
	return e;
}

/* Fragment stores anywhere below s take the register index. */
static void par_stores(ParCtx *p, Stmt *s)
{
	if (!s)
		return;
	if (s->kind == ST_STORE) {
		const Buffer *b = &p->w->k->bufs[s->buf];
		if (b->scope == SCOPE_FRAGMENT) {
			s->idx = lw_idx1(p->w, reg_of(p, s->buf));
			s->nidx = 1;
		}
		p->shared_store |= b->scope == SCOPE_SHARED;
	}
	for (int i = 0; i < s->nbody; i++)
		par_stores(p, s->body[i]);
	par_stores(p, s->then_s);
	par_stores(p, s->else_s);
}

static void par_stmt(ParCtx *p, Stmt *s)
{
	stmt_rewrite_exprs(s, par_expr, p);
	par_stores(p, s);
}

/* The parallel loop's iterations on a ROWS anchor: register c of each thread
 * is one row (replicated over the threads that hold parts of it). */
static Stmt *lower_parallel_rows(Lw *w, Stmt *s, const FragLayout *L)
{
	int c = lw_fresh(w, "c", VAR_LOOP);
	int64_t ptotal = 1;
	for (int d = 0; d < L->parent_rank; d++)
		ptotal *= L->parent_shape[d];
	StmtList body = {0};
	Expr *flat = lw_bin(w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, L->threads)), lw_var(w, w->tid)),
			 lw_i32(w, L->vec));
	int flatv = lw_let(w, &body, "flat", flat);
	Expr *t[TL_MAX_RANK];
	lw_coords(w, L->parent_shape, L->parent_rank, lw_var(w, flatv), t);
	ParCtx p = {w, s, {0}, NULL, NULL, false};
	for (int d = 0; d < s->nvars; d++)
		p.lets[d] = lw_let(w, &body, w->k->vars[s->vars[d]].name, L->parent_rank == 1 ? lw_i32(w, 0) : t[d]);
	p.reg = lw_var(w, c);
	p.row_reg = lw_var(w, c);
	par_stmt(&p, s->then_s);
	stlist_push(w->a, &body, s->then_s);
	Stmt *inner = lw_if(w, lw_bin(w, OP_LT, ex_clone(w->a, flat), lw_i32(w, ptotal)), stlist_seq(w->a, &body, s->loc), NULL);
	Stmt *r = lw_unrolled(w, c, L->chunks, inner);
	return p.shared_store ? lw_fenced(w, r) : r;
}

/* The parallel loop's iterations on an MMA anchor: every register of the
 * accumulator layout, at its (row, col). */
static Stmt *lower_parallel_mma(Lw *w, Stmt *s, const FragLayout *L)
{
	int fm = lw_fresh(w, "fm", VAR_LOOP), fn = lw_fresh(w, "fn", VAR_LOOP), r = lw_fresh(w, "r", VAR_LOOP);
	StmtList body = {0};
	Expr *row, *col;
	lw_mma_coords(w, L, lw_var(w, fm), lw_var(w, fn), lw_var(w, r), &row, &col);
	ParCtx p = {w, s, {0}, NULL, NULL, false};
	p.lets[0] = lw_let(w, &body, w->k->vars[s->vars[0]].name, row);
	p.lets[1] = lw_let(w, &body, w->k->vars[s->vars[1]].name, col);
	p.reg = ex_add(w->a, ex_mul(w->a, ex_add(w->a, ex_mul(w->a, lw_var(w, fm), lw_i32(w, L->frag_n)), lw_var(w, fn)),
					lw_i32(w, 4)), lw_var(w, r));
	p.row_reg = ex_add(w->a, ex_mul(w->a, lw_var(w, fm), lw_i32(w, 2)), lw_bin(w, OP_DIV, lw_var(w, r), lw_i32(w, 2)));
	par_stmt(&p, s->then_s);
	stlist_push(w->a, &body, s->then_s);
	Stmt *x = lw_unrolled(w, r, 4, stlist_seq(w->a, &body, s->loc));
	x = lw_unrolled(w, fn, L->frag_n, x);
	x = lw_unrolled(w, fm, L->frag_m, x);
	return p.shared_store ? lw_fenced(w, x) : x;
}

/* The parallel loop's iterations on an MMA_ROWS anchor: each register's row,
 * in every thread that holds a copy of it. */
static Stmt *lower_parallel_mma_rows(Lw *w, Stmt *s, const FragLayout *L)
{
	int c = lw_fresh(w, "c", VAR_LOOP);
	StmtList body = {0};
	ParCtx p = {w, s, {0}, NULL, NULL, false};
	p.lets[0] = lw_let(w, &body, w->k->vars[s->vars[0]].name, mma_row(w, L, lw_var(w, c)));
	p.reg = lw_var(w, c);
	p.row_reg = lw_var(w, c);
	par_stmt(&p, s->then_s);
	stlist_push(w->a, &body, s->then_s);
	Stmt *r = lw_unrolled(w, c, L->chunks, stlist_seq(w->a, &body, s->loc));
	return p.shared_store ? lw_fenced(w, r) : r;
}

/* ---- masks of a 1-D parallel loop: `j < e` with e the same for every element
 *
 * Element j of a thread is B + O: B = tid * vec, the thread's first element, and O = (c * threads)
 * * vec + v, a constant once c and v are unrolled.  `j < e` as written compares a different value
 * per element, so LLVM keeps every B + O alive in a register (31 of them for 32 elements per
 * thread) across the loops around.  As `O < min(max(e, 0), total) - B` the right side is one value
 * per thread and each element compares it with an immediate.  Exact: j is in [0, total), so
 * clamping e to [0, total] changes no comparison, and then neither subtraction can overflow. */

typedef struct {
	Lw *w;
	int loop_var;
	bool *inner;   /* vars bound inside the loop body */
	Expr *base;    /* B */
	Expr *offset;  /* O */
	int64_t total;
} MaskCtx;

/* e is the same for every element of the loop: 1; and for the whole kernel (sizes, constants,
 * scalars, block indices only): 2.  Else 0. */
static int mask_invariant(const MaskCtx *m, const Expr *e)
{
	if (!e)
		return 2;
	switch (e->kind) {
	case EX_INT: return 2;
	case EX_VAR: {
		if (e->var == m->loop_var || m->inner[e->var])
			return 0;
		VarKind k = m->w->k->vars[e->var].kind;
		return k == VAR_SIZE || k == VAR_CONST || k == VAR_SCALAR || k == VAR_BLOCK_IDX || k == VAR_GRID_DIM ? 2 : 1;
	}
	case EX_BINARY:
	case EX_UNARY: {
		if (!type_is_int(e->type))
			return 0;
		int a = mask_invariant(m, e->a), b = mask_invariant(m, e->b);
		return a < b ? a : b;
	}
	default: return 0;
	}
}

static void mark_inner_vars(const Stmt *s, bool *inner)
{
	if (!s)
		return;
	if (s->kind == ST_LET || s->kind == ST_ASSIGN)
		inner[s->var] = true;
	for (int i = 0; i < s->nvars; i++)
		inner[s->vars[i]] = true;
	for (int i = 0; i < s->nbody; i++)
		mark_inner_vars(s->body[i], inner);
	mark_inner_vars(s->then_s, inner);
	mark_inner_vars(s->else_s, inner);
}

static Expr *mask_expr(void *ctx, Expr *e)
{
	MaskCtx *m = ctx;
	if (e->kind != EX_BINARY || (e->op != OP_LT && e->op != OP_GT && e->op != OP_LE && e->op != OP_GE))
		return e;
	bool left = e->a->kind == EX_VAR && e->a->var == m->loop_var;
	bool right = e->b->kind == EX_VAR && e->b->var == m->loop_var;
	if (left == right || e->a->type != TY_I32 || e->b->type != TY_I32)
		return e;
	/* Only a limit that changes from one run of the loop to the next (`j < N - k * BN` in a loop
	 * over k): a limit fixed for the whole kernel makes every comparison loop-invariant, LLVM then
	 * hoists all of them, and keeping that many predicates costs more registers than the indices. */
	const Expr *other = left ? e->b : e->a;
	if (mask_invariant(m, other) != 1)
		return e;
	/* j < e (e > j), or its negation j >= e (e <= j) */
	bool lt = left ? e->op == OP_LT : e->op == OP_GT;
	bool ge = left ? e->op == OP_GE : e->op == OP_LE;
	if (!lt && !ge)
		return e; /* j <= e, j > e: left as written */
	Lw *w = m->w;
	Expr *clamped = lw_bin(w, OP_MIN, lw_bin(w, OP_MAX, ex_clone(w->a, other), lw_i32(w, 0)), lw_i32(w, m->total));
	Expr *lim = lw_bin(w, OP_SUB, clamped, ex_clone(w->a, m->base));
	Expr *r = lw_bin(w, OP_LT, ex_clone(w->a, m->offset), lim);
	r = ge ? lw_unary_not(w, r) : r;
	r->loc = e->loc;
	return r;
}

static Stmt *lower_parallel(Lw *w, Stmt *s)
{
	int64_t shape[TL_MAX_RANK], total = 1;
	for (int d = 0; d < s->nvars; d++)
		total *= shape[d] = s->extents[d]->i;
	int fb = loop_full_fragment(w->k, s);
	if (fb >= 0 && w->k->bufs[fb].layout.kind == LAYOUT_ROWS)
		return lower_parallel_rows(w, s, &w->k->bufs[fb].layout);
	if (fb >= 0 && w->k->bufs[fb].layout.kind == LAYOUT_MMA)
		return lower_parallel_mma(w, s, &w->k->bufs[fb].layout);
	if (fb >= 0 && w->k->bufs[fb].layout.kind == LAYOUT_MMA_ROWS)
		return lower_parallel_mma_rows(w, s, &w->k->bufs[fb].layout);
	int vec = fb >= 0 ? w->k->bufs[fb].layout.vec : 1;
	Deal dl = deal_for(w, vec, total);

	int c = lw_fresh(w, "c", VAR_LOOP), v = lw_fresh(w, "v", VAR_LOOP);
	StmtList body = {0};
	Expr *flat = lw_bin(w, OP_ADD,
			 lw_bin(w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
			     lw_i32(w, vec)),
			 lw_var(w, v));
	int flatv = lw_let(w, &body, "flat", flat);
	Expr *t[TL_MAX_RANK];
	lw_coords(w, shape, s->nvars, lw_var(w, flatv), t);
	if (s->nvars == 1) {
		bool *inner = ARENA_ARRAY(w->a, bool, w->k->nvars + 1);
		mark_inner_vars(s->then_s, inner);
		MaskCtx m = {w, s->vars[0], inner, lw_bin(w, OP_MUL, lw_var(w, w->tid), lw_i32(w, vec)),
			     lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads * (int64_t)vec)), lw_var(w, v)),
			     total};
		stmt_rewrite_exprs(s->then_s, mask_expr, &m);
	}
	ParCtx p = {w, s, {0}, NULL, NULL, false};
	for (int d = 0; d < s->nvars; d++)
		p.lets[d] = lw_let(w, &body, w->k->vars[s->vars[d]].name, t[d]);
	p.reg = ex_add(w->a, ex_mul(w->a, lw_var(w, c), lw_i32(w, vec)), lw_var(w, v));
	p.row_reg = lw_var(w, c);
	par_stmt(&p, s->then_s);
	stlist_push(w->a, &body, s->then_s);
	Stmt *inner = stlist_seq(w->a, &body, s->loc);
	if (dl.guard) {
		StmtList g = {0};
		int f2 = lw_let(w, &g, "flat", ex_clone(w->a, flat));
		stlist_push(w->a, &g, lw_if(w, lw_bin(w, OP_LT, lw_var(w, f2), lw_i32(w, total)), inner, NULL));
		inner = stlist_seq(w->a, &g, s->loc);
	}
	Stmt *r = lw_chunk_loop(w, c, dl.chunks, lw_unrolled(w, v, vec, inner), fb >= 0);
	return p.shared_store ? lw_fenced(w, r) : r;
}

/* ---------------------------------------------------------------- driver */

Stmt *lw_lower_stmt(Lw *w, Stmt *s)
{
	if (!s)
		return NULL;
	switch (s->kind) {
	case ST_SEQ: {
		StmtList l = {0};
		for (int i = 0; i < s->nbody; i++) {
			Stmt *r = lw_lower_stmt(w, s->body[i]);
			if (!r)
				continue;
			/* Flatten nested sequences; drop a barrier right after a barrier. */
			Stmt **items = r->kind == ST_SEQ ? r->body : &r;
			int n = r->kind == ST_SEQ ? r->nbody : 1;
			for (int j = 0; j < n; j++) {
				if (items[j]->kind == ST_BARRIER && l.n && l.items[l.n - 1]->kind == ST_BARRIER)
					continue;
				stlist_push(w->a, &l, items[j]);
			}
		}
		return stlist_seq(w->a, &l, s->loc);
	}
	case ST_IF:
		s->then_s = lw_lower_stmt(w, s->then_s);
		s->else_s = lw_lower_stmt(w, s->else_s);
		return s;
	case ST_FOR:
		if (s->for_kind == FOR_PARALLEL)
			return lower_parallel(w, s);
		if (s->for_kind == FOR_PIPELINED)
			return lower_pipelined(w, s);
		w->loops++;
		s->then_s = lw_lower_stmt(w, s->then_s);
		w->loops--;
		return s;
	case ST_COPY:
		return lower_copy(w, s);
	case ST_FILL:
		return lower_fill(w, s);
	case ST_REDUCE:
		if (w->k->bufs[s->src_buf].layout.kind == LAYOUT_MMA)
			return lower_reduce_mma(w, s);
		return lower_reduce(w, s);
	case ST_STORE:
		/* Every thread runs a plain statement: its shared store is fenced from
		 * earlier readers and for later ones, like a tile op's. */
		return writes_shared(w, s->buf) ? lw_fenced(w, s) : s;
	case ST_GEMM:
		return lower_gemm(w, s);
	case ST_ATOMIC:
		DIE("tile op %d reached lowering; the frontend rejects it", s->kind);
	default:
		return s;
	}
}

/* alloc_local buffers: row-major linear index. */
static Expr *linear_index(Lw *w, const Buffer *b, Expr **idx, int n)
{
	Expr *lin = idx[0];
	for (int d = 1; d < n; d++)
		lin = ex_add(w->a, ex_mul(w->a, lin, lw_i32(w, b->tile_shape[d])), idx[d]);
	return lin;
}

static Expr *linearize_expr(void *ctx, Expr *e)
{
	Lw *w = ctx;
	if (e->kind == EX_LOAD && w->k->bufs[e->buf].scope == SCOPE_LOCAL && e->nargs > 1) {
		e->args = lw_idx1(w, linear_index(w, &w->k->bufs[e->buf], e->args, e->nargs));
		e->nargs = 1;
	}
	return e;
}

static void linearize_locals(Lw *w, Stmt *s)
{
	if (!s)
		return;
	if (s->kind == ST_STORE && w->k->bufs[s->buf].scope == SCOPE_LOCAL && s->nidx > 1) {
		s->idx = lw_idx1(w, linear_index(w, &w->k->bufs[s->buf], s->idx, s->nidx));
		s->nidx = 1;
	}
	for (int i = 0; i < s->nbody; i++)
		linearize_locals(w, s->body[i]);
	linearize_locals(w, s->then_s);
	linearize_locals(w, s->else_s);
}

/* Shared tiles that gemm reads are swizzled (codegen's tile_offset): in the
 * wgmma layout when a gemm reading them is lowered to wgmma (which then wins
 * over any mma.sync gemm that reads them too: ldmatrix reads 16-byte rows,
 * which stay whole in either layout), else in 128-byte lines when they hold
 * 16-bit elements in whole lines. */
static void mark_swizzled(Lw *w, const Stmt *s)
{
	if (!s)
		return;
	Kernel *k = w->k;
	if (s->kind == ST_GEMM) {
		int ops[2] = {s->a, s->b};
		bool wgmma = lw_gemm_uses_wgmma(w, s);
		for (int i = 0; i < 2; i++) {
			Buffer *b = &k->bufs[ops[i]];
			int64_t bytes = buffer_elems(b) * type_bytes(b->elem);
			int64_t row = b->tile_shape[b->rank - 1] * type_bytes(b->elem);
			if (wgmma)
				b->swizzle = SWIZZLE_128B;
			else if (b->swizzle == SWIZZLE_NONE && b->scope == SCOPE_SHARED && type_bytes(b->elem) == 2 &&
				 bytes % 128 == 0 && row % 16 == 0)
				b->swizzle = SWIZZLE_LINES;
		}
	}
	for (int i = 0; i < s->nbody; i++)
		mark_swizzled(w, s->body[i]);
	mark_swizzled(w, s->then_s);
	mark_swizzled(w, s->else_s);
}

/* use_swizzle(P): the user's block indices become a permutation of the raw
 * ones that walks the grid in panels of P rows (by), column by column within
 * a panel, so that consecutive blocks share rows of A and columns of B in L2:
 *
 *   id = rby * gx + rbx;  group = id / (P * gx);  first = group * P
 *   rows = min(gy - first, P);  by = first + (id % (P gx)) % rows;  bx = (id % (P gx)) / rows */
static Stmt *swizzle_blocks(Lw *w)
{
	Kernel *k = w->k;
	int user[2] = {-1, -1};
	for (int i = 0; i < k->nvars; i++)
		if (k->vars[i].kind == VAR_BLOCK_IDX && k->vars[i].dim < 2)
			user[k->vars[i].dim] = i;
	int raw[2], grid[2];
	for (int d = 0; d < 2; d++) {
		raw[d] = lw_fresh(w, d ? "ctaid.y" : "ctaid.x", VAR_BLOCK_IDX);
		k->vars[raw[d]].dim = d;
		grid[d] = lw_fresh(w, d ? "nctaid.y" : "nctaid.x", VAR_GRID_DIM);
		k->vars[grid[d]].dim = d;
	}
	StmtList l = {0};
	int64_t P = k->swizzle_panel;
	int id = lw_let(w, &l, "id", ex_add(w->a, ex_mul(w->a, lw_var(w, raw[1]), lw_var(w, grid[0])), lw_var(w, raw[0])));
	int pw = lw_let(w, &l, "panel", ex_mul(w->a, lw_i32(w, P), lw_var(w, grid[0])));
	int first = lw_let(w, &l, "first", ex_mul(w->a, lw_bin(w, OP_DIV, lw_var(w, id), lw_var(w, pw)), lw_i32(w, P)));
	int rows = lw_let(w, &l, "rows", lw_bin(w, OP_MIN, lw_bin(w, OP_SUB, lw_var(w, grid[1]), lw_var(w, first)), lw_i32(w, P)));
	int in = lw_let(w, &l, "in_panel", lw_bin(w, OP_MOD, lw_var(w, id), lw_var(w, pw)));
	Expr *v[2] = {lw_bin(w, OP_DIV, lw_var(w, in), lw_var(w, rows)),
		      ex_add(w->a, lw_var(w, first), lw_bin(w, OP_MOD, lw_var(w, in), lw_var(w, rows)))};
	for (int d = 0; d < 2; d++) {
		if (user[d] < 0)
			continue;
		k->vars[user[d]].kind = VAR_LET;
		Stmt *s = st_new(w->a, ST_LET, NO_LOC);
		s->var = user[d];
		s->value = v[d];
		stlist_push(w->a, &l, s);
	}
	stlist_push(w->a, &l, k->body);
	return stlist_seq(w->a, &l, k->body->loc);
}

bool pass_lower_tiles(PassContext *pc, Kernel *k)
{
	Lw w = {pc, k, pc->arena, -1, 0, 0};
	Var t = {0};
	t.name = "tid.x";
	t.kind = VAR_THREAD_IDX;
	t.type = TY_I32;
	t.param_index = -1;
	w.tid = kernel_add_var(pc->arena, k, t);
	for (int i = 0; i < k->nbufs; i++)
		if (k->bufs[i].scope == SCOPE_LOCAL)
			k->bufs[i].local_size = buffer_elems(&k->bufs[i]);
	stmt_rewrite_exprs(k->body, linearize_expr, &w);
	linearize_locals(&w, k->body);
	mark_swizzled(&w, k->body);
	if (k->swizzle_panel)
		k->body = swizzle_blocks(&w);
	int errors = pc->diags->nerrors;
	k->body = lw_lower_stmt(&w, k->body);
	if (pc->diags->nerrors != errors)
		return false;
	elide_scratch_guards(k->body, NULL);
	for (int i = 0; i < k->nbufs; i++) {
		Buffer *b = &k->bufs[i];
		if (b->scope == SCOPE_FRAGMENT) {
			b->scope = SCOPE_LOCAL;
			b->local_size = b->layout.regs;
		}
	}
	ir_fold_stmt(pc->arena, k, k->body);
	return true;
}
