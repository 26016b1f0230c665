#!/usr/bin/env bash
# ptx_identical.sh OLD_TILEC NEW_TILEC [GPU_CONFORM]: for changes that must not change what the
# compiler produces (refactors; new lowerings of patterns nothing here uses). Runs both compilers on
#   - every examples/*.tl and stdlib/*.tl for sm_80 and sm_90a: the PTX, the --emit=header launchers
#     and the lowered tile IR (--emit=tir);
#   - every tests/golden/*.tl for sm_80 and sm_90a: the PTX and the tile IR;
#   - every tests/diag/*.tl: the diagnostics (stderr) and the exit status;
#   - with GPU_CONFORM (build/tests/gpu/gpu_conform, default when it exists): the kernels of the
#     conformance matrix and 150 random ones, each at its own target;
# and compares each output byte for byte, with the exit status (a file both reject alike is equal).
# Build OLD_TILEC from the base commit in a worktree:
#   git worktree add /tmp/base HEAD && cmake -S /tmp/base -B /tmp/base/build -G Ninja && ninja -C /tmp/base/build tools/tilec
# Exit 0 if every output is identical, 1 otherwise (the differing ones are listed, with a diff of the first).
set -u
[ $# -ge 2 ] && [ $# -le 3 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1 new=$2
root=$(cd "$(dirname "$0")/.." && pwd)
conform=${3:-$root/build/tests/gpu/gpu_conform}
for t in "$old" "$new"; do [ -x "$t" ] || { echo "ptx_identical: $t is not an executable" >&2; exit 2; }; done
old=$(realpath "$old") new=$(realpath "$new")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# One job per line of $tmp/jobs: NAME<TAB>ARGS...; each runs both compilers to files.
jobs=$tmp/jobs
: >"$jobs"
add() { printf '%s\t%s\n' "$1" "$2" >>"$jobs"; }
for f in "$root"/examples/*.tl "$root"/stdlib/*.tl; do
  b=$(basename "$f" .tl)
  for a in sm_80 sm_90a; do
    add "$b.$a.ptx" "--arch=$a $f"
    add "$b.$a.h" "--arch=$a --emit=header $f"
    add "$b.$a.tir" "--arch=$a --emit=tir $f"
  done
done
for f in "$root"/tests/golden/*.tl; do
  b=golden.$(basename "$f" .tl)
  for a in sm_80 sm_90a; do
    add "$b.$a.ptx" "--arch=$a $f"
    add "$b.$a.tir" "--arch=$a --emit=tir $f"
  done
done
for f in "$root"/tests/diag/*.tl; do
  add "diag.$(basename "$f" .tl)" "--emit=tir $f"
done
if [ -x "$conform" ]; then
  mkdir -p "$tmp/conform" "$tmp/random"
  "$conform" --dump "$tmp/conform" >/dev/null && "$conform" --random 150 --seed 7 --dump "$tmp/random" >/dev/null ||
    { echo "ptx_identical: $conform --dump failed" >&2; exit 2; }
  for d in conform random; do
    for a in sm_80 sm_90a; do
      [ -d "$tmp/$d/$a" ] || continue
      for f in "$tmp/$d/$a"/*.tl; do add "$d.$a.$(basename "$f" .tl)" "--arch=$a $f"; done
    done
  done
else
  echo "ptx_identical: no $conform: the conformance kernels are not compared (build tests/gpu/gpu_conform)"
fi

mkdir -p "$tmp/out"
one() { # NAME ARGS: runs both compilers; status and output to out/NAME.{old,new}
  local name=$1; shift
  for w in old new; do
    local bin=$old; [ $w = new ] && bin=$new
    # shellcheck disable=SC2086
    (cd "$tmp" && "$bin" $* -o "$tmp/out/$name.$w.o" >"$tmp/out/$name.$w.err" 2>&1; echo "status $?" >>"$tmp/out/$name.$w.err")
    [ -f "$tmp/out/$name.$w.o" ] && cat "$tmp/out/$name.$w.o" >>"$tmp/out/$name.$w.err"
    rm -f "$tmp/out/$name.$w.o"
  done
  cmp -s "$tmp/out/$name.old.err" "$tmp/out/$name.new.err" || echo "$name" >>"$tmp/differ"
}
export -f one; export old new tmp
tr '\t' ' ' <"$jobs" | xargs -P "$(nproc)" -L 1 bash -c 'one "$@"' _
n=$(wc -l <"$jobs")
bad=0
if [ -s "$tmp/differ" ]; then
  sort "$tmp/differ" | sed 's/^/differs: /'
  bad=$(wc -l <"$tmp/differ")
  first=$(sort "$tmp/differ" | head -1)
  diff -u "$tmp/out/$first.old.err" "$tmp/out/$first.new.err" | head -40
fi
echo "ptx_identical: $n outputs compared (examples, stdlib, goldens, diagnostics$([ -x "$conform" ] && echo ", conformance + random kernels")), $bad differ"
[ "$bad" -eq 0 ]
