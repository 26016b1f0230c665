/* codegen.c: the driver.  Per call:
 *
 *   target machine (nvptx64-nvidia-cuda, CPU = target name, +ptxNN: ir/target.h)
 *   -> module with the target's data layout, one function per kernel
 *   -> LLVMVerifyModule (a failure is our bug)
 *   -> new pass manager: default<On>, a scalar cleanup for straight-line modules,
 *      or just SROA at -O0
 *   -> LLVM IR text, PTX text with the tilec-meta block in front
 *
 * Everything LLVM is created and disposed inside the call; the only shared
 * state is the one-time registration of the NVPTX target and of a fatal-error
 * handler (pthread_once).
 *
 * LLVM ends the process on some errors (report_fatal_error: a failed
 * instruction selection, a pass's internal check).  None is known to be
 * reachable from a valid tile IR, but the library lives in other people's
 * processes: codegen_contained runs LLVM under a handler that jumps back to
 * the call (per thread), which then fails with the reason as a diagnostic.
 * What LLVM had allocated for that compilation is leaked, not freed: its state
 * is unknown at that point (docs/c-api.md).
 */
#include "cg.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/Support.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRIPLE "nvptx64-nvidia-cuda"

const char *codegen_llvm_version(void) { return "LLVM " LLVM_VERSION_STRING; }

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

/* The compilation running on this thread, if any: where a fatal error jumps. */
static _Thread_local jmp_buf *fatal_jump;
static _Thread_local char fatal_reason[1024];

static void on_llvm_fatal(const char *reason)
{
  if (!fatal_jump)
    return; /* not ours: LLVM prints the reason and exits, as without a handler */
  snprintf(fatal_reason, sizeof fatal_reason, "%s", reason ? reason : "");
  longjmp(*fatal_jump, 1);
}

/* LLVM 19's CodeGenPrepare restarts its walk over the whole function after
 * every change, and one of its rewrites (optimizeExtUses: the uses of x in
 * other blocks when x's sext/zext is used there too) moves one use per walk:
 * it edits the use list it iterates over.  A GEMM epilogue has a column
 * index used in each of its ~200 bounds-check blocks, so the pass walked the
 * 9k-instruction kernel ~190 times, re-parsing every wgmma's 260-operand
 * constraint string each time: 40% of matmul.tl's compile time.  Its "huge
 * function" mode revisits only the blocks that changed and reaches the same
 * fixed point (the PTX of every example is byte for byte the same); LLVM
 * enables it only above 10000 blocks, this option makes it the rule.
 *
 * -nvptx-short-ptr makes pointers to shared (and local) memory 32 bits wide,
 * as nvcc's are: the shared window is 228 KB, and with 64-bit pointers every
 * shared address (a swizzled tile's: base + stage + XORed chunk) was widened and
 * added in 64 bits (cvt.u64.u32, two add.s64) before each ld.shared.  On the
 * dequantizing GEMMs, whose widening loads the i8 tile two bytes at a time
 * (results/h100-2026-12-06-s30: ~7 instructions per weight element, the kernel
 * bound by its instruction stream), every two bytes paid for them; the GPU
 * figures are in results/h200-2026-12-06-s30.
 * Options are process-wide and parsed once; with the C API a bad or repeated
 * option is ignored, never fatal. */
static void set_llvm_options(void)
{
  const char *const argv[] = {"tilec", "-cgpp-huge-func=0", "-nvptx-short-ptr"};
  LLVMParseCommandLineOptions(3, argv, NULL);
}

static void init_nvptx(void)
{
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  LLVMInstallFatalErrorHandler(on_llvm_fatal);
  set_llvm_options();
}

bool codegen_contained(void (*fn)(void *arg), void *arg, char *reason, size_t reason_size)
{
  pthread_once(&nvptx_once, init_nvptx);
  jmp_buf here;
  jmp_buf *volatile outer = fatal_jump;
  if (setjmp(here)) {
    fatal_jump = outer;
    if (reason_size)
      snprintf(reason, reason_size, "%s", fatal_reason);
    return false;
  }
  fatal_jump = &here;
  fn(arg);
  fatal_jump = outer;
  return true;
}

/* ---------------------------------------------------------------- LLVM diagnostics */

/* LLVM reports some errors (bad inline asm, for one) through the context; with
 * no handler installed it would print them and exit(1).  Keep the first. */
typedef struct {
  char *first_error;
} LlvmDiags;

static void on_llvm_diagnostic(LLVMDiagnosticInfoRef di, void *ctx)
{
  LlvmDiags *ld = ctx;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || ld->first_error)
    return;
  char *msg = LLVMGetDiagInfoDescription(di);
  ld->first_error = strdup(msg);
  LLVMDisposeMessage(msg);
}

/* ---------------------------------------------------------------- one compilation */

typedef struct {
  const Module *m;
  Diags *d;
  SrcLoc loc;           /* of the first kernel: errors not tied to one kernel go there */
  const Target *target; /* its name is the LLVM CPU, its llvm_features the PTX ISA */
  int opt_level;
  bool line_info;       /* -lineinfo */
  const char *filename;
  bool straight_line;   /* no kernel has a run-time loop */
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMTargetMachineRef tm;
  LlvmDiags llvm_diags;
} Compilation;

static bool fail(Compilation *c, const char *what, const char *msg)
{
  error_at(c->d, c->loc, "%s: %s", what, msg && *msg ? msg : "unknown LLVM error");
  return false;
}

/* Does any statement of s run a loop at run time (unrolled loops are emitted
 * as straight-line code)? */
static bool has_runtime_loop(const Stmt *s)
{
  if (!s)
    return false;
  if (s->kind == ST_FOR && s->for_kind != FOR_UNROLLED)
    return true;
  for (int i = 0; i < s->nbody; i++)
    if (has_runtime_loop(s->body[i]))
      return true;
  return has_runtime_loop(s->then_s) || has_runtime_loop(s->else_s);
}

static bool create_target_machine(Compilation *c)
{
  static const LLVMCodeGenOptLevel levels[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
                                               LLVMCodeGenLevelDefault, LLVMCodeGenLevelAggressive};
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(TRIPLE, &target, &err)) {
    fail(c, "LLVM has no NVPTX target", err);
    LLVMDisposeMessage(err);
    return false;
  }
  /* Straight-line code gains nothing from the aggressive back end (the same
   * PTX, measured) but pays about 15% more code-generation work. */
  LLVMCodeGenOptLevel level = levels[c->opt_level];
  if (c->straight_line && c->opt_level == 3)
    level = LLVMCodeGenLevelDefault;
  c->tm = LLVMCreateTargetMachine(target, TRIPLE, c->target->name, c->target->llvm_features, level,
                                  LLVMRelocDefault, LLVMCodeModelDefault);
  if (!c->tm)
    return fail(c, "cannot create the NVPTX target machine for", c->target->name);
  return true;
}

static bool build_module(Compilation *c)
{
  c->mod = LLVMModuleCreateWithNameInContext("tilec", c->ctx);
  LLVMSetTarget(c->mod, TRIPLE);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(c->tm);
  LLVMSetModuleDataLayout(c->mod, dl);
  LLVMDisposeTargetData(dl);
  LLVMDIBuilderRef di = NULL;
  LLVMMetadataRef file = NULL;
  if (c->line_info) {
    /* Debug directives only (DICompileUnit's DebugDirectivesOnly, 3; the C API's enum stops at
     * LineTablesOnly, and the value is passed through): .file and .loc in the PTX, no DWARF
     * sections, which is what nvcc -lineinfo gives ptxas. */
    di = LLVMCreateDIBuilder(c->mod);
    const char *name = c->filename ? c->filename : "<input>";
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    size_t dirlen = slash ? (size_t)(slash - name) : 1;
    file = LLVMDIBuilderCreateFile(di, base, strlen(base), slash ? name : ".", dirlen);
    LLVMDIBuilderCreateCompileUnit(di, LLVMDWARFSourceLanguageC, file, "tilec", 5, false, "", 0, 0, "", 0,
                                   (LLVMDWARFEmissionKind)3, 0, false, false, "", 0, "", 0);
    LLVMAddModuleFlag(
        c->mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(c->ctx), LLVMDebugMetadataVersion(), 0)));
    LLVMAddModuleFlag(c->mod, LLVMModuleFlagBehaviorWarning, "Dwarf Version", 13,
                      LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(c->ctx), 2, 0)));
  }
  for (int i = 0; i < c->m->nkernels; i++)
    emit_kernel(c->ctx, c->mod, c->m->kernels[i], di, file);
  if (di) {
    LLVMDIBuilderFinalize(di);
    LLVMDisposeDIBuilder(di);
  }
  char *msg = NULL;
  bool bad = LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &msg);
  if (bad) /* our bug, never the program's: say so rather than abort the host */
    fail(c, "internal compiler error: tilec produced invalid LLVM IR (please report it with the source)",
         msg);
  LLVMDisposeMessage(msg);
  return !bad;
}

/* The middle end.  -O0 still runs SROA: per-thread arrays must live in
 * registers, never in local memory, whatever the optimization level.  A
 * module whose kernels are straight-line code (every loop unrolled by the
 * lowering: the elementwise kernels) gets the scalar cleanup alone at -O2 and
 * -O3: default<O3>'s loop and interprocedural passes find nothing to do there
 * but cost as much time as code generation itself (results/compile-speed.md);
 * kernels with loops (pipelined GEMM, streaming rows) get default<On>. */
static bool optimize(Compilation *c)
{
  static const char *const pipelines[] = {"function(sroa)", "default<O1>", "default<O2>", "default<O3>"};
  static const char straight_line[] =
      "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,instcombine<no-verify-fixpoint>)";
  const char *pipeline = c->opt_level >= 2 && c->straight_line ? straight_line : pipelines[c->opt_level];
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(c->mod, pipeline, c->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) {
    char *msg = LLVMGetErrorMessage(err);
    fail(c, "LLVM optimization failed", msg);
    LLVMDisposeErrorMessage(msg);
    return false;
  }
  return true;
}

/* The rewrites after the middle end: one walk over the module's instructions (rewrite_after_middle_end)
 * offers each to narrow_bf16_unpaired and pair_nibbles, which share a builder. */
typedef struct {
  LLVMContextRef ctx;
  LLVMBuilderRef b;
  LLVMValueRef bf16_asm; /* narrow_bf16_unpaired's inline asm, made on first use */
} AfterOpt;

/* f32 -> bf16 narrowings that nothing packs into a pair.  LLVM emits a scalar
 * `cvt.rn.bf16.f32` for each, which ptxas turns into F2FP (the ALU: one
 * instruction for a pair) where the value is then packed with its neighbour
 * (a vector store, `mov.b32 {a, b}`), but otherwise into F2F.BF16.F32, which
 * issues on the MUFU pipe beside ex2 and the other special functions (a row
 * softmax narrows each exponential back into the row's registers: 32 F2F in
 * its loop at 32 KB rows on sm_90a).  f16 has no such split: its scalar
 * narrowing is F2FP too.  So a scalar narrowing whose result is not inserted
 * into a vector becomes the packed `cvt.rn.bf16x2.f32` of the value twice, of
 * which the low half is kept (exact the same rounding; sm_80 and later, as
 * every target).  H100, stdlib softmax, bf16: rows of 32 KB 0.93 -> 0.98x of
 * a copy's bandwidth (results/h100-2026-12-06-s32). */
static bool narrow_bf16_unpaired(AfterOpt *o, LLVMValueRef ins)
{
  LLVMTypeRef bf16 = LLVMBFloatTypeInContext(o->ctx), f32 = LLVMFloatTypeInContext(o->ctx);
  if (LLVMGetInstructionOpcode(ins) != LLVMFPTrunc || LLVMTypeOf(ins) != bf16 ||
      LLVMTypeOf(LLVMGetOperand(ins, 0)) != f32)
    return false;
  for (LLVMUseRef u = LLVMGetFirstUse(ins); u; u = LLVMGetNextUse(u))
    if (LLVMIsAInsertElementInst(LLVMGetUser(u)))
      return false; /* paired */
  LLVMTypeRef fty = LLVMFunctionType(LLVMInt16TypeInContext(o->ctx), &f32, 1, 0);
  static const char text[] = "{ .reg .b32 p; .reg .b16 h; cvt.rn.bf16x2.f32 p, $1, $1; mov.b32 {$0, h}, p; }";
  static const char constraints[] = "=h,f";
  if (!o->bf16_asm)
    o->bf16_asm = LLVMGetInlineAsm(fty, text, sizeof text - 1, constraints, sizeof constraints - 1, 0, 0,
                                   LLVMInlineAsmDialectATT, 0);
  LLVMPositionBuilderBefore(o->b, ins);
  LLVMValueRef arg = LLVMGetOperand(ins, 0);
  LLVMValueRef call = LLVMBuildCall2(o->b, fty, o->bf16_asm, &arg, 1, "");
  cg_mark_pure(o->ctx, call);
  LLVMReplaceAllUsesWith(ins, LLVMBuildBitCast(o->b, call, bf16, ""));
  LLVMInstructionEraseFromParent(ins);
  return true;
}

/* Is v `op i8 b, k` (an and or an lshr by the constant k)?  Sets *b. */
static bool byte_op(LLVMValueRef v, LLVMOpcode op, unsigned long long k, LLVMValueRef *b)
{
  if (!LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) != op)
    return false;
  LLVMValueRef c = LLVMGetOperand(v, 1);
  if (!LLVMIsAConstantInt(c) || LLVMConstIntGetZExtValue(c) != k)
    return false;
  *b = LLVMGetOperand(v, 0);
  return true;
}

/* A byte's two 4-bit halves as the 16-bit lanes of a pair, [b & 15, b >> 4], zero-extended: what a
 * parallel loop that unpacks packed 4-bit weights two at a time (stdlib/gemm.tl's gemm_w4a16:
 * select(j % 2 == 0, b & 15, b >> 4), then T(q) as a pair of f16) leaves after the middle end.
 * LLVM builds it lane by lane (and, shr, a prmt to pack); as one 32-bit word it is
 * (b * 0x1001) & 0x000F000F: b and b << 12 do not overlap, so the low nibble stays in bits 0-3 and
 * the high one lands in bits 16-19 (an IMAD and a LOP3, which the conversion's | 0x6400 joins). */
static bool pair_nibbles(AfterOpt *o, LLVMValueRef ins)
{
  LLVMTypeRef i32 = LLVMInt32TypeInContext(o->ctx), pair = LLVMVectorType(LLVMInt16TypeInContext(o->ctx), 2);
  if (LLVMGetInstructionOpcode(ins) != LLVMZExt || LLVMTypeOf(ins) != pair)
    return false;
  LLVMValueRef hi_ins = LLVMGetOperand(ins, 0), lo_ins, idx, byte, byte2;
  if (!LLVMIsAInsertElementInst(hi_ins))
    return false;
  lo_ins = LLVMGetOperand(hi_ins, 0);
  idx = LLVMGetOperand(hi_ins, 2);
  if (!LLVMIsAConstantInt(idx) || LLVMConstIntGetZExtValue(idx) != 1 || !LLVMIsAInsertElementInst(lo_ins))
    return false;
  idx = LLVMGetOperand(lo_ins, 2);
  if (!LLVMIsAConstantInt(idx) || LLVMConstIntGetZExtValue(idx) != 0)
    return false;
  if (!byte_op(LLVMGetOperand(lo_ins, 1), LLVMAnd, 15, &byte) ||
      !byte_op(LLVMGetOperand(hi_ins, 1), LLVMLShr, 4, &byte2) || byte != byte2 ||
      LLVMTypeOf(byte) != LLVMInt8TypeInContext(o->ctx))
    return false;
  LLVMPositionBuilderBefore(o->b, ins);
  LLVMValueRef w = LLVMBuildZExt(o->b, byte, i32, "");
  w = LLVMBuildMul(o->b, w, LLVMConstInt(i32, 0x1001, 0), "");
  w = LLVMBuildAnd(o->b, w, LLVMConstInt(i32, 0x000F000F, 0), "");
  LLVMReplaceAllUsesWith(ins, LLVMBuildBitCast(o->b, w, pair, ""));
  LLVMInstructionEraseFromParent(ins);
  if (!LLVMGetFirstUse(hi_ins)) { /* both come before ins: the walk has passed them */
    LLVMInstructionEraseFromParent(hi_ins);
    if (!LLVMGetFirstUse(lo_ins))
      LLVMInstructionEraseFromParent(lo_ins);
  }
  return true;
}

static void rewrite_after_middle_end(Compilation *c)
{
  AfterOpt o = {.ctx = c->ctx, .b = LLVMCreateBuilderInContext(c->ctx)};
  for (LLVMValueRef fn = LLVMGetFirstFunction(c->mod); fn; fn = LLVMGetNextFunction(fn))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef ins = LLVMGetFirstInstruction(bb), next; ins; ins = next) {
        next = LLVMGetNextInstruction(ins);
        if (!narrow_bf16_unpaired(&o, ins))
          pair_nibbles(&o, ins);
      }
  LLVMDisposeBuilder(o.b);
}

static char *print_llvm_ir(Compilation *c)
{
  char *s = LLVMPrintModuleToString(c->mod);
  char *r = strdup(s);
  LLVMDisposeMessage(s);
  return r;
}

static char *emit_ptx(Compilation *c, StrBuf *meta)
{
  char *err = NULL;
  LLVMMemoryBufferRef mb = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(c->tm, c->mod, LLVMAssemblyFile, &err, &mb)) {
    fail(c, "LLVM could not emit PTX", c->llvm_diags.first_error ? c->llvm_diags.first_error : err);
    LLVMDisposeMessage(err);
    return NULL;
  }
  if (c->llvm_diags.first_error) {
    fail(c, "LLVM could not emit PTX", c->llvm_diags.first_error);
    LLVMDisposeMemoryBuffer(mb);
    return NULL;
  }
  sb_putn(meta, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
  LLVMDisposeMemoryBuffer(mb);
  return sb_take(meta);
}

/* Is name the symbol LLVM gives a parameter of kernel k: "k_param_N"? */
static bool is_param_symbol(const char *name, const char *k)
{
  size_t n = strlen(k);
  if (strncmp(name, k, n) || strncmp(name + n, "_param_", 7))
    return false;
  const char *d = name + n + 7;
  if (!*d)
    return false;
  for (; *d; d++)
    if (*d < '0' || *d > '9')
      return false;
  return true;
}

/* A kernel's name becomes its PTX .entry symbol as it is, so it must be a
 * PTX identifier that names nothing else in the module: not "_" (an
 * identifier starting with '_' needs another character), not WARP_SZ (PTX's
 * one predefined identifier without '%'), and not the symbol of another
 * kernel's parameter, k_param_0 ... (ptxas and the driver crash on such PTX). */
static bool check_kernels(Compilation *c)
{
  for (int i = 0; i < c->m->nkernels; i++) {
    const Kernel *k = c->m->kernels[i];
    if (!strcmp(k->name, "_") || !strcmp(k->name, "WARP_SZ")) {
      error_at(c->d, k->loc, "'%s' cannot name a kernel: it is %s in PTX; choose another name", k->name,
               k->name[0] == '_' ? "not an identifier" : "a predefined identifier");
      return false;
    }
    for (int j = 0; j < c->m->nkernels; j++) {
      const Kernel *o = c->m->kernels[j];
      if (j < i && strcmp(k->name, o->name) == 0) {
        error_at(c->d, k->loc, "two kernels named '%s'", k->name);
        return false;
      }
      if (j != i && is_param_symbol(k->name, o->name)) {
        error_at(c->d, k->loc,
                 "kernel name '%s' is the PTX symbol of a parameter of kernel '%s' "
                 "(they are named %s_param_0, %s_param_1, ...); choose another name",
                 k->name, o->name, o->name, o->name);
        return false;
      }
    }
  }
  return true;
}

/* The LLVM part of a compilation whose target machine, module and context are c's own: build,
 * optimize, then the IR text and / or the PTX (appended to meta). */
static bool run_llvm(Compilation *c, StrBuf *meta, char **llvm_ir_out, char **ptx_out)
{
  bool ok = create_target_machine(c) && build_module(c) && optimize(c);
  if (ok)
    rewrite_after_middle_end(c);
  if (ok && llvm_ir_out)
    *llvm_ir_out = print_llvm_ir(c);
  if (ok && ptx_out) {
    *ptx_out = emit_ptx(c, meta);
    ok = *ptx_out != NULL;
  }
  return ok;
}

typedef struct {
  Compilation *c;
  StrBuf *meta;
  char **llvm_ir_out, **ptx_out;
  bool ok;
} Run;

static void run_call(void *arg)
{
  Run *r = arg;
  r->ok = run_llvm(r->c, r->meta, r->llvm_ir_out, r->ptx_out);
}

/* Runs c's LLVM part in a context of its own, contained (codegen_contained), and disposes of
 * what LLVM made. */
static bool run_contained(Compilation *c, StrBuf *meta, char **llvm_ir_out, char **ptx_out)
{
  c->ctx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(c->ctx, on_llvm_diagnostic, &c->llvm_diags);
  Run r = {c, meta, llvm_ir_out, ptx_out, false};
  char reason[1024];
  if (!codegen_contained(run_call, &r, reason, sizeof reason)) {
    /* LLVM's state is unknown: leak the context, module and machine. */
    fail(c, "LLVM stopped with a fatal error (a bug in tilec or LLVM; please report it with the source)",
         reason);
    free(c->llvm_diags.first_error);
    if (llvm_ir_out) {
      free(*llvm_ir_out);
      *llvm_ir_out = NULL;
    }
    if (ptx_out) {
      free(*ptx_out);
      *ptx_out = NULL;
    }
    return false;
  }
  if (c->mod)
    LLVMDisposeModule(c->mod);
  if (c->tm)
    LLVMDisposeTargetMachine(c->tm);
  LLVMContextDispose(c->ctx);
  free(c->llvm_diags.first_error);
  return r.ok;
}

/* ---------------------------------------------------------------- kernels on threads
 *
 * A module of several kernels (stdlib/gemm.tl has ten) is compiled one kernel per LLVM module,
 * on up to as many threads as the machine has processors: nothing in a kernel's code depends on
 * another's (each has its own function and shared-memory global; module-wide, only the choice of
 * pipeline, straight_line, which stays the module's). The PTX is the header of the first kernel's
 * output, then each kernel's functions and globals in the module's order: every kernel's code is
 * the same as from one module, except the numbers in its labels ($L__BB0_ instead of $L__BB3_)
 * and the place of its shared-memory global. The output does not depend on the number of threads
 * ($TILEC_THREADS = N caps it; 1: one after the other). The IR text (--emit=llvm) and -lineinfo
 * (one .file table) keep one module for all kernels. */

typedef struct {
  Compilation c;
  Module one; /* the kernel alone */
  Diags d;    /* its diagnostics, moved into the caller's after the join */
  char *ptx;  /* its PTX, header included */
  bool ok;
} KernelJob;

typedef struct {
  KernelJob *jobs;
  int njobs;
  int next; /* the next job to take, under lock */
  pthread_mutex_t lock;
} JobQueue;

static void *kernel_worker(void *arg)
{
  JobQueue *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    int i = q->next < q->njobs ? q->next++ : -1;
    pthread_mutex_unlock(&q->lock);
    if (i < 0)
      return NULL;
    KernelJob *j = &q->jobs[i];
    StrBuf none = {0};
    j->ok = run_contained(&j->c, &none, NULL, &j->ptx);
  }
}

#define MAX_CODEGEN_THREADS 64

/* The threads for nkernels kernels: the processors online, or $TILEC_THREADS (a value that is not
 * a whole number >= 1 is ignored, with a warning in d). */
static int codegen_threads(int nkernels, Diags *d)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *e = getenv("TILEC_THREADS");
  if (e && *e) {
    char *end;
    errno = 0;
    long v = strtol(e, &end, 10);
    if (!*end && v >= 1 && !errno)
      n = v;
    else
      diag_at(d, DIAG_WARNING, NO_LOC, "TILEC_THREADS=%s: not a whole number of at least 1; ignored", e);
  }
  if (n > nkernels)
    n = nkernels;
  return n < 1 ? 1 : n > MAX_CODEGEN_THREADS ? MAX_CODEGEN_THREADS : (int)n;
}

/* Where a PTX text's header (up to the .address_size line) ends, or NULL. */
static const char *after_header(const char *ptx)
{
  const char *a = strstr(ptx, "\n.address_size ");
  if (!a)
    return NULL;
  const char *nl = strchr(a + 1, '\n');
  return nl ? nl + 1 : NULL;
}

/* The kernels of c->m on `threads` threads; the PTX (meta block, one header, every kernel's code
 * in order) in *ptx_out. */
static bool run_kernels_threaded(Compilation *c, StrBuf *meta, int threads, char **ptx_out)
{
  int n = c->m->nkernels;
  KernelJob *jobs = calloc((size_t)n, sizeof *jobs);
  pthread_t tids[MAX_CODEGEN_THREADS];
  if (!jobs)
    return fail(c, "out of memory", "compiling the kernels on threads");
  for (int i = 0; i < n; i++) {
    KernelJob *j = &jobs[i];
    j->c = *c;
    j->one = (Module){.arena = c->m->arena, .kernels = &c->m->kernels[i], .nkernels = 1};
    j->c.m = &j->one;
    j->c.loc = c->m->kernels[i]->loc;
    j->d = (Diags){.arena = arena_new()};
    j->c.d = &j->d;
  }
  JobQueue q = {jobs, n, 0, PTHREAD_MUTEX_INITIALIZER};
  int started = 0;
  for (; started < threads - 1; started++)
    if (pthread_create(&tids[started], NULL, kernel_worker, &q))
      break; /* fewer threads: this one and those started take the rest */
  kernel_worker(&q);
  for (int t = 0; t < started; t++)
    pthread_join(tids[t], NULL);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    for (const Diag *g = jobs[i].d.first; g; g = g->next)
      diag_at(c->d, g->level, g->loc, "%s", g->message);
    ok &= jobs[i].ok;
  }
  if (ok) {
    for (int i = 0; i < n && ok; i++) {
      const char *body = after_header(jobs[i].ptx);
      const char *part = i == 0 ? jobs[i].ptx : body; /* the header once, from the first */
      if (!body)
        ok = fail(c, "LLVM's PTX has no .address_size line", jobs[i].c.m->kernels[0]->name);
      else
        sb_putn(meta, part, strlen(part));
    }
    if (ok)
      *ptx_out = sb_take(meta);
  }
  for (int i = 0; i < n; i++) {
    free(jobs[i].ptx);
    arena_free(jobs[i].d.arena);
  }
  free(jobs);
  return ok;
}

bool codegen_module(const Module *m, const CodegenOptions *opt, Diags *d, char **llvm_ir_out, char **ptx_out)
{
  if (llvm_ir_out)
    *llvm_ir_out = NULL;
  if (ptx_out)
    *ptx_out = NULL;
  Compilation c = {.m = m, .d = d, .opt_level = 3};
  if (m->nkernels > 0)
    c.loc = m->kernels[0]->loc;
  c.target = opt && opt->target ? opt->target : target_default();
  if (opt) {
    c.opt_level = opt->opt_level < 0 ? 0 : opt->opt_level > 3 ? 3 : opt->opt_level;
    c.line_info = opt->line_info;
    c.filename = opt->filename;
  }
  pthread_once(&nvptx_once, init_nvptx);

  c.straight_line = true;
  for (int i = 0; i < m->nkernels; i++)
    c.straight_line &= !has_runtime_loop(m->kernels[i]->body);
  StrBuf meta = {0};
  bool ok = check_kernels(&c) && emit_meta_block(m, d, &meta);
  if (ok && ptx_out && !llvm_ir_out && !c.line_info && m->nkernels > 1)
    ok = run_kernels_threaded(&c, &meta, codegen_threads(m->nkernels, d), ptx_out);
  else if (ok)
    ok = run_contained(&c, &meta, llvm_ir_out, ptx_out);
  free(meta.data);
  if (!ok && llvm_ir_out) {
    free(*llvm_ir_out);
    *llvm_ir_out = NULL;
  }
  if (!ok && ptx_out) {
    free(*ptx_out);
    *ptx_out = NULL;
  }
  return ok;
}
