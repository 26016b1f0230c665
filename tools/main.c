/* main.c: the tilec command line, with clang's and nvcc's conventions. */
#include "file.h"   /* runtime/file.h: the one whole-file reader */
#include "passes.h" /* passes/passes.h: the pipeline's steps, for --help */
#include "target.h" /* ir/target.h */
#include "tilec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A printf format: the list of targets and the default one (ir/target.h), the
 * pipeline's steps by group (passes/pipeline.c). */
static const char USAGE[] =
    "usage: tilec [options] FILE.tl\n"
    "\n"
    "Compiles a .tl tile program to PTX.\n"
    "\n"
    "options:\n"
    "  -o FILE             write the output to FILE ('-' for stdout; default: FILE.ptx beside the input)\n"
    "  --arch=ARCH         target: %s (default %s)\n"
    "  -D NAME=VALUE       override the kernel constant NAME (also -DNAME=VALUE)\n"
    "  --kernel NAME       compile only the kernel NAME\n"
    "  --emit=KIND         tokens, ast, tir, llvm, ptx (default) or header (C launchers\n"
    "                      with the PTX embedded; see docs/cli.md)\n"
    "  --dump-after=PASS   print the tile IR after PASS to stderr: a step of the pipeline,\n"
    "                      a group (its last step), all (every step) or groups:\n"
    "%s"
    "  -O0 -O1 -O2 -O3     LLVM optimization level (default -O3)\n"
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

/* Output errors: "cannot write 'x.ptx': ..." when the file cannot be opened or
 * put in place, "writing 'x.ptx': ..." when a write fails; -1. */
static int output_error(const char *what, const char *path, int err)
{
  if (!strcmp(path, "-"))
    fprintf(stderr, "tilec: error: %s <stdout>: %s\n", what, strerror(err));
  else
    fprintf(stderr, "tilec: error: %s '%s': %s\n", what, path, strerror(err));
  return -1;
}

/* All of text, or -1 with errno (ENOSPC on a full disk, EPIPE on a closed pipe). */
static int write_all(int fd, const char *text, size_t len)
{
  while (len) {
    ssize_t w = write(fd, text, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return -1;
    }
    text += w;
    len -= (size_t)w;
  }
  return 0;
}

/* "-", /dev/stdout, /dev/stderr, /dev/fd/N: the descriptor we already hold, so
 * that `-o /dev/stdout >>log` appends as the shell set it up; -1 for others. */
static int named_fd(const char *path)
{
  if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"))
    return STDOUT_FILENO;
  if (!strcmp(path, "/dev/stderr"))
    return STDERR_FILENO;
  const char *num = NULL;
  if (!strncmp(path, "/dev/fd/", 8))
    num = path + 8;
  else if (!strncmp(path, "/proc/self/fd/", 14))
    num = path + 14;
  if (!num || !*num || strspn(num, "0123456789") != strlen(num) || strlen(num) > 6)
    return -1;
  return atoi(num);
}

/* Creates or replaces the regular file at path atomically: the text goes to a
 * temporary that mkstemp creates (O_EXCL: nothing planted under its name is
 * followed) in the same folder, which is then renamed over path.  The mode is
 * the old file's (old != NULL), else 0666 less the umask, as a plain create
 * gives.  The temporary never outlives an error; the signals that would end
 * the process are held off while it exists. */
static int replace_regular(const char *path, const char *shown, const char *text, const struct stat *old)
{
  const char *slash = strrchr(path, '/');
  int dirlen = slash ? (int)(slash - path) + 1 : 0;
  size_t n = (size_t)dirlen + sizeof ".tilec-XXXXXX";
  char *tmp = malloc(n);
  if (!tmp)
    return output_error("cannot write", shown, ENOMEM);
  snprintf(tmp, n, "%.*s.tilec-XXXXXX", dirlen, path);
  sigset_t fatal, saved;
  sigemptyset(&fatal);
  sigaddset(&fatal, SIGINT);
  sigaddset(&fatal, SIGTERM);
  sigaddset(&fatal, SIGHUP);
  sigaddset(&fatal, SIGQUIT);
  sigprocmask(SIG_BLOCK, &fatal, &saved);
  int rc = 0, fd = mkstemp(tmp);
  if (fd < 0) {
    rc = output_error("cannot write", shown, errno);
  } else {
    mode_t mask = umask(0);
    umask(mask);
    /* the old file's owner where we may (only root can give a file away) */
    if (old && (old->st_uid != geteuid() || old->st_gid != getegid()))
      (void)!fchown(fd, old->st_uid, old->st_gid);
    if (fchmod(fd, old ? old->st_mode & 0777 : 0666 & ~mask) != 0)
      rc = output_error("cannot write", shown, errno);
    else if (write_all(fd, text, strlen(text)) != 0)
      rc = output_error("writing", shown, errno);
    if (close(fd) != 0 && rc == 0)
      rc = output_error("writing", shown, errno);
    if (rc == 0 && rename(tmp, path) != 0)
      rc = output_error("cannot write", shown, errno);
    if (rc != 0)
      unlink(tmp);
  }
  sigprocmask(SIG_SETMASK, &saved, NULL);
  free(tmp);
  return rc;
}

/* The target of the symbolic link at path, as a path from here. */
static char *link_target(const char *path)
{
  for (size_t cap = 256; cap <= ((size_t)1 << 20); cap *= 2) {
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    char *buf = malloc(dirlen + cap);
    if (!buf)
      return NULL;
    ssize_t got = readlink(path, buf + dirlen, cap);
    if (got >= 0 && (size_t)got < cap) {
      buf[dirlen + (size_t)got] = 0;
      if (buf[dirlen] == '/')
        memmove(buf, buf + dirlen, (size_t)got + 1);
      else
        memcpy(buf, path, dirlen);
      return buf;
    }
    free(buf);
    if (got < 0)
      return NULL;
  }
  errno = ENAMETOOLONG;
  return NULL;
}

/* Writes the output to path, shown as `shown` in messages:
 *   regular file, or none: replaced atomically (replace_regular);
 *   symbolic link: the same for what it names, the link stays;
 *   device, FIFO, /dev/stdout: written in place, as the shell's > does.
 * Reports and returns -1 on any failure. */
static int write_path(const char *path, const char *shown, const char *text, int depth)
{
  int fd = named_fd(path);
  if (fd >= 0)
    return write_all(fd, text, strlen(text)) == 0 ? 0 : output_error("writing", shown, errno);
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno != ENOENT)
      return output_error("cannot write", shown, errno);
    return replace_regular(path, shown, text, NULL); /* a new file */
  }
  if (S_ISREG(st.st_mode))
    return replace_regular(path, shown, text, &st);
  if (S_ISDIR(st.st_mode))
    return output_error("cannot write", shown, EISDIR);
  if (S_ISLNK(st.st_mode)) {
    if (depth >= 40)
      return output_error("cannot write", shown, ELOOP);
    char *target = link_target(path);
    if (!target)
      return output_error("cannot write", shown, errno);
    int rc = write_path(target, shown, text, depth + 1);
    free(target);
    return rc;
  }
  fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return output_error("cannot write", shown, errno);
  int rc = write_all(fd, text, strlen(text)) == 0 ? 0 : output_error("writing", shown, errno);
  if (close(fd) != 0 && rc == 0)
    rc = output_error("writing", shown, errno);
  return rc;
}

/* What the command line asks for. */
typedef struct {
  tilec_options opt;
  const char *input, *output;
  tilec_define *defs; /* argc of them at most */
  char **owned;       /* the -D names, strndup'd */
  int ndefs, nowned;
} Command;

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
      return write_path("-", "-", text, 0) ? 1 : 0;
    } else if (!strcmp(a, "--version")) {
      char line[64];
      snprintf(line, sizeof line, "tilec %s\n", tilec_version());
      return write_path("-", "-", line, 0) ? 1 : 0;
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
    } else if (!strcmp(a, "--kernel") || !strncmp(a, "--kernel=", 9)) {
      const char *v = a[8] == '=' ? a + 9 : (++i < argc ? argv[i] : NULL);
      if (!v || !*v)
        return usage_error("%s needs a kernel name", "--kernel");
      opt->kernel = v;
    } else if (!strncmp(a, "--emit=", 7)) {
      /* in tilec_emit's order */
      static const char *kinds[] = {"ptx", "llvm", "tir", "ast", "tokens", "header"};
      int k = -1;
      for (int j = 0; j < (int)(sizeof kinds / sizeof *kinds); j++)
        if (!strcmp(a + 7, kinds[j]))
          k = j;
      if (k < 0)
        return usage_error("unknown --emit kind '%s'; expected tokens, ast, tir, llvm, ptx or header", a + 7);
      opt->emit = (tilec_emit)k;
    } else if (!strncmp(a, "--dump-after=", 13)) {
      opt->dump_after = a + 13;
    } else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      opt->opt_level = a[2] - '0';
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option '%s'", a);
    } else if (cmd->input) {
      return usage_error("more than one input file ('%s')", a);
    } else
      cmd->input = a;
  }
  if (!cmd->input)
    return usage_error("%s", "no input file");
  return COMPILE;
}

/* The input, the file or standard input for "-"; NULL after reporting why. */
static char *read_input(const char *input, size_t *len)
{
  char *src;
  int err;
  /* At most the library's limit (docs/cli.md), and one byte more, so that
   * /dev/zero fails at once instead of filling memory. */
  tl_read_status st = strcmp(input, "-") ? tl_read_file(input, TILEC_MAX_SOURCE_BYTES, &src, len, &err)
                                         : tl_read_fd(STDIN_FILENO, TILEC_MAX_SOURCE_BYTES, &src, len, &err);
  if (st == TL_READ_TOO_LARGE)
    fprintf(stderr, "tilec: error: cannot read '%s': source is larger than %zu bytes\n", input,
            TILEC_MAX_SOURCE_BYTES);
  else if (st != TL_READ_OK)
    fprintf(stderr, "tilec: error: cannot read '%s': %s\n", input, strerror(err));
  return src;
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

/* Reads, compiles (diagnostics and the --dump-after text to stderr) and writes
 * the output: the exit status. */
static int compile(Command *cmd)
{
  size_t len = 0;
  char *src = read_input(cmd->input, &len);
  if (!src)
    return 1;
  cmd->opt.filename = strcmp(cmd->input, "-") ? cmd->input : "<stdin>";
  cmd->opt.defines = cmd->defs;
  cmd->opt.ndefines = cmd->ndefs;
  tilec_result *r = NULL;
  tilec_status st = tilec_compile(src, len, &cmd->opt, &r);
  fputs(tilec_result_diagnostics_text(r), stderr);
  if (cmd->opt.dump_after)
    fputs(tilec_result_dump(r), stderr);
  int rc = 1;
  if (st == TILEC_OK) {
    char *owned = NULL;
    const char *output = cmd->output ? cmd->output : default_output(cmd, &owned);
    if (write_path(output, output, tilec_result_output(r), 0) == 0)
      rc = 0;
    free(owned);
  }
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
  int rc = parse_args(argc, argv, &cmd);
  if (rc == COMPILE)
    rc = compile(&cmd);
  /* A file system may report a failed write only when the file is closed.
   * EBADF: standard output was never open, or the descriptor was ours. */
  if (close(STDOUT_FILENO) != 0 && errno != EBADF && errno != EINTR && rc == 0)
    rc = output_error("writing", "-", errno);
  for (int i = 0; i < cmd.nowned; i++)
    free(cmd.owned[i]);
  free(cmd.owned);
  free(cmd.defs);
  return rc;
}
