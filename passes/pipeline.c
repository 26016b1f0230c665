/* pipeline.c: the pass pipeline, one flat list. */
#include "passes.h"

#include <string.h>

typedef struct {
	const char *name;
	bool (*run)(PassContext *, Kernel *);
	VerifyLevel after; /* what the verifier checks once the pass ran */
} Pass;

static const Pass pipeline[] = {
	{"specialize", pass_specialize, VERIFY_TILE},
	{"layout", pass_infer_layouts, VERIFY_TILE},
	{"lower-tiles", pass_lower_tiles, VERIFY_THREAD},
	{"plan-shared", pass_plan_shared, VERIFY_THREAD},
};

const char *const pass_names[] = {"specialize", "layout", "lower-tiles", "plan-shared", NULL};

bool pass_name_valid(const char *name)
{
	if (!strcmp(name, "all"))
		return true;
	for (int i = 0; pass_names[i]; i++)
		if (!strcmp(pass_names[i], name))
			return true;
	return false;
}

bool run_pipeline(PassContext *pc, Module *m, const char *dump_after, StrBuf *dump)
{
	const char *err = NULL;
	for (int ki = 0; ki < m->nkernels; ki++)
		if ((err = ir_verify(pc->arena, m->kernels[ki], VERIFY_TILE)))
			DIE("IR from the frontend is malformed in kernel '%s': %s", m->kernels[ki]->name, err);
	for (size_t p = 0; p < sizeof pipeline / sizeof pipeline[0]; p++) {
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
		if (dump_after && (!strcmp(dump_after, "all") || !strcmp(dump_after, pipeline[p].name))) {
			sb_printf(dump, "// ---- after %s\n", pipeline[p].name);
			ir_print_module(dump, m);
		}
	}
	return true;
}
