/* tilec.h: the compiler as a library.
 *
 * Compiles .tl source text to PTX (or to any intermediate form) in-process.
 * No global state: several threads may compile at once.  Nothing here exits
 * or aborts on bad input; every failure is a status plus diagnostics. */
#ifndef TILEC_H
#define TILEC_H

#include <stddef.h>

#include "tilec_version.h" /* TILEC_VERSION_*, TILEC_API */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TILEC_OK = 0,
  TILEC_ERR_SOURCE = 1,           /* the source has errors: see the diagnostics */
  TILEC_ERR_INVALID_ARGUMENT = 2, /* a NULL pointer, an unknown arch, a bad option */
  TILEC_ERR_IO = 3,               /* tilec_compile_file could not read the file */
} tilec_status;

typedef enum {
  TILEC_EMIT_PTX = 0,
  TILEC_EMIT_LLVM, /* LLVM IR text, after optimization */
  TILEC_EMIT_TIR,  /* the tile IR after every pass */
  TILEC_EMIT_AST,
  TILEC_EMIT_TOKENS,
  TILEC_EMIT_HEADER, /* a C header: the PTX embedded, one typed launch function per kernel */
  TILEC_EMIT_REPORT, /* plain text per kernel: layouts, bank conflicts, traffic, FLOPs (docs/cli.md) */
} tilec_emit;

typedef struct {
  const char *name;
  const char *value;
} tilec_define;

/* A set of sizes (--bucket): one more variant of the kernels in a C header (tilec_options.buckets),
 * at most TILEC_MAX_BUCKETS of them. */
#define TILEC_MAX_BUCKETS 64

typedef struct {
  const tilec_define *sizes;
  int nsizes;
} tilec_bucket;

typedef struct {
  const char *filename;        /* for diagnostics; NULL: "<input>" */
  const char *arch;            /* sm_80 sm_86 sm_89 sm_90 sm_90a; NULL: sm_90a */
  int opt_level;               /* 0..3; the default 0 means 0, so set it (the CLI uses 3) */
  const tilec_define *defines; /* -D NAME=VALUE overrides of kernel constants */
  int ndefines;
  const char *kernel;          /* compile only this kernel; NULL: all */
  tilec_emit emit;
  const char *dump_after;      /* pass name or "all": IR after it goes to the dump text */
  /* --size NAME=VALUE: the sizes that launch constants (constants whose default uses sizes,
   * docs/language.md) are evaluated at; a size not given reads as 2147483647 (the variant for
   * large sizes). The JIT compiles variants through defines instead (docs/c-api.md). */
  const tilec_define *sizes;
  int nsizes;
  /* TILEC_EMIT_HEADER only (--bucket): more sets of sizes, each compiled as `sizes` is into a
   * variant of the kernels with launch constants; the header's launcher evaluates the launch
   * constants at each launch's sizes and runs the variant compiled for the same values, else the
   * one for `sizes` (docs/cli.md, "--emit=header"). Variants with the same values are kept once. */
  const tilec_bucket *buckets;
  int nbuckets;
  /* Nonzero: the PTX carries .file / .loc directives for the .tl source's lines (nvcc's -lineinfo),
   * so that ptxas -lineinfo, cuobjdump / nvdisasm and Nsight Compute show .tl lines beside SASS. */
  int line_info;
} tilec_options;

/* One diagnostic, as a record.  line and column are 1-based, 0 when unknown. */
typedef struct {
  int severity; /* 0 error, 1 warning, 2 note */
  const char *file;
  int line, column;
  const char *message;
} tilec_diagnostic;

typedef struct tilec_result tilec_result;

/* The largest source tilec_compile and tilec_compile_file take, in bytes (16 MiB);
 * the CLI reads at most this much too. */
#define TILEC_MAX_SOURCE_BYTES ((size_t)16 << 20)

/* Compiles `len` bytes of source.  On return *out holds a result (also on
 * error, for its diagnostics) unless the status is TILEC_ERR_INVALID_ARGUMENT
 * with out == NULL.  Free it with tilec_result_free. */
TILEC_API tilec_status tilec_compile(const char *src, size_t len, const tilec_options *opt,
                                     tilec_result **out);

/* The same for the file at `path` ("-" is not special here).  opt->filename,
 * when NULL, becomes the path.  TILEC_ERR_IO, with one diagnostic saying why,
 * if the file cannot be read. */
TILEC_API tilec_status tilec_compile_file(const char *path, const tilec_options *opt, tilec_result **out);

/* The emitted text (PTX, LLVM IR, ...), or NULL after an error.  Owned by the result. */
TILEC_API const char *tilec_result_output(const tilec_result *r);
/* IR dumps requested with dump_after ("" if none). */
TILEC_API const char *tilec_result_dump(const tilec_result *r);
/* All diagnostics rendered as "file:line:col: error: ..." with source line and caret. */
TILEC_API const char *tilec_result_diagnostics_text(const tilec_result *r);
TILEC_API int tilec_result_num_diagnostics(const tilec_result *r);
/* Remarks, rendered as the diagnostics are ("file:line:col: remark: ..."): what an optimization did
 * not do and why (today: a gemm on sm_90a that takes mma.sync instead of wgmma), "" if none.  The
 * CLI prints them with -Rpass-missed=wgmma.  They are not among the diagnostics above. */
TILEC_API const char *tilec_result_remarks_text(const tilec_result *r);
/* The i-th diagnostic; the record's strings live as long as the result. */
TILEC_API tilec_diagnostic tilec_result_diagnostic(const tilec_result *r, int i);
TILEC_API void tilec_result_free(tilec_result *r);

/* ---- the kernels' signatures, from the PTX's metadata block (docs/abi.md) */

typedef enum {
  TILEC_PARAM_TENSOR = 1, /* passed as a device pointer */
  TILEC_PARAM_SCALAR,     /* passed by value */
  TILEC_PARAM_SIZE,       /* a symbolic size: an i32 bound from the tensors' shapes */
  TILEC_PARAM_TMAP,       /* a tensor map (sm_90a TMA), 128 bytes by value, made by the host (docs/abi.md) */
  TILEC_PARAM_TMAP_OK,    /* a u32: 1 when the host passed valid tensor maps (docs/abi.md) */
} tilec_param_kind;

typedef struct {
  tilec_param_kind kind;
  const char *name;
  const char *dtype;       /* bool i8 .. u64 f16 bf16 f32 f64 ("i32" for a size) */
  int rank;                /* tensors: the number of dims; 0 otherwise */
  const char *const *dims; /* tensors: rank entries, a size's name or a decimal extent */
  /* (A tensor declared with strides(...) has its strides in the PTX's metadata only: tl_meta_parse,
   * tl_kernel_info.strides. A member here would change the size of this array's elements.) */
} tilec_param;

typedef struct {
  const char *name;          /* the PTX .entry */
  unsigned threads;          /* threads per block */
  unsigned smem;             /* dynamic shared memory bytes per block */
  int nparams;               /* every PTX parameter: the .tl parameters, the sizes, the tensor maps */
  int nargs;                 /* the .tl parameters alone */
  const tilec_param *params; /* nparams entries, in PTX parameter order */
  const char *grid[3];       /* x, y, z: programs in reverse Polish notation (docs/abi.md) */
} tilec_kernel;

/* The kernels of a successful TILEC_EMIT_PTX or TILEC_EMIT_HEADER compilation
 * (0 otherwise), in the order of the PTX.  Owned by the result. */
TILEC_API int tilec_result_num_kernels(const tilec_result *r);
TILEC_API const tilec_kernel *tilec_result_kernel(const tilec_result *r, int i); /* NULL if out of range */

/* ---- a TILEC_EMIT_REPORT compilation's numbers per kernel (the text has the formulas) */

typedef struct {
  const char *name;
  int known;                     /* nonzero: every size the numbers below use was given (tilec_options.sizes,
                                    with "num_sms" for a grid that uses it); else they are -1 */
  double blocks;                 /* blocks per launch */
  double read_bytes;             /* global memory read per launch: whole tiles, masked tails aside */
  double write_bytes;            /* global memory written per launch */
  double mma_flops;              /* gemm's 2*M*N*K per call, per launch: the tensor cores' work */
  double other_flops;            /* elementwise arithmetic and reductions, per launch */
  unsigned threads;              /* per block */
  unsigned long long smem_bytes; /* shared memory per block */
} tilec_kernel_report;

/* The kernels of a successful TILEC_EMIT_REPORT compilation (0 otherwise), in report order.
 * Owned by the result. */
TILEC_API int tilec_result_num_reports(const tilec_result *r);
TILEC_API const tilec_kernel_report *tilec_result_report(const tilec_result *r,
                                                         int i); /* NULL if out of range */

/* Whether `arch` is a target tilec can emit for. */
TILEC_API int tilec_arch_supported(const char *arch);
/* "MAJOR.MINOR.PATCH" of the library linked, as TILEC_VERSION_* spell it for the header. */
TILEC_API const char *tilec_version(void);
/* 16 hex digits that change whenever the compiler's sources or its LLVM do:
 * what the JIT cache keys on besides tilec_version(). */
TILEC_API const char *tilec_build_id(void);

#ifdef __cplusplus
}
#endif
#endif
