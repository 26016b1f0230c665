/* hash.c: the JIT's 128-bit hash, for cache keys and entry checksums: xxHash's XXH3-128
 * (Debian's libxxhash-dev; the functions are inlined from xxhash.h, see jit_internal.h).
 *
 * What is ours is the framing of structured keys (a field's length before its bytes, a marker for
 * a missing string) and the hex form of a hash. XXH3's output does not depend on the host's byte
 * order, so keys and checksums are the same on every machine that shares a cache folder.
 */
#include <string.h>

#include "jit_internal.h"

void tl_hasher_init(tl_hasher *h, uint64_t seed)
{
  memset(h, 0, sizeof *h);
  XXH3_128bits_reset_withSeed(&h->state, seed);
}

void tl_hasher_update(tl_hasher *h, const void *data, size_t len)
{
  if (len)
    XXH3_128bits_update(&h->state, data, len);
}

void tl_hasher_field(tl_hasher *h, const void *data, size_t len)
{
  unsigned char n[8];
  for (int i = 0; i < 8; i++)
    n[i] = (unsigned char)((uint64_t)len >> (8 * i));
  tl_hasher_update(h, n, sizeof n);
  tl_hasher_update(h, data, len);
}

void tl_hasher_string(tl_hasher *h, const char *s)
{
  static const unsigned char null_marker = 0xff; /* a length-prefixed field is never one byte 0xff */
  if (!s)
    tl_hasher_update(h, &null_marker, 1);
  else
    tl_hasher_field(h, s, strlen(s));
}

tl_hash128 tl_hasher_final(const tl_hasher *h)
{
  const XXH128_hash_t d = XXH3_128bits_digest(&h->state);
  return (tl_hash128){d.low64, d.high64};
}

tl_hash128 tl_hash(const void *data, size_t len, uint64_t seed)
{
  const XXH128_hash_t d = XXH3_128bits_withSeed(data, len, seed);
  return (tl_hash128){d.low64, d.high64};
}

void tl_hash_hex(tl_hash128 h, char out[33])
{
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[i] = digits[(h.hi >> (60 - 4 * i)) & 15];
    out[16 + i] = digits[(h.lo >> (60 - 4 * i)) & 15];
  }
  out[32] = 0;
}
