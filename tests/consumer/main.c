/* consumer: a host built outside the tree against an installed tilec, as a user builds one
 * (tests/consumer/run.sh builds it with find_package and with pkg-config).
 *
 *   consumer FILE.tl
 *
 * Checks that the header and the library are the same version, then compiles FILE.tl's vector_add
 * through the JIT on the CPU device (no GPU, no driver), launches it at a size that is not a
 * multiple of its tile, and checks every element of C = A + B. Prints one "OK" line; exit 1 on any
 * failure, with why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tilec_jit.h>

enum { N = 10007 };

static int fail(const char *what, const char *why)
{
  fprintf(stderr, "consumer: %s: %s\n", what, why);
  return 1;
}

int main(int argc, char **argv)
{
  if (argc != 2)
    return fail("usage", "consumer FILE.tl");
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", TILEC_VERSION_MAJOR, TILEC_VERSION_MINOR, TILEC_VERSION_PATCH);
  if (strcmp(header, tilec_version()) != 0)
    return fail("version", "the header and the library differ");

  char err[1024];
  tl_context *ctx = NULL;
  if (tl_context_create(TL_DEVICE_CPU, &ctx, err, sizeof err) != TL_OK)
    return fail("tl_context_create", err);
  tl_module *mod = NULL;
  tl_kernel *add = NULL;
  if (tl_module_compile_file(ctx, argv[1], NULL, &mod) != TL_OK ||
      tl_module_get_kernel(mod, "vector_add", &add) != TL_OK)
    return fail(argv[1], tl_context_message(ctx));

  static float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = (float)(2 * i + 1);
  }
  tl_devptr da, db, dc;
  const size_t bytes = sizeof a;
  if (tl_malloc(ctx, bytes, &da) != TL_OK || tl_malloc(ctx, bytes, &db) != TL_OK ||
      tl_malloc(ctx, bytes, &dc) != TL_OK || tl_memcpy_htod(ctx, da, a, bytes) != TL_OK ||
      tl_memcpy_htod(ctx, db, b, bytes) != TL_OK)
    return fail("memory", tl_context_message(ctx));
  int64_t shape[1] = {N};
  tl_arg args[3] = {tl_arg_tensor(da, TL_F32, 1, shape), tl_arg_tensor(db, TL_F32, 1, shape),
                    tl_arg_tensor(dc, TL_F32, 1, shape)};
  if (tl_launch(add, args, 3, NULL) != TL_OK || tl_synchronize(ctx) != TL_OK ||
      tl_memcpy_dtoh(ctx, c, dc, bytes) != TL_OK)
    return fail("launch", tl_context_message(ctx));
  for (int i = 0; i < N; i++)
    if (c[i] != (float)(3 * i + 1)) {
      fprintf(stderr, "consumer: C[%d] is %g, expected %d\n", i, c[i], 3 * i + 1);
      return 1;
    }
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  printf("consumer: tilec %s, vector_add N=%d on %s: OK\n", tilec_version(), N, dev.name);
  tl_module_unload(mod);
  tl_context_destroy(ctx);
  return 0;
}
