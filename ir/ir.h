/* ir.h: the tile IR shared by every layer after the parser.
 *
 * One header, in sections by source file (QBE's all.h habit):
 *   arena.c   one arena per compilation; nothing is freed piecemeal
 *   diag.c    user diagnostics (file:line:col) and internal-bug aborts
 *   types.c   element types, operators, intrinsics (X-macro tables below)
 *   ir.c      kernels, variables, buffers, expressions, statements; builders
 *   print.c   the textual form printed by --emit=tir and --dump-after
 *   verify.c  structural checks run between passes
 *
 * The IR is a tree, in the spirit of TVM's TIR: a kernel owns a table of
 * variables and a table of buffers (operands refer to them by small integer
 * handles), and a body of statements.  Tile-level statements (COPY, FILL,
 * parallel FOR, GEMM, REDUCE) are lowered by the passes, in place, into
 * thread-level statements (VCOPY, unrolled FOR, STORE on per-thread LOCAL
 * buffers) that codegen turns into LLVM IR.  There is no SSA here: LET binds an
 * immutable value, ASSIGN writes a mutable one, LLVM's mem2reg does the rest.
 */
#ifndef TILEC_IR_H
#define TILEC_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- arena.c */

typedef struct Arena Arena;

Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size); /* zeroed, 16-byte aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* A growable string, allocated with malloc (used for PTX and printed IR). */
typedef struct {
  char *data;
  size_t len, cap;
} StrBuf;
void sb_putn(StrBuf *sb, const char *s, size_t n);
void sb_puts(StrBuf *sb, const char *s);
void sb_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap);
char *sb_take(StrBuf *sb); /* returns the malloc'd string, resets sb */

/* ---------------------------------------------------------------- diag.c */

typedef struct {
  int line, col; /* 1-based; line 0 means "no location" */
} SrcLoc;
#define NO_LOC ((SrcLoc){0})

/* DIAG_REMARK: what an optimization did not do and why (clang's -Rpass-missed), kept apart from the
 * others: diag_render leaves remarks out, diag_render_remarks renders them alone. */
typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE, DIAG_REMARK } DiagLevel;

typedef struct Diag {
  DiagLevel level;
  SrcLoc loc;
  char *message;
  struct Diag *next;
} Diag;

/* Diagnostics of one compilation, collected in order.  The source text is kept
 * so that the printer can show the offending line with a caret. */
typedef struct {
  Arena *arena;
  const char *filename;
  const char *src;
  size_t src_len;
  Diag *first, *last;
  int nerrors;
  int max_errors; /* stop collecting after this many; 0 means 50 */
} Diags;

void diag_at(Diags *d, DiagLevel level, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define error_at(d, loc, ...) diag_at((d), DIAG_ERROR, (loc), __VA_ARGS__)
#define note_at(d, loc, ...) diag_at((d), DIAG_NOTE, (loc), __VA_ARGS__)
#define remark_at(d, loc, ...) diag_at((d), DIAG_REMARK, (loc), __VA_ARGS__)
/* Renders every diagnostic but the remarks as "file:line:col: error: msg\n  source\n  ^\n". */
void diag_render(const Diags *d, StrBuf *out);
/* The remarks alone, in the same form ("remark: ..."). */
void diag_render_remarks(const Diags *d, StrBuf *out);

/* Internal compiler bugs.  Never for user errors. */
_Noreturn void tl_die(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define DIE(...) tl_die(__FILE__, __LINE__, __VA_ARGS__)
#define ASSERT(c) ((c) ? (void)0 : DIE("assertion failed: %s", #c))

/* ---------------------------------------------------------------- types.c */

/* X(enum, name, bits, is_float, is_signed).  Order is the table's: code that
 * depends on it (type_is_int) points back here. */
#define TL_TYPES(X)            \
  X(TY_VOID, "void", 0, 0, 0)  \
  X(TY_BOOL, "bool", 1, 0, 0)  \
  X(TY_I8, "i8", 8, 0, 1)      \
  X(TY_I16, "i16", 16, 0, 1)   \
  X(TY_I32, "i32", 32, 0, 1)   \
  X(TY_I64, "i64", 64, 0, 1)   \
  X(TY_U8, "u8", 8, 0, 0)      \
  X(TY_U16, "u16", 16, 0, 0)   \
  X(TY_U32, "u32", 32, 0, 0)   \
  X(TY_U64, "u64", 64, 0, 0)   \
  X(TY_F16, "f16", 16, 1, 1)   \
  X(TY_BF16, "bf16", 16, 1, 1) \
  X(TY_F32, "f32", 32, 1, 1)   \
  X(TY_F64, "f64", 64, 1, 1)   \
  X(TY_E4M3, "e4m3", 8, 1, 1)  \
  X(TY_E5M2, "e5m2", 8, 1, 1)

typedef enum {
#define X(e, n, b, f, s) e,
  TL_TYPES(X)
#undef X
  TY_COUNT
} TypeKind;

const char *type_name(TypeKind t);
int type_bits(TypeKind t);
int type_bytes(TypeKind t);   /* bool is stored as one byte */
bool type_is_float(TypeKind t);
bool type_is_int(TypeKind t); /* i8..u64 */
/* i8 or u8: the tensor cores' integer inputs (gemm into i32, m16n8k32, wgmma k32) */
static inline bool type_is_int8(TypeKind t) { return t == TY_I8 || t == TY_U8; }
/* e4m3 or e5m2: 8-bit floats (OCP FP8), storage and tensor-core inputs only: no arithmetic */
static inline bool type_is_fp8(TypeKind t) { return t == TY_E4M3 || t == TY_E5M2; }
bool type_is_signed(TypeKind t);
/* v wrapped to the width and signedness of integer type t, as the GPU would
 * (bool: v != 0); other types: v.  The folder's and the interpreter's. */
int64_t type_wrap_int(TypeKind t, int64_t v);
TypeKind type_from_name(const char *s, size_t n); /* TY_VOID if unknown */

/* ---------------------------------------------------------------- ir.c */

/* Operators: X(enum, spelling, is_comparison).  Binary first, then unary. */
#define TL_BINOPS(X)  \
  X(OP_ADD, "+", 0)   \
  X(OP_SUB, "-", 0)   \
  X(OP_MUL, "*", 0)   \
  X(OP_DIV, "/", 0)   \
  X(OP_MOD, "%", 0)   \
  X(OP_SHL, "<<", 0)  \
  X(OP_SHR, ">>", 0)  \
  X(OP_BAND, "&", 0)  \
  X(OP_BOR, "|", 0)   \
  X(OP_BXOR, "^", 0)  \
  X(OP_LAND, "&&", 0) \
  X(OP_LOR, "||", 0)  \
  X(OP_LT, "<", 1)    \
  X(OP_LE, "<=", 1)   \
  X(OP_GT, ">", 1)    \
  X(OP_GE, ">=", 1)   \
  X(OP_EQ, "==", 1)   \
  X(OP_NE, "!=", 1)   \
  X(OP_MIN, "min", 0) \
  X(OP_MAX, "max", 0) \
  X(OP_CEILDIV, "ceildiv", 0)

#define TL_UNOPS(X) \
  X(OP_NEG, "-", 0) \
  X(OP_NOT, "!", 0) \
  X(OP_BNOT, "~", 0)

typedef enum {
#define X(e, s, c) e,
  TL_BINOPS(X) TL_UNOPS(X)
#undef X
  OP_COUNT
} OpKind;

const char *op_spelling(OpKind op);
bool op_is_comparison(OpKind op);

/* Math intrinsics: X(enum, name, nargs, float_only).  The transcendental ones
 * use the hardware's approximate instructions (codegen/cg_math.c says which).
 * Names with a '.' cannot be written in source: the passes alone make them. */
#define TL_INTRINSICS(X)                                                                     \
  X(FN_EXP, "exp", 1, 1)                                                                     \
  X(FN_EXP2, "exp2", 1, 1)                                                                   \
  X(FN_LOG, "log", 1, 1)                                                                     \
  X(FN_LOG2, "log2", 1, 1)                                                                   \
  X(FN_SQRT, "sqrt", 1, 1)                                                                   \
  X(FN_RSQRT, "rsqrt", 1, 1)                                                                 \
  X(FN_ABS, "abs", 1, 0)                                                                     \
  X(FN_TANH, "tanh", 1, 1)                                                                   \
  X(FN_SIN, "sin", 1, 1)                                                                     \
  X(FN_COS, "cos", 1, 1)                                                                     \
  X(FN_ERF, "erf", 1, 1)                                                                     \
  X(FN_FLOOR, "floor", 1, 1)                                                                 \
  X(FN_CEIL, "ceil", 1, 1)                                                                   \
  X(FN_SIGMOID, "sigmoid", 1, 1)                                                             \
  X(FN_FMA, "fma", 3, 1)                                                                     \
  X(FN_POW, "pow", 2, 1)                                                                     \
  X(FN_NEXT_POW2, "next_pow2", 1, 0) /* launch constants only: sema folds or evaluates it */ \
  X(FN_SHFL_BFLY, "shfl.bfly", 2, 0) /* lowering only: the value of lane ^ b (warp-wide) */

typedef enum {
#define X(e, n, a, f) e,
  TL_INTRINSICS(X)
#undef X
  FN_COUNT
} IntrinsicKind;

const char *intrinsic_name(IntrinsicKind fn);
int intrinsic_nargs(IntrinsicKind fn);
bool intrinsic_float_only(IntrinsicKind fn);
int intrinsic_lookup(const char *s, size_t n); /* -1 if unknown */

typedef enum {
  VAR_CONST,      /* compile-time constant parameter; value in .cval */
  VAR_SIZE,       /* symbolic tensor size, a kernel parameter (i32) */
  VAR_SCALAR,     /* scalar kernel parameter */
  VAR_LET,        /* immutable local value */
  VAR_MUT,        /* mutable local ("var") */
  VAR_LOOP,       /* loop variable */
  VAR_BLOCK_IDX,  /* blockIdx.{x,y,z}: .dim */
  VAR_THREAD_IDX, /* threadIdx.x, introduced by lowering */
  VAR_GRID_DIM,   /* gridDim.{x,y,z}: .dim, from num_blocks(axis) or lowering */
  VAR_NUM_SMS,    /* the launching device's multiprocessor count: grid expressions only */
  VAR_TMA_OK,     /* a hidden u32 parameter the lowering adds after the tensor maps: 1 when the host
                     passed a valid map in each (docs/abi.md), else 0 (the kernel takes its other path) */
} VarKind;

typedef struct {
  const char *name;
  VarKind kind;
  TypeKind type;
  int dim;         /* BLOCK_IDX / THREAD_IDX: 0, 1, 2 */
  int param_index; /* SIZE, SCALAR: position among the PTX parameters */
  bool cval_is_float;
  int64_t cval_i;  /* CONST: the value after -D overrides */
  double cval_f;
  bool launch;     /* CONST: a launch constant (its default uses sizes): cval_i is its value at the
                      sizes compiled for (Kernel.lconsts) */
  SrcLoc loc;
} Var;

typedef enum { SCOPE_GLOBAL, SCOPE_SHARED, SCOPE_FRAGMENT, SCOPE_LOCAL } Scope;
const char *scope_name(Scope s);

#define TL_MAX_RANK 4

/* How a fragment is spread over the block's threads.
 *
 * ELEMWISE: the tile is flattened row-major into vectors of `vec` elements;
 * vector v belongs to thread v % threads, as its chunk v / threads.  A thread
 * thus owns `chunks` vectors, regs = chunks * vec registers; the last chunk
 * may fall off the end of the tile (then it is masked).
 *
 *   flat element:   0..vec-1 | vec..2vec-1 | ... | (T-1)vec.. | Tvec..
 *   owner:           thread 0 |  thread 1   | ... | thread T-1 | thread 0 (chunk 1)
 *   register:        0..vec-1 |  0..vec-1   | ... | 0..vec-1   | vec..2vec-1
 *
 * ROWS: the layout of a reduction over the last dimension of an ELEMWISE
 * fragment (the parent, of shape parent_shape): register c of a thread holds
 * the row that the thread's chunk c of the parent lies in, so every thread
 * that owns part of a row holds a copy of its value (replicated), and a
 * parallel loop over the parent's shape reads it without communication.
 * regs = chunks; vec, chunks and threads are the parent's.
 *
 *   parent [2, 8], vec 4, 2 threads:   row 0: t0 | t1    row 1: t0 | t1 (chunk 1)
 *   ROWS [2]:                          t0: reg0 = row 0, reg1 = row 1; t1 the same
 */
/* MMA: the accumulator of gemm, as mma.sync.m16n8k16 leaves it.  The block's
 * warps form a warps_m x warps_n grid over the [M, N] tile; each warp owns a
 * (frag_m * 16) x (frag_n * 8) sub-tile of m16n8 pieces (m_interleaved: the
 * warp's frag_m row pieces are warps_m * 16 rows apart instead, piece fm of
 * warp wm at rows fm * warps_m * 16 + wm * 16, so that each fm is one m64 row
 * block of wgmma per warpgroup), and in each piece lane l holds 4 registers:
 *
 *          cols 2(l%4), 2(l%4)+1
 *   row l/4       r0, r1
 *   row l/4 + 8   r2, r3          register = (fm * frag_n + fn) * 4 + r
 *
 * vec = 2 (r0 r1 and r2 r3 are neighbours in a row); regs = frag_m * frag_n * 4.
 *
 * k_quads (MMA, the register A operand of an mma.sync gemm only, layout.c's
 * quad_gemm and quads_fit): the columns of each 16-wide step s (pieces fn = 2s, 2s + 1)
 * are permuted so that a lane's four columns of a row are neighbours: register
 * r of piece fn is at column 16 (fn/2) + 4 (l%4) + 2 (fn%2) + r%2.  The
 * tensor core sums over k in any order, so the gemm reads B^T's columns in the
 * same order (4 neighbours per lane, one 8-byte load, gemm.c) and the product
 * is the same; a fill from 8-bit weights then reads 4 bytes per load.
 *
 * MMA_ROWS: the layout of a reduction over the last dimension of an MMA
 * fragment: register fm * 2 + h holds row wm * frag_m * 16 + fm * 16 + l/4 + 8h,
 * the row of registers r = 2h, 2h + 1 of the parent's pieces (fm, *).  The four
 * lanes of a quad and the warps_n warps of a warp row hold copies.
 * regs = chunks = frag_m * 2, vec = 1; the MMA fields are the parent's. */
typedef enum { LAYOUT_ELEMWISE, LAYOUT_ROWS, LAYOUT_MMA, LAYOUT_MMA_ROWS } LayoutKind;

typedef struct {
  LayoutKind kind;
  int vec;
  int chunks;
  int threads;
  int regs;
  int parent_rank;                      /* ROWS */
  int64_t parent_shape[TL_MAX_RANK];    /* ROWS */
  int warps_m, warps_n, frag_m, frag_n; /* MMA */
  bool m_interleaved;                   /* MMA: row pieces warps_m * 16 apart (above) */
  bool k_quads;                         /* MMA: a lane's 4 columns of a 16-wide step adjacent (above) */
} FragLayout;

typedef struct Expr Expr;

/* How a shared tile's elements are placed (codegen's tile_offset; gemm.c and
 * lower_tiles.c's mark_swizzled choose):
 *
 * SWIZZLE_NONE   row-major.
 * SWIZZLE_LINES  row-major, then the 16-byte chunk c of 128-byte line L moves
 *                to c ^ ((L ^ L >> 3) & 7): conflict-free ldmatrix for rows of
 *                32 to 1024 bytes (mma.sync operands).
 * SWIZZLE_128B   the wgmma operand layouts, of span S = 128, 64 or 32 bytes
 * SWIZZLE_64B    (swizzle_span): a 2-D tile [R, C] of 16-bit elements
 * SWIZZLE_32B    (R % 8 == 0, C % (S / 2) == 0) is stored as C / P panels
 *                [R, P], P = S / 2, one after another, each row S bytes, and
 *                the address bits 4 .. 4 + log2(S / 16) - 1 (the 16-byte chunk
 *                in the row) are XORed with the bits above bit 7: the
 *                hardware's "S-byte swizzle".  With S = 128 chunk c of row r
 *                sits at c ^ (r % 8) in every 1024-byte atom of 8 rows; with
 *                S = 64 at c ^ (r / 2 % 4), atoms of 8 rows, 512 bytes.
 *
 *     byte = (c / P) * R * S + r * S + (c % P) * 2
 *     byte' = byte ^ (((byte >> 7) & (S / 16 - 1)) << 4)
 *
 * In all these swizzles a 16-byte aligned chunk stays whole, so vectors of up
 * to 16 bytes stay contiguous; a staged tile applies it within each stage. */
typedef enum { SWIZZLE_NONE, SWIZZLE_LINES, SWIZZLE_128B, SWIZZLE_64B, SWIZZLE_32B } SwizzleKind;

/* The span in bytes of a wgmma operand layout (128, 64, 32), 0 for the others. */
static inline int swizzle_span(SwizzleKind s)
{
  return s == SWIZZLE_128B ? 128 : s == SWIZZLE_64B ? 64 : s == SWIZZLE_32B ? 32 : 0;
}

typedef struct {
  const char *name;
  Scope scope;
  TypeKind elem;
  int rank;
  Expr *shape[TL_MAX_RANK]; /* GLOBAL: EX_VAR of a SIZE var or EX_INT; tiles: EX_INT */
  /* GLOBAL declared with strides(...): element [i0, i1, ...] is at i0*stride[0] + i1*stride[1] + ...
   * (each an EX_VAR of a SIZE var or a positive EX_INT); NULL entries (no strides): row-major and
   * contiguous over .shape. */
  Expr *stride[TL_MAX_RANK];
  int64_t tile_shape[TL_MAX_RANK]; /* tiles: the constant shape */
  int param_index;                 /* GLOBAL: position among the PTX parameters */
  bool has_layout;
  FragLayout layout;               /* FRAGMENT, once layout inference ran */
  int64_t local_size;              /* LOCAL: elements per thread */
  int64_t smem_offset;             /* SHARED: byte offset in the block's shared memory */
  SwizzleKind swizzle;             /* SHARED: element placement (gemm operands); NONE is row-major */
  int stages;                      /* SHARED: copies kept by a pipelined loop (the leading dimension), or 0 */
  /* SHARED: the top-level statements of the tile-level body that use the tile, first to last
   * (shared-lifetimes); without live_known the whole kernel (tiles made by the lowering) */
  bool live_known;
  int live_first, live_last;
  bool unused; /* SHARED: no statement uses it (e.g. behind a branch a constant removed): no bytes */
  SrcLoc loc;
} Buffer;

typedef enum {
  EX_INT,     /* .i, of .type */
  EX_FLOAT,   /* .f, of .type */
  EX_VAR,     /* .var */
  EX_LOAD,    /* .buf[.idx...]: one element */
  EX_UNARY,   /* .op .a */
  EX_BINARY,  /* .a .op .b */
  EX_CALL,    /* .fn(.args...) */
  EX_CAST,    /* (.type) .a; .opaque: a 16-bit -> f32 widening the optimizer keeps apart from
                 every other (a reduction's: merged with the kernel's own f32(x[j]), it would keep
                 an f32 copy of the whole 16-bit fragment alive across the reduction) */
  EX_SELECT,  /* .a ? .b : .c */
  EX_ALIGNED, /* bool: the address of .buf[.args...] is a multiple of .i bytes */
} ExprKind;

struct Expr {
  ExprKind kind;
  TypeKind type;
  SrcLoc loc;
  int64_t i;
  double f;
  int var;
  int buf;
  int op;      /* OpKind or IntrinsicKind */
  bool opaque; /* EX_CAST: see there */
  Expr *a, *b, *c;
  Expr **args; /* EX_LOAD indices, EX_CALL arguments */
  int nargs;
};

/* A side of a copy: a whole tile buffer (origin == NULL) or a global tensor
 * named by the origin of the tile within it.  A tile of rank r spans the
 * tensor's last r dimensions, unless slices named them (`Q[b, s0 : s0 + BM, h,
 * :]`): then tile dimension i spans tensor dimension .span[i], in increasing
 * order, and the other dimensions stay at their origin. */
typedef struct {
  int buf;
  Expr **origin;            /* .rank entries (the tensor's rank), or NULL */
  int rank;
  int nspan;                /* 0: the last dimensions; else the tile's rank */
  int8_t span[TL_MAX_RANK]; /* .nspan entries */
} Region;

/* The tensor dimension that tile dimension td (of r) spans. */
static inline int region_span(const Region *g, int r, int td)
{
  return g->nspan ? g->span[td] : g->rank - r + td;
}

/* The tile dimension (of r) that spans tensor dimension d, or -1. */
static inline int region_tile_dim(const Region *g, int r, int d)
{
  for (int td = 0; td < r; td++)
    if (region_span(g, r, td) == d)
      return td;
  return -1;
}

typedef enum {
  FOR_SERIAL,    /* one thread runs every iteration, in order */
  FOR_PARALLEL,  /* tile-level: iterations spread over the block's threads */
  FOR_PIPELINED, /* tile-level: serial, with copies overlapped .stages deep */
  FOR_UNROLLED,  /* thread-level: constant trip count, fully unrolled */
} ForKind;

/* Statement kinds: X(enum, spelling, level).  The spelling is the printer's
 * (print.c) and the verifier's (verify.c); the level says where a kind may
 * appear: STMT_ANY everywhere, STMT_TILE only before lowering (the tile
 * operations the frontend makes), STMT_THREAD only after (what the lowering
 * makes for codegen).  Fields, by kind (struct Stmt below names each):
 *
 *   SEQ       .body[.nbody]
 *   LET       let .var = .value (immutable);  ASSIGN: .var = .value (VAR_MUT)
 *   STORE     .buf[.idx] = .value;  ATOMIC: .buf[.idx] = .reduce(.buf[.idx], .value), atomically
 *             (add, max, min; global or shared)
 *   IF        if .cond .then_s else .else_s (may be NULL)
 *   FOR       for .vars[.nvars] in .for_kind(.extents) .then_s; starts at 0
 *   COPY      .src -> .dst (regions: a tile, or a tensor at an origin)
 *   FILL      every element of .buf = .value
 *   GEMM      .c += op(.a) @ op(.b)
 *   REDUCE    .buf = reduce_.reduce(.src_buf) over dimension .dim
 *   VCOPY     .lanes contiguous elements .src_buf[.src_idx] -> .buf[.idx]
 *   BARRIER   bar.sync 0: every thread of the block (.scratch_role: one of a reduction's,
 *             lower_reduce.c); with .bar_threads > 0, the named barrier .bar_id (1 .. 15)
 *             of .bar_threads threads (bar.sync .bar_id, .bar_threads: one role's threads)
 *   IF with .roles: warp specialization's split; the threads of .then_s and of .else_s are
 *             different warpgroups that run concurrently and talk through mbarriers only
 *             (neither side may wait for the other at a barrier of the whole block)
 *   SETMAXNREG  setmaxnreg.inc / .dec (.inc) .nregs: every warp of a warpgroup asks for
 *             .nregs registers per thread (sm_90a; a role's first statement)
 *   LDMATRIX  warp: .matrices (1, 2, 4) 8x8 b16 matrices from shared .src_buf[.src_idx]
 *             (this lane's row address) into u32 registers .buf[.idx[0] ...]; .trans
 *   MMA       warp: mma.sync m16n8k16 .elem inputs, f32 accumulate:
 *             registers .c[.c_reg..+3] += .a[.a_reg..+3] x .b[.b_reg..+1]; or .a is a
 *             16-bit fragment (A in registers): its registers .a_reg..+7, packed in pairs;
 *             .b likewise u32 registers, or 16-bit ones .b_reg..+3 packed in pairs
 *   CP_ASYNC  cp.async 16 bytes global .src_buf[.src_idx] -> shared .buf[.idx];
 *             reads .src_bytes bytes (16, or 0 to zero-fill)
 *   CP_COMMIT cp.async.commit_group;  CP_WAIT: cp.async.wait_group .pending
 *
 * Hopper (sm_90a) warpgroup MMA; a warpgroup is 4 consecutive warps.  The
 * accumulator .c[0 .. .acc_regs) (f32) is in flight between WGMMA and the WAIT
 * that covers its group, so FENCE and WAIT name it too (codegen ties the
 * registers through them, and nothing reads them in between):
 *
 *   WGMMA_FENCE  wgmma.fence: before the first WGMMA that uses registers .c[0 .. .acc_regs)
 *                (with .a_reg, a constant: and A's 16-bit registers .a[.a_first ..
 *                .a_first + .a_reg), which the WGMMAs after it read)
 *   WGMMA        warpgroup: .c[0 .. .acc_regs) += A x B, m64n(2 .acc_regs)k16, .elem inputs,
 *                f32 accumulate; A: shared .a from element .a_start (or, .a a 16-bit
 *                fragment, its registers .a_reg .. +7 packed in pairs), B: shared .b from
 *                element .b_start, both SWIZZLE_128B, read through matrix descriptors;
 *                .a_mn_major / .b_mn_major: the operand is MN-major ([K, M] / [K, N])
 *   WGMMA_COMMIT wgmma.commit_group;  WGMMA_WAIT: wgmma.wait_group .pending, then
 *                .c[0 .. .acc_regs) may be read
 *   FENCE_PROXY_ASYNC  fence.proxy.async.shared::cta: this thread's earlier shared-memory
 *                writes become visible to the async proxy (wgmma) after the next barrier
 *
 * Hopper (sm_90) mbarriers and the tensor memory accelerator (TMA).  An mbarrier
 * is a u64 element .bar[.bar_idx] of a SHARED buffer; a phase completes when it
 * has had its count of arrivals and the bytes it was told to expect arrived:
 *
 *   MBAR_INIT       mbarrier.init: count .value arrivals per phase, phase 0 open
 *   MBAR_ARRIVE     one arrival
 *   MBAR_EXPECT_TX  one arrival that also expects .value more bytes (arrive.expect_tx)
 *   MBAR_WAIT       wait until the phase of parity .value (0 or 1) has completed
 *   TMA_LOAD        cp.async.bulk.tensor: the box of tensor map .tmap (Kernel.tmaps)
 *                   at tensor coordinates .src_idx (of .src_buf, the map's tensor:
 *                   its dimensions, outermost first; elements outside read as 0) ->
 *                   shared tile .buf from element .idx on (a 1024-byte aligned
 *                   panel of the SWIZZLE_128B layout: the box's rows of 128 bytes),
 *                   its bytes completing on .bar[.bar_idx]
 *   TMA_STORE       cp.async.bulk.tensor, the other way: the panel of shared tile .buf
 *                   from element .idx on (laid out as for TMA_LOAD) -> the box of tensor
 *                   map .tmap at coordinates .src_idx of .src_buf (the map's tensor; the
 *                   copy engine writes only the elements inside it), in this thread's
 *                   bulk group; the tile's generic-proxy writers fenced (fence.proxy.async)
 *                   before the barrier that precedes it
 *   TMA_STORE_WAIT  cp.async.bulk.commit_group, then wait_group.read 0: this thread's
 *                   TMA stores have read their shared bytes (the tile may be rewritten;
 *                   the writes to global complete on their own)
 *   EVAL      evaluate .value for effect (never produced yet)
 */
#define TL_STMT_KINDS(X)                                    \
  X(ST_SEQ, "seq", STMT_ANY)                                \
  X(ST_LET, "let", STMT_ANY)                                \
  X(ST_ASSIGN, "assign", STMT_ANY)                          \
  X(ST_STORE, "store", STMT_ANY)                            \
  X(ST_IF, "if", STMT_ANY)                                  \
  X(ST_FOR, "for", STMT_ANY)                                \
  X(ST_COPY, "copy", STMT_TILE)                             \
  X(ST_FILL, "fill", STMT_TILE)                             \
  X(ST_GEMM, "gemm", STMT_TILE)                             \
  X(ST_REDUCE, "reduce", STMT_TILE)                         \
  X(ST_ATOMIC, "atomic", STMT_ANY)                          \
  X(ST_VCOPY, "vcopy", STMT_THREAD)                         \
  X(ST_BARRIER, "barrier", STMT_ANY)                        \
  X(ST_LDMATRIX, "ldmatrix", STMT_THREAD)                   \
  X(ST_MMA, "mma", STMT_THREAD)                             \
  X(ST_CP_ASYNC, "cp.async", STMT_THREAD)                   \
  X(ST_CP_COMMIT, "cp.async.commit", STMT_ANY)              \
  X(ST_CP_WAIT, "cp.async.wait", STMT_ANY)                  \
  X(ST_WGMMA_FENCE, "wgmma.fence", STMT_THREAD)             \
  X(ST_WGMMA, "wgmma", STMT_THREAD)                         \
  X(ST_WGMMA_COMMIT, "wgmma.commit", STMT_THREAD)           \
  X(ST_WGMMA_WAIT, "wgmma.wait", STMT_THREAD)               \
  X(ST_FENCE_PROXY_ASYNC, "fence.proxy.async", STMT_THREAD) \
  X(ST_MBAR_INIT, "mbarrier.init", STMT_THREAD)             \
  X(ST_MBAR_ARRIVE, "mbarrier.arrive", STMT_THREAD)         \
  X(ST_MBAR_EXPECT_TX, "mbarrier.expect_tx", STMT_THREAD)   \
  X(ST_MBAR_WAIT, "mbarrier.wait", STMT_THREAD)             \
  X(ST_TMA_LOAD, "tma.load", STMT_THREAD)                   \
  X(ST_TMA_STORE, "tma.store", STMT_THREAD)                 \
  X(ST_TMA_STORE_WAIT, "tma.store.wait", STMT_THREAD)       \
  X(ST_SETMAXNREG, "setmaxnreg", STMT_THREAD)               \
  X(ST_EVAL, "eval", STMT_ANY)

typedef enum { STMT_ANY, STMT_TILE, STMT_THREAD } StmtLevel;

typedef enum {
#define X(e, s, l) e,
  TL_STMT_KINDS(X)
#undef X
} StmtKind;
enum {
#define X(e, s, l) +1
  ST_COUNT = 0 TL_STMT_KINDS(X)
#undef X
};

const char *stmt_spelling(StmtKind kind);
StmtLevel stmt_level(StmtKind kind);

typedef enum { RED_SUM, RED_MAX, RED_MIN } ReduceKind;

typedef struct Stmt Stmt;
/* A statement.  Each field holds one thing, named for it; the comment says
 * which kinds set it (a field a kind does not list is zero for it).  The
 * statement kinds' own comments above say what each means. */
struct Stmt {
  StmtKind kind;
  SrcLoc loc;
  Stmt **body; /* SEQ */
  int nbody;
  int var;     /* LET, ASSIGN: the variable */
  /* FOR */
  ForKind for_kind;
  int vars[TL_MAX_RANK];
  Expr *extents[TL_MAX_RANK];
  int nvars;
  int stages;         /* FOR_PIPELINED: the copies of each staged tile */
  int overlap;        /* FOR_PIPELINED: 1 its last gemm runs under the next iteration where it can
                         (software_pipeline.c), 2 must (sm_90a: an error where it cannot), 0 not */
  bool rolled;        /* FOR_SERIAL: stays a run-time loop (LLVM must not unroll it): a rarely
                         taken path whose unrolled copies would keep many registers alive */
  const char *spells; /* FOR_PARALLEL: the tile operation the frontend wrote as this loop
                         ("atomic_add", "cumsum", ...; diagnostics name it), or NULL */
  /* IF (FOR: .then_s is the body) */
  Expr *cond;
  Stmt *then_s, *else_s;
  bool roles; /* IF: warp-specialized roles (see ST_IF above) */
  /* The element written: STORE, ATOMIC, VCOPY, CP_ASYNC (.buf[.idx]), FILL (.buf), REDUCE
   * (the destination fragment .buf), LDMATRIX (the first u32 register .buf[.idx[0]]) */
  int buf;
  Expr **idx;
  int nidx;
  Expr *value; /* LET, ASSIGN, STORE, ATOMIC, FILL, EVAL: the value */
  /* The element read: VCOPY, CP_ASYNC, LDMATRIX (.src_buf[.src_idx]), REDUCE (.src_buf) */
  int src_buf;
  Expr **src_idx;
  int nsrc_idx;
  int lanes;               /* VCOPY, CP_ASYNC: elements moved (CP_ASYNC: 16, 8 or 4 bytes of them) */
  Expr *src_bytes;         /* CP_ASYNC: bytes read, all lanes' or 0 (zero-fill) */
  int pending;             /* CP_WAIT, WGMMA_WAIT: committed groups that may stay in flight */
  int matrices;            /* LDMATRIX: 8x8 matrices, 1, 2 or 4 */
  int scratch_role;        /* BARRIER: 0, or its role around the reduction scratch .buf (lower_reduce.c) */
  int bar_id, bar_threads; /* BARRIER: a named barrier and its thread count (0: the whole block) */
  int nregs;               /* SETMAXNREG: registers per thread (24 .. 256, a multiple of 8) */
  bool inc;                /* SETMAXNREG: .inc (else .dec) */
  bool trans;              /* LDMATRIX: .trans */
  Region src, dst;         /* COPY */
  /* GEMM: .c += op(.a) @ op(.b); MMA, WGMMA: the operand buffers */
  int a, b, c;
  bool trans_a, trans_b;       /* GEMM: A is stored [K, M], B [N, K] */
  TypeKind elem;               /* MMA, WGMMA: the 16-bit input type */
  int warps_m, warps_n;        /* GEMM: the warp grid (0: the default policy) */
  Expr *stage_a, *stage_b;     /* GEMM: the stage of A and B a pipelined loop reads (NULL: not staged) */
  Expr *a_reg, *b_reg, *c_reg; /* MMA: the first register of .a (4, or 8 16-bit), .b (2), .c (4);
                                  WGMMA: of .a in registers (8 16-bit) */
  /* WGMMA_FENCE, WGMMA, WGMMA_WAIT: the accumulator registers .c[0 .. .acc_regs) (N / 2) */
  int acc_regs;
  int a_first; /* WGMMA_FENCE with .a_reg: A's registers packed are .a[.a_first .. .a_first + .a_reg) */
  /* WGMMA: the element of .a and of .b its descriptor starts at; MN-major operands */
  Expr **a_start, **b_start;
  int na_start, nb_start;
  bool a_mn_major, b_mn_major;
  /* REDUCE: .buf = reduce_.reduce(.src_buf) over dimension .dim; .accumulate: combined with
   * .buf's old value */
  ReduceKind reduce;
  int dim;
  bool accumulate;
  /* MBAR_*, TMA_LOAD: the mbarrier .bar[.bar_idx] (.value: MBAR_INIT's count, EXPECT_TX's bytes,
   * WAIT's parity) */
  int bar;
  Expr *bar_idx;
  int tmap; /* TMA_LOAD, TMA_STORE: the tensor map, an index into Kernel.tmaps */
};

typedef struct {
  const char *name;
  SrcLoc loc;
  Var *vars;
  int nvars, cap_vars;
  Buffer *bufs;
  int nbufs, cap_bufs;
  /* PTX parameters, in order: each is a GLOBAL buffer, a SCALAR or a SIZE var, then (added by the
   * lowering) the tensor maps and the TMA_OK var. */
  struct KParam {
    bool is_buffer;
    bool is_tmap; /* a CUtensorMap passed by value (128 bytes): .index is into .tmaps */
    int index;    /* buffer, var or tensor-map handle */
  } *params;
  int nparams, cap_params;
  /* Tensor maps (sm_90a TMA loads, software_pipeline.c): each describes boxes of .box elements
   * (one per dimension of GLOBAL buffer .buf, outermost first) read from .buf into one panel of a
   * wgmma operand layout: the swizzle's span is the box's inner extent in bytes (128, 64 or 32);
   * .param is its position among the parameters. */
  struct TensorMap {
    int buf;
    int64_t box[TL_MAX_RANK];
    int param;
  } *tmaps;
  int ntmaps;
  int tma_ok;            /* the VAR_TMA_OK var (made with the first tensor map; none while ntmaps is 0) */
  bool tma_required;     /* compiled --tma-only: its maps' statements have no form for tma.ok = 0 */
  Expr *grid[3];         /* launch grid, over SIZE/CONST vars; NULL beyond .grid_rank */
  int grid_rank;
  Expr *threads;         /* threads per block; a constant after specialization */
  int nthreads;          /* set by specialization */
  int swizzle_panel;     /* use_swizzle(P): blocks visit the grid in panels of P rows (0: row order) */
  int warp_specialize;   /* warp_specialize(W): 2 required (an error where it cannot be done), 1 or 0
                            (no call) where it can be done, -1 turned off */
  SrcLoc warp_specialize_loc;
  int producer_threads;  /* threads of the producer role warp specialization added (0: none) */
  int min_blocks_per_sm; /* .minnctapersm for ptxas: min_blocks_per_sm(B), else 1 when gemm is used
                            (registers over occupancy); 0 or -1: none */
  int64_t smem_bytes;    /* shared memory per block, set by the shared-memory planner */
  bool fast_math;
  /* Launch constants, in declaration order: constants whose default uses sizes, evaluated when the
   * kernel is launched (docs/language.md, "Launch constants"); .value is the one compiled in, .rpn
   * the default as a program over sizes and earlier launch constants (docs/abi.md). */
  struct LaunchConst {
    const char *name;
    int64_t value;
    const char *rpn;
  } *lconsts;
  int nlconsts;
  int fresh_names; /* names the lowering makes are NAME.N, N counting up over the kernel */
  Stmt *body;
} Kernel;

typedef struct {
  Arena *arena;
  Kernel **kernels;
  int nkernels;
} Module;

int kernel_add_var(Arena *a, Kernel *k, Var v);
int64_t buffer_elems(const Buffer *b); /* tiles: product of tile_shape */
/* The bytes a CP_ASYNC statement moves: its lanes times its shared tile's element size (16, 8 or 4). */
static inline int cp_async_size(const Kernel *k, const Stmt *s)
{
  return s->lanes * type_bytes(k->bufs[s->buf].elem);
}
/* A tensor declared with strides(...). */
static inline bool buffer_strided(const Buffer *b) { return b->rank > 0 && b->stride[0] != NULL; }
/* Consecutive elements of the last dimension are consecutive in memory: contiguous, or an innermost
 * stride of the literal 1. Only such tensors take vector accesses, cp.async and TMA. */
static inline bool buffer_inner_unit(const Buffer *b)
{
  const Expr *s = b->rank > 0 ? b->stride[b->rank - 1] : NULL;
  return !s || (s->kind == EX_INT && s->i == 1);
}
bool buffer_same_shape(const Buffer *a, const Buffer *b); /* tiles: same rank and tile_shape */
int kernel_add_buffer(Arena *a, Kernel *k, Buffer b);
void kernel_add_param(Arena *a, Kernel *k, bool is_buffer, int index);
/* A tensor map of GLOBAL buffer buf with boxes of box[] (buf's rank), shared when the same one is
 * asked again; its parameter is added by kernel_add_tmap_params. */
int kernel_add_tmap(Arena *a, Kernel *k, int buf, const int64_t *box);
/* The parameters of the tensor maps, then of the TMA_OK var (after every other parameter). */
void kernel_add_tmap_params(Arena *a, Kernel *k);

Expr *ex_int(Arena *a, TypeKind t, int64_t v);
Expr *ex_float(Arena *a, TypeKind t, double v);
Expr *ex_var(Arena *a, const Kernel *k, int var);
Expr *ex_load(Arena *a, const Kernel *k, int buf, Expr **idx, int n);
Expr *ex_unary(Arena *a, OpKind op, Expr *x);
Expr *ex_binary(Arena *a, OpKind op, Expr *x, Expr *y); /* type: bool for comparisons, else x's */
Expr *ex_cast(Arena *a, TypeKind t, Expr *x);
Expr *ex_select(Arena *a, Expr *c, Expr *x, Expr *y);
Expr *ex_call(Arena *a, IntrinsicKind fn, TypeKind t, Expr **args, int n);
Expr *ex_aligned(Arena *a, int buf, Expr **idx, int n, int bytes);
Expr *ex_clone(Arena *a, const Expr *e);
/* A deep copy of s: its statements and expressions (variables and buffers are shared). */
Stmt *st_clone(Arena *a, const Stmt *s);
/* Folding builders for index arithmetic on i32/i64: fold constants, drop +0, *1. */
Expr *ex_add(Arena *a, Expr *x, Expr *y);
Expr *ex_mul(Arena *a, Expr *x, Expr *y);
bool ex_is_const_int(const Expr *e, int64_t *out);

Stmt *st_new(Arena *a, StmtKind kind, SrcLoc loc);
Stmt *st_seq(Arena *a, Stmt **body, int n);
/* A growing list of statements: push them, then stlist_seq makes the SEQ. */
typedef struct {
  Stmt **items;
  int n, cap;
} StmtList;
void stlist_push(Arena *a, StmtList *l, Stmt *s);
Stmt *stlist_seq(Arena *a, StmtList *l, SrcLoc loc);

/* Rewriting helpers used by passes: call fn on every expression slot (pre-order
 * on statements, the callback decides about sub-expressions) */
typedef Expr *(*ExprRewriter)(void *ctx, Expr *e);
Expr *expr_rewrite(Expr *e, ExprRewriter fn, void *ctx); /* bottom-up */
void stmt_rewrite_exprs(Stmt *s, ExprRewriter fn, void *ctx);
/* Whether pred holds for s or a statement inside it (its body, then and else, pre-order). */
typedef bool (*StmtPred)(const Stmt *s, const void *ctx);
bool stmt_any(const Stmt *s, StmtPred pred, const void *ctx);

/* ---------------------------------------------------------------- fold.c */

/* Folds constant subtrees of e in place (CONST vars become literals); returns
 * the new root.  Division by zero is left unfolded for the caller to report. */
Expr *ir_fold(Arena *a, const Kernel *k, Expr *e);
/* Folds every expression of a statement tree in place. */
void ir_fold_stmt(Arena *a, const Kernel *k, Stmt *s);
/* The same, reporting constant operations whose result the type cannot hold
 * (signed +, -, *, ceildiv, negation, MIN / -1; shifts by a negative amount
 * or the width or more) as errors in d and leaving them unfolded; false (and
 * *ok cleared) if there was one.  Unsigned arithmetic wraps. */
Expr *ir_fold_checked(Arena *a, const Kernel *k, Expr *e, Diags *d, bool *ok);
bool ir_fold_stmt_checked(Arena *a, const Kernel *k, Stmt *s, Diags *d);
/* True, with the value, if e (left untouched) folds to an integer constant. */
bool ir_eval_int(Arena *a, const Kernel *k, const Expr *e, int64_t *out);
/* e (already folded) with x * 0 -> 0, x * 1, x + 0, x - 0 -> x on integers: for expressions that
 * read no memory, such as a grid's dimensions (grid(P * a + (1 - P) * b) with the constant P). */
Expr *ir_fold_identities(Arena *a, Expr *e);

/* ---------------------------------------------------------------- print.c */

void ir_print_expr(StrBuf *sb, const Kernel *k, const Expr *e);
void ir_print_kernel(StrBuf *sb, const Kernel *k);
void ir_print_module(StrBuf *sb, const Module *m);

/* ---------------------------------------------------------------- smem.c */

/* The element offset of buf[idx[0..nidx)] in shared tile buf, within the tile
 * (add .smem_offset for the block's byte): the stage and swizzle applied as
 * SwizzleKind above says.  The indices are not checked.  codegen's tile_offset
 * builds the same arithmetic in LLVM IR (test_codegen checks they agree). */
int64_t smem_elem_offset(const Buffer *buf, const int64_t *idx, int nidx);
/* A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format" of
 * wgmma.mma_async): bits 0-13 the shared start address >> 4 (the address is
 * taken modulo 2^18), 16-29 the leading-dimension byte offset >> 4, 32-45 the
 * stride-dimension byte offset >> 4, 49-51 the base offset (0: every atom is
 * 1024-aligned), 62-63 the swizzle mode (1: 128-byte, 2: 64-byte, 3: 32-byte
 * swizzle; span is the layout's swizzle_span). */
uint64_t smem_wgmma_desc(uint32_t start, uint32_t lbo, uint32_t sbo, int span);
/* The leading- and stride-dimension byte offsets of the descriptors of a
 * tile in a wgmma operand layout (SWIZZLE_128B, _64B, _32B) that wgmma reads
 * as a K-major (mn_major false) or MN-major operand. */
void smem_wgmma_strides(const Buffer *buf, bool mn_major, uint32_t *lbo, uint32_t *sbo);

/* ---------------------------------------------------------------- verify.c */

/* What the IR may hold after a pipeline step (pipeline.c), in order: */
typedef enum {
  VERIFY_TILE,        /* after the frontend: tile ops allowed */
  VERIFY_TILE_LINEAR, /* the same, alloc_local buffers linearized (one index) */
  VERIFY_LOWERED,     /* per-thread statements; fragments still fragments, indexed by register */
  VERIFY_THREAD,      /* after lowering: per-thread statements over registers and memory only */
} VerifyLevel;

/* Returns NULL when the kernel is well formed, else a description of the first
 * problem (an internal bug: the caller DIEs with the pass name). */
const char *ir_verify(Arena *a, const Kernel *k, VerifyLevel level);

#endif
