/* test_roles: warp-specialized roles at the thread level (interp/thread.c, "Execution"): a roles-if's
 * two branches run concurrently, talking through mbarriers.
 *
 * The kernel is built here as the lowering builds a Hopper GEMM's (ir.h, ST_IF .roles), small enough
 * to follow: 256 threads, warpgroup 1 the producer and warpgroup 0 the consumers; the producer's one
 * thread TMA-loads ITERS boxes of In through S stages, the consumers sum their elements of each,
 * release the stage, and pass their sums through shared memory behind a named barrier (the
 * mbarriers full[s] and empty[s] are bars[s] and bars[S + s]):
 *
 *   line  1  if tid == 0 { mbarrier.init full[s] 1, empty[s] 128 ... }; fence.proxy.async
 *   line  2  barrier
 *   line  3  roles if tid >= 128 {
 *   line  4      setmaxnreg.dec 40
 *                if tid == 128 { for k in serial(ITERS) {
 *   line 10          if k >= S { mbarrier.wait empty[k % S] parity (k / S + 1) % 2 }
 *   line 11          mbarrier.expect_tx full[k % S], 1024;  tma.load In[k * 8, 0] -> stage[k % S * 8, 0]
 *                } }
 *            } else {
 *   line  5      setmaxnreg.inc 232
 *                acc = 0
 *                for k in serial(ITERS) {
 *   line 20          mbarrier.wait full[k % S] parity (k / S) % 2
 *   line 21          for j in unrolled(4) { acc = acc + f32(stage[k % S * 8 + tid / 16, tid % 16 * 4 + j]) }
 *   line 22          mbarrier.arrive empty[k % S]
 *                }
 *   line 30      scratch[tid] = acc;  bar.sync 1, 128
 *   line 31      Out[tid] = scratch[127 - tid]
 *            }
 *
 * The protocol must complete with the right sums, in several variants (also inside a loop), and each
 * planted bug must be reported, not hang: no release of a stage, a wait on the wrong parity, a named
 * barrier's wrong count or its absence, a barrier of the whole block inside a role, a shared byte the
 * producer writes and the consumers read past their named barrier, roles that split a warpgroup,
 * roles inside a role, setmaxnreg without its whole warpgroup or with a bad count; and an error in one
 * role while the other waits stops both, the first error reported.  A stage released before the
 * consumers read it must come out wrong: an arrival hands over to the waiting producer at once (the
 * soonest the GPU could run it), which refills the stage before the reads.
 *
 * Then a TMA store (lower_copy.c's epilogue), in a kernel of its own: 128 threads write a [8, 64] f16
 * tile in the 128-byte swizzle, fence it for the async proxy, meet at a barrier, and thread 0 stores
 * the tile into a [6, 40] tensor through a map of box [8, 64] (the engine skips what lies outside):
 *
 *   line 50  for j in unrolled(4) { tile[tid / 16, tid % 16 * 4 + j] = f16(tid * 4 + j) }
 *   line 51  fence.proxy.async;  line 52  barrier
 *   line 53  if tid == 0 { tma.store tile[0, 0] -> Small[0, 0]; tma.store.wait }
 *
 * Small must hold its 240 elements of the tile; without the fence, or without the barrier, the
 * store's read is reported.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "tilec_runtime.h"
#include "../support/check.h"

enum { C = 128, T = 256, S = 2, ITERS = 5, ROWS = 8, COLS = 64 };

/* A planted bug or a variant of the kernel. */
typedef struct {
  bool no_arrive;       /* the consumers never release a stage */
  bool wrong_parity;    /* the producer waits for empty[s] with the consumers' parity (k / S) % 2 */
  bool no_named;        /* the epilogue's named barrier is gone */
  int named_threads;    /* the named barrier's count (0: C) */
  bool whole_barrier;   /* the epilogue's barrier is bar.sync 0 */
  bool producer_store;  /* the producer thread writes flag[0], which the consumers read */
  bool nested;          /* a roles-if inside the consumers' role */
  bool partial_maxnreg; /* the producer's setmaxnreg runs in thread 128 only */
  int consumer_nregs;   /* 0: 232 */
  bool loop;            /* the whole kernel runs twice in a loop (a roles-if inside a loop) */
  bool plain_if;        /* the split is an ordinary if (lockstep: a deadlock) */
  int split;            /* the producer is tid >= split (0: C) */
  bool short_tx;        /* the producer's last expect_tx expects 512 bytes (fails while consumers wait) */
  bool consumer_fault;  /* the consumers read flag[0], never written (fails while the producer waits) */
  bool early_release;   /* the consumers release a stage before they read it */
} Variant;

static Arena *A;
static Kernel *K;
static int tid, kv, jv, rv, acc;                /* vars */
static int in, out, stage, bars, scratch, flag; /* buffers */

static SrcLoc L(int line) { return (SrcLoc){line, 1}; }
static Expr *I(int64_t v) { return ex_int(A, TY_I32, v); }
static Expr *V(int var) { return ex_var(A, K, var); }
static Expr *B(OpKind op, Expr *x, Expr *y) { return ex_binary(A, op, x, y); }

static Expr **idx1(Expr *x)
{
  Expr **e = arena_alloc(A, sizeof *e);
  e[0] = x;
  return e;
}

static Expr **idx2(Expr *x, Expr *y)
{
  Expr **e = arena_alloc(A, 2 * sizeof *e);
  e[0] = x;
  e[1] = y;
  return e;
}

static Stmt *seq(int n, Stmt *const *items)
{
  Stmt **body = arena_alloc(A, sizeof *body * (size_t)n);
  memcpy(body, items, sizeof *body * (size_t)n);
  return st_seq(A, body, n);
}
#define SEQ(...) seq((int)(sizeof((Stmt *[]){__VA_ARGS__}) / sizeof(Stmt *)), (Stmt *[]){__VA_ARGS__})
static Stmt *empty(void) { return st_new(A, ST_SEQ, NO_LOC); }

static Stmt *if_(SrcLoc loc, Expr *c, Stmt *then_s, Stmt *else_s, bool roles)
{
  Stmt *s = st_new(A, ST_IF, loc);
  s->cond = c;
  s->then_s = then_s;
  s->else_s = else_s;
  s->roles = roles;
  return s;
}

static Stmt *for_(int var, int64_t n, ForKind kind, Stmt *body)
{
  Stmt *s = st_new(A, ST_FOR, NO_LOC);
  s->for_kind = kind;
  s->vars[0] = var;
  s->extents[0] = I(n);
  s->nvars = 1;
  s->then_s = body;
  return s;
}

static Stmt *mbar(SrcLoc loc, StmtKind kind, Expr *idx, Expr *value)
{
  Stmt *s = st_new(A, kind, loc);
  s->bar = bars;
  s->bar_idx = idx;
  s->value = value;
  return s;
}

static Stmt *store(SrcLoc loc, int buf, Expr *i, Expr *value)
{
  Stmt *s = st_new(A, ST_STORE, loc);
  s->buf = buf;
  s->idx = idx1(i);
  s->nidx = 1;
  s->value = value;
  return s;
}

static Stmt *assign(int var, Expr *value)
{
  Stmt *s = st_new(A, ST_ASSIGN, NO_LOC);
  s->var = var;
  s->value = value;
  return s;
}

static Stmt *barrier(SrcLoc loc, int id, int threads)
{
  Stmt *s = st_new(A, ST_BARRIER, loc);
  s->bar_id = id;
  s->bar_threads = threads;
  return s;
}

static Stmt *maxnreg(SrcLoc loc, int nregs, bool inc)
{
  Stmt *s = st_new(A, ST_SETMAXNREG, loc);
  s->nregs = nregs;
  s->inc = inc;
  return s;
}

static int add_buffer(const char *name, Scope scope, TypeKind elem, int rank, const int64_t *shape,
                      int64_t smem_offset)
{
  Buffer b = {.name = name, .scope = scope, .elem = elem, .rank = rank, .smem_offset = smem_offset};
  for (int d = 0; d < rank; d++) {
    b.shape[d] = I(shape[d]);
    b.tile_shape[d] = shape[d];
  }
  return kernel_add_buffer(A, K, b);
}

static int add_var(const char *name, VarKind kind, TypeKind type)
{
  return kernel_add_var(A, K, (Var){.name = name, .kind = kind, .type = type, .param_index = -1});
}

static Stmt *producer(Variant v)
{
  Expr *slot = B(OP_MOD, V(kv), I(S)), *round = B(OP_DIV, V(kv), I(S));
  Expr *parity = B(OP_MOD, v.wrong_parity ? round : B(OP_ADD, round, I(1)), I(2));
  Stmt *wait = if_(NO_LOC, B(OP_GE, V(kv), I(S)), mbar(L(10), ST_MBAR_WAIT, B(OP_ADD, slot, I(S)), parity),
                   NULL, false);
  Stmt *load = st_new(A, ST_TMA_LOAD, L(11));
  load->tmap = 0;
  load->src_buf = in;
  load->src_idx = idx2(B(OP_MUL, V(kv), I(ROWS)), I(0));
  load->nsrc_idx = 2;
  load->buf = stage;
  load->idx = idx2(B(OP_MUL, slot, I(ROWS)), I(0));
  load->nidx = 2;
  load->bar = bars;
  load->bar_idx = slot;
  Expr *bytes = I(ROWS * COLS * 2);
  if (v.short_tx)
    bytes = ex_select(A, B(OP_EQ, V(kv), I(ITERS - 1)), I(ROWS * COLS), bytes);
  Stmt *body = SEQ(wait, mbar(L(11), ST_MBAR_EXPECT_TX, slot, bytes), load);
  Stmt *one = for_(kv, ITERS, FOR_SERIAL, body);
  if (v.producer_store)
    one = SEQ(store(L(12), flag, I(0), ex_float(A, TY_F32, 1)), one);
  Stmt *nregs = maxnreg(L(4), 40, false);
  Stmt *only = if_(NO_LOC, B(OP_EQ, V(tid), I(C)), v.partial_maxnreg ? SEQ(nregs, one) : one, NULL, false);
  return v.partial_maxnreg ? only : SEQ(nregs, only);
}

static Stmt *consumers(Variant v)
{
  Expr *slot = B(OP_MOD, V(kv), I(S)), *parity = B(OP_MOD, B(OP_DIV, V(kv), I(S)), I(2));
  Expr *row = B(OP_ADD, B(OP_MUL, slot, I(ROWS)), B(OP_DIV, V(tid), I(16)));
  Expr *col = B(OP_ADD, B(OP_MUL, B(OP_MOD, V(tid), I(16)), I(4)), V(jv));
  Expr *elem = ex_cast(A, TY_F32, ex_load(A, K, stage, idx2(row, col), 2));
  if (v.consumer_fault)
    elem = B(OP_ADD, elem, ex_load(A, K, flag, idx1(I(0)), 1));
  Stmt *add = assign(acc, B(OP_ADD, V(acc), elem));
  add->loc = L(21);
  Stmt *sum = for_(jv, 4, FOR_UNROLLED, add);
  Stmt *release = v.no_arrive ? empty() : mbar(L(22), ST_MBAR_ARRIVE, B(OP_ADD, slot, I(S)), NULL);
  Stmt *wait = mbar(L(20), ST_MBAR_WAIT, slot, parity);
  Stmt *loop = for_(kv, ITERS, FOR_SERIAL,
                    v.early_release ? SEQ(wait, release, sum) : SEQ(wait, sum, release));
  Stmt *sync = v.no_named        ? empty()
               : v.whole_barrier ? barrier(L(30), 0, 0)
                                 : barrier(L(30), 1, v.named_threads ? v.named_threads : C);
  Expr *mine = ex_load(A, K, scratch, idx1(B(OP_SUB, I(C - 1), V(tid))), 1);
  if (v.producer_store)
    mine = B(OP_ADD, mine, ex_load(A, K, flag, idx1(I(0)), 1));
  Stmt *nested = v.nested ? if_(L(6), B(OP_LT, V(tid), I(64)), empty(), empty(), true) : empty();
  return SEQ(maxnreg(L(5), v.consumer_nregs ? v.consumer_nregs : 232, true), nested,
             assign(acc, ex_float(A, TY_F32, 0)), loop, store(L(30), scratch, V(tid), V(acc)), sync,
             store(L(31), out, V(tid), mine));
}

/* A new kernel K of `threads` threads, with its thread index var tid. */
static void new_kernel(const char *name, int threads)
{
  K = ARENA_NEW(A, Kernel);
  K->name = name;
  K->loc = L(1);
  K->nthreads = threads;
  K->threads = ex_int(A, TY_I32, threads);
  tid = add_var("tid", VAR_THREAD_IDX, TY_I32);
}

/* Runs K at the thread level; its diagnostics into msg (and the arena freed) either way. */
static bool run_kernel(Diags *d, const InterpArg *args, int nargs, const InterpOptions *opt, char *msg,
                       size_t cap)
{
  bool ok = interp_thread_run(K, args, nargs, opt, d);
  StrBuf sb = {0};
  diag_render(d, &sb);
  snprintf(msg, cap, "%s", sb.data ? sb.data : "");
  free(sb.data);
  arena_free(A);
  return ok;
}

static Kernel *build(Variant v)
{
  new_kernel("roles", T);
  kv = add_var("k", VAR_LOOP, TY_I32);
  jv = add_var("j", VAR_LOOP, TY_I32);
  rv = add_var("r", VAR_LOOP, TY_I32);
  acc = add_var("acc", VAR_MUT, TY_F32);
  in = add_buffer("In", SCOPE_GLOBAL, TY_F16, 2, (int64_t[]){ITERS * ROWS, COLS}, 0);
  out = add_buffer("Out", SCOPE_GLOBAL, TY_F32, 1, (int64_t[]){C}, 0);
  kernel_add_param(A, K, true, in);
  kernel_add_param(A, K, true, out);
  K->bufs[in].param_index = 0;
  K->bufs[out].param_index = 1;
  int64_t at = S * ROWS * COLS * 2;
  stage = add_buffer("stage", SCOPE_SHARED, TY_F16, 2, (int64_t[]){S * ROWS, COLS}, 0);
  K->bufs[stage].swizzle = SWIZZLE_128B;
  bars = add_buffer("bars", SCOPE_SHARED, TY_U64, 1, (int64_t[]){2 * S}, at);
  scratch = add_buffer("scratch", SCOPE_SHARED, TY_F32, 1, (int64_t[]){C}, at += 2 * S * 8);
  flag = add_buffer("flag", SCOPE_SHARED, TY_F32, 1, (int64_t[]){1}, at += C * 4);
  K->smem_bytes = at + 16;
  kernel_add_tmap(A, K, in, (int64_t[]){ROWS, COLS});

  Stmt *init[2 * S];
  for (int s = 0; s < S; s++) {
    init[s] = mbar(L(1), ST_MBAR_INIT, I(s), I(1));
    init[S + s] = mbar(L(1), ST_MBAR_INIT, I(S + s), I(C));
  }
  Stmt *fence = st_new(A, ST_FENCE_PROXY_ASYNC, L(1));
  Stmt *body = SEQ(
      if_(L(1), B(OP_EQ, V(tid), I(0)), seq(2 * S, init), NULL, false), fence, barrier(L(2), 0, 0),
      if_(L(3), B(OP_GE, V(tid), I(v.split ? v.split : C)), producer(v), consumers(v), !v.plain_if));
  K->body = v.loop ? for_(rv, 2, FOR_SERIAL, SEQ(body, barrier(L(40), 0, 0))) : body;
  return K;
}

static uint16_t In[ITERS * ROWS * COLS];
static float Out[C];

/* Runs the variant; true when it ran, its diagnostics in msg either way. */
static bool run(Variant v, char *msg, size_t cap, InterpStats *stats)
{
  A = arena_new();
  Diags d = {.arena = A, .filename = "roles.tl"};
  Kernel *k = build(v);
  const char *bad = v.consumer_nregs ? NULL : ir_verify(A, k, VERIFY_THREAD); /* it rejects that count too */
  CHECK(bad == NULL, "the kernel built is not well formed: %s", bad);
  InterpArg args[] = {{.name = "In", .data = In}, {.name = "Out", .data = Out}};
  InterpOptions opt = {.stats = stats, .max_steps = 10000000};
  for (int i = 0; i < C; i++)
    Out[i] = -1;
  return run_kernel(&d, args, 2, &opt, msg, cap);
}

/* What consumer t sums: its 4 elements of each of the ITERS boxes. */
static double sum_of(int t)
{
  double s = 0;
  for (int k = 0; k < ITERS; k++)
    for (int j = 0; j < 4; j++)
      s += tl_f16_to_float(In[(k * ROWS + t / 16) * COLS + t % 16 * 4 + j]);
  return s;
}

static void expect_result(const char *what, Variant v)
{
  char msg[4096];
  InterpStats st = {0};
  bool ok = run(v, msg, sizeof msg, &st);
  CHECK(ok, "%s: %s", what, msg);
  int wrong = 0;
  for (int t = 0; ok && t < C; t++)
    if (Out[t] != (float)sum_of(C - 1 - t) && wrong++ < 3)
      CHECK(false, "%s: Out[%d] = %g, expected %g", what, t, Out[t], sum_of(C - 1 - t));
  int runs = v.loop ? 2 : 1;
  CHECK(!ok || st.barriers == runs * (v.loop ? 3 : 2), "%s: %lld barriers", what, (long long)st.barriers);
  CHECK(!ok || st.collectives == runs * 2, "%s: %lld collectives (setmaxnreg per warpgroup)", what,
        (long long)st.collectives);
  CHECK(!ok || st.async_copies == runs * ITERS, "%s: %lld TMA loads", what, (long long)st.async_copies);
}

static void expect_error(const char *what, Variant v, const char *const *want, int nwant)
{
  char msg[4096];
  bool ok = run(v, msg, sizeof msg, NULL);
  CHECK(!ok, "%s: ran without an error", what);
  if (getenv("TEST_ROLES_VERBOSE"))
    printf("%s:\n%s\n", what, msg);
  for (int i = 0; i < nwant; i++)
    CHECK(strstr(msg, want[i]) != NULL, "%s: '%s' not in: %s", what, want[i], msg);
}

/* ---------------------------------------------------------------- a TMA store */

enum { SR = 6, SC = 40 }; /* the tensor the tile [ROWS, COLS] is stored into */
static uint16_t Small[SR * SC];

static bool run_store(bool fence, bool sync, char *msg, size_t cap)
{
  A = arena_new();
  Diags d = {.arena = A, .filename = "roles.tl"};
  new_kernel("store", C);
  jv = add_var("j", VAR_LOOP, TY_I32);
  int small = add_buffer("Small", SCOPE_GLOBAL, TY_F16, 2, (int64_t[]){SR, SC}, 0);
  kernel_add_param(A, K, true, small);
  K->bufs[small].param_index = 0;
  int tile = add_buffer("tile", SCOPE_SHARED, TY_F16, 2, (int64_t[]){ROWS, COLS}, 0);
  K->bufs[tile].swizzle = SWIZZLE_128B;
  K->smem_bytes = ROWS * COLS * 2;
  kernel_add_tmap(A, K, small, (int64_t[]){ROWS, COLS});
  Expr *col = B(OP_ADD, B(OP_MUL, B(OP_MOD, V(tid), I(16)), I(4)), V(jv));
  Stmt *w = st_new(A, ST_STORE, L(50));
  w->buf = tile;
  w->idx = idx2(B(OP_DIV, V(tid), I(16)), col);
  w->nidx = 2;
  w->value = ex_cast(A, TY_F16, B(OP_ADD, B(OP_MUL, V(tid), I(4)), V(jv)));
  Stmt *t = st_new(A, ST_TMA_STORE, L(53));
  t->tmap = 0;
  t->buf = tile;
  t->idx = idx2(I(0), I(0));
  t->nidx = 2;
  t->src_buf = small;
  t->src_idx = idx2(I(0), I(0));
  t->nsrc_idx = 2;
  K->body = SEQ(for_(jv, 4, FOR_UNROLLED, w), fence ? st_new(A, ST_FENCE_PROXY_ASYNC, L(51)) : empty(),
                sync ? barrier(L(52), 0, 0) : empty(),
                if_(L(53), B(OP_EQ, V(tid), I(0)), SEQ(t, st_new(A, ST_TMA_STORE_WAIT, L(53))), NULL, false));
  const char *bad = ir_verify(A, K, VERIFY_THREAD);
  CHECK(bad == NULL, "the store kernel built is not well formed: %s", bad);
  InterpArg args[] = {{.name = "Small", .data = Small}};
  InterpOptions opt = {.max_steps = 1000000};
  memset(Small, 0xff, sizeof Small);
  return run_kernel(&d, args, 1, &opt, msg, cap);
}

static void tma_store_tests(void)
{
  char msg[4096];
  bool ok = run_store(true, true, msg, sizeof msg);
  CHECK(ok, "a TMA store: %s", msg);
  int wrong = 0;
  for (int r = 0; ok && r < SR; r++)
    for (int c = 0; c < SC; c++)
      if (tl_f16_to_float(Small[r * SC + c]) != (float)(r * COLS + c) && wrong++ < 3)
        CHECK(false, "a TMA store: Small[%d, %d] = %g, expected %d", r, c, tl_f16_to_float(Small[r * SC + c]),
              r * COLS + c);
  CHECK(!run_store(false, true, msg, sizeof msg), "a TMA store without the fence ran without an error");
  CHECK(strstr(msg, "roles.tl:53:") && strstr(msg, "TMA store reads shared 'tile'[") &&
            strstr(msg, "which its writer did not fence (fence.proxy.async) for the copy engine"),
        "a TMA store without the fence: %s", msg);
  CHECK(!run_store(true, false, msg, sizeof msg), "a TMA store without the barrier ran without an error");
  CHECK(strstr(msg, "roles.tl:53:") && strstr(msg, "with no barrier after the thread that wrote it"),
        "a TMA store without the barrier: %s", msg);
}

int main(void)
{
  for (int i = 0; i < ITERS * ROWS * COLS; i++)
    In[i] = tl_f16_from_double((double)(i * 7 % 23) - 11);

  expect_result("the producer/consumer protocol", (Variant){0});
  expect_result("a roles-if inside a loop", (Variant){.loop = true});

  const char *stuck[] = {"roles.tl:20:",
                         "mbarrier wait on bars[0] (parity 1)",
                         "(1 completed, 1 arrivals and 0 bytes missing)",
                         "the other warp-specialized role waits too (thread 128 on bars[2])",
                         "a deadlock",
                         "thread 0)"};
  expect_error("no release of a stage", (Variant){.no_arrive = true}, stuck, 6);
  const char *parity[] = {"roles.tl:20:", "mbarrier wait on bars[0] (parity 0)",
                          "the other warp-specialized role waits too (thread 128 on bars[2])", "a deadlock"};
  expect_error("the producer waits on the wrong parity", (Variant){.wrong_parity = true}, parity, 4);
  const char *lockstep[] = {"roles.tl:10:", "mbarrier wait on bars[2]", "nothing else would complete it",
                            "thread 128)"};
  expect_error("an ordinary if: lockstep", (Variant){.plain_if = true}, lockstep, 4);

  const char *count[] = {"roles.tl:30:", "named barrier 1 of 256 threads reached by 128 (threads 0 to 127)"};
  expect_error("a named barrier's count", (Variant){.named_threads = 256}, count, 2);
  const char *whole[] = {
      "roles.tl:30:",
      "a barrier of the whole block inside a warp-specialized role: the other role never reaches "
      "it"};
  expect_error("bar.sync 0 inside a role", (Variant){.whole_barrier = true}, whole, 2);
  const char *race[] = {"roles.tl:31:", "data race on shared 'scratch'[", "with no barrier between"};
  expect_error("no named barrier", (Variant){.no_named = true}, race, 3);
  const char *cross[] = {"roles.tl:31:",
                         "data race on shared 'flag'[0]: written by thread 128 and read by thread 0"};
  expect_error("a named barrier does not order the other role", (Variant){.producer_store = true}, cross, 2);

  /* an error in one role while the other waits: that one unwinds, and the first error is reported */
  const char *tx[] = {"roles.tl:11:", "TMA load of 1024 bytes on bars, which expected fewer", "thread 128)"};
  expect_error("a producer's error while the consumers wait", (Variant){.short_tx = true}, tx, 3);
  const char *unset[] = {"roles.tl:21:", "shared 'flag'[0] is read before anything wrote it", "thread 0)"};
  expect_error("a consumer's error while the producer waits", (Variant){.consumer_fault = true}, unset, 3);

  /* released before it is read: the producer, run at the arrival, refills the stage first */
  char msg[4096];
  bool ran = run((Variant){.early_release = true}, msg, sizeof msg, NULL);
  int differ = 0;
  for (int t = 0; ran && t < C; t++)
    differ += Out[t] != (float)sum_of(C - 1 - t);
  CHECK(ran && differ > 0, "a stage released before it is read: %s, %d sums differ", ran ? "ran" : msg,
        differ);

  const char *split[] = {"roles.tl:3:",
                         "warp-specialized roles split warpgroup 0: a role is whole warpgroups"};
  expect_error("roles that split a warpgroup", (Variant){.split = 64}, split, 2);
  const char *nested[] = {"roles.tl:6:", "warp-specialized roles inside a role are not supported"};
  expect_error("roles inside a role", (Variant){.nested = true}, nested, 2);
  const char *partial[] = {"roles.tl:4:", "setmaxnreg needs all 128 threads of its warpgroup; 1 of 128"};
  expect_error("setmaxnreg in one thread", (Variant){.partial_maxnreg = true}, partial, 2);
  const char *nregs[] = {"roles.tl:5:", "setmaxnreg with 236 registers (24 to 256, a multiple of 8)"};
  expect_error("setmaxnreg 236", (Variant){.consumer_nregs = 236}, nregs, 2);

  tma_store_tests();

  printf("test_roles: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
