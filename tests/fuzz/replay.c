/* replay.c: a main() for the fuzz targets without libFuzzer, so that any compiler (the release and
 * ASan builds of tests/CMakeLists.txt) replays tests/fuzz/regressions: each argument is an input
 * file or a folder of them, run once through LLVMFuzzerTestOneInput.  A finding aborts (the
 * targets' own checks, or the sanitizers in a sanitized build), as under libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* The token mutator calls it; nothing mutates here. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size)
{
  (void)data, (void)max_size;
  return size;
}

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap)
      buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  /* Exactly n bytes, as libFuzzer passes them: reading past the end is an ASan report. */
  uint8_t *data = malloc(n ? n : 1);
  memcpy(data, buf, n);
  free(buf);
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(data, n);
  free(data);
  return 0;
}

static int skip(const char *name) { return name[0] == '.' || strstr(name, ".md") || strstr(name, ".txt"); }

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  int bad = 0, runs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      bad = 1;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad |= run_file(argv[i]);
      runs++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
      if (!skip(e->d_name)) {
        names = realloc(names, (n + 1) * sizeof *names);
        names[n] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2);
        sprintf(names[n++], "%s/%s", argv[i], e->d_name);
      }
    if (d)
      closedir(d);
    qsort(names, n, sizeof *names, cmp);
    for (size_t j = 0; j < n; j++) {
      bad |= run_file(names[j]);
      runs++;
      free(names[j]);
    }
    free(names);
  }
  fprintf(stderr, "replay: %d input%s\n", runs, runs == 1 ? "" : "s");
  return bad;
}
