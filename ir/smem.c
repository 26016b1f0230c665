/* smem.c: where a shared tile's elements live, as integers (ir.h's SwizzleKind).
 *
 * codegen's tile_offset (cg_expr.c) builds the same arithmetic in LLVM IR for
 * indices known only at run time; the interpreter's thread level (interp/thread.c)
 * calls these with the values.  tests/unit/test_codegen.c checks, element by
 * element, that the two agree on every layout. */
#include "ir.h"

/* SWIZZLE_128B, _64B, _32B: panels of S / 2 16-bit elements, S-byte rows, the
 * chunk bits of the byte (4 and up) XORed with the bits from 7 up (ir.h); the
 * stage, if any, comes first. */
static int64_t offset_wgmma(const Buffer *buf, const int64_t *idx, int nidx)
{
  (void)nidx;
  int first = buf->stages > 0 ? 1 : 0;
  int64_t esize = type_bytes(buf->elem), S = swizzle_span(buf->swizzle);
  int64_t R = buf->tile_shape[first], panel = S / esize;
  int64_t r = idx[first], c = idx[first + 1];
  int64_t byte = c / panel * R * S + r * S + c % panel * esize;
  byte ^= ((byte >> 7) & (S / 16 - 1)) << 4;
  int64_t off = byte / esize;
  if (first)
    off += idx[0] * buf->tile_shape[1] * buf->tile_shape[2];
  return off;
}

int64_t smem_elem_offset(const Buffer *buf, const int64_t *idx, int nidx)
{
  if (swizzle_span(buf->swizzle) && nidx == (buf->stages > 0 ? 3 : 2))
    return offset_wgmma(buf, idx, nidx);
  int64_t slice = 1;
  for (int d = 1; d < nidx; d++)
    slice *= buf->tile_shape[d];
  /* a staged tile swizzles within each stage when a stage is whole 128-byte lines */
  bool staged = buf->swizzle == SWIZZLE_LINES && buf->stages > 0 && nidx > 1 &&
                (slice * type_bytes(buf->elem)) % 128 == 0;
  int first = staged ? 1 : 0;
  int64_t off = idx[first];
  for (int d = first + 1; d < nidx; d++)
    off = off * buf->tile_shape[d] + idx[d];
  if (buf->swizzle == SWIZZLE_LINES) {
    int64_t esize = type_bytes(buf->elem), byte = off * esize, line = byte >> 7;
    byte ^= ((line ^ (line >> 3)) & 7) << 4;
    off = byte / esize;
  }
  if (staged)
    off += idx[0] * slice;
  return off;
}

uint64_t smem_wgmma_desc(uint32_t start, uint32_t lbo, uint32_t sbo, int span)
{
  const uint64_t mode = span == 128 ? 1 : span == 64 ? 2 : 3;
  return (uint64_t)((start & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | mode << 62;
}

/* With span S: K-major (rows are M or N, S-byte rows along K): 8-row groups
 * 8 * S bytes apart (SBO); LBO is not used by swizzled K-major layouts
 * ("assumed 1").  MN-major (rows are K): 8-row groups 8 * S bytes apart along
 * K (SBO), panels of S / 2 M or N elements R * S bytes apart (LBO). */
void smem_wgmma_strides(const Buffer *buf, bool mn_major, uint32_t *lbo, uint32_t *sbo)
{
  int first = buf->stages > 0 ? 1 : 0;
  uint32_t S = (uint32_t)swizzle_span(buf->swizzle);
  *sbo = 8 * S;
  *lbo = mn_major ? (uint32_t)buf->tile_shape[first] * S : 16;
}
