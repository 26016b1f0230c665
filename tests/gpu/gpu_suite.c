/* gpu_suite: the GPU acceptance suite. Runs every example kernel that tilec compiled into PTXDIR, and
 * the activations of stdlib/activations.tl, on random data of several sizes against a CPU reference
 * in double precision, then checks the runtime's own driver-facing behaviour with small hand-written
 * PTX modules.
 *
 *   gpu_suite PTXDIR [--seed S] [--max-size N] [--skip-missing]
 *   gpu_suite --self-test [--seed S]   check this program's checker on the CPU (no GPU needed)
 *
 * One line per case ("PASS ..." / "FAIL ..." / "SKIP ..."), then exactly "P passed, F failed".
 * Exit 0 if nothing failed, 1 otherwise, 2 if there is no GPU. The PTX files expected in PTXDIR:
 * vector_add.ptx, saxpy.ptx, gelu.ptx (examples/NAME.tl) and activations.ptx (stdlib/activations.tl,
 * all four kernels in one module; tests/gpu/run.sh compiles them all). A kernel whose PTX file is
 * missing fails, unless --skip-missing says to skip it ("SKIP"); the run fails anyway when no kernel
 * at all could be run.
 *
 * Sizes N = 1, 7, 1000, 2^20+3 and 2^28 (up to --max-size). Every output buffer is poisoned first
 * (0xFF bytes: NaN in every float format) and has a guard region after its end that must still be
 * poisoned afterwards, so an element never written and a write past the end both fail. Inputs and
 * tolerances (ref: the double-precision reference from the inputs as stored):
 *
 *   vector_add    A, B uniform in [-1, 1]            exact (the f32 sum is the double sum rounded once)
 *   saxpy         X, Y in [-1, 1], a in [-2, 2]      1e-6 (|aX| + |Y|) (FMA or not)
 *   gelu_f16/bf16 (tanh form) X in [-5, 5]           1e-3 + 1e-2 |ref| (f16), 1e-3 + 2e-2 |ref| (bf16)
 *   silu_f16      X: see below                       2^-10 |ref| + 2^-24: twice the f16 rounding (2^-11),
 *                                                    and one f16 subnormal step
 *   silu_bf16                                        2^-7 |ref| + 2^-119: twice bf16's rounding; f32 math
 *                                                    flushes sigmoid(x) < 2^-126 to 0, |x| 2^-126 < 2^-119
 *   relu_f32                                         exact
 *   gelu_erf_f32                                     2^-20 |ref| + |x|/2 min(1e-6, 4 erfc(|x|/sqrt(2)))
 *                                                    + 2^-126: a few f32 roundings, erf's absolute error
 *                                                    (3e-7 in codegen/cg_math.c; near -1 no more than
 *                                                    erfc itself) times x/2, and f32's flush to zero
 *
 * The activations' inputs: 15 in 16 uniform in [-8, 8], 1 in 16 of magnitude 2^U[-20, 15.9] (f16) or
 * 2^U[-20, 64] with a random sign, 1 in 256 zero; and from N = 64 on, the first elements are special
 * values (0, -0, +-1, the switch of the erf polynomial at |x| = 1/sqrt(2), +-88 / 90 / 100 where
 * exp(x) leaves f32's range, +-1000, the type's largest finite values and smallest normal ones).
 *
 * Self-test (--self-test, on the CPU). Host models of every kernel (f32 math, rounded to its type) at
 * N = 1, 7, 1000 and 2^20+3 must pass; broken models must fail: the last element never written, one
 * element written past the end, the last element off, one unit in the last place off (the exact
 * kernels), every result shifted by one element, and per kernel A - B (vector_add), a ignored and a
 * rounded to bf16 (saxpy), no factor 1/2 and no cubic term (gelu), sigmoid(x) alone and sigmoid as
 * e^x / (1 + e^x), which overflows (silu), 0.01 x below 0 (relu), the tanh form and erf(x) for
 * erf(x / sqrt(2)) (gelu_erf). Each must fail at every N where it changes an output materially (an
 * unwritten, NaN or infinite element, a guard byte, or |change| > 5% + 0.01), and at N >= 1000 (the
 * shifted results, the kernels' own faults) or at every N (the others) whatever it changed.
 */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"


/* --------------------------------------------------------------------------- example kernels */

typedef enum kernel_id {
  VECTOR_ADD,
  SAXPY,
  GELU_F16,
  GELU_BF16,
  SILU_F16,
  SILU_BF16,
  RELU_F32,
  GELU_ERF_F32,
  NKERNELS
} kernel_id;

/* The signatures are fixed (docs/runtime.md, stdlib/activations.tl); indexed by kernel_id. */
static const struct kernel_spec {
  const char *file, *name;
  kernel_id id;
  tl_dtype elem;
} kernels[NKERNELS] = {
    {"vector_add.ptx", "vector_add", VECTOR_ADD, TL_F32},      /* (A: f32[N], B: f32[N], C: f32[N]) */
    {"saxpy.ptx", "saxpy", SAXPY, TL_F32},                     /* (X, Y, Z: f32[N], a: f32) */
    {"gelu.ptx", "gelu_f16", GELU_F16, TL_F16},                /* (X: f16[N], Y: f16[N]) */
    {"gelu.ptx", "gelu_bf16", GELU_BF16, TL_BF16},             /* (X: bf16[N], Y: bf16[N]) */
    {"activations.ptx", "silu_f16", SILU_F16, TL_F16},         /* (X: f16[N], Y: f16[N]) */
    {"activations.ptx", "silu_bf16", SILU_BF16, TL_BF16},      /* (X: bf16[N], Y: bf16[N]) */
    {"activations.ptx", "relu_f32", RELU_F32, TL_F32},         /* (X: f32[N], Y: f32[N]) */
    {"activations.ptx", "gelu_erf_f32", GELU_ERF_F32, TL_F32}, /* (X: f32[N], Y: f32[N]) */
};

static const size_t sizes[] = {1, 7, 1000, (1u << 20) + 3, 1u << 28};

/* Elements after the end of every output, poisoned and checked: a whole vector_add block (4096
 * elements) so that a kernel ignoring the bound in its last block is caught. */
enum { GUARD = 4096 };

/* The activations' special inputs (see the header), at the start of inputs of 64 elements or more;
 * those not finite in the kernel's type are left out. */
#define SPECIALS_FROM 64
static const float specials[] = {
    0.0f,        -0.0f,        1.0f,           -1.0f,          0.70710677f,   -0.70710677f,
    0.70710683f, -0.70710683f, 5.656854f,      -5.656854f,     -8.0f,         -10.0f,
    -13.0f,      -20.0f,       88.0f,          -88.0f,         90.0f,         -90.0f,
    100.0f,      -100.0f,      1000.0f,        -1000.0f,       60000.0f,      -60000.0f,
    65504.0f,    -65504.0f,    1e30f,          -1e30f,         3.3895314e38f, -3.3895314e38f,
    FLT_MAX,     -FLT_MAX,     6.1035156e-05f, 5.9604645e-08f, FLT_MIN,       -FLT_MIN};
#define NSPECIALS (sizeof specials / sizeof specials[0])

typedef struct case_data {
  kernel_id id;
  size_t n;
  void *x, *y; /* inputs: A, B / X, Y / X */
  void *out;   /* output, n + GUARD elements */
  float a;     /* saxpy's scalar */
  /* per chunk results of the check, so the parallel check needs no lock */
  double *worst; /* largest |error| / tolerance */
  size_t *first_bad;
} case_data;

static size_t elem_size(kernel_id id) { return tl_dtype_size(kernels[id].elem); }

static inline double load_elem(tl_dtype t, const void *p, size_t i)
{
  switch (t) {
  case TL_F16: return tl_f16_to_float(((const uint16_t *)p)[i]);
  case TL_BF16: return tl_bf16_to_float(((const uint16_t *)p)[i]);
  default: return ((const float *)p)[i];
  }
}

static inline void store_elem(tl_dtype t, void *p, size_t i, float v)
{
  switch (t) {
  case TL_F16: ((uint16_t *)p)[i] = tl_f16_from_float(v); break;
  case TL_BF16: ((uint16_t *)p)[i] = tl_bf16_from_float(v); break;
  default: ((float *)p)[i] = v; break;
  }
}

static inline bool is_poison(tl_dtype t, const void *p, size_t i)
{
  return t == TL_F32 ? ((const uint32_t *)p)[i] == 0xFFFFFFFFu : ((const uint16_t *)p)[i] == 0xFFFFu;
}

/* The special inputs finite in type t, in order: how many, into out[]. */
static size_t specials_of(tl_dtype t, float *out)
{
  size_t k = 0;
  uint32_t tmp[1];
  for (size_t i = 0; i < NSPECIALS; i++) {
    store_elem(t, tmp, 0, specials[i]);
    const double v = load_elem(t, tmp, 0);
    if (isfinite(v))
      out[k++] = (float)v;
  }
  return k;
}

/* An activation's random input (see the header). */
static float act_input(uint64_t *s, tl_dtype t)
{
  const uint64_t u = gpu_next_random(s);
  if ((u & 255) == 0)
    return 0.0f;
  if ((u & 15) == 1) {
    const float mag = exp2f(gpu_random_float(s, -20.0f, t == TL_F16 ? 15.9f : 64.0f));
    return (u >> 8) & 1 ? -mag : mag;
  }
  return gpu_random_float(s, -8.0f, 8.0f);
}

static size_t fill_inputs(void *arg, size_t begin, size_t end, uint64_t seed)
{
  case_data *c = arg;
  const tl_dtype t = kernels[c->id].elem;
  uint64_t s = seed;
  switch (c->id) {
  case VECTOR_ADD:
  case SAXPY: {
    float *x = c->x, *y = c->y;
    for (size_t i = begin; i < end; i++) {
      x[i] = gpu_random_float(&s, -1.0f, 1.0f);
      y[i] = gpu_random_float(&s, -1.0f, 1.0f);
    }
    break;
  }
  case GELU_F16:
  case GELU_BF16:
    for (size_t i = begin; i < end; i++)
      store_elem(t, c->x, i, gpu_random_float(&s, -5.0f, 5.0f));
    break;
  default: {
    float special[NSPECIALS];
    const size_t nspecial = c->n >= SPECIALS_FROM ? specials_of(t, special) : 0;
    for (size_t i = begin; i < end; i++)
      store_elem(t, c->x, i, i < nspecial ? special[i] : act_input(&s, t));
    break;
  }
  }
  return 0;
}

static double gelu_reference(double x)
{
  return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

#define SQRT1_2 0.70710678118654752440

/* 0.5 x (1 + erf(x / sqrt(2))), through erfc below 0 (no cancellation). */
static double gelu_erf_reference(double x)
{
  return x >= 0 ? 0.5 * x * (1.0 + erf(x * SQRT1_2)) : 0.5 * x * erfc(-x * SQRT1_2);
}

/* The reference of output element i and its tolerance (see the header). */
static void reference(const case_data *c, size_t i, double *ref, double *tol)
{
  const tl_dtype t = kernels[c->id].elem;
  switch (c->id) {
  case VECTOR_ADD: {
    const float *a = c->x, *b = c->y;
    /* the float sum is the double sum rounded once: exact match expected */
    *ref = (float)((double)a[i] + (double)b[i]);
    *tol = 0;
    return;
  }
  case SAXPY: {
    const float *x = c->x, *y = c->y;
    const double ax = (double)c->a * x[i];
    *ref = ax + y[i];
    /* relative 1e-6 of the terms, not of the result: a*x + y can cancel, and FMA (one rounding)
     * and mul + add (two) differ by up to an ulp of a*x */
    *tol = 1e-6 * (fabs(ax) + fabs((double)y[i]));
    return;
  }
  case GELU_F16:
  case GELU_BF16:
    *ref = gelu_reference(load_elem(t, c->x, i));
    *tol = 1e-3 + (c->id == GELU_F16 ? 1e-2 : 2e-2) * fabs(*ref); /* bf16 keeps 8 significant bits, f16 11 */
    return;
  case SILU_F16:
  case SILU_BF16: {
    const double x = load_elem(t, c->x, i);
    *ref = x / (1.0 + exp(-x));
    *tol = c->id == SILU_F16 ? ldexp(fabs(*ref), -10) + ldexp(1.0, -24)
                             : ldexp(fabs(*ref), -7) + ldexp(1.0, -119);
    return;
  }
  case RELU_F32: {
    const double x = load_elem(t, c->x, i);
    *ref = x > 0 ? x : 0.0;
    *tol = 0;
    return;
  }
  case GELU_ERF_F32:
  default: {
    const double x = load_elem(t, c->x, i);
    *ref = gelu_erf_reference(x);
    *tol = ldexp(fabs(*ref), -20) + 0.5 * fabs(x) * fmin(1e-6, 4.0 * erfc(fabs(x) * SQRT1_2)) +
           ldexp(1.0, -126);
    return;
  }
  }
}

/* Compare [begin, end) with the double-precision reference; returns the number of bad elements. */
static size_t check_outputs(void *arg, size_t begin, size_t end, uint64_t seed)
{
  (void)seed;
  case_data *c = arg;
  const tl_dtype t = kernels[c->id].elem;
  const size_t chunk = begin / GPU_CHUNK;
  size_t bad = 0, first = SIZE_MAX;
  double worst = 0;
  for (size_t i = begin; i < end; i++) {
    double ref, tol;
    reference(c, i, &ref, &tol);
    const double got = load_elem(t, c->out, i);
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
  const tl_dtype t = kernels[c->id].elem;
  switch (c->id) {
  case VECTOR_ADD:
    snprintf(buf, size, "C[%zu] = %.9g, expected %.9g (A = %.9g, B = %.9g)", i, ((float *)c->out)[i],
             (double)((float *)c->x)[i] + ((float *)c->y)[i], ((float *)c->x)[i], ((float *)c->y)[i]);
    break;
  case SAXPY:
    snprintf(buf, size, "Z[%zu] = %.9g, expected %.9g (a = %.9g, X = %.9g, Y = %.9g)", i,
             ((float *)c->out)[i], (double)c->a * ((float *)c->x)[i] + ((float *)c->y)[i], c->a,
             ((float *)c->x)[i], ((float *)c->y)[i]);
    break;
  default: {
    double ref, tol;
    reference(c, i, &ref, &tol);
    const unsigned bits = t == TL_F32 ? ((const uint32_t *)c->out)[i] : ((const uint16_t *)c->out)[i];
    snprintf(buf, size, "Y[%zu] = %.9g (bits 0x%0*x), expected %.9g within %.3g (X = %.9g)", i,
             load_elem(t, c->out, i), t == TL_F32 ? 8 : 4, bits, ref, tol, load_elem(t, c->x, i));
  }
  }
}

/* The inputs of one case: buffers of n (outputs n + GUARD) elements, filled for kernel `id`. False
 * when out of host memory (c is then freed). */
static bool case_init(case_data *c, kernel_id id, size_t n, uint64_t seed)
{
  const size_t es = elem_size(id);
  const size_t chunks = (n + GPU_CHUNK - 1) / GPU_CHUNK;
  const bool two_inputs = id == VECTOR_ADD || id == SAXPY;
  *c = (case_data){.id = id, .n = n};
  c->x = malloc(n * es);
  c->y = two_inputs ? malloc(n * es) : NULL;
  c->out = malloc((n + GUARD) * es);
  c->worst = calloc(chunks, sizeof *c->worst);
  c->first_bad = calloc(chunks, sizeof *c->first_bad);
  if (!c->x || (two_inputs && !c->y) || !c->out || !c->worst || !c->first_bad) {
    free(c->x), free(c->y), free(c->out), free(c->worst), free(c->first_bad);
    return false;
  }
  uint64_t s = seed;
  c->a = gpu_random_float(&s, -2.0f, 2.0f);
  gpu_parallel_for(n, seed, fill_inputs, c);
  return true;
}

static void case_free(case_data *c)
{
  free(c->x);
  free(c->y);
  free(c->out);
  free(c->worst);
  free(c->first_bad);
}

/* Check c->out (with its guard): whether it passes, and a sentence for the case's line in text. */
static bool check_case(case_data *c, char *text, size_t size)
{
  const size_t es = elem_size(c->id), n = c->n, chunks = (n + GPU_CHUNK - 1) / GPU_CHUNK;
  const size_t bad = gpu_parallel_for(n, 0, check_outputs, c);
  size_t guard_bad = 0, guard_first = 0;
  const unsigned char *guard = (const unsigned char *)c->out + n * es;
  for (size_t i = 0; i < GUARD * es; i++)
    if (guard[i] != 0xFF && guard_bad++ == 0)
      guard_first = i / es;
  double worst = 0;
  size_t first = SIZE_MAX;
  for (size_t k = 0; k < chunks; k++) {
    worst = c->worst[k] > worst ? c->worst[k] : worst;
    if (first == SIZE_MAX && c->first_bad[k] != SIZE_MAX)
      first = c->first_bad[k];
  }
  if (bad) {
    char what[512];
    describe_element(c, first, what, sizeof what);
    snprintf(text, size, "%zu of %zu elements wrong; first %s", bad, n, what);
    return false;
  }
  if (guard_bad) {
    snprintf(text, size, "wrote past the end: %zu bytes of the guard changed, first at element N+%zu",
             guard_bad, guard_first);
    return false;
  }
  if (c->id == VECTOR_ADD || c->id == RELU_F32)
    snprintf(text, size, "exact");
  else
    snprintf(text, size, "worst error %.3f of tolerance%s", worst,
             c->id == GELU_F16 || c->id == GELU_BF16 ? " (inputs uniform in [-5, 5])" : "");
  return true;
}

/* One kernel at one size. */
static void run_case(tl_context *ctx, tl_kernel *kernel, const struct kernel_spec *spec, size_t n,
                     uint64_t seed)
{
  const size_t es = elem_size(spec->id), in_bytes = n * es, out_bytes = (n + GUARD) * es;
  case_data c;
  tl_devptr dx = 0, dy = 0, dout = 0;
  const bool two_inputs = spec->id == VECTOR_ADD || spec->id == SAXPY;
  if (!case_init(&c, spec->id, n, seed)) {
    gpu_report(false, "%s N=%zu: out of host memory", spec->name, n);
    return;
  }

  tl_status st;
#define STEP(call)                                                                                       \
  do {                                                                                                   \
    if ((st = (call)) != TL_OK) {                                                                        \
      gpu_report(false, "%s N=%zu: %s: %s", spec->name, n, tl_status_name(st), tl_context_message(ctx)); \
      goto done;                                                                                         \
    }                                                                                                    \
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
#undef STEP

  char text[768];
  const bool ok = check_case(&c, text, sizeof text);
  gpu_report(ok, "%s N=%zu: %s", spec->name, n, text);

done:
  tl_free(ctx, dx);
  tl_free(ctx, dy);
  tl_free(ctx, dout);
  case_free(&c);
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
       3,
       TL_ERR_BAD_ARGUMENT,
       "argument 1 ('B'): expected a tensor of f32, got f16"},
      {"mismatched sizes",
       {tl_arg_tensor(a, TL_F32, 1, n), tl_arg_tensor(b, TL_F32, 1, n), tl_arg_tensor(c, TL_F32, 1, n_short)},
       3,
       TL_ERR_BAD_ARGUMENT,
       "size N is 1000 from argument 0 ('A') but 999 from argument 2 ('C')"},
      {"too few arguments",
       {tl_arg_tensor(a, TL_F32, 1, n), tl_arg_tensor(b, TL_F32, 1, n)},
       2,
       TL_ERR_BAD_ARGUMENT,
       "takes 3 arguments"},
      {"scalar for a tensor",
       {tl_arg_tensor(a, TL_F32, 1, n), tl_arg_f32(1.0f), tl_arg_tensor(c, TL_F32, 1, n)},
       3,
       TL_ERR_BAD_ARGUMENT,
       "argument 1 ('B'): expected a tensor of f32, got a scalar f32"},
      {"N = 0 launches nothing",
       {tl_arg_tensor(a, TL_F32, 1, zero), tl_arg_tensor(b, TL_F32, 1, zero),
        tl_arg_tensor(c, TL_F32, 1, zero)},
       3,
       TL_OK,
       ""},
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
    gpu_report(ok, "misuse: %s -> %s%s%s%s", cases[i].what, tl_status_name(st), *message ? ": " : "", message,
               untouched ? "" : " (BUT the output changed)");
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
    gpu_report(false, "runtime: scalar parameter layout: %s: %s", tl_status_name(st),
               tl_context_message(ctx));
    goto done;
  }
  const int64_t shape[1] = {7};
  const tl_arg args[7] = {tl_arg_tensor(out, TL_U64, 1, shape),
                          tl_arg_bool(true),
                          tl_arg_float(TL_F16, 1.5),
                          tl_arg_f32(2.5f),
                          tl_arg_f64(-3.25),
                          tl_arg_int(TL_I8, -7),
                          tl_arg_uint(TL_U32, 4000000000u)};
  if ((st = tl_launch(k, args, 7, NULL)) != TL_OK || (st = tl_synchronize(ctx)) != TL_OK ||
      (st = tl_memcpy_dtoh(ctx, host, out, sizeof host)) != TL_OK) {
    gpu_report(false, "runtime: scalar parameter layout: %s: %s", tl_status_name(st),
               tl_context_message(ctx));
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
             ok ? ""
                : " (expected 0x1 0x3e00 0x40200000 0xc00a000000000000 0xfffffffffffffff9 0xee6b2800 0x7)");
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
      {"metadata names a kernel the PTX lacks", "missing", "present", 32, 0, false, TL_ERR_BAD_METADATA,
       "the PTX has no .entry of that name"},
      {"threads above the kernel's .maxntid", "wide", "wide", 1024, 0, false, TL_ERR_BAD_METADATA,
       "at most 64 fit in a block"},
      {"dynamic shared memory above the device's limit", "huge", "huge", 64, 300000, false,
       TL_ERR_BAD_METADATA, "bytes of dynamic shared memory"},
      {"100000 bytes of dynamic shared memory (opt-in above 48 KiB)", "big", "big", 64, 100000, false, TL_OK,
       ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char body[1024], ptx[4096];
    if (cases[i].garbage)
      snprintf(body, sizeof body, ".visible .entry %s()\n{\n  this is not ptx;\n  ret;\n}\n", cases[i].entry);
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

/* ---------------------------------------------------------------------------------- self-test */

/* Host models of the kernels (f32 math, rounded to the output's type), correct and broken. */
typedef enum sfault {
  SF_NONE,
  SF_POISON,        /* the last element never written */
  SF_GUARD,         /* one element written past the end */
  SF_LAST_OFF,      /* the last element off */
  SF_ULP,           /* the last element one unit in the last place off (exact kernels) */
  SF_SHIFT,         /* element i holds element i + 1's result */
  SF_ADD_SUB,       /* vector_add: A - B */
  SF_SAXPY_NO_A,    /* saxpy: X + Y */
  SF_SAXPY_A_BF16,  /* saxpy: a rounded to bf16 */
  SF_GELU_NO_HALF,  /* gelu: x (1 + tanh(...)) */
  SF_GELU_NO_CUBIC, /* gelu: tanh(sqrt(2/pi) x) */
  SF_SILU_NO_X,     /* silu: sigmoid(x) */
  SF_SILU_OVERFLOW, /* silu: x e^x / (1 + e^x): NaN where e^x overflows f32 */
  SF_RELU_LEAKY,    /* relu: 0.01 x below 0 */
  SF_ERF_TANH,      /* gelu_erf: the tanh form */
  SF_ERF_NO_SQRT2,  /* gelu_erf: erf(x) for erf(x / sqrt(2)) */
  NSFAULTS
} sfault;

#define IDBIT(id) (1u << (id))
#define ALL_KERNELS ((1u << NKERNELS) - 1)

static const struct sfault_spec {
  const char *what;
  unsigned kernels; /* the kernels it applies to */
  size_t must_from; /* from this N on it must fail whatever it changed; below, where it changed an
                       output materially */
} sfaults[NSFAULTS] = {
    [SF_NONE] = {"as computed", ALL_KERNELS, 0},
    [SF_POISON] = {"last element never written", ALL_KERNELS, 1},
    [SF_GUARD] = {"a write past the end (into the guard)", ALL_KERNELS, 1},
    [SF_LAST_OFF] = {"last element off", ALL_KERNELS, 1},
    [SF_ULP] = {"last element one ulp off", IDBIT(VECTOR_ADD) | IDBIT(RELU_F32), 1},
    [SF_SHIFT] = {"results shifted by one element", ALL_KERNELS, 1000},
    [SF_ADD_SUB] = {"A - B", IDBIT(VECTOR_ADD), 1000},
    [SF_SAXPY_NO_A] = {"a ignored (X + Y)", IDBIT(SAXPY), 1000},
    [SF_SAXPY_A_BF16] = {"a rounded to bf16 (scaled wrong by up to 2^-9)", IDBIT(SAXPY), 1000},
    [SF_GELU_NO_HALF] = {"no factor 1/2", IDBIT(GELU_F16) | IDBIT(GELU_BF16), 1000},
    [SF_GELU_NO_CUBIC] = {"no cubic term", IDBIT(GELU_F16) | IDBIT(GELU_BF16), 1000},
    [SF_SILU_NO_X] = {"sigmoid(x) alone", IDBIT(SILU_F16) | IDBIT(SILU_BF16), 1000},
    [SF_SILU_OVERFLOW] = {"sigmoid as e^x / (1 + e^x) (overflows)", IDBIT(SILU_F16) | IDBIT(SILU_BF16), 1000},
    [SF_RELU_LEAKY] = {"0.01 x below 0 (leaky)", IDBIT(RELU_F32), 1000},
    [SF_ERF_TANH] = {"the tanh form of GELU", IDBIT(GELU_ERF_F32), 1000},
    [SF_ERF_NO_SQRT2] = {"erf(x) for erf(x / sqrt(2))", IDBIT(GELU_ERF_F32), 1000},
};

/* Output element i of kernel id under fault f (the faults of one element's value), in f32. */
static float model_elem(const case_data *c, size_t i, sfault f)
{
  const tl_dtype t = kernels[c->id].elem;
  switch (c->id) {
  case VECTOR_ADD: {
    const float a = ((const float *)c->x)[i], b = ((const float *)c->y)[i];
    return f == SF_ADD_SUB ? a - b : a + b;
  }
  case SAXPY: {
    const float x = ((const float *)c->x)[i], y = ((const float *)c->y)[i];
    const float a = f == SF_SAXPY_NO_A     ? 1.0f
                    : f == SF_SAXPY_A_BF16 ? tl_bf16_to_float(tl_bf16_from_float(c->a))
                                           : c->a;
    return fmaf(a, x, y);
  }
  case GELU_F16:
  case GELU_BF16: {
    const float v = (float)load_elem(t, c->x, i);
    const float inner = 0.7978845608f * (v + (f == SF_GELU_NO_CUBIC ? 0.0f : 0.044715f * v * v * v));
    return (f == SF_GELU_NO_HALF ? 1.0f : 0.5f) * v * (1.0f + tanhf(inner));
  }
  case SILU_F16:
  case SILU_BF16: {
    const float v = (float)load_elem(t, c->x, i);
    const float sig = f == SF_SILU_OVERFLOW ? expf(v) / (1.0f + expf(v)) : 1.0f / (1.0f + expf(-v));
    return f == SF_SILU_NO_X ? sig : v * sig;
  }
  case RELU_F32: {
    const float v = (float)load_elem(t, c->x, i);
    return f == SF_RELU_LEAKY && v < 0 ? 0.01f * v : fmaxf(v, 0.0f);
  }
  case GELU_ERF_F32:
  default: {
    const float v = (float)load_elem(t, c->x, i);
    if (f == SF_ERF_TANH)
      return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    return 0.5f * v * (1.0f + erff(f == SF_ERF_NO_SQRT2 ? v : v * 0.70710678118654752f));
  }
  }
}

typedef struct model_job {
  case_data *c;
  sfault f;
} model_job;

static size_t model_body(void *arg, size_t begin, size_t end, uint64_t seed)
{
  (void)seed;
  const model_job *mj = arg;
  case_data *c = mj->c;
  const tl_dtype t = kernels[c->id].elem;
  for (size_t i = begin; i < end; i++)
    store_elem(t, c->out, i, model_elem(c, mj->f == SF_SHIFT ? (i + 1) % c->n : i, mj->f));
  return 0;
}

/* c->out and its guard as the model with fault f computes them. */
static void model_output(case_data *c, sfault f)
{
  const tl_dtype t = kernels[c->id].elem;
  const size_t es = elem_size(c->id), n = c->n, last = n - 1;
  model_job mj = {c, f};
  gpu_parallel_for(n, 0, model_body, &mj);
  memset((unsigned char *)c->out + n * es, 0xFF, GUARD * es);
  const double v = load_elem(t, c->out, last);
  switch (f) {
  case SF_POISON: memset((unsigned char *)c->out + last * es, 0xFF, es); break;
  case SF_GUARD: store_elem(t, c->out, n, (float)v); break;
  case SF_LAST_OFF:
    store_elem(t, c->out, last, (float)(v + (v < 0 ? -1 : 1) * (0.25 * fabs(v) + 0.02)));
    break;
  case SF_ULP: store_elem(t, c->out, last, nextafterf((float)v, INFINITY)); break;
  default: break;
  }
}

/* Whether a broken model's output differs from the correct one's materially, whatever the checker's
 * tolerances: a guard byte, an element unwritten or NaN / infinite where the correct one is not, or
 * |bad - good| > 0.05 |good| + 0.01. */
static bool material(const case_data *c, const void *good)
{
  const tl_dtype t = kernels[c->id].elem;
  const size_t es = elem_size(c->id), n = c->n;
  if (memcmp((const unsigned char *)good + n * es, (const unsigned char *)c->out + n * es, GUARD * es))
    return true;
  for (size_t i = 0; i < n; i++) {
    const double g = load_elem(t, good, i), v = load_elem(t, c->out, i);
    if (is_poison(t, c->out, i) != is_poison(t, good, i) || (isfinite(g) && !isfinite(v)) ||
        fabs(v - g) > 0.05 * fabs(g) + 0.01)
      return true;
  }
  return false;
}

static int self_test(uint64_t seed)
{
  static const size_t st_sizes[] = {1, 7, 1000, (1u << 20) + 3};
  enum { NST = sizeof st_sizes / sizeof st_sizes[0] };
  int checks = 0, wrong = 0, models = 0;
  static int n_rejected[NKERNELS][NSFAULTS], n_material[NKERNELS][NSFAULTS], n_cases[NKERNELS][NSFAULTS];
  static double worst_ok[NKERNELS];
  for (int id = 0; id < NKERNELS; id++)
    for (size_t s = 0; s < NST; s++) {
      const size_t n = st_sizes[s], es = elem_size((kernel_id)id);
      case_data c;
      void *good = malloc((n + GUARD) * es);
      if (!good || !case_init(&c, (kernel_id)id, n, seed ^ (0x9E3779B97F4A7C15ull * (id * 16 + s + 1)))) {
        printf("gpu_suite self-test: out of host memory\n");
        free(good);
        return 1;
      }
      for (int f = 0; f < NSFAULTS; f++) {
        if (!(sfaults[f].kernels & IDBIT(id)))
          continue;
        model_output(&c, (sfault)f);
        if (f == SF_NONE)
          memcpy(good, c.out, (n + GUARD) * es);
        const bool mat = f != SF_NONE && material(&c, good);
        char text[768];
        const bool ok = check_case(&c, text, sizeof text);
        checks++;
        n_cases[id][f]++;
        n_rejected[id][f] += !ok;
        n_material[id][f] += mat;
        if (f == SF_NONE) {
          for (size_t k = 0; k < (n + GPU_CHUNK - 1) / GPU_CHUNK; k++)
            worst_ok[id] = fmax(worst_ok[id], c.worst[k]);
          if (!ok) {
            wrong++;
            printf("SELF-TEST WRONG %s N=%zu, correct model: checker said FAIL: %s\n", kernels[id].name, n,
                   text);
          }
        } else if (ok && (mat || n >= sfaults[f].must_from)) {
          wrong++;
          printf("SELF-TEST WRONG %s N=%zu, broken model '%s'%s: checker said PASS: %s\n", kernels[id].name,
                 n, sfaults[f].what, mat ? " (the output changed materially)" : "", text);
        }
      }
      case_free(&c);
      free(good);
    }
  for (int id = 0; id < NKERNELS; id++) {
    printf("self-test %s: correct model passes at N =", kernels[id].name);
    for (size_t s = 0; s < NST; s++)
      printf(" %zu", st_sizes[s]);
    printf(" (worst error %.3f of tolerance); broken models failed (failed / material / cases):",
           worst_ok[id]);
    for (int f = 1; f < NSFAULTS; f++)
      if (sfaults[f].kernels & IDBIT(id)) {
        models++;
        printf(" '%s' %d/%d/%d;", sfaults[f].what, n_rejected[id][f], n_material[id][f], n_cases[id][f]);
      }
    printf("\n");
  }
  printf("gpu_suite self-test: %d checks, %d wrong; %d broken models (kernel x fault)%s\n", checks, wrong,
         models, wrong ? "" : ", each failed wherever required");
  return wrong ? 1 : 0;
}

/* ------------------------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
  const char *dir = NULL;
  size_t max_size = SIZE_MAX;
  bool skip_missing = false, selftest = false, usage = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      i++;
    else if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
      max_size = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--skip-missing") == 0)
      skip_missing = true;
    else if (strcmp(argv[i], "--self-test") == 0)
      selftest = true;
    else if (!dir && argv[i][0] != '-')
      dir = argv[i];
    else
      usage = true;
  }
  if (usage || (!dir && !selftest)) {
    fprintf(stderr, "usage: gpu_suite PTXDIR [--seed S] [--max-size N] [--skip-missing]\n"
                    "       gpu_suite --self-test [--seed S]\n");
    return 1;
  }
  const uint64_t seed = gpu_seed_from_args(argc, argv, NULL);
  if (selftest) {
    printf("gpu_suite self-test: seed %llu (replay with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    return self_test(seed);
  }
  bool no_gpu;
  tl_context *ctx = gpu_open("gpu_suite", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  printf("gpu_suite: PTX from %s, seed %llu (replay with --seed %llu)\n", dir, (unsigned long long)seed,
         (unsigned long long)seed);

  tl_kernel *vector_add = NULL;
  tl_module *modules[NKERNELS] = {0};
  int ran = 0; /* kernels that ran their cases */
  for (size_t k = 0; k < NKERNELS; k++) {
    const struct kernel_spec *spec = &kernels[k];
    bool missing = false;
    /* kernels that share a file share a module; a file found missing is reported once per kernel */
    tl_module *m = NULL;
    for (size_t j = 0; j < k; j++)
      if (strcmp(kernels[j].file, spec->file) == 0 && modules[j])
        m = modules[j];
    tl_status st = m ? TL_OK : gpu_load(ctx, dir, spec->file, &m, &missing);
    if (st != TL_OK) {
      if (missing && skip_missing) {
        printf("SKIP %s: %s/%s not found\n", spec->name, dir, spec->file);
        gpu_skipped++;
      } else if (missing) {
        gpu_report(false,
                   "%s: %s/%s not found (tests/gpu/run.sh compiles it; --skip-missing skips a kernel "
                   "whose PTX is missing)",
                   spec->name, dir, spec->file);
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
    ran++;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      if (sizes[s] > max_size)
        continue;
      uint64_t case_seed = seed ^ (0x9E3779B97F4A7C15ull * (k * 16 + s + 1));
      run_case(ctx, kernel, spec, sizes[s], case_seed);
    }
    if (spec->id == VECTOR_ADD)
      vector_add = kernel;
  }
  if (ran == 0)
    gpu_report(false, "no kernel could be run: none of the expected PTX files loaded from %s", dir);
  if (vector_add)
    run_misuse(ctx, vector_add);
  else
    printf("SKIP misuse tests: they need vector_add.ptx\n"), gpu_skipped++;

  test_scalar_layout(ctx);
  test_load_failures(ctx);

  for (size_t k = 0; k < NKERNELS; k++) {
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
