/* npy.c: reading and writing .npy files (npy.h has the format). */
#include "npy.h"

#include "file.h" /* runtime/file.h: the one whole-file reader */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements are copied in and out as bytes, which is right only on a little-endian host. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c copies little-endian data as it is: a big-endian host needs byte swaps here"
#endif

static const struct {
  const char *kind; /* "f4" */
  int bytes;
} dtypes[] = {
#define X(e, s, b) {s, b},
    NPY_DTYPES(X)
#undef X
};

static const char MAGIC[] = "\x93NUMPY";
enum { MAGIC_LEN = 6 };

const char *npy_descr(NpyDtype t)
{
  static const char *descrs[] = {
#define X(e, s, b) b == 1 ? "|" s : "<" s,
      NPY_DTYPES(X)
#undef X
  };
  return (int)t >= 0 && t < NPY_DTYPE_COUNT ? descrs[t] : "?";
}

int npy_dtype_bytes(NpyDtype t) { return (int)t >= 0 && t < NPY_DTYPE_COUNT ? dtypes[t].bytes : 0; }

void npy_free(NpyArray *a)
{
  free(a->data);
  *a = (NpyArray){0};
}

/* "(3, 4)", "(3,)" or "()", as Python writes a tuple. */
static const char *shape_text(char *buf, size_t cap, int rank, const int64_t *shape)
{
  size_t n = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i < rank && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (n < cap)
    snprintf(buf + n, cap - n, rank == 1 ? ",)" : ")");
  return buf;
}

/* ---------------------------------------------------------------- the header's dict */

/* What the header says, as it is parsed. */
typedef struct {
  const char *start, *p, *end; /* the header text */
  char *err;
  size_t errcap;
  bool seen_descr, seen_fortran, seen_shape;
  const char *descr;
  size_t descr_len;
  bool fortran;
  int rank;
  int64_t shape[NPY_MAX_RANK];
} Header;

__attribute__((format(printf, 2, 3))) static bool header_error(Header *h, const char *fmt, ...)
{
  int n = snprintf(h->err, h->errcap, "bad header at byte %d: ", (int)(h->p - h->start));
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < h->errcap)
    vsnprintf(h->err + n, h->errcap - (size_t)n, fmt, ap);
  va_end(ap);
  return false;
}

/* text[0 .. len) for a message: in quotes, at most 24 bytes, other than printable ASCII as '?'. */
static const char *quoted(char *buf, size_t cap, const char *text, size_t len)
{
  size_t n = 0, shown = len > 24 ? 24 : len;
  if (cap < 32)
    return "";
  buf[n++] = '\'';
  for (size_t i = 0; i < shown; i++)
    buf[n++] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
  snprintf(buf + n, cap - n, "%s'", shown < len ? "..." : "");
  return buf;
}

static void skip_space(Header *h)
{
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

/* Skips spaces, then the character c if it is next. */
static bool accept(Header *h, char c)
{
  skip_space(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

static const char *next_text(const Header *h)
{
  return h->p == h->end ? "the end of the header" : *h->p == '\0' ? "a NUL byte" : "something else";
}

/* string = "'" chars "'" | '"' chars '"' ;   no escapes (no header NumPy writes has one) */
static bool parse_string(Header *h, const char **s, size_t *len)
{
  skip_space(h);
  if (h->p == h->end || (*h->p != '\'' && *h->p != '"'))
    return header_error(h, "expected a quoted string, found %s", next_text(h));
  char quote = *h->p++;
  *s = h->p;
  while (h->p < h->end && *h->p != quote) {
    if (*h->p == '\\' || *h->p == '\n')
      return header_error(h, "%s in a string", *h->p == '\n' ? "a line break" : "an escape");
    h->p++;
  }
  if (h->p == h->end)
    return header_error(h, "unterminated string");
  *len = (size_t)(h->p++ - *s);
  return true;
}

/* integer = [ "-" ] digit { digit } [ "L" ] ;   "L": Python 2 wrote longs so */
static bool parse_dim(Header *h, int64_t *v)
{
  skip_space(h);
  bool negative = h->p < h->end && *h->p == '-';
  h->p += negative;
  if (h->p == h->end || *h->p < '0' || *h->p > '9')
    return header_error(h, "expected an integer in 'shape', found %s", next_text(h));
  *v = 0;
  for (; h->p < h->end && *h->p >= '0' && *h->p <= '9'; h->p++)
    if (__builtin_mul_overflow(*v, 10, v) || __builtin_add_overflow(*v, *h->p - '0', v))
      return header_error(h, "a dimension of 'shape' does not fit in 64 bits");
  if (h->p < h->end && *h->p == 'L')
    h->p++;
  if (negative)
    return header_error(h, "dimension %d of 'shape' is negative (-%lld)", h->rank, (long long)*v);
  return true;
}

/* tuple = "(" [ integer { "," integer } [ "," ] ] ")" ;   "(3)" is an integer, not a tuple */
static bool parse_shape(Header *h)
{
  if (!accept(h, '('))
    return header_error(h, "'shape' must be a tuple of integers such as (3, 4)");
  h->rank = 0;
  bool comma = false;
  while (!accept(h, ')')) {
    if (h->rank == NPY_MAX_RANK)
      return header_error(h, "'shape' has more than %d dimensions", NPY_MAX_RANK);
    if (!parse_dim(h, &h->shape[h->rank]))
      return false;
    h->rank++;
    comma = accept(h, ',');
    if (!comma && !accept(h, ')'))
      return header_error(h, "expected ',' or ')' in 'shape', found %s", next_text(h));
    if (!comma)
      break;
  }
  if (h->rank == 1 && !comma)
    return header_error(h, "'shape' is (%lld), an integer, not a tuple: (%lld,) is one",
                        (long long)h->shape[0], (long long)h->shape[0]);
  return true;
}

/* item = string ":" value ;   the three keys NumPy writes, each once, nothing else */
static bool parse_item(Header *h)
{
  const char *key;
  size_t n;
  char q[40];
  if (!parse_string(h, &key, &n))
    return false;
  if (!accept(h, ':'))
    return header_error(h, "expected ':' after the key %s", quoted(q, sizeof q, key, n));
  bool *seen = n == 5 && !memcmp(key, "descr", 5)             ? &h->seen_descr
               : n == 13 && !memcmp(key, "fortran_order", 13) ? &h->seen_fortran
               : n == 5 && !memcmp(key, "shape", 5)           ? &h->seen_shape
                                                              : NULL;
  if (!seen)
    return header_error(h, "unknown key %s (expected 'descr', 'fortran_order' and 'shape')",
                        quoted(q, sizeof q, key, n));
  if (*seen)
    return header_error(h, "the key %s comes twice", quoted(q, sizeof q, key, n));
  *seen = true;
  skip_space(h);
  if (seen == &h->seen_shape)
    return parse_shape(h);
  if (seen == &h->seen_descr) {
    if (h->p < h->end && (*h->p == '[' || *h->p == '{'))
      return header_error(h, "structured dtypes are not supported: 'descr' must be a string such as '<f4'");
    return parse_string(h, &h->descr, &h->descr_len);
  }
  size_t left = (size_t)(h->end - h->p);
  if (left >= 4 && !memcmp(h->p, "True", 4))
    h->fortran = true, h->p += 4;
  else if (left >= 5 && !memcmp(h->p, "False", 5))
    h->fortran = false, h->p += 5;
  else
    return header_error(h, "'fortran_order' must be True or False");
  return true;
}

/* header = "{" [ item { "," item } [ "," ] ] "}" ;   then spaces and a line break to the end */
static bool parse_dict(Header *h)
{
  if (!accept(h, '{'))
    return header_error(h, "expected '{', found %s", next_text(h));
  while (!accept(h, '}')) {
    if (!parse_item(h))
      return false;
    if (!accept(h, ',')) {
      if (accept(h, '}'))
        break;
      return header_error(h, "expected ',' or '}', found %s", next_text(h));
    }
  }
  skip_space(h);
  if (h->p != h->end)
    return header_error(h, "%s after the dict", *h->p ? "text" : "a NUL byte");
  if (!h->seen_descr || !h->seen_fortran || !h->seen_shape) {
    snprintf(h->err, h->errcap, "the header has no '%s'",
             !h->seen_descr     ? "descr"
             : !h->seen_fortran ? "fortran_order"
                                : "shape");
    return false;
  }
  return true;
}

/* descr -> dtype: "<f4"; one byte with any order mark ("|u1"); false with the reason. */
static bool parse_descr(const Header *h, NpyDtype *t, char *err, size_t cap)
{
  char q[40];
  const char *d = h->descr;
  if (h->descr_len == 3)
    for (int i = 0; i < NPY_DTYPE_COUNT; i++) {
      if (memcmp(d + 1, dtypes[i].kind, 2) != 0)
        continue;
      *t = (NpyDtype)i;
      if (dtypes[i].bytes == 1 ? strchr("|<>=", d[0]) != NULL : d[0] == '<')
        return true;
      if (d[0] == '>')
        snprintf(err, cap, "big-endian data ('%.3s') is not supported: save it as '<%.2s' (.astype('<%.2s'))",
                 d, d + 1, d + 1);
      else
        snprintf(err, cap, "dtype %s has no little-endian mark: expected '<%.2s'", quoted(q, sizeof q, d, 3),
                 d + 1);
      return false;
    }
  snprintf(err, cap,
           "unsupported dtype %s; expected one of <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1 "
           "(bfloat16: see 'tilec run --help')",
           quoted(q, sizeof q, d, h->descr_len));
  return false;
}

/* ---------------------------------------------------------------- reading */

__attribute__((format(printf, 3, 4))) static bool npy_error(char *err, size_t cap, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return false;
}

bool npy_parse(const char *bytes, size_t len, NpyArray *out, char *err, size_t errcap)
{
  *out = (NpyArray){0};
  if (len < MAGIC_LEN || memcmp(bytes, MAGIC, MAGIC_LEN) != 0)
    return npy_error(err, errcap, "not a .npy file: it does not start with \\x93NUMPY");
  if (len < MAGIC_LEN + 4)
    return npy_error(err, errcap, "the file ends inside the .npy preamble (%zu bytes)", len);
  const unsigned char *u = (const unsigned char *)bytes;
  int major = u[6], minor = u[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return npy_error(err, errcap, "unsupported .npy format version %d.%d (1.0, 2.0 and 3.0 are read)", major,
                     minor);
  size_t start = major == 1 ? 10 : 12;
  if (len < start)
    return npy_error(err, errcap, "the file ends inside the .npy preamble (%zu bytes)", len);
  size_t header_len = major == 1
                          ? (size_t)u[8] | (size_t)u[9] << 8
                          : (size_t)u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 | (size_t)u[11] << 24;
  if (header_len > len - start)
    return npy_error(err, errcap, "the header's length (%zu bytes) runs past the end of the file (%zu bytes)",
                     header_len, len);
  Header h = {.start = bytes + start,
              .p = bytes + start,
              .end = bytes + start + header_len,
              .err = err,
              .errcap = errcap};
  NpyDtype t;
  if (!parse_dict(&h) || !parse_descr(&h, &t, err, errcap))
    return false;
  if (h.fortran)
    return npy_error(err, errcap,
                     "the data is in Fortran order (fortran_order: True); only C order is supported "
                     "(save np.ascontiguousarray(a))");
  int64_t count = 1;
  char shape[NPY_MAX_RANK * 24 + 8];
  shape_text(shape, sizeof shape, h.rank, h.shape);
  for (int i = 0; i < h.rank; i++)
    if (__builtin_mul_overflow(count, h.shape[i], &count))
      return npy_error(err, errcap, "shape %s has more elements than fit in 64 bits", shape);
  size_t need, have = len - start - header_len;
  if (__builtin_mul_overflow((size_t)count, (size_t)dtypes[t].bytes, &need))
    return npy_error(err, errcap, "shape %s of %s needs more bytes than fit in 64 bits", shape, npy_descr(t));
  if (need != have)
    return npy_error(err, errcap, "the data is %zu bytes, but shape %s of %s needs %zu", have, shape,
                     npy_descr(t), need);
  out->data = malloc(need ? need : 1);
  if (!out->data)
    return npy_error(err, errcap, "out of memory for %zu bytes of data", need);
  memcpy(out->data, bytes + start + header_len, need);
  if (t == NPY_BOOL)
    for (size_t i = 0; i < need; i++)
      ((unsigned char *)out->data)[i] = ((unsigned char *)out->data)[i] != 0;
  out->dtype = t;
  out->rank = h.rank;
  memcpy(out->shape, h.shape, sizeof h.shape);
  out->count = count;
  return true;
}

bool npy_read(const char *path, NpyArray *out, char *err, size_t errcap)
{
  char *bytes;
  size_t len;
  int e = 0;
  *out = (NpyArray){0};
  tl_read_status st = tl_read_file(path, NPY_MAX_FILE_BYTES, &bytes, &len, &e);
  if (st == TL_READ_TOO_LARGE)
    return npy_error(err, errcap, "larger than %zu bytes", NPY_MAX_FILE_BYTES);
  if (st != TL_READ_OK)
    return npy_error(err, errcap, "%s", strerror(e));
  bool ok = npy_parse(bytes, len, out, err, errcap);
  free(bytes);
  return ok;
}

/* ---------------------------------------------------------------- writing */

char *npy_format(const NpyArray *a, size_t *len)
{
  *len = 0;
  if (a->rank < 0 || a->rank > NPY_MAX_RANK || (int)a->dtype < 0 || a->dtype >= NPY_DTYPE_COUNT)
    return NULL;
  int64_t count = 1;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] < 0 || __builtin_mul_overflow(count, a->shape[i], &count))
      return NULL;
  size_t data_bytes;
  if (count != a->count || __builtin_mul_overflow((size_t)count, (size_t)dtypes[a->dtype].bytes, &data_bytes))
    return NULL;
  /* At most 32 dimensions of 19 digits: the header is far below format 1.0's 65535 bytes, so
   * format 2.0 is never needed. */
  char shape[NPY_MAX_RANK * 24 + 8], head[NPY_MAX_RANK * 24 + 192];
  int n = snprintf(head, sizeof head, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                   npy_descr(a->dtype), shape_text(shape, sizeof shape, a->rank, a->shape));
  /* spaces and a line break to a multiple of 64 bytes, counting the 10 before the header */
  int header_len = (10 + n + 1 + 63) / 64 * 64 - 10;
  size_t total = 10 + (size_t)header_len;
  if (total + data_bytes < total)
    return NULL;
  char *out = malloc(total + data_bytes);
  if (!out)
    return NULL;
  memcpy(out, MAGIC, MAGIC_LEN);
  out[6] = 1;
  out[7] = 0;
  out[8] = (char)(header_len & 0xff);
  out[9] = (char)(header_len >> 8);
  memcpy(out + 10, head, (size_t)n);
  memset(out + 10 + n, ' ', (size_t)(header_len - n - 1));
  out[total - 1] = '\n';
  if (data_bytes)
    memcpy(out + total, a->data, data_bytes);
  *len = total + data_bytes;
  return out;
}
