/* fuzz_interp.c: libFuzzer target on the interpreter (interp/): every kernel a fuzzed input defines
 * runs at the tile level and, when that succeeds, at the thread level of one target, on the same
 * small inputs; the two levels must agree.
 *
 * The inputs are fuzz_compile's (its header comment): three option bytes, then .tl source with "//-"
 * directive lines (directives.h). Byte 0's parity picks the thread level's target (even: sm_80, odd:
 * sm_90a), -D lines are defines, "//-k NAME" picks the kernel. Every size is 1 + (a hash of the input)
 * mod 24, scalars are small, tensors hold multiples of 1/8 (so sums are exact in any order; see
 * tests/unit/test_levels.c, which this is the fuzzed form of).
 *
 * A finding (abort): both levels succeed and a tensor element differs (val_close), or any crash,
 * sanitizer report or internal error (DIE) on the way. Errors the levels report are not findings:
 * a fuzzed kernel may index out of bounds or race, which is what the interpreter is for. A kernel
 * over the budget (blocks x threads, tile elements) is skipped, and a run stops after 4 million
 * statements (InterpOptions.max_steps), to keep each input fast.
 * TILEC_FUZZ_VERBOSE=1 prints what happens to each kernel; TILEC_FUZZ_STATS=1, at exit, how many
 * kernels ran at both levels and agreed. */
#include "interp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../support/launch.h"
#include "directives.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER 3
enum { MAX_ELEMS = 1 << 14, MAX_BLOCK_THREADS = 1 << 14, MAX_TILE_ELEMS = 1 << 16 };

static int verbose;
static long kernels, both_ran, agreed;

static void print_stats(void)
{
  fprintf(stderr, "fuzz_interp: %ld kernels, %ld ran at both levels, %ld agreed\n", kernels, both_ran,
          agreed);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  verbose = getenv("TILEC_FUZZ_VERBOSE") && atoi(getenv("TILEC_FUZZ_VERBOSE"));
  if (getenv("TILEC_FUZZ_STATS"))
    atexit(print_stats);
  return 0;
}

static uint64_t mix(uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

/* Float scalars in [1/8, 2], sizes in [1, 24], integer scalars in [0, 3], from the input's hash. */
static void pick_scalar(void *state, const Var *v, InterpArg *a)
{
  uint64_t *seed = state;
  if (type_is_float(v->type))
    a->f = (double)(mix(seed) % 16 + 1) / 8;
  else
    a->i = v->kind == VAR_SIZE ? (int64_t)(mix(seed) % 24 + 1) : (int64_t)(mix(seed) % 4);
}

static uint64_t next_bits(void *state) { return mix(state); }

/* The launch (tests/support/launch.h): copy 1 for the tile level, 2 for the thread level; false
 * when k has too many parameters or a tensor over MAX_ELEMS elements (L to be released). */
static bool prepare(Launch *L, const Kernel *k, uint64_t seed)
{
  if (!launch_begin(L, k))
    return false;
  launch_scalars(L, k, pick_scalar, &seed);
  return launch_tensors(L, k, 1, MAX_ELEMS, next_bits, &seed);
}

/* Whether the thread-level kernel fits the budget: blocks x threads and the tiles' elements. */
static bool affordable(const Kernel *tile_k, const Kernel *thread_k, const Launch *L)
{
  int64_t tile_elems = 0;
  for (int b = 0; b < tile_k->nbufs; b++)
    if (tile_k->bufs[b].scope != SCOPE_GLOBAL)
      tile_elems += buffer_elems(&tile_k->bufs[b]);
  if (tile_elems > MAX_TILE_ELEMS)
    return false;
  int64_t blocks = 1;
  for (int g = 0; g < thread_k->grid_rank; g++) {
    const Expr *e = thread_k->grid[g];
    int64_t n = launch_dim(L, thread_k, e);
    if (n < 0) /* an expression: bounded by the sizes, which are small; count 24 a dimension */
      n = 24;
    blocks *= n;
  }
  return blocks * thread_k->nthreads <= MAX_BLOCK_THREADS;
}

static void run_kernel(const char *src, size_t len, const Directives *dv, const char *name, bool sm90a,
                       uint64_t seed)
{
  Arena *a = arena_new(), *ta = arena_new();
  Diags d = {.arena = a, .filename = "<fuzz>"}, td = {.arena = ta, .filename = "<fuzz>"};
  ConstDef defs[MAX_DEFINES];
  for (int i = 0; i < dv->ndefines; i++)
    defs[i] = (ConstDef){dv->defines[i].name, dv->defines[i].value};
  Module *m = interp_compile(a, &d, src, len, defs, dv->ndefines, name);
  Kernel *k = m ? interp_find_kernel(m, name) : NULL;
  const Target *target = target_find(sm90a ? "sm_90a" : "sm_80");
  Launch L;
  const bool began = k != NULL; /* L to be released */
  const bool drawn = began && prepare(&L, k, seed);
  /* Launch constants: both levels run the variant the launch's sizes choose, as the GPU would (the
   * sizes were drawn for the generic variant's parameters, which are the same). */
  int nsizes = 0;
  ConstDef *sizes = drawn && k->nlconsts ? interp_launch_sizes(a, k, L.args, L.nargs, &nsizes) : NULL;
  if (sizes) {
    Module *sm = interp_compile_at(a, &d, src, len, defs, dv->ndefines, sizes, nsizes, name, NULL, false);
    k = sm ? interp_find_kernel(sm, name) : NULL;
  }
  Module *tm = !k      ? NULL
               : sizes ? interp_compile_at(ta, &td, src, len, defs, dv->ndefines, sizes, nsizes, name, target,
                                           true)
                       : interp_compile_thread(ta, &td, src, len, defs, dv->ndefines, name, target);
  Kernel *tk = tm ? interp_find_kernel(tm, name) : NULL;
  bool ok = drawn && tk && affordable(k, tk, &L);
  if (verbose)
    fprintf(stderr, "fuzz_interp: kernel %s: %s\n", name,
            !tk  ? "does not compile"
            : ok ? "runs"
                 : "over budget");
  if (!ok) {
    if (began)
      launch_release(&L);
    arena_free(a);
    arena_free(ta);
    return;
  }
  kernels++;
  InterpOptions opt = {.num_sms = 2, .max_steps = 4000000}; /* well under libFuzzer's 10 s */
  launch_use(&L, 1);
  bool tile_ok = interp_tile_run(k, L.args, L.nargs, &opt, &d);
  launch_use(&L, 2);
  bool thread_ok = tile_ok && interp_thread_run(tk, L.args, L.nargs, &opt, &td);
  if (verbose)
    fprintf(stderr, "fuzz_interp: kernel %s: tile %s, thread (%s) %s\n", name, tile_ok ? "ran" : "stopped",
            sm90a ? "sm_90a" : "sm_80",
            thread_ok ? "ran"
            : tile_ok ? "stopped"
                      : "not run");
  if (thread_ok) {
    both_ran++;
    for (int i = 0; i < L.nargs; i++) {
      int64_t bad, e = launch_differs(&L, i, 1, 2, false, &bad);
      if (bad) {
        Val x = val_load(L.type[i], L.data[1][i], e), y = val_load(L.type[i], L.data[2][i], e);
        fprintf(
            stderr,
            "fuzz_interp: kernel %s: the levels disagree on %s[%lld] (flat): tile %.9g, thread (%s) %.9g\n",
            name, L.args[i].name, (long long)e, type_is_float(L.type[i]) ? x.f : (double)x.i,
            sm90a ? "sm_90a" : "sm_80", type_is_float(L.type[i]) ? y.f : (double)y.i);
        abort();
      }
    }
    agreed++;
  }
  launch_release(&L);
  arena_free(a);
  arena_free(ta);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < HEADER)
    return -1;
  const char *src = (const char *)data + HEADER;
  size_t len = size - HEADER;
  bool sm90a = (data[0] - '0') & 1;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < size; i++)
    seed = (seed ^ data[i]) * 0x100000001b3ull;
  seed |= 1;
  Directives dv;
  parse_directives(src, len, &dv);
  Arena *a = arena_new();
  Diags d = {.arena = a, .filename = "<fuzz>"};
  ConstDef defs[MAX_DEFINES];
  for (int i = 0; i < dv.ndefines; i++)
    defs[i] = (ConstDef){dv.defines[i].name, dv.defines[i].value};
  Module *m = interp_compile(a, &d, src, len, defs, dv.ndefines, dv.kernel);
  for (int i = 0; m && i < m->nkernels && i < 4; i++)
    run_kernel(src, len, &dv, m->kernels[i]->name, sm90a, seed + (uint64_t)i);
  arena_free(a);
  free(dv.store);
  return 0;
}
