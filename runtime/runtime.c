/* runtime.c: contexts, device memory, modules and launches: the parts of the API that call the
 * driver. Each object keeps its context, and every message lands in the context's buffer.
 *
 * A context is on a GPU or on the CPU device (TL_DEVICE_CPU): then it loads no driver, its memory
 * is the host's (cpu.c), PTX is refused, and its modules come from the JIT with the functions that
 * run their kernels (tl_module_load_host): every entry point below takes one branch for it.
 *
 * Threading: the driver's "current context" is per thread, so every entry point that calls the
 * driver first makes this context current (cuCtxSetCurrent is cheap), and a context can be created
 * on one thread and used on another.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* sysconf: the CPU device's memory size */

#include "cuda_driver.h"
#include "file.h"
#include "runtime_internal.h"

/* A variant of a kernel with launch constants: the kernel compiled for other values of them. */
typedef struct tl_variant {
  int64_t values[TL_MAX_LAUNCH_CONSTS];
  int tuned;         /* the tuning result it was compiled with, or -1 */
  bool both;         /* compiled with both forms, for launches without tensor maps (a kernel that
                        is tma_required: tl_launch) */
  tl_module *module; /* its own module (the JIT's), owned by the kernel it specializes */
  tl_kernel *kernel; /* NULL: it did not compile; `failed` is why, returned again without retrying */
  tl_status failed;
  char *message;
} tl_variant;

/* The last tensor map a kernel's tmap param was encoded to, with what it was encoded for: a launch
 * with the same tensor (pointer, dims and strides) reuses it instead of calling the driver again. */
typedef struct tl_tmap_entry {
  CUtensorMap map;
  tl_devptr ptr;                     /* the key */
  int64_t dims[TL_TMAP_MAX_RANK];
  int64_t strides[TL_TMAP_MAX_RANK]; /* in elements, contiguous ones when the launch gave none */
  bool filled;                       /* the key is set */
  bool valid; /* map holds the encoding for the key; false: the key cannot be encoded */
} tl_tmap_entry;

struct tl_kernel {
  tl_module *module;
  const tl_kernel_info *info; /* owned by module->meta */
  CUfunction function;
  tl_tmap_entry *tmaps;       /* info->ntmaps entries (GPU only), aligned for CUtensorMap */
  tl_variant *variants;       /* made at launches whose sizes ask for them (module->variant_ops) */
  int nvariants, cap_variants;
  int last_variant;           /* the one the previous launch used: looked at first */
  tl_const_memo memo;         /* the launch constants of the last plan (tl_plan_launch_memo) */
};

struct tl_module {
  tl_context *ctx;
  CUmodule cu_module;                /* NULL on the CPU device */
  const tl_host_module_ops *host;    /* the CPU device's: what runs the kernels; NULL on a GPU */
  void *host_state;
  const tl_variant_ops *variant_ops; /* the JIT's: compiles variants; NULL for loaded PTX */
  void *variant_state;
  tl_meta *meta;
  int nkernels;
  tl_kernel *kernels;
  tl_module *next; /* in ctx->modules, so that destroying the context unloads what is left */
};

struct tl_context {
  tl_host_heap *cpu; /* the CPU device's memory; NULL on a GPU, whose driver is drv */
  tl_cuda_driver drv;
  tl_device_info device;
  CUdevice cu_device;
  CUcontext cu_context;
  CUstream stream; /* for launches that pass NULL */
  bool no_tma;     /* $TILEC_NO_TMA: launches pass tmap_ok = 0 and encode no tensor map */
  tl_module *modules;
  void *jit;       /* tilec_jit's state (its cache), destroyed with the context */
  void (*jit_destroy)(void *jit);
  char message[TL_MESSAGE_MAX];
};

/* -------------------------------------------------------------------------------- names, sizes */

const char *tl_status_name(tl_status status)
{
  switch (status) {
  case TL_OK: return "TL_OK";
  case TL_ERR_NO_DRIVER: return "TL_ERR_NO_DRIVER";
  case TL_ERR_NO_DEVICE: return "TL_ERR_NO_DEVICE";
  case TL_ERR_DRIVER: return "TL_ERR_DRIVER";
  case TL_ERR_PTX_REJECTED: return "TL_ERR_PTX_REJECTED";
  case TL_ERR_BAD_METADATA: return "TL_ERR_BAD_METADATA";
  case TL_ERR_NOT_FOUND: return "TL_ERR_NOT_FOUND";
  case TL_ERR_BAD_ARGUMENT: return "TL_ERR_BAD_ARGUMENT";
  case TL_ERR_OUT_OF_MEMORY: return "TL_ERR_OUT_OF_MEMORY";
  case TL_ERR_IO: return "TL_ERR_IO";
  case TL_ERR_COMPILE: return "TL_ERR_COMPILE";
  case TL_ERR_UNSUPPORTED: return "TL_ERR_UNSUPPORTED";
  case TL_ERR_KERNEL_FAILED: return "TL_ERR_KERNEL_FAILED";
  }
  return "TL_ERR_?";
}

/* Indexed by tl_dtype; the order is the enum's. */
static const struct {
  const char *name;
  size_t size;
} dtype_table[] = {
    [TL_BOOL] = {"bool", 1}, [TL_I8] = {"i8", 1},     [TL_I16] = {"i16", 2},   [TL_I32] = {"i32", 4},
    [TL_I64] = {"i64", 8},   [TL_U8] = {"u8", 1},     [TL_U16] = {"u16", 2},   [TL_U32] = {"u32", 4},
    [TL_U64] = {"u64", 8},   [TL_F16] = {"f16", 2},   [TL_BF16] = {"bf16", 2}, [TL_F32] = {"f32", 4},
    [TL_F64] = {"f64", 8},   [TL_E4M3] = {"e4m3", 1}, [TL_E5M2] = {"e5m2", 1},
};
#define DTYPE_COUNT ((int)(sizeof dtype_table / sizeof dtype_table[0]))

const char *tl_dtype_name(tl_dtype dtype)
{
  return (int)dtype > 0 && (int)dtype < DTYPE_COUNT ? dtype_table[dtype].name : "?";
}

size_t tl_dtype_size(tl_dtype dtype)
{
  return (int)dtype > 0 && (int)dtype < DTYPE_COUNT ? dtype_table[dtype].size : 0;
}

bool tl_dtype_from_name(const char *name, tl_dtype *out)
{
  for (int t = 1; name && t < DTYPE_COUNT; t++)
    if (strcmp(dtype_table[t].name, name) == 0) {
      if (out)
        *out = (tl_dtype)t;
      return true;
    }
  return false;
}

/* ------------------------------------------------------------------------------------ messages */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static tl_status
set_message(tl_context *ctx, tl_status status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  tl_vfmt(ctx->message, sizeof ctx->message, fmt, ap);
  va_end(ap);
  return status;
}

static tl_status ok(tl_context *ctx)
{
  ctx->message[0] = 0;
  return TL_OK;
}

/* `status` of a call that wrote its message (if any) into ctx->message itself. */
static tl_status finish(tl_context *ctx, tl_status status) { return status == TL_OK ? ok(ctx) : status; }

tl_status tl_context_fail(tl_context *ctx, tl_status status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  tl_vfmt(ctx->message, sizeof ctx->message, fmt, ap);
  va_end(ap);
  return status;
}

tl_status tl_context_succeed(tl_context *ctx) { return ok(ctx); }

/* The status for a failed driver call outside module loading. */
static tl_status status_of(CUresult r)
{
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: return TL_ERR_OUT_OF_MEMORY;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE: return TL_ERR_NO_DEVICE;
  default: return TL_ERR_DRIVER;
  }
}

/* "cuMemAlloc(1024 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" */
static tl_status driver_failure(tl_context *ctx, CUresult r, const char *call)
{
  char text[256];
  tl_cuda_error_text(&ctx->drv, r, text, sizeof text);
  return set_message(ctx, status_of(r), "%s failed: %s", call, text);
}

const char *tl_context_message(const tl_context *ctx) { return ctx ? ctx->message : "no context (NULL)"; }

const tl_cuda_driver *tl_context_driver(const tl_context *ctx) { return ctx && !ctx->cpu ? &ctx->drv : NULL; }

bool tl_context_is_cpu(const tl_context *ctx) { return ctx && ctx->cpu; }

bool tl_context_no_tma(const tl_context *ctx) { return ctx && ctx->no_tma; }

bool tl_context_can_encode_tmaps(const tl_context *ctx)
{
  return ctx && !ctx->cpu && !ctx->no_tma && ctx->drv.cuTensorMapEncodeTiled;
}

bool tl_context_tma_only(const tl_context *ctx, const char *arch)
{
  return tl_context_can_encode_tmaps(ctx) && arch && !strcmp(arch, "sm_90a");
}

tl_status tl_context_make_current(tl_context *ctx)
{
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (ctx->cpu)
    return TL_OK;
  /* Reading the current context is a thread-local load in the driver; setting it is not free, and
   * on the launch path it is almost always already ours. */
  CUcontext current = NULL;
  if (ctx->drv.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == ctx->cu_context)
    return TL_OK;
  CUresult r = ctx->drv.cuCtxSetCurrent(ctx->cu_context);
  return r == CUDA_SUCCESS ? TL_OK : driver_failure(ctx, r, "cuCtxSetCurrent");
}

void *tl_context_jit_state(const tl_context *ctx) { return ctx ? ctx->jit : NULL; }

void tl_context_set_jit_state(tl_context *ctx, void *state, void (*destroy)(void *state))
{
  if (!ctx)
    return;
  if (ctx->jit && ctx->jit_destroy)
    ctx->jit_destroy(ctx->jit);
  ctx->jit = state;
  ctx->jit_destroy = destroy;
}

/* ------------------------------------------------------------------------------------ contexts */

/* What the CPU device says it is. It stands in for the GPU tilec is tuned for, an H100 / H200:
 * compute capability 9.0, so the JIT compiles for sm_90a and a kernel's metadata (threads, shared
 * memory, grid) is the one that device would launch, with its opt-in shared memory limit (227 KiB).
 * The multiprocessor count is what `num_sms` is in grid expressions: small, so that a persistent
 * kernel's blocks each take several tiles, as on the GPU. */
#define CPU_DEVICE_NAME "cpu (tilec interpreter)"
#define CPU_CC_MAJOR 9
#define CPU_CC_MINOR 0
#define CPU_SM_COUNT 4
#define CPU_MAX_SMEM_PER_BLOCK (227 * 1024)

static tl_status create_cpu(tl_context **out, char *err, size_t err_size)
{
  tl_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx || !(ctx->cpu = tl_host_heap_create())) {
    free(ctx);
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  tl_device_info *info = &ctx->device;
  info->ordinal = TL_DEVICE_CPU;
  snprintf(info->name, sizeof info->name, "%s", CPU_DEVICE_NAME);
  info->cc_major = CPU_CC_MAJOR;
  info->cc_minor = CPU_CC_MINOR;
  info->sm_count = CPU_SM_COUNT;
  info->max_smem_per_block = CPU_MAX_SMEM_PER_BLOCK;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  info->total_memory = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
  info->driver_version = 0;
  *out = ctx;
  tl_fmt(err, err_size, "%s", "");
  return ok(ctx);
}

/* $TILEC_DEVICE: which device tl_context_create gives. Read here only. */
typedef enum { PICK_GPU, PICK_CPU, PICK_AUTO } device_pick;

static bool pick_device(device_pick *out, char *err, size_t err_size)
{
  const char *v = getenv("TILEC_DEVICE");
  *out = !v || !*v || !strcmp(v, "gpu") ? PICK_GPU
         : !strcmp(v, "cpu")            ? PICK_CPU
         : !strcmp(v, "auto")           ? PICK_AUTO
                                        : (device_pick)-1;
  if ((int)*out < 0)
    tl_fmt(err, err_size, "TILEC_DEVICE is '%.64s'; expected cpu, gpu or auto (or unset: gpu)", v);
  return (int)*out >= 0;
}

static tl_status create_gpu(int ordinal, tl_context **out, char *err, size_t err_size);

/* $TILEC_NO_TMA, read once per context: set and neither "" nor "0", the context's launches take the
 * kernels' paths without TMA (tmap_ok = 0), so that tests run them on a GPU that has TMA. */
static bool no_tma_requested(void)
{
  const char *v = getenv("TILEC_NO_TMA");
  return v && *v && strcmp(v, "0") != 0;
}

tl_status tl_context_create(int ordinal, tl_context **out, char *err, size_t err_size)
{
  if (out)
    *out = NULL;
  if (!out) {
    tl_fmt(err, err_size, "tl_context_create: out is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  if (ordinal < TL_DEVICE_CPU) {
    tl_fmt(err, err_size, "tl_context_create: device ordinal %d is negative (and not TL_DEVICE_CPU)",
           ordinal);
    return TL_ERR_BAD_ARGUMENT;
  }
  device_pick pick;
  if (!pick_device(&pick, err, err_size))
    return TL_ERR_BAD_ARGUMENT;
  tl_status st;
  if (ordinal == TL_DEVICE_CPU || pick == PICK_CPU)
    st = create_cpu(out, err, err_size);
  else if ((st = create_gpu(ordinal, out, err, err_size)) != TL_OK && pick == PICK_AUTO &&
           (st == TL_ERR_NO_DRIVER || st == TL_ERR_NO_DEVICE))
    st = create_cpu(out, err, err_size);
  if (st == TL_OK)
    (*out)->no_tma = no_tma_requested();
  return st;
}

static tl_status create_gpu(int ordinal, tl_context **out, char *err, size_t err_size)
{
  tl_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) {
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  tl_status st = tl_cuda_driver_load(&ctx->drv, err, err_size);
  if (st != TL_OK) {
    free(ctx);
    return st;
  }
  const tl_cuda_driver *d = &ctx->drv;
  char text[256];
  CUresult r = d->cuInit(0);
  if (r != CUDA_SUCCESS) {
    /* A driver without a usable GPU (a container with the library but no device node, say)
     * answers here, so this is where "no GPU" is told apart from "broken driver". */
    st = r == CUDA_ERROR_NO_DEVICE      ? TL_ERR_NO_DEVICE
         : r == CUDA_ERROR_STUB_LIBRARY ? TL_ERR_NO_DRIVER
                                        : TL_ERR_DRIVER;
    tl_fmt(err, err_size, "cuInit failed: %s", tl_cuda_error_text(d, r, text, sizeof text));
    goto fail;
  }
  int count = 0;
  if ((r = d->cuDeviceGetCount(&count)) != CUDA_SUCCESS) {
    st = status_of(r);
    tl_fmt(err, err_size, "cuDeviceGetCount failed: %s", tl_cuda_error_text(d, r, text, sizeof text));
    goto fail;
  }
  if (ordinal >= count) {
    st = TL_ERR_NO_DEVICE;
    tl_fmt(err, err_size, "no CUDA device %d: the driver sees %d device%s", ordinal, count,
           count == 1 ? "" : "s");
    goto fail;
  }
  if ((r = d->cuDeviceGet(&ctx->cu_device, ordinal)) != CUDA_SUCCESS) {
    st = status_of(r);
    tl_fmt(err, err_size, "cuDeviceGet(%d) failed: %s", ordinal, tl_cuda_error_text(d, r, text, sizeof text));
    goto fail;
  }
  /* The primary context is the one the CUDA runtime and libraries (cuBLAS, PyTorch) use, so
   * memory and modules are shared with them rather than split across contexts. */
  if ((r = d->cuDevicePrimaryCtxRetain(&ctx->cu_context, ctx->cu_device)) != CUDA_SUCCESS) {
    st = status_of(r);
    tl_fmt(err, err_size, "cuDevicePrimaryCtxRetain failed: %s", tl_cuda_error_text(d, r, text, sizeof text));
    goto fail;
  }
  if ((r = d->cuCtxSetCurrent(ctx->cu_context)) != CUDA_SUCCESS) {
    st = status_of(r);
    tl_fmt(err, err_size, "cuCtxSetCurrent failed: %s", tl_cuda_error_text(d, r, text, sizeof text));
    d->cuDevicePrimaryCtxRelease(ctx->cu_device);
    goto fail;
  }

  /* Device facts, read once: launches check against them. Failures here are not fatal. */
  tl_device_info *info = &ctx->device;
  info->ordinal = ordinal;
  if (d->cuDeviceGetName(info->name, (int)sizeof info->name, ctx->cu_device) != CUDA_SUCCESS)
    snprintf(info->name, sizeof info->name, "CUDA device %d", ordinal);
  d->cuDeviceGetAttribute(&info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->cu_device);
  d->cuDeviceGetAttribute(&info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->cu_device);
  d->cuDeviceGetAttribute(&info->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx->cu_device);
  d->cuDeviceGetAttribute(&info->max_smem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                          ctx->cu_device);
  d->cuDeviceTotalMem(&info->total_memory, ctx->cu_device);
  d->cuDriverGetVersion(&info->driver_version);
  *out = ctx;
  tl_fmt(err, err_size, "%s", "");
  return ok(ctx);

fail:
  tl_cuda_driver_unload(&ctx->drv);
  free(ctx);
  return st;
}

void tl_context_destroy(tl_context *ctx)
{
  if (!ctx)
    return;
  while (ctx->modules)
    tl_module_unload(ctx->modules);
  tl_context_set_jit_state(ctx, NULL, NULL);
  if (ctx->cpu) {
    tl_host_heap_destroy(ctx->cpu); /* as the primary context's release frees device memory */
    free(ctx);
    return;
  }
  CUcontext current = NULL;
  if (ctx->drv.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == ctx->cu_context)
    ctx->drv.cuCtxSetCurrent(NULL);
  ctx->drv.cuDevicePrimaryCtxRelease(ctx->cu_device);
  tl_cuda_driver_unload(&ctx->drv);
  free(ctx);
}

tl_status tl_context_device(tl_context *ctx, tl_device_info *out)
{
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (!out)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_context_device: out is NULL");
  *out = ctx->device;
  return ok(ctx);
}

tl_status tl_context_set_stream(tl_context *ctx, void *stream)
{
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  ctx->stream = (CUstream)stream;
  return ok(ctx);
}

void *tl_context_stream(const tl_context *ctx) { return ctx ? (void *)ctx->stream : NULL; }

/* ------------------------------------------------------------------------------------- memory */

/* Entry-point prologue: a valid context, made current on this thread. */
#define ENTER(ctx)                                      \
  do {                                                  \
    if (!(ctx))                                         \
      return TL_ERR_BAD_ARGUMENT;                       \
    tl_status enter_st_ = tl_context_make_current(ctx); \
    if (enter_st_ != TL_OK)                             \
      return enter_st_;                                 \
  } while (0)

tl_status tl_malloc(tl_context *ctx, size_t bytes, tl_devptr *out)
{
  if (out)
    *out = 0;
  ENTER(ctx);
  if (!out)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_malloc: out is NULL");
  if (bytes == 0) /* the driver refuses 0 bytes; an empty tensor needs no memory */
    return ok(ctx);
  if (ctx->cpu)
    return finish(ctx, tl_host_alloc(ctx->cpu, bytes, out, ctx->message, sizeof ctx->message));
  CUdeviceptr p = 0;
  CUresult r = ctx->drv.cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) {
    char call[64];
    snprintf(call, sizeof call, "cuMemAlloc(%zu bytes)", bytes);
    return driver_failure(ctx, r, call);
  }
  *out = p;
  return ok(ctx);
}

tl_status tl_free(tl_context *ctx, tl_devptr ptr)
{
  ENTER(ctx);
  if (ptr == 0)
    return ok(ctx);
  if (ctx->cpu)
    return finish(ctx, tl_host_free(ctx->cpu, ptr, ctx->message, sizeof ctx->message));
  CUresult r = ctx->drv.cuMemFree(ptr);
  return r == CUDA_SUCCESS ? ok(ctx) : driver_failure(ctx, r, "cuMemFree");
}

tl_status tl_memcpy_htod(tl_context *ctx, tl_devptr dst, const void *src, size_t bytes)
{
  ENTER(ctx);
  if (bytes == 0)
    return ok(ctx);
  if (!src || !dst)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_memcpy_htod: %s is NULL", src ? "dst" : "src");
  if (ctx->cpu) {
    void *to = tl_host_span(ctx->cpu, dst, bytes, "tl_memcpy_htod", ctx->message, sizeof ctx->message);
    if (!to)
      return TL_ERR_BAD_ARGUMENT;
    memmove(to, src, bytes); /* on this device src may lie in dst's allocation */
    return ok(ctx);
  }
  CUresult r = ctx->drv.cuMemcpyHtoD(dst, src, bytes);
  return r == CUDA_SUCCESS ? ok(ctx) : driver_failure(ctx, r, "cuMemcpyHtoD");
}

tl_status tl_memcpy_dtoh(tl_context *ctx, void *dst, tl_devptr src, size_t bytes)
{
  ENTER(ctx);
  if (bytes == 0)
    return ok(ctx);
  if (!src || !dst)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_memcpy_dtoh: %s is NULL", src ? "dst" : "src");
  if (ctx->cpu) {
    const void *from = tl_host_span(ctx->cpu, src, bytes, "tl_memcpy_dtoh", ctx->message,
                                    sizeof ctx->message);
    if (!from)
      return TL_ERR_BAD_ARGUMENT;
    memmove(dst, from, bytes);
    return ok(ctx);
  }
  CUresult r = ctx->drv.cuMemcpyDtoH(dst, src, bytes);
  return r == CUDA_SUCCESS ? ok(ctx) : driver_failure(ctx, r, "cuMemcpyDtoH");
}

tl_status tl_memset_d8(tl_context *ctx, tl_devptr dst, unsigned char value, size_t bytes)
{
  ENTER(ctx);
  if (bytes == 0)
    return ok(ctx);
  if (!dst)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_memset_d8: dst is NULL");
  if (ctx->cpu) {
    void *to = tl_host_span(ctx->cpu, dst, bytes, "tl_memset_d8", ctx->message, sizeof ctx->message);
    if (!to)
      return TL_ERR_BAD_ARGUMENT;
    memset(to, value, bytes);
    return ok(ctx);
  }
  CUresult r = ctx->drv.cuMemsetD8(dst, value, bytes);
  return r == CUDA_SUCCESS ? ok(ctx) : driver_failure(ctx, r, "cuMemsetD8");
}

tl_status tl_synchronize(tl_context *ctx)
{
  ENTER(ctx);
  if (ctx->cpu) /* launches ran to the end before they returned */
    return ok(ctx);
  CUresult r = ctx->drv.cuCtxSynchronize();
  return r == CUDA_SUCCESS ? ok(ctx) : driver_failure(ctx, r, "cuCtxSynchronize");
}

/* ------------------------------------------------------------------------------------- modules */

/* The PTX's ".target sm_XX" for messages, or "?" */
static void ptx_target(const char *ptx, char *buf, size_t size)
{
  const char *t = strstr(ptx, "\n.target ");
  tl_fmt(buf, size, "?");
  if (!t)
    return;
  t += strlen("\n.target ");
  size_t n = strcspn(t, " ,\r\n\t");
  if (n > 0 && n < size) {
    memcpy(buf, t, n);
    buf[n] = 0;
  }
}

static tl_status load_failure(tl_context *ctx, CUresult r, const char *ptx, const char *log)
{
  char text[256], target[32];
  tl_cuda_error_text(&ctx->drv, r, text, sizeof text);
  switch (r) {
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_SOURCE:
    ptx_target(ptx, target, sizeof target);
    return set_message(ctx, TL_ERR_PTX_REJECTED,
                       "the CUDA driver rejected the PTX: %s [PTX .target %s; device %d is %s, "
                       "sm_%d%d; driver %d]%s%s",
                       text, target, ctx->device.ordinal, ctx->device.name, ctx->device.cc_major,
                       ctx->device.cc_minor, ctx->device.driver_version, *log ? "\n" : "", log);
  default:
    return set_message(ctx, status_of(r), "cuModuleLoadDataEx failed: %s%s%s", text, *log ? "\n" : "", log);
  }
}

/* Resolve one kernel and check what the driver knows about it against its metadata, so that a
 * launch that can never work fails here, once, with the reason. */
static tl_status bind_kernel(tl_module *m, tl_kernel *kernel)
{
  tl_context *ctx = m->ctx;
  const tl_cuda_driver *d = &ctx->drv;
  const tl_kernel_info *k = kernel->info;
  CUresult r = d->cuModuleGetFunction(&kernel->function, m->cu_module, k->name);
  if (r == CUDA_ERROR_NOT_FOUND)
    return set_message(ctx, TL_ERR_BAD_METADATA,
                       "the metadata describes kernel '%s' (line %d) but the PTX has no .entry "
                       "of that name",
                       k->name, k->line);
  if (r != CUDA_SUCCESS)
    return driver_failure(ctx, r, "cuModuleGetFunction");
  int max_threads = 0;
  if (d->cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel->function) ==
          CUDA_SUCCESS &&
      max_threads > 0 && k->threads > (uint32_t)max_threads)
    return set_message(ctx, TL_ERR_BAD_METADATA,
                       "kernel '%s' is launched with threads=%u but, with the registers it uses, "
                       "at most %d fit in a block on this device",
                       k->name, k->threads, max_threads);
  if (k->smem > TL_CUDA_DEFAULT_DYNAMIC_SMEM) {
    /* Above 48 KiB a kernel must opt in, and the opt-in limit is per device (227 KiB on H100). */
    int static_smem = 0;
    d->cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel->function);
    if (ctx->device.max_smem_per_block > 0 && (int64_t)k->smem + static_smem > ctx->device.max_smem_per_block)
      return set_message(ctx, TL_ERR_BAD_METADATA,
                         "kernel '%s' needs %u bytes of dynamic shared memory (+%d static) but %s "
                         "allows at most %d per block",
                         k->name, k->smem, static_smem, ctx->device.name, ctx->device.max_smem_per_block);
    r = d->cuFuncSetAttribute(kernel->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              (int)k->smem);
    if (r != CUDA_SUCCESS) {
      char call[300];
      snprintf(call, sizeof call, "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)", k->name,
               k->smem);
      return driver_failure(ctx, r, call);
    }
  }
  return TL_OK;
}

/* Options that make the driver keep its logs: its log is the only account of why it refuses. */
enum { LOG_BYTES = 8192 };
typedef struct jit_logs {
  char *error, *info;
  CUjit_option options[4];
  void *values[4];
} jit_logs;

static bool jit_logs_init(jit_logs *l)
{
  l->error = calloc(1, LOG_BYTES);
  l->info = calloc(1, LOG_BYTES);
  if (!l->error || !l->info) {
    free(l->error);
    free(l->info);
    return false;
  }
  const CUjit_option options[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                   CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  memcpy(l->options, options, sizeof options);
  l->values[0] = l->error;
  l->values[1] = (void *)(uintptr_t)LOG_BYTES;
  l->values[2] = l->info;
  l->values[3] = (void *)(uintptr_t)LOG_BYTES;
  return true;
}

static void jit_logs_free(jit_logs *l)
{
  free(l->error);
  free(l->info);
}

/* What a CPU context says to PTX. */
static tl_status refuse_ptx(tl_context *ctx, const char *call)
{
  return set_message(ctx, TL_ERR_UNSUPPORTED,
                     "%s: a CPU context runs .tl source: compile it with tl_module_compile / the JIT "
                     "(tilec_jit.h)",
                     call);
}

static void module_free(tl_module *m);

/* A new module of ctx with the metadata of `ptx`, not yet in ctx->modules. */
static tl_status module_new(tl_context *ctx, const char *ptx, tl_module **out)
{
  tl_module *m = calloc(1, sizeof *m);
  if (!m)
    return set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  m->ctx = ctx;
  char why[1024];
  tl_status st = tl_meta_parse(ptx, strlen(ptx), &m->meta, why, sizeof why);
  if (st != TL_OK) {
    free(m);
    return set_message(ctx, st, "tilec-meta: %s", why);
  }
  m->nkernels = tl_meta_kernel_count(m->meta);
  m->kernels = calloc((size_t)m->nkernels + 1, sizeof *m->kernels);
  if (!m->kernels) {
    tl_meta_free(m->meta);
    free(m);
    return set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < m->nkernels; i++) {
    tl_kernel *kernel = &m->kernels[i];
    kernel->module = m;
    kernel->info = tl_meta_kernel(m->meta, i);
    const size_t bytes = sizeof(tl_tmap_entry) * (size_t)kernel->info->ntmaps;
    if (bytes && !ctx->cpu) {
      kernel->tmaps = aligned_alloc(_Alignof(tl_tmap_entry), bytes); /* a multiple of the alignment */
      if (!kernel->tmaps) {
        module_free(m);
        return set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
      }
      memset(kernel->tmaps, 0, bytes);
    }
  }
  *out = m;
  return TL_OK;
}

static void module_free(tl_module *m)
{
  for (int i = 0; i < m->nkernels; i++) {
    free(m->kernels[i].tmaps);
    for (int v = 0; v < m->kernels[i].nvariants; v++) {
      tl_module_unload(m->kernels[i].variants[v].module);
      free(m->kernels[i].variants[v].message);
    }
    free(m->kernels[i].variants);
  }
  if (m->variant_ops && m->variant_ops->destroy)
    m->variant_ops->destroy(m->variant_state);
  tl_meta_free(m->meta);
  free(m->kernels);
  free(m);
}

void tl_module_set_variants(tl_module *m, const tl_variant_ops *ops, void *state)
{
  if (m->variant_ops && m->variant_ops->destroy)
    m->variant_ops->destroy(m->variant_state);
  m->variant_ops = ops;
  m->variant_state = state;
}

/* A variant found: its kernel, or the failure of its compilation again. */
static tl_status variant_found(tl_kernel *kernel, int v, tl_kernel **out)
{
  const tl_variant *x = &kernel->variants[v];
  kernel->last_variant = v;
  *out = x->kernel;
  if (x->kernel)
    return TL_OK;
  return set_message(kernel->module->ctx, x->failed, "%s", x->message ? x->message : "");
}

static bool variant_is(const tl_variant *v, const int64_t *values, size_t bytes, int tuned, bool both)
{
  return v->tuned == tuned && v->both == both && !memcmp(v->values, values, bytes);
}

/* The index of the kernel's variant for (values, tuned, both) among those made, or -1; the one the
 * previous launch used is looked at first. */
static int find_variant(const tl_kernel *kernel, const int64_t *values, int tuned, bool both)
{
  const size_t bytes = sizeof(int64_t) * (size_t)kernel->info->nconsts;
  if (kernel->last_variant < kernel->nvariants &&
      variant_is(&kernel->variants[kernel->last_variant], values, bytes, tuned, both))
    return kernel->last_variant;
  for (int v = 0; v < kernel->nvariants; v++)
    if (variant_is(&kernel->variants[v], values, bytes, tuned, both))
      return v;
  return -1;
}

/* The kernel's variant for the launch constants' values `values` (and, with `both`, compiled with
 * both forms for a launch without tensor maps): found among those made, else compiled through the
 * module's variant_ops and kept. The variant's module leaves the context's list: its kernel owns
 * it. A variant that does not compile is kept as its status and message, so that later launches
 * that need it fail at once rather than compile it again. */
static tl_status kernel_variant(tl_kernel *kernel, const int64_t *values, int tuned, bool both,
                                tl_kernel **out)
{
  const size_t bytes = sizeof(int64_t) * (size_t)kernel->info->nconsts;
  const int found = find_variant(kernel, values, tuned, both);
  if (found >= 0)
    return variant_found(kernel, found, out);
  tl_module *base = kernel->module;
  tl_context *ctx = base->ctx;
  if (kernel->nvariants == kernel->cap_variants) {
    int cap = kernel->cap_variants ? 2 * kernel->cap_variants : 4;
    tl_variant *grown = realloc(kernel->variants, sizeof *grown * (size_t)cap);
    if (!grown)
      return set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
    kernel->variants = grown;
    kernel->cap_variants = cap;
  }
  tl_module *vm = NULL;
  tl_status st = base->variant_ops->compile(ctx, base->variant_state, kernel->info, values, tuned, both, &vm);
  if (st != TL_OK) {
    if (st == TL_ERR_COMPILE || st == TL_ERR_PTX_REJECTED) { /* the same inputs fail the same way */
      tl_variant *f = &kernel->variants[kernel->nvariants];
      memset(f, 0, sizeof *f);
      memcpy(f->values, values, bytes);
      f->tuned = tuned;
      f->both = both;
      f->failed = st;
      f->message = strdup(ctx->message);
      kernel->last_variant = kernel->nvariants++;
    }
    return st;
  }
  for (tl_module **link = &ctx->modules; *link; link = &(*link)->next)
    if (*link == vm) {
      *link = vm->next;
      break;
    }
  vm->next = NULL;
  tl_kernel *vk = NULL;
  for (int i = 0; i < vm->nkernels; i++)
    if (!strcmp(vm->kernels[i].info->name, kernel->info->name))
      vk = &vm->kernels[i];
  if (!vk || vk->info->nconsts != 0 || (both && vk->info->tma_required)) {
    tl_module_unload(vm);
    return set_message(ctx, TL_ERR_BAD_METADATA, "the variant of '%s' compiled for its launch constants %s",
                       kernel->info->name,
                       !vk                 ? "lacks the kernel"
                       : vk->info->nconsts ? "still has launch constants"
                                           : "without tensor maps still requires them");
  }
  tl_variant *v = &kernel->variants[kernel->nvariants];
  memset(v, 0, sizeof *v);
  memcpy(v->values, values, bytes);
  v->tuned = tuned;
  v->both = both;
  v->module = vm;
  v->kernel = vk;
  kernel->last_variant = kernel->nvariants++;
  *out = vk;
  return TL_OK;
}

/* The module joins its context, which unloads it at the latest when it is destroyed. */
static tl_status module_add(tl_context *ctx, tl_module *m, tl_module **out)
{
  m->next = ctx->modules;
  ctx->modules = m;
  *out = m;
  return ok(ctx);
}

tl_status tl_module_load_image(tl_context *ctx, const char *ptx, const void *image, tl_module **out)
{
  if (out)
    *out = NULL;
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (!ptx || !image || !out)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_module_load_ptx: %s is NULL",
                       !ptx     ? "ptx"
                       : !image ? "image"
                                : "out");
  if (ctx->cpu)
    return refuse_ptx(ctx, "tl_module_load_ptx");

  tl_module *m;
  tl_status st = module_new(ctx, ptx, &m);
  if (st != TL_OK)
    return st;
  if ((st = tl_context_make_current(ctx)) != TL_OK) {
    module_free(m);
    return st;
  }

  /* For PTX the driver compiles to machine code here; a device binary is only loaded. */
  jit_logs logs;
  if (!jit_logs_init(&logs)) {
    module_free(m);
    return set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  CUresult r = ctx->drv.cuModuleLoadDataEx(&m->cu_module, image, 4, logs.options, logs.values);
  logs.error[LOG_BYTES - 1] = 0;
  if (r != CUDA_SUCCESS) {
    st = load_failure(ctx, r, ptx, logs.error);
    jit_logs_free(&logs);
    module_free(m);
    return st;
  }
  jit_logs_free(&logs);

  for (int i = 0; st == TL_OK && i < m->nkernels; i++)
    st = bind_kernel(m, &m->kernels[i]);
  if (st != TL_OK) {
    ctx->drv.cuModuleUnload(m->cu_module);
    module_free(m);
    return st;
  }
  return module_add(ctx, m, out);
}

tl_status tl_module_load_host(tl_context *ctx, const char *ptx, const tl_host_module_ops *ops, void *state,
                              tl_module **out)
{
  if (out)
    *out = NULL;
  tl_status st = TL_OK;
  tl_module *m = NULL;
  if (!ctx)
    st = TL_ERR_BAD_ARGUMENT;
  else if (!ptx || !ops || !ops->launch || !out)
    st = set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_module_load_host: an argument is NULL");
  else if (!ctx->cpu)
    st = set_message(ctx, TL_ERR_UNSUPPORTED, "tl_module_load_host: %s is not the CPU device",
                     ctx->device.name);
  else
    st = module_new(ctx, ptx, &m);
  if (st != TL_OK) {
    if (ops && ops->destroy && state)
      ops->destroy(state);
    return st;
  }
  m->host = ops;
  m->host_state = state;
  return module_add(ctx, m, out);
}

tl_status tl_module_load_ptx(tl_context *ctx, const char *ptx, tl_module **out)
{
  if (out)
    *out = NULL;
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (!ptx || !out)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_module_load_ptx: %s is NULL", ptx ? "out" : "ptx");
  return tl_module_load_image(ctx, ptx, ptx, out);
}

tl_status tl_context_link_ptx(tl_context *ctx, const char *ptx, void **image, size_t *image_size)
{
  if (image)
    *image = NULL;
  if (image_size)
    *image_size = 0;
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (!ptx || !image || !image_size)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_context_link_ptx: an argument is NULL");
  if (ctx->cpu)
    return refuse_ptx(ctx, "tl_context_link_ptx");
  tl_status st = tl_context_make_current(ctx);
  if (st != TL_OK)
    return st;
  jit_logs logs;
  if (!jit_logs_init(&logs))
    return set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  const tl_cuda_driver *d = &ctx->drv;
  CUlinkState link = NULL;
  CUresult r = d->cuLinkCreate(4, logs.options, logs.values, &link);
  if (r != CUDA_SUCCESS) {
    jit_logs_free(&logs);
    return driver_failure(ctx, r, "cuLinkCreate");
  }
  /* The size counts the terminating NUL: the driver reads PTX as a C string. */
  r = d->cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, "tilec.ptx", 0, NULL, NULL);
  void *cubin = NULL;
  size_t size = 0;
  if (r == CUDA_SUCCESS)
    r = d->cuLinkComplete(link, &cubin, &size);
  logs.error[LOG_BYTES - 1] = 0;
  if (r != CUDA_SUCCESS) {
    st = load_failure(ctx, r, ptx, logs.error);
  } else if (!cubin || size == 0) {
    st = set_message(ctx, TL_ERR_DRIVER, "cuLinkComplete returned an empty device binary");
  } else if (!(*image = malloc(size))) {
    st = set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  } else {
    memcpy(*image, cubin, size); /* the link state owns cubin */
    *image_size = size;
    st = ok(ctx);
  }
  d->cuLinkDestroy(link);
  jit_logs_free(&logs);
  return st;
}

tl_status tl_module_load_file(tl_context *ctx, const char *path, tl_module **out)
{
  if (out)
    *out = NULL;
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (!path || !out)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_module_load_file: %s is NULL", path ? "out" : "path");
  if (ctx->cpu) /* before reading: the file is not the problem */
    return refuse_ptx(ctx, "tl_module_load_file");
  char *text;
  size_t len;
  int err;
  switch (tl_read_file(path, 0, &text, &len, &err)) {
  case TL_READ_OK: break;
  case TL_READ_CANNOT_OPEN: return set_message(ctx, TL_ERR_IO, "cannot open %s: %s", path, strerror(err));
  case TL_READ_NO_MEMORY: return set_message(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
  case TL_READ_FAILED:
  case TL_READ_TOO_LARGE: /* no limit was asked */ return set_message(ctx, TL_ERR_IO, "cannot read %s", path);
  }
  if (strlen(text) != len) {
    free(text);
    return set_message(ctx, TL_ERR_IO, "%s contains a NUL byte: it is not PTX text", path);
  }
  tl_status st = tl_module_load_ptx(ctx, text, out);
  free(text);
  if (st != TL_OK) {
    /* prefix the file name, keeping the message */
    char *copy = strdup(ctx->message);
    if (copy) {
      set_message(ctx, st, "%s: %s", path, copy);
      free(copy);
    }
  }
  return st;
}

void tl_module_unload(tl_module *m)
{
  if (!m)
    return;
  tl_context *ctx = m->ctx;
  for (tl_module **link = &ctx->modules; *link; link = &(*link)->next)
    if (*link == m) {
      *link = m->next;
      break;
    }
  if (m->host) {
    if (m->host->destroy)
      m->host->destroy(m->host_state);
  } else if (tl_context_make_current(ctx) == TL_OK) {
    ctx->drv.cuModuleUnload(m->cu_module);
  }
  module_free(m);
}

const tl_meta *tl_module_meta(const tl_module *m) { return m ? m->meta : NULL; }

tl_status tl_module_get_kernel(tl_module *m, const char *name, tl_kernel **out)
{
  if (out)
    *out = NULL;
  if (!m)
    return TL_ERR_BAD_ARGUMENT;
  tl_context *ctx = m->ctx;
  if (!name || !out)
    return set_message(ctx, TL_ERR_BAD_ARGUMENT, "tl_module_get_kernel: %s is NULL", name ? "out" : "name");
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i].info->name, name) == 0) {
      *out = &m->kernels[i];
      return ok(ctx);
    }
  char list[512] = "";
  size_t used = 0;
  for (int i = 0; i < m->nkernels && used + 1 < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                             m->kernels[i].info->name);
  return set_message(ctx, TL_ERR_NOT_FOUND, "no kernel '%s' in the module (it has: %s)", name,
                     m->nkernels ? list : "no kernels");
}

const tl_kernel_info *tl_kernel_get_info(const tl_kernel *kernel) { return kernel ? kernel->info : NULL; }

CUfunction tl_kernel_function(const tl_kernel *kernel) { return kernel ? kernel->function : NULL; }

/* ------------------------------------------------------------------------------------ launches */

/* A kernel of the CPU device, its arguments planned: every non-empty tensor must lie inside one
 * allocation of the context (on a GPU a bad pointer is an illegal address some later call reports,
 * or a silent overwrite); then the module's launch function runs it to the end. */
static tl_status launch_on_host(tl_kernel *kernel, const tl_arg *args, int nargs, const tl_launch_plan *plan)
{
  tl_module *m = kernel->module;
  tl_context *ctx = m->ctx;
  const tl_kernel_info *k = kernel->info;
  for (int i = 0; i < nargs; i++) {
    if (args[i].kind != TL_ARG_TENSOR)
      continue;
    char what[320];
    snprintf(what, sizeof what, "launch of '%s': argument %d ('%s')", k->name, i, k->params[i].name);
    /* the planner checked every extent is >= 0 and every stride it took is positive */
    uint64_t elems;
    size_t bytes;
    if (!tl_tensor_span(&args[i], &elems) ||
        __builtin_mul_overflow(elems, tl_dtype_size(args[i].dtype), &bytes))
      return set_message(ctx, TL_ERR_BAD_ARGUMENT, "%s: the tensor has more bytes than the host can address",
                         what);
    if (bytes && !tl_host_span(ctx->cpu, args[i].ptr, bytes, what, ctx->message, sizeof ctx->message))
      return TL_ERR_BAD_ARGUMENT;
  }
  return m->host->launch(ctx, m->host_state, (int)(kernel - m->kernels), k, args, nargs, plan);
}

/* The map of a kernel's tmap param for tensor argument `a`: the one kept from an earlier launch with
 * the same pointer and dims, else encoded now (and kept, also when it cannot be encoded, so that
 * the fallback costs no driver call either). */
static const tl_tmap_entry *tmap_for(tl_kernel *kernel, int j, int param, const tl_arg *args, int nargs)
{
  tl_tmap_entry *e = &kernel->tmaps[j];
  const tl_arg *a = &args[kernel->info->params[param].tmap.tensor];
  const size_t dims_bytes = sizeof(int64_t) * (size_t)a->rank; /* the plan checked rank == tmap.rank */
  int64_t strides[TL_TMAP_MAX_RANK]; /* the map depends on the strides too (NULL: contiguous) */
  if (a->value.strides)
    memcpy(strides, a->value.strides, dims_bytes);
  else
    tl_contiguous_strides(a->rank, a->shape, strides);
  if (e->filled && e->ptr == a->ptr && !memcmp(e->dims, a->shape, dims_bytes) &&
      !memcmp(e->strides, strides, dims_bytes))
    return e;
  e->filled = true;
  e->ptr = a->ptr;
  memcpy(e->dims, a->shape, dims_bytes);
  memcpy(e->strides, strides, dims_bytes);
  tl_tmap_encoding x;
  e->valid = tl_tmap_encoding_of(kernel->info, param, args, nargs, &x, NULL, 0) &&
             kernel->module->ctx->drv.cuTensorMapEncodeTiled(
                 &e->map, x.data_type, x.rank, (void *)(uintptr_t)x.address, x.global_dim, x.global_strides,
                 x.box_dim, x.element_strides, x.interleave, x.swizzle, x.l2_promotion,
                 x.oob_fill) == CUDA_SUCCESS;
  return e;
}

/* A kernel with tensor maps: when every map can be encoded (the driver has
 * cuTensorMapEncodeTiled, $TILEC_NO_TMA is not set, each tensor suits the TMA), the plan's tmap
 * params point at the kernel's maps and tmap_ok is 1 (true); otherwise the plan stays as made (zero
 * maps, tmap_ok = 0) and the kernel loads without TMA, unless it is tma_required (false). */
static bool bind_tmaps(tl_kernel *kernel, const tl_arg *args, int nargs, tl_launch_plan *plan)
{
  const tl_kernel_info *k = kernel->info;
  const tl_context *ctx = kernel->module->ctx;
  if (!kernel->tmaps || !tl_context_can_encode_tmaps(ctx))
    return false;
  const int first = k->nargs + k->nsizes;
  for (int j = 0; j < k->ntmaps; j++)
    if (!tmap_for(kernel, j, first + j, args, nargs)->valid)
      return false;
  for (int j = 0; j < k->ntmaps; j++)
    plan->params[first + j] = &kernel->tmaps[j].map;
  const uint32_t one = 1;
  memcpy(plan->params[k->nparams - 1], &one, sizeof one);
  return true;
}

/* A launch moved to base's variant (kernel_variant) in *kernel, *plan (released) planned again for
 * it: its grid, threads and shared memory differ. */
static tl_status launch_variant(tl_kernel *base, const int64_t *values, int tuned, bool both,
                                const tl_arg *args, int nargs, tl_kernel **kernel, tl_launch_plan *plan)
{
  tl_context *ctx = base->module->ctx;
  tl_launch_plan_release(plan);
  tl_kernel *v = NULL;
  tl_status st = kernel_variant(base, values, tuned, both, &v);
  if (st != TL_OK)
    return st;
  *kernel = v;
  char why[1024];
  st = tl_plan_launch_memo(v->info, args, nargs, ctx->device.sm_count, &v->memo, plan, why, sizeof why);
  if (st != TL_OK)
    return set_message(ctx, st, "launch of '%s' (variant): %s", v->info->name, why);
  return TL_OK;
}

tl_status tl_launch(tl_kernel *kernel, const tl_arg *args, int nargs, void *stream)
{
  if (!kernel)
    return TL_ERR_BAD_ARGUMENT;
  tl_context *ctx = kernel->module->ctx;
  const tl_kernel_info *k = kernel->info;
  /* The hot path: checks and layout on the stack (no allocation up to TL_PLAN_INLINE_PARAMS
   * parameters, nothing parsed: the metadata was compiled at load), then one driver call. */
  tl_launch_plan plan;
  char why[1024];
  tl_status st = tl_plan_launch_memo(k, args, nargs, ctx->device.sm_count, &kernel->memo, &plan, why,
                                     sizeof why);
  if (st != TL_OK)
    return set_message(ctx, st, "launch of '%s': %s", k->name, why);
  const tl_variant_ops *vops = kernel->module->variant_ops;
  const int tuned = vops && vops->tuned ? vops->tuned(kernel->module->variant_state, k, &plan) : -1;
  tl_kernel *base = kernel;
  int64_t values[TL_MAX_LAUNCH_CONSTS];
  memcpy(values, plan.consts, sizeof(int64_t) * (size_t)k->nconsts);
  if ((plan.variant || tuned >= 0) && vops) {
    /* Launch constants whose values at these sizes differ from the compiled ones, or a tuning
     * result for these sizes: the variant for them (made once, kept). For a kernel with the TMA
     * forms alone, when that variant is still to be made and these arguments cannot have the
     * kernel's maps, the one with both forms at once (what decides is the tensors: their
     * addresses, strides and types, not the constants); a variant already made binds its own
     * maps below, and launches that find it test nothing more here. */
    const bool both = k->tma_required && find_variant(kernel, values, tuned, false) < 0 &&
                      !bind_tmaps(kernel, args, nargs, &plan);
    if ((st = launch_variant(base, values, tuned, both, args, nargs, &kernel, &plan)) != TL_OK)
      return st;
    k = kernel->info;
  }
  if (plan.empty) {
    tl_launch_plan_release(&plan);
    return ok(ctx);
  }
  if (kernel->module->host) {
    st = launch_on_host(kernel, args, nargs, &plan);
    tl_launch_plan_release(&plan);
    return st;
  }
  if ((st = tl_context_make_current(ctx)) != TL_OK) {
    tl_launch_plan_release(&plan);
    return st;
  }
  if (k->ntmaps > 0 && !bind_tmaps(kernel, args, nargs, &plan) && k->tma_required) {
    /* Compiled with the TMA form alone (the JIT's modules), and these arguments cannot have maps:
     * the variant with both forms, which runs with tmap_ok = 0 (made once, kept). */
    if (!vops) {
      tl_launch_plan_release(&plan);
      return set_message(ctx, TL_ERR_BAD_ARGUMENT,
                         "launch of '%s': the kernel was compiled with --tma-only and needs tensor maps, "
                         "which these arguments cannot have (%s)",
                         k->name, ctx->no_tma ? "TILEC_NO_TMA is set" : "see tl_tmap_encoding_of");
    }
    if ((st = launch_variant(base, values, tuned, true, args, nargs, &kernel, &plan)) != TL_OK)
      return st;
    k = kernel->info;
  }
  CUstream on = stream ? (CUstream)stream : ctx->stream;
  CUresult r = ctx->drv.cuLaunchKernel(kernel->function, plan.grid[0], plan.grid[1], plan.grid[2],
                                       plan.block[0], plan.block[1], plan.block[2], plan.smem, on,
                                       plan.params, NULL);
  tl_launch_plan_release(&plan);
  if (r != CUDA_SUCCESS) {
    char call[512];
    snprintf(call, sizeof call, "cuLaunchKernel(%s, grid %u x %u x %u, block %u, smem %u)", k->name,
             plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0], plan.smem);
    return driver_failure(ctx, r, call);
  }
  return ok(ctx);
}
