/* gpu_rows: correctness and speed of the row kernels of stdlib/softmax.tl and stdlib/norms.tl
 * (softmax, rmsnorm, layernorm), one PTX file per compiled variant (tests/gpu/rows.sh builds them).
 *
 *   gpu_rows OUTDIR [--ptx PTXDIR] [--seed S] [--reps R] [--no-bench] [--quick]
 *
 * OUTDIR   where rows_bench.txt is written
 * PTXDIR   where the PTX is: NAME.ptx per variant, and variants.txt (written by rows.sh) listing them
 *          as "NAME KERNEL T BN THREADS" lines; default OUTDIR/ptx if that is a folder, else OUTDIR.
 *          Without variants.txt the variants are the nine defaults KERNEL_T (default_config).
 * --seed   replay a run (the seed is always printed)
 * --reps   timed runs per benchmark row (default 50, after 10 warm-up runs)
 * --no-bench  correctness only
 * --quick  skip the correctness shapes of more than 2^24 elements
 *
 * Correctness. Each default variant (named KERNEL_T, e.g. softmax_bf16) runs at rows x cols = 1x1,
 * 7x1000, 8192x32768, 32768x8192, 3x100003 and 100000x64; every other variant (softmax_f16_wide,
 * rmsnorm_f16_t1024, ...) once, at its kernel's benchmark shape. Inputs are random (softmax: X uniform
 * in [-8, 8]; norms: X in [-4, 4], W in [0.5, 1.5], B in [-1, 1], eps 1e-5), rounded to T; Y is
 * poisoned with 0xFF bytes (NaN in every float format) and followed by a poisoned guard region that
 * must stay poisoned. The reference is computed in double from the same rounded inputs, row by row
 * inside the parallel checker (nothing of the size of the output is materialized). Each element must
 * satisfy |y - ref| <= atol * scale + rtol * |ref|:
 *
 *   T      softmax atol, rtol    norms atol, rtol
 *   f32    2e-6, 1e-4            1e-4, 1e-4
 *   f16    1e-3, 4e-3            1e-3, 4e-3     (output rounding: 2^-11 relative)
 *   bf16   4e-3, 1.6e-2          4e-3, 1.6e-2   (2^-8)
 *
 * scale is 1 for the norms. For softmax it is the row's largest reference probability (1 / sum of
 * exp(x - max)): softmax outputs are probabilities, and in a row of 32768 every one is below 5e-4,
 * so a fixed atol of 1e-3 would pass a row of zeros. A NaN, an infinity, an element left poisoned or
 * a changed guard byte fails the case. One line per case (PASS / FAIL / SKIP, kernel, T, shape, worst
 * error as a fraction of the tolerance), then, after the benchmark, exactly "P passed, F failed".
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
  int vectors;        /* weight / bias vectors of N elements: 0, 1 (W), 2 (W, B) */
  float x_lo, x_hi;   /* X uniform in [x_lo, x_hi) */
  size_t bench_m, bench_n;
} kinds[NKINDS] = {
    {"softmax", 0, -8.0f, 8.0f, 8192, 32768},
    {"rmsnorm", 1, -4.0f, 4.0f, 32768, 8192},
    {"layernorm", 2, -4.0f, 4.0f, 32768, 8192},
};

static const struct shape {
  size_t m, n;
} shapes[] = {{1, 1}, {7, 1000}, {8192, 32768}, {32768, 8192}, {3, 100003}, {100000, 64}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])
#define QUICK_MAX_ELEMS ((size_t)1 << 24)

static const tl_dtype types[] = {TL_F16, TL_BF16, TL_F32};
#define NTYPES (sizeof types / sizeof types[0])

/* The .tl defaults of BN and THREADS, for when there is no variants.txt (stdlib/softmax.tl:
 * BN = 65536 / sizeof(T), 1024 threads; stdlib/norms.tl: BN = 8192, RMSNorm 256 threads, LayerNorm
 * 128 * sizeof(T)). */
static void default_config(kernel_kind k, tl_dtype t, int *bn, int *threads)
{
  const int size = (int)tl_dtype_size(t);
  *bn = k == SOFTMAX ? 65536 / size : 8192;
  *threads = k == SOFTMAX ? 1024 : k == RMSNORM ? 256 : 128 * size;
}

static void tolerance(kernel_kind k, tl_dtype t, double *atol, double *rtol)
{
  switch (t) {
  case TL_F16:
    *atol = 1e-3, *rtol = 4e-3;
    break;
  case TL_BF16:
    *atol = 4e-3, *rtol = 1.6e-2;
    break;
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
  case TL_F16:
    return tl_f16_to_float(((const uint16_t *)p)[i]);
  case TL_BF16:
    return tl_bf16_to_float(((const uint16_t *)p)[i]);
  default:
    return ((const float *)p)[i];
  }
}

static inline void store_elem(tl_dtype t, void *p, size_t i, float v)
{
  switch (t) {
  case TL_F16:
    ((uint16_t *)p)[i] = tl_f16_from_float(v);
    break;
  case TL_BF16:
    ((uint16_t *)p)[i] = tl_bf16_from_float(v);
    break;
  default:
    ((float *)p)[i] = v;
    break;
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
        (v.t != TL_F16 && v.t != TL_BF16 && v.t != TL_F32) || bn < 1 || threads < 1) {
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
    gpu_report(false, "%s: the PTX's %s has threads=%u and X of %s, but the variant list says THREADS=%d "
                  "and T=%s",
           v->name, kname, info->threads, info->nargs ? tl_dtype_name(info->params[0].dtype) : "?",
           v->threads, tl_dtype_name(v->t));
    return;
  }
  v->state = V_OK;
  printf("     %s: %s threads=%u smem=%u BN=%d grid x = %s\n", v->name, kname, info->threads,
         info->smem, v->bn, info->grid_text[0]);
}

/* ---------------------------------------------------------------------------------- buffers */

typedef struct buffers {
  size_t cap_elems, cap_n; /* X: cap_elems, Y: cap_elems + GUARD, W and B: cap_n elements */
  void *x, *y, *w, *b;     /* host, 4 bytes per element at most */
  tl_devptr dx, dy, dw, db;
} buffers;

static bool buffers_alloc(tl_context *ctx, buffers *bu, size_t cap_elems, size_t cap_n)
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
  free(bu->x);
  free(bu->y);
  free(bu->w);
  free(bu->b);
}

/* One seed per (kernel, T, shape), so that every variant of a kernel sees the same data. */
static uint64_t case_seed(uint64_t seed, kernel_kind k, tl_dtype t, size_t m, size_t n)
{
  uint64_t s = seed ^ ((uint64_t)m * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)n * 0xC2B2AE3D27D4EB4Full) ^
               ((uint64_t)(k * 16 + (int)t) * 0x165667B19E3779F9ull);
  return gpu_next_random(&s);
}

/* Random X (and W, B) for kernel k at M x N, rounded to T, into the host buffers. */
static void make_inputs(const buffers *bu, kernel_kind k, tl_dtype t, size_t m, size_t n, uint64_t seed)
{
  uint64_t s = seed;
  const uint64_t sx = gpu_next_random(&s), sw = gpu_next_random(&s), sb = gpu_next_random(&s);
  fill(t, bu->x, m * n, kinds[k].x_lo, kinds[k].x_hi, sx);
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
static int make_args(const buffers *bu, kernel_kind k, tl_dtype t, const int64_t shape[2], tl_arg *args)
{
  int nargs = 0;
  args[nargs++] = tl_arg_tensor(bu->dx, t, 2, shape);
  if (kinds[k].vectors >= 1)
    args[nargs++] = tl_arg_tensor(bu->dw, t, 1, &shape[1]);
  if (kinds[k].vectors >= 2)
    args[nargs++] = tl_arg_tensor(bu->db, t, 1, &shape[1]);
  args[nargs++] = tl_arg_tensor(bu->dy, t, 2, shape);
  if (k != SOFTMAX)
    args[nargs++] = tl_arg_f32(EPS);
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
  double *worst;        /* largest finite |error| / tolerance */
  size_t *first_bad;    /* flat index, SIZE_MAX if none */
  double *first_ref;    /* reference at first_bad */
  size_t *unwritten;    /* elements still poisoned */
  size_t *nonfinite;    /* NaN / infinity that were written */
  bool *oom;
} check_job;

/* The reference row r into ref[0..N); returns the scale of atol (see the header). */
static double reference_row(const check_job *c, size_t r, double *ref)
{
  const size_t n = c->n, base = r * n;
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
    return 1.0 / sum; /* the row's largest probability */
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
    return 1.0;
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
    for (size_t j = 0; j < n; j++)
      ref[j] = (ref[j] - mean) * rstd * load_elem(c->t, c->w, j) + load_elem(c->t, c->b, j);
    return 1.0;
  }
  }
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
  double *ref = malloc(c->n * sizeof *ref);
  if (!ref) {
    c->oom[g] = true;
    return (r1 - r0) * c->n;
  }
  for (size_t r = r0; r < r1; r++) {
    const double scale = reference_row(c, r, ref);
    for (size_t j = 0; j < c->n; j++) {
      const size_t i = r * c->n + j;
      const double got = load_elem(c->t, c->y, i);
      const double err = fabs(got - ref[j]);
      const double tol = c->atol * scale + c->rtol * fabs(ref[j]);
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
  c->worst[g] = worst;
  c->first_bad[g] = first;
  c->first_ref[g] = first_ref;
  c->unwritten[g] = unwritten;
  c->nonfinite[g] = nonfinite;
  return bad;
}

static const char *path_name(const variant *v, size_t n)
{
  return n <= (size_t)v->bn ? "in registers" : "streaming";
}

/* One variant at one shape: returns whether it passed. */
static bool run_case(tl_context *ctx, const buffers *bu, variant *v, size_t m, size_t n, uint64_t seed)
{
  const kernel_kind k = v->kind;
  const tl_dtype t = v->t;
  const size_t es = tl_dtype_size(t), elems = m * n;
  char label[256];
  snprintf(label, sizeof label, "%s %s %zux%zu [%s, BN=%d, %d threads, %s]", kinds[k].name,
           tl_dtype_name(t), m, n, v->name, v->bn, v->threads, path_name(v, n));

  size_t rpg = 65536 / n;
  rpg = rpg ? rpg : 1;
  const size_t ngroups = (m + rpg - 1) / rpg;
  check_job c = {.kind = k, .t = t, .m = m, .n = n, .rows_per_group = rpg, .x = bu->x, .w = bu->w,
                 .b = bu->b, .y = bu->y, .eps = (double)EPS};
  tolerance(k, t, &c.atol, &c.rtol);
  c.worst = calloc(ngroups, sizeof *c.worst);
  c.first_bad = calloc(ngroups, sizeof *c.first_bad);
  c.first_ref = calloc(ngroups, sizeof *c.first_ref);
  c.unwritten = calloc(ngroups, sizeof *c.unwritten);
  c.nonfinite = calloc(ngroups, sizeof *c.nonfinite);
  c.oom = calloc(ngroups, sizeof *c.oom);
  bool ok = false;
  if (!c.worst || !c.first_bad || !c.first_ref || !c.unwritten || !c.nonfinite || !c.oom) {
    gpu_report(false, "%s: out of host memory", label);
    goto done;
  }

  make_inputs(bu, k, t, m, n, seed);
  tl_status st;
#define STEP(call)                                                                                 \
  do {                                                                                             \
    if ((st = (call)) != TL_OK) {                                                                  \
      gpu_report(false, "%s: %s: %s", label, tl_status_name(st), tl_context_message(ctx));             \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)
  STEP(upload_inputs(ctx, bu, k, t, m, n));
  STEP(tl_memset_d8(ctx, bu->dy, 0xFF, (elems + GUARD) * es));
  const int64_t shape[2] = {(int64_t)m, (int64_t)n};
  tl_arg args[6];
  const int nargs = make_args(bu, k, t, shape, args);
  STEP(tl_launch(v->kernel, args, nargs, NULL));
  STEP(tl_synchronize(ctx));
  STEP(tl_memcpy_dtoh(ctx, bu->y, bu->dy, (elems + GUARD) * es));
#undef STEP

  const size_t bad = gpu_parallel_for(ngroups * GPU_CHUNK, 0, check_rows, &c);
  size_t guard_bad = 0, guard_first = 0;
  const unsigned char *guard = (const unsigned char *)bu->y + elems * es;
  for (size_t i = 0; i < GUARD * es; i++)
    if (guard[i] != 0xFF && guard_bad++ == 0)
      guard_first = i / es;
  double worst = 0, first_ref = 0;
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
    gpu_report(false, "%s: out of host memory in the checker", label);
  } else if (bad) {
    const size_t r = first / n, j = first % n;
    char inputs[160];
    int len = snprintf(inputs, sizeof inputs, "X = %.6g", load_elem(t, bu->x, first));
    if (kinds[k].vectors >= 1)
      len += snprintf(inputs + len, sizeof inputs - (size_t)len, ", W = %.6g", load_elem(t, bu->w, j));
    if (kinds[k].vectors >= 2)
      snprintf(inputs + len, sizeof inputs - (size_t)len, ", B = %.6g", load_elem(t, bu->b, j));
    gpu_report(false,
           "%s: %zu of %zu elements wrong (%zu never written, %zu NaN/inf), worst finite error %.3g "
           "of tolerance; first Y[%zu, %zu] = %.8g, expected %.8g (%s)",
           label, bad, elems, unwritten, nonfinite, worst, r, j, load_elem(t, bu->y, first), first_ref,
           inputs);
  } else if (guard_bad) {
    gpu_report(false, "%s: wrote past the end of Y: %zu guard bytes changed, first at element M*N+%zu",
           label, guard_bad, guard_first);
  } else {
    ok = true;
    gpu_report(true, "%s: worst error %.3f of tolerance (atol %g%s, rtol %g)", label, worst, c.atol,
           k == SOFTMAX ? " x the row's largest probability" : "", c.rtol);
  }

done:
  free(c.worst);
  free(c.first_bad);
  free(c.first_ref);
  free(c.unwritten);
  free(c.nonfinite);
  free(c.oom);
  if (m == kinds[k].bench_m && n == kinds[k].bench_n) {
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
  fprintf(f, "%-22s %-11s %-11s %-12s %10s %8s %10s %7s %7s  %s\n", "variant", "shape", "BN/threads",
          "path", "median_ms", "TB/s", "peer_TB/s", "ratio", "target", "result");
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
    const char *note = !r->v->checked_at_bench ? " (results not checked at this shape)"
                       : !r->v->correct_at_bench ? " (WRONG RESULTS in the correctness run)"
                                                 : "";
    fprintf(f, "%-22s %-11s %-11s %-12s %10.4f %8.3f %10.3f %7.3f %7.2f  %s%s\n", r->v->name, shape,
            cfg, path_name(r->v, r->n), r->ms, row_tbs(r), row_peer_tbs(r), row_ratio(r), TARGET,
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
              kinds[k].name, row_ratio(best) >= TARGET ? "PASS" : "FAIL", best->v->name,
              row_ratio(best), row_tbs(best), TARGET,
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
        make_inputs(bu, (kernel_kind)k, TL_F16, m, n, case_seed(seed, (kernel_kind)k, TL_F16, m, n));
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
      gpu_launch_arg la = {ctx, v->kernel, args, make_args(bu, (kernel_kind)k, TL_F16, shape, args)};
      if (!gpu_time_median_ms(ctx, gpu_timed_launch, &la, WARMUP, reps, &r->ms)) {
        r->ms = -1, r->why = "timing the kernel failed";
        tl_synchronize(ctx); /* clear what can be cleared before the next row */
        continue;
      }
      printf("     %-22s %zux%zu: %.4f ms, %.3f TB/s; peer %.4f ms, %.3f TB/s; ratio %.3f\n", v->name,
             m, n, r->ms, row_tbs(r), r->peer_ms, row_peer_tbs(r), row_ratio(r));
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

/* ------------------------------------------------------------------------------------- main */

static bool is_dir(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int main(int argc, char **argv)
{
  const char *outdir = NULL, *ptxdir = NULL;
  int reps = DEFAULT_REPS;
  bool bench = true, quick = false, usage = false;
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
    else if (!outdir && argv[i][0] != '-')
      outdir = argv[i];
    else
      usage = true;
  }
  if (usage || !outdir || reps < 1) {
    fprintf(stderr, "usage: gpu_rows OUTDIR [--ptx PTXDIR] [--seed S] [--reps R] [--no-bench] [--quick]\n");
    return 1;
  }
  char default_ptx[4096];
  if (!ptxdir) {
    snprintf(default_ptx, sizeof default_ptx, "%s/ptx", outdir);
    ptxdir = is_dir(default_ptx) ? default_ptx : outdir;
  }
  const uint64_t seed = gpu_seed_from_args(argc, argv, NULL);
  bool no_gpu;
  tl_context *ctx = gpu_open("gpu_rows", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  printf("gpu_rows: PTX from %s, seed %llu (replay with --seed %llu)\n", ptxdir,
         (unsigned long long)seed, (unsigned long long)seed);

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
        if (quick && shapes[s].m * shapes[s].n > QUICK_MAX_ELEMS)
          continue;
        run_case(ctx, &bu, v, shapes[s].m, shapes[s].n,
                 case_seed(seed, (kernel_kind)k, types[t], shapes[s].m, shapes[s].n));
      }
    }
  /* the other variants once, at their kernel's benchmark shape */
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    if (v->is_default || v->state != V_OK)
      continue;
    const size_t m = kinds[v->kind].bench_m, n = kinds[v->kind].bench_n;
    if (quick && m * n > QUICK_MAX_ELEMS)
      continue;
    run_case(ctx, &bu, v, m, n, case_seed(seed, v->kind, v->t, m, n));
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
