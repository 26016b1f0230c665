/* tune.h: `tilec tune FILE.tl [options]` (tune.c): candidate values of constants compiled in
 * parallel and timed on the device at given sizes (docs/cli.md, "tilec tune").
 */
#ifndef TILEC_TUNE_H
#define TILEC_TUNE_H

/* argv[0] is "tune"; the exit status: 0 when some candidate ran, 1 otherwise (or on an error,
 * reported on standard error). */
int tune_command(int argc, char **argv);

#endif
