/* cg.h: codegen's internal header, in sections by source file.
 *
 * One Cg per kernel being translated.  Values live in two per-kernel tables
 * indexed by the IR's handles:
 *
 *   vals[var]  SIZE/SCALAR: the parameter (bool already i1); LET/LOOP: the SSA
 *              value bound in scope (NULL when unbound); MUT: its entry alloca
 *   bases[buf] GLOBAL: the parameter cast to addrspace(1); SHARED: the buffer's
 *              first byte in the kernel's addrspace(3) array; LOCAL: its alloca
 *
 * Registers hold bool as i1, memory as i8 (cg_reg_type / cg_mem_type).  f16 and
 * bf16 arithmetic is done in f32 (cg_widen / cg_narrow), which sm_80 supports
 * everywhere and which rounds once, like the hardware's own f16 paths.
 */
#ifndef TILEC_CG_H
#define TILEC_CG_H

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>

#include "codegen.h"

typedef struct {
  LLVMTypeRef void_t, i1, i8, i16, i32, i64, f16, bf16, f32, f64;
  LLVMTypeRef ptr;        /* generic */
  LLVMTypeRef ptr_global; /* addrspace(1) */
  LLVMTypeRef ptr_shared; /* addrspace(3) */
} CgTypes;

typedef struct {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  CgTypes t;
  const Kernel *k;
  LLVMValueRef fn;
  LLVMValueRef *vals;  /* k->nvars entries */
  LLVMValueRef *bases; /* k->nbufs entries */
  LLVMValueRef *tmaps; /* k->ntmaps entries: each map's parameter (a generic pointer to it) */
  LLVMFastMathFlags fmf;
  /* -lineinfo: the DIBuilder, the kernel's DISubprogram and the statement's DILocation (NULL: off) */
  LLVMDIBuilderRef di;
  LLVMMetadataRef di_scope, di_loc;
} Cg;

#define ADDRSPACE_GLOBAL 1
#define ADDRSPACE_SHARED 3

/* Shared memory above this is dynamic: cuLaunchKernel must be told its size. */
#define CG_STATIC_SMEM_MAX (48 * 1024)
#define CG_SMEM_ALIGN 128        /* plan_shared aligns offsets to 128 for swizzled layouts */
#define CG_SMEM_ALIGN_WGMMA 1024 /* ... and to 1024 for wgmma's 128-byte swizzle atoms */

/* ---------------------------------------------------------------- cg_tensor.c */

void emit_ldmatrix(Cg *cg, const Stmt *s);
void emit_mma(Cg *cg, const Stmt *s);
void emit_cp_async(Cg *cg, const Stmt *s);
void emit_cp_commit(Cg *cg);
void emit_cp_wait(Cg *cg, int n);
void emit_wgmma_fence(Cg *cg, const Stmt *s);
void emit_wgmma(Cg *cg, const Stmt *s);
/* Consecutive wgmma statements on the same accumulator registers, emitted as one asm (cg_tensor.c) */
typedef struct {
  int stmts, wgmmas; /* statements added; wgmma instructions among them */
  int acc, n;        /* registers first .. first + n - 1 of buffer acc */
  int64_t first;
  StrBuf text, cons; /* the instructions; the operands' constraints */
  LLVMValueRef *ops; /* nops operands (descriptors) */
  int nops;
} WgGroup;
bool wg_group_add(Cg *cg, WgGroup *g, const Stmt *s); /* false: s cannot join the group */
void wg_group_flush(Cg *cg, WgGroup *g);
void emit_wgmma_commit(Cg *cg);
/* An inline PTX asm statement returning ret (void: none), its operands args by constraint ($0 ...). */
LLVMValueRef cg_inline_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints,
                           LLVMValueRef *args, int nargs, bool side_effects);
/* f16 or bf16 -> f32 through an asm statement, which LLVM does not merge
 * with an ordinary conversion of the same value (EX_CAST with .opaque). */
LLVMValueRef emit_widen_opaque(Cg *cg, LLVMValueRef v, TypeKind from);
/* Marks a call of pure inline asm memory(none) and nounwind, so that LLVM may CSE, hoist and
 * delete it like any arithmetic (cg_math.c's tanh, codegen.c's bf16 narrowing). */
void cg_mark_pure(LLVMContextRef ctx, LLVMValueRef call);
void emit_wgmma_wait(Cg *cg, const Stmt *s);
void emit_fence_proxy_async(Cg *cg);
void emit_barrier(Cg *cg, const Stmt *s);
void emit_setmaxnreg(Cg *cg, const Stmt *s);
void emit_mbarrier(Cg *cg, const Stmt *s); /* MBAR_INIT, MBAR_ARRIVE, MBAR_EXPECT_TX, MBAR_WAIT */
void emit_tma_load(Cg *cg, const Stmt *s);
void emit_tma_store(Cg *cg, const Stmt *s);
void emit_tma_store_wait(Cg *cg);

/* ---------------------------------------------------------------- cg_types.c */

void cg_types_init(CgTypes *t, LLVMContextRef ctx);
LLVMTypeRef cg_reg_type(const Cg *cg, TypeKind t);
LLVMTypeRef cg_mem_type(const Cg *cg, TypeKind t);
LLVMTypeRef cg_with_lanes(LLVMTypeRef t, int lanes); /* lanes == 1: t itself */
bool cg_is_half(TypeKind t);                         /* f16 or bf16 */
LLVMValueRef cg_const_int(const Cg *cg, TypeKind t, int64_t v);
LLVMValueRef cg_const_float(Cg *cg, TypeKind t, double v);
LLVMValueRef cg_const_f32(const Cg *cg, double v);
/* Converts a scalar or vector value elementwise, as EX_CAST does. */
LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, TypeKind from, TypeKind to);
/* T(byte) + c or T(byte) - c (add picks which) with c an integer constant: the conversion's own
 * subtraction with c joined, or NULL where that does not apply. */
LLVMValueRef cg_fold_byte_offset(Cg *cg, bool add, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_to_mem(Cg *cg, LLVMValueRef v, TypeKind t);   /* bool: i1 -> i8 */
LLVMValueRef cg_from_mem(Cg *cg, LLVMValueRef v, TypeKind t); /* bool: i8 -> i1 */
LLVMValueRef cg_widen(Cg *cg, LLVMValueRef v, TypeKind t);    /* f16/bf16 -> f32 */
LLVMValueRef cg_narrow(Cg *cg, LLVMValueRef v, TypeKind t);   /* f32 -> f16/bf16 */
LLVMValueRef cg_fp(const Cg *cg, LLVMValueRef v);             /* applies cg->fmf */

/* ---------------------------------------------------------------- cg_math.c */

/* Calls an LLVM intrinsic by name; overloaded ones take their types in over. */
LLVMValueRef cg_call_intrinsic(Cg *cg, const char *name, LLVMTypeRef *over, int nover, LLVMValueRef *args,
                               int nargs);
/* args are of type t already. */
LLVMValueRef emit_math_intrinsic(Cg *cg, IntrinsicKind fn, TypeKind t, LLVMValueRef *args);

/* ---------------------------------------------------------------- cg_expr.c */

LLVMValueRef emit_expr(Cg *cg, const Expr *e);
/* e, an integer, sign- or zero-extended (by its signedness) or truncated to to. */
LLVMValueRef emit_index(Cg *cg, const Expr *e, LLVMTypeRef to);
LLVMValueRef emit_elem_ptr(Cg *cg, int buf, Expr *const *idx, int nidx);
/* The element offset of buf[idx...] in a shared tile, stage and swizzle
 * (ir.h's SwizzleKind) applied; a constant when the indices are.  Not static
 * only so that tests/unit/test_codegen.c can check the layouts. */
LLVMValueRef tile_offset(Cg *cg, const Buffer *buf, Expr *const *idx, int nidx);

/* Alignment in bytes of `lanes` consecutive elements of type t (a power of 2). */
unsigned cg_vec_align(TypeKind t, int lanes);

/* ---------------------------------------------------------------- cg_stmt.c */

void emit_stmt(Cg *cg, const Stmt *s);

/* ---------------------------------------------------------------- cg_kernel.c */

/* Adds k's function, its shared memory and its nvvm.annotations to mod. */
/* di, file: the module's DIBuilder and DIFile for -lineinfo (NULL: no line info) */
void emit_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const Kernel *k, LLVMDIBuilderRef di,
                 LLVMMetadataRef file);

/* ---------------------------------------------------------------- cg_meta.c */

/* Appends the "// tilec-meta" block of docs/abi.md; false (and an error in d)
 * when a grid or a shape cannot be expressed in it. */
bool emit_meta_block(const Module *m, Diags *d, StrBuf *out);
/* Whether k's shared memory is the dynamic kind (so the host passes its size). */
bool cg_smem_is_dynamic(const Kernel *k);

#endif
