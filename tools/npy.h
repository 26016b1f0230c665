/* npy.h: NumPy's .npy files, for `tilec run` (run.c): reading formats 1.0, 2.0 and 3.0, writing
 * 1.0; little-endian data in C order only.
 *
 *   "\x93NUMPY" major minor  header length  header: a Python dict literal     data
 *   6 bytes     1     1      2 bytes (1.0)  {'descr': '<f4', 'fortran_order':  count x itemsize
 *                            4 bytes (2.0,  False, 'shape': (3, 4), }  + spaces bytes, row-major
 *                            3.0), little-   and '\n', so that the data starts
 *                            endian          at a multiple of 64
 *
 * The reader trusts nothing in the file: every malformed header is an error message, and no
 * allocation is made before the data's size, computed without overflow from the shape, equals
 * what the file holds.  Format 3.0 differs from 2.0 only in allowing UTF-8 in the header, which
 * no accepted header contains.  bfloat16 has no .npy dtype: run.c decides what a bf16 tensor
 * reads and writes (docs/cli.md).
 */
#ifndef TILEC_NPY_H
#define TILEC_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The dtypes read and written: X(enum, kind and size as in descr, bytes). */
#define NPY_DTYPES(X)  \
  X(NPY_BOOL, "b1", 1) \
  X(NPY_I8, "i1", 1)   \
  X(NPY_I16, "i2", 2)  \
  X(NPY_I32, "i4", 4)  \
  X(NPY_I64, "i8", 8)  \
  X(NPY_U8, "u1", 1)   \
  X(NPY_U16, "u2", 2)  \
  X(NPY_U32, "u4", 4)  \
  X(NPY_U64, "u8", 8)  \
  X(NPY_F16, "f2", 2)  \
  X(NPY_F32, "f4", 4)  \
  X(NPY_F64, "f8", 8)

typedef enum {
#define X(e, s, b) e,
  NPY_DTYPES(X)
#undef X
      NPY_DTYPE_COUNT
} NpyDtype;

/* NumPy's own limit before 2.0; a file of more dimensions is refused. */
enum { NPY_MAX_RANK = 32 };

typedef struct {
  NpyDtype dtype;
  int rank;      /* 0 for a scalar (shape ()) */
  int64_t shape[NPY_MAX_RANK];
  int64_t count; /* elements: the product of shape, 1 for rank 0 */
  void *data;    /* count elements, little-endian, row-major; malloc'd (npy_free) */
} NpyArray;

/* descr as NumPy writes it: "<f4", and "|b1", "|i1", "|u1" for one byte. */
const char *npy_descr(NpyDtype t);
int npy_dtype_bytes(NpyDtype t);

/* The .npy image bytes[0 .. len) into *out (its data copied, bool bytes made 0 or 1).  False with
 * a message in err (no file name in it, no newline) when it is not a well-formed little-endian
 * C-order .npy of one of the dtypes above; *out is then empty. */
bool npy_parse(const char *bytes, size_t len, NpyArray *out, char *err, size_t errcap);

/* The file at path, read whole (runtime/file.h's tl_read_file, at most NPY_MAX_FILE_BYTES), then
 * npy_parse.  The message says why not, reading included ("No such file or directory"). */
#define NPY_MAX_FILE_BYTES ((size_t)1 << 32)
bool npy_read(const char *path, NpyArray *out, char *err, size_t errcap);

/* The .npy image of a (format 1.0, the header padded to 64 bytes), malloc'd, its length in *len;
 * NULL when out of memory or when a's rank or count is out of range. */
char *npy_format(const NpyArray *a, size_t *len);

void npy_free(NpyArray *a);

#endif
