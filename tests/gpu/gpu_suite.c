/* gpu_suite: the GPU acceptance suite. Runs every example kernel that tilec compiled into PTXDIR on
 * random data of several sizes against a CPU reference in double precision, then checks the
 * runtime's own driver-facing behaviour with small hand-written PTX modules.
 *
 *   gpu_suite PTXDIR [--seed S] [--max-size N]
 *
 * One line per case ("PASS ..." / "FAIL ..." / "SKIP ..."), then exactly "P passed, F failed".
 * Exit 0 if nothing failed, 1 otherwise, 2 if there is no GPU. A kernel whose PTX file is missing is
 * skipped, not failed (tests/gpu/run.sh fails the run anyway if tilec could not compile it).
 *
 * Every output buffer is poisoned first (0xFF bytes: NaN in every float format) and has a guard
 * region after its end that must still be poisoned afterwards, so an element never written and a
 * write past the end both fail.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"


/* --------------------------------------------------------------------------- example kernels */

typedef enum kernel_id { VECTOR_ADD, SAXPY, GELU_F16, GELU_BF16 } kernel_id;

/* The signatures are fixed (docs/runtime.md); the compiler team writes the .tl files. */
static const struct kernel_spec {
  const char *file, *name;
  kernel_id id;
  tl_dtype elem;
} kernels[] = {
    {"vector_add.ptx", "vector_add", VECTOR_ADD, TL_F32}, /* (A: f32[N], B: f32[N], C: f32[N]) */
    {"saxpy.ptx", "saxpy", SAXPY, TL_F32},               /* (X, Y, Z: f32[N], a: f32) */
    {"gelu.ptx", "gelu_f16", GELU_F16, TL_F16},          /* (X: f16[N], Y: f16[N]) */
    {"gelu.ptx", "gelu_bf16", GELU_BF16, TL_BF16},       /* (X: bf16[N], Y: bf16[N]) */
};

static const size_t sizes[] = {1, 7, 1000, (1u << 20) + 3, 1u << 28};

/* Elements after the end of every output, poisoned and checked: a whole vector_add block (4096
 * elements) so that a kernel ignoring the bound in its last block is caught. */
enum { GUARD = 4096 };

typedef struct case_data {
  kernel_id id;
  size_t n;
  void *x, *y; /* inputs: A, B / X, Y / X */
  void *out;   /* output, n + GUARD elements */
  float a;     /* saxpy's scalar */
  /* per chunk results of the check, so the parallel check needs no lock */
  double *worst;    /* largest |error| / tolerance */
  size_t *first_bad;
} case_data;

static size_t elem_size(kernel_id id) { return id == GELU_F16 || id == GELU_BF16 ? 2 : 4; }

static size_t fill_inputs(void *arg, size_t begin, size_t end, uint64_t seed)
{
  case_data *c = arg;
  uint64_t s = seed;
  if (c->id == GELU_F16 || c->id == GELU_BF16) {
    uint16_t *x = c->x;
    for (size_t i = begin; i < end; i++) {
      float v = gpu_random_float(&s, -5.0f, 5.0f);
      x[i] = c->id == GELU_F16 ? tl_f16_from_float(v) : tl_bf16_from_float(v);
    }
  } else {
    float *x = c->x, *y = c->y;
    for (size_t i = begin; i < end; i++) {
      x[i] = gpu_random_float(&s, -1.0f, 1.0f);
      y[i] = gpu_random_float(&s, -1.0f, 1.0f);
    }
  }
  return 0;
}

static double gelu_reference(double x)
{
  return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

/* Compare [begin, end) with the double-precision reference; returns the number of bad elements. */
static size_t check_outputs(void *arg, size_t begin, size_t end, uint64_t seed)
{
  (void)seed;
  case_data *c = arg;
  const size_t chunk = begin / GPU_CHUNK;
  size_t bad = 0, first = SIZE_MAX;
  double worst = 0;
  for (size_t i = begin; i < end; i++) {
    double got, ref, tol;
    switch (c->id) {
    case VECTOR_ADD: {
      const float *a = c->x, *b = c->y, *out = c->out;
      /* the float sum is the double sum rounded once: exact match expected */
      got = out[i];
      ref = (float)((double)a[i] + (double)b[i]);
      tol = 0;
      break;
    }
    case SAXPY: {
      const float *x = c->x, *y = c->y, *out = c->out;
      got = out[i];
      double ax = (double)c->a * x[i];
      ref = ax + y[i];
      /* relative 1e-6 of the terms, not of the result: a*x + y can cancel, and FMA (one rounding)
       * and mul + add (two) differ by up to an ulp of a*x */
      tol = 1e-6 * (fabs(ax) + fabs((double)y[i]));
      break;
    }
    case GELU_F16: {
      const uint16_t *x = c->x, *out = c->out;
      got = tl_f16_to_float(out[i]);
      ref = gelu_reference(tl_f16_to_float(x[i]));
      tol = 1e-3 + 1e-2 * fabs(ref);
      break;
    }
    case GELU_BF16:
    default: {
      const uint16_t *x = c->x, *out = c->out;
      got = tl_bf16_to_float(out[i]);
      ref = gelu_reference(tl_bf16_to_float(x[i]));
      tol = 1e-3 + 2e-2 * fabs(ref); /* bf16 keeps 8 significant bits, f16 11 */
      break;
    }
    }
    const double err = fabs(got - ref);
    if (!(err <= tol)) { /* NaN (an unwritten element) fails too */
      if (bad++ == 0)
        first = i;
    } else if (tol > 0 && err / tol > worst) {
      worst = err / tol;
    }
  }
  c->worst[chunk] = worst;
  c->first_bad[chunk] = first;
  return bad;
}

static void describe_element(const case_data *c, size_t i, char *buf, size_t size)
{
  switch (c->id) {
  case VECTOR_ADD:
    snprintf(buf, size, "C[%zu] = %.9g, expected %.9g (A = %.9g, B = %.9g)", i,
             ((float *)c->out)[i], (double)((float *)c->x)[i] + ((float *)c->y)[i],
             ((float *)c->x)[i], ((float *)c->y)[i]);
    break;
  case SAXPY:
    snprintf(buf, size, "Z[%zu] = %.9g, expected %.9g (a = %.9g, X = %.9g, Y = %.9g)", i,
             ((float *)c->out)[i], (double)c->a * ((float *)c->x)[i] + ((float *)c->y)[i], c->a,
             ((float *)c->x)[i], ((float *)c->y)[i]);
    break;
  default: {
    float (*to_float)(uint16_t) = c->id == GELU_F16 ? tl_f16_to_float : tl_bf16_to_float;
    const uint16_t *x = c->x, *out = c->out;
    snprintf(buf, size, "Y[%zu] = %.6g (bits 0x%04x), expected %.6g (X = %.6g)", i, to_float(out[i]),
             out[i], gelu_reference(to_float(x[i])), to_float(x[i]));
  }
  }
}

/* One kernel at one size. */
static void run_case(tl_context *ctx, tl_kernel *kernel, const struct kernel_spec *spec, size_t n,
                     uint64_t seed)
{
  const size_t es = elem_size(spec->id), in_bytes = n * es, out_bytes = (n + GUARD) * es;
  const size_t chunks = (n + GPU_CHUNK - 1) / GPU_CHUNK;
  case_data c = {.id = spec->id, .n = n};
  tl_devptr dx = 0, dy = 0, dout = 0;
  const bool two_inputs = spec->id == VECTOR_ADD || spec->id == SAXPY;
  c.x = malloc(in_bytes);
  c.y = two_inputs ? malloc(in_bytes) : NULL;
  c.out = malloc(out_bytes);
  c.worst = calloc(chunks, sizeof *c.worst);
  c.first_bad = calloc(chunks, sizeof *c.first_bad);
  if (!c.x || (two_inputs && !c.y) || !c.out || !c.worst || !c.first_bad) {
    gpu_report(false, "%s N=%zu: out of host memory", spec->name, n);
    goto done;
  }
  uint64_t s = seed;
  c.a = gpu_random_float(&s, -2.0f, 2.0f);
  gpu_parallel_for(n, seed, fill_inputs, &c);

  tl_status st;
#define STEP(call)                                                                                 \
  do {                                                                                             \
    if ((st = (call)) != TL_OK) {                                                                  \
      gpu_report(false, "%s N=%zu: %s: %s", spec->name, n, tl_status_name(st), tl_context_message(ctx)); \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

  STEP(tl_malloc(ctx, in_bytes, &dx));
  if (two_inputs)
    STEP(tl_malloc(ctx, in_bytes, &dy));
  STEP(tl_malloc(ctx, out_bytes, &dout));
  STEP(tl_memcpy_htod(ctx, dx, c.x, in_bytes));
  if (two_inputs)
    STEP(tl_memcpy_htod(ctx, dy, c.y, in_bytes));
  STEP(tl_memset_d8(ctx, dout, 0xFF, out_bytes));

  const int64_t shape[1] = {(int64_t)n};
  tl_arg args[4];
  int nargs = 0;
  args[nargs++] = tl_arg_tensor(dx, spec->elem, 1, shape);
  if (two_inputs)
    args[nargs++] = tl_arg_tensor(dy, spec->elem, 1, shape);
  args[nargs++] = tl_arg_tensor(dout, spec->elem, 1, shape);
  if (spec->id == SAXPY)
    args[nargs++] = tl_arg_f32(c.a);
  STEP(tl_launch(kernel, args, nargs, NULL));
  STEP(tl_synchronize(ctx));
  STEP(tl_memcpy_dtoh(ctx, c.out, dout, out_bytes));

  const size_t bad = gpu_parallel_for(n, 0, check_outputs, &c);
  size_t guard_bad = 0, guard_first = 0;
  const unsigned char *guard = (const unsigned char *)c.out + in_bytes;
  for (size_t i = 0; i < GUARD * es; i++)
    if (guard[i] != 0xFF && guard_bad++ == 0)
      guard_first = i / es;
  double worst = 0;
  size_t first = SIZE_MAX;
  for (size_t k = 0; k < chunks; k++) {
    worst = c.worst[k] > worst ? c.worst[k] : worst;
    if (first == SIZE_MAX && c.first_bad[k] != SIZE_MAX)
      first = c.first_bad[k];
  }
  char what[512] = "";
  if (bad) {
    describe_element(&c, first, what, sizeof what);
    gpu_report(false, "%s N=%zu: %zu of %zu elements wrong; first %s", spec->name, n, bad, n, what);
  } else if (guard_bad) {
    gpu_report(false, "%s N=%zu: wrote past the end: %zu bytes of the guard changed, first at element "
                  "N+%zu",
           spec->name, n, guard_bad, guard_first);
  } else if (spec->id == VECTOR_ADD) {
    gpu_report(true, "%s N=%zu: exact", spec->name, n);
  } else {
    gpu_report(true, "%s N=%zu: worst error %.3f of tolerance%s", spec->name, n, worst,
           spec->id == SAXPY ? "" : " (inputs uniform in [-5, 5])");
  }

done:
  tl_free(ctx, dx);
  tl_free(ctx, dy);
  tl_free(ctx, dout);
  free(c.x);
  free(c.y);
  free(c.out);
  free(c.worst);
  free(c.first_bad);
}

/* Misuse of vector_add through the launch API: refused with TL_ERR_BAD_ARGUMENT, and nothing runs
 * (the poisoned output stays poisoned). */
static void run_misuse(tl_context *ctx, tl_kernel *kernel)
{
  enum { N = 1000 };
  tl_devptr a = 0, b = 0, c = 0;
  float host[N];
  if (tl_malloc(ctx, N * 4, &a) != TL_OK || tl_malloc(ctx, N * 4, &b) != TL_OK ||
      tl_malloc(ctx, N * 4, &c) != TL_OK || tl_memset_d8(ctx, a, 0, N * 4) != TL_OK ||
      tl_memset_d8(ctx, b, 0, N * 4) != TL_OK || tl_memset_d8(ctx, c, 0xFF, N * 4) != TL_OK) {
    gpu_report(false, "misuse: setup: %s", tl_context_message(ctx));
    goto done;
  }
  const int64_t n[1] = {N}, n_short[1] = {N - 1}, zero[1] = {0};
  const struct {
    const char *what;
    tl_arg args[3];
    int nargs;
    tl_status expected;
    const char *needle;
  } cases[] = {
      {"wrong dtype",
       {tl_arg_tensor(a, TL_F32, 1, n), tl_arg_tensor(b, TL_F16, 1, n), tl_arg_tensor(c, TL_F32, 1, n)},
       3, TL_ERR_BAD_ARGUMENT, "argument 1 ('B'): expected a tensor of f32, got f16"},
      {"mismatched sizes",
       {tl_arg_tensor(a, TL_F32, 1, n), tl_arg_tensor(b, TL_F32, 1, n),
        tl_arg_tensor(c, TL_F32, 1, n_short)},
       3, TL_ERR_BAD_ARGUMENT, "size N is 1000 from argument 0 ('A') but 999 from argument 2 ('C')"},
      {"too few arguments",
       {tl_arg_tensor(a, TL_F32, 1, n), tl_arg_tensor(b, TL_F32, 1, n)},
       2, TL_ERR_BAD_ARGUMENT, "takes 3 arguments"},
      {"scalar for a tensor",
       {tl_arg_tensor(a, TL_F32, 1, n), tl_arg_f32(1.0f), tl_arg_tensor(c, TL_F32, 1, n)},
       3, TL_ERR_BAD_ARGUMENT, "argument 1 ('B'): expected a tensor of f32, got a scalar f32"},
      {"N = 0 launches nothing",
       {tl_arg_tensor(a, TL_F32, 1, zero), tl_arg_tensor(b, TL_F32, 1, zero),
        tl_arg_tensor(c, TL_F32, 1, zero)},
       3, TL_OK, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_status st = tl_launch(kernel, cases[i].args, cases[i].nargs, NULL);
    char message[1024];
    snprintf(message, sizeof message, "%s", tl_context_message(ctx));
    tl_status sync = tl_synchronize(ctx);
    bool untouched = tl_memcpy_dtoh(ctx, host, c, sizeof host) == TL_OK;
    for (int j = 0; untouched && j < N; j++)
      untouched = host[j] != host[j]; /* still NaN */
    bool ok = st == cases[i].expected && strstr(message, cases[i].needle) && sync == TL_OK && untouched;
    gpu_report(ok, "misuse: %s -> %s%s%s%s", cases[i].what, tl_status_name(st), *message ? ": " : "",
           message, untouched ? "" : " (BUT the output changed)");
  }
done:
  tl_free(ctx, a);
  tl_free(ctx, b);
  tl_free(ctx, c);
}

/* ------------------------------------------------------------------ runtime, hand-written PTX */

#define PTX_HEADER ".version 8.0\n.target sm_90a\n.address_size 64\n"

/* Writes every scalar it gets into out[] as 64-bit values, so that the host sees exactly which
 * bytes arrived where: the parameter layout of docs/abi.md, checked against the real driver. */
static const char scalars_ptx[] =
    "// tilec-meta v1\n"
    "// tilec-meta kernel scalars threads=1 smem=0 params=8\n"
    "// tilec-meta param 0 tensor out u64 rank=1 dims=n\n"
    "// tilec-meta param 1 scalar b bool\n"
    "// tilec-meta param 2 scalar h f16\n"
    "// tilec-meta param 3 scalar x f32\n"
    "// tilec-meta param 4 scalar d f64\n"
    "// tilec-meta param 5 scalar c i8\n"
    "// tilec-meta param 6 scalar u u32\n"
    "// tilec-meta param 7 size n i32\n"
    "// tilec-meta grid 0 1\n// tilec-meta grid 1 1\n// tilec-meta grid 2 1\n"
    "// tilec-meta end\n" PTX_HEADER
    ".visible .entry scalars(.param .u64 out, .param .u8 b, .param .b16 h, .param .b32 x,\n"
    "    .param .b64 d, .param .s8 c, .param .u32 u, .param .u32 n)\n"
    "{\n"
    "  .reg .b16 %rs<4>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<12>;\n"
    "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  ld.param.u8 %rs1, [b];\n  cvt.u64.u16 %rd3, %rs1;\n  st.global.u64 [%rd2], %rd3;\n"
    "  ld.param.b16 %rs2, [h];\n  cvt.u64.u16 %rd4, %rs2;\n  st.global.u64 [%rd2+8], %rd4;\n"
    "  ld.param.b32 %r1, [x];\n  cvt.u64.u32 %rd5, %r1;\n  st.global.u64 [%rd2+16], %rd5;\n"
    "  ld.param.b64 %rd6, [d];\n  st.global.u64 [%rd2+24], %rd6;\n"
    "  ld.param.s8 %rs3, [c];\n  cvt.s64.s16 %rd7, %rs3;\n  st.global.u64 [%rd2+32], %rd7;\n"
    "  ld.param.u32 %r2, [u];\n  cvt.u64.u32 %rd8, %r2;\n  st.global.u64 [%rd2+40], %rd8;\n"
    "  ld.param.u32 %r3, [n];\n  cvt.u64.u32 %rd9, %r3;\n  st.global.u64 [%rd2+48], %rd9;\n"
    "  ret;\n"
    "}\n";

static void test_scalar_layout(tl_context *ctx)
{
  tl_module *m = NULL;
  tl_kernel *k = NULL;
  tl_devptr out = 0;
  uint64_t host[7] = {0};
  tl_status st;
  if ((st = tl_module_load_ptx(ctx, scalars_ptx, &m)) != TL_OK ||
      (st = tl_module_get_kernel(m, "scalars", &k)) != TL_OK ||
      (st = tl_malloc(ctx, sizeof host, &out)) != TL_OK ||
      (st = tl_memset_d8(ctx, out, 0xFF, sizeof host)) != TL_OK) {
    gpu_report(false, "runtime: scalar parameter layout: %s: %s", tl_status_name(st), tl_context_message(ctx));
    goto done;
  }
  const int64_t shape[1] = {7};
  const tl_arg args[7] = {tl_arg_tensor(out, TL_U64, 1, shape), tl_arg_bool(true),
                          tl_arg_float(TL_F16, 1.5),   tl_arg_f32(2.5f),
                          tl_arg_f64(-3.25),           tl_arg_int(TL_I8, -7),
                          tl_arg_uint(TL_U32, 4000000000u)};
  if ((st = tl_launch(k, args, 7, NULL)) != TL_OK || (st = tl_synchronize(ctx)) != TL_OK ||
      (st = tl_memcpy_dtoh(ctx, host, out, sizeof host)) != TL_OK) {
    gpu_report(false, "runtime: scalar parameter layout: %s: %s", tl_status_name(st), tl_context_message(ctx));
    goto done;
  }
  float x = 2.5f;
  double d = -3.25;
  uint32_t xbits;
  uint64_t dbits;
  memcpy(&xbits, &x, 4);
  memcpy(&dbits, &d, 8);
  const uint64_t expected[7] = {1, 0x3E00, xbits, dbits, (uint64_t)(int64_t)-7, 4000000000u, 7};
  bool ok = memcmp(host, expected, sizeof host) == 0;
  char got[512] = "";
  size_t used = 0;
  for (int i = 0; i < 7 && used < sizeof got; i++)
    used += (size_t)snprintf(got + used, sizeof got - used, "%s0x%llx", i ? " " : "",
                             (unsigned long long)host[i]);
  gpu_report(ok, "runtime: scalar parameter layout (bool, f16, f32, f64, i8, u32, size) -> %s%s", got,
         ok ? "" : " (expected 0x1 0x3e00 0x40200000 0xc00a000000000000 0xfffffffffffffff9 0xee6b2800 0x7)");
done:
  tl_free(ctx, out);
  tl_module_unload(m);
}

/* Loads that must fail, each with its own status and message. */
static void test_load_failures(tl_context *ctx)
{
  static const char *meta_one = "// tilec-meta v1\n"
                                "// tilec-meta kernel %s threads=%d smem=%d params=0\n"
                                "// tilec-meta grid 0 1\n// tilec-meta grid 1 1\n// tilec-meta grid 2 1\n"
                                "// tilec-meta end\n" PTX_HEADER "%s";
  static const char *smem_body = ".extern .shared .align 16 .b8 dyn_smem[];\n"
                                 ".visible .entry %s()\n.maxntid 64, 1, 1\n{\n"
                                 "  .reg .b32 %%r<2>;\n  mov.u32 %%r1, 0;\n"
                                 "  st.shared.u32 [dyn_smem], %%r1;\n  ret;\n}\n";
  static const struct {
    const char *what, *kernel, *entry;
    int threads, smem;
    bool garbage;
    tl_status expected;
    const char *needle;
  } cases[] = {
      {"PTX the driver rejects", "broken", "broken", 32, 0, true, TL_ERR_PTX_REJECTED,
       "the CUDA driver rejected the PTX"},
      {"metadata names a kernel the PTX lacks", "missing", "present", 32, 0, false,
       TL_ERR_BAD_METADATA, "the PTX has no .entry of that name"},
      {"threads above the kernel's .maxntid", "wide", "wide", 1024, 0, false, TL_ERR_BAD_METADATA,
       "at most 64 fit in a block"},
      {"dynamic shared memory above the device's limit", "huge", "huge", 64, 300000, false,
       TL_ERR_BAD_METADATA, "bytes of dynamic shared memory"},
      {"100000 bytes of dynamic shared memory (opt-in above 48 KiB)", "big", "big", 64, 100000,
       false, TL_OK, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char body[1024], ptx[4096];
    if (cases[i].garbage)
      snprintf(body, sizeof body, ".visible .entry %s()\n{\n  this is not ptx;\n  ret;\n}\n",
               cases[i].entry);
    else
      snprintf(body, sizeof body, smem_body, cases[i].entry);
    snprintf(ptx, sizeof ptx, meta_one, cases[i].kernel, cases[i].threads, cases[i].smem, body);
    tl_module *m = NULL;
    tl_status st = tl_module_load_ptx(ctx, ptx, &m);
    char message[4096];
    snprintf(message, sizeof message, "%s", tl_context_message(ctx));
    bool ok = st == cases[i].expected && strstr(message, cases[i].needle) && (st == TL_OK) == (m != NULL);
    if (ok && st == TL_OK) { /* it loaded: it must launch too */
      tl_kernel *k = NULL;
      ok = tl_module_get_kernel(m, cases[i].kernel, &k) == TL_OK && tl_launch(k, NULL, 0, NULL) == TL_OK &&
           tl_synchronize(ctx) == TL_OK;
      if (!ok)
        snprintf(message, sizeof message, "%s", tl_context_message(ctx));
    }
    for (char *nl = strchr(message, '\n'); nl; nl = strchr(nl, '\n'))
      *nl = '|'; /* one line per case; the driver's log keeps its line breaks as '|' */
    gpu_report(ok, "runtime: %s -> %s%s%s", cases[i].what, tl_status_name(st), *message ? ": " : "", message);
    tl_module_unload(m);
  }

  /* lookup of a kernel that is not there */
  char ptx[4096], body[1024];
  snprintf(body, sizeof body, smem_body, "present");
  snprintf(ptx, sizeof ptx, meta_one, "present", 32, 0, body);
  tl_module *m = NULL;
  tl_kernel *k = NULL;
  tl_status st = tl_module_load_ptx(ctx, ptx, &m);
  if (st == TL_OK)
    st = tl_module_get_kernel(m, "absent", &k);
  gpu_report(st == TL_ERR_NOT_FOUND && k == NULL && strstr(tl_context_message(ctx), "(it has: present)"),
         "runtime: lookup of an absent kernel -> %s: %s", tl_status_name(st), tl_context_message(ctx));
  tl_module_unload(m);
}

/* ------------------------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
  const char *dir = NULL;
  size_t max_size = SIZE_MAX;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      i++;
    else if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
      max_size = strtoull(argv[++i], NULL, 0);
    else if (!dir && argv[i][0] != '-')
      dir = argv[i];
    else
      dir = NULL, argc = 0;
  }
  if (!dir) {
    fprintf(stderr, "usage: gpu_suite PTXDIR [--seed S] [--max-size N]\n");
    return 1;
  }
  const uint64_t seed = gpu_seed_from_args(argc, argv, NULL);
  bool no_gpu;
  tl_context *ctx = gpu_open("gpu_suite", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  printf("gpu_suite: PTX from %s, seed %llu (replay with --seed %llu)\n", dir,
         (unsigned long long)seed, (unsigned long long)seed);

  tl_kernel *vector_add = NULL;
  tl_module *modules[sizeof kernels / sizeof kernels[0]] = {0};
  for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
    const struct kernel_spec *spec = &kernels[k];
    bool missing;
    /* kernels that share a file share a module */
    tl_module *m = NULL;
    for (size_t j = 0; j < k; j++)
      if (strcmp(kernels[j].file, spec->file) == 0 && modules[j])
        m = modules[j];
    tl_status st = m ? TL_OK : gpu_load(ctx, dir, spec->file, &m, &missing);
    if (st != TL_OK) {
      if (missing) {
        printf("SKIP %s: %s/%s not found\n", spec->name, dir, spec->file);
        gpu_skipped++;
      } else {
        gpu_report(false, "%s: loading %s: %s: %s", spec->name, spec->file, tl_status_name(st),
               tl_context_message(ctx));
      }
      continue;
    }
    modules[k] = m;
    tl_kernel *kernel = NULL;
    if ((st = tl_module_get_kernel(m, spec->name, &kernel)) != TL_OK) {
      gpu_report(false, "%s: %s: %s", spec->name, tl_status_name(st), tl_context_message(ctx));
      continue;
    }
    const tl_kernel_info *info = tl_kernel_get_info(kernel);
    printf("     %s: threads=%u smem=%u grid x = %s\n", spec->name, info->threads, info->smem,
           info->grid_text[0]);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      if (sizes[s] > max_size)
        continue;
      uint64_t case_seed = seed ^ (0x9E3779B97F4A7C15ull * (k * 16 + s + 1));
      run_case(ctx, kernel, spec, sizes[s], case_seed);
    }
    if (spec->id == VECTOR_ADD)
      vector_add = kernel;
  }
  if (vector_add)
    run_misuse(ctx, vector_add);
  else
    printf("SKIP misuse tests: they need vector_add.ptx\n"), gpu_skipped++;

  test_scalar_layout(ctx);
  test_load_failures(ctx);

  for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
    bool shared = false;
    for (size_t j = 0; j < k; j++)
      shared |= modules[j] == modules[k];
    if (!shared)
      tl_module_unload(modules[k]);
  }
  tl_context_destroy(ctx);
  if (gpu_skipped)
    printf("%d skipped\n", gpu_skipped);
  printf("%d passed, %d failed\n", gpu_passed, gpu_failed);
  return gpu_failed ? 1 : 0;
}
