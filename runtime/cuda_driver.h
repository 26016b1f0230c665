/* cuda_driver.h: the slice of the CUDA driver API the runtime uses, declared here rather than taken
 * from cuda.h, because tilec must build where no CUDA is installed, and resolved at run time with
 * dlopen("libcuda.so.1") + dlsym. Internal to runtime/ and tests/gpu/: hosts use tilec_runtime.h.
 *
 * The numeric values below are the driver's ABI (cuda.h of CUDA 12/13); only the ones we use are
 * named. Handles are opaque pointers, as in cuda.h, so values pass straight through.
 *
 * Sections: driver.c (the table and its loading), runtime.c (reaching a context's table).
 */
#ifndef TILEC_CUDA_DRIVER_H
#define TILEC_CUDA_DRIVER_H

#include <stddef.h>

#include "tilec_runtime.h"

/* ------------------------------------------------------------------------------ types and values */

typedef int CUresult; /* an enum in cuda.h; enums there are int-sized */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef int CUjit_option;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef struct CUlinkState_st *CUlinkState;
typedef int CUjitInputType;
/* A TMA tensor map (cuda.h's CUtensorMap): opaque bytes the driver encodes and kernels take by
 * value. */
typedef struct CUtensorMap {
  _Alignas(64) unsigned long long opaque[16];
} CUtensorMap;
_Static_assert(sizeof(CUtensorMap) == TL_TMAP_BYTES, "a CUtensorMap is 128 bytes");

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_SOURCE = 300,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
};

enum { /* CUjit_option */
       CU_JIT_INFO_LOG_BUFFER = 3,
       CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
       CU_JIT_ERROR_LOG_BUFFER = 5,
       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

enum { /* CUdevice_attribute */
       CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
       CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum { /* CUfunction_attribute */
       CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
       CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
       CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum { /* CUjitInputType */
       CU_JIT_INPUT_CUBIN = 0,
       CU_JIT_INPUT_PTX = 1,
};

enum { CU_EVENT_DEFAULT = 0 };
enum { CU_STREAM_DEFAULT = 0, CU_STREAM_NON_BLOCKING = 1 };

/* Dynamic shared memory a kernel may use without opting in. */
#define TL_CUDA_DEFAULT_DYNAMIC_SMEM (48 * 1024)

/* ------------------------------------------------------------------------------------ driver.c */

/* The resolved entry points. Each field is named after the function without its version suffix; the
 * comment gives the symbol looked up where the driver exports a versioned one (the unsuffixed symbols
 * keep the pre-CUDA-4 32-bit ABI for sizes and pointers, so the suffix matters). */
typedef struct tl_cuda_driver {
  void *library; /* the dlopen handle; NULL if not loaded */

  CUresult (*cuInit)(unsigned int flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);

  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int *value, CUdevice_attribute attrib, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice device); /* _v2 */

  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device); /* _v2 */
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
  CUresult (*cuCtxSynchronize)(void);

  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned int num_options,
                                 CUjit_option *options, void **option_values);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *ptr, size_t *bytes, CUmodule module, const char *name); /* _v2 */
  CUresult (*cuFuncGetAttribute)(int *value, CUfunction_attribute attrib, CUfunction fn);
  CUresult (*cuFuncSetAttribute)(CUfunction fn, CUfunction_attribute attrib, int value);
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                             unsigned int block_x, unsigned int block_y, unsigned int block_z,
                             unsigned int shared_bytes, CUstream stream, void **kernel_params, void **extra);

  /* PTX -> device binary, kept by the JIT's cache (the binary belongs to the link state until
   * cuLinkDestroy). */
  CUresult (*cuLinkCreate)(unsigned int num_options, CUjit_option *options, void **option_values,
                           CUlinkState *state); /* _v2 */
  CUresult (*cuLinkAddData)(CUlinkState state, CUjitInputType type, void *data, size_t bytes,
                            const char *name, unsigned int num_options, CUjit_option *options,
                            void **option_values); /* _v2 */
  CUresult (*cuLinkComplete)(CUlinkState state, void **image, size_t *bytes);
  CUresult (*cuLinkDestroy)(CUlinkState state);

  CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);                                         /* _v2 */
  CUresult (*cuMemFree)(CUdeviceptr ptr);                                                         /* _v2 */
  CUresult (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes);                              /* _v2 */
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);                       /* _v2 */
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);                             /* _v2 */
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);                       /* _v2 */
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream); /* _v2 */
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t count);                     /* _v2 */
  CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned int value, size_t count);                     /* _v2 */
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream);

  CUresult (*cuStreamCreate)(CUstream *stream, unsigned int flags);
  CUresult (*cuStreamDestroy)(CUstream stream); /* _v2 */
  CUresult (*cuStreamSynchronize)(CUstream stream);

  CUresult (*cuEventCreate)(CUevent *event, unsigned int flags);
  CUresult (*cuEventDestroy)(CUevent event); /* _v2 */
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end); /* _v2 if exported */

  /* Optional (CUDA 12+): NULL when the driver lacks it, and then no tensor map can be encoded
   * (launches pass tmap_ok = 0). The int arguments are cuda.h's enums: CUtensorMapDataType,
   * CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill. */
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *map, int data_type, unsigned int rank, void *address,
                                     const uint64_t *global_dim, const uint64_t *global_strides,
                                     const uint32_t *box_dim, const uint32_t *element_strides, int interleave,
                                     int swizzle, int l2_promotion, int oob_fill);
} tl_cuda_driver;

/* dlopen libcuda.so.1 (or the file named by $TILEC_CUDA_LIBRARY, when set and not empty) and
 * resolve every entry point. TL_ERR_NO_DRIVER, with the dlerror() text, if the library or any
 * function is missing (except the optional ones, left NULL); *drv is then all NULL. Each call opens its own
 * handle (dlopen counts references), so there is no process-wide state. */
tl_status tl_cuda_driver_load(tl_cuda_driver *drv, char *err, size_t err_size);
void tl_cuda_driver_unload(tl_cuda_driver *drv);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", via the driver's own names; falls back to the number
 * when the driver does not know it. Writes into buf and returns it. */
const char *tl_cuda_error_text(const tl_cuda_driver *drv, CUresult result, char *buf, size_t size);

/* ----------------------------------------------------------------------------------- runtime.c */

/* The context's driver table, so that test and benchmark programs use the same loaded driver. Before
 * calling through it, make the context current on the calling thread (tl_context_make_current). */
const tl_cuda_driver *tl_context_driver(const tl_context *ctx);
tl_status tl_context_make_current(tl_context *ctx);
CUfunction tl_kernel_function(const tl_kernel *kernel);

#endif /* TILEC_CUDA_DRIVER_H */
