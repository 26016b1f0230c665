/* diag.c: user diagnostics with source line and caret; internal-bug aborts. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_at(Diags *d, DiagLevel level, SrcLoc loc, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  StrBuf sb = {0};
  sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  const char *text = sb.data ? sb.data : "";
  /* A pass that lowers a statement twice (a pipelined loop's two forms) would say it twice: once */
  for (const Diag *o = d->first; o; o = o->next)
    if (o->level == level && o->loc.line == loc.line && o->loc.col == loc.col && !strcmp(o->message, text)) {
      free(sb.data);
      return;
    }
  if (level == DIAG_ERROR)
    d->nerrors++;
  int max = d->max_errors ? d->max_errors : 50;
  if (level == DIAG_ERROR && d->nerrors > max) {
    free(sb.data);
    return;
  }
  Diag *g = ARENA_NEW(d->arena, Diag);
  g->level = level;
  g->loc = loc;
  g->message = arena_strdup(d->arena, text);
  free(sb.data);
  if (d->last)
    d->last->next = g;
  else
    d->first = g;
  d->last = g;
}

/* The source line `line` (1-based), or NULL. */
static const char *find_line(const Diags *d, int line, size_t *len)
{
  if (!d->src || line <= 0)
    return NULL;
  const char *p = d->src, *end = d->src + d->src_len;
  for (int l = 1; l < line; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
      return NULL;
    p = nl + 1;
  }
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  *len = (size_t)((nl ? nl : end) - p);
  return p;
}

static const char *level_name(DiagLevel l)
{
  return l == DIAG_ERROR ? "error" : l == DIAG_WARNING ? "warning" : l == DIAG_NOTE ? "note" : "remark";
}

static void render(const Diags *d, StrBuf *out, bool remarks)
{
  const char *file = d->filename ? d->filename : "<input>";
  for (const Diag *g = d->first; g; g = g->next) {
    if ((g->level == DIAG_REMARK) != remarks)
      continue;
    if (g->loc.line > 0)
      sb_printf(out, "%s:%d:%d: %s: %s\n", file, g->loc.line, g->loc.col, level_name(g->level), g->message);
    else
      sb_printf(out, "%s: %s: %s\n", file, level_name(g->level), g->message);
    size_t len = 0;
    const char *line = find_line(d, g->loc.line, &len);
    if (!line)
      continue;
    /* Long lines are cut around the caret so a 1 MB line stays readable. */
    size_t col = g->loc.col > 0 ? (size_t)g->loc.col - 1 : 0;
    size_t start = col > 100 ? col - 60 : 0;
    size_t stop = len - start > 160 ? start + 160 : len;
    if (col > len)
      col = len;
    sb_puts(out, "  ");
    if (start)
      sb_puts(out, "...");
    for (size_t i = start; i < stop; i++) {
      unsigned char c = (unsigned char)line[i];
      sb_putn(out, c == '\t' ? "\t" : (c < 32 || c == 127) ? "?" : (const char *)&line[i], 1);
    }
    if (stop < len)
      sb_puts(out, "...");
    sb_puts(out, "\n  ");
    if (start)
      sb_puts(out, "   ");
    for (size_t i = start; i < col; i++)
      sb_putn(out, line[i] == '\t' ? "\t" : " ", 1);
    sb_puts(out, "^\n");
  }
  if (remarks)
    return;
  if (d->max_errors == 0 ? d->nerrors > 50 : d->nerrors > d->max_errors)
    sb_printf(out, "%s: too many errors (%d), stopping\n", file, d->nerrors);
}

void diag_render(const Diags *d, StrBuf *out) { render(d, out, false); }

void diag_render_remarks(const Diags *d, StrBuf *out) { render(d, out, true); }

_Noreturn void tl_die(const char *file, int line, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s:%d: internal compiler error: ", file, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}
