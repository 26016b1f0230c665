/* main.c: the tilec command line, with clang's and nvcc's conventions. */
#include "cli.h"               /* reading the source, writing the output: shared with run.c */
#include "libtilec_internal.h" /* compiler/: tilec_compile_flags (--tma-only) */
#include "passes.h"            /* passes/passes.h: the pipeline's steps, for --help */
#include "roofline.h"          /* --gpu's table */
#include "run.h"               /* tilec run */
#include "target.h"            /* ir/target.h */
#include "tune.h"              /* tilec tune */
#include "tilec.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A printf format: the list of targets and the default one (ir/target.h), the
 * pipeline's steps by group (passes/pipeline.c). */
static const char USAGE[] =
    "usage: tilec [options] FILE.tl\n"
    "       tilec run FILE.tl [options]   (runs a kernel on the CPU: tilec run --help)\n"
    "       tilec tune FILE.tl [options]  (times candidate constants: tilec tune --help)\n"
    "\n"
    "Compiles a .tl tile program to PTX.\n"
    "\n"
    "options:\n"
    "  -o FILE             write the output to FILE ('-' for stdout; default: FILE.ptx beside the input)\n"
    "  --arch=ARCH         target: %s (default %s)\n"
    "  -D NAME=VALUE       override the kernel constant NAME (also -DNAME=VALUE)\n"
    "  --size N=V[,M=V..]  the sizes launch constants are chosen for (constants whose default\n"
    "                      uses sizes; without it, the variant for large sizes)\n"
    "  --bucket N=V[,M=V..]  --emit=header: one more variant, compiled for these sizes; the\n"
    "                      launcher runs the variant whose launch constants a launch's sizes\n"
    "                      give (repeatable)\n"
    "  --kernel NAME       compile only the kernel NAME\n"
    "  --emit=KIND         tokens, ast, tir, llvm, ptx (default), header (C launchers\n"
    "                      with the PTX embedded) or report (layouts, bank conflicts, traffic,\n"
    "                      FLOPs and occupancy per kernel; see docs/cli.md)\n"
    "  --gpu=NAME          --emit=report: the roofline bound on h200, h100, a100, l40s or\n"
    "                      rtx4090 (also sets num_sms unless --size gives it)\n"
    "  --time-us=T         --emit=report with --gpu: a measured time, as a fraction of the bound\n"
    "  --dump-after=PASS   print the tile IR after PASS to stderr: a step of the pipeline,\n"
    "                      a group (its last step), all (every step) or groups:\n"
    "%s"
    "  -O0 -O1 -O2 -O3     LLVM optimization level (default -O3)\n"
    "  -lineinfo           .file / .loc of the .tl lines in the PTX (also --line-info), for\n"
    "                      ptxas -lineinfo, nvdisasm and Nsight Compute\n"
    "  --tma-only          sm_90a: statements with a TMA form get it alone, without the form\n"
    "                      for launches that pass no tensor maps (tmap_ok 'required' in the\n"
    "                      metadata: every launch must pass valid maps; docs/cli.md)\n"
    "  -Rpass-missed=wgmma a remark for each gemm that takes mma.sync instead of wgmma on\n"
    "                      sm_90a, and why\n"
    "  --help              show this help\n"
    "  --version           show the version\n";

/* The pipeline's steps for --help, a group per line ("lower-tiles: step,
 * step, ..." wrapped; a group of one step of its name alone). */
static const char *pass_list(char *buf, size_t size)
{
  buf[0] = 0;
  for (int i = 0; i < pass_count(); i++) {
    const char *group, *prev = "", *next = "";
    const char *name = pass_name(i, &group);
    if (i > 0)
      pass_name(i - 1, &prev);
    if (i + 1 < pass_count())
      pass_name(i + 1, &next);
    bool first = strcmp(prev, group) != 0, last = strcmp(next, group) != 0;
    size_t n = strlen(buf);
    const char *line = strrchr(buf, '\n');
    size_t column = n - (line ? (size_t)(line + 1 - buf) : 0);
    if (first && last && !strcmp(name, group))
      snprintf(buf + n, size - n, "%24s%s", "", name);
    else if (first)
      snprintf(buf + n, size - n, "%24s%s: %s", "", group, name);
    else if (column + 2 + strlen(name) > 88)
      snprintf(buf + n, size - n, ",\n%26s%s", "", name);
    else
      snprintf(buf + n, size - n, ", %s", name);
    n = strlen(buf);
    if (last && n + 1 < size)
      buf[n] = '\n', buf[n + 1] = 0;
  }
  return buf;
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tilec: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(run 'tilec --help' for usage)\n");
  va_end(ap);
  return 1;
}

/* What the command line asks for. */
typedef struct {
  tilec_options opt;
  const char *input, *output;
  tilec_define *defs;    /* argc of them at most */
  char **owned;          /* the -D names, strndup'd */
  int ndefs, nowned;
  tilec_define *sizes;   /* --size NAME=VALUE, names and values strndup'd (size_text) */
  char *size_text;
  size_t size_len;       /* bytes of size_text in use */
  int nsizes;
  tilec_bucket *buckets; /* --bucket: each a list as parse_sizes makes it (sizes malloc'd) */
  char **bucket_text;    /* and the text its names and values point into */
  int nbuckets;
  const Gpu *gpu;        /* --gpu (--emit=report) */
  double time_us;        /* --time-us, 0 when not given */
  bool remarks;          /* -Rpass-missed=wgmma: print the remarks */
  unsigned flags;        /* TILEC_COMPILE_* (--tma-only) */
} Command;

static bool parse_sizes(Command *cmd, const char *v, const char *what);

/* --bucket N=1024,M=64 (repeatable): one bucket of sizes; false with the usage error reported. */
static bool parse_bucket(Command *cmd, const char *v)
{
  if (cmd->nbuckets >= TILEC_MAX_BUCKETS) {
    usage_error("more than %d --bucket options", TILEC_MAX_BUCKETS);
    return false;
  }
  Command one = {0};
  if (!parse_sizes(&one, v, "--bucket")) {
    free(one.sizes);
    free(one.size_text);
    return false;
  }
  tilec_bucket *b = realloc(cmd->buckets, sizeof *b * (size_t)(cmd->nbuckets + 1));
  char **t = b ? realloc(cmd->bucket_text, sizeof *t * (size_t)(cmd->nbuckets + 1)) : NULL;
  if (b)
    cmd->buckets = b;
  if (!t) {
    free(one.sizes);
    free(one.size_text);
    return false;
  }
  cmd->bucket_text = t;
  cmd->buckets[cmd->nbuckets] = (tilec_bucket){one.sizes, one.nsizes};
  t[cmd->nbuckets++] = one.size_text;
  return true;
}

/* --size N=1024,M=64 (repeatable): appends each NAME=VALUE; false with the usage error (for the
 * option `what`) reported. */
static bool parse_sizes(Command *cmd, const char *v, const char *what)
{
  if (!v || !*v) {
    usage_error("%s needs NAME=VALUE[,NAME=VALUE...], got '%s'", what, v ? v : "");
    return false;
  }
  size_t old = cmd->size_len;
  int n = 1;
  for (const char *c = v; *c; c++)
    n += *c == ',';
  /* Names and values point into size_text, so keep every item there: old ones are rebased. */
  char *text = malloc(old + strlen(v) + 1);
  tilec_define *sizes = calloc((size_t)(cmd->nsizes + n), sizeof *sizes);
  if (!text || !sizes) {
    free(text);
    free(sizes);
    return false;
  }
  if (old)
    memcpy(text, cmd->size_text, old);
  for (int i = 0; i < cmd->nsizes; i++)
    sizes[i] = (tilec_define){text + (cmd->sizes[i].name - cmd->size_text),
                              text + (cmd->sizes[i].value - cmd->size_text)};
  free(cmd->size_text);
  free(cmd->sizes);
  cmd->size_text = text;
  cmd->sizes = sizes;
  char *item = text + old;
  strcpy(item, v);
  cmd->size_len = old + strlen(v) + 1;
  for (;;) {
    char *comma = strchr(item, ',');
    if (comma)
      *comma = 0;
    char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1]) {
      usage_error("%s needs NAME=VALUE[,NAME=VALUE...], got '%s'", what, v);
      return false;
    }
    *eq = 0;
    cmd->sizes[cmd->nsizes++] = (tilec_define){item, eq + 1};
    if (!comma)
      return true;
    item = comma + 1;
  }
}

/* Exit status of parse_args when the command line asks for a compilation. */
enum { COMPILE = -1 };

/* Reads argv into cmd: COMPILE, or the exit status when there is nothing to
 * compile (--help, --version, a usage error, which it reports). */
static int parse_args(int argc, char **argv, Command *cmd)
{
  tilec_options *opt = &cmd->opt;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      char names[128], steps[1024], text[sizeof USAGE + sizeof names + sizeof steps];
      snprintf(text, sizeof text, USAGE, target_list(names, sizeof names, ", "), target_default()->name,
               pass_list(steps, sizeof steps));
      return cli_write_file("-", text, strlen(text)) ? 1 : 0;
    } else if (!strcmp(a, "--version")) {
      char line[64];
      snprintf(line, sizeof line, "tilec %s\n", tilec_version());
      return cli_write_file("-", line, strlen(line)) ? 1 : 0;
    } else if (!strcmp(a, "-o")) {
      if (++i == argc)
        return usage_error("%s needs a file name", a);
      cmd->output = argv[i];
    } else if (!strncmp(a, "-o", 2)) {
      cmd->output = a + 2;
    } else if (!strncmp(a, "--arch=", 7) || !strcmp(a, "--arch") || !strncmp(a, "-arch=", 6)) {
      const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : (++i < argc ? argv[i] : NULL);
      if (!v || !tilec_arch_supported(v)) {
        char names[128];
        return usage_error("unknown target '%s'; expected %s", v ? v : "",
                           target_list(names, sizeof names, " or "));
      }
      opt->arch = v;
    } else if (!strncmp(a, "-D", 2)) {
      const char *d = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
      const char *eq = d ? strchr(d, '=') : NULL;
      if (!d || !eq || eq == d || !eq[1])
        return usage_error("-D needs NAME=VALUE, got '%s'", d ? d : "");
      char *name = strndup(d, (size_t)(eq - d));
      if (!name)
        return 1;
      cmd->owned[cmd->nowned++] = name;
      cmd->defs[cmd->ndefs++] = (tilec_define){name, eq + 1};
    } else if (!strcmp(a, "--size") || !strncmp(a, "--size=", 7)) {
      if (!parse_sizes(cmd, a[6] == '=' ? a + 7 : (++i < argc ? argv[i] : NULL), "--size"))
        return 1;
    } else if (!strcmp(a, "--bucket") || !strncmp(a, "--bucket=", 9)) {
      if (!parse_bucket(cmd, a[8] == '=' ? a + 9 : (++i < argc ? argv[i] : NULL)))
        return 1;
    } else if (!strcmp(a, "--kernel") || !strncmp(a, "--kernel=", 9)) {
      const char *v = a[8] == '=' ? a + 9 : (++i < argc ? argv[i] : NULL);
      if (!v || !*v)
        return usage_error("%s needs a kernel name", "--kernel");
      opt->kernel = v;
    } else if (!strncmp(a, "--emit=", 7)) {
      /* in tilec_emit's order */
      static const char *kinds[] = {"ptx", "llvm", "tir", "ast", "tokens", "header", "report"};
      int k = -1;
      for (int j = 0; j < (int)(sizeof kinds / sizeof *kinds); j++)
        if (!strcmp(a + 7, kinds[j]))
          k = j;
      if (k < 0)
        return usage_error("unknown --emit kind '%s'; expected tokens, ast, tir, llvm, ptx, header or report",
                           a + 7);
      opt->emit = (tilec_emit)k;
    } else if (!strcmp(a, "--gpu") || !strncmp(a, "--gpu=", 6)) {
      const char *v = a[5] == '=' ? a + 6 : (++i < argc ? argv[i] : NULL);
      if (!v || !(cmd->gpu = gpu_find(v)))
        return usage_error("unknown GPU '%s' for --gpu; expected %s", v ? v : "", gpu_names());
    } else if (!strcmp(a, "--time-us") || !strncmp(a, "--time-us=", 10)) {
      const char *v = a[9] == '=' ? a + 10 : (++i < argc ? argv[i] : NULL);
      char *end = NULL;
      double t = v ? strtod(v, &end) : 0;
      if (!v || end == v || *end || !(t > 0) || t > 1e12)
        return usage_error("--time-us needs a time in microseconds greater than 0, got '%s'", v ? v : "");
      cmd->time_us = t;
    } else if (!strncmp(a, "--dump-after=", 13)) {
      opt->dump_after = a + 13;
    } else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      opt->opt_level = a[2] - '0';
    } else if (!strcmp(a, "-lineinfo") || !strcmp(a, "--line-info")) {
      opt->line_info = 1;
    } else if (!strcmp(a, "--tma-only")) {
      cmd->flags |= TILEC_COMPILE_TMA_ONLY;
    } else if (!strncmp(a, "-Rpass-missed=", 14)) {
      if (strcmp(a + 14, "wgmma"))
        return usage_error("unknown remark group '%s' for -Rpass-missed; expected wgmma", a + 14);
      cmd->remarks = true;
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option '%s'", a);
    } else if (cmd->input) {
      return usage_error("more than one input file ('%s')", a);
    } else
      cmd->input = a;
  }
  if (!cmd->input)
    return usage_error("%s", "no input file");
  if ((cmd->gpu || cmd->time_us > 0) && opt->emit != TILEC_EMIT_REPORT)
    return usage_error("%s", "--gpu and --time-us go with --emit=report");
  if (cmd->time_us > 0 && !cmd->gpu)
    return usage_error("%s", "--time-us needs --gpu=NAME: the bound it is compared with is that GPU's");
  if (cmd->gpu) { /* the GPU's multiprocessor count for grid(...), unless --size gave one */
    bool given = false;
    for (int j = 0; j < cmd->nsizes; j++)
      given |= !strcmp(cmd->sizes[j].name, "num_sms");
    char item[32];
    snprintf(item, sizeof item, "num_sms=%d", cmd->gpu->sms);
    if (!given && !parse_sizes(cmd, item, "--gpu"))
      return 1;
  }
  if (cmd->nbuckets && opt->emit != TILEC_EMIT_HEADER)
    return usage_error("%s",
                       "--bucket makes variants for --emit=header; other outputs are one variant (--size)");
  return COMPILE;
}

/* Where the output goes without -o: FILE.ptx beside FILE.tl for PTX, standard
 * output for the other kinds.  Sets *owned to what the caller frees. */
static const char *default_output(const Command *cmd, char **owned)
{
  *owned = NULL;
  if (cmd->opt.emit != TILEC_EMIT_PTX)
    return "-";
  size_t n = strlen(cmd->input);
  char *name = malloc(n + 5);
  if (!name)
    return "-";
  memcpy(name, cmd->input, n + 1);
  char *dot = strrchr(name, '.');
  char *slash = strrchr(name, '/');
  if (dot && (!slash || dot > slash) && !strcmp(dot, ".tl"))
    *dot = 0;
  strcat(name, ".ptx");
  return *owned = name;
}

/* The output, with --gpu each kernel's roofline after the report: a malloc'd string, or NULL after
 * an error (reported). */
static char *report_with_roofline(const Command *cmd, const tilec_result *r)
{
  const char *out = tilec_result_output(r);
  size_t len = strlen(out);
  int n = tilec_result_num_reports(r);
  if (cmd->gpu && cmd->time_us > 0 && n != 1) {
    usage_error("--time-us is the time of one kernel, but the report has %d; choose one with --kernel NAME",
                n);
    return NULL;
  }
  char *text = malloc(len + 1);
  if (!text)
    return NULL;
  memcpy(text, out, len + 1);
  for (int i = 0; cmd->gpu && i < n; i++) {
    char *roof = roofline_text(tilec_result_report(r, i), cmd->gpu, cmd->time_us);
    char *grown = roof ? realloc(text, len + strlen(roof) + 1) : NULL;
    if (!grown) {
      free(roof);
      free(text);
      return NULL;
    }
    text = grown;
    memcpy(text + len, roof, strlen(roof) + 1);
    len += strlen(roof);
    free(roof);
  }
  return text;
}

/* Reads, compiles (diagnostics and the --dump-after text to stderr) and writes
 * the output: the exit status. */
static int compile(Command *cmd)
{
  size_t len = 0;
  char *src = cli_read_source(cmd->input, &len);
  if (!src)
    return 1;
  cmd->opt.filename = strcmp(cmd->input, "-") ? cmd->input : "<stdin>";
  cmd->opt.defines = cmd->defs;
  cmd->opt.ndefines = cmd->ndefs;
  cmd->opt.sizes = cmd->sizes;
  cmd->opt.nsizes = cmd->nsizes;
  cmd->opt.buckets = cmd->buckets;
  cmd->opt.nbuckets = cmd->nbuckets;
  tilec_result *r = NULL;
  tilec_status st = tilec_compile_flags(src, len, &cmd->opt, cmd->flags, &r);
  fputs(tilec_result_diagnostics_text(r), stderr);
  if (cmd->remarks)
    fputs(tilec_result_remarks_text(r), stderr);
  if (cmd->opt.dump_after)
    fputs(tilec_result_dump(r), stderr);
  int rc = 1;
  char *text = st == TILEC_OK ? report_with_roofline(cmd, r) : NULL;
  if (text) {
    char *owned = NULL;
    const char *output = cmd->output ? cmd->output : default_output(cmd, &owned);
    if (cli_write_file(output, text, strlen(text)) == 0)
      rc = 0;
    free(owned);
  }
  free(text);
  tilec_result_free(r);
  free(src);
  return rc;
}

int main(int argc, char **argv)
{
  Command cmd = {.opt = {.opt_level = 3, .arch = target_default()->name},
                 .defs = calloc((size_t)argc + 1, sizeof *cmd.defs),
                 .owned = calloc((size_t)argc + 1, sizeof *cmd.owned)};
  if (!cmd.defs || !cmd.owned)
    return 1;
  /* Past a file size limit, a write fails with EFBIG (reported, the
   * temporary removed) instead of the process being killed. */
  signal(SIGXFSZ, SIG_IGN);
  /* `tilec run FILE.tl ...` runs a kernel on the CPU (run.c); anything else compiles. */
  int rc = argc > 1 && !strcmp(argv[1], "run")    ? run_command(argc - 1, argv + 1)
           : argc > 1 && !strcmp(argv[1], "tune") ? tune_command(argc - 1, argv + 1)
                                                  : parse_args(argc, argv, &cmd);
  if (rc == COMPILE)
    rc = compile(&cmd);
  /* A file system may report a failed write only when the file is closed.
   * EBADF: standard output was never open, or the descriptor was ours. */
  if (close(STDOUT_FILENO) != 0 && errno != EBADF && errno != EINTR && rc == 0)
    rc = cli_output_error("writing", "-", errno);
  for (int i = 0; i < cmd.nowned; i++)
    free(cmd.owned[i]);
  free(cmd.owned);
  free(cmd.defs);
  free(cmd.sizes);
  free(cmd.size_text);
  for (int i = 0; i < cmd.nbuckets; i++) {
    free((tilec_define *)cmd.buckets[i].sizes);
    free(cmd.bucket_text[i]);
  }
  free(cmd.bucket_text);
  free(cmd.buckets);
  return rc;
}
