/* ir.c: tables of a kernel, expression and statement builders, rewriting. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* Grows an arena array of `elem` bytes from *cap to fit n+1 items. */
static void *grow(Arena *a, void *items, int n, int *cap, size_t elem)
{
  if (n < *cap)
    return items;
  int ncap = *cap ? *cap * 2 : 8;
  void *p = arena_alloc(a, elem * (size_t)ncap);
  if (n)
    memcpy(p, items, elem * (size_t)n);
  *cap = ncap;
  return p;
}

int kernel_add_var(Arena *a, Kernel *k, Var v)
{
  k->vars = grow(a, k->vars, k->nvars, &k->cap_vars, sizeof(Var));
  k->vars[k->nvars] = v;
  return k->nvars++;
}

int kernel_add_buffer(Arena *a, Kernel *k, Buffer b)
{
  k->bufs = grow(a, k->bufs, k->nbufs, &k->cap_bufs, sizeof(Buffer));
  k->bufs[k->nbufs] = b;
  return k->nbufs++;
}

int64_t buffer_elems(const Buffer *b)
{
  int64_t n = 1;
  for (int d = 0; d < b->rank; d++)
    n *= b->tile_shape[d];
  return n;
}

bool buffer_same_shape(const Buffer *a, const Buffer *b)
{
  if (a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->tile_shape[d] != b->tile_shape[d])
      return false;
  return true;
}

void kernel_add_param(Arena *a, Kernel *k, bool is_buffer, int index)
{
  k->params = grow(a, k->params, k->nparams, &k->cap_params, sizeof(struct KParam));
  k->params[k->nparams].is_buffer = is_buffer;
  k->params[k->nparams].is_tmap = false;
  k->params[k->nparams].index = index;
  k->nparams++;
}

int kernel_add_tmap(Arena *a, Kernel *k, int buf, const int64_t *box)
{
  int rank = k->bufs[buf].rank;
  for (int i = 0; i < k->ntmaps; i++)
    if (k->tmaps[i].buf == buf && !memcmp(k->tmaps[i].box, box, sizeof *box * (size_t)rank))
      return i;
  if (!k->ntmaps) {
    Var v = {.name = "tma.ok", .kind = VAR_TMA_OK, .type = TY_I32, .param_index = -1};
    k->tma_ok = kernel_add_var(a, k, v);
  }
  int cap = k->ntmaps;
  k->tmaps = grow(a, k->tmaps, k->ntmaps, &cap, sizeof *k->tmaps);
  struct TensorMap *m = &k->tmaps[k->ntmaps];
  *m = (struct TensorMap){.buf = buf, .param = -1};
  memcpy(m->box, box, sizeof *box * (size_t)rank);
  return k->ntmaps++;
}

void kernel_add_tmap_params(Arena *a, Kernel *k)
{
  if (!k->ntmaps || k->tmaps[0].param >= 0)
    return;
  for (int i = 0; i < k->ntmaps; i++) {
    k->tmaps[i].param = k->nparams;
    kernel_add_param(a, k, false, i);
    k->params[k->nparams - 1].is_tmap = true;
  }
  kernel_add_param(a, k, false, k->tma_ok);
  k->vars[k->tma_ok].param_index = k->nparams - 1;
}

static Expr *ex_new(Arena *a, ExprKind kind, TypeKind t)
{
  Expr *e = ARENA_NEW(a, Expr);
  e->kind = kind;
  e->type = t;
  return e;
}

Expr *ex_int(Arena *a, TypeKind t, int64_t v)
{
  Expr *e = ex_new(a, EX_INT, t);
  e->i = v;
  return e;
}

Expr *ex_float(Arena *a, TypeKind t, double v)
{
  Expr *e = ex_new(a, EX_FLOAT, t);
  e->f = v;
  return e;
}

Expr *ex_var(Arena *a, const Kernel *k, int var)
{
  Expr *e = ex_new(a, EX_VAR, k->vars[var].type);
  e->var = var;
  return e;
}

Expr *ex_load(Arena *a, const Kernel *k, int buf, Expr **idx, int n)
{
  Expr *e = ex_new(a, EX_LOAD, k->bufs[buf].elem);
  e->buf = buf;
  e->args = idx;
  e->nargs = n;
  return e;
}

Expr *ex_unary(Arena *a, OpKind op, Expr *x)
{
  Expr *e = ex_new(a, EX_UNARY, x->type);
  e->op = op;
  e->a = x;
  e->loc = x->loc;
  return e;
}

Expr *ex_binary(Arena *a, OpKind op, Expr *x, Expr *y)
{
  Expr *e = ex_new(a, EX_BINARY, op_is_comparison(op) ? TY_BOOL : x->type);
  e->op = op;
  e->a = x;
  e->b = y;
  e->loc = x->loc;
  return e;
}

Expr *ex_cast(Arena *a, TypeKind t, Expr *x)
{
  Expr *e = ex_new(a, EX_CAST, t);
  e->a = x;
  e->loc = x->loc;
  return e;
}

Expr *ex_select(Arena *a, Expr *c, Expr *x, Expr *y)
{
  Expr *e = ex_new(a, EX_SELECT, x->type);
  e->a = c;
  e->b = x;
  e->c = y;
  e->loc = c->loc;
  return e;
}

Expr *ex_call(Arena *a, IntrinsicKind fn, TypeKind t, Expr **args, int n)
{
  Expr *e = ex_new(a, EX_CALL, t);
  e->op = fn;
  e->args = args;
  e->nargs = n;
  if (n)
    e->loc = args[0]->loc;
  return e;
}

Expr *ex_aligned(Arena *a, int buf, Expr **idx, int n, int bytes)
{
  Expr *e = ex_new(a, EX_ALIGNED, TY_BOOL);
  e->buf = buf;
  e->args = idx;
  e->nargs = n;
  e->i = bytes;
  return e;
}

Expr *ex_clone(Arena *a, const Expr *e)
{
  if (!e)
    return NULL;
  Expr *c = ARENA_NEW(a, Expr);
  *c = *e;
  c->a = ex_clone(a, e->a);
  c->b = ex_clone(a, e->b);
  c->c = ex_clone(a, e->c);
  if (e->nargs) {
    c->args = ARENA_ARRAY(a, Expr *, e->nargs);
    for (int i = 0; i < e->nargs; i++)
      c->args[i] = ex_clone(a, e->args[i]);
  }
  return c;
}

static Expr **ex_clone_array(Arena *a, Expr **v, int n)
{
  if (!v || n <= 0)
    return v;
  Expr **c = ARENA_ARRAY(a, Expr *, n);
  for (int i = 0; i < n; i++)
    c[i] = ex_clone(a, v[i]);
  return c;
}

static void region_clone(Arena *a, Region *r)
{
  if (r->origin)
    r->origin = ex_clone_array(a, r->origin, r->rank);
}

Stmt *st_clone(Arena *a, const Stmt *s)
{
  if (!s)
    return NULL;
  Stmt *c = ARENA_NEW(a, Stmt);
  *c = *s;
  if (s->nbody) {
    c->body = ARENA_ARRAY(a, Stmt *, s->nbody);
    for (int i = 0; i < s->nbody; i++)
      c->body[i] = st_clone(a, s->body[i]);
  }
  for (int i = 0; i < s->nvars && i < TL_MAX_RANK; i++)
    c->extents[i] = ex_clone(a, s->extents[i]);
  c->cond = ex_clone(a, s->cond);
  c->then_s = st_clone(a, s->then_s);
  c->else_s = st_clone(a, s->else_s);
  c->idx = ex_clone_array(a, s->idx, s->nidx);
  c->value = ex_clone(a, s->value);
  c->src_idx = ex_clone_array(a, s->src_idx, s->nsrc_idx);
  c->src_bytes = ex_clone(a, s->src_bytes);
  region_clone(a, &c->src);
  region_clone(a, &c->dst);
  c->stage_a = ex_clone(a, s->stage_a);
  c->stage_b = ex_clone(a, s->stage_b);
  c->a_reg = ex_clone(a, s->a_reg);
  c->b_reg = ex_clone(a, s->b_reg);
  c->c_reg = ex_clone(a, s->c_reg);
  c->a_start = ex_clone_array(a, s->a_start, s->na_start);
  c->b_start = ex_clone_array(a, s->b_start, s->nb_start);
  c->bar_idx = ex_clone(a, s->bar_idx);
  return c;
}

bool ex_is_const_int(const Expr *e, int64_t *out)
{
  if (e && e->kind == EX_INT) {
    if (out)
      *out = e->i;
    return true;
  }
  return false;
}

Expr *ex_add(Arena *a, Expr *x, Expr *y)
{
  int64_t cx, cy;
  bool kx = ex_is_const_int(x, &cx), ky = ex_is_const_int(y, &cy);
  if (kx && ky)
    return ex_int(a, x->type, cx + cy);
  if (kx && cx == 0)
    return y;
  if (ky && cy == 0)
    return x;
  return ex_binary(a, OP_ADD, x, y);
}

Expr *ex_mul(Arena *a, Expr *x, Expr *y)
{
  int64_t cx, cy;
  bool kx = ex_is_const_int(x, &cx), ky = ex_is_const_int(y, &cy);
  if (kx && ky)
    return ex_int(a, x->type, cx * cy);
  if ((kx && cx == 0) || (ky && cy == 0))
    return ex_int(a, x->type, 0);
  if (kx && cx == 1)
    return y;
  if (ky && cy == 1)
    return x;
  return ex_binary(a, OP_MUL, x, y);
}

Stmt *st_new(Arena *a, StmtKind kind, SrcLoc loc)
{
  Stmt *s = ARENA_NEW(a, Stmt);
  s->kind = kind;
  s->loc = loc;
  s->var = -1;
  s->buf = -1;
  s->src_buf = -1;
  s->src.buf = s->dst.buf = -1;
  return s;
}

Stmt *st_seq(Arena *a, Stmt **body, int n)
{
  Stmt *s = st_new(a, ST_SEQ, n ? body[0]->loc : NO_LOC);
  s->body = body;
  s->nbody = n;
  return s;
}

void stlist_push(Arena *a, StmtList *l, Stmt *s)
{
  if (!s)
    return;
  l->items = grow(a, l->items, l->n, &l->cap, sizeof(Stmt *));
  l->items[l->n++] = s;
}

Stmt *stlist_seq(Arena *a, StmtList *l, SrcLoc loc)
{
  Stmt *s = st_seq(a, l->items, l->n);
  s->loc = loc;
  return s;
}

Expr *expr_rewrite(Expr *e, ExprRewriter fn, void *ctx)
{
  if (!e)
    return NULL;
  e->a = expr_rewrite(e->a, fn, ctx);
  e->b = expr_rewrite(e->b, fn, ctx);
  e->c = expr_rewrite(e->c, fn, ctx);
  for (int i = 0; i < e->nargs; i++)
    e->args[i] = expr_rewrite(e->args[i], fn, ctx);
  return fn(ctx, e);
}

static void rewrite_list(Expr **v, int n, ExprRewriter fn, void *ctx)
{
  for (int i = 0; v && i < n; i++)
    v[i] = expr_rewrite(v[i], fn, ctx);
}

void stmt_rewrite_exprs(Stmt *s, ExprRewriter fn, void *ctx)
{
  if (!s)
    return;
  for (int i = 0; i < s->nbody; i++)
    stmt_rewrite_exprs(s->body[i], fn, ctx);
  for (int i = 0; i < s->nvars; i++)
    s->extents[i] = expr_rewrite(s->extents[i], fn, ctx);
  s->value = expr_rewrite(s->value, fn, ctx);
  s->cond = expr_rewrite(s->cond, fn, ctx);
  s->src_bytes = expr_rewrite(s->src_bytes, fn, ctx);
  rewrite_list(s->idx, s->nidx, fn, ctx);
  s->a_reg = expr_rewrite(s->a_reg, fn, ctx);
  s->b_reg = expr_rewrite(s->b_reg, fn, ctx);
  s->c_reg = expr_rewrite(s->c_reg, fn, ctx);
  rewrite_list(s->b_start, s->nb_start, fn, ctx);
  rewrite_list(s->src_idx, s->nsrc_idx, fn, ctx);
  rewrite_list(s->a_start, s->na_start, fn, ctx);
  rewrite_list(s->src.origin, s->src.rank, fn, ctx);
  rewrite_list(s->dst.origin, s->dst.rank, fn, ctx);
  s->bar_idx = expr_rewrite(s->bar_idx, fn, ctx);
  stmt_rewrite_exprs(s->then_s, fn, ctx);
  stmt_rewrite_exprs(s->else_s, fn, ctx);
}

bool stmt_any(const Stmt *s, StmtPred pred, const void *ctx)
{
  if (!s)
    return false;
  if (pred(s, ctx))
    return true;
  for (int i = 0; i < s->nbody; i++)
    if (stmt_any(s->body[i], pred, ctx))
      return true;
  return stmt_any(s->then_s, pred, ctx) || stmt_any(s->else_s, pred, ctx);
}

static const struct {
  const char *spelling;
  StmtLevel level;
} stmt_kinds[] = {
#define X(e, sp, l) {sp, l},
    TL_STMT_KINDS(X)
#undef X
};

const char *stmt_spelling(StmtKind kind) { return (int)kind < ST_COUNT ? stmt_kinds[kind].spelling : "?"; }

StmtLevel stmt_level(StmtKind kind) { return (int)kind < ST_COUNT ? stmt_kinds[kind].level : STMT_ANY; }
