/* cli.h: what the subcommands of the tilec command line share: main.c (compiling) and run.c
 * (`tilec run`) read a source the same way and write their outputs (PTX, .npy files) the same
 * way, as docs/cli.md describes (Input, Output).  Both report errors as "tilec: error: ...".
 */
#ifndef TILEC_CLI_H
#define TILEC_CLI_H

#include <stddef.h>

/* The source at input, a file or standard input for "-", of at most TILEC_MAX_SOURCE_BYTES, with
 * a NUL after its *len bytes (malloc'd); NULL after reporting why not. */
char *cli_read_source(const char *input, size_t *len);

/* Writes data[0 .. len) to path: a regular file (or none) is replaced atomically through a
 * temporary beside it, a symbolic link's target likewise, a device or FIFO is written in place;
 * "-", /dev/stdout, /dev/stderr and /dev/fd/N are the descriptors already held.  0, or -1 after
 * reporting the failure. */
int cli_write_file(const char *path, const char *data, size_t len);

/* Reports "tilec: error: WHAT 'PATH': strerror(err)" ("<stdout>" for "-"); returns -1.  WHAT is
 * "cannot write" (could not create, open or put in place) or "writing" (a write failed). */
int cli_output_error(const char *what, const char *path, int err);

/* "tilec: error: " fmt "\n" on standard error (tilec run's and tilec tune's errors). */
#include <stdarg.h>
void cli_verror(const char *fmt, va_list ap);

#endif
