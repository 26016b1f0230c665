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

/* Copies n contiguous elements, in pieces of at most 16 bytes on either side. */
static void vcopy(Lw *w, StmtList *out, int dst, Expr **didx, int dn, int src, Expr **sidx, int sn, int n,
		  int last_d, int last_s)
{
	TypeKind td = w->k->bufs[dst].elem, ts = w->k->bufs[src].elem;
	int piece = n;
	while (piece > 1 && (piece * type_bytes(td) > 16 || piece * type_bytes(ts) > 16))
		piece /= 2;
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
		Expr *aligned = ex_aligned(w->a, gr->buf, ga, R, vec * type_bytes(G->elem));
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
	int64_t n = (int64_t)D->layout.chunks * D->layout.vec;
	int i = fresh(w, "r", VAR_LOOP);
	return unrolled(w, i, n, store(w, s->dst.buf, idx1(w, VAR(w, i)), 1,
					 ex_load(w->a, w->k, s->src.buf, idx1(w, VAR(w, i)), 1)));
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
	if (A->scope == SCOPE_GLOBAL)
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
	int64_t n = b->scope == SCOPE_FRAGMENT ? (int64_t)b->layout.chunks * b->layout.vec : tile_elems(b);
	int i = fresh(w, "r", VAR_LOOP);
	return unrolled(w, i, n, store(w, s->buf, idx1(w, VAR(w, i)), 1, s->value));
}

/* ---------------------------------------------------------------- parallel */

typedef struct {
	Lw *w;
	const Stmt *loop;
	int lets[TL_MAX_RANK]; /* the loop variables, rebound per element */
	Expr *reg;             /* the register index of the current element */
	bool shared_store;
} ParCtx;

static Expr *par_expr(void *ctx, Expr *e)
{
	ParCtx *p = ctx;
	if (e->kind == EX_VAR)
		for (int d = 0; d < p->loop->nvars; d++)
			if (e->var == p->loop->vars[d])
				return VAR(p->w, p->lets[d]);
	if (e->kind == EX_LOAD && p->w->k->bufs[e->buf].scope == SCOPE_FRAGMENT) {
		e->args = idx1(p->w, ex_clone(p->w->a, p->reg));
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
			s->idx = idx1(p->w, ex_clone(p->w->a, p->reg));
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

static int frag_of(const Lw *w, const Expr *e)
{
	if (!e)
		return -1;
	if (e->kind == EX_LOAD && w->k->bufs[e->buf].scope == SCOPE_FRAGMENT)
		return e->buf;
	int r = frag_of(w, e->a);
	if (r < 0)
		r = frag_of(w, e->b);
	if (r < 0)
		r = frag_of(w, e->c);
	for (int i = 0; r < 0 && i < e->nargs; i++)
		r = frag_of(w, e->args[i]);
	return r;
}

static int frag_in(const Lw *w, const Stmt *s)
{
	if (!s)
		return -1;
	if (s->kind == ST_STORE && w->k->bufs[s->buf].scope == SCOPE_FRAGMENT)
		return s->buf;
	int r = frag_of(w, s->value);
	if (r < 0)
		r = frag_of(w, s->cond);
	for (int i = 0; r < 0 && i < s->nidx; i++)
		r = frag_of(w, s->idx[i]);
	for (int i = 0; r < 0 && i < s->nbody; i++)
		r = frag_in(w, s->body[i]);
	if (r < 0)
		r = frag_in(w, s->then_s);
	if (r < 0)
		r = frag_in(w, s->else_s);
	return r;
}

static Stmt *lower_parallel(Lw *w, Stmt *s)
{
	int64_t shape[TL_MAX_RANK], total = 1;
	for (int d = 0; d < s->nvars; d++)
		total *= shape[d] = s->extents[d]->i;
	int fb = frag_in(w, s->then_s);
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
	ParCtx p = {w, s, {0}, NULL, false};
	for (int d = 0; d < s->nvars; d++) {
		p.lets[d] = let(w, &body, w->k->vars[s->vars[d]].name, t[d]);
	}
	p.reg = ex_add(w->a, ex_mul(w->a, VAR(w, c), I32(w, vec)), VAR(w, v));
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
	case ST_GEMM:
	case ST_REDUCE:
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
			b->local_size = (int64_t)b->layout.chunks * b->layout.vec;
		}
	}
	ir_fold_stmt(pc->arena, k, k->body);
	return true;
}
