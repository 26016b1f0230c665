/* run.c: `tilec run FILE.tl [options]` (run.h; docs/cli.md, "tilec run").
 *
 *   parse_run_args   the command line, as given
 *   interp_compile   the source to tile IR (interp/), the kernel chosen
 *   bind_params      each parameter's value: tensors from .npy files (npy.c) or generated, sizes from
 *                    --size or from the files' shapes, scalars from numbers
 *   execute          the interpreter (--level tile or thread), whose diagnostics print as the
 *                    compiler's
 *   finish           the tensors written (--out, and the files of tensors the kernel only writes),
 *                    printed (--print) or summed up
 *
 * Every problem with the command line or the files is "tilec: error: ..." and status 1, as main.c's
 * usage errors; the source's and the interpreter's are FILE:LINE:COL diagnostics with a caret.
 */
#include "run.h"

#include "cli.h"
#include "interp.h"        /* interp/interp.h; fe.h, ir.h with it */
#include "npy.h"
#include "tilec_runtime.h" /* f16, bf16, e4m3 and e5m2 on the host */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: tilec run FILE.tl [options]\n"
    "\n"
    "Runs a kernel of FILE.tl on the CPU with the interpreter (docs/interpreter.md), which reports an\n"
    "index out of bounds, a read of something never written, a division by zero and, at the thread\n"
    "level, races, barriers and asynchronous copies used too early, with their line.\n"
    "\n"
    "options:\n"
    "  --kernel NAME        the kernel to run (default: the file's only kernel)\n"
    "  --arg NAME=SPEC      the value of parameter NAME; SPEC is\n"
    "                         FILE.npy      a tensor read from FILE.npy; for a tensor the kernel\n"
    "                                       only writes, where it is written after the run\n"
    "                         rand[:SEED]   uniform in [-1, 1) (integers: -8 to 7, unsigned 0 to 15)\n"
    "                         zeros, ones, arange (0, 1, 2, ... in row-major order)\n"
    "                         a number      for a scalar (as -D takes it)\n"
    "  --size NAME=N        a symbolic size (default: from an .npy argument's shape); also\n"
    "                       --size M=4,N=5\n"
    "  -D NAME=VALUE        override the kernel constant NAME (also -DNAME=VALUE)\n"
    "  --out NAME=FILE.npy  write the tensor NAME to FILE.npy after the run\n"
    "  --print NAME         print the tensor NAME after the run\n"
    "  --num-sms N          the value of num_sms in grid expressions (default 4)\n"
    "  --level tile|thread  the tile IR as written (default), or the lowered program of --arch, every\n"
    "                       thread of a block, checked as it runs\n"
    "  --arch TARGET        the target the thread level lowers for (default sm_90a; see tilec --help)\n"
    "  --no-tma             the thread level runs what a host without tensor maps gets on sm_90a: the\n"
    "                       cp.async form of the pipelined loops, not the TMA one (docs/abi.md)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Without --out and --print, each tensor is summed up after the run. A tensor the kernel only\n"
    "writes and that no --arg names starts as zeros. A .npy file must have the parameter's rank and\n"
    "dtype (f32: <f4, i32: <i4, ...); a bf16 tensor reads <f4 (rounded to bf16) or <u2 (the bits),\n"
    "an e4m3 or e5m2 tensor <f4 (rounded, saturating) or |u1 (the bits); all three are written as\n"
    "<f4. See docs/cli.md.\n";

/* ---------------------------------------------------------------- the command line */

typedef struct {
  const char *name, *value; /* value points into argv */
  const char *text;         /* the option as given, "--arg A=a.npy", for messages */
} NameValue;

typedef struct {
  const char *input, *kernel;
  ConstDef *defs;
  NameValue *sizes, *args, *outs;
  const char **prints;
  int ndefs, nsizes, nargs, nouts, nprints;
  int num_sms;
  bool thread;          /* --level thread */
  bool no_tma;          /* --no-tma: run as a host that passes no tensor maps */
  const Target *target; /* --arch, for the thread level */
} RunOptions;

/* Exit status of parse_run_args when there is a kernel to run. */
enum { RUN = -1 };

/* "tilec: error: ..." on standard error; false. */
__attribute__((format(printf, 1, 2))) static bool run_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  cli_verror(fmt, ap);
  va_end(ap);
  return false;
}

/* A usage error: the message, then where the help is; status 1, as main.c's. */
#define usage_error(...) (run_error(__VA_ARGS__), fputs("(run 'tilec run --help' for usage)\n", stderr), 1)

/* argv[*i] is the option name, as "NAME V" (V the next argument, *i moved to it) or "NAME=V": true
 * with *value (NULL when the value is missing); false when argv[*i] is another option. */
static bool option(const char *name, int argc, char **argv, int *i, const char **value)
{
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0 || (a[n] != 0 && a[n] != '='))
    return false;
  *value = a[n] == '=' ? a + n + 1 : *i + 1 < argc ? argv[++*i] : NULL;
  return true;
}

/* "NAME=VALUE" into nv (NAME copied into the arena); false if it is not of that form. */
static bool name_value(Arena *a, const char *option, const char *arg, NameValue *nv)
{
  const char *eq = arg ? strchr(arg, '=') : NULL;
  if (!eq || eq == arg || !eq[1])
    return false;
  nv->name = arena_strndup(a, arg, (size_t)(eq - arg));
  nv->value = eq + 1;
  nv->text = arena_printf(a, "%s %s", option, arg);
  return true;
}

/* A non-negative integer of at most max, written as -D takes integers (decimal or 0x hex). */
static bool parse_count(const char *text, int64_t max, int64_t *v)
{
  double f;
  return sema_parse_define(text, v, &f) == DEFINE_INT && *v >= 0 && *v <= max;
}

/* Reads argv (argv[0] is "run") into o: RUN, or the exit status when there is nothing to run
 * (--help, a usage error, which it reports). */
static int parse_run_args(Arena *a, int argc, char **argv, RunOptions *o)
{
  o->defs = ARENA_ARRAY(a, ConstDef, argc);
  size_t commas = 0; /* --size M=4,N=5 gives two sizes */
  for (int i = 0; i < argc; i++)
    for (const char *c = argv[i]; *c; c++)
      commas += *c == ',';
  o->sizes = ARENA_ARRAY(a, NameValue, (size_t)argc + commas);
  o->args = ARENA_ARRAY(a, NameValue, argc);
  o->outs = ARENA_ARRAY(a, NameValue, argc);
  o->prints = ARENA_ARRAY(a, const char *, argc);
  /* the options NAME=VALUE that accumulate */
  struct {
    const char *option, *form;
    NameValue *list;
    int *n;
  } lists[] = {{"--arg", "NAME=SPEC", o->args, &o->nargs},
               {"--size", "NAME=N", o->sizes, &o->nsizes},
               {"--out", "NAME=FILE.npy", o->outs, &o->nouts}};
  enum { NLISTS = sizeof lists / sizeof *lists };
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *v;
    int l = 0;
    while (l < NLISTS && !option(lists[l].option, argc, argv, &i, &v))
      l++;
    if (l < NLISTS && lists[l].list == o->sizes && v && strchr(v, ',')) {
      /* --size M=4,N=5: as two --size options (the compiler's --size takes both forms too) */
      char *copy = arena_strdup(a, v);
      for (char *item = strtok(copy, ","); item; item = strtok(NULL, ","))
        if (!name_value(a, lists[l].option, item, &o->sizes[o->nsizes++]))
          return usage_error("%s needs %s, got '%s'", lists[l].option, lists[l].form, v);
    } else if (l < NLISTS) {
      if (!name_value(a, lists[l].option, v, &lists[l].list[(*lists[l].n)++]))
        return usage_error("%s needs %s, got '%s'", lists[l].option, lists[l].form, v ? v : "");
    } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      return cli_write_file("-", USAGE, strlen(USAGE)) ? 1 : 0;
    } else if (option("--kernel", argc, argv, &i, &v)) {
      if (!v || !*v)
        return usage_error("--kernel needs a kernel name");
      o->kernel = v;
    } else if (!strncmp(arg, "-D", 2)) {
      NameValue nv;
      const char *d = arg[2] ? arg + 2 : (++i < argc ? argv[i] : NULL);
      if (!name_value(a, "-D", d, &nv))
        return usage_error("-D needs NAME=VALUE, got '%s'", d ? d : "");
      o->defs[o->ndefs++] = (ConstDef){nv.name, nv.value};
    } else if (option("--print", argc, argv, &i, &v)) {
      if (!v || !*v)
        return usage_error("--print needs a tensor's name");
      o->prints[o->nprints++] = v;
    } else if (option("--num-sms", argc, argv, &i, &v)) {
      int64_t n;
      if (!v || !parse_count(v, INT32_MAX, &n) || n == 0)
        return usage_error("--num-sms needs a positive integer, got '%s'", v ? v : "");
      o->num_sms = (int)n;
    } else if (option("--level", argc, argv, &i, &v)) {
      if (!v || (strcmp(v, "tile") && strcmp(v, "thread")))
        return usage_error("--level takes tile or thread, got '%s'", v ? v : "");
      o->thread = !strcmp(v, "thread");
    } else if (!strcmp(arg, "--no-tma")) {
      o->no_tma = true;
    } else if (option("--arch", argc, argv, &i, &v)) {
      if (!v || !(o->target = target_find(v)))
        return usage_error("unknown target '%s' for --arch", v ? v : "");
    } else if (arg[0] == '-' && arg[1]) {
      return usage_error("unknown option '%s'", arg);
    } else if (o->input) {
      return usage_error("more than one input file ('%s')", arg);
    } else
      o->input = arg;
  }
  if (!o->input)
    return usage_error("no input file");
  return RUN;
}

/* ---------------------------------------------------------------- parameters */

typedef enum { SRC_NONE, SRC_FILE, SRC_RAND, SRC_ZEROS, SRC_ONES, SRC_ARANGE, SRC_NUMBER } Source;

/* A kernel parameter and the value it gets. */
typedef struct {
  const char *name;
  const Buffer *buf; /* a tensor, or NULL */
  const Var *var;    /* a size or a scalar, or NULL */
  const NameValue *arg;
  Source source;
  uint64_t seed;
  bool reads, writes; /* a tensor: what the kernel does with it */
  NpyArray file;      /* a tensor read from a file */
  int64_t dims[TL_MAX_RANK], count;
  /* the storage's shape, as --out writes it and --print shows it: dims, or for a tensor declared
   * with strides(...) its file's shape (or one dimension of the elements the view spans) */
  int store_rank;
  int64_t store_dims[NPY_MAX_RANK > TL_MAX_RANK ? NPY_MAX_RANK : TL_MAX_RANK];
  void *data;
  /* a size: its value, and where it came from ("--size N=8", "a.npy for 'A', dimension 0") */
  bool known;
  int64_t size;
  const char *size_from;
  InterpArg value;
} Param;

typedef struct {
  Arena *arena;
  const RunOptions *o;
  Kernel *k;
  Param *params;
  int nparams;
} Run;

static Param *find_param(const Run *r, const char *name)
{
  for (int i = 0; i < r->nparams; i++)
    if (!strcmp(r->params[i].name, name))
      return &r->params[i];
  return NULL;
}

/* "A: f32[N, 64]", as declared, for messages; with extents, "A: f32[1000, 64]"; a size or a scalar
 * "N: size i32", "a: f32". */
static const char *param_text_as(const Run *r, const Param *p, bool extents)
{
  if (!p->buf)
    return arena_printf(r->arena, "%s: %s%s", p->name, p->var->kind == VAR_SIZE ? "size " : "",
                        type_name(p->var->type));
  const char *text = arena_printf(r->arena, "%s: %s[", p->name, type_name(p->buf->elem));
  for (int d = 0; d < p->buf->rank; d++) {
    const Expr *e = p->buf->shape[d];
    text = extents || e->kind != EX_VAR
               ? arena_printf(r->arena, "%s%s%lld", text, d ? ", " : "",
                              (long long)(extents ? p->dims[d] : e->i))
               : arena_printf(r->arena, "%s%s%s", text, d ? ", " : "", r->k->vars[e->var].name);
  }
  return arena_printf(r->arena, "%s]", text);
}

static const char *param_text(const Run *r, const Param *p) { return param_text_as(r, p, false); }
static const char *tensor_text(const Run *r, const Param *p) { return param_text_as(r, p, true); }

/* tensor_text, and for a view its strides and the storage that --print shows and --out writes:
 * "A: f16[3, 2] strides(4, 1), storage [10]". */
static const char *stored_text(const Run *r, const Param *p)
{
  const char *text = tensor_text(r, p);
  if (!buffer_strided(p->buf))
    return text;
  for (int d = 0; d < p->buf->rank; d++) {
    const Expr *e = p->buf->stride[d];
    long long v = e->kind == EX_VAR ? (long long)find_param(r, r->k->vars[e->var].name)->size
                                    : (long long)e->i;
    text = arena_printf(r->arena, "%s%s%lld", text, d ? ", " : " strides(", v);
  }
  text = arena_printf(r->arena, "%s), storage [", text);
  for (int d = 0; d < p->store_rank; d++)
    text = arena_printf(r->arena, "%s%s%lld", text, d ? ", " : "", (long long)p->store_dims[d]);
  return arena_printf(r->arena, "%s]", text);
}

/* The parameters' names, "A, B, C, N", for messages. */
static const char *param_names(const Run *r)
{
  StrBuf sb = {0};
  for (int i = 0; i < r->nparams; i++)
    sb_printf(&sb, "%s%s", i ? ", " : "", r->params[i].name);
  const char *text = arena_strdup(r->arena, sb.data ? sb.data : "");
  free(sb.data);
  return text;
}

/* What an option names: --out and --print a tensor, --size a size, --arg a tensor or a scalar. */
typedef enum { WANT_TENSOR, WANT_SIZE, WANT_VALUE } Want;

/* The parameter an option names, of the kind it wants; NULL after reporting why not. */
static Param *named_param(const Run *r, const char *text, const char *name, Want want)
{
  Param *p = find_param(r, name);
  if (!p) {
    for (int v = 0; v < r->k->nvars; v++)
      if (r->k->vars[v].kind == VAR_CONST && !strcmp(r->k->vars[v].name, name)) {
        run_error("%s: '%s' is a constant of kernel '%s': set it with -D %s=VALUE", text, name, r->k->name,
                  name);
        return NULL;
      }
    run_error("%s: kernel '%s' has no parameter '%s' (its parameters: %s)", text, r->k->name, name,
              param_names(r));
    return NULL;
  }
  bool is_size = p->var && p->var->kind == VAR_SIZE;
  if (want == WANT_SIZE && !is_size)
    run_error("%s: '%s' is not a size (%s); give it with --arg", text, name, param_text(r, p));
  else if (want == WANT_VALUE && is_size)
    run_error("%s: '%s' is a size; give it with --size %s=VALUE", text, name, name);
  else if (want == WANT_TENSOR && !p->buf)
    run_error("%s: '%s' is not a tensor (%s)", text, name, param_text(r, p));
  else
    return p;
  return NULL;
}

/* What the kernel does with each global tensor: reads it (a load, a copy from it, an atomic) or
 * writes it (a store, a copy into it, a fill, an atomic). */
typedef struct {
  const Kernel *k;
  bool *reads, *writes;
} Access;

static Expr *note_load(void *ctx, Expr *e)
{
  Access *acc = ctx;
  if (e->kind == EX_LOAD && acc->k->bufs[e->buf].scope == SCOPE_GLOBAL)
    acc->reads[e->buf] = true;
  return e;
}

static void note_access(Access *acc, const Stmt *s)
{
  if (!s)
    return;
  const Buffer *bufs = acc->k->bufs;
  for (int i = 0; i < s->nbody; i++)
    note_access(acc, s->body[i]);
  switch (s->kind) {
  case ST_COPY:
    acc->reads[s->src.buf] |= bufs[s->src.buf].scope == SCOPE_GLOBAL;
    acc->writes[s->dst.buf] |= bufs[s->dst.buf].scope == SCOPE_GLOBAL;
    break;
  case ST_ATOMIC: acc->reads[s->buf] |= bufs[s->buf].scope == SCOPE_GLOBAL; /* fall through */
  case ST_STORE:
  case ST_FILL: acc->writes[s->buf] |= bufs[s->buf].scope == SCOPE_GLOBAL; break;
  default: break;
  }
  note_access(acc, s->then_s);
  note_access(acc, s->else_s);
}

/* The parameters, each with its --arg (the last, if several) and what the kernel does with it. */
static bool collect_params(Run *r)
{
  Kernel *k = r->k;
  r->params = ARENA_ARRAY(r->arena, Param, k->nparams + 1);
  r->nparams = k->nparams;
  Access acc = {k, ARENA_ARRAY(r->arena, bool, k->nbufs + 1), ARENA_ARRAY(r->arena, bool, k->nbufs + 1)};
  note_access(&acc, k->body);
  stmt_rewrite_exprs(k->body, note_load, &acc);
  for (int i = 0; i < k->nparams; i++) {
    Param *p = &r->params[i];
    int h = k->params[i].index;
    if (k->params[i].is_buffer) {
      p->buf = &k->bufs[h];
      p->reads = acc.reads[h];
      p->writes = acc.writes[h];
    } else
      p->var = &k->vars[h];
    p->name = p->buf ? p->buf->name : p->var->name;
  }
  const RunOptions *o = r->o;
  for (int i = 0; i < o->nargs; i++) {
    Param *p = named_param(r, o->args[i].text, o->args[i].name, WANT_VALUE);
    if (!p)
      return false;
    p->arg = &o->args[i];
  }
  for (int i = 0; i < o->nouts; i++)
    if (!named_param(r, o->outs[i].text, o->outs[i].name, WANT_TENSOR))
      return false;
  for (int i = 0; i < o->nprints; i++)
    if (!named_param(r, arena_printf(r->arena, "--print %s", o->prints[i]), o->prints[i], WANT_TENSOR))
      return false;
  return true;
}

/* x rounded to a value of type t, once from the double (8-bit floats saturating) */
static double round_to(TypeKind t, double x)
{
  switch (t) {
  case TY_F16: return tl_f16_to_float(tl_f16_from_double(x));
  case TY_BF16: return tl_bf16_to_float(tl_bf16_from_double(x));
  case TY_E4M3: return tl_e4m3_to_float(tl_e4m3_from_double(x));
  case TY_E5M2: return tl_e5m2_to_float(tl_e5m2_from_double(x));
  case TY_F32: return (float)x;
  default: return x;
  }
}

/* A scalar's value from its --arg: a number as -D takes it, which the type must hold. */
static bool scalar_value(const Run *r, Param *p)
{
  TypeKind t = p->var->type;
  int64_t i = 0;
  double f = 0;
  DefineKind kind = sema_parse_define(p->arg->value, &i, &f);
  bool ok = type_is_float(t)     ? kind == DEFINE_INT || kind == DEFINE_INT_BIG || kind == DEFINE_FLOAT
            : t == TY_BOOL       ? kind == DEFINE_BOOL || (kind == DEFINE_INT && (i == 0 || i == 1))
            : kind == DEFINE_INT ? type_wrap_int(t, i) == i && (type_is_signed(t) || i >= 0)
                                 : false;
  if (!ok)
    return run_error("%s: '%s' is a scalar of type %s; expected %s", p->arg->text, p->name, type_name(t),
                     type_is_float(t) ? "a number"
                     : t == TY_BOOL   ? "true or false"
                                      : arena_printf(r->arena, "an integer that fits in %s", type_name(t)));
  p->source = SRC_NUMBER;
  if (type_is_fp8(t)) /* rounded once from the double (saturating), as the runtime does for the GPU */
    f = round_to(t, f);
  p->value = type_is_float(t) ? (InterpArg){.name = p->name, .f = f} : (InterpArg){.name = p->name, .i = i};
  return true;
}

/* A tensor's --arg: a file, or data to generate. */
static bool tensor_source(Param *p)
{
  const char *v = p->arg->value;
  int64_t seed = 0;
  static const struct {
    const char *word;
    Source source;
  } words[] = {{"zeros", SRC_ZEROS}, {"ones", SRC_ONES}, {"arange", SRC_ARANGE}, {"rand", SRC_RAND}};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (!strcmp(v, words[i].word)) {
      p->source = words[i].source;
      return true;
    }
  if (!strncmp(v, "rand:", 5)) {
    if (!parse_count(v + 5, INT64_MAX, &seed))
      return run_error("%s: the seed of rand:SEED is a non-negative integer, got '%s'", p->arg->text, v + 5);
    p->source = SRC_RAND;
    p->seed = (uint64_t)seed;
    return true;
  }
  double f;
  if (sema_parse_define(v, &seed, &f) != DEFINE_BAD)
    return run_error("%s: '%s' is a tensor; expected FILE.npy, rand, rand:SEED, zeros, ones or arange",
                     p->arg->text, p->name);
  p->source = SRC_FILE;
  return true;
}

/* bf16, e4m3 and e5m2: numpy has no such dtype; files hold them as <f4, or as their bits */
static bool npy_lacks(TypeKind t) { return t == TY_BF16 || t == TY_E4M3 || t == TY_E5M2; }

/* The .npy dtype that holds a tensor of type t; bf16, e4m3 and e5m2 have none: see read_file_tensor. */
static NpyDtype npy_dtype_of(TypeKind t)
{
  switch (t) {
  case TY_BOOL: return NPY_BOOL;
  case TY_I8: return NPY_I8;
  case TY_I16: return NPY_I16;
  case TY_I32: return NPY_I32;
  case TY_I64: return NPY_I64;
  case TY_U8: return NPY_U8;
  case TY_U16: return NPY_U16;
  case TY_U32: return NPY_U32;
  case TY_U64: return NPY_U64;
  case TY_F16: return NPY_F16;
  case TY_F64: return NPY_F64;
  default: return NPY_F32; /* f32, and bf16, e4m3, e5m2 when written */
  }
}

/* A tensor's size from dimension d of its file, or the check that the file agrees with it. */
static bool size_from_file(Run *r, Param *p, int d)
{
  const Expr *e = p->buf->shape[d];
  int64_t got = p->file.shape[d];
  if (e->kind != EX_VAR) {
    if (got == e->i)
      return true;
    return run_error("%s: the tensor %s has %lld in dimension %d, but '%s' has %lld", p->arg->text,
                     param_text(r, p), (long long)e->i, d, p->arg->value, (long long)got);
  }
  Param *size = find_param(r, r->k->vars[e->var].name);
  const char *from = arena_printf(r->arena, "%s for '%s', dimension %d", p->arg->value, p->name, d);
  if (!size->known) {
    if (got > INT32_MAX)
      return run_error("%s: dimension %d of the file is %lld, more than a size (i32) holds", p->arg->text, d,
                       (long long)got);
    size->known = true;
    size->size = got;
    size->size_from = from;
    return true;
  }
  if (size->size == got)
    return true;
  return run_error("shapes disagree: %s is %lld (%s), but %lld (%s)", size->name, (long long)size->size,
                   size->size_from, (long long)got, from);
}

/* A tensor read from its file: the parameter's rank and dtype (bf16: <f4 or <u2; e4m3, e5m2: <f4 or
 * |u1), sizes from its shape or checked against it. */
static bool read_file_tensor(Run *r, Param *p)
{
  char err[512];
  TypeKind t = p->buf->elem;
  if (!npy_read(p->arg->value, &p->file, err, sizeof err))
    return run_error("%s: cannot read '%s': %s", p->arg->text, p->arg->value, err);
  NpyDtype want = npy_dtype_of(t), bits = t == TY_BF16 ? NPY_U16 : NPY_U8;
  bool no_npy = npy_lacks(t);
  if (no_npy ? p->file.dtype != NPY_F32 && p->file.dtype != bits : p->file.dtype != want)
    return run_error("%s: the tensor %s needs %s, but '%s' holds %s", p->arg->text, param_text(r, p),
                     no_npy ? arena_printf(r->arena, "<f4 (rounded to %s) or %s (%s bits)", type_name(t),
                                           npy_descr(bits), type_name(t))
                            : npy_descr(want),
                     p->arg->value, npy_descr(p->file.dtype));
  if (buffer_strided(p->buf)) /* the file is the storage: the view's extents come from the sizes */
    return true;
  if (p->file.rank != p->buf->rank)
    return run_error("%s: the tensor %s has %d dimension%s, but '%s' has %d", p->arg->text, param_text(r, p),
                     p->buf->rank, p->buf->rank == 1 ? "" : "s", p->arg->value, p->file.rank);
  for (int d = 0; d < p->buf->rank; d++)
    if (!size_from_file(r, p, d))
      return false;
  return true;
}

/* ---------------------------------------------------------------- tensor data */

static void store_float(TypeKind t, void *data, int64_t i, double x)
{
  switch (t) {
  case TY_F16: ((uint16_t *)data)[i] = tl_f16_from_double(x); break;
  case TY_BF16: ((uint16_t *)data)[i] = tl_bf16_from_double(x); break;
  case TY_E4M3: ((uint8_t *)data)[i] = tl_e4m3_from_double(x); break;
  case TY_E5M2: ((uint8_t *)data)[i] = tl_e5m2_from_double(x); break;
  case TY_F64: ((double *)data)[i] = x; break;
  default: ((float *)data)[i] = (float)x; break;
  }
}

/* v wrapped to the integer (or bool) type t, as a cast would. */
static void store_int(TypeKind t, void *data, int64_t i, int64_t v)
{
  v = type_wrap_int(t, v);
  switch (type_bytes(t)) {
  case 1: ((uint8_t *)data)[i] = (uint8_t)v; break;
  case 2: ((uint16_t *)data)[i] = (uint16_t)v; break;
  case 4: ((uint32_t *)data)[i] = (uint32_t)v; break;
  default: ((uint64_t *)data)[i] = (uint64_t)v; break;
  }
}

static double load_float(TypeKind t, const void *data, int64_t i)
{
  switch (t) {
  case TY_F16: return tl_f16_to_float(((const uint16_t *)data)[i]);
  case TY_BF16: return tl_bf16_to_float(((const uint16_t *)data)[i]);
  case TY_E4M3: return tl_e4m3_to_float(((const uint8_t *)data)[i]);
  case TY_E5M2: return tl_e5m2_to_float(((const uint8_t *)data)[i]);
  case TY_F64: return ((const double *)data)[i];
  default: return ((const float *)data)[i];
  }
}

/* An integer or bool element; u64 as its bits. */
static int64_t load_int(TypeKind t, const void *data, int64_t i)
{
  switch (t) {
  case TY_BOOL:
  case TY_U8: return ((const uint8_t *)data)[i];
  case TY_I8: return ((const int8_t *)data)[i];
  case TY_I16: return ((const int16_t *)data)[i];
  case TY_U16: return ((const uint16_t *)data)[i];
  case TY_I32: return ((const int32_t *)data)[i];
  case TY_U32: return ((const uint32_t *)data)[i];
  default: return ((const int64_t *)data)[i];
  }
}

/* splitmix64: rand's values depend on the seed and the parameter's name only. */
static uint64_t next_random(uint64_t *state)
{
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* The tensor's elements from its source. */
static void fill_tensor(Param *p)
{
  TypeKind t = p->buf->elem;
  uint64_t state = p->seed;
  for (const char *c = p->name; *c; c++) /* FNV-1a of the name, so that A and B differ */
    state = (state ^ (uint8_t)*c) * 0x100000001b3u;
  if (p->source == SRC_FILE) { /* zeros for a tensor the kernel only writes: its file was not read */
    if (!p->file.data)
      return;
    if (t != TY_F32 && p->file.dtype == NPY_F32) /* bf16, e4m3, e5m2 from <f4 */
      for (int64_t i = 0; i < p->count; i++)
        store_float(t, p->data, i, ((const float *)p->file.data)[i]);
    else
      memcpy(p->data, p->file.data, (size_t)p->count * (size_t)type_bytes(t));
    return;
  }
  for (int64_t i = 0; p->source != SRC_ZEROS && p->source != SRC_NONE && i < p->count; i++) {
    uint64_t x = p->source == SRC_RAND ? next_random(&state) : 0;
    if (type_is_float(t))
      store_float(t, p->data, i,
                  p->source == SRC_ONES     ? 1
                  : p->source == SRC_ARANGE ? (double)i
                                            : (double)(x >> 11) * 0x1p-52 - 1);
    else
      store_int(t, p->data, i,
                p->source == SRC_ONES     ? 1
                : p->source == SRC_ARANGE ? i
                : t == TY_BOOL            ? (int64_t)(x >> 63)
                : type_is_signed(t)       ? (int64_t)(x >> 60) - 8
                                          : (int64_t)(x >> 60));
  }
}

/* ---------------------------------------------------------------- binding */

/* A tensor declared with strides(...): its data is storage that the view [dims] strides(...)
 * addresses. From a file, the file's elements, which must hold every element the view reaches;
 * otherwise exactly those elements, as one dimension. p->count becomes the storage's elements. */
static bool strided_storage(Run *r, Param *p)
{
  int64_t declared[TL_MAX_RANK];
  for (int d = 0; d < p->buf->rank; d++) {
    const Expr *e = p->buf->stride[d];
    declared[d] = e->kind == EX_VAR ? find_param(r, r->k->vars[e->var].name)->size : e->i;
    if (declared[d] < 1)
      return run_error("the tensor %s has stride %d of %lld; a stride is positive (--size)", param_text(r, p),
                       d, (long long)declared[d]);
  }
  int64_t span, last = 0;
  bool empty = false;
  for (int d = 0; d < p->buf->rank; d++) {
    int64_t step;
    empty |= p->dims[d] == 0;
    if (p->dims[d] > 0 && (__builtin_mul_overflow(p->dims[d] - 1, declared[d], &step) ||
                           __builtin_add_overflow(last, step, &last)))
      return run_error("the tensor %s reaches more elements than a run can hold", param_text(r, p));
  }
  span = empty ? 0 : last + 1;
  if (p->source == SRC_FILE && p->file.data) {
    if (p->file.count < span)
      return run_error(
          "%s: the view %s strides(...) reaches %lld elements of its storage, but '%s' holds %lld",
          p->arg->text, tensor_text(r, p), (long long)span, p->arg->value, (long long)p->file.count);
    p->count = p->file.count;
    p->store_rank = p->file.rank;
    for (int d = 0; d < p->file.rank; d++)
      p->store_dims[d] = p->file.shape[d];
    return true;
  }
  p->count = span;
  p->store_rank = 1;
  p->store_dims[0] = span;
  return true;
}

/* Every parameter's value: scalars, then files (which may set sizes), then --size (checked against
 * the files), then each tensor's extent and data. */
static bool bind_params(Run *r)
{
  const RunOptions *o = r->o;
  for (int i = 0; i < o->nsizes; i++) {
    Param *p = named_param(r, o->sizes[i].text, o->sizes[i].name, WANT_SIZE);
    int64_t v;
    if (!p)
      return false;
    if (!parse_count(o->sizes[i].value, INT32_MAX, &v))
      return run_error("%s: a size is an integer from 0 to %d", o->sizes[i].text, INT32_MAX);
    p->known = true;
    p->size = v;
    p->size_from = o->sizes[i].text;
  }
  for (int i = 0; i < r->nparams; i++) {
    Param *p = &r->params[i];
    if (!p->arg)
      continue;
    if (p->buf ? !tensor_source(p) : !scalar_value(r, p))
      return false;
    /* a tensor the kernel only writes: its file is where the result goes, and not read */
    if (p->source == SRC_FILE && !(p->writes && !p->reads) && !read_file_tensor(r, p))
      return false;
  }
  for (int i = 0; i < r->nparams; i++) {
    Param *p = &r->params[i];
    if (p->var && p->var->kind == VAR_SIZE && !p->known)
      return run_error("the size %s of kernel '%s' is not given: use --size %s=VALUE, or an .npy file for a "
                       "tensor of that size",
                       p->name, r->k->name, p->name);
    if (p->var && p->var->kind == VAR_SCALAR && !p->arg)
      return run_error("the scalar %s has no value: use --arg %s=NUMBER", param_text(r, p), p->name);
    if (p->buf && !p->arg && p->reads)
      return run_error("the tensor %s has no value: use --arg %s=FILE.npy (or rand, zeros, ones, arange)",
                       param_text(r, p), p->name);
    if (p->var && p->var->kind == VAR_SIZE)
      p->value = (InterpArg){.name = p->name, .i = p->size};
  }
  for (int i = 0; i < r->nparams; i++) {
    Param *p = &r->params[i];
    if (!p->buf)
      continue;
    p->count = 1;
    for (int d = 0; d < p->buf->rank; d++) {
      const Expr *e = p->buf->shape[d];
      p->dims[d] = e->kind == EX_VAR ? find_param(r, r->k->vars[e->var].name)->size : e->i;
      if (__builtin_mul_overflow(p->count, p->dims[d], &p->count))
        p->count = INT64_MAX;
    }
    p->store_rank = p->buf->rank;
    memcpy(p->store_dims, p->dims, sizeof p->dims);
    if (buffer_strided(p->buf) && !strided_storage(r, p))
      return false;
    size_t bytes;
    if (p->count == INT64_MAX ||
        __builtin_mul_overflow((size_t)p->count, (size_t)type_bytes(p->buf->elem), &bytes) ||
        !(p->data = calloc(bytes ? bytes : 1, 1)))
      return run_error("out of memory for the tensor '%s' (%s, %lld elements)", p->name, param_text(r, p),
                       (long long)p->count);
    fill_tensor(p);
    p->value = (InterpArg){.name = p->name, .data = p->data};
  }
  return true;
}

/* ---------------------------------------------------------------- printing */

/* How a tensor's elements are written: numpy's rules, simplified.  Floats are the shortest decimals
 * that read back as the same value of their type; positional unless the magnitudes call for
 * exponents; the points of a column aligned. */
typedef struct {
  TypeKind t;
  bool exponent;   /* floats: 1.5e+08 */
  int digits;      /* with exponent: the mantissa's digits after the point, or -1 (the fewest) */
  int left, right; /* widths before and after the point (floats), or the whole width */
} Style;

/* Element i as text. */
static void elem_text(const Style *st, const void *data, int64_t i, char *buf, size_t cap)
{
  TypeKind t = st->t;
  if (t == TY_BOOL) {
    snprintf(buf, cap, "%s", load_int(t, data, i) ? "True" : "False");
    return;
  }
  if (!type_is_float(t)) {
    int64_t v = load_int(t, data, i);
    if (t == TY_U64)
      snprintf(buf, cap, "%llu", (unsigned long long)v);
    else
      snprintf(buf, cap, "%lld", (long long)v);
    return;
  }
  double x = load_float(t, data, i);
  if (isnan(x) || isinf(x)) {
    snprintf(buf, cap, "%s", isnan(x) ? "nan" : x < 0 ? "-inf" : "inf");
    return;
  }
  int p = 1; /* significant digits */
  for (char tmp[64]; p < 17; p++) {
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, x);
    if (round_to(t, strtod(tmp, NULL)) == x)
      break;
  }
  if (st->exponent) {
    snprintf(buf, cap, "%.*e", st->digits >= 0 ? st->digits : p - 1 > 8 ? 8 : p - 1, x);
    if (!strchr(buf, '.')) { /* 2e+08 -> 2.e+08 */
      char *e = strchr(buf, 'e');
      memmove(e + 1, e, strlen(e) + 1);
      *e = '.';
    }
    return;
  }
  /* numpy's precision: at most 8 digits after the point, trailing zeros dropped */
  int exp10 = x == 0 ? 0 : (int)floor(log10(fabs(x)));
  int frac = p - 1 - exp10 < 0 ? 0 : p - 1 - exp10 > 8 ? 8 : p - 1 - exp10;
  snprintf(buf, cap, "%.*f", frac, x);
  if (!strchr(buf, '.'))
    strncat(buf, ".", cap - strlen(buf) - 1);
  for (size_t n = strlen(buf); n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.'; n--)
    buf[n - 1] = 0;
}

/* A tensor printed as numpy prints an array: rows in brackets, lines of at most 75 columns; past
 * 1000 elements, the first and last 3 of each dimension around "...".  Three passes over the
 * elements shown: their magnitudes (exponents or not), their widths, then the text. */
typedef enum { PASS_RANGE, PASS_WIDTHS, PASS_PRINT } Pass;

typedef struct {
  FILE *f;
  const Param *p;
  Style st;
  bool summarize;
  Pass pass;
  double lo, hi; /* the smallest and largest finite nonzero magnitude */
  int digits;    /* the most digits a mantissa needs */
  int column;
} Printer;

enum { EDGE = 3, LINE_WIDTH = 75 };

/* What goes between two items of dimension d: a space (a line break where the line is full) in
 * the last dimension, else a line break per dimension below, as numpy. */
static void separate(Printer *pr, int d)
{
  int rank = pr->p->store_rank;
  if (pr->pass != PASS_PRINT)
    return;
  if (d == rank - 1 && pr->column + 1 + pr->st.left + pr->st.right + 1 <= LINE_WIDTH) {
    pr->column += fprintf(pr->f, " ");
    return;
  }
  for (int j = 0; j < (d == rank - 1 ? 1 : rank - 1 - d); j++)
    fputc('\n', pr->f);
  pr->column = fprintf(pr->f, "%*s", d + 1, "");
}

static void put_elem(Printer *pr, int64_t i)
{
  if (pr->pass == PASS_RANGE) {
    double x = type_is_float(pr->st.t) ? fabs(load_float(pr->st.t, pr->p->data, i)) : 0;
    if (isfinite(x) && x != 0) {
      pr->lo = x < pr->lo ? x : pr->lo;
      pr->hi = x > pr->hi ? x : pr->hi;
    }
    return;
  }
  char buf[96];
  elem_text(&pr->st, pr->p->data, i, buf, sizeof buf);
  const char *point = type_is_float(pr->st.t) && !pr->st.exponent ? strchr(buf, '.') : NULL;
  int left = point ? (int)(point - buf) : (int)strlen(buf), right = point ? (int)strlen(point) : 0;
  if (pr->pass == PASS_WIDTHS) {
    const char *mantissa = pr->st.exponent ? strchr(buf, '.') : NULL, *e = strchr(buf, 'e');
    int digits = mantissa && e ? (int)(e - mantissa - 1) : 0;
    pr->st.left = left > pr->st.left ? left : pr->st.left;
    pr->st.right = right > pr->st.right ? right : pr->st.right;
    pr->digits = digits > pr->digits ? digits : pr->digits;
  } else
    pr->column += fprintf(pr->f, "%*s%s%*s", pr->st.left - left, "", buf, pr->st.right - right, "");
}

/* Dimension d of the elements from base on, stride of them in all. */
static void put_rows(Printer *pr, int d, int64_t base, int64_t stride)
{
  int64_t n = pr->p->store_dims[d], sub = stride / n;
  bool last = d == pr->p->store_rank - 1, cut = pr->summarize && n > 2 * EDGE, print = pr->pass == PASS_PRINT;
  if (print)
    pr->column += fprintf(pr->f, "[");
  for (int64_t i = 0; i < n; i++) {
    if (i > 0)
      separate(pr, d);
    if (cut && i == EDGE) {
      if (print)
        pr->column += fprintf(pr->f, "...");
      separate(pr, d);
      i = n - EDGE;
    }
    if (last)
      put_elem(pr, base + i);
    else
      put_rows(pr, d + 1, base + i * sub, sub);
  }
  if (print)
    pr->column += fprintf(pr->f, "]");
}

static void print_tensor(FILE *f, const Run *r, const Param *p)
{
  Printer pr = {
      .f = f, .p = p, .st = {.t = p->buf->elem, .digits = -1}, .summarize = p->count > 1000, .lo = INFINITY};
  fprintf(f, "%s\n", stored_text(r, p));
  if (p->count == 0) {
    fprintf(f, "[]\n");
    return;
  }
  put_rows(&pr, 0, 0, p->count);
  /* exponents where numpy uses them: the largest magnitude 1e8 or more, the smallest nonzero one
   * under 1e-4, or the two more than 1000 apart; then every mantissa with as many digits */
  pr.st.exponent = pr.hi >= 1e8 || (pr.hi > 0 && (pr.lo < 1e-4 || pr.hi / pr.lo > 1e3));
  pr.pass = PASS_WIDTHS;
  put_rows(&pr, 0, 0, p->count);
  if (pr.st.exponent) {
    pr.st.digits = pr.digits;
    pr.st.left = pr.st.right = 0;
    put_rows(&pr, 0, 0, p->count);
  }
  pr.pass = PASS_PRINT;
  put_rows(&pr, 0, 0, p->count);
  fprintf(f, "\n");
}

/* One line per tensor: its type and shape, min, max and mean, and its first elements. */
static void summarize_tensor(FILE *f, const Run *r, const Param *p)
{
  TypeKind t = p->buf->elem;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < p->count; i++) {
    double x = type_is_float(t) ? load_float(t, p->data, i)
               : t == TY_U64    ? (double)(uint64_t)load_int(t, p->data, i)
                                : (double)load_int(t, p->data, i);
    if (isnan(x)) {
      nans++;
      continue;
    }
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
    sum += x;
  }
  fprintf(f, "%s", stored_text(r, p));
  if (p->count > nans)
    fprintf(f, "  min %.6g  max %.6g  mean %.6g", lo, hi, sum / (double)(p->count - nans));
  if (nans)
    fprintf(f, "  nan %lld", (long long)nans);
  Style st = {.t = t, .digits = -1};
  fprintf(f, "  [");
  for (int64_t i = 0; i < p->count && i < 6; i++) {
    char buf[96];
    if (type_is_float(t)) /* as min, max and mean: six digits */
      snprintf(buf, sizeof buf, "%.6g", load_float(t, p->data, i));
    else
      elem_text(&st, p->data, i, buf, sizeof buf);
    fprintf(f, "%s%s", i ? ", " : "", buf);
  }
  fprintf(f, "%s]\n", p->count > 6 ? ", ..." : "");
}

/* ---------------------------------------------------------------- after the run */

/* The tensor as a .npy file at path (bf16, e4m3 and e5m2 as <f4, exactly). */
static bool write_tensor(const Param *p, const char *path)
{
  TypeKind t = p->buf->elem;
  NpyArray a = {.dtype = npy_dtype_of(t), .rank = p->store_rank, .count = p->count, .data = p->data};
  for (int d = 0; d < p->store_rank; d++)
    a.shape[d] = p->store_dims[d];
  float *wide = NULL;
  if (npy_lacks(t)) {
    a.data = wide = malloc((size_t)p->count * sizeof *wide + 1);
    for (int64_t i = 0; wide && i < p->count; i++)
      wide[i] = (float)load_float(t, p->data, i);
  }
  size_t len = 0;
  char *bytes = a.data ? npy_format(&a, &len) : NULL;
  bool ok = bytes ? cli_write_file(path, bytes, len) == 0
                  : (cli_output_error("cannot write", path, ENOMEM), false);
  free(bytes);
  free(wide);
  return ok;
}

/* Writes the outputs (--out, and the files of tensors the kernel only writes), then prints (--print,
 * or else a summary of every tensor). */
/* What the run checked, after the tensors' summaries: the interpreter's counts. */
static const char *plural(int64_t n) { return n == 1 ? "" : "s"; }

static void summarize_checks(FILE *f, const RunOptions *o, const InterpStats *st)
{
  if (!o->thread) {
    fprintf(f,
            "tile level: %lld block%s; %lld tensor element accesses checked (bounds, unwritten reads, the "
            "order of blocks): no errors\n",
            (long long)st->blocks, plural(st->blocks), (long long)st->tensor_elements);
    return;
  }
  fprintf(f,
          "thread level (%s): %lld block%s of %d threads; %lld barrier%s, %lld shared-memory bytes and %lld "
          "tensor element accesses checked, %lld warp collective%s, %lld asynchronous cop%s: no errors\n",
          o->target ? o->target->name : "sm_90a", (long long)st->blocks, plural(st->blocks), st->threads,
          (long long)st->barriers, plural(st->barriers), (long long)st->shared_bytes,
          (long long)st->tensor_elements, (long long)st->collectives, plural(st->collectives),
          (long long)st->async_copies, st->async_copies == 1 ? "y" : "ies");
}

static bool finish(const Run *r, const InterpStats *stats)
{
  const RunOptions *o = r->o;
  for (int i = 0; i < r->nparams; i++) {
    const Param *p = &r->params[i];
    if (p->buf && p->source == SRC_FILE && p->writes && !p->reads && !write_tensor(p, p->arg->value))
      return false;
  }
  for (int i = 0; i < o->nouts; i++)
    if (!write_tensor(find_param(r, o->outs[i].name), o->outs[i].value))
      return false;
  for (int i = 0; i < o->nprints; i++)
    print_tensor(stdout, r, find_param(r, o->prints[i]));
  if (o->nouts || o->nprints)
    return true;
  for (int i = 0; i < r->nparams; i++)
    if (r->params[i].buf)
      summarize_tensor(stdout, r, &r->params[i]);
  summarize_checks(stdout, o, stats);
  return true;
}

/* ---------------------------------------------------------------- a run */

/* Prints the diagnostics collected so far, as the compiler does, and forgets them. */
static void flush_diags(Diags *d)
{
  StrBuf sb = {0};
  diag_render(d, &sb);
  if (sb.data)
    fputs(sb.data, stderr);
  free(sb.data);
  d->first = d->last = NULL;
}

/* The kernel to run: --kernel's, or the file's only one. */
static Kernel *choose_kernel(const Module *m, const RunOptions *o, Diags *d)
{
  if (o->kernel)
    return interp_find_kernel(m, o->kernel);
  if (m->nkernels == 1)
    return m->kernels[0];
  StrBuf sb = {0};
  for (int i = 0; i < m->nkernels; i++)
    sb_printf(&sb, "%s%s", i ? ", " : "", m->kernels[i]->name);
  error_at(d, NO_LOC, "the file has %d kernels (%s): choose one with --kernel NAME", m->nkernels, sb.data);
  free(sb.data);
  return NULL;
}

/* The interpreter runs the kernel: at the tile level, k itself (the parameters were read from it);
 * at the thread level, the same kernel compiled through the whole pipeline for --arch. */
static bool execute(Arena *a, const RunOptions *o, const char *src, size_t len, const Kernel *k,
                    const InterpArg *args, int nargs, InterpStats *stats, Diags *d)
{
  InterpOptions opt = {.num_sms = o->num_sms, .stats = stats};
  /* Launch constants (docs/language.md): the variant for these sizes, as tl_launch would run it. */
  int nsizes = 0;
  ConstDef *sizes = k->nlconsts ? interp_launch_sizes(a, k, args, nargs, &nsizes) : NULL;
  if (k->nlconsts && !o->thread) {
    Module *m = interp_compile_at(a, d, src, len, o->defs, o->ndefs, sizes, nsizes, k->name, o->target,
                                  false);
    k = m ? interp_find_kernel(m, k->name) : NULL;
    if (!k)
      return false;
  }
  if (!o->thread)
    return interp_tile_run(k, args, nargs, &opt, d);
  const Target *target = o->target ? o->target : target_find("sm_90a");
  Module *m = interp_compile_at(a, d, src, len, o->defs, o->ndefs, sizes, nsizes, k->name, target, true);
  const Kernel *tk = m ? interp_find_kernel(m, k->name) : NULL;
  if (!tk)
    return false;
  InterpArg *all = ARENA_ARRAY(a, InterpArg, nargs + 1);
  memcpy(all, args, sizeof *args * (size_t)nargs);
  all[nargs] = (InterpArg){.name = "tma.ok", .i = !o->no_tma}; /* when the lowering made tensor maps */
  return interp_thread_run(tk, all, nargs + (tk->ntmaps > 0), &opt, d);
}

static int run_file(Arena *a, const RunOptions *o)
{
  size_t len = 0;
  char *src = cli_read_source(o->input, &len);
  if (!src)
    return 1;
  Diags d = {.arena = a, .filename = strcmp(o->input, "-") ? o->input : "<stdin>"};
  Module *m = interp_compile(a, &d, src, len, o->defs, o->ndefs, o->kernel);
  Run r = {.arena = a, .o = o, .k = m ? choose_kernel(m, o, &d) : NULL};
  flush_diags(&d);
  bool ok = r.k && collect_params(&r) && bind_params(&r);
  if (ok) {
    InterpArg *args = ARENA_ARRAY(a, InterpArg, r.nparams + 1);
    for (int i = 0; i < r.nparams; i++)
      args[i] = r.params[i].value;
    InterpStats stats = {0};
    ok = execute(a, o, src, len, r.k, args, r.nparams, &stats, &d);
    flush_diags(&d);
    ok = ok && finish(&r, &stats);
  }
  for (int i = 0; i < r.nparams; i++) {
    free(r.params[i].data);
    npy_free(&r.params[i].file);
  }
  free(src);
  return ok ? 0 : 1;
}

int run_command(int argc, char **argv)
{
  Arena *a = arena_new();
  RunOptions o = {.num_sms = 4};
  int rc = parse_run_args(a, argc, argv, &o);
  if (rc == RUN)
    rc = run_file(a, &o);
  /* what printf left in the buffer, before main closes standard output */
  if (fflush(stdout) != 0 && rc == 0) {
    cli_output_error("writing", "-", errno);
    rc = 1;
  }
  arena_free(a);
  return rc;
}
