/* file.h: the one whole-file reader (file.c), for every layer that reads a file: the CLI and
 * tilec_compile_file read sources, tl_module_compile_file too, tl_module_load_file reads PTX.  It
 * lives at the bottom, in the runtime, because the runtime is built without the compiler
 * (tests/gpu/standalone) and every other reader sits above it.
 */
#ifndef TILEC_FILE_H
#define TILEC_FILE_H

#include <stddef.h>

typedef enum tl_read_status {
  TL_READ_OK,
  TL_READ_CANNOT_OPEN, /* open() failed; *err is its errno */
  TL_READ_FAILED,      /* a folder (EISDIR), or read() or fstat() failed; *err is the errno */
  TL_READ_TOO_LARGE,   /* more than max_bytes */
  TL_READ_NO_MEMORY,   /* *err is ENOMEM */
} tl_read_status;

/* The whole of the file at path, in *text (malloc'd, a NUL after its *len bytes; the file may hold
 * NULs of its own).  At most max_bytes + 1 bytes are read (max_bytes 0: no limit), so that
 * /dev/zero fails at once rather than filling memory.  On failure *text is NULL, *len 0. */
tl_read_status tl_read_file(const char *path, size_t max_bytes, char **text, size_t *len, int *err);

/* The same for a descriptor already open (standard input), which is left open. */
tl_read_status tl_read_fd(int fd, size_t max_bytes, char **text, size_t *len, int *err);

#endif
