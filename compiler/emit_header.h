/* emit_header.h: tilec --emit=header, the ahead-of-time C launchers (docs/cli.md). */
#ifndef TILEC_EMIT_HEADER_H
#define TILEC_EMIT_HEADER_H

#include <stddef.h>

#include "tilec_runtime.h"

/* A self-contained C header for the kernels of ptx[0 .. nv) (variants of one source compiled at
 * different sizes, whose parsed metadata are meta[]): the PTX as strings, lazily loaded modules, and
 * per kernel NAME_grid and NAME_launch (with several variants, for a kernel with launch constants,
 * NAME_variant and the per-variant NAME_grid_vV / NAME_launch_vV they dispatch to). `source_name`
 * names the header's own identifiers (its base name without .tl); `command` goes into the banner.
 * Returns malloc'd text, or NULL with the reason in err (a name that cannot become C). */
char *emit_c_header(const char *const *ptx, const tl_meta *const *meta, int nv, const char *source_name,
                    const char *command, char *err, size_t err_size);

#endif
