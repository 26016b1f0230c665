/* launch.c: a launch's arguments matched to a kernel's parameters, the same for
 * both levels (tile.c, thread.c). */
#include "interp.h"

#include <string.h>

static const InterpArg *find_arg(const InterpArg *args, int nargs, const char *name)
{
  for (int i = 0; i < nargs; i++)
    if (args[i].name && !strcmp(args[i].name, name))
      return &args[i];
  return NULL;
}

static const char *param_name(const Kernel *k, int p)
{
  int h = k->params[p].index;
  return k->params[p].is_buffer ? k->bufs[h].name : k->vars[h].name;
}

bool interp_bind_args(const Kernel *k, const InterpArg *args, int nargs, Val *vars, void **data, Diags *d)
{
  for (int i = 0; i < nargs; i++) {
    bool known = false;
    for (int p = 0; p < k->nparams && !known; p++)
      known = args[i].name && !strcmp(param_name(k, p), args[i].name);
    if (!known) {
      error_at(d, k->loc, "kernel '%s' has no parameter named '%s'", k->name,
               args[i].name ? args[i].name : "(null)");
      return false;
    }
  }
  for (int p = 0; p < k->nparams; p++) {
    int h = k->params[p].index;
    const char *name = param_name(k, p);
    const InterpArg *a = find_arg(args, nargs, name);
    if (!a || (k->params[p].is_buffer && !a->data)) {
      error_at(d, k->loc, "no %s given for parameter '%s' of kernel '%s'", a ? "data" : "argument", name,
               k->name);
      return false;
    }
    if (k->params[p].is_buffer) {
      data[h] = a->data;
      continue;
    }
    TypeKind t = k->vars[h].type;
    vars[h] = type_is_float(t) ? (Val){.f = val_round(t, a->f)} : (Val){.i = type_wrap_int(t, a->i)};
    if (k->vars[h].kind == VAR_SIZE && vars[h].i < 0) {
      error_at(d, k->loc, "size '%s' is negative (%lld)", name, (long long)vars[h].i);
      return false;
    }
  }
  for (int v = 0; v < k->nvars; v++)
    if (k->vars[v].kind == VAR_CONST)
      vars[v] = k->vars[v].cval_is_float ? (Val){.f = k->vars[v].cval_f} : (Val){.i = k->vars[v].cval_i};
  return true;
}
