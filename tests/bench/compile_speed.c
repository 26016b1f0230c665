/* compile_speed: how long tilec takes to compile a kernel to PTX in-process, against how long LLVM
 * itself takes to generate PTX from the same LLVM IR.
 *
 *   compile_speed [--reps R] [--llc PATH] [--out FILE] [--smoke] [SOURCE.tl]
 *
 * SOURCE.tl defaults to examples/vector_add.tl; R (default 50) timed repetitions after 3 warm-up
 * ones, medians reported. Rows, all for sm_90a at -O3:
 *
 *   tilec           tilec_compile(source) -> PTX: lexer, parser, checks, passes, LLVM IR built,
 *                   LLVM's -O3 pipeline, NVPTX code generation; the whole compiler, in-process
 *   tilec stages    the same stopped after the passes (--emit=tir, with every pass printed) and
 *                   after LLVM's optimizer (--emit=llvm, IR printed)
 *   LLVM codegen    for tilec's --emit=llvm output (the optimized IR tilec hands to NVPTX): parse the
 *                   IR, create the NVPTX target machine (sm_90a, +ptx80, -O3), emit PTX to memory;
 *                   timed without the parse, and with it
 *   llc             the same IR through `llc -O3 -march=nvptx64 -mcpu=sm_90a -mattr=+ptx80` as a
 *                   process, wall time; and `llc --version`, the cost of starting llc at all
 *
 * The ratio the acceptance criterion names ("at most 1.5x LLVM's own code generation") is tilec /
 * LLVM codegen in-process without the parse: the strictest reading, since it leaves LLVM's side
 * with only the work llc does after reading its input and none of a process's start-up. --smoke
 * (for ctest) checks that the in-process codegen's PTX equals tilec's after the metadata block,
 * i.e. that both sides do the same work, and exits 0 without judging the times.
 */
#define _POSIX_C_SOURCE 200809L

#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tilec.h"

#include "../support/read_file.h"
#include "../support/timing.h"

extern char **environ;

#define TRIPLE "nvptx64-nvidia-cuda"

typedef struct {
  double median, min, max;
} Timing;

static Timing summarize(double *v, int n)
{
  double med = test_median(v, n); /* sorts v */
  Timing t = {med, v[0], v[n - 1]};
  return t;
}

/* ---------------------------------------------------------------- tilec */

static char *compile(const char *src, size_t len, tilec_emit emit)
{
  tilec_options o = {0};
  o.filename = "bench.tl";
  o.arch = "sm_90a";
  o.opt_level = 3;
  o.emit = emit;
  tilec_result *r = NULL;
  char *out = NULL;
  if (tilec_compile(src, len, &o, &r) == TILEC_OK)
    out = strdup(tilec_result_output(r));
  else
    fprintf(stderr, "%s", tilec_result_diagnostics_text(r));
  tilec_result_free(r);
  return out;
}

/* ---------------------------------------------------------------- LLVM alone */

/* Parse (timed into *parse_ms), create the target machine, emit PTX: the work of llc after it has
 * started. Returns the PTX (malloc'd) or NULL. */
static char *llvm_codegen(const char *ir, double *parse_ms, double *codegen_ms)
{
  double t0 = test_now_ms();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "tilec.ll");
  LLVMModuleRef mod = NULL;
  char *err = NULL;
  if (LLVMParseIRInContext(ctx, buf, &mod, &err)) { /* takes the buffer */
    fprintf(stderr, "compile_speed: LLVM cannot parse tilec's IR: %s\n", err);
    LLVMDisposeMessage(err);
    LLVMContextDispose(ctx);
    return NULL;
  }
  double t1 = test_now_ms();
  LLVMTargetRef target;
  char *ptx = NULL;
  if (!LLVMGetTargetFromTriple(TRIPLE, &target, &err)) {
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, TRIPLE, "sm_90a", "+ptx80",
                                                      LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                                      LLVMCodeModelDefault);
    LLVMMemoryBufferRef out = NULL;
    if (!LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &out)) {
      size_t n = LLVMGetBufferSize(out);
      ptx = malloc(n + 1);
      memcpy(ptx, LLVMGetBufferStart(out), n);
      ptx[n] = 0;
      LLVMDisposeMemoryBuffer(out);
    }
    LLVMDisposeTargetMachine(tm);
  }
  if (err) {
    fprintf(stderr, "compile_speed: LLVM: %s\n", err);
    LLVMDisposeMessage(err);
  }
  double t2 = test_now_ms();
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  *parse_ms = t1 - t0;
  *codegen_ms = t2 - t1;
  return ptx;
}

/* ---------------------------------------------------------------- llc, the program */

static double run_ms(char *const argv[])
{
  posix_spawn_file_actions_t quiet; /* llc --version talks */
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  double t0 = test_now_ms();
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &quiet, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (rc != 0)
    return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  double t = test_now_ms() - t0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
  int reps = 50;
  bool smoke = false;
  const char *llc = TILEC_LLC, *out_path = NULL, *source = TILEC_EXAMPLES_DIR "/vector_add.tl";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--llc") && i + 1 < argc)
      llc = argv[++i];
    else if (!strcmp(argv[i], "--out") && i + 1 < argc)
      out_path = argv[++i];
    else if (!strcmp(argv[i], "--smoke"))
      smoke = true;
    else if (argv[i][0] != '-')
      source = argv[i];
    else {
      fprintf(stderr, "usage: compile_speed [--reps R] [--llc PATH] [--out FILE] [--smoke] [SOURCE.tl]\n");
      return 1;
    }
  }
  if (reps < 1)
    reps = 1;
  size_t len = 0;
  char *src = test_read_file(source, &len);
  if (!src) {
    fprintf(stderr, "compile_speed: cannot read %s\n", source);
    return 1;
  }
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();

  char *ptx = compile(src, len, TILEC_EMIT_PTX);
  char *ir = compile(src, len, TILEC_EMIT_LLVM);
  if (!ptx || !ir)
    return 1;
  /* the same work on both sides: LLVM's PTX for tilec's IR is tilec's PTX without the metadata */
  double parse_ms, codegen_ms;
  char *llvm_ptx = llvm_codegen(ir, &parse_ms, &codegen_ms);
  const char *body = strstr(ptx, "// tilec-meta end\n");
  body = body ? body + strlen("// tilec-meta end\n") : ptx;
  const bool same = llvm_ptx && !strcmp(body, llvm_ptx);
  if (!same)
    fprintf(stderr, "compile_speed: LLVM's PTX for tilec's IR differs from tilec's PTX\n");
  free(llvm_ptx);

  const int warmup = 3;
  double *t_tilec = calloc((size_t)reps, sizeof(double)), *t_tir = calloc((size_t)reps, sizeof(double)),
         *t_llvm_ir = calloc((size_t)reps, sizeof(double)), *t_cg = calloc((size_t)reps, sizeof(double)),
         *t_cg_parse = calloc((size_t)reps, sizeof(double)), *t_llc = calloc((size_t)reps, sizeof(double)),
         *t_llc_start = calloc((size_t)reps, sizeof(double));
  /* interleaved, so that a noisy moment hits every row alike */
  for (int i = -warmup; i < reps; i++) {
    double t0 = test_now_ms();
    free(compile(src, len, TILEC_EMIT_PTX));
    double a = test_now_ms() - t0;
    t0 = test_now_ms();
    free(compile(src, len, TILEC_EMIT_TIR));
    double b = test_now_ms() - t0;
    t0 = test_now_ms();
    free(compile(src, len, TILEC_EMIT_LLVM));
    double c = test_now_ms() - t0;
    free(llvm_codegen(ir, &parse_ms, &codegen_ms));
    if (i >= 0) {
      t_tilec[i] = a;
      t_tir[i] = b;
      t_llvm_ir[i] = c;
      t_cg[i] = codegen_ms;
      t_cg_parse[i] = parse_ms + codegen_ms;
    }
  }
  /* llc as a process, on the IR in a file */
  char ll_path[] = "/tmp/tilec-bench-XXXXXX";
  int fd = mkstemp(ll_path);
  bool have_llc = fd >= 0 && access(llc, X_OK) == 0;
  char ll_file[64], ptx_file[64];
  snprintf(ll_file, sizeof ll_file, "%s.ll", ll_path);
  snprintf(ptx_file, sizeof ptx_file, "%s.ptx", ll_path);
  if (fd >= 0) {
    close(fd);
    unlink(ll_path);
    FILE *f = fopen(ll_file, "wb");
    have_llc = have_llc && f && fputs(ir, f) >= 0;
    if (f)
      fclose(f);
  }
  char *llc_argv[] = {(char *)llc, "-O3", "-march=nvptx64", "-mcpu=sm_90a", "-mattr=+ptx80", ll_file, "-o",
                      ptx_file,    NULL};
  char *version_argv[] = {(char *)llc, "--version", NULL};
  for (int i = -warmup; have_llc && i < reps; i++) {
    double a = run_ms(llc_argv), b = run_ms(version_argv);
    if (a < 0 || b < 0) {
      have_llc = false;
      break;
    }
    if (i >= 0) {
      t_llc[i] = a;
      t_llc_start[i] = b;
    }
  }
  unlink(ll_file);
  unlink(ptx_file);

  Timing tilec = summarize(t_tilec, reps), tir = summarize(t_tir, reps), llvm_ir = summarize(t_llvm_ir, reps),
         cg = summarize(t_cg, reps), cg_parse = summarize(t_cg_parse, reps);
  Timing l = {0, 0, 0}, ls = {0, 0, 0};
  if (have_llc) {
    l = summarize(t_llc, reps);
    ls = summarize(t_llc_start, reps);
  }
  const double ratio = tilec.median / cg.median;
  size_t ir_lines = 0;
  for (const char *p = ir; *p; p++)
    ir_lines += *p == '\n';
  FILE *out = out_path ? fopen(out_path, "w") : NULL;
  FILE *sinks[2] = {stdout, out};
  for (int s = 0; s < 2; s++) {
    FILE *f = sinks[s];
    if (!f)
      continue;
    fprintf(f,
            "| what (%s, sm_90a, -O3; %zu lines of LLVM IR) | median ms | min | max |\n"
            "|---|---|---|---|\n",
            strrchr(source, '/') ? strrchr(source, '/') + 1 : source, ir_lines);
    fprintf(f, "| **tilec_compile to PTX, in-process** | **%.2f** | %.2f | %.2f |\n", tilec.median, tilec.min,
            tilec.max);
    fprintf(f, "| tilec to the tile IR after every pass (--emit=tir) | %.2f | %.2f | %.2f |\n", tir.median,
            tir.min, tir.max);
    fprintf(f, "| tilec to optimized LLVM IR (--emit=llvm) | %.2f | %.2f | %.2f |\n", llvm_ir.median,
            llvm_ir.min, llvm_ir.max);
    fprintf(f, "| **LLVM codegen in-process: target machine + PTX emission** | **%.2f** | %.2f | %.2f |\n",
            cg.median, cg.min, cg.max);
    fprintf(f, "| LLVM in-process, with parsing the IR text | %.2f | %.2f | %.2f |\n", cg_parse.median,
            cg_parse.min, cg_parse.max);
    if (have_llc) {
      fprintf(f, "| `llc -O3` process, wall | %.2f | %.2f | %.2f |\n", l.median, l.min, l.max);
      fprintf(f, "| `llc --version` process, wall (start-up alone) | %.2f | %.2f | %.2f |\n", ls.median,
              ls.min, ls.max);
    }
    fprintf(f,
            "\n%d repetitions after %d warm-up, interleaved. tilec / LLVM codegen in-process: "
            "%.2fx (target at most 1.5x); tilec: %.2f ms (target under 20 ms)",
            reps, warmup, ratio, tilec.median);
    if (have_llc)
      fprintf(f, "; tilec / llc wall: %.2fx; tilec / (llc wall - llc start-up): %.2fx",
              tilec.median / l.median, tilec.median / (l.median - ls.median));
    fprintf(f, ".\nSame PTX from both paths: %s.\n", same ? "yes" : "NO");
  }
  if (out)
    fclose(out);
  free(t_tilec);
  free(t_tir);
  free(t_llvm_ir);
  free(t_cg);
  free(t_cg_parse);
  free(t_llc);
  free(t_llc_start);
  free(ptx);
  free(ir);
  free(src);
  if (smoke)
    return same ? 0 : 1;
  return same && ratio <= 1.5 && tilec.median < 20.0 ? 0 : 1;
}
