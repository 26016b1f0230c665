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
 * arrays of 16-bit patterns. */
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
  }
  sb_puts(sb, ")");
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

static void put_grid_function(StrBuf *sb, const KernelNames *kn)
{
  const tl_kernel_info *k = kn->k;
  sb_printf(sb,
            "/* The grid of %s for these sizes (and integer scalars): the metadata's\n"
            " * programs, x: %s; y: %s; z: %s. */\n",
            k->name, k->grid_text[0], k->grid_text[1], k->grid_text[2]);
  sb_printf(sb, "static inline CUresult %s_grid(", kn->cname);
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
    const struct tl_grid_program *g = k->grid[axis];
    sb_printf(sb, "\t{ /* %s */\n\t\tint64_t tlc_s[%d];\n", k->grid_text[axis],
              g->max_depth > 0 ? g->max_depth : 1);
    int depth = 0;
    for (int t = 0; t < g->ntokens; t++) {
      const tl_rpn_token *tok = &g->tokens[t];
      static const char ops[] = {
          [TL_RPN_ADD] = '+', [TL_RPN_SUB] = '-', [TL_RPN_MUL] = '*', [TL_RPN_DIV] = '/',
          [TL_RPN_MOD] = '%', [TL_RPN_MIN] = 'm', [TL_RPN_MAX] = 'M', [TL_RPN_CEILDIV] = 'c',
      };
      if (tok->op == TL_RPN_CONST) {
        sb_printf(sb, "\t\ttlc_s[%d] = ", depth++);
        put_int64(sb, tok->value);
        sb_puts(sb, ";\n");
      } else if (tok->op == TL_RPN_PARAM) {
        sb_printf(sb, "\t\ttlc_s[%d] = (int64_t)%s;\n", depth++, kn->pnames[tok->param]);
      } else if (tok->op == TL_RPN_NUM_SMS) {
        sb_printf(sb, "\t\ttlc_s[%d] = (int64_t)num_sms;\n", depth++);
      } else {
        depth--;
        sb_printf(sb,
                  "\t\tif (!tilec_aot_rpn('%c', &tlc_s[%d], tlc_s[%d]))\n"
                  "\t\t\treturn TILEC_AOT_INVALID_VALUE;\n",
                  ops[tok->op], depth - 1, depth);
      }
    }
    sb_printf(sb,
              "\t\tif (!tilec_aot_axis(tlc_s[0], %d, &grid[%d]))\n"
              "\t\t\treturn TILEC_AOT_INVALID_VALUE;\n\t}\n",
              axis, axis);
  }
  sb_puts(sb, "\treturn TILEC_AOT_SUCCESS;\n}\n\n");
}

/* The tensor maps of a launch, in its frame: tlc_maps (TL_TMAP_BYTES each, aligned) and
 * tlc_tmap_ok, 1 only if every map was encoded. */
static void put_tmaps(StrBuf *sb, const char *stem, const KernelNames *kn)
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
    sb_puts(sb, "};\n\t\tconst int64_t tlc_dims[] = {");
    for (int d = 0; d < tensor->rank; d++) {
      sb_puts(sb, d ? ", " : "");
      if (tensor->dims[d].size_param >= 0)
        sb_printf(sb, "(int64_t)%s", kn->pnames[tensor->dims[d].size_param]);
      else
        put_int64(sb, tensor->dims[d].extent);
    }
    sb_printf(
        sb,
        "};\n\t\ttlc_tmap_ok = tlc_tmap_ok && tilec_aot_tmap(&%s_module_, tlc_maps + %d, %d, %d,\n"
        "\t\t                                           (const void *)%s, tlc_dims, %zuu, tlc_box, %d);\n"
        "\t}\n",
        stem, TL_TMAP_BYTES * t++, data_type, p->tmap.rank, kn->pnames[p->tmap.tensor],
        tl_dtype_size(p->dtype), (int)p->tmap.swizzle);
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
            " * launches nothing.  Tensors are device pointers, row-major. */\n",
            k->threads, k->smem);
  sb_printf(sb, "static inline CUresult %s_launch(", kn->cname);
  put_params(sb, kn, true);
  sb_puts(sb, ")\n{\n\tunsigned int tlc_grid[3];\n\tCUresult tlc_r;\n");
  for (int i = k->nargs; i < k->nparams; i++)
    if (k->params[i].kind == TL_PARAM_SIZE)
      sb_printf(sb, "\tif (%s < 0)\n\t\treturn TILEC_AOT_INVALID_VALUE;\n", kn->pnames[i]);
  /* Load on first use: after the grid, so that an empty grid loads nothing, except where the
   * grid reads num_sms, which the load takes from the current context's device. */
  static const char load[] =
      "\tif (!tilec_aot_ready(&%s_module_) && (tlc_r = %s_load()) != TILEC_AOT_SUCCESS)\n"
      "\t\treturn tlc_r;\n";
  if (k->uses_num_sms)
    sb_printf(sb, load, stem, stem);
  sb_printf(sb, "\ttlc_r = %s_grid(", kn->cname);
  if (k->uses_num_sms)
    sb_printf(sb, "%s_module_.num_sms, ", stem);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind != TL_PARAM_TENSOR && !is_hidden(&k->params[i]))
      sb_printf(sb, "%s, ", kn->pnames[i]);
  sb_puts(sb, "tlc_grid);\n\tif (tlc_r != TILEC_AOT_SUCCESS)\n\t\treturn tlc_r;\n");
  sb_puts(sb, "\tif (tlc_grid[0] == 0 || tlc_grid[1] == 0 || tlc_grid[2] == 0)\n"
              "\t\treturn TILEC_AOT_SUCCESS;\n");
  if (!k->uses_num_sms)
    sb_printf(sb, load, stem, stem);
  /* f16/bf16 scalars travel as their bits */
  for (int i = 0; i < k->nargs; i++) {
    const tl_param *p = &k->params[i];
    if (p->kind == TL_PARAM_SCALAR && (p->dtype == TL_F16 || p->dtype == TL_BF16))
      sb_printf(sb, "\tuint16_t tlc_bits_%d = tilec_aot_%s(%s);\n", i, p->dtype == TL_F16 ? "f16" : "bf16",
                kn->pnames[i]);
  }
  put_tmaps(sb, stem, kn);
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
            "\treturn %s_module_.cuLaunchKernel(%s_functions_[%d], tlc_grid[0], tlc_grid[1],\n"
            "\t                                  tlc_grid[2], %uu, 1u, 1u, %uu, stream, tlc_params, NULL);\n"
            "}\n\n",
            stem, stem, index, k->threads, k->smem);
}

/* ---------------------------------------------------------------- the header */

char *emit_c_header(const char *ptx, const tl_meta *meta, const char *source_name, const char *command,
                    char *err, size_t err_size)
{
  const int n = tl_meta_kernel_count(meta);
  char *stem = stem_of(source_name);
  KernelNames *kns = calloc((size_t)n + 1, sizeof *kns);
  bool ok = stem && kns;
  for (int i = 0; ok && i < n; i++) {
    kns[i].k = tl_meta_kernel(meta, i);
    kns[i].cname = c_name(kns[i].k->name, false);
    kns[i].pnames = calloc((size_t)kns[i].k->nparams + 1, sizeof *kns[i].pnames);
    ok = kns[i].cname && kns[i].pnames;
    for (int j = 0; ok && j < kns[i].k->nparams; j++)
      ok = (kns[i].pnames[j] = c_name(kns[i].k->params[j].name, true)) != NULL;
  }
  if (!ok) {
    snprintf(err, err_size, "out of memory");
  } else if (n == 0) {
    snprintf(err, err_size, "no kernel to make launchers for");
    ok = false;
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
      put_tl_signature(&sig, kns[i].k);
      sb_puts(&sb, " *   ");
      put_comment_text(&sb, sig.data);
      sb_printf(&sb, "\n *     CUresult %s_launch(", kns[i].cname);
      put_params(&sb, &kns[i], true);
      sb_puts(&sb, ");\n");
      free(sig.data);
    }
    sb_printf(&sb,
              " *\n"
              " * Needs only the CUDA driver at run time: libcuda.so.1 is opened with dlopen\n"
              " * on first use (build with -ldl on glibc older than 2.34, and -pthread).\n"
              " * Symbolic sizes are passed explicitly, after the tensors and scalars; nothing\n"
              " * checks that the tensors are that large.\n"
              " *\n"
              " * The module is loaded once, by %s_load() or the first launch, into the CUDA\n"
              " * context current on that thread (TILEC_AOT_INVALID_CONTEXT if there is\n"
              " * none); launch only while that context is current.  Loading is\n"
              " * thread-safe, and so are launches from any number of threads.  %s_unload()\n"
              " * frees the module; no launch may run or follow until the next load.\n"
              " * Everything is static: each translation unit that includes this header\n"
              " * loads its own copy of the module.\n"
              " */\n",
              stem, stem);
    sb_printf(&sb, "#ifndef TILEC_AOT_%s_H\n#define TILEC_AOT_%s_H\n\n", upper, upper);
    sb_puts(&sb, AOT_PRELUDE);
    /* one literal, readable, longer than the 4095 characters ISO C promises:
     * every compiler that matters takes it, so -pedantic is told so */
    sb_printf(&sb,
              "\n/* The PTX, with its tilec-meta block (docs/abi.md). */\n"
              "#if defined(__GNUC__) || defined(__clang__)\n"
              "#pragma GCC diagnostic push\n"
              "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
              "#endif\n"
              "static const char %s_ptx[] =\n",
              stem);
    put_string_literal(&sb, ptx);
    sb_puts(&sb, ";\n#if defined(__GNUC__) || defined(__clang__)\n#pragma GCC diagnostic pop\n#endif\n\n");
    sb_printf(&sb, "static tilec_aot_module %s_module_ = TILEC_AOT_MODULE_INIT;\n", stem);
    sb_printf(&sb, "static CUfunction %s_functions_[%d];\n\n", stem, n);
    sb_printf(&sb,
              "/* Load the module into the current context (once; later calls return at\n"
              " * once).  Launches call it themselves. */\nstatic inline CUresult %s_load(void)\n{\n"
              "\tstatic const char *const names[%d] = {",
              stem, n);
    for (int i = 0; i < n; i++)
      sb_printf(&sb, "%s\"%s\"", i ? ", " : "", kns[i].k->name);
    sb_printf(&sb, "};\n\tstatic const unsigned int smem[%d] = {", n);
    for (int i = 0; i < n; i++)
      sb_printf(&sb, "%s%uu", i ? ", " : "", kns[i].k->smem);
    sb_printf(&sb, "};\n\treturn tilec_aot_load(&%s_module_, %s_ptx, %d, names, smem, %s_functions_);\n}\n\n",
              stem, stem, n, stem);
    sb_printf(&sb,
              "/* Unload the module (with its context made current for the call). */\n"
              "static inline void %s_unload(void) { tilec_aot_unload(&%s_module_); }\n\n",
              stem, stem);
    for (int i = 0; i < n; i++) {
      put_grid_function(&sb, &kns[i]);
      put_launch_function(&sb, stem, i, &kns[i]);
    }
    sb_printf(&sb, "#endif /* TILEC_AOT_%s_H */\n", upper);
  }
  for (int i = 0; kns && i < n; i++) {
    for (int j = 0; kns[i].pnames && j < kns[i].k->nparams; j++)
      free(kns[i].pnames[j]);
    free(kns[i].pnames);
    free(kns[i].cname);
  }
  free(kns);
  free(stem);
  if (!ok) {
    free(sb.data);
    return NULL;
  }
  return sb_take(&sb);
}
