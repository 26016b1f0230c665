/* fake_cuda.c: a stand-in for libcuda.so.1, for the unit tests of the driver paths (contexts, JIT
 * loading with its device-binary cache, launches, generated AOT headers) on machines without a
 * GPU. fake_cuda.h says what it records and which environment variables shape it.
 *
 * "Device memory" is host memory (so copies work), "PTX compilation" finds the .entry functions and
 * the sizes of their parameters, a "device binary" is the PTX behind a tag naming the compute
 * capability it was made for, and a launch records its configuration and parameter bytes.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

typedef int CUresult;
enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  NO_DEVICE = 100,
  INVALID_IMAGE = 200,
  INVALID_CONTEXT = 201,
  NO_BINARY_FOR_GPU = 209,
  INVALID_PTX = 218,
  INVALID_HANDLE = 400,
  NOT_FOUND = 500,
};

#define EXPORT __attribute__((visibility("default")))
#define BINARY_TAG "FAKECUBIN cc="

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_cuda_state state;
static bool initialized;
static int device_cc = 90, driver_version = 13000;
static bool reject_ptx;
static int context_token; /* the primary context's handle is its address */
static __thread void *current;

EXPORT fake_cuda_state *fake_cuda_get_state(void) { return &state; }

static int env_int(const char *name, int fallback)
{
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* ------------------------------------------------------------------------------ init, devices */

EXPORT CUresult cuInit(unsigned flags)
{
  (void)flags;
  if (getenv("FAKE_CUDA_NO_DEVICE"))
    return NO_DEVICE;
  pthread_mutex_lock(&lock);
  device_cc = env_int("FAKE_CUDA_CC", 90);
  driver_version = env_int("FAKE_CUDA_DRIVER", 13000);
  reject_ptx = getenv("FAKE_CUDA_REJECT") != NULL;
  initialized = true;
  pthread_mutex_unlock(&lock);
  return OK;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
  *v = driver_version;
  return OK;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **name)
{
  switch (r) {
  case OK: *name = "CUDA_SUCCESS"; return OK;
  case INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
  case NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return OK;
  case INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; return OK;
  case NO_BINARY_FOR_GPU: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return OK;
  case INVALID_PTX: *name = "CUDA_ERROR_INVALID_PTX"; return OK;
  case NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return OK;
  }
  *name = NULL;
  return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **text)
{
  *text = r == OK ? "no error" : "fake driver error";
  return OK;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
  *n = initialized ? 1 : 0;
  return initialized ? OK : NOT_INITIALIZED;
}

EXPORT CUresult cuDeviceGet(int *device, int ordinal)
{
  if (ordinal != 0)
    return INVALID_VALUE;
  *device = 0;
  return OK;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, int device)
{
  (void)device;
  snprintf(name, (size_t)len, "Fake GPU sm_%d", device_cc);
  return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, int device)
{
  (void)device;
  switch (attribute) {
  case 1: *value = 1024; return OK;            /* max threads per block */
  case 16: *value = 132; return OK;            /* SMs */
  case 75: *value = device_cc / 10; return OK; /* cc major */
  case 76: *value = device_cc % 10; return OK; /* cc minor */
  case 97: *value = 232448; return OK;         /* opt-in shared memory per block */
  }
  *value = 0;
  return OK;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, int device)
{
  (void)device;
  *bytes = (size_t)141 << 30;
  return OK;
}

/* ----------------------------------------------------------------------------------- contexts */

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int device)
{
  (void)device;
  pthread_mutex_lock(&lock);
  state.contexts_live++;
  pthread_mutex_unlock(&lock);
  *ctx = &context_token;
  return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int device)
{
  (void)device;
  pthread_mutex_lock(&lock);
  state.contexts_live--;
  pthread_mutex_unlock(&lock);
  return OK;
}

EXPORT CUresult cuCtxSetCurrent(void *ctx)
{
  current = ctx;
  return OK;
}

EXPORT CUresult cuCtxGetCurrent(void **ctx)
{
  *ctx = current;
  return OK;
}

EXPORT CUresult cuCtxGetDevice(int *device)
{
  if (!current)
    return INVALID_CONTEXT;
  *device = 0;
  return OK;
}

EXPORT CUresult cuCtxSynchronize(void) { return current ? OK : INVALID_CONTEXT; }

/* ------------------------------------------------------------------------------------ modules */

typedef struct function {
  char name[128];
  int nparams;
  unsigned size[FAKE_CUDA_MAX_PARAMS];
  unsigned align[FAKE_CUDA_MAX_PARAMS];
  int dynamic_smem;
} function;

typedef struct module {
  int nfunctions;
  function *functions;
} module;

static unsigned param_size(const char *type)
{
  static const struct {
    const char *type;
    unsigned size;
  } sizes[] = {{".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}, {".u32", 4}, {".s32", 4},
               {".b32", 4}, {".f32", 4}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
               {".u8", 1},  {".s8", 1},  {".b8", 1},  {".pred", 1}};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (strncmp(type, sizes[i].type, strlen(sizes[i].type)) == 0 &&
        (type[strlen(sizes[i].type)] == ' ' || type[strlen(sizes[i].type)] == '\t'))
      return sizes[i].size;
  return 0;
}

/* Every ".entry NAME(" and its ".param .TYPE name" list, as the driver's PTX compiler would see. */
static CUresult parse_ptx(const char *ptx, module *m)
{
  m->nfunctions = 0;
  m->functions = NULL;
  for (const char *p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry ")) {
    p += strlen(".entry ");
    const char *open = strchr(p, '(');
    if (!open || (size_t)(open - p) >= sizeof m->functions->name)
      return INVALID_PTX;
    function *grown = realloc(m->functions, (size_t)(m->nfunctions + 1) * sizeof *grown);
    if (!grown)
      return OUT_OF_MEMORY;
    m->functions = grown;
    function *f = &m->functions[m->nfunctions++];
    memset(f, 0, sizeof *f);
    memcpy(f->name, p, (size_t)(open - p));
    const char *close = strchr(open, ')');
    if (!close)
      return INVALID_PTX;
    /* ".param .u32 k_param_4", or ".param .align 2 .b8 k_param_2[2]" (an f16 or bf16) */
    for (const char *q = strstr(open, ".param "); q && q < close; q = strstr(q + 1, ".param ")) {
      if (f->nparams == FAKE_CUDA_MAX_PARAMS)
        return INVALID_PTX;
      const char *type = q + strlen(".param ");
      unsigned align = 0;
      if (strncmp(type, ".align ", 7) == 0) {
        align = (unsigned)atoi(type + 7);
        type = strchr(type + 7, ' ');
        if (!type)
          return INVALID_PTX;
        type++;
      }
      unsigned size = param_size(type);
      const char *end = strpbrk(type, ",)\n");
      const char *bracket = strchr(type, '[');
      if (bracket && end && bracket < end)
        size *= (unsigned)atoi(bracket + 1);
      if (!size || size > FAKE_CUDA_MAX_PARAM_BYTES)
        return INVALID_PTX;
      f->align[f->nparams] = align ? align : size;
      f->size[f->nparams++] = size;
    }
  }
  return m->nfunctions ? OK : INVALID_PTX;
}

static void write_log(unsigned n, const int *options, void **values, const char *text)
{
  char *buffer = NULL;
  size_t size = 0;
  for (unsigned i = 0; i < n; i++) {
    if (options[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
      buffer = values[i];
    if (options[i] == 6) /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
      size = (size_t)(uintptr_t)values[i];
  }
  if (buffer && size)
    snprintf(buffer, size, "%s", text);
}

static CUresult load(void **out, const void *image, unsigned n, const int *options, void **values)
{
  if (!current)
    return INVALID_CONTEXT;
  const char *text = image;
  const bool binary = strncmp(text, BINARY_TAG, strlen(BINARY_TAG)) == 0;
  if (binary) {
    int cc = atoi(text + strlen(BINARY_TAG));
    if (cc != device_cc)
      return NO_BINARY_FOR_GPU;
    text = strchr(text, '\n');
    if (!text)
      return INVALID_IMAGE;
    text++;
  } else if (reject_ptx) {
    write_log(n, options, values, "ptxas fatal: the fake driver rejects this PTX");
    return INVALID_PTX;
  }
  module *m = calloc(1, sizeof *m);
  if (!m)
    return OUT_OF_MEMORY;
  CUresult r = parse_ptx(text, m);
  if (r != OK) {
    free(m->functions);
    free(m);
    return binary ? INVALID_IMAGE : r;
  }
  pthread_mutex_lock(&lock);
  if (binary)
    state.binary_loads++;
  else
    state.ptx_compiles++;
  state.modules_live++;
  pthread_mutex_unlock(&lock);
  *out = m;
  return OK;
}

EXPORT CUresult cuModuleLoadDataEx(void **out, const void *image, unsigned n, int *options, void **values)
{
  return load(out, image, n, options, values);
}

EXPORT CUresult cuModuleLoadData(void **out, const void *image) { return load(out, image, 0, NULL, NULL); }

EXPORT CUresult cuModuleUnload(void *p)
{
  module *m = p;
  if (!m)
    return INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  state.modules_live--;
  pthread_mutex_unlock(&lock);
  free(m->functions);
  free(m);
  return OK;
}

EXPORT CUresult cuModuleGetFunction(void **out, void *p, const char *name)
{
  module *m = p;
  for (int i = 0; i < m->nfunctions; i++)
    if (strcmp(m->functions[i].name, name) == 0) {
      *out = &m->functions[i];
      return OK;
    }
  return NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(unsigned long long *ptr, size_t *bytes, void *m, const char *n)
{
  (void)ptr, (void)bytes, (void)m, (void)n;
  return NOT_FOUND;
}

EXPORT CUresult cuFuncGetAttribute(int *value, int attribute, void *p)
{
  function *f = p;
  switch (attribute) {
  case 0: *value = 1024; return OK; /* max threads per block */
  case 1: *value = 0; return OK;    /* static shared memory */
  case 4: *value = 32; return OK;   /* registers */
  case 8: *value = f->dynamic_smem; return OK;
  }
  *value = 0;
  return OK;
}

EXPORT CUresult cuFuncSetAttribute(void *p, int attribute, int value)
{
  function *f = p;
  if (attribute == 8)
    f->dynamic_smem = value;
  return OK;
}

EXPORT CUresult cuLaunchKernel(void *p, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, void *stream, void **params, void **extra)
{
  function *f = p;
  if (!current)
    return INVALID_CONTEXT;
  if (!f || extra || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024 ||
      (smem > 48 * 1024 && (int)smem > f->dynamic_smem))
    return INVALID_VALUE;
  pthread_mutex_lock(&lock);
  fake_cuda_launch *l = &state.last;
  memset(l, 0, sizeof *l);
  snprintf(l->function, sizeof l->function, "%s", f->name);
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->smem = smem;
  l->stream = stream;
  l->nparams = f->nparams;
  for (int i = 0; i < f->nparams; i++) {
    l->param_size[i] = f->size[i];
    l->param_align[i] = f->align[i];
    memcpy(l->param[i], params[i], f->size[i]); /* exactly the bytes the kernel reads */
    state.misaligned_params += (uintptr_t)params[i] % f->align[i] != 0;
  }
  state.launches++;
  pthread_mutex_unlock(&lock);
  return OK;
}

/* ------------------------------------------------------------------------------- the linker */

typedef struct link_state {
  char *ptx;
  char *log;
  size_t log_size;
  char *image;
} link_state;

EXPORT CUresult cuLinkCreate_v2(unsigned n, int *options, void **values, void **out)
{
  link_state *l = calloc(1, sizeof *l);
  if (!l)
    return OUT_OF_MEMORY;
  for (unsigned i = 0; i < n; i++) {
    if (options[i] == 5)
      l->log = values[i];
    if (options[i] == 6)
      l->log_size = (size_t)(uintptr_t)values[i];
  }
  *out = l;
  return OK;
}

EXPORT CUresult cuLinkAddData_v2(void *p, int type, void *data, size_t size, const char *name, unsigned n,
                                 int *options, void **values)
{
  (void)name, (void)n, (void)options, (void)values;
  link_state *l = p;
  if (type != 1 || !size || ((const char *)data)[size - 1] != 0) /* PTX, NUL-terminated */
    return INVALID_VALUE;
  if (reject_ptx) {
    if (l->log && l->log_size)
      snprintf(l->log, l->log_size, "ptxas fatal: the fake driver rejects this PTX");
    return INVALID_PTX;
  }
  free(l->ptx);
  l->ptx = strdup(data);
  return l->ptx ? OK : OUT_OF_MEMORY;
}

EXPORT CUresult cuLinkComplete(void *p, void **image, size_t *size)
{
  link_state *l = p;
  if (!l->ptx)
    return INVALID_VALUE;
  module m;
  CUresult r = parse_ptx(l->ptx, &m);
  free(m.functions);
  if (r != OK)
    return r;
  size_t n = strlen(l->ptx) + 64;
  free(l->image);
  l->image = malloc(n);
  if (!l->image)
    return OUT_OF_MEMORY;
  int head = snprintf(l->image, n, BINARY_TAG "%d\n", device_cc);
  memcpy(l->image + head, l->ptx, strlen(l->ptx) + 1);
  *image = l->image;
  *size = (size_t)head + strlen(l->ptx) + 1;
  pthread_mutex_lock(&lock);
  state.links++;
  state.ptx_compiles++;
  pthread_mutex_unlock(&lock);
  return OK;
}

EXPORT CUresult cuLinkDestroy(void *p)
{
  link_state *l = p;
  if (l) {
    free(l->ptx);
    free(l->image);
    free(l);
  }
  return OK;
}

/* ------------------------------------------------------------------------------------- memory */

EXPORT CUresult cuMemAlloc_v2(unsigned long long *ptr, size_t bytes)
{
  void *p = calloc(1, bytes);
  if (!p)
    return OUT_OF_MEMORY;
  *ptr = (unsigned long long)(uintptr_t)p;
  return OK;
}

EXPORT CUresult cuMemFree_v2(unsigned long long ptr)
{
  free((void *)(uintptr_t)ptr);
  return OK;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
  *free_bytes = *total = (size_t)141 << 30;
  return OK;
}

EXPORT CUresult cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
  memcpy((void *)(uintptr_t)dst, src, n);
  return OK;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return OK;
}

EXPORT CUresult cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t n)
{
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return OK;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t n, void *stream)
{
  (void)stream;
  return cuMemcpyDtoD_v2(dst, src, n);
}

EXPORT CUresult cuMemsetD8_v2(unsigned long long dst, unsigned char v, size_t n)
{
  memset((void *)(uintptr_t)dst, v, n);
  return OK;
}

EXPORT CUresult cuMemsetD32_v2(unsigned long long dst, unsigned v, size_t n)
{
  uint32_t *p = (uint32_t *)(uintptr_t)dst;
  for (size_t i = 0; i < n; i++)
    p[i] = v;
  return OK;
}

EXPORT CUresult cuMemsetD8Async(unsigned long long dst, unsigned char v, size_t n, void *stream)
{
  (void)stream;
  return cuMemsetD8_v2(dst, v, n);
}

/* ------------------------------------------------------------------------ streams and events */

static int stream_token, event_token;

EXPORT CUresult cuStreamCreate(void **stream, unsigned flags)
{
  (void)flags;
  *stream = &stream_token;
  return OK;
}

EXPORT CUresult cuStreamDestroy_v2(void *stream)
{
  (void)stream;
  return OK;
}

EXPORT CUresult cuStreamSynchronize(void *stream)
{
  (void)stream;
  return OK;
}

EXPORT CUresult cuEventCreate(void **event, unsigned flags)
{
  (void)flags;
  *event = &event_token;
  return OK;
}

EXPORT CUresult cuEventDestroy_v2(void *event)
{
  (void)event;
  return OK;
}

EXPORT CUresult cuEventRecord(void *event, void *stream)
{
  (void)event, (void)stream;
  return OK;
}

EXPORT CUresult cuEventSynchronize(void *event)
{
  (void)event;
  return OK;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *start, void *end)
{
  (void)start, (void)end;
  *ms = 0.0f;
  return OK;
}

/* -------------------------------------------------------------------------------- tensor maps */

#ifndef FAKE_CUDA_NO_TMAP
/* The driver's documented rules for a tiled map with interleave NONE. */
static bool tmap_arguments_valid(const void *map, int data_type, unsigned rank, const void *address,
                                 const uint64_t *dim, const uint64_t *strides, const uint32_t *box,
                                 const uint32_t *element_strides, int interleave, int swizzle, int l2,
                                 int oob)
{
  static const unsigned elem_bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2};
  if (!map || (uintptr_t)map % 64 || data_type < 0 || data_type > 9 || rank < 1 || rank > 5 || !address ||
      (uintptr_t)address % 16 || interleave != 0 || swizzle < 0 || swizzle > 3 || l2 < 0 || l2 > 3 ||
      oob < 0 || oob > 1)
    return false;
  for (unsigned i = 0; i < rank; i++)
    if (dim[i] < 1 || dim[i] > (UINT64_C(1) << 32) || box[i] < 1 || box[i] > 256 || element_strides[i] < 1 ||
        element_strides[i] > 8)
      return false;
  for (unsigned i = 0; i + 1 < rank; i++)
    if (strides[i] % 16 || strides[i] >= (UINT64_C(1) << 40))
      return false;
  const unsigned inner = box[0] * elem_bytes[data_type];
  static const unsigned span[] = {0, 32, 64, 128};
  return swizzle == 0 || inner <= span[swizzle];
}

EXPORT CUresult cuTensorMapEncodeTiled(void *map, int data_type, unsigned rank, void *address,
                                       const uint64_t *dim, const uint64_t *strides, const uint32_t *box,
                                       const uint32_t *element_strides, int interleave, int swizzle, int l2,
                                       int oob)
{
  pthread_mutex_lock(&lock);
  CUresult r = state.tmap_fail ? INVALID_VALUE : OK;
  if (!tmap_arguments_valid(map, data_type, rank, address, dim, strides, box, element_strides, interleave,
                            swizzle, l2, oob))
    r = INVALID_VALUE;
  if (state.tmap_encodes < FAKE_CUDA_MAX_TMAP_CALLS) {
    fake_cuda_tmap_call *c = &state.tmap_calls[state.tmap_encodes];
    memset(c, 0, sizeof *c);
    c->data_type = data_type;
    c->rank = rank;
    c->address = (uint64_t)(uintptr_t)address;
    for (unsigned i = 0; i < rank && i < 5; i++) {
      c->global_dim[i] = dim[i];
      c->box_dim[i] = box[i];
      c->element_strides[i] = element_strides[i];
      if (i + 1 < rank)
        c->global_strides[i] = strides[i];
    }
    c->interleave = interleave, c->swizzle = swizzle, c->l2_promotion = l2, c->oob_fill = oob;
    c->result = r;
  }
  state.tmap_encodes++;
  pthread_mutex_unlock(&lock);
  if (r == OK && map) {
    memset(map, 0, 128);
    const uint64_t a = (uint64_t)(uintptr_t)address;
    memcpy(map, &a, sizeof a);
    memcpy((char *)map + 8, "TMAP", 4);
  }
  return r;
}
#endif
