/* host_jit: compile a kernel from a string inside the program, launch it, check it.
 *
 *   host_jit [N]
 *
 * The whole JIT in one page: tl_module_compile turns .tl source into a loaded module for the
 * context's device (sm_90a on an H100/H200), through the cache in $TILEC_CACHE_DIR (by default
 * ~/.cache/tilec): the first run compiles (milliseconds) and has the driver build the device code
 * (about 100 ms); every later run, in any process, loads the cached device code. tl_launch checks
 * the arguments against the kernel's signature (shapes, types, the size N they share) and binds N.
 *
 * Exit status: 0 correct, 1 wrong or an error, 2 no GPU here (the source is still compiled to PTX,
 * so the compiler half is checked on any machine).
 *
 * With TILEC_DEVICE=cpu the same program runs on the CPU device, no GPU needed: host memory, and
 * the kernel run by tilec's interpreter (docs/c-api.md, "The CPU device").
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilec_jit.h"

/* C = A + B, one tile of BLOCK elements per block; the tile hangs over the end of the vectors
 * safely (loads read zeros there, stores write nothing). */
static const char SOURCE[] =
    "kernel vector_add[BLOCK = 4096, THREADS = 256](A: f32[N], B: f32[N], C: f32[N])\n"
    "    grid(ceildiv(N, BLOCK)) as (bx) threads(THREADS)\n"
    "{\n"
    "    let a = alloc_fragment([BLOCK], f32);\n"
    "    let b = alloc_fragment([BLOCK], f32);\n"
    "    copy(A[bx * BLOCK], a);\n"
    "    copy(B[bx * BLOCK], b);\n"
    "    for i in parallel(BLOCK) {\n"
    "        a[i] = a[i] + b[i];\n"
    "    }\n"
    "    copy(a, C[bx * BLOCK]);\n"
    "}\n";

enum { EXIT_NO_GPU = 2 };

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Diagnostics as records, the way an editor or a test would take them. */
static void print_diagnostic(void *user, const tilec_diagnostic *d)
{
  (void)user;
  fprintf(stderr, "  [%s] %s:%d:%d: %s\n",
          d->severity == 0   ? "error"
          : d->severity == 1 ? "warning"
                             : "note",
          d->file, d->line, d->column, d->message);
}

int main(int argc, char **argv)
{
  long long n = (1 << 20) + 3; /* not a multiple of the tile: the edge is part of the check */
  if (argc > 2 || (argc == 2 && (n = strtoll(argv[1], NULL, 10)) <= 0) || n > INT32_MAX) {
    fprintf(stderr, "usage: host_jit [N]   (N in 1..%d, default 1048579)\n", INT32_MAX);
    return 1;
  }
  tl_jit_options opt = tl_jit_default_options(); /* -O3, the context's device, cached */
  opt.filename = "vector_add.tl";
  opt.on_diagnostic = print_diagnostic;

  char err[4096];
  tl_context *ctx = NULL;
  double t0 = now_ms();
  tl_status st = tl_context_create(0, &ctx, err, sizeof err);
  double t_ctx = now_ms() - t0;
  if (st == TL_ERR_NO_DRIVER || st == TL_ERR_NO_DEVICE) {
    /* No GPU: still compile, to PTX, for the target the H100/H200 would get. */
    char why[4096];
    snprintf(why, sizeof why, "%s", err);
    opt.arch = "sm_90a";
    char *ptx = NULL;
    t0 = now_ms();
    st = tl_jit_compile_ptx(NULL, SOURCE, strlen(SOURCE), &opt, &ptx, err, sizeof err);
    if (st != TL_OK) {
      fprintf(stderr, "host_jit: %s: %s\n", tl_status_name(st), err);
      return 1;
    }
    printf("host_jit: compiled vector_add to %zu bytes of PTX in %.1f ms; no GPU: skipped (%s)\n",
           strlen(ptx), now_ms() - t0, why);
    free(ptx);
    return EXIT_NO_GPU;
  }
  if (st != TL_OK) {
    fprintf(stderr, "host_jit: %s: %s\n", tl_status_name(st), err);
    return 1;
  }

  int status = 1;
  tl_module *module = NULL;
  tl_kernel *kernel = NULL;
  tl_devptr a = 0, b = 0, c = 0;
  const size_t count = (size_t)n, bytes = count * sizeof(float);
  float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
  if (!ha || !hb || !hc) {
    fprintf(stderr, "host_jit: out of host memory\n");
    goto done;
  }
  for (size_t i = 0; i < count; i++) {
    ha[i] = (float)(i % 1000) * 0.25f;
    hb[i] = (float)(i % 777) * -0.5f;
  }

#define TRY(call)                                                                         \
  do {                                                                                    \
    if ((st = (call)) != TL_OK) {                                                         \
      fprintf(stderr, "host_jit: %s: %s\n", tl_status_name(st), tl_context_message(ctx)); \
      goto done;                                                                          \
    }                                                                                     \
  } while (0)

  /* Source to a loaded module: from the cache if this exact kernel was compiled before. */
  t0 = now_ms();
  TRY(tl_module_compile(ctx, SOURCE, strlen(SOURCE), &opt, &module));
  const double t_module = now_ms() - t0;
  TRY(tl_module_get_kernel(module, "vector_add", &kernel));
  tl_jit_stats stats;
  tl_jit_cache_stats(tl_context_jit_cache(ctx), &stats);

  TRY(tl_malloc(ctx, bytes, &a));
  TRY(tl_malloc(ctx, bytes, &b));
  TRY(tl_malloc(ctx, bytes, &c));
  TRY(tl_memcpy_htod(ctx, a, ha, bytes));
  TRY(tl_memcpy_htod(ctx, b, hb, bytes));
  TRY(tl_memset_d8(ctx, c, 0xFF, bytes)); /* NaN everywhere: an unwritten element cannot pass */

  /* Tensors are (device pointer, element type, shape); N is bound from the shapes. */
  const int64_t shape[1] = {n};
  const tl_arg args[3] = {tl_arg_tensor(a, TL_F32, 1, shape), tl_arg_tensor(b, TL_F32, 1, shape),
                          tl_arg_tensor(c, TL_F32, 1, shape)};
  t0 = now_ms();
  TRY(tl_launch(kernel, args, 3, NULL));
  TRY(tl_synchronize(ctx));
  const double t_launch = now_ms() - t0;
  TRY(tl_memcpy_dtoh(ctx, hc, c, bytes));

  size_t wrong = 0;
  for (size_t i = 0; i < count; i++)
    wrong += !(hc[i] == ha[i] + hb[i]);
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  printf("host_jit: vector_add N=%lld on %s (sm_%d%d): %s\n", n, dev.name, dev.cc_major, dev.cc_minor,
         wrong ? "WRONG" : "OK, every element exact");
  printf("  context %.1f ms; compile + load %.2f ms (%s); first launch + sync %.2f ms\n", t_ctx, t_module,
         stats.memory_hits ? "from the memory cache"
         : stats.disk_hits ? "from the disk cache, no compiler ran"
         : stats.compiles  ? "compiled, device code built and cached"
                           : "?",
         t_launch);
  printf("  cache folder: %s\n", *tl_jit_cache_dir(tl_context_jit_cache(ctx))
                                     ? tl_jit_cache_dir(tl_context_jit_cache(ctx))
                                     : "(disk cache off)");
  status = wrong ? 1 : 0;

done:
  tl_free(ctx, a);
  tl_free(ctx, b);
  tl_free(ctx, c);
  tl_module_unload(module);
  tl_context_destroy(ctx);
  free(ha);
  free(hb);
  free(hc);
  return status;
}
