/* launch.h: one launch of a kernel on the interpreter with made-up arguments, in four copies (one per
 * run to compare), for tests/unit/test_levels.c (and gpu_levels) and tests/fuzz/fuzz_interp.c.
 * Header-only: each program includes it once. The caller picks the sizes and scalars (launch_scalar),
 * then launch_tensors makes every tensor from them: multiples of 1/8 in [-2, 2] (integers 0 to 7), so
 * that sums and products are exact in f32 in any order, followed by `guard` elements that no kernel
 * should write (-1234.5, or 77). */
#ifndef TILEC_TESTS_LAUNCH_H
#define TILEC_TESTS_LAUNCH_H

#include <stdlib.h>
#include <string.h>

#include "interp.h"

enum { LAUNCH_MAX_ARGS = 64, LAUNCH_COPIES = 4 };

typedef struct {
  InterpArg args[LAUNCH_MAX_ARGS];
  int nargs;
  void *data[LAUNCH_COPIES][LAUNCH_MAX_ARGS]; /* per copy, per argument (NULL for scalars) */
  int64_t elems[LAUNCH_MAX_ARGS];             /* a tensor's elements, without the guard */
  int64_t guard;
  TypeKind type[LAUNCH_MAX_ARGS];
} Launch;

/* The index of the argument named name, or -1. */
static inline int launch_arg(const Launch *L, const char *name)
{
  for (int i = 0; i < L->nargs; i++)
    if (!strcmp(L->args[i].name, name))
      return i;
  return -1;
}

/* A tensor's extent: a fixed one, or the value of the size argument it names (-1 if none). */
static inline int64_t launch_dim(const Launch *L, const Kernel *k, const Expr *e)
{
  if (e->kind == EX_INT)
    return e->i;
  int i = e->kind == EX_VAR ? launch_arg(L, k->vars[e->var].name) : -1;
  return i < 0 ? -1 : L->args[i].i;
}

/* Empties L for k; false if k has more parameters than L holds. */
static inline bool launch_begin(Launch *L, const Kernel *k)
{
  memset(L, 0, sizeof *L);
  return k->nparams <= LAUNCH_MAX_ARGS;
}

/* Appends k's scalar and size parameters, each given its value by pick(state, var). */
static inline void launch_scalars(Launch *L, const Kernel *k,
                                  void (*pick)(void *state, const Var *v, InterpArg *a), void *state)
{
  for (int p = 0; p < k->nparams; p++)
    if (!k->params[p].is_buffer && !k->params[p].is_tmap && k->vars[k->params[p].index].kind != VAR_TMA_OK) {
      const Var *v = &k->vars[k->params[p].index];
      InterpArg *a = &L->args[L->nargs++];
      a->name = v->name;
      pick(state, v, a);
    }
}

/* Is size var v some tensor's dimension? */
static inline bool launch_is_dim(const Kernel *k, int v)
{
  for (int b = 0; b < k->nbufs; b++)
    for (int d = 0; k->bufs[b].scope == SCOPE_GLOBAL && d < k->bufs[b].rank; d++)
      if (k->bufs[b].shape[d]->kind == EX_VAR && k->bufs[b].shape[d]->var == v)
        return true;
  return false;
}

/* The sizes only strides(...) names, from the drawn dimensions: a view whose elements do not overlap,
 * with 3 elements of padding per step (strides(lda, 1) over [M, N]: lda = N + 3; strides(1, ldt):
 * ldt = M + 3), each stride from the innermost dimension out past what the ones inside it span. */
static inline void launch_strides(Launch *L, const Kernel *k)
{
  for (int b = 0; b < k->nbufs; b++) {
    const Buffer *B = &k->bufs[b];
    if (B->scope != SCOPE_GLOBAL || !buffer_strided(B))
      continue;
    for (int d = B->rank - 1; d >= 0; d--) {
      const Expr *e = B->stride[d];
      int i = e->kind == EX_VAR ? launch_arg(L, k->vars[e->var].name) : -1;
      if (i < 0 || launch_is_dim(k, e->var))
        continue;
      int64_t reach = 1;
      for (int o = 0; o < B->rank; o++) {
        int64_t s = o == d ? 0 : launch_dim(L, k, B->stride[o]), x = launch_dim(L, k, B->shape[o]);
        if (o != d && s > 0 && x > 0 && s * x > reach)
          reach = s * x;
      }
      L->args[i].i = reach + 3;
    }
  }
}

/* Appends k's tensors, the sizes being known, every copy the same; next(state) gives random bits.
 * false (L to be released) when a tensor would hold more than max_elems elements or memory runs out. */
static inline bool launch_tensors(Launch *L, const Kernel *k, int64_t guard, int64_t max_elems,
                                  uint64_t (*next)(void *state), void *state)
{
  L->guard = guard;
  launch_strides(L, k);
  for (int p = 0; p < k->nparams; p++) {
    if (!k->params[p].is_buffer)
      continue;
    const Buffer *B = &k->bufs[k->params[p].index];
    int i = L->nargs++;
    int64_t n = 1, dims[TL_MAX_RANK], declared[TL_MAX_RANK], stride[TL_MAX_RANK];
    for (int d = 0; d < B->rank; d++) {
      int64_t e = launch_dim(L, k, B->shape[d]);
      if (e < 0 || e > max_elems || (n *= e) > max_elems)
        return false;
      dims[d] = e;
      declared[d] = buffer_strided(B) ? launch_dim(L, k, B->stride[d]) : 0;
      if (buffer_strided(B) && (declared[d] < 1 || declared[d] > max_elems))
        return false;
    }
    if (buffer_strided(B) && (n = interp_tensor_layout(B, dims, declared, stride)) > max_elems)
      return false; /* a view: its storage, from its first element to its last */
    L->args[i].name = B->name;
    L->elems[i] = n;
    L->type[i] = B->elem;
    size_t bytes = (size_t)(n + guard) * (size_t)type_bytes(B->elem);
    for (int c = 0; c < LAUNCH_COPIES; c++)
      if (!(L->data[c][i] = malloc(bytes)))
        return false;
    for (int64_t e = 0; e < n + guard; e++) {
      Val v;
      if (type_is_float(B->elem))
        v.f = val_round(B->elem, e < n ? (double)((int64_t)(next(state) % 33) - 16) / 8 : -1234.5);
      else
        v.i = type_wrap_int(B->elem, e < n ? (int64_t)(next(state) % 8) : 77);
      val_store(B->elem, L->data[0][i], e, v);
    }
    for (int c = 1; c < LAUNCH_COPIES; c++)
      memcpy(L->data[c][i], L->data[0][i], bytes);
  }
  return true;
}

/* Points the tensors' arguments at copy c. */
static inline void launch_use(Launch *L, int c)
{
  for (int i = 0; i < L->nargs; i++)
    L->args[i].data = L->data[c][i];
}

static inline void launch_release(Launch *L)
{
  for (int c = 0; c < LAUNCH_COPIES; c++)
    for (int i = 0; i < L->nargs; i++)
      free(L->data[c][i]);
}

/* The first element of argument i where copies a and b differ (val_close; loose for the GPU), or -1. */
static inline int64_t launch_differs(const Launch *L, int i, int a, int b, bool loose, int64_t *count)
{
  int64_t first = -1;
  *count = 0;
  for (int64_t e = 0; L->data[a][i] && e < L->elems[i] + L->guard; e++)
    if (!val_close(L->type[i], val_load(L->type[i], L->data[a][i], e), val_load(L->type[i], L->data[b][i], e),
                   loose)) {
      ++*count;
      if (first < 0)
        first = e;
    }
  return first;
}

#endif
