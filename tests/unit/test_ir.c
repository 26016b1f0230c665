/* test_ir.c: the IR layer on its own: arena, type table, folding, printer,
 * verifier and diagnostic rendering. */
#include "ir.h"
#include "target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c) \
  ((c) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c), failures++))

static void test_arena(void)
{
  Arena *a = arena_new();
  for (int i = 0; i < 1000; i++) {
    unsigned char *p = arena_alloc(a, (size_t)i * 37 + 1);
    CHECK(((uintptr_t)p & 15) == 0);
    int zero = 1;
    for (int j = 0; j < i * 37 + 1; j++)
      zero &= p[j] == 0;
    CHECK(zero);
    memset(p, 0xAB, (size_t)i * 37 + 1);
  }
  CHECK(strcmp(arena_printf(a, "%s-%d", "x", 42), "x-42") == 0);
  CHECK(arena_alloc(a, 1 << 20) != NULL); /* bigger than a block */
  arena_free(a);
  StrBuf sb = {0};
  for (int i = 0; i < 1000; i++)
    sb_printf(&sb, "%d,", i);
  char *s = sb_take(&sb);
  CHECK(strncmp(s, "0,1,2,", 6) == 0 && strlen(s) == 3890);
  free(s);
}

static void test_types(void)
{
  CHECK(type_bytes(TY_BF16) == 2 && type_bytes(TY_BOOL) == 1 && type_bytes(TY_F64) == 8);
  CHECK(type_from_name("bf16", 4) == TY_BF16 && type_from_name("f128", 4) == TY_VOID);
  CHECK(type_is_int(TY_U8) && !type_is_int(TY_BOOL) && !type_is_int(TY_F16));
  CHECK(type_is_signed(TY_I16) && !type_is_signed(TY_U32));
  CHECK(intrinsic_lookup("rsqrt", 5) == FN_RSQRT && intrinsic_lookup("rsqrtx", 6) < 0);
}

static Kernel *kernel_with_const(Arena *a, int *cvar)
{
  Kernel *k = ARENA_NEW(a, Kernel);
  k->name = "k";
  Var v = {0};
  v.name = "B";
  v.kind = VAR_CONST;
  v.type = TY_I32;
  v.cval_i = 64;
  *cvar = kernel_add_var(a, k, v);
  return k;
}

static void test_fold(void)
{
  Arena *a = arena_new();
  int b;
  Kernel *k = kernel_with_const(a, &b);
  int64_t v;
  Expr *e = ex_binary(a, OP_CEILDIV, ex_int(a, TY_I32, 1000), ex_var(a, k, b));
  CHECK(ir_eval_int(a, k, e, &v) && v == 16);
  CHECK(e->kind == EX_BINARY); /* ir_eval_int leaves its argument alone */
  /* Signed overflow is not folded (ir_fold_checked reports it); unsigned wraps. */
  e = ex_binary(a, OP_ADD, ex_int(a, TY_I32, INT32_MAX), ex_int(a, TY_I32, 1));
  CHECK(!ir_eval_int(a, k, e, &v));
  e = ex_binary(a, OP_ADD, ex_int(a, TY_U32, 0xFFFFFFFF), ex_int(a, TY_U32, 1));
  CHECK(ir_eval_int(a, k, e, &v) && v == 0);
  e = ex_binary(a, OP_ADD, ex_int(a, TY_I32, INT32_MAX - 1), ex_int(a, TY_I32, 1));
  CHECK(ir_eval_int(a, k, e, &v) && v == INT32_MAX);
  {
    Diags d = {.arena = a};
    bool ok = true;
    Expr *m = ex_binary(a, OP_MUL, ex_int(a, TY_I32, 65536), ex_int(a, TY_I32, 65536));
    m = ir_fold_checked(a, k, m, &d, &ok);
    CHECK(!ok && d.nerrors == 1 && m->kind == EX_BINARY);
    ok = true;
    Expr *sh = ex_binary(a, OP_SHL, ex_int(a, TY_I64, 1), ex_int(a, TY_I64, 64));
    ir_fold_checked(a, k, sh, &d, &ok);
    CHECK(!ok && d.nerrors == 2);
    ok = true;
    Expr *dv = ex_binary(a, OP_DIV, ex_int(a, TY_I32, INT32_MIN), ex_int(a, TY_I32, -1));
    ir_fold_checked(a, k, dv, &d, &ok);
    CHECK(!ok && d.nerrors == 3);
    ok = true;
    Expr *ng = ex_unary(a, OP_NEG, ex_int(a, TY_I8, -128));
    ir_fold_checked(a, k, ng, &d, &ok);
    CHECK(!ok && d.nerrors == 4);
    ok = true;
    Expr *fine = ex_binary(a, OP_MUL, ex_int(a, TY_I64, 65536), ex_int(a, TY_I64, 65536));
    fine = ir_fold_checked(a, k, fine, &d, &ok);
    CHECK(ok && d.nerrors == 4 && fine->kind == EX_INT && fine->i == 4294967296);
  }
  e = ex_binary(a, OP_DIV, ex_int(a, TY_I32, 1), ex_int(a, TY_I32, 0));
  CHECK(!ir_eval_int(a, k, e, &v)); /* left for the caller to report */
  e = ex_select(a, ex_binary(a, OP_LT, ex_var(a, k, b), ex_int(a, TY_I32, 100)), ex_int(a, TY_I32, 7),
                ex_int(a, TY_I32, 9));
  CHECK(ir_eval_int(a, k, e, &v) && v == 7);
  e = ex_cast(a, TY_U8, ex_int(a, TY_I32, 300));
  CHECK(ir_eval_int(a, k, e, &v) && v == 44);
  e = ex_cast(a, TY_I32, ex_float(a, TY_F32, -2.75));
  CHECK(ir_eval_int(a, k, e, &v) && v == -2);
  e = ex_binary(a, OP_SHR, ex_int(a, TY_U32, 0xFFFFFFFF), ex_int(a, TY_U32, 4));
  CHECK(ir_eval_int(a, k, e, &v) && v == 0x0FFFFFFF);
  CHECK(ex_add(a, ex_int(a, TY_I32, 0), ex_var(a, k, b))->kind == EX_VAR);
  CHECK(ex_mul(a, ex_int(a, TY_I32, 3), ex_int(a, TY_I32, 5))->i == 15);
  arena_free(a);
}

/* A kernel named `name` with a size N, a loop variable i and a tensor A: f32[N] (*nv, *iv, *ab). */
static Kernel *kernel_with_tensor(Arena *a, const char *name, int *nv, int *iv, int *ab)
{
  Kernel *k = ARENA_NEW(a, Kernel);
  k->name = name;
  Var n = {.name = "N", .kind = VAR_SIZE, .type = TY_I32};
  *nv = kernel_add_var(a, k, n);
  Var i = {.name = "i", .kind = VAR_LOOP, .type = TY_I32};
  *iv = kernel_add_var(a, k, i);
  Buffer A = {.name = "A", .scope = SCOPE_GLOBAL, .elem = TY_F32, .rank = 1};
  A.shape[0] = ex_var(a, k, *nv);
  *ab = kernel_add_buffer(a, k, A);
  return k;
}

/* A[i] = A[i] op c */
static Stmt *update_store(Arena *a, Kernel *k, int ab, int iv, OpKind op, double c)
{
  Expr **idx = ARENA_ARRAY(a, Expr *, 1);
  idx[0] = ex_var(a, k, iv);
  Stmt *st = st_new(a, ST_STORE, NO_LOC);
  st->buf = ab;
  st->idx = idx;
  st->nidx = 1;
  st->value = ex_binary(a, op, ex_load(a, k, ab, idx, 1), ex_float(a, TY_F32, c));
  return st;
}

/* for iv in serial(extent) { body } */
static Stmt *serial_loop(Arena *a, int iv, Expr *extent, Stmt *body)
{
  Stmt *loop = st_new(a, ST_FOR, NO_LOC);
  loop->for_kind = FOR_SERIAL;
  loop->nvars = 1;
  loop->vars[0] = iv;
  loop->extents[0] = extent;
  loop->then_s = body;
  return loop;
}

/* kernel_with_tensor with A and N as its parameters, launched as one block of 32 threads. */
static Kernel *one_block_kernel(Arena *a, const char *name, int *nv, int *iv, int *ab)
{
  Kernel *k = kernel_with_tensor(a, name, nv, iv, ab);
  kernel_add_param(a, k, true, *ab);
  kernel_add_param(a, k, false, *nv);
  k->grid_rank = 1;
  k->grid[0] = ex_int(a, TY_I32, 1);
  k->threads = ex_int(a, TY_I32, 32);
  k->nthreads = 32;
  return k;
}

/* A tiny kernel: A[i] = A[i] * 2 for i in serial(N), printed and verified. */
static void test_print_verify(void)
{
  Arena *a = arena_new();
  int nv, iv, ab;
  Kernel *k = one_block_kernel(a, "twice", &nv, &iv, &ab);
  Stmt *st = update_store(a, k, ab, iv, OP_MUL, 2);
  Stmt *loop = serial_loop(a, iv, ex_var(a, k, nv), st);
  k->body = loop;
  StrBuf sb = {0};
  ir_print_kernel(&sb, k);
  CHECK(strstr(sb.data, "kernel twice grid(1) threads(32)\n  param A: f32[N]\n  param N: size i32\n"));
  CHECK(strstr(sb.data, "  for i in serial(N) {\n    A[i] = (A[i] * 2)\n  }\n"));
  free(sb.data);
  CHECK(ir_verify(a, k, VERIFY_THREAD) == NULL);
  /* Each of these breaks one invariant. */
  st->value = ex_int(a, TY_I32, 2);
  CHECK(ir_verify(a, k, VERIFY_THREAD) && strstr(ir_verify(a, k, VERIFY_THREAD), "store of i32 into f32"));
  st->value = ex_float(a, TY_F32, 2);
  st->nidx = 2;
  CHECK(ir_verify(a, k, VERIFY_THREAD) && strstr(ir_verify(a, k, VERIFY_THREAD), "with 2 indices"));
  st->nidx = 1;
  loop->for_kind = FOR_UNROLLED;
  CHECK(ir_verify(a, k, VERIFY_THREAD) && strstr(ir_verify(a, k, VERIFY_THREAD), "non-constant trip count"));
  loop->for_kind = FOR_PARALLEL;
  CHECK(ir_verify(a, k, VERIFY_THREAD) != NULL && ir_verify(a, k, VERIFY_TILE) == NULL);
  loop->for_kind = FOR_SERIAL;
  st->buf = 5;
  CHECK(ir_verify(a, k, VERIFY_TILE) && strstr(ir_verify(a, k, VERIFY_TILE), "buffer 5 of 1"));
  arena_free(a);
}

/* cp.async moves 16, 8 or 4 bytes (lanes times the element's bytes; lower_copy.c's 4-byte pieces for
 * rows aligned to less than 16): printed with its size, any other size refused by the verifier. */
static void test_cp_async_sizes(void)
{
  Arena *a = arena_new();
  int nv, iv, ab;
  Kernel *k = one_block_kernel(a, "cp", &nv, &iv, &ab);
  Buffer S = {.name = "S", .scope = SCOPE_SHARED, .elem = TY_F32, .rank = 1};
  S.tile_shape[0] = 16;
  S.shape[0] = ex_int(a, TY_I32, 16);
  int sb = kernel_add_buffer(a, k, S);
  Stmt *cp = st_new(a, ST_CP_ASYNC, NO_LOC);
  cp->buf = sb;
  cp->idx = ARENA_ARRAY(a, Expr *, 1);
  cp->idx[0] = ex_int(a, TY_I32, 0);
  cp->nidx = 1;
  cp->src_buf = ab;
  cp->src_idx = ARENA_ARRAY(a, Expr *, 1);
  cp->src_idx[0] = ex_int(a, TY_I32, 0);
  cp->nsrc_idx = 1;
  cp->src_bytes = ex_int(a, TY_I32, 4);
  k->body = cp;
  static const struct {
    int lanes;
    const char *printed; /* NULL: refused */
  } cases[] = {{4, "cp.async.16 A[0] -> S[0]"},
               {2, "cp.async.8 A[0] -> S[0]"},
               {1, "cp.async.4 A[0] -> S[0]"},
               {3, NULL},
               {8, NULL},
               {0, NULL}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    cp->lanes = cases[c].lanes;
    const char *why = ir_verify(a, k, VERIFY_THREAD);
    if (!cases[c].printed) {
      CHECK(why && strstr(why, "cp.async moves 4, 8 or 16 bytes"));
      continue;
    }
    CHECK(why == NULL);
    StrBuf text = {0};
    ir_print_kernel(&text, k);
    CHECK(strstr(text.data, cases[c].printed));
    free(text.data);
  }
  arena_free(a);
}

/* st_clone: a deep copy (statements and expressions), which prints the same and shares nothing that a
 * rewrite of the copy could change in the original (software_pipeline.c lowers one copy per form). */
static void test_clone(void)
{
  Arena *a = arena_new();
  int nv, iv, ab;
  Kernel *k = kernel_with_tensor(a, "c", &nv, &iv, &ab);
  Stmt *st = update_store(a, k, ab, iv, OP_ADD, 1);
  Stmt *guard = st_new(a, ST_IF, NO_LOC);
  guard->cond = ex_binary(a, OP_LT, ex_var(a, k, iv), ex_var(a, k, nv));
  guard->then_s = st;
  Stmt *loop = serial_loop(a, iv, ex_int(a, TY_I32, 8), guard);
  k->body = loop;
  StrBuf before = {0}, copy = {0}, after = {0};
  ir_print_kernel(&before, k);
  Stmt *c = st_clone(a, loop);
  CHECK(c != loop && c->then_s != guard && c->then_s->then_s != st);
  CHECK(c->extents[0] != loop->extents[0] && c->then_s->cond != guard->cond);
  CHECK(c->then_s->then_s->idx != st->idx && c->then_s->then_s->value != st->value);
  k->body = c;
  ir_print_kernel(&copy, k);
  CHECK(strcmp(before.data, copy.data) == 0);
  /* Rewriting the copy leaves the original as it was. */
  Stmt *cs = c->then_s->then_s;
  cs->idx[0] = ex_int(a, TY_I32, 3);
  cs->value->b->f = 5;
  c->extents[0]->i = 4;
  k->body = loop;
  ir_print_kernel(&after, k);
  CHECK(strcmp(before.data, after.data) == 0);
  CHECK(st_clone(a, NULL) == NULL);
  free(before.data);
  free(copy.data);
  free(after.data);
  arena_free(a);
}

static void test_diag_render(void)
{
  Arena *a = arena_new();
  const char *src = "line one\n\tlet x = @;\n";
  Diags d = {.arena = a, .filename = "f.tl", .src = src, .src_len = strlen(src)};
  error_at(&d, ((SrcLoc){2, 10}), "unexpected '%c'", '@');
  note_at(&d, NO_LOC, "a note without a place");
  StrBuf sb = {0};
  diag_render(&d, &sb);
  CHECK(
      strcmp(
          sb.data,
          "f.tl:2:10: error: unexpected '@'\n  \tlet x = @;\n  \t        ^\nf.tl: note: a note without a place\n") ==
      0);
  free(sb.data);
  CHECK(d.nerrors == 1);
  /* A long line is cut around the caret. */
  char *longsrc = malloc(100001);
  memset(longsrc, 'x', 100000);
  longsrc[100000] = 0;
  Diags d2 = {.arena = a, .filename = "g.tl", .src = longsrc, .src_len = 100000};
  error_at(&d2, ((SrcLoc){1, 50000}), "here");
  StrBuf sb2 = {0};
  diag_render(&d2, &sb2);
  CHECK(sb2.len < 600 && strstr(sb2.data, "...") && strstr(sb2.data, "^\n"));
  free(sb2.data);
  free(longsrc);
  arena_free(a);
}

/* The target table (ir/target.h): lookups, the default, the device rule, the
 * list in messages. */
static void test_targets(void)
{
  CHECK(target_find("sm_90a") && target_find("sm_90a")->sm == 90 && target_find("sm_90a")->arch_specific);
  CHECK(!target_find("sm_75") && !target_find("sm_100") && !target_find(NULL) && !target_find(""));
  CHECK(!strcmp(target_default()->name, "sm_90a"));
  CHECK(!strcmp(target_find("sm_89")->ptx_isa, "7.8") &&
        !strcmp(target_find("sm_89")->llvm_features, "+ptx78"));
  CHECK(target_find("sm_80")->shared_per_block == 163 * 1024 &&
        target_find("sm_86")->shared_per_block == 99 * 1024);
  for (int i = 0; i < ntargets; i++) {
    const Target *t = &targets[i];
    /* "+ptxNN" and "N.N" name one ISA */
    CHECK(strlen(t->llvm_features) == 6 && t->llvm_features[4] == t->ptx_isa[0] &&
          t->llvm_features[5] == t->ptx_isa[2]);
    CHECK(i == 0 || t->sm >= targets[i - 1].sm);
  }
  static const struct {
    int major, minor;
    const char *want;
  } devices[] = {{7, 5, NULL},     {8, 0, "sm_80"},  {8, 6, "sm_86"},  {8, 7, "sm_86"}, {8, 9, "sm_89"},
                 {9, 0, "sm_90a"}, {10, 0, "sm_90"}, {12, 1, "sm_90"}, {-1, 0, NULL},   {8, 10, NULL}};
  for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
    const Target *t = target_for_device(devices[i].major, devices[i].minor);
    CHECK(devices[i].want ? t && !strcmp(t->name, devices[i].want) : !t);
  }
  char buf[128];
  CHECK(!strcmp(target_list(buf, sizeof buf, " or "), "sm_80, sm_86, sm_89, sm_90 or sm_90a"));
  CHECK(!strcmp(target_list(buf, sizeof buf, ", "), "sm_80, sm_86, sm_89, sm_90, sm_90a"));
  CHECK(!strcmp(target_list(buf, 9, " or "), "sm_80, s"));
}

int main(void)
{
  test_targets();
  test_arena();
  test_types();
  test_fold();
  test_print_verify();
  test_cp_async_sizes();
  test_clone();
  test_diag_render();
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("ir: all checks passed\n");
  return 0;
}
