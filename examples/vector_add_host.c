/* vector_add_host: runs examples/vector_add.tl's kernel once and checks every element.
 *
 *   tilec examples/vector_add.tl -o vector_add.ptx
 *   vector_add_host vector_add.ptx [N]
 *
 * Exit status: 0 correct, 1 wrong or an error, 2 no GPU here ("no GPU: skipped": the PTX was read
 * and its metadata checked, nothing was run), so a script can tell "compiled, not run" from failure.
 *
 * The kernel is vector_add(A: f32[N], B: f32[N], C: f32[N]) with C = A + B, so the expected result is
 * the float sum, bit for bit.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilec_runtime.h"

enum { EXIT_NO_GPU = 2 };

static char *read_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "vector_add_host: cannot open %s: %s\n", path, strerror(errno));
    return NULL;
  }
  size_t len = 0, cap = 1 << 16;
  char *text = malloc(cap);
  size_t n;
  while (text && (n = fread(text + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (len + 1 == cap) {
      char *grown = realloc(text, cap *= 2);
      if (!grown)
        free(text);
      text = grown;
    }
  }
  fclose(f);
  if (!text) {
    fprintf(stderr, "vector_add_host: out of memory reading %s\n", path);
    return NULL;
  }
  text[len] = 0;
  return text;
}

/* xorshift64*: fast, and reproducible from the printed seed. */
static uint64_t next_random(uint64_t *state)
{
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [-1, 1), 24 random bits. */
static float random_float(uint64_t *state)
{
  return (float)((int64_t)(next_random(state) >> 40) - (1 << 23)) / (float)(1 << 23);
}

int main(int argc, char **argv)
{
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: vector_add_host PTXFILE [N]\n"
                    "  PTXFILE: output of 'tilec examples/vector_add.tl -o vector_add.ptx'\n"
                    "  N: number of elements (default 1048576)\n");
    return 1;
  }
  long long n = 1 << 20;
  if (argc == 3) {
    char *end;
    errno = 0;
    n = strtoll(argv[2], &end, 10);
    if (errno || *end || n < 0 || n > INT32_MAX) {
      fprintf(stderr, "vector_add_host: N must be a whole number in 0..%d, not '%s'\n", INT32_MAX, argv[2]);
      return 1;
    }
  }

  /* Check the metadata first: that needs no GPU, so a machine without one still verifies that
   * tilec produced a launchable vector_add. */
  char *ptx = read_file(argv[1]);
  if (!ptx)
    return 1;
  char err[1024];
  tl_meta *meta = NULL;
  tl_status st = tl_meta_parse(ptx, strlen(ptx), &meta, err, sizeof err);
  if (st != TL_OK) {
    fprintf(stderr, "vector_add_host: %s: %s: %s\n", argv[1], tl_status_name(st), err);
    free(ptx);
    return 1;
  }
  const tl_kernel_info *info = tl_meta_find_kernel(meta, "vector_add");
  if (!info || info->nargs != 3) {
    fprintf(stderr, "vector_add_host: %s has no kernel vector_add(A, B, C)\n", argv[1]);
    tl_meta_free(meta);
    free(ptx);
    return 1;
  }
  tl_meta_free(meta);

  tl_context *ctx = NULL;
  st = tl_context_create(0, &ctx, err, sizeof err);
  if (st == TL_ERR_NO_DRIVER || st == TL_ERR_NO_DEVICE) {
    printf("vector_add: no GPU: skipped (%s)\n", err);
    free(ptx);
    return EXIT_NO_GPU;
  }
  if (st != TL_OK) {
    fprintf(stderr, "vector_add_host: %s: %s\n", tl_status_name(st), err);
    free(ptx);
    return 1;
  }

  int status = 1;
  tl_module *module = NULL;
  tl_kernel *kernel = NULL;
  tl_devptr a = 0, b = 0, c = 0;
  const size_t count = (size_t)n, bytes = count * sizeof(float);
  float *host_a = malloc(bytes + 1), *host_b = malloc(bytes + 1), *host_c = malloc(bytes + 1);
  if (!host_a || !host_b || !host_c) {
    fprintf(stderr, "vector_add_host: out of host memory for N=%lld\n", n);
    goto done;
  }
  const uint64_t seed = (uint64_t)time(NULL) * 2654435761u | 1;
  uint64_t rng = seed;
  for (size_t i = 0; i < count; i++) {
    host_a[i] = random_float(&rng);
    host_b[i] = random_float(&rng);
  }

#define CHECK(call)                                                                              \
  do {                                                                                           \
    if ((st = (call)) != TL_OK) {                                                                \
      fprintf(stderr, "vector_add_host: %s: %s\n", tl_status_name(st), tl_context_message(ctx)); \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

  CHECK(tl_module_load_ptx(ctx, ptx, &module));
  CHECK(tl_module_get_kernel(module, "vector_add", &kernel));
  CHECK(tl_malloc(ctx, bytes, &a));
  CHECK(tl_malloc(ctx, bytes, &b));
  CHECK(tl_malloc(ctx, bytes, &c));
  CHECK(tl_memcpy_htod(ctx, a, host_a, bytes));
  CHECK(tl_memcpy_htod(ctx, b, host_b, bytes));
  /* 0xFF bytes are a NaN in every float format: an element the kernel never writes cannot pass. */
  CHECK(tl_memset_d8(ctx, c, 0xFF, bytes));

  const int64_t shape[1] = {n};
  const tl_arg args[3] = {tl_arg_tensor(a, TL_F32, 1, shape), tl_arg_tensor(b, TL_F32, 1, shape),
                          tl_arg_tensor(c, TL_F32, 1, shape)};
  CHECK(tl_launch(kernel, args, 3, NULL));
  CHECK(tl_synchronize(ctx));
  CHECK(tl_memcpy_dtoh(ctx, host_c, c, bytes));

  size_t wrong = 0, first_wrong = 0;
  for (size_t i = 0; i < count; i++) {
    const float expected = host_a[i] + host_b[i];
    if (!(host_c[i] == expected) && wrong++ == 0)
      first_wrong = i;
  }
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  if (wrong) {
    printf("vector_add: N=%lld FAILED on %s: %zu wrong elements, first C[%zu] = %.9g, expected %.9g "
           "(seed %llu)\n",
           n, dev.name, wrong, first_wrong, host_c[first_wrong], host_a[first_wrong] + host_b[first_wrong],
           (unsigned long long)seed);
  } else {
    printf("vector_add: N=%lld OK on %s (all elements exact)\n", n, dev.name);
    status = 0;
  }

done:
  tl_free(ctx, a);
  tl_free(ctx, b);
  tl_free(ctx, c);
  tl_module_unload(module);
  tl_context_destroy(ctx);
  free(host_a);
  free(host_b);
  free(host_c);
  free(ptx);
  return status;
}
