/* cg_expr.c: scalar expressions and element addresses. */
#include "cg.h"

/* ---------------------------------------------------------------- addresses */

unsigned cg_vec_align(TypeKind t, int lanes)
{
  unsigned n = (unsigned)(type_bytes(t) * lanes);
  return n & -n; /* the largest power of two dividing n */
}

LLVMValueRef emit_index(Cg *cg, const Expr *e, LLVMTypeRef to)
{
  LLVMValueRef v = emit_expr(cg, e);
  TypeKind target = to == cg->t.i64 ? TY_I64 : TY_I32;
  if (type_is_float(e->type))
    DIE("index of type %s", type_name(e->type));
  return cg_convert(cg, v, e->type, target);
}

static LLVMValueRef nsw_mul_add(Cg *cg, LLVMValueRef acc, LLVMValueRef extent, LLVMValueRef i)
{
  return LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, acc, extent, ""), i, "");
}

/* Row-major over the tensor's shape, in i64:  ((i0*S1 + i1)*S2 + i2)...; a tensor declared with
 * strides(...):  i0*T0 + i1*T1 + i2*T2 ...  (an innermost literal 1 adds i2 itself). */
static LLVMValueRef global_offset(Cg *cg, const Buffer *buf, Expr *const *idx, int nidx)
{
  if (buffer_strided(buf)) {
    LLVMValueRef off = NULL;
    for (int d = 0; d < nidx; d++) {
      LLVMValueRef i = emit_index(cg, idx[d], cg->t.i64);
      const Expr *st = buf->stride[d];
      if (!(st->kind == EX_INT && st->i == 1))
        i = LLVMBuildNSWMul(cg->b, i, emit_index(cg, st, cg->t.i64), "");
      off = off ? LLVMBuildNSWAdd(cg->b, off, i, "") : i;
    }
    return off;
  }
  LLVMValueRef off = emit_index(cg, idx[0], cg->t.i64);
  for (int d = 1; d < nidx; d++) {
    LLVMValueRef extent = emit_index(cg, buf->shape[d], cg->t.i64);
    off = nsw_mul_add(cg, off, extent, emit_index(cg, idx[d], cg->t.i64));
  }
  return off;
}

/* Row-major over the tile's constant shape, in i32 (tiles are small).  A
 * swizzled tile then XORs the 16-byte chunk within each 128-byte line with a
 * key from the line's index, so that the 8 rows an ldmatrix reads, or a warp's
 * 16-byte copies, fall in 8 different bank groups, for rows of 32 to 1024 bytes:
 *     line = byte >> 7;  byte' = byte ^ (((line ^ (line >> 3)) & 7) << 4)       */
static LLVMValueRef swizzle(Cg *cg, LLVMValueRef off, TypeKind elem)
{
  LLVMValueRef esize = LLVMConstInt(cg->t.i32, (unsigned)type_bytes(elem), 0);
  LLVMValueRef byte = LLVMBuildMul(cg->b, off, esize, "");
  LLVMValueRef line = LLVMBuildLShr(cg->b, byte, LLVMConstInt(cg->t.i32, 7, 0), "");
  LLVMValueRef key = LLVMBuildXor(cg->b, line, LLVMBuildLShr(cg->b, line, LLVMConstInt(cg->t.i32, 3, 0), ""),
                                  "");
  key = LLVMBuildAnd(cg->b, key, LLVMConstInt(cg->t.i32, 7, 0), "");
  byte = LLVMBuildXor(cg->b, byte, LLVMBuildShl(cg->b, key, LLVMConstInt(cg->t.i32, 4, 0), ""), "");
  return LLVMBuildUDiv(cg->b, byte, esize, "");
}

/* SWIZZLE_128B, _64B, _32B (ir.h), the layouts wgmma reads: a [R, C] tile
 * (after the stage index) of 16-bit (or 8-bit) elements as C / P panels [R, P]
 * with S-byte rows (S the span, P = S / 2, or S for 8 bits), then the hardware's S-byte swizzle of
 * the chunk bits (4 up) by the bits from 7 up (the tile is 1024-aligned):
 *
 *   byte = (c / P) * R * S + r * S + (c % P) * esize
 *   byte' = byte ^ (((byte >> 7) & (S / 16 - 1)) << 4)
 *
 *   S = 128, one 1024-byte atom (8 rows of a panel), 16-byte chunks:
 *     row 0:  0 1 2 3 4 5 6 7
 *     row 1:  1 0 3 2 5 4 7 6
 *     row 2:  2 3 0 1 6 7 4 5        chunk c of row r at c ^ r
 *     ...
 *     row 7:  7 6 5 4 3 2 1 0
 *
 *   S = 64: rows 0-1 0 1 2 3, rows 2-3 1 0 3 2, rows 4-5 2 3 0 1, rows 6-7 3 2 1 0
 *
 * A stage is R * C * 2 bytes, a multiple of 8 * S. */
static LLVMValueRef tile_offset_wgmma(Cg *cg, const Buffer *buf, Expr *const *idx, int nidx)
{
  int first = buf->stages > 0 ? 1 : 0;
  int esize = type_bytes(buf->elem), S = swizzle_span(buf->swizzle);
  if (nidx != first + 2 || esize > 2)
    DIE("wgmma tile '%s' indexed with %d indices", buf->name, nidx);
  int64_t R = buf->tile_shape[first], panel = S / esize;
  LLVMBuilderRef B = cg->b;
  LLVMTypeRef i32 = cg->t.i32;
#define K32(v) LLVMConstInt(i32, (unsigned long long)(v), 0)
  LLVMValueRef r = emit_index(cg, idx[first], i32), c = emit_index(cg, idx[first + 1], i32);
  LLVMValueRef byte = LLVMBuildMul(B, LLVMBuildUDiv(B, c, K32(panel), ""), K32(R * S), "");
  byte = LLVMBuildAdd(B, byte, LLVMBuildMul(B, r, K32(S), ""), "");
  byte = LLVMBuildAdd(B, byte, LLVMBuildMul(B, LLVMBuildURem(B, c, K32(panel), ""), K32(esize), ""), "");
  LLVMValueRef key = LLVMBuildAnd(B, LLVMBuildLShr(B, byte, K32(7), ""), K32(S / 16 - 1), "");
  byte = LLVMBuildXor(B, byte, LLVMBuildShl(B, key, K32(4), ""), "");
  LLVMValueRef off = LLVMBuildUDiv(B, byte, K32(esize), "");
  if (first) {
    int64_t slice = buf->tile_shape[1] * buf->tile_shape[2];
    off = LLVMBuildAdd(B, LLVMBuildMul(B, emit_index(cg, idx[0], i32), K32(slice), ""), off, "");
  }
#undef K32
  return off;
}

LLVMValueRef tile_offset(Cg *cg, const Buffer *buf, Expr *const *idx, int nidx)
{
  if (swizzle_span(buf->swizzle))
    return tile_offset_wgmma(cg, buf, idx, nidx);
  /* A staged tile swizzles within each stage (whole 128-byte lines: still a
   * bijection, still conflict-free), then adds the stage, so that the swizzled
   * part (lane and constants only) can leave the K loop. */
  int first = 0;
  int64_t slice = 1;
  for (int d = 1; d < nidx; d++)
    slice *= buf->tile_shape[d];
  bool staged = buf->swizzle == SWIZZLE_LINES && buf->stages > 0 && nidx > 1 &&
                (slice * type_bytes(buf->elem)) % 128 == 0;
  if (staged)
    first = 1;
  LLVMValueRef off = emit_index(cg, idx[first], cg->t.i32);
  for (int d = first + 1; d < nidx; d++) {
    LLVMValueRef extent = LLVMConstInt(cg->t.i32, (unsigned long long)buf->tile_shape[d], 0);
    off = nsw_mul_add(cg, off, extent, emit_index(cg, idx[d], cg->t.i32));
  }
  if (buf->swizzle == SWIZZLE_LINES)
    off = swizzle(cg, off, buf->elem);
  if (staged)
    off = LLVMBuildAdd(cg->b,
                       LLVMBuildMul(cg->b, emit_index(cg, idx[0], cg->t.i32),
                                    LLVMConstInt(cg->t.i32, (unsigned long long)slice, 0), ""),
                       off, "");
  return off;
}

LLVMValueRef emit_elem_ptr(Cg *cg, int b, Expr *const *idx, int nidx)
{
  const Buffer *buf = &cg->k->bufs[b];
  int rank = buf->scope == SCOPE_LOCAL ? 1 : buf->rank;
  if (nidx != rank || nidx < 1)
    DIE("buffer '%s' of rank %d indexed with %d indices", buf->name, rank, nidx);
  LLVMValueRef off;
  switch (buf->scope) {
  case SCOPE_GLOBAL: off = global_offset(cg, buf, idx, nidx); break;
  case SCOPE_SHARED: off = tile_offset(cg, buf, idx, nidx); break;
  case SCOPE_LOCAL: off = emit_index(cg, idx[0], cg->t.i32); break;
  default: DIE("%s buffer '%s' reached codegen", scope_name(buf->scope), buf->name);
  }
  if (!cg->bases[b])
    DIE("buffer '%s' has no storage", buf->name);
  return LLVMBuildInBoundsGEP2(cg->b, cg_mem_type(cg, buf->elem), cg->bases[b], &off, 1, "");
}

static LLVMValueRef emit_load(Cg *cg, const Expr *e)
{
  TypeKind t = cg->k->bufs[e->buf].elem;
  LLVMValueRef p = emit_elem_ptr(cg, e->buf, e->args, e->nargs);
  LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_mem_type(cg, t), p, "");
  LLVMSetAlignment(v, cg_vec_align(t, 1));
  return cg_convert(cg, cg_from_mem(cg, v, t), t, e->type);
}

/* Whether &buf[idx...] is a multiple of e->i bytes (a power of two): lets the
 * lowering pick a vector path at run time for tensors of any alignment. */
static LLVMValueRef emit_aligned(Cg *cg, const Expr *e)
{
  if (e->i <= 0 || (e->i & (e->i - 1)))
    DIE("alignment test for %lld bytes", (long long)e->i);
  LLVMValueRef p = emit_elem_ptr(cg, e->buf, e->args, e->nargs);
  LLVMValueRef addr = LLVMBuildPtrToInt(cg->b, p, cg->t.i64, "");
  LLVMValueRef low = LLVMBuildAnd(cg->b, addr, LLVMConstInt(cg->t.i64, (unsigned long long)e->i - 1, 0), "");
  LLVMValueRef r = LLVMBuildICmp(cg->b, LLVMIntEQ, low, LLVMConstInt(cg->t.i64, 0, 0), "");
  return cg_convert(cg, r, TY_BOOL, e->type);
}

/* ---------------------------------------------------------------- variables */

static LLVMValueRef read_sreg(Cg *cg, const char *base, int dim)
{
  static const char *const names[3][3] = {
      {"llvm.nvvm.read.ptx.sreg.tid.x", "llvm.nvvm.read.ptx.sreg.tid.y", "llvm.nvvm.read.ptx.sreg.tid.z"},
      {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
       "llvm.nvvm.read.ptx.sreg.ctaid.z"},
      {"llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y",
       "llvm.nvvm.read.ptx.sreg.nctaid.z"},
  };
  if (dim < 0 || dim > 2)
    DIE("%s dimension %d", base, dim);
  int which = base[0] == 't' ? 0 : base[0] == 'c' ? 1 : 2;
  return cg_call_intrinsic(cg, names[which][dim], NULL, 0, NULL, 0);
}

static LLVMValueRef emit_var(Cg *cg, int vi)
{
  const Var *v = &cg->k->vars[vi];
  switch (v->kind) {
  case VAR_THREAD_IDX: return cg_convert(cg, read_sreg(cg, "tid", v->dim), TY_I32, v->type);
  case VAR_BLOCK_IDX: return cg_convert(cg, read_sreg(cg, "ctaid", v->dim), TY_I32, v->type);
  case VAR_GRID_DIM: return cg_convert(cg, read_sreg(cg, "nctaid", v->dim), TY_I32, v->type);
  case VAR_CONST:
    if (type_is_float(v->type))
      return cg_const_float(cg, v->type, v->cval_is_float ? v->cval_f : (double)v->cval_i);
    return cg_const_int(cg, v->type, v->cval_is_float ? (int64_t)v->cval_f : v->cval_i);
  case VAR_MUT:
    if (!cg->vals[vi])
      DIE("mutable '%s' has no storage", v->name);
    return LLVMBuildLoad2(cg->b, cg_reg_type(cg, v->type), cg->vals[vi], v->name);
  case VAR_SIZE:
  case VAR_SCALAR:
  case VAR_TMA_OK:
  case VAR_LET:
  case VAR_LOOP:
    if (!cg->vals[vi])
      DIE("'%s' used where it is not bound", v->name);
    return cg->vals[vi];
  case VAR_NUM_SMS: break; /* grid expressions only (sema); the host evaluates them */
  }
  DIE("variable '%s' of unknown kind %d", v->name, (int)v->kind);
}

/* ---------------------------------------------------------------- operators */

static LLVMValueRef emit_unary(Cg *cg, const Expr *e)
{
  TypeKind t = e->a->type;
  LLVMValueRef a = emit_expr(cg, e->a);
  switch ((OpKind)e->op) {
  case OP_NEG:
    if (type_is_float(t))
      return LLVMBuildFNeg(cg->b, a, ""); /* a sign flip: exact in any width */
    return LLVMBuildNeg(cg->b, a, "");
  case OP_NOT: {
    LLVMValueRef c = cg_convert(cg, a, t, TY_BOOL);
    return cg_convert(cg, LLVMBuildNot(cg->b, c, ""), TY_BOOL, e->type);
  }
  case OP_BNOT:
    if (type_is_float(t))
      DIE("'~' on %s", type_name(t));
    return LLVMBuildNot(cg->b, a, "");
  default: break;
  }
  DIE("unary operator %d", e->op);
}

static LLVMValueRef select_by(Cg *cg, LLVMIntPredicate pred, LLVMValueRef a, LLVMValueRef b)
{
  return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, pred, a, b, ""), a, b, "");
}

/* Integers and bool; signedness picks the division, shift and comparison. */
static LLVMValueRef emit_int_binary(Cg *cg, OpKind op, TypeKind t, LLVMValueRef a, LLVMValueRef b)
{
  bool s = t != TY_BOOL && type_is_signed(t);
  LLVMBuilderRef B = cg->b;
  switch (op) {
  case OP_ADD: return LLVMBuildAdd(B, a, b, "");
  case OP_SUB: return LLVMBuildSub(B, a, b, "");
  case OP_MUL: return LLVMBuildMul(B, a, b, "");
  case OP_DIV: return s ? LLVMBuildSDiv(B, a, b, "") : LLVMBuildUDiv(B, a, b, "");
  case OP_MOD: return s ? LLVMBuildSRem(B, a, b, "") : LLVMBuildURem(B, a, b, "");
  case OP_SHL: return LLVMBuildShl(B, a, b, "");
  case OP_SHR: return s ? LLVMBuildAShr(B, a, b, "") : LLVMBuildLShr(B, a, b, "");
  case OP_BAND: return LLVMBuildAnd(B, a, b, "");
  case OP_BOR: return LLVMBuildOr(B, a, b, "");
  case OP_BXOR: return LLVMBuildXor(B, a, b, "");
  case OP_MIN: return select_by(cg, s ? LLVMIntSLT : LLVMIntULT, a, b);
  case OP_MAX: return select_by(cg, s ? LLVMIntSGT : LLVMIntUGT, a, b);
  case OP_CEILDIV: {
    LLVMValueRef one = LLVMConstInt(LLVMTypeOf(a), 1, 0);
    LLVMValueRef n = LLVMBuildSub(B, LLVMBuildAdd(B, a, b, ""), one, "");
    return s ? LLVMBuildSDiv(B, n, b, "") : LLVMBuildUDiv(B, n, b, "");
  }
  default: break;
  }
  DIE("operator '%s' on %s", op_spelling(op), type_name(t));
}

/* f16/bf16 operands arrive widened to f32; the caller narrows the result. */
static LLVMValueRef emit_float_binary(Cg *cg, OpKind op, LLVMValueRef a, LLVMValueRef b)
{
  LLVMBuilderRef B = cg->b;
  LLVMValueRef args[2] = {a, b};
  LLVMTypeRef ty = LLVMTypeOf(a);
  if (op == OP_ADD || op == OP_SUB) { /* T(byte) +- an integer: one subtraction (cg_fold_byte_offset) */
    LLVMValueRef r = cg_fold_byte_offset(cg, op == OP_ADD, a, b);
    if (!r && op == OP_ADD)
      r = cg_fold_byte_offset(cg, true, b, a);
    if (r)
      return r;
  }
  switch (op) {
  case OP_ADD: return cg_fp(cg, LLVMBuildFAdd(B, a, b, ""));
  case OP_SUB: return cg_fp(cg, LLVMBuildFSub(B, a, b, ""));
  case OP_MUL: return cg_fp(cg, LLVMBuildFMul(B, a, b, ""));
  case OP_DIV: return cg_fp(cg, LLVMBuildFDiv(B, a, b, ""));
  case OP_MOD: return cg_fp(cg, LLVMBuildFRem(B, a, b, ""));
  case OP_MIN: return cg_call_intrinsic(cg, "llvm.minnum", &ty, 1, args, 2);
  case OP_MAX: return cg_call_intrinsic(cg, "llvm.maxnum", &ty, 1, args, 2);
  case OP_CEILDIV: {
    LLVMValueRef q = cg_fp(cg, LLVMBuildFDiv(B, a, b, ""));
    return cg_call_intrinsic(cg, "llvm.ceil", &ty, 1, &q, 1);
  }
  default: break;
  }
  DIE("operator '%s' on a float", op_spelling(op));
}

static LLVMValueRef emit_compare(Cg *cg, OpKind op, TypeKind t, LLVMValueRef a, LLVMValueRef b)
{
  if (type_is_float(t)) {
    /* Ordered, except !=: NaN != x is true in C. */
    static const LLVMRealPredicate fp[] = {
        [OP_LT] = LLVMRealOLT, [OP_LE] = LLVMRealOLE, [OP_GT] = LLVMRealOGT,
        [OP_GE] = LLVMRealOGE, [OP_EQ] = LLVMRealOEQ, [OP_NE] = LLVMRealUNE,
    };
    return LLVMBuildFCmp(cg->b, fp[op], cg_widen(cg, a, t), cg_widen(cg, b, t), "");
  }
  bool s = t != TY_BOOL && type_is_signed(t);
  static const LLVMIntPredicate sp[] = {
      [OP_LT] = LLVMIntSLT, [OP_LE] = LLVMIntSLE, [OP_GT] = LLVMIntSGT,
      [OP_GE] = LLVMIntSGE, [OP_EQ] = LLVMIntEQ,  [OP_NE] = LLVMIntNE,
  };
  static const LLVMIntPredicate up[] = {
      [OP_LT] = LLVMIntULT, [OP_LE] = LLVMIntULE, [OP_GT] = LLVMIntUGT,
      [OP_GE] = LLVMIntUGE, [OP_EQ] = LLVMIntEQ,  [OP_NE] = LLVMIntNE,
  };
  return LLVMBuildICmp(cg->b, s ? sp[op] : up[op], a, b, "");
}

/* OP_LAND / OP_LOR evaluate both sides: they have no side effects. */
static LLVMValueRef emit_binary(Cg *cg, const Expr *e)
{
  OpKind op = (OpKind)e->op;
  TypeKind t = e->a->type;
  LLVMValueRef a = emit_expr(cg, e->a);
  LLVMValueRef b = emit_expr(cg, e->b);
  if (op == OP_SHL || op == OP_SHR)
    b = cg_convert(cg, b, e->b->type, t);
  if (op_is_comparison(op))
    return cg_convert(cg, emit_compare(cg, op, t, a, b), TY_BOOL, e->type);
  if (op == OP_LAND || op == OP_LOR) {
    a = cg_convert(cg, a, t, TY_BOOL);
    b = cg_convert(cg, b, e->b->type, TY_BOOL);
    LLVMValueRef r = op == OP_LAND ? LLVMBuildAnd(cg->b, a, b, "") : LLVMBuildOr(cg->b, a, b, "");
    return cg_convert(cg, r, TY_BOOL, e->type);
  }
  if (type_is_float(t)) {
    LLVMValueRef r = emit_float_binary(cg, op, cg_widen(cg, a, t), cg_widen(cg, b, t));
    return cg_convert(cg, cg_narrow(cg, r, t), t, e->type);
  }
  return cg_convert(cg, emit_int_binary(cg, op, t, a, b), t, e->type);
}

static LLVMValueRef emit_call(Cg *cg, const Expr *e)
{
  IntrinsicKind fn = (IntrinsicKind)e->op;
  if (e->nargs != intrinsic_nargs(fn) || e->nargs > 3)
    DIE("%s called with %d arguments", intrinsic_name(fn), e->nargs);
  LLVMValueRef args[3];
  /* Arguments take the call's type, but a shuffle's lane offset stays i32. */
  for (int i = 0; i < e->nargs; i++)
    args[i] = cg_convert(cg, emit_expr(cg, e->args[i]), e->args[i]->type,
                         fn == FN_SHFL_BFLY && i == 1 ? TY_I32 : e->type);
  return emit_math_intrinsic(cg, fn, e->type, args);
}

static LLVMValueRef emit_select(Cg *cg, const Expr *e)
{
  LLVMValueRef c = cg_convert(cg, emit_expr(cg, e->a), e->a->type, TY_BOOL);
  LLVMValueRef x = cg_convert(cg, emit_expr(cg, e->b), e->b->type, e->type);
  LLVMValueRef y = cg_convert(cg, emit_expr(cg, e->c), e->c->type, e->type);
  return LLVMBuildSelect(cg->b, c, x, y, "");
}

LLVMValueRef emit_expr(Cg *cg, const Expr *e)
{
  switch (e->kind) {
  case EX_INT:
    if (type_is_float(e->type))
      return cg_const_float(cg, e->type, (double)e->i);
    return cg_const_int(cg, e->type, e->i);
  case EX_FLOAT:
    if (!type_is_float(e->type))
      DIE("float literal of type %s", type_name(e->type));
    return cg_const_float(cg, e->type, e->f);
  case EX_VAR: return cg_convert(cg, emit_var(cg, e->var), cg->k->vars[e->var].type, e->type);
  case EX_LOAD: return emit_load(cg, e);
  case EX_UNARY: return emit_unary(cg, e);
  case EX_BINARY: return emit_binary(cg, e);
  case EX_CALL: return emit_call(cg, e);
  case EX_CAST:
    if (e->opaque && e->type == TY_F32 && (e->a->type == TY_F16 || e->a->type == TY_BF16))
      return emit_widen_opaque(cg, emit_expr(cg, e->a), e->a->type);
    return cg_convert(cg, emit_expr(cg, e->a), e->a->type, e->type);
  case EX_SELECT: return emit_select(cg, e);
  case EX_ALIGNED: return emit_aligned(cg, e);
  }
  DIE("expression of unknown kind %d", (int)e->kind);
}
