/* lower_reduce.c: reduce_sum/max/min over a fragment's last dimension, to
 * per-thread partials, warp butterflies and shared-memory scratch; over any
 * other dimension through a shared tile; and the step that drops the scratch
 * guards a loop makes redundant. */
#include "lower.h"

#include <math.h>

/* ---------------------------------------------------------------- reductions */

/* The barriers around a reduction's shared scratch: the guard before the
 * partials are written (the previous execution's readers are done) and the
 * one that publishes them.  A guard is dropped later when nothing can still
 * be reading (lower_drop_scratch_guards). */
enum { SCRATCH_GUARD = 1, SCRATCH_PUBLISH = 2 };

static Stmt *scratch_barrier(Lw *w, int scratch, int role)
{
  Stmt *b = lw_barrier(w);
  b->buf = scratch;
  b->scratch_role = role;
  return b;
}

/* Is there a barrier, other than those of `scratch`'s reduction, among the
 * statements every iteration of a loop with this body runs? */
static bool other_barrier(const Stmt *s, int scratch)
{
  if (s->kind == ST_BARRIER)
    return !(s->scratch_role && s->buf == scratch);
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
void lower_drop_scratch_guards(Stmt *s, const Stmt *loop_body)
{
  if (!s)
    return;
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++) {
      Stmt *c = s->body[i];
      if (c->kind == ST_BARRIER && c->scratch_role == SCRATCH_GUARD &&
          (!loop_body || other_barrier(loop_body, c->buf))) {
        c->kind = ST_SEQ; /* empty */
        c->nbody = 0;
        continue;
      }
      lower_drop_scratch_guards(c, loop_body);
    }
    return;
  case ST_FOR: lower_drop_scratch_guards(s->then_s, s->then_s); return;
  case ST_IF:
    lower_drop_scratch_guards(s->then_s, loop_body);
    lower_drop_scratch_guards(s->else_s, loop_body);
    return;
  default: return;
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
  c->opaque = true;
  return c;
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
Stmt *lower_reduce(Lw *w, Stmt *s)
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
      Expr *valid = lw_bin(w, OP_LT,
                           lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, T)), lw_var(w, w->tid)),
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
      acc = reduce_op(
          w, s->reduce, acc,
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
    /* Leaders past the tile's last vector (padding chunks) write no slot, and
     * their rows' values are never used: their reads are clamped to the last
     * slot written, so that no thread reads shared memory nothing wrote. */
    int64_t last_slot = ((vectors + cpr - 1) / cpr - 1) / slot;
    int scratch = lw_new_buffer(w, "scratch", SCOPE_SHARED, t, nslots);
    stlist_push(w->a, &out, scratch_barrier(w, scratch, SCRATCH_GUARD));
    int g = lw_fresh(w, "g", VAR_LOOP);
    Expr *vidx = lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, g), lw_i32(w, T)), lw_var(w, w->tid));
    Expr *writer = lw_bin(w, OP_LT, ex_mul(w->a, ex_clone(w->a, vidx), lw_i32(w, cpr)), lw_i32(w, vectors));
    if (slot > 1)
      writer = lw_and(w, writer,
                      lw_bin(w, OP_EQ, lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, 32)), lw_i32(w, 0)));
    Stmt *put = lw_store(
        w, scratch, lw_idx1(w, lw_bin(w, OP_DIV, ex_clone(w->a, vidx), lw_i32(w, slot))), 1,
        ex_load(w->a, w->k, part, lw_idx1(w, ex_mul(w->a, lw_var(w, g), lw_i32(w, cpr))), 1));
    stlist_push(w->a, &out, lw_unrolled(w, g, groups, lw_if(w, writer, put, NULL)));
    stlist_push(w->a, &out, scratch_barrier(w, scratch, SCRATCH_PUBLISH));
    /* Each leader: its row's per_row partials, in order. */
    int g2 = lw_fresh(w, "g", VAR_LOOP);
    StmtList one = {0};
    Expr *lead = ex_mul(w->a, lw_var(w, g2), lw_i32(w, cpr));
    int row = lw_let(
        w, &one, "row",
        lw_bin(w, OP_DIV,
               lw_bin(w, OP_ADD, ex_mul(w->a, ex_clone(w->a, lead), lw_i32(w, T)), lw_var(w, w->tid)),
               lw_i32(w, G)));
    int acc = lw_fresh(w, "acc", VAR_MUT);
    w->k->vars[acc].type = t;
    Stmt *init = lw_assign(w, acc, reduce_identity(w, s->reduce, t));
    stlist_push(w->a, &one, init);
    if (slot == 32 && per_row <= 32 && (per_row & (per_row - 1)) == 0) {
      /* A row spans whole warps (G >= 64), so all lanes of a warp share
       * it: lane l reads partial l % per_row, and a butterfly over
       * per_row lanes leaves the row's value in every lane. */
      Expr *at = lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, row), lw_i32(w, per_row)),
                        lw_bin(w, OP_MOD, lw_var(w, w->tid), lw_i32(w, per_row)));
      at = lw_bin(w, OP_MIN, at, lw_i32(w, last_slot)); /* padding chunks: unused */
      init->value = ex_load(w->a, w->k, scratch, lw_idx1(w, at), 1);
      for (int64_t off = per_row / 2; off >= 1; off /= 2) {
        stlist_push(w->a, &one, lw_assign(w, acc, bfly(w, s->reduce, lw_var(w, acc), off)));
      }
    } else {
      int q = lw_fresh(w, "q", VAR_LOOP);
      Expr *at = lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, row), lw_i32(w, per_row)), lw_var(w, q));
      /* Rows of a padding chunk point past the slots written: clamp, the value is unused. */
      at = lw_bin(w, OP_MIN, at, lw_i32(w, last_slot));
      Stmt *step = lw_assign(
          w, acc, reduce_op(w, s->reduce, lw_var(w, acc), ex_load(w->a, w->k, scratch, lw_idx1(w, at), 1)));
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
  Expr *lead = cpr == 1 ? lw_var(w, c)
                        : ex_mul(w->a, lw_bin(w, OP_DIV, lw_var(w, c), lw_i32(w, cpr)), lw_i32(w, cpr));
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
Stmt *lower_reduce_mma(Lw *w, Stmt *s)
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
        Expr *reg = ex_add(
            w->a, ex_mul(w->a, ex_add(w->a, ex_mul(w->a, fm, lw_i32(w, FN)), lw_i32(w, fn)), lw_i32(w, 4)),
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
    int row = lw_let(w, &put, "row", lw_mma_row(w, L, lw_var(w, g)));
    Expr *at = ex_add(w->a, ex_mul(w->a, wn, lw_i32(w, BM)), lw_var(w, row));
    stlist_push(
        w->a, &put,
        lw_if(w, quad0,
              lw_store(w, scratch, lw_idx1(w, at), 1, ex_load(w->a, w->k, part, lw_idx1(w, lw_var(w, g)), 1)),
              NULL));
    stlist_push(w->a, &out, lw_unrolled(w, g, R, stlist_seq(w->a, &put, s->loc)));
    stlist_push(w->a, &out, scratch_barrier(w, scratch, SCRATCH_PUBLISH));
    int g2 = lw_fresh(w, "g", VAR_LOOP);
    StmtList one = {0};
    int row2 = lw_let(w, &one, "row", lw_mma_row(w, L, lw_var(w, g2)));
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

/* reduce_op(src, dst, dim = d), d not the last dimension (column sums): the
 * elements of one output lie in many threads whatever src's layout, so src
 * goes through a shared tile of its shape (dst's type), and each thread then
 * combines, in order of the reduced index, the columns of the dst elements it
 * holds:
 *
 *   copy(src, scratch)                      a copy's barriers around it
 *   for i... in parallel(dst's shape) {     dst's own layout
 *       var acc = identity (accumulate: dst[i...])
 *       for k in serial(src.shape[d]) { acc = op(acc, scratch[i..., k at d, ...]) }
 *       dst[i...] = acc
 *   }
 *
 * built at the tile level and lowered as any copy and parallel loop. */
Stmt *lower_reduce_dim(Lw *w, Stmt *s)
{
  const Buffer *S = &w->k->bufs[s->src_buf];
  const Buffer D = w->k->bufs[s->buf]; /* a copy: new buffers may move the array */
  TypeKind t = D.elem;
  int rank = S->rank, d = s->dim;
  int64_t len = S->tile_shape[d], shape[TL_MAX_RANK];
  for (int i = 0; i < rank; i++)
    shape[i] = S->tile_shape[i];
  int scratch = lw_new_buffer(w, "rdim", SCOPE_SHARED, t, buffer_elems(S));
  Buffer *Sc = &w->k->bufs[scratch];
  Sc->rank = rank;
  for (int i = 0; i < rank; i++) {
    Sc->tile_shape[i] = shape[i];
    Sc->shape[i] = lw_i32(w, shape[i]);
  }
  StmtList out = {0};
  Stmt *cp = st_new(w->a, ST_COPY, s->loc);
  cp->src = (Region){.buf = s->src_buf, .rank = rank};
  cp->dst = (Region){.buf = scratch, .rank = rank};
  stlist_push(w->a, &out, cp);

  Stmt *loop = st_new(w->a, ST_FOR, s->loc);
  loop->for_kind = FOR_PARALLEL;
  loop->nvars = D.rank;
  Expr **didx = ARENA_ARRAY(w->a, Expr *, D.rank);
  for (int i = 0; i < D.rank; i++) {
    loop->vars[i] = lw_fresh(w, "i", VAR_LOOP);
    loop->extents[i] = lw_i32(w, D.tile_shape[i]);
    didx[i] = lw_var(w, loop->vars[i]);
  }
  int k = lw_fresh(w, "k", VAR_LOOP);
  Expr **sidx = ARENA_ARRAY(w->a, Expr *, rank);
  for (int i = 0, j = 0; i < rank; i++)
    sidx[i] = i == d ? lw_var(w, k) : lw_var(w, loop->vars[j++]);
  int acc = lw_fresh(w, "acc", VAR_MUT);
  w->k->vars[acc].type = t;
  StmtList body = {0};
  Expr *dst_elem = ex_load(w->a, w->k, s->buf, didx, D.rank);
  stlist_push(w->a, &body, lw_assign(w, acc, s->accumulate ? dst_elem : reduce_identity(w, s->reduce, t)));
  Stmt *step = lw_assign(w, acc,
                         reduce_op(w, s->reduce, lw_var(w, acc), ex_load(w->a, w->k, scratch, sidx, rank)));
  Stmt *walk = lw_unrolled(w, k, len, step);
  walk->for_kind = FOR_SERIAL;
  stlist_push(w->a, &body, walk);
  Expr **didx2 = ARENA_ARRAY(w->a, Expr *, D.rank);
  for (int i = 0; i < D.rank; i++)
    didx2[i] = lw_var(w, loop->vars[i]);
  stlist_push(w->a, &body, lw_store(w, s->buf, didx2, D.rank, lw_var(w, acc)));
  loop->then_s = stlist_seq(w->a, &body, s->loc);
  stlist_push(w->a, &out, loop);
  return lw_lower_stmt(w, stlist_seq(w->a, &out, s->loc));
}
