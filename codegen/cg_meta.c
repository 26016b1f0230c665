/* cg_meta.c: the "// tilec-meta" block at the top of the PTX (docs/abi.md).
 *
 *   // tilec-meta v1
 *   // tilec-meta kernel vector_add threads=256 smem=0 params=4
 *   // tilec-meta param 0 tensor A f32 rank=1 dims=N
 *   // tilec-meta param 3 size N i32
 *   // tilec-meta const BN 1024 N next_pow2 32768 min      (launch constants, if any)
 *   // tilec-meta grid 0 N 4096 ceildiv
 *   // tilec-meta grid 1 1
 *   // tilec-meta grid 2 1
 *   // tilec-meta end
 */
#include "cg.h"

#include <string.h>

#define META "// tilec-meta "

static const char *rpn_operator(OpKind op)
{
  switch (op) {
  case OP_ADD: return "+";
  case OP_SUB: return "-";
  case OP_MUL: return "*";
  case OP_DIV: return "/";
  case OP_MOD: return "%";
  case OP_MIN: return "min";
  case OP_MAX: return "max";
  case OP_CEILDIV: return "ceildiv";
  default: return NULL;
  }
}

/* A cast between integers that keeps every value (the host computes in i64). */
static bool cast_keeps_value(TypeKind from, TypeKind to)
{
  if (!type_is_int(from) || !type_is_int(to))
    return false;
  if (type_is_signed(from) == type_is_signed(to))
    return type_bits(to) >= type_bits(from);
  return !type_is_signed(from) && type_bits(to) > type_bits(from);
}

/* The host knows a variable by name only if it is one of the PTX parameters. */
static bool is_param(const Kernel *k, int var)
{
  for (int i = 0; i < k->nparams; i++)
    if (!k->params[i].is_buffer && !k->params[i].is_tmap && k->params[i].index == var)
      return true;
  return false;
}

static bool rpn_var(const Kernel *k, int var, StrBuf *out)
{
  const Var *v = &k->vars[var];
  switch (v->kind) {
  case VAR_SIZE:
  case VAR_SCALAR:
    if (!type_is_int(v->type) || !is_param(k, var))
      return false;
    sb_printf(out, " %s", v->name);
    return true;
  case VAR_CONST:
    if (v->cval_is_float || type_is_float(v->type))
      return false;
    sb_printf(out, " %lld", (long long)v->cval_i);
    return true;
  case VAR_NUM_SMS: sb_puts(out, " num_sms"); return true;
  default: return false;
  }
}

/* Appends e in reverse Polish notation, each token after a space. */
static bool rpn_expr(const Kernel *k, const Expr *e, StrBuf *out)
{
  switch (e->kind) {
  case EX_INT:
    if (!type_is_int(e->type))
      return false;
    sb_printf(out, " %lld", (long long)e->i);
    return true;
  case EX_VAR: return rpn_var(k, e->var, out);
  case EX_CAST: return cast_keeps_value(e->a->type, e->type) && rpn_expr(k, e->a, out);
  case EX_UNARY:
    if (e->op != OP_NEG || !type_is_int(e->type))
      return false;
    sb_puts(out, " 0");
    if (!rpn_expr(k, e->a, out))
      return false;
    sb_puts(out, " -");
    return true;
  case EX_BINARY: {
    const char *op = rpn_operator((OpKind)e->op);
    if (!op || !type_is_int(e->type) || !rpn_expr(k, e->a, out) || !rpn_expr(k, e->b, out))
      return false;
    sb_printf(out, " %s", op);
    return true;
  }
  default: return false;
  }
}

static bool meta_grid(const Kernel *k, Diags *d, StrBuf *out)
{
  for (int axis = 0; axis < 3; axis++) {
    const Expr *e = k->grid[axis]; /* NULL beyond grid_rank */
    sb_printf(out, META "grid %d", axis);
    if (!e) {
      sb_puts(out, " 1\n");
      continue;
    }
    if (!rpn_expr(k, e, out)) {
      error_at(d, e->loc.line ? e->loc : k->loc,
               "grid axis %d of kernel '%s' must be an integer expression of sizes, integer "
               "scalars, constants and num_sms using + - * / %% min max ceildiv",
               axis, k->name);
      return false;
    }
    sb_puts(out, "\n");
  }
  return true;
}

/* dims=D0,D1,... and, for a tensor declared with strides(...), strides=S0,S1,...: each a size's
 * name or a decimal integer (docs/abi.md). */
static bool meta_dims(const Kernel *k, const Buffer *b, Expr *const *v, const char *what, Diags *d,
                      StrBuf *out)
{
  sb_printf(out, " %s=", what);
  for (int i = 0; i < b->rank; i++) {
    const Expr *s = v[i];
    if (i)
      sb_puts(out, ",");
    if (s && s->kind == EX_INT) {
      sb_printf(out, "%lld", (long long)s->i);
    } else if (s && s->kind == EX_VAR && k->vars[s->var].kind == VAR_SIZE && is_param(k, s->var)) {
      sb_puts(out, k->vars[s->var].name);
    } else if (s && s->kind == EX_VAR && k->vars[s->var].kind == VAR_CONST &&
               !k->vars[s->var].cval_is_float) {
      sb_printf(out, "%lld", (long long)k->vars[s->var].cval_i);
    } else {
      error_at(d, b->loc.line ? b->loc : k->loc, "%s %d of tensor '%s' must be a size name or an integer",
               v == b->shape ? "dimension" : "stride", i, b->name);
      return false;
    }
  }
  return true;
}

static bool meta_tensor(const Kernel *k, int index, const Buffer *b, Diags *d, StrBuf *out)
{
  sb_printf(out, META "param %d tensor %s %s rank=%d", index, b->name, type_name(b->elem), b->rank);
  if (!meta_dims(k, b, b->shape, "dims", d, out) ||
      (buffer_strided(b) && !meta_dims(k, b, b->stride, "strides", d, out)))
    return false;
  sb_puts(out, "\n");
  return true;
}

static bool meta_kernel(const Kernel *k, Diags *d, StrBuf *out)
{
  long long smem = cg_smem_is_dynamic(k) ? (long long)k->smem_bytes : 0;
  sb_printf(out, META "kernel %s threads=%d smem=%lld params=%d\n", k->name, k->nthreads, smem, k->nparams);
  for (int i = 0; i < k->nparams; i++) {
    const struct KParam *p = &k->params[i];
    if (p->is_buffer) {
      if (!meta_tensor(k, i, &k->bufs[p->index], d, out))
        return false;
      continue;
    }
    if (p->is_tmap) {
      const struct TensorMap *m = &k->tmaps[p->index];
      const Buffer *b = &k->bufs[m->buf];
      sb_printf(out, META "param %d tmap %s.tmap%d %s tensor=%d box=", i, b->name, p->index,
                type_name(b->elem), b->param_index);
      for (int j = 0; j < b->rank; j++)
        sb_printf(out, "%s%lld", j ? "," : "", (long long)m->box[j]);
      sb_printf(out, " swizzle=%lld\n", (long long)(m->box[b->rank - 1] * type_bytes(b->elem)));
      continue;
    }
    const Var *v = &k->vars[p->index];
    if (v->kind == VAR_SIZE)
      sb_printf(out, META "param %d size %s i32\n", i, v->name);
    else if (v->kind == VAR_TMA_OK)
      sb_printf(out, META "param %d tmap_ok %s u32%s\n", i, v->name, k->tma_required ? " required" : "");
    else
      sb_printf(out, META "param %d scalar %s %s\n", i, v->name, type_name(v->type));
  }
  for (int i = 0; i < k->nlconsts; i++)
    sb_printf(out, META "const %s %lld %s\n", k->lconsts[i].name, (long long)k->lconsts[i].value,
              k->lconsts[i].rpn);
  return meta_grid(k, d, out);
}

bool emit_meta_block(const Module *m, Diags *d, StrBuf *out)
{
  sb_puts(out, META "v1\n");
  for (int i = 0; i < m->nkernels; i++)
    if (!meta_kernel(m->kernels[i], d, out))
      return false;
  sb_puts(out, META "end\n");
  return true;
}
