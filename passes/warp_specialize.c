/* warp_specialize.c: the producer and consumer roles of a TMA pipeline (sm_90a).
 *
 * software_pipeline.c built, for the kernel's one pipelined loop, the parts of
 * its specialized form (w->ws_*): the mbarriers' set-up, the producer's loop
 * (one thread filling stages) and the consumers' loop.  Here they are placed in
 * the kernel, whose block gains a producer warpgroup (C consumer threads
 * before, C + 128 after):
 *
 *   pure lets before the loop                 every thread (the producer needs some)
 *   if tid == 0: mbarrier.init ...; fence
 *   barrier                                   the whole block, the last one
 *   roles if tid >= C {                       producer warpgroup
 *       setmaxnreg.dec P
 *       if tma.ok != 0 and tid == C: the producer's loop
 *   } else {                                  consumer warpgroups
 *       setmaxnreg.inc Q
 *       the statements before the loop (not the lets above)
 *       if tma.ok != 0 { the consumers' loop } else { the cp.async form }
 *       the statements after the loop
 *   }
 *
 * Inside the consumers' branch every barrier becomes the named barrier 1 of
 * the C consumer threads (the producer never reaches it).  The registers move
 * with setmaxnreg when there are two consumer warpgroups or more, or two
 * blocks per multiprocessor: the producer keeps 40 per thread, the consumers
 * share the rest of what a block gets at launch (ptxas gives each thread
 * 65536 / (B (C + 128)), rounded down to 8, when told the block size and B
 * blocks per multiprocessor; B = 2 only with warp_specialize(2) and
 * min_blocks_per_sm(2): one consumer warpgroup then gets 216).  Beside three
 * consumer warpgroups or more the producer keeps 32, so that three get 160
 * rather than 152 (what attention's 192-row tiles need at D = 64 with the
 * causal mask); two get 232 either way.
 *
 * When the loop is in the body of a serial loop (a persistent kernel's loop
 * over tiles), "the loop" above is that outer loop: the consumers run it
 * whole, with the pipelined loop's consumer form inside; the producer runs a
 * copy of it that keeps only the pure lets of its body (the tile's
 * coordinates) around the producer's loop.  Both roles count the iterations
 * they have done (filled / done, mutable, from 0), so stages and parities go
 * on from one tile to the next.
 *
 * When the kernel's statements around the loop do not allow it (a value the
 * producer needs is computed from memory, a barrier nested where it cannot be
 * renamed safely), the loop keeps its unspecialized TMA form; with
 * warp_specialize(2) that is an error. */
#include "lower.h"

#include <string.h>

/* PRODUCER_REGS_3: what the producer keeps beside three consumer warpgroups or more */
enum { PRODUCER = 128, PRODUCER_REGS = 40, PRODUCER_REGS_3 = 32, CONSUMER_BARRIER = 1 };

typedef struct {
  const Kernel *k;
  bool *defined; /* [var]: a let of the statements before the loop defines it */
  bool *top;     /* [var]: defined by a let that every thread runs (above the roles) */
  bool ok;       /* every var seen is available where the walk asked */
  bool pure;     /* no memory read, no warp shuffle */
  int counter;   /* the producer's own mutable variable (its iteration count), or -1 */
} Uses;

static Expr *use_expr(void *ctx, Expr *e)
{
  Uses *u = ctx;
  if (e->kind == EX_VAR) {
    const Var *v = &u->k->vars[e->var];
    if ((v->kind == VAR_MUT && e->var != u->counter) || (u->defined[e->var] && !u->top[e->var]))
      u->ok = false;
  }
  if (e->kind == EX_LOAD || e->kind == EX_ALIGNED || (e->kind == EX_CALL && e->op == FN_SHFL_BFLY))
    u->pure = false;
  return e;
}

static void flatten_top(Arena *a, Stmt *s, StmtList *out)
{
  if (s->kind == ST_SEQ) {
    for (int i = 0; i < s->nbody; i++)
      flatten_top(a, s->body[i], out);
    return;
  }
  stlist_push(a, out, s);
}

static void mark_lets(Stmt *s, bool *defined)
{
  if (!s)
    return;
  if (s->kind == ST_LET)
    defined[s->var] = true;
  for (int i = 0; i < s->nbody; i++)
    mark_lets(s->body[i], defined);
  mark_lets(s->then_s, defined);
  mark_lets(s->else_s, defined);
}

/* Every barrier of s becomes the consumers' named barrier. */
static void rename_barriers(Stmt *s, int consumers)
{
  if (!s)
    return;
  if (s->kind == ST_BARRIER && !s->bar_threads) {
    s->bar_id = CONSUMER_BARRIER;
    s->bar_threads = consumers;
  }
  for (int i = 0; i < s->nbody; i++)
    rename_barriers(s->body[i], consumers);
  rename_barriers(s->then_s, consumers);
  rename_barriers(s->else_s, consumers);
}

static Stmt *setmaxnreg(Lw *w, bool inc, int nregs)
{
  Stmt *s = st_new(w->a, ST_SETMAXNREG, NO_LOC);
  s->inc = inc;
  s->nregs = nregs;
  return s;
}

static bool refuse(Lw *w, const char *why)
{
  const Target *t = w->pc->target;
  if (w->k->warp_specialize == 2 && t->sm == 90 && t->arch_specific) { /* elsewhere: nothing to do */
    error_at(w->pc->diags, w->k->warp_specialize_loc, "the kernel cannot be warp-specialized: %s", why);
    return false;
  }
  return true;
}

/* The pure lets among list[0 .. n), over values every thread of a role has
 * (u->top), join u->top and go to out. */
static void pure_lets(Lw *w, Uses *u, Stmt *const *list, int n, StmtList *out, StmtList *rest)
{
  for (int i = 0; i < n; i++) {
    Stmt *s = list[i];
    if (s->kind == ST_LET) {
      u->ok = u->pure = true;
      expr_rewrite(s->value, use_expr, u);
      if (u->ok && u->pure) {
        u->top[s->var] = true;
        stlist_push(w->a, out, s);
        continue;
      }
    }
    if (rest)
      stlist_push(w->a, rest, s);
  }
}

static int index_of(const StmtList *l, const Stmt *s)
{
  for (int i = 0; i < l->n; i++)
    if (l->items[i] == s)
      return i;
  DIE("the pipelined loop's switch is not where the lowering put it");
}

/* With an outer loop (a persistent kernel's loop over tiles): the producer's
 * own copy of it, with the pure lets its body computes before the pipelined
 * loop (the tile's coordinates), counting its iterations from 0. */
static Stmt *producer_loop(Lw *w, Uses *u)
{
  Stmt *outer = w->ws_outer;
  StmtList body = {0}, lets = {0};
  flatten_top(w->a, outer->then_s, &body);
  int at = index_of(&body, w->ws_switch);
  for (int i = 0; i < at; i++)
    mark_lets(body.items[i], u->defined);
  pure_lets(w, u, body.items, at, &lets, NULL);
  StmtList l = {0};
  for (int i = 0; i < lets.n; i++) { /* the consumers keep theirs: a copy of each */
    Stmt *c = st_new(w->a, ST_LET, lets.items[i]->loc);
    c->var = lets.items[i]->var;
    c->value = ex_clone(w->a, lets.items[i]->value);
    stlist_push(w->a, &l, c);
  }
  stlist_push(w->a, &l, w->ws_producer);
  Stmt *loop = st_new(w->a, ST_FOR, outer->loc);
  loop->for_kind = FOR_SERIAL;
  loop->nvars = 1;
  loop->vars[0] = outer->vars[0];
  loop->extents[0] = ex_clone(w->a, outer->extents[0]);
  loop->rolled = outer->rolled;
  loop->then_s = stlist_seq(w->a, &l, outer->loc);
  StmtList out = {0};
  stlist_push(w->a, &out, lw_assign(w, w->ws_count[0], lw_i32(w, 0)));
  stlist_push(w->a, &out, loop);
  return stlist_seq(w->a, &out, NO_LOC);
}

bool lw_warp_specialize(Lw *w)
{
  Kernel *k = w->k;
  if (!w->ws_switch)
    return refuse(w, "it needs one pipelined loop, in the kernel's block or in a serial loop there, whose "
                     "copies the copy engine can make (16-bit tiles in wgmma's layout, sm_90a) and whose "
                     "consumers are gemms on wgmma, in a block of whole warpgroups, one block per "
                     "multiprocessor (two with warp_specialize(2) and min_blocks_per_sm(2))");
  StmtList all = {0};
  flatten_top(w->a, k->body, &all);
  int at = index_of(&all, w->ws_outer ? w->ws_outer : w->ws_switch);
  /* Which lets before the loop every thread can run: pure ones over values every thread has. */
  bool *defined = ARENA_ARRAY(w->a, bool, k->nvars + 1), *top = ARENA_ARRAY(w->a, bool, k->nvars + 1);
  for (int i = 0; i < at; i++)
    mark_lets(all.items[i], defined);
  Uses u = {k, defined, top, true, true, w->ws_outer ? w->ws_count[0] : -1};
  StmtList out = {0}, consumer = {0};
  pure_lets(w, &u, all.items, at, &out, &consumer);
  /* The producer may use only those (and, in an outer loop, the pure lets of its body). */
  Stmt *producer = w->ws_outer ? producer_loop(w, &u) : w->ws_producer;
  u.ok = true;
  stmt_rewrite_exprs(producer, use_expr, &u);
  if (!u.ok)
    return refuse(w, "the copies' origins use a value computed from memory");
  int C = k->nthreads;
  Expr *tid = lw_var(w, w->tid);
  stlist_push(w->a, &out, lw_if(w, lw_bin(w, OP_EQ, tid, lw_i32(w, 0)), w->ws_setup, NULL));
  stlist_push(w->a, &out, lw_barrier(w));
  /* The consumers: what came before the loop, the loop (either form), what comes after. */
  w->ws_switch->then_s = w->ws_consumer;
  if (w->ws_outer)
    stlist_push(w->a, &consumer, lw_assign(w, w->ws_count[1], lw_i32(w, 0)));
  for (int i = at; i < all.n; i++)
    stlist_push(w->a, &consumer, all.items[i]);
  Stmt *cons = stlist_seq(w->a, &consumer, NO_LOC);
  rename_barriers(cons, C);
  /* Registers: a block gets 65536 / (B (C + 128)) per thread at launch, B its
   * blocks per multiprocessor (rounded down to 8); the producer gives all but
   * 40 (32) of its own to the consumers. */
  StmtList pro = {0}, con = {0};
  int B = k->min_blocks_per_sm > 1 ? k->min_blocks_per_sm : 1;
  if (C >= 256 || B > 1) {
    int at_launch = 65536 / (B * (C + PRODUCER)) / 8 * 8;
    if (at_launch > 256)
      at_launch = 256;
    int preg = C >= 3 * PRODUCER ? PRODUCER_REGS_3 : PRODUCER_REGS;
    int more = (at_launch * (C + PRODUCER) - preg * PRODUCER) / C / 8 * 8;
    if (more > 256)
      more = 256;
    stlist_push(w->a, &pro, setmaxnreg(w, false, preg));
    stlist_push(w->a, &con, setmaxnreg(w, true, more));
  }
  Expr *issuer = lw_and(w, lw_bin(w, OP_NE, lw_var(w, k->tma_ok), lw_i32(w, 0)),
                        lw_bin(w, OP_EQ, lw_var(w, w->tid), lw_i32(w, C)));
  stlist_push(w->a, &pro, lw_if(w, issuer, producer, NULL));
  stlist_push(w->a, &con, cons);
  Stmt *roles = lw_if(w, lw_bin(w, OP_GE, lw_var(w, w->tid), lw_i32(w, C)), stlist_seq(w->a, &pro, NO_LOC),
                      stlist_seq(w->a, &con, NO_LOC));
  roles->roles = true;
  stlist_push(w->a, &out, roles);
  k->body = stlist_seq(w->a, &out, k->body->loc);
  k->nthreads = C + PRODUCER;
  k->threads = lw_i32(w, k->nthreads);
  k->producer_threads = PRODUCER;
  return true;
}
