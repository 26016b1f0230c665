/* test_levels: the two levels of the interpreter against each other, a differential test of every
 * lowering pass with no GPU and no reference to write.
 *
 * Every kernel of every .tl file in examples/, stdlib/ and tests/golden/ runs at the tile level (the
 * language's meaning, interp/tile.c) and at the thread level of its sm_80 and its sm_90a lowering
 * (what codegen translates, interp/thread.c), on the same random inputs at small random sizes (ragged
 * ones: the sizes are drawn, not chosen; sm_90a twice when its lowering loads tiles with TMA: once
 * with the tensor maps, once without, the kernel's cp.async path), and every tensor must come out the
 * same within the storage
 * type's rounding. The inputs are multiples of 1/8 in [-2, 2] (as in tests/gpu/gpu_conform.c), so
 * that sums and products of them are exact in f32 in any order: the levels, which sum in different
 * orders, then agree but for what follows a transcendental function. A run the tile level rejects
 * (an index out of bounds for the sizes drawn, say) is skipped; one that only the thread level rejects
 * (a race, a barrier not reached, a read of something never written) fails, with its message.
 *
 *   test_levels [-v] [--dir DIR]... [--root DIR] [SUBSTRING]
 *   gpu_levels  [-v] [--dir DIR]... [--root DIR] [SUBSTRING]      (the same source, TILEC_LEVELS_GPU)
 *
 * gpu_levels (tests/gpu, run by all.sh on the GPU machine) compares the GPU's results with the tile
 * level's instead: each kernel compiled by the JIT for the device and launched on the same inputs,
 * within looser bounds (the GPU's exp, tanh, ... are approximations: docs/interpreter.md).
 *
 * A file may ask for more runs, one per line of the form
 *
 *   // levels: KERNEL [--arch=sm_80|sm_90a] [-D NAME=VALUE]... [SIZE=VALUE]...
 *
 * each of which runs KERNEL (at both shapes; on one target with --arch: tiles that only sm_90a's
 * shared memory holds, say) with those constants and those sizes fixed, the others
 * drawn as usual and only they halved when a launch is too large: for kernels whose sizes are related
 * (attention's HK divides H, HKD = HK * D), which random sizes never satisfy, and for the variants a
 * constant selects (attention at D = 128, causal).
 *
 * SUBSTRING: only the files whose path contains it; --dir: the .tl files of DIR (and of its
 * subfolders one level down, as gpu_conform --dump writes them) instead of the three folders;
 * --root: the repository whose examples/, stdlib/ and tests/golden/ to run (default: this build's);
 * -v prints each run.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#ifdef TILEC_LEVELS_GPU
#include "tilec_jit.h"
#endif
#include "../support/check.h"
#include "../support/launch.h"
#include "../support/read_file.h"

/* MAX_THREADS: at most this many threads in all the blocks of a launch (the thread level runs each
 * one; attention's 256-thread blocks over every head took minutes): larger draws are halved. */
enum { GUARD = 8, SHAPES = 2, MAX_ELEMS = 1 << 18, MAX_THREADS = 8192 };

static uint64_t rng = 0x2545f4914f6cdd1du;
static uint64_t next(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1du;
}
static double uniform(double lo, double hi)
{
  return lo + (hi - lo) * (double)(next() >> 11) / 9007199254740992.0;
}
static int64_t between(int64_t lo, int64_t hi) { return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1)); }

static bool verbose;
static int compared, skipped, tile_only_errors;

enum { VARIANTS = 32, VARIANT_ITEMS = 8 };

/* A "// levels:" line: constants (-D) and fixed sizes for one more run of a kernel. */
typedef struct {
  char kernel[64];
  ConstDef defs[VARIANT_ITEMS], fixed[VARIANT_ITEMS];
  int ndefs, nfixed;
  int line;         /* its line in the file */
  const char *arch; /* the one target to run, or NULL for both */
  char text[256];   /* the line's words, NUL-separated: what the ConstDefs point into */
} Variant;

static const Variant no_variant;

static bool is_fixed(const Variant *v, const char *name)
{
  for (int i = 0; i < v->nfixed; i++)
    if (!strcmp(v->fixed[i].name, name))
      return true;
  return false;
}

/* Splits NAME=VALUE at the '=' in place into d; false if there is none. */
static bool split_def(char *word, ConstDef *d)
{
  char *eq = strchr(word, '=');
  if (!eq || eq == word || !eq[1])
    return false;
  *eq = 0;
  d->name = word;
  d->value = eq + 1;
  return true;
}

/* The "// levels:" lines of src into out (at most VARIANTS); a malformed line fails the test. */
static int read_variants(const char *path, const char *src, Variant *out)
{
  static const char tag[] = "// levels:";
  int n = 0, line = 0;
  for (const char *l = src; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    line++;
    if (strncmp(l, tag, sizeof tag - 1))
      continue;
    const char *e = strchr(l, '\n');
    size_t len = (e ? (size_t)(e - l) : strlen(l)) - (sizeof tag - 1);
    CHECK(n < VARIANTS && len < sizeof out->text, "%s:%d: too many or too long '// levels:' lines", path,
          line);
    if (n >= VARIANTS || len >= sizeof out->text)
      break;
    Variant *v = &out[n];
    memset(v, 0, sizeof *v);
    v->line = line;
    memcpy(v->text, l + sizeof tag - 1, len);
    bool ok = true, define = false;
    for (char *w = strtok(v->text, " \t\r"); w && ok; w = strtok(NULL, " \t\r")) {
      if (!v->kernel[0]) {
        ok = strlen(w) < sizeof v->kernel;
        snprintf(v->kernel, sizeof v->kernel, "%s", w);
      } else if (!strncmp(w, "--arch=", 7)) {
        v->arch = w + 7;
        ok = !strcmp(v->arch, "sm_80") || !strcmp(v->arch, "sm_90a");
      } else if (!strcmp(w, "-D")) {
        define = true;
      } else if (define) {
        ok = v->ndefs < VARIANT_ITEMS && split_def(w, &v->defs[v->ndefs++]);
        define = false;
      } else {
        ok = v->nfixed < VARIANT_ITEMS && split_def(w, &v->fixed[v->nfixed++]);
      }
    }
    CHECK(ok && v->kernel[0] && !define,
          "%s:%d: malformed '// levels:' line (KERNEL [--arch=sm_80|sm_90a] [-D NAME=VALUE]... "
          "[SIZE=VALUE]...)",
          path, line);
    n += ok && v->kernel[0] && !define;
  }
  return n;
}

/* Sizes in [1, 150], float scalars in [0.25, 1.5], integer scalars in [0, 3]. */
static void pick_scalar(void *state, const Var *v, InterpArg *a)
{
  (void)state;
  if (v->kind == VAR_SIZE)
    a->i = between(1, 150);
  else if (type_is_float(v->type))
    a->f = uniform(0.25, 1.5);
  else
    a->i = between(0, 3);
}

static uint64_t next_bits(void *state)
{
  (void)state;
  return next();
}

/* The arguments of one launch of k (tests/support/launch.h): sizes drawn, the largest halved `shrink`
 * times, then halved while a tensor would hold more than MAX_ELEMS elements; copy 0 for the tile
 * level, 1 and 2 for the thread level's two targets (or the GPU's). false if k cannot be launched so. */
static bool draw(Launch *L, const Kernel *k, int shrink, const Variant *var)
{
  if (!launch_begin(L, k))
    return false;
  launch_scalars(L, k, pick_scalar, NULL);
  for (int i = 0; i < var->nfixed; i++) /* names run_folder checked */
    L->args[launch_arg(L, var->fixed[i].name)].i = atoll(var->fixed[i].value);
  for (int r = 0; r < shrink; r++) {
    InterpArg *big = NULL;
    for (int v = 0; v < k->nvars; v++)
      if (k->vars[v].kind == VAR_SIZE && !is_fixed(var, k->vars[v].name)) {
        InterpArg *a = &L->args[launch_arg(L, k->vars[v].name)];
        if (!big || a->i > big->i)
          big = a;
      }
    if (big)
      big->i = (big->i + 1) / 2;
  }
  for (int p = 0; p < k->nparams; p++) {
    if (!k->params[p].is_buffer)
      continue;
    const Buffer *B = &k->bufs[k->params[p].index];
    for (;;) {
      int64_t n = 1, big = -1, bigv = 0;
      for (int d = 0; d < B->rank; d++) {
        int64_t s = launch_dim(L, k, B->shape[d]);
        n *= s;
        if (B->shape[d]->kind == EX_VAR && !is_fixed(var, k->vars[B->shape[d]->var].name) && s > bigv)
          bigv = s, big = d;
      }
      if (n <= MAX_ELEMS || big < 0)
        break;
      InterpArg *size = &L->args[launch_arg(L, k->vars[B->shape[big]->var].name)];
      size->i = (size->i + 1) / 2;
    }
  }
  return launch_tensors(L, k, GUARD, MAX_ELEMS, next_bits, NULL);
}

static bool gpu_mode; /* comparing with the GPU: its approximations need looser bounds (val_close) */

/* Whether the `bad` elements of f32 argument i where the GPU's copy c is not val_close to the tile
 * level's are what one 16-bit rounding that went the other way makes: a value the GPU computes
 * approximately (ex2.approx, ...) and the kernel then rounds to f16, as attention's P before P V,
 * lands one unit of 2^-11 of its magnitude away from the exact value's rounding now and then, and
 * every f32 sum it feeds moves by that unit times the term it weights: a few isolated elements off
 * by up to ~1e-3 of the tensor's largest values (more, relatively, where a sum cancels).
 * Tolerated: at most one element in 1000 (and at least 1), each within 2e-3 of the largest |value|
 * of the tile level's result; a wrong term, a lost tile or a race is neither that rare nor small. */
static int64_t rounding_flipped; /* elements rounding_flips tolerated, for the summary */

static bool rounding_flips(const Launch *L, int i, int c, int64_t bad)
{
  if (L->type[i] != TY_F32 || bad > (L->elems[i] + 999) / 1000)
    return false;
  double big = 0;
  for (int64_t e = 0; e < L->elems[i]; e++)
    big = fmax(big, fabs(val_load(TY_F32, L->data[0][i], e).f));
  for (int64_t e = 0; e < L->elems[i] + L->guard; e++) {
    Val a = val_load(TY_F32, L->data[0][i], e), b = val_load(TY_F32, L->data[c][i], e);
    if (!val_close(TY_F32, a, b, true) && !(e < L->elems[i] && fabs(a.f - b.f) <= 2e-3 * big + 1e-5))
      return false;
  }
  rounding_flipped += bad;
  return true;
}

#ifdef TILEC_LEVELS_GPU
static tl_context *gpu_ctx;

static tl_dtype dtype_of(TypeKind t)
{
  tl_dtype d = TL_F32;
  tl_dtype_from_name(type_name(t), &d);
  return d;
}

/* Whether a runtime call returned TL_OK; if not, the context's message into why, at once: the next
 * call that succeeds (tl_free, say) clears it. */
static bool gpu_ok(tl_status st, char *why, size_t cap)
{
  if (st != TL_OK)
    snprintf(why, cap, "%s", tl_context_message(gpu_ctx));
  return st == TL_OK;
}

/* Kernel `name` of src compiled by the JIT for the device and run on copy c of L; false with the
 * context's message in why. */
static bool run_gpu(const char *path, const char *src, size_t len, const char *name, const Variant *var,
                    Launch *L, int c, char *why, size_t cap)
{
  tl_jit_options o = tl_jit_default_options();
  o.filename = path;
  o.kernel = name;
  tilec_define defs[VARIANT_ITEMS];
  for (int i = 0; i < var->ndefs; i++)
    defs[i] = (tilec_define){var->defs[i].name, var->defs[i].value};
  o.defines = defs;
  o.ndefines = var->ndefs;
  tl_module *m = NULL;
  tl_kernel *k = NULL;
  if (!gpu_ok(tl_module_compile(gpu_ctx, src, len, &o, &m), why, cap) ||
      !gpu_ok(tl_module_get_kernel(m, name, &k), why, cap)) {
    tl_module_unload(m);
    return false;
  }
  const tl_kernel_info *info = tl_kernel_get_info(k);
  tl_devptr dev[64] = {0};
  int64_t shapes[64][TL_MAX_RANK], strides[64][TL_MAX_RANK];
  tl_arg args[64];
  bool ok = info->nargs <= 64;
  if (!ok)
    snprintf(why, cap, "%d parameters: this harness passes at most 64", info->nargs);
  for (int p = 0; ok && p < info->nargs; p++) {
    const tl_param *P = &info->params[p];
    int i = launch_arg(L, P->name);
    if (i < 0) {
      snprintf(why, cap, "no argument for %s", P->name);
      ok = false;
    } else if (P->kind == TL_PARAM_TENSOR) {
      size_t bytes = (size_t)(L->elems[i] + GUARD) * (size_t)type_bytes(L->type[i]);
      for (int r = 0; r < P->rank; r++) {
        int j = P->dims[r].size_param >= 0 ? launch_arg(L, info->params[P->dims[r].size_param].name) : -1;
        shapes[p][r] = P->dims[r].size_param < 0 ? P->dims[r].extent : j >= 0 ? L->args[j].i : 0;
      }
      ok = gpu_ok(tl_malloc(gpu_ctx, bytes, &dev[p]), why, cap) &&
           gpu_ok(tl_memcpy_htod(gpu_ctx, dev[p], L->data[c][i], bytes), why, cap);
      const tl_dim *S = info->strides ? info->strides[p] : NULL; /* a view: its strides too */
      for (int r = 0; S && r < P->rank; r++) {
        int j = S[r].size_param >= 0 ? launch_arg(L, info->params[S[r].size_param].name) : -1;
        strides[p][r] = S[r].size_param < 0 ? S[r].extent : j >= 0 ? L->args[j].i : 0;
      }
      args[p] = tl_arg_tensor_strided(dev[p], dtype_of(L->type[i]), P->rank, shapes[p],
                                      S ? strides[p] : NULL);
    } else if (P->dtype == TL_F32 || P->dtype == TL_F64 || P->dtype == TL_F16 || P->dtype == TL_BF16) {
      args[p] = tl_arg_float(P->dtype, L->args[i].f);
    } else {
      args[p] = tl_arg_int(P->dtype, L->args[i].i);
    }
  }
  ok = ok && gpu_ok(tl_launch(k, args, info->nargs, NULL), why, cap) &&
       gpu_ok(tl_synchronize(gpu_ctx), why, cap);
  for (int p = 0; p < info->nargs; p++) {
    if (!dev[p])
      continue;
    int i = launch_arg(L, info->params[p].name);
    size_t bytes = (size_t)(L->elems[i] + GUARD) * (size_t)type_bytes(L->type[i]);
    ok = ok && gpu_ok(tl_memcpy_dtoh(gpu_ctx, L->data[c][i], dev[p], bytes), why, cap);
    tl_free(gpu_ctx, dev[p]);
  }
  tl_module_unload(m);
  return ok;
}
#endif

static char *render(Diags *d)
{
  StrBuf sb = {0};
  diag_render(d, &sb);
  return sb.data;
}

static bool uses_fp8(const Kernel *k)
{
  for (int i = 0; i < k->nbufs; i++)
    if (type_is_fp8(k->bufs[i].elem))
      return true;
  return false;
}

/* Runs kernel `name` of src at the tile level (copy 0) and the thread level of sm_80 (copy 1) and
 * sm_90a (copy 2), then compares. */
static void run_levels(const char *path, const char *src, size_t len, const char *name, const Variant *var,
                       int shape, int shrink)
{
  Arena *a = arena_new();
  Diags d = {.arena = a, .filename = path};
  Module *m = interp_compile(a, &d, src, len, var->defs, var->ndefs, name);
  Kernel *k = m ? interp_find_kernel(m, name) : NULL;
  Launch L;
  if (!k || !draw(&L, k, shrink, var)) {
    CHECK(k != NULL, "%s: kernel %s does not compile", path, name);
    if (k)
      launch_release(&L);
    arena_free(a);
    return;
  }
  InterpOptions opt = {.num_sms = 4};
  launch_use(&L, 0);
  /* Launch constants: every level runs the variant for this launch's sizes, as the GPU's tl_launch
   * does (the sizes were drawn for the generic variant's parameters, which are the same). */
  int nsizes = 0;
  ConstDef *sizes = k->nlconsts ? interp_launch_sizes(a, k, L.args, L.nargs, &nsizes) : NULL;
  if (k->nlconsts) {
    Module *sm = interp_compile_at(a, &d, src, len, var->defs, var->ndefs, sizes, nsizes, name, NULL, false);
    Kernel *sk = sm ? interp_find_kernel(sm, name) : NULL;
    CHECK(sk != NULL, "%s: kernel %s does not compile at its launch's sizes", path, name);
    if (!sk) {
      launch_release(&L);
      arena_free(a);
      return;
    }
    k = sk;
  }
  InterpStats st = {0};
  opt.stats = &st;
  bool tile_ok = interp_tile_run(k, L.args, L.nargs, &opt, &d);
  opt.stats = NULL;
  if (tile_ok && st.blocks * k->nthreads > MAX_THREADS && shrink < 16) {
    launch_release(&L); /* too many threads for the thread level: smaller sizes */
    arena_free(a);
    run_levels(path, src, len, name, var, shape, shrink + 1);
    return;
  }
  if (!tile_ok) {
    char *msg = render(&d);
    CHECK(var == &no_variant, "%s:%d: kernel %s: the tile level rejects this '// levels:' run: %s", path,
          var->line, name, msg ? msg : "");
    if (verbose)
      printf("SKIP %s %s shape %d: the tile level rejects it: %s", path, name, shape, msg ? msg : "\n");
    skipped++;
    free(msg);
    launch_release(&L);
    arena_free(a);
    return;
  }
  static const char *const targets[] = {"sm_80", "sm_90a", "sm_90a without TMA", "the GPU"};
  for (int c = 1; c < 4; c++) {
    if (gpu_mode && c != 2)
      continue; /* copy 2 is the GPU's */
    if (var->arch && strcmp(var->arch, c == 1 ? "sm_80" : "sm_90a"))
      continue; /* the line asks for the other target */
    Arena *ta = arena_new();
    Diags td = {.arena = ta, .filename = path};
    launch_use(&L, c);
    bool ok;
    const char *target = gpu_mode ? targets[3] : targets[c - 1];
    char gpu_why[1024] = "";
    if (gpu_mode) {
#ifdef TILEC_LEVELS_GPU
      ok = run_gpu(path, src, len, name, var, &L, c, gpu_why, sizeof gpu_why);
#else
      ok = false;
#endif
    } else {
      Module *tm = interp_compile_at(ta, &td, src, len, var->defs, var->ndefs, sizes, nsizes, name,
                                     target_find(c == 1 ? "sm_80" : "sm_90a"), true);
      Kernel *tk = tm ? interp_find_kernel(tm, name) : NULL;
      if (!tk && c == 1 && uses_fp8(k)) { /* 8-bit floats are sm_90's (sema says so): no sm_80 program */
        arena_free(ta);
        continue;
      }
      if (tk && c == 3 && !tk->ntmaps) { /* no TMA: the same program as copy 2's */
        arena_free(ta);
        continue;
      }
      InterpArg args[LAUNCH_MAX_ARGS + 1];
      memcpy(args, L.args, sizeof *args * (size_t)L.nargs);
      args[L.nargs] = (InterpArg){.name = "tma.ok", .i = 0};
      ok = tk && interp_thread_run(tk, args, L.nargs + (c == 3), &opt, &td);
    }
    char sizes[256] = "";
    size_t used = 0;
    for (int i = 0; i < var->ndefs && used < sizeof sizes; i++)
      used += (size_t)snprintf(sizes + used, sizeof sizes - used, " -D %s=%s", var->defs[i].name,
                               var->defs[i].value);
    for (int i = 0; i < L.nargs && used < sizeof sizes; i++)
      if (!L.data[0][i])
        used += (size_t)snprintf(sizes + used, sizeof sizes - used, " %s=%g", L.args[i].name,
                                 L.args[i].i ? (double)L.args[i].i : L.args[i].f);
    if (!ok) {
      char *msg = gpu_mode ? strdup(gpu_why) : render(&td);
      CHECK(ok, "%s: kernel %s (%s,%s): %s fails where the tile level ran: %s", path, name, target, sizes,
            gpu_mode ? "the GPU" : "the thread level", msg ? msg : "");
      tile_only_errors++;
      free(msg);
    }
    for (int i = 0; ok && i < L.nargs; i++) {
      if (!L.data[0][i])
        continue;
      int64_t bad, first = launch_differs(&L, i, 0, c, gpu_mode, &bad);
      if (bad && gpu_mode && rounding_flips(&L, i, c, bad))
        bad = 0;
      if (bad) {
        Val x = val_load(L.type[i], L.data[0][i], first), y = val_load(L.type[i], L.data[c][i], first);
        CHECK(!bad,
              "%s: kernel %s (%s,%s): %s differs in %lld of %lld elements; first [%lld]: tile %.9g, %s "
              "%.9g",
              path, name, target, sizes, L.args[i].name, (long long)bad, (long long)L.elems[i],
              (long long)first, type_is_float(L.type[i]) ? x.f : (double)x.i, gpu_mode ? "GPU" : "thread",
              type_is_float(L.type[i]) ? y.f : (double)y.i);
      }
    }
    if (ok) {
      compared++;
      if (verbose)
        printf("ok   %s %s %s%s\n", path, name, target, sizes);
    }
    arena_free(ta);
  }
  launch_release(&L);
  arena_free(a);
}

static int by_name(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static void run_folder(const char *dir, const char *only, int depth)
{
  DIR *D = opendir(dir);
  CHECK(D != NULL, "cannot open %s", dir);
  if (!D)
    return;
  char *names[512];
  int n = 0;
  char *subs[16];
  int nsubs = 0;
  for (struct dirent *e; (e = readdir(D)) && n < 512;) {
    size_t len = strlen(e->d_name);
    if (len > 3 && !strcmp(e->d_name + len - 3, ".tl"))
      names[n++] = strdup(e->d_name);
    else if (depth > 0 && e->d_type == DT_DIR && e->d_name[0] != '.' && nsubs < 16)
      subs[nsubs++] = strdup(e->d_name);
  }
  closedir(D);
  qsort(names, (size_t)n, sizeof *names, by_name);
  for (int i = 0; i < n; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    free(names[i]);
    if (only && !strstr(path, only))
      continue;
    size_t len = 0;
    char *src = test_read_file(path, &len);
    CHECK(src != NULL, "cannot read %s", path);
    if (!src)
      continue;
    Arena *a = arena_new();
    Diags d = {.arena = a, .filename = path};
    Module *m = interp_compile(a, &d, src, len, NULL, 0, NULL);
    for (int kk = 0; m && kk < m->nkernels; kk++)
      for (int s = 0; s < SHAPES; s++)
        run_levels(path, src, len, m->kernels[kk]->name, &no_variant, s, 0);
    static Variant vars[VARIANTS];
    int nv = read_variants(path, src, vars);
    for (int v = 0; v < nv; v++) {
      const Kernel *k = m ? interp_find_kernel(m, vars[v].kernel) : NULL;
      CHECK(k != NULL, "%s:%d: '// levels:' names kernel %s, which the file does not have", path,
            vars[v].line, vars[v].kernel);
      bool sizes_ok = k != NULL;
      for (int i = 0; k && i < vars[v].nfixed; i++) {
        bool found = false;
        for (int x = 0; x < k->nvars && !found; x++)
          found = k->vars[x].kind == VAR_SIZE && !strcmp(k->vars[x].name, vars[v].fixed[i].name);
        CHECK(found, "%s:%d: '// levels:' names %s, which kernel %s has no size of", path, vars[v].line,
              vars[v].fixed[i].name, k->name);
        sizes_ok &= found;
      }
      for (int s = 0; sizes_ok && s < SHAPES; s++)
        run_levels(path, src, len, vars[v].kernel, &vars[v], s, 0);
    }
    arena_free(a);
    free(src);
  }
  qsort(subs, (size_t)nsubs, sizeof *subs, by_name);
  for (int i = 0; i < nsubs; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, subs[i]);
    free(subs[i]);
    run_folder(path, only, depth - 1);
  }
}

int main(int argc, char **argv)
{
  const char *only = NULL, *dirs[16], *root = TILEC_SOURCE_DIR;
  int ndirs = 0;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-v"))
      verbose = true;
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc && ndirs < 16)
      dirs[ndirs++] = argv[++i];
    else if (!strcmp(argv[i], "--root") && i + 1 < argc)
      root = argv[++i];
    else
      only = argv[i];
#ifdef TILEC_LEVELS_GPU
  char err[512];
  if (tl_context_create(0, &gpu_ctx, err, sizeof err) != TL_OK) {
    printf("gpu_levels: no GPU: %s\n", err);
    return 2;
  }
  gpu_mode = true;
#endif
  if (!ndirs) {
    static const char *const folders[] = {"examples", "stdlib", "tests/golden"};
    for (int i = 0; i < 3; i++) {
      char dir[1024];
      snprintf(dir, sizeof dir, "%s/%s", root, folders[i]);
      run_folder(dir, only, 0);
    }
  }
  for (int i = 0; i < ndirs; i++)
    run_folder(dirs[i], only, 1);
  printf("%s: %d %s runs compared with the tile level, %d launches skipped (the tile level rejects "
         "them), %d checks, %d failures",
         gpu_mode ? "gpu_levels" : "test_levels", compared, gpu_mode ? "GPU" : "thread-level", skipped,
         checks, failures);
  if (rounding_flipped)
    printf(" (%lld f32 elements tolerated as 16-bit roundings of approximations)",
           (long long)rounding_flipped);
  printf("\n");
#ifdef TILEC_LEVELS_GPU
  tl_context_destroy(gpu_ctx);
#endif
  /* not vacuous: most launches must run */
  CHECK(compared >= (ndirs || only ? 1 : 100), "only %d runs compared", compared);
  return failures != 0;
}
