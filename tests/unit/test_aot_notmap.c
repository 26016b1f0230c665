/* test_aot_notmap: a generated header in a translation unit of its own, pointed at the stand-in
 * driver built without cuTensorMapEncodeTiled (a driver older than CUDA 12), so that test_aot.c
 * can check that its launches pass tmap_ok = 0 and still launch. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>

#define TILEC_AOT_CUDA_LIBRARY FAKE_CUDA_NOTMAP_PATH
#include "tmap_kernels.h"

#include "fake_cuda.h"

int aot_notmap_flag(void);

/* The flag the launch passed, or -1 if it did not launch. */
int aot_notmap_flag(void)
{
  void *handle = dlopen(FAKE_CUDA_NOTMAP_PATH, RTLD_NOW | RTLD_LOCAL);
  void *state_sym = handle ? dlsym(handle, "fake_cuda_get_state") : NULL;
  void *set_sym = handle ? dlsym(handle, "cuCtxSetCurrent") : NULL;
  fake_cuda_state_fn state_fn = NULL;
  int (*set_current)(void *) = NULL;
  memcpy(&state_fn, &state_sym, sizeof state_sym);
  memcpy(&set_current, &set_sym, sizeof set_sym);
  int flag = -1;
  static int token; /* any non-NULL context will do for the stand-in */
  if (state_fn && set_current && !dlsym(handle, "cuTensorMapEncodeTiled") && set_current(&token) == 0) {
    fake_cuda_state *fake = state_fn();
    const int launches = fake->launches;
    if (tma_copy_launch(NULL, (uint16_t *)(uintptr_t)0x10000, (float *)(uintptr_t)0x20000, 100, 256, 64) ==
            TILEC_AOT_SUCCESS &&
        fake->launches == launches + 1) {
      uint32_t v;
      memcpy(&v, fake->last.param[7], sizeof v);
      flag = (int)v;
    }
    tmap_kernels_unload();
    set_current(NULL);
  }
  if (handle)
    dlclose(handle);
  return flag;
}
