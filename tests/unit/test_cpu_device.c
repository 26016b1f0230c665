/* test_cpu_device: the CPU device behind the C API (TL_DEVICE_CPU, $TILEC_DEVICE=cpu), on a machine
 * with no GPU and no driver: contexts by ordinal and by environment, host memory and its checks (bad
 * pointers, copies past an allocation, frees that are not), modules from source through the JIT
 * (PTX refused), launches run by the interpreter with the GPU's argument checks: vector_add, saxpy
 * (a float scalar), the example matmul at a ragged shape against a C reference, a persistent grid
 * (num_sms), empty launches, and a kernel's out-of-bounds access reported with its .tl line.
 *
 * The driver library is pointed at a file that does not exist ($TILEC_CUDA_LIBRARY), so any path
 * that tried to load it would fail: nothing here may.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilec_jit.h"

#include "../support/check.h"

#define NO_DRIVER "/nonexistent/libcuda.so.1"

static tl_jit_options memory_cache_only(void)
{
  tl_jit_options o = tl_jit_default_options();
  o.flags = TL_JIT_NO_DISK_CACHE;
  return o;
}

/* A CPU context by $TILEC_DEVICE=cpu, as a host written for the GPU gets it. */
static tl_context *cpu_context(void)
{
  char err[512];
  tl_context *ctx = NULL;
  setenv("TILEC_DEVICE", "cpu", 1);
  tl_status st = tl_context_create(0, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
  return ctx;
}

/* A CPU context and a kernel compiled on it, from examples/FILE (src NULL) or from src (named
 * FILE in messages); NULL, with nothing left over, if either fails. */
static tl_context *context_with(const char *file, const char *src, const char *kernel,
                                const tilec_define *defs, int ndefs, tl_kernel **k)
{
  *k = NULL;
  tl_context *ctx = cpu_context();
  if (!ctx)
    return NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/%s", TILEC_SOURCE_DIR, file);
  tl_jit_options o = memory_cache_only();
  o.filename = file;
  o.defines = defs;
  o.ndefines = ndefs;
  tl_module *m = NULL;
  tl_status st = src ? tl_module_compile(ctx, src, strlen(src), &o, &m)
                     : tl_module_compile_file(ctx, path, &o, &m);
  CHECK_STATUS(st, TL_OK, tl_context_message(ctx));
  if (st == TL_OK) {
    st = tl_module_get_kernel(m, kernel, k);
    CHECK_STATUS(st, TL_OK, tl_context_message(ctx));
  }
  if (st != TL_OK) {
    tl_context_destroy(ctx);
    return NULL;
  }
  return ctx;
}

/* Host data into a new allocation. */
static tl_devptr upload(tl_context *ctx, const void *data, size_t bytes)
{
  tl_devptr p = 0;
  CHECK_STATUS(tl_malloc(ctx, bytes, &p), TL_OK, tl_context_message(ctx));
  CHECK_STATUS(tl_memcpy_htod(ctx, p, data, bytes), TL_OK, tl_context_message(ctx));
  return p;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(float lo, float hi)
{
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (float)((rng >> 40) & 0xFFFFFF) / (float)0x1000000;
}

/* x and y: n random floats in [-range, range), uploaded to d[0] and d[1]; d[2]: n floats more. */
static void two_in_one_out(tl_context *ctx, float *x, float *y, int n, float range, tl_devptr d[3])
{
  for (int i = 0; i < n; i++) {
    x[i] = uniform(-range, range);
    y[i] = uniform(-range, range);
  }
  d[0] = upload(ctx, x, sizeof *x * (size_t)n);
  d[1] = upload(ctx, y, sizeof *y * (size_t)n);
  CHECK_STATUS(tl_malloc(ctx, sizeof(float) * (size_t)n, &d[2]), TL_OK, tl_context_message(ctx));
}

/* ---------------------------------------------------------------------------------- contexts */

static void test_contexts(void)
{
  char err[512];
  tl_context *ctx = NULL;
  tl_device_info dev;

  unsetenv("TILEC_DEVICE");
  tl_status st = tl_context_create(TL_DEVICE_CPU, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
  CHECK_STATUS(tl_context_device(ctx, &dev), TL_OK, tl_context_message(ctx));
  CHECK(dev.ordinal == TL_DEVICE_CPU && !strcmp(dev.name, "cpu (tilec interpreter)"), "%d %s", dev.ordinal,
        dev.name);
  CHECK(dev.cc_major == 9 && dev.cc_minor == 0 && dev.sm_count == 4, "sm_%d%d, %d SMs", dev.cc_major,
        dev.cc_minor, dev.sm_count);
  CHECK(dev.max_smem_per_block == 227 * 1024 && dev.total_memory > 0 && dev.driver_version == 0,
        "smem %d, memory %zu, driver %d", dev.max_smem_per_block, dev.total_memory, dev.driver_version);
  CHECK(!strcmp(tl_jit_arch_for(dev.cc_major, dev.cc_minor), "sm_90a"), "arch");
  CHECK_STATUS(tl_synchronize(ctx), TL_OK, tl_context_message(ctx));
  CHECK_STATUS(tl_context_set_stream(ctx, TL_STREAM_LEGACY), TL_OK, tl_context_message(ctx));
  tl_context_destroy(ctx);

  /* no TILEC_DEVICE: the GPU, which is not here */
  st = tl_context_create(0, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_NO_DRIVER, err);
  CHECK(ctx == NULL, "ctx set on failure");
  setenv("TILEC_DEVICE", "gpu", 1);
  st = tl_context_create(0, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_NO_DRIVER, err);
  /* auto: the GPU if there is one, else the CPU */
  setenv("TILEC_DEVICE", "auto", 1);
  st = tl_context_create(0, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
  CHECK(tl_context_device(ctx, &dev) == TL_OK && dev.ordinal == TL_DEVICE_CPU, "auto gave %d", dev.ordinal);
  tl_context_destroy(ctx);
  /* cpu: any ordinal */
  setenv("TILEC_DEVICE", "cpu", 1);
  st = tl_context_create(3, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
  tl_context_destroy(ctx);
  setenv("TILEC_DEVICE", "tpu", 1);
  st = tl_context_create(0, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_BAD_ARGUMENT, err);
  CHECK_CONTAINS(err, "TILEC_DEVICE is 'tpu'; expected cpu, gpu or auto");
  setenv("TILEC_DEVICE", "cpu", 1);
  st = tl_context_create(-2, &ctx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_BAD_ARGUMENT, err);
  CHECK(tl_context_create(0, NULL, err, sizeof err) == TL_ERR_BAD_ARGUMENT, "out NULL");
}

/* ------------------------------------------------------------------------------------ memory */

static void test_memory(void)
{
  tl_context *ctx = cpu_context();
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  tl_devptr p = 0, q = 0;
  CHECK_STATUS(tl_malloc(ctx, 100, &p), TL_OK, msg);
  CHECK(p != 0 && p % 256 == 0, "0x%llx is not 256-byte aligned", p);
  unsigned char fresh[100], back[100], data[100];
  CHECK_STATUS(tl_memcpy_dtoh(ctx, fresh, p, 100), TL_OK, msg);
  int unfilled = 0;
  for (int i = 0; i < 100; i++) {
    unfilled += fresh[i] != 0xFF;
    data[i] = (unsigned char)(i * 7);
  }
  CHECK(unfilled == 0, "%d bytes of a new allocation are not 0xFF", unfilled);
  CHECK_STATUS(tl_memcpy_htod(ctx, p, data, 100), TL_OK, msg);
  CHECK_STATUS(tl_memset_d8(ctx, p + 90, 0xAB, 10), TL_OK, msg); /* the last 10 bytes, exactly */
  CHECK_STATUS(tl_memcpy_dtoh(ctx, back, p, 100), TL_OK, msg);
  CHECK(!memcmp(back, data, 90) && back[90] == 0xAB && back[99] == 0xAB, "round trip");
  CHECK_STATUS(tl_memcpy_dtoh(ctx, back, p + 40, 60), TL_OK, msg); /* inside, to the end */

  /* past the end, before the start, unknown, NULL: errors, never a crash */
  CHECK_STATUS(tl_memcpy_htod(ctx, p, data, 101), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "tl_memcpy_htod: 101 bytes at 0x");
  CHECK_CONTAINS(msg, "run past the end of their allocation (100 bytes at 0x");
  CHECK_STATUS(tl_memcpy_dtoh(ctx, back, p + 50, 51), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "50 left from there");
  CHECK_STATUS(tl_memset_d8(ctx, p + 100, 0, 1), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "is not in any allocation of this CPU context");
  CHECK_STATUS(tl_memset_d8(ctx, p - 1, 0, 1), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_STATUS(tl_memcpy_dtoh(ctx, back, (tl_devptr)(uintptr_t)data, 4), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "tl_memcpy_dtoh: 0x");
  CHECK_STATUS(tl_memcpy_htod(ctx, 0x1000, data, 4), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_STATUS(tl_memcpy_htod(ctx, p, NULL, 4), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_STATUS(tl_memcpy_htod(ctx, 0x1000, data, 0), TL_OK, msg); /* 0 bytes: nothing to check */

  /* frees: only what tl_malloc gave, once */
  CHECK_STATUS(tl_malloc(ctx, 0, &q), TL_OK, msg);
  CHECK(q == 0, "0 bytes gave 0x%llx", q);
  CHECK_STATUS(tl_free(ctx, 0), TL_OK, msg);
  CHECK_STATUS(tl_free(ctx, p + 8), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "not the start of an allocation (it is 8 bytes into the one at 0x");
  CHECK_STATUS(tl_malloc(ctx, 1 << 20, &q), TL_OK, msg);
  CHECK_STATUS(tl_free(ctx, p), TL_OK, msg);
  CHECK_STATUS(tl_free(ctx, p), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "no allocation of this CPU context starts there (freed already?)");
  CHECK_STATUS(tl_memset_d8(ctx, p, 0, 1), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_STATUS(tl_malloc(ctx, SIZE_MAX - 10, &p), TL_ERR_OUT_OF_MEMORY, msg);
  CHECK(p == 0, "out set on failure");
  tl_context_destroy(ctx); /* frees q: LeakSanitizer would say otherwise */
}

/* ------------------------------------------------------------------------------------ modules */

static void test_modules(void)
{
  tl_context *ctx = cpu_context();
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  char *ptx = NULL, err[4096];
  tl_jit_options o = memory_cache_only();
  o.arch = "sm_90a";
  const char *src = "kernel k(A: f32[N]) grid(1) threads(32) { A[0] = 1.0; }\n";
  CHECK_STATUS(tl_jit_compile_ptx(NULL, src, strlen(src), &o, &ptx, err, sizeof err), TL_OK, err);
  tl_module *m = (tl_module *)1;
  CHECK_STATUS(tl_module_load_ptx(ctx, ptx ? ptx : "", &m), TL_ERR_UNSUPPORTED, msg);
  CHECK_CONTAINS(msg, "tl_module_load_ptx: a CPU context runs .tl source: compile it with tl_module_compile");
  CHECK(m == NULL, "module set on failure");
  CHECK_STATUS(tl_module_load_file(ctx, "/nonexistent.ptx", &m), TL_ERR_UNSUPPORTED, msg);
  CHECK_CONTAINS(msg, "tl_module_load_file: a CPU context runs .tl source");
  free(ptx);

  /* the compiler's diagnostics, as on a GPU */
  const char *bad = "kernel k(A: f32[N]) grid(1) threads(32) {\n    A[0] = nope;\n}\n";
  o = memory_cache_only();
  o.filename = "bad.tl";
  CHECK_STATUS(tl_module_compile(ctx, bad, strlen(bad), &o, &m), TL_ERR_COMPILE, msg);
  CHECK_CONTAINS(msg, "bad.tl:2:");

  /* the level is checked when the module is made */
  setenv("TILEC_INTERP_LEVEL", "warp", 1);
  CHECK_STATUS(tl_module_compile(ctx, src, strlen(src), NULL, &m), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "TILEC_INTERP_LEVEL is 'warp'; expected tile, thread");
  setenv("TILEC_INTERP_LEVEL", "tile", 1);
  CHECK_STATUS(tl_module_compile(ctx, src, strlen(src), NULL, &m), TL_OK, msg);
  unsetenv("TILEC_INTERP_LEVEL");

  /* the metadata is the GPU's; a second compile comes from the memory cache; nothing was linked */
  tl_kernel *k = NULL;
  CHECK_STATUS(tl_module_get_kernel(m, "k", &k), TL_OK, msg);
  const tl_kernel_info *info = tl_kernel_get_info(k);
  CHECK(info && info->threads == 32 && info->nargs == 1 && info->nparams == 2, "metadata");
  CHECK(tl_meta_kernel_count(tl_module_meta(m)) == 1, "one kernel");
  CHECK_STATUS(tl_module_get_kernel(m, "other", &k), TL_ERR_NOT_FOUND, msg);
  tl_module *again = NULL;
  CHECK_STATUS(tl_module_compile(ctx, src, strlen(src), NULL, &again), TL_OK, msg);
  tl_jit_stats stats;
  tl_jit_cache_stats(tl_context_jit_cache(ctx), &stats);
  CHECK(stats.memory_hits >= 1 && stats.links == 0 && stats.binary_loads == 0, "hits %llu, links %llu",
        (unsigned long long)stats.memory_hits, (unsigned long long)stats.links);
  tl_module_unload(again);
  tl_context_destroy(ctx); /* unloads m */
}

/* ------------------------------------------------------------------------------------ launches */

static void test_vector_add(void)
{
  tl_kernel *k;
  tl_context *ctx = context_with("vector_add.tl", NULL, "vector_add", &(tilec_define){"BLOCK", "512"}, 1, &k);
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  enum { N = 1003 }; /* two whole tiles and a ragged one */
  float a[N], b[N], c[N];
  tl_devptr d[3];
  two_in_one_out(ctx, a, b, N, 1, d);
  tl_devptr da = d[0], db = d[1], dc = d[2];
  int64_t shape[1] = {N};
  tl_arg args[3] = {tl_arg_tensor(da, TL_F32, 1, shape), tl_arg_tensor(db, TL_F32, 1, shape),
                    tl_arg_tensor(dc, TL_F32, 1, shape)};
  CHECK_STATUS(tl_launch(k, args, 3, NULL), TL_OK, msg);
  CHECK_STATUS(tl_synchronize(ctx), TL_OK, msg);
  CHECK_STATUS(tl_memcpy_dtoh(ctx, c, dc, sizeof c), TL_OK, msg);
  int wrong = 0;
  for (int i = 0; i < N; i++)
    wrong += c[i] != a[i] + b[i];
  CHECK(wrong == 0, "%d of %d elements wrong", wrong, N);

  /* a tensor inside an allocation: elements 10.. of each */
  shape[0] = N - 10;
  tl_arg inner[3] = {tl_arg_tensor(da + 40, TL_F32, 1, shape), tl_arg_tensor(db + 40, TL_F32, 1, shape),
                     tl_arg_tensor(dc + 40, TL_F32, 1, shape)};
  CHECK_STATUS(tl_memset_d8(ctx, dc, 0, sizeof c), TL_OK, msg);
  CHECK_STATUS(tl_launch(k, inner, 3, NULL), TL_OK, msg);
  CHECK_STATUS(tl_memcpy_dtoh(ctx, c, dc, sizeof c), TL_OK, msg);
  CHECK(c[9] == 0 && c[10] == a[10] + b[10] && c[N - 1] == a[N - 1] + b[N - 1], "offset tensors");

  /* the planner's checks, word for word as on the GPU */
  tl_arg bad[3];
  memcpy(bad, args, sizeof bad);
  shape[0] = N;
  bad[1].dtype = TL_F16;
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "launch of 'vector_add': argument 1 ('B'): expected a tensor of f32, got f16");
  CHECK_STATUS(tl_launch(k, args, 2, NULL), TL_ERR_BAD_ARGUMENT, msg);

  /* pointers the context did not give, and tensors longer than their allocation */
  memcpy(bad, args, sizeof bad);
  bad[0].ptr = (tl_devptr)(uintptr_t)a;
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "launch of 'vector_add': argument 0 ('A'): 0x");
  CHECK_CONTAINS(msg, "is not in any allocation of this CPU context");
  memcpy(bad, args, sizeof bad);
  bad[2].ptr = dc + 4;
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "argument 2 ('C'): 4012 bytes at 0x");
  CHECK_CONTAINS(msg, "run past the end of their allocation (4012 bytes at 0x");
  tl_free(ctx, db);
  CHECK_STATUS(tl_launch(k, args, 3, NULL), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "argument 1 ('B')");
  db = upload(ctx, b, sizeof b);
  args[1].ptr = db;

  /* empty: nothing runs, null pointers are fine */
  shape[0] = 0;
  tl_arg empty[3] = {tl_arg_tensor(0, TL_F32, 1, shape), tl_arg_tensor(0, TL_F32, 1, shape),
                     tl_arg_tensor(0, TL_F32, 1, shape)};
  CHECK_STATUS(tl_launch(k, empty, 3, NULL), TL_OK, msg);
  tl_context_destroy(ctx);
}

/* A view through the C API: the planner binds ldt from the argument's strides, the interpreter reads
 * through them, and a view that reaches past its allocation is refused before anything runs. */
static void test_strided_view(void)
{
  static const char src[] = "kernel tv[BM = 16, BN = 16](At: f32[M, N] strides(1, ldt), B: f32[M, N])\n"
                            "    grid(ceildiv(N, BN), ceildiv(M, BM)) as (bn, bm) threads(64)\n"
                            "{\n"
                            "    let x = alloc_fragment([BM, BN], f32);\n"
                            "    copy(At[bm * BM, bn * BN], x);\n"
                            "    copy(x, B[bm * BM, bn * BN]);\n"
                            "}\n";
  tl_kernel *k;
  tl_context *ctx = context_with("tv.tl", src, "tv", NULL, 0, &k);
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  enum { M = 21, N = 18, LDT = 24 }; /* At: the [N, LDT] storage's first M columns, transposed */
  float s[N * LDT], b[M * N];
  for (int i = 0; i < N * LDT; i++)
    s[i] = uniform(-1, 1);
  tl_devptr ds = upload(ctx, s, sizeof s), db = 0;
  CHECK_STATUS(tl_malloc(ctx, sizeof b, &db), TL_OK, msg);
  int64_t shape[2] = {M, N}, strides[2] = {1, LDT};
  tl_arg args[2] = {tl_arg_tensor_strided(ds, TL_F32, 2, shape, strides),
                    tl_arg_tensor(db, TL_F32, 2, shape)};
  CHECK_STATUS(tl_launch(k, args, 2, NULL), TL_OK, msg);
  CHECK_STATUS(tl_memcpy_dtoh(ctx, b, db, sizeof b), TL_OK, msg);
  int wrong = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++)
      wrong += b[i * N + j] != s[j * LDT + i];
  CHECK(wrong == 0, "%d of %d elements of the transposed view wrong", wrong, M * N);
  /* the view must lie inside its allocation: rows 25 apart reach past the 432 floats */
  strides[1] = LDT + 1;
  CHECK_STATUS(tl_launch(k, args, 2, NULL), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "launch of 'tv': argument 0 ('At')");
  CHECK_CONTAINS(msg, "run past the end of their allocation");
  strides[1] = 0;
  CHECK_STATUS(tl_launch(k, args, 2, NULL), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "argument 0 ('At'): stride 1 is 0; strides must be positive");
  args[1].value.strides = (const int64_t *)strides; /* B is declared contiguous */
  strides[0] = 1, strides[1] = LDT;
  CHECK_STATUS(tl_launch(k, args, 2, NULL), TL_ERR_BAD_ARGUMENT, msg);
  CHECK_CONTAINS(msg, "argument 1 ('B'): kernel 'tv' takes a contiguous tensor, but stride 0 is 1, not 18");
  tl_context_destroy(ctx);
}

/* A float scalar, and a launch on the context's stream (ignored: launches run to the end). */
static void test_saxpy(void)
{
  tl_kernel *k;
  tl_context *ctx = context_with("saxpy.tl", NULL, "saxpy", &(tilec_define){"BLOCK", "256"}, 1, &k);
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  enum { N = 300 };
  float x[N], y[N], z[N];
  tl_devptr dx, dy, dz, d[3];
  two_in_one_out(ctx, x, y, N, 2, d);
  dx = d[0], dy = d[1], dz = d[2];
  int64_t shape[1] = {N};
  tl_arg args[4] = {tl_arg_tensor(dx, TL_F32, 1, shape), tl_arg_tensor(dy, TL_F32, 1, shape),
                    tl_arg_tensor(dz, TL_F32, 1, shape), tl_arg_f32(-1.5f)};
  CHECK_STATUS(tl_launch(k, args, 4, (void *)0x1234), TL_OK, msg);
  CHECK_STATUS(tl_memcpy_dtoh(ctx, z, dz, sizeof z), TL_OK, msg);
  int wrong = 0;
  for (int i = 0; i < N; i++) /* one f32 multiply, one f32 add: rounded as C rounds them */
    wrong += z[i] != (float)((float)(-1.5f * x[i]) + y[i]);
  CHECK(wrong == 0, "%d of %d elements wrong", wrong, N);
  tl_context_destroy(ctx);
}

static double f16_value(uint16_t bits) { return tl_f16_to_float(bits); }

/* One launch of matmul kernel k at M x N x K, f16 in, f32 accumulation, f16 out, C poisoned (NaN)
 * before: how many elements are off the host's product by more than f16's rounding and f32 sums. */
static int matmul_wrong(tl_context *ctx, tl_kernel *k, int M, int N, int K)
{
  const char *msg = tl_context_message(ctx);
  uint16_t *a = malloc(sizeof *a * M * K), *b = malloc(sizeof *b * K * N), *c = malloc(sizeof *c * M * N);
  for (int i = 0; i < M * K; i++)
    a[i] = tl_f16_from_float(uniform(-1, 1));
  for (int i = 0; i < K * N; i++)
    b[i] = tl_f16_from_float(uniform(-1, 1));
  tl_devptr da = upload(ctx, a, sizeof *a * M * K), db = upload(ctx, b, sizeof *b * K * N), dc = 0;
  CHECK_STATUS(tl_malloc(ctx, sizeof *c * M * N, &dc), TL_OK, msg); /* NaN (0xFFFF) until written */
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tl_arg args[3] = {tl_arg_tensor(da, TL_F16, 2, sa), tl_arg_tensor(db, TL_F16, 2, sb),
                    tl_arg_tensor(dc, TL_F16, 2, sc)};
  CHECK_STATUS(tl_launch(k, args, 3, NULL), TL_OK, msg);
  CHECK_STATUS(tl_memcpy_dtoh(ctx, c, dc, sizeof *c * M * N), TL_OK, msg);
  int wrong = 0;
  double worst = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double want = 0, mag = 0;
      for (int kk = 0; kk < K; kk++) {
        double p = f16_value(a[m * K + kk]) * f16_value(b[kk * N + n]);
        want += p;
        mag += fabs(p);
      }
      /* one rounding to f16 (2^-11 relative) plus f32 sums over K */
      const double got = f16_value(c[m * N + n]), tol = 1e-3 * fabs(want) + 1e-6 * mag + 1e-6;
      const double off = fabs(got - want);
      if (!(off <= tol))
        wrong++;
      if (off > worst || off != off)
        worst = off;
    }
  if (wrong)
    fprintf(stderr, "note: matmul %dx%dx%d: worst element off by %g\n", M, N, K, worst);
  free(a);
  free(b);
  free(c);
  return wrong;
}

/* examples/matmul.tl with small tiles at a ragged shape. */
static void test_matmul(void)
{
  const tilec_define defs[] = {{"BM", "32"}, {"BN", "64"}, {"BK", "32"}, {"STAGES", "2"}, {"THREADS", "128"}};
  tl_kernel *k;
  tl_context *ctx = context_with("matmul.tl", NULL, "matmul", defs, 5, &k);
  if (!ctx)
    return;
  CHECK(tl_kernel_get_info(k)->threads == 128, "threads %u", tl_kernel_get_info(k)->threads);
  enum { M = 37, N = 100, K = 70 };
  int wrong = matmul_wrong(ctx, k, M, N, K);
  CHECK(wrong == 0, "%d of %d elements wrong", wrong, M * N);
  tl_context_destroy(ctx);
}

/* The variants a kernel's launches take (docs/language.md, "How many variants"): the distinct tuples of
 * its launch constants' values, planned on 132 multiprocessors; a launch that cannot be planned fails. */
typedef struct {
  int64_t v[64][16];
  int n, nconsts;
} Variants;

static void count_variant(Variants *vs, const tl_kernel_info *info, const tl_arg *args, int nargs,
                          const char *what, int64_t m, int64_t n)
{
  tl_launch_plan plan;
  char err[512] = "";
  if (tl_plan_launch_sms(info, args, nargs, 132, &plan, err, sizeof err) != TL_OK) {
    CHECK(0, "%s M=%lld N=%lld: %s", what, (long long)m, (long long)n, err);
    return;
  }
  int i = 0;
  while (i < vs->n && memcmp(vs->v[i], plan.consts, sizeof(int64_t) * (size_t)vs->nconsts))
    i++;
  if (i == vs->n && vs->n < 64)
    memcpy(vs->v[vs->n++], plan.consts, sizeof(int64_t) * (size_t)vs->nconsts);
  tl_launch_plan_release(&plan);
}

/* How many variants the stdlib's row kernels have, f16 (docs/language.md, "How many variants"): one per
 * distinct tuple of launch constants over rows N of every power of two from 1 to 2^18 and its
 * neighbours, M = 1 and 2000 (layernorm's RPB follows M <= 1024), on 132 multiprocessors. */
static void test_row_variants(void)
{
  static const struct {
    const char *file, *kernel;
    int ntensors, nscalars, want; /* X [M, N], then the [N] weights, Y [M, N]; eps */
  } ks[] = {{"../stdlib/softmax.tl", "softmax", 2, 0, 11},
            {"../stdlib/norms.tl", "rmsnorm", 3, 1, 12},
            {"../stdlib/norms.tl", "layernorm", 4, 1, 24}};
  for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++) {
    tl_kernel *k;
    tl_context *ctx = context_with(ks[q].file, NULL, ks[q].kernel, NULL, 0, &k);
    if (!ctx)
      continue;
    const tl_kernel_info *info = tl_kernel_get_info(k);
    Variants vs = {.nconsts = info->nconsts < 16 ? info->nconsts : 16};
    for (int p = 0; p <= 18; p++)
      for (int64_t n = ((int64_t)1 << p) - 1; n <= ((int64_t)1 << p) + 1; n++)
        for (int64_t m = 1; m <= 2000 && n > 0; m += 1999) {
          int64_t row[2] = {m, n}, vec[1] = {n};
          tl_arg args[5];
          int na = 0;
          for (int t = 0; t < ks[q].ntensors; t++) /* X first, Y last, the weights between */
            args[na++] = t == 0 || t == ks[q].ntensors - 1 ? tl_arg_tensor(256 * (t + 1), TL_F16, 2, row)
                                                           : tl_arg_tensor(256 * (t + 1), TL_F16, 1, vec);
          if (ks[q].nscalars)
            args[na++] = tl_arg_f32(1e-5f);
          count_variant(&vs, info, args, na, ks[q].kernel, m, n);
        }
    CHECK(vs.n == ks[q].want, "%s (f16) has %d variants over the sampled sizes (docs/language.md says %d)",
          ks[q].kernel, vs.n, ks[q].want);
    tl_context_destroy(ctx);
  }
}

/* examples/matmul.tl at its defaults: the tiles and the form each shape's launch picks (the launch
 * constants as tl_plan_launch evaluates them from the metadata), and launches of the transposed
 * form (few rows) and the plain one through their variants, against the host's product. */
static void test_matmul_variants(void)
{
  tl_kernel *k;
  tl_context *ctx = context_with("matmul.tl", NULL, "matmul", NULL, 0, &k);
  if (!ctx)
    return;
  const tl_kernel_info *info = tl_kernel_get_info(k);
  static const char *const names[] = {"SWAP", "BM", "BN", "BK", "STAGES", "THREADS", "PERSIST"};
  enum { NC = 7 };
  int at[NC];
  for (int c = 0; c < NC; c++) {
    at[c] = -1;
    for (int i = 0; i < info->nconsts; i++)
      if (!strcmp(info->consts[i].name, names[c]))
        at[c] = i;
    CHECK(at[c] >= 0, "matmul has no launch constant %s", names[c]);
    if (at[c] < 0) {
      tl_context_destroy(ctx);
      return;
    }
  }
  static const struct {
    int64_t m, n, k;
    int64_t v[NC];                                      /* SWAP BM BN BK STAGES THREADS PERSIST */
  } cases[] = {
      {16, 4096, 4096, {1, 16, 64, 128, 6, 128, 0}},    /* decoding: the transposed form */
      {16, 14336, 4096, {1, 16, 128, 128, 5, 256, 0}},  /* ... 128 columns of B per block for a wide N */
      {72, 4096, 4096, {1, 80, 64, 128, 5, 128, 0}},    /* 65 .. 96 rows: transposed, rows rounded to 16 */
      {49, 8192, 8192, {0, 64, 64, 128, 6, 128, 0}},    /* 49 .. 64 rows: 64-row tiles */
      {64, 4096, 4096, {0, 64, 32, 128, 8, 128, 0}},    /* 64 x 64 tiles would be 64 blocks: 64 x 32 */
      {97, 4096, 4096, {0, 64, 64, 128, 6, 128, 0}},    /* two rows of 64 x 64 tiles */
      {128, 4096, 4096, {0, 64, 64, 128, 6, 128, 0}},   /* 128 blocks of 64 x 64 */
      {4096, 4096, 4096, {0, 128, 256, 64, 4, 256, 0}}, /* large: 128 x 256, 4 stages */
      {512,
       14336,
       4096,
       {0, 128, 224, 64, 4, 256, 0}}, /* 224 wide: 256 tiles fill 2 waves, 224 of 256 did not */
      {128, 14336, 4096, {0, 64, 224, 64, 4, 128, 0}},
      {1024, 14336, 4096, {0, 128, 256, 64, 4, 256, 0}},  /* 224 wide would be 4 waves: 256 */
      {512, 4096, 4096, {0, 128, 128, 64, 6, 256, 0}},    /* 128 x 128 tiles, 6 stages ... */
      {512, 4096, 3992, {0, 128, 128, 64, 4, 256, 0}},    /* ... 4 when K is no multiple of 64 */
      {16384, 14336, 4096, {0, 128, 256, 64, 4, 256, 0}}, /* many waves: 256 */
      {768, 4096, 4096, {0, 128, 192, 64, 4, 256, 0}},    /* 192 wide: one full wave, not 1.5 of 128 */
      {384, 4096, 4096, {0, 64, 192, 64, 6, 128, 0}},     /* ... and of 64-row tiles, 6 stages ... */
      {384, 4000, 3992, {0, 64, 192, 64, 4, 128, 0}},     /* ... 4 when K is no multiple of 64 */
      {640, 14336, 4096, {0, 128, 192, 64, 4, 256, 0}},   /* 375 tiles of 192 fill 3 waves better */
      {768, 14336, 4096, {0, 128, 256, 64, 4, 256, 0}},   /* 192 wide would be 450 tiles: 256 */
      {0, 4096, 4096, {1, 16, 64, 128, 6, 128, 0}},       /* empty: still a kernel that compiles */
      {4095, 4097, 4096, {0, 128, 128, 64, 3, 256, 0}},   /* rows of B not 16-byte multiples (no TMA): FB */
      {1000, 4096, 4095, {0, 128, 128, 64, 3, 256, 0}},   /* ... nor those of A */
      {4095, 4096, 4096, {0, 128, 256, 64, 4, 256, 0}},   /* M alone does not matter */
      {8192, 8192, 1024, {0, 128, 256, 64, 3, 256, 1}},   /* short K, many tiles: persistent, 3 stages */
      {1000, 8192, 1000, {0, 128, 256, 64, 3, 256, 1}},   /* ... 256 tiles, ragged M and K */
      {8192, 8192, 2112, {0, 128, 256, 64, 4, 256, 0}},   /* K > 2048: one tile per block */
      {1000, 4096, 1024, {0, 128, 256, 64, 4, 256, 0}},   /* 128 tiles, one wave: one tile per block */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t sa[2] = {cases[i].m, cases[i].k}, sb[2] = {cases[i].k, cases[i].n},
            sc[2] = {cases[i].m, cases[i].n};
    tl_arg args[3] = {tl_arg_tensor(256, TL_F16, 2, sa), tl_arg_tensor(512, TL_F16, 2, sb),
                      tl_arg_tensor(1024, TL_F16, 2, sc)};
    tl_launch_plan plan;
    char err[512] = "";
    tl_status st = tl_plan_launch(info, args, 3, &plan, err, sizeof err);
    int same = st == TL_OK;
    for (int c = 0; c < NC && same; c++)
      same = plan.consts[at[c]] == cases[i].v[c];
    CHECK(
        same,
        "M=%lld N=%lld K=%lld: %s %s; SWAP BM BN BK STAGES THREADS PERSIST = %lld %lld %lld %lld %lld %lld %lld",
        (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k, tl_status_name(st), err,
        (long long)plan.consts[at[0]], (long long)plan.consts[at[1]], (long long)plan.consts[at[2]],
        (long long)plan.consts[at[3]], (long long)plan.consts[at[4]], (long long)plan.consts[at[5]],
        (long long)plan.consts[at[6]]);
    if (st == TL_OK)
      tl_launch_plan_release(&plan);
  }
  /* How many variants: one per distinct tuple of the launch constants' values, over M from 0 to 20000
   * (every M to 300, then every 37th) and N from 1 to 65536 (powers of two to 1024, then every 512th)
   * (docs/language.md, launch constants) */
  Variants vs = {.nconsts = info->nconsts < 16 ? info->nconsts : 16};
  for (int64_t m = 0; m <= 20000; m += m < 300 ? 1 : 37)
    for (int64_t n = 1; n <= 65536; n = n < 1024 ? n * 2 : n + 512) {
      int64_t sa[2] = {m, 4096}, sb[2] = {4096, n}, sc[2] = {m, n};
      tl_arg args[3] = {tl_arg_tensor(256, TL_F16, 2, sa), tl_arg_tensor(512, TL_F16, 2, sb),
                        tl_arg_tensor(1024, TL_F16, 2, sc)};
      count_variant(&vs, info, args, 3, "matmul", m, n);
    }
  fprintf(stderr, "note: matmul on sm_90a: %d variants over M <= 20000, N <= 65536\n", vs.n);
  CHECK(vs.n == 28,
        "matmul has %d variants over the sampled M <= 20000, N <= 65536 (docs/language.md says 28)", vs.n);
  static const int shapes[][3] = {{5, 70, 40}, {70, 65, 24}, {50, 33, 48}, {5, 70, 0}, {0, 70, 40}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int wrong = matmul_wrong(ctx, k, shapes[i][0], shapes[i][1], shapes[i][2]);
    CHECK(wrong == 0, "matmul %dx%dx%d at its defaults: %d elements wrong", shapes[i][0], shapes[i][1],
          shapes[i][2], wrong);
  }
  tl_context_destroy(ctx);
}

/* grid(num_sms): the device's 4 multiprocessors, the same count for the planner and the run. */
static void test_num_sms(void)
{
  const char *src = "kernel persistent(C: i32[N]) grid(min(N, num_sms)) as (b) threads(32) {\n"
                    "    C[b] = num_blocks(0) * 10 + b;\n"
                    "}\n";
  tl_kernel *k;
  tl_context *ctx = context_with("persistent.tl", src, "persistent", NULL, 0, &k);
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  int32_t c[8];
  tl_devptr dc = 0;
  CHECK_STATUS(tl_malloc(ctx, sizeof c, &dc), TL_OK, msg);
  CHECK_STATUS(tl_memset_d8(ctx, dc, 0, sizeof c), TL_OK, msg);
  int64_t shape[1] = {8};
  tl_arg args[1] = {tl_arg_tensor(dc, TL_I32, 1, shape)};
  CHECK_STATUS(tl_launch(k, args, 1, NULL), TL_OK, msg);
  CHECK_STATUS(tl_memcpy_dtoh(ctx, c, dc, sizeof c), TL_OK, msg);
  CHECK(c[0] == 40 && c[3] == 43 && c[4] == 0 && c[7] == 0, "C = %d %d %d %d ...", c[0], c[1], c[2], c[3]);
  tl_context_destroy(ctx);
}

static const char twice_src[] =
    "kernel twice[BN = min(next_pow2(N), 4096), THREADS = clamp(BN / 8, 32, 256)]\n"
    "    (X: f32[N], Y: f32[N], C: i32[2]) grid(ceildiv(N, BN)) as (b) threads(THREADS)\n"
    "{\n"
    "    let x = alloc_fragment([BN], f32);\n"
    "    copy(X[b * BN], x);\n"
    "    for i in parallel(BN) {\n"
    "        x[i] = x[i] * 2.0;\n"
    "    }\n"
    "    copy(x, Y[b * BN]);\n"
    "    if b == 0 {\n"
    "        C[0] = BN;\n"
    "        C[1] = THREADS;\n"
    "    }\n"
    "}\n"
    "kernel bad[T = select(N == 1000, 0, 32)](X: f32[N]) grid(1) threads(T) {\n"
    "    X[0] = 1.0;\n"
    "}\n";

/* Launches `twice` of module m at n elements and reads back which constants ran (C). */
static bool run_twice(tl_context *ctx, tl_kernel *k, int n, int32_t got[2])
{
  tl_devptr dx = 0, dy = 0, dc = 0;
  bool ok = tl_malloc(ctx, sizeof(float) * (size_t)n, &dx) == TL_OK &&
            tl_malloc(ctx, sizeof(float) * (size_t)n, &dy) == TL_OK && tl_malloc(ctx, 8, &dc) == TL_OK &&
            tl_memset_d8(ctx, dx, 0, sizeof(float) * (size_t)n) == TL_OK;
  int64_t shape[1] = {n}, two[1] = {2};
  tl_arg args[3] = {tl_arg_tensor(dx, TL_F32, 1, shape), tl_arg_tensor(dy, TL_F32, 1, shape),
                    tl_arg_tensor(dc, TL_I32, 1, two)};
  ok = ok && tl_launch(k, args, 3, NULL) == TL_OK && tl_memcpy_dtoh(ctx, got, dc, 8) == TL_OK;
  tl_free(ctx, dx);
  tl_free(ctx, dy);
  tl_free(ctx, dc);
  return ok;
}

/* Tuning results (tl_jit_tune_store, what `tilec tune --save` writes): stored, looked up by bucket,
 * used by the launches of a later module whose sizes fall in the bucket (the tuned THREADS beside
 * the launch constant BN), ignored outside it and when the file is damaged; bad arguments refused. */
static void test_tuning(void)
{
  tl_context *ctx = cpu_context();
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  tl_jit_cache *cache = tl_context_jit_cache(ctx);
  tl_jit_options o = memory_cache_only();
  o.arch = "sm_90a"; /* the CPU device's, as tl_module_compile resolves it */
  o.kernel = "twice";
  const tilec_define at1000[] = {{"N", "1000"}}, at700[] = {{"N", "700"}}, at3000[] = {{"N", "3000"}};
  const tilec_define best[] = {{"THREADS", "64"}};
  char err[512] = "", found[256];
  CHECK_STATUS(
      tl_jit_tune_store(cache, twice_src, strlen(twice_src), &o, at1000, 1, best, 1, err, sizeof err), TL_OK,
      err);
  tl_status st = tl_jit_tune_lookup(cache, twice_src, strlen(twice_src), &o, at700, 1, found, sizeof found,
                                    err, sizeof err);
  CHECK(st == TL_OK && !strcmp(found, "THREADS=64"), "lookup in the bucket N=1024: %s '%s' (%s)",
        tl_status_name(st), found, err);
  st = tl_jit_tune_lookup(cache, twice_src, strlen(twice_src), &o, at3000, 1, found, sizeof found, err,
                          sizeof err);
  CHECK_STATUS(st, TL_ERR_NOT_FOUND, err);
  CHECK_CONTAINS(err, "no tuning result for N=4096 of kernel 'twice'");

  /* a later module: the launches in the bucket run the tuned variant */
  tl_jit_options mo = memory_cache_only();
  tl_module *m = NULL;
  tl_kernel *k = NULL;
  CHECK_STATUS(tl_module_compile(ctx, twice_src, strlen(twice_src), &mo, &m), TL_OK, msg);
  if (m && tl_module_get_kernel(m, "twice", &k) == TL_OK) {
    static const struct {
      int n, bn, threads;
    } cases[] = {{1000, 1024, 64}, {600, 1024, 64}, {3000, 4096, 256}, {5000, 4096, 256}, {513, 1024, 64}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int32_t got[2] = {0, 0};
      bool ran = run_twice(ctx, k, cases[c].n, got);
      CHECK(ran && got[0] == cases[c].bn && got[1] == cases[c].threads,
            "N=%d ran BN=%d THREADS=%d, expected %d %d (%s)", cases[c].n, got[0], got[1], cases[c].bn,
            cases[c].threads, msg);
    }
  }
  tl_module_unload(m);

  /* a damaged file reads as no results */
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tune", tl_jit_cache_dir(cache));
  DIR *d = opendir(dir);
  int damaged = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".tltune")) {
      char path[2048];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      FILE *f = fopen(path, "w");
      if (f) {
        fputs("tilec-tune v1\nN=1024 THREADS\n", f);
        fclose(f);
        damaged++;
      }
    }
  if (d)
    closedir(d);
  CHECK(damaged == 1, "%d tuning files in %s", damaged, dir);
  CHECK_STATUS(tl_module_compile(ctx, twice_src, strlen(twice_src), &mo, &m), TL_OK, msg);
  if (m && tl_module_get_kernel(m, "twice", &k) == TL_OK) {
    int32_t got[2] = {0, 0};
    CHECK(run_twice(ctx, k, 1000, got) && got[0] == 1024 && got[1] == 128, "damaged: ran BN=%d THREADS=%d",
          got[0], got[1]);
  }
  tl_module_unload(m);

  /* bad arguments */
  tl_jit_options no_arch = o;
  no_arch.arch = NULL;
  const tilec_define bad_size[] = {{"N", "12x"}}, spaced[] = {{"THREADS", "6 4"}};
  CHECK_STATUS(
      tl_jit_tune_store(cache, twice_src, strlen(twice_src), &no_arch, at1000, 1, best, 1, err, sizeof err),
      TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(
      tl_jit_tune_store(cache, twice_src, strlen(twice_src), &o, bad_size, 1, best, 1, err, sizeof err),
      TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(
      tl_jit_tune_store(cache, twice_src, strlen(twice_src), &o, at1000, 1, spaced, 1, err, sizeof err),
      TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(
      tl_jit_tune_store(cache, twice_src, strlen(twice_src), &o, at1000, 1, best, 0, err, sizeof err),
      TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(tl_jit_tune_store(NULL, twice_src, strlen(twice_src), &o, at1000, 1, best, 1, err, sizeof err),
               TL_ERR_BAD_ARGUMENT, err);
  tl_context_destroy(ctx);
}

/* Launch constants: one tl_launch call per shape, each compiled on first use for its constants'
 * values (the kernel writes them into C, so the test sees which variant ran), then served from
 * the kernel's variants; shapes whose values are the compiled ones run the module's own code;
 * a variant that does not compile is the launch's TL_ERR_COMPILE. */
static void test_launch_consts(void)
{
  const char *src = twice_src;
  tl_kernel *k = NULL, *bad = NULL;
  tl_context *ctx = cpu_context();
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  tl_jit_options o = memory_cache_only();
  tl_module *m = NULL;
  CHECK_STATUS(tl_module_compile(ctx, src, strlen(src), &o, &m), TL_OK, msg);
  if (!m || tl_module_get_kernel(m, "twice", &k) != TL_OK || tl_module_get_kernel(m, "bad", &bad) != TL_OK) {
    CHECK(0, "no module or kernels: %s", msg);
    tl_context_destroy(ctx);
    return;
  }
  const tl_kernel_info *info = tl_kernel_get_info(k);
  CHECK(info->nconsts == 2 && info->consts[0].value == 4096 && info->consts[1].value == 256 &&
            info->threads == 256,
        "compiled for large sizes: %d consts, threads %u", info->nconsts, info->threads);
  tl_jit_stats before, after;
  tl_jit_cache_stats(tl_context_jit_cache(ctx), &before);
  static const struct {
    int n, bn, threads, compiles; /* compiles: new compilations this launch needs */
  } cases[] = {
      {1000, 1024, 128, 1}, {1000, 1024, 128, 0}, {3, 4, 32, 1},        {10000, 4096, 256, 0},
      {4096, 4096, 256, 0}, {1024, 1024, 128, 0}, {2049, 4096, 256, 0}, {5, 8, 32, 1},
  };
  enum { MAXN = 10000 + 16 }; /* room for a poisoned element past the largest N */
  float *x = malloc(sizeof(float) * MAXN), *y = malloc(sizeof(float) * MAXN);
  for (int i = 0; i < MAXN; i++)
    x[i] = (float)(i % 97) - 40.0f;
  tl_devptr dx = upload(ctx, x, sizeof(float) * MAXN), dy = 0, dc = 0;
  CHECK_STATUS(tl_malloc(ctx, sizeof(float) * MAXN, &dy), TL_OK, msg);
  CHECK_STATUS(tl_malloc(ctx, 2 * sizeof(int32_t), &dc), TL_OK, msg);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int n = cases[c].n;
    tl_jit_cache_stats(tl_context_jit_cache(ctx), &before);
    CHECK_STATUS(tl_memset_d8(ctx, dy, 0xFF, sizeof(float) * MAXN), TL_OK, msg);
    int64_t shape[1] = {n}, two[1] = {2};
    tl_arg args[3] = {tl_arg_tensor(dx, TL_F32, 1, shape), tl_arg_tensor(dy, TL_F32, 1, shape),
                      tl_arg_tensor(dc, TL_I32, 1, two)};
    CHECK_STATUS(tl_launch(k, args, 3, NULL), TL_OK, msg);
    tl_jit_cache_stats(tl_context_jit_cache(ctx), &after);
    int32_t got[2] = {0, 0};
    CHECK_STATUS(tl_memcpy_dtoh(ctx, got, dc, sizeof got), TL_OK, msg);
    CHECK_STATUS(tl_memcpy_dtoh(ctx, y, dy, sizeof(float) * MAXN), TL_OK, msg);
    int wrong = 0;
    for (int i = 0; i < n; i++)
      wrong += y[i] != 2 * x[i];
    uint32_t poison;
    memcpy(&poison, &y[n], sizeof poison);
    CHECK(got[0] == cases[c].bn && got[1] == cases[c].threads && wrong == 0 && poison == 0xFFFFFFFFu &&
              after.compiles - before.compiles == (uint64_t)cases[c].compiles,
          "N=%d: ran BN=%d THREADS=%d (expected %d, %d), %d wrong, %llu compilations (expected %d)", n,
          got[0], got[1], cases[c].bn, cases[c].threads, wrong,
          (unsigned long long)(after.compiles - before.compiles), cases[c].compiles);
  }
  free(x);
  free(y);

  /* 0 threads at N = 1000: that variant does not compile, and the launch says why */
  {
    int64_t shape[1] = {1000};
    tl_devptr dz = 0;
    CHECK_STATUS(tl_malloc(ctx, sizeof(float) * 1000, &dz), TL_OK, msg);
    tl_arg arg = tl_arg_tensor(dz, TL_F32, 1, shape);
    tl_status st = tl_launch(bad, &arg, 1, NULL);
    CHECK_STATUS(st, TL_ERR_COMPILE, msg);
    CHECK_CONTAINS(msg, "the thread count must be between 1 and 1024, got 0");
    /* again: the same failure at once, not a second compilation */
    tl_jit_stats s0, s1;
    tl_jit_cache_stats(tl_context_jit_cache(ctx), &s0);
    st = tl_launch(bad, &arg, 1, NULL);
    tl_jit_cache_stats(tl_context_jit_cache(ctx), &s1);
    CHECK_STATUS(st, TL_ERR_COMPILE, msg);
    CHECK_CONTAINS(msg, "the thread count must be between 1 and 1024, got 0");
    CHECK(s1.compiles == s0.compiles && s1.memory_hits == s0.memory_hits,
          "the failed variant was compiled again (%llu compilations, %llu hits)",
          (unsigned long long)(s1.compiles - s0.compiles),
          (unsigned long long)(s1.memory_hits - s0.memory_hits));
    shape[0] = 50; /* 32 threads: compiles, and runs */
    CHECK_STATUS(tl_launch(bad, &arg, 1, NULL), TL_OK, msg);
  }
  tl_context_destroy(ctx);
}

/* A kernel that stores past the end of its tensor: TL_ERR_KERNEL_FAILED, with the interpreter's
 * message (file, line, the tensor, the block), and the context still usable. */
static void test_kernel_error(void)
{
  const char *src = "// stores 16 elements whatever N is\n"
                    "kernel oob(A: f32[N]) grid(1) threads(32) {\n"
                    "    let two = 2.0;\n"
                    "    for i in serial(16) {\n"
                    "        A[i] = two;\n"
                    "    }\n"
                    "}\n";
  tl_kernel *k;
  tl_context *ctx = context_with("oob.tl", src, "oob", NULL, 0, &k);
  if (!ctx)
    return;
  const char *msg = tl_context_message(ctx);
  tl_devptr da = 0;
  CHECK_STATUS(tl_malloc(ctx, 20 * sizeof(float), &da), TL_OK, msg);
  int64_t shape[1] = {16};
  tl_arg args[1] = {tl_arg_tensor(da, TL_F32, 1, shape)};
  CHECK_STATUS(tl_launch(k, args, 1, NULL), TL_OK, msg); /* N = 16: every store inside A */
  shape[0] = 10; /* A is the first 10 elements of the allocation: the interpreter must stop at 10 */
  CHECK_STATUS(tl_memset_d8(ctx, da, 0, 20 * sizeof(float)), TL_OK, msg);
  CHECK_STATUS(tl_launch(k, args, 1, NULL), TL_ERR_KERNEL_FAILED, msg);
  CHECK(!strncmp(msg, "oob.tl:5:", 9), "message does not start with the line: %s", msg);
  CHECK_CONTAINS(
      msg, "index [10] is out of bounds of global 'A': dimension 0 has size 10 (kernel 'oob', block 0, 0, 0");
  float a[20];
  CHECK_STATUS(tl_memcpy_dtoh(ctx, a, da, sizeof a), TL_OK, msg);
  CHECK(a[0] == 2 && a[9] == 2 && a[10] == 0 && a[19] == 0, "A = %g .. %g, then %g .. %g", a[0], a[9], a[10],
        a[19]);
  CHECK_STATUS(tl_launch(k, args, 1, NULL), TL_ERR_KERNEL_FAILED, msg);
  CHECK_CONTAINS(msg, "A[i] = two;"); /* the source line, rendered */
  printf("note: a kernel's error on the CPU device reads:\n%s\n", msg);
  CHECK(!strcmp(tl_status_name(TL_ERR_KERNEL_FAILED), "TL_ERR_KERNEL_FAILED") &&
            !strcmp(tl_status_name(TL_ERR_UNSUPPORTED), "TL_ERR_UNSUPPORTED"),
        "status names");
  shape[0] = 16;
  CHECK_STATUS(tl_launch(k, args, 1, NULL), TL_OK, msg);
  CHECK(*msg == 0, "message after a success: %s", msg);
  tl_context_destroy(ctx);
}

/* The disk cache keeps the PTX (its metadata) for the CPU device too: a second context loads from
 * it without compiling, and runs. */
static void test_disk_cache(void)
{
  const char *src = "kernel twice(A: i32[N]) grid(1) threads(32) { A[0] = A[0] * 2; }\n";
  for (int round = 0; round < 2; round++) {
    tl_context *ctx = cpu_context();
    if (!ctx)
      return;
    const char *msg = tl_context_message(ctx);
    tl_module *m = NULL;
    tl_kernel *k = NULL;
    CHECK_STATUS(tl_module_compile(ctx, src, strlen(src), NULL, &m), TL_OK, msg);
    tl_jit_stats stats;
    tl_jit_cache_stats(tl_context_jit_cache(ctx), &stats);
    CHECK(stats.compiles == (round == 0) && stats.disk_hits == (round == 1) &&
              stats.disk_writes == (round == 0),
          "round %d: %llu compiles, %llu disk hits", round, (unsigned long long)stats.compiles,
          (unsigned long long)stats.disk_hits);
    int32_t v = 21;
    tl_devptr p = upload(ctx, &v, sizeof v);
    int64_t shape[1] = {1};
    tl_arg args[1] = {tl_arg_tensor(p, TL_I32, 1, shape)};
    if (m && tl_module_get_kernel(m, "twice", &k) == TL_OK)
      CHECK_STATUS(tl_launch(k, args, 1, NULL), TL_OK, msg);
    CHECK(tl_memcpy_dtoh(ctx, &v, p, sizeof v) == TL_OK && v == 42, "v = %d", v);
    tl_context_destroy(ctx);
  }
}

static void remove_folder(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && unlink(path) != 0)
      remove_folder(path); /* tune/ */
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

int main(void)
{
  setenv("TILEC_CUDA_LIBRARY", NO_DRIVER, 1);
  unsetenv("TILEC_INTERP_LEVEL");
  unsetenv("TILEC_CACHE_DISABLE");
  char cache_dir[512]; /* never the user's cache */
  snprintf(cache_dir, sizeof cache_dir, "%s/tilec-test-cpu-device-XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(cache_dir)) {
    printf("FAIL cannot make a temporary folder\n");
    return 1;
  }
  setenv("TILEC_CACHE_DIR", cache_dir, 1);
  test_contexts();
  test_memory();
  test_modules();
  for (int level = 0; level < 2; level++) { /* the launches at both levels of the interpreter */
    if (level)
      setenv("TILEC_INTERP_LEVEL", "thread", 1);
    test_vector_add();
    test_saxpy();
    test_matmul();
    test_matmul_variants();
    test_row_variants();
    test_num_sms();
    test_kernel_error();
    test_launch_consts();
    test_strided_view();
    unsetenv("TILEC_INTERP_LEVEL");
  }
  test_disk_cache();
  test_tuning();
  remove_folder(cache_dir);
  printf("test_cpu_device: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
