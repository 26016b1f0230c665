/* cache.c: the JIT cache's keys, its entry file format and its folder on disk. No driver, no
 * compiler: the parts that tests/unit/test_jit.c checks byte by byte.
 *
 * Why one file per entry, written whole and renamed into place: rename() within a folder is atomic
 * on POSIX file systems, so a reader (another thread, another process) opens either the previous
 * complete entry or the new complete entry, never a part of one, and two writers of the same entry
 * simply replace each other's complete file. Nothing is locked. What rename() cannot promise (a
 * crash between write and rename leaves a stray temporary; a power cut can leave a short file on
 * some file systems) the size check and the checksum catch: such an entry is rejected, rebuilt and
 * overwritten, never trusted.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit_internal.h"
#include "runtime_internal.h"

/* ------------------------------------------------------------------------------------------ keys */

const char *tl_jit_compiler_id(char *buf, size_t size)
{
  tl_fmt(buf, size, "tilec %s+%s", tilec_version(), tilec_build_id());
  return buf;
}

static int compare_names(const void *a, const void *b)
{
  const tilec_define *x = *(const tilec_define *const *)a, *y = *(const tilec_define *const *)b;
  return strcmp(x->name, y->name);
}

bool tl_jit_key_for(const char *src, size_t len, const char *arch, int opt_level,
                    const tilec_define *defines, int ndefines, const char *kernel,
                    const char *compiler_id, tl_hash128 *out)
{
  if ((!src && len) || !arch || !compiler_id || !out || ndefines < 0 || (ndefines && !defines))
    return false;
  /* The defines as the compiler sees them: the last value of each name wins. */
  const tilec_define **last = calloc((size_t)ndefines + 1, sizeof *last);
  if (!last)
    return false;
  int nlast = 0;
  for (int i = 0; i < ndefines; i++) {
    if (!defines[i].name || !defines[i].value) {
      free(last);
      return false;
    }
    bool later = false;
    for (int j = i + 1; j < ndefines && !later; j++)
      later = defines[j].name && strcmp(defines[j].name, defines[i].name) == 0;
    if (!later)
      last[nlast++] = &defines[i];
  }
  qsort(last, (size_t)nlast, sizeof *last, compare_names);

  tl_hasher h;
  tl_hasher_init(&h, TL_HASH_SEED_KEY);
  tl_hasher_string(&h, "tilec-jit-key/1");
  tl_hasher_string(&h, compiler_id);
  tl_hasher_string(&h, arch);
  const unsigned char level = (unsigned char)opt_level;
  tl_hasher_field(&h, &level, 1);
  tl_hasher_string(&h, kernel);
  const uint64_t count = (uint64_t)nlast;
  tl_hasher_field(&h, &count, sizeof count);
  for (int i = 0; i < nlast; i++) {
    tl_hasher_string(&h, last[i]->name);
    tl_hasher_string(&h, last[i]->value);
  }
  tl_hasher_field(&h, src ? src : "", len);
  *out = tl_hasher_final(&h);
  free(last);
  return true;
}

/* ---------------------------------------------------------------------------------- entry format */

void tl_cache_entry_free(tl_cache_entry *e)
{
  if (!e)
    return;
  free(e->ptx);
  free(e->cubin);
  memset(e, 0, sizeof *e);
}

static void put32(unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static uint64_t get64(const unsigned char *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

enum {
  OFF_MAGIC = 0,
  OFF_FORMAT = 8,
  OFF_HEADER = 12,
  OFF_KEY = 16,
  OFF_PTX_LEN = 32,
  OFF_CUBIN_LEN = 40,
  OFF_CUBIN_CC = 48,
  OFF_CUBIN_DRIVER = 52,
  OFF_ID = 56,
  OFF_SUM = 120,
};
_Static_assert(OFF_ID + TL_CACHE_ID_BYTES == OFF_SUM, "layout");
_Static_assert(OFF_SUM + 16 == TL_CACHE_HEADER, "layout");

/* The checksum: the header up to the checksum field, then the payload. */
static tl_hash128 checksum(const unsigned char *data, size_t len)
{
  tl_hasher h;
  tl_hasher_init(&h, TL_HASH_SEED_SUM);
  tl_hasher_update(&h, data, OFF_SUM);
  tl_hasher_update(&h, data + TL_CACHE_HEADER, len - TL_CACHE_HEADER);
  return tl_hasher_final(&h);
}

bool tl_cache_encode(tl_hash128 key, const char *compiler_id, const tl_cache_entry *e,
                     unsigned char **out, size_t *out_len)
{
  *out = NULL;
  *out_len = 0;
  const size_t id_len = strlen(compiler_id);
  if (id_len >= TL_CACHE_ID_BYTES || !e->ptx)
    return false;
  const size_t cubin_len = e->cubin ? e->cubin_len : 0;
  const size_t len = TL_CACHE_HEADER + e->ptx_len + cubin_len;
  unsigned char *d = calloc(1, len);
  if (!d)
    return false;
  memcpy(d + OFF_MAGIC, TL_CACHE_MAGIC, 8);
  put32(d + OFF_FORMAT, TL_CACHE_FORMAT);
  put32(d + OFF_HEADER, TL_CACHE_HEADER);
  put64(d + OFF_KEY, key.lo);
  put64(d + OFF_KEY + 8, key.hi);
  put64(d + OFF_PTX_LEN, e->ptx_len);
  put64(d + OFF_CUBIN_LEN, cubin_len);
  put32(d + OFF_CUBIN_CC, cubin_len ? e->cubin_cc : 0);
  put32(d + OFF_CUBIN_DRIVER, cubin_len ? e->cubin_driver : 0);
  memcpy(d + OFF_ID, compiler_id, id_len);
  memcpy(d + TL_CACHE_HEADER, e->ptx, e->ptx_len);
  if (cubin_len)
    memcpy(d + TL_CACHE_HEADER + e->ptx_len, e->cubin, cubin_len);
  const tl_hash128 sum = checksum(d, len);
  put64(d + OFF_SUM, sum.lo);
  put64(d + OFF_SUM + 8, sum.hi);
  *out = d;
  *out_len = len;
  return true;
}

bool tl_cache_decode(const unsigned char *d, size_t len, tl_hash128 key, const char *compiler_id,
                     tl_cache_entry *out, char *why, size_t why_size)
{
  memset(out, 0, sizeof *out);
  if (len < TL_CACHE_HEADER) {
    tl_fmt(why, why_size, "truncated: %zu bytes, less than the %u-byte header", len,
           TL_CACHE_HEADER);
    return false;
  }
  if (memcmp(d + OFF_MAGIC, TL_CACHE_MAGIC, 8) != 0) {
    tl_fmt(why, why_size, "not a tilec cache entry (bad magic)");
    return false;
  }
  if (get32(d + OFF_FORMAT) != TL_CACHE_FORMAT || get32(d + OFF_HEADER) != TL_CACHE_HEADER) {
    tl_fmt(why, why_size, "foreign format version %u (this tilec reads %u)", get32(d + OFF_FORMAT),
           TL_CACHE_FORMAT);
    return false;
  }
  char id[TL_CACHE_ID_BYTES + 1];
  memcpy(id, d + OFF_ID, TL_CACHE_ID_BYTES);
  id[TL_CACHE_ID_BYTES] = 0;
  if (strcmp(id, compiler_id) != 0) {
    tl_fmt(why, why_size, "written by another compiler ('%s', this is '%s')", id, compiler_id);
    return false;
  }
  const uint64_t ptx_len = get64(d + OFF_PTX_LEN), cubin_len = get64(d + OFF_CUBIN_LEN);
  if (ptx_len > len || cubin_len > len || TL_CACHE_HEADER + ptx_len + cubin_len != len) {
    tl_fmt(why, why_size, "%s: %zu bytes, the header announces %llu",
           TL_CACHE_HEADER + ptx_len + cubin_len > len ? "truncated" : "extended", len,
           (unsigned long long)(TL_CACHE_HEADER + ptx_len + cubin_len));
    return false;
  }
  const tl_hash128 sum = checksum(d, len);
  if (sum.lo != get64(d + OFF_SUM) || sum.hi != get64(d + OFF_SUM + 8)) {
    tl_fmt(why, why_size, "damaged (checksum mismatch)");
    return false;
  }
  const tl_hash128 stored = {get64(d + OFF_KEY), get64(d + OFF_KEY + 8)};
  if (!tl_hash_equal(stored, key)) {
    tl_fmt(why, why_size, "holds another key");
    return false;
  }
  const char *ptx = (const char *)d + TL_CACHE_HEADER;
  if (ptx_len == 0 || memchr(ptx, 0, ptx_len)) {
    tl_fmt(why, why_size, "its PTX is empty or holds a NUL byte");
    return false;
  }
  out->ptx = malloc(ptx_len + 1);
  out->cubin = cubin_len ? malloc(cubin_len) : NULL;
  if (!out->ptx || (cubin_len && !out->cubin)) {
    tl_cache_entry_free(out);
    tl_fmt(why, why_size, "out of memory");
    return false;
  }
  memcpy(out->ptx, ptx, ptx_len);
  out->ptx[ptx_len] = 0;
  out->ptx_len = ptx_len;
  if (cubin_len) {
    memcpy(out->cubin, ptx + ptx_len, cubin_len);
    out->cubin_len = cubin_len;
    out->cubin_cc = get32(d + OFF_CUBIN_CC);
    out->cubin_driver = get32(d + OFF_CUBIN_DRIVER);
  }
  return true;
}

/* ---------------------------------------------------------------------------------------- folder */

bool tl_cache_default_dir(char *buf, size_t size)
{
  const char *dir = getenv("TILEC_CACHE_DIR");
  int n = -1;
  if (dir && *dir) {
    n = snprintf(buf, size, "%s", dir);
  } else {
    /* XDG: a relative XDG_CACHE_HOME is invalid and must be ignored. */
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
      n = snprintf(buf, size, "%s/tilec", xdg);
    else if (home && *home)
      n = snprintf(buf, size, "%s/.cache/tilec", home);
  }
  return n > 0 && (size_t)n < size;
}

void tl_cache_entry_path(const char *dir, tl_hash128 key, char *buf, size_t size)
{
  char hex[33];
  tl_hash_hex(key, hex);
  tl_fmt(buf, size, "%s/%s" TL_CACHE_SUFFIX, dir, hex);
}

/* Entries are small (PTX and a binary of a few kernels); anything bigger is not one of ours. */
#define MAX_ENTRY_BYTES ((off_t)1 << 30)

tl_cache_read_result tl_cache_read(const char *dir, tl_hash128 key, const char *compiler_id,
                                   tl_cache_entry *out, char *why, size_t why_size)
{
  memset(out, 0, sizeof *out);
  char path[4096];
  tl_cache_entry_path(dir, key, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return TL_CACHE_ABSENT;
    tl_fmt(why, why_size, "cannot open %s: %s", path, strerror(errno));
    return TL_CACHE_REJECTED;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_ENTRY_BYTES) {
    tl_fmt(why, why_size, "%s is not a regular file of a plausible size", path);
    close(fd);
    return TL_CACHE_REJECTED;
  }
  const size_t size = (size_t)st.st_size;
  unsigned char *data = malloc(size ? size : 1);
  size_t got = 0;
  while (data && got < size) {
    ssize_t n = read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  if (!data) {
    tl_fmt(why, why_size, "out of memory reading %s", path);
    return TL_CACHE_REJECTED;
  }
  char reason[512];
  bool ok = got == size &&
            tl_cache_decode(data, got, key, compiler_id, out, reason, sizeof reason);
  if (!ok)
    tl_fmt(why, why_size, "%s: %s", path, got == size ? reason : "short read");
  free(data);
  return ok ? TL_CACHE_HIT : TL_CACHE_REJECTED;
}

/* mkdir -p, the new folders private to the user (they hold what the user compiled). */
static bool make_dirs(const char *dir, char *why, size_t why_size)
{
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
    tl_fmt(why, why_size, "cache folder name too long");
    return false;
  }
  for (char *p = path + 1;; p++) {
    if (*p == '/' || *p == 0) {
      char saved = *p;
      *p = 0;
      if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        tl_fmt(why, why_size, "cannot create %s: %s", path, strerror(errno));
        return false;
      }
      *p = saved;
      if (!saved)
        break;
    }
  }
  return true;
}

static bool write_all(int fd, const unsigned char *data, size_t len)
{
  while (len) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    len -= (size_t)n;
  }
  return true;
}

bool tl_cache_write(const char *dir, tl_hash128 key, const char *compiler_id,
                    const tl_cache_entry *e, char *why, size_t why_size)
{
  unsigned char *data;
  size_t len;
  if (!tl_cache_encode(key, compiler_id, e, &data, &len)) {
    tl_fmt(why, why_size, "cannot encode the entry (out of memory, or compiler id too long)");
    return false;
  }
  if (!make_dirs(dir, why, why_size)) {
    free(data);
    return false;
  }
  char path[4096], tmp[4096], hex[33];
  tl_hash_hex(key, hex);
  tl_cache_entry_path(dir, key, path, sizeof path);
  /* A unique name in the same folder (rename() does not cross file systems); the leading dot and
   * the suffix keep it out of readers' way. */
  tl_fmt(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, hex);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    tl_fmt(why, why_size, "cannot create a file in %s: %s", dir, strerror(errno));
    free(data);
    return false;
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  bool ok = write_all(fd, data, len);
  int saved = errno;
  ok &= close(fd) == 0;
  free(data);
  if (ok && rename(tmp, path) != 0) {
    saved = errno;
    ok = false;
  }
  if (!ok) {
    tl_fmt(why, why_size, "cannot write %s: %s", path, strerror(saved));
    unlink(tmp);
  }
  return ok;
}
