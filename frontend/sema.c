/* sema.c: name resolution, types and checks; builds the tile IR.
 *
 * Every user error is reported here with its location, and checking goes on
 * where it can so that one run shows several errors.  A function that fails
 * returns NULL after reporting; callers propagate NULL without reporting again. */
#include <ctype.h>
#include "fe.h"
#include "target.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* SYM_TYPE: index is a TypeKind; SYM_EXPR: a value fn's parameter, index into Sema.exprs (the
 * argument, substituted where the name is used) */
typedef enum { SYM_VAR, SYM_BUF, SYM_TYPE, SYM_EXPR } SymKind;

enum { MAX_FN_DEPTH = 16 }; /* fns expanded inside fns */

typedef struct {
  const char *name;
  SymKind kind;
  int index;
} Sym;

typedef struct {
  Arena *a;
  Diags *d;
  Kernel *k;
  Sym *syms;
  int nsyms, cap;
  const ConstDef *defs;
  int ndefs;
  bool *def_used;
  const ConstDef *sizes; /* --size NAME=VALUE: the sizes compiled for (launch constants) */
  int nsizes;
  const Target *target;  /* what has_wgmma() asks about */
  bool *size_used;
  bool in_default;       /* checking a constant's default: next_pow2 of a size is allowed */
  int depth;             /* of check_expr */
  int block_depth;       /* 1 in the kernel's own block */
  bool depth_reported;
  bool in_grid;          /* checking a grid(...) expression: num_sms is allowed */
  int num_sms_var;       /* the kernel's VAR_NUM_SMS, -1 until used */
  struct LetConst {
    int var;
    int64_t v;
  } *let_consts;       /* `let` bindings of compile-time integers, usable where one is needed */
  int nlet_consts, cap_let_consts;
  const char **failed; /* names whose `let` failed (reported): later uses stay quiet */
  int nfailed, cap_failed;
  int grid_dim_var[3]; /* num_blocks(axis)'s VAR_GRID_DIM, -1 until used */
  const Node **fns;    /* the program's fn definitions (N_FN) */
  int nfns;
  int sym_base;        /* names are looked up from here: a fn's body sees its parameters only */
  const Node *expanding[MAX_FN_DEPTH]; /* the fns being expanded, outermost first */
  int nexpanding;
  Expr **exprs;                        /* SYM_EXPR values */
  int nexprs, cap_exprs;
} Sema;

/* ---------------------------------------------------------------- scopes */

static void sym_push(Sema *s, const char *name, SymKind kind, int index)
{
  if (s->nsyms == s->cap) {
    int cap = s->cap ? s->cap * 2 : 32;
    Sym *n = ARENA_ARRAY(s->a, Sym, cap);
    if (s->nsyms)
      memcpy(n, s->syms, sizeof(Sym) * (size_t)s->nsyms);
    s->syms = n;
    s->cap = cap;
  }
  s->syms[s->nsyms++] = (Sym){name, kind, index};
}

static const Sym *sym_lookup(const Sema *s, const char *name)
{
  for (int i = s->nsyms - 1; i >= s->sym_base; i--)
    if (strcmp(s->syms[i].name, name) == 0)
      return &s->syms[i];
  return NULL;
}

/* A name whose declaration failed: its error is reported, so its uses are not "undefined". */
static void note_failed(Sema *s, const char *name)
{
  if (s->nfailed == s->cap_failed) {
    int cap = s->cap_failed ? s->cap_failed * 2 : 8;
    const char **n = ARENA_ARRAY(s->a, const char *, cap);
    if (s->nfailed)
      memcpy(n, s->failed, sizeof *n * (size_t)s->nfailed);
    s->failed = n;
    s->cap_failed = cap;
  }
  s->failed[s->nfailed++] = name;
}

/* Reports `undefined name` unless the name's declaration failed. */
static void undefined_name(Sema *s, SrcLoc loc, const char *name)
{
  for (int i = 0; i < s->nfailed; i++)
    if (!strcmp(s->failed[i], name))
      return;
  for (int i = s->sym_base - 1; i >= 0; i--)
    if (!strcmp(s->syms[i].name, name)) {
      error_at(s->d, loc, "undefined name '%s': a fn sees only its parameters; pass '%s' as one", name, name);
      return;
    }
  error_at(s->d, loc, "undefined name '%s'", name);
}

/* ---------------------------------------------------------------- builtins */

/* The language's builtin names, one row each: what they are and, for the
 * statements, the function that checks a call (check_stmt_call dispatches on
 * this table).  The math functions are the intrinsics table's (ir.h). */
typedef enum {
  BUILTIN_TILE_OP, /* a tile operation: a statement, never a value */
  BUILTIN_KERNEL,  /* a statement that sets a property of the kernel */
  BUILTIN_ALLOC,   /* initializes a let binding */
  BUILTIN_LOOP,    /* the iterator of a for loop */
  BUILTIN_VALUE,   /* a function with a value */
} BuiltinKind;

static Stmt *check_copy(Sema *s, const Node *call);
static Stmt *check_fill_op(Sema *s, const Node *call);
static Stmt *check_clear_op(Sema *s, const Node *call);
static Stmt *check_gemm(Sema *s, const Node *call);
static Stmt *check_reduce(Sema *s, const Node *call);
static Stmt *check_atomic(Sema *s, const Node *call);
static Stmt *check_cumsum(Sema *s, const Node *call);
static Stmt *check_use_swizzle(Sema *s, const Node *call);
static Stmt *check_min_blocks(Sema *s, const Node *call);
static Stmt *check_warp_specialize(Sema *s, const Node *call);

static const struct {
  const char *name;
  BuiltinKind kind;
  Stmt *(*check)(Sema *, const Node *call); /* statements */
} builtins[] = {
    {"copy", BUILTIN_TILE_OP, check_copy},
    {"fill", BUILTIN_TILE_OP, check_fill_op},
    {"clear", BUILTIN_TILE_OP, check_clear_op},
    {"gemm", BUILTIN_TILE_OP, check_gemm},
    {"reduce_sum", BUILTIN_TILE_OP, check_reduce},
    {"reduce_max", BUILTIN_TILE_OP, check_reduce},
    {"reduce_min", BUILTIN_TILE_OP, check_reduce},
    {"reduce_argmax", BUILTIN_TILE_OP, check_reduce},
    {"reduce_argmin", BUILTIN_TILE_OP, check_reduce},
    {"cumsum", BUILTIN_TILE_OP, check_cumsum},
    {"atomic_add", BUILTIN_TILE_OP, check_atomic},
    {"atomic_max", BUILTIN_TILE_OP, check_atomic},
    {"atomic_min", BUILTIN_TILE_OP, check_atomic},
    {"use_swizzle", BUILTIN_KERNEL, check_use_swizzle},
    {"min_blocks_per_sm", BUILTIN_KERNEL, check_min_blocks},
    {"warp_specialize", BUILTIN_KERNEL, check_warp_specialize},
    {"alloc_shared", BUILTIN_ALLOC, NULL},
    {"alloc_fragment", BUILTIN_ALLOC, NULL},
    {"alloc_local", BUILTIN_ALLOC, NULL},
    {"serial", BUILTIN_LOOP, NULL},
    {"parallel", BUILTIN_LOOP, NULL},
    {"pipelined", BUILTIN_LOOP, NULL},
    {"min", BUILTIN_VALUE, NULL},
    {"max", BUILTIN_VALUE, NULL},
    {"ceildiv", BUILTIN_VALUE, NULL},
    {"select", BUILTIN_VALUE, NULL},
    {"num_sms", BUILTIN_VALUE, NULL},
    {"num_blocks", BUILTIN_VALUE, NULL},
    {"sizeof", BUILTIN_VALUE, NULL},
    {"has_wgmma", BUILTIN_VALUE, NULL},
    {"same_type", BUILTIN_VALUE, NULL},
};

/* The row of builtin `name`, or -1. */
static int builtin_find(const char *name)
{
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (strcmp(builtins[i].name, name) == 0)
      return (int)i;
  return -1;
}

static bool is_reserved(const char *name)
{
  return builtin_find(name) >= 0 || intrinsic_lookup(name, strlen(name)) >= 0;
}

/* Declares a name in the current scope; reports a clash with a kernel-level
 * name (a parameter, constant, size or block index) or a builtin. */
static bool declare(Sema *s, const char *name, SrcLoc loc, SymKind kind, int index)
{
  if (is_reserved(name)) {
    error_at(s->d, loc, "'%s' is a builtin and cannot be redefined", name);
    return false;
  }
  const Sym *old = sym_lookup(s, name);
  if (old) {
    SrcLoc prev = old->kind == SYM_VAR   ? s->k->vars[old->index].loc
                  : old->kind == SYM_BUF ? s->k->bufs[old->index].loc
                                         : NO_LOC;
    error_at(s->d, loc, "redefinition of '%s'", name);
    if (prev.line)
      note_at(s->d, prev, "'%s' was defined here", name);
    return false;
  }
  sym_push(s, name, kind, index);
  return true;
}

static int new_var(Sema *s, const char *name, VarKind kind, TypeKind t, SrcLoc loc)
{
  Var v = {0};
  v.name = name;
  v.kind = kind;
  v.type = t;
  v.loc = loc;
  v.param_index = -1;
  return kernel_add_var(s->a, s->k, v);
}

/* The type a type constant's name stands for, or TY_VOID (not reported). */
static TypeKind type_const(const Sema *s, const char *name)
{
  const Sym *sym = sym_lookup(s, name);
  return sym && sym->kind == SYM_TYPE ? (TypeKind)sym->index : TY_VOID;
}

/* A written type: concrete, or a type constant's name.  TY_VOID after an error. */
static TypeKind resolve_type(Sema *s, TypeKind t, const char *tname, SrcLoc loc)
{
  if (!tname)
    return t;
  TypeKind r = type_const(s, tname);
  if (r == TY_VOID) {
    const Sym *sym = sym_lookup(s, tname);
    if (sym)
      error_at(s->d, loc, "'%s' is not a type", tname);
    else
      error_at(s->d, loc, "unknown type '%s'", tname);
  }
  return r;
}

/* ---------------------------------------------------------------- expressions */

static Expr *check_expr(Sema *s, const Node *n, TypeKind hint);
static bool sema_eval_int(Sema *s, const Expr *e, int64_t *out);

/* A literal whose type comes from its context, as in Go: `x * 2` takes x's
 * type.  Bounded depth: beyond it an expression counts as typed. */
static bool is_untyped_depth(const Node *n, int depth)
{
  if (depth > 64)
    return false;
  if (n->kind == N_INT || n->kind == N_FLOAT)
    return true;
  if (n->kind == N_UNARY && n->op == OP_NEG)
    return is_untyped_depth(n->a, depth + 1);
  if (n->kind == N_BINARY && !op_is_comparison((OpKind)n->op) && n->op != OP_LAND && n->op != OP_LOR)
    return is_untyped_depth(n->a, depth + 1) && is_untyped_depth(n->b, depth + 1);
  return false;
}

static bool is_untyped(const Node *n) { return is_untyped_depth(n, 0); }

static bool int_fits(TypeKind t, int64_t v)
{
  switch (t) {
  case TY_I8: return v >= INT8_MIN && v <= INT8_MAX;
  case TY_I16: return v >= INT16_MIN && v <= INT16_MAX;
  case TY_I32: return v >= INT32_MIN && v <= INT32_MAX;
  case TY_U8: return v >= 0 && v <= UINT8_MAX;
  case TY_U16: return v >= 0 && v <= UINT16_MAX;
  case TY_U32: return v >= 0 && v <= UINT32_MAX;
  case TY_U64: return v >= 0;
  default: return true;
  }
}

/* 8-bit floats (e4m3, e5m2) are for storage and the tensor cores: values are loaded, stored,
 * copied, selected and converted, and every operation converts them first.  The conversions are
 * the cvt instructions (f16x2 <- e4m3x2, e4m3x2 <- f32 with saturation) of sm_90, and of sm_89 from
 * PTX 8.1 only, above that target's ISA (target.h): sm_90 and later. */
static bool fp8_no_arith(Sema *s, SrcLoc loc, TypeKind t, const char *what)
{
  if (!type_is_fp8(t))
    return true;
  error_at(s->d, loc, "%s on %s values: 8-bit floats are for storage and gemm; convert first, as f32(x)",
           what, type_name(t));
  return false;
}

static bool fp8_convert_ok(Sema *s, SrcLoc loc, TypeKind from, TypeKind to)
{
  if ((!type_is_fp8(from) && !type_is_fp8(to)) || s->target->sm >= 90)
    return true;
  error_at(
      s->d, loc,
      "converting %s to %s needs sm_90 or later (the cvt instructions of 8-bit floats); the target is %s",
      type_name(from), type_name(to), s->target->name);
  return false;
}

/* A literal of an 8-bit float type: an f32 literal converted (rounded by the target, as f16's are). */
static Expr *fp8_literal(Sema *s, TypeKind t, double v, SrcLoc loc)
{
  if (!fp8_convert_ok(s, loc, TY_F32, t))
    return NULL;
  Expr *e = ex_cast(s->a, t, ex_float(s->a, TY_F32, v));
  e->loc = loc;
  return e;
}

/* primary = INT ;  also "-" INT (negate), so that -128 is an i8 literal rather than -(128).
 * The type is the context's (hint: an integer type, or a float type for 2 in `x * 2` with x an f32),
 * else i32, or i64 when the value does not fit in i32; a value that does not fit is reported. */
static Expr *check_int_literal(Sema *s, const Node *n, TypeKind hint, bool negate)
{
  if (n->overflow || (negate && n->ival < 0)) {
    error_at(s->d, n->loc, "integer literal is too large");
    return NULL;
  }
  int64_t v = negate ? -n->ival : n->ival;
  if (type_is_fp8(hint))
    return fp8_literal(s, hint, (double)v, n->loc);
  if (type_is_float(hint)) {
    Expr *e = ex_float(s->a, hint, (double)v);
    e->loc = n->loc;
    return e;
  }
  TypeKind t = type_is_int(hint) ? hint : (int_fits(TY_I32, v) ? TY_I32 : TY_I64);
  if (!int_fits(t, v)) {
    error_at(s->d, n->loc, "integer literal %" PRId64 " does not fit in %s", v, type_name(t));
    return NULL;
  }
  Expr *e = ex_int(s->a, t, v);
  e->loc = n->loc;
  return e;
}

/* primary = FLOAT ;  also "-" FLOAT (negate).  f32 unless the context hints another float type. */
static Expr *check_float_literal(Sema *s, const Node *n, TypeKind hint, bool negate)
{
  if (type_is_fp8(hint))
    return fp8_literal(s, hint, negate ? -n->fval : n->fval, n->loc);
  Expr *e = ex_float(s->a, type_is_float(hint) ? hint : TY_F32, negate ? -n->fval : n->fval);
  e->loc = n->loc;
  return e;
}

static const char *describe_type(TypeKind t) { return type_name(t); }

static Expr *require_type(Sema *s, Expr *e, TypeKind t, SrcLoc loc, const char *what)
{
  if (!e)
    return NULL;
  if (e->type != t) {
    error_at(s->d, loc, "%s has type %s, expected %s", what, describe_type(e->type), describe_type(t));
    return NULL;
  }
  return e;
}

static Expr *require_int(Sema *s, Expr *e, SrcLoc loc, const char *what)
{
  if (e && !type_is_int(e->type)) {
    error_at(s->d, loc, "%s must be an integer, got %s", what, type_name(e->type));
    return NULL;
  }
  return e;
}

/* Does an untyped expression hold a floating-point literal? Then it is a float. */
static bool untyped_has_float(const Node *n, int depth)
{
  if (!n || depth > 64)
    return false;
  if (n->kind == N_FLOAT)
    return true;
  return untyped_has_float(n->a, depth + 1) || untyped_has_float(n->b, depth + 1);
}

/* The two operands of expr binop expr, min/max/ceildiv(a, b) and select's a and b:
 * an untyped side (literals only) takes the other side's type; when both are untyped and one holds
 * a FLOAT literal, both are a float (f32 unless the hint is another float type). */
static bool check_pair(Sema *s, const Node *a, const Node *b, TypeKind hint, Expr **ea, Expr **eb)
{
  if (is_untyped(a) && is_untyped(b) && !type_is_float(hint) &&
      (untyped_has_float(a, 0) || untyped_has_float(b, 0)))
    hint = TY_F32; /* 1 + 2.0 is a float, as 2.0 + 1 is */
  if (is_untyped(a) && !is_untyped(b)) {
    *eb = check_expr(s, b, hint);
    *ea = check_expr(s, a, *eb ? (*eb)->type : hint);
  } else {
    *ea = check_expr(s, a, hint);
    *eb = check_expr(s, b, *ea ? (*ea)->type : hint);
  }
  return *ea && *eb;
}

/* expr = expr binop expr ;  also min(a, b), max(a, b), ceildiv(a, b) (op OP_MIN, OP_MAX, OP_CEILDIV).
 * Both operands have one type (a shift count is converted to the shifted type); && || take bool,
 * and bool takes only && || == != & | ^ min max; % ceildiv & | ^ << >> take no floats; a constant
 * integer divisor must not be 0. */
static Expr *check_binary_op(Sema *s, OpKind op, const Node *an, const Node *bn, SrcLoc loc, TypeKind hint)
{
  Expr *a, *b;
  bool cmp = op_is_comparison(op), logical = op == OP_LAND || op == OP_LOR;
  TypeKind operand_hint = cmp ? TY_VOID : logical ? TY_BOOL : hint;
  if (!check_pair(s, an, bn, operand_hint, &a, &b))
    return NULL;
  if (op == OP_SHL || op == OP_SHR) {
    if (!type_is_int(a->type) || !type_is_int(b->type)) {
      error_at(s->d, loc, "operands of '%s' must be integers, got %s and %s", op_spelling(op),
               type_name(a->type), type_name(b->type));
      return NULL;
    }
    if (b->type != a->type)
      b = ex_cast(s->a, a->type, b);
  } else if (a->type != b->type) {
    error_at(s->d, loc, "mismatched types %s and %s in '%s'; convert one with a cast such as %s(x)",
             type_name(a->type), type_name(b->type), op_spelling(op), type_name(a->type));
    return NULL;
  }
  TypeKind t = a->type;
  if (!fp8_no_arith(s, loc, t, cmp ? "comparison" : "arithmetic"))
    return NULL;
  if (logical && t != TY_BOOL) {
    error_at(s->d, loc, "operands of '%s' must be bool, got %s", op_spelling(op), type_name(t));
    return NULL;
  }
  if (!cmp && !logical) {
    bool bitwise = op == OP_BAND || op == OP_BOR || op == OP_BXOR;
    if (t == TY_BOOL && !bitwise && op != OP_MIN && op != OP_MAX) {
      error_at(s->d, loc, "arithmetic '%s' on bool", op_spelling(op));
      return NULL;
    }
    if ((bitwise || op == OP_MOD || op == OP_CEILDIV) && type_is_float(t)) {
      error_at(s->d, loc, "'%s' needs integer operands, got %s", op_spelling(op), type_name(t));
      return NULL;
    }
  }
  if (cmp && t == TY_BOOL && op != OP_EQ && op != OP_NE) {
    error_at(s->d, loc, "ordering comparison '%s' on bool", op_spelling(op));
    return NULL;
  }
  Expr *e = ex_binary(s->a, op, a, b);
  e->loc = loc;
  /* A constant division by zero is an error now, not a trap later. */
  if ((op == OP_DIV || op == OP_MOD || op == OP_CEILDIV) && type_is_int(t)) {
    int64_t v;
    if (sema_eval_int(s, b, &v) && v == 0) {
      error_at(s->d, bn->loc, "division by zero");
      return NULL;
    }
  }
  return e;
}

static const Node *named_arg(const Node *call, const char *name)
{
  for (int i = 0; i < call->list.n; i++) {
    const Node *a = call->list.items[i];
    if (a->kind == N_NAMED && strcmp(a->name, name) == 0)
      return a->a;
  }
  return NULL;
}

static int count_positional(const Node *call)
{
  int n = 0;
  for (int i = 0; i < call->list.n; i++)
    n += call->list.items[i]->kind != N_NAMED;
  return n;
}

/* Reports named arguments not in `allowed` (NULL-terminated) and duplicates. */
static bool check_named(Sema *s, const Node *call, const char *const *allowed)
{
  bool ok = true;
  for (int i = 0; i < call->list.n; i++) {
    const Node *a = call->list.items[i];
    if (a->kind != N_NAMED)
      continue;
    bool known = false;
    for (int j = 0; allowed && allowed[j]; j++)
      known |= strcmp(allowed[j], a->name) == 0;
    if (!known) {
      error_at(s->d, a->loc, "'%s' has no argument named '%s'", call->name, a->name);
      ok = false;
    }
    for (int j = 0; j < i; j++) {
      const Node *b = call->list.items[j];
      if (b->kind == N_NAMED && strcmp(b->name, a->name) == 0) {
        error_at(s->d, a->loc, "argument '%s' given twice", a->name);
        ok = false;
      }
    }
  }
  return ok;
}

/* The arguments of a builtin, IDENT "(" [ arg { "," arg } ] ")" : lo to hi positional ones, named
 * ones (IDENT "=" expr) only from `named` (check_named). */
static bool check_arity(Sema *s, const Node *call, int lo, int hi, const char *const *named)
{
  int n = count_positional(call);
  if (!check_named(s, call, named))
    return false;
  if (n < lo || n > hi) {
    if (lo == hi)
      error_at(s->d, call->loc, "'%s' takes %d argument%s, got %d", call->name, lo, lo == 1 ? "" : "s", n);
    else
      error_at(s->d, call->loc, "'%s' takes %d to %d arguments, got %d", call->name, lo, hi, n);
    return false;
  }
  return true;
}

static const Node *positional(const Node *call, int i)
{
  for (int j = 0; j < call->list.n; j++)
    if (call->list.items[j]->kind != N_NAMED && i-- == 0)
      return call->list.items[j];
  return NULL;
}

static bool is_builtin(const char *name, BuiltinKind kind)
{
  int b = builtin_find(name);
  return b >= 0 && builtins[b].kind == kind;
}

static bool check_const_int(Sema *s, const Node *n, const char *what, int64_t *out);

/* num_sms: the multiprocessor count of the device a launch runs on, which the host knows and the
 * kernel does not, so only grid(...) may use it (a persistent grid: grid(min(M, num_sms))). */
static Expr *check_num_sms(Sema *s, const Node *n)
{
  if (!s->in_grid) {
    error_at(s->d, n->loc,
             "'num_sms' can be used only in grid(...), which the host evaluates at "
             "launch; in the kernel body, num_blocks(axis) is the grid's size");
    return NULL;
  }
  if (s->num_sms_var < 0)
    s->num_sms_var = new_var(s, "num_sms", VAR_NUM_SMS, TY_I32, n->loc);
  Expr *e = ex_var(s->a, s->k, s->num_sms_var);
  e->loc = n->loc;
  return e;
}

/* num_blocks(axis): the grid's size along axis 0 (x), 1 (y) or 2 (z), as the kernel was launched. */
static Expr *check_num_blocks(Sema *s, const Node *n)
{
  if (s->in_grid) {
    error_at(s->d, n->loc, "num_blocks(...) cannot be used in grid(...): it is the grid's size");
    return NULL;
  }
  if (!check_arity(s, n, 1, 1, NULL))
    return NULL;
  int64_t axis;
  if (!check_const_int(s, positional(n, 0), "the axis of num_blocks", &axis))
    return NULL;
  if (axis < 0 || axis >= s->k->grid_rank) {
    error_at(s->d, n->loc, "num_blocks(%" PRId64 "): the grid has %d dimension%s (axes 0..%d)", axis,
             s->k->grid_rank, s->k->grid_rank == 1 ? "" : "s", s->k->grid_rank - 1);
    return NULL;
  }
  if (s->grid_dim_var[axis] < 0) {
    static const char *const names[3] = {"num_blocks.x", "num_blocks.y", "num_blocks.z"};
    s->grid_dim_var[axis] = new_var(s, names[axis], VAR_GRID_DIM, TY_I32, n->loc);
    s->k->vars[s->grid_dim_var[axis]].dim = (int)axis;
  }
  Expr *e = ex_var(s->a, s->k, s->grid_dim_var[axis]);
  e->loc = n->loc;
  return e;
}

/* The type argument i of call n (a type or a type constant); TY_VOID, reported, if it is not one. */
static TypeKind type_arg(Sema *s, const Node *n, int i, const char *why)
{
  const Node *a = positional(n, i);
  TypeKind t = a->kind == N_TYPE ? a->type : a->kind == N_NAME ? type_const(s, a->name) : TY_VOID;
  if (t == TY_VOID)
    error_at(s->d, a->loc, "%s", why);
  return t;
}

/* sizeof(T): the bytes of one element of a type or type constant, an i32 constant
 * (`[T = f16, BN = 65536 / sizeof(T)]`). */
static Expr *check_sizeof(Sema *s, const Node *n)
{
  if (!check_arity(s, n, 1, 1, NULL))
    return NULL;
  TypeKind t = type_arg(s, n, 0, "sizeof needs a type, such as f16 or a type constant");
  if (t == TY_VOID)
    return NULL;
  Expr *e = ex_int(s->a, TY_I32, type_bytes(t));
  e->loc = n->loc;
  return e;
}

/* same_type(A, B): whether two types or type constants are one element type, a bool constant
 * (`DIRECT = select(same_type(T, f16), 1, 0)`: a default that differs between f16 and bf16, which
 * sizeof cannot tell apart). */
static Expr *check_same_type(Sema *s, const Node *n)
{
  if (!check_arity(s, n, 2, 2, NULL))
    return NULL;
  const char *why = "same_type compares types, such as f16 or a type constant";
  TypeKind a = type_arg(s, n, 0, why), b = type_arg(s, n, 1, why);
  if (a == TY_VOID || b == TY_VOID)
    return NULL;
  Expr *e = ex_int(s->a, TY_BOOL, a == b);
  e->loc = n->loc;
  return e;
}

static bool mentions_launch(const Sema *s, const Expr *e);

/* clamp(x, lo, hi): min(max(x, lo), hi), written as that call would be, so that its operands obey
 * min's and max's rules. */
static Expr *check_clamp(Sema *s, const Node *n, TypeKind hint)
{
  if (!check_arity(s, n, 3, 3, NULL))
    return NULL;
  Node *mx = node_new(s->a, N_CALL, n->loc);
  mx->name = "max";
  nodelist_push(s->a, &mx->list, n->list.items[0]);
  nodelist_push(s->a, &mx->list, n->list.items[1]);
  mx->depth = n->depth;
  Node *mn = node_new(s->a, N_CALL, n->loc);
  mn->name = "min";
  nodelist_push(s->a, &mn->list, mx);
  nodelist_push(s->a, &mn->list, n->list.items[2]);
  mn->depth = n->depth + 1;
  return check_expr(s, mn, hint);
}

/* The smallest power of two >= v (1 for v <= 1); false past 2^62. */
static bool next_pow2_of(int64_t v, int64_t *out)
{
  int64_t p = 1;
  while (p < v) {
    if (p > INT64_MAX / 2)
      return false;
    p *= 2;
  }
  *out = p;
  return true;
}

/* next_pow2(x): an integer known before the kernel runs: folded when x is a constant, evaluated
 * at launch in a constant's default that uses sizes (a launch constant); nowhere else. */
static Expr *check_next_pow2(Sema *s, const Node *n)
{
  if (!check_arity(s, n, 1, 1, NULL))
    return NULL;
  Expr *x = check_expr(s, positional(n, 0), TY_I32);
  if (!x)
    return NULL;
  if (!type_is_int(x->type) || x->type == TY_BOOL) {
    error_at(s->d, positional(n, 0)->loc, "'next_pow2' needs an integer, got %s", type_name(x->type));
    return NULL;
  }
  Expr *f = ir_fold(s->a, s->k, x);
  if (f->kind == EX_INT) {
    int64_t p;
    if (!next_pow2_of(f->i, &p) || !int_fits(x->type, p)) {
      error_at(s->d, n->loc, "next_pow2(%" PRId64 ") does not fit in %s", f->i, type_name(x->type));
      return NULL;
    }
    Expr *e = ex_int(s->a, x->type, p);
    e->loc = n->loc;
    return e;
  }
  if (!s->in_default || !mentions_launch(s, x)) {
    error_at(s->d, n->loc,
             "'next_pow2' needs a value known before the kernel runs: constants, or sizes in a "
             "constant's default");
    return NULL;
  }
  Expr **args = ARENA_ARRAY(s->a, Expr *, 1);
  args[0] = x;
  Expr *e = ex_call(s->a, FN_NEXT_POW2, x->type, args, 1);
  e->loc = n->loc;
  return e;
}

/* postfix = ( IDENT | TYPE ) "(" [ arg { "," arg } ] ")" ;  a call used as a value:
 *   T(x)                          a cast, T a TYPE or a type constant
 *   sizeof(T)  num_blocks(AXIS)   same_type(A, B)   (above)
 *   has_wgmma()                   whether the target has Hopper's wgmma and TMA (sm_90a): a bool
 *   min(a, b)  max(a, b)  ceildiv(a, b)  select(COND, a, b)
 *   an intrinsic (exp, sqrt, fma, ...: docs/language.md section 8), its arguments of one type
 * A tile operation, alloc_* or a loop iterator here is reported as used in the wrong place. */
static const Node *find_fn(const Sema *s, const char *name);
static Expr *expand_value_fn(Sema *s, const Node *fn, const Node *call, TypeKind hint);

static Expr *check_call(Sema *s, const Node *n, TypeKind hint)
{
  const char *name = n->name;
  if (!strcmp(name, "sizeof"))
    return check_sizeof(s, n);
  if (!strcmp(name, "same_type"))
    return check_same_type(s, n);
  if (!strcmp(name, "has_wgmma")) { /* the target's: a default may differ between targets */
    if (!check_arity(s, n, 0, 0, NULL))
      return NULL;
    Expr *e = ex_int(s->a, TY_BOOL, s->target->sm == 90 && s->target->arch_specific);
    e->loc = n->loc;
    return e;
  }
  for (int i = 0; i < n->list.n; i++)
    if (n->list.items[i]->kind == N_TYPE) {
      error_at(s->d, n->list.items[i]->loc, "a type is not a value here");
      return NULL;
    }
  TypeKind cast = type_from_name(name, strlen(name));
  if (cast == TY_VOID)
    cast = type_const(s, name);
  if (cast != TY_VOID) {
    if (!check_arity(s, n, 1, 1, NULL))
      return NULL;
    const Node *x = positional(n, 0);
    Expr *e = check_expr(s, x, is_untyped(x) ? cast : TY_VOID);
    if (!e)
      return NULL;
    if (e->type == cast)
      return e;
    if (!fp8_convert_ok(s, n->loc, e->type, cast))
      return NULL;
    e = ex_cast(s->a, cast, e);
    e->loc = n->loc;
    return e;
  }
  if (!strcmp(name, "min") || !strcmp(name, "max") || !strcmp(name, "ceildiv")) {
    if (!check_arity(s, n, 2, 2, NULL))
      return NULL;
    OpKind op = !strcmp(name, "min") ? OP_MIN : !strcmp(name, "max") ? OP_MAX : OP_CEILDIV;
    return check_binary_op(s, op, positional(n, 0), positional(n, 1), n->loc, hint);
  }
  if (!strcmp(name, "clamp")) /* clamp(x, lo, hi) is min(max(x, lo), hi) */
    return check_clamp(s, n, hint);
  if (!strcmp(name, "next_pow2"))
    return check_next_pow2(s, n);
  if (!strcmp(name, "num_blocks"))
    return check_num_blocks(s, n);
  if (!strcmp(name, "select")) {
    if (!check_arity(s, n, 3, 3, NULL))
      return NULL;
    Expr *c = require_type(s, check_expr(s, positional(n, 0), TY_BOOL), TY_BOOL, positional(n, 0)->loc,
                           "condition of 'select'");
    Expr *a, *b;
    if (!check_pair(s, positional(n, 1), positional(n, 2), hint, &a, &b) || !c)
      return NULL;
    if (a->type != b->type) {
      error_at(s->d, n->loc, "mismatched types %s and %s in 'select'", type_name(a->type),
               type_name(b->type));
      return NULL;
    }
    return ex_select(s->a, c, a, b);
  }
  int fn = intrinsic_lookup(name, strlen(name));
  if (fn >= 0) {
    int na = intrinsic_nargs((IntrinsicKind)fn);
    if (!check_arity(s, n, na, na, NULL))
      return NULL;
    Expr **args = ARENA_ARRAY(s->a, Expr *, na);
    TypeKind t = TY_VOID;
    /* The first typed argument decides; untyped literals follow it. */
    for (int i = 0; i < na; i++)
      if (!is_untyped(positional(n, i))) {
        Expr *e = check_expr(s, positional(n, i), hint);
        if (!e)
          return NULL;
        t = e->type;
        break;
      }
    if (t == TY_VOID) /* all untyped: the context decides (abs(-3) can be an i32) */
      t = type_is_float(hint) || (type_is_int(hint) && !intrinsic_float_only((IntrinsicKind)fn)) ? hint
                                                                                                 : TY_F32;
    for (int i = 0; i < na; i++) {
      args[i] = check_expr(s, positional(n, i), t);
      if (!args[i])
        return NULL;
      if (args[i]->type != t) {
        error_at(s->d, positional(n, i)->loc, "argument of '%s' has type %s, expected %s", name,
                 type_name(args[i]->type), type_name(t));
        return NULL;
      }
    }
    if (!fp8_no_arith(s, n->loc, t, name))
      return NULL;
    if (intrinsic_float_only((IntrinsicKind)fn) && !type_is_float(t)) {
      error_at(s->d, n->loc, "'%s' needs a floating-point argument, got %s; convert it with f32(x)", name,
               type_name(t));
      return NULL;
    }
    if (fn == FN_ABS && (t == TY_BOOL || (type_is_int(t) && !type_is_signed(t)))) {
      error_at(s->d, n->loc, "'abs' needs a signed or floating-point argument, got %s", type_name(t));
      return NULL;
    }
    if (t == TY_F64 && fn != FN_SQRT && fn != FN_ABS && fn != FN_FLOOR && fn != FN_CEIL && fn != FN_FMA) {
      error_at(s->d, n->loc, "'%s' on f64 is not supported yet; compute it in f32", name);
      return NULL;
    }
    Expr *e = ex_call(s->a, (IntrinsicKind)fn, t, args, na);
    e->loc = n->loc;
    return e;
  }
  if (is_builtin(name, BUILTIN_TILE_OP)) {
    error_at(s->d, n->loc, "'%s' does not produce a value; use it as a statement", name);
    return NULL;
  }
  const Node *fn_def = find_fn(s, name);
  if (fn_def) {
    if (!fn_def->a) {
      error_at(s->d, n->loc, "fn '%s' is a block of statements, not a value; call it as a statement", name);
      return NULL;
    }
    return expand_value_fn(s, fn_def, n, hint);
  }
  if (!strncmp(name, "alloc_", 6)) {
    error_at(s->d, n->loc, "'%s' can only initialize a 'let' binding", name);
    return NULL;
  }
  if (is_builtin(name, BUILTIN_LOOP)) {
    error_at(s->d, n->loc, "'%s' can only be used in a 'for' loop", name);
    return NULL;
  }
  error_at(s->d, n->loc, "unknown function '%s'", name);
  return NULL;
}

static const Buffer *lookup_buffer(Sema *s, const Node *n, int *index)
{
  if (n->kind != N_NAME) {
    error_at(s->d, n->loc, "only a named tensor or tile buffer can be indexed");
    return NULL;
  }
  const Sym *sym = sym_lookup(s, n->name);
  if (!sym) {
    undefined_name(s, n->loc, n->name);
    return NULL;
  }
  if (sym->kind != SYM_BUF) {
    error_at(s->d, n->loc, "'%s' is a %s and cannot be indexed", n->name,
             sym->kind == SYM_TYPE ? "type" : "scalar");
    return NULL;
  }
  *index = sym->index;
  return &s->k->bufs[sym->index];
}

/* Indices of buf[...]: integers, one per dimension, constant ones in range. */
/* One index per dimension of b (also for a copy's slices). */
static bool index_count_ok(Sema *s, const Buffer *b, int n, SrcLoc loc)
{
  if (n != b->rank)
    error_at(s->d, loc, "'%s' has %d dimension%s but is indexed with %d", b->name, b->rank,
             b->rank == 1 ? "" : "s", n);
  return n == b->rank;
}

static Expr **check_indices(Sema *s, const Buffer *b, const NodeList *idx, SrcLoc loc)
{
  if (!index_count_ok(s, b, idx->n, loc))
    return NULL;
  Expr **v = ARENA_ARRAY(s->a, Expr *, idx->n);
  bool ok = true;
  for (int i = 0; i < idx->n; i++) {
    const Node *in = idx->items[i];
    if (in->kind == N_SLICE) {
      error_at(s->d, in->loc,
               "a slice names the part of a tensor that copy() moves; '%s' is indexed here by element",
               b->name);
      ok = false;
      continue;
    }
    Expr *e = require_int(s, check_expr(s, in, TY_I32), in->loc, "an index");
    if (!e) {
      ok = false;
      continue;
    }
    if (e->type != TY_I32)
      e = ex_cast(s->a, TY_I32, e);
    int64_t c, extent = 0;
    bool fixed = b->scope != SCOPE_GLOBAL ? (extent = b->tile_shape[i], true)
                                          : ex_is_const_int(b->shape[i], &extent);
    if (sema_eval_int(s, e, &c) && (c < 0 || (fixed && c >= extent))) {
      if (fixed)
        error_at(s->d, in->loc,
                 "index %" PRId64 " is out of range for dimension %d of '%s' (size %" PRId64 ")", c, i,
                 b->name, extent);
      else
        error_at(s->d, in->loc, "index %" PRId64 " is negative", c);
      ok = false;
    }
    v[i] = e;
  }
  return ok ? v : NULL;
}

/* Expressions nest at most MAX_EXPR_DEPTH deep (fe.h; the left spine of
 * `a + b + c + ...` counts too).  The parser stops deeper ones first; this
 * check stays for trees built otherwise. */

static Expr *check_expr_inner(Sema *s, const Node *n, TypeKind hint);

/* expr: any expression, through check_expr_inner, with the depth bound above.  hint: the type an
 * untyped literal takes (TY_VOID: none). */
static Expr *check_expr(Sema *s, const Node *n, TypeKind hint)
{
  if (!n)
    return NULL;
  if (s->depth >= MAX_EXPR_DEPTH) {
    if (!s->depth_reported)
      error_at(s->d, n->loc, "expression nested too deeply (more than %d levels)", MAX_EXPR_DEPTH);
    s->depth_reported = true;
    return NULL;
  }
  s->depth++;
  Expr *e = check_expr_inner(s, n, hint);
  s->depth--;
  return e;
}

/* expr    = expr binop expr | unop expr | postfix ;
 * postfix = primary | postfix "[" expr { "," expr } "]" | call ;
 * primary = INT | FLOAT | "true" | "false" | IDENT | "(" expr ")" | "[" expr { "," expr } "]" ;
 * One node, by kind.  A name is a scalar (a buffer must be indexed, a type constant is no value);
 * ! takes bool, ~ an integer, - a signed or float operand; a list is only an allocation's shape. */
static Expr *check_expr_inner(Sema *s, const Node *n, TypeKind hint)
{
  switch (n->kind) {
  case N_INT: return check_int_literal(s, n, hint, false);
  case N_FLOAT: return check_float_literal(s, n, hint, false);
  case N_BOOL: {
    Expr *e = ex_int(s->a, TY_BOOL, n->ival);
    e->loc = n->loc;
    return e;
  }
  case N_NAME: {
    const Sym *sym = sym_lookup(s, n->name);
    if (!sym && !strcmp(n->name, "num_sms"))
      return check_num_sms(s, n);
    if (!sym) {
      undefined_name(s, n->loc, n->name);
      return NULL;
    }
    if (sym->kind == SYM_TYPE) {
      error_at(s->d, n->loc, "'%s' is a type, not a value", n->name);
      return NULL;
    }
    if (sym->kind == SYM_BUF) {
      error_at(s->d, n->loc, "'%s' is a %s buffer, not a scalar; index it, e.g. %s[i]", n->name,
               scope_name(s->k->bufs[sym->index].scope), n->name);
      return NULL;
    }
    if (sym->kind == SYM_EXPR)
      return ex_clone(s->a, s->exprs[sym->index]);
    Expr *e = ex_var(s->a, s->k, sym->index);
    e->loc = n->loc;
    return e;
  }
  case N_UNARY: {
    if (n->op == OP_NEG && n->a->kind == N_INT)
      return check_int_literal(s, n->a, hint, true);
    if (n->op == OP_NEG && n->a->kind == N_FLOAT)
      return check_float_literal(s, n->a, hint, true);
    Expr *a = check_expr(s, n->a, n->op == OP_NOT ? TY_BOOL : hint);
    if (!a)
      return NULL;
    if (!fp8_no_arith(s, n->loc, a->type, "arithmetic"))
      return NULL;
    if (n->op == OP_NOT && a->type != TY_BOOL) {
      error_at(s->d, n->loc, "'!' needs a bool operand, got %s; compare with 0 instead", type_name(a->type));
      return NULL;
    }
    if (n->op == OP_BNOT && !type_is_int(a->type)) {
      error_at(s->d, n->loc, "'~' needs an integer operand, got %s", type_name(a->type));
      return NULL;
    }
    if (n->op == OP_NEG && (a->type == TY_BOOL || (type_is_int(a->type) && !type_is_signed(a->type)))) {
      error_at(s->d, n->loc, "'-' needs a signed or floating-point operand, got %s", type_name(a->type));
      return NULL;
    }
    Expr *e = ex_unary(s->a, (OpKind)n->op, a);
    e->loc = n->loc;
    return e;
  }
  case N_BINARY: return check_binary_op(s, (OpKind)n->op, n->a, n->b, n->loc, hint);
  case N_CALL: return check_call(s, n, hint);
  case N_INDEX: {
    int bi;
    const Buffer *b = lookup_buffer(s, n->a, &bi);
    if (!b)
      return NULL;
    Expr **idx = check_indices(s, b, &n->list, n->loc);
    if (!idx)
      return NULL;
    Expr *e = ex_load(s->a, s->k, bi, idx, b->rank);
    e->loc = n->loc;
    return e;
  }
  case N_LIST: error_at(s->d, n->loc, "a list is only allowed as the shape of an allocation"); return NULL;
  case N_TYPE: error_at(s->d, n->loc, "a type is not a value here"); return NULL;
  case N_NAMED: error_at(s->d, n->loc, "named argument '%s' is not allowed here", n->name); return NULL;
  case N_SLICE:
    error_at(s->d, n->loc, "a slice is only allowed among a tensor's indices in copy()");
    return NULL;
  default: DIE("unexpected node kind %d in expression", n->kind);
  }
}

static Expr *subst_let_consts(void *ctx, Expr *e)
{
  const Sema *s = ctx;
  if (e->kind == EX_VAR)
    for (int i = 0; i < s->nlet_consts; i++)
      if (s->let_consts[i].var == e->var)
        return ex_int(s->a, e->type, s->let_consts[i].v);
  return e;
}

/* e's value when it is known now: constants, and `let` names bound to such values
 * (`let W = THREADS / 32; ... warps_m = W`). */
static bool sema_eval_int(Sema *s, const Expr *e, int64_t *out)
{
  if (ir_eval_int(s->a, s->k, e, out))
    return true;
  if (!s->nlet_consts)
    return false;
  return ir_eval_int(s->a, s->k, expr_rewrite(ex_clone(s->a, e), subst_let_consts, s), out);
}

/* Remembers that let-bound var has the compile-time value of e, if it has one. */
static void note_let_const(Sema *s, int var, const Expr *e)
{
  int64_t v;
  if (!type_is_int(e->type) || !sema_eval_int(s, e, &v))
    return;
  if (s->nlet_consts == s->cap_let_consts) {
    int cap = s->cap_let_consts ? s->cap_let_consts * 2 : 8;
    struct LetConst *n = ARENA_ARRAY(s->a, struct LetConst, cap);
    if (s->nlet_consts)
      memcpy(n, s->let_consts, sizeof *n * (size_t)s->nlet_consts);
    s->let_consts = n;
    s->cap_let_consts = cap;
  }
  s->let_consts[s->nlet_consts++] = (struct LetConst){var, v};
}

/* A compile-time integer: shapes, thread counts, parallel extents. */
static bool check_const_int(Sema *s, const Node *n, const char *what, int64_t *out)
{
  Expr *e = check_expr(s, n, TY_I32);
  if (!e)
    return false;
  if (!type_is_int(e->type)) {
    error_at(s->d, n->loc, "%s must be an integer, got %s", what, type_name(e->type));
    return false;
  }
  if (!sema_eval_int(s, e, out)) {
    error_at(s->d, n->loc, "%s must be a compile-time constant", what);
    return false;
  }
  return true;
}

/* ---------------------------------------------------------------- statements */

static Stmt *check_stmt(Sema *s, const Node *n);

/* block = "{" { stmt } "}" ;  a scope: the names declared inside end at its "}". */
static Stmt *check_block(Sema *s, const Node *n)
{
  s->block_depth++;
  int mark = s->nsyms;
  StmtList l = {0};
  for (int i = 0; i < n->list.n; i++)
    stlist_push(s->a, &l, check_stmt(s, n->list.items[i]));
  s->nsyms = mark;
  s->block_depth--;
  return stlist_seq(s->a, &l, n->loc);
}

static const int64_t MAX_TILE_ELEMS = 1 << 20;

/* "let" IDENT "=" ( alloc_shared | alloc_fragment | alloc_local ) "(" SHAPE "," T ")" ";"
 *   where SHAPE: "[" expr { "," expr } "]" or one expr, compile-time integers;
 *         T: TYPE or a type constant
 * Declares a tile buffer for the whole kernel (no statement): 1 to TL_MAX_RANK dimensions, at most
 * 2^20 elements in all, no type annotation on the name. */
static Stmt *check_alloc(Sema *s, const Node *let, const Node *call)
{
  Scope scope = !strcmp(call->name, "alloc_shared")     ? SCOPE_SHARED
                : !strcmp(call->name, "alloc_fragment") ? SCOPE_FRAGMENT
                                                        : SCOPE_LOCAL;
  if (!check_arity(s, call, 2, 2, NULL))
    return NULL;
  const Node *shape = positional(call, 0), *type = positional(call, 1);
  TypeKind elem = type->kind == N_TYPE   ? type->type
                  : type->kind == N_NAME ? type_const(s, type->name)
                                         : TY_VOID;
  if (elem == TY_VOID) {
    error_at(s->d, type->loc, "the second argument of '%s' must be an element type such as f32", call->name);
    return NULL;
  }
  Buffer b = {0};
  b.name = let->name;
  b.scope = scope;
  b.elem = elem;
  b.loc = let->loc;
  b.param_index = -1;
  const NodeList *dims = shape->kind == N_LIST ? &shape->list : NULL;
  int rank = dims ? dims->n : 1;
  if (rank < 1 || rank > TL_MAX_RANK) {
    error_at(s->d, shape->loc, "a tile has 1 to %d dimensions, not %d", TL_MAX_RANK, rank);
    return NULL;
  }
  b.rank = rank;
  int64_t total = 1;
  for (int i = 0; i < rank; i++) {
    const Node *dn = dims ? dims->items[i] : shape;
    int64_t v;
    if (!check_const_int(s, dn, "a tile dimension", &v))
      return NULL;
    if (v <= 0 || v > MAX_TILE_ELEMS) {
      error_at(s->d, dn->loc, "tile dimension %" PRId64 " must be between 1 and %" PRId64, v, MAX_TILE_ELEMS);
      return NULL;
    }
    b.tile_shape[i] = v;
    b.shape[i] = ex_int(s->a, TY_I32, v);
    total *= v;
    if (total > MAX_TILE_ELEMS) {
      error_at(s->d, shape->loc, "tile '%s' has more than %" PRId64 " elements", let->name, MAX_TILE_ELEMS);
      return NULL;
    }
  }
  if (let->type != TY_VOID || let->tname) {
    error_at(s->d, let->loc, "a buffer binding takes no type annotation; the type is the allocation's");
    return NULL;
  }
  int bi = kernel_add_buffer(s->a, s->k, b);
  declare(s, let->name, let->loc, SYM_BUF, bi);
  return NULL; /* buffers live for the whole kernel: no statement */
}

/* stmt = ( "let" | "var" ) IDENT [ ":" typeref ] "=" expr ";" ;
 * An alloc_*(...) value binds a tile buffer (check_alloc; 'let' only); otherwise the value has the
 * annotated type, if there is one, and the name is declared after its value is checked. */
static Stmt *check_let(Sema *s, const Node *n)
{
  const Node *v = n->a;
  if (v->kind == N_CALL && !strncmp(v->name, "alloc_", 6) &&
      (!strcmp(v->name, "alloc_shared") || !strcmp(v->name, "alloc_fragment") ||
       !strcmp(v->name, "alloc_local"))) {
    if (n->kind == N_VAR) {
      error_at(s->d, n->loc, "a buffer is bound with 'let', not 'var'");
      return NULL;
    }
    return check_alloc(s, n, v);
  }
  TypeKind want = resolve_type(s, n->type, n->tname, n->tloc);
  if (n->tname && want == TY_VOID)
    return NULL;
  Expr *e = check_expr(s, v, want);
  if (!e)
    return NULL; /* the name stays undefined; later uses report too, which is fine */
  if (want != TY_VOID && e->type != want) {
    error_at(s->d, v->loc, "'%s' is declared %s but initialized with %s", n->name, type_name(want),
             type_name(e->type));
    return NULL;
  }
  int var = new_var(s, n->name, n->kind == N_LET ? VAR_LET : VAR_MUT, e->type, n->loc);
  if (!declare(s, n->name, n->loc, SYM_VAR, var))
    return NULL;
  if (n->kind == N_LET)
    note_let_const(s, var, e);
  Stmt *st = st_new(s->a, n->kind == N_LET ? ST_LET : ST_ASSIGN, n->loc);
  st->var = var;
  st->value = e;
  return st;
}

/* stmt = postfix ( "=" | "+=" | "-=" | "*=" | "/=" ) expr ";"   where postfix: a 'var' or BUF[i, ...]
 * x OP= v is checked as x = x OP v; the value has the var's type or the buffer's element type. */
static Stmt *check_assign(Sema *s, const Node *n)
{
  const Node *lhs = n->a;
  if (lhs->kind == N_NAME) {
    const Sym *sym = sym_lookup(s, lhs->name);
    if (!sym) {
      undefined_name(s, lhs->loc, lhs->name);
      return NULL;
    }
    if (sym->kind == SYM_BUF) {
      error_at(s->d, lhs->loc, "cannot assign to buffer '%s'; assign its elements, or use fill()", lhs->name);
      return NULL;
    }
    if (sym->kind == SYM_TYPE) {
      error_at(s->d, lhs->loc, "cannot assign to type '%s'", lhs->name);
      return NULL;
    }
    if (sym->kind == SYM_EXPR) {
      error_at(s->d, lhs->loc, "cannot assign to '%s', a parameter of a value fn", lhs->name);
      return NULL;
    }
    Var *v = &s->k->vars[sym->index];
    if (v->kind != VAR_MUT) {
      error_at(s->d, lhs->loc, "cannot assign to '%s': only 'var' bindings can change", lhs->name);
      return NULL;
    }
    Expr *rhs;
    if (n->op == OP_COUNT)
      rhs = check_expr(s, n->b, v->type);
    else {
      Node cur = *lhs;
      Node bin = {.kind = N_BINARY, .loc = n->loc, .op = n->op, .a = &cur, .b = n->b};
      rhs = check_expr(s, &bin, v->type);
    }
    if (!require_type(s, rhs, v->type, n->b->loc, "the assigned value"))
      return NULL;
    Stmt *st = st_new(s->a, ST_ASSIGN, n->loc);
    st->var = sym->index;
    st->value = rhs;
    return st;
  }
  if (lhs->kind != N_INDEX) {
    error_at(s->d, lhs->loc, "the left side of an assignment must be a 'var' or an element such as A[i]");
    return NULL;
  }
  int bi;
  const Buffer *b = lookup_buffer(s, lhs->a, &bi);
  if (!b)
    return NULL;
  Expr **idx = check_indices(s, b, &lhs->list, lhs->loc);
  if (!idx)
    return NULL;
  Expr *rhs;
  if (n->op == OP_COUNT)
    rhs = check_expr(s, n->b, b->elem);
  else {
    Node bin = {.kind = N_BINARY, .loc = n->loc, .op = n->op, .a = (Node *)lhs, .b = n->b};
    rhs = check_expr(s, &bin, b->elem);
  }
  if (!require_type(s, rhs, b->elem, n->b->loc, "the stored value"))
    return NULL;
  Stmt *st = st_new(s->a, ST_STORE, n->loc);
  st->buf = bi;
  st->idx = idx;
  st->nidx = b->rank;
  st->value = rhs;
  return st;
}

/* Whether two expressions are written the same way (names, literals, operators, calls): the
 * start of a slice `a : a + LEN` against its end. */
static bool same_spelling(const Node *x, const Node *y, int depth)
{
  if (!x || !y || depth > 64)
    return x == y;
  if (x->kind != y->kind || x->op != y->op || x->list.n != y->list.n)
    return false;
  switch (x->kind) {
  case N_INT: return x->ival == y->ival;
  case N_NAME: return !strcmp(x->name, y->name);
  case N_UNARY:
  case N_BINARY: return same_spelling(x->a, y->a, depth + 1) && same_spelling(x->b, y->b, depth + 1);
  case N_CALL:
  case N_INDEX:
    if ((x->kind == N_CALL && strcmp(x->name, y->name)) || !same_spelling(x->a, y->a, depth + 1))
      return false;
    for (int i = 0; i < x->list.n; i++)
      if (!same_spelling(x->list.items[i], y->list.items[i], depth + 1))
        return false;
    return true;
  default: return false;
  }
}

/* The length of slice `a : b`, a constant: b - a when both are constants, or LEN when b is
 * written `a + LEN` (or `LEN + a`); -1 with an error otherwise. */
static int64_t slice_length(Sema *s, const Node *sl, Expr *start)
{
  int64_t a, b, len;
  Expr *end = require_int(s, check_expr(s, sl->b, TY_I32), sl->b->loc, "the end of a slice");
  if (!end)
    return -1;
  const Node *e = sl->b;
  if (sema_eval_int(s, start, &a) && sema_eval_int(s, end, &b))
    len = b - a;
  else if (e->kind == N_BINARY && e->op == OP_ADD &&
           (same_spelling(e->a, sl->a, 0) || same_spelling(e->b, sl->a, 0))) {
    const Node *ln = same_spelling(e->a, sl->a, 0) ? e->b : e->a;
    Expr *le = require_int(s, check_expr(s, ln, TY_I32), ln->loc, "the length of a slice");
    if (!le)
      return -1;
    if (!sema_eval_int(s, le, &len)) {
      error_at(s->d, ln->loc, "the length of a slice must be a constant");
      return -1;
    }
  } else {
    error_at(s->d, sl->loc, "the length of slice 'a : b' must be a constant: write its end as 'a + LEN'");
    return -1;
  }
  if (len <= 0) {
    error_at(s->d, sl->loc, "slice of length %" PRId64 "; it must be at least 1", len);
    return -1;
  }
  return len;
}

/* A tensor side of copy() with slices: `a : b` and `:` mark the dimensions the tile spans (in
 * order), starting at a (`:` at 0); the other indices fix a position.  lens[i]: the length of the
 * i-th slice (-1 for `:`, which takes the tile's). */
static bool check_slices(Sema *s, const Node *n, const Buffer *b, Region *r, int64_t *lens)
{
  if (!index_count_ok(s, b, n->list.n, n->loc))
    return false;
  r->origin = ARENA_ARRAY(s->a, Expr *, b->rank);
  bool ok = true;
  for (int i = 0; i < b->rank; i++) {
    const Node *in = n->list.items[i];
    const Node *start = in->kind == N_SLICE ? in->a : in;
    Expr *e = start ? require_int(s, check_expr(s, start, TY_I32), start->loc, "an index")
                    : ex_int(s->a, TY_I32, 0);
    if (!e) {
      ok = false;
      continue;
    }
    r->origin[i] = e->type == TY_I32 ? e : ex_cast(s->a, TY_I32, e);
    if (in->kind != N_SLICE)
      continue;
    lens[r->nspan] = in->a ? slice_length(s, in, r->origin[i]) : -1;
    ok = ok && (!in->a || lens[r->nspan] > 0);
    r->span[r->nspan++] = (int8_t)i;
  }
  return ok;
}

static bool has_slice(const Node *n)
{
  for (int i = 0; n->kind == N_INDEX && i < n->list.n; i++)
    if (n->list.items[i]->kind == N_SLICE)
      return true;
  return false;
}

/* One side of copy(): a whole buffer, or a global tensor at an origin (or with slices:
 * check_slices; lens as there). */
static bool check_region(Sema *s, const Node *n, Region *r, int64_t *lens)
{
  int bi;
  const Node *name = n->kind == N_INDEX ? n->a : n;
  if (name->kind != N_NAME) {
    error_at(s->d, n->loc, "copy() takes a buffer, or a tensor at an origin such as A[by * BM, k * BK]");
    return false;
  }
  const Buffer *b = lookup_buffer(s, name, &bi);
  if (!b)
    return false;
  r->buf = bi;
  r->rank = b->rank;
  if (n->kind != N_INDEX) {
    if (b->scope == SCOPE_GLOBAL) { /* the whole tensor from its start */
      r->origin = ARENA_ARRAY(s->a, Expr *, b->rank);
      for (int i = 0; i < b->rank; i++)
        r->origin[i] = ex_int(s->a, TY_I32, 0);
    }
    return true;
  }
  if (b->scope != SCOPE_GLOBAL) {
    error_at(s->d, n->loc, "copy() moves whole tiles; copying part of '%s' is not supported yet", b->name);
    return false;
  }
  if (has_slice(n))
    return check_slices(s, n, b, r, lens);
  r->origin = check_indices(s, b, &n->list, n->loc);
  return r->origin != NULL;
}

/* A copy's slices against its tile: one per tile dimension, each as long as the tile's; slices
 * of the tensor's last dimensions are the plain form (.nspan 0). */
static bool check_spans(Sema *s, const Node *n, Region *g, const int64_t *lens, const Buffer *tile)
{
  if (!g->nspan)
    return true;
  if (g->nspan != tile->rank) {
    error_at(s->d, n->loc,
             "%d slice%s of '%s' for tile '%s' of %d dimension%s: name one per dimension of the tile",
             g->nspan, g->nspan == 1 ? "" : "s", s->k->bufs[g->buf].name, tile->name, tile->rank,
             tile->rank == 1 ? "" : "s");
    return false;
  }
  bool trailing = true;
  for (int i = 0; i < g->nspan; i++) {
    if (lens[i] >= 0 && lens[i] != tile->tile_shape[i]) {
      error_at(s->d, n->list.items[g->span[i]]->loc,
               "slice of length %" PRId64 " for dimension %d of tile '%s', which is %" PRId64 " long",
               lens[i], i, tile->name, tile->tile_shape[i]);
      return false;
    }
    trailing = trailing && g->span[i] == g->rank - g->nspan + i;
  }
  if (trailing)
    g->nspan = 0;
  return true;
}

static void shape_str(StrBuf *sb, const Buffer *b)
{
  sb_puts(sb, "[");
  for (int i = 0; i < b->rank; i++)
    sb_printf(sb, "%s%" PRId64, i ? ", " : "", b->tile_shape[i]);
  sb_puts(sb, "]");
}

/* copy(SRC, DST)   where SRC, DST: a tile buffer, or a tensor at an origin T[i, j] (check_region)
 * Not tensor to tensor; a tile has no more dimensions than its tensor; two tiles have one shape. */
static Stmt *check_copy(Sema *s, const Node *call)
{
  if (!check_arity(s, call, 2, 2, NULL))
    return NULL;
  Stmt *st = st_new(s->a, ST_COPY, call->loc);
  int64_t src_lens[TL_MAX_RANK], dst_lens[TL_MAX_RANK];
  bool ok = check_region(s, positional(call, 0), &st->src, src_lens);
  ok = check_region(s, positional(call, 1), &st->dst, dst_lens) && ok;
  if (!ok)
    return NULL;
  const Buffer *src = &s->k->bufs[st->src.buf], *dst = &s->k->bufs[st->dst.buf];
  if (src->elem != dst->elem && !fp8_convert_ok(s, call->loc, src->elem, dst->elem))
    return NULL;
  if (src->scope == SCOPE_GLOBAL && dst->scope == SCOPE_GLOBAL) {
    error_at(s->d, call->loc, "copy() between two global tensors is not supported; stage through a tile");
    return NULL;
  }
  const Buffer *glob = src->scope == SCOPE_GLOBAL ? src : dst->scope == SCOPE_GLOBAL ? dst : NULL;
  const Buffer *tile = glob == src ? dst : src;
  if (glob) {
    if (tile->rank > glob->rank) {
      error_at(s->d, call->loc, "tile '%s' has %d dimensions, more than tensor '%s' (%d)", tile->name,
               tile->rank, glob->name, glob->rank);
      return NULL;
    }
    bool load = glob == src;
    if (!check_spans(s, positional(call, load ? 0 : 1), load ? &st->src : &st->dst,
                     load ? src_lens : dst_lens, tile))
      return NULL;
    /* Fixed tensor dims smaller than the tile can never be covered fully: fine, masked. */
    return st;
  }
  if (!buffer_same_shape(src, dst)) {
    StrBuf a = {0}, b = {0};
    shape_str(&a, src);
    shape_str(&b, dst);
    error_at(s->d, call->loc, "shape mismatch in copy: '%s' is %s but '%s' is %s", src->name, a.data,
             dst->name, b.data);
    free(a.data);
    free(b.data);
    return NULL;
  }
  return st;
}

static int tile_arg(Sema *s, const Node *n, const char *op, const char *role)
{
  int bi;
  if (n->kind != N_NAME) {
    error_at(s->d, n->loc, "the %s of '%s' must be a tile buffer", role, op);
    return -1;
  }
  const Buffer *b = lookup_buffer(s, n, &bi);
  if (!b)
    return -1;
  if (b->scope == SCOPE_GLOBAL) {
    error_at(s->d, n->loc, "the %s of '%s' must be a tile buffer, but '%s' is a global tensor", role, op,
             b->name);
    return -1;
  }
  return bi;
}

/* fill(TILE, VALUE) | clear(TILE)   (clear: fill with 0)
 * TILE a tile buffer, not a tensor; VALUE of its element type. */
static Stmt *check_fill(Sema *s, const Node *call, bool clear)
{
  if (!check_arity(s, call, clear ? 1 : 2, clear ? 1 : 2, NULL))
    return NULL;
  int bi = tile_arg(s, positional(call, 0), call->name, "first argument");
  if (bi < 0)
    return NULL;
  const Buffer *b = &s->k->bufs[bi];
  Expr *v;
  if (clear)
    v = type_is_float(b->elem) ? ex_float(s->a, b->elem, 0) : ex_int(s->a, b->elem, 0);
  else
    v = require_type(s, check_expr(s, positional(call, 1), b->elem), b->elem, positional(call, 1)->loc,
                     "the fill value");
  if (!v)
    return NULL;
  Stmt *st = st_new(s->a, ST_FILL, call->loc);
  st->buf = bi;
  st->value = v;
  return st;
}

/* IDENT "=" expr, a named bool argument of a builtin (transpose_A = true, clear = false): a
 * compile-time bool; false when it is absent. */
static bool check_bool_named(Sema *s, const Node *call, const char *name, bool *out)
{
  const Node *n = named_arg(call, name);
  *out = false;
  if (!n)
    return true;
  Expr *e = require_type(s, check_expr(s, n, TY_BOOL), TY_BOOL, n->loc, name);
  int64_t v;
  if (!e)
    return false;
  if (!sema_eval_int(s, e, &v)) {
    error_at(s->d, n->loc, "'%s' must be a compile-time constant", name);
    return false;
  }
  *out = v != 0;
  return true;
}

static Stmt *check_fill_op(Sema *s, const Node *call) { return check_fill(s, call, false); }

static Stmt *check_clear_op(Sema *s, const Node *call) { return check_fill(s, call, true); }

/* gemm(A, B, C [, transpose_A = BOOL] [, transpose_B = BOOL] [, warps_m = INT] [, warps_n = INT])
 * 2-D tiles: A and B both f16 or both bf16, B in shared memory, A in shared memory or a fragment
 * (registers: it must have the layout of a gemm accumulator, layout.c; not transposed),
 * C an f32 fragment; or A and B both i8 or both u8, K-major (A [M, K] shared, B^T [N, K]), C i32;
 * M x K times K x N into M x N after the transposes, M % 16, N % 8, K % 16 (8 bits: 32) = 0;
 * warps_m, warps_n constants 1 to 32. */
static Stmt *check_gemm(Sema *s, const Node *call)
{
  static const char *const named[] = {"transpose_A", "transpose_B", "warps_m", "warps_n", NULL};
  if (!check_arity(s, call, 3, 3, named))
    return NULL;
  Stmt *st = st_new(s->a, ST_GEMM, call->loc);
  st->a = tile_arg(s, positional(call, 0), "gemm", "A operand");
  st->b = tile_arg(s, positional(call, 1), "gemm", "B operand");
  st->c = tile_arg(s, positional(call, 2), "gemm", "accumulator");
  if (st->a < 0 || st->b < 0 || st->c < 0)
    return NULL;
  if (!check_bool_named(s, call, "transpose_A", &st->trans_a) ||
      !check_bool_named(s, call, "transpose_B", &st->trans_b))
    return NULL;
  const Buffer *A = &s->k->bufs[st->a], *B = &s->k->bufs[st->b], *C = &s->k->bufs[st->c];
  if (A->rank != 2 || B->rank != 2 || C->rank != 2) {
    error_at(s->d, call->loc, "gemm operands must be 2-dimensional tiles");
    return NULL;
  }
  if (C->scope != SCOPE_FRAGMENT) {
    error_at(s->d, positional(call, 2)->loc, "the accumulator of 'gemm' must be a fragment");
    return NULL;
  }
  if (B->scope != SCOPE_SHARED || A->scope == SCOPE_LOCAL) {
    error_at(s->d, call->loc, "gemm reads B from shared memory and A from shared memory or a fragment");
    return NULL;
  }
  bool int8 = type_is_int8(A->elem);
  bool fp8 = type_is_fp8(A->elem) && type_is_fp8(B->elem); /* e4m3 and e5m2 mix (wgmma's .atype, .btype) */
  if ((A->elem != TY_F16 && A->elem != TY_BF16 && !int8 && !fp8) || (A->elem != B->elem && !fp8)) {
    error_at(
        s->d, call->loc,
        "gemm inputs must both be f16, both bf16, both i8, both u8 or both 8-bit floats (e4m3, e5m2), got "
        "%s and %s",
        type_name(A->elem), type_name(B->elem));
    return NULL;
  }
  if (fp8 && !(s->target->sm == 90 && s->target->arch_specific)) {
    error_at(s->d, call->loc, "gemm on 8-bit floats needs wgmma: compile for sm_90a (the target is %s)",
             s->target->name);
    return NULL;
  }
  if (C->elem != (int8 ? TY_I32 : TY_F32)) {
    error_at(s->d, positional(call, 2)->loc, "the accumulator of 'gemm' on %s inputs must be %s, got %s",
             type_name(A->elem), int8 ? "i32" : "f32", type_name(C->elem));
    return NULL;
  }
  if (A->scope == SCOPE_FRAGMENT && st->trans_a) {
    error_at(s->d, named_arg(call, "transpose_A")->loc,
             "gemm with A in a fragment takes it as [M, K]; transpose_A = true needs A in shared memory");
    return NULL;
  }
  /* The tensor cores read 8-bit operands only along K (mma.sync's .row.col, wgmma's K-major
   * layouts: no transposing load exists for bytes), and take A from shared memory. */
  if ((int8 || fp8) && (st->trans_a || !st->trans_b || A->scope == SCOPE_FRAGMENT)) {
    error_at(s->d, call->loc,
             "gemm on 8-bit inputs reads both operands along K: A as [M, K] in shared memory and B as "
             "[N, K] with transpose_B = true (store B as [N, K], or transpose it into the shared tile in a "
             "parallel loop)");
    return NULL;
  }
  int64_t M = A->tile_shape[st->trans_a], K = A->tile_shape[!st->trans_a];
  int64_t KB = B->tile_shape[st->trans_b], N = B->tile_shape[!st->trans_b];
  if (K != KB || C->tile_shape[0] != M || C->tile_shape[1] != N) {
    error_at(s->d, call->loc,
             "gemm shapes do not agree: A is %" PRId64 "x%" PRId64 ", B is %" PRId64 "x%" PRId64
             ", C is %" PRId64 "x%" PRId64 " (after transposes)",
             M, K, KB, N, C->tile_shape[0], C->tile_shape[1]);
    return NULL;
  }
  const int64_t kstep = int8 || fp8 ? 32 : 16; /* the instruction's K: m16n8k16, m16n8k32 for 8 bits */
  if (M % 16 || N % 8 || K % kstep) {
    error_at(s->d, call->loc,
             "gemm tiles must be multiples of the m16n8k%" PRId64 " instruction: M %% 16, N %% 8 and "
             "K %% %" PRId64 " must be 0 (M=%" PRId64 ", N=%" PRId64 ", K=%" PRId64 ")",
             kstep, kstep, M, N, K);
    return NULL;
  }
  static const char *const wn[] = {"warps_m", "warps_n"};
  for (int i = 0; i < 2; i++) {
    const Node *n = named_arg(call, wn[i]);
    int64_t v = 0;
    if (n && !check_const_int(s, n, wn[i], &v))
      return NULL;
    if (n && (v < 1 || v > 32)) {
      error_at(s->d, n->loc, "%s must be between 1 and 32, got %" PRId64, wn[i], v);
      return NULL;
    }
    *(i ? &st->warps_n : &st->warps_m) = (int)v;
  }
  return st;
}

/* The named argument `dim = d` of a reduction or scan of S (dflt when absent), checked in range. */
static bool dim_arg(Sema *s, const Node *call, const Buffer *S, int64_t dflt, int64_t *dim)
{
  *dim = dflt;
  const Node *dn = named_arg(call, "dim");
  if (dn && !check_const_int(s, dn, "'dim'", dim))
    return false;
  if (*dim < 0 || *dim >= S->rank) {
    error_at(s->d, dn ? dn->loc : call->loc, "dim %" PRId64 " is out of range for a %d-dimensional tile",
             *dim, S->rank);
    return false;
  }
  return true;
}

/* A fragment for a lowering of the frontend's own: like alloc_fragment(shape of `like` without dim
 * `drop` (-1: none), t). */
static int temp_fragment(Sema *s, const char *name, const Buffer *like, int drop, TypeKind t, SrcLoc loc)
{
  Buffer b = {0};
  b.name = arena_printf(s->a, "%s.%d", name, s->k->nbufs);
  b.scope = SCOPE_FRAGMENT;
  b.elem = t;
  b.loc = loc;
  b.param_index = -1;
  for (int i = 0; i < like->rank; i++)
    if (i != drop) {
      b.tile_shape[b.rank] = like->tile_shape[i];
      b.shape[b.rank++] = ex_int(s->a, TY_I32, like->tile_shape[i]);
    }
  if (b.rank == 0) { /* a 1-D source reduces to [1] */
    b.tile_shape[0] = 1;
    b.shape[0] = ex_int(s->a, TY_I32, 1);
    b.rank = 1;
  }
  return kernel_add_buffer(s->a, s->k, b);
}

/* for v.. in parallel(shape of B) { body }: the loop with fresh variables in v[], body set later. */
static Stmt *parallel_over(Sema *s, const Buffer *B, const char *name, Expr **v, SrcLoc loc)
{
  Stmt *loop = st_new(s->a, ST_FOR, loc);
  loop->for_kind = FOR_PARALLEL;
  loop->spells = name;
  loop->nvars = B->rank;
  for (int d = 0; d < B->rank; d++) {
    loop->vars[d] = new_var(s, arena_printf(s->a, "%s.i%d", name, d), VAR_LOOP, TY_I32, loc);
    loop->extents[d] = ex_int(s->a, TY_I32, B->tile_shape[d]);
    v[d] = ex_var(s->a, s->k, loop->vars[d]);
  }
  return loop;
}

/* buf[v with v[dim] replaced by at] */
static Expr *load_at(Sema *s, int buf, Expr **v, int rank, int dim, Expr *at)
{
  Expr **idx = ARENA_ARRAY(s->a, Expr *, rank);
  for (int d = 0; d < rank; d++)
    idx[d] = d == dim ? at : ex_clone(s->a, v[d]);
  return ex_load(s->a, s->k, buf, idx, rank);
}

static Stmt *store_at(Sema *s, int buf, Expr **v, int rank, Expr *value, SrcLoc loc)
{
  Stmt *st = st_new(s->a, ST_STORE, loc);
  st->buf = buf;
  st->idx = ARENA_ARRAY(s->a, Expr *, rank);
  for (int d = 0; d < rank; d++)
    st->idx[d] = ex_clone(s->a, v[d]);
  st->nidx = rank;
  st->value = value;
  return st;
}

/* reduce_argmax(SRC, DST, dim = d) (argmin alike): the index along d of each extreme, the lowest
 * index among equal ones.  Three steps of the existing kind, so layouts and every target follow:
 *   reduce_max(SRC, m, dim = d);                                  m: f32 (f16 / bf16 widened), i32, u32
 *   for v.. in parallel(SRC's shape) { t[v] = select(SRC[v] == m[v without d], v_d, 2^31 - 1) }
 *   reduce_min(t, DST, dim = d);                                  t: i32 of SRC's shape
 * m is read as the rows of SRC (d last) or as a column fragment (d = 0 of 2: shared memory). */
static Stmt *arg_reduce(Sema *s, const Node *call, int src, int dst, int dim, bool max)
{
  const Buffer *S = &s->k->bufs[src];
  TypeKind mt = type_is_float(S->elem) ? TY_F32 : S->elem;
  if (mt != TY_F32 && mt != TY_I32 && mt != TY_U32) {
    error_at(s->d, call->loc, "'%s' of %s elements is not supported; it takes f16, bf16, f32, i32 or u32",
             call->name, type_name(S->elem));
    return NULL;
  }
  int m = temp_fragment(s, max ? "argmax.m" : "argmin.m", S, dim, mt, call->loc);
  int t = temp_fragment(s, max ? "argmax.t" : "argmin.t", &s->k->bufs[src], -1, TY_I32, call->loc);
  S = &s->k->bufs[src]; /* the buffers may have moved */
  Stmt *r1 = st_new(s->a, ST_REDUCE, call->loc);
  r1->src_buf = src;
  r1->buf = m;
  r1->dim = dim;
  r1->reduce = max ? RED_MAX : RED_MIN;
  Expr *v[TL_MAX_RANK], **mi = ARENA_ARRAY(s->a, Expr *, S->rank);
  Stmt *loop = parallel_over(s, S, call->name, v, call->loc);
  int nm = 0;
  for (int d = 0; d < S->rank; d++)
    if (d != dim)
      mi[nm++] = ex_clone(s->a, v[d]);
  if (nm == 0)
    mi[nm++] = ex_int(s->a, TY_I32, 0);
  Expr *x = load_at(s, src, v, S->rank, -1, NULL);
  if (x->type != mt)
    x = ex_cast(s->a, mt, x);
  Expr *hit = ex_binary(s->a, OP_EQ, x, ex_load(s->a, s->k, m, mi, nm));
  loop->then_s = store_at(s, t, v, S->rank,
                          ex_select(s->a, hit, ex_clone(s->a, v[dim]), ex_int(s->a, TY_I32, INT32_MAX)),
                          call->loc);
  Stmt *r2 = st_new(s->a, ST_REDUCE, call->loc);
  r2->src_buf = t;
  r2->buf = dst;
  r2->dim = dim;
  r2->reduce = RED_MIN;
  Stmt **seq = ARENA_ARRAY(s->a, Stmt *, 3);
  seq[0] = r1, seq[1] = loop, seq[2] = r2;
  return st_seq(s->a, seq, 3);
}

/* reduce_sum(SRC, DST [, dim = INT] [, clear = BOOL]), and reduce_max, reduce_min alike
 * Fragments; DST has SRC's shape without dim ([1] for a 1-D SRC), SRC's element type or f32 from
 * f16/bf16, and is f32, i32 or u32; clear = false accumulates.  reduce_argmax / reduce_argmin:
 * DST i32, always cleared (arg_reduce). */
static Stmt *check_reduce(Sema *s, const Node *call)
{
  static const char *const named[] = {"dim", "clear", NULL};
  if (!check_arity(s, call, 2, 2, named))
    return NULL;
  int src = tile_arg(s, positional(call, 0), call->name, "source");
  int dst = tile_arg(s, positional(call, 1), call->name, "destination");
  if (src < 0 || dst < 0)
    return NULL;
  const Buffer *S = &s->k->bufs[src], *D = &s->k->bufs[dst];
  if (!fp8_no_arith(s, call->loc, S->elem, call->name) || !fp8_no_arith(s, call->loc, D->elem, call->name))
    return NULL;
  int64_t dim;
  if (!dim_arg(s, call, S, S->rank - 1, &dim))
    return NULL;
  bool clear = true;
  const Node *cn = named_arg(call, "clear");
  if (cn && !check_bool_named(s, call, "clear", &clear))
    return NULL;
  bool arg = !strncmp(call->name, "reduce_arg", 10);
  if (arg && !clear) {
    error_at(s->d, cn->loc, "'%s' always starts afresh; clear = false is not supported", call->name);
    return NULL;
  }
  if (arg && D->elem != TY_I32) {
    error_at(s->d, call->loc, "'%s' gives indices: its destination must be i32, got %s", call->name,
             type_name(D->elem));
    return NULL;
  }
  bool widen = (S->elem == TY_F16 || S->elem == TY_BF16) && D->elem == TY_F32; /* combined in f32 */
  if (arg)
    widen = true; /* the value reduction below picks its own destination type */
  if (S->elem != D->elem && !widen) {
    error_at(s->d, call->loc, "'%s' source is %s but destination is %s", call->name, type_name(S->elem),
             type_name(D->elem));
    return NULL;
  }
  bool ok = D->rank == (S->rank > 1 ? S->rank - 1 : 1);
  for (int i = 0, j = 0; ok && i < S->rank; i++) {
    if (i == dim)
      continue;
    ok = D->tile_shape[j++] == S->tile_shape[i];
  }
  if (ok && S->rank == 1)
    ok = D->tile_shape[0] == 1;
  if (!ok) {
    error_at(s->d, call->loc,
             "'%s' over dim %" PRId64 " of '%s' needs a destination of the remaining dimensions", call->name,
             dim, S->name);
    return NULL;
  }
  if (S->scope != SCOPE_FRAGMENT || D->scope != SCOPE_FRAGMENT) {
    error_at(s->d, call->loc, "'%s' reduces a fragment into a fragment", call->name);
    return NULL;
  }
  if (D->elem != TY_F32 && D->elem != TY_I32 && D->elem != TY_U32) {
    error_at(s->d, call->loc,
             "'%s' into %s fragments is not supported yet; reduce into an f32, i32 or u32 "
             "fragment (an f16 or bf16 source is widened to f32)",
             call->name, type_name(D->elem));
    return NULL;
  }
  if (arg)
    return arg_reduce(s, call, src, dst, (int)dim, !strcmp(call->name, "reduce_argmax"));
  Stmt *st = st_new(s->a, ST_REDUCE, call->loc);
  st->src_buf = src;
  st->buf = dst;
  st->dim = (int)dim;
  st->accumulate = !clear;
  st->reduce = !strcmp(call->name, "reduce_sum")   ? RED_SUM
               : !strcmp(call->name, "reduce_max") ? RED_MAX
                                                   : RED_MIN;
  return st;
}

/* A shared tile for a lowering of the frontend's own, of like's shape and type t. */
static int temp_shared(Sema *s, const char *name, const Buffer *like, TypeKind t, SrcLoc loc)
{
  int b = temp_fragment(s, name, like, -1, t, loc);
  s->k->bufs[b].scope = SCOPE_SHARED;
  return b;
}

/* The element `off` steps back along dim (forward when reverse), or 0 past the edge:
 * select(v_d >= off, X[.., v_d - off, ..], 0), the index clamped so that the unused side stays in
 * the tile. */
static Expr *shifted(Sema *s, int buf, Expr **v, int rank, int dim, int64_t off, int64_t n, bool reverse)
{
  Expr *vd = v[dim];
  Expr *ok = reverse ? ex_binary(s->a, OP_LT,
                                 ex_binary(s->a, OP_ADD, ex_clone(s->a, vd), ex_int(s->a, TY_I32, off)),
                                 ex_int(s->a, TY_I32, n))
                     : ex_binary(s->a, OP_GE, ex_clone(s->a, vd), ex_int(s->a, TY_I32, off));
  Expr *at = reverse ? ex_binary(s->a, OP_MIN,
                                 ex_binary(s->a, OP_ADD, ex_clone(s->a, vd), ex_int(s->a, TY_I32, off)),
                                 ex_int(s->a, TY_I32, n - 1))
                     : ex_binary(s->a, OP_MAX,
                                 ex_binary(s->a, OP_SUB, ex_clone(s->a, vd), ex_int(s->a, TY_I32, off)),
                                 ex_int(s->a, TY_I32, 0));
  Expr *x = load_at(s, buf, v, rank, dim, at);
  Expr *zero = type_is_float(x->type) ? ex_float(s->a, x->type, 0) : ex_int(s->a, x->type, 0);
  return ex_select(s->a, ok, x, zero);
}

/* cumsum(SRC, DST [, dim = d] [, reverse = b] [, exclusive = b])   TileLang's order and dim = 0 default
 * Fragments or shared tiles of one shape; DST of SRC's type (or f32 from f16 / bf16).  Written by
 * the frontend as parallel loops over two shared tiles of DST's type (Hillis-Steele: after step k
 * each element holds the sum of the 2^k up to it), ceil(log2(n)) steps for n along dim:
 *   A[v] = SRC[v];  B[v] = A[v] + (v_d >= 1 ? A[v_d - 1] : 0);  A[v] = B[v] + (v_d >= 2 ? ...);  ...
 *   DST[v] = A[v]  (exclusive: v_d >= 1 ? A[v_d - 1] : 0) */
static Stmt *check_cumsum(Sema *s, const Node *call)
{
  static const char *const named[] = {"dim", "reverse", "exclusive", NULL};
  if (!check_arity(s, call, 2, 2, named))
    return NULL;
  int src = tile_arg(s, positional(call, 0), "cumsum", "source");
  int dst = tile_arg(s, positional(call, 1), "cumsum", "destination");
  if (src < 0 || dst < 0)
    return NULL;
  const Buffer *S = &s->k->bufs[src], *D = &s->k->bufs[dst];
  if (!fp8_no_arith(s, call->loc, S->elem, "cumsum") || !fp8_no_arith(s, call->loc, D->elem, "cumsum"))
    return NULL;
  int64_t dim;
  if (!dim_arg(s, call, S, 0, &dim))
    return NULL;
  bool reverse = false, exclusive = false;
  if (!check_bool_named(s, call, "reverse", &reverse) || !check_bool_named(s, call, "exclusive", &exclusive))
    return NULL;
  if (!buffer_same_shape(S, D)) {
    StrBuf a = {0}, b = {0};
    shape_str(&a, S);
    shape_str(&b, D);
    error_at(s->d, call->loc, "'cumsum' keeps the shape: '%s' is %s but '%s' is %s", S->name, a.data, D->name,
             b.data);
    free(a.data);
    free(b.data);
    return NULL;
  }
  bool widen = (S->elem == TY_F16 || S->elem == TY_BF16) && D->elem == TY_F32;
  if ((S->elem != D->elem && !widen) || D->elem == TY_BOOL) {
    error_at(s->d, call->loc,
             "'cumsum' source is %s but destination is %s; it sums in the destination's type "
             "(the same, or f32 from f16 / bf16)",
             type_name(S->elem), type_name(D->elem));
    return NULL;
  }
  int rank = S->rank, d = (int)dim;
  int64_t n = S->tile_shape[d];
  int bufs[2] = {temp_shared(s, "cumsum.a", S, D->elem, call->loc),
                 temp_shared(s, "cumsum.b", S, D->elem, call->loc)};
  S = &s->k->bufs[src]; /* the buffers may have moved */
  StmtList out = {0};
  Expr *v[TL_MAX_RANK];
  Stmt *loop = parallel_over(s, S, "cumsum", v, call->loc);
  Expr *x = load_at(s, src, v, rank, -1, NULL);
  loop->then_s = store_at(s, bufs[0], v, rank, x->type == D->elem ? x : ex_cast(s->a, D->elem, x), call->loc);
  stlist_push(s->a, &out, loop);
  int cur = 0;
  for (int64_t off = 1; off < n; off *= 2, cur ^= 1) {
    loop = parallel_over(s, S, "cumsum", v, call->loc);
    Expr *sum = ex_binary(s->a, OP_ADD, load_at(s, bufs[cur], v, rank, -1, NULL),
                          shifted(s, bufs[cur], v, rank, d, off, n, reverse));
    loop->then_s = store_at(s, bufs[cur ^ 1], v, rank, sum, call->loc);
    stlist_push(s->a, &out, loop);
  }
  loop = parallel_over(s, S, "cumsum", v, call->loc);
  Expr *r = exclusive ? shifted(s, bufs[cur], v, rank, d, 1, n, reverse)
                      : load_at(s, bufs[cur], v, rank, -1, NULL);
  loop->then_s = store_at(s, dst, v, rank, r, call->loc);
  stlist_push(s->a, &out, loop);
  return stlist_seq(s->a, &out, call->loc);
}

/* The element types atomic_OP takes: add on every integer of 32 or 64 bits and every float
 * (16-bit floats natively from sm_70, bf16 from sm_90, else through compare-and-swap); max and
 * min on those integers and on f32 / f64 (codegen: integer atomics on the float's bits). */
static bool atomic_type_ok(ReduceKind op, TypeKind t)
{
  bool wide_int = type_is_int(t) && type_bits(t) >= 32;
  if (op == RED_SUM)
    return wide_int || type_is_float(t);
  return wide_int || t == TY_F32 || t == TY_F64;
}

/* atomic_add / atomic_max / atomic_min, TileLang's argument order (destination first):
 *   atomic_OP(BUF[i, ...], VALUE)   one element of a global or shared buffer, VALUE converted to
 *                                   its element type; anywhere (outside a parallel loop the block
 *                                   does it once);
 *   atomic_OP(T[o, ...], TILE)      every element of a fragment or shared tile into global T at the
 *                                   origin (the tile spans T's trailing dimensions, as in copy),
 *                                   elements outside T skipped: a parallel loop over TILE's shape. */
static Stmt *check_atomic(Sema *s, const Node *call)
{
  if (!check_arity(s, call, 2, 2, NULL))
    return NULL;
  ReduceKind op = !strcmp(call->name, "atomic_add")   ? RED_SUM
                  : !strcmp(call->name, "atomic_max") ? RED_MAX
                                                      : RED_MIN;
  const Node *t = positional(call, 0), *vn = positional(call, 1);
  if (t->kind != N_INDEX) {
    error_at(s->d, t->loc,
             "the first argument of '%s' must be an element such as C[i, j], or a tensor at an "
             "origin such as C[m0, n0] when the second is a tile",
             call->name);
    return NULL;
  }
  int bi;
  const Buffer *b = lookup_buffer(s, t->a, &bi);
  if (!b)
    return NULL;
  if (b->scope != SCOPE_GLOBAL && b->scope != SCOPE_SHARED) {
    error_at(s->d, t->loc, "'%s' needs a global or shared buffer, '%s' is a %s", call->name, b->name,
             scope_name(b->scope));
    return NULL;
  }
  if (!atomic_type_ok(op, b->elem)) {
    error_at(s->d, t->loc, "'%s' on %s elements is not supported; it takes %s", call->name,
             type_name(b->elem),
             op == RED_SUM ? "i32, u32, i64, u64, f16, bf16, f32 or f64" : "i32, u32, i64, u64, f32 or f64");
    return NULL;
  }
  Expr **idx = check_indices(s, b, &t->list, t->loc);
  if (!idx)
    return NULL;
  const Sym *vs = vn->kind == N_NAME ? sym_lookup(s, vn->name) : NULL;
  if (!vs || vs->kind != SYM_BUF) {
    Expr *v = check_expr(s, vn, b->elem);
    if (!v)
      return NULL;
    if (v->type != b->elem && (v->type == TY_BOOL || b->elem == TY_BOOL)) {
      require_type(s, v, b->elem, vn->loc, "the value");
      return NULL;
    }
    Stmt *st = st_new(s->a, ST_ATOMIC, call->loc);
    st->buf = bi;
    st->idx = idx;
    st->nidx = b->rank;
    st->value = v->type == b->elem ? v : ex_cast(s->a, b->elem, v);
    st->reduce = op;
    return st;
  }
  /* Tile-wise: for i.. in parallel(TILE's shape): if inside T: atomic_OP(T[o + i ..], TILE[i ..]) */
  const Buffer *tile = &s->k->bufs[vs->index];
  if (tile->scope == SCOPE_GLOBAL || b->scope != SCOPE_GLOBAL) {
    error_at(s->d, call->loc,
             "'%s' of a whole tile goes from a fragment or shared tile into a global tensor "
             "at an origin",
             call->name);
    return NULL;
  }
  if (tile->rank > b->rank) {
    error_at(s->d, call->loc, "tile '%s' has %d dimensions, more than tensor '%s' (%d)", tile->name,
             tile->rank, b->name, b->rank);
    return NULL;
  }
  Expr *v[TL_MAX_RANK], **gi = ARENA_ARRAY(s->a, Expr *, b->rank), *inside = NULL;
  Stmt *loop = parallel_over(s, tile, call->name, v, call->loc);
  int lead = b->rank - tile->rank;
  for (int d = 0; d < b->rank; d++) {
    gi[d] = d >= lead ? ex_binary(s->a, OP_ADD, idx[d], ex_clone(s->a, v[d - lead])) : idx[d];
    Expr *in = ex_binary(s->a, OP_LT, ex_clone(s->a, gi[d]), ex_clone(s->a, b->shape[d]));
    inside = inside ? ex_binary(s->a, OP_LAND, inside, in) : in;
  }
  Stmt *at = st_new(s->a, ST_ATOMIC, call->loc);
  at->buf = bi;
  at->idx = gi;
  at->nidx = b->rank;
  Expr *val = load_at(s, vs->index, v, tile->rank, -1, NULL);
  at->value = val->type == b->elem ? val : ex_cast(s->a, b->elem, val);
  at->reduce = op;
  Stmt *guard = st_new(s->a, ST_IF, call->loc);
  guard->cond = inside;
  guard->then_s = at;
  loop->then_s = guard;
  return loop;
}

/* A kernel-wide setting: NAME(V) with V a constant in [lo, hi] (the message
 * names it `what`), once, in the kernel's own block.  False after an error. */
static bool kernel_setting(Sema *s, const Node *call, const char *what, int64_t lo, int64_t hi, bool given,
                           int64_t *v)
{
  if (!check_arity(s, call, 1, 1, NULL) || !check_const_int(s, positional(call, 0), what, v))
    return false;
  if (*v < lo || *v > hi) {
    error_at(s->d, positional(call, 0)->loc, "%s must be between %" PRId64 " and %" PRId64 ", got %" PRId64,
             what, lo, hi, *v);
    return false;
  }
  if (s->block_depth != 1) {
    error_at(s->d, call->loc,
             "%s applies to the whole kernel: call it in the kernel's own block, "
             "not inside a loop or an if",
             call->name);
    return false;
  }
  if (given) {
    error_at(s->d, call->loc, "%s is given twice", call->name);
    return false;
  }
  return true;
}

/* use_swizzle(P): visit the blocks in panels of P rows of the grid, so that
 * blocks running together share tiles of A and B in L2 (TileLang's name). */
static Stmt *check_use_swizzle(Sema *s, const Node *call)
{
  int64_t p;
  if (!kernel_setting(s, call, "the panel size", 1, 65535, s->k->swizzle_panel != 0, &p))
    return NULL;
  if (s->k->grid_rank < 2) {
    error_at(s->d, call->loc,
             "use_swizzle reorders a 2-dimensional grid; this kernel's grid has %d dimension",
             s->k->grid_rank);
    return NULL;
  }
  s->k->swizzle_panel = (int)p;
  return NULL;
}

/* min_blocks_per_sm(B): ask ptxas to fit B blocks on a multiprocessor (it caps
 * the registers per thread accordingly, spilling if it must); CUDA's second
 * __launch_bounds__ argument.  0 leaves the choice to the compiler. */
static Stmt *check_min_blocks(Sema *s, const Node *call)
{
  int64_t b;
  if (!kernel_setting(s, call, "min_blocks_per_sm", 0, 32, s->k->min_blocks_per_sm != 0, &b))
    return NULL;
  s->k->min_blocks_per_sm = b ? (int)b : -1; /* -1: explicitly none */
  return NULL;
}

/* warp_specialize(W): a producer warpgroup that feeds the pipelined loop's
 * stages while the others multiply (sm_90a).  W = 0: none, every warp
 * multiplies; 1: where it can be done (also the default without the call);
 * 2: required, an error where it cannot be done. */
static Stmt *check_warp_specialize(Sema *s, const Node *call)
{
  int64_t v;
  if (!kernel_setting(s, call, "warp_specialize", 0, 2, s->k->warp_specialize != 0, &v))
    return NULL;
  s->k->warp_specialize = v == 0 ? -1 : (int)v;
  s->k->warp_specialize_loc = call->loc;
  return NULL;
}

/* stmt = postfix ";" ;  a call statement: copy, fill, clear, gemm, reduce_sum/max/min, atomic_add,
 * use_swizzle, min_blocks_per_sm, warp_specialize.  Anything else computes a value for nothing and is
 * reported. */
/* ---------------------------------------------------------------- fn
 *
 * fn NAME(p, q: T, ...) { stmts }   a block of statements, expanded where it is called
 * fn NAME(p, q: T, ...) = expr;     a value, expanded where it is used
 *
 * Parameters bind to their arguments: a buffer's or a type's name binds the buffer or the type
 * itself; any other argument is a value, computed once at the call into a `let` (statement fns;
 * usable as a compile-time constant when it is one) or substituted where the parameter is used
 * (value fns, whose arguments are expressions without effects).  `q: T` requires an argument of
 * element type T.  The body sees its parameters only (and the builtins): hygiene, so that a name
 * in a fn never means a name of the kernel it is expanded in.  A fn's body is checked where it is
 * expanded, with the arguments' types: a fn nobody calls is not checked.  No recursion. */

static const Node *find_fn(const Sema *s, const char *name)
{
  for (int i = 0; i < s->nfns; i++)
    if (!strcmp(s->fns[i]->name, name))
      return s->fns[i];
  return NULL;
}

/* Enters fn's expansion at call: arity and recursion checks; false if it cannot be entered. */
static bool fn_enter(Sema *s, const Node *fn, const Node *call)
{
  for (int i = 0; i < call->list.n; i++)
    if (call->list.items[i]->kind == N_NAMED) {
      error_at(s->d, call->list.items[i]->loc, "fn '%s' takes its arguments by position, not by name",
               fn->name);
      return false;
    }
  if (call->list.n != fn->list.n) {
    error_at(s->d, call->loc, "fn '%s' takes %d argument%s, got %d", fn->name, fn->list.n,
             fn->list.n == 1 ? "" : "s", call->list.n);
    return false;
  }
  for (int i = 0; i < s->nexpanding; i++)
    if (s->expanding[i] == fn) {
      error_at(s->d, call->loc,
               "fn '%s' calls itself; a fn is expanded where it is called, so it cannot recurse", fn->name);
      return false;
    }
  if (s->nexpanding == MAX_FN_DEPTH) {
    error_at(s->d, call->loc, "fns expanded more than %d deep", MAX_FN_DEPTH);
    return false;
  }
  s->expanding[s->nexpanding++] = fn;
  return true;
}

/* A parameter's binding, decided in the caller's scope. */
typedef struct {
  SymKind kind;
  int index;
  Expr *value; /* SYM_VAR (a statement fn's let) and SYM_EXPR */
} FnArg;

static bool bind_arg(Sema *s, const Node *param, const Node *arg, FnArg *out)
{
  if (param->tname) {
    error_at(s->d, param->tloc, "the type of fn parameter '%s' must be an element type such as f32",
             param->name);
    return false;
  }
  if (param->type == TY_VOID && arg->kind == N_NAME) {
    const Sym *sym = sym_lookup(s, arg->name);
    if (sym && (sym->kind == SYM_BUF || sym->kind == SYM_TYPE)) {
      *out = (FnArg){sym->kind, sym->index, NULL};
      return true;
    }
  }
  if (param->type == TY_VOID && arg->kind == N_TYPE) {
    *out = (FnArg){SYM_TYPE, (int)arg->type, NULL};
    return true;
  }
  Expr *e = check_expr(s, arg, param->type);
  if (e && param->type != TY_VOID)
    e = require_type(s, e, param->type, arg->loc, "the argument");
  if (!e)
    return false;
  *out = (FnArg){SYM_VAR, -1, e};
  return true;
}

/* Binds the parameters (after every argument is checked in the caller's scope) above a new
 * base; statement fns get their values as lets into *lets. */
static void bind_params(Sema *s, const Node *fn, FnArg *args, StmtList *lets)
{
  s->sym_base = s->nsyms;
  for (int i = 0; i < fn->list.n; i++) {
    const Node *p = fn->list.items[i];
    FnArg *a = &args[i];
    if (a->kind == SYM_VAR && lets) {
      int var = new_var(s, p->name, VAR_LET, a->value->type, p->loc);
      Stmt *st = st_new(s->a, ST_LET, p->loc);
      st->var = var;
      st->value = a->value;
      stlist_push(s->a, lets, st);
      note_let_const(s, var, a->value);
      declare(s, p->name, p->loc, SYM_VAR, var);
    } else if (a->kind == SYM_VAR) {
      if (s->nexprs == s->cap_exprs) {
        int cap = s->cap_exprs ? s->cap_exprs * 2 : 8;
        Expr **n = ARENA_ARRAY(s->a, Expr *, cap);
        if (s->nexprs)
          memcpy(n, s->exprs, sizeof *n * (size_t)s->nexprs);
        s->exprs = n;
        s->cap_exprs = cap;
      }
      s->exprs[s->nexprs] = a->value;
      declare(s, p->name, p->loc, SYM_EXPR, s->nexprs++);
    } else
      declare(s, p->name, p->loc, a->kind, a->index);
  }
}

/* What an expansion changes in the Sema, to undo at its end (fn_close). */
typedef struct {
  int errors, nsyms, sym_base, nexprs;
} FnScope;

/* Binds fn's parameters to call's arguments (checked in the caller's scope) above a new base;
 * statement fns get their values as lets into *lets (NULL: a value fn). False if an argument is
 * wrong; fn_close undoes it either way. */
static bool fn_open(Sema *s, const Node *fn, const Node *call, StmtList *lets, FnScope *sc)
{
  *sc = (FnScope){s->d->nerrors, s->nsyms, s->sym_base, s->nexprs};
  FnArg *args = ARENA_ARRAY(s->a, FnArg, fn->list.n + 1);
  bool ok = true;
  for (int i = 0; i < fn->list.n; i++)
    ok = bind_arg(s, fn->list.items[i], call->list.items[i], &args[i]) && ok;
  if (ok)
    bind_params(s, fn, args, lets);
  return ok;
}

static void fn_close(Sema *s, const Node *fn, const Node *call, const FnScope *sc)
{
  s->nsyms = sc->nsyms;
  s->sym_base = sc->sym_base;
  s->nexprs = sc->nexprs;
  s->nexpanding--;
  if (s->d->nerrors != sc->errors)
    note_at(s->d, call->loc, "in fn '%s', expanded here", fn->name);
}

static Stmt *expand_stmt_fn(Sema *s, const Node *fn, const Node *call)
{
  if (!fn_enter(s, fn, call))
    return NULL;
  FnScope sc;
  StmtList l = {0};
  bool ok = fn_open(s, fn, call, &l, &sc);
  if (ok)
    stlist_push(s->a, &l, check_block(s, fn->b));
  fn_close(s, fn, call, &sc);
  return ok ? stlist_seq(s->a, &l, call->loc) : NULL;
}

static Expr *expand_value_fn(Sema *s, const Node *fn, const Node *call, TypeKind hint)
{
  if (!fn_enter(s, fn, call))
    return NULL;
  FnScope sc;
  Expr *e = fn_open(s, fn, call, NULL, &sc) ? check_expr(s, fn->a, hint) : NULL;
  fn_close(s, fn, call, &sc);
  return e;
}

static Stmt *check_call_stmt(Sema *s, const Node *n)
{
  const Node *call = n->a;
  if (call->kind != N_CALL) {
    error_at(
        s->d, n->loc,
        "this expression has no effect; a statement is an assignment, a call such as copy(), or a block");
    return NULL;
  }
  for (int i = 0; i < call->list.n; i++)
    if (call->list.items[i]->kind == N_TYPE) {
      error_at(s->d, call->list.items[i]->loc, "a type is not a value here");
      return NULL;
    }
  const char *name = call->name;
  int b = builtin_find(name);
  if (b >= 0 && builtins[b].check)
    return builtins[b].check(s, call);
  const Node *fn = find_fn(s, name);
  if (fn && !fn->a)
    return expand_stmt_fn(s, fn, call);
  /* Anything else is a value computed for nothing: report what it is. */
  if (check_expr(s, call, TY_VOID))
    error_at(s->d, n->loc, "the result of '%s' is unused", name);
  return NULL;
}

/* stmt = "for" IDENT { "," IDENT } "in" postfix block ;   where postfix is one of
 *   parallel(E, ...)                 one constant extent per variable, each and their product 1 to 2^20
 *   serial(HI) | serial(LO, HI)      one variable, i32 bounds of any value
 *   pipelined(HI [, stages = INT] [, overlap = 0|1|2])   one variable, 1 to 8 stages (default
 *                                    2); overlap: the last gemm under the next iteration (default 0;
 *                                    2: required on sm_90a)
 * With LO the counter runs from 0 and the name is bound to LO + counter in the body. */
static Stmt *check_for(Sema *s, const Node *n)
{
  const Node *it = n->a;
  if (it->kind != N_CALL || !is_builtin(it->name, BUILTIN_LOOP)) {
    error_at(s->d, it->loc, "a 'for' loop iterates over serial(...), parallel(...) or pipelined(...)");
    return NULL;
  }
  Stmt *st = st_new(s->a, ST_FOR, n->loc);
  int nv = n->list.n;
  Expr *start = NULL;
  if (!strcmp(it->name, "parallel")) {
    if (!check_arity(s, it, 1, TL_MAX_RANK, NULL))
      return NULL;
    if (count_positional(it) != nv) {
      error_at(s->d, n->loc, "parallel() has %d extent%s but the loop binds %d variable%s",
               count_positional(it), count_positional(it) == 1 ? "" : "s", nv, nv == 1 ? "" : "s");
      return NULL;
    }
    st->for_kind = FOR_PARALLEL;
    int64_t total = 1;
    for (int i = 0; i < nv; i++) {
      int64_t v;
      if (!check_const_int(s, positional(it, i), "a parallel extent", &v))
        return NULL;
      if (v <= 0 || v > MAX_TILE_ELEMS) {
        error_at(s->d, positional(it, i)->loc, "parallel extent %" PRId64 " must be between 1 and %" PRId64,
                 v, MAX_TILE_ELEMS);
        return NULL;
      }
      st->extents[i] = ex_int(s->a, TY_I32, v);
      total *= v;
      if (total > MAX_TILE_ELEMS) {
        error_at(s->d, it->loc, "parallel() covers more than %" PRId64 " iterations", MAX_TILE_ELEMS);
        return NULL;
      }
    }
  } else {
    static const char *const pnamed[] = {"stages", "overlap", NULL};
    bool pipe = !strcmp(it->name, "pipelined");
    if (!check_arity(s, it, 1, pipe ? 1 : 2, pipe ? pnamed : NULL))
      return NULL;
    if (nv != 1) {
      error_at(s->d, n->loc, "%s() binds one loop variable, not %d", it->name, nv);
      return NULL;
    }
    const Node *lo = count_positional(it) == 2 ? positional(it, 0) : NULL;
    const Node *hi = positional(it, lo ? 1 : 0);
    Expr *end = require_int(s, check_expr(s, hi, TY_I32), hi->loc, "a loop bound");
    if (lo) {
      start = require_int(s, check_expr(s, lo, TY_I32), lo->loc, "a loop bound");
      if (!start)
        return NULL;
    }
    if (!end)
      return NULL;
    if (end->type != TY_I32)
      end = ex_cast(s->a, TY_I32, end);
    if (start && start->type != TY_I32)
      start = ex_cast(s->a, TY_I32, start);
    st->for_kind = pipe ? FOR_PIPELINED : FOR_SERIAL;
    st->extents[0] = start ? ex_binary(s->a, OP_SUB, end, start) : end;
    if (pipe) {
      int64_t stages = 2;
      const Node *sn = named_arg(it, "stages");
      if (sn && !check_const_int(s, sn, "'stages'", &stages))
        return NULL;
      if (stages < 1 || stages > 8) {
        error_at(s->d, sn ? sn->loc : it->loc, "stages must be between 1 and 8, got %" PRId64, stages);
        return NULL;
      }
      st->stages = (int)stages;
      int64_t overlap = 0;
      const Node *on = named_arg(it, "overlap");
      if (on && !check_const_int(s, on, "'overlap'", &overlap))
        return NULL;
      if (overlap < 0 || overlap > 2) {
        error_at(s->d, on->loc, "overlap must be 0, 1 or 2, got %" PRId64, overlap);
        return NULL;
      }
      st->overlap = (int)overlap;
    }
  }
  int mark = s->nsyms;
  st->nvars = nv;
  bool ok = true;
  StmtList body = {0};
  for (int i = 0; i < nv; i++) {
    const Node *vn = n->list.items[i];
    /* With a start, the counter runs from 0 and the user's name is start + counter. */
    int counter = new_var(s, start ? arena_printf(s->a, "%s.iter", vn->name) : vn->name, VAR_LOOP, TY_I32,
                          vn->loc);
    st->vars[i] = counter;
    if (start) {
      int user = new_var(s, vn->name, VAR_LET, TY_I32, vn->loc);
      Stmt *let = st_new(s->a, ST_LET, vn->loc);
      let->var = user;
      let->value = ex_binary(s->a, OP_ADD, ex_clone(s->a, start), ex_var(s->a, s->k, counter));
      stlist_push(s->a, &body, let);
      ok = declare(s, vn->name, vn->loc, SYM_VAR, user) && ok;
    } else
      ok = declare(s, vn->name, vn->loc, SYM_VAR, counter) && ok;
  }
  stlist_push(s->a, &body, check_block(s, n->b));
  s->nsyms = mark;
  st->then_s = stlist_seq(s->a, &body, n->b->loc);
  return ok ? st : NULL;
}

/* A condition `A && B` with A or B constant false, or `A || B` with one constant true, decides
 * its branch as a constant does (`if CACHE == 1 && N <= CN`: only the branch taken is kept).
 * Both operands were checked; the other one's reads are dropped with the branch. */
static bool decided_by_constant(Sema *s, const Expr *c, int64_t *taken)
{
  if (c->kind != EX_BINARY || (c->op != OP_LAND && c->op != OP_LOR))
    return false;
  const Expr *side[2] = {c->a, c->b};
  for (int i = 0; i < 2; i++) {
    int64_t v;
    if ((sema_eval_int(s, side[i], &v) || decided_by_constant(s, side[i], &v)) &&
        (v != 0) == (c->op == OP_LOR)) {
      *taken = c->op == OP_LOR;
      return true;
    }
  }
  return false;
}

/* ifstmt = "if" expr block [ "else" ( block | ifstmt ) ] ;   the condition is bool (no integer
 * converts to it); both branches are checked even when the condition is wrong.  A condition of
 * constants only (the kernel's constants have their values here) picks its branch now: only that
 * branch is checked and kept, so the other may hold what only makes sense for other values (a
 * gemm of other shapes, a tile it does not allocate). */
static Stmt *check_if(Sema *s, const Node *n)
{
  Expr *c = check_expr(s, n->a, TY_BOOL);
  if (c && c->type != TY_BOOL) {
    error_at(s->d, n->a->loc, "condition must be bool, got %s; compare it, e.g. x != 0", type_name(c->type));
    c = NULL;
  }
  int64_t taken;
  if (c && (sema_eval_int(s, c, &taken) || decided_by_constant(s, c, &taken))) {
    if (taken)
      return check_block(s, n->b);
    if (!n->c)
      return stlist_seq(s->a, &(StmtList){0}, n->loc);
    return n->c->kind == N_IF ? check_if(s, n->c) : check_block(s, n->c);
  }
  Stmt *then_s = check_block(s, n->b);
  Stmt *else_s = n->c ? (n->c->kind == N_IF ? check_if(s, n->c) : check_block(s, n->c)) : NULL;
  if (!c)
    return NULL;
  Stmt *st = st_new(s->a, ST_IF, n->loc);
  st->cond = c;
  st->then_s = then_s;
  st->else_s = else_s;
  return st;
}

/* stmt: one statement, by the kind of its node (the alternatives of stmt in parse.y). */
static Stmt *check_stmt(Sema *s, const Node *n)
{
  switch (n->kind) {
  case N_LET:
  case N_VAR: {
    int mark = s->nsyms;
    Stmt *st = check_let(s, n);
    if (s->nsyms == mark)
      note_failed(s, n->name);
    return st;
  }
  case N_ASSIGN: return check_assign(s, n);
  case N_CALLSTMT: return check_call_stmt(s, n);
  case N_IF: return check_if(s, n);
  case N_FOR: return check_for(s, n);
  case N_BLOCK: return check_block(s, n);
  default: DIE("unexpected node kind %d in statement", n->kind);
  }
}

/* ---------------------------------------------------------------- kernels */

/* A -D value (fe.h); also a scalar's value for tilec run. */
DefineKind sema_parse_define(const char *v, int64_t *i, double *f)
{
  if (!strcmp(v, "true") || !strcmp(v, "false")) {
    *i = v[0] == 't';
    return DEFINE_BOOL;
  }
  char *end;
  errno = 0;
  /* Decimal, or hex with 0x, as in the language: a leading 0 is not octal. */
  const char *digits = v + (*v == '-' || *v == '+');
  long long x = strtoll(v, &end, digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10);
  if (*v && !*end) {
    *i = x;
    *f = strtod(v, NULL); /* hex too */
    return errno == ERANGE ? DEFINE_INT_BIG : DEFINE_INT;
  }
  errno = 0;
  double d = strtod(v, &end);
  if (*v && !*end && errno == 0) {
    *f = d;
    return DEFINE_FLOAT;
  }
  return DEFINE_BAD;
}

static void check_const_value(Sema *s, const Node *c, Var *v);

/* ------------------------------------------------------------------------- launch constants
 * A constant whose default uses a size ([BN = min(next_pow2(N), 32768)]) is evaluated when the
 * kernel is launched: the code is compiled for the value at the sizes given (--size, or the JIT's
 * launch), and the launch metadata carries the default as a program (docs/abi.md) so that the
 * runtime can tell which variant a launch needs.  A size not given reads as LAUNCH_GENERIC_SIZE:
 * the variant for large sizes, which must be (and, as for any -D, is the kernel's author's job to
 * make) correct at every size. */
#define LAUNCH_GENERIC_SIZE INT32_MAX

static bool mentions_launch(const Sema *s, const Expr *e)
{
  if (!e)
    return false;
  if (e->kind == EX_VAR) {
    const Var *v = &s->k->vars[e->var];
    return v->kind == VAR_SIZE || (v->kind == VAR_CONST && v->launch);
  }
  if (mentions_launch(s, e->a) || mentions_launch(s, e->b) || mentions_launch(s, e->c))
    return true;
  if (e->kind == EX_CALL)
    for (int i = 0; i < e->nargs; i++)
      if (mentions_launch(s, e->args[i]))
        return true;
  return false;
}

/* The value of a size at compile time: --size, else LAUNCH_GENERIC_SIZE. */
static int64_t size_value(Sema *s, const Var *v)
{
  for (int i = s->nsizes - 1; i >= 0; i--)
    if (!strcmp(s->sizes[i].name, v->name)) {
      int64_t iv = 0;
      double fv;
      if (sema_parse_define(s->sizes[i].value, &iv, &fv) == DEFINE_INT && iv >= 0 && iv <= INT32_MAX)
        return iv;
    }
  return LAUNCH_GENERIC_SIZE;
}

/* Evaluates a launch constant's default in i64 (the runtime's arithmetic) and appends it in reverse
 * Polish notation to rpn.  False, with an error at the expression, for what the runtime cannot
 * evaluate or a value that fails (division by zero, overflow). */
static bool launch_eval(Sema *s, const Expr *e, int64_t *out, StrBuf *rpn)
{
  int64_t a = 0, b = 0, c = 0;
  switch (e->kind) {
  case EX_INT:
    sb_printf(rpn, " %" PRId64, e->i);
    *out = e->i;
    return true;
  case EX_VAR: {
    const Var *v = &s->k->vars[e->var];
    if (v->kind == VAR_SIZE) {
      sb_printf(rpn, " %s", v->name);
      *out = size_value(s, v);
      return true;
    }
    if (v->kind == VAR_CONST && !v->cval_is_float && (type_is_int(v->type) || v->type == TY_BOOL)) {
      if (v->launch)
        sb_printf(rpn, " %s", v->name);
      else
        sb_printf(rpn, " %" PRId64, v->cval_i);
      *out = v->cval_i;
      return true;
    }
    break;
  }
  case EX_CAST:
    if (!type_is_int(e->type) || !type_is_int(e->a->type))
      break;
    return launch_eval(s, e->a, out, rpn);
  case EX_UNARY:
    if (e->op != OP_NEG && e->op != OP_NOT)
      break;
    if (e->op == OP_NEG)
      sb_puts(rpn, " 0");
    if (!launch_eval(s, e->a, &a, rpn))
      return false;
    sb_puts(rpn, e->op == OP_NEG ? " -" : " 0 ==");
    *out = e->op == OP_NEG ? -a : a == 0;
    return true;
  case EX_SELECT:
    if (!launch_eval(s, e->a, &c, rpn) || !launch_eval(s, e->b, &a, rpn) || !launch_eval(s, e->c, &b, rpn))
      return false;
    sb_puts(rpn, " select");
    *out = c ? a : b;
    return true;
  case EX_CALL:
    if (e->op != FN_NEXT_POW2 || !launch_eval(s, e->args[0], &a, rpn))
      break;
    sb_puts(rpn, " next_pow2");
    if (!next_pow2_of(a, out)) {
      error_at(s->d, e->loc, "next_pow2(%" PRId64 ") overflows", a);
      return false;
    }
    return true;
  case EX_BINARY: {
    static const char *const ops[OP_COUNT] = {
        [OP_ADD] = "+", [OP_SUB] = "-",   [OP_MUL] = "*",   [OP_DIV] = "/",
        [OP_MOD] = "%", [OP_MIN] = "min", [OP_MAX] = "max", [OP_CEILDIV] = "ceildiv",
        [OP_LT] = "<",  [OP_LE] = "<=",   [OP_GT] = ">",    [OP_GE] = ">=",
        [OP_EQ] = "==", [OP_NE] = "!=",   [OP_LAND] = "&&", [OP_LOR] = "||"};
    if (e->op < 0 || e->op >= OP_COUNT || !ops[e->op])
      break;
    if (!launch_eval(s, e->a, &a, rpn) || !launch_eval(s, e->b, &b, rpn))
      return false;
    sb_printf(rpn, " %s", ops[e->op]);
    bool ovf = false;
    switch ((OpKind)e->op) {
    case OP_ADD: ovf = __builtin_add_overflow(a, b, out); break;
    case OP_SUB: ovf = __builtin_sub_overflow(a, b, out); break;
    case OP_MUL: ovf = __builtin_mul_overflow(a, b, out); break;
    case OP_DIV:
    case OP_MOD:
    case OP_CEILDIV:
      if (b == 0 || (b == -1 && a == INT64_MIN) || (e->op == OP_CEILDIV && b < 0)) {
        error_at(s->d, e->loc, "%s by %" PRId64 " in a launch constant",
                 e->op == OP_MOD ? "remainder" : "division", b);
        return false;
      }
      *out = e->op == OP_DIV ? a / b : e->op == OP_MOD ? a % b : a / b + (a % b > 0);
      break;
    case OP_MIN: *out = a < b ? a : b; break;
    case OP_MAX: *out = a > b ? a : b; break;
    case OP_LT: *out = a < b; break;
    case OP_LE: *out = a <= b; break;
    case OP_GT: *out = a > b; break;
    case OP_GE: *out = a >= b; break;
    case OP_EQ: *out = a == b; break;
    case OP_NE: *out = a != b; break;
    case OP_LAND: *out = a && b; break;
    case OP_LOR: *out = a || b; break;
    default: break;
    }
    if (ovf) {
      error_at(s->d, e->loc, "a launch constant's arithmetic overflows 64 bits");
      return false;
    }
    return true;
  }
  default: break;
  }
  error_at(s->d, e->loc,
           "a constant that uses sizes is evaluated at launch: it may use only sizes, integer "
           "constants, literals, arithmetic, comparisons, min, max, clamp, ceildiv, next_pow2 and select");
  return false;
}

/* The default of constant v uses sizes: evaluate it for the sizes compiled for and record it. */
static void check_launch_const(Sema *s, const Node *c, Var *v, const Expr *dflt)
{
  if (!type_is_int(v->type) && v->type != TY_BOOL) {
    error_at(
        s->d, c->a->loc,
        "constant '%s' uses sizes, so it is evaluated at launch and must be an integer or a bool, not %s",
        c->name, type_name(v->type));
    return;
  }
  StrBuf rpn = {0};
  int64_t val;
  bool ok = launch_eval(s, dflt, &val, &rpn);
  if (ok && !int_fits(v->type, val)) {
    error_at(s->d, c->a->loc,
             "'%s' is %" PRId64 " at the sizes compiled for, which does not fit in %s (a size not "
             "given with --size reads as %d)",
             c->name, val, type_name(v->type), LAUNCH_GENERIC_SIZE);
    ok = false;
  }
  if (ok) {
    v->cval_i = val;
    v->launch = true;
    Kernel *k = s->k;
    struct LaunchConst *l = ARENA_ARRAY(s->a, struct LaunchConst, k->nlconsts + 1);
    if (k->nlconsts)
      memcpy(l, k->lconsts, sizeof *l * (size_t)k->nlconsts);
    l[k->nlconsts].name = c->name;
    l[k->nlconsts].value = val;
    l[k->nlconsts].rpn = arena_strdup(s->a, rpn.data + 1);
    k->lconsts = l;
    k->nlconsts++;
  }
  free(rpn.data);
}

/* [T = f16]: a type constant; -D T=bf16 overrides it like any other. */
static bool check_type_const(Sema *s, const Node *c)
{
  const ConstDef *def = NULL;
  for (int i = 0; i < s->ndefs; i++)
    if (!strcmp(s->defs[i].name, c->name)) {
      def = &s->defs[i];
      s->def_used[i] = true;
    }
  TypeKind dt = def ? type_from_name(def->value, strlen(def->value)) : TY_VOID;
  bool is_type = (c->a && c->a->kind == N_TYPE) || (!c->a && dt != TY_VOID);
  if (!is_type) {
    if (dt != TY_VOID)
      error_at(s->d, c->loc, "-D %s=%s: '%s' is a value constant, not a type", def->name, def->value,
               c->name);
    return dt != TY_VOID;
  }
  if (c->type != TY_VOID || c->tname)
    error_at(s->d, c->loc, "type constant '%s' takes no type annotation", c->name);
  TypeKind t = c->a ? c->a->type : dt;
  if (def && dt == TY_VOID)
    error_at(s->d, c->loc, "-D %s=%s: '%s' is a type constant; give a type such as f16", def->name,
             def->value, c->name);
  else if (def)
    t = dt;
  declare(s, c->name, c->loc, SYM_TYPE, (int)t);
  return true;
}

/* constdecl = IDENT [ ":" typeref ] [ "=" ( expr | TYPE ) ] ;   one of the kernel's "[...]"
 * A type constant (check_type_const) or a value constant (check_const_value), i32 unless its
 * annotation, its default or its -D value says otherwise.  The constant is declared even when its
 * value is bad (the error is already reported), so that its uses do not cascade into "undefined
 * name" errors. */
static void check_const_param(Sema *s, const Node *c)
{
  if (check_type_const(s, c))
    return;
  TypeKind annotated = resolve_type(s, c->type, c->tname, c->tloc);
  int var = new_var(s, c->name, VAR_CONST, annotated == TY_VOID ? TY_I32 : annotated, c->loc);
  s->k->vars[var].cval_i = 1;
  check_const_value(s, c, &s->k->vars[var]);
  declare(s, c->name, c->loc, SYM_VAR, var);
}

/* The value of a constdecl: "=" expr, a compile-time constant of the annotated type if any, or
 * -D NAME=VALUE, which overrides it: a number or true/false that fits the constant's type. */
static void check_const_value(Sema *s, const Node *c, Var *v)
{
  const ConstDef *def = NULL;
  for (int i = 0; i < s->ndefs; i++)
    if (!strcmp(s->defs[i].name, c->name)) {
      def = &s->defs[i];
      s->def_used[i] = true;
    }
  /* The annotation, else the default, decides the type, also under -D:
   * [S = 2.0] stays f32 with -D S=3. */
  bool typed = c->type != TY_VOID || c->tname;
  Expr *dflt = NULL;
  if (c->a) {
    s->in_default = true;
    dflt = check_expr(s, c->a, typed ? v->type : TY_VOID);
    s->in_default = false;
    if (!dflt)
      return;
    if (!typed)
      v->type = dflt->type;
    else if (dflt->type != v->type) {
      error_at(s->d, c->a->loc, "constant '%s' is %s but its default is %s", c->name, type_name(v->type),
               type_name(dflt->type));
      return;
    }
  }
  if (def) {
    int64_t iv = 0;
    double fv = 0;
    DefineKind kind = sema_parse_define(def->value, &iv, &fv);
    if (kind == DEFINE_BAD) {
      error_at(s->d, c->loc, "-D %s=%s: the value is not a number or true/false", def->name, def->value);
      return;
    }
    if (!typed && !c->a)
      v->type = kind == DEFINE_FLOAT ? TY_F32 : kind == DEFINE_BOOL ? TY_BOOL : TY_I32;
    if (kind == DEFINE_FLOAT && !type_is_float(v->type)) {
      error_at(s->d, c->loc, "-D %s=%s: '%s' is %s, not a floating-point constant", def->name, def->value,
               c->name, type_name(v->type));
      return;
    }
    if (kind == DEFINE_BOOL && v->type != TY_BOOL) {
      error_at(s->d, c->loc, "-D %s=%s: '%s' is %s, not a bool constant", def->name, def->value, c->name,
               type_name(v->type));
      return;
    }
    if (type_is_float(v->type)) {
      v->cval_is_float = true;
      v->cval_f = kind == DEFINE_INT ? (double)iv : fv;
    } else if (kind == DEFINE_INT_BIG || (v->type == TY_BOOL && iv != 0 && iv != 1) ||
               !int_fits(v->type, iv)) {
      error_at(s->d, c->loc, "-D %s=%s does not fit in %s", def->name, def->value, type_name(v->type));
      return;
    } else
      v->cval_i = iv;
  } else if (dflt && mentions_launch(s, dflt)) {
    check_launch_const(s, c, v, dflt);
  } else if (dflt) {
    Expr *f = ir_fold(s->a, s->k, dflt);
    if (f->kind == EX_INT)
      v->cval_i = f->i;
    else if (f->kind == EX_FLOAT) {
      v->cval_is_float = true;
      v->cval_f = f->f;
    } else {
      error_at(s->d, c->a->loc, "the default of '%s' must be a compile-time constant", c->name);
      return;
    }
  } else {
    error_at(s->d, c->loc, "constant '%s' has no default; give it one or pass -D %s=VALUE", c->name, c->name);
  }
}

/* The size var `name` (declared by declare_sizes or an earlier use), listed among the size
 * parameters at its first use; -1 after an error. */
static int use_size(Sema *s, const char *name, SrcLoc loc, int *nsizes, int *size_vars)
{
  const Sym *sym = sym_lookup(s, name);
  int var;
  if (sym) {
    var = sym->index;
    bool listed = false;
    for (int j = 0; j < *nsizes; j++)
      listed |= size_vars[j] == var;
    if (!listed)
      size_vars[(*nsizes)++] = var;
  } else {
    var = new_var(s, name, VAR_SIZE, TY_I32, loc);
    if (!declare(s, name, loc, SYM_VAR, var))
      return -1;
    size_vars[(*nsizes)++] = var;
  }
  return var;
}

/* strides = IDENT "(" stride { "," stride } ")" ;   stride = IDENT | INT ;
 * One per dimension, each a positive INT, a value constant or a size (docs/language.md, "Tensor
 * parameters"): the same name means the same size, in a shape or a stride. */
static bool check_strides(Sema *s, const Node *p, Buffer *b, int *nsizes, int *size_vars)
{
  const NodeList *l = &p->list2;
  if (l->n != b->rank) {
    error_at(s->d, l->items[l->n < b->rank ? l->n - 1 : b->rank]->loc,
             "tensor '%s' has %d dimension%s but %d stride%s; give one stride per dimension", p->name,
             b->rank, b->rank == 1 ? "" : "s", l->n, l->n == 1 ? "" : "s");
    return false;
  }
  for (int i = 0; i < b->rank; i++) {
    const Node *d = l->items[i];
    if (d->kind == N_INT) {
      if (d->overflow || d->ival <= 0 || d->ival > INT32_MAX) {
        error_at(s->d, d->loc, "a fixed stride must be between 1 and %d", INT32_MAX);
        return false;
      }
      b->stride[i] = ex_int(s->a, TY_I32, d->ival);
      continue;
    }
    if (d->kind != N_NAME) {
      error_at(s->d, d->loc, "%s",
               d->kind == N_UNARY && d->op == OP_NEG ? "a stride must be positive (between 1 and 2147483647)"
               : d->kind == N_FLOAT ? "a stride is a whole number of elements, not a floating-point number"
                                    : "a stride is a size name, an integer constant or a positive integer "
                                      "literal, not an expression");
      return false;
    }
    const Sym *sym = sym_lookup(s, d->name);
    const Var *v = sym && sym->kind == SYM_VAR ? &s->k->vars[sym->index] : NULL;
    if (v && v->kind == VAR_CONST) {
      if (v->launch) {
        error_at(s->d, d->loc, "constant '%s' uses sizes (it is chosen at launch), so it cannot be a stride",
                 d->name);
        return false;
      }
      if (v->cval_is_float || v->cval_i <= 0 || v->cval_i > INT32_MAX) {
        error_at(s->d, d->loc, "constant '%s' used as a stride must be a positive integer", d->name);
        return false;
      }
      b->stride[i] = ex_int(s->a, TY_I32, v->cval_i);
      continue;
    }
    if (sym && !(v && v->kind == VAR_SIZE)) {
      error_at(s->d, d->loc,
               "stride '%s' is already defined as a %s; a stride is a size, a constant or a literal", d->name,
               sym->kind == SYM_BUF         ? "tensor"
               : v && v->kind == VAR_SCALAR ? "scalar parameter"
                                            : "name of another kind");
      return false;
    }
    int var = use_size(s, d->name, d->loc, nsizes, size_vars);
    if (var < 0)
      return false;
    b->stride[i] = ex_var(s->a, s->k, var);
    b->stride[i]->loc = d->loc;
  }
  return true;
}

/* param = IDENT ":" typeref [ "[" dim { "," dim } "]" [ strides ] ] ;   dim = IDENT | INT ;
 * A scalar, or a tensor of 1 to TL_MAX_RANK dimensions, each a positive INT, a value constant or a
 * size: a name's first use declares an i32 size parameter (size_vars: after all the others). */
static void check_param(Sema *s, const Node *p, int *nsizes, int *size_vars)
{
  TypeKind type = resolve_type(s, p->type, p->tname, p->tloc);
  if (type == TY_VOID)
    return;
  if (!p->is_tensor) {
    if (p->list2.n) {
      error_at(s->d, p->list2.items[0]->loc, "strides(...) applies to a tensor; '%s' is a scalar parameter",
               p->name);
      return;
    }
    int var = new_var(s, p->name, VAR_SCALAR, type, p->loc);
    if (declare(s, p->name, p->loc, SYM_VAR, var))
      kernel_add_param(s->a, s->k, false, var);
    return;
  }
  if (p->list.n < 1 || p->list.n > TL_MAX_RANK) {
    error_at(s->d, p->loc, "a tensor has 1 to %d dimensions", TL_MAX_RANK);
    return;
  }
  Buffer b = {0};
  b.name = p->name;
  b.scope = SCOPE_GLOBAL;
  b.elem = type;
  b.rank = p->list.n;
  b.loc = p->loc;
  for (int i = 0; i < b.rank; i++) {
    const Node *d = p->list.items[i];
    if (d->kind == N_INT) {
      if (d->overflow || d->ival <= 0 || d->ival > INT32_MAX) {
        error_at(s->d, d->loc, "a fixed dimension must be between 1 and %d", INT32_MAX);
        return;
      }
      b.shape[i] = ex_int(s->a, TY_I32, d->ival);
      continue;
    }
    const Sym *sym = sym_lookup(s, d->name);
    if (sym && sym->kind == SYM_VAR && s->k->vars[sym->index].kind == VAR_CONST) {
      if (s->k->vars[sym->index].launch) {
        error_at(s->d, d->loc,
                 "constant '%s' uses sizes (it is chosen at launch), so it cannot be a dimension", d->name);
        return;
      }
      int64_t v = s->k->vars[sym->index].cval_i;
      if (s->k->vars[sym->index].cval_is_float || v <= 0 || v > INT32_MAX) {
        error_at(s->d, d->loc, "constant '%s' used as a dimension must be a positive integer", d->name);
        return;
      }
      b.shape[i] = ex_int(s->a, TY_I32, v);
      continue;
    }
    if (sym && !(sym->kind == SYM_VAR && s->k->vars[sym->index].kind == VAR_SIZE)) {
      error_at(s->d, d->loc, "dimension '%s' is already defined as a %s", d->name,
               sym->kind == SYM_BUF ? "tensor" : "scalar parameter");
      return;
    }
    int var = use_size(s, d->name, d->loc, nsizes, size_vars);
    if (var < 0)
      return;
    b.shape[i] = ex_var(s->a, s->k, var);
    b.shape[i]->loc = d->loc;
  }
  if (p->list2.n && !check_strides(s, p, &b, nsizes, size_vars))
    return;
  int bi = kernel_add_buffer(s->a, s->k, b);
  if (declare(s, p->name, p->loc, SYM_BUF, bi))
    kernel_add_param(s->a, s->k, true, bi);
}

/* Grid expressions may use sizes, constants and integer scalars, nothing else. */
static bool grid_expr_ok(Sema *s, const Expr *e)
{
  if (!e)
    return true;
  if (e->kind == EX_LOAD || e->kind == EX_CALL || e->kind == EX_SELECT || type_is_float(e->type))
    return false;
  if (e->kind == EX_VAR) {
    VarKind k = s->k->vars[e->var].kind;
    if (k != VAR_SIZE && k != VAR_CONST && k != VAR_SCALAR && k != VAR_NUM_SMS)
      return false;
    if (k == VAR_SCALAR && s->k->vars[e->var].type != TY_I32)
      return false; /* the launch metadata evaluates grids over i32 scalars */
  }
  if (e->kind == EX_BINARY &&
      (op_is_comparison((OpKind)e->op) || e->op == OP_LAND || e->op == OP_LOR || e->op == OP_SHL ||
       e->op == OP_SHR || e->op == OP_BAND || e->op == OP_BOR || e->op == OP_BXOR))
    return false;
  if (e->kind == EX_UNARY && e->op != OP_NEG)
    return false;
  return grid_expr_ok(s, e->a) && grid_expr_ok(s, e->b);
}

/* The sizes, declared before the constants so that a default can use them (a launch constant):
 * every name used as a tensor dimension that no constant or parameter takes, in the order of first
 * use, which is the order of the size parameters.  Others are left to check_param's errors. */
static void declare_sizes(Sema *s, const Node *kn)
{
  for (int i = 0; i < kn->list.n; i++) {
    const Node *p = kn->list.items[i];
    int ndims = p->is_tensor && p->list.n <= TL_MAX_RANK ? p->list.n : 0;
    int nstrides = p->is_tensor && p->list2.n <= TL_MAX_RANK ? p->list2.n : 0;
    for (int j = 0; j < ndims + nstrides; j++) {
      const Node *d = j < ndims ? p->list.items[j] : p->list2.items[j - ndims];
      if (d->kind != N_NAME || sym_lookup(s, d->name) || is_reserved(d->name) || builtin_find(d->name) >= 0 ||
          type_from_name(d->name, strlen(d->name)) != TY_VOID)
        continue;
      bool taken = false;
      for (int c = 0; c < kn->list2.n; c++)
        taken |= !strcmp(kn->list2.items[c]->name, d->name);
      for (int q = 0; q < kn->list.n; q++)
        taken |= !strcmp(kn->list.items[q]->name, d->name);
      if (taken)
        continue;
      int var = new_var(s, d->name, VAR_SIZE, TY_I32, d->loc);
      declare(s, d->name, d->loc, SYM_VAR, var);
    }
  }
}

/* kernel = "kernel" IDENT [ "[" constdecl { "," constdecl } "]" ] "(" [ param { "," param } ] ")"
 *          "grid" "(" expr { "," expr } ")" [ "as" "(" IDENT { "," IDENT } ")" ]
 *          "threads" "(" expr ")" block ;
 * 1 to 3 grid dimensions of sizes, constants, i32 scalars, num_sms and arithmetic (grid_expr_ok);
 * threads a constant 1 to 1024; at most one block index name per grid dimension. */
static Kernel *check_kernel(Sema *s, const Node *kn)
{
  Kernel *k = ARENA_NEW(s->a, Kernel);
  k->name = kn->name;
  k->loc = kn->loc;
  k->fast_math = true;
  s->k = k;
  s->nsyms = 0;
  s->sym_base = 0;
  s->nexpanding = 0;
  s->nexprs = 0;
  s->num_sms_var = -1;
  s->nlet_consts = 0;
  s->nfailed = 0;
  for (int i = 0; i < 3; i++)
    s->grid_dim_var[i] = -1;
  int errors = s->d->nerrors;

  declare_sizes(s, kn);
  for (int i = 0; i < kn->list2.n; i++)
    check_const_param(s, kn->list2.items[i]);
  int nsizes = 0;
  int *size_vars = ARENA_ARRAY(s->a, int, kn->list.n *TL_MAX_RANK + 1);
  for (int i = 0; i < kn->list.n; i++)
    check_param(s, kn->list.items[i], &nsizes, size_vars);
  for (int i = 0; i < nsizes; i++) {
    kernel_add_param(s->a, k, false, size_vars[i]);
    k->vars[size_vars[i]].param_index = k->nparams - 1;
  }
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].is_buffer)
      k->bufs[k->params[i].index].param_index = i;
    else
      k->vars[k->params[i].index].param_index = i;

  if (kn->list3.n < 1 || kn->list3.n > 3)
    error_at(s->d, kn->loc, "the grid has 1 to 3 dimensions, not %d", kn->list3.n);
  k->grid_rank = kn->list3.n > 3 ? 3 : kn->list3.n;
  for (int i = 0; i < k->grid_rank; i++) {
    const Node *g = kn->list3.items[i];
    s->in_grid = true;
    Expr *e = require_int(s, check_expr(s, g, TY_I32), g->loc, "a grid dimension");
    s->in_grid = false;
    if (e && !grid_expr_ok(s, e)) {
      error_at(s->d, g->loc,
               "a grid dimension may use only sizes, constants, i32 scalar parameters, "
               "num_sms, arithmetic, min, max and ceildiv");
      e = NULL;
    }
    if (e && e->type != TY_I32)
      e = ex_cast(s->a, TY_I32, e);
    k->grid[i] = e;
  }
  int64_t threads;
  if (check_const_int(s, kn->a, "the thread count", &threads)) {
    if (threads < 1 || threads > 1024)
      error_at(s->d, kn->a->loc, "the thread count must be between 1 and 1024, got %" PRId64, threads);
    k->threads = ex_int(s->a, TY_I32, threads);
  }
  if (kn->names.n > k->grid_rank)
    error_at(s->d, kn->names.items[k->grid_rank < 3 ? k->grid_rank : 0]->loc,
             "%d block indices named for a %d-dimensional grid", kn->names.n, k->grid_rank);
  for (int i = 0; i < kn->names.n && i < 3; i++) {
    const Node *bn = kn->names.items[i];
    int var = new_var(s, bn->name, VAR_BLOCK_IDX, TY_I32, bn->loc);
    k->vars[var].dim = i;
    declare(s, bn->name, bn->loc, SYM_VAR, var);
  }
  k->body = check_block(s, kn->b);
  return s->d->nerrors == errors ? k : NULL;
}

static bool is_identifier(const char *s)
{
  if (!s || !(*s == '_' || isalpha((unsigned char)*s)))
    return false;
  for (s++; *s; s++)
    if (!(*s == '_' || isalnum((unsigned char)*s)))
      return false;
  return true;
}

Module *sema_build(Arena *a, Diags *d, const NodeList *kernels, const ConstDef *defs, int ndefs,
                   const ConstDef *sizes, int nsizes, const char *only, const Target *target)
{
  Module *m = ARENA_NEW(a, Module);
  m->arena = a;
  m->kernels = ARENA_ARRAY(a, Kernel *, kernels->n + 1);
  Sema s = {0};
  s.a = a;
  s.d = d;
  s.defs = defs;
  s.ndefs = ndefs;
  s.def_used = ARENA_ARRAY(a, bool, ndefs + 1);
  s.sizes = sizes;
  s.nsizes = nsizes;
  s.target = target ? target : target_default();
  int errors = d->nerrors;
  /* A name with a space in it ("-D 'CAUSAL=1'" quoted as one argument with the -D) would match no
   * constant and, as a warning, leave the constant at its default unnoticed. */
  for (int i = 0; i < ndefs; i++)
    if (!is_identifier(defs[i].name))
      error_at(d, NO_LOC,
               "-D '%s': not the name of a constant (a letter or '_', then letters, digits or '_')",
               defs[i].name);
  if (d->nerrors != errors)
    return NULL;
  bool found = false;
  /* The fns first: a kernel may call one defined after it. */
  s.fns = ARENA_ARRAY(a, const Node *, kernels->n + 1);
  for (int i = 0; i < kernels->n; i++) {
    const Node *fn = kernels->items[i];
    if (fn->kind != N_FN)
      continue;
    if (is_reserved(fn->name) || type_from_name(fn->name, strlen(fn->name)) != TY_VOID) {
      error_at(d, fn->loc, "'%s' is a builtin and cannot be redefined", fn->name);
      continue;
    }
    const Node *old = find_fn(&s, fn->name);
    if (old) {
      error_at(d, fn->loc, "redefinition of fn '%s'", fn->name);
      note_at(d, old->loc, "'%s' was defined here", fn->name);
      continue;
    }
    s.fns[s.nfns++] = fn;
  }
  int nkernels = 0;
  for (int i = 0; i < kernels->n; i++) {
    const Node *kn = kernels->items[i];
    if (kn->kind != N_KERNEL)
      continue;
    nkernels++;
    for (int j = 0; j < i; j++)
      if (kernels->items[j]->kind == N_KERNEL && !strcmp(kernels->items[j]->name, kn->name)) {
        error_at(d, kn->loc, "redefinition of kernel '%s'", kn->name);
        note_at(d, kernels->items[j]->loc, "'%s' was defined here", kn->name);
      }
    if (only && strcmp(only, kn->name))
      continue;
    found = true;
    Kernel *k = check_kernel(&s, kn);
    if (k)
      m->kernels[m->nkernels++] = k;
  }
  if (only && !found)
    error_at(d, NO_LOC, "no kernel named '%s'", only);
  else if (!nkernels && d->nerrors == errors)
    error_at(d, NO_LOC, "no kernel in the input");
  /* A -D for a constant of a kernel that --kernel left out is not unused. */
  for (int i = 0; i < kernels->n; i++)
    for (int c = 0; c < kernels->items[i]->list2.n; c++)
      for (int j = 0; j < ndefs; j++)
        if (!strcmp(kernels->items[i]->list2.items[c]->name, defs[j].name))
          s.def_used[j] = true;
  for (int i = 0; i < nsizes; i++) {
    int64_t iv = 0;
    double fv;
    if (sema_parse_define(sizes[i].value, &iv, &fv) != DEFINE_INT || iv < 0 || iv > INT32_MAX) {
      error_at(d, NO_LOC, "--size %s=%s: a size is an integer from 0 to %d", sizes[i].name, sizes[i].value,
               INT32_MAX);
      continue;
    }
    bool named = false;
    for (int k = 0; k < kernels->n && !named; k++)
      for (int p = 0; kernels->items[k]->kind == N_KERNEL && p < kernels->items[k]->list.n && !named; p++) {
        const Node *pn = kernels->items[k]->list.items[p];
        for (int j = 0; pn->is_tensor && j < pn->list.n + pn->list2.n; j++) {
          const Node *dn = j < pn->list.n ? pn->list.items[j] : pn->list2.items[j - pn->list.n];
          named |= dn->kind == N_NAME && !strcmp(dn->name, sizes[i].name);
        }
      }
    if (!named && d->nerrors == errors)
      diag_at(d, DIAG_WARNING, NO_LOC, "--size %s: no kernel has a size of that name", sizes[i].name);
  }
  for (int i = 0; i < ndefs && d->nerrors == errors; i++)
    if (!s.def_used[i])
      diag_at(d, DIAG_WARNING, NO_LOC, "-D %s: no kernel has a constant of that name", defs[i].name);
  return d->nerrors == errors ? m : NULL;
}
