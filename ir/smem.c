/* smem.c: where a shared tile's elements live, as integers (ir.h's SwizzleKind).
 *
 * codegen's tile_offset (cg_expr.c) builds the same arithmetic in LLVM IR for
 * indices known only at run time; the interpreter's thread level (interp/thread.c)
 * calls these with the values.  tests/unit/test_codegen.c checks, element by
 * element, that the two agree on every layout. */
#include "ir.h"

enum { WGMMA_ROW_BYTES = 128 };

/* SWIZZLE_128B: panels of 64 16-bit elements, 128-byte rows, bits 4-6 of the
 * byte XORed with bits 7-9 (ir.h); the stage, if any, comes first. */
static int64_t offset_128b(const Buffer *buf, const int64_t *idx, int nidx)
{
  int first = buf->stages > 0 ? 1 : 0;
  int64_t esize = type_bytes(buf->elem);
  int64_t R = buf->tile_shape[first], panel = WGMMA_ROW_BYTES / esize;
  int64_t r = idx[first], c = idx[first + 1];
  int64_t byte = c / panel * R * WGMMA_ROW_BYTES + r * WGMMA_ROW_BYTES + c % panel * esize;
  byte ^= ((byte >> 7) & 7) << 4;
  int64_t off = byte / esize;
  if (first)
    off += idx[0] * buf->tile_shape[1] * buf->tile_shape[2];
  return off;
}

int64_t smem_elem_offset(const Buffer *buf, const int64_t *idx, int nidx)
{
  if (buf->swizzle == SWIZZLE_128B && nidx == (buf->stages > 0 ? 3 : 2))
    return offset_128b(buf, idx, nidx);
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

uint64_t smem_wgmma_desc(uint32_t start, uint32_t lbo, uint32_t sbo)
{
  const uint64_t swizzle_128b = 1;
  return (uint64_t)((start & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | swizzle_128b << 62;
}

/* K-major (rows are M or N, 128-byte rows along K): 8-row groups 1024 bytes
 * apart (SBO); LBO is not used by swizzled K-major layouts ("assumed 1").
 * MN-major (rows are K): 8-row groups 1024 bytes apart along K (SBO), panels of
 * 64 M or N elements R * 128 bytes apart (LBO). */
void smem_wgmma_strides(const Buffer *buf, bool mn_major, uint32_t *lbo, uint32_t *sbo)
{
  int first = buf->stages > 0 ? 1 : 0;
  *sbo = 8 * WGMMA_ROW_BYTES;
  *lbo = mn_major ? (uint32_t)(buf->tile_shape[first] * WGMMA_ROW_BYTES) : 16;
}
