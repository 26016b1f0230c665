/* tilec_jit.h: compile .tl source inside a host and launch it: the JIT.
 *
 * The JIT library (CMake target tilec_jit) joins the compiler library (tilec.h) and the runtime
 * (tilec_runtime.h): tl_module_compile turns .tl source into a loaded tl_module whose kernels launch
 * with tl_launch's checked arguments. Between them sits a cache, in memory and on disk, keyed by a
 * hash of the source, the options, the target and the compiler's build; the disk cache keeps the PTX
 * and the device binary the driver made from it, so a second process skips both compilers.
 *
 * Conventions are the runtime's (tilec_runtime.h): a tl_status, the message in the context (or in an
 * (err, err_size) buffer for the functions without one), NULL is TL_ERR_BAD_ARGUMENT, never a crash.
 * docs/c-api.md has the whole contract.
 */
#ifndef TILEC_JIT_H
#define TILEC_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec.h"
#include "tilec_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================================= options */

enum {
  TL_JIT_NO_CACHE = 1u << 0,      /* neither read nor write any cache: always compile */
  TL_JIT_NO_DISK_CACHE = 1u << 1, /* use the memory cache only */
  TL_JIT_LINE_INFO = 1u << 2,     /* .file / .loc of the source's lines in the PTX (tilec -lineinfo);
                                     cached apart from the same source without them */
  TL_JIT_TMA_ONLY = 1u << 3,      /* tilec --tma-only (tilec_options.tma_only): the TMA forms alone,
                                     cached apart. tl_module_compile sets it itself on a GPU whose
                                     launches can have tensor maps (docs/c-api.md) */
};

typedef struct tl_jit_options {
  const char *filename;        /* the name diagnostics print; NULL: "<jit>" */
  const char *arch;            /* sm_80 .. sm_90a; NULL or "device": the context's device (see
                                  tl_jit_arch_for); tl_jit_compile_ptx, with no device, needs one */
  int opt_level;               /* 0..3 (a zeroed struct is -O0: start from tl_jit_default_options) */
  const tilec_define *defines; /* -D NAME=VALUE overrides of kernel constants */
  int ndefines;
  const char *kernel;          /* compile only this kernel; NULL: all */
  unsigned flags;              /* TL_JIT_NO_CACHE, TL_JIT_NO_DISK_CACHE, TL_JIT_LINE_INFO, TL_JIT_TMA_ONLY */
  /* Called once per diagnostic (errors, warnings, notes) of a compilation that runs, in order,
   * before the call returns; the record's strings live only during the callback. A cache hit
   * compiles nothing and calls nothing. NULL: none. */
  void (*on_diagnostic)(void *user, const tilec_diagnostic *diagnostic);
  void *user;
} tl_jit_options;

/* -O3, the context's device, every cache: what NULL options mean. */
static inline tl_jit_options tl_jit_default_options(void)
{
  tl_jit_options o;
  o.filename = NULL;
  o.arch = NULL;
  o.opt_level = 3;
  o.defines = NULL;
  o.ndefines = 0;
  o.kernel = NULL;
  o.flags = 0;
  o.on_diagnostic = NULL;
  o.user = NULL;
  return o;
}

/* The target tilec compiles for on a device of compute capability major.minor: sm_90a on 9.0 (the
 * architecture-specific features need exactly that device), else the newest of sm_80, sm_86,
 * sm_89, sm_90 that the device runs (sm_90 on 10.0 and 12.0). NULL below 8.0. A static string. */
TILEC_API const char *tl_jit_arch_for(int cc_major, int cc_minor);

/* =========================================================================================== cache */

/* A cache: a table in memory and (optionally) a folder on disk. Thread-safe: several threads and
 * several contexts may share one. Every context has its own by default (created on first use with
 * the environment's settings); share one between contexts with tl_context_set_jit_cache. */
typedef struct tl_jit_cache tl_jit_cache;

enum {
  TL_JIT_CACHE_NO_DISK = 1u << 0,   /* memory only */
  TL_JIT_CACHE_NO_MEMORY = 1u << 1, /* disk only */
};

/* dir: the folder of the disk cache; NULL: $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else
 * $HOME/.cache/tilec. It is created when first written (mode 0700). A dir longer than
 * TL_JIT_CACHE_DIR_MAX bytes (trailing slashes aside) is TL_ERR_BAD_ARGUMENT; a default that long
 * turns the disk cache off. The folder is used only while it is owned by the effective user and
 * not writable by group or others, and only entries that are regular files of that user, not
 * writable by group or others, are read: anything else is skipped (said once in the debug log,
 * counted in disk_untrusted). With $TILEC_CACHE_DISABLE set (to anything but "" or "0") every
 * cache created is off, memory and disk: everything compiles. Debug messages (an entry rejected
 * and why, a write that failed, a folder refused) go to the log callback (see
 * tl_jit_cache_set_log), or to stderr when $TILEC_DEBUG is set, else nowhere. */
#define TL_JIT_CACHE_DIR_MAX 4054u
TILEC_API tl_status tl_jit_cache_create(const char *dir, unsigned flags, tl_jit_cache **out, char *err,
                                        size_t err_size);
TILEC_API void tl_jit_cache_destroy(tl_jit_cache *cache); /* NULL is fine; no context may still use it */
/* The disk folder, or "" when the disk cache is off. Owned by the cache. */
TILEC_API const char *tl_jit_cache_dir(const tl_jit_cache *cache);
/* Receive the cache's debug messages (level 0, the only one so far, is "debug"). */
TILEC_API void tl_jit_cache_set_log(tl_jit_cache *cache,
                                    void (*log)(void *user, int level, const char *message), void *user);
/* The most bytes (PTX and device binaries) the memory table keeps: beyond it the least recently
 * used entries are dropped from memory (their disk entries stay). Default TL_JIT_MEMORY_LIMIT;
 * 0 keeps nothing in memory; SIZE_MAX never drops. Entries beyond a lowered limit go at once. */
#define TL_JIT_MEMORY_LIMIT ((size_t)256 << 20)
TILEC_API void tl_jit_cache_set_memory_limit(tl_jit_cache *cache, size_t bytes);
/* The most bytes the folder's entries may take: beyond it the entries read or written least
 * recently are removed (by any cache that writes to the folder: at its first write, then whenever
 * its count of the folder passes the limit), and so are temporary files that writers which
 * stopped left behind. Default TL_JIT_DISK_LIMIT; an entry larger than the limit is not written,
 * so 0 writes nothing; UINT64_MAX removes no entry. Setting it trims the folder at once. */
#define TL_JIT_DISK_LIMIT ((uint64_t)1 << 30)
TILEC_API void tl_jit_cache_set_disk_limit(tl_jit_cache *cache, uint64_t bytes);

typedef struct tl_jit_stats {
  uint64_t compiles;                 /* tilec compilations (cache misses, or the cache off) */
  uint64_t memory_hits;              /* served from memory */
  uint64_t disk_hits;                /* served from a valid disk entry */
  uint64_t disk_rejected;            /* disk entries rejected (damaged, truncated, foreign): rebuilt */
  uint64_t disk_writes;              /* entries written */
  uint64_t disk_write_failures;
  uint64_t links;                    /* PTX -> device binary by the driver (contexts only) */
  uint64_t binary_loads;             /* modules loaded from a cached device binary, skipping the driver's
                                        PTX compiler */
  uint64_t memory_evictions;         /* entries dropped from memory to stay within its limit */
  uint64_t memory_bytes;             /* bytes the memory table holds now */
  uint64_t disk_untrusted;           /* entries refused (another user's, or writable by group or others;
                                        rebuilt), plus 1 once the folder itself was refused */
  uint64_t disk_evictions;           /* entries removed from the folder to stay within its limit */
  uint64_t disk_temporaries_removed; /* temporary files of crashed writers removed */
} tl_jit_stats;

TILEC_API void tl_jit_cache_stats(const tl_jit_cache *cache, tl_jit_stats *out); /* zeros for NULL */

/* The context uses `cache` from now on (NULL: back to its own). The context does not own it:
 * destroy the cache after every context that uses it. */
TILEC_API tl_status tl_context_set_jit_cache(tl_context *ctx, tl_jit_cache *cache);
/* The cache the context uses, creating its own if it has none yet; NULL on failure (message in the
 * context). */
TILEC_API tl_jit_cache *tl_context_jit_cache(tl_context *ctx);

/* The cache key of a compilation, as 32 hex digits: a hash of the source, the arch (which must be
 * given), the optimization level, the defines (normalized: the last value of each name, in name
 * order), the kernel selection, the compiler's build (tilec_build_id), TL_JIT_LINE_INFO and
 * TL_JIT_TMA_ONLY. Not in
 * the key, because they do not change the PTX: the filename, the callback and the other flags.
 * Needs no driver. */
TILEC_API tl_status tl_jit_key(const char *src, size_t len, const tl_jit_options *opt, char hex[33],
                               char *err, size_t err_size);

/* ========================================================================================= compile */

/* Source to PTX through `cache` (NULL: no cache), with no driver and no context: opt->arch must be
 * given (NULL means sm_90a, as tilec_compile). *ptx is malloc'd (free it with free()). A source
 * with errors gives TL_ERR_COMPILE with the rendered diagnostics in err. */
TILEC_API tl_status tl_jit_compile_ptx(tl_jit_cache *cache, const char *src, size_t len,
                                       const tl_jit_options *opt, char **ptx, char *err, size_t err_size);

/* Source to a loaded module: look the key up in the context's cache (memory, then disk), else
 * compile with tilec and have the driver make a device binary from the PTX; store both; load. A
 * cached device binary made for another device or driver is rebuilt from the cached PTX.
 *
 * Fails with TL_ERR_COMPILE (the message holds the diagnostics, rendered; opt->on_diagnostic gets
 * them as records), TL_ERR_BAD_ARGUMENT (NULL, an unknown arch, a device older than sm_80, a bad
 * opt_level or define list), TL_ERR_PTX_REJECTED, or what tl_module_load_ptx returns. A cache that
 * cannot be read or written is never an error: it is skipped (and logged at debug level). The
 * module is the caller's, as one from tl_module_load_ptx.
 *
 * On the CPU device (TL_DEVICE_CPU, $TILEC_DEVICE=cpu) the path stops at the PTX (cached as
 * usual), whose metadata the launches are checked against; the module keeps the source compiled
 * for the interpreter, which tl_launch runs ($TILEC_INTERP_LEVEL: tile, the default, or thread, the
 * lowering for the options' arch; another value is TL_ERR_BAD_ARGUMENT here). No device binary is
 * made or loaded. */
TILEC_API tl_status tl_module_compile(tl_context *ctx, const char *src, size_t len, const tl_jit_options *opt,
                                      tl_module **out);
/* The same for a file (TL_ERR_IO if it cannot be read); its path is the diagnostics' filename
 * unless opt->filename says otherwise. */
TILEC_API tl_status tl_module_compile_file(tl_context *ctx, const char *path, const tl_jit_options *opt,
                                           tl_module **out);

/* ========================================================================================== tuning */

/* What `tilec tune` found best for a kernel, kept beside the cache's entries (DIR/tune/, one file
 * per source, arch, -O, defines and kernel) and used by later launches: a module from
 * tl_module_compile with the same source and options reads the results of its kernels, and a
 * tl_launch whose sizes fall in a stored bucket runs the kernel compiled with the stored defines
 * (a variant, made once and kept, as for launch constants). A bucket is the kernel's sizes each
 * rounded up to a power of two ("K=4096,M=16,N=4096"), so one result serves a range of shapes.
 *
 * opt->kernel names the kernel and opt->arch must be a target (not NULL or "device": the device's
 * is tl_jit_arch_for); the other options as the modules that should use the result will be
 * compiled with (defines, opt_level). sizes: every size of the kernel, NAME and a decimal value;
 * best: the winning defines. TL_ERR_BAD_ARGUMENT for a bad argument, TL_ERR_IO when the cache has
 * no folder (or it cannot be written), with the message in err. */
TILEC_API tl_status tl_jit_tune_store(tl_jit_cache *cache, const char *src, size_t len,
                                      const tl_jit_options *opt, const tilec_define *sizes, int nsizes,
                                      const tilec_define *best, int nbest, char *err, size_t err_size);
/* The defines stored for the bucket of sizes, as "NAME=VALUE NAME=VALUE" in defines (size bytes):
 * TL_OK, TL_ERR_NOT_FOUND when there are none, or as tl_jit_tune_store. */
TILEC_API tl_status tl_jit_tune_lookup(tl_jit_cache *cache, const char *src, size_t len,
                                       const tl_jit_options *opt, const tilec_define *sizes, int nsizes,
                                       char *defines, size_t size, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* TILEC_JIT_H */
