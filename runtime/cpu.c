/* cpu.c: the CPU device's memory (TL_DEVICE_CPU, docs/c-api.md "The CPU device").
 *
 * A tl_devptr of the CPU device is the host address of the bytes, so that a host's pointer
 * arithmetic (a tensor that starts inside another allocation) works as on the GPU. Every
 * allocation is kept in a table sorted by address: a pointer this context did not give out, a
 * copy past the end of an allocation, a tensor that does not fit in the one it starts in, are
 * errors with a message instead of a crash (the GPU reports them late, or not at all).
 *
 *   blocks[]  base 0x7f..000  size 4096  |  base 0x7f..100  size 256  |  ...   (base ascending)
 *   lookup(p): the last block with base <= p, then p - base < size
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

/* cuMemAlloc's alignment: a kernel may count on it, and so may the planner's alignment check. */
#define HOST_ALIGN 256u
/* What a new allocation holds until written: NaN in every float type, -1 in the signed integers,
 * so that a kernel or host reading memory nothing wrote sees it at once (the GPU gives whatever
 * was there). */
#define HOST_FILL 0xFF

typedef struct block {
  uintptr_t base;
  size_t size;
} block;

struct tl_host_heap {
  block *blocks; /* ascending base */
  size_t n, cap;
};

tl_host_heap *tl_host_heap_create(void) { return calloc(1, sizeof(tl_host_heap)); }

void tl_host_heap_destroy(tl_host_heap *h)
{
  if (!h)
    return;
  for (size_t i = 0; i < h->n; i++)
    free((void *)h->blocks[i].base);
  free(h->blocks);
  free(h);
}

/* Index of the last block whose base is <= p, or -1. */
static ptrdiff_t find_block(const tl_host_heap *h, uintptr_t p)
{
  size_t lo = 0, hi = h->n; /* the answer is lo - 1 once lo == hi */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (h->blocks[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (ptrdiff_t)lo - 1;
}

tl_status tl_host_alloc(tl_host_heap *h, size_t bytes, tl_devptr *out, char *err, size_t err_size)
{
  *out = 0;
  if (bytes > SIZE_MAX - HOST_ALIGN) {
    tl_fmt(err, err_size, "tl_malloc(%zu bytes): more than the host can address", bytes);
    return TL_ERR_OUT_OF_MEMORY;
  }
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 16;
    block *grown = realloc(h->blocks, cap * sizeof *grown);
    if (!grown) {
      tl_fmt(err, err_size, "out of memory");
      return TL_ERR_OUT_OF_MEMORY;
    }
    h->blocks = grown;
    h->cap = cap;
  }
  /* aligned_alloc wants a multiple of the alignment */
  void *p = aligned_alloc(HOST_ALIGN, (bytes + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN);
  if (!p) {
    tl_fmt(err, err_size, "tl_malloc(%zu bytes): out of host memory", bytes);
    return TL_ERR_OUT_OF_MEMORY;
  }
  memset(p, HOST_FILL, bytes);
  const uintptr_t base = (uintptr_t)p;
  const size_t at = (size_t)(find_block(h, base) + 1);
  memmove(&h->blocks[at + 1], &h->blocks[at], (h->n - at) * sizeof *h->blocks);
  h->blocks[at] = (block){base, bytes};
  h->n++;
  *out = (tl_devptr)base;
  return TL_OK;
}

tl_status tl_host_free(tl_host_heap *h, tl_devptr ptr, char *err, size_t err_size)
{
  const ptrdiff_t i = find_block(h, (uintptr_t)ptr);
  if (i < 0 || h->blocks[i].base != (uintptr_t)ptr) {
    const bool inside = i >= 0 && (uintptr_t)ptr - h->blocks[i].base < h->blocks[i].size;
    if (inside)
      tl_fmt(err, err_size,
             "tl_free(0x%llx): not the start of an allocation (it is %llu bytes into the one at 0x%llx)", ptr,
             (unsigned long long)((uintptr_t)ptr - h->blocks[i].base), (unsigned long long)h->blocks[i].base);
    else
      tl_fmt(err, err_size,
             "tl_free(0x%llx): no allocation of this CPU context starts there (freed already?)", ptr);
    return TL_ERR_BAD_ARGUMENT;
  }
  free((void *)h->blocks[i].base);
  memmove(&h->blocks[i], &h->blocks[i + 1], (h->n - (size_t)i - 1) * sizeof *h->blocks);
  h->n--;
  return TL_OK;
}

void *tl_host_span(const tl_host_heap *h, tl_devptr ptr, size_t bytes, const char *what, char *err,
                   size_t err_size)
{
  const uintptr_t p = (uintptr_t)ptr;
  const ptrdiff_t i = find_block(h, p);
  if (i < 0 || p - h->blocks[i].base >= h->blocks[i].size) {
    tl_fmt(err, err_size, "%s: 0x%llx is not in any allocation of this CPU context", what, ptr);
    return NULL;
  }
  const size_t left = h->blocks[i].size - (size_t)(p - h->blocks[i].base);
  if (bytes > left) {
    tl_fmt(err, err_size,
           "%s: %zu bytes at 0x%llx run past the end of their allocation (%zu bytes at 0x%llx: %zu "
           "left from there)",
           what, bytes, ptr, h->blocks[i].size, (unsigned long long)h->blocks[i].base, left);
    return NULL;
  }
  return (void *)p;
}
