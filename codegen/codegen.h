/* codegen.h: thread-level IR -> LLVM IR (LLVM-C API) -> PTX (LLVM's NVPTX backend).
 *
 * The input is a module whose kernels passed ir_verify(VERIFY_THREAD): no tile
 * ops, no fragments, no parallel or pipelined loops remain.  The PTX starts with
 * the "// tilec-meta" block of docs/abi.md.
 *
 * Re-entrant: every call owns its LLVM context, module and target machine, so
 * several threads may compile at once.  Errors that a user can cause (a grid
 * the metadata cannot express) come back through Diags; malformed IR is a
 * compiler bug and DIEs.
 */
#ifndef TILEC_CODEGEN_H
#define TILEC_CODEGEN_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "target.h"

typedef struct {
  const Target *target; /* a row of ir/target.h; NULL means target_default() */
  int opt_level;        /* 0..3; 0 still promotes per-thread arrays to registers */
  bool line_info;       /* .file / .loc of the .tl source in the PTX (-lineinfo) */
  const char *filename; /* the source's name for .file; NULL: "<input>" */
} CodegenOptions;

/* "LLVM 19.1.7": the LLVM that codegen was built against. */
const char *codegen_llvm_version(void);

/* Translates every kernel of m to LLVM IR text (after optimization) and/or PTX.
 * Either out pointer may be NULL.  Strings are malloc'd; the caller frees them.
 * Returns false, with an error in d at the offending kernel's location, on
 * failure; the out pointers are then left NULL. */
/* Runs fn(arg) with LLVM's fatal errors (report_fatal_error) contained: true
 * when fn returned; false when LLVM stopped with a fatal error on this thread,
 * its reason in reason[].  What fn had allocated in LLVM is then leaked.  The
 * handler is LLVM's one process-wide fatal-error handler, installed on first
 * use; outside a contained call on its thread it lets LLVM print and exit as
 * it would without one. */
bool codegen_contained(void (*fn)(void *arg), void *arg, char *reason, size_t reason_size);

bool codegen_module(const Module *m, const CodegenOptions *opt, Diags *d, char **llvm_ir_out, char **ptx_out);

#endif
