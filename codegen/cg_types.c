/* cg_types.c: element types in registers and in memory, constants, conversions. */
#include "cg.h"

#include <math.h>
#include <stdio.h>

void cg_types_init(CgTypes *t, LLVMContextRef ctx)
{
  t->void_t = LLVMVoidTypeInContext(ctx);
  t->i1 = LLVMInt1TypeInContext(ctx);
  t->i8 = LLVMInt8TypeInContext(ctx);
  t->i16 = LLVMInt16TypeInContext(ctx);
  t->i32 = LLVMInt32TypeInContext(ctx);
  t->i64 = LLVMInt64TypeInContext(ctx);
  t->f16 = LLVMHalfTypeInContext(ctx);
  t->bf16 = LLVMBFloatTypeInContext(ctx);
  t->f32 = LLVMFloatTypeInContext(ctx);
  t->f64 = LLVMDoubleTypeInContext(ctx);
  t->ptr = LLVMPointerTypeInContext(ctx, 0);
  t->ptr_global = LLVMPointerTypeInContext(ctx, ADDRSPACE_GLOBAL);
  t->ptr_shared = LLVMPointerTypeInContext(ctx, ADDRSPACE_SHARED);
}

LLVMTypeRef cg_reg_type(const Cg *cg, TypeKind t)
{
  switch (t) {
  case TY_BOOL: return cg->t.i1;
  case TY_I8:
  case TY_U8: return cg->t.i8;
  case TY_I16:
  case TY_U16: return cg->t.i16;
  case TY_I32:
  case TY_U32: return cg->t.i32;
  case TY_I64:
  case TY_U64: return cg->t.i64;
  case TY_F16: return cg->t.f16;
  case TY_BF16: return cg->t.bf16;
  case TY_F32: return cg->t.f32;
  case TY_F64: return cg->t.f64;
  case TY_E4M3:
  case TY_E5M2: return cg->t.i8; /* the bits: no arithmetic, conversions through cvt (below) */
  case TY_VOID:
  case TY_COUNT: break;
  }
  DIE("no LLVM type for %s", type_name(t));
}

LLVMTypeRef cg_mem_type(const Cg *cg, TypeKind t) { return t == TY_BOOL ? cg->t.i8 : cg_reg_type(cg, t); }

LLVMTypeRef cg_with_lanes(LLVMTypeRef t, int lanes)
{
  return lanes == 1 ? t : LLVMVectorType(t, (unsigned)lanes);
}

bool cg_is_half(TypeKind t) { return t == TY_F16 || t == TY_BF16; }

LLVMValueRef cg_const_int(const Cg *cg, TypeKind t, int64_t v)
{
  if (t == TY_BOOL)
    return LLVMConstInt(cg->t.i1, v != 0, 0);
  return LLVMConstInt(cg_reg_type(cg, t), (unsigned long long)v, 1);
}

LLVMValueRef cg_const_float(Cg *cg, TypeKind t, double v)
{
  if (type_is_fp8(t)) /* zero's bits; another value rounded by the target's cvt (passes fill with 0) */
    return v == 0 ? LLVMConstInt(cg->t.i8, signbit(v) ? 0x80 : 0, 0)
                  : cg_convert(cg, cg_const_f32(cg, v), TY_F32, t);
  return LLVMConstReal(cg_reg_type(cg, t), v); /* rounds to nearest for f16/bf16 */
}

LLVMValueRef cg_const_f32(const Cg *cg, double v) { return LLVMConstReal(cg->t.f32, v); }

LLVMValueRef cg_fp(const Cg *cg, LLVMValueRef v)
{
  if (cg->fmf && LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
    LLVMSetFastMathFlags(v, cg->fmf);
  return v;
}

static int value_lanes(LLVMValueRef v)
{
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(t) : 1;
}

static LLVMTypeRef lanes_like(const Cg *cg, LLVMValueRef v, TypeKind t)
{
  return cg_with_lanes(cg_reg_type(cg, t), value_lanes(v));
}

LLVMValueRef cg_widen(Cg *cg, LLVMValueRef v, TypeKind t)
{
  if (!cg_is_half(t))
    return v;
  return LLVMBuildFPExt(cg->b, v, lanes_like(cg, v, TY_F32), "");
}

LLVMValueRef cg_narrow(Cg *cg, LLVMValueRef v, TypeKind t)
{
  if (!cg_is_half(t))
    return v;
  return LLVMBuildFPTrunc(cg->b, v, lanes_like(cg, v, t), "");
}

LLVMValueRef cg_to_mem(Cg *cg, LLVMValueRef v, TypeKind t)
{
  if (t != TY_BOOL)
    return v;
  return LLVMBuildZExt(cg->b, v, cg_with_lanes(cg->t.i8, value_lanes(v)), "");
}

/* Any nonzero byte is true: a host's bool tensor need not hold only 0 and 1. */
LLVMValueRef cg_from_mem(Cg *cg, LLVMValueRef v, TypeKind t)
{
  if (t != TY_BOOL)
    return v;
  return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

static LLVMValueRef convert_to_bool(Cg *cg, LLVMValueRef v, TypeKind from)
{
  if (type_is_float(from)) {
    v = cg_widen(cg, v, from);
    return LLVMBuildFCmp(cg->b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
  }
  return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

static LLVMValueRef convert_int_to_int(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to)
{
  int fb = type_bits(from), tb = type_bits(to);
  LLVMTypeRef dst = lanes_like(cg, v, to);
  if (fb == tb)
    return v;
  if (fb > tb)
    return LLVMBuildTrunc(cg->b, v, dst, "");
  if (from == TY_BOOL || !type_is_signed(from))
    return LLVMBuildZExt(cg->b, v, dst, "");
  return LLVMBuildSExt(cg->b, v, dst, "");
}

static LLVMTypeRef scalar_of(LLVMTypeRef t)
{
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

/* The constant c in every lane of t (c itself when t is a scalar). */
static LLVMValueRef splat(LLVMTypeRef t, LLVMValueRef c)
{
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
    return c;
  LLVMValueRef lanes[64];
  unsigned n = LLVMGetVectorSize(t);
  if (n > 64)
    DIE("a vector of %u lanes", n);
  for (unsigned i = 0; i < n; i++)
    lanes[i] = c;
  return LLVMConstVector(lanes, n);
}

/* The subtraction that ends a byte's conversion to f16 or f32 (below) is marked, so that an integer
 * added to or subtracted from the result joins its constant: (T(q) - T(8.0)), a 4-bit weight's zero
 * point, is then half(q | 0x6400) - 1032, one subtraction where it was two (stdlib/gemm.tl's
 * gemm_w4a16 fill: one f16x2 operation of four per pair of weights).  LLVM cannot join them: x - a - b
 * is x - (a + b) only when no rounding happens, which it does not know; here both are exact (the
 * byte's value, the constant of at most 1024 in magnitude, the joined constant and the result are
 * integers of at most 2048 in magnitude, which f16 holds; 2^24 for f32). */
static unsigned byte_offset_kind(const Cg *cg)
{
  return LLVMGetMDKindIDInContext(cg->ctx, "tilec.byte_offset", 17);
}

static LLVMValueRef mark_byte_offset(Cg *cg, LLVMValueRef sub)
{
  if (LLVMIsAInstruction(sub))
    LLVMSetMetadata(sub, byte_offset_kind(cg), LLVMMDNodeInContext(cg->ctx, NULL, 0));
  return sub;
}

/* The scalar of a constant scalar or splat vector (every lane the same constant), or NULL. */
static LLVMValueRef splat_scalar(LLVMValueRef c)
{
  if (LLVMGetTypeKind(LLVMTypeOf(c)) != LLVMVectorTypeKind)
    return c;
  LLVMValueRef lane = LLVMIsConstant(c) ? LLVMGetAggregateElement(c, 0) : NULL;
  for (unsigned i = 1, n = LLVMGetVectorSize(LLVMTypeOf(c)); lane && i < n; i++)
    if (LLVMGetAggregateElement(c, i) != lane)
      return NULL;
  return lane;
}

/* A constant float (or splat of one) that is an integer of at most 1024 in magnitude: *v. */
static bool small_integer_constant(LLVMValueRef c, double *v)
{
  LLVMValueRef lane = splat_scalar(c);
  if (!lane || !LLVMIsAConstantFP(lane))
    return false;
  LLVMBool lossy = 0;
  *v = LLVMConstRealGetDouble(lane, &lossy);
  return !lossy && fabs(*v) <= 1024.0 && *v == floor(*v);
}

LLVMValueRef cg_fold_byte_offset(Cg *cg, bool add, LLVMValueRef a, LLVMValueRef b)
{
  double c;
  if (!small_integer_constant(b, &c))
    return NULL;
  LLVMValueRef sub = a; /* a byte's conversion, widened to f32 when it was to f16 (T arithmetic) */
  bool widened = LLVMIsAFPExtInst(a) != NULL;
  if (widened)
    sub = LLVMGetOperand(a, 0);
  if (!LLVMIsAInstruction(sub) || LLVMGetInstructionOpcode(sub) != LLVMFSub ||
      !LLVMGetMetadata(sub, byte_offset_kind(cg)))
    return NULL;
  LLVMBool lossy = 0;                  /* the conversion's constant: a splat it made itself */
  double k = LLVMConstRealGetDouble(splat_scalar(LLVMGetOperand(sub, 1)), &lossy);
  double joined = add ? k - c : k + c; /* (x - k) + c = x - (k - c); (x - k) - c = x - (k + c) */
  bool half = LLVMGetTypeKind(scalar_of(LLVMTypeOf(sub))) == LLVMHalfTypeKind;
  if (lossy || fabs(joined) > (half ? 2048.0 : 16777216.0)) /* integers the type holds exactly */
    return NULL;
  LLVMValueRef r = LLVMBuildFSub(cg->b, LLVMGetOperand(sub, 0),
                                 splat(LLVMTypeOf(sub), LLVMConstReal(scalar_of(LLVMTypeOf(sub)), joined)),
                                 "");
  mark_byte_offset(cg, r);
  return widened ? LLVMBuildFPExt(cg->b, r, LLVMTypeOf(a), "") : r;
}

/* An 8-bit integer is exact in f16, bf16 and f32, and a float whose low mantissa bits are the byte
 * gives it with two integer-unit operations and one subtraction, where cvt (I2F) runs at a quarter
 * of their rate or less and its two steps (cvt.s16.s8, cvt.rn.f16.s16) are what kept a GEMM that
 * widens i8 weights in registers waiting (stdlib/gemm.tl's gemm_w8a16):
 *   f16  0x6400 | b is 1024 + b (10 mantissa bits), so x = half(b ^ 0x6480) - 1152 for an i8
 *        (b ^ 0x80 = x + 128) and half(b | 0x6400) - 1024 for a u8
 *   f32  the same with 0x4B000000 (2^23), and bf16 as that f32's high half: an 8-bit integer has
 *        at most 8 significant bits, which bf16 holds, so the cut is exact.
 * Every one of the 256 values of each type gives the cvt's result (tests/unit/test_codegen.c). */
static LLVMValueRef convert_byte_to_float(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to)
{
  bool sgn = from == TY_I8;
  bool f16 = to == TY_F16;
  unsigned lanes = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind ? LLVMGetVectorSize(LLVMTypeOf(v))
                                                                        : 1;
  /* 4 bytes in one register (a vcopy's: lower_parallel.c's converted quads): the sign flips for all
   * at once (signed bytes), then the two forms below. */
  bool quad = lanes == 4 && (f16 || to == TY_BF16);
  LLVMValueRef bytes = v;
  if (quad && sgn)
    bytes = LLVMBuildXor(cg->b, bytes, splat(LLVMTypeOf(v), LLVMConstInt(cg->t.i8, 0x80, 0)), "");
  if (quad && f16) {
    /* f16: a shuffle puts each two bytes under 0x64 bytes (one prmt, NVPTX's v4i8 shuffle), one f16x2
     * subtraction each: 5 operations for four values where the lane by lane form (below) takes
     * extractions and repacking, about 17 in PTX. */
    LLVMValueRef top = splat(LLVMTypeOf(v), LLVMConstInt(cg->t.i8, 0x64, 0));
    LLVMValueRef idx[8];
    for (unsigned i = 0; i < 2 * lanes; i++) /* lane i: byte i/2 of v under a 0x64 of top (index lanes) */
      idx[i] = LLVMConstInt(cg->t.i32, i % 2 ? lanes : i / 2, 0);
    LLVMValueRef bits = LLVMBuildShuffleVector(cg->b, bytes, top, LLVMConstVector(idx, 2 * lanes), "");
    LLVMValueRef f = LLVMBuildBitCast(cg->b, bits, lanes_like(cg, v, TY_F16), "");
    return mark_byte_offset(
        cg,
        LLVMBuildFSub(cg->b, f, splat(LLVMTypeOf(f), LLVMConstReal(cg->t.f16, sgn ? 1152.0 : 1024.0)), ""));
  }
  if (quad) {
    /* bf16, through f32 (below): a shuffle builds the four f32 words 0x4B0000b (one prmt each), one
     * f32 subtraction each, and a shuffle keeps their high halves (a prmt per two). */
    LLVMValueRef k[4] = {LLVMConstInt(cg->t.i8, 0, 0), LLVMConstInt(cg->t.i8, 0x4B, 0),
                         LLVMConstInt(cg->t.i8, 0, 0), LLVMConstInt(cg->t.i8, 0, 0)};
    LLVMValueRef idx[16]; /* word w: byte w of v, 0, 0, 0x4B (k[0], k[0], k[1]: indices 4, 4, 5) */
    for (unsigned i = 0; i < 16; i++)
      idx[i] = LLVMConstInt(cg->t.i32, i % 4 == 0 ? i / 4 : i % 4 == 3 ? 5 : 4, 0);
    LLVMValueRef words = LLVMBuildShuffleVector(cg->b, bytes, LLVMConstVector(k, 4), LLVMConstVector(idx, 16),
                                                "");
    LLVMValueRef f = LLVMBuildBitCast(cg->b, words, LLVMVectorType(cg->t.f32, 4), "");
    f = LLVMBuildFSub(cg->b, f, splat(LLVMTypeOf(f), LLVMConstReal(cg->t.f32, sgn ? 8388736.0 : 8388608.0)),
                      "");
    LLVMValueRef halves = LLVMBuildBitCast(cg->b, f, LLVMVectorType(cg->t.i16, 8), "");
    LLVMValueRef hi[4];
    for (unsigned i = 0; i < 4; i++)
      hi[i] = LLVMConstInt(cg->t.i32, 2 * i + 1, 0);
    halves = LLVMBuildShuffleVector(cg->b, halves, LLVMGetPoison(LLVMTypeOf(halves)), LLVMConstVector(hi, 4),
                                    "");
    return LLVMBuildBitCast(cg->b, halves, lanes_like(cg, v, TY_BF16), "");
  }
  LLVMTypeRef bits = lanes_like(cg, v, f16 ? TY_I16 : TY_I32);
  LLVMValueRef b = LLVMBuildZExt(cg->b, v, bits, "");
  uint64_t magic = f16 ? 0x6400 : 0x4B000000, bias = sgn ? 0x80 : 0;
  b = LLVMBuildXor(cg->b, b, splat(bits, LLVMConstInt(scalar_of(bits), magic | bias, 0)), "");
  TypeKind via = f16 ? TY_F16 : TY_F32;
  LLVMValueRef f = LLVMBuildBitCast(cg->b, b, lanes_like(cg, v, via), "");
  double off = (f16 ? 1024.0 : 8388608.0) + (sgn ? 128.0 : 0.0);
  f = LLVMBuildFSub(cg->b, f, splat(LLVMTypeOf(f), LLVMConstReal(scalar_of(LLVMTypeOf(f)), off)), "");
  if (to != TY_BF16)
    return mark_byte_offset(cg, f);
  LLVMTypeRef wide = lanes_like(cg, v, TY_I32), half = lanes_like(cg, v, TY_I16);
  LLVMValueRef hi = LLVMBuildLShr(cg->b, LLVMBuildBitCast(cg->b, f, wide, ""),
                                  splat(wide, LLVMConstInt(cg->t.i32, 16, 0)), "");
  return LLVMBuildBitCast(cg->b, LLVMBuildTrunc(cg->b, hi, half, ""), lanes_like(cg, v, TY_BF16), "");
}

/* Integers go to f16/bf16 through f32: sm_80 has no cvt.rn.bf16.s32. */
static LLVMValueRef convert_int_to_float(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to)
{
  if ((from == TY_I8 || from == TY_U8) && to != TY_F64)
    return convert_byte_to_float(cg, v, from, to);
  TypeKind via = cg_is_half(to) ? TY_F32 : to;
  LLVMTypeRef dst = lanes_like(cg, v, via);
  if (from != TY_BOOL && type_is_signed(from))
    v = LLVMBuildSIToFP(cg->b, v, dst, "");
  else
    v = LLVMBuildUIToFP(cg->b, v, dst, "");
  return cg_narrow(cg, v, to);
}

static LLVMValueRef convert_float_to_int(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to)
{
  v = cg_widen(cg, v, from);
  LLVMTypeRef dst = lanes_like(cg, v, to);
  if (type_is_signed(to))
    return LLVMBuildFPToSI(cg->b, v, dst, "");
  return LLVMBuildFPToUI(cg->b, v, dst, "");
}

/* f16 <-> bf16 go through f32 (exact, then one rounding); LLVM rounds f64 to
 * f16/bf16 once, even on sm_80. */
static LLVMValueRef convert_float_to_float(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to)
{
  if (cg_is_half(from) && cg_is_half(to))
    return cg_narrow(cg, cg_widen(cg, v, from), to);
  LLVMTypeRef dst = lanes_like(cg, v, to);
  if (type_bits(from) < type_bits(to))
    return LLVMBuildFPExt(cg->b, v, dst, "");
  return LLVMBuildFPTrunc(cg->b, v, dst, "");
}

/* 8-bit floats (sm_90 and later: sema's rule) go through f16 and f32, one lane at a time:
 *   e4m3/e5m2 -> f16   cvt.rn.f16x2.{e4m3,e5m2}x2 of the byte in the low half (exact)
 *   f32 -> e4m3/e5m2   cvt.rn.satfinite.{e4m3,e5m2}x2.f32 with 0 in the high byte: nearest even,
 *                      magnitudes past the largest finite value saturate to it, NaN stays NaN
 * Any other type reaches f32 first (f64 rounds to f32, then to 8 bits). */
static LLVMValueRef fp8_lane_to_f16(Cg *cg, LLVMValueRef b, TypeKind from)
{
  char text[64];
  snprintf(text, sizeof text, "cvt.rn.f16x2.%sx2 $0, $1;", type_name(from));
  LLVMValueRef h = LLVMBuildZExt(cg->b, b, cg->t.i16, "");
  LLVMValueRef r = cg_inline_asm(cg, cg->t.i32, text, "=r,h", &h, 1, false);
  return LLVMBuildBitCast(cg->b, LLVMBuildTrunc(cg->b, r, cg->t.i16, ""), cg->t.f16, "");
}

static LLVMValueRef fp8_lane_from_f32(Cg *cg, LLVMValueRef f, TypeKind to)
{
  char text[80];
  snprintf(text, sizeof text, "cvt.rn.satfinite.%sx2.f32 $0, $1, $2;", type_name(to));
  LLVMValueRef args[2] = {LLVMConstNull(cg->t.f32), f}; /* high byte, low byte */
  LLVMValueRef r = cg_inline_asm(cg, cg->t.i16, text, "=h,f,f", args, 2, false);
  return LLVMBuildTrunc(cg->b, r, cg->t.i8, "");
}

static LLVMValueRef convert_fp8(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to)
{
  int lanes = value_lanes(v);
  LLVMValueRef out = lanes > 1 ? LLVMGetUndef(lanes_like(cg, v, to)) : NULL;
  for (int l = 0; l < lanes; l++) {
    LLVMValueRef idx = LLVMConstInt(cg->t.i32, (unsigned)l, 0);
    LLVMValueRef x = lanes > 1 ? LLVMBuildExtractElement(cg->b, v, idx, "") : v;
    TypeKind t = from;
    if (type_is_fp8(t)) {
      x = fp8_lane_to_f16(cg, x, t);
      t = TY_F16;
    }
    if (type_is_fp8(to)) {
      x = fp8_lane_from_f32(cg, cg_convert(cg, x, t, TY_F32), to);
    } else {
      x = cg_convert(cg, x, t, to);
    }
    out = lanes > 1 ? LLVMBuildInsertElement(cg->b, out, x, idx, "") : x;
  }
  return out;
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to)
{
  if (from == to)
    return v;
  if (type_is_fp8(from) || type_is_fp8(to))
    return convert_fp8(cg, v, from, to);
  if (to == TY_BOOL)
    return convert_to_bool(cg, v, from);
  bool ffrom = type_is_float(from), fto = type_is_float(to);
  if (!ffrom && !fto)
    return convert_int_to_int(cg, v, from, to);
  if (!ffrom)
    return convert_int_to_float(cg, v, from, to);
  if (!fto)
    return convert_float_to_int(cg, v, from, to);
  return convert_float_to_float(cg, v, from, to);
}
