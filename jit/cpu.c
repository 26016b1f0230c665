/* cpu.c: modules of the CPU device (TL_DEVICE_CPU): .tl source that tl_launch runs with the
 * interpreter (interp/), through the runtime's hook (tl_module_load_host, runtime_internal.h).
 *
 * The runtime (layer 0) cannot call the interpreter (layer 2); the JIT (layer 4) sits above both,
 * so it is the JIT that makes a CPU module and hands the runtime the function that runs it:
 *
 *   tl_module_compile(cpu ctx, source)
 *     key -> cache -> tilec_compile -> PTX   as for a GPU: the PTX's tilec-meta block is the
 *                                            kernels' signature, so tl_launch checks arguments
 *                                            exactly as on the GPU; the driver never sees the PTX
 *     interp_compile(source, -D, kernel)     the IR the interpreter runs, kept in the module: the tile
 *                                            level's, or the thread level's for the module's arch
 *     tl_module_load_host(ptx, cpu_ops, state)
 *   tl_launch(kernel, args)
 *     runtime: tl_plan_launch_sms, tensors inside allocations  ->  cpu_launch: tl_arg -> InterpArg,
 *     interp_*_run, its error (file:line, block, element) -> TL_ERR_KERNEL_FAILED
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "interp.h" /* interp/: layer 2, below the JIT */
#include "jit_internal.h"
#include "runtime_internal.h"

typedef bool (*interp_run_fn)(const Kernel *k, const InterpArg *args, int nargs, const InterpOptions *opt,
                              Diags *d);

/* The tile level's IR for any target (it does not depend on one). */
static Module *compile_tile(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs, int ndefs,
                            const char *kernel, const Target *target)
{
  (void)target;
  return interp_compile(a, d, src, len, defs, ndefs, kernel);
}

/* The levels a launch on the CPU device can run at (docs/interpreter.md); $TILEC_INTERP_LEVEL picks
 * one (the first when unset), read in pick_level alone.  The thread level runs the lowering for the
 * module's target (the JIT's arch: sm_90a on the CPU device unless the options name another). */
typedef struct {
  const char *name;
  Module *(*compile)(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs, int ndefs,
                     const char *kernel, const Target *target);
  interp_run_fn run;
} level;
static const level levels[] = {
    {"tile", compile_tile, interp_tile_run},              /* the language's reference semantics */
    {"thread", interp_compile_thread, interp_thread_run}, /* the target's lowering, checked as it runs */
};
#define NLEVELS ((int)(sizeof levels / sizeof levels[0]))

static bool pick_level(const level **out, char *err, size_t err_size)
{
  const char *v = getenv("TILEC_INTERP_LEVEL");
  for (int i = 0; i < NLEVELS; i++)
    if (!v || !*v || !strcmp(v, levels[i].name)) {
      *out = &levels[i];
      return true;
    }
  char names[64] = "";
  for (int i = 0, used = 0; i < NLEVELS; i++)
    used += snprintf(names + used, sizeof names - (size_t)used, "%s%s", i ? ", " : "", levels[i].name);
  tl_fmt(err, err_size, "TILEC_INTERP_LEVEL is '%.64s'; expected %s", v, names);
  return false;
}

/* ------------------------------------------------------------------------------------ a module */

typedef struct cpu_module {
  Arena *arena;           /* the IR, the source's copy, the filename */
  const Kernel **kernels; /* the IR kernel of each metadata kernel (the PTX's order) */
  const char *filename;   /* the diagnostics' */
  const char *src;        /* interp_compile's copy, for the source lines of messages */
  size_t src_len;
  interp_run_fn run;
} cpu_module;

static void cpu_module_destroy(void *state)
{
  cpu_module *cm = state;
  if (!cm)
    return;
  arena_free(cm->arena);
  free(cm->kernels);
  free(cm);
}

/* d's diagnostics into the context's message, without the final newline; returns status. */
static tl_status fail_with_diagnostics(tl_context *ctx, tl_status status, const Diags *d)
{
  StrBuf sb = {0};
  diag_render(d, &sb);
  char *text = sb_take(&sb);
  size_t n = text ? strlen(text) : 0;
  while (n && text[n - 1] == '\n')
    text[--n] = 0;
  status = tl_context_fail(ctx, status, "%s", n ? text : "the interpreter failed (no diagnostics)");
  free(text);
  return status;
}

/* ------------------------------------------------------------------------------------ a launch */

/* A byte for the data of empty tensors (ptr 0): the interpreter wants data for every tensor, and
 * reads none of an empty one. */
static unsigned char empty_tensor;

/* Argument i of the launch as the interpreter takes it: by the parameter's name, tensors by host
 * address (tl_devptr is one on this device), sizes from the plan (bound and checked there),
 * scalars by value in the interpreter's two fields; no name for a tensor map (the interpreter reads
 * the tensor itself), and the TMA flag 1 (the path a GPU whose driver encodes the maps runs) unless
 * the context's TILEC_NO_TMA says otherwise, as for a GPU. */
static InterpArg interp_arg(const tl_kernel_info *info, int i, const tl_arg *args, const tl_launch_plan *plan,
                            bool no_tma)
{
  const tl_param *p = &info->params[i];
  InterpArg a = {.name = p->name};
  switch (p->kind) {
  case TL_PARAM_TMAP: a.name = NULL; break;
  case TL_PARAM_TMAP_OK: a.i = !no_tma; break;
  case TL_PARAM_TENSOR: a.data = args[i].ptr ? (void *)(uintptr_t)args[i].ptr : &empty_tensor; break;
  case TL_PARAM_SIZE: {
    int32_t v;
    memcpy(&v, plan->params[i], sizeof v); /* plan.c: a size is an i32 at the start of its slot */
    a.i = v;
    break;
  }
  case TL_PARAM_SCALAR:
    switch (p->dtype) {
    case TL_F16:
    case TL_BF16:
    case TL_F32:
    case TL_F64: a.f = args[i].value.f; break;
    /* rounded here from the double, once, as plan.c rounds it for the GPU */
    case TL_E4M3: a.f = tl_e4m3_to_float(tl_e4m3_from_double(args[i].value.f)); break;
    case TL_E5M2: a.f = tl_e5m2_to_float(tl_e5m2_from_double(args[i].value.f)); break;
    case TL_U8:
    case TL_U16:
    case TL_U32:
    case TL_U64: a.i = (int64_t)args[i].value.u; break;
    default: a.i = args[i].value.i; break;
    }
    break;
  }
  return a;
}

static tl_status cpu_launch(tl_context *ctx, void *state, int kernel, const tl_kernel_info *info,
                            const tl_arg *args, int nargs, const tl_launch_plan *plan)
{
  (void)nargs; /* == info->nargs: the planner checked */
  cpu_module *cm = state;
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  InterpArg *iargs = calloc((size_t)info->nparams + 1, sizeof *iargs);
  if (!iargs)
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  /* The tile level runs the kernel before lowering, which has no TMA flag (nor maps) to bind */
  const bool has_flag = cm->kernels[kernel]->ntmaps > 0;
  int n = 0;
  for (int i = 0; i < info->nparams; i++)
    if ((info->params[i].kind != TL_PARAM_TMAP_OK || has_flag) &&
        (iargs[n] = interp_arg(info, i, args, plan, tl_context_no_tma(ctx))).name)
      n++;
  const InterpOptions opt = {.num_sms = dev.sm_count};
  Diags d = {.arena = arena_new(), .filename = cm->filename, .src = cm->src, .src_len = cm->src_len};
  const bool ran = cm->run(cm->kernels[kernel], iargs, n, &opt, &d);
  const tl_status st = ran ? tl_context_succeed(ctx) : fail_with_diagnostics(ctx, TL_ERR_KERNEL_FAILED, &d);
  arena_free(d.arena);
  free(iargs);
  return st;
}

static const tl_host_module_ops cpu_ops = {cpu_launch, cpu_module_destroy};

/* ------------------------------------------------------------------------------------ loading */

tl_status tl_jit_load_cpu(tl_context *ctx, const char *src, size_t len, const tl_jit_options *opt,
                          const char *arch, const char *ptx, tl_module **out)
{
  *out = NULL;
  char why[256];
  const level *lv;
  if (!pick_level(&lv, why, sizeof why))
    return tl_context_fail(ctx, TL_ERR_BAD_ARGUMENT, "%s", why);
  cpu_module *cm = calloc(1, sizeof *cm);
  if (!cm)
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  cm->run = lv->run;
  cm->arena = arena_new();
  cm->filename = arena_strdup(cm->arena, opt->filename ? opt->filename : "<jit>");
  ConstDef *defs = ARENA_ARRAY(cm->arena, ConstDef, opt->ndefines + 1);
  for (int i = 0; i < opt->ndefines; i++)
    defs[i] = (ConstDef){opt->defines[i].name, opt->defines[i].value};
  Diags d = {.arena = cm->arena, .filename = cm->filename};
  const Target *target = target_find(arch);
  Module *ir = target
                   ? lv->compile(cm->arena, &d, src ? src : "", len, defs, opt->ndefines, opt->kernel, target)
                   : NULL;
  cm->src = d.src;
  cm->src_len = d.src_len;
  if (!ir) { /* tilec_compile took this source, or its PTX would not be cached: a bug, reported */
    tl_status st = fail_with_diagnostics(ctx, TL_ERR_COMPILE, &d);
    cpu_module_destroy(cm);
    return st;
  }

  tl_module *m;
  tl_status st = tl_module_load_host(ctx, ptx, &cpu_ops, cm, &m); /* owns cm from here */
  if (st != TL_OK)
    return st;
  const tl_meta *meta = tl_module_meta(m);
  const int n = tl_meta_kernel_count(meta);
  if (!(cm->kernels = calloc((size_t)n + 1, sizeof *cm->kernels))) {
    tl_module_unload(m);
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    const char *name = tl_meta_kernel(meta, i)->name;
    if (!(cm->kernels[i] = interp_find_kernel(ir, name))) {
      tl_module_unload(m);
      return tl_context_fail(ctx, TL_ERR_BAD_METADATA,
                             "the metadata describes kernel '%s' but the interpreter's compilation of "
                             "the source has none of that name",
                             name);
    }
  }
  *out = m;
  return tl_context_succeed(ctx);
}
