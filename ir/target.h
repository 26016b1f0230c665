/* target.h: the GPUs tilec compiles for, one row each, and the one place their facts live
 * (target.c).  Every layer reads them through a `const Target *`: the library and the CLI find the
 * --arch name here, the passes read the shared-memory budget and whether wgmma exists, codegen
 * the LLVM target and PTX ISA, the JIT picks a row for a device.  No dependency on ir.h, so that
 * the CLI and the JIT can include it alone.
 */
#ifndef TILEC_TARGET_H
#define TILEC_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(name, sm, arch_specific, llvm_features, ptx_isa, shared_per_block)
 *   sm                the compute capability, major * 10 + minor
 *   arch_specific     the 'a' suffix: the features of exactly that compute capability (sm_90a's
 *                     wgmma and setmaxnreg), which run on no other
 *   llvm_features     the NVPTX feature that sets the PTX ISA: the oldest that has everything the
 *                     target offers (sm_90a's wgmma and setmaxnreg need 8.0)
 *   ptx_isa           that ISA's version, as .version prints it
 *   shared_per_block  the shared memory one block may have, with the opt-in attribute (CUDA
 *                     programming guide, compute capabilities table)
 * In order of sm; messages list the names in this order.  The default target: TARGET_DEFAULT. */
#define TARGETS(X)                                   \
  X("sm_80", 80, false, "+ptx70", "7.0", 163 * 1024) \
  X("sm_86", 86, false, "+ptx71", "7.1", 99 * 1024)  \
  X("sm_89", 89, false, "+ptx78", "7.8", 99 * 1024)  \
  X("sm_90", 90, false, "+ptx80", "8.0", 227 * 1024) \
  X("sm_90a", 90, true, "+ptx80", "8.0", 227 * 1024)

/* What tilec compiles for when no target is named (tilec_options.arch NULL, no --arch, a NULL
 * CodegenOptions.target, the JIT without a device). */
#define TARGET_DEFAULT "sm_90a"

typedef struct Target {
  const char *name; /* "sm_90a": --arch, the LLVM CPU, .target */
  int sm;
  bool arch_specific;
  const char *llvm_features;
  const char *ptx_isa;
  int64_t shared_per_block;
} Target;

/* The rows, in the table's order. */
extern const Target targets[];
extern const int ntargets;

/* The row named name; NULL for NULL or a name not in the table. */
const Target *target_find(const char *name);
const Target *target_default(void);

/* The target tilec compiles for on a device of compute capability major.minor: the newest row
 * whose sm is at most the device's, an arch-specific one only on exactly its compute capability
 * (sm_90a on 9.0, sm_90 on 10.0, sm_86 on 8.7).  NULL below the oldest row or for a nonsense
 * capability (a negative part, a minor above 9). */
const Target *target_for_device(int cc_major, int cc_minor);

/* The names of every target, in the table's order, joined by ", " but for the last two, which
 * `last` joins: target_list(buf, n, " or ") is "sm_80, sm_86, sm_89, sm_90 or sm_90a".  Truncated
 * to size bytes, NUL-terminated; returns buf. */
char *target_list(char *buf, size_t size, const char *last);

#endif
