/* runtime_internal.h: what the runtime's own files share and hosts never see.
 * Sections: messages (used everywhere), meta.c (grid programs), runtime.c (what the JIT library,
 * tilec_jit, reaches inside a context).
 */
#ifndef TILEC_RUNTIME_INTERNAL_H
#define TILEC_RUNTIME_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tilec_runtime.h"

/* ------------------------------------------------------------------------------------- messages */

/* printf into a caller's error buffer, which may be NULL or 0 bytes (then the message is dropped:
 * the status alone still says what happened). Truncates, always NUL-terminates. */
static inline void tl_vfmt(char *buf, size_t size, const char *fmt, va_list ap)
{
  if (buf && size > 0)
    vsnprintf(buf, size, fmt, ap);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void
tl_fmt(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  tl_vfmt(buf, size, fmt, ap);
  va_end(ap);
}

/* Longest message a context keeps: the driver's PTX error log can be long, and truncating it is
 * better than losing the first error. */
#define TL_MESSAGE_MAX 16384

/* ----------------------------------------------------------------------------------------- meta.c */

/* A grid axis's RPN program, checked at parse time (names resolved, stack depth known), so that
 * evaluation cannot fail except on values: division by zero, overflow, a scalar out of range. */
typedef enum tl_rpn_op {
  TL_RPN_CONST,
  TL_RPN_PARAM, /* push the value of params[param] (a size or an integer scalar) */
  TL_RPN_ADD,
  TL_RPN_SUB,
  TL_RPN_MUL,
  TL_RPN_DIV,
  TL_RPN_MOD,
  TL_RPN_MIN,
  TL_RPN_MAX,
  TL_RPN_CEILDIV,
  TL_RPN_NUM_SMS, /* push the device's multiprocessor count (token `num_sms`) */
} tl_rpn_op;

typedef struct tl_rpn_token {
  tl_rpn_op op;
  int param;     /* TL_RPN_PARAM */
  int64_t value; /* TL_RPN_CONST */
} tl_rpn_token;

struct tl_grid_program {
  int ntokens;
  int max_depth;
  tl_rpn_token *tokens;
};

/* Evaluate with values[i] the value of params[i] (only the params the program names are read;
 * known[i] false means the value could not be represented as int64, e.g. a u64 above INT64_MAX)
 * and num_sms the device's multiprocessor count (0: not known, refused if the program reads it).
 * Errors are TL_ERR_BAD_ARGUMENT: the program is well formed, the values are what fail. */
tl_status tl_grid_eval(const tl_kernel_info *kernel, int axis, const int64_t *values, const bool *known,
                       int64_t num_sms, int64_t *out, char *err, size_t err_size);

/* -------------------------------------------------------------------- runtime.c, for tilec_jit */

/* printf into the context's message; returns `status`. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
tl_status
tl_context_fail(tl_context *ctx, tl_status status, const char *fmt, ...);
/* Clear the context's message; returns TL_OK. */
tl_status tl_context_succeed(tl_context *ctx);

/* One object that the JIT hangs on a context (its cache, for one), destroyed with the context after
 * the context's modules are unloaded. Setting replaces (and destroys) the previous one. */
void *tl_context_jit_state(const tl_context *ctx);
void tl_context_set_jit_state(tl_context *ctx, void *state, void (*destroy)(void *state));

/* Have the driver compile `ptx` (NUL-terminated) to a device binary for the context's device, with
 * cuLinkCreate / cuLinkAddData / cuLinkComplete. *image is malloc'd (the caller frees it). Fails as
 * tl_module_load_ptx does (TL_ERR_PTX_REJECTED with the driver's log). */
tl_status tl_context_link_ptx(tl_context *ctx, const char *ptx, void **image, size_t *image_size);

/* tl_module_load_ptx for an image that is either the PTX itself (image == ptx) or a device binary
 * the driver made from it (tl_context_link_ptx): the metadata always comes from `ptx`. A device
 * binary the driver refuses gives TL_ERR_PTX_REJECTED, so that the caller can fall back to the
 * PTX. */
tl_status tl_module_load_image(tl_context *ctx, const char *ptx, const void *image, tl_module **out);

#endif /* TILEC_RUNTIME_INTERNAL_H */
