#!/usr/bin/env bash
# layout.sh LAYOUT EXPECTED [--update]: the ctest abi.layout. LAYOUT (layout.c, built) prints the
# public headers' struct layouts, enumerator values and #defines; they must be EXPECTED's lines, so
# that a change is a deliberate edit (--update) seen in review (docs/abi.md, "The library's ABI").
set -euo pipefail
now=$(mktemp)
trap 'rm -f "$now"' EXIT
"$1" >"$now"
if [ "${3:-}" = --update ]; then
  cp "$now" "$2"
  echo "abi: wrote $(wc -l <"$2") lines to $2"
  exit 0
fi
if ! diff -u "$2" "$now"; then
  echo "abi: the public headers' layouts differ from $2 (- listed, + now). A changed size, offset or" >&2
  echo "abi: value breaks hosts built before it: a new major version (docs/abi.md). If meant, run:" >&2
  echo "abi: $0 $1 $2 --update" >&2
  exit 1
fi
echo "abi: $(grep -c ' size ' "$now") structs, $(wc -l <"$now") lines as listed"
