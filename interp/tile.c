/* tile.c: the tile-level interpreter, the reference semantics of .tl.
 *
 * It runs the tile IR the frontend makes (after specialize) on the CPU, one
 * block of the grid after another, with the meaning docs/language.md gives each
 * statement; nothing about threads, layouts or barriers.  In the manner of Lua's
 * lvm.c: one switch over statement kinds (exec) and one over expression kinds
 * (eval), each case a few lines, the tile operations in functions of their own.
 *
 * Values.  Every value is a Val: integers and bool in .i, wrapped to their type's
 * width and sign- or zero-extended to 64 bits (so u32 0xffffffff is 4294967295),
 * floats in .f as a double that holds a value of their type exactly (an f16 value
 * is rounded to f16 whenever it is made: by an operation, done in f32 and rounded
 * once, by a cast, by a store).  + - * / and sqrt done in double and rounded to
 * f32 give the correctly rounded f32 result, as the GPU's .rn instructions do.
 *
 * Memory.  A global tensor is the caller's array in its storage type.  A shared,
 * fragment or local tile is an array of Val of the tile's shape, one per block
 * (all threads of a block see the same tile at this level), with a bit per
 * element that says whether the block wrote it: reading an element whose bit
 * is clear is an error, as is any index outside a tile or a tensor (copies
 * excepted: their edges are masked, as the language says).
 *
 * Errors.  The first problem stops the run: fail() records it in the caller's
 * Diags with the statement's or expression's line and the block, and sets
 * in->failed; eval returns a zero Val from then on and exec returns false. */
#include "interp.h"

#include "tilec_runtime.h" /* f16 and bf16 conversions */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef union {
  int64_t i;
  uint64_t u;
  double f;
} Val;

/* A buffer's storage for the run: a tile's elements and written bits (this
 * block's), or a tensor's data and extents. */
typedef struct {
  Val *v;
  uint8_t *written;
  void *data;
  int64_t dims[TL_MAX_RANK];
  int64_t n; /* elements */
} Store;

typedef struct {
  const Kernel *k;
  Diags *d;
  Val *vars;   /* by variable handle */
  Store *bufs; /* by buffer handle */
  int64_t block[3], grid[3];
  SrcLoc loc;  /* the statement being run */
  bool failed;
} Interp;

/* ---------------------------------------------------------------- errors */

static void fail(Interp *in, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(Interp *in, SrcLoc loc, const char *fmt, ...)
{
  if (in->failed)
    return;
  in->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  error_at(in->d, loc.line ? loc : in->loc, "%s (block %lld, %lld, %lld)", msg, (long long)in->block[0],
           (long long)in->block[1], (long long)in->block[2]);
}

/* "[3, 7]": an element's index, for messages. */
static const char *index_text(char *buf, size_t cap, const int64_t *idx, int n)
{
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "[", (long long)idx[i]);
  if (len < cap)
    snprintf(buf + len, cap - len, "]");
  return buf;
}

/* ---------------------------------------------------------------- values */

static const Val zero;

/* x rounded to float type t, to nearest even; f16 and bf16 through f32, as the
 * GPU narrows an f32 result. */
static double round_to(TypeKind t, double x)
{
  switch (t) {
  case TY_F16: return tl_f16_to_float(tl_f16_from_float((float)x));
  case TY_BF16: return tl_bf16_to_float(tl_bf16_from_float((float)x));
  case TY_F32: return (float)x;
  default: return x;
  }
}

/* A cast (docs/language.md, "Casts"). */
static Val convert(TypeKind from, TypeKind to, Val v)
{
  Val r;
  if (from == to)
    return v;
  if (to == TY_BOOL) {
    r.i = type_is_float(from) ? v.f != 0 : v.i != 0;
  } else if (type_is_float(to) && type_is_float(from)) {
    r.f = from == TY_F64 && to == TY_F16    ? tl_f16_to_float(tl_f16_from_double(v.f))
          : from == TY_F64 && to == TY_BF16 ? tl_bf16_to_float(tl_bf16_from_double(v.f))
                                            : round_to(to, v.f);
  } else if (type_is_float(to)) {
    bool s = from != TY_BOOL && type_is_signed(from);
    if (to == TY_F64)
      r.f = s ? (double)v.i : (double)v.u;
    else
      r.f = round_to(to, s ? (float)v.i : (float)v.u);
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

/* ---------------------------------------------------------------- memory */

static Val tensor_get(TypeKind t, const void *data, int64_t off)
{
  Val v = zero;
  switch (t) {
  case TY_BOOL: v.i = ((const uint8_t *)data)[off] != 0; break;
  case TY_I8: v.i = ((const int8_t *)data)[off]; break;
  case TY_I16: v.i = ((const int16_t *)data)[off]; break;
  case TY_I32: v.i = ((const int32_t *)data)[off]; break;
  case TY_I64: v.i = ((const int64_t *)data)[off]; break;
  case TY_U8: v.i = ((const uint8_t *)data)[off]; break;
  case TY_U16: v.i = ((const uint16_t *)data)[off]; break;
  case TY_U32: v.i = ((const uint32_t *)data)[off]; break;
  case TY_U64: v.u = ((const uint64_t *)data)[off]; break;
  case TY_F16: v.f = tl_f16_to_float(((const uint16_t *)data)[off]); break;
  case TY_BF16: v.f = tl_bf16_to_float(((const uint16_t *)data)[off]); break;
  case TY_F32: v.f = ((const float *)data)[off]; break;
  case TY_F64: v.f = ((const double *)data)[off]; break;
  default: DIE("tensor of type %s", type_name(t));
  }
  return v;
}

/* v holds a value of type t already (rounded, wrapped): the conversions here are exact. */
static void tensor_put(TypeKind t, void *data, int64_t off, Val v)
{
  switch (t) {
  case TY_BOOL: ((uint8_t *)data)[off] = v.i != 0; break;
  case TY_I8: ((int8_t *)data)[off] = (int8_t)v.i; break;
  case TY_I16: ((int16_t *)data)[off] = (int16_t)v.i; break;
  case TY_I32: ((int32_t *)data)[off] = (int32_t)v.i; break;
  case TY_I64: ((int64_t *)data)[off] = v.i; break;
  case TY_U8: ((uint8_t *)data)[off] = (uint8_t)v.i; break;
  case TY_U16: ((uint16_t *)data)[off] = (uint16_t)v.i; break;
  case TY_U32: ((uint32_t *)data)[off] = (uint32_t)v.i; break;
  case TY_U64: ((uint64_t *)data)[off] = v.u; break;
  case TY_F16: ((uint16_t *)data)[off] = tl_f16_from_double(v.f); break;
  case TY_BF16: ((uint16_t *)data)[off] = tl_bf16_from_double(v.f); break;
  case TY_F32: ((float *)data)[off] = (float)v.f; break;
  case TY_F64: ((double *)data)[off] = v.f; break;
  default: DIE("tensor of type %s", type_name(t));
  }
}

/* The row-major offset of idx[0..rank) in buffer b, or -1 (and an error) if an
 * index is outside it. */
static int64_t offset_of(Interp *in, SrcLoc loc, int b, const int64_t *idx)
{
  const Buffer *B = &in->k->bufs[b];
  const Store *S = &in->bufs[b];
  int64_t off = 0;
  for (int d = 0; d < B->rank; d++) {
    if (idx[d] < 0 || idx[d] >= S->dims[d]) {
      char t[96];
      fail(in, loc, "index %s is out of bounds of %s '%s': dimension %d has size %lld",
           index_text(t, sizeof t, idx, B->rank), scope_name(B->scope), B->name, d, (long long)S->dims[d]);
      return -1;
    }
    off = off * S->dims[d] + idx[d];
  }
  return off;
}

/* The index of element off of buffer b, for messages. */
static void unflatten(const Interp *in, int b, int64_t off, int64_t *idx)
{
  for (int d = in->k->bufs[b].rank - 1; d >= 0; d--) {
    idx[d] = off % in->bufs[b].dims[d];
    off /= in->bufs[b].dims[d];
  }
}

/* Element off of buffer b (idx, for the message). */
static Val read_at(Interp *in, SrcLoc loc, int b, int64_t off, const int64_t *idx)
{
  const Buffer *B = &in->k->bufs[b];
  Store *S = &in->bufs[b];
  if (B->scope == SCOPE_GLOBAL)
    return tensor_get(B->elem, S->data, off);
  if (!S->written[off]) {
    char t[96];
    fail(in, loc, "%s '%s'%s is read before anything wrote it", scope_name(B->scope), B->name,
         index_text(t, sizeof t, idx, B->rank));
    return zero;
  }
  return S->v[off];
}

static void write_at(Interp *in, int b, int64_t off, Val v)
{
  const Buffer *B = &in->k->bufs[b];
  Store *S = &in->bufs[b];
  if (B->scope == SCOPE_GLOBAL) {
    tensor_put(B->elem, S->data, off, v);
    return;
  }
  S->v[off] = v;
  S->written[off] = 1;
}

/* ---------------------------------------------------------------- expressions */

static Val eval(Interp *in, const Expr *e);

/* Evaluates the indices args[0..n) into idx; false after an error. */
static bool eval_indices(Interp *in, Expr *const *args, int n, int64_t *idx)
{
  for (int i = 0; i < n; i++)
    idx[i] = eval(in, args[i]).i;
  return !in->failed;
}

static Val int_binary(Interp *in, const Expr *e, TypeKind t, Val a, Val b)
{
  bool s = t != TY_BOOL && type_is_signed(t);
  int bits = type_bits(t);
  int64_t min = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
  Val r = zero;
  switch ((OpKind)e->op) {
  case OP_ADD: r.i = (int64_t)(a.u + b.u); break;
  case OP_SUB: r.i = (int64_t)(a.u - b.u); break;
  case OP_MUL: r.i = (int64_t)(a.u * b.u); break;
  case OP_CEILDIV: /* (a + b - 1) / b */
    a.i = type_wrap_int(t, (int64_t)(a.u + b.u - 1));
    /* fall through */
  case OP_DIV:
  case OP_MOD:
    if (b.i == 0) {
      fail(in, e->loc, "integer division by zero in '%s'", op_spelling((OpKind)e->op));
      return zero;
    }
    if (s && a.i == min && b.i == -1)
      r.i = e->op == OP_MOD ? 0 : a.i; /* wraps */
    else if (s)
      r.i = e->op == OP_MOD ? a.i % b.i : a.i / b.i;
    else
      r.u = e->op == OP_MOD ? a.u % b.u : a.u / b.u;
    break;
  case OP_SHL:
  case OP_SHR:
    if (b.i < 0 || b.i >= bits) {
      fail(in, e->loc, "shift by %lld is out of range for %s (0 to %d)", (long long)b.i, type_name(t),
           bits - 1);
      return zero;
    }
    r.i = e->op == OP_SHL ? (int64_t)(a.u << b.i) : s ? a.i >> b.i : (int64_t)(a.u >> b.i);
    break;
  case OP_BAND: r.i = a.i & b.i; break;
  case OP_BOR: r.i = a.i | b.i; break;
  case OP_BXOR: r.i = a.i ^ b.i; break;
  case OP_MIN: r = (s ? a.i < b.i : a.u < b.u) ? a : b; break;
  case OP_MAX: r = (s ? a.i > b.i : a.u > b.u) ? a : b; break;
  case OP_LT: return (Val){.i = s ? a.i < b.i : a.u < b.u};
  case OP_LE: return (Val){.i = s ? a.i <= b.i : a.u <= b.u};
  case OP_GT: return (Val){.i = s ? a.i > b.i : a.u > b.u};
  case OP_GE: return (Val){.i = s ? a.i >= b.i : a.u >= b.u};
  case OP_EQ: return (Val){.i = a.i == b.i};
  case OP_NE: return (Val){.i = a.i != b.i};
  default: DIE("operator '%s' on %s", op_spelling((OpKind)e->op), type_name(t));
  }
  r.i = type_wrap_int(t, r.i);
  return r;
}

/* f16 and bf16 operate in f32 and round once (round_to); f32 and f64 as IEEE. */
static Val float_binary(const Expr *e, TypeKind t, double a, double b)
{
  TypeKind work = t == TY_F64 ? TY_F64 : TY_F32;
  double r;
  switch ((OpKind)e->op) {
  case OP_ADD: r = a + b; break;
  case OP_SUB: r = a - b; break;
  case OP_MUL: r = a * b; break;
  case OP_DIV: r = a / b; break;
  case OP_MOD: r = fmod(a, b); break;
  case OP_MIN: r = fmin(a, b); break;
  case OP_MAX: r = fmax(a, b); break;
  case OP_CEILDIV: r = ceil(round_to(work, a / b)); break;
  /* ordered comparisons, except != (NaN != x is true, as in C) */
  case OP_LT: return (Val){.i = a < b};
  case OP_LE: return (Val){.i = a <= b};
  case OP_GT: return (Val){.i = a > b};
  case OP_GE: return (Val){.i = a >= b};
  case OP_EQ: return (Val){.i = a == b};
  case OP_NE: return (Val){.i = a != b};
  default: DIE("operator '%s' on a float", op_spelling((OpKind)e->op));
  }
  return (Val){.f = round_to(t, round_to(work, r))};
}

static Val binary(Interp *in, const Expr *e)
{
  TypeKind t = e->a->type;
  Val a = eval(in, e->a);
  /* && and || look at their right side only when it matters: the GPU evaluates
   * both (they have no effects), but a guarded x / i must not trip the checks */
  if (e->op == OP_LAND && !a.i)
    return (Val){.i = 0};
  if (e->op == OP_LOR && a.i)
    return (Val){.i = 1};
  Val b = eval(in, e->b);
  if (in->failed)
    return zero;
  if (e->op == OP_LAND || e->op == OP_LOR)
    return (Val){.i = b.i != 0};
  if (e->op == OP_SHL || e->op == OP_SHR)
    b = convert(e->b->type, t, b);
  if (type_is_float(t))
    return float_binary(e, t, a.f, b.f);
  return int_binary(in, e, t, a, b);
}

static Val unary(Interp *in, const Expr *e)
{
  Val a = eval(in, e->a);
  switch ((OpKind)e->op) {
  case OP_NEG:
    return type_is_float(e->type) ? (Val){.f = -a.f} : (Val){.i = type_wrap_int(e->type, (int64_t)(0 - a.u))};
  case OP_NOT: return (Val){.i = !a.i};
  case OP_BNOT: return (Val){.i = type_wrap_int(e->type, ~a.i)};
  default: DIE("unary operator %d", e->op);
  }
}

/* The intrinsics, computed in double and rounded once to the result's type:
 * the exact values the GPU's approximations approach (codegen/cg_math.c). */
static Val call(Interp *in, const Expr *e)
{
  Val x[3] = {zero, zero, zero};
  for (int i = 0; i < e->nargs && i < 3; i++)
    x[i] = eval(in, e->args[i]);
  if (in->failed)
    return zero;
  TypeKind t = e->type;
  double a = x[0].f, r;
  switch ((IntrinsicKind)e->op) {
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
    if (!type_is_float(t))
      return (Val){.i = type_wrap_int(t, x[0].i < 0 ? (int64_t)(0 - x[0].u) : x[0].i)};
    r = fabs(a);
    break;
  default:
    fail(in, e->loc, "'%s' is a thread-level intrinsic", intrinsic_name((IntrinsicKind)e->op));
    return zero;
  }
  return (Val){.f = round_to(t, r)};
}

static Val load(Interp *in, const Expr *e)
{
  int64_t idx[TL_MAX_RANK];
  if (!eval_indices(in, e->args, e->nargs, idx))
    return zero;
  int64_t off = offset_of(in, e->loc, e->buf, idx);
  return off < 0 ? zero : read_at(in, e->loc, e->buf, off, idx);
}

/* One switch over the expression kinds (ir.h's ExprKind). */
static Val eval(Interp *in, const Expr *e)
{
  if (in->failed)
    return zero;
  switch (e->kind) {
  case EX_INT: return (Val){.i = type_wrap_int(e->type, e->i)};
  case EX_FLOAT: return (Val){.f = round_to(e->type, e->f)};
  case EX_VAR: return in->vars[e->var];
  case EX_LOAD: return load(in, e);
  case EX_UNARY: return unary(in, e);
  case EX_BINARY: return binary(in, e);
  case EX_CALL: return call(in, e);
  case EX_CAST: return convert(e->a->type, e->type, eval(in, e->a));
  case EX_SELECT: return eval(in, e->a).i ? eval(in, e->b) : eval(in, e->c); /* only the side chosen */
  case EX_ALIGNED: fail(in, e->loc, "an alignment test is thread-level IR"); return zero;
  }
  DIE("expression kind %d", e->kind);
}

/* ---------------------------------------------------------------- tile operations */

/* The next index of a row-major walk over dims[0..rank); false after the last. */
static bool next_index(int64_t *idx, const int64_t *dims, int rank)
{
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d])
      return true;
    idx[d] = 0;
  }
  return false;
}

/* A side of a copy, resolved: the tensor's origin (R indices) or a whole tile. */
typedef struct {
  int buf;
  bool tensor;
  int64_t origin[TL_MAX_RANK];
} Side;

static bool side_of(Interp *in, const Region *r, Side *s)
{
  *s = (Side){.buf = r->buf, .tensor = in->k->bufs[r->buf].scope == SCOPE_GLOBAL};
  return !r->origin || eval_indices(in, r->origin, r->rank, s->origin);
}

/* The index in side s of element t of a tile of rank r: a tensor's last r
 * dimensions start at the origin; false if it falls outside the tensor. */
static bool place(Interp *in, const Side *s, const int64_t *t, int r, int64_t *off)
{
  const Store *S = &in->bufs[s->buf];
  int R = in->k->bufs[s->buf].rank;
  if (!s->tensor) {
    int64_t o = 0;
    for (int d = 0; d < r; d++)
      o = o * S->dims[d] + t[d];
    *off = o;
    return true;
  }
  int64_t o = 0;
  for (int d = 0; d < R; d++) {
    int64_t i = s->origin[d] + (d >= R - r ? t[d - (R - r)] : 0);
    if (i < 0 || i >= S->dims[d])
      return false;
    o = o * S->dims[d] + i;
  }
  *off = o;
  return true;
}

/* copy(src, dst): element by element over the tile's shape, converted to the
 * destination's type; outside a tensor, reads give 0 and writes are dropped. */
static bool copy_tile(Interp *in, const Stmt *st)
{
  Side src, dst;
  if (!side_of(in, &st->src, &src) || !side_of(in, &st->dst, &dst))
    return false;
  const Buffer *tile = &in->k->bufs[src.tensor ? dst.buf : src.buf];
  TypeKind from = in->k->bufs[src.buf].elem, to = in->k->bufs[dst.buf].elem;
  int r = tile->rank;
  int64_t t[TL_MAX_RANK] = {0};
  do {
    int64_t so, doff;
    if (!place(in, &dst, t, r, &doff))
      continue; /* masked write: the source element is not read either */
    Val v = place(in, &src, t, r, &so) ? read_at(in, st->loc, src.buf, so, t) : zero; /* 0 in every type */
    if (in->failed)
      return false;
    write_at(in, dst.buf, doff, convert(from, to, v));
  } while (next_index(t, tile->tile_shape, r));
  return true;
}

static bool fill_tile(Interp *in, const Stmt *st)
{
  const Buffer *B = &in->k->bufs[st->buf];
  Val v = eval(in, st->value);
  if (in->failed)
    return false;
  v = convert(st->value->type, B->elem, v);
  for (int64_t i = 0; i < in->bufs[st->buf].n; i++)
    write_at(in, st->buf, i, v);
  return true;
}

/* Fails unless every element of tile b was written (gemm's operands). */
static bool all_written(Interp *in, int b)
{
  const Store *S = &in->bufs[b];
  for (int64_t i = 0; i < S->n; i++)
    if (!S->written[i]) {
      int64_t idx[TL_MAX_RANK];
      unflatten(in, b, i, idx);
      read_at(in, in->loc, b, i, idx);
      return false;
    }
  return true;
}

/* c[m, n] += sum over k of op(a)[m, k] * op(b)[k, n]: each product and each
 * sum in f32, k in order, starting from c (the tensor cores' order differs:
 * results agree within f32 rounding, not bit for bit). */
static bool gemm_tiles(Interp *in, const Stmt *st)
{
  const Buffer *A = &in->k->bufs[st->a], *C = &in->k->bufs[st->c];
  if (!all_written(in, st->a) || !all_written(in, st->b) || !all_written(in, st->c))
    return false;
  int64_t M = C->tile_shape[0], N = C->tile_shape[1], K = A->tile_shape[st->trans_a ? 0 : 1];
  const Val *a = in->bufs[st->a].v, *b = in->bufs[st->b].v;
  Val *c = in->bufs[st->c].v;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      float acc = (float)c[m * N + n].f;
      for (int64_t k = 0; k < K; k++) {
        float x = (float)a[st->trans_a ? k * M + m : m * K + k].f;
        float y = (float)b[st->trans_b ? n * K + k : k * N + n].f;
        acc += x * y;
      }
      c[m * N + n].f = acc;
    }
  return true;
}

/* One step of a reduction in type t: acc combined with x. */
static Val combine(ReduceKind op, TypeKind t, Val acc, Val x)
{
  bool s = type_is_signed(t);
  if (type_is_float(t)) {
    double r = op == RED_SUM ? acc.f + x.f : op == RED_MAX ? fmax(acc.f, x.f) : fmin(acc.f, x.f);
    return (Val){.f = round_to(t, r)};
  }
  switch (op) {
  case RED_SUM: return (Val){.i = type_wrap_int(t, (int64_t)(acc.u + x.u))};
  case RED_MAX: return (s ? x.i > acc.i : x.u > acc.u) ? x : acc;
  case RED_MIN: return (s ? x.i < acc.i : x.u < acc.u) ? x : acc;
  }
  return acc;
}

/* dst = reduce(src) over dimension .dim, each element widened to dst's type and
 * combined in order; with .accumulate, combined with dst's old value too. */
static bool reduce_tile(Interp *in, const Stmt *st)
{
  const Buffer *S = &in->k->bufs[st->src_buf], *D = &in->k->bufs[st->buf];
  int64_t outer = 1, len = S->tile_shape[st->dim], inner = 1;
  for (int d = 0; d < S->rank; d++)
    if (d < st->dim)
      outer *= S->tile_shape[d];
    else if (d > st->dim)
      inner *= S->tile_shape[d];
  if (!all_written(in, st->src_buf))
    return false;
  const Val *src = in->bufs[st->src_buf].v;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      Val acc = convert(S->elem, D->elem, src[o * len * inner + i]);
      for (int64_t j = 1; j < len; j++)
        acc = combine(st->reduce, D->elem, acc, convert(S->elem, D->elem, src[(o * len + j) * inner + i]));
      int64_t off = o * inner + i;
      if (st->accumulate) {
        int64_t idx[TL_MAX_RANK];
        unflatten(in, st->buf, off, idx);
        Val old = read_at(in, st->loc, st->buf, off, idx);
        if (in->failed)
          return false;
        acc = combine(st->reduce, D->elem, old, acc);
      }
      write_at(in, st->buf, off, acc);
    }
  return true;
}

/* ---------------------------------------------------------------- statements */

static bool exec(Interp *in, const Stmt *s);

/* for v0, v1, ... in KIND(e0, e1, ...): every kind runs its iterations in order
 * here; a parallel loop's iterations must not depend on each other anyway. */
static bool for_loop(Interp *in, const Stmt *s)
{
  int64_t ext[TL_MAX_RANK], idx[TL_MAX_RANK] = {0};
  if (!eval_indices(in, s->extents, s->nvars, ext))
    return false;
  for (int d = 0; d < s->nvars; d++)
    if (ext[d] <= 0)
      return true;
  do {
    for (int d = 0; d < s->nvars; d++)
      in->vars[s->vars[d]] = (Val){.i = idx[d]};
    if (!exec(in, s->then_s))
      return false;
  } while (next_index(idx, ext, s->nvars));
  return true;
}

/* buf[idx] = value, or += for an atomic. */
static bool store(Interp *in, const Stmt *s, bool add)
{
  int64_t idx[TL_MAX_RANK];
  Val v = eval(in, s->value);
  if (!eval_indices(in, s->idx, s->nidx, idx))
    return false;
  int64_t off = offset_of(in, s->loc, s->buf, idx);
  if (off < 0)
    return false;
  TypeKind t = in->k->bufs[s->buf].elem;
  v = convert(s->value->type, t, v);
  if (add) {
    Val old = read_at(in, s->loc, s->buf, off, idx);
    if (in->failed)
      return false;
    v = combine(RED_SUM, t, old, v);
  }
  write_at(in, s->buf, off, v);
  return true;
}

/* One switch over the statement kinds (ir.h's TL_STMT_KINDS). */
static bool exec(Interp *in, const Stmt *s)
{
  in->loc = s->loc;
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++)
      if (!exec(in, s->body[i]))
        return false;
    return true;
  case ST_LET:
  case ST_ASSIGN: in->vars[s->var] = eval(in, s->value); return !in->failed;
  case ST_STORE: return store(in, s, false);
  case ST_ATOMIC: return store(in, s, true);
  case ST_IF: {
    Val c = eval(in, s->cond);
    if (in->failed)
      return false;
    const Stmt *next = c.i ? s->then_s : s->else_s;
    return !next || exec(in, next);
  }
  case ST_FOR: return for_loop(in, s);
  case ST_COPY: return copy_tile(in, s);
  case ST_FILL: return fill_tile(in, s);
  case ST_GEMM: return gemm_tiles(in, s);
  case ST_REDUCE: return reduce_tile(in, s);
  case ST_EVAL: eval(in, s->value); return !in->failed;
  case ST_BARRIER: /* one block's tiles are one array here: nothing to wait for */
  case ST_CP_COMMIT:
  case ST_CP_WAIT: return true;
  default: fail(in, s->loc, "'%s' is a thread-level statement", stmt_spelling(s->kind)); return false;
  }
}

/* ---------------------------------------------------------------- a run */

static const InterpArg *find_arg(const InterpArg *args, int nargs, const char *name)
{
  for (int i = 0; i < nargs; i++)
    if (args[i].name && !strcmp(args[i].name, name))
      return &args[i];
  return NULL;
}

/* The parameters' values from args: sizes and scalars into vars, tensors'
 * data; every argument must name a parameter and every parameter have one. */
static bool bind_args(Interp *in, const InterpArg *args, int nargs)
{
  const Kernel *k = in->k;
  for (int i = 0; i < nargs; i++) {
    bool known = false;
    for (int p = 0; p < k->nparams && !known; p++) {
      const char *name = k->params[p].is_buffer ? k->bufs[k->params[p].index].name
                                                : k->vars[k->params[p].index].name;
      known = args[i].name && !strcmp(name, args[i].name);
    }
    if (!known) {
      fail(in, k->loc, "kernel '%s' has no parameter named '%s'", k->name,
           args[i].name ? args[i].name : "(null)");
      return false;
    }
  }
  for (int p = 0; p < k->nparams; p++) {
    int h = k->params[p].index;
    const char *name = k->params[p].is_buffer ? k->bufs[h].name : k->vars[h].name;
    const InterpArg *a = find_arg(args, nargs, name);
    if (!a || (k->params[p].is_buffer && !a->data)) {
      fail(in, k->loc, "no %s given for parameter '%s' of kernel '%s'", a ? "data" : "argument", name,
           k->name);
      return false;
    }
    if (k->params[p].is_buffer) {
      in->bufs[h].data = a->data;
      continue;
    }
    TypeKind t = k->vars[h].type;
    in->vars[h] = type_is_float(t) ? (Val){.f = round_to(t, a->f)} : (Val){.i = type_wrap_int(t, a->i)};
    if (k->vars[h].kind == VAR_SIZE && in->vars[h].i < 0) {
      fail(in, k->loc, "size '%s' is negative (%lld)", name, (long long)in->vars[h].i);
      return false;
    }
  }
  return true;
}

/* Tensors' extents from the sizes; tiles' arrays.  false if out of memory. */
static bool allocate(Interp *in)
{
  const Kernel *k = in->k;
  for (int b = 0; b < k->nbufs; b++) {
    const Buffer *B = &k->bufs[b];
    Store *S = &in->bufs[b];
    S->n = 1;
    for (int d = 0; d < B->rank; d++) {
      S->dims[d] = B->scope == SCOPE_GLOBAL ? eval(in, B->shape[d]).i : B->tile_shape[d];
      S->n *= S->dims[d];
    }
    if (B->scope == SCOPE_GLOBAL)
      continue;
    S->v = calloc((size_t)S->n, sizeof *S->v);
    S->written = calloc((size_t)S->n, 1);
    if (!S->v || !S->written) {
      fail(in, B->loc, "out of memory for tile '%s' (%lld elements)", B->name, (long long)S->n);
      return false;
    }
  }
  return !in->failed;
}

bool interp_tile_run(const Kernel *k, const InterpArg *args, int nargs, const InterpOptions *opt, Diags *d)
{
  Interp in = {.k = k, .d = d, .loc = k->loc};
  in.vars = calloc((size_t)k->nvars + 1, sizeof *in.vars);
  in.bufs = calloc((size_t)k->nbufs + 1, sizeof *in.bufs);
  bool ok = in.vars && in.bufs;
  if (!ok)
    error_at(d, k->loc, "out of memory");
  int num_sms = opt && opt->num_sms > 0 ? opt->num_sms : 4;
  for (int v = 0; ok && v < k->nvars; v++)
    if (k->vars[v].kind == VAR_CONST)
      in.vars[v] = k->vars[v].cval_is_float ? (Val){.f = k->vars[v].cval_f} : (Val){.i = k->vars[v].cval_i};
    else if (k->vars[v].kind == VAR_NUM_SMS)
      in.vars[v] = (Val){.i = num_sms};
  ok = ok && bind_args(&in, args, nargs) && allocate(&in);
  for (int g = 0; ok && g < 3; g++) {
    in.grid[g] = g < k->grid_rank ? eval(&in, k->grid[g]).i : 1;
    if (in.grid[g] < 0)
      fail(&in, k->loc, "grid dimension %d of kernel '%s' is negative (%lld)", g, k->name,
           (long long)in.grid[g]);
    ok = !in.failed;
  }
  for (int v = 0; ok && v < k->nvars; v++)
    if (k->vars[v].kind == VAR_GRID_DIM)
      in.vars[v] = (Val){.i = in.grid[k->vars[v].dim]};
  /* every block, x fastest; use_swizzle only reorders them */
  int64_t nblocks = ok ? in.grid[0] * in.grid[1] * in.grid[2] : 0;
  for (int64_t blk = 0; ok && blk < nblocks; blk++) {
    in.block[0] = blk % in.grid[0];
    in.block[1] = blk / in.grid[0] % in.grid[1];
    in.block[2] = blk / in.grid[0] / in.grid[1];
    for (int v = 0; v < k->nvars; v++)
      if (k->vars[v].kind == VAR_BLOCK_IDX)
        in.vars[v] = (Val){.i = in.block[k->vars[v].dim]};
    for (int b = 0; b < k->nbufs; b++)
      if (in.bufs[b].written)
        memset(in.bufs[b].written, 0, (size_t)in.bufs[b].n);
    ok = exec(&in, k->body);
  }
  for (int b = 0; in.bufs && b < k->nbufs; b++) {
    free(in.bufs[b].v);
    free(in.bufs[b].written);
  }
  free(in.vars);
  free(in.bufs);
  return ok && !in.failed;
}
