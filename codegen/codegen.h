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
} CodegenOptions;

/* "LLVM 19.1.7": the LLVM that codegen was built against. */
const char *codegen_llvm_version(void);

/* A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format" of
 * wgmma.mma_async): bits 0-13 the shared start address >> 4 (the address is
 * taken modulo 2^18), 16-29 the leading-dimension byte offset >> 4, 32-45 the
 * stride-dimension byte offset >> 4, 49-51 the base offset (0: every atom is
 * 1024-aligned), 62-63 the swizzle mode (1: 128-byte swizzle). */
uint64_t codegen_wgmma_desc(uint32_t start, uint32_t lbo, uint32_t sbo);
/* The leading- and stride-dimension byte offsets codegen puts in the
 * descriptors of a SWIZZLE_128B tile (ir.h) that wgmma reads as a K-major
 * (mn_major false) or MN-major operand (cg_expr.c, next to the layout). */
void codegen_wgmma_strides(const Buffer *buf, bool mn_major, uint32_t *lbo, uint32_t *sbo);

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
