/* print.c: the textual tile IR (--emit=tir, --dump-after).  Stable: golden
 * tests match it with FileCheck. */
#include "ir.h"

#include <inttypes.h>

static void print_exprs(StrBuf *sb, const Kernel *k, Expr **v, int n)
{
  for (int i = 0; i < n; i++) {
    if (i)
      sb_puts(sb, ", ");
    ir_print_expr(sb, k, v[i]);
  }
}

void ir_print_expr(StrBuf *sb, const Kernel *k, const Expr *e)
{
  if (!e) {
    sb_puts(sb, "<null>");
    return;
  }
  switch (e->kind) {
  case EX_INT:
    if (e->type == TY_BOOL)
      sb_puts(sb, e->i ? "true" : "false");
    else if (e->type == TY_I32)
      sb_printf(sb, "%" PRId64, e->i);
    else
      sb_printf(sb, "%s(%" PRId64 ")", type_name(e->type), e->i);
    break;
  case EX_FLOAT:
    if (e->type == TY_F32)
      sb_printf(sb, "%.9g", e->f);
    else
      sb_printf(sb, "%s(%.17g)", type_name(e->type), e->f);
    break;
  case EX_VAR: sb_puts(sb, k->vars[e->var].name); break;
  case EX_LOAD:
    sb_printf(sb, "%s[", k->bufs[e->buf].name);
    print_exprs(sb, k, e->args, e->nargs);
    sb_puts(sb, "]");
    break;
  case EX_UNARY:
    sb_printf(sb, "%s", op_spelling((OpKind)e->op));
    ir_print_expr(sb, k, e->a);
    break;
  case EX_BINARY:
    if (e->op == OP_MIN || e->op == OP_MAX || e->op == OP_CEILDIV) {
      sb_printf(sb, "%s(", op_spelling((OpKind)e->op));
      ir_print_expr(sb, k, e->a);
      sb_puts(sb, ", ");
      ir_print_expr(sb, k, e->b);
      sb_puts(sb, ")");
    } else {
      sb_puts(sb, "(");
      ir_print_expr(sb, k, e->a);
      sb_printf(sb, " %s ", op_spelling((OpKind)e->op));
      ir_print_expr(sb, k, e->b);
      sb_puts(sb, ")");
    }
    break;
  case EX_CALL:
    sb_printf(sb, "%s(", intrinsic_name((IntrinsicKind)e->op));
    print_exprs(sb, k, e->args, e->nargs);
    sb_puts(sb, ")");
    break;
  case EX_CAST:
    sb_printf(sb, "%s(", type_name(e->type));
    ir_print_expr(sb, k, e->a);
    sb_puts(sb, ")");
    break;
  case EX_ALIGNED:
    sb_printf(sb, "aligned%" PRId64 "(&%s[", e->i, k->bufs[e->buf].name);
    print_exprs(sb, k, e->args, e->nargs);
    sb_puts(sb, "])");
    break;
  case EX_SELECT:
    sb_puts(sb, "select(");
    ir_print_expr(sb, k, e->a);
    sb_puts(sb, ", ");
    ir_print_expr(sb, k, e->b);
    sb_puts(sb, ", ");
    ir_print_expr(sb, k, e->c);
    sb_puts(sb, ")");
    break;
  }
}

static void indent(StrBuf *sb, int depth)
{
  for (int i = 0; i < depth; i++)
    sb_puts(sb, "  ");
}

static void print_region(StrBuf *sb, const Kernel *k, const Region *r)
{
  sb_puts(sb, k->bufs[r->buf].name);
  if (!r->origin)
    return;
  if (!r->nspan) {
    sb_puts(sb, "[");
    print_exprs(sb, k, r->origin, r->rank);
    sb_puts(sb, "]");
    return;
  }
  /* Slices: the dimensions the tile spans are marked `origin :` */
  sb_puts(sb, "[");
  for (int d = 0; d < r->rank; d++) {
    if (d)
      sb_puts(sb, ", ");
    print_exprs(sb, k, &r->origin[d], 1);
    if (region_tile_dim(r, r->nspan, d) >= 0)
      sb_puts(sb, " :");
  }
  sb_puts(sb, "]");
}

static const char *for_kind_name(ForKind f)
{
  static const char *names[] = {"serial", "parallel", "pipelined", "unrolled"};
  return names[f];
}

static void print_stmt(StrBuf *sb, const Kernel *k, const Stmt *s, int depth);

static void print_block(StrBuf *sb, const Kernel *k, const Stmt *s, int depth)
{
  sb_puts(sb, "{\n");
  if (s && s->kind == ST_SEQ)
    for (int i = 0; i < s->nbody; i++)
      print_stmt(sb, k, s->body[i], depth + 1);
  else if (s)
    print_stmt(sb, k, s, depth + 1);
  indent(sb, depth);
  sb_puts(sb, "}");
}

static void print_stmt(StrBuf *sb, const Kernel *k, const Stmt *s, int depth)
{
  if (s->kind == ST_SEQ) {
    for (int i = 0; i < s->nbody; i++)
      print_stmt(sb, k, s->body[i], depth);
    return;
  }
  indent(sb, depth);
  switch (s->kind) {
  case ST_SEQ: break;
  case ST_LET:
  case ST_ASSIGN:
    sb_printf(sb, "%s%s: %s = ", s->kind == ST_LET ? "let " : "", k->vars[s->var].name,
              type_name(k->vars[s->var].type));
    ir_print_expr(sb, k, s->value);
    break;
  case ST_STORE:
  case ST_ATOMIC:
    if (s->kind == ST_ATOMIC)
      sb_printf(sb, "atomic_%s ", s->reduce == RED_SUM ? "add" : s->reduce == RED_MAX ? "max" : "min");
    sb_printf(sb, "%s[", k->bufs[s->buf].name);
    print_exprs(sb, k, s->idx, s->nidx);
    sb_puts(sb, s->kind == ST_ATOMIC ? (s->reduce == RED_SUM ? "] += " : "] <- ") : "] = ");
    ir_print_expr(sb, k, s->value);
    break;
  case ST_IF:
    sb_puts(sb, s->roles ? "roles if " : "if ");
    ir_print_expr(sb, k, s->cond);
    sb_puts(sb, " ");
    print_block(sb, k, s->then_s, depth);
    if (s->else_s) {
      sb_puts(sb, " else ");
      print_block(sb, k, s->else_s, depth);
    }
    break;
  case ST_FOR:
    sb_puts(sb, "for ");
    for (int i = 0; i < s->nvars; i++)
      sb_printf(sb, "%s%s", i ? ", " : "", k->vars[s->vars[i]].name);
    sb_printf(sb, " in %s(", for_kind_name(s->for_kind));
    print_exprs(sb, k, (Expr **)s->extents, s->nvars);
    if (s->for_kind == FOR_PIPELINED)
      sb_printf(sb, ", stages=%d", s->stages);
    if (s->for_kind == FOR_PIPELINED && s->overlap)
      sb_printf(sb, ", overlap=%d", s->overlap);
    sb_puts(sb, s->rolled ? ") rolled " : ") ");
    print_block(sb, k, s->then_s, depth);
    break;
  case ST_COPY:
    sb_puts(sb, "copy ");
    print_region(sb, k, &s->src);
    sb_puts(sb, " -> ");
    print_region(sb, k, &s->dst);
    break;
  case ST_FILL:
    sb_printf(sb, "fill %s, ", k->bufs[s->buf].name);
    ir_print_expr(sb, k, s->value);
    break;
  case ST_GEMM:
    sb_printf(sb, "gemm %s%s, %s%s -> %s", k->bufs[s->a].name, s->trans_a ? "^T" : "", k->bufs[s->b].name,
              s->trans_b ? "^T" : "", k->bufs[s->c].name);
    break;
  case ST_REDUCE: {
    static const char *names[] = {"sum", "max", "min"};
    sb_printf(sb, "reduce_%s %s -> %s, dim=%d%s", names[s->reduce], k->bufs[s->src_buf].name,
              k->bufs[s->buf].name, s->dim, s->accumulate ? ", accumulate" : "");
    break;
  }
  case ST_VCOPY:
    sb_printf(sb, "vcopy.%d %s[", s->lanes, k->bufs[s->src_buf].name);
    print_exprs(sb, k, s->src_idx, s->nsrc_idx);
    sb_printf(sb, "] -> %s[", k->bufs[s->buf].name);
    print_exprs(sb, k, s->idx, s->nidx);
    sb_puts(sb, "]");
    break;
  case ST_BARRIER:
    sb_puts(sb, stmt_spelling(s->kind));
    if (s->bar_threads)
      sb_printf(sb, " %d, %d", s->bar_id, s->bar_threads);
    break;
  case ST_SETMAXNREG: sb_printf(sb, "setmaxnreg.%s %d", s->inc ? "inc" : "dec", s->nregs); break;
  case ST_CP_COMMIT:
  case ST_WGMMA_COMMIT:
  case ST_FENCE_PROXY_ASYNC: sb_puts(sb, stmt_spelling(s->kind)); break;
  case ST_LDMATRIX:
    sb_printf(sb, "ldmatrix.x%d%s %s[", s->matrices, s->trans ? ".trans" : "", k->bufs[s->src_buf].name);
    print_exprs(sb, k, s->src_idx, s->nsrc_idx);
    sb_printf(sb, "] -> %s[", k->bufs[s->buf].name);
    ir_print_expr(sb, k, s->idx[0]);
    sb_puts(sb, "]");
    break;
  case ST_MMA:
    sb_printf(sb, "mma.m16n8k16.%s %s[", type_name(s->elem), k->bufs[s->c].name);
    ir_print_expr(sb, k, s->c_reg);
    sb_printf(sb, "] += %s[", k->bufs[s->a].name);
    ir_print_expr(sb, k, s->a_reg);
    sb_printf(sb, "] x %s[", k->bufs[s->b].name);
    ir_print_expr(sb, k, s->b_reg);
    sb_puts(sb, "]");
    break;
  case ST_CP_ASYNC:
    sb_printf(sb, "cp.async.%d %s[", cp_async_size(k, s), k->bufs[s->src_buf].name);
    print_exprs(sb, k, s->src_idx, s->nsrc_idx);
    sb_printf(sb, "] -> %s[", k->bufs[s->buf].name);
    print_exprs(sb, k, s->idx, s->nidx);
    sb_puts(sb, "], bytes ");
    ir_print_expr(sb, k, s->src_bytes);
    break;
  case ST_CP_WAIT: sb_printf(sb, "cp.async.wait %d", s->pending); break;
  case ST_WGMMA_FENCE:
    sb_printf(sb, "wgmma.fence %s[%d]", k->bufs[s->c].name, s->acc_regs);
    if (s->a_reg && s->a_first)
      sb_printf(sb, ", %s[%d .. %" PRId64 ")", k->bufs[s->a].name, s->a_first, s->a_first + s->a_reg->i);
    else if (s->a_reg)
      sb_printf(sb, ", %s[%" PRId64 "]", k->bufs[s->a].name, s->a_reg->i);
    break;
  case ST_WGMMA:
    sb_printf(sb, "wgmma.m64n%dk16.%s %s[%d] += %s[", 2 * s->acc_regs, type_name(s->elem), k->bufs[s->c].name,
              s->acc_regs, k->bufs[s->a].name);
    if (s->a_reg)
      ir_print_expr(sb, k, s->a_reg);
    else
      print_exprs(sb, k, s->a_start, s->na_start);
    sb_printf(sb, "]%s%s x %s[", s->a_reg ? " (registers)" : "", s->a_mn_major ? " (M-major)" : "",
              k->bufs[s->b].name);
    print_exprs(sb, k, s->b_start, s->nb_start);
    sb_printf(sb, "]%s", s->b_mn_major ? " (N-major)" : "");
    break;
  case ST_WGMMA_WAIT:
    sb_printf(sb, "wgmma.wait %d %s[%d]", s->pending, k->bufs[s->c].name, s->acc_regs);
    break;
  case ST_MBAR_INIT:
  case ST_MBAR_ARRIVE:
  case ST_MBAR_EXPECT_TX:
  case ST_MBAR_WAIT:
    sb_printf(sb, "%s %s[", stmt_spelling(s->kind), k->bufs[s->bar].name);
    ir_print_expr(sb, k, s->bar_idx);
    sb_puts(sb, "]");
    if (s->value) {
      sb_puts(sb, s->kind == ST_MBAR_INIT ? ", count " : s->kind == ST_MBAR_WAIT ? ", parity " : ", bytes ");
      ir_print_expr(sb, k, s->value);
    }
    break;
  case ST_TMA_LOAD:
    sb_printf(sb, "tma.load map %d %s[", s->tmap, k->bufs[s->src_buf].name);
    print_exprs(sb, k, s->src_idx, s->nsrc_idx);
    sb_printf(sb, "] -> %s[", k->bufs[s->buf].name);
    print_exprs(sb, k, s->idx, s->nidx);
    sb_printf(sb, "], mbarrier %s[", k->bufs[s->bar].name);
    ir_print_expr(sb, k, s->bar_idx);
    sb_puts(sb, "]");
    break;
  case ST_TMA_STORE:
    sb_printf(sb, "tma.store map %d %s[", s->tmap, k->bufs[s->buf].name);
    print_exprs(sb, k, s->idx, s->nidx);
    sb_printf(sb, "] -> %s[", k->bufs[s->src_buf].name);
    print_exprs(sb, k, s->src_idx, s->nsrc_idx);
    sb_puts(sb, "]");
    break;
  case ST_TMA_STORE_WAIT: sb_puts(sb, "tma.store.wait"); break;
  case ST_EVAL: ir_print_expr(sb, k, s->value); break;
  }
  sb_puts(sb, "\n");
}

void ir_print_kernel(StrBuf *sb, const Kernel *k)
{
  sb_printf(sb, "kernel %s grid(", k->name);
  for (int i = 0; i < k->grid_rank; i++) {
    if (i)
      sb_puts(sb, ", ");
    ir_print_expr(sb, k, k->grid[i]);
  }
  sb_puts(sb, ") threads(");
  ir_print_expr(sb, k, k->threads);
  sb_puts(sb, ")");
  if (k->smem_bytes)
    sb_printf(sb, " smem(%" PRId64 ")", k->smem_bytes);
  sb_puts(sb, "\n");
  for (int i = 0; i < k->nparams; i++) {
    const struct KParam *p = &k->params[i];
    if (p->is_buffer) {
      const Buffer *b = &k->bufs[p->index];
      sb_printf(sb, "  param %s: %s[", b->name, type_name(b->elem));
      print_exprs(sb, k, (Expr **)b->shape, b->rank);
      sb_puts(sb, "]");
      if (buffer_strided(b)) {
        sb_puts(sb, " strides(");
        print_exprs(sb, k, (Expr **)b->stride, b->rank);
        sb_puts(sb, ")");
      }
      sb_puts(sb, "\n");
    } else if (p->is_tmap) {
      const struct TensorMap *m = &k->tmaps[p->index];
      sb_printf(sb, "  param tensor map %d of %s, box [", p->index, k->bufs[m->buf].name);
      for (int d = 0; d < k->bufs[m->buf].rank; d++)
        sb_printf(sb, "%s%lld", d ? ", " : "", (long long)m->box[d]);
      sb_puts(sb, "]\n");
    } else {
      const Var *v = &k->vars[p->index];
      sb_printf(sb, "  param %s: %s %s\n", v->name,
                v->kind == VAR_SIZE     ? "size"
                : v->kind == VAR_TMA_OK ? "tensor maps valid"
                                        : "scalar",
                type_name(v->type));
    }
  }
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_CONST) {
      const Var *v = &k->vars[i];
      if (v->cval_is_float)
        sb_printf(sb, "  const %s: %s = %.9g\n", v->name, type_name(v->type), v->cval_f);
      else
        sb_printf(sb, "  const %s: %s = %" PRId64 "\n", v->name, type_name(v->type), v->cval_i);
    }
  for (int i = 0; i < k->nbufs; i++) {
    const Buffer *b = &k->bufs[i];
    if (b->scope == SCOPE_GLOBAL)
      continue;
    sb_printf(sb, "  %s %s: %s[", scope_name(b->scope), b->name, type_name(b->elem));
    if (b->scope == SCOPE_LOCAL)
      sb_printf(sb, "%" PRId64, b->local_size);
    else
      for (int d = 0; d < b->rank; d++)
        sb_printf(sb, "%s%" PRId64, d ? ", " : "", b->tile_shape[d]);
    sb_puts(sb, "]");
    if (b->has_layout && b->layout.kind == LAYOUT_ELEMWISE)
      sb_printf(sb, " layout(vec=%d, chunks=%d, threads=%d)", b->layout.vec, b->layout.chunks,
                b->layout.threads);
    else if (b->has_layout && b->layout.kind == LAYOUT_ROWS) {
      sb_puts(sb, " layout(rows of [");
      for (int d = 0; d < b->layout.parent_rank; d++)
        sb_printf(sb, "%s%" PRId64, d ? ", " : "", b->layout.parent_shape[d]);
      sb_printf(sb, "], vec=%d, chunks=%d, threads=%d)", b->layout.vec, b->layout.chunks, b->layout.threads);
    }
    /* interleaved row pieces (ir.h) differ from the others only with several of them */
    const char *il = b->layout.m_interleaved && b->layout.frag_m > 1 ? ", interleaved"
                     : b->layout.k_quads                             ? ", k in quads"
                                                                     : "";
    if (b->has_layout && b->layout.kind == LAYOUT_MMA)
      sb_printf(sb, " layout(mma, warps=%dx%d, frags=%dx%d%s)", b->layout.warps_m, b->layout.warps_n,
                b->layout.frag_m, b->layout.frag_n, il);
    if (b->has_layout && b->layout.kind == LAYOUT_MMA_ROWS)
      sb_printf(sb, " layout(rows of mma, warps=%dx%d, frags=%dx%d%s)", b->layout.warps_m, b->layout.warps_n,
                b->layout.frag_m, b->layout.frag_n, il);
    if (b->scope == SCOPE_SHARED && b->swizzle == SWIZZLE_LINES)
      sb_puts(sb, " swizzled");
    if (b->scope == SCOPE_SHARED && swizzle_span(b->swizzle))
      sb_printf(sb, " swizzled(%dB)", swizzle_span(b->swizzle));
    if (b->scope == SCOPE_SHARED)
      sb_printf(sb, " @%" PRId64, b->smem_offset);
    sb_puts(sb, "\n");
  }
  print_stmt(sb, k, k->body, 1);
}

void ir_print_module(StrBuf *sb, const Module *m)
{
  for (int i = 0; i < m->nkernels; i++) {
    if (i)
      sb_puts(sb, "\n");
    ir_print_kernel(sb, m->kernels[i]);
  }
}
