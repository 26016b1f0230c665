/* target.c: the target table of target.h, and the lookups every layer shares. */
#include "target.h"

#include <stdio.h>
#include <string.h>

#define ROW(name, sm, arch_specific, features, ptx, shared) {name, sm, arch_specific, features, ptx, shared},
const Target targets[] = {TARGETS(ROW)};
#undef ROW
const int ntargets = (int)(sizeof targets / sizeof targets[0]);

const Target *target_find(const char *name)
{
  for (int i = 0; name && i < ntargets; i++)
    if (!strcmp(targets[i].name, name))
      return &targets[i];
  return NULL;
}

const Target *target_default(void)
{
  const Target *t = target_find(TARGET_DEFAULT);
  return t ? t : &targets[0];
}

const Target *target_for_device(int cc_major, int cc_minor)
{
  if (cc_major < 0 || cc_minor < 0 || cc_minor > 9)
    return NULL;
  const int cc = cc_major * 10 + cc_minor;
  const Target *best = NULL;
  for (int i = 0; i < ntargets; i++) {
    const Target *t = &targets[i];
    if (t->sm > cc || (t->arch_specific && t->sm != cc))
      continue;
    if (!best || t->sm > best->sm || (t->sm == best->sm && t->arch_specific))
      best = t;
  }
  return best;
}

char *target_list(char *buf, size_t size, const char *last)
{
  size_t n = 0;
  if (!buf || !size)
    return buf;
  buf[0] = 0;
  for (int i = 0; i < ntargets && n < size; i++) {
    const char *sep = i == 0 ? "" : i == ntargets - 1 ? last : ", ";
    int w = snprintf(buf + n, size - n, "%s%s", sep, targets[i].name);
    if (w < 0)
      break;
    n += (size_t)w;
  }
  return buf;
}
