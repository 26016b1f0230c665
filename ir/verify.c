/* verify.c: structural invariants of the IR, checked between passes.  A
 * failure is a compiler bug, reported by the pipeline with the pass name. */
#include "ir.h"

typedef struct {
  Arena *arena;
  const Kernel *k;
  VerifyLevel level;
  const char *err;
} Verifier;

static bool fail(Verifier *v, const char *msg)
{
  if (!v->err)
    v->err = msg;
  return false;
}

static bool buf_ok(Verifier *v, int b, int nidx, const char *what)
{
  if (b < 0 || b >= v->k->nbufs)
    return fail(v, arena_printf(v->arena, "%s refers to buffer %d of %d", what, b, v->k->nbufs));
  const Buffer *buf = &v->k->bufs[b];
  if (v->level == VERIFY_THREAD && buf->scope == SCOPE_FRAGMENT)
    return fail(v, arena_printf(v->arena, "%s uses fragment '%s' after lowering", what, buf->name));
  /* Linearized locals take one index, and so do fragments once lowered (a register). */
  bool one = (buf->scope == SCOPE_LOCAL && v->level >= VERIFY_TILE_LINEAR) ||
             (buf->scope == SCOPE_FRAGMENT && v->level == VERIFY_LOWERED);
  int rank = one ? 1 : buf->rank;
  if (nidx >= 0 && nidx != rank)
    return fail(
        v, arena_printf(v->arena, "%s indexes '%s' (rank %d) with %d indices", what, buf->name, rank, nidx));
  return true;
}

static bool expr_ok(Verifier *v, const Expr *e);

/* Per-thread registers: a local array, or a fragment not yet turned into one. */
static bool registers(const Verifier *v, const Buffer *b)
{
  return b->scope == SCOPE_LOCAL || (b->scope == SCOPE_FRAGMENT && v->level == VERIFY_LOWERED);
}

static int64_t register_count(const Buffer *b)
{
  return b->scope == SCOPE_LOCAL ? b->local_size : b->layout.regs;
}

/* Every expression of a list (indices, call arguments). */
static bool exprs_ok(Verifier *v, Expr *const *es, int n)
{
  for (int i = 0; i < n; i++)
    if (!expr_ok(v, es[i]))
      return false;
  return true;
}

static bool expr_ok(Verifier *v, const Expr *e)
{
  if (!e)
    return fail(v, "missing expression");
  if (e->type >= TY_COUNT)
    return fail(v, "expression of unknown type");
  switch (e->kind) {
  case EX_INT:
  case EX_FLOAT: return true;
  case EX_VAR:
    if (e->var < 0 || e->var >= v->k->nvars)
      return fail(v, arena_printf(v->arena, "variable handle %d out of range", e->var));
    if (e->type != v->k->vars[e->var].type)
      return fail(v,
                  arena_printf(v->arena, "use of '%s' has type %s, variable is %s", v->k->vars[e->var].name,
                               type_name(e->type), type_name(v->k->vars[e->var].type)));
    return true;
  case EX_LOAD:
    if (!buf_ok(v, e->buf, e->nargs, "load") || !exprs_ok(v, e->args, e->nargs))
      return false;
    if (e->type != v->k->bufs[e->buf].elem)
      return fail(v, "load type differs from the buffer's element type");
    return true;
  case EX_ALIGNED:
    if (!buf_ok(v, e->buf, e->nargs, "aligned") || !exprs_ok(v, e->args, e->nargs))
      return false;
    return e->i > 0 && (e->i & (e->i - 1)) == 0 ? true : fail(v, "alignment is not a power of two");
  case EX_UNARY: return expr_ok(v, e->a);
  case EX_BINARY:
    if (!expr_ok(v, e->a) || !expr_ok(v, e->b))
      return false;
    if (e->a->type != e->b->type && e->op != OP_SHL && e->op != OP_SHR)
      return fail(v, arena_printf(v->arena, "operands of '%s' have types %s and %s",
                                  op_spelling((OpKind)e->op), type_name(e->a->type), type_name(e->b->type)));
    return true;
  case EX_CALL:
    if (e->nargs != intrinsic_nargs((IntrinsicKind)e->op))
      return fail(v, "intrinsic called with the wrong number of arguments");
    return exprs_ok(v, e->args, e->nargs);
  case EX_CAST: return expr_ok(v, e->a);
  case EX_SELECT:
    if (!expr_ok(v, e->a) || !expr_ok(v, e->b) || !expr_ok(v, e->c))
      return false;
    if (e->a->type != TY_BOOL)
      return fail(v, "select condition is not bool");
    return true;
  }
  return fail(v, "unknown expression kind");
}

/* TMA_LOAD, TMA_STORE: a tensor map of .src_buf, a 16-bit (8-bit) global tensor, and one
 * panel (the map's box) of the wgmma swizzled shared tile .buf. */
static bool tma_ok(Verifier *v, const Stmt *s, const char *what)
{
  if (s->tmap < 0 || s->tmap >= v->k->ntmaps || v->k->tmaps[s->tmap].buf != s->src_buf ||
      !buf_ok(v, s->buf, s->nidx, what) || !buf_ok(v, s->src_buf, s->nsrc_idx, what) ||
      !exprs_ok(v, s->idx, s->nidx) || !exprs_ok(v, s->src_idx, s->nsrc_idx))
    return fail(v, arena_printf(v->arena, "malformed %s", what));
  const Buffer *T = &v->k->bufs[s->buf], *G = &v->k->bufs[s->src_buf];
  if (T->scope != SCOPE_SHARED || G->scope != SCOPE_GLOBAL || !swizzle_span(T->swizzle) ||
      T->elem != G->elem || type_bytes(T->elem) > 2 ||
      v->k->tmaps[s->tmap].box[G->rank - 1] * type_bytes(T->elem) != swizzle_span(T->swizzle))
    return fail(v,
                arena_printf(v->arena,
                             "%s moves one panel (the map's box) between a 16-bit (or 8-bit) global tensor "
                             "and a wgmma swizzled shared tile",
                             what));
  return true;
}

static bool stmt_ok(Verifier *v, const Stmt *s)
{
  if (!s)
    return fail(v, "missing statement");
  bool thread = v->level >= VERIFY_LOWERED;
  if ((int)s->kind >= ST_COUNT)
    return fail(v, "unknown statement kind");
  if (stmt_level(s->kind) == STMT_TILE && thread)
    return fail(v, arena_printf(v->arena, "%s after lowering", stmt_spelling(s->kind)));
  if (stmt_level(s->kind) == STMT_THREAD && !thread)
    return fail(v, arena_printf(v->arena, "%s before lowering", stmt_spelling(s->kind)));
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++)
      if (!stmt_ok(v, s->body[i]))
        return false;
    return true;
  case ST_LET:
  case ST_ASSIGN:
    if (s->var < 0 || s->var >= v->k->nvars)
      return fail(v, "assignment to an unknown variable");
    if (s->kind == ST_ASSIGN && v->k->vars[s->var].kind != VAR_MUT)
      return fail(v, arena_printf(v->arena, "assignment to immutable '%s'", v->k->vars[s->var].name));
    return expr_ok(v, s->value);
  case ST_STORE:
  case ST_ATOMIC:
    if (!buf_ok(v, s->buf, s->nidx, "store") || !exprs_ok(v, s->idx, s->nidx) || !expr_ok(v, s->value))
      return false;
    if (s->value->type != v->k->bufs[s->buf].elem)
      return fail(v, arena_printf(v->arena, "store of %s into %s buffer '%s'", type_name(s->value->type),
                                  type_name(v->k->bufs[s->buf].elem), v->k->bufs[s->buf].name));
    if (s->kind == ST_ATOMIC && v->k->bufs[s->buf].scope != SCOPE_GLOBAL &&
        v->k->bufs[s->buf].scope != SCOPE_SHARED)
      return fail(v, arena_printf(v->arena, "atomic on %s buffer '%s'", scope_name(v->k->bufs[s->buf].scope),
                                  v->k->bufs[s->buf].name));
    return true;
  case ST_IF:
    if (!expr_ok(v, s->cond) || !stmt_ok(v, s->then_s))
      return false;
    if (s->cond->type != TY_BOOL)
      return fail(v, "if condition is not bool");
    return !s->else_s || stmt_ok(v, s->else_s);
  case ST_FOR:
    if (s->nvars < 1 || s->nvars > TL_MAX_RANK)
      return fail(v, "loop with a bad number of variables");
    if (thread && (s->for_kind == FOR_PARALLEL || s->for_kind == FOR_PIPELINED))
      return fail(v, "tile-level loop after lowering");
    if (s->for_kind != FOR_PARALLEL && s->nvars != 1)
      return fail(v, "only parallel loops bind several variables");
    for (int i = 0; i < s->nvars; i++) {
      if (s->vars[i] < 0 || s->vars[i] >= v->k->nvars || v->k->vars[s->vars[i]].kind != VAR_LOOP)
        return fail(v, "loop variable is not a loop variable");
      if (!expr_ok(v, s->extents[i]))
        return false;
      if (s->for_kind == FOR_UNROLLED && s->extents[i]->kind != EX_INT)
        return fail(v, "unrolled loop with a non-constant trip count");
    }
    return stmt_ok(v, s->then_s);
  case ST_COPY: return buf_ok(v, s->src.buf, -1, "copy") && buf_ok(v, s->dst.buf, -1, "copy");
  case ST_FILL: return buf_ok(v, s->buf, -1, "fill") && expr_ok(v, s->value);
  case ST_GEMM:
    return buf_ok(v, s->a, -1, "gemm") && buf_ok(v, s->b, -1, "gemm") && buf_ok(v, s->c, -1, "gemm");
  case ST_REDUCE: return buf_ok(v, s->src_buf, -1, "reduce") && buf_ok(v, s->buf, -1, "reduce");
  case ST_VCOPY:
    if (s->lanes < 1 || s->lanes > 16)
      return fail(v, "vcopy with a bad lane count");
    return buf_ok(v, s->buf, s->nidx, "vcopy") && buf_ok(v, s->src_buf, s->nsrc_idx, "vcopy") &&
           exprs_ok(v, s->idx, s->nidx) && exprs_ok(v, s->src_idx, s->nsrc_idx);
  case ST_BARRIER:
    if (s->bar_threads ? s->bar_id < 1 || s->bar_id > 15 || s->bar_threads % 32 : s->bar_id != 0)
      return fail(v, "a named barrier is 1 .. 15 over a multiple of 32 threads");
    return true;
  case ST_SETMAXNREG:
    if (s->nregs < 24 || s->nregs > 256 || s->nregs % 8)
      return fail(v, "setmaxnreg asks for 24 .. 256 registers, a multiple of 8");
    return true;
  case ST_CP_COMMIT:
  case ST_CP_WAIT: return true;
  case ST_LDMATRIX:
    if ((s->matrices != 1 && s->matrices != 2 && s->matrices != 4) || s->nidx != 1 || !expr_ok(v, s->idx[0]))
      return fail(v, "malformed ldmatrix");
    if (!buf_ok(v, s->buf, 1, "ldmatrix") || !buf_ok(v, s->src_buf, s->nsrc_idx, "ldmatrix"))
      return false;
    if (!registers(v, &v->k->bufs[s->buf]) || v->k->bufs[s->buf].elem != TY_U32 ||
        v->k->bufs[s->src_buf].scope != SCOPE_SHARED || type_bytes(v->k->bufs[s->src_buf].elem) > 2)
      return fail(v, "ldmatrix moves 16-bit (or pairs of 8-bit) shared elements into u32 registers");
    return true;
  case ST_MMA:
    if (!buf_ok(v, s->a, 1, "mma") || !buf_ok(v, s->b, 1, "mma") || !buf_ok(v, s->c, 1, "mma") ||
        !expr_ok(v, s->a_reg) || !expr_ok(v, s->b_reg) || !expr_ok(v, s->c_reg))
      return fail(v, "malformed mma");
    bool int8 = type_is_int8(s->elem);
    if (v->k->bufs[s->c].elem != (int8 ? TY_I32 : TY_F32) ||
        (v->k->bufs[s->a].elem != TY_U32 && (int8 || v->k->bufs[s->a].elem != s->elem)) ||
        !registers(v, &v->k->bufs[s->a]) ||
        (v->k->bufs[s->b].elem != TY_U32 && (int8 || v->k->bufs[s->b].elem != s->elem)) ||
        !registers(v, &v->k->bufs[s->b]) || (s->elem != TY_F16 && s->elem != TY_BF16 && !int8))
      return fail(v,
                  "mma takes u32 (or 16-bit) operand registers and an f32 (8-bit inputs: i32) accumulator");
    return true;
  case ST_CP_ASYNC: {
    if (!buf_ok(v, s->buf, s->nidx, "cp.async") || !buf_ok(v, s->src_buf, s->nsrc_idx, "cp.async") ||
        !s->src_bytes || !expr_ok(v, s->src_bytes))
      return false;
    if (v->k->bufs[s->buf].scope != SCOPE_SHARED || v->k->bufs[s->src_buf].scope != SCOPE_GLOBAL)
      return fail(v, "cp.async copies global to shared");
    int size = cp_async_size(v->k, s);
    if (size != 16 && size != 8 && size != 4)
      return fail(v, "cp.async moves 4, 8 or 16 bytes");
    return true;
  }
  case ST_WGMMA_COMMIT:
  case ST_FENCE_PROXY_ASYNC: return true;
  case ST_WGMMA_FENCE:
  case ST_WGMMA_WAIT:
  case ST_WGMMA: {
    if (!buf_ok(v, s->c, 1, "wgmma"))
      return false;
    const Buffer *C = &v->k->bufs[s->c];
    if (!registers(v, C) || (C->elem != TY_F32 && C->elem != TY_I32) || s->acc_regs < 4 ||
        s->acc_regs > 128 || s->acc_regs % 4 || s->acc_regs > register_count(C))
      return fail(
          v, "wgmma's accumulator is 4 to 128 f32 (or i32) registers, a multiple of 4, of a local buffer");
    if (s->kind == ST_WGMMA_FENCE && s->a_reg) {
      if (!buf_ok(v, s->a, 1, "wgmma.fence") || s->a_reg->kind != EX_INT)
        return fail(v, "malformed wgmma.fence");
      const Buffer *A = &v->k->bufs[s->a];
      if (!registers(v, A) || type_bytes(A->elem) != 2 || s->a_reg->i < 2 || s->a_reg->i % 2 ||
          s->a_first < 0 || s->a_first % 2 || s->a_first + s->a_reg->i > register_count(A))
        return fail(v, "wgmma.fence's A registers are pairs of 16-bit registers of a local buffer");
    }
    if (s->kind != ST_WGMMA)
      return true;
    if (s->a_reg) { /* A in registers */
      if (!buf_ok(v, s->a, 1, "wgmma") || !expr_ok(v, s->a_reg) || s->na_start)
        return fail(v, "malformed wgmma");
      if (!registers(v, &v->k->bufs[s->a]) || v->k->bufs[s->a].elem != s->elem)
        return fail(v, "wgmma's A in registers has its 16-bit input type");
    } else if (!buf_ok(v, s->a, s->na_start, "wgmma") || !exprs_ok(v, s->a_start, s->na_start))
      return false;
    if (!buf_ok(v, s->b, s->nb_start, "wgmma") || !exprs_ok(v, s->b_start, s->nb_start))
      return false;
    const Buffer *A = &v->k->bufs[s->a], *B = &v->k->bufs[s->b];
    bool int8 = type_is_int8(s->elem),
         fp8 = type_is_fp8(s->elem) && type_is_fp8(B->elem); /* B's may differ */
    if ((!s->a_reg && (A->scope != SCOPE_SHARED || !swizzle_span(A->swizzle))) || B->scope != SCOPE_SHARED ||
        !swizzle_span(B->swizzle) || A->elem != s->elem || (B->elem != s->elem && !fp8) ||
        (s->elem != TY_F16 && s->elem != TY_BF16 && !int8 && !fp8) ||
        ((int8 || fp8) && (s->a_reg || s->a_mn_major || s->b_mn_major)) ||
        C->elem != (int8 ? TY_I32 : TY_F32))
      return fail(
          v, "wgmma reads f16, bf16 (or K-major i8, u8, e4m3, e5m2) shared tiles in a wgmma swizzle layout");
    return true;
  }
  case ST_MBAR_INIT:
  case ST_MBAR_ARRIVE:
  case ST_MBAR_EXPECT_TX:
  case ST_MBAR_WAIT:
  case ST_TMA_LOAD: {
    if (!buf_ok(v, s->bar, 1, "mbarrier") || !expr_ok(v, s->bar_idx) ||
        v->k->bufs[s->bar].scope != SCOPE_SHARED || v->k->bufs[s->bar].elem != TY_U64)
      return fail(v, "an mbarrier is a u64 element of a shared buffer");
    if (s->kind != ST_TMA_LOAD)
      return (s->kind == ST_MBAR_ARRIVE) == !s->value && (!s->value || expr_ok(v, s->value))
                 ? true
                 : fail(v, "malformed mbarrier statement");
    return tma_ok(v, s, "tma.load");
  }
  case ST_TMA_STORE: return tma_ok(v, s, "tma.store");
  case ST_TMA_STORE_WAIT: return true;
  case ST_EVAL: return expr_ok(v, s->value);
  }
  return fail(v, "unknown statement kind");
}

const char *ir_verify(Arena *a, const Kernel *k, VerifyLevel level)
{
  Verifier v = {a, k, level, NULL};
  for (int i = 0; i < k->nparams; i++) {
    const struct KParam *p = &k->params[i];
    if (p->is_buffer ? (p->index < 0 || p->index >= k->nbufs || k->bufs[p->index].scope != SCOPE_GLOBAL)
        : p->is_tmap ? (p->index < 0 || p->index >= k->ntmaps || k->tmaps[p->index].param != i)
                     : (p->index < 0 || p->index >= k->nvars))
      return arena_printf(a, "parameter %d is malformed", i);
  }
  for (int i = 0; i < k->grid_rank; i++)
    if (!expr_ok(&v, k->grid[i]))
      return v.err;
  if (level >= VERIFY_LOWERED && k->nthreads <= 0)
    return "thread count not specialized";
  stmt_ok(&v, k->body);
  return v.err;
}
