/* gpu_common.h: what gpu_suite and gpu_bench share: the context and driver table, reproducible
 * random data filled in parallel, module loading that tells "missing" from "broken", and event
 * timing. Sections by source file: gpu_common.c.
 */
#ifndef TILEC_GPU_COMMON_H
#define TILEC_GPU_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_driver.h"
#include "tilec_runtime.h"

/* Exit status of a GPU program on a machine without a GPU: "skipped", not "failed". */
enum { GPU_EXIT_NO_GPU = 2 };

/* ------------------------------------------------------------------------------- gpu_common.c */

/* Create the context on device 0, print the device, or print why not and return NULL (with
 * *no_gpu set when the reason is no driver / no device). */
tl_context *gpu_open(const char *program, bool *no_gpu);

/* Load DIR/FILE. Returns TL_OK, or TL_ERR_IO with *missing set when the file does not exist (the
 * caller skips), or the runtime's failure (message in the context). */
tl_status gpu_load(tl_context *ctx, const char *dir, const char *file, tl_module **out, bool *missing);

/* A seed for this run: from --seed if given, else from the clock; always printed by the caller so
 * that a failure can be replayed. */
uint64_t gpu_seed_from_args(int argc, char **argv, int *argi);

/* splitmix64: one 64-bit state, good enough for test data, and cheap to derive per chunk. */
static inline uint64_t gpu_next_random(uint64_t *state)
{
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi), 24 random bits. */
static inline float gpu_random_float(uint64_t *state, float lo, float hi)
{
  return lo + (hi - lo) * (float)(gpu_next_random(state) >> 40) * (1.0f / 16777216.0f);
}

/* Run body(arg, begin, end, chunk_seed) over [0, n) in fixed chunks, on all cores. Chunking does
 * not depend on the core count and each chunk's seed derives from (seed, chunk index), so data is
 * the same on every machine for the same seed. Returns the sum of what the bodies return (a count
 * of bad elements, say). */
#define GPU_CHUNK ((size_t)1 << 20) /* elements per chunk: chunk index = begin / GPU_CHUNK */
typedef size_t (*gpu_chunk_fn)(void *arg, size_t begin, size_t end, uint64_t chunk_seed);
size_t gpu_parallel_for(size_t n, uint64_t seed, gpu_chunk_fn body, void *arg);

/* Median over `reps` runs of fn(arg), each bracketed by its own pair of CUDA events on the legacy
 * default stream, after `warmup` untimed runs. fn returns false to abort (having printed why). */
typedef bool (*gpu_timed_fn)(void *arg);
bool gpu_time_median_ms(tl_context *ctx, gpu_timed_fn fn, void *arg, int warmup, int reps, double *median_ms);

/* gpu_timed_fn bodies shared by the benchmarks: one tl_launch on the default stream, and the peer,
 * one cuMemcpyDtoDAsync.  They print what failed. */
typedef struct gpu_launch_arg {
  tl_context *ctx;
  tl_kernel *kernel;
  const tl_arg *args;
  int nargs;
} gpu_launch_arg;
bool gpu_timed_launch(void *gpu_launch_arg_p);

typedef struct gpu_copy_arg {
  tl_context *ctx;
  tl_devptr dst, src;
  size_t bytes;
} gpu_copy_arg;
bool gpu_timed_copy(void *gpu_copy_arg_p);

/* The tally of a correctness program: gpu_report prints "PASS ..." or "FAIL ..." and counts it;
 * a case that cannot run counts in gpu_skipped.  The program ends with "P passed, F failed". */
extern int gpu_passed, gpu_failed, gpu_skipped;
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void gpu_report(bool ok, const char *fmt, ...);

/* Print a CUDA driver failure: "what: CUDA_ERROR_... (...)". */
void gpu_report_cuda(tl_context *ctx, const char *what, CUresult r);

#endif /* TILEC_GPU_COMMON_H */
