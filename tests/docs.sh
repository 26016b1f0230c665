#!/usr/bin/env bash
# docs.sh ROOT: every complete .tl example in ROOT/docs/*.md and ROOT/docs/tutorials/*.md compiles,
# as docs/language.md promises. A fenced ```tl block is a complete example when it has a line that
# starts with `kernel` and no `...` (an excerpt); a complete example with a `// error: MESSAGE`
# comment must fail to compile with a diagnostic containing MESSAGE, any other must compile. A
# file may add flags for all its blocks with an HTML comment line `<!-- docs.sh: FLAGS -->`.
set -u
root=${1:?usage: docs.sh ROOT}
: "${TILEC:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
checked=0 failed=0 skipped=0
for md in "$root"/docs/*.md "$root"/docs/tutorials/*.md; do
  [ -f "$md" ] || continue
  # one file per block, named by its first line in the .md
  awk -v out="$tmp/$(basename "$md" .md)" '
    /^```tl[[:space:]]*$/ { inb = 1; start = NR + 1; f = out "_" start ".tl"; printf "" > f; next }
    /^```[[:space:]]*$/ && inb { inb = 0; close(f); next }
    inb { print > f }' "$md"
  flags=$(sed -n 's/^<!-- docs.sh: \(.*\) -->$/\1/p' "$md" | head -1)
  for b in "$tmp/$(basename "$md" .md)"_*.tl; do
    [ -f "$b" ] || continue
    line=${b##*_}; line=${line%.tl}
    where="$(basename "$md"):$line"
    if ! grep -q '^kernel' "$b" || grep -q '\.\.\.' "$b"; then
      skipped=$((skipped + 1)); rm -f "$b"; continue
    fi
    checked=$((checked + 1))
    want=$(sed -n 's,.*// error: \(.*\)$,\1,p' "$b" | head -1)
    # shellcheck disable=SC2086
    if "$TILEC" $flags "$b" -o /dev/null 2>"$tmp/err"; then
      if [ -n "$want" ]; then echo "FAIL $where: compiles, but the example says it fails with: $want"; failed=$((failed + 1)); fi
    elif [ -z "$want" ]; then
      echo "FAIL $where: does not compile:"; sed 's/^/    /' "$tmp/err" | head -8; failed=$((failed + 1))
    elif ! grep -qF -- "$want" "$tmp/err"; then
      echo "FAIL $where: fails, but not with the message the example gives ($want):"; sed 's/^/    /' "$tmp/err" | head -8
      failed=$((failed + 1))
    fi
    rm -f "$b"
  done
done
echo "docs.sh: $checked complete examples checked ($skipped excerpts skipped), $failed failed"
[ "$checked" -gt 0 ] && [ "$failed" -eq 0 ]
