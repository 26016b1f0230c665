#!/usr/bin/env bash
# run.sh ROOT: the puzzles of docs/puzzles/ and their checker, tests/puzzles/check.py (ctest
# puzzles.check).
#
# - every puzzle page NN_NAME.md has a starter and a reference solution, is listed in the
#   README.md beside it, and is a puzzle check.py knows;
# - every reference solution PASSes at the tile level, and at the thread level for sm_90a and sm_80
#   (the program the compiler makes of it, every thread, checked for races), and compiles to PTX
#   for both targets;
# - every starter FAILs (it compiles and runs: wrong, not broken), and so does every kernel in tests/puzzles/wrong/ (the classic
#   mistakes, one per file): the checker can fail, and its cases catch those mistakes;
# - a file that does not compile is a FAIL that shows tilec's diagnostic; an unknown puzzle is a
#   usage error (status 2).
#
# Python: the first of $TILEC_PYTHON, python3, /usr/bin/python3 that has NumPy (a python3 earlier
# on PATH, a pyenv one say, may lack Debian's python3-numpy); exit 77 (skipped) when none has it.
set -u
root=${1:?usage: run.sh ROOT}
: "${TILEC:?}"
export TILEC PYTHONDONTWRITEBYTECODE=1
. "$(dirname "$0")/../numpy_python.sh"
if ! python=$(numpy_python); then
  echo "puzzles: no python3 with NumPy (Debian: python3-numpy): skipped"
  exit 77
fi
dir=$root/docs/puzzles
check=$root/tests/puzzles/check.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }

# expect STATUS TEXT PUZZLE FILE [OPTIONS]: check.py exits with STATUS and prints TEXT
expect() {
  local want=$1 text=$2; shift 2
  "$python" "$check" "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qF -- "$text" "$tmp/out"; then
    bad "check.py $* -> status $rc, want $want and '$text':"
    sed 's/^/    /' "$tmp/out"
  else
    echo "ok   check.py $* -> $(tail -1 "$tmp/out")"
  fi
}

"$python" "$check" --list >"$tmp/list" || bad "check.py --list"
pages=0
for md in "$dir"/[0-9][0-9]_*.md; do
  [ -f "$md" ] || continue
  pages=$((pages + 1))
  name=$(basename "$md" .md)
  num=${name%%_*}
  sol=$dir/solutions/$name.tl
  start=$dir/starters/$name.tl
  grep -q "^$name " "$tmp/list" || bad "$name.md: check.py has no puzzle $name"
  grep -qF "($name.md)" "$dir/README.md" || bad "$name.md is not linked from docs/puzzles/README.md"
  grep -q '^## Hint' "$md" || bad "$name.md has no '## Hint' section"
  [ -f "$sol" ] || { bad "$name: no solutions/$name.tl"; continue; }
  [ -f "$start" ] || { bad "$name: no starters/$name.tl"; continue; }
  expect 0 "PASS $name" "$num" "$sol"
  expect 0 "PASS $name" "$num" "$sol" --level thread
  expect 0 "PASS $name" "$num" "$sol" --level thread --arch sm_80
  for arch in sm_80 sm_90a; do
    "$TILEC" --arch=$arch "$sol" -o /dev/null 2>"$tmp/err" || { bad "$sol does not compile for $arch:"; cat "$tmp/err"; }
  done
  expect 1 "FAIL $name" "$num" "$start"
  grep -q "tilec stopped at the first case" "$tmp/out" && bad "$start does not compile or run: a starter should only be wrong"
done
[ "$pages" -eq "$(wc -l <"$tmp/list")" ] || bad "$pages puzzle pages, but check.py knows $(wc -l <"$tmp/list") puzzles"

# the classic mistakes: each must fail
for f in "$root"/tests/puzzles/wrong/*.tl; do
  n=$(basename "$f" .tl)
  expect 1 "FAIL ${n%%_*}_" "${n%%_*}" "$f"
done

# a file that does not compile: tilec's message, once
cat >"$tmp/broken.tl" <<'EOF'
kernel add_constant(X: f32[N], Y: f32[N]) grid(ceildiv(N, 256)) as (bx) threads(128) {
    let x = alloc_fragment([256], f32);
    copy(X[bx * 256], x);
    for i in parallel(256) {
        x[i] = x[i] + 10;
    }
    copy(x, Y[bx * 256])
}
EOF
expect 1 "broken.tl:8:1: error: unexpected token '}'" 01 "$tmp/broken.tl"
expect 1 "tilec stopped at the first case" 01 "$tmp/broken.tl"
# the kernel under another name
sed 's/kernel add_constant/kernel add_ten/; s/Y\[bx \* 256\])$/Y[bx * 256]);/' "$tmp/broken.tl" >"$tmp/renamed.tl"
expect 1 "no kernel named 'add_constant'" 01 "$tmp/renamed.tl"
# an out-of-bounds read: the interpreter's message with the line
cat >"$tmp/oob.tl" <<'EOF'
kernel add_constant(X: f32[N], Y: f32[N]) grid(ceildiv(N, 256)) as (bx) threads(128) {
    for i in parallel(256) {
        Y[bx * 256 + i] = X[bx * 256 + i] + 10.0;   // no test against N
    }
}
EOF
expect 1 "oob.tl:3:28: error: index [1000] is out of bounds of global 'X'" 01 "$tmp/oob.tl"
expect 2 "no puzzle '99'" 99 "$dir/solutions/01_add_constant.tl"
expect 2 "no file" 01 "$tmp/missing.tl"

echo "puzzles: $pages puzzles checked"
[ "$pages" -gt 0 ] && exit $fail
