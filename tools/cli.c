/* cli.c: what the subcommands share (cli.h): reading the source, writing output files. */
#include "cli.h"

#include "file.h" /* runtime/file.h: the one whole-file reader */
#include "tilec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Output errors: "cannot write 'x.ptx': ..." when the file cannot be opened or
 * put in place, "writing 'x.ptx': ..." when a write fails; -1. */
int cli_output_error(const char *what, const char *path, int err)
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
static int replace_regular(const char *path, const char *shown, const char *text, size_t len,
                           const struct stat *old)
{
  const char *slash = strrchr(path, '/');
  int dirlen = slash ? (int)(slash - path) + 1 : 0;
  size_t n = (size_t)dirlen + sizeof ".tilec-XXXXXX";
  char *tmp = malloc(n);
  if (!tmp)
    return cli_output_error("cannot write", shown, ENOMEM);
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
    rc = cli_output_error("cannot write", shown, errno);
  } else {
    mode_t mask = umask(0);
    umask(mask);
    /* the old file's owner where we may (only root can give a file away) */
    if (old && (old->st_uid != geteuid() || old->st_gid != getegid()))
      (void)!fchown(fd, old->st_uid, old->st_gid);
    if (fchmod(fd, old ? old->st_mode & 0777 : 0666 & ~mask) != 0)
      rc = cli_output_error("cannot write", shown, errno);
    else if (write_all(fd, text, len) != 0)
      rc = cli_output_error("writing", shown, errno);
    if (close(fd) != 0 && rc == 0)
      rc = cli_output_error("writing", shown, errno);
    if (rc == 0 && rename(tmp, path) != 0)
      rc = cli_output_error("cannot write", shown, errno);
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
static int write_path(const char *path, const char *shown, const char *text, size_t len, int depth)
{
  int fd = named_fd(path);
  if (fd >= 0)
    return write_all(fd, text, len) == 0 ? 0 : cli_output_error("writing", shown, errno);
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno != ENOENT)
      return cli_output_error("cannot write", shown, errno);
    return replace_regular(path, shown, text, len, NULL); /* a new file */
  }
  if (S_ISREG(st.st_mode))
    return replace_regular(path, shown, text, len, &st);
  if (S_ISDIR(st.st_mode))
    return cli_output_error("cannot write", shown, EISDIR);
  if (S_ISLNK(st.st_mode)) {
    if (depth >= 40)
      return cli_output_error("cannot write", shown, ELOOP);
    char *target = link_target(path);
    if (!target)
      return cli_output_error("cannot write", shown, errno);
    int rc = write_path(target, shown, text, len, depth + 1);
    free(target);
    return rc;
  }
  fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return cli_output_error("cannot write", shown, errno);
  int rc = write_all(fd, text, len) == 0 ? 0 : cli_output_error("writing", shown, errno);
  if (close(fd) != 0 && rc == 0)
    rc = cli_output_error("writing", shown, errno);
  return rc;
}

/* The input, the file or standard input for "-"; NULL after reporting why. */
char *cli_read_source(const char *input, size_t *len)
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

int cli_write_file(const char *path, const char *data, size_t len)
{
  return write_path(path, path, data, len, 0);
}

void cli_verror(const char *fmt, va_list ap)
{
  fprintf(stderr, "tilec: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
}
