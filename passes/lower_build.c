/* lower_build.c: the small IR builders every lowering file uses (lw_*):
 * constants, variables and lets with fresh names, loops over unrolled
 * counters and chunks, guarded statements, stores that convert, barriers and
 * the fences around shared-memory writes, and the vector arithmetic of
 * cooperative copies (how a tile's vectors are dealt to threads). */
#include "lower.h"

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

Expr *lw_in_range(Lw *w, const Expr *x, const Expr *n)
{
  return lw_and(w, lw_bin(w, OP_GE, ex_clone(w->a, x), lw_i32(w, 0)),
                lw_bin(w, OP_LT, ex_clone(w->a, x), ex_clone(w->a, n)));
}

int lw_fresh(Lw *w, const char *base, VarKind kind)
{
  Var v = {0};
  v.name = arena_printf(w->a, "%s.%d", base, w->k->fresh_names++);
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

Stmt *lw_rolled(Lw *w, int var, int64_t n, Stmt *body)
{
  Stmt *s = lw_unrolled(w, var, n, body);
  s->for_kind = FOR_SERIAL;
  s->rolled = true;
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

Stmt *lw_barrier(Lw *w) { return st_new(w->a, ST_BARRIER, NO_LOC); }

Stmt *lw_assign(Lw *w, int var, Expr *value)
{
  Stmt *s = st_new(w->a, ST_ASSIGN, NO_LOC);
  s->var = var;
  s->value = value;
  return s;
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

Expr *lw_zero(Lw *w, TypeKind t) { return type_is_float(t) ? ex_float(w->a, t, 0) : ex_int(w->a, t, 0); }

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

Deal lw_deal(Lw *w, int vec, int64_t total)
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

Stmt *lw_cp_async(Lw *w, int dst, Expr **didx, int dn, int src, Expr **sidx, int bytes, int lanes, SrcLoc loc)
{
  Stmt *cp = st_new(w->a, ST_CP_ASYNC, loc);
  cp->buf = dst;
  cp->idx = didx;
  cp->nidx = dn;
  cp->src_buf = src;
  cp->src_idx = sidx;
  cp->nsrc_idx = w->k->bufs[src].rank;
  cp->src_bytes = lw_i32(w, bytes);
  cp->lanes = lanes;
  return cp;
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
      s->idx[i] = i == last_d ? ex_add(w->a, ex_clone(w->a, didx[i]), lw_i32(w, off))
                              : ex_clone(w->a, didx[i]);
    s->src_buf = src;
    s->nsrc_idx = sn;
    s->src_idx = ARENA_ARRAY(w->a, Expr *, sn);
    for (int i = 0; i < sn; i++)
      s->src_idx[i] = i == last_s ? ex_add(w->a, ex_clone(w->a, sidx[i]), lw_i32(w, off))
                                  : ex_clone(w->a, sidx[i]);
    stlist_push(w->a, out, s);
  }
}

int lw_new_buffer(Lw *w, const char *name, Scope scope, TypeKind t, int64_t n)
{
  Buffer b = {0};
  b.name = arena_printf(w->a, "%s.%d", name, w->k->fresh_names++);
  b.scope = scope;
  b.elem = t;
  b.rank = 1;
  b.tile_shape[0] = n;
  b.shape[0] = lw_i32(w, n);
  b.local_size = n;
  b.param_index = -1;
  return kernel_add_buffer(w->a, w->k, b);
}

bool lw_writes_shared(const Lw *w, int buf) { return w->k->bufs[buf].scope == SCOPE_SHARED; }

bool lw_expr_reads(const Expr *e, int buf)
{
  if (!e)
    return false;
  if ((e->kind == EX_LOAD || e->kind == EX_ALIGNED) && e->buf == buf)
    return true;
  if (lw_expr_reads(e->a, buf) || lw_expr_reads(e->b, buf) || lw_expr_reads(e->c, buf))
    return true;
  for (int i = 0; i < e->nargs; i++)
    if (lw_expr_reads(e->args[i], buf))
      return true;
  return false;
}

/* Does lowered statement s store into a shared tile that wgmma reads (the kernel: ctx)? */
static bool stores_wgmma_operand(const Stmt *s, const void *ctx)
{
  const Kernel *k = ctx;
  return (s->kind == ST_STORE || s->kind == ST_VCOPY || s->kind == ST_CP_ASYNC) &&
         k->bufs[s->buf].scope == SCOPE_SHARED && swizzle_span(k->bufs[s->buf].swizzle);
}

/* Does lowered s, or a statement inside it? */
static bool writes_wgmma_operand(const Kernel *k, const Stmt *s)
{
  return stmt_any(s, stores_wgmma_operand, k);
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

Expr *lw_clone(Lw *w, Expr *e) { return ex_clone(w->a, e); }
Expr *lw_add(Lw *w, Expr *x, Expr *y) { return ex_add(w->a, x, y); }
Expr *lw_mul_c(Lw *w, Expr *x, int64_t c) { return ex_mul(w->a, x, lw_i32(w, c)); }
Expr *lw_div_c(Lw *w, Expr *x, int64_t c) { return lw_bin(w, OP_DIV, x, lw_i32(w, c)); }
Expr *lw_mod_c(Lw *w, Expr *x, int64_t c) { return lw_bin(w, OP_MOD, x, lw_i32(w, c)); }

/* Row and column of register r of piece (fm, fn) of an MMA fragment, for this
 * thread (ir.h draws the layout). */
Expr *lw_mma_row0(Lw *w, const FragLayout *L, Expr *wm, Expr *fm)
{
  if (L->m_interleaved && L->frag_m > 1) /* (one piece: the same row either way) */
    return lw_add(w, lw_mul_c(w, fm, (int64_t)L->warps_m * 16), lw_mul_c(w, wm, 16));
  return lw_add(w, lw_mul_c(w, wm, (int64_t)L->frag_m * 16), lw_mul_c(w, fm, 16));
}

void lw_mma_coords(Lw *w, const FragLayout *L, Expr *fm, Expr *fn, Expr *r, Expr **row, Expr **col)
{
  Expr *lane = lw_mod_c(w, lw_var(w, w->tid), 32), *warp = lw_div_c(w, lw_var(w, w->tid), 32);
  Expr *wm = lw_div_c(w, warp, L->warps_n), *wn = lw_mod_c(w, lw_clone(w, warp), L->warps_n);
  *row = lw_add(w, lw_add(w, lw_mma_row0(w, L, wm, fm), lw_div_c(w, lane, 4)),
                lw_mul_c(w, lw_div_c(w, lw_clone(w, r), 2), 8));
  if (L->k_quads) /* 16 (fn/2) + 4 (l%4) + 2 (fn%2) + r%2 */
    *col = lw_add(
        w,
        lw_add(w, lw_add(w, lw_mul_c(w, wn, (int64_t)L->frag_n * 8), lw_mul_c(w, lw_div_c(w, fn, 2), 16)),
               lw_add(w, lw_mul_c(w, lw_mod_c(w, lw_clone(w, lane), 4), 4),
                      lw_mul_c(w, lw_mod_c(w, lw_clone(w, fn), 2), 2))),
        lw_mod_c(w, lw_clone(w, r), 2));
  else
    *col = lw_add(w,
                  lw_add(w, lw_add(w, lw_mul_c(w, wn, (int64_t)L->frag_n * 8), lw_mul_c(w, fn, 8)),
                         lw_mul_c(w, lw_mod_c(w, lw_clone(w, lane), 4), 2)),
                  lw_mod_c(w, lw_clone(w, r), 2));
}


/* The row of register `reg` (= fm * 2 + h) of an MMA_ROWS fragment. */
Expr *lw_mma_row(Lw *w, const FragLayout *L, Expr *reg)
{
  Expr *row, *col;
  lw_mma_coords(w, L, lw_bin(w, OP_DIV, reg, lw_i32(w, 2)), lw_i32(w, 0),
                ex_mul(w->a, lw_bin(w, OP_MOD, ex_clone(w->a, reg), lw_i32(w, 2)), lw_i32(w, 2)), &row, &col);
  return row;
}

Expr *lw_row_owner(Lw *w, const FragLayout *L, Expr *col)
{
  if (L->kind != LAYOUT_MMA_ROWS)
    return lw_bin(w, OP_EQ, col, lw_i32(w, 0));
  Expr *lane = lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, 32));
  Expr *wn = lw_bin(w, OP_MOD, lw_bin(w, OP_DIV, lw_var(w, w->tid), lw_i32(w, 32)), lw_i32(w, L->warps_n));
  return lw_and(w, lw_bin(w, OP_EQ, lw_bin(w, OP_MOD, lane, lw_i32(w, 4)), lw_i32(w, 0)),
                L->warps_n > 1 ? lw_bin(w, OP_EQ, wn, lw_i32(w, 0)) : NULL);
}

/* A ROWS or MMA_ROWS fragment: one element per row of a tile. */
bool lw_is_rows(const Buffer *b)
{
  return b->layout.kind == LAYOUT_ROWS || b->layout.kind == LAYOUT_MMA_ROWS;
}
