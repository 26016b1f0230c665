/* cg_tensor.c: tensor-core and asynchronous-copy instructions as inline PTX
 * (LLVM 19 has intrinsics for some, not all, and the asm keeps the operand
 * order of the PTX ISA in view):
 *
 *   ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16   shared -> registers
 *   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}...f32   the warp's MMA
 *   mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}...s32     (8-bit inputs)
 *   cp.async.cg.shared.global [dst], [src], 16, src_bytes     global -> shared
 *   cp.async.ca.shared.global [dst], [src], {8,4}, src_bytes  (rows aligned to less)
 *   cp.async.commit_group / cp.async.wait_group N
 *   wgmma.fence / mma_async / commit_group / wait_group N   sm_90a warpgroup MMA
 *   fence.proxy.async.shared::cta                           generic -> async proxy
 *   mbarrier.init / arrive / arrive.expect_tx / try_wait.parity   sm_90 barriers
 *   cp.async.bulk.tensor.Nd ... mbarrier::complete_tx::bytes     TMA: global -> shared
 *   cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group        TMA: shared -> global
 *   cp.async.bulk.commit_group / wait_group.read 0               its shared reads done
 *
 * Instructions that touch memory are volatile with a memory clobber, so LLVM
 * keeps them in order with barriers and ordinary loads and stores; mma is pure.
 * wgmma.mma_async writes its accumulator asynchronously: the registers must not
 * be read or moved until the wait_group that covers it.  So the fence, every
 * mma_async and the wait take the accumulator as tied operands ("=f" outputs,
 * "0".."n-1" inputs), volatile: LLVM sees each step produce the next value of
 * the registers, in program order, and no use can move above the wait. */
#include "cg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LLVMValueRef cg_inline_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints,
                           LLVMValueRef *args, int nargs, bool side_effects)
{
  LLVMTypeRef *tys = malloc(sizeof *tys * (size_t)(nargs ? nargs : 1));
  for (int i = 0; i < nargs; i++)
    tys[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(ret, tys, (unsigned)nargs, 0);
  free(tys);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints), side_effects,
                                     0, LLVMInlineAsmDialectATT, 0);
  return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)nargs, "");
}

LLVMValueRef emit_widen_opaque(Cg *cg, LLVMValueRef v, TypeKind from)
{
  const char *text = from == TY_F16
                         ? "cvt.f32.f16 $0, $1;"
                         : "{ .reg .b16 z; mov.b16 z, 0; mov.b32 $0, {z, $1}; }"; /* bf16 bits << 16 */
  return cg_inline_asm(cg, cg->t.f32, text, "=f,h", &v, 1, false);
}

/* The 32-bit shared-window address of an element. */
static LLVMValueRef shared_addr(Cg *cg, int buf, Expr *const *idx, int nidx)
{
  LLVMValueRef p = emit_elem_ptr(cg, buf, idx, nidx);
  return LLVMBuildPtrToInt(cg->b, p, cg->t.i32, "");
}

/* Pointer to register `base + i` of a LOCAL buffer. */
static LLVMValueRef reg_ptr(Cg *cg, int buf, const Expr *base, int i)
{
  LLVMValueRef off = LLVMBuildAdd(cg->b, emit_index(cg, base, cg->t.i32),
                                  LLVMConstInt(cg->t.i32, (unsigned)i, 0), "");
  return LLVMBuildInBoundsGEP2(cg->b, cg_mem_type(cg, cg->k->bufs[buf].elem), cg->bases[buf], &off, 1, "");
}

void emit_ldmatrix(Cg *cg, const Stmt *s)
{
  int n = s->matrices;
  char text[160], cons[64];
  static const char *const regs[] = {"{$0}", "{$0, $1}", "", "{$0, $1, $2, $3}"};
  snprintf(text, sizeof text, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 %s, [$%d];", n,
           s->trans ? ".trans" : "", regs[n - 1], n);
  snprintf(cons, sizeof cons, "%s,r,~{memory}", n == 1 ? "=r" : n == 2 ? "=r,=r" : "=r,=r,=r,=r");
  LLVMValueRef addr = shared_addr(cg, s->src_buf, s->src_idx, s->nsrc_idx);
  LLVMTypeRef i32s[4] = {cg->t.i32, cg->t.i32, cg->t.i32, cg->t.i32};
  LLVMTypeRef ret = n == 1 ? cg->t.i32 : LLVMStructTypeInContext(cg->ctx, i32s, (unsigned)n, 0);
  LLVMValueRef r = cg_inline_asm(cg, ret, text, cons, &addr, 1, true);
  for (int i = 0; i < n; i++) {
    LLVMValueRef v = n == 1 ? r : LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
    LLVMBuildStore(cg->b, v, reg_ptr(cg, s->buf, s->idx[0], i));
  }
}

/* An operand's 32-bit register i from buffer buf at register reg: a u32 register, or (A or B
 * in a 16-bit buffer: a register A fragment, gemm.c's B quads) its registers reg + 2i and
 * reg + 2i + 1 packed, the first in the low half. */
static LLVMValueRef operand(Cg *cg, int buf, Expr *reg, int i)
{
  const Buffer *A = &cg->k->bufs[buf];
  if (A->elem == TY_U32)
    return LLVMBuildLoad2(cg->b, cg->t.i32, reg_ptr(cg, buf, reg, i), "");
  LLVMTypeRef h = cg_mem_type(cg, A->elem), pair = LLVMVectorType(h, 2);
  LLVMValueRef v = LLVMGetUndef(pair);
  for (int e = 0; e < 2; e++)
    v = LLVMBuildInsertElement(cg->b, v, LLVMBuildLoad2(cg->b, h, reg_ptr(cg, buf, reg, 2 * i + e), ""),
                               LLVMConstInt(cg->t.i32, (unsigned)e, 0), "");
  return LLVMBuildBitCast(cg->b, v, cg->t.i32, "");
}

static LLVMValueRef a_operand(Cg *cg, const Stmt *s, int i) { return operand(cg, s->a, s->a_reg, i); }

/* The PTX name of a tensor-core input type. */
static const char *mma_type(TypeKind t)
{
  return t == TY_BF16     ? "bf16"
         : t == TY_I8     ? "s8"
         : t == TY_U8     ? "u8"
         : type_is_fp8(t) ? type_name(t)
                          : "f16";
}

/* m16n8k16 for 16-bit inputs into f32; m16n8k32 for 8-bit ones into s32 (same
 * registers: 4 of A, 2 of B, 4 of C). */
void emit_mma(Cg *cg, const Stmt *s)
{
  char text[200];
  const char *t = mma_type(s->elem);
  bool int8 = type_is_int8(s->elem);
  snprintf(text, sizeof text,
           "mma.sync.aligned.m16n8k%d.row.col.%s.%s.%s.%s {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, "
           "{$10, $11, $12, $13};",
           int8 ? 32 : 16, int8 ? "s32" : "f32", t, t, int8 ? "s32" : "f32");
  LLVMTypeRef acc = int8 ? cg->t.i32 : cg->t.f32;
  LLVMValueRef args[10];
  for (int i = 0; i < 4; i++)
    args[i] = a_operand(cg, s, i);
  for (int i = 0; i < 2; i++)
    args[4 + i] = operand(cg, s->b, s->b_reg, i);
  for (int i = 0; i < 4; i++)
    args[6 + i] = LLVMBuildLoad2(cg->b, acc, reg_ptr(cg, s->c, s->c_reg, i), "");
  LLVMTypeRef accs[4] = {acc, acc, acc, acc};
  LLVMTypeRef ret = LLVMStructTypeInContext(cg->ctx, accs, 4, 0);
  LLVMValueRef r = cg_inline_asm(cg, ret, text,
                                 int8 ? "=r,=r,=r,=r,r,r,r,r,r,r,0,1,2,3" : "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3",
                                 args, 10, false);
  for (int i = 0; i < 4; i++)
    LLVMBuildStore(cg->b, LLVMBuildExtractValue(cg->b, r, (unsigned)i, ""), reg_ptr(cg, s->c, s->c_reg, i));
}

void emit_cp_async(Cg *cg, const Stmt *s)
{
  LLVMValueRef args[3];
  args[0] = shared_addr(cg, s->buf, s->idx, s->nidx);
  LLVMValueRef src = emit_elem_ptr(cg, s->src_buf, s->src_idx, s->nsrc_idx);
  args[1] = LLVMBuildPtrToInt(cg->b, src, cg->t.i64, "");
  args[2] = emit_index(cg, s->src_bytes, cg->t.i32);
  int size = cp_async_size(cg->k, s);
  /* 16 bytes bypass L1 (.cg); the smaller sizes exist only as .ca */
  const char *text = size == 16  ? "cp.async.cg.shared.global [$0], [$1], 16, $2;"
                     : size == 8 ? "cp.async.ca.shared.global [$0], [$1], 8, $2;"
                                 : "cp.async.ca.shared.global [$0], [$1], 4, $2;";
  cg_inline_asm(cg, cg->t.void_t, text, "r,l,r,~{memory}", args, 3, true);
}

void emit_cp_commit(Cg *cg)
{
  cg_inline_asm(cg, cg->t.void_t, "cp.async.commit_group;", "~{memory}", NULL, 0, true);
}

void emit_cp_wait(Cg *cg, int n)
{
  char text[48];
  snprintf(text, sizeof text, "cp.async.wait_group %d;", n);
  cg_inline_asm(cg, cg->t.void_t, text, "~{memory}", NULL, 0, true);
}

/* ---------------------------------------------------------------- wgmma (sm_90a) */

/* The descriptor of the operand tile that starts at buf[idx]: its 32-bit shared
 * address, at run time, in the low bits of the layout's constant ones. */
static LLVMValueRef wgmma_desc(Cg *cg, int buf, Expr *const *idx, int nidx, bool mn_major)
{
  uint32_t lbo, sbo;
  smem_wgmma_strides(&cg->k->bufs[buf], mn_major, &lbo, &sbo);
  LLVMValueRef addr = shared_addr(cg, buf, idx, nidx);
  addr = LLVMBuildLShr(cg->b, LLVMBuildAnd(cg->b, addr, LLVMConstInt(cg->t.i32, 0x3FFFF, 0), ""),
                       LLVMConstInt(cg->t.i32, 4, 0), "");
  LLVMValueRef bits = LLVMConstInt(cg->t.i64,
                                   smem_wgmma_desc(0, lbo, sbo, swizzle_span(cg->k->bufs[buf].swizzle)), 0);
  return LLVMBuildOr(cg->b, LLVMBuildZExt(cg->b, addr, cg->t.i64, ""), bits, "");
}

/* An asm statement over the accumulator registers acc[0 .. n): "=f" x n ("=r"
 * for an i32 accumulator), then
 * "=r" x ntied for the i32 values tied[] (read and replaced by the asm's
 * results), then the extra inputs, then the registers and values tied to the
 * outputs; the accumulator's results are stored back.  The text names the
 * registers $0 .. $n-1, the tied values $n ..., and the extras after them. */
static void asm_on_acc(Cg *cg, const char *text, int acc, const Expr *first, int n, LLVMValueRef *tied,
                       int ntied, LLVMValueRef *extra, const char *extra_cons, int nextra)
{
  const int nout = n + ntied;
  const bool int_acc = cg->k->bufs[acc].elem == TY_I32; /* 8-bit inputs' s32 accumulator */
  LLVMTypeRef acc_t = int_acc ? cg->t.i32 : cg->t.f32;
  const char *acc_c = int_acc ? "=r" : "=f";
  StrBuf cons = {0};
  for (int i = 0; i < nout; i++)
    sb_printf(&cons, "%s%s", i ? "," : "", i < n ? acc_c : "=r");
  if (nextra)
    sb_printf(&cons, ",%s", extra_cons);
  for (int i = 0; i < nout; i++)
    sb_printf(&cons, ",%d", i);
  sb_puts(&cons, ",~{memory}");
  LLVMValueRef *args = malloc(sizeof *args * (size_t)(nextra + nout));
  LLVMTypeRef *types = malloc(sizeof *types * (size_t)nout);
  for (int i = 0; i < nextra; i++)
    args[i] = extra[i];
  Expr zero = {.kind = EX_INT, .type = TY_I32};
  for (int i = 0; i < nout; i++) {
    args[nextra + i] = i < n ? LLVMBuildLoad2(cg->b, acc_t, reg_ptr(cg, acc, first ? first : &zero, i), "")
                             : tied[i - n];
    types[i] = i < n ? acc_t : cg->t.i32;
  }
  LLVMTypeRef ret = LLVMStructTypeInContext(cg->ctx, types, (unsigned)nout, 0);
  LLVMValueRef r = cg_inline_asm(cg, ret, text, cons.data, args, nextra + nout, true);
  for (int i = 0; i < n; i++)
    LLVMBuildStore(cg->b, LLVMBuildExtractValue(cg->b, r, (unsigned)i, ""),
                   reg_ptr(cg, acc, first ? first : &zero, i));
  for (int i = 0; i < ntied; i++)
    tied[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)(n + i), "");
  free(types);
  free(args);
  free(cons.data);
}

/* wgmma.fence ties the accumulator's registers through it; with .a_reg (A in
 * registers) also A's registers, packed in pairs as wgmma reads them: the
 * packing then happens before the fence, and ptxas need not insert fences of
 * its own before the wgmmas (its "warpgroup.arrive is injected" advice).  The
 * pairs are stored back as halves, which the wgmmas' packing folds away.  (A
 * fence before one K step of an interleaved fill packs that step's registers,
 * .a_first on: gemm.c, lw_interleave_register_a.) */
void emit_wgmma_fence(Cg *cg, const Stmt *s)
{
  int na = s->a_reg ? (int)(s->a_reg->i / 2) : 0;
  LLVMValueRef *pairs = na ? malloc(sizeof *pairs * (size_t)na) : NULL;
  Expr first = {.kind = EX_INT, .type = TY_I32, .i = s->a_first};
  Stmt pack = {.a = s->a, .a_reg = &first};
  for (int i = 0; i < na; i++)
    pairs[i] = a_operand(cg, &pack, i);
  asm_on_acc(cg, "wgmma.fence.sync.aligned;", s->c, NULL, s->acc_regs, pairs, na, NULL, NULL, 0);
  if (na) {
    LLVMTypeRef pair = LLVMVectorType(cg_mem_type(cg, cg->k->bufs[s->a].elem), 2);
    for (int i = 0; i < na; i++) {
      LLVMValueRef v = LLVMBuildBitCast(cg->b, pairs[i], pair, "");
      for (int e = 0; e < 2; e++)
        LLVMBuildStore(cg->b, LLVMBuildExtractElement(cg->b, v, LLVMConstInt(cg->t.i32, (unsigned)e, 0), ""),
                       reg_ptr(cg, s->a, &first, 2 * i + e));
    }
  }
  free(pairs);
}

/* One wgmma.mma_async over the accumulator registers $0 .. $n-1 (n = .acc_regs),
 * its operands (A's registers or descriptor, then B's descriptor) from $op on. */
static void wgmma_text(StrBuf *text, const Stmt *s, const Cg *cg, int op)
{
  int n = s->acc_regs;
  const char *t = mma_type(s->elem), *tb = mma_type(cg->k->bufs[s->b].elem); /* e4m3 x e5m2 mix */
  bool int8 = type_is_int8(s->elem), fp8 = type_is_fp8(s->elem);
  /* scale-d = p = 1: D = A x B + D (the accumulator was cleared by the program). */
  sb_printf(text, "wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s {", 2 * n, int8 || fp8 ? 32 : 16,
            int8 ? "s32" : "f32", t, tb);
  for (int i = 0; i < n; i++)
    sb_printf(text, "%s$%d", i ? ", " : "", i);
  if (s->a_reg) /* A in registers: {a0, a1, a2, a3}, no transpose-A immediate */
    sb_printf(text, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, %d;\n", op, op + 1, op + 2, op + 3, op + 4,
              s->b_mn_major ? 1 : 0);
  /* the immediates after scale-d: 16-bit inputs scale-a, scale-b, transpose-a, transpose-b;
     8-bit floats the scales only; integers none (both operands K-major) */
  else if (int8)
    sb_printf(text, "}, $%d, $%d, p;\n", op, op + 1);
  else if (fp8)
    sb_printf(text, "}, $%d, $%d, p, 1, 1;\n", op, op + 1);
  else
    sb_printf(text, "}, $%d, $%d, p, 1, 1, %d, %d;\n", op, op + 1, s->a_mn_major ? 1 : 0,
              s->b_mn_major ? 1 : 0);
}

static const char wgmma_head[] = "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n";

/* Registers c_reg .. c_reg + acc_regs - 1 of the accumulator (c_reg: its m64 row block). */
void emit_wgmma(Cg *cg, const Stmt *s)
{
  int n = s->acc_regs;
  StrBuf text = {0};
  sb_puts(&text, wgmma_head);
  wgmma_text(&text, s, cg, n);
  sb_puts(&text, "}");
  if (s->a_reg) {
    LLVMValueRef ops[5];
    for (int i = 0; i < 4; i++)
      ops[i] = a_operand(cg, s, i);
    ops[4] = wgmma_desc(cg, s->b, s->b_start, s->nb_start, s->b_mn_major);
    asm_on_acc(cg, text.data, s->c, s->c_reg, n, NULL, 0, ops, "r,r,r,r,l", 5);
  } else {
    LLVMValueRef desc[2] = {wgmma_desc(cg, s->a, s->a_start, s->na_start, s->a_mn_major),
                            wgmma_desc(cg, s->b, s->b_start, s->nb_start, s->b_mn_major)};
    asm_on_acc(cg, text.data, s->c, s->c_reg, n, NULL, 0, desc, "l,l", 2);
  }
  free(text.data);
}

/* ---- wgmma statements in groups
 *
 * Each asm statement on an accumulator loads and stores every one of its
 * registers (128 at m64n256), and LLVM's passes spent much of a GEMM's
 * compile time on those copies: a K step was a fence, BK / 16 wgmmas, a
 * commit and a wait, each an asm of its own.  emit_seq hands consecutive
 * statements on the same registers to a WgGroup, which emits them as one asm
 * statement, their instructions in order (the PTX is the same instructions):
 * wgmma.fence, wgmma with A in shared memory (or an unrolled loop of one, whose
 * iterations use the same registers), wgmma.commit once the group has begun,
 * and wgmma.wait. */

/* Registers [*first, *first + *n) of buffer *acc that s works on; false if s
 * cannot join a group. */
static bool group_regs(Cg *cg, const Stmt *s, int *acc, int64_t *first, int *n)
{
  Expr zero = {.kind = EX_INT, .type = TY_I32};
  *acc = s->c;
  *n = s->acc_regs;
  *first = 0;
  switch (s->kind) {
  case ST_WGMMA_FENCE: return !s->a_reg;
  case ST_WGMMA_WAIT: return true;
  case ST_WGMMA: {
    if (s->a_reg)
      return false;
    LLVMValueRef f = emit_index(cg, s->c_reg ? s->c_reg : &zero, cg->t.i32);
    if (!LLVMIsAConstantInt(f))
      return false;
    *first = LLVMConstIntGetSExtValue(f);
    return true;
  }
  default: return false;
  }
}

static void group_wgmma(Cg *cg, WgGroup *g, const Stmt *s)
{
  g->wgmmas++;
  g->ops = realloc(g->ops, sizeof *g->ops * (size_t)(g->nops + 2));
  if (!g->ops)
    DIE("out of memory");
  g->ops[g->nops] = wgmma_desc(cg, s->a, s->a_start, s->na_start, s->a_mn_major);
  g->ops[g->nops + 1] = wgmma_desc(cg, s->b, s->b_start, s->nb_start, s->b_mn_major);
  wgmma_text(&g->text, s, cg, g->n + g->nops);
  sb_printf(&g->cons, "%sl,l", g->nops ? "," : "");
  g->nops += 2;
}

/* Adds s to the group (starting one if it is empty): false if s cannot join it. */
bool wg_group_add(Cg *cg, WgGroup *g, const Stmt *s)
{
  if (s->kind == ST_WGMMA_COMMIT) {
    if (!g->stmts)
      return false;
    sb_puts(&g->text, "wgmma.commit_group.sync.aligned;\n");
    g->stmts++;
    return true;
  }
  const Stmt *body = s;
  int64_t trips = 1;
  const int vi = s->kind == ST_FOR ? s->vars[0] : -1;
  if (s->kind == ST_FOR) { /* for v in unrolled(T) { one wgmma } */
    body = s->then_s->kind == ST_SEQ && s->then_s->nbody == 1 ? s->then_s->body[0] : s->then_s;
    if (s->for_kind != FOR_UNROLLED || s->nvars != 1 || body->kind != ST_WGMMA ||
        !ex_is_const_int(s->extents[0], &trips) || trips < 1)
      return false;
  }
  LLVMValueRef saved = vi >= 0 ? cg->vals[vi] : NULL;
  bool ok = true;
  for (int64_t i = 0; ok && i < trips; i++) {
    int acc, n;
    int64_t first;
    if (vi >= 0)
      cg->vals[vi] = cg_const_int(cg, cg->k->vars[vi].type, i);
    ok = group_regs(cg, body, &acc, &first, &n);
    if (ok && !g->stmts && i == 0) {
      g->acc = acc, g->first = first, g->n = n;
    }
    ok = ok && acc == g->acc && first == g->first && n == g->n;
  }
  if (ok) {
    for (int64_t i = 0; i < trips; i++) {
      if (vi >= 0)
        cg->vals[vi] = cg_const_int(cg, cg->k->vars[vi].type, i);
      if (body->kind == ST_WGMMA)
        group_wgmma(cg, g, body);
      else if (body->kind == ST_WGMMA_FENCE)
        sb_puts(&g->text, "wgmma.fence.sync.aligned;\n");
      else
        sb_printf(&g->text, "wgmma.wait_group.sync.aligned %d;\n", body->pending);
    }
    g->stmts++;
  }
  if (vi >= 0)
    cg->vals[vi] = saved;
  return ok;
}

/* Emits the group's statements as one asm statement and empties it. */
void wg_group_flush(Cg *cg, WgGroup *g)
{
  if (g->stmts) {
    StrBuf all = {0};
    if (g->wgmmas) /* their predicate p */
      sb_puts(&all, wgmma_head);
    sb_puts(&all, g->text.data);
    if (g->wgmmas)
      sb_puts(&all, "}");
    else /* one fence or wait alone, as it always was */
      all.data[--all.len] = 0;
    Expr first = {.kind = EX_INT, .type = TY_I32, .i = g->first};
    asm_on_acc(cg, all.data, g->acc, &first, g->n, NULL, 0, g->ops, g->cons.data, g->nops);
    free(all.data);
  }
  free(g->text.data);
  free(g->cons.data);
  free(g->ops);
  *g = (WgGroup){0};
}

void emit_wgmma_commit(Cg *cg)
{
  cg_inline_asm(cg, cg->t.void_t, "wgmma.commit_group.sync.aligned;", "~{memory}", NULL, 0, true);
}

void emit_wgmma_wait(Cg *cg, const Stmt *s)
{
  char text[48];
  snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", s->pending);
  asm_on_acc(cg, text, s->c, NULL, s->acc_regs, NULL, 0, NULL, NULL, 0);
}

void emit_fence_proxy_async(Cg *cg)
{
  cg_inline_asm(cg, cg->t.void_t, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0, true);
}

/* bar.sync 0, or the named barrier .bar_id of .bar_threads threads (LLVM's
 * intrinsics: convergent, so no pass moves them across control flow). */
void emit_barrier(Cg *cg, const Stmt *s)
{
  if (!s->bar_threads) {
    cg_call_intrinsic(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    return;
  }
  LLVMValueRef args[2] = {LLVMConstInt(cg->t.i32, (unsigned)s->bar_id, 0),
                          LLVMConstInt(cg->t.i32, (unsigned)s->bar_threads, 0)};
  cg_call_intrinsic(cg, "llvm.nvvm.barrier.sync.cnt", NULL, 0, args, 2);
}

/* setmaxnreg.{inc,dec}.sync.aligned.u32 N (sm_90a): every warp of the warpgroup runs it. */
void emit_setmaxnreg(Cg *cg, const Stmt *s)
{
  char text[64];
  snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %d;", s->inc ? "inc" : "dec", s->nregs);
  cg_inline_asm(cg, cg->t.void_t, text, "~{memory}", NULL, 0, true);
}

/* ---------------------------------------------------------------- mbarrier, TMA (sm_90) */

void emit_mbarrier(Cg *cg, const Stmt *s)
{
  LLVMValueRef args[2];
  args[0] = shared_addr(cg, s->bar, &s->bar_idx, 1);
  if (s->value)
    args[1] = emit_index(cg, s->value, cg->t.i32);
  switch (s->kind) {
  case ST_MBAR_INIT:
    cg_inline_asm(cg, cg->t.void_t,
                  "mbarrier.init.shared::cta.b64 [$0], $1;\n\tfence.mbarrier_init.release.cluster;",
                  "r,r,~{memory}", args, 2, true);
    return;
  case ST_MBAR_ARRIVE:
    cg_inline_asm(cg, cg->t.void_t, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", args, 1, true);
    return;
  case ST_MBAR_EXPECT_TX:
    cg_inline_asm(cg, cg->t.void_t, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}",
                  args, 2, true);
    return;
  case ST_MBAR_WAIT: /* labels inside { } are local to the block */
    cg_inline_asm(cg, cg->t.void_t,
                  "{\n\t.reg .pred p;\n\tWAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n\t"
                  "@!p bra WAIT;\n\t}",
                  "r,r,~{memory}", args, 2, true);
    return;
  default: DIE("%s is not an mbarrier statement", stmt_spelling(s->kind));
  }
}

/* A TMA statement's tensor coordinates, innermost first, as operands $first.. */
static void tma_coords(Cg *cg, const Stmt *s, LLVMValueRef *args, int first, StrBuf *text, StrBuf *cons)
{
  int R = s->nsrc_idx;
  for (int d = 0; d < R; d++) {
    args[first + d] = emit_index(cg, s->src_idx[R - 1 - d], cg->t.i32);
    sb_printf(text, "%s$%d", d ? ", " : "", first + d);
    sb_puts(cons, ",r");
  }
}

void emit_tma_load(Cg *cg, const Stmt *s)
{
  int R = s->nsrc_idx;
  LLVMValueRef args[3 + TL_MAX_RANK];
  args[0] = shared_addr(cg, s->buf, s->idx, s->nidx);
  args[1] = LLVMBuildPtrToInt(cg->b, cg->tmaps[s->tmap], cg->t.i64, ""); /* cvta.param */
  args[2] = shared_addr(cg, s->bar, &s->bar_idx, 1);
  StrBuf text = {0}, cons = {0};
  sb_printf(&text,
            "cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {", R);
  sb_puts(&cons, "r,l,r");
  tma_coords(cg, s, args, 3, &text, &cons);
  sb_puts(&text, "}], [$2];");
  sb_puts(&cons, ",~{memory}");
  cg_inline_asm(cg, cg->t.void_t, text.data, cons.data, args, 3 + R, true);
  free(text.data);
  free(cons.data);
}

void emit_tma_store(Cg *cg, const Stmt *s)
{
  int R = s->nsrc_idx;
  LLVMValueRef args[2 + TL_MAX_RANK];
  args[0] = LLVMBuildPtrToInt(cg->b, cg->tmaps[s->tmap], cg->t.i64, ""); /* cvta.param */
  args[1] = shared_addr(cg, s->buf, s->idx, s->nidx);
  StrBuf text = {0}, cons = {0};
  sb_printf(&text, "cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group [$0, {", R);
  sb_puts(&cons, "l,r");
  tma_coords(cg, s, args, 2, &text, &cons);
  sb_puts(&text, "}], [$1];");
  sb_puts(&cons, ",~{memory}");
  cg_inline_asm(cg, cg->t.void_t, text.data, cons.data, args, 2 + R, true);
  free(text.data);
  free(cons.data);
}

void emit_tma_store_wait(Cg *cg)
{
  cg_inline_asm(cg, cg->t.void_t, "cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;",
                "~{memory}", NULL, 0, true);
}
