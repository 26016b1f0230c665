/* lower_tiles.c: the steps that take tile-level statements to per-thread
 * ones, each a row of the pipeline (pipeline.c):
 *
 *   linearize-locals       multi-dimensional alloc_local buffers -> row-major 1-D
 *   stage-stores           on sm_90a, a wgmma GEMM's accumulator copied to a 16-bit tensor goes
 *                          through a shared tile (a TMA store), when the tile fits in the stages
 *   choose-swizzles        the shared-memory layout of gemm's operand tiles
 *   shared-lifetimes       which top-level statements use each shared tile (plan-shared
 *                          lets tiles whose uses do not overlap share bytes)
 *   renumber-blocks        use_swizzle(P): block indices walk the grid in panels
 *   lower-tile-ops         copy, fill, gemm, reductions, parallel and pipelined
 *                          loops -> per-thread statements (lw_lower_stmt below,
 *                          with lower_copy.c, lower_reduce.c, lower_parallel.c,
 *                          gemm.c and software_pipeline.c)
 *   drop-scratch-barriers  lower_reduce.c's guards that a loop makes redundant
 *   fragments-to-locals    fragments become per-thread LOCAL arrays (registers)
 *   fold                   constant folding of the index arithmetic
 *
 * Index arithmetic is built on unrolled loop counters so that after unrolling
 * every register index is a constant (the arrays become registers in LLVM).
 * Writes to shared memory are fenced by barriers before (readers of the old
 * contents) and after (readers of the new).
 */
#include "lower.h"

#include <string.h>

/* ---------------------------------------------------------------- driver */

/* Is s's statement i a parallel loop that writes the register A fragment of the wgmma gemm
 * right after it?  (lw_interleave_register_a decides whether the two can be interleaved.) */
static bool fills_register_a(Lw *w, const Stmt *s, int i)
{
  if (i + 1 >= s->nbody)
    return false;
  const Stmt *p = s->body[i], *g = s->body[i + 1];
  return p->kind == ST_FOR && p->for_kind == FOR_PARALLEL && g->kind == ST_GEMM && lw_gemm_register_a(w, g);
}

Stmt *lw_lower_stmt(Lw *w, Stmt *s)
{
  if (!s)
    return NULL;
  switch (s->kind) {
  case ST_SEQ: {
    StmtList l = {0};
    for (int i = 0; i < s->nbody; i++) {
      Stmt *r;
      if (w->interleave_a && fills_register_a(w, s, i)) {
        Stmt *fill = lw_lower_stmt(w, s->body[i]), *gemm = lw_lower_stmt(w, s->body[++i]);
        r = lw_interleave_register_a(w, fill, gemm);
        if (!r) {
          StmtList two = {0};
          stlist_push(w->a, &two, fill);
          stlist_push(w->a, &two, gemm);
          r = stlist_seq(w->a, &two, s->loc);
        }
      } else
        r = lw_lower_stmt(w, s->body[i]);
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
    s->then_s = lw_lower_stmt(w, s->then_s);
    s->else_s = lw_lower_stmt(w, s->else_s);
    return s;
  case ST_FOR:
    if (s->for_kind == FOR_PARALLEL)
      return lower_parallel(w, s);
    if (s->for_kind == FOR_PIPELINED)
      return lower_pipelined(w, s);
    w->loops++;
    s->then_s = lw_lower_stmt(w, s->then_s);
    w->loops--;
    return s;
  case ST_COPY: return lower_copy(w, s);
  case ST_FILL: return lower_fill(w, s);
  case ST_REDUCE:
    if (s->dim != w->k->bufs[s->src_buf].rank - 1)
      return lower_reduce_dim(w, s);
    if (w->k->bufs[s->src_buf].layout.kind == LAYOUT_MMA)
      return lower_reduce_mma(w, s);
    return lower_reduce(w, s);
  case ST_STORE:
    /* Every thread runs a plain statement: its shared store is fenced from
     * earlier readers and for later ones, like a tile op's. */
    return lw_writes_shared(w, s->buf) ? lw_fenced(w, s) : s;
  case ST_GEMM: return lower_gemm(w, s);
  case ST_ATOMIC: {
    /* Outside a parallel loop the block does it once: thread 0. */
    Stmt *once = lw_if(w, lw_bin(w, OP_EQ, lw_var(w, w->tid), lw_i32(w, 0)), s, NULL);
    return lw_writes_shared(w, s->buf) ? lw_fenced(w, once) : once;
  }
  default: return s;
  }
}

/* alloc_local buffers: row-major linear index. */
static Expr *linear_index(Lw *w, const Buffer *b, Expr **idx, int n)
{
  Expr *lin = idx[0];
  for (int d = 1; d < n; d++)
    lin = ex_add(w->a, ex_mul(w->a, lin, lw_i32(w, b->tile_shape[d])), idx[d]);
  return lin;
}

static Expr *linearize_expr(void *ctx, Expr *e)
{
  Lw *w = ctx;
  if (e->kind == EX_LOAD && w->k->bufs[e->buf].scope == SCOPE_LOCAL && e->nargs > 1) {
    e->args = lw_idx1(w, linear_index(w, &w->k->bufs[e->buf], e->args, e->nargs));
    e->nargs = 1;
  }
  return e;
}

static void linearize_locals(Lw *w, Stmt *s)
{
  if (!s)
    return;
  if (s->kind == ST_STORE && w->k->bufs[s->buf].scope == SCOPE_LOCAL && s->nidx > 1) {
    s->idx = lw_idx1(w, linear_index(w, &w->k->bufs[s->buf], s->idx, s->nidx));
    s->nidx = 1;
  }
  for (int i = 0; i < s->nbody; i++)
    linearize_locals(w, s->body[i]);
  linearize_locals(w, s->then_s);
  linearize_locals(w, s->else_s);
}

/* Shared tiles that gemm reads are swizzled (codegen's tile_offset): in the
 * wgmma layout when a gemm reading them is lowered to wgmma (which then wins
 * over any mma.sync gemm that reads them too: ldmatrix reads 16-byte rows,
 * which stay whole in either layout), else in 128-byte lines when they hold
 * 16-bit or 8-bit elements in whole lines. */
static void mark_swizzled(Lw *w, const Stmt *s)
{
  if (!s)
    return;
  Kernel *k = w->k;
  if (s->kind == ST_GEMM) {
    int ops[2] = {s->a, s->b};
    bool wgmma = lw_gemm_uses_wgmma(w, s);
    for (int i = 0; i < 2; i++) {
      Buffer *b = &k->bufs[ops[i]];
      if (b->scope != SCOPE_SHARED)
        continue; /* A in registers */
      int64_t bytes = buffer_elems(b) * type_bytes(b->elem);
      int64_t row = b->tile_shape[b->rank - 1] * type_bytes(b->elem);
      if (wgmma)
        b->swizzle = wgmma_operand_swizzle(b->tile_shape[b->rank - 1], type_bytes(b->elem));
      else if (b->swizzle == SWIZZLE_NONE && b->scope == SCOPE_SHARED && type_bytes(b->elem) <= 2 &&
               bytes % 128 == 0 && row % 16 == 0)
        b->swizzle = SWIZZLE_LINES;
    }
  }
  /* A shared tile copied into a global tensor in a way the copy engine can
   * store (lower_copy.c) gets the wgmma layout the engine's swizzles write. */
  if (s->kind == ST_COPY && lw_tma_store_shape(w, s) && k->bufs[s->src.buf].swizzle == SWIZZLE_NONE)
    k->bufs[s->src.buf].swizzle = wgmma_swizzle(k->bufs[s->src.buf].tile_shape[1]);
  for (int i = 0; i < s->nbody; i++)
    mark_swizzled(w, s->body[i]);
  mark_swizzled(w, s->then_s);
  mark_swizzled(w, s->else_s);
}

/* use_swizzle(P): the user's block indices become a permutation of the raw
 * ones that walks the grid in panels of P rows (by), column by column within
 * a panel, so that consecutive blocks share rows of A and columns of B in L2:
 *
 *   id = rby * gx + rbx;  group = id / (P * gx);  first = group * P
 *   rows = min(gy - first, P);  by = first + (id % (P gx)) % rows;  bx = (id % (P gx)) / rows */
static Stmt *swizzle_blocks(Lw *w)
{
  Kernel *k = w->k;
  int user[2] = {-1, -1};
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_BLOCK_IDX && k->vars[i].dim < 2)
      user[k->vars[i].dim] = i;
  int raw[2], grid[2];
  for (int d = 0; d < 2; d++) {
    raw[d] = lw_fresh(w, d ? "ctaid.y" : "ctaid.x", VAR_BLOCK_IDX);
    k->vars[raw[d]].dim = d;
    grid[d] = lw_fresh(w, d ? "nctaid.y" : "nctaid.x", VAR_GRID_DIM);
    k->vars[grid[d]].dim = d;
  }
  StmtList l = {0};
  int64_t P = k->swizzle_panel;
  int id = lw_let(w, &l, "id",
                  ex_add(w->a, ex_mul(w->a, lw_var(w, raw[1]), lw_var(w, grid[0])), lw_var(w, raw[0])));
  int pw = lw_let(w, &l, "panel", ex_mul(w->a, lw_i32(w, P), lw_var(w, grid[0])));
  int first = lw_let(w, &l, "first",
                     ex_mul(w->a, lw_bin(w, OP_DIV, lw_var(w, id), lw_var(w, pw)), lw_i32(w, P)));
  int rows = lw_let(w, &l, "rows",
                    lw_bin(w, OP_MIN, lw_bin(w, OP_SUB, lw_var(w, grid[1]), lw_var(w, first)), lw_i32(w, P)));
  int in = lw_let(w, &l, "in_panel", lw_bin(w, OP_MOD, lw_var(w, id), lw_var(w, pw)));
  Expr *v[2] = {lw_bin(w, OP_DIV, lw_var(w, in), lw_var(w, rows)),
                ex_add(w->a, lw_var(w, first), lw_bin(w, OP_MOD, lw_var(w, in), lw_var(w, rows)))};
  for (int d = 0; d < 2; d++) {
    if (user[d] < 0)
      continue;
    k->vars[user[d]].kind = VAR_LET;
    Stmt *s = st_new(w->a, ST_LET, NO_LOC);
    s->var = user[d];
    s->value = v[d];
    stlist_push(w->a, &l, s);
  }
  stlist_push(w->a, &l, k->body);
  return stlist_seq(w->a, &l, k->body->loc);
}

/* ---------------------------------------------------------------- the steps */

/* The lowering's context for kernel k: its thread index variable, tid.x, made
 * by the first step that asks (every later step finds it). */
Lw lw_begin(PassContext *pc, Kernel *k)
{
  Lw w = {.pc = pc, .k = k, .a = pc->arena, .tid = -1};
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_THREAD_IDX && !strcmp(k->vars[i].name, "tid.x"))
      w.tid = i;
  if (w.tid < 0) {
    Var t = {0};
    t.name = "tid.x"; /* not a .tl name: those have no dots */
    t.kind = VAR_THREAD_IDX;
    t.type = TY_I32;
    t.param_index = -1;
    w.tid = kernel_add_var(pc->arena, k, t);
  }
  return w;
}

bool pass_linearize_locals(PassContext *pc, Kernel *k)
{
  Lw w = lw_begin(pc, k);
  for (int i = 0; i < k->nbufs; i++)
    if (k->bufs[i].scope == SCOPE_LOCAL)
      k->bufs[i].local_size = buffer_elems(&k->bufs[i]);
  stmt_rewrite_exprs(k->body, linearize_expr, &w);
  linearize_locals(&w, k->body);
  return true;
}

static void find_register_a_loops(Lw *w, Stmt *s);

bool pass_choose_swizzles(PassContext *pc, Kernel *k)
{
  Lw w = lw_begin(pc, k);
  mark_swizzled(&w, k->body);
  find_register_a_loops(&w, k->body);
  return true;
}

/* ---------------------------------------------------------------- uses of shared tiles
 *
 * each_shared_use(k, s, fn, ctx) calls fn(ctx, buf, pipelined) for every use of a shared tile in
 * s and the statements inside it: the tiles a statement names in its fields (a copy's sides, a
 * gemm's operands, a fill's, store's, atomic's or reduction's buffer), `pipelined` when that
 * statement is inside a pipelined loop, and the loads in their expressions (pipelined false). */
typedef void (*SharedUseFn)(void *ctx, int buf, bool pipelined);

typedef struct {
  const Kernel *k;
  SharedUseFn fn;
  void *ctx;
  int pipelined; /* the depth of pipelined loops around the statement walked */
} SharedUses;

static void use_of(SharedUses *u, int buf)
{
  if (buf >= 0 && buf < u->k->nbufs && u->k->bufs[buf].scope == SCOPE_SHARED)
    u->fn(u->ctx, buf, u->pipelined > 0);
}

static Expr *load_use(void *ctx, Expr *e)
{
  if (e->kind == EX_LOAD || e->kind == EX_ALIGNED) {
    SharedUses *u = ctx;
    int depth = u->pipelined;
    u->pipelined = 0;
    use_of(u, e->buf);
    u->pipelined = depth;
  }
  return e;
}

static void field_uses(SharedUses *u, const Stmt *s)
{
  if (!s)
    return;
  switch (s->kind) {
  case ST_COPY:
    use_of(u, s->src.buf);
    use_of(u, s->dst.buf);
    break;
  case ST_GEMM:
    use_of(u, s->a);
    use_of(u, s->b);
    use_of(u, s->c);
    break;
  case ST_REDUCE:
    use_of(u, s->src_buf);
    use_of(u, s->buf);
    break;
  case ST_FILL:
  case ST_STORE:
  case ST_ATOMIC: use_of(u, s->buf); break;
  default: break;
  }
  bool pipe = s->kind == ST_FOR && s->for_kind == FOR_PIPELINED;
  u->pipelined += pipe;
  for (int i = 0; i < s->nbody; i++)
    field_uses(u, s->body[i]);
  field_uses(u, s->then_s);
  field_uses(u, s->else_s);
  u->pipelined -= pipe;
}

static void each_shared_use(const Kernel *k, Stmt *s, SharedUseFn fn, void *ctx)
{
  SharedUses u = {k, fn, ctx, 0};
  field_uses(&u, s);
  stmt_rewrite_exprs(s, load_use, &u); /* s and everything inside it */
}

/* ---------------------------------------------------------------- register A's sources
 *
 * A loop that fills gemm's register A operand element by element (`wf[i, j] = T(W8[i, j])`: weights
 * widened on the way to the tensor cores) reads its shared tiles in the MMA fragment's pattern: in
 * one load instruction, lane l reads row l / 4 (and l / 4 + 8) at column 2 * (l % 4) of its
 * warp's rows.  In a plain tile of 64-byte rows, rows r, r + 2, r + 4 and r + 6 fall in the same
 * bank: every such load takes 4 passes, and the loop runs on the path from the copy to the tensor
 * cores.  Swizzled in 128-byte lines (SWIZZLE_LINES), the 8 rows of a load land in 8 different
 * 16-byte chunks of the banks: one pass.  The layout is invisible to the program (copies move
 * 16-byte chunks, which stay whole); tiles already given a layout keep it.
 *
 * On sm_90a a 2-D tile that a pipelined loop reads so, of rows of a multiple of 32 bytes, 8 rows at
 * a time, takes the wgmma layout of its row length instead (SWIZZLE_128B, _64B or _32B): the 8
 * rows of a load land in 8 different chunks there too (the chunk is XORed with the row's place in
 * its atom), and the copy engine writes that layout, so the loop can take its TMA form
 * (software_pipeline.c) when the gemm is wgmma: stdlib/gemm.tl's weight tiles (gemm_w8a16 and
 * gemm_w4a16 past 16 rows; H200, 4096^3: 381 -> 331 us with 128 x 128 tiles, 545 -> 485 us with
 * 64 x 64).  Where the gemm is mma.sync (decoding's few rows) the loop keeps cp.async, and the
 * 128-byte lines measured faster there (17.2 against 18.0 us at M = 16). */

static bool stores_here(const Stmt *s, const void *buf)
{
  return s->kind == ST_STORE && s->buf == *(const int *)buf;
}

/* Does s, or a statement inside it, store into buf? */
static bool stmt_stores(const Stmt *s, int buf) { return stmt_any(s, stores_here, &buf); }

/* The gemm in s, or inside it, that reads buf as its A operand, or NULL. */
static const Stmt *register_a_gemm(const Stmt *s, int buf)
{
  if (!s)
    return NULL;
  if (s->kind == ST_GEMM && s->a == buf)
    return s;
  for (int i = 0; i < s->nbody; i++) {
    const Stmt *g = register_a_gemm(s->body[i], buf);
    if (g)
      return g;
  }
  const Stmt *g = register_a_gemm(s->then_s, buf);
  return g ? g : register_a_gemm(s->else_s, buf);
}

typedef struct {
  const Kernel *k;
  const Stmt *root;
} RegisterAStore;

static bool store_register_a(const Stmt *s, const void *ctx)
{
  const RegisterAStore *r = ctx;
  return s->kind == ST_STORE && r->k->bufs[s->buf].scope == SCOPE_FRAGMENT &&
         register_a_gemm(r->root, s->buf);
}

/* Does s, or a statement inside it, store into a fragment that a gemm in root reads as its A operand? */
static bool stores_register_a(const Kernel *k, const Stmt *s, const Stmt *root)
{
  return stmt_any(s, store_register_a, &(RegisterAStore){k, root});
}

typedef struct {
  Lw *w;
  int pipelined; /* pipelined loops around the parallel loop */
  bool wgmma;    /* the gemm that reads the loop's fragment is lowered to wgmma */
} RegisterA;

static void swizzle_register_a_source(void *ctx, int buf, bool pipelined)
{
  (void)pipelined; /* the walk's own: loads are reported with false */
  RegisterA *r = ctx;
  const Target *t = r->w->pc->target;
  Buffer *b = &r->w->k->bufs[buf];
  int64_t bytes = buffer_elems(b) * type_bytes(b->elem);
  int64_t row = b->tile_shape[b->rank - 1] * type_bytes(b->elem);
  if (b->swizzle != SWIZZLE_NONE || type_bytes(b->elem) > 2 || bytes % 128 || row % 16)
    return;
  if (r->pipelined && r->wgmma && t->sm == 90 && t->arch_specific && b->rank == 2 && row % 32 == 0 &&
      b->tile_shape[0] % 8 == 0)
    b->swizzle = wgmma_operand_swizzle(b->tile_shape[1], type_bytes(b->elem));
  else
    b->swizzle = SWIZZLE_LINES;
}

static void find_register_a_walk(RegisterA *r, Stmt *s)
{
  if (!s)
    return;
  if (s->kind == ST_FOR && s->for_kind == FOR_PARALLEL && stores_register_a(r->w->k, s, r->w->k->body)) {
    r->wgmma = true;
    for (int b = 0; b < r->w->k->nbufs; b++) {
      const Stmt *g = r->w->k->bufs[b].scope == SCOPE_FRAGMENT && stmt_stores(s, b)
                          ? register_a_gemm(r->w->k->body, b)
                          : NULL;
      if (g && !lw_gemm_uses_wgmma(r->w, g))
        r->wgmma = false;
    }
    each_shared_use(r->w->k, s, swizzle_register_a_source, r);
    return;
  }
  bool pipe = s->kind == ST_FOR && s->for_kind == FOR_PIPELINED;
  r->pipelined += pipe;
  for (int i = 0; i < s->nbody; i++)
    find_register_a_walk(r, s->body[i]);
  find_register_a_walk(r, s->then_s);
  find_register_a_walk(r, s->else_s);
  r->pipelined -= pipe;
}

static void find_register_a_loops(Lw *w, Stmt *s)
{
  RegisterA r = {w, 0, false};
  find_register_a_walk(&r, s);
}

/* ---------------------------------------------------------------- stage-stores
 *
 * `copy(acc, C[...])` of a wgmma accumulator into a 16-bit tensor writes 4 bytes to each of 8 rows
 * per store instruction, masked, while the tensor cores wait (examples/matmul.tl measured 4-8 %
 * at 4096^3).  The explicit form, `copy(acc, Cs); copy(Cs, C[...])`, stores through a swizzled
 * shared tile and the copy engine (lower_copy.c).  This step writes that form for the kernel when
 * it costs no shared memory: the copy is a top-level statement after the kernel's one top-level
 * pipelined loop (2 stages or more, wgmma into that accumulator), that loop holds every shared tile of the
 * kernel (so Cs takes their bytes: plan-shared), and its copies' tiles, S stages each, are at least as large
 * as Cs.  The new tile is named after the accumulator (`acc.out`). */

/* Does s, or a statement inside it, name a shared tile? */
static void note_shared(void *ctx, int buf, bool pipelined)
{
  (void)buf;
  (void)pipelined;
  *(bool *)ctx = true;
}

static bool names_shared(Kernel *k, Stmt *s)
{
  bool found = false;
  each_shared_use(k, s, note_shared, &found);
  return found;
}

/* The bytes of the shared tiles pipelined loop s copies into, times its stages. */
static int64_t staged_bytes(const Kernel *k, const Stmt *s, int stages)
{
  if (!s)
    return 0;
  int64_t n = 0;
  if (s->kind == ST_COPY && k->bufs[s->dst.buf].scope == SCOPE_SHARED)
    n += buffer_elems(&k->bufs[s->dst.buf]) * type_bytes(k->bufs[s->dst.buf].elem) * stages;
  for (int i = 0; i < s->nbody; i++)
    n += staged_bytes(k, s->body[i], stages);
  return n + staged_bytes(k, s->then_s, stages) + staged_bytes(k, s->else_s, stages);
}

typedef struct {
  Lw *w;
  int acc;
} WgmmaInto;

static bool is_wgmma_into(const Stmt *s, const void *ctx)
{
  const WgmmaInto *g = ctx;
  return s->kind == ST_GEMM && s->c == g->acc && lw_gemm_uses_wgmma(g->w, s);
}

/* Does pipelined loop s hold a gemm into acc that takes wgmma? */
static bool wgmma_into(Lw *w, const Stmt *s, int acc)
{
  return stmt_any(s, is_wgmma_into, &(WgmmaInto){w, acc});
}

static Stmt *copy_stmt(Lw *w, SrcLoc loc, Region src, Region dst)
{
  Stmt *c = st_new(w->a, ST_COPY, loc);
  c->src = src;
  c->dst = dst;
  return c;
}

bool pass_stage_stores(PassContext *pc, Kernel *k)
{
  Lw w = lw_begin(pc, k);
  if (pc->target->sm != 90 || !pc->target->arch_specific || !k->body || k->body->kind != ST_SEQ)
    return true;
  Stmt **top = k->body->body;
  int n = k->body->nbody, loop = -1;
  for (int i = 0; i < n; i++) {
    Stmt *s = top[i];
    if (s->kind == ST_FOR && s->for_kind == FOR_PIPELINED) {
      if (loop >= 0)
        return true; /* two pipelined loops: not this simple shape */
      loop = i;
      continue;
    }
    if (s->kind != ST_COPY || loop < 0)
      continue;
    const Buffer *F = &k->bufs[s->src.buf], *G = &k->bufs[s->dst.buf];
    if (F->scope != SCOPE_FRAGMENT || F->layout.kind != LAYOUT_MMA || F->rank != 2 ||
        G->scope != SCOPE_GLOBAL || !lw_tma_store_fits(&w, F->tile_shape, G->elem, &s->dst) ||
        top[loop]->stages < 2 || !wgmma_into(&w, top[loop], s->src.buf))
      continue;
    int64_t bytes = F->tile_shape[0] * F->tile_shape[1] * 2;
    bool alone = staged_bytes(k, top[loop]->then_s, top[loop]->stages) >= bytes;
    for (int j = 0; alone && j < n; j++)
      alone = j == loop || !names_shared(k, top[j]);
    if (!alone)
      continue;
    Buffer cs = {.name = arena_printf(w.a, "%s.out", F->name),
                 .scope = SCOPE_SHARED,
                 .elem = G->elem,
                 .rank = 2,
                 .param_index = -1,
                 .loc = s->loc};
    for (int d = 0; d < 2; d++) {
      cs.tile_shape[d] = F->tile_shape[d];
      cs.shape[d] = ex_int(w.a, TY_I32, F->tile_shape[d]);
    }
    int c = kernel_add_buffer(w.a, k, cs);
    Region tile = {.buf = c, .origin = NULL, .rank = 2};
    Stmt **two = ARENA_ARRAY(w.a, Stmt *, 2);
    two[0] = copy_stmt(&w, s->loc, s->src, tile);
    two[1] = copy_stmt(&w, s->loc, tile, s->dst);
    top[i] = st_seq(w.a, two, 2);
  }
  return true;
}

/* Lifetimes (shared-lifetimes): each shared tile's first and last top-level statement. */
typedef struct {
  Kernel *k;
  int pos;
} Lifetimes;

static void use_at(void *ctx, int buf, bool pipelined)
{
  Lifetimes *l = ctx;
  Buffer *b = &l->k->bufs[buf];
  if (!b->live_known) {
    b->live_known = true;
    b->live_first = l->pos;
  }
  b->live_last = l->pos;
  /* A pipelined loop's copies into its stages start with no barrier before
   * them (its prologue): its tiles must not share bytes with any earlier tile. */
  if (pipelined)
    b->live_first = 0;
}

/* Positions count the statements of the body's top level, nested sequences
 * flattened; a loop or branch is one position, whatever it holds. */
static void number_top(Lifetimes *l, Stmt *s)
{
  if (s->kind == ST_SEQ) {
    for (int i = 0; i < s->nbody; i++)
      number_top(l, s->body[i]);
    return;
  }
  each_shared_use(l->k, s, use_at, l);
  l->pos++;
}

bool pass_shared_lifetimes(PassContext *pc, Kernel *k)
{
  (void)pc;
  Lifetimes l = {k, 0};
  for (int i = 0; i < k->nbufs; i++)
    k->bufs[i].live_known = false;
  if (k->body)
    number_top(&l, k->body);
  /* A tile no statement uses now takes no shared memory (the tiles the lowering makes later are
   * not among these: it makes them with their uses). */
  for (int i = 0; i < k->nbufs; i++)
    k->bufs[i].unused = k->bufs[i].scope == SCOPE_SHARED && !k->bufs[i].live_known;
  return true;
}

bool pass_renumber_blocks(PassContext *pc, Kernel *k)
{
  Lw w = lw_begin(pc, k);
  if (k->swizzle_panel)
    k->body = swizzle_blocks(&w);
  return true;
}

bool pass_lower_tile_ops(PassContext *pc, Kernel *k)
{
  Lw w = lw_begin(pc, k);
  int errors = pc->diags->nerrors;
  if (!lw_check_pipelined_tiles(&w))
    return false;
  k->body = lw_lower_stmt(&w, k->body);
  if (pc->diags->nerrors == errors && !lw_warp_specialize(&w))
    return false;
  kernel_add_tmap_params(pc->arena, k); /* after every other parameter (docs/abi.md) */
  k->tma_required = pc->tma_only && k->ntmaps > 0;
  return pc->diags->nerrors == errors;
}

bool pass_drop_scratch_barriers(PassContext *pc, Kernel *k)
{
  lower_drop_scratch_guards(k->body, NULL);
  return true;
}

bool pass_fragments_to_locals(PassContext *pc, Kernel *k)
{
  for (int i = 0; i < k->nbufs; i++) {
    Buffer *b = &k->bufs[i];
    if (b->scope == SCOPE_FRAGMENT) {
      b->scope = SCOPE_LOCAL;
      b->local_size = b->layout.regs;
    }
  }
  return true;
}

bool pass_fold(PassContext *pc, Kernel *k)
{
  ir_fold_stmt(pc->arena, k, k->body);
  return true;
}
