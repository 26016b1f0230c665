#!/usr/bin/env bash
# cli.sh EXAMPLES_DIR: the command line's options and their errors.
set -u
ex=$1
: "${TILEC:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { if "$@" >"$tmp/o" 2>"$tmp/e"; then echo "ok   $*"; else echo "FAIL (status $?) $*"; cat "$tmp/e"; fail=1; fi; }
bad() { # expected status, pattern on stderr, command...
  local want=$1 pat=$2; shift 2
  "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  if [ $rc -eq "$want" ] && grep -q -- "$pat" "$tmp/e"; then echo "ok   (status $rc) $*"
  else echo "FAIL $* -> status $rc, stderr:"; cat "$tmp/e"; fail=1; fi
}
has() { grep -q -- "$1" "$tmp/o" || { echo "FAIL: output lacks '$1'"; fail=1; }; }

ok "$TILEC" --help; has 'usage: tilec'
ok "$TILEC" --version; has 'tilec 0'
ok "$TILEC" "$ex/vector_add.tl" -o "$tmp/va.ptx"
grep -q '^\.target sm_90a' "$tmp/va.ptx" || { echo "FAIL: default arch is not sm_90a"; fail=1; }
ok "$TILEC" --arch=sm_80 "$ex/vector_add.tl" -o -; has '.target sm_80'
ok "$TILEC" --arch sm_86 "$ex/vector_add.tl" -o -; has '.target sm_86'
ok "$TILEC" -D BLOCK=1024 "$ex/vector_add.tl" -o -; has 'tilec-meta grid 0 N 1024 ceildiv'
ok "$TILEC" -DBLOCK=2048 "$ex/vector_add.tl" -o -; has 'tilec-meta grid 0 N 2048 ceildiv'
ok "$TILEC" --kernel gelu_bf16 "$ex/gelu.tl" -o -; has '.entry gelu_bf16'
grep -q 'gelu_f16' "$tmp/o" && { echo "FAIL: --kernel kept another kernel"; fail=1; }
for e in tokens ast tir llvm ptx; do ok "$TILEC" --emit=$e "$ex/saxpy.tl" -o -; done
ok "$TILEC" --emit=llvm "$ex/saxpy.tl"; has 'define'
ok "$TILEC" -O0 "$ex/saxpy.tl" -o "$tmp/o0.ptx"
ok "$TILEC" --dump-after=layout "$ex/saxpy.tl" -o "$tmp/s.ptx"; grep -q 'after layout' "$tmp/e" || { echo "FAIL: no dump"; fail=1; }
cp "$ex/saxpy.tl" "$tmp/copy.tl"; ok "$TILEC" "$tmp/copy.tl"; [ -s "$tmp/copy.ptx" ] || { echo "FAIL: default output name"; fail=1; }
ok sh -c "cat '$ex/saxpy.tl' | '$TILEC' - -o -"

bad 1 "unknown target 'sm_75'" "$TILEC" --arch=sm_75 "$ex/saxpy.tl"
bad 1 "unknown option '--frobnicate'" "$TILEC" --frobnicate "$ex/saxpy.tl"
bad 1 "no input file" "$TILEC"
bad 1 "more than one input file" "$TILEC" a.tl b.tl
bad 1 "cannot read" "$TILEC" "$tmp/none.tl"
bad 1 "-D needs NAME=VALUE" "$TILEC" -D BLOCK "$ex/saxpy.tl"
bad 1 "-o needs a file name" "$TILEC" "$ex/saxpy.tl" -o
bad 1 "unknown --emit kind" "$TILEC" --emit=sass "$ex/saxpy.tl"
bad 1 "unknown pass 'nope'" "$TILEC" --dump-after=nope "$ex/saxpy.tl" -o -
bad 1 "no kernel named 'nope'" "$TILEC" --kernel nope "$ex/saxpy.tl" -o -
bad 1 "cannot write" "$TILEC" "$ex/saxpy.tl" -o "$tmp/no/such/dir/x.ptx"
bad 0 "no kernel has a constant" "$TILEC" -D NOPE=1 "$ex/saxpy.tl" -o -
exit $fail
