#!/usr/bin/env bash
# ptx_identical.sh OLD_TILEC NEW_TILEC: compiles every examples/*.tl and stdlib/*.tl for sm_80 and
# sm_90a with both compilers and compares the PTX byte for byte. For changes that must not change
# code (refactors, new lowerings of patterns the shipped kernels do not use). Build OLD_TILEC from
# the base commit in a worktree:
#   git worktree add /tmp/base HEAD && cmake -S /tmp/base -B /tmp/base/build -G Ninja && ninja -C /tmp/base/build tools/tilec
# Exit 0 if every file is identical, 1 otherwise (the differing ones are listed).
set -u
[ $# -eq 2 ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1 new=$2
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
for f in "$root"/examples/*.tl "$root"/stdlib/*.tl; do
  for a in sm_80 sm_90a; do
    b=$(basename "$f" .tl)_$a
    "$old" --arch=$a "$f" -o "$tmp/$b.old.ptx" 2>"$tmp/err" || { echo "old compiler failed: $b"; cat "$tmp/err"; bad=$((bad + 1)); continue; }
    "$new" --arch=$a "$f" -o "$tmp/$b.new.ptx" 2>"$tmp/err" || { echo "new compiler failed: $b"; cat "$tmp/err"; bad=$((bad + 1)); continue; }
    n=$((n + 1))
    cmp -s "$tmp/$b.old.ptx" "$tmp/$b.new.ptx" || { echo "differs: $b"; bad=$((bad + 1)); }
  done
done
echo "ptx_identical: $n compared, $bad differ or failed"
[ $bad -eq 0 ]
