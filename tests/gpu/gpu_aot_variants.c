/* gpu_aot_variants: a C header with several variants (tilec --emit=header --bucket) on the GPU.
 *
 * The build writes softmax_variants.h from stdlib/softmax.tl's softmax, for large rows and for the
 * buckets M=64,N=64 / M=64,N=512 / M=4096,N=4096 (tests/gpu/CMakeLists.txt). For each shape below,
 * ragged ones included, X is random f16, Y is poisoned (0xFFFF, a NaN), softmax_launch runs the
 * variant softmax_variant picks (printed), and every row of Y is compared with a host softmax in
 * double: |y - ref| <= 2e-3 + 1e-2 |ref| for every element, and no NaN. Each of the four variants
 * must run at least once. Exit status: 0 right, 1 wrong or an error, 2 no GPU.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "softmax_variants.h"

static bool check_shape(tl_context *ctx, int32_t m, int32_t n, uint64_t *rng, int *ran)
{
  const size_t count = (size_t)m * (size_t)n, bytes = count * 2;
  uint16_t *hx = malloc(bytes), *hy = malloc(bytes);
  tl_devptr x = 0, y = 0;
  bool ok = hx && hy;
  for (size_t i = 0; ok && i < count; i++)
    hx[i] = tl_f16_from_float(gpu_random_float(rng, -4.0f, 4.0f));
  ok = ok && tl_malloc(ctx, bytes, &x) == TL_OK && tl_malloc(ctx, bytes, &y) == TL_OK &&
       tl_memcpy_htod(ctx, x, hx, bytes) == TL_OK && tl_memset_d8(ctx, y, 0xFF, bytes) == TL_OK;
  int v = softmax_variant(m, n);
  CUresult r = ok ? softmax_launch(NULL, (uint16_t *)(uintptr_t)x, (uint16_t *)(uintptr_t)y, m, n) : 1;
  ok = ok && r == TILEC_AOT_SUCCESS && tl_synchronize(ctx) == TL_OK &&
       tl_memcpy_dtoh(ctx, hy, y, bytes) == TL_OK;
  size_t bad = 0;
  double worst = 0;
  for (int32_t i = 0; ok && i < m; i++) {
    const uint16_t *row = hx + (size_t)i * (size_t)n;
    double mx = -INFINITY, sum = 0;
    for (int32_t j = 0; j < n; j++)
      mx = fmax(mx, tl_f16_to_float(row[j]));
    for (int32_t j = 0; j < n; j++)
      sum += exp(tl_f16_to_float(row[j]) - mx);
    for (int32_t j = 0; j < n; j++) {
      double ref = exp(tl_f16_to_float(row[j]) - mx) / sum, got = tl_f16_to_float(hy[(size_t)i * n + j]);
      double err = fabs(got - ref);
      if (!(err <= 2e-3 + 1e-2 * fabs(ref)))
        bad++;
      worst = err > worst ? err : worst;
    }
  }
  printf("%s softmax M=%d N=%d: variant %d, %s (worst |error| %.2g)\n", ok && !bad ? "PASS" : "FAIL", m, n, v,
         !ok   ? (r != TILEC_AOT_SUCCESS ? "the launch failed" : tl_context_message(ctx))
         : bad ? "elements wrong"
               : "every element within tolerance",
         worst);
  if (ok && !bad && v >= 0 && v < 4)
    ran[v]++;
  tl_free(ctx, x);
  tl_free(ctx, y);
  free(hx);
  free(hy);
  return ok && !bad;
}

int main(int argc, char **argv)
{
  bool no_gpu = false;
  tl_context *ctx = gpu_open("gpu_aot_variants", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  int argi = 1;
  uint64_t rng = gpu_seed_from_args(argc, argv, &argi);
  printf("gpu_aot_variants: seed %llu (replay with --seed %llu)\n", (unsigned long long)rng,
         (unsigned long long)rng);
  static const int32_t shapes[][2] = {{64, 64},   {3, 50},     {64, 512}, {77, 500},    {4096, 4096},
                                      {33, 4000}, {7, 100003}, {1, 1},    {1000, 1000}, {5, 70000}};
  int ran[4] = {0}, failed = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
    failed += !check_shape(ctx, shapes[i][0], shapes[i][1], &rng, ran);
  for (int v = 0; v < 4; v++)
    if (!ran[v]) {
      printf("FAIL variant %d never ran\n", v);
      failed++;
    }
  softmax_unload();
  tl_context_destroy(ctx);
  printf("gpu_aot_variants: %s\n", failed ? "FAIL" : "PASS");
  return failed ? 1 : 0;
}
