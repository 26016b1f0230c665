/* libtilec_internal.h: what the CLI and the JIT ask of the compiler beyond tilec_options, whose
 * layout is ABI (docs/abi.md: it does not grow within a major version). */
#ifndef TILEC_LIBTILEC_INTERNAL_H
#define TILEC_LIBTILEC_INTERNAL_H

#include "tilec.h"

enum {
  /* tilec --tma-only: sm_90a statements that have a TMA form (pipelined loops whose tiles the copy
   * engine fills, copies a TMA store makes; docs/abi.md, "Tensor maps") get that form alone, not
   * also the form a launch with tmap_ok = 0 runs (about half the compile time of
   * examples/matmul.tl). The kernel's tmap_ok param line ends in `required`: every launch must
   * pass valid maps and tmap_ok = 1 (with 0, its TMA statements do nothing). The JIT's modules
   * are compiled so (docs/c-api.md). Refused with TILEC_EMIT_HEADER, whose launchers pass
   * tmap_ok = 0 when they cannot encode a map. */
  TILEC_COMPILE_TMA_ONLY = 1u << 0,
};

/* tilec_compile with `flags` (TILEC_COMPILE_*; 0: tilec_compile itself). */
tilec_status tilec_compile_flags(const char *src, size_t len, const tilec_options *opt, unsigned flags,
                                 tilec_result **out);

#endif /* TILEC_LIBTILEC_INTERNAL_H */
