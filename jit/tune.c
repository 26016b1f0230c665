/* tune.c: what `tilec tune` found best, kept beside the cache's entries and used by later launches
 * (include/tilec_jit.h, "Tuning"; docs/c-api.md).
 *
 * One file per (source, arch, -O, defines, kernel, compiler): DIR/tune/KEYHEX.tltune, KEYHEX the
 * cache key of compiling that kernel alone (tl_jit_key_for), so that a changed source, compiler or
 * define never reads another's results. The file is text:
 *
 *   tilec-tune v1
 *   K=4096,M=16,N=4096 BM=64 BN=128
 *   K=4096,M=4096,N=4096 BM=128 BN=256 STAGES=4
 *
 * one line per bucket: the kernel's sizes, each rounded up to a power of two, by name, then the
 * defines that won there. Storing replaces the line of the same bucket (the file is written whole
 * to a temporary and renamed over the old one). Reading trusts nothing: the folder and the file
 * must be the user's and writable by no one else, the file a regular one of at most 64 KiB, every
 * line well formed; anything else reads as no results (and is replaced by the next store).
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
#include "runtime_internal.h" /* tl_fmt */

#define TUNE_MAGIC "tilec-tune v1\n"
#define TUNE_FILE_MAX 65536

/* The rounded value of a size: the smallest power of two >= v (1 for v <= 1). */
static int64_t round_up(int64_t v)
{
  int64_t p = 1;
  while (p < v && p <= INT64_MAX / 2)
    p *= 2;
  return p;
}

static int by_name(const void *a, const void *b)
{
  return strcmp(((const tilec_define *)a)->name, ((const tilec_define *)b)->name);
}

bool tl_tune_bucket(const tilec_define *sizes, int n, char *out, size_t size)
{
  tilec_define sorted[64];
  if (n < 1 || n > 64)
    return false;
  memcpy(sorted, sizes, sizeof *sorted * (size_t)n);
  qsort(sorted, (size_t)n, sizeof *sorted, by_name);
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    char *end;
    errno = 0;
    long long v = strtoll(sorted[i].value, &end, 0);
    if (!*sorted[i].value || *end || errno || v < 0 || strchr(sorted[i].name, ',') ||
        strchr(sorted[i].name, '=') || strchr(sorted[i].name, ' '))
      return false;
    int w = snprintf(out + used, size - used, "%s%s=%lld", i ? "," : "", sorted[i].name,
                     (long long)round_up(v));
    if (w < 0 || (size_t)w >= size - used)
      return false;
    used += (size_t)w;
  }
  return true;
}

bool tl_tune_path(const char *dir, const char *src, size_t len, const char *arch, int opt_level,
                  const tilec_define *defines, int ndefines, const char *kernel, char *path, size_t size)
{
  char id[TL_CACHE_ID_BYTES], hex[33];
  tl_hash128 key;
  if (!dir || !*dir ||
      !tl_jit_key_for(src, len, arch, opt_level, defines, ndefines, kernel, tl_jit_compiler_id(id, sizeof id),
                      &key))
    return false;
  tl_hash_hex(key, hex);
  int w = snprintf(path, size, "%s/tune/%s.tltune", dir, hex);
  return w > 0 && (size_t)w < size;
}

/* The file's text (NUL-terminated, malloc'd), or NULL when absent or not to be trusted. */
static char *read_trusted(const char *path)
{
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & 022) &&
      st.st_size > 0 && st.st_size <= TUNE_FILE_MAX && (text = malloc((size_t)st.st_size + 1))) {
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    text[got] = 0;
    if (got != (size_t)st.st_size || memchr(text, 0, got)) {
      free(text);
      text = NULL;
    }
  }
  close(fd);
  return text;
}

void tl_tune_entries_free(tl_tune_entries *t)
{
  if (!t)
    return;
  free(t->text);
  free(t->lines);
  memset(t, 0, sizeof *t);
}

/* Splits text into its lines in place; false if it is not a well-formed file. */
static bool parse_entries(char *text, tl_tune_entries *t)
{
  if (strncmp(text, TUNE_MAGIC, strlen(TUNE_MAGIC)))
    return false;
  char *s = text + strlen(TUNE_MAGIC);
  int cap = 0;
  for (char *c = s; *c; c++)
    cap += *c == '\n';
  t->lines = calloc((size_t)cap + 1, sizeof *t->lines);
  if (!t->lines)
    return false;
  while (*s) {
    char *nl = strchr(s, '\n');
    if (!nl)
      return false; /* the last line ends with a newline: a short write is not a file */
    *nl = 0;
    char *space = strchr(s, ' ');
    if (!space || space == s || !strchr(s, '=') || memchr(s, ',', (size_t)(space - s)) == s)
      return false;
    for (char *d = space + 1; *d;) {
      char *end = strchr(d, ' ');
      size_t n = end ? (size_t)(end - d) : strlen(d);
      char *eq = memchr(d, '=', n);
      if (!n || !eq || eq == d || eq == d + n - 1)
        return false;
      d = end ? end + 1 : d + n;
    }
    *space = 0;
    t->lines[t->n].bucket = s;
    t->lines[t->n].defines = space + 1;
    t->n++;
    s = nl + 1;
  }
  return true;
}

bool tl_tune_read(const char *path, tl_tune_entries *out)
{
  memset(out, 0, sizeof *out);
  out->text = read_trusted(path);
  if (!out->text)
    return false;
  if (!parse_entries(out->text, out)) {
    tl_tune_entries_free(out);
    return false;
  }
  return true;
}

const char *tl_tune_find(const tl_tune_entries *t, const char *bucket, int *index)
{
  for (int i = t->n - 1; i >= 0; i--)
    if (!strcmp(t->lines[i].bucket, bucket)) {
      if (index)
        *index = i;
      return t->lines[i].defines;
    }
  return NULL;
}

bool tl_tune_write(const char *path, const char *bucket, const char *defines, char *why, size_t why_size)
{
  /* the folder: DIR/tune, made if absent (0700) */
  char folder[TL_CACHE_PATH_MAX];
  snprintf(folder, sizeof folder, "%s", path);
  char *slash = strrchr(folder, '/');
  if (!slash) {
    tl_fmt(why, why_size, "%s: not a path", path);
    return false;
  }
  *slash = 0;
  char *parent_end = strrchr(folder, '/');
  if (parent_end) {
    *parent_end = 0;
    if (mkdir(folder, 0700) != 0 && errno != EEXIST) {
      tl_fmt(why, why_size, "cannot make %s: %s", folder, strerror(errno));
      return false;
    }
    *parent_end = '/';
  }
  if (mkdir(folder, 0700) != 0 && errno != EEXIST) {
    tl_fmt(why, why_size, "cannot make %s: %s", folder, strerror(errno));
    return false;
  }
  struct stat st;
  if (lstat(folder, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
    tl_fmt(why, why_size, "%s is not a folder of this user's that no one else can write", folder);
    return false;
  }
  /* the old lines but the bucket's, then the new one */
  tl_tune_entries old;
  bool had = tl_tune_read(path, &old);
  size_t bytes = strlen(TUNE_MAGIC) + strlen(bucket) + strlen(defines) + 3;
  for (int i = 0; had && i < old.n; i++)
    bytes += strlen(old.lines[i].bucket) + strlen(old.lines[i].defines) + 2;
  char *text = malloc(bytes);
  if (!text) {
    tl_tune_entries_free(&old);
    tl_fmt(why, why_size, "out of memory");
    return false;
  }
  size_t used = (size_t)snprintf(text, bytes, "%s", TUNE_MAGIC);
  for (int i = 0; had && i < old.n; i++)
    if (strcmp(old.lines[i].bucket, bucket))
      used += (size_t)snprintf(text + used, bytes - used, "%s %s\n", old.lines[i].bucket,
                               old.lines[i].defines);
  used += (size_t)snprintf(text + used, bytes - used, "%s %s\n", bucket, defines);
  tl_tune_entries_free(&old);
  if (used > TUNE_FILE_MAX) {
    free(text);
    tl_fmt(why, why_size, "%s would hold more than %d bytes", path, TUNE_FILE_MAX);
    return false;
  }
  char tmp[TL_CACHE_PATH_MAX + 32];
  int fd = -1;
  for (unsigned attempt = 0; fd < 0 && attempt < 100; attempt++) {
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), attempt);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  bool ok = fd >= 0;
  int saved = errno;
  for (size_t done = 0; ok && done < used;) {
    ssize_t n = write(fd, text + done, used - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    saved = errno;
    done += n > 0 ? (size_t)n : 0;
  }
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    if (fd >= 0)
      unlink(tmp);
    tl_fmt(why, why_size, "cannot write %s: %s", path, strerror(saved));
  }
  free(text);
  return ok;
}
