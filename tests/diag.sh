#!/usr/bin/env bash
# diag.sh FILE.tl: compiles FILE.tl (with the flags on its "// FLAGS:" line) and
# compares stderr with FILE.err exactly; the exit status must be 1.
set -u
f=$1
exp=${f%.tl}.err
: "${TILEC:?}"
dir=$(dirname "$f"); base=$(basename "$f")
flags=$(sed -n 's|^// FLAGS: ||p' "$f")
out=$(mktemp); trap 'rm -f "$out" "$out.ptx"' EXIT
# Run from the file's folder so that diagnostics name it as the .err does.
(cd "$dir" && "$TILEC" $flags "$base" -o "$out.ptx") 2>"$out"
rc=$?
if [ $rc -ne 1 ]; then echo "expected exit status 1, got $rc"; cat "$out"; exit 1; fi
if ! diff -u "$exp" "$out"; then echo "diagnostics differ from $exp"; exit 1; fi
echo ok
