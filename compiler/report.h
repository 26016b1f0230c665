/* report.h: --emit=report (report.c), a kernel's costs and layouts in plain text.
 *
 * Two views of one kernel are read: the tile IR after the `layout` step (the
 * operations as written, with fragment layouts: global traffic, FLOPs,
 * fragments) and the thread-level IR after the whole pipeline (shared tiles as
 * placed, swizzled and staged, and the accesses the lowering made of them: bank
 * conflicts from the addresses one warp's lanes compute). */
#ifndef TILEC_REPORT_H
#define TILEC_REPORT_H

#include "ir.h"
#include "target.h"

/* The sizes the report's numbers are given for: --size, and num_sms (the device's multiprocessor
 * count, which grid(...) may use); a value below 0 is not given. */
typedef struct {
  const char **names;
  const int64_t *values;
  int n;
  int64_t num_sms;
} ReportSizes;

/* Per launch, for a roofline (tilec_kernel_report in include/tilec.h says what each means). */
typedef struct {
  bool known; /* every size the launch's numbers use was given */
  double blocks, read_bytes, write_bytes, mma_flops, other_flops;
  unsigned threads;
  int64_t smem_bytes;
} ReportNumbers;

/* Appends kernel's report to out.  tile: the kernel after the "layout" step; thread: the same
 * kernel after the whole pipeline.  Fills *nums. */
void report_kernel(StrBuf *out, Arena *a, const Kernel *tile, const Kernel *thread, const Target *target,
                   const ReportSizes *sizes, ReportNumbers *nums);

#endif
