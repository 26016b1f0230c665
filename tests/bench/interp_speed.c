/* interp_speed: how fast the interpreter runs the kernels a learner runs (issue 13's targets, on the
 * 2-core CPU machine: vector add of 2^20 elements under 1 s, the example matmul at 256^3 at thread
 * level under 5 s, softmax 64 x 4096 under 2 s). Each kernel at both levels, on random inputs;
 * compile time included (it is what `tilec run` and the CPU device pay), the median of --reps runs.
 *
 *   build/tests/bench/interp_speed [--reps N] [--smoke] [--only NAME]
 *
 * --smoke: one repetition and no targets (ctest runs it so that it keeps working; CI machines are too
 * noisy for timing). Prints one line per kernel and level: "name level seconds target verdict". */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interp.h"
#include "../support/read_file.h"

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  const char *name, *file, *kernel;
  double target; /* seconds, at the thread level (both levels for vector add and softmax) */
  int64_t sizes[3];
  const char *size_names[3];
  int ntensors;
  const char *tensors[3];
  TypeKind types[3];
  int rank[3];
  int dims[3][2]; /* indices into sizes */
} Case;

static const Case cases[] = {
    {"vector_add 2^20",
     "examples/vector_add.tl",
     "vector_add",
     1.0,
     {1 << 20},
     {"N"},
     3,
     {"A", "B", "C"},
     {TY_F32, TY_F32, TY_F32},
     {1, 1, 1},
     {{0}, {0}, {0}}},
    {"matmul 256^3 f16",
     "examples/matmul.tl",
     "matmul",
     5.0,
     {256, 256, 256},
     {"M", "N", "K"},
     3,
     {"A", "B", "C"},
     {TY_F16, TY_F16, TY_F16},
     {2, 2, 2},
     {{0, 2}, {2, 1}, {0, 1}}},
    {"softmax 64x4096 f16",
     "stdlib/softmax.tl",
     "softmax",
     2.0,
     {64, 4096},
     {"M", "N"},
     2,
     {"X", "Y"},
     {TY_F16, TY_F16},
     {2, 2},
     {{0, 1}, {0, 1}}},
};

static const char *const level_names[] = {"tile", "thread sm_90a", "thread sm_80"};

/* One run at level (0 tile, 1 thread sm_90a, 2 thread sm_80): compile and execute; seconds, or -1 on an
 * error. */
static double run(const Case *c, const char *src, size_t len, int level, void **data)
{
  double t0 = now();
  Arena *a = arena_new();
  Diags d = {.arena = a, .filename = c->file};
  Module *m = level ? interp_compile_thread(a, &d, src, len, NULL, 0, c->kernel,
                                            target_find(level == 1 ? "sm_90a" : "sm_80"))
                    : interp_compile(a, &d, src, len, NULL, 0, c->kernel);
  Kernel *k = m ? interp_find_kernel(m, c->kernel) : NULL;
  InterpArg args[6];
  int n = 0;
  for (int i = 0; i < 3 && c->size_names[i]; i++)
    args[n++] = (InterpArg){.name = c->size_names[i], .i = c->sizes[i]};
  for (int i = 0; i < c->ntensors; i++)
    args[n++] = (InterpArg){.name = c->tensors[i], .data = data[i]};
  InterpOptions opt = {.num_sms = 132};
  bool ok = k && (level ? interp_thread_run(k, args, n, &opt, &d) : interp_tile_run(k, args, n, &opt, &d));
  if (!ok) {
    StrBuf sb = {0};
    diag_render(&d, &sb);
    fprintf(stderr, "interp_speed: %s: %s\n", c->name, sb.data ? sb.data : "no kernel");
    free(sb.data);
  }
  arena_free(a);
  return ok ? now() - t0 : -1;
}

int main(int argc, char **argv)
{
  int reps = 3;
  bool smoke = false;
  const char *only = NULL;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--smoke"))
      smoke = true;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
  if (smoke)
    reps = 1;
  if (reps < 1)
    reps = 1;
  int bad = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const Case *c = &cases[ci];
    if (only && !strstr(c->name, only))
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, c->file);
    size_t len = 0;
    char *src = test_read_file(path, &len);
    if (!src) {
      fprintf(stderr, "interp_speed: cannot read %s\n", path);
      return 1;
    }
    void *data[3];
    for (int i = 0; i < c->ntensors; i++) {
      int64_t n = 1;
      for (int d = 0; d < c->rank[i]; d++)
        n *= c->sizes[c->dims[i][d]];
      data[i] = malloc((size_t)n * (size_t)type_bytes(c->types[i]));
      for (int64_t e = 0; e < n; e++)
        val_store(c->types[i], data[i], e, (Val){.f = (double)(rand() % 17 - 8) / 8});
    }
    for (int level = 0; level < 3; level++) {
      double t[16];
      int r = reps < 16 ? reps : 16;
      for (int i = 0; i < r; i++)
        t[i] = run(c, src, len, level, data);
      qsort(t, (size_t)r, sizeof t[0], cmp);
      double med = t[r / 2];
      bool failed = t[0] < 0;
      const char *verdict = failed ? "ERROR" : smoke ? "-" : med <= c->target ? "ok" : "SLOW";
      printf("%-22s %-13s %8.3f s  target %.0f s  %s\n", c->name, level_names[level], med, c->target,
             verdict);
      bad += failed || (!smoke && med > c->target);
    }
    for (int i = 0; i < c->ntensors; i++)
      free(data[i]);
    free(src);
  }
  return bad != 0;
}
