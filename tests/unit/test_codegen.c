/* test_codegen.c: thread-level kernels built by hand with the ir.h builders,
 * translated by codegen_module for sm_80 and sm_90a; checks on the PTX text
 * and, where /usr/local/cuda/bin/ptxas exists, that ptxas accepts it with no
 * local memory and no spills.  Also the shared-tile layouts that codegen's
 * tile_offset (cg.h) computes: properties of the ldmatrix swizzle. */
#include "cg.h" /* tile_offset; includes codegen.h */

#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PTXAS "/usr/local/cuda/bin/ptxas"

static int failures;

#define CHECK(c, ...)                                                       \
  do {                                                                      \
    if (!(c)) {                                                             \
      failures++;                                                           \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #c); \
      fprintf(stderr, __VA_ARGS__);                                         \
      fputc('\n', stderr);                                                  \
    }                                                                       \
  } while (0)

static const SrcLoc L = {1, 1};

/* ---------------------------------------------------------------- building kernels */

typedef struct {
  Arena *a;
  Kernel *k;
} KernelBuilder;

static KernelBuilder kernel_new(Arena *a, const char *name, int threads)
{
  Kernel *k = ARENA_NEW(a, Kernel);
  k->name = name;
  k->loc = (SrcLoc){3, 8};
  k->nthreads = threads;
  k->threads = ex_int(a, TY_I32, threads);
  return (KernelBuilder){a, k};
}

static int var(KernelBuilder *b, const char *name, VarKind kind, TypeKind t)
{
  return kernel_add_var(b->a, b->k, (Var){.name = name, .kind = kind, .type = t, .loc = L});
}

static int param_var(KernelBuilder *b, const char *name, VarKind kind, TypeKind t)
{
  int v = var(b, name, kind, t);
  b->k->vars[v].param_index = b->k->nparams;
  kernel_add_param(b->a, b->k, false, v);
  return v;
}

/* A global tensor parameter of rank 1 or 2: dims are size vars (>= 0) or -extent. */
static int tensor(KernelBuilder *b, const char *name, TypeKind t, int rank, int d0, int d1)
{
  Buffer buf = {.name = name, .scope = SCOPE_GLOBAL, .elem = t, .rank = rank, .loc = L};
  int dims[2] = {d0, d1};
  for (int i = 0; i < rank; i++)
    buf.shape[i] = dims[i] >= 0 ? ex_var(b->a, b->k, dims[i]) : ex_int(b->a, TY_I32, -dims[i]);
  buf.param_index = b->k->nparams;
  int h = kernel_add_buffer(b->a, b->k, buf);
  kernel_add_param(b->a, b->k, true, h);
  return h;
}

static int local_buf(KernelBuilder *b, const char *name, TypeKind t, int n)
{
  Buffer buf = {.name = name, .scope = SCOPE_LOCAL, .elem = t, .rank = 1, .local_size = n, .loc = L};
  buf.tile_shape[0] = n;
  return kernel_add_buffer(b->a, b->k, buf);
}

static int shared_buf(KernelBuilder *b, const char *name, TypeKind t, int n, int64_t offset)
{
  Buffer buf = {.name = name, .scope = SCOPE_SHARED, .elem = t, .rank = 1, .smem_offset = offset, .loc = L};
  buf.tile_shape[0] = n;
  buf.shape[0] = ex_int(b->a, TY_I32, n);
  return kernel_add_buffer(b->a, b->k, buf);
}

static Expr *V(KernelBuilder *b, int v) { return ex_var(b->a, b->k, v); }
static Expr *I(KernelBuilder *b, int64_t v) { return ex_int(b->a, TY_I32, v); }
static Expr *bin(KernelBuilder *b, OpKind op, Expr *x, Expr *y) { return ex_binary(b->a, op, x, y); }

static Expr **idx1(KernelBuilder *b, Expr *i)
{
  Expr **v = ARENA_ARRAY(b->a, Expr *, 1);
  v[0] = i;
  return v;
}

static Expr **idx2(KernelBuilder *b, Expr *i, Expr *j)
{
  Expr **v = ARENA_ARRAY(b->a, Expr *, 2);
  v[0] = i;
  v[1] = j;
  return v;
}

static Expr *load1(KernelBuilder *b, int buf, Expr *i) { return ex_load(b->a, b->k, buf, idx1(b, i), 1); }

static Stmt *seq(KernelBuilder *b, int n, ...)
{
  Stmt **body = ARENA_ARRAY(b->a, Stmt *, n);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    body[i] = va_arg(ap, Stmt *);
  va_end(ap);
  return st_seq(b->a, body, n);
}

static Stmt *let(KernelBuilder *b, int v, Expr *value)
{
  Stmt *s = st_new(b->a, ST_LET, L);
  s->var = v;
  s->value = value;
  return s;
}

static Stmt *assign(KernelBuilder *b, int v, Expr *value)
{
  Stmt *s = let(b, v, value);
  s->kind = ST_ASSIGN;
  return s;
}

static Stmt *store(KernelBuilder *b, int buf, Expr **idx, int n, Expr *value)
{
  Stmt *s = st_new(b->a, ST_STORE, L);
  s->buf = buf;
  s->idx = idx;
  s->nidx = n;
  s->value = value;
  return s;
}

static Stmt *store1(KernelBuilder *b, int buf, Expr *i, Expr *value)
{
  return store(b, buf, idx1(b, i), 1, value);
}

static Stmt *atomic1(KernelBuilder *b, int buf, Expr *i, Expr *value)
{
  Stmt *s = store1(b, buf, i, value);
  s->kind = ST_ATOMIC;
  return s;
}

static Stmt *vcopy(KernelBuilder *b, int dst, Expr *di, int src, Expr *si, int lanes)
{
  Stmt *s = st_new(b->a, ST_VCOPY, L);
  s->buf = dst;
  s->idx = idx1(b, di);
  s->nidx = 1;
  s->src_buf = src;
  s->src_idx = idx1(b, si);
  s->nsrc_idx = 1;
  s->lanes = lanes;
  return s;
}

static Stmt *if_(KernelBuilder *b, Expr *c, Stmt *then_s, Stmt *else_s)
{
  Stmt *s = st_new(b->a, ST_IF, L);
  s->cond = c;
  s->then_s = then_s;
  s->else_s = else_s;
  return s;
}

static Stmt *for_(KernelBuilder *b, ForKind kind, int v, Expr *extent, Stmt *body)
{
  Stmt *s = st_new(b->a, ST_FOR, L);
  s->for_kind = kind;
  s->vars[0] = v;
  s->extents[0] = extent;
  s->nvars = 1;
  s->then_s = body;
  return s;
}

static Stmt *barrier(KernelBuilder *b) { return st_new(b->a, ST_BARRIER, L); }

static void verify(KernelBuilder *b)
{
  const char *err = ir_verify(b->a, b->k, VERIFY_THREAD);
  CHECK(err == NULL, "kernel %s: %s", b->k->name, err);
}

/* ---------------------------------------------------------------- the kernels */

/* C[i] = A[i] + B[i], 4 elements per thread: a vectorized body when the 4 are
 * in bounds, a scalar tail otherwise.
 *
 *   let base = (blockIdx.x * 256 + threadIdx.x) * 4
 *   if base + 4 <= N && aligned16(&A[base]) && aligned16(&B[base]) && aligned16(&C[base]) {
 *     a <- A[base] x4; b <- B[base] x4; c[i] = a[i] + b[i] (unrolled); C[base] <- c x4 }
 *   else { for i in serial(4) { if base + i < N { C[base+i] = A[base+i] + B[base+i] } } } */
static Kernel *build_vector_add(Arena *a)
{
  KernelBuilder b = kernel_new(a, "vector_add", 256);
  int N = var(&b, "N", VAR_SIZE, TY_I32);
  int A = tensor(&b, "A", TY_F32, 1, N, 0);
  int Bt = tensor(&b, "B", TY_F32, 1, N, 0);
  int C = tensor(&b, "C", TY_F32, 1, N, 0);
  b.k->vars[N].param_index = b.k->nparams;
  kernel_add_param(a, b.k, false, N);
  int bx = var(&b, "bx", VAR_BLOCK_IDX, TY_I32);
  int tx = var(&b, "tx", VAR_THREAD_IDX, TY_I32);
  int base = var(&b, "base", VAR_LET, TY_I32);
  int i = var(&b, "i", VAR_LOOP, TY_I32);
  int j = var(&b, "j", VAR_LOOP, TY_I32);
  int la = local_buf(&b, "a_loc", TY_F32, 4), lb = local_buf(&b, "b_loc", TY_F32, 4);
  int lc = local_buf(&b, "c_loc", TY_F32, 4);

  Expr *gid = bin(&b, OP_ADD, bin(&b, OP_MUL, V(&b, bx), I(&b, 256)), V(&b, tx));
  Stmt *fast = seq(
      &b, 4, vcopy(&b, la, I(&b, 0), A, V(&b, base), 4), vcopy(&b, lb, I(&b, 0), Bt, V(&b, base), 4),
      for_(&b, FOR_UNROLLED, i, I(&b, 4),
           store1(&b, lc, V(&b, i), bin(&b, OP_ADD, load1(&b, la, V(&b, i)), load1(&b, lb, V(&b, i))))),
      vcopy(&b, C, V(&b, base), lc, I(&b, 0), 4));
  Expr *e = bin(&b, OP_ADD, V(&b, base), V(&b, j));
  Stmt *tail = for_(&b, FOR_SERIAL, j, I(&b, 4),
                    if_(&b, bin(&b, OP_LT, e, V(&b, N)),
                        store1(&b, C, e, bin(&b, OP_ADD, load1(&b, A, e), load1(&b, Bt, e))), NULL));
  Expr *vec_ok = bin(&b, OP_LE, bin(&b, OP_ADD, V(&b, base), I(&b, 4)), V(&b, N));
  int tensors[3] = {A, Bt, C};
  for (int t = 0; t < 3; t++)
    vec_ok = bin(&b, OP_LAND, vec_ok, ex_aligned(a, tensors[t], idx1(&b, V(&b, base)), 1, 16));
  b.k->body = seq(&b, 2, let(&b, base, bin(&b, OP_MUL, gid, I(&b, 4))), if_(&b, vec_ok, fast, tail));
  b.k->grid[0] = bin(&b, OP_CEILDIV, V(&b, N), I(&b, 1024));
  b.k->grid_rank = 1;
  verify(&b);
  return b.k;
}

/* Y[f, i] = f(X[i]) for every float intrinsic, in f32; the same in f16 and
 * bf16 into H and G, and the f64 subset into D. */
static Kernel *build_math(Arena *a)
{
  KernelBuilder b = kernel_new(a, "math", 128);
  b.k->fast_math = true; /* as the frontend sets it */
  int N = var(&b, "N", VAR_SIZE, TY_I32);
  int X = tensor(&b, "X", TY_F32, 1, N, 0);
  int Y = tensor(&b, "Y", TY_F32, 2, -FN_COUNT, N);
  int H = tensor(&b, "H", TY_F16, 2, -FN_COUNT, N);
  int G = tensor(&b, "G", TY_BF16, 2, -FN_COUNT, N);
  int D = tensor(&b, "D", TY_F64, 2, -FN_COUNT, N);
  int Z = tensor(&b, "Z", TY_I32, 1, N, 0);
  b.k->vars[N].param_index = b.k->nparams;
  kernel_add_param(a, b.k, false, N);
  int tx = var(&b, "tx", VAR_THREAD_IDX, TY_I32);
  int x = var(&b, "x", VAR_LET, TY_F32);

  StmtList body = {0};
  stlist_push(a, &body, let(&b, x, load1(&b, X, V(&b, tx))));
  static const TypeKind types[] = {TY_F32, TY_F16, TY_BF16, TY_F64};
  int outs[] = {Y, H, G, D};
  for (int ti = 0; ti < 4; ti++) {
    TypeKind t = types[ti];
    for (int fn = 0; fn < FN_COUNT; fn++) {
      if (t == TY_F64 && fn != FN_SQRT && fn != FN_ABS && fn != FN_FLOOR && fn != FN_CEIL && fn != FN_FMA)
        continue;
      if (fn == FN_SHFL_BFLY && t != TY_F32)
        continue; /* shuffles move 32-bit values; the lane offset is an i32 */
      if (fn == FN_NEXT_POW2)
        continue; /* sema folds it or evaluates it at launch: codegen never sees it */
      int n = intrinsic_nargs((IntrinsicKind)fn);
      Expr **args = ARENA_ARRAY(a, Expr *, n);
      for (int k = 0; k < n; k++)
        args[k] = ex_cast(a, t, bin(&b, OP_ADD, V(&b, x), ex_float(a, TY_F32, 0.25 * k)));
      if (fn == FN_SHFL_BFLY)
        args[1] = I(&b, 16);
      Expr *call = ex_call(a, (IntrinsicKind)fn, t, args, n);
      stlist_push(a, &body, store(&b, outs[ti], idx2(&b, I(&b, fn), V(&b, tx)), 2, call));
    }
  }
  Expr *zi = ex_cast(a, TY_I32, V(&b, x));
  Expr *iabs = ex_call(a, FN_ABS, TY_I32, idx1(&b, zi), 1);
  stlist_push(a, &body, store1(&b, Z, V(&b, tx), iabs));
  b.k->body = stlist_seq(a, &body, L);
  b.k->grid[0] = V(&b, N);
  b.k->grid_rank = 1;
  verify(&b);
  return b.k;
}

/* Every cast between every pair of element types: OUT_t[i] = (t) IN_s[i]. */
static Kernel *build_casts(Arena *a)
{
  KernelBuilder b = kernel_new(a, "casts", 64);
  int N = var(&b, "N", VAR_SIZE, TY_I32);
  int in[TY_COUNT], out[TY_COUNT];
  for (int t = TY_BOOL; t < TY_COUNT; t++) {
    in[t] = tensor(&b, arena_printf(a, "in_%s", type_name((TypeKind)t)), (TypeKind)t, 1, N, 0);
    out[t] = tensor(&b, arena_printf(a, "out_%s", type_name((TypeKind)t)), (TypeKind)t, 2, -TY_COUNT, N);
  }
  b.k->vars[N].param_index = b.k->nparams;
  kernel_add_param(a, b.k, false, N);
  int tx = var(&b, "tx", VAR_THREAD_IDX, TY_I32);
  StmtList body = {0};
  for (int s = TY_BOOL; s < TY_COUNT; s++)
    for (int t = TY_BOOL; t < TY_COUNT; t++) {
      if (type_is_fp8((TypeKind)s) || type_is_fp8((TypeKind)t))
        continue; /* sm_90's cvt (this kernel is for sm_80 too): tests/golden/gemm_fp8.tl's quantize */
      Expr *v = ex_cast(a, (TypeKind)t, load1(&b, in[s], V(&b, tx)));
      stlist_push(a, &body, store(&b, out[t], idx2(&b, I(&b, s), V(&b, tx)), 2, v));
    }
  b.k->body = stlist_seq(a, &body, L);
  verify(&b);
  return b.k;
}

/* Every operator on every type it applies to: OUT_t[op, i] = IN_t[i] op IN_t[i+1]. */
static Kernel *build_operators(Arena *a)
{
  KernelBuilder b = kernel_new(a, "operators", 64);
  int N = var(&b, "N", VAR_SIZE, TY_I32);
  int in[TY_COUNT], out[TY_COUNT];
  for (int t = TY_BOOL; t < TY_COUNT; t++) {
    in[t] = tensor(&b, arena_printf(a, "in_%s", type_name((TypeKind)t)), (TypeKind)t, 1, N, 0);
    out[t] = tensor(&b, arena_printf(a, "out_%s", type_name((TypeKind)t)), (TypeKind)t, 2, -OP_COUNT, N);
  }
  int cmp = tensor(&b, "cmp", TY_BOOL, 2, -(OP_COUNT * TY_COUNT), N);
  b.k->vars[N].param_index = b.k->nparams;
  kernel_add_param(a, b.k, false, N);
  int tx = var(&b, "tx", VAR_THREAD_IDX, TY_I32);
  StmtList body = {0};
  for (int t = TY_BOOL; t < TY_COUNT; t++) {
    if (type_is_fp8((TypeKind)t))
      continue; /* no operator takes 8-bit floats (sema) */
    bool fl = type_is_float((TypeKind)t), bo = t == TY_BOOL;
    Expr *x = load1(&b, in[t], V(&b, tx));
    Expr *y = load1(&b, in[t], bin(&b, OP_ADD, V(&b, tx), I(&b, 1)));
    for (int op = 0; op < OP_COUNT; op++) {
      bool bitwise = op == OP_SHL || op == OP_SHR || op == OP_BAND || op == OP_BOR || op == OP_BXOR ||
                     op == OP_BNOT;
      bool logical = op == OP_LAND || op == OP_LOR || op == OP_NOT;
      if ((fl && bitwise) || (logical && !bo) ||
          (bo && (op == OP_SHL || op == OP_SHR || op == OP_NEG || op == OP_BNOT)))
        continue;
      Expr *r = op >= OP_NEG ? ex_unary(a, (OpKind)op, x) : bin(&b, (OpKind)op, x, y);
      Expr **ix = op_is_comparison((OpKind)op) ? idx2(&b, I(&b, op * TY_COUNT + t), V(&b, tx))
                                               : idx2(&b, I(&b, op), V(&b, tx));
      stlist_push(a, &body, store(&b, op_is_comparison((OpKind)op) ? cmp : out[t], ix, 2, r));
    }
  }
  b.k->body = stlist_seq(a, &body, L);
  verify(&b);
  return b.k;
}

/* Shared memory, a barrier, converting vector copies, a serial loop with a
 * mutable accumulator, a bool scalar parameter, atomics and a select:
 *
 *   S[tx] = A[bx*128 + tx]; barrier
 *   var acc: f32 = 0; for j in serial(n) { acc = acc + S[(tx + j) % 128] }
 *   h <- S[tx & ~3] x4 as bf16; flags <- F[tx & ~7] x8 as f32
 *   if flag { atomic out[0] += acc } else { atomic cnt[bx] += 1 }
 *   R[tx] = flag ? h[2] : flags[5]                                             */
static Kernel *build_shared(Arena *a, const char *name, int64_t smem_bytes)
{
  KernelBuilder b = kernel_new(a, name, 128);
  int N = var(&b, "N", VAR_SIZE, TY_I32);
  int A = tensor(&b, "A", TY_F32, 1, N, 0);
  int F = tensor(&b, "F", TY_BOOL, 1, N, 0);
  int R = tensor(&b, "R", TY_BF16, 1, N, 0);
  int out = tensor(&b, "out", TY_F32, 1, -1, 0);
  int cnt = tensor(&b, "cnt", TY_U32, 1, -1024, 0);
  int flag = param_var(&b, "flag", VAR_SCALAR, TY_BOOL);
  int n = param_var(&b, "n", VAR_SCALAR, TY_I32);
  b.k->vars[N].param_index = b.k->nparams;
  kernel_add_param(a, b.k, false, N);
  int bx = var(&b, "bx", VAR_BLOCK_IDX, TY_I32);
  int tx = var(&b, "tx", VAR_THREAD_IDX, TY_I32);
  int j = var(&b, "j", VAR_LOOP, TY_I32);
  int acc = var(&b, "acc", VAR_MUT, TY_F32);
  int S = shared_buf(&b, "S", TY_F32, 128, smem_bytes - 512);
  int h = local_buf(&b, "h", TY_BF16, 4);
  int fl = local_buf(&b, "flags", TY_F32, 8);

  Expr *g = bin(&b, OP_ADD, bin(&b, OP_MUL, V(&b, bx), I(&b, 128)), V(&b, tx));
  Expr *rot = bin(&b, OP_MOD, bin(&b, OP_ADD, V(&b, tx), V(&b, j)), I(&b, 128));
  Expr *tx4 = bin(&b, OP_BAND, V(&b, tx), ex_unary(a, OP_BNOT, I(&b, 3)));
  Expr *tx8 = bin(&b, OP_BAND, V(&b, tx), ex_unary(a, OP_BNOT, I(&b, 7)));
  Expr *pick = ex_select(a, V(&b, flag), load1(&b, h, I(&b, 2)),
                         ex_cast(a, TY_BF16, load1(&b, fl, I(&b, 5))));
  b.k->body = seq(
      &b, 8, store1(&b, S, V(&b, tx), load1(&b, A, g)), barrier(&b), assign(&b, acc, ex_float(a, TY_F32, 0)),
      for_(&b, FOR_SERIAL, j, V(&b, n), assign(&b, acc, bin(&b, OP_ADD, V(&b, acc), load1(&b, S, rot)))),
      vcopy(&b, h, I(&b, 0), S, tx4, 4), vcopy(&b, fl, I(&b, 0), F, tx8, 8),
      if_(&b, V(&b, flag), atomic1(&b, out, I(&b, 0), V(&b, acc)),
          atomic1(&b, cnt, V(&b, bx), ex_int(a, TY_U32, 1))),
      store1(&b, R, g, pick));
  b.k->smem_bytes = smem_bytes;
  b.k->grid[0] = bin(&b, OP_CEILDIV, V(&b, N), I(&b, 128));
  b.k->grid[1] = bin(&b, OP_MAX, V(&b, n), ex_cast(a, TY_I32, I(&b, 1)));
  b.k->grid_rank = 2;
  verify(&b);
  return b.k;
}

static Module *module_of(Arena *a, int n, ...)
{
  Module *m = ARENA_NEW(a, Module);
  m->arena = a;
  m->kernels = ARENA_ARRAY(a, Kernel *, n);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    m->kernels[m->nkernels++] = va_arg(ap, Kernel *);
  va_end(ap);
  return m;
}

/* ---------------------------------------------------------------- checking PTX */

static Diags diags_new(Arena *a) { return (Diags){.arena = a, .filename = "test.tl"}; }

static char *compile(const Module *m, const char *arch, int opt, char **ir)
{
  Arena *a = arena_new();
  Diags d = diags_new(a);
  CodegenOptions o = {.target = target_find(arch), .opt_level = opt};
  char *ptx = NULL;
  bool ok = codegen_module(m, &o, &d, ir, &ptx);
  if (!ok) {
    StrBuf sb = {0};
    diag_render(&d, &sb);
    fprintf(stderr, "%s", sb.data ? sb.data : "(no diagnostics)\n");
    free(sb.data);
  }
  CHECK(ok && ptx, "codegen_module failed for %s -O%d", arch, opt);
  CHECK(ok == (d.nerrors == 0), "errors reported on success or none on failure");
  arena_free(a);
  return ptx;
}

/* TEST_CODEGEN_DUMP=1 prints every PTX produced, to look at by hand. */
static void dump(const char *what, const char *arch, const char *text)
{
  if (getenv("TEST_CODEGEN_DUMP"))
    fprintf(stderr, "==== %s %s\n%s\n", what, arch, text);
}

static bool contains(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

/* Runs ptxas -v on the text; returns its output (malloc'd) or NULL if ptxas is absent. */
static char *ptxas(const char *ptx, const char *arch, int *status)
{
  if (access(PTXAS, X_OK) != 0)
    return NULL;
  char path[] = "/tmp/test_codegen_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return NULL;
  FILE *f = fdopen(fd, "w");
  fputs(ptx, f);
  fclose(f);
  char cmd[256];
  snprintf(cmd, sizeof cmd, PTXAS " -arch=%s -v %s -o /dev/null 2>&1", arch, path);
  FILE *p = popen(cmd, "r");
  StrBuf out = {0};
  char line[512];
  while (p && fgets(line, sizeof line, p))
    sb_puts(&out, line);
  *status = p ? pclose(p) : -1;
  unlink(path);
  return out.data ? sb_take(&out) : calloc(1, 1);
}

/* Every "N bytes stack frame, N bytes spill stores, N bytes spill loads" is 0. */
static bool no_local_memory(const char *report)
{
  static const char *const what[] = {" bytes stack frame", " bytes spill stores", " bytes spill loads"};
  for (size_t w = 0; w < 3; w++)
    for (const char *p = strstr(report, what[w]); p; p = strstr(p + 1, what[w])) {
      const char *q = p;
      while (q > report && q[-1] >= '0' && q[-1] <= '9')
        q--;
      if (q == p || atol(q) != 0)
        return false;
    }
  return true;
}

static void check_ptxas(const char *name, const char *ptx, const char *arch, bool want_no_local)
{
  int status = 0;
  char *report = ptxas(ptx, arch, &status);
  if (!report)
    return;
  CHECK(status == 0, "ptxas rejected %s for %s:\n%s", name, arch, report);
  if (want_no_local)
    CHECK(no_local_memory(report), "%s uses local memory on %s:\n%s", name, arch, report);
  free(report);
}

static const char *const archs[] = {"sm_80", "sm_90a"};

static const char vector_add_meta[] = "// tilec-meta v1\n"
                                      "// tilec-meta kernel vector_add threads=256 smem=0 params=4\n"
                                      "// tilec-meta param 0 tensor A f32 rank=1 dims=N\n"
                                      "// tilec-meta param 1 tensor B f32 rank=1 dims=N\n"
                                      "// tilec-meta param 2 tensor C f32 rank=1 dims=N\n"
                                      "// tilec-meta param 3 size N i32\n"
                                      "// tilec-meta grid 0 N 1024 ceildiv\n"
                                      "// tilec-meta grid 1 1\n"
                                      "// tilec-meta grid 2 1\n"
                                      "// tilec-meta end\n";

static void test_vector_add(void)
{
  Arena *a = arena_new();
  Module *m = module_of(a, 1, build_vector_add(a));
  for (int i = 0; i < 2; i++)
    for (int opt = 0; opt <= 3; opt += 3) {
      char *ir = NULL;
      char *ptx = compile(m, archs[i], opt, &ir);
      if (!ptx)
        continue;
      dump("vector_add", archs[i], ir);
      dump("vector_add", archs[i], ptx);
      CHECK(strncmp(ptx, vector_add_meta, sizeof vector_add_meta - 1) == 0, "meta block:\n%.600s", ptx);
      CHECK(contains(ptx, ".entry vector_add("), "no entry");
      CHECK(contains(ptx, ".maxntid 256, 1, 1"), "no .maxntid");
      CHECK(contains(ptx, "ld.global.v4.f32"), "no vector load:\n%s", ptx);
      CHECK(contains(ptx, "st.global.v4.f32"), "no vector store");
      CHECK(contains(ptx, "add.rn.f32"), "f32 add not IEEE");
      CHECK(!contains(ptx, ".local"), "local memory at -O%d:\n%s", opt, ptx);
      CHECK(contains(ptx, i ? ".target sm_90a" : ".target sm_80"), "target");
      CHECK(contains(ptx, i ? ".version 8.0" : ".version 7.0"), "PTX version");
      CHECK(contains(ir, "define ptx_kernel void @vector_add(ptr"), "IR:\n%s", ir);
      CHECK(contains(ir, "!\"maxntidx\", i32 256"), "no maxntidx annotation");
      check_ptxas("vector_add", ptx, archs[i], true);
      free(ptx);
      free(ir);
    }
  /* Either output may be skipped. */
  Diags d = diags_new(a);
  CodegenOptions o = {.target = target_find("sm_90"), .opt_level = 2};
  char *ir = NULL;
  CHECK(codegen_module(m, &o, &d, &ir, NULL) && contains(ir, "@vector_add"), "IR only");
  free(ir);
  CHECK(codegen_module(m, &o, &d, NULL, NULL), "no outputs");
  arena_free(a);
}

/* At -O3 the PTX must contain each needle; at -O0 it need only assemble. */
static void test_module(const char *what, Module *m, const char **needles, int n)
{
  for (int i = 0; i < 2; i++)
    for (int opt = 0; opt <= 3; opt += 3) {
      char *ptx = compile(m, archs[i], opt, NULL);
      if (!ptx)
        continue;
      dump(what, archs[i], ptx);
      for (int j = 0; j < n && opt == 3; j++)
        CHECK(contains(ptx, needles[j]), "%s on %s: no '%s' in the PTX", what, archs[i], needles[j]);
      CHECK(!contains(ptx, ".local"), "%s uses local memory on %s at -O%d", what, archs[i], opt);
      check_ptxas(what, ptx, archs[i], true);
      free(ptx);
    }
}

static void test_math(void)
{
  Arena *a = arena_new();
  Module *m = module_of(a, 1, build_math(a));
  const char *needles[] = {
      "ex2.approx.ftz.f32", "lg2.approx.f32", "sqrt.rn.f32",     "rsqrt.approx.f32", "tanh.approx.f32",
      "sin.approx.f32",     "cos.approx.f32", "cvt.rmi.f32.f32", "cvt.rpi.f32.f32",  "fma.rn.f32",
      "sqrt.rn.f64",        "fma.rn.f64",     "abs.f32",         "cvt.rmi.f64.f64",  "abs.s32",
      "rcp.rn.f32"};
  test_module("math", m, needles, (int)(sizeof needles / sizeof needles[0]));
  arena_free(a);
}

static void test_casts_and_operators(void)
{
  Arena *a = arena_new();
  Module *m = module_of(a, 2, build_casts(a), build_operators(a));
  const char *needles[] = {".entry casts(", ".entry operators(", "cvt.rn.bf16.f32", "cvt.rzi.s32.f32",
                           "div.s32",       "div.u32",           "rem.s64",         "shr.s16",
                           "shr.u16",       "max.f32",           "min.u64",         "setp.neu.f32"};
  test_module("casts+operators", m, needles, (int)(sizeof needles / sizeof needles[0]));
  arena_free(a);
}

static void test_shared(void)
{
  Arena *a = arena_new();
  Module *m = module_of(a, 2, build_shared(a, "staged", 1024), build_shared(a, "staged_big", 64 * 1024));
  const char *needles[] = {".shared .align 128 .b8 staged$smem[1024]",
                           ".extern .shared .align 128 .b8 staged_big$smem[]",
                           "st.shared.f32",
                           "ld.shared.v4.f32",
                           "bar.sync",
                           "atom.global.add.f32",
                           "atom.global.add.u32",
                           "// tilec-meta kernel staged threads=128 smem=0 params=8\n",
                           "// tilec-meta kernel staged_big threads=128 smem=65536 params=8\n",
                           "// tilec-meta param 1 tensor F bool rank=1 dims=N\n",
                           "// tilec-meta param 3 tensor out f32 rank=1 dims=1\n",
                           "// tilec-meta param 5 scalar flag bool\n",
                           "// tilec-meta param 7 size N i32\n",
                           "// tilec-meta grid 1 n 1 max\n"};
  test_module("shared", m, needles, (int)(sizeof needles / sizeof needles[0]));
  arena_free(a);
}

/* ---------------------------------------------------------------- wgmma */

/* The S-byte swizzle layouts of ir.h (SWIZZLE_128B, _64B, _32B), bytes from
 * the tile's start: [R, C] 16-bit elements as C / (S / 2) panels of [R, S / 2]. */
static int64_t sw_byte(int64_t S, int64_t R, int64_t r, int64_t c)
{
  int64_t P = S / 2, byte = (c / P) * R * S + r * S + (c % P) * 2;
  return byte ^ (((byte >> 7) & (S / 16 - 1)) << 4);
}

static int64_t sw128_byte(int64_t R, int64_t r, int64_t c) { return sw_byte(128, R, r, c); }

static int tile_128b(KernelBuilder *b, const char *name, TypeKind t, int stages, int rows, int cols,
                     int64_t offset)
{
  Buffer buf = {.name = name,
                .scope = SCOPE_SHARED,
                .elem = t,
                .smem_offset = offset,
                .loc = L,
                .swizzle = SWIZZLE_128B,
                .stages = stages};
  int dims[3] = {stages, rows, cols}, first = stages ? 0 : 1;
  for (int d = first; d < 3; d++) {
    buf.tile_shape[buf.rank] = dims[d];
    buf.shape[buf.rank++] = ex_int(b->a, TY_I32, dims[d]);
  }
  return kernel_add_buffer(b->a, b->k, buf);
}

/* Stores to the first element of every 16-byte chunk of a staged [2, 16, 128]
 * tile, each value the chunk's number; then one warpgroup wgmma m64n64k16 on
 * [64, 64] tiles: A K-major from (0, 16), B N-major from (16, 0). */
static Kernel *build_wgmma(Arena *a)
{
  KernelBuilder b = kernel_new(a, "wg", 128);
  int out = tensor(&b, "out", TY_F32, 1, -128, 0);
  int tx = var(&b, "tx", VAR_THREAD_IDX, TY_I32);
  int T = tile_128b(&b, "T", TY_U16, 2, 16, 128, 0);
  int As = tile_128b(&b, "As", TY_F16, 0, 64, 64, 8192);
  int Bs = tile_128b(&b, "Bs", TY_F16, 0, 64, 64, 16384);
  int acc = local_buf(&b, "acc", TY_F32, 32);
  StmtList l = {0};
  for (int st = 0; st < 2; st++)
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 128; c += 8) {
        Expr **idx = ARENA_ARRAY(a, Expr *, 3);
        idx[0] = I(&b, st);
        idx[1] = I(&b, r);
        idx[2] = I(&b, c);
        stlist_push(a, &l, store(&b, T, idx, 3, ex_int(a, TY_U16, st * 256 + r * 16 + c / 8)));
      }
  stlist_push(a, &l, st_new(a, ST_FENCE_PROXY_ASYNC, L));
  stlist_push(a, &l, barrier(&b));
  for (int kind = 0; kind < 4; kind++) {
    Stmt *s = st_new(a,
                     kind == 0   ? ST_WGMMA_FENCE
                     : kind == 1 ? ST_WGMMA
                     : kind == 2 ? ST_WGMMA_COMMIT
                                 : ST_WGMMA_WAIT,
                     L);
    s->c = acc;
    s->acc_regs = 32;
    if (kind == 1) {
      s->a = As;
      s->b = Bs;
      s->elem = TY_F16;
      s->b_mn_major = true;
      s->a_start = idx2(&b, I(&b, 0), I(&b, 16));
      s->na_start = 2;
      s->b_start = idx2(&b, I(&b, 16), I(&b, 0));
      s->nb_start = 2;
    }
    stlist_push(a, &l, s);
  }
  stlist_push(a, &l, store1(&b, out, V(&b, tx), load1(&b, acc, I(&b, 31))));
  b.k->body = stlist_seq(a, &l, L);
  b.k->smem_bytes = 24576;
  b.k->grid[0] = I(&b, 1);
  b.k->grid_rank = 1;
  verify(&b);
  return b.k;
}

/* What wgmma reads through codegen's descriptors, modelled on the PTX ISA's
 * canonical swizzled layouts ("Shared Memory Matrix Layout"; in 16-byte units
 * T, with span S = 128, 64, 32 bytes = 8T, 4T, 2T: K-major
 * ((8,m),(T,2k)):((S,SBO),(1,T)), MN-major ((T,S/16,m),(8,k)):((1,T,LBO),(S,SBO)),
 * then the swizzle of the chunk bits 4 up by the bits from 7 up), against what
 * the tile layout stores there, for every element of every wgmma of a few
 * tiles: A [M, K] and B^T [N, K] K-major, A^T [K, M] and B [K, N] MN-major.
 * Rows of the start elements are multiples of 8, where the swizzle is the
 * identity, so the start is the element's own address; the descriptor's mode
 * bits name the span. */
static int canonical_mismatches(int64_t rows, int64_t cols, bool mn_major, int64_t mn0, int64_t k0,
                                int64_t mn_extent)
{
  SwizzleKind sw = cols % 64 == 0 ? SWIZZLE_128B : cols % 32 == 0 ? SWIZZLE_64B : SWIZZLE_32B;
  Buffer buf = {.scope = SCOPE_SHARED, .elem = TY_F16, .rank = 2, .swizzle = sw, .tile_shape = {rows, cols}};
  uint32_t lbo, sbo;
  smem_wgmma_strides(&buf, mn_major, &lbo, &sbo);
  int mode = (int)(smem_wgmma_desc(0, lbo, sbo, swizzle_span(sw)) >> 62);
  int64_t S = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : -1, P = S / 2;
  const int64_t base = 7 * 1024;
  int bad = S != swizzle_span(sw);
  int64_t start = base + (mn_major ? sw_byte(S, rows, k0, mn0) : sw_byte(S, rows, mn0, k0));
  for (int64_t mn = 0; mn < mn_extent; mn++)
    for (int64_t k = 0; k < 16; k++) {
      int64_t hw = mn_major ? start + (mn % P) * 2 + (mn / P) * lbo + (k % 8) * S + (k / 8) * sbo
                            : start + (mn % 8) * S + (mn / 8) * sbo + (k / 8) * 16 + (k % 8) * 2;
      hw ^= ((hw >> 7) & (S / 16 - 1)) << 4;
      int64_t want = base +
                     (mn_major ? sw_byte(S, rows, k0 + k, mn0 + mn) : sw_byte(S, rows, mn0 + mn, k0 + k));
      bad += hw != want;
    }
  return bad;
}

static void test_wgmma_canonical(void)
{
  /* M, N, K: N and K of 32 and 16 take the 64- and 32-byte swizzles */
  static const int64_t shapes[][3] = {{64, 64, 64},  {128, 128, 64}, {128, 256, 64}, {256, 128, 128},
                                      {64, 192, 64}, {64, 32, 64},   {64, 16, 128},  {64, 96, 32},
                                      {128, 48, 16}, {64, 32, 32}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int64_t M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
    for (int64_t kk = 0; kk < K / 16; kk++) {
      for (int64_t g = 0; g < M / 64; g++) {
        CHECK(!canonical_mismatches(M, K, false, 64 * g, 16 * kk, 64), "A %ldx%ld", (long)M, (long)K);
        CHECK(!canonical_mismatches(K, M, true, 64 * g, 16 * kk, 64), "A^T %ldx%ld", (long)K, (long)M);
      }
      CHECK(!canonical_mismatches(K, N, true, 0, 16 * kk, N), "B %ldx%ld", (long)K, (long)N);
      CHECK(!canonical_mismatches(N, K, false, 0, 16 * kk, N), "B^T %ldx%ld", (long)N, (long)K);
    }
  }
}

static void test_wgmma(void)
{
  test_wgmma_canonical();
  /* Descriptor fields (PTX ISA, wgmma "Matrix Descriptor Format"). */
  CHECK(smem_wgmma_desc(0x2420, 16, 1024, 128) == (0x242ull | 1ull << 16 | 64ull << 32 | 1ull << 62), "desc");
  CHECK(smem_wgmma_desc(0x2420, 2048, 512, 64) == (0x242ull | 128ull << 16 | 32ull << 32 | 2ull << 62),
        "desc, 64-byte swizzle");
  CHECK(smem_wgmma_desc(0x2420, 16, 256, 32) == (0x242ull | 1ull << 16 | 16ull << 32 | 3ull << 62),
        "desc, 32-byte swizzle");
  CHECK(smem_wgmma_desc(0x40000 + 0x400, 8192, 1024, 128) ==
            (0x40ull | 512ull << 16 | 64ull << 32 | 1ull << 62),
        "desc: the start address is taken modulo 2^18");
  Arena *a = arena_new();
  Module *m = module_of(a, 1, build_wgmma(a));
  char *ptx = compile(m, "sm_90a", 3, NULL);
  if (ptx) {
    dump("wgmma", "sm_90a", ptx);
    CHECK(contains(ptx, ".shared .align 1024 .b8 wg$smem[24576]"), "smem alignment");
    CHECK(contains(ptx, "wgmma.fence.sync.aligned;"), "fence");
    CHECK(contains(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"), "mma_async");
    CHECK(contains(ptx, "p, 1, 1, 0, 1;"), "transposes");
    CHECK(contains(ptx, "wgmma.commit_group.sync.aligned;") &&
              contains(ptx, "wgmma.wait_group.sync.aligned 0;"),
          "commit, wait");
    CHECK(contains(ptx, "fence.proxy.async.shared::cta;"), "proxy fence");
    char bits[32];
    snprintf(bits, sizeof bits, "%llu;", (unsigned long long)smem_wgmma_desc(0, 8192, 1024, 128));
    CHECK(contains(ptx, bits), "B's descriptor bits %s (LBO 8192, SBO 1024, 128-byte swizzle)", bits);
    /* Every chunk's store lands where the layout says:
     *   mov.u16 %rsN, VALUE;  st.shared.u16 [wg$smem+OFF], %rsN; */
    static long value_of[4096];
    int found = 0;
    for (const char *p = ptx; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
      long reg, val, off = 0;
      const char *q;
      if (sscanf(p, " mov.u16 %%rs%ld, %ld;", &reg, &val) == 2 && reg >= 0 && reg < 4096)
        value_of[reg] = val;
      if (strncmp(p, "\tst.shared.u16", 14) || !(q = strstr(p, "[wg$smem")) || q - p > 24)
        continue;
      q += 8;
      if (*q == '+')
        off = strtol(q + 1, (char **)&q, 10);
      if (sscanf(q, "], %%rs%ld;", &reg) != 1 || reg < 0 || reg >= 4096)
        continue;
      val = value_of[reg];
      int64_t st = val / 256, r = val / 16 % 16, c = val % 16 * 8;
      CHECK(off == st * 16 * 128 * 2 + sw128_byte(16, r, c), "chunk %ld at byte %ld", val, off);
      found++;
    }
    CHECK(found == 512, "%d of the 512 chunk stores found in the PTX", found);
    check_ptxas("wgmma", ptx, "sm_90a", true);
    free(ptx);
  }
  arena_free(a);
}

/* ---------------------------------------------------------------- swizzled lines */

/* The element offset codegen's tile_offset gives each element of a shared tile
 * (indices in row-major order, the stage first), folded to a constant by the
 * builder; NULL if one is not a constant. */
static int64_t *tile_offsets(const Buffer *buf)
{
  LLVMContextRef ctx = LLVMContextCreate();
  Cg cg = {.ctx = ctx, .b = LLVMCreateBuilderInContext(ctx)};
  cg_types_init(&cg.t, ctx);
  Arena *a = arena_new();
  int64_t n = buffer_elems(buf);
  int64_t *off = malloc((size_t)n * sizeof *off);
  for (int64_t e = 0; e < n && off; e++) {
    Expr *idx[TL_MAX_RANK];
    int64_t rest = e;
    for (int d = buf->rank - 1; d >= 0; d--) {
      idx[d] = ex_int(a, TY_I32, rest % buf->tile_shape[d]);
      rest /= buf->tile_shape[d];
    }
    LLVMValueRef v = tile_offset(&cg, buf, idx, buf->rank);
    if (LLVMIsAConstantInt(v)) {
      off[e] = LLVMConstIntGetSExtValue(v);
    } else {
      free(off);
      off = NULL;
    }
  }
  arena_free(a);
  LLVMDisposeBuilder(cg.b);
  LLVMContextDispose(ctx);
  return off;
}

/* A [stages,] rows x cols shared tile of t. */
static Buffer lines_tile(TypeKind t, SwizzleKind sw, int stages, int64_t rows, int64_t cols)
{
  Buffer buf = {.name = "S", .scope = SCOPE_SHARED, .elem = t, .swizzle = sw, .stages = stages, .loc = L};
  if (stages)
    buf.tile_shape[buf.rank++] = stages;
  buf.tile_shape[buf.rank++] = rows;
  buf.tile_shape[buf.rank++] = cols;
  return buf;
}

/* The 8 rows r0 .. r0 + 7 (r0 % 8 == 0) that one 8x8 matrix of an ldmatrix
 * reads, at 16-byte chunk q of each row: how many of them share a 16-byte
 * position of a 128-byte line (a group of 4 banks) with an earlier one, summed
 * over every such group of rows and every chunk. */
static int ldmatrix_conflicts(const int64_t *off, int stages, int64_t rows, int64_t cols, int esize)
{
  int64_t per = 16 / esize, conflicts = 0;
  for (int64_t s = 0; s < (stages ? stages : 1); s++)
    for (int64_t r0 = 0; r0 + 8 <= rows; r0 += 8)
      for (int64_t q = 0; q < cols / per; q++) {
        unsigned seen = 0;
        for (int64_t i = 0; i < 8; i++) {
          int64_t pos = off[(s * rows + r0 + i) * cols + q * per] * esize / 16 % 8;
          conflicts += (seen >> pos) & 1;
          seen |= 1u << pos;
        }
      }
  return (int)conflicts;
}

/* SWIZZLE_LINES (ir.h), the layout of the shared tiles mma.sync's ldmatrix
 * reads, checked on what tile_offset computes for rows of 32 to 1024 bytes,
 * staged or not, of 16-bit elements (gemm operands) and of f32:
 *   - a bijection onto the tile (within each stage);
 *   - every 16-byte chunk of a row stays whole, in order, 16-byte aligned and
 *     in its 128-byte line, so vectors of up to 16 bytes stay contiguous;
 *   - chunk q of the 8 rows one ldmatrix matrix reads lands in 8 different
 *     16-byte positions of a line: 8 groups of banks, no conflict (which the
 *     plain row-major layout of 64-byte rows does not give);
 *   - it is ir.h's formula, byte ^ (((L ^ (L >> 3)) & 7) << 4), L = byte >> 7.
 * plan-shared aligns tiles to 128 bytes, so positions in the tile are
 * positions in the banks. */
static void test_swizzle_lines(void)
{
  static const struct {
    TypeKind t;
    int stages;
    int64_t rows, cols;
  } tiles[] = {
      {TY_F16, 0, 128, 32}, {TY_F16, 0, 32, 128}, {TY_BF16, 0, 64, 64}, {TY_F16, 0, 64, 16},
      {TY_U16, 0, 16, 256}, {TY_F16, 0, 16, 512}, {TY_F16, 3, 64, 32},  {TY_BF16, 2, 32, 128},
      {TY_F32, 0, 32, 32},  {TY_F32, 0, 64, 8},   {TY_F32, 2, 16, 64},  {TY_F16, 0, 24, 64},
  };
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    int stages = tiles[i].stages, esize = type_bytes(tiles[i].t);
    int64_t rows = tiles[i].rows, cols = tiles[i].cols, per = 16 / esize;
    int64_t slice = rows * cols, n = (stages ? stages : 1) * slice;
    char what[64];
    if (stages)
      snprintf(what, sizeof what, "%s[%d, %ld, %ld]", type_name(tiles[i].t), stages, (long)rows, (long)cols);
    else
      snprintf(what, sizeof what, "%s[%ld, %ld]", type_name(tiles[i].t), (long)rows, (long)cols);
    Buffer buf = lines_tile(tiles[i].t, SWIZZLE_LINES, stages, rows, cols);
    int64_t *off = tile_offsets(&buf);
    CHECK(off != NULL, "%s: an offset of constant indices is not a constant", what);
    if (!off)
      continue;
    unsigned char *hit = calloc((size_t)n, 1);
    int outside = 0, twice = 0, split = 0, moved = 0, formula = 0;
    for (int64_t e = 0; e < n; e++) {
      int64_t stage = e / slice, plain = e % slice, o = off[e] - stage * slice;
      if (o < 0 || o >= slice) {
        outside++;
        continue;
      }
      twice += hit[off[e]]++ != 0;
      int64_t byte = plain * esize, L = byte >> 7;
      formula += o * esize != (byte ^ (((L ^ (L >> 3)) & 7) << 4));
      moved += (o * esize) >> 7 != L;
      int64_t first = e - e % per; /* the first element of e's 16-byte chunk */
      split += off[e] != off[first] + e % per || off[first] * esize % 16 != 0;
    }
    CHECK(!outside && !twice, "%s: not a bijection (%d outside the stage, %d offsets twice)", what, outside,
          twice);
    CHECK(!split, "%s: %d elements not in place in a whole, aligned 16-byte chunk", what, split);
    CHECK(!moved, "%s: %d elements moved to another 128-byte line", what, moved);
    CHECK(!formula, "%s: %d offsets differ from ir.h's formula", what, formula);
    int conflicts = ldmatrix_conflicts(off, stages, rows, cols, esize);
    CHECK(!conflicts, "%s: %d ldmatrix rows share a bank group", what, conflicts);
    free(hit);
    free(off);
  }
  /* The check itself: plain 64-byte rows conflict (rows r, r+2, r+4, r+6). */
  Buffer plain = lines_tile(TY_F16, SWIZZLE_NONE, 0, 128, 32);
  int64_t *off = tile_offsets(&plain);
  CHECK(off && ldmatrix_conflicts(off, 0, 128, 32, 2) > 0, "plain 64-byte rows have no ldmatrix conflicts");
  free(off);
}

/* A code generator with a module of its own, for functions built expression by expression. */
static Cg scratch_cg(const char *name)
{
  Cg cg = {0};
  cg.ctx = LLVMContextCreate();
  cg.b = LLVMCreateBuilderInContext(cg.ctx);
  cg.mod = LLVMModuleCreateWithNameInContext(name, cg.ctx);
  LLVMSetDataLayout(cg.mod, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
  cg_types_init(&cg.t, cg.ctx);
  return cg;
}

static void instcombine(Cg *cg)
{
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(cg->mod, "instcombine", NULL, po);
  CHECK(!err, "instcombine did not run");
  if (err)
    LLVMConsumeError(err);
  LLVMDisposePassBuilderOptions(po);
}

static void dispose_cg(Cg *cg)
{
  LLVMDisposeModule(cg->mod);
  LLVMDisposeBuilder(cg->b);
  LLVMContextDispose(cg->ctx);
}

/* cg_convert of an 8-bit integer to f16, bf16 and f32 (the mantissa trick of cg_types.c) on
 * constants, in a scalar and in each lane of a vector of 4 and of 2 (f16 vectors take a byte
 * shuffle of their own: lower_parallel.c's converted quads): each conversion is the
 * return value of a function of its own, instcombine folds them (LLVM's builder alone does not fold
 * the shuffle's bitcast to halves), and every one of the 256 values of i8 and u8 must come out as
 * a constant equal to the integer. */
static void test_byte_conversions(void)
{
  Cg cg = scratch_cg("bytes");
  static const TypeKind froms[] = {TY_I8, TY_U8}, tos[] = {TY_F16, TY_BF16, TY_F32};
  static const int widths[] = {1, 4, 2};
  enum { N = 2 * 3 * 256 * 3 };
  LLVMValueRef *fns = calloc(N, sizeof *fns);
  int n = 0;
  for (int f = 0; f < 2; f++)
    for (int t = 0; t < 3; t++)
      for (int byte = 0; byte < 256; byte++)
        for (int v = 0; v < 3; v++, n++) {
          LLVMValueRef lanes[4];
          for (int l = 0; l < 4; l++)
            lanes[l] = LLVMConstInt(cg.t.i8, (unsigned)(byte + 37 * l) & 255, 0);
          LLVMValueRef in = widths[v] == 1 ? lanes[0] : LLVMConstVector(lanes, (unsigned)widths[v]);
          LLVMTypeRef rt = widths[v] == 1 ? cg_mem_type(&cg, tos[t])
                                          : LLVMVectorType(cg_mem_type(&cg, tos[t]), (unsigned)widths[v]);
          fns[n] = LLVMAddFunction(cg.mod, "conv", LLVMFunctionType(rt, NULL, 0, 0));
          LLVMPositionBuilderAtEnd(cg.b, LLVMAppendBasicBlockInContext(cg.ctx, fns[n], ""));
          LLVMBuildRet(cg.b, cg_convert(&cg, in, froms[f], tos[t]));
        }
  instcombine(&cg);
  int wrong = 0, unfolded = 0;
  n = 0;
  for (int f = 0; f < 2; f++)
    for (int t = 0; t < 3; t++)
      for (int byte = 0; byte < 256; byte++)
        for (int v = 0; v < 3; v++, n++) {
          LLVMValueRef ret = LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(fns[n]));
          LLVMValueRef val = LLVMGetNumOperands(ret) ? LLVMGetOperand(ret, 0) : NULL;
          for (int l = 0; l < widths[v]; l++) {
            LLVMValueRef x = !val ? NULL : widths[v] > 1 ? LLVMGetAggregateElement(val, (unsigned)l) : val;
            if (!x || !LLVMIsAConstantFP(x)) {
              unfolded++;
              continue;
            }
            unsigned b = (unsigned)(byte + 37 * l) & 255;
            double w = froms[f] == TY_I8 ? (double)(int8_t)b : (double)b;
            LLVMBool loses;
            wrong += LLVMConstRealGetDouble(x, &loses) != w;
          }
        }
  CHECK(!unfolded, "%d conversions of constant bytes did not fold to constants", unfolded);
  CHECK(!wrong, "%d conversions of bytes to floats differ from the integer", wrong);
  free(fns);
  dispose_cg(&cg);
}

/* cg_fold_byte_offset: T(byte) + c and T(byte) - c, with c an integer of at most 1024 in magnitude,
 * become the conversion's one subtraction with c joined (f16 and f32, scalars and vectors of 2 and 4
 * lanes); other constants (7.5, 1025) and bf16 keep two operations.  Each expression is a function
 * of the byte (an argument, so that nothing folds while it is built), as emit_float_binary sees it
 * (halves widened to f32); then the argument is replaced by a constant and instcombine must give
 * exactly b + c or b - c. */
typedef struct {
  TypeKind from, to;
  unsigned lanes, byte; /* lane l holds byte + 37 l */
  double c;
  bool add, foldable;
} ByteOffset;

/* Case n of test_byte_offsets: 2 byte types x 3 float types x 3 widths x 7 constants x + and - x 52
 * bytes (5 apart). */
static ByteOffset byte_offset_case(int n)
{
  static const TypeKind froms[] = {TY_I8, TY_U8}, tos[] = {TY_F16, TY_BF16, TY_F32};
  static const unsigned widths[] = {1, 2, 4};
  static const double cs[] = {8, -8, 128, 1024, -1024, 7.5, 1025};
  ByteOffset o = {.byte = (unsigned)(n % 52) * 5, .add = n / 52 % 2, .c = cs[n / 104 % 7]};
  o.lanes = widths[n / 728 % 3];
  o.to = tos[n / 2184 % 3];
  o.from = froms[n / 6552];
  /* f16's conversion subtracts 1024 (u8) or 1152 (i8): the joined constant must stay within the
   * 2048 that f16 holds every integer of (i8 - 1024 and i8 + -1024 do not) */
  double k = o.to == TY_F16 ? (o.from == TY_I8 ? 1152 : 1024) : 0;
  o.foldable = o.to != TY_BF16 && o.c == (int)o.c && fabs(o.c) <= 1024 &&
               fabs(o.add ? k - o.c : k + o.c) <= 2048;
  return o;
}

static void test_byte_offsets(void)
{
  Cg cg = scratch_cg("offsets");
  enum { CASES = 2 * 3 * 3 * 7 * 2 * 52 };
  LLVMValueRef *fns = calloc(CASES, sizeof *fns);
  int folded = 0, expected_folds = 0;
  for (int n = 0; n < CASES; n++) {
    ByteOffset o = byte_offset_case(n);
    LLVMTypeRef in_t = cg_with_lanes(cg.t.i8, (int)o.lanes), f32_t = cg_with_lanes(cg.t.f32, (int)o.lanes);
    fns[n] = LLVMAddFunction(cg.mod, "off", LLVMFunctionType(f32_t, &in_t, 1, 0));
    LLVMPositionBuilderAtEnd(cg.b, LLVMAppendBasicBlockInContext(cg.ctx, fns[n], ""));
    LLVMValueRef x = cg_widen(&cg, cg_convert(&cg, LLVMGetParam(fns[n], 0), o.from, o.to), o.to);
    LLVMValueRef c = LLVMConstReal(cg.t.f32, o.c), cl[4] = {c, c, c, c}, bytes[4];
    if (o.lanes > 1)
      c = LLVMConstVector(cl, o.lanes);
    LLVMValueRef r = cg_fold_byte_offset(&cg, o.add, x, c);
    expected_folds += o.foldable;
    folded += r != NULL;
    CHECK(!r == !o.foldable, "%s -> %s, %u lanes, %s %g: %s", type_name(o.from), type_name(o.to), o.lanes,
          o.add ? "+" : "-", o.c, r ? "joined where it must not be" : "not joined");
    if (!r)
      r = o.add ? LLVMBuildFAdd(cg.b, x, c, "") : LLVMBuildFSub(cg.b, x, c, "");
    LLVMBuildRet(cg.b, r);
    /* built: now the argument becomes constant bytes, for instcombine to fold the whole */
    for (unsigned l = 0; l < 4; l++)
      bytes[l] = LLVMConstInt(cg.t.i8, (o.byte + 37 * l) & 255, 0);
    LLVMReplaceAllUsesWith(LLVMGetParam(fns[n], 0),
                           o.lanes == 1 ? bytes[0] : LLVMConstVector(bytes, o.lanes));
  }
  instcombine(&cg);
  int wrong = 0, unfolded = 0;
  for (int n = 0; n < CASES; n++) {
    ByteOffset o = byte_offset_case(n);
    LLVMValueRef val = LLVMGetOperand(LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(fns[n])), 0);
    for (unsigned l = 0; l < o.lanes; l++) {
      LLVMValueRef x = o.lanes > 1 ? LLVMGetAggregateElement(val, l) : val;
      if (!x || !LLVMIsAConstantFP(x)) {
        unfolded++;
        continue;
      }
      unsigned b = (o.byte + 37 * l) & 255;
      double v = o.from == TY_I8 ? (double)(int8_t)b : (double)b;
      LLVMBool loses;
      wrong += LLVMConstRealGetDouble(x, &loses) != (o.add ? v + o.c : v - o.c);
    }
  }
  CHECK(folded == expected_folds, "%d of %d foldable offsets joined", folded, expected_folds);
  CHECK(!unfolded, "%d offsets of constant bytes did not fold to constants", unfolded);
  CHECK(!wrong, "%d byte offsets differ from the integer arithmetic", wrong);
  free(fns);
  dispose_cg(&cg);
}

/* ir/smem.c's smem_elem_offset, the integer offsets the interpreter uses, equals
 * what codegen's tile_offset builds, element by element, for every layout. */
static void test_smem_twin(void)
{
  static const struct {
    TypeKind t;
    SwizzleKind sw;
    int stages;
    int64_t rows, cols;
  } tiles[] = {
      {TY_F16, SWIZZLE_NONE, 0, 8, 24},    {TY_F32, SWIZZLE_NONE, 3, 4, 10},
      {TY_F16, SWIZZLE_LINES, 0, 128, 32}, {TY_F16, SWIZZLE_LINES, 3, 64, 32},
      {TY_F32, SWIZZLE_LINES, 2, 16, 8},   {TY_BF16, SWIZZLE_LINES, 2, 32, 128},
      {TY_F16, SWIZZLE_128B, 0, 64, 64},   {TY_F16, SWIZZLE_128B, 0, 16, 128},
      {TY_BF16, SWIZZLE_128B, 2, 64, 192}, {TY_F16, SWIZZLE_128B, 4, 128, 64},
      {TY_F16, SWIZZLE_64B, 0, 64, 32},    {TY_BF16, SWIZZLE_64B, 3, 64, 96},
      {TY_F16, SWIZZLE_32B, 0, 16, 16},    {TY_F16, SWIZZLE_32B, 2, 32, 48},
  };
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    Buffer buf = lines_tile(tiles[i].t, tiles[i].sw, tiles[i].stages, tiles[i].rows, tiles[i].cols);
    int64_t *off = tile_offsets(&buf), n = buffer_elems(&buf), bad = 0;
    CHECK(off != NULL, "tile %zu: not constant", i);
    for (int64_t e = 0; off && e < n; e++) {
      int64_t idx[TL_MAX_RANK], rest = e;
      for (int d = buf.rank - 1; d >= 0; d--) {
        idx[d] = rest % buf.tile_shape[d];
        rest /= buf.tile_shape[d];
      }
      bad += smem_elem_offset(&buf, idx, buf.rank) != off[e];
    }
    CHECK(!bad, "tile %zu (%s, swizzle %d, %d stages): %ld offsets differ from codegen's", i,
          type_name(tiles[i].t), (int)tiles[i].sw, tiles[i].stages, (long)bad);
    free(off);
  }
}

/* A grid the host cannot compute from the metadata: an error, not a crash. */
static void test_errors(void)
{
  Arena *a = arena_new();
  Kernel *k = build_vector_add(a);
  Module *m = module_of(a, 1, k);
  char *ptx = (char *)"untouched", *ir = (char *)"untouched";
  /* The target's row decides the PTX's .target and .version (ir/target.h);
   * names are checked where they come in (tilec_compile), so there is no
   * unknown target here. */
  char *ptx89 = compile(m, "sm_89", 3, NULL);
  CHECK(contains(ptx89, ".target sm_89") && contains(ptx89, ".version 7.8"), "sm_89's row not used");
  free(ptx89);
  CHECK(strncmp(codegen_llvm_version(), "LLVM 19.", 8) == 0, "%s", codegen_llvm_version());

  k->grid[1] = ex_cast(a, TY_I32, ex_float(a, TY_F32, 2.5));
  k->grid[1]->loc = (SrcLoc){7, 3};
  k->grid_rank = 2;
  Diags d2 = diags_new(a);
  CodegenOptions o = {.target = target_find("sm_80"), .opt_level = 3};
  CHECK(!codegen_module(m, &o, &d2, &ir, &ptx), "float grid accepted");
  CHECK(d2.nerrors == 1 && d2.first->loc.line == 7 && contains(d2.first->message, "grid axis 1"),
        "grid error: %s", d2.first ? d2.first->message : "none");
  CHECK(ptx == NULL && ir == NULL, "outputs not cleared");

  k->grid_rank = 1;
  Module *twice = module_of(a, 2, k, k);
  Diags d3 = diags_new(a);
  CHECK(!codegen_module(twice, &o, &d3, NULL, &ptx) && d3.nerrors == 1, "duplicate kernel names accepted");
  arena_free(a);
}

/* Several compilations at once: no shared mutable state. */
static void *compile_in_thread(void *arg)
{
  Module *m = arg;
  for (int i = 0; i < 3; i++) {
    Arena *a = arena_new();
    Diags d = diags_new(a);
    CodegenOptions o = {.target = target_find(i % 2 ? "sm_90a" : "sm_80"), .opt_level = 3};
    char *ptx = NULL;
    if (!codegen_module(m, &o, &d, NULL, &ptx) || !contains(ptx, "ld.global.v4.f32"))
      __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    free(ptx);
    arena_free(a);
  }
  return NULL;
}

static void test_threads(void)
{
  Arena *a = arena_new();
  Module *m = module_of(a, 1, build_vector_add(a));
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, compile_in_thread, m);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  arena_free(a);
}

/* codegen_contained: a real LLVM fatal error (fp128 division, which NVPTX
 * cannot lower: "Undefined external symbol") comes back as false with its
 * reason, on this thread and on another, and the process goes on. */
typedef struct {
  bool emitted;
} FatalArg;

/* A contained fatal error leaks that compilation's LLVM memory, by design:
 * LeakSanitizer (the sanitizer build) is told to ignore what it allocates. */
extern void __lsan_disable(void) __attribute__((weak));
extern void __lsan_enable(void) __attribute__((weak));

static void emit_fp128(void *arg)
{
  static const char ir[] = "target triple = \"nvptx64-nvidia-cuda\"\n"
                           "define void @k(ptr %p) {\n"
                           "  %a = load fp128, ptr %p\n"
                           "  %b = fdiv fp128 %a, %a\n"
                           "  store fp128 %b, ptr %p\n"
                           "  ret void\n"
                           "}\n";
  if (__lsan_disable)
    __lsan_disable(); /* enabled again by the caller */
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, sizeof ir - 1, "fp128");
  LLVMModuleRef mod = NULL;
  char *err = NULL;
  if (LLVMParseIRInContext(ctx, mb, &mod, &err))
    return;
  LLVMTargetRef t;
  if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &t, &err))
    return;
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, "nvptx64-nvidia-cuda", "sm_90a", "+ptx80",
                                                    LLVMCodeGenLevelDefault, LLVMRelocDefault,
                                                    LLVMCodeModelDefault);
  LLVMMemoryBufferRef out = NULL;
  LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &out);
  ((FatalArg *)arg)->emitted = true; /* not reached: LLVM stops first */
}

typedef struct {
  FatalArg f;
  bool contained; /* the thread's verdict */
} ThreadArg;

static void *contained_thread(void *arg)
{
  ThreadArg *t = arg;
  char reason[256] = "";
  bool ok = codegen_contained(emit_fp128, &t->f, reason, sizeof reason);
  if (__lsan_enable)
    __lsan_enable();
  t->contained = !ok && !t->f.emitted && contains(reason, "Undefined external symbol");
  return NULL;
}

static void test_fatal_contained(void)
{
  FatalArg a = {false};
  char reason[256] = "";
  bool ok = codegen_contained(emit_fp128, &a, reason, sizeof reason);
  if (__lsan_enable)
    __lsan_enable();
  CHECK(!ok && !a.emitted, "a fatal LLVM error was not contained");
  CHECK(contains(reason, "Undefined external symbol"), "reason: '%s'", reason);
  ThreadArg t = {{false}, false};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, contained_thread, &t) == 0, "thread");
  pthread_join(th, NULL);
  CHECK(t.contained, "not contained on another thread");
  /* A compilation after a contained error still works. */
  Arena *ar = arena_new();
  Module *m = module_of(ar, 1, build_vector_add(ar));
  free(compile(m, "sm_90a", 3, NULL));
  arena_free(ar);
}

int main(void)
{
  test_vector_add();
  test_math();
  test_casts_and_operators();
  test_shared();
  test_errors();
  test_threads();
  test_wgmma();
  test_swizzle_lines();
  test_smem_twin();
  test_byte_conversions();
  test_byte_offsets();
  test_fatal_contained();
  if (failures) {
    fprintf(stderr, "test_codegen: %d failures\n", failures);
    return 1;
  }
  printf("test_codegen: ok%s\n", access(PTXAS, X_OK) == 0 ? " (with ptxas)" : " (no ptxas)");
  return 0;
}
