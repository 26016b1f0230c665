/* gpu_bench: memory-bound example kernels at N = 2^28 against the device's own copy engine path.
 *
 *   gpu_bench PTXDIR [RESULTS_FILE] [--reps R]
 *
 * Each kernel and the peer (cuMemcpyDtoD of N floats, the fastest a device-to-device stream of bytes
 * goes) is timed in the same run with CUDA events: warm-up, then the median of R runs (default 100).
 * Bandwidth counts bytes read plus bytes written. vector_add must reach 0.95 of the peer's
 * bandwidth; the other rows are for information. Exit 0 if it does, 1 if not (or if vector_add
 * could not run or computed a wrong result), 2 if there is no GPU.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_common.h"

#define BENCH_N ((size_t)1 << 28)
#define TARGET 0.95
enum { WARMUP = 10 };


typedef struct fill_arg {
  float *f32_a, *f32_b;
  uint16_t *f16;
} fill_arg;

static size_t fill(void *p, size_t begin, size_t end, uint64_t seed)
{
  fill_arg *a = p;
  uint64_t s = seed;
  for (size_t i = begin; i < end; i++) {
    a->f32_a[i] = gpu_random_float(&s, -1.0f, 1.0f);
    a->f32_b[i] = gpu_random_float(&s, -1.0f, 1.0f);
    a->f16[i] = tl_f16_from_float(gpu_random_float(&s, -5.0f, 5.0f));
  }
  return 0;
}

typedef struct verify_arg {
  const float *a, *b, *c;
} verify_arg;

static size_t verify_vector_add(void *p, size_t begin, size_t end, uint64_t seed)
{
  (void)seed;
  verify_arg *v = p;
  size_t bad = 0;
  for (size_t i = begin; i < end; i++)
    bad += !(v->c[i] == v->a[i] + v->b[i]);
  return bad;
}

/* One row of the table. */
typedef struct row {
  const char *kernel;
  double bytes;
  double ms;       /* < 0: not run */
  const char *why; /* when not run, or when the result is wrong */
  bool has_target;
} row;

static void print_table(FILE *f, const row *rows, int nrows, double peer_tbs, const char *device,
                        uint64_t seed, int reps)
{
  fprintf(f, "# gpu_bench: %s, N = %zu, median of %d runs after %d warm-up, seed %llu\n", device, BENCH_N,
          reps, WARMUP, (unsigned long long)seed);
  fprintf(f, "# TB/s counts bytes read + written; peer = cuMemcpyDtoD of N floats, same run\n");
  fprintf(f, "%-12s %10s %11s %10s %8s %10s %7s %7s  %s\n", "kernel", "N", "bytes", "median_ms", "TB/s",
          "peer_TB/s", "ratio", "target", "result");
  for (int i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    if (r->ms < 0) {
      fprintf(f, "%-12s %10zu %11.0f %10s %8s %10.3f %7s %7s  %s\n", r->kernel, BENCH_N, r->bytes, "-", "-",
              peer_tbs, "-", r->has_target ? "0.95" : "-", r->has_target ? "FAIL" : "skipped");
      if (r->why)
        fprintf(f, "#   %s: %s\n", r->kernel, r->why);
      continue;
    }
    const double tbs = r->bytes / (r->ms * 1e-3) / 1e12, ratio = tbs / peer_tbs;
    const char *result = !r->has_target ? "info" : r->why ? "FAIL" : ratio >= TARGET ? "PASS" : "FAIL";
    fprintf(f, "%-12s %10zu %11.0f %10.4f %8.3f %10.3f %7.3f %7s  %s\n", r->kernel, BENCH_N, r->bytes, r->ms,
            tbs, peer_tbs, ratio, r->has_target ? "0.95" : "-", result);
    if (r->why)
      fprintf(f, "#   %s: %s\n", r->kernel, r->why);
  }
}

int main(int argc, char **argv)
{
  const char *dir = NULL, *results = NULL;
  int reps = 100;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      i++;
    else if (!dir)
      dir = argv[i];
    else if (!results)
      results = argv[i];
    else
      dir = NULL, i = argc;
  }
  if (!dir || reps < 1) {
    fprintf(stderr, "usage: gpu_bench PTXDIR [RESULTS_FILE] [--reps R] [--seed S]\n");
    return 1;
  }
  const uint64_t seed = gpu_seed_from_args(argc, argv, NULL);
  bool no_gpu;
  tl_context *ctx = gpu_open("gpu_bench", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  tl_device_info dev;
  tl_context_device(ctx, &dev);

  const size_t n = BENCH_N;
  int status = 1;
  tl_devptr a = 0, b = 0, c = 0, x16 = 0, y16 = 0;
  fill_arg host = {malloc(n * 4), malloc(n * 4), malloc(n * 2)};
  float *host_c = malloc(n * 4);
  tl_module *m_add = NULL, *m_saxpy = NULL, *m_gelu = NULL;
  double peer_ms = 0;
  row rows[3] = {
      {"vector_add", 3.0 * n * 4, -1, NULL, true},
      /* saxpy reads X and Y and writes Z: three arrays, as vector_add */
      {"saxpy", 3.0 * n * 4, -1, NULL, false},
      {"gelu_f16", 2.0 * n * 2, -1, NULL, false},
  };
  if (!host.f32_a || !host.f32_b || !host.f16 || !host_c) {
    printf("gpu_bench: out of host memory\n");
    goto done;
  }
  gpu_parallel_for(n, seed, fill, &host);

#define STEP(call)                                                                 \
  do {                                                                             \
    tl_status st_ = (call);                                                        \
    if (st_ != TL_OK) {                                                            \
      printf("gpu_bench: %s: %s\n", tl_status_name(st_), tl_context_message(ctx)); \
      goto done;                                                                   \
    }                                                                              \
  } while (0)

  STEP(tl_malloc(ctx, n * 4, &a));
  STEP(tl_malloc(ctx, n * 4, &b));
  STEP(tl_malloc(ctx, n * 4, &c));
  STEP(tl_malloc(ctx, n * 2, &x16));
  STEP(tl_malloc(ctx, n * 2, &y16));
  STEP(tl_memcpy_htod(ctx, a, host.f32_a, n * 4));
  STEP(tl_memcpy_htod(ctx, b, host.f32_b, n * 4));
  STEP(tl_memcpy_htod(ctx, x16, host.f16, n * 2));

  gpu_copy_arg copy = {ctx, c, a, n * 4};
  if (!gpu_time_median_ms(ctx, gpu_timed_copy, &copy, WARMUP, reps, &peer_ms)) {
    printf("gpu_bench: timing the peer copy failed\n");
    goto done;
  }
  const double peer_tbs = 2.0 * n * 4 / (peer_ms * 1e-3) / 1e12;

  const int64_t shape[1] = {(int64_t)n};
  bool missing;
  tl_kernel *k = NULL;

  /* vector_add: timed, then checked, since a fast wrong kernel must not pass */
  if (gpu_load(ctx, dir, "vector_add.ptx", &m_add, &missing) != TL_OK) {
    rows[0].why = missing ? "vector_add.ptx not found" : strdup(tl_context_message(ctx));
  } else if (tl_module_get_kernel(m_add, "vector_add", &k) != TL_OK) {
    rows[0].why = strdup(tl_context_message(ctx));
  } else {
    STEP(tl_memset_d8(ctx, c, 0xFF, n * 4));
    const tl_arg args[3] = {tl_arg_tensor(a, TL_F32, 1, shape), tl_arg_tensor(b, TL_F32, 1, shape),
                            tl_arg_tensor(c, TL_F32, 1, shape)};
    gpu_launch_arg la = {ctx, k, args, 3};
    if (gpu_time_median_ms(ctx, gpu_timed_launch, &la, WARMUP, reps, &rows[0].ms)) {
      STEP(tl_memcpy_dtoh(ctx, host_c, c, n * 4));
      verify_arg v = {host.f32_a, host.f32_b, host_c};
      size_t bad = gpu_parallel_for(n, 0, verify_vector_add, &v);
      if (bad) {
        static char why[128];
        snprintf(why, sizeof why, "%zu of %zu results wrong", bad, n);
        rows[0].why = why;
      }
    } else {
      rows[0].why = "timing failed";
    }
  }

  if (gpu_load(ctx, dir, "saxpy.ptx", &m_saxpy, &missing) == TL_OK &&
      tl_module_get_kernel(m_saxpy, "saxpy", &k) == TL_OK) {
    const tl_arg args[4] = {tl_arg_tensor(a, TL_F32, 1, shape), tl_arg_tensor(b, TL_F32, 1, shape),
                            tl_arg_tensor(c, TL_F32, 1, shape), tl_arg_f32(1.5f)};
    gpu_launch_arg la = {ctx, k, args, 4};
    if (!gpu_time_median_ms(ctx, gpu_timed_launch, &la, WARMUP, reps, &rows[1].ms))
      rows[1].ms = -1, rows[1].why = "timing failed";
  } else {
    rows[1].why = missing ? "saxpy.ptx not found" : strdup(tl_context_message(ctx));
  }

  if (gpu_load(ctx, dir, "gelu.ptx", &m_gelu, &missing) == TL_OK &&
      tl_module_get_kernel(m_gelu, "gelu_f16", &k) == TL_OK) {
    const tl_arg args[2] = {tl_arg_tensor(x16, TL_F16, 1, shape), tl_arg_tensor(y16, TL_F16, 1, shape)};
    gpu_launch_arg la = {ctx, k, args, 2};
    if (!gpu_time_median_ms(ctx, gpu_timed_launch, &la, WARMUP, reps, &rows[2].ms))
      rows[2].ms = -1, rows[2].why = "timing failed";
  } else {
    rows[2].why = missing ? "gelu.ptx not found" : strdup(tl_context_message(ctx));
  }

  printf("%-12s %10zu %11.0f %10.4f %8.3f  (peer)\n", "memcpy_DtoD", n, 2.0 * n * 4, peer_ms, peer_tbs);
  print_table(stdout, rows, 3, peer_tbs, dev.name, seed, reps);
  if (results) {
    FILE *f = fopen(results, "w");
    if (!f) {
      printf("gpu_bench: cannot write %s\n", results);
    } else {
      print_table(f, rows, 3, peer_tbs, dev.name, seed, reps);
      fprintf(f, "%-12s %10zu %11.0f %10.4f %8.3f  (peer)\n", "memcpy_DtoD", n, 2.0 * n * 4, peer_ms,
              peer_tbs);
      fclose(f);
    }
  }
  const double add_ratio = rows[0].ms > 0 ? (3.0 * n * 4 / (rows[0].ms * 1e-3) / 1e12) / peer_tbs : 0;
  status = rows[0].ms > 0 && !rows[0].why && add_ratio >= TARGET ? 0 : 1;
  printf("gpu_bench: vector_add at %.3f of the peer (target %.2f): %s\n", add_ratio, TARGET,
         status ? "FAIL" : "PASS");

done:
  tl_free(ctx, a);
  tl_free(ctx, b);
  tl_free(ctx, c);
  tl_free(ctx, x16);
  tl_free(ctx, y16);
  tl_module_unload(m_add);
  tl_module_unload(m_saxpy);
  tl_module_unload(m_gelu);
  tl_context_destroy(ctx);
  free(host.f32_a);
  free(host.f32_b);
  free(host.f16);
  free(host_c);
  return status;
}
