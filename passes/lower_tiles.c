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
#include "passes.h"

#include <math.h>
#include <string.h>

typedef struct {
	PassContext *pc;
	Kernel *k;
	Arena *a;
	int tid;
	int counter; /* for fresh variable names */
} Lw;

static Expr *I32(Lw *w, int64_t v) { return ex_int(w->a, TY_I32, v); }
static Expr *VAR(Lw *w, int v) { return ex_var(w->a, w->k, v); }
static Expr *BIN(Lw *w, OpKind op, Expr *x, Expr *y) { return ex_binary(w->a, op, x, y); }

static Expr *AND(Lw *w, Expr *x, Expr *y)
{
	if (!x)
		return y;
	if (!y)
		return x;
	return BIN(w, OP_LAND, x, y);
}

static int fresh(Lw *w, const char *base, VarKind kind)
{
	Var v = {0};
	v.name = arena_printf(w->a, "%s.%d", base, w->counter++);
	v.kind = kind;
	v.type = TY_I32;
	v.param_index = -1;
	return kernel_add_var(w->a, w->k, v);
}

/* let NAME = value; returns the new variable. */
static int let(Lw *w, StmtList *out, const char *name, Expr *value)
{
	int v = fresh(w, name, VAR_LET);
	w->k->vars[v].type = value->type;
	Stmt *s = st_new(w->a, ST_LET, NO_LOC);
	s->var = v;
	s->value = value;
	stlist_push(w->a, out, s);
	return v;
}

static Stmt *unrolled(Lw *w, int var, int64_t n, Stmt *body)
{
	Stmt *s = st_new(w->a, ST_FOR, body->loc);
	s->for_kind = FOR_UNROLLED;
	s->nvars = 1;
	s->vars[0] = var;
	s->extents[0] = I32(w, n);
	s->then_s = body;
	return s;
}

/* A loop over chunks: unrolled when it indexes registers (fragments) or is
 * short; a plain loop otherwise, so that large shared tiles stay small code. */
static Stmt *chunk_loop(Lw *w, int var, int64_t n, Stmt *body, bool indexes_registers)
{
	Stmt *s = unrolled(w, var, n, body);
	if (!indexes_registers && n > 8)
		s->for_kind = FOR_SERIAL;
	return s;
}

static Stmt *if_then(Lw *w, Expr *cond, Stmt *then_s, Stmt *else_s)
{
	if (!cond)
		return then_s;
	Stmt *s = st_new(w->a, ST_IF, then_s->loc);
	s->cond = cond;
	s->then_s = then_s;
	s->else_s = else_s;
	return s;
}

static Stmt *barrier(Lw *w)
{
	return st_new(w->a, ST_BARRIER, NO_LOC);
}

static Stmt *store(Lw *w, int buf, Expr **idx, int n, Expr *value)
{
	Stmt *s = st_new(w->a, ST_STORE, NO_LOC);
	s->buf = buf;
	s->idx = idx;
	s->nidx = n;
	TypeKind t = w->k->bufs[buf].elem;
	s->value = value->type == t ? value : ex_cast(w->a, t, value);
	return s;
}

static Expr *zero(Lw *w, TypeKind t)
{
	return type_is_float(t) ? ex_float(w->a, t, 0) : ex_int(w->a, t, 0);
}

static Expr **idx1(Lw *w, Expr *x)
{
	Expr **v = ARENA_ARRAY(w->a, Expr *, 1);
	v[0] = x;
	return v;
}

static int64_t tile_elems(const Buffer *b)
{
	int64_t n = 1;
	for (int d = 0; d < b->rank; d++)
		n *= b->tile_shape[d];
	return n;
}

/* Coordinates of flat row-major element `flat` in a tile of `shape`. */
static void coords(Lw *w, const int64_t *shape, int rank, Expr *flat, Expr **out)
{
	int64_t stride = 1;
	for (int d = rank - 1; d >= 0; d--) {
		Expr *q = stride == 1 ? flat : BIN(w, OP_DIV, ex_clone(w->a, flat), I32(w, stride));
		out[d] = d == 0 ? q : BIN(w, OP_MOD, q, I32(w, shape[d]));
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
static int coop_vec(const Buffer *tile, TypeKind other)
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
static int piece_lanes(TypeKind a, TypeKind b, int n)
{
	int piece = n;
	while (piece > 1 && (piece * type_bytes(a) > 16 || piece * type_bytes(b) > 16))
		piece /= 2;
	return piece;
}

/* Copies n contiguous elements, in pieces of at most 16 bytes on either side. */
static void vcopy(Lw *w, StmtList *out, int dst, Expr **didx, int dn, int src, Expr **sidx, int sn, int n,
		  int last_d, int last_s)
{
	TypeKind td = w->k->bufs[dst].elem, ts = w->k->bufs[src].elem;
	int piece = piece_lanes(td, ts, n);
	for (int off = 0; off < n; off += piece) {
		Stmt *s = st_new(w->a, ST_VCOPY, NO_LOC);
		s->lanes = piece;
		s->buf = dst;
		s->nidx = dn;
		s->idx = ARENA_ARRAY(w->a, Expr *, dn);
		for (int i = 0; i < dn; i++)
			s->idx[i] = i == last_d ? ex_add(w->a, ex_clone(w->a, didx[i]), I32(w, off)) : ex_clone(w->a, didx[i]);
		s->src_buf = src;
		s->nsrc_idx = sn;
		s->src_idx = ARENA_ARRAY(w->a, Expr *, sn);
		for (int i = 0; i < sn; i++)
			s->src_idx[i] = i == last_s ? ex_add(w->a, ex_clone(w->a, sidx[i]), I32(w, off)) : ex_clone(w->a, sidx[i]);
		stlist_push(w->a, out, s);
	}
}

/* ---------------------------------------------------------------- copy */

typedef struct {
	int buf;
	bool is_frag; /* index by register, else by coordinates */
} TileSide;

/* Index of element `off` of the current vector on a tile side.  For fragments
 * the register is c * vec + off; for shared tiles the coordinates t[] with off
 * added to the last. */
static Expr **tile_index(Lw *w, TileSide ts, Expr *creg, Expr **t, int rank, int off, int *n)
{
	if (ts.is_frag) {
		*n = 1;
		return idx1(w, ex_add(w->a, ex_clone(w->a, creg), I32(w, off)));
	}
	Expr **v = ARENA_ARRAY(w->a, Expr *, rank);
	for (int d = 0; d < rank; d++)
		v[d] = d == rank - 1 ? ex_add(w->a, ex_clone(w->a, t[d]), I32(w, off)) : ex_clone(w->a, t[d]);
	*n = rank;
	return v;
}

/* global <-> tile (fragment or shared), with masks at the tensor's edges. */
static Stmt *lower_copy_global(Lw *w, Stmt *s, bool load)
{
	const Region *gr = load ? &s->src : &s->dst;
	int tb = load ? s->dst.buf : s->src.buf;
	const Buffer *G = &w->k->bufs[gr->buf], *T = &w->k->bufs[tb];
	TileSide side = {tb, T->scope == SCOPE_FRAGMENT};
	int vec = side.is_frag ? T->layout.vec : coop_vec(T, G->elem);
	Deal dl = deal_for(w, vec, tile_elems(T));
	int R = G->rank, r = T->rank, lead = R - r;

	StmtList body = {0};
	int c = fresh(w, "c", VAR_LOOP);
	Expr *creg = ex_mul(w->a, VAR(w, c), I32(w, vec));
	Expr *base = BIN(w, OP_MUL, BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, w->k->nthreads)), VAR(w, w->tid)),
			 I32(w, vec));
	int basev = let(w, &body, "base", ex_clone(w->a, base));
	Expr *t[TL_MAX_RANK];
	coords(w, T->tile_shape, r, VAR(w, basev), t);
	for (int d = 0; d < r; d++)
		t[d] = VAR(w, let(w, &body, "t", t[d]));
	/* Global coordinates and the in-bounds test of all but the last dimension. */
	Expr *g[TL_MAX_RANK];
	Expr *inb = NULL;
	for (int d = 0; d < R; d++) {
		Expr *o = ex_clone(w->a, gr->origin[d]);
		g[d] = d < lead ? o : VAR(w, let(w, &body, "g", ex_add(w->a, o, t[d - lead])));
		if (d < R - 1)
			inb = AND(w, inb, AND(w, BIN(w, OP_GE, ex_clone(w->a, g[d]), I32(w, 0)),
					      BIN(w, OP_LT, ex_clone(w->a, g[d]), ex_clone(w->a, G->shape[d]))));
	}
	Expr *glast = g[R - 1], *extent = G->shape[R - 1];
	if (lead == R) /* a rank-0 tile cannot happen: tiles have rank >= 1 */
		DIE("copy tile of rank 0");

	/* Fast path: the whole vector inside the tensor and aligned for one access. */
	StmtList fast = {0};
	int tn;
	Expr **ti = tile_index(w, side, creg, t, r, 0, &tn);
	if (load)
		vcopy(w, &fast, tb, ti, tn, gr->buf, g, R, vec, tn - 1, R - 1);
	else
		vcopy(w, &fast, gr->buf, g, R, tb, ti, tn, vec, R - 1, tn - 1);

	/* Slow path: element by element. */
	StmtList slow = {0};
	int v = fresh(w, "v", VAR_LOOP);
	{
		StmtList one = {0};
		int gv = let(w, &one, "gv", ex_add(w->a, ex_clone(w->a, glast), VAR(w, v)));
		Expr *ok = AND(w, ex_clone(w->a, inb), AND(w, BIN(w, OP_GE, VAR(w, gv), I32(w, 0)),
							 BIN(w, OP_LT, VAR(w, gv), ex_clone(w->a, extent))));
		Expr **ge = ARENA_ARRAY(w->a, Expr *, R);
		for (int d = 0; d < R; d++)
			ge[d] = d == R - 1 ? VAR(w, gv) : ex_clone(w->a, g[d]);
		/* The register / coordinate of element v of this vector. */
		Expr **te;
		if (side.is_frag)
			te = idx1(w, ex_add(w->a, ex_clone(w->a, creg), VAR(w, v))), tn = 1;
		else {
			te = ARENA_ARRAY(w->a, Expr *, r);
			for (int d = 0; d < r; d++)
				te[d] = d == r - 1 ? ex_add(w->a, ex_clone(w->a, t[d]), VAR(w, v)) : ex_clone(w->a, t[d]);
			tn = r;
		}
		if (load) {
			Stmt *ld = store(w, tb, te, tn, ex_load(w->a, w->k, gr->buf, ge, R));
			Expr **te0 = ARENA_ARRAY(w->a, Expr *, tn);
			for (int i = 0; i < tn; i++)
				te0[i] = ex_clone(w->a, te[i]);
			stlist_push(w->a, &one, if_then(w, ok, ld, store(w, tb, te0, tn, zero(w, T->elem))));
		} else {
			stlist_push(w->a, &one, if_then(w, ok, store(w, gr->buf, ge, R, ex_load(w->a, w->k, tb, te, tn)), NULL));
		}
		stlist_push(w->a, &slow, unrolled(w, v, vec, stlist_seq(w->a, &one, s->loc)));
	}
	Stmt *fast_s = stlist_seq(w->a, &fast, s->loc), *slow_s = stlist_seq(w->a, &slow, s->loc);
	Stmt *chunk;
	if (vec == 1)
		chunk = slow_s;
	else {
		Expr *whole = AND(w, ex_clone(w->a, inb),
				  AND(w, BIN(w, OP_GE, ex_clone(w->a, glast), I32(w, 0)),
				      BIN(w, OP_LE, ex_add(w->a, ex_clone(w->a, glast), I32(w, vec)), ex_clone(w->a, extent))));
		Expr **ga = ARENA_ARRAY(w->a, Expr *, R);
		for (int d = 0; d < R; d++)
			ga[d] = ex_clone(w->a, g[d]);
		/* Each piece must be aligned; pieces sit at multiples of their size. */
		int piece = piece_lanes(G->elem, T->elem, vec);
		Expr *aligned = ex_aligned(w->a, gr->buf, ga, R, piece * type_bytes(G->elem));
		chunk = if_then(w, AND(w, whole, aligned), fast_s, slow_s);
	}
	stlist_push(w->a, &body, chunk);
	Stmt *inner = stlist_seq(w->a, &body, s->loc);
	if (dl.guard) /* `base` is bound inside the guard, so the guard repeats its expression */
		inner = if_then(w, BIN(w, OP_LT, ex_clone(w->a, base), I32(w, dl.total)), inner, NULL);
	return chunk_loop(w, c, dl.chunks, inner, side.is_frag);
}

/* shared <-> fragment: per thread, both sides in bounds by construction. */
static Stmt *lower_copy_shared_frag(Lw *w, Stmt *s)
{
	bool to_frag = w->k->bufs[s->dst.buf].scope == SCOPE_FRAGMENT;
	int fb = to_frag ? s->dst.buf : s->src.buf, sb = to_frag ? s->src.buf : s->dst.buf;
	const Buffer *F = &w->k->bufs[fb], *S = &w->k->bufs[sb];
	int vec = F->layout.vec;
	Deal dl = deal_for(w, vec, tile_elems(F));
	StmtList body = {0};
	int c = fresh(w, "c", VAR_LOOP);
	Expr *base = BIN(w, OP_MUL, BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, w->k->nthreads)), VAR(w, w->tid)),
			 I32(w, vec));
	Expr *t[TL_MAX_RANK];
	coords(w, S->tile_shape, S->rank, ex_clone(w->a, base), t);
	Expr **fi = idx1(w, ex_mul(w->a, VAR(w, c), I32(w, vec)));
	if (to_frag)
		vcopy(w, &body, fb, fi, 1, sb, t, S->rank, vec, 0, S->rank - 1);
	else
		vcopy(w, &body, sb, t, S->rank, fb, fi, 1, vec, S->rank - 1, 0);
	Stmt *inner = stlist_seq(w->a, &body, s->loc);
	if (dl.guard)
		inner = if_then(w, BIN(w, OP_LT, ex_clone(w->a, base), I32(w, dl.total)), inner, NULL);
	return unrolled(w, c, dl.chunks, inner);
}

/* Elementwise over a tile, spread over the threads: body(flat coordinates). */
static Stmt *coop_elementwise(Lw *w, const Buffer *shape_of, SrcLoc loc,
			      Stmt *(*body)(Lw *, Expr **t, void *ctx), void *ctx)
{
	Deal dl = deal_for(w, 1, tile_elems(shape_of));
	int c = fresh(w, "c", VAR_LOOP);
	StmtList l = {0};
	int flat = let(w, &l, "flat", BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, w->k->nthreads)), VAR(w, w->tid)));
	Expr *t[TL_MAX_RANK];
	coords(w, shape_of->tile_shape, shape_of->rank, VAR(w, flat), t);
	stlist_push(w->a, &l, body(w, t, ctx));
	Stmt *inner = stlist_seq(w->a, &l, loc);
	if (dl.guard) {
		StmtList g = {0};
		int f2 = let(w, &g, "flat", BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, w->k->nthreads)), VAR(w, w->tid)));
		stlist_push(w->a, &g, if_then(w, BIN(w, OP_LT, VAR(w, f2), I32(w, dl.total)), inner, NULL));
		inner = stlist_seq(w->a, &g, loc);
	}
	return chunk_loop(w, c, dl.chunks, inner, false);
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
	return store(w, c->dst, ti, r, ex_load(w->a, w->k, c->src, ts, r));
}

static Stmt *shared_fill_body(Lw *w, Expr **t, void *ctx)
{
	CoopCtx *c = ctx;
	int r = w->k->bufs[c->dst].rank;
	Expr **ti = ARENA_ARRAY(w->a, Expr *, r);
	for (int d = 0; d < r; d++)
		ti[d] = ex_clone(w->a, t[d]);
	return store(w, c->dst, ti, r, ex_clone(w->a, c->value));
}

/* Per-thread registers src -> dst, same layout. */
static Stmt *lower_copy_frag_frag(Lw *w, Stmt *s)
{
	const Buffer *D = &w->k->bufs[s->dst.buf];
	int64_t n = D->layout.regs;
	int i = fresh(w, "r", VAR_LOOP);
	return unrolled(w, i, n, store(w, s->dst.buf, idx1(w, VAR(w, i)), 1,
					 ex_load(w->a, w->k, s->src.buf, idx1(w, VAR(w, i)), 1)));
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
	int64_t ptotal = 1;
	for (int d = 0; d < L->parent_rank; d++)
		ptotal *= L->parent_shape[d];
	int flat = let(w, out, "flat", BIN(w, OP_MUL, BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, L->threads)),
							  VAR(w, w->tid)), I32(w, L->vec)));
	Expr *pc[TL_MAX_RANK];
	coords(w, L->parent_shape, L->parent_rank, VAR(w, flat), pc);
	RowPos r;
	for (int d = 0; d < F->rank; d++)
		r.rc[d] = L->parent_rank == 1 ? I32(w, 0) : pc[d];
	r.valid = BIN(w, OP_LT, VAR(w, flat), I32(w, ptotal));
	r.first = BIN(w, OP_EQ, pc[L->parent_rank - 1], I32(w, 0));
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
	int c = fresh(w, "c", VAR_LOOP);
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
		inb = AND(w, inb, AND(w, BIN(w, OP_GE, ex_clone(w->a, oi[d]), I32(w, 0)),
				      BIN(w, OP_LT, ex_clone(w->a, oi[d]), ex_clone(w->a, O->shape[d]))));
	}
	Expr **fi = idx1(w, VAR(w, c));
	if (to_frag) {
		Stmt *ld = store(w, fb, fi, 1, ex_load(w->a, w->k, ob, oi, O->rank));
		stlist_push(w->a, &body, if_then(w, inb, ld, store(w, fb, idx1(w, VAR(w, c)), 1, zero(w, F->elem))));
	} else {
		Stmt *st = store(w, ob, oi, O->rank, ex_load(w->a, w->k, fb, fi, 1));
		stlist_push(w->a, &body, if_then(w, AND(w, inb, r.first), st, NULL));
	}
	return unrolled(w, c, F->layout.chunks, stlist_seq(w->a, &body, s->loc));
}

/* ---------------------------------------------------------------- reductions */

static Expr *reduce_identity(Lw *w, ReduceKind r, TypeKind t)
{
	if (r == RED_SUM)
		return zero(w, t);
	bool max = r == RED_MAX;
	if (type_is_float(t))
		return ex_float(w->a, t, max ? -INFINITY : INFINITY);
	if (type_is_signed(t))
		return ex_int(w->a, t, max ? INT32_MIN : INT32_MAX);
	return ex_int(w->a, t, max ? 0 : (int64_t)UINT32_MAX);
}

static Expr *reduce_op(Lw *w, ReduceKind r, Expr *a, Expr *b)
{
	return BIN(w, r == RED_SUM ? OP_ADD : r == RED_MAX ? OP_MAX : OP_MIN, a, b);
}

static int new_buffer(Lw *w, const char *name, Scope scope, TypeKind t, int64_t n)
{
	Buffer b = {0};
	b.name = arena_printf(w->a, "%s.%d", name, w->counter++);
	b.scope = scope;
	b.elem = t;
	b.rank = 1;
	b.tile_shape[0] = n;
	b.shape[0] = I32(w, n);
	b.local_size = n;
	b.param_index = -1;
	return kernel_add_buffer(w->a, w->k, b);
}

/* reduce_op(src, dst) over the last dimension, src ELEMWISE, dst its ROWS.
 *
 *   1. in each thread, each chunk's vec elements (one row's) -> part[c];
 *   2. the G = last/vec vectors of a row lie in G consecutive (thread, chunk)
 *      slots: when G is a power of two, butterfly shuffles combine groups of
 *      min(G, 32) lanes;
 *   3. rows wider than a warp (or G not a power of two) go through shared
 *      memory: one partial per warp (per thread), then every thread combines
 *      the G/32 (G) partials of each of its rows.
 * Every thread ends with the whole row's value in each of its chunks: ROWS. */
static Stmt *lower_reduce(Lw *w, Stmt *s)
{
	const Buffer *S = &w->k->bufs[s->src_buf];
	const FragLayout *L = &S->layout;
	TypeKind t = S->elem;
	int T = L->threads, vec = L->vec, chunks = L->chunks;
	int64_t last = S->tile_shape[S->rank - 1], G = last / vec;
	int64_t vectors = tile_elems(S) / vec;
	bool pow2 = (G & (G - 1)) == 0, use_shfl = pow2 && G > 1 && T % 32 == 0;
	int part = new_buffer(w, "part", SCOPE_LOCAL, t, chunks);
	StmtList out = {0};

	/* 1. In-thread: part[c] = op over the chunk's vector (identity past the tile). */
	{
		int c = fresh(w, "c", VAR_LOOP);
		Expr *acc = NULL;
		for (int v = 0; v < vec; v++) {
			Expr *x = ex_load(w->a, w->k, s->src_buf,
					  idx1(w, ex_add(w->a, ex_mul(w->a, VAR(w, c), I32(w, vec)), I32(w, v))), 1);
			acc = acc ? reduce_op(w, s->reduce, acc, x) : x;
		}
		if ((int64_t)chunks * T > vectors) {
			Expr *valid = BIN(w, OP_LT, BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, T)), VAR(w, w->tid)),
					  I32(w, vectors));
			acc = ex_select(w->a, valid, acc, reduce_identity(w, s->reduce, t));
		}
		stlist_push(w->a, &out, unrolled(w, c, chunks, store(w, part, idx1(w, VAR(w, c)), 1, acc)));
	}
	/* 2. Butterfly shuffles within groups of lanes that share a row. */
	if (use_shfl)
		for (int64_t off = (G < 32 ? G : 32) / 2; off >= 1; off /= 2) {
			int c = fresh(w, "c", VAR_LOOP);
			Expr *args[2] = {ex_load(w->a, w->k, part, idx1(w, VAR(w, c)), 1), I32(w, off)};
			Expr **a2 = ARENA_ARRAY(w->a, Expr *, 2);
			a2[0] = args[0];
			a2[1] = args[1];
			Expr *sh = ex_call(w->a, FN_SHFL_BFLY, t, a2, 2);
			Expr *v = reduce_op(w, s->reduce, ex_load(w->a, w->k, part, idx1(w, VAR(w, c)), 1), sh);
			stlist_push(w->a, &out, unrolled(w, c, chunks, store(w, part, idx1(w, VAR(w, c)), 1, v)));
		}
	/* 3. Across warps (or for any G) through shared memory. */
	if (G > 1 && !(use_shfl && G <= 32)) {
		int64_t slot = use_shfl ? 32 : 1; /* vectors per partial */
		int64_t nslots = ((int64_t)chunks * T + slot - 1) / slot;
		int scratch = new_buffer(w, "scratch", SCOPE_SHARED, t, nslots);
		stlist_push(w->a, &out, barrier(w));
		int c = fresh(w, "c", VAR_LOOP);
		Expr *vidx = BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, T)), VAR(w, w->tid));
		Expr *writer = BIN(w, OP_LT, ex_clone(w->a, vidx), I32(w, vectors));
		if (slot > 1)
			writer = AND(w, writer, BIN(w, OP_EQ, BIN(w, OP_MOD, VAR(w, w->tid), I32(w, 32)), I32(w, 0)));
		Stmt *put = store(w, scratch, idx1(w, BIN(w, OP_DIV, ex_clone(w->a, vidx), I32(w, slot))), 1,
				  ex_load(w->a, w->k, part, idx1(w, VAR(w, c)), 1));
		stlist_push(w->a, &out, unrolled(w, c, chunks, if_then(w, writer, put, NULL)));
		stlist_push(w->a, &out, barrier(w));
		/* Each chunk: its row's G / slot partials, in order. */
		int c2 = fresh(w, "c", VAR_LOOP);
		StmtList one = {0};
		int row = let(w, &one, "row", BIN(w, OP_DIV, BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c2), I32(w, T)),
									VAR(w, w->tid)), I32(w, G)));
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
		int q = fresh(w, "q", VAR_LOOP);
		int64_t per_row = G / slot;
		Expr *at = BIN(w, OP_ADD, ex_mul(w->a, VAR(w, row), I32(w, per_row)), VAR(w, q));
		/* Rows of a padding chunk point past the scratch: clamp, the value is unused. */
		at = BIN(w, OP_MIN, at, I32(w, nslots - 1));
		Stmt *step = st_new(w->a, ST_ASSIGN, NO_LOC);
		step->var = acc;
		step->value = reduce_op(w, s->reduce, VAR(w, acc), ex_load(w->a, w->k, scratch, idx1(w, at), 1));
		Stmt *loop = unrolled(w, q, per_row, step);
		if (per_row > 16)
			loop->for_kind = FOR_SERIAL;
		stlist_push(w->a, &one, loop);
		stlist_push(w->a, &one, store(w, part, idx1(w, VAR(w, c2)), 1, VAR(w, acc)));
		stlist_push(w->a, &out, unrolled(w, c2, chunks, stlist_seq(w->a, &one, s->loc)));
	}
	/* dst[c] = part[c], or combined with what dst held. */
	int c = fresh(w, "c", VAR_LOOP);
	Expr *v = ex_load(w->a, w->k, part, idx1(w, VAR(w, c)), 1);
	if (s->accumulate)
		v = reduce_op(w, s->reduce, ex_load(w->a, w->k, s->buf, idx1(w, VAR(w, c)), 1), v);
	stlist_push(w->a, &out, unrolled(w, c, chunks, store(w, s->buf, idx1(w, VAR(w, c)), 1, v)));
	return stlist_seq(w->a, &out, s->loc);
}

static bool writes_shared(const Lw *w, int buf) { return w->k->bufs[buf].scope == SCOPE_SHARED; }

static Stmt *fenced(Lw *w, Stmt *s)
{
	Stmt **v = ARENA_ARRAY(w->a, Stmt *, 3);
	v[0] = barrier(w);
	v[1] = s;
	v[2] = barrier(w);
	return st_seq(w->a, v, 3);
}

static Stmt *lower_copy(Lw *w, Stmt *s)
{
	const Buffer *A = &w->k->bufs[s->src.buf], *B = &w->k->bufs[s->dst.buf];
	Stmt *r;
	if (A->scope == SCOPE_LOCAL || B->scope == SCOPE_LOCAL) {
		error_at(w->pc->diags, s->loc, "copy() of an alloc_local buffer is not supported yet; "
					       "assign its elements in a loop");
		return NULL;
	}
	bool rows = (A->scope == SCOPE_FRAGMENT && A->layout.kind == LAYOUT_ROWS) ||
		    (B->scope == SCOPE_FRAGMENT && B->layout.kind == LAYOUT_ROWS);
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
	} else
		r = lower_copy_shared_frag(w, s);
	return writes_shared(w, s->dst.buf) ? fenced(w, r) : r;
}

static Stmt *lower_fill(Lw *w, Stmt *s)
{
	const Buffer *b = &w->k->bufs[s->buf];
	if (b->scope == SCOPE_SHARED) {
		CoopCtx c = {-1, s->buf, s->value};
		return fenced(w, coop_elementwise(w, b, s->loc, shared_fill_body, &c));
	}
	int64_t n = b->scope == SCOPE_FRAGMENT ? b->layout.regs : tile_elems(b);
	int i = fresh(w, "r", VAR_LOOP);
	return unrolled(w, i, n, store(w, s->buf, idx1(w, VAR(w, i)), 1, s->value));
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
	return ex_clone(p->w->a, p->w->k->bufs[buf].layout.kind == LAYOUT_ROWS ? p->row_reg : p->reg);
}

static Expr *par_expr(void *ctx, Expr *e)
{
	ParCtx *p = ctx;
	if (e->kind == EX_VAR)
		for (int d = 0; d < p->loop->nvars; d++)
			if (e->var == p->loop->vars[d])
				return VAR(p->w, p->lets[d]);
	if (e->kind == EX_LOAD && p->w->k->bufs[e->buf].scope == SCOPE_FRAGMENT) {
		e->args = idx1(p->w, reg_of(p, e->buf));
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
			s->idx = idx1(p->w, reg_of(p, s->buf));
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
	int c = fresh(w, "c", VAR_LOOP);
	int64_t ptotal = 1;
	for (int d = 0; d < L->parent_rank; d++)
		ptotal *= L->parent_shape[d];
	StmtList body = {0};
	Expr *flat = BIN(w, OP_MUL, BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, L->threads)), VAR(w, w->tid)),
			 I32(w, L->vec));
	int flatv = let(w, &body, "flat", flat);
	Expr *t[TL_MAX_RANK];
	coords(w, L->parent_shape, L->parent_rank, VAR(w, flatv), t);
	ParCtx p = {w, s, {0}, NULL, NULL, false};
	for (int d = 0; d < s->nvars; d++)
		p.lets[d] = let(w, &body, w->k->vars[s->vars[d]].name, L->parent_rank == 1 ? I32(w, 0) : t[d]);
	p.reg = VAR(w, c);
	p.row_reg = VAR(w, c);
	par_stmt(&p, s->then_s);
	stlist_push(w->a, &body, s->then_s);
	Stmt *inner = if_then(w, BIN(w, OP_LT, ex_clone(w->a, flat), I32(w, ptotal)), stlist_seq(w->a, &body, s->loc), NULL);
	Stmt *r = unrolled(w, c, L->chunks, inner);
	return p.shared_store ? fenced(w, r) : r;
}

static Stmt *lower_parallel(Lw *w, Stmt *s)
{
	int64_t shape[TL_MAX_RANK], total = 1;
	for (int d = 0; d < s->nvars; d++)
		total *= shape[d] = s->extents[d]->i;
	int fb = loop_full_fragment(w->k, s);
	if (fb >= 0 && w->k->bufs[fb].layout.kind == LAYOUT_ROWS)
		return lower_parallel_rows(w, s, &w->k->bufs[fb].layout);
	int vec = fb >= 0 ? w->k->bufs[fb].layout.vec : 1;
	Deal dl = deal_for(w, vec, total);

	int c = fresh(w, "c", VAR_LOOP), v = fresh(w, "v", VAR_LOOP);
	StmtList body = {0};
	Expr *flat = BIN(w, OP_ADD,
			 BIN(w, OP_MUL, BIN(w, OP_ADD, ex_mul(w->a, VAR(w, c), I32(w, w->k->nthreads)), VAR(w, w->tid)),
			     I32(w, vec)),
			 VAR(w, v));
	int flatv = let(w, &body, "flat", flat);
	Expr *t[TL_MAX_RANK];
	coords(w, shape, s->nvars, VAR(w, flatv), t);
	ParCtx p = {w, s, {0}, NULL, NULL, false};
	for (int d = 0; d < s->nvars; d++)
		p.lets[d] = let(w, &body, w->k->vars[s->vars[d]].name, t[d]);
	p.reg = ex_add(w->a, ex_mul(w->a, VAR(w, c), I32(w, vec)), VAR(w, v));
	p.row_reg = VAR(w, c);
	par_stmt(&p, s->then_s);
	stlist_push(w->a, &body, s->then_s);
	Stmt *inner = stlist_seq(w->a, &body, s->loc);
	if (dl.guard) {
		StmtList g = {0};
		int f2 = let(w, &g, "flat", ex_clone(w->a, flat));
		stlist_push(w->a, &g, if_then(w, BIN(w, OP_LT, VAR(w, f2), I32(w, total)), inner, NULL));
		inner = stlist_seq(w->a, &g, s->loc);
	}
	Stmt *r = chunk_loop(w, c, dl.chunks, unrolled(w, v, vec, inner), fb >= 0);
	return p.shared_store ? fenced(w, r) : r;
}

/* ---------------------------------------------------------------- driver */

static Stmt *lower_stmt(Lw *w, Stmt *s)
{
	if (!s)
		return NULL;
	switch (s->kind) {
	case ST_SEQ: {
		StmtList l = {0};
		for (int i = 0; i < s->nbody; i++) {
			Stmt *r = lower_stmt(w, s->body[i]);
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
		s->then_s = lower_stmt(w, s->then_s);
		s->else_s = lower_stmt(w, s->else_s);
		return s;
	case ST_FOR:
		if (s->for_kind == FOR_PARALLEL)
			return lower_parallel(w, s);
		s->then_s = lower_stmt(w, s->then_s);
		return s;
	case ST_COPY:
		return lower_copy(w, s);
	case ST_FILL:
		return lower_fill(w, s);
	case ST_REDUCE:
		return lower_reduce(w, s);
	case ST_STORE:
		/* Every thread runs a plain statement: its shared store is fenced from
		 * earlier readers and for later ones, like a tile op's. */
		return writes_shared(w, s->buf) ? fenced(w, s) : s;
	case ST_GEMM:
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
		lin = ex_add(w->a, ex_mul(w->a, lin, I32(w, b->tile_shape[d])), idx[d]);
	return lin;
}

static Expr *linearize_expr(void *ctx, Expr *e)
{
	Lw *w = ctx;
	if (e->kind == EX_LOAD && w->k->bufs[e->buf].scope == SCOPE_LOCAL && e->nargs > 1) {
		e->args = idx1(w, linear_index(w, &w->k->bufs[e->buf], e->args, e->nargs));
		e->nargs = 1;
	}
	return e;
}

static void linearize_locals(Lw *w, Stmt *s)
{
	if (!s)
		return;
	if (s->kind == ST_STORE && w->k->bufs[s->buf].scope == SCOPE_LOCAL && s->nidx > 1) {
		s->idx = idx1(w, linear_index(w, &w->k->bufs[s->buf], s->idx, s->nidx));
		s->nidx = 1;
	}
	for (int i = 0; i < s->nbody; i++)
		linearize_locals(w, s->body[i]);
	linearize_locals(w, s->then_s);
	linearize_locals(w, s->else_s);
}

bool pass_lower_tiles(PassContext *pc, Kernel *k)
{
	Lw w = {pc, k, pc->arena, -1, 0};
	Var t = {0};
	t.name = "tid.x";
	t.kind = VAR_THREAD_IDX;
	t.type = TY_I32;
	t.param_index = -1;
	w.tid = kernel_add_var(pc->arena, k, t);
	for (int i = 0; i < k->nbufs; i++)
		if (k->bufs[i].scope == SCOPE_LOCAL)
			k->bufs[i].local_size = tile_elems(&k->bufs[i]);
	stmt_rewrite_exprs(k->body, linearize_expr, &w);
	linearize_locals(&w, k->body);
	int errors = pc->diags->nerrors;
	k->body = lower_stmt(&w, k->body);
	if (pc->diags->nerrors != errors)
		return false;
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
