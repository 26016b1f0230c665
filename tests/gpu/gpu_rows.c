/* gpu_rows: correctness and speed of the row kernels of stdlib/softmax.tl and stdlib/norms.tl
 * (softmax, rmsnorm, layernorm), one PTX file per compiled variant (tests/gpu/rows.sh builds them).
 *
 *   gpu_rows OUTDIR [--ptx PTXDIR] [--seed S] [--reps R] [--no-bench] [--quick] [--max-elems N]
 *   gpu_rows --self-test [--seed S]   check this program's checker on the CPU (no GPU needed)
 *
 * OUTDIR   where rows_bench.txt is written
 * PTXDIR   where the PTX is: NAME.ptx per variant, and variants.txt (written by rows.sh) listing them
 *          as "NAME KERNEL T BN THREADS" lines; default OUTDIR/ptx if that is a folder, else OUTDIR.
 *          Without variants.txt the variants are the nine defaults KERNEL_T (default_config).
 * --seed   replay a run (the seed is always printed)
 * --reps   timed runs per benchmark row (default 50, after 10 warm-up runs)
 * --no-bench  correctness only
 * --quick  skip the correctness shapes of more than 2^24 elements
 * --max-elems N  skip the correctness shapes of more than N elements (tests/gpu/sanitize.sh: small
 *          shapes under compute-sanitizer)
 *
 * Correctness. Each default variant (named KERNEL_T, e.g. softmax_bf16) runs at rows x cols = 1x1,
 * 7x1000, 8192x32768, 32768x8192, 3x100003, 100000x64, 32x65536, 64x65537 and 16 x (2 BN + 1); every
 * other variant (softmax_f16_long, rmsnorm_f16_t512, ...) at its kernel's benchmark shape (mild
 * inputs only) and at 16 x (2 BN + 1). BN is the variant's (variants.txt, from tilec), so
 * 16 x (2 BN + 1) always takes the streaming path (rows longer than BN go through tiles of BN twice,
 * the statistics merged across tiles), with a last tile of one element; at the defaults (softmax
 * BN = 65536 / sizeof(T), the norms 8192) 3x100003, 32x65536 and 64x65537 stream too, in every T.
 * Inputs, by mode:
 *
 *   mild        softmax X uniform in [-8, 8]; norms X in [-4, 4]                         (both)
 *   offset      softmax: U[-8, 8] + 100 on even rows, - 100 on odd ones: exp(x) overflows f32
 *               above 88 and underflows below -87, so only x - max works
 *   late-max    softmax: even rows an increasing ramp -8 .. 8 (+ U[-0.5, 0.5]), odd rows U[-8, 8]
 *               with a spike of 16 in one of the last 4 columns: the running max grows from tile
 *               to tile, so the running sum must be rescaled each time
 *   wide        softmax: U[-1, 1] * 2^(r mod 8), up to +-128: exps over ~110 orders of magnitude
 *   large-mean  norms: 1000 + U[-1, 1] (bf16: + U[-16, 16], as bf16's spacing at 1000 is 4): the
 *               mean is 1700 standard deviations from 0, E[x^2] - E[x]^2 cancels in f32
 *   constant    norms: every row one value (every 4th row 0, the others U[-4, 4]): variance 0, so
 *               LayerNorm must give exactly its bias B and RMSNorm sign(x) W (0 for a zero row)
 *   drift       norms: a ramp -4 .. 4 along the row (every other row decreasing) + U[-0.25, 0.25]:
 *               the tiles' means differ, so the streaming merge needs its delta^2 n n_t / n' term
 *   eps         norms: X in [-0.01, 0.01] and eps = 0.25: eps dominates the variance
 *
 * Every mode runs at every shape of at most 2^24 elements; the two of 2^28 run mild only. (With
 * the running sum's rescale taken out of stdlib/softmax.tl, or the delta term out of LayerNorm's
 * merge, every streaming case of late-max, resp. drift, fails in every T, while f16 and bf16 pass
 * mild: H200, seed 7.) W is in
 * [0.5, 1.5], B in [-1, 1], eps 1e-5 except in the eps mode; all inputs are rounded to T. Y is
 * poisoned with 0xFF bytes (NaN in every float format) and followed by a poisoned guard region that
 * must stay poisoned. The reference is computed in double from the same rounded inputs, row by row
 * inside the parallel checker (nothing of the size of the output is materialized). Each element must
 * satisfy |y - ref| <= atol * scale + rtol * |ref| + floor (+ the LayerNorm mean term below):
 *
 *   T      softmax atol, rtol    norms atol, rtol
 *   f32    2e-6, 1e-4            1e-4, 1e-4
 *   f16    1e-3, 4e-3            1e-3, 4e-3     (output rounding: 2^-11 relative)
 *   bf16   4e-3, 1.6e-2          4e-3, 1.6e-2   (2^-8)
 *
 * scale is the row's largest |reference|, at most 1. For softmax that is the row's largest
 * probability (1 / sum of exp(x - max)): softmax outputs are probabilities, and in a row of 32768
 * every one is below 5e-4, so a fixed atol of 1e-3 would pass a row of zeros; for the norms it is 1
 * but where eps dominates or the row is 0 (outputs far below 1). floor is the output format's
 * absolute resolution: 2^-24 for f16 (its subnormals' spacing: probabilities of a long flat row are
 * there), 2^-126 for bf16 and f32 (f32 math flushes subnormals). LayerNorm adds
 * (ceil(log2 N) + 2) * 2^-24 * |mean| * rstd * |W| (0 for N = 1): the kernel's f32 mean is off by
 * some units in the last place of |mean| (a tree sum of N values, the division, the tiles'
 * merges), and every output carries that error times rstd * W; it matters only where the mean is
 * large against the spread (large-mean; constant rows, where rstd = 1/sqrt(eps)). A NaN, an
 * infinity, an element left poisoned or a changed guard byte fails the case. One line per case
 * (PASS / FAIL / SKIP, kernel, T, shape, mode, worst error as a fraction of the tolerance), then,
 * after the benchmark, exactly "P passed, F failed".
 *
 * Self-test (--self-test, on the CPU). Host models of the kernels (f32 math, T rounding where the
 * .tl rounds, BN = 1024, both paths) feed the checker on every mode at 1x1, 8x7, 8x1000, 8x1024,
 * 8x2048, 8x3073 and 3x2500 in every T. The correct models must pass everywhere. Broken models
 * (softmax: running sum not rescaled when the running max grows, the padding past N not masked,
 * the max never subtracted, exp2 without log2(e); norms: LayerNorm's merge without the delta term,
 * an unweighted mean of the tiles' means, E[x^2] - E[x]^2 variance, no bias, RMSNorm over BN-padded
 * tiles, eps ignored, eps fixed at 1e-5; any kernel: rows shifted by one, the last element left
 * unwritten, the last element off, a write past the end) must fail wherever they change an output
 * materially (a NaN / infinity / unwritten element, a guard byte, or an element off by 5% of its
 * row's largest |output|), and each must do so on the inputs made to expose it (its "must" modes),
 * in every T (the E[x^2] - E[x]^2 variance: f16 and f32; bf16 cannot hold a mean large enough
 * against its spread). Exit 0 when every check came out as required.
 *
 * Benchmark. Every f16 variant of each kernel at its benchmark shape (softmax 8192 x 32768, rmsnorm
 * and layernorm 32768 x 8192), timed with CUDA events (10 warm-up runs, median of R), against the peer
 * measured just before it in the same run: cuMemcpyDtoD of the M x N elements of X (bytes read +
 * written: 2*M*N*2, as the kernel's 2*M*N*2 + N*2 per weight vector). The table goes to stdout and to
 * OUTDIR/rows_bench.txt; each kernel's best variant decides its verdict against the target (0.9 of
 * the peer). The verdicts are reported, not enforced: they do not change the exit status.
 *
 * Exit 0 if no correctness case failed, 1 otherwise (or if nothing ran), 2 if there is no GPU.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpu_common.h"

enum { WARMUP = 10, DEFAULT_REPS = 50 };
#define TARGET 0.9
#define EPS 1e-5f
/* Elements after the end of Y, poisoned and checked: a kernel that ignores the bound of the last
 * row's last tile writes there. */
#define GUARD ((size_t)32768)
#define MAX_VARIANTS 64


/* ---------------------------------------------------------------------------- kernels, shapes */

typedef enum kernel_kind { SOFTMAX, RMSNORM, LAYERNORM, NKINDS } kernel_kind;

static const struct kind_spec {
  const char *name;
  int vectors; /* weight / bias vectors of N elements: 0, 1 (W), 2 (W, B) */
  float x_hi;  /* mild inputs: X uniform in [-x_hi, x_hi) */
  size_t bench_m, bench_n;
} kinds[NKINDS] = {
    {"softmax", 0, 8.0f, 8192, 32768},
    {"rmsnorm", 1, 4.0f, 32768, 8192},
    {"layernorm", 2, 4.0f, 32768, 8192},
};

/* The inputs (see the header): which kernels take each mode, and the norms' eps in it. */
typedef enum input_mode {
  MODE_MILD,
  MODE_OFFSET,
  MODE_LATE_MAX,
  MODE_WIDE,
  MODE_LARGE_MEAN,
  MODE_CONST,
  MODE_DRIFT,
  MODE_EPS,
  NMODES
} input_mode;

static const struct mode_spec {
  const char *name;
  bool softmax, norms;
  float eps;
} modes[NMODES] = {
    {"mild", true, true, EPS},   {"offset", true, false, EPS},     {"late-max", true, false, EPS},
    {"wide", true, false, EPS},  {"large-mean", false, true, EPS}, {"constant", false, true, EPS},
    {"drift", false, true, EPS}, {"eps", false, true, 0.25f},
};

static bool mode_applies(input_mode md, kernel_kind k)
{
  return k == SOFTMAX ? modes[md].softmax : modes[md].norms;
}

static const struct shape {
  size_t m, n;
} shapes[] = {{1, 1},      {7, 1000},    {8192, 32768}, {32768, 8192},
              {3, 100003}, {100000, 64}, {32, 65536},   {64, 65537}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])
#define QUICK_MAX_ELEMS ((size_t)1 << 24)
#define HOSTILE_MAX_ELEMS ((size_t)1 << 24) /* the modes other than mild run up to this size */
#define STREAM_M 16                         /* the rows of each variant's shape 16 x (2 BN + 1) */

static const tl_dtype types[] = {TL_F16, TL_BF16, TL_F32};
#define NTYPES (sizeof types / sizeof types[0])

/* BN and THREADS of the generic variant (launch constants compiled for large sizes: tilec without
 * --size), for when there is no variants.txt (stdlib/softmax.tl: BN = 65536 / sizeof(T), 1024
 * threads; stdlib/norms.tl: RMSNorm streams tiles of 32 KB with 512 threads, LayerNorm BN = 8192
 * with 128 * sizeof(T) threads). */
static void default_config(kernel_kind k, tl_dtype t, int *bn, int *threads)
{
  const int size = (int)tl_dtype_size(t);
  *bn = k == SOFTMAX ? 65536 / size : k == RMSNORM ? 32768 / size : 8192;
  *threads = k == SOFTMAX ? 1024 : k == RMSNORM ? 512 : 128 * size;
}

static void tolerance(kernel_kind k, tl_dtype t, double *atol, double *rtol)
{
  switch (t) {
  case TL_F16: *atol = 1e-3, *rtol = 4e-3; break;
  case TL_BF16: *atol = 4e-3, *rtol = 1.6e-2; break;
  default: /* f32: ex2.approx / rsqrt.approx and f32 sums; the norms' bound is the looser one asked */
    *atol = k == SOFTMAX ? 2e-6 : 1e-4;
    *rtol = 1e-4;
    break;
  }
}

/* ------------------------------------------------------------------------------ element access */

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

/* Still all 0xFF bytes: never written. */
static inline bool is_poison(tl_dtype t, const void *p, size_t i)
{
  return t == TL_F32 ? ((const uint32_t *)p)[i] == 0xFFFFFFFFu : ((const uint16_t *)p)[i] == 0xFFFFu;
}

typedef struct fill_job {
  tl_dtype t;
  void *p;
  float lo, hi;
} fill_job;

static size_t fill_body(void *arg, size_t begin, size_t end, uint64_t seed)
{
  const fill_job *f = arg;
  uint64_t s = seed;
  for (size_t i = begin; i < end; i++)
    store_elem(f->t, f->p, i, gpu_random_float(&s, f->lo, f->hi));
  return 0;
}

static void fill(tl_dtype t, void *p, size_t n, float lo, float hi, uint64_t seed)
{
  fill_job f = {t, p, lo, hi};
  gpu_parallel_for(n, seed, fill_body, &f);
}

/* X of M x N in mode `mode`: element (r, j) from the chunk's random stream and, for what is constant
 * along a row, from (seed, r) alone, so that the data does not depend on the chunking. */
typedef struct x_job {
  tl_dtype t;
  void *p;
  size_t n;
  kernel_kind kind;
  input_mode mode;
  uint64_t row_seed;
} x_job;

/* Uniform in [0, 1) from (seed, r). */
static double row_uniform(uint64_t seed, size_t r)
{
  uint64_t s = seed ^ ((uint64_t)r * 0xD1B54A32D192ED03ull);
  return (double)(gpu_next_random(&s) >> 11) * (1.0 / 9007199254740992.0);
}

/* late-max: the column of row r's spike (odd rows): one of the last 4. */
static size_t spike_col(size_t r, size_t n)
{
  const size_t back = (r / 2) % 4;
  return back < n ? n - 1 - back : 0;
}

static size_t x_body(void *arg, size_t begin, size_t end, uint64_t seed)
{
  const x_job *f = arg;
  uint64_t s = seed;
  for (size_t i = begin; i < end; i++) {
    const size_t r = i / f->n, j = i % f->n;
    const float u = gpu_random_float(&s, -1.0f, 1.0f);
    const float pos = (float)(((double)j + 0.5) / (double)f->n); /* in (0, 1) along the row */
    float v;
    switch (f->mode) {
    case MODE_OFFSET: v = 8.0f * u + (r % 2 ? -100.0f : 100.0f); break;
    case MODE_LATE_MAX:
      v = r % 2 == 0 ? -8.0f + 16.0f * pos + 0.5f * u : j == spike_col(r, f->n) ? 16.0f : 8.0f * u;
      break;
    case MODE_WIDE: v = u * (float)(1u << (r % 8)); break;
    case MODE_LARGE_MEAN: v = 1000.0f + (f->t == TL_BF16 ? 16.0f : 1.0f) * u; break;
    case MODE_CONST: v = r % 4 == 0 ? 0.0f : (float)(8.0 * row_uniform(f->row_seed, r) - 4.0); break;
    case MODE_DRIFT: v = (r % 2 ? 4.0f - 8.0f * pos : -4.0f + 8.0f * pos) + 0.25f * u; break;
    case MODE_EPS: v = 0.01f * u; break;
    default: v = kinds[f->kind].x_hi * u; break;
    }
    store_elem(f->t, f->p, i, v);
  }
  return 0;
}

/* --------------------------------------------------------------------------------- variants */

typedef enum variant_state { V_OK, V_MISSING, V_BROKEN } variant_state;

typedef struct variant {
  char name[96]; /* the PTX file's stem */
  kernel_kind kind;
  tl_dtype t;
  int bn, threads;
  bool is_default; /* named KERNEL_T: runs every correctness shape */
  variant_state state;
  tl_module *mod;
  tl_kernel *kernel;
  /* the correctness case at the kernel's benchmark shape, if one ran */
  bool checked_at_bench, correct_at_bench;
} variant;

static bool kind_from_name(const char *name, kernel_kind *out)
{
  for (int k = 0; k < NKINDS; k++)
    if (strcmp(kinds[k].name, name) == 0) {
      *out = (kernel_kind)k;
      return true;
    }
  return false;
}

static void set_default_flag(variant *v)
{
  char stem[96];
  snprintf(stem, sizeof stem, "%s_%s", kinds[v->kind].name, tl_dtype_name(v->t));
  v->is_default = strcmp(stem, v->name) == 0;
}

/* PTXDIR/variants.txt: "NAME KERNEL T BN THREADS" per line, '#' comments. Returns the number of
 * variants, or -1 if the file does not exist; a malformed line is a failed case. */
static int read_manifest(const char *dir, variant *vs, int max)
{
  char path[4096 + 32];
  snprintf(path, sizeof path, "%s/variants.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[512];
  int n = 0, lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash)
      *hash = '\0';
    char name[96], kernel[32], type[16], extra[2];
    int bn, threads;
    int got = sscanf(line, "%95s %31s %15s %d %d %1s", name, kernel, type, &bn, &threads, extra);
    if (got <= 0)
      continue; /* blank */
    variant v = {0};
    snprintf(v.name, sizeof v.name, "%s", name);
    if (got != 5 || !kind_from_name(kernel, &v.kind) || !tl_dtype_from_name(type, &v.t) ||
        (v.t != TL_F16 && v.t != TL_BF16 && v.t != TL_F32) || bn < 1 || bn > (1 << 22) || threads < 1) {
      gpu_report(false, "%s line %d: expected \"NAME softmax|rmsnorm|layernorm f16|bf16|f32 BN THREADS\"",
                 path, lineno);
      continue;
    }
    if (n == max) {
      gpu_report(false, "%s: more than %d variants", path, max);
      break;
    }
    v.bn = bn;
    v.threads = threads;
    set_default_flag(&v);
    vs[n++] = v;
  }
  fclose(f);
  return n;
}

static int default_variants(variant *vs)
{
  int n = 0;
  for (int k = 0; k < NKINDS; k++)
    for (size_t t = 0; t < NTYPES; t++) {
      variant v = {.kind = (kernel_kind)k, .t = types[t]};
      default_config((kernel_kind)k, types[t], &v.bn, &v.threads);
      snprintf(v.name, sizeof v.name, "%s_%s", kinds[k].name, tl_dtype_name(types[t]));
      v.is_default = true;
      vs[n++] = v;
    }
  return n;
}

/* Load NAME.ptx and check that its kernel has the variant's thread count and element type, so that
 * rows.sh's list and the PTX agree. */
static void load_variant(tl_context *ctx, const char *dir, variant *v)
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
  const char *kname = kinds[v->kind].name;
  if ((st = tl_module_get_kernel(v->mod, kname, &v->kernel)) != TL_OK) {
    v->state = V_BROKEN;
    gpu_report(false, "%s: %s: %s", v->name, tl_status_name(st), tl_context_message(ctx));
    return;
  }
  const tl_kernel_info *info = tl_kernel_get_info(v->kernel);
  if (info->threads != (uint32_t)v->threads || info->nargs < 1 || info->params[0].dtype != v->t) {
    v->state = V_BROKEN;
    gpu_report(false,
               "%s: the PTX's %s has threads=%u and X of %s, but the variant list says THREADS=%d "
               "and T=%s",
               v->name, kname, info->threads, info->nargs ? tl_dtype_name(info->params[0].dtype) : "?",
               v->threads, tl_dtype_name(v->t));
    return;
  }
  v->state = V_OK;
  printf("     %s: %s threads=%u smem=%u BN=%d grid x = %s\n", v->name, kname, info->threads, info->smem,
         v->bn, info->grid_text[0]);
}


/* ---------------------------------------------------------------------------------- buffers */

typedef struct buffers {
  size_t cap_elems, cap_n; /* X: cap_elems, Y: cap_elems + GUARD, W and B: cap_n elements */
  void *x, *y, *w, *b;     /* host, 4 bytes per element at most */
  tl_devptr dx, dy, dw, db;
} buffers;

static bool host_alloc(buffers *bu, size_t cap_elems, size_t cap_n)
{
  bu->cap_elems = cap_elems;
  bu->cap_n = cap_n;
  bu->x = malloc(cap_elems * 4);
  bu->y = malloc((cap_elems + GUARD) * 4);
  bu->w = malloc(cap_n * 4);
  bu->b = malloc(cap_n * 4);
  if (!bu->x || !bu->y || !bu->w || !bu->b) {
    printf("gpu_rows: out of host memory (%.1f GiB)\n", (2.0 * cap_elems + GUARD) * 4 / (1 << 30));
    return false;
  }
  return true;
}

static void host_free(buffers *bu)
{
  free(bu->x);
  free(bu->y);
  free(bu->w);
  free(bu->b);
}

static bool buffers_alloc(tl_context *ctx, buffers *bu, size_t cap_elems, size_t cap_n)
{
  if (!host_alloc(bu, cap_elems, cap_n))
    return false;
  tl_status st;
  if ((st = tl_malloc(ctx, cap_elems * 4, &bu->dx)) != TL_OK ||
      (st = tl_malloc(ctx, (cap_elems + GUARD) * 4, &bu->dy)) != TL_OK ||
      (st = tl_malloc(ctx, cap_n * 4, &bu->dw)) != TL_OK ||
      (st = tl_malloc(ctx, cap_n * 4, &bu->db)) != TL_OK) {
    printf("gpu_rows: device buffers: %s: %s\n", tl_status_name(st), tl_context_message(ctx));
    return false;
  }
  return true;
}

static void buffers_free(tl_context *ctx, buffers *bu)
{
  tl_free(ctx, bu->dx);
  tl_free(ctx, bu->dy);
  tl_free(ctx, bu->dw);
  tl_free(ctx, bu->db);
  host_free(bu);
}

/* One seed per (kernel, T, shape, mode), so that every variant of a kernel sees the same data. */
static uint64_t case_seed(uint64_t seed, kernel_kind k, tl_dtype t, size_t m, size_t n, input_mode mode)
{
  uint64_t s = seed ^ ((uint64_t)m * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)n * 0xC2B2AE3D27D4EB4Full) ^
               ((uint64_t)((k * 16 + (int)t) * NMODES + mode) * 0x165667B19E3779F9ull);
  return gpu_next_random(&s);
}

/* X (and W, B) for kernel k at M x N in mode `mode`, rounded to T, into the host buffers. */
static void make_inputs(const buffers *bu, kernel_kind k, tl_dtype t, size_t m, size_t n, input_mode mode,
                        uint64_t seed)
{
  uint64_t s = seed;
  const uint64_t sx = gpu_next_random(&s), sw = gpu_next_random(&s), sb = gpu_next_random(&s);
  x_job xj = {.t = t, .p = bu->x, .n = n, .kind = k, .mode = mode, .row_seed = gpu_next_random(&s)};
  gpu_parallel_for(m * n, sx, x_body, &xj);
  if (kinds[k].vectors >= 1)
    fill(t, bu->w, n, 0.5f, 1.5f, sw);
  if (kinds[k].vectors >= 2)
    fill(t, bu->b, n, -1.0f, 1.0f, sb);
}

static tl_status upload_inputs(tl_context *ctx, const buffers *bu, kernel_kind k, tl_dtype t, size_t m,
                               size_t n)
{
  const size_t es = tl_dtype_size(t);
  tl_status st = tl_memcpy_htod(ctx, bu->dx, bu->x, m * n * es);
  if (st == TL_OK && kinds[k].vectors >= 1)
    st = tl_memcpy_htod(ctx, bu->dw, bu->w, n * es);
  if (st == TL_OK && kinds[k].vectors >= 2)
    st = tl_memcpy_htod(ctx, bu->db, bu->b, n * es);
  return st;
}

/* The launch arguments in .tl order; shape must outlive the launch call. */
static int make_args(const buffers *bu, kernel_kind k, tl_dtype t, const int64_t shape[2], float eps,
                     tl_arg *args)
{
  int nargs = 0;
  args[nargs++] = tl_arg_tensor(bu->dx, t, 2, shape);
  if (kinds[k].vectors >= 1)
    args[nargs++] = tl_arg_tensor(bu->dw, t, 1, &shape[1]);
  if (kinds[k].vectors >= 2)
    args[nargs++] = tl_arg_tensor(bu->db, t, 1, &shape[1]);
  args[nargs++] = tl_arg_tensor(bu->dy, t, 2, shape);
  if (k != SOFTMAX)
    args[nargs++] = tl_arg_f32(eps);
  return nargs;
}

/* ------------------------------------------------------------------------------- the checker */

/* Rows are checked in groups of about 64K elements; group g is chunk g of gpu_parallel_for (run over
 * ngroups * GPU_CHUNK "elements", one body call per chunk), so that even 3 long rows or 8192 rows of
 * 32768 spread over the cores. Per-group results need no lock. */
typedef struct check_job {
  kernel_kind kind;
  tl_dtype t;
  size_t m, n, rows_per_group;
  const void *x, *w, *b, *y;
  double eps, atol, rtol;
  double *worst;     /* largest finite |error| / tolerance */
  size_t *first_bad; /* flat index, SIZE_MAX if none */
  double *first_ref; /* reference at first_bad */
  size_t *unwritten; /* elements still poisoned */
  size_t *nonfinite; /* NaN / infinity that were written */
  bool *oom;
} check_job;

/* The reference row r into ref[0..N) and each element's tolerance into tol[0..N) (see the header). */
static void reference_row(const check_job *c, size_t r, double *ref, double *tol)
{
  const size_t n = c->n, base = r * n;
  double mean_err = 0; /* LayerNorm: the f32 mean's error times rstd, without W */
  switch (c->kind) {
  case SOFTMAX: {
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j < n; j++) {
      ref[j] = load_elem(c->t, c->x, base + j);
      mx = ref[j] > mx ? ref[j] : mx;
    }
    for (size_t j = 0; j < n; j++)
      sum += ref[j] = exp(ref[j] - mx);
    for (size_t j = 0; j < n; j++)
      ref[j] /= sum;
    break;
  }
  case RMSNORM: {
    double ss = 0;
    for (size_t j = 0; j < n; j++) {
      ref[j] = load_elem(c->t, c->x, base + j);
      ss += ref[j] * ref[j];
    }
    const double rstd = 1.0 / sqrt(ss / (double)n + c->eps);
    for (size_t j = 0; j < n; j++)
      ref[j] = ref[j] * rstd * load_elem(c->t, c->w, j);
    break;
  }
  case LAYERNORM:
  default: {
    double sum = 0, var = 0;
    for (size_t j = 0; j < n; j++) {
      ref[j] = load_elem(c->t, c->x, base + j);
      sum += ref[j];
    }
    const double mean = sum / (double)n;
    for (size_t j = 0; j < n; j++)
      var += (ref[j] - mean) * (ref[j] - mean);
    const double rstd = 1.0 / sqrt(var / (double)n + c->eps);
    /* ceil(log2 N) + 2 roundings of |mean| (a tree sum, the division, the merges); none for N = 1 */
    const double ulps = n > 1 ? ceil(log2((double)n)) + 2 : 0;
    mean_err = ulps * ldexp(fabs(mean), -24) * rstd;
    for (size_t j = 0; j < n; j++)
      ref[j] = (ref[j] - mean) * rstd * load_elem(c->t, c->w, j) + load_elem(c->t, c->b, j);
    break;
  }
  }
  double big = 0; /* the row's largest |reference| (softmax: its largest probability, 1 / sum) */
  for (size_t j = 0; j < n; j++)
    big = fmax(big, fabs(ref[j]));
  /* + the output's absolute floor: f16 rounds below 2^-14 in steps of 2^-24; f32 math flushes below
   * 2^-126 (bf16 and f32) */
  const double abs_tol = c->atol * fmin(1.0, big) + ldexp(1.0, c->t == TL_F16 ? -24 : -126);
  for (size_t j = 0; j < n; j++)
    tol[j] = abs_tol + c->rtol * fabs(ref[j]) +
             (mean_err > 0 ? mean_err * fabs(load_elem(c->t, c->w, j)) : 0);
}

static size_t check_rows(void *arg, size_t begin, size_t end, uint64_t seed)
{
  (void)end, (void)seed;
  const check_job *c = arg;
  const size_t g = begin / GPU_CHUNK;
  const size_t r0 = g * c->rows_per_group;
  const size_t r1 = r0 + c->rows_per_group < c->m ? r0 + c->rows_per_group : c->m;
  double worst = 0, first_ref = 0;
  size_t bad = 0, first = SIZE_MAX, unwritten = 0, nonfinite = 0;
  double *ref = malloc(c->n * sizeof *ref), *tols = malloc(c->n * sizeof *tols);
  if (!ref || !tols) {
    free(ref);
    free(tols);
    c->oom[g] = true;
    return (r1 - r0) * c->n;
  }
  for (size_t r = r0; r < r1; r++) {
    reference_row(c, r, ref, tols);
    for (size_t j = 0; j < c->n; j++) {
      const size_t i = r * c->n + j;
      const double got = load_elem(c->t, c->y, i);
      const double err = fabs(got - ref[j]);
      const double tol = tols[j];
      if (isfinite(got) && err / tol > worst)
        worst = err / tol;
      if (!(err <= tol) || !isfinite(got)) { /* NaN fails the comparison too */
        if (bad++ == 0)
          first = i, first_ref = ref[j];
        if (is_poison(c->t, c->y, i))
          unwritten++;
        else if (!isfinite(got))
          nonfinite++;
      }
    }
  }
  free(ref);
  free(tols);
  c->worst[g] = worst;
  c->first_bad[g] = first;
  c->first_ref[g] = first_ref;
  c->unwritten[g] = unwritten;
  c->nonfinite[g] = nonfinite;
  return bad;
}

/* Check Y (host, with its guard) of kernel k at M x N against the reference from the host's X, W and
 * B: whether it passes, the worst error as a fraction of the tolerance, and a sentence for the case's
 * line in text (what failed first, or the worst error). */
static bool check_case(const buffers *bu, kernel_kind k, tl_dtype t, size_t m, size_t n, float eps,
                       double *worst_out, char *text, size_t size)
{
  const size_t es = tl_dtype_size(t), elems = m * n;
  size_t rpg = 65536 / n;
  rpg = rpg ? rpg : 1;
  const size_t ngroups = (m + rpg - 1) / rpg;
  check_job c = {.kind = k,
                 .t = t,
                 .m = m,
                 .n = n,
                 .rows_per_group = rpg,
                 .x = bu->x,
                 .w = bu->w,
                 .b = bu->b,
                 .y = bu->y,
                 .eps = (double)eps};
  tolerance(k, t, &c.atol, &c.rtol);
  c.worst = calloc(ngroups, sizeof *c.worst);
  c.first_bad = calloc(ngroups, sizeof *c.first_bad);
  c.first_ref = calloc(ngroups, sizeof *c.first_ref);
  c.unwritten = calloc(ngroups, sizeof *c.unwritten);
  c.nonfinite = calloc(ngroups, sizeof *c.nonfinite);
  c.oom = calloc(ngroups, sizeof *c.oom);
  bool ok = false;
  double worst = 0;
  if (!c.worst || !c.first_bad || !c.first_ref || !c.unwritten || !c.nonfinite || !c.oom) {
    snprintf(text, size, "out of host memory");
    goto done;
  }
  const size_t bad = gpu_parallel_for(ngroups * GPU_CHUNK, 0, check_rows, &c);
  size_t guard_bad = 0, guard_first = 0;
  const unsigned char *guard = (const unsigned char *)bu->y + elems * es;
  for (size_t i = 0; i < GUARD * es; i++)
    if (guard[i] != 0xFF && guard_bad++ == 0)
      guard_first = i / es;
  double first_ref = 0;
  size_t first = SIZE_MAX, unwritten = 0, nonfinite = 0;
  bool oom = false;
  for (size_t g = 0; g < ngroups; g++) {
    worst = c.worst[g] > worst ? c.worst[g] : worst;
    if (first == SIZE_MAX && c.first_bad[g] != SIZE_MAX)
      first = c.first_bad[g], first_ref = c.first_ref[g];
    unwritten += c.unwritten[g];
    nonfinite += c.nonfinite[g];
    oom |= c.oom[g];
  }
  if (oom) {
    snprintf(text, size, "out of host memory in the checker");
  } else if (bad) {
    const size_t r = first / n, j = first % n;
    char inputs[160];
    int len = snprintf(inputs, sizeof inputs, "X = %.6g", load_elem(t, bu->x, first));
    if (kinds[k].vectors >= 1)
      len += snprintf(inputs + len, sizeof inputs - (size_t)len, ", W = %.6g", load_elem(t, bu->w, j));
    if (kinds[k].vectors >= 2)
      snprintf(inputs + len, sizeof inputs - (size_t)len, ", B = %.6g", load_elem(t, bu->b, j));
    snprintf(text, size,
             "%zu of %zu elements wrong (%zu never written, %zu NaN/inf), worst finite error %.3g of "
             "tolerance; first Y[%zu, %zu] = %.8g, expected %.8g (%s)",
             bad, elems, unwritten, nonfinite, worst, r, j, load_elem(t, bu->y, first), first_ref, inputs);
  } else if (guard_bad) {
    snprintf(text, size, "wrote past the end of Y: %zu guard bytes changed, first at element M*N+%zu",
             guard_bad, guard_first);
  } else {
    ok = true;
    snprintf(text, size,
             "worst error %.3f of tolerance (atol %g x min(1, the row's largest |ref|), rtol %g%s)", worst,
             c.atol, c.rtol, k == LAYERNORM ? ", + the f32 mean's error" : "");
  }
done:
  free(c.worst);
  free(c.first_bad);
  free(c.first_ref);
  free(c.unwritten);
  free(c.nonfinite);
  free(c.oom);
  if (worst_out)
    *worst_out = worst;
  return ok;
}

static const char *path_name(const variant *v, size_t n)
{
  return n <= (size_t)v->bn ? "in registers" : "streaming";
}

/* One variant at one shape in one mode: returns whether it passed. */
static bool run_case(tl_context *ctx, const buffers *bu, variant *v, size_t m, size_t n, input_mode mode,
                     uint64_t seed)
{
  const kernel_kind k = v->kind;
  const tl_dtype t = v->t;
  const size_t es = tl_dtype_size(t), elems = m * n;
  const float eps = modes[mode].eps;
  char label[256], text[768];
  snprintf(label, sizeof label, "%s %s %zux%zu %s [%s, BN=%d, %d threads, %s]", kinds[k].name,
           tl_dtype_name(t), m, n, modes[mode].name, v->name, v->bn, v->threads, path_name(v, n));
  bool ok = false;

  make_inputs(bu, k, t, m, n, mode, seed);
  tl_status st;
#define STEP(call)                                                                         \
  do {                                                                                     \
    if ((st = (call)) != TL_OK) {                                                          \
      gpu_report(false, "%s: %s: %s", label, tl_status_name(st), tl_context_message(ctx)); \
      goto done;                                                                           \
    }                                                                                      \
  } while (0)
  STEP(upload_inputs(ctx, bu, k, t, m, n));
  STEP(tl_memset_d8(ctx, bu->dy, 0xFF, (elems + GUARD) * es));
  const int64_t shape[2] = {(int64_t)m, (int64_t)n};
  tl_arg args[6];
  const int nargs = make_args(bu, k, t, shape, eps, args);
  STEP(tl_launch(v->kernel, args, nargs, NULL));
  STEP(tl_synchronize(ctx));
  STEP(tl_memcpy_dtoh(ctx, bu->y, bu->dy, (elems + GUARD) * es));
#undef STEP

  ok = check_case(bu, k, t, m, n, eps, NULL, text, sizeof text);
  gpu_report(ok, "%s: %s", label, text);

done:
  if (m == kinds[k].bench_m && n == kinds[k].bench_n && mode == MODE_MILD) {
    v->checked_at_bench = true;
    v->correct_at_bench = ok;
  }
  return ok;
}

/* -------------------------------------------------------------------------------- benchmark */

typedef struct bench_row {
  const variant *v;
  size_t m, n;
  double bytes, ms, peer_ms; /* ms < 0: not measured */
  const char *why;           /* why not measured */
} bench_row;

static double row_tbs(const bench_row *r) { return r->bytes / (r->ms * 1e-3) / 1e12; }
static double row_peer_tbs(const bench_row *r)
{
  return 2.0 * (double)(r->m * r->n * tl_dtype_size(r->v->t)) / (r->peer_ms * 1e-3) / 1e12;
}
static double row_ratio(const bench_row *r) { return row_tbs(r) / row_peer_tbs(r); }
static bool row_counts(const bench_row *r) /* measured and not known to compute wrong results */
{
  return r->ms > 0 && r->peer_ms > 0 && !(r->v->checked_at_bench && !r->v->correct_at_bench);
}

static void print_bench(FILE *f, const bench_row *rows, int nrows, const char *device, uint64_t seed,
                        int reps)
{
  fprintf(f, "# gpu_rows benchmark: %s, median of %d runs after %d warm-up, seed %llu\n", device, reps,
          WARMUP, (unsigned long long)seed);
  fprintf(f, "# TB/s counts bytes read + written (X, Y, and W / B once); peer = cuMemcpyDtoD of X's "
             "M*N elements (2*M*N*2 bytes moved), timed just before each kernel\n");
  fprintf(f, "%-22s %-11s %-11s %-12s %10s %8s %10s %7s %7s  %s\n", "variant", "shape", "BN/threads", "path",
          "median_ms", "TB/s", "peer_TB/s", "ratio", "target", "result");
  for (int i = 0; i < nrows; i++) {
    const bench_row *r = &rows[i];
    char shape[32], cfg[32];
    snprintf(shape, sizeof shape, "%zux%zu", r->m, r->n);
    snprintf(cfg, sizeof cfg, "%d/%d", r->v->bn, r->v->threads);
    if (r->ms < 0 || r->peer_ms <= 0) {
      fprintf(f, "%-22s %-11s %-11s %-12s %10s %8s %10s %7s %7.2f  FAIL (%s)\n", r->v->name, shape, cfg,
              path_name(r->v, r->n), "-", "-", "-", "-", TARGET, r->why ? r->why : "not measured");
      continue;
    }
    const char *note = !r->v->checked_at_bench   ? " (results not checked at this shape)"
                       : !r->v->correct_at_bench ? " (WRONG RESULTS in the correctness run)"
                                                 : "";
    fprintf(f, "%-22s %-11s %-11s %-12s %10.4f %8.3f %10.3f %7.3f %7.2f  %s%s\n", r->v->name, shape, cfg,
            path_name(r->v, r->n), r->ms, row_tbs(r), row_peer_tbs(r), row_ratio(r), TARGET,
            row_counts(r) && row_ratio(r) >= TARGET ? "PASS" : "FAIL", note);
  }
  for (int k = 0; k < NKINDS; k++) {
    const bench_row *best = NULL;
    bool any = false;
    for (int i = 0; i < nrows; i++) {
      if (rows[i].v->kind != (kernel_kind)k)
        continue;
      any = true;
      if (row_counts(&rows[i]) && (!best || row_ratio(&rows[i]) > row_ratio(best)))
        best = &rows[i];
    }
    if (!any)
      fprintf(f, "# verdict %-9s: no f16 variant to time: not measured\n", kinds[k].name);
    else if (!best)
      fprintf(f, "# verdict %-9s: FAIL: no variant measured with correct results\n", kinds[k].name);
    else
      fprintf(f, "# verdict %-9s: %s: best %s at %.3f of the peer (%.3f TB/s; target %.2f)%s\n",
              kinds[k].name, row_ratio(best) >= TARGET ? "PASS" : "FAIL", best->v->name, row_ratio(best),
              row_tbs(best), TARGET,
              best->v->checked_at_bench ? "" : " (its results were not checked at this shape)");
  }
}

static void run_bench(tl_context *ctx, const buffers *bu, variant *vs, int nv, const char *outdir,
                      uint64_t seed, int reps)
{
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  bench_row rows[MAX_VARIANTS];
  int nrows = 0;
  printf("== benchmark: f16 variants, median of %d runs after %d warm-up\n", reps, WARMUP);
  fflush(stdout);
  for (int k = 0; k < NKINDS; k++) {
    const size_t m = kinds[k].bench_m, n = kinds[k].bench_n;
    bool uploaded = false;
    for (int i = 0; i < nv; i++) {
      variant *v = &vs[i];
      if (v->kind != (kernel_kind)k || v->t != TL_F16 || v->state == V_MISSING)
        continue;
      bench_row *r = &rows[nrows++];
      *r = (bench_row){.v = v, .m = m, .n = n, .ms = -1, .peer_ms = -1};
      r->bytes = 2.0 * (double)(m * n) * 2 + kinds[k].vectors * (double)n * 2;
      if (v->state != V_OK) {
        r->why = "did not load";
        continue;
      }
      if (!uploaded) {
        make_inputs(bu, (kernel_kind)k, TL_F16, m, n, MODE_MILD,
                    case_seed(seed, (kernel_kind)k, TL_F16, m, n, MODE_MILD));
        tl_status st = upload_inputs(ctx, bu, (kernel_kind)k, TL_F16, m, n);
        if (st != TL_OK) {
          printf("gpu_rows: bench upload: %s: %s\n", tl_status_name(st), tl_context_message(ctx));
          r->why = "upload failed";
          continue;
        }
        uploaded = true;
      }
      gpu_copy_arg copy = {ctx, bu->dy, bu->dx, m * n * 2};
      if (!gpu_time_median_ms(ctx, gpu_timed_copy, &copy, WARMUP, reps, &r->peer_ms)) {
        r->peer_ms = -1, r->why = "timing the peer failed";
        continue;
      }
      const int64_t shape[2] = {(int64_t)m, (int64_t)n};
      tl_arg args[6];
      gpu_launch_arg la = {ctx, v->kernel, args, make_args(bu, (kernel_kind)k, TL_F16, shape, EPS, args)};
      if (!gpu_time_median_ms(ctx, gpu_timed_launch, &la, WARMUP, reps, &r->ms)) {
        r->ms = -1, r->why = "timing the kernel failed";
        tl_synchronize(ctx); /* clear what can be cleared before the next row */
        continue;
      }
      printf("     %-22s %zux%zu: %.4f ms, %.3f TB/s; peer %.4f ms, %.3f TB/s; ratio %.3f\n", v->name, m, n,
             r->ms, row_tbs(r), r->peer_ms, row_peer_tbs(r), row_ratio(r));
      fflush(stdout);
    }
  }
  print_bench(stdout, rows, nrows, dev.name, seed, reps);
  char path[4096];
  snprintf(path, sizeof path, "%s/rows_bench.txt", outdir);
  FILE *f = fopen(path, "w");
  if (!f) {
    printf("gpu_rows: cannot write %s\n", path);
    return;
  }
  print_bench(f, rows, nrows, dev.name, seed, reps);
  fclose(f);
  printf("gpu_rows: benchmark table written to %s (its verdicts do not change the exit status)\n", path);
}

/* ---------------------------------------------------------------------------------- self-test */

/* Host models of the kernels as stdlib/softmax.tl and norms.tl compute them (f32 math, T rounding
 * where the .tl rounds, tiles of BN), correct and with the faults the self-test plants. */
typedef enum fault {
  F_NONE,
  F_SM_NO_RESCALE,
  F_SM_PAD_ZERO,
  F_SM_NO_MAX,
  F_SM_NO_LOG2E,
  F_LN_NO_DELTA,
  F_LN_MEAN_UNWEIGHTED,
  F_LN_NAIVE_VAR,
  F_LN_NO_BIAS,
  F_RMS_BN,
  F_NO_EPS,
  F_FIXED_EPS,
  F_ROW_SHIFT,
  F_POISON,
  F_ELEM_OFF,
  F_GUARD,
  NFAULTS
} fault;

#define KBIT(k) (1u << (k))
#define MBIT(md) (1u << (md))
#define NORMS (KBIT(RMSNORM) | KBIT(LAYERNORM))
#define ALL_KINDS (KBIT(SOFTMAX) | NORMS)
#define ALL_MODES ((1u << NMODES) - 1)

static const struct fault_spec {
  const char *what;
  unsigned kinds;   /* the kernels it applies to */
  unsigned must;    /* the modes made to expose it: it must fail there, in some case of every T */
  bool bf16_exempt; /* bf16 cannot expose it (see the header) */
} faults[NFAULTS] = {
    [F_NONE] = {"as the .tl computes", ALL_KINDS, 0, false},
    [F_SM_NO_RESCALE] = {"running sum not rescaled when the running max grows", KBIT(SOFTMAX),
                         MBIT(MODE_LATE_MAX), false},
    [F_SM_PAD_ZERO] = {"padding past N not masked (zeros in the max and the sum)", KBIT(SOFTMAX),
                       MBIT(MODE_OFFSET), false},
    [F_SM_NO_MAX] = {"max never subtracted", KBIT(SOFTMAX), MBIT(MODE_OFFSET), false},
    [F_SM_NO_LOG2E] = {"exp2(x - max) without log2(e)", KBIT(SOFTMAX), MBIT(MODE_MILD), false},
    [F_LN_NO_DELTA] = {"streaming merge without delta^2 n n_t / n'", KBIT(LAYERNORM), MBIT(MODE_DRIFT),
                       false},
    [F_LN_MEAN_UNWEIGHTED] = {"streaming mean = unweighted mean of the tiles' means", KBIT(LAYERNORM),
                              MBIT(MODE_DRIFT), false},
    [F_LN_NAIVE_VAR] = {"variance as E[x^2] - E[x]^2 in f32", KBIT(LAYERNORM), MBIT(MODE_LARGE_MEAN), true},
    [F_LN_NO_BIAS] = {"bias not added", KBIT(LAYERNORM), MBIT(MODE_MILD) | MBIT(MODE_CONST), false},
    [F_RMS_BN] = {"mean of squares over whole tiles of BN (padding counted)", KBIT(RMSNORM), MBIT(MODE_MILD),
                  false},
    [F_NO_EPS] = {"eps ignored", NORMS, MBIT(MODE_CONST) | MBIT(MODE_EPS), false},
    [F_FIXED_EPS] = {"eps fixed at 1e-5 (the argument ignored)", NORMS, MBIT(MODE_EPS), false},
    [F_ROW_SHIFT] = {"row r holds row r + 1's result (off by one row)", ALL_KINDS, MBIT(MODE_MILD), false},
    [F_POISON] = {"last element never written", ALL_KINDS, ALL_MODES, false},
    [F_ELEM_OFF] = {"last element off", ALL_KINDS, ALL_MODES, false},
    [F_GUARD] = {"a write past the end of Y (into the guard)", ALL_KINDS, ALL_MODES, false},
};

#define LOG2E_F 1.4426950408889634f

static inline float to_t(tl_dtype t, float v)
{
  switch (t) {
  case TL_F16: return tl_f16_to_float(tl_f16_from_float(v));
  case TL_BF16: return tl_bf16_to_float(tl_bf16_from_float(v));
  default: return v;
  }
}

/* An f32 sum as a block reduces: runs of 32 in order, then pairwise. */
static float sum_f32(const float *v, size_t n)
{
  if (n <= 32) {
    float s = 0;
    for (size_t i = 0; i < n; i++)
      s += v[i];
    return s;
  }
  const size_t half = (n / 2 + 31) / 32 * 32;
  return sum_f32(v, half) + sum_f32(v + half, n - half);
}

static void model_softmax_row(tl_dtype t, const float *x, size_t n, size_t bn, fault f, float *y, float *tmp)
{
  const float l = f == F_SM_NO_LOG2E ? 1.0f : LOG2E_F;
  const float pad = f == F_SM_PAD_ZERO ? 0.0f : to_t(t, -1.0e30f); /* -inf in f16 */
  float m = -1.0e30f, s = 0;
  if (n <= bn) { /* one tile in registers: exp rounded to T, then summed */
    for (size_t j = 0; j < n; j++)
      m = fmaxf(m, x[j]);
    if (n < bn)
      m = fmaxf(m, pad);
    if (f == F_SM_NO_MAX)
      m = 0;
    for (size_t j = 0; j < n; j++)
      tmp[j] = to_t(t, exp2f((x[j] - m) * l));
    s = sum_f32(tmp, n) + (float)(bn - n) * to_t(t, exp2f((pad - m) * l));
    for (size_t j = 0; j < n; j++)
      y[j] = to_t(t, tmp[j] * (1.0f / s));
    return;
  }
  for (size_t k0 = 0; k0 < n; k0 += bn) { /* streaming: online max and sum over tiles of BN */
    const size_t k1 = k0 + bn < n ? k0 + bn : n, npad = k0 + bn - k1;
    float tm = npad ? pad : -1.0e30f;
    for (size_t j = k0; j < k1; j++)
      tm = fmaxf(tm, x[j]);
    tm = f == F_SM_NO_MAX ? 0.0f : fmaxf(m, tm);
    for (size_t j = k0; j < k1; j++)
      tmp[j - k0] = to_t(t, exp2f((x[j] - tm) * l));
    const float ts = sum_f32(tmp, k1 - k0) + (float)npad * to_t(t, exp2f((pad - tm) * l));
    s = (f == F_SM_NO_RESCALE ? s : s * exp2f((m - tm) * l)) + ts;
    m = tm;
  }
  for (size_t j = 0; j < n; j++)
    y[j] = to_t(t, exp2f((x[j] - m) * l) * (1.0f / s));
}

static float model_eps(float eps, fault f) { return f == F_NO_EPS ? 0.0f : f == F_FIXED_EPS ? EPS : eps; }

static void model_rmsnorm_row(tl_dtype t, const float *x, const float *w, size_t n, size_t bn, float eps,
                              fault f, float *y, float *tmp)
{
  for (size_t j = 0; j < n; j++)
    tmp[j] = x[j] * x[j];
  const float ss = sum_f32(tmp, n);
  const float count = f == F_RMS_BN ? (float)((n + bn - 1) / bn * bn) : (float)n;
  const float rstd = 1.0f / sqrtf(ss / count + model_eps(eps, f));
  for (size_t j = 0; j < n; j++)
    y[j] = to_t(t, x[j] * rstd * w[j]);
}

static void model_layernorm_row(tl_dtype t, const float *x, const float *w, const float *b, size_t n,
                                size_t bn, float eps, fault f, float *y, float *tmp)
{
  float mean, var;
  if (f == F_LN_NAIVE_VAR) {
    mean = sum_f32(x, n) / (float)n;
    for (size_t j = 0; j < n; j++)
      tmp[j] = x[j] * x[j];
    var = sum_f32(tmp, n) / (float)n - mean * mean;
  } else if (n <= bn) { /* in registers: two passes */
    mean = sum_f32(x, n) / (float)n;
    for (size_t j = 0; j < n; j++)
      tmp[j] = (x[j] - mean) * (x[j] - mean);
    var = sum_f32(tmp, n) / (float)n;
  } else { /* streaming: each tile's mean and squared deviations, merged (Chan et al.) */
    float mu = 0, m2 = 0, count = 0;
    size_t tile = 0;
    for (size_t k0 = 0; k0 < n; k0 += bn, tile++) {
      const size_t k1 = k0 + bn < n ? k0 + bn : n;
      const float nt = (float)(k1 - k0), sum = sum_f32(x + k0, k1 - k0);
      for (size_t j = k0; j < k1; j++)
        tmp[j - k0] = (x[j] - sum / nt) * (x[j] - sum / nt);
      const float sq = sum_f32(tmp, k1 - k0);
      const float n_new = count + nt, delta = sum / nt - mu;
      mu = f == F_LN_MEAN_UNWEIGHTED ? mu + delta / (float)(tile + 1) : mu + delta * nt / n_new;
      m2 = m2 + sq + (f == F_LN_NO_DELTA ? 0.0f : delta * delta * count * nt / n_new);
      count = n_new;
    }
    mean = mu;
    var = m2 / (float)n;
  }
  const float rstd = 1.0f / sqrtf(var + model_eps(eps, f));
  for (size_t j = 0; j < n; j++)
    y[j] = to_t(t, (x[j] - mean) * rstd * w[j] + (f == F_LN_NO_BIAS ? 0.0f : b[j]));
}

/* Y and its guard as the model of kernel k with fault f computes them from the host's X, W and B. */
static bool model_output(const buffers *bu, kernel_kind k, tl_dtype t, size_t m, size_t n, size_t bn,
                         float eps, fault f)
{
  const size_t es = tl_dtype_size(t);
  float *x = malloc(n * sizeof *x), *w = malloc(n * sizeof *w), *b = malloc(n * sizeof *b);
  float *y = malloc(n * sizeof *y), *tmp = malloc(n * sizeof *tmp);
  const bool ok = x && w && b && y && tmp;
  for (size_t j = 0; ok && j < n; j++) {
    w[j] = kinds[k].vectors >= 1 ? (float)load_elem(t, bu->w, j) : 0.0f;
    b[j] = kinds[k].vectors >= 2 ? (float)load_elem(t, bu->b, j) : 0.0f;
  }
  for (size_t r = 0; ok && r < m; r++) {
    const size_t src = f == F_ROW_SHIFT ? (r + 1) % m : r;
    for (size_t j = 0; j < n; j++)
      x[j] = (float)load_elem(t, bu->x, src * n + j);
    if (k == SOFTMAX)
      model_softmax_row(t, x, n, bn, f, y, tmp);
    else if (k == RMSNORM)
      model_rmsnorm_row(t, x, w, n, bn, eps, f, y, tmp);
    else
      model_layernorm_row(t, x, w, b, n, bn, eps, f, y, tmp);
    for (size_t j = 0; j < n; j++)
      store_elem(t, bu->y, r * n + j, y[j]);
  }
  free(x), free(w), free(b), free(y), free(tmp);
  if (!ok) {
    printf("gpu_rows self-test: out of host memory\n");
    return false;
  }
  memset((unsigned char *)bu->y + m * n * es, 0xFF, GUARD * es);
  const size_t last = m * n - 1;
  if (f == F_POISON) {
    memset((unsigned char *)bu->y + last * es, 0xFF, es);
  } else if (f == F_ELEM_OFF) {
    double big = 0;
    for (size_t j = 0; j < n; j++)
      big = fmax(big, fabs(load_elem(t, bu->y, (m - 1) * n + j)));
    const double v = load_elem(t, bu->y, last);
    store_elem(t, bu->y, last, (float)(v + (v < 0 ? -1 : 1) * (0.25 * fabs(v) + 0.1 * big)));
  } else if (f == F_GUARD) {
    store_elem(t, bu->y, m * n, (float)load_elem(t, bu->y, last));
  }
  return true;
}

/* Whether a broken model's Y differs from the correct model's materially, whatever the checker's
 * tolerances: a guard byte, an element unwritten or NaN / infinite where the correct one is not, or
 * an element off by more than 5% of its row's largest |output|. */
static bool material(tl_dtype t, size_t m, size_t n, const void *good, const void *bad)
{
  const size_t es = tl_dtype_size(t);
  if (memcmp((const unsigned char *)good + m * n * es, (const unsigned char *)bad + m * n * es, GUARD * es))
    return true;
  for (size_t r = 0; r < m; r++) {
    double big = 0;
    for (size_t j = 0; j < n; j++) {
      const double g = load_elem(t, good, r * n + j);
      if (isfinite(g))
        big = fmax(big, fabs(g));
    }
    for (size_t j = 0; j < n; j++) {
      const size_t i = r * n + j;
      const double g = load_elem(t, good, i), v = load_elem(t, bad, i);
      if (is_poison(t, bad, i) != is_poison(t, good, i) || (isfinite(g) && !isfinite(v)) ||
          fabs(v - g) > 0.05 * big)
        return true;
    }
  }
  return false;
}

static int self_test(uint64_t seed)
{
  enum { ST_BN = 1024 };
  static const struct shape st_shapes[] = {{1, 1},    {8, 7},    {8, 1000}, {8, 1024},
                                           {8, 2048}, {8, 3073}, {3, 2500}};
  enum { NST = sizeof st_shapes / sizeof st_shapes[0] };
  size_t cap = 0, cap_n = 0;
  for (size_t s = 0; s < NST; s++) {
    cap = st_shapes[s].m * st_shapes[s].n > cap ? st_shapes[s].m * st_shapes[s].n : cap;
    cap_n = st_shapes[s].n > cap_n ? st_shapes[s].n : cap_n;
  }
  buffers bu = {0};
  void *good = malloc((cap + GUARD) * 4);
  if (!good || !host_alloc(&bu, cap, cap_n)) {
    free(good);
    host_free(&bu);
    return 1;
  }
  /* tallies: cases, rejections and material changes per kernel, fault and mode; per T, the cases of
   * each mode where a broken model changed the output materially and was rejected */
  static int n_cases[NKINDS][NFAULTS][NMODES], n_rejected[NKINDS][NFAULTS][NMODES];
  static int n_material[NKINDS][NFAULTS][NMODES], exposed[NKINDS][NTYPES][NFAULTS][NMODES];
  static double worst_ok[NKINDS][NTYPES][NMODES];
  int checks = 0, wrong = 0;
  for (int k = 0; k < NKINDS; k++)
    for (size_t ti = 0; ti < NTYPES; ti++)
      for (int md = 0; md < NMODES; md++) {
        if (!mode_applies((input_mode)md, (kernel_kind)k))
          continue;
        for (size_t s = 0; s < NST; s++) {
          const tl_dtype t = types[ti];
          const size_t m = st_shapes[s].m, n = st_shapes[s].n, es = tl_dtype_size(t);
          const float eps = modes[md].eps;
          make_inputs(&bu, (kernel_kind)k, t, m, n, (input_mode)md,
                      case_seed(seed, (kernel_kind)k, t, m, n, (input_mode)md));
          char label[160], text[768];
          snprintf(label, sizeof label, "%s %s %zux%zu %s (BN=%d, %s)", kinds[k].name, tl_dtype_name(t), m, n,
                   modes[md].name, ST_BN, n <= ST_BN ? "in registers" : "streaming");
          for (int f = 0; f < NFAULTS; f++) {
            if (!(faults[f].kinds & KBIT(k)))
              continue;
            if (!model_output(&bu, (kernel_kind)k, t, m, n, ST_BN, eps, (fault)f)) {
              free(good);
              host_free(&bu);
              return 1;
            }
            if (f == F_NONE)
              memcpy(good, bu.y, (m * n + GUARD) * es);
            const bool mat = f != F_NONE && material(t, m, n, good, bu.y);
            double worst;
            const bool ok = check_case(&bu, (kernel_kind)k, t, m, n, eps, &worst, text, sizeof text);
            checks++;
            n_cases[k][f][md]++;
            n_rejected[k][f][md] += !ok;
            n_material[k][f][md] += mat;
            if (f == F_NONE) {
              worst_ok[k][ti][md] = fmax(worst_ok[k][ti][md], worst);
              if (!ok) {
                wrong++;
                printf("SELF-TEST WRONG %s, correct model: checker said FAIL: %s\n", label, text);
              }
            } else if (mat && ok) {
              wrong++;
              printf("SELF-TEST WRONG %s, broken model '%s': the output changed materially, but the checker "
                     "said PASS: %s\n",
                     label, faults[f].what, text);
            } else if (mat) {
              exposed[k][ti][f][md]++;
            }
          }
        }
      }

  /* every broken model fails on the inputs made to expose it, in every T */
  for (int k = 0; k < NKINDS; k++)
    for (int f = 1; f < NFAULTS; f++) {
      if (!(faults[f].kinds & KBIT(k)))
        continue;
      for (size_t ti = 0; ti < NTYPES; ti++)
        for (int md = 0; md < NMODES; md++) {
          if (!(faults[f].must & MBIT(md)) || !mode_applies((input_mode)md, (kernel_kind)k) ||
              (faults[f].bf16_exempt && types[ti] == TL_BF16) || exposed[k][ti][f][md])
            continue;
          wrong++;
          printf(
              "SELF-TEST WRONG %s %s: broken model '%s' never changed an output materially and failed on %s "
              "inputs, which are made to expose it\n",
              kinds[k].name, tl_dtype_name(types[ti]), faults[f].what, modes[md].name);
        }
    }

  int models = 0;
  for (int k = 0; k < NKINDS; k++) {
    printf(
        "self-test %s, correct model: worst error as a fraction of the tolerance, by mode (f16 / bf16 / f32):",
        kinds[k].name);
    for (int md = 0; md < NMODES; md++)
      if (mode_applies((input_mode)md, (kernel_kind)k))
        printf(" %s %.2f / %.2f / %.2f;", modes[md].name, worst_ok[k][0][md], worst_ok[k][1][md],
               worst_ok[k][2][md]);
    printf("\n");
    for (int f = 1; f < NFAULTS; f++) {
      if (!(faults[f].kinds & KBIT(k)))
        continue;
      models++;
      int cases = 0, rejected = 0;
      for (int md = 0; md < NMODES; md++)
        cases += n_cases[k][f][md], rejected += n_rejected[k][f][md];
      printf("self-test %s, broken '%s': failed %d of %d cases (by mode, failed / material / cases:",
             kinds[k].name, faults[f].what, rejected, cases);
      for (int md = 0; md < NMODES; md++)
        if (mode_applies((input_mode)md, (kernel_kind)k))
          printf(" %s %d/%d/%d%s", modes[md].name, n_rejected[k][f][md], n_material[k][f][md],
                 n_cases[k][f][md], faults[f].must & MBIT(md) ? "*" : "");
      printf(")\n");
    }
  }
  printf("self-test: * marks the modes each broken model must fail on; a case where a broken model changed "
         "nothing materially may pass\n");
  printf(
      "gpu_rows self-test: %d checks, %d wrong; %d broken models (kernel x fault)%s\n", checks, wrong, models,
      wrong ? ""
            : ", each failed wherever it changed an output materially and on the inputs made to expose it");
  free(good);
  host_free(&bu);
  return wrong ? 1 : 0;
}

/* ------------------------------------------------------------------------------------- main */

static bool is_dir(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Variant v's streaming shape, 16 x (2 BN + 1): three tiles, the last of one element. */
static struct shape stream_shape(const variant *v) { return (struct shape){STREAM_M, 2 * (size_t)v->bn + 1}; }

static bool is_static_shape(struct shape sh)
{
  for (size_t s = 0; s < NSHAPES; s++)
    if (shapes[s].m == sh.m && shapes[s].n == sh.n)
      return true;
  return false;
}

/* Every mode of v's kernel at M x N (the modes other than mild up to HOSTILE_MAX_ELEMS elements). */
static void run_modes(tl_context *ctx, const buffers *bu, variant *v, size_t m, size_t n, uint64_t seed,
                      bool mild_only)
{
  for (int md = 0; md < NMODES; md++) {
    if (!mode_applies((input_mode)md, v->kind) ||
        (md != MODE_MILD && (mild_only || m * n > HOSTILE_MAX_ELEMS)))
      continue;
    run_case(ctx, bu, v, m, n, (input_mode)md, case_seed(seed, v->kind, v->t, m, n, (input_mode)md));
  }
}

int main(int argc, char **argv)
{
  const char *outdir = NULL, *ptxdir = NULL;
  int reps = DEFAULT_REPS;
  bool bench = true, quick = false, usage = false, selftest = false;
  size_t max_elems = (size_t)-1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      i++;
    else if (strcmp(argv[i], "--ptx") == 0 && i + 1 < argc)
      ptxdir = argv[++i];
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--no-bench") == 0)
      bench = false;
    else if (strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (strcmp(argv[i], "--max-elems") == 0 && i + 1 < argc)
      max_elems = (size_t)strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--self-test") == 0)
      selftest = true;
    else if (!outdir && argv[i][0] != '-')
      outdir = argv[i];
    else
      usage = true;
  }
  if (usage || (!outdir && !selftest) || reps < 1) {
    fprintf(
        stderr,
        "usage: gpu_rows OUTDIR [--ptx PTXDIR] [--seed S] [--reps R] [--no-bench] [--quick] [--max-elems N]\n"
        "       gpu_rows --self-test [--seed S]\n");
    return 1;
  }
  if (quick && max_elems > QUICK_MAX_ELEMS)
    max_elems = QUICK_MAX_ELEMS;
  const uint64_t seed = gpu_seed_from_args(argc, argv, NULL);
  if (selftest) {
    printf("gpu_rows self-test: seed %llu (replay with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    return self_test(seed);
  }
  char default_ptx[4096];
  if (!ptxdir) {
    snprintf(default_ptx, sizeof default_ptx, "%s/ptx", outdir);
    ptxdir = is_dir(default_ptx) ? default_ptx : outdir;
  }
  bool no_gpu;
  tl_context *ctx = gpu_open("gpu_rows", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  printf("gpu_rows: PTX from %s, seed %llu (replay with --seed %llu)\n", ptxdir, (unsigned long long)seed,
         (unsigned long long)seed);

  static variant vs[MAX_VARIANTS];
  int nv = read_manifest(ptxdir, vs, MAX_VARIANTS);
  if (nv < 0) {
    printf("gpu_rows: no %s/variants.txt: the nine default variants KERNEL_T.ptx\n", ptxdir);
    nv = default_variants(vs);
  }
  for (int i = 0; i < nv; i++)
    load_variant(ctx, ptxdir, &vs[i]);

  size_t cap_elems = 0, cap_n = 0;
  for (size_t s = 0; s < NSHAPES; s++) {
    cap_elems = shapes[s].m * shapes[s].n > cap_elems ? shapes[s].m * shapes[s].n : cap_elems;
    cap_n = shapes[s].n > cap_n ? shapes[s].n : cap_n;
  }
  for (int k = 0; k < NKINDS; k++) {
    const size_t e = kinds[k].bench_m * kinds[k].bench_n;
    cap_elems = e > cap_elems ? e : cap_elems;
    cap_n = kinds[k].bench_n > cap_n ? kinds[k].bench_n : cap_n;
  }
  for (int i = 0; i < nv; i++) {
    const struct shape st = stream_shape(&vs[i]);
    cap_elems = st.m * st.n > cap_elems ? st.m * st.n : cap_elems;
    cap_n = st.n > cap_n ? st.n : cap_n;
  }
  buffers bu = {0};
  if (!buffers_alloc(ctx, &bu, cap_elems, cap_n)) {
    gpu_report(false, "setup: buffers for %zu elements", cap_elems);
    goto done;
  }

  /* every shape for the default variants, kernel by kernel, type by type */
  for (int k = 0; k < NKINDS; k++)
    for (size_t t = 0; t < NTYPES; t++) {
      variant *v = NULL;
      for (int i = 0; i < nv && !v; i++)
        if (vs[i].is_default && vs[i].kind == (kernel_kind)k && vs[i].t == types[t])
          v = &vs[i];
      if (!v) {
        printf("SKIP %s %s: no variant %s_%s in the list\n", kinds[k].name, tl_dtype_name(types[t]),
               kinds[k].name, tl_dtype_name(types[t]));
        gpu_skipped++;
        continue;
      }
      if (v->state != V_OK)
        continue; /* reported when loading */
      for (size_t s = 0; s < NSHAPES; s++) {
        if (shapes[s].m * shapes[s].n > max_elems)
          continue;
        run_modes(ctx, &bu, v, shapes[s].m, shapes[s].n, seed, false);
      }
      const struct shape st = stream_shape(v);
      if (!is_static_shape(st) && st.m * st.n <= max_elems)
        run_modes(ctx, &bu, v, st.m, st.n, seed, false);
    }
  /* the other variants at their kernel's benchmark shape (mild) and at their streaming shape */
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    if (v->is_default || v->state != V_OK)
      continue;
    const size_t m = kinds[v->kind].bench_m, n = kinds[v->kind].bench_n;
    if (m * n <= max_elems)
      run_modes(ctx, &bu, v, m, n, seed, true);
    const struct shape st = stream_shape(v);
    if (st.m * st.n <= max_elems)
      run_modes(ctx, &bu, v, st.m, st.n, seed, false);
  }

  if (bench)
    run_bench(ctx, &bu, vs, nv, outdir, seed, reps);

done:
  buffers_free(ctx, &bu);
  for (int i = 0; i < nv; i++)
    tl_module_unload(vs[i].mod);
  tl_context_destroy(ctx);
  if (gpu_skipped)
    printf("%d skipped\n", gpu_skipped);
  if (gpu_passed + gpu_failed == 0)
    printf("gpu_rows: nothing ran: no PTX in %s?\n", ptxdir);
  printf("%d passed, %d failed\n", gpu_passed, gpu_failed);
  return gpu_failed || gpu_passed == 0 ? 1 : 0;
}
