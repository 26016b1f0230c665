/* test_aot: the C launchers of tilec --emit=header, compiled here with -Wall -Wextra -pedantic
 * -Werror from headers that the build generated for examples/vector_add.tl, saxpy.tl, gelu.tl and
 * tests/unit/aot_kernels.tl (2-D tensors, bool / f16 / i32 / f64 / bf16 / e4m3 / e5m2 scalars, an
 * integer scalar and every operator in the grid, num_sms in a grid, a kernel named `int`).
 *
 * Checks, through the stand-in driver (fake_cuda.c): every grid function against the runtime's
 * tl_plan_launch over many sizes (the same numbers, the same refusals); launches carry exactly the
 * parameter bytes the kernel reads (f16 / bf16 scalars rounded to nearest even) with the grid,
 * block and stream; no context, no driver, negative sizes and empty grids; the f16 / bf16
 * conversions against the runtime's; load / unload, and eight threads racing to the first launch
 * load the module once. Tensor maps, from the hand-written unit/tmap_kernels.ptx (aot_header_gen):
 * the launcher encodes them with the driver's arguments (dims innermost first, strides in bytes),
 * passes tmap_ok = 1, and 0 when a map cannot be encoded, the driver fails or lacks the entry point
 * (test_aot_notmap.c), or $TILEC_NO_TMA was set at load.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILEC_AOT_CUDA_LIBRARY FAKE_CUDA_PATH
#include "aot_kernels.h"
#include "gelu.h"
#include "saxpy.h"
#include "softmax.h"
#include "tmap_kernels.h"
#include "vector_add.h"

#include "fake_cuda.h"
#include "tilec_runtime.h"
#include "../support/check.h"

int aot_no_driver_result(void); /* test_aot_nodriver.c */
int aot_notmap_flag(void);      /* test_aot_notmap.c */

static fake_cuda_state *fake;

/* ------------------------------------------------------------------------- grids vs the plan */

static const tl_kernel_info *kernel_of(tl_meta **meta, const char *ptx, const char *name)
{
  char err[512];
  if (tl_meta_parse(ptx, strlen(ptx), meta, err, sizeof err) != TL_OK) {
    CHECK(0, "metadata: %s", err);
    return NULL;
  }
  return tl_meta_find_kernel(*meta, name);
}

static void test_vector_add_grid(void)
{
  tl_meta *meta = NULL;
  const tl_kernel_info *k = kernel_of(&meta, vector_add_ptx, "vector_add");
  static const int32_t sizes[] = {0, 1, 4095, 4096, 4097, 1000000, 1 << 28, INT32_MAX};
  for (size_t i = 0; k && i < sizeof sizes / sizeof *sizes; i++) {
    const int64_t shape[1] = {sizes[i]};
    tl_arg args[3] = {tl_arg_tensor(256, TL_F32, 1, shape), tl_arg_tensor(256, TL_F32, 1, shape),
                      tl_arg_tensor(256, TL_F32, 1, shape)};
    tl_launch_plan plan;
    char err[512];
    tl_status st = tl_plan_launch(k, args, 3, &plan, err, sizeof err);
    unsigned grid[3] = {0, 0, 0};
    CUresult r = vector_add_grid(sizes[i], grid);
    CHECK((st == TL_OK) == (r == TILEC_AOT_SUCCESS), "N=%d: plan %s, header %d", sizes[i], tl_status_name(st),
          r);
    if (st == TL_OK && r == TILEC_AOT_SUCCESS)
      CHECK(!memcmp(grid, plan.grid, sizeof grid), "N=%d: grid %u vs %u", sizes[i], grid[0], plan.grid[0]);
    tl_launch_plan_release(&plan);
  }
  tl_meta_free(meta);
}

static void test_scale2d_grid(void)
{
  tl_meta *meta = NULL;
  const tl_kernel_info *k = kernel_of(&meta, aot_kernels_ptx, "scale2d");
  static const int32_t ms[] = {0, 1, 16, 17, 1000, 65535 * 16, 65535 * 16 + 1, INT32_MAX};
  static const int32_t ns[] = {0, 1, 64, 65, 100000, INT32_MAX};
  static const int32_t reps[] = {-4, -3, -2, -1, 0, 1, 2, 5, INT32_MAX, INT32_MIN};
  int compared = 0, agreed = 0;
  for (size_t a = 0; k && a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
      for (size_t c = 0; c < sizeof reps / sizeof *reps; c++) {
        const int64_t shape[2] = {ms[a], ns[b]};
        tl_arg args[6] = {tl_arg_tensor(256, TL_F32, 2, shape),
                          tl_arg_tensor(256, TL_F32, 2, shape),
                          tl_arg_float(TL_F16, 1.0),
                          tl_arg_bool(true),
                          tl_arg_i32(reps[c]),
                          tl_arg_f64(0.5)};
        tl_launch_plan plan;
        char err[512];
        tl_status st = tl_plan_launch(k, args, 6, &plan, err, sizeof err);
        unsigned grid[3] = {0, 0, 0};
        CUresult r = scale2d_grid(1.0f, true, reps[c], 0.5, ms[a], ns[b], grid);
        compared++;
        if ((st == TL_OK) != (r == TILEC_AOT_SUCCESS) ||
            (st == TL_OK && memcmp(grid, plan.grid, sizeof grid)))
          printf("FAIL M=%d N=%d reps=%d: plan %s (%u %u %u: %s), header %d (%u %u %u)\n", ms[a], ns[b],
                 reps[c], tl_status_name(st), plan.grid[0], plan.grid[1], plan.grid[2], err, r, grid[0],
                 grid[1], grid[2]);
        else
          agreed++;
        tl_launch_plan_release(&plan);
      }
  CHECK(compared == agreed, "%d of %d size combinations disagree", compared - agreed, compared);
  tl_meta_free(meta);
}

/* num_sms: K_grid takes it first; the plan takes it from tl_plan_launch_sms */
static void test_persist_grid(void)
{
  tl_meta *meta = NULL;
  const tl_kernel_info *k = kernel_of(&meta, aot_kernels_ptx, "persist");
  static const int32_t ms[] = {0, 1, 3, 4, 5, 1000, 1056, 1057, 100000, INT32_MAX};
  static const int32_t sms[] = {-1, 0, 1, 132, INT32_MAX};
  int compared = 0, agreed = 0;
  for (size_t a = 0; k && a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof sms / sizeof *sms; b++) {
      const int64_t shape[2] = {ms[a], 64};
      tl_arg arg = tl_arg_tensor(256, TL_F32, 2, shape);
      tl_launch_plan plan;
      char err[512];
      /* the plan refuses num_sms < 0 itself and 0 as unknown; the header refuses both */
      tl_status st = tl_plan_launch_sms(k, &arg, 1, sms[b], &plan, err, sizeof err);
      unsigned grid[3] = {0, 0, 0};
      CUresult r = persist_grid(sms[b], ms[a], grid);
      compared++;
      if ((st == TL_OK) != (r == TILEC_AOT_SUCCESS) || (st == TL_OK && memcmp(grid, plan.grid, sizeof grid)))
        printf("FAIL M=%d num_sms=%d: plan %s (%u: %s), header %d (%u)\n", ms[a], sms[b], tl_status_name(st),
               plan.grid[0], err, r, grid[0]);
      else
        agreed++;
      tl_launch_plan_release(&plan);
    }
  CHECK(k && compared == agreed, "%d of %d combinations disagree", compared - agreed, compared);
  tl_meta_free(meta);
}

/* ------------------------------------------------------------------------------- variants */

/* stdlib/softmax.tl's softmax with --bucket M=64,N=64 / M=64,N=512 / M=4096,N=4096 (tests/CMakeLists.txt):
 * four variants (the one for large rows first). At every size softmax_variant must pick the variant
 * whose launch constants are the ones the runtime evaluates there (tl_launch_plan.consts), or 0 when
 * none is; softmax_grid must give that variant's grid, and a launch its block and shared memory. */
static void test_buckets(bool launch)
{
  const char *ptxs[] = {softmax_ptx, softmax_ptx_1, softmax_ptx_2, softmax_ptx_3};
  tl_meta *metas[4] = {0};
  const tl_kernel_info *ks[4];
  for (int v = 0; v < 4; v++)
    ks[v] = kernel_of(&metas[v], ptxs[v], "softmax");
  static const int32_t ms[] = {1, 64, 4096, 100000};
  static const int32_t ns[] = {1, 33, 64, 100, 512, 513, 1024, 4096, 4097, 100000};
  int picked[4] = {0}, compared = 0, agreed = 0;
  for (size_t a = 0; ks[0] && ks[1] && ks[2] && ks[3] && a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++) {
      const int64_t shape[2] = {ms[a], ns[b]};
      tl_arg args[2] = {tl_arg_tensor(256, TL_F16, 2, shape), tl_arg_tensor(512, TL_F16, 2, shape)};
      tl_launch_plan plan;
      char err[512];
      tl_status st = tl_plan_launch_sms(ks[0], args, 2, 132, &plan, err, sizeof err);
      int want = 0;
      for (int v = 1; st == TL_OK && v < 4 && !want; v++) {
        bool same = true;
        for (int c = 0; c < ks[v]->nconsts; c++)
          same &= ks[v]->consts[c].value == plan.consts[c];
        want = same ? v : 0;
      }
      tl_launch_plan_release(&plan);
      int got = softmax_variant(ms[a], ns[b]);
      unsigned grid[3] = {0, 0, 0};
      CUresult r = softmax_grid(132, ms[a], ns[b], grid);
      st = st == TL_OK ? tl_plan_launch_sms(ks[want], args, 2, 132, &plan, err, sizeof err) : st;
      bool ok = st == TL_OK && got == want && r == TILEC_AOT_SUCCESS && !memcmp(grid, plan.grid, sizeof grid);
      if (ok && launch) {
        r = softmax_launch(NULL, (uint16_t *)(uintptr_t)0x1000, (uint16_t *)(uintptr_t)0x9000, ms[a], ns[b]);
        ok = r == TILEC_AOT_SUCCESS && fake->last.block[0] == ks[want]->threads &&
             fake->last.smem == ks[want]->smem && !memcmp(fake->last.grid, plan.grid, sizeof grid);
      }
      compared++;
      if (!ok)
        printf("FAIL softmax M=%d N=%d: variant %d (want %d), header %d, plan %s: %s\n", ms[a], ns[b], got,
               want, r, tl_status_name(st), err);
      else
        agreed++, picked[want]++;
      if (st == TL_OK)
        tl_launch_plan_release(&plan);
    }
  CHECK(compared == agreed, "%d of %d sizes disagree", compared - agreed, compared);
  for (int v = 0; v < 4; v++)
    CHECK(picked[v] > 0, "variant %d was never picked", v);
  for (int v = 0; v < 4; v++)
    tl_meta_free(metas[v]);
}

/* ------------------------------------------------------------------------------- launches */

static void expect_param(int i, const void *value, unsigned size)
{
  const fake_cuda_launch *l = &fake->last;
  CHECK(i < l->nparams && l->param_size[i] == size && !memcmp(l->param[i], value, size),
        "param %d: size %u (want %u)", i, i < l->nparams ? l->param_size[i] : 0, size);
}

static void test_launches(void)
{
  float *A = (float *)(uintptr_t)0x1000, *B = (float *)(uintptr_t)0x2000, *C = (float *)(uintptr_t)0x3000;
  int launches = fake->launches;
  CUresult r = vector_add_launch((CUstream)(uintptr_t)0x77, A, B, C, 10000);
  CHECK(r == TILEC_AOT_SUCCESS, "vector_add_launch: %d", r);
  const fake_cuda_launch *l = &fake->last;
  CHECK(fake->launches == launches + 1 && !strcmp(l->function, "vector_add") && l->grid[0] == 3 &&
            l->grid[1] == 1 && l->grid[2] == 1 && l->block[0] == 256 && l->smem == 0 &&
            l->stream == (void *)(uintptr_t)0x77,
        "vector_add launch: %s grid %u block %u", l->function, l->grid[0], l->block[0]);
  const int32_t n = 10000;
  expect_param(0, &A, 8);
  expect_param(2, &C, 8);
  expect_param(3, &n, 4);

  /* every scalar size, f16 rounded from float */
  r = scale2d_launch(NULL, A, B, 1.5f, true, 4, 2.5, 100, 300);
  CHECK(r == TILEC_AOT_SUCCESS, "scale2d_launch: %d", r);
  CHECK(l->grid[0] == 5 && l->grid[1] == 7 && l->grid[2] == 2 && l->block[0] == 128, "scale2d grid %u %u %u",
        l->grid[0], l->grid[1], l->grid[2]);
  const uint16_t h = 0x3e00; /* 1.5 in f16 */
  const uint8_t yes = 1;
  const int32_t four = 4, m = 100, cols = 300;
  const double beta = 2.5;
  expect_param(2, &h, 2);
  expect_param(3, &yes, 1);
  expect_param(4, &four, 4);
  expect_param(5, &beta, 8);
  expect_param(6, &m, 4);
  expect_param(7, &cols, 4);
  r = int_launch(NULL, (int8_t *)A, (uint16_t *)B, (uint16_t *)C, 2.0f, 5000);
  const uint16_t two = 0x4000; /* 2.0 in bf16 */
  CHECK(r == TILEC_AOT_SUCCESS && l->grid[0] == 5 && !strcmp(l->function, "int"), "int_launch: %d", r);
  expect_param(3, &two, 2);
  /* e4m3, e5m2: 8-bit patterns, tensors and scalars alike */
  const uint8_t e4m3_one = 0x38, e5m2_max = 0x7B;
  r = fp8_launch(NULL, (uint8_t *)A, B, e4m3_one, e5m2_max, 257);
  CHECK(r == TILEC_AOT_SUCCESS && l->grid[0] == 2 && !strcmp(l->function, "fp8"), "fp8_launch: %d", r);
  expect_param(2, &e4m3_one, 1);
  expect_param(3, &e5m2_max, 1);
  r = gelu_bf16_launch(NULL, (uint16_t *)A, (uint16_t *)B, 1);
  CHECK(r == TILEC_AOT_SUCCESS && !strcmp(l->function, "gelu_bf16"), "gelu_bf16: %d", r);
  r = saxpy_launch(NULL, A, B, C, 2.0f, 1 << 20);
  CHECK(r == TILEC_AOT_SUCCESS && l->grid[0] == 256, "saxpy: %d", r);
  /* num_sms from the context's device: the stand-in has 132 multiprocessors */
  r = persist_launch(NULL, A, 100000);
  CHECK(r == TILEC_AOT_SUCCESS && l->grid[0] == 264 && !strcmp(l->function, "persist"),
        "persist, 100000 rows: %d, grid %u", r, l->grid[0]);
  r = persist_launch(NULL, A, 10);
  CHECK(r == TILEC_AOT_SUCCESS && l->grid[0] == 3, "persist, 10 rows: %d, grid %u", r, l->grid[0]);

  /* refused before the driver: negative sizes, a grid out of range; empty: nothing launched */
  launches = fake->launches;
  CHECK(vector_add_launch(NULL, A, B, C, -1) == TILEC_AOT_INVALID_VALUE, "negative N");
  CHECK(scale2d_launch(NULL, A, B, 1.0f, false, -2, 0.0, 10, 10) == TILEC_AOT_INVALID_VALUE, "grid z of -1");
  CHECK(scale2d_launch(NULL, A, B, 1.0f, false, 0, 0.0, 65535 * 16 + 1, 10) == TILEC_AOT_SUCCESS,
        "grid y clamped by min() to 65535");
  CHECK(fake->launches == launches + 1, "one of three launched");
  launches = fake->launches;
  CHECK(vector_add_launch(NULL, A, B, C, 0) == TILEC_AOT_SUCCESS, "N = 0");
  CHECK(scale2d_launch(NULL, A, B, 1.0f, false, -1, 0.0, 10, 10) == TILEC_AOT_SUCCESS, "grid z 0");
  CHECK(fake->launches == launches, "an empty grid launched");
}

/* ---------------------------------------------------------------------------- tensor maps */

static uint32_t tmap_flag(void)
{
  uint32_t flag = 7;
  CHECK(fake->last.nparams == 8 && fake->last.param_size[7] == 4, "tma_copy has %d params",
        fake->last.nparams);
  memcpy(&flag, fake->last.param[7], sizeof flag);
  return flag;
}

/* A tensor declared with strides(lda, 1): the launcher passes lda with the sizes, refuses one below
 * 1, and encodes the map with the row stride lda elements (not K); a row stride the TMA cannot take
 * gives tmap_ok = 0. */
static void test_tmap_view(void)
{
  uint16_t *A = (uint16_t *)(uintptr_t)0x10000;
  fake->tmap_encodes = 0;
  CUresult r = tma_view_launch(NULL, A, 100, 256, 264);
  uint32_t flag = 7;
  CHECK(r == TILEC_AOT_SUCCESS && fake->last.nparams == 6 && fake->tmap_encodes == 1, "tma_view_launch: %d",
        r);
  memcpy(&flag, fake->last.param[5], sizeof flag);
  const fake_cuda_tmap_call *a = &fake->tmap_calls[0];
  CHECK(flag == 1 && a->global_dim[0] == 256 && a->global_dim[1] == 100 && a->global_strides[0] == 528,
        "the view's map: flag %u dims %llu,%llu stride %llu", flag, (unsigned long long)a->global_dim[0],
        (unsigned long long)a->global_dim[1], (unsigned long long)a->global_strides[0]);
  int32_t lda = 0;
  memcpy(&lda, fake->last.param[3], sizeof lda);
  CHECK(lda == 264, "lda passed as %d", lda);
  CHECK(tma_view_launch(NULL, A, 100, 256, 257) == TILEC_AOT_SUCCESS, "odd lda");
  memcpy(&flag, fake->last.param[5], sizeof flag);
  CHECK(flag == 0, "a row of 514 bytes: flag %u", flag);
  CHECK(tma_view_launch(NULL, A, 100, 256, 0) == TILEC_AOT_INVALID_VALUE, "lda = 0 accepted");
  CHECK(tma_view_launch(NULL, A, 0, 256, 0) == TILEC_AOT_INVALID_VALUE, "lda = 0 accepted for an empty view");
}

static void test_tmap_launches(void)
{
  uint16_t *A = (uint16_t *)(uintptr_t)0x10000;
  float *B = (float *)(uintptr_t)0x20000;
  fake->tmap_encodes = 0;
  fake->misaligned_params = 0;
  CUresult r = tma_copy_launch(NULL, A, B, 100, 256, 64);
  CHECK(r == TILEC_AOT_SUCCESS && fake->last.grid[0] == 2, "tma_copy_launch: %d", r);
  CHECK(tmap_flag() == 1 && fake->tmap_encodes == 2, "flag %u, %d encodes", tmap_flag(), fake->tmap_encodes);
  const fake_cuda_tmap_call *a = &fake->tmap_calls[0], *b = &fake->tmap_calls[1];
  CHECK(a->data_type == 6 && a->rank == 2 && a->address == 0x10000 && a->global_dim[0] == 256 &&
            a->global_dim[1] == 100 && a->global_strides[0] == 512 && a->box_dim[0] == 64 &&
            a->box_dim[1] == 64 && a->element_strides[0] == 1 && a->element_strides[1] == 1 &&
            a->swizzle == 3 && a->interleave == 0 && a->l2_promotion == 2 && a->oob_fill == 0,
        "A's map: type %d rank %u dims %llu,%llu stride %llu box %u,%u swizzle %d", a->data_type, a->rank,
        (unsigned long long)a->global_dim[0], (unsigned long long)a->global_dim[1],
        (unsigned long long)a->global_strides[0], a->box_dim[0], a->box_dim[1], a->swizzle);
  CHECK(b->data_type == 7 && b->rank == 3 && b->global_dim[0] == 64 && b->global_dim[1] == 100 &&
            b->global_dim[2] == 2 && b->global_strides[0] == 256 && b->global_strides[1] == 25600 &&
            b->box_dim[0] == 8 && b->box_dim[1] == 16 && b->box_dim[2] == 1 && b->swizzle == 1,
        "B's map: dims %llu,%llu,%llu strides %llu,%llu box %u,%u,%u", (unsigned long long)b->global_dim[0],
        (unsigned long long)b->global_dim[1], (unsigned long long)b->global_dim[2],
        (unsigned long long)b->global_strides[0], (unsigned long long)b->global_strides[1], b->box_dim[0],
        b->box_dim[1], b->box_dim[2]);
  const uint64_t a_addr = 0x10000, b_addr = 0x20000;
  CHECK(fake->last.param_size[5] == 128 && !memcmp(fake->last.param[5], &a_addr, 8) &&
            !memcmp(fake->last.param[5] + 8, "TMAP", 4) && !memcmp(fake->last.param[6], &b_addr, 8),
        "the launch carries the encoded maps");
  CHECK(fake->misaligned_params == 0, "%d parameters not aligned as the PTX says", fake->misaligned_params);

  /* maps that cannot be encoded: the launch goes on with tmap_ok = 0 */
  fake->tmap_encodes = 0;
  CHECK(tma_copy_launch(NULL, A + 1, B, 100, 256, 64) == TILEC_AOT_SUCCESS && tmap_flag() == 0 &&
            fake->tmap_encodes == 0,
        "A not 16-byte aligned: flag %u, %d encodes", tmap_flag(), fake->tmap_encodes);
  CHECK(tma_copy_launch(NULL, A, B, 100, 3, 64) == TILEC_AOT_SUCCESS && tmap_flag() == 0,
        "a row of 6 bytes: flag %u", tmap_flag());
  fake->tmap_fail = 1;
  CHECK(tma_copy_launch(NULL, A, B, 100, 256, 64) == TILEC_AOT_SUCCESS && tmap_flag() == 0 &&
            fake->tmap_encodes == 1,
        "the driver fails: flag %u, %d encodes", tmap_flag(), fake->tmap_encodes);
  fake->tmap_fail = 0;
  /* $TILEC_NO_TMA, read at load */
  tmap_kernels_unload();
  setenv("TILEC_NO_TMA", "1", 1);
  fake->tmap_encodes = 0;
  CHECK(tma_copy_launch(NULL, A, B, 100, 256, 64) == TILEC_AOT_SUCCESS && tmap_flag() == 0 &&
            fake->tmap_encodes == 0,
        "TILEC_NO_TMA=1: flag %u, %d encodes", tmap_flag(), fake->tmap_encodes);
  tmap_kernels_unload();
  unsetenv("TILEC_NO_TMA");
  CHECK(tma_copy_launch(NULL, A, B, 100, 256, 64) == TILEC_AOT_SUCCESS && tmap_flag() == 1, "loaded again");
  /* the kernel without maps is untouched, and an empty grid launches nothing */
  int launches = fake->launches;
  CHECK(plain_launch(NULL, (int32_t *)A, 5) == TILEC_AOT_SUCCESS && fake->last.nparams == 2, "plain");
  CHECK(tma_copy_launch(NULL, A, B, 0, 256, 64) == TILEC_AOT_SUCCESS && fake->launches == launches + 1,
        "M = 0 launched");
  CHECK(aot_notmap_flag() == 0, "a driver without cuTensorMapEncodeTiled: flag %d", aot_notmap_flag());
}

/* --------------------------------------------------------------------- load, unload, threads */

/* The driver's own cuCtxSetCurrent and the context to make current on each thread (a tl_context
 * is not for concurrent use, so the racers do not touch it). */
static int (*set_current)(void *);
static void *cu_context;

typedef struct racer {
  CUresult result;
} racer;

static void *race(void *p)
{
  racer *r = p;
  set_current(cu_context);
  r->result = vector_add_launch(NULL, (float *)(uintptr_t)256, (float *)(uintptr_t)256,
                                (float *)(uintptr_t)256, 100);
  return NULL;
}

static void test_load_unload(void)
{
  int live = fake->modules_live;
  vector_add_unload();
  CHECK(fake->modules_live == live - 1, "unload: %d modules", fake->modules_live);
  vector_add_unload(); /* twice is fine */
  CHECK(fake->modules_live == live - 1, "second unload");
  CHECK(vector_add_load() == TILEC_AOT_SUCCESS && vector_add_load() == TILEC_AOT_SUCCESS &&
            fake->modules_live == live,
        "load twice: %d", fake->modules_live);
  vector_add_unload();
  /* eight threads, first launch at once: one module */
  enum { N = 8 };
  pthread_t threads[N];
  racer racers[N];
  for (int i = 0; i < N; i++) {
    racers[i] = (racer){-1};
    pthread_create(&threads[i], NULL, race, &racers[i]);
  }
  int ok = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(threads[i], NULL);
    ok += racers[i].result == TILEC_AOT_SUCCESS;
  }
  CHECK(ok == N && fake->modules_live == live, "%d of %d launched, %d modules (want %d)", ok, N,
        fake->modules_live, live);
}

/* ------------------------------------------------------------------------- f16, bf16 */

static void test_half(void)
{
  int bad16 = 0, badbf = 0;
  static const uint32_t lows[] = {0,      1,      0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000,
                                  0x3000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff};
  for (uint32_t hi = 0; hi < 0x10000; hi++)
    for (size_t j = 0; j < sizeof lows / sizeof *lows; j++) {
      const uint32_t bits = hi << 16 | lows[j];
      float f;
      memcpy(&f, &bits, sizeof f);
      uint16_t want = tl_f16_from_float(f), got = tilec_aot_f16(f);
      /* NaN payloads may differ: both must be NaN */
      bool nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
      bad16 += nan ? !((got & 0x7c00) == 0x7c00 && (got & 0x3ff)) : got != want;
      want = tl_bf16_from_float(f), got = tilec_aot_bf16(f);
      nan = (want & 0x7f80) == 0x7f80 && (want & 0x7f);
      badbf += nan ? !((got & 0x7f80) == 0x7f80 && (got & 0x7f)) : got != want;
    }
  CHECK(bad16 == 0 && badbf == 0, "%d f16 and %d bf16 conversions differ from the runtime's", bad16, badbf);
}

int main(void)
{
  void *handle = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  void *sym = handle ? dlsym(handle, "fake_cuda_get_state") : NULL;
  fake_cuda_state_fn state_fn = NULL;
  memcpy(&state_fn, &sym, sizeof sym);
  if (!state_fn) {
    printf("FAIL cannot load the stand-in driver %s\n", FAKE_CUDA_PATH);
    return 1;
  }
  fake = state_fn();
  int (*get_current)(void **) = NULL;
  sym = dlsym(handle, "cuCtxGetCurrent");
  memcpy(&get_current, &sym, sizeof sym);
  sym = dlsym(handle, "cuCtxSetCurrent");
  memcpy(&set_current, &sym, sizeof sym);
  test_vector_add_grid();
  test_scale2d_grid();
  test_persist_grid();
  test_buckets(false);
  test_half();

  /* no driver at all (another translation unit, another library name) */
  CHECK(aot_no_driver_result() == TILEC_AOT_NO_DRIVER, "no driver: %d", aot_no_driver_result());
  /* a driver, but no context current */
  CHECK(vector_add_load() == TILEC_AOT_INVALID_CONTEXT, "no context");
  CHECK(vector_add_launch(NULL, NULL, NULL, NULL, 5) == TILEC_AOT_INVALID_CONTEXT, "no context");

  setenv("TILEC_CUDA_LIBRARY", FAKE_CUDA_PATH, 1);
  tl_context *ctx = NULL;
  char err[512];
  tl_status st = tl_context_create(0, &ctx, err, sizeof err);
  CHECK(st == TL_OK, "context: %s", err);
  if (st == TL_OK) {
    get_current(&cu_context);
    test_launches();
    test_buckets(true);
    test_tmap_launches();
    test_tmap_view();
    test_load_unload();
    vector_add_unload();
    saxpy_unload();
    gelu_unload();
    aot_kernels_unload();
    tmap_kernels_unload();
    softmax_unload(); /* its four modules */
    CHECK(fake->modules_live == 0, "%d modules left", fake->modules_live);
    tl_context_destroy(ctx);
  }
  dlclose(handle);
  printf("test_aot: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
