#!/usr/bin/env bash
# replay.sh FUZZ_COMPILE_REPLAY FUZZ_META_REPLAY: runs every input of tests/fuzz/regressions through
# the fuzz targets built without libFuzzer (tests/fuzz/replay.c; ctest fuzz.regressions, in the
# release and the ASan build), then assembles the PTX they compile to with $PTXAS when it is set.
set -u
here=$(cd "$(dirname "$0")" && pwd)
compile=$1 meta=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
[ -d "$here/regressions/compile" ] && { TILEC_FUZZ_PTX_DIR=$tmp "$compile" "$here/regressions/compile" || status=1; }
[ -d "$here/regressions/meta" ] && { "$meta" "$here/regressions/meta" || status=1; }
if [ -x "${PTXAS:-}" ]; then
  for f in "$tmp"/*.ptx; do
    [ -f "$f" ] || continue
    arch=${f%.ptx}; arch=${arch##*.}
    if ! "$PTXAS" -arch="$arch" "$f" -o /dev/null 2>"$tmp/log"; then
      echo "ptxas rejects the PTX of this input:"; cat "${f%.ptx}.input"; echo; cat "$tmp/log"; status=1
    fi
  done
fi
exit $status
