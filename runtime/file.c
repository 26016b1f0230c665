/* file.c: the one whole-file reader (file.h). */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static tl_read_status fail(tl_read_status st, int errnum, char *buf, char **text, size_t *len, int *err)
{
  free(buf);
  *text = NULL;
  *len = 0;
  *err = errnum;
  return st;
}

tl_read_status tl_read_fd(int fd, size_t max_bytes, char **text, size_t *len, int *err)
{
  *err = 0;
  struct stat st;
  if (fstat(fd, &st) != 0)
    return fail(TL_READ_FAILED, errno, NULL, text, len, err);
  if (S_ISDIR(st.st_mode)) /* open() succeeds on a folder; read() would say EISDIR only later */
    return fail(TL_READ_FAILED, EISDIR, NULL, text, len, err);
  if (max_bytes && S_ISREG(st.st_mode) && (uint64_t)st.st_size > (uint64_t)max_bytes)
    return fail(TL_READ_TOO_LARGE, 0, NULL, text, len, err);
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 1 >= cap) { /* room for one more byte and the NUL */
      size_t want = cap ? 2 * cap : (size_t)1 << 16;
      if (max_bytes && want > max_bytes + 2)
        want = max_bytes + 2; /* max_bytes + 1 bytes, and the NUL */
      char *grown = want > cap ? realloc(buf, want) : NULL;
      if (!grown)
        return fail(TL_READ_NO_MEMORY, ENOMEM, buf, text, len, err);
      buf = grown;
      cap = want;
    }
    ssize_t got = read(fd, buf + n, cap - 1 - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return fail(TL_READ_FAILED, errno, buf, text, len, err);
    if (got == 0)
      break;
    n += (size_t)got;
    if (max_bytes && n > max_bytes)
      return fail(TL_READ_TOO_LARGE, 0, buf, text, len, err);
  }
  buf[n] = 0;
  *text = buf;
  *len = n;
  return TL_READ_OK;
}

tl_read_status tl_read_file(const char *path, size_t max_bytes, char **text, size_t *len, int *err)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(TL_READ_CANNOT_OPEN, errno, NULL, text, len, err);
  tl_read_status st = tl_read_fd(fd, max_bytes, text, len, err);
  close(fd);
  return st;
}
