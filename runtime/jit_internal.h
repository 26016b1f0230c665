/* jit_internal.h: what the JIT library's files (hash.c, cache.c, jit.c) share, and what its unit
 * tests reach below the public API. Hosts use tilec_jit.h.
 *
 * Sections: hash.c (the 128-bit hash), cache.c (keys, the entry file format, the disk folder).
 */
#ifndef TILEC_JIT_INTERNAL_H
#define TILEC_JIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec_jit.h"

/* ---------------------------------------------------------------------------------------- hash.c */

/* A 128-bit non-cryptographic hash: fast on the few kilobytes of a kernel's source and PTX, every
 * input bit reaching every output bit. Good against accidents (a cache key colliding, a file
 * damaged), not against an adversary who can write into the cache folder. */
typedef struct tl_hash128 {
  uint64_t lo, hi;
} tl_hash128;

/* Incremental form: init, update any number of times, final (which leaves the state usable). */
typedef struct tl_hasher {
  uint64_t h1, h2;
  uint64_t total;         /* bytes so far */
  unsigned char buf[16];  /* a partial block */
  size_t nbuf;
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
#define TL_HASH_SEED_KEY 0x6b65792d74696c65ull  /* "key-tile" */
#define TL_HASH_SEED_SUM 0x73756d2d74696c65ull  /* "sum-tile" */

/* "tilec 0.1.0+BUILD_ID": what, besides the inputs, decides the PTX. Written into buf. */
const char *tl_jit_compiler_id(char *buf, size_t size);

/* The key of a compilation, for a compiler named `compiler_id` (tl_jit_compiler_id, or another one
 * in tests). `arch` is resolved (not NULL). Defines are normalized first: for each name only the
 * last value counts, and names are sorted, so the order of distinct names does not matter. The
 * filename, the diagnostics callback and the cache flags do not enter the key. */
bool tl_jit_key_for(const char *src, size_t len, const char *arch, int opt_level,
                    const tilec_define *defines, int ndefines, const char *kernel,
                    const char *compiler_id, tl_hash128 *out);

/* A cache entry in memory: the PTX (NUL-terminated; its metadata block is the kernels' signature)
 * and, when a driver made one, the device binary with what it was made for. */
typedef struct tl_cache_entry {
  char *ptx;
  size_t ptx_len;           /* without the NUL */
  void *cubin;              /* NULL: none yet */
  size_t cubin_len;
  uint32_t cubin_cc;        /* compute capability * 10 (90 for 9.0) of the device it was made for */
  uint32_t cubin_driver;    /* the driver version that made it (13000) */
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
 * rejected before its checksum is even computed. */
#define TL_CACHE_MAGIC "TILECJIT"
#define TL_CACHE_FORMAT 1u
#define TL_CACHE_HEADER 136u
#define TL_CACHE_ID_BYTES 64u
#define TL_CACHE_SUFFIX ".tljit"

/* Serialize / parse the format above. Parsing fails (false, with the reason in why) on anything
 * but a complete, undamaged entry for this key and this compiler. */
bool tl_cache_encode(tl_hash128 key, const char *compiler_id, const tl_cache_entry *e,
                     unsigned char **out, size_t *out_len);
bool tl_cache_decode(const unsigned char *data, size_t len, tl_hash128 key, const char *compiler_id,
                     tl_cache_entry *out, char *why, size_t why_size);

/* The disk folder: $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else $HOME/.cache/tilec. false
 * when none can be named (no HOME). */
bool tl_cache_default_dir(char *buf, size_t size);
/* DIR/KEYHEX.tljit */
void tl_cache_entry_path(const char *dir, tl_hash128 key, char *buf, size_t size);

typedef enum tl_cache_read_result {
  TL_CACHE_HIT,
  TL_CACHE_ABSENT,   /* no file: the normal miss */
  TL_CACHE_REJECTED, /* a file that is not a valid entry (why says how): rebuild and overwrite */
} tl_cache_read_result;

tl_cache_read_result tl_cache_read(const char *dir, tl_hash128 key, const char *compiler_id,
                                   tl_cache_entry *out, char *why, size_t why_size);
/* Create the folder if needed, write to a unique temporary file in it, then rename() over the
 * entry: readers see the old file or the new one, never a part. */
bool tl_cache_write(const char *dir, tl_hash128 key, const char *compiler_id,
                    const tl_cache_entry *e, char *why, size_t why_size);

#endif /* TILEC_JIT_INTERNAL_H */
