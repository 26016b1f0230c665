#!/usr/bin/env bash
# tests/gpu/acceptance.sh: the speed acceptance of issues 14-17 (see `issues`), in parts that each fit
# one call of a lent GPU machine (10 minutes), every peer measured in the same process.
#
#   tests/gpu/acceptance.sh TILEC OUTDIR PART
#
# PART 1: issue 14's GEMM grid: examples/matmul.tl at its defaults against cuBLAS, f16 and bf16, M in
#         {16, 64, 128, 512, 1024, 4096, 16384} x (N, K) in {4096^2, 14336 x 4096, 4096 x 14336,
#         8192^2} (sweep_gemm.py, median of 7 CUDA-graph replays); then the shapes between the
#         grid's (M in {384, 500, 640, 768}, N and K ragged or not), where the tile choices change
#         (the last wave's fill, K % 64): speed the issue does not grade, so its table only informs.
# PART 2: issue 14's row kernels (sweep_rows.py: softmax, rmsnorm, layernorm against the device copy,
#         torch and Triton) and issue 15's points (sweep_gemm.py, median of 30: 4096^3 and 8192^3;
#         4095 x 4097 x 4096 and 8192 x 8192 x 1024).
# PART 3: issue 16's points (attention.py --speed-only at S = 8192, d 64 and 128, bf16, against
#         SDPA's cuDNN and flash backends, then B = 4, H = 32 and decoding at B = 64) and issue 17's
#         item 7 (gemm_w8a16.py --quick: the dequantizing GEMMs against torch's f16 GEMM at M = 16
#         and 4096).
# PART 4: issue 14's autotuner: `tilec tune examples/matmul.tl` over 24 configurations (BM, BN, BK,
#         STAGES) at 4096^3, f16 and bf16 (the goal: 20 configurations compiled and timed in under
#         3 s in all, the whole process timed here), and once at a ragged shape (K = 4100: rows
#         that are no multiple of 16 bytes cannot have tensor maps, so the candidates are built
#         with both forms).
#
# Each step has its own time limit; OUTDIR gets the tables (*.md), one log per step and rc.txt (each
# step's exit status: 124 = cut by its limit).  The tables say which device ran them: the issues'
# targets are the H200's.  Exit status: 1 if a step reported a wrong result or failed, 2 without a
# GPU or torch, else 0.
set -u -o pipefail
# shellcheck source=script_common.sh
source "$(dirname "$0")/script_common.sh"
[ $# -eq 3 ] || usage
tilec=$(readlink -f "$1") out=$(mkdir -p "$2" && cd "$2" && pwd) part=$3
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 2
status=0
step() { # NAME LIMIT COMMAND...: runs COMMAND with a time limit, its output in OUTDIR/NAME.log
  local name=$1 limit=$2 rc
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "$name rc $rc" >>"$out/rc.txt"
  case $rc in 0 | 124) ;; 2) [ $status -eq 1 ] || status=2 ;; *) status=1 ;; esac
}
work=$(mktemp -d "${TMPDIR:-/tmp}/tilec-acceptance.XXXXXX")
case $part in
  1)
    step gemm_grid 420 python3 sweep_gemm.py "$tilec" "$work/gemm" --dtypes f16,bf16 --reps 7
    step gemm_between 140 python3 sweep_gemm.py "$tilec" "$work/gemm_between" --dtypes f16,bf16 \
      --m 384,500,640,768 --nk 4096x4096,4000x3992,14336x4096,4096x14336 --reps 7 ;;
  2)
    step rows 300 python3 sweep_rows.py "$tilec" "$work/rows" --dtypes f16,bf16 --reps 15
    step gemm_issue15 120 python3 sweep_gemm.py "$tilec" "$work/gemm15" --dtypes f16,bf16 --m 4096,8192 \
      --nk 4096x4096,8192x8192 --reps 30
    step gemm_ragged 60 python3 sweep_gemm.py "$tilec" "$work/gemm_ragged" --dtypes f16,bf16 --m 4095 \
      --nk 4097x4096 --reps 30
    step gemm_short_k 60 python3 sweep_gemm.py "$tilec" "$work/gemm_short_k" --dtypes f16,bf16 --m 8192 \
      --nk 8192x1024 --reps 30 ;;
  3)
    step attention 300 python3 attention.py "$tilec" "$work/attention" --speed-only --seq 8192 --d 64,128 \
      --dtypes bf16 --reps 15
    step dequant 240 python3 gemm_w8a16.py "$tilec" "$work/dequant" --quick ;;
  4)
    if ! nvidia-smi -L >/dev/null 2>&1; then
      echo "acceptance.sh: part 4 needs a GPU (tilec tune times on it)" >&2
      exit 2
    fi
    tune() { # NAME ARGS...: a step of `tilec tune examples/matmul.tl ARGS`, the whole process timed
      local name=$1
      shift
      step "$name" 60 bash -c 'TIMEFORMAT="whole process: %R s"; time "$@"' tune "$tilec" tune \
        ../../examples/matmul.tl "$@"
    }
    for t in f16 bf16; do
      tune "tune_matmul_$t" -D "T=$t" --size M=4096,N=4096,K=4096 --try BM=64,128 --try BN=128,256 \
        --try BK=32,64 --try STAGES=2,3,4
    done
    tune tune_matmul_ragged -D T=f16 --size M=4096,N=4096,K=4100 --try BN=128,256 --try STAGES=3,4 ;;
  *)
    echo "acceptance.sh: PART is 1, 2, 3 or 4" >&2
    exit 2 ;;
esac
for d in "$work"/*/; do
  [ -d "$d" ] || continue
  for f in "$d"*.md; do
    [ -f "$f" ] && cp "$f" "$out/$(basename "$d")_$(basename "$f")"
  done
done
rm -rf "$work"
case $status in 0) verdict="done" ;; 2) verdict="not run (no GPU or torch)" ;; *) verdict=FAILED ;; esac
echo "acceptance.sh: part $part $verdict in $SECONDS s (tables and logs in $out)"
exit $status
