/* cg_stmt.c: thread-level statements.
 *
 * Control flow is structured (no break, no return), so every statement leaves
 * the builder at the end of the one block where the next statement goes.
 */
#include "cg.h"

#include <llvm-c/DebugInfo.h>

#include <stdlib.h>
#include <string.h>

static LLVMBasicBlockRef append_block(Cg *cg, const char *name)
{
  return LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
}

static LLVMValueRef store_aligned(Cg *cg, LLVMValueRef v, LLVMValueRef p, unsigned align)
{
  LLVMValueRef st = LLVMBuildStore(cg->b, v, p);
  LLVMSetAlignment(st, align);
  return st;
}

/* A LET binds for the rest of its SEQ: the bindings are undone at its end, so
 * that a use out of scope DIEs here instead of failing LLVM's verifier. */
static void emit_seq(Cg *cg, const Stmt *s)
{
  LLVMValueRef *saved = s->nbody ? malloc(sizeof *saved * (size_t)s->nbody) : NULL;
  WgGroup g = {0}; /* wgmma statements in a row: one asm (cg_tensor.c) */
  for (int i = 0; i < s->nbody; i++) {
    const Stmt *c = s->body[i];
    if (c->kind == ST_LET)
      saved[i] = cg->vals[c->var];
    if (wg_group_add(cg, &g, c))
      continue;
    wg_group_flush(cg, &g);
    if (!wg_group_add(cg, &g, c))
      emit_stmt(cg, c);
  }
  wg_group_flush(cg, &g);
  for (int i = s->nbody - 1; i >= 0; i--)
    if (s->body[i]->kind == ST_LET)
      cg->vals[s->body[i]->var] = saved[i];
  free(saved);
}

static void emit_let(Cg *cg, const Stmt *s)
{
  const Var *v = &cg->k->vars[s->var];
  if (v->kind != VAR_LET)
    DIE("let of %s, which is not a let variable", v->name);
  LLVMValueRef x = cg_convert(cg, emit_expr(cg, s->value), s->value->type, v->type);
  if (LLVMIsAInstruction(x)) {
    size_t len;
    LLVMGetValueName2(x, &len);
    if (len == 0)
      LLVMSetValueName2(x, v->name, strlen(v->name));
  }
  cg->vals[s->var] = x;
}

static void emit_assign(Cg *cg, const Stmt *s)
{
  const Var *v = &cg->k->vars[s->var];
  if (v->kind != VAR_MUT || !cg->vals[s->var])
    DIE("assignment to %s, which is not mutable", v->name);
  LLVMValueRef x = cg_convert(cg, emit_expr(cg, s->value), s->value->type, v->type);
  LLVMBuildStore(cg->b, x, cg->vals[s->var]);
}

static void emit_store(Cg *cg, const Stmt *s)
{
  TypeKind t = cg->k->bufs[s->buf].elem;
  LLVMValueRef v = cg_convert(cg, emit_expr(cg, s->value), s->value->type, t);
  LLVMValueRef p = emit_elem_ptr(cg, s->buf, s->idx, s->nidx);
  store_aligned(cg, cg_to_mem(cg, v, t), p, cg_vec_align(t, 1));
}

/* lanes contiguous elements, one vector load and one vector store; converted
 * elementwise when the element types differ.  From registers (a LOCAL array:
 * a fragment), the elements are read one by one into the vector: SROA then
 * keeps the array as scalars, where a vector load would slice it into vectors
 * that every other (scalar) access, the wgmma asm's 128 accumulator operands
 * among them, reads and writes through insert/extractelement (a GEMM's
 * accumulator-to-shared copy: 5 % of matmul.tl's compile time; 8 movs fewer). */
static void emit_vcopy(Cg *cg, const Stmt *s)
{
  TypeKind st = cg->k->bufs[s->src_buf].elem, dt = cg->k->bufs[s->buf].elem;
  if (s->lanes < 1)
    DIE("vcopy of %d lanes", s->lanes);
  LLVMValueRef src = emit_elem_ptr(cg, s->src_buf, s->src_idx, s->nsrc_idx);
  LLVMValueRef dst = emit_elem_ptr(cg, s->buf, s->idx, s->nidx);
  LLVMTypeRef et = cg_mem_type(cg, st);
  LLVMValueRef v;
  if (cg->k->bufs[s->src_buf].scope == SCOPE_LOCAL && s->lanes > 1) {
    v = LLVMGetUndef(cg_with_lanes(et, s->lanes));
    for (int i = 0; i < s->lanes; i++) {
      LLVMValueRef lane = LLVMConstInt(cg->t.i32, (unsigned)i, 0);
      LLVMValueRef e = LLVMBuildLoad2(cg->b, et, LLVMBuildInBoundsGEP2(cg->b, et, src, &lane, 1, ""), "");
      v = LLVMBuildInsertElement(cg->b, v, e, lane, "");
    }
  } else {
    v = LLVMBuildLoad2(cg->b, cg_with_lanes(et, s->lanes), src, "");
    LLVMSetAlignment(v, cg_vec_align(st, s->lanes));
  }
  if (st != dt)
    v = cg_to_mem(cg, cg_convert(cg, cg_from_mem(cg, v, st), st, dt), dt);
  store_aligned(cg, v, dst, cg_vec_align(dt, s->lanes));
}

static LLVMValueRef atomic_rmw(Cg *cg, LLVMAtomicRMWBinOp op, LLVMValueRef p, LLVMValueRef v, TypeKind t)
{
  LLVMValueRef r = LLVMBuildAtomicRMW(cg->b, op, p, v, LLVMAtomicOrderingMonotonic, 0);
  LLVMSetAlignment(r, cg_vec_align(t, 1));
  return r;
}

/* Float max / min through integer atomics on the bits: floats with the sign bit clear order as
 * signed integers, and above every negative one; negative floats order backwards as unsigned
 * integers, and above every positive one.  So max(x, v) is a signed max for v >= +0 and an
 * unsigned min for v <= -0 (min: signed min, unsigned max), one atomic without a retry loop
 * (NaN: unspecified). */
static void emit_float_minmax(Cg *cg, const Stmt *s, LLVMValueRef p, LLVMValueRef v, TypeKind t)
{
  LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)type_bits(t));
  LLVMValueRef bits = LLVMBuildBitCast(cg->b, v, it, "bits");
  LLVMValueRef pos = LLVMBuildICmp(cg->b, LLVMIntSGE, bits, LLVMConstInt(it, 0, 0), "nonneg");
  LLVMBasicBlockRef bp = append_block(cg, "atomic.pos"), bn = append_block(cg, "atomic.neg"),
                    end = append_block(cg, "atomic.end");
  LLVMBuildCondBr(cg->b, pos, bp, bn);
  bool max = s->reduce == RED_MAX;
  LLVMPositionBuilderAtEnd(cg->b, bp);
  atomic_rmw(cg, max ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpMin, p, bits, t);
  LLVMBuildBr(cg->b, end);
  LLVMPositionBuilderAtEnd(cg->b, bn);
  atomic_rmw(cg, max ? LLVMAtomicRMWBinOpUMin : LLVMAtomicRMWBinOpUMax, p, bits, t);
  LLVMBuildBr(cg->b, end);
  LLVMPositionBuilderAtEnd(cg->b, end);
}

static void emit_atomic(Cg *cg, const Stmt *s)
{
  TypeKind t = cg->k->bufs[s->buf].elem;
  if (t == TY_BOOL)
    DIE("atomic on a bool buffer");
  LLVMValueRef v = cg_convert(cg, emit_expr(cg, s->value), s->value->type, t);
  LLVMValueRef p = emit_elem_ptr(cg, s->buf, s->idx, s->nidx);
  bool sgn = type_is_signed(t);
  switch (s->reduce) {
  case RED_SUM:
    atomic_rmw(cg, type_is_float(t) ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd, p, v, t);
    return;
  case RED_MAX:
  case RED_MIN:
    if (type_is_float(t))
      emit_float_minmax(cg, s, p, v, t);
    else if (s->reduce == RED_MAX)
      atomic_rmw(cg, sgn ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax, p, v, t);
    else
      atomic_rmw(cg, sgn ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin, p, v, t);
    return;
  }
}

/* Blocks are appended in source order (then, its nested blocks, else, end)
 * and the branches filled in afterwards, so -O0 output reads top to bottom. */
static void emit_if(Cg *cg, const Stmt *s)
{
  LLVMValueRef c = cg_convert(cg, emit_expr(cg, s->cond), s->cond->type, TY_BOOL);
  LLVMBasicBlockRef head = LLVMGetInsertBlock(cg->b);
  LLVMBasicBlockRef then_bb = append_block(cg, "then");
  LLVMPositionBuilderAtEnd(cg->b, then_bb);
  emit_stmt(cg, s->then_s);
  LLVMBasicBlockRef then_end = LLVMGetInsertBlock(cg->b);
  LLVMBasicBlockRef else_bb = NULL, else_end = NULL;
  if (s->else_s) {
    else_bb = append_block(cg, "else");
    LLVMPositionBuilderAtEnd(cg->b, else_bb);
    emit_stmt(cg, s->else_s);
    else_end = LLVMGetInsertBlock(cg->b);
  }
  LLVMBasicBlockRef end = append_block(cg, "endif");
  LLVMPositionBuilderAtEnd(cg->b, head);
  LLVMBuildCondBr(cg->b, c, then_bb, else_bb ? else_bb : end);
  LLVMPositionBuilderAtEnd(cg->b, then_end);
  LLVMBuildBr(cg->b, end);
  if (else_end) {
    LLVMPositionBuilderAtEnd(cg->b, else_end);
    LLVMBuildBr(cg->b, end);
  }
  LLVMPositionBuilderAtEnd(cg->b, end);
}

/* A loop around a loop of gemm steps (a persistent kernel's loop over output
 * tiles, a loop over K/V blocks inside one over heads) carries the
 * accumulators through its inner loop.  LICM would hoist everything invariant
 * in the outer loop out of it: the epilogue's shared-memory addresses (64 of
 * them for a 128 x 256 accumulator), the fallback path's masks; all of them
 * then stay alive through the inner loop beside the accumulators, and ptxas
 * spills them.  Recomputing them once per outer iteration costs a few
 * instructions against a whole inner loop of multiplies, so such loops get
 * llvm.licm.disable (inner loops keep LICM).  Registers, spills and the H100's
 * timings with and without it: results/h100-2026-12-07-s37 (its tl/pts.tl, a
 * persistent GEMM with a TMA-store epilogue, spilled 320 bytes, now 8). */
static bool is_gemm_step(const Stmt *s, const void *ctx)
{
  (void)ctx;
  return s->kind == ST_WGMMA || s->kind == ST_MMA;
}

static bool is_gemm_loop(const Stmt *s, const void *ctx)
{
  (void)ctx;
  return s->kind == ST_FOR && s->for_kind == FOR_SERIAL && stmt_any(s->then_s, is_gemm_step, NULL);
}

/* !llvm.loop !0, !0 = distinct !{!0, !{"llvm.loop.unroll.disable"}[, !{"llvm.licm.disable"}]} */
static void set_loop_metadata(Cg *cg, LLVMValueRef back, bool no_unroll, bool no_licm)
{
  if (!no_unroll && !no_licm)
    return;
  LLVMMetadataRef ops[3], self = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
  unsigned n = 0;
  ops[n++] = self;
  if (no_unroll) {
    LLVMMetadataRef name = LLVMMDStringInContext2(cg->ctx, "llvm.loop.unroll.disable", 24);
    ops[n++] = LLVMMDNodeInContext2(cg->ctx, &name, 1);
  }
  if (no_licm) {
    LLVMMetadataRef name = LLVMMDStringInContext2(cg->ctx, "llvm.licm.disable", 17);
    ops[n++] = LLVMMDNodeInContext2(cg->ctx, &name, 1);
  }
  LLVMMetadataRef loop = LLVMMDNodeInContext2(cg->ctx, ops, n);
  LLVMMetadataReplaceAllUsesWith(self, loop);
  LLVMSetMetadata(back, LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9),
                  LLVMMetadataAsValue(cg->ctx, loop));
}

/*   head:  i = phi [0, pre], [i + 1, latch];  br i < n, body, exit
 *   body:  ...;  br latch
 *   latch: br head                                                 */
static void emit_for_serial(Cg *cg, const Stmt *s)
{
  int vi = s->vars[0];
  TypeKind t = cg->k->vars[vi].type;
  if (!type_is_int(t))
    DIE("loop variable %s of type %s", cg->k->vars[vi].name, type_name(t));
  LLVMValueRef n = cg_convert(cg, emit_expr(cg, s->extents[0]), s->extents[0]->type, t);
  LLVMTypeRef ty = cg_reg_type(cg, t);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
  LLVMBasicBlockRef head = append_block(cg, "for");
  LLVMBuildBr(cg->b, head);

  LLVMPositionBuilderAtEnd(cg->b, head);
  LLVMValueRef i = LLVMBuildPhi(cg->b, ty, cg->k->vars[vi].name);
  LLVMValueRef more = LLVMBuildICmp(cg->b, type_is_signed(t) ? LLVMIntSLT : LLVMIntULT, i, n, "");
  LLVMBasicBlockRef body = append_block(cg, "for.body");
  LLVMPositionBuilderAtEnd(cg->b, body);
  LLVMValueRef saved = cg->vals[vi];
  cg->vals[vi] = i;
  emit_stmt(cg, s->then_s);
  cg->vals[vi] = saved;
  LLVMBasicBlockRef latch = append_block(cg, "for.latch");
  LLVMBuildBr(cg->b, latch);

  LLVMPositionBuilderAtEnd(cg->b, latch);
  /* i < n <= max, so i + 1 does not wrap. */
  LLVMValueRef next = type_is_signed(t) ? LLVMBuildNSWAdd(cg->b, i, LLVMConstInt(ty, 1, 0), "")
                                        : LLVMBuildNUWAdd(cg->b, i, LLVMConstInt(ty, 1, 0), "");
  LLVMValueRef back = LLVMBuildBr(cg->b, head);
  set_loop_metadata(cg, back, s->rolled, stmt_any(s->then_s, is_gemm_loop, NULL));
  LLVMValueRef in_vals[2] = {LLVMConstInt(ty, 0, 0), next};
  LLVMBasicBlockRef in_bbs[2] = {pre, latch};
  LLVMAddIncoming(i, in_vals, in_bbs, 2);

  LLVMBasicBlockRef exit = append_block(cg, "for.end");
  LLVMPositionBuilderAtEnd(cg->b, head);
  LLVMBuildCondBr(cg->b, more, body, exit);
  LLVMPositionBuilderAtEnd(cg->b, exit);
}

/* The body once per iteration with the variable bound to a constant: indices
 * into local arrays become constants, and SROA turns the arrays into registers. */
static void emit_for_unrolled(Cg *cg, const Stmt *s)
{
  int vi = s->vars[0];
  int64_t n;
  if (!ex_is_const_int(s->extents[0], &n))
    DIE("unrolled loop over %s with a non-constant trip count", cg->k->vars[vi].name);
  LLVMValueRef saved = cg->vals[vi];
  for (int64_t i = 0; i < n; i++) {
    cg->vals[vi] = cg_const_int(cg, cg->k->vars[vi].type, i);
    emit_stmt(cg, s->then_s);
  }
  cg->vals[vi] = saved;
}

static void emit_for(Cg *cg, const Stmt *s)
{
  if (s->nvars != 1)
    DIE("thread-level loop with %d variables", s->nvars);
  if (cg->k->vars[s->vars[0]].kind != VAR_LOOP)
    DIE("loop over %s, which is not a loop variable", cg->k->vars[s->vars[0]].name);
  switch (s->for_kind) {
  case FOR_SERIAL: emit_for_serial(cg, s); return;
  case FOR_UNROLLED: emit_for_unrolled(cg, s); return;
  case FOR_PARALLEL:
  case FOR_PIPELINED: break;
  }
  DIE("tile-level loop (kind %d) reached codegen", (int)s->for_kind);
}

static const char *stmt_kind_name(StmtKind k)
{
  switch (k) {
  case ST_COPY: return "copy";
  case ST_FILL: return "fill";
  case ST_GEMM: return "gemm";
  case ST_REDUCE: return "reduce";
  default: return "?";
  }
}

static void emit_stmt_kind(Cg *cg, const Stmt *s);

/* With -lineinfo, the instructions of s carry its .tl line and column; statements the lowering
 * made without a location carry their parent's. */
void emit_stmt(Cg *cg, const Stmt *s)
{
  if (!cg->di_scope || s->loc.line <= 0) {
    emit_stmt_kind(cg, s);
    return;
  }
  LLVMMetadataRef outer = cg->di_loc;
  cg->di_loc = LLVMDIBuilderCreateDebugLocation(
      cg->ctx, (unsigned)s->loc.line, (unsigned)(s->loc.col > 0 ? s->loc.col : 0), cg->di_scope, NULL);
  LLVMSetCurrentDebugLocation2(cg->b, cg->di_loc);
  emit_stmt_kind(cg, s);
  cg->di_loc = outer;
  LLVMSetCurrentDebugLocation2(cg->b, outer);
}

static void emit_stmt_kind(Cg *cg, const Stmt *s)
{
  switch (s->kind) {
  case ST_SEQ: emit_seq(cg, s); return;
  case ST_LET: emit_let(cg, s); return;
  case ST_ASSIGN: emit_assign(cg, s); return;
  case ST_STORE: emit_store(cg, s); return;
  case ST_IF: emit_if(cg, s); return;
  case ST_FOR: emit_for(cg, s); return;
  case ST_ATOMIC: emit_atomic(cg, s); return;
  case ST_VCOPY: emit_vcopy(cg, s); return;
  case ST_BARRIER: emit_barrier(cg, s); return;
  case ST_SETMAXNREG: emit_setmaxnreg(cg, s); return;
  case ST_EVAL: emit_expr(cg, s->value); return;
  case ST_LDMATRIX: emit_ldmatrix(cg, s); return;
  case ST_MMA: emit_mma(cg, s); return;
  case ST_CP_ASYNC: emit_cp_async(cg, s); return;
  case ST_CP_COMMIT: emit_cp_commit(cg); return;
  case ST_CP_WAIT: emit_cp_wait(cg, s->pending); return;
  case ST_WGMMA_FENCE: emit_wgmma_fence(cg, s); return;
  case ST_WGMMA: emit_wgmma(cg, s); return;
  case ST_WGMMA_COMMIT: emit_wgmma_commit(cg); return;
  case ST_WGMMA_WAIT: emit_wgmma_wait(cg, s); return;
  case ST_FENCE_PROXY_ASYNC: emit_fence_proxy_async(cg); return;
  case ST_MBAR_INIT:
  case ST_MBAR_ARRIVE:
  case ST_MBAR_EXPECT_TX:
  case ST_MBAR_WAIT: emit_mbarrier(cg, s); return;
  case ST_TMA_LOAD: emit_tma_load(cg, s); return;
  case ST_TMA_STORE: emit_tma_store(cg, s); return;
  case ST_TMA_STORE_WAIT: emit_tma_store_wait(cg); return;
  case ST_COPY:
  case ST_FILL:
  case ST_GEMM:
  case ST_REDUCE: DIE("tile-level %s reached codegen", stmt_kind_name(s->kind));
  }
  DIE("statement of unknown kind %d", (int)s->kind);
}
