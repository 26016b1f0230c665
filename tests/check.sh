#!/usr/bin/env bash
# check.sh FILE: runs the file's "// RUN:" lines, lit-style.  In them %s is the
# file, %tilec the compiler, %FileCheck LLVM's FileCheck, %ptxas ptxas.
# Every line must succeed (pipefail); "// REQUIRES: ptxas" skips when absent.
set -u
f=$1
: "${TILEC:?}" "${FILECHECK:?}"
if grep -q '^// REQUIRES: ptxas' "$f" && [ ! -x "${PTXAS:-}" ]; then
  echo "skipped: ptxas not found"; exit 77
fi
n=0
while IFS= read -r line; do
  cmd=${line#// RUN: }
  cmd=${cmd//%tilec/$TILEC}
  cmd=${cmd//%FileCheck/$FILECHECK}
  cmd=${cmd//%ptxas/${PTXAS:-ptxas}}
  cmd=${cmd//%s/$f}
  n=$((n + 1))
  if ! bash -o pipefail -c "$cmd"; then
    echo "FAILED: $cmd"; exit 1
  fi
done < <(grep '^// RUN: ' "$f")
[ "$n" -gt 0 ] || { echo "no RUN lines in $f"; exit 1; }
echo "ok: $n RUN lines"
