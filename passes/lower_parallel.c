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

static void mark_inner_vars(const Stmt *s, bool *inner);

/* ---- pairs of shared reads on an MMA anchor
 *
 * Registers r and r + 1 of a 16x8 piece (r even) are columns j and j + 1 of one row.  A read of a
 * shared tile S[..., j] in the loop's body (S[..., i, j], or a row S[j] broadcast down the
 * columns), j the loop's column variable and last, the other indices free of j and of what the
 * body defines, therefore reads two neighbouring elements for the two registers, and one 2-lane
 * vcopy into a local pair fetches both (a dequantizing GEMM's weight bytes: one 16-bit load for
 * two elements instead of two 8-bit loads, each with its own address).  The pair is read before
 * both iterations, so the read must be one the body makes whatever its data: not under an if or a
 * loop of the body, unless its indices are exactly [i, j] or [j], after the stage of a staged tile
 * (always inside the tile); and nothing in the body writes S.  Pairs stay contiguous and aligned in every
 * shared layout (ir.h: swizzles move whole 16-byte chunks) when S's rows have an even number of elements of
 * at most 8 bytes. */
enum { MAX_PAIR_READS = 8 };

typedef struct {
  const Lw *w;
  const Stmt *loop;
  int group;     /* elements per read: 2, or 4 (k in quads) */
  bool *inner;   /* variables the body defines */
  bool *written; /* per buffer: the body stores into it */
  const Expr *read[MAX_PAIR_READS];
  int nread;
  bool cond; /* walking a branch of an if or the body of a loop */
  bool give_up;
} PairScan;

static bool ex_same(const Expr *x, const Expr *y)
{
  if (!x || !y)
    return x == y;
  if (x->kind != y->kind || x->type != y->type || x->i != y->i || x->f != y->f || x->var != y->var ||
      x->buf != y->buf || x->op != y->op || x->nargs != y->nargs)
    return false;
  for (int i = 0; i < x->nargs; i++)
    if (!ex_same(x->args[i], y->args[i]))
      return false;
  return ex_same(x->a, y->a) && ex_same(x->b, y->b) && ex_same(x->c, y->c);
}

/* An index the pair's read may compute ahead of the iterations: integer arithmetic on variables
 * defined outside the body (the row variable included, the column variable not). */
static bool pair_index_ok(const PairScan *ps, const Expr *e)
{
  if (!e)
    return true;
  switch (e->kind) {
  case EX_INT: return true;
  case EX_VAR: return e->var != ps->loop->vars[1] && !ps->inner[e->var];
  case EX_UNARY:
  case EX_BINARY:
  case EX_CAST: return type_is_int(e->type) && pair_index_ok(ps, e->a) && pair_index_ok(ps, e->b);
  default: return false;
  }
}

static bool is_var(const Expr *e, int var) { return e->kind == EX_VAR && e->var == var; }

static bool pair_read_ok(const PairScan *ps, const Expr *e)
{
  const Buffer *S = &ps->w->k->bufs[e->buf];
  int n = e->nargs;
  if (S->scope != SCOPE_SHARED || n < 1 || !is_var(e->args[n - 1], ps->loop->vars[1]) ||
      S->tile_shape[S->rank - 1] % ps->group || type_bytes(S->elem) * ps->group > 16)
    return false;
  for (int d = 0; d < n - 1; d++)
    if (!pair_index_ok(ps, e->args[d]))
      return false;
  if (!ps->cond)
    return true;
  /* Under a condition: [i, j] or [j] (a row broadcast down the columns), after the stage of a
   * staged tile, with the loop inside the tile. */
  int lead = S->stages ? 1 : 0;
  if (ps->loop->extents[1]->i > S->tile_shape[S->rank - 1])
    return false;
  return n == 1 + lead || (n == 2 + lead && is_var(e->args[lead], ps->loop->vars[0]) &&
                           ps->loop->extents[0]->i <= S->tile_shape[S->rank - 2]);
}

static void pair_scan_expr(PairScan *ps, const Expr *e)
{
  if (!e)
    return;
  if (e->kind == EX_LOAD && pair_read_ok(ps, e)) {
    for (int i = 0; i < ps->nread; i++)
      if (ex_same(ps->read[i], e))
        return;
    if (ps->nread < MAX_PAIR_READS)
      ps->read[ps->nread++] = e;
    return;
  }
  pair_scan_expr(ps, e->a);
  pair_scan_expr(ps, e->b);
  pair_scan_expr(ps, e->c);
  for (int i = 0; i < e->nargs; i++)
    pair_scan_expr(ps, e->args[i]);
}

static void pair_scan_stmt(PairScan *ps, const Stmt *s)
{
  if (!s)
    return;
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++)
      pair_scan_stmt(ps, s->body[i]);
    return;
  case ST_STORE:
  case ST_ATOMIC: ps->written[s->buf] = true; /* fall through */
  case ST_LET:
  case ST_ASSIGN:
  case ST_EVAL:
    pair_scan_expr(ps, s->value);
    for (int i = 0; i < s->nidx; i++)
      pair_scan_expr(ps, s->idx[i]);
    return;
  case ST_IF:
  case ST_FOR: {
    pair_scan_expr(ps, s->cond);
    for (int i = 0; i < s->nvars; i++)
      pair_scan_expr(ps, s->extents[i]);
    bool cond = ps->cond;
    ps->cond = true;
    pair_scan_stmt(ps, s->then_s);
    pair_scan_stmt(ps, s->else_s);
    ps->cond = cond;
    return;
  }
  default: ps->give_up = true; return;
  }
}

/* Converted quads: a read of 8-bit integers that the body only ever widens to f16 or bf16
 * (`f16(W8[i, j])`, exact) is read converted, the vcopy widening the whole quad at once (codegen's
 * convert_byte_to_float: f16, one prmt and one f16x2 subtraction per two values; bf16, a prmt and
 * an f32 subtraction per value and a prmt per two); the casts then read the pair as it is.
 * CastScan counts the read's uses and those that are the operand of such a cast (all of one type). */
typedef struct {
  const Expr *read;
  int uses, casts;
  TypeKind cast; /* TY_COUNT before the first cast, TY_VOID once two types were seen */
} CastScan;

static Expr *cast_scan(void *ctx, Expr *e)
{
  CastScan *c = ctx;
  if (ex_same(e, c->read))
    c->uses++;
  else if (e->kind == EX_CAST && ex_same(e->a, c->read) && (e->type == TY_F16 || e->type == TY_BF16)) {
    c->casts++;
    c->cast = c->cast == TY_COUNT || c->cast == e->type ? e->type : TY_VOID;
  }
  return e;
}

/* The type a group of G reads of `read` holds: with quads (G = 4), f16 or bf16 when every use widens
 * 8-bit integers to it; else its own.  (Pairs stay bytes: converted on the wgmma path, 2-byte loads
 * widened together measured slower, H100: gemm_w8a16 4096^3 326 -> 399 us.) */
static TypeKind pair_type(const Lw *w, Stmt *body, const Expr *read, int G)
{
  TypeKind own = w->k->bufs[read->buf].elem;
  if (G != 4 || (own != TY_I8 && own != TY_U8))
    return own;
  CastScan c = {read, 0, 0, TY_COUNT};
  stmt_rewrite_exprs(body, cast_scan, &c);
  return c.uses && c.casts == c.uses && c.cast != TY_VOID ? c.cast : own;
}

typedef struct {
  Lw *w;
  const PairScan *ps;
  const int *pair; /* the local pair of each read */
  int half;        /* the variable of the register's place in its pair, 0 or 1 */
} PairUse;

static Expr *use_pair(void *ctx, Expr *e)
{
  PairUse *u = ctx;
  /* a cast of a converted pair (its read already replaced, below): the pair holds the cast's value */
  if (e->kind == EX_CAST && e->a->kind == EX_LOAD && e->a->type == e->type)
    for (int i = 0; i < u->ps->nread; i++)
      if (e->a->buf == u->pair[i] && u->w->k->bufs[u->ps->read[i]->buf].elem != e->type)
        return e->a;
  if (e->kind != EX_LOAD)
    return e;
  for (int i = 0; i < u->ps->nread; i++)
    if (ex_same(u->ps->read[i], e)) {
      Expr *x = ex_load(u->w->a, u->w->k, u->pair[i], lw_idx1(u->w, lw_var(u->w, u->half)), 1);
      x->loc = e->loc;
      return x;
    }
  return e;
}

typedef struct {
  Lw *w;
  const Stmt *loop;
  Expr *row, *col;
} PairAt;

/* The read's indices with the loop's row and column variables replaced by the pair's. */
static Expr *pair_at(void *ctx, Expr *e)
{
  PairAt *pa = ctx;
  if (is_var(e, pa->loop->vars[0]))
    return lw_clone(pa->w, pa->row);
  if (is_var(e, pa->loop->vars[1]))
    return lw_clone(pa->w, pa->col);
  return e;
}

/* The parallel loop's iterations on an MMA anchor: every register of the
 * accumulator layout, at its (row, col); shared reads in pairs (above). */
static Stmt *lower_parallel_mma(Lw *w, Stmt *s, const FragLayout *L)
{
  /* G registers per read: a pair, or with k in quads (ir.h) the 4 neighbouring columns of pieces
   * (fm, 2fs) and (fm, 2fs + 1) */
  const int G = L->k_quads ? 4 : 2;
  PairScan ps = {.w = w,
                 .loop = s,
                 .group = G,
                 .inner = ARENA_ARRAY(w->a, bool, w->k->nvars + 1),
                 .written = ARENA_ARRAY(w->a, bool, w->k->nbufs + 1)};
  mark_inner_vars(s->then_s, ps.inner);
  pair_scan_stmt(&ps, s->then_s);
  int pair[MAX_PAIR_READS], npair = 0; /* the reads kept (of tiles the body does not write) */
  for (int i = 0; !ps.give_up && i < ps.nread; i++)
    if (!ps.written[ps.read[i]->buf]) {
      ps.read[npair] = ps.read[i];
      pair[npair++] = lw_new_buffer(w, "pair", SCOPE_LOCAL, pair_type(w, s->then_s, ps.read[i], G), G);
    }
  ps.nread = npair;

  /* Pieces fn = fs * (G / 2) + e / 2 and registers r = 2h + e % 2, e < G the register's place in
   * its group: the groups are read in the loop over h, the body runs in the one over e.  Without
   * reads, plain loops over fn and r. */
  bool grouped = npair > 0;
  int fm = lw_fresh(w, "fm", VAR_LOOP), fs = lw_fresh(w, "fn", VAR_LOOP), e = lw_fresh(w, "r", VAR_LOOP);
  int h = grouped ? lw_fresh(w, "h", VAR_LOOP) : -1;
  int per = grouped ? G / 2 : 1; /* pieces per group */
  Expr *fn_e = per == 1 ? lw_var(w, fs)
                        : lw_add(w, lw_mul_c(w, lw_var(w, fs), per), lw_div_c(w, lw_var(w, e), 2));
  Expr *reg_r = !grouped   ? lw_var(w, e)
                : per == 1 ? lw_add(w, lw_mul_c(w, lw_var(w, h), 2), lw_var(w, e))
                           : lw_add(w, lw_mul_c(w, lw_var(w, h), 2), lw_mod_c(w, lw_var(w, e), 2));
  StmtList body = {0}, reads = {0};
  if (grouped) {
    Expr *row0, *col0;
    lw_mma_coords(w, L, lw_var(w, fm), lw_mul_c(w, lw_var(w, fs), per), lw_mul_c(w, lw_var(w, h), 2), &row0,
                  &col0);
    PairAt pa = {w, s, lw_var(w, lw_let(w, &reads, "pi", row0)), lw_var(w, lw_let(w, &reads, "pj", col0))};
    for (int i = 0; i < ps.nread; i++) {
      const Expr *x = ps.read[i];
      Expr **idx = ARENA_ARRAY(w->a, Expr *, x->nargs);
      for (int d = 0; d < x->nargs; d++)
        idx[d] = expr_rewrite(lw_clone(w, x->args[d]), pair_at, &pa);
      lw_vcopy(w, &reads, pair[i], lw_idx1(w, lw_i32(w, 0)), 1, x->buf, idx, x->nargs, G, 0, x->nargs - 1);
    }
    PairUse u = {w, &ps, pair, e};
    stmt_rewrite_exprs(s->then_s, use_pair, &u);
  }
  Expr *row, *col;
  lw_mma_coords(w, L, lw_var(w, fm), lw_clone(w, fn_e), lw_clone(w, reg_r), &row, &col);
  ParCtx p = {w, s, {0}, NULL, NULL, NULL, false};
  p.lets[0] = lw_let(w, &body, w->k->vars[s->vars[0]].name, row);
  p.lets[1] = lw_let(w, &body, w->k->vars[s->vars[1]].name, col);
  p.reg = ex_add(w->a,
                 ex_mul(w->a,
                        ex_add(w->a, ex_mul(w->a, lw_var(w, fm), lw_i32(w, L->frag_n)), lw_clone(w, fn_e)),
                        lw_i32(w, 4)),
                 lw_clone(w, reg_r));
  p.row_reg = ex_add(w->a, ex_mul(w->a, lw_var(w, fm), lw_i32(w, 2)),
                     lw_bin(w, OP_DIV, lw_clone(w, reg_r), lw_i32(w, 2)));
  par_stmt(&p, s->then_s);
  stlist_push(w->a, &body, s->then_s);
  Stmt *x = lw_unrolled(w, e, grouped ? G : 4, stlist_seq(w->a, &body, s->loc));
  if (grouped) {
    stlist_push(w->a, &reads, x);
    x = lw_unrolled(w, h, 2, stlist_seq(w->a, &reads, s->loc));
  }
  x = lw_unrolled(w, fs, L->frag_n / per, x);
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
