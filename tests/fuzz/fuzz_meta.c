/* fuzz_meta.c: libFuzzer target on the launch metadata (runtime/meta.c, docs/abi.md): the strict
 * parser of the "// tilec-meta" block, then, for every kernel it accepts, the launch planner
 * (runtime/plan.c), which checks arguments and runs the grid programs.
 *
 * The input is the text, given as is (not NUL-terminated, so reading past the block is an ASan
 * report).  A hash of the input picks the size of the error buffer (down to one byte) and the
 * arguments of the launches: each tensor gets a shape of edge extents (0, 1, 7, 4096, 2^31 - 1,
 * 2^31, -1 ...) or the kernel's own fixed extents, scalars get edge values, and every plan is
 * made with and without num_sms.  The parser's and planner's contract is checked too: a failure
 * has a message, a success gives kernels that tl_meta_find_kernel finds by name, a plan's
 * parameters are the kernel's. */
#include "tilec_runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static _Noreturn void broken(const char *what)
{
  fprintf(stderr, "fuzz_meta: the runtime broke its contract: %s\n", what);
  abort();
}

static uint64_t state;
static uint64_t rnd(void)
{
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

static const int64_t extents[] = {
    0, 1, 2, 7, 31, 4096, 65535, 65536, 2147483647LL, 2147483648LL, -1, INT64_MAX, 1000000007};
#define NEXTENTS (sizeof extents / sizeof extents[0])

static void plan_kernel(const tl_kernel_info *k, char *err, size_t err_size)
{
  int nargs = k->nargs;
  tl_arg *args = calloc((size_t)nargs + 1, sizeof *args);
  int64_t *shapes = calloc((size_t)(nargs + 1) * 64, sizeof *shapes);
  for (int i = 0; i < nargs; i++) {
    const tl_param *p = &k->params[i];
    if (p->kind == TL_PARAM_TENSOR) {
      int64_t *shape = shapes + (size_t)i * 64;
      for (int d = 0; d < p->rank && d < 64; d++)
        shape[d] = p->dims[d].size_param < 0 && rnd() % 4 ? p->dims[d].extent : extents[rnd() % NEXTENTS];
      tl_devptr ptr = rnd() % 8 ? 0x10000 * (1 + rnd() % 16) : rnd() % 8 ? 0 : 0x10004;
      args[i] = tl_arg_tensor(ptr, p->dtype, p->rank, shape);
    } else {
      int64_t v = extents[rnd() % NEXTENTS];
      args[i] = rnd() % 2 ? tl_arg_int(p->dtype, v) : tl_arg_float(p->dtype, (double)v * 0.5);
    }
  }
  for (int sms = 0; sms <= 132; sms += 132) {
    tl_launch_plan plan;
    tl_status st = tl_plan_launch_sms(k, args, nargs, sms, &plan, err, err_size);
    if (st == TL_OK) {
      if (plan.nparams != k->nparams)
        broken("a plan with another number of parameters than its kernel");
      for (int i = 0; i < plan.nparams; i++)
        if (!plan.params[i])
          broken("a plan with a NULL parameter");
      if (!plan.empty && (!plan.grid[0] || !plan.grid[1] || !plan.grid[2]))
        broken("a plan that is not empty but has a grid axis of 0");
      if (plan.block[0] != k->threads || plan.smem != k->smem)
        broken("a plan with other threads or shared memory than its kernel");
    } else if (err_size > 1 && !err[0]) {
      broken("a failed plan without a message");
    }
    tl_launch_plan_release(&plan);
  }
  /* One argument too few, and a wrong kind first. */
  tl_launch_plan plan;
  if (nargs > 0 && tl_plan_launch(k, args, nargs - 1, &plan, err, err_size) == TL_OK)
    broken("a plan with one argument too few");
  tl_launch_plan_release(&plan);
  free(args);
  free(shapes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; i++)
    h = (h ^ data[i]) * 0x100000001b3ull;
  state = h | 1;
  static const size_t err_sizes[] = {256, 1, 2, 17};
  size_t err_size = err_sizes[h % 4];
  char *err = malloc(err_size);
  /* A copy of exactly `size` bytes: reading one more is an ASan report. */
  char *text = malloc(size ? size : 1);
  memcpy(text, data, size);
  err[0] = 0;
  tl_meta *meta = NULL;
  tl_status st = tl_meta_parse(text, size, &meta, err, err_size);
  if (st != TL_OK) {
    if (meta)
      broken("a failed parse that returns a meta");
    if (err_size > 1 && !err[0])
      broken("a failed parse without a message");
    if (memchr(err, 0, err_size) == NULL)
      broken("an error message that is not terminated");
  } else {
    int n = tl_meta_kernel_count(meta);
    if (n < 0 || tl_meta_kernel(meta, n) || tl_meta_kernel(meta, -1))
      broken("a kernel count that does not bound tl_meta_kernel");
    for (int i = 0; i < n; i++) {
      const tl_kernel_info *k = tl_meta_kernel(meta, i);
      const tl_kernel_info *found = tl_meta_find_kernel(meta, k->name);
      if (!found || strcmp(found->name, k->name))
        broken("tl_meta_find_kernel does not find a kernel by its name");
      if (k->nargs < 0 || k->nargs > k->nparams)
        broken("more arguments than parameters");
      for (int j = 0; j < k->nparams; j++) {
        const tl_param *p = &k->params[j];
        volatile size_t sink = strlen(p->name) + strlen(tl_dtype_name(p->dtype));
        for (int d = 0; d < p->rank; d++)
          if (p->dims[d].size_param >= k->nparams ||
              (p->dims[d].size_param >= 0 && k->params[p->dims[d].size_param].kind != TL_PARAM_SIZE))
            broken("a dimension names a parameter that is not a size");
        (void)sink;
      }
      for (int a = 0; a < 3; a++)
        if (!k->grid_text[a])
          broken("a kernel without the text of a grid axis");
      plan_kernel(k, err, err_size);
    }
  }
  tl_meta_free(meta);
  free(text);
  free(err);
  return 0;
}
