/* fold.c: constant folding over IR expressions.  Used by sema to evaluate
 * shapes and constant indices, and by the specialization pass. */
#include "ir.h"

#include <math.h>

static Expr *fold_cast(Arena *a, Expr *e)
{
  Expr *x = e->a;
  if (x->kind != EX_INT && x->kind != EX_FLOAT)
    return e;
  if (type_is_float(e->type)) {
    double v = x->kind == EX_INT
                   ? (type_is_signed(x->type) || x->type == TY_BOOL ? (double)x->i : (double)(uint64_t)x->i)
                   : x->f;
    if (e->type == TY_F32)
      v = (float)v;
    if (e->type == TY_F16 || e->type == TY_BF16)
      return e; /* rounding to 16-bit floats is left to the target */
    return ex_float(a, e->type, v);
  }
  if (x->kind == EX_FLOAT) {
    if (e->type == TY_BOOL)
      return ex_int(a, TY_BOOL, x->f != 0);
    if (!(x->f > -9.2e18 && x->f < 9.2e18))
      return e; /* out of range: undefined, leave it to run time */
    return ex_int(a, e->type, type_wrap_int(e->type, (int64_t)x->f));
  }
  return ex_int(a, e->type, type_wrap_int(e->type, x->i));
}

typedef struct {
  Arena *a;
  const Kernel *k;
  Diags *d; /* NULL: fold silently (what cannot be folded stays as it is) */
  bool failed;
} FoldCtx;

/* A constant operation whose result the type cannot hold: an error when the
 * caller asked for diagnostics, and the expression is left as it is. */
static Expr *overflow(FoldCtx *c, Expr *e, const char *what)
{
  if (c->d)
    error_at(c->d, e->loc, "constant %s overflows %s", what, type_name(e->type));
  c->failed = true;
  return e;
}

/* Does v, computed exactly, fit signed type t? */
static bool fits_signed(TypeKind t, __int128 v)
{
  int bits = type_bits(t);
  __int128 lo = -((__int128)1 << (bits - 1)), hi = ((__int128)1 << (bits - 1)) - 1;
  return v >= lo && v <= hi;
}

static Expr *fold_int_binary(FoldCtx *c, Expr *e, int64_t x, int64_t y)
{
  Arena *a = c->a;
  TypeKind t = e->a->type;
  bool s = type_is_signed(t);
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  int64_t r;
  /* Signed arithmetic that leaves the type is an error (C calls it
   * undefined; the GPU would wrap); unsigned arithmetic wraps. */
  if (s && (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL)) {
    __int128 v = e->op == OP_ADD ? (__int128)x + y : e->op == OP_SUB ? (__int128)x - y : (__int128)x * y;
    if (!fits_signed(t, v))
      return overflow(c, e,
                      e->op == OP_ADD   ? "addition"
                      : e->op == OP_SUB ? "subtraction"
                                        : "multiplication");
  }
  if ((e->op == OP_SHL || e->op == OP_SHR) && (y < 0 || y >= type_bits(t)) && c->d) {
    error_at(c->d, e->loc, "shift by %lld is out of range for %s (0 to %d)", (long long)y, type_name(t),
             type_bits(t) - 1);
    c->failed = true;
    return e;
  }
  switch ((OpKind)e->op) {
  case OP_ADD: r = (int64_t)(ux + uy); break;
  case OP_SUB: r = (int64_t)(ux - uy); break;
  case OP_MUL: r = (int64_t)(ux * uy); break;
  case OP_DIV:
  case OP_MOD:
  case OP_CEILDIV:
    if (s && y == -1 && !fits_signed(t, -(__int128)x) && e->op != OP_MOD)
      return overflow(c, e, "division");
    if (s && e->op == OP_CEILDIV && !fits_signed(t, (__int128)x + y - 1))
      return overflow(c, e, "ceildiv");
    if (y == 0 || (s && y == -1 && x == INT64_MIN))
      return e; /* left for the caller to diagnose */
    if (e->op == OP_DIV)
      r = s ? x / y : (int64_t)(ux / uy);
    else if (e->op == OP_MOD)
      r = s ? x % y : (int64_t)(ux % uy);
    else
      r = s ? (x + y - 1) / y : (int64_t)((ux + uy - 1) / uy);
    break;
  case OP_SHL: r = (y < 0 || y >= 64) ? 0 : (int64_t)(ux << y); break;
  case OP_SHR: r = (y < 0 || y >= 64) ? 0 : s ? x >> y : (int64_t)(ux >> y); break;
  case OP_BAND:
  case OP_LAND: r = x & y; break;
  case OP_BOR:
  case OP_LOR: r = x | y; break;
  case OP_BXOR: r = x ^ y; break;
  case OP_LT: r = s ? x < y : ux < uy; break;
  case OP_LE: r = s ? x <= y : ux <= uy; break;
  case OP_GT: r = s ? x > y : ux > uy; break;
  case OP_GE: r = s ? x >= y : ux >= uy; break;
  case OP_EQ: r = x == y; break;
  case OP_NE: r = x != y; break;
  case OP_MIN: r = (s ? x < y : ux < uy) ? x : y; break;
  case OP_MAX: r = (s ? x > y : ux > uy) ? x : y; break;
  default: return e;
  }
  return ex_int(a, e->type, op_is_comparison((OpKind)e->op) ? r : type_wrap_int(e->type, r));
}

static Expr *fold_float_binary(Arena *a, Expr *e, double x, double y)
{
  double r;
  switch ((OpKind)e->op) {
  case OP_ADD: r = x + y; break;
  case OP_SUB: r = x - y; break;
  case OP_MUL: r = x * y; break;
  case OP_DIV: r = x / y; break;
  case OP_LT: return ex_int(a, TY_BOOL, x < y);
  case OP_LE: return ex_int(a, TY_BOOL, x <= y);
  case OP_GT: return ex_int(a, TY_BOOL, x > y);
  case OP_GE: return ex_int(a, TY_BOOL, x >= y);
  case OP_EQ: return ex_int(a, TY_BOOL, x == y);
  case OP_NE: return ex_int(a, TY_BOOL, x != y);
  case OP_MIN: r = fmin(x, y); break;
  case OP_MAX: r = fmax(x, y); break;
  default: return e;
  }
  if (e->type == TY_F16 || e->type == TY_BF16)
    return e;
  return ex_float(a, e->type, e->type == TY_F32 ? (double)(float)r : r);
}

static Expr *fold_one(void *ctx, Expr *e)
{
  FoldCtx *c = ctx;
  Arena *a = c->a;
  switch (e->kind) {
  case EX_VAR: {
    const Var *v = &c->k->vars[e->var];
    if (v->kind != VAR_CONST)
      return e;
    Expr *r = v->cval_is_float ? ex_float(a, v->type, v->cval_f) : ex_int(a, v->type, v->cval_i);
    r->loc = e->loc;
    return r;
  }
  case EX_UNARY:
    if (e->a->kind == EX_INT) {
      int64_t x = e->a->i;
      if (e->op == OP_NEG && type_is_signed(e->type) && !fits_signed(e->type, -(__int128)x))
        return overflow(c, e, "negation");
      int64_t r = e->op == OP_NEG ? (int64_t)(0 - (uint64_t)x) : e->op == OP_NOT ? !x : ~x;
      return ex_int(a, e->type, e->type == TY_BOOL ? (r & 1) : type_wrap_int(e->type, r));
    }
    if (e->a->kind == EX_FLOAT && e->op == OP_NEG)
      return ex_float(a, e->type, -e->a->f);
    return e;
  case EX_BINARY:
    if (e->a->kind == EX_INT && e->b->kind == EX_INT)
      return fold_int_binary(c, e, e->a->i, e->b->i);
    if (e->a->kind == EX_FLOAT && e->b->kind == EX_FLOAT)
      return fold_float_binary(a, e, e->a->f, e->b->f);
    return e;
  case EX_CAST:
    if (e->a->type == e->type)
      return e->a;
    return fold_cast(a, e);
  case EX_SELECT:
    if (e->a->kind == EX_INT)
      return e->a->i ? e->b : e->c;
    return e;
  default: return e;
  }
}

Expr *ir_fold(Arena *a, const Kernel *k, Expr *e)
{
  FoldCtx c = {a, k, NULL, false};
  return expr_rewrite(e, fold_one, &c);
}

Expr *ir_fold_checked(Arena *a, const Kernel *k, Expr *e, Diags *d, bool *ok)
{
  FoldCtx c = {a, k, d, false};
  Expr *r = expr_rewrite(e, fold_one, &c);
  *ok &= !c.failed;
  return r;
}

bool ir_fold_stmt_checked(Arena *a, const Kernel *k, Stmt *s, Diags *d)
{
  FoldCtx c = {a, k, d, false};
  stmt_rewrite_exprs(s, fold_one, &c);
  return !c.failed;
}

bool ir_eval_int(Arena *a, const Kernel *k, const Expr *e, int64_t *out)
{
  Expr *f = ir_fold(a, k, ex_clone(a, e));
  return ex_is_const_int(f, out);
}

void ir_fold_stmt(Arena *a, const Kernel *k, Stmt *s)
{
  FoldCtx c = {a, k, NULL, false};
  stmt_rewrite_exprs(s, fold_one, &c);
}

/* x * 0 and 0 * x -> 0; x * 1, 1 * x, x + 0, 0 + x, x - 0 -> x (integers).  Only for
 * expressions that read no memory (a grid's dimensions), where dropping x loses nothing. */
static Expr *identity_one(void *ctx, Expr *e)
{
  Arena *a = ctx;
  if (e->kind != EX_BINARY || !type_is_int(e->type) || e->a->type != e->type || e->b->type != e->type)
    return e;
  int64_t x, y;
  bool ca = ex_is_const_int(e->a, &x), cb = ex_is_const_int(e->b, &y);
  switch (e->op) {
  case OP_MUL:
    if ((ca && x == 0) || (cb && y == 0))
      return ex_int(a, e->type, 0);
    return ca && x == 1 ? e->b : cb && y == 1 ? e->a : e;
  case OP_ADD: return ca && x == 0 ? e->b : cb && y == 0 ? e->a : e;
  case OP_SUB: return cb && y == 0 ? e->a : e;
  default: return e;
  }
}

Expr *ir_fold_identities(Arena *a, Expr *e) { return expr_rewrite(e, identity_one, a); }
