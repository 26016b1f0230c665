/* jit.c: .tl source to a loaded module, through the cache. The JIT library (tilec_jit) is this
 * file, cache.c and hash.c; it links the compiler (tilec_lib, LLVM) and the runtime, which stays
 * free of LLVM.
 *
 * The path of one tl_module_compile:
 *
 *   key = hash(source, arch, -O, defines, kernel, compiler build)
 *   memory table --hit--> entry          (PTX + device binary)
 *      | miss
 *   disk DIR/KEY.tljit --valid--> entry  (copied into memory)
 *      | absent or rejected (logged)
 *   tilec_compile --> PTX
 *
 *   entry without a binary for this device --> cuLink* (the driver's PTX compiler, the slow part)
 *   --> store in memory and on disk --> load the binary, metadata from the PTX --> tl_module
 *
 * On the CPU device the path stops at the PTX, for its metadata, and the module runs the source in
 * the interpreter instead (cpu.c).
 *
 * The cache is a mutex-protected table plus the folder; compilations run outside the lock, so
 * threads compiling different kernels never wait on each other (two threads compiling the same
 * kernel at once both compile, and the second store wins: the entries are equal).
 *
 * The folder is trimmed (stale temporaries removed, least recently used entries beyond the disk
 * limit removed) at a cache's first write, when its limit is set, and whenever its count of the
 * folder's bytes (the last trim's, plus its own writes since) passes the limit: one listing of the
 * folder per process in the common case, not one per write.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "file.h"              /* runtime/file.h: the one whole-file reader */
#include "jit_internal.h"
#include "libtilec_internal.h" /* compiler/: tilec_compile_flags (TL_JIT_TMA_ONLY) */
#include "runtime_internal.h"
#include "target.h"            /* ir/target.h: the target table the compiler reads too */

/* ----------------------------------------------------------------------------------------- arch */

const char *tl_jit_arch_for(int cc_major, int cc_minor)
{
  const Target *t = target_for_device(cc_major, cc_minor);
  return t ? t->name : NULL;
}

/* "arch \"device\" needs a context: name a target (sm_80 .. sm_90a)" */
static void device_needs_context(char *err, size_t err_size)
{
  tl_fmt(err, err_size, "arch \"device\" needs a context: name a target (%s .. %s)", targets[0].name,
         targets[ntargets - 1].name);
}

/* ---------------------------------------------------------------------------------------- cache */

#define BUCKETS 64

typedef struct mem_entry {
  tl_hash128 key;
  tl_cache_entry e;
  size_t bytes;      /* what e holds: PTX and device binary */
  uint64_t last_use; /* the table's clock at the last lookup or store */
  struct mem_entry *next;
} mem_entry;

struct tl_jit_cache {
  pthread_mutex_t lock; /* guards table and stats */
  char *dir;            /* "" when the disk cache is off */
  bool memory;
  bool off;             /* $TILEC_CACHE_DISABLE: nothing cached at all */
  bool log_stderr;      /* $TILEC_DEBUG */
  void (*log)(void *user, int level, const char *message);
  void *log_user;
  mem_entry *table[BUCKETS];
  size_t mem_bytes, mem_limit; /* held in the table; the most it may hold */
  uint64_t clock;              /* ticks at every lookup hit and store */
  uint64_t disk_limit;         /* the most bytes of entries the folder may hold */
  uint64_t disk_bytes;         /* the folder's entries at the last trim, plus this cache's writes */
  bool disk_trimmed;           /* the folder was trimmed since the cache was made */
  bool folder_refused;         /* an untrusted folder was reported (it is, once) */
  tl_jit_stats stats;
};

static bool env_flag(const char *name)
{
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
debug(tl_jit_cache *cache, const char *fmt, ...)
{
  if (!cache || (!cache->log && !cache->log_stderr))
    return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (cache->log)
    cache->log(cache->log_user, 0, msg);
  else
    fprintf(stderr, "tilec-jit: debug: %s\n", msg);
}

#define COUNT(cache, field)               \
  do {                                    \
    pthread_mutex_lock(&(cache)->lock);   \
    (cache)->stats.field++;               \
    pthread_mutex_unlock(&(cache)->lock); \
  } while (0)

tl_status tl_jit_cache_create(const char *dir, unsigned flags, tl_jit_cache **out, char *err, size_t err_size)
{
  if (out)
    *out = NULL;
  if (!out) {
    tl_fmt(err, err_size, "tl_jit_cache_create: out is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  if (flags & ~(unsigned)(TL_JIT_CACHE_NO_DISK | TL_JIT_CACHE_NO_MEMORY)) {
    tl_fmt(err, err_size, "tl_jit_cache_create: unknown flags 0x%x", flags);
    return TL_ERR_BAD_ARGUMENT;
  }
  tl_jit_cache *c = calloc(1, sizeof *c);
  if (!c) {
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->off = env_flag("TILEC_CACHE_DISABLE");
  c->log_stderr = env_flag("TILEC_DEBUG");
  c->memory = !c->off && !(flags & TL_JIT_CACHE_NO_MEMORY);
  c->mem_limit = TL_JIT_MEMORY_LIMIT;
  c->disk_limit = TL_JIT_DISK_LIMIT;
  /* A name that does not fit is refused, never cut to a prefix (another folder); one from the
   * environment turns the disk cache off instead, as an unset one does. */
  char *path = NULL;
  if (dir) {
    if (!(path = strdup(dir))) {
      pthread_mutex_destroy(&c->lock);
      free(c);
      tl_fmt(err, err_size, "out of memory");
      return TL_ERR_OUT_OF_MEMORY;
    }
  } else if (!c->off && !(flags & TL_JIT_CACHE_NO_DISK)) {
    path = tl_cache_default_dir();
    if (!path)
      debug(c, "no cache folder: set TILEC_CACHE_DIR or HOME; the disk cache is off");
  }
  size_t n = path ? strlen(path) : 0;
  while (n > 1 && path[n - 1] == '/') /* a trailing slash would double in entry paths */
    path[--n] = 0;
  if (n > TL_CACHE_DIR_MAX) {
    if (dir) {
      tl_fmt(err, err_size,
             "tl_jit_cache_create: the cache folder's name is too long (%zu bytes, at most %u)", n,
             TL_CACHE_DIR_MAX);
      free(path);
      pthread_mutex_destroy(&c->lock);
      free(c);
      return TL_ERR_BAD_ARGUMENT;
    }
    debug(c,
          "the default cache folder's name (from TILEC_CACHE_DIR, XDG_CACHE_HOME or HOME) is "
          "too long (%zu bytes, at most %u); the disk cache is off",
          n, TL_CACHE_DIR_MAX);
    path[0] = 0;
  }
  if (path && (c->off || (flags & TL_JIT_CACHE_NO_DISK)))
    path[0] = 0;
  c->dir = path ? path : strdup("");
  if (!c->dir) {
    pthread_mutex_destroy(&c->lock);
    free(c);
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  *out = c;
  tl_fmt(err, err_size, "%s", "");
  return TL_OK;
}

void tl_jit_cache_destroy(tl_jit_cache *c)
{
  if (!c)
    return;
  for (int b = 0; b < BUCKETS; b++)
    for (mem_entry *m = c->table[b], *next; m; m = next) {
      next = m->next;
      tl_cache_entry_free(&m->e);
      free(m);
    }
  pthread_mutex_destroy(&c->lock);
  free(c->dir);
  free(c);
}

const char *tl_jit_cache_dir(const tl_jit_cache *c) { return c ? c->dir : ""; }

void tl_jit_cache_set_log(tl_jit_cache *c, void (*log)(void *user, int level, const char *message),
                          void *user)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  c->log = log;
  c->log_user = user;
  pthread_mutex_unlock(&c->lock);
}

/* An untrusted folder is skipped on every use, and said once. */
static void refuse_folder(tl_jit_cache *c, const char *why)
{
  pthread_mutex_lock(&c->lock);
  const bool first = !c->folder_refused;
  c->folder_refused = true;
  if (first)
    c->stats.disk_untrusted++;
  pthread_mutex_unlock(&c->lock);
  if (first)
    debug(c,
          "%s: the disk cache is not used (make the folder yours and writable only by you, or "
          "choose another one)",
          why);
}

/* Trim the folder to the limit, never removing `keep` (the entry just written). */
static void trim(tl_jit_cache *c, uint64_t limit, const char *keep)
{
  tl_cache_trim_result r;
  char why[1024] = "";
  const int64_t stale_before = (int64_t)time(NULL) - TL_CACHE_STALE_SECONDS;
  const bool ok = tl_cache_trim(c->dir, limit, keep, stale_before, &r, why, sizeof why);
  pthread_mutex_lock(&c->lock);
  if (ok) {
    c->disk_trimmed = true;
    c->disk_bytes = r.bytes;
  }
  c->stats.disk_evictions += r.evicted;
  c->stats.disk_temporaries_removed += r.temporaries;
  pthread_mutex_unlock(&c->lock);
  if (!ok && r.folder_untrusted)
    refuse_folder(c, why);
  else if (!ok)
    debug(c, "cache folder not trimmed: %s", why);
  if (r.temporaries)
    debug(c, "removed %llu temporary files left in %s by writers that stopped",
          (unsigned long long)r.temporaries, c->dir);
  if (r.evicted)
    debug(c,
          "removed the %llu least recently used entries of %s (%llu bytes): %llu bytes left, "
          "the limit is %llu",
          (unsigned long long)r.evicted, c->dir, (unsigned long long)r.evicted_bytes,
          (unsigned long long)r.bytes, (unsigned long long)limit);
}

void tl_jit_cache_set_disk_limit(tl_jit_cache *c, uint64_t bytes)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  c->disk_limit = bytes;
  pthread_mutex_unlock(&c->lock);
  if (c->dir[0])
    trim(c, bytes, NULL);
}

void tl_jit_cache_stats(const tl_jit_cache *c, tl_jit_stats *out)
{
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  if (!c)
    return;
  pthread_mutex_lock((pthread_mutex_t *)&c->lock);
  *out = c->stats;
  out->memory_bytes = c->mem_bytes;
  pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
}

static bool entry_copy(tl_cache_entry *dst, const tl_cache_entry *src)
{
  memset(dst, 0, sizeof *dst);
  dst->ptx = malloc(src->ptx_len + 1);
  dst->cubin = src->cubin ? malloc(src->cubin_len) : NULL;
  if (!dst->ptx || (src->cubin && !dst->cubin)) {
    tl_cache_entry_free(dst);
    return false;
  }
  memcpy(dst->ptx, src->ptx, src->ptx_len + 1);
  dst->ptx_len = src->ptx_len;
  if (src->cubin) {
    memcpy(dst->cubin, src->cubin, src->cubin_len);
    dst->cubin_len = src->cubin_len;
    dst->cubin_cc = src->cubin_cc;
    dst->cubin_driver = src->cubin_driver;
  }
  return true;
}

/* Copies out under the lock, so that the caller never holds a pointer into the table. */
static bool memory_lookup(tl_jit_cache *c, tl_hash128 key, tl_cache_entry *out)
{
  bool found = false;
  pthread_mutex_lock(&c->lock);
  for (mem_entry *m = c->table[key.lo % BUCKETS]; m; m = m->next)
    if (tl_hash_equal(m->key, key)) {
      found = entry_copy(out, &m->e);
      m->last_use = ++c->clock;
      break;
    }
  if (found)
    c->stats.memory_hits++;
  pthread_mutex_unlock(&c->lock);
  return found;
}

/* Unlinks and frees the least recently used entry other than `keep`; false if there is none.
 * Under the lock. A linear scan: the table holds what fits in the limit, a few thousand at most. */
static bool memory_evict_one(tl_jit_cache *c, const mem_entry *keep)
{
  mem_entry **victim = NULL;
  for (int b = 0; b < BUCKETS; b++)
    for (mem_entry **link = &c->table[b]; *link; link = &(*link)->next)
      if (*link != keep && (!victim || (*link)->last_use < (*victim)->last_use))
        victim = link;
  if (!victim)
    return false;
  mem_entry *m = *victim;
  *victim = m->next;
  c->mem_bytes -= m->bytes;
  c->stats.memory_evictions++;
  tl_cache_entry_free(&m->e);
  free(m);
  return true;
}

static void memory_store(tl_jit_cache *c, tl_hash128 key, const tl_cache_entry *e)
{
  size_t bytes = e->ptx_len + e->cubin_len;
  tl_cache_entry copy;
  pthread_mutex_lock(&c->lock);
  bool fits = bytes <= c->mem_limit;
  pthread_mutex_unlock(&c->lock);
  if (!fits || !entry_copy(&copy, e))
    return; /* larger than the whole table, or out of memory: the cache is an optimization */
  pthread_mutex_lock(&c->lock);
  mem_entry **link = &c->table[key.lo % BUCKETS];
  while (*link && !tl_hash_equal((*link)->key, key))
    link = &(*link)->next;
  if (*link) {
    c->mem_bytes -= (*link)->bytes;
    tl_cache_entry_free(&(*link)->e);
    (*link)->e = copy;
  } else if ((*link = calloc(1, sizeof **link))) {
    (*link)->key = key;
    (*link)->e = copy;
  } else {
    tl_cache_entry_free(&copy);
    pthread_mutex_unlock(&c->lock);
    return;
  }
  mem_entry *m = *link;
  m->bytes = bytes;
  m->last_use = ++c->clock;
  c->mem_bytes += bytes;
  while (c->mem_bytes > c->mem_limit && memory_evict_one(c, m))
    ;
  if (c->mem_bytes > c->mem_limit) /* the limit shrank below this entry alone */
    memory_evict_one(c, NULL);
  pthread_mutex_unlock(&c->lock);
}

void tl_jit_cache_set_memory_limit(tl_jit_cache *c, size_t bytes)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  c->mem_limit = bytes;
  while (c->mem_bytes > c->mem_limit && memory_evict_one(c, NULL))
    ;
  pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------------------------ one request */

typedef enum { FROM_MEMORY, FROM_DISK, FROM_COMPILER } entry_source;

typedef struct request {
  const char *src;
  size_t len;
  tl_jit_options opt;
  const char *arch; /* resolved */
  bool use_memory, use_disk;
  tl_hash128 key;
  char compiler_id[TL_CACHE_ID_BYTES];
  char hex[33];
} request;

/* Checks the options, fills in the defaults, and computes the key. arch_default is what a NULL
 * arch means (the device's target, or target_default() without a device); NULL: "device" is not
 * allowed. */
static tl_status prepare(request *rq, tl_jit_cache *cache, const char *src, size_t len,
                         const tl_jit_options *opt, const char *device_arch, char *err, size_t err_size)
{
  memset(rq, 0, sizeof *rq);
  rq->src = src;
  rq->len = len;
  rq->opt = opt ? *opt : tl_jit_default_options();
  const tl_jit_options *o = &rq->opt;
  if (!src && len) {
    tl_fmt(err, err_size, "the source is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  if (o->opt_level < 0 || o->opt_level > 3) {
    tl_fmt(err, err_size, "optimization level %d is out of range 0..3", o->opt_level);
    return TL_ERR_BAD_ARGUMENT;
  }
  if (o->ndefines < 0 || (o->ndefines && !o->defines)) {
    tl_fmt(err, err_size, "bad list of defines (%d, %s)", o->ndefines, o->defines ? "set" : "NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  for (int i = 0; i < o->ndefines; i++)
    if (!o->defines[i].name || !*o->defines[i].name || !o->defines[i].value) {
      tl_fmt(err, err_size, "define %d has no name or no value", i);
      return TL_ERR_BAD_ARGUMENT;
    }
  if (o->flags & ~(unsigned)(TL_JIT_NO_CACHE | TL_JIT_NO_DISK_CACHE | TL_JIT_LINE_INFO | TL_JIT_TMA_ONLY)) {
    tl_fmt(err, err_size, "unknown flags 0x%x", o->flags);
    return TL_ERR_BAD_ARGUMENT;
  }
  if (!o->arch || strcmp(o->arch, "device") == 0) {
    if (!device_arch) {
      device_needs_context(err, err_size);
      return TL_ERR_BAD_ARGUMENT;
    }
    rq->arch = device_arch;
  } else if (!tilec_arch_supported(o->arch)) {
    char names[128];
    tl_fmt(err, err_size, "unknown target '%s'; expected %s or device", o->arch,
           target_list(names, sizeof names, ", "));
    return TL_ERR_BAD_ARGUMENT;
  } else {
    rq->arch = o->arch;
  }
  const bool off = !cache || cache->off || (o->flags & TL_JIT_NO_CACHE);
  rq->use_memory = !off && cache->memory;
  rq->use_disk = !off && cache->dir[0] && !(o->flags & TL_JIT_NO_DISK_CACHE);
  tl_jit_compiler_id(rq->compiler_id, sizeof rq->compiler_id);
  const int level = o->opt_level | (o->flags & TL_JIT_LINE_INFO ? TL_JIT_KEY_LINE_INFO : 0) |
                    (o->flags & TL_JIT_TMA_ONLY ? TL_JIT_KEY_TMA_ONLY : 0);
  if (!tl_jit_key_for(src, len, rq->arch, level, o->defines, o->ndefines, o->kernel, rq->compiler_id,
                      &rq->key)) {
    tl_fmt(err, err_size, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  tl_hash_hex(rq->key, rq->hex);
  return TL_OK;
}

/* tilec_compile to PTX, diagnostics to the callback, errors rendered into err. */
static tl_status compile(tl_jit_cache *cache, const request *rq, tl_cache_entry *e, char *err,
                         size_t err_size)
{
  tilec_options to = {0};
  to.filename = rq->opt.filename ? rq->opt.filename : "<jit>";
  to.arch = rq->arch;
  to.opt_level = rq->opt.opt_level;
  to.line_info = (rq->opt.flags & TL_JIT_LINE_INFO) != 0;
  to.defines = rq->opt.defines;
  to.ndefines = rq->opt.ndefines;
  to.kernel = rq->opt.kernel;
  to.emit = TILEC_EMIT_PTX;
  tilec_result *r = NULL;
  const unsigned flags = rq->opt.flags & TL_JIT_TMA_ONLY ? TILEC_COMPILE_TMA_ONLY : 0;
  tilec_status ts = tilec_compile_flags(rq->src ? rq->src : "", rq->len, &to, flags, &r);
  if (cache)
    COUNT(cache, compiles);
  if (rq->opt.on_diagnostic)
    for (int i = 0; i < tilec_result_num_diagnostics(r); i++) {
      tilec_diagnostic d = tilec_result_diagnostic(r, i);
      rq->opt.on_diagnostic(rq->opt.user, &d);
    }
  tl_status st = TL_OK;
  if (ts != TILEC_OK || !tilec_result_output(r)) {
    const char *text = r ? tilec_result_diagnostics_text(r) : NULL;
    tl_fmt(err, err_size, "%s", text && *text ? text : "compilation failed (no diagnostics)\n");
    st = ts == TILEC_ERR_INVALID_ARGUMENT ? TL_ERR_BAD_ARGUMENT : !r ? TL_ERR_OUT_OF_MEMORY : TL_ERR_COMPILE;
  } else {
    memset(e, 0, sizeof *e);
    e->ptx_len = strlen(tilec_result_output(r));
    e->ptx = malloc(e->ptx_len + 1);
    if (!e->ptx) {
      tl_fmt(err, err_size, "out of memory");
      st = TL_ERR_OUT_OF_MEMORY;
    } else {
      memcpy(e->ptx, tilec_result_output(r), e->ptx_len + 1);
    }
  }
  tilec_result_free(r);
  return st;
}

/* The entry for the request: from memory, from disk, or compiled. */
static tl_status obtain(tl_jit_cache *cache, const request *rq, tl_cache_entry *e, entry_source *from,
                        char *err, size_t err_size)
{
  memset(e, 0, sizeof *e);
  if (rq->use_memory && memory_lookup(cache, rq->key, e)) {
    *from = FROM_MEMORY;
    return TL_OK;
  }
  if (rq->use_disk) {
    char why[1024] = "";
    switch (tl_cache_read(cache->dir, rq->key, rq->compiler_id, e, why, sizeof why)) {
    case TL_CACHE_HIT:
      COUNT(cache, disk_hits);
      if (rq->use_memory)
        memory_store(cache, rq->key, e);
      *from = FROM_DISK;
      return TL_OK;
    case TL_CACHE_REJECTED:
      COUNT(cache, disk_rejected);
      debug(cache, "cache entry rejected, rebuilding it: %s", why);
      break;
    case TL_CACHE_UNTRUSTED:
      COUNT(cache, disk_untrusted);
      debug(cache, "cache entry refused, rebuilding it: %s", why);
      break;
    case TL_CACHE_FOLDER_UNTRUSTED: refuse_folder(cache, why); break;
    case TL_CACHE_ABSENT: break;
    }
  }
  *from = FROM_COMPILER;
  return compile(cache, rq, e, err, err_size);
}

static void store(tl_jit_cache *cache, const request *rq, const tl_cache_entry *e)
{
  if (rq->use_memory)
    memory_store(cache, rq->key, e);
  if (!rq->use_disk)
    return;
  const uint64_t bytes = tl_cache_entry_bytes(e);
  pthread_mutex_lock(&cache->lock);
  const uint64_t limit = cache->disk_limit;
  pthread_mutex_unlock(&cache->lock);
  if (bytes > limit) {
    debug(cache, "cache entry %s not written: %llu bytes, more than the folder's limit (%llu)", rq->hex,
          (unsigned long long)bytes, (unsigned long long)limit);
    return;
  }
  char why[1024] = "";
  switch (tl_cache_write(cache->dir, rq->key, rq->compiler_id, e, why, sizeof why)) {
  case TL_CACHE_WRITTEN: break;
  case TL_CACHE_WRITE_FOLDER_UNTRUSTED: refuse_folder(cache, why); return;
  case TL_CACHE_WRITE_FAILED:
    COUNT(cache, disk_write_failures);
    debug(cache, "cache entry %s not written: %s", rq->hex, why);
    return;
  }
  pthread_mutex_lock(&cache->lock);
  cache->stats.disk_writes++;
  cache->disk_bytes += bytes;
  const bool due = !cache->disk_trimmed || cache->disk_bytes > limit;
  pthread_mutex_unlock(&cache->lock);
  if (due) {
    char name[64];
    tl_fmt(name, sizeof name, "%s" TL_CACHE_SUFFIX, rq->hex);
    trim(cache, limit, name);
  }
}

/* ------------------------------------------------------------------------------- public: keys */

tl_status tl_jit_key(const char *src, size_t len, const tl_jit_options *opt, char hex[33], char *err,
                     size_t err_size)
{
  if (hex)
    hex[0] = 0;
  if (!hex) {
    tl_fmt(err, err_size, "tl_jit_key: hex is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  if (!opt || !opt->arch) {
    tl_fmt(err, err_size, "tl_jit_key: the options must name the arch");
    return TL_ERR_BAD_ARGUMENT;
  }
  request rq;
  tl_status st = prepare(&rq, NULL, src, len, opt, NULL, err, err_size);
  if (st == TL_OK)
    memcpy(hex, rq.hex, 33);
  return st;
}

/* ------------------------------------------------------------------------ public: driver-free */

tl_status tl_jit_compile_ptx(tl_jit_cache *cache, const char *src, size_t len, const tl_jit_options *opt,
                             char **ptx, char *err, size_t err_size)
{
  if (ptx)
    *ptx = NULL;
  if (!ptx) {
    tl_fmt(err, err_size, "tl_jit_compile_ptx: ptx is NULL");
    return TL_ERR_BAD_ARGUMENT;
  }
  request rq;
  tl_status st = prepare(&rq, cache, src, len, opt, target_default()->name, err, err_size);
  if (st == TL_OK && opt && opt->arch && strcmp(opt->arch, "device") == 0) {
    device_needs_context(err, err_size);
    st = TL_ERR_BAD_ARGUMENT;
  }
  if (st != TL_OK)
    return st;
  tl_cache_entry e;
  entry_source from;
  st = obtain(cache, &rq, &e, &from, err, err_size);
  if (st != TL_OK)
    return st;
  if (from == FROM_COMPILER)
    store(cache, &rq, &e);
  *ptx = e.ptx; /* handed over */
  e.ptx = NULL;
  tl_cache_entry_free(&e);
  tl_fmt(err, err_size, "%s", "");
  return TL_OK;
}

/* --------------------------------------------------------------------------- public: contexts */

/* What the JIT hangs on a context: its own cache (made on first use), or one it was given. */
typedef struct context_state {
  tl_jit_cache *own;
  tl_jit_cache *shared;
} context_state;

static void context_state_destroy(void *p)
{
  context_state *s = p;
  tl_jit_cache_destroy(s->own);
  free(s);
}

static context_state *state_of(tl_context *ctx)
{
  context_state *s = tl_context_jit_state(ctx);
  if (!s) {
    s = calloc(1, sizeof *s);
    if (s)
      tl_context_set_jit_state(ctx, s, context_state_destroy);
  }
  return s;
}

tl_status tl_context_set_jit_cache(tl_context *ctx, tl_jit_cache *cache)
{
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  context_state *s = state_of(ctx);
  if (!s)
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  s->shared = cache;
  return tl_context_succeed(ctx);
}

tl_jit_cache *tl_context_jit_cache(tl_context *ctx)
{
  if (!ctx)
    return NULL;
  context_state *s = state_of(ctx);
  if (!s) {
    tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  if (s->shared)
    return s->shared;
  if (!s->own) {
    char err[512];
    const tl_status st = tl_jit_cache_create(NULL, 0, &s->own, err, sizeof err);
    if (st != TL_OK) {
      tl_context_fail(ctx, st, "%s", err);
      return NULL;
    }
  }
  return s->own;
}

/* Load the entry's device binary if it was made for this device and driver; else have the driver
 * make one from the PTX and load that. *made says whether the entry gained a new binary (to be
 * stored). With no cache at all, load the PTX directly: there is nothing to keep a binary in.
 * The CPU device has no binary: its module is the source, for the interpreter (cpu.c). */
static tl_status load_entry(tl_context *ctx, tl_jit_cache *cache, const request *rq, tl_cache_entry *e,
                            bool *made, tl_module **out)
{
  *made = false;
  if (tl_context_is_cpu(ctx))
    return tl_jit_load_cpu(ctx, rq->src, rq->len, &rq->opt, rq->arch, e->ptx, out);
  if (!rq->use_memory && !rq->use_disk)
    return tl_module_load_image(ctx, e->ptx, e->ptx, out);
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  const uint32_t cc = (uint32_t)(dev.cc_major * 10 + dev.cc_minor);
  const uint32_t driver = (uint32_t)dev.driver_version;
  if (e->cubin && e->cubin_cc == cc && e->cubin_driver == driver) {
    tl_status st = tl_module_load_image(ctx, e->ptx, e->cubin, out);
    if (st == TL_OK) {
      COUNT(cache, binary_loads);
      return st;
    }
    if (st != TL_ERR_PTX_REJECTED)
      return st; /* bad metadata, out of memory: the binary is not the problem */
    debug(cache, "cached device binary of %s refused by the driver, rebuilding it: %s", rq->hex,
          tl_context_message(ctx));
  } else if (e->cubin) {
    debug(cache,
          "cached device binary of %s is for sm_%u / driver %u, this is sm_%u / driver %u: "
          "rebuilding it",
          rq->hex, e->cubin_cc, e->cubin_driver, cc, driver);
  }
  free(e->cubin);
  e->cubin = NULL;
  e->cubin_len = 0;
  void *image = NULL;
  size_t size = 0;
  tl_status st = tl_context_link_ptx(ctx, e->ptx, &image, &size);
  COUNT(cache, links);
  if (st != TL_OK)
    return st;
  e->cubin = image;
  e->cubin_len = size;
  e->cubin_cc = cc;
  e->cubin_driver = driver;
  *made = true;
  return tl_module_load_image(ctx, e->ptx, e->cubin, out);
}

/* tl_module_compile without the variants: the module for `opt` as it is. */
static tl_status module_compile(tl_context *ctx, const char *src, size_t len, const tl_jit_options *opt,
                                tl_module **out)
{
  if (out)
    *out = NULL;
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (!out)
    return tl_context_fail(ctx, TL_ERR_BAD_ARGUMENT, "tl_module_compile: out is NULL");
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  const char *device_arch = tl_jit_arch_for(dev.cc_major, dev.cc_minor);
  if (!device_arch && (!opt || !opt->arch || strcmp(opt->arch, "device") == 0))
    return tl_context_fail(ctx, TL_ERR_BAD_ARGUMENT, "device %d (%s) is sm_%d%d; tilec targets %s and newer",
                           dev.ordinal, dev.name, dev.cc_major, dev.cc_minor, targets[0].name);
  tl_jit_cache *cache = tl_context_jit_cache(ctx);
  if (!cache)
    return TL_ERR_OUT_OF_MEMORY;

  char *msg = malloc(TL_MESSAGE_MAX);
  if (!msg)
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  msg[0] = 0;
  request rq;
  tl_cache_entry e = {0};
  entry_source from = FROM_COMPILER;
  tl_status st = prepare(&rq, cache, src, len, opt, device_arch, msg, TL_MESSAGE_MAX);
  if (st == TL_OK)
    st = obtain(cache, &rq, &e, &from, msg, TL_MESSAGE_MAX);
  if (st != TL_OK) {
    /* diagnostics end with a newline; the context's message reads better without */
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
      msg[--n] = 0;
    st = tl_context_fail(ctx, st, "%s", msg);
    free(msg);
    return st;
  }
  free(msg);
  bool made = false;
  st = load_entry(ctx, cache, &rq, &e, &made, out);
  if (st == TL_OK && (from == FROM_COMPILER || made))
    store(cache, &rq, &e);
  tl_cache_entry_free(&e);
  return st;
}

/* ------------------------------------------------------------------------ launch-constant variants
 * A module whose kernels have launch constants keeps what compiled it (the source, the options and
 * their defines, copied), so that tl_launch can have the kernel compiled for other values: the same
 * source and options, the one kernel, and each launch constant pinned by a define (NAME=VALUE), so
 * that the variant has none left. Its cache key is that of any compilation with those defines: the
 * memory and disk caches serve variants as they serve modules. */
typedef struct variant_source {
  char *src;
  size_t len;
  tl_jit_options opt;
  tilec_define *defines;   /* copies of the caller's opt.ndefines (variant_compile adds its own) */
  char *strings;           /* the defines' names and values, the filename, the arch */
  int nkernels;            /* of the module, in its metadata's order: */
  char **names;            /*   their names */
  tl_tune_entries *tuning; /*   their stored tuning results (n == 0: none) */
} variant_source;

static void variant_destroy(void *state)
{
  variant_source *v = state;
  if (!v)
    return;
  free(v->src);
  free(v->defines);
  free(v->strings);
  for (int i = 0; i < v->nkernels; i++) {
    if (v->names)
      free(v->names[i]);
    if (v->tuning)
      tl_tune_entries_free(&v->tuning[i]);
  }
  free(v->names);
  free(v->tuning);
  free(v);
}

/* The kernel's index in the module, or -1. */
static int variant_kernel(const variant_source *v, const char *name)
{
  for (int i = 0; i < v->nkernels; i++)
    if (!strcmp(v->names[i], name))
      return i;
  return -1;
}

/* The tuning result for this launch's bucket of sizes (tl_tune_bucket over the size params), or
 * -1. Costs nothing for a kernel that has none. */
static int variant_tuned(void *state, const tl_kernel_info *info, const tl_launch_plan *plan)
{
  const variant_source *v = state;
  int k = variant_kernel(v, info->name);
  if (k < 0 || v->tuning[k].n == 0 || info->nsizes > 64)
    return -1;
  tilec_define sizes[64];
  char values[64][16];
  int n = 0;
  for (int p = info->nargs; p < info->nargs + info->nsizes; p++) { /* the sizes; then tensor maps */
    int32_t value;
    memcpy(&value, plan->params[p], sizeof value);
    snprintf(values[n], sizeof values[n], "%d", (int)value);
    sizes[n] = (tilec_define){info->params[p].name, values[n]};
    n++;
  }
  char bucket[1024];
  int index = -1;
  if (n && tl_tune_bucket(sizes, n, bucket, sizeof bucket))
    tl_tune_find(&v->tuning[k], bucket, &index);
  return index;
}

/* The variant: the module's defines, then each launch constant pinned to its value, then the
 * tuning result's defines (last, so that they win: a tuned BN beats the formula's); with `both`,
 * without TL_JIT_TMA_ONLY (a launch that cannot have tensor maps). */
static tl_status variant_compile(tl_context *ctx, void *state, const tl_kernel_info *info,
                                 const int64_t *values, int tuned, bool both, tl_module **out)
{
  const variant_source *v = state;
  tl_jit_options o = v->opt;
  if (both)
    o.flags &= ~(unsigned)TL_JIT_TMA_ONLY;
  const int n = o.ndefines;
  int k = variant_kernel(v, info->name);
  const char *extra = k >= 0 && tuned >= 0 && tuned < v->tuning[k].n ? v->tuning[k].lines[tuned].defines : "";
  char *tuned_text = strdup(extra);
  int ntuned = 0;
  for (const char *c = extra; *c; c++)
    ntuned += *c == '=';
  char text[TL_MAX_LAUNCH_CONSTS][24];
  tilec_define *d = malloc(sizeof *d * (size_t)(n + info->nconsts + ntuned + 1));
  if (!d || !tuned_text) {
    free(d);
    free(tuned_text);
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (n)
    memcpy(d, v->defines, sizeof *d * (size_t)n);
  for (int i = 0; i < info->nconsts; i++) {
    snprintf(text[i], sizeof text[i], "%lld", (long long)values[i]);
    d[n + i] = (tilec_define){info->consts[i].name, text[i]};
  }
  int nd = n + info->nconsts;
  for (char *item = strtok(tuned_text, " "); item; item = strtok(NULL, " ")) {
    char *eq = strchr(item, '=');
    *eq = 0; /* tl_tune_read checked every item has one */
    d[nd++] = (tilec_define){item, eq + 1};
  }
  o.defines = d;
  o.ndefines = nd;
  o.kernel = info->name;
  tl_status st = module_compile(ctx, v->src, v->len, &o, out);
  free(d);
  free(tuned_text);
  return st;
}

static const tl_variant_ops variant_ops = {variant_tuned, variant_compile, variant_destroy};

/* A copy of what compiled the module, for variant_compile; NULL when out of memory. */
static variant_source *variant_source_new(const char *src, size_t len, const tl_jit_options *opt)
{
  variant_source *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->opt = opt ? *opt : tl_jit_default_options();
  size_t bytes = 0;
  for (int i = 0; i < v->opt.ndefines; i++)
    bytes += strlen(v->opt.defines[i].name) + strlen(v->opt.defines[i].value) + 2;
  bytes += (v->opt.filename ? strlen(v->opt.filename) : 0) + (v->opt.arch ? strlen(v->opt.arch) : 0) + 2;
  v->src = malloc(len + 1);
  v->strings = malloc(bytes);
  v->defines = calloc((size_t)v->opt.ndefines + 1, sizeof *v->defines);
  if (!v->src || !v->strings || !v->defines) {
    variant_destroy(v);
    return NULL;
  }
  if (len)
    memcpy(v->src, src, len);
  v->src[len] = 0;
  v->len = len;
  char *at = v->strings;
#define KEEP(dst, s)           \
  do {                         \
    size_t n_ = strlen(s) + 1; \
    memcpy(at, (s), n_);       \
    (dst) = at;                \
    at += n_;                  \
  } while (0)
  for (int i = 0; i < v->opt.ndefines; i++) {
    KEEP(v->defines[i].name, v->opt.defines[i].name);
    KEEP(v->defines[i].value, v->opt.defines[i].value);
  }
  if (v->opt.filename)
    KEEP(v->opt.filename, v->opt.filename);
  if (v->opt.arch)
    KEEP(v->opt.arch, v->opt.arch);
#undef KEEP
  v->opt.defines = v->defines;
  v->opt.kernel = NULL;
  /* a variant compiles at some later launch, when the caller's user pointer may be gone: its
   * diagnostics go to the context's message only */
  v->opt.on_diagnostic = NULL;
  v->opt.user = NULL;
  return v;
}

tl_status tl_module_compile(tl_context *ctx, const char *src, size_t len, const tl_jit_options *opt,
                            tl_module **out)
{
  tl_device_info dev = {0};
  if (ctx)
    tl_context_device(ctx, &dev);
  const char *arch = opt && opt->arch && strcmp(opt->arch, "device")
                         ? opt->arch
                         : tl_jit_arch_for(dev.cc_major, dev.cc_minor);
  /* On sm_90a, where launches can have tensor maps: the TMA forms alone (TL_JIT_TMA_ONLY, half the
   * compile time of a GEMM); a launch that cannot have maps runs a variant with both forms
   * (tl_launch), compiled then. */
  tl_jit_options with = opt ? *opt : tl_jit_default_options();
  if (tl_context_tma_only(ctx, arch))
    with.flags |= TL_JIT_TMA_ONLY;
  opt = &with;
  tl_status st = module_compile(ctx, src, len, opt, out);
  if (st != TL_OK)
    return st;
  const tl_meta *meta = tl_module_meta(*out);
  const int nk = tl_meta_kernel_count(meta);
  /* tilec tune's stored results for each kernel (tl_jit_tune_store), by the same settings */
  tl_jit_cache *cache = tl_context_jit_cache(ctx);
  tl_tune_entries *tuning = calloc((size_t)nk + 1, sizeof *tuning);
  bool any = false;
  for (int i = 0; i < nk && tuning; i++) {
    char path[TL_CACHE_PATH_MAX];
    const tl_jit_options o = opt ? *opt : tl_jit_default_options();
    if (cache && !cache->off && arch &&
        tl_tune_path(cache->dir, src, len, arch, o.opt_level, o.defines, o.ndefines,
                     tl_meta_kernel(meta, i)->name, path, sizeof path) &&
        tl_tune_read(path, &tuning[i]))
      debug(cache, "kernel %s: %d tuning results from %s", tl_meta_kernel(meta, i)->name, tuning[i].n, path);
    any |= tl_meta_kernel(meta, i)->nconsts > 0 || tuning[i].n > 0 || tl_meta_kernel(meta, i)->tma_required;
  }
  variant_source *v = any && tuning ? variant_source_new(src, len, opt) : NULL;
  if (v) {
    v->nkernels = nk;
    v->tuning = tuning;
    v->names = calloc((size_t)nk + 1, sizeof *v->names);
    for (int i = 0; i < nk && v->names; i++)
      v->names[i] = strdup(tl_meta_kernel(meta, i)->name);
    tuning = NULL;
    bool named = v->names != NULL;
    for (int i = 0; named && i < nk; i++)
      named = v->names[i] != NULL;
    if (!named) {
      variant_destroy(v);
      v = NULL;
    }
  }
  for (int i = 0; tuning && i < nk; i++)
    tl_tune_entries_free(&tuning[i]);
  free(tuning);
  if (!any)
    return st;
  if (!v) {
    tl_module_unload(*out);
    *out = NULL;
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  tl_module_set_variants(*out, &variant_ops, v);
  return st;
}

tl_status tl_module_compile_file(tl_context *ctx, const char *path, const tl_jit_options *opt,
                                 tl_module **out)
{
  if (out)
    *out = NULL;
  if (!ctx)
    return TL_ERR_BAD_ARGUMENT;
  if (!path || !out)
    return tl_context_fail(ctx, TL_ERR_BAD_ARGUMENT, "tl_module_compile_file: %s is NULL",
                           path ? "out" : "path");
  char *text;
  size_t len;
  int err;
  switch (tl_read_file(path, (size_t)1 << 30, &text, &len, &err)) {
  case TL_READ_OK: break;
  case TL_READ_CANNOT_OPEN: return tl_context_fail(ctx, TL_ERR_IO, "cannot open %s: %s", path, strerror(err));
  case TL_READ_NO_MEMORY:
  case TL_READ_TOO_LARGE: /* past 1 GiB: more than any source tilec_compile takes */
    return tl_context_fail(ctx, TL_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
  case TL_READ_FAILED: return tl_context_fail(ctx, TL_ERR_IO, "cannot read %s", path);
  }
  tl_jit_options o = opt ? *opt : tl_jit_default_options();
  if (!o.filename)
    o.filename = path;
  tl_status st = tl_module_compile(ctx, text, len, &o, out);
  free(text);
  return st;
}

/* ------------------------------------------------------------------------------------ tuning */

/* The tuning file and the bucket for (cache, src, opt, sizes); false with the message in err. */
static tl_status tune_where(tl_jit_cache *cache, const char *src, size_t len, const tl_jit_options *opt,
                            const tilec_define *sizes, int nsizes, char *path, char *bucket, char *err,
                            size_t err_size)
{
  if (!cache || !opt || (!src && len) || !opt->kernel || !*opt->kernel || !opt->arch ||
      !tilec_arch_supported(opt->arch) || (nsizes && !sizes) || nsizes < 1 || opt->ndefines < 0 ||
      (opt->ndefines && !opt->defines)) {
    tl_fmt(err, err_size,
           "tuning results need a cache, the source, options naming the kernel and a target (not "
           "\"device\"), and the kernel's sizes");
    return TL_ERR_BAD_ARGUMENT;
  }
  if (!tl_tune_bucket(sizes, nsizes, bucket, 1024)) {
    tl_fmt(err, err_size, "the sizes must be NAME=VALUE with a whole number from 0 (at most 64 of them)");
    return TL_ERR_BAD_ARGUMENT;
  }
  if (cache->off || !cache->dir[0] ||
      !tl_tune_path(cache->dir, src ? src : "", len, opt->arch, opt->opt_level, opt->defines, opt->ndefines,
                    opt->kernel, path, TL_CACHE_PATH_MAX)) {
    tl_fmt(err, err_size, "the cache has no folder to keep tuning results in");
    return TL_ERR_IO;
  }
  return TL_OK;
}

tl_status tl_jit_tune_store(tl_jit_cache *cache, const char *src, size_t len, const tl_jit_options *opt,
                            const tilec_define *sizes, int nsizes, const tilec_define *best, int nbest,
                            char *err, size_t err_size)
{
  char path[TL_CACHE_PATH_MAX], bucket[1024], defines[4096];
  tl_status st = tune_where(cache, src, len, opt, sizes, nsizes, path, bucket, err, err_size);
  if (st != TL_OK)
    return st;
  size_t used = 0;
  if (nbest < 1 || !best) {
    tl_fmt(err, err_size, "no defines to store");
    return TL_ERR_BAD_ARGUMENT;
  }
  for (int i = 0; i < nbest; i++) {
    const char *n = best[i].name, *v = best[i].value;
    if (!n || !v || !*n || !*v || strpbrk(n, " =\n") || strpbrk(v, " \n")) {
      tl_fmt(err, err_size, "define %d is not NAME=VALUE without spaces", i);
      return TL_ERR_BAD_ARGUMENT;
    }
    int w = snprintf(defines + used, sizeof defines - used, "%s%s=%s", i ? " " : "", n, v);
    if (w < 0 || (size_t)w >= sizeof defines - used) {
      tl_fmt(err, err_size, "the defines are too long to store");
      return TL_ERR_BAD_ARGUMENT;
    }
    used += (size_t)w;
  }
  if (!tl_tune_write(path, bucket, defines, err, err_size))
    return TL_ERR_IO;
  debug(cache, "stored tuning result %s for %s in %s", defines, bucket, path);
  return TL_OK;
}

tl_status tl_jit_tune_lookup(tl_jit_cache *cache, const char *src, size_t len, const tl_jit_options *opt,
                             const tilec_define *sizes, int nsizes, char *defines, size_t size, char *err,
                             size_t err_size)
{
  char path[TL_CACHE_PATH_MAX], bucket[1024];
  if (!defines || !size) {
    tl_fmt(err, err_size, "tl_jit_tune_lookup: no buffer for the defines");
    return TL_ERR_BAD_ARGUMENT;
  }
  defines[0] = 0;
  tl_status st = tune_where(cache, src, len, opt, sizes, nsizes, path, bucket, err, err_size);
  if (st != TL_OK)
    return st;
  tl_tune_entries t;
  const char *found = tl_tune_read(path, &t) ? tl_tune_find(&t, bucket, NULL) : NULL;
  if (found)
    snprintf(defines, size, "%s", found);
  else
    tl_fmt(err, err_size, "no tuning result for %s of kernel '%s'", bucket, opt->kernel);
  tl_tune_entries_free(&t);
  return found ? TL_OK : TL_ERR_NOT_FOUND;
}
