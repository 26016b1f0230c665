#!/usr/bin/env bash
# tests/gpu/gemm.sh: correctness and speed of the tensor-core GEMM kernels (examples/matmul.tl,
# stdlib/gemm.tl) on a machine with an NVIDIA GPU (Hopper: sm_90a), against cuBLAS for speed.
#
#   tests/gpu/gemm.sh [--ptx-dir DIR] [--compile-only] TILEC BINDIR OUTDIR [gpu_gemm options...]
#
# TILEC   the tilec binary (one that runs on this machine: build-static/tools/tilec on the GPU
#         machine), or - to use PTX already in the PTX folder (compiled elsewhere by this script
#         with --compile-only)
# BINDIR  the folder holding the built gpu_gemm (build/tests/gpu, or BUILD/gpu in the standalone
#         build: cmake -S tests/gpu/standalone -B BUILD)
# OUTDIR  where the logs go: gemm.log (everything this script prints) and gemm_bench.txt (the
#         benchmark table, against cuBLAS); the PTX goes to OUTDIR/ptx unless --ptx-dir says otherwise
# --ptx-dir DIR  where the PTX goes: one NAME.ptx per variant and gemm_variants.txt, the list
#         gpu_gemm reads
# --compile-only  compile the variants and write gemm_variants.txt, and do not run gpu_gemm
# gpu_gemm options: --seed S to replay a run, --quick (no 4096^3 / 8192^3 correctness cases),
#         --reps R (default 30), --no-bench
#
# Compiles every variant below with `TILEC --arch=sm_90a -D T=... [-D NAME=VALUE ...] FILE.tl -o
# PTXDIR/NAME.ptx` (a setting ARCH=sm_80 picks another target instead: on sm_90a gemm is lowered to
# wgmma where it fits, on sm_80 always to ldmatrix + mma.sync, and sm_80 code runs on Hopper), then runs `BINDIR/gpu_gemm PTXDIR --bench-out OUTDIR/gemm_bench.txt`. Exit status:
# 0 if everything compiled and every correctness case passed (the benchmark's verdicts against cuBLAS
# are reported, not enforced), 2 if everything compiled and there is no GPU (skipped), 1 otherwise.
set -u -o pipefail

# The variants, the one list: NAME ROLE SOURCE, then the -D settings (T= is required).
#   matmul  examples/matmul.tl at its defaults: every correctness shape, and timed against cuBLAS
#   stages  matmul with another STAGES: the reduced correctness shapes
#   tune    matmul with other tile settings: the reduced correctness shapes, and timed against cuBLAS
#           (the best correct variant per dtype and shape decides the benchmark's verdict)
#   stdlib  all the kernels of stdlib/gemm.tl in one module, gemm_softmax included (gemm_bias_act at
#           the ACT given here, or at its default in the kernel's header)
#   act     stdlib/gemm.tl compiled with --kernel gemm_bias_act, at the ACT given here
#   softmax stdlib/gemm.tl compiled with --kernel gemm_softmax (C = row softmax of scale * A @ B^T):
#           correctness only, on shapes of its own (gpu_gemm's header), and one timing row at
#           4096x128x4096 unless --no-bench. BN=64 makes more of the shapes (N > BN) take the
#           kernel's second pass; WM=2 (a 2x4 warp grid) makes the row reductions go across warps
#           through shared memory.
# Add tuning variants at the end; their names must be unique (they name the PTX files).
VARIANTS=(
  "matmul_f16            matmul  examples/matmul.tl  T=f16"
  "matmul_bf16           matmul  examples/matmul.tl  T=bf16"
  "matmul_f16_s1         stages  examples/matmul.tl  T=f16 STAGES=1"
  "matmul_f16_s2         stages  examples/matmul.tl  T=f16 STAGES=2"
  "matmul_f16_s3         stages  examples/matmul.tl  T=f16 STAGES=3"
  "matmul_f16_s4         stages  examples/matmul.tl  T=f16 STAGES=4"
  "gemm_f16              stdlib  stdlib/gemm.tl      T=f16"
  "gemm_bf16             stdlib  stdlib/gemm.tl      T=bf16"
  "gemm_act0_f16         act     stdlib/gemm.tl      T=f16 ACT=0"
  "gemm_act1_f16         act     stdlib/gemm.tl      T=f16 ACT=1"
  "gemm_act2_f16         act     stdlib/gemm.tl      T=f16 ACT=2"
  "gemm_softmax_f16      softmax stdlib/gemm.tl      T=f16"
  "gemm_softmax_bf16     softmax stdlib/gemm.tl      T=bf16"
  "gemm_softmax_f16_bn64 softmax stdlib/gemm.tl      T=f16 BN=64"
  "gemm_softmax_f16_wm2  softmax stdlib/gemm.tl      T=f16 WM=2"
  "matmul_f16_sm80       stages  examples/matmul.tl  T=f16 ARCH=sm_80"
  "matmul_bf16_sm80      stages  examples/matmul.tl  T=bf16 ARCH=sm_80"
  "gemm_f16_sm80         stdlib  stdlib/gemm.tl      T=f16 ARCH=sm_80"
  "matmul_f16_n256_s4    tune    examples/matmul.tl  T=f16 BN=256 STAGES=4"
  "matmul_bf16_n256_s4   tune    examples/matmul.tl  T=bf16 BN=256 STAGES=4"
  "matmul_f16_n256_s3    tune    examples/matmul.tl  T=f16 BN=256 STAGES=3"
  "matmul_f16_p4         tune    examples/matmul.tl  T=f16 PANEL=4"
  "matmul_bf16_p4        tune    examples/matmul.tl  T=bf16 PANEL=4"
  "matmul_f16_m64_n64    stages  examples/matmul.tl  T=f16 BM=64 BN=64"
  "matmul_f16_m64_n128   stages  examples/matmul.tl  T=f16 BM=64 BN=128"
  "matmul_f16_n256_k128_s2 tune  examples/matmul.tl  T=f16 BN=256 BK=128 STAGES=2"
  "matmul_bf16_n256_k128_s2 tune examples/matmul.tl  T=bf16 BN=256 BK=128 STAGES=2"
  "matmul_f16_k128_s3    tune    examples/matmul.tl  T=f16 BN=128 BK=128 STAGES=3"
  "matmul_bf16_k128_s3   tune    examples/matmul.tl  T=bf16 BN=128 BK=128 STAGES=3"
  "matmul_f16_m256_s4    tune    examples/matmul.tl  T=f16 BM=256 THREADS=512 BN=128 STAGES=4"
  "matmul_f16_n128_s3    tune    examples/matmul.tl  T=f16 BN=128 STAGES=3"
  "matmul_f16_m2         tune    examples/matmul.tl  T=f16 BN=128 MINB=2"
  "matmul_bf16_m2        tune    examples/matmul.tl  T=bf16 BN=128 MINB=2"
  "matmul_f16_m2_s4      tune    examples/matmul.tl  T=f16 BN=128 MINB=2 STAGES=4"
  "matmul_f16_mma_m2     tune    examples/matmul.tl  T=f16 MINB=2 BK=32 ARCH=sm_80"
  "matmul_f16_mma        tune    examples/matmul.tl  T=f16 ARCH=sm_80"
  "matmul_bf16_mma       tune    examples/matmul.tl  T=bf16 ARCH=sm_80"
  "matmul_f16_ws0        tune    examples/matmul.tl  T=f16 WS=0"
  "persistent_f16        matmul  examples/matmul_persistent.tl  T=f16"
  "persistent_bf16       matmul  examples/matmul_persistent.tl  T=bf16"
  "persistent_f16_ws0    stages  examples/matmul_persistent.tl  T=f16 WS=0"
  "persistent_f16_p4     tune    examples/matmul_persistent.tl  T=f16 PANEL=4"
  "matmul_bf16_ws0       tune    examples/matmul.tl  T=bf16 WS=0"
  "matmul_f16_m64_n32    stages  examples/matmul.tl  T=f16 BM=64 BN=32 BK=128 STAGES=8"
  "matmul_bf16_m64_n32   stages  examples/matmul.tl  T=bf16 BM=64 BN=32"
  "matmul_f16_m64_n16    stages  examples/matmul.tl  T=f16 BM=64 BN=16 BK=64 STAGES=4"
  "matmul_f16_n32_ws0    stages  examples/matmul.tl  T=f16 BM=128 BN=32 WS=0"
  "gemm_f16_k32          stdlib  stdlib/gemm.tl      T=f16 BK=32"
  "gemm_bf16_k16         act     stdlib/gemm.tl      T=bf16 BK=16 STAGES=4"
  "gemm_f16_n32          stdlib  stdlib/gemm.tl      T=f16 BN=32"
  "gemm_f16_n16_k32      stdlib  stdlib/gemm.tl      T=f16 BN=16 BK=32"
  "matmul_f16_swap16     stages  examples/matmul.tl  T=f16 SWAP=1 BM=16 BN=64 BK=128 STAGES=6 THREADS=128"
  "matmul_bf16_swap32    stages  examples/matmul.tl  T=bf16 SWAP=1 BM=32 BN=64 BK=128 STAGES=6 THREADS=128"
  "matmul_f16_swap48_ws0 stages  examples/matmul.tl  T=f16 SWAP=1 BM=48 BN=128 BK=64 STAGES=4 THREADS=256 WS=0"
  "matmul_f16_fb         tune    examples/matmul.tl  T=f16 SWAP=0 BM=128 FB=1"
  "matmul_bf16_fb        tune    examples/matmul.tl  T=bf16 SWAP=0 BM=128 FB=1"
)

# shellcheck source=script_common.sh
source "$(dirname "$0")/script_common.sh"
parse_script_args "$@"
set -- "${rest[@]}"

main() {
  local failures=() line name role srcrel src settings kv t act dflags kflags
  local -A seen=()
  echo "== gemm.sh: PTX in $ptxdir, logs in $out"
  : >"$ptxdir/gemm_variants.txt.new"
  for line in "${VARIANTS[@]}"; do
    read -r name role srcrel settings <<<"$line"
    src=$root/$srcrel
    if [ -n "${seen[$name]:-}" ]; then
      echo "FAIL variant $name: listed twice"
      failures+=("variant $name")
      continue
    fi
    seen[$name]=1
    case $role in
    matmul | stages | tune | stdlib | act | softmax) ;;
    *)
      echo "FAIL variant $name: unknown role '$role'"
      failures+=("variant $name")
      continue
      ;;
    esac
    if [ ! -f "$src" ]; then
      echo "FAIL variant $name: no $srcrel"
      failures+=("variant $name")
      continue
    fi
    t='' act='' arch=sm_90a
    dflags=()
    for kv in $settings; do
      case $kv in
      ARCH=*)
        arch=${kv#ARCH=}
        continue
        ;;
      T=*) t=${kv#T=} ;;
      ACT=*) act=${kv#ACT=} ;;
      esac
      dflags+=(-D "$kv")
    done
    kflags=()
    case $role in
    stdlib | act)
      [ -n "$act" ] || act=$(header_default gemm_bias_act ACT "$src")
      [ "$role" = act ] && kflags=(--kernel gemm_bias_act)
      ;;
    softmax)
      act=-
      kflags=(--kernel gemm_softmax)
      ;;
    *) act=- ;;
    esac
    if [ "$t" != f16 ] && [ "$t" != bf16 ]; then
      echo "FAIL variant $name: T must be f16 or bf16 (got '$t')"
      failures+=("variant $name")
      continue
    fi
    if [ -z "$act" ]; then
      echo "FAIL variant $name: ACT unknown (not set, and no default in gemm_bias_act's header in $srcrel)"
      failures+=("variant $name")
      continue
    fi
    echo "$name $role $t $act $settings" >>"$ptxdir/gemm_variants.txt.new"
    compile_variant "$name" "--arch=$arch ${dflags[*]}${kflags[*]:+ ${kflags[*]}} $srcrel" \
      --arch="$arch" "${dflags[@]}" ${kflags[@]+"${kflags[@]}"} "$src"
  done
  mv "$ptxdir/gemm_variants.txt.new" "$ptxdir/gemm_variants.txt"

  run_checker gemm.sh gpu_gemm "$ptxdir" --bench-out "$out/gemm_bench.txt" "$@" || return $?
  [ $compile_only -eq 1 ] && return 0
  echo "gemm.sh: PASS (benchmark verdicts against cuBLAS: $out/gemm_bench.txt)"
  return 0
}

main "$@" 2>&1 | tee "$out/gemm.log"
exit "${PIPESTATUS[0]}"
