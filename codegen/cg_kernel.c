/* cg_kernel.c: one kernel -> one PTX entry.
 *
 *   define ptx_kernel void @NAME(ptr %A, ..., float %alpha, i32 %N) {
 *   entry:  addrspacecasts of the tensors to addrspace(1), bool scalars to i1,
 *           allocas of the LOCAL arrays and the mutable variables
 *           ...the body...
 *   }
 *   (then, for TMA, tensor maps: ptr byval([128 x i8]) align 64, "grid_constant", and an i32 flag)
 *   @NAME$smem = internal addrspace(3) global [BYTES x i8] undef, align 128
 *                (or an external [0 x i8] when the kernel needs dynamic smem;
 *                align 1024 when wgmma reads tiles in it)
 *   !nvvm.annotations: kernel, maxntidx = threads, minctasm (when the IR asks), grid_constant
 *   (the tensor maps: read in place, as `.param` memory, where the copy engine wants them)
 */
#include "cg.h"

#include <stdlib.h>
#include <string.h>

static void set_name(LLVMValueRef v, const char *name)
{
  if (name)
    LLVMSetValueName2(v, name, strlen(name));
}

static LLVMTypeRef param_type(const Cg *cg, const struct KParam *p)
{
  if (p->is_buffer || p->is_tmap)
    return cg->t.ptr; /* generic, per docs/abi.md; cast to global below (a tensor map: byval) */
  const Var *v = &cg->k->vars[p->index];
  if (v->kind == VAR_SIZE || v->kind == VAR_TMA_OK)
    return cg->t.i32;
  if (v->kind != VAR_SCALAR)
    DIE("parameter '%s' is neither a size nor a scalar", v->name);
  return cg_mem_type(cg, v->type); /* bool travels as one byte */
}

static LLVMValueRef add_function(Cg *cg)
{
  const Kernel *k = cg->k;
  LLVMTypeRef *types = malloc(sizeof *types * (size_t)(k->nparams ? k->nparams : 1));
  for (int i = 0; i < k->nparams; i++)
    types[i] = param_type(cg, &k->params[i]);
  LLVMTypeRef fty = LLVMFunctionType(cg->t.void_t, types, (unsigned)k->nparams, 0);
  free(types);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, k->name, fty);
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  /* A tensor map is 128 bytes passed by value, 64-byte aligned (CUtensorMap). */
  unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5),
           align = LLVMGetEnumAttributeKindForName("align", 5);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].is_tmap) {
      LLVMTypeRef map = LLVMArrayType2(cg->t.i8, 128);
      LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateTypeAttribute(cg->ctx, byval, map));
      LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateEnumAttribute(cg->ctx, align, 64));
    }
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, nounwind, 0));
  return fn;
}

static void bind_params(Cg *cg)
{
  const Kernel *k = cg->k;
  for (int i = 0; i < k->nparams; i++) {
    const struct KParam *p = &k->params[i];
    LLVMValueRef v = LLVMGetParam(cg->fn, (unsigned)i);
    if (p->is_tmap) {
      cg->tmaps[p->index] = v;
      continue;
    }
    if (p->is_buffer) {
      const Buffer *b = &k->bufs[p->index];
      if (b->scope != SCOPE_GLOBAL)
        DIE("parameter '%s' is a %s buffer", b->name, scope_name(b->scope));
      set_name(v, b->name);
      cg->bases[p->index] = LLVMBuildAddrSpaceCast(cg->b, v, cg->t.ptr_global, "");
      continue;
    }
    const Var *var = &k->vars[p->index];
    set_name(v, var->name);
    if (var->kind == VAR_SIZE || var->kind == VAR_TMA_OK)
      cg->vals[p->index] = cg_convert(cg, v, TY_I32, var->type);
    else
      cg->vals[p->index] = cg_from_mem(cg, v, var->type);
  }
}

bool cg_smem_is_dynamic(const Kernel *k) { return k->smem_bytes > CG_STATIC_SMEM_MAX; }

/* One byte array per kernel; each SHARED buffer is a constant offset into it. */
static void place_shared(Cg *cg)
{
  const Kernel *k = cg->k;
  if (k->smem_bytes <= 0) {
    for (int i = 0; i < k->nbufs; i++)
      if (k->bufs[i].scope == SCOPE_SHARED && !k->bufs[i].unused)
        DIE("shared buffer '%s' in a kernel without shared memory", k->bufs[i].name);
    return;
  }
  bool dynamic = cg_smem_is_dynamic(k);
  LLVMTypeRef aty = LLVMArrayType2(cg->t.i8, dynamic ? 0 : (uint64_t)k->smem_bytes);
  StrBuf name = {0};
  sb_printf(&name, "%s$smem", k->name); /* "$": no clash with a kernel name */
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, aty, name.data, ADDRSPACE_SHARED);
  free(name.data);
  if (dynamic) {
    LLVMSetLinkage(g, LLVMExternalLinkage);
  } else {
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetInitializer(g, LLVMGetUndef(aty)); /* shared memory cannot be initialized */
  }
  bool wgmma = false;                         /* wgmma's tiles need 1024-byte atoms (plan_shared.c) */
  for (int i = 0; i < k->nbufs; i++)
    wgmma |= k->bufs[i].scope == SCOPE_SHARED && swizzle_span(k->bufs[i].swizzle);
  LLVMSetAlignment(g, wgmma ? CG_SMEM_ALIGN_WGMMA : CG_SMEM_ALIGN);
  for (int i = 0; i < k->nbufs; i++) {
    const Buffer *b = &k->bufs[i];
    if (b->scope != SCOPE_SHARED || b->unused) /* unused: nothing reads or writes it (plan_shared.c) */
      continue;
    if (b->smem_offset < 0 || b->smem_offset >= k->smem_bytes)
      DIE("shared buffer '%s' at offset %lld of %lld bytes", b->name, (long long)b->smem_offset,
          (long long)k->smem_bytes);
    LLVMValueRef off = LLVMConstInt(cg->t.i32, (unsigned long long)b->smem_offset, 0);
    cg->bases[i] = LLVMConstInBoundsGEP2(cg->t.i8, g, &off, 1);
  }
}

/* Allocas in the entry block, where SROA and mem2reg look for them. */
static void place_locals(Cg *cg)
{
  const Kernel *k = cg->k;
  for (int i = 0; i < k->nbufs; i++) {
    const Buffer *b = &k->bufs[i];
    if (b->scope != SCOPE_LOCAL)
      continue;
    if (b->local_size <= 0)
      DIE("local buffer '%s' of %lld elements", b->name, (long long)b->local_size);
    LLVMTypeRef aty = LLVMArrayType2(cg_mem_type(cg, b->elem), (uint64_t)b->local_size);
    LLVMValueRef a = LLVMBuildAlloca(cg->b, aty, b->name);
    LLVMSetAlignment(a, 16); /* vector accesses of up to 16 bytes */
    cg->bases[i] = a;
  }
  for (int i = 0; i < k->nvars; i++)
    if (k->vars[i].kind == VAR_MUT)
      cg->vals[i] = LLVMBuildAlloca(cg->b, cg_reg_type(cg, k->vars[i].type), k->vars[i].name);
}

static void annotate(Cg *cg, const char *key, int value)
{
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(cg->fn),
      LLVMMDStringInContext2(cg->ctx, key, strlen(key)),
      LLVMValueAsMetadata(LLVMConstInt(cg->t.i32, (unsigned long long)value, 0)),
  };
  LLVMValueRef node = LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, md, 3));
  LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", node);
}

/* !{fn, !"grid_constant", !{i32 P, ...}}: the tensor maps' parameters, counted from 1. */
static void annotate_grid_constants(Cg *cg)
{
  const Kernel *k = cg->k;
  LLVMMetadataRef *idx = malloc(sizeof *idx * (size_t)k->ntmaps);
  for (int i = 0; i < k->ntmaps; i++)
    idx[i] = LLVMValueAsMetadata(LLVMConstInt(cg->t.i32, (unsigned long long)k->tmaps[i].param + 1, 0));
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(cg->fn),
      LLVMMDStringInContext2(cg->ctx, "grid_constant", 13),
      LLVMMDNodeInContext2(cg->ctx, idx, (size_t)k->ntmaps),
  };
  free(idx);
  LLVMValueRef node = LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, md, 3));
  LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", node);
}

/* -lineinfo: the kernel's DISubprogram (line: its `kernel` keyword), so that statements can carry
 * DILocations (emit_stmt). */
static void attach_subprogram(Cg *cg, LLVMMetadataRef file)
{
  const Kernel *k = cg->k;
  LLVMMetadataRef type = LLVMDIBuilderCreateSubroutineType(cg->di, file, NULL, 0, LLVMDIFlagZero);
  unsigned line = k->loc.line > 0 ? (unsigned)k->loc.line : 1;
  cg->di_scope = LLVMDIBuilderCreateFunction(cg->di, file, k->name, strlen(k->name), k->name, strlen(k->name),
                                             file, line, type, false, true, line, LLVMDIFlagZero, true);
  LLVMSetSubprogram(cg->fn, cg->di_scope);
}

void emit_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const Kernel *k, LLVMDIBuilderRef di,
                 LLVMMetadataRef file)
{
  if (k->nthreads <= 0 || !k->body)
    DIE("kernel '%s' with %d threads and %s body", k->name, k->nthreads, k->body ? "a" : "no");
  Cg cg = {.ctx = ctx, .mod = mod, .k = k};
  cg_types_init(&cg.t, ctx);
  /* fast_math: a * b + c may become one fma (as nvcc's default --fmad=true),
   * x / c may become x * (1 / c), the sign of a zero may be lost.  Adds,
   * divisions and square roots stay IEEE (add.rn, div.rn, sqrt.rn, no ftz) and
   * sums are not reassociated.  Without it, every operation rounds as written. */
  if (k->fast_math)
    cg.fmf = LLVMFastMathAllowContract | LLVMFastMathApproxFunc | LLVMFastMathAllowReciprocal |
             LLVMFastMathNoSignedZeros;
  cg.vals = calloc((size_t)k->nvars + 1, sizeof *cg.vals);
  cg.bases = calloc((size_t)k->nbufs + 1, sizeof *cg.bases);
  cg.tmaps = calloc((size_t)k->ntmaps + 1, sizeof *cg.tmaps);
  cg.b = LLVMCreateBuilderInContext(ctx);

  cg.fn = add_function(&cg);
  cg.di = di;
  if (di)
    attach_subprogram(&cg, file);
  LLVMPositionBuilderAtEnd(cg.b, LLVMAppendBasicBlockInContext(ctx, cg.fn, "entry"));
  bind_params(&cg);
  place_shared(&cg);
  place_locals(&cg);
  emit_stmt(&cg, k->body);
  LLVMBuildRetVoid(cg.b);

  annotate(&cg, "kernel", 1);
  annotate(&cg, "maxntidx", k->nthreads);
  if (k->min_blocks_per_sm > 0) /* ptxas may then use every register a block of this size allows */
    annotate(&cg, "minctasm", k->min_blocks_per_sm);
  if (k->ntmaps)
    annotate_grid_constants(&cg);

  LLVMDisposeBuilder(cg.b);
  free(cg.vals);
  free(cg.bases);
  free(cg.tmaps);
}
