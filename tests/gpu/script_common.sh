# tests/gpu/script_common.sh: what rows.sh and gemm.sh share (sourced, not run).
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
# `kernel softmax[T = f16, BN = 16384, ...]`; empty if it has none.
header_default() {
  sed -n "s/^kernel $1\[\([^]]*\)\].*/\1/p" "$3" | tr ',' '\n' |
    sed -n "s/^ *$2 *= *\([0-9][0-9]*\) *$/\1/p" | head -n 1
}
