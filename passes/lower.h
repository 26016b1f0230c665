/* lower.h: what the lowering files share: the lowering context, the IR
 * builders (lower_build.c) and each file's entry points.  Everything here is
 * internal to passes/.
 *
 *   lower_tiles.c         the steps of the lowering, and lw_lower_stmt, which
 *                         sends each tile statement to its file:
 *   lower_copy.c            copy and fill
 *   lower_reduce.c          reductions
 *   lower_parallel.c        parallel loops
 *   gemm.c                  gemm (mma.sync; wgmma on sm_90a)
 *   software_pipeline.c     pipelined loops
 *   warp_specialize.c     the producer and consumer roles of a TMA pipeline (sm_90a)
 *   lower_build.c         the builders
 */
#ifndef TILEC_LOWER_H
#define TILEC_LOWER_H

#include "passes.h"

typedef struct {
  PassContext *pc;
  Kernel *k;
  Arena *a;
  int tid;   /* the thread index variable */
  int loops; /* serial loops around the statement being lowered */
  /* Warp specialization (software_pipeline.c builds the parts, warp_specialize.c places them):
   * the pipelined loop's switch between its TMA and cp.async forms, and the specialized form's
   * mbarrier set-up, producer role and consumer loop; NULL: none. */
  Stmt *ws_switch, *ws_setup, *ws_producer, *ws_consumer;
  Stmt *ws_outer;  /* the serial loop around the pipelined one (a persistent kernel's), or NULL */
  int ws_count[2]; /* with ws_outer: the producer's and the consumers' iteration counts (VAR_MUT) */
  /* A register A's fill followed by its gemm is interleaved with the multiplies (a pipelined
   * loop's `overlap`: software_pipeline.c); the fills so interleaved */
  bool interleave_a;
  int interleaved;
  const char *interleave_why; /* why the last fill that could not be interleaved was not */
} Lw;

/* ---------------------------------------------------------------- lower_build.c */

Expr *lw_i32(Lw *w, int64_t v);
Expr *lw_var(Lw *w, int v);
Expr *lw_bin(Lw *w, OpKind op, Expr *x, Expr *y);
Expr *lw_and(Lw *w, Expr *x, Expr *y);                  /* x or y may be NULL (true) */
Expr *lw_in_range(Lw *w, const Expr *x, const Expr *n); /* 0 <= x < n, on copies of both */
Expr *lw_unary_not(Lw *w, Expr *x);
Expr *lw_zero(Lw *w, TypeKind t);
Expr **lw_idx1(Lw *w, Expr *x);
Expr *lw_clone(Lw *w, Expr *e);
Expr *lw_add(Lw *w, Expr *x, Expr *y);                           /* folding, as ex_add */
Expr *lw_mul_c(Lw *w, Expr *x, int64_t c);                       /* x * c, folding */
Expr *lw_div_c(Lw *w, Expr *x, int64_t c);                       /* x / c */
Expr *lw_mod_c(Lw *w, Expr *x, int64_t c);                       /* x % c */
int lw_fresh(Lw *w, const char *base, VarKind kind);             /* a new i32 variable */
int lw_let(Lw *w, StmtList *out, const char *name, Expr *value); /* let NAME = value */
int lw_new_buffer(Lw *w, const char *name, Scope scope, TypeKind t, int64_t n);
Stmt *lw_unrolled(Lw *w, int var, int64_t n, Stmt *body);
Stmt *lw_chunk_loop(Lw *w, int var, int64_t n, Stmt *body, bool indexes_registers);
/* for var in serial(n) rolled: a run-time loop LLVM must not unroll (Stmt.rolled) */
Stmt *lw_rolled(Lw *w, int var, int64_t n, Stmt *body);
Stmt *lw_if(Lw *w, Expr *cond, Stmt *then_s, Stmt *else_s);     /* cond NULL: then_s */
Stmt *lw_barrier(Lw *w);
Stmt *lw_assign(Lw *w, int var, Expr *value);                   /* var = value (a VAR_MUT) */
Stmt *lw_store(Lw *w, int buf, Expr **idx, int n, Expr *value); /* converts value to the element type */
Stmt *lw_fenced(Lw *w, Stmt *s);                                /* barrier; s; barrier */
void lw_coords(Lw *w, const int64_t *shape, int rank, Expr *flat, Expr **out);
/* How the vectors of a tile are dealt to threads: chunk c of thread tid
 * starts at flat element (c * threads + tid) * vec. */
typedef struct {
  int vec;
  int chunks;
  int64_t total;
  bool guard; /* the last chunk can fall off the tile */
} Deal;
Deal lw_deal(Lw *w, int vec, int64_t total);
/* Row and column of register (fm, fn, r) of an MMA fragment, for this thread. */
/* The first row of piece fm of warp row wm of an MMA layout (ir.h: m_interleaved or not). */
Expr *lw_mma_row0(Lw *w, const FragLayout *L, Expr *wm, Expr *fm);
void lw_mma_coords(Lw *w, const FragLayout *L, Expr *fm, Expr *fn, Expr *r, Expr **row, Expr **col);
bool lw_writes_shared(const Lw *w, int buf);
/* Does e read buf (a load of it, or its address's alignment)? */
bool lw_expr_reads(const Expr *e, int buf);
Expr *lw_mma_row(Lw *w, const FragLayout *L, Expr *reg); /* the row of register reg of an MMA_ROWS fragment */
bool lw_is_rows(const Buffer *b);                        /* ROWS or MMA_ROWS */
/* True in the one thread that holds a row of a ROWS or MMA_ROWS fragment first, which stores or
 * updates it once for all its holders: ROWS, the thread whose chunk starts the row (col: the
 * parent's last coordinate of the chunk); MMA_ROWS, lane 0 of a quad in warp column 0 (col unused). */
Expr *lw_row_owner(Lw *w, const FragLayout *L, Expr *col);
int lw_coop_vec(const Buffer *tile, TypeKind other);
int lw_piece_lanes(TypeKind a, TypeKind b, int n);
void lw_vcopy(Lw *w, StmtList *out, int dst, Expr **didx, int dn, int src, Expr **sidx, int sn, int n,
              int last_d, int last_s);
/* cp.async of `lanes` elements from global src[sidx] (src's rank of indices) to shared dst[didx],
 * reading `bytes` of them (all, or 0 to zero-fill); the index arrays become the statement's. */
Stmt *lw_cp_async(Lw *w, int dst, Expr **didx, int dn, int src, Expr **sidx, int bytes, int lanes,
                  SrcLoc loc);
/* One vector of `vec` elements of a copy between global memory (region gr)
 * and tile tb, whose first element is at tile coordinates t[] (and register
 * creg of a fragment, creg != NULL).  Appends to body the fast path (one wide
 * access; cp.async when async) and the masked path (zeros read outside the
 * tensor, nothing written there).  stage: the leading index of a staged
 * shared tile, or NULL. */
/* ---------------------------------------------------------------- lower_copy.c */

void lw_copy_vector(Lw *w, StmtList *body, bool load, const Region *gr, int tb, Expr *creg, Expr **t, int vec,
                    Expr *stage, bool async, SrcLoc loc);
Stmt *lower_copy(Lw *w, Stmt *s);
/* Can copy s (a shared tile -> a global tensor) go through the copy engine (TMA
 * store) on this target, given a wgmma swizzle on the tile?  (choose-swizzles
 * gives the tile one when so.) */
bool lw_tma_store_shape(const Lw *w, const Stmt *s);
/* The same for a 2-D tile of `shape` and `elem` stored at dst (a tensor region). */
bool lw_tma_store_fits(const Lw *w, const int64_t *shape, TypeKind elem, const Region *dst);
/* The tensor map of a 2-D tile's copy through the copy engine: a box of `rows` in the tensor
 * dimension the tile's rows span, `panel` columns in the last, 1 elsewhere. */
int lw_tma_map(Lw *w, const Region *g, int64_t rows, int64_t panel);
Stmt *lower_fill(Lw *w, Stmt *s);
Stmt *lower_copy_mma_global(Lw *w, Stmt *s, bool load);
Stmt *lower_copy_mma_shared(Lw *w, Stmt *s);

/* ---------------------------------------------------------------- lower_reduce.c */

Stmt *lower_reduce(Lw *w, Stmt *s);     /* src ELEMWISE, dst its ROWS */
Stmt *lower_reduce_mma(Lw *w, Stmt *s); /* src MMA, dst its MMA_ROWS */
Stmt *lower_reduce_dim(Lw *w, Stmt *s); /* over a dimension other than the last: through shared memory */
/* Drops the guard barriers of reduction scratch that other barriers already
 * order (the drop-scratch-barriers step). */
void lower_drop_scratch_guards(Stmt *s, const Stmt *loop_body);

/* ---------------------------------------------------------------- lower_parallel.c */

Stmt *lower_parallel(Lw *w, Stmt *s);

/* ---------------------------------------------------------------- lower_tiles.c */

Lw lw_begin(PassContext *pc, Kernel *k);
Stmt *lw_lower_stmt(Lw *w, Stmt *s);

/* ---------------------------------------------------------------- gemm.c */

Stmt *lower_gemm(Lw *w, Stmt *s);
/* gemm_wgmma_eligible, and layout.c gave the accumulator the warpgroup grid. */
bool lw_gemm_uses_wgmma(Lw *w, const Stmt *s);
/* ... with A in a 16-bit register fragment (one m64 block a warpgroup: mma_policy.c). */
bool lw_gemm_register_a(Lw *w, const Stmt *s);
/* The lowered fill of a register A fragment and the lowered gemm that reads it, as one
 * statement that issues each K step's multiply once its registers are written; NULL where the
 * fill cannot be split so (the two are then used as they are). */
Stmt *lw_interleave_register_a(Lw *w, Stmt *fill, Stmt *gemm);
/* A WGMMA_FENCE, WGMMA_COMMIT or WGMMA_WAIT (.pending) on accumulator acc's `regs` registers. */
Stmt *lw_wgmma_stmt(Lw *w, StmtKind kind, int acc, int regs, int pending);

/* ---------------------------------------------------------------- software_pipeline.c */

Stmt *lower_pipelined(Lw *w, Stmt *s);

/* ---------------------------------------------------------------- warp_specialize.c */

/* Places the parts of the specialized loop the lowering recorded (w->ws_*): the
 * block gains a producer warpgroup; false (reported) when the kernel asked for
 * warp_specialize(2) and it cannot be done. */
bool lw_warp_specialize(Lw *w);
/* software_pipeline.c: before lowering, no tile a pipelined loop fills is used outside it (an
 * error, false, if one is). */
bool lw_check_pipelined_tiles(Lw *w);

#endif
