/* software_pipeline.c: `for k in pipelined(n, stages = S)`.
 *
 * The loop body starts with copies of global tiles into shared memory (the
 * producers); the rest (gemm, parallel loops: the consumers) reads them.
 * Each shared tile a producer fills gets S copies (a leading stage dimension,
 * stage = iteration % S), the producers become cp.async 16-byte copies (zero
 * filled past the tensor's edge) and run S - 1 iterations ahead:
 *
 *   for p in 0 .. S-2:  if p < n { produce(p) }  commit          prologue
 *   for k in 0 .. n-1:                                           steady state
 *       wait_group(S-2)   -- this thread's copies for iteration k landed
 *       barrier           -- everyone's did, and everyone finished k-1
 *       if k + S-1 < n { produce(k + S-1) }  commit   -- into stage (k-1) % S
 *       consume(k)       -- (wgmma: issued before the fetch, its wait after)
 *   wait_group(0)                                                epilogue
 *
 * Beside a TMA form (below), where this form is the fallback for tensors the
 * copy engine cannot address, S >= 4 stages run as one loop of n + S - 1
 * iterations instead, the same statements in the same order with one copy
 * of the fetch code (matmul.tl's compile time):
 *
 *   for j in 0 .. n+S-2:
 *       if j >= S-1 { wait_group(S-2)  barrier  consume(k = j - (S-1)), issued }
 *       if j < n { produce(j) }  commit     -- stage j % S: iteration k-1's
 *       consume(k)'s wgmma waits    -- unconditional: with no multiply in flight
 *                                      a no-op; inside an if, ptxas serializes
 *                                      the wgmma (the join reads the accumulators)
 *
 * One barrier per iteration.  With S = 1 there is no other stage to fill
 * meanwhile: fetch, commit, wait_group(0), barrier, consume, barrier.
 * Every commit is unconditional, so the group count is the same in every
 * thread: before iteration k's wait, k + S - 1 groups are committed, and
 * wait_group(S-2) leaves pending only those after iteration k's; trip counts
 * below S are correct (the extra groups are empty).  Vectors that hang
 * over the tensor's edge, or are not aligned, are copied element by element
 * instead (still before the barrier that publishes them).
 */
#include "lower.h"

static bool is_producer(const Kernel *k, const Stmt *s)
{
  return s->kind == ST_COPY && k->bufs[s->src.buf].scope == SCOPE_GLOBAL &&
         k->bufs[s->dst.buf].scope == SCOPE_SHARED;
}

/* The body's statements, with nested sequences flattened. */
static void flatten(Arena *a, Stmt *s, StmtList *out)
{
  if (s->kind == ST_SEQ) {
    for (int i = 0; i < s->nbody; i++)
      flatten(a, s->body[i], out);
    return;
  }
  stlist_push(a, out, s);
}

/* ---------------------------------------------------------------- uses of a buffer */

/* Among the leading producers of the statements s (nested sequences
 * flattened, as lower_pipelined splits a body): 1 if one fills buf, -1 if a
 * consumer comes first, 0 if s ends before either. */
static int producers_fill(const Kernel *k, const Stmt *s, int buf)
{
  if (s->kind == ST_SEQ) {
    for (int i = 0; i < s->nbody; i++) {
      int r = producers_fill(k, s->body[i], buf);
      if (r)
        return r;
    }
    return 0;
  }
  if (!is_producer(k, s))
    return -1;
  return s->dst.buf == buf;
}

/* Is buf one of the leading producer copies of pipelined loop p? */
static bool fills(const Kernel *k, const Stmt *p, int buf) { return producers_fill(k, p->then_s, buf) == 1; }

/* Does s (other than `skip`, and other pipelined loops of `stages` stages
 * that fill buf themselves: they stage it the same way) use buf? */
static bool stmt_uses(const Kernel *k, const Stmt *s, const Stmt *skip, int buf, int stages)
{
  if (!s || s == skip)
    return false;
  if (s->kind == ST_FOR && s->for_kind == FOR_PIPELINED && s->stages == stages && fills(k, s, buf))
    return false;
  /* The tile statements, and what an earlier pipelined loop was already lowered to (its gemm is
   * ldmatrix / mma / wgmma by now, its copies vcopy / cp.async). */
  if (((s->kind == ST_STORE || s->kind == ST_FILL || s->kind == ST_ATOMIC) && s->buf == buf) ||
      (s->kind == ST_COPY && (s->src.buf == buf || s->dst.buf == buf)) ||
      ((s->kind == ST_GEMM || s->kind == ST_MMA || s->kind == ST_WGMMA) &&
       (s->a == buf || s->b == buf || s->c == buf)) ||
      ((s->kind == ST_REDUCE || s->kind == ST_VCOPY || s->kind == ST_CP_ASYNC || s->kind == ST_LDMATRIX) &&
       (s->src_buf == buf || s->buf == buf)))
    return true;
  if (lw_expr_reads(s->value, buf) || lw_expr_reads(s->cond, buf))
    return true;
  for (int i = 0; i < s->nidx; i++)
    if (lw_expr_reads(s->idx[i], buf))
      return true;
  for (int i = 0; i < s->nbody; i++)
    if (stmt_uses(k, s->body[i], skip, buf, stages))
      return true;
  return stmt_uses(k, s->then_s, skip, buf, stages) || stmt_uses(k, s->else_s, skip, buf, stages);
}

/* The leading producer of s (a loop's body) that fills buf: fills() said there is one. */
static const Stmt *filler(const Kernel *k, const Stmt *s, int buf)
{
  if (s->kind != ST_SEQ)
    return s;
  for (int i = 0; i < s->nbody; i++)
    if (producers_fill(k, s->body[i], buf) == 1)
      return filler(k, s->body[i], buf);
  return s;
}

/* The check stage_tiles makes, on the body before any statement is lowered (lowering in order
 * rewrites the statements before a loop first, into forms that name the tile in other ways): a tile
 * a pipelined loop fills (its S stages) is used by no statement outside that loop, but by other
 * pipelined loops of S stages that fill it themselves.  False (reported) if one is. */
static bool check_staged(Lw *w, const Stmt *s)
{
  if (!s)
    return true;
  Kernel *k = w->k;
  if (s->kind == ST_FOR && s->for_kind == FOR_PIPELINED) {
    for (int b = 0; b < k->nbufs; b++)
      if (fills(k, s, b) && stmt_uses(k, k->body, s, b, s->stages)) {
        error_at(w->pc->diags, filler(k, s->then_s, b)->loc,
                 "'%s' is filled by this pipelined loop, which keeps %d copies of it, so it cannot be "
                 "used outside the loop",
                 k->bufs[b].name, s->stages);
        return false;
      }
  }
  for (int i = 0; i < s->nbody; i++)
    if (!check_staged(w, s->body[i]))
      return false;
  return check_staged(w, s->then_s) && check_staged(w, s->else_s);
}

bool lw_check_pipelined_tiles(Lw *w) { return check_staged(w, w->k->body); }

/* ---------------------------------------------------------------- staging */

typedef struct {
  Lw *w;
  bool *staged; /* per buffer */
  Expr *stage;  /* the consumers' stage index */
  int var;      /* the loop variable, for substitution */
  Expr *iter;   /* ... by this expression */
  bool ok;
} Stage;

static Expr **prefix(Lw *w, Expr *first, Expr **idx, int n)
{
  Expr **v = ARENA_ARRAY(w->a, Expr *, n + 1);
  v[0] = ex_clone(w->a, first);
  for (int i = 0; i < n; i++)
    v[i + 1] = idx[i];
  return v;
}

static Expr *stage_expr(void *ctx, Expr *e)
{
  Stage *st = ctx;
  if (e->kind == EX_LOAD && st->staged[e->buf]) {
    e->args = prefix(st->w, st->stage, e->args, e->nargs);
    e->nargs++;
  }
  return e;
}

static void stage_stmt(Stage *st, Stmt *s)
{
  if (!s)
    return;
  const Kernel *k = st->w->k;
  if (s->kind == ST_STORE && st->staged[s->buf]) {
    s->idx = prefix(st->w, st->stage, s->idx, s->nidx);
    s->nidx++;
  }
  if (s->kind == ST_GEMM) {
    if (st->staged[s->a])
      s->stage_a = ex_clone(st->w->a, st->stage);
    if (st->staged[s->b])
      s->stage_b = ex_clone(st->w->a, st->stage);
  }
  if (s->kind == ST_COPY && st->staged[s->src.buf] && !st->staged[s->dst.buf] &&
      k->bufs[s->dst.buf].scope == SCOPE_FRAGMENT) {
    /* staged tile -> fragment: lower_copy_shared_frag reads stage .stage_a */
    s->stage_a = ex_clone(st->w->a, st->stage);
    return;
  }
  if ((s->kind == ST_COPY && (st->staged[s->src.buf] || st->staged[s->dst.buf])) ||
      (s->kind == ST_FILL && st->staged[s->buf])) {
    int b = s->kind == ST_FILL ? s->buf : st->staged[s->src.buf] ? s->src.buf : s->dst.buf;
    error_at(st->w->pc->diags, s->loc,
             "'%s' is filled by the pipelined loop's copies; using it in %s there is "
             "not supported yet (use gemm or a parallel loop)",
             k->bufs[b].name, s->kind == ST_FILL ? "fill" : "copy");
    st->ok = false;
    return;
  }
  for (int i = 0; i < s->nbody; i++)
    stage_stmt(st, s->body[i]);
  stage_stmt(st, s->then_s);
  stage_stmt(st, s->else_s);
}

static Expr *subst_iter(void *ctx, Expr *e)
{
  Stage *st = ctx;
  if (e->kind == EX_VAR && e->var == st->var)
    return ex_clone(st->w->a, st->iter);
  return e;
}

/* The consumers' statements on stage `stage` (their reads and writes of staged tiles get it in
 * front), lowered; NULL (reported) where a staged tile is used in a way that cannot be staged. */
static Stmt *lower_on_stage(Lw *w, bool *staged, Expr *stage, StmtList *consumers, SrcLoc loc)
{
  Stage st = {w, staged, stage, -1, NULL, true};
  Stmt *use = stlist_seq(w->a, consumers, loc);
  stage_stmt(&st, use);
  stmt_rewrite_exprs(use, stage_expr, &st);
  return st.ok ? lw_lower_stmt(w, use) : NULL;
}

/* Is the whole tile inside the tensor, with every 16-byte vector aligned?
 * Then no vector needs a check: rows start at multiples of the row stride,
 * a multiple of vec elements, from an aligned origin.  rows_free: inside
 * along the last dimension only, whatever its other dimensions (a tile over
 * the tensor's edge along its rows: decoding's one token in a 16-row tile). */
static Expr *interior(Lw *w, const Region *gr, const Buffer *tile, int vec, bool rows_free)
{
  const Buffer *G = &w->k->bufs[gr->buf];
  int R = G->rank;
  Expr *ok = NULL;
  for (int d = rows_free ? R - 1 : 0; d < R; d++) {
    Expr *o = ex_clone(w->a, gr->origin[d]);
    int td = region_tile_dim(gr, tile->rank, d);
    int64_t extent = td < 0 ? 1 : tile->tile_shape[td];
    ok = lw_and(w, ok,
                lw_and(w, lw_bin(w, OP_GE, o, lw_i32(w, 0)),
                       lw_bin(w, OP_LE, ex_add(w->a, ex_clone(w->a, o), lw_i32(w, extent)),
                              ex_clone(w->a, G->shape[d]))));
  }
  /* rows step by the row stride: the last extent, or every stride but the last (a literal 1) */
  for (int d = 0; d < (buffer_strided(G) ? R - 1 : 1); d++) {
    const Expr *step = buffer_strided(G) ? G->stride[d] : G->shape[R - 1];
    ok = lw_and(w, ok,
                lw_bin(w, OP_EQ, lw_bin(w, OP_MOD, ex_clone(w->a, step), lw_i32(w, vec)), lw_i32(w, 0)));
  }
  Expr **o = ARENA_ARRAY(w->a, Expr *, R);
  for (int d = 0; d < R; d++)
    o[d] = ex_clone(w->a, gr->origin[d]);
  return lw_and(w, ok, ex_aligned(w->a, gr->buf, o, R, vec * type_bytes(G->elem)));
}

/* The copy of an interior tile: one unchecked cp.async per vector, unrolled.
 * rows_masked (a tile that interior(.., rows_free) admits): each vector's row
 * is tested, and a vector outside the tensor copies 0 bytes from row 0 (a
 * valid address; the copy writes the zeros), in a rolled loop, like the edge
 * path, so that its tests and addresses are not hoisted out of the K loop and
 * kept in registers beside the interior copy's. */
static Stmt *produce_interior(Lw *w, const Region *gr, int tb, const Buffer *tile, int vec, Expr *stage,
                              bool rows_masked, SrcLoc loc)
{
  const Buffer *G = &w->k->bufs[gr->buf];
  int R = G->rank, r = tile->rank;
  int64_t vectors = buffer_elems(tile) / vec;
  int chunks = (int)((vectors + w->k->nthreads - 1) / w->k->nthreads);
  int c = lw_fresh(w, "c", VAR_LOOP);
  StmtList body = {0};
  Expr *base = lw_bin(
      w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
      lw_i32(w, vec));
  int basev = lw_let(w, &body, "base", ex_clone(w->a, base));
  Expr *t[TL_MAX_RANK];
  lw_coords(w, tile->tile_shape, r, lw_var(w, basev), t);
  Expr **ti = ARENA_ARRAY(w->a, Expr *, r + 1);
  ti[0] = ex_clone(w->a, stage);
  for (int d = 0; d < r; d++)
    ti[d + 1] = t[d];
  Expr **gi = ARENA_ARRAY(w->a, Expr *, R);
  Expr *in = NULL;
  for (int d = 0; d < R; d++) {
    int td = region_tile_dim(gr, r, d);
    gi[d] = td < 0 ? ex_clone(w->a, gr->origin[d])
                   : ex_add(w->a, ex_clone(w->a, gr->origin[d]), ex_clone(w->a, t[td]));
    if (rows_masked && d < R - 1) {
      gi[d] = lw_var(w, lw_let(w, &body, "g", gi[d]));
      in = lw_and(w, in, lw_in_range(w, gi[d], G->shape[d]));
    }
  }
  Stmt *cp = lw_cp_async(w, tb, ti, r + 1, gr->buf, gi, 16, vec, loc);
  if (in) {
    int inv = lw_let(w, &body, "in", in);
    for (int d = 0; d < R - 1; d++)
      cp->src_idx[d] = ex_select(w->a, lw_var(w, inv), gi[d], lw_i32(w, 0));
    cp->src_bytes = ex_select(w->a, lw_var(w, inv), lw_i32(w, 16), lw_i32(w, 0));
  }
  stlist_push(w->a, &body, cp);
  Stmt *inner = stlist_seq(w->a, &body, loc);
  if ((int64_t)chunks * w->k->nthreads != vectors)
    inner = lw_if(w, lw_bin(w, OP_LT, base, lw_i32(w, buffer_elems(tile))), inner, NULL);
  return rows_masked ? lw_rolled(w, c, chunks, inner) : lw_chunk_loop(w, c, chunks, inner, false);
}

/* One producer copy for iteration `iter` into stage `stage`, spread over the
 * block's threads in 16-byte vectors (cp.async where possible). */
static Stmt *produce(Lw *w, const Stmt *copy, int loop_var, Expr *iter, Expr *stage)
{
  Stage st = {w, NULL, NULL, loop_var, iter, true};
  Region gr = copy->src;
  gr.origin = ARENA_ARRAY(w->a, Expr *, gr.rank);
  for (int d = 0; d < gr.rank; d++)
    gr.origin[d] = expr_rewrite(ex_clone(w->a, copy->src.origin[d]), subst_iter, &st);
  const Buffer *G = &w->k->bufs[gr.buf], *T = &w->k->bufs[copy->dst.buf];
  /* T is already staged: its tile is T's shape without the stage dimension. */
  Buffer slice = *T;
  slice.rank = T->rank - 1;
  for (int d = 0; d < slice.rank; d++)
    slice.tile_shape[d] = T->tile_shape[d + 1];
  int vec = lw_coop_vec(&slice, G->elem);
  /* cp.async moves 16 contiguous bytes: a tile whose rows run along the tensor's last dimension */
  bool async = G->elem == T->elem && vec * type_bytes(T->elem) == 16 && buffer_inner_unit(G) &&
               region_span(&gr, slice.rank, slice.rank - 1) == G->rank - 1;
  int64_t total = buffer_elems(&slice);
  int64_t vectors = (total + vec - 1) / vec;
  int chunks = (int)((vectors + w->k->nthreads - 1) / w->k->nthreads);
  bool guard = (int64_t)chunks * w->k->nthreads != vectors;
  StmtList body = {0};
  int c = lw_fresh(w, "c", VAR_LOOP);
  Expr *base = lw_bin(
      w, OP_MUL, lw_bin(w, OP_ADD, ex_mul(w->a, lw_var(w, c), lw_i32(w, w->k->nthreads)), lw_var(w, w->tid)),
      lw_i32(w, vec));
  int basev = lw_let(w, &body, "base", ex_clone(w->a, base));
  Expr *t[TL_MAX_RANK];
  lw_coords(w, slice.tile_shape, slice.rank, lw_var(w, basev), t);
  for (int d = 0; d < slice.rank; d++)
    t[d] = lw_var(w, lw_let(w, &body, "t", t[d]));
  lw_copy_vector(w, &body, true, &gr, copy->dst.buf, NULL, t, vec, stage, async, copy->loc);
  Stmt *inner = stlist_seq(w->a, &body, copy->loc);
  if (guard)
    inner = lw_if(w, lw_bin(w, OP_LT, ex_clone(w->a, base), lw_i32(w, total)), inner, NULL);
  if (!async)
    return lw_chunk_loop(w, c, chunks, inner, false);
  /* Edge tiles only: a run-time loop, whose per-vector addresses and tests
   * are not all kept alive across the K loop (about 110 registers of the
   * default matmul were this path's, unrolled and hoisted). */
  Stmt *checked = lw_rolled(w, c, chunks, inner);
  /* A tile of a 2-D tensor (a GEMM operand) over the edge along its rows only: one row test per
   * vector (H100: through the edge path, gemm_w8a16 took 1.8x as long at M = 1 as at M = 16;
   * results/h100-2026-12-06-s35, -s36).  Not for attention's 4-D tensors: the third tier made
   * attention_fwd_bshd at D = 256, causal, spill 24 bytes on sm_90a. */
  if (G->rank == 2)
    checked = lw_if(w, interior(w, &gr, &slice, vec, true),
                    produce_interior(w, &gr, copy->dst.buf, &slice, vec, stage, true, copy->loc), checked);
  return lw_if(w, interior(w, &gr, &slice, vec, false),
               produce_interior(w, &gr, copy->dst.buf, &slice, vec, stage, false, copy->loc), checked);
}

static Stmt *produce_all(Lw *w, StmtList *producers, int loop_var, Expr *iter, Expr *stage)
{
  StmtList l = {0};
  for (int i = 0; i < producers->n; i++)
    stlist_push(w->a, &l, produce(w, producers->items[i], loop_var, iter, stage));
  return stlist_seq(w->a, &l, NO_LOC);
}

/* cp.async.commit_group, cp.async.wait_group PENDING, fence.proxy.async */
static Stmt *async_stmt(Lw *w, StmtKind kind, int pending)
{
  Stmt *s = st_new(w->a, kind, NO_LOC);
  s->pending = pending;
  return s;
}

/* One fetch of the prologue, for iteration (and stage) p: if p < n { produce(p) } commit. */
static void prologue_fetch(Lw *w, StmtList *out, StmtList *producers, int kv, Expr *p, int n)
{
  Stmt *issue = produce_all(w, producers, kv, ex_clone(w->a, p), ex_clone(w->a, p));
  stlist_push(w->a, out, lw_if(w, lw_bin(w, OP_LT, p, lw_var(w, n)), issue, NULL));
  stlist_push(w->a, out, async_stmt(w, ST_CP_COMMIT, 0));
}

/* The loop body's leading producer copies and the consumers after them;
 * false (reported) if a producer comes after a consumer. */
static bool split_body(Lw *w, Stmt *s, StmtList *producers, StmtList *consumers)
{
  Kernel *k = w->k;
  StmtList all = {0};
  flatten(w->a, s->then_s, &all);
  int i = 0;
  for (; i < all.n && is_producer(k, all.items[i]); i++)
    stlist_push(w->a, producers, all.items[i]);
  for (; i < all.n; i++) {
    if (is_producer(k, all.items[i])) {
      error_at(w->pc->diags, all.items[i]->loc,
               "in a pipelined loop, the copies of global tiles into shared "
               "memory must be the loop's first statements (write their origins "
               "in terms of the loop variable, without a let before them)");
      return false;
    }
    stlist_push(w->a, consumers, all.items[i]);
  }
  return true;
}

/* Gives each tile a producer fills S copies (a leading stage dimension) and
 * marks it in staged[]; *reused: a tile an earlier pipelined loop staged.
 * False (reported) if a tile cannot be staged. */
static bool stage_tiles(Lw *w, const Stmt *s, const StmtList *producers, int S, bool *staged, bool *reused)
{
  Kernel *k = w->k;
  for (int p = 0; p < producers->n; p++) {
    int b = producers->items[p]->dst.buf;
    if (staged[b]) {
      error_at(w->pc->diags, producers->items[p]->loc, "'%s' is filled twice in one pipelined iteration",
               k->bufs[b].name);
      return false;
    }
    /* (Used outside the loop: lw_check_pipelined_tiles reported it before anything was lowered.) */
    staged[b] = true;
    Buffer *B = &k->bufs[b];
    if (B->stages) { /* staged by an earlier pipelined loop of S stages */
      *reused = true;
      continue;
    }
    if (B->rank >= TL_MAX_RANK) {
      error_at(w->pc->diags, B->loc, "'%s' has too many dimensions to be staged by a pipelined loop",
               B->name);
      return false;
    }
    for (int d = B->rank; d > 0; d--) {
      B->tile_shape[d] = B->tile_shape[d - 1];
      B->shape[d] = B->shape[d - 1];
    }
    B->tile_shape[0] = S;
    B->shape[0] = lw_i32(w, S);
    B->rank++;
    B->stages = S;
  }
  return true;
}

/* The consumers' trailing wgmma waits, taken off `use` (a sequence) into
 * `waits`: the multiplies are issued before the fetch, waited for after it. */
static int split_waits(Lw *w, Stmt *use, StmtList *waits)
{
  int nwait = 0;
  if (use->kind == ST_SEQ)
    while (nwait < use->nbody && use->body[use->nbody - 1 - nwait]->kind == ST_WGMMA_WAIT)
      nwait++;
  use->nbody -= nwait;
  for (int i = 0; i < nwait; i++)
    stlist_push(w->a, waits, use->body[use->nbody + i]);
  return nwait;
}

/* One iteration of the steady state, after its lets (in `it`): wait for the
 * stage, publish it, fetch S - 1 ahead, consume. */
static void steady_iteration(Lw *w, StmtList *it, int S, bool proxy, Stmt *issue, Stmt *use)
{
  if (S == 1) {
    /* One buffer: fetch, wait, publish, compute, and wait for every reader
     * before the next fetch overwrites it. */
    stlist_push(w->a, it, issue);
    stlist_push(w->a, it, async_stmt(w, ST_CP_COMMIT, 0));
    stlist_push(w->a, it, async_stmt(w, ST_CP_WAIT, 0));
    if (proxy)
      stlist_push(w->a, it, async_stmt(w, ST_FENCE_PROXY_ASYNC, 0));
    stlist_push(w->a, it, lw_barrier(w));
    stlist_push(w->a, it, use);
    stlist_push(w->a, it, lw_barrier(w));
    return;
  }
  /* One barrier per iteration: it publishes stage k (after this thread's
   * wait) and also proves that every thread finished iteration k-1, whose
   * stage, (k-1) % S = (k+S-1) % S, is the one the fetch then refills. */
  stlist_push(w->a, it, async_stmt(w, ST_CP_WAIT, S - 2));
  if (proxy)
    stlist_push(w->a, it, async_stmt(w, ST_FENCE_PROXY_ASYNC, 0));
  stlist_push(w->a, it, lw_barrier(w));
  /* wgmma runs asynchronously until its wait: when the consumers end in
   * wgmma waits, issue the multiplies first and the fetch while they run
   * (the fetch refills the stage of iteration k-1, which every thread,
   * wait included, finished before the barrier). */
  StmtList waits = {0};
  int nwait = split_waits(w, use, &waits);
  if (nwait)
    stlist_push(w->a, it, use);
  stlist_push(w->a, it, issue);
  stlist_push(w->a, it, async_stmt(w, ST_CP_COMMIT, 0));
  for (int i = 0; i < waits.n; i++)
    stlist_push(w->a, it, waits.items[i]);
  if (!nwait)
    stlist_push(w->a, it, use);
}

/* for v in serial(extent) { it }: the steady state of either form, and the fused loop. */
static Stmt *steady_loop(Lw *w, int v, Expr *extent, StmtList *it, SrcLoc loc)
{
  Stmt *loop = st_new(w->a, ST_FOR, loc);
  loop->for_kind = FOR_SERIAL;
  loop->nvars = 1;
  loop->vars[0] = v;
  loop->extents[0] = extent;
  loop->then_s = stlist_seq(w->a, it, loc);
  return loop;
}

/* The fallback beside a TMA form with S >= 4 stages: prologue and steady
 * state as one loop over j, whose consumers run iteration k = j - (S - 1)
 * (see the top of this file).  NULL (reported) as lower_on_stage. */
static Stmt *fused_loop(Lw *w, StmtList *producers, StmtList *consumers, bool *staged, bool proxy, int kv,
                        int n, int S, SrcLoc loc)
{
  int j = lw_fresh(w, "j", VAR_LOOP);
  StmtList head = {0}, it = {0}, waits = {0};
  int k = lw_let(w, &head, w->k->vars[kv].name, lw_bin(w, OP_SUB, lw_var(w, j), lw_i32(w, S - 1)));
  int stage = lw_let(w, &head, "stage", lw_bin(w, OP_MOD, lw_var(w, k), lw_i32(w, S)));
  Stage st = {w, NULL, NULL, kv, lw_var(w, k), true};
  for (int i = 0; i < consumers->n; i++)
    stmt_rewrite_exprs(consumers->items[i], subst_iter, &st);
  Stmt *use = lower_on_stage(w, staged, lw_var(w, stage), consumers, loc);
  if (!use)
    return NULL;
  split_waits(w, use, &waits);
  stlist_push(w->a, &head, async_stmt(w, ST_CP_WAIT, S - 2));
  if (proxy)
    stlist_push(w->a, &head, async_stmt(w, ST_FENCE_PROXY_ASYNC, 0));
  stlist_push(w->a, &head, lw_barrier(w));
  stlist_push(w->a, &head, use);
  Expr *consuming = lw_bin(w, OP_GE, lw_var(w, j), lw_i32(w, S - 1));
  stlist_push(w->a, &it, lw_if(w, consuming, stlist_seq(w->a, &head, loc), NULL));
  Stmt *issue = produce_all(w, producers, kv, lw_var(w, j), lw_bin(w, OP_MOD, lw_var(w, j), lw_i32(w, S)));
  stlist_push(w->a, &it, lw_if(w, lw_bin(w, OP_LT, lw_var(w, j), lw_var(w, n)), issue, NULL));
  stlist_push(w->a, &it, async_stmt(w, ST_CP_COMMIT, 0));
  for (int i = 0; i < waits.n; i++)
    stlist_push(w->a, &it, waits.items[i]);
  return steady_loop(w, j, ex_add(w->a, lw_var(w, n), lw_i32(w, S - 1)), &it, loc);
}

/* ---------------------------------------------------------------- TMA (sm_90a)
 *
 * When every producer copies a 16-bit (or 8-bit) global tile into a shared tile
 * in a wgmma layout (SWIZZLE_128B, _64B or _32B: what wgmma reads) and every
 * gemm among the consumers is lowered to wgmma, the copy engine fills the stages instead
 * of the threads: one thread issues a cp.async.bulk.tensor per panel of each
 * tile (the box [R, P], P = 64, 32 or 16 columns of 16 bits, twice as many of
 * 8, lands in the panel exactly as the
 * layout places it when the map's swizzle has the layout's span; elements
 * outside the tensor are zeros), and mbarriers replace the block-wide barrier:
 *
 *   tid 0: init full[s] (1 arrival), empty[s] (every thread), s < S; fence; barrier
 *   tid 0: for p in 0 .. S-2: if p < n { fill(p) }                   prologue
 *   for k in 0 .. n-1:
 *       wait full[k % S], parity (k / S) % 2     -- stage k landed
 *       wgmma on stage k; commit; wgmma.wait 1   -- the multiplies of k-1 are done
 *       if k >= 1: arrive empty[(k-1) % S]       -- this thread no longer reads stage k-1
 *       if tid == 0 and k + S-1 < n:
 *           if k >= 1: wait empty[(k-1) % S], parity ((k-1) / S) % 2
 *           fill(k + S-1)                        -- into stage (k-1) % S
 *   wgmma.wait 0
 *
 * fill(i): arrive.expect_tx(full[i % S], the tiles' bytes), then the loads.
 * The tensor maps are hidden parameters, with a flag the host sets when it
 * could make them (docs/abi.md): the kernel runs this loop if the flag is set,
 * the cp.async one otherwise (a pointer or row stride the copy engine cannot
 * take, a host without the driver's encoder).
 *
 * Other consumers (statements that are not gemms: FlashAttention's softmax
 * between its two gemms) take the same form with the consumers' statements
 * as written, each gemm ending in wgmma.wait 0, and the iteration releasing
 * its own stage at its end (arrive empty[k % S]) instead of the previous one
 * after wgmma.wait 1.  The refill and its wait are unchanged: thread 0 refills
 * stage (k-1) % S, which iteration k-1 released. */

/* Can pipelined loop s fill its stages with TMA (see above)?  Asked before staging.  *general:
 * some consumers are not gemms (see "Other consumers" below). */
static bool tma_eligible(Lw *w, const Stmt *s, const StmtList *producers, const StmtList *consumers,
                         bool *general)
{
  const Kernel *k = w->k;
  if (w->pc->target->sm != 90 || !w->pc->target->arch_specific || s->stages < 2 || !consumers->n)
    return false;
  for (int i = 0; i < producers->n; i++) {
    const Stmt *p = producers->items[i];
    const Buffer *G = &k->bufs[p->src.buf], *T = &k->bufs[p->dst.buf];
    int span = swizzle_span(T->swizzle);
    if (T->stages || !buffer_inner_unit(G) || G->elem != T->elem || type_bytes(T->elem) > 2 || !span ||
        T->rank != 2 || G->rank < 2 || G->rank > 5 || p->src.rank != G->rank ||
        region_span(&p->src, 2, 1) != G->rank - 1 || T->tile_shape[1] % (span / type_bytes(T->elem)) ||
        T->tile_shape[0] % 8 || T->tile_shape[0] > 256)
      return false;
  }
  *general = false;
  int wgmmas = 0;
  for (int i = 0; i < consumers->n; i++) {
    const Stmt *c = consumers->items[i];
    if (c->kind != ST_GEMM) {
      *general = true;
      continue;
    }
    if (!lw_gemm_uses_wgmma(w, c))
      return false;
    wgmmas++;
  }
  return wgmmas > 0;
}

static Stmt *mbar_stmt(Lw *w, StmtKind kind, int bar, Expr *idx, Expr *value)
{
  Stmt *s = st_new(w->a, kind, NO_LOC);
  s->bar = bar;
  s->bar_idx = idx;
  s->value = value;
  return s;
}

/* wait full[g % S]: the copies of iteration g (counted over every run) have landed */
static Stmt *wait_full(Lw *w, int mbar, Expr *g, int S)
{
  return mbar_stmt(w, ST_MBAR_WAIT, mbar, lw_mod_c(w, g, S),
                   lw_mod_c(w, lw_div_c(w, ex_clone(w->a, g), S), 2));
}

/* arrive on empty[stage]: this thread no longer reads that stage */
static Stmt *release(Lw *w, int mbar, Expr *stage, int S)
{
  return mbar_stmt(w, ST_MBAR_ARRIVE, mbar, lw_add(w, stage, lw_i32(w, S)), NULL);
}

/* In iteration kv (g counted over every run): if kv >= 1, release stage (g - 1) % S. */
static void release_previous(Lw *w, StmtList *it, int kv, int g, int S, int mbar)
{
  Expr *prev = lw_mod_c(w, lw_add(w, lw_var(w, g), lw_i32(w, S - 1)), S); /* (g-1) % S */
  stlist_push(w->a, it,
              lw_if(w, lw_bin(w, OP_GE, lw_var(w, kv), lw_i32(w, 1)), release(w, mbar, prev, S), NULL));
}

/* After a run of n iterations (base: the count before it, or -1 for 0): if n >= 1, release the
 * run's last stage, (base + n - 1) % S. */
static void release_last(Lw *w, StmtList *out, int base, int n, int S, int mbar)
{
  Expr *count = base < 0 ? lw_var(w, n) : lw_add(w, lw_var(w, base), lw_var(w, n));
  Expr *last = lw_mod_c(w, lw_add(w, count, lw_i32(w, -1)), S);
  stlist_push(w->a, out,
              lw_if(w, lw_bin(w, OP_GE, lw_var(w, n), lw_i32(w, 1)), release(w, mbar, last, S), NULL));
}

static Stmt *wgmma_wait(Lw *w, int acc, int pending)
{
  return lw_wgmma_stmt(w, ST_WGMMA_WAIT, acc, w->k->bufs[acc].layout.regs, pending);
}

/* fill(iter): expect the tiles' bytes on full[stage], then one TMA load per
 * panel of each producer's tile. */
static Stmt *tma_fill(Lw *w, const StmtList *producers, int loop_var, Expr *iter, Expr *stage, int mbar)
{
  Kernel *k = w->k;
  StmtList out = {0};
  int64_t bytes = 0;
  for (int i = 0; i < producers->n; i++) {
    const Buffer *T = &k->bufs[producers->items[i]->dst.buf];
    bytes += T->tile_shape[1] * T->tile_shape[2] * type_bytes(T->elem); /* staged: [S, R, C] */
  }
  stlist_push(w->a, &out, mbar_stmt(w, ST_MBAR_EXPECT_TX, mbar, lw_clone(w, stage), lw_i32(w, bytes)));
  Stage st = {w, NULL, NULL, loop_var, iter, true};
  for (int i = 0; i < producers->n; i++) {
    const Stmt *p = producers->items[i];
    const Buffer *G = &k->bufs[p->src.buf], *T = &k->bufs[p->dst.buf];
    int R = G->rank;
    int64_t panel = swizzle_span(T->swizzle) / type_bytes(T->elem);
    int map = lw_tma_map(w, &p->src, T->tile_shape[1], panel);
    for (int64_t c = 0; c < T->tile_shape[2]; c += panel) {
      Stmt *t = st_new(w->a, ST_TMA_LOAD, p->loc);
      t->tmap = map;
      t->buf = p->dst.buf;
      t->nidx = 3;
      t->idx = ARENA_ARRAY(w->a, Expr *, 3);
      t->idx[0] = lw_clone(w, stage);
      t->idx[1] = lw_i32(w, 0);
      t->idx[2] = lw_i32(w, c);
      t->src_buf = p->src.buf;
      t->nsrc_idx = R;
      t->src_idx = ARENA_ARRAY(w->a, Expr *, R);
      for (int d = 0; d < R; d++) {
        Expr *o = expr_rewrite(ex_clone(w->a, p->src.origin[d]), subst_iter, &st);
        t->src_idx[d] = d == R - 1 ? lw_add(w, o, lw_i32(w, c)) : o;
      }
      t->bar = mbar;
      t->bar_idx = lw_clone(w, stage);
      stlist_push(w->a, &out, t);
    }
  }
  return stlist_seq(w->a, &out, NO_LOC);
}

/* mbarrier.init full[s] (1 arrival: the expect_tx), empty[s] (every consumer
 * thread), s < S; then the fence that shows the inits to the copy engine. */
static Stmt *tma_setup(Lw *w, int mbar, int S, int consumers)
{
  StmtList init = {0};
  for (int i = 0; i < S; i++) {
    stlist_push(w->a, &init, mbar_stmt(w, ST_MBAR_INIT, mbar, lw_i32(w, i), lw_i32(w, 1)));
    stlist_push(w->a, &init, mbar_stmt(w, ST_MBAR_INIT, mbar, lw_i32(w, S + i), lw_i32(w, consumers)));
  }
  stlist_push(w->a, &init, async_stmt(w, ST_FENCE_PROXY_ASYNC, 0));
  return stlist_seq(w->a, &init, NO_LOC);
}

/* ---------------------------------------------------------------- the last gemm deferred
 *
 * In the general form each gemm waits for itself, so the tensor cores idle
 * while the statements between the gemms run (FlashAttention's softmax
 * between S = Q K^T and O += P V).  With pipelined(..., overlap = 1), when
 * the consumers end in a gemm G whose operands only some statements use
 * (the late ones, below), and an earlier gemm F is not among those, the
 * loop is rotated so that G of iteration k multiplies while iteration k+1's
 * statements that need only F's result run (FlashAttention-3's overlap
 * within a warpgroup):
 *
 *   if n >= 1: wait full[0]; early statements before F; F
 *   wgmma.wait 0                                 -- F of iteration 0 done
 *   for k in 0 .. n-1:
 *       early statements after F                 -- F of k is done, G of k-1 may run
 *       wgmma.wait 0                             -- G of k-1 done
 *       if k >= 1: arrive empty[(k-1) % S]
 *       late statements
 *       (the TMA form's refill)
 *       if k+1 < n: wait full[(k+1) % S]; early statements before F; F of k+1
 *       G on stage k % S
 *       wgmma.wait 1                             -- F of k+1 done, G of k runs on
 *   wgmma.wait 0; if n >= 1: arrive empty[(n-1) % S]
 *
 * Every wait sits on every path: ptxas serializes all of a kernel's wgmmas
 * where some path may touch an accumulator in flight (C7514, C7515), and it
 * behaved as if an empty commit group were no group (an empty one before the
 * loop for "G of iteration -1" got C7514), so iteration 0's F is waited for
 * in full before the loop.  A statement is late when it uses G's
 * operands (FlashAttention: P's cast, O's rescale), when it shares a buffer
 * with an earlier late statement (so no statement moves past one it
 * depends on), or when it defines a variable after a late statement (from
 * then on every statement is late).  The statements before F appear twice
 * (before the loop and in it), so they may not define variables. */

typedef struct {
  StmtList before, after, late; /* early statements before F and after it; late statements */
  Stmt *first, *last;           /* F and G */
} Overlap;

static bool defines_var(const Stmt *s, const void *ctx)
{
  (void)ctx;
  return s->kind == ST_LET || s->kind == ST_ASSIGN;
}

static bool defines_vars(const Stmt *s) { return stmt_any(s, defines_var, NULL); }

static bool share_buffer(const Kernel *k, const Stmt *x, const Stmt *y)
{
  for (int b = 0; b < k->nbufs; b++)
    if (stmt_uses(k, x, NULL, b, 0) && stmt_uses(k, y, NULL, b, 0))
      return true;
  return false;
}

/* Sorts the consumers c (see above); false, with *why, where the loop cannot be rotated. */
static bool plan_overlap(Lw *w, const StmtList *c, Overlap *ov, const char **why)
{
  const Kernel *k = w->k;
  *ov = (Overlap){0};
  *why = "its body does not end in a gemm";
  if (c->n < 2 || c->items[c->n - 1]->kind != ST_GEMM)
    return false;
  Stmt *g = ov->last = c->items[c->n - 1];
  bool *late = ARENA_ARRAY(w->a, bool, c->n);
  bool any_late = false, ordered = false, other_gemm = false;
  for (int i = 0; i < c->n - 1; i++) {
    Stmt *s = c->items[i];
    other_gemm |= s->kind == ST_GEMM;
    bool l = ordered || stmt_uses(k, s, NULL, g->a, 0) || stmt_uses(k, s, NULL, g->b, 0) ||
             stmt_uses(k, s, NULL, g->c, 0) || (any_late && defines_vars(s));
    for (int j = 0; j < i && !l; j++)
      l = late[j] && share_buffer(k, s, c->items[j]);
    late[i] = l;
    any_late |= l;
    ordered |= l && defines_vars(s);
    if (l)
      stlist_push(w->a, &ov->late, s);
    else if (!ov->first && s->kind == ST_GEMM)
      ov->first = s;
    else if (!ov->first && defines_vars(s)) {
      *why = "a statement before its first gemm defines a variable";
      return false;
    } else
      stlist_push(w->a, ov->first ? &ov->after : &ov->before, s);
  }
  /* A dequantizing GEMM's loop: docs/language.md, "A register A operand is not refilled under its
   * multiply". */
  *why = other_gemm ? "no gemm before the last one leaves the last one's operands alone"
                    : "its last gemm is its only one, so nothing of the next iteration can run under it";
  return ov->first != NULL;
}

/* A lowered statement without its wgmma waits. */
static Stmt *issue_only(Lw *w, Stmt *lowered)
{
  StmtList flat = {0}, out = {0};
  flatten(w->a, lowered, &flat);
  for (int j = 0; j < flat.n; j++)
    if (flat.items[j]->kind != ST_WGMMA_WAIT)
      stlist_push(w->a, &out, flat.items[j]);
  return stlist_seq(w->a, &out, NO_LOC);
}

/* wait full[g % S]; then the statements before F and F (issued, not waited for), copies of
 * them for iteration `iter` (the loop variable kv replaced) on stage g % S. */
static Stmt *overlap_start(Lw *w, const Overlap *ov, int kv, Expr *iter, Expr *g, int S, int mbar,
                           bool *staged)
{
  StmtList l = {0}, c = {0};
  Expr *stage = lw_mod_c(w, ex_clone(w->a, g), S);
  stlist_push(w->a, &l, wait_full(w, mbar, g, S));
  Stage st = {w, NULL, NULL, kv, iter, true};
  for (int i = 0; i <= ov->before.n; i++) {
    Stmt *s = st_clone(w->a, i < ov->before.n ? ov->before.items[i] : ov->first);
    stmt_rewrite_exprs(s, subst_iter, &st);
    stlist_push(w->a, &c, s);
  }
  stlist_push(w->a, &l, issue_only(w, lower_on_stage(w, staged, ex_clone(w->a, stage), &c, NO_LOC)));
  return stlist_seq(w->a, &l, NO_LOC);
}

/* The rotated loop's parts (see above): its head (before the loop), its iteration kv (appended
 * to it; end: after the TMA form's refill) and its tail (after the loop).  g: the iteration
 * counted over every run, stage = g % S; n: the run's trip count; base: the count before the
 * run, or -1. */
static void overlap_consume(Lw *w, StmtList *it, Overlap *ov, int kv, int g, int stage, int n, int base,
                            int S, int mbar, bool *staged, Stmt **head, Stmt **end, Stmt **tail)
{
  int acc_f = ov->first->c, acc_g = ov->last->c;
  Expr *g0 = base < 0 ? lw_i32(w, 0) : lw_var(w, base);
  StmtList h = {0};
  stlist_push(w->a, &h,
              lw_if(w, lw_bin(w, OP_GE, lw_var(w, n), lw_i32(w, 1)),
                    overlap_start(w, ov, kv, lw_i32(w, 0), g0, S, mbar, staged), NULL));
  stlist_push(w->a, &h, wgmma_wait(w, acc_f, 0));
  *head = stlist_seq(w->a, &h, NO_LOC);

  if (ov->after.n)
    stlist_push(w->a, it, lower_on_stage(w, staged, lw_var(w, stage), &ov->after, NO_LOC));
  stlist_push(w->a, it, wgmma_wait(w, acc_g, 0));
  release_previous(w, it, kv, g, S, mbar);
  if (ov->late.n)
    stlist_push(w->a, it, lower_on_stage(w, staged, lw_var(w, stage), &ov->late, NO_LOC));

  StmtList e = {0};
  Expr *k1 = lw_add(w, lw_var(w, kv), lw_i32(w, 1));
  stlist_push(w->a, &e,
              lw_if(w, lw_bin(w, OP_LT, ex_clone(w->a, k1), lw_var(w, n)),
                    overlap_start(w, ov, kv, k1, lw_add(w, lw_var(w, g), lw_i32(w, 1)), S, mbar, staged),
                    NULL));
  StmtList gl = {0};
  stlist_push(w->a, &gl, ov->last);
  stlist_push(w->a, &e, issue_only(w, lower_on_stage(w, staged, lw_var(w, stage), &gl, NO_LOC)));
  stlist_push(w->a, &e, wgmma_wait(w, acc_f, 1));
  *end = stlist_seq(w->a, &e, NO_LOC);

  StmtList t = {0};
  stlist_push(w->a, &t, wgmma_wait(w, acc_g, 0));
  release_last(w, &t, base, n, S, mbar);
  *tail = stlist_seq(w->a, &t, NO_LOC);
}

/* The consumers' part of iteration kv, appended to it: wait for the stage,
 * multiply, release the previous stage once its multiplies are done.  The
 * accumulators the gemms use go to accs[*naccs] (for the final waits).
 *
 * Other consumers (general: gemms is every consumer statement, a copy of its
 * own): the statements run as they were written, each gemm ending in its own
 * wgmma.wait 0 (softmax reads S = Q K^T right after its gemm), and the
 * iteration ends by releasing its own stage, which nothing reads any more. */
static void tma_consume(Lw *w, StmtList *it, int kv, int base, int n, int S, int mbar, StmtList *gemms,
                        bool *staged, int *accs, int *naccs, bool general, int overlap, Stmt *parts[3])
{
  /* g: the iteration counted over every run of the loop (base: the count before this run, or -1) */
  int g = base < 0 ? kv : lw_let(w, it, "g", lw_add(w, lw_var(w, base), lw_var(w, kv)));
  int stage = lw_let(w, it, "stage", lw_mod_c(w, lw_var(w, g), S));
  *naccs = 0;
  parts[0] = parts[1] = parts[2] = NULL;
  Overlap ov;
  const char *why;
  if (general && overlap && plan_overlap(w, gemms, &ov, &why)) {
    overlap_consume(w, it, &ov, kv, g, stage, n, base, S, mbar, staged, &parts[0], &parts[1], &parts[2]);
    return;
  }
  stlist_push(
      w->a, it,
      mbar_stmt(w, ST_MBAR_WAIT, mbar, lw_var(w, stage), lw_mod_c(w, lw_div_c(w, lw_var(w, g), S), 2)));
  if (general) { /* the cp.async form staged the originals first: no error is left to report */
    stlist_push(w->a, it, lower_on_stage(w, staged, lw_var(w, stage), gemms, NO_LOC));
    stlist_push(w->a, it, release(w, mbar, lw_var(w, stage), S));
    return;
  }
  for (int i = 0; i < gemms->n; i++) {
    Stmt *g = gemms->items[i];
    if (staged[g->a])
      g->stage_a = lw_var(w, stage);
    if (staged[g->b])
      g->stage_b = lw_var(w, stage);
    StmtList flat = {0};
    flatten(w->a, lw_lower_stmt(w, g), &flat);
    for (int j = 0; j < flat.n; j++)
      if (flat.items[j]->kind != ST_WGMMA_WAIT)
        stlist_push(w->a, it, flat.items[j]);
    bool seen = false;
    for (int j = 0; j < *naccs; j++)
      seen |= accs[j] == g->c;
    if (!seen && *naccs < 16)
      accs[(*naccs)++] = g->c;
  }
  for (int j = 0; j < *naccs; j++)
    stlist_push(w->a, it, wgmma_wait(w, accs[j], 1));
  release_previous(w, it, kv, g, S, mbar);
}

/* The consumers' loop over iteration body it, appended to out: with the rotated loop's parts
 * (tma_consume's parts[3], or NULL), its head before the loop, its end at the end of each
 * iteration, its tail after the loop. */
static void consumer_loop(Lw *w, StmtList *out, StmtList *it, Stmt *parts[3], int kv, int n, SrcLoc loc)
{
  if (parts[1])
    stlist_push(w->a, it, parts[1]);
  if (parts[0])
    stlist_push(w->a, out, parts[0]);
  stlist_push(w->a, out, steady_loop(w, kv, lw_var(w, n), it, loc));
  if (parts[2])
    stlist_push(w->a, out, parts[2]);
}

static void tma_final_waits(Lw *w, StmtList *out, const int *accs, int naccs)
{
  for (int j = 0; j < naccs; j++)
    stlist_push(w->a, out, wgmma_wait(w, accs[j], 0));
}

/* The TMA form of pipelined loop s (see above); gemms: its consumers, not yet
 * staged; *mbar: the barriers' buffer it made. */
static Stmt *tma_pipeline(Lw *w, const Stmt *s, const StmtList *producers, StmtList *gemms, bool *staged,
                          bool reused, bool general, int *mbar_out)
{
  Kernel *k = w->k;
  int S = s->stages, kv = s->vars[0];
  int mbar = lw_new_buffer(w, "mbar", SCOPE_SHARED, TY_U64, 2 * (int64_t)S); /* full[S], empty[S] */
  *mbar_out = mbar;
  Expr *tid0 = lw_bin(w, OP_EQ, lw_var(w, w->tid), lw_i32(w, 0));
  StmtList out = {0};
  if (reused || w->loops) /* every thread is done with the barriers' last phases */
    stlist_push(w->a, &out, lw_barrier(w));
  stlist_push(w->a, &out, lw_if(w, ex_clone(w->a, tid0), tma_setup(w, mbar, S, k->nthreads), NULL));
  stlist_push(w->a, &out, lw_barrier(w));
  int n = lw_let(w, &out, "n", ex_clone(w->a, s->extents[0]));
  StmtList pro = {0};
  for (int p = 0; p < S - 1; p++)
    stlist_push(w->a, &pro,
                lw_if(w, lw_bin(w, OP_LT, lw_i32(w, p), lw_var(w, n)),
                      tma_fill(w, producers, kv, lw_i32(w, p), lw_i32(w, p), mbar), NULL));
  stlist_push(w->a, &out, lw_if(w, ex_clone(w->a, tid0), stlist_seq(w->a, &pro, NO_LOC), NULL));

  StmtList it = {0};
  int accs[16], naccs;
  Stmt *parts[3]; /* the rotated loop's head, iteration end and tail, or NULL */
  tma_consume(w, &it, kv, -1, n, S, mbar, gemms, staged, accs, &naccs, general, s->overlap, parts);
  int next = lw_let(w, &it, "next", lw_add(w, lw_var(w, kv), lw_i32(w, S - 1)));
  Expr *after_first = lw_bin(w, OP_GE, lw_var(w, kv), lw_i32(w, 1));
  Expr *prev = lw_mod_c(w, lw_add(w, lw_var(w, kv), lw_i32(w, S - 1)), S); /* (k-1) % S */
  StmtList fill = {0};
  Expr *parity = lw_mod_c(w, lw_div_c(w, lw_add(w, lw_var(w, kv), lw_i32(w, -1)), S), 2);
  stlist_push(w->a, &fill,
              lw_if(w, after_first,
                    mbar_stmt(w, ST_MBAR_WAIT, mbar, lw_add(w, ex_clone(w->a, prev), lw_i32(w, S)), parity),
                    NULL));
  stlist_push(w->a, &fill, tma_fill(w, producers, kv, lw_var(w, next), prev, mbar));
  stlist_push(w->a, &it,
              lw_if(w, lw_and(w, tid0, lw_bin(w, OP_LT, lw_var(w, next), lw_var(w, n))),
                    stlist_seq(w->a, &fill, NO_LOC), NULL));
  consumer_loop(w, &out, &it, parts, kv, n, s->loc);
  tma_final_waits(w, &out, accs, naccs);
  return stlist_seq(w->a, &out, s->loc);
}

/* ---------------------------------------------------------------- warp specialization
 *
 * The TMA form still has thread 0 stop its warpgroup to refill a stage (it
 * waits until every consumer released it).  Specialized, the block gains a
 * producer warpgroup whose one thread only fills stages, and the consumers
 * only multiply:
 *
 *   producer (tid == C, C the consumer threads):
 *       for i in 0 .. n-1:
 *           if i >= S: wait empty[i % S], parity (i / S + 1) % 2   -- iteration i - S released it
 *           fill(i)                                                 -- into stage i % S
 *   consumers:
 *       for k in 0 .. n-1: (tma_consume) wait full[k % S]; wgmma; wait 1; release k-1
 *       wgmma.wait 0
 *
 * Here the parts are built; warp_specialize.c places them in the kernel. */

static int count_pipelined(const Stmt *s)
{
  if (!s)
    return 0;
  int n = s->kind == ST_FOR && s->for_kind == FOR_PIPELINED;
  for (int i = 0; i < s->nbody; i++)
    n += count_pipelined(s->body[i]);
  return n + count_pipelined(s->then_s) + count_pipelined(s->else_s);
}

/* Is s body, or in it through sequences only? */
static bool top_level(const Stmt *body, const Stmt *s)
{
  if (body == s)
    return true;
  if (body->kind != ST_SEQ)
    return false;
  for (int i = 0; i < body->nbody; i++)
    if (top_level(body->body[i], s))
      return true;
  return false;
}

/* Is the loop s the kernel's one pipelined loop, directly in its body or in
 * the body of a serial loop there (a persistent kernel's loop over tiles),
 * in a block of whole warpgroups, one block per multiprocessor?  Two blocks
 * of C + 128 threads leave the accumulators fewer registers, so only when
 * the kernel asks for both (warp_specialize(2) and min_blocks_per_sm(2):
 * one block's epilogue runs while the other's tensor cores multiply).
 * Then the producer can be a role of its own for the whole kernel; *outer:
 * the serial loop, or NULL. */
static bool ws_possible(Lw *w, const Stmt *s, Stmt **outer)
{
  Kernel *k = w->k;
  *outer = NULL;
  if (k->warp_specialize < 0 || w->loops > 1 || k->nthreads % 128 || k->nthreads + 128 > 1024 ||
      k->min_blocks_per_sm > (k->warp_specialize == 2 ? 2 : 1) || count_pipelined(k->body) != 1)
    return false;
  if (!w->loops)
    return top_level(k->body, s);
  StmtList all = {0};
  flatten(w->a, k->body, &all);
  for (int i = 0; i < all.n; i++) {
    Stmt *l = all.items[i];
    if (l->kind == ST_FOR && l->for_kind == FOR_SERIAL && l->nvars == 1 && top_level(l->then_s, s)) {
      *outer = l;
      return true;
    }
  }
  return false;
}

/* Records the specialized form's parts in w (see above).  Inside the outer
 * loop the stages and parities continue from one run of the loop to the next:
 * each role counts the iterations it has done (w->ws_count[role], set to 0
 * before the outer loop), and the consumers release the last stage of a run
 * when they are done with it. */
static void ws_build(Lw *w, const Stmt *s, Stmt *outer, const StmtList *producers, StmtList *gemms,
                     bool *staged, bool general, int mbar)
{
  Kernel *k = w->k;
  int S = s->stages, kv = s->vars[0];
  w->ws_setup = tma_setup(w, mbar, S, k->nthreads);
  w->ws_outer = outer;
  int count[2] = {-1, -1};
  for (int r = 0; outer && r < 2; r++)
    count[r] = w->ws_count[r] = lw_fresh(w, r ? "done" : "filled", VAR_MUT);
  /* The producer's loop. */
  StmtList pro = {0}, it = {0};
  int n = lw_let(w, &pro, "n", ex_clone(w->a, s->extents[0]));
  int i = lw_fresh(w, "i", VAR_LOOP);
  int g = count[0] < 0 ? i : lw_let(w, &it, "g", lw_add(w, lw_var(w, count[0]), lw_var(w, i)));
  int stage = lw_let(w, &it, "stage", lw_mod_c(w, lw_var(w, g), S));
  Expr *parity = lw_mod_c(w, lw_add(w, lw_div_c(w, lw_var(w, g), S), lw_i32(w, 1)), 2);
  stlist_push(w->a, &it,
              lw_if(w, lw_bin(w, OP_GE, lw_var(w, g), lw_i32(w, S)),
                    mbar_stmt(w, ST_MBAR_WAIT, mbar, lw_add(w, lw_var(w, stage), lw_i32(w, S)), parity),
                    NULL));
  stlist_push(w->a, &it, tma_fill(w, producers, kv, lw_var(w, i), lw_var(w, stage), mbar));
  stlist_push(w->a, &pro, steady_loop(w, i, lw_var(w, n), &it, s->loc));
  if (count[0] >= 0)
    stlist_push(w->a, &pro, lw_assign(w, count[0], lw_add(w, lw_var(w, count[0]), lw_var(w, n))));
  w->ws_producer = stlist_seq(w->a, &pro, s->loc);
  /* The consumers' loop. */
  StmtList con = {0}, cit = {0};
  int cn = lw_let(w, &con, "n", ex_clone(w->a, s->extents[0]));
  int accs[16], naccs;
  Stmt *parts[3];
  tma_consume(w, &cit, kv, count[1], cn, S, mbar, gemms, staged, accs, &naccs, general, s->overlap, parts);
  consumer_loop(w, &con, &cit, parts, kv, cn, s->loc);
  tma_final_waits(w, &con, accs, naccs);
  if (count[1] >= 0) {
    /* the run's last stage is free once the multiplies are done (general: every iteration
     * released its own stage) */
    if (!general)
      release_last(w, &con, count[1], cn, S, mbar);
    stlist_push(w->a, &con, lw_assign(w, count[1], lw_add(w, lw_var(w, count[1]), lw_var(w, cn))));
  }
  w->ws_consumer = stlist_seq(w->a, &con, s->loc);
}

/* Is the body's one gemm its last consumer, with A in a 16-bit register fragment, on wgmma? */
static bool only_gemm_register_a(Lw *w, const StmtList *c)
{
  int gemms = 0;
  for (int i = 0; i < c->n; i++)
    gemms += c->items[i]->kind == ST_GEMM;
  return gemms == 1 && c->items[c->n - 1]->kind == ST_GEMM && lw_gemm_register_a(w, c->items[c->n - 1]);
}

/* lower_pipelined's forms of loop s: the cp.async form, and beside it (tma) the copy engine's
 * and (ws) the warp-specialized one. */
static Stmt *pipelined_forms(Lw *w, Stmt *s, StmtList producers, StmtList consumers, bool tma, bool ws,
                             bool general, Stmt *outer)
{
  Kernel *k = w->k;
  int S = s->stages;
  /* The TMA forms lower their own deep copies of the consumers (staging and lowering change them). */
  StmtList gemms = {0}, ws_gemms = {0};
  for (int i = 0; tma && i < consumers.n; i++)
    for (int f = 0; f < 1 + ws; f++)
      stlist_push(w->a, f ? &ws_gemms : &gemms, st_clone(w->a, consumers.items[i]));
  bool reused = false;
  const int nstaged = k->nbufs; /* staged[] covers these; lowering the consumers adds buffers */
  bool *staged = ARENA_ARRAY(w->a, bool, nstaged + 1);
  if (!stage_tiles(w, s, &producers, S, staged, &reused))
    return NULL;
  int kv = s->vars[0];
  StmtList out = {0};
  /* Inside another loop, or filling tiles an earlier pipelined loop read,
   * the prologue must wait until every thread is done reading them. */
  if (reused || w->loops)
    stlist_push(w->a, &out, lw_barrier(w));
  int n = lw_let(w, &out, "n", s->extents[0]);
  /* wgmma reads the stages through the async proxy: every thread fences its
   * completed copies (cp.async and element stores) for it before the barrier
   * that publishes them. */
  bool proxy = false;
  for (int b = 0; b < nstaged; b++)
    proxy |= staged[b] && swizzle_span(k->bufs[b].swizzle);
  if (tma && consumers.n && S > 3) {
    /* Beside a TMA form this one is the fallback for tensors the copy engine
     * cannot address: one loop, one copy of the fetch code (with S = 3, a
     * rolled prologue made stdlib attention's causal kernel spill). */
    Stmt *loop = fused_loop(w, &producers, &consumers, staged, proxy, kv, n, S, s->loc);
    if (!loop)
      return NULL;
    stlist_push(w->a, &out, loop);
  } else {
    for (int p = 0; p < S - 1; p++) /* prologue */
      prologue_fetch(w, &out, &producers, kv, lw_i32(w, p), n);
    StmtList it = {0};
    int stage = lw_let(w, &it, "stage", lw_bin(w, OP_MOD, lw_var(w, kv), lw_i32(w, S)));
    int next = lw_let(w, &it, "next", ex_add(w->a, lw_var(w, kv), lw_i32(w, S - 1)));
    Stmt *issue = produce_all(w, &producers, kv, lw_var(w, next),
                              lw_bin(w, OP_MOD, lw_var(w, next), lw_i32(w, S)));
    issue = lw_if(w, lw_bin(w, OP_LT, lw_var(w, next), lw_var(w, n)), issue, NULL);
    Stmt *use = lower_on_stage(w, staged, lw_var(w, stage), &consumers, s->loc);
    if (!use)
      return NULL;
    steady_iteration(w, &it, S, proxy, issue, use);
    stlist_push(w->a, &out, steady_loop(w, kv, lw_var(w, n), &it, s->loc));
  }
  /* Epilogue: no copy may still be landing when the tiles are reused. */
  stlist_push(w->a, &out, async_stmt(w, ST_CP_WAIT, 0));
  Stmt *cp_async = stlist_seq(w->a, &out, s->loc);
  if (!gemms.n)
    return cp_async;
  int mbar;
  Stmt *tma_form = tma_pipeline(w, s, &producers, &gemms, staged, reused, general, &mbar);
  /* --tma-only: no form for tma.ok = 0 (the host must pass maps: tma_required, metadata) */
  Stmt *sw = lw_if(w, lw_bin(w, OP_NE, lw_var(w, k->tma_ok), lw_i32(w, 0)), tma_form,
                   w->pc->tma_only ? NULL : cp_async);
  if (ws) {
    ws_build(w, s, outer, &producers, &ws_gemms, staged, general, mbar);
    w->ws_switch = sw;
  }
  return sw;
}

Stmt *lower_pipelined(Lw *w, Stmt *s)
{
  StmtList producers = {0}, consumers = {0};
  if (!split_body(w, s, &producers, &consumers))
    return NULL;
  if (!producers.n) { /* nothing to overlap: an ordinary loop */
    s->for_kind = FOR_SERIAL;
    s->then_s = lw_lower_stmt(w, s->then_s);
    return s;
  }
  Stmt *outer = NULL;
  bool general = false;
  bool tma = tma_eligible(w, s, &producers, &consumers, &general), ws = tma && ws_possible(w, s, &outer);
  /* overlap = 1 (above): the last gemm under the next iteration. */
  Overlap ov;
  const char *why = NULL;
  bool rotate = tma && general && s->overlap && plan_overlap(w, &consumers, &ov, &why);
  /* overlap, and the body's only gemm reads a register A the body fills: the fill is
   * interleaved with the multiplies instead (gemm.c, lw_interleave_register_a) */
  bool interleave = s->overlap && !rotate && only_gemm_register_a(w, &consumers);
  if (s->overlap == 2 && w->pc->target->sm == 90 && w->pc->target->arch_specific) {
    if (rotate || interleave) /* (the interleaved fill needs no copy engine: every form has it) */
      why = NULL;
    else if (!tma)
      why = "its copies do not take the copy engine's form (docs/language.md, 'The copy engine')";
    else if (!general)
      why = "every consumer is a gemm, and the loop already keeps one multiply in flight";
    if (why) {
      error_at(w->pc->diags, s->loc,
               "overlap = 2: the pipelined loop cannot run its last gemm under the next "
               "iteration: %s",
               why);
      return NULL;
    }
  }
  bool saved_interleave = w->interleave_a;
  int interleaved = w->interleaved;
  w->interleave_a = interleave;
  w->interleave_why = "the statement right before the gemm is not a parallel loop that fills its A operand";
  Stmt *r = pipelined_forms(w, s, producers, consumers, tma, ws, general, outer);
  w->interleave_a = saved_interleave;
  if (r && interleave && s->overlap == 2 && w->interleaved == interleaved) {
    error_at(w->pc->diags, s->loc,
             "overlap = 2: the fill of the gemm's register A operand cannot be interleaved with its "
             "K steps: %s",
             w->interleave_why);
    return NULL;
  }
  return r;
}
