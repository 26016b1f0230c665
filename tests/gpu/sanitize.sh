#!/usr/bin/env bash
# tests/gpu/sanitize.sh: every example and stdlib kernel, and a sample of the conformance matrix, at
# small shapes under compute-sanitizer's four tools (memcheck, racecheck, synccheck, initcheck), on a
# machine with an NVIDIA GPU.
#
#   tests/gpu/sanitize.sh TILEC BINDIR OUTDIR
#
# TILEC and BINDIR as for tests/gpu/all.sh (BINDIR holds gpu_suite, gpu_rows, gpu_gemm, gpu_conform).
# Compiles the examples and stdlib/activations.tl (as run.sh does), the row-kernel variants (rows.sh
# --compile-only) and the GEMM variants (gemm.sh --compile-only), then runs, under each tool:
#   gpu_suite PTX --max-size 1000                    the examples and activations, N <= 1000
#   gpu_rows --no-bench --max-elems 70000            softmax, RMSNorm, LayerNorm: every variant's
#                                                    small shapes, all input modes, streaming paths
#   gpu_gemm --no-bench --max-work 3000000           every GEMM variant at 17x33x65; gemm_softmax
#                                                    also at 300x129x64
#   gpu_conform --sample 8                           every 8th conformance case (both targets)
# API errors are not reported (gpu_suite makes some on purpose: launches the runtime must refuse).
# Each program's own checks must pass too. Writes OUTDIR/sanitize.log (everything) and
# OUTDIR/sanitize.txt (one line per tool and program: its ERROR SUMMARY and the checks' tally).
# Exit status 0 if every run reported no error and passed its checks.
set -u -o pipefail
[ $# -eq 3 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tilec=$1 bindir=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out/ptx"
log=$out/sanitize.log summary=$out/sanitize.txt
: >"$log"; : >"$summary"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "sanitize.sh: compute-sanitizer not found" | tee -a "$summary"; exit 2; }
status=0
for tl in "$root"/examples/*.tl "$root"/stdlib/activations.tl; do
  "$tilec" --arch=sm_90a "$tl" -o "$out/ptx/$(basename "$tl" .tl).ptx" >>"$log" 2>&1 || { echo "compile failed: $tl" | tee -a "$summary"; status=1; }
done
"$here/rows.sh" --ptx-dir "$out/rows_ptx" --compile-only "$tilec" "$bindir" "$out/rows" >>"$log" 2>&1 || { echo "rows.sh --compile-only failed" | tee -a "$summary"; status=1; }
"$here/gemm.sh" --ptx-dir "$out/gemm_ptx" --compile-only "$tilec" "$bindir" "$out/gemm" >>"$log" 2>&1 || { echo "gemm.sh --compile-only failed" | tee -a "$summary"; status=1; }
run() { # tool name program args...
  local tool=$1 name=$2
  shift 2
  echo "== $tool $name: $*" >>"$log"
  "$cs" --tool "$tool" --error-exitcode 99 --print-limit 20 --report-api-errors no "$@" >"$out/run.log" 2>&1
  local rc=$?
  cat "$out/run.log" >>"$log"
  local errs tally
  errs=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/run.log" | tail -1 | sed 's/^========= //')
  tally=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$out/run.log" | tail -1)
  printf '%-10s %-12s exit %-3s %s | %s\n' "$tool" "$name" "$rc" "${errs:-no summary}" "${tally:-no tally}" | tee -a "$summary"
  [ "$rc" -eq 0 ] || status=1
}
for tool in memcheck racecheck synccheck initcheck; do
  run "$tool" suite "$bindir/gpu_suite" "$out/ptx" --max-size 1000
  run "$tool" rows "$bindir/gpu_rows" "$out/rows" --ptx "$out/rows_ptx" --no-bench --max-elems 70000
  run "$tool" gemm "$bindir/gpu_gemm" "$out/gemm_ptx" --no-bench --max-work 3000000
  run "$tool" conform "$bindir/gpu_conform" --sample 8 --threads "$(nproc)"
done
rm -f "$out/run.log"
echo "sanitize.sh: $([ $status -eq 0 ] && echo PASS || echo FAIL)" | tee -a "$summary"
exit $status
