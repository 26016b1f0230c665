/* test_frontend.c: the compiler library through its public API: emits, the
 * structured diagnostics, options validation, and re-entrancy. */
#include "tilec.h"

#include "fe.h"    /* the lexer, for test_lexer_state */
#include "parse.h" /* its token numbers */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c) \
  ((c) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c), failures++))

static const char VADD[] = "kernel vadd[BLOCK = 1024](A: f32[N], B: f32[N], C: f32[N])\n"
                           "    grid(ceildiv(N, BLOCK)) as (bx) threads(128)\n"
                           "{\n"
                           "    let a = alloc_fragment([BLOCK], f32);\n"
                           "    let b = alloc_fragment([BLOCK], f32);\n"
                           "    copy(A[bx * BLOCK], a);\n"
                           "    copy(B[bx * BLOCK], b);\n"
                           "    for i in parallel(BLOCK) { a[i] = a[i] + b[i]; }\n"
                           "    copy(a, C[bx * BLOCK]);\n"
                           "}\n";

static tilec_status compile(const char *src, tilec_emit emit, const char *arch, tilec_result **r)
{
  tilec_options o = {0};
  o.filename = "t.tl";
  o.arch = arch;
  o.opt_level = 3;
  o.emit = emit;
  return tilec_compile(src, strlen(src), &o, r);
}

static void test_emits(void)
{
  static const tilec_emit emits[] = {TILEC_EMIT_TOKENS, TILEC_EMIT_AST, TILEC_EMIT_TIR, TILEC_EMIT_LLVM,
                                     TILEC_EMIT_PTX};
  static const char *expect[] = {"KERNEL", "Kernel vadd", "layout(vec=4, chunks=2, threads=128)", "define",
                                 ".entry vadd"};
  for (int i = 0; i < 5; i++) {
    tilec_result *r = NULL;
    CHECK(compile(VADD, emits[i], "sm_80", &r) == TILEC_OK);
    const char *out = tilec_result_output(r);
    CHECK(out != NULL);
    if (out && i)
      CHECK(strstr(out, expect[i]) != NULL);
    CHECK(tilec_result_num_diagnostics(r) == 0);
    tilec_result_free(r);
  }
}

static void test_metadata(void)
{
  tilec_result *r = NULL;
  CHECK(compile(VADD, TILEC_EMIT_PTX, "sm_90a", &r) == TILEC_OK);
  const char *ptx = tilec_result_output(r);
  CHECK(ptx && strncmp(ptx, "// tilec-meta v1\n", 17) == 0);
  CHECK(ptx && strstr(ptx, "// tilec-meta kernel vadd threads=128 smem=0 params=4\n"));
  CHECK(ptx && strstr(ptx, "// tilec-meta param 3 size N i32\n"));
  CHECK(ptx && strstr(ptx, "// tilec-meta grid 0 N 1024 ceildiv\n"));
  CHECK(ptx && strstr(ptx, ".target sm_90a"));
  tilec_result_free(r);
}

/* TILEC_EMIT_REPORT: the text, and the same figures as records (vadd at N = 5000: 5 blocks of 1024
 * f32, whole tiles: 2 * 4096 bytes read and 4096 written per block, one add per element). */
static void test_report(void)
{
  tilec_define sizes[] = {{"N", "5000"}, {"num_sms", "132"}};
  tilec_options o = {0};
  o.filename = "t.tl";
  o.opt_level = 3;
  o.emit = TILEC_EMIT_REPORT;
  o.sizes = sizes;
  o.nsizes = 2;
  tilec_result *r = NULL;
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_OK);
  const char *out = tilec_result_output(r);
  CHECK(out && strstr(out, "grid: (ceildiv(N, 1024)) = (5, 1, 1) = 5 blocks"));
  CHECK(out && strstr(out, "global bytes read:    blocks * (8192) = 40960"));
  CHECK(tilec_result_num_diagnostics(r) == 0); /* num_sms is the report's, not a size sema warns about */
  CHECK(tilec_result_num_reports(r) == 1);
  const tilec_kernel_report *k = tilec_result_report(r, 0);
  CHECK(k && !strcmp(k->name, "vadd") && k->known);
  CHECK(k && k->blocks == 5 && k->read_bytes == 40960 && k->write_bytes == 20480);
  CHECK(k && k->mma_flops == 0 && k->other_flops == 5120 && k->threads == 128 && k->smem_bytes == 0);
  CHECK(tilec_result_report(r, 1) == NULL && tilec_result_report(r, -1) == NULL);
  tilec_result_free(r);
  /* without the sizes the figures are not known */
  o.nsizes = 0;
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_OK);
  k = tilec_result_report(r, 0);
  CHECK(k && !k->known && k->read_bytes == -1 && k->blocks == -1);
  tilec_result_free(r);
  /* a bad num_sms is the caller's error */
  tilec_define bad[] = {{"num_sms", "0"}};
  o.sizes = bad;
  o.nsizes = 1;
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_ERR_INVALID_ARGUMENT);
  CHECK(tilec_result_num_reports(r) == 0);
  tilec_result_free(r);
  /* other kinds give no records */
  CHECK(compile(VADD, TILEC_EMIT_PTX, "sm_80", &r) == TILEC_OK);
  CHECK(tilec_result_num_reports(r) == 0);
  tilec_result_free(r);
}

static void test_diagnostic_records(void)
{
  tilec_result *r = NULL;
  const char *src = "kernel k(A: f32[N]) grid(1) threads(32) {\n  let x = y;\n  let z = 1 + true;\n}\n";
  CHECK(compile(src, TILEC_EMIT_PTX, NULL, &r) == TILEC_ERR_SOURCE);
  CHECK(tilec_result_output(r) == NULL);
  CHECK(tilec_result_num_diagnostics(r) == 2);
  tilec_diagnostic d = tilec_result_diagnostic(r, 0);
  CHECK(d.severity == 0 && d.line == 2 && d.column == 11 && strstr(d.message, "undefined name 'y'"));
  d = tilec_result_diagnostic(r, 1);
  CHECK(d.line == 3 && strstr(d.message, "mismatched types"));
  CHECK(strstr(tilec_result_diagnostics_text(r),
               "t.tl:2:11: error: undefined name 'y'\n    let x = y;\n            ^\n"));
  d = tilec_result_diagnostic(r, 7); /* out of range: an empty record */
  CHECK(d.message == NULL);
  tilec_result_free(r);
}

/* A gemm that cannot take wgmma on sm_90a gives a remark in tilec_result_remarks_text, not among the
 * diagnostics, and the compilation succeeds; a gemm on sm_80, or one that takes wgmma, gives none. */
static void test_remarks(void)
{
  static const char *fmt =
      "kernel k(A: f16[M, K], B: f16[N, K], C: f32[M, N]) grid(1) threads(%d) {\n"
      "  let As = alloc_shared([64, 32], f16);\n  let Bs = alloc_shared([64, 32], f16);\n"
      "  let acc = alloc_fragment([64, 64], f32);\n  clear(acc);\n"
      "  copy(A[0, 0], As);\n  copy(B[0, 0], Bs);\n  gemm(As, Bs, acc, transpose_B = true);\n"
      "  copy(acc, C[0, 0]);\n}\n";
  static const struct {
    int threads;
    const char *arch, *want; /* want: a piece of the remark, NULL: none */
  } cases[] = {{64, NULL,
                "t.tl:8:3: remark: gemm takes mma.sync, not wgmma: the block's 64 threads are not whole "
                "warpgroups of 128\n    gemm(As, Bs, acc, transpose_B = true);\n    ^\n"},
               {64, "sm_80", NULL},
               {128, NULL, NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char src[1024];
    snprintf(src, sizeof src, fmt, cases[i].threads);
    tilec_result *r = NULL;
    CHECK(compile(src, TILEC_EMIT_PTX, cases[i].arch, &r) == TILEC_OK);
    const char *remarks = tilec_result_remarks_text(r);
    CHECK(remarks != NULL);
    if (cases[i].want)
      CHECK(remarks && strstr(remarks, cases[i].want));
    else
      CHECK(remarks && !*remarks);
    CHECK(tilec_result_num_diagnostics(r) == 0 && !*tilec_result_diagnostics_text(r));
    tilec_result_free(r);
  }
  CHECK(tilec_result_remarks_text(NULL) == NULL);
}

static void test_bad_arguments(void)
{
  tilec_result *r = NULL;
  CHECK(tilec_compile(VADD, strlen(VADD), NULL, NULL) == TILEC_ERR_INVALID_ARGUMENT);
  CHECK(compile(VADD, TILEC_EMIT_PTX, "sm_75", &r) == TILEC_ERR_INVALID_ARGUMENT);
  CHECK(strstr(tilec_result_diagnostics_text(r), "unknown target 'sm_75'"));
  tilec_result_free(r);
  tilec_options o = {0};
  o.opt_level = 9;
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_ERR_INVALID_ARGUMENT);
  tilec_result_free(r);
  o.opt_level = 3;
  o.dump_after = "no-such-pass";
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_ERR_INVALID_ARGUMENT);
  tilec_result_free(r);
  o.dump_after = NULL;
  o.ndefines = 1; /* but no array */
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_ERR_INVALID_ARGUMENT);
  tilec_result_free(r);
  CHECK(tilec_compile(NULL, 5, NULL, &r) == TILEC_ERR_INVALID_ARGUMENT);
  tilec_result_free(r);
  CHECK(tilec_compile(NULL, 0, NULL, &r) == TILEC_ERR_SOURCE); /* empty: no kernel */
  tilec_result_free(r);
  /* More than 16 MiB of source is refused before anything reads it. */
  size_t big = ((size_t)16 << 20) + 1;
  char *huge = malloc(big);
  if (huge) {
    memset(huge, ' ', big);
    CHECK(tilec_compile(huge, big, NULL, &r) == TILEC_ERR_SOURCE);
    CHECK(strstr(tilec_result_diagnostics_text(r), "source is larger than 16777216 bytes"));
    tilec_result_free(r);
    free(huge);
  }
  tilec_result_free(NULL);
  CHECK(tilec_result_output(NULL) == NULL);
  CHECK(tilec_arch_supported("sm_90a") && !tilec_arch_supported("sm_100") && !tilec_arch_supported(NULL));
}

static void test_defines(void)
{
  tilec_define defs[] = {{"BLOCK", "512"}};
  tilec_options o = {0};
  o.opt_level = 3;
  o.defines = defs;
  o.ndefines = 1;
  o.emit = TILEC_EMIT_PTX;
  tilec_result *r = NULL;
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_OK);
  CHECK(strstr(tilec_result_output(r), "// tilec-meta grid 0 N 512 ceildiv\n"));
  tilec_result_free(r);
  defs[0].value = "banana";
  CHECK(tilec_compile(VADD, strlen(VADD), &o, &r) == TILEC_ERR_SOURCE);
  CHECK(strstr(tilec_result_diagnostics_text(r), "not a number"));
  tilec_result_free(r);
}

/* Compiles from several threads at once: results must match a serial compile. */
static char *reference_ptx;
static void *worker(void *arg)
{
  (void)arg;
  for (int i = 0; i < 3; i++) {
    tilec_result *r = NULL;
    if (compile(VADD, TILEC_EMIT_PTX, "sm_90a", &r) != TILEC_OK ||
        strcmp(tilec_result_output(r), reference_ptx))
      __atomic_fetch_add(&failures, 1, __ATOMIC_SEQ_CST);
    tilec_result_free(r);
  }
  return NULL;
}

static void test_threads(void)
{
  tilec_result *r = NULL;
  CHECK(compile(VADD, TILEC_EMIT_PTX, "sm_90a", &r) == TILEC_OK);
  reference_ptx = strdup(tilec_result_output(r));
  tilec_result_free(r);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  free(reference_ptx);
}

/* lexer_init sets every field: a Lexer on a stack that last held an identifier's state on line 1
 * must not take a comment on the first line for a floor division after an operand (found by
 * fuzz_compile: the '//' warning came and went with the stack's contents). */
static void test_lexer_state(void)
{
  static const char src[] = "// 2 is not divided\nkernel";
  Arena *a = arena_new();
  Diags d = {.arena = a, .filename = "t.tl"};
  Lexer lx;
  memset(&lx, 0, sizeof lx);
  lx.prev_id = TK_IDENT;
  lx.prev_line = 1;
  lexer_init(&lx, src, sizeof src - 1, &d);
  Token t = lexer_next(&lx);
  CHECK(t.id == TK_KERNEL);
  CHECK(d.first == NULL);
  arena_free(a);
}

int main(void)
{
  test_remarks();
  test_emits();
  test_lexer_state();
  test_metadata();
  test_report();
  test_diagnostic_records();
  test_bad_arguments();
  test_defines();
  test_threads();
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("frontend: all checks passed\n");
  return 0;
}
