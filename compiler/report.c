/* report.c: tilec --emit=report, per kernel: constants, launch shape, shared tiles with the
 * bank conflicts of every access the lowering made of them, fragments with a map of one warp's
 * elements, global traffic and FLOPs as formulas of the sizes, shared memory and occupancy.
 *
 * Two views of the kernel (report.h): the tile IR after `layout` for what the program asks
 * (traffic, FLOPs, fragment layouts), the thread-level IR after the pipeline for what the lowering
 * made of it (shared-memory addresses).  Nothing here decides anything: widths, swizzles and
 * offsets are read from the lowered IR, addresses computed by ir/smem.c as codegen computes them. */
#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A size the warp walk needs but --size did not give: large (every tile inside the tensor, the
 * copies' fast paths taken) and a power of two (every divisibility test of the fast paths holds). */
#define WALK_SIZE ((int64_t)1 << 30)

/* ---------------------------------------------------------------- formulas */

/* Formulas are IR expressions over the sizes, the block index and num_sms, printed with the
 * fewest parentheses C's precedence allows; a bool-typed factor of a product is an Iverson
 * bracket, [N <= 4096]: 1 when it holds, else 0. */

static int fm_prec(const Expr *e)
{
  if (e->kind == EX_UNARY)
    return 6;
  if (e->kind != EX_BINARY)
    return 9;
  switch ((OpKind)e->op) {
  case OP_LOR: return 1;
  case OP_LAND: return 2;
  case OP_ADD:
  case OP_SUB: return 4;
  case OP_MUL:
  case OP_DIV:
  case OP_MOD: return 5;
  case OP_MIN:
  case OP_MAX:
  case OP_CEILDIV: return 9;
  default: return 3; /* comparisons; bit operations, parenthesized among them */
  }
}

static void fm_print_at(StrBuf *sb, const Kernel *k, const Expr *e, int need)
{
  switch (e->kind) {
  case EX_INT:
    if (e->type == TY_BOOL)
      sb_puts(sb, e->i ? "true" : "false");
    else
      sb_printf(sb, "%" PRId64, e->i);
    return;
  case EX_VAR: sb_puts(sb, k->vars[e->var].name); return;
  case EX_CAST: fm_print_at(sb, k, e->a, need); return;
  case EX_UNARY:
    if (need > 6)
      sb_puts(sb, "(");
    sb_puts(sb, op_spelling((OpKind)e->op));
    fm_print_at(sb, k, e->a, 7);
    if (need > 6)
      sb_puts(sb, ")");
    return;
  case EX_SELECT:
    sb_puts(sb, "select(");
    fm_print_at(sb, k, e->a, 0);
    sb_puts(sb, ", ");
    fm_print_at(sb, k, e->b, 0);
    sb_puts(sb, ", ");
    fm_print_at(sb, k, e->c, 0);
    sb_puts(sb, ")");
    return;
  case EX_BINARY: {
    int p = fm_prec(e);
    if (p == 9) {
      sb_printf(sb, "%s(", op_spelling((OpKind)e->op));
      fm_print_at(sb, k, e->a, 0);
      sb_puts(sb, ", ");
      fm_print_at(sb, k, e->b, 0);
      sb_puts(sb, ")");
      return;
    }
    if (p < need)
      sb_puts(sb, "(");
    fm_print_at(sb, k, e->a, p);
    sb_printf(sb, " %s ", op_spelling((OpKind)e->op));
    fm_print_at(sb, k, e->b, p + 1);
    if (p < need)
      sb_puts(sb, ")");
    return;
  }
  default: ir_print_expr(sb, k, e); return;
  }
}

static void fm_print(StrBuf *sb, const Kernel *k, const Expr *e) { fm_print_at(sb, k, e, 0); }

/* Values of the variables a formula may use. */
typedef struct {
  const Kernel *k;
  int64_t *val;
  bool *known;
} FEnv;

static bool fm_eval(const FEnv *env, const Expr *e, int64_t *out)
{
  int64_t a = 0, b = 0, c = 0;
  switch (e->kind) {
  case EX_INT: *out = e->i; return true;
  case EX_VAR:
    if (!env->known[e->var])
      return false;
    *out = env->val[e->var];
    return true;
  case EX_CAST: return fm_eval(env, e->a, out);
  case EX_UNARY:
    if (!fm_eval(env, e->a, &a))
      return false;
    *out = e->op == OP_NEG ? -a : e->op == OP_NOT ? !a : ~a;
    return true;
  case EX_SELECT:
    if (!fm_eval(env, e->a, &a) || !fm_eval(env, a ? e->b : e->c, &b))
      return false;
    *out = b;
    return true;
  case EX_BINARY:
    if (!fm_eval(env, e->a, &a) || !fm_eval(env, e->b, &b))
      return false;
    switch ((OpKind)e->op) {
    case OP_ADD: c = a + b; break;
    case OP_SUB: c = a - b; break;
    case OP_MUL: c = a * b; break;
    case OP_DIV:
    case OP_MOD:
      if (!b)
        return false;
      c = e->op == OP_DIV ? a / b : a % b;
      break;
    case OP_CEILDIV:
      if (b <= 0)
        return false;
      c = a >= 0 ? (a + b - 1) / b : -(-a / b);
      break;
    case OP_SHL: c = b >= 0 && b < 63 ? a << b : 0; break;
    case OP_SHR: c = b >= 0 && b < 63 ? a >> b : 0; break;
    case OP_BAND: c = a & b; break;
    case OP_BOR: c = a | b; break;
    case OP_BXOR: c = a ^ b; break;
    case OP_LAND: c = a && b; break;
    case OP_LOR: c = a || b; break;
    case OP_LT: c = a < b; break;
    case OP_LE: c = a <= b; break;
    case OP_GT: c = a > b; break;
    case OP_GE: c = a >= b; break;
    case OP_EQ: c = a == b; break;
    case OP_NE: c = a != b; break;
    case OP_MIN: c = a < b ? a : b; break;
    case OP_MAX: c = a > b ? a : b; break;
    default: return false;
    }
    *out = c;
    return true;
  default: return false;
  }
}

static bool fm_mentions_block(const Kernel *k, const Expr *e)
{
  if (!e)
    return false;
  if (e->kind == EX_VAR)
    return k->vars[e->var].kind == VAR_BLOCK_IDX;
  if (fm_mentions_block(k, e->a) || fm_mentions_block(k, e->b) || fm_mentions_block(k, e->c))
    return true;
  for (int i = 0; i < e->nargs; i++)
    if (fm_mentions_block(k, e->args[i]))
      return true;
  return false;
}

static bool fm_mentions_var_kind(const Kernel *k, const Expr *e, VarKind kind)
{
  if (!e)
    return false;
  if (e->kind == EX_VAR)
    return k->vars[e->var].kind == kind;
  if (fm_mentions_var_kind(k, e->a, kind) || fm_mentions_var_kind(k, e->b, kind) ||
      fm_mentions_var_kind(k, e->c, kind))
    return true;
  for (int i = 0; i < e->nargs; i++)
    if (fm_mentions_var_kind(k, e->args[i], kind))
      return true;
  return false;
}

static bool fm_has_load(const Expr *e)
{
  if (!e)
    return false;
  if (e->kind == EX_LOAD)
    return true;
  if (fm_has_load(e->a) || fm_has_load(e->b) || fm_has_load(e->c))
    return true;
  for (int i = 0; i < e->nargs; i++)
    if (fm_has_load(e->args[i]))
      return true;
  return false;
}

/* A sum of terms coef * factor * factor ..., the factors loop trip counts and conditions; terms
 * with the same factors are kept as one. */
enum { MAX_FACTORS = 8 };

typedef struct {
  int64_t coef;
  int nf;
  const Expr *f[MAX_FACTORS];
  char *key; /* the factors as printed */
} Term;

typedef struct {
  Term *t;
  int n, cap;
} Sum;

static void print_factor(StrBuf *sb, const Kernel *k, const Expr *f)
{
  if (f->type == TY_BOOL) {
    sb_puts(sb, "[");
    fm_print(sb, k, f);
    sb_puts(sb, "]");
  } else {
    fm_print_at(sb, k, f, 5);
  }
}

static void sum_add(Arena *a, const Kernel *k, Sum *s, int64_t coef, const Expr *const *f, int nf)
{
  if (!coef)
    return;
  StrBuf sb = {0};
  for (int i = 0; i < nf; i++) {
    if (i)
      sb_puts(&sb, " * ");
    print_factor(&sb, k, f[i]);
  }
  char *key = arena_strdup(a, sb.data ? sb.data : "");
  free(sb.data);
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->t[i].key, key)) {
      s->t[i].coef += coef;
      return;
    }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    Term *t = ARENA_ARRAY(a, Term, s->cap);
    if (s->n)
      memcpy(t, s->t, sizeof *t * (size_t)s->n);
    s->t = t;
  }
  Term *t = &s->t[s->n++];
  t->coef = coef;
  t->nf = nf;
  for (int i = 0; i < nf; i++)
    t->f[i] = f[i];
  t->key = key;
}

static void sum_print(StrBuf *sb, const Sum *s)
{
  if (!s->n)
    sb_puts(sb, "0");
  for (int i = 0; i < s->n; i++) {
    const Term *t = &s->t[i];
    if (i)
      sb_puts(sb, " + ");
    if (!t->nf)
      sb_printf(sb, "%" PRId64, t->coef);
    else if (t->coef == 1)
      sb_puts(sb, t->key);
    else
      sb_printf(sb, "%" PRId64 " * %s", t->coef, t->key);
  }
}

static bool sum_eval(const FEnv *env, const Sum *s, double *out)
{
  double total = 0;
  for (int i = 0; i < s->n; i++) {
    double term = (double)s->t[i].coef;
    for (int j = 0; j < s->t[i].nf; j++) {
      int64_t v;
      if (!fm_eval(env, s->t[i].f[j], &v))
        return false;
      /* a condition is 1 or 0; a trip count below 0 runs no iteration */
      term *= (double)(s->t[i].f[j]->type == TY_BOOL ? v != 0 : v > 0 ? v : 0);
    }
    total += term;
  }
  *out = total;
  return true;
}

static bool sum_mentions_block(const Kernel *k, const Sum *s)
{
  for (int i = 0; i < s->n; i++)
    for (int j = 0; j < s->t[i].nf; j++)
      if (fm_mentions_block(k, s->t[i].f[j]))
        return true;
  return false;
}

/* ---------------------------------------------------------------- counting (tile IR) */

/* What one block of the tile-level kernel reads and writes in global memory and computes: every
 * copy of a global tensor counts its tile whole (masked tails aside), every element load or store
 * of a global tensor once per iteration; FLOPs are gemm's 2 M N K per call, and in expressions one
 * per floating-point +, -, *, /, min, max or math function (fma 2), and a reduction one per
 * element it combines. */
typedef struct {
  Arena *a;
  const Kernel *k;
  Expr **bind;                /* per var: the value of a let, over sizes and the block index */
  const Expr *f[MAX_FACTORS]; /* the trip counts and conditions around the statement */
  int nf;
  int64_t mult;               /* iterations of the parallel loops around it */
  bool overflow;              /* more factors than MAX_FACTORS: the rest were dropped */
  bool upper;                 /* an if on a loop variable or on data counted both ways */
  Sum rd, wr, mma, ops;
} Count;

static Expr *subst_fn(void *ctx, Expr *e)
{
  Count *c = ctx;
  if (e->kind == EX_VAR && c->bind[e->var])
    return ex_clone(c->a, c->bind[e->var]);
  return e;
}

/* e with the lets it uses replaced by their values, folded. */
static Expr *subst(Count *c, const Expr *e)
{
  return ir_fold(c->a, c->k, expr_rewrite(ex_clone(c->a, e), subst_fn, c));
}

static void add(Count *c, Sum *s, int64_t per) { sum_add(c->a, c->k, s, per * c->mult, c->f, c->nf); }

static void push_factor(Count *c, const Expr *f)
{
  if (c->nf < MAX_FACTORS)
    c->f[c->nf++] = f;
  else
    c->overflow = true;
}

static void count_expr(Count *c, const Expr *e)
{
  if (!e)
    return;
  if (e->kind == EX_LOAD && c->k->bufs[e->buf].scope == SCOPE_GLOBAL)
    add(c, &c->rd, type_bytes(e->type));
  if (e->kind == EX_BINARY && type_is_float(e->a->type) &&
      (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL || e->op == OP_DIV || e->op == OP_MIN ||
       e->op == OP_MAX))
    add(c, &c->ops, 1);
  if (e->kind == EX_CALL && type_is_float(e->type) && e->op != FN_SHFL_BFLY)
    add(c, &c->ops, e->op == FN_FMA ? 2 : 1);
  count_expr(c, e->a);
  count_expr(c, e->b);
  count_expr(c, e->c);
  for (int i = 0; i < e->nargs; i++)
    count_expr(c, e->args[i]);
}

static void count_stmt(Count *c, const Stmt *s, bool parallel);

static void count_under(Count *c, const Stmt *s, const Expr *factor, bool parallel)
{
  int nf = c->nf;
  push_factor(c, factor);
  count_stmt(c, s, parallel);
  c->nf = nf;
}

static void count_stmt(Count *c, const Stmt *s, bool parallel)
{
  if (!s)
    return;
  const Kernel *k = c->k;
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++)
      count_stmt(c, s->body[i], parallel);
    break;
  case ST_LET:
    c->bind[s->var] = subst(c, s->value);
    count_expr(c, s->value);
    break;
  case ST_ASSIGN:
  case ST_EVAL: count_expr(c, s->value); break;
  case ST_STORE:
  case ST_ATOMIC:
    count_expr(c, s->value);
    for (int i = 0; i < s->nidx; i++)
      count_expr(c, s->idx[i]);
    if (k->bufs[s->buf].scope == SCOPE_GLOBAL) {
      add(c, &c->wr, type_bytes(k->bufs[s->buf].elem));
      if (s->kind == ST_ATOMIC)
        add(c, &c->rd, type_bytes(k->bufs[s->buf].elem));
    }
    if (s->kind == ST_ATOMIC && type_is_float(k->bufs[s->buf].elem))
      add(c, &c->ops, 1);
    break;
  case ST_IF: {
    count_expr(c, s->cond);
    if (parallel) { /* per element: both sides counted, as if every element took each */
      count_stmt(c, s->then_s, parallel);
      count_stmt(c, s->else_s, parallel);
      break;
    }
    Expr *cond = subst(c, s->cond);
    int64_t v;
    if (ex_is_const_int(cond, &v)) {
      count_stmt(c, v ? s->then_s : s->else_s, parallel);
      break;
    }
    if (fm_mentions_var_kind(k, cond, VAR_LOOP) || fm_mentions_var_kind(k, cond, VAR_MUT) ||
        fm_mentions_var_kind(k, cond, VAR_SCALAR) || fm_has_load(cond)) {
      /* a condition that changes between iterations or with data: both sides, an upper bound */
      c->upper = true;
      count_stmt(c, s->then_s, parallel);
      count_stmt(c, s->else_s, parallel);
      break;
    }
    count_under(c, s->then_s, cond, parallel);
    if (s->else_s)
      count_under(c, s->else_s, ex_unary(c->a, OP_NOT, ex_clone(c->a, cond)), parallel);
    break;
  }
  case ST_FOR: {
    if (s->for_kind == FOR_PARALLEL || s->for_kind == FOR_UNROLLED) {
      int64_t save = c->mult, n = 1;
      for (int d = 0; d < s->nvars; d++) {
        int64_t e = 0;
        ex_is_const_int(s->extents[d], &e);
        n *= e;
      }
      c->mult *= n;
      count_stmt(c, s->then_s, parallel || s->for_kind == FOR_PARALLEL);
      c->mult = save;
      break;
    }
    int nf = c->nf;
    int64_t save = c->mult;
    for (int d = 0; d < s->nvars; d++) {
      Expr *n = subst(c, s->extents[d]);
      int64_t v;
      if (ex_is_const_int(n, &v))
        c->mult *= v > 0 ? v : 0;
      else
        push_factor(c, n); /* a trip count: a negative value counts as 0 (sum_eval) */
    }
    count_stmt(c, s->then_s, parallel);
    c->nf = nf;
    c->mult = save;
    break;
  }
  case ST_COPY: {
    const Region *g = s->src.origin ? &s->src : s->dst.origin ? &s->dst : NULL;
    const Region *t = g == &s->src ? &s->dst : &s->src;
    if (g) {
      int64_t bytes = buffer_elems(&k->bufs[t->buf]) * type_bytes(k->bufs[g->buf].elem);
      add(c, g == &s->src ? &c->rd : &c->wr, bytes);
    }
    break;
  }
  case ST_GEMM: {
    const Buffer *A = &k->bufs[s->a], *C = &k->bufs[s->c];
    int64_t K = s->trans_a ? A->tile_shape[0] : A->tile_shape[1];
    add(c, &c->mma, 2 * C->tile_shape[0] * C->tile_shape[1] * K);
    break;
  }
  case ST_REDUCE: {
    int64_t src = buffer_elems(&k->bufs[s->src_buf]), dst = buffer_elems(&k->bufs[s->buf]);
    if (type_is_float(k->bufs[s->buf].elem))
      add(c, &c->ops, src - dst + (s->accumulate ? dst : 0));
    break;
  }
  default: break;
  }
}

/* ---------------------------------------------------------------- one warp's shared accesses */

/* The thread-level kernel run symbolically for warp 0 of block 0: every variable an integer per
 * lane when it can be known (sizes from --size or WALK_SIZE, the block index 0, tid.x the lane,
 * loop variables their iteration), an `if` taken by the lanes whose condition holds (both sides
 * by lanes whose condition is not known), unrolled loops run through, other loops once (their
 * first iteration), aligned16(...) true: the path of a block inside a large aligned tensor.  At
 * each instruction that reads or writes a shared tile, the byte address of each active lane
 * (ir/smem.c, as codegen computes it) gives the wavefronts the access takes. */

enum { MAX_WALK_STEPS = 2000000 };

/* A shared access site: one instruction of the lowered code at one line, for one tile. */
typedef struct {
  int buf;
  const char *what; /* "copy in (cp.async)", "ldmatrix.x4 (gemm operand)", ... */
  int width;        /* bytes per lane */
  int line;
  int64_t count;    /* instructions run by the warp */
  int64_t wavefronts, ideal;
  double worst;     /* the largest wavefronts / ideal of one instruction */
  int64_t unknown;  /* instructions whose addresses were not known */
  bool no_lanes;    /* the hardware's engine, not lanes: TMA, wgmma */
} Site;

typedef struct {
  Arena *a;
  const Kernel *k;
  int64_t *val; /* [nvars][32] */
  uint32_t *kn; /* [nvars]: lanes whose value is known */
  Site *sites;
  int nsites, cap;
  long steps;
  bool cut; /* the walk stopped at MAX_WALK_STEPS */
  int line; /* of the innermost statement with a line around the current one: the lowering's
               statements often have none, their tile statement's is meant */
} Warp;

static Site *site_for(Warp *w, int buf, const char *what, int width, int line, bool no_lanes)
{
  for (int i = 0; i < w->nsites; i++) {
    Site *s = &w->sites[i];
    if (s->buf == buf && s->width == width && s->line == line && !strcmp(s->what, what))
      return s;
  }
  if (w->nsites == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 16;
    Site *n = ARENA_ARRAY(w->a, Site, w->cap);
    if (w->nsites)
      memcpy(n, w->sites, sizeof *n * (size_t)w->nsites);
    w->sites = n;
  }
  Site *s = &w->sites[w->nsites++];
  *s = (Site){.buf = buf, .what = what, .width = width, .line = line, .no_lanes = no_lanes};
  return s;
}

/* Wavefronts of one access of `width` bytes per lane at byte addr[l] by the lanes of mask: the
 * warp in phases of 32 / (width / 4) lanes (one for 4 bytes or less, 2 for 8, 4 for 16: 128
 * bytes each), each phase as many wavefronts as the most distinct 4-byte words any of the 32
 * banks holds.  *ideal: the phases' words / 32, rounded up. */
static int64_t wavefronts(const int64_t *addr, uint32_t mask, int width, int64_t *ideal)
{
  int per_phase = width <= 4 ? 32 : 32 / (width / 4);
  int64_t total = 0;
  *ideal = 0;
  for (int p0 = 0; p0 < 32; p0 += per_phase) {
    int64_t words[32 * 4];
    int nw = 0;
    for (int l = p0; l < p0 + per_phase; l++) {
      if (!(mask >> l & 1))
        continue;
      for (int64_t wd = addr[l] / 4; wd <= (addr[l] + width - 1) / 4; wd++) {
        bool seen = false;
        for (int i = 0; i < nw && !seen; i++)
          seen = words[i] == wd;
        if (!seen && nw < 32 * 4)
          words[nw++] = wd;
      }
    }
    if (!nw)
      continue;
    int worst = 0;
    for (int bank = 0; bank < 32; bank++) {
      int n = 0;
      for (int i = 0; i < nw; i++)
        n += words[i] % 32 == bank;
      if (n > worst)
        worst = n;
    }
    total += worst;
    *ideal += (nw + 31) / 32;
  }
  return total;
}

static void ev(Warp *w, const Expr *e, uint32_t mask, int64_t *v, uint32_t *known);

/* One access of buf[idx] by the lanes of mask, `width` bytes each. */
static void record(Warp *w, int buf, Expr *const *idx, int nidx, uint32_t mask, int width, const char *what,
                   int line)
{
  if (!mask)
    return;
  const Buffer *b = &w->k->bufs[buf];
  int64_t iv[TL_MAX_RANK][32];
  uint32_t known = mask;
  for (int d = 0; d < nidx && d < TL_MAX_RANK; d++) {
    uint32_t kn;
    ev(w, idx[d], mask, iv[d], &kn);
    known &= kn;
  }
  Site *s = site_for(w, buf, what, width, line ? line : w->line, false);
  s->count++;
  if (known != mask) {
    s->unknown++;
    return;
  }
  int64_t addr[32] = {0};
  for (int l = 0; l < 32; l++)
    if (mask >> l & 1) {
      int64_t at[TL_MAX_RANK];
      for (int d = 0; d < nidx; d++)
        at[d] = iv[d][l];
      addr[l] = b->smem_offset + smem_elem_offset(b, at, nidx) * type_bytes(b->elem);
    }
  int64_t ideal;
  int64_t wf = wavefronts(addr, mask, width, &ideal);
  s->wavefronts += wf;
  s->ideal += ideal;
  double r = ideal ? (double)wf / (double)ideal : 1;
  if (r > s->worst)
    s->worst = r;
}

static int64_t ev_binop(int op, int64_t a, int64_t b, bool *ok)
{
  switch ((OpKind)op) {
  case OP_ADD: return a + b;
  case OP_SUB: return a - b;
  case OP_MUL: return a * b;
  case OP_DIV:
  case OP_MOD:
    if (!b || (b == -1 && a == INT64_MIN)) {
      *ok = false;
      return 0;
    }
    return op == OP_DIV ? a / b : a % b;
  case OP_CEILDIV:
    if (b <= 0) {
      *ok = false;
      return 0;
    }
    return a >= 0 ? (a + b - 1) / b : -(-a / b);
  case OP_SHL: return b >= 0 && b < 63 ? (int64_t)((uint64_t)a << b) : 0;
  case OP_SHR: return b >= 0 && b < 63 ? a >> b : 0;
  case OP_BAND: return a & b;
  case OP_BOR: return a | b;
  case OP_BXOR: return a ^ b;
  case OP_LAND: return a && b;
  case OP_LOR: return a || b;
  case OP_LT: return a < b;
  case OP_LE: return a <= b;
  case OP_GT: return a > b;
  case OP_GE: return a >= b;
  case OP_EQ: return a == b;
  case OP_NE: return a != b;
  case OP_MIN: return a < b ? a : b;
  case OP_MAX: return a > b ? a : b;
  default: *ok = false; return 0;
  }
}

/* e's value in every lane of mask (known: the lanes where it is an integer that can be known);
 * loads of shared tiles met on the way are recorded as element accesses. */
static void ev(Warp *w, const Expr *e, uint32_t mask, int64_t *v, uint32_t *known)
{
  *known = 0;
  if (!e || !mask)
    return;
  const Kernel *k = w->k;
  int64_t a[32], b[32], c[32];
  uint32_t ka, kb, kc;
  switch (e->kind) {
  case EX_INT:
    for (int l = 0; l < 32; l++)
      v[l] = e->i;
    *known = mask;
    return;
  case EX_FLOAT: return;
  case EX_VAR:
    for (int l = 0; l < 32; l++)
      v[l] = w->val[(size_t)e->var * 32 + (size_t)l];
    *known = mask & w->kn[e->var];
    return;
  case EX_LOAD:
    if (k->bufs[e->buf].scope == SCOPE_SHARED)
      record(w, e->buf, e->args, e->nargs, mask, type_bytes(e->type), "element load", e->loc.line);
    else
      for (int i = 0; i < e->nargs; i++)
        ev(w, e->args[i], mask, a, &ka);
    return;
  case EX_ALIGNED:
    for (int l = 0; l < 32; l++)
      v[l] = 1;
    *known = mask;
    return;
  case EX_CALL:
    for (int i = 0; i < e->nargs; i++)
      ev(w, e->args[i], mask, a, &ka);
    return;
  case EX_CAST:
    ev(w, e->a, mask, a, &ka);
    if (type_is_float(e->type) || type_is_float(e->a->type))
      return;
    for (int l = 0; l < 32; l++)
      v[l] = type_wrap_int(e->type, a[l]);
    *known = ka;
    return;
  case EX_UNARY:
    ev(w, e->a, mask, a, &ka);
    if (type_is_float(e->type))
      return;
    for (int l = 0; l < 32; l++)
      v[l] = type_wrap_int(e->type, e->op == OP_NEG ? -a[l] : e->op == OP_NOT ? !a[l] : ~a[l]);
    *known = ka;
    return;
  case EX_SELECT:
    ev(w, e->a, mask, a, &ka);
    ev(w, e->b, mask, b, &kb);
    ev(w, e->c, mask, c, &kc);
    for (int l = 0; l < 32; l++)
      if (ka >> l & 1) {
        v[l] = a[l] ? b[l] : c[l];
        if ((a[l] ? kb : kc) >> l & 1)
          *known |= 1u << l;
      }
    return;
  case EX_BINARY:
    ev(w, e->a, mask, a, &ka);
    ev(w, e->b, mask, b, &kb);
    if (type_is_float(e->a->type))
      return;
    for (int l = 0; l < 32; l++) {
      bool ok = true;
      /* && and || are known from one known side that decides them */
      if (e->op == OP_LAND && (((ka >> l & 1) && !a[l]) || ((kb >> l & 1) && !b[l]))) {
        v[l] = 0;
        *known |= mask & 1u << l;
        continue;
      }
      if (e->op == OP_LOR && (((ka >> l & 1) && a[l]) || ((kb >> l & 1) && b[l]))) {
        v[l] = 1;
        *known |= mask & 1u << l;
        continue;
      }
      if (!((ka & kb) >> l & 1))
        continue;
      int64_t r = ev_binop(e->op, a[l], b[l], &ok);
      if (ok) {
        v[l] = op_is_comparison((OpKind)e->op) || e->op == OP_LAND || e->op == OP_LOR
                   ? r
                   : type_wrap_int(e->type, r);
        *known |= 1u << l;
      }
    }
    return;
  }
}

static void walk(Warp *w, const Stmt *s, uint32_t mask);
static void walk_one(Warp *w, const Stmt *s, uint32_t mask);

static void set_var(Warp *w, int var, const int64_t *v, uint32_t known, uint32_t mask)
{
  for (int l = 0; l < 32; l++)
    if (mask >> l & 1) {
      w->val[(size_t)var * 32 + (size_t)l] = v[l];
      if (known >> l & 1)
        w->kn[var] |= 1u << l;
      else
        w->kn[var] &= ~(1u << l);
    }
}

/* What a vector copy does to a shared tile, by the scope of its other side. */
static const char *vcopy_what(Scope other, bool into_shared)
{
  if (other == SCOPE_GLOBAL)
    return into_shared ? "copy in from global (vector store)" : "copy out to global (vector load)";
  if (other == SCOPE_SHARED)
    return into_shared ? "copy from shared (vector store)" : "copy to shared (vector load)";
  return into_shared ? "store from registers (vector)" : "load into registers (vector)";
}

static void walk_for(Warp *w, const Stmt *s, uint32_t mask, int d)
{
  if (d == s->nvars) {
    walk(w, s->then_s, mask);
    return;
  }
  int64_t n[32];
  uint32_t kn;
  ev(w, s->extents[d], mask, n, &kn);
  int64_t iters = 1;
  if (s->for_kind == FOR_UNROLLED && kn == mask) {
    iters = 0;
    for (int l = 0; l < 32; l++)
      if (mask >> l & 1 && n[l] > iters)
        iters = n[l];
  }
  for (int64_t i = 0; i < iters && !w->cut; i++) {
    uint32_t m = 0;
    for (int l = 0; l < 32; l++)
      if (mask >> l & 1 && (!(kn >> l & 1) || i < n[l]))
        m |= 1u << l;
    int64_t iv[32];
    for (int l = 0; l < 32; l++)
      iv[l] = i;
    set_var(w, s->vars[d], iv, m, m);
    walk_for(w, s, m, d + 1);
  }
}

static void walk(Warp *w, const Stmt *s, uint32_t mask)
{
  if (!s || !mask || w->cut)
    return;
  if (++w->steps > MAX_WALK_STEPS) {
    w->cut = true;
    return;
  }
  int line = w->line;
  if (s->loc.line)
    w->line = s->loc.line;
  walk_one(w, s, mask);
  w->line = line;
}

static void walk_one(Warp *w, const Stmt *s, uint32_t mask)
{
  const Kernel *k = w->k;
  int64_t v[32];
  uint32_t kn;
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++)
      walk(w, s->body[i], mask);
    return;
  case ST_LET:
  case ST_ASSIGN:
    ev(w, s->value, mask, v, &kn);
    set_var(w, s->var, v, kn, mask);
    return;
  case ST_EVAL: ev(w, s->value, mask, v, &kn); return;
  case ST_STORE:
  case ST_ATOMIC:
    ev(w, s->value, mask, v, &kn);
    if (k->bufs[s->buf].scope == SCOPE_SHARED)
      record(w, s->buf, s->idx, s->nidx, mask, type_bytes(k->bufs[s->buf].elem),
             s->kind == ST_ATOMIC ? "atomic" : "element store", s->loc.line);
    else
      for (int i = 0; i < s->nidx; i++)
        ev(w, s->idx[i], mask, v, &kn);
    return;
  case ST_IF: {
    ev(w, s->cond, mask, v, &kn);
    uint32_t t = 0, f = 0;
    for (int l = 0; l < 32; l++)
      if (mask >> l & 1) {
        bool isknown = kn >> l & 1;
        if (!isknown || v[l])
          t |= 1u << l;
        if (!isknown || !v[l])
          f |= 1u << l;
      }
    walk(w, s->then_s, t);
    walk(w, s->else_s, f);
    return;
  }
  case ST_FOR: walk_for(w, s, mask, 0); return;
  case ST_VCOPY: {
    const Buffer *src = &k->bufs[s->src_buf], *dst = &k->bufs[s->buf];
    if (src->scope == SCOPE_SHARED)
      record(w, s->src_buf, s->src_idx, s->nsrc_idx, mask, s->lanes * type_bytes(src->elem),
             vcopy_what(dst->scope, false), s->loc.line);
    if (dst->scope == SCOPE_SHARED)
      record(w, s->buf, s->idx, s->nidx, mask, s->lanes * type_bytes(dst->elem), vcopy_what(src->scope, true),
             s->loc.line);
    return;
  }
  case ST_CP_ASYNC:
    record(w, s->buf, s->idx, s->nidx, mask, 16, "copy in from global (cp.async)", s->loc.line);
    return;
  case ST_LDMATRIX: {
    /* lanes 8i .. 8i+7 give the rows of matrix i: only the first 8 * matrices lanes address */
    uint32_t m = mask & (s->matrices >= 4 ? 0xFFFFFFFFu : (1u << (8 * s->matrices)) - 1);
    const char *what = arena_printf(w->a, "ldmatrix.x%d%s (gemm operand)", s->matrices,
                                    s->trans ? ".trans" : "");
    record(w, s->src_buf, s->src_idx, s->nsrc_idx, m, 16, what, s->loc.line);
    return;
  }
  case ST_WGMMA:
    if (k->bufs[s->a].scope == SCOPE_SHARED)
      site_for(w, s->a, "read by wgmma (descriptor)", 0, w->line, true)->count++;
    if (k->bufs[s->b].scope == SCOPE_SHARED)
      site_for(w, s->b, "read by wgmma (descriptor)", 0, w->line, true)->count++;
    return;
  case ST_MBAR_INIT:
  case ST_MBAR_ARRIVE:
  case ST_MBAR_EXPECT_TX:
  case ST_MBAR_WAIT: site_for(w, s->bar, "mbarrier operation", 0, w->line, true)->count++; return;
  case ST_TMA_LOAD: site_for(w, s->buf, "written by TMA (copy engine)", 0, w->line, true)->count++; return;
  case ST_TMA_STORE: site_for(w, s->buf, "read by TMA (copy engine)", 0, w->line, true)->count++; return;
  default: return;
  }
}

/* Does the grid (as specialized: grid(P * min(.., num_sms) + ..) with P = 0 has none) use num_sms? */
static bool grid_uses_num_sms(const Kernel *k)
{
  for (int axis = 0; axis < k->grid_rank; axis++)
    if (fm_mentions_var_kind(k, k->grid[axis], VAR_NUM_SMS))
      return true;
  return false;
}

/* Values for the walk: sizes, grid dimensions, num_sms; the block index 0; tid.x the lane. */
static void walk_init(Warp *w, const FEnv *sizes, const int64_t *grid, int tid0)
{
  const Kernel *k = w->k;
  for (int i = 0; i < k->nvars; i++) {
    const Var *var = &k->vars[i];
    int64_t x = 0;
    bool known = true;
    switch (var->kind) {
    case VAR_SIZE: x = sizes->known[i] ? sizes->val[i] : WALK_SIZE; break;
    case VAR_CONST:
      x = var->cval_i;
      known = !var->cval_is_float;
      break;
    case VAR_BLOCK_IDX: x = 0; break;
    case VAR_GRID_DIM: x = grid[var->dim]; break;
    case VAR_NUM_SMS: x = sizes->known[i] ? sizes->val[i] : 1; break;
    case VAR_TMA_OK: x = 1; break;
    default: known = false; break;
    }
    for (int l = 0; l < 32; l++)
      w->val[(size_t)i * 32 + (size_t)l] = var->kind == VAR_THREAD_IDX ? tid0 + l : x;
    w->kn[i] = known || var->kind == VAR_THREAD_IDX ? 0xFFFFFFFFu : 0;
  }
}

/* ---------------------------------------------------------------- fragments */

/* The row of a 16x8 mma piece's register rr (0..3) in row piece fm of thread t. */
static int64_t mma_row(const FragLayout *L, int t, int fm, int rr)
{
  int lane = t % 32, wm = t / 32 / L->warps_n;
  int64_t row0 = L->m_interleaved && L->frag_m > 1 ? (int64_t)fm * L->warps_m * 16 + wm * 16
                                                   : (int64_t)wm * L->frag_m * 16 + fm * 16;
  return row0 + lane / 4 + (rr / 2) * 8;
}

/* Element coordinates (row-major flat index of the tile) of register r of thread t, or -1 when
 * the register is past the tile. A rows fragment (one element per row of its parent) gives the
 * row its register holds, as lower_copy.c's row_pos and lw_mma_row do. */
static int64_t frag_elem(const Buffer *b, int t, int r)
{
  const FragLayout *L = &b->layout;
  int64_t total = buffer_elems(b);
  int64_t cols = b->tile_shape[b->rank - 1];
  switch (L->kind) {
  case LAYOUT_ELEMWISE: {
    int64_t c = r / L->vec, v = r % L->vec;
    int64_t flat = (c * L->threads + t) * L->vec + v;
    return flat < total ? flat : -1;
  }
  case LAYOUT_ROWS: {
    int64_t ptotal = 1;
    for (int d = 0; d < L->parent_rank; d++)
      ptotal *= L->parent_shape[d];
    int64_t flat = ((int64_t)r * L->threads + t) * L->vec;
    if (flat >= ptotal)
      return -1;
    return L->parent_rank == 1 ? 0 : flat / L->parent_shape[L->parent_rank - 1];
  }
  case LAYOUT_MMA: {
    int lane = t % 32, wn = t / 32 % L->warps_n;
    int piece = r / 4, rr = r % 4, fm = piece / L->frag_n, fn = piece % L->frag_n;
    int64_t col = L->k_quads
                      ? (int64_t)wn * L->frag_n * 8 + fn / 2 * 16 + 4 * (lane % 4) + 2 * (fn % 2) + rr % 2
                      : (int64_t)wn * L->frag_n * 8 + fn * 8 + 2 * (lane % 4) + rr % 2;
    return mma_row(L, t, fm, rr) * cols + col;
  }
  case LAYOUT_MMA_ROWS: {
    int64_t row = mma_row(L, t, r / 2, (r % 2) * 2);
    return row < total ? row : -1;
  }
  }
  return -1;
}

static void layout_text(StrBuf *sb, const FragLayout *L)
{
  switch (L->kind) {
  case LAYOUT_ELEMWISE:
    sb_printf(sb, "elementwise (vec=%d, chunks=%d, threads=%d)", L->vec, L->chunks, L->threads);
    break;
  case LAYOUT_ROWS:
    sb_printf(sb, "rows of [");
    for (int d = 0; d < L->parent_rank; d++)
      sb_printf(sb, "%s%" PRId64, d ? ", " : "", L->parent_shape[d]);
    sb_printf(sb, "] (vec=%d, chunks=%d, threads=%d)", L->vec, L->chunks, L->threads);
    break;
  case LAYOUT_MMA:
  case LAYOUT_MMA_ROWS:
    sb_printf(sb, "%s (warps %dx%d, pieces %dx%d of 16x8 per warp%s)",
              L->kind == LAYOUT_MMA ? "mma accumulator" : "rows of an mma accumulator", L->warps_m,
              L->warps_n, L->frag_m, L->frag_n,
              L->m_interleaved && L->frag_m > 1 ? ", interleaved"
              : L->k_quads                      ? ", k in quads"
                                                : "");
    break;
  }
}

/* Which lane of warp 0 holds each element of the top-left corner, '.' for other warps. */
static void frag_map(StrBuf *sb, const Buffer *b)
{
  const FragLayout *L = &b->layout;
  int64_t cols = b->tile_shape[b->rank - 1], rows = buffer_elems(b) / cols;
  if (b->rank == 1) { /* a vector: shown as rows of 16 (or fewer) elements */
    cols = buffer_elems(b) < 16 ? buffer_elems(b) : 16;
    rows = (buffer_elems(b) + cols - 1) / cols;
  }
  int shown_r = rows < 8 ? (int)rows : 8, shown_c = cols < 16 ? (int)cols : 16;
  int64_t stride = b->rank == 1 ? cols : b->tile_shape[b->rank - 1];
  int owner[8][16], reg[8][16];
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 16; j++)
      owner[i][j] = -1, reg[i][j] = -1;
  for (int t = 0; t < 32 && t < L->threads; t++)
    for (int r = 0; r < L->regs; r++) {
      int64_t e = frag_elem(b, t, r);
      if (e < 0)
        continue;
      int64_t i = e / stride, j = e % stride;
      if (i < shown_r && j < shown_c && owner[i][j] < 0)
        owner[i][j] = t, reg[i][j] = r;
    }
  bool copies = L->kind == LAYOUT_ROWS || L->kind == LAYOUT_MMA_ROWS;
  const char *whose = copies ? "lowest lane.register holding a copy" : "lane.register";
  if (b->rank == 1)
    sb_printf(sb, "    warp 0, elements 0..%d in rows of %d, as %s ('.': another warp):\n",
              shown_r * shown_c - 1, shown_c, whose);
  else
    sb_printf(sb, "    warp 0, elements [0:%d, 0:%d] as %s ('.': another warp):\n", shown_r, shown_c, whose);
  for (int i = 0; i < shown_r; i++) {
    sb_printf(sb, "      %4" PRId64 " |", b->rank == 1 ? (int64_t)i * cols : (int64_t)i);
    for (int j = 0; j < shown_c; j++) {
      char cell[16];
      if (owner[i][j] < 0)
        snprintf(cell, sizeof cell, ".");
      else
        snprintf(cell, sizeof cell, "%d.%d", owner[i][j], reg[i][j]);
      sb_printf(sb, " %6s", cell);
    }
    sb_puts(sb, "\n");
  }
}

static void frag_rule(StrBuf *sb, const Buffer *b)
{
  const FragLayout *L = &b->layout;
  switch (L->kind) {
  case LAYOUT_ELEMWISE:
    sb_printf(sb,
              "    rule: register c*%d+v of thread t is flat (row-major) element (c*%d + t)*%d + v, "
              "c < %d, v < %d\n",
              L->vec, L->threads, L->vec, L->chunks, L->vec);
    break;
  case LAYOUT_ROWS:
    sb_printf(sb,
              "    rule: register c of thread t holds the row of its parent's flat element (c*%d + t)*%d "
              "(every thread of the row holds a copy)\n",
              L->threads, L->vec);
    break;
  case LAYOUT_MMA:
    if (L->m_interleaved && L->frag_m > 1)
      sb_printf(sb,
                "    rule: warp w = %d*wm + wn; register (fm*%d + fn)*4 + r of lane l is row fm*%d + wm*16",
                L->warps_n, L->frag_n, L->warps_m * 16);
    else
      sb_printf(sb,
                "    rule: warp w = %d*wm + wn; register (fm*%d + fn)*4 + r of lane l is row wm*%d + fm*16",
                L->warps_n, L->frag_n, L->frag_m * 16);
    if (L->k_quads)
      sb_printf(sb, " + l/4 + 8*(r/2), column wn*%d + (fn/2)*16 + 4*(l%%4) + 2*(fn%%2) + r%%2\n",
                L->frag_n * 8);
    else
      sb_printf(sb, " + l/4 + 8*(r/2), column wn*%d + fn*8 + 2*(l%%4) + r%%2\n", L->frag_n * 8);
    break;
  case LAYOUT_MMA_ROWS:
    if (L->m_interleaved && L->frag_m > 1)
      sb_printf(sb, "    rule: register fm*2 + h of lane l in warp row wm holds row fm*%d + wm*16",
                L->warps_m * 16);
    else
      sb_printf(sb, "    rule: register fm*2 + h of lane l in warp row wm holds row wm*%d + fm*16",
                L->frag_m * 16);
    sb_printf(sb, " + l/4 + 8*h (the quad's 4 lanes and the warp row's %d warps hold copies)\n", L->warps_n);
    break;
  }
}

/* ---------------------------------------------------------------- the report */

/* Per-SM limits (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"):
 * resident threads, resident blocks, shared memory per SM (each block also reserves 1 KB there). */
static void sm_limits(int sm, int *threads, int *blocks, int64_t *shared)
{
  *threads = sm == 86 || sm == 89 ? 1536 : 2048;
  *blocks = sm == 86 ? 16 : sm == 89 ? 24 : 32;
  *shared = sm == 80 ? 164 * 1024 : sm == 90 ? 228 * 1024 : 100 * 1024;
}

static void print_number(StrBuf *sb, double v)
{
  if (v >= 1e15 || (v < 1 && v > 0))
    sb_printf(sb, "%.3e", v);
  else
    sb_printf(sb, "%.0f", v);
}

/* "formula" and, when it can be evaluated, " = number"; the number into *out (-1: unknown). */
static void formula_line(StrBuf *sb, const FEnv *env, const Sum *s, const char *unit, double *out)
{
  sum_print(sb, s);
  double v;
  *out = -1;
  if (sum_eval(env, s, &v)) {
    *out = v;
    bool factors = false;
    for (int i = 0; i < s->n; i++)
      factors |= s->t[i].nf > 0;
    if (factors) {
      sb_puts(sb, " = ");
      print_number(sb, v);
    }
  }
  sb_printf(sb, "%s\n", unit);
}

/* Sum over every block of the grid of a per-block sum that depends on the block index: -1 when
 * it cannot be evaluated or the grid has more than 2^22 blocks. */
static double over_blocks(FEnv *env, const Kernel *k, const Sum *s, const int64_t *grid)
{
  if ((double)grid[0] * (double)grid[1] * (double)grid[2] > (double)(1 << 22))
    return -1;
  int bvar[3] = {-1, -1, -1};
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_BLOCK_IDX && k->vars[i].dim < 3)
      bvar[k->vars[i].dim] = i;
  double total = 0;
  for (int64_t z = 0; z < grid[2]; z++)
    for (int64_t y = 0; y < grid[1]; y++)
      for (int64_t x = 0; x < grid[0]; x++) {
        int64_t at[3] = {x, y, z};
        for (int d = 0; d < 3; d++)
          if (bvar[d] >= 0)
            env->val[bvar[d]] = at[d], env->known[bvar[d]] = true;
        double v;
        if (!sum_eval(env, s, &v))
          return -1;
        total += v;
      }
  for (int d = 0; d < 3; d++)
    if (bvar[d] >= 0)
      env->val[bvar[d]] = 0;
  return total;
}

static const char *swizzle_text(SwizzleKind s)
{
  switch (s) {
  case SWIZZLE_NONE: return "none (row-major)";
  case SWIZZLE_LINES: return "lines (16-byte chunk c of 128-byte line L at c ^ ((L ^ L >> 3) & 7))";
  case SWIZZLE_128B: return "128B (wgmma/TMA layout: chunk c of row r at c ^ (r % 8))";
  case SWIZZLE_64B: return "64B (wgmma/TMA layout, 64-byte rows)";
  case SWIZZLE_32B: return "32B (wgmma/TMA layout, 32-byte rows)";
  }
  return "?";
}

static void report_shared(StrBuf *out, const Kernel *k, const Warp *w)
{
  int n = 0;
  for (int i = 0; i < k->nbufs; i++)
    n += k->bufs[i].scope == SCOPE_SHARED;
  sb_printf(out,
            "\nshared tiles: %d, %" PRId64
            " bytes per block in all (planned, overlapping tiles share bytes)\n",
            n, k->smem_bytes);
  for (int i = 0; i < k->nbufs; i++) {
    const Buffer *b = &k->bufs[i];
    if (b->scope != SCOPE_SHARED)
      continue;
    int64_t bytes = buffer_elems(b) * type_bytes(b->elem);
    sb_printf(out, "  %s: %s[", b->name, type_name(b->elem));
    for (int d = 0; d < b->rank; d++)
      sb_printf(out, "%s%" PRId64, d ? ", " : "", b->tile_shape[d]);
    if (b->unused) { /* plan_shared.c: no statement uses it once constants decided the branches */
      sb_printf(out, "], unused: no bytes\n");
      continue;
    }
    sb_printf(out, "], %" PRId64 " bytes at offset %" PRId64, bytes, b->smem_offset);
    if (b->stages)
      sb_printf(out, ", %d stages of %" PRId64 " bytes", b->stages, bytes / b->stages);
    if (!b->loc.line)
      sb_puts(out, " (made by the lowering)");
    sb_printf(out,
              "\n    row stride %" PRId64 " element(s) (%" PRId64
              " bytes); padding: none beyond the declared shape; swizzle: %s\n",
              b->tile_shape[b->rank - 1], b->tile_shape[b->rank - 1] * type_bytes(b->elem),
              swizzle_text(b->swizzle));
    bool any = false;
    for (int j = 0; j < w->nsites; j++) {
      const Site *s = &w->sites[j];
      if (s->buf != i)
        continue;
      any = true;
      sb_printf(out, "    line %d: %s", s->line, s->what);
      if (s->no_lanes) {
        sb_printf(out,
                  ", %" PRId64
                  " per warp: no per-lane addresses (the hardware's own access pattern; not computed)\n",
                  s->count);
        continue;
      }
      sb_printf(out, ", %d B per lane, %" PRId64 " instruction%s per warp", s->width, s->count,
                s->count == 1 ? "" : "s");
      if (s->unknown == s->count) {
        sb_puts(out, ": addresses not known at compile time\n");
        continue;
      }
      int64_t worst = (int64_t)(s->worst + 0.5);
      sb_printf(out, ": %" PRId64 " wavefront%s for %" PRId64 " ideal, ", s->wavefronts,
                s->wavefronts == 1 ? "" : "s", s->ideal);
      if (worst <= 1)
        sb_puts(out, "conflict-free (degree 1)");
      else
        sb_printf(out, "bank-conflict degree %" PRId64, worst);
      if (s->unknown)
        sb_printf(out, " (%" PRId64 " with unknown addresses not counted)", s->unknown);
      sb_puts(out, "\n");
    }
    if (!any)
      sb_puts(out, "    (no access by the warps walked, on the path analysed)\n");
  }
}

static void report_fragments(StrBuf *out, const Kernel *k)
{
  int n = 0;
  for (int i = 0; i < k->nbufs; i++)
    n += k->bufs[i].scope == SCOPE_FRAGMENT;
  sb_printf(out, "\nfragments: %d\n", n);
  for (int i = 0; i < k->nbufs; i++) {
    const Buffer *b = &k->bufs[i];
    if (b->scope != SCOPE_FRAGMENT || !b->has_layout)
      continue;
    sb_printf(out, "  %s: %s[", b->name, type_name(b->elem));
    for (int d = 0; d < b->rank; d++)
      sb_printf(out, "%s%" PRId64, d ? ", " : "", b->tile_shape[d]);
    sb_printf(out, "], layout: ");
    layout_text(out, &b->layout);
    sb_printf(out, ", %d elements (registers of %d bytes or less) per thread\n", b->layout.regs,
              type_bytes(b->elem) > 4 ? type_bytes(b->elem) : 4);
    frag_map(out, b);
    frag_rule(out, b);
  }
}

void report_kernel(StrBuf *out, Arena *a, const Kernel *tile, const Kernel *thread, const Target *target,
                   const ReportSizes *sizes, ReportNumbers *nums)
{
  const Kernel *k = tile;
  *nums = (ReportNumbers){.threads = (unsigned)thread->nthreads, .smem_bytes = thread->smem_bytes};
  sb_printf(out, "kernel %s (%s)\n", k->name, target->name);

  /* sizes known: --size; num_sms */
  FEnv env = {k, ARENA_ARRAY(a, int64_t, k->nvars + 1), ARENA_ARRAY(a, bool, k->nvars + 1)};
  sb_puts(out, "sizes:");
  int nsize = 0;
  for (int i = 0; i < k->nvars; i++) {
    const Var *v = &k->vars[i];
    if (v->kind == VAR_SIZE) {
      for (int j = 0; j < sizes->n; j++)
        if (!strcmp(sizes->names[j], v->name))
          env.val[i] = sizes->values[j], env.known[i] = true;
      if (env.known[i])
        sb_printf(out, " %s=%" PRId64, v->name, env.val[i]);
      else
        sb_printf(out, " %s (not given)", v->name);
      nsize++;
    }
    if (v->kind == VAR_NUM_SMS && sizes->num_sms >= 0)
      env.val[i] = sizes->num_sms, env.known[i] = true;
    if (v->kind == VAR_NUM_SMS && grid_uses_num_sms(k))
      sb_printf(out, env.known[i] ? " num_sms=%" PRId64 : " num_sms (not given: --size num_sms=N or --gpu)",
                env.val[i]);
  }
  sb_puts(out, nsize ? "\n" : " none\n");

  /* 1. constants, grid, threads */
  sb_puts(out, "constants:");
  int nconst = 0;
  for (int i = 0; i < k->nvars; i++) {
    const Var *v = &k->vars[i];
    if (v->kind != VAR_CONST)
      continue;
    if (v->cval_is_float)
      sb_printf(out, " %s=%g", v->name, v->cval_f);
    else if (v->type == TY_BOOL)
      sb_printf(out, " %s=%s", v->name, v->cval_i ? "true" : "false");
    else
      sb_printf(out, " %s=%" PRId64, v->name, v->cval_i);
    if (v->launch)
      sb_puts(out, "*");
    nconst++;
  }
  sb_puts(out, nconst ? "\n" : " none\n");
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_CONST && k->vars[i].launch) {
      sb_puts(
          out,
          "  (*: a launch constant, evaluated at the sizes above; a size not given reads as 2147483647)\n");
      break;
    }
  Count c = {.a = a, .k = k, .bind = ARENA_ARRAY(a, Expr *, k->nvars + 1), .mult = 1};
  int64_t grid[3] = {1, 1, 1};
  bool grid_known = true;
  sb_puts(out, "grid: (");
  for (int d = 0; d < k->grid_rank; d++) {
    Expr *g = ir_fold(a, k, ex_clone(a, k->grid[d]));
    fm_print(out, k, g);
    sb_puts(out, d + 1 < k->grid_rank ? ", " : "");
    grid_known &= fm_eval(&env, g, &grid[d]);
  }
  sb_puts(out, ")");
  if (grid_known)
    sb_printf(out, " = (%" PRId64 ", %" PRId64 ", %" PRId64 ") = %" PRId64 " blocks", grid[0], grid[1],
              grid[2], grid[0] * grid[1] * grid[2]);
  sb_printf(out, "\nthreads per block: %d (%d warp%s)\n", thread->nthreads, (thread->nthreads + 31) / 32,
            thread->nthreads > 32 ? "s" : "");
  if (thread->producer_threads)
    sb_printf(out, "  of which %d are a producer warpgroup (warp specialization)\n",
              thread->producer_threads);
  /* num_blocks(d) inside the kernel reads the grid's size */
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_GRID_DIM && k->vars[i].dim < k->grid_rank)
      c.bind[i] = ir_fold(a, k, ex_clone(a, k->grid[k->vars[i].dim]));

  /* 4. traffic and FLOPs, per block then per launch */
  count_stmt(&c, k->body, false);
  bool by_block = sum_mentions_block(k, &c.rd) || sum_mentions_block(k, &c.wr) ||
                  sum_mentions_block(k, &c.mma) || sum_mentions_block(k, &c.ops);
  sb_puts(out, "\nper block");
  if (by_block)
    sb_puts(out, " (the counts depend on the block index: numbers for block 0)");
  sb_puts(out, ":\n");
  int bvar[3] = {-1, -1, -1};
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_BLOCK_IDX && k->vars[i].dim < 3) {
      bvar[k->vars[i].dim] = i;
      env.val[i] = 0;
      env.known[i] = true;
    }
  double rd, wr, mma, ops;
  sb_puts(out, "  global bytes read:    ");
  formula_line(out, &env, &c.rd, "", &rd);
  sb_puts(out, "  global bytes written: ");
  formula_line(out, &env, &c.wr, "", &wr);
  sb_puts(out, "  gemm FLOPs:           ");
  formula_line(out, &env, &c.mma, "", &mma);
  sb_puts(out, "  other FLOPs:          ");
  formula_line(out, &env, &c.ops, "", &ops);
  if (rd >= 0 && wr >= 0 && mma >= 0 && ops >= 0 && rd + wr > 0)
    sb_printf(out, "  arithmetic intensity: %.3g FLOP/byte\n", (mma + ops) / (rd + wr));
  sb_printf(out, "  shared memory: %" PRId64 " bytes; threads: %d\n", thread->smem_bytes, thread->nthreads);
  if (c.upper)
    sb_puts(out,
            "  (an if whose condition changes between iterations or with the data is counted on both sides: "
            "an upper bound)\n");
  if (c.overflow)
    sb_puts(out, "  (loops nested too deep: the trip counts of the innermost ones are left out)\n");

  double blocks = grid_known ? (double)grid[0] * (double)grid[1] * (double)grid[2] : -1;
  double total[4] = {-1, -1, -1, -1};
  const Sum *sums[4] = {&c.rd, &c.wr, &c.mma, &c.ops};
  for (int i = 0; i < 4; i++) {
    double v;
    if (!grid_known)
      break;
    if (by_block)
      total[i] = over_blocks(&env, k, sums[i], grid);
    else if (sum_eval(&env, sums[i], &v))
      total[i] = v * blocks;
  }
  (void)bvar;
  sb_puts(out, "per launch");
  sb_puts(out, by_block ? " (the per-block counts summed over every block of the grid):\n"
                        : " (blocks x per block):\n");
  static const char *names[4] = {
      "global bytes read:   ", "global bytes written:", "gemm FLOPs:          ", "other FLOPs:         "};
  for (int i = 0; i < 4; i++) {
    sb_printf(out, "  %s ", names[i]);
    if (!by_block) {
      sb_puts(out, "blocks * (");
      sum_print(out, sums[i]);
      sb_puts(out, ")");
    }
    if (total[i] >= 0) {
      sb_puts(out, by_block ? "" : " = ");
      print_number(out, total[i]);
    } else if (by_block) {
      sb_puts(out, "not known without every size (and num_sms where the grid uses it)");
    }
    sb_puts(out, "\n");
  }
  bool known = grid_known && total[0] >= 0 && total[1] >= 0 && total[2] >= 0 && total[3] >= 0;
  if (known && total[0] + total[1] > 0)
    sb_printf(out, "  arithmetic intensity: %.3g FLOP/byte\n", (total[2] + total[3]) / (total[0] + total[1]));
  sb_puts(
      out,
      "  counted: each copy of a global tile whole and each element load or store of a global tensor once\n"
      "  (masked tails aside: a block at the edge counts its whole tile); gemm 2*M*N*K per call; other FLOPs\n"
      "  one per floating-point +, -, *, /, min, max or math function per element (fma 2), a reduction one\n"
      "  per element combined; both sides of an if inside a parallel loop; [c] is 1 when c holds, else 0\n");
  *nums = (ReportNumbers){
      known, blocks, total[0], total[1], total[2], total[3], (unsigned)thread->nthreads, thread->smem_bytes};

  /* occupancy */
  sb_printf(out,
            "occupancy (per SM, from threads and shared memory only; registers: not known to the compiler, "
            "run ptxas -v on the PTX):\n");
  for (int t = 0; t < ntargets; t++) {
    int max_threads, max_blocks;
    int64_t smem_sm;
    sm_limits(targets[t].sm, &max_threads, &max_blocks, &smem_sm);
    if (t > 0 && targets[t].sm == targets[t - 1].sm)
      continue;
    int by_threads = max_threads / thread->nthreads;
    int64_t by_smem = thread->smem_bytes ? smem_sm / (thread->smem_bytes + 1024) : max_blocks;
    int64_t b = by_threads < max_blocks ? by_threads : max_blocks;
    if (by_smem < b)
      b = by_smem;
    if (thread->smem_bytes > targets[t].shared_per_block) {
      sb_printf(out,
                "  sm_%d: does not fit (%" PRId64 " bytes of shared memory, %" PRId64 " allowed per block)\n",
                targets[t].sm, thread->smem_bytes, targets[t].shared_per_block);
      continue;
    }
    sb_printf(out, "  sm_%d: %" PRId64 " block%s (%" PRId64 " of %d warps) per SM, limited by %s\n",
              targets[t].sm, b, b == 1 ? "" : "s", b * ((thread->nthreads + 31) / 32), max_threads / 32,
              b == by_smem && by_smem < by_threads ? "shared memory"
              : b == by_threads                    ? "threads"
                                                   : "blocks per SM");
  }

  /* 2. shared tiles, from the thread-level kernel */
  Warp w = {.a = a, .k = thread};
  w.val = ARENA_ARRAY(a, int64_t, (size_t)thread->nvars * 32 + 32);
  w.kn = ARENA_ARRAY(a, uint32_t, thread->nvars + 1);
  FEnv tenv = {thread, ARENA_ARRAY(a, int64_t, thread->nvars + 1), ARENA_ARRAY(a, bool, thread->nvars + 1)};
  int64_t tgrid[3] = {1, 1, 1};
  for (int i = 0; i < thread->nvars; i++) {
    const Var *v = &thread->vars[i];
    for (int j = 0; j < sizes->n; j++)
      if (v->kind == VAR_SIZE && !strcmp(sizes->names[j], v->name))
        tenv.val[i] = sizes->values[j], tenv.known[i] = true;
    if (v->kind == VAR_SIZE && !tenv.known[i])
      tenv.val[i] = WALK_SIZE, tenv.known[i] = true;
    if (v->kind == VAR_NUM_SMS)
      tenv.val[i] = sizes->num_sms >= 0 ? sizes->num_sms : 1, tenv.known[i] = true;
  }
  for (int d = 0; d < thread->grid_rank; d++)
    if (!fm_eval(&tenv, thread->grid[d], &tgrid[d]))
      tgrid[d] = 1;
  walk_init(&w, &tenv, tgrid, 0);
  walk(&w, thread->body, 0xFFFFFFFFu);
  if (thread->producer_threads) { /* warp specialization: the producer's first warp too */
    w.steps = 0;
    walk_init(&w, &tenv, tgrid, thread->nthreads - thread->producer_threads);
    walk(&w, thread->body, 0xFFFFFFFFu);
  }
  report_shared(out, thread, &w);
  sb_puts(out, thread->producer_threads
                   ? "  bank conflicts: warp 0 of block 0, and the producer role's first warp, run\n"
                   : "  bank conflicts: warp 0 of block 0 run\n");
  sb_puts(
      out,
      "  as a block inside large aligned tensors (sizes not given read as 2^30; tensor maps passed: the TMA\n"
      "  path where there is one): unrolled loops through,\n"
      "  other loops once (their first iteration).  Per instruction, the wavefronts are the most distinct\n"
      "  4-byte words in one of the 32 banks, per phase of the warp (32 lanes for accesses of 4 bytes or\n"
      "  less, 16 for 8, 8 for 16 and ldmatrix); degree = wavefronts / ideal, the worst instruction's\n");
  if (w.cut)
    sb_puts(out, "  (the walk stopped after too many statements: later accesses are missing)\n");

  /* 3. fragments, from the tile-level kernel */
  report_fragments(out, tile);
}
