#!/usr/bin/env bash
# cli.sh EXAMPLES_DIR: the command line's options and their errors.
set -u
ex=$1
: "${TILEC:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { if "$@" >"$tmp/o" 2>"$tmp/e"; then echo "ok   $*"; else echo "FAIL (status $?) $*"; cat "$tmp/e"; fail=1; fi; }
# Every pattern is an exact substring (grep -F). A failing command writes nothing to stdout.
bad() { # expected status, text on stderr, command...
  local want=$1 pat=$2; shift 2
  "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  if [ $rc -eq "$want" ] && grep -qF -- "$pat" "$tmp/e" && { [ "$want" -eq 0 ] || [ ! -s "$tmp/o" ]; }; then
    echo "ok   (status $rc) $*"
  else echo "FAIL $* -> status $rc, want $want and '$pat'; stderr:"; cat "$tmp/e"; fail=1; fi
}
# has TEXT [FILE]: FILE (default: the last command's stdout) contains TEXT; lacks: does not.
has() { grep -qF -- "$1" "${2:-$tmp/o}" || { echo "FAIL: ${2:-output} lacks '$1'"; fail=1; }; }
lacks() { ! grep -qF -- "$1" "${2:-$tmp/o}" || { echo "FAIL: ${2:-output} has '$1'"; fail=1; }; }
quiet() { [ ! -s "$tmp/o" ] || { echo "FAIL: stdout not empty with -o FILE"; fail=1; }; }

ok "$TILEC" --help; has 'usage: tilec [options] FILE.tl'; has '--dump-after=PASS'
ok "$TILEC" --version; has 'tilec 0'
ok "$TILEC" "$ex/vector_add.tl" -o "$tmp/va.ptx"; quiet
has '.target sm_90a' "$tmp/va.ptx"          # the default arch
has '.visible .entry vector_add(' "$tmp/va.ptx"
ok "$TILEC" --arch=sm_80 "$ex/vector_add.tl" -o -; has '.target sm_80'
ok "$TILEC" --arch sm_86 "$ex/vector_add.tl" -o -; has '.target sm_86'
ok "$TILEC" -D BLOCK=1024 "$ex/vector_add.tl" -o -; has 'tilec-meta grid 0 N 1024 ceildiv'
ok "$TILEC" -DBLOCK=2048 "$ex/vector_add.tl" -o -; has 'tilec-meta grid 0 N 2048 ceildiv'
ok "$TILEC" --kernel gelu_bf16 "$ex/gelu.tl" -o -; has '.entry gelu_bf16'
lacks 'gelu_f16'                            # --kernel keeps no other kernel
emit() { ok "$TILEC" --emit="$1" "$ex/saxpy.tl" -o -; has "$2"; }
emit tokens "2:1 keyword 'kernel'"
emit ast 'Kernel saxpy @2:8'
emit tir '// ---- after plan-shared'
emit llvm 'define ptx_kernel void @saxpy(ptr %X, ptr %Y, ptr %Z, float %a, i32 %N)'
emit ptx '.visible .entry saxpy('
emit header 'CUresult saxpy_launch(CUstream stream, float *X, float *Y, float *Z, float a, int32_t N);'
ok "$TILEC" --emit=llvm "$ex/saxpy.tl"; has 'define ptx_kernel void @saxpy('   # stdout by default
ok "$TILEC" -O0 "$ex/saxpy.tl" -o "$tmp/o0.ptx"; quiet; has '.visible .entry saxpy(' "$tmp/o0.ptx"
ok "$TILEC" "$ex/saxpy.tl" -o "$tmp/o3.ptx"
cmp -s "$tmp/o0.ptx" "$tmp/o3.ptx" && { echo "FAIL: -O0 gives the PTX of -O3"; fail=1; }
ok "$TILEC" --dump-after=layout "$ex/saxpy.tl" -o "$tmp/s.ptx"; quiet
has '// ---- after layout' "$tmp/e"; lacks 'after lower-tiles' "$tmp/e"; has '.visible .entry saxpy(' "$tmp/s.ptx"
cp "$ex/saxpy.tl" "$tmp/copy.tl"; ok "$TILEC" "$tmp/copy.tl"; quiet
has '.visible .entry saxpy(' "$tmp/copy.ptx"  # the default output name: FILE.ptx beside the input
ok sh -c "cat '$ex/saxpy.tl' | '$TILEC' - -o -"; has '.visible .entry saxpy('

usage="(run 'tilec --help' for usage)"
bad 1 "tilec: error: unknown target 'sm_75'; expected sm_80, sm_86, sm_89, sm_90 or sm_90a" "$TILEC" --arch=sm_75 "$ex/saxpy.tl"
has "$usage" "$tmp/e"
bad 1 "tilec: error: unknown option '--frobnicate'" "$TILEC" --frobnicate "$ex/saxpy.tl"; has "$usage" "$tmp/e"
bad 1 "tilec: error: no input file" "$TILEC"; has "$usage" "$tmp/e"
bad 1 "tilec: error: more than one input file ('b.tl')" "$TILEC" a.tl b.tl; has "$usage" "$tmp/e"
bad 1 "tilec: error: cannot read '$tmp/none.tl': No such file or directory" "$TILEC" "$tmp/none.tl"
bad 1 "tilec: error: -D needs NAME=VALUE, got 'BLOCK'" "$TILEC" -D BLOCK "$ex/saxpy.tl"; has "$usage" "$tmp/e"
bad 1 "tilec: error: -o needs a file name" "$TILEC" "$ex/saxpy.tl" -o; has "$usage" "$tmp/e"
bad 1 "tilec: error: unknown --emit kind 'sass'; expected tokens, ast, tir, llvm, ptx or header" \
  "$TILEC" --emit=sass "$ex/saxpy.tl"
bad 1 "$ex/saxpy.tl: error: unknown pass 'nope' for dump-after" "$TILEC" --dump-after=nope "$ex/saxpy.tl" -o -
bad 1 "$ex/saxpy.tl: error: no kernel named 'nope'" "$TILEC" --kernel nope "$ex/saxpy.tl" -o -
bad 1 "tilec: error: cannot write '$tmp/no/such/dir/x.ptx': No such file or directory" \
  "$TILEC" "$ex/saxpy.tl" -o "$tmp/no/such/dir/x.ptx"
bad 0 "$ex/saxpy.tl: warning: -D NOPE: no kernel has a constant of that name" "$TILEC" -D NOPE=1 "$ex/saxpy.tl" -o -
has '.visible .entry saxpy('                # a warning, and the PTX still comes
exit $fail
