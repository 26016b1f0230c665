/* interp.h: running .tl kernels on the CPU (docs/interpreter.md).
 *
 * One header, in sections by source file:
 *   value.c    a value of a .tl type and every operation on it, for both levels
 *   launch.c   a launch's arguments matched to the kernel's parameters
 *   compile.c  .tl source -> tile IR as the user wrote it (the frontend, then the
 *              pipeline's first step only), or -> thread-level IR (the whole
 *              pipeline for a target)
 *   tile.c     the tile level: the reference semantics of the language
 *              (docs/language.md), every block of the grid in turn, on host arrays
 *   thread.c   the thread level: the lowered program, every thread of a block in
 *              lockstep, checked for races, barriers and asynchronous misuse
 *
 * Errors are user diagnostics in the caller's Diags (with the .tl line), never an
 * exit or an abort: a kernel that reads something it never wrote, indexes out of
 * bounds, divides an integer by zero or (thread level) races makes the run return
 * false with one error naming the kernel, the block and the thread.
 */
#ifndef TILEC_INTERP_H
#define TILEC_INTERP_H

#include "fe.h" /* ConstDef */
#include "ir.h"
#include "target.h"

/* ---------------------------------------------------------------- value.c */

/* One value of a .tl type: integers and bool in .i (wrapped to the type, then
 * sign- or zero-extended), floats in .f (a double holding a value of the type
 * exactly).  Both levels compute with these functions only. */
typedef union {
  int64_t i;
  uint64_t u;
  double f;
} Val;

typedef enum { VAL_OK, VAL_DIV_ZERO, VAL_BAD_SHIFT } ValStatus;

double val_round(TypeKind t, double x);             /* to float type t, to nearest even (f16/bf16 via f32) */
Val val_convert(TypeKind from, TypeKind to, Val v); /* a cast (docs/language.md, "Casts") */
Val val_from_bits(TypeKind t, uint64_t bits);       /* the storage bits of a t (little-endian) */
uint64_t val_bits(TypeKind t, Val v);               /* v holds a t already: exact */
Val val_load(TypeKind t, const void *data, int64_t off); /* element off of an array of t */
void val_store(TypeKind t, void *data, int64_t off, Val v);
/* A binary operator other than && and || on a, of type t, and b, of type bt (a shift amount is
 * converted to t): floats, integers (i32's common cases on a short path), comparisons.  Both
 * levels' eval call it; *out is 0 after an error. */
ValStatus val_binary(OpKind op, TypeKind t, TypeKind bt, Val a, Val b, Val *out);
/* The message of an error val_binary returned for op (t, bt and b as given to it), in buf. */
const char *val_status_text(ValStatus st, OpKind op, TypeKind t, TypeKind bt, Val b, char *buf, size_t cap);
/* Integer binary operators and comparisons of type t (shift amounts already of type t). */
ValStatus val_int_binary(OpKind op, TypeKind t, Val a, Val b, Val *out);
Val val_float_binary(OpKind op, TypeKind t, double a, double b);
Val val_unary(OpKind op, TypeKind t, Val a);
/* The math intrinsics; false for the lowering's own (shfl.bfly). */
bool val_intrinsic(IntrinsicKind fn, TypeKind t, const Val *x, Val *out);
/* One step of a reduction in type t. */
Val val_combine(ReduceKind op, TypeKind t, Val acc, Val x);
/* a and b (of type t) agree: the same bits for integers, NaN with NaN, floats within two roundings
 * of t (loose: f32 within 1e-4, for the GPU's approximations); how the levels are compared. */
bool val_close(TypeKind t, Val a, Val b, bool loose);

/* ---------------------------------------------------------------- launch.c */

typedef struct InterpArg InterpArg;
/* Matches args to k's parameters by name (each must name one, each parameter
 * must have one, a tensor's with data): sizes, scalars and constants into
 * vars[var handle], tensors' data into data[buffer handle].  Tensor maps (TMA)
 * take no argument (the interpreter reads their tensors), and the flag that says
 * they are valid (tma.ok) reads 1 unless an argument of that name says 0 (the
 * kernel's other path).  false with an error in d (no block: nothing ran). */
bool interp_bind_args(const Kernel *k, const InterpArg *args, int nargs, Val *vars, void **data, Diags *d);

/* Which block last wrote each element of each tensor during a launch.  Blocks run
 * in no particular order on the GPU, so an element written by two blocks with
 * different values, or read by one block after another wrote it, makes the result
 * depend on that order: both levels report it (atomics excepted: interp_tensor_atomic).
 * Blocks are numbered x fastest. */
typedef struct {
  int64_t **by; /* [buffer][element]: the block + 1, 0 for none, < 0 atomics (launch.c); made on
                   first use */
  int nbufs;
} BlockWrites;
/* Records block's write of v over element off of tensor b (type t, its array data of elems elements;
 * nbufs: the kernel's buffer count), before the caller stores it; the other block whose different
 * value it replaces, or -1. */
int64_t interp_tensor_write(BlockWrites *w, int nbufs, int b, int64_t elems, TypeKind t, const void *data,
                            int64_t off, int64_t block, Val v);
/* Records block's atomic update of element off of tensor b: atomics of several blocks commute, but
 * not with a plain write of another block (returned; else -1), and a plain read or write after
 * them sees them only if no other block did any (interp_tensor_read/write return that block). */
int64_t interp_tensor_atomic(BlockWrites *w, int nbufs, int b, int64_t elems, int64_t off, int64_t block);
/* The other block that wrote element off of tensor b before block reads it, or -1. */
int64_t interp_tensor_read(BlockWrites *w, int b, int64_t off, int64_t block);
void interp_blocks_free(BlockWrites *w);
/* Tensor B's strides (elements) into stride[0..rank): declared[] (the values of its strides(...),
 * NULL when it has none) or row-major over dims; returns the elements its data spans, from the
 * first to the last it can reach (0 when a dimension is 0). Both levels address tensors by them. */
int64_t interp_tensor_layout(const Buffer *B, const int64_t *dims, const int64_t *declared, int64_t *stride);
/* The error for elem ("global 'S'[5]") that block number other of grid wrote, found by a write of
 * another value (write) or by a read, in buf. */
const char *interp_order_text(char *buf, size_t cap, const char *elem, bool write, const int64_t grid[3],
                              int64_t other);

/* ---------------------------------------------------------------- compile.c */

/* Parses and checks src (len bytes, any terminator) and specializes every kernel
 * (or only the one named `kernel`, if not NULL) with the -D values defs[0..ndefs).
 * The IR lives in arena a; d->src is pointed at a terminated copy of src, so
 * diag_render shows the lines.  NULL after a user error, reported in d. */
Module *interp_compile(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs, int ndefs,
                       const char *kernel);

/* The same, then the whole lowering pipeline for target (NULL: the default
 * target): the thread-level IR that codegen would translate, for
 * interp_thread_run. */
Module *interp_compile_thread(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs,
                              int ndefs, const char *kernel, const Target *target);

/* Either of the two, with the sizes launch constants are evaluated at (sizes[0..nsizes): NAME and a
 * decimal value, as --size; docs/language.md, "Launch constants"): a kernel whose constants depend
 * on the sizes runs as the variant the GPU would launch at them. */
Module *interp_compile_at(Arena *a, Diags *d, const char *src, size_t len, const ConstDef *defs, int ndefs,
                          const ConstDef *sizes, int nsizes, const char *kernel, const Target *target,
                          bool thread);

/* The sizes of a launch of k with args (matched by name, as interp_bind_args), for
 * interp_compile_at; *n of them, in the arena. */
ConstDef *interp_launch_sizes(Arena *a, const Kernel *k, const InterpArg *args, int nargs, int *n);

/* The kernel named name in m, or NULL. */
Kernel *interp_find_kernel(const Module *m, const char *name);

/* ---------------------------------------------------------------- tile.c */

/* One argument of a launch, matched to the kernel's parameters by name:
 *   a tensor   .data: its elements, row-major, in the storage type (f32 as float,
 *              f16 and bf16 as uint16_t bits, bool as one byte, integers as their
 *              C type), owned by the caller; the extent comes from the sizes;
 *   a size     .i: the value of a symbolic dimension such as N;
 *   a scalar   .i for integers and bool, .f for floats. */
struct InterpArg {
  const char *name;
  void *data;
  int64_t i;
  double f;
};

/* What a run did, for a summary of what was checked (filled when InterpOptions.stats is set). */
typedef struct {
  int64_t blocks;          /* blocks run */
  int threads;             /* threads per block (thread level; 0 at the tile level) */
  int64_t barriers;        /* barriers every thread of a block reached, and named barriers (thread level) */
  int64_t shared_bytes;    /* shared-memory bytes read or written, each checked for races (thread level) */
  int64_t collectives;     /* ldmatrix, mma.sync, wgmma and setmaxnreg run by a whole warp or warpgroup
                              (thread level) */
  int64_t async_copies;    /* cp.async copies that landed after their wait (thread level) */
  int64_t tensor_elements; /* tensor elements read or written, each checked against the other blocks */
} InterpStats;

typedef struct {
  int num_sms;        /* the value num_sms has in grid expressions (0: 4) */
  InterpStats *stats; /* NULL, or filled by the run (also when it fails: up to the failure) */
  int64_t max_steps;  /* 0, or the most statements to run (the thread level counts one per thread):
                         more stops the run with an error (a fuzzer's or a host's time budget) */
} InterpOptions;

/* Runs every block of k's grid, in order, at tile level: k must come from
 * interp_compile (tile-level IR after specialize).  Every parameter must have an
 * argument.  Returns false with an error in d at the first problem: a missing or
 * bad argument, an index out of a tile's or tensor's bounds, a read of a tile
 * element no statement of the block wrote, an integer division by zero. */
bool interp_tile_run(const Kernel *k, const InterpArg *args, int nargs, const InterpOptions *opt, Diags *d);

/* ---------------------------------------------------------------- thread.c */

/* Runs every block of k's grid, in order, at thread level: k must come from
 * interp_compile_thread (the lowered IR codegen translates).  A block's threads
 * run in lockstep; the arguments are those of interp_tile_run.  Returns false
 * with one error in d at the first problem, naming the block and thread: the
 * tile level's checks, and races on shared memory, barriers not reached by
 * every thread, reads of registers or shared bytes never written, asynchronous
 * copies and wgmma results used before their wait (thread.c's comment lists
 * them all). */
bool interp_thread_run(const Kernel *k, const InterpArg *args, int nargs, const InterpOptions *opt, Diags *d);

#endif
