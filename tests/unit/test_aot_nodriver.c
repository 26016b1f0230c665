/* test_aot_nodriver: a generated header in a translation unit of its own, pointed at a driver
 * library that does not exist, so that test_aot.c can check the launchers' "no driver" status. */
#define TILEC_AOT_CUDA_LIBRARY "/nonexistent/libcuda.so.1"
#include "saxpy.h"

int aot_no_driver_result(void);

int aot_no_driver_result(void)
{
  float *x = (float *)(uintptr_t)256;
  return saxpy_launch(NULL, x, x, x, 1.0f, 100);
}
