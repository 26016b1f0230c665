/* gpu_common.c: see gpu_common.h. */
#define _POSIX_C_SOURCE 200809L

#include "gpu_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../support/timing.h"

tl_context *gpu_open(const char *program, bool *no_gpu)
{
  char err[1024];
  tl_context *ctx = NULL;
  tl_status st = tl_context_create(0, &ctx, err, sizeof err);
  *no_gpu = st == TL_ERR_NO_DRIVER || st == TL_ERR_NO_DEVICE;
  if (st != TL_OK) {
    printf("%s: %s: %s\n", program, *no_gpu ? "no GPU: skipped" : tl_status_name(st), err);
    return NULL;
  }
  tl_device_info dev;
  tl_context_device(ctx, &dev);
  printf("%s: device 0: %s, sm_%d%d, %d SMs, %.1f GiB, driver %d.%d\n", program, dev.name, dev.cc_major,
         dev.cc_minor, dev.sm_count, (double)dev.total_memory / (1 << 30), dev.driver_version / 1000,
         dev.driver_version % 1000 / 10);
  return ctx;
}

tl_status gpu_load(tl_context *ctx, const char *dir, const char *file, tl_module **out, bool *missing)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  struct stat sb;
  *missing = stat(path, &sb) != 0 && errno == ENOENT;
  *out = NULL;
  if (*missing)
    return TL_ERR_IO;
  return tl_module_load_file(ctx, path, out);
}

uint64_t gpu_seed_from_args(int argc, char **argv, int *argi)
{
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--seed") == 0) {
      if (argi)
        *argi = i;
      return strtoull(argv[i + 1], NULL, 0);
    }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t s = (uint64_t)ts.tv_sec * 1000000007ull + (uint64_t)ts.tv_nsec;
  return gpu_next_random(&s) % 1000000000ull; /* short enough to type back in */
}

/* ------------------------------------------------------------------------------ parallel for */

enum { CHUNK = GPU_CHUNK };

typedef struct pfor {
  size_t n, next_chunk, total;
  uint64_t seed;
  gpu_chunk_fn body;
  void *arg;
  pthread_mutex_t lock;
} pfor;

static void *pfor_worker(void *p_)
{
  pfor *p = p_;
  size_t mine = 0;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    size_t chunk = p->next_chunk++;
    pthread_mutex_unlock(&p->lock);
    size_t begin = chunk * CHUNK;
    if (begin >= p->n)
      break;
    size_t end = begin + CHUNK < p->n ? begin + CHUNK : p->n;
    uint64_t s = p->seed ^ (chunk * 0xD1B54A32D192ED03ull);
    mine += p->body(p->arg, begin, end, gpu_next_random(&s));
  }
  pthread_mutex_lock(&p->lock);
  p->total += mine;
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

size_t gpu_parallel_for(size_t n, uint64_t seed, gpu_chunk_fn body, void *arg)
{
  pfor p = {.n = n, .seed = seed, .body = body, .arg = arg};
  pthread_mutex_init(&p.lock, NULL);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = cores < 1 ? 1 : cores > 64 ? 64 : (int)cores;
  size_t chunks = (n + CHUNK - 1) / CHUNK;
  if ((size_t)nthreads > chunks)
    nthreads = chunks ? (int)chunks : 1;
  pthread_t threads[64];
  int started = 0;
  for (int i = 1; i < nthreads; i++)
    if (pthread_create(&threads[started], NULL, pfor_worker, &p) == 0)
      started++;
  pfor_worker(&p); /* this thread works too, so a failed pthread_create only slows things down */
  for (int i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  pthread_mutex_destroy(&p.lock);
  return p.total;
}

/* ----------------------------------------------------------------------------------- timing */

void gpu_report_cuda(tl_context *ctx, const char *what, CUresult r)
{
  char text[256];
  printf("%s: %s\n", what, tl_cuda_error_text(tl_context_driver(ctx), r, text, sizeof text));
}

bool gpu_time_median_ms(tl_context *ctx, gpu_timed_fn fn, void *arg, int warmup, int reps, double *median_ms)
{
  const tl_cuda_driver *d = tl_context_driver(ctx);
  if (tl_context_make_current(ctx) != TL_OK || reps < 1)
    return false;
  CUevent *events = calloc(2 * (size_t)reps, sizeof *events);
  double *ms = calloc((size_t)reps, sizeof *ms);
  bool ok = events && ms;
  int created = 0;
  CUresult r = CUDA_SUCCESS;
  while (ok && created < 2 * reps) {
    if ((r = d->cuEventCreate(&events[created], CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
      gpu_report_cuda(ctx, "cuEventCreate", r);
      ok = false;
    } else {
      created++;
    }
  }
  for (int i = 0; ok && i < warmup; i++)
    ok = fn(arg);
  /* One event pair per run, recorded back to back with no host synchronisation in between, so the
   * GPU never idles waiting for the host and each run's time is its own. */
  for (int i = 0; ok && i < reps; i++) {
    if ((r = d->cuEventRecord(events[2 * i], NULL)) != CUDA_SUCCESS) {
      gpu_report_cuda(ctx, "cuEventRecord", r);
      ok = false;
      break;
    }
    ok = fn(arg);
    if (ok && (r = d->cuEventRecord(events[2 * i + 1], NULL)) != CUDA_SUCCESS) {
      gpu_report_cuda(ctx, "cuEventRecord", r);
      ok = false;
    }
  }
  if (ok && (r = d->cuEventSynchronize(events[2 * reps - 1])) != CUDA_SUCCESS) {
    gpu_report_cuda(ctx, "cuEventSynchronize (a timed run failed)", r);
    ok = false;
  }
  for (int i = 0; ok && i < reps; i++) {
    float t = 0;
    if ((r = d->cuEventElapsedTime(&t, events[2 * i], events[2 * i + 1])) != CUDA_SUCCESS) {
      gpu_report_cuda(ctx, "cuEventElapsedTime", r);
      ok = false;
    }
    ms[i] = t;
  }
  if (ok) {
    *median_ms = test_median(ms, reps);
  }
  for (int i = 0; i < created; i++)
    d->cuEventDestroy(events[i]);
  free(events);
  free(ms);
  return ok;
}

bool gpu_timed_launch(void *p)
{
  gpu_launch_arg *a = p;
  tl_status st = tl_launch(a->kernel, a->args, a->nargs, NULL);
  if (st != TL_OK)
    printf("launch failed: %s: %s\n", tl_status_name(st), tl_context_message(a->ctx));
  return st == TL_OK;
}

bool gpu_timed_copy(void *p)
{
  gpu_copy_arg *a = p;
  CUresult r = tl_context_driver(a->ctx)->cuMemcpyDtoDAsync(a->dst, a->src, a->bytes, NULL);
  if (r != CUDA_SUCCESS)
    gpu_report_cuda(a->ctx, "cuMemcpyDtoDAsync", r);
  return r == CUDA_SUCCESS;
}

int gpu_passed, gpu_failed, gpu_skipped;

void gpu_report(bool ok, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  printf("%s ", ok ? "PASS" : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (ok)
    gpu_passed++;
  else
    gpu_failed++;
}
