/* thread.c: the thread-level interpreter: the lowered program codegen sees, run
 * the way the GPU runs it, and checked as it runs.
 *
 * Input: a kernel after the whole pipeline (interp_compile_thread; ir_verify's
 * VERIFY_THREAD): per-thread statements over registers (LOCAL buffers), shared
 * memory at planned byte offsets with its swizzles, and global tensors.
 *
 * Execution.  One block at a time; all of its threads in lockstep, statement by
 * statement, under an active set (Mask: the threads that reached the statement,
 * ascending).  An `if` splits the set, a loop keeps the threads whose trip
 * count is not reached, and a barrier requires every thread of the block.  A
 * simple statement runs for each active thread in turn; the warp's collectives
 * (ldmatrix, mma.sync, shfl) see all 32 lanes together and wgmma the 128 of a
 * warpgroup.  Lockstep is one schedule the GPU may choose; the race checks
 * below make the answer not depend on it.  Expressions are evaluated per thread
 * (eval), with value.c's arithmetic, as the tile level (tile.c) does; a
 * shuffle evaluates its operand as the partner lane (expressions have no
 * effects, so that is the value the partner holds).
 *
 * Warp-specialized roles (an `if` with .roles: a producer warpgroup and its
 * consumers, ir.h) cannot run one branch after the other: each waits on
 * mbarrier phases only the other completes.  The two branches run as two
 * coroutines, each in lockstep over its own threads (whole warpgroups), the
 * then-branch first; a role that reaches an mbarrier wait whose phase has not
 * completed yields to the other and resumes at the same wait, which checks again;
 * a role that arrives on an mbarrier while the other waits hands over to it at
 * once (role_handoff: the soonest the GPU could let it go, so that a stage
 * released too early is refilled under its reader).
 * Both finish before the statement after the `if`, each time it runs (a roles-if
 * in a loop is fine; roles inside a role are not supported).  It is a deadlock,
 * reported at the wait, when the other role has finished, or is blocked too and
 * nothing progressed (an mbarrier arrival, init or TMA byte count, a role
 * finishing) since it blocked.  Inside a role a barrier of the whole block is an
 * error (the other role never reaches it); a named barrier (bar.sync id, n) needs
 * exactly its n threads at it, which run together in lockstep.  An error in one
 * role stops the other, which unwinds when it resumes.
 *
 * Ordering.  A barrier of the whole block starts a new epoch: it orders every
 * shared-memory access before it before every one after it.  A named barrier
 * orders only its threads', so it cannot end the epoch; instead every thread has
 * a named interval (nid: 0 outside roles, a new one for a role's threads when
 * the role starts and at each named barrier of the whole role), recorded with
 * each access beside its epoch, and two accesses of one epoch are ordered when
 * they are of the same role and its interval changed between them (ordered()).
 * That is sound and conservative: a named barrier orders nothing across roles,
 * whose shared memory meets only through TMA loads (published by mbarriers, not
 * checked here), and one of part of a role orders nothing.  Outside roles a
 * named barrier of the whole block is a barrier of the whole block.
 *
 * Memory.  Shared memory is the block's bytes (smem_bytes), addressed as codegen
 * addresses it (ir/smem.c); registers are a Val per element per thread, with a
 * written bit; tensors are the caller's arrays.  Beside every shared byte a
 * Shadow records who wrote and read it since the last barrier (epoch), whether
 * it was ever written, and the asynchronous operations in flight on it.
 *
 * Checks, each an error at the .tl line with the block and thread, the buffer
 * and the element; the first stops the run:
 *   - an index outside a tensor, a tile or a register array; a misaligned vector;
 *   - a read of a shared byte or a register never written;
 *   - a shared-memory race: two threads touch a byte between the same two
 *     barriers, at least one writing (atomics excepted);
 *   - a barrier not reached by every thread of the block (a named barrier: by
 *     other than its count of threads); a barrier of the whole block inside a
 *     role; a warp collective (setmaxnreg too) without its whole warp
 *     (warpgroup); a setmaxnreg count outside 24 .. 256 or not a multiple of 8;
 *   - cp.async: shared bytes read or written while a copy into them is in
 *     flight (issued, its group not yet waited for);
 *   - wgmma: accumulator registers touched between the wgmma and the
 *     wait_group that covers it, or written since the last wgmma.fence; operand
 *     bytes written while a wgmma may still read them, or written through the
 *     generic proxy without a fence.proxy.async before the wgmma reads them;
 *     descriptors that differ between the threads of a warpgroup;
 *   - mbarriers (sm_90): a wait for a phase that has not completed when the thread
 *     reaches it and nothing else would complete it (outside roles: in lockstep
 *     nothing ever would; in a role: above), a deadlock; more
 *     arrivals than the phase expects, an mbarrier used before its init; TMA
 *     loads land when issued (their bytes count down the mbarrier's expected
 *     ones) into a 1024-byte aligned panel of a swizzled tile, elements outside
 *     the tensor reading 0, and are published by the mbarrier, not a barrier
 *     (a read before the consumer's wait is not detected); TMA stores write the
 *     tensor when issued (elements outside it are skipped), reading shared bytes
 *     that must be behind a barrier and fenced by their writers (a write into the
 *     tile before the store's wait is not detected);
 *   - integer division by zero, out-of-range shifts (value.c). */
#include "interp.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WARP = 32, WARPGROUP = 128 };

static const Val zero;

typedef struct {
  const int *t; /* active threads, ascending */
  int n;
} Mask;

typedef struct {
  uint32_t w_epoch, r_epoch; /* the barrier interval of the last write / reads (0: none this block) */
  uint32_t w_named, r_named; /* the same in named intervals (Th.nid; r_named NAMED_MIXED: several) */
  int32_t w_thread, r_thread;
  uint32_t w_fences;         /* the writer's fence.proxy.async count when it wrote */
  uint16_t inflight;         /* cp.async copies into this byte not yet waited for */
  uint16_t async_reads;      /* wgmma reads of this byte not yet waited for */
  uint8_t written, r_many;
  uint8_t w_async;           /* last written by a TMA load: published by its mbarrier */
} Shadow;
typedef struct {
  int64_t byte;     /* the mbarrier's shared address */
  int count;        /* arrivals per phase */
  int pending;      /* arrivals the open phase still needs */
  int64_t tx;       /* bytes the open phase still expects */
  int64_t complete; /* phases completed */
} Mbar;

typedef struct {
  int64_t byte; /* shared destination */
  int size;     /* bytes: 16, 8 or 4 */
  uint8_t data[16];
  int group;    /* the thread's commit count when issued: the group it joins */
  int buf;      /* for messages */
  SrcLoc loc;
} CpOp;

typedef struct {
  CpOp *ops;
  int n, cap;
  int committed;
} CpQueue;

typedef struct {
  int group;
  int acc;  /* the accumulator buffer */
  int areg; /* A's registers (a fragment), or -1 */
  int an;   /* ... the registers it reads, from lane l's a0[l] on */
  int32_t a0[WARPGROUP];
  int32_t *bytes;
  int nbytes;
} WgOp;

typedef struct {
  WgOp *ops;
  int n, cap;
  int committed;
} WgQueue;

typedef struct Roles Roles;

typedef struct {
  const Kernel *k;
  Diags *d;
  int T;                          /* threads per block */
  Val *vars;                      /* [var * T + thread] */
  Val *uni;                       /* [var]: the launch's values (sizes, scalars, constants) */
  void **data;                    /* tensors: the caller's arrays */
  int64_t (*dims)[TL_MAX_RANK];
  int64_t (*stride)[TL_MAX_RANK]; /* tensors: elements per step of each dimension */
  int64_t *elems;                 /* tensors: the elements the data spans */
  Val **reg;                      /* LOCAL buffers: [buf][thread * local_size + i] */
  uint8_t **reg_set;              /* written bits, the same shape */
  uint16_t **a_busy;              /* the same shape: wgmma groups in flight reading it as A */
  uint16_t *acc_busy;             /* [buf * T + thread]: wgmma groups in flight on it */
  uint8_t *acc_dirty;             /* [buf * T + thread]: written since the last wgmma.fence */
  uint8_t *smem;
  Shadow *shadow;
  int64_t smem_bytes;
  uint32_t epoch;
  uint32_t *nid;       /* [thread]: its named interval inside roles, (seq << 1) | role; 0 outside */
  uint32_t named_seq;  /* the last seq of a named interval */
  uint32_t roles_base; /* the first seq of the running roles' named intervals */
  Roles *roles;        /* the warp-specialized roles running (NULL: none) */
  int role;            /* which of them runs now */
  uint64_t progress;   /* mbarrier arrivals, bytes and inits, and roles finished: what can unblock a wait */
  uint8_t *active;     /* [thread]: in the current mask */
  uint32_t *fences;
  CpQueue *cp;         /* per thread */
  WgQueue *wg;         /* per warpgroup */
  Mbar *mbars;         /* the block's initialized mbarriers */
  int nmbars, cap_mbars;
  Val *stage;          /* [thread * (1 + TL_MAX_RANK)]: a statement's values before its writes */
  int *pool;           /* masks, carved as statements nest */
  int64_t pool_top;    /* ints used */
  int64_t pool_cap;
  int64_t block[3], grid[3];
  int64_t blk;              /* the block's number, x fastest */
  BlockWrites written;      /* tensors: which block wrote each element */
  InterpStats stats;
  int64_t steps, max_steps; /* statements run, one per thread; the budget (0: none) */
  SrcLoc loc;
  bool failed;
} Th;

/* ---------------------------------------------------------------- errors */

static void fail(Th *th, SrcLoc loc, int t, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail(Th *th, SrcLoc loc, int t, const char *fmt, ...)
{
  if (th->failed)
    return;
  th->failed = true;
  char msg[600], who[64] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (t >= 0)
    snprintf(who, sizeof who, ", thread %d", t);
  error_at(th->d, loc.line ? loc : th->loc, "%s (kernel '%s', block %lld, %lld, %lld%s)", msg, th->k->name,
           (long long)th->block[0], (long long)th->block[1], (long long)th->block[2], who);
}

/* "shared 'xs'[0, 17]": an element, for messages. */
static const char *elem_text(char *out, size_t cap, const Th *th, int b, const int64_t *idx, int n)
{
  const Buffer *B = &th->k->bufs[b];
  const char *scope = B->scope == SCOPE_LOCAL ? "register" : scope_name(B->scope);
  size_t len = (size_t)snprintf(out, cap, "%s '%s'", scope, B->name);
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? ", " : "[", (long long)idx[i]);
  if (len < cap)
    snprintf(out + len, cap - len, "]");
  return out;
}

/* Blocks run in no particular order: a tensor's element read after another block wrote it, or
 * written over another block's different value, is an error (interp_tensor_read/write). */
static bool tensor_order(Th *th, SrcLoc loc, int t, int b, const int64_t *idx, int n, int64_t at, int lanes,
                         const Val *v)
{
  const Buffer *B = &th->k->bufs[b];
  th->stats.tensor_elements += lanes;
  for (int l = 0; l < lanes; l++) {
    int64_t other = v ? interp_tensor_write(&th->written, th->k->nbufs, b, th->elems[b], B->elem, th->data[b],
                                            at + l, th->blk, v[l])
                      : interp_tensor_read(&th->written, b, at + l, th->blk);
    if (other >= 0) {
      char e[160], msg[400];
      int64_t at_l[TL_MAX_RANK]; /* the vector's element l: the next ones along the last dimension */
      memcpy(at_l, idx, sizeof *idx * (size_t)n);
      at_l[n - 1] += l;
      fail(th, loc, t, "%s",
           interp_order_text(msg, sizeof msg, elem_text(e, sizeof e, th, b, at_l, n), v != NULL, th->grid,
                             other));
      return false;
    }
  }
  return true;
}

/* ---------------------------------------------------------------- masks */

/* n ints from the pool, 8-aligned (loops keep int64 trip counts there). */
static int *pool_take(Th *th, int n)
{
  n += n & 1;
  if (th->pool_top + n > th->pool_cap) {
    fail(th, th->loc, -1, "statements nested too deeply for the interpreter");
    return NULL;
  }
  int *p = th->pool + th->pool_top;
  th->pool_top += n;
  return p;
}

/* Makes `to` the active set (the flags shuffles read) in place of `from`. */
static void set_active(Th *th, Mask from, Mask to)
{
  for (int i = 0; i < from.n; i++)
    th->active[from.t[i]] = 0;
  for (int i = 0; i < to.n; i++)
    th->active[to.t[i]] = 1;
}

/* ---------------------------------------------------------------- addresses */

static bool index_in(Th *th, SrcLoc loc, int t, int b, const int64_t *idx, int n, const int64_t *dims)
{
  for (int d = 0; d < n; d++)
    if (idx[d] < 0 || idx[d] >= dims[d]) {
      const Buffer *B = &th->k->bufs[b];
      char e[160];
      size_t len = 0;
      for (int i = 0; i < n && len < sizeof e; i++)
        len += (size_t)snprintf(e + len, sizeof e - len, "%s%lld", i ? ", " : "[", (long long)idx[i]);
      fail(th, loc, t, "index %s] is out of bounds of %s '%s': dimension %d has size %lld", e,
           B->scope == SCOPE_LOCAL ? "register" : scope_name(B->scope), B->name, d, (long long)dims[d]);
      return false;
    }
  return true;
}

/* Where lanes elements from b[idx] live: a tensor's element, a shared byte, a
 * register; false (and an error) when they fall outside or are misaligned. */
static bool locate(Th *th, SrcLoc loc, int t, int b, const int64_t *idx, int n, int lanes, int64_t *at)
{
  const Buffer *B = &th->k->bufs[b];
  int64_t esize = type_bytes(B->elem), align = esize * lanes;
  align &= -align;
  char e[160];
  switch (B->scope) {
  case SCOPE_GLOBAL: {
    if (!index_in(th, loc, t, b, idx, n, th->dims[b]))
      return false;
    int64_t off = 0;
    for (int d = 0; d < n; d++)
      off += idx[d] * th->stride[b][d];
    if (lanes > 1 && th->stride[b][n - 1] != 1) {
      fail(th, loc, t, "a vector of %d elements at %s, whose elements are not adjacent (stride %lld)", lanes,
           elem_text(e, sizeof e, th, b, idx, n), (long long)th->stride[b][n - 1]);
      return false;
    }
    if (off + lanes > th->elems[b]) {
      fail(th, loc, t, "%d elements from %s run past the end of the tensor (%lld elements)", lanes,
           elem_text(e, sizeof e, th, b, idx, n), (long long)th->elems[b]);
      return false;
    }
    if ((uintptr_t)((const char *)th->data[b] + off * esize) % (uintptr_t)align) {
      fail(th, loc, t, "a vector of %d elements at %s is not aligned to %lld bytes", lanes,
           elem_text(e, sizeof e, th, b, idx, n), (long long)align);
      return false;
    }
    *at = off;
    return true;
  }
  case SCOPE_SHARED: {
    if (n != B->rank || !index_in(th, loc, t, b, idx, n, B->tile_shape))
      return false;
    int64_t off = smem_elem_offset(B, idx, n);
    if (off < 0 || off + lanes > buffer_elems(B)) {
      fail(th, loc, t, "%d elements from %s run past the end of the tile", lanes,
           elem_text(e, sizeof e, th, b, idx, n));
      return false;
    }
    int64_t byte = B->smem_offset + off * esize;
    if (byte % align) {
      fail(th, loc, t, "a vector of %d elements at %s (byte %lld) is not aligned to %lld bytes", lanes,
           elem_text(e, sizeof e, th, b, idx, n), (long long)byte, (long long)align);
      return false;
    }
    if (byte < 0 || byte + lanes * esize > th->smem_bytes) {
      fail(th, loc, t, "%s lies outside the block's %lld bytes of shared memory",
           elem_text(e, sizeof e, th, b, idx, n), (long long)th->smem_bytes);
      return false;
    }
    *at = byte;
    return true;
  }
  case SCOPE_LOCAL:
    if (n != 1 || idx[0] < 0 || idx[0] + lanes > B->local_size) {
      fail(th, loc, t, "%d registers from %s run past the array's %lld", lanes,
           elem_text(e, sizeof e, th, b, idx, n), (long long)B->local_size);
      return false;
    }
    *at = idx[0];
    return true;
  default: DIE("%s buffer '%s' at thread level", scope_name(B->scope), B->name);
  }
}

/* ---------------------------------------------------------------- shared memory */

enum { NAMED_MIXED = 1 }; /* Shadow.r_named of reads in different named intervals (ids are 2 and up) */

/* Whether an access made in barrier interval epoch and named interval named, by a thread other
 * than t, is ordered before t's access now: a barrier of the whole block since, or a named
 * barrier of the whole of t's role since the access, made by the same role of the running roles
 * (Execution, above). */
static bool ordered(const Th *th, uint32_t epoch, uint32_t named, int t)
{
  uint32_t now = th->nid[t];
  return epoch != th->epoch || (named > NAMED_MIXED && now && named != now && (named & 1) == (now & 1) &&
                                named >> 1 >= th->roles_base);
}

/* Thread t reads n bytes at byte (element b[idx], for messages). */
static bool shared_read(Th *th, SrcLoc loc, int t, int64_t byte, int n, int b, const int64_t *idx, int nidx)
{
  char e[160];
  th->stats.shared_bytes += n;
  for (int64_t i = byte; i < byte + n; i++) {
    Shadow *s = &th->shadow[i];
    if (s->inflight) {
      fail(th, loc, t, "%s is read while a cp.async into it is in flight (its group was not waited for)",
           elem_text(e, sizeof e, th, b, idx, nidx));
      return false;
    }
    if (!s->written) {
      fail(th, loc, t, "%s is read before anything wrote it", elem_text(e, sizeof e, th, b, idx, nidx));
      return false;
    }
    if (s->w_thread != t && !s->w_async && !ordered(th, s->w_epoch, s->w_named, t)) {
      fail(th, loc, t, "data race on %s: written by thread %d and read by thread %d with no barrier between",
           elem_text(e, sizeof e, th, b, idx, nidx), s->w_thread, t);
      return false;
    }
    if (ordered(th, s->r_epoch, s->r_named, t)) { /* the earlier reads are ordered before this one */
      s->r_epoch = th->epoch;
      s->r_named = th->nid[t];
      s->r_thread = t;
      s->r_many = 0;
    } else if (s->r_thread != t) {
      s->r_many = 1;
      if (s->r_named != th->nid[t])
        s->r_named = NAMED_MIXED;
    }
  }
  return true;
}

/* Thread t writes the n bytes `bits` at byte.  Two threads storing the same
 * bytes between two barriers is not a race (the copies of a replicated
 * fragment all store their value); different bytes are. */
static bool shared_write(Th *th, SrcLoc loc, int t, int64_t byte, int n, const uint8_t *bits, int b,
                         const int64_t *idx, int nidx)
{
  char e[160];
  th->stats.shared_bytes += n;
  for (int64_t i = byte; i < byte + n; i++) {
    Shadow *s = &th->shadow[i];
    if (s->inflight) {
      fail(th, loc, t, "%s is written while a cp.async into it is in flight",
           elem_text(e, sizeof e, th, b, idx, nidx));
      return false;
    }
    if (s->async_reads) {
      fail(th, loc, t, "%s is written while a wgmma may still read it (its group was not waited for)",
           elem_text(e, sizeof e, th, b, idx, nidx));
      return false;
    }
    if (s->w_thread != t && th->smem[i] != bits[i - byte] && !ordered(th, s->w_epoch, s->w_named, t)) {
      fail(th, loc, t, "data race on %s: threads %d and %d write different values with no barrier between",
           elem_text(e, sizeof e, th, b, idx, nidx), s->w_thread, t);
      return false;
    }
    if ((s->r_many || s->r_thread != t) && !ordered(th, s->r_epoch, s->r_named, t)) {
      fail(th, loc, t, "data race on %s: read by thread %d and written by thread %d with no barrier between",
           elem_text(e, sizeof e, th, b, idx, nidx), s->r_thread != t ? s->r_thread : -1, t);
      return false;
    }
  }
  for (int64_t i = byte; i < byte + n; i++) {
    Shadow *s = &th->shadow[i];
    s->written = 1;
    s->w_epoch = th->epoch;
    s->w_named = th->nid[t];
    s->w_thread = t;
    s->w_fences = th->fences[t];
    s->w_async = 0;
  }
  memcpy(th->smem + byte, bits, (size_t)n);
  return true;
}

/* ---------------------------------------------------------------- element access */

static Val eval(Th *th, const Expr *e, int t);

static bool eval_indices(Th *th, Expr *const *args, int n, int t, int64_t *idx)
{
  for (int i = 0; i < n; i++)
    idx[i] = eval(th, args[i], t).i;
  return !th->failed;
}

static bool reg_usable(Th *th, SrcLoc loc, int t, int b, int64_t i, bool reading)
{
  char e[160];
  bool a_busy = th->a_busy[b][(int64_t)t * th->k->bufs[b].local_size + i];
  if (th->acc_busy[b * th->T + t] || a_busy) {
    fail(th, loc, t, "%s is %s while a wgmma %s it (before the wgmma.wait_group that covers it)",
         elem_text(e, sizeof e, th, b, &i, 1), reading ? "read" : "written", a_busy ? "reads" : "writes");
    return false;
  }
  if (reading && !th->reg_set[b][(int64_t)t * th->k->bufs[b].local_size + i]) {
    fail(th, loc, t, "%s is read before anything wrote it", elem_text(e, sizeof e, th, b, &i, 1));
    return false;
  }
  return true;
}

/* lanes elements of b from idx, as b's element type, into v. */
static bool read_elems(Th *th, SrcLoc loc, int t, int b, const int64_t *idx, int n, int lanes, Val *v)
{
  const Buffer *B = &th->k->bufs[b];
  int64_t at;
  if (!locate(th, loc, t, b, idx, n, lanes, &at))
    return false;
  switch (B->scope) {
  case SCOPE_GLOBAL:
    if (!tensor_order(th, loc, t, b, idx, n, at, lanes, NULL))
      return false;
    for (int l = 0; l < lanes; l++)
      v[l] = val_load(B->elem, th->data[b], at + l);
    return true;
  case SCOPE_SHARED:
    if (!shared_read(th, loc, t, at, lanes * type_bytes(B->elem), b, idx, n))
      return false;
    for (int l = 0; l < lanes; l++)
      v[l] = val_load(B->elem, th->smem + at, l);
    return true;
  default:
    for (int l = 0; l < lanes; l++) {
      if (!reg_usable(th, loc, t, b, at + l, true))
        return false;
      v[l] = th->reg[b][(int64_t)t * B->local_size + at + l];
    }
    return true;
  }
}

/* v holds values of b's element type. */
static bool write_elems(Th *th, SrcLoc loc, int t, int b, const int64_t *idx, int n, int lanes, const Val *v)
{
  const Buffer *B = &th->k->bufs[b];
  int64_t at;
  if (!locate(th, loc, t, b, idx, n, lanes, &at))
    return false;
  switch (B->scope) {
  case SCOPE_GLOBAL:
    if (!tensor_order(th, loc, t, b, idx, n, at, lanes, v))
      return false;
    for (int l = 0; l < lanes; l++)
      val_store(B->elem, th->data[b], at + l, v[l]);
    return true;
  case SCOPE_SHARED: {
    uint8_t bits[64 * 8];
    for (int l = 0; l < lanes; l++)
      val_store(B->elem, bits, l, v[l]);
    return shared_write(th, loc, t, at, lanes * type_bytes(B->elem), bits, b, idx, n);
  }
  default:
    for (int l = 0; l < lanes; l++) {
      if (!reg_usable(th, loc, t, b, at + l, false))
        return false;
      int64_t i = (int64_t)t * B->local_size + at + l;
      th->reg[b][i] = v[l];
      th->reg_set[b][i] = 1;
    }
    th->acc_dirty[b * th->T + t] = 1;
    return true;
  }
}

/* ---------------------------------------------------------------- expressions */

static Val binary(Th *th, const Expr *e, int t)
{
  TypeKind ty = e->a->type;
  Val a = eval(th, e->a, t);
  /* && and || look at their right side only when it matters, as tile.c does */
  if (e->op == OP_LAND && !a.i)
    return (Val){.i = 0};
  if (e->op == OP_LOR && a.i)
    return (Val){.i = 1};
  Val b = eval(th, e->b, t);
  if (th->failed)
    return zero;
  if (e->op == OP_LAND || e->op == OP_LOR)
    return (Val){.i = b.i != 0};
  Val r;
  ValStatus st = val_binary((OpKind)e->op, ty, e->b->type, a, b, &r);
  if (st != VAL_OK) {
    char msg[128];
    fail(th, e->loc, t, "%s", val_status_text(st, (OpKind)e->op, ty, e->b->type, b, msg, sizeof msg));
  }
  return r;
}

/* shfl.bfly(x, m): x as lane (lane ^ m) of the same warp holds it. */
static Val shuffle(Th *th, const Expr *e, int t)
{
  int64_t m = eval(th, e->args[1], t).i;
  int partner = (int)((t & ~(WARP - 1)) | ((t & (WARP - 1)) ^ (m & (WARP - 1))));
  if (th->failed)
    return zero;
  if (m < 0 || m >= WARP || partner >= th->T || !th->active[partner]) {
    fail(th, e->loc, t, "shfl.bfly by %lld reads lane %d, which is not running this statement", (long long)m,
         partner % WARP);
    return zero;
  }
  return eval(th, e->args[0], partner);
}

static Val call(Th *th, const Expr *e, int t)
{
  if (e->op == FN_SHFL_BFLY)
    return shuffle(th, e, t);
  Val x[3] = {zero, zero, zero}, r = zero;
  for (int i = 0; i < e->nargs && i < 3; i++)
    x[i] = eval(th, e->args[i], t);
  if (!th->failed && !val_intrinsic((IntrinsicKind)e->op, e->type, x, &r))
    DIE("intrinsic %s at thread level", intrinsic_name((IntrinsicKind)e->op));
  return r;
}

static Val load(Th *th, const Expr *e, int t)
{
  int64_t idx[TL_MAX_RANK];
  Val v = zero;
  const Buffer *B = &th->k->bufs[e->buf];
  if (B->scope == SCOPE_LOCAL) { /* registers, most loads: read_elems's checks, inline */
    int64_t i = eval(th, e->args[0], t).i, at = (int64_t)t * B->local_size + i;
    if (i >= 0 && i < B->local_size && th->reg_set[e->buf][at] && !th->acc_busy[e->buf * th->T + t] &&
        !th->a_busy[e->buf][at]) {
      v = th->reg[e->buf][at];
      return B->elem == e->type ? v : val_convert(B->elem, e->type, v);
    }
  }
  if (!eval_indices(th, e->args, e->nargs, t, idx) ||
      !read_elems(th, e->loc, t, e->buf, idx, e->nargs, 1, &v))
    return zero;
  return val_convert(th->k->bufs[e->buf].elem, e->type, v);
}

/* Whether &buf[idx] is a multiple of e->i bytes: the host address of a tensor's
 * element, the block offset of a shared one (the block's shared memory starts
 * 1024-aligned). */
static Val aligned(Th *th, const Expr *e, int t)
{
  int64_t idx[TL_MAX_RANK], at;
  if (!eval_indices(th, e->args, e->nargs, t, idx))
    return zero;
  const Buffer *B = &th->k->bufs[e->buf];
  uintptr_t addr;
  if (B->scope == SCOPE_GLOBAL) {
    int64_t off = 0;
    for (int d = 0; d < e->nargs; d++)
      off += idx[d] * th->stride[e->buf][d];
    addr = (uintptr_t)((const char *)th->data[e->buf] + off * type_bytes(B->elem));
  } else {
    if (!locate(th, e->loc, t, e->buf, idx, e->nargs, 1, &at))
      return zero;
    addr = (uintptr_t)at;
  }
  return (Val){.i = addr % (uintptr_t)e->i == 0};
}

static Val eval(Th *th, const Expr *e, int t)
{
  if (th->failed)
    return zero;
  switch (e->kind) {
  case EX_INT: return (Val){.i = e->type == TY_I32 ? (int32_t)e->i : type_wrap_int(e->type, e->i)};
  case EX_FLOAT: return (Val){.f = val_round(e->type, e->f)};
  case EX_VAR: return th->vars[(int64_t)e->var * th->T + t];
  case EX_LOAD: return load(th, e, t);
  case EX_UNARY: return val_unary((OpKind)e->op, e->type, eval(th, e->a, t));
  case EX_BINARY: return binary(th, e, t);
  case EX_CALL: return call(th, e, t);
  case EX_CAST: {
    Val x = eval(th, e->a, t);
    return e->a->type == e->type ? x : val_convert(e->a->type, e->type, x);
  }
  case EX_SELECT: return eval(th, e->a, t).i ? eval(th, e->b, t) : eval(th, e->c, t);
  case EX_ALIGNED: return aligned(th, e, t);
  }
  DIE("expression kind %d", e->kind);
}

/* ---------------------------------------------------------------- per-thread statements */

static void set_var(Th *th, int v, int t, TypeKind from, Val x)
{
  TypeKind to = th->k->vars[v].type;
  th->vars[(int64_t)v * th->T + t] = from == to ? x : val_convert(from, to, x);
}

/* let, assign, store: every active thread evaluates, then every one writes,
 * as a warp's lanes do (a shuffle reads its partner's old value). */
static bool assign_all(Th *th, const Stmt *s, Mask m)
{
  enum { W = 1 + TL_MAX_RANK };
  bool to_var = s->kind != ST_STORE;
  for (int i = 0; i < m.n; i++) {
    int t = m.t[i];
    Val *v = &th->stage[(int64_t)t * W];
    v[0] = eval(th, s->value, t);
    for (int d = 0; !to_var && d < s->nidx; d++)
      v[1 + d] = eval(th, s->idx[d], t);
    if (th->failed)
      return false;
  }
  for (int i = 0; i < m.n; i++) {
    int t = m.t[i];
    Val *v = &th->stage[(int64_t)t * W];
    if (to_var) {
      set_var(th, s->var, t, s->value->type, v[0]);
      continue;
    }
    int64_t idx[TL_MAX_RANK];
    for (int d = 0; d < s->nidx; d++)
      idx[d] = v[1 + d].i;
    Val x = val_convert(s->value->type, th->k->bufs[s->buf].elem, v[0]);
    if (!write_elems(th, s->loc, t, s->buf, idx, s->nidx, 1, &x))
      return false;
  }
  return true;
}

/* buf[idx] = op(buf[idx], value) without the race checks (atomics do not race with each other);
 * another block's plain write of a tensor element is still an order error (interp_tensor_atomic). */
static bool atomic(Th *th, const Stmt *s, int t)
{
  int64_t idx[TL_MAX_RANK], at;
  const Buffer *B = &th->k->bufs[s->buf];
  Val v = val_convert(s->value->type, B->elem, eval(th, s->value, t));
  if (!eval_indices(th, s->idx, s->nidx, t, idx) || !locate(th, s->loc, t, s->buf, idx, s->nidx, 1, &at))
    return false;
  if (B->scope == SCOPE_LOCAL)
    DIE("atomic on a register");
  void *base = B->scope == SCOPE_GLOBAL ? th->data[s->buf] : th->smem + at;
  int64_t off = B->scope == SCOPE_GLOBAL ? at : 0;
  if (B->scope == SCOPE_GLOBAL) {
    th->stats.tensor_elements++;
    int64_t other = interp_tensor_atomic(&th->written, th->k->nbufs, s->buf, th->elems[s->buf], at, th->blk);
    if (other >= 0) {
      char e[160], msg[400];
      fail(th, s->loc, t, "%s",
           interp_order_text(msg, sizeof msg, elem_text(e, sizeof e, th, s->buf, idx, s->nidx), false,
                             th->grid, other));
      return false;
    }
  }
  val_store(B->elem, base, off, val_combine(s->reduce, B->elem, val_load(B->elem, base, off), v));
  if (B->scope == SCOPE_SHARED)
    for (int64_t i = at; i < at + type_bytes(B->elem); i++)
      th->shadow[i].written = 1;
  return true;
}

static bool vcopy(Th *th, const Stmt *s, int t)
{
  int64_t si[TL_MAX_RANK], di[TL_MAX_RANK];
  Val v[64];
  if (s->lanes < 1 || s->lanes > 64)
    DIE("vcopy of %d lanes", s->lanes);
  TypeKind from = th->k->bufs[s->src_buf].elem, to = th->k->bufs[s->buf].elem;
  if (!eval_indices(th, s->src_idx, s->nsrc_idx, t, si) || !eval_indices(th, s->idx, s->nidx, t, di) ||
      !read_elems(th, s->loc, t, s->src_buf, si, s->nsrc_idx, s->lanes, v))
    return false;
  for (int l = 0; l < s->lanes; l++)
    v[l] = val_convert(from, to, v[l]);
  return write_elems(th, s->loc, t, s->buf, di, s->nidx, s->lanes, v);
}

/* cp.async: src_bytes (all of its 16, 8 or 4 bytes, or 0) of the tensor now, into the shared
 * bytes when the thread waits for the group; until then the bytes are in flight. */
static bool cp_async(Th *th, const Stmt *s, int t)
{
  int64_t si[TL_MAX_RANK], di[TL_MAX_RANK], src, dst;
  const Buffer *S = &th->k->bufs[s->src_buf], *D = &th->k->bufs[s->buf];
  int64_t bytes = eval(th, s->src_bytes, t).i;
  if (!eval_indices(th, s->src_idx, s->nsrc_idx, t, si) || !eval_indices(th, s->idx, s->nidx, t, di))
    return false;
  int size = cp_async_size(th->k, s), lanes = s->lanes;
  if (!locate(th, s->loc, t, s->buf, di, s->nidx, lanes, &dst))
    return false;
  CpOp op = {.byte = dst, .size = size, .group = th->cp[t].committed, .buf = s->buf, .loc = s->loc};
  if (bytes != 0 && bytes != size) {
    fail(th, s->loc, t, "cp.async of %lld bytes (%d or 0)", (long long)bytes, size);
    return false;
  }
  if (bytes) {
    if (type_bytes(S->elem) != type_bytes(D->elem))
      DIE("cp.async between element sizes %d and %d", type_bytes(S->elem), type_bytes(D->elem));
    if (!locate(th, s->loc, t, s->src_buf, si, s->nsrc_idx, lanes, &src) ||
        !tensor_order(th, s->loc, t, s->src_buf, si, s->nsrc_idx, src, lanes, NULL))
      return false;
    memcpy(op.data, (const char *)th->data[s->src_buf] + src * type_bytes(S->elem), (size_t)size);
  }
  for (int64_t i = dst; i < dst + size; i++) {
    Shadow *sh = &th->shadow[i];
    char e[160];
    if (sh->inflight || sh->async_reads ||
        ((sh->r_many || sh->r_thread != t) && !ordered(th, sh->r_epoch, sh->r_named, t))) {
      fail(th, s->loc, t, "cp.async into %s while %s", elem_text(e, sizeof e, th, s->buf, di, s->nidx),
           sh->inflight      ? "another cp.async into it is in flight"
           : sh->async_reads ? "a wgmma may still read it"
                             : "another thread read it since the last barrier (a data race)");
      return false;
    }
  }
  CpQueue *q = &th->cp[t];
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 16;
    CpOp *ops = realloc(q->ops, sizeof *ops * (size_t)cap);
    if (!ops) {
      fail(th, s->loc, t, "out of memory");
      return false;
    }
    q->ops = ops;
    q->cap = cap;
  }
  q->ops[q->n++] = op;
  for (int64_t i = dst; i < dst + size; i++)
    th->shadow[i].inflight++;
  return true;
}

/* cp.async.wait_group pending: every copy of thread t outside the newest
 * `pending` committed groups lands now, as the thread's own write. */
static bool cp_wait(Th *th, const Stmt *s, int t)
{
  CpQueue *q = &th->cp[t];
  int keep = 0;
  for (int i = 0; i < q->n; i++) {
    CpOp *op = &q->ops[i];
    if (op->group >= q->committed - s->pending) {
      q->ops[keep++] = *op;
      continue;
    }
    for (int64_t b = op->byte; b < op->byte + op->size; b++)
      th->shadow[b].inflight--;
    int64_t idx = (op->byte - th->k->bufs[op->buf].smem_offset) / type_bytes(th->k->bufs[op->buf].elem);
    th->stats.async_copies++;
    if (!shared_write(th, op->loc, t, op->byte, op->size, op->data, op->buf, &idx, 1))
      return false;
  }
  q->n = keep;
  return true;
}

/* ---------------------------------------------------------------- mbarriers and TMA */

/* The mbarrier statement s names, for thread t; init: made (or reset) there. */
static Mbar *mbar_at(Th *th, const Stmt *s, int t, bool init)
{
  int64_t idx, byte;
  if (!eval_indices(th, &s->bar_idx, 1, t, &idx) || !locate(th, s->loc, t, s->bar, &idx, 1, 1, &byte))
    return NULL;
  for (int i = 0; i < th->nmbars; i++)
    if (th->mbars[i].byte == byte)
      return &th->mbars[i];
  if (!init) {
    fail(th, s->loc, t, "%s on %s[%lld], which no mbarrier.init initialized", stmt_spelling(s->kind),
         th->k->bufs[s->bar].name, (long long)idx);
    return NULL;
  }
  if (th->nmbars == th->cap_mbars) {
    int cap = th->cap_mbars ? 2 * th->cap_mbars : 8;
    Mbar *m = realloc(th->mbars, sizeof *m * (size_t)cap);
    if (!m) {
      fail(th, s->loc, t, "out of memory");
      return NULL;
    }
    th->mbars = m;
    th->cap_mbars = cap;
  }
  th->mbars[th->nmbars] = (Mbar){.byte = byte};
  return &th->mbars[th->nmbars++];
}

static bool role_wait(Th *th, const Stmt *s, int t, char *why, size_t cap);

/* The open phase completes once it has its arrivals and its bytes. */
static void mbar_settle(Mbar *m)
{
  if (m->pending == 0 && m->tx == 0) {
    m->complete++;
    m->pending = m->count;
  }
}

static bool mbar_arrive(Th *th, const Stmt *s, int t, Mbar *m)
{
  if (m->pending <= 0) {
    fail(th, s->loc, t, "more arrivals on %s than its phase expects (%d)", th->k->bufs[s->bar].name,
         m->count);
    return false;
  }
  m->pending--;
  th->progress++;
  mbar_settle(m);
  return true;
}

static bool mbarrier(Th *th, const Stmt *s, int t)
{
  Mbar *m = mbar_at(th, s, t, s->kind == ST_MBAR_INIT);
  if (!m)
    return false;
  int64_t v = s->value ? eval(th, s->value, t).i : 0;
  switch (s->kind) {
  case ST_MBAR_INIT:
    if (v < 1 || v > (1 << 20)) {
      fail(th, s->loc, t, "mbarrier.init with a count of %lld", (long long)v);
      return false;
    }
    *m = (Mbar){.byte = m->byte, .count = (int)v, .pending = (int)v};
    th->progress++;
    return true;
  case ST_MBAR_ARRIVE: return mbar_arrive(th, s, t, m);
  case ST_MBAR_EXPECT_TX: m->tx += v; return mbar_arrive(th, s, t, m);
  case ST_MBAR_WAIT:
    /* try_wait.parity P returns once the phase of parity P completed: the open phase's parity differs;
     * inside warp-specialized roles the other role may complete it (role_wait) */
    while ((m->complete & 1) == v) {
      char why[200] = "nothing else would complete it";
      if (!th->roles || !role_wait(th, s, t, why, sizeof why)) {
        fail(th, s->loc, t,
             "mbarrier wait on %s[%lld] (parity %lld) for a phase that has not completed (%lld completed, %d "
             "arrivals and %lld bytes missing): %s, a deadlock",
             th->k->bufs[s->bar].name, (long long)eval(th, s->bar_idx, t).i, (long long)v,
             (long long)m->complete, m->pending, (long long)m->tx, why);
        return false;
      }
      if (th->failed || !(m = mbar_at(th, s, t, false))) /* the other role may have moved th->mbars */
        return false;
    }
    return true;
  default: DIE("%s is not an mbarrier statement", stmt_spelling(s->kind));
  }
}

/* The tensor dimension of a TMA box's rows: the one before the last whose extent is not 1 (a
 * copy with slices spans dimensions that need not be the last two), else the last but one. */
static int box_rows_dim(const struct TensorMap *map, int R)
{
  for (int d = R - 2; d >= 0; d--)
    if (map->box[d] > 1)
      return d;
  return R - 2;
}

/* A TMA statement's tensor coordinates o[], its tile's indices ti[] and its box
 * rows x cols: a 1024-byte aligned panel of a wgmma swizzled tile, or an error. */
static bool tma_panel(Th *th, const Stmt *s, int t, int64_t *o, int64_t *ti, int64_t *rows, int64_t *cols)
{
  const Kernel *k = th->k;
  const struct TensorMap *map = &k->tmaps[s->tmap];
  const Buffer *T = &k->bufs[s->buf];
  int R = k->bufs[s->src_buf].rank;
  int64_t at;
  if (!eval_indices(th, s->src_idx, R, t, o) || !eval_indices(th, s->idx, s->nidx, t, ti) ||
      !locate(th, s->loc, t, s->buf, ti, s->nidx, 1, &at))
    return false;
  *rows = map->box[box_rows_dim(map, R)];
  *cols = map->box[R - 1];
  int64_t span = swizzle_span(T->swizzle);
  if (!span || at % 1024 || *cols * type_bytes(T->elem) != span || ti[s->nidx - 1] % *cols ||
      ti[s->nidx - 2] + *rows > T->tile_shape[T->rank - 2]) {
    fail(th, s->loc, t,
         "TMA box [%lld, %lld] %s %s at byte %lld: not a 1024-byte aligned panel of a wgmma swizzled tile "
         "whose rows are the box's",
         (long long)*rows, (long long)*cols, s->kind == ST_TMA_LOAD ? "into" : "from", T->name,
         (long long)at);
    return false;
  }
  return true;
}

/* Element (r, c) of a TMA statement's box (tma_panel's o[] and ti[]): its tile indices li[] and
 * shared byte *byte, and its tensor coordinates gi[] with, inside the tensor, their offset *off.
 * 1 inside the tensor, 0 outside, -1 after an error (reported). */
static int tma_elem(Th *th, const Stmt *s, int t, const int64_t *o, const int64_t *ti, int64_t r, int64_t c,
                    int64_t *li, int64_t *byte, int64_t *gi, int64_t *off)
{
  int R = th->k->bufs[s->src_buf].rank, rd = box_rows_dim(&th->k->tmaps[s->tmap], R);
  const int64_t *dims = th->dims[s->src_buf];
  for (int d = 0; d < s->nidx; d++)
    li[d] = ti[d] + (d == s->nidx - 2 ? r : d == s->nidx - 1 ? c : 0);
  if (!locate(th, s->loc, t, s->buf, li, s->nidx, 1, byte))
    return -1;
  bool inside = true;
  for (int d = 0; d < R; d++) {
    gi[d] = o[d] + (d == rd ? r : d == R - 1 ? c : 0);
    inside &= gi[d] >= 0 && gi[d] < dims[d];
  }
  *off = 0;
  for (int d = 0; inside && d < R; d++)
    *off += gi[d] * th->stride[s->src_buf][d];
  return inside;
}

/* A TMA load: the box lands at once, zeros outside the tensor, its bytes counted on the mbarrier. */
static bool tma_load(Th *th, const Stmt *s, int t)
{
  const Kernel *k = th->k;
  int R = k->bufs[s->src_buf].rank;
  const int64_t esize = type_bytes(k->bufs[s->buf].elem); /* 2, or 1 (8-bit gemm operands) */
  int64_t o[TL_MAX_RANK], di[TL_MAX_RANK], rows, cols;
  if (!tma_panel(th, s, t, o, di, &rows, &cols))
    return false;
  Mbar *m = mbar_at(th, s, t, false);
  if (!m)
    return false;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      int64_t gi[TL_MAX_RANK], li[TL_MAX_RANK], byte, off;
      int inside = tma_elem(th, s, t, o, di, r, c, li, &byte, gi, &off);
      if (inside < 0)
        return false;
      uint8_t bits[2] = {0, 0};
      if (inside) {
        if (!tensor_order(th, s->loc, t, s->src_buf, gi, R, off, 1, NULL))
          return false;
        memcpy(bits, (const char *)th->data[s->src_buf] + off * esize, (size_t)esize);
      }
      for (int64_t i = byte; i < byte + esize; i++) {
        Shadow *sh = &th->shadow[i];
        if (sh->inflight || sh->async_reads) {
          char e[160];
          fail(th, s->loc, t, "TMA load into %s while %s", elem_text(e, sizeof e, th, s->buf, li, s->nidx),
               sh->inflight ? "a cp.async into it is in flight" : "a wgmma may still read it");
          return false;
        }
        *sh = (Shadow){.written = 1, .w_thread = t, .w_async = 1};
      }
      memcpy(th->smem + byte, bits, (size_t)esize);
    }
  th->stats.async_copies++;
  th->progress++;
  m->tx -= rows * cols * esize;
  if (m->tx < 0) {
    fail(th, s->loc, t, "TMA load of %lld bytes on %s, which expected fewer",
         (long long)(rows * cols * esize), k->bufs[s->bar].name);
    return false;
  }
  mbar_settle(m);
  return true;
}

/* A TMA store: the panel goes to the tensor at once (the elements outside it are not
 * written); each shared byte it reads must have been written before a barrier and,
 * through the generic proxy, fenced by its writer (fence.proxy.async). */
static bool tma_store(Th *th, const Stmt *s, int t)
{
  const Kernel *k = th->k;
  const Buffer *G = &k->bufs[s->src_buf], *S = &k->bufs[s->buf];
  int R = G->rank;
  int64_t o[TL_MAX_RANK], si[TL_MAX_RANK], rows, cols;
  if (!tma_panel(th, s, t, o, si, &rows, &cols))
    return false;
  char e[160];
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      int64_t gi[TL_MAX_RANK], li[TL_MAX_RANK], byte, off;
      int inside = tma_elem(th, s, t, o, si, r, c, li, &byte, gi, &off);
      if (inside < 0)
        return false;
      for (int64_t i = byte; i < byte + 2; i++) {
        const Shadow *sh = &th->shadow[i];
        const char *why = sh->inflight   ? "while a cp.async into it is in flight"
                          : !sh->written ? "before anything wrote it"
                          : sh->w_async  ? NULL
                          : !ordered(th, sh->w_epoch, sh->w_named, t)
                              ? "with no barrier after the thread that wrote it"
                          : th->fences[sh->w_thread] == sh->w_fences
                              ? "which its writer did not fence (fence.proxy.async) for the copy engine"
                              : NULL;
        if (why) {
          fail(th, s->loc, t, "TMA store reads %s %s", elem_text(e, sizeof e, th, s->buf, li, s->nidx), why);
          return false;
        }
      }
      th->stats.shared_bytes += 2;
      if (!inside)
        continue;
      Val v = val_load(S->elem, th->smem + byte, 0);
      if (!tensor_order(th, s->loc, t, s->src_buf, gi, R, off, 1, &v))
        return false;
      val_store(G->elem, th->data[s->src_buf], off, v);
    }
  th->stats.async_copies++;
  th->progress++;
  return true;
}

static bool exec_one(Th *th, const Stmt *s, int t)
{
  switch (s->kind) {
  case ST_ATOMIC: return atomic(th, s, t);
  case ST_VCOPY: return vcopy(th, s, t);
  case ST_CP_ASYNC: return cp_async(th, s, t);
  case ST_CP_COMMIT: th->cp[t].committed++; return true;
  case ST_CP_WAIT: return cp_wait(th, s, t);
  case ST_FENCE_PROXY_ASYNC: th->fences[t]++; return true;
  case ST_MBAR_INIT:
  case ST_MBAR_ARRIVE:
  case ST_MBAR_EXPECT_TX:
  case ST_MBAR_WAIT: return mbarrier(th, s, t);
  case ST_TMA_LOAD: return tma_load(th, s, t);
  case ST_TMA_STORE: return tma_store(th, s, t);
  case ST_TMA_STORE_WAIT: return true; /* the stores were done when issued */
  case ST_EVAL: eval(th, s->value, t); return !th->failed;
  default: DIE("statement %s is not per thread", stmt_spelling(s->kind));
  }
}

/* ---------------------------------------------------------------- warp collectives */

/* The warps (warpgroups, width lanes) of m, each of which must be whole. */
static bool whole_groups(Th *th, const Stmt *s, Mask m, int width)
{
  for (int i = 0; i < m.n;) {
    int first = m.t[i] - m.t[i] % width, n = 0;
    for (; i < m.n && m.t[i] < first + width; i++)
      n++;
    int want = th->T - first < width ? th->T - first : width;
    if (n != want || want != width) {
      fail(th, s->loc, first, "%s needs all %d threads of its %s; %d of %d are here", stmt_spelling(s->kind),
           width, width == WARP ? "warp" : "warpgroup", n, want);
      return false;
    }
  }
  return true;
}

static uint64_t read_u32(Th *th, SrcLoc loc, int t, int b, int64_t i)
{
  int64_t idx = i;
  Val v = zero;
  return read_elems(th, loc, t, b, &idx, 1, 1, &v) ? (uint64_t)(uint32_t)v.i : 0;
}

/* ldmatrix.x{1,2,4}[.trans]: lane 8j + r names row r of matrix j (16 bytes);
 * lane l receives, from each matrix, the two 16-bit elements at row l / 4,
 * columns 2 (l % 4) and + 1 (with .trans, the transposed matrix's). */
static bool ldmatrix(Th *th, const Stmt *s, int w)
{
  uint16_t rows[4][8][8];
  const Buffer *S = &th->k->bufs[s->src_buf];
  for (int j = 0; j < s->matrices; j++)
    for (int r = 0; r < 8; r++) {
      int t = w + 8 * j + r;
      int64_t idx[TL_MAX_RANK], at;
      if (!eval_indices(th, s->src_idx, s->nsrc_idx, t, idx) ||
          !locate(th, s->loc, t, s->src_buf, idx, s->nsrc_idx, 16 / type_bytes(S->elem), &at) ||
          !shared_read(th, s->loc, t, at, 16, s->src_buf, idx, s->nsrc_idx))
        return false;
      memcpy(rows[j][r], th->smem + at, 16);
    }
  for (int l = 0; l < WARP; l++) {
    int t = w + l;
    int64_t base = eval(th, s->idx[0], t).i;
    for (int j = 0; j < s->matrices && !th->failed; j++) {
      int r = l / 4, c = 2 * (l % 4);
      uint32_t lo = s->trans ? rows[j][c][r] : rows[j][r][c],
               hi = s->trans ? rows[j][c + 1][r] : rows[j][r][c + 1];
      Val v = {.i = (int64_t)(lo | (uint32_t)hi << 16)};
      int64_t i = base + j;
      if (!write_elems(th, s->loc, t, s->buf, &i, 1, 1, &v))
        return false;
    }
  }
  return !th->failed;
}

static double half_of(TypeKind t, uint32_t bits) { return val_from_bits(t, bits & 0xffff).f; }

/* The elements of input type t packed in a 32-bit operand register: two 16-bit
 * floats or four 8-bit integers, the first in the low bits. */
static void unpack_reg(TypeKind t, uint32_t x, double *out)
{
  if (type_is_int8(t)) {
    for (int e = 0; e < 4; e++) {
      uint32_t b = (x >> (8 * e)) & 0xff;
      out[e] = t == TY_I8 ? (double)(int8_t)(uint8_t)b : (double)b;
    }
    return;
  }
  out[0] = half_of(t, x);
  out[1] = half_of(t, x >> 16);
}

/* The values of A's 32-bit operand register r for thread t: u32 register
 * a0 + r, or (A in a 16-bit fragment) its registers a0 + 2r, + 1. */
static bool a_pair(Th *th, const Stmt *s, int t, int64_t a0, int r, double out[4])
{
  if (th->k->bufs[s->a].elem == TY_U32) {
    uint64_t x = read_u32(th, s->loc, t, s->a, a0 + r);
    unpack_reg(s->elem, (uint32_t)x, out);
    return !th->failed;
  }
  /* Read directly: wgmma's earlier reads of A (its other k steps) may still be in flight. */
  const Buffer *A = &th->k->bufs[s->a];
  for (int e = 0; e < 2; e++) {
    int64_t i = a0 + 2 * r + e, at = (int64_t)t * A->local_size + i;
    char text[160];
    if (i < 0 || i >= A->local_size || !th->reg_set[s->a][at]) {
      fail(th, s->loc, t, "%s is read by %s before anything wrote it",
           elem_text(text, sizeof text, th, s->a, &i, 1), stmt_spelling(s->kind));
      return false;
    }
    out[e] = th->reg[s->a][at].f;
  }
  return true;
}

/* The values of B's 32-bit operand register r for thread t: u32 register b0 + r,
 * or (a 16-bit buffer: gemm.c's B quads) its registers b0 + 2r, + 1. */
static bool b_pair(Th *th, const Stmt *s, int t, int64_t b0, int r, double out[4])
{
  if (th->k->bufs[s->b].elem == TY_U32) {
    unpack_reg(s->elem, (uint32_t)read_u32(th, s->loc, t, s->b, b0 + r), out);
    return !th->failed;
  }
  for (int e = 0; e < 2; e++) {
    int64_t i = b0 + 2 * r + e;
    Val v = zero;
    if (!read_elems(th, s->loc, t, s->b, &i, 1, 1, &v))
      return false;
    out[e] = v.f;
  }
  return true;
}

/* Lane l's part of a 16 x KS A operand (thread t, first register a0) into A,
 * row-major with KS columns (16, or 32 for 8-bit inputs: E = 2 or 4 elements a
 * register), as mma.sync and wgmma's register form read it: 32-bit register r
 * holds row l/4 + 8 (r % 2), columns E (l % 4) + KS/2 (r / 2) and the next E - 1. */
static bool a_lane(Th *th, const Stmt *s, int t, int l, int64_t a0, double *A)
{
  const int E = 4 / type_bytes(s->elem), KS = 8 * E;
  for (int r = 0; r < 4; r++) {
    double v[4];
    if (!a_pair(th, s, t, a0, r, v))
      return false;
    for (int e = 0; e < E; e++)
      A[(l / 4 + 8 * (r % 2)) * KS + E * (l % 4) + KS / 2 * (r / 2) + e] = v[e];
  }
  return true;
}

/* mma.sync.m16n8k16.row.col (16-bit inputs, f32 accumulator) and
 * m16n8k32.row.col (8-bit inputs, s32): D = A B + C over the warp's registers,
 * g = l / 4, q = l % 4, E = 2 (16 bits) or 4 (8 bits) elements a register, KS = 8E:
 *   A 16xKS: a0 (g, Eq..Eq+E-1)  a1 (g+8, Eq..)  a2 (g, Eq+KS/2..)  a3 (g+8, Eq+KS/2..)
 *   B KSx8:  b0 (Eq..Eq+E-1, g)  b1 (Eq+KS/2.., g)
 *   C 16x8:  c0 c1 (g, 2q..2q+1)  c2 c3 (g+8, 2q..2q+1)
 * Float products are exact in double, summed in double, rounded once to f32;
 * integer ones exact, the sum wrapping to 32 bits as the hardware's does. */
static bool mma(Th *th, const Stmt *s, int w)
{
  const int E = 4 / type_bytes(s->elem), KS = 8 * E;
  const bool int_acc = th->k->bufs[s->c].elem == TY_I32;
  double A[16 * 32], B[32][8], C[16][8]; /* A row-major with KS columns */
  for (int l = 0; l < WARP; l++) {
    int t = w + l, g = l / 4, q = l % 4;
    int64_t a0 = eval(th, s->a_reg, t).i, b0 = eval(th, s->b_reg, t).i, c0 = eval(th, s->c_reg, t).i;
    if (!a_lane(th, s, t, l, a0, A))
      return false;
    for (int r = 0; r < 2; r++) {
      double v[4];
      if (!b_pair(th, s, t, b0, r, v))
        return false;
      for (int e = 0; e < E; e++)
        B[E * q + KS / 2 * r + e][g] = v[e];
    }
    for (int r = 0; r < 4; r++) {
      int64_t i = c0 + r;
      Val v = zero;
      if (!read_elems(th, s->loc, t, s->c, &i, 1, 1, &v))
        return false;
      C[g + 8 * (r / 2)][2 * q + r % 2] = int_acc ? (double)v.i : v.f;
    }
    if (th->failed)
      return false;
  }
  for (int l = 0; l < WARP; l++) {
    int t = w + l, g = l / 4, q = l % 4;
    int64_t c0 = eval(th, s->c_reg, t).i;
    for (int r = 0; r < 4; r++) {
      int row = g + 8 * (r / 2), col = 2 * q + r % 2;
      double acc = 0;
      for (int k = 0; k < KS; k++)
        acc += A[row * KS + k] * B[k][col];
      Val v;
      if (int_acc)
        v.i = (int32_t)(uint32_t)((int64_t)C[row][col] + (int64_t)acc);
      else
        v.f = val_round(TY_F32, C[row][col] + acc);
      int64_t i = c0 + r;
      if (!write_elems(th, s->loc, t, s->c, &i, 1, 1, &v))
        return false;
    }
  }
  return true;
}

/* ---------------------------------------------------------------- wgmma */

/* The shared byte wgmma reads for element (mn, k) of an operand through its
 * descriptor (the PTX ISA's canonical swizzled layouts, of span S = 128, 64 or
 * 32 bytes by the descriptor's mode 1, 2, 3: K-major rows of S bytes, 8-row
 * groups SBO apart; MN-major rows of K, panels of S / 2 LBO apart; then the
 * chunk bits 4 up XORed with the bits from 7 up). */
static int64_t operand_byte(uint64_t desc, bool mn_major, int64_t mn, int64_t k, int64_t esize)
{
  int64_t start = (int64_t)(desc & 0x3FFF) << 4, lbo = (int64_t)((desc >> 16) & 0x3FFF) << 4,
          sbo = (int64_t)((desc >> 32) & 0x3FFF) << 4;
  int mode = (int)(desc >> 62);
  int64_t S = mode == 1 ? 128 : mode == 2 ? 64 : 32, P = S / 2;
  int64_t a = mn_major ? start + (mn % P) * 2 + (mn / P) * lbo + (k % 8) * S + (k / 8) * sbo
                       : start + (mn % 8) * S + (mn / 8) * sbo + k * esize;
  return a ^ (((a >> 7) & (S / 16 - 1)) << 4);
}

/* A descriptor as codegen builds it (cg_tensor.c: wgmma_desc), from thread t's start element. */
static bool descriptor(Th *th, const Stmt *s, int t, int b, Expr **start, int n, bool mn_major,
                       uint64_t *desc)
{
  int64_t idx[TL_MAX_RANK], at;
  uint32_t lbo, sbo;
  if (!eval_indices(th, start, n, t, idx) || !locate(th, s->loc, t, b, idx, n, 1, &at))
    return false;
  smem_wgmma_strides(&th->k->bufs[b], mn_major, &lbo, &sbo);
  *desc = smem_wgmma_desc((uint32_t)at, lbo, sbo, swizzle_span(th->k->bufs[b].swizzle));
  return true;
}

/* An input element as a number: a 16- or 8-bit float, or an 8-bit integer. */
static double wg_value(TypeKind t, const unsigned char *p)
{
  Val v = val_load(t, p, 0);
  return type_is_int8(t) ? (double)v.i : v.f;
}

static bool wg_read(Th *th, const Stmt *s, int t, int b, int64_t byte, WgOp *op, double *out)
{
  char e[160];
  const int esize = type_bytes(s->elem);
  int64_t idx = (byte - th->k->bufs[b].smem_offset) / esize;
  if (byte < 0 || byte + esize > th->smem_bytes) {
    fail(th, s->loc, t, "wgmma reads byte %lld, outside the block's shared memory", (long long)byte);
    return false;
  }
  Shadow *sh = &th->shadow[byte];
  if (sh->inflight || !sh->written) {
    fail(th, s->loc, t, "wgmma reads %s %s", elem_text(e, sizeof e, th, b, &idx, 1),
         sh->inflight ? "while a cp.async into it is in flight" : "before anything wrote it");
    return false;
  }
  if (sh->w_async) { /* a TMA load: async proxy to async proxy, published by its mbarrier */
    op->bytes[op->nbytes++] = (int32_t)byte;
    th->stats.shared_bytes += esize;
    *out = wg_value(th->k->bufs[b].elem, th->smem + byte); /* B may be another 8-bit float */
    return true;
  }
  /* wgmma reads the whole tile: any writer needs a barrier first */
  if (!ordered(th, sh->w_epoch, sh->w_named, t)) {
    fail(th, s->loc, t, "data race on %s: written by thread %d and read by wgmma with no barrier between",
         elem_text(e, sizeof e, th, b, &idx, 1), sh->w_thread);
    return false;
  }
  if (th->fences[sh->w_thread] == sh->w_fences) {
    fail(
        th, s->loc, t,
        "wgmma reads %s, which thread %d wrote without a fence.proxy.async after it (the async proxy may not "
        "see it)",
        elem_text(e, sizeof e, th, b, &idx, 1), sh->w_thread);
    return false;
  }
  op->bytes[op->nbytes++] = (int32_t)byte;
  th->stats.shared_bytes += esize;
  *out = wg_value(th->k->bufs[b].elem, th->smem + byte); /* B may be another 8-bit float */
  return true;
}

/* wgmma.mma_async m64nNk16 (m64nNk32 for 8-bit inputs, KS = 32) for warpgroup g0 (its first
 * thread): D[64, N] += A[64, KS] B[KS, N]; thread w * 32 + l holds, for n8 block j, registers
 * 4j + r = D[16w + l/4 + 8(r/2), 8j + 2(l%4) + r%2].  An i32 accumulator's sum wraps to 32 bits. */
static bool wgmma(Th *th, const Stmt *s, int g0)
{
  int N = 2 * s->acc_regs;
  const int esize = type_bytes(s->elem), KS = 32 / esize;
  const bool int_acc = th->k->bufs[s->c].elem == TY_I32;
  uint64_t da = 0, db = 0;
  for (int l = 0; l < WARPGROUP; l++) {
    uint64_t a = 0, b;
    if ((!s->a_reg && !descriptor(th, s, g0 + l, s->a, s->a_start, s->na_start, s->a_mn_major, &a)) ||
        !descriptor(th, s, g0 + l, s->b, s->b_start, s->nb_start, s->b_mn_major, &b))
      return false;
    if (s->a_reg && th->acc_dirty[s->a * th->T + g0 + l]) {
      fail(th, s->loc, g0 + l, "wgmma reads A '%s' from registers written since the last wgmma.fence",
           th->k->bufs[s->a].name);
      return false;
    }
    if (l && (a != da || b != db)) {
      fail(th, s->loc, g0 + l, "wgmma descriptors differ within the warpgroup (thread %d's and thread %d's)",
           g0, g0 + l);
      return false;
    }
    da = a;
    db = b;
    if (th->acc_dirty[s->c * th->T + g0 + l]) {
      fail(th, s->loc, g0 + l, "wgmma on accumulator '%s', written since the last wgmma.fence",
           th->k->bufs[s->c].name);
      return false;
    }
  }
  int64_t c0 = s->c_reg ? eval(th, s->c_reg, g0).i : 0; /* the m64 row block's first register */
  WgQueue *q = &th->wg[g0 / WARPGROUP];
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 8;
    WgOp *ops = realloc(q->ops, sizeof *ops * (size_t)cap);
    if (!ops) {
      fail(th, s->loc, g0, "out of memory");
      return false;
    }
    q->ops = ops;
    q->cap = cap;
  }
  WgOp *op = &q->ops[q->n];
  *op = (WgOp){.group = q->committed,
               .acc = s->c,
               .areg = s->a_reg ? s->a : -1,
               .an = th->k->bufs[s->a].elem == TY_U32 ? 4 : 8,
               .bytes = malloc(sizeof(int32_t) * (size_t)(64 + N) * (size_t)KS)};
  if (!op->bytes) {
    fail(th, s->loc, g0, "out of memory");
    return false;
  }
  q->n++;
  double *A = malloc(sizeof(double) * 64 * (size_t)KS), *B = malloc(sizeof(double) * (size_t)KS * (size_t)N);
  bool ok = A && B;
  if (s->a_reg) /* warp w's lanes: rows 16w .. 16w + 15, as mma.sync's A */
    for (int l = 0; ok && l < WARPGROUP; l++) {
      op->a0[l] = (int32_t)eval(th, s->a_reg, g0 + l).i;
      ok = a_lane(th, s, g0 + l, l % WARP, op->a0[l], &A[16 * (l / WARP) * KS]);
    }
  else
    for (int m = 0; ok && m < 64; m++)
      for (int k = 0; ok && k < KS; k++)
        ok = wg_read(th, s, g0, s->a, operand_byte(da, s->a_mn_major, m, k, esize), op, &A[m * KS + k]);
  for (int n = 0; ok && n < N; n++)
    for (int k = 0; ok && k < KS; k++)
      ok = wg_read(th, s, g0, s->b, operand_byte(db, s->b_mn_major, n, k, esize), op, &B[k * N + n]);
  for (int l = 0; ok && l < WARPGROUP; l++) {
    int t = g0 + l, w = l / WARP, ln = l % WARP;
    const Buffer *Cb = &th->k->bufs[s->c];
    for (int i = 0; ok && i < s->acc_regs; i++) {
      int j = i / 4, r = i % 4;
      int row = 16 * w + ln / 4 + 8 * (r / 2), col = 8 * j + 2 * (ln % 4) + r % 2;
      int64_t at = (int64_t)t * Cb->local_size + c0 + i;
      if (!th->reg_set[s->c][at]) {
        int64_t ii = c0 + i;
        char e[160];
        fail(th, s->loc, t, "%s is read by wgmma before anything wrote it",
             elem_text(e, sizeof e, th, s->c, &ii, 1));
        ok = false;
        break;
      }
      double acc = 0;
      for (int k = 0; k < KS; k++)
        acc += A[row * KS + k] * B[k * N + col];
      if (int_acc)
        th->reg[s->c][at].i = (int32_t)(uint32_t)(th->reg[s->c][at].i + (int64_t)acc);
      else
        th->reg[s->c][at].f = val_round(TY_F32, th->reg[s->c][at].f + acc);
    }
    th->acc_busy[s->c * th->T + t]++;
    /* A's registers are busy one by one: an interleaved fill writes the next K step's while
       this one's multiply runs (gemm.c, lw_interleave_register_a) */
    for (int i = 0; s->a_reg && i < op->an; i++)
      th->a_busy[s->a][(int64_t)t * th->k->bufs[s->a].local_size + op->a0[l] + i]++;
  }
  for (int i = 0; ok && i < op->nbytes; i++)
    th->shadow[op->bytes[i]].async_reads++;
  if (!ok)
    op->nbytes = 0; /* nothing was counted for a failed one */
  free(A);
  free(B);
  if (!A || !B)
    fail(th, s->loc, g0, "out of memory");
  return ok && !th->failed;
}

/* wgmma.wait_group pending: the warpgroup's groups but the newest `pending` complete. */
static void wgmma_wait(Th *th, const Stmt *s, int g0)
{
  WgQueue *q = &th->wg[g0 / WARPGROUP];
  int keep = 0;
  for (int i = 0; i < q->n; i++) {
    WgOp *op = &q->ops[i];
    if (op->group >= q->committed - s->pending) {
      q->ops[keep++] = *op;
      continue;
    }
    for (int b = 0; b < op->nbytes; b++)
      th->shadow[op->bytes[b]].async_reads--;
    for (int l = 0; l < WARPGROUP; l++) {
      th->acc_busy[op->acc * th->T + g0 + l]--;
      for (int i = 0; op->areg >= 0 && i < op->an; i++)
        th->a_busy[op->areg][(int64_t)(g0 + l) * th->k->bufs[op->areg].local_size + op->a0[l] + i]--;
    }
    free(op->bytes);
  }
  q->n = keep;
}

/* A collective statement, once per warp (warpgroup) of m. */
static bool collective(Th *th, const Stmt *s, Mask m)
{
  int width = s->kind == ST_LDMATRIX || s->kind == ST_MMA ? WARP : WARPGROUP;
  if (!whole_groups(th, s, m, width))
    return false;
  for (int i = 0; i < m.n; i += width) {
    int g0 = m.t[i];
    th->stats.collectives += s->kind == ST_LDMATRIX || s->kind == ST_MMA || s->kind == ST_WGMMA;
    switch (s->kind) {
    case ST_LDMATRIX:
      if (!ldmatrix(th, s, g0))
        return false;
      break;
    case ST_MMA:
      if (!mma(th, s, g0))
        return false;
      break;
    case ST_WGMMA:
      if (!wgmma(th, s, g0))
        return false;
      break;
    case ST_WGMMA_FENCE: /* orders every register access before it (accumulators, A operands) */
      for (int b = 0; b < th->k->nbufs; b++)
        for (int l = 0; l < WARPGROUP; l++)
          th->acc_dirty[b * th->T + g0 + l] = 0;
      break;
    case ST_WGMMA_COMMIT: th->wg[g0 / WARPGROUP].committed++; break;
    case ST_WGMMA_WAIT: wgmma_wait(th, s, g0); break;
    default: DIE("statement %s is not collective", stmt_spelling(s->kind));
    }
  }
  return true;
}

/* ---------------------------------------------------------------- statements */

static bool exec(Th *th, const Stmt *s, Mask m);

/* s run by the threads of sub, a subset of m (the active set around it). */
static bool exec_subset(Th *th, const Stmt *s, Mask m, Mask sub)
{
  set_active(th, m, sub);
  bool ok = exec(th, s, sub);
  set_active(th, sub, m);
  return ok;
}

static bool exec_roles(Th *th, const Stmt *s, Mask yes, Mask no);

static bool exec_if(Th *th, const Stmt *s, Mask m)
{
  int64_t top = th->pool_top;
  int *yes = pool_take(th, m.n), *no = pool_take(th, m.n);
  int ny = 0, nn = 0;
  if (!yes || !no)
    return false;
  for (int i = 0; i < m.n; i++) {
    Val c = eval(th, s->cond, m.t[i]);
    if (th->failed)
      return false;
    if (val_convert(s->cond->type, TY_BOOL, c).i)
      yes[ny++] = m.t[i];
    else
      no[nn++] = m.t[i];
  }
  bool ok;
  if (s->roles) {
    ok = exec_roles(th, s, (Mask){yes, ny}, (Mask){no, nn});
  } else {
    ok = !ny || exec_subset(th, s->then_s, m, (Mask){yes, ny});
    if (ok && nn && s->else_s)
      ok = exec_subset(th, s->else_s, m, (Mask){no, nn});
  }
  th->pool_top = top;
  return ok;
}

/* for v in serial(n) / unrolled(n): each thread runs its own trip count; an
 * iteration runs with the threads that have not finished. */
static bool exec_for(Th *th, const Stmt *s, Mask m)
{
  if (s->nvars != 1 || (s->for_kind != FOR_SERIAL && s->for_kind != FOR_UNROLLED))
    DIE("tile-level loop at thread level");
  int64_t top = th->pool_top;
  int64_t *n = (int64_t *)pool_take(th, 2 * m.n);
  int *in = pool_take(th, m.n);
  if (!n || !in)
    return false;
  int v = s->vars[0];
  TypeKind vt = th->k->vars[v].type;
  for (int i = 0; i < m.n; i++)
    n[i] = val_convert(s->extents[0]->type, vt, eval(th, s->extents[0], m.t[i])).i;
  bool ok = !th->failed;
  for (int64_t it = 0; ok; it++) {
    int k = 0;
    for (int i = 0; i < m.n; i++)
      if (it < n[i])
        in[k++] = m.t[i];
    if (!k)
      break;
    for (int i = 0; i < k; i++)
      th->vars[(int64_t)v * th->T + in[i]] = (Val){.i = it};
    ok = exec_subset(th, s->then_s, m, (Mask){in, k});
  }
  th->pool_top = top;
  return ok;
}

/* ---------------------------------------------------------------- warp-specialized roles */

/* A roles-if's two branches, each a coroutine on a POSIX thread of its own (ucontext's swapcontext
 * is not followed by the sanitizers) that runs only while it holds the baton: one of them, or the
 * roles-if that started them, runs at a time, so th needs no locks and a run is deterministic.
 * What is stack-like in th is per role, saved here while the role does not run: its half of the
 * mask pool that is left (pool_top, pool_cap; a role releases only its own masks) and th->loc. */
typedef struct {
  Roles *rs;
  const Stmt *s; /* the branch */
  Mask m;        /* its threads */
  pthread_t thread;
  bool started, blocked, done;
  uint64_t seen;              /* th->progress when it last blocked */
  const Stmt *wait;           /* where it blocked, as thread wait_t (for messages) */
  int wait_t;
  int64_t pool_top, pool_cap; /* its region of the mask pool */
  SrcLoc loc;
} Role;

enum { PARENT = 2, ROLE_STACK = 16 << 20 };

struct Roles {
  Th *th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int baton; /* who runs: role 0 (.then_s), role 1 (.else_s), or the PARENT, the roles-if */
  Role role[2];
};

/* Gives the baton to `to`, then waits until it comes back to `from` (-1: a role that finished). */
static void baton_pass(Roles *rs, int from, int to)
{
  pthread_mutex_lock(&rs->mu);
  rs->baton = to;
  pthread_cond_broadcast(&rs->cv);
  while (from >= 0 && rs->baton != from)
    pthread_cond_wait(&rs->cv, &rs->mu);
  pthread_mutex_unlock(&rs->mu);
}

static void role_save(Th *th, Role *r)
{
  r->pool_top = th->pool_top;
  r->pool_cap = th->pool_cap;
  r->loc = th->loc;
}

static void role_load(Th *th, int i)
{
  Role *r = &th->roles->role[i];
  th->pool_top = r->pool_top;
  th->pool_cap = r->pool_cap;
  th->loc = r->loc;
  th->role = i;
}

/* Thread t of the running role waits at s for a phase not completed: the other role runs until it
 * blocks or finishes, then this one resumes (true: the caller checks again).  False, with why, on
 * a deadlock: the other role has finished, or it is blocked and nothing progressed since. */
static bool role_wait(Th *th, const Stmt *s, int t, char *why, size_t cap)
{
  Roles *rs = th->roles;
  int me = th->role;
  Role *r = &rs->role[me], *o = &rs->role[1 - me];
  if (o->done) {
    snprintf(why, cap, "the other warp-specialized role %s", o->m.n ? "has finished" : "has no threads");
    return false;
  }
  if (o->blocked && o->seen == th->progress) {
    snprintf(why, cap, "the other warp-specialized role waits too (thread %d on %s[%lld])", o->wait_t,
             th->k->bufs[o->wait->bar].name, (long long)eval(th, o->wait->bar_idx, o->wait_t).i);
    return false;
  }
  r->blocked = true;
  r->seen = th->progress;
  r->wait = s;
  r->wait_t = t;
  role_save(th, r);
  baton_pass(rs, me, 1 - me);
  role_load(th, me);
  r->blocked = false;
  return true;
}

/* After the running role arrives on an mbarrier, the other one, if it waits, runs at once, until it
 * blocks again or finishes (the soonest the GPU could let it go), then this one goes on: a stage
 * released before its last reader (a wgmma in flight) is done is then refilled while that reader
 * may still read it, which the checks on the refill's bytes report. */
static void role_handoff(Th *th)
{
  Roles *rs = th->roles;
  int me = th->role;
  Role *r = &rs->role[me], *o = &rs->role[1 - me];
  if (o->done || !o->blocked)
    return;
  role_save(th, r);
  baton_pass(rs, me, 1 - me);
  role_load(th, me);
}

static void *role_main(void *arg)
{
  Role *r = arg;
  Roles *rs = r->rs;
  Th *th = rs->th;
  int me = (int)(r - rs->role);
  pthread_mutex_lock(&rs->mu);
  while (rs->baton != me)
    pthread_cond_wait(&rs->cv, &rs->mu);
  pthread_mutex_unlock(&rs->mu);
  role_load(th, me);
  exec(th, r->s, r->m); /* a failure (th->failed) stops the other role too when it resumes */
  r->done = true;
  th->progress++;
  baton_pass(rs, -1, rs->role[1 - me].done ? PARENT : 1 - me);
  return NULL;
}

/* A roles-if: the threads of yes run .then_s and those of no .else_s, concurrently (above); both
 * finish before the statement after it. */
static bool exec_roles(Th *th, const Stmt *s, Mask yes, Mask no)
{
  int t0 = yes.n ? yes.t[0] : no.t[0];
  if (th->roles) {
    fail(th, s->loc, t0, "warp-specialized roles inside a role are not supported by the interpreter");
    return false;
  }
  uint8_t side[1024 / WARPGROUP + 1] = {0};
  for (int i = 0; i < yes.n; i++)
    side[yes.t[i] / WARPGROUP] |= 1;
  for (int i = 0; i < no.n; i++)
    side[no.t[i] / WARPGROUP] |= 2;
  for (int g = 0; g <= th->T / WARPGROUP; g++)
    if (side[g] == 3) {
      fail(th, s->loc, g * WARPGROUP, "warp-specialized roles split warpgroup %d: a role is whole warpgroups",
           g);
      return false;
    }
  Roles rs = {.th = th, .baton = PARENT};
  const Stmt *branch[2] = {s->then_s, s->else_s};
  Mask mask[2] = {yes, no};
  int64_t top = th->pool_top, cap = th->pool_cap, half = (cap - top) / 2 & ~(int64_t)1;
  SrcLoc loc = th->loc;
  th->roles_base = th->named_seq + 1;
  for (int i = 0; i < 2; i++) {
    rs.role[i] = (Role){.rs = &rs,
                        .s = branch[i],
                        .m = mask[i],
                        .done = !mask[i].n || !branch[i],
                        .pool_top = top + i * half,
                        .pool_cap = i ? cap : top + half,
                        .loc = loc};
    uint32_t id = ++th->named_seq << 1 | (uint32_t)i;
    for (int j = 0; j < mask[i].n; j++)
      th->nid[mask[i].t[j]] = id;
  }
  pthread_attr_t attr;
  if (pthread_mutex_init(&rs.mu, NULL) || pthread_cond_init(&rs.cv, NULL) || pthread_attr_init(&attr) ||
      pthread_attr_setstacksize(&attr, ROLE_STACK))
    DIE("pthread initialization failed");
  th->roles = &rs;
  for (int i = 0; i < 2; i++)
    if (!rs.role[i].done) {
      rs.role[i].started = !pthread_create(&rs.role[i].thread, &attr, role_main, &rs.role[i]);
      if (!rs.role[i].started) {
        fail(th, s->loc, t0, "cannot start a thread for a warp-specialized role");
        rs.role[i].done = true; /* the other one, if started, finishes at once (th->failed) */
      }
    }
  int first = !rs.role[0].done ? 0 : !rs.role[1].done ? 1 : PARENT;
  if (first != PARENT)
    baton_pass(&rs, PARENT, first);
  for (int i = 0; i < 2; i++)
    if (rs.role[i].started)
      pthread_join(rs.role[i].thread, NULL);
  th->roles = NULL;
  th->pool_top = top;
  th->pool_cap = cap;
  th->loc = loc;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < mask[i].n; j++)
      th->nid[mask[i].t[j]] = 0;
  pthread_attr_destroy(&attr);
  pthread_cond_destroy(&rs.cv);
  pthread_mutex_destroy(&rs.mu);
  return !th->failed;
}

/* bar.sync id, n: exactly n threads, of one role (of the block outside roles).  It orders its
 * threads' shared-memory accesses when they are a whole role (a new named interval for them) or
 * the whole block (a new epoch); otherwise it orders nothing (Execution, above). */
static bool named_barrier(Th *th, const Stmt *s, Mask m)
{
  if (m.n != s->bar_threads) {
    fail(th, s->loc, m.t[0], "named barrier %d of %d threads reached by %d (threads %d to %d)", s->bar_id,
         s->bar_threads, m.n, m.t[0], m.t[m.n - 1]);
    return false;
  }
  th->stats.barriers++;
  if (!th->roles) {
    th->epoch += m.n == th->T;
    return true;
  }
  if (m.n == th->roles->role[th->role].m.n) {
    uint32_t id = ++th->named_seq << 1 | (uint32_t)th->role;
    for (int i = 0; i < m.n; i++)
      th->nid[m.t[i]] = id;
  }
  return true;
}

static bool barrier(Th *th, const Stmt *s, Mask m)
{
  if (s->bar_threads > 0)
    return named_barrier(th, s, m);
  if (th->roles) {
    fail(th, s->loc, m.t[0],
         "a barrier of the whole block inside a warp-specialized role: the other role never reaches it");
    return false;
  }
  if (m.n != th->T) {
    int missing = 0;
    while (missing < th->T && th->active[missing])
      missing++;
    fail(th, s->loc, -1, "barrier reached by %d of the block's %d threads (thread %d does not reach it)", m.n,
         th->T, missing);
    return false;
  }
  th->epoch++;
  th->stats.barriers++;
  return true;
}

/* setmaxnreg: whole warpgroups ask for a register count (no other effect here). */
static bool setmaxnreg(Th *th, const Stmt *s, Mask m)
{
  if (s->nregs < 24 || s->nregs > 256 || s->nregs % 8) {
    fail(th, s->loc, m.t[0], "setmaxnreg with %d registers (24 to 256, a multiple of 8)", s->nregs);
    return false;
  }
  if (!whole_groups(th, s, m, WARPGROUP))
    return false;
  th->stats.collectives += m.n / WARPGROUP;
  return true;
}

static bool exec_kind(Th *th, const Stmt *s, Mask m);

/* th->loc: the innermost statement with a line (the lowering's own have none). */
static bool exec(Th *th, const Stmt *s, Mask m)
{
  if (th->failed)
    return false;
  th->steps += m.n;
  if (th->max_steps && th->steps > th->max_steps) {
    fail(th, s->loc, -1, "the run exceeded its budget of %lld statements (one per thread)",
         (long long)th->max_steps);
    return false;
  }
  SrcLoc outer = th->loc;
  if (s->loc.line)
    th->loc = s->loc;
  bool ok = exec_kind(th, s, m);
  if (ok)
    th->loc = outer;
  return ok;
}

static bool exec_kind(Th *th, const Stmt *s, Mask m)
{
  switch (s->kind) {
  case ST_SEQ:
    for (int i = 0; i < s->nbody; i++)
      if (!exec(th, s->body[i], m))
        return false;
    return true;
  case ST_IF: return exec_if(th, s, m);
  case ST_FOR: return exec_for(th, s, m);
  case ST_BARRIER: return barrier(th, s, m);
  case ST_SETMAXNREG: return setmaxnreg(th, s, m);
  case ST_LET:
  case ST_ASSIGN:
  case ST_STORE: return assign_all(th, s, m);
  case ST_LDMATRIX:
  case ST_MMA:
  case ST_WGMMA:
  case ST_WGMMA_FENCE:
  case ST_WGMMA_COMMIT:
  case ST_WGMMA_WAIT: return collective(th, s, m);
  case ST_COPY:
  case ST_FILL:
  case ST_GEMM:
  case ST_REDUCE:
    fail(th, s->loc, -1, "'%s' is a tile-level statement", stmt_spelling(s->kind));
    return false;
  default:
    for (int i = 0; i < m.n; i++)
      if (!exec_one(th, s, m.t[i]))
        return false;
    if (th->roles && (s->kind == ST_MBAR_ARRIVE || s->kind == ST_MBAR_EXPECT_TX))
      role_handoff(th);
    return !th->failed;
  }
}

/* ---------------------------------------------------------------- a run */

static bool setup(Th *th, const InterpArg *args, int nargs, const InterpOptions *opt)
{
  const Kernel *k = th->k;
  int T = th->T;
  th->uni = calloc((size_t)k->nvars + 1, sizeof *th->uni);
  th->vars = calloc((size_t)(k->nvars + 1) * (size_t)T, sizeof *th->vars);
  th->data = calloc((size_t)k->nbufs + 1, sizeof *th->data);
  th->dims = calloc((size_t)k->nbufs + 1, sizeof *th->dims);
  th->elems = calloc((size_t)k->nbufs + 1, sizeof *th->elems);
  th->stride = calloc((size_t)k->nbufs + 1, sizeof *th->stride);
  th->reg = calloc((size_t)k->nbufs + 1, sizeof *th->reg);
  th->reg_set = calloc((size_t)k->nbufs + 1, sizeof *th->reg_set);
  th->a_busy = calloc((size_t)k->nbufs + 1, sizeof *th->a_busy);
  th->acc_busy = calloc((size_t)(k->nbufs + 1) * (size_t)T, sizeof *th->acc_busy);
  th->acc_dirty = calloc((size_t)(k->nbufs + 1) * (size_t)T, 1);
  th->active = calloc((size_t)T, 1);
  th->fences = calloc((size_t)T, sizeof *th->fences);
  th->nid = calloc((size_t)T, sizeof *th->nid);
  th->cp = calloc((size_t)T, sizeof *th->cp);
  th->wg = calloc((size_t)T / WARPGROUP + 1, sizeof *th->wg);
  th->stage = malloc(sizeof *th->stage * (size_t)T * (1 + TL_MAX_RANK));
  th->pool_cap = (int64_t)T * 4 * 256;
  th->pool = malloc(sizeof *th->pool * (size_t)th->pool_cap);
  th->smem_bytes = k->smem_bytes;
  th->smem = calloc((size_t)k->smem_bytes + 16, 1);
  th->shadow = calloc((size_t)k->smem_bytes + 16, sizeof *th->shadow);
  if (!th->uni || !th->vars || !th->data || !th->dims || !th->elems || !th->stride || !th->reg ||
      !th->reg_set || !th->a_busy || !th->acc_busy || !th->acc_dirty || !th->active || !th->fences ||
      !th->nid || !th->cp || !th->wg || !th->pool || !th->stage || !th->smem || !th->shadow) {
    error_at(th->d, k->loc, "out of memory for the interpreter");
    return false;
  }
  if (!interp_bind_args(k, args, nargs, th->uni, th->data, th->d))
    return false;
  int num_sms = opt && opt->num_sms > 0 ? opt->num_sms : 4;
  for (int v = 0; v < k->nvars; v++)
    if (k->vars[v].kind == VAR_NUM_SMS)
      th->uni[v] = (Val){.i = num_sms};
  for (int v = 0; v < k->nvars; v++)
    for (int t = 0; t < T; t++)
      th->vars[(int64_t)v * T + t] = k->vars[v].kind == VAR_THREAD_IDX ? (Val){.i = t} : th->uni[v];
  for (int b = 0; b < k->nbufs; b++) {
    const Buffer *B = &k->bufs[b];
    if (B->scope == SCOPE_GLOBAL) {
      int64_t declared[TL_MAX_RANK];
      for (int d = 0; d < B->rank; d++) {
        th->dims[b][d] = eval(th, B->shape[d], 0).i;
        declared[d] = buffer_strided(B) ? eval(th, B->stride[d], 0).i : 0;
      }
      th->elems[b] = interp_tensor_layout(B, th->dims[b], buffer_strided(B) ? declared : NULL, th->stride[b]);
    } else if (B->scope == SCOPE_LOCAL) {
      size_t n = (size_t)B->local_size * (size_t)T;
      th->reg[b] = calloc(n + 1, sizeof **th->reg);
      th->reg_set[b] = calloc(n + 1, 1);
      th->a_busy[b] = calloc(n + 1, sizeof **th->a_busy);
      if (!th->reg[b] || !th->reg_set[b] || !th->a_busy[b]) {
        error_at(th->d, B->loc, "out of memory for registers '%s'", B->name);
        return false;
      }
    } else if (B->scope == SCOPE_FRAGMENT) {
      DIE("fragment '%s' at thread level", B->name);
    }
  }
  for (int g = 0; g < 3; g++) {
    th->grid[g] = g < k->grid_rank ? eval(th, k->grid[g], 0).i : 1;
    if (th->grid[g] < 0) {
      fail(th, k->loc, -1, "grid dimension %d of kernel '%s' is negative (%lld)", g, k->name,
           (long long)th->grid[g]);
      return false;
    }
  }
  for (int v = 0; v < k->nvars; v++)
    if (k->vars[v].kind == VAR_GRID_DIM)
      for (int t = 0; t < T; t++)
        th->vars[(int64_t)v * T + t] = (Val){.i = th->grid[k->vars[v].dim]};
  return !th->failed;
}

/* A new block: its index, fresh registers, shared memory and queues. */
static void start_block(Th *th, int64_t blk)
{
  const Kernel *k = th->k;
  int T = th->T;
  th->block[0] = blk % th->grid[0];
  th->block[1] = blk / th->grid[0] % th->grid[1];
  th->block[2] = blk / th->grid[0] / th->grid[1];
  th->blk = blk;
  for (int v = 0; v < k->nvars; v++)
    if (k->vars[v].kind == VAR_BLOCK_IDX)
      for (int t = 0; t < T; t++)
        th->vars[(int64_t)v * T + t] = (Val){.i = th->block[k->vars[v].dim]};
  for (int b = 0; b < k->nbufs; b++)
    if (th->reg_set[b]) {
      memset(th->reg_set[b], 0, (size_t)k->bufs[b].local_size * (size_t)T);
      memset(th->a_busy[b], 0, sizeof **th->a_busy * (size_t)k->bufs[b].local_size * (size_t)T);
    }
  memset(th->acc_busy, 0, sizeof *th->acc_busy * (size_t)k->nbufs * (size_t)T);
  memset(th->acc_dirty, 0, (size_t)k->nbufs * (size_t)T);
  memset(th->shadow, 0, sizeof *th->shadow * (size_t)th->smem_bytes);
  memset(th->fences, 0, sizeof *th->fences * (size_t)T);
  memset(th->nid, 0, sizeof *th->nid * (size_t)T);
  th->epoch = 1;
  th->nmbars = 0;
  for (int t = 0; t < T; t++)
    th->cp[t].n = th->cp[t].committed = 0;
  for (int g = 0; g <= T / WARPGROUP; g++) {
    for (int i = 0; i < th->wg[g].n; i++)
      free(th->wg[g].ops[i].bytes);
    th->wg[g].n = th->wg[g].committed = 0;
  }
}

static void release(Th *th)
{
  const Kernel *k = th->k;
  for (int b = 0; th->reg && b < k->nbufs; b++) {
    free(th->reg[b]);
    free(th->reg_set[b]);
    if (th->a_busy)
      free(th->a_busy[b]);
  }
  for (int t = 0; th->cp && t < th->T; t++)
    free(th->cp[t].ops);
  for (int g = 0; th->wg && g <= th->T / WARPGROUP; g++) {
    for (int i = 0; i < th->wg[g].n; i++)
      free(th->wg[g].ops[i].bytes);
    free(th->wg[g].ops);
  }
  interp_blocks_free(&th->written);
  free(th->mbars);
  free(th->uni);
  free(th->vars);
  free(th->data);
  free(th->dims);
  free(th->elems);
  free(th->stride);
  free(th->reg);
  free(th->reg_set);
  free(th->a_busy);
  free(th->acc_busy);
  free(th->acc_dirty);
  free(th->active);
  free(th->fences);
  free(th->nid);
  free(th->cp);
  free(th->wg);
  free(th->pool);
  free(th->stage);
  free(th->smem);
  free(th->shadow);
}

bool interp_thread_run(const Kernel *k, const InterpArg *args, int nargs, const InterpOptions *opt, Diags *d)
{
  Th th = {.k = k, .d = d, .T = k->nthreads, .loc = k->loc, .max_steps = opt ? opt->max_steps : 0};
  /* k passed VERIFY_THREAD in the pipeline (interp_compile_thread); tile-level IR given here
   * anyway stops at its first fragment (setup) or tile statement (exec_kind). */
  if (th.T < 1 || th.T > 1024) {
    error_at(d, k->loc, "kernel '%s' has %d threads per block", k->name, th.T);
    return false;
  }
  bool ok = setup(&th, args, nargs, opt);
  int *all = ok ? pool_take(&th, th.T) : NULL;
  for (int t = 0; all && t < th.T; t++) {
    all[t] = t;
    th.active[t] = 1;
  }
  int64_t nblocks = ok && all ? th.grid[0] * th.grid[1] * th.grid[2] : 0;
  th.stats.threads = th.T;
  for (int64_t blk = 0; ok && blk < nblocks; blk++) {
    start_block(&th, blk);
    th.stats.blocks++;
    ok = exec(&th, k->body, (Mask){all, th.T});
  }
  if (opt && opt->stats)
    *opt->stats = th.stats;
  release(&th);
  return ok && !th.failed;
}
