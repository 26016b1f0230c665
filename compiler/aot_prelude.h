/* ---- tilec ahead-of-time launchers: what every generated header shares (tools/aot_prelude.h,
 * copied into each header by tilec --emit=header; one copy per translation unit, however many
 * generated headers it includes). */
#ifndef TILEC_AOT_COMMON_V3
#define TILEC_AOT_COMMON_V3

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The driver library, opened with dlopen on first use: nothing links against it. */
#ifndef TILEC_AOT_CUDA_LIBRARY
#define TILEC_AOT_CUDA_LIBRARY "libcuda.so.1"
#endif

/* The few driver types used here, unless cuda.h came first (include it before this header). */
#ifndef CUDA_VERSION
typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
#endif

/* CUresult values that the launchers return themselves (the driver's own numbers). */
#define TILEC_AOT_SUCCESS 0
#define TILEC_AOT_INVALID_VALUE 1     /* a negative size, a grid that overflows or is too large */
#define TILEC_AOT_NO_DRIVER 100       /* CUDA_ERROR_NO_DEVICE: libcuda.so.1 cannot be loaded */
#define TILEC_AOT_INVALID_CONTEXT 201 /* no CUDA context is current on the calling thread */
#define TILEC_AOT_NOT_FOUND 500       /* the driver lacks an entry point */

/* One generated header's module: loaded once, into the context current at the first launch. */
typedef struct tilec_aot_module {
  pthread_mutex_t lock;
  int ready; /* 1 once loaded: read with acquire, written with release, under lock */
  void *library;
  CUcontext context;
  CUmodule module;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  int num_sms; /* the multiprocessor count of the context's device, for grids that use num_sms */
  /* Optional (CUDA 12+), for kernels that take TMA tensor maps: NULL when the driver lacks it or
   * $TILEC_NO_TMA was set (and not "0") at load; then such launches pass tmap_ok = 0. */
  CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned int, void *, const uint64_t *, const uint64_t *,
                                     const uint32_t *, const uint32_t *, int, int, int, int);
} tilec_aot_module;

#define TILEC_AOT_MODULE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL}

static inline int tilec_aot_ready(tilec_aot_module *m)
{
#if defined(__GNUC__) || defined(__clang__)
  return __atomic_load_n(&m->ready, __ATOMIC_ACQUIRE);
#else
  pthread_mutex_lock(&m->lock);
  int ready = m->ready;
  pthread_mutex_unlock(&m->lock);
  return ready;
#endif
}

/* dlsym gives an object pointer; POSIX lets it hold a function pointer, copied bytewise. */
static inline int tilec_aot_sym(void *library, const char *name, void *fn)
{
  void *sym = dlsym(library, name);
  if (sym)
    memcpy(fn, &sym, sizeof sym);
  return sym != NULL;
}

static inline CUresult tilec_aot_load(tilec_aot_module *m, const char *ptx, int nkernels,
                                      const char *const *names, const unsigned int *smem,
                                      CUfunction *functions)
{
  CUresult (*get_current)(CUcontext *) = NULL;
  CUresult (*load_data)(CUmodule *, const void *) = NULL;
  CUresult (*get_function)(CUfunction *, CUmodule, const char *) = NULL;
  CUresult (*set_attribute)(CUfunction, int, int) = NULL;
  CUresult (*get_device)(int *) = NULL;
  CUresult (*get_device_attribute)(int *, int, int) = NULL;
  int device = 0, num_sms = 0;
  CUresult r = TILEC_AOT_SUCCESS;
  CUcontext context = NULL;
  CUmodule module = NULL;
  void *library;
  pthread_mutex_lock(&m->lock);
  if (m->ready) {
    pthread_mutex_unlock(&m->lock);
    return TILEC_AOT_SUCCESS;
  }
  library = dlopen(TILEC_AOT_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    pthread_mutex_unlock(&m->lock);
    return TILEC_AOT_NO_DRIVER;
  }
  if (!tilec_aot_sym(library, "cuCtxGetCurrent", &get_current) ||
      !tilec_aot_sym(library, "cuCtxSetCurrent", &m->cuCtxSetCurrent) ||
      !tilec_aot_sym(library, "cuModuleLoadData", &load_data) ||
      !tilec_aot_sym(library, "cuModuleGetFunction", &get_function) ||
      !tilec_aot_sym(library, "cuFuncSetAttribute", &set_attribute) ||
      !tilec_aot_sym(library, "cuModuleUnload", &m->cuModuleUnload) ||
      !tilec_aot_sym(library, "cuCtxGetDevice", &get_device) ||
      !tilec_aot_sym(library, "cuDeviceGetAttribute", &get_device_attribute) ||
      !tilec_aot_sym(library, "cuLaunchKernel", &m->cuLaunchKernel)) {
    r = TILEC_AOT_NOT_FOUND;
    goto fail;
  }
  m->cuCtxGetCurrent = get_current;
  {
    const char *no_tma = getenv("TILEC_NO_TMA");
    m->cuTensorMapEncodeTiled = NULL;
    if (!no_tma || !*no_tma || !strcmp(no_tma, "0"))
      tilec_aot_sym(library, "cuTensorMapEncodeTiled", &m->cuTensorMapEncodeTiled);
  }
  if ((r = get_current(&context)) != TILEC_AOT_SUCCESS)
    goto fail;
  if (!context) {
    r = TILEC_AOT_INVALID_CONTEXT;
    goto fail;
  }
  /* attribute 16: CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
  if ((r = get_device(&device)) != TILEC_AOT_SUCCESS ||
      (r = get_device_attribute(&num_sms, 16, device)) != TILEC_AOT_SUCCESS)
    goto fail;
  if ((r = load_data(&module, ptx)) != TILEC_AOT_SUCCESS)
    goto fail;
  for (int i = 0; i < nkernels; i++) {
    if ((r = get_function(&functions[i], module, names[i])) != TILEC_AOT_SUCCESS)
      goto fail;
    /* Above 48 KiB of dynamic shared memory a kernel must opt in (attribute 8:
     * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). */
    if (smem[i] > 48u * 1024u &&
        (r = set_attribute(functions[i], 8, (int)smem[i])) != TILEC_AOT_SUCCESS)
      goto fail;
  }
  m->library = library;
  m->context = context;
  m->module = module;
  m->num_sms = num_sms;
#if defined(__GNUC__) || defined(__clang__)
  __atomic_store_n(&m->ready, 1, __ATOMIC_RELEASE);
#else
  m->ready = 1;
#endif
  pthread_mutex_unlock(&m->lock);
  return TILEC_AOT_SUCCESS;
fail:
  if (module && m->cuModuleUnload)
    m->cuModuleUnload(module);
  dlclose(library);
  pthread_mutex_unlock(&m->lock);
  return r;
}

static inline void tilec_aot_unload(tilec_aot_module *m)
{
  pthread_mutex_lock(&m->lock);
  if (m->ready) {
    /* cuModuleUnload works on the current context: make the module's current for the call. */
    CUcontext previous = NULL;
    m->cuCtxGetCurrent(&previous);
    m->cuCtxSetCurrent(m->context);
    m->cuModuleUnload(m->module);
    m->cuCtxSetCurrent(previous);
    dlclose(m->library);
    m->library = NULL;
    m->module = NULL;
    m->context = NULL;
    m->num_sms = 0;
    m->cuTensorMapEncodeTiled = NULL;
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&m->ready, 0, __ATOMIC_RELEASE);
#else
    m->ready = 0;
#endif
  }
  pthread_mutex_unlock(&m->lock);
}

/* One grid-program step, over int64 as docs/abi.md defines it; 0 on division by zero or overflow.
 * op: + - * / % and 'm' min, 'M' max, 'c' ceildiv; for launch constants also the comparisons
 * < 'l' (<=) > 'g' (>=) = ! (!=) and & | (logical), 1 or 0. */
static inline int tilec_aot_rpn(int op, int64_t *a, int64_t b)
{
  const int64_t x = *a;
  switch (op) {
  case '+':
    if ((b > 0 && x > INT64_MAX - b) || (b < 0 && x < INT64_MIN - b))
      return 0;
    *a = x + b;
    return 1;
  case '-':
    if ((b < 0 && x > INT64_MAX + b) || (b > 0 && x < INT64_MIN + b))
      return 0;
    *a = x - b;
    return 1;
  case '*':
    if (x > 0 ? (b > 0 ? x > INT64_MAX / b : b < INT64_MIN / x)
              : (b > 0 ? x < INT64_MIN / b : x != 0 && b < INT64_MAX / x))
      return 0;
    *a = x * b;
    return 1;
  case '/':
  case '%':
    if (b == 0 || (x == INT64_MIN && b == -1))
      return 0;
    *a = op == '/' ? x / b : x % b;
    return 1;
  case '<': *a = x < b; return 1;
  case 'l': *a = x <= b; return 1;
  case '>': *a = x > b; return 1;
  case 'g': *a = x >= b; return 1;
  case '=': *a = x == b; return 1;
  case '!': *a = x != b; return 1;
  case '&': *a = x && b; return 1;
  case '|': *a = x || b; return 1;
  case 'm': *a = x < b ? x : b; return 1;
  case 'M': *a = x > b ? x : b; return 1;
  case 'c':
    if (b <= 0 || x > INT64_MAX - (b - 1))
      return 0;
    *a = (x + (b - 1)) / b;
    return 1;
  }
  return 0;
}

/* next_pow2 of a launch constant: the smallest power of two >= *a (1 for *a <= 1); 0 on overflow. */
static inline int tilec_aot_next_pow2(int64_t *a)
{
  int64_t r = 1;
  while (r < *a && r <= INT64_MAX / 2)
    r *= 2;
  if (r < *a)
    return 0;
  *a = r;
  return 1;
}

/* A grid axis's value checked against cuLaunchKernel's limits (x: 2^31-1, y and z: 65535). */
static inline int tilec_aot_axis(int64_t v, int axis, unsigned int *out)
{
  if (v < 0 || v > (axis == 0 ? 2147483647 : 65535))
    return 0;
  *out = (unsigned int)v;
  return 1;
}

/* Kernels that load with the TMA take one 128-byte tensor map per (tensor, box), 64-byte aligned,
 * and a u32 flag (docs/abi.md, "Tensor maps"). The maps live in the launcher's frame. */
static inline unsigned char *tilec_aot_align64(unsigned char *p)
{
  return p + (64u - (unsigned)((uintptr_t)p % 64u)) % 64u;
}

/* Encode one tensor map into map (128 bytes): dims and box outermost first, as the .tl tensor
 * writes them; the driver takes them innermost first, with the strides in bytes. 1 when encoded,
 * 0 when not (no entry point, an address not 16-byte aligned, an empty dim or one over 2^32, a
 * stride that is not a multiple of 16 bytes): the kernel then loads without TMA, as correctly. */
static inline int tilec_aot_tmap(const tilec_aot_module *m, unsigned char *map, int data_type, int rank,
                                 const void *address, const int64_t *dims, uint64_t elem_bytes,
                                 const uint32_t *box, int swizzle)
{
  uint64_t global_dim[5] = {0, 0, 0, 0, 0}, global_strides[4] = {0, 0, 0, 0}, stride = elem_bytes;
  uint32_t box_dim[5] = {0, 0, 0, 0, 0}, element_strides[5] = {1, 1, 1, 1, 1};
  int i;
  if (!m->cuTensorMapEncodeTiled || rank < 1 || rank > 5 || (uintptr_t)address % 16u != 0)
    return 0;
  for (i = 0; i < rank; i++) {
    const int64_t d = dims[rank - 1 - i];
    if (d < 1 || d > (INT64_C(1) << 32))
      return 0;
    global_dim[i] = (uint64_t)d;
    box_dim[i] = box[rank - 1 - i];
    if (i == rank - 1)
      break;
    if ((uint64_t)d > (UINT64_C(1) << 40) / stride)
      return 0;
    stride *= (uint64_t)d;
    if (stride % 16u != 0 || stride >= (UINT64_C(1) << 40))
      return 0;
    global_strides[i] = stride;
  }
  /* interleave NONE (0), L2 promotion 128B (2), out-of-bounds fill NONE (0: zeros) */
  return m->cuTensorMapEncodeTiled(map, data_type, (unsigned int)rank, (void *)(uintptr_t)address,
                                   global_dim, global_strides, box_dim, element_strides, 0, swizzle, 2,
                                   0) == TILEC_AOT_SUCCESS;
}

/* f16 and bf16 scalars are passed as their bits: float -> bits, round to nearest even, overflow to
 * infinity, NaN stays a (quiet) NaN. */
static inline uint16_t tilec_aot_f16(float f)
{
  uint32_t x, m, half;
  int32_t e;
  memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  m = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu)
    return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0u));
  e = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) { /* a half subnormal, or zero */
    if (e < -10)
      return (uint16_t)sign;
    m |= 0x800000u;
    const uint32_t shift = (uint32_t)(14 - e), rem = m & ((1u << shift) - 1u),
                   mid = 1u << (shift - 1u);
    half = m >> shift;
    if (rem > mid || (rem == mid && (half & 1u)))
      half++;
    return (uint16_t)(sign | half);
  }
  half = ((uint32_t)e << 10) | (m >> 13);
  const uint32_t rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    half++; /* a carry into the exponent is right, up to infinity */
  return (uint16_t)(sign | half);
}

static inline uint16_t tilec_aot_bf16(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

#endif /* TILEC_AOT_COMMON_V3 */

/* Guarded on its own, so that a header from an older tilec included first (its V3 block wins)
 * leaves it to this one; and the last block of the file, which emit_header.c copies only into the
 * headers whose launchers call it (it finds the block by this comment's first words). */
#ifndef TILEC_AOT_TMAP_STRIDED
#define TILEC_AOT_TMAP_STRIDED
/* tilec_aot_tmap for a tensor declared with strides(...): strides[] in elements, outermost first;
 * 0 (no map: the kernel loads without TMA) unless the innermost is 1 and every other steps a
 * multiple of 16 bytes below 2^40. */
static inline int tilec_aot_tmap_strided(const tilec_aot_module *m, unsigned char *map, int data_type, int rank,
                                         const void *address, const int64_t *dims, const int64_t *strides,
                                         uint64_t elem_bytes, const uint32_t *box, int swizzle)
{
  uint64_t global_dim[5] = {0, 0, 0, 0, 0}, global_strides[4] = {0, 0, 0, 0};
  uint32_t box_dim[5] = {0, 0, 0, 0, 0}, element_strides[5] = {1, 1, 1, 1, 1};
  int i;
  if (!m->cuTensorMapEncodeTiled || rank < 1 || rank > 5 || (uintptr_t)address % 16u != 0 ||
      strides[rank - 1] != 1)
    return 0;
  for (i = 0; i < rank; i++) {
    const int64_t d = dims[rank - 1 - i];
    if (d < 1 || d > (INT64_C(1) << 32))
      return 0;
    global_dim[i] = (uint64_t)d;
    box_dim[i] = box[rank - 1 - i];
    if (i == rank - 1)
      break;
    const int64_t s = strides[rank - 2 - i];
    if (s < 1 || (uint64_t)s > (UINT64_C(1) << 40) / elem_bytes || ((uint64_t)s * elem_bytes) % 16u != 0)
      return 0;
    global_strides[i] = (uint64_t)s * elem_bytes;
  }
  return m->cuTensorMapEncodeTiled(map, data_type, (unsigned int)rank, (void *)(uintptr_t)address,
                                   global_dim, global_strides, box_dim, element_strides, 0, swizzle, 2,
                                   0) == TILEC_AOT_SUCCESS;
}
#endif /* TILEC_AOT_TMAP_STRIDED */
