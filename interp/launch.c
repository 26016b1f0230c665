/* launch.c: a launch's arguments matched to a kernel's parameters, the same for
 * both levels (tile.c, thread.c). */
#include "interp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const InterpArg *find_arg(const InterpArg *args, int nargs, const char *name)
{
  for (int i = 0; i < nargs; i++)
    if (args[i].name && !strcmp(args[i].name, name))
      return &args[i];
  return NULL;
}

/* NULL for a tensor map: the interpreter reads its tensor directly. */
static const char *param_name(const Kernel *k, int p)
{
  int h = k->params[p].index;
  return k->params[p].is_tmap ? NULL : k->params[p].is_buffer ? k->bufs[h].name : k->vars[h].name;
}

bool interp_bind_args(const Kernel *k, const InterpArg *args, int nargs, Val *vars, void **data, Diags *d)
{
  for (int i = 0; i < nargs; i++) {
    bool known = false;
    for (int p = 0; p < k->nparams && !known; p++)
      known = args[i].name && param_name(k, p) && !strcmp(param_name(k, p), args[i].name);
    if (!known) {
      error_at(d, k->loc, "kernel '%s' has no parameter named '%s'", k->name,
               args[i].name ? args[i].name : "(null)");
      return false;
    }
  }
  for (int p = 0; p < k->nparams; p++) {
    int h = k->params[p].index;
    const char *name = param_name(k, p);
    if (!name)
      continue;
    const InterpArg *a = find_arg(args, nargs, name);
    if (!a && !k->params[p].is_buffer && k->vars[h].kind == VAR_TMA_OK) {
      vars[h] = (Val){
          .i = 1}; /* as on a GPU whose driver made the maps; pass tma.ok = 0 for the other path */
      continue;
    }
    if (!a || (k->params[p].is_buffer && !a->data)) {
      error_at(d, k->loc, "no %s given for parameter '%s' of kernel '%s'", a ? "data" : "argument", name,
               k->name);
      return false;
    }
    if (k->params[p].is_buffer) {
      data[h] = a->data;
      continue;
    }
    TypeKind t = k->vars[h].type;
    vars[h] = type_is_float(t) ? (Val){.f = val_round(t, a->f)} : (Val){.i = type_wrap_int(t, a->i)};
    if (k->vars[h].kind == VAR_SIZE && vars[h].i < 0) {
      error_at(d, k->loc, "size '%s' is negative (%lld)", name, (long long)vars[h].i);
      return false;
    }
  }
  for (int v = 0; v < k->nvars; v++)
    if (k->vars[v].kind == VAR_CONST)
      vars[v] = k->vars[v].cval_is_float ? (Val){.f = k->vars[v].cval_f} : (Val){.i = k->vars[v].cval_i};
  return true;
}

/* ---------------------------------------------------------------- blocks and tensors */

int64_t interp_tensor_layout(const Buffer *B, const int64_t *dims, const int64_t *declared, int64_t *stride)
{
  int64_t step = 1, last = 0;
  bool empty = false;
  for (int d = B->rank - 1; d >= 0; d--) {
    stride[d] = declared ? declared[d] : step;
    step *= dims[d];
    empty |= dims[d] <= 0;
    if (dims[d] > 0)
      last += (dims[d] - 1) * stride[d];
  }
  return empty ? 0 : last + 1;
}

void interp_blocks_free(BlockWrites *w)
{
  for (int b = 0; w->by && b < w->nbufs; b++)
    free(w->by[b]);
  free(w->by);
  *w = (BlockWrites){0};
}

/* The record of tensor b (elems elements), made on first use; NULL if there is no memory for it
 * (the checks are then skipped for b, nothing else changes). */
static int64_t *record(BlockWrites *w, int b, int nbufs, int64_t elems)
{
  if (!w->by) {
    w->by = calloc((size_t)nbufs + 1, sizeof *w->by);
    w->nbufs = w->by ? nbufs : 0;
  }
  if (b >= w->nbufs)
    return NULL;
  if (!w->by[b] && elems > 0)
    w->by[b] = calloc((size_t)elems, sizeof **w->by);
  return w->by[b];
}

/* An element that atomics updated holds -(1 + F + (S + 1) * 2^31): F the first block that did,
 * S another one (-1: none yet). */
static const int64_t ATOMIC_SECOND = (int64_t)1 << 31;

static int64_t other_atomic(int64_t rec, int64_t block)
{
  int64_t x = -rec - 1, first = x % ATOMIC_SECOND, second = x / ATOMIC_SECOND - 1;
  return first != block ? first : second;
}

int64_t interp_tensor_write(BlockWrites *w, int nbufs, int b, int64_t elems, TypeKind t, const void *data,
                            int64_t off, int64_t block, Val v)
{
  int64_t *by = record(w, b, nbufs, elems);
  if (!by)
    return -1;
  if (by[off] < 0) {
    int64_t other = other_atomic(by[off], block);
    by[off] = block + 1;
    return other;
  }
  int64_t other = by[off] - 1;
  by[off] = block + 1;
  bool same = val_bits(t, val_load(t, data, off)) == val_bits(t, v);
  return other >= 0 && other != block && !same ? other : -1;
}

int64_t interp_tensor_atomic(BlockWrites *w, int nbufs, int b, int64_t elems, int64_t off, int64_t block)
{
  int64_t *by = record(w, b, nbufs, elems);
  if (!by)
    return -1;
  if (by[off] > 0 && by[off] - 1 != block)
    return by[off] - 1;
  if (by[off] >= 0)
    by[off] = -(1 + block);
  else {
    int64_t x = -by[off] - 1;
    if (x % ATOMIC_SECOND != block && x / ATOMIC_SECOND == 0)
      by[off] = -(1 + x + (block + 1) * ATOMIC_SECOND);
  }
  return -1;
}

int64_t interp_tensor_read(BlockWrites *w, int b, int64_t off, int64_t block)
{
  if (!w->by || b >= w->nbufs || !w->by[b])
    return -1;
  if (w->by[b][off] < 0)
    return other_atomic(w->by[b][off], block);
  int64_t other = w->by[b][off] - 1;
  return other >= 0 && other != block ? other : -1;
}

const char *interp_order_text(char *buf, size_t cap, const char *elem, bool write, const int64_t grid[3],
                              int64_t other)
{
  snprintf(
      buf, cap,
      "%s was written by block (%lld, %lld, %lld)%s: blocks run in no particular order on the GPU, so %s",
      elem, (long long)(other % grid[0]), (long long)(other / grid[0] % grid[1]),
      (long long)(other / grid[0] / grid[1]), write ? " with another value" : "",
      write ? "which value stays is undefined" : "whether this read sees it is undefined");
  return buf;
}
