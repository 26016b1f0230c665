#!/usr/bin/env bash
# tests/gpu/strides.sh TILEC BINDIR OUTDIR [--reps R]: the GPU checks of tensors with strides(...), on a
# lent GPU machine, in one command:
#   strides.py            views against torch, timed beside torch's peers (OUTDIR/strides.md)
#   strides.py, no TMA    the same with TILEC_NO_TMA=1: the sm_90a kernels' cp.async path
#                         (OUTDIR/no_tma/strides.md)
#   gpu_levels            the GPU against the interpreter on tests/golden/strides.tl's kernels, the
#                         launches planned by tl_launch with tl_arg_tensor_strided (BINDIR/gpu_levels)
# Logs in OUTDIR/*.log. Exit status: 0 if all three passed.
set -u
[ $# -ge 3 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tilec=$(readlink -f "$1") bindir=$(readlink -f "$2") out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/no_tma"
out=$(readlink -f "$out")
status=0
(cd "$here" && python3 strides.py "$tilec" "$out" "$@") >"$out/strides.log" 2>&1 || { echo "strides.py failed"; status=1; }
(cd "$here" && TILEC_NO_TMA=1 python3 strides.py "$tilec" "$out/no_tma" --reps 5) >"$out/strides_no_tma.log" 2>&1 ||
  { echo "strides.py (TILEC_NO_TMA=1) failed"; status=1; }
"$bindir/gpu_levels" -v --root "$(cd "$here/../.." && pwd)" golden/strides.tl >"$out/gpu_levels_strides.log" 2>&1 || { echo "gpu_levels failed"; status=1; }
tail -1 "$out/gpu_levels_strides.log"
exit $status
