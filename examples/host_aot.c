/* host_aot: launch a kernel through the C header that tilec wrote ahead of time.
 *
 *   tilec examples/vector_add.tl --emit=header -o vector_add.h     (the build does this)
 *   host_aot [N]
 *
 * vector_add.h holds the PTX as a string and one typed function per kernel,
 *
 *   CUresult vector_add_launch(CUstream stream, float *A, float *B, float *C, int32_t N);
 *
 * which computes the grid from N, loads the module on first use (into the current CUDA context)
 * and calls cuLaunchKernel: no compiler, no metadata parsing, only libcuda at run time. Here the
 * context and the memory come from tilec's runtime; any CUDA context works (the CUDA runtime's, or
 * PyTorch's, current on the calling thread).
 *
 * Exit status: 0 correct, 1 wrong or an error, 2 no GPU here.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>

#include "tilec_runtime.h"
#include "vector_add.h"

enum { EXIT_NO_GPU = 2 };

int main(int argc, char **argv)
{
  long long n = (1 << 20) + 3;
  if (argc > 2 || (argc == 2 && (n = strtoll(argv[1], NULL, 10)) <= 0) || n > INT32_MAX) {
    fprintf(stderr, "usage: host_aot [N]   (N in 1..%d, default 1048579)\n", INT32_MAX);
    return 1;
  }
  char err[1024];
  tl_context *ctx = NULL; /* makes device 0's primary context current on this thread */
  tl_status st = tl_context_create(0, &ctx, err, sizeof err);
  if (st == TL_ERR_NO_DRIVER || st == TL_ERR_NO_DEVICE) {
    printf("host_aot: no GPU: skipped (%s)\n", err);
    return EXIT_NO_GPU;
  }
  if (st != TL_OK) {
    fprintf(stderr, "host_aot: %s: %s\n", tl_status_name(st), err);
    return 1;
  }
  int status = 1;
  tl_devptr a = 0, b = 0, c = 0;
  const size_t count = (size_t)n, bytes = count * sizeof(float);
  float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
  if (!ha || !hb || !hc)
    goto done;
  for (size_t i = 0; i < count; i++) {
    ha[i] = (float)(i % 1000) * 0.25f;
    hb[i] = (float)(i % 777) * -0.5f;
  }
  if (tl_malloc(ctx, bytes, &a) != TL_OK || tl_malloc(ctx, bytes, &b) != TL_OK ||
      tl_malloc(ctx, bytes, &c) != TL_OK || tl_memcpy_htod(ctx, a, ha, bytes) != TL_OK ||
      tl_memcpy_htod(ctx, b, hb, bytes) != TL_OK || tl_memset_d8(ctx, c, 0xFF, bytes) != TL_OK) {
    fprintf(stderr, "host_aot: %s\n", tl_context_message(ctx));
    goto done;
  }

  /* The generated launcher: device pointers, the size, the stream (NULL: the default stream). */
  CUresult r = vector_add_launch(NULL, (float *)(uintptr_t)a, (float *)(uintptr_t)b, (float *)(uintptr_t)c,
                                 (int32_t)n);
  if (r != TILEC_AOT_SUCCESS) {
    fprintf(stderr, "host_aot: vector_add_launch failed: CUresult %d\n", (int)r);
    goto done;
  }
  if (tl_synchronize(ctx) != TL_OK || tl_memcpy_dtoh(ctx, hc, c, bytes) != TL_OK) {
    fprintf(stderr, "host_aot: %s\n", tl_context_message(ctx));
    goto done;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++)
    wrong += !(hc[i] == ha[i] + hb[i]);
  printf("host_aot: vector_add N=%lld through vector_add.h: %s\n", n,
         wrong ? "WRONG" : "OK, every element exact");
  status = wrong ? 1 : 0;

done:
  vector_add_unload(); /* the header's module, before its context goes */
  tl_free(ctx, a);
  tl_free(ctx, b);
  tl_free(ctx, c);
  tl_context_destroy(ctx);
  free(ha);
  free(hb);
  free(hc);
  return status;
}
