/* layout.c: fragment layouts (FragLayout in ir.h), inferred from how the
 * fragments are used.
 *
 * A parallel loop runs each iteration on the thread that holds that element,
 * so inside one loop:
 *   - a fragment of the loop's shape, indexed by the loop's variables in
 *     order, must share the layout of every other such fragment (a class,
 *     kept with union-find; fragment-to-fragment copies join classes too);
 *   - a fragment of the loop's shape without its last dimension, indexed by
 *     the leading variables (x[i, j] beside m[i]; for a 1-D loop m[0] of a
 *     [1] fragment), is broadcast along the last dimension: its class takes
 *     the ROWS layout of the loop's class.  reduce_*(x, m) says the same;
 *   - a fragment of the loop's trailing shape, indexed by the trailing variables
 *     (b[j] beside x[i, j]), is a column broadcast: it becomes a shared tile
 *     before inference (columns_to_shared).
 * Any other access is a layout conflict, reported with a hint.
 *
 * Then each class without a parent gets an ELEMWISE layout whose vector is 16
 * bytes of its narrowest member (wider members move theirs in 16-byte pieces),
 * halved until it divides the last dimension, so that copies to and from
 * global memory are coalesced vectors; each class with a parent gets ROWS of it.
 */
#include "passes.h"

#include <inttypes.h>

typedef struct {
  int child, parent; /* buffer handles */
  SrcLoc loc;
} Derived;

typedef struct {
  PassContext *pc;
  Kernel *k;
  int *parent; /* union-find over buffer handles */
  Derived *derived;
  int nderived, cap_derived;
  const Stmt *loop; /* the enclosing parallel loop, if any */
  const Stmt **gemms;
  int ngemms, cap_gemms;
  int anchor;        /* a fragment of the loop's shape in it, or -1 */
  SrcLoc inside_err; /* where refuse_in_parallel last reported */
  bool ok;
  /* Found by find_row_parents: each class's parent class (-1: none); pairs of
   * parents of different shapes whose rows one class holds (alt_first[i]
   * the first use, alt[i] the other); row groups (union-find over classes) */
  int *up;
  Derived *alt, *alt_first;
  int nalt;
  int *rg;
  FragLayout *mma; /* by class: the MMA layout choose_mma_layouts gave it */
} Inference;

static int find(Inference *l, int b)
{
  while (l->parent[b] != b)
    b = l->parent[b] = l->parent[l->parent[b]];
  return b;
}

static void unite(Inference *l, int a, int b) { l->parent[find(l, a)] = find(l, b); }

static void add_derived(Inference *l, int child, int parent, SrcLoc loc)
{
  if (l->nderived == l->cap_derived) {
    int cap = l->cap_derived ? l->cap_derived * 2 : 8;
    Derived *d = ARENA_ARRAY(l->pc->arena, Derived, cap);
    for (int i = 0; i < l->nderived; i++)
      d[i] = l->derived[i];
    l->derived = d;
    l->cap_derived = cap;
  }
  l->derived[l->nderived++] = (Derived){child, parent, loc};
}

static const char HINT[] =
    "a fragment's elements are spread over the block's threads, so a parallel loop may only touch "
    "element [i, j, ...] of a fragment of its own shape, indexed by its own variables in order, "
    "element [i, ...] of a fragment without the last dimension (broadcast along it), or element "
    "[j, ...] of one without the leading dimensions (a column fragment, kept in shared memory); to "
    "read elements in another pattern, stage the data through shared memory (alloc_shared)";

static bool is_frag(const Inference *l, int b) { return l->k->bufs[b].scope == SCOPE_FRAGMENT; }

/* Is fragment b of the loop's full shape (full) or the shape without its last
 * dimension (rows)?  A 1-D loop's rows shape is [1]. */
static bool shape_is(const Buffer *b, const Stmt *p, bool rows)
{
  int n = rows ? p->nvars - 1 : p->nvars;
  if (rows && n == 0)
    return b->rank == 1 && b->tile_shape[0] == 1;
  if (b->rank != n)
    return false;
  for (int d = 0; d < n; d++)
    if (b->tile_shape[d] != p->extents[d]->i)
      return false;
  return true;
}

static bool indexed_by_loop(const Stmt *p, Expr **idx, int n, bool rows)
{
  if (rows && p->nvars == 1)
    return n == 1 && idx[0]->kind == EX_INT && idx[0]->i == 0;
  for (int d = 0; d < n; d++)
    if (idx[d]->kind != EX_VAR || idx[d]->var != p->vars[d])
      return false;
  return true;
}

/* Checks one access to a fragment at `idx` and records what it implies. */
static void check_access(Inference *l, int buf, Expr **idx, int n, SrcLoc loc)
{
  if (!is_frag(l, buf))
    return;
  const Buffer *b = &l->k->bufs[buf];
  if (!l->loop) {
    error_at(l->pc->diags, loc, "fragment '%s' is accessed outside a parallel loop", b->name);
    note_at(l->pc->diags, loc, "%s; for per-thread scratch use alloc_local", HINT);
    l->ok = false;
    return;
  }
  const Stmt *p = l->loop;
  bool full = shape_is(b, p, false), rows = !full && shape_is(b, p, true);
  /* A 1-D loop of extent 1: a [1] fragment has both shapes; read as m[0] it is the rows (the
   * broadcast of softmax's max beside x[j] when a launch constant makes the row one element). */
  if (full && p->nvars == 1 && n == 1 && idx[0]->kind == EX_INT && idx[0]->i == 0 && shape_is(b, p, true))
    full = false, rows = true;
  if (!full && !rows) {
    error_at(l->pc->diags, loc, "fragment '%s' does not have the shape of the parallel loop around it",
             b->name);
    note_at(l->pc->diags, p->loc, "%s", HINT);
    l->ok = false;
    return;
  }
  if (!indexed_by_loop(p, idx, n, rows)) {
    int d = 0;
    while (d < n - 1 && idx[d]->kind == EX_VAR && idx[d]->var == p->vars[d])
      d++;
    error_at(l->pc->diags, idx[d]->loc.line ? idx[d]->loc : loc,
             "layout conflict: fragment '%s' is indexed in dimension %d by something other than the "
             "parallel loop's variable '%s'",
             b->name, d, l->k->vars[p->vars[d]].name);
    note_at(l->pc->diags, p->loc, "%s", HINT);
    l->ok = false;
    return;
  }
  if (full) {
    if (l->anchor < 0)
      l->anchor = buf;
    unite(l, buf, l->anchor);
  } else if (l->anchor >= 0)
    add_derived(l, buf, l->anchor, loc);
  else {
    error_at(l->pc->diags, loc,
             "fragment '%s' is used as the rows of this parallel loop, but no fragment "
             "of the loop's full shape is used in it to take the layout from",
             b->name);
    note_at(l->pc->diags, p->loc, "loop over the shape of '%s' instead, or use a full-shape fragment here",
            b->name);
    l->ok = false;
  }
}

static Expr *visit_expr(void *ctx, Expr *e)
{
  Inference *l = ctx;
  if (e->kind == EX_LOAD)
    check_access(l, e->buf, e->args, e->nargs, e->loc);
  return e;
}

/* The first fragment of the loop's full shape used in s, or -1. */
static int full_in_expr(const Inference *l, const Expr *e)
{
  if (!e)
    return -1;
  if (e->kind == EX_LOAD && is_frag(l, e->buf) && shape_is(&l->k->bufs[e->buf], l->loop, false))
    return e->buf;
  int r = full_in_expr(l, e->a);
  if (r < 0)
    r = full_in_expr(l, e->b);
  if (r < 0)
    r = full_in_expr(l, e->c);
  for (int i = 0; r < 0 && i < e->nargs; i++)
    r = full_in_expr(l, e->args[i]);
  return r;
}

static int full_in(const Inference *l, const Stmt *s)
{
  if (!s)
    return -1;
  if (s->kind == ST_STORE && is_frag(l, s->buf) && shape_is(&l->k->bufs[s->buf], l->loop, false))
    return s->buf;
  int r = full_in_expr(l, s->value);
  if (r < 0)
    r = full_in_expr(l, s->cond);
  for (int i = 0; r < 0 && i < s->nidx; i++)
    r = full_in_expr(l, s->idx[i]);
  for (int i = 0; r < 0 && i < s->nbody; i++)
    r = full_in(l, s->body[i]);
  if (r < 0)
    r = full_in(l, s->then_s);
  if (r < 0)
    r = full_in(l, s->else_s);
  return r;
}

int loop_full_fragment(const Kernel *k, const Stmt *loop)
{
  Inference l = {0};
  l.k = (Kernel *)k;
  l.loop = loop;
  return full_in(&l, loop->then_s);
}

/* The name diagnostics give a tile operation (ir.h's table), or NULL. */
static const char *tile_op_name(StmtKind k)
{
  if (stmt_level(k) != STMT_TILE)
    return NULL;
  return k == ST_REDUCE ? "a reduction" : stmt_spelling(k);
}

/* "WHAT cannot be used inside a parallel loop", once per location: reduce_argmax is a reduction
 * and a frontend-written loop at the same place. */
static void refuse_in_parallel(Inference *l, SrcLoc loc, const char *what)
{
  if (!(loc.line && loc.line == l->inside_err.line && loc.col == l->inside_err.col))
    error_at(l->pc->diags, loc,
             "%s cannot be used inside a parallel loop: it is already spread over the block's threads", what);
  l->inside_err = loc;
  l->ok = false;
}

static void visit_stmt(Inference *l, Stmt *s)
{
  if (!s)
    return;
  const char *op = tile_op_name(s->kind);
  if (op && l->loop) {
    refuse_in_parallel(l, s->loc, op);
    return;
  }
  switch (s->kind) {
  case ST_FOR:
    if (s->for_kind == FOR_PARALLEL) {
      if (l->loop) {
        if (s->spells) { /* a whole-tile atomic or a scan, which the frontend writes as a loop */
          refuse_in_parallel(l, s->loc, arena_printf(l->pc->arena, "'%s' of a whole tile", s->spells));
          return;
        }
        error_at(l->pc->diags, s->loc,
                 "parallel loops cannot be nested; list all dimensions in one: "
                 "for i, j in parallel(M, N)");
        l->ok = false;
        return;
      }
      l->loop = s;
      l->anchor = full_in(l, s->then_s);
      visit_stmt(l, s->then_s);
      l->loop = NULL;
      return;
    }
    if (s->for_kind == FOR_PIPELINED && l->loop) { /* its stages and copies are the whole block's */
      error_at(l->pc->diags, s->loc,
               "a pipelined loop cannot be used inside a parallel loop: its stages belong to the "
               "whole block; put the parallel loop inside it, or iterate with serial(...)");
      l->ok = false;
      return;
    }
    visit_stmt(l, s->then_s);
    return;
  case ST_COPY:
    if (is_frag(l, s->src.buf) && is_frag(l, s->dst.buf))
      unite(l, s->src.buf, s->dst.buf);
    break;
  case ST_REDUCE: /* over another dimension the destination keeps a layout of its own (lower_reduce_dim) */
    if (s->dim == l->k->bufs[s->src_buf].rank - 1)
      add_derived(l, s->buf, s->src_buf, s->loc);
    break;
  case ST_GEMM:
    if (l->ngemms == l->cap_gemms) {
      int cap = l->cap_gemms ? l->cap_gemms * 2 : 4;
      const Stmt **g = ARENA_ARRAY(l->pc->arena, const Stmt *, cap);
      for (int i = 0; i < l->ngemms; i++)
        g[i] = l->gemms[i];
      l->gemms = g;
      l->cap_gemms = cap;
    }
    l->gemms[l->ngemms++] = s;
    break;
  case ST_STORE: check_access(l, s->buf, s->idx, s->nidx, s->loc); break;
  default: break;
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

/* The row group of a class (rg: union-find over classes, roots point at themselves). */
static int row_group(const Inference *l, int cls)
{
  while (l->rg[cls] != cls)
    cls = l->rg[cls];
  return cls;
}

/* Puts the row groups of classes a and b together. */
static void join_row_groups(Inference *l, int a, int b)
{
  a = row_group(l, a);
  b = row_group(l, b);
  if (a != b)
    l->rg[a] = b;
}

/* Each class's parent class (from broadcasts and reductions), or -1.  A
 * class may hold the rows of two parents of different shapes (the rows of
 * S [BM, BN] rescaling O [BM, D] in attention) when both lay out their rows
 * alike: gemm accumulators of one warp grid.  Such pairs (`alt`) join the
 * parents' row groups, which choose their warp grid together, and are
 * checked once the layouts are known. */
static bool find_row_parents(Inference *l)
{
  PassContext *pc = l->pc;
  Kernel *k = l->k;
  int *up = l->up = ARENA_ARRAY(pc->arena, int, k->nbufs + 1);
  Derived *up_use = ARENA_ARRAY(pc->arena, Derived, k->nbufs + 1);
  Derived *alt = l->alt = ARENA_ARRAY(pc->arena, Derived, l->nderived + 1);
  Derived *alt_first = l->alt_first = ARENA_ARRAY(pc->arena, Derived, l->nderived + 1);
  int nalt = 0;
  int *rg = l->rg = ARENA_ARRAY(pc->arena, int, k->nbufs + 1);
  for (int i = 0; i < k->nbufs; i++) {
    up[i] = -1;
    rg[i] = i;
  }
  for (int i = 0; i < l->nderived; i++) {
    Derived d = l->derived[i];
    int c = find(l, d.child), p = find(l, d.parent);
    if (c == p) {
      error_at(pc->diags, d.loc,
               "layout conflict: fragment '%s' would be both the rows of '%s' and share "
               "its layout",
               k->bufs[d.child].name, k->bufs[d.parent].name);
      return false;
    }
    if (up[c] < 0) {
      up[c] = p;
      up_use[c] = d;
      continue;
    }
    if (find(l, up[c]) == p)
      continue;
    if (buffer_same_shape(&k->bufs[up[c]], &k->bufs[d.parent])) {
      /* Rows of two fragments of one shape: they simply share a layout. */
      unite(l, up[c], p);
      continue;
    }
    alt_first[nalt] = up_use[c];
    alt[nalt++] = d;
  }
  for (int i = 0; i < k->nbufs; i++)
    if (up[i] >= 0)
      up[i] = find(l, up[i]);
  for (int i = 0; i < nalt; i++)
    join_row_groups(l, find(l, alt_first[i].parent), find(l, alt[i].parent));
  l->nalt = nalt;
  return true;
}

/* gemm(A, B, C) with A in a fragment (registers): mma.sync's and wgmma's A
 * operand for 16 of K is, register for register, what the accumulator layout
 * holds for 16 columns (gemm.c), so A must have the accumulator layout with
 * C's warp grid: A's class joins C's row group, whose grid choose_mma_layouts
 * makes one column of warps (each warp holds whole rows of A). */
static bool is_register_a(const Inference *l, const Stmt *g) { return is_frag(l, g->a); }

/* ---- k in quads (ir.h, FragLayout.k_quads)
 *
 * A register A operand of its own class (filled in parallel loops, as a dequantized weight tile is)
 * whose gemm runs on mma.sync with B^T [N, K] in shared memory can take its columns in quads: the
 * fill then reads 4 neighbouring elements per lane (one 32-bit load of 8-bit weights where pairs
 * took two 16-bit ones) and gemm.c reads B^T's in the same order, 8 bytes per lane, in place of
 * ldmatrix.  Only when nothing else sees the order: the class is touched by parallel loops, fills
 * and the A of such gemms alone (a copy or a reduction lowers with the plain pairs). */
typedef struct {
  const Inference *l;
  int cls;
  bool ok;
} QuadScan;

static bool in_class(const Inference *l, int buf, int cls)
{
  return buf >= 0 && buf < l->k->nbufs && is_frag(l, buf) && find((Inference *)l, buf) == cls;
}

static bool quad_gemm(const Inference *l, const Stmt *g)
{
  const Kernel *k = l->k;
  const Buffer *A = &k->bufs[g->a], *B = &k->bufs[g->b];
  return !gemm_wgmma_eligible(l->pc, k, g) && g->trans_b && B->scope == SCOPE_SHARED &&
         type_bytes(A->elem) == 2 && type_bytes(B->elem) == 2 && A->rank == 2 && A->tile_shape[1] % 16 == 0;
}

/* In a loop that fills the class: every read of a tile (not a fragment) at the loop's column, the
 * last index its column variable, which the lowering reads in quads (lower_parallel.c); a fill that
 * reads otherwise (4-bit weights, two to a byte: `W4[i, j / 2]`) reads element by element either
 * way, and quads only spread its bytes (gemm_w4a16 at 16 rows measured 5-13 % slower, H100). */
typedef struct {
  const Inference *l;
  int col; /* the loop's column variable */
  bool ok;
} QuadReads;

static Expr *quad_read(void *ctx, Expr *e)
{
  QuadReads *q = ctx;
  if (e->kind == EX_LOAD && !is_frag(q->l, e->buf)) {
    const Expr *last = e->nargs ? e->args[e->nargs - 1] : NULL;
    q->ok &= last && last->kind == EX_VAR && last->var == q->col;
  }
  return e;
}

static bool stores_in_class(const Stmt *s, const void *ctx)
{
  const QuadScan *q = ctx;
  return (s->kind == ST_STORE || s->kind == ST_ATOMIC) && in_class(q->l, s->buf, q->cls);
}

static void quad_scan(QuadScan *q, Stmt *s)
{
  if (!s || !q->ok)
    return;
  const Inference *l = q->l;
  if (s->kind == ST_FOR && s->for_kind == FOR_PARALLEL && stmt_any(s->then_s, stores_in_class, q)) {
    QuadReads r = {l, s->vars[s->nvars - 1], true};
    stmt_rewrite_exprs(s->then_s, quad_read, &r);
    q->ok = r.ok;
    return;
  }
  switch (s->kind) {
  case ST_COPY:
    if (in_class(l, s->src.buf, q->cls) || in_class(l, s->dst.buf, q->cls))
      q->ok = false;
    break;
  case ST_REDUCE:
    if (in_class(l, s->src_buf, q->cls) || in_class(l, s->buf, q->cls))
      q->ok = false;
    break;
  case ST_GEMM:
    if (in_class(l, s->b, q->cls) || in_class(l, s->c, q->cls) ||
        (in_class(l, s->a, q->cls) && !quad_gemm(l, s)))
      q->ok = false;
    break;
  default: break;
  }
  for (int i = 0; i < s->nbody; i++)
    quad_scan(q, s->body[i]);
  quad_scan(q, s->then_s);
  quad_scan(q, s->else_s);
}

static bool quads_fit(const Inference *l, int cls)
{
  QuadScan q = {l, cls, true};
  quad_scan(&q, l->k->body);
  return q.ok;
}

static void join_register_operands(Inference *l)
{
  for (int i = 0; i < l->ngemms; i++) {
    const Stmt *g = l->gemms[i];
    if (!is_register_a(l, g))
      continue;
    join_row_groups(l, find(l, g->a), find(l, g->c));
  }
}

/* gemm fixes its accumulator's class to the MMA layout, one warp grid per
 * row group: one column of warps (the wgmma accumulator, gemm.c) when any
 * gemm of the group can use wgmma and none asks for a grid, so that the
 * others (mma.sync, any grid) share it; else the grid that fits them all
 * (gemm_warp_policy). */
static bool choose_mma_layouts(Inference *l)
{
  PassContext *pc = l->pc;
  Kernel *k = l->k;
  int *up = l->up;
  FragLayout *mma = l->mma = ARENA_ARRAY(pc->arena, FragLayout, k->nbufs + 1);
  bool *group_done = ARENA_ARRAY(pc->arena, bool, k->nbufs + 1);
  for (int i = 0; i < l->ngemms; i++) {
    const Stmt *g = l->gemms[i];
    const Buffer *C = &k->bufs[g->c];
    if (up[find(l, g->c)] >= 0) {
      error_at(pc->diags, g->loc,
               "the accumulator '%s' of gemm cannot also hold the rows of another fragment", C->name);
      return false;
    }
    if (k->nthreads % 32) {
      error_at(pc->diags, g->loc, "gemm needs whole warps: the thread count %d is not a multiple of 32",
               k->nthreads);
      return false;
    }
  }
  for (int i = 0; i < l->ngemms; i++) {
    const Stmt *g = l->gemms[i];
    int group = row_group(l, find(l, g->c));
    if (group_done[group])
      continue; /* chosen with an earlier gemm of the group */
    /* The group's accumulator classes (one shape each), requests and wgmma. */
    int64_t *Ms = ARENA_ARRAY(pc->arena, int64_t, 2 * l->ngemms),
            *Ns = ARENA_ARRAY(pc->arena, int64_t, 2 * l->ngemms);
    int *cls = ARENA_ARRAY(pc->arena, int, 2 * l->ngemms);
    const Stmt **own_a = ARENA_ARRAY(pc->arena, const Stmt *, 2 * l->ngemms); /* a register A class of
                                                                                    its own: its gemm */
    int n = 0, req_m = 0, req_n = 0;
    bool wgmma = false;
    const Stmt *reg_a = NULL; /* a gemm of the group with A in registers */
    for (int j = 0; j < l->ngemms; j++) {
      const Stmt *h = l->gemms[j];
      int r = find(l, h->c);
      if (row_group(l, r) != group)
        continue;
      if ((h->warps_m && req_m && h->warps_m != req_m) || (h->warps_n && req_n && h->warps_n != req_n)) {
        if (find(l, g->c) == r)
          error_at(pc->diags, h->loc,
                   "layout conflict: '%s' is the accumulator of gemms with different "
                   "warp grids",
                   k->bufs[h->c].name);
        else
          error_at(pc->diags, h->loc,
                   "layout conflict: '%s' and '%s' lay out their rows alike (a fragment "
                   "holds rows of both), so their gemms need one warp grid, but ask "
                   "for different ones",
                   k->bufs[g->c].name, k->bufs[h->c].name);
        return false;
      }
      req_m = h->warps_m ? h->warps_m : req_m;
      req_n = h->warps_n ? h->warps_n : req_n;
      bool h_wgmma = gemm_wgmma_eligible(pc, k, h);
      if (!h_wgmma && type_is_fp8(k->bufs[h->a].elem)) {
        error_at(pc->diags, h->loc,
                 "gemm on 8-bit floats runs only on wgmma, and this one cannot take it: it needs a block "
                 "of whole warpgroups (threads a multiple of 128), an accumulator of 16 x (threads / 32) "
                 "rows or a multiple of them and at most 256 columns (a multiple of 8), no other warp grid, "
                 "and operand rows of whole 32-byte units");
        return false;
      }
      wgmma |= h_wgmma;
      if (is_register_a(l, h))
        reg_a = h;
      bool seen = false;
      for (int q = 0; q < n; q++)
        seen |= cls[q] == r;
      if (!seen) {
        cls[n] = r;
        Ms[n] = k->bufs[h->c].tile_shape[0];
        Ns[n] = k->bufs[h->c].tile_shape[1];
        n++;
      }
      /* A register A operand that no accumulator's layout reaches (filled in a parallel loop, as a
       * dequantized weight tile is) gets the layout of an accumulator of its own shape [M, K] in
       * the same warp grid: the MMA layout whose registers are the instruction's A operand. */
      int ra = is_register_a(l, h) ? find(l, h->a) : -1;
      for (int q = 0; ra >= 0 && q < l->ngemms; q++)
        if (find(l, l->gemms[q]->c) == ra)
          ra = -1;
      for (int q = 0; ra >= 0 && q < n; q++)
        if (cls[q] == ra)
          ra = -1;
      if (ra >= 0) {
        own_a[n] = quad_gemm(l, h) ? h : NULL;
        cls[n] = ra;
        Ms[n] = k->bufs[h->a].tile_shape[0];
        Ns[n] = k->bufs[h->a].tile_shape[1];
        n++;
      }
    }
    if (wgmma && !req_m && !req_n) {
      req_m = k->nthreads / 32;
      req_n = 1;
    }
    if (reg_a && req_n > 1) {
      error_at(pc->diags, reg_a->loc,
               "layout conflict: gemm reads A '%s' from registers, so each warp must hold whole rows "
               "of it (warps_n = 1), but warps_n = %d is asked for in its group",
               k->bufs[reg_a->a].name, req_n);
      return false;
    }
    if (reg_a)
      req_n = 1;
    int wm, wn;
    const char *why = NULL;
    if (!gemm_warp_policy(k->nthreads / 32, Ms, Ns, n, req_m, req_n, &wm, &wn, &why)) {
      error_at(pc->diags, g->loc, "gemm: %s", why);
      return false;
    }
    group_done[group] = true;
    for (int q = 0; q < n; q++) {
      FragLayout L = {0};
      L.kind = LAYOUT_MMA;
      L.threads = k->nthreads;
      L.vec = 2;
      L.warps_m = wm;
      L.warps_n = wn;
      L.frag_m = (int)(Ms[q] / (wm * 16));
      L.frag_n = (int)(Ns[q] / (wn * 8));
      L.m_interleaved = wgmma && wn == 1 && wm == k->nthreads / 32; /* one m64 block per fm */
      L.regs = L.frag_m * L.frag_n * 4;
      /* Quads trade the fill's loads (half as many) for B's (one per n8 piece where ldmatrix.x4
       * reads two): worth it while the accumulator has at most 4 n8 pieces per 16 rows of A, as at
       * decoding's few rows (16: 2 pieces). */
      L.k_quads = own_a[q] && k->bufs[own_a[q]->c].tile_shape[1] / (wn * 8) <= 4 * L.frag_m &&
                  quads_fit(l, cls[q]);
      mma[cls[q]] = L;
    }
  }
  return true;
}

/* A fragment holding rows of two parents of different shapes: fine when
 * both are accumulators whose rows sit in the same threads and registers
 * (one warp grid, frag_m pieces per warp); anything else is a conflict,
 * reported at both uses. */
static bool check_row_sharing(Inference *l)
{
  PassContext *pc = l->pc;
  Kernel *k = l->k;
  const Derived *alt = l->alt, *alt_first = l->alt_first;
  const FragLayout *mma = l->mma;
  int nalt = l->nalt;
  for (int i = 0; i < nalt; i++) {
    const FragLayout *a = &mma[find(l, alt_first[i].parent)], *b = &mma[find(l, alt[i].parent)];
    if (a->kind == LAYOUT_MMA && b->kind == LAYOUT_MMA && a->warps_m == b->warps_m &&
        a->warps_n == b->warps_n && a->frag_m == b->frag_m && a->m_interleaved == b->m_interleaved)
      continue;
    const Derived *d = &alt[i], *f = &alt_first[i];
    if (d->child == f->child)
      error_at(pc->diags, d->loc,
               "layout conflict: fragment '%s' holds rows of '%s' here but rows of '%s' "
               "(another layout) elsewhere",
               k->bufs[d->child].name, k->bufs[d->parent].name, k->bufs[f->parent].name);
    else
      error_at(pc->diags, d->loc,
               "layout conflict: fragment '%s' holds rows of '%s' here, but '%s', which "
               "shares its layout, holds rows of '%s' (another layout)",
               k->bufs[d->child].name, k->bufs[d->parent].name, k->bufs[f->child].name,
               k->bufs[f->parent].name);
    note_at(pc->diags, f->loc,
            "'%s' holds rows of '%s' here; rows of two fragments of different shapes "
            "can share a fragment only when both are gemm accumulators of one warp grid; %s",
            k->bufs[f->child].name, k->bufs[f->parent].name, HINT);
    return false;
  }
  return true;
}

/* A gemm's register A operand shares an accumulator's layout (joined to it by a parallel loop or a
 * copy), or has one of its own shape in C's warp grid (choose_mma_layouts): either way C's rows, warp
 * for warp. */
static bool check_register_operands(Inference *l)
{
  for (int i = 0; i < l->ngemms; i++) {
    const Stmt *g = l->gemms[i];
    if (!is_register_a(l, g))
      continue;
    const FragLayout *La = &l->mma[find(l, g->a)], *Lc = &l->mma[find(l, g->c)];
    if (La->kind != LAYOUT_MMA || La->warps_m != Lc->warps_m || La->warps_n != 1 || Lc->warps_n != 1 ||
        La->frag_m != Lc->frag_m || La->m_interleaved != Lc->m_interleaved)
      DIE("register A operand '%s': layouts %dx%d/%d and %dx%d/%d", l->k->bufs[g->a].name, La->warps_m,
          La->warps_n, La->frag_m, Lc->warps_m, Lc->warps_n, Lc->frag_m);
  }
  return true;
}

static bool give_mma_layouts(Inference *l)
{
  PassContext *pc = l->pc;
  Kernel *k = l->k;
  const FragLayout *mma = l->mma;
  for (int i = 0; i < k->nbufs; i++) {
    Buffer *b = &k->bufs[i];
    if (!is_frag(l, i) || mma[find(l, i)].kind != LAYOUT_MMA)
      continue;
    if (b->elem != TY_F32 && b->elem != TY_F16 && b->elem != TY_BF16 && b->elem != TY_I32) {
      error_at(pc->diags, b->loc,
               "fragment '%s' shares the layout of a gemm accumulator, which holds 32- "
               "or 16-bit floats or i32, not %s",
               b->name, type_name(b->elem));
      return false;
    }
    b->has_layout = true;
    b->layout = mma[find(l, i)];
  }
  return true;
}

/* ELEMWISE classes: 16 bytes of the narrowest member per vector (a wider
 * member moves its vector in several 16-byte pieces, still contiguous per
 * thread), then halved until it divides every member's last dimension. */
static bool give_elemwise_layouts(Inference *l)
{
  PassContext *pc = l->pc;
  Kernel *k = l->k;
  const int *up = l->up;
  int *vec = ARENA_ARRAY(pc->arena, int, k->nbufs + 1);
  for (int i = 0; i < k->nbufs; i++)
    vec[i] = 1;
  for (int i = 0; i < k->nbufs; i++)
    if (is_frag(l, i)) {
      int r = find(l, i), v = 16 / type_bytes(k->bufs[i].elem);
      if (v > vec[r])
        vec[r] = v;
    }
  for (int i = 0; i < k->nbufs; i++)
    if (is_frag(l, i)) {
      int r = find(l, i);
      const Buffer *b = &k->bufs[i];
      while (vec[r] > 1 && b->tile_shape[b->rank - 1] % vec[r])
        vec[r] /= 2;
    }
  for (int i = 0; i < k->nbufs; i++) {
    Buffer *b = &k->bufs[i];
    if (!is_frag(l, i) || up[find(l, i)] >= 0 || b->has_layout)
      continue;
    int v = vec[find(l, i)];
    int64_t vectors = (buffer_elems(b) + v - 1) / v;
    b->has_layout = true;
    b->layout.kind = LAYOUT_ELEMWISE;
    b->layout.vec = v;
    b->layout.threads = k->nthreads;
    b->layout.chunks = (int)((vectors + k->nthreads - 1) / k->nthreads);
    b->layout.regs = b->layout.chunks * v;
  }
  return true;
}

/* ROWS classes take their parent's layout, one register per parent chunk;
 * rows of an MMA class, one register per row a thread's pieces cover. */
static bool give_rows_layouts(Inference *l)
{
  PassContext *pc = l->pc;
  Kernel *k = l->k;
  const int *up = l->up;
  for (int i = 0; i < k->nbufs; i++) {
    Buffer *b = &k->bufs[i];
    int p = is_frag(l, i) ? up[find(l, i)] : -1;
    if (p < 0)
      continue;
    const Buffer *pb = &k->bufs[p];
    if (pb->layout.kind != LAYOUT_ELEMWISE && pb->layout.kind != LAYOUT_MMA) {
      error_at(pc->diags, b->loc,
               "fragment '%s' would hold rows of '%s', which is itself reduced; that is "
               "not supported yet",
               b->name, pb->name);
      return false;
    }
    b->has_layout = true;
    b->layout = pb->layout;
    if (pb->layout.kind == LAYOUT_MMA) {
      b->layout.kind = LAYOUT_MMA_ROWS;
      b->layout.vec = 1;
      b->layout.regs = b->layout.chunks = pb->layout.frag_m * 2;
    } else {
      b->layout.kind = LAYOUT_ROWS;
      b->layout.regs = pb->layout.chunks;
    }
    b->layout.parent_rank = pb->rank;
    for (int d = 0; d < pb->rank; d++)
      b->layout.parent_shape[d] = pb->tile_shape[d];
  }
  return true;
}

/* Registers are finite: a thread holding more than 256 elements of one
 * fragment would spill; say so rather than emit slow code silently. */
static bool check_register_limit(Inference *l)
{
  PassContext *pc = l->pc;
  Kernel *k = l->k;
  for (int i = 0; i < k->nbufs; i++) {
    Buffer *b = &k->bufs[i];
    if (b->has_layout && b->layout.regs > 256) {
      error_at(pc->diags, b->loc,
               "fragment '%s' needs %d registers per thread with %d threads; "
               "use more threads or a smaller tile (at most 256 elements per thread)",
               b->name, b->layout.regs, k->nthreads);
      return false;
    }
  }
  return true;
}

/* ---- column broadcasts: x[i, j] + b[j]
 *
 * A fragment of the loop's trailing shape, indexed by its trailing variables, is read by the threads
 * of every row: no register layout gives each thread the columns of its elements for every anchor,
 * so such a fragment becomes a shared tile (each use one shared load; the threads of a warp read
 * few distinct words, which the banks broadcast).  Only fragments that nothing else needs in
 * registers: not a gemm operand, not a reduction's source, not the destination of one over the
 * last dimension (the rows of its source). */

typedef struct {
  const Kernel *k;
  const Stmt *loop;
  bool *cols;  /* by buffer: read as a column broadcast */
  bool *fixed; /* by buffer: must stay in registers */
} ColScan;

static bool is_column_read(const Kernel *k, const Stmt *p, const Expr *e)
{
  const Buffer *b = &k->bufs[e->buf];
  int off = p->nvars - b->rank;
  if (b->scope != SCOPE_FRAGMENT || off < 1 || e->nargs != b->rank)
    return false;
  for (int d = 0; d < b->rank; d++)
    if (b->tile_shape[d] != p->extents[off + d]->i || e->args[d]->kind != EX_VAR ||
        e->args[d]->var != p->vars[off + d])
      return false;
  return true;
}

static Expr *scan_col_expr(void *ctx, Expr *e)
{
  ColScan *c = ctx;
  if (e->kind == EX_LOAD && is_column_read(c->k, c->loop, e))
    c->cols[e->buf] = true;
  return e;
}

static void scan_cols(ColScan *c, Stmt *s)
{
  if (!s)
    return;
  if (s->kind == ST_GEMM)
    c->fixed[s->a] = c->fixed[s->b] = c->fixed[s->c] = true;
  if (s->kind == ST_REDUCE) { /* over another dimension than the last, the destination is written
                                 in a parallel loop of its own (lower_reduce_dim): it may move */
    c->fixed[s->src_buf] = true;
    c->fixed[s->buf] |= s->dim == c->k->bufs[s->src_buf].rank - 1;
  }
  if (s->kind == ST_FOR && s->for_kind == FOR_PARALLEL) { /* no tile op or loop of its kind inside */
    c->loop = s;
    stmt_rewrite_exprs(s->then_s, scan_col_expr, c);
    c->loop = NULL;
    return;
  }
  for (int i = 0; i < s->nbody; i++)
    scan_cols(c, s->body[i]);
  scan_cols(c, s->then_s);
  scan_cols(c, s->else_s);
}

static void columns_to_shared(Inference *l)
{
  ColScan c = {l->k, NULL, ARENA_ARRAY(l->pc->arena, bool, l->k->nbufs + 1),
               ARENA_ARRAY(l->pc->arena, bool, l->k->nbufs + 1)};
  scan_cols(&c, l->k->body);
  for (int b = 0; b < l->k->nbufs; b++)
    if (c.cols[b] && !c.fixed[b])
      l->k->bufs[b].scope = SCOPE_SHARED;
}

bool pass_infer_layouts(PassContext *pc, Kernel *k)
{
  Inference l = {0};
  l.pc = pc;
  l.k = k;
  l.parent = ARENA_ARRAY(pc->arena, int, k->nbufs + 1);
  l.anchor = -1;
  l.ok = true;
  for (int i = 0; i < k->nbufs; i++)
    l.parent[i] = i;
  columns_to_shared(&l);
  visit_stmt(&l, k->body); /* classes of fragments that share a layout, rows, gemms */
  if (!l.ok || !find_row_parents(&l))
    return false;
  join_register_operands(&l);
  return choose_mma_layouts(&l) && check_row_sharing(&l) && check_register_operands(&l) &&
         give_mma_layouts(&l) && give_elemwise_layouts(&l) && give_rows_layouts(&l) &&
         check_register_limit(&l);
}
