/* lower_copy.c: copy and fill of tiles, to per-thread statements.
 *
 *   global <-> fragment/shared: each thread moves its vectors; a vector wholly
 *      inside the tensor and aligned goes as one wide access (VCOPY), otherwise
 *      element by element with a bounds check, reading zeros and writing
 *      nothing outside the tensor.
 *   shared <-> fragment, fragment <-> fragment: per thread, no bounds.
 *   ROWS fragments: one element per row; MMA accumulators: gemm.c's copies.
 *   fill: every owned element (fragment), or cooperatively (shared).
 */
#include "lower.h"

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

/* Copies of the global coordinates g[] (rank R), with q added to the last. */
static Expr **shifted(Lw *w, Expr **g, int R, int q)
{
  Expr **o = ARENA_ARRAY(w->a, Expr *, R);
  for (int d = 0; d < R; d++)
    o[d] = d == R - 1 ? ex_add(w->a, ex_clone(w->a, g[d]), lw_i32(w, q)) : ex_clone(w->a, g[d]);
  return o;
}

/* A whole vector of the asynchronous copy whose row is aligned to 4 bytes but not 16 (a tensor
 * whose rows are an odd multiple of 4 bytes long, e.g. N = 4098 halves; N = 4097 has every other
 * row so): four 4-byte cp.async, still in flight with the rest of the stage, instead of the
 * element path's loads, which the thread waits for.  Otherwise `slow`. */
static Stmt *async_pieces(Lw *w, const Region *gr, int tb, Expr *creg, Expr **tt, int trank, Expr **g,
                          int vec, Expr *whole, Stmt *slow, SrcLoc loc)
{
  const Buffer *G = &w->k->bufs[gr->buf];
  int R = G->rank, eb = type_bytes(G->elem), lanes = 4 / eb;
  if (eb > 4 || vec * eb != 16)
    return slow;
  StmtList l = {0};
  for (int q = 0; q < vec; q += lanes) {
    int tn;
    Expr **ti = tile_index(w, creg, tt, trank, lw_i32(w, q), &tn);
    stlist_push(w->a, &l, lw_cp_async(w, tb, ti, tn, gr->buf, shifted(w, g, R, q), 4, lanes, loc));
  }
  Expr *ok = lw_and(w, ex_clone(w->a, whole), ex_aligned(w->a, gr->buf, shifted(w, g, R, 0), R, 4));
  return lw_if(w, ok, stlist_seq(w->a, &l, loc), slow);
}

void lw_copy_vector(Lw *w, StmtList *body, bool load, const Region *gr, int tb, Expr *creg, Expr **t, int vec,
                    Expr *stage, bool async, SrcLoc loc)
{
  const Buffer *G = &w->k->bufs[gr->buf], *T = &w->k->bufs[tb];
  int R = G->rank, r = T->rank - (stage != NULL);
  /* A staged shared tile (pipelined loop) takes the stage as its first index. */
  Expr *ts[TL_MAX_RANK + 1];
  int toff = 0;
  if (stage && !creg)
    ts[toff++] = stage;
  for (int d = 0; d < r; d++)
    ts[toff + d] = t[d];
  Expr **tt = creg ? t : ts;
  int trank = creg ? r : r + toff;

  /* Global coordinates and the in-bounds test of every dimension but the one the vector runs
   * along (vd: the tensor dimension the tile's last spans; only the tensor's last is contiguous,
   * so vectors along another go element by element). */
  Expr *g[TL_MAX_RANK];
  Expr *inb = NULL;
  int vd = region_span(gr, r, r - 1);
  for (int d = 0; d < R; d++) {
    Expr *o = ex_clone(w->a, gr->origin[d]);
    int td = region_tile_dim(gr, r, d);
    g[d] = td < 0 ? o : lw_var(w, lw_let(w, body, "g", ex_add(w->a, o, ex_clone(w->a, t[td]))));
    if (d != vd)
      inb = lw_and(w, inb, lw_in_range(w, g[d], G->shape[d]));
  }
  Expr *glast = g[vd], *extent = G->shape[vd];

  /* Fast path: the whole vector inside the tensor and aligned for one access. */
  StmtList fast = {0};
  int tn;
  Expr **ti = tile_index(w, creg, tt, trank, lw_i32(w, 0), &tn);
  if (async)
    stlist_push(w->a, &fast, lw_cp_async(w, tb, ti, tn, gr->buf, shifted(w, g, R, 0), 16, vec, loc));
  else if (load)
    lw_vcopy(w, &fast, tb, ti, tn, gr->buf, g, R, vec, tn - 1, R - 1);
  else
    lw_vcopy(w, &fast, gr->buf, g, R, tb, ti, tn, vec, R - 1, tn - 1);

  /* Slow path: element by element, zeros outside the tensor. */
  StmtList slow = {0};
  int v = lw_fresh(w, "v", VAR_LOOP);
  int tmp = load && !creg && vec > 1 ? lw_new_buffer(w, "ld", SCOPE_LOCAL, G->elem, vec) : -1;
  G = &w->k->bufs[gr->buf], T = &w->k->bufs[tb]; /* the new buffer may have moved the array */
  {
    StmtList one = {0};
    int gv = lw_let(w, &one, "gv", ex_add(w->a, ex_clone(w->a, glast), lw_var(w, v)));
    Expr *ok = lw_and(w, ex_clone(w->a, inb), lw_in_range(w, lw_var(w, gv), extent));
    Expr **ge = ARENA_ARRAY(w->a, Expr *, R);
    for (int d = 0; d < R; d++)
      ge[d] = d == vd ? lw_var(w, gv) : ex_clone(w->a, g[d]);
    if (tmp >= 0) {
      /* Into a shared tile: the vector's loads into registers first, then its stores, so that
       * the loads are in flight together (a shared store after each load waits for it: one
       * load at a time, the misaligned tensor's whole copy at the memory's latency per element). */
      Stmt *ld = lw_store(w, tmp, lw_idx1(w, lw_var(w, v)), 1, ex_load(w->a, w->k, gr->buf, ge, R));
      stlist_push(w->a, &one,
                  lw_if(w, ok, ld, lw_store(w, tmp, lw_idx1(w, lw_var(w, v)), 1, lw_zero(w, G->elem))));
    } else if (load) {
      Expr **te = tile_index(w, creg, tt, trank, lw_var(w, v), &tn);
      Stmt *ld = lw_store(w, tb, te, tn, ex_load(w->a, w->k, gr->buf, ge, R));
      Expr **te0 = tile_index(w, creg, tt, trank, lw_var(w, v), &tn);
      stlist_push(w->a, &one, lw_if(w, ok, ld, lw_store(w, tb, te0, tn, lw_zero(w, T->elem))));
    } else {
      Expr **te = tile_index(w, creg, tt, trank, lw_var(w, v), &tn);
      stlist_push(w->a, &one,
                  lw_if(w, ok, lw_store(w, gr->buf, ge, R, ex_load(w->a, w->k, tb, te, tn)), NULL));
    }
    stlist_push(w->a, &slow, lw_unrolled(w, v, vec, stlist_seq(w->a, &one, loc)));
    if (tmp >= 0) {
      Expr **t0 = tile_index(w, creg, tt, trank, lw_i32(w, 0), &tn);
      lw_vcopy(w, &slow, tb, t0, tn, tmp, lw_idx1(w, lw_i32(w, 0)), 1, vec, tn - 1, 0);
    }
  }
  Stmt *fast_s = stlist_seq(w->a, &fast, loc), *slow_s = stlist_seq(w->a, &slow, loc);
  /* A strided tensor whose innermost stride is not the literal 1 goes element by element too. */
  if (vec == 1 || vd != R - 1 || !buffer_inner_unit(G)) {
    stlist_push(w->a, body, slow_s);
    return;
  }
  Expr *whole = lw_and(
      w, ex_clone(w->a, inb),
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
    Expr **zero = ARENA_ARRAY(w->a, Expr *, R);
    for (int d = 0; d < R; d++)
      zero[d] = lw_i32(w, 0); /* a valid address; no byte is read */
    Expr **t0 = tile_index(w, creg, tt, trank, lw_i32(w, 0), &tn);
    Stmt *zf = lw_cp_async(w, tb, t0, tn, gr->buf, zero, 0, vec, loc);
    chunk->else_s = lw_if(w, outside, zf,
                          async_pieces(w, gr, tb, creg, tt, trank, g, vec, whole, slow_s, loc));
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
  Deal dl = lw_deal(w, vec, buffer_elems(T));
  StmtList body = {0};
  int c = lw_fresh(w, "c", VAR_LOOP);
  Expr *creg = is_frag ? ex_mul(w->a, lw_var(w, c), lw_i32(w, vec)) : NULL;
  Expr *base = lw_bin(
      w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
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
  Deal dl = lw_deal(w, vec, buffer_elems(F));
  StmtList body = {0};
  int c = lw_fresh(w, "c", VAR_LOOP);
  Expr *base = lw_bin(
      w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
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
  Deal dl = lw_deal(w, 1, buffer_elems(shape_of));
  int c = lw_fresh(w, "c", VAR_LOOP);
  StmtList l = {0};
  int flat = lw_let(
      w, &l, "flat",
      lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)));
  Expr *t[TL_MAX_RANK];
  lw_coords(w, shape_of->tile_shape, shape_of->rank, lw_var(w, flat), t);
  stlist_push(w->a, &l, body(w, t, ctx));
  Stmt *inner = stlist_seq(w->a, &l, loc);
  if (dl.guard) {
    StmtList g = {0};
    int f2 = lw_let(
        w, &g, "flat",
        lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)));
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

/* Per-thread registers src -> dst, same layout.  The registers of a padding
 * chunk (past the tile's last vector: an elementwise or rows layout whose
 * threads * chunks * vec exceeds the elements) hold nothing and are skipped:
 * the guard is on a constant chunk, so it is a comparison of tid.x. */
static Stmt *lower_copy_frag_frag(Lw *w, Stmt *s)
{
  const Buffer *D = &w->k->bufs[s->dst.buf];
  const FragLayout *L = &D->layout;
  int64_t n = L->regs;
  int i = lw_fresh(w, "r", VAR_LOOP);
  Stmt *body = lw_store(w, s->dst.buf, lw_idx1(w, lw_var(w, i)), 1,
                        ex_load(w->a, w->k, s->src.buf, lw_idx1(w, lw_var(w, i)), 1));
  if (L->kind == LAYOUT_ELEMWISE || L->kind == LAYOUT_ROWS) {
    int64_t total = 1;
    if (L->kind == LAYOUT_ELEMWISE)
      total = buffer_elems(D);
    else
      for (int d = 0; d < L->parent_rank; d++)
        total *= L->parent_shape[d];
    if ((int64_t)L->chunks * L->threads * L->vec > total) {
      int per = L->kind == LAYOUT_ELEMWISE ? L->vec : 1; /* registers per chunk */
      Expr *chunk = lw_bin(w, OP_DIV, lw_var(w, i), lw_i32(w, per));
      Expr *first = lw_bin(w, OP_MUL,
                           lw_bin(w, OP_ADD, ex_mul(w->a, chunk, lw_i32(w, L->threads)), lw_var(w, w->tid)),
                           lw_i32(w, L->vec));
      body = lw_if(w, lw_bin(w, OP_LT, first, lw_i32(w, total)), body, NULL);
    }
  }
  return lw_unrolled(w, i, n, body);
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
    r.rc[0] = lw_var(w, lw_let(w, out, "row", lw_mma_row(w, L, lw_var(w, c))));
    r.valid = NULL;
    r.first = lw_row_owner(w, L, NULL);
    return r;
  }
  int64_t ptotal = 1;
  for (int d = 0; d < L->parent_rank; d++)
    ptotal *= L->parent_shape[d];
  int flat = lw_let(
      w, out, "flat",
      lw_bin(w, OP_MUL,
             lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, L->threads)), lw_var(w, w->tid)),
             lw_i32(w, L->vec)));
  Expr *pc[TL_MAX_RANK];
  lw_coords(w, L->parent_shape, L->parent_rank, lw_var(w, flat), pc);
  for (int d = 0; d < F->rank; d++)
    r.rc[d] = L->parent_rank == 1 ? lw_i32(w, 0) : pc[d];
  r.valid = lw_bin(w, OP_LT, lw_var(w, flat), lw_i32(w, ptotal));
  r.first = lw_row_owner(w, L, pc[L->parent_rank - 1]);
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
  for (int d = 0; d < O->rank; d++) {
    if (O->scope != SCOPE_GLOBAL) {
      oi[d] = ex_clone(w->a, r.rc[d]);
      continue;
    }
    Expr *o = ex_clone(w->a, other->origin[d]);
    int td = region_tile_dim(other, F->rank, d);
    oi[d] = td < 0 ? o : ex_add(w->a, o, ex_clone(w->a, r.rc[td]));
    inb = lw_and(w, inb, lw_in_range(w, oi[d], O->shape[d]));
  }
  Expr **fi = lw_idx1(w, lw_var(w, c));
  if (to_frag) {
    Stmt *ld = lw_store(w, fb, fi, 1, ex_load(w->a, w->k, ob, oi, O->rank));
    stlist_push(w->a, &body,
                lw_if(w, inb, ld, lw_store(w, fb, lw_idx1(w, lw_var(w, c)), 1, lw_zero(w, F->elem))));
  } else {
    Stmt *st = lw_store(w, ob, oi, O->rank, ex_load(w->a, w->k, fb, fi, 1));
    stlist_push(w->a, &body, lw_if(w, lw_and(w, inb, r.first), st, NULL));
  }
  return lw_unrolled(w, c, F->layout.chunks, stlist_seq(w->a, &body, s->loc));
}

/* ---------------------------------------------------------------- TMA stores (sm_90a)
 *
 * A copy of a 16-bit shared tile [R, C] into a global tensor of rank 2 .. 5 (the
 * tile covering its last two dimensions) goes through the copy engine when the
 * host passed tensor maps: the tile is in a wgmma swizzle layout (choose-swizzles
 * gives it one), panels [R, P] of S bytes a row, and the map's box is a panel with
 * the swizzle of span S (the layout is the one the copy engine writes for loads,
 * read back the same way).  The copy's fence (lower_copy: barrier, stores,
 * fence.proxy.async, barrier) already separates the tile's writers from it:
 *
 *   if tma.ok != 0:
 *       if tid == 0: for each panel: tma.store; then commit + wait_group.read 0
 *   else: the threads' masked copy
 *
 * The copy engine writes only the elements inside the tensor (ragged edges need
 * no masks); thread 0 waits until the engine has read the tile, so a later
 * write into it (after the next barrier) cannot race the store. */
bool lw_tma_store_fits(const Lw *w, const int64_t *shape, TypeKind elem, const Region *dst)
{
  const Buffer *G = &w->k->bufs[dst->buf];
  return w->pc->target->sm == 90 && w->pc->target->arch_specific && G->scope == SCOPE_GLOBAL &&
         buffer_inner_unit(G) && G->elem == elem && type_bytes(elem) == 2 && G->rank >= 2 && G->rank <= 5 &&
         dst->rank == G->rank && region_span(dst, 2, 1) == G->rank - 1 && shape[1] % 16 == 0 &&
         shape[0] % 8 == 0 && shape[0] <= 256;
}

int lw_tma_map(Lw *w, const Region *g, int64_t rows, int64_t panel)
{
  int R = w->k->bufs[g->buf].rank, rd = region_span(g, 2, 0); /* the tensor dimension of the rows */
  int64_t box[TL_MAX_RANK];
  for (int d = 0; d < R; d++)
    box[d] = d == R - 1 ? panel : d == rd ? rows : 1;
  return kernel_add_tmap(w->a, w->k, g->buf, box);
}

bool lw_tma_store_shape(const Lw *w, const Stmt *s)
{
  const Buffer *T = &w->k->bufs[s->src.buf];
  return T->scope == SCOPE_SHARED && !T->stages && T->rank == 2 &&
         lw_tma_store_fits(w, T->tile_shape, T->elem, &s->dst);
}

static Stmt *tma_store(Lw *w, Stmt *s)
{
  Kernel *k = w->k;
  const Buffer *T = &k->bufs[s->src.buf], *G = &k->bufs[s->dst.buf];
  int R = G->rank;
  int64_t panel = swizzle_span(T->swizzle) / 2;
  int map = lw_tma_map(w, &s->dst, T->tile_shape[0], panel);
  StmtList out = {0};
  for (int64_t c = 0; c < T->tile_shape[1]; c += panel) {
    Stmt *t = st_new(w->a, ST_TMA_STORE, s->loc);
    t->tmap = map;
    t->buf = s->src.buf;
    t->nidx = 2;
    t->idx = ARENA_ARRAY(w->a, Expr *, 2);
    t->idx[0] = lw_i32(w, 0);
    t->idx[1] = lw_i32(w, c);
    t->src_buf = s->dst.buf;
    t->nsrc_idx = R;
    t->src_idx = ARENA_ARRAY(w->a, Expr *, R);
    for (int d = 0; d < R; d++) {
      Expr *o = lw_clone(w, s->dst.origin[d]);
      t->src_idx[d] = d == R - 1 && c ? lw_add(w, o, lw_i32(w, c)) : o;
    }
    stlist_push(w->a, &out, t);
  }
  stlist_push(w->a, &out, st_new(w->a, ST_TMA_STORE_WAIT, s->loc));
  Stmt *issue = lw_if(w, lw_bin(w, OP_EQ, lw_var(w, w->tid), lw_i32(w, 0)), stlist_seq(w->a, &out, s->loc),
                      NULL);
  return lw_if(w, lw_bin(w, OP_NE, lw_var(w, k->tma_ok), lw_i32(w, 0)), issue,
               w->pc->tma_only ? NULL : lower_copy_global(w, s, false)); /* --tma-only: the TMA form alone */
}

Stmt *lower_copy(Lw *w, Stmt *s)
{
  const Buffer *A = &w->k->bufs[s->src.buf], *B = &w->k->bufs[s->dst.buf];
  Stmt *r;
  if (A->scope == SCOPE_LOCAL || B->scope == SCOPE_LOCAL) {
    error_at(w->pc->diags, s->loc,
             "copy() of an alloc_local buffer is not supported yet; "
             "assign its elements in a loop");
    return NULL;
  }
  bool rows = (A->scope == SCOPE_FRAGMENT && lw_is_rows(A)) || (B->scope == SCOPE_FRAGMENT && lw_is_rows(B));
  if (rows && !(A->scope == SCOPE_FRAGMENT && B->scope == SCOPE_FRAGMENT))
    r = lower_copy_rows(w, s);
  else if (A->scope == SCOPE_GLOBAL)
    r = lower_copy_global(w, s, true);
  else if (B->scope == SCOPE_GLOBAL && lw_tma_store_shape(w, s) && swizzle_span(A->swizzle))
    r = tma_store(w, s);
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
  return lw_writes_shared(w, s->dst.buf) ? lw_fenced(w, r) : r;
}

Stmt *lower_fill(Lw *w, Stmt *s)
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

/* ---------------------------------------------------------------- MMA accumulators */

/* Loops over this thread's pairs of neighbouring registers (r0 r1, r2 r3) of
 * each 16x8 piece: body(fm, fn, h) at register (fm*FN + fn)*4 + 2h. */
typedef struct {
  int fm, fn, h;
  Expr *reg, *row, *col;
} PairPos;

static Stmt *over_pairs(Lw *w, const FragLayout *L, SrcLoc loc,
                        void (*body)(Lw *, StmtList *, PairPos *, void *), void *ctx)
{
  PairPos p;
  p.fm = lw_fresh(w, "fm", VAR_LOOP);
  p.fn = lw_fresh(w, "fn", VAR_LOOP);
  p.h = lw_fresh(w, "h", VAR_LOOP);
  StmtList l = {0};
  p.reg = lw_add(w, lw_mul_c(w, lw_add(w, lw_mul_c(w, lw_var(w, p.fm), L->frag_n), lw_var(w, p.fn)), 4),
                 lw_mul_c(w, lw_var(w, p.h), 2));
  Expr *row, *col;
  lw_mma_coords(w, L, lw_var(w, p.fm), lw_var(w, p.fn), lw_mul_c(w, lw_var(w, p.h), 2), &row, &col);
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
  Expr **ri = lw_idx1(w, lw_clone(w, p->reg));
  /* A pipelined loop's staged tile (stage_a) has the stage as its leading index. */
  int staged = c->load && s->stage_a ? 1 : 0;
  Expr **si = ARENA_ARRAY(w->a, Expr *, 2 + staged);
  if (staged)
    si[0] = lw_clone(w, s->stage_a);
  si[staged] = lw_clone(w, p->row);
  si[staged + 1] = lw_clone(w, p->col);
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
