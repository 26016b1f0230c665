/* fake_cuda.h: the state of the stand-in CUDA driver (fake_cuda.c, built as libcuda.so.1 in its own
 * folder), which the unit tests load through $TILEC_CUDA_LIBRARY (the runtime) or
 * TILEC_AOT_CUDA_LIBRARY (generated headers) to run the driver paths on machines without a GPU.
 *
 * It keeps what a test checks: how often the "driver" compiled PTX, made or loaded a device binary,
 * and the last launch with its parameters, byte for byte (sizes taken from the PTX's .param list).
 * Tests reach it with dlopen(the same path) + dlsym("fake_cuda_get_state").
 *
 * Settings, read from the environment at cuInit: FAKE_CUDA_CC (compute capability * 10, default
 * 90), FAKE_CUDA_DRIVER (driver version, default 13000), FAKE_CUDA_NO_DEVICE (cuInit fails with
 * CUDA_ERROR_NO_DEVICE), FAKE_CUDA_REJECT (every PTX compile fails with a log).
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <stdint.h>

#define FAKE_CUDA_MAX_PARAMS 64

typedef struct fake_cuda_launch {
  char function[128];
  unsigned grid[3], block[3], smem;
  void *stream;
  int nparams;
  unsigned param_size[FAKE_CUDA_MAX_PARAMS];
  unsigned char param[FAKE_CUDA_MAX_PARAMS][8]; /* each parameter's bytes, zero-padded */
} fake_cuda_launch;

typedef struct fake_cuda_state {
  int ptx_compiles;  /* cuModuleLoadDataEx of PTX, and cuLinkComplete */
  int links;         /* cuLinkComplete */
  int binary_loads;  /* cuModuleLoadData(Ex) of a device binary */
  int launches;
  int modules_live;  /* loaded and not unloaded */
  int contexts_live; /* primary context retains minus releases */
  fake_cuda_launch last;
} fake_cuda_state;

typedef fake_cuda_state *(*fake_cuda_state_fn)(void);

#endif
