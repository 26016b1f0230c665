/* cache.c: the JIT cache's keys, its entry file format and its folder on disk. No driver, no
 * compiler: the parts that tests/unit/test_jit.c checks byte by byte.
 *
 * Why one file per entry, written whole and renamed into place: rename() within a folder is atomic
 * on POSIX file systems, so a reader (another thread, another process) opens either the previous
 * complete entry or the new complete entry, never a part of one, and two writers of the same entry
 * simply replace each other's complete file. Nothing is locked. What rename() cannot promise (a
 * crash between write and rename leaves a stray temporary; a power cut can leave a short file on
 * some file systems) the size check and the checksum catch: such an entry is rejected, rebuilt and
 * overwritten, never trusted. Temporaries that crashed writers left are removed once they are
 * minutes old, and the folder is kept within a byte limit by removing the entries read or written
 * least recently (tl_cache_trim; jit.c decides when).
 *
 * Why the folder is checked on every use: the checksum guards against accidents, not against
 * another user. An entry holds a device binary that is run on the user's GPU, so only a folder
 * that is the user's alone, holding regular files that are the user's alone, is read; a FIFO is
 * opened without blocking, a symbolic link not at all, and a header is believed only after it is
 * checked, before the rest of the file is read.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

bool tl_jit_key_for(const char *src, size_t len, const char *arch, int opt_level, const tilec_define *defines,
                    int ndefines, const char *kernel, const char *compiler_id, tl_hash128 *out)
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
_Static_assert(TL_CACHE_DIR_MAX == TL_JIT_CACHE_DIR_MAX, "tilec_jit.h says the same");

/* The checksum: the header up to the checksum field, then the payload. */
static tl_hash128 checksum(const unsigned char *data, size_t len)
{
  tl_hasher h;
  tl_hasher_init(&h, TL_HASH_SEED_SUM);
  tl_hasher_update(&h, data, OFF_SUM);
  tl_hasher_update(&h, data + TL_CACHE_HEADER, len - TL_CACHE_HEADER);
  return tl_hasher_final(&h);
}

bool tl_cache_encode(tl_hash128 key, const char *compiler_id, const tl_cache_entry *e, unsigned char **out,
                     size_t *out_len)
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

/* Everything the header promises, checked before the payload is looked at (on disk, before it is
 * even read): ours, this format, this compiler, this key, and lengths that add up to `size`, the
 * whole entry's bytes, none beyond what an entry may hold. */
static bool check_header(const unsigned char *d, uint64_t size, tl_hash128 key, const char *compiler_id,
                         char *why, size_t why_size)
{
  if (size < TL_CACHE_HEADER) {
    tl_fmt(why, why_size, "truncated: %llu bytes, less than the %u-byte header", (unsigned long long)size,
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
  const tl_hash128 stored = {get64(d + OFF_KEY), get64(d + OFF_KEY + 8)};
  if (!tl_hash_equal(stored, key)) {
    tl_fmt(why, why_size, "holds another key");
    return false;
  }
  const uint64_t ptx_len = get64(d + OFF_PTX_LEN), cubin_len = get64(d + OFF_CUBIN_LEN);
  if (ptx_len > TL_CACHE_ENTRY_MAX || cubin_len > TL_CACHE_ENTRY_MAX ||
      TL_CACHE_HEADER + ptx_len + cubin_len > TL_CACHE_ENTRY_MAX) {
    tl_fmt(why, why_size, "the header announces %llu + %llu bytes, more than an entry may hold",
           (unsigned long long)ptx_len, (unsigned long long)cubin_len);
    return false;
  }
  if (TL_CACHE_HEADER + ptx_len + cubin_len != size) {
    tl_fmt(why, why_size, "%s: %llu bytes, the header announces %llu",
           TL_CACHE_HEADER + ptx_len + cubin_len > size ? "truncated" : "extended", (unsigned long long)size,
           (unsigned long long)(TL_CACHE_HEADER + ptx_len + cubin_len));
    return false;
  }
  return true;
}

bool tl_cache_decode(const unsigned char *d, size_t len, tl_hash128 key, const char *compiler_id,
                     tl_cache_entry *out, char *why, size_t why_size)
{
  memset(out, 0, sizeof *out);
  if (!check_header(d, len, key, compiler_id, why, why_size))
    return false;
  const uint64_t ptx_len = get64(d + OFF_PTX_LEN), cubin_len = get64(d + OFF_CUBIN_LEN);
  const tl_hash128 sum = checksum(d, len);
  if (sum.lo != get64(d + OFF_SUM) || sum.hi != get64(d + OFF_SUM + 8)) {
    tl_fmt(why, why_size, "damaged (checksum mismatch)");
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

char *tl_cache_default_dir(void)
{
  const char *dir = getenv("TILEC_CACHE_DIR");
  if (dir && *dir)
    return strdup(dir);
  /* XDG: a relative XDG_CACHE_HOME is invalid and must be ignored. */
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  const char *base = xdg && xdg[0] == '/' ? xdg : home && *home ? home : NULL;
  const char *tail = base == xdg ? "/tilec" : "/.cache/tilec";
  if (!base)
    return NULL;
  char *path = malloc(strlen(base) + strlen(tail) + 1);
  if (path) {
    strcpy(path, base);
    strcat(path, tail);
  }
  return path;
}

static void entry_name(tl_hash128 key, char name[TL_CACHE_NAME_MAX + 1])
{
  char hex[33];
  tl_hash_hex(key, hex);
  tl_fmt(name, TL_CACHE_NAME_MAX + 1, "%s" TL_CACHE_SUFFIX, hex);
}

void tl_cache_entry_path(const char *dir, tl_hash128 key, char *buf, size_t size)
{
  char name[TL_CACHE_NAME_MAX + 1];
  entry_name(key, name);
  tl_fmt(buf, size, "%s/%s", dir, name);
}

uint64_t tl_cache_entry_bytes(const tl_cache_entry *e)
{
  return TL_CACHE_HEADER + (uint64_t)e->ptx_len + (e->cubin ? (uint64_t)e->cubin_len : 0);
}

static bool is_hex(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

static bool is_entry_name(const char *name)
{
  return strlen(name) == 32 + sizeof TL_CACHE_SUFFIX - 1 && is_hex(name, 32) &&
         strcmp(name + 32, TL_CACHE_SUFFIX) == 0;
}

static const char temp_letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* .KEYHEX.XXXXXX, as temp_name makes them (and mkstemp made them before). */
static bool is_temp_name(const char *name)
{
  if (strlen(name) != TL_CACHE_NAME_MAX || name[0] != '.' || !is_hex(name + 1, 32) || name[33] != '.')
    return false;
  for (int i = 34; i < 40; i++)
    if (!strchr(temp_letters, name[i]))
      return false;
  return true;
}

/* A name for a new temporary: mkstemp's pattern, which has no form relative to a descriptor, so
 * the six characters come from a hash of the process, the thread, the clock and a counter (the
 * file is created with O_EXCL: a name that exists already is drawn again). */
static void temp_name(const char *hex, unsigned attempt, char name[TL_CACHE_NAME_MAX + 1])
{
  static uint64_t counter;
  const uint64_t n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const uint64_t fields[] = {
      (uint64_t)getpid(), (uint64_t)(uintptr_t)&now, (uint64_t)now.tv_sec, (uint64_t)now.tv_nsec, n, attempt};
  uint64_t v = tl_hash(fields, sizeof fields, TL_HASH_SEED_KEY).lo;
  char letters[7];
  for (int i = 0; i < 6; i++, v /= sizeof temp_letters - 1)
    letters[i] = temp_letters[v % (sizeof temp_letters - 1)];
  letters[6] = 0;
  tl_fmt(name, TL_CACHE_NAME_MAX + 1, ".%s.%s", hex, letters);
}

/* Why a file or folder of the cache must not be trusted, or NULL: unless it is this user's and
 * nobody else may write it, someone else decides what the cache serves (a device binary it
 * serves is run on the user's GPU). */
static const char *untrusted(const struct stat *st, char *buf, size_t size)
{
  if (st->st_uid != geteuid()) {
    tl_fmt(buf, size, "is owned by uid %u, not by this user (uid %u)", (unsigned)st->st_uid,
           (unsigned)geteuid());
    return buf;
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    tl_fmt(buf, size, "is writable by %s (mode %04o)",
           (st->st_mode & S_IWGRP) && (st->st_mode & S_IWOTH) ? "group and others"
           : st->st_mode & S_IWGRP                            ? "its group"
                                                              : "others",
           (unsigned)(st->st_mode & 07777));
    return buf;
  }
  return NULL;
}

typedef enum { DIR_OPEN, DIR_ABSENT, DIR_UNTRUSTED, DIR_FAILED } dir_status;

/* Opens the folder for one operation, which then names files relative to the descriptor: what
 * was checked is what is used, even if the path is made to point elsewhere meanwhile. A symbolic
 * link to the folder is followed (a user may keep the cache elsewhere): where it leads must pass
 * the same check. */
static dir_status open_dir(const char *dir, int *fd, char *why, size_t why_size)
{
  *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return DIR_ABSENT;
    tl_fmt(why, why_size, "cannot open the cache folder %s: %s", dir, strerror(errno));
    return DIR_FAILED;
  }
  struct stat st;
  char problem[128];
  if (fstat(*fd, &st) != 0) {
    tl_fmt(why, why_size, "cannot stat the cache folder %s: %s", dir, strerror(errno));
  } else if (untrusted(&st, problem, sizeof problem)) {
    tl_fmt(why, why_size, "the cache folder %s %s", dir, problem);
    close(*fd);
    *fd = -1;
    return DIR_UNTRUSTED;
  } else {
    return DIR_OPEN;
  }
  close(*fd);
  *fd = -1;
  return DIR_FAILED;
}

/* read() until `len` bytes or the end; the bytes read. */
static size_t read_full(int fd, unsigned char *data, size_t len)
{
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, data + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  return got;
}

/* The entry behind fd (opened non-blocking, not yet known to be a regular file): what it is, who
 * owns it, its header, and only then the rest. */
static tl_cache_read_result read_entry(int fd, const char *path, tl_hash128 key, const char *compiler_id,
                                       tl_cache_entry *out, char *why, size_t why_size)
{
  struct stat st;
  char problem[128];
  if (fstat(fd, &st) != 0) {
    tl_fmt(why, why_size, "cannot stat %s: %s", path, strerror(errno));
    return TL_CACHE_REJECTED;
  }
  if (!S_ISREG(st.st_mode)) {
    tl_fmt(why, why_size, "%s is not a regular file", path);
    return TL_CACHE_REJECTED;
  }
  if (untrusted(&st, problem, sizeof problem)) {
    tl_fmt(why, why_size, "%s %s", path, problem);
    return TL_CACHE_UNTRUSTED;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK))
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  unsigned char header[TL_CACHE_HEADER];
  const uint64_t size = (uint64_t)st.st_size;
  char reason[512];
  if (size < TL_CACHE_HEADER) {
    tl_fmt(why, why_size, "%s: truncated: %llu bytes, less than the %u-byte header", path,
           (unsigned long long)size, TL_CACHE_HEADER);
    return TL_CACHE_REJECTED;
  }
  if (read_full(fd, header, sizeof header) != sizeof header) {
    tl_fmt(why, why_size, "%s: short read", path);
    return TL_CACHE_REJECTED;
  }
  if (!check_header(header, size, key, compiler_id, reason, sizeof reason)) {
    tl_fmt(why, why_size, "%s: %s", path, reason);
    return TL_CACHE_REJECTED;
  }
  unsigned char *data = malloc((size_t)size);
  if (!data) {
    tl_fmt(why, why_size, "out of memory reading %s", path);
    return TL_CACHE_REJECTED;
  }
  memcpy(data, header, sizeof header);
  const size_t rest = (size_t)size - sizeof header;
  bool ok = read_full(fd, data + sizeof header, rest) == rest;
  if (!ok)
    tl_fmt(why, why_size, "%s: short read", path);
  else if (!(ok = tl_cache_decode(data, (size_t)size, key, compiler_id, out, reason, sizeof reason)))
    tl_fmt(why, why_size, "%s: %s", path, reason);
  free(data);
  if (!ok)
    return TL_CACHE_REJECTED;
  futimens(fd, NULL); /* used now: the last to go when the folder is trimmed (best effort) */
  return TL_CACHE_HIT;
}

tl_cache_read_result tl_cache_read(const char *dir, tl_hash128 key, const char *compiler_id,
                                   tl_cache_entry *out, char *why, size_t why_size)
{
  memset(out, 0, sizeof *out);
  char path[TL_CACHE_PATH_MAX], name[TL_CACHE_NAME_MAX + 1];
  tl_cache_entry_path(dir, key, path, sizeof path);
  entry_name(key, name);
  int dfd;
  switch (open_dir(dir, &dfd, why, why_size)) {
  case DIR_OPEN: break;
  case DIR_ABSENT: return TL_CACHE_ABSENT;
  case DIR_UNTRUSTED: return TL_CACHE_FOLDER_UNTRUSTED;
  case DIR_FAILED: return TL_CACHE_REJECTED;
  }
  /* O_NONBLOCK: a FIFO opened for reading would wait for a writer, forever. O_NOFOLLOW: a symbolic
   * link is not an entry, wherever it points. */
  const int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  const int saved = errno;
  close(dfd);
  if (fd < 0) {
    if (saved == ENOENT)
      return TL_CACHE_ABSENT;
    tl_fmt(why, why_size, "%s: %s", path, saved == ELOOP ? "a symbolic link, not an entry" : strerror(saved));
    return TL_CACHE_REJECTED;
  }
  const tl_cache_read_result r = read_entry(fd, path, key, compiler_id, out, why, why_size);
  close(fd);
  return r;
}

/* mkdir -p, the new folders private to the user (they hold what the user compiled). */
static bool make_dirs(const char *dir, char *why, size_t why_size)
{
  char path[TL_CACHE_PATH_MAX];
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

tl_cache_write_result tl_cache_write(const char *dir, tl_hash128 key, const char *compiler_id,
                                     const tl_cache_entry *e, char *why, size_t why_size)
{
  char path[TL_CACHE_PATH_MAX], name[TL_CACHE_NAME_MAX + 1], tmp[TL_CACHE_NAME_MAX + 1], hex[33];
  tl_hash_hex(key, hex);
  entry_name(key, name);
  tl_cache_entry_path(dir, key, path, sizeof path);
  if (tl_cache_entry_bytes(e) > TL_CACHE_ENTRY_MAX) {
    tl_fmt(why, why_size, "%s: %llu bytes, more than an entry may hold (%llu)", path,
           (unsigned long long)tl_cache_entry_bytes(e), (unsigned long long)TL_CACHE_ENTRY_MAX);
    return TL_CACHE_WRITE_FAILED;
  }
  unsigned char *data;
  size_t len;
  if (!tl_cache_encode(key, compiler_id, e, &data, &len)) {
    tl_fmt(why, why_size, "cannot encode the entry (out of memory, or compiler id too long)");
    return TL_CACHE_WRITE_FAILED;
  }
  int dfd = -1;
  dir_status ds = make_dirs(dir, why, why_size) ? open_dir(dir, &dfd, why, why_size) : DIR_FAILED;
  if (ds != DIR_OPEN) {
    if (ds == DIR_ABSENT)
      tl_fmt(why, why_size, "cannot open the cache folder %s", dir);
    free(data);
    return ds == DIR_UNTRUSTED ? TL_CACHE_WRITE_FOLDER_UNTRUSTED : TL_CACHE_WRITE_FAILED;
  }
  /* A new name in the same folder (rename() does not cross file systems); the leading dot keeps it
   * out of readers' way. O_EXCL | O_NOFOLLOW: never a file or link someone put there first. */
  int fd = -1;
  for (unsigned attempt = 0; fd < 0 && attempt < 100; attempt++) {
    temp_name(hex, attempt, tmp);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) {
    tl_fmt(why, why_size, "cannot create a file in %s: %s", dir, strerror(errno));
    free(data);
    close(dfd);
    return TL_CACHE_WRITE_FAILED;
  }
  bool ok = write_all(fd, data, len);
  int saved = errno;
  ok &= close(fd) == 0;
  free(data);
  if (ok && renameat(dfd, tmp, dfd, name) != 0) {
    saved = errno;
    ok = false;
  }
  if (!ok) {
    tl_fmt(why, why_size, "cannot write %s: %s", path, strerror(saved));
    unlinkat(dfd, tmp, 0);
  }
  close(dfd);
  return ok ? TL_CACHE_WRITTEN : TL_CACHE_WRITE_FAILED;
}

/* ----------------------------------------------------------------------------------- trimming */

typedef struct disk_entry {
  char name[TL_CACHE_NAME_MAX + 1];
  uint64_t bytes;
  struct timespec used; /* modification time: written, or last read (tl_cache_read touches it) */
} disk_entry;

static int least_recent_first(const void *a, const void *b)
{
  const disk_entry *x = a, *y = b;
  if (x->used.tv_sec != y->used.tv_sec)
    return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
  if (x->used.tv_nsec != y->used.tv_nsec)
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

bool tl_cache_trim(const char *dir, uint64_t limit, const char *keep, int64_t stale_before,
                   tl_cache_trim_result *out, char *why, size_t why_size)
{
  memset(out, 0, sizeof *out);
  int dfd;
  switch (open_dir(dir, &dfd, why, why_size)) {
  case DIR_OPEN: break;
  case DIR_ABSENT: return true; /* nothing to trim */
  case DIR_UNTRUSTED: out->folder_untrusted = true; return false;
  case DIR_FAILED: return false;
  }
  DIR *d = fdopendir(dfd);
  if (!d) {
    tl_fmt(why, why_size, "cannot list the cache folder %s: %s", dir, strerror(errno));
    close(dfd);
    return false;
  }
  disk_entry *entries = NULL;
  size_t count = 0, cap = 0;
  bool ok = true;
  struct dirent *de;
  while ((de = readdir(d))) {
    const bool temp = is_temp_name(de->d_name);
    struct stat st;
    if ((!temp && !is_entry_name(de->d_name)) || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue; /* not the cache's, gone meanwhile, or not a file: left alone */
    if (temp) {
      if ((int64_t)st.st_mtim.tv_sec < stale_before && unlinkat(dfd, de->d_name, 0) == 0)
        out->temporaries++;
      continue;
    }
    if (count == cap) {
      cap = cap ? 2 * cap : 64;
      disk_entry *grown = realloc(entries, cap * sizeof *grown);
      if (!grown) {
        tl_fmt(why, why_size, "out of memory listing the cache folder %s", dir);
        ok = false;
        break;
      }
      entries = grown;
    }
    disk_entry *e = &entries[count++];
    tl_fmt(e->name, sizeof e->name, "%s", de->d_name);
    e->bytes = (uint64_t)st.st_size;
    e->used = st.st_mtim;
    out->bytes += e->bytes;
  }
  if (ok && out->bytes > limit) {
    qsort(entries, count, sizeof *entries, least_recent_first);
    for (size_t i = 0; i < count && out->bytes > limit; i++) {
      if (keep && strcmp(entries[i].name, keep) == 0)
        continue;
      if (unlinkat(dfd, entries[i].name, 0) == 0) {
        out->evicted++;
        out->evicted_bytes += entries[i].bytes;
      } else if (errno != ENOENT) {
        continue; /* still there */
      }
      out->bytes -= entries[i].bytes;
    }
  }
  free(entries);
  closedir(d); /* closes dfd */
  return ok;
}
