/* test_jit: the JIT library (include/tilec_jit.h) and the compiler library's additions for it
 * (tilec.h: kernel signatures, tilec_compile_file, build id), on a machine with no GPU.
 *
 * Covers the 128-bit hash (streaming, avalanche, no collisions), the cache key (it changes with each
 * input that matters and only with those), the entry file format (every damaged byte, every
 * truncation, foreign versions and compilers are rejected), the disk and memory caches through
 * tl_jit_compile_ptx (damaged, truncated, empty, foreign entries are rebuilt and repaired; switches
 * turn caching off; the folder follows TILEC_CACHE_DIR / XDG_CACHE_HOME / HOME), hostile folders
 * and entries (a FIFO, 1 GiB files, symbolic links, other users' and others-writable entries and
 * folders), the folder's upkeep (stale temporaries, the disk limit, names too long), compile
 * errors,
 * eight threads and two processes compiling the same and different kernels at once, and, through a
 * stand-in driver (fake_cuda.c, via $TILEC_CUDA_LIBRARY), contexts: modules from source, the device
 * binary cache across contexts and driver versions, planted binaries refused, checked launches and
 * their misuse, the context's stream, and the no-driver and no-device errors.
 *
 *   test_jit                      run everything (exit 0 when every check passes)
 *   test_jit --child DIR          (internal) one of the concurrent processes
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "jit_internal.h"

#include "../support/read_file.h"
#include "../support/check.h"

extern char **environ;

/* ---------------------------------------------------------------------------------- helpers */

static char tmp_root[256];

static bool write_bytes(const char *path, const void *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  if (!f)
    return false;
  bool ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

static void remove_tree(const char *path)
{
  DIR *d = opendir(path);
  if (!d) {
    unlink(path);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char child[8192]; /* the long-name test goes up to PATH_MAX */
    snprintf(child, sizeof child, "%s/%s", path, e->d_name);
    remove_tree(child);
  }
  closedir(d);
  rmdir(path);
}

static const char *tmp_path(const char *name, char *buf, size_t size)
{
  snprintf(buf, size, "%s/%s", tmp_root, name);
  return buf;
}

static bool file_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0;
}

/* Names in dir that start with '.' (temporaries) and that end in .tljit (entries). */
static void count_dir(const char *dir, int *temporaries, int *entries)
{
  *temporaries = *entries = 0;
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      (*temporaries)++;
    else if (n > 6 && !strcmp(e->d_name + n - 6, TL_CACHE_SUFFIX))
      (*entries)++;
  }
  closedir(d);
}

/* The examples, read once. */
typedef struct source {
  const char *name;
  char *text;
  size_t len;
} source;
static source vector_add, saxpy, gelu;

static bool load_sources(void)
{
  source *all[] = {&vector_add, &saxpy, &gelu};
  const char *names[] = {"vector_add.tl", "saxpy.tl", "gelu.tl"};
  for (int i = 0; i < 3; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TILEC_EXAMPLES_DIR, names[i]);
    all[i]->name = names[i];
    all[i]->text = test_read_file(path, &all[i]->len);
    if (!all[i]->text) {
      printf("FAIL cannot read %s\n", path);
      return false;
    }
  }
  return true;
}

/* PTX from the compiler directly, no cache: what every cached path must give back. */
static char *reference_ptx(const source *s, const char *arch, const char *block)
{
  tilec_define def = {"BLOCK", block};
  tilec_options o = {0};
  o.arch = arch;
  o.opt_level = 3;
  o.defines = block ? &def : NULL;
  o.ndefines = block ? 1 : 0;
  tilec_result *r = NULL;
  char *ptx = NULL;
  if (tilec_compile(s->text, s->len, &o, &r) == TILEC_OK)
    ptx = strdup(tilec_result_output(r));
  tilec_result_free(r);
  return ptx;
}

static tl_jit_options options_for(const char *arch, const tilec_define *defs, int ndefs)
{
  tl_jit_options o = tl_jit_default_options();
  o.arch = arch;
  o.defines = defs;
  o.ndefines = ndefs;
  return o;
}

/* ------------------------------------------------------------------------------------- hash */

static int popcount128(tl_hash128 a, tl_hash128 b)
{
  return __builtin_popcountll(a.lo ^ b.lo) + __builtin_popcountll(a.hi ^ b.hi);
}

static int compare_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void test_hash(void)
{
  unsigned char buf[1000];
  uint64_t rng = 0x1234567;
  for (size_t i = 0; i < sizeof buf; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    buf[i] = (unsigned char)(rng >> 56);
  }
  /* streaming: any split gives the one-shot hash */
  const tl_hash128 whole = tl_hash(buf, sizeof buf, 7);
  int bad_splits = 0;
  for (size_t cut = 0; cut <= sizeof buf; cut++) {
    tl_hasher h;
    tl_hasher_init(&h, 7);
    tl_hasher_update(&h, buf, cut / 3);
    tl_hasher_update(&h, buf + cut / 3, cut - cut / 3);
    tl_hasher_update(&h, buf + cut, sizeof buf - cut);
    bad_splits += !tl_hash_equal(tl_hasher_final(&h), whole);
  }
  CHECK(bad_splits == 0, "%d splits hash differently", bad_splits);
  /* lengths, seeds and trailing zeros all count */
  CHECK(!tl_hash_equal(tl_hash("", 0, 0), tl_hash("\0", 1, 0)), "empty vs NUL");
  CHECK(!tl_hash_equal(tl_hash(buf, 16, 0), tl_hash(buf, 17, 0)), "16 vs 17");
  CHECK(!tl_hash_equal(tl_hash(buf, 16, 0), tl_hash(buf, 16, 1)), "seeds");
  tl_hasher a, b;
  tl_hasher_init(&a, 0);
  tl_hasher_init(&b, 0);
  tl_hasher_field(&a, "ab", 2);
  tl_hasher_field(&a, "c", 1);
  tl_hasher_field(&b, "a", 1);
  tl_hasher_field(&b, "bc", 2);
  CHECK(!tl_hash_equal(tl_hasher_final(&a), tl_hasher_final(&b)), "fields are delimited");
  tl_hasher_init(&a, 0);
  tl_hasher_init(&b, 0);
  tl_hasher_string(&a, NULL);
  tl_hasher_string(&b, "");
  CHECK(!tl_hash_equal(tl_hasher_final(&a), tl_hasher_final(&b)), "NULL vs empty string");

  /* avalanche: flipping any one input bit flips about half of the 128 output bits */
  long total = 0, samples = 0;
  int worst = 128;
  for (int trial = 0; trial < 64; trial++) {
    unsigned char in[48];
    memcpy(in, buf + trial * 7, sizeof in);
    const size_t len = 1 + (size_t)trial % sizeof in; /* every tail length */
    const tl_hash128 h0 = tl_hash(in, len, 0);
    for (size_t bit = 0; bit < len * 8; bit++) {
      in[bit / 8] ^= (unsigned char)(1u << (bit % 8));
      int flipped = popcount128(h0, tl_hash(in, len, 0));
      in[bit / 8] ^= (unsigned char)(1u << (bit % 8));
      total += flipped;
      samples++;
      if (flipped < worst)
        worst = flipped;
    }
  }
  const double mean = (double)total / (double)samples;
  CHECK(mean > 62.0 && mean < 66.0, "mean flipped bits %.2f over %ld flips", mean, samples);
  CHECK(worst >= 30, "a flip changed only %d output bits", worst);

  /* no collision among many similar inputs (counters, as the 64-bit halves) */
  enum { N = 200000 };
  uint64_t *los = malloc(N * sizeof *los), *his = malloc(N * sizeof *his);
  if (los && his) {
    for (uint64_t i = 0; i < N; i++) {
      tl_hash128 h = tl_hash(&i, sizeof i, 0);
      los[i] = h.lo;
      his[i] = h.hi;
    }
    qsort(los, N, sizeof *los, compare_u64);
    qsort(his, N, sizeof *his, compare_u64);
    int dup = 0;
    for (int i = 1; i < N; i++)
      dup += (los[i] == los[i - 1]) + (his[i] == his[i - 1]);
    CHECK(dup == 0, "%d collisions of 64-bit halves among %d counters", dup, N);
  }
  free(los);
  free(his);

  char hex[33];
  tl_hash_hex((tl_hash128){0x0123456789abcdefull, 0xfedcba9876543210ull}, hex);
  CHECK(!strcmp(hex, "fedcba98765432100123456789abcdef"), "hex %s", hex);
}

/* ------------------------------------------------------------------------------------- arch */

static void test_arch_for(void)
{
  static const struct {
    int major, minor;
    const char *arch;
  } cases[] = {{9, 0, "sm_90a"}, {8, 0, "sm_80"},  {8, 6, "sm_86"}, {8, 7, "sm_86"}, {8, 9, "sm_89"},
               {10, 0, "sm_90"}, {12, 0, "sm_90"}, {7, 5, NULL},    {-1, 0, NULL},   {8, 10, NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *got = tl_jit_arch_for(cases[i].major, cases[i].minor);
    CHECK(got == cases[i].arch || (got && cases[i].arch && !strcmp(got, cases[i].arch)),
          "%d.%d gives %s, expected %s", cases[i].major, cases[i].minor, got ? got : "NULL",
          cases[i].arch ? cases[i].arch : "NULL");
  }
}

/* --------------------------------------------------------------------------------------- key */

static void key_of(const char *src, const tl_jit_options *o, char hex[33])
{
  char err[256];
  tl_status st = tl_jit_key(src, strlen(src), o, hex, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
}

static void ignore_diagnostic(void *user, const tilec_diagnostic *d) { (void)user, (void)d; }

static void test_key(void)
{
  const char *src = vector_add.text;
  tilec_define block = {"BLOCK", "4096"};
  tl_jit_options base = options_for("sm_90a", &block, 1);
  char k0[33], k[33];
  key_of(src, &base, k0);
  CHECK(strlen(k0) == 32, "key %s", k0);

  /* what matters */
  char *edited = strdup(src);
  edited[strlen(edited) / 2] ^= 1;
  key_of(edited, &base, k);
  CHECK(strcmp(k, k0), "one source byte");
  char *longer = malloc(strlen(src) + 2);
  sprintf(longer, "%s ", src);
  key_of(longer, &base, k);
  CHECK(strcmp(k, k0), "a trailing space");
  tl_jit_options o = base;
  o.arch = "sm_80";
  key_of(src, &o, k);
  CHECK(strcmp(k, k0), "arch");
  o = base;
  o.opt_level = 2;
  key_of(src, &o, k);
  CHECK(strcmp(k, k0), "opt level");
  tilec_define other_value = {"BLOCK", "2048"}, other_name = {"BLOCKS", "4096"};
  o = options_for("sm_90a", &other_value, 1);
  key_of(src, &o, k);
  CHECK(strcmp(k, k0), "define value");
  o = options_for("sm_90a", &other_name, 1);
  key_of(src, &o, k);
  CHECK(strcmp(k, k0), "define name");
  o = options_for("sm_90a", NULL, 0);
  key_of(src, &o, k);
  CHECK(strcmp(k, k0), "no define");
  tilec_define two[] = {{"BLOCK", "4096"}, {"THREADS", "128"}};
  o = options_for("sm_90a", two, 2);
  key_of(src, &o, k);
  CHECK(strcmp(k, k0), "an extra define");
  o = base;
  o.kernel = "vector_add";
  key_of(src, &o, k);
  CHECK(strcmp(k, k0), "kernel selection");
  /* the compiler's build */
  char id[TL_CACHE_ID_BYTES];
  tl_jit_compiler_id(id, sizeof id);
  CHECK(strstr(id, tilec_version()) && strstr(id, tilec_build_id()), "compiler id %s", id);
  CHECK(strlen(tilec_build_id()) == 16, "build id %s", tilec_build_id());
  tl_hash128 h1, h2;
  CHECK(tl_jit_key_for(src, strlen(src), "sm_90a", 3, &block, 1, NULL, id, &h1), "key_for");
  CHECK(tl_jit_key_for(src, strlen(src), "sm_90a", 3, &block, 1, NULL, "tilec 0.1.0+0000000000000000", &h2),
        "key_for");
  CHECK(!tl_hash_equal(h1, h2), "compiler build");
  char hex1[33];
  tl_hash_hex(h1, hex1);
  CHECK(!strcmp(hex1, k0), "tl_jit_key is tl_jit_key_for with this compiler: %s vs %s", hex1, k0);

  /* what does not */
  o = base;
  o.filename = "elsewhere/vector_add.tl";
  o.flags = TL_JIT_NO_CACHE | TL_JIT_NO_DISK_CACHE;
  o.on_diagnostic = ignore_diagnostic;
  o.user = &o;
  key_of(src, &o, k);
  CHECK(!strcmp(k, k0), "filename, flags and the callback do not matter");
  tilec_define ab[] = {{"BLOCK", "4096"}, {"THREADS", "128"}}, ba[] = {{"THREADS", "128"}, {"BLOCK", "4096"}};
  char kab[33], kba[33];
  o = options_for("sm_90a", ab, 2);
  key_of(src, &o, kab);
  o = options_for("sm_90a", ba, 2);
  key_of(src, &o, kba);
  CHECK(!strcmp(kab, kba), "the order of distinct defines does not matter");
  tilec_define twice[] = {{"BLOCK", "1"}, {"BLOCK", "4096"}};
  o = options_for("sm_90a", twice, 2);
  key_of(src, &o, k);
  CHECK(!strcmp(k, k0), "a define overridden by a later one does not matter");

  /* misuse */
  char err[256];
  CHECK_STATUS(tl_jit_key(src, strlen(src), &base, NULL, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(tl_jit_key(src, strlen(src), NULL, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  o = base;
  o.arch = NULL;
  CHECK_STATUS(tl_jit_key(src, strlen(src), &o, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  o.arch = "sm_75";
  CHECK_STATUS(tl_jit_key(src, strlen(src), &o, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  CHECK_CONTAINS(err, "unknown target 'sm_75'");
  o = base;
  o.opt_level = 4;
  CHECK_STATUS(tl_jit_key(src, strlen(src), &o, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  o = base;
  o.ndefines = -1;
  CHECK_STATUS(tl_jit_key(src, strlen(src), &o, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  tilec_define nameless = {NULL, "1"};
  o = options_for("sm_90a", &nameless, 1);
  CHECK_STATUS(tl_jit_key(src, strlen(src), &o, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  o = base;
  o.flags = 0x100;
  CHECK_STATUS(tl_jit_key(src, strlen(src), &o, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(tl_jit_key(NULL, 10, &base, k, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  free(edited);
  free(longer);
}

/* ----------------------------------------------------------------------------- entry format */

static void test_format(void)
{
  const char *id = "tilec 9.9.9+0123456789abcdef";
  const tl_hash128 key = {0x1111, 0x2222};
  static const char ptx[] = "// tilec-meta v1\n.version 8.0\n";
  static const unsigned char binary[] = {'B', 'I', 'N', 0, 1, 2, 3, 0xff};
  tl_cache_entry e = {(char *)ptx, sizeof ptx - 1, (void *)binary, sizeof binary, 90, 13000};
  unsigned char *data = NULL;
  size_t len = 0;
  CHECK(tl_cache_encode(key, id, &e, &data, &len), "encode");
  CHECK(len == TL_CACHE_HEADER + sizeof ptx - 1 + sizeof binary, "%zu bytes", len);
  tl_cache_entry d;
  char why[512] = "";
  CHECK(tl_cache_decode(data, len, key, id, &d, why, sizeof why), "decode: %s", why);
  CHECK(d.ptx && !strcmp(d.ptx, ptx) && d.cubin_len == sizeof binary &&
            !memcmp(d.cubin, binary, sizeof binary) && d.cubin_cc == 90 && d.cubin_driver == 13000,
        "round trip");
  tl_cache_entry_free(&d);

  /* every byte matters: magic, version, lengths, id, key, payload, the checksum itself */
  int accepted = 0;
  for (size_t i = 0; i < len; i++) {
    data[i] ^= 0x20;
    accepted += tl_cache_decode(data, len, key, id, &d, why, sizeof why);
    tl_cache_entry_free(&d);
    data[i] ^= 0x20;
  }
  CHECK(accepted == 0, "%d damaged entries accepted", accepted);
  /* every truncation, and one byte too many */
  accepted = 0;
  for (size_t n = 0; n < len; n++) {
    accepted += tl_cache_decode(data, n, key, id, &d, why, sizeof why);
    tl_cache_entry_free(&d);
  }
  CHECK(accepted == 0, "%d truncations accepted", accepted);
  unsigned char *longer = malloc(len + 1);
  memcpy(longer, data, len);
  longer[len] = 0;
  CHECK(!tl_cache_decode(longer, len + 1, key, id, &d, why, sizeof why), "extended");
  CHECK_CONTAINS(why, "extended");
  free(longer);
  CHECK(!tl_cache_decode(data, len, (tl_hash128){0x1111, 0x2223}, id, &d, why, sizeof why), "key");
  CHECK_CONTAINS(why, "another key");
  CHECK(!tl_cache_decode(data, len, key, "tilec 9.9.8+0123456789abcdef", &d, why, sizeof why), "id");
  CHECK_CONTAINS(why, "another compiler");
  CHECK(!tl_cache_decode(data, len - 1, key, id, &d, why, sizeof why), "truncated");
  CHECK_CONTAINS(why, "truncated");
  data[8] = 3; /* format version 3 */
  CHECK(!tl_cache_decode(data, len, key, id, &d, why, sizeof why), "format");
  CHECK_CONTAINS(why, "foreign format version 3");
  data[8] = TL_CACHE_FORMAT;
  data[len - 1] ^= 1;
  CHECK(!tl_cache_decode(data, len, key, id, &d, why, sizeof why), "payload");
  CHECK_CONTAINS(why, "checksum");
  free(data);

  /* an entry without a device binary */
  e.cubin = NULL;
  e.cubin_len = 0;
  CHECK(tl_cache_encode(key, id, &e, &data, &len), "encode");
  CHECK(tl_cache_decode(data, len, key, id, &d, why, sizeof why) && !d.cubin && d.cubin_len == 0,
        "PTX only: %s", why);
  tl_cache_entry_free(&d);
  free(data);
  /* a compiler id too long for the header is refused, not truncated into someone else's */
  char long_id[100];
  memset(long_id, 'x', sizeof long_id - 1);
  long_id[sizeof long_id - 1] = 0;
  CHECK(!tl_cache_encode(key, long_id, &e, &data, &len), "long id");
}

/* ------------------------------------------------------------------------- disk and memory */

typedef struct log_capture {
  int count;
  char last[1024];
} log_capture;

static void capture_log(void *user, int level, const char *message)
{
  log_capture *c = user;
  (void)level;
  c->count++;
  snprintf(c->last, sizeof c->last, "%s", message);
}

static tl_jit_stats stats_of(tl_jit_cache *c)
{
  tl_jit_stats s;
  tl_jit_cache_stats(c, &s);
  return s;
}

/* Compile vector_add through a new cache on dir; check the PTX; return the stats. */
static tl_jit_stats compile_once(const char *dir, const char *reference, log_capture *log)
{
  tl_jit_cache *c = NULL;
  char err[4096];
  tl_status st = tl_jit_cache_create(dir, 0, &c, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
  if (log)
    tl_jit_cache_set_log(c, capture_log, log);
  tl_jit_options o = options_for("sm_90a", NULL, 0);
  char *ptx = NULL;
  st = tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
  CHECK(ptx && !strcmp(ptx, reference), "PTX differs from a direct compile");
  free(ptx);
  tl_jit_stats s = stats_of(c);
  tl_jit_cache_destroy(c);
  return s;
}

/* TL_JIT_LINE_INFO: its own cache entry (another key), and .loc directives in the PTX it gives; the
 * same source without it has none, from the same cache. */
static void test_line_info(void)
{
  char dir[4096], err[4096], k0[33], k1[33];
  snprintf(dir, sizeof dir, "%s/lineinfo", tmp_root);
  tl_jit_cache *c = NULL;
  CHECK_STATUS(tl_jit_cache_create(dir, 0, &c, err, sizeof err), TL_OK, err);
  tl_jit_options o = options_for("sm_90a", NULL, 0);
  CHECK_STATUS(tl_jit_key(vector_add.text, vector_add.len, &o, k0, err, sizeof err), TL_OK, err);
  o.flags = TL_JIT_LINE_INFO;
  CHECK_STATUS(tl_jit_key(vector_add.text, vector_add.len, &o, k1, err, sizeof err), TL_OK, err);
  CHECK(strcmp(k0, k1) != 0, "line info does not change the key (%s)", k0);
  char *with = NULL, *without = NULL;
  CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &with, err, sizeof err), TL_OK,
               err);
  o.flags = 0;
  CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &without, err, sizeof err), TL_OK,
               err);
  CHECK(with && strstr(with, "\t.loc\t") && strstr(with, "\t.file\t"),
        "no .loc / .file with TL_JIT_LINE_INFO");
  CHECK(without && !strstr(without, "\t.loc\t"), ".loc without TL_JIT_LINE_INFO");
  free(with);
  free(without);
  tl_jit_cache_destroy(c);
}

static void test_disk_cache(void)
{
  char dir[512], path[1024], err[4096];
  tmp_path("cache", dir, sizeof dir);
  char *ref = reference_ptx(&vector_add, "sm_90a", NULL);
  if (!ref) {
    CHECK(0, "vector_add does not compile");
    return;
  }
  tl_jit_options o = options_for("sm_90a", NULL, 0);
  char key[33];
  CHECK_STATUS(tl_jit_key(vector_add.text, vector_add.len, &o, key, err, sizeof err), TL_OK, err);
  snprintf(path, sizeof path, "%s/%s" TL_CACHE_SUFFIX, dir, key);

  /* cold: compiled, written; a file named after the key */
  tl_jit_stats s = compile_once(dir, ref, NULL);
  CHECK(s.compiles == 1 && s.disk_writes == 1 && s.disk_hits == 0, "cold: %llu compiles, %llu writes",
        (unsigned long long)s.compiles, (unsigned long long)s.disk_writes);
  CHECK(file_exists(path), "no entry at %s", path);
  /* warm disk: nothing compiled */
  s = compile_once(dir, ref, NULL);
  CHECK(s.compiles == 0 && s.disk_hits == 1 && s.disk_writes == 0, "warm: %llu compiles, %llu hits",
        (unsigned long long)s.compiles, (unsigned long long)s.disk_hits);

  /* warm memory: the same cache object */
  tl_jit_cache *c = NULL;
  CHECK_STATUS(tl_jit_cache_create(dir, 0, &c, err, sizeof err), TL_OK, err);
  CHECK(!strcmp(tl_jit_cache_dir(c), dir), "dir %s", tl_jit_cache_dir(c));
  for (int i = 0; i < 3; i++) {
    char *ptx = NULL;
    CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err), TL_OK,
                 err);
    CHECK(ptx && !strcmp(ptx, ref), "memory PTX");
    free(ptx);
  }
  s = stats_of(c);
  CHECK(s.disk_hits == 1 && s.memory_hits == 2 && s.compiles == 0, "memory: %llu disk, %llu memory",
        (unsigned long long)s.disk_hits, (unsigned long long)s.memory_hits);
  tl_jit_cache_destroy(c);

  /* the memory limit: two kernels, room for one; the older one leaves memory (not disk) */
  {
    tl_jit_cache *m = NULL;
    CHECK_STATUS(tl_jit_cache_create(NULL, TL_JIT_CACHE_NO_DISK, &m, err, sizeof err), TL_OK, err);
    tl_jit_options o80 = options_for("sm_80", NULL, 0);
    char *p1 = NULL, *p2 = NULL, *p3 = NULL;
    CHECK_STATUS(tl_jit_compile_ptx(m, vector_add.text, vector_add.len, &o, &p1, err, sizeof err), TL_OK,
                 err);
    tl_jit_stats s1 = stats_of(m);
    CHECK(s1.memory_bytes == strlen(ref), "memory holds %llu bytes, PTX has %zu",
          (unsigned long long)s1.memory_bytes, strlen(ref));
    tl_jit_cache_set_memory_limit(m, (size_t)s1.memory_bytes + 16); /* one entry of this size */
    CHECK_STATUS(tl_jit_compile_ptx(m, vector_add.text, vector_add.len, &o80, &p2, err, sizeof err), TL_OK,
                 err);
    CHECK_STATUS(tl_jit_compile_ptx(m, vector_add.text, vector_add.len, &o80, &p3, err, sizeof err), TL_OK,
                 err);
    s = stats_of(m);
    CHECK(s.compiles == 2 && s.memory_hits == 1 && s.memory_evictions == 1 &&
              s.memory_bytes <= s1.memory_bytes + 16,
          "limit: %llu compiles, %llu hits, %llu evictions, %llu bytes", (unsigned long long)s.compiles,
          (unsigned long long)s.memory_hits, (unsigned long long)s.memory_evictions,
          (unsigned long long)s.memory_bytes);
    free(p1);
    free(p2);
    free(p3);
    /* sm_90a was evicted: compiled again; a limit of 0 keeps nothing */
    tl_jit_cache_set_memory_limit(m, 0);
    CHECK_STATUS(tl_jit_compile_ptx(m, vector_add.text, vector_add.len, &o, &p1, err, sizeof err), TL_OK,
                 err);
    CHECK(p1 && !strcmp(p1, ref), "PTX after eviction");
    free(p1);
    CHECK_STATUS(tl_jit_compile_ptx(m, vector_add.text, vector_add.len, &o, &p1, err, sizeof err), TL_OK,
                 err);
    free(p1);
    s = stats_of(m);
    CHECK(s.compiles == 4 && s.memory_hits == 1 && s.memory_bytes == 0 && s.memory_evictions == 2,
          "limit 0: %llu compiles, %llu hits, %llu bytes, %llu evictions", (unsigned long long)s.compiles,
          (unsigned long long)s.memory_hits, (unsigned long long)s.memory_bytes,
          (unsigned long long)s.memory_evictions);
    tl_jit_cache_destroy(m);
  }

  /* damaged entries: rejected (logged), rebuilt, and repaired on disk */
  size_t len = 0;
  unsigned char *good = (unsigned char *)test_read_file(path, &len);
  CHECK(good != NULL, "read %s", path);
  if (!good)
    return;
  enum { FLIP, HALF, SHORT, EMPTY, FORMAT, FOREIGN, GARBAGE, HEADER_ONLY, NCASES };
  static const char *const names[] = {"a flipped PTX byte", "truncated to half", "10 bytes", "empty",
                                      "format version 7",   "another compiler",  "garbage",  "header only"};
  for (int kase = 0; kase < NCASES; kase++) {
    unsigned char *bad = malloc(len + 64);
    memcpy(bad, good, len);
    size_t n = len;
    switch (kase) {
    case FLIP: bad[TL_CACHE_HEADER + 100] ^= 4; break;
    case HALF: n = len / 2; break;
    case SHORT: n = 10; break;
    case EMPTY: n = 0; break;
    case FORMAT: bad[8] = 7; break;
    case FOREIGN: {
      tl_cache_entry e = {0};
      char why[256];
      tl_hash128 k;
      char id[TL_CACHE_ID_BYTES];
      tl_jit_compiler_id(id, sizeof id);
      tl_jit_key_for(vector_add.text, vector_add.len, "sm_90a", 3, NULL, 0, NULL, id, &k);
      CHECK(tl_cache_decode(good, len, k, id, &e, why, sizeof why), "decode: %s", why);
      unsigned char *other = NULL;
      size_t other_len = 0;
      /* complete and undamaged, under this key, but from another compiler build */
      tl_cache_encode(k, "tilec 0.0.1+ffffffffffffffff", &e, &other, &other_len);
      tl_cache_entry_free(&e);
      free(bad);
      bad = other;
      n = other_len;
      break;
    }
    case GARBAGE:
      for (size_t i = 0; i < n; i++)
        bad[i] = (unsigned char)(i * 131 + 7);
      break;
    case HEADER_ONLY: n = TL_CACHE_HEADER; break;
    }
    CHECK(write_bytes(path, bad, n), "write %s", path);
    free(bad);
    log_capture log = {0};
    s = compile_once(dir, ref, &log);
    CHECK(s.disk_rejected == 1 && s.compiles == 1 && s.disk_writes == 1,
          "%s: %llu rejected, %llu compiles, %llu writes", names[kase], (unsigned long long)s.disk_rejected,
          (unsigned long long)s.compiles, (unsigned long long)s.disk_writes);
    CHECK(log.count >= 1 && strstr(log.last, "rejected"), "%s: log '%s'", names[kase], log.last);
    s = compile_once(dir, ref, NULL);
    CHECK(s.disk_hits == 1 && s.compiles == 0, "%s: not repaired", names[kase]);
  }
  free(good);
  int temporaries, entries;
  count_dir(dir, &temporaries, &entries);
  CHECK(temporaries == 0 && entries == 1, "%d temporaries, %d entries", temporaries, entries);

  /* a directory where the entry should be: read rejected, write fails, the compile still works */
  char other_dir[512];
  tmp_path("cache-blocked", other_dir, sizeof other_dir);
  snprintf(path, sizeof path, "%s/%s" TL_CACHE_SUFFIX, other_dir, key);
  mkdir(other_dir, 0700);
  mkdir(path, 0700);
  s = compile_once(other_dir, ref, NULL);
  CHECK(s.disk_rejected == 1 && s.compiles == 1 && s.disk_write_failures == 1, "blocked entry");
  /* a folder that cannot exist (under a regular file) */
  char file_dir[512], under_file[600];
  tmp_path("plainfile", file_dir, sizeof file_dir);
  write_bytes(file_dir, "x", 1);
  snprintf(under_file, sizeof under_file, "%s/sub", file_dir);
  s = compile_once(under_file, ref, NULL);
  CHECK(s.compiles == 1 && s.disk_write_failures == 1, "unwritable folder");

  /* the switches */
  c = NULL;
  CHECK_STATUS(tl_jit_cache_create(dir, 0, &c, err, sizeof err), TL_OK, err);
  tilec_define def = {"BLOCK", "1024"};
  tl_jit_options off = options_for("sm_90a", &def, 1);
  off.flags = TL_JIT_NO_CACHE;
  char key_off[33];
  CHECK_STATUS(tl_jit_key(vector_add.text, vector_add.len, &off, key_off, err, sizeof err), TL_OK, err);
  for (int i = 0; i < 2; i++) {
    char *ptx = NULL;
    CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &off, &ptx, err, sizeof err), TL_OK,
                 err);
    free(ptx);
  }
  snprintf(path, sizeof path, "%s/%s" TL_CACHE_SUFFIX, dir, key_off);
  s = stats_of(c);
  CHECK(s.compiles == 2 && s.memory_hits == 0 && s.disk_writes == 0 && !file_exists(path),
        "TL_JIT_NO_CACHE: %llu compiles", (unsigned long long)s.compiles);
  off.flags = TL_JIT_NO_DISK_CACHE;
  for (int i = 0; i < 2; i++) {
    char *ptx = NULL;
    CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &off, &ptx, err, sizeof err), TL_OK,
                 err);
    free(ptx);
  }
  s = stats_of(c);
  CHECK(s.compiles == 3 && s.memory_hits == 1 && s.disk_writes == 0 && !file_exists(path),
        "TL_JIT_NO_DISK_CACHE");
  tl_jit_cache_destroy(c);

  setenv("TILEC_CACHE_DISABLE", "1", 1);
  CHECK_STATUS(tl_jit_cache_create(dir, 0, &c, err, sizeof err), TL_OK, err);
  CHECK(!strcmp(tl_jit_cache_dir(c), ""), "disabled cache has dir '%s'", tl_jit_cache_dir(c));
  for (int i = 0; i < 2; i++) {
    char *ptx = NULL;
    CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err), TL_OK,
                 err);
    free(ptx);
  }
  s = stats_of(c);
  CHECK(s.compiles == 2 && s.disk_hits == 0 && s.memory_hits == 0, "TILEC_CACHE_DISABLE");
  tl_jit_cache_destroy(c);
  setenv("TILEC_CACHE_DISABLE", "0", 1); /* "0" means on */
  CHECK_STATUS(tl_jit_cache_create(dir, TL_JIT_CACHE_NO_DISK, &c, err, sizeof err), TL_OK, err);
  CHECK(!strcmp(tl_jit_cache_dir(c), ""), "TL_JIT_CACHE_NO_DISK");
  tl_jit_cache_destroy(c);
  unsetenv("TILEC_CACHE_DISABLE");

  /* the folder's name */
  const char *saved_home = getenv("HOME");
  char *home = saved_home ? strdup(saved_home) : NULL;
  char want[600];
  setenv("TILEC_CACHE_DIR", "/x/tilec-cache/", 1);
  CHECK_STATUS(tl_jit_cache_create(NULL, 0, &c, err, sizeof err), TL_OK, err);
  CHECK(!strcmp(tl_jit_cache_dir(c), "/x/tilec-cache"), "TILEC_CACHE_DIR: %s", tl_jit_cache_dir(c));
  tl_jit_cache_destroy(c);
  unsetenv("TILEC_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/y/cache", 1);
  CHECK_STATUS(tl_jit_cache_create(NULL, 0, &c, err, sizeof err), TL_OK, err);
  CHECK(!strcmp(tl_jit_cache_dir(c), "/y/cache/tilec"), "XDG: %s", tl_jit_cache_dir(c));
  tl_jit_cache_destroy(c);
  setenv("XDG_CACHE_HOME", "relative/cache", 1); /* invalid: ignored */
  setenv("HOME", "/home/someone", 1);
  CHECK_STATUS(tl_jit_cache_create(NULL, 0, &c, err, sizeof err), TL_OK, err);
  snprintf(want, sizeof want, "/home/someone/.cache/tilec");
  CHECK(!strcmp(tl_jit_cache_dir(c), want), "HOME: %s", tl_jit_cache_dir(c));
  tl_jit_cache_destroy(c);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  CHECK_STATUS(tl_jit_cache_create(NULL, 0, &c, err, sizeof err), TL_OK, err);
  CHECK(!strcmp(tl_jit_cache_dir(c), ""), "no HOME: disk off, got %s", tl_jit_cache_dir(c));
  tl_jit_cache_destroy(c);
  if (home)
    setenv("HOME", home, 1);
  free(home);

  /* misuse */
  CHECK_STATUS(tl_jit_cache_create(dir, 0, NULL, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(tl_jit_cache_create(dir, 0x80, &c, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  CHECK(c == NULL, "out reset");
  tl_jit_cache_destroy(NULL);
  tl_jit_stats zero;
  tl_jit_cache_stats(NULL, &zero);
  CHECK(zero.compiles == 0, "stats of NULL");
  tl_jit_cache_stats(NULL, NULL);
  CHECK(!strcmp(tl_jit_cache_dir(NULL), ""), "dir of NULL");
  tl_jit_cache_set_log(NULL, NULL, NULL);
  free(ref);
}

/* ------------------------------------------------------------------ a folder that is not safe */

/* Bytes this process has read() so far (Linux's /proc/self/io), or -1 where that is not known. */
static long long bytes_read_so_far(void)
{
  FILE *f = fopen("/proc/self/io", "r");
  long long rchar = -1;
  char line[128];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "rchar: %lld", &rchar) == 1)
      break;
  if (f)
    fclose(f);
  return rchar;
}

static void vector_add_key(const char *arch, tl_hash128 *key, char id[TL_CACHE_ID_BYTES])
{
  tl_jit_compiler_id(id, TL_CACHE_ID_BYTES);
  tl_jit_key_for(vector_add.text, vector_add.len, arch, 3, NULL, 0, NULL, id, key);
}

/* A cache on dir (memory off, so that every lookup goes to the folder) with a log. */
static tl_jit_cache *disk_only_cache(const char *dir, log_capture *log)
{
  tl_jit_cache *c = NULL;
  char err[4096];
  CHECK_STATUS(tl_jit_cache_create(dir, TL_JIT_CACHE_NO_MEMORY, &c, err, sizeof err), TL_OK, err);
  if (c && log)
    tl_jit_cache_set_log(c, capture_log, log);
  return c;
}

/* vector_add through c, -D BLOCK=block (NULL: none), for sm_90a; true when it gave PTX. */
static bool compile_block(tl_jit_cache *c, const char *block)
{
  char err[4096];
  tilec_define def = {"BLOCK", block};
  tl_jit_options o = options_for("sm_90a", block ? &def : NULL, block ? 1 : 0);
  char *ptx = NULL;
  tl_status st = tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err);
  CHECK_STATUS(st, TL_OK, err);
  free(ptx);
  return st == TL_OK;
}

static bool private_file(const char *path)
{
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077);
}

/* Entries that are not what they seem: a FIFO, a huge file, a symbolic link, another user's file,
 * a file others may write, in a folder others may write. Each is refused without waiting, reading
 * it whole or following it, and (but for the folder) replaced by a good entry. */
static void test_hostile_entries(void)
{
  char dir[512], path[1024], why[1024];
  const bool root = geteuid() == 0;
  tmp_path("hostile", dir, sizeof dir);
  mkdir(dir, 0700);
  char *ref = reference_ptx(&vector_add, "sm_90a", NULL);
  if (!ref) {
    CHECK(0, "vector_add does not compile");
    return;
  }
  tl_hash128 key;
  char id[TL_CACHE_ID_BYTES], hex[33];
  vector_add_key("sm_90a", &key, id);
  tl_hash_hex(key, hex);
  tl_cache_entry_path(dir, key, path, sizeof path);
  /* a good entry, kept to plant copies of it */
  tl_jit_stats s = compile_once(dir, ref, NULL);
  size_t good_len = 0;
  unsigned char *good = (unsigned char *)test_read_file(path, &good_len);
  CHECK(good && s.disk_writes == 1, "no good entry at %s", path);
  if (!good) {
    free(ref);
    return;
  }

  /* A FIFO: opened for reading, it would wait for a writer forever. A child process tries, with
   * an alarm: killed by it means the reader hung. */
  unlink(path);
  CHECK(mkfifo(path, 0600) == 0, "mkfifo %s: %s", path, strerror(errno));
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    tl_cache_entry e;
    const tl_cache_read_result r = tl_cache_read(dir, key, id, &e, why, sizeof why);
    _exit(r == TL_CACHE_REJECTED && strstr(why, "not a regular file") ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const bool fifo_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  CHECK(fifo_ok, "a FIFO as the entry: %s",
        WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "the reader hung (killed after 10 s)"
                                                           : "not rejected as not a regular file");
  if (fifo_ok) { /* through the API: rejected, rebuilt, and the FIFO replaced by a file */
    log_capture log = {0};
    s = compile_once(dir, ref, &log);
    CHECK(s.disk_rejected == 1 && s.compiles == 1 && s.disk_writes == 1 && private_file(path),
          "FIFO: %llu rejected, %llu compiles", (unsigned long long)s.disk_rejected,
          (unsigned long long)s.compiles);
    CHECK_CONTAINS(log.last, "not a regular file");
  }

  /* A 1 GiB file of junk (sparse), and one with a good header whose file is 1 GiB long: each is
   * refused from its 136-byte header, not read whole first. */
  for (int kase = 0; kase < 2; kase++) {
    unlink(path); /* the FIFO, if it is still there */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool made = fd >= 0 && ftruncate(fd, (off_t)1 << 30) == 0 &&
                pwrite(fd, kase ? (const void *)good : "JUNKJUNKJUNK", kase ? TL_CACHE_HEADER : 12, 0) ==
                    (kase ? TL_CACHE_HEADER : 12);
    if (fd >= 0)
      close(fd);
    CHECK(made, "cannot make a 1 GiB file at %s", path);
    const long long before = bytes_read_so_far();
    tl_cache_entry e;
    const tl_cache_read_result r = tl_cache_read(dir, key, id, &e, why, sizeof why);
    const long long read = bytes_read_so_far() - before;
    CHECK(r == TL_CACHE_REJECTED, "1 GiB %s accepted", kase ? "entry" : "junk");
    CHECK_CONTAINS(why, kase ? "extended" : "bad magic");
    CHECK(before < 0 || read < (1 << 20), "1 GiB %s: %lld bytes read to reject it", kase ? "entry" : "junk",
          read);
    if (r == TL_CACHE_HIT)
      tl_cache_entry_free(&e);
  }
  /* a header that announces more than an entry may hold, in a file of that size */
  {
    unsigned char *big = malloc(good_len);
    memcpy(big, good, good_len);
    big[32 + 5] = 0x40; /* PTX bytes += 2^46 */
    write_bytes(path, big, good_len);
    free(big);
    tl_cache_entry e;
    CHECK(tl_cache_read(dir, key, id, &e, why, sizeof why) == TL_CACHE_REJECTED, "huge header");
  }

  /* A symbolic link to a good entry elsewhere: not followed; replaced by a file, and what it
   * pointed to is left as it was. */
  char target[1024];
  tmp_path("hostile-target", target, sizeof target);
  write_bytes(target, good, good_len);
  unlink(path);
  CHECK(symlink(target, path) == 0, "symlink: %s", strerror(errno));
  log_capture log = {0};
  s = compile_once(dir, ref, &log);
  CHECK(s.disk_hits == 0 && s.disk_rejected == 1 && s.compiles == 1 && s.disk_writes == 1,
        "symlink: %llu hits, %llu rejected", (unsigned long long)s.disk_hits,
        (unsigned long long)s.disk_rejected);
  CHECK_CONTAINS(log.last, "symbolic link");
  size_t target_len = 0;
  char *target_data = test_read_file(target, &target_len);
  CHECK(private_file(path) && target_data && target_len == good_len && !memcmp(target_data, good, good_len),
        "symlink replaced, target untouched");
  free(target_data);

  /* A good entry that others may write (as planted there, or made so): refused, rebuilt, and
   * replaced by a file of this user's, mode 0600. As root, also one owned by another uid. */
  for (int kase = 0; kase < 2; kase++) {
    if (kase == 1 && !root) {
      printf("note: not root: the test of an entry owned by another uid is skipped\n");
      break;
    }
    write_bytes(path, good, good_len);
    if (kase == 0)
      chmod(path, 0666);
    else
      CHECK(chown(path, 4242, 4242) == 0, "chown: %s", strerror(errno));
    log = (log_capture){0};
    s = compile_once(dir, ref, &log);
    CHECK(s.disk_hits == 0 && s.disk_untrusted == 1 && s.compiles == 1 && s.disk_writes == 1,
          "%s entry: %llu hits, %llu untrusted, %llu compiles", kase ? "another uid's" : "a mode 0666",
          (unsigned long long)s.disk_hits, (unsigned long long)s.disk_untrusted,
          (unsigned long long)s.compiles);
    CHECK_CONTAINS(log.last, kase ? "owned by uid 4242" : "writable by group and others");
    CHECK(private_file(path), "the refused entry was not replaced by a private one");
    s = compile_once(dir, ref, NULL);
    CHECK(s.disk_hits == 1 && s.compiles == 0, "replacement not read back");
  }

  /* Folders others may write (a /tmp-like 1777 one), or, as root, owned by another uid: a good
   * entry in one is not served, nothing is written there, and the refusal is said once. Reached
   * through a symbolic link, the folder it leads to is what counts. */
  char shared[512], link_dir[512];
  tmp_path("hostile-shared", shared, sizeof shared);
  tmp_path("hostile-link", link_dir, sizeof link_dir);
  for (int kase = 0; kase < 3; kase++) {
    if (kase == 1 && !root) {
      printf("note: not root: the test of a folder owned by another uid is skipped\n");
      continue;
    }
    remove_tree(shared);
    mkdir(shared, 0700);
    if (kase == 1)
      CHECK(chown(shared, 4242, 4242) == 0, "chown: %s", strerror(errno));
    else
      chmod(shared, kase == 0 ? 01777 : 0777);
    const char *use = shared;
    if (kase == 2) {
      unlink(link_dir);
      CHECK(symlink(shared, link_dir) == 0, "symlink: %s", strerror(errno));
      use = link_dir;
    }
    char planted[1024];
    tl_cache_entry_path(shared, key, planted, sizeof planted);
    write_bytes(planted, good, good_len);
    log = (log_capture){0};
    tl_jit_cache *c = disk_only_cache(use, &log);
    compile_block(c, NULL);
    compile_block(c, "1024"); /* another key: the folder is still skipped, and not said again */
    compile_block(c, NULL);
    s = stats_of(c);
    tl_jit_cache_destroy(c);
    int temporaries, entries;
    count_dir(shared, &temporaries, &entries);
    CHECK(s.disk_hits == 0 && s.compiles == 3 && s.disk_writes == 0 && s.disk_untrusted == 1 &&
              log.count == 1 && entries == 1 && temporaries == 0,
          "folder %d: %llu hits, %llu compiles, %llu writes, %llu untrusted, %d messages, %d "
          "entries",
          kase, (unsigned long long)s.disk_hits, (unsigned long long)s.compiles,
          (unsigned long long)s.disk_writes, (unsigned long long)s.disk_untrusted, log.count, entries);
    CHECK_CONTAINS(log.last, kase == 1 ? "owned by uid 4242" : "writable by group and others");
  }
  /* a symbolic link to a private folder is fine */
  remove_tree(shared);
  mkdir(shared, 0700);
  unlink(link_dir);
  CHECK(symlink(shared, link_dir) == 0, "symlink: %s", strerror(errno));
  s = compile_once(link_dir, ref, NULL);
  CHECK(s.compiles == 1 && s.disk_writes == 1 && s.disk_untrusted == 0, "linked private folder");
  s = compile_once(link_dir, ref, NULL);
  CHECK(s.disk_hits == 1 && s.compiles == 0, "linked private folder, warm");
  free(good);
  free(ref);
}

/* Set a file's modification time to `ago` seconds before now. */
static void age_file(const char *path, int ago)
{
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= ago;
  t[1] = t[0];
  CHECK(utimensat(AT_FDCWD, path, t, 0) == 0, "utimensat %s: %s", path, strerror(errno));
}

static long long file_size(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void block_entry_path(const char *dir, const char *block, char *buf, size_t size)
{
  char hex[33], err[256];
  tilec_define def = {"BLOCK", block};
  tl_jit_options o = options_for("sm_90a", block ? &def : NULL, block ? 1 : 0);
  tl_jit_key(vector_add.text, vector_add.len, &o, hex, err, sizeof err);
  snprintf(buf, size, "%s/%s" TL_CACHE_SUFFIX, dir, hex);
}

/* What the folder keeps: temporaries of crashed writers go, the least recently used entries go
 * beyond the byte limit, and a folder name that does not fit is refused whole. */
static void test_disk_housekeeping(void)
{
  char dir[512], err[4096];
  tmp_path("housekeeping", dir, sizeof dir);
  mkdir(dir, 0700);

  /* temporaries: the cache's pattern and old go; young ones (a writer at work) and other names
   * stay */
  char stale[1024], young[1024], other[1024], notes[1024];
  snprintf(stale, sizeof stale, "%s/.0123456789abcdef0123456789abcdef.Ab12Cd", dir);
  snprintf(young, sizeof young, "%s/.0123456789abcdef0123456789abcdef.Zz9Yy8", dir);
  snprintf(other, sizeof other, "%s/.0123456789abcdef0123456789abcdef.Ab12C", dir);
  snprintf(notes, sizeof notes, "%s/notes.txt", dir);
  const char *files[] = {stale, young, other, notes};
  for (int i = 0; i < 4; i++) {
    write_bytes(files[i], "partial", 7);
    if (files[i] != young)
      age_file(files[i], 3600);
  }
  tl_jit_cache *c = disk_only_cache(dir, NULL);
  compile_block(c, "512");
  tl_jit_stats s = stats_of(c);
  tl_jit_cache_destroy(c);
  CHECK(!file_exists(stale) && file_exists(young) && file_exists(other) && file_exists(notes),
        "temporaries: stale %d, young %d, other %d, notes %d", file_exists(stale), file_exists(young),
        file_exists(other), file_exists(notes));
  CHECK(s.disk_temporaries_removed == 1 && s.disk_writes == 1, "%llu temporaries removed",
        (unsigned long long)s.disk_temporaries_removed);
  unlink(young);
  unlink(other);
  unlink(notes);

  /* the limit: A, B, C written long ago in that order, A read since; then a limit that holds A,
   * C and D (whose size a write elsewhere tells): B, the least recently used, goes (when the
   * limit is set, or when D is written) */
  char a[1024], b[1024], cc[1024], d[1024], elsewhere[512];
  tmp_path("housekeeping-d", elsewhere, sizeof elsewhere);
  block_entry_path(elsewhere, "4096", d, sizeof d);
  c = disk_only_cache(elsewhere, NULL);
  compile_block(c, "4096");
  tl_jit_cache_destroy(c);
  const long long sd = file_size(d);
  block_entry_path(dir, "512", a, sizeof a);
  block_entry_path(dir, "1024", b, sizeof b);
  block_entry_path(dir, "2048", cc, sizeof cc);
  block_entry_path(dir, "4096", d, sizeof d);
  c = disk_only_cache(dir, NULL);
  compile_block(c, "1024");
  compile_block(c, "2048");
  tl_jit_cache_destroy(c);
  age_file(a, 300);
  age_file(b, 200);
  age_file(cc, 100);
  c = disk_only_cache(dir, NULL);
  compile_block(c, "512"); /* a disk hit: A is now the most recently used */
  const long long sa = file_size(a), sc = file_size(cc);
  CHECK(sa > 0 && file_exists(b) && sc > 0 && sd > 0, "entries A B C D");
  tl_jit_cache_set_disk_limit(c, (uint64_t)(sa + sc + sd));
  compile_block(c, "4096");
  s = stats_of(c);
  CHECK(file_exists(a) && !file_exists(b) && file_exists(cc) && file_exists(d) && s.disk_evictions == 1,
        "LRU: A %d B %d C %d D %d, %llu evictions", file_exists(a), file_exists(b), file_exists(cc),
        file_exists(d), (unsigned long long)s.disk_evictions);
  /* 0: everything goes at once, and nothing more is written */
  tl_jit_cache_set_disk_limit(c, 0);
  compile_block(c, "1024");
  s = stats_of(c);
  int temporaries, entries;
  count_dir(dir, &temporaries, &entries);
  CHECK(entries == 0 && temporaries == 0 && s.disk_evictions == 4 && s.disk_writes == 1,
        "limit 0: %d entries, %llu evictions, %llu writes", entries, (unsigned long long)s.disk_evictions,
        (unsigned long long)s.disk_writes);
  tl_jit_cache_set_disk_limit(c, TL_JIT_DISK_LIMIT);
  tl_jit_cache_destroy(c);
  tl_jit_cache_set_disk_limit(NULL, 0);

  /* folder names: one too long is refused, not cut to a prefix (another folder) */
  static char name[8192];
  memset(name, 'd', 5000);
  name[0] = '/';
  name[5000] = 0;
  c = (tl_jit_cache *)1;
  CHECK_STATUS(tl_jit_cache_create(name, 0, &c, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  CHECK_CONTAINS(err, "too long (5000 bytes, at most 4054)");
  CHECK(c == NULL, "out reset");
  /* the longest name that fits, built from real folders: an entry is written and read there */
  size_t n = (size_t)snprintf(name, sizeof name, "%s/long", tmp_root);
  while (n < TL_JIT_CACHE_DIR_MAX) {
    size_t part = TL_JIT_CACHE_DIR_MAX - n - 1 < 200 ? TL_JIT_CACHE_DIR_MAX - n - 1 : 200;
    name[n++] = '/';
    memset(name + n, 'x', part);
    n += part;
    name[n] = 0;
  }
  CHECK(strlen(name) == TL_JIT_CACHE_DIR_MAX, "built %zu", strlen(name));
  strcat(name, "///"); /* trailing slashes do not count */
  c = NULL;
  CHECK_STATUS(tl_jit_cache_create(name, 0, &c, err, sizeof err), TL_OK, err);
  name[TL_JIT_CACHE_DIR_MAX] = 0;
  CHECK(c && !strcmp(tl_jit_cache_dir(c), name), "the longest name changed");
  if (c) {
    compile_block(c, NULL);
    s = stats_of(c);
    tl_jit_cache_destroy(c);
    c = disk_only_cache(name, NULL);
    compile_block(c, NULL);
    tl_jit_stats s2 = stats_of(c);
    CHECK(s.disk_writes == 1 && s2.disk_hits == 1, "longest name: %llu writes, %llu hits",
          (unsigned long long)s.disk_writes, (unsigned long long)s2.disk_hits);
    tl_jit_cache_destroy(c);
  }
  strcat(name, "y");
  CHECK_STATUS(tl_jit_cache_create(name, 0, &c, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  /* from the environment: the disk cache is off (an unusable default is not an error) */
  memset(name, 'e', 5000);
  name[0] = '/';
  name[5000] = 0;
  setenv("TILEC_CACHE_DIR", name, 1);
  CHECK_STATUS(tl_jit_cache_create(NULL, 0, &c, err, sizeof err), TL_OK, err);
  CHECK(c && !strcmp(tl_jit_cache_dir(c), ""), "a long TILEC_CACHE_DIR gives '%.40s...'",
        c ? tl_jit_cache_dir(c) : "");
  tl_jit_cache_destroy(c);
  unsetenv("TILEC_CACHE_DIR");
  snprintf(name, sizeof name, "%s/long", tmp_root);
  remove_tree(name);
}

/* ---------------------------------------------------------------------------- compile errors */

typedef struct diagnostics_seen {
  int count, first_line, first_column;
  char first_file[256];
} diagnostics_seen;

static void record_diagnostic(void *user, const tilec_diagnostic *d)
{
  diagnostics_seen *seen = user;
  if (seen->count++ == 0) {
    seen->first_line = d->line;
    seen->first_column = d->column;
    snprintf(seen->first_file, sizeof seen->first_file, "%s", d->file ? d->file : "");
  }
}

static const char bad_source[] = "kernel broken(A: f32[N]) grid(1) threads(32) {\n"
                                 "    A[0] = undefined_thing;\n"
                                 "}\n";

static void test_compile_errors(void)
{
  char dir[512], err[4096];
  tmp_path("cache-errors", dir, sizeof dir);
  tl_jit_cache *c = NULL;
  CHECK_STATUS(tl_jit_cache_create(dir, 0, &c, err, sizeof err), TL_OK, err);
  diagnostics_seen seen = {0};
  tl_jit_options o = options_for("sm_80", NULL, 0);
  o.filename = "broken.tl";
  o.on_diagnostic = record_diagnostic;
  o.user = &seen;
  char *ptx = (char *)1;
  tl_status st = tl_jit_compile_ptx(c, bad_source, strlen(bad_source), &o, &ptx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_COMPILE, err);
  CHECK(ptx == NULL, "ptx reset");
  CHECK_CONTAINS(err, "broken.tl:2:");
  CHECK_CONTAINS(err, "error:");
  CHECK(seen.count >= 1 && seen.first_line == 2 && seen.first_column > 0 &&
            !strcmp(seen.first_file, "broken.tl"),
        "diagnostic records: %d, first at %s:%d:%d", seen.count, seen.first_file, seen.first_line,
        seen.first_column);
  /* errors are not cached: the second call compiles (and fails) again */
  st = tl_jit_compile_ptx(c, bad_source, strlen(bad_source), &o, &ptx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_COMPILE, err);
  tl_jit_stats s = stats_of(c);
  CHECK(s.compiles == 2 && s.disk_writes == 0 && s.memory_hits == 0, "errors cached?");
  int temporaries, entries;
  count_dir(dir, &temporaries, &entries);
  CHECK(entries == 0 && temporaries == 0, "%d entries after errors", entries);

  /* misuse */
  CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, NULL, err, sizeof err),
               TL_ERR_BAD_ARGUMENT, err);
  CHECK_STATUS(tl_jit_compile_ptx(c, NULL, 5, &o, &ptx, err, sizeof err), TL_ERR_BAD_ARGUMENT, err);
  o = options_for("device", NULL, 0);
  CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err),
               TL_ERR_BAD_ARGUMENT, err);
  CHECK_CONTAINS(err, "needs a context");
  o = options_for("sm_90a", NULL, 0);
  o.opt_level = -1;
  CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err),
               TL_ERR_BAD_ARGUMENT, err);
  tilec_define bad_value = {"BLOCK", "banana"};
  o = options_for("sm_90a", &bad_value, 1);
  CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err),
               TL_ERR_COMPILE, err);
  CHECK_CONTAINS(err, "banana");
  o = options_for("sm_90a", NULL, 0);
  o.kernel = "no_such_kernel";
  CHECK_STATUS(tl_jit_compile_ptx(c, vector_add.text, vector_add.len, &o, &ptx, err, sizeof err),
               TL_ERR_COMPILE, err);
  CHECK_CONTAINS(err, "no_such_kernel");
  /* NULL options: sm_90a, -O3; NULL cache: no caching at all */
  CHECK_STATUS(tl_jit_compile_ptx(NULL, vector_add.text, vector_add.len, NULL, &ptx, err, sizeof err), TL_OK,
               err);
  CHECK(ptx && strstr(ptx, ".target sm_90a"), "defaults");
  free(ptx);
  tl_jit_cache_destroy(c);
}

/* -------------------------------------------------------------------------- tilec.h additions */

static void test_compiler_api(void)
{
  tilec_options o = {0};
  o.opt_level = 3;
  tilec_result *r = NULL;
  tilec_status st = tilec_compile(saxpy.text, saxpy.len, &o, &r);
  CHECK(st == TILEC_OK, "saxpy: %s", tilec_result_diagnostics_text(r));
  CHECK(tilec_result_num_kernels(r) == 1, "%d kernels", tilec_result_num_kernels(r));
  const tilec_kernel *k = tilec_result_kernel(r, 0);
  if (k) {
    CHECK(!strcmp(k->name, "saxpy") && k->threads == 256 && k->smem == 0 && k->nargs == 4 && k->nparams == 5,
          "saxpy: %s threads=%u nargs=%d nparams=%d", k->name, k->threads, k->nargs, k->nparams);
    CHECK(k->params[0].kind == TILEC_PARAM_TENSOR && !strcmp(k->params[0].name, "X") &&
              !strcmp(k->params[0].dtype, "f32") && k->params[0].rank == 1 &&
              !strcmp(k->params[0].dims[0], "N"),
          "param X");
    CHECK(k->params[3].kind == TILEC_PARAM_SCALAR && !strcmp(k->params[3].name, "a") &&
              k->params[3].rank == 0 && k->params[3].dims == NULL,
          "param a");
    CHECK(k->params[4].kind == TILEC_PARAM_SIZE && !strcmp(k->params[4].dtype, "i32"), "size N");
    CHECK(!strcmp(k->grid[0], "N 4096 ceildiv") && !strcmp(k->grid[1], "1"), "grid %s", k->grid[0]);
  }
  CHECK(tilec_result_kernel(r, 1) == NULL && tilec_result_kernel(r, -1) == NULL, "range");
  tilec_result_free(r);
  CHECK(tilec_result_num_kernels(NULL) == 0 && tilec_result_kernel(NULL, 0) == NULL, "NULL");

  /* two kernels in a file; none for other emit kinds */
  st = tilec_compile(gelu.text, gelu.len, &o, &r);
  CHECK(st == TILEC_OK && tilec_result_num_kernels(r) == 2 &&
            !strcmp(tilec_result_kernel(r, 1)->name, "gelu_bf16"),
        "gelu kernels");
  tilec_result_free(r);
  o.emit = TILEC_EMIT_LLVM;
  st = tilec_compile(gelu.text, gelu.len, &o, &r);
  CHECK(st == TILEC_OK && tilec_result_num_kernels(r) == 0, "no kernels for LLVM output");
  tilec_result_free(r);
  o.emit = TILEC_EMIT_HEADER;
  st = tilec_compile(gelu.text, gelu.len, &o, &r);
  CHECK(st == TILEC_OK && tilec_result_num_kernels(r) == 2, "header");
  if (st == TILEC_OK) {
    const char *h = tilec_result_output(r);
    CHECK_CONTAINS(
        h, "static inline CUresult gelu_f16_launch(CUstream stream, uint16_t *X, uint16_t *Y, int32_t N)");
    CHECK_CONTAINS(h, "#pragma GCC diagnostic ignored \"-Woverlength-strings\"");
    CHECK_CONTAINS(h, "static const char kernels_ptx[]"); /* no filename: the stem is "kernels" */
  }
  tilec_result_free(r);
  /* an emit kind out of range is an argument error, not a crash */
  o.emit = (tilec_emit)42;
  st = tilec_compile(gelu.text, gelu.len, &o, &r);
  CHECK(st == TILEC_ERR_INVALID_ARGUMENT, "emit 42: %d", (int)st);
  CHECK(r && strstr(tilec_result_diagnostics_text(r), "unknown emit kind 42"), "message");
  tilec_result_free(r);
  o.emit = (tilec_emit)-1;
  st = tilec_compile(gelu.text, gelu.len, &o, &r);
  CHECK(st == TILEC_ERR_INVALID_ARGUMENT, "emit -1");
  tilec_result_free(r);

  /* a source buffer with no terminator, exactly its length (ASan sees any read past it), followed
   * in memory by text that must not be lexed */
  char *exact = malloc(vector_add.len + 64);
  memcpy(exact, vector_add.text, vector_add.len);
  memcpy(exact + vector_add.len, "garbage that is not .tl @#$", 28);
  o = (tilec_options){0};
  o.opt_level = 3;
  st = tilec_compile(exact, vector_add.len, &o, &r);
  CHECK(st == TILEC_OK, "unterminated source: %s", tilec_result_diagnostics_text(r));
  tilec_result_free(r);
  char *tight = malloc(vector_add.len);
  memcpy(tight, vector_add.text, vector_add.len);
  st = tilec_compile(tight, vector_add.len, &o, &r);
  CHECK(st == TILEC_OK, "exact-size source: %s", tilec_result_diagnostics_text(r));
  tilec_result_free(r);
  free(exact);
  free(tight);

  /* files */
  char path[1024];
  snprintf(path, sizeof path, "%s/vector_add.tl", TILEC_EXAMPLES_DIR);
  o = (tilec_options){0};
  o.opt_level = 3;
  st = tilec_compile_file(path, &o, &r);
  CHECK(st == TILEC_OK && tilec_result_num_kernels(r) == 1, "compile_file: %d: %s", (int)st,
        tilec_result_diagnostics_text(r));
  tilec_result_free(r);
  st = tilec_compile_file(path, NULL, &r);
  CHECK(st == TILEC_OK, "compile_file, NULL options: %d: %s", (int)st, tilec_result_diagnostics_text(r));
  tilec_result_free(r);
  st = tilec_compile_file("/nonexistent/k.tl", NULL, &r);
  CHECK(st == TILEC_ERR_IO && r && tilec_result_num_diagnostics(r) == 1, "missing file: %d", (int)st);
  if (r) {
    tilec_diagnostic d = tilec_result_diagnostic(r, 0);
    CHECK(d.message && strstr(d.message, "cannot read '/nonexistent/k.tl'") && d.file &&
              !strcmp(d.file, "/nonexistent/k.tl"),
          "diagnostic %s", d.message ? d.message : "(null)");
    CHECK_CONTAINS(tilec_result_diagnostics_text(r), "No such file");
    CHECK(tilec_result_output(r) == NULL, "no output");
  }
  tilec_result_free(r);
  CHECK(tilec_compile_file(path, NULL, NULL) == TILEC_ERR_INVALID_ARGUMENT, "out NULL");
  st = tilec_compile_file(NULL, NULL, &r);
  CHECK(st == TILEC_ERR_INVALID_ARGUMENT, "path NULL");
  tilec_result_free(r);
}

/* ----------------------------------------------------------------- threads and processes */

typedef struct job {
  const source *src;
  const char *block; /* -D BLOCK=..., or NULL */
  char *reference;
} job;

static job jobs[] = {
    {&vector_add, NULL, NULL}, {&vector_add, "1024", NULL}, {&vector_add, "2048", NULL},
    {&saxpy, NULL, NULL},      {&saxpy, "8192", NULL},      {&gelu, NULL, NULL},
};
enum { NJOBS = sizeof jobs / sizeof *jobs, NTHREADS = 8 };

static bool make_references(void)
{
  for (int j = 0; j < NJOBS; j++)
    if (!jobs[j].reference && !(jobs[j].reference = reference_ptx(jobs[j].src, "sm_90a", jobs[j].block)))
      return false;
  return true;
}

static void free_references(void)
{
  for (int j = 0; j < NJOBS; j++) {
    free(jobs[j].reference);
    jobs[j].reference = NULL;
  }
}

typedef struct worker_arg {
  int index, rounds;
  tl_jit_cache *cache; /* shared, or NULL for one per worker */
  const char *dir;     /* for a worker's own cache */
  bool no_cache;
  int wrong, errors;
} worker_arg;

static void *compile_worker(void *p)
{
  worker_arg *w = p;
  tl_jit_cache *own = NULL;
  char err[4096];
  if (!w->cache && w->dir && tl_jit_cache_create(w->dir, 0, &own, err, sizeof err) != TL_OK)
    w->errors++;
  tl_jit_cache *c = w->cache ? w->cache : own;
  for (int i = 0; i < w->rounds * NJOBS; i++) {
    /* workers start at different jobs: the same and different kernels at the same time */
    const job *jb = &jobs[(i + w->index) % NJOBS];
    tilec_define def = {"BLOCK", jb->block};
    tl_jit_options o = options_for("sm_90a", jb->block ? &def : NULL, jb->block ? 1 : 0);
    if (w->no_cache)
      o.flags = TL_JIT_NO_CACHE;
    char *ptx = NULL;
    if (tl_jit_compile_ptx(c, jb->src->text, jb->src->len, &o, &ptx, err, sizeof err) != TL_OK) {
      w->errors++;
      printf("worker %d: %s\n", w->index, err);
    } else if (strcmp(ptx, jb->reference) != 0) {
      w->wrong++;
    }
    free(ptx);
  }
  tl_jit_cache_destroy(own);
  return NULL;
}

static void run_workers(tl_jit_cache *shared, const char *dir, bool no_cache, int rounds, const char *what)
{
  pthread_t threads[NTHREADS];
  worker_arg args[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    args[t] = (worker_arg){t, rounds, shared, dir, no_cache, 0, 0};
    pthread_create(&threads[t], NULL, compile_worker, &args[t]);
  }
  int wrong = 0, errors = 0;
  for (int t = 0; t < NTHREADS; t++) {
    pthread_join(threads[t], NULL);
    wrong += args[t].wrong;
    errors += args[t].errors;
  }
  CHECK(wrong == 0 && errors == 0, "%s: %d wrong PTX, %d errors", what, wrong, errors);
}

static void check_dir_entries(const char *dir, int expected, const char *what)
{
  int temporaries, entries;
  count_dir(dir, &temporaries, &entries);
  CHECK(temporaries == 0 && entries == expected, "%s: %d temporaries, %d entries (expected %d)", what,
        temporaries, entries, expected);
  /* every entry is complete and valid */
  DIR *d = opendir(dir);
  struct dirent *e;
  int invalid = 0;
  char id[TL_CACHE_ID_BYTES];
  tl_jit_compiler_id(id, sizeof id);
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t len = 0;
    unsigned char *data = (unsigned char *)test_read_file(path, &len);
    /* the key is the file name: decode with it */
    tl_hash128 key = {0, 0};
    for (int i = 0; i < 32; i++) {
      char c = e->d_name[i];
      uint64_t v = (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
      if (i < 16)
        key.hi = key.hi << 4 | v;
      else
        key.lo = key.lo << 4 | v;
    }
    tl_cache_entry entry;
    char why[256];
    invalid += !data || !tl_cache_decode(data, len, key, id, &entry, why, sizeof why);
    if (data)
      tl_cache_entry_free(&entry);
    free(data);
  }
  if (d)
    closedir(d);
  CHECK(invalid == 0, "%s: %d invalid entries", what, invalid);
}

static void test_threads(void)
{
  if (!make_references()) {
    CHECK(0, "references do not compile");
    return;
  }
  char dir[512], err[512];
  /* one cache shared by eight threads */
  tmp_path("threads-shared", dir, sizeof dir);
  tl_jit_cache *shared = NULL;
  CHECK_STATUS(tl_jit_cache_create(dir, 0, &shared, err, sizeof err), TL_OK, err);
  run_workers(shared, NULL, false, 2, "8 threads, one cache");
  tl_jit_stats s = stats_of(shared);
  /* every key compiled at least once; a thread that misses memory may find another thread's
   * entry on disk already */
  CHECK(s.compiles >= NJOBS && s.compiles + s.memory_hits + s.disk_hits == (uint64_t)NTHREADS * 2 * NJOBS,
        "%llu compiles + %llu memory hits + %llu disk hits", (unsigned long long)s.compiles,
        (unsigned long long)s.memory_hits, (unsigned long long)s.disk_hits);
  tl_jit_cache_destroy(shared);
  check_dir_entries(dir, NJOBS, "shared cache");
  /* eight caches on one folder: concurrent readers and writers of the same entries */
  tmp_path("threads-own", dir, sizeof dir);
  run_workers(NULL, dir, false, 1, "8 threads, 8 caches, one folder");
  check_dir_entries(dir, NJOBS, "8 caches");
  /* no cache at all: the compiler alone, re-entrant */
  run_workers(NULL, NULL, true, 1, "8 threads, no cache");
}

/* The child process: four threads through one cache on DIR; exit 0 if all PTX is right. */
static int child_main(const char *dir)
{
  char go;
  while (read(0, &go, 1) > 0) /* wait until the parent lets both children go */
    ;
  if (!load_sources() || !make_references())
    return 3;
  tl_jit_cache *c = NULL;
  char err[512];
  if (tl_jit_cache_create(dir, 0, &c, err, sizeof err) != TL_OK)
    return 4;
  pthread_t threads[4];
  worker_arg args[4];
  for (int t = 0; t < 4; t++) {
    args[t] = (worker_arg){t * 2 + (int)(getpid() % 2), 1, c, NULL, false, 0, 0};
    pthread_create(&threads[t], NULL, compile_worker, &args[t]);
  }
  int bad = 0;
  for (int t = 0; t < 4; t++) {
    pthread_join(threads[t], NULL);
    bad += args[t].wrong + args[t].errors;
  }
  tl_jit_cache_destroy(c);
  free_references();
  free(vector_add.text);
  free(saxpy.text);
  free(gelu.text);
  return bad ? 1 : 0;
}

static void test_processes(const char *self)
{
  char dir[512];
  tmp_path("processes", dir, sizeof dir);
  int gate[2];
  if (pipe(gate) != 0) {
    CHECK(0, "pipe: %s", strerror(errno));
    return;
  }
  pid_t pids[2];
  int spawned = 0;
  for (int i = 0; i < 2; i++) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, gate[0], 0);
    posix_spawn_file_actions_addclose(&fa, gate[1]);
    char *argv[] = {(char *)self, "--child", dir, NULL};
    if (posix_spawn(&pids[i], self, &fa, NULL, argv, environ) == 0)
      spawned++;
    posix_spawn_file_actions_destroy(&fa);
  }
  close(gate[0]);
  close(gate[1]); /* both children start now */
  CHECK(spawned == 2, "spawned %d children of %s", spawned, self);
  for (int i = 0; i < spawned; i++) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", i, status);
  }
  check_dir_entries(dir, NJOBS, "two processes");
}

/* --------------------------------------------------------------------- the stand-in driver */

static fake_cuda_state *fake;

static tl_context *open_fake(const char *what)
{
  char err[1024] = "";
  tl_context *ctx = NULL;
  tl_status st = tl_context_create(0, &ctx, err, sizeof err);
  CHECK(st == TL_OK, "%s: tl_context_create: %s: %s", what, tl_status_name(st), err);
  return ctx;
}

static tl_jit_stats ctx_stats(tl_context *ctx)
{
  tl_jit_stats s;
  tl_jit_cache_stats(tl_context_jit_cache(ctx), &s);
  return s;
}

static void test_launches(tl_context *ctx, tl_kernel *k)
{
  const int64_t n = 10000;
  tl_devptr a = 0, b = 0, c = 0;
  CHECK(tl_malloc(ctx, (size_t)n * 4, &a) == TL_OK && tl_malloc(ctx, (size_t)n * 4, &b) == TL_OK &&
            tl_malloc(ctx, (size_t)n * 4, &c) == TL_OK,
        "malloc");
  const int64_t shape[1] = {n};
  tl_arg args[3] = {tl_arg_tensor(a, TL_F32, 1, shape), tl_arg_tensor(b, TL_F32, 1, shape),
                    tl_arg_tensor(c, TL_F32, 1, shape)};
  int launches = fake->launches;
  tl_status st = tl_launch(k, args, 3, NULL);
  CHECK_STATUS(st, TL_OK, tl_context_message(ctx));
  const fake_cuda_launch *l = &fake->last;
  CHECK(fake->launches == launches + 1, "launched");
  CHECK(!strcmp(l->function, "vector_add") && l->grid[0] == 3 && l->grid[1] == 1 && l->grid[2] == 1 &&
            l->block[0] == 256 && l->smem == 0 && l->stream == NULL,
        "launch %s grid %u block %u", l->function, l->grid[0], l->block[0]);
  CHECK(l->nparams == 4 && l->param_size[0] == 8 && l->param_size[3] == 4, "params %d", l->nparams);
  uint64_t p0;
  int32_t p3;
  memcpy(&p0, l->param[0], 8);
  memcpy(&p3, l->param[3], 4);
  CHECK(p0 == a && p3 == n, "param values 0x%llx %d", (unsigned long long)p0, p3);

  /* the context's stream, and an explicit one */
  tl_context_set_stream(ctx, (void *)0x5000);
  CHECK(tl_context_stream(ctx) == (void *)0x5000, "stream");
  tl_launch(k, args, 3, NULL);
  CHECK(fake->last.stream == (void *)0x5000, "context stream %p", fake->last.stream);
  tl_launch(k, args, 3, TL_STREAM_LEGACY);
  CHECK(fake->last.stream == TL_STREAM_LEGACY, "explicit stream %p", fake->last.stream);
  tl_context_set_stream(ctx, NULL);
  CHECK(tl_context_set_stream(NULL, NULL) == TL_ERR_BAD_ARGUMENT && tl_context_stream(NULL) == NULL,
        "stream NULL");

  /* misuse: refused with a message naming the argument, nothing launched */
  launches = fake->launches;
  const int64_t shape2[2] = {100, 100}, other[1] = {n - 1};
  tl_arg bad[3];
  memcpy(bad, args, sizeof bad);
  bad[0] = tl_arg_tensor(a, TL_F32, 2, shape2);
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "argument 0 ('A'): expected a tensor of rank 1, got rank 2");
  memcpy(bad, args, sizeof bad);
  bad[1] = tl_arg_tensor(b, TL_F16, 1, shape);
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "argument 1 ('B'): expected a tensor of f32, got f16");
  memcpy(bad, args, sizeof bad);
  bad[2] = tl_arg_tensor(c, TL_F32, 1, other);
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx),
                 "size N is 10000 from argument 0 ('A') but 9999 from argument 2 ('C')");
  CHECK_STATUS(tl_launch(k, args, 2, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "takes 3 arguments (A, B, C), got 2");
  CHECK_STATUS(tl_launch(k, NULL, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  memcpy(bad, args, sizeof bad);
  bad[0] = tl_arg_f32(1.0f);
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "argument 0 ('A'): expected a tensor of f32, got a scalar f32");
  memcpy(bad, args, sizeof bad);
  bad[0].ptr = 0;
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "null device pointer");
  memcpy(bad, args, sizeof bad);
  bad[0].shape = NULL;
  CHECK_STATUS(tl_launch(k, bad, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK(fake->launches == launches, "a refused launch reached the driver");
  /* empty: nothing to launch, not an error */
  const int64_t zero[1] = {0};
  tl_arg empty[3] = {tl_arg_tensor(0, TL_F32, 1, zero), tl_arg_tensor(0, TL_F32, 1, zero),
                     tl_arg_tensor(0, TL_F32, 1, zero)};
  CHECK_STATUS(tl_launch(k, empty, 3, NULL), TL_OK, tl_context_message(ctx));
  CHECK(fake->launches == launches, "an empty launch reached the driver");
  tl_free(ctx, a);
  tl_free(ctx, b);
  tl_free(ctx, c);
}

/* tl_module_compile on an sm_90a whose launches can have tensor maps compiles the TMA forms alone
 * (TL_JIT_TMA_ONLY: the kernel's tmap_ok is `required`); a launch whose arguments cannot have maps
 * runs the variant with both forms, compiled once, with tmap_ok = 0. PTX text compiled so refuses
 * such a launch; $TILEC_NO_TMA compiles both forms at once. */
static void test_tma_only(tl_context *ctx)
{
  /* S, a launch constant: 3 at the module's sizes (large), 2 for K < 256 */
  static const char source[] =
      "kernel mm[S = select(K >= 256, 3, 2)](A: f16[M, K], B: f16[K, N], C: f16[M, N])\n"
      "    grid(ceildiv(N, 128), ceildiv(M, 128)) as (bx, by) threads(256) {\n"
      "    let As = alloc_shared([128, 64], f16);\n"
      "    let Bs = alloc_shared([64, 128], f16);\n"
      "    let acc = alloc_fragment([128, 128], f32);\n"
      "    clear(acc);\n"
      "    for k in pipelined(ceildiv(K, 64), stages = S) {\n"
      "        copy(A[by * 128, k * 64], As);\n"
      "        copy(B[k * 64, bx * 128], Bs);\n"
      "        gemm(As, Bs, acc);\n"
      "    }\n"
      "    copy(acc, C[by * 128, bx * 128]);\n"
      "}\n";
  tl_jit_options o = tl_jit_default_options();
  o.arch = "sm_90a";
  tl_module *m = NULL;
  tl_kernel *k = NULL;
  tl_jit_stats before = ctx_stats(ctx);
  CHECK_STATUS(tl_module_compile(ctx, source, sizeof source - 1, &o, &m), TL_OK, tl_context_message(ctx));
  if (!m || tl_module_get_kernel(m, "mm", &k) != TL_OK)
    return;
  const tl_kernel_info *info = tl_kernel_get_info(k);
  CHECK(info->tma_required && info->ntmaps == 3,
        "TMA forms alone (A, B and the store of C): required %d, %d maps", info->tma_required, info->ntmaps);
  const int64_t M = 256, N = 256, K = 256;
  tl_devptr a = 0, b = 0, c = 0;
  CHECK(tl_malloc(ctx, (size_t)(M * K * 2 + 16), &a) == TL_OK &&
            tl_malloc(ctx, (size_t)(K * N * 2), &b) == TL_OK &&
            tl_malloc(ctx, (size_t)(M * N * 2), &c) == TL_OK,
        "malloc");
  const int last = info->nparams - 1; /* tmap_ok */
  /* Each launch: K (256: the module's S = 3; 128: S = 2, a variant), A on a 16-byte boundary or 8
   * bytes off one (no map: the variant with both forms), the tmap_ok passed, the compiles so far. */
  static const struct {
    int64_t K;
    int offset;
    uint32_t tmap_ok;
    int compiles;
  } launches[] = {
      {256, 0, 1, 1},                 /* the module's kernel */
      {256, 8, 0, 2},                 /* the variant with both forms at S = 3, compiled once */
      {256, 8, 0, 2}, {256, 0, 1, 2},
      {128, 8, 0, 3},                 /* S = 2 with both forms, at once: not first the TMA forms alone */
      {128, 8, 0, 3}, {128, 0, 1, 4}, /* S = 2, the TMA forms alone */
      {128, 8, 0, 4}, /* S = 2 alone is made: its maps fail, the both-forms variant is reused */
  };
  for (size_t i = 0; i < sizeof launches / sizeof *launches; i++) {
    const int64_t sa[2] = {M, launches[i].K}, sb[2] = {launches[i].K, N}, sc[2] = {M, N};
    tl_arg args[3] = {tl_arg_tensor(a + (tl_devptr)launches[i].offset, TL_F16, 2, sa),
                      tl_arg_tensor(b, TL_F16, 2, sb), tl_arg_tensor(c, TL_F16, 2, sc)};
    uint32_t flag = 7;
    CHECK_STATUS(tl_launch(k, args, 3, NULL), TL_OK, tl_context_message(ctx));
    memcpy(&flag, fake->last.param[last], 4);
    const tl_jit_stats s = ctx_stats(ctx);
    CHECK(flag == launches[i].tmap_ok && !strcmp(fake->last.function, "mm") &&
              s.compiles == before.compiles + (uint64_t)launches[i].compiles,
          "launch %zu (K = %lld, A + %d): tmap_ok %u, %llu compiles", i, (long long)launches[i].K,
          launches[i].offset, flag, (unsigned long long)(s.compiles - before.compiles));
  }
  const int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tl_arg args[3] = {tl_arg_tensor(a, TL_F16, 2, sa), tl_arg_tensor(b, TL_F16, 2, sb),
                    tl_arg_tensor(c, TL_F16, 2, sc)};
  tl_arg odd[3] = {tl_arg_tensor(a + 8, TL_F16, 2, sa), args[1], args[2]};

  /* the same PTX as text: no variants to fall back on, a clear error */
  char err[1024];
  char *ptx = NULL;
  o.flags |= TL_JIT_TMA_ONLY;
  CHECK_STATUS(
      tl_jit_compile_ptx(tl_context_jit_cache(ctx), source, sizeof source - 1, &o, &ptx, err, sizeof err),
      TL_OK, err);
  tl_module *text = NULL;
  tl_kernel *tk = NULL;
  if (ptx && tl_module_load_ptx(ctx, ptx, &text) == TL_OK && tl_module_get_kernel(text, "mm", &tk) == TL_OK) {
    CHECK(tl_kernel_get_info(tk)->tma_required, "PTX text: required");
    const int launches = fake->launches;
    CHECK_STATUS(tl_launch(tk, odd, 3, NULL), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
    CHECK_CONTAINS(tl_context_message(ctx), "compiled with --tma-only and needs tensor maps");
    CHECK(fake->launches == launches, "a kernel without its maps reached the driver");
    CHECK_STATUS(tl_launch(tk, args, 3, NULL), TL_OK, tl_context_message(ctx));
  }
  free(ptx);
  tl_module_unload(text);
  tl_module_unload(m);

  /* $TILEC_NO_TMA: launches never have maps, so the module has both forms from the start */
  setenv("TILEC_NO_TMA", "1", 1);
  tl_context *none = open_fake("TILEC_NO_TMA");
  unsetenv("TILEC_NO_TMA");
  o.flags &= ~(unsigned)TL_JIT_TMA_ONLY;
  if (none && tl_module_compile(none, source, sizeof source - 1, &o, &m) == TL_OK &&
      tl_module_get_kernel(m, "mm", &k) == TL_OK)
    CHECK(!tl_kernel_get_info(k)->tma_required, "TILEC_NO_TMA: both forms");
  tl_context_destroy(none);
  tl_free(ctx, a);
  tl_free(ctx, b);
  tl_free(ctx, c);
}

/* A persistent grid, min(N / 256, 2 * num_sms) blocks: tl_launch gives num_sms its context's
 * device (the stand-in reports 132 multiprocessors). */
static void test_num_sms_launch(tl_context *ctx)
{
  static const char source[] = "kernel persist(A: f32[N]) grid(min(ceildiv(N, 256), num_sms * 2)) as (b)\n"
                               "    threads(128) {\n"
                               "    let x = alloc_fragment([256], f32);\n"
                               "    for r in serial(ceildiv(ceildiv(N, 256) - b, num_blocks(0))) {\n"
                               "        copy(A[(r * num_blocks(0) + b) * 256], x);\n"
                               "        copy(x, A[(r * num_blocks(0) + b) * 256]);\n"
                               "    }\n"
                               "}\n";
  tl_module *m = NULL;
  tl_kernel *k = NULL;
  CHECK_STATUS(tl_module_compile(ctx, source, strlen(source), NULL, &m), TL_OK, tl_context_message(ctx));
  CHECK_STATUS(tl_module_get_kernel(m, "persist", &k), TL_OK, tl_context_message(ctx));
  if (!k)
    return;
  CHECK(tl_kernel_get_info(k)->uses_num_sms, "uses_num_sms");
  static const struct {
    int64_t n;
    unsigned grid;
  } cases[] = {{1000, 4}, {256 * 264, 264}, {1 << 24, 264}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const int64_t shape[1] = {cases[i].n};
    tl_arg arg = tl_arg_tensor(0x1000, TL_F32, 1, shape);
    CHECK_STATUS(tl_launch(k, &arg, 1, NULL), TL_OK, tl_context_message(ctx));
    CHECK(fake->last.grid[0] == cases[i].grid && !strcmp(fake->last.function, "persist"),
          "N=%lld: grid %u, want %u", (long long)cases[i].n, fake->last.grid[0], cases[i].grid);
  }
  tl_module_unload(m);
}

/* The threat the folder checks are for: an entry planted with a device binary for this very
 * device and driver would be loaded and run. Planted as a file others may write (and, as root, as
 * another uid's) or in a folder others may write: the driver is given this user's PTX instead. */
static void test_planted_binary(void)
{
  char dir[512], err[1024], path[1024], key[33];
  tmp_path("planted", dir, sizeof dir);
  tl_jit_options o = options_for("sm_90a", NULL, 0);
  o.flags |= TL_JIT_TMA_ONLY; /* tl_module_compile's key on an sm_90a whose launches can have maps */
  tl_jit_key(vector_add.text, vector_add.len, &o, key, err, sizeof err);
  snprintf(path, sizeof path, "%s/%s" TL_CACHE_SUFFIX, dir, key);
  for (int kase = 0; kase < 3; kase++) {
    if (kase == 1 && geteuid() != 0)
      continue;
    /* an entry with a binary for this device, made by the cache itself */
    remove_tree(dir);
    tl_context *ctx = open_fake("planted: the entry");
    tl_jit_cache *c = NULL;
    CHECK_STATUS(tl_jit_cache_create(dir, 0, &c, err, sizeof err), TL_OK, err);
    tl_module *m = NULL;
    if (ctx && c) {
      tl_context_set_jit_cache(ctx, c);
      CHECK_STATUS(tl_module_compile(ctx, vector_add.text, vector_add.len, NULL, &m), TL_OK,
                   tl_context_message(ctx));
    }
    tl_context_destroy(ctx);
    tl_jit_cache_destroy(c);
    CHECK(file_exists(path), "no entry %s", path);
    if (kase == 0)
      chmod(path, 0666);
    else if (kase == 1)
      CHECK(chown(path, 4242, 4242) == 0, "chown: %s", strerror(errno));
    else
      chmod(dir, 0777);
    /* another process (a new context and cache) */
    ctx = open_fake("planted");
    c = NULL;
    CHECK_STATUS(tl_jit_cache_create(dir, 0, &c, err, sizeof err), TL_OK, err);
    if (!ctx || !c) {
      tl_context_destroy(ctx);
      tl_jit_cache_destroy(c);
      continue;
    }
    tl_context_set_jit_cache(ctx, c);
    const int loads = fake->binary_loads, links = fake->links;
    CHECK_STATUS(tl_module_compile(ctx, vector_add.text, vector_add.len, NULL, &m), TL_OK,
                 tl_context_message(ctx));
    tl_jit_stats s = stats_of(c);
    CHECK(s.disk_hits == 0 && s.disk_untrusted == 1 && s.compiles == 1 && s.links == 1 &&
              fake->links == links + 1 && fake->binary_loads == loads + 1,
          "planted %s: %llu disk hits, %llu untrusted, %llu compiles, %llu links",
          kase == 0   ? "mode 0666"
          : kase == 1 ? "uid 4242"
                      : "in a mode 0777 folder",
          (unsigned long long)s.disk_hits, (unsigned long long)s.disk_untrusted,
          (unsigned long long)s.compiles, (unsigned long long)s.links);
    tl_context_destroy(ctx);
    tl_jit_cache_destroy(c);
  }
  remove_tree(dir);
}

static void test_fake_driver(void)
{
  char err[1024] = "", dir[512], path[1024];
  void *handle = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  fake_cuda_state_fn state_fn = NULL;
  if (handle) {
    void *sym = dlsym(handle, "fake_cuda_get_state");
    memcpy(&state_fn, &sym, sizeof sym);
  }
  CHECK(state_fn != NULL, "cannot load the stand-in driver %s: %s", FAKE_CUDA_PATH, dlerror());
  if (!state_fn)
    return;
  fake = state_fn();
  setenv("TILEC_CUDA_LIBRARY", FAKE_CUDA_PATH, 1);
  tmp_path("ctx-cache", dir, sizeof dir);
  setenv("TILEC_CACHE_DIR", dir, 1);

  /* cold: compiled, linked, loaded from the new binary, stored */
  tl_context *ctx = open_fake("cold");
  if (!ctx)
    return;
  tl_module *m = (tl_module *)1;
  tl_status st = tl_module_compile(ctx, vector_add.text, vector_add.len, NULL, &m);
  CHECK_STATUS(st, TL_OK, tl_context_message(ctx));
  tl_jit_stats s = ctx_stats(ctx);
  CHECK(s.compiles == 1 && s.links == 1 && s.disk_writes == 1 && s.binary_loads == 0,
        "cold: %llu compiles %llu links %llu writes", (unsigned long long)s.compiles,
        (unsigned long long)s.links, (unsigned long long)s.disk_writes);
  CHECK(fake->links == 1 && fake->binary_loads == 1, "fake: %d links, %d binary loads", fake->links,
        fake->binary_loads);
  tl_kernel *k = NULL;
  CHECK_STATUS(tl_module_get_kernel(m, "vector_add", &k), TL_OK, tl_context_message(ctx));
  tl_kernel *none = (tl_kernel *)1;
  CHECK_STATUS(tl_module_get_kernel(m, "vector_sub", &none), TL_ERR_NOT_FOUND, tl_context_message(ctx));
  CHECK(none == NULL, "kernel reset");
  CHECK_CONTAINS(tl_context_message(ctx), "no kernel 'vector_sub' in the module (it has: vector_add)");
  if (k)
    test_launches(ctx, k);

  /* warm memory, same context: no compile, no link */
  tl_module *m2 = NULL;
  st = tl_module_compile(ctx, vector_add.text, vector_add.len, NULL, &m2);
  CHECK_STATUS(st, TL_OK, tl_context_message(ctx));
  s = ctx_stats(ctx);
  CHECK(s.memory_hits == 1 && s.compiles == 1 && s.links == 1 && s.binary_loads == 1, "warm memory");
  CHECK(fake->links == 1 && fake->binary_loads == 2, "fake: %d links", fake->links);
  tl_module_unload(m2);

  /* a file, a file that is not there */
  char file[1024];
  snprintf(file, sizeof file, "%s/saxpy.tl", TILEC_EXAMPLES_DIR);
  st = tl_module_compile_file(ctx, file, NULL, &m2);
  CHECK_STATUS(st, TL_OK, tl_context_message(ctx));
  CHECK(tl_module_get_kernel(m2, "saxpy", &k) == TL_OK, "saxpy");
  tl_module_unload(m2);
  st = tl_module_compile_file(ctx, "/nonexistent/x.tl", NULL, &m2);
  CHECK_STATUS(st, TL_ERR_IO, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "/nonexistent/x.tl");

  /* compile errors: the diagnostics in the message and through the callback */
  diagnostics_seen seen = {0};
  tl_jit_options o = tl_jit_default_options();
  o.filename = "broken.tl";
  o.on_diagnostic = record_diagnostic;
  o.user = &seen;
  st = tl_module_compile(ctx, bad_source, strlen(bad_source), &o, &m2);
  CHECK_STATUS(st, TL_ERR_COMPILE, tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "broken.tl:2:");
  CHECK(seen.count >= 1 && seen.first_line == 2, "callback");
  CHECK(m2 == NULL, "module reset");

  /* misuse */
  CHECK(tl_module_compile(NULL, vector_add.text, vector_add.len, NULL, &m2) == TL_ERR_BAD_ARGUMENT,
        "NULL context");
  CHECK_STATUS(tl_module_compile(ctx, vector_add.text, vector_add.len, NULL, NULL), TL_ERR_BAD_ARGUMENT,
               tl_context_message(ctx));
  CHECK_STATUS(tl_module_compile(ctx, NULL, 3, NULL, &m2), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  o = tl_jit_default_options();
  o.arch = "sm_70";
  CHECK_STATUS(tl_module_compile(ctx, vector_add.text, vector_add.len, &o, &m2), TL_ERR_BAD_ARGUMENT,
               tl_context_message(ctx));
  CHECK_CONTAINS(tl_context_message(ctx), "unknown target 'sm_70'");
  CHECK(tl_module_compile_file(NULL, file, NULL, &m2) == TL_ERR_BAD_ARGUMENT, "file NULL ctx");
  CHECK_STATUS(tl_module_compile_file(ctx, NULL, NULL, &m2), TL_ERR_BAD_ARGUMENT, tl_context_message(ctx));
  CHECK(tl_context_jit_cache(NULL) == NULL && tl_context_set_jit_cache(NULL, NULL) == TL_ERR_BAD_ARGUMENT,
        "cache of NULL");

  /* warm disk, new context (its own cache): no compile, no link, the binary loaded */
  tl_context *ctx2 = open_fake("warm");
  if (ctx2) {
    int links = fake->links, loads = fake->binary_loads;
    st = tl_module_compile(ctx2, vector_add.text, vector_add.len, NULL, &m2);
    CHECK_STATUS(st, TL_OK, tl_context_message(ctx2));
    s = ctx_stats(ctx2);
    CHECK(s.disk_hits == 1 && s.compiles == 0 && s.links == 0 && s.binary_loads == 1,
          "warm disk: %llu hits %llu compiles %llu links", (unsigned long long)s.disk_hits,
          (unsigned long long)s.compiles, (unsigned long long)s.links);
    CHECK(fake->links == links && fake->binary_loads == loads + 1, "fake warm");
    tl_context_destroy(ctx2); /* unloads m2 */
  }

  /* another driver version: the binary is rebuilt from the cached PTX and stored again */
  setenv("FAKE_CUDA_DRIVER", "13010", 1);
  ctx2 = open_fake("new driver");
  if (ctx2) {
    st = tl_module_compile(ctx2, vector_add.text, vector_add.len, NULL, &m2);
    CHECK_STATUS(st, TL_OK, tl_context_message(ctx2));
    s = ctx_stats(ctx2);
    CHECK(s.disk_hits == 1 && s.compiles == 0 && s.links == 1 && s.disk_writes == 1,
          "new driver: %llu links %llu writes", (unsigned long long)s.links,
          (unsigned long long)s.disk_writes);
    tl_context_destroy(ctx2);
  }
  ctx2 = open_fake("new driver, warm");
  if (ctx2) {
    st = tl_module_compile(ctx2, vector_add.text, vector_add.len, NULL, &m2);
    s = ctx_stats(ctx2);
    CHECK(st == TL_OK && s.links == 0 && s.binary_loads == 1, "new driver, warm");
    tl_context_destroy(ctx2);
  }
  unsetenv("FAKE_CUDA_DRIVER");

  /* the device decides the arch: sm_80 on 8.0, and 7.5 is too old unless an arch is named */
  setenv("FAKE_CUDA_CC", "80", 1);
  ctx2 = open_fake("sm_80");
  if (ctx2) {
    st = tl_module_compile(ctx2, vector_add.text, vector_add.len, NULL, &m2);
    CHECK_STATUS(st, TL_OK, tl_context_message(ctx2));
    o = options_for("sm_80", NULL, 0);
    char key[33];
    tl_jit_key(vector_add.text, vector_add.len, &o, key, err, sizeof err);
    snprintf(path, sizeof path, "%s/%s" TL_CACHE_SUFFIX, dir, key);
    CHECK(ctx_stats(ctx2).compiles == 1 && file_exists(path), "sm_80 entry %s", path);
    tl_context_destroy(ctx2);
  }
  setenv("FAKE_CUDA_CC", "75", 1);
  ctx2 = open_fake("sm_75");
  if (ctx2) {
    st = tl_module_compile(ctx2, vector_add.text, vector_add.len, NULL, &m2);
    CHECK_STATUS(st, TL_ERR_BAD_ARGUMENT, tl_context_message(ctx2));
    CHECK_CONTAINS(tl_context_message(ctx2), "is sm_75; tilec targets sm_80 and newer");
    tl_context_destroy(ctx2);
  }
  unsetenv("FAKE_CUDA_CC");

  /* the driver refuses the PTX: its log in the message, nothing cached */
  setenv("FAKE_CUDA_REJECT", "1", 1);
  ctx2 = open_fake("reject");
  if (ctx2) {
    tilec_define def = {"BLOCK", "512"};
    o = options_for(NULL, &def, 1);
    st = tl_module_compile(ctx2, vector_add.text, vector_add.len, &o, &m2);
    CHECK_STATUS(st, TL_ERR_PTX_REJECTED, tl_context_message(ctx2));
    CHECK_CONTAINS(tl_context_message(ctx2), "the fake driver rejects this PTX");
    s = ctx_stats(ctx2);
    CHECK(s.compiles == 1 && s.disk_writes == 0, "rejected PTX cached?");
    o.flags = TL_JIT_NO_CACHE; /* the direct path (cuModuleLoadDataEx) */
    st = tl_module_compile(ctx2, vector_add.text, vector_add.len, &o, &m2);
    CHECK_STATUS(st, TL_ERR_PTX_REJECTED, tl_context_message(ctx2));
    tl_context_destroy(ctx2);
  }
  unsetenv("FAKE_CUDA_REJECT");

  /* a cache shared by two contexts */
  tl_jit_cache *shared = NULL;
  CHECK_STATUS(tl_jit_cache_create(NULL, TL_JIT_CACHE_NO_DISK, &shared, err, sizeof err), TL_OK, err);
  ctx2 = open_fake("shared");
  if (ctx2 && shared) {
    tl_context_set_jit_cache(ctx, shared);
    tl_context_set_jit_cache(ctx2, shared);
    CHECK(tl_context_jit_cache(ctx2) == shared, "shared cache");
    tl_module_compile(ctx, gelu.text, gelu.len, NULL, &m2);
    tl_module_compile(ctx2, gelu.text, gelu.len, NULL, &m2);
    s = stats_of(shared);
    CHECK(s.compiles == 1 && s.memory_hits == 1, "shared: %llu compiles, %llu hits",
          (unsigned long long)s.compiles, (unsigned long long)s.memory_hits);
    tl_context_set_jit_cache(ctx, NULL);
    CHECK(tl_context_jit_cache(ctx) != shared, "back to its own cache");
  }
  tl_context_destroy(ctx2);
  tl_jit_cache_destroy(shared);

  /* without the cache, the PTX goes straight to the driver */
  o = tl_jit_default_options();
  o.flags = TL_JIT_NO_CACHE;
  int compiles = fake->ptx_compiles, links = fake->links;
  st = tl_module_compile(ctx, vector_add.text, vector_add.len, &o, &m2);
  CHECK_STATUS(st, TL_OK, tl_context_message(ctx));
  CHECK(fake->ptx_compiles == compiles + 1 && fake->links == links, "no cache: direct load");

  test_num_sms_launch(ctx);
  test_tma_only(ctx);
  test_planted_binary();
  tl_module_unload(m);
  tl_context_destroy(ctx); /* unloads m2 */
  CHECK(fake->modules_live == 0 && fake->contexts_live == 0, "%d modules, %d contexts left",
        fake->modules_live, fake->contexts_live);

  /* no device, no driver: clear errors */
  setenv("FAKE_CUDA_NO_DEVICE", "1", 1);
  tl_context *none_ctx = (tl_context *)1;
  st = tl_context_create(0, &none_ctx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_NO_DEVICE, err);
  CHECK(none_ctx == NULL, "ctx reset");
  unsetenv("FAKE_CUDA_NO_DEVICE");
  setenv("TILEC_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  st = tl_context_create(0, &none_ctx, err, sizeof err);
  CHECK_STATUS(st, TL_ERR_NO_DRIVER, err);
  CHECK_CONTAINS(err, "cannot load the CUDA driver (/nonexistent/libcuda.so.1): ");
  unsetenv("TILEC_CUDA_LIBRARY");
  unsetenv("TILEC_CACHE_DIR");
  dlclose(handle);
}

int main(int argc, char **argv)
{
  if (argc == 3 && !strcmp(argv[1], "--child"))
    return child_main(argv[2]);
  /* the environment this test controls */
  unsetenv("TILEC_CACHE_DISABLE");
  unsetenv("TILEC_DEBUG");
  unsetenv("TILEC_CUDA_LIBRARY");
  unsetenv("TILEC_DEVICE"); /* the stand-in driver's contexts, not the CPU device */
  snprintf(tmp_root, sizeof tmp_root, "%s/tilec-test-jit-XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmp_root)) {
    printf("FAIL mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  if (load_sources()) {
    test_hash();
    test_arch_for();
    test_key();
    test_format();
    test_disk_cache();
    test_line_info();
    test_hostile_entries();
    test_disk_housekeeping();
    test_compile_errors();
    test_compiler_api();
    test_threads();
    test_processes("/proc/self/exe");
    test_fake_driver();
  }
  free_references();
  free(vector_add.text);
  free(saxpy.text);
  free(gelu.text);
  remove_tree(tmp_root);
  printf("test_jit: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
