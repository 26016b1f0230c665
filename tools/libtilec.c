/* libtilec.c: the compiler library's entry point.  Source -> tokens -> AST ->
 * tile IR -> passes -> LLVM -> PTX, stopping at whatever --emit asks for. */
#include "tilec.h"

#include "codegen.h"
#include "fe.h"
#include "parse.h"
#include "passes.h"

#include <stdlib.h>
#include <string.h>

struct tilec_result {
	Arena *arena;
	char *output;
	char *dump;
	char *diag_text;
	tilec_diagnostic *diags;
	int ndiags;
};

static int arch_sm(const char *arch)
{
	static const struct {
		const char *name;
		int sm;
	} archs[] = {{"sm_80", 80}, {"sm_86", 86}, {"sm_89", 89}, {"sm_90", 90}, {"sm_90a", 90}};
	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
		if (!strcmp(archs[i].name, arch))
			return archs[i].sm;
	return 0;
}

int tilec_arch_supported(const char *arch) { return arch && arch_sm(arch) != 0; }

const char *tilec_version(void) { return TILEC_VERSION; }

static void emit_tokens(const char *src, size_t len, Diags *d, StrBuf *out)
{
	Lexer lx;
	lexer_init(&lx, src, len, d);
	for (;;) {
		Token t = lexer_next(&lx);
		if (!t.id)
			break;
		sb_printf(out, "%d:%d %s '%.*s'\n", t.loc.line, t.loc.col, token_name(t.id), t.len > 60 ? 60 : t.len,
			  t.start);
	}
}

static void collect(tilec_result *r, const Diags *d)
{
	StrBuf sb = {0};
	diag_render(d, &sb);
	r->diag_text = sb_take(&sb);
	int n = 0;
	for (const Diag *g = d->first; g; g = g->next)
		n++;
	r->diags = ARENA_ARRAY(r->arena, tilec_diagnostic, n + 1);
	for (const Diag *g = d->first; g; g = g->next)
		r->diags[r->ndiags++] = (tilec_diagnostic){(int)g->level, d->filename, g->loc.line, g->loc.col, g->message};
}

tilec_status tilec_compile(const char *src, size_t len, const tilec_options *opt, tilec_result **out)
{
	if (!out)
		return TILEC_ERR_INVALID_ARGUMENT;
	*out = NULL;
	tilec_result *r = calloc(1, sizeof *r);
	if (!r)
		return TILEC_ERR_INVALID_ARGUMENT;
	r->arena = arena_new();
	*out = r;
	Diags d = {0};
	d.arena = r->arena;
	d.filename = opt && opt->filename ? arena_strdup(r->arena, opt->filename) : "<input>";
	d.src = src;
	d.src_len = len;
	tilec_status status = TILEC_ERR_SOURCE;
	const char *arch = opt && opt->arch ? opt->arch : "sm_90a";
	if (!src && len) {
		error_at(&d, NO_LOC, "no source text given");
		status = TILEC_ERR_INVALID_ARGUMENT;
		goto done;
	}
	if (!src)
		src = "";
	if (!arch_sm(arch)) {
		error_at(&d, NO_LOC, "unknown target '%s'; expected sm_80, sm_86, sm_89, sm_90 or sm_90a", arch);
		status = TILEC_ERR_INVALID_ARGUMENT;
		goto done;
	}
	int opt_level = opt ? opt->opt_level : 3;
	if (opt_level < 0 || opt_level > 3) {
		error_at(&d, NO_LOC, "optimization level %d is out of range 0..3", opt_level);
		status = TILEC_ERR_INVALID_ARGUMENT;
		goto done;
	}
	if (opt && opt->dump_after && !pass_name_valid(opt->dump_after)) {
		error_at(&d, NO_LOC, "unknown pass '%s' for dump-after", opt->dump_after);
		status = TILEC_ERR_INVALID_ARGUMENT;
		goto done;
	}
	ConstDef *defs = NULL;
	int ndefs = opt ? opt->ndefines : 0;
	if (ndefs < 0 || (ndefs && !opt->defines)) {
		error_at(&d, NO_LOC, "bad list of defines");
		status = TILEC_ERR_INVALID_ARGUMENT;
		goto done;
	}
	defs = ARENA_ARRAY(r->arena, ConstDef, ndefs + 1);
	for (int i = 0; i < ndefs; i++) {
		if (!opt->defines[i].name || !opt->defines[i].value || !*opt->defines[i].name) {
			error_at(&d, NO_LOC, "define %d has no name or no value", i);
			status = TILEC_ERR_INVALID_ARGUMENT;
			goto done;
		}
		defs[i].name = opt->defines[i].name;
		defs[i].value = opt->defines[i].value;
	}
	tilec_emit emit = opt ? opt->emit : TILEC_EMIT_PTX;
	StrBuf text = {0}, dump = {0};
	if (emit == TILEC_EMIT_TOKENS) {
		emit_tokens(src, len, &d, &text);
		if (!d.nerrors)
			status = TILEC_OK;
		goto finish;
	}
	Parser p = {0};
	p.arena = r->arena;
	p.diags = &d;
	parse_source(&p, src, len);
	if (d.nerrors)
		goto finish;
	if (emit == TILEC_EMIT_AST) {
		ast_print(&text, &p.kernels);
		status = TILEC_OK;
		goto finish;
	}
	Module *m = sema_build(r->arena, &d, &p.kernels, defs, ndefs, opt ? opt->kernel : NULL);
	if (!m)
		goto finish;
	PassContext pc = {r->arena, &d, arch_sm(arch)};
	const char *dump_after = emit == TILEC_EMIT_TIR ? "all" : opt ? opt->dump_after : NULL;
	StrBuf *dump_to = emit == TILEC_EMIT_TIR ? &text : &dump;
	if (emit == TILEC_EMIT_TIR) {
		sb_puts(&text, "// ---- from the frontend\n");
		ir_print_module(&text, m);
	}
	if (!run_pipeline(&pc, m, dump_after, dump_to))
		goto finish;
	if (emit == TILEC_EMIT_TIR) {
		status = TILEC_OK;
		goto finish;
	}
	CodegenOptions co = {arch, opt_level};
	char *llvm = NULL, *ptx = NULL;
	if (codegen_module(m, &co, &d, emit == TILEC_EMIT_LLVM ? &llvm : NULL, emit == TILEC_EMIT_PTX ? &ptx : NULL)) {
		sb_puts(&text, emit == TILEC_EMIT_LLVM ? llvm : ptx);
		status = TILEC_OK;
	}
	free(llvm);
	free(ptx);
finish:
	r->output = status == TILEC_OK ? sb_take(&text) : NULL;
	free(text.data);
	r->dump = sb_take(&dump);
done:
	collect(r, &d);
	if (!r->dump)
		r->dump = sb_take(&(StrBuf){0});
	return status;
}

const char *tilec_result_output(const tilec_result *r) { return r ? r->output : NULL; }
const char *tilec_result_dump(const tilec_result *r) { return r ? r->dump : NULL; }
const char *tilec_result_diagnostics_text(const tilec_result *r) { return r ? r->diag_text : NULL; }
int tilec_result_num_diagnostics(const tilec_result *r) { return r ? r->ndiags : 0; }

tilec_diagnostic tilec_result_diagnostic(const tilec_result *r, int i)
{
	if (!r || i < 0 || i >= r->ndiags)
		return (tilec_diagnostic){0};
	return r->diags[i];
}

void tilec_result_free(tilec_result *r)
{
	if (!r)
		return;
	free(r->output);
	free(r->dump);
	free(r->diag_text);
	arena_free(r->arena);
	free(r);
}
