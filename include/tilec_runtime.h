/* tilec_runtime.h: the runtime's public C API.
 *
 * The runtime loads PTX that tilec emitted, reads the launch metadata block at its top (docs/abi.md),
 * checks launch arguments against it and launches through the CUDA driver, which it dlopen()s at run
 * time: nothing links against libcuda, so programs built with this header start (and report
 * TL_ERR_NO_DRIVER) on machines without a GPU.
 *
 * Conventions, for every function below:
 *   - the return value is a tl_status; TL_OK is 0;
 *   - on failure a message says what went wrong: functions that take a context (or a module or kernel,
 *     which belong to one) store it there, for tl_context_message(); functions that run without a
 *     context take an (err, err_size) buffer, which may be NULL / 0;
 *   - NULL pointers and out-of-range arguments give TL_ERR_BAD_ARGUMENT, never a crash;
 *   - out-parameters are set to NULL / 0 on failure.
 * docs/runtime.md has the whole contract, ownership rules included.
 */
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec_version.h" /* TILEC_VERSION_*, TILEC_API */

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================== status codes (runtime.c) */

typedef enum tl_status {
  TL_OK = 0,
  TL_ERR_NO_DRIVER,     /* libcuda.so.1 cannot be loaded, or lacks a function the runtime needs */
  TL_ERR_NO_DEVICE,     /* the driver loaded but there is no such CUDA device */
  TL_ERR_DRIVER,        /* a driver call failed; the message names the call and the CUDA error */
  TL_ERR_PTX_REJECTED,  /* the driver refused the PTX; the message holds the driver's error log */
  TL_ERR_BAD_METADATA,  /* the tilec-meta block is missing, malformed or disagrees with the PTX */
  TL_ERR_NOT_FOUND,     /* no kernel of that name in the module */
  TL_ERR_BAD_ARGUMENT,  /* NULL pointer, bad value, or launch arguments that do not fit the kernel */
  TL_ERR_OUT_OF_MEMORY, /* host or device allocation failed */
  TL_ERR_IO,            /* a file could not be read */
  TL_ERR_COMPILE,       /* the JIT's compilation failed: the message holds the diagnostics */
  TL_ERR_UNSUPPORTED,   /* the context's device cannot do this: PTX on the CPU device */
  TL_ERR_KERNEL_FAILED, /* a kernel failed as it ran: on the CPU device, an interpreter check (the
                           message: "file:line:col: error: ..." with the block) */
} tl_status;

/* "TL_OK", "TL_ERR_NO_DRIVER", ...; "TL_ERR_?" for a value outside the enum. */
TILEC_API const char *tl_status_name(tl_status status);

/* ====================================================================== element types (runtime.c) */

/* The ELEM names of docs/abi.md. Starts at 1 so that a zeroed tl_arg is rejected, not read as bool. */
typedef enum tl_dtype {
  TL_BOOL = 1,
  TL_I8,
  TL_I16,
  TL_I32,
  TL_I64,
  TL_U8,
  TL_U16,
  TL_U32,
  TL_U64,
  TL_F16,
  TL_BF16,
  TL_F32,
  TL_F64,
  TL_E4M3, /* OCP FP8 E4M3FN: 8-bit float, no infinities (appended: the values above are unchanged) */
  TL_E5M2, /* OCP FP8 E5M2 */
} tl_dtype;

/* "f32", ...; "?" for a value outside the enum. */
TILEC_API const char *tl_dtype_name(tl_dtype dtype);
/* Bytes per element (bool: 1); 0 for a value outside the enum. */
TILEC_API size_t tl_dtype_size(tl_dtype dtype);
/* The dtype of an ELEM name ("bf16" -> TL_BF16); false if the name is not one. */
TILEC_API bool tl_dtype_from_name(const char *name, tl_dtype *out);

/* ================================================= f16, bf16, e4m3 and e5m2 on the host (half.c) */

/* IEEE binary16 and bfloat16 as raw bits. Conversions to them round to nearest, ties to even, keep
 * the sign of zero, overflow to infinity and turn any NaN into a quiet NaN; conversions from them are
 * exact. No libm and no compiler support for _Float16 needed. */
TILEC_API uint16_t tl_f16_from_float(float x);
TILEC_API uint16_t tl_f16_from_double(double x); /* one rounding from double, not two through float */
TILEC_API float tl_f16_to_float(uint16_t bits);
TILEC_API uint16_t tl_bf16_from_float(float x);
TILEC_API uint16_t tl_bf16_from_double(double x);
TILEC_API float tl_bf16_to_float(uint16_t bits);

/* OCP FP8 as raw bits: e4m3 (E4M3FN: bias 7, no infinities, NaN only S.1111.111, max 448) and e5m2
 * (bias 15, IEEE-like with infinities, max 57344). Conversions to them are those of PTX's
 * cvt.rn.satfinite: round to nearest, ties to even, keep the sign of zero, and SATURATE: a magnitude
 * beyond the largest finite value, infinity included, becomes +-448 / +-57344; any NaN becomes 0x7F
 * (a NaN in both formats; the H200's cvt gives it for every NaN, either sign). Conversions from them
 * are exact (e5m2 0x7C: infinity). */
TILEC_API uint8_t tl_e4m3_from_float(float x);
TILEC_API uint8_t tl_e4m3_from_double(double x); /* one rounding from double */
TILEC_API float tl_e4m3_to_float(uint8_t bits);
TILEC_API uint8_t tl_e5m2_from_float(float x);
TILEC_API uint8_t tl_e5m2_from_double(double x);
TILEC_API float tl_e5m2_to_float(uint8_t bits);

/* ================================================================== launch metadata (meta.c)
 * The parsed "// tilec-meta" block. This part needs no driver: hosts can inspect a kernel's signature
 * and tools can validate PTX on machines without a GPU. */

typedef enum tl_param_kind {
  TL_PARAM_TENSOR = 1, /* a .tl tensor parameter: passed as a 64-bit device pointer */
  TL_PARAM_SCALAR,     /* a .tl scalar parameter: passed by value in its own type */
  TL_PARAM_SIZE,       /* a symbolic size: a 32-bit integer the runtime binds from tensor shapes */
  TL_PARAM_TMAP,       /* a Hopper TMA tensor map of a tensor param: 128 bytes (a CUtensorMap) by
                          value, which tl_launch encodes (docs/abi.md, "Tensor maps") */
  TL_PARAM_TMAP_OK,    /* a u32: 1 when every TL_PARAM_TMAP holds a valid map, else 0 */
} tl_param_kind;

/* A tensor map parameter's bytes: a CUtensorMap, 64-byte aligned. */
#define TL_TMAP_BYTES 128
#define TL_TMAP_ALIGN 64
/* The highest rank a tensor map (cuTensorMapEncodeTiled) takes. */
#define TL_TMAP_MAX_RANK 5

/* The shared-memory swizzle of a tensor map; the values are CUtensorMapSwizzle's. */
typedef enum tl_tmap_swizzle {
  TL_SWIZZLE_NONE = 0,
  TL_SWIZZLE_32B = 1,
  TL_SWIZZLE_64B = 2,
  TL_SWIZZLE_128B = 3,
} tl_tmap_swizzle;

/* What a TL_PARAM_TMAP maps: one box of one tensor param, in the tensor's own dimension order
 * (outermost first). */
typedef struct tl_tmap_info {
  int tensor;                     /* index in tl_kernel_info.params of the TL_PARAM_TENSOR */
  int rank;                       /* that tensor's rank, 1..TL_TMAP_MAX_RANK */
  uint32_t box[TL_TMAP_MAX_RANK]; /* rank entries, each 1..256; 0 beyond */
  tl_tmap_swizzle swizzle;
} tl_tmap_info;

/* One dimension of a tensor parameter: either a symbolic size or a fixed extent. */
typedef struct tl_dim {
  int size_param; /* >= 0: index in tl_kernel_info.params of the TL_PARAM_SIZE it names; -1: fixed */
  int64_t extent; /* the fixed extent, when size_param is -1 */
} tl_dim;

typedef struct tl_param {
  tl_param_kind kind;
  const char *name;
  tl_dtype dtype;     /* element type of a tensor, type of a scalar, TL_I32 for a size */
  int rank;           /* tensors: number of dims; 0 otherwise (also for tensor maps) */
  const tl_dim *dims; /* tensors: rank entries; NULL otherwise */
  tl_tmap_info tmap;  /* TL_PARAM_TMAP: what it maps; zero otherwise */
} tl_param;

struct tl_grid_program; /* a compiled grid RPN program (private) */

/* The most launch constants a kernel may have (the metadata parser refuses more). */
#define TL_MAX_LAUNCH_CONSTS 16

/* A launch constant: a .tl constant whose default uses sizes (docs/language.md, "Launch constants"),
 * evaluated from the launch's sizes. The kernel's code was compiled for `value`; a launch whose
 * sizes give other values runs that code all the same (it is correct at every size), unless the
 * module came from the JIT, which compiles and launches the variant for the values instead. */
typedef struct tl_launch_const {
  const char *name;
  int64_t value;                         /* the value the code was compiled for */
  const char *text;                      /* its program (RPN over sizes and earlier constants) */
  const struct tl_grid_program *program; /* the same, compiled (private) */
} tl_launch_const;

typedef struct tl_kernel_info {
  const char *name;         /* the PTX .entry name */
  int line;                 /* line of its "kernel" line in the PTX text, for messages */
  uint32_t threads;         /* threads per block (x; the block is threads x 1 x 1) */
  uint32_t smem;            /* dynamic shared memory bytes per block */
  int nparams;              /* every PTX parameter: the .tl parameters, the sizes, the tensor maps */
  int nargs;                /* the .tl parameters alone: what a launch passes (params[0 .. nargs-1]) */
  int nsizes;               /* the sizes: params[nargs .. nargs+nsizes-1] */
  int ntmaps;               /* the tensor maps: params[nargs+nsizes .. nargs+nsizes+ntmaps-1], and
                               then, when ntmaps > 0, the TL_PARAM_TMAP_OK (the last param) */
  const tl_param *params;   /* nparams entries, in PTX parameter order */
  const char *grid_text[3]; /* each axis's RPN program, as written */
  const struct tl_grid_program *grid[3]; /* the same, compiled (private) */
  bool uses_num_sms;             /* some grid program reads num_sms: plan it with tl_plan_launch_sms */
  int nconsts;                   /* launch constants, in declaration order (0..TL_MAX_LAUNCH_CONSTS) */
  const tl_launch_const *consts; /* nconsts entries */
  /* Appended in 0.x (the library allocates tl_kernel_info; hosts only read it). Tensors declared
   * with strides(...) (docs/language.md, "Tensor parameters"): NULL when no param has strides, else
   * nparams entries, each NULL (a contiguous tensor, or not a tensor) or, for a TL_PARAM_TENSOR
   * declared strided, rank tl_dims in element units: a TL_PARAM_SIZE bound from the argument's
   * strides, or a fixed stride (extent >= 1). */
  const tl_dim *const *strides;
  /* Appended in 0.x. Compiled with --tma-only (tilec_options.tma_only; its tmap_ok param line ends
   * in `required`): a launch must pass valid maps and tmap_ok = 1. tl_launch runs a kernel of the
   * JIT's that cannot have them through a variant compiled with both forms; one from PTX text
   * fails with TL_ERR_BAD_ARGUMENT instead. */
  bool tma_required;
} tl_kernel_info;

typedef struct tl_meta tl_meta;

/* Parse the tilec-meta block at the start of `text` (len bytes; the text need not be NUL-terminated,
 * and only the block is read). Fails with TL_ERR_BAD_METADATA and a message "line N: ..." for a
 * missing or malformed block. On success *out owns everything the tl_kernel_info pointers reach;
 * free it with tl_meta_free. */
TILEC_API tl_status tl_meta_parse(const char *text, size_t len, tl_meta **out, char *err, size_t err_size);
TILEC_API void tl_meta_free(tl_meta *meta); /* NULL is fine */
TILEC_API int tl_meta_kernel_count(const tl_meta *meta);
/* The kernel at `index`, NULL if out of range; the kernel called `name`, NULL if absent. */
TILEC_API const tl_kernel_info *tl_meta_kernel(const tl_meta *meta, int index);
TILEC_API const tl_kernel_info *tl_meta_find_kernel(const tl_meta *meta, const char *name);

/* ==================================================================== launch arguments (plan.c) */

typedef unsigned long long tl_devptr; /* a CUdeviceptr */

typedef enum tl_arg_kind { TL_ARG_TENSOR = 1, TL_ARG_SCALAR } tl_arg_kind;

/* One launch argument, for one .tl parameter, in .tl parameter order. Sizes are not passed: the
 * runtime binds them from the tensors' shapes (and strides). Build these with the tl_arg_* helpers
 * below. */
typedef struct tl_arg {
  tl_arg_kind kind;
  tl_dtype dtype;       /* tensor element type, or scalar type */
  tl_devptr ptr;        /* tensor: device address of element [0, 0, ...] */
  int rank;             /* tensor: number of dims */
  const int64_t *shape; /* tensor: rank extents; read during the call only */
  union {               /* scalar: which member depends on dtype */
    int64_t i;          /*   bool (nonzero is true) and i8 .. i64 */
    uint64_t u;         /*   u8 .. u64 */
    double f;           /*   f16, bf16 (rounded to nearest even), e4m3, e5m2 (and saturated), f32, f64 */
    /* tensor: rank strides in elements (element [i0, i1, ...] at ptr + (i0*s0 + i1*s1 + ...) *
     * the element size), read during the call only; NULL: row-major and contiguous. A parameter
     * declared without strides(...) takes only contiguous strides. */
    const int64_t *strides;
  } value;
} tl_arg;

static inline tl_arg tl_arg_tensor(tl_devptr ptr, tl_dtype dtype, int rank, const int64_t *shape)
{
  tl_arg a = {TL_ARG_TENSOR, dtype, ptr, rank, shape, {0}};
  return a;
}
/* A tensor with explicit strides (in elements; NULL is tl_arg_tensor): a view such as a padded-row
 * matrix (strides {lda, 1}) or a transposed one ({1, ld}), for a parameter declared with
 * strides(...). */
static inline tl_arg tl_arg_tensor_strided(tl_devptr ptr, tl_dtype dtype, int rank, const int64_t *shape,
                                           const int64_t *strides)
{
  tl_arg a = {TL_ARG_TENSOR, dtype, ptr, rank, shape, {0}};
  a.value.strides = strides;
  return a;
}
static inline tl_arg tl_arg_int(tl_dtype dtype, int64_t v)
{
  tl_arg a = {TL_ARG_SCALAR, dtype, 0, 0, NULL, {0}};
  a.value.i = v;
  return a;
}
static inline tl_arg tl_arg_uint(tl_dtype dtype, uint64_t v)
{
  tl_arg a = {TL_ARG_SCALAR, dtype, 0, 0, NULL, {0}};
  a.value.u = v;
  return a;
}
static inline tl_arg tl_arg_float(tl_dtype dtype, double v)
{
  tl_arg a = {TL_ARG_SCALAR, dtype, 0, 0, NULL, {0}};
  a.value.f = v;
  return a;
}
static inline tl_arg tl_arg_bool(bool v) { return tl_arg_int(TL_BOOL, v); }
static inline tl_arg tl_arg_i32(int32_t v) { return tl_arg_int(TL_I32, v); }
static inline tl_arg tl_arg_i64(int64_t v) { return tl_arg_int(TL_I64, v); }
static inline tl_arg tl_arg_f32(float v) { return tl_arg_float(TL_F32, v); }
static inline tl_arg tl_arg_f64(double v) { return tl_arg_float(TL_F64, v); }

/* Room inside a plan for this many kernel parameters, and tensor maps among them, before it
 * allocates. */
#define TL_PLAN_INLINE_PARAMS 32
#define TL_PLAN_INLINE_TMAPS 4

/* Everything cuLaunchKernel needs, checked. Filled by tl_plan_launch; params points into the plan
 * itself, so a plan must not be copied (pass it by pointer). The plan cannot encode tensor maps
 * (that needs the driver): a TL_PARAM_TMAP's params[i] points at TL_TMAP_BYTES zero bytes,
 * TL_TMAP_ALIGN-aligned, and the TL_PARAM_TMAP_OK's at a u32 0, which is a valid launch (the kernel
 * then takes its path without TMA). tl_launch encodes the maps (tl_tmap_encoding_of) and points
 * the params at them, setting the flag to 1. */
typedef struct tl_launch_plan {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t smem;
  bool empty;    /* some grid axis is 0: there is nothing to launch */
  int nparams;   /* == tl_kernel_info.nparams */
  void **params; /* nparams pointers, each to one parameter's bytes: cuLaunchKernel's kernelParams */
  int nconsts;   /* == tl_kernel_info.nconsts */
  int64_t consts[TL_MAX_LAUNCH_CONSTS]; /* the launch constants' values at this launch's sizes */
  bool variant; /* some value differs from the one compiled in: the JIT would launch a variant */
  /* private: */
  void *heap_, *tmap_heap_;
  void *inline_params_[TL_PLAN_INLINE_PARAMS];
  uint64_t inline_slots_[TL_PLAN_INLINE_PARAMS]; /* one 8-byte slot per parameter */
  unsigned char inline_tmaps_[TL_PLAN_INLINE_TMAPS * TL_TMAP_BYTES + TL_TMAP_ALIGN]; /* aligned inside */
} tl_launch_plan;

/* Check `args` against the kernel's metadata and build the launch: count, kind, element type and
 * rank of every argument, fixed dims, one value per symbolic size (every use must agree, and it must
 * fit in int32), pointer alignment, scalar ranges, then the grid programs. Fails with
 * TL_ERR_BAD_ARGUMENT and a message naming the argument ("argument 1 ('B'): expected a tensor of
 * f32, got f16"). Needs no driver. Release the plan with tl_launch_plan_release, also after a
 * failure (harmless then). */
TILEC_API tl_status tl_plan_launch(const tl_kernel_info *kernel, const tl_arg *args, int nargs,
                                   tl_launch_plan *plan, char *err, size_t err_size);
/* The same for the device with `num_sms` multiprocessors (tl_device_info.sm_count), which a grid
 * that uses `num_sms` needs (tl_kernel_info.uses_num_sms); tl_plan_launch refuses such a grid,
 * and so does a num_sms below 1. tl_launch passes its context's device. */
TILEC_API tl_status tl_plan_launch_sms(const tl_kernel_info *kernel, const tl_arg *args, int nargs,
                                       int num_sms, tl_launch_plan *plan, char *err, size_t err_size);
TILEC_API void tl_launch_plan_release(tl_launch_plan *plan);

/* The arguments of cuTensorMapEncodeTiled (cuda.h, CUDA 12+) for one tensor map, in the driver's
 * order and units (docs/abi.md, "Tensor maps"): dims innermost first, strides in bytes. */
typedef struct tl_tmap_encoding {
  int data_type;                                 /* CUtensorMapDataType */
  uint32_t rank;
  tl_devptr address;                             /* the tensor's pointer */
  uint64_t global_dim[TL_TMAP_MAX_RANK];         /* rank entries, innermost first */
  uint64_t global_strides[TL_TMAP_MAX_RANK - 1]; /* rank - 1 entries: bytes per step of dims 1.. */
  uint32_t box_dim[TL_TMAP_MAX_RANK];            /* rank entries, innermost first */
  uint32_t element_strides[TL_TMAP_MAX_RANK];    /* all 1 */
  int interleave;                                /* CU_TENSOR_MAP_INTERLEAVE_NONE (0) */
  int swizzle;                                   /* CUtensorMapSwizzle: tl_tmap_swizzle's value */
  int l2_promotion;                              /* CU_TENSOR_MAP_L2_PROMOTION_L2_128B (2) */
  int oob_fill; /* CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (0): elements out of bounds read as 0 */
} tl_tmap_encoding;

/* How to encode tensor map param `param` (a TL_PARAM_TMAP) for a launch with `args` (already
 * accepted by tl_plan_launch): true with *out filled, or false with the reason in `why` when the
 * map cannot be encoded for these arguments (a pointer not 16-byte aligned, a row stride that is
 * not a multiple of 16 bytes, an empty dim, ...): then the launch passes tmap_ok = 0. Needs no
 * driver. */
TILEC_API bool tl_tmap_encoding_of(const tl_kernel_info *kernel, int param, const tl_arg *args, int nargs,
                                   tl_tmap_encoding *out, char *why, size_t why_size);

/* ====================================================================== contexts (runtime.c) */

typedef struct tl_context tl_context;

/* The ordinal of the CPU device: host memory, and kernels run by tilec's interpreter (launches need
 * modules from the JIT, tilec_jit.h; PTX cannot run there). docs/c-api.md, "The CPU device". */
#define TL_DEVICE_CPU (-1)

/* Load the driver, cuInit, and make device `ordinal`'s primary context current on this thread.
 * On failure *out is NULL and the message goes to err: TL_ERR_NO_DRIVER ("cannot load the CUDA driver
 * (libcuda.so.1): ..."), TL_ERR_NO_DEVICE, TL_ERR_DRIVER, TL_ERR_OUT_OF_MEMORY.
 * The CPU device instead, with no driver loaded: ordinal TL_DEVICE_CPU, or $TILEC_DEVICE=cpu (any
 * ordinal); $TILEC_DEVICE=auto: the GPU if the driver and the device are there, else the CPU;
 * unset, "" or "gpu": the GPU only. Another value is TL_ERR_BAD_ARGUMENT. */
TILEC_API tl_status tl_context_create(int ordinal, tl_context **out, char *err, size_t err_size);
/* Unloads the context's remaining modules, then releases the primary context (device memory the
 * primary context still holds is freed with it once no other user retains it). NULL is fine. */
TILEC_API void tl_context_destroy(tl_context *ctx);
/* The message of the last call made with this context (or one of its modules or kernels): "" after
 * a success. Valid until the next call with the context. A context is not meant to be used from two
 * threads at once; give each thread its own (they share the device's primary context). */
TILEC_API const char *tl_context_message(const tl_context *ctx);

typedef struct tl_device_info {
  int ordinal;            /* TL_DEVICE_CPU on the CPU device */
  char name[256];
  int cc_major, cc_minor; /* compute capability: 9, 0 on an H100 / H200 */
  int sm_count;
  int max_smem_per_block; /* bytes of shared memory a block can opt in to */
  size_t total_memory;    /* bytes */
  int driver_version;     /* 13000 for CUDA 13.0 */
} tl_device_info;

TILEC_API tl_status tl_context_device(tl_context *ctx, tl_device_info *out);

/* CU_STREAM_LEGACY: the legacy default stream, named explicitly. */
#define TL_STREAM_LEGACY ((void *)1)

/* The stream that tl_launch uses when it is passed NULL (a CUstream; NULL, the default, is the
 * legacy default stream, so a context that never sets one launches as before). The context does
 * not own the stream: destroy it only after the last launch on it. */
TILEC_API tl_status tl_context_set_stream(tl_context *ctx, void *stream);
TILEC_API void *tl_context_stream(const tl_context *ctx); /* NULL for a NULL context */

/* Device memory, in the context's primary context. tl_malloc of 0 bytes gives 0 and tl_free(0) does
 * nothing, so empty tensors need no special case. Copies are synchronous.
 * On the CPU device: host memory (a tl_devptr is its address; new bytes are 0xFF), every
 * allocation tracked, so that a pointer it did not give out, a range past the end of an
 * allocation, or a free of anything but an allocation's start is TL_ERR_BAD_ARGUMENT. */
TILEC_API tl_status tl_malloc(tl_context *ctx, size_t bytes, tl_devptr *out);
TILEC_API tl_status tl_free(tl_context *ctx, tl_devptr ptr);
TILEC_API tl_status tl_memcpy_htod(tl_context *ctx, tl_devptr dst, const void *src, size_t bytes);
TILEC_API tl_status tl_memcpy_dtoh(tl_context *ctx, void *dst, tl_devptr src, size_t bytes);
TILEC_API tl_status tl_memset_d8(tl_context *ctx, tl_devptr dst, unsigned char value, size_t bytes);
/* Wait for all work in the context; reports the first asynchronous launch failure, if any. */
TILEC_API tl_status tl_synchronize(tl_context *ctx);

/* ================================================================= modules and launches (runtime.c) */

typedef struct tl_module tl_module;
typedef struct tl_kernel tl_kernel;

/* Parse the metadata of `ptx` (NUL-terminated), have the driver compile it (TL_ERR_PTX_REJECTED with
 * the driver's error log in the message), and resolve every kernel the metadata lists
 * (TL_ERR_BAD_METADATA if the PTX lacks one). Kernels that ask for more than 48 KiB of dynamic shared
 * memory are opted in here. The runtime keeps no reference to `ptx`. TL_ERR_UNSUPPORTED on the CPU
 * device, which runs .tl source (tl_module_compile, tilec_jit.h). */
TILEC_API tl_status tl_module_load_ptx(tl_context *ctx, const char *ptx, tl_module **out);
/* The same, reading the PTX from a file (TL_ERR_IO if it cannot be read; on the CPU device
 * TL_ERR_UNSUPPORTED, the file unread). */
TILEC_API tl_status tl_module_load_file(tl_context *ctx, const char *path, tl_module **out);
/* Frees the module, its metadata and its kernels. NULL is fine. */
TILEC_API void tl_module_unload(tl_module *module);
TILEC_API const tl_meta *tl_module_meta(const tl_module *module);

/* A kernel of the module by name: TL_ERR_NOT_FOUND (the message lists the kernels there are) if the
 * module has none such. The kernel belongs to the module: valid until it is unloaded. */
TILEC_API tl_status tl_module_get_kernel(tl_module *module, const char *name, tl_kernel **out);
TILEC_API const tl_kernel_info *tl_kernel_get_info(const tl_kernel *kernel);

/* Check the arguments (as tl_plan_launch) and launch on `stream` (a CUstream; NULL for the
 * context's stream, tl_context_set_stream, which is itself the legacy default stream unless set).
 * A grid with an axis of 0 launches nothing and returns TL_OK. The launch is asynchronous: errors
 * the kernel hits while running come back from a later synchronizing call. No allocation and no
 * parsing happen here (for kernels of up to TL_PLAN_INLINE_PARAMS parameters and
 * TL_PLAN_INLINE_TMAPS tensor maps).
 * A kernel with tensor maps (TL_PARAM_TMAP): each is encoded with the driver's
 * cuTensorMapEncodeTiled, or reused from the kernel's previous launch when its tensor has the same
 * pointer and dims, and tmap_ok is 1 when every map is valid; else (no such entry point in the
 * driver, $TILEC_NO_TMA set when the context was made, a tensor the TMA cannot take) the maps are
 * zeros and tmap_ok is 0, which the kernel runs correctly without TMA. Never an error.
 * On the CPU device the same checks, then every non-empty tensor must lie inside one allocation of
 * the context; the interpreter runs the kernel, blocks one after another, before tl_launch returns
 * (the stream is ignored), and a check it fails is TL_ERR_KERNEL_FAILED from this call. */
TILEC_API tl_status tl_launch(tl_kernel *kernel, const tl_arg *args, int nargs, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_RUNTIME_H */
