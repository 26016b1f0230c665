/* hash.c: the JIT's 128-bit hash, for cache keys and entry checksums.
 *
 * Two 64-bit lanes eat the input 16 bytes at a time. Each block step is a bijection of the lane it
 * updates for a fixed other lane (multiply by an odd constant, rotate, add), so no input is ever
 * lost to a collapsed state; the lanes feed each other every block. The finish mixes in the length
 * and runs an xor-shift-multiply finalizer on both lanes, twice crossed, so that a one-bit change
 * anywhere flips about half of the 128 output bits (tests/unit/test_jit.c measures this).
 *
 *   block (x, y):  h1 = rotl((h1 ^ x*K1), 31) * K2 + h2
 *                  h2 = rotl((h2 ^ y*K3), 27) * K4 + h1
 *
 * Bytes are read little-endian whatever the host, so keys and checksums are the same on every
 * machine that shares a cache folder.
 */
#include <string.h>

#include "jit_internal.h"

/* Odd 64-bit constants with well-spread bits (the golden ratio's, and digits of pi and e). */
#define K1 0x9e3779b97f4a7c15ull
#define K2 0x243f6a8885a308d3ull
#define K3 0xb7e151628aed2a6bull
#define K4 0x13198a2e03707345ull
#define K5 0xa4093822299f31d1ull

static inline uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

static inline uint64_t load_le64(const unsigned char *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static inline void block(tl_hasher *h, const unsigned char *p)
{
  const uint64_t x = load_le64(p), y = load_le64(p + 8);
  h->h1 = rotl(h->h1 ^ (x * K1), 31) * K2 + h->h2;
  h->h2 = rotl(h->h2 ^ (y * K3), 27) * K4 + h->h1;
}

/* xor-shift-multiply: every input bit reaches every output bit */
static inline uint64_t finalize64(uint64_t v)
{
  v ^= v >> 31;
  v *= K5;
  v ^= v >> 29;
  v *= K1;
  v ^= v >> 32;
  return v;
}

void tl_hasher_init(tl_hasher *h, uint64_t seed)
{
  memset(h, 0, sizeof *h);
  h->h1 = seed ^ K2;
  h->h2 = rotl(seed, 17) ^ K4;
}

void tl_hasher_update(tl_hasher *h, const void *data, size_t len)
{
  const unsigned char *p = data;
  h->total += len;
  if (h->nbuf) {
    size_t take = 16 - h->nbuf < len ? 16 - h->nbuf : len;
    memcpy(h->buf + h->nbuf, p, take);
    h->nbuf += take;
    p += take;
    len -= take;
    if (h->nbuf < 16)
      return;
    block(h, h->buf);
    h->nbuf = 0;
  }
  for (; len >= 16; p += 16, len -= 16)
    block(h, p);
  if (len) {
    memcpy(h->buf, p, len);
    h->nbuf = len;
  }
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

tl_hash128 tl_hasher_final(const tl_hasher *state)
{
  tl_hasher h = *state;
  if (h.nbuf) { /* zero-padded tail; the length below tells "a" from "a\0" */
    memset(h.buf + h.nbuf, 0, 16 - h.nbuf);
    block(&h, h.buf);
  }
  uint64_t a = h.h1 ^ h.total, b = h.h2 ^ (h.total * K3);
  a += b;
  b += a;
  a = finalize64(a);
  b = finalize64(b);
  a += b;
  b += a;
  return (tl_hash128){a, b};
}

tl_hash128 tl_hash(const void *data, size_t len, uint64_t seed)
{
  tl_hasher h;
  tl_hasher_init(&h, seed);
  tl_hasher_update(&h, data, len);
  return tl_hasher_final(&h);
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
