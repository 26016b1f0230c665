/* cg_math.c: the math intrinsics of TL_INTRINSICS, without libdevice.
 *
 * f32 is the working precision: f16/bf16 arguments are widened and the result
 * rounded back once.  The transcendental functions use the SFU's approximate
 * instructions (ex2/lg2/sin/cos/rsqrt/tanh .approx), like CUDA's __expf.
 * Measured on an H200 against double precision, x in [-8, 8], f32:
 *
 *   exp, exp2, pow   rel 4.3e-7, 1.4e-7, 1.9e-6    log, log2  abs 5e-7, 6e-7
 *   erf, sigmoid     abs 2.7e-7, 8.8e-8            tanh       abs 7.6e-6
 *   sin, cos         abs 1.1e-6, 1.7e-6            rsqrt      rel 1.1e-7
 *   sqrt, fma, abs, floor, ceil: correctly rounded
 *
 * pow follows C for negative bases (odd/even integer exponents, NaN otherwise)
 * and pow(x, 0) = pow(1, y) = 1.  f64 has sqrt, abs, floor, ceil and fma only;
 * the frontend rejects the rest, so seeing one here is a compiler bug.
 */
#include "cg.h"

#include <math.h>
#include <string.h>

#define LOG2_E 1.4426950408889634
#define LN_2 0.6931471805599453
#define TWO_OVER_SQRT_PI 1.1283791670955126

LLVMValueRef cg_call_intrinsic(Cg *cg, const char *name, LLVMTypeRef *over, int nover, LLVMValueRef *args,
                               int nargs)
{
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id)
    DIE("LLVM has no intrinsic %s", name);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, over, (size_t)nover);
  LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, id, over, (size_t)nover);
  return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)nargs, "");
}

static LLVMValueRef call_f32(Cg *cg, const char *name, LLVMValueRef x)
{
  return cg_call_intrinsic(cg, name, NULL, 0, &x, 1);
}

/* llvm.NAME.f32/f64 (overloaded on the argument type). */
static LLVMValueRef call_overloaded(Cg *cg, const char *name, LLVMValueRef *args, int nargs)
{
  LLVMTypeRef t = LLVMTypeOf(args[0]);
  return cg_call_intrinsic(cg, name, &t, 1, args, nargs);
}

static LLVMValueRef mul_f32(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
  return cg_fp(cg, LLVMBuildFMul(cg->b, a, b, ""));
}

static LLVMValueRef add_f32(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
  return cg_fp(cg, LLVMBuildFAdd(cg->b, a, b, ""));
}

static LLVMValueRef fma_f32(Cg *cg, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
  LLVMValueRef args[3] = {a, b, c};
  return call_overloaded(cg, "llvm.fma", args, 3);
}

/* a * b + c with a constant b and c: the polynomial step of Horner's rule. */
static LLVMValueRef horner(Cg *cg, LLVMValueRef acc, LLVMValueRef x, double c)
{
  return fma_f32(cg, acc, x, cg_const_f32(cg, c));
}

static LLVMValueRef ex2_f32(Cg *cg, LLVMValueRef x) { return call_f32(cg, "llvm.nvvm.ex2.approx.ftz.f", x); }
static LLVMValueRef lg2_f32(Cg *cg, LLVMValueRef x) { return call_f32(cg, "llvm.nvvm.lg2.approx.f", x); }

static LLVMValueRef exp_f32(Cg *cg, LLVMValueRef x)
{
  return ex2_f32(cg, mul_f32(cg, x, cg_const_f32(cg, LOG2_E)));
}

/* "tanh.approx.f32" has no LLVM 19 intrinsic; the asm is pure, so mark it
 * memory(none) and let LLVM CSE, hoist and delete it like any arithmetic. */
static LLVMValueRef tanh_f32(Cg *cg, LLVMValueRef x)
{
  static const char text[] = "tanh.approx.f32 $0, $1;";
  static const char constraints[] = "=f,f";
  LLVMTypeRef fty = LLVMFunctionType(cg->t.f32, &cg->t.f32, 1, 0);
  LLVMValueRef asm_fn = LLVMGetInlineAsm(fty, text, sizeof text - 1, constraints, sizeof constraints - 1, 0,
                                         0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(cg->b, fty, asm_fn, &x, 1, "");
  cg_mark_pure(cg->ctx, call);
  return call;
}

void cg_mark_pure(LLVMContextRef ctx, LLVMValueRef call)
{
  unsigned memory = LLVMGetEnumAttributeKindForName("memory", 6);
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, memory, 0));
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, nounwind, 0));
}

/* erf, max abs error 3e-7 in f32 (measured on [-6, 6] with ex2 2.5e-7 off):
 *   |x| <  0.5: 2/sqrt(pi) * x * (1 - x^2/3 + x^4/10 - x^6/42 + x^8/216 - x^10/1320)
 *               (Maclaurin; keeps the relative error small near 0)
 *   |x| >= 0.5: 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-x^2),
 *               t = 1 / (1 + p |x|)   (Abramowitz & Stegun 7.1.26, 1.5e-7)
 * with the sign of x.  Both are computed and one selected: no branch. */
static LLVMValueRef erf_f32(Cg *cg, LLVMValueRef x)
{
  LLVMValueRef ax = call_overloaded(cg, "llvm.fabs", &x, 1);
  LLVMValueRef x2 = mul_f32(cg, ax, ax);

  LLVMValueRef s = horner(cg, x2, cg_const_f32(cg, -1.0 / 1320), 1.0 / 216);
  s = horner(cg, s, x2, -1.0 / 42);
  s = horner(cg, s, x2, 1.0 / 10);
  s = horner(cg, s, x2, -1.0 / 3);
  s = horner(cg, s, x2, 1.0);
  LLVMValueRef small = mul_f32(cg, mul_f32(cg, ax, s), cg_const_f32(cg, TWO_OVER_SQRT_PI));

  LLVMValueRef den = fma_f32(cg, cg_const_f32(cg, 0.3275911), ax, cg_const_f32(cg, 1.0));
  LLVMValueRef t = cg_fp(cg, LLVMBuildFDiv(cg->b, cg_const_f32(cg, 1.0), den, ""));
  LLVMValueRef p = horner(cg, t, cg_const_f32(cg, 1.061405429), -1.453152027);
  p = horner(cg, p, t, 1.421413741);
  p = horner(cg, p, t, -0.284496736);
  p = horner(cg, p, t, 0.254829592);
  p = mul_f32(cg, p, t);
  LLVMValueRef e = exp_f32(cg, LLVMBuildFNeg(cg->b, x2, ""));
  LLVMValueRef large = fma_f32(cg, LLVMBuildFNeg(cg->b, p, ""), e, cg_const_f32(cg, 1.0));

  LLVMValueRef is_small = LLVMBuildFCmp(cg->b, LLVMRealOLT, ax, cg_const_f32(cg, 0.5), "");
  LLVMValueRef mag = LLVMBuildSelect(cg->b, is_small, small, large, "");
  LLVMValueRef args[2] = {mag, x};
  return call_overloaded(cg, "llvm.copysign", args, 2);
}

/* 1 / (1 + exp(-x)): exp(-x) = inf for very negative x gives 0, as it should. */
static LLVMValueRef sigmoid_f32(Cg *cg, LLVMValueRef x)
{
  LLVMValueRef e = exp_f32(cg, LLVMBuildFNeg(cg->b, x, ""));
  LLVMValueRef den = add_f32(cg, cg_const_f32(cg, 1.0), e);
  return cg_fp(cg, LLVMBuildFDiv(cg->b, cg_const_f32(cg, 1.0), den, ""));
}

/* pow as C has it for the finite cases, built on ex2(b * lg2(|a|)):
 *   a < 0: |a|^b, negated for odd integer b; NaN for non-integer b
 *   b == 0 or a == 1: 1 (even for NaN)                                */
static LLVMValueRef pow_f32(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
  LLVMBuilderRef B = cg->b;
  LLVMValueRef one = cg_const_f32(cg, 1.0);
  LLVMValueRef mag = ex2_f32(cg, mul_f32(cg, b, lg2_f32(cg, call_overloaded(cg, "llvm.fabs", &a, 1))));
  LLVMValueRef half_b = mul_f32(cg, b, cg_const_f32(cg, 0.5));
  LLVMValueRef b_int = LLVMBuildFCmp(B, LLVMRealOEQ, call_overloaded(cg, "llvm.floor", &b, 1), b, "");
  LLVMValueRef b_odd = LLVMBuildAnd(
      B, b_int, LLVMBuildFCmp(B, LLVMRealONE, call_overloaded(cg, "llvm.floor", &half_b, 1), half_b, ""), "");
  LLVMValueRef neg_pow = LLVMBuildSelect(B, b_odd, LLVMBuildFNeg(B, mag, ""), mag, "");
  neg_pow = LLVMBuildSelect(B, b_int, neg_pow, LLVMConstReal(cg->t.f32, NAN), "");
  LLVMValueRef a_neg = LLVMBuildFCmp(B, LLVMRealOLT, a, cg_const_f32(cg, 0.0), "");
  LLVMValueRef r = LLVMBuildSelect(B, a_neg, neg_pow, mag, "");
  LLVMValueRef trivial = LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealOEQ, b, cg_const_f32(cg, 0.0), ""),
                                     LLVMBuildFCmp(B, LLVMRealOEQ, a, one, ""), "");
  return LLVMBuildSelect(B, trivial, one, r, "");
}

/* Functions that are exact (or correctly rounded) in any float type. */
static LLVMValueRef emit_exact_math(Cg *cg, IntrinsicKind fn, LLVMValueRef *args)
{
  switch (fn) {
  case FN_SQRT: return call_overloaded(cg, "llvm.sqrt", args, 1);
  case FN_ABS: return call_overloaded(cg, "llvm.fabs", args, 1);
  case FN_FLOOR: return call_overloaded(cg, "llvm.floor", args, 1);
  case FN_CEIL: return call_overloaded(cg, "llvm.ceil", args, 1);
  case FN_FMA: return call_overloaded(cg, "llvm.fma", args, 3);
  default: return NULL;
  }
}

static LLVMValueRef emit_math_f32(Cg *cg, IntrinsicKind fn, LLVMValueRef *args)
{
  LLVMValueRef x = args[0];
  LLVMValueRef r = emit_exact_math(cg, fn, args);
  if (r)
    return r;
  switch (fn) {
  case FN_EXP: return exp_f32(cg, x);
  case FN_EXP2: return ex2_f32(cg, x);
  case FN_LOG: return mul_f32(cg, lg2_f32(cg, x), cg_const_f32(cg, LN_2));
  case FN_LOG2: return lg2_f32(cg, x);
  case FN_RSQRT: return call_f32(cg, "llvm.nvvm.rsqrt.approx.f", x);
  case FN_TANH: return tanh_f32(cg, x);
  case FN_SIN: return call_f32(cg, "llvm.nvvm.sin.approx.f", x);
  case FN_COS: return call_f32(cg, "llvm.nvvm.cos.approx.f", x);
  case FN_ERF: return erf_f32(cg, x);
  case FN_SIGMOID: return sigmoid_f32(cg, x);
  case FN_POW: return pow_f32(cg, x, args[1]);
  default: break;
  }
  DIE("intrinsic %s not handled for f32", intrinsic_name(fn));
}

static LLVMValueRef emit_int_math(Cg *cg, IntrinsicKind fn, TypeKind t, LLVMValueRef *args)
{
  if (fn != FN_ABS)
    DIE("intrinsic %s on integer type %s", intrinsic_name(fn), type_name(t));
  if (!type_is_signed(t))
    return args[0];
  /* is_int_min_poison = false: abs(INT_MIN) wraps to INT_MIN, as in PTX. */
  LLVMValueRef a[2] = {args[0], LLVMConstInt(cg->t.i1, 0, 0)};
  LLVMTypeRef ty = LLVMTypeOf(args[0]);
  return cg_call_intrinsic(cg, "llvm.abs", &ty, 1, a, 2);
}

/* shfl.sync.bfly over the full warp: the value that lane (laneid ^ args[1]) holds. */
static LLVMValueRef emit_shfl_bfly(Cg *cg, TypeKind t, LLVMValueRef *args)
{
  if (type_bits(t) != 32 || t == TY_BOOL)
    DIE("shuffle of %s (the lowering shuffles 32-bit values only)", type_name(t));
  LLVMValueRef a[4] = {LLVMConstInt(cg->t.i32, 0xffffffffu, 0), args[0], args[1],
                       LLVMConstInt(cg->t.i32, 0x1f, 0)};
  return cg_call_intrinsic(cg, t == TY_F32 ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32",
                           NULL, 0, a, 4);
}

LLVMValueRef emit_math_intrinsic(Cg *cg, IntrinsicKind fn, TypeKind t, LLVMValueRef *args)
{
  if (fn == FN_SHFL_BFLY)
    return emit_shfl_bfly(cg, t, args);
  if (type_is_int(t))
    return emit_int_math(cg, fn, t, args);
  if (!type_is_float(t))
    DIE("intrinsic %s on type %s", intrinsic_name(fn), type_name(t));
  if (t == TY_F64) {
    LLVMValueRef r = emit_exact_math(cg, fn, args);
    if (!r)
      DIE("intrinsic %s on f64 reached codegen (the frontend rejects it)", intrinsic_name(fn));
    return r;
  }
  int n = intrinsic_nargs(fn);
  LLVMValueRef wide[3];
  for (int i = 0; i < n; i++)
    wide[i] = cg_widen(cg, args[i], t);
  return cg_narrow(cg, emit_math_f32(cg, fn, wide), t);
}
