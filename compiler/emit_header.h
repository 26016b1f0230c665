/* emit_header.h: tilec --emit=header, the ahead-of-time C launchers (docs/cli.md). */
#ifndef TILEC_EMIT_HEADER_H
#define TILEC_EMIT_HEADER_H

#include <stddef.h>

#include "tilec_runtime.h"

/* A self-contained C header for the kernels of `ptx` (whose parsed metadata is `meta`): the PTX as
 * a string, a lazily loaded module, and per kernel NAME_grid and NAME_launch. `source_name` names
 * the header's own identifiers (its base name without .tl); `command` goes into the banner.
 * Returns malloc'd text, or NULL with the reason in err (a name that cannot become C). */
char *emit_c_header(const char *ptx, const tl_meta *meta, const char *source_name, const char *command,
                    char *err, size_t err_size);

#endif
