/* pipeline.c: the pass pipeline, one flat table.  Each row is a step that
 * rewrites every kernel in place; the verifier checks what the row says the IR
 * may hold once it ran.  --dump-after=NAME prints the IR after a step, or after
 * the last step of a group ("lower-tiles" is the seven lowering steps); --emit=tir
 * prints it after every group. */
#include "passes.h"

#include <string.h>

typedef struct {
  const char *name;  /* for --dump-after */
  const char *group; /* the steps of one group are consecutive rows */
  bool (*run)(PassContext *, Kernel *);
  VerifyLevel after; /* what the verifier checks once the step ran */
} Pass;

static const Pass pipeline[] = {
    {"specialize", "specialize", pass_specialize, VERIFY_TILE},
    {"layout", "layout", pass_infer_layouts, VERIFY_TILE},
    {"linearize-locals", "lower-tiles", pass_linearize_locals, VERIFY_TILE_LINEAR},
    {"stage-stores", "lower-tiles", pass_stage_stores, VERIFY_TILE_LINEAR},
    {"choose-swizzles", "lower-tiles", pass_choose_swizzles, VERIFY_TILE_LINEAR},
    {"shared-lifetimes", "lower-tiles", pass_shared_lifetimes, VERIFY_TILE_LINEAR},
    {"renumber-blocks", "lower-tiles", pass_renumber_blocks, VERIFY_TILE_LINEAR},
    {"lower-tile-ops", "lower-tiles", pass_lower_tile_ops, VERIFY_LOWERED},
    {"drop-scratch-barriers", "lower-tiles", pass_drop_scratch_barriers, VERIFY_LOWERED},
    {"fragments-to-locals", "lower-tiles", pass_fragments_to_locals, VERIFY_THREAD},
    {"fold", "lower-tiles", pass_fold, VERIFY_THREAD},
    {"plan-shared", "plan-shared", pass_plan_shared, VERIFY_THREAD},
};
enum { NPASSES = sizeof pipeline / sizeof pipeline[0] };

static bool ends_group(int p) { return p + 1 == NPASSES || strcmp(pipeline[p + 1].group, pipeline[p].group); }

int pass_count(void) { return NPASSES; }

const char *pass_name(int i, const char **group)
{
  if (i < 0 || i >= NPASSES)
    return NULL;
  if (group)
    *group = pipeline[i].group;
  return pipeline[i].name;
}

bool pass_name_valid(const char *name)
{
  if (!strcmp(name, "all") || !strcmp(name, "groups"))
    return true;
  for (int i = 0; i < NPASSES; i++)
    if (!strcmp(pipeline[i].name, name) || !strcmp(pipeline[i].group, name))
      return true;
  return false;
}

/* The heading to print after step p for dump_after, or NULL. */
static const char *dump_heading(int p, const char *dump_after)
{
  if (!dump_after)
    return NULL;
  if (!strcmp(dump_after, "all") || !strcmp(dump_after, pipeline[p].name))
    return pipeline[p].name;
  if (!strcmp(dump_after, "groups") || !strcmp(dump_after, pipeline[p].group))
    return ends_group(p) ? pipeline[p].group : NULL;
  return NULL;
}

/* The first nsteps steps of the table, over every kernel. */
static bool run_steps(PassContext *pc, Module *m, int nsteps, const char *dump_after, StrBuf *dump)
{
  const char *err = NULL;
  for (int ki = 0; ki < m->nkernels; ki++)
    if ((err = ir_verify(pc->arena, m->kernels[ki], VERIFY_TILE)))
      DIE("IR from the frontend is malformed in kernel '%s': %s", m->kernels[ki]->name, err);
  for (int p = 0; p < nsteps; p++) {
    bool ok = true;
    for (int ki = 0; ki < m->nkernels; ki++) {
      Kernel *k = m->kernels[ki];
      if (!pipeline[p].run(pc, k)) {
        ok = false;
        continue;
      }
      if ((err = ir_verify(pc->arena, k, pipeline[p].after)))
        DIE("after pass '%s', kernel '%s': %s", pipeline[p].name, k->name, err);
    }
    if (!ok || pc->diags->nerrors)
      return false;
    const char *heading = dump_heading(p, dump_after);
    if (heading) {
      sb_printf(dump, "// ---- after %s\n", heading);
      ir_print_module(dump, m);
    }
  }
  return true;
}

bool run_pipeline(PassContext *pc, Module *m, const char *dump_after, StrBuf *dump)
{
  return run_steps(pc, m, NPASSES, dump_after, dump);
}

bool run_pipeline_through(PassContext *pc, Module *m, const char *last)
{
  for (int p = 0; p < NPASSES; p++)
    if (!strcmp(pipeline[p].name, last))
      return run_steps(pc, m, p + 1, NULL, NULL);
  DIE("no pipeline step named '%s'", last);
}
