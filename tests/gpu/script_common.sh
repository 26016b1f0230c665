# tests/gpu/script_common.sh: what rows.sh and gemm.sh share, and the usage message of all.sh and
# acceptance.sh (sourced, not run).
#
#   source script_common.sh; parse_script_args "$@"; set -- "${rest[@]}"
#
# parse_script_args reads [--ptx-dir DIR] [--compile-only] TILEC BINDIR OUTDIR [more...] and sets
# ptxdir (absolute, created; default OUTDIR/ptx), compile_only (0/1), tilec, bindir, out (absolute,
# created), root (the repository) and rest (the arguments after OUTDIR); -h, --help or too few
# arguments print the calling script's header comment and exit 2.

usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
  exit 2
}

parse_script_args() {
  ptxdir=
  compile_only=0
  while [ $# -gt 0 ]; do
    case $1 in
    --ptx-dir)
      [ $# -ge 2 ] || usage
      ptxdir=$2
      shift 2
      ;;
    --compile-only)
      compile_only=1
      shift
      ;;
    -h | --help) usage ;;
    *) break ;;
    esac
  done
  [ $# -ge 3 ] || usage
  tilec=$1
  bindir=$2
  out=$3
  shift 3
  rest=("$@")
  root=$(cd "$(dirname "$0")/../.." && pwd)
  mkdir -p "$out" || exit 1
  out=$(cd "$out" && pwd)
  [ -n "$ptxdir" ] || ptxdir=$out/ptx
  mkdir -p "$ptxdir" || exit 1
  ptxdir=$(cd "$ptxdir" && pwd)
}

# The default of integer constant $2 in kernel $1's header in file $3, e.g. BN in
# `kernel softmax[T = f16, BN = 16384, ...]` (the header may span lines); empty if it has none.
header_default() {
  awk -v k="$1" 'index($0, "kernel " k "[") == 1 { on = 1 }
                 on { buf = buf $0 " "; if (index($0, "]")) exit }
                 END { print buf }' "$3" | sed 's/^[^[]*\[//; s/\].*//' | tr ',' '\n' |
    sed -n "s/^ *$2 *= *\([0-9][0-9]*\) *$/\1/p" | head -n 1
}

# compile_variant NAME SHOWN ARGS...: PTXDIR/NAME.ptx from `TILEC ARGS... -o PTXDIR/NAME.ptx` (SHOWN is
# how the arguments are echoed), or, with TILEC "-", a check that the file is there (compiled
# elsewhere). A failure is added to the caller's `failures` array.
compile_variant() {
  local name=$1 shown=$2
  shift 2
  if [ "$tilec" = - ]; then
    if [ -f "$ptxdir/$name.ptx" ]; then
      echo "using $ptxdir/$name.ptx (compiled elsewhere)"
    else
      echo "FAIL no $ptxdir/$name.ptx"
      failures+=("missing $name.ptx")
    fi
    return
  fi
  rm -f "$ptxdir/$name.ptx"
  echo "== $tilec $shown -o $name.ptx"
  if "$tilec" "$@" -o "$ptxdir/$name.ptx"; then
    echo "compiled $name: $(sed -n 's/^\/\/ tilec-meta kernel //p' "$ptxdir/$name.ptx" | tr '\n' ';')"
  else
    echo "FAIL compile $name"
    rm -f "$ptxdir/$name.ptx"
    failures+=("compile $name")
  fi
}

# run_checker SCRIPT PROGRAM ARGS...: after the variants compiled (the caller's `failures`), either
# stop there (--compile-only) or run BINDIR/PROGRAM ARGS... Returns 0 when the caller may report a
# pass, 1 on any failure, 2 when the program found no GPU; the verdict lines are printed here,
# except the pass, which each script words itself.
run_checker() {
  local script=$1 prog=$2 rc
  shift 2
  if [ "$compile_only" -eq 1 ]; then
    if [ ${#failures[@]} -eq 0 ]; then
      echo "$script: compiled ${#VARIANTS[@]} variants into $ptxdir"
      return 0
    fi
    echo "$script: FAIL: ${failures[*]}"
    return 1
  fi
  if [ ! -x "$bindir/$prog" ]; then
    echo "FAIL $bindir/$prog not found: build it first (ninja -C build $prog)"
    failures+=("no $prog")
    rc=1
  else
    echo "== $prog $*"
    "$bindir/$prog" "$@"
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 2 ] || failures+=("$prog (exit $rc)")
  fi
  if [ ${#failures[@]} -gt 0 ]; then
    echo "$script: FAIL: ${failures[*]}"
    return 1
  fi
  if [ $rc -eq 2 ]; then
    echo "$script: SKIPPED: no GPU (every variant compiled)"
    return 2
  fi
  return 0
}
