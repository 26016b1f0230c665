/* plan_shared.c: place shared tiles in the block's shared memory and check the
 * target's budget; check the per-thread local memory budget too. */
#include "passes.h"

#include <inttypes.h>

/* Are a and b in use at the same time?  Tiles the lowering made (no lifetime)
 * are in use throughout. */
static bool live_together(const Buffer *a, const Buffer *b)
{
  return !a->live_known || !b->live_known || (a->live_first <= b->live_last && b->live_first <= a->live_last);
}

static int64_t shared_bytes(const Buffer *b) { return buffer_elems(b) * type_bytes(b->elem); }

/* Tiles take the lowest offset (aligned) at which they overlap no tile placed
 * before them that is in use at the same time: tiles whose top-level
 * statements do not overlap (shared-lifetimes; e.g. a GEMM's staged operand
 * tiles and the tile its epilogue stores through) share bytes.  That is
 * safe because every write into a shared tile is fenced by a barrier before
 * it (lower_tiles.c), after which no thread still reads, and no copy still
 * lands in, a tile whose last statement is behind it (pipelined loops wait for
 * their copies and multiplies before they end; TMA stores for their reads). */
static int64_t place(const Kernel *k, int i, int64_t align)
{
  const Buffer *b = &k->bufs[i];
  int64_t n = shared_bytes(b), off = 0;
  for (bool moved = true; moved;) {
    moved = false;
    off = (off + align - 1) & ~(align - 1);
    for (int j = 0; j < i; j++) {
      const Buffer *o = &k->bufs[j];
      if (o->scope != SCOPE_SHARED || o->unused || !live_together(b, o))
        continue;
      int64_t end = o->smem_offset + shared_bytes(o);
      if (off < end && o->smem_offset < off + n) {
        off = end;
        moved = true;
        break;
      }
    }
  }
  return off;
}

bool pass_plan_shared(PassContext *pc, Kernel *k)
{
  int64_t off = 0;
  for (int i = 0; i < k->nbufs; i++) {
    Buffer *b = &k->bufs[i];
    if (b->scope != SCOPE_SHARED)
      continue;
    if (b->unused) { /* shared-lifetimes: no statement reads or writes it */
      b->smem_offset = 0;
      continue;
    }
    /* Swizzled tiles take whole 128-byte lines; wgmma's swizzles are applied
     * by the hardware to address bits 4-9 (128-byte; fewer for the narrower
     * ones), so its tiles (and each stage, a multiple of 8 rows) start on
     * 1024-byte atoms. */
    int64_t align = swizzle_span(b->swizzle) ? 1024 : 128;
    b->smem_offset = place(k, i, align);
    if (b->smem_offset + shared_bytes(b) > off)
      off = b->smem_offset + shared_bytes(b);
  }
  k->smem_bytes = off;
  /* A thread's local memory (its alloc_local arrays and, once lowered, its
   * fragments' registers) is at most 512 KiB on every target (CUDA
   * programming guide, technical specifications); past it the launch fails
   * (CUDA_ERROR_INVALID_VALUE) instead of the compile. */
  int64_t local = 0, biggest = -1;
  for (int i = 0; i < k->nbufs; i++) {
    const Buffer *b = &k->bufs[i];
    if (b->scope != SCOPE_LOCAL)
      continue;
    local += buffer_elems(b) * type_bytes(b->elem);
    if (biggest < 0 || buffer_elems(b) * type_bytes(b->elem) >
                           buffer_elems(&k->bufs[biggest]) * type_bytes(k->bufs[biggest].elem))
      biggest = i;
  }
  if (local > MAX_LOCAL_BYTES) {
    error_at(pc->diags, k->bufs[biggest].loc,
             "kernel '%s' needs %" PRId64 " bytes of local memory per thread, "
             "more than the %d a thread can have; make '%s' smaller (a shared tile is shared by the "
             "block)",
             k->name, local, MAX_LOCAL_BYTES, k->bufs[biggest].name);
    return false;
  }
  int64_t limit = pc->target->shared_per_block;
  if (off > limit) {
    error_at(pc->diags, k->loc,
             "kernel '%s' needs %" PRId64 " bytes of shared memory, more than the %" PRId64
             " bytes a block can have on %s; use smaller tiles or fewer stages",
             k->name, off, limit, pc->target->name);
    return false;
  }
  return true;
}
