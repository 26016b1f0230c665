/* lower_parallel.c: `for i, j in parallel(...)`: each thread runs the
 * iterations whose elements it owns, as the layout of the loop's full-shape
 * fragment deals them (elementwise, rows, MMA or MMA rows), with the loop
 * variables rebound per element and masks hoisted where they do not vary. */
#include "lower.h"

/* ---------------------------------------------------------------- parallel */

typedef struct {
  Lw *w;
  const Stmt *loop;
  int lets[TL_MAX_RANK]; /* the loop variables, rebound per element */
  Expr *reg;             /* the register of the current element, in ELEMWISE fragments */
  Expr *row_reg;         /* the register of its row, in ROWS fragments */
  Expr *primary;         /* anchors whose rows several threads hold: lw_row_owner, the thread that
                            runs the row's atomics (NULL: every iteration has one thread) */
  bool shared_store;
} ParCtx;

static Expr *reg_of(ParCtx *p, int buf)
{
  return ex_clone(p->w->a, lw_is_rows(&p->w->k->bufs[buf]) ? p->row_reg : p->reg);
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

/* s, an atomic, becomes `if primary { s }` in place: the other threads that hold its row skip it. */
static void guard_atomic(ParCtx *p, Stmt *s)
{
  Stmt *a = st_new(p->w->a, ST_ATOMIC, s->loc);
  *a = *s;
  *s = *st_new(p->w->a, ST_IF, a->loc);
  s->cond = ex_clone(p->w->a, p->primary);
  s->then_s = a;
}

/* Fragment stores anywhere below s take the register index; atomics run once per element. */
static void par_stores(ParCtx *p, Stmt *s)
{
  if (!s)
    return;
  if (s->kind == ST_ATOMIC) {
    p->shared_store |= p->w->k->bufs[s->buf].scope == SCOPE_SHARED;
    if (p->primary)
      guard_atomic(p, s);
    return;
  }
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
  Expr *flat = lw_bin(w, OP_MUL,
                      lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, L->threads)), lw_var(w, w->tid)),
                      lw_i32(w, L->vec));
  int flatv = lw_let(w, &body, "flat", flat);
  Expr *t[TL_MAX_RANK];
  lw_coords(w, L->parent_shape, L->parent_rank, lw_var(w, flatv), t);
  ParCtx p = {w, s, {0}, NULL, NULL, NULL, false};
  for (int d = 0; d < s->nvars; d++)
    p.lets[d] = lw_let(w, &body, w->k->vars[s->vars[d]].name, L->parent_rank == 1 ? lw_i32(w, 0) : t[d]);
  p.primary = lw_row_owner(w, L, ex_clone(w->a, t[L->parent_rank - 1]));
  p.reg = lw_var(w, c);
  p.row_reg = lw_var(w, c);
  par_stmt(&p, s->then_s);
  stlist_push(w->a, &body, s->then_s);
  Stmt *inner = lw_if(w, lw_bin(w, OP_LT, ex_clone(w->a, flat), lw_i32(w, ptotal)),
                      stlist_seq(w->a, &body, s->loc), NULL);
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
  ParCtx p = {w, s, {0}, NULL, NULL, NULL, false};
  p.lets[0] = lw_let(w, &body, w->k->vars[s->vars[0]].name, row);
  p.lets[1] = lw_let(w, &body, w->k->vars[s->vars[1]].name, col);
  p.reg = ex_add(w->a,
                 ex_mul(w->a, ex_add(w->a, ex_mul(w->a, lw_var(w, fm), lw_i32(w, L->frag_n)), lw_var(w, fn)),
                        lw_i32(w, 4)),
                 lw_var(w, r));
  p.row_reg = ex_add(w->a, ex_mul(w->a, lw_var(w, fm), lw_i32(w, 2)),
                     lw_bin(w, OP_DIV, lw_var(w, r), lw_i32(w, 2)));
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
  ParCtx p = {w, s, {0}, NULL, NULL, NULL, false};
  p.lets[0] = lw_let(w, &body, w->k->vars[s->vars[0]].name, lw_mma_row(w, L, lw_var(w, c)));
  p.primary = lw_row_owner(w, L, NULL);
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
  bool *inner;  /* vars bound inside the loop body */
  Expr *base;   /* B */
  Expr *offset; /* O */
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
    return k == VAR_SIZE || k == VAR_CONST || k == VAR_SCALAR || k == VAR_BLOCK_IDX || k == VAR_GRID_DIM ? 2
                                                                                                         : 1;
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
  Expr *clamped = lw_bin(w, OP_MIN, lw_bin(w, OP_MAX, ex_clone(w->a, other), lw_i32(w, 0)),
                         lw_i32(w, m->total));
  Expr *lim = lw_bin(w, OP_SUB, clamped, ex_clone(w->a, m->base));
  Expr *r = lw_bin(w, OP_LT, ex_clone(w->a, m->offset), lim);
  r = ge ? lw_unary_not(w, r) : r;
  r->loc = e->loc;
  return r;
}

Stmt *lower_parallel(Lw *w, Stmt *s)
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
  Deal dl = lw_deal(w, vec, total);

  int c = lw_fresh(w, "c", VAR_LOOP), v = lw_fresh(w, "v", VAR_LOOP);
  StmtList body = {0};
  Expr *flat = lw_bin(
      w, OP_ADD,
      lw_bin(w, OP_MUL,
             lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
             lw_i32(w, vec)),
      lw_var(w, v));
  int flatv = lw_let(w, &body, "flat", flat);
  Expr *t[TL_MAX_RANK];
  lw_coords(w, shape, s->nvars, lw_var(w, flatv), t);
  if (s->nvars == 1) {
    bool *inner = ARENA_ARRAY(w->a, bool, w->k->nvars + 1);
    mark_inner_vars(s->then_s, inner);
    MaskCtx m = {
        w,
        s->vars[0],
        inner,
        lw_bin(w, OP_MUL, lw_var(w, w->tid), lw_i32(w, vec)),
        lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads * (int64_t)vec)), lw_var(w, v)),
        total};
    stmt_rewrite_exprs(s->then_s, mask_expr, &m);
  }
  ParCtx p = {w, s, {0}, NULL, NULL, NULL, false};
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
