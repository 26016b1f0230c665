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
 *
 * cuTensorMapEncodeTiled checks its arguments as the driver documents and records each call; the
 * map it writes starts with the address (8 bytes) and "TMAP", so a test can recognize it among
 * the launch's parameter bytes. Built with FAKE_CUDA_NO_TMAP (libcuda.so.1 in fake_cuda_notmap/),
 * the library lacks the function, as a driver older than CUDA 12.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <stdint.h>

#define FAKE_CUDA_MAX_PARAMS 64
#define FAKE_CUDA_MAX_PARAM_BYTES 128 /* a CUtensorMap */
#define FAKE_CUDA_MAX_TMAP_CALLS 8

typedef struct fake_cuda_launch {
  char function[128];
  unsigned grid[3], block[3], smem;
  void *stream;
  int nparams;
  unsigned param_size[FAKE_CUDA_MAX_PARAMS];
  unsigned param_align[FAKE_CUDA_MAX_PARAMS]; /* .align N of the PTX, else the size */
  unsigned char param[FAKE_CUDA_MAX_PARAMS][FAKE_CUDA_MAX_PARAM_BYTES]; /* each one's bytes, zero-padded */
} fake_cuda_launch;

/* One cuTensorMapEncodeTiled call, its arguments as passed. */
typedef struct fake_cuda_tmap_call {
  int data_type;
  unsigned rank;
  uint64_t address;
  uint64_t global_dim[5], global_strides[4];
  uint32_t box_dim[5], element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
  int result; /* what the fake returned */
} fake_cuda_tmap_call;

typedef struct fake_cuda_state {
  int ptx_compiles;      /* cuModuleLoadDataEx of PTX, and cuLinkComplete */
  int links;             /* cuLinkComplete */
  int binary_loads;      /* cuModuleLoadData(Ex) of a device binary */
  int launches;
  int modules_live;      /* loaded and not unloaded */
  int contexts_live;     /* primary context retains minus releases */
  fake_cuda_launch last;
  int misaligned_params; /* launches' parameters whose address was not aligned to their .align */
  int tmap_encodes;      /* cuTensorMapEncodeTiled calls */
  fake_cuda_tmap_call tmap_calls[FAKE_CUDA_MAX_TMAP_CALLS]; /* the first ones since tmap_encodes was 0 */
  int tmap_fail; /* set by a test: the next calls return CUDA_ERROR_INVALID_VALUE */
} fake_cuda_state;

typedef fake_cuda_state *(*fake_cuda_state_fn)(void);

#endif
