/* libtilec.c: the compiler library's entry point.  Source -> tokens -> AST ->
 * tile IR -> passes -> LLVM -> PTX, stopping at whatever --emit asks for. */
#include "tilec.h"
#include "libtilec_internal.h"

#include "codegen.h"
#include "emit_header.h"
#include "fe.h"
#include "file.h" /* runtime/file.h: the one whole-file reader */
#include "parse.h"
#include "passes.h"
#include "report.h"
#include "target.h"
#include "tilec_build_id.h" /* TILEC_BUILD_ID: generated from the compiler's sources */
#include "tilec_runtime.h"  /* the tilec-meta parser */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tilec_result {
  Arena *arena;
  char *output;
  char *dump;
  char *diag_text;
  char *remark_text; /* DIAG_REMARK, rendered; not among diags */
  tilec_diagnostic *diags;
  int ndiags;
  tilec_kernel *kernels;        /* in the arena */
  int nkernels;
  tilec_kernel_report *reports; /* TILEC_EMIT_REPORT, in the arena */
  int nreports;
};

int tilec_arch_supported(const char *arch) { return target_find(arch) != NULL; }

const char *tilec_version(void) { return TILEC_VERSION; }

const char *tilec_build_id(void) { return TILEC_BUILD_ID; }

/* The kernels' signatures, read back from the metadata block codegen put in
 * front of the PTX (the same strict parser the runtime uses), copied into the
 * result's arena. */
static void collect_kernels(tilec_result *r, const tl_meta *meta)
{
  int n = tl_meta_kernel_count(meta);
  r->kernels = ARENA_ARRAY(r->arena, tilec_kernel, n + 1);
  for (int i = 0; i < n; i++) {
    const tl_kernel_info *k = tl_meta_kernel(meta, i);
    tilec_kernel *out = &r->kernels[i];
    out->name = arena_strdup(r->arena, k->name);
    out->threads = k->threads;
    out->smem = k->smem;
    out->nparams = k->nparams;
    out->nargs = k->nargs;
    tilec_param *params = ARENA_ARRAY(r->arena, tilec_param, k->nparams + 1);
    for (int j = 0; j < k->nparams; j++) {
      const tl_param *p = &k->params[j];
      params[j].kind = p->kind == TL_PARAM_TENSOR    ? TILEC_PARAM_TENSOR
                       : p->kind == TL_PARAM_SCALAR  ? TILEC_PARAM_SCALAR
                       : p->kind == TL_PARAM_TMAP    ? TILEC_PARAM_TMAP
                       : p->kind == TL_PARAM_TMAP_OK ? TILEC_PARAM_TMAP_OK
                                                     : TILEC_PARAM_SIZE;
      params[j].name = arena_strdup(r->arena, p->name);
      params[j].dtype = arena_strdup(r->arena, tl_dtype_name(p->dtype));
      params[j].rank = p->rank;
      const char **dims = ARENA_ARRAY(r->arena, const char *, p->rank + 1);
      for (int d = 0; d < p->rank; d++)
        dims[d] = p->dims[d].size_param >= 0 ? arena_strdup(r->arena, k->params[p->dims[d].size_param].name)
                                             : arena_printf(r->arena, "%lld", (long long)p->dims[d].extent);
      params[j].dims = p->rank ? dims : NULL;
    }
    out->params = params;
    for (int axis = 0; axis < 3; axis++)
      out->grid[axis] = arena_strdup(r->arena, k->grid_text[axis]);
  }
  r->nkernels = n;
}

/* "tilec --emit=header --arch=sm_90a -O3 -D BLOCK=8 --kernel k FILE", for the
 * generated header's banner. */
static char *command_line(Arena *a, const tilec_options *opt, const char *arch, int opt_level)
{
  StrBuf sb = {0};
  sb_printf(&sb, "tilec %s --emit=header --arch=%s -O%d", TILEC_VERSION, arch, opt_level);
  for (int i = 0; opt && i < opt->ndefines; i++)
    sb_printf(&sb, " -D %s=%s", opt->defines[i].name, opt->defines[i].value);
  if (opt && opt->kernel)
    sb_printf(&sb, " --kernel %s", opt->kernel);
  for (int i = 0; opt && i < opt->nsizes; i++)
    sb_printf(&sb, "%s%s=%s", i ? "," : " --size ", opt->sizes[i].name, opt->sizes[i].value);
  for (int b = 0; opt && opt->buckets && b < opt->nbuckets; b++)
    for (int i = 0; i < opt->buckets[b].nsizes; i++)
      sb_printf(&sb, "%s%s=%s", i ? "," : " --bucket ", opt->buckets[b].sizes[i].name,
                opt->buckets[b].sizes[i].value);
  sb_printf(&sb, " %s", opt && opt->filename ? opt->filename : "<input>");
  char *s = arena_strdup(a, sb.data);
  free(sb.data);
  return s;
}

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
  StrBuf rb = {0};
  diag_render_remarks(d, &rb);
  free(r->remark_text);
  r->remark_text = rb.data ? sb_take(&rb) : NULL;
  int n = 0;
  for (const Diag *g = d->first; g; g = g->next)
    n++;
  r->diags = ARENA_ARRAY(r->arena, tilec_diagnostic, n + 1);
  for (const Diag *g = d->first; g; g = g->next)
    if (g->level != DIAG_REMARK)
      r->diags[r->ndiags++] = (tilec_diagnostic){(int)g->level, d->filename, g->loc.line, g->loc.col,
                                                 g->message};
}

/* An empty result and the diagnostics that will fill it, named after filename. */
static tilec_result *result_new(const char *filename, Diags *d)
{
  tilec_result *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->arena = arena_new();
  *d = (Diags){0};
  d->arena = r->arena;
  d->filename = arena_strdup(r->arena, filename ? filename : "<input>");
  return r;
}


/* What tilec_compile was asked, checked, with the defaults filled in. */
typedef struct {
  const char *src; /* a copy with a NUL at src[len] */
  size_t len;
  const char *arch;
  const Target *target;
  int opt_level;
  ConstDef *defs;
  int ndefs;
  ConstDef *sizes;
  int nsizes;
  tilec_emit emit;
  const char *kernel;
  const char *dump_after;
  bool line_info;
  bool tma_only;
  const char *filename;
  int64_t num_sms; /* --emit=report: the multiprocessor count grid(...) is evaluated at (-1: none) */
} Request;

/* A list of NAME=VALUE options (defines, sizes), checked and copied into the arena; false with an
 * error naming `what` for a bad list or entry. */
static bool name_values(tilec_result *r, Diags *d, const tilec_define *list, int n, const char *what,
                        ConstDef **out, int *nout)
{
  if (n < 0 || (n && !list)) {
    error_at(d, NO_LOC, "bad list of %ss", what);
    return false;
  }
  *out = ARENA_ARRAY(r->arena, ConstDef, n + 1);
  *nout = n;
  for (int i = 0; i < n; i++) {
    if (!list[i].name || !list[i].value || !*list[i].name) {
      error_at(d, NO_LOC, "%s %d has no name or no value", what, i);
      return false;
    }
    (*out)[i].name = list[i].name;
    (*out)[i].value = list[i].value;
  }
  return true;
}

/* Checks the arguments, in the order their errors are reported: TILEC_OK, or
 * the status with one diagnostic in d. */
static tilec_status check_request(tilec_result *r, Diags *d, const char *src, size_t len,
                                  const tilec_options *opt, unsigned flags, Request *rq)
{
  *rq = (Request){.arch = opt && opt->arch ? opt->arch : target_default()->name,
                  .opt_level = opt ? opt->opt_level : 3,
                  .emit = opt ? opt->emit : TILEC_EMIT_PTX,
                  .kernel = opt ? opt->kernel : NULL,
                  .dump_after = opt ? opt->dump_after : NULL,
                  .line_info = opt && opt->line_info,
                  .tma_only = (flags & TILEC_COMPILE_TMA_ONLY) != 0,
                  .filename = opt && opt->filename ? opt->filename : NULL};
  if (!src && len) {
    error_at(d, NO_LOC, "no source text given");
    return TILEC_ERR_INVALID_ARGUMENT;
  }
  if (!src)
    src = "";
  if (len > TILEC_MAX_SOURCE_BYTES) {
    d->src = NULL;
    d->src_len = 0;
    error_at(d, NO_LOC, "source is larger than %zu bytes", TILEC_MAX_SOURCE_BYTES);
    return TILEC_ERR_SOURCE;
  }
  /* The lexer's end-of-input check (re2c:eof) fires on a NUL byte, and only
   * then compares with the limit: it needs a NUL at src[len].  The caller's
   * buffer need not have one, so lex a terminated copy (a memcpy of a few
   * kilobytes, and diagnostics quote the same bytes). */
  char *copy = arena_alloc(r->arena, len + 1);
  memcpy(copy, src, len);
  copy[len] = 0;
  rq->src = d->src = copy;
  rq->len = len;
  rq->target = target_find(rq->arch);
  if (!rq->target) {
    char names[128];
    error_at(d, NO_LOC, "unknown target '%s'; expected %s", rq->arch,
             target_list(names, sizeof names, " or "));
    return TILEC_ERR_INVALID_ARGUMENT;
  }
  if (rq->opt_level < 0 || rq->opt_level > 3) {
    error_at(d, NO_LOC, "optimization level %d is out of range 0..3", rq->opt_level);
    return TILEC_ERR_INVALID_ARGUMENT;
  }
  if (rq->dump_after && !pass_name_valid(rq->dump_after)) {
    error_at(d, NO_LOC, "unknown pass '%s' for dump-after", rq->dump_after);
    return TILEC_ERR_INVALID_ARGUMENT;
  }
  if (!name_values(r, d, opt ? opt->defines : NULL, opt ? opt->ndefines : 0, "define", &rq->defs,
                   &rq->ndefs) ||
      !name_values(r, d, opt ? opt->sizes : NULL, opt ? opt->nsizes : 0, "size", &rq->sizes, &rq->nsizes))
    return TILEC_ERR_INVALID_ARGUMENT;
  if ((int)rq->emit < TILEC_EMIT_PTX || (int)rq->emit > TILEC_EMIT_REPORT) {
    error_at(d, NO_LOC, "unknown emit kind %d", (int)rq->emit);
    return TILEC_ERR_INVALID_ARGUMENT;
  }
  if (rq->tma_only && rq->emit == TILEC_EMIT_HEADER) {
    error_at(d, NO_LOC,
             "--tma-only does not go with --emit=header: its launchers run a kernel without "
             "tensor maps (tmap_ok = 0) when they cannot encode one");
    return TILEC_ERR_INVALID_ARGUMENT;
  }
  rq->num_sms = -1;
  if (rq->emit == TILEC_EMIT_REPORT) {
    /* the report takes the device's multiprocessor count as one more size, num_sms (a name no
     * size can have: it is the language's), and gives the others to sema */
    int n = 0;
    for (int i = 0; i < rq->nsizes; i++) {
      if (strcmp(rq->sizes[i].name, "num_sms")) {
        rq->sizes[n++] = rq->sizes[i];
        continue;
      }
      char *end = NULL;
      errno = 0;
      long long v = strtoll(rq->sizes[i].value, &end, 0);
      if (errno || end == rq->sizes[i].value || *end || v < 1 || v > 65535) {
        error_at(d, NO_LOC, "num_sms is a multiprocessor count from 1 to 65535, got '%s'",
                 rq->sizes[i].value);
        return TILEC_ERR_INVALID_ARGUMENT;
      }
      rq->num_sms = v;
    }
    rq->nsizes = n;
  }
  return TILEC_OK;
}

/* The AST to thread-level tile IR: sema, then the pass pipeline (the IR
 * after each pass to *dump_to, and for --emit=tir the frontend's too).  NULL
 * after a user error. */
static Module *lower(tilec_result *r, Diags *d, const Request *rq, Parser *p, StrBuf *text, StrBuf *dump)
{
  Module *m = sema_build(r->arena, d, &p->kernels, rq->defs, rq->ndefs, rq->sizes, rq->nsizes, rq->kernel,
                         rq->target);
  if (!m)
    return NULL;
  PassContext pc = {.arena = r->arena, .diags = d, .target = rq->target, .tma_only = rq->tma_only};
  const bool tir = rq->emit == TILEC_EMIT_TIR;
  if (tir) {
    sb_puts(text, "// ---- from the frontend\n");
    ir_print_module(text, m);
  }
  if (!run_pipeline(&pc, m, tir ? "groups" : rq->dump_after, tir ? text : dump))
    return NULL;
  return m;
}

/* Do two compilations give every kernel the same launch constants? */
static bool same_variant(const tl_meta *a, const tl_meta *b)
{
  int n = tl_meta_kernel_count(a);
  if (n != tl_meta_kernel_count(b))
    return false;
  for (int i = 0; i < n; i++) {
    const tl_kernel_info *x = tl_meta_kernel(a, i), *y = tl_meta_kernel(b, i);
    if (x->nconsts != y->nconsts)
      return false;
    for (int c = 0; c < x->nconsts; c++)
      if (x->consts[c].value != y->consts[c].value)
        return false;
  }
  return true;
}

/* --emit=header: the variant for rq's sizes (ptx, meta) and one per bucket whose launch
 * constants differ from every earlier one's, each compiled as this request with the bucket's
 * sizes, into one header. */
static tilec_status header_output(tilec_result *r, Diags *d, const Request *rq, const tilec_options *opt,
                                  const char *ptx, tl_meta *meta, StrBuf *text)
{
  int nb = opt && opt->buckets ? opt->nbuckets : 0;
  if (nb < 0 || nb > TILEC_MAX_BUCKETS) {
    error_at(d, NO_LOC, "%d buckets: a header takes 0 to %d", nb, TILEC_MAX_BUCKETS);
    return TILEC_ERR_INVALID_ARGUMENT;
  }
  const char *ptxs[TILEC_MAX_BUCKETS + 1] = {ptx};
  tl_meta *metas[TILEC_MAX_BUCKETS + 1] = {meta};
  tilec_result *subs[TILEC_MAX_BUCKETS] = {0};
  int nv = 1;
  tilec_status status = TILEC_OK;
  char why[1024] = "";
  for (int b = 0; b < nb && status == TILEC_OK; b++) {
    tilec_options o = *opt;
    o.sizes = opt->buckets[b].sizes;
    o.nsizes = opt->buckets[b].nsizes;
    o.emit = TILEC_EMIT_PTX;
    o.buckets = NULL;
    o.nbuckets = 0;
    o.dump_after = NULL;
    status = tilec_compile(rq->src, rq->len, &o, &subs[b]);
    if (status != TILEC_OK) {
      tilec_diagnostic first = subs[b] && tilec_result_num_diagnostics(subs[b])
                                   ? tilec_result_diagnostic(subs[b], 0)
                                   : (tilec_diagnostic){.message = "it did not compile"};
      error_at(d, NO_LOC, "bucket %d (--bucket): %s", b + 1, first.message);
      break;
    }
    const char *out = tilec_result_output(subs[b]);
    tl_meta *m = NULL;
    if (tl_meta_parse(out, strlen(out), &m, why, sizeof why) != TL_OK) {
      error_at(d, NO_LOC, "internal error: bucket %d's metadata does not parse: %s", b + 1, why);
      status = TILEC_ERR_SOURCE;
      break;
    }
    bool seen = false;
    for (int v = 0; v < nv && !seen; v++)
      seen = same_variant(metas[v], m);
    if (seen) {
      tl_meta_free(m);
      continue;
    }
    ptxs[nv] = out;
    metas[nv++] = m;
  }
  if (status == TILEC_OK) {
    const char *cmd = command_line(r->arena, opt, rq->arch, rq->opt_level);
    char *header = emit_c_header(ptxs, (const tl_meta *const *)metas, nv, d->filename, cmd, why, sizeof why);
    if (header) {
      sb_puts(text, header);
    } else {
      error_at(d, NO_LOC, "cannot write the C header: %s", why);
      status = TILEC_ERR_SOURCE;
    }
    free(header);
  }
  for (int v = 1; v < nv; v++)
    tl_meta_free(metas[v]);
  for (int b = 0; b < nb; b++)
    tilec_result_free(subs[b]);
  return status;
}

/* The PTX (with its metadata block) as the output, or the C header made from
 * it; the kernels' signatures into the result either way. */
static tilec_status ptx_output(tilec_result *r, Diags *d, const Request *rq, const tilec_options *opt,
                               const char *ptx, StrBuf *text)
{
  tilec_status status = TILEC_ERR_SOURCE;
  char why[1024] = "";
  tl_meta *meta = NULL;
  if (tl_meta_parse(ptx, strlen(ptx), &meta, why, sizeof why) != TL_OK) {
    /* codegen wrote the block: not parsing it back is our bug, but the
     * library reports rather than aborts */
    error_at(d, NO_LOC, "internal error: the PTX's metadata does not parse: %s", why);
  } else {
    collect_kernels(r, meta);
    if (rq->emit == TILEC_EMIT_PTX) {
      sb_puts(text, ptx);
      status = TILEC_OK;
    } else {
      status = header_output(r, d, rq, opt, ptx, meta, text);
    }
  }
  tl_meta_free(meta);
  return status;
}

/* Thread-level IR to LLVM IR, PTX or the C header. */
static tilec_status generate(tilec_result *r, Diags *d, const Request *rq, const tilec_options *opt,
                             const Module *m, StrBuf *text)
{
  CodegenOptions co = {rq->target, rq->opt_level, rq->line_info, rq->filename};
  char *llvm = NULL, *ptx = NULL;
  const bool want_ptx = rq->emit == TILEC_EMIT_PTX || rq->emit == TILEC_EMIT_HEADER;
  tilec_status status = TILEC_ERR_SOURCE;
  if (codegen_module(m, &co, d, rq->emit == TILEC_EMIT_LLVM ? &llvm : NULL, want_ptx ? &ptx : NULL)) {
    if (want_ptx) {
      status = ptx_output(r, d, rq, opt, ptx, text);
    } else {
      sb_puts(text, llvm);
      status = TILEC_OK;
    }
  }
  free(llvm);
  free(ptx);
  return status;
}

/* --emit=report: the kernels after the whole pipeline (m, diagnostics reported) and once more
 * through "layout" (the tile operations with their fragments' layouts; no diagnostic twice), each
 * kernel's report into *text and its numbers into the result. */
static tilec_status report_output(tilec_result *r, Diags *d, const Request *rq, const Module *m, StrBuf *text)
{
  Diags quiet = {.arena = r->arena, .filename = d->filename, .src = d->src, .src_len = d->src_len};
  Parser p = {.arena = r->arena, .diags = &quiet};
  parse_source(&p, rq->src, rq->len);
  Module *tile = quiet.nerrors ? NULL
                               : sema_build(r->arena, &quiet, &p.kernels, rq->defs, rq->ndefs, rq->sizes,
                                            rq->nsizes, rq->kernel, rq->target);
  PassContext pc = {.arena = r->arena, .diags = &quiet, .target = rq->target, .tma_only = rq->tma_only};
  if (!tile || !run_pipeline_through(&pc, tile, "layout") || tile->nkernels != m->nkernels) {
    error_at(d, NO_LOC, "internal error: the kernels do not compile a second time for the report");
    return TILEC_ERR_SOURCE;
  }
  const char **names = ARENA_ARRAY(r->arena, const char *, rq->nsizes + 1);
  int64_t *values = ARENA_ARRAY(r->arena, int64_t, rq->nsizes + 1);
  for (int i = 0; i < rq->nsizes; i++) { /* sema checked every value */
    names[i] = rq->sizes[i].name;
    values[i] = strtoll(rq->sizes[i].value, NULL, 0);
  }
  ReportSizes rs = {names, values, rq->nsizes, rq->num_sms};
  r->reports = ARENA_ARRAY(r->arena, tilec_kernel_report, m->nkernels + 1);
  for (int i = 0; i < m->nkernels; i++) {
    ReportNumbers n;
    if (i)
      sb_puts(text, "\n");
    report_kernel(text, r->arena, tile->kernels[i], m->kernels[i], rq->target, &rs, &n);
    double unknown = n.known ? 0 : -1;
    r->reports[r->nreports++] = (tilec_kernel_report){m->kernels[i]->name,
                                                      n.known,
                                                      n.known ? n.blocks : -1,
                                                      n.known ? n.read_bytes : unknown,
                                                      n.known ? n.write_bytes : unknown,
                                                      n.known ? n.mma_flops : unknown,
                                                      n.known ? n.other_flops : unknown,
                                                      n.threads,
                                                      (unsigned long long)n.smem_bytes};
  }
  /* The compiler's remarks on the choices it made (what -Rpass-missed=wgmma prints), by source line. */
  bool head = false;
  for (const Diag *g = d->first; g; g = g->next) {
    if (g->level != DIAG_REMARK)
      continue;
    if (!head)
      sb_puts(text, "\nremarks (the compiler's choices; -Rpass-missed=wgmma prints the same):\n");
    head = true;
    sb_printf(text, "  line %d:%d: %s\n", g->loc.line, g->loc.col, g->message);
  }
  return TILEC_OK;
}

/* Source -> tokens -> AST -> tile IR -> passes -> LLVM -> PTX, stopping at
 * rq->emit: its text into *text, the --dump-after text into *dump. */
static tilec_status run_stages(tilec_result *r, Diags *d, const Request *rq, const tilec_options *opt,
                               StrBuf *text, StrBuf *dump)
{
  if (rq->emit == TILEC_EMIT_TOKENS) {
    emit_tokens(rq->src, rq->len, d, text);
    return d->nerrors ? TILEC_ERR_SOURCE : TILEC_OK;
  }
  Parser p = {0};
  p.arena = r->arena;
  p.diags = d;
  parse_source(&p, rq->src, rq->len);
  if (d->nerrors)
    return TILEC_ERR_SOURCE;
  if (rq->emit == TILEC_EMIT_AST) {
    ast_print(text, &p.kernels);
    return TILEC_OK;
  }
  Module *m = lower(r, d, rq, &p, text, dump);
  if (!m)
    return TILEC_ERR_SOURCE;
  if (rq->emit == TILEC_EMIT_TIR)
    return TILEC_OK;
  if (rq->emit == TILEC_EMIT_REPORT)
    return report_output(r, d, rq, m, text);
  return generate(r, d, rq, opt, m, text);
}

tilec_status tilec_compile(const char *src, size_t len, const tilec_options *opt, tilec_result **out)
{
  return tilec_compile_flags(src, len, opt, 0, out);
}

tilec_status tilec_compile_flags(const char *src, size_t len, const tilec_options *opt, unsigned flags,
                                 tilec_result **out)
{
  if (!out)
    return TILEC_ERR_INVALID_ARGUMENT;
  *out = NULL;
  Diags d;
  tilec_result *r = result_new(opt ? opt->filename : NULL, &d);
  if (!r)
    return TILEC_ERR_INVALID_ARGUMENT;
  *out = r;
  d.src = src;
  d.src_len = len;
  Request rq;
  tilec_status status = check_request(r, &d, src, len, opt, flags, &rq);
  if (status == TILEC_OK) {
    StrBuf text = {0}, dump = {0};
    status = run_stages(r, &d, &rq, opt, &text, &dump);
    r->output = status == TILEC_OK ? sb_take(&text) : NULL;
    if (status != TILEC_OK)
      r->nkernels = r->nreports = 0;
    free(text.data);
    r->dump = sb_take(&dump);
  }
  collect(r, &d);
  if (!r->dump)
    r->dump = sb_take(&(StrBuf){0});
  return status;
}

tilec_status tilec_compile_file(const char *path, const tilec_options *opt, tilec_result **out)
{
  if (!out)
    return TILEC_ERR_INVALID_ARGUMENT;
  *out = NULL;
  tilec_options o = {0};
  if (opt)
    o = *opt;
  else
    o.opt_level = 3;
  if (!o.filename)
    o.filename = path;
  char *src = NULL;
  size_t len = 0;
  int err = EINVAL;
  tl_read_status rs = path ? tl_read_file(path, TILEC_MAX_SOURCE_BYTES, &src, &len, &err)
                           : TL_READ_CANNOT_OPEN;
  if (rs != TL_READ_OK) {
    /* a result with the one diagnostic, as for any other failure */
    Diags d;
    tilec_result *r = result_new(o.filename, &d);
    if (!r)
      return TILEC_ERR_INVALID_ARGUMENT;
    if (rs == TL_READ_TOO_LARGE)
      error_at(&d, NO_LOC, "cannot read '%s': source is larger than %zu bytes", path, TILEC_MAX_SOURCE_BYTES);
    else
      error_at(&d, NO_LOC, "cannot read '%s': %s", path ? path : "(null)", strerror(err));
    collect(r, &d);
    r->dump = sb_take(&(StrBuf){0});
    *out = r;
    return path ? TILEC_ERR_IO : TILEC_ERR_INVALID_ARGUMENT;
  }
  tilec_status st = tilec_compile(src, len, &o, out);
  free(src);
  return st;
}

int tilec_result_num_kernels(const tilec_result *r) { return r ? r->nkernels : 0; }

const tilec_kernel *tilec_result_kernel(const tilec_result *r, int i)
{
  if (!r || i < 0 || i >= r->nkernels)
    return NULL;
  return &r->kernels[i];
}

int tilec_result_num_reports(const tilec_result *r) { return r ? r->nreports : 0; }

const tilec_kernel_report *tilec_result_report(const tilec_result *r, int i)
{
  if (!r || i < 0 || i >= r->nreports)
    return NULL;
  return &r->reports[i];
}

const char *tilec_result_output(const tilec_result *r) { return r ? r->output : NULL; }
const char *tilec_result_dump(const tilec_result *r) { return r ? r->dump : NULL; }
const char *tilec_result_diagnostics_text(const tilec_result *r) { return r ? r->diag_text : NULL; }
int tilec_result_num_diagnostics(const tilec_result *r) { return r ? r->ndiags : 0; }
const char *tilec_result_remarks_text(const tilec_result *r)
{
  return r ? (r->remark_text ? r->remark_text : "") : NULL;
}

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
  free(r->remark_text);
  arena_free(r->arena);
  free(r);
}
