/* value.c: one value of a .tl type on the host, and every operation on it, for
 * both levels of the interpreter (tile.c, thread.c): so that the two agree by
 * construction on everything but what the lowering changes.
 *
 * A Val holds integers and bool in .i, wrapped to their type's width and sign-
 * or zero-extended to 64 bits (u32 0xffffffff is 4294967295), floats in .f as a
 * double that holds a value of their type exactly: an f16 value is rounded to
 * f16 whenever it is made (by an operation, done in f32 and rounded once, by a
 * cast, by a store).  + - * / and sqrt done in double and rounded to f32 give
 * the correctly rounded f32 result, as the GPU's .rn instructions do. */
#include "interp.h"

#include "tilec_runtime.h" /* f16, bf16, e4m3 and e5m2 conversions */

#include <math.h>
#include <stdio.h>
#include <string.h>

double val_round(TypeKind t, double x)
{
  switch (t) {
  case TY_F16: return tl_f16_to_float(tl_f16_from_float((float)x));
  case TY_BF16: return tl_bf16_to_float(tl_bf16_from_float((float)x));
  case TY_E4M3: return tl_e4m3_to_float(tl_e4m3_from_float((float)x)); /* through f32, as cvt */
  case TY_E5M2: return tl_e5m2_to_float(tl_e5m2_from_float((float)x));
  case TY_F32: return (float)x;
  default: return x;
  }
}

Val val_convert(TypeKind from, TypeKind to, Val v)
{
  Val r;
  if (from == to)
    return v;
  if (to == TY_BOOL) {
    r.i = type_is_float(from) ? v.f != 0 : v.i != 0;
  } else if (type_is_float(to) && type_is_float(from)) {
    r.f = from == TY_F64 && to == TY_F16    ? tl_f16_to_float(tl_f16_from_double(v.f))
          : from == TY_F64 && to == TY_BF16 ? tl_bf16_to_float(tl_bf16_from_double(v.f))
                                            : val_round(to, v.f);
  } else if (type_is_float(to)) {
    bool s = from != TY_BOOL && type_is_signed(from);
    if (to == TY_F64)
      r.f = s ? (double)v.i : (double)v.u;
    else
      r.f = val_round(to, s ? (float)v.i : (float)v.u);
  } else if (type_is_float(from)) {
    /* toward zero; the language leaves out-of-range values undefined: saturate, as cvt.rzi does */
    double x = trunc(v.f), lo = 0, hi;
    int bits = type_bits(to);
    if (type_is_signed(to)) {
      lo = -ldexp(1, bits - 1);
      hi = ldexp(1, bits - 1) - 1;
    } else {
      hi = ldexp(1, bits) - 1;
    }
    if (x != x)
      r.i = 0;
    else if (x <= lo)
      r.i = type_is_signed(to) ? (bits == 64 ? INT64_MIN : (int64_t)lo) : 0;
    else if (x >= hi)
      r.i = bits == 64 ? (type_is_signed(to) ? INT64_MAX : (int64_t)UINT64_MAX) : (int64_t)hi;
    else
      r.i = type_is_signed(to) || x < 0x1p63 ? (int64_t)x : (int64_t)(uint64_t)x;
    r.i = type_wrap_int(to, r.i);
  } else {
    r.i = type_wrap_int(to, v.i);
  }
  return r;
}

Val val_from_bits(TypeKind t, uint64_t bits)
{
  Val v = {0};
  switch (t) {
  case TY_BOOL: v.i = (bits & 0xff) != 0; break;
  case TY_F16: v.f = tl_f16_to_float((uint16_t)bits); break;
  case TY_BF16: v.f = tl_bf16_to_float((uint16_t)bits); break;
  case TY_E4M3: v.f = tl_e4m3_to_float((uint8_t)bits); break;
  case TY_E5M2: v.f = tl_e5m2_to_float((uint8_t)bits); break;
  case TY_F32: {
    uint32_t u = (uint32_t)bits;
    float f;
    memcpy(&f, &u, 4);
    v.f = f;
    break;
  }
  case TY_F64: memcpy(&v.f, &bits, 8); break;
  default: v.i = type_wrap_int(t, (int64_t)bits); break;
  }
  return v;
}

uint64_t val_bits(TypeKind t, Val v)
{
  switch (t) {
  case TY_BOOL: return v.i != 0;
  case TY_F16: return tl_f16_from_double(v.f);
  case TY_BF16: return tl_bf16_from_double(v.f);
  case TY_E4M3: return tl_e4m3_from_double(v.f);
  case TY_E5M2: return tl_e5m2_from_double(v.f);
  case TY_F32: {
    float f = (float)v.f;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  case TY_F64: {
    uint64_t u;
    memcpy(&u, &v.f, 8);
    return u;
  }
  default: {
    int bits = type_bits(t);
    return bits == 64 ? v.u : v.u & ((UINT64_C(1) << bits) - 1);
  }
  }
}

Val val_load(TypeKind t, const void *data, int64_t off)
{
  int size = type_bytes(t);
  uint64_t bits = 0;
  memcpy(&bits, (const char *)data + off * size, (size_t)size); /* little-endian hosts */
  return val_from_bits(t, bits);
}

void val_store(TypeKind t, void *data, int64_t off, Val v)
{
  uint64_t bits = val_bits(t, v);
  int size = type_bytes(t);
  memcpy((char *)data + off * size, &bits, (size_t)size);
}

ValStatus val_int_binary(OpKind op, TypeKind t, Val a, Val b, Val *out)
{
  bool s = t != TY_BOOL && type_is_signed(t);
  int bits = type_bits(t);
  int64_t min = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
  Val r = {0};
  switch (op) {
  case OP_ADD: r.i = (int64_t)(a.u + b.u); break;
  case OP_SUB: r.i = (int64_t)(a.u - b.u); break;
  case OP_MUL: r.i = (int64_t)(a.u * b.u); break;
  case OP_CEILDIV: /* (a + b - 1) / b, wrapped, as codegen emits it */
    a.i = type_wrap_int(t, (int64_t)(a.u + b.u - 1));
    /* fall through */
  case OP_DIV:
  case OP_MOD:
    if (b.i == 0)
      return VAL_DIV_ZERO;
    if (s && a.i == min && b.i == -1)
      r.i = op == OP_MOD ? 0 : a.i; /* wraps */
    else if (s)
      r.i = op == OP_MOD ? a.i % b.i : a.i / b.i;
    else
      r.u = op == OP_MOD ? a.u % b.u : a.u / b.u;
    break;
  case OP_SHL:
  case OP_SHR:
    if (b.i < 0 || b.i >= bits)
      return VAL_BAD_SHIFT;
    r.i = op == OP_SHL ? (int64_t)(a.u << b.i) : s ? a.i >> b.i : (int64_t)(a.u >> b.i);
    break;
  case OP_BAND: r.i = a.i & b.i; break;
  case OP_BOR: r.i = a.i | b.i; break;
  case OP_BXOR: r.i = a.i ^ b.i; break;
  case OP_MIN: r = (s ? a.i < b.i : a.u < b.u) ? a : b; break;
  case OP_MAX: r = (s ? a.i > b.i : a.u > b.u) ? a : b; break;
  case OP_LT: *out = (Val){.i = s ? a.i < b.i : a.u < b.u}; return VAL_OK;
  case OP_LE: *out = (Val){.i = s ? a.i <= b.i : a.u <= b.u}; return VAL_OK;
  case OP_GT: *out = (Val){.i = s ? a.i > b.i : a.u > b.u}; return VAL_OK;
  case OP_GE: *out = (Val){.i = s ? a.i >= b.i : a.u >= b.u}; return VAL_OK;
  case OP_EQ: *out = (Val){.i = a.i == b.i}; return VAL_OK;
  case OP_NE: *out = (Val){.i = a.i != b.i}; return VAL_OK;
  default: DIE("operator '%s' on %s", op_spelling(op), type_name(t));
  }
  r.i = type_wrap_int(t, r.i);
  *out = r;
  return VAL_OK;
}

/* i32, the index arithmetic that most of a run is: the common cases, without the general path's
 * table lookups; false for the others (a divisor that is not positive, shifts, bit operations). */
static bool i32_binary(OpKind op, int32_t x, int32_t y, Val *out)
{
  switch (op) {
  case OP_ADD: *out = (Val){.i = (int32_t)((uint32_t)x + (uint32_t)y)}; return true;
  case OP_SUB: *out = (Val){.i = (int32_t)((uint32_t)x - (uint32_t)y)}; return true;
  case OP_MUL: *out = (Val){.i = (int32_t)((uint32_t)x * (uint32_t)y)}; return true;
  case OP_DIV: *out = (Val){.i = y > 0 ? x / y : 0}; return y > 0;
  case OP_MOD: *out = (Val){.i = y > 0 ? x % y : 0}; return y > 0;
  case OP_LT: *out = (Val){.i = x < y}; return true;
  case OP_LE: *out = (Val){.i = x <= y}; return true;
  case OP_GT: *out = (Val){.i = x > y}; return true;
  case OP_GE: *out = (Val){.i = x >= y}; return true;
  case OP_EQ: *out = (Val){.i = x == y}; return true;
  case OP_NE: *out = (Val){.i = x != y}; return true;
  case OP_MIN: *out = (Val){.i = x < y ? x : y}; return true;
  case OP_MAX: *out = (Val){.i = x > y ? x : y}; return true;
  default: return false;
  }
}

ValStatus val_binary(OpKind op, TypeKind t, TypeKind bt, Val a, Val b, Val *out)
{
  if (op == OP_SHL || op == OP_SHR)
    b = val_convert(bt, t, b);
  if (t == TY_I32 && i32_binary(op, (int32_t)a.i, (int32_t)b.i, out))
    return VAL_OK;
  if (type_is_float(t)) {
    *out = val_float_binary(op, t, a.f, b.f);
    return VAL_OK;
  }
  *out = (Val){0};
  return val_int_binary(op, t, a, b, out);
}

const char *val_status_text(ValStatus st, OpKind op, TypeKind t, TypeKind bt, Val b, char *buf, size_t cap)
{
  if (st == VAL_DIV_ZERO)
    snprintf(buf, cap, "integer division by zero in '%s'", op_spelling(op));
  else if (st == VAL_BAD_SHIFT)
    snprintf(buf, cap, "shift by %lld is out of range for %s (0 to %d)", (long long)val_convert(bt, t, b).i,
             type_name(t), type_bits(t) - 1);
  else
    snprintf(buf, cap, "no error");
  return buf;
}

/* f16 and bf16 operate in f32 and round once; f32 and f64 as IEEE. */
Val val_float_binary(OpKind op, TypeKind t, double a, double b)
{
  TypeKind work = t == TY_F64 ? TY_F64 : TY_F32;
  double r;
  switch (op) {
  case OP_ADD: r = a + b; break;
  case OP_SUB: r = a - b; break;
  case OP_MUL: r = a * b; break;
  case OP_DIV: r = a / b; break;
  case OP_MOD: r = fmod(a, b); break;
  case OP_MIN: r = fmin(a, b); break;
  case OP_MAX: r = fmax(a, b); break;
  case OP_CEILDIV: r = ceil(val_round(work, a / b)); break;
  /* ordered comparisons, except != (NaN != x is true, as in C) */
  case OP_LT: return (Val){.i = a < b};
  case OP_LE: return (Val){.i = a <= b};
  case OP_GT: return (Val){.i = a > b};
  case OP_GE: return (Val){.i = a >= b};
  case OP_EQ: return (Val){.i = a == b};
  case OP_NE: return (Val){.i = a != b};
  default: DIE("operator '%s' on a float", op_spelling(op));
  }
  return (Val){.f = val_round(t, val_round(work, r))};
}

Val val_unary(OpKind op, TypeKind t, Val a)
{
  switch (op) {
  case OP_NEG: return type_is_float(t) ? (Val){.f = -a.f} : (Val){.i = type_wrap_int(t, (int64_t)(0 - a.u))};
  case OP_NOT: return (Val){.i = !a.i};
  case OP_BNOT: return (Val){.i = type_wrap_int(t, ~a.i)};
  default: DIE("unary operator %d", (int)op);
  }
}

/* Computed in double and rounded once to the result's type: the exact values
 * the GPU's approximations approach (codegen/cg_math.c). */
bool val_intrinsic(IntrinsicKind fn, TypeKind t, const Val *x, Val *out)
{
  double a = x[0].f, r;
  switch (fn) {
  case FN_EXP: r = exp(a); break;
  case FN_EXP2: r = exp2(a); break;
  case FN_LOG: r = log(a); break;
  case FN_LOG2: r = log2(a); break;
  case FN_SQRT: r = sqrt(a); break;
  case FN_RSQRT: r = 1 / sqrt(a); break;
  case FN_TANH: r = tanh(a); break;
  case FN_SIN: r = sin(a); break;
  case FN_COS: r = cos(a); break;
  case FN_ERF: r = erf(a); break;
  case FN_FLOOR: r = floor(a); break;
  case FN_CEIL: r = ceil(a); break;
  case FN_SIGMOID: r = 1 / (1 + exp(-a)); break;
  case FN_POW: r = pow(a, x[1].f); break;
  case FN_FMA: r = t == TY_F64 ? fma(a, x[1].f, x[2].f) : fmaf((float)a, (float)x[1].f, (float)x[2].f); break;
  case FN_ABS:
    if (!type_is_float(t)) {
      *out = (Val){.i = type_wrap_int(t, x[0].i < 0 ? (int64_t)(0 - x[0].u) : x[0].i)};
      return true;
    }
    r = fabs(a);
    break;
  default: return false;
  }
  *out = (Val){.f = val_round(t, r)};
  return true;
}

Val val_combine(ReduceKind op, TypeKind t, Val acc, Val x)
{
  bool s = type_is_signed(t);
  if (type_is_float(t)) {
    double r = op == RED_SUM ? acc.f + x.f : op == RED_MAX ? fmax(acc.f, x.f) : fmin(acc.f, x.f);
    return (Val){.f = val_round(t, r)};
  }
  switch (op) {
  case RED_SUM: return (Val){.i = type_wrap_int(t, (int64_t)(acc.u + x.u))};
  case RED_MAX: return (s ? x.i > acc.i : x.u > acc.u) ? x : acc;
  case RED_MIN: return (s ? x.i < acc.i : x.u < acc.u) ? x : acc;
  }
  return acc;
}

/* Within two roundings of the type (and a little more for sums in another order): the bound
 * test_levels and fuzz_interp compare the levels with; loose for the GPU's approximate f32 math. */
bool val_close(TypeKind t, Val a, Val b, bool loose)
{
  if (!type_is_float(t))
    return a.i == b.i;
  if (isnan(a.f) || isnan(b.f))
    return isnan(a.f) && isnan(b.f);
  if (isinf(a.f) || isinf(b.f))
    return a.f == b.f;
  double rel = t == TY_F16 ? 4e-3 : t == TY_BF16 ? 3e-2 : t == TY_F32 ? (loose ? 1e-4 : 2e-5) : 1e-12;
  double abs_tol = t == TY_F16 ? 2e-3 : t == TY_BF16 ? 2e-2 : 1e-5;
  return fabs(a.f - b.f) <= rel * fmax(fabs(a.f), fabs(b.f)) + abs_tol;
}
