/* cg_tensor.c: tensor-core and asynchronous-copy instructions as inline PTX
 * (LLVM 19 has intrinsics for some, not all, and the asm keeps the operand
 * order of the PTX ISA in view):
 *
 *   ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16   shared -> registers
 *   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}...f32   the warp's MMA
 *   cp.async.cg.shared.global [dst], [src], 16, src_bytes     global -> shared
 *   cp.async.commit_group / cp.async.wait_group N
 *
 * Instructions that touch memory are volatile with a memory clobber, so LLVM
 * keeps them in order with barriers and ordinary loads and stores; mma is pure. */
#include "cg.h"

#include <stdio.h>
#include <string.h>

static LLVMValueRef inline_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints,
			       LLVMValueRef *args, int nargs, bool side_effects)
{
	LLVMTypeRef tys[16];
	for (int i = 0; i < nargs; i++)
		tys[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(ret, tys, (unsigned)nargs, 0);
	LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints), side_effects, 0,
					   LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)nargs, "");
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
	LLVMValueRef off = LLVMBuildAdd(cg->b, emit_index(cg, base, cg->t.i32), LLVMConstInt(cg->t.i32, (unsigned)i, 0), "");
	return LLVMBuildInBoundsGEP2(cg->b, cg_mem_type(cg, cg->k->bufs[buf].elem), cg->bases[buf], &off, 1, "");
}

void emit_ldmatrix(Cg *cg, const Stmt *s)
{
	int n = s->lanes;
	char text[160], cons[64];
	static const char *const regs[] = {"{$0}", "{$0, $1}", "", "{$0, $1, $2, $3}"};
	snprintf(text, sizeof text, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 %s, [$%d];", n,
		 s->trans_a ? ".trans" : "", regs[n - 1], n);
	snprintf(cons, sizeof cons, "%s,r,~{memory}", n == 1 ? "=r" : n == 2 ? "=r,=r" : "=r,=r,=r,=r");
	LLVMValueRef addr = shared_addr(cg, s->src_buf, s->src_idx, s->nsrc_idx);
	LLVMTypeRef i32s[4] = {cg->t.i32, cg->t.i32, cg->t.i32, cg->t.i32};
	LLVMTypeRef ret = n == 1 ? cg->t.i32 : LLVMStructTypeInContext(cg->ctx, i32s, (unsigned)n, 0);
	LLVMValueRef r = inline_asm(cg, ret, text, cons, &addr, 1, true);
	for (int i = 0; i < n; i++) {
		LLVMValueRef v = n == 1 ? r : LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
		LLVMBuildStore(cg->b, v, reg_ptr(cg, s->buf, s->idx[0], i));
	}
}

void emit_mma(Cg *cg, const Stmt *s)
{
	char text[200];
	const char *t = s->elem == TY_BF16 ? "bf16" : "f16";
	snprintf(text, sizeof text,
		 "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, "
		 "{$10, $11, $12, $13};", t, t);
	LLVMValueRef args[10];
	for (int i = 0; i < 4; i++)
		args[i] = LLVMBuildLoad2(cg->b, cg->t.i32, reg_ptr(cg, s->a, s->idx[0], i), "");
	for (int i = 0; i < 2; i++)
		args[4 + i] = LLVMBuildLoad2(cg->b, cg->t.i32, reg_ptr(cg, s->b, s->idx[1], i), "");
	for (int i = 0; i < 4; i++)
		args[6 + i] = LLVMBuildLoad2(cg->b, cg->t.f32, reg_ptr(cg, s->c, s->idx[2], i), "");
	LLVMTypeRef f32s[4] = {cg->t.f32, cg->t.f32, cg->t.f32, cg->t.f32};
	LLVMTypeRef ret = LLVMStructTypeInContext(cg->ctx, f32s, 4, 0);
	LLVMValueRef r = inline_asm(cg, ret, text, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", args, 10, false);
	for (int i = 0; i < 4; i++)
		LLVMBuildStore(cg->b, LLVMBuildExtractValue(cg->b, r, (unsigned)i, ""), reg_ptr(cg, s->c, s->idx[2], i));
}

void emit_cp_async(Cg *cg, const Stmt *s)
{
	LLVMValueRef args[3];
	args[0] = shared_addr(cg, s->buf, s->idx, s->nidx);
	LLVMValueRef src = emit_elem_ptr(cg, s->src_buf, s->src_idx, s->nsrc_idx);
	args[1] = LLVMBuildPtrToInt(cg->b, src, cg->t.i64, "");
	args[2] = emit_index(cg, s->value, cg->t.i32);
	inline_asm(cg, cg->t.void_t, "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r,~{memory}", args, 3, true);
}

void emit_cp_commit(Cg *cg)
{
	inline_asm(cg, cg->t.void_t, "cp.async.commit_group;", "~{memory}", NULL, 0, true);
}

void emit_cp_wait(Cg *cg, int n)
{
	char text[48];
	snprintf(text, sizeof text, "cp.async.wait_group %d;", n);
	inline_asm(cg, cg->t.void_t, text, "~{memory}", NULL, 0, true);
}
