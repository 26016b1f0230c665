/* test_interp: the tile-level interpreter (interp/tile.c) against plain C references.
 *
 * Each kernel is compiled from its .tl file (front end + specialize, interp_compile), run on random
 * inputs at small ragged shapes with its outputs poisoned (NaN) and followed by guard elements, and
 * compared with a reference computed here in double, within the storage type's tolerance. Then the
 * checks: a planted out-of-bounds tile index, a read of a tile element never written, an integer
 * division by zero and a missing argument are each reported with the right line and block.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "tilec_runtime.h"
#include "../support/check.h"
#include "../support/read_file.h"

enum { GUARD = 16 };
static const uint16_t GUARD_BITS = 0x7bad; /* a finite f16/bf16 pattern no kernel writes by chance */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double uniform(double lo, double hi) /* xorshift64*: the same inputs on every run */
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return lo + (hi - lo) * (double)((rng * 0x2545f4914f6cdd1du) >> 11) / 9007199254740992.0;
}

/* The level every run uses: the tile level, or the thread level of a target's lowering (main runs
 * the kernels of this file at each). */
static const char *const levels[] = {"tile", "thread sm_80", "thread sm_90a"};
static int level;
static bool last_wgmma; /* the last kernel run had a wgmma statement */
/* Applied to the thread-level IR between compiling and running (a planted lowering bug), if set. */
static void (*plant)(Kernel *k);
static int64_t max_steps; /* InterpOptions.max_steps of every run */

static bool has_wgmma(const Stmt *s)
{
  if (!s)
    return false;
  if (s->kind == ST_WGMMA)
    return true;
  for (int i = 0; i < s->nbody; i++)
    if (has_wgmma(s->body[i]))
      return true;
  return has_wgmma(s->then_s) || has_wgmma(s->else_s);
}

/* Compiles source (file name for messages) with defines and runs kernel on args at `level`. True when
 * it ran; the rendered diagnostics in msg either way. */
static bool run_source(const char *name, const char *src, size_t len, const ConstDef *defs, int ndefs,
                       const char *kernel, const InterpArg *args, int nargs, char *msg, size_t cap)
{
  Arena *a = arena_new();
  Diags d = {.arena = a, .filename = name};
  bool ok = false;
  const Target *target = target_find(level == 1 ? "sm_80" : "sm_90a");
  Module *m = level ? interp_compile_thread(a, &d, src, len, defs, ndefs, kernel, target)
                    : interp_compile(a, &d, src, len, defs, ndefs, kernel);
  Kernel *k = m ? interp_find_kernel(m, kernel) : NULL;
  if (k && k->nlconsts) { /* launch constants: the variant the GPU would run at these sizes */
    int nsizes = 0;
    ConstDef *sizes = interp_launch_sizes(a, k, args, nargs, &nsizes);
    m = interp_compile_at(a, &d, src, len, defs, ndefs, sizes, nsizes, kernel, target, level != 0);
    k = m ? interp_find_kernel(m, kernel) : NULL;
  }
  InterpOptions opt = {.num_sms = 4, .max_steps = max_steps};
  last_wgmma = k && has_wgmma(k->body);
  if (k && level && plant)
    plant(k);
  if (k)
    ok = level ? interp_thread_run(k, args, nargs, &opt, &d) : interp_tile_run(k, args, nargs, &opt, &d);
  else if (m)
    snprintf(msg, cap, "no kernel %s", kernel);
  StrBuf sb = {0};
  diag_render(&d, &sb);
  if (m || sb.data)
    snprintf(msg, cap, "%s", sb.data ? sb.data : "");
  free(sb.data);
  arena_free(a);
  return ok;
}

static bool run_file(const char *path, const ConstDef *defs, int ndefs, const char *kernel,
                     const InterpArg *args, int nargs)
{
  size_t len = 0;
  char *src = test_read_file(path, &len);
  char msg[4096] = "";
  CHECK(src != NULL, "cannot read %s", path);
  if (!src)
    return false;
  bool ok = run_source(path, src, len, defs, ndefs, kernel, args, nargs, msg, sizeof msg);
  CHECK(ok, "%s (%s level): %s", path, levels[level], msg);
  free(src);
  return ok;
}

/* f32 arrays of n elements plus guards. */
static float *f32_array(int64_t n, bool poison)
{
  float *p = malloc(sizeof *p * (size_t)(n + GUARD));
  for (int64_t i = 0; i < n + GUARD; i++)
    p[i] = i >= n ? -1234.5f : poison ? NAN : (float)uniform(-2, 2);
  return p;
}

static uint16_t to16(bool bf, double x) { return bf ? tl_bf16_from_double(x) : tl_f16_from_double(x); }
static double from16(bool bf, uint16_t h) { return bf ? tl_bf16_to_float(h) : tl_f16_to_float(h); }

/* 16-bit arrays; poisoned outputs are NaN. */
static uint16_t *h_array(bool bf, int64_t n, bool poison, double lo, double hi)
{
  uint16_t *p = malloc(sizeof *p * (size_t)(n + GUARD));
  for (int64_t i = 0; i < n + GUARD; i++)
    p[i] = i >= n ? GUARD_BITS : poison ? (bf ? 0x7fc0 : 0x7e00) : to16(bf, uniform(lo, hi));
  return p;
}

static void check_guards_f32(const char *what, const float *p, int64_t n)
{
  for (int i = 0; i < GUARD; i++)
    CHECK(p[n + i] == -1234.5f, "%s: guard element %d past the end was written", what, i);
}

static void check_guards_16(const char *what, const uint16_t *p, int64_t n)
{
  for (int i = 0; i < GUARD; i++)
    CHECK(p[n + i] == GUARD_BITS, "%s: guard element %d past the end was written", what, i);
}

/* |got - want| <= rel * |want| + abs, counting and reporting the first few misses. */
static int misses;
static void close_to(const char *what, int64_t i, double got, double want, double rel, double abs_tol)
{
  bool ok = fabs(got - want) <= rel * fabs(want) + abs_tol; /* false for NaN */
  if (ok || misses++ < 5) {
    CHECK(ok, "%s: element %lld is %.9g, expected %.9g", what, (long long)i, got, want);
  } else { /* counted, not printed */
    checks++;
    failures++;
  }
}

/* ---------------------------------------------------------------- examples */

static void test_vector_add(int64_t n)
{
  float *A = f32_array(n, false), *B = f32_array(n, false), *C = f32_array(n, true);
  InterpArg args[] = {
      {.name = "A", .data = A}, {.name = "B", .data = B}, {.name = "C", .data = C}, {.name = "N", .i = n}};
  if (run_file(TILEC_SOURCE_DIR "/examples/vector_add.tl", NULL, 0, "vector_add", args, 4)) {
    misses = 0;
    for (int64_t i = 0; i < n; i++)
      close_to("vector_add", i, C[i], (float)(A[i] + B[i]), 0, 0);
    check_guards_f32("vector_add C", C, n);
  }
  free(A);
  free(B);
  free(C);
}

static void test_saxpy(int64_t n)
{
  float *X = f32_array(n, false), *Y = f32_array(n, false), *Z = f32_array(n, true);
  float a = 1.75f;
  ConstDef defs[] = {{"BLOCK", "512"}, {"THREADS", "128"}};
  InterpArg args[] = {{.name = "X", .data = X},
                      {.name = "Y", .data = Y},
                      {.name = "Z", .data = Z},
                      {.name = "N", .i = n},
                      {.name = "a", .f = a}};
  if (run_file(TILEC_SOURCE_DIR "/examples/saxpy.tl", defs, 2, "saxpy", args, 5)) {
    misses = 0;
    for (int64_t i = 0; i < n; i++)
      close_to("saxpy", i, Z[i], (double)a * X[i] + Y[i], 1e-6, 1e-6);
    check_guards_f32("saxpy Z", Z, n);
  }
  free(X);
  free(Y);
  free(Z);
}

/* Y = act(X) by an elementwise kernel of path, on n elements of T (f16, bf16 or f32), against act in
 * double within rel. */
static void test_activation(const char *path, const char *kernel, const char *T, int64_t n,
                            double (*act)(double), double rel)
{
  bool is32 = !strcmp(T, "f32"), bf = !strcmp(T, "bf16");
  void *X = is32 ? (void *)f32_array(n, false) : h_array(bf, n, false, -4, 4);
  void *Y = is32 ? (void *)f32_array(n, true) : h_array(bf, n, true, 0, 0);
  ConstDef defs[] = {{"BLOCK", "1024"}};
  InterpArg args[] = {{.name = "X", .data = X}, {.name = "Y", .data = Y}, {.name = "N", .i = n}};
  if (run_file(path, defs, 1, kernel, args, 3)) {
    misses = 0;
    for (int64_t i = 0; i < n; i++) {
      double x = is32 ? ((float *)X)[i] : from16(bf, ((uint16_t *)X)[i]);
      double y = is32 ? ((float *)Y)[i] : from16(bf, ((uint16_t *)Y)[i]);
      close_to(kernel, i, y, act(x), rel, 1e-6);
    }
    if (is32)
      check_guards_f32(kernel, Y, n);
    else
      check_guards_16(kernel, Y, n);
  }
  free(X);
  free(Y);
}

static double gelu_tanh(double v) { return 0.5 * v * (1 + tanh(0.7978845608 * (v + 0.044715 * v * v * v))); }
static double gelu_erf(double v) { return 0.5 * v * (1 + erf(v * 0.70710678118654752)); }
static double silu(double v) { return v / (1 + exp(-v)); }
static double relu(double v) { return v > 0 ? v : 0; }

/* stdlib/softmax.tl in f16, bf16 or f32 storage; bn decides the path (rows of at most bn elements in
 * one piece, through the pipelined loop or, direct = "1", straight into registers; longer ones
 * streamed through tiles of bn). */
static void test_softmax(const char *T, int64_t M, int64_t N, const char *bn, const char *direct)
{
  bool is32 = !strcmp(T, "f32"), bf = !strcmp(T, "bf16");
  ConstDef defs[] = {{"T", T}, {"BN", bn}, {"THREADS", "128"}, {"DIRECT", direct}};
  void *X, *Y;
  if (is32) {
    X = f32_array(M * N, false);
    Y = f32_array(M * N, true);
  } else {
    X = h_array(bf, M * N, false, -4, 4);
    Y = h_array(bf, M * N, true, 0, 0);
  }
  InterpArg args[] = {
      {.name = "X", .data = X}, {.name = "Y", .data = Y}, {.name = "M", .i = M}, {.name = "N", .i = N}};
  char what[64];
  snprintf(what, sizeof what, "softmax %s %lldx%lld BN=%s DIRECT=%s", T, (long long)M, (long long)N, bn,
           direct);
  if (run_file(TILEC_SOURCE_DIR "/stdlib/softmax.tl", defs, 4, "softmax", args, 4)) {
    /* f32 math, exp(x - max) stored in T before the sum: two roundings of T */
    double rel = is32 ? 1e-5 : bf ? 2e-2 : 3e-3;
    misses = 0;
    for (int64_t r = 0; r < M; r++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < N; j++) {
        double x = is32 ? ((float *)X)[r * N + j] : from16(bf, ((uint16_t *)X)[r * N + j]);
        mx = fmax(mx, x);
      }
      for (int64_t j = 0; j < N; j++)
        sum += exp((is32 ? ((float *)X)[r * N + j] : from16(bf, ((uint16_t *)X)[r * N + j])) - mx);
      for (int64_t j = 0; j < N; j++) {
        double x = is32 ? ((float *)X)[r * N + j] : from16(bf, ((uint16_t *)X)[r * N + j]);
        double y = is32 ? ((float *)Y)[r * N + j] : from16(bf, ((uint16_t *)Y)[r * N + j]);
        close_to(what, r * N + j, y, exp(x - mx) / sum, rel, 1e-7);
      }
    }
    if (is32)
      check_guards_f32(what, Y, M * N);
    else
      check_guards_16(what, Y, M * N);
  }
  free(X);
  free(Y);
}

/* stdlib/norms.tl's rmsnorm in f16: rows in one piece (bn >= N) or streamed through tiles of bn. */
static void test_rmsnorm(int64_t M, int64_t N, const char *bn)
{
  ConstDef defs[] = {{"BN", bn}, {"THREADS", "128"}};
  uint16_t *X = h_array(false, M * N, false, -3, 3), *W = h_array(false, N, false, 0.5, 1.5);
  uint16_t *Y = h_array(false, M * N, true, 0, 0);
  float eps = 1e-5f;
  InterpArg args[] = {{.name = "X", .data = X}, {.name = "W", .data = W}, {.name = "Y", .data = Y},
                      {.name = "M", .i = M},    {.name = "N", .i = N},    {.name = "eps", .f = eps}};
  char what[64];
  snprintf(what, sizeof what, "rmsnorm f16 %lldx%lld BN=%s", (long long)M, (long long)N, bn);
  if (run_file(TILEC_SOURCE_DIR "/stdlib/norms.tl", defs, 2, "rmsnorm", args, 6)) {
    misses = 0;
    for (int64_t r = 0; r < M; r++) {
      double ss = 0;
      for (int64_t j = 0; j < N; j++)
        ss += from16(false, X[r * N + j]) * from16(false, X[r * N + j]);
      double scale = 1 / sqrt(ss / (double)N + eps);
      for (int64_t j = 0; j < N; j++)
        close_to(what, r * N + j, from16(false, Y[r * N + j]),
                 from16(false, X[r * N + j]) * scale * from16(false, W[j]), 2e-3, 1e-6);
    }
    check_guards_16(what, Y, M * N);
  }
  free(X);
  free(W);
  free(Y);
}

/* stdlib/norms.tl's layernorm in f16, through the same two paths as rmsnorm (the first through the
 * pipelined loop or, direct = "1", straight into registers), X uniform in [lo, hi]. */
static void test_layernorm(int64_t M, int64_t N, const char *bn, const char *direct, double lo, double hi)
{
  ConstDef defs[] = {{"BN", bn}, {"THREADS", "128"}, {"RPB", "3"}, {"DIRECT", direct}};
  uint16_t *X = h_array(false, M * N, false, lo, hi), *W = h_array(false, N, false, 0.5, 1.5);
  uint16_t *B = h_array(false, N, false, -1, 1), *Y = h_array(false, M * N, true, 0, 0);
  float eps = 1e-5f;
  InterpArg args[] = {{.name = "X", .data = X}, {.name = "W", .data = W}, {.name = "B", .data = B},
                      {.name = "Y", .data = Y}, {.name = "M", .i = M},    {.name = "N", .i = N},
                      {.name = "eps", .f = eps}};
  char what[64];
  snprintf(what, sizeof what, "layernorm f16 %lldx%lld BN=%s DIRECT=%s", (long long)M, (long long)N, bn,
           direct);
  if (run_file(TILEC_SOURCE_DIR "/stdlib/norms.tl", defs, 4, "layernorm", args, 7)) {
    misses = 0;
    for (int64_t r = 0; r < M; r++) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < N; j++)
        mu += from16(false, X[r * N + j]) / (double)N;
      for (int64_t j = 0; j < N; j++)
        var += (from16(false, X[r * N + j]) - mu) * (from16(false, X[r * N + j]) - mu) / (double)N;
      for (int64_t j = 0; j < N; j++) {
        double want = (from16(false, X[r * N + j]) - mu) / sqrt(var + eps) * from16(false, W[j]) +
                      from16(false, B[j]);
        close_to(what, r * N + j, from16(false, Y[r * N + j]), want, 2e-3, 2e-3);
      }
    }
    check_guards_16(what, Y, M * N);
  }
  free(X);
  free(W);
  free(B);
  free(Y);
}

/* sum over k of A[m, k] * op(B)[k, n] for 16-bit A [M, K] (or [K, M] if ta) and B [K, N] (or [N, K]
 * if tb), in double; |products| summed into *mag. */
static double dot16(bool bf, const uint16_t *A, const uint16_t *B, int64_t m, int64_t n, int64_t M, int64_t N,
                    int64_t K, bool ta, bool tb, double *mag)
{
  double sum = 0;
  *mag = 0;
  for (int64_t k = 0; k < K; k++) {
    double p = from16(bf, A[ta ? k * M + m : m * K + k]) * from16(bf, B[tb ? n * K + k : k * N + n]);
    sum += p;
    *mag += fabs(p);
  }
  return sum;
}

/* stdlib/gemm.tl's gemm_bias_act with ACT = 2 (tanh GELU): C = gelu(A @ B^T + bias). */
static void test_gemm_bias_gelu(int64_t M, int64_t N, int64_t K)
{
  ConstDef defs[] = {{"ACT", "2"}, {"BM", "32"},    {"BN", "64"},
                     {"BK", "32"}, {"STAGES", "2"}, {"THREADS", "128"}};
  uint16_t *A = h_array(false, M * K, false, -1, 1), *B = h_array(false, N * K, false, -1, 1);
  uint16_t *bias = h_array(false, N, false, -1, 1), *C = h_array(false, M * N, true, 0, 0);
  InterpArg args[] = {{.name = "A", .data = A}, {.name = "B", .data = B}, {.name = "bias", .data = bias},
                      {.name = "C", .data = C}, {.name = "M", .i = M},    {.name = "N", .i = N},
                      {.name = "K", .i = K}};
  if (run_file(TILEC_SOURCE_DIR "/stdlib/gemm.tl", defs, 6, "gemm_bias_act", args, 7)) {
    misses = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double mag, v = dot16(false, A, B, m, n, M, N, K, false, true, &mag) + from16(false, bias[n]);
        close_to("gemm_bias_act", m * N + n, from16(false, C[m * N + n]), gelu_tanh(v), 1e-3,
                 1e-6 * mag + 1e-4);
      }
    check_guards_16("gemm_bias_act", C, M * N);
  }
  free(A);
  free(B);
  free(bias);
  free(C);
}

/* stdlib/gemm.tl's gemm_softmax: C = softmax over rows of scale * A @ B^T; N up to 64 is one tile of
 * columns, wider rows take its second pass. */
static void test_gemm_softmax(int64_t M, int64_t N, int64_t K)
{
  ConstDef defs[] = {{"BM", "32"},    {"BN", "64"},       {"BK", "32"},
                     {"STAGES", "2"}, {"THREADS", "128"}, {"WM", "2"}};
  uint16_t *A = h_array(false, M * K, false, -1, 1), *B = h_array(false, N * K, false, -1, 1);
  uint16_t *C = h_array(false, M * N, true, 0, 0);
  float scale = 0.25f;
  InterpArg args[] = {{.name = "A", .data = A},     {.name = "B", .data = B}, {.name = "C", .data = C},
                      {.name = "M", .i = M},        {.name = "N", .i = N},    {.name = "K", .i = K},
                      {.name = "scale", .f = scale}};
  char what[64];
  snprintf(what, sizeof what, "gemm_softmax %lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
  double *row = malloc(sizeof *row * (size_t)N);
  if (run_file(TILEC_SOURCE_DIR "/stdlib/gemm.tl", defs, 6, "gemm_softmax", args, 7)) {
    misses = 0;
    for (int64_t m = 0; m < M; m++) {
      double mx = -INFINITY, sum = 0, mag;
      for (int64_t n = 0; n < N; n++) {
        row[n] = scale * dot16(false, A, B, m, n, M, N, K, false, true, &mag);
        mx = fmax(mx, row[n]);
      }
      for (int64_t n = 0; n < N; n++)
        sum += exp(row[n] - mx);
      for (int64_t n = 0; n < N; n++)
        close_to(what, m * N + n, from16(false, C[m * N + n]), exp(row[n] - mx) / sum, 2e-3, 1e-7);
    }
    check_guards_16(what, C, M * N);
  }
  free(row);
  free(A);
  free(B);
  free(C);
}

/* C = op(A) @ op(B) by a gemm kernel of path with small tiles at ragged M, N, K; ta: A is stored [K, M],
 * tb: B is stored [N, K] (stdlib/gemm.tl's gemm_tn and gemm_nt). */
/* Tiles that sm_90a lowers to wgmma (one warpgroup, 64-wide K and N) or, when wg is false, to
 * ldmatrix + mma.sync on every target. */
static void test_gemm_tiles(const char *path, const char *kernel, const char *T, int64_t M, int64_t N,
                            int64_t K, bool ta, bool tb, bool wg)
{
  bool bf = !strcmp(T, "bf16");
  ConstDef defs[] = {{"T", T},        {"BM", wg ? "64" : "32"}, {"BN", "64"}, {"BK", wg ? "64" : "32"},
                     {"STAGES", "2"}, {"THREADS", "128"}};
  uint16_t *A = h_array(bf, M * K, false, -1, 1), *B = h_array(bf, K * N, false, -1, 1);
  uint16_t *C = h_array(bf, M * N, true, 0, 0);
  InterpArg args[] = {{.name = "A", .data = A}, {.name = "B", .data = B}, {.name = "C", .data = C},
                      {.name = "M", .i = M},    {.name = "N", .i = N},    {.name = "K", .i = K}};
  char what[96];
  snprintf(what, sizeof what, "%s %s %lldx%lldx%lld%s", kernel, T, (long long)M, (long long)N, (long long)K,
           wg ? " (wgmma tiles)" : "");
  if (run_file(path, defs, 6, kernel, args, 6)) {
    if (wg && level == 2)
      CHECK(last_wgmma, "%s: no wgmma in the sm_90a lowering", what);
    misses = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double mag, want = dot16(bf, A, B, m, n, M, N, K, ta, tb, &mag);
        /* one rounding to T of the output, plus f32 sums over K */
        double rel = bf ? 8e-3 : 1e-3;
        close_to(what, m * N + n, from16(bf, C[m * N + n]), want, rel, 1e-6 * mag + 1e-6);
      }
    check_guards_16(what, C, M * N);
  }
  free(A);
  free(B);
  free(C);
}

static void test_gemm(const char *path, const char *kernel, const char *T, int64_t M, int64_t N, int64_t K,
                      bool ta, bool tb)
{
  test_gemm_tiles(path, kernel, T, M, N, K, ta, tb, false);
}

/* ---------------------------------------------------------------- checks while running */

/* Runs src, which must fail with a message containing each of want[0..nwant). */
static void expect_error(const char *name, const char *src, const char *kernel, const InterpArg *args,
                         int nargs, const char *const *want, int nwant)
{
  char msg[4096] = "";
  bool ok = run_source(name, src, strlen(src), NULL, 0, kernel, args, nargs, msg, sizeof msg);
  CHECK(!ok, "%s ran without an error", name);
  for (int i = 0; i < nwant; i++)
    CHECK_CONTAINS(msg, want[i]);
}

static void test_checks(void)
{
  float A[64 + GUARD];
  for (int i = 0; i < 64 + GUARD; i++)
    A[i] = 0;

  const char *oob = "kernel oob(A: f32[N]) grid(1) threads(32) {\n"
                    "    let t = alloc_shared([8], f32);\n"
                    "    fill(t, 1.0);\n"
                    "    for i in serial(N) {\n"
                    "        A[i] = t[i];\n"
                    "    }\n"
                    "}\n";
  InterpArg oob_args[] = {{.name = "A", .data = A}, {.name = "N", .i = 10}};
  const char *oob_want[] = {"oob.tl:5:", "index [8] is out of bounds of shared 't': dimension 0 has size 8",
                            "(kernel 'oob', block 0, 0, 0)"};
  expect_error("oob.tl", oob, "oob", oob_args, 2, oob_want, 3);

  const char *uninit = "kernel uninit(A: f32[N]) grid(ceildiv(N, 32)) as (bx) threads(32) {\n"
                       "    let x = alloc_fragment([32], f32);\n"
                       "    for i in parallel(32) {\n"
                       "        if i < 16 {\n"
                       "            x[i] = 1.0;\n"
                       "        }\n"
                       "    }\n"
                       "    for i in parallel(32) {\n"
                       "        x[i] = x[i] * 2.0;\n"
                       "    }\n"
                       "    copy(x, A[bx * 32]);\n"
                       "}\n";
  InterpArg uninit_args[] = {{.name = "A", .data = A}, {.name = "N", .i = 64}};
  const char *uninit_want[] = {"uninit.tl:9:", "fragment 'x'[16] is read before anything wrote it",
                               "block 0, 0, 0)"};
  expect_error("uninit.tl", uninit, "uninit", uninit_args, 2, uninit_want, 3);

  /* the element written in block 0 is not written in block 1: every block starts afresh */
  const char *fresh = "kernel fresh(A: f32[N]) grid(2) as (bx) threads(32) {\n"
                      "    let s = alloc_shared([4], f32);\n"
                      "    if bx == 0 {\n"
                      "        s[1] = 2.0;\n"
                      "    }\n"
                      "    A[bx] = s[1];\n"
                      "}\n";
  InterpArg fresh_args[] = {{.name = "A", .data = A}, {.name = "N", .i = 2}};
  const char *fresh_want[] = {"fresh.tl:6:", "shared 's'[1] is read before anything wrote it",
                              "(kernel 'fresh', block 1, 0, 0)"};
  expect_error("fresh.tl", fresh, "fresh", fresh_args, 2, fresh_want, 3);

  int32_t I[4 + GUARD] = {7};
  const char *divz = "kernel divz(A: i32[N], d: i32) grid(1) threads(32) {\n"
                     "    A[0] = A[0] / d;\n"
                     "}\n";
  InterpArg divz_args[] = {{.name = "A", .data = I}, {.name = "N", .i = 4}, {.name = "d", .i = 0}};
  const char *divz_want[] = {"divz.tl:2:", "integer division by zero in '/'"};
  expect_error("divz.tl", divz, "divz", divz_args, 3, divz_want, 2);

  InterpArg missing_args[] = {{.name = "A", .data = I}, {.name = "N", .i = 4}};
  const char *missing_want[] = {"no argument given for parameter 'd' of kernel 'divz'"};
  expect_error("divz.tl", divz, "divz", missing_args, 2, missing_want, 1);

  const char *gmem = "kernel gmem(A: f32[N]) grid(1) threads(32) {\n"
                     "    A[N] = 1.0;\n"
                     "}\n";
  InterpArg gmem_args[] = {{.name = "A", .data = A}, {.name = "N", .i = 4}};
  const char *gmem_want[] = {"gmem.tl:2:", "index [4] is out of bounds of global 'A'"};
  expect_error("gmem.tl", gmem, "gmem", gmem_args, 2, gmem_want, 2);
}

/* ---------------------------------------------------------------- planted lowering bugs */

/* Calls fn on every statement of s, parents first, until fn returns false; false then. */
static bool walk(Stmt *s, bool (*fn)(Stmt *))
{
  if (!s)
    return true;
  if (!fn(s))
    return false;
  for (int i = 0; i < s->nbody; i++)
    if (!walk(s->body[i], fn))
      return false;
  return walk(s->then_s, fn) && walk(s->else_s, fn);
}

static bool drop_barriers(Stmt *s) /* every barrier becomes an empty sequence */
{
  if (s->kind == ST_BARRIER)
    *s = (Stmt){.kind = ST_SEQ, .loc = s->loc};
  return true;
}
static bool drop_proxy_fences(Stmt *s)
{
  if (s->kind == ST_FENCE_PROXY_ASYNC)
    *s = (Stmt){.kind = ST_SEQ, .loc = s->loc};
  return true;
}
static bool drop_wgmma_fences(Stmt *s)
{
  if (s->kind == ST_WGMMA_FENCE)
    *s = (Stmt){.kind = ST_SEQ, .loc = s->loc};
  return true;
}
static bool drop_register_a_fences(Stmt *s) /* the fence before a wgmma that reads A from registers */
{
  if (s->kind == ST_WGMMA_FENCE && s->a_reg)
    *s = (Stmt){.kind = ST_SEQ, .loc = s->loc};
  return true;
}
static bool wait_one_more(Stmt *s) /* cp.async.wait_group N+1: one group too few waited for */
{
  if (s->kind == ST_CP_WAIT)
    s->pending++;
  return true;
}
static bool wgmma_wait_later(Stmt *s)
{
  if (s->kind == ST_WGMMA_WAIT)
    s->pending++;
  return true;
}
static bool drop_arrives(Stmt *s) /* the consumers never release a stage */
{
  if (s->kind == ST_MBAR_ARRIVE)
    *s = (Stmt){.kind = ST_SEQ, .loc = s->loc};
  return true;
}
static bool expect_more(Stmt *s) /* each stage expects 16 bytes more than its loads bring */
{
  static Expr sum, extra;
  if (s->kind != ST_MBAR_EXPECT_TX)
    return true;
  extra = (Expr){.kind = EX_INT, .type = TY_I32, .i = 16};
  sum = (Expr){.kind = EX_BINARY, .type = TY_I32, .op = OP_ADD, .a = s->value, .b = &extra};
  s->value = &sum;
  return false;                       /* one statement: sum is static */
}
static bool barrier_in_half(Stmt *s); /* the first barrier runs in threads 0..63 only */
static Kernel *planted_in;
static bool barrier_in_half(Stmt *s)
{
  if (s->kind != ST_BARRIER)
    return true;
  static Stmt inner; /* the barrier, moved under the if (one planted run at a time) */
  Stmt *b = &inner;
  *b = *s;
  int tid = -1;
  for (int v = 0; v < planted_in->nvars; v++)
    if (planted_in->vars[v].kind == VAR_THREAD_IDX)
      tid = v;
  static Expr var, lim, cond;
  var = (Expr){.kind = EX_VAR, .type = TY_I32, .var = tid};
  lim = (Expr){.kind = EX_INT, .type = TY_I32, .i = 64};
  cond = (Expr){.kind = EX_BINARY, .type = TY_BOOL, .op = OP_LT, .a = &var, .b = &lim};
  *s = (Stmt){.kind = ST_IF, .loc = s->loc, .cond = &cond, .then_s = b};
  return false;
}
static bool drop_first_fill(Stmt *s) /* the accumulator's clear: registers read before written */
{
  if (s->kind == ST_FOR && s->then_s && s->then_s->kind == ST_STORE && s->then_s->value->kind == EX_FLOAT &&
      s->then_s->value->f == 0) {
    *s = (Stmt){.kind = ST_SEQ, .loc = s->loc};
    return false;
  }
  return true;
}

static bool (*planted_fn)(Stmt *);
static void plant_walk(Kernel *k)
{
  planted_in = k;
  walk(k->body, planted_fn);
}

/* Runs path's kernel at the current (thread) level with the bug planted: it must fail with each of
 * want[0..n) in the message. */
static void expect_caught(const char *what, const char *path, const ConstDef *defs, int ndefs,
                          const char *kernel, InterpArg *args, int nargs, bool (*bug)(Stmt *),
                          const char *const *want, int nwant)
{
  size_t len = 0;
  char *src = test_read_file(path, &len);
  char msg[4096] = "";
  planted_fn = bug;
  plant = plant_walk;
  bool ok = src && run_source(path, src, len, defs, ndefs, kernel, args, nargs, msg, sizeof msg);
  plant = NULL;
  CHECK(!ok, "%s (%s level): the planted bug was not caught", what, levels[level]);
  for (int i = 0; !ok && i < nwant; i++)
    CHECK(strstr(msg, want[i]) != NULL, "%s (%s level): '%s' not in: %s", what, levels[level], want[i], msg);
  free(src);
}

/* Each bug the thread level must catch, planted in the lowered IR of a real kernel: the message
 * names the line, the kernel, the buffer and element, the block and the thread. */
static void test_thread_checks(void)
{
  int64_t M = 37, N = 100, K = 70;
  uint16_t *A = h_array(false, M * K, false, -1, 1), *B = h_array(false, K * N, false, -1, 1);
  uint16_t *C = h_array(false, M * N, true, 0, 0);
  /* On sm_90a the bugs below are planted in the cp.async form (tma.ok 0); the TMA form's own after them. */
  InterpArg args[] = {{.name = "A", .data = A},  {.name = "B", .data = B}, {.name = "C", .data = C},
                      {.name = "M", .i = M},     {.name = "N", .i = N},    {.name = "K", .i = K},
                      {.name = "tma.ok", .i = 0}};
  const int nargs = level == 2 ? 7 : 6;
  const char *matmul = TILEC_SOURCE_DIR "/examples/matmul.tl";
  /* WS = 0: the forms without a producer warpgroup (the specialized one's own bugs after them). */
  ConstDef mma[] = {{"BM", "32"},    {"BN", "64"},       {"BK", "32"},
                    {"STAGES", "3"}, {"THREADS", "128"}, {"WS", "0"}};
  ConstDef wg[] = {{"BM", "64"},    {"BN", "64"},       {"BK", "64"},
                   {"STAGES", "3"}, {"THREADS", "128"}, {"WS", "0"}};
  const ConstDef *defs = level == 2 ? wg : mma;

  const char *race[] = {"matmul.tl:", "data race on shared '", "kernel 'matmul', block 0, 0, 0, thread"};
  expect_caught("barriers removed", matmul, defs, 6, "matmul", args, nargs, drop_barriers, race, 3);
  const char *half[] = {"barrier reached by 64 of the block's 128 threads (thread 64 does not reach it)",
                        "kernel 'matmul'"};
  expect_caught("a barrier in divergent code", matmul, defs, 6, "matmul", args, 6, barrier_in_half, half, 2);
  const char *inflight[] = {"matmul.tl:", "while a cp.async into it is in flight", "thread"};
  expect_caught("cp.async.wait_group one too deep", matmul, defs, 6, "matmul", args, nargs, wait_one_more,
                inflight, 3);
  const char *unset[] = {"register 'acc'[", "before anything wrote it"};
  expect_caught("the accumulator never cleared", matmul, defs, 6, "matmul", args, nargs, drop_first_fill,
                unset, 2);
  if (level == 2) {
    const char *proxy[] = {"without a fence.proxy.async", "kernel 'matmul'"};
    expect_caught("no fence.proxy.async before wgmma", matmul, defs, 6, "matmul", args, nargs,
                  drop_proxy_fences, proxy, 2);
    const char *fence[] = {"written since the last wgmma.fence"};
    expect_caught("no wgmma.fence", matmul, defs, 6, "matmul", args, nargs, drop_wgmma_fences, fence, 1);
    const char *busy[] = {"register 'acc'[", "while a wgmma writes it"};
    expect_caught("wgmma.wait_group too shallow", matmul, defs, 6, "matmul", args, nargs, wgmma_wait_later,
                  busy, 2);
    /* The TMA form (tma.ok 1), with K long enough for stages to be refilled. */
    int64_t K2 = 300;
    uint16_t *A2 = h_array(false, M * K2, false, -1, 1), *B2 = h_array(false, K2 * N, false, -1, 1);
    InterpArg targs[] = {{.name = "A", .data = A2}, {.name = "B", .data = B2}, {.name = "C", .data = C},
                         {.name = "M", .i = M},     {.name = "N", .i = N},     {.name = "K", .i = K2}};
    const char *stuck[] = {"mbarrier wait on", "a deadlock", "kernel 'matmul', block 0, 0, 0, thread 0"};
    expect_caught("no release of a stage (mbarrier.arrive)", matmul, defs, 6, "matmul", targs, 6,
                  drop_arrives, stuck, 3);
    const char *bytes[] = {"mbarrier wait on", "16 bytes missing"};
    expect_caught("expect_tx 16 bytes too many", matmul, defs, 6, "matmul", targs, 6, expect_more, bytes, 2);
    const char *reread[] = {"matmul.tl:", "TMA load into shared '", "while a wgmma may still read it"};
    expect_caught("wgmma.wait_group too shallow (TMA)", matmul, defs, 6, "matmul", targs, 6, wgmma_wait_later,
                  reread, 3);
    /* The same bugs in the warp-specialized form (WS at its default): the producer warpgroup waits
     * for a release that never comes while the consumers wait for it; a phase short of bytes; a
     * stage refilled while a wgmma reads it. */
    const char *stuck_ws[] = {"mbarrier wait on", "a deadlock", "kernel 'matmul', block 0, 0, 0, thread"};
    expect_caught("no release of a stage (warp-specialized)", matmul, defs, 5, "matmul", targs, 6,
                  drop_arrives, stuck_ws, 3);
    expect_caught("expect_tx 16 bytes too many (warp-specialized)", matmul, defs, 5, "matmul", targs, 6,
                  expect_more, bytes, 2);
    expect_caught("wgmma.wait_group too shallow (warp-specialized)", matmul, defs, 5, "matmul", targs, 6,
                  wgmma_wait_later, reread, 3);
    free(A2);
    free(B2);
    /* A read from registers (attention's P) must be fenced after it is written, like an accumulator. */
    int64_t S = 70, D = 64, na = 2 * S * D;
    uint16_t *Q = h_array(false, na, false, -1, 1), *Kt = h_array(false, na, false, -1, 1);
    uint16_t *V = h_array(false, na, false, -1, 1), *O = h_array(false, na, true, 0, 0);
    InterpArg aargs[] = {{.name = "Q", .data = Q}, {.name = "K", .data = Kt},     {.name = "V", .data = V},
                         {.name = "O", .data = O}, {.name = "scale", .f = 0.125}, {.name = "B", .i = 1},
                         {.name = "H", .i = 2},    {.name = "S", .i = S}};
    const char *afence[] = {"flash_attention.tl:",
                            "wgmma reads A 'p' from registers written since the last wgmma.fence"};
    expect_caught("no wgmma.fence before P V (A in registers)",
                  TILEC_SOURCE_DIR "/examples/flash_attention.tl", NULL, 0, "flash_attention", aargs, 8,
                  drop_register_a_fences, afence, 2);
    free(Q);
    free(Kt);
    free(V);
    free(O);
  }
  free(A);
  free(B);
  free(C);
}

/* Blocks run in no particular order: two blocks writing one element with different values, or one
 * reading what another wrote, is reported at both levels; the same value is not. */
static void test_block_order(void)
{
  float A[4 + GUARD] = {0};
  const char *ww = "kernel order(A: f32[N]) grid(2) as (bx) threads(32) {\n"
                   "    A[0] = f32(bx);\n"
                   "}\n";
  InterpArg args[] = {{.name = "A", .data = A}, {.name = "N", .i = 4}};
  const char *ww_want[] = {"order.tl:2:", "global 'A'[0] was written by block (0, 0, 0) with another value",
                           "(kernel 'order', block 1, 0, 0"};
  expect_error("order.tl", ww, "order", args, 2, ww_want, 3);
  const char *rw = "kernel order(A: f32[N]) grid(2) as (bx) threads(32) {\n"
                   "    if bx == 0 {\n"
                   "        A[0] = 5.0;\n"
                   "    } else {\n"
                   "        A[1] = A[0];\n"
                   "    }\n"
                   "}\n";
  const char *rw_want[] = {"order.tl:5:", "global 'A'[0] was written by block (0, 0, 0)",
                           "whether this read sees it"};
  expect_error("order.tl", rw, "order", args, 2, rw_want, 3);
  const char *same = "kernel order(A: f32[N]) grid(2) as (bx) threads(32) {\n"
                     "    A[0] = 3.0;\n"
                     "}\n";
  char msg[4096] = "";
  CHECK(run_source("order.tl", same, strlen(same), NULL, 0, "order", args, 2, msg, sizeof msg) && A[0] == 3,
        "the same value from two blocks: %s", msg);
}

/* Atomics of several blocks commute; a plain write or read of the element by another block does not. */
static void test_atomic_order(void)
{
  float A[4 + GUARD] = {0};
  InterpArg args[] = {{.name = "A", .data = A}, {.name = "N", .i = 4}};
  const char *wa = "kernel order(A: f32[N]) grid(2) as (bx) threads(32) {\n"
                   "    if bx == 0 {\n"
                   "        A[0] = 1.0;\n"
                   "    } else {\n"
                   "        atomic_add(A[0], 1.0);\n"
                   "    }\n"
                   "}\n";
  const char *wa_want[] = {"order.tl:5:", "global 'A'[0] was written by block (0, 0, 0)", "block 1, 0, 0"};
  expect_error("order.tl", wa, "order", args, 2, wa_want, 3);
  const char *ar = "kernel order(A: f32[N]) grid(2) as (bx) threads(32) {\n"
                   "    atomic_add(A[0], 1.0);\n"
                   "    A[1 + bx] = A[0];\n"
                   "}\n";
  const char *ar_want[] = {"order.tl:3:", "global 'A'[0] was written by block (0, 0, 0)",
                           "whether this read sees it", "block 1, 0, 0"};
  expect_error("order.tl", ar, "order", args, 2, ar_want, 4);
  const char *aa = "kernel order(A: f32[N]) grid(3) as (bx) threads(32) {\n"
                   "    atomic_add(A[0], 1.0);\n"
                   "    atomic_max(A[1], f32(bx));\n"
                   "    for i in parallel(32) {\n"
                   "        atomic_add(A[2], 0.5);\n"
                   "    }\n"
                   "}\n";
  char msg[4096] = "";
  A[0] = 10, A[1] = -5, A[2] = 0;
  CHECK(run_source("order.tl", aa, strlen(aa), NULL, 0, "order", args, 2, msg, sizeof msg) && A[0] == 13 &&
            A[1] == 2 && A[2] == 48,
        "atomics of three blocks: %s (A = %g %g %g)", msg, A[0], A[1], A[2]);
}

/* tests/golden/atomics.tl against host references: a histogram through shared atomics, column sums
 * tile-wise, row max / min with a row held by several threads, split-K with the rows of an MMA
 * accumulator, at ragged shapes. */
static void test_atomics(void)
{
  const char *path = TILEC_SOURCE_DIR "/tests/golden/atomics.tl";
  int64_t N = 1000, M = 37, W = 300;
  int32_t *X = malloc(sizeof *X * (size_t)N), H[16 + GUARD] = {0}, Blocks[1 + GUARD] = {0};
  for (int64_t i = 0; i < N; i++)
    X[i] = (int32_t)uniform(-1000, 1000);
  InterpArg hargs[] = {{.name = "X", .data = X},
                       {.name = "H", .data = H},
                       {.name = "Blocks", .data = Blocks},
                       {.name = "N", .i = N}};
  if (run_file(path, NULL, 0, "hist", hargs, 4)) {
    int32_t want[16] = {0};
    for (int64_t i = 0; i < N; i++)
      want[((X[i] % 16) + 16) % 16]++;
    for (int b = 0; b < 16; b++)
      CHECK(H[b] == want[b], "hist[%d] = %d, want %d", b, H[b], want[b]);
    CHECK(Blocks[0] == (N + 255) / 256, "blocks counted %d", Blocks[0]);
  }
  free(X);
  float *Y = f32_array(M * W, false), *S = f32_array(W, true), *Mx = f32_array(M, true);
  int32_t *Mn = malloc(sizeof *Mn * (size_t)M);
  for (int64_t j = 0; j < W; j++)
    S[j] = 1;
  for (int64_t i = 0; i < M; i++)
    Mx[i] = -1e30f, Mn[i] = 1 << 30;
  InterpArg cargs[] = {
      {.name = "X", .data = Y}, {.name = "S", .data = S}, {.name = "M", .i = M}, {.name = "N", .i = W}};
  if (run_file(path, NULL, 0, "colsum", cargs, 4)) {
    misses = 0;
    for (int64_t j = 0; j < W; j++) {
      double sum = 1;
      for (int64_t i = 0; i < M; i++)
        sum += Y[i * W + j];
      close_to("atomic colsum", j, S[j], sum, 1e-5, 1e-5);
    }
    check_guards_f32("atomic colsum", S, W);
  }
  InterpArg rargs[] = {{.name = "X", .data = Y},
                       {.name = "Mx", .data = Mx},
                       {.name = "Mn", .data = Mn},
                       {.name = "M", .i = M},
                       {.name = "N", .i = W}};
  if (run_file(path, NULL, 0, "rowmax", rargs, 5)) {
    misses = 0;
    for (int64_t i = 0; i < M; i++) {
      double mx = -1e30, mn = 1e30;
      int32_t imn = 1 << 30;
      for (int64_t j = 0; j < W; j++)
        mx = fmax(mx, Y[i * W + j]), mn = fmin(mn, Y[i * W + j]);
      for (int64_t j = 0; j < W; j += 128) { /* each column block's minimum, truncated, then the least */
        double bmn = 1e30;
        for (int64_t jj = j; jj < j + 128 && jj < W; jj++)
          bmn = fmin(bmn, Y[i * W + jj]);
        imn = (int32_t)fmin(imn, (int32_t)(float)(bmn * 1000.0));
      }
      close_to("atomic rowmax", i, Mx[i], mx, 0, 0);
      CHECK(Mn[i] == imn, "atomic rowmin[%lld] = %d, want %d", (long long)i, Mn[i], imn);
    }
    check_guards_f32("atomic rowmax", Mx, M);
  }
  free(Y);
  free(S);
  free(Mx);
  free(Mn);
}

/* tests/golden/argmax.tl: row argmax / argmin of f16 values with ties (values on a grid of 1/8), column
 * argmax of small integers: the lowest index of the extreme. */
static void test_argmax(int64_t M, int64_t N)
{
  const char *path = TILEC_SOURCE_DIR "/tests/golden/argmax.tl";
  uint16_t *X = malloc(sizeof *X * (size_t)(M * N));
  for (int64_t i = 0; i < M * N; i++)
    X[i] = tl_f16_from_double(floor(uniform(-2, 2) * 8) / 8);
  int32_t *I = malloc(sizeof *I * (size_t)(M + N)), *J = malloc(sizeof *J * (size_t)M);
  InterpArg rargs[] = {{.name = "X", .data = X},
                       {.name = "I", .data = I},
                       {.name = "J", .data = J},
                       {.name = "M", .i = M},
                       {.name = "N", .i = N}};
  if (run_file(path, NULL, 0, "rows", rargs, 5))
    for (int64_t r = 0; r < M; r++) {
      int64_t hi = 0, lo = 0;
      for (int64_t c = 1; c < N; c++) {
        double v = tl_f16_to_float(X[r * N + c]);
        hi = v > tl_f16_to_float(X[r * N + hi]) ? c : hi;
        lo = v < tl_f16_to_float(X[r * N + lo]) ? c : lo;
      }
      CHECK(I[r] == hi && J[r] == lo, "argmax/argmin of row %lld: %d %d, want %lld %lld", (long long)r, I[r],
            J[r], (long long)hi, (long long)lo);
    }
  int32_t *Xi = malloc(sizeof *Xi * (size_t)(M * N));
  for (int64_t i = 0; i < M * N; i++)
    Xi[i] = (int32_t)floor(uniform(-8, 8));
  InterpArg cargs[] = {
      {.name = "X", .data = Xi}, {.name = "I", .data = I}, {.name = "M", .i = M}, {.name = "N", .i = N}};
  if (M <= 32 && run_file(path, NULL, 0, "cols", cargs, 4))
    for (int64_t c = 0; c < N; c++) {
      int64_t hi = 0;
      for (int64_t r = 1; r < M; r++)
        hi = Xi[r * N + c] > Xi[hi * N + c] ? r : hi;
      CHECK(I[c] == hi, "argmax of column %lld: %d, want %lld", (long long)c, I[c], (long long)hi);
    }
  free(X);
  free(Xi);
  free(I);
  free(J);
}

/* tests/golden/cumsum.tl: inclusive row scans of f16 in f32, reverse exclusive ones, and an i32 scan of
 * 1000 elements, against host sums. */
static void test_cumsum(int64_t M, int64_t N)
{
  const char *path = TILEC_SOURCE_DIR "/tests/golden/cumsum.tl";
  uint16_t *X = h_array(false, M * N, false, -1, 1);
  float *Y = f32_array(M * N, true), *Z = f32_array(M * N, true);
  InterpArg args[] = {{.name = "X", .data = X},
                      {.name = "Y", .data = Y},
                      {.name = "Z", .data = Z},
                      {.name = "M", .i = M},
                      {.name = "N", .i = N}};
  if (run_file(path, NULL, 0, "rows", args, 5)) {
    misses = 0;
    for (int64_t r = 0; r < M; r++) {
      double up = 0, down = 0;
      for (int64_t c = 0; c < N; c++) {
        up += tl_f16_to_float(X[r * N + c]);
        close_to("cumsum", r * N + c, Y[r * N + c], up, 1e-5, 1e-5);
        int64_t cr = N - 1 - c; /* reverse, exclusive: the sum after cr */
        close_to("cumsum reverse exclusive", r * N + cr, Z[r * N + cr], down, 1e-5, 1e-5);
        down += tl_f16_to_float(X[r * N + cr]);
      }
    }
    check_guards_f32("cumsum", Y, M * N);
  }
  int32_t *A = malloc(sizeof *A * 1000), *B = malloc(sizeof *B * 1000);
  for (int i = 0; i < 1000; i++)
    A[i] = (int32_t)floor(uniform(-100, 100));
  InterpArg vargs[] = {{.name = "X", .data = A}, {.name = "Y", .data = B}, {.name = "N", .i = 1000}};
  if (run_file(path, NULL, 0, "vec", vargs, 3)) {
    int32_t sum = 0;
    for (int i = 0; i < 1000; i++) {
      sum += A[i];
      CHECK(B[i] == sum, "cumsum vec[%d] = %d, want %d", i, B[i], sum);
    }
  }
  free(X);
  free(Y);
  free(Z);
  free(A);
  free(B);
}

/* tests/golden/slices.tl against the permutations and the product they stand for: [B, S, H, D] ->
 * [B, H, S, D] and back, a column of A (strided), channels last -> first, and A[m, h, k] @ B. */
/* tests/golden/gemm_i8.tl: i8 and u8 gemm into i32 against C at ragged sizes, over the whole
 * range of the bytes (the sums of 127 * 127 or 255 * 255 products are exact, and with K of a few
 * hundred they stay inside i32), and the W8A8 epilogue's scales into f16 (the golden's w8a8 and
 * stdlib/gemm.tl's gemm_w8a8). */
static void test_gemm_i8(int64_t M, int64_t N, int64_t K)
{
  const char *path = TILEC_SOURCE_DIR "/tests/golden/gemm_i8.tl";
  for (int u = 0; u < 2; u++) {
    uint8_t *A = malloc((size_t)(M * K)), *B = malloc((size_t)(N * K));
    int32_t *C = malloc(sizeof *C * (size_t)(M * N + GUARD));
    for (int64_t i = 0; i < M * K; i++)
      A[i] = (uint8_t)(int)uniform(0, 256);
    for (int64_t i = 0; i < N * K; i++)
      B[i] = (uint8_t)(int)uniform(0, 256);
    for (int64_t i = 0; i < M * N + GUARD; i++)
      C[i] = i < M * N ? INT32_MIN : -12345;
    InterpArg args[] = {{.name = "A", .data = A}, {.name = "B", .data = B}, {.name = "C", .data = C},
                        {.name = "M", .i = M},    {.name = "N", .i = N},    {.name = "K", .i = K}};
    if (run_file(path, NULL, 0, u ? "mm_u8" : "mm_i8", args, 6)) {
      int bad = 0;
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          int64_t want = 0;
          for (int64_t k = 0; k < K; k++)
            want += u ? (int64_t)A[m * K + k] * B[n * K + k]
                      : (int64_t)(int8_t)A[m * K + k] * (int8_t)B[n * K + k];
          if (C[m * N + n] != want && bad++ < 3)
            CHECK(false, "%s: C[%lld, %lld] is %d, expected %lld", u ? "mm_u8" : "mm_i8", (long long)m,
                  (long long)n, C[m * N + n], (long long)want);
        }
      CHECK(bad == 0, "%s (M=%lld N=%lld K=%lld): %d elements differ", u ? "mm_u8" : "mm_i8", (long long)M,
            (long long)N, (long long)K, bad);
      for (int i = 0; i < GUARD; i++)
        CHECK(C[M * N + i] == -12345, "%s: guard element %d past the end was written", u ? "mm_u8" : "mm_i8",
              i);
    }
    if (!u) {
      float *sa = f32_array(M, false), *sb = f32_array(N, false);
      for (int64_t i = 0; i < M; i++)
        sa[i] = (float)uniform(1e-4, 2e-4);
      for (int64_t i = 0; i < N; i++)
        sb[i] = (float)uniform(1e-3, 2e-3);
      uint16_t *O = h_array(false, M * N, true, 0, 0);
      InterpArg w[] = {{.name = "A", .data = A},   {.name = "B", .data = B}, {.name = "sa", .data = sa},
                       {.name = "sb", .data = sb}, {.name = "C", .data = O}, {.name = "M", .i = M},
                       {.name = "N", .i = N},      {.name = "K", .i = K}};
      static const char *const w8a8[][2] = {{"/tests/golden/gemm_i8.tl", "w8a8"},
                                            {"/stdlib/gemm.tl", "gemm_w8a8"}};
      for (int f = 0; f < 2; f++) {
        char file[512];
        snprintf(file, sizeof file, "%s%s", TILEC_SOURCE_DIR, w8a8[f][0]);
        for (int64_t i = 0; i < M * N; i++)
          O[i] = 0x7e00;
        if (!run_file(file, NULL, 0, w8a8[f][1], w, 8))
          continue;
        misses = 0;
        for (int64_t m = 0; m < M; m++)
          for (int64_t n = 0; n < N; n++) {
            int64_t dot = 0;
            for (int64_t k = 0; k < K; k++)
              dot += (int64_t)(int8_t)A[m * K + k] * (int8_t)B[n * K + k];
            close_to(w8a8[f][1], m * N + n, tl_f16_to_float(O[m * N + n]),
                     (double)(float)((float)dot * sa[m]) * sb[n], 2e-3, 1e-6);
          }
        check_guards_16(w8a8[f][1], O, M * N);
      }
      free(sa), free(sb), free(O);
    }
    free(A), free(B), free(C);
  }
}

/* 8-bit floats: gemm_fp8.tl's kernels (wgmma on sm_90a: no sm_80 level) against double sums of
 * the same fp8 values, and the quantize kernel's conversions bit for bit against half.c's. */
static uint8_t *fp8_array(bool e5m2, int64_t n, double lo, double hi)
{
  uint8_t *p = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++)
    p[i] = e5m2 ? tl_e5m2_from_double(uniform(lo, hi)) : tl_e4m3_from_double(uniform(lo, hi));
  return p;
}

static double fp8_value(bool e5m2, uint8_t b) { return e5m2 ? tl_e5m2_to_float(b) : tl_e4m3_to_float(b); }

static void test_gemm_fp8(int64_t M, int64_t N, int64_t K)
{
  if (level == 1) /* gemm on 8-bit floats is sm_90a's */
    return;
  const char *path = TILEC_SOURCE_DIR "/tests/golden/gemm_fp8.tl";
  static const struct {
    const char *kernel;
    bool a5, b5; /* e5m2 operands */
    int out;     /* 0 f32, 1 f16, 2 bf16 (scaled by sa and sb) */
  } cases[] = {{"mm_e4m3", 0, 0, 0}, {"mm_mixed", 0, 1, 1}, {"scaled", 1, 1, 2}, {"gemm_fp8", 0, 0, 2}};
  for (int c = 0; c < 4; c++) {
    uint8_t *A = fp8_array(cases[c].a5, M * K, -4, 4), *B = fp8_array(cases[c].b5, N * K, -4, 4);
    float *sa = f32_array(M, false), *sb = f32_array(N, false);
    float *C32 = f32_array(M * N, true);
    uint16_t *C16 = h_array(cases[c].out == 2, M * N, true, 0, 0);
    void *C = cases[c].out ? (void *)C16 : (void *)C32;
    InterpArg args[] = {{.name = "A", .data = A},   {.name = "B", .data = B},   {.name = "C", .data = C},
                        {.name = "sa", .data = sa}, {.name = "sb", .data = sb}, {.name = "M", .i = M},
                        {.name = "N", .i = N},      {.name = "K", .i = K}};
    InterpArg plain[] = {args[0], args[1], args[2], args[5], args[6], args[7]};
    const char *file = c == 3 ? TILEC_SOURCE_DIR "/stdlib/gemm_fp8.tl" : path;
    bool ok = cases[c].out == 2 ? run_file(file, NULL, 0, cases[c].kernel, args, 8)
                                : run_file(file, NULL, 0, cases[c].kernel, plain, 6);
    if (ok) {
      misses = 0;
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          double dot = 0, mag = 0;
          for (int64_t k = 0; k < K; k++) {
            double x = fp8_value(cases[c].a5, A[m * K + k]) * fp8_value(cases[c].b5, B[n * K + k]);
            dot += x, mag += fabs(x);
          }
          double got = cases[c].out == 0 ? C32[m * N + n] : from16(cases[c].out == 2, C16[m * N + n]);
          double want = cases[c].out == 2 ? dot * sa[m] * sb[n] : dot;
          double scale = cases[c].out == 2 ? fabs(sa[m] * sb[n]) : 1;
          double rel = cases[c].out == 0 ? 1e-6 : cases[c].out == 1 ? 1e-3 : 8e-3;
          close_to(cases[c].kernel, m * N + n, got, want, rel, 1e-6 * mag * scale + 1e-6);
        }
      if (cases[c].out)
        check_guards_16(cases[c].kernel, C16, M * N);
      else
        check_guards_f32(cases[c].kernel, C32, M * N);
    }
    free(A), free(B), free(sa), free(sb), free(C32), free(C16);
  }
  /* quantize: saturation past 448, subnormals, rounding ties; Q and its f16 value R exactly */
  int64_t n = 3000;
  float *X = f32_array(n, false);
  for (int64_t i = 0; i < n; i++)
    X[i] = (float)(i % 3 == 0 ? uniform(-1000, 1000) : i % 3 == 1 ? uniform(-0.01, 0.01) : uniform(-8, 8));
  X[0] = 464.0f, X[1] = -1e30f, X[2] = 0x1p-10f, X[3] = 1.0625f; /* a tie, past the max, half a subnormal */
  uint8_t *Q = malloc((size_t)n + GUARD);
  uint16_t *R = h_array(false, n, true, 0, 0);
  memset(Q, 0xAB, (size_t)n + GUARD);
  InterpArg q[] = {{.name = "X", .data = X},
                   {.name = "scale", .f = 0.75},
                   {.name = "Q", .data = Q},
                   {.name = "R", .data = R},
                   {.name = "N", .i = n}};
  if (run_file(path, NULL, 0, "quantize", q, 5)) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
      uint8_t want = tl_e4m3_from_float(X[i] * 0.75f);
      if ((Q[i] != want || R[i] != tl_f16_from_float(tl_e4m3_to_float(want))) && bad++ < 3)
        CHECK(false, "quantize: element %lld (%.9g) is 0x%02x / 0x%04x, expected 0x%02x", (long long)i,
              (double)X[i], Q[i], R[i], want);
    }
    CHECK(bad == 0, "quantize: %d elements differ", bad);
    for (int i = 0; i < GUARD; i++)
      CHECK(Q[n + i] == 0xAB, "quantize: guard byte %d past the end was written", i);
    check_guards_16("quantize R", R, n);
  }
  free(X), free(Q), free(R);
}

/* stdlib/gemm.tl's gemm_w8a16: f16 activations times i8 weights dequantized in registers (gemm's
 * register A operand filled from bytes), scaled per output channel, against double sums. */
static void test_w8a16(int64_t M, int64_t N, int64_t K, bool split)
{
  const char *name = split ? "gemm_w8a16_splitk" : "gemm_w8a16";
  uint16_t *A = h_array(false, M * K, false, -1, 1), *C = split ? NULL : h_array(false, M * N, true, 0, 0);
  float *C32 = split ? calloc((size_t)(M * N), sizeof(float)) : NULL; /* split: C += the product */
  int8_t *W = malloc((size_t)(N * K));
  float *sw = f32_array(N, false);
  for (int64_t i = 0; i < N * K; i++)
    W[i] = (int8_t)(int)uniform(-128, 128);
  for (int64_t i = 0; i < N; i++)
    sw[i] = (float)uniform(1e-3, 1e-2);
  InterpArg args[] = {{.name = "A", .data = A},   {.name = "W", .data = W},
                      {.name = "sw", .data = sw}, {.name = "C", .data = split ? (void *)C32 : C},
                      {.name = "M", .i = M},      {.name = "N", .i = N},
                      {.name = "K", .i = K}};
  if (run_file(TILEC_SOURCE_DIR "/stdlib/gemm.tl", NULL, 0, name, args, 7)) {
    misses = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double dot = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          double x = tl_f16_to_float(A[m * K + k]) * W[n * K + k];
          dot += x, mag += fabs(x);
        }
        double got = split ? C32[m * N + n] : tl_f16_to_float(C[m * N + n]);
        close_to(name, m * N + n, got, dot * sw[n], split ? 1e-5 : 1e-3, 1e-6 * mag * sw[n] + 1e-6);
      }
    if (!split)
      check_guards_16(name, C, M * N);
  }
  free(A), free(C), free(C32), free(W), free(sw);
}

/* stdlib/gemm.tl's gemm_w4a16: two 4-bit weights to a byte (low nibble first), zero point 8, an f16
 * scale per 128 weights of a row, against double sums of the dequantized weights; split: its
 * gemm_w4a16_splitk, C f32 starting from random values (+= the product). */
static void test_w4a16(int64_t M, int64_t N, int64_t K, bool split)
{
  const char *name = split ? "gemm_w4a16_splitk" : "gemm_w4a16";
  int64_t KH = (K + 1) / 2, KG = (K + 127) / 128;
  uint16_t *A = h_array(false, M * K, false, -1, 1), *C = split ? NULL : h_array(false, M * N, true, 0, 0);
  float *C32 = split ? f32_array(M * N, false) : NULL,
        *C0 = split ? malloc((size_t)(M * N) * sizeof(float)) : NULL;
  if (split)
    memcpy(C0, C32, (size_t)(M * N) * sizeof(float));
  uint8_t *Wq = malloc((size_t)(N * KH));
  uint16_t *S = h_array(false, N * KG, false, 1e-3, 1e-2); /* f16 scales, as GPTQ's */
  for (int64_t i = 0; i < N * KH; i++)
    Wq[i] = (uint8_t)(int)uniform(0, 256);
  InterpArg args[] = {{.name = "A", .data = A}, {.name = "Wq", .data = Wq},
                      {.name = "S", .data = S}, {.name = "C", .data = split ? (void *)C32 : C},
                      {.name = "M", .i = M},    {.name = "N", .i = N},
                      {.name = "K", .i = K},    {.name = "KH", .i = KH},
                      {.name = "KG", .i = KG}};
  if (run_file(TILEC_SOURCE_DIR "/stdlib/gemm.tl", NULL, 0, name, args, 9)) {
    misses = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double dot = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          int q = (Wq[n * KH + k / 2] >> (k % 2 ? 4 : 0)) & 15;
          /* the kernel rounds each dequantized weight to f16 before the product */
          double w = tl_f16_to_float(
              tl_f16_from_double((q - 8) * (double)tl_f16_to_float(S[n * KG + k / 128])));
          double x = tl_f16_to_float(A[m * K + k]) * w;
          dot += x, mag += fabs(x);
        }
        if (split)
          close_to(name, m * N + n, C32[m * N + n], C0[m * N + n] + dot, 1e-5, 1e-6 * mag + 1e-6);
        else
          close_to(name, m * N + n, tl_f16_to_float(C[m * N + n]), dot, 1e-3, 1e-6 * mag + 1e-6);
      }
    if (split)
      check_guards_f32(name, C32, M * N);
    else
      check_guards_16(name, C, M * N);
  }
  free(A), free(C), free(C32), free(C0), free(Wq), free(S);
}

static void test_slices(int64_t B, int64_t S, int64_t H, int64_t M, int64_t N, int64_t K)
{
  const char *path = TILEC_SOURCE_DIR "/tests/golden/slices.tl";
  const int64_t D = 64, n = B * S * H * D;
  uint16_t *Q = h_array(false, n, false, -2, 2), *O = h_array(false, n, true, 0, 0),
           *P = h_array(false, n, true, 0, 0);
  InterpArg a1[] = {{.name = "Q", .data = Q},
                    {.name = "O", .data = O},
                    {.name = "B", .i = B},
                    {.name = "S", .i = S},
                    {.name = "H", .i = H}};
  InterpArg a2[] = {{.name = "X", .data = O},
                    {.name = "O", .data = P},
                    {.name = "B", .i = B},
                    {.name = "S", .i = S},
                    {.name = "H", .i = H}};
  if (run_file(path, NULL, 0, "bshd_to_bhsd", a1, 5) && run_file(path, NULL, 0, "bhsd_to_bshd", a2, 5)) {
    int bad = 0;
    for (int64_t b = 0; b < B; b++)
      for (int64_t sq = 0; sq < S; sq++)
        for (int64_t h = 0; h < H; h++)
          for (int64_t d = 0; d < D; d++) {
            int64_t bshd = ((b * S + sq) * H + h) * D + d, bhsd = ((b * H + h) * S + sq) * D + d;
            bad += O[bhsd] != Q[bshd] || P[bshd] != Q[bshd];
          }
    CHECK(bad == 0, "slices: %d elements of [B, S, H, D] <-> [B, H, S, D] (B=%lld S=%lld H=%lld) differ", bad,
          (long long)B, (long long)S, (long long)H);
    check_guards_16("bshd_to_bhsd", O, n);
    check_guards_16("bhsd_to_bshd", P, n);
  }
  float *A = f32_array(M * N, false), *T = f32_array(N * M, true), *U = f32_array(M * N, true);
  InterpArg a3[] = {{.name = "A", .data = A},
                    {.name = "T", .data = T},
                    {.name = "U", .data = U},
                    {.name = "M", .i = M},
                    {.name = "N", .i = N}};
  if (run_file(path, NULL, 0, "column", a3, 5)) {
    int bad = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t c = 0; c < N; c++)
        bad += T[c * M + m] != A[m * N + c] || U[m * N + c] != A[m * N + c];
    CHECK(bad == 0, "slices: %d elements of the columns (M=%lld N=%lld) differ", bad, (long long)M,
          (long long)N);
    check_guards_f32("column T", T, N * M);
    check_guards_f32("column U", U, M * N);
  }
  float *Y = f32_array(M * N * H, true), *X = f32_array(M * N * H, false);
  InterpArg a4[] = {{.name = "X", .data = X},
                    {.name = "Y", .data = Y},
                    {.name = "N", .i = M},
                    {.name = "M", .i = N},
                    {.name = "C", .i = H}};
  if (run_file(path, NULL, 0, "channels_first", a4, 5)) {
    int bad = 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        for (int64_t c = 0; c < H; c++)
          bad += Y[(c * M + i) * N + j] != X[(i * N + j) * H + c];
    CHECK(bad == 0, "slices: %d elements of channels_first differ", bad);
    check_guards_f32("channels_first", Y, M * N * H);
  }
  uint16_t *GA = h_array(false, M * H * K, false, -1, 1), *GB = h_array(false, K * N, false, -1, 1);
  float *C = f32_array(M * N, true);
  const int64_t h = H - 1;
  InterpArg a5[] = {{.name = "A", .data = GA}, {.name = "B", .data = GB}, {.name = "C", .data = C},
                    {.name = "h", .i = h},     {.name = "M", .i = M},     {.name = "H", .i = H},
                    {.name = "K", .i = K},     {.name = "N", .i = N}};
  if (run_file(path, NULL, 0, "gemm_mhk", a5, 8)) {
    misses = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t c = 0; c < N; c++) {
        double want = 0;
        for (int64_t k = 0; k < K; k++)
          want += tl_f16_to_float(GA[(m * H + h) * K + k]) * tl_f16_to_float(GB[k * N + c]);
        close_to("gemm_mhk", m * N + c, C[m * N + c], want, 1e-4, 1e-4);
      }
    check_guards_f32("gemm_mhk", C, M * N);
  }
  free(Q), free(O), free(P), free(A), free(T), free(U), free(X), free(Y), free(GA), free(GB), free(C);
}

/* tests/golden/strides.tl: views through strides(...) against the dense arrays they stand for, at
 * ragged shapes: a padded-row copy, a transposed view, a gemm of a padded A and a transposed B into
 * a padded C (whose padding must stay untouched), and fixed strides under atomics. */
static void test_strides(int64_t M, int64_t N, int64_t K)
{
  const char *path = TILEC_SOURCE_DIR "/tests/golden/strides.tl";
  const int64_t lda = N + 5, ldt = M + 3;
  uint16_t *A = h_array(false, M * lda, false, -2, 2), *B = h_array(false, M * N, true, 0, 0);
  InterpArg a1[] = {{.name = "A", .data = A},
                    {.name = "B", .data = B},
                    {.name = "M", .i = M},
                    {.name = "N", .i = N},
                    {.name = "lda", .i = lda}};
  if (run_file(path, NULL, 0, "pad_copy", a1, 5)) {
    int bad = 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        bad += B[i * N + j] != A[i * lda + j];
    CHECK(bad == 0, "strides: %d elements of pad_copy (M=%lld N=%lld lda=%lld) differ", bad, (long long)M,
          (long long)N, (long long)lda);
    check_guards_16("pad_copy", B, M * N);
  }
  float *At = f32_array(N * ldt, false), *T = f32_array(M * N, true);
  InterpArg a2[] = {{.name = "At", .data = At},
                    {.name = "B", .data = T},
                    {.name = "M", .i = M},
                    {.name = "N", .i = N},
                    {.name = "ldt", .i = ldt}};
  if (run_file(path, NULL, 0, "transpose_view", a2, 5)) {
    int bad = 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        bad += T[i * N + j] != At[j * ldt + i];
    CHECK(bad == 0, "strides: %d elements of transpose_view (M=%lld N=%lld ldt=%lld) differ", bad,
          (long long)M, (long long)N, (long long)ldt);
    check_guards_f32("transpose_view", T, M * N);
  }
  const int64_t la = K + 8, lb = K + 1, lc = N + 4;
  uint16_t *GA = h_array(false, M * la, false, -1, 1), *GB = h_array(false, N * lb, false, -1, 1);
  float *C = f32_array(M * lc, false);
  for (int64_t i = 0; i < M * lc; i++) /* the view's elements poisoned, its padding a known value */
    C[i] = i % lc < N ? NAN : -99.0f;
  InterpArg a3[] = {{.name = "A", .data = GA}, {.name = "Bt", .data = GB}, {.name = "C", .data = C},
                    {.name = "M", .i = M},     {.name = "K", .i = K},      {.name = "lda", .i = la},
                    {.name = "N", .i = N},     {.name = "ldb", .i = lb},   {.name = "ldc", .i = lc}};
  if (run_file(path, NULL, 0, "gemm_views", a3, 9)) {
    misses = 0;
    int pad = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t c = 0; c < lc; c++) {
        if (c >= N) {
          pad += C[m * lc + c] != -99.0f;
          continue;
        }
        double want = 0;
        for (int64_t k = 0; k < K; k++)
          want += tl_f16_to_float(GA[m * la + k]) * tl_f16_to_float(GB[c * lb + k]);
        close_to("gemm_views", m * N + c, C[m * lc + c], want, 1e-4, 1e-4);
      }
    CHECK(pad == 0, "gemm_views: %d elements of C's padding were written", pad);
    check_guards_f32("gemm_views", C, M * lc);
  }
  const int64_t R = 5;
  float *X = f32_array(3 * M, false);
  int32_t *H = malloc(sizeof *H * (size_t)(8 * R + GUARD));
  for (int64_t i = 0; i < 3 * M; i++)
    X[i] = (float)(i % 7);
  for (int64_t i = 0; i < 8 * R + GUARD; i++)
    H[i] = -7;
  InterpArg a4[] = {
      {.name = "X", .data = X}, {.name = "H", .data = H}, {.name = "N", .i = M}, {.name = "R", .i = R}};
  if (run_file(path, NULL, 0, "scatter", a4, 4)) {
    int64_t want[5] = {0};
    for (int64_t n = 0; n < M; n++)
      want[n % R] += (int64_t)X[3 * n];
    int bad = 0;
    for (int64_t i = 0; i < 8 * R + GUARD; i++)
      bad += H[i] != (i < 8 * R && i % 8 == 2 ? -7 + want[i / 8] : -7);
    CHECK(bad == 0, "scatter: %d elements of H (strides(8, 2), column 1) differ", bad);
  }
  free(A), free(B), free(At), free(T), free(GA), free(GB), free(C), free(X), free(H);
}

/* tests/golden/fn.tl: kernels written with fns against what the fns compute. */
static void test_fn(int64_t M, int64_t N)
{
  const char *path = TILEC_SOURCE_DIR "/tests/golden/fn.tl";
  float *X = f32_array(M * N, false), *Y = f32_array(M * N, true);
  InterpArg a1[] = {
      {.name = "X", .data = X}, {.name = "Y", .data = Y}, {.name = "M", .i = M}, {.name = "N", .i = N}};
  if (run_file(path, NULL, 0, "softmax_rows", a1, 4)) {
    misses = 0;
    for (int64_t r = 0; r < M; r++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < N; c++)
        mx = fmax(mx, X[r * N + c]);
      for (int64_t c = 0; c < N; c++)
        sum += exp(X[r * N + c] - mx);
      for (int64_t c = 0; c < N; c++)
        close_to("fn softmax_rows", r * N + c, Y[r * N + c], exp(X[r * N + c] - mx) / sum, 1e-5, 1e-7);
    }
    check_guards_f32("fn softmax_rows", Y, M * N);
  }
  float *A = f32_array(M * N, false), *G = f32_array(M * N, true), *Z = f32_array(M * N, true);
  InterpArg a2[] = {{.name = "X", .data = A},
                    {.name = "Y", .data = G},
                    {.name = "Z", .data = Z},
                    {.name = "N", .i = M * N}};
  if (run_file(path, NULL, 0, "activations", a2, 4)) {
    misses = 0;
    for (int64_t i = 0; i < M * N; i++) {
      close_to("fn gelu", i, G[i], gelu_tanh(A[i]), 1e-5, 1e-6);
      close_to("fn sq", i, Z[i], (double)A[i] * A[i] + 4, 1e-6, 1e-6);
    }
    check_guards_f32("fn gelu", G, M * N);
    check_guards_f32("fn sq", Z, M * N);
  }
  free(X), free(Y), free(A), free(G), free(Z);
}

/* stdlib/gemm.tl's gemm_splitk: C (f32, starting from random values) += A @ B^T, K in SPLIT parts. */
static void test_splitk(const char *T, int64_t M, int64_t N, int64_t K, const char *swap, const char *bm,
                        const char *split)
{
  bool bf = !strcmp(T, "bf16");
  ConstDef defs[] = {{"T", T},     {"SWAP", swap},  {"BM", bm},       {"BN", "64"},
                     {"BK", "32"}, {"STAGES", "2"}, {"SPLIT", split}, {"THREADS", "128"}};
  uint16_t *A = h_array(bf, M * K, false, -1, 1), *B = h_array(bf, N * K, false, -1, 1);
  float *C = f32_array(M * N, false), *C0 = malloc(sizeof *C0 * (size_t)(M * N));
  memcpy(C0, C, sizeof *C0 * (size_t)(M * N));
  InterpArg args[] = {{.name = "A", .data = A}, {.name = "B", .data = B}, {.name = "C", .data = C},
                      {.name = "M", .i = M},    {.name = "N", .i = N},    {.name = "K", .i = K}};
  char what[96];
  snprintf(what, sizeof what, "gemm_splitk %s %lldx%lldx%lld SWAP=%s SPLIT=%s", T, (long long)M, (long long)N,
           (long long)K, swap, split);
  if (run_file(TILEC_SOURCE_DIR "/stdlib/gemm.tl", defs, 8, "gemm_splitk", args, 6)) {
    misses = 0;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double mag, want = C0[m * N + n] + dot16(bf, A, B, m, n, M, N, K, false, true, &mag);
        close_to(what, m * N + n, C[m * N + n], want, 1e-5, 1e-5 * mag + 1e-5);
      }
  }
  free(A);
  free(B);
  free(C);
  free(C0);
}

/* A run stops, with an error, after InterpOptions.max_steps statements. */
static void test_budget(void)
{
  float A[64 + GUARD] = {0};
  const char *src = "kernel spin(A: f32[N]) grid(1) threads(32) {\n"
                    "    for i in serial(1000) {\n"
                    "        A[0] = A[0] + 1.0;\n"
                    "    }\n"
                    "}\n";
  InterpArg args[] = {{.name = "A", .data = A}, {.name = "N", .i = 64}};
  const char *want[] = {"spin.tl:", "the run exceeded its budget of 500 statements"};
  max_steps = 500;
  expect_error("spin.tl", src, "spin", args, 2, want, 2);
  max_steps = 0;
}

/* Integer wrapping, f16 rounding on every store and cast, and a reduction with accumulate. */
static void test_semantics(void)
{
  const char *src = "kernel sem(I: i32[N], U: u8[N], H: f16[N], S: f32[N], x: i32) grid(1) threads(32) {\n"
                    "    I[0] = x + 1;\n"
                    "    I[1] = -7 / 2;\n"
                    "    I[2] = -7 % 2;\n"
                    "    I[3] = ceildiv(x, 1000);\n"
                    "    U[0] = u8(x);\n"
                    "    U[1] = u8(250) + u8(10);\n"
                    "    H[0] = f16(1.0) + f16(0.0004);\n"
                    "    H[1] = f16(f32(x));\n"
                    "    let v = alloc_fragment([4, 8], f32);\n"
                    "    let r = alloc_fragment([4], f32);\n"
                    "    for i, j in parallel(4, 8) {\n"
                    "        v[i, j] = f32(i * 8 + j);\n"
                    "    }\n"
                    "    fill(r, 100.0);\n"
                    "    reduce_sum(v, r, clear = false);\n"
                    "    copy(r, S[0]);\n"
                    "    reduce_max(v, r);\n"
                    "    copy(r, S[4]);\n"
                    "}\n";
  int32_t I[8 + GUARD] = {0};
  uint8_t U[8 + GUARD] = {0};
  uint16_t H[8 + GUARD] = {0};
  float S[8 + GUARD] = {0};
  InterpArg args[] = {{.name = "I", .data = I}, {.name = "U", .data = U}, {.name = "H", .data = H},
                      {.name = "S", .data = S}, {.name = "N", .i = 8},    {.name = "x", .i = 2147483647}};
  char msg[4096] = "";
  bool ok = run_source("sem.tl", src, strlen(src), NULL, 0, "sem", args, 6, msg, sizeof msg);
  CHECK(ok, "%s", msg);
  CHECK(I[0] == INT32_MIN, "x + 1 wraps: %d", I[0]);
  CHECK(I[1] == -3 && I[2] == -1, "division truncates: %d %d", I[1], I[2]);
  CHECK(I[3] == -2147482, "ceildiv(x, 1000) is (x + 999) / 1000, wrapped: %d", I[3]);
  CHECK(U[0] == 255 && U[1] == 4, "u8 truncates and wraps: %d %d", U[0], U[1]);
  CHECK(H[0] == 0x3c00, "1 + 0.0004 rounds to 1 in f16: 0x%04x", H[0]);
  CHECK(H[1] == 0x7c00, "2^31 is +inf in f16: 0x%04x", H[1]);
  for (int i = 0; i < 4; i++) {
    float sum = 100, mx = 0;
    for (int j = 0; j < 8; j++) {
      sum += (float)(i * 8 + j);
      mx = fmaxf(mx, (float)(i * 8 + j));
    }
    CHECK(S[i] == sum, "reduce_sum with clear = false, row %d: %g, expected %g", i, S[i], sum);
    CHECK(S[4 + i] == mx, "reduce_max row %d: %g, expected %g", i, S[4 + i], mx);
  }
}

/* copy between tiles converts to the destination's type (f32 -> f16 rounds to nearest even); a tile
 * placed before a tensor's start (negative origin) reads zeros there and writes nothing there. */
static void test_copy_edges(void)
{
  const char *src = "kernel edges(X: f32[N], H: f16[N], Z: f32[N], o: i32) grid(1) threads(32) {\n"
                    "    let x = alloc_fragment([8], f32);\n"
                    "    let s = alloc_shared([8], f16);\n"
                    "    copy(X[o], x);\n"
                    "    copy(x, s);\n"
                    "    copy(s, H[o]);\n"
                    "    copy(x, Z[0]);\n"
                    "}\n";
  float X[6 + GUARD] = {1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f, 2, 3, 4, 5};
  uint16_t H[6 + GUARD];
  float Z[6 + GUARD];
  for (int i = 0; i < 6 + GUARD; i++) {
    H[i] = GUARD_BITS;
    Z[i] = -1234.5f;
  }
  InterpArg args[] = {{.name = "X", .data = X},
                      {.name = "H", .data = H},
                      {.name = "Z", .data = Z},
                      {.name = "N", .i = 6},
                      {.name = "o", .i = -3}};
  char msg[4096] = "";
  bool ok = run_source("edges.tl", src, strlen(src), NULL, 0, "edges", args, 5, msg, sizeof msg);
  CHECK(ok, "%s", msg);
  /* x = [0, 0, 0, X[0], X[1], X[2], X[3], X[4]]; H[0..5) = s[3..8) */
  CHECK(H[0] == 0x3c00, "1 + 2^-11 is a tie: rounds to even, 1.0: 0x%04x", H[0]);
  CHECK(H[1] == 0x3c01, "1 + 2^-11 + 2^-20 rounds up: 0x%04x", H[1]);
  CHECK(H[2] == 0x4000 && H[4] == 0x4400, "2 and 4 exactly: 0x%04x 0x%04x", H[2], H[4]);
  CHECK(H[5] == GUARD_BITS, "H[5] is past the tile's end (x[8]): not written: 0x%04x", H[5]);
  CHECK(Z[0] == 0 && Z[2] == 0 && Z[3] == X[0] && Z[5] == X[2], "zeros before X's start: %g %g %g %g", Z[0],
        Z[2], Z[3], Z[5]);
  check_guards_16("edges H", H, 6);
  check_guards_f32("edges Z", Z, 6);
}

/* The kernels of examples/ and stdlib/ against their references, at the current level. */
/* The attention checks' common part: O (and L unless !L) of [B, H, S, D] tensors (bshd: [B, S, H, D])
 * against a double reference from the same 16-bit inputs: O within 2e-2 (P is rounded to 16 bits
 * before P V), L (natural log-sum-exp) within 1e-3; a row that sees no key (causal, SQ > SK) O = 0 and
 * L = +inf. Query head h reads key head h / (H / HK). */
typedef struct {
  bool bf, bshd, causal;
  int D;
  int64_t B, H, HK, SQ, SK;
} AttnShape;

static void check_attention(const char *what, const AttnShape *a, const uint16_t *Q, const uint16_t *K,
                            const uint16_t *V, const uint16_t *O, const float *L)
{
  int64_t B = a->B, H = a->H, HK = a->HK, SQ = a->SQ, SK = a->SK;
  int D = a->D;
  bool bf = a->bf;
  double scale = 1.0 / sqrt((double)D), *s = malloc(sizeof *s * (size_t)SK);
  /* element (b, h, i, d) of a tensor of NH heads and S_ rows */
#define AT(X, NH, S_, b, h, i, d) \
  (a->bshd ? X[(((b) * (S_) + (i)) * (NH) + (h)) * D + (d)] : X[(((b) * (NH) + (h)) * (S_) + (i)) * D + (d)])
  misses = 0;
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      int64_t hk = h / (H / HK);
      for (int64_t i = 0; i < SQ; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < SK; j++) {
          s[j] = -INFINITY;
          if (a->causal && j > i + SK - SQ)
            continue;
          double x = 0;
          for (int d = 0; d < D; d++)
            x += from16(bf, AT(Q, H, SQ, b, h, i, d)) * from16(bf, AT(K, HK, SK, b, hk, j, d));
          s[j] = x * scale;
          mx = fmax(mx, s[j]);
        }
        for (int64_t j = 0; j < SK; j++)
          sum += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
        int64_t row = (b * H + h) * SQ + i;
        for (int d = 0; d < D; d++) {
          double o = 0;
          for (int64_t j = 0; sum > 0 && j < SK; j++)
            o += (s[j] == -INFINITY ? 0 : exp(s[j] - mx)) * from16(bf, AT(V, HK, SK, b, hk, j, d));
          close_to(what, row * D + d, from16(bf, AT(O, H, SQ, b, h, i, d)), sum > 0 ? o / sum : 0, 2e-2,
                   2e-2);
        }
        if (L && sum > 0)
          close_to(what, row, L[row], mx + log(sum), 1e-3, 1e-3);
        else if (L)
          CHECK(L[row] == INFINITY, "%s: row %lld sees no key: L is %g, expected +inf", what, (long long)row,
                L[row]);
      }
    }
#undef AT
  free(s);
}

/* One attention test's inputs (random in [-1, 1)), outputs (poisoned) and defines (T, D, CAUSAL). */
typedef struct {
  AttnShape sh;
  char d_text[8], c_text[4];
  ConstDef defs[3];
  int64_t nq;
  uint16_t *Q, *K, *V, *O;
  float *L;
} AttnData;

static void attn_data(AttnData *a, const char *T, int D, bool causal, bool bshd, int64_t B, int64_t H,
                      int64_t HK, int64_t SQ, int64_t SK)
{
  a->sh = (AttnShape){!strcmp(T, "bf16"), bshd, causal, D, B, H, HK, SQ, SK};
  snprintf(a->d_text, sizeof a->d_text, "%d", D);
  snprintf(a->c_text, sizeof a->c_text, "%d", causal);
  a->defs[0] = (ConstDef){"T", T};
  a->defs[1] = (ConstDef){"D", a->d_text};
  a->defs[2] = (ConstDef){"CAUSAL", a->c_text};
  int64_t nk = B * HK * SK * D;
  a->nq = B * H * SQ * D;
  a->Q = h_array(a->sh.bf, a->nq, false, -1, 1);
  a->K = h_array(a->sh.bf, nk, false, -1, 1);
  a->V = h_array(a->sh.bf, nk, false, -1, 1);
  a->O = h_array(a->sh.bf, a->nq, true, 0, 0);
  a->L = f32_array(B * H * SQ, true);
}

static void attn_data_free(AttnData *a)
{
  free(a->Q);
  free(a->K);
  free(a->V);
  free(a->O);
  free(a->L);
}

/* stdlib/attention.tl's attention_fwd ([B, H, S, D]) or attention_fwd_bshd ([B, S, H * D]), or the
 * tutorial's kernels (no GQA, SQ = SK, not causal, no L): ex 1 examples/flash_attention.tl, 2
 * docs/tutorials/attention_staged.tl. */
static void test_attention(int ex, bool bshd, const char *T, int D, bool causal, int64_t B, int64_t H,
                           int64_t HK, int64_t SQ, int64_t SK)
{
  AttnData a;
  attn_data(&a, T, D, causal, bshd, B, H, HK, SQ, SK);
  InterpArg args[13] = {{.name = "Q", .data = a.Q},
                        {.name = "K", .data = a.K},
                        {.name = "V", .data = a.V},
                        {.name = "O", .data = a.O},
                        {.name = "scale", .f = 1.0 / sqrt((double)D)},
                        {.name = "B", .i = B},
                        {.name = "H", .i = H}};
  int nargs = 7;
  if (ex)
    args[nargs++] = (InterpArg){.name = "S", .i = SQ};
  else {
    args[nargs++] = (InterpArg){.name = "L", .data = a.L};
    args[nargs++] = (InterpArg){.name = "SQ", .i = SQ};
    args[nargs++] = (InterpArg){.name = "SK", .i = SK};
    args[nargs++] = bshd ? (InterpArg){.name = "HD", .i = H * D} : (InterpArg){.name = "HK", .i = HK};
    if (bshd)
      args[nargs++] = (InterpArg){.name = "HKD", .i = HK * D};
  }
  const char *kernel = ex == 1   ? "flash_attention"
                       : ex == 2 ? "flash_attention_staged"
                       : bshd    ? "attention_fwd_bshd"
                                 : "attention_fwd";
  const char *path = ex == 1   ? TILEC_SOURCE_DIR "/examples/flash_attention.tl"
                     : ex == 2 ? TILEC_SOURCE_DIR "/docs/tutorials/attention_staged.tl"
                               : TILEC_SOURCE_DIR "/stdlib/attention.tl";
  char what[112];
  snprintf(what, sizeof what, "%s %s D=%d causal=%d B=%lld H=%lld HK=%lld SQ=%lld SK=%lld", kernel, T, D,
           causal, (long long)B, (long long)H, (long long)HK, (long long)SQ, (long long)SK);
  if (run_file(path, a.defs, ex ? 2 : 3, kernel, args, nargs)) {
    check_attention(what, &a.sh, a.Q, a.K, a.V, a.O, ex ? NULL : a.L);
    check_guards_16(what, a.O, a.nq);
  }
  attn_data_free(&a);
}

/* stdlib/attention.tl's attention_decode (NS splits of the keys) then attention_decode_combine, [B, H,
 * S, D]. */
static void test_attention_decode(const char *T, int D, bool causal, int64_t B, int64_t H, int64_t HK,
                                  int64_t SQ, int64_t SK, int64_t NS)
{
  AttnData a;
  attn_data(&a, T, D, causal, false, B, H, HK, SQ, SK);
  int64_t nw = B * H * NS * SQ;
  float *OP = f32_array(nw * D, true), *LP = f32_array(nw, true);
  InterpArg args[] = {
      {.name = "Q", .data = a.Q}, {.name = "K", .data = a.K}, {.name = "V", .data = a.V},
      {.name = "OP", .data = OP}, {.name = "LP", .data = LP}, {.name = "scale", .f = 1.0 / sqrt((double)D)},
      {.name = "B", .i = B},      {.name = "H", .i = H},      {.name = "HK", .i = HK},
      {.name = "SQ", .i = SQ},    {.name = "SK", .i = SK},    {.name = "NS", .i = NS},
      {.name = "BH", .i = B * H}};
  InterpArg cargs[] = {{.name = "OP", .data = OP}, {.name = "LP", .data = LP}, {.name = "O", .data = a.O},
                       {.name = "L", .data = a.L}, {.name = "B", .i = B},      {.name = "H", .i = H},
                       {.name = "NS", .i = NS},    {.name = "SQ", .i = SQ},    {.name = "BH", .i = B * H}};
  char what[112];
  snprintf(what, sizeof what,
           "attention_decode %s D=%d causal=%d B=%lld H=%lld HK=%lld SQ=%lld SK=%lld NS=%lld", T, D, causal,
           (long long)B, (long long)H, (long long)HK, (long long)SQ, (long long)SK, (long long)NS);
  const char *path = TILEC_SOURCE_DIR "/stdlib/attention.tl";
  if (run_file(path, a.defs, 3, "attention_decode", args, 13) &&
      run_file(path, a.defs, 2, "attention_decode_combine", cargs, 9)) {
    check_attention(what, &a.sh, a.Q, a.K, a.V, a.O, a.L);
    check_guards_16(what, a.O, a.nq);
    check_guards_f32(what, OP, nw * D);
  }
  attn_data_free(&a);
  free(OP);
  free(LP);
}

/* tests/golden/reduce_dim.tl's colsum: column sums and maxima (reductions over dim 0, clear = false
 * across row tiles) of a ragged X, against C. */
static void test_reduce_dim(int64_t M, int64_t N)
{
  float *X = f32_array(M * N, false), *S = f32_array(N, true), *Mx = f32_array(N, true);
  InterpArg args[] = {{.name = "X", .data = X},
                      {.name = "S", .data = S},
                      {.name = "Mx", .data = Mx},
                      {.name = "M", .i = M},
                      {.name = "N", .i = N}};
  char what[64];
  snprintf(what, sizeof what, "colsum %lldx%lld", (long long)M, (long long)N);
  if (run_file(TILEC_SOURCE_DIR "/tests/golden/reduce_dim.tl", NULL, 0, "colsum", args, 5)) {
    misses = 0;
    for (int64_t j = 0; j < N; j++) {
      double sum = 0, mx = -INFINITY;
      for (int64_t i = 0; i < M; i++) {
        sum += X[i * N + j];
        mx = fmax(mx, X[i * N + j]);
      }
      close_to(what, j, S[j], sum, 1e-5, 1e-5);
      close_to(what, j, Mx[j], mx, 0, 0);
    }
    check_guards_f32(what, S, N);
    check_guards_f32(what, Mx, N);
  }
  free(X);
  free(S);
  free(Mx);
}

static void test_kernels(void)
{
  test_vector_add(1000);
  test_vector_add(5000); /* two blocks of 4096, the second ragged */
  test_saxpy(1000);
  const char *acts = TILEC_SOURCE_DIR "/stdlib/activations.tl";
  test_activation(TILEC_SOURCE_DIR "/examples/gelu.tl", "gelu_f16", "f16", 3000, gelu_tanh, 1e-3);
  test_activation(acts, "silu_bf16", "bf16", 1500, silu, 8e-3);
  test_activation(acts, "gelu_erf_f32", "f32", 2500, gelu_erf, 1e-6);
  test_activation(acts, "relu_f32", "f32", 1000, relu, 0);
  test_softmax("f16", 37, 1000, "1024", "0"); /* rows in one piece: the pipelined path */
  test_softmax("f16", 37, 1000, "1024", "1"); /* rows in one piece, straight into registers */
  test_softmax("f16", 37, 1000, "256", "0");  /* rows streamed through tiles: the serial path */
  test_softmax("bf16", 5, 300, "512", "0");
  test_softmax("bf16", 5, 300, "512", "1");
  test_softmax("f32", 9, 1000, "256", "0");
  test_rmsnorm(7, 1000, "1024");
  test_rmsnorm(7, 1000, "256");
  test_layernorm(8, 1000, "1024", "0", -3, 5);
  test_layernorm(8, 1000, "1024", "1", -3, 5);
  test_layernorm(8, 1000, "256", "0", -3, 5);
  test_layernorm(3, 1000, "256", "0", 500, 504); /* the streamed statistics, a mean 400 times the spread */
  const char *matmul = TILEC_SOURCE_DIR "/examples/matmul.tl", *gemm = TILEC_SOURCE_DIR "/stdlib/gemm.tl";
  test_gemm(matmul, "matmul", "f16", 37, 100, 70, false, false);
  test_gemm(matmul, "matmul", "bf16", 37, 100, 70, false, false);
  test_gemm(matmul, "matmul", "f16", 64, 64, 32, false, false); /* whole tiles */
  test_gemm(gemm, "gemm_nt", "f16", 37, 100, 70, false, true);
  test_gemm(gemm, "gemm_tn", "bf16", 45, 72, 50, true, false);
  test_gemm(gemm, "gemm_nn", "f16", 33, 64, 16, false, false);
  test_gemm_tiles(matmul, "matmul", "f16", 70, 100, 130, false, false, true);
  test_gemm_tiles(matmul, "matmul", "bf16", 64, 128, 64, false, false, true); /* whole tiles */
  test_gemm_tiles(gemm, "gemm_nt", "f16", 70, 100, 130, false, true, true);
  test_gemm_tiles(gemm, "gemm_tn", "bf16", 70, 100, 130, true, false, true);
  test_gemm_bias_gelu(37, 100, 70);
  test_gemm_softmax(37, 50, 70);                                 /* one tile of columns */
  test_gemm_softmax(37, 150, 40);                                /* three, the last ragged: the second pass */
  test_attention(0, false, "f16", 64, true, 1, 2, 1, 70, 150);   /* GQA, causal, SQ < SK */
  test_attention(0, false, "f16", 64, true, 1, 2, 2, 150, 70);   /* rows that see no key */
  test_attention(0, true, "bf16", 128, false, 2, 2, 2, 33, 100); /* [B, S, H * D] */
  test_attention(0, true, "f16", 256, true, 1, 3, 1, 40, 90);
  test_attention(1, false, "f16", 64, false, 1, 2, 2, 100, 100); /* the example */
  test_attention(2, false, "bf16", 64, false, 2, 1, 1, 77, 77);  /* the tutorial's P through shared memory */
  test_attention_decode("f16", 64, false, 2, 4, 2, 1, 300, 3);   /* GQA, one query */
  test_attention_decode("bf16", 128, true, 1, 2, 1, 5, 200, 4);  /* causal drafts */
  test_attention_decode("f16", 64, true, 1, 2, 2, 16, 10, 5);    /* splits past the keys, rows with none */
  test_attention_decode("f16", 64, true, 1, 8, 1, 9, 150, 2);    /* 72 rows of a group: two 64-row tiles */
  test_reduce_dim(70, 100);
  test_atomics();
  test_argmax(20, 100);
  test_cumsum(11, 100);
  test_slices(2, 70, 3, 37, 45, 70);                /* ragged: S, M, N and K are not multiples of the tiles */
  test_fn(10, 100);                                 /* ragged rows and columns */
  test_strides(37, 45, 70);                         /* ragged: no dimension a multiple of a tile */
  test_strides(70, 130, 129);                       /* two tiles each way, the second ragged */
  test_gemm_i8(70, 45, 200);                        /* ragged M, N, K: K not a multiple of 64 or 128 */
  test_gemm_i8(130, 140, 96);                       /* two tiles each way, the second ragged */
  test_gemm_fp8(70, 45, 200);                       /* ragged M, N, K */
  test_gemm_fp8(130, 140, 96);                      /* two tiles each way, the second ragged */
  test_w8a16(16, 100, 200, false);                  /* decoding's rows; ragged N and K */
  test_w8a16(37, 70, 64, false);                    /* ragged rows and columns, one K step */
  test_w8a16(300, 130, 200, false);                 /* 128 x 128 x 128 tiles, ragged */
  test_w8a16(5, 100, 2200, true);                   /* K split 2 ways (9 steps of 128 each) */
  test_w8a16(37, 70, 2000, true);                   /* 64 weight rows, ragged everywhere */
  test_w4a16(16, 100, 300, false);                  /* three groups of K, the last partial */
  test_w4a16(37, 70, 129, false);                   /* an odd K: half a byte past the end */
  test_w4a16(5, 100, 2201, true);                   /* K split 2 ways (9 groups each), odd K */
  test_w4a16(37, 70, 2000, true);                   /* 64 weight rows, 2 splits of 8 groups */
  test_splitk("f16", 37, 100, 300, "0", "64", "3"); /* splits of 4, 4 and 2 steps */
  test_splitk("bf16", 20, 70, 200, "1", "32", "4"); /* C^T's tile (decoding's form) */
  test_splitk("f16", 10, 30, 40, "0", "64", "4");   /* splits with no step at all */
  test_semantics();
  test_copy_edges();
  test_block_order();
  test_atomic_order();
  test_budget();
}

int main(int argc, char **argv)
{
  /* test_interp [LEVEL]: one level only (0 tile, 1 thread sm_80, 2 thread sm_90a) */
  int only = argc > 1 ? atoi(argv[1]) : -1;
  for (level = 0; level < 3; level++) {
    if (only >= 0 && level != only)
      continue;
    int before = failures;
    test_kernels();
    if (level == 0)
      test_checks();
    else
      test_thread_checks();
    printf("test_interp: %s level: %d failures\n", levels[level], failures - before);
  }
  printf("test_interp: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
