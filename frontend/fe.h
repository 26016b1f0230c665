/* fe.h: the frontend — lexer (lex.re), parser (parse.y), AST (ast.c) and the
 * semantic checks that turn the AST into tile IR (sema.c). */
#ifndef TILEC_FE_H
#define TILEC_FE_H

#include "ir.h"

/* ---------------------------------------------------------------- lex.re */

typedef struct {
  int id;            /* TK_* from the generated parse.h; 0 at end of input */
  const char *start; /* into the source */
  int len;
  SrcLoc loc;
} Token;

typedef struct {
  const char *src, *cur, *end;
  const char *line_start;
  int line;
  Diags *diags;
  int prev_id, prev_line; /* the last token returned and its line (the '//' warning) */
} Lexer;

/* src[len] must be a readable NUL: the end-of-input check reads it (lex.re). */
void lexer_init(Lexer *lx, const char *src, size_t len, Diags *d);
/* Next token; skips (and reports) characters that start no token. */
Token lexer_next(Lexer *lx);
const char *token_name(int id);

/* ---------------------------------------------------------------- ast.c */

typedef enum {
  /* expressions */
  N_INT,
  N_FLOAT,
  N_BOOL,
  N_NAME,
  N_TYPE,
  N_UNARY,
  N_BINARY,
  N_CALL,
  N_INDEX,
  N_LIST,
  N_NAMED,
  N_SLICE, /* in an index list: `a : b` (.a, .b) or `:` (neither) */
  /* statements */
  N_LET,
  N_VAR,
  N_ASSIGN,
  N_CALLSTMT,
  N_IF,
  N_FOR,
  N_BLOCK,
  /* declarations */
  N_KERNEL,
  N_PARAM,
  N_CONST,
  N_FN, /* fn NAME(params) block (.b) | fn NAME(params) = expr; (.a); params in .list */
} NodeKind;

typedef struct Node Node;
typedef struct {
  Node **items;
  int n, cap;
} NodeList;

struct Node {
  NodeKind kind;
  SrcLoc loc;
  const char *name;  /* N_NAME, N_NAMED, N_CALL callee, N_LET/N_VAR, N_KERNEL, N_PARAM, N_CONST */
  int op;            /* N_UNARY, N_BINARY (OpKind); N_ASSIGN: OP_COUNT for '=', else the compound op */
  TypeKind type;     /* N_TYPE, N_PARAM, N_CONST, N_LET/N_VAR (TY_VOID: inferred or named) */
  const char *tname; /* N_PARAM, N_CONST, N_LET/N_VAR: a type constant's name instead of .type */
  SrcLoc tloc;       /* where that type was written */
  int64_t ival;
  double fval;
  bool overflow;   /* N_INT: literal does not fit 64 bits */
  int depth;       /* expressions: operators, calls and indexing below and including this node */
  Node *a, *b, *c; /* operands; N_IF cond/then/else; N_FOR iter-call/body; N_LET value */
  NodeList list;   /* N_CALL/N_INDEX args, N_LIST items, N_BLOCK stmts, N_FOR vars,
                      N_PARAM dims, N_KERNEL params */
  NodeList list2;  /* N_KERNEL: consts; grid exprs in list3; N_PARAM: strides(...), if written */
  NodeList list3;  /* N_KERNEL: grid exprs */
  NodeList names;  /* N_KERNEL: block index names ("as (bx, by)") */
  bool is_tensor;  /* N_PARAM */
};

Node *node_new(Arena *a, NodeKind kind, SrcLoc loc);
void nodelist_push(Arena *a, NodeList *l, Node *n);
void ast_print(StrBuf *sb, const NodeList *kernels);

/* ---------------------------------------------------------------- parse.y */

/* Limits of the parse, so that every later recursive walk (sema, the
 * printers, the passes, codegen) stays well inside a thread's stack and no
 * input makes them quadratic (docs/language.md section 17). */
enum {
  MAX_EXPR_DEPTH = 1000, /* operators, calls, indexing and parentheses, nested */
  MAX_NEST_DEPTH = 256,  /* blocks and else-if links, nested */
};

typedef struct {
  Arena *arena;
  Diags *diags;
  NodeList kernels;
  bool stop;         /* a limit was hit (or the parser's stack overflowed): stop feeding tokens */
  SrcLoc cur;        /* the token being fed, for the overflow message */
  int last_err_line; /* one syntax error per line keeps cascades short */
} Parser;

/* Parses a whole source, with a NUL at src[len] (lexer_init); AST in
 * p->kernels; errors in d. */
void parse_source(Parser *p, const char *src, size_t len);

/* ---------------------------------------------------------------- sema.c */

typedef struct {
  const char *name;
  const char *value;
} ConstDef;

/* What a -D value is (also a scalar's value for `tilec run`). */
typedef enum {
  DEFINE_BAD,
  DEFINE_BOOL,    /* true, false */
  DEFINE_INT,     /* decimal or 0x hex, optionally negative */
  DEFINE_INT_BIG, /* an integer beyond 64 bits: no integer constant takes it, a float one does */
  DEFINE_FLOAT,
} DefineKind;

/* Parses a -D value into *i (a bool or an integer) or *f (a float, or an
 * integer beyond 64 bits; for an integer, its value as a double too). */
DefineKind sema_parse_define(const char *v, int64_t *i, double *f);

/* Checks the AST and builds one IR kernel per AST kernel.  `only` selects a
 * kernel by name (NULL: all).  Returns NULL if errors were reported. */
/* defs: -D NAME=VALUE; sizes: --size NAME=VALUE, the sizes launch constants are evaluated at
 * (docs/language.md, "Launch constants"); only: one kernel, or NULL for all. */
struct Target;
/* target: what has_wgmma() answers for (NULL: the default target). */
Module *sema_build(Arena *a, Diags *d, const NodeList *kernels, const ConstDef *defs, int ndefs,
                   const ConstDef *sizes, int nsizes, const char *only, const struct Target *target);

#endif
