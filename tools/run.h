/* run.h: `tilec run FILE.tl [options]` (run.c): a kernel run on the CPU by the interpreter, its
 * tensors from .npy files or generated, its results written as .npy files or printed
 * (docs/cli.md, "tilec run").
 */
#ifndef TILEC_RUN_H
#define TILEC_RUN_H

/* argv[0] is "run", the options and the file follow; standard output is flushed before the
 * return.  The exit status: 0, or 1 after an error (reported on standard error). */
int run_command(int argc, char **argv);

#endif
