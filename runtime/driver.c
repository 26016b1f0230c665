/* driver.c: find libcuda.so.1 at run time and resolve the entry points of cuda_driver.h.
 *
 * Why dlopen rather than linking: the compiler and its tests must build and run on machines with no
 * CUDA at all, and a host linked against libcuda would not even start there. The soname with its
 * major version is what the driver package installs (the unversioned libcuda.so comes only with the
 * toolkit's development files). */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "runtime_internal.h"

#define TL_CUDA_LIBRARY "libcuda.so.1"

/* dlsym returns an object pointer; POSIX guarantees it can hold a function pointer. */
_Static_assert(sizeof(void *) == sizeof(CUresult(*)(void)), "function pointers must fit in void *");

/* Look the names up in order and store the first found into *field. Several names let us prefer a
 * newer version of an entry point and fall back to an older one with the same signature. */
static bool resolve_one(void *library, const char *path, void *field, const char *const *names, char *err,
                        size_t err_size)
{
  for (const char *const *name = names; *name; name++) {
    void *sym = dlsym(library, *name);
    if (sym) {
      memcpy(field, &sym, sizeof sym);
      return true;
    }
  }
  tl_fmt(err, err_size, "cannot load the CUDA driver (%s): it has no function %s (driver too old?)", path,
         names[0]);
  return false;
}

#define RESOLVE(field, ...)                                                   \
  do {                                                                        \
    static const char *const names_[] = {__VA_ARGS__, NULL};                  \
    if (!resolve_one(drv->library, path, &drv->field, names_, err, err_size)) \
      goto fail;                                                              \
  } while (0)

tl_status tl_cuda_driver_load(tl_cuda_driver *drv, char *err, size_t err_size)
{
  if (!drv) {
    tl_fmt(err, err_size, "tl_cuda_driver_load: drv is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  memset(drv, 0, sizeof *drv);
  /* The override is for tests (a stand-in driver) and for drivers installed off the loader's path. */
  const char *path = getenv("TILEC_CUDA_LIBRARY");
  if (!path || !*path)
    path = TL_CUDA_LIBRARY;
  /* RTLD_LOCAL: the driver's symbols stay out of the global namespace, so a host that also links
   * the CUDA runtime or another copy of the driver sees no clash. */
  drv->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!drv->library) {
    const char *why = dlerror();
    tl_fmt(err, err_size, "cannot load the CUDA driver (%s): %s", path, why ? why : "unknown dlopen error");
    return TL_ERR_NO_DRIVER;
  }

  RESOLVE(cuInit, "cuInit");
  RESOLVE(cuDriverGetVersion, "cuDriverGetVersion");
  RESOLVE(cuGetErrorName, "cuGetErrorName");
  RESOLVE(cuGetErrorString, "cuGetErrorString");

  RESOLVE(cuDeviceGetCount, "cuDeviceGetCount");
  RESOLVE(cuDeviceGet, "cuDeviceGet");
  RESOLVE(cuDeviceGetName, "cuDeviceGetName");
  RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  RESOLVE(cuDeviceTotalMem, "cuDeviceTotalMem_v2");

  RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  RESOLVE(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent");
  RESOLVE(cuCtxGetCurrent, "cuCtxGetCurrent");
  RESOLVE(cuCtxSynchronize, "cuCtxSynchronize");

  RESOLVE(cuModuleLoadDataEx, "cuModuleLoadDataEx");
  RESOLVE(cuModuleUnload, "cuModuleUnload");
  RESOLVE(cuModuleGetFunction, "cuModuleGetFunction");
  RESOLVE(cuModuleGetGlobal, "cuModuleGetGlobal_v2");
  RESOLVE(cuFuncGetAttribute, "cuFuncGetAttribute");
  RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute");
  RESOLVE(cuLaunchKernel, "cuLaunchKernel");
  RESOLVE(cuLinkCreate, "cuLinkCreate_v2");
  RESOLVE(cuLinkAddData, "cuLinkAddData_v2");
  RESOLVE(cuLinkComplete, "cuLinkComplete");
  RESOLVE(cuLinkDestroy, "cuLinkDestroy");

  RESOLVE(cuMemAlloc, "cuMemAlloc_v2");
  RESOLVE(cuMemFree, "cuMemFree_v2");
  RESOLVE(cuMemGetInfo, "cuMemGetInfo_v2");
  RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  RESOLVE(cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  RESOLVE(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  RESOLVE(cuMemsetD8, "cuMemsetD8_v2");
  RESOLVE(cuMemsetD32, "cuMemsetD32_v2");
  RESOLVE(cuMemsetD8Async, "cuMemsetD8Async");

  RESOLVE(cuStreamCreate, "cuStreamCreate");
  RESOLVE(cuStreamDestroy, "cuStreamDestroy_v2");
  RESOLVE(cuStreamSynchronize, "cuStreamSynchronize");

  RESOLVE(cuEventCreate, "cuEventCreate");
  RESOLVE(cuEventDestroy, "cuEventDestroy_v2");
  RESOLVE(cuEventRecord, "cuEventRecord");
  RESOLVE(cuEventSynchronize, "cuEventSynchronize");
  /* CUDA 12.8 added the _v2 (same signature, better defined for events of other contexts) and
   * CUDA 13's cuda.h maps the plain name onto it; older drivers have only the plain one. */
  RESOLVE(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");

  /* optional: a driver older than CUDA 12 has no tensor maps, and launches do without them */
  void *sym = dlsym(drv->library, "cuTensorMapEncodeTiled");
  if (sym)
    memcpy(&drv->cuTensorMapEncodeTiled, &sym, sizeof sym);
  return TL_OK;

fail:
  tl_cuda_driver_unload(drv);
  return TL_ERR_NO_DRIVER;
}

void tl_cuda_driver_unload(tl_cuda_driver *drv)
{
  if (!drv)
    return;
  if (drv->library)
    dlclose(drv->library);
  memset(drv, 0, sizeof *drv);
}

const char *tl_cuda_error_text(const tl_cuda_driver *drv, CUresult result, char *buf, size_t size)
{
  const char *name = NULL, *text = NULL;
  if (drv && drv->cuGetErrorName && drv->cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = NULL;
  if (drv && drv->cuGetErrorString && drv->cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = NULL;
  if (name && text)
    tl_fmt(buf, size, "%s (%s)", name, text);
  else if (name)
    tl_fmt(buf, size, "%s", name);
  else
    tl_fmt(buf, size, "CUDA error %d", (int)result);
  return buf;
}
