/* plan.c: check launch arguments against a kernel's metadata and lay out cuLaunchKernel's
 * parameter array. Pure (no driver), so that every rule here is unit-tested on machines without a
 * GPU; tl_launch is this plus one driver call.
 *
 * Why so many checks: a kernel trusts its sizes completely. A shape that disagrees with another
 * tensor's, or a size that wraps in 32 bits, is an out-of-bounds access on the GPU, reported (if at
 * all) as CUDA_ERROR_ILLEGAL_ADDRESS by some later call. Here it is one sentence naming the argument.
 *
 * Parameter layout: one 8-byte slot per PTX parameter, the value at the start of its slot, except
 * tensor maps, which take 128 bytes each in an area of their own, 64-byte aligned:
 *
 *   tensor -> u64 device pointer     scalar  -> its own size (bool 1 byte, f16/bf16 2 bytes of bits,
 *                                               e4m3/e5m2 1 byte of bits)
 *   size   -> i32                    tmap_ok -> u32 0
 *   tmap   -> 128 zero bytes (only the driver can encode a map: tl_launch does, when it can)
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

void tl_launch_plan_release(tl_launch_plan *plan)
{
  if (!plan)
    return;
  free(plan->heap_);
  free(plan->tmap_heap_);
  plan->heap_ = plan->tmap_heap_ = NULL;
  plan->params = NULL;
  plan->nparams = 0;
}

static const char *arg_kind_text(const tl_arg *a)
{
  return a->kind == TL_ARG_TENSOR ? "a tensor" : a->kind == TL_ARG_SCALAR ? "a scalar" : NULL;
}

/* Encode a scalar argument into its slot, checking it is representable. *as_int receives the value
 * for grid programs when it is an integer that fits in int64. */
static tl_status encode_scalar(const tl_kernel_info *k, int i, const tl_arg *a, void *slot, int64_t *as_int,
                               bool *int_known, char *err, size_t err_size)
{
  const char *name = k->params[i].name;
  int64_t lo = 0, hi = 0;
  uint64_t uhi = 0;
  *int_known = false;
  switch (a->dtype) {
  case TL_BOOL: {
    uint8_t v = a->value.i != 0;
    memcpy(slot, &v, 1);
    return TL_OK;
  }
  case TL_I8: lo = INT8_MIN, hi = INT8_MAX; break;
  case TL_I16: lo = INT16_MIN, hi = INT16_MAX; break;
  case TL_I32: lo = INT32_MIN, hi = INT32_MAX; break;
  case TL_I64: lo = INT64_MIN, hi = INT64_MAX; break;
  case TL_U8: uhi = UINT8_MAX; break;
  case TL_U16: uhi = UINT16_MAX; break;
  case TL_U32: uhi = UINT32_MAX; break;
  case TL_U64: uhi = UINT64_MAX; break;
  case TL_F16: {
    uint16_t v = tl_f16_from_double(a->value.f);
    memcpy(slot, &v, 2);
    return TL_OK;
  }
  case TL_BF16: {
    uint16_t v = tl_bf16_from_double(a->value.f);
    memcpy(slot, &v, 2);
    return TL_OK;
  }
  case TL_F32: {
    float v = (float)a->value.f;
    memcpy(slot, &v, 4);
    return TL_OK;
  }
  case TL_F64: memcpy(slot, &a->value.f, 8); return TL_OK;
  case TL_E4M3:
  case TL_E5M2: { /* saturating, as the GPU's cvt.rn.satfinite */
    uint8_t v = a->dtype == TL_E4M3 ? tl_e4m3_from_double(a->value.f) : tl_e5m2_from_double(a->value.f);
    memcpy(slot, &v, 1);
    return TL_OK;
  }
  }
  const size_t size = tl_dtype_size(a->dtype);
  if (hi != 0) { /* signed */
    int64_t v = a->value.i;
    if (v < lo || v > hi) {
      tl_fmt(err, err_size, "argument %d ('%s'): %lld does not fit in %s", i, name, (long long)v,
             tl_dtype_name(a->dtype));
      return TL_ERR_BAD_ARGUMENT;
    }
    /* little-endian host (x86-64, aarch64): the low bytes of the int64 are the narrow value */
    memcpy(slot, &v, size);
    *as_int = v;
    *int_known = true;
  } else {
    uint64_t v = a->value.u;
    if (v > uhi) {
      tl_fmt(err, err_size, "argument %d ('%s'): %llu does not fit in %s", i, name, (unsigned long long)v,
             tl_dtype_name(a->dtype));
      return TL_ERR_BAD_ARGUMENT;
    }
    memcpy(slot, &v, size);
    *as_int = (int64_t)v;
    *int_known = v <= INT64_MAX;
  }
  return TL_OK;
}

/* Where each size got its value, for the message when another use disagrees. */
typedef struct size_binding {
  int64_t value;
  int arg, dim; /* arg < 0: unbound */
  bool stride;  /* bound by the arg's stride `dim`, not its extent */
} size_binding;

static void describe_use(const tl_kernel_info *k, int arg, int dim, bool stride, char *buf, size_t size)
{
  /* "argument 0 ('A')", plus the dimension when the tensor has several, or the stride */
  if (stride)
    tl_fmt(buf, size, "argument %d ('%s', stride %d)", arg, k->params[arg].name, dim);
  else if (k->params[arg].rank > 1)
    tl_fmt(buf, size, "argument %d ('%s', dimension %d)", arg, k->params[arg].name, dim);
  else
    tl_fmt(buf, size, "argument %d ('%s')", arg, k->params[arg].name);
}

/* Bind size `param` to `value`, from arg's extent or stride `dim`; an error if an earlier use gave
 * another value. */
static tl_status bind_size(const tl_kernel_info *k, size_binding *sizes, int param, int64_t value, int arg,
                           int dim, bool stride, char *err, size_t err_size)
{
  size_binding *b = &sizes[param];
  if (b->arg < 0) {
    *b = (size_binding){value, arg, dim, stride};
    return TL_OK;
  }
  if (b->value == value)
    return TL_OK;
  char first[300], second[300];
  describe_use(k, b->arg, b->dim, b->stride, first, sizeof first);
  describe_use(k, arg, dim, stride, second, sizeof second);
  tl_fmt(err, err_size, "%s%s%ssize %s is %lld from %s but %lld from %s",
         b->stride || stride ? "kernel '" : "", b->stride || stride ? k->name : "",
         b->stride || stride ? "': " : "", k->params[param].name, (long long)b->value, first,
         (long long)value, second);
  return TL_ERR_BAD_ARGUMENT;
}

bool tl_contiguous_strides(int rank, const int64_t *shape, int64_t *out)
{
  bool ok = true;
  int64_t step = 1;
  for (int d = rank - 1; d >= 0; d--) {
    out[d] = step;
    ok &= !__builtin_mul_overflow(step, shape[d] > 0 ? shape[d] : 1, &step);
  }
  return ok;
}

bool tl_tensor_span(const tl_arg *a, uint64_t *elems)
{
  const int64_t *st = a->value.strides;
  if (!st) {
    uint64_t n = 1;
    for (int d = 0; d < a->rank; d++)
      if (__builtin_mul_overflow(n, (uint64_t)a->shape[d], &n))
        return false;
    *elems = n;
    return true;
  }
  uint64_t last = 0; /* the offset of the last element */
  for (int d = 0; d < a->rank; d++) {
    if (a->shape[d] == 0) {
      *elems = 0;
      return true;
    }
    uint64_t step;
    if (st[d] < 0 || __builtin_mul_overflow((uint64_t)(a->shape[d] - 1), (uint64_t)st[d], &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  return !__builtin_add_overflow(last, 1, elems) && *elems <= INT64_MAX;
}

/* The strides of tensor argument i: checked against the kernel's (a parameter declared without
 * strides(...) takes only contiguous ones; a declared one takes positive strides, each equal to a
 * fixed stride or binding a size), and the elements they reach must be addressable. */
static tl_status check_strides(const tl_kernel_info *k, int i, const tl_arg *a, size_binding *sizes,
                               char *err, size_t err_size)
{
  const tl_param *p = &k->params[i];
  const tl_dim *decl = k->strides ? k->strides[i] : NULL;
  const int64_t *given = a->value.strides;
  if (!decl && !given)
    return TL_OK;
  int64_t contiguous[64];
  if (p->rank > 64 || !tl_contiguous_strides(p->rank, a->shape, contiguous)) {
    tl_fmt(err, err_size, "argument %d ('%s'): the tensor has more elements than a launch can address", i,
           p->name);
    return TL_ERR_BAD_ARGUMENT;
  }
  const int64_t *st = given ? given : contiguous;
  bool empty = false;
  for (int d = 0; d < p->rank; d++)
    empty |= a->shape[d] == 0;
  for (int d = 0; d < p->rank; d++) {
    if (!decl) { /* a stride of a dimension of extent 1 (or of an empty tensor) is never used */
      if (st[d] != contiguous[d] && a->shape[d] > 1 && !empty) {
        tl_fmt(err, err_size,
               "argument %d ('%s'): kernel '%s' takes a contiguous tensor, but stride %d is %lld, not %lld; "
               "declare the parameter with strides(...) or pass a contiguous copy",
               i, p->name, k->name, d, (long long)st[d], (long long)contiguous[d]);
        return TL_ERR_BAD_ARGUMENT;
      }
      continue;
    }
    if (st[d] < 1) {
      tl_fmt(err, err_size, "argument %d ('%s'): stride %d is %lld; strides must be positive", i, p->name, d,
             (long long)st[d]);
      return TL_ERR_BAD_ARGUMENT;
    }
    if (decl[d].size_param < 0) {
      if (st[d] != decl[d].extent) {
        tl_fmt(err, err_size, "argument %d ('%s'): stride %d is %lld but kernel '%s' requires %lld", i,
               p->name, d, (long long)st[d], k->name, (long long)decl[d].extent);
        return TL_ERR_BAD_ARGUMENT;
      }
      continue;
    }
    tl_status s = bind_size(k, sizes, decl[d].size_param, st[d], i, d, true, err, err_size);
    if (s != TL_OK)
      return s;
  }
  uint64_t span;
  tl_arg view = *a;
  view.value.strides = st;
  if (!tl_tensor_span(&view, &span)) {
    tl_fmt(err, err_size, "argument %d ('%s'): the elements its shape and strides reach overflow 64 bits", i,
           p->name);
    return TL_ERR_BAD_ARGUMENT;
  }
  return TL_OK;
}

static tl_status check_tensor(const tl_kernel_info *k, int i, const tl_arg *a, size_binding *sizes,
                              void *slot, char *err, size_t err_size)
{
  const tl_param *p = &k->params[i];
  if (a->dtype != p->dtype) {
    tl_fmt(err, err_size, "argument %d ('%s'): expected a tensor of %s, got %s", i, p->name,
           tl_dtype_name(p->dtype), tl_dtype_name(a->dtype));
    return TL_ERR_BAD_ARGUMENT;
  }
  if (a->rank != p->rank) {
    tl_fmt(err, err_size, "argument %d ('%s'): expected a tensor of rank %d, got rank %d", i, p->name,
           p->rank, a->rank);
    return TL_ERR_BAD_ARGUMENT;
  }
  if (a->rank > 0 && !a->shape) {
    tl_fmt(err, err_size, "argument %d ('%s'): shape is NULL", i, p->name);
    return TL_ERR_BAD_ARGUMENT;
  }
  bool empty = false;
  for (int d = 0; d < p->rank; d++) {
    const int64_t extent = a->shape[d];
    if (extent < 0) {
      tl_fmt(err, err_size, "argument %d ('%s'): dimension %d is negative (%lld)", i, p->name, d,
             (long long)extent);
      return TL_ERR_BAD_ARGUMENT;
    }
    empty |= extent == 0;
    const tl_dim *dim = &p->dims[d];
    if (dim->size_param < 0) {
      if (extent != dim->extent) {
        tl_fmt(err, err_size, "argument %d ('%s'): dimension %d is %lld but the kernel requires %lld", i,
               p->name, d, (long long)extent, (long long)dim->extent);
        return TL_ERR_BAD_ARGUMENT;
      }
      continue;
    }
    tl_status s = bind_size(k, sizes, dim->size_param, extent, i, d, false, err, err_size);
    if (s != TL_OK)
      return s;
  }
  tl_status s = check_strides(k, i, a, sizes, err, err_size);
  if (s != TL_OK)
    return s;
  if (!empty && a->ptr == 0) {
    tl_fmt(err, err_size, "argument %d ('%s'): null device pointer for a non-empty tensor", i, p->name);
    return TL_ERR_BAD_ARGUMENT;
  }
  /* docs/abi.md: any alignment of the element type is correct, less is not. */
  const size_t align = tl_dtype_size(p->dtype);
  if (a->ptr % align != 0) {
    tl_fmt(err, err_size,
           "argument %d ('%s'): device pointer 0x%llx is not aligned to %zu bytes "
           "(the size of %s)",
           i, p->name, a->ptr, align, tl_dtype_name(p->dtype));
    return TL_ERR_BAD_ARGUMENT;
  }
  memcpy(slot, &a->ptr, sizeof a->ptr);
  return TL_OK;
}

/* cuLaunchKernel's limits on the grid, the same on every architecture since sm_30. */
static const int64_t grid_limit[3] = {INT32_MAX, 65535, 65535};

tl_status tl_plan_launch(const tl_kernel_info *k, const tl_arg *args, int nargs, tl_launch_plan *plan,
                         char *err, size_t err_size)
{
  return tl_plan_launch_sms(k, args, nargs, 0, plan, err, err_size);
}

/* The call itself: a plan to fill, a kernel, as many arguments as it takes. */
static tl_status check_call(const tl_kernel_info *k, const tl_arg *args, int nargs, int num_sms, char *err,
                            size_t err_size)
{
  if (!k || (nargs > 0 && !args) || nargs < 0) {
    tl_fmt(err, err_size, "tl_plan_launch: %s",
           !k          ? "kernel is NULL"
           : nargs < 0 ? "nargs is negative"
                       : "args is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  if (num_sms < 0) {
    tl_fmt(err, err_size, "tl_plan_launch_sms: num_sms is %d, not a multiprocessor count", num_sms);
    return TL_ERR_BAD_ARGUMENT;
  }
  if (nargs != k->nargs) {
    char names[512] = "";
    size_t used = 0;
    for (int i = 0; i < k->nargs && used + 1 < sizeof names; i++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", k->params[i].name);
    tl_fmt(err, err_size, "kernel '%s' takes %d argument%s (%s), got %d", k->name, k->nargs,
           k->nargs == 1 ? "" : "s", names, nargs);
    return TL_ERR_BAD_ARGUMENT;
  }
  return TL_OK;
}

/* What planning needs per parameter besides the plan's slots: where each size was bound, and the
 * integer values grid programs read. Inline for the usual handful of parameters. */
typedef struct scratch {
  size_binding *sizes;
  int64_t *values;
  bool *known; /* values[i] holds params[i]'s value */
  void *heap;
  size_binding small_sizes[TL_PLAN_INLINE_PARAMS];
  int64_t small_values[TL_PLAN_INLINE_PARAMS];
  bool small_known[TL_PLAN_INLINE_PARAMS];
} scratch;

/* The plan's tensor-map area, TL_TMAP_ALIGN-aligned and zero: inline, or allocated. NULL when out
 * of memory. */
static unsigned char *tmap_area(tl_launch_plan *plan, int ntmaps)
{
  unsigned char *area = plan->inline_tmaps_; /* not cleared with the rest of the plan: below */
  if (ntmaps > TL_PLAN_INLINE_TMAPS) {
    plan->tmap_heap_ = calloc((size_t)ntmaps * TL_TMAP_BYTES + TL_TMAP_ALIGN, 1);
    if (!plan->tmap_heap_)
      return NULL;
    area = plan->tmap_heap_;
  }
  area += (TL_TMAP_ALIGN - (uintptr_t)area % TL_TMAP_ALIGN) % TL_TMAP_ALIGN;
  memset(area, 0, (size_t)ntmaps * TL_TMAP_BYTES);
  return area;
}

/* The plan's slots and parameter pointers, and the scratch: inline, or one allocation each. */
static tl_status allocate(tl_launch_plan *plan, const tl_kernel_info *k, uint64_t **slots_out, scratch *s,
                          char *err, size_t err_size)
{
  const int n = k->nparams;
  int ntmaps = 0;
  for (int i = 0; i < n; i++)
    ntmaps += k->params[i].kind == TL_PARAM_TMAP;
  unsigned char *tmaps = ntmaps ? tmap_area(plan, ntmaps) : NULL;
  if (ntmaps && !tmaps) {
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  uint64_t *slots = plan->inline_slots_;
  void **ptrs = plan->inline_params_;
  s->sizes = s->small_sizes;
  s->values = s->small_values;
  s->known = s->small_known;
  s->heap = NULL;
  if (n > TL_PLAN_INLINE_PARAMS) {
    plan->heap_ = calloc((size_t)n, sizeof *slots + sizeof *ptrs);
    s->heap = calloc((size_t)n, sizeof *s->sizes + sizeof *s->values + sizeof *s->known);
    if (!plan->heap_ || !s->heap) {
      free(s->heap);
      tl_launch_plan_release(plan);
      tl_fmt(err, err_size, "out of memory");
      return TL_ERR_OUT_OF_MEMORY;
    }
    slots = plan->heap_;
    ptrs = (void **)(slots + n);
    s->sizes = s->heap;
    s->values = (int64_t *)(s->sizes + n);
    s->known = (bool *)(s->values + n);
  }
  for (int i = 0, t = 0; i < n; i++) {
    s->sizes[i].arg = -1;
    s->known[i] = false;
    ptrs[i] = k->params[i].kind == TL_PARAM_TMAP ? (void *)(tmaps + TL_TMAP_BYTES * t++) : &slots[i];
  }
  plan->params = ptrs;
  *slots_out = slots;
  return TL_OK;
}

/* Each argument against its parameter, into its slot; tensors bind the sizes. */
static tl_status encode_arguments(const tl_kernel_info *k, const tl_arg *args, int nargs, uint64_t *slots,
                                  scratch *s, char *err, size_t err_size)
{
  tl_status st = TL_OK;
  for (int i = 0; i < nargs && st == TL_OK; i++) {
    const tl_param *p = &k->params[i];
    const tl_arg *a = &args[i];
    const char *got = arg_kind_text(a);
    if (!got) {
      tl_fmt(err, err_size,
             "argument %d ('%s'): unknown argument kind %d (build it with "
             "tl_arg_tensor or a tl_arg_<type> helper)",
             i, p->name, (int)a->kind);
      st = TL_ERR_BAD_ARGUMENT;
    } else if (tl_dtype_size(a->dtype) == 0) {
      tl_fmt(err, err_size, "argument %d ('%s'): unknown element type %d", i, p->name, (int)a->dtype);
      st = TL_ERR_BAD_ARGUMENT;
    } else if (p->kind == TL_PARAM_TENSOR) {
      if (a->kind != TL_ARG_TENSOR) {
        tl_fmt(err, err_size, "argument %d ('%s'): expected a tensor of %s, got a scalar %s", i, p->name,
               tl_dtype_name(p->dtype), tl_dtype_name(a->dtype));
        st = TL_ERR_BAD_ARGUMENT;
      } else {
        st = check_tensor(k, i, a, s->sizes, &slots[i], err, err_size);
      }
    } else { /* TL_PARAM_SCALAR: sizes come after nargs */
      if (a->kind != TL_ARG_SCALAR) {
        tl_fmt(err, err_size, "argument %d ('%s'): expected a scalar %s, got a tensor of %s", i, p->name,
               tl_dtype_name(p->dtype), tl_dtype_name(a->dtype));
        st = TL_ERR_BAD_ARGUMENT;
      } else if (a->dtype != p->dtype) {
        tl_fmt(err, err_size, "argument %d ('%s'): expected a scalar %s, got %s", i, p->name,
               tl_dtype_name(p->dtype), tl_dtype_name(a->dtype));
        st = TL_ERR_BAD_ARGUMENT;
      } else {
        st = encode_scalar(k, i, a, &slots[i], &s->values[i], &s->known[i], err, err_size);
      }
    }
  }
  return st;
}

/* Sizes: every one is bound (the parser checked each is some tensor's dim). The kernel reads them
 * as i32, so larger values would wrap into wrong, in-bounds-looking indices. */
static tl_status encode_sizes(const tl_kernel_info *k, int nargs, uint64_t *slots, scratch *s, char *err,
                              size_t err_size)
{
  for (int i = nargs; i < k->nparams; i++) {
    if (k->params[i].kind != TL_PARAM_SIZE) /* tmaps and tmap_ok: zero, from allocate */
      continue;
    const size_binding *b = &s->sizes[i];
    if (b->arg < 0) { /* unreachable for parsed metadata; kept for hand-built tl_kernel_info */
      tl_fmt(err, err_size, "size %s is not bound by any argument", k->params[i].name);
      return TL_ERR_BAD_ARGUMENT;
    }
    if (b->value > INT32_MAX) {
      char use[300];
      describe_use(k, b->arg, b->dim, b->stride, use, sizeof use);
      tl_fmt(err, err_size,
             "size %s is %lld (from %s), more than a kernel size can hold (i32, at "
             "most %d)",
             k->params[i].name, (long long)b->value, use, INT32_MAX);
      return TL_ERR_BAD_ARGUMENT;
    }
    int32_t v = (int32_t)b->value;
    memcpy(&slots[i], &v, sizeof v);
    s->values[i] = b->value;
    s->known[i] = true;
  }
  return TL_OK;
}

/* The grid, from its programs and the parameters' values, within cuLaunchKernel's limits. */
static tl_status plan_grid(const tl_kernel_info *k, int num_sms, const scratch *s, tl_launch_plan *plan,
                           char *err, size_t err_size)
{
  for (int axis = 0; axis < 3; axis++) {
    int64_t v = 0;
    tl_status st = tl_grid_eval(k, axis, s->values, s->known, num_sms, &v, err, err_size);
    if (st != TL_OK)
      return st;
    if (v < 0 || v > grid_limit[axis]) {
      tl_fmt(err, err_size, "grid axis %d ('%s') is %lld, outside 0..%lld", axis, k->grid_text[axis],
             (long long)v, (long long)grid_limit[axis]);
      return TL_ERR_BAD_ARGUMENT;
    }
    plan->grid[axis] = (uint32_t)v;
    plan->empty |= v == 0;
  }
  return TL_OK;
}

/* Does the memo hold the constants for these parameter values? */
static bool memo_hit(const tl_const_memo *memo, const tl_kernel_info *k, const scratch *s, int num_sms)
{
  if (!memo || !memo->filled || memo->num_sms != num_sms || k->nparams > TL_PLAN_INLINE_PARAMS)
    return false;
  for (int i = 0; i < k->nparams; i++)
    if (memo->known[i] != s->known[i] || (s->known[i] && memo->values[i] != s->values[i]))
      return false;
  return true;
}

static void memo_fill(tl_const_memo *memo, const tl_kernel_info *k, const scratch *s, int num_sms,
                      const tl_launch_plan *plan)
{
  if (!memo || k->nparams > TL_PLAN_INLINE_PARAMS)
    return;
  for (int i = 0; i < k->nparams; i++) {
    memo->known[i] = s->known[i];
    memo->values[i] = s->known[i] ? s->values[i] : 0;
  }
  memcpy(memo->consts, plan->consts, sizeof *plan->consts * (size_t)k->nconsts);
  memcpy(memo->grid, plan->grid, sizeof memo->grid);
  memo->num_sms = num_sms;
  memo->filled = true;
}

tl_status tl_plan_launch_sms(const tl_kernel_info *k, const tl_arg *args, int nargs, int num_sms,
                             tl_launch_plan *plan, char *err, size_t err_size)
{
  return tl_plan_launch_memo(k, args, nargs, num_sms, NULL, plan, err, err_size);
}

tl_status tl_plan_launch_memo(const tl_kernel_info *k, const tl_arg *args, int nargs, int num_sms,
                              tl_const_memo *memo, tl_launch_plan *plan, char *err, size_t err_size)
{
  if (!plan) {
    tl_fmt(err, err_size, "tl_plan_launch: plan is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  /* Everything but the inline tensor-map area, which tmap_area clears as far as it is used (a
   * plan is made per launch: half a kilobyte less to clear when the kernel has no maps). */
  memset(plan, 0, offsetof(tl_launch_plan, inline_tmaps_));
  tl_status st = check_call(k, args, nargs, num_sms, err, err_size);
  if (st != TL_OK)
    return st;
  if (k->nconsts < 0 || k->nconsts > TL_MAX_LAUNCH_CONSTS || (k->nconsts && !k->consts)) {
    tl_fmt(err, err_size, "kernel '%s' has %d launch constants (at most %d)", k->name, k->nconsts,
           TL_MAX_LAUNCH_CONSTS);
    return TL_ERR_BAD_ARGUMENT;
  }
  scratch s;
  uint64_t *slots;
  st = allocate(plan, k, &slots, &s, err, err_size);
  if (st != TL_OK)
    return st;
  st = encode_arguments(k, args, nargs, slots, &s, err, err_size);
  if (st == TL_OK)
    st = encode_sizes(k, nargs, slots, &s, err, err_size);
  const bool hit = st == TL_OK && memo_hit(memo, k, &s, num_sms);
  if (st == TL_OK && k->nconsts > 0) {
    if (hit)
      memcpy(plan->consts, memo->consts, sizeof *plan->consts * (size_t)k->nconsts);
    else
      st = tl_consts_eval(k, s.values, s.known, num_sms, plan->consts, err, err_size);
    plan->nconsts = k->nconsts;
    for (int i = 0; st == TL_OK && i < k->nconsts; i++)
      plan->variant |= plan->consts[i] != k->consts[i].value;
  }
  if (st == TL_OK && hit) {
    memcpy(plan->grid, memo->grid, sizeof plan->grid);
    plan->empty = !plan->grid[0] || !plan->grid[1] || !plan->grid[2];
  } else if (st == TL_OK && (st = plan_grid(k, num_sms, &s, plan, err, err_size)) == TL_OK)
    memo_fill(memo, k, &s, num_sms, plan);
  free(s.heap);
  if (st != TL_OK) {
    tl_launch_plan_release(plan);
    return st;
  }
  plan->block[0] = k->threads;
  plan->block[1] = plan->block[2] = 1;
  plan->smem = k->smem;
  plan->nparams = k->nparams;
  return TL_OK;
}

/* ------------------------------------------------------------------------------- tensor maps */

bool tl_tmap_data_type(tl_dtype t, int *out)
{
  switch (t) {
  case TL_BOOL:
  case TL_I8:
  case TL_U8:
  case TL_E4M3:
  case TL_E5M2: *out = 0; return true; /* UINT8: a map moves bytes, whatever they hold */
  case TL_I16:
  case TL_U16: *out = 1; return true;  /* UINT16 */
  case TL_U32: *out = 2; return true;
  case TL_I32: *out = 3; return true;
  case TL_U64: *out = 4; return true;
  case TL_I64: *out = 5; return true;
  case TL_F16: *out = 6; return true;
  case TL_F32: *out = 7; return true;
  case TL_F64: *out = 8; return true;
  case TL_BF16: *out = 9; return true;
  }
  return false;
}

bool tl_tmap_encoding_of(const tl_kernel_info *k, int param, const tl_arg *args, int nargs,
                         tl_tmap_encoding *out, char *why, size_t why_size)
{
  if (!k || !out || param < 0 || param >= k->nparams || k->params[param].kind != TL_PARAM_TMAP) {
    tl_fmt(why, why_size, "tl_tmap_encoding_of: param %d is not a tmap param of the kernel", param);
    return false;
  }
  const tl_param *p = &k->params[param];
  const tl_tmap_info *t = &p->tmap;
  const tl_arg *a = args && t->tensor >= 0 && t->tensor < nargs ? &args[t->tensor] : NULL;
  if (!a || a->kind != TL_ARG_TENSOR || a->rank != t->rank || t->rank < 1 || t->rank > TL_TMAP_MAX_RANK ||
      !a->shape) {
    tl_fmt(why, why_size, "tmap '%s': no tensor argument of rank %d at index %d", p->name, t->rank,
           t->tensor);
    return false;
  }
  memset(out, 0, sizeof *out);
  if (!tl_tmap_data_type(a->dtype, &out->data_type)) {
    tl_fmt(why, why_size, "tmap '%s': no tensor map data type for %s", p->name, tl_dtype_name(a->dtype));
    return false;
  }
  /* cuTensorMapEncodeTiled's rules for an interleave of NONE */
  if (a->ptr % 16 != 0) {
    tl_fmt(why, why_size, "tmap '%s': the tensor's address 0x%llx is not 16-byte aligned", p->name, a->ptr);
    return false;
  }
  const int r = t->rank;
  const int64_t *given = a->value.strides; /* elements; NULL: contiguous */
  if (given && given[r - 1] != 1) {
    tl_fmt(why, why_size, "tmap '%s': the tensor's innermost stride is %lld, not 1", p->name,
           (long long)given[r - 1]);
    return false;
  }
  uint64_t stride = tl_dtype_size(a->dtype);
  for (int i = 0; i < r; i++) {
    const int64_t d = a->shape[r - 1 - i];
    if (d < 1 || (uint64_t)d > (UINT64_C(1) << 32)) {
      tl_fmt(why, why_size, "tmap '%s': dimension %d of the tensor is %lld, outside 1..2^32", p->name,
             r - 1 - i, (long long)d);
      return false;
    }
    out->global_dim[i] = (uint64_t)d;
    out->box_dim[i] = t->box[r - 1 - i];
    out->element_strides[i] = 1;
    if (i == r - 1)
      break;
    const bool overflow = given ? given[r - 2 - i] < 1 ||
                                      __builtin_mul_overflow(tl_dtype_size(a->dtype),
                                                             (uint64_t)given[r - 2 - i], &stride)
                                : __builtin_mul_overflow(stride, (uint64_t)d, &stride);
    if (overflow || stride >= (UINT64_C(1) << 40) || stride % 16 != 0) {
      tl_fmt(why, why_size,
             "tmap '%s': dimension %d of the tensor steps %s%llu bytes; a tensor map needs a multiple of "
             "16 below 2^40",
             p->name, r - 2 - i, overflow ? "more than " : "",
             (unsigned long long)(overflow ? UINT64_MAX : stride));
      return false;
    }
    out->global_strides[i] = stride;
  }
  out->rank = (uint32_t)r;
  out->address = a->ptr;
  out->interleave = 0;
  out->swizzle = (int)t->swizzle;
  out->l2_promotion = 2;
  out->oob_fill = 0;
  return true;
}
