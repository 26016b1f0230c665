/* tune.c: `tilec tune FILE.tl --size ... --try NAME=V1,V2 ...` (docs/cli.md, "tilec tune"): every
 * combination of the candidate values of some constants, compiled in parallel threads (the compiler
 * is re-entrant), then launched one after the other on the device at the sizes given, timed, and
 * ranked. The table says what was tried, what did not compile and why, each time and its ratio to
 * the best; the last line is the winner as -D flags.
 *
 *   parse_tune_args   the options (sizes, candidates, budget, repetitions, threads)
 *   compile_all       the candidates, NAME=VALUE defines on top of -D, --size for launch constants,
 *                     on a pool of threads, each to PTX (or its first error) and, on a GPU, to the
 *                     driver's device binary (the slow part of a load), in the thread's own context
 *   measure           a context (the GPU, or the CPU device under TILEC_DEVICE=cpu), the tensors
 *                     the kernel's metadata asks for at those sizes (random data), and per
 *                     candidate: load, warm up, time; on a GPU with CUDA events (the median of
 *                     --reps runs), on the CPU device the interpreter's wall time
 *   report            the table, ranked; ties keep the candidates' order
 *
 * --save keeps the winner as the kernel's tuning result for the bucket of these sizes
 * (tl_jit_tune_store): later modules from tl_module_compile launch it there.
 */
#define _POSIX_C_SOURCE 200809L

#include "tune.h"

#include "cli.h"
#include "cuda_driver.h"       /* runtime/: the driver table, for CUDA events */
#include "runtime_internal.h"  /* runtime/: the driver's PTX -> device binary, and loading it */
#include "libtilec_internal.h" /* compiler/: tilec_compile_flags (the TMA forms alone) */
#include "tilec.h"
#include "tilec_jit.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TUNE_MAX_CANDIDATES 4096

static const char USAGE[] =
    "usage: tilec tune FILE.tl --size NAME=N[,NAME=N...] --try NAME=V1,V2,... [options]\n"
    "\n"
    "Compiles every combination of the --try values (in parallel), times each on the device at the\n"
    "sizes given, and prints them ranked, the winner last as -D flags. The GPU, or the CPU device\n"
    "with TILEC_DEVICE=cpu (the interpreter: times mean little there).\n"
    "\n"
    "options:\n"
    "  --kernel NAME      the kernel (default: the file's only kernel)\n"
    "  --size N=V[,..]    the sizes of the launch (every size of the kernel)\n"
    "  --try NAME=V1,V2   candidate values of the constant NAME (repeatable: all combinations)\n"
    "  -D NAME=VALUE      a constant fixed for every candidate\n"
    "  --arch ARCH        the target (default: the device's)\n"
    "  --reps N           timed runs per candidate, after 2 warm-up runs (default 20)\n"
    "  --jobs N           compiling threads (default: the cores)\n"
    "  --budget SECONDS   stop starting candidates after this long (compile and time; the first\n"
    "                     always runs); the rest are listed as not tried\n"
    "  --deterministic    one compiling thread, a fixed seed: the same table order every run\n"
    "  --save             keep the winner in the JIT's cache folder: later tl_module_compile modules\n"
    "                     of this source (same -D, target) launch it at sizes of the same bucket\n"
    "  --help             show this help\n";

typedef struct {
  const char *name;
  char **values;
  int nvalues;
} Try;

typedef struct {
  const char *input, *kernel, *arch;
  tilec_define *defs, *sizes;
  int ndefs, nsizes;
  Try *tries;
  int ntries;
  int reps, jobs;
  double budget_s; /* 0: none */
  bool deterministic;
  bool save;       /* --save: the winner into the JIT cache's tuning results */
  char **owned;    /* the --size copies the sizes point into */
  int nowned;
} TuneOptions;

typedef struct {
  tilec_define *defs; /* -D, then one per --try */
  int ndefs;
  char *label;        /* "BN=128 STAGES=3" */
  char *ptx;          /* NULL: see why */
  void *image;        /* the device binary the driver made from ptx (a GPU), or NULL */
  char *why;          /* the first line of the diagnostics, or "not tried (budget)" */
  double compile_ms, ms;
  bool tried;
} Candidate;

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

__attribute__((format(printf, 1, 2))) static int tune_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  cli_verror(fmt, ap);
  va_end(ap);
  return 1;
}

/* NAME=V1,V2,...: a malloc'd copy split in place; false if malformed. */
static bool split_values(const char *text, const char **name, char ***values, int *n)
{
  const char *eq = strchr(text, '=');
  if (!eq || eq == text || !eq[1])
    return false;
  char *copy = strdup(text);
  if (!copy)
    return false;
  copy[eq - text] = 0;
  *name = copy;
  int count = 1;
  for (const char *c = eq + 1; *c; c++)
    count += *c == ',';
  *values = calloc((size_t)count, sizeof **values);
  if (!*values)
    return false;
  *n = 0;
  for (char *v = copy + (eq - text) + 1;;) {
    char *comma = strchr(v, ',');
    if (comma)
      *comma = 0;
    if (!*v)
      return false;
    (*values)[(*n)++] = v;
    if (!comma)
      return true;
    v = comma + 1;
  }
}

static const char *option_value(int argc, char **argv, int *i, const char *name)
{
  size_t n = strlen(name);
  if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=')
    return argv[*i] + n + 1;
  if (!strcmp(argv[*i], name))
    return ++*i < argc ? argv[*i] : "";
  return NULL;
}

/* A decimal count from 1 to max. */
static bool count_in(const char *v, long max, int *out)
{
  char *end;
  long r = strtol(v, &end, 10);
  if (!*v || *end || r < 1 || r > max)
    return false;
  *out = (int)r;
  return true;
}

/* 1 after an error (reported), -1 to go on, 0 after --help. */
static int parse_tune_args(int argc, char **argv, TuneOptions *o)
{
  o->defs = calloc((size_t)argc + 1, sizeof *o->defs);
  size_t commas = 0; /* --size M=4,N=5 gives two sizes */
  for (int i = 0; i < argc; i++)
    for (const char *c = argv[i]; *c; c++)
      commas += *c == ',';
  o->sizes = calloc((size_t)argc + commas + 1, sizeof *o->sizes);
  o->tries = calloc((size_t)argc + 1, sizeof *o->tries);
  o->owned = calloc((size_t)argc + 1, sizeof *o->owned);
  o->reps = 20;
  o->jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (!o->defs || !o->sizes || !o->tries || !o->owned)
    return 1;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      return cli_write_file("-", USAGE, strlen(USAGE)) ? 1 : 0;
    } else if ((v = option_value(argc, argv, &i, "--size"))) {
      const char *name = NULL;
      char **values = NULL;
      int n = 0;
      bool ok = split_values(v, &name, &values, &n);
      o->owned[o->nowned++] = (char *)name; /* the copy the sizes point into, freed at the end */
      /* "M=4,N=5" splits into M and the values "4", "N=5": each item is NAME=VALUE */
      if (ok)
        o->sizes[o->nsizes++] = (tilec_define){name, values[0]};
      for (int k = 1; ok && k < n; k++) {
        char *eq = strchr(values[k], '=');
        ok = eq && eq != values[k] && eq[1];
        if (ok) {
          *eq = 0;
          o->sizes[o->nsizes++] = (tilec_define){values[k], eq + 1};
        }
      }
      free(values);
      if (!ok)
        return tune_error("--size needs NAME=N[,NAME=N...], got '%s'", v);
    } else if ((v = option_value(argc, argv, &i, "--try"))) {
      Try *t = &o->tries[o->ntries++]; /* counted at once: tune_command frees what it holds */
      if (!split_values(v, &t->name, &t->values, &t->nvalues))
        return tune_error("--try needs NAME=V1,V2,..., got '%s'", v);
      for (int k = 0; k < o->ntries - 1; k++)
        if (!strcmp(o->tries[k].name, t->name))
          return tune_error("--try %s is given twice: list all its values in one --try", t->name);
    } else if (!strncmp(argv[i], "-D", 2)) {
      const char *d = argv[i][2] ? argv[i] + 2 : (++i < argc ? argv[i] : "");
      const char *eq = strchr(d, '=');
      if (!eq || eq == d || !eq[1])
        return tune_error("-D needs NAME=VALUE, got '%s'", d);
      o->defs[o->ndefs++] = (tilec_define){strndup(d, (size_t)(eq - d)), eq + 1};
    } else if ((v = option_value(argc, argv, &i, "--kernel"))) {
      if (!*v)
        return tune_error("--kernel needs a kernel name");
      o->kernel = v;
    } else if ((v = option_value(argc, argv, &i, "--arch"))) {
      if (!tilec_arch_supported(v))
        return tune_error("unknown target '%s'", v);
      o->arch = v;
    } else if ((v = option_value(argc, argv, &i, "--reps"))) {
      if (!count_in(v, 100000, &o->reps))
        return tune_error("--reps needs a count from 1 to 100000, got '%s'", v);
    } else if ((v = option_value(argc, argv, &i, "--jobs"))) {
      if (!count_in(v, 256, &o->jobs))
        return tune_error("--jobs needs a count from 1 to 256, got '%s'", v);
    } else if ((v = option_value(argc, argv, &i, "--budget"))) {
      char *end;
      double b = strtod(v, &end);
      if (!*v || *end || !(b > 0) || b > 1e6)
        return tune_error("--budget needs a number of seconds above 0, got '%s'", v);
      o->budget_s = b;
    } else if (!strcmp(argv[i], "--deterministic")) {
      o->deterministic = true;
    } else if (!strcmp(argv[i], "--save")) {
      o->save = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tune_error("unknown option '%s' (run 'tilec tune --help' for usage)", argv[i]);
    } else if (o->input) {
      return tune_error("more than one input file ('%s')", argv[i]);
    } else {
      o->input = argv[i];
    }
  }
  if (!o->input)
    return tune_error("no input file (run 'tilec tune --help' for usage)");
  if (!o->ntries)
    return tune_error("nothing to tune: give candidates with --try NAME=V1,V2,...");
  if (o->jobs < 1 || o->deterministic)
    o->jobs = 1;
  return -1;
}

/* Every combination of the --try values, the last --try varying fastest. */
static Candidate *make_candidates(const TuneOptions *o, int *n)
{
  long total = 1;
  for (int t = 0; t < o->ntries; t++) {
    total *= o->tries[t].nvalues;
    if (total > TUNE_MAX_CANDIDATES) {
      tune_error("more than %d combinations of --try values: try fewer", TUNE_MAX_CANDIDATES);
      return NULL;
    }
  }
  Candidate *c = calloc((size_t)total, sizeof *c);
  if (!c)
    return NULL;
  for (long i = 0; i < total; i++) {
    c[i].defs = calloc((size_t)(o->ndefs + o->ntries), sizeof *c[i].defs);
    c[i].label = calloc(1, 1024);
    if (!c[i].defs || !c[i].label)
      return NULL;
    memcpy(c[i].defs, o->defs, sizeof *o->defs * (size_t)o->ndefs);
    c[i].ndefs = o->ndefs;
    long rest = i;
    size_t used = 0;
    for (int t = o->ntries - 1; t >= 0; t--) {
      const Try *tr = &o->tries[t];
      c[i].defs[o->ndefs + t] = (tilec_define){tr->name, tr->values[rest % tr->nvalues]};
      rest /= tr->nvalues;
    }
    for (int t = 0; t < o->ntries; t++)
      used += (size_t)snprintf(c[i].label + used, 1024 - used, "%s%s=%s", t ? " " : "", o->tries[t].name,
                               c[i].defs[o->ndefs + t].value);
    c[i].ndefs += o->ntries;
  }
  *n = (int)total;
  return c;
}

/* ------------------------------------------------------------------------------------ compiling */

typedef struct {
  const TuneOptions *o;
  const char *src;
  size_t len;
  const char *arch;
  Candidate *c;
  int n;
  int next;        /* the next candidate to compile, under lock */
  double deadline; /* now_ms() past which no candidate starts; 0: none */
  bool link;       /* a GPU: each thread has the driver make the device binary too */
  unsigned flags;  /* tilec_compile_flags': TILEC_COMPILE_TMA_ONLY where the JIT would set it */
  pthread_mutex_t lock;
} Pool;

/* The first diagnostic's message, or the status. */
static char *first_error(tilec_result *r, tilec_status st)
{
  for (int i = 0; r && i < tilec_result_num_diagnostics(r); i++) {
    tilec_diagnostic d = tilec_result_diagnostic(r, i);
    if (d.severity == 0 || d.severity == 1) {
      char buf[512];
      snprintf(buf, sizeof buf, "%s: %s", d.severity ? "warning" : "error", d.message);
      return strdup(buf);
    }
  }
  char buf[64];
  snprintf(buf, sizeof buf, "compilation failed (status %d)", (int)st);
  return strdup(buf);
}

static void compile_one(Pool *p, Candidate *c, tl_context *ctx)
{
  tilec_options opt = {.filename = p->o->input,
                       .arch = p->arch,
                       .opt_level = 3,
                       .defines = c->defs,
                       .ndefines = c->ndefs,
                       .kernel = p->o->kernel,
                       .sizes = p->o->sizes,
                       .nsizes = p->o->nsizes};
  double t0 = now_ms();
  tilec_result *r = NULL;
  tilec_status st = tilec_compile_flags(p->src, p->len, &opt, p->flags, &r);
  /* a warning means a --try or -D that no kernel has: not what the user meant */
  bool warned = false;
  for (int i = 0; r && i < tilec_result_num_diagnostics(r); i++)
    warned |= tilec_result_diagnostic(r, i).severity == 1;
  if (st == TILEC_OK && !warned)
    c->ptx = strdup(tilec_result_output(r));
  else
    c->why = first_error(r, st);
  tilec_result_free(r);
  /* The driver's PTX -> SASS is the slow part of loading a module (hundreds of ms for a GEMM):
   * done here, in parallel, in this thread's own context (contexts are per thread; they share the
   * device's primary context). A failure leaves the PTX, which the load then reports. */
  if (c->ptx && ctx) {
    size_t size = 0;
    if (tl_context_link_ptx(ctx, c->ptx, &c->image, &size) != TL_OK)
      c->image = NULL;
  }
  c->compile_ms = now_ms() - t0;
}

static void *compile_worker(void *arg)
{
  Pool *p = arg;
  tl_context *ctx = NULL;
  char err[256];
  if (p->link && tl_context_create(0, &ctx, err, sizeof err) != TL_OK)
    ctx = NULL; /* the modules are then made from the PTX at load */
  for (;;) {
    pthread_mutex_lock(&p->lock);
    /* the first candidate always starts, so that a budget never leaves nothing to time */
    int i = p->next < p->n && (p->next == 0 || !(p->deadline && now_ms() > p->deadline)) ? p->next++ : -1;
    pthread_mutex_unlock(&p->lock);
    if (i < 0)
      break;
    compile_one(p, &p->c[i], ctx);
  }
  tl_context_destroy(ctx);
  return NULL;
}

static void compile_all(Pool *p)
{
  pthread_t threads[256];
  int started = 0;
  for (int t = 1; t < p->o->jobs && t < p->n; t++)
    if (pthread_create(&threads[started], NULL, compile_worker, p) == 0)
      started++;
  compile_worker(p);
  for (int t = 0; t < started; t++)
    pthread_join(threads[t], NULL);
}

/* ------------------------------------------------------------------------------------ measuring */

static bool is_float(tl_dtype t)
{
  return t == TL_F16 || t == TL_BF16 || t == TL_F32 || t == TL_F64 || t == TL_E4M3 || t == TL_E5M2;
}

/* The value of size `name` given with --size, or -1. */
static int64_t given_size(const TuneOptions *o, const char *name)
{
  int64_t e = -1;
  for (int s = 0; s < o->nsizes; s++)
    if (!strcmp(o->sizes[s].name, name))
      e = strtoll(o->sizes[s].value, NULL, 0);
  return e;
}

/* A view's strides (a tensor declared with strides(...)): fixed ones, sizes from --size, the others
 * row-major over the shape; the elements the view spans. */
static size_t view_strides(const tl_kernel_info *k, int i, const TuneOptions *o, const int64_t *shape,
                           int64_t *strides)
{
  const tl_param *p = &k->params[i];
  int64_t step = 1, last = 0;
  bool empty = false;
  for (int d = p->rank - 1; d >= 0; d--) {
    const tl_dim *s = &k->strides[i][d];
    int64_t v = s->size_param < 0 ? s->extent : given_size(o, k->params[s->size_param].name);
    strides[d] = v > 0 ? v : step;
    step *= shape[d] > 0 ? shape[d] : 1;
    empty |= shape[d] == 0;
    last += shape[d] > 0 ? (shape[d] - 1) * strides[d] : 0;
  }
  return empty ? 0 : (size_t)(last + 1);
}

/* Tensors for every tensor parameter of k at the sizes given (random values for floating types,
 * zeros otherwise), scalars 1; a view's storage as view_strides says. false after an error
 * (reported). */
static bool make_args(tl_context *ctx, const tl_kernel_info *k, const TuneOptions *o, tl_arg *args,
                      int64_t (*shapes)[8], int64_t (*strides)[8], tl_devptr *ptrs)
{
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < k->nargs; i++) {
    const tl_param *p = &k->params[i];
    if (p->kind == TL_PARAM_SCALAR) {
      args[i] = is_float(p->dtype) ? tl_arg_float(p->dtype, 1.0) : tl_arg_int(p->dtype, 1);
      continue;
    }
    size_t elems = 1;
    for (int d = 0; d < p->rank && d < 8; d++) {
      int64_t e = p->dims[d].extent;
      if (p->dims[d].size_param >= 0) {
        const char *name = k->params[p->dims[d].size_param].name;
        e = given_size(o, name);
        if (e < 0) {
          tune_error("the size %s of '%s' is not given: --size %s=N", name, p->name, name);
          return false;
        }
      }
      shapes[i][d] = e;
      elems *= (size_t)e;
    }
    const bool view = k->strides && k->strides[i] && p->rank <= 8;
    if (view)
      elems = view_strides(k, i, o, shapes[i], strides[i]);
    size_t bytes = elems * tl_dtype_size(p->dtype);
    unsigned char *host = malloc(bytes ? bytes : 1);
    if (!host)
      return false;
    for (size_t e = 0; e < elems; e++) {
      state += 0x9E3779B97F4A7C15ull;
      uint64_t z = (state ^ (state >> 31)) * 0xBF58476D1CE4E5B9ull;
      float x = (float)(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
      if (p->dtype == TL_F32)
        memcpy(host + e * 4, &x, 4);
      else if (p->dtype == TL_F16 || p->dtype == TL_BF16) {
        uint16_t h = p->dtype == TL_F16 ? tl_f16_from_float(x) : tl_bf16_from_float(x);
        memcpy(host + e * 2, &h, 2);
      } else if (p->dtype == TL_E4M3 || p->dtype == TL_E5M2) {
        host[e] = p->dtype == TL_E4M3 ? tl_e4m3_from_float(x) : tl_e5m2_from_float(x);
      } else if (p->dtype == TL_F64) {
        double dx = x;
        memcpy(host + e * 8, &dx, 8);
      } else
        memset(host + e * tl_dtype_size(p->dtype), 0, tl_dtype_size(p->dtype));
    }
    tl_status st = bytes ? tl_malloc(ctx, bytes, &ptrs[i]) : TL_OK;
    if (st == TL_OK && bytes)
      st = tl_memcpy_htod(ctx, ptrs[i], host, bytes);
    free(host);
    if (st != TL_OK) {
      tune_error("allocating '%s' (%zu bytes): %s", p->name, bytes, tl_context_message(ctx));
      return false;
    }
    args[i] = tl_arg_tensor_strided(ptrs[i], p->dtype, p->rank, shapes[i], view ? strides[i] : NULL);
  }
  return true;
}

/* Whether every tensor map of kernel k can be encoded for args (tl_tmap_encoding_of). */
static bool maps_possible(const tl_kernel_info *k, const tl_arg *args)
{
  const int first = k->nargs + k->nsizes;
  for (int j = 0; j < k->ntmaps; j++) {
    tl_tmap_encoding e;
    if (!tl_tmap_encoding_of(k, first + j, args, k->nargs, &e, NULL, 0))
      return false;
  }
  return true;
}

static int compare_doubles(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Times candidate c: its module loaded (the PTX on a GPU, the source through the JIT on the CPU
 * device), 2 warm-up launches, then reps launches each between two events (the median). */
static void time_one(tl_context *ctx, const TuneOptions *o, const char *src, size_t len, const char *arch,
                     Candidate *c, const tl_arg *args, int nargs, const char *kname)
{
  tl_module *m = NULL;
  tl_kernel *k = NULL;
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  const bool cpu = dev.ordinal == TL_DEVICE_CPU;
  tl_status st;
  if (cpu) {
    tl_jit_options jo = tl_jit_default_options();
    jo.filename = o->input;
    jo.arch = arch;
    jo.defines = c->defs;
    jo.ndefines = c->ndefs;
    jo.kernel = kname;
    jo.flags = TL_JIT_NO_DISK_CACHE;
    st = tl_module_compile(ctx, src, len, &jo, &m);
  } else {
    st = c->image ? tl_module_load_image(ctx, c->ptx, c->image, &m) : tl_module_load_ptx(ctx, c->ptx, &m);
  }
  if (st == TL_OK)
    st = tl_module_get_kernel(m, kname, &k);
  if (st == TL_OK)
    for (int w = 0; w < 2 && st == TL_OK; w++)
      st = tl_launch(k, args, nargs, NULL);
  if (st == TL_OK)
    st = tl_synchronize(ctx);
  double *t = calloc((size_t)o->reps, sizeof *t);
  const tl_cuda_driver *d = tl_context_driver(ctx);
  CUevent ev[2] = {NULL, NULL};
  if (!cpu && d && st == TL_OK &&
      (d->cuEventCreate(&ev[0], 0) != CUDA_SUCCESS || d->cuEventCreate(&ev[1], 0) != CUDA_SUCCESS))
    st = TL_ERR_DRIVER;
  for (int r = 0; t && st == TL_OK && r < o->reps; r++) {
    if (cpu) {
      double t0 = now_ms();
      st = tl_launch(k, args, nargs, NULL);
      t[r] = now_ms() - t0;
      continue;
    }
    float ms = 0;
    d->cuEventRecord(ev[0], NULL);
    st = tl_launch(k, args, nargs, NULL);
    d->cuEventRecord(ev[1], NULL);
    if (st == TL_OK && (d->cuEventSynchronize(ev[1]) != CUDA_SUCCESS ||
                        d->cuEventElapsedTime(&ms, ev[0], ev[1]) != CUDA_SUCCESS))
      st = TL_ERR_DRIVER;
    t[r] = ms;
  }
  for (int e = 0; e < 2; e++)
    if (ev[e])
      d->cuEventDestroy(ev[e]);
  if (st == TL_OK && t) {
    qsort(t, (size_t)o->reps, sizeof *t, compare_doubles);
    c->ms = o->reps % 2 ? t[o->reps / 2] : 0.5 * (t[o->reps / 2 - 1] + t[o->reps / 2]);
  } else if (!c->why) {
    char buf[600];
    snprintf(buf, sizeof buf, "failed to run: %s: %s", tl_status_name(st), tl_context_message(ctx));
    c->why = strdup(buf);
    c->ms = 0;
  }
  free(t);
  tl_module_unload(m);
}

/* ------------------------------------------------------------------------------------ reporting */

static int by_time(const void *a, const void *b)
{
  const Candidate *x = *(Candidate *const *)a, *y = *(Candidate *const *)b;
  bool tx = x->ms > 0, ty = y->ms > 0;
  if (tx != ty)
    return tx ? -1 : 1;
  if (tx && x->ms != y->ms)
    return x->ms < y->ms ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int report(const TuneOptions *o, Candidate *c, int n, const char *device, unsigned flags,
                  double compile_wall, double time_wall)
{
  Candidate **order = calloc((size_t)n, sizeof *order);
  if (!order)
    return 1;
  for (int i = 0; i < n; i++)
    order[i] = &c[i];
  qsort(order, (size_t)n, sizeof *order, by_time);
  const Candidate *best = order[0]->ms > 0 ? order[0] : NULL;
  printf("tilec tune %s on %s at", o->input, device);
  for (int s = 0; s < o->nsizes; s++)
    printf(" %s=%s", o->sizes[s].name, o->sizes[s].value);
  printf(": %d candidates, median of %d runs each\n\n", n, o->reps);
  printf("| rank | candidate | build ms | time us | vs best |\n|---|---|---|---|---|\n");
  int rank = 0;
  for (int i = 0; i < n; i++) {
    const Candidate *x = order[i];
    if (x->ms > 0)
      printf("| %d | %s | %.1f | %.2f | %.3f |\n", ++rank, x->label, x->compile_ms, x->ms * 1e3,
             best->ms / x->ms);
    else
      printf("| - | %s | %.1f | - | %s |\n", x->label, x->compile_ms, x->why ? x->why : "not tried");
  }
  printf(
      "\nbuilt in %.2f s (%d threads: tilec%s, and the driver's PTX -> device binary on a GPU), timed in %.2f s\n",
      compile_wall / 1e3, o->jobs,
      flags & TILEC_COMPILE_TMA_ONLY ? " with the TMA forms alone, as tl_module_compile builds them here"
                                     : "",
      time_wall / 1e3);
  if (best) {
    printf("best:");
    for (int t = 0; t < o->ntries; t++)
      printf(" -D %s=%s", best->defs[o->ndefs + t].name, best->defs[o->ndefs + t].value);
    printf("  (%.2f us)\n", best->ms * 1e3);
  }
  free(order);
  if (!best)
    return tune_error("no candidate compiled and ran");
  return 0;
}

/* --save: the fastest candidate's --try values as the kernel's tuning result for this bucket. */
static int save_winner(tl_context *ctx, const TuneOptions *o, const char *src, size_t len, const char *arch,
                       const char *kernel, const Candidate *c, int n)
{
  const Candidate *best = NULL;
  for (int i = 0; i < n; i++)
    if (c[i].ms > 0 && (!best || c[i].ms < best->ms))
      best = &c[i];
  tl_jit_options jo = tl_jit_default_options();
  jo.arch = arch;
  jo.kernel = kernel;
  jo.defines = o->defs;
  jo.ndefines = o->ndefs;
  char err[1024] = "";
  tl_jit_cache *cache = tl_context_jit_cache(ctx);
  if (tl_jit_tune_store(cache, src, len, &jo, o->sizes, o->nsizes, best->defs + o->ndefs, o->ntries, err,
                        sizeof err) != TL_OK)
    return tune_error("--save: %s", err);
  printf("saved in %s/tune: launches of '%s' through the JIT (the same -D and target) at sizes that round up "
         "to the same powers of two use it\n",
         tl_jit_cache_dir(cache), kernel);
  return 0;
}

static int tune_file(const TuneOptions *o)
{
  size_t len = 0;
  char *src = cli_read_source(o->input, &len);
  if (!src)
    return 1;
  int n = 0;
  Candidate *c = make_candidates(o, &n);
  int rc = 1;
  char err[512] = "";
  tl_context *ctx = NULL;
  if (!c)
    goto out;
  if (tl_context_create(0, &ctx, err, sizeof err) != TL_OK) {
    tune_error("no device to time on: %s (TILEC_DEVICE=cpu runs the interpreter)", err);
    goto out;
  }
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  const char *arch = o->arch ? o->arch : tl_jit_arch_for(dev.cc_major, dev.cc_minor);
  double start = now_ms();
  Pool pool = {.o = o,
               .src = src,
               .len = len,
               .arch = arch,
               .c = c,
               .n = n,
               .deadline = o->budget_s > 0 ? start + o->budget_s * 1e3 : 0,
               .link = dev.ordinal != TL_DEVICE_CPU,
               /* what tl_module_compile builds for this device, and so what later launches of the
                * winner (--save) run: on sm_90a with tensor maps, the TMA forms alone */
               .flags = tl_context_tma_only(ctx, arch) ? TILEC_COMPILE_TMA_ONLY : 0};
  pthread_mutex_init(&pool.lock, NULL);
  compile_all(&pool);
  pthread_mutex_destroy(&pool.lock);
  double compiled = now_ms();
  /* the kernel's signature, from the first candidate that compiled */
  const Candidate *first = NULL;
  for (int i = 0; i < n && !first; i++)
    first = c[i].ptx ? &c[i] : NULL;
  if (!first) {
    for (int i = 0; i < n; i++)
      if (!c[i].why)
        c[i].why = strdup("not tried (budget)");
    rc = report(o, c, n, dev.name, pool.flags, compiled - start, 0);
    goto out;
  }
  tl_meta *meta = NULL;
  if (tl_meta_parse(first->ptx, strlen(first->ptx), &meta, err, sizeof err) != TL_OK ||
      tl_meta_kernel_count(meta) != 1) {
    tune_error("%s", tl_meta_kernel_count(meta) > 1
                         ? "the file has several kernels: choose one with --kernel NAME"
                         : err);
    tl_meta_free(meta);
    goto out;
  }
  const tl_kernel_info *k = tl_meta_kernel(meta, 0);
  tl_arg args[64];
  int64_t shapes[64][8], strides[64][8];
  tl_devptr ptrs[64] = {0};
  if (k->nargs > 64) {
    tune_error("kernel '%s' has more than 64 parameters", k->name);
    tl_meta_free(meta);
    goto out;
  }
  if (make_args(ctx, k, o, args, shapes, strides, ptrs)) {
    if (k->tma_required && !maps_possible(k, args)) {
      /* these tensors cannot have the kernel's maps (tl_launch would run a variant with both
       * forms): the candidates again, with both */
      for (int i = 0; i < n; i++) {
        free(c[i].ptx);
        free(c[i].image);
        free(c[i].why);
        c[i].ptx = c[i].image = c[i].why = NULL;
      }
      pool.flags = 0;
      pool.next = 0;
      pthread_mutex_init(&pool.lock, NULL);
      compile_all(&pool);
      pthread_mutex_destroy(&pool.lock);
      compiled = now_ms();
    }
    for (int i = 0; i < n; i++) {
      if (!c[i].ptx && !c[i].why)
        c[i].why = strdup("not tried (budget)");
      if (!c[i].ptx)
        continue;
      if (o->budget_s > 0 && now_ms() > start + o->budget_s * 1e3 && i > 0) {
        c[i].why = strdup("not tried (budget)");
        continue;
      }
      time_one(ctx, o, src, len, arch, &c[i], args, k->nargs, k->name);
    }
    rc = report(o, c, n, dev.name, pool.flags, compiled - start, now_ms() - compiled);
    if (rc == 0 && o->save)
      rc = save_winner(ctx, o, src, len, arch, k->name, c, n);
  }
  for (int i = 0; i < k->nargs; i++)
    if (ptrs[i])
      tl_free(ctx, ptrs[i]);
  tl_meta_free(meta);
out:
  for (int i = 0; c && i < n; i++) {
    free(c[i].defs);
    free(c[i].label);
    free(c[i].ptx);
    free(c[i].image);
    free(c[i].why);
  }
  free(c);
  tl_context_destroy(ctx);
  free(src);
  return rc;
}

int tune_command(int argc, char **argv)
{
  TuneOptions o = {0};
  int rc = parse_tune_args(argc, argv, &o);
  if (rc < 0)
    rc = tune_file(&o);
  for (int i = 0; i < o.ndefs; i++)
    free((char *)o.defs[i].name);
  for (int t = 0; t < o.ntries; t++) {
    free((char *)o.tries[t].name);
    free(o.tries[t].values);
  }
  for (int i = 0; i < o.nowned; i++)
    free(o.owned[i]);
  free(o.owned);
  free(o.defs);
  free(o.sizes);
  free(o.tries);
  /* what printf left in the buffer, before main closes standard output */
  if (fflush(stdout) != 0 && rc == 0)
    rc = cli_output_error("writing", "-", errno);
  return rc;
}
