/* runtime_internal.h: what the runtime's own files share and hosts never see.
 * Sections: messages (used everywhere), meta.c (grid programs), plan.c (tensor maps), cpu.c (the CPU device's
 * memory), runtime.c (what the JIT library, tilec_jit, reaches inside a context, and the hook through which
 * it runs the CPU device's kernels).
 */
#ifndef TILEC_RUNTIME_INTERNAL_H
#define TILEC_RUNTIME_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tilec_runtime.h"

/* ------------------------------------------------------------------------------------- messages */

/* printf into a caller's error buffer, which may be NULL or 0 bytes (then the message is dropped:
 * the status alone still says what happened). Truncates, always NUL-terminates. */
static inline void tl_vfmt(char *buf, size_t size, const char *fmt, va_list ap)
{
  if (buf && size > 0)
    vsnprintf(buf, size, fmt, ap);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void
tl_fmt(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  tl_vfmt(buf, size, fmt, ap);
  va_end(ap);
}

/* Longest message a context keeps: the driver's PTX error log can be long, and truncating it is
 * better than losing the first error. */
#define TL_MESSAGE_MAX 16384

/* ----------------------------------------------------------------------------------------- meta.c */

/* A grid axis's RPN program, checked at parse time (names resolved, stack depth known), so that
 * evaluation cannot fail except on values: division by zero, overflow, a scalar out of range. */
typedef enum tl_rpn_op {
  TL_RPN_CONST,
  TL_RPN_PARAM, /* push the value of params[param] (a size or an integer scalar) */
  TL_RPN_ADD,
  TL_RPN_SUB,
  TL_RPN_MUL,
  TL_RPN_DIV,
  TL_RPN_MOD,
  TL_RPN_MIN,
  TL_RPN_MAX,
  TL_RPN_CEILDIV,
  TL_RPN_NUM_SMS, /* push the device's multiprocessor count (token `num_sms`) */
  TL_RPN_LT,      /* comparisons and logic push 1 or 0 */
  TL_RPN_LE,
  TL_RPN_GT,
  TL_RPN_GE,
  TL_RPN_EQ,
  TL_RPN_NE,
  TL_RPN_AND,
  TL_RPN_OR,
  TL_RPN_NEXT_POW2, /* unary: the smallest power of two >= a (1 for a <= 1) */
  TL_RPN_SELECT,    /* ternary: c a b select is a if c != 0, else b */
  TL_RPN_LCONST,    /* push the value of launch constant `param` (an earlier one) */
} tl_rpn_op;

typedef struct tl_rpn_token {
  tl_rpn_op op;
  int param;     /* TL_RPN_PARAM, TL_RPN_LCONST */
  int64_t value; /* TL_RPN_CONST */
} tl_rpn_token;

struct tl_grid_program {
  int ntokens;
  int max_depth;
  tl_rpn_token *tokens;
};

/* Evaluate with values[i] the value of params[i] (only the params the program names are read;
 * known[i] false means the value could not be represented as int64, e.g. a u64 above INT64_MAX)
 * and num_sms the device's multiprocessor count (0: not known, refused if the program reads it).
 * Errors are TL_ERR_BAD_ARGUMENT: the program is well formed, the values are what fail. */
tl_status tl_grid_eval(const tl_kernel_info *kernel, int axis, const int64_t *values, const bool *known,
                       int64_t num_sms, int64_t *out, char *err, size_t err_size);
/* The same for the launch constants: consts[i] for every i < kernel->nconsts, in order (each may
 * read the ones before it). */
tl_status tl_consts_eval(const tl_kernel_info *kernel, const int64_t *values, const bool *known,
                         int64_t num_sms, int64_t *consts, char *err, size_t err_size);

/* ----------------------------------------------------------------------------------------- plan.c */

/* The CUtensorMapDataType of an element type (bytes are bytes to a load: bool and i8 are UINT8);
 * false for none. tl_tmap_encoding_of and the AOT launchers (compiler/emit_header.c) use it. */
bool tl_tmap_data_type(tl_dtype dtype, int *out);
/* The row-major contiguous strides (elements) of a shape, into out[0..rank); false if they overflow
 * int64 (extents of 0 count as 1). */
bool tl_contiguous_strides(int rank, const int64_t *shape, int64_t *out);
/* The elements from a tensor argument's first element to its last, inclusive (0 when empty), by its
 * shape and strides (value.strides, NULL: contiguous); false if that overflows int64. */
bool tl_tensor_span(const tl_arg *a, uint64_t *elems);

/* ------------------------------------------------------------------------------------------ cpu.c */

/* The CPU device's allocations: host memory, a tl_devptr being its address, tracked so that bad
 * pointers are errors. Messages go to (err, err_size). */
typedef struct tl_host_heap tl_host_heap;

tl_host_heap *tl_host_heap_create(void);    /* NULL: out of memory */
void tl_host_heap_destroy(tl_host_heap *h); /* frees every allocation left; NULL is fine */
/* 256-byte aligned (as cuMemAlloc), filled with 0xFF bytes; bytes > 0. */
tl_status tl_host_alloc(tl_host_heap *h, size_t bytes, tl_devptr *out, char *err, size_t err_size);
/* ptr must be the start of an allocation (TL_ERR_BAD_ARGUMENT otherwise); not 0. */
tl_status tl_host_free(tl_host_heap *h, tl_devptr ptr, char *err, size_t err_size);
/* The host address of [ptr, ptr + bytes) if it lies inside one allocation, else NULL with a
 * message that starts with `what` ("tl_memcpy_htod", "argument 0 ('A')"). */
void *tl_host_span(const tl_host_heap *h, tl_devptr ptr, size_t bytes, const char *what, char *err,
                   size_t err_size);

/* -------------------------------------------------------------------- runtime.c, for tilec_jit */

/* printf into the context's message; returns `status`. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
tl_status
tl_context_fail(tl_context *ctx, tl_status status, const char *fmt, ...);
/* Clear the context's message; returns TL_OK. */
tl_status tl_context_succeed(tl_context *ctx);

/* One object that the JIT hangs on a context (its cache, for one), destroyed with the context after
 * the context's modules are unloaded. Setting replaces (and destroys) the previous one. */
void *tl_context_jit_state(const tl_context *ctx);
void tl_context_set_jit_state(tl_context *ctx, void *state, void (*destroy)(void *state));

/* Have the driver compile `ptx` (NUL-terminated) to a device binary for the context's device, with
 * cuLinkCreate / cuLinkAddData / cuLinkComplete. *image is malloc'd (the caller frees it). Fails as
 * tl_module_load_ptx does (TL_ERR_PTX_REJECTED with the driver's log). */
tl_status tl_context_link_ptx(tl_context *ctx, const char *ptx, void **image, size_t *image_size);

/* tl_module_load_ptx for an image that is either the PTX itself (image == ptx) or a device binary
 * the driver made from it (tl_context_link_ptx): the metadata always comes from `ptx`. A device
 * binary the driver refuses gives TL_ERR_PTX_REJECTED, so that the caller can fall back to the
 * PTX. */
tl_status tl_module_load_image(tl_context *ctx, const char *ptx, const void *image, tl_module **out);

/* The CPU device's hook. The runtime cannot run a kernel on the host itself: the interpreter sits
 * above it (interp/, run by jit/cpu.c), so a module of the CPU device carries the functions that
 * do, and tl_launch calls them. Before `launch` is called the arguments have passed exactly the
 * GPU's checks (tl_plan_launch_sms with the device's sm_count; the grid is not empty), and every
 * non-empty tensor lies inside one allocation of the context, so args[i].ptr is a host address
 * with prod(shape) elements behind it. `launch` runs the kernel to the end and returns TL_OK or a
 * status, having set the context's message (tl_context_fail / tl_context_succeed). */
typedef struct tl_host_module_ops {
  tl_status (*launch)(tl_context *ctx, void *state, int kernel, const tl_kernel_info *info,
                      const tl_arg *args, int nargs, const tl_launch_plan *plan);
  void (*destroy)(void *state); /* at tl_module_unload */
} tl_host_module_ops;

/* The launch constants and the grid a kernel's last plan evaluated, with what they were evaluated
 * from (the integer values of the parameters, sizes and i32 scalars, and num_sms): a plan of the
 * same values takes them as they are. They depend on nothing else, and their programs (divisions,
 * mostly: examples/matmul.tl's seven constants took ~0.85 us on the CPU machine, its plan 0.15 us
 * with the memo) were most of tl_launch's host time. */
typedef struct tl_const_memo {
  bool filled;
  int num_sms;
  int64_t values[TL_PLAN_INLINE_PARAMS];
  bool known[TL_PLAN_INLINE_PARAMS];
  int64_t consts[TL_MAX_LAUNCH_CONSTS];
  uint32_t grid[3];
} tl_const_memo;

/* tl_plan_launch_sms with a memo (NULL: none) that it reads and updates; a kernel of more than
 * TL_PLAN_INLINE_PARAMS parameters evaluates every time. */
tl_status tl_plan_launch_memo(const tl_kernel_info *kernel, const tl_arg *args, int nargs, int num_sms,
                              tl_const_memo *memo, tl_launch_plan *plan, char *err, size_t err_size);

/* Is this a CPU device context (TL_DEVICE_CPU)? false for NULL. */
bool tl_context_is_cpu(const tl_context *ctx);
/* Did $TILEC_NO_TMA, read when ctx was created, ask for the paths without TMA? false for NULL. */
bool tl_context_no_tma(const tl_context *ctx);
/* Can a launch in ctx have tensor maps: a GPU context whose driver encodes them, without
 * $TILEC_NO_TMA? */
bool tl_context_can_encode_tmaps(const tl_context *ctx);
/* Whether code for `arch` launched in ctx gets the TMA forms alone (tilec --tma-only): sm_90a in a
 * context that can encode tensor maps. tl_module_compile and tilec tune build so. */
bool tl_context_tma_only(const tl_context *ctx, const char *arch);

/* A module of the CPU device: the metadata from `ptx` (the PTX the GPU would load, for its
 * tilec-meta block alone: the driver never sees it), kernel i of the metadata launched through
 * ops->launch(ctx, state, i, ...). The module owns `state` from this call on, also when it fails
 * (then it is destroyed at once). TL_ERR_UNSUPPORTED on a GPU context. */
tl_status tl_module_load_host(tl_context *ctx, const char *ptx, const tl_host_module_ops *ops, void *state,
                              tl_module **out);

/* The JIT's hook for launch constants (tl_launch_const). A module compiled from source carries the
 * function that compiles one of its kernels for other values of its launch constants; tl_launch
 * calls it when a launch's sizes give values that differ from the compiled ones, or when a tuning
 * result applies to the launch (and no variant made earlier has them), keeps the variant, and
 * launches it. `compile` returns a loaded module
 * (in the context's list, as tl_module_compile leaves it: the runtime takes it out and owns it)
 * holding the kernel info->name with no launch constants left, or a status with the context's
 * message set. The base module owns `state` (destroy at unload). */
typedef struct tl_variant_ops {
  /* tuned: the tuning result (tilec tune) that applies to this launch of the kernel, an index >= 0,
   * or -1: none (NULL: never). It makes a variant too, even at the compiled constants' values. */
  int (*tuned)(void *state, const tl_kernel_info *info, const tl_launch_plan *plan);
  /* compile: the variant for the launch constants' values and the tuning result, with both forms
   * (the kernel's tma_required off) when `both` (a launch that cannot have tensor maps) */
  tl_status (*compile)(tl_context *ctx, void *state, const tl_kernel_info *info, const int64_t *values,
                       int tuned, bool both, tl_module **out);
  void (*destroy)(void *state);
} tl_variant_ops;

void tl_module_set_variants(tl_module *module, const tl_variant_ops *ops, void *state);

#endif /* TILEC_RUNTIME_INTERNAL_H */
