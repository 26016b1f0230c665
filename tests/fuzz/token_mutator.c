/* token_mutator.c: fuzz_compile's mutator, at the level of the language's tokens.
 *
 * libFuzzer's own mutations work on bytes: they find the lexer's and the parser's corners fast but
 * rarely turn a kernel that compiles into another that compiles.  Here the source (after the three
 * option bytes, fuzz_compile.c) is split into tokens, roughly as frontend/lex.re does, with the
 * white space and comments after each token kept with it, and one to four of these are applied:
 *
 *   delete a run of tokens, duplicate it, or copy a run of up to 40 tokens elsewhere
 *   swap two tokens
 *   replace a token by a dictionary entry, or insert one
 *   replace a token by another of its class: a type, an operator, a number (often an edge value)
 *     or a name of the input (names meet other scopes)
 *   delete a whole statement, duplicate it, copy it elsewhere, or wrap it in an if or a loop
 *   grow an operand x into (x OP y)
 *   change one option byte
 *
 * A quarter of the calls start from a kernel that compiled quickly (token_mutator_remember) rather than the
 * input given.  Falls back to LLVMFuzzerMutate (byte-level) for a fifth of the calls, for inputs
 * without tokens, and when the result would not fit.  The crossover splices the tokens of two inputs.
 * The dictionary is the file given to libFuzzer with -dict= (tests/fuzz/seeds.py writes it from the
 * lexer, the grammar's tables and the checker's reserved names). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2, size_t size2,
                                 uint8_t *out, size_t max_out_size, unsigned int seed);
void token_mutator_load_dict(const char *path);
void token_mutator_remember(const uint8_t *data, size_t size);

#define HEADER 3

/* ------------------------------------------------------------------------------ the dictionary */

static const char *const builtin_dict[] = {
    "kernel",
    "let",
    "var",
    "if",
    "else",
    "for",
    "in",
    "grid",
    "threads",
    "as",
    "parallel",
    "serial",
    "pipelined",
    "copy",
    "fill",
    "clear",
    "gemm",
    "reduce_sum",
    "reduce_max",
    "alloc_shared",
    "alloc_fragment",
    "alloc_local",
    "f32",
    "f16",
    "bf16",
    "i32",
    "i64",
    "bool",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "=",
    "+",
    "-",
    "*",
    "/",
    "<",
    "==",
    "&&",
    "!",
    "0",
    "1",
};

typedef struct {
  char *p;
  size_t n;
} Str;

static Str *dict;
static size_t ndict;

static int hexval(int c)
{
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* libFuzzer's dictionary format: one [name=]"value" per line, with \\, \" and \xNN. */
void token_mutator_load_dict(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    char *q = strchr(line, '"');
    if (line[0] == '#' || !q)
      continue;
    char *val = malloc(strlen(q) + 1);
    size_t n = 0;
    for (char *c = q + 1; *c && *c != '"'; c++) {
      if (*c == '\\' && c[1] == 'x' && hexval(c[2]) >= 0 && hexval(c[3]) >= 0) {
        val[n++] = (char)(hexval(c[2]) * 16 + hexval(c[3]));
        c += 3;
      } else if (*c == '\\' && c[1]) {
        val[n++] = *++c;
      } else {
        val[n++] = *c;
      }
    }
    if (!n) {
      free(val);
      continue;
    }
    Str *grown = realloc(dict, (ndict + 1) * sizeof *dict);
    if (!grown) {
      free(val);
      break;
    }
    dict = grown;
    dict[ndict++] = (Str){val, n};
  }
  fclose(f);
}

static const char *const edge_numbers[] = {
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "8",
    "16",
    "31",
    "32",
    "33",
    "63",
    "64",
    "65",
    "127",
    "128",
    "255",
    "256",
    "257",
    "1023",
    "1024",
    "4096",
    "8192",
    "32768",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "99999999999999999999",
    "0x7fffffff",
    "0x80000000",
    "0xffffffffffffffff",
    "3000000000",
    "1_000",
    "0.0",
    "0.5",
    "1.5",
    "1e38",
    "1e39",
    "1e308",
    "1e309",
    "65504.0",
    "65520.0",
    "1.5e-45",
    "2.0e-38",
    ".5",
    "1e-400",
};

/* -------------------------------------------------------------------------------- the tokens */

typedef struct {
  const uint8_t *p;   /* the token */
  size_t n;
  const uint8_t *gap; /* the white space and comments after it */
  size_t gap_n;
} Tok;

typedef struct {
  Tok *t;
  size_t n, cap;
  const uint8_t *lead; /* white space before the first token */
  size_t lead_n;
} Toks;

static int is_space(int c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* The length of the white space and comments at p. */
static size_t skip_gap(const uint8_t *p, const uint8_t *end)
{
  const uint8_t *s = p;
  while (p < end) {
    if (is_space(*p)) {
      p++;
    } else if (p + 1 < end && p[0] == '/' && p[1] == '/') {
      while (p < end && *p != '\n')
        p++;
    } else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
      p += 2;
      while (p < end && !(p + 1 < end && p[0] == '*' && p[1] == '/'))
        p++;
      p = p < end ? p + 2 : end;
    } else {
      break;
    }
  }
  return (size_t)(p - s);
}

static size_t token_len(const uint8_t *p, const uint8_t *end)
{
  static const char two[][3] = {"+=", "-=", "*=", "/=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
  const uint8_t *s = p;
  if (is_alpha(*p)) {
    while (p < end && (is_alpha(*p) || is_digit(*p)))
      p++;
  } else if (is_digit(*p) || (*p == '.' && p + 1 < end && is_digit(p[1]))) {
    while (p < end && (is_alpha(*p) || is_digit(*p) || *p == '.' ||
                       ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E'))))
      p++;
  } else {
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
      if (p + 1 < end && p[0] == two[i][0] && p[1] == two[i][1])
        return 2;
    p++;
  }
  return (size_t)(p - s);
}

static void push(Toks *ts, Tok t)
{
  if (ts->n == ts->cap) {
    ts->cap = ts->cap ? 2 * ts->cap : 64;
    ts->t = realloc(ts->t, ts->cap * sizeof *ts->t);
  }
  ts->t[ts->n++] = t;
}

static void tokenize(const uint8_t *p, size_t size, Toks *ts)
{
  const uint8_t *end = p + size;
  memset(ts, 0, sizeof *ts);
  ts->lead = p;
  ts->lead_n = skip_gap(p, end);
  p += ts->lead_n;
  while (p < end) {
    Tok t = {p, token_len(p, end), NULL, 0};
    p += t.n;
    t.gap = p;
    t.gap_n = skip_gap(p, end);
    p += t.gap_n;
    push(ts, t);
  }
}

/* ---------------------------------------------------------------------------------- mutations */

static uint64_t rng_state;
static uint64_t rnd(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static const uint8_t space[] = " ";

static Tok word(const char *s, size_t n) { return (Tok){(const uint8_t *)s, n, space, 1}; }

static Tok dict_token(void)
{
  if (ndict && below(8)) {
    Str s = dict[below(ndict)];
    return word(s.p, s.n);
  }
  if (!ndict && below(4)) {
    const char *s = builtin_dict[below(sizeof builtin_dict / sizeof builtin_dict[0])];
    return word(s, strlen(s));
  }
  const char *s = edge_numbers[below(sizeof edge_numbers / sizeof edge_numbers[0])];
  return word(s, strlen(s));
}

static void insert_at(Toks *ts, size_t at, const Tok *src, size_t n)
{
  for (size_t i = 0; i < n; i++)
    push(ts, (Tok){0});
  memmove(&ts->t[at + n], &ts->t[at], (ts->n - n - at) * sizeof *ts->t);
  memcpy(&ts->t[at], src, n * sizeof *src);
}

static void delete_at(Toks *ts, size_t at, size_t n)
{
  memmove(&ts->t[at], &ts->t[at + n], (ts->n - at - n) * sizeof *ts->t);
  ts->n -= n;
}

/* Token classes, for replacements that keep a kernel well-formed more often than not. */
enum { K_OTHER, K_IDENT, K_TYPE, K_NUMBER, K_BINOP, K_ASSIGN };

static const char *const type_names[] = {"bool", "i8",  "i16", "i32",  "i64", "u8", "u16",
                                         "u32",  "u64", "f16", "bf16", "f32", "f64"};
static const char *const binops[] = {"+", "-",  "*",  "/", "%",  "<<", ">>", "&",  "|",
                                     "^", "&&", "||", "<", "<=", ">",  ">=", "==", "!="};
static const char *const assigns[] = {"=", "+=", "-=", "*=", "/="};
#define COUNT(a) (sizeof(a) / sizeof(a)[0])

static int in_list(const Tok *t, const char *const *list, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strlen(list[i]) == t->n && !memcmp(list[i], t->p, t->n))
      return 1;
  return 0;
}

static int kind_of(const Tok *t)
{
  if (is_digit(t->p[0]) || (t->p[0] == '.' && t->n > 1))
    return K_NUMBER;
  if (in_list(t, type_names, COUNT(type_names)))
    return K_TYPE;
  if (is_alpha(t->p[0]))
    return K_IDENT;
  if (in_list(t, binops, COUNT(binops)))
    return K_BINOP;
  if (in_list(t, assigns, COUNT(assigns)))
    return K_ASSIGN;
  return K_OTHER;
}

static int is_text(const Tok *t, const char *s) { return t->n == strlen(s) && !memcmp(t->p, s, t->n); }

/* Replaces t by another token of its class: an edge value or another number of the input for a
 * number, another type, operator or name of the input. */
static void replace_same_kind(Toks *ts, Tok *t)
{
  int k = kind_of(t);
  const char *s = NULL;
  if (k == K_TYPE)
    s = type_names[below(COUNT(type_names))];
  else if (k == K_BINOP)
    s = binops[below(COUNT(binops))];
  else if (k == K_ASSIGN)
    s = assigns[below(COUNT(assigns))];
  else if (k == K_NUMBER && below(2))
    s = edge_numbers[below(COUNT(edge_numbers))];
  if (s) {
    t->p = (const uint8_t *)s, t->n = strlen(s);
    return;
  }
  size_t at = below(ts->n);
  for (size_t i = 0; i < ts->n; i++) {
    const Tok *o = &ts->t[(at + i) % ts->n];
    if (kind_of(o) == k && o != t) {
      t->p = o->p, t->n = o->n;
      return;
    }
  }
}

/* A statement starts after ";", "{" or "}" and ends at its ";" or at the "}" closing its block
 * (and an "else" part); returns its length in tokens, 0 if `at` starts none. */
static size_t statement_at(const Toks *ts, size_t at)
{
  if (at >= ts->n || is_text(&ts->t[at], "}") || is_text(&ts->t[at], "else") ||
      (at > 0 && !is_text(&ts->t[at - 1], ";") && !is_text(&ts->t[at - 1], "{") &&
       !is_text(&ts->t[at - 1], "}")))
    return 0;
  int depth = 0, paren = 0;
  for (size_t i = at; i < ts->n; i++) {
    const Tok *t = &ts->t[i];
    if (is_text(t, "(") || is_text(t, "["))
      paren++;
    else if (is_text(t, ")") || is_text(t, "]"))
      paren--;
    else if (is_text(t, "{"))
      depth++;
    else if (is_text(t, "}") && --depth <= 0) {
      if (depth < 0)
        return 0;
      if (i + 1 < ts->n && is_text(&ts->t[i + 1], "else"))
        continue;
      return i + 1 - at;
    } else if (is_text(t, ";") && depth == 0 && paren <= 0)
      return i + 1 - at;
  }
  return 0;
}

/* A random statement: its start in *at, its length returned (0: none found). */
static size_t pick_statement(const Toks *ts, size_t *at)
{
  size_t start = below(ts->n);
  for (size_t i = 0; i < ts->n; i++) {
    size_t j = (start + i) % ts->n, n = statement_at(ts, j);
    if (n && n < ts->n) {
      *at = j;
      return n;
    }
  }
  return 0;
}

/* Wraps [at, at + n) in a block: an if, a serial or parallel loop, a plain block. */
static void wrap_statement(Toks *ts, size_t at, size_t n)
{
  static const char *const opens[] = {"if (true) {",
                                      "if (false) {",
                                      "for w in serial(2) {",
                                      "for w in serial(0) {",
                                      "for w in parallel(32) {",
                                      "{"};
  const char *o = opens[below(COUNT(opens))];
  Tok close = word("}", 1);
  insert_at(ts, at + n, &close, 1);
  Tok open = word(o, strlen(o));
  insert_at(ts, at, &open, 1);
}

static void mutate_tokens(Toks *ts, uint8_t *header)
{
  size_t n = ts->n;
  switch (below(18)) {
  case 0: { /* delete a run */
    size_t at = below(n), k = 1 + below(below(4) ? 1 : 4);
    delete_at(ts, at, at + k > n ? n - at : k);
    break;
  }
  case 1: { /* duplicate a run in place */
    size_t at = below(n), k = 1 + below(below(2) ? 1 : 8);
    if (at + k > n)
      k = n - at;
    Tok copy[8];
    memcpy(copy, &ts->t[at], k * sizeof *copy);
    insert_at(ts, at + k, copy, k);
    break;
  }
  case 2: { /* swap */
    size_t a = below(n), b = below(n);
    Tok t = ts->t[a];
    ts->t[a].p = ts->t[b].p, ts->t[a].n = ts->t[b].n;
    ts->t[b].p = t.p, ts->t[b].n = t.n;
    break;
  }
  case 3: { /* replace by a dictionary entry */
    Tok t = dict_token();
    size_t at = below(n);
    ts->t[at].p = t.p, ts->t[at].n = t.n;
    break;
  }
  case 4: { /* insert a dictionary entry, half the time glued to the token before it (k_param_0) */
    Tok t = dict_token();
    size_t at = below(n + 1);
    insert_at(ts, at, &t, 1);
    if (at > 0 && below(2))
      ts->t[at - 1].gap_n = 0;
    break;
  }
  case 5: { /* replace by another token of the input */
    size_t a = below(n), b = below(n);
    ts->t[a].p = ts->t[b].p, ts->t[a].n = ts->t[b].n;
    break;
  }
  case 6: { /* a number, by an edge value */
    size_t at = below(n);
    for (size_t i = 0; i < n; i++) {
      Tok *t = &ts->t[(at + i) % n];
      if (is_digit(t->p[0])) {
        const char *s = edge_numbers[below(sizeof edge_numbers / sizeof edge_numbers[0])];
        t->p = (const uint8_t *)s, t->n = strlen(s);
        break;
      }
    }
    break;
  }
  case 7:
  case 8: { /* copy a run elsewhere */
    size_t at = below(n), k = 1 + below(40);
    if (at + k > n)
      k = n - at;
    Tok *copy = malloc(k * sizeof *copy);
    memcpy(copy, &ts->t[at], k * sizeof *copy);
    insert_at(ts, below(n + 1), copy, k);
    free(copy);
    break;
  }
  case 9:
  case 10:
  case 11: /* a token, by another of its class */ replace_same_kind(ts, &ts->t[below(n)]); break;
  case 12:
  case 13:
  case 14: { /* a statement: deleted, duplicated, copied elsewhere or wrapped in a block */
    size_t at, k = pick_statement(ts, &at);
    if (!k)
      break;
    int how = (int)below(4);
    if (how == 0) {
      delete_at(ts, at, k);
    } else if (how == 3) {
      wrap_statement(ts, at, k);
    } else {
      size_t to = at + k, other;
      if (how == 2 && pick_statement(ts, &other))
        to = other;
      Tok *copy = malloc(k * sizeof *copy);
      memcpy(copy, &ts->t[at], k * sizeof *copy);
      insert_at(ts, to, copy, k);
      free(copy);
    }
    break;
  }
  case 15:
  case 16: { /* an operand x becomes (x OP y), y a number or a name of the input */
    size_t at = below(n);
    for (size_t i = 0; i < n; i++) {
      size_t j = (at + i) % n;
      int k = kind_of(&ts->t[j]);
      if (k != K_IDENT && k != K_NUMBER)
        continue;
      const char *op = binops[below(COUNT(binops))];
      Tok y = ts->t[below(n)];
      if (kind_of(&y) != K_IDENT && kind_of(&y) != K_NUMBER)
        y = word(edge_numbers[below(8)], strlen(edge_numbers[below(8)]));
      Tok tail[3] = {word(op, strlen(op)), {y.p, y.n, space, 0}, ts->t[j]};
      tail[2].p = (const uint8_t *)")", tail[2].n = 1; /* keeps x's gap */
      ts->t[j].gap = space, ts->t[j].gap_n = 1;
      insert_at(ts, j + 1, tail, 3);
      Tok open = {(const uint8_t *)"(", 1, space, 0};
      insert_at(ts, j, &open, 1);
      break;
    }
    break;
  }
  default: /* an option byte */ header[below(HEADER)] = (uint8_t)('0' + below(10)); break;
  }
}

/* The header, the leading gap, then each token and its gap; 0 if it does not fit. */
static size_t render(const uint8_t *header, const Toks *ts, uint8_t *out, size_t max)
{
  size_t total = HEADER + ts->lead_n;
  for (size_t i = 0; i < ts->n; i++)
    total += ts->t[i].n + ts->t[i].gap_n;
  if (total > max)
    return 0;
  uint8_t *buf = malloc(total ? total : 1), *o = buf;
  memcpy(o, header, HEADER), o += HEADER;
  memcpy(o, ts->lead, ts->lead_n), o += ts->lead_n;
  for (size_t i = 0; i < ts->n; i++) {
    memcpy(o, ts->t[i].p, ts->t[i].n), o += ts->t[i].n;
    memcpy(o, ts->t[i].gap, ts->t[i].gap_n), o += ts->t[i].gap_n;
  }
  memcpy(out, buf, total);
  free(buf);
  return total;
}

/* ------------------------------------------------------------------- kernels that compiled */

/* Inputs that fuzz_compile saw compile (the seeds first, then what the fuzzer finds).  Most
 * inputs of the corpus are there for the error paths they reach, and their mutants fail again
 * before the passes; a quarter of the mutations start from one of these instead, so that the
 * passes and code generation see a steady stream of kernels one or two edits away from valid. */
#define POOL 512
#define POOL_MAX_INPUT 16384
static Str pool[POOL];
static size_t npool, pool_seen;

void token_mutator_remember(const uint8_t *data, size_t size)
{
  if (size > POOL_MAX_INPUT)
    return;
  size_t slot = npool < POOL ? npool++ : (size_t)((pool_seen * 0x9e3779b97f4a7c15ull) >> 32) % POOL;
  pool_seen++;
  char *copy = malloc(size ? size : 1);
  memcpy(copy, data, size);
  free(pool[slot].p);
  pool[slot] = (Str){copy, size};
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
  rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
  if (npool && below(4) == 0) {
    Str s = pool[below(npool)];
    if (s.n <= max_size) {
      memcpy(data, s.p, s.n);
      size = s.n;
      /* The fast kernels are mostly TIR; a third of them go on to LLVM and PTX. */
      if (size >= HEADER && below(3) == 0)
        data[2] = '0';
    }
  }
  if (size < HEADER || below(5) == 0)
    return LLVMFuzzerMutate(data, size, max_size);
  uint8_t header[HEADER];
  memcpy(header, data, HEADER);
  Toks ts;
  tokenize(data + HEADER, size - HEADER, &ts);
  if (ts.n == 0) {
    free(ts.t);
    return LLVMFuzzerMutate(data, size, max_size);
  }
  for (size_t rounds = 1 + below(below(2) ? 1 : 4); rounds-- && ts.n;)
    mutate_tokens(&ts, header);
  size_t n = render(header, &ts, data, max_size);
  free(ts.t);
  return n ? n : LLVMFuzzerMutate(data, size, max_size);
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2, size_t size2,
                                 uint8_t *out, size_t max_out_size, unsigned int seed)
{
  rng_state = seed * 0x9e3779b97f4a7c15ull + 7;
  if (size1 < HEADER || size2 < HEADER)
    return 0;
  Toks a, b;
  tokenize(data1 + HEADER, size1 - HEADER, &a);
  tokenize(data2 + HEADER, size2 - HEADER, &b);
  size_t n = 0;
  if (a.n && b.n) {
    /* a[0, i) b[j, j+k) a[i, ...): a run of b inside a, or (k to the end) a's head on b's tail */
    size_t i = below(a.n + 1), j = below(b.n), k = below(2) ? b.n - j : 1 + below(b.n - j);
    Tok *mix = malloc((a.n + k) * sizeof *mix);
    memcpy(mix, a.t, i * sizeof *mix);
    memcpy(mix + i, b.t + j, k * sizeof *mix);
    size_t tail = below(2) ? a.n - i : 0;
    memcpy(mix + i + k, a.t + i, tail * sizeof *mix);
    Toks m = {mix, i + k + tail, i + k + tail, a.lead, a.lead_n};
    n = render(data1, &m, out, max_out_size);
    free(mix);
  }
  free(a.t);
  free(b.t);
  return n;
}
