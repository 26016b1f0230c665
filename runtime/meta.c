/* meta.c: the "// tilec-meta" block at the top of tilec's PTX (docs/abi.md), parsed into
 * tl_kernel_info, and the grid programs it carries, evaluated.
 *
 * The parser is strict on purpose: the ABI says a host must reject what it does not understand
 * rather than guess, and a wrong guess here is a wrong launch (out-of-bounds writes) later. Every
 * error names the line. Needs no driver.
 *
 * The block is a small state machine:
 *
 *   v1 --> { kernel --> param x P --> const x C --> grid 0, grid 1, grid 2 }* --> end
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

#define META_PREFIX "// tilec-meta "
#define META_PREFIX_LEN (sizeof META_PREFIX - 1)

/* Limits that are not in the ABI but keep hostile input from asking for absurd allocations. A PTX
 * kernel's parameters fit in 32 KiB, so no real kernel comes near these. */
#define META_MAX_PARAMS 4096
#define META_MAX_RANK 64
#define META_MAX_FIELDS 1024

struct tl_meta {
  int nkernels;
  tl_kernel_info *kernels; /* the const pointers inside point to allocations this meta owns */
};

/* ------------------------------------------------------------------------------------- freeing */

static void free_kernel(tl_kernel_info *k)
{
  free((void *)k->name);
  for (int i = 0; k->params && i < k->nparams; i++) {
    free((void *)k->params[i].name);
    free((void *)k->params[i].dims);
  }
  free((void *)k->params);
  for (int i = 0; k->strides && i < k->nparams; i++)
    free((void *)k->strides[i]);
  free((void *)k->strides);
  for (int axis = 0; axis < 3; axis++) {
    free((void *)k->grid_text[axis]);
    if (k->grid[axis])
      free(k->grid[axis]->tokens);
    free((void *)k->grid[axis]);
  }
  for (int i = 0; k->consts && i < k->nconsts; i++) {
    const tl_launch_const *c = &k->consts[i];
    free((void *)c->name);
    free((void *)c->text);
    if (c->program)
      free(c->program->tokens);
    free((void *)c->program);
  }
  free((void *)k->consts);
}

void tl_meta_free(tl_meta *meta)
{
  if (!meta)
    return;
  for (int i = 0; i < meta->nkernels; i++)
    free_kernel(&meta->kernels[i]);
  free(meta->kernels);
  free(meta);
}

int tl_meta_kernel_count(const tl_meta *meta) { return meta ? meta->nkernels : 0; }

const tl_kernel_info *tl_meta_kernel(const tl_meta *meta, int index)
{
  if (!meta || index < 0 || index >= meta->nkernels)
    return NULL;
  return &meta->kernels[index];
}

const tl_kernel_info *tl_meta_find_kernel(const tl_meta *meta, const char *name)
{
  if (!meta || !name)
    return NULL;
  for (int i = 0; i < meta->nkernels; i++)
    if (strcmp(meta->kernels[i].name, name) == 0)
      return &meta->kernels[i];
  return NULL;
}

/* ------------------------------------------------------------------------------------- parsing */

typedef enum parse_state {
  EXPECT_VERSION,
  EXPECT_KERNEL_OR_END, /* between kernels */
  EXPECT_PARAM,         /* inside a kernel, fewer than P param lines so far */
  EXPECT_GRID,          /* inside a kernel, all params read, fewer than 3 grid lines */
  DONE,
} parse_state;

typedef struct parser {
  tl_meta *meta;
  parse_state state;
  int line; /* 1-based number of the line being parsed */
  int nfields;
  char *fields[META_MAX_FIELDS];
  /* the kernel being read: meta->kernels[meta->nkernels - 1] */
  int params_seen;
  int grids_seen;
  int *param_lines; /* line of each param of the current kernel, for messages about it later */
  bool out_of_memory;
  char *err;
  size_t err_size;
} parser;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static tl_status
fail(parser *p, const char *fmt, ...)
{
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  tl_fmt(p->err, p->err_size, "line %d: %s", p->line, what);
  return TL_ERR_BAD_METADATA;
}

static tl_status out_of_memory(parser *p)
{
  p->out_of_memory = true;
  return fail(p, "out of memory");
}

static tl_kernel_info *current_kernel(parser *p) { return &p->meta->kernels[p->meta->nkernels - 1]; }

/* A decimal integer without sign, in [min, max]. */
static bool parse_uint(const char *s, int64_t min, int64_t max, int64_t *out)
{
  if (!*s)
    return false;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return false;
    if (v > (INT64_MAX - (*s - '0')) / 10)
      return false;
    v = v * 10 + (*s - '0');
  }
  if (v < min || v > max)
    return false;
  *out = v;
  return true;
}

/* An optionally negative decimal integer (RPN constants). */
static bool parse_int(const char *s, int64_t *out)
{
  bool neg = *s == '-';
  int64_t v;
  if (!parse_uint(neg ? s + 1 : s, 0, INT64_MAX, &v))
    return false;
  *out = neg ? -v : v;
  return true;
}

/* PTX identifiers: what tilec emits for kernel and parameter names. */
static bool is_identifier(const char *s)
{
  if (!(isalpha((unsigned char)*s) || *s == '_' || *s == '$'))
    return false;
  for (s++; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '$'))
      return false;
  return true;
}

/* A tensor map's name: identifiers joined by dots ("A.tmap0"); it names no PTX symbol. */
static bool is_dotted_name(const char *s)
{
  char part[256];
  for (;;) {
    size_t n = strcspn(s, ".");
    if (n == 0 || n >= sizeof part)
      return false;
    memcpy(part, s, n);
    part[n] = 0;
    if (!is_identifier(part))
      return false;
    if (!s[n])
      return true;
    s += n + 1;
  }
}

/* field is "key=value" with a decimal value in [min, max]. */
static tl_status parse_key_uint(parser *p, const char *field, const char *key, int64_t min, int64_t max,
                                int64_t *out)
{
  size_t klen = strlen(key);
  if (strncmp(field, key, klen) != 0 || field[klen] != '=')
    return fail(p, "expected '%s=...', got '%s'", key, field);
  if (!parse_uint(field + klen + 1, min, max, out))
    return fail(p, "'%s' is not a whole number in %lld..%lld", field, (long long)min, (long long)max);
  return TL_OK;
}

static int find_param(const tl_kernel_info *k, int nparams, const char *name)
{
  for (int i = 0; i < nparams; i++)
    if (strcmp(k->params[i].name, name) == 0)
      return i;
  return -1;
}

/* kernel NAME threads=T smem=BYTES params=P */
static tl_status parse_kernel_line(parser *p)
{
  if (p->nfields != 5)
    return fail(p, "a kernel line is 'kernel NAME threads=T smem=BYTES params=P' (%d fields, not 5)",
                p->nfields);
  const char *name = p->fields[1];
  if (!is_identifier(name))
    return fail(p, "kernel name '%s' is not an identifier", name);
  if (tl_meta_find_kernel(p->meta, name))
    return fail(p, "kernel '%s' is described twice", name);
  int64_t threads, smem, nparams;
  tl_status st;
  /* 1024 threads per block is the hardware's limit on every architecture tilec targets. */
  if ((st = parse_key_uint(p, p->fields[2], "threads", 1, 1024, &threads)) != TL_OK ||
      (st = parse_key_uint(p, p->fields[3], "smem", 0, UINT32_MAX, &smem)) != TL_OK ||
      (st = parse_key_uint(p, p->fields[4], "params", 0, META_MAX_PARAMS, &nparams)) != TL_OK)
    return st;

  tl_kernel_info *grown = realloc(p->meta->kernels, (size_t)(p->meta->nkernels + 1) * sizeof *grown);
  if (!grown)
    return out_of_memory(p);
  p->meta->kernels = grown;
  tl_kernel_info *k = &grown[p->meta->nkernels++];
  memset(k, 0, sizeof *k);
  k->line = p->line;
  k->threads = (uint32_t)threads;
  k->smem = (uint32_t)smem;
  k->name = strdup(name);
  tl_param *params = calloc((size_t)nparams + 1, sizeof *params);
  free(p->param_lines);
  p->param_lines = calloc((size_t)nparams + 1, sizeof *p->param_lines);
  k->params = params;
  if (!k->name || !params || !p->param_lines)
    return out_of_memory(p);
  k->nparams = (int)nparams; /* only once params exists, for free_kernel */
  p->params_seen = 0;
  p->grids_seen = 0;
  p->state = k->nparams > 0 ? EXPECT_PARAM : EXPECT_GRID;
  return TL_OK;
}

/* dims=D0,D1,... (key "dims") or strides=S0,S1,... (key "strides"): size names stay unresolved
 * (size params come after the tensors) until all params are read; until then a symbolic entry has
 * size_param -2 and its name waits in *names_out[d]. A fixed stride is at least 1. */
static tl_status parse_dims(parser *p, tl_param *param, const char *field, const char *key,
                            const tl_dim **out, char ***names_out)
{
  const size_t klen = strlen(key);
  const bool stride = key[0] == 's';
  if (strncmp(field, key, klen) != 0 || field[klen] != '=')
    return fail(p, "expected '%s=...', got '%s'", key, field);
  const char *s = field + klen + 1;
  int count = *s ? 1 : 0;
  for (const char *c = s; *c; c++)
    count += *c == ',';
  if (count != param->rank)
    return fail(p, "param '%s' has rank=%d but %d %s in '%s'", param->name, param->rank, count, key, field);
  tl_dim *dims = calloc((size_t)param->rank + 1, sizeof *dims);
  char **names = calloc((size_t)param->rank + 1, sizeof *names);
  *out = dims;
  *names_out = names;
  if (!dims || !names)
    return out_of_memory(p);
  for (int d = 0; d < param->rank; d++) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char item[256];
    if (len == 0 || len >= sizeof item)
      return fail(p, "param '%s': %s %d in '%s' is empty or too long", param->name,
                  stride ? "stride" : "dimension", d, field);
    memcpy(item, s, len);
    item[len] = 0;
    int64_t extent;
    if (item[0] >= '0' && item[0] <= '9') {
      if (!parse_uint(item, stride, INT32_MAX, &extent))
        return fail(p, "param '%s': %s %d ('%s') is not a size name or %s in %d..%d", param->name,
                    stride ? "stride" : "dimension", d, item, stride ? "a stride" : "an extent", stride,
                    INT32_MAX);
      dims[d].size_param = -1;
      dims[d].extent = extent;
    } else {
      if (!is_identifier(item))
        return fail(p, "param '%s': %s %d ('%s') is not a size name or a decimal %s", param->name,
                    stride ? "stride" : "dimension", d, item, stride ? "stride" : "extent");
      names[d] = strdup(item);
      if (!names[d])
        return out_of_memory(p);
      dims[d].size_param = -2;
    }
    s = end ? end + 1 : s + len;
  }
  return TL_OK;
}

/* Per tensor of the current kernel, the names of its symbolic dims until they are resolved. */
typedef struct pending_dims {
  char **names;        /* rank entries, NULL where fixed */
  char **stride_names; /* the same for strides=, when the line has it */
} pending_dims;

static void free_names(char ***names, int rank)
{
  if (!*names)
    return;
  for (int d = 0; d < rank; d++)
    free((*names)[d]);
  free(*names);
  *names = NULL;
}

/* Free the parked dim names of kernel k's params (NULL-safe; each array is freed once). */
static void free_pending(pending_dims *pending, const tl_kernel_info *k)
{
  for (int i = 0; pending && i < k->nparams; i++) {
    free_names(&pending[i].names, k->params[i].rank);
    free_names(&pending[i].stride_names, k->params[i].rank);
  }
}

/* The ABI's order of param kinds: the .tl params, the sizes, the tensor maps, the tmap flag. */
static int kind_order(tl_param_kind kind)
{
  switch (kind) {
  case TL_PARAM_TENSOR:
  case TL_PARAM_SCALAR: return 0;
  case TL_PARAM_SIZE: return 1;
  case TL_PARAM_TMAP: return 2;
  case TL_PARAM_TMAP_OK: return 3;
  }
  return 0;
}

static const char *kind_name(tl_param_kind kind)
{
  switch (kind) {
  case TL_PARAM_TENSOR: return "tensor";
  case TL_PARAM_SCALAR: return "scalar";
  case TL_PARAM_SIZE: return "size";
  case TL_PARAM_TMAP: return "tmap";
  case TL_PARAM_TMAP_OK: return "tmap_ok";
  }
  return "?";
}

/* box=B0,B1,...: one extent per dim of the tensor, each 1..256 (the TMA's box limit). */
static tl_status parse_box(parser *p, tl_param *param, const char *field)
{
  tl_tmap_info *t = &param->tmap;
  if (strncmp(field, "box=", 4) != 0)
    return fail(p, "expected 'box=...', got '%s'", field);
  const char *s = field + 4;
  for (int d = 0;; d++) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char item[32];
    int64_t v;
    if (d == t->rank)
      return fail(p, "tmap '%s': '%s' has more than %d extents (the tensor's rank)", param->name, field,
                  t->rank);
    if (len == 0 || len >= sizeof item)
      return fail(p, "tmap '%s': box extent %d in '%s' is empty or too long", param->name, d, field);
    memcpy(item, s, len);
    item[len] = 0;
    if (!parse_uint(item, 1, 256, &v))
      return fail(p, "tmap '%s': box extent %d ('%s') is not a whole number in 1..256", param->name, d, item);
    t->box[d] = (uint32_t)v;
    if (!end) {
      if (d + 1 != t->rank)
        return fail(p, "tmap '%s': '%s' has %d extents but the tensor has rank %d", param->name, field, d + 1,
                    t->rank);
      return TL_OK;
    }
    s = end + 1;
  }
}

/* param INDEX tmap NAME ELEM tensor=T box=B0,... swizzle=S: a TMA tensor map of tensor param T. */
static tl_status parse_tmap(parser *p, tl_param *param)
{
  tl_kernel_info *k = current_kernel(p);
  if (p->nfields != 8)
    return fail(p,
                "a tmap param line is 'param INDEX tmap NAME ELEM tensor=T box=B0,... swizzle=S' "
                "(%d fields, not 8)",
                p->nfields);
  param->kind = TL_PARAM_TMAP;
  tl_tmap_info *t = &param->tmap;
  int64_t tensor;
  tl_status st = parse_key_uint(p, p->fields[5], "tensor", 0, INT_MAX, &tensor);
  if (st != TL_OK)
    return st;
  if (tensor >= p->params_seen || k->params[tensor].kind != TL_PARAM_TENSOR)
    return fail(p, "tmap '%s': tensor=%lld is not the index of a tensor param of kernel '%s'", param->name,
                (long long)tensor, k->name);
  const tl_param *of = &k->params[tensor];
  if (param->dtype != of->dtype)
    return fail(p, "tmap '%s' has element type %s but tensor '%s' is %s", param->name,
                tl_dtype_name(param->dtype), of->name, tl_dtype_name(of->dtype));
  if (of->rank < 1 || of->rank > TL_TMAP_MAX_RANK)
    return fail(p, "tmap '%s': tensor '%s' has rank %d; a tensor map takes rank 1..%d", param->name, of->name,
                of->rank, TL_TMAP_MAX_RANK);
  t->tensor = (int)tensor;
  t->rank = of->rank;
  if ((st = parse_box(p, param, p->fields[6])) != TL_OK)
    return st;
  const char *sw = p->fields[7];
  if (strncmp(sw, "swizzle=", 8) != 0)
    return fail(p, "expected 'swizzle=...', got '%s'", sw);
  sw += 8;
  static const struct {
    const char *name;
    tl_tmap_swizzle swizzle;
    uint32_t bytes;
  } swizzles[] = {{"none", TL_SWIZZLE_NONE, 0},
                  {"32", TL_SWIZZLE_32B, 32},
                  {"64", TL_SWIZZLE_64B, 64},
                  {"128", TL_SWIZZLE_128B, 128}};
  int found = -1;
  for (int i = 0; i < 4; i++)
    if (strcmp(sw, swizzles[i].name) == 0)
      found = i;
  if (found < 0)
    return fail(p, "tmap '%s': swizzle '%s' is not one of none, 32, 64, 128", param->name, sw);
  t->swizzle = swizzles[found].swizzle;
  /* A swizzled box's inner extent is whole 16-byte chunks within one swizzle span. */
  const uint32_t inner = t->box[t->rank - 1] * (uint32_t)tl_dtype_size(param->dtype);
  if (found > 0 && (inner % 16 != 0 || inner > swizzles[found].bytes))
    return fail(p,
                "tmap '%s': the box's inner extent is %u bytes (%u x %s); swizzle=%s needs a multiple "
                "of 16 bytes, at most %u",
                param->name, inner, t->box[t->rank - 1], tl_dtype_name(param->dtype), sw,
                swizzles[found].bytes);
  return TL_OK;
}

/* param INDEX tensor NAME ELEM rank=R dims=D0,...
 * param INDEX scalar NAME ELEM
 * param INDEX size NAME i32
 * param INDEX tmap NAME ELEM tensor=T box=B0,... swizzle=S
 * param INDEX tmap_ok NAME u32 [required] */
static tl_status parse_param_line(parser *p, pending_dims *pending)
{
  tl_kernel_info *k = current_kernel(p);
  if (p->nfields < 5)
    return fail(p, "a param line is 'param INDEX KIND NAME ELEM ...' (%d fields)", p->nfields);
  int64_t index;
  if (!parse_uint(p->fields[1], 0, INT_MAX, &index))
    return fail(p, "param index '%s' is not a whole number", p->fields[1]);
  if (index != p->params_seen)
    return fail(p, "expected param %d of kernel '%s', got param %lld", p->params_seen, k->name,
                (long long)index);
  tl_param *param = (tl_param *)&k->params[p->params_seen];
  const char *kind = p->fields[2], *name = p->fields[3], *elem = p->fields[4];
  if (strcmp(kind, "tmap") == 0 || strcmp(kind, "tmap_ok") == 0 ? !is_dotted_name(name)
                                                                : !is_identifier(name))
    return fail(p, "param name '%s' is not an identifier", name);
  if (find_param(k, p->params_seen, name) >= 0)
    return fail(p, "kernel '%s' has two params named '%s'", k->name, name);
  param->name = strdup(name);
  if (!param->name)
    return out_of_memory(p);
  p->param_lines[p->params_seen] = p->line;
  if (!tl_dtype_from_name(elem, &param->dtype))
    return fail(p,
                "param '%s': unknown element type '%s' (expected one of bool i8 i16 i32 i64 u8 "
                "u16 u32 u64 f16 bf16 f32 f64 e4m3 e5m2)",
                name, elem);

  /* The ABI orders params: every .tl parameter, then every size, every tmap, the tmap flag. */
  const tl_param_kind before = p->params_seen > 0 ? k->params[p->params_seen - 1].kind : TL_PARAM_TENSOR;
  if (strcmp(kind, "tensor") == 0) {
    if (p->nfields != 7 && p->nfields != 8)
      return fail(p,
                  "a tensor param line is 'param INDEX tensor NAME ELEM rank=R dims=... [strides=...]' "
                  "(%d fields, not 7 or 8)",
                  p->nfields);
    param->kind = TL_PARAM_TENSOR;
    int64_t rank;
    tl_status st = parse_key_uint(p, p->fields[5], "rank", 0, META_MAX_RANK, &rank);
    if (st != TL_OK)
      return st;
    param->rank = (int)rank;
    if ((st = parse_dims(p, param, p->fields[6], "dims", &param->dims, &pending[p->params_seen].names)) !=
        TL_OK)
      return st;
    if (p->nfields == 8) { /* strides=: a tensor declared with strides(...) */
      if (!k->strides && !(k->strides = calloc((size_t)k->nparams + 1, sizeof *k->strides)))
        return out_of_memory(p);
      if ((st = parse_dims(p, param, p->fields[7], "strides", (const tl_dim **)&k->strides[p->params_seen],
                           &pending[p->params_seen].stride_names)) != TL_OK)
        return st;
    }
  } else if (strcmp(kind, "scalar") == 0) {
    if (p->nfields != 5)
      return fail(p, "a scalar param line is 'param INDEX scalar NAME ELEM' (%d fields, not 5)", p->nfields);
    param->kind = TL_PARAM_SCALAR;
  } else if (strcmp(kind, "size") == 0) {
    if (p->nfields != 5)
      return fail(p, "a size param line is 'param INDEX size NAME i32' (%d fields, not 5)", p->nfields);
    if (param->dtype != TL_I32)
      return fail(p, "size param '%s' must be i32, not %s", name, elem);
    param->kind = TL_PARAM_SIZE;
  } else if (strcmp(kind, "tmap") == 0) {
    tl_status st = parse_tmap(p, param);
    if (st != TL_OK)
      return st;
  } else if (strcmp(kind, "tmap_ok") == 0) {
    if (p->nfields != 5 && (p->nfields != 6 || strcmp(p->fields[5], "required")))
      return fail(p, "a tmap_ok param line is 'param INDEX tmap_ok NAME u32 [required]' (%d fields%s)",
                  p->nfields, p->nfields == 6 ? ", the last not 'required'" : "");
    if (param->dtype != TL_U32)
      return fail(p, "tmap_ok param '%s' must be u32, not %s", name, elem);
    if (before == TL_PARAM_TMAP_OK)
      return fail(p, "kernel '%s' has a second tmap_ok param ('%s'); it takes at most one", k->name, name);
    if (before != TL_PARAM_TMAP)
      return fail(p, "tmap_ok param '%s' does not follow a tmap param; it comes right after the last one",
                  name);
    param->kind = TL_PARAM_TMAP_OK;
    k->tma_required = p->nfields == 6;
  } else {
    return fail(p, "unknown param kind '%s' (expected tensor, scalar, size, tmap or tmap_ok)", kind);
  }
  if (kind_order(param->kind) < kind_order(before)) {
    if (before == TL_PARAM_SIZE)
      return fail(p, "param %d ('%s') is a %s after a size param; sizes must come last", p->params_seen, name,
                  kind);
    return fail(p,
                "param %d ('%s') is a %s after a %s param; the order is the .tl params, the sizes, the "
                "tmaps, then tmap_ok",
                p->params_seen, name, kind, kind_name(before));
  }
  if (before == TL_PARAM_TMAP_OK)
    return fail(p, "param %d ('%s') comes after the tmap_ok param, which must be the last", p->params_seen,
                name);
  if (++p->params_seen == k->nparams)
    p->state = EXPECT_GRID;
  return TL_OK;
}

/* All params of the current kernel are read: bind each symbolic dim to its size param, and check
 * that the size params are exactly the names the tensors use, in order of first appearance (the
 * ABI's rule; a mismatch means host and kernel would disagree on which u32 is which). */
static tl_status finish_params(parser *p, pending_dims *pending)
{
  tl_kernel_info *k = current_kernel(p);
  int first_size = k->nparams, expected_next = 0, end_sizes = k->nparams;
  for (int i = 0; i < k->nparams; i++)
    if (kind_order(k->params[i].kind) > 0) {
      first_size = i;
      break;
    }
  for (int i = first_size; i < k->nparams; i++)
    if (k->params[i].kind != TL_PARAM_SIZE) {
      end_sizes = i;
      break;
    }
  k->nargs = first_size;
  k->nsizes = end_sizes - first_size;
  k->ntmaps = 0;
  for (int i = end_sizes; i < k->nparams; i++)
    k->ntmaps += k->params[i].kind == TL_PARAM_TMAP;
  if (k->ntmaps > 0 && k->params[k->nparams - 1].kind != TL_PARAM_TMAP_OK)
    return fail(p, "kernel '%s' has tmap params but no tmap_ok param after them", k->name);
  for (int i = 0; i < first_size; i++) {
    tl_param *param = (tl_param *)&k->params[i];
    if (param->kind != TL_PARAM_TENSOR)
      continue;
    /* the dims, then the strides: the order in which the compiler meets the sizes */
    for (int j = 0; j < 2 * param->rank; j++) {
      const int d = j % param->rank;
      char **names = j < param->rank ? pending[i].names : pending[i].stride_names;
      tl_dim *dims = (tl_dim *)(j < param->rank ? param->dims : k->strides ? k->strides[i] : NULL);
      const char *name = names ? names[d] : NULL;
      if (!name)
        continue;
      int s = find_param(k, k->nparams, name);
      if (s < 0 || k->params[s].kind != TL_PARAM_SIZE) {
        p->line = p->param_lines[i];
        return fail(p, "param '%s': %s %d names '%s', which is not a size param of kernel '%s'", param->name,
                    j < param->rank ? "dimension" : "stride", d, name, k->name);
      }
      if (s >= first_size + expected_next) {
        /* first appearance: it must be the next size param in order */
        if (s != first_size + expected_next) {
          p->line = p->param_lines[i];
          return fail(p,
                      "param '%s': size '%s' first appears here but is size param %d; the ABI "
                      "orders size params by first appearance, so it should be '%s'",
                      param->name, name, s, k->params[first_size + expected_next].name);
        }
        expected_next++;
      }
      dims[d].size_param = s;
    }
  }
  if (first_size + expected_next != end_sizes) {
    p->line = p->param_lines[first_size + expected_next];
    return fail(p,
                "size param '%s' is not a dimension or stride of any tensor param, so no launch can bind it",
                k->params[first_size + expected_next].name);
  }
  return TL_OK;
}

static const struct {
  const char *name;
  tl_rpn_op op;
  int operands;
} rpn_operators[] = {
    {"+", TL_RPN_ADD, 2},
    {"-", TL_RPN_SUB, 2},
    {"*", TL_RPN_MUL, 2},
    {"/", TL_RPN_DIV, 2},
    {"%", TL_RPN_MOD, 2},
    {"min", TL_RPN_MIN, 2},
    {"max", TL_RPN_MAX, 2},
    {"ceildiv", TL_RPN_CEILDIV, 2},
    {"<", TL_RPN_LT, 2},
    {"<=", TL_RPN_LE, 2},
    {">", TL_RPN_GT, 2},
    {">=", TL_RPN_GE, 2},
    {"==", TL_RPN_EQ, 2},
    {"!=", TL_RPN_NE, 2},
    {"&&", TL_RPN_AND, 2},
    {"||", TL_RPN_OR, 2},
    {"next_pow2", TL_RPN_NEXT_POW2, 1},
    {"select", TL_RPN_SELECT, 3},
};

static bool is_integer_dtype(tl_dtype t)
{
  return t == TL_I8 || t == TL_I16 || t == TL_I32 || t == TL_I64 || t == TL_U8 || t == TL_U16 ||
         t == TL_U32 || t == TL_U64;
}

/* The program in fields[first ..]: what names it in messages ("grid 0", "const BN"); nconsts the
 * launch constants it may read (those before it). */
static tl_status parse_program(parser *p, int first, const char *what, int nconsts,
                               struct tl_grid_program **prog_out, const char **text_out)
{
  tl_kernel_info *k = current_kernel(p);
  struct tl_grid_program *prog = calloc(1, sizeof *prog);
  *prog_out = prog;
  if (!prog)
    return out_of_memory(p);
  prog->tokens = calloc((size_t)p->nfields, sizeof *prog->tokens);
  size_t text_len = 0;
  for (int i = first; i < p->nfields; i++)
    text_len += strlen(p->fields[i]) + 1;
  char *text = malloc(text_len + 1);
  *text_out = text;
  if (!prog->tokens || !text)
    return out_of_memory(p);
  text[0] = 0;

  int depth = 0;
  for (int i = first; i < p->nfields; i++) {
    const char *tok = p->fields[i];
    if (i > first)
      strcat(text, " ");
    strcat(text, tok);
    tl_rpn_token *t = &prog->tokens[prog->ntokens++];
    int operands = 0;
    for (size_t o = 0; o < sizeof rpn_operators / sizeof rpn_operators[0]; o++)
      if (strcmp(tok, rpn_operators[o].name) == 0) {
        t->op = rpn_operators[o].op;
        operands = rpn_operators[o].operands;
      }
    if (operands) {
      if (depth < operands)
        return fail(p, "%s: operator '%s' needs %d operand%s, the stack holds %d", what, tok, operands,
                    operands == 1 ? "" : "s", depth);
      depth -= operands - 1;
      continue;
    }
    if ((tok[0] >= '0' && tok[0] <= '9') || tok[0] == '-') {
      if (!parse_int(tok, &t->value))
        return fail(p, "%s: '%s' is not a decimal integer", what, tok);
      t->op = TL_RPN_CONST;
    } else if (strcmp(tok, "num_sms") == 0) {
      t->op = TL_RPN_NUM_SMS;
      k->uses_num_sms = true;
    } else {
      int c = -1;
      for (int j = 0; j < nconsts; j++)
        if (strcmp(k->consts[j].name, tok) == 0)
          c = j;
      int s = c >= 0 ? -1 : find_param(k, k->nparams, tok);
      if (c >= 0) {
        t->op = TL_RPN_LCONST;
        t->param = c;
      } else if (s < 0) {
        return fail(
            p, "%s: '%s' is not an operator, a number, num_sms, a param or an earlier const of kernel '%s'",
            what, tok, k->name);
      } else {
        const tl_param *param = &k->params[s];
        if (param->kind == TL_PARAM_TMAP || param->kind == TL_PARAM_TMAP_OK)
          return fail(p, "%s: '%s' is a %s param; only sizes and integer scalars can be used", what, tok,
                      kind_name(param->kind));
        if (param->kind == TL_PARAM_TENSOR ||
            (param->kind == TL_PARAM_SCALAR && !is_integer_dtype(param->dtype)))
          return fail(p, "%s: '%s' is a %s %s; only sizes and integer scalars can be used", what, tok,
                      param->kind == TL_PARAM_TENSOR ? "tensor of" : "scalar", tl_dtype_name(param->dtype));
        t->op = TL_RPN_PARAM;
        t->param = s;
      }
    }
    if (++depth > prog->max_depth)
      prog->max_depth = depth;
  }
  if (depth != 1)
    return fail(p, "%s: the program '%s' leaves %d values on the stack, not 1", what, text, depth);
  return TL_OK;
}

/* grid AXIS RPN... */
static tl_status parse_grid_line(parser *p)
{
  tl_kernel_info *k = current_kernel(p);
  int64_t axis;
  if (p->nfields < 3)
    return fail(p, "a grid line is 'grid AXIS RPN...' with a non-empty program");
  if (!parse_uint(p->fields[1], 0, 2, &axis) || axis != p->grids_seen)
    return fail(p, "expected 'grid %d' of kernel '%s', got 'grid %s'", p->grids_seen, k->name, p->fields[1]);
  char what[32];
  snprintf(what, sizeof what, "grid %d", (int)axis);
  struct tl_grid_program *prog = NULL;
  tl_status st = parse_program(p, 2, what, 0, &prog, &k->grid_text[axis]);
  k->grid[axis] = prog;
  if (st != TL_OK)
    return st;
  if (++p->grids_seen == 3)
    p->state = EXPECT_KERNEL_OR_END;
  return TL_OK;
}

/* const NAME VALUE RPN...: a launch constant, after the params and before the grid lines. */
static tl_status parse_const_line(parser *p)
{
  tl_kernel_info *k = current_kernel(p);
  if (p->nfields < 4)
    return fail(p, "a const line is 'const NAME VALUE RPN...' with a non-empty program");
  const char *name = p->fields[1];
  if (!is_identifier(name))
    return fail(p, "const name '%s' is not an identifier", name);
  for (int i = 0; i < k->nconsts; i++)
    if (strcmp(k->consts[i].name, name) == 0)
      return fail(p, "kernel '%s' has two consts named '%s'", k->name, name);
  if (k->nconsts == TL_MAX_LAUNCH_CONSTS)
    return fail(p, "kernel '%s' has more than %d consts", k->name, TL_MAX_LAUNCH_CONSTS);
  int64_t value;
  if (!parse_int(p->fields[2], &value))
    return fail(p, "const '%s': value '%s' is not a decimal integer", name, p->fields[2]);
  if (!k->consts) {
    k->consts = calloc(TL_MAX_LAUNCH_CONSTS, sizeof *k->consts);
    if (!k->consts)
      return out_of_memory(p);
  }
  tl_launch_const *c = (tl_launch_const *)&k->consts[k->nconsts++];
  c->value = value;
  c->name = strdup(name);
  if (!c->name)
    return out_of_memory(p);
  char what[300];
  snprintf(what, sizeof what, "const %s", name);
  struct tl_grid_program *prog = NULL;
  tl_status st = parse_program(p, 3, what, k->nconsts - 1, &prog, &c->text);
  c->program = prog;
  return st;
}

/* Split the line's text after the prefix into fields at single spaces; an empty field means two
 * spaces in a row or a trailing space, which the ABI does not allow. */
static tl_status split_fields(parser *p, char *text)
{
  p->nfields = 0;
  for (char *s = text;;) {
    char *space = strchr(s, ' ');
    if (space)
      *space = 0;
    if (!*s)
      return fail(p, "empty field (fields are separated by single spaces, with none at the end)");
    if (p->nfields == META_MAX_FIELDS)
      return fail(p, "more than %d fields", META_MAX_FIELDS);
    p->fields[p->nfields++] = s;
    if (!space)
      return TL_OK;
    s = space + 1;
  }
}

static tl_status incomplete_kernel(parser *p)
{
  tl_kernel_info *k = current_kernel(p);
  if (p->state == EXPECT_PARAM)
    return fail(p, "kernel '%s' (line %d) declares params=%d but has %d param lines", k->name, k->line,
                k->nparams, p->params_seen);
  return fail(p, "kernel '%s' (line %d) has %d grid lines; it needs 3 (axes 0, 1, 2)", k->name, k->line,
              p->grids_seen);
}

static tl_status parse_line(parser *p, char *line, pending_dims **pending)
{
  if (strncmp(line, META_PREFIX, META_PREFIX_LEN) != 0) {
    if (p->line == 1)
      return fail(p, "the PTX does not start with a tilec-meta block ('" META_PREFIX "v1'); was it "
                     "produced by tilec?");
    return fail(p, "the tilec-meta block ends here without '" META_PREFIX "end'");
  }
  tl_status st = split_fields(p, line + META_PREFIX_LEN);
  if (st != TL_OK)
    return st;
  const char *what = p->fields[0];

  if (p->state == EXPECT_VERSION) {
    if (what[0] == 'v' && p->nfields == 1) {
      if (strcmp(what, "v1") != 0)
        return fail(p, "unknown tilec-meta version '%s' (this runtime reads v1)", what);
      p->state = EXPECT_KERNEL_OR_END;
      return TL_OK;
    }
    return fail(p, "the block must start with '" META_PREFIX "v1', not '%s'", what);
  }

  const bool is_kernel = strcmp(what, "kernel") == 0, is_end = strcmp(what, "end") == 0;
  if (is_kernel || is_end) {
    if (p->state == EXPECT_PARAM || p->state == EXPECT_GRID)
      return incomplete_kernel(p);
    if (is_end) {
      if (p->nfields != 1)
        return fail(p, "'end' takes no fields");
      p->state = DONE;
      return TL_OK;
    }
    /* drop the previous kernel's (already emptied) table first: cleanup after a failure sizes
     * the table by the newest kernel */
    free(*pending);
    *pending = NULL;
    if ((st = parse_kernel_line(p)) != TL_OK)
      return st;
    *pending = calloc((size_t)current_kernel(p)->nparams + 1, sizeof **pending);
    if (!*pending)
      return out_of_memory(p);
    if (p->state == EXPECT_GRID)
      return finish_params(p, *pending);
    return TL_OK;
  }
  if (strcmp(what, "param") == 0) {
    if (p->state == EXPECT_KERNEL_OR_END)
      return fail(p, "a param line outside a kernel (or beyond its params=%d)",
                  p->meta->nkernels ? current_kernel(p)->nparams : 0);
    if (p->state == EXPECT_GRID)
      return fail(p, "kernel '%s' declares params=%d but has more param lines", current_kernel(p)->name,
                  current_kernel(p)->nparams);
    if ((st = parse_param_line(p, *pending)) != TL_OK)
      return st;
    if (p->state == EXPECT_GRID)
      return finish_params(p, *pending);
    return TL_OK;
  }
  if (strcmp(what, "const") == 0) {
    if (p->state == EXPECT_PARAM)
      return incomplete_kernel(p);
    if (p->state != EXPECT_GRID || p->grids_seen > 0)
      return fail(p, "a const line outside a kernel, or after its grid lines");
    return parse_const_line(p);
  }
  if (strcmp(what, "grid") == 0) {
    if (p->state == EXPECT_PARAM)
      return incomplete_kernel(p);
    if (p->state != EXPECT_GRID)
      return fail(p, "a grid line outside a kernel (or a fourth one)");
    return parse_grid_line(p);
  }
  return fail(p, "unknown tilec-meta line '%s' (expected kernel, param, const, grid or end)", what);
}

tl_status tl_meta_parse(const char *text, size_t len, tl_meta **out, char *err, size_t err_size)
{
  if (out)
    *out = NULL;
  if (!out || (!text && len)) {
    tl_fmt(err, err_size, "tl_meta_parse: %s is NULL", out ? "text" : "out");
    return TL_ERR_BAD_ARGUMENT;
  }
  parser *p = calloc(1, sizeof *p); /* the field table is large for a stack */
  tl_meta *meta = calloc(1, sizeof *meta);
  if (!p || !meta) {
    free(p);
    free(meta);
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  p->meta = meta;
  p->err = err;
  p->err_size = err_size;
  pending_dims *pending = NULL;
  char *line = NULL;
  tl_status st = TL_OK;

  const char *pos = text, *end = text + len;
  while (p->state != DONE) {
    if (pos >= end) {
      if (p->line == 0)
        st = fail(p, "the PTX is empty: no tilec-meta block");
      else {
        p->line++;
        st = fail(p, "the text ends inside the tilec-meta block (no '" META_PREFIX "end')");
      }
      break;
    }
    const char *nl = memchr(pos, '\n', (size_t)(end - pos));
    size_t n = nl ? (size_t)(nl - pos) : (size_t)(end - pos);
    p->line++;
    if (memchr(pos, '\0', n)) {
      st = fail(p, "a NUL byte inside the tilec-meta block");
      break;
    }
    free(line);
    line = malloc(n + 1);
    if (!line) {
      st = out_of_memory(p);
      break;
    }
    memcpy(line, pos, n);
    if (n > 0 && line[n - 1] == '\r') /* tolerate CRLF line ends: they change no field */
      n--;
    line[n] = 0;
    pos = nl ? nl + 1 : end;
    if ((st = parse_line(p, line, &pending)) != TL_OK)
      break;
    /* pending names are only needed until finish_params, which runs when the last param line
     * (or a kernel line with params=0) has been read. */
    if (p->state == EXPECT_GRID && p->grids_seen == 0)
      free_pending(pending, current_kernel(p));
  }

  if (meta->nkernels > 0)
    free_pending(pending, &meta->kernels[meta->nkernels - 1]);
  free(pending);
  free(line);
  free(p->param_lines);
  if (p->out_of_memory)
    st = TL_ERR_OUT_OF_MEMORY;
  free(p);
  if (st != TL_OK) {
    tl_meta_free(meta);
    return st;
  }
  *out = meta;
  return TL_OK;
}

/* ------------------------------------------------------------------------------ grid programs */

/* A program's name in messages: "grid axis 0", or "launch constant 'BN'" when cname is not NULL.
 * Made only for a message: a launch that succeeds formats nothing. */
typedef struct {
  int axis;
  const char *cname;
  char text[300];
} prog_what;

static const char *what_text(prog_what *w)
{
  if (w->cname)
    snprintf(w->text, sizeof w->text, "launch constant '%s'", w->cname);
  else
    snprintf(w->text, sizeof w->text, "grid axis %d", w->axis);
  return w->text;
}

/* One program: `name` and `text` name it in messages; consts the launch constants' values so far
 * (TL_RPN_LCONST reads only earlier ones). */
static tl_status program_eval(const tl_kernel_info *k, const struct tl_grid_program *prog, prog_what *name,
                              const char *text, const int64_t *values, const bool *known,
                              const int64_t *consts, int64_t num_sms, int64_t *out, char *err,
                              size_t err_size)
{
#define what what_text(name)
  int64_t small[32];
  int64_t *stack = prog->max_depth <= 32 ? small : malloc((size_t)prog->max_depth * sizeof *stack);
  if (!stack) {
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  int depth = 0;
  tl_status st = TL_OK;
  const char *why = NULL;
  for (int i = 0; i < prog->ntokens && st == TL_OK; i++) {
    const tl_rpn_token *t = &prog->tokens[i];
    if (t->op == TL_RPN_CONST) {
      stack[depth++] = t->value;
      continue;
    }
    if (t->op == TL_RPN_LCONST) {
      stack[depth++] = consts[t->param];
      continue;
    }
    if (t->op == TL_RPN_NUM_SMS) {
      if (num_sms < 1) {
        tl_fmt(err, err_size,
               "%s ('%s') uses num_sms, and the device's multiprocessor count is not known "
               "(plan the launch with tl_plan_launch_sms)",
               what, text);
        st = TL_ERR_BAD_ARGUMENT;
        break;
      }
      stack[depth++] = num_sms;
      continue;
    }
    if (t->op == TL_RPN_PARAM) {
      if (!known[t->param]) {
        tl_fmt(err, err_size, "%s ('%s'): the value of '%s' does not fit in int64", what, text,
               k->params[t->param].name);
        st = TL_ERR_BAD_ARGUMENT;
        break;
      }
      stack[depth++] = values[t->param];
      continue;
    }
    if (t->op == TL_RPN_NEXT_POW2) {
      int64_t a = stack[depth - 1], r = 1;
      while (r < a && r <= INT64_MAX / 2)
        r *= 2;
      if (r < a) {
        tl_fmt(err, err_size, "%s ('%s'): next_pow2(%lld) overflows", what, text, (long long)a);
        st = TL_ERR_BAD_ARGUMENT;
        break;
      }
      stack[depth - 1] = r;
      continue;
    }
    if (t->op == TL_RPN_SELECT) {
      depth -= 2;
      stack[depth - 1] = stack[depth - 1] ? stack[depth] : stack[depth + 1];
      continue;
    }
    int64_t b = stack[--depth], a = stack[depth - 1], r = 0;
    bool overflow = false;
    switch (t->op) {
    case TL_RPN_ADD: overflow = __builtin_add_overflow(a, b, &r); break;
    case TL_RPN_SUB: overflow = __builtin_sub_overflow(a, b, &r); break;
    case TL_RPN_MUL: overflow = __builtin_mul_overflow(a, b, &r); break;
    case TL_RPN_DIV:
    case TL_RPN_MOD:
      if (b == 0) {
        why = t->op == TL_RPN_DIV ? "division by zero" : "remainder by zero";
        break;
      }
      if (a == INT64_MIN && b == -1) {
        overflow = true;
        break;
      }
      r = t->op == TL_RPN_DIV ? a / b : a % b;
      break;
    case TL_RPN_MIN: r = a < b ? a : b; break;
    case TL_RPN_MAX: r = a > b ? a : b; break;
    case TL_RPN_CEILDIV:
      if (b == 0) {
        why = "ceildiv by zero";
        break;
      }
      if (b < 0) {
        why = "ceildiv by a negative number";
        break;
      }
      overflow = __builtin_add_overflow(a, b - 1, &r);
      r /= b;
      break;
    case TL_RPN_LT: r = a < b; break;
    case TL_RPN_LE: r = a <= b; break;
    case TL_RPN_GT: r = a > b; break;
    case TL_RPN_GE: r = a >= b; break;
    case TL_RPN_EQ: r = a == b; break;
    case TL_RPN_NE: r = a != b; break;
    case TL_RPN_AND: r = a && b; break;
    case TL_RPN_OR: r = a || b; break;
    default: why = "internal error: unknown RPN operator"; break;
    }
    if (overflow)
      why = "64-bit overflow";
    if (why) {
      tl_fmt(err, err_size, "%s ('%s'): %s (at token %d, with operands %lld and %lld)", what, text, why,
             i + 1, (long long)a, (long long)b);
      st = TL_ERR_BAD_ARGUMENT;
      break;
    }
    stack[depth - 1] = r;
  }
  if (st == TL_OK)
    *out = stack[0];
  if (stack != small)
    free(stack);
  return st;
#undef what
}

tl_status tl_grid_eval(const tl_kernel_info *k, int axis, const int64_t *values, const bool *known,
                       int64_t num_sms, int64_t *out, char *err, size_t err_size)
{
  prog_what name; /* text: made only for a message */
  name.axis = axis;
  name.cname = NULL;
  return program_eval(k, k->grid[axis], &name, k->grid_text[axis], values, known, NULL, num_sms, out, err,
                      err_size);
}

tl_status tl_consts_eval(const tl_kernel_info *k, const int64_t *values, const bool *known, int64_t num_sms,
                         int64_t *consts, char *err, size_t err_size)
{
  for (int i = 0; i < k->nconsts; i++) {
    prog_what name;
    name.axis = -1;
    name.cname = k->consts[i].name;
    tl_status st = program_eval(k, k->consts[i].program, &name, k->consts[i].text, values, known, consts,
                                num_sms, &consts[i], err, err_size);
    if (st != TL_OK)
      return st;
  }
  return TL_OK;
}
