/* emit_header.c: tilec --emit=header.  From the PTX and its metadata, a C
 * header that launches the kernels with nothing but libcuda at run time:
 *
 *   prelude (compiler/aot_prelude.h, once per translation unit): driver types,
 *       dlopen'd entry points, lazy module load, grid arithmetic, f16/bf16
 *   STEM_ptx[]                 the PTX, as a string literal
 *   STEM_load(), STEM_unload() the module, in the context current at load
 *   per kernel K:
 *     K_grid(scalars, sizes, grid[3])        the metadata's grid programs, in C
 *     K_launch(stream, tensors, scalars, sizes): tensor maps (TMA) encoded in
 *       its frame, tmap_ok 1 if every one was, else 0 (docs/abi.md)
 *
 * Grid programs are turned into straight-line C: the RPN stack depth at every
 * token is known, so each stack slot becomes a local. */
#include "emit_header.h"

#include "ir.h"
#include "runtime_internal.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_prelude.inc" /* static const char AOT_PRELUDE[] */

/* ---------------------------------------------------------------- names */

static const char *const c_keywords[] = {
    "auto",     "break",  "case",   "char",     "const",    "continue", "default",  "do",
    "double",   "else",   "enum",   "extern",   "float",    "for",      "goto",     "if",
    "inline",   "int",    "long",   "register", "restrict", "return",   "short",    "signed",
    "sizeof",   "static", "struct", "switch",   "typedef",  "union",    "unsigned", "void",
    "volatile", "while",  "bool",   "true",     "false",    "stream",   "grid",     "NULL",
};

/* A C identifier for a .tl or PTX name: other characters become '_'.  A name
 * that stands alone (a parameter; bare) and is a keyword or one of the
 * launcher's own names gets a '_' appended; a prefix (of NAME_launch) needs
 * no such care. */
static char *c_name(const char *name, bool bare)
{
  size_t n = strlen(name);
  char *s = malloc(n + 3);
  if (!s)
    return NULL;
  size_t j = 0;
  if (isdigit((unsigned char)name[0]))
    s[j++] = 'k';
  for (size_t i = 0; i < n; i++)
    s[j++] = isalnum((unsigned char)name[i]) || name[i] == '_' ? name[i] : '_';
  s[j] = 0;
  bool clash = j == 0;
  if (bare) {
    clash |= !strncmp(s, "tlc_", 4) || !strncmp(s, "tilec_aot", 9);
    for (size_t k = 0; k < sizeof c_keywords / sizeof *c_keywords; k++)
      clash |= !strcmp(s, c_keywords[k]);
  }
  if (clash) {
    s[j++] = '_';
    s[j] = 0;
  }
  return s;
}

/* The header's prefix: the source file's base name without ".tl". */
static char *stem_of(const char *source_name)
{
  const char *base = source_name ? source_name : "kernels";
  const char *slash = strrchr(base, '/');
  if (slash)
    base = slash + 1;
  size_t n = strlen(base);
  if (n > 3 && !strcmp(base + n - 3, ".tl"))
    n -= 3;
  char *tmp = strndup(base, n);
  if (!tmp)
    return NULL;
  char *s = c_name(!strcmp(tmp, "-") || tmp[0] == '<' || !*tmp ? "kernels" : tmp, false);
  free(tmp);
  return s;
}

/* The C type of one element (tensors) or of a scalar as the launcher takes it:
 * f16 and bf16 scalars are taken as float and converted; their tensors are
 * arrays of 16-bit patterns. e4m3 and e5m2 are their 8-bit patterns, scalars
 * too (tl_e4m3_from_float, tl_e5m2_from_float make them). */
static const char *c_type(tl_dtype t, bool scalar)
{
  switch (t) {
  case TL_BOOL: return "bool";
  case TL_I8: return "int8_t";
  case TL_I16: return "int16_t";
  case TL_I32: return "int32_t";
  case TL_I64: return "int64_t";
  case TL_U8: return "uint8_t";
  case TL_U16: return "uint16_t";
  case TL_U32: return "uint32_t";
  case TL_U64: return "uint64_t";
  case TL_F16:
  case TL_BF16: return scalar ? "float" : "uint16_t";
  case TL_F32: return "float";
  case TL_F64: return "double";
  case TL_E4M3:
  case TL_E5M2: return "uint8_t";
  }
  return "void";
}

/* ---------------------------------------------------------------- text */

/* Inside a comment: no "*" "/" pair may close it early. */
static void put_comment_text(StrBuf *sb, const char *s)
{
  for (; *s; s++) {
    sb_putn(sb, s, 1);
    if (s[0] == '*' && s[1] == '/')
      sb_puts(sb, " ");
  }
}

/* The PTX as concatenated string literals, one per line.  Every '?' is escaped
 * (no trigraph can form), and bytes outside printable ASCII become three-digit
 * octal escapes, which never swallow a following digit. */
static void put_string_literal(StrBuf *sb, const char *text)
{
  const char *p = text;
  while (*p) {
    sb_puts(sb, "\t\"");
    for (; *p && *p != '\n'; p++) {
      unsigned char c = (unsigned char)*p;
      if (c == '\\' || c == '"' || c == '?')
        sb_printf(sb, "\\%c", c);
      else if (c == '\t')
        sb_puts(sb, "\\t");
      else if (c < 0x20 || c >= 0x7f)
        sb_printf(sb, "\\%03o", c);
      else
        sb_putn(sb, (const char *)&c, 1);
    }
    if (*p == '\n') {
      sb_puts(sb, "\\n");
      p++;
    }
    sb_puts(sb, "\"\n");
  }
}

static void put_int64(StrBuf *sb, int64_t v)
{
  if (v == INT64_MIN)
    sb_puts(sb, "(-INT64_C(9223372036854775807) - 1)");
  else
    sb_printf(sb, "INT64_C(%lld)", (long long)v);
}

/* ---------------------------------------------------------------- one kernel */

/* Tensor maps and their flag are hidden: the launcher makes them itself. */
static bool is_hidden(const tl_param *p) { return p->kind == TL_PARAM_TMAP || p->kind == TL_PARAM_TMAP_OK; }


typedef struct {
  const tl_kernel_info *k;
  char *cname;   /* C name of the kernel */
  char **pnames; /* C names of its params */
  char sfx[16];  /* its functions' suffix: "" (one variant), else "_v0", "_v1", ... */
  char *mod;     /* the C name of its variant's module (STEM_module_, STEM_module_1_, ...) */
  char *funcs;   /* and of its CUfunction array */
} KernelNames;

/* "(A: f32[N], n: i32)" for the banner */
static void put_tl_signature(StrBuf *sb, const tl_kernel_info *k)
{
  sb_printf(sb, "%s(", k->name);
  for (int i = 0; i < k->nargs; i++) {
    const tl_param *p = &k->params[i];
    sb_printf(sb, "%s%s: %s", i ? ", " : "", p->name, tl_dtype_name(p->dtype));
    if (p->kind != TL_PARAM_TENSOR)
      continue;
    sb_puts(sb, "[");
    for (int d = 0; d < p->rank; d++) {
      if (p->dims[d].size_param >= 0)
        sb_printf(sb, "%s%s", d ? ", " : "", k->params[p->dims[d].size_param].name);
      else
        sb_printf(sb, "%s%lld", d ? ", " : "", (long long)p->dims[d].extent);
    }
    sb_puts(sb, "]");
    const tl_dim *st = k->strides ? k->strides[i] : NULL;
    for (int d = 0; st && d < p->rank; d++) {
      sb_puts(sb, d ? ", " : " strides(");
      if (st[d].size_param >= 0)
        sb_puts(sb, k->params[st[d].size_param].name);
      else
        sb_printf(sb, "%lld", (long long)st[d].extent);
    }
    sb_puts(sb, st ? ")" : "");
  }
  sb_puts(sb, ")");
}

/* Is size param s some tensor's stride (then it must be at least 1)? */
static bool is_stride_size(const tl_kernel_info *k, int s)
{
  for (int i = 0; k->strides && i < k->nargs; i++)
    for (int d = 0; k->strides[i] && d < k->params[i].rank; d++)
      if (k->strides[i][d].size_param == s)
        return true;
  return false;
}

/* "{(int64_t)M, 64}": a tensor's dims or strides as a C initializer, sizes by their C names. */
static void put_dim_list(StrBuf *sb, const KernelNames *kn, const tl_dim *dims, int rank)
{
  sb_puts(sb, "{");
  for (int d = 0; d < rank; d++) {
    sb_puts(sb, d ? ", " : "");
    if (dims[d].size_param >= 0)
      sb_printf(sb, "(int64_t)%s", kn->pnames[dims[d].size_param]);
    else
      put_int64(sb, dims[d].extent);
  }
  sb_puts(sb, "}");
}

/* The C parameter list of K_grid (with_tensors false: scalars and sizes only,
 * possibly none) or of K_launch.  Returns how many were written. */
static int put_params(StrBuf *sb, const KernelNames *kn, bool with_tensors)
{
  const tl_kernel_info *k = kn->k;
  int written = 0;
  if (with_tensors) {
    sb_puts(sb, "CUstream stream");
    written++;
  }
  for (int i = 0; i < k->nparams; i++) {
    const tl_param *p = &k->params[i];
    if ((p->kind == TL_PARAM_TENSOR && !with_tensors) || is_hidden(p))
      continue;
    sb_puts(sb, written++ ? ", " : "");
    if (p->kind == TL_PARAM_TENSOR)
      sb_printf(sb, "%s *%s", c_type(p->dtype, false), kn->pnames[i]);
    else if (p->kind == TL_PARAM_SCALAR)
      sb_printf(sb, "%s %s", c_type(p->dtype, true), kn->pnames[i]);
    else
      sb_printf(sb, "int32_t %s", kn->pnames[i]);
  }
  return written;
}

/* Straight-line C for RPN program g into tlc_s[0] (each stack slot a local), `fail` the statement
 * that ends the function on a division by zero or an overflow; launch constants read tlc_c[]. */
static void put_rpn(StrBuf *sb, const KernelNames *kn, const struct tl_grid_program *g, const char *fail)
{
  static const char ops[] = {
      [TL_RPN_ADD] = '+', [TL_RPN_SUB] = '-', [TL_RPN_MUL] = '*', [TL_RPN_DIV] = '/',
      [TL_RPN_MOD] = '%', [TL_RPN_MIN] = 'm', [TL_RPN_MAX] = 'M', [TL_RPN_CEILDIV] = 'c',
      [TL_RPN_LT] = '<',  [TL_RPN_LE] = 'l',  [TL_RPN_GT] = '>',  [TL_RPN_GE] = 'g',
      [TL_RPN_EQ] = '=',  [TL_RPN_NE] = '!',  [TL_RPN_AND] = '&', [TL_RPN_OR] = '|',
  };
  sb_printf(sb, "\t\tint64_t tlc_s[%d];\n", g->max_depth > 0 ? g->max_depth : 1);
  int depth = 0;
  for (int t = 0; t < g->ntokens; t++) {
    const tl_rpn_token *tok = &g->tokens[t];
    if (tok->op == TL_RPN_CONST) {
      sb_printf(sb, "\t\ttlc_s[%d] = ", depth++);
      put_int64(sb, tok->value);
      sb_puts(sb, ";\n");
    } else if (tok->op == TL_RPN_PARAM) {
      sb_printf(sb, "\t\ttlc_s[%d] = (int64_t)%s;\n", depth++, kn->pnames[tok->param]);
    } else if (tok->op == TL_RPN_NUM_SMS) {
      sb_printf(sb, "\t\ttlc_s[%d] = (int64_t)num_sms;\n", depth++);
    } else if (tok->op == TL_RPN_LCONST) {
      sb_printf(sb, "\t\ttlc_s[%d] = tlc_c[%d];\n", depth++, tok->param);
    } else if (tok->op == TL_RPN_NEXT_POW2) {
      sb_printf(sb, "\t\tif (!tilec_aot_next_pow2(&tlc_s[%d]))\n\t\t\t%s\n", depth - 1, fail);
    } else if (tok->op == TL_RPN_SELECT) {
      depth -= 2;
      sb_printf(sb, "\t\ttlc_s[%d] = tlc_s[%d] ? tlc_s[%d] : tlc_s[%d];\n", depth - 1, depth - 1, depth,
                depth + 1);
    } else {
      depth--;
      sb_printf(sb, "\t\tif (!tilec_aot_rpn('%c', &tlc_s[%d], tlc_s[%d]))\n\t\t\t%s\n", ops[tok->op],
                depth - 1, depth, fail);
    }
  }
}

static void put_grid_function(StrBuf *sb, const KernelNames *kn)
{
  const tl_kernel_info *k = kn->k;
  sb_printf(sb,
            "/* The grid of %s for these sizes (and integer scalars): the metadata's\n"
            " * programs, x: %s; y: %s; z: %s. */\n",
            k->name, k->grid_text[0], k->grid_text[1], k->grid_text[2]);
  sb_printf(sb, "static inline CUresult %s_grid%s(", kn->cname, kn->sfx);
  if (k->uses_num_sms)
    sb_puts(sb, "int32_t num_sms, ");
  sb_puts(sb, put_params(sb, kn, false) ? ", unsigned int grid[3])\n{\n" : "unsigned int grid[3])\n{\n");
  if (k->uses_num_sms)
    sb_puts(sb, "\tif (num_sms < 1)\n\t\treturn TILEC_AOT_INVALID_VALUE;\n");
  /* every non-tensor param is read or explicitly ignored, so no warning either way */
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind != TL_PARAM_TENSOR && !is_hidden(&k->params[i]))
      sb_printf(sb, "\t(void)%s;\n", kn->pnames[i]);
  for (int axis = 0; axis < 3; axis++) {
    sb_printf(sb, "\t{ /* %s */\n", k->grid_text[axis]);
    put_rpn(sb, kn, k->grid[axis], "return TILEC_AOT_INVALID_VALUE;");
    sb_printf(sb,
              "\t\tif (!tilec_aot_axis(tlc_s[0], %d, &grid[%d]))\n"
              "\t\t\treturn TILEC_AOT_INVALID_VALUE;\n\t}\n",
              axis, axis);
  }
  sb_puts(sb, "\treturn TILEC_AOT_SUCCESS;\n}\n\n");
}

/* The tensor maps of a launch, in its frame: tlc_maps (TL_TMAP_BYTES each, aligned) and
 * tlc_tmap_ok, 1 only if every map was encoded. */
static void put_tmaps(StrBuf *sb, const KernelNames *kn)
{
  const tl_kernel_info *k = kn->k;
  if (k->ntmaps == 0)
    return;
  sb_printf(sb,
            "\t/* TMA tensor maps: when one cannot be encoded, tmap_ok = 0 and the kernel\n"
            "\t * loads without them. */\n"
            "\tunsigned char tlc_map_bytes[%d * %d + 64];\n"
            "\tunsigned char *tlc_maps = tilec_aot_align64(tlc_map_bytes);\n"
            "\tuint32_t tlc_tmap_ok = 1;\n"
            "\tmemset(tlc_maps, 0, %d * %d);\n",
            k->ntmaps, TL_TMAP_BYTES, k->ntmaps, TL_TMAP_BYTES);
  for (int i = 0, t = 0; i < k->nparams; i++) {
    const tl_param *p = &k->params[i];
    if (p->kind != TL_PARAM_TMAP)
      continue;
    const tl_param *tensor = &k->params[p->tmap.tensor];
    int data_type = 0; /* every ELEM has one */
    tl_tmap_data_type(p->dtype, &data_type);
    sb_printf(sb, "\t{ /* %s: tensor %s, box ", p->name, tensor->name);
    for (int d = 0; d < p->tmap.rank; d++)
      sb_printf(sb, "%s%u", d ? "x" : "", p->tmap.box[d]);
    sb_puts(sb, " */\n\t\tstatic const uint32_t tlc_box[] = {");
    for (int d = 0; d < p->tmap.rank; d++)
      sb_printf(sb, "%s%uu", d ? ", " : "", p->tmap.box[d]);
    sb_puts(sb, "};\n\t\tconst int64_t tlc_dims[] = ");
    put_dim_list(sb, kn, tensor->dims, tensor->rank);
    const tl_dim *strides = k->strides ? k->strides[p->tmap.tensor] : NULL;
    if (strides) { /* a view: the map steps by its strides */
      sb_puts(sb, ";\n\t\tconst int64_t tlc_strides[] = ");
      put_dim_list(sb, kn, strides, tensor->rank);
    }
    sb_printf(sb,
              ";\n\t\ttlc_tmap_ok = tlc_tmap_ok && tilec_aot_tmap%s(&%s, tlc_maps + %d, %d, %d,\n"
              "\t\t                                           (const void *)%s, tlc_dims, %s%zuu, tlc_box, "
              "%d);\n"
              "\t}\n",
              strides ? "_strided" : "", kn->mod, TL_TMAP_BYTES * t++, data_type, p->tmap.rank,
              kn->pnames[p->tmap.tensor], strides ? "tlc_strides, " : "", tl_dtype_size(p->dtype),
              (int)p->tmap.swizzle);
  }
}

static void put_launch_function(StrBuf *sb, const char *stem, int index, const KernelNames *kn)
{
  const tl_kernel_info *k = kn->k;
  sb_puts(sb, "/* ");
  put_comment_text(sb, k->name);
  sb_printf(sb,
            ": threads=%u smem=%u.  Launches on `stream` (NULL: the legacy\n"
            " * default stream) after loading the module on first use.  A size that is\n"
            " * negative or a grid too large gives TILEC_AOT_INVALID_VALUE; an empty grid\n"
            " * launches nothing.  Tensors are device pointers, row-major%s */\n",
            k->threads, k->smem,
            k->strides
                ? ", except those\n * declared with strides(...): views whose strides (elements) are passed\n"
                  " * with the sizes, each at least 1 (less gives TILEC_AOT_INVALID_VALUE)."
                : ".");
  sb_printf(sb, "static inline CUresult %s_launch%s(", kn->cname, kn->sfx);
  put_params(sb, kn, true);
  sb_puts(sb, ")\n{\n\tunsigned int tlc_grid[3];\n\tCUresult tlc_r;\n");
  for (int i = k->nargs; i < k->nparams; i++)
    if (k->params[i].kind == TL_PARAM_SIZE) /* a stride is at least 1 */
      sb_printf(sb, "\tif (%s < %d)\n\t\treturn TILEC_AOT_INVALID_VALUE;\n", kn->pnames[i],
                is_stride_size(k, i));
  /* Load on first use: after the grid, so that an empty grid loads nothing, except where the
   * grid reads num_sms, which the load takes from the current context's device. */
  static const char load[] = "\tif (!tilec_aot_ready(&%s) && (tlc_r = %s_load()) != TILEC_AOT_SUCCESS)\n"
                             "\t\treturn tlc_r;\n";
  if (k->uses_num_sms)
    sb_printf(sb, load, kn->mod, stem);
  sb_printf(sb, "\ttlc_r = %s_grid%s(", kn->cname, kn->sfx);
  if (k->uses_num_sms)
    sb_printf(sb, "%s.num_sms, ", kn->mod);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind != TL_PARAM_TENSOR && !is_hidden(&k->params[i]))
      sb_printf(sb, "%s, ", kn->pnames[i]);
  sb_puts(sb, "tlc_grid);\n\tif (tlc_r != TILEC_AOT_SUCCESS)\n\t\treturn tlc_r;\n");
  sb_puts(sb, "\tif (tlc_grid[0] == 0 || tlc_grid[1] == 0 || tlc_grid[2] == 0)\n"
              "\t\treturn TILEC_AOT_SUCCESS;\n");
  if (!k->uses_num_sms)
    sb_printf(sb, load, kn->mod, stem);
  /* f16/bf16 scalars travel as their bits */
  for (int i = 0; i < k->nargs; i++) {
    const tl_param *p = &k->params[i];
    if (p->kind == TL_PARAM_SCALAR && (p->dtype == TL_F16 || p->dtype == TL_BF16))
      sb_printf(sb, "\tuint16_t tlc_bits_%d = tilec_aot_%s(%s);\n", i, p->dtype == TL_F16 ? "f16" : "bf16",
                kn->pnames[i]);
  }
  put_tmaps(sb, kn);
  if (k->nparams) {
    sb_puts(sb, "\tvoid *tlc_params[] = {");
    for (int i = 0, t = 0; i < k->nparams; i++) {
      const tl_param *p = &k->params[i];
      if (p->kind == TL_PARAM_SCALAR && (p->dtype == TL_F16 || p->dtype == TL_BF16))
        sb_printf(sb, "%s&tlc_bits_%d", i ? ", " : "", i);
      else if (p->kind == TL_PARAM_TMAP)
        sb_printf(sb, "%stlc_maps + %d", i ? ", " : "", TL_TMAP_BYTES * t++);
      else if (p->kind == TL_PARAM_TMAP_OK)
        sb_printf(sb, "%s&tlc_tmap_ok", i ? ", " : "");
      else
        sb_printf(sb, "%s&%s", i ? ", " : "", kn->pnames[i]);
    }
    sb_puts(sb, "};\n");
  } else {
    sb_puts(sb, "\tvoid **tlc_params = NULL;\n");
  }
  sb_printf(sb,
            "\treturn %s.cuLaunchKernel(%s[%d], tlc_grid[0], tlc_grid[1],\n"
            "\t                                  tlc_grid[2], %uu, 1u, 1u, %uu, stream, tlc_params, NULL);\n"
            "}\n\n",
            kn->mod, kn->funcs, index, k->threads, k->smem);
}

/* A kernel with launch constants in a header of nv variants (kns[v], v < nv): NAME_variant, which
 * evaluates the constants at the launch's sizes and returns the variant compiled for the same
 * values (0, the one for --size, when none was; -1 when a program fails), and NAME_grid and
 * NAME_launch, which dispatch to that variant's functions. */
static void put_dispatch(StrBuf *sb, const KernelNames *kns, int nv)
{
  const KernelNames *kn = &kns[0];
  const tl_kernel_info *k = kn->k;
  sb_printf(sb,
            "/* The variant of %s for these sizes: its launch constants evaluated as a launch through\n"
            " * the JIT does, and the variant compiled for the same values (0 if none was). */\n"
            "static inline int %s_variant(",
            k->name, kn->cname);
  if (!put_params(sb, kn, false))
    sb_puts(sb, "void");
  sb_puts(sb, ")\n{\n");
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind != TL_PARAM_TENSOR && !is_hidden(&k->params[i]))
      sb_printf(sb, "\t(void)%s;\n", kn->pnames[i]);
  sb_printf(sb, "\tstatic const int64_t tlc_values[%d][%d] = {", nv, k->nconsts);
  for (int v = 0; v < nv; v++) {
    sb_puts(sb, v ? ", {" : "{");
    for (int c = 0; c < k->nconsts; c++) {
      sb_puts(sb, c ? ", " : "");
      put_int64(sb, kns[v].k->consts[c].value);
    }
    sb_puts(sb, "}");
  }
  sb_printf(sb, "};\n\tint64_t tlc_c[%d];\n", k->nconsts);
  for (int c = 0; c < k->nconsts; c++) {
    sb_printf(sb, "\t{ /* %s = %s */\n", k->consts[c].name, k->consts[c].text);
    put_rpn(sb, kn, k->consts[c].program, "return -1;");
    sb_printf(sb, "\t\ttlc_c[%d] = tlc_s[0];\n\t}\n", c);
  }
  sb_printf(sb,
            "\tfor (int tlc_v = 0; tlc_v < %d; tlc_v++)\n"
            "\t\tif (!memcmp(tlc_c, tlc_values[tlc_v], sizeof tlc_c))\n"
            "\t\t\treturn tlc_v;\n"
            "\treturn 0;\n}\n\n",
            nv);
  bool any_sms = false; /* the variants' grids may differ in reading num_sms */
  for (int v = 0; v < nv; v++)
    any_sms |= kns[v].k->uses_num_sms;
  for (int f = 0; f < 2; f++) {
    const char *what = f ? "launch" : "grid";
    sb_printf(sb, "/* %s_%s of the variant %s_variant picks. */\nstatic inline CUresult %s_%s(", kn->cname,
              what, kn->cname, kn->cname, what);
    if (f) {
      put_params(sb, kn, true);
    } else {
      if (any_sms)
        sb_puts(sb, "int32_t num_sms, ");
      if (put_params(sb, kn, false))
        sb_puts(sb, ", ");
      sb_puts(sb, "unsigned int grid[3]");
    }
    sb_printf(sb, ")\n{\n\tswitch (%s_variant(", kn->cname);
    int n = 0;
    for (int i = 0; i < k->nparams; i++)
      if (k->params[i].kind != TL_PARAM_TENSOR && !is_hidden(&k->params[i]))
        sb_printf(sb, "%s%s", n++ ? ", " : "", kn->pnames[i]);
    sb_puts(sb, ")) {\n");
    for (int v = 0; v < nv; v++) {
      sb_printf(sb, "\tcase %d:\n\t\treturn %s_%s%s(", v, kn->cname, what, kns[v].sfx);
      n = 0;
      if (f)
        sb_printf(sb, "stream"), n++;
      else if (kns[v].k->uses_num_sms)
        sb_printf(sb, "num_sms"), n++;
      for (int i = 0; i < k->nparams; i++)
        if (!is_hidden(&k->params[i]) && (f || k->params[i].kind != TL_PARAM_TENSOR))
          sb_printf(sb, "%s%s", n++ ? ", " : "", kn->pnames[i]);
      if (f)
        sb_puts(sb, ");\n");
      else
        sb_printf(sb, "%sgrid);\n", n ? ", " : "");
    }
    sb_puts(sb, "\tdefault:\n\t\treturn TILEC_AOT_INVALID_VALUE;\n\t}\n}\n\n");
  }
}

/* ---------------------------------------------------------------- the header */

char *emit_c_header(const char *const *ptx, const tl_meta *const *meta, int nv, const char *source_name,
                    const char *command, char *err, size_t err_size)
{
  const int n = nv > 0 ? tl_meta_kernel_count(meta[0]) : 0;
  char *stem = stem_of(source_name);
  KernelNames *kns = calloc((size_t)(n ? n : 1) * (size_t)(nv > 0 ? nv : 1), sizeof *kns);
  bool ok = stem && kns;
  /* kns[i * nv + v]: kernel i of variant v */
  for (int v = 0; ok && v < nv; v++) {
    if (tl_meta_kernel_count(meta[v]) != n) {
      snprintf(err, err_size, "the variants have different kernels");
      ok = false;
      break;
    }
    for (int i = 0; ok && i < n; i++) {
      KernelNames *kn = &kns[i * nv + v];
      kn->k = tl_meta_kernel(meta[v], i);
      kn->cname = c_name(kn->k->name, false);
      kn->pnames = calloc((size_t)kn->k->nparams + 1, sizeof *kn->pnames);
      if (nv > 1)
        snprintf(kn->sfx, sizeof kn->sfx, "_v%d", v);
      StrBuf mod = {0}, funcs = {0};
      sb_printf(&mod, v ? "%s_module_%d_" : "%s_module_", stem, v);
      sb_printf(&funcs, v ? "%s_functions_%d_" : "%s_functions_", stem, v);
      kn->mod = sb_take(&mod);
      kn->funcs = sb_take(&funcs);
      ok = kn->cname && kn->pnames && kn->mod && kn->funcs;
      for (int j = 0; ok && j < kn->k->nparams; j++)
        ok = (kn->pnames[j] = c_name(kn->k->params[j].name, true)) != NULL;
      for (int c = 0; ok && c < kn->k->nconsts; c++)
        for (int t = 0; t < kn->k->consts[c].program->ntokens; t++)
          if (kn->k->consts[c].program->tokens[t].op == TL_RPN_NUM_SMS) {
            snprintf(err, err_size, "launch constant '%s' of '%s' reads num_sms", kn->k->consts[c].name,
                     kn->k->name);
            ok = false;
            break;
          }
    }
  }
  if (ok && n == 0) {
    snprintf(err, err_size, "no kernel to make launchers for");
    ok = false;
  } else if (!ok && !err[0]) {
    snprintf(err, err_size, "out of memory");
  }
  StrBuf sb = {0};
  if (ok) {
    char upper[256];
    size_t j = 0;
    for (const char *s = stem; *s && j + 1 < sizeof upper; s++)
      upper[j++] = (char)toupper((unsigned char)*s);
    upper[j] = 0;
    sb_printf(&sb, "/* %s.h: C launchers for ", stem);
    put_comment_text(&sb, source_name ? source_name : "<input>");
    sb_puts(&sb, ", generated by\n * ");
    put_comment_text(&sb, command);
    sb_puts(&sb, ".\n * Do not edit: regenerate it.\n *\n * Kernels:\n");
    for (int i = 0; i < n; i++) {
      StrBuf sig = {0};
      put_tl_signature(&sig, kns[i * nv].k);
      sb_puts(&sb, " *   ");
      put_comment_text(&sb, sig.data);
      sb_printf(&sb, "\n *     CUresult %s_launch(", kns[i * nv].cname);
      put_params(&sb, &kns[i * nv], true);
      sb_puts(&sb, ");\n");
      free(sig.data);
    }
    if (nv > 1)
      sb_printf(&sb,
                " *\n"
                " * %d variants (--size and --bucket): a kernel with launch constants evaluates them\n"
                " * at each launch's sizes (NAME_variant) and runs the variant compiled for the same\n"
                " * values, or variant 0 (the one for --size) when none was; every variant is\n"
                " * correct at every size.\n",
                nv);
    sb_printf(&sb,
              " *\n"
              " * Needs only the CUDA driver at run time: libcuda.so.1 is opened with dlopen\n"
              " * on first use (build with -ldl on glibc older than 2.34, and -pthread).\n"
              " * Symbolic sizes are passed explicitly, after the tensors and scalars; nothing\n"
              " * checks that the tensors are that large.\n"
              " *\n"
              " * The module%s loaded once, by %s_load() or the first launch, into the CUDA\n"
              " * context current on that thread (TILEC_AOT_INVALID_CONTEXT if there is\n"
              " * none); launch only while that context is current.  Loading is\n"
              " * thread-safe, and so are launches from any number of threads.  %s_unload()\n"
              " * frees the module%s; no launch may run or follow until the next load.\n"
              " * Everything is static: each translation unit that includes this header\n"
              " * loads its own copy of the module%s.\n"
              " */\n",
              nv > 1 ? "s (one per variant) are" : " is", stem, stem, nv > 1 ? "s" : "", nv > 1 ? "s" : "");
    sb_printf(&sb, "#ifndef TILEC_AOT_%s_H\n#define TILEC_AOT_%s_H\n\n", upper, upper);
    /* The prelude's last block (tilec_aot_tmap_strided) only in headers whose launchers call it,
     * so that the headers of kernels without views stay as they were. */
    const char *strided_block = strstr(AOT_PRELUDE, "\n/* Guarded on its own");
    bool strided_maps = false;
    for (int i = 0; i < n * nv; i++)
      for (int j = 0; kns[i].k->strides && j < kns[i].k->nparams; j++)
        strided_maps |= kns[i].k->params[j].kind == TL_PARAM_TMAP &&
                        kns[i].k->strides[kns[i].k->params[j].tmap.tensor];
    if (strided_block && !strided_maps)
      sb_putn(&sb, AOT_PRELUDE, (size_t)(strided_block - AOT_PRELUDE));
    else
      sb_puts(&sb, AOT_PRELUDE);
    for (int v = 0; v < nv; v++) {
      /* one literal, readable, longer than the 4095 characters ISO C promises:
       * every compiler that matters takes it, so -pedantic is told so */
      sb_printf(&sb,
                "\n/* The PTX%s, with its tilec-meta block (docs/abi.md). */\n"
                "#if defined(__GNUC__) || defined(__clang__)\n"
                "#pragma GCC diagnostic push\n"
                "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
                "#endif\n",
                nv > 1 ? " of a variant" : "");
      sb_printf(&sb, v ? "static const char %s_ptx_%d[] =\n" : "static const char %s_ptx[] =\n", stem, v);
      put_string_literal(&sb, ptx[v]);
      sb_puts(&sb, ";\n#if defined(__GNUC__) || defined(__clang__)\n#pragma GCC diagnostic pop\n#endif\n\n");
      sb_printf(&sb, "static tilec_aot_module %s = TILEC_AOT_MODULE_INIT;\n", kns[v].mod);
      sb_printf(&sb, "static CUfunction %s[%d];\n", kns[v].funcs, n);
    }
    sb_printf(&sb,
              "\n/* Load the module%s into the current context (once; later calls return at\n"
              " * once).  Launches call it themselves. */\nstatic inline CUresult %s_load(void)\n{\n"
              "\tstatic const char *const names[%d] = {",
              nv > 1 ? "s" : "", stem, n);
    for (int i = 0; i < n; i++)
      sb_printf(&sb, "%s\"%s\"", i ? ", " : "", kns[i * nv].k->name);
    sb_puts(&sb, "};\n\tCUresult tlc_r = TILEC_AOT_SUCCESS;\n");
    for (int v = 0; v < nv; v++) {
      sb_printf(&sb, "\t{\n\t\tstatic const unsigned int smem[%d] = {", n);
      for (int i = 0; i < n; i++)
        sb_printf(&sb, "%s%uu", i ? ", " : "", kns[i * nv + v].k->smem);
      sb_puts(&sb, "};\n\t\tif (tlc_r == TILEC_AOT_SUCCESS)\n");
      sb_printf(&sb, "\t\t\ttlc_r = tilec_aot_load(&%s, %s_ptx", kns[v].mod, stem);
      if (v)
        sb_printf(&sb, "_%d", v);
      sb_printf(&sb, ", %d, names, smem, %s);\n\t}\n", n, kns[v].funcs);
    }
    sb_puts(&sb, "\treturn tlc_r;\n}\n\n");
    sb_printf(&sb,
              "/* Unload the module%s (with its context made current for the call). */\n"
              "static inline void %s_unload(void)\n{\n",
              nv > 1 ? "s" : "", stem);
    for (int v = 0; v < nv; v++)
      sb_printf(&sb, "\ttilec_aot_unload(&%s);\n", kns[v].mod);
    sb_puts(&sb, "}\n\n");
    for (int i = 0; i < n; i++) {
      const KernelNames *row = &kns[i * nv];
      int variants = row->k->nconsts ? nv : 1; /* without launch constants, variant 0 serves all */
      for (int v = 0; v < variants; v++) {
        KernelNames one = row[v];
        if (variants == 1)
          one.sfx[0] = 0;
        put_grid_function(&sb, &one);
        put_launch_function(&sb, stem, i, &one);
      }
      if (variants > 1)
        put_dispatch(&sb, row, nv);
    }
    sb_printf(&sb, "#endif /* TILEC_AOT_%s_H */\n", upper);
  }
  for (int i = 0; kns && i < n * nv; i++) {
    for (int j = 0; kns[i].pnames && j < kns[i].k->nparams; j++)
      free(kns[i].pnames[j]);
    free(kns[i].pnames);
    free(kns[i].cname);
    free(kns[i].mod);
    free(kns[i].funcs);
  }
  free(kns);
  free(stem);
  if (!ok) {
    free(sb.data);
    return NULL;
  }
  return sb_take(&sb);
}
