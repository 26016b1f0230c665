/* compile.c: .tl source -> IR for the interpreter.  The same front end as
 * tilec_compile (compiler/libtilec.c), then for the tile level only the
 * pipeline's first step (the tile level must see the operations as the user
 * wrote them), for the thread level the whole pipeline, as codegen gets it. */
#include "interp.h"

#include "passes.h"
#include "target.h"

#include <string.h>

/* The front end, then the pipeline through step `last` (NULL: all of it). */
static Module *compile_through(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs,
                               int ndefs, const ConstDef *sizes, int nsizes, const char *kernel,
                               const Target *target, const char *last)
{
  /* The lexer needs a NUL at src[len] (see check_request in libtilec.c). */
  char *copy = arena_alloc(a, len + 1);
  memcpy(copy, src, len);
  d->src = copy;
  d->src_len = len;
  Parser p = {.arena = a, .diags = d};
  parse_source(&p, copy, len);
  if (d->nerrors)
    return NULL;
  Module *m = sema_build(a, d, &p.kernels, defs, ndefs, sizes, nsizes, kernel, target);
  if (!m)
    return NULL;
  PassContext pc = {.arena = a, .diags = d, .target = target ? target : target_default()};
  if (last)
    return run_pipeline_through(&pc, m, last) ? m : NULL;
  return run_pipeline(&pc, m, NULL, NULL) ? m : NULL;
}

Module *interp_compile(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs, int ndefs,
                       const char *kernel)
{
  return compile_through(a, d, src, len, defs, ndefs, NULL, 0, kernel, NULL, "specialize");
}

Module *interp_compile_thread(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs,
                              int ndefs, const char *kernel, const Target *target)
{
  return compile_through(a, d, src, len, defs, ndefs, NULL, 0, kernel, target, NULL);
}

Module *interp_compile_at(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs, int ndefs,
                          const ConstDef *sizes, int nsizes, const char *kernel, const Target *target,
                          bool thread)
{
  return compile_through(a, d, src, len, defs, ndefs, sizes, nsizes, kernel, target,
                         thread ? NULL : "specialize");
}

ConstDef *interp_launch_sizes(Arena *a, const Kernel *k, const InterpArg *args, int nargs, int *n)
{
  ConstDef *sizes = ARENA_ARRAY(a, ConstDef, k->nparams + 1);
  *n = 0;
  for (int p = 0; p < k->nparams; p++) {
    const Var *v = k->params[p].is_buffer ? NULL : &k->vars[k->params[p].index];
    if (!v || v->kind != VAR_SIZE)
      continue;
    for (int i = 0; i < nargs; i++)
      if (args[i].name && !strcmp(args[i].name, v->name)) {
        sizes[*n].name = v->name;
        sizes[*n].value = arena_printf(a, "%lld", (long long)args[i].i);
        (*n)++;
        break;
      }
  }
  return sizes;
}

Kernel *interp_find_kernel(const Module *m, const char *name)
{
  for (int i = 0; m && i < m->nkernels; i++)
    if (!strcmp(m->kernels[i]->name, name))
      return m->kernels[i];
  return NULL;
}
