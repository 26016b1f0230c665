/* main.c: the tilec command line, with clang's and nvcc's conventions. */
#include "tilec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
	"usage: tilec [options] FILE.tl\n"
	"\n"
	"Compiles a .tl tile program to PTX.\n"
	"\n"
	"options:\n"
	"  -o FILE             write the output to FILE ('-' for stdout; default: FILE.ptx beside the input)\n"
	"  --arch=ARCH         target: sm_80, sm_86, sm_89, sm_90, sm_90a (default sm_90a)\n"
	"  -D NAME=VALUE       override the kernel constant NAME (also -DNAME=VALUE)\n"
	"  --kernel NAME       compile only the kernel NAME\n"
	"  --emit=KIND         tokens, ast, tir, llvm, ptx (default) or header (C launchers\n"
	"                      with the PTX embedded; see docs/cli.md)\n"
	"  --dump-after=PASS   print the tile IR after PASS (specialize, layout, lower-tiles,\n"
	"                      plan-shared, or all) to stderr\n"
	"  -O0 -O1 -O2 -O3     LLVM optimization level (default -O3)\n"
	"  --help              show this help\n"
	"  --version           show the version\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "tilec: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(run 'tilec --help' for usage)\n");
	return 1;
}

/* Reads a whole file; NULL with errno set on failure. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (n < cap)
			break;
		char *nb = cap > ((size_t)1 << 30) ? NULL : realloc(buf, cap *= 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			errno = EFBIG;
		}
		buf = nb;
	}
	int err = ferror(f);
	if (f != stdin)
		fclose(f);
	if (err) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	*len = n;
	return buf;
}

/* Writes atomically enough for a CLI: to a temporary beside the target, then rename. */
static int write_output(const char *path, const char *text)
{
	if (!strcmp(path, "-")) {
		fputs(text, stdout);
		return fflush(stdout) == 0 ? 0 : -1;
	}
	size_t n = strlen(path) + 16;
	char *tmp = malloc(n);
	if (!tmp)
		return -1;
	snprintf(tmp, n, "%s.tmp~", path);
	FILE *f = fopen(tmp, "wb");
	if (!f) {
		free(tmp);
		return -1;
	}
	size_t len = strlen(text);
	int ok = fwrite(text, 1, len, f) == len;
	ok &= fclose(f) == 0;
	if (ok)
		ok = rename(tmp, path) == 0;
	if (!ok)
		remove(tmp);
	free(tmp);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	tilec_options opt = {0};
	opt.opt_level = 3;
	opt.arch = "sm_90a";
	const char *input = NULL, *output = NULL;
	tilec_define *defs = calloc((size_t)argc + 1, sizeof *defs);
	char **owned = calloc((size_t)argc + 1, sizeof *owned);
	int ndefs = 0, nowned = 0, rc = 1;
	if (!defs || !owned)
		return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(USAGE, stdout);
			rc = 0;
			goto out;
		} else if (!strcmp(a, "--version")) {
			printf("tilec %s\n", tilec_version());
			rc = 0;
			goto out;
		} else if (!strcmp(a, "-o")) {
			if (++i == argc) {
				rc = usage_error("%s needs a file name", a);
				goto out;
			}
			output = argv[i];
		} else if (!strncmp(a, "-o", 2)) {
			output = a + 2;
		} else if (!strncmp(a, "--arch=", 7) || !strcmp(a, "--arch") || !strncmp(a, "-arch=", 6)) {
			const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : (++i < argc ? argv[i] : NULL);
			if (!v || !tilec_arch_supported(v)) {
				rc = usage_error("unknown target '%s'; expected sm_80, sm_86, sm_89, sm_90 or sm_90a", v ? v : "");
				goto out;
			}
			opt.arch = v;
		} else if (!strncmp(a, "-D", 2)) {
			const char *d = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
			const char *eq = d ? strchr(d, '=') : NULL;
			if (!d || !eq || eq == d || !eq[1]) {
				rc = usage_error("-D needs NAME=VALUE, got '%s'", d ? d : "");
				goto out;
			}
			char *name = strndup(d, (size_t)(eq - d));
			if (!name)
				goto out;
			owned[nowned++] = name;
			defs[ndefs++] = (tilec_define){name, eq + 1};
		} else if (!strcmp(a, "--kernel") || !strncmp(a, "--kernel=", 9)) {
			const char *v = a[8] == '=' ? a + 9 : (++i < argc ? argv[i] : NULL);
			if (!v || !*v) {
				rc = usage_error("%s needs a kernel name", "--kernel");
				goto out;
			}
			opt.kernel = v;
		} else if (!strncmp(a, "--emit=", 7)) {
			/* in tilec_emit's order */
			static const char *kinds[] = {"ptx", "llvm", "tir", "ast", "tokens", "header"};
			int k = -1;
			for (int j = 0; j < (int)(sizeof kinds / sizeof *kinds); j++)
				if (!strcmp(a + 7, kinds[j]))
					k = j;
			if (k < 0) {
				rc = usage_error("unknown --emit kind '%s'; expected tokens, ast, tir, llvm, ptx or header",
						 a + 7);
				goto out;
			}
			opt.emit = (tilec_emit)k;
		} else if (!strncmp(a, "--dump-after=", 13)) {
			opt.dump_after = a + 13;
		} else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
			opt.opt_level = a[2] - '0';
		} else if (a[0] == '-' && a[1]) {
			rc = usage_error("unknown option '%s'", a);
			goto out;
		} else if (input) {
			rc = usage_error("more than one input file ('%s')", a);
			goto out;
		} else
			input = a;
	}
	if (!input) {
		rc = usage_error("%s", "no input file");
		goto out;
	}
	size_t len = 0;
	char *src = read_file(input, &len);
	if (!src) {
		fprintf(stderr, "tilec: error: cannot read '%s': %s\n", input, strerror(errno));
		goto out;
	}
	opt.filename = strcmp(input, "-") ? input : "<stdin>";
	opt.defines = defs;
	opt.ndefines = ndefs;
	tilec_result *r = NULL;
	tilec_status st = tilec_compile(src, len, &opt, &r);
	fputs(tilec_result_diagnostics_text(r), stderr);
	if (opt.dump_after)
		fputs(tilec_result_dump(r), stderr);
	if (st == TILEC_OK) {
		char *deflt = NULL;
		if (!output) {
			if (opt.emit != TILEC_EMIT_PTX)
				output = "-";
			else {
				size_t n = strlen(input);
				deflt = malloc(n + 5);
				if (deflt) {
					memcpy(deflt, input, n + 1);
					char *dot = strrchr(deflt, '.');
					char *slash = strrchr(deflt, '/');
					if (dot && (!slash || dot > slash) && !strcmp(dot, ".tl"))
						*dot = 0;
					strcat(deflt, ".ptx");
				}
				output = deflt ? deflt : "-";
			}
		}
		if (write_output(output, tilec_result_output(r)) != 0)
			fprintf(stderr, "tilec: error: cannot write '%s': %s\n", output, strerror(errno));
		else
			rc = 0;
		free(deflt);
	}
	tilec_result_free(r);
	free(src);
out:
	for (int i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	free(defs);
	return rc;
}
