/* arena.c: one arena per compilation, and a growable string. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Block {
  struct Block *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} Block;

struct Arena {
  Block *head;
};

static void *xmalloc(size_t n)
{
  void *p = malloc(n);
  if (!p)
    DIE("out of memory (%zu bytes)", n);
  return p;
}

Arena *arena_new(void)
{
  Arena *a = xmalloc(sizeof *a);
  a->head = NULL;
  return a;
}

void arena_free(Arena *a)
{
  if (!a)
    return;
  for (Block *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

void *arena_alloc(Arena *a, size_t size)
{
  size = (size + 15) & ~(size_t)15;
  Block *b = a->head;
  if (!b || b->size - b->used < size) {
    size_t cap = size > 64 * 1024 ? size : 64 * 1024;
    b = xmalloc(sizeof *b + cap);
    b->size = cap;
    b->used = 0;
    b->next = a->head;
    a->head = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...)
{
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = arena_alloc(a, (size_t)n + 1);
  vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

static void sb_reserve(StrBuf *sb, size_t extra)
{
  if (sb->len + extra + 1 <= sb->cap)
    return;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1)
    cap *= 2;
  char *p = realloc(sb->data, cap);
  if (!p)
    DIE("out of memory (%zu bytes)", cap);
  sb->data = p;
  sb->cap = cap;
}

void sb_putn(StrBuf *sb, const char *s, size_t n)
{
  sb_reserve(sb, n);
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = 0;
}

void sb_puts(StrBuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }

void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap)
{
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  sb_reserve(sb, (size_t)n);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void sb_printf(StrBuf *sb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(sb, fmt, ap);
  va_end(ap);
}

char *sb_take(StrBuf *sb)
{
  char *p = sb->data;
  if (!p) {
    p = xmalloc(1);
    p[0] = 0;
  }
  sb->data = NULL;
  sb->len = sb->cap = 0;
  return p;
}
