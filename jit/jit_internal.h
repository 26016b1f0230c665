/* jit_internal.h: what the JIT library's files (hash.c, cache.c, jit.c) share, and what its unit
 * tests reach below the public API. Hosts use tilec_jit.h.
 *
 * Sections: hash.c (the 128-bit hash), cache.c (keys, the entry file format, the disk folder), cpu.c
 * (modules of the CPU device).
 */
#ifndef TILEC_JIT_INTERNAL_H
#define TILEC_JIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* XXH3's state is a full type here (tl_hasher holds one), and its functions are inlined into
 * hash.c: the JIT needs xxhash.h to build but no xxHash library to run. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tilec_jit.h"

/* ---------------------------------------------------------------------------------------- hash.c */

/* A 128-bit non-cryptographic hash, xxHash's XXH3-128: fast on the few kilobytes of a kernel's
 * source and PTX, every input bit reaching every output bit. Good against accidents (a cache key
 * colliding, a file damaged), not against an adversary who can write into the cache folder. */
typedef struct tl_hash128 {
  uint64_t lo, hi;
} tl_hash128;

/* Incremental form: init, update any number of times, final (which leaves the state usable). */
typedef struct tl_hasher {
  XXH3_state_t state;
} tl_hasher;

void tl_hasher_init(tl_hasher *h, uint64_t seed);
void tl_hasher_update(tl_hasher *h, const void *data, size_t len);
/* A field of a structured key: its length first, so that ("ab", "c") and ("a", "bc") differ. */
void tl_hasher_field(tl_hasher *h, const void *data, size_t len);
void tl_hasher_string(tl_hasher *h, const char *s); /* NULL hashes differently from "" */
tl_hash128 tl_hasher_final(const tl_hasher *h);

tl_hash128 tl_hash(const void *data, size_t len, uint64_t seed);
static inline bool tl_hash_equal(tl_hash128 a, tl_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }
/* 32 lowercase hex digits and a NUL: hi first. */
void tl_hash_hex(tl_hash128 h, char out[33]);

/* --------------------------------------------------------------------------------------- cache.c */

/* Seeds, one per use, so that a key never equals a checksum of the same bytes. */
#define TL_HASH_SEED_KEY 0x6b65792d74696c65ull /* "key-tile" */
#define TL_HASH_SEED_SUM 0x73756d2d74696c65ull /* "sum-tile" */

/* "tilec 0.1.0+BUILD_ID": what, besides the inputs, decides the PTX. Written into buf. */
const char *tl_jit_compiler_id(char *buf, size_t size);

/* The key of a compilation, for a compiler named `compiler_id` (tl_jit_compiler_id, or another one
 * in tests). `arch` is resolved (not NULL). Defines are normalized first: for each name only the
 * last value counts, and names are sorted, so the order of distinct names does not matter. The
 * filename, the diagnostics callback and the cache flags do not enter the key; TL_JIT_LINE_INFO and
 * TL_JIT_TMA_ONLY do, as opt_level + TL_JIT_KEY_LINE_INFO + TL_JIT_KEY_TMA_ONLY. */
/* Added to opt_level in a key: the PTX has line info (TL_JIT_LINE_INFO), the TMA forms alone
 * (TL_JIT_TMA_ONLY); keys without them are unchanged. */
#define TL_JIT_KEY_LINE_INFO 16
#define TL_JIT_KEY_TMA_ONLY 32
bool tl_jit_key_for(const char *src, size_t len, const char *arch, int opt_level, const tilec_define *defines,
                    int ndefines, const char *kernel, const char *compiler_id, tl_hash128 *out);

/* A cache entry in memory: the PTX (NUL-terminated; its metadata block is the kernels' signature)
 * and, when a driver made one, the device binary with what it was made for. */
typedef struct tl_cache_entry {
  char *ptx;
  size_t ptx_len;        /* without the NUL */
  void *cubin;           /* NULL: none yet */
  size_t cubin_len;
  uint32_t cubin_cc;     /* compute capability * 10 (90 for 9.0) of the device it was made for */
  uint32_t cubin_driver; /* the driver version that made it (13000) */
} tl_cache_entry;

void tl_cache_entry_free(tl_cache_entry *e); /* frees the buffers and zeroes the entry */

/* The entry file, little-endian, all of it covered by the checksum except the checksum itself:
 *
 *   0   8  magic "TILECJIT"
 *   8   4  format version (TL_CACHE_FORMAT)
 *   12  4  header bytes (TL_CACHE_HEADER)
 *   16  16 key (lo, hi)
 *   32  8  PTX bytes            40  8  device binary bytes (0: none)
 *   48  4  binary's cc * 10     52  4  binary's driver version
 *   56  64 compiler id, NUL-padded (an entry of another compiler is foreign: rebuilt)
 *   120 16 checksum (lo, hi) of bytes [0, 120) and of everything after the header
 *   136    PTX, then the device binary
 *
 * The file's size must be exactly the header plus both lengths: a truncated or extended file is
 * rejected before its checksum is even computed (on disk, before its payload is even read). */
#define TL_CACHE_MAGIC "TILECJIT"
#define TL_CACHE_FORMAT 2u
#define TL_CACHE_HEADER 136u
#define TL_CACHE_ID_BYTES 64u
#define TL_CACHE_SUFFIX ".tljit"

/* Serialize / parse the format above. Parsing fails (false, with the reason in why) on anything
 * but a complete, undamaged entry for this key and this compiler. */
bool tl_cache_encode(tl_hash128 key, const char *compiler_id, const tl_cache_entry *e, unsigned char **out,
                     size_t *out_len);
bool tl_cache_decode(const unsigned char *data, size_t len, tl_hash128 key, const char *compiler_id,
                     tl_cache_entry *out, char *why, size_t why_size);

/* The most bytes an entry may have (header, PTX and device binary): a header announcing more is
 * refused before anything else is read, and a bigger entry is never written. A tilec module's PTX
 * and binary are kilobytes to a few megabytes. */
#define TL_CACHE_ENTRY_MAX ((uint64_t)256 << 20)

/* The names the cache gives its files: entries KEYHEX.tljit, and temporaries .KEYHEX.XXXXXX (six
 * letters or digits) while a writer fills them. TL_CACHE_NAME_MAX is the longer of the two. */
#define TL_CACHE_NAME_MAX 40u
/* The longest folder name a cache takes (after trailing slashes are dropped): DIR/NAME of every
 * file the cache makes, and its NUL, fit in 4096 bytes (Linux's PATH_MAX). */
#define TL_CACHE_PATH_MAX 4096u
#define TL_CACHE_DIR_MAX (TL_CACHE_PATH_MAX - 2u - TL_CACHE_NAME_MAX)
/* A temporary older than this was left by a writer that crashed (a write takes milliseconds). */
#define TL_CACHE_STALE_SECONDS 600

/* The disk folder: $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else $HOME/.cache/tilec, malloc'd
 * whatever its length (the caller checks it against TL_CACHE_DIR_MAX). NULL when none can be
 * named (no HOME), or out of memory. */
char *tl_cache_default_dir(void);
/* DIR/KEYHEX.tljit */
void tl_cache_entry_path(const char *dir, tl_hash128 key, char *buf, size_t size);

/* What the cache accepts on disk, checked on every read and write through a descriptor of the
 * folder (so a folder swapped after the check is never used):
 *   - the folder (reached through symbolic links or not) is owned by the effective uid and is not
 *     writable by group or others; otherwise another user could plant entries in it;
 *   - an entry is a regular file (never followed through a symbolic link, never a FIFO or a
 *     device, which are opened non-blocking so that they cannot hang the reader), owned by the
 *     effective uid and not writable by group or others;
 *   - its header is read and checked (magic, format, compiler, key, lengths that add up to the
 *     file's size, each at most TL_CACHE_ENTRY_MAX) before the rest of it is. */
typedef enum tl_cache_read_result {
  TL_CACHE_HIT,
  TL_CACHE_ABSENT,           /* no file (or no folder): the normal miss */
  TL_CACHE_REJECTED,         /* not a valid entry (why says how): rebuild and overwrite */
  TL_CACHE_UNTRUSTED,        /* another user's, or writable by others: rebuild and overwrite */
  TL_CACHE_FOLDER_UNTRUSTED, /* the folder itself (why says how): the disk cache is skipped */
} tl_cache_read_result;

/* Reads and checks an entry; on a hit the file's modification time is set to now, which is what
 * "least recently used" means to tl_cache_trim. */
tl_cache_read_result tl_cache_read(const char *dir, tl_hash128 key, const char *compiler_id,
                                   tl_cache_entry *out, char *why, size_t why_size);

typedef enum tl_cache_write_result {
  TL_CACHE_WRITTEN,
  TL_CACHE_WRITE_FAILED,           /* why says how */
  TL_CACHE_WRITE_FOLDER_UNTRUSTED, /* the folder is not this user's alone: nothing written */
} tl_cache_write_result;

/* Create the folder if needed (mode 0700), check it, write to a new temporary file in it (created
 * with O_EXCL | O_NOFOLLOW, mode 0600), then rename() over the entry: readers see the old file or
 * the new one, never a part. */
tl_cache_write_result tl_cache_write(const char *dir, tl_hash128 key, const char *compiler_id,
                                     const tl_cache_entry *e, char *why, size_t why_size);

/* The bytes an entry's file takes: the header, the PTX and the device binary. */
uint64_t tl_cache_entry_bytes(const tl_cache_entry *e);

typedef struct tl_cache_trim_result {
  uint64_t bytes;        /* the entries' bytes left in the folder */
  uint64_t evicted;      /* entries removed to stay within the limit */
  uint64_t evicted_bytes;
  uint64_t temporaries;  /* temporaries older than stale_before removed */
  bool folder_untrusted; /* nothing done: the folder is not this user's alone (why says how) */
} tl_cache_trim_result;

/* Tidy the folder: remove the cache's temporaries last modified before `stale_before` (left by
 * writers that crashed), then, while the entries (regular files named KEYHEX.tljit) hold more than
 * `limit` bytes, remove the least recently used (oldest modification time) except `keep` (an entry
 * name, or NULL). Files with other names are never touched. A folder that does not exist is
 * trimmed already; false (why says why) when the folder cannot be opened or is not trusted. */
bool tl_cache_trim(const char *dir, uint64_t limit, const char *keep, int64_t stale_before,
                   tl_cache_trim_result *out, char *why, size_t why_size);

/* ----------------------------------------------------------------------------------------- cpu.c */

/* A module of the CPU device (ctx is one) for `src` compiled with `opt` (checked, defaults filled
 * in), whose kernels' signature is the tilec-meta block of `ptx` (the GPU's compilation of the same
 * source and options): tl_launch runs its kernels in the interpreter ($TILEC_INTERP_LEVEL, default
 * tile). Fails with the context's message set: TL_ERR_COMPILE (the interpreter's compilation, for arch at the
 * thread level), TL_ERR_BAD_ARGUMENT (an unknown level), TL_ERR_BAD_METADATA, TL_ERR_OUT_OF_MEMORY. */
tl_status tl_jit_load_cpu(tl_context *ctx, const char *src, size_t len, const tl_jit_options *opt,
                          const char *arch, const char *ptx, tl_module **out);

/* ---------------------------------------------------------------------------------------- tune.c */

/* A kernel's stored tuning results: one line per bucket, pointing into text. */
typedef struct tl_tune_entries {
  char *text;
  struct tl_tune_line {
    const char *bucket;  /* "K=4096,M=16,N=4096" */
    const char *defines; /* "BM=64 BN=128" */
  } *lines;
  int n;
} tl_tune_entries;

/* The bucket of sizes (NAME and a decimal value each): sorted by name, each rounded up to a power of
 * two, "K=4096,M=16,N=4096". false for no sizes or a bad value. */
bool tl_tune_bucket(const tilec_define *sizes, int n, char *out, size_t size);
/* DIR/tune/KEYHEX.tltune for compiling `kernel` of src alone with these settings. */
bool tl_tune_path(const char *dir, const char *src, size_t len, const char *arch, int opt_level,
                  const tilec_define *defines, int ndefines, const char *kernel, char *path, size_t size);
/* The file's entries; false (and *out empty) if absent, untrusted or malformed. */
bool tl_tune_read(const char *path, tl_tune_entries *out);
void tl_tune_entries_free(tl_tune_entries *t);
/* The defines stored for bucket (and its line's index), or NULL. */
const char *tl_tune_find(const tl_tune_entries *t, const char *bucket, int *index);
/* Stores defines for bucket in the file at path (the folder made if absent), replacing that
 * bucket's line; false with a message in why. */
bool tl_tune_write(const char *path, const char *bucket, const char *defines, char *why, size_t why_size);

#endif /* TILEC_JIT_INTERNAL_H */
