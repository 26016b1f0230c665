/* tile.c: the tile-level interpreter, the reference semantics of .tl.
 *
 * It runs the tile IR the frontend makes (after specialize) on the CPU, one
 * block of the grid after another, with the meaning docs/language.md gives each
 * statement; nothing about threads, layouts or barriers.  In the manner of Lua's
 * lvm.c: one switch over statement kinds (exec) and one over expression kinds
 * (eval), each case a few lines, the tile operations in functions of their own.
 *
 * Values.  Every value is a Val, and every operation on one is value.c's, which
 * the thread level (thread.c) shares: integers wrapped to their width, floats
 * rounded to their type whenever they are made.
 *
 * Memory.  A global tensor is the caller's array in its storage type.  A shared,
 * fragment or local tile is an array of Val of the tile's shape, one per block
 * (all threads of a block see the same tile at this level), with a bit per
 * element that says whether the block wrote it: reading an element whose bit
 * is clear is an error, as is any index outside a tile or a tensor (copies
 * excepted: their edges are masked, as the language says).
 *
 * Errors.  The first problem stops the run: fail() records it in the caller's
 * Diags with the statement's or expression's line and the block, and sets
 * in->failed; eval returns a zero Val from then on and exec returns false. */
#include "interp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A buffer's storage for the run: a tile's elements and written bits (this
 * block's), or a tensor's data and extents. */
typedef struct {
  Val *v;
  uint8_t *written;
  void *data;
  int64_t dims[TL_MAX_RANK];
  int64_t
      stride[TL_MAX_RANK]; /* elements per step of each dimension: row-major, or a tensor's strides(...) */
  int64_t n;               /* elements (a tensor's: those its data spans) */
} Store;

typedef struct {
  const Kernel *k;
  Diags *d;
  Val *vars;           /* by variable handle */
  Store *bufs;         /* by buffer handle */
  int64_t block[3], grid[3];
  int64_t blk;         /* the block's number, x fastest */
  BlockWrites written; /* tensors: which block wrote each element */
  InterpStats stats;
  int64_t steps, max_steps;
  SrcLoc loc; /* the statement being run */
  bool failed;
} Interp;

/* ---------------------------------------------------------------- errors */

static void fail(Interp *in, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(Interp *in, SrcLoc loc, const char *fmt, ...)
{
  if (in->failed)
    return;
  in->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  error_at(in->d, loc.line ? loc : in->loc, "%s (kernel '%s', block %lld, %lld, %lld)", msg, in->k->name,
           (long long)in->block[0], (long long)in->block[1], (long long)in->block[2]);
}

/* "[3, 7]": an element's index, for messages. */
static const char *index_text(char *buf, size_t cap, const int64_t *idx, int n)
{
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "[", (long long)idx[i]);
  if (len < cap)
    snprintf(buf + len, cap - len, "]");
  return buf;
}

static const Val zero;

/* ---------------------------------------------------------------- memory */

/* The offset of idx[0..rank) in buffer b (row-major, or by a tensor's strides), or -1 (and an error)
 * if an index is outside it. */
static int64_t offset_of(Interp *in, SrcLoc loc, int b, const int64_t *idx)
{
  const Buffer *B = &in->k->bufs[b];
  const Store *S = &in->bufs[b];
  int64_t off = 0;
  for (int d = 0; d < B->rank; d++) {
    if (idx[d] < 0 || idx[d] >= S->dims[d]) {
      char t[96];
      fail(in, loc, "index %s is out of bounds of %s '%s': dimension %d has size %lld",
           index_text(t, sizeof t, idx, B->rank), scope_name(B->scope), B->name, d, (long long)S->dims[d]);
      return -1;
    }
    off += idx[d] * S->stride[d];
  }
  return off;
}

/* The index of element off of buffer b, for messages. */
static void unflatten(const Interp *in, int b, int64_t off, int64_t *idx)
{
  for (int d = in->k->bufs[b].rank - 1; d >= 0; d--) {
    idx[d] = off % in->bufs[b].dims[d];
    off /= in->bufs[b].dims[d];
  }
}

/* Element off of buffer b (idx, for the message). */
static Val read_at(Interp *in, SrcLoc loc, int b, int64_t off, const int64_t *idx)
{
  const Buffer *B = &in->k->bufs[b];
  Store *S = &in->bufs[b];
  if (B->scope == SCOPE_GLOBAL) {
    in->stats.tensor_elements++;
    int64_t other = interp_tensor_read(&in->written, b, off, in->blk);
    if (other >= 0) {
      char t[96], e[160], msg[400];
      snprintf(e, sizeof e, "global '%s'%s", B->name, index_text(t, sizeof t, idx, B->rank));
      fail(in, loc, "%s", interp_order_text(msg, sizeof msg, e, false, in->grid, other));
      return zero;
    }
    return val_load(B->elem, S->data, off);
  }
  if (!S->written[off]) {
    char t[96];
    fail(in, loc, "%s '%s'%s is read before anything wrote it", scope_name(B->scope), B->name,
         index_text(t, sizeof t, idx, B->rank));
    return zero;
  }
  return S->v[off];
}

static void write_at(Interp *in, int b, int64_t off, Val v)
{
  const Buffer *B = &in->k->bufs[b];
  Store *S = &in->bufs[b];
  if (B->scope == SCOPE_GLOBAL) {
    in->stats.tensor_elements++;
    int64_t other = interp_tensor_write(&in->written, in->k->nbufs, b, S->n, B->elem, S->data, off, in->blk,
                                        v);
    if (other >= 0) {
      char t[96], e[160], msg[400];
      int64_t idx[TL_MAX_RANK];
      unflatten(in, b, off, idx);
      if (buffer_strided(B)) /* an offset has no one index in a view */
        snprintf(e, sizeof e, "global '%s' (its element %lld elements from the first)", B->name,
                 (long long)off);
      else
        snprintf(e, sizeof e, "global '%s'%s", B->name, index_text(t, sizeof t, idx, B->rank));
      fail(in, in->loc, "%s", interp_order_text(msg, sizeof msg, e, true, in->grid, other));
      return;
    }
    val_store(B->elem, S->data, off, v);
    return;
  }
  S->v[off] = v;
  S->written[off] = 1;
}

/* ---------------------------------------------------------------- expressions */

static Val eval(Interp *in, const Expr *e);

/* Evaluates the indices args[0..n) into idx; false after an error. */
static bool eval_indices(Interp *in, Expr *const *args, int n, int64_t *idx)
{
  for (int i = 0; i < n; i++)
    idx[i] = eval(in, args[i]).i;
  return !in->failed;
}

static Val binary(Interp *in, const Expr *e)
{
  TypeKind t = e->a->type;
  Val a = eval(in, e->a);
  /* && and || look at their right side only when it matters: the GPU evaluates
   * both (they have no effects), but a guarded x / i must not trip the checks */
  if (e->op == OP_LAND && !a.i)
    return (Val){.i = 0};
  if (e->op == OP_LOR && a.i)
    return (Val){.i = 1};
  Val b = eval(in, e->b);
  if (in->failed)
    return zero;
  if (e->op == OP_LAND || e->op == OP_LOR)
    return (Val){.i = b.i != 0};
  Val r;
  ValStatus st = val_binary((OpKind)e->op, t, e->b->type, a, b, &r);
  if (st != VAL_OK) {
    char msg[128];
    fail(in, e->loc, "%s", val_status_text(st, (OpKind)e->op, t, e->b->type, b, msg, sizeof msg));
  }
  return r;
}

static Val unary(Interp *in, const Expr *e) { return val_unary((OpKind)e->op, e->type, eval(in, e->a)); }

/* The intrinsics (value.c). */
static Val call(Interp *in, const Expr *e)
{
  Val x[3] = {zero, zero, zero}, r = zero;
  for (int i = 0; i < e->nargs && i < 3; i++)
    x[i] = eval(in, e->args[i]);
  if (in->failed)
    return zero;
  if (!val_intrinsic((IntrinsicKind)e->op, e->type, x, &r))
    fail(in, e->loc, "'%s' is a thread-level intrinsic", intrinsic_name((IntrinsicKind)e->op));
  return r;
}

static Val load(Interp *in, const Expr *e)
{
  int64_t idx[TL_MAX_RANK];
  if (!eval_indices(in, e->args, e->nargs, idx))
    return zero;
  int64_t off = offset_of(in, e->loc, e->buf, idx);
  return off < 0 ? zero : read_at(in, e->loc, e->buf, off, idx);
}

/* One switch over the expression kinds (ir.h's ExprKind). */
static Val eval(Interp *in, const Expr *e)
{
  if (in->failed)
    return zero;
  switch (e->kind) {
  case EX_INT: return (Val){.i = type_wrap_int(e->type, e->i)};
  case EX_FLOAT: return (Val){.f = val_round(e->type, e->f)};
  case EX_VAR: return in->vars[e->var];
  case EX_LOAD: return load(in, e);
  case EX_UNARY: return unary(in, e);
  case EX_BINARY: return binary(in, e);
  case EX_CALL: return call(in, e);
  case EX_CAST: return val_convert(e->a->type, e->type, eval(in, e->a));
  case EX_SELECT: return eval(in, e->a).i ? eval(in, e->b) : eval(in, e->c); /* only the side chosen */
  case EX_ALIGNED: fail(in, e->loc, "an alignment test is thread-level IR"); return zero;
  }
  DIE("expression kind %d", e->kind);
}

/* ---------------------------------------------------------------- tile operations */

/* The next index of a row-major walk over dims[0..rank); false after the last. */
static bool next_index(int64_t *idx, const int64_t *dims, int rank)
{
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d])
      return true;
    idx[d] = 0;
  }
  return false;
}

/* A side of a copy, resolved: the tensor's origin (R indices) or a whole tile. */
typedef struct {
  int buf;
  bool tensor;
  int64_t origin[TL_MAX_RANK];
  const Region *r;
} Side;

static bool side_of(Interp *in, const Region *r, Side *s)
{
  *s = (Side){.buf = r->buf, .tensor = in->k->bufs[r->buf].scope == SCOPE_GLOBAL, .r = r};
  return !r->origin || eval_indices(in, r->origin, r->rank, s->origin);
}

/* The index in side s of element t of a tile of rank r: the tensor's dimensions
 * the tile spans (its last r, or those its slices named) start at the origin;
 * false if it falls outside the tensor. */
static bool place(Interp *in, const Side *s, const int64_t *t, int r, int64_t *off)
{
  const Store *S = &in->bufs[s->buf];
  int R = in->k->bufs[s->buf].rank;
  if (!s->tensor) {
    int64_t o = 0;
    for (int d = 0; d < r; d++)
      o = o * S->dims[d] + t[d];
    *off = o;
    return true;
  }
  int64_t o = 0;
  for (int d = 0; d < R; d++) {
    int td = region_tile_dim(s->r, r, d);
    int64_t i = s->origin[d] + (td >= 0 ? t[td] : 0);
    if (i < 0 || i >= S->dims[d])
      return false;
    o += i * S->stride[d];
  }
  *off = o;
  return true;
}

/* copy(src, dst): element by element over the tile's shape, converted to the
 * destination's type; outside a tensor, reads give 0 and writes are dropped. */
static bool copy_tile(Interp *in, const Stmt *st)
{
  Side src, dst;
  if (!side_of(in, &st->src, &src) || !side_of(in, &st->dst, &dst))
    return false;
  const Buffer *tile = &in->k->bufs[src.tensor ? dst.buf : src.buf];
  TypeKind from = in->k->bufs[src.buf].elem, to = in->k->bufs[dst.buf].elem;
  int r = tile->rank;
  int64_t t[TL_MAX_RANK] = {0};
  do {
    int64_t so, doff;
    if (!place(in, &dst, t, r, &doff))
      continue; /* masked write: the source element is not read either */
    Val v = place(in, &src, t, r, &so) ? read_at(in, st->loc, src.buf, so, t) : zero; /* 0 in every type */
    if (in->failed)
      return false;
    write_at(in, dst.buf, doff, val_convert(from, to, v));
  } while (next_index(t, tile->tile_shape, r));
  return true;
}

static bool fill_tile(Interp *in, const Stmt *st)
{
  const Buffer *B = &in->k->bufs[st->buf];
  Val v = eval(in, st->value);
  if (in->failed)
    return false;
  v = val_convert(st->value->type, B->elem, v);
  for (int64_t i = 0; i < in->bufs[st->buf].n; i++)
    write_at(in, st->buf, i, v);
  return true;
}

/* Fails unless every element of tile b was written (gemm's operands). */
static bool all_written(Interp *in, int b)
{
  const Store *S = &in->bufs[b];
  for (int64_t i = 0; i < S->n; i++)
    if (!S->written[i]) {
      int64_t idx[TL_MAX_RANK];
      unflatten(in, b, i, idx);
      read_at(in, in->loc, b, i, idx);
      return false;
    }
  return true;
}

/* c[m, n] += sum over k of op(a)[m, k] * op(b)[k, n]: each product and each
 * sum in f32, k in order, starting from c (the tensor cores' order differs:
 * results agree within f32 rounding, not bit for bit); for 8-bit inputs in
 * 32-bit integers, exactly as the tensor cores. */
static bool gemm_tiles(Interp *in, const Stmt *st)
{
  const Buffer *A = &in->k->bufs[st->a], *C = &in->k->bufs[st->c];
  if (!all_written(in, st->a) || !all_written(in, st->b) || !all_written(in, st->c))
    return false;
  int64_t M = C->tile_shape[0], N = C->tile_shape[1], K = A->tile_shape[st->trans_a ? 0 : 1];
  const Val *a = in->bufs[st->a].v, *b = in->bufs[st->b].v;
  Val *c = in->bufs[st->c].v;
  if (C->elem == TY_I32) { /* 8-bit inputs: exact products, the sum wrapping to 32 bits */
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        uint32_t acc = (uint32_t)c[m * N + n].i;
        for (int64_t k = 0; k < K; k++)
          acc += (uint32_t)(a[st->trans_a ? k * M + m : m * K + k].i *
                            b[st->trans_b ? n * K + k : k * N + n].i);
        c[m * N + n].i = (int32_t)acc;
      }
    return true;
  }
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      float acc = (float)c[m * N + n].f;
      for (int64_t k = 0; k < K; k++) {
        float x = (float)a[st->trans_a ? k * M + m : m * K + k].f;
        float y = (float)b[st->trans_b ? n * K + k : k * N + n].f;
        acc += x * y;
      }
      c[m * N + n].f = acc;
    }
  return true;
}

/* dst = reduce(src) over dimension .dim, each element widened to dst's type and
 * combined in order; with .accumulate, combined with dst's old value too. */
static bool reduce_tile(Interp *in, const Stmt *st)
{
  const Buffer *S = &in->k->bufs[st->src_buf], *D = &in->k->bufs[st->buf];
  int64_t outer = 1, len = S->tile_shape[st->dim], inner = 1;
  for (int d = 0; d < S->rank; d++)
    if (d < st->dim)
      outer *= S->tile_shape[d];
    else if (d > st->dim)
      inner *= S->tile_shape[d];
  if (!all_written(in, st->src_buf))
    return false;
  const Val *src = in->bufs[st->src_buf].v;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      Val acc = val_convert(S->elem, D->elem, src[o * len * inner + i]);
      for (int64_t j = 1; j < len; j++)
        acc = val_combine(st->reduce, D->elem, acc,
                          val_convert(S->elem, D->elem, src[(o * len + j) * inner + i]));
      int64_t off = o * inner + i;
      if (st->accumulate) {
        int64_t idx[TL_MAX_RANK];
        unflatten(in, st->buf, off, idx);
        Val old = read_at(in, st->loc, st->buf, off, idx);
        if (in->failed)
          return false;
        acc = val_combine(st->reduce, D->elem, old, acc);
      }
      write_at(in, st->buf, off, acc);
    }
  return true;
}

/* ---------------------------------------------------------------- statements */

static bool exec(Interp *in, const Stmt *s);

/* for v0, v1, ... in KIND(e0, e1, ...): every kind runs its iterations in order
 * here; a parallel loop's iterations must not depend on each other anyway. */
static bool for_loop(Interp *in, const Stmt *s)
{
  int64_t ext[TL_MAX_RANK], idx[TL_MAX_RANK] = {0};
  if (!eval_indices(in, s->extents, s->nvars, ext))
    return false;
  for (int d = 0; d < s->nvars; d++)
    if (ext[d] <= 0)
      return true;
  do {
    for (int d = 0; d < s->nvars; d++)
      in->vars[s->vars[d]] = (Val){.i = idx[d]};
    if (!exec(in, s->then_s))
      return false;
  } while (next_index(idx, ext, s->nvars));
  return true;
}

/* buf[idx] = value; an atomic: buf[idx] = op(buf[idx], value), in any order with other blocks'. */
static bool store(Interp *in, const Stmt *s, bool atomic)
{
  int64_t idx[TL_MAX_RANK];
  Val v = eval(in, s->value);
  if (!eval_indices(in, s->idx, s->nidx, idx))
    return false;
  int64_t off = offset_of(in, s->loc, s->buf, idx);
  if (off < 0)
    return false;
  const Buffer *B = &in->k->bufs[s->buf];
  v = val_convert(s->value->type, B->elem, v);
  if (!atomic) {
    write_at(in, s->buf, off, v);
    return !in->failed;
  }
  if (B->scope == SCOPE_GLOBAL) {
    Store *S = &in->bufs[s->buf];
    in->stats.tensor_elements++;
    int64_t other = interp_tensor_atomic(&in->written, in->k->nbufs, s->buf, S->n, off, in->blk);
    if (other >= 0) {
      char t[96], e[160], msg[400];
      snprintf(e, sizeof e, "global '%s'%s", B->name, index_text(t, sizeof t, idx, B->rank));
      fail(in, s->loc, "%s", interp_order_text(msg, sizeof msg, e, false, in->grid, other));
      return false;
    }
    val_store(B->elem, S->data, off, val_combine(s->reduce, B->elem, val_load(B->elem, S->data, off), v));
    return true;
  }
  Val old = read_at(in, s->loc, s->buf, off, idx);
  if (in->failed)
    return false;
  write_at(in, s->buf, off, val_combine(s->reduce, B->elem, old, v));
  return true;
}

/* One switch over the statement kinds (ir.h's TL_STMT_KINDS). */
static bool exec(Interp *in, const Stmt *s)
{
  in->loc = s->loc;
  if (in->max_steps && ++in->steps > in->max_steps) {
    fail(in, s->loc, "the run exceeded its budget of %lld statements", (long long)in->max_steps);
    return false;
  }
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++)
      if (!exec(in, s->body[i]))
        return false;
    return true;
  case ST_LET:
  case ST_ASSIGN: in->vars[s->var] = eval(in, s->value); return !in->failed;
  case ST_STORE: return store(in, s, false);
  case ST_ATOMIC: return store(in, s, true);
  case ST_IF: {
    Val c = eval(in, s->cond);
    if (in->failed)
      return false;
    const Stmt *next = c.i ? s->then_s : s->else_s;
    return !next || exec(in, next);
  }
  case ST_FOR: return for_loop(in, s);
  case ST_COPY: return copy_tile(in, s);
  case ST_FILL: return fill_tile(in, s);
  case ST_GEMM: return gemm_tiles(in, s);
  case ST_REDUCE: return reduce_tile(in, s);
  case ST_EVAL: eval(in, s->value); return !in->failed;
  case ST_BARRIER: /* one block's tiles are one array here: nothing to wait for */
  case ST_CP_COMMIT:
  case ST_CP_WAIT: return true;
  default: fail(in, s->loc, "'%s' is a thread-level statement", stmt_spelling(s->kind)); return false;
  }
}

/* ---------------------------------------------------------------- a run */

/* The parameters' values (launch.c): sizes, scalars and constants into vars,
 * tensors' data. */
static bool bind_args(Interp *in, const InterpArg *args, int nargs)
{
  void **data = calloc((size_t)in->k->nbufs + 1, sizeof *data);
  bool ok = data && interp_bind_args(in->k, args, nargs, in->vars, data, in->d);
  for (int b = 0; ok && b < in->k->nbufs; b++)
    in->bufs[b].data = data[b];
  free(data);
  in->failed |= !ok;
  return ok;
}

/* Tensors' extents from the sizes; tiles' arrays.  false if out of memory. */
static bool allocate(Interp *in)
{
  const Kernel *k = in->k;
  for (int b = 0; b < k->nbufs; b++) {
    const Buffer *B = &k->bufs[b];
    Store *S = &in->bufs[b];
    int64_t declared[TL_MAX_RANK];
    for (int d = 0; d < B->rank; d++) {
      S->dims[d] = B->scope == SCOPE_GLOBAL ? eval(in, B->shape[d]).i : B->tile_shape[d];
      declared[d] = buffer_strided(B) ? eval(in, B->stride[d]).i : 0;
    }
    S->n = interp_tensor_layout(B, S->dims, buffer_strided(B) ? declared : NULL, S->stride);
    if (B->scope == SCOPE_GLOBAL)
      continue;
    S->v = calloc((size_t)S->n, sizeof *S->v);
    S->written = calloc((size_t)S->n, 1);
    if (!S->v || !S->written) {
      fail(in, B->loc, "out of memory for tile '%s' (%lld elements)", B->name, (long long)S->n);
      return false;
    }
  }
  return !in->failed;
}

bool interp_tile_run(const Kernel *k, const InterpArg *args, int nargs, const InterpOptions *opt, Diags *d)
{
  Interp in = {.k = k, .d = d, .loc = k->loc, .max_steps = opt ? opt->max_steps : 0};
  in.vars = calloc((size_t)k->nvars + 1, sizeof *in.vars);
  in.bufs = calloc((size_t)k->nbufs + 1, sizeof *in.bufs);
  bool ok = in.vars && in.bufs;
  if (!ok)
    error_at(d, k->loc, "out of memory");
  int num_sms = opt && opt->num_sms > 0 ? opt->num_sms : 4;
  for (int v = 0; ok && v < k->nvars; v++)
    if (k->vars[v].kind == VAR_NUM_SMS)
      in.vars[v] = (Val){.i = num_sms};
  ok = ok && bind_args(&in, args, nargs) && allocate(&in);
  for (int g = 0; ok && g < 3; g++) {
    in.grid[g] = g < k->grid_rank ? eval(&in, k->grid[g]).i : 1;
    if (in.grid[g] < 0)
      fail(&in, k->loc, "grid dimension %d of kernel '%s' is negative (%lld)", g, k->name,
           (long long)in.grid[g]);
    ok = !in.failed;
  }
  for (int v = 0; ok && v < k->nvars; v++)
    if (k->vars[v].kind == VAR_GRID_DIM)
      in.vars[v] = (Val){.i = in.grid[k->vars[v].dim]};
  /* every block, x fastest; use_swizzle only reorders them */
  int64_t nblocks = ok ? in.grid[0] * in.grid[1] * in.grid[2] : 0;
  for (int64_t blk = 0; ok && blk < nblocks; blk++) {
    in.block[0] = blk % in.grid[0];
    in.block[1] = blk / in.grid[0] % in.grid[1];
    in.block[2] = blk / in.grid[0] / in.grid[1];
    in.blk = blk;
    in.stats.blocks++;
    for (int v = 0; v < k->nvars; v++)
      if (k->vars[v].kind == VAR_BLOCK_IDX)
        in.vars[v] = (Val){.i = in.block[k->vars[v].dim]};
    for (int b = 0; b < k->nbufs; b++)
      if (in.bufs[b].written)
        memset(in.bufs[b].written, 0, (size_t)in.bufs[b].n);
    ok = exec(&in, k->body);
  }
  for (int b = 0; in.bufs && b < k->nbufs; b++) {
    free(in.bufs[b].v);
    free(in.bufs[b].written);
  }
  if (opt && opt->stats)
    *opt->stats = in.stats;
  interp_blocks_free(&in.written);
  free(in.vars);
  free(in.bufs);
  return ok && !in.failed;
}
