#!/usr/bin/env bash
# tests/gpu/profile.sh: Nsight Compute over the cases of profile_cases.py (a stdlib kernel at one shape,
# or its torch peer), one text report per case: where the time goes (speed of light, warp states and
# their stall reasons, occupancy, memory), the third launch of each, clocks not locked.
#
#   tests/gpu/profile.sh TILEC OUTDIR [CASE ...]     (default: every case)
#
# Needs ncu (the GPU machine has it in /usr/local/cuda/bin) and torch. Exit 2 without them.
set -u -o pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tilec=$(realpath "$1") out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "profile.sh: no ncu" >&2; exit 2; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(w8a16_m16 w8a16_splitk_m16 w4a16_splitk_m16 f16_gemm_m16 w8a16_m4096 softmax_m1 softmax_m64_8k)
mkdir -p "$out"
status=0
for c in "${cases[@]}"; do
  "$ncu" --clock-control none --launch-skip 2 --launch-count 1 -k 'regex:gemm|softmax|nvjet|cutlass|sm90' \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis --section SourceCounters \
    python3 "$here/profile_cases.py" "$tilec" "$c" >"$out/ncu_$c.txt" 2>&1 || status=1
done
exit $status
