/* gpu_gemm: correctness and speed of the tensor-core GEMM kernels: examples/matmul.tl (matmul) and
 * stdlib/gemm.tl (gemm_nn, gemm_nt, gemm_tn, gemm_bias_act, and gemm_softmax: correctness only), f16
 * and bf16 in and out, f32 accumulate, against a reference computed in double on the CPU and, for
 * speed, against cuBLAS in the same run.
 *
 *   gpu_gemm PTXDIR [--seed S] [--quick] [--max-work W] [--bench-out FILE] [--reps R] [--no-bench]
 *   gpu_gemm --probe-cublas      load cuBLAS only, say which library was found, exit 0 / 1
 *   gpu_gemm --self-test         check this program's references, layouts and checkers on the CPU
 *
 * PTXDIR   the PTX, one NAME.ptx per compiled variant, and gemm_variants.txt (written by
 *          tests/gpu/gemm.sh) listing them as "NAME ROLE T ACT SETTINGS..." lines, where ROLE is
 *            matmul  examples/matmul.tl at its defaults (kernel matmul): every correctness shape
 *            stages  matmul with another STAGES: the reduced shapes
 *            tune    matmul with other tile settings: the reduced shapes, and timed against cuBLAS
 *            stdlib  stdlib/gemm.tl, all five kernels in one module: the reduced shapes (gemm_softmax:
 *                    the softmax shapes)
 *            act     stdlib/gemm.tl compiled with --kernel gemm_bias_act: the reduced shapes
 *            softmax stdlib/gemm.tl compiled with --kernel gemm_softmax: the softmax shapes, and a
 *                    timing row (below)
 *          T is f16 or bf16, ACT the activation gemm_bias_act was compiled with (0 none, 1 ReLU,
 *          2 GELU-tanh; '-' for matmul and softmax), SETTINGS the -D flags, for the tables. Without the
 *          file the variants are matmul_{f16,bf16}, matmul_f16_s{1..4}, gemm_{f16,bf16} (ACT 1, the
 *          default), gemm_act{0,1,2}_f16 and gemm_softmax_{f16,bf16}. A listed file that is missing is
 *          skipped ("SKIP").
 * --seed   replay a run (the seed is always printed)
 * --quick  skip the correctness shapes 4096^3 and 8192^3 (the benchmark still runs them)
 * --max-work W  skip the correctness shapes with M*N*K above W (tests/gpu/sanitize.sh: small shapes
 *          under compute-sanitizer)
 * --bench-out FILE  also write the benchmark table to FILE (gemm.sh: OUTDIR/gemm_bench.txt)
 * --reps R timed runs per benchmark row (default 30, after 5 warm-up runs)
 * --no-bench  correctness only (also no gemm_softmax timing row)
 *
 * Correctness. Shapes M x N x K: 17x33x65, 1000^3, 4095x4097x123, 1x4096x4096, 4096x1x4096, 4096^3 and
 * 8192^3; the matmul role runs all of them, every other role all but 8192^3. For each (T, shape) the
 * logical A [M, K] and B [K, N] (and bias [N]) are drawn uniform in [-1, 1] and rounded to T, and are
 * stored in the layout each kernel takes (gemm_nt and gemm_bias_act read B as [N, K], gemm_tn reads A
 * as [K, M]), so every kernel computes the same product and shares one reference. C and a guard region
 * after it are poisoned with 0xFF bytes (a NaN in f16 and bf16) before every launch. The reference is
 * computed in double from the rounded inputs: in full when M*N*K <= 2^31, otherwise for 4096 sampled
 * elements (the four corners and random ones), each a K-long dot product; gemm_bias_act adds the bias
 * and applies its activation (ReLU, tanh-form GELU) in double. A case passes when
 *   - every element of C was written and is finite (the whole output is scanned, also when sampled),
 *     and the guard region after C is still poisoned;
 *   - the relative Frobenius error ||C - ref|| / ||ref|| over the checked elements is below 1e-2;
 *   - no checked element is off by more than rtol*|ref| + 1e-2*rms(ref), rtol being 2^-9 (f16) or
 *     2^-6 (bf16), four times the output's rounding: this catches a single wrong row, column or
 *     element, which the Frobenius norm of a large output averages away.
 *
 * gemm_softmax (C = softmax over each row of scale * A @ B^T, B stored [N, K]). Shapes M x N x K:
 * 17x33x65, 1000x128x1000, 4095x100x123, 1x4096x256, 4096x1x64, 1024x1000x512 and 300x129x64 (N = 128
 * and 129 straddle the default BN, so both the one-pass and the two-pass path run; with BN=64 more of
 * them take the second pass). A and B are drawn as above, then rows r = 1 (mod 4) of A are multiplied
 * by 8 and rows r = 3 (mod 4) by 128 (exactly): with scale = 1/sqrt(K) (passed as the f32 scalar
 * argument, tl_arg_f32) the logits of the other rows have a standard deviation of about 1/3 (a flat
 * softmax, where every column's value and the normalization show), of the x8 rows about 2.7 (peaked),
 * of the x128 rows about 43: logits beyond +-88, where exp overflows f32, so these rows are close to
 * one-hot and fail (inf / NaN / zeros) unless the kernel subtracts the true row max. The reference,
 * for every row when M*N*K <= 2^31 (all these shapes) and otherwise for 256 sampled rows (the first,
 * the last and random ones), is each row's N dot products in double, times the f32 scale, then the
 * softmax in double (max subtracted, exp, divided by the sum). A case passes when
 *   - the whole output was written and is finite, and the guard region after C is still poisoned;
 *   - in every checked row, every element satisfies |C - p| <= rtol*p + 1e-3*max(p over the row),
 *     rtol as above (2^-9 f16, 2^-6 bf16: four times the output's rounding, leaving three roundings'
 *     worth for the kernel's f32 logits, exp2 and division, whose relative errors are at most ~1e-4 here);
 *     the absolute term, relative to the row's largest probability since a row of 4096 has all its
 *     probabilities near 2.4e-4, covers f16's subnormal range (2^-25 absolute) and tiny
 *     probabilities of the peaked rows. A wrong column or row is off by ~e^(logit difference), tens
 *     of percent, a missing or wrong normalization by a factor;
 *   - every row of C (all rows, summed in double) sums to 1 within rtol + N*2^-25 for f16 (rtol for
 *     bf16): rounding each probability moves the sum by at most half an ulp of each, so by one
 *     quarter of rtol, plus half a subnormal per f16 element that underflows. The kernel's own row
 *     sums are f32 and self-consistent (the same exps are summed and divided). A kernel that does not
 *     divide by the sum, or takes the max / sum over the wrong columns (one column tile, per warp,
 *     including the padding past N), is off by a factor here.
 * The --self-test runs this checker on a CPU model of the kernel (f32, exp2, rounded to T), which
 * must pass, and on models of broken kernels (no division, scale ignored, max never subtracted, max
 * and sum over the first 64 columns / per 32-column group / over the padding too, max per group,
 * running sum not rescaled, columns shifted, a wrong row, one element off or poisoned, the guard
 * overwritten), which must fail wherever they change the output materially (a NaN, a row sum off by
 * 5%, or an element of a checked row off by 5% of its row's largest probability).
 * With the benchmark, each gemm_softmax variant is also timed once at 4096x128x4096 (median of R,
 * printed, not in the table: no peer and no verdict), and its output checked as above on sampled rows.
 * One PASS / FAIL line per case, the benchmark, then exactly "P passed, F failed".
 *
 * Benchmark (unless --no-bench). For f16 and bf16 at 4096^3, 8192^3 and 4095x4097x4096, on fresh random data:
 * every variant of role matmul or tune, and cuBLAS (cublasGemmEx, T in and out, f32 compute, default
 * algorithm, the row-major product computed as the column-major C^T = B^T A^T) in the same run. Each
 * is timed with CUDA events around the launch on the legacy default stream (5 warm-up runs, median of
 * R), then its output is checked as above (sampled); a variant with wrong results there counts as a
 * correctness failure and cannot win. TFLOP/s = 2*M*N*K / median time. For each dtype and shape the
 * best correct variant's ratio to cuBLAS decides the verdict (target 0.6). The verdicts are reported,
 * not enforced. cuBLAS is found with dlopen ($TILEC_CUBLAS_LIBRARY, libcublas.so.13, .so.12, .so, then
 * CUDA toolkits and Python site-packages); without it our TFLOP/s are reported and the peer is "n/a".
 *
 * Exit 0 if no correctness case failed, 1 otherwise (or if nothing ran), 2 if there is no GPU.
 */
#define _GNU_SOURCE /* dladdr */

#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"

enum { WARMUP = 5, DEFAULT_REPS = 30, SAMPLES = 4096, MAX_VARIANTS = 64, MAX_ENTRIES = 256 };
#define REL_TOL 1e-2
#define ELEM_ATOL 1e-2                    /* times rms(ref) */
#define TARGET 0.6
#define FULL_REF_MAX ((double)(1u << 31)) /* M*N*K up to which the reference is computed in full */
/* Elements after the end of C, poisoned and checked: a kernel that ignores the bounds of the last
 * row's tiles writes there. */
#define GUARD ((size_t)65536)


/* ------------------------------------------------------------------------------ f16 / bf16 */

static float lut_f16[65536], lut_bf16[65536];

static void init_luts(void)
{
  for (uint32_t i = 0; i < 65536; i++) {
    lut_f16[i] = tl_f16_to_float((uint16_t)i);
    lut_bf16[i] = tl_bf16_to_float((uint16_t)i);
  }
}

static inline const float *lut_of(tl_dtype t) { return t == TL_BF16 ? lut_bf16 : lut_f16; }

static inline uint16_t round_to(tl_dtype t, double x)
{
  return t == TL_BF16 ? tl_bf16_from_double(x) : tl_f16_from_double(x);
}

static inline bool bits_finite(tl_dtype t, uint16_t b)
{
  return t == TL_BF16 ? (b & 0x7F80u) != 0x7F80u : (b & 0x7C00u) != 0x7C00u;
}

/* Four times the output's rounding (half an ulp: 2^-11 for f16, 2^-8 for bf16). */
static double elem_rtol(tl_dtype t) { return t == TL_BF16 ? 0x1p-6 : 0x1p-9; }

static double activation(int act, double x)
{
  switch (act) {
  case 1: return x > 0 ? x : 0;
  case 2: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  default: return x;
  }
}

static const char *act_name(int act) { return act == 1 ? "ReLU" : act == 2 ? "GELU" : "none"; }

/* ------------------------------------------------------------------------- kernels and roles */

typedef enum op_kind { OP_MATMUL, OP_NN, OP_NT, OP_TN, OP_BIAS_ACT, OP_SOFTMAX, NOPS } op_kind;

static const struct op_spec {
  const char *kernel;
  bool a_t, b_t, bias; /* A stored [K, M], B stored [N, K], a bias vector */
  bool softmax;        /* row softmax of scale * A @ B^T; an f32 scalar `scale` after C */
} ops[NOPS] = {
    {"matmul", false, false, false, false},      {"gemm_nn", false, false, false, false},
    {"gemm_nt", false, true, false, false},      {"gemm_tn", true, false, false, false},
    {"gemm_bias_act", false, true, true, false}, {"gemm_softmax", false, true, false, true},
};

typedef enum role { ROLE_MATMUL, ROLE_STAGES, ROLE_TUNE, ROLE_STDLIB, ROLE_ACT, ROLE_SOFTMAX, NROLES } role;
static const char *const role_names[NROLES] = {"matmul", "stages", "tune", "stdlib", "act", "softmax"};

static bool role_is_matmul(role r) { return r == ROLE_MATMUL || r == ROLE_STAGES || r == ROLE_TUNE; }
static bool role_benched(role r) { return r == ROLE_MATMUL || r == ROLE_TUNE; }
static bool role_has_act(role r) { return r == ROLE_STDLIB || r == ROLE_ACT; }

static const struct shape {
  size_t m, n, k;
  bool all_roles; /* false: the matmul role only */
  bool big;       /* skipped by --quick */
} shapes[] = {
    {17, 33, 65, true, false},       {1000, 1000, 1000, true, false}, {4095, 4097, 123, true, false},
    {1, 4096, 4096, true, false},    {4096, 1, 4096, true, false},    {4096, 4096, 4096, true, true},
    {8192, 8192, 8192, false, true},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* 4095 x 4097 x 4096: rows of B and C that are not 16-byte multiples (no tensor maps: the cp.async
 * form, where matmul.tl picks FB = 1 at launch; the _fb variants are that choice compiled ahead) */
static const size_t bench_shapes[][3] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4095, 4097, 4096}};
#define NBENCH (sizeof bench_shapes / sizeof bench_shapes[0])

static const tl_dtype types[] = {TL_F16, TL_BF16};
#define NTYPES (sizeof types / sizeof types[0])

typedef enum variant_state { V_OK, V_MISSING, V_BROKEN } variant_state;

typedef struct variant {
  char name[96];      /* the PTX file's stem */
  char settings[256]; /* the -D flags, for the tables */
  role role;
  tl_dtype t;
  int act; /* -1 for matmul */
  variant_state state;
  tl_module *mod;
  tl_kernel *matmul; /* role matmul / stages / tune */
} variant;

/* One kernel to test: a variant's kernel for one operand layout. */
typedef struct entry {
  variant *v;
  op_kind op;
  tl_kernel *kernel;
} entry;

static bool role_from_name(const char *s, role *out)
{
  for (int r = 0; r < NROLES; r++)
    if (strcmp(s, role_names[r]) == 0) {
      *out = (role)r;
      return true;
    }
  return false;
}

/* PTXDIR/gemm_variants.txt; -1 if absent. */
static int read_manifest(const char *dir, variant *vs, int max)
{
  char path[4096 + 32];
  snprintf(path, sizeof path, "%s/gemm_variants.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[1024];
  int n = 0, lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash)
      *hash = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    char name[96], rolename[16], type[16], act[8];
    int used = 0;
    int got = sscanf(line, "%95s %15s %15s %7s %n", name, rolename, type, act, &used);
    if (got <= 0)
      continue;
    variant v = {.act = -1};
    snprintf(v.name, sizeof v.name, "%s", name);
    bool ok = got == 4 && role_from_name(rolename, &v.role) && tl_dtype_from_name(type, &v.t) &&
              (v.t == TL_F16 || v.t == TL_BF16);
    if (ok && role_has_act(v.role)) {
      char *end;
      long a = strtol(act, &end, 10);
      ok = *end == '\0' && a >= 0 && a <= 2;
      v.act = (int)a;
    }
    if (!ok) {
      gpu_report(false,
                 "%s line %d: expected \"NAME matmul|stages|tune|stdlib|act|softmax f16|bf16 ACT "
                 "SETTINGS...\" (ACT 0..2 for stdlib and act, '-' otherwise)",
                 path, lineno);
      continue;
    }
    if (n == max) {
      gpu_report(false, "%s: more than %d variants", path, max);
      break;
    }
    snprintf(v.settings, sizeof v.settings, "%s", got == 4 && used > 0 ? line + used : "");
    vs[n++] = v;
  }
  fclose(f);
  return n;
}

static int default_variants(variant *vs)
{
  static const struct {
    const char *name, *settings;
    role role;
    tl_dtype t;
    int act;
  } d[] = {
      {"matmul_f16", "T=f16", ROLE_MATMUL, TL_F16, -1},
      {"matmul_bf16", "T=bf16", ROLE_MATMUL, TL_BF16, -1},
      {"matmul_f16_s1", "T=f16 STAGES=1", ROLE_STAGES, TL_F16, -1},
      {"matmul_f16_s2", "T=f16 STAGES=2", ROLE_STAGES, TL_F16, -1},
      {"matmul_f16_s3", "T=f16 STAGES=3", ROLE_STAGES, TL_F16, -1},
      {"matmul_f16_s4", "T=f16 STAGES=4", ROLE_STAGES, TL_F16, -1},
      {"gemm_f16", "T=f16", ROLE_STDLIB, TL_F16, 1},
      {"gemm_bf16", "T=bf16", ROLE_STDLIB, TL_BF16, 1},
      {"gemm_act0_f16", "T=f16 ACT=0", ROLE_ACT, TL_F16, 0},
      {"gemm_act1_f16", "T=f16 ACT=1", ROLE_ACT, TL_F16, 1},
      {"gemm_act2_f16", "T=f16 ACT=2", ROLE_ACT, TL_F16, 2},
      {"gemm_softmax_f16", "T=f16", ROLE_SOFTMAX, TL_F16, -1},
      {"gemm_softmax_bf16", "T=bf16", ROLE_SOFTMAX, TL_BF16, -1},
  };
  int n = 0;
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
    variant v = {.role = d[i].role, .t = d[i].t, .act = d[i].act};
    snprintf(v.name, sizeof v.name, "%s", d[i].name);
    snprintf(v.settings, sizeof v.settings, "%s", d[i].settings);
    vs[n++] = v;
  }
  return n;
}

/* Load NAME.ptx and add one entry per kernel its role tests. */
static void load_variant(tl_context *ctx, const char *dir, variant *v, entry *es, int *nes)
{
  char file[128];
  snprintf(file, sizeof file, "%s.ptx", v->name);
  bool missing = false;
  tl_status st = gpu_load(ctx, dir, file, &v->mod, &missing);
  if (st != TL_OK) {
    if (missing) {
      v->state = V_MISSING;
      printf("SKIP %s: %s/%s not found\n", v->name, dir, file);
      gpu_skipped++;
    } else {
      v->state = V_BROKEN;
      gpu_report(false, "%s: loading %s: %s: %s", v->name, file, tl_status_name(st), tl_context_message(ctx));
    }
    return;
  }
  op_kind list[5];
  int nops = 0;
  if (role_is_matmul(v->role)) {
    list[nops++] = OP_MATMUL;
  } else if (v->role == ROLE_STDLIB) {
    list[nops++] = OP_NN, list[nops++] = OP_NT, list[nops++] = OP_TN, list[nops++] = OP_BIAS_ACT;
    list[nops++] = OP_SOFTMAX;
  } else if (v->role == ROLE_SOFTMAX) {
    list[nops++] = OP_SOFTMAX;
  } else {
    list[nops++] = OP_BIAS_ACT;
  }
  v->state = V_OK;
  for (int i = 0; i < nops; i++) {
    const op_kind op = list[i];
    tl_kernel *k = NULL;
    if ((st = tl_module_get_kernel(v->mod, ops[op].kernel, &k)) != TL_OK) {
      v->state = V_BROKEN;
      gpu_report(false, "%s: %s: %s", v->name, tl_status_name(st), tl_context_message(ctx));
      continue;
    }
    const tl_kernel_info *info = tl_kernel_get_info(k);
    const int want_args = ops[op].bias || ops[op].softmax ? 4 : 3;
    if (info->nargs != want_args || info->params[0].dtype != v->t || info->params[0].rank != 2) {
      v->state = V_BROKEN;
      gpu_report(false,
                 "%s: kernel %s takes %d arguments, A of %s; expected %d and %s (the variant list's T)",
                 v->name, ops[op].kernel, info->nargs,
                 info->nargs ? tl_dtype_name(info->params[0].dtype) : "?", want_args, tl_dtype_name(v->t));
      continue;
    }
    if (ops[op].softmax && (info->params[3].kind != TL_PARAM_SCALAR || info->params[3].dtype != TL_F32)) {
      v->state = V_BROKEN;
      gpu_report(false, "%s: kernel %s: argument 3 ('%s') is not an f32 scalar (expected scale: f32)",
                 v->name, ops[op].kernel, info->params[3].name);
      continue;
    }
    printf("     %s: %s threads=%u smem=%u grid = (%s) (%s) [%s]\n", v->name, ops[op].kernel, info->threads,
           info->smem, info->grid_text[0], info->grid_text[1], v->settings);
    if (op == OP_MATMUL)
      v->matmul = k;
    if (*nes < MAX_ENTRIES)
      es[(*nes)++] = (entry){v, op, k};
  }
}

/* ------------------------------------------------------------------------------ parallel groups */

/* Run fn(arg, g) for g in [0, ngroups) on all cores: group g is chunk g of gpu_parallel_for. */
typedef void (*group_fn)(void *arg, size_t g);
typedef struct group_job {
  group_fn fn;
  void *arg;
} group_job;

static size_t group_body(void *p, size_t begin, size_t end, uint64_t seed)
{
  (void)end, (void)seed;
  const group_job *j = p;
  j->fn(j->arg, begin / GPU_CHUNK);
  return 0;
}

static void parallel_groups(size_t ngroups, group_fn fn, void *arg)
{
  group_job j = {fn, arg};
  gpu_parallel_for(ngroups * GPU_CHUNK, 0, group_body, &j);
}

/* ---------------------------------------------------------------------------------- datasets */


/* One (T, M, N, K): the logical operands, the reference of A @ B, device copies in the layouts the
 * kernels want, and room for the output. */
typedef struct dataset {
  tl_dtype t;
  size_t m, n, k;
  uint16_t *a, *b, *bias; /* A [M, K], B [K, N], bias [N] */
  bool full;              /* ref holds all of A @ B, else nsamples sampled elements */
  double *ref;
  size_t nsamples, *si, *sj;
  uint16_t *c; /* the output as downloaded: M*N + GUARD */
  tl_devptr da, db, dat, dbt, dbias, dc;
  /* gemm_softmax datasets (softmax_init) instead: ref holds, for each checked row q < nrows (row
   * rows[q] of C), its N softmax probabilities; full means every row is checked (rows[q] == q). */
  bool softmax;
  float scale; /* the kernel's f32 argument: 1/sqrt(K) */
  size_t nrows, *rows;
} dataset;

/* Row i of the product A @ B in double, from the rounded inputs, into out[0 .. n). */
static void ref_row(const dataset *ds, const float *lut, size_t i, double *out)
{
  const size_t n = ds->n, k = ds->k;
  for (size_t c = 0; c < n; c++)
    out[c] = 0;
  for (size_t kk = 0; kk < k; kk++) {
    const double a = lut[ds->a[i * k + kk]];
    if (a == 0)
      continue;
    const uint16_t *brow = ds->b + kk * n;
    for (size_t c = 0; c < n; c++)
      out[c] += a * lut[brow[c]];
  }
}

typedef struct fill_job {
  tl_dtype t;
  uint16_t *p;
} fill_job;

static size_t fill_body(void *arg, size_t begin, size_t end, uint64_t seed)
{
  const fill_job *f = arg;
  uint64_t s = seed;
  for (size_t i = begin; i < end; i++)
    f->p[i] = f->t == TL_BF16 ? tl_bf16_from_float(gpu_random_float(&s, -1.0f, 1.0f))
                              : tl_f16_from_float(gpu_random_float(&s, -1.0f, 1.0f));
  return 0;
}

static void fill(tl_dtype t, uint16_t *p, size_t n, uint64_t seed)
{
  fill_job f = {t, p};
  gpu_parallel_for(n, seed, fill_body, &f);
}

typedef struct ref_job {
  const dataset *ds;
  size_t rows_per_group;
} ref_job;

static void ref_rows(void *arg, size_t g)
{
  const ref_job *j = arg;
  const dataset *ds = j->ds;
  const float *lut = lut_of(ds->t);
  const size_t n = ds->n;
  const size_t r0 = g * j->rows_per_group;
  const size_t r1 = r0 + j->rows_per_group < ds->m ? r0 + j->rows_per_group : ds->m;
  for (size_t i = r0; i < r1; i++)
    ref_row(ds, lut, i, ds->ref + i * n);
}

enum { SAMPLES_PER_GROUP = 64 };

static void ref_samples(void *arg, size_t g)
{
  const dataset *ds = arg;
  const float *lut = lut_of(ds->t);
  const size_t s1 = (g + 1) * SAMPLES_PER_GROUP < ds->nsamples ? (g + 1) * SAMPLES_PER_GROUP : ds->nsamples;
  for (size_t s = g * SAMPLES_PER_GROUP; s < s1; s++) {
    const size_t i = ds->si[s], j = ds->sj[s];
    double acc = 0;
    for (size_t kk = 0; kk < ds->k; kk++)
      acc += (double)lut[ds->a[i * ds->k + kk]] * lut[ds->b[kk * ds->n + j]];
    ds->ref[s] = acc;
  }
}

static void dataset_free(tl_context *ctx, dataset *ds)
{
  if (ctx) {
    tl_free(ctx, ds->da);
    tl_free(ctx, ds->db);
    tl_free(ctx, ds->dat);
    tl_free(ctx, ds->dbt);
    tl_free(ctx, ds->dbias);
    tl_free(ctx, ds->dc);
  }
  free(ds->a);
  free(ds->b);
  free(ds->bias);
  free(ds->ref);
  free(ds->si);
  free(ds->sj);
  free(ds->rows);
  free(ds->c);
  memset(ds, 0, sizeof *ds);
}

/* Random operands and their reference; host only. false (having printed why) when out of memory. */
static bool dataset_init(dataset *ds, tl_dtype t, size_t m, size_t n, size_t k, uint64_t seed,
                         bool force_sampled)
{
  memset(ds, 0, sizeof *ds);
  ds->t = t, ds->m = m, ds->n = n, ds->k = k;
  ds->full = !force_sampled && (double)m * (double)n * (double)k <= FULL_REF_MAX;
  ds->nsamples = ds->full ? 0 : SAMPLES;
  ds->a = malloc(m * k * sizeof *ds->a);
  ds->b = malloc(k * n * sizeof *ds->b);
  ds->bias = malloc(n * sizeof *ds->bias);
  ds->c = malloc((m * n + GUARD) * sizeof *ds->c);
  ds->ref = malloc((ds->full ? m * n : ds->nsamples) * sizeof *ds->ref);
  if (!ds->full) {
    ds->si = malloc(ds->nsamples * sizeof *ds->si);
    ds->sj = malloc(ds->nsamples * sizeof *ds->sj);
  }
  if (!ds->a || !ds->b || !ds->bias || !ds->c || !ds->ref || (!ds->full && (!ds->si || !ds->sj))) {
    printf("gpu_gemm: out of host memory for %zux%zux%zu\n", m, n, k);
    dataset_free(NULL, ds);
    return false;
  }
  uint64_t s = seed;
  const uint64_t sa = gpu_next_random(&s), sb = gpu_next_random(&s), sbias = gpu_next_random(&s);
  fill(t, ds->a, m * k, sa);
  fill(t, ds->b, k * n, sb);
  fill(t, ds->bias, n, sbias);
  if (ds->full) {
    size_t rpg = ((size_t)1 << 22) / (n * k + 1);
    rpg = rpg ? rpg : 1;
    ref_job j = {ds, rpg};
    parallel_groups((m + rpg - 1) / rpg, ref_rows, &j);
  } else {
    /* the corners first (edge tiles), then random elements */
    const size_t corner_i[4] = {0, 0, m - 1, m - 1}, corner_j[4] = {0, n - 1, 0, n - 1};
    for (size_t q = 0; q < ds->nsamples; q++) {
      ds->si[q] = q < 4 ? corner_i[q] : (size_t)(gpu_next_random(&s) % m);
      ds->sj[q] = q < 4 ? corner_j[q] : (size_t)(gpu_next_random(&s) % n);
    }
    parallel_groups((ds->nsamples + SAMPLES_PER_GROUP - 1) / SAMPLES_PER_GROUP, ref_samples, ds);
  }
  return true;
}

/* ------------------------------------------------------------------------- softmax datasets */

/* Rows of C checked against the reference when M*N*K is over FULL_REF_MAX (the first and the last
 * among them); the row sums are checked on every row regardless. */
enum { SM_SAMPLE_ROWS = 256, SM_ROWS_PER_GROUP = 16 };

/* The factor row r of A is multiplied by (exact: a power of two). With inputs in [-1, 1] and scale
 * 1/sqrt(K) the logits of a plain row have a standard deviation of about 1/3: a flat softmax, which
 * checks every column's value and the normalization. Rows of factor 8 (std ~2.7) are peaked; rows of
 * factor 128 (std ~43, i.e. logits beyond +-88, where exp overflows f32) are close to one-hot and
 * check the row max: without the right one exp overflows or the row underflows to zeros. */
static double sm_row_factor(size_t r) { return r % 4 == 1 ? 8.0 : r % 4 == 3 ? 128.0 : 1.0; }

typedef struct sm_ref_job {
  const dataset *ds;
} sm_ref_job;

/* Reference rows [g*SM_ROWS_PER_GROUP, ...): the N dot products in double, times scale, then the
 * softmax in double (the max subtracted, exp, divided by the sum). */
static void sm_ref_rows(void *arg, size_t g)
{
  const dataset *ds = ((const sm_ref_job *)arg)->ds;
  const float *lut = lut_of(ds->t);
  const size_t n = ds->n;
  const size_t q0 = g * SM_ROWS_PER_GROUP;
  const size_t q1 = q0 + SM_ROWS_PER_GROUP < ds->nrows ? q0 + SM_ROWS_PER_GROUP : ds->nrows;
  for (size_t q = q0; q < q1; q++) {
    const size_t i = ds->rows[q];
    double *p = ds->ref + q * n;
    ref_row(ds, lut, i, p);
    double mx = -INFINITY, sum = 0;
    for (size_t c = 0; c < n; c++) {
      p[c] *= (double)ds->scale;
      mx = p[c] > mx ? p[c] : mx;
    }
    for (size_t c = 0; c < n; c++)
      sum += p[c] = exp(p[c] - mx);
    for (size_t c = 0; c < n; c++)
      p[c] /= sum;
  }
}

/* Random operands for gemm_softmax (A [M, K] with the rows scaled by sm_row_factor, B [K, N] logical:
 * uploaded as [N, K]) and the reference probabilities of the checked rows: every row when M*N*K <=
 * FULL_REF_MAX (or M <= SM_SAMPLE_ROWS) and not force_sampled, else SM_SAMPLE_ROWS rows, the first,
 * the last and random ones. Host only. false (having printed why) when out of memory. */
static bool softmax_init(dataset *ds, tl_dtype t, size_t m, size_t n, size_t k, uint64_t seed,
                         bool force_sampled)
{
  memset(ds, 0, sizeof *ds);
  ds->t = t, ds->m = m, ds->n = n, ds->k = k;
  ds->softmax = true;
  ds->scale = (float)(1.0 / sqrt((double)k));
  ds->full = (!force_sampled && (double)m * (double)n * (double)k <= FULL_REF_MAX) || m <= SM_SAMPLE_ROWS;
  ds->nrows = ds->full ? m : SM_SAMPLE_ROWS;
  ds->a = malloc(m * k * sizeof *ds->a);
  ds->b = malloc(k * n * sizeof *ds->b);
  ds->c = malloc((m * n + GUARD) * sizeof *ds->c);
  ds->ref = malloc(ds->nrows * n * sizeof *ds->ref);
  ds->rows = malloc(ds->nrows * sizeof *ds->rows);
  if (!ds->a || !ds->b || !ds->c || !ds->ref || !ds->rows) {
    printf("gpu_gemm: out of host memory for softmax %zux%zux%zu\n", m, n, k);
    dataset_free(NULL, ds);
    return false;
  }
  uint64_t s = seed;
  const uint64_t sa = gpu_next_random(&s), sb = gpu_next_random(&s);
  fill(t, ds->a, m * k, sa);
  fill(t, ds->b, k * n, sb);
  const float *lut = lut_of(t);
  for (size_t i = 0; i < m; i++) {
    const double f = sm_row_factor(i);
    if (f != 1.0)
      for (size_t kk = 0; kk < k; kk++)
        ds->a[i * k + kk] = round_to(t, f * lut[ds->a[i * k + kk]]);
  }
  for (size_t q = 0; q < ds->nrows; q++)
    ds->rows[q] = ds->full ? q : q == 0 ? 0 : q == 1 ? m - 1 : (size_t)(gpu_next_random(&s) % m);
  sm_ref_job j = {ds};
  parallel_groups((ds->nrows + SM_ROWS_PER_GROUP - 1) / SM_ROWS_PER_GROUP, sm_ref_rows, &j);
  return true;
}

/* src [rows, cols] -> dst [cols, rows] */
typedef struct transpose_job {
  const uint16_t *src;
  uint16_t *dst;
  size_t rows, cols;
} transpose_job;

enum { TRANSPOSE_GROUP = 64 }; /* dst rows per group */

static void transpose_group(void *arg, size_t g)
{
  const transpose_job *j = arg;
  const size_t c0 = g * TRANSPOSE_GROUP, c1 = c0 + TRANSPOSE_GROUP < j->cols ? c0 + TRANSPOSE_GROUP : j->cols;
  for (size_t r = 0; r < j->rows; r++)
    for (size_t c = c0; c < c1; c++)
      j->dst[c * j->rows + r] = j->src[r * j->cols + c];
}

static void transpose(const uint16_t *src, uint16_t *dst, size_t rows, size_t cols)
{
  transpose_job j = {src, dst, rows, cols};
  parallel_groups((cols + TRANSPOSE_GROUP - 1) / TRANSPOSE_GROUP, transpose_group, &j);
}

/* A as the kernel of `op` reads it: [M, K], or [K, M] for gemm_tn (a new buffer, or NULL). */
static uint16_t *layout_a(const dataset *ds, op_kind op)
{
  if (!ops[op].a_t)
    return ds->a;
  uint16_t *p = malloc(ds->m * ds->k * sizeof *p);
  if (p)
    transpose(ds->a, p, ds->m, ds->k);
  return p;
}

/* B as the kernel of `op` reads it: [K, N], or [N, K] for gemm_nt / gemm_bias_act. */
static uint16_t *layout_b(const dataset *ds, op_kind op)
{
  if (!ops[op].b_t)
    return ds->b;
  uint16_t *p = malloc(ds->k * ds->n * sizeof *p);
  if (p)
    transpose(ds->b, p, ds->k, ds->n);
  return p;
}

/* Make sure the device holds the operands `op` reads, and C. */
static tl_status dataset_upload(tl_context *ctx, dataset *ds, op_kind op)
{
  const size_t m = ds->m, n = ds->n, k = ds->k;
  tl_status st = TL_OK;
  tl_devptr *da = ops[op].a_t ? &ds->dat : &ds->da, *db = ops[op].b_t ? &ds->dbt : &ds->db;
  if (!ds->dc && (st = tl_malloc(ctx, (m * n + GUARD) * 2, &ds->dc)) != TL_OK)
    return st;
  if (!*da) {
    uint16_t *host = layout_a(ds, op);
    if (!host)
      return TL_ERR_OUT_OF_MEMORY;
    if ((st = tl_malloc(ctx, m * k * 2, da)) == TL_OK)
      st = tl_memcpy_htod(ctx, *da, host, m * k * 2);
    if (host != ds->a)
      free(host);
    if (st != TL_OK)
      return st;
  }
  if (!*db) {
    uint16_t *host = layout_b(ds, op);
    if (!host)
      return TL_ERR_OUT_OF_MEMORY;
    if ((st = tl_malloc(ctx, k * n * 2, db)) == TL_OK)
      st = tl_memcpy_htod(ctx, *db, host, k * n * 2);
    if (host != ds->b)
      free(host);
    if (st != TL_OK)
      return st;
  }
  if (ops[op].bias && !ds->dbias) {
    if ((st = tl_malloc(ctx, n * 2, &ds->dbias)) == TL_OK)
      st = tl_memcpy_htod(ctx, ds->dbias, ds->bias, n * 2);
  }
  return st;
}

/* The launch arguments in .tl order; shapes must outlive the launch call. */
static int make_args(const dataset *ds, op_kind op, int64_t shapes_[4][2], tl_arg *args)
{
  const int64_t m = (int64_t)ds->m, n = (int64_t)ds->n, k = (int64_t)ds->k;
  const tl_dtype t = ds->t;
  int nargs = 0;
  if (ops[op].a_t) {
    shapes_[0][0] = k, shapes_[0][1] = m;
    args[nargs++] = tl_arg_tensor(ds->dat, t, 2, shapes_[0]);
  } else {
    shapes_[0][0] = m, shapes_[0][1] = k;
    args[nargs++] = tl_arg_tensor(ds->da, t, 2, shapes_[0]);
  }
  if (ops[op].b_t) {
    shapes_[1][0] = n, shapes_[1][1] = k;
    args[nargs++] = tl_arg_tensor(ds->dbt, t, 2, shapes_[1]);
  } else {
    shapes_[1][0] = k, shapes_[1][1] = n;
    args[nargs++] = tl_arg_tensor(ds->db, t, 2, shapes_[1]);
  }
  if (ops[op].bias) {
    shapes_[2][0] = n;
    args[nargs++] = tl_arg_tensor(ds->dbias, t, 1, shapes_[2]);
  }
  shapes_[3][0] = m, shapes_[3][1] = n;
  args[nargs++] = tl_arg_tensor(ds->dc, t, 2, shapes_[3]);
  if (ops[op].softmax)
    args[nargs++] = tl_arg_f32(ds->scale); /* encoded by the runtime as a 4-byte f32 parameter */
  return nargs;
}

/* ------------------------------------------------------------------------------- the checker */

typedef struct verdict {
  size_t elems, unwritten, nonfinite, first_bad; /* whole-output scan; first_bad SIZE_MAX if none */
  size_t guard_bad;
  size_t checked, over, worst_at; /* elements compared with the reference; worst_at a flat index */
  double rel, worst, worst_got, worst_ref, rms, rtol;
  bool oom;
} verdict;

static bool verdict_ok(const verdict *v)
{
  return !v->oom && v->unwritten == 0 && v->nonfinite == 0 && v->guard_bad == 0 && v->over == 0 &&
         v->checked > 0 && v->rel < REL_TOL;
}

typedef struct scan_job {
  const dataset *ds;
  size_t *unwritten, *first; /* per chunk */
} scan_job;

/* Counts non-finite elements (poison included); the poisoned ones and the first bad go per chunk. */
static size_t scan_body(void *arg, size_t begin, size_t end, uint64_t seed)
{
  (void)seed;
  const scan_job *j = arg;
  const size_t chunk = begin / GPU_CHUNK;
  size_t bad = 0, unwritten = 0, first = SIZE_MAX;
  for (size_t i = begin; i < end; i++) {
    const uint16_t b = j->ds->c[i];
    if (!bits_finite(j->ds->t, b)) {
      if (bad++ == 0)
        first = i;
      unwritten += b == 0xFFFFu;
    }
  }
  j->unwritten[chunk] = unwritten;
  j->first[chunk] = first;
  return bad;
}

typedef struct err_job {
  const dataset *ds;
  op_kind op;
  int act;
  size_t rows_per_group;
  double atol, rtol;
  double *sum_err2, *sum_ref2, *worst;
  size_t *over, *worst_at;
} err_job;

static inline double ref_value(const dataset *ds, op_kind op, int act, double dot, size_t j)
{
  return ops[op].bias ? activation(act, dot + lut_of(ds->t)[ds->bias[j]]) : dot;
}

/* Pass 1 over a group of rows: the sums of squares. */
static void err_sums(void *arg, size_t g)
{
  const err_job *e = arg;
  const dataset *ds = e->ds;
  const float *lut = lut_of(ds->t);
  const size_t r0 = g * e->rows_per_group,
               r1 = r0 + e->rows_per_group < ds->m ? r0 + e->rows_per_group : ds->m;
  double se = 0, sr = 0;
  for (size_t i = r0; i < r1; i++)
    for (size_t j = 0; j < ds->n; j++) {
      const size_t x = i * ds->n + j;
      const double ref = ref_value(ds, e->op, e->act, ds->ref[x], j);
      sr += ref * ref;
      if (bits_finite(ds->t, ds->c[x])) {
        const double d = lut[ds->c[x]] - ref;
        se += d * d;
      }
    }
  e->sum_err2[g] = se;
  e->sum_ref2[g] = sr;
}

/* Pass 2: each element against its tolerance. */
static void err_elems(void *arg, size_t g)
{
  const err_job *e = arg;
  const dataset *ds = e->ds;
  const float *lut = lut_of(ds->t);
  const size_t r0 = g * e->rows_per_group,
               r1 = r0 + e->rows_per_group < ds->m ? r0 + e->rows_per_group : ds->m;
  double worst = -1;
  size_t over = 0, worst_at = 0;
  for (size_t i = r0; i < r1; i++)
    for (size_t j = 0; j < ds->n; j++) {
      const size_t x = i * ds->n + j;
      if (!bits_finite(ds->t, ds->c[x]))
        continue;
      const double ref = ref_value(ds, e->op, e->act, ds->ref[x], j);
      const double r = fabs(lut[ds->c[x]] - ref) / (e->atol + e->rtol * fabs(ref));
      over += !(r <= 1.0);
      if (r > worst)
        worst = r, worst_at = x;
    }
  e->worst[g] = worst;
  e->over[g] = over;
  e->worst_at[g] = worst_at;
}

/* The whole output: how many elements are still poison (unwritten) and how many written ones are
 * NaN or infinite, the first of either (SIZE_MAX if none), and how many guard elements after C
 * changed. false when out of memory. */
static bool scan_output(const dataset *ds, size_t *unwritten, size_t *nonfinite, size_t *first_bad,
                        size_t *guard_bad)
{
  const size_t elems = ds->m * ds->n;
  *unwritten = *nonfinite = *guard_bad = 0;
  *first_bad = SIZE_MAX;
  const size_t nchunks = (elems + GPU_CHUNK - 1) / GPU_CHUNK;
  scan_job sj = {ds, calloc(nchunks, sizeof(size_t)), calloc(nchunks, sizeof(size_t))};
  if (!sj.unwritten || !sj.first) {
    free(sj.unwritten);
    free(sj.first);
    return false;
  }
  *nonfinite = gpu_parallel_for(elems, 0, scan_body, &sj);
  for (size_t q = 0; q < nchunks; q++) {
    *unwritten += sj.unwritten[q];
    if (*first_bad == SIZE_MAX && sj.first[q] != SIZE_MAX)
      *first_bad = sj.first[q];
  }
  *nonfinite -= *unwritten; /* written, but NaN or infinite */
  free(sj.unwritten);
  free(sj.first);
  for (size_t q = 0; q < GUARD; q++)
    *guard_bad += ds->c[elems + q] != 0xFFFFu;
  return true;
}

/* Check ds->c (as downloaded, guard included) for kernel `op` with activation `act`. */
static void check_output(const dataset *ds, op_kind op, int act, verdict *v)
{
  memset(v, 0, sizeof *v);
  const size_t elems = ds->m * ds->n;
  const float *lut = lut_of(ds->t);
  v->elems = elems;
  v->rtol = elem_rtol(ds->t);

  /* the whole output: written and finite */
  if (!scan_output(ds, &v->unwritten, &v->nonfinite, &v->first_bad, &v->guard_bad)) {
    v->oom = true;
    return;
  }

  /* against the reference */
  double se = 0, sr = 0;
  if (ds->full) {
    size_t rpg = 65536 / ds->n;
    rpg = rpg ? rpg : 1;
    const size_t ngroups = (ds->m + rpg - 1) / rpg;
    err_job e = {ds,
                 op,
                 act,
                 rpg,
                 0,
                 v->rtol,
                 calloc(ngroups, sizeof(double)),
                 calloc(ngroups, sizeof(double)),
                 calloc(ngroups, sizeof(double)),
                 calloc(ngroups, sizeof(size_t)),
                 calloc(ngroups, sizeof(size_t))};
    if (!e.sum_err2 || !e.sum_ref2 || !e.worst || !e.over || !e.worst_at) {
      v->oom = true;
    } else {
      parallel_groups(ngroups, err_sums, &e);
      for (size_t g = 0; g < ngroups; g++)
        se += e.sum_err2[g], sr += e.sum_ref2[g];
      v->rms = sqrt(sr / (double)elems);
      e.atol = ELEM_ATOL * v->rms;
      parallel_groups(ngroups, err_elems, &e);
      v->worst = -1;
      for (size_t g = 0; g < ngroups; g++) {
        v->over += e.over[g];
        if (e.worst[g] > v->worst)
          v->worst = e.worst[g], v->worst_at = e.worst_at[g];
      }
      v->checked = elems - v->unwritten - v->nonfinite;
      if (v->worst >= 0) {
        v->worst_got = lut[ds->c[v->worst_at]];
        v->worst_ref = ref_value(ds, op, act, ds->ref[v->worst_at], v->worst_at % ds->n);
      }
    }
    free(e.sum_err2);
    free(e.sum_ref2);
    free(e.worst);
    free(e.over);
    free(e.worst_at);
  } else {
    for (size_t q = 0; q < ds->nsamples; q++) {
      const double ref = ref_value(ds, op, act, ds->ref[q], ds->sj[q]);
      sr += ref * ref;
    }
    v->rms = sqrt(sr / (double)ds->nsamples);
    const double atol = ELEM_ATOL * v->rms;
    v->worst = -1;
    for (size_t q = 0; q < ds->nsamples; q++) {
      const size_t x = ds->si[q] * ds->n + ds->sj[q];
      if (!bits_finite(ds->t, ds->c[x]))
        continue;
      const double ref = ref_value(ds, op, act, ds->ref[q], ds->sj[q]), got = lut[ds->c[x]];
      se += (got - ref) * (got - ref);
      const double r = fabs(got - ref) / (atol + v->rtol * fabs(ref));
      v->over += !(r <= 1.0);
      v->checked++;
      if (r > v->worst)
        v->worst = r, v->worst_at = x, v->worst_got = got, v->worst_ref = ref;
    }
  }
  v->rel = sr > 0 ? sqrt(se / sr) : (se > 0 ? INFINITY : 0);
}

/* Appends to buf (of size bytes, len used) like snprintf; returns the new length. */
static int appendf(char *buf, size_t size, int len, const char *fmt, ...)
{
  if ((size_t)len >= size)
    return len;
  va_list ap;
  va_start(ap, fmt);
  len += vsnprintf(buf + len, size - (size_t)len, fmt, ap);
  va_end(ap);
  return len;
}

/* The whole-output scan's findings (both checkers), into buf; -1 if the checker ran out of memory. */
static int describe_scan(const dataset *ds, bool oom, size_t elems, size_t unwritten, size_t nonfinite,
                         size_t first_bad, size_t guard_bad, char *buf, size_t size)
{
  int len = 0;
  if (oom) {
    appendf(buf, size, 0, "out of host memory in the checker");
    return -1;
  }
  if (unwritten || nonfinite)
    len = appendf(buf, size, len,
                  "%zu of %zu elements never written (still poison) and %zu NaN/inf, first at C[%zu, %zu]; ",
                  unwritten, elems, nonfinite, first_bad / ds->n, first_bad % ds->n);
  if (guard_bad)
    len = appendf(buf, size, len, "wrote past the end of C: %zu guard elements changed; ", guard_bad);
  return len;
}

/* "rel err 1.2e-04 over ..." or the reasons for a failure, into buf. */
static void describe(const dataset *ds, const verdict *v, char *buf, size_t size)
{
  int len = describe_scan(ds, v->oom, v->elems, v->unwritten, v->nonfinite, v->first_bad, v->guard_bad, buf,
                          size);
#define ADD(...) (len = appendf(buf, size, len, __VA_ARGS__))
  if (len < 0)
    return;
  ADD("rel err %.3g over %zu %s elements", v->rel, v->checked, ds->full ? "(all)" : "sampled");
  if (v->worst >= 0)
    ADD(", worst element %.3g of its tolerance (C[%zu, %zu] = %.6g, expected %.6g)", v->worst,
        v->worst_at / ds->n, v->worst_at % ds->n, v->worst_got, v->worst_ref);
  if (v->over)
    ADD(", %zu elements over tolerance (rtol %.3g + %.0e * rms %.4g)", v->over, v->rtol, ELEM_ATOL, v->rms);
  if (v->checked == 0)
    ADD(", nothing to compare");
#undef ADD
}

/* ------------------------------------------------------------------------ the softmax checker */

/* Per element of a checked row: |C - p| <= elem_rtol(T) * p + SM_ATOL * max(p over the row). Per row
 * (every row): |sum(C) - 1| <= sm_sum_tol(T, N). See the header comment for the reasoning. */
#define SM_ATOL 1e-3

static double sm_sum_tol(tl_dtype t, size_t n)
{
  /* four times the unit roundoff of the output, plus, for f16, half its smallest subnormal per
   * element (probabilities below 2^-24 round to 0 or a subnormal) */
  return elem_rtol(t) + (t == TL_F16 ? (double)n * 0x1p-25 : 0.0);
}

typedef struct sm_verdict {
  size_t elems, unwritten, nonfinite, first_bad, guard_bad; /* as in verdict */
  size_t rows_checked, checked, over, worst_at; /* elements of the checked rows; worst_at a flat index */
  double worst, worst_got, worst_ref, worst_rowmax, rtol;
  size_t sum_rows, sum_bad, worst_sum_row;      /* rows (all finite) whose sum was checked, how many failed */
  double worst_sum_dev, sum_tol;                /* max |sum(C[r, :]) - 1| over them */
  bool oom;
} sm_verdict;

static bool sm_verdict_ok(const sm_verdict *v, const dataset *ds)
{
  return !v->oom && v->unwritten == 0 && v->nonfinite == 0 && v->guard_bad == 0 && v->over == 0 &&
         v->checked > 0 && v->sum_bad == 0 && v->sum_rows == ds->m;
}

/* Check ds->c (as downloaded, guard included) of gemm_softmax against softmax_init's reference. */
static void check_softmax(const dataset *ds, sm_verdict *v)
{
  memset(v, 0, sizeof *v);
  const size_t m = ds->m, n = ds->n;
  const float *lut = lut_of(ds->t);
  v->elems = m * n;
  v->rtol = elem_rtol(ds->t);
  v->sum_tol = sm_sum_tol(ds->t, n);
  if (!scan_output(ds, &v->unwritten, &v->nonfinite, &v->first_bad, &v->guard_bad)) {
    v->oom = true;
    return;
  }
  /* the checked rows, element by element */
  v->worst = -1;
  for (size_t q = 0; q < ds->nrows; q++) {
    const size_t i = ds->rows[q];
    const double *p = ds->ref + q * n;
    const uint16_t *c = ds->c + i * n;
    double pmax = 0;
    for (size_t j = 0; j < n; j++)
      pmax = p[j] > pmax ? p[j] : pmax;
    v->rows_checked++;
    for (size_t j = 0; j < n; j++) {
      if (!bits_finite(ds->t, c[j]))
        continue;
      const double got = lut[c[j]];
      const double r = fabs(got - p[j]) / (v->rtol * p[j] + SM_ATOL * pmax);
      v->over += !(r <= 1.0);
      v->checked++;
      if (r > v->worst) {
        v->worst = r, v->worst_at = i * n + j, v->worst_got = got;
        v->worst_ref = p[j], v->worst_rowmax = pmax;
      }
    }
  }
  /* every row sums to 1 */
  v->worst_sum_dev = -1;
  for (size_t i = 0; i < m; i++) {
    const uint16_t *c = ds->c + i * n;
    double sum = 0;
    bool finite = true;
    for (size_t j = 0; j < n && finite; j++) {
      finite = bits_finite(ds->t, c[j]);
      sum += lut[c[j]];
    }
    if (!finite)
      continue; /* counted by the scan */
    v->sum_rows++;
    const double dev = fabs(sum - 1.0);
    v->sum_bad += !(dev <= v->sum_tol);
    if (dev > v->worst_sum_dev)
      v->worst_sum_dev = dev, v->worst_sum_row = i;
  }
}

static void describe_softmax(const dataset *ds, const sm_verdict *v, char *buf, size_t size)
{
  int len = describe_scan(ds, v->oom, v->elems, v->unwritten, v->nonfinite, v->first_bad, v->guard_bad, buf,
                          size);
#define ADD(...) (len = appendf(buf, size, len, __VA_ARGS__))
  if (len < 0)
    return;
  ADD("%zu rows checked (%s), worst element %.3g of its tolerance", v->rows_checked,
      ds->full ? "all" : "sampled", v->worst);
  if (v->worst >= 0)
    ADD(" (C[%zu, %zu] = %.6g, expected %.6g, row max %.4g)", v->worst_at / ds->n, v->worst_at % ds->n,
        v->worst_got, v->worst_ref, v->worst_rowmax);
  if (v->over)
    ADD(", %zu elements over tolerance (rtol %.3g + %.0e * row max)", v->over, v->rtol, SM_ATOL);
  if (v->checked == 0)
    ADD(", nothing to compare");
  if (v->sum_rows)
    ADD("; row sums: worst |sum - 1| %.3g (row %zu) of %.3g allowed", v->worst_sum_dev, v->worst_sum_row,
        v->sum_tol);
  if (v->sum_bad)
    ADD(", %zu of %zu rows off", v->sum_bad, v->sum_rows);
#undef ADD
}

/* Check ds->c for `op` (either checker) and describe it; true if it passes. */
static bool check_any(const dataset *ds, op_kind op, int act, char *text, size_t size)
{
  if (ops[op].softmax) {
    sm_verdict v;
    check_softmax(ds, &v);
    describe_softmax(ds, &v, text, size);
    return sm_verdict_ok(&v, ds);
  }
  verdict v;
  check_output(ds, op, act, &v);
  describe(ds, &v, text, size);
  return verdict_ok(&v);
}

/* ------------------------------------------------------------------------------------ a case */

static void case_label(const entry *e, const dataset *ds, char *buf, size_t size)
{
  char act[32] = "";
  if (ops[e->op].bias)
    snprintf(act, sizeof act, ", ACT=%d %s", e->v->act, act_name(e->v->act));
  else if (ops[e->op].softmax)
    snprintf(act, sizeof act, ", scale %.6g", ds->scale);
  snprintf(buf, size, "%s %s %zux%zux%zu [%s%s]", ops[e->op].kernel, tl_dtype_name(ds->t), ds->m, ds->n,
           ds->k, e->v->name, act);
}

/* Launch once on poisoned C, download and check. */
static bool run_case(tl_context *ctx, dataset *ds, const entry *e)
{
  char label[256];
  case_label(e, ds, label, sizeof label);
  tl_status st;
  const size_t cbytes = (ds->m * ds->n + GUARD) * 2;
  int64_t sh[4][2];
  tl_arg args[4];
  if ((st = dataset_upload(ctx, ds, e->op)) != TL_OK ||
      (st = tl_memset_d8(ctx, ds->dc, 0xFF, cbytes)) != TL_OK) {
    gpu_report(false, "%s: preparing the buffers: %s: %s", label, tl_status_name(st),
               st == TL_ERR_OUT_OF_MEMORY ? "out of memory" : tl_context_message(ctx));
    return false;
  }
  const int nargs = make_args(ds, e->op, sh, args);
  if ((st = tl_launch(e->kernel, args, nargs, NULL)) != TL_OK || (st = tl_synchronize(ctx)) != TL_OK ||
      (st = tl_memcpy_dtoh(ctx, ds->c, ds->dc, cbytes)) != TL_OK) {
    gpu_report(false, "%s: %s: %s", label, tl_status_name(st), tl_context_message(ctx));
    return false;
  }
  char text[768];
  const bool ok = check_any(ds, e->op, e->v->act, text, sizeof text);
  gpu_report(ok, "%s: %s", label, text);
  return ok;
}

static uint64_t case_seed(uint64_t seed, uint64_t salt, tl_dtype t, size_t m, size_t n, size_t k)
{
  uint64_t s = seed ^ (salt * 0xD6E8FEB86659FD93ull) ^ ((uint64_t)m * 0x9E3779B97F4A7C15ull) ^
               ((uint64_t)n * 0xC2B2AE3D27D4EB4Full) ^ ((uint64_t)k * 0x165667B19E3779F9ull) ^
               ((uint64_t)t << 56);
  return gpu_next_random(&s);
}

/* Whether entry e runs at GEMM shape sh in dtype t (gemm_softmax has shapes of its own). */
static bool gemm_case(const entry *e, tl_dtype t, const struct shape *sh)
{
  return e->v->t == t && !ops[e->op].softmax && (sh->all_roles || e->v->role == ROLE_MATMUL);
}

static void run_correctness(tl_context *ctx, entry *es, int nes, uint64_t seed, bool quick, double max_work)
{
  for (size_t ti = 0; ti < NTYPES; ti++) {
    const tl_dtype t = types[ti];
    for (size_t si = 0; si < NSHAPES; si++) {
      const struct shape *sh = &shapes[si];
      if ((quick && sh->big) || (double)sh->m * sh->n * sh->k > max_work)
        continue;
      int todo = 0;
      for (int i = 0; i < nes; i++)
        todo += gemm_case(&es[i], t, sh);
      if (!todo)
        continue;
      printf("== %s %zux%zux%zu: %d kernels, %s reference\n", tl_dtype_name(t), sh->m, sh->n, sh->k, todo,
             (double)sh->m * sh->n * sh->k <= FULL_REF_MAX ? "full" : "sampled");
      fflush(stdout);
      dataset ds;
      if (!dataset_init(&ds, t, sh->m, sh->n, sh->k, case_seed(seed, 1, t, sh->m, sh->n, sh->k), false)) {
        gpu_report(false, "%s %zux%zux%zu: out of host memory", tl_dtype_name(t), sh->m, sh->n, sh->k);
        continue;
      }
      for (int i = 0; i < nes; i++)
        if (gemm_case(&es[i], t, sh))
          run_case(ctx, &ds, &es[i]);
      dataset_free(ctx, &ds);
    }
  }
}

/* gemm_softmax's shapes: N = 128 and 129 straddle the default BN, N = 1 and N = 4096 are the extremes,
 * 100 and 1000 are not multiples of any BN; M = 4095, 17 and 300 end in a partial block. */
static const size_t sm_shapes[][3] = {{17, 33, 65},  {1000, 128, 1000}, {4095, 100, 123}, {1, 4096, 256},
                                      {4096, 1, 64}, {1024, 1000, 512}, {300, 129, 64}};
#define NSM_SHAPES (sizeof sm_shapes / sizeof sm_shapes[0])
static const size_t sm_bench_shape[3] = {4096, 128, 4096};

static void run_softmax(tl_context *ctx, entry *es, int nes, uint64_t seed)
{
  for (size_t ti = 0; ti < NTYPES; ti++) {
    const tl_dtype t = types[ti];
    for (size_t si = 0; si < NSM_SHAPES; si++) {
      const size_t m = sm_shapes[si][0], n = sm_shapes[si][1], k = sm_shapes[si][2];
      int todo = 0;
      for (int i = 0; i < nes; i++)
        todo += es[i].v->t == t && ops[es[i].op].softmax;
      if (!todo)
        continue;
      printf("== softmax %s %zux%zux%zu: %d kernels, %s reference\n", tl_dtype_name(t), m, n, k, todo,
             (double)m * n * k <= FULL_REF_MAX || m <= SM_SAMPLE_ROWS ? "full" : "sampled-row");
      fflush(stdout);
      dataset ds;
      if (!softmax_init(&ds, t, m, n, k, case_seed(seed, 4, t, m, n, k), false)) {
        gpu_report(false, "softmax %s %zux%zux%zu: out of host memory", tl_dtype_name(t), m, n, k);
        continue;
      }
      for (int i = 0; i < nes; i++)
        if (es[i].v->t == t && ops[es[i].op].softmax)
          run_case(ctx, &ds, &es[i]);
      dataset_free(ctx, &ds);
    }
  }
}

/* One timing row per gemm_softmax variant at sm_bench_shape (not in the benchmark table, no peer, no
 * verdict): median of `reps` launches on poisoned C, then the output checked as in run_softmax
 * (sampled rows), which counts as a case. TFLOP/s counts 2*M*N*K, one product: a variant with
 * N > BN does twice that. */
static void bench_softmax(tl_context *ctx, entry *es, int nes, uint64_t seed, int reps)
{
  const size_t m = sm_bench_shape[0], n = sm_bench_shape[1], k = sm_bench_shape[2];
  for (size_t ti = 0; ti < NTYPES; ti++) {
    const tl_dtype t = types[ti];
    int todo = 0;
    for (int i = 0; i < nes; i++)
      todo += es[i].v->t == t && ops[es[i].op].softmax;
    if (!todo)
      continue;
    printf("== softmax timing %s %zux%zux%zu: %d kernels, median of %d runs after %d warm-up\n",
           tl_dtype_name(t), m, n, k, todo, reps, WARMUP);
    fflush(stdout);
    dataset ds;
    if (!softmax_init(&ds, t, m, n, k, case_seed(seed, 5, t, m, n, k), true))
      continue;
    tl_status st = dataset_upload(ctx, &ds, OP_SOFTMAX);
    if (st != TL_OK) {
      gpu_report(false, "softmax timing %s %zux%zux%zu: upload: %s: %s", tl_dtype_name(t), m, n, k,
                 tl_status_name(st), tl_context_message(ctx));
      dataset_free(ctx, &ds);
      continue;
    }
    const size_t cbytes = (m * n + GUARD) * 2;
    for (int i = 0; i < nes; i++) {
      const entry *e = &es[i];
      if (e->v->t != t || !ops[e->op].softmax)
        continue;
      int64_t sh[4][2];
      tl_arg args[4];
      gpu_launch_arg la = {ctx, e->kernel, args, make_args(&ds, e->op, sh, args)};
      double ms = -1;
      if ((st = tl_memset_d8(ctx, ds.dc, 0xFF, cbytes)) != TL_OK) {
        gpu_report(false, "softmax timing %s [%s]: poisoning C: %s: %s", tl_dtype_name(t), e->v->name,
                   tl_status_name(st), tl_context_message(ctx));
        continue;
      }
      if (!gpu_time_median_ms(ctx, gpu_timed_launch, &la, WARMUP, reps, &ms)) {
        tl_synchronize(ctx);
        gpu_report(false, "softmax timing %s [%s]: timing failed", tl_dtype_name(t), e->v->name);
        continue;
      }
      if ((st = tl_synchronize(ctx)) != TL_OK || (st = tl_memcpy_dtoh(ctx, ds.c, ds.dc, cbytes)) != TL_OK) {
        gpu_report(false, "softmax timing %s [%s]: after timing: %s: %s", tl_dtype_name(t), e->v->name,
                   tl_status_name(st), tl_context_message(ctx));
        continue;
      }
      char text[768];
      const bool ok = check_any(&ds, e->op, -1, text, sizeof text);
      gpu_report(ok, "timing result %s %s %zux%zux%zu [%s]: %s", ops[e->op].kernel, tl_dtype_name(t), m, n, k,
                 e->v->name, text);
      printf("     %-22s %s %zux%zux%zu: %.4f ms, %.1f TFLOP/s (2*M*N*K)%s [%s]\n", e->v->name,
             tl_dtype_name(t), m, n, k, ms, 2.0 * m * n * k / (ms * 1e-3) / 1e12, ok ? "" : " WRONG RESULTS",
             e->v->settings);
      fflush(stdout);
    }
    dataset_free(ctx, &ds);
  }
}

/* ------------------------------------------------------------------------------------ cuBLAS */

typedef struct cublasContext *cublasHandle_t;
typedef int cublasStatus_t; /* enums of cublas_api.h and library_types.h; values from there */
enum { CUBLAS_STATUS_SUCCESS = 0 };
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_32F = 68 };
enum { CUBLAS_GEMM_DEFAULT = -1 };
enum { CUBLAS_DEFAULT_MATH = 0 };

typedef struct cublas {
  void *lib;
  char path[4096];
  int version;
  cublasHandle_t handle;
  cublasStatus_t (*create)(cublasHandle_t *handle);
  cublasStatus_t (*destroy)(cublasHandle_t handle);
  cublasStatus_t (*set_stream)(cublasHandle_t handle, CUstream stream);
  cublasStatus_t (*set_math_mode)(cublasHandle_t handle, int mode);
  cublasStatus_t (*gemm_ex)(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                            const void *alpha, const void *a, int atype, int lda, const void *b, int btype,
                            int ldb, const void *beta, void *c, int ctype, int ldc, int compute_type,
                            int algo);
  const char *(*status_string)(cublasStatus_t status);                /* optional */
  cublasStatus_t (*get_version)(cublasHandle_t handle, int *version); /* optional */
} cublas;

static const char *cublas_status(const cublas *cb, cublasStatus_t s, char *buf, size_t size)
{
  const char *name = cb->status_string ? cb->status_string(s) : NULL;
  snprintf(buf, size, "%s (%d)", name ? name : "cuBLAS status", s);
  return buf;
}

/* Load one candidate and resolve its entry points; with a context, also create the handle. A library
 * that loads but fails is left loaded (its static CUDA runtime may have registered exit handlers). */
static bool cublas_try(cublas *cb, const char *path, tl_context *ctx, char *why, size_t why_size)
{
  const char *slash = strrchr(path, '/');
  if (slash && strncmp(slash + 1, "libcublas", 9) == 0) {
    /* copies without an RPATH (Python wheels) need their libcublasLt loaded first */
    char lt[4200];
    snprintf(lt, sizeof lt, "%.*slibcublasLt%s", (int)(slash + 1 - path), path, slash + 10);
    dlopen(lt, RTLD_NOW | RTLD_GLOBAL);
  }
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(why, why_size, "%s", e ? e : "dlopen failed");
    return false;
  }
  cublas c = {.lib = lib};
  void *gemm_sym = NULL;
#define LOAD(field, name)                  \
  do {                                     \
    void *sym_ = dlsym(lib, name);         \
    memcpy(&c.field, &sym_, sizeof sym_);  \
    if (strcmp(name, "cublasGemmEx") == 0) \
      gemm_sym = sym_;                     \
  } while (0)
  LOAD(create, "cublasCreate_v2");
  LOAD(destroy, "cublasDestroy_v2");
  LOAD(set_stream, "cublasSetStream_v2");
  LOAD(set_math_mode, "cublasSetMathMode");
  LOAD(gemm_ex, "cublasGemmEx");
  LOAD(status_string, "cublasGetStatusString");
  LOAD(get_version, "cublasGetVersion_v2");
#undef LOAD
  if (!c.create || !c.destroy || !c.set_stream || !c.set_math_mode || !c.gemm_ex) {
    snprintf(why, why_size,
             "lacks cublasCreate_v2, cublasDestroy_v2, cublasSetStream_v2, "
             "cublasSetMathMode or cublasGemmEx");
    dlclose(lib);
    return false;
  }
  Dl_info info;
  if (dladdr(gemm_sym, &info) && info.dli_fname)
    snprintf(c.path, sizeof c.path, "%s", info.dli_fname);
  else
    snprintf(c.path, sizeof c.path, "%s", path);
  if (ctx) {
    char text[128];
    cublasStatus_t s;
    if (tl_context_make_current(ctx) != TL_OK) {
      snprintf(why, why_size, "cannot make the context current");
      return false;
    }
    if ((s = c.create(&c.handle)) != CUBLAS_STATUS_SUCCESS) {
      snprintf(why, why_size, "cublasCreate_v2: %s", cublas_status(&c, s, text, sizeof text));
      return false;
    }
    if ((s = c.set_stream(c.handle, NULL)) != CUBLAS_STATUS_SUCCESS ||
        (s = c.set_math_mode(c.handle, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) {
      snprintf(why, why_size, "cublasSetStream_v2 / cublasSetMathMode: %s",
               cublas_status(&c, s, text, sizeof text));
      c.destroy(c.handle);
      return false;
    }
    if (c.get_version)
      c.get_version(c.handle, &c.version);
  }
  *cb = c;
  return true;
}

/* Find cuBLAS: $TILEC_CUBLAS_LIBRARY, the sonames, then toolkits and Python packages. Prints what it
 * loaded, or every attempt when nothing loads. */
/* cublas_try, once per file (the toolkit's symlinks name one library several times). */
static bool cublas_try_once(cublas *cb, const char *path, tl_context *ctx, char *why, size_t why_size)
{
  static char seen[64][4096];
  static int nseen;
  char real[4096];
  if (strchr(path, '/') && realpath(path, real)) {
    for (int i = 0; i < nseen; i++)
      if (strcmp(seen[i], real) == 0) {
        snprintf(why, why_size, "same file as before");
        return false;
      }
    if (nseen < 64)
      snprintf(seen[nseen++], sizeof seen[0], "%s", real);
  }
  return cublas_try(cb, path, ctx, why, why_size);
}

static bool cublas_load(cublas *cb, tl_context *ctx)
{
  memset(cb, 0, sizeof *cb);
  char tried[8192] = "";
  size_t tlen = 0;
  char why[1024];
  const char *env = getenv("TILEC_CUBLAS_LIBRARY");
#define ATTEMPT(path_)                                                                               \
  do {                                                                                               \
    if (cublas_try_once(cb, (path_), ctx, why, sizeof why))                                          \
      goto found;                                                                                    \
    if (tlen < sizeof tried)                                                                         \
      tlen += (size_t)snprintf(tried + tlen, sizeof tried - tlen, "  tried %s: %s\n", (path_), why); \
  } while (0)
  if (env && *env)
    ATTEMPT(env);
  static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++)
    ATTEMPT(sonames[i]);
  /* glob patterns: toolkits, then the CUDA wheels of Python environments */
  static const char *const roots[] = {"/usr/local/cuda/lib64",     "/usr/local/cuda/targets/*/lib",
                                      "/usr/local/cuda-*/lib64",   "/usr/local/cuda-*/targets/*/lib",
                                      "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                                      "/usr/lib/cuda/lib64",       "$CONDA_PREFIX/lib"};
  static const char *const pythons[] = {
      "/opt/*/.venv/lib/python3*/site-packages", "/opt/*/venv/lib/python3*/site-packages",
      "/opt/*/lib/python3*/site-packages",       "/usr/local/lib/python3*/dist-packages",
      "/usr/local/lib/python3*/site-packages",   "/usr/lib/python3/dist-packages",
      "$VIRTUAL_ENV/lib/python3*/site-packages", "$CONDA_PREFIX/lib/python3*/site-packages",
      "$HOME/.local/lib/python3*/site-packages"};
  static const char *const wheels[] = {"nvidia/cu13/lib", "nvidia/cublas/lib", "nvidia/cu12/lib"};
  enum {
    NROOTS = sizeof roots / sizeof roots[0],
    NPY = sizeof pythons / sizeof pythons[0],
    NWHEELS = sizeof wheels / sizeof wheels[0]
  };
  for (int p = 0; p < NROOTS + NPY * NWHEELS; p++) {
    const char *dir = p < NROOTS ? roots[p] : pythons[(p - NROOTS) / NWHEELS];
    const char *wheel = p < NROOTS ? "" : wheels[(p - NROOTS) % NWHEELS];
    const char *var = "";
    if (dir[0] == '$') { /* $NAME/rest: skipped when NAME is unset */
      const char *slash = strchr(dir, '/');
      char name[32];
      snprintf(name, sizeof name, "%.*s", (int)(slash - dir - 1), dir + 1);
      var = getenv(name);
      if (!var || !*var)
        continue;
      dir = slash;
    }
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s%s%s%s/libcublas.so*", var, dir, *wheel ? "/" : "", wheel);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0)
      continue;
    for (size_t i = 0; i < g.gl_pathc; i++) {
      if (cublas_try_once(cb, g.gl_pathv[i], ctx, why, sizeof why)) {
        globfree(&g);
        goto found;
      }
      if (strcmp(why, "same file as before") != 0 && tlen < sizeof tried)
        tlen += (size_t)snprintf(tried + tlen, sizeof tried - tlen, "  tried %s: %s\n", g.gl_pathv[i], why);
    }
    globfree(&g);
  }
#undef ATTEMPT
  printf("gpu_gemm: cuBLAS NOT LOADED: no usable libcublas (set TILEC_CUBLAS_LIBRARY=/path/to/libcublas.so.N "
         "to name one); the benchmark reports our TFLOP/s with the peer as n/a\n%s",
         tried);
  fflush(stdout);
  return false;
found:
  if (ctx)
    printf("gpu_gemm: cuBLAS: loaded %s (version %d)\n", cb->path, cb->version);
  else
    printf("gpu_gemm: cuBLAS: loaded %s\n", cb->path);
  fflush(stdout);
  return true;
}

static void cublas_unload(cublas *cb)
{
  if (cb->handle)
    cb->destroy(cb->handle);
  cb->handle = NULL;
  /* the library stays loaded: unloading a static CUDA runtime before exit is not worth the risk */
}

/* ---------------------------------------------------------------------------------- benchmark */


typedef struct cublas_fn_arg {
  const cublas *cb;
  const dataset *ds;
} cublas_fn_arg;

/* Row-major C[M, N] = A[M, K] B[K, N] is, read column-major, C^T = B^T A^T: an (N x K)(K x M)
 * column-major product of B (ld N) and A (ld K) into C (ld N), no transposes. */
static bool timed_cublas(void *p)
{
  const cublas_fn_arg *a = p;
  const dataset *ds = a->ds;
  const float alpha = 1.0f, beta = 0.0f;
  const int type = ds->t == TL_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  cublasStatus_t s = a->cb->gemm_ex(
      a->cb->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)ds->n, (int)ds->m, (int)ds->k, &alpha,
      (const void *)(uintptr_t)ds->db, type, (int)ds->n, (const void *)(uintptr_t)ds->da, type, (int)ds->k,
      &beta, (void *)(uintptr_t)ds->dc, type, (int)ds->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    char text[128];
    printf("cublasGemmEx: %s\n", cublas_status(a->cb, s, text, sizeof text));
  }
  return s == CUBLAS_STATUS_SUCCESS;
}

typedef struct bench_row {
  const variant *v; /* NULL: cuBLAS */
  tl_dtype t;
  size_t m, n, k;
  double ms; /* < 0: not measured */
  const char *why;
  bool correct;
  char check[160]; /* what the result check said */
} bench_row;

static double tflops(const bench_row *r) { return 2.0 * r->m * r->n * r->k / (r->ms * 1e-3) / 1e12; }

/* The cuBLAS row of r's dtype and shape (rows[0..nrows)), if it was measured. */
static const bench_row *peer_of(const bench_row *rows, int nrows, const bench_row *r)
{
  for (int i = 0; i < nrows; i++)
    if (!rows[i].v && rows[i].t == r->t && rows[i].m == r->m && rows[i].n == r->n && rows[i].k == r->k)
      return rows[i].ms > 0 ? &rows[i] : NULL;
  return NULL;
}

static void print_bench(FILE *f, const bench_row *rows, int nrows, const char *device, uint64_t seed,
                        int reps, const cublas *cb, bool have_cublas)
{
  fprintf(f, "# gpu_gemm benchmark: %s, median of %d runs after %d warm-up, seed %llu\n", device, reps,
          WARMUP, (unsigned long long)seed);
  if (have_cublas)
    fprintf(f,
            "# peer: cuBLAS %d (%s), cublasGemmEx, T in and out, CUBLAS_COMPUTE_32F, "
            "CUBLAS_GEMM_DEFAULT, same data, same run\n",
            cb->version, cb->path);
  else
    fprintf(f, "# peer: cuBLAS NOT LOADED: peer n/a\n");
  fprintf(f, "# TFLOP/s = 2*M*N*K / median; a row counts only if its output checked correct\n");
  fprintf(f, "%-22s %-5s %-15s %10s %9s %14s %7s %7s  %-7s %s\n", "variant", "dtype", "shape", "median_ms",
          "TFLOP/s", "cuBLAS_TFLOP/s", "ratio", "target", "result", "settings");
  for (int i = 0; i < nrows; i++) {
    const bench_row *r = &rows[i];
    char shape[48], peer_s[32] = "n/a", ratio_s[32] = "n/a", target_s[16];
    snprintf(target_s, sizeof target_s, "%.2f", TARGET);
    snprintf(shape, sizeof shape, "%zux%zux%zu", r->m, r->n, r->k);
    const bench_row *peer = peer_of(rows, nrows, r);
    if (peer)
      snprintf(peer_s, sizeof peer_s, "%.1f", tflops(peer));
    if (r->ms < 0) {
      fprintf(f, "%-22s %-5s %-15s %10s %9s %14s %7s %7s  %-7s %s\n", r->v ? r->v->name : "cublasGemmEx",
              tl_dtype_name(r->t), shape, "-", "-", peer_s, "-", r->v ? target_s : "-", r->v ? "FAIL" : "n/a",
              r->why ? r->why : "not measured");
      continue;
    }
    const char *result;
    if (!r->v) {
      result = r->correct ? "peer" : "peer?";
    } else {
      if (peer)
        snprintf(ratio_s, sizeof ratio_s, "%.3f", tflops(r) / tflops(peer));
      result = !r->correct ? "FAIL" : !peer ? "n/a" : tflops(r) / tflops(peer) >= TARGET ? "PASS" : "FAIL";
    }
    fprintf(f, "%-22s %-5s %-15s %10.4f %9.1f %14s %7s %7s  %-7s %s%s%s\n",
            r->v ? r->v->name : "cublasGemmEx", tl_dtype_name(r->t), shape, r->ms, tflops(r), peer_s,
            r->v ? ratio_s : "1.000", r->v ? target_s : "-", result, r->v ? r->v->settings : "",
            r->correct ? "" : " WRONG RESULTS: ", r->correct ? "" : r->check);
  }
  for (size_t ti = 0; ti < NTYPES; ti++)
    for (size_t s = 0; s < NBENCH; s++) {
      const tl_dtype t = types[ti];
      const size_t m = bench_shapes[s][0], n = bench_shapes[s][1], k = bench_shapes[s][2];
      const bench_row *best = NULL, *peer = NULL;
      bool any = false;
      for (int i = 0; i < nrows; i++) {
        const bench_row *r = &rows[i];
        if (r->t != t || r->m != m || r->n != n || r->k != k)
          continue;
        if (!r->v) {
          peer = r->ms > 0 ? r : NULL;
          continue;
        }
        any = true;
        if (r->ms > 0 && r->correct && (!best || r->ms < best->ms))
          best = r;
      }
      if (!any)
        continue;
      char shape[48];
      snprintf(shape, sizeof shape, "%zux%zux%zu", m, n, k);
      if (!best)
        fprintf(f, "# verdict %-4s %-15s: FAIL: no variant measured with correct results\n", tl_dtype_name(t),
                shape);
      else if (!peer)
        fprintf(f, "# verdict %-4s %-15s: n/a: no cuBLAS to compare with; best %s at %.1f TFLOP/s\n",
                tl_dtype_name(t), shape, best->v->name, tflops(best));
      else
        fprintf(f,
                "# verdict %-4s %-15s: %s: best %s at %.3f of cuBLAS (%.1f vs %.1f TFLOP/s; target %.2f)\n",
                tl_dtype_name(t), shape, tflops(best) / tflops(peer) >= TARGET ? "PASS" : "FAIL",
                best->v->name, tflops(best) / tflops(peer), tflops(best), tflops(peer), TARGET);
    }
}

/* Time one thing on poisoned C, then check its output; fills r. */
static void bench_one(tl_context *ctx, dataset *ds, bench_row *r, gpu_timed_fn fn, void *arg, int reps)
{
  tl_status st;
  const size_t cbytes = (ds->m * ds->n + GUARD) * 2;
  if ((st = tl_memset_d8(ctx, ds->dc, 0xFF, cbytes)) != TL_OK) {
    printf("gpu_gemm: poisoning C: %s: %s\n", tl_status_name(st), tl_context_message(ctx));
    r->why = "poisoning C failed";
    return;
  }
  if (!gpu_time_median_ms(ctx, fn, arg, WARMUP, reps, &r->ms)) {
    r->ms = -1;
    r->why = "timing failed";
    tl_synchronize(ctx);
    return;
  }
  if ((st = tl_synchronize(ctx)) != TL_OK || (st = tl_memcpy_dtoh(ctx, ds->c, ds->dc, cbytes)) != TL_OK) {
    printf("gpu_gemm: after timing: %s: %s\n", tl_status_name(st), tl_context_message(ctx));
    r->ms = -1;
    r->why = "failed after timing";
    return;
  }
  verdict v;
  check_output(ds, OP_MATMUL, -1, &v);
  r->correct = verdict_ok(&v);
  char text[768];
  describe(ds, &v, text, sizeof text);
  snprintf(r->check, sizeof r->check, "rel err %.3g, %zu unwritten, %zu NaN/inf, %zu over tolerance%s", v.rel,
           v.unwritten, v.nonfinite, v.over, v.guard_bad ? ", wrote past C" : "");
  const char *name = r->v ? r->v->name : "cublasGemmEx";
  if (r->v)
    gpu_report(r->correct, "bench result %s %s %zux%zux%zu [%s]: %s", ops[OP_MATMUL].kernel,
               tl_dtype_name(ds->t), ds->m, ds->n, ds->k, name, text);
  else if (!r->correct)
    printf("WARNING cuBLAS's result at %s %zux%zux%zu looks wrong (a bug in this program's call?): %s\n",
           tl_dtype_name(ds->t), ds->m, ds->n, ds->k, text);
  printf("     %-22s %s %zux%zux%zu: %.4f ms, %.1f TFLOP/s\n", name, tl_dtype_name(ds->t), ds->m, ds->n,
         ds->k, r->ms, tflops(r));
  fflush(stdout);
}

static void run_bench(tl_context *ctx, variant *vs, int nv, uint64_t seed, int reps, const char *out_path)
{
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  printf("== benchmark: matmul variants and cuBLAS, median of %d runs after %d warm-up\n", reps, WARMUP);
  cublas cb;
  const bool have_cublas = cublas_load(&cb, ctx);
  bench_row rows[NTYPES * NBENCH * (MAX_VARIANTS + 1)];
  int nrows = 0;
  for (size_t ti = 0; ti < NTYPES; ti++)
    for (size_t s = 0; s < NBENCH; s++) {
      const tl_dtype t = types[ti];
      const size_t m = bench_shapes[s][0], n = bench_shapes[s][1], k = bench_shapes[s][2];
      int todo = 0;
      for (int i = 0; i < nv; i++)
        todo += vs[i].t == t && role_benched(vs[i].role) && vs[i].state != V_MISSING;
      if (!todo)
        continue;
      dataset ds;
      if (!dataset_init(&ds, t, m, n, k, case_seed(seed, 2, t, m, n, k), false))
        continue;
      tl_status st = dataset_upload(ctx, &ds, OP_MATMUL);
      if (st != TL_OK) {
        printf("gpu_gemm: bench upload %s %zux%zux%zu: %s: %s\n", tl_dtype_name(t), m, n, k,
               tl_status_name(st), tl_context_message(ctx));
        dataset_free(ctx, &ds);
        continue;
      }
      bench_row *peer = &rows[nrows++];
      *peer = (bench_row){.v = NULL, .t = t, .m = m, .n = n, .k = k, .ms = -1};
      if (have_cublas) {
        cublas_fn_arg ca = {&cb, &ds};
        bench_one(ctx, &ds, peer, timed_cublas, &ca, reps);
      } else {
        peer->why = "cuBLAS not loaded";
      }
      for (int i = 0; i < nv; i++) {
        variant *v = &vs[i];
        if (v->t != t || !role_benched(v->role) || v->state == V_MISSING)
          continue;
        bench_row *r = &rows[nrows++];
        *r = (bench_row){.v = v, .t = t, .m = m, .n = n, .k = k, .ms = -1};
        if (v->state != V_OK || !v->matmul) {
          r->why = "did not load";
          continue;
        }
        int64_t sh[4][2];
        tl_arg args[4];
        gpu_launch_arg la = {ctx, v->matmul, args, make_args(&ds, OP_MATMUL, sh, args)};
        bench_one(ctx, &ds, r, gpu_timed_launch, &la, reps);
        if (r->ms < 0)
          gpu_report(false, "bench %s %s %zux%zux%zu: %s", v->name, tl_dtype_name(t), m, n, k, r->why);
      }
      dataset_free(ctx, &ds);
    }
  print_bench(stdout, rows, nrows, dev.name, seed, reps, &cb, have_cublas);
  if (out_path) {
    FILE *f = fopen(out_path, "w");
    if (!f) {
      printf("gpu_gemm: cannot write %s\n", out_path);
    } else {
      print_bench(f, rows, nrows, dev.name, seed, reps, &cb, have_cublas);
      fclose(f);
      printf("gpu_gemm: benchmark table written to %s (its verdicts do not change the exit status)\n",
             out_path);
    }
  }
  if (have_cublas)
    cublas_unload(&cb);
}

/* ---------------------------------------------------------------------------------- self-test */

/* What a correct kernel would produce, computed on the CPU from the operands in the layouts the
 * kernel reads (so the transposes are checked too): f32 accumulate, f32 epilogue, rounded to T. */
static bool emulate(dataset *ds, op_kind op, int act)
{
  const size_t m = ds->m, n = ds->n, k = ds->k;
  const float *lut = lut_of(ds->t);
  uint16_t *a = layout_a(ds, op), *b = layout_b(ds, op);
  if (!a || !b)
    return false;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      float acc = 0;
      for (size_t kk = 0; kk < k; kk++)
        acc += lut[ops[op].a_t ? a[kk * m + i] : a[i * k + kk]] *
               lut[ops[op].b_t ? b[j * k + kk] : b[kk * n + j]];
      double out = acc;
      if (ops[op].bias)
        out = (float)activation(act, acc + lut[ds->bias[j]]);
      ds->c[i * n + j] = round_to(ds->t, out);
    }
  for (size_t q = 0; q < GUARD; q++)
    ds->c[m * n + q] = 0xFFFFu;
  if (a != ds->a)
    free(a);
  if (b != ds->b)
    free(b);
  return true;
}

/* gemm_softmax's self-test: a CPU model of the kernel (f32 accumulate from B as uploaded, [N, K]; f32
 * logits in log2 units, x = acc * (scale * log2(e)); exp2f; rounded to T) and models of broken kernels,
 * each of which the checker must fail wherever it changes the output materially. */
// clang-format off: a table of one-line comments, some wider than the column limit
typedef enum sm_fault {
  SM_OK,            /* what a correct kernel computes */
  SM_NO_DIVIDE,     /* exp(x - max), never divided by the row sum */
  SM_NO_SCALE,      /* scale ignored (taken as 1) */
  SM_NO_MAX,        /* the row max never subtracted (m = 0): exp overflows on large logits */
  SM_FIRST_TILE,    /* max and sum over the first 64 columns only (the later column tiles ignored) */
  SM_PADDING,       /* max and sum include the padding columns up to a multiple of 128 (logit 0: unmasked) */
  SM_WARP_PARTIAL,  /* max and sum per 32-column group, never combined across warps */
  SM_WARP_MAX,      /* max per 32-column group (not combined across warps), sum over the whole row */
  SM_NO_RESCALE,    /* online softmax over 64-column tiles whose running sum is not rescaled when the max grows */
  SM_SHIFTED,       /* column j holds the probability of column j + 1 (mod N) */
  SM_WRONG_ROW,     /* the last row holds row 0's probabilities */
  NSM_FAULTS
} sm_fault;
// clang-format on
static const char *const sm_fault_names[NSM_FAULTS] = {
    "as computed",
    "no division by the row sum",
    "scale ignored",
    "row max never subtracted",
    "max and sum over the first 64 columns",
    "max and sum over the padding columns too",
    "max and sum per 32-column group (not combined across warps)",
    "max per 32-column group (not combined across warps)",
    "running sum not rescaled (64-column tiles)",
    "columns shifted by one",
    "last row holds row 0"};

/* The logits in log2 units, x[i, j] = (f32) acc[i, j] * a, a = scale * log2(e) in f32 (1 * log2(e)
 * when !use_scale), acc summed in f32 from A and B as the kernel reads them. NULL when out of memory. */
static float *sm_logits(const dataset *ds, bool use_scale)
{
  const size_t m = ds->m, n = ds->n, k = ds->k;
  const float *lut = lut_of(ds->t);
  uint16_t *bt = layout_b(ds, OP_SOFTMAX);
  float *x = malloc(m * n * sizeof *x);
  if (!bt || !x) {
    if (bt != ds->b)
      free(bt);
    free(x);
    return NULL;
  }
  const float a = (use_scale ? ds->scale : 1.0f) * 1.4426950408889634f;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      float acc = 0;
      for (size_t kk = 0; kk < k; kk++)
        acc += lut[ds->a[i * k + kk]] * lut[bt[j * k + kk]];
      x[i * n + j] = acc * a;
    }
  if (bt != ds->b)
    free(bt);
  return x;
}

/* One row of output in f32 from its logits x (log2 units) under fault f (the per-row faults). */
static void sm_row(const float *x, size_t n, sm_fault f, float *y)
{
  enum { TILE = 64, GROUP = 32, PAD_TO = 128 };
  float m = -1e30f, s = 0;
  switch (f) {
  case SM_WARP_PARTIAL:
  case SM_WARP_MAX:
    for (size_t g = 0; g < n; g += GROUP) {
      const size_t g1 = g + GROUP < n ? g + GROUP : n;
      float mg = -1e30f, sg = 0;
      for (size_t j = g; j < g1; j++)
        mg = fmaxf(mg, x[j]);
      for (size_t j = g; j < g1; j++)
        sg += y[j] = exp2f(x[j] - mg);
      if (f == SM_WARP_PARTIAL)
        for (size_t j = g; j < g1; j++)
          y[j] /= sg;
      s += sg;
    }
    if (f == SM_WARP_MAX)
      for (size_t j = 0; j < n; j++)
        y[j] /= s;
    return;
  case SM_NO_RESCALE:
    for (size_t c = 0; c < n; c += TILE) {
      const size_t c1 = c + TILE < n ? c + TILE : n;
      float tm = m, ts = 0;
      for (size_t j = c; j < c1; j++)
        tm = fmaxf(tm, x[j]);
      for (size_t j = c; j < c1; j++)
        ts += exp2f(x[j] - tm);
      s = s + ts; /* the bug: s * exp2f(m - tm) + ts */
      m = tm;
    }
    break;
  case SM_FIRST_TILE:
    for (size_t j = 0; j < n && j < TILE; j++)
      m = fmaxf(m, x[j]);
    for (size_t j = 0; j < n && j < TILE; j++)
      s += exp2f(x[j] - m);
    break;
  case SM_NO_MAX:
    m = 0;
    for (size_t j = 0; j < n; j++)
      s += exp2f(x[j] - m);
    break;
  case SM_PADDING: {
    const size_t pad = (n + PAD_TO - 1) / PAD_TO * PAD_TO - n;
    for (size_t j = 0; j < n; j++)
      m = fmaxf(m, x[j]);
    if (pad)
      m = fmaxf(m, 0.0f);
    for (size_t j = 0; j < n; j++)
      s += exp2f(x[j] - m);
    s += (float)pad * exp2f(0.0f - m);
    break;
  }
  default:
    for (size_t j = 0; j < n; j++)
      m = fmaxf(m, x[j]);
    for (size_t j = 0; j < n; j++)
      s += exp2f(x[j] - m);
    break;
  }
  for (size_t j = 0; j < n; j++)
    y[j] = f == SM_NO_DIVIDE ? exp2f(x[j] - m) : exp2f(x[j] - m) / s;
}

/* ds->c (guard poisoned) as kernel model f computes it from the logits x (x1: those without scale). */
static bool sm_emulate(dataset *ds, const float *x, const float *x1, sm_fault f)
{
  const size_t m = ds->m, n = ds->n;
  float *y = malloc(2 * n * sizeof *y);
  if (!y)
    return false;
  for (size_t i = 0; i < m; i++) {
    const bool wrong_row = f == SM_WRONG_ROW && i == m - 1;
    const sm_fault rf = f == SM_SHIFTED || f == SM_WRONG_ROW || f == SM_NO_SCALE ? SM_OK : f;
    sm_row((f == SM_NO_SCALE ? x1 : x) + (wrong_row ? 0 : i) * n, n, rf, y);
    for (size_t j = 0; j < n; j++)
      ds->c[i * n + j] = round_to(ds->t, f == SM_SHIFTED ? y[(j + 1) % n] : y[j]);
  }
  for (size_t q = 0; q < GUARD; q++)
    ds->c[m * n + q] = 0xFFFFu;
  free(y);
  return true;
}

/* Whether `bad` differs from `good` materially, whatever the checker's tolerances: a NaN or infinity,
 * a row sum changed by more than 5%, or, in a row the checker compares, an element changed by more
 * than 5% of the row's largest probability (several times anything the checker allows). */
static bool sm_material(const dataset *ds, const uint16_t *good, const uint16_t *bad)
{
  const size_t m = ds->m, n = ds->n;
  const float *lut = lut_of(ds->t);
  for (size_t x = 0; x < m * n; x++)
    if (!bits_finite(ds->t, bad[x]))
      return true;
  for (size_t i = 0; i < m; i++) {
    double sg = 0, sb = 0;
    for (size_t j = 0; j < n; j++)
      sg += lut[good[i * n + j]], sb += lut[bad[i * n + j]];
    if (fabs(sb - sg) > 0.05)
      return true;
  }
  for (size_t q = 0; q < ds->nrows; q++) {
    const size_t i = ds->rows[q];
    double gmax = 0, diff = 0;
    for (size_t j = 0; j < n; j++) {
      gmax = fmax(gmax, lut[good[i * n + j]]);
      diff = fmax(diff, fabs((double)lut[good[i * n + j]] - lut[bad[i * n + j]]));
    }
    if (diff > 0.05 * gmax)
      return true;
  }
  return false;
}

/* The softmax checker against the models above; adds to *total and *bad. */
static void softmax_self_test(uint64_t seed, int *total, int *bad)
{
  static const size_t st_shapes[][3] = {{17, 33, 65},   {64, 200, 24}, {1, 129, 70}, {130, 1, 9},
                                        {600, 300, 16}, {5, 4096, 32}, {33, 17, 1}};
  int exercised[NTYPES][NSM_FAULTS] = {{0}};
  for (size_t ti = 0; ti < NTYPES; ti++)
    for (size_t sh = 0; sh < sizeof st_shapes / sizeof st_shapes[0]; sh++)
      for (int sampled = 0; sampled < 2; sampled++) {
        const tl_dtype t = types[ti];
        const size_t m = st_shapes[sh][0], n = st_shapes[sh][1], k = st_shapes[sh][2];
        if (sampled && m <= SM_SAMPLE_ROWS)
          continue; /* every row is checked anyway */
        dataset ds;
        if (!softmax_init(&ds, t, m, n, k, case_seed(seed, 6, t, m, n, k), sampled)) {
          (*bad)++;
          return;
        }
        float *x = sm_logits(&ds, true), *x1 = sm_logits(&ds, false);
        uint16_t *good = malloc((m * n + GUARD) * sizeof *good);
        if (!x || !x1 || !good || !sm_emulate(&ds, x, x1, SM_OK)) {
          printf("gpu_gemm self-test: out of memory\n");
          (*bad)++;
          free(x), free(x1), free(good);
          dataset_free(NULL, &ds);
          return;
        }
        memcpy(good, ds.c, (m * n + GUARD) * sizeof *good);
        char label[160], text[768];
        snprintf(label, sizeof label, "gemm_softmax %s %zux%zux%zu %s", tl_dtype_name(t), m, n, k,
                 ds.full ? "all rows" : "sampled rows");
        /* the generic trials: the model as computed, then three single-element faults */
        const size_t last = m * n - 1;
        const float *lut = lut_of(t);
        double pmax = 0;
        for (size_t j = 0; j < n; j++)
          pmax = fmax(pmax, lut[good[(m - 1) * n + j]]);
        static const char *const generic[4] = {"as computed", "last element poisoned", "last element off",
                                               "guard overwritten"};
        for (int trial = 0; trial < 4; trial++) {
          memcpy(ds.c, good, (m * n + GUARD) * sizeof *good);
          if (trial == 1)
            ds.c[last] = 0xFFFFu;
          else if (trial == 2)
            ds.c[last] = round_to(t, 1.05 * lut[good[last]] + 0.01 * pmax);
          else if (trial == 3)
            ds.c[m * n + 7] = 0;
          const bool ok = check_any(&ds, OP_SOFTMAX, -1, text, sizeof text);
          (*total)++;
          if (ok != (trial == 0)) {
            (*bad)++;
            printf("SELF-TEST WRONG %s, %s: checker said %s: %s\n", label, generic[trial],
                   ok ? "PASS" : "FAIL", text);
          } else if (trial == 0 && (m == 17 || m == 1 || m == 600 || m == 5)) {
            printf("self-test %s: %s\n", label, text);
          }
        }
        /* the broken kernels: each must fail where it changes the output materially */
        for (int f = 1; f < NSM_FAULTS; f++) {
          if (!sm_emulate(&ds, x, x1, (sm_fault)f)) {
            (*bad)++;
            break;
          }
          if (!sm_material(&ds, good, ds.c))
            continue;
          exercised[ti][f]++;
          const bool ok = check_any(&ds, OP_SOFTMAX, -1, text, sizeof text);
          (*total)++;
          if (ok) {
            (*bad)++;
            printf("SELF-TEST WRONG %s, broken kernel '%s': checker said PASS: %s\n", label,
                   sm_fault_names[f], text);
          }
        }
        free(x), free(x1), free(good);
        dataset_free(NULL, &ds);
      }
  for (size_t ti = 0; ti < NTYPES; ti++)
    for (int f = 1; f < NSM_FAULTS; f++) {
      if (!exercised[ti][f]) {
        (*bad)++;
        printf("SELF-TEST WRONG gemm_softmax %s: broken kernel '%s' never changed an output materially\n",
               tl_dtype_name(types[ti]), sm_fault_names[f]);
      }
    }
  printf("self-test gemm_softmax: broken kernels failed on");
  for (int f = 1; f < NSM_FAULTS; f++)
    printf("%s %d+%d", f > 1 ? "," : "", exercised[0][f], exercised[1][f]);
  printf(" (f16+bf16) datasets, in the order: ");
  for (int f = 1; f < NSM_FAULTS; f++)
    printf("%s%s", f > 1 ? "; " : "", sm_fault_names[f]);
  printf("\n");
}

static int self_test(uint64_t seed)
{
  static const size_t st_shapes[][3] = {{17, 33, 65}, {64, 40, 24}, {1, 129, 70}, {130, 1, 9}, {33, 17, 1}};
  static const struct {
    op_kind op;
    int act;
  } cases[] = {{OP_MATMUL, -1},  {OP_NT, -1},      {OP_TN, -1},
               {OP_BIAS_ACT, 0}, {OP_BIAS_ACT, 1}, {OP_BIAS_ACT, 2}};
  int bad = 0, total = 0;
  for (size_t ti = 0; ti < NTYPES; ti++)
    for (size_t s = 0; s < sizeof st_shapes / sizeof st_shapes[0]; s++)
      for (int sampled = 0; sampled < 2; sampled++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
          const tl_dtype t = types[ti];
          const size_t m = st_shapes[s][0], n = st_shapes[s][1], k = st_shapes[s][2];
          const op_kind op = cases[c].op;
          const int act = cases[c].act;
          dataset ds;
          if (!dataset_init(&ds, t, m, n, k, case_seed(seed, 3, t, m, n, k), sampled) ||
              !emulate(&ds, op, act))
            return 1;
          char label[160], text[768];
          snprintf(label, sizeof label, "%s %s %zux%zux%zu ACT=%d %s", ops[op].kernel, tl_dtype_name(t), m, n,
                   k, act, sampled ? "sampled" : "full");
          verdict v;
          const size_t last = m * n - 1;
          const uint16_t keep = ds.c[last];
          struct {
            const char *what;
            bool expect_ok;
          } trials[4] = {{"as computed", true},
                         {"last element poisoned", false},
                         {"last element off", false},
                         {"guard overwritten", false}};
          for (int trial = 0; trial < 4; trial++) {
            ds.c[last] = keep;
            ds.c[m * n + 7] = 0xFFFFu;
            if (trial == 1) {
              ds.c[last] = 0xFFFFu;
            } else if (trial == 2) {
              /* the reference of the last element (sample 3 when sampled: a corner) */
              const double dot = sampled ? ds.ref[3] : ds.ref[last];
              double rms = 0;
              check_output(&ds, op, act, &v);
              rms = v.rms;
              const double ref = ref_value(&ds, op, act, dot, n - 1);
              ds.c[last] = round_to(t, ref + 0.1 * rms + 0.05 * fabs(ref));
            } else if (trial == 3) {
              ds.c[m * n + 7] = 0;
            }
            check_output(&ds, op, act, &v);
            describe(&ds, &v, text, sizeof text);
            total++;
            if (verdict_ok(&v) != trials[trial].expect_ok) {
              bad++;
              printf("SELF-TEST WRONG %s, %s: checker said %s: %s\n", label, trials[trial].what,
                     verdict_ok(&v) ? "PASS" : "FAIL", text);
            } else if (trial == 0 && (m == 17 || m == 1)) {
              printf("self-test %s: %s\n", label, text);
            }
          }
          dataset_free(NULL, &ds);
        }
  softmax_self_test(seed, &total, &bad);
  printf("gpu_gemm self-test: %d checks, %d wrong\n", total, bad);
  return bad ? 1 : 0;
}

/* ------------------------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
  const char *ptxdir = NULL, *bench_out = NULL;
  int reps = DEFAULT_REPS;
  bool bench = true, quick = false, usage = false, probe = false, selftest = false;
  double max_work = 1e300;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      i++;
    else if (strcmp(argv[i], "--bench-out") == 0 && i + 1 < argc)
      bench_out = argv[++i];
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--no-bench") == 0)
      bench = false;
    else if (strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (strcmp(argv[i], "--max-work") == 0 && i + 1 < argc)
      max_work = strtod(argv[++i], NULL);
    else if (strcmp(argv[i], "--probe-cublas") == 0)
      probe = true;
    else if (strcmp(argv[i], "--self-test") == 0)
      selftest = true;
    else if (!ptxdir && argv[i][0] != '-')
      ptxdir = argv[i];
    else
      usage = true;
  }
  if (usage || reps < 1 || (!ptxdir && !probe && !selftest)) {
    fprintf(
        stderr,
        "usage: gpu_gemm PTXDIR [--seed S] [--quick] [--max-work W] [--bench-out FILE] [--reps R] [--no-bench]\n"
        "       gpu_gemm --probe-cublas | --self-test [--seed S]\n");
    return 1;
  }
  init_luts();
  const uint64_t seed = gpu_seed_from_args(argc, argv, NULL);
  if (selftest) {
    printf("gpu_gemm self-test: seed %llu\n", (unsigned long long)seed);
    return self_test(seed);
  }
  if (probe) {
    cublas cb;
    return cublas_load(&cb, NULL) ? 0 : 1;
  }

  bool no_gpu;
  tl_context *ctx = gpu_open("gpu_gemm", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  printf("gpu_gemm: PTX in %s, seed %llu (replay with --seed %llu)%s\n", ptxdir, (unsigned long long)seed,
         (unsigned long long)seed, quick ? ", quick: no 4096^3 / 8192^3 correctness cases" : "");

  static variant vs[MAX_VARIANTS];
  static entry es[MAX_ENTRIES];
  int nv = read_manifest(ptxdir, vs, MAX_VARIANTS), nes = 0;
  if (nv < 0) {
    printf("gpu_gemm: no %s/gemm_variants.txt: the standard variants only\n", ptxdir);
    nv = default_variants(vs);
  }
  for (int i = 0; i < nv; i++)
    load_variant(ctx, ptxdir, &vs[i], es, &nes);
  fflush(stdout);

  run_correctness(ctx, es, nes, seed, quick, max_work);
  run_softmax(ctx, es, nes, seed);
  if (bench) {
    run_bench(ctx, vs, nv, seed, reps, bench_out);
    bench_softmax(ctx, es, nes, seed, reps);
  }

  for (int i = 0; i < nv; i++)
    tl_module_unload(vs[i].mod);
  tl_context_destroy(ctx);
  if (gpu_skipped)
    printf("%d skipped (PTX not found)\n", gpu_skipped);
  printf("%d passed, %d failed\n", gpu_passed, gpu_failed);
  return gpu_failed || gpu_passed == 0 ? 1 : 0;
}
