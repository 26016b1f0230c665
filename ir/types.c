/* types.c: element types, operators and intrinsics, from the X-macro tables in ir.h. */
#include "ir.h"

#include <string.h>

static const struct {
  const char *name;
  int bits;
  bool is_float, is_signed;
} types[] = {
#define X(e, n, b, f, s) {n, b, f, s},
    TL_TYPES(X)
#undef X
};

const char *type_name(TypeKind t) { return t < TY_COUNT ? types[t].name : "?"; }
int type_bits(TypeKind t) { return types[t].bits; }
int type_bytes(TypeKind t) { return t == TY_BOOL ? 1 : types[t].bits / 8; }
bool type_is_float(TypeKind t) { return types[t].is_float; }
bool type_is_int(TypeKind t) { return t >= TY_I8 && t <= TY_U64; } /* order of TL_TYPES */
bool type_is_signed(TypeKind t) { return types[t].is_signed; }

TypeKind type_from_name(const char *s, size_t n)
{
  for (int t = TY_BOOL; t < TY_COUNT; t++)
    if (strlen(types[t].name) == n && memcmp(types[t].name, s, n) == 0)
      return (TypeKind)t;
  return TY_VOID;
}

int64_t type_wrap_int(TypeKind t, int64_t v)
{
  switch (t) {
  case TY_BOOL: return v != 0;
  case TY_I8: return (int8_t)v;
  case TY_I16: return (int16_t)v;
  case TY_I32: return (int32_t)v;
  case TY_U8: return (uint8_t)v;
  case TY_U16: return (uint16_t)v;
  case TY_U32: return (uint32_t)v;
  default: return v;
  }
}

static const struct {
  const char *spelling;
  bool cmp;
} ops[] = {
#define X(e, s, c) {s, c},
    TL_BINOPS(X) TL_UNOPS(X)
#undef X
};

const char *op_spelling(OpKind op) { return ops[op].spelling; }
bool op_is_comparison(OpKind op) { return ops[op].cmp; }

static const struct {
  const char *name;
  int nargs;
  bool float_only;
} intrinsics[] = {
#define X(e, n, a, f) {n, a, f},
    TL_INTRINSICS(X)
#undef X
};

const char *intrinsic_name(IntrinsicKind fn) { return intrinsics[fn].name; }
int intrinsic_nargs(IntrinsicKind fn) { return intrinsics[fn].nargs; }
bool intrinsic_float_only(IntrinsicKind fn) { return intrinsics[fn].float_only; }

int intrinsic_lookup(const char *s, size_t n)
{
  for (int i = 0; i < FN_COUNT; i++)
    if (strlen(intrinsics[i].name) == n && memcmp(intrinsics[i].name, s, n) == 0)
      return i;
  return -1;
}

const char *scope_name(Scope s)
{
  static const char *names[] = {"global", "shared", "fragment", "local"};
  return names[s];
}
