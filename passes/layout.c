/* layout.c: fragment layouts for elementwise code.
 *
 * A fragment's elements are spread over the block's threads (FragLayout in
 * ir.h).  A parallel loop runs each iteration on the thread that owns that
 * element, so every fragment a parallel loop touches must have the loop's
 * shape and be indexed by the loop's variables in order; all of them then
 * share one layout.  Fragments tied together this way (and by fragment-to-
 * fragment copies) form a class; the class's vector width is the widest that
 * gives every member 16-byte (or narrower) accesses and divides the last
 * dimension, so that copies to and from global memory are coalesced vectors.
 */
#include "passes.h"

#include <inttypes.h>

typedef struct {
	PassContext *pc;
	Kernel *k;
	int *parent; /* union-find over buffer handles */
	const Stmt *loop; /* the enclosing parallel loop, if any */
	bool ok;
} L;

static int find(L *l, int b)
{
	while (l->parent[b] != b)
		b = l->parent[b] = l->parent[l->parent[b]];
	return b;
}

static void unite(L *l, int a, int b) { l->parent[find(l, a)] = find(l, b); }

static const char HINT[] =
	"a fragment's elements are spread over the block's threads, so a parallel loop may only touch "
	"element [i, j, ...] of a fragment of its own shape, indexed by its own variables in order; "
	"to read elements in another pattern, stage the data through shared memory (alloc_shared)";

/* Checks one access to a fragment at `idx`. */
static void check_access(L *l, int buf, Expr **idx, int n, SrcLoc loc)
{
	const Buffer *b = &l->k->bufs[buf];
	if (b->scope != SCOPE_FRAGMENT)
		return;
	if (!l->loop) {
		error_at(l->pc->diags, loc, "fragment '%s' is accessed outside a parallel loop", b->name);
		note_at(l->pc->diags, loc, "%s; for per-thread scratch use alloc_local", HINT);
		l->ok = false;
		return;
	}
	const Stmt *p = l->loop;
	bool shape_ok = b->rank == p->nvars;
	for (int d = 0; shape_ok && d < n; d++)
		shape_ok = b->tile_shape[d] == p->extents[d]->i;
	if (!shape_ok) {
		error_at(l->pc->diags, loc, "fragment '%s' does not have the shape of the parallel loop around it", b->name);
		note_at(l->pc->diags, p->loc, "%s", HINT);
		l->ok = false;
		return;
	}
	for (int d = 0; d < n; d++)
		if (idx[d]->kind != EX_VAR || idx[d]->var != p->vars[d]) {
			error_at(l->pc->diags, idx[d]->loc.line ? idx[d]->loc : loc,
				 "layout conflict: fragment '%s' is indexed in dimension %d by something other than the "
				 "parallel loop's variable '%s'", b->name, d, l->k->vars[p->vars[d]].name);
			note_at(l->pc->diags, p->loc, "%s", HINT);
			l->ok = false;
			return;
		}
}

static Expr *visit_expr(void *ctx, Expr *e)
{
	L *l = ctx;
	if (e->kind == EX_LOAD)
		check_access(l, e->buf, e->args, e->nargs, e->loc);
	return e;
}

/* The first fragment accessed in a loop body, or -1: it anchors the class. */
static int first_fragment(L *l, const Stmt *s);
static int frag_in_expr(L *l, const Expr *e)
{
	if (!e)
		return -1;
	if (e->kind == EX_LOAD && l->k->bufs[e->buf].scope == SCOPE_FRAGMENT)
		return e->buf;
	int r = frag_in_expr(l, e->a);
	if (r < 0)
		r = frag_in_expr(l, e->b);
	if (r < 0)
		r = frag_in_expr(l, e->c);
	for (int i = 0; r < 0 && i < e->nargs; i++)
		r = frag_in_expr(l, e->args[i]);
	return r;
}

static int first_fragment(L *l, const Stmt *s)
{
	if (!s)
		return -1;
	int r = -1;
	if ((s->kind == ST_STORE) && l->k->bufs[s->buf].scope == SCOPE_FRAGMENT)
		return s->buf;
	for (int i = 0; r < 0 && i < s->nbody; i++)
		r = first_fragment(l, s->body[i]);
	if (r < 0)
		r = frag_in_expr(l, s->value);
	if (r < 0)
		r = frag_in_expr(l, s->cond);
	for (int i = 0; r < 0 && i < s->nidx; i++)
		r = frag_in_expr(l, s->idx[i]);
	if (r < 0)
		r = first_fragment(l, s->then_s);
	if (r < 0)
		r = first_fragment(l, s->else_s);
	return r;
}

/* Unites every fragment in s with `anchor`. */
static void unite_all(L *l, const Stmt *s, int anchor);
static void unite_expr(L *l, const Expr *e, int anchor)
{
	if (!e)
		return;
	if (e->kind == EX_LOAD && l->k->bufs[e->buf].scope == SCOPE_FRAGMENT)
		unite(l, e->buf, anchor);
	unite_expr(l, e->a, anchor);
	unite_expr(l, e->b, anchor);
	unite_expr(l, e->c, anchor);
	for (int i = 0; i < e->nargs; i++)
		unite_expr(l, e->args[i], anchor);
}

static void unite_all(L *l, const Stmt *s, int anchor)
{
	if (!s)
		return;
	if (s->kind == ST_STORE && l->k->bufs[s->buf].scope == SCOPE_FRAGMENT)
		unite(l, s->buf, anchor);
	for (int i = 0; i < s->nbody; i++)
		unite_all(l, s->body[i], anchor);
	unite_expr(l, s->value, anchor);
	unite_expr(l, s->cond, anchor);
	for (int i = 0; i < s->nidx; i++)
		unite_expr(l, s->idx[i], anchor);
	for (int i = 0; i < s->nvars; i++)
		unite_expr(l, s->extents[i], anchor);
	unite_all(l, s->then_s, anchor);
	unite_all(l, s->else_s, anchor);
}

static const char *tile_op_name(StmtKind k)
{
	switch (k) {
	case ST_COPY: return "copy";
	case ST_FILL: return "fill";
	case ST_GEMM: return "gemm";
	case ST_REDUCE: return "a reduction";
	default: return NULL;
	}
}

static void visit_stmt(L *l, Stmt *s)
{
	if (!s)
		return;
	const char *op = tile_op_name(s->kind);
	if (op && l->loop) {
		error_at(l->pc->diags, s->loc, "%s cannot be used inside a parallel loop: it is already spread over "
					      "the block's threads", op);
		l->ok = false;
		return;
	}
	switch (s->kind) {
	case ST_FOR:
		if (s->for_kind == FOR_PARALLEL) {
			if (l->loop) {
				error_at(l->pc->diags, s->loc, "parallel loops cannot be nested; list all dimensions in one: "
							      "for i, j in parallel(M, N)");
				l->ok = false;
				return;
			}
			l->loop = s;
			int anchor = first_fragment(l, s->then_s);
			if (anchor >= 0)
				unite_all(l, s->then_s, anchor);
			visit_stmt(l, s->then_s);
			l->loop = NULL;
			return;
		}
		visit_stmt(l, s->then_s);
		return;
	case ST_COPY: {
		const Buffer *a = &l->k->bufs[s->src.buf], *b = &l->k->bufs[s->dst.buf];
		if (a->scope == SCOPE_FRAGMENT && b->scope == SCOPE_FRAGMENT)
			unite(l, s->src.buf, s->dst.buf);
		break;
	}
	case ST_STORE:
		check_access(l, s->buf, s->idx, s->nidx, s->loc);
		break;
	default:
		break;
	}
	for (int i = 0; i < s->nbody; i++)
		visit_stmt(l, s->body[i]);
	/* Expressions of this statement only (children were visited above). */
	if (s->value)
		expr_rewrite(s->value, visit_expr, l);
	if (s->cond)
		expr_rewrite(s->cond, visit_expr, l);
	for (int i = 0; i < s->nidx; i++)
		expr_rewrite(s->idx[i], visit_expr, l);
	visit_stmt(l, s->then_s);
	visit_stmt(l, s->else_s);
}

bool pass_infer_layouts(PassContext *pc, Kernel *k)
{
	L l = {pc, k, ARENA_ARRAY(pc->arena, int, k->nbufs + 1), NULL, true};
	for (int i = 0; i < k->nbufs; i++)
		l.parent[i] = i;
	visit_stmt(&l, k->body);
	if (!l.ok)
		return false;
	/* Vector width per class: the narrowest member's 16 bytes. */
	int *vec = ARENA_ARRAY(pc->arena, int, k->nbufs + 1);
	for (int i = 0; i < k->nbufs; i++)
		vec[i] = 16;
	for (int i = 0; i < k->nbufs; i++)
		if (k->bufs[i].scope == SCOPE_FRAGMENT) {
			int r = find(&l, i), v = 16 / type_bytes(k->bufs[i].elem);
			const Buffer *b = &k->bufs[i];
			while (v > 1 && b->tile_shape[b->rank - 1] % v)
				v /= 2;
			if (v < vec[r])
				vec[r] = v;
		}
	for (int i = 0; i < k->nbufs; i++) {
		Buffer *b = &k->bufs[i];
		if (b->scope != SCOPE_FRAGMENT)
			continue;
		int64_t total = 1;
		for (int d = 0; d < b->rank; d++)
			total *= b->tile_shape[d];
		int v = vec[find(&l, i)];
		int64_t vectors = (total + v - 1) / v;
		b->has_layout = true;
		b->layout.vec = v;
		b->layout.threads = k->nthreads;
		b->layout.chunks = (int)((vectors + k->nthreads - 1) / k->nthreads);
		/* Registers are finite: a thread holding more than 256 elements of one
		 * fragment would spill; say so rather than emit slow code silently. */
		if ((int64_t)b->layout.chunks * v > 256) {
			error_at(pc->diags, b->loc, "fragment '%s' needs %" PRId64 " registers per thread with %d threads; "
				 "use more threads or a smaller tile (at most 256 elements per thread)",
				 b->name, (int64_t)b->layout.chunks * v, k->nthreads);
			return false;
		}
	}
	return true;
}
