/* test_npy: the .npy reader and writer of `tilec run` (tools/npy.c).
 *
 * Round trips of every dtype through npy_format and npy_parse (and a file, through npy_read); the
 * header NumPy itself writes for a known array; headers NumPy writes differently (formats 2.0 and
 * 3.0, other spacing, key order and quotes); then a table of malformed files, each refused with its
 * own message; then every truncation and many corruptions of a valid file, which must be refused or
 * read, never crash (the ASan build runs this too).
 */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npy.h"
#include "../support/check.h"

/* An .npy image: the preamble of format major.0 with a header length field of header_len (or, with
 * header_len -1, of the header's own length), the header text as given, then data_len bytes. */
static size_t make_npy(char *buf, int major, int64_t header_len, const char *header, size_t data_len)
{
  size_t h = strlen(header), n = major == 1 ? 10 : 12;
  uint64_t field = header_len < 0 ? h : (uint64_t)header_len;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (char)major;
  buf[7] = 0;
  for (size_t i = 8; i < n; i++)
    buf[i] = (char)(field >> (8 * (i - 8)));
  memcpy(buf + n, header, h);
  for (size_t i = 0; i < data_len; i++)
    buf[n + h + i] = (char)(i * 7 + 1);
  return n + h + data_len;
}

static void round_trip(NpyDtype t)
{
  int bytes = npy_dtype_bytes(t);
  unsigned char data[2 * 3 * 8];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = t == NPY_BOOL ? (unsigned char)(i & 1) : (unsigned char)(i * 37 + 11);
  NpyArray a = {.dtype = t, .rank = 2, .shape = {2, 3}, .count = 6, .data = data}, b;
  size_t len;
  char *img = npy_format(&a, &len), err[256] = "";
  CHECK(img != NULL, "%s: npy_format failed", npy_descr(t));
  if (!img)
    return;
  CHECK(len == 128 + 6 * (size_t)bytes, "%s: %zu bytes", npy_descr(t), len);
  CHECK(img[127] == '\n' && img[126] == ' ', "%s: the header ends with spaces and a line break",
        npy_descr(t));
  bool ok = npy_parse(img, len, &b, err, sizeof err);
  CHECK(ok, "%s: %s", npy_descr(t), err);
  if (ok) {
    CHECK(b.dtype == t && b.rank == 2 && b.shape[0] == 2 && b.shape[1] == 3 && b.count == 6,
          "%s: read back as %s rank %d", npy_descr(t), npy_descr(b.dtype), b.rank);
    CHECK(!memcmp(b.data, data, 6 * (size_t)bytes), "%s: the data differs", npy_descr(t));
  }
  npy_free(&b);
  free(img);
}

/* What NumPy 1.26 writes for np.save(f, np.zeros(3, np.float32)), byte for byte. */
static void numpy_header(void)
{
  float z[3] = {0};
  NpyArray a = {.dtype = NPY_F32, .rank = 1, .shape = {3}, .count = 3, .data = z};
  size_t len;
  char *img = npy_format(&a, &len), want[128];
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  memcpy(want, "\x93NUMPY\x01\x00\x76\x00", 10);
  memset(want + 10, ' ', sizeof want - 10);
  memcpy(want + 10, dict, strlen(dict));
  want[127] = '\n';
  CHECK(img && len == 140 && !memcmp(img, want, 128), "the header is not NumPy's");
  free(img);
  /* rank 0 and an empty array */
  NpyArray s = {.dtype = NPY_I64, .rank = 0, .count = 1, .data = &(int64_t){-5}},
           e = {.dtype = NPY_U8, .rank = 1}, back;
  char err[256] = "";
  img = npy_format(&s, &len);
  CHECK(img && memmem(img, len, "'shape': (), }", 14), "rank 0 is shape ()");
  CHECK(img && npy_parse(img, len, &back, err, sizeof err) && back.rank == 0 && back.count == 1 &&
            *(int64_t *)back.data == -5,
        "rank 0 round trip: %s", err);
  npy_free(&back);
  free(img);
  img = npy_format(&e, &len);
  CHECK(img && len == 128 && memmem(img, len, "'|u1'", 5) && memmem(img, len, "(0,)", 4), "an empty array");
  CHECK(img && npy_parse(img, len, &back, err, sizeof err) && back.count == 0, "empty round trip: %s", err);
  npy_free(&back);
  free(img);
  /* bad arguments */
  NpyArray bad = {.dtype = NPY_F32, .rank = 1, .shape = {-1}, .count = -1};
  CHECK(npy_format(&bad, &len) == NULL, "a negative dimension is not written");
  bad = (NpyArray){.dtype = NPY_F32, .rank = 1, .shape = {4}, .count = 3};
  CHECK(npy_format(&bad, &len) == NULL, "a count that is not the shape's is not written");
}

/* Headers NumPy (or another writer) may write, all read as (2, 3) f4 or the shape given. */
static void good_headers(void)
{
  static const struct {
    int major;
    const char *header;
    int rank;
    int64_t dim0;
    NpyDtype t;
  } cases[] = {
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 2, 2, NPY_F32},
      {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 2, 2, NPY_F32},
      {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }    \n", 2, 2, NPY_F32},
      {1, "{\"shape\":(2,3),\"fortran_order\":False,\"descr\":\"<f4\"}", 2, 2, NPY_F32},
      {1, "  {'descr':'<i8' ,\n 'fortran_order' : False , 'shape' : ( 6 , ) }\t\r\n", 1, 6, NPY_I64},
      {1, "{'descr': '<u1', 'fortran_order': False, 'shape': (6L,), }", 1, 6, NPY_U8},
      {1, "{'descr': '|b1', 'fortran_order': False, 'shape': (1, 1, 6), }", 3, 1, NPY_BOOL},
      {1, "{'descr': '<f2', 'fortran_order': False, 'shape': (0, 5), }", 2, 0, NPY_F16},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char buf[512], err[256] = "";
    int64_t count = cases[c].dim0 == 0 ? 0 : 6;
    size_t len = make_npy(buf, cases[c].major, -1, cases[c].header,
                          (size_t)count * (size_t)npy_dtype_bytes(cases[c].t));
    NpyArray a;
    bool ok = npy_parse(buf, len, &a, err, sizeof err);
    CHECK(ok, "good header %zu: %s", c, err);
    if (ok)
      CHECK(a.dtype == cases[c].t && a.rank == cases[c].rank && a.shape[0] == cases[c].dim0 &&
                a.count == count,
            "good header %zu: dtype %s rank %d", c, npy_descr(a.dtype), a.rank);
    if (ok && a.dtype == NPY_BOOL)
      for (int i = 0; i < 6; i++)
        CHECK(((unsigned char *)a.data)[i] <= 1, "bool byte %d is %d, not 0 or 1", i,
              ((unsigned char *)a.data)[i]);
    npy_free(&a);
  }
}

/* Each malformed file and the words its message must hold. */
static void bad_files(void)
{
#define F4(shape) "{'descr': '<f4', 'fortran_order': False, 'shape': " shape ", }"
  static const struct {
    const char *what;
    int major;
    int64_t header_len; /* -1: the header's own */
    const char *header;
    size_t data_len;
    const char *message;
  } cases[] = {
      {"bad magic", 1, -1, "", 0, "not a .npy file"},
      {"version 4.0", 4, -1, F4("(3,)"), 12, "unsupported .npy format version 4.0"},
      {"version 0.0", 0, -1, F4("(3,)"), 12, "unsupported .npy format version 0.0"},
      {"header length past the end", 1, 1000, F4("(3,)"), 12, "runs past the end of the file"},
      {"v2 header length 2^32-1", 2, 0xffffffff, F4("(3,)"), 12, "runs past the end of the file"},
      {"empty header", 1, -1, "", 0, "expected '{', found the end of the header"},
      {"a list, not a dict", 1, -1, "[1, 2]", 0, "expected '{'"},
      {"no comma between items", 1, -1, "{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}", 12,
       "expected ',' or '}'"},
      {"no colon", 1, -1, "{'descr' '<f4', 'fortran_order': False, 'shape': (3,)}", 12, "expected ':' after"},
      {"unterminated dict", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 12,
       "expected ',' or '}', found the end of the header"},
      {"unterminated string", 1, -1, "{'descr: '<f4'}", 0, "expected ':' after"},
      {"string to the end", 1, -1, "{'descr", 0, "unterminated string"},
      {"an escape", 1, -1, "{'de\\scr': '<f4'}", 0, "an escape in a string"},
      {"a key not a string", 1, -1, "{descr: '<f4'}", 0, "expected a quoted string"},
      {"text after the dict", 1, -1, F4("(3,)") " x", 12, "text after the dict"},
      {"no shape", 1, -1, "{'descr': '<f4', 'fortran_order': False}", 12, "the header has no 'shape'"},
      {"no descr", 1, -1, "{'fortran_order': False, 'shape': (3,)}", 12, "the header has no 'descr'"},
      {"no fortran_order", 1, -1, "{'descr': '<f4', 'shape': (3,)}", 12, "the header has no 'fortran_order'"},
      {"unknown key", 1, -1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", 12,
       "unknown key 'x'"},
      {"a key twice", 1, -1, "{'descr': '<f4', 'descr': '<f4'}", 12, "the key 'descr' comes twice"},
      {"fortran order", 1, -1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,)}", 12, "Fortran order"},
      {"fortran_order 1", 1, -1, "{'descr': '<f4', 'fortran_order': 1, 'shape': (3,)}", 12,
       "'fortran_order' must be True or False"},
      {"big-endian", 1, -1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,)}", 12, "big-endian"},
      {"no byte order", 1, -1, "{'descr': '|f4', 'fortran_order': False, 'shape': (3,)}", 12,
       "no little-endian mark"},
      {"complex", 1, -1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}", 24,
       "unsupported dtype '<c8'"},
      {"unicode", 1, -1, "{'descr': '<U5', 'fortran_order': False, 'shape': (3,)}", 60, "unsupported dtype"},
      {"a dtype name", 1, -1, "{'descr': 'float32', 'fortran_order': False, 'shape': (3,)}", 12,
       "unsupported dtype 'float32'"},
      {"structured", 1, -1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}", 12,
       "structured dtypes"},
      {"descr not a string", 1, -1, "{'descr': 4, 'fortran_order': False, 'shape': (3,)}", 12,
       "expected a quoted string"},
      {"negative dimension", 1, -1, F4("(2, -3)"), 0, "dimension 1 of 'shape' is negative (-3)"},
      {"dimension past 64 bits", 1, -1, F4("(99999999999999999999,)"), 0, "does not fit in 64 bits"},
      {"elements past 64 bits", 1, -1, F4("(4294967296, 4294967296)"), 0,
       "more elements than fit in 64 bits"},
      {"bytes past 64 bits", 1, -1, F4("(4611686018427387904,)"), 0, "needs more bytes than fit in 64 bits"},
      {"shape an integer", 1, -1, F4("(3)"), 12, "an integer, not a tuple"},
      {"shape a list", 1, -1, F4("[3]"), 12, "'shape' must be a tuple"},
      {"shape a float", 1, -1, F4("(3.0,)"), 12, "expected ',' or ')' in 'shape'"},
      {"shape empty item", 1, -1, F4("(,)"), 12, "expected an integer in 'shape'"},
      {"33 dimensions", 1, -1, F4("(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)"), 4,
       "more than 32 dimensions"},
      {"data short", 1, -1, F4("(3,)"), 8, "the data is 8 bytes, but shape (3,) of <f4 needs 12"},
      {"data long", 1, -1, F4("(3,)"), 13, "the data is 13 bytes, but shape (3,) of <f4 needs 12"},
      {"no data for a scalar", 1, -1, F4("()"), 0, "the data is 0 bytes, but shape () of <f4 needs 4"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char buf[1024], err[256] = "";
    size_t len = make_npy(buf, cases[c].major, cases[c].header_len, cases[c].header, cases[c].data_len);
    if (c == 0)
      buf[3] = 'X';
    NpyArray a = {.data = (void *)1};
    bool ok = npy_parse(buf, len, &a, err, sizeof err);
    CHECK(!ok, "%s: read", cases[c].what);
    CHECK(a.data == NULL && a.count == 0, "%s: *out is not empty", cases[c].what);
    CHECK(strstr(err, cases[c].message) != NULL, "%s: message \"%s\" lacks \"%s\"", cases[c].what, err,
          cases[c].message);
    npy_free(&a);
  }
#undef F4
  /* a NUL byte after the dict (make_npy copies a C string: the last two bytes go in by hand) */
  char buf[64], err[256] = "";
  size_t len = make_npy(buf, 1, 18, "{'descr': '<f4'}", 0);
  buf[len++] = ' ';
  buf[len++] = '\0';
  NpyArray a;
  CHECK(!npy_parse(buf, len, &a, err, sizeof err) && strstr(err, "a NUL byte after the dict"), "NUL: %s",
        err);
}

/* A valid file cut at every length, then corrupted at every byte of its header: never a crash, and
 * every cut file refused. */
static void truncations_and_corruptions(void)
{
  float data[5] = {1, 2, 3, 4, 5};
  NpyArray a = {.dtype = NPY_F32, .rank = 2, .shape = {1, 5}, .count = 5, .data = data}, b;
  size_t len;
  char *img = npy_format(&a, &len), err[256];
  if (!img)
    return;
  int refused = 0;
  for (size_t n = 0; n < len; n++) {
    err[0] = 0;
    bool ok = npy_parse(img, n, &b, err, sizeof err);
    refused += !ok && err[0];
    npy_free(&b);
  }
  CHECK(refused == (int)len, "%d of %zu truncated files refused with a message", refused, len);
  uint64_t rng = 12345;
  int reads = 0;
  for (size_t pos = 0; pos < 128; pos++)
    for (int k = 0; k < 8; k++) {
      char *copy = malloc(len);
      memcpy(copy, img, len);
      rng = rng * 6364136223846793005u + 1442695040888963407u;
      copy[pos] = (char)(rng >> 56);
      err[0] = 0;
      bool ok = npy_parse(copy, len, &b, err, sizeof err);
      reads += ok;
      CHECK(ok || err[0], "a corruption at byte %zu gives no message", pos);
      npy_free(&b);
      free(copy);
    }
  CHECK(reads > 0, "no corrupted padding byte was read");
  free(img);
}

static void files(void)
{
  char path[] = "/tmp/test_npy_XXXXXX", err[256] = "";
  int fd = mkstemp(path);
  int16_t v[4] = {-1, 2, -3, 4};
  NpyArray a = {.dtype = NPY_I16, .rank = 1, .shape = {4}, .count = 4, .data = v}, b;
  size_t len;
  char *img = npy_format(&a, &len);
  CHECK(fd >= 0 && img && write(fd, img, len) == (ssize_t)len, "cannot write %s", path);
  close(fd);
  bool ok = npy_read(path, &b, err, sizeof err);
  CHECK(ok && b.dtype == NPY_I16 && b.count == 4 && !memcmp(b.data, v, sizeof v), "npy_read: %s", err);
  npy_free(&b);
  unlink(path);
  free(img);
  CHECK(!npy_read(path, &b, err, sizeof err) && strstr(err, "No such file or directory"), "missing: %s", err);
  CHECK(!npy_read("/tmp", &b, err, sizeof err) && strstr(err, "Is a directory"), "a folder: %s", err);
  CHECK(!npy_read("/dev/null", &b, err, sizeof err) && strstr(err, "not a .npy file"), "empty: %s", err);
}

int main(void)
{
  for (int t = 0; t < NPY_DTYPE_COUNT; t++)
    round_trip((NpyDtype)t);
  numpy_header();
  good_headers();
  bad_files();
  truncations_and_corruptions();
  files();
  printf("test_npy: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
