/* fuzz_compile.c: libFuzzer target on the compiler library, tilec_compile (include/tilec.h).
 *
 * An input is three option bytes and then the source:
 *
 *   byte 0   arch   ('0' + i) mod 5:  0 sm_80  1 sm_86  2 sm_89  3 sm_90  4 sm_90a
 *   byte 1   -O     ('0' + i) mod 4
 *   byte 2   emit   ('0' + i) mod 8:  0 ptx  1 llvm  2 tir  3 ast  4 tokens  5 header  6 ptx  7 report
 *   3..      .tl source, given to tilec_compile as is (not NUL-terminated)
 *
 * so "430kernel k..." is sm_90a -O3 PTX.  Comment lines of the source that start with "//-" are
 * also options (comments to the compiler, so the source compiles the same with the CLI):
 *
 *   //-D NAME=VALUE     a define (at most 8)
 *   //-k NAME           compile only this kernel
 *   //-dump PASS        dump_after (a pass name or "all")
 *   //-tma-only         tilec --tma-only (tilec_compile_flags, TILEC_COMPILE_TMA_ONLY)
 *
 * Beyond the sanitizers, a run fails (abort) when the library breaks its own contract: a status
 * without its output or diagnostics, an internal error or an LLVM failure reported as a
 * diagnostic, PTX whose metadata block does not parse or names other kernels than its .entry
 * lines, a .target other than the arch asked for, a source that compiles but fails when stopped
 * at an earlier stage (TIR, AST, tokens), or, for one input in eight, compiled twice, a different
 * result.  With TILEC_FUZZ_PTX_DIR set, every PTX accepted is written there as HASH.ARCH.ptx, with
 * the input beside it as HASH.ARCH.input, for ptxas (tests/fuzz/run.sh); TILEC_FUZZ_PTX_MAX bounds
 * how many one process writes.
 * TILEC_FUZZ_VERBOSE=1 prints each input's options, status and diagnostics; TILEC_FUZZ_STATS=1,
 * at exit, how many inputs of each emit kind compiled. */
#include "tilec.h"
#include "tilec_runtime.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "directives.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void token_mutator_load_dict(const char *path); /* token_mutator.c */
void token_mutator_remember(const uint8_t *data, size_t size);

#define HEADER 3

static const char *const archs[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
static const tilec_emit emits[] = {TILEC_EMIT_PTX,    TILEC_EMIT_LLVM,   TILEC_EMIT_TIR, TILEC_EMIT_AST,
                                   TILEC_EMIT_TOKENS, TILEC_EMIT_HEADER, TILEC_EMIT_PTX, TILEC_EMIT_REPORT};
static const char *const emit_names[] = {"ptx", "llvm", "tir", "ast", "tokens", "header", "report"};

static const char *ptx_dir;
static long ptx_max = -1, ptx_written;
static int verbose;
static long runs[7], accepted[7]; /* per emit kind */

static void print_stats(void)
{
  fprintf(stderr, "fuzz_compile: accepted/run per emit kind:");
  for (int i = 0; i < 7; i++)
    fprintf(stderr, " %s %ld/%ld", emit_names[i], accepted[i], runs[i]);
  fprintf(stderr, "; PTX files written: %ld\n", ptx_written);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  for (int i = 1; i < *argc; i++)
    if (!strncmp((*argv)[i], "-dict=", 6))
      token_mutator_load_dict((*argv)[i] + 6);
  ptx_dir = getenv("TILEC_FUZZ_PTX_DIR");
  if (ptx_dir && !*ptx_dir)
    ptx_dir = NULL;
  if (getenv("TILEC_FUZZ_PTX_MAX"))
    ptx_max = atol(getenv("TILEC_FUZZ_PTX_MAX"));
  verbose = getenv("TILEC_FUZZ_VERBOSE") && atoi(getenv("TILEC_FUZZ_VERBOSE"));
  if (getenv("TILEC_FUZZ_STATS"))
    atexit(print_stats);
  return 0;
}

static _Noreturn void broken(const char *what, const tilec_result *r)
{
  fprintf(stderr, "fuzz_compile: the library broke its contract: %s\n", what);
  if (r && tilec_result_diagnostics_text(r))
    fprintf(stderr, "diagnostics:\n%s\n", tilec_result_diagnostics_text(r));
  abort();
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t fnv1a(const void *p, size_t n)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
  return h;
}

static void write_file(const char *path, const void *p, size_t n)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0)
    return; /* already there: the same PTX from another input */
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w <= 0)
      break;
    c += w;
    n -= (size_t)w;
  }
  close(fd);
}

/* For ptxas: the PTX under a name that says its arch, and the input that produced it. */
static void save_ptx(const char *ptx, const char *arch, const uint8_t *data, size_t size)
{
  if (ptx_max >= 0 && ptx_written >= ptx_max)
    return;
  char path[4096];
  uint64_t h = fnv1a(ptx, strlen(ptx));
  snprintf(path, sizeof path, "%s/%016llx.%s.input", ptx_dir, (unsigned long long)h, arch);
  if (access(path, F_OK) == 0)
    return;
  write_file(path, data, size);
  snprintf(path, sizeof path, "%s/%016llx.%s.ptx", ptx_dir, (unsigned long long)h, arch);
  write_file(path, ptx, strlen(ptx));
  ptx_written++;
}

/* Does the PTX declare ".entry NAME(" for this name? */
static int has_entry(const char *ptx, const char *name)
{
  size_t n = strlen(name);
  for (const char *p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry "))
    if (!strncmp(p + 7, name, n) && p[7 + n] == '(')
      return 1;
  return 0;
}

static void check_ptx(const tilec_result *r, const char *ptx, const char *arch)
{
  char target[32];
  snprintf(target, sizeof target, "\n.target %s\n", arch);
  if (!strstr(ptx, target))
    broken("the PTX's .target is not the arch asked for", r);
  char why[512];
  tl_meta *meta = NULL;
  if (tl_meta_parse(ptx, strlen(ptx), &meta, why, sizeof why) != TL_OK) {
    fprintf(stderr, "tl_meta_parse: %s\n", why);
    broken("the PTX's metadata does not parse", r);
  }
  int n = tl_meta_kernel_count(meta);
  if (n != tilec_result_num_kernels(r) || n < 1)
    broken("tilec_result_num_kernels disagrees with the metadata", r);
  for (int i = 0; i < n; i++) {
    const tl_kernel_info *k = tl_meta_kernel(meta, i);
    if (strcmp(k->name, tilec_result_kernel(r, i)->name))
      broken("tilec_result_kernel names another kernel than the metadata", r);
    if (!has_entry(ptx, k->name)) {
      fprintf(stderr, "kernel '%s'\n", k->name);
      broken("a kernel of the metadata has no .entry in the PTX", r);
    }
  }
  tl_meta_free(meta);
}

/* Reads everything the result offers, so that ASan sees every string and array. */
static void walk_result(const tilec_result *r, tilec_status st)
{
  const char *text = tilec_result_diagnostics_text(r);
  if (!text || !tilec_result_dump(r))
    broken("NULL diagnostics text or dump", r);
  volatile size_t sink = strlen(text) + strlen(tilec_result_dump(r));
  int nerr = 0;
  for (int i = 0; i < tilec_result_num_diagnostics(r); i++) {
    tilec_diagnostic d = tilec_result_diagnostic(r, i);
    if (!d.message || !d.file || d.severity < 0 || d.severity > 2 || d.line < 0 || d.column < 0)
      broken("a malformed diagnostic record", r);
    nerr += d.severity == 0;
    sink += strlen(d.message) + strlen(d.file);
    /* What only a bug of tilec (or LLVM) says: never the answer to a user's mistake.  Prefixes
     * only: a message may quote the user's text (a -k name), and libFuzzer feeds the strings
     * it sees compared back into the inputs. */
    if (!strncmp(d.message, "internal", 8) || !strncmp(d.message, "LLVM ", 5) ||
        !strncmp(d.message, "cannot create the NVPTX", 23))
      broken("an internal error reported as a diagnostic", r);
  }
  const char *out = tilec_result_output(r);
  if (st == TILEC_OK) {
    if (!out)
      broken("TILEC_OK without output", r);
    if (nerr)
      broken("TILEC_OK with error diagnostics", r);
    sink += strlen(out);
  } else {
    if (out)
      broken("output after an error", r);
    if (!nerr)
      broken("an error status without an error diagnostic", r);
  }
  for (int i = 0; i < tilec_result_num_kernels(r); i++) {
    const tilec_kernel *k = tilec_result_kernel(r, i);
    if (!k || !k->name || k->nargs > k->nparams || k->nargs < 0)
      broken("a malformed kernel record", r);
    sink += strlen(k->name);
    for (int a = 0; a < 3; a++)
      sink += strlen(k->grid[a]);
    for (int j = 0; j < k->nparams; j++) {
      const tilec_param *p = &k->params[j];
      sink += strlen(p->name) + strlen(p->dtype);
      for (int d = 0; d < p->rank; d++)
        sink += strlen(p->dims[d]);
    }
  }
  if (tilec_result_kernel(r, tilec_result_num_kernels(r)) || tilec_result_kernel(r, -1))
    broken("tilec_result_kernel out of range is not NULL", r);
  /* A report's records: one per kernel, figures unknown (-1) or not negative; a block has threads. */
  for (int i = 0; i < tilec_result_num_reports(r); i++) {
    const tilec_kernel_report *k = tilec_result_report(r, i);
    if (!k || !k->name || k->threads == 0 ||
        (k->known && (k->blocks < 0 || k->read_bytes < 0 || k->write_bytes < 0 || k->mma_flops < 0 ||
                      k->other_flops < 0)))
      broken("a malformed kernel report", r);
    sink += strlen(k->name);
  }
  if (tilec_result_report(r, tilec_result_num_reports(r)) || tilec_result_report(r, -1))
    broken("tilec_result_report out of range is not NULL", r);
  (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < HEADER)
    return -1; /* not in the corpus */
  const char *arch = archs[(unsigned char)(data[0] - '0') % 5];
  int level = (unsigned char)(data[1] - '0') % 4;
  tilec_emit emit = emits[(unsigned char)(data[2] - '0') % 8];
  const char *src = (const char *)data + HEADER;
  size_t len = size - HEADER;

  Directives dv;
  parse_directives(src, len, &dv);
  tilec_options opt = {
      .filename = "<fuzz>",
      .arch = arch,
      .opt_level = level,
      .defines = dv.defines,
      .ndefines = dv.ndefines,
      .kernel = dv.kernel,
      .emit = emit,
      .dump_after = dv.dump_after,
  };
  tilec_result *r = NULL;
  double t0 = now();
  tilec_status st = tilec_compile_flags(src, len, &opt, dv.flags, &r);
  double seconds = now() - t0;
  if (!r)
    broken("no result", NULL);
  if (verbose)
    fprintf(stderr, "fuzz_compile: %s -O%d %s (%d defines%s%s%s%s): status %d\n%s", arch, level,
            emit_names[emit], dv.ndefines, dv.kernel ? ", kernel " : "", dv.kernel ? dv.kernel : "",
            dv.dump_after ? ", dump after " : "", dv.dump_after ? dv.dump_after : "", (int)st,
            tilec_result_diagnostics_text(r));
  /* An unknown pass for dump_after is the caller's mistake, not the source's; so is --tma-only
   * with --emit=header. */
  if (st == TILEC_ERR_INVALID_ARGUMENT && !dv.dump_after && !(dv.flags && emit == TILEC_EMIT_HEADER))
    broken("TILEC_ERR_INVALID_ARGUMENT for valid options", r);
  walk_result(r, st);
  runs[emit]++;
  accepted[emit] += st == TILEC_OK;
  /* Kernels that compiled, for the mutator; the fast ones only, or the slowest would set the pace. */
  if (st == TILEC_OK && emit != TILEC_EMIT_TOKENS && emit != TILEC_EMIT_AST && seconds < 0.05)
    token_mutator_remember(data, size);
  if (st == TILEC_OK && emit == TILEC_EMIT_PTX) {
    const char *ptx = tilec_result_output(r);
    check_ptx(r, ptx, arch);
    if (ptx_dir)
      save_ptx(ptx, arch, data, size);
  }
  /* What compiled also stops cleanly at every earlier stage. */
  static const tilec_emit earlier[] = {TILEC_EMIT_TOKENS, TILEC_EMIT_AST, TILEC_EMIT_TIR};
  static const int stage[] = {3, 3, 2, 1, 0, 3, 3}; /* of each emit kind, in tilec_emit's order */
  for (int i = 0; st == TILEC_OK && i < stage[emit]; i++) {
    tilec_options o = opt;
    o.emit = earlier[i];
    tilec_result *e = NULL;
    if (tilec_compile_flags(src, len, &o, dv.flags, &e) != TILEC_OK) {
      fprintf(stderr, "as %s:\n%s", emit_names[earlier[i]], tilec_result_diagnostics_text(e));
      broken("a source that compiles fails at an earlier stage", r);
    }
    tilec_result_free(e);
  }
  /* The same input, the same output: one in eight inputs is compiled twice (the JIT's cache keys
   * on the source, so nondeterministic output would be cached as if it were not). */
  if (fnv1a(data, size) % 8 == 0) {
    tilec_result *again = NULL;
    tilec_status st2 = tilec_compile_flags(src, len, &opt, dv.flags, &again);
    const char *a = tilec_result_output(r), *b = tilec_result_output(again);
    if (st2 != st || strcmp(tilec_result_diagnostics_text(r), tilec_result_diagnostics_text(again)) ||
        strcmp(tilec_result_dump(r), tilec_result_dump(again)) || (!a != !b) || (a && strcmp(a, b)))
      broken("the same input compiled twice gives different results", r);
    tilec_result_free(again);
  }
  tilec_result_free(r);
  free(dv.store);
  return 0;
}
