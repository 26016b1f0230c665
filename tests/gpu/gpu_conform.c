/* gpu_conform: the conformance matrix of the language's data movement. Every pairing of source and
 * destination that copy() accepts (global, shared plain, shared swizzled because a gemm reads it,
 * elementwise fragment, rows fragment, gemm accumulator in the mma.sync and wgmma layouts with each
 * warp grid), in both directions where legal, with f32 / f16 / bf16 on each side (converting), at tile
 * shapes that are not square and tensor shapes that are not multiples of the tile, and the
 * compositions real kernels use (accumulator -> shared -> gemm operand, accumulator -> shared ->
 * global, global -> shared -> fragment -> shared, rows of one accumulator broadcast into another of
 * another width, a shared tile or a pipelined stage read by a parallel loop over an accumulator, a
 * register A operand filled by a parallel loop in a pipelined loop, with and without overlap = 1).
 * Each case is a small .tl kernel generated here, compiled in-process by the JIT's
 * compiler for sm_90a and for sm_80, run on random data with poisoned outputs, and compared element by
 * element with a host reference.
 *
 *   gpu_conform [--seed S] [--arch sm_90a|sm_80] [--filter SUBSTR] [--sample N] [--threads T] [--list]
 *               [--random N] [--compile-only] [-v]
 *   gpu_conform --self-test
 *
 * --compile-only  compile every case for both targets with no GPU (CI runs this): each must compile
 *                 without a diagnostic; prints which gemm lowering each accumulator case took.
 * --self-test     no GPU: the checker must reject outputs with one element moved, one left
 *                 unwritten, one written past the end, a transposed tile, and must accept the
 *                 reference itself.
 * --list          print the case names and exit.
 * --sample N      only every Nth case (the sanitizer build's ctest compiles every 8th: under ASan the
 *                 whole matrix takes minutes).
 * --threads T     compile on T threads (default 8; all.sh passes the machine's core count).
 * --random N      instead of the matrix, N kernels drawn at random from the same families (tile
 *                 shapes, threads, warp grids, chains, types, transposes, sinks, sources, sizes), each
 *                 valid by construction and checked the same way; --seed S draws them again.
 *
 * Exactness. Every case is built so that the result is exactly determined: data are dyadic rationals
 * with few bits (k / 65536 for pure movement, so that conversions to f16 and bf16 round, subnormals
 * included; small integers for gemm operands; k / 8 for reductions), so every sum and product in f32
 * is exact whatever the order, and every conversion is one round-to-nearest-even, which the reference
 * does with the runtime's host conversions. So outputs are compared bit for bit: any element moved,
 * dropped, or converted twice fails. Elements outside the tensor must stay poisoned (0xFF bytes, a NaN
 * in every float format), and so must a guard region after every output.
 *
 * Output: one line per case ("PASS name [lowering]" or "FAIL name: what"), then a summary by family
 * and lowering, then exactly "P passed, F failed". Exit 0 if nothing failed, 1 otherwise, 2 without a
 * GPU (except --compile-only and --self-test, which need none).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpu_common.h"
#include "tilec_jit.h"

/* ------------------------------------------------------------------------------------ types */

typedef enum ty { F32, F16, BF16 } ty;
static const char *const TY[] = {"f32", "f16", "bf16"};
static const tl_dtype DT[] = {TL_F32, TL_F16, TL_BF16};
static size_t ty_size(ty t) { return t == F32 ? 4 : 2; }

/* x rounded to t as the GPU converts: from the f32 value, to nearest even. */
static double rnd(ty t, double x)
{
  float f = (float)x;
  if (t == F32)
    return f;
  return t == F16 ? tl_f16_to_float(tl_f16_from_float(f)) : tl_bf16_to_float(tl_bf16_from_float(f));
}

/* ------------------------------------------------------------------------------- string builder */

typedef struct sbuf {
  char *p;
  size_t n, cap;
} sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
sb(sbuf *b, const char *fmt, ...)
{
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (b->p && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    b->cap = (b->cap + (size_t)k + 1) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p) {
      fprintf(stderr, "gpu_conform: out of memory\n");
      exit(1);
    }
  }
}

/* ------------------------------------------------------------------------------------- cases */

/* Families. */
enum { MOVE, ACC_OUT, ACC_IN, ATTN, ROWS, SWIZ, REGA, NFAMILIES };
static const char *const FAMILY[] = {"move", "acc-out",  "acc-in",    "attention",
                                     "rows", "swizzled", "register-a"};

/* Tile kinds of a MOVE chain. */
enum { SH, FR };
/* ACC_OUT sinks (accumulator -> ...). */
enum { SINK_G, SINK_S, SINK_F, SINK_FS, SINK_SE, NSINKS };
/* ACC_IN sources (... -> accumulator). */
/* SRC_PAR / SRC_PPAR: the shared tile (a pipelined loop's stage) read by a parallel loop over the
 * accumulator, acc[i, j] += Cs[i, j]: two neighbouring registers' elements as one pair (lower_parallel.c). */
enum { SRC_G, SRC_S, SRC_F, SRC_ES, SRC_PIPE, SRC_PAR, SRC_PPAR, NSRCS };
/* Data kinds. */
enum { D_FINE, D_INT2, D_INT64, D_EIGHTHS };


typedef struct tdesc {
  const char *name;
  ty t;
  int rank;
  char dim[3]; /* size names: 'M', 'N', 'K', 'L', 'D' (D and E: fixed head dims) */
  int data;
  bool out;
} tdesc;

typedef struct ccase {
  char name[200];
  int family;
  const char *arch;
  sbuf src;
  int nt;
  tdesc t[8];
  int64_t M, N, K, L; /* the sizes */
  int T;              /* threads */
  /* MOVE */
  int R, C, nmid, mid_kind[4];
  ty mid_t[4];
  bool mid_loop[4];
  /* gemm families */
  int BM, BN, BK, wm, wn;
  bool trans_a, trans_b, epi;
  ty ab, t1, t2, td;
  int sink, srck;
  /* ATTN */
  int D, DV;
  bool rows, regp; /* regp: P in registers (a fragment), not staged through shared memory */
  /* ROWS */
  int BR, red, rsink, rsrc;
  /* SWIZ */
  bool sw_in, sw_out;
  /* REGA */
  int stages, overlap;
  bool nows, persistent;
  /* the compile */
  char *ptx;
  char *err;
  const char *lowering; /* "wgmma", "mma.sync" or NULL */
} ccase;

static ccase *cases;
static int ncases, cap_cases;

static void *xrealloc(void *p, size_t n)
{
  p = realloc(p, n);
  if (!p) {
    fprintf(stderr, "gpu_conform: out of memory\n");
    exit(1);
  }
  return p;
}

static ccase *new_case(int family, const char *arch)
{
  if (ncases == cap_cases) {
    cap_cases = cap_cases ? cap_cases * 2 : 256;
    cases = xrealloc(cases, (size_t)cap_cases * sizeof *cases);
  }
  ccase *c = &cases[ncases++];
  memset(c, 0, sizeof *c);
  c->family = family;
  c->arch = arch;
  return c;
}

static void add_tensor(ccase *c, const char *name, ty t, const char *dims, int data, bool out)
{
  tdesc *d = &c->t[c->nt++];
  d->name = name;
  d->t = t;
  d->rank = (int)strlen(dims);
  memcpy(d->dim, dims, (size_t)d->rank);
  d->data = data;
  d->out = out;
}

static int64_t dim_value(const ccase *c, char d)
{
  switch (d) {
  case 'M': return c->M;
  case 'N': return c->N;
  case 'K': return c->K;
  case 'L': return c->L;
  case 'D': return c->D;
  default: return c->DV; /* 'E' */
  }
}

static int64_t tensor_elems(const ccase *c, const tdesc *d)
{
  int64_t n = 1;
  for (int r = 0; r < d->rank; r++)
    n *= dim_value(c, d->dim[r]);
  return n;
}

/* "kernel k(X: f16[M, N], ...)": D and E are written as numbers (fixed head dims). */
static void kernel_head(ccase *c, const char *grid)
{
  sb(&c->src, "kernel k(");
  for (int i = 0; i < c->nt; i++) {
    const tdesc *d = &c->t[i];
    sb(&c->src, "%s%s: %s[", i ? ", " : "", d->name, TY[d->t]);
    for (int r = 0; r < d->rank; r++) {
      if (d->dim[r] == 'D' || d->dim[r] == 'E')
        sb(&c->src, "%s%d", r ? ", " : "", (int)dim_value(c, d->dim[r]));
      else
        sb(&c->src, "%s%c", r ? ", " : "", d->dim[r]);
    }
    sb(&c->src, "]");
  }
  sb(&c->src, ")\n    grid(%s) threads(%d)\n{\n", grid, c->T);
}

static const char *kind_name(int k) { return k == SH ? "shared" : "frag"; }

/* The gemm call's optional arguments. */
static void gemm_args(sbuf *b, bool ta, bool tb, int wm, int wn)
{
  if (ta)
    sb(b, ", transpose_A = true");
  if (tb)
    sb(b, ", transpose_B = true");
  if (wm)
    sb(b, ", warps_m = %d", wm);
  if (wn)
    sb(b, ", warps_n = %d", wn);
}

/* ----------------------------------------------------------------------------- MOVE: chains */

/* X (ts) -> tile 0 -> ... -> tile n-1 -> Y (td), every tile [R, C]; a parallel loop adds a term of
 * (i, j) to f32 fragments marked mid_loop, so that the loop's idea of the element agrees with the
 * copies'. */
static void gen_move(const char *arch, int R, int C, int T, int64_t M, int64_t N, ty ts, ty td, int n,
                     const int *kind, const ty *t, const bool *loop)
{
  ccase *c = new_case(MOVE, arch);
  c->R = R, c->C = C, c->T = T, c->M = M, c->N = N, c->nmid = n, c->td = td, c->t1 = ts;
  int at = snprintf(c->name, sizeof c->name, "move %s %dx%d t%d %s", arch, R, C, T, TY[ts]);
  for (int i = 0; i < n; i++) {
    c->mid_kind[i] = kind[i];
    c->mid_t[i] = t[i];
    c->mid_loop[i] = loop[i] && kind[i] == FR && t[i] == F32;
    at += snprintf(c->name + at, sizeof c->name - (size_t)at, " -> %s.%s%s", kind_name(kind[i]), TY[t[i]],
                   c->mid_loop[i] ? "+loop" : "");
  }
  snprintf(c->name + at, sizeof c->name - (size_t)at, " -> %s  M=%lld N=%lld", TY[td], (long long)M,
           (long long)N);
  add_tensor(c, "X", ts, "MN", D_FINE, false);
  add_tensor(c, "Y", td, "MN", 0, true);
  char grid[96];
  snprintf(grid, sizeof grid, "ceildiv(N, %d), ceildiv(M, %d)) as (bx, by", C, R);
  kernel_head(c, grid);
  for (int i = 0; i < n; i++)
    sb(&c->src, "    let t%d = alloc_%s([%d, %d], %s);\n", i, kind[i] == SH ? "shared" : "fragment", R, C,
       TY[t[i]]);
  sb(&c->src, "    copy(X[by * %d, bx * %d], t0);\n", R, C);
  for (int i = 0; i < n; i++) {
    if (c->mid_loop[i])
      sb(&c->src,
         "    for i, j in parallel(%d, %d) {\n        t%d[i, j] = t%d[i, j] + (f32(i) * 0.25 - f32(j) * 0.125);\n"
         "    }\n",
         R, C, i, i);
    if (i + 1 < n)
      sb(&c->src, "    copy(t%d, t%d);\n", i, i + 1);
  }
  sb(&c->src, "    copy(t%d, Y[by * %d, bx * %d]);\n}\n", n - 1, R, C);
}

static double loop_term(int64_t i, int64_t j) { return (float)i * 0.25f - (float)j * 0.125f; }

static void ref_move(const ccase *c, double **v)
{
  const double *X = v[0];
  double *Y = v[1];
  for (int64_t i = 0; i < c->M; i++)
    for (int64_t j = 0; j < c->N; j++) {
      double x = X[i * c->N + j];
      for (int m = 0; m < c->nmid; m++) {
        x = rnd(c->mid_t[m], x);
        if (c->mid_loop[m])
          x = (float)((float)x + (float)loop_term(i % c->R, j % c->C));
      }
      Y[i * c->N + j] = rnd(c->td, x);
    }
}

/* --------------------------------------------------------------- the gemm part of ACC_*, SWIZ */

/* A case of family `family` on arch from the gemm template g (its sizes and tile shapes), with no
 * source and no tensors yet. */
static ccase *derived_case(int family, const char *arch, const ccase *g)
{
  ccase *c = new_case(family, arch);
  *c = *g;
  memset(&c->src, 0, sizeof c->src);
  c->nt = 0;
  c->family = family;
  c->arch = arch;
  return c;
}

/* A [M, K] (or A^T [K, M]), B [K, N] (or B^T [N, K]) into acc over a serial K loop. */
static void gemm_tensors(ccase *c)
{
  add_tensor(c, "A", c->ab, c->trans_a ? "KM" : "MK", D_INT2, false);
  add_tensor(c, "B", c->ab, c->trans_b ? "NK" : "KN", D_INT2, false);
}

/* let Bs = B's [BK, BN] tile ([BN, BK] for B^T). */
static void alloc_b_tile(ccase *c)
{
  sb(&c->src, "    let Bs = alloc_shared([%d, %d], %s);\n", c->trans_b ? c->BN : c->BK,
     c->trans_b ? c->BK : c->BN, TY[c->ab]);
}

static void gemm_body(ccase *c)
{
  sbuf *b = &c->src;
  if (c->trans_a)
    sb(b, "    let As = alloc_shared([%d, %d], %s);\n", c->BK, c->BM, TY[c->ab]);
  else
    sb(b, "    let As = alloc_shared([%d, %d], %s);\n", c->BM, c->BK, TY[c->ab]);
  alloc_b_tile(c);
  sb(b, "    for kk in serial(ceildiv(K, %d)) {\n", c->BK);
  if (c->trans_a)
    sb(b, "        copy(A[kk * %d, by * %d], As);\n", c->BK, c->BM);
  else
    sb(b, "        copy(A[by * %d, kk * %d], As);\n", c->BM, c->BK);
  if (c->trans_b)
    sb(b, "        copy(B[bx * %d, kk * %d], Bs);\n", c->BN, c->BK);
  else
    sb(b, "        copy(B[kk * %d, bx * %d], Bs);\n", c->BK, c->BN);
  sb(b, "        gemm(As, Bs, acc");
  gemm_args(b, c->trans_a, c->trans_b, c->wm, c->wn);
  sb(b, ");\n    }\n");
}

/* The exact product at (i, j), over all of K. */
static double dot(const ccase *c, const double *A, const double *B, int64_t i, int64_t j)
{
  double s = 0;
  for (int64_t k = 0; k < c->K; k++) {
    double a = c->trans_a ? A[k * c->M + i] : A[i * c->K + k];
    double b = c->trans_b ? B[j * c->K + k] : B[k * c->N + j];
    s += a * b;
  }
  return s;
}

static const char *grid_name(const ccase *c)
{
  static char buf[32];
  if (!c->wm && !c->wn)
    return "";
  snprintf(buf, sizeof buf, " warps=%dx%d", c->wm ? c->wm : c->T / 32 / c->wn,
           c->wn ? c->wn : c->T / 32 / c->wm);
  return buf;
}

/* -------------------------------------------------------------------- ACC_OUT: acc -> sinks */


static void gen_acc_out(const char *arch, const ccase *g, int sink, ty t1, ty t2, ty td, bool epi)
{
  ccase *c = derived_case(ACC_OUT, arch, g);
  c->sink = sink, c->t1 = t1, c->t2 = t2, c->td = td, c->epi = epi;
  int at = snprintf(c->name, sizeof c->name, "acc-out %s %dx%dx%d t%d%s%s%s %s acc%s -> ", arch, c->BM, c->BN,
                    c->BK, c->T, grid_name(c), c->trans_a ? " A^T" : "", c->trans_b ? " B^T" : "", TY[c->ab],
                    epi ? "+loop" : "");
  switch (sink) {
  case SINK_S: at += snprintf(c->name + at, sizeof c->name - (size_t)at, "shared.%s -> ", TY[t1]); break;
  case SINK_F: at += snprintf(c->name + at, sizeof c->name - (size_t)at, "frag.%s -> ", TY[t1]); break;
  case SINK_FS:
    at += snprintf(c->name + at, sizeof c->name - (size_t)at, "frag.%s -> shared.%s -> ", TY[t1], TY[t2]);
    break;
  case SINK_SE:
    at += snprintf(c->name + at, sizeof c->name - (size_t)at, "shared.%s -> elemwise.f32 -> ", TY[t1]);
    break;
  }
  snprintf(c->name + at, sizeof c->name - (size_t)at, "%s  M=%lld N=%lld K=%lld", TY[td], (long long)c->M,
           (long long)c->N, (long long)c->K);
  gemm_tensors(c);
  add_tensor(c, "Y", td, "MN", 0, true);
  char grid[96];
  snprintf(grid, sizeof grid, "ceildiv(N, %d), ceildiv(M, %d)) as (bx, by", c->BN, c->BM);
  kernel_head(c, grid);
  sbuf *b = &c->src;
  sb(b, "    let acc = alloc_fragment([%d, %d], f32);\n    clear(acc);\n", c->BM, c->BN);
  gemm_body(c);
  if (epi)
    sb(b,
       "    for i, j in parallel(%d, %d) {\n        acc[i, j] = acc[i, j] + (f32(i) * 0.25 - f32(j) * 0.125);\n"
       "    }\n",
       c->BM, c->BN);
  const char *Y = "Y[by * %d, bx * %d]";
  char y[64];
  snprintf(y, sizeof y, Y, c->BM, c->BN);
  switch (sink) {
  case SINK_G: sb(b, "    copy(acc, %s);\n", y); break;
  case SINK_S:
    sb(b, "    let Ps = alloc_shared([%d, %d], %s);\n    copy(acc, Ps);\n    copy(Ps, %s);\n", c->BM, c->BN,
       TY[t1], y);
    break;
  case SINK_F:
    sb(b, "    let c2 = alloc_fragment([%d, %d], %s);\n    copy(acc, c2);\n    copy(c2, %s);\n", c->BM, c->BN,
       TY[t1], y);
    break;
  case SINK_FS:
    sb(b,
       "    let c2 = alloc_fragment([%d, %d], %s);\n    let Ps = alloc_shared([%d, %d], %s);\n"
       "    copy(acc, c2);\n    copy(c2, Ps);\n    copy(Ps, %s);\n",
       c->BM, c->BN, TY[t1], c->BM, c->BN, TY[t2], y);
    break;
  case SINK_SE:
    sb(b,
       "    let Ps = alloc_shared([%d, %d], %s);\n    let e = alloc_fragment([%d, %d], f32);\n"
       "    copy(acc, Ps);\n    copy(Ps, e);\n    copy(e, %s);\n",
       c->BM, c->BN, TY[t1], c->BM, c->BN, y);
    break;
  }
  sb(b, "}\n");
}

static void ref_acc_out(const ccase *c, double **v)
{
  double *Y = v[2];
  for (int64_t i = 0; i < c->M; i++)
    for (int64_t j = 0; j < c->N; j++) {
      double x = dot(c, v[0], v[1], i, j);
      if (c->epi)
        x = (float)((float)x + (float)loop_term(i % c->BM, j % c->BN));
      switch (c->sink) {
      case SINK_S:
      case SINK_F:
      case SINK_SE: x = rnd(c->t1, x); break;
      case SINK_FS: x = rnd(c->t2, rnd(c->t1, x)); break;
      }
      Y[i * c->N + j] = rnd(c->td, x);
    }
}

/* -------------------------------------------------------------------- ACC_IN: sources -> acc */

static const char *const SRCK[] = {"global",
                                   "shared",
                                   "frag",
                                   "elemwise.f32+shared",
                                   "pipelined shared",
                                   "shared read in a parallel loop",
                                   "pipelined shared read in a parallel loop"};

static void gen_acc_in(const char *arch, const ccase *g, int srck, ty t1, ty td)
{
  ccase *c = derived_case(ACC_IN, arch, g);
  c->srck = srck, c->t1 = t1, c->td = td;
  c->L = 3;
  snprintf(c->name, sizeof c->name,
           "acc-in %s %dx%dx%d t%d%s%s%s %s C0.%s -> %s%s%s -> acc += A@B -> %s  M=%lld N=%lld K=%lld", arch,
           c->BM, c->BN, c->BK, c->T, grid_name(c), c->trans_a ? " A^T" : "", c->trans_b ? " B^T" : "",
           TY[c->ab], TY[srck == SRC_PIPE || srck == SRC_PAR || srck == SRC_PPAR ? F32 : t1], SRCK[srck],
           srck == SRC_G || srck == SRC_PIPE ? "" : ".",
           srck == SRC_G || srck == SRC_PIPE ? "" : TY[srck == SRC_ES ? t1 : t1], TY[td], (long long)c->M,
           (long long)c->N, (long long)c->K);
  gemm_tensors(c);
  if (srck == SRC_PIPE || srck == SRC_PPAR)
    add_tensor(c, "Z", F32, "LMN", D_EIGHTHS, false);
  else
    add_tensor(c, "C0", srck == SRC_G ? t1 : F32, "MN", D_EIGHTHS, false);
  add_tensor(c, "Y", td, "MN", 0, true);
  char grid[96];
  snprintf(grid, sizeof grid, "ceildiv(N, %d), ceildiv(M, %d)) as (bx, by", c->BN, c->BM);
  kernel_head(c, grid);
  sbuf *b = &c->src;
  sb(b, "    let acc = alloc_fragment([%d, %d], f32);\n", c->BM, c->BN);
  char c0[64];
  snprintf(c0, sizeof c0, "C0[by * %d, bx * %d]", c->BM, c->BN);
  switch (srck) {
  case SRC_G: sb(b, "    copy(%s, acc);\n", c0); break;
  case SRC_S:
    sb(b, "    let Cs = alloc_shared([%d, %d], %s);\n    copy(%s, Cs);\n    copy(Cs, acc);\n", c->BM, c->BN,
       TY[t1], c0);
    break;
  case SRC_F:
    sb(b, "    let c2 = alloc_fragment([%d, %d], %s);\n    copy(%s, c2);\n    copy(c2, acc);\n", c->BM, c->BN,
       TY[t1], c0);
    break;
  case SRC_ES:
    sb(b,
       "    let e = alloc_fragment([%d, %d], f32);\n    let Cs = alloc_shared([%d, %d], %s);\n"
       "    copy(%s, e);\n    copy(e, Cs);\n    copy(Cs, acc);\n",
       c->BM, c->BN, c->BM, c->BN, TY[t1], c0);
    break;
  case SRC_PIPE:
  case SRC_PAR:
  case SRC_PPAR:
    /* acc = A @ B first (the gemm fixes its layout), then C0 or each staged tile of Z (through
     * a fragment of the accumulator's layout, or read by the parallel loop itself) is added. */
    sb(b, "    clear(acc);\n");
    break;
  }
  gemm_body(c);
  if (srck == SRC_PAR)
    sb(b,
       "    let Cs = alloc_shared([%d, %d], %s);\n    copy(%s, Cs);\n"
       "    for i, j in parallel(%d, %d) {\n        acc[i, j] = acc[i, j] + f32(Cs[i, j]);\n    }\n",
       c->BM, c->BN, TY[t1], c0, c->BM, c->BN);
  if (srck == SRC_PIPE || srck == SRC_PPAR) { /* SRC_PIPE through a fragment z, SRC_PPAR read directly */
    bool frag = srck == SRC_PIPE;
    sb(b, "    let Zs = alloc_shared([%d, %d], %s);\n", c->BM, c->BN, TY[t1]);
    if (frag)
      sb(b, "    let z = alloc_fragment([%d, %d], f32);\n", c->BM, c->BN);
    sb(b, "    for l in pipelined(L, stages = 2) {\n        copy(Z[l, by * %d, bx * %d], Zs);\n", c->BM,
       c->BN);
    if (frag)
      sb(b, "        copy(Zs, z);\n");
    sb(b,
       "        for i, j in parallel(%d, %d) {\n            acc[i, j] = acc[i, j] + %s;\n        }\n    }\n",
       c->BM, c->BN, frag ? "z[i, j]" : "f32(Zs[i, j])");
  }
  sb(b, "    copy(acc, Y[by * %d, bx * %d]);\n}\n", c->BM, c->BN);
}

static void ref_acc_in(const ccase *c, double **v)
{
  const double *C0 = v[2];
  double *Y = v[3];
  for (int64_t i = 0; i < c->M; i++)
    for (int64_t j = 0; j < c->N; j++) {
      double x = 0;
      if (c->srck == SRC_PIPE || c->srck == SRC_PPAR) {
        for (int64_t l = 0; l < c->L; l++)
          x += rnd(c->t1, C0[(l * c->M + i) * c->N + j]);
      } else
        x = rnd(c->t1, C0[i * c->N + j]);
      x += dot(c, v[0], v[1], i, j);
      Y[i * c->N + j] = rnd(c->td, x);
    }
}

/* ------------------------------------------------------------ ATTN: acc -> shared -> gemm operand */

/* S = Q K^T in one accumulator, P = S (rows: minus its row max, which is also added to every column
 * of O) staged through a shared tile of the operand type, O += P V in a second accumulator [BM, DV];
 * with rows, the max of the last tile also goes to R (rows of the accumulator -> global) and to R2
 * (-> shared -> global). */
static void gen_attn(const char *arch, int BM, int BN, int D, int DV, int T, ty ab, bool rows, bool regp,
                     int64_t M, int64_t N)
{
  ccase *c = new_case(ATTN, arch);
  c->BM = BM, c->BN = BN, c->D = D, c->DV = DV, c->T = T, c->ab = ab, c->rows = rows, c->M = M, c->N = N;
  c->regp = regp;
  snprintf(c->name, sizeof c->name,
           "attention %s BM=%d BN=%d D=%d DV=%d t%d %s S -> %s.%s -> P@V%s  M=%lld N=%lld", arch, BM, BN, D,
           DV, T, TY[ab], regp ? "registers" : "shared", TY[ab],
           rows ? " + rows of S into O, rows -> global, rows -> shared -> global" : "", (long long)M,
           (long long)N);
  add_tensor(c, "Q", ab, "MD", D_INT2, false);
  add_tensor(c, "K", ab, "ND", D_INT2, false);
  add_tensor(c, "V", ab, "NE", D_INT2, false);
  add_tensor(c, "O", F32, "ME", 0, true);
  if (rows) {
    add_tensor(c, "R", F32, "M", 0, true);
    add_tensor(c, "R2", F32, "M", 0, true);
  }
  char grid[64];
  snprintf(grid, sizeof grid, "ceildiv(M, %d)) as (by", BM);
  kernel_head(c, grid);
  sbuf *b = &c->src;
  sb(b,
     "    let Qs = alloc_shared([%d, %d], %s);\n    let Ks = alloc_shared([%d, %d], %s);\n"
     "    let Vs = alloc_shared([%d, %d], %s);\n    let Ps = alloc_%s([%d, %d], %s);\n"
     "    let s = alloc_fragment([%d, %d], f32);\n    let o = alloc_fragment([%d, %d], f32);\n",
     BM, D, TY[ab], BN, D, TY[ab], BN, DV, TY[ab], regp ? "fragment" : "shared", BM, BN, TY[ab], BM, BN, BM,
     DV);
  if (rows)
    sb(b, "    let m = alloc_fragment([%d], f32);\n    let ms = alloc_shared([%d], f32);\n", BM, BM);
  sb(b, "    copy(Q[by * %d, 0], Qs);\n    clear(o);\n", BM);
  sb(b,
     "    for n in serial(ceildiv(N, %d)) {\n        copy(K[n * %d, 0], Ks);\n        copy(V[n * %d, 0], Vs);\n"
     "        clear(s);\n        gemm(Qs, Ks, s, transpose_B = true);\n",
     BN, BN, BN);
  if (rows)
    sb(b,
       "        reduce_max(s, m);\n        for i, j in parallel(%d, %d) {\n            o[i, j] = o[i, j] + m[i];\n"
       "        }\n        for i, j in parallel(%d, %d) {\n            s[i, j] = s[i, j] - m[i];\n        }\n",
       BM, DV, BM, BN);
  if (regp)
    sb(b, "        for i, j in parallel(%d, %d) {\n            Ps[i, j] = %s(s[i, j]);\n        }\n", BM, BN,
       TY[ab]);
  else
    sb(b, "        copy(s, Ps);\n");
  sb(b, "        gemm(Ps, Vs, o);\n    }\n    copy(o, O[by * %d, 0]);\n", BM);
  if (rows)
    sb(b, "    copy(m, R[by * %d]);\n    copy(m, ms);\n    copy(ms, R2[by * %d]);\n", BM, BM);
  sb(b, "}\n");
}

static void ref_attn(const ccase *c, double **v)
{
  const double *Q = v[0], *K = v[1], *V = v[2];
  double *O = v[3], *R = c->rows ? v[4] : NULL, *R2 = c->rows ? v[5] : NULL;
  int64_t ntiles = (c->N + c->BN - 1) / c->BN;
  double *s = xrealloc(NULL, (size_t)c->BN * sizeof *s);
  for (int64_t i = 0; i < c->M; i++) {
    for (int e = 0; e < c->DV; e++)
      O[i * c->DV + e] = 0;
    double m = 0;
    for (int64_t t = 0; t < ntiles; t++) {
      m = -INFINITY;
      for (int q = 0; q < c->BN; q++) {
        int64_t n = t * c->BN + q;
        double x = 0;
        if (n < c->N)
          for (int d = 0; d < c->D; d++)
            x += Q[i * c->D + d] * K[n * c->D + d];
        s[q] = x; /* rows of K past N load as zeros: a score of 0 */
        m = x > m ? x : m;
      }
      for (int q = 0; q < c->BN; q++) {
        int64_t n = t * c->BN + q;
        double p = rnd(c->ab, c->rows ? s[q] - m : s[q]);
        if (n < c->N)
          for (int e = 0; e < c->DV; e++)
            O[i * c->DV + e] += p * V[n * c->DV + e];
      }
      if (c->rows)
        for (int e = 0; e < c->DV; e++)
          O[i * c->DV + e] += m;
    }
    if (c->rows)
      R[i] = R2[i] = ntiles ? m : NAN;
  }
  free(s);
}

/* ------------------------------------------------------------------ ROWS: rows fragments */

/* x [BR, BN] (elementwise) from X; r = reduce over rows -> R (directly or through shared rows);
 * r2 <- R0 (directly or through shared rows), broadcast: Y = x + r2[i]. */
static void gen_rows(const char *arch, int BR, int BN, int T, int red, int rsink, int rsrc, ty tx, ty tr,
                     int64_t M, int64_t N)
{
  ccase *c = new_case(ROWS, arch);
  c->BR = BR, c->BN = BN, c->T = T, c->red = red, c->rsink = rsink, c->rsrc = rsrc, c->t1 = tx, c->t2 = tr;
  c->M = M, c->N = N;
  snprintf(c->name, sizeof c->name,
           "rows %s %dx%d t%d X.%s reduce_%s -> %s R.%s; R0.%s -> %s -> broadcast  M=%lld N=%lld", arch, BR,
           BN, T, TY[tx], red ? "max" : "sum", rsink ? "shared" : "global", TY[tr], TY[tr],
           rsrc ? "shared" : "rows", (long long)M, (long long)N);
  add_tensor(c, "X", tx, "MN", D_EIGHTHS, false);
  add_tensor(c, "R0", tr, "M", D_EIGHTHS, false);
  add_tensor(c, "Y", F32, "MN", 0, true);
  add_tensor(c, "R", tr, "M", 0, true);
  char grid[64];
  snprintf(grid, sizeof grid, "ceildiv(M, %d)) as (by", BR);
  kernel_head(c, grid);
  sbuf *b = &c->src;
  sb(b,
     "    let x = alloc_fragment([%d, %d], f32);\n    let r = alloc_fragment([%d], f32);\n"
     "    let r2 = alloc_fragment([%d], f32);\n    copy(X[by * %d, 0], x);\n    reduce_%s(x, r);\n",
     BR, BN, BR, BR, BR, red ? "max" : "sum");
  if (rsink)
    sb(b, "    let rs = alloc_shared([%d], %s);\n    copy(r, rs);\n    copy(rs, R[by * %d]);\n", BR, TY[tr],
       BR);
  else
    sb(b, "    copy(r, R[by * %d]);\n", BR);
  if (rsrc)
    sb(b, "    let r0s = alloc_shared([%d], %s);\n    copy(R0[by * %d], r0s);\n    copy(r0s, r2);\n", BR,
       TY[tr], BR);
  else
    sb(b, "    copy(R0[by * %d], r2);\n", BR);
  sb(b,
     "    for i, j in parallel(%d, %d) {\n        x[i, j] = x[i, j] + r2[i];\n    }\n    copy(x, Y[by * %d, 0]);\n}\n",
     BR, BN, BR);
}

static void ref_rows(const ccase *c, double **v)
{
  const double *X = v[0], *R0 = v[1];
  double *Y = v[2], *R = v[3];
  for (int64_t i = 0; i < c->M; i++) {
    double acc = c->red ? -INFINITY : 0;
    for (int64_t j = 0; j < c->BN; j++) {
      double x = j < c->N ? rnd(F32, X[i * c->N + j]) : 0; /* past N: zeros */
      acc = c->red ? (x > acc ? x : acc) : acc + x;
    }
    R[i] = rnd(c->t2, acc);
    double r2 = rnd(F32, R0[i]);
    for (int64_t j = 0; j < c->N && j < c->BN; j++)
      Y[i * c->N + j] = (float)(X[i * c->N + j] + r2);
  }
}

/* --------------------------------------------------------- SWIZ: a shared tile a gemm reads */

/* As (swizzled for the gemm) is filled from A directly or through an f32 elementwise fragment,
 * read by the gemm, and copied back out to Y (directly or through a fragment): Y = A, C = A @ B. */
static void gen_swiz(const char *arch, const ccase *g, bool in_frag, bool out_frag)
{
  ccase *c = derived_case(SWIZ, arch, g);
  c->sw_in = in_frag, c->sw_out = out_frag;
  int am = c->trans_a ? c->BK : c->BM, ak = c->trans_a ? c->BM : c->BK;
  snprintf(c->name, sizeof c->name,
           "swizzled %s %dx%dx%d t%d%s%s%s %s A -> %sAs(gemm operand) -> %sY  M=%lld N=%lld K=%lld", arch,
           c->BM, c->BN, c->BK, c->T, grid_name(c), c->trans_a ? " A^T" : "", c->trans_b ? " B^T" : "",
           TY[c->ab], in_frag ? "elemwise.f32 -> " : "", out_frag ? "elemwise.f32 -> " : "", (long long)c->M,
           (long long)c->N, (long long)c->K);
  add_tensor(c, "A", c->ab, c->trans_a ? "KM" : "MK", D_INT64, false);
  add_tensor(c, "B", c->ab, c->trans_b ? "NK" : "KN", D_INT2, false);
  add_tensor(c, "Y", c->ab, c->trans_a ? "KM" : "MK", 0, true);
  add_tensor(c, "C", F32, "MN", 0, true);
  /* One K tile: K <= BK. */
  char grid[96];
  snprintf(grid, sizeof grid, "ceildiv(N, %d), ceildiv(M, %d)) as (bx, by", c->BN, c->BM);
  kernel_head(c, grid);
  sbuf *b = &c->src;
  sb(b, "    let As = alloc_shared([%d, %d], %s);\n", am, ak, TY[c->ab]);
  alloc_b_tile(c);
  sb(b, "    let acc = alloc_fragment([%d, %d], f32);\n    clear(acc);\n", c->BM, c->BN);
  char a[64];
  if (c->trans_a)
    snprintf(a, sizeof a, "A[0, by * %d]", c->BM);
  else
    snprintf(a, sizeof a, "A[by * %d, 0]", c->BM);
  if (in_frag)
    sb(b, "    let e = alloc_fragment([%d, %d], f32);\n    copy(%s, e);\n    copy(e, As);\n", am, ak, a);
  else
    sb(b, "    copy(%s, As);\n", a);
  if (c->trans_b)
    sb(b, "    copy(B[bx * %d, 0], Bs);\n", c->BN);
  else
    sb(b, "    copy(B[0, bx * %d], Bs);\n", c->BN);
  sb(b, "    gemm(As, Bs, acc");
  gemm_args(b, c->trans_a, c->trans_b, c->wm, c->wn);
  sb(b, ");\n");
  a[0] = 'Y';
  /* Every block writes its A tile; the blocks of one row of the grid write the same values. */
  if (out_frag)
    sb(b, "    let e2 = alloc_fragment([%d, %d], f32);\n    copy(As, e2);\n    copy(e2, %s);\n", am, ak, a);
  else
    sb(b, "    copy(As, %s);\n", a);
  sb(b, "    copy(acc, C[by * %d, bx * %d]);\n}\n", c->BM, c->BN);
}

static void ref_swiz(const ccase *c, double **v)
{
  int64_t n = c->M * c->K;
  for (int64_t i = 0; i < n; i++)
    v[2][i] = v[0][i];
  for (int64_t i = 0; i < c->M; i++)
    for (int64_t j = 0; j < c->N; j++)
      v[3][i * c->N + j] = dot(c, v[0], v[1], i, j);
}

/* ------------------------------------------- REGA: a register A operand filled in a pipelined loop */

/* The dequantizing GEMM's shape: A's tile (type t1) and B's tile through a pipelined loop of
 * `stages`, a parallel loop filling the register operand a[i, j] = ab(As[i, j]) * 0.5, then
 * gemm(a, Bs, acc); with overlap = 1 or 0 (the same form since the second copy of `a` that
 * overlap = 1 once filled under the multiply was removed: docs/language.md, "A register A operand
 * is not refilled under its multiply"), with or without the producer warpgroup, inside a
 * persistent loop over the tiles or not. */
static void gen_rega(const char *arch, const ccase *g, ty t1, int stages, int overlap, bool nows,
                     bool persistent)
{
  ccase *c = derived_case(REGA, arch, g);
  c->t1 = t1, c->stages = stages, c->overlap = overlap, c->nows = nows, c->persistent = persistent;
  snprintf(c->name, sizeof c->name,
           "register-a %s %dx%dx%d t%d%s%s %s A.%s -> shared -> a = %s(As) * 0.5 -> acc += a@B stages=%d "
           "overlap=%d%s%s  M=%lld N=%lld K=%lld",
           arch, c->BM, c->BN, c->BK, c->T, grid_name(c), c->trans_b ? " B^T" : "", TY[c->ab], TY[t1],
           TY[c->ab], stages, overlap, nows ? " no-producer" : "", persistent ? " persistent" : "",
           (long long)c->M, (long long)c->N, (long long)c->K);
  add_tensor(c, "A", t1, "MK", D_INT2, false);
  add_tensor(c, "B", c->ab, c->trans_b ? "NK" : "KN", D_INT2, false);
  add_tensor(c, "Y", F32, "MN", 0, true);
  char grid[128];
  if (persistent) /* three blocks take the tiles in turn: each runs the loop several times */
    snprintf(grid, sizeof grid, "min(ceildiv(N, %d) * ceildiv(M, %d), 3)) as (b", c->BN, c->BM);
  else
    snprintf(grid, sizeof grid, "ceildiv(N, %d), ceildiv(M, %d)) as (bx, by", c->BN, c->BM);
  kernel_head(c, grid);
  sbuf *b = &c->src;
  if (nows)
    sb(b, "    warp_specialize(0);\n");
  sb(b, "    let As = alloc_shared([%d, %d], %s);\n", c->BM, c->BK, TY[t1]);
  alloc_b_tile(c);
  sb(b, "    let a = alloc_fragment([%d, %d], %s);\n    let acc = alloc_fragment([%d, %d], f32);\n", c->BM,
     c->BK, TY[c->ab], c->BM, c->BN);
  const char *in = "    ";
  if (persistent) {
    sb(b,
       "    let nb = num_blocks(0);\n    let tiles = ceildiv(N, %d) * ceildiv(M, %d);\n"
       "    for t in serial(ceildiv(tiles - b, nb)) {\n        let tile = t * nb + b;\n"
       "        let bx = tile %% ceildiv(N, %d);\n        let by = tile / ceildiv(N, %d);\n",
       c->BN, c->BM, c->BN, c->BN);
    in = "        ";
  }
  sb(b, "%sclear(acc);\n%sfor kk in pipelined(ceildiv(K, %d), stages = %d, overlap = %d) {\n", in, in, c->BK,
     stages, overlap);
  sb(b, "%s    copy(A[by * %d, kk * %d], As);\n", in, c->BM, c->BK);
  if (c->trans_b)
    sb(b, "%s    copy(B[bx * %d, kk * %d], Bs);\n", in, c->BN, c->BK);
  else
    sb(b, "%s    copy(B[kk * %d, bx * %d], Bs);\n", in, c->BK, c->BN);
  sb(b, "%s    for i, j in parallel(%d, %d) {\n%s        a[i, j] = %s(As[i, j]) * 0.5;\n%s    }\n", in, c->BM,
     c->BK, in, TY[c->ab], in);
  sb(b, "%s    gemm(a, Bs, acc", in);
  gemm_args(b, false, c->trans_b, c->wm, c->wn);
  sb(b, ");\n%s}\n%scopy(acc, Y[by * %d, bx * %d]);\n", in, in, c->BM, c->BN);
  if (persistent)
    sb(b, "    }\n");
  sb(b, "}\n");
}

static void ref_rega(const ccase *c, double **v)
{
  const double *A = v[0], *B = v[1];
  double *Y = v[2];
  for (int64_t i = 0; i < c->M; i++)
    for (int64_t j = 0; j < c->N; j++) {
      double s = 0;
      for (int64_t k = 0; k < c->K; k++)
        s += rnd(c->ab, rnd(c->ab, A[i * c->K + k]) * 0.5) * (c->trans_b ? B[j * c->K + k] : B[k * c->N + j]);
      Y[i * c->N + j] = rnd(F32, s);
    }
}

static void reference(const ccase *c, double **v)
{
  switch (c->family) {
  case MOVE: ref_move(c, v); break;
  case ACC_OUT: ref_acc_out(c, v); break;
  case ACC_IN: ref_acc_in(c, v); break;
  case ATTN: ref_attn(c, v); break;
  case ROWS: ref_rows(c, v); break;
  case REGA: ref_rega(c, v); break;
  default: ref_swiz(c, v); break;
  }
}

/* ------------------------------------------------------------------------------- the matrix */

static const char *const ARCHS[] = {"sm_90a", "sm_80"};

static void gen_moves(const char *arch)
{
  static const struct {
    int R, C, T;
  } shapes[] = {{64, 128, 128}, {128, 64, 256}, {16, 256, 128}, {8, 8, 32}};
  static const struct {
    int n, kind[3];
  } chains[] = {
      {1, {SH}},     {1, {FR}},     {2, {SH, FR}},     {2, {FR, SH}},
      {2, {SH, SH}}, {2, {FR, FR}}, {3, {SH, FR, SH}}, {3, {FR, SH, FR}},
  };
  /* type patterns: source, the tiles (cycled), destination */
  static const struct {
    ty ts, mid[3], td;
  } types[] = {
      {F32, {F32, F32, F32}, F32},  {F16, {F16, F16, F16}, F16},   {BF16, {F32, F32, F32}, F16},
      {F32, {F16, BF16, F16}, F32}, {F16, {BF16, F32, F16}, BF16},
  };
  int s = 0;
  for (size_t ci = 0; ci < sizeof chains / sizeof *chains; ci++)
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++, s++) {
      int R = shapes[s % 4].R, C = shapes[s % 4].C, T = shapes[s % 4].T;
      /* ragged in both dimensions; every other case with rows that keep 16-byte alignment */
      int64_t M = 2 * R + 5, N = s % 2 ? 2 * C - 3 : C + 8;
      bool loop[3] = {true, true, true};
      gen_move(arch, R, C, T, M, N, types[ti].ts, types[ti].td, chains[ci].n, chains[ci].kind, types[ti].mid,
               loop);
    }
}

typedef struct gcfg {
  int BM, BN, BK, T, wm, wn;
  bool ta, tb;
  ty ab;
} gcfg;

static const gcfg GEMMS[] = {
    {64, 64, 64, 128, 0, 0, false, false, F16},   /* wgmma on sm_90a; 2x2 on sm_80 */
    {64, 128, 64, 128, 0, 0, false, true, BF16},  /* wgmma, B^T */
    {128, 64, 32, 256, 0, 0, false, false, F16},  /* BK 32: mma.sync everywhere */
    {64, 128, 32, 128, 2, 0, false, false, BF16}, /* warps_m = 2: 2x2 */
    {64, 128, 32, 128, 0, 4, false, true, F16},   /* warps_n = 4: 1x4 */
    {128, 128, 64, 256, 8, 0, false, false, F16}, /* warps_m = 8 (= the wgmma grid) */
    {16, 256, 32, 128, 0, 0, false, false, F16},  /* 1x4: one 16-row piece */
    {128, 64, 64, 128, 0, 0, true, false, BF16},  /* A^T, 2x2 */
    {64, 64, 64, 128, 0, 0, true, true, BF16},    /* wgmma, A^T B^T */
    {128, 256, 64, 256, 0, 0, false, false, F16}, /* wgmma m64n256 per warpgroup */
    {128, 128, 32, 256, 4, 2, false, true, F16},  /* 4x2 */
};

static ccase gemm_template(const gcfg *g, int variant)
{
  ccase c;
  memset(&c, 0, sizeof c);
  c.BM = g->BM, c.BN = g->BN, c.BK = g->BK, c.T = g->T, c.wm = g->wm, c.wn = g->wn;
  c.trans_a = g->ta, c.trans_b = g->tb, c.ab = g->ab;
  c.M = g->BM + 17 + (variant % 2) * g->BM;
  c.N = g->BN + (variant % 3 == 0 ? 5 : 8);
  c.K = g->BK + 24;
  return c;
}

static void gen_accs(const char *arch)
{
  /* The issue's reproduction: S = Q K^T (64 x 64 x 64, f16, B^T), copied to a shared tile (f32,
   * then f16), then to global memory. */
  static const gcfg repro = {64, 64, 64, 128, 0, 0, false, true, F16};
  ccase r = gemm_template(&repro, 0);
  r.M = r.N = r.K = 64;
  gen_acc_out(arch, &r, SINK_S, F32, F32, F32, false);
  gen_acc_out(arch, &r, SINK_S, F16, F32, F32, false);
  int n = (int)(sizeof GEMMS / sizeof *GEMMS);
  for (int gi = 0; gi < n; gi++) {
    ccase g = gemm_template(&GEMMS[gi], gi);
    ty a = (ty)(gi % 3), b = (ty)((gi + 1) % 3), h = gi % 2 ? BF16 : F16, h2 = gi % 2 ? F16 : BF16;
    /* A 128 x 256 f32 tile in shared memory (128 KiB) beside the operands is over sm_80's budget. */
    bool big = GEMMS[gi].BM * GEMMS[gi].BN > 16384;
    ty sa = big && a == F32 ? h : a, sb_ = big && b == F32 ? h : b, s32 = big ? h2 : F32;
    gen_acc_out(arch, &g, SINK_G, F32, F32, F32, false);
    gen_acc_out(arch, &g, SINK_G, F32, F32, h, true);
    gen_acc_out(arch, &g, SINK_S, s32, F32, F32, gi % 2);
    gen_acc_out(arch, &g, SINK_S, h, F32, b, false);
    gen_acc_out(arch, &g, SINK_F, h, F32, a, true);
    gen_acc_out(arch, &g, SINK_FS, h2, sa, b, false);
    gen_acc_out(arch, &g, SINK_SE, sa, F32, h, gi % 2 == 0);
    g = gemm_template(&GEMMS[gi], gi + 1);
    gen_acc_in(arch, &g, SRC_G, a, F32);
    gen_acc_in(arch, &g, SRC_S, sb_, h);
    gen_acc_in(arch, &g, SRC_F, h2, F32);
    gen_acc_in(arch, &g, SRC_ES, sa, b);
    gen_acc_in(arch, &g, SRC_PAR, sa, F32);
    if (!big) { /* two stages of a 128 x 256 tile are over sm_80's budget */
      gen_acc_in(arch, &g, SRC_PIPE, sb_, F32);
      gen_acc_in(arch, &g, SRC_PPAR, h2, F32);
    }
    g = gemm_template(&GEMMS[gi], gi + 2);
    if (g.K > g.BK) /* one K tile: the swizzled tile is the whole of A's K */
      g.K = g.BK - 8;
    gen_swiz(arch, &g, gi % 2, gi % 3 != 0);
    gen_swiz(arch, &g, gi % 2 == 0, gi % 3 == 0);
  }
}

static void gen_attns(const char *arch)
{
  static const struct {
    int BM, BN, D, DV, T;
    ty ab;
  } A[] = {
      {64, 64, 64, 64, 128, F16},   {64, 64, 64, 128, 128, BF16}, {64, 128, 64, 64, 128, F16},
      {128, 64, 64, 128, 256, F16}, {64, 64, 128, 64, 128, BF16}, {64, 32, 64, 96, 128, F16},
  };
  for (size_t i = 0; i < sizeof A / sizeof *A; i++)
    for (int rows = 0; rows < 2; rows++)
      for (int regp = 0; regp < 2; regp++)
        gen_attn(arch, A[i].BM, A[i].BN, A[i].D, A[i].DV, A[i].T, A[i].ab, rows, regp,
                 A[i].BM + 21 + rows * A[i].BM + regp * 16, 2 * A[i].BN + 7 + rows * 30 + regp * 9);
}

static void gen_rowss(const char *arch)
{
  static const struct {
    int BR, BN, T;
  } S[] = {{8, 128, 128}, {4, 256, 128}, {16, 64, 256}, {2, 1024, 256}, {1, 1000, 128}, {32, 32, 128}};
  int s = 0;
  for (size_t i = 0; i < sizeof S / sizeof *S; i++)
    for (int v = 0; v < 2; v++, s++)
      gen_rows(arch, S[i].BR, S[i].BN, S[i].T, s % 2, (s / 2) % 2, v, (ty)(s % 3), (ty)((s + 1) % 3),
               3 * S[i].BR + (S[i].BR > 1 ? 1 : 0), v ? S[i].BN : S[i].BN - 3);
}

/* The register A operand: wgmma shapes (a warpgroup's 64 rows, BK 64) and one that sm_90a lowers
 * to mma.sync (BK 32); K over several iterations of every stage count, M and N ragged (B's rows
 * 16-byte aligned where B is [K, N], so that its copy can be TMA's). The last two take a's columns
 * in quads with B^T (ir.h, k_quads: mma.sync, at most 4 n8 pieces of acc per 16 rows of a): 32 x 16
 * on two warps on both targets (decoding's tile), 64 x 32 on sm_80 (a warpgroup's wgmma on sm_90a). */
static void gen_regas(const char *arch)
{
  static const gcfg R[] = {
      {64, 64, 64, 128, 0, 0, false, false, F16},   {64, 128, 64, 128, 0, 0, false, true, BF16},
      {128, 64, 64, 256, 0, 0, false, false, BF16}, {64, 256, 64, 128, 0, 0, false, true, F16},
      {128, 128, 32, 256, 0, 0, false, false, F16}, {32, 16, 128, 64, 0, 0, false, true, BF16},
      {64, 32, 64, 128, 0, 0, false, true, F16},
  };
  static const struct {
    int stages, overlap;
    bool nows, persistent;
  } V[] = {{3, 1, false, false},
           {2, 1, true, false},
           {3, 0, false, false},
           {2, 1, false, true},
           {3, 1, false, false}};
  for (size_t r = 0; r < sizeof R / sizeof *R; r++)
    for (size_t v = 0; v < sizeof V / sizeof *V; v++) {
      ccase g;
      memset(&g, 0, sizeof g);
      g.BM = R[r].BM, g.BN = R[r].BN, g.BK = R[r].BK, g.T = R[r].T, g.trans_b = R[r].tb, g.ab = R[r].ab;
      g.M = 2 * g.BM + 17 - (int64_t)v * 3;
      g.N = g.trans_b ? g.BN + 5 + (int64_t)v : 2 * g.BN + 8;
      g.K = 4 * g.BK + 24;
      ty t1 = v == 4 ? F32 : v == 3 ? (g.ab == F16 ? BF16 : F16) : g.ab; /* f32: cp.async, not TMA */
      gen_rega(arch, &g, t1, V[v].stages, V[v].overlap, V[v].nows, V[v].persistent);
    }
}

static void build_matrix(const char *only_arch)
{
  for (int a = 0; a < 2; a++) {
    if (only_arch && strcmp(only_arch, ARCHS[a]))
      continue;
    gen_moves(ARCHS[a]);
    gen_accs(ARCHS[a]);
    gen_attns(ARCHS[a]);
    gen_rowss(ARCHS[a]);
    gen_regas(ARCHS[a]);
  }
}

/* ------------------------------------------------------------------------- random kernels */

/* --random N: N kernels drawn from the same families with random parameters (tile shapes, thread
 * counts, warp grids, chains of tiles and their types, transposes, sinks and sources, tensor sizes),
 * each valid by construction (the limits below keep registers, shared memory and the gemm shapes
 * inside what the language accepts) and each with the families' exact reference. */

static uint64_t rstate;
static int rnd_in(int lo, int hi) { return lo + (int)(gpu_next_random(&rstate) % (uint64_t)(hi - lo + 1)); }
static int rnd_of(const int *v, int n) { return v[rnd_in(0, n - 1)]; }
static ty rnd_ty(void) { return (ty)rnd_in(0, 2); }

/* A warp grid wm x wn of nwarps warps that cuts every [BM, N[i]] into 16x8 pieces. */
static bool grid_fits(int nwarps, int wm, int BM, const int *N, int n)
{
  if (wm < 1 || nwarps % wm || BM % (16 * wm))
    return false;
  for (int i = 0; i < n; i++)
    if (N[i] % (8 * (nwarps / wm)))
      return false;
  return true;
}

static bool any_grid(int nwarps, int BM, const int *N, int n)
{
  for (int wm = 1; wm <= nwarps; wm++)
    if (grid_fits(nwarps, wm, BM, N, n))
      return true;
  return false;
}

/* A random gemm configuration (registers of the accumulator <= 128 per thread; shared tiles, with
 * `extra` bytes more, within 96 KiB); the warp grid: the compiler's, or a random one that fits,
 * asked for in full or by one factor. */
static bool random_gemm(ccase *g, int extra, bool wgmma_shape)
{
  static const int warps[] = {1, 2, 4, 8}, bms[] = {16, 32, 64, 128}, bns[] = {8, 16, 24, 32, 64, 128, 256},
                   bks[] = {16, 32, 64};
  for (int tries = 0; tries < 100; tries++) {
    memset(g, 0, sizeof *g);
    int nw = rnd_of(warps, 4);
    g->T = 32 * nw;
    g->BM = rnd_of(bms, 4), g->BN = rnd_of(bns, 7), g->BK = rnd_of(bks, 3);
    g->ab = rnd_in(0, 1) ? F16 : BF16;
    g->trans_a = rnd_in(0, 3) == 0, g->trans_b = rnd_in(0, 1);
    if (wgmma_shape) { /* one that sm_90a lowers to wgmma: whole warpgroups, 64-wide operand rows */
      nw = rnd_in(1, 2) * 4;
      g->T = 32 * nw, g->BM = 16 * nw, g->BK = 64, g->BN = 64 * rnd_in(1, 4);
      g->trans_a = false;
    }
    if (g->BM * g->BN / g->T > 128 || (g->BM + g->BN) * g->BK * 2 + extra > 96 * 1024)
      continue;
    int N[1] = {g->BN};
    if (!any_grid(nw, g->BM, N, 1))
      continue;
    int how = wgmma_shape ? 0 : rnd_in(0, 3);
    if (how) {
      int wm;
      do
        wm = rnd_in(1, nw);
      while (!grid_fits(nw, wm, g->BM, N, 1));
      if (how != 2)
        g->wm = wm;
      if (how != 1)
        g->wn = nw / wm;
    }
    g->M = g->BM * rnd_in(1, 3) + rnd_in(1, g->BM - 1 > 0 ? g->BM - 1 : 1);
    g->N = g->BN * rnd_in(1, 2) + rnd_in(-(g->BN / 2), g->BN / 2);
    g->K = g->BK * rnd_in(1, 3) + rnd_in(-(g->BK / 2), g->BK / 2);
    if (g->N < 1)
      g->N = 1;
    if (g->K < 1)
      g->K = 1;
    return true;
  }
  return false;
}

static void random_case(const char *arch)
{
  ccase g;
  switch (rnd_in(0, 6)) {
  case 0: { /* a chain of 1 to 4 tiles */
    static const int Ts[] = {32, 64, 128, 256, 512}, Rs[] = {1, 2, 4, 8, 16, 32, 64, 128, 256},
                     Cs[] = {8, 12, 24, 32, 64, 100, 128, 256, 512, 1024};
    int T, R, C;
    do {
      T = rnd_of(Ts, 5), R = rnd_of(Rs, 9), C = rnd_of(Cs, 10);
    } while (R * C > T * 32 || R * C * 4 * 4 > 96 * 1024);
    int n = rnd_in(1, 4), kind[4];
    ty t[4];
    bool loop[4];
    for (int i = 0; i < n; i++) {
      kind[i] = rnd_in(0, 1) ? SH : FR;
      t[i] = rnd_ty();
      loop[i] = rnd_in(0, 1);
    }
    gen_move(arch, R, C, T, R * rnd_in(1, 3) + rnd_in(0, R), C * rnd_in(1, 2) + rnd_in(-(C / 2), C / 2),
             rnd_ty(), rnd_ty(), n, kind, t, loop);
    return;
  }
  case 1:
  case 2:
    if (!random_gemm(&g, 0, !strcmp(arch, "sm_90a") && rnd_in(0, 1)))
      return;
    if (g.BM * g.BN * 4 + (g.BM + g.BN) * g.BK * 2 > 96 * 1024)
      return random_case(arch); /* room for an f32 tile of the accumulator beside the operands */
    gen_acc_out(arch, &g, rnd_in(0, NSINKS - 1), rnd_ty(), rnd_ty(), rnd_ty(), rnd_in(0, 1));
    return;
  case 3:
    if (!random_gemm(&g, 0, !strcmp(arch, "sm_90a") && rnd_in(0, 1)))
      return;
    if (2 * g.BM * g.BN * 4 + (g.BM + g.BN) * g.BK * 2 > 96 * 1024)
      return random_case(arch);
    gen_acc_in(arch, &g, rnd_in(0, NSRCS - 1), rnd_ty(), rnd_ty());
    return;
  case 4: { /* attention: S [BM, BN] -> P -> O [BM, DV], rows of S into O or not */
    static const int warps[] = {1, 2, 4, 8}, bns[] = {16, 32, 64, 128}, ds[] = {16, 32, 64, 128},
                     dvs[] = {16, 32, 64, 96, 128};
    for (;;) {
      int nw = rnd_of(warps, 4), BM = 16 * nw * rnd_in(1, 2), BN = rnd_of(bns, 4), D = rnd_of(ds, 4),
          DV = rnd_of(dvs, 5), T = 32 * nw;
      bool rows = rnd_in(0, 1), regp = rnd_in(0, 1);
      int N2[2] = {BN, DV};
      if (BM > 128 || BM * BN / T > 128 || BM * DV / T > 128 ||
          (BM * D + BN * D + BN * DV + BM * BN) * 2 + BM * 4 > 96 * 1024 ||
          !any_grid(nw, BM, N2, rows ? 2 : 1) || !any_grid(nw, BM, N2 + 1, 1))
        continue;
      if (regp && BM % (16 * nw)) /* P in registers: one column of warps */
        continue;
      gen_attn(arch, BM, BN, D, DV, T, rnd_in(0, 1) ? F16 : BF16, rows, regp,
               BM * rnd_in(1, 2) + rnd_in(1, 40), BN * rnd_in(1, 3) + rnd_in(1, BN));
      return;
    }
  }
  case 5: { /* a register A operand filled in a pipelined loop */
    if (!random_gemm(&g, 0, true))
      return;
    ty t1 = rnd_ty();
    int S = rnd_in(2, 4);
    if (S * (g.BM * g.BK * (int)ty_size(t1) + g.BK * g.BN * 2) > 96 * 1024)
      return random_case(arch);
    g.wm = g.wn = 0;
    g.K = g.BK * rnd_in(1, 6) + rnd_in(-(g.BK / 2), g.BK / 2);
    gen_rega(arch, &g, t1, S, rnd_in(0, 1), rnd_in(0, 1), rnd_in(0, 1));
    return;
  }
  default: { /* rows of an elementwise fragment */
    static const int Ts[] = {32, 64, 128, 256, 512}, BRs[] = {1, 2, 4, 8, 16, 32},
                     BNs[] = {8, 32, 100, 128, 256, 1000, 2048};
    int T, BR, BN;
    do {
      T = rnd_of(Ts, 5), BR = rnd_of(BRs, 6), BN = rnd_of(BNs, 7);
    } while (BR * BN > T * 64);
    gen_rows(arch, BR, BN, T, rnd_in(0, 1), rnd_in(0, 1), rnd_in(0, 1), rnd_ty(), rnd_ty(),
             BR * rnd_in(1, 4) + rnd_in(0, BR), rnd_in(1, BN));
    return;
  }
  }
}

static void build_random(int n, uint64_t seed, const char *only_arch)
{
  rstate = seed ^ 0x5DEECE66Dull;
  for (int i = 0; i < n; i++) {
    int before = ncases;
    random_case(only_arch ? only_arch : ARCHS[rnd_in(0, 1)]);
    if (ncases > before) {
      char name[sizeof cases[0].name];
      snprintf(name, sizeof name, "random#%d %.180s", i, cases[ncases - 1].name);
      memcpy(cases[ncases - 1].name, name, sizeof name);
    }
  }
}

/* ------------------------------------------------------------------------------ compiling */

static int next_compile;
static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;

static void compile_case(ccase *c)
{
  tl_jit_options o = tl_jit_default_options();
  o.arch = c->arch;
  o.filename = "conform.tl";
  char err[8192];
  char *ptx = NULL;
  tl_status st = tl_jit_compile_ptx(NULL, c->src.p, c->src.n, &o, &ptx, err, sizeof err);
  if (st != TL_OK) {
    c->err = strdup(err);
    return;
  }
  c->ptx = ptx;
  c->lowering = strstr(ptx, "wgmma.mma_async") ? "wgmma" : strstr(ptx, "mma.sync") ? "mma.sync" : NULL;
}

static void *compile_worker(void *arg)
{
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&compile_lock);
    int i = next_compile++;
    pthread_mutex_unlock(&compile_lock);
    if (i >= ncases)
      return NULL;
    compile_case(&cases[i]);
  }
}

static void compile_all(int threads)
{
  pthread_t th[32];
  if (threads > 32)
    threads = 32;
  int started = 0;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&th[i], NULL, compile_worker, NULL) == 0)
      started++;
  if (!started)
    compile_worker(NULL);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
}

/* ------------------------------------------------------------------------- data and checks */

enum { GUARD = 256 };

static uint64_t to_bits(ty t, double x)
{
  if (t == F32) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  return t == F16 ? tl_f16_from_float((float)x) : tl_bf16_from_float((float)x);
}

static double from_bits(ty t, const void *p, int64_t i)
{
  if (t == F32) {
    float f;
    memcpy(&f, (const char *)p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, (const char *)p + 2 * i, 2);
  return t == F16 ? tl_f16_to_float(h) : tl_bf16_to_float(h);
}

static bool poisoned(ty t, const void *p, int64_t i)
{
  const unsigned char *b = (const unsigned char *)p + (size_t)i * ty_size(t);
  for (size_t k = 0; k < ty_size(t); k++)
    if (b[k] != 0xFF)
      return false;
  return true;
}

static double draw(int data, uint64_t *s)
{
  uint64_t r = gpu_next_random(s);
  switch (data) {
  case D_FINE: return (double)((int64_t)(r % 262145) - 131072) / 65536.0;
  case D_INT2: return (double)((int64_t)(r % 5) - 2);
  case D_INT64: return (double)((int64_t)(r % 129) - 64);
  default: return (double)((int64_t)(r % 65) - 32) / 8.0;
  }
}

/* Compares an output (n elements, then GUARD poisoned ones) with exp (NaN: must stay poisoned).
 * Returns the number of bad elements; the first is described in why. */
static int64_t check_output(const ccase *c, const tdesc *d, const void *got, const double *exp, int64_t n,
                            char *why, size_t why_size)
{
  int64_t bad = 0;
  for (int64_t i = 0; i < n + GUARD; i++) {
    bool ok;
    double g = 0, e = i < n ? exp[i] : NAN;
    if (isnan(e))
      ok = poisoned(d->t, got, i);
    else {
      g = from_bits(d->t, got, i);
      ok = !poisoned(d->t, got, i) && g == e;
    }
    if (!ok && bad++ == 0) {
      int64_t cols = d->rank > 1 ? dim_value(c, d->dim[d->rank - 1]) : 1;
      if (i >= n)
        snprintf(why, why_size, "%s: guard element %lld after the end was written", d->name,
                 (long long)(i - n));
      else if (isnan(e))
        snprintf(why, why_size, "%s[%lld, %lld] was written (%g) but lies outside what the kernel may write",
                 d->name, (long long)(i / cols), (long long)(i % cols), g);
      else if (poisoned(d->t, got, i))
        snprintf(why, why_size, "%s[%lld, %lld] was never written (expected %.9g)", d->name,
                 (long long)(i / cols), (long long)(i % cols), e);
      else
        snprintf(why, why_size, "%s[%lld, %lld] = %.9g, expected %.9g", d->name, (long long)(i / cols),
                 (long long)(i % cols), g, e);
    }
  }
  return bad;
}

/* Host data of one case: values (as doubles, exactly representable in each tensor's type) and
 * the expected outputs. */
typedef struct hostdata {
  double *v[8];
  void *bits[8]; /* inputs as uploaded, outputs as downloaded (n + GUARD elements) */
  int64_t n[8];
} hostdata;

static void host_prepare(const ccase *c, uint64_t seed, hostdata *h)
{
  uint64_t s = seed;
  for (int i = 0; i < c->nt; i++) {
    const tdesc *d = &c->t[i];
    h->n[i] = tensor_elems(c, d);
    h->v[i] = xrealloc(NULL, (size_t)(h->n[i] + 1) * sizeof(double));
    h->bits[i] = xrealloc(NULL, (size_t)(h->n[i] + GUARD) * ty_size(d->t));
    memset(h->bits[i], 0xFF, (size_t)(h->n[i] + GUARD) * ty_size(d->t));
    for (int64_t k = 0; k < h->n[i]; k++) {
      if (d->out) {
        h->v[i][k] = NAN;
        continue;
      }
      double x = rnd(d->t, draw(d->data, &s));
      h->v[i][k] = x;
      uint64_t b = to_bits(d->t, x);
      memcpy((char *)h->bits[i] + (size_t)k * ty_size(d->t), &b, ty_size(d->t));
    }
  }
  reference(c, h->v);
}

static void host_free(const ccase *c, hostdata *h)
{
  for (int i = 0; i < c->nt; i++) {
    free(h->v[i]);
    free(h->bits[i]);
  }
}

/* -------------------------------------------------------------------------------- on the GPU */

static int family_pass[NFAMILIES][3], family_fail[NFAMILIES][3];

static int lowering_index(const ccase *c) { return !c->lowering ? 0 : strcmp(c->lowering, "wgmma") ? 1 : 2; }

static void tally(const ccase *c, bool ok)
{
  if (ok)
    family_pass[c->family][lowering_index(c)]++;
  else
    family_fail[c->family][lowering_index(c)]++;
}

static bool run_case(tl_context *ctx, const ccase *c, uint64_t seed, bool verbose)
{
  char why[512] = "";
  if (!c->ptx) {
    gpu_report(false, "%s: does not compile:\n%s", c->name, c->err ? c->err : "?");
    return false;
  }
  tl_module *mod = NULL;
  tl_kernel *k = NULL;
  if (tl_module_load_ptx(ctx, c->ptx, &mod) != TL_OK || tl_module_get_kernel(mod, "k", &k) != TL_OK) {
    gpu_report(false, "%s: load: %s", c->name, tl_context_message(ctx));
    tl_module_unload(mod);
    return false;
  }
  hostdata h;
  memset(&h, 0, sizeof h);
  host_prepare(c, seed, &h);
  tl_devptr dev[8] = {0};
  int64_t shapes[8][3];
  tl_arg args[8];
  bool ok = true;
  for (int i = 0; i < c->nt && ok; i++) {
    const tdesc *d = &c->t[i];
    size_t bytes = (size_t)(h.n[i] + GUARD) * ty_size(d->t);
    for (int r = 0; r < d->rank; r++)
      shapes[i][r] = dim_value(c, d->dim[r]);
    ok = tl_malloc(ctx, bytes, &dev[i]) == TL_OK && tl_memcpy_htod(ctx, dev[i], h.bits[i], bytes) == TL_OK;
    args[i] = tl_arg_tensor(dev[i], DT[d->t], d->rank, shapes[i]);
  }
  if (!ok)
    snprintf(why, sizeof why, "device memory: %s", tl_context_message(ctx));
  else if (tl_launch(k, args, c->nt, NULL) != TL_OK || tl_synchronize(ctx) != TL_OK) {
    snprintf(why, sizeof why, "launch: %s", tl_context_message(ctx));
    ok = false;
  }
  int64_t bad = 0;
  for (int i = 0; i < c->nt && ok; i++) {
    const tdesc *d = &c->t[i];
    if (!d->out)
      continue;
    size_t bytes = (size_t)(h.n[i] + GUARD) * ty_size(d->t);
    if (tl_memcpy_dtoh(ctx, h.bits[i], dev[i], bytes) != TL_OK) {
      snprintf(why, sizeof why, "copy back: %s", tl_context_message(ctx));
      ok = false;
      break;
    }
    char w[512] = "";
    int64_t b = check_output(c, d, h.bits[i], h.v[i], h.n[i], w, sizeof w);
    if (b && !bad)
      snprintf(why, sizeof why, "%s", w);
    bad += b;
  }
  for (int i = 0; i < c->nt; i++)
    tl_free(ctx, dev[i]);
  host_free(c, &h);
  tl_module_unload(mod);
  if (ok && bad)
    ok = false;
  if (ok)
    gpu_report(true, "%s [%s]", c->name, c->lowering ? c->lowering : "no gemm");
  else if (bad)
    gpu_report(false, "%s [%s]: %lld wrong elements; first: %s", c->name,
               c->lowering ? c->lowering : "no gemm", (long long)bad, why);
  else
    gpu_report(false, "%s: %s", c->name, why);
  if (verbose || !ok)
    printf("---- source\n%s----\n", c->src.p);
  return ok;
}

/* ------------------------------------------------------------------------------- self-test */

/* The checker must reject each broken output of a known case, and accept the reference. */
static int self_test(void)
{
  build_matrix("sm_90a");
  int rejected = 0, wrong = 0, tried = 0;
  const int picks[] = {0, 7, 70, 100, 150, ncases - 1};
  for (size_t pi = 0; pi < sizeof picks / sizeof *picks; pi++) {
    const ccase *c = &cases[picks[pi] < ncases ? picks[pi] : 0];
    hostdata h;
    memset(&h, 0, sizeof h);
    host_prepare(c, 42 + pi, &h);
    for (int i = 0; i < c->nt; i++) {
      const tdesc *d = &c->t[i];
      if (!d->out)
        continue;
      int64_t n = h.n[i];
      size_t es = ty_size(d->t);
      unsigned char *good = xrealloc(NULL, (size_t)(n + GUARD) * es),
                    *bad = xrealloc(NULL, (size_t)(n + GUARD) * es);
      memset(good, 0xFF, (size_t)(n + GUARD) * es);
      int64_t first = -1, second = -1;
      for (int64_t k = 0; k < n; k++)
        if (!isnan(h.v[i][k])) {
          uint64_t b = to_bits(d->t, h.v[i][k]);
          memcpy(good + k * es, &b, es);
          if (first < 0)
            first = k;
          else if (second < 0 && h.v[i][k] != h.v[i][first])
            second = k;
        }
      char why[512];
      if (check_output(c, d, good, h.v[i], n, why, sizeof why) != 0) {
        printf("self-test: the reference of '%s' %s was rejected: %s\n", c->name, d->name, why);
        wrong++;
      }
      for (int m = 0; m < 4 && first >= 0; m++) {
        memcpy(bad, good, (size_t)(n + GUARD) * es);
        switch (m) {
        case 0: /* two elements swapped */
          if (second < 0)
            continue;
          memcpy(bad + first * es, good + second * es, es);
          memcpy(bad + second * es, good + first * es, es);
          break;
        case 1: memset(bad + first * es, 0xFF, es); break; /* never written */
        case 2: memset(bad + n * es, 0, es); break;        /* a write past the end */
        case 3: { /* an element outside what the kernel writes, written */
          int64_t k = 0;
          while (k < n && !isnan(h.v[i][k]))
            k++;
          if (k == n)
            continue;
          memset(bad + k * es, 0, es);
          break;
        }
        }
        tried++;
        if (check_output(c, d, bad, h.v[i], n, why, sizeof why) == 0) {
          printf("self-test: broken output %d of '%s' %s was accepted\n", m, c->name, d->name);
          wrong++;
        } else
          rejected++;
      }
      free(good);
      free(bad);
    }
    host_free(c, &h);
  }
  /* The reference itself: a transposed product differs from the product (the data are not
   * symmetric), and a rounding through f16 is not the identity on the movement data. */
  printf("self-test: %d of %d broken outputs rejected, %d problems\n", rejected, tried, wrong);
  return wrong || rejected == 0 ? 1 : 0;
}

/* ------------------------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
  const char *arch = NULL, *filter = NULL, *dump = NULL;
  bool list = false, compile_only = false, verbose = false;
  int threads = 8, sample = 1, random = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--self-test"))
      return self_test();
    else if (!strcmp(argv[i], "--list"))
      list = true;
    else if (!strcmp(argv[i], "--compile-only"))
      compile_only = true;
    else if (!strcmp(argv[i], "-v"))
      verbose = true;
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc)
      arch = argv[++i];
    else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
      filter = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sample") && i + 1 < argc)
      sample = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--random") && i + 1 < argc)
      random = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      i++;
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
      dump = argv[++i];
    else {
      fprintf(stderr,
              "usage: gpu_conform [--seed S] [--arch sm_90a|sm_80] [--filter SUBSTR] [--threads N] "
              "[--sample N] [--random N] [--list] [--dump DIR] [--compile-only] [-v] | --self-test\n");
      return 2;
    }
  }
  if (arch && strcmp(arch, "sm_90a") && strcmp(arch, "sm_80")) {
    fprintf(stderr, "gpu_conform: --arch takes sm_90a or sm_80\n");
    return 2;
  }
  uint64_t seed = gpu_seed_from_args(argc, argv, NULL);
  if (random > 0)
    build_random(random, seed, arch);
  else
    build_matrix(arch);
  if (filter || sample > 1) {
    int k = 0;
    for (int i = 0; i < ncases; i++)
      if ((!filter || strstr(cases[i].name, filter)) && i % (sample > 1 ? sample : 1) == 0)
        cases[k++] = cases[i];
      else
        free(cases[i].src.p);
    ncases = k;
  }
  if (dump) { /* case i as DIR/ARCH/case-I.tl, its name on the first line; for tests/ptx_identical.sh */
    char path[4096];
    for (int i = 0; i < ncases; i++) {
      snprintf(path, sizeof path, "%s/%s", dump, cases[i].arch);
      mkdir(path, 0777);
      snprintf(path, sizeof path, "%s/%s/case-%04d.tl", dump, cases[i].arch, i);
      FILE *f = fopen(path, "w");
      if (!f || fprintf(f, "// %s\n%s", cases[i].name, cases[i].src.p) < 0 || fclose(f) != 0) {
        fprintf(stderr, "gpu_conform: cannot write %s\n", path);
        return 1;
      }
    }
    if (random > 0)
      printf("gpu_conform: %d sources written under %s (--random %d --seed %llu)\n", ncases, dump, random,
             (unsigned long long)seed);
    else
      printf("gpu_conform: %d sources written under %s\n", ncases, dump);
    return 0;
  }
  if (list) {
    for (int i = 0; i < ncases; i++)
      printf("%s\n", cases[i].name);
    return 0;
  }
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  compile_all(threads);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double compile_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (compile_only) {
    int failed = 0, wg = 0, ms = 0;
    for (int i = 0; i < ncases; i++) {
      const ccase *c = &cases[i];
      if (!c->ptx) {
        printf("FAIL %s: does not compile:\n%s---- source\n%s----\n", c->name, c->err ? c->err : "?",
               c->src.p);
        failed++;
      } else if (verbose)
        printf("ok %s [%s]\n", c->name, c->lowering ? c->lowering : "no gemm");
      wg += c->lowering && !strcmp(c->lowering, "wgmma");
      ms += c->lowering && !strcmp(c->lowering, "mma.sync");
    }
    printf("gpu_conform: %d cases compiled (%d with wgmma, %d with mma.sync) in %.1f s, %d failed%s",
           ncases - failed, wg, ms, compile_s, failed, random ? "" : "\n");
    if (random)
      printf("; %d random kernels of seed %llu (replay: --random %d --seed %llu)\n", ncases,
             (unsigned long long)seed, random, (unsigned long long)seed);
    return failed ? 1 : 0;
  }
  bool no_gpu = false;
  tl_context *ctx = gpu_open("gpu_conform", &no_gpu);
  if (!ctx)
    return no_gpu ? GPU_EXIT_NO_GPU : 1;
  printf("gpu_conform: seed %llu, %d cases, compiled in %.1f s on %d threads\n", (unsigned long long)seed,
         ncases, compile_s, threads);
  for (int i = 0; i < ncases; i++)
    tally(&cases[i], run_case(ctx, &cases[i], seed + (uint64_t)i * 7919, verbose));
  clock_gettime(CLOCK_MONOTONIC, &t2);
  printf("\n%-10s %8s %8s %8s   (passed/failed by lowering)\n", "family", "no gemm", "mma.sync", "wgmma");
  for (int f = 0; f < NFAMILIES; f++)
    printf("%-10s %4d/%-3d %4d/%-3d %4d/%-3d\n", FAMILY[f], family_pass[f][0], family_fail[f][0],
           family_pass[f][1], family_fail[f][1], family_pass[f][2], family_fail[f][2]);
  printf("time: %.1f s (compile %.1f s)\n",
         (double)(t2.tv_sec - t0.tv_sec) + (double)(t2.tv_nsec - t0.tv_nsec) * 1e-9, compile_s);
  printf("%d passed, %d failed\n", gpu_passed, gpu_failed);
  for (int i = 0; i < ncases; i++) {
    free(cases[i].ptx);
    free(cases[i].err);
    free(cases[i].src.p);
  }
  free(cases);
  tl_context_destroy(ctx);
  return gpu_failed ? 1 : 0;
}
