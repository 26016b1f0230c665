/* compile.c: .tl source -> specialized tile IR for the interpreter.  The same
 * front end as tilec_compile (compiler/libtilec.c), then only the pipeline's
 * first step: what comes after it (layouts, lowering) is the thread level's
 * business, and the tile level must see the operations as the user wrote them. */
#include "interp.h"

#include "passes.h"
#include "target.h"

#include <string.h>

Module *interp_compile(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs, int ndefs,
                       const char *kernel)
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
  Module *m = sema_build(a, d, &p.kernels, defs, ndefs, kernel);
  if (!m)
    return NULL;
  PassContext pc = {.arena = a, .diags = d, .target = target_default()};
  return run_pipeline_through(&pc, m, "specialize") ? m : NULL;
}

Kernel *interp_find_kernel(const Module *m, const char *name)
{
  for (int i = 0; m && i < m->nkernels; i++)
    if (!strcmp(m->kernels[i]->name, name))
      return m->kernels[i];
  return NULL;
}
