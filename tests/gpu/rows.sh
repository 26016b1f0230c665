#!/usr/bin/env bash
# tests/gpu/rows.sh: correctness and speed of the row kernels (stdlib/softmax.tl, stdlib/norms.tl) on
# a machine with an NVIDIA GPU (Hopper: sm_90a).
#
#   tests/gpu/rows.sh [--ptx-dir DIR] [--compile-only] TILEC BINDIR OUTDIR [gpu_rows options...]
#
# TILEC   the tilec binary (one that runs on this machine: build-static/tools/tilec on the GPU
#         machine), or - to use PTX already in the PTX folder (compiled elsewhere by this script
#         with --compile-only)
# BINDIR  the folder holding the built gpu_rows (build/tests/gpu, or BUILD/gpu in the standalone
#         build: cmake -S tests/gpu/standalone -B BUILD)
# OUTDIR  where the logs go: rows.log (everything this script prints) and rows_bench.txt (the
#         benchmark table); nothing else is written at its top level
# --ptx-dir DIR  where the PTX goes (default OUTDIR/ptx): one NAME.ptx per variant and variants.txt,
#         the list gpu_rows reads. Point it outside OUTDIR when OUTDIR must hold few files.
# --compile-only  compile the variants and write variants.txt, and do not run gpu_rows
# gpu_rows options: --seed S to replay a run, --reps R (default 50), --no-bench, --quick (skip the
#         correctness shapes above 2^24 elements)
#
# Compiles every variant below with `TILEC --arch=sm_90a -D T=... [-D BN=...] [-D THREADS=...]
# stdlib/FILE.tl -o PTXDIR/NAME.ptx`, then runs `BINDIR/gpu_rows OUTDIR --ptx PTXDIR`. Exit status:
# 0 if everything compiled and every correctness case passed (the benchmark's verdicts are reported,
# not enforced), 2 if everything compiled and there is no GPU (skipped), 1 otherwise.
set -u -o pipefail

# The variants, the one list: NAME KERNEL, then the -D settings (BN and THREADS default to the
# kernel's defaults in stdlib/*.tl). gpu_rows runs every correctness shape and input mode (mild and
# hostile: its header) for the variants named KERNEL_T, every other variant at its kernel's benchmark
# shape, and every variant at 16 x (2 BN + 1), with the BN evaluated here and written to
# variants.txt, so that each one's streaming path (rows longer than BN) sees the hostile inputs too;
# it times every f16 variant. (`gpu_rows --self-test` checks its checker on the CPU: ctest runs it.)
VARIANTS=(
  "softmax_f16          softmax    T=f16"
  "softmax_bf16         softmax    T=bf16"
  "softmax_f32          softmax    T=f32"
  "rmsnorm_f16          rmsnorm    T=f16"
  "rmsnorm_bf16         rmsnorm    T=bf16"
  "rmsnorm_f32          rmsnorm    T=f32"
  "layernorm_f16        layernorm  T=f16"
  "layernorm_bf16       layernorm  T=bf16"
  "layernorm_f32        layernorm  T=f32"
  "softmax_f16_bench     softmax    T=f16 @bench"
  "rmsnorm_f16_bench     rmsnorm    T=f16 @bench"
  "layernorm_f16_bench   layernorm  T=f16 @bench"
  "softmax_f16_long      softmax    T=f16 BN=16384 THREADS=512 BPS=2 MINB=2"
  "softmax_f16_s3        softmax    T=f16 STAGES=3 @bench"
  "rmsnorm_f16_t512     rmsnorm    T=f16 THREADS=512 @bench"
  "rmsnorm_f16_t256_m4  rmsnorm    T=f16 THREADS=256 MINB=4 @bench"
  "layernorm_f16_r8      layernorm  T=f16 RPB=8 @bench"
  "layernorm_f16_r16     layernorm  T=f16 RPB=16 @bench"
  "layernorm_f16_s2      layernorm  T=f16 STAGES=2 @bench"
  "layernorm_f16_t512    layernorm  T=f16 THREADS=512 @bench"
)
# The kernels' launch constants (BN, THREADS, ... follow the row length: docs/language.md) are
# compiled for the large sizes unless told: the nine defaults above are that generic variant, which
# gpu_rows checks at every shape. "@bench" compiles a variant for its kernel's benchmark shape
# (--size), the one tl_launch would pick there through the JIT.
bench_size_of() {
  case $1 in
  softmax) echo "M=8192,N=32768" ;;
  rmsnorm | layernorm) echo "M=32768,N=8192" ;;
  esac
}

# shellcheck source=script_common.sh
source "$(dirname "$0")/script_common.sh"
parse_script_args "$@"
set -- "${rest[@]}"

# The source file of a kernel.
source_of() {
  case $1 in
  softmax) echo "$root/stdlib/softmax.tl" ;;
  rmsnorm | layernorm) echo "$root/stdlib/norms.tl" ;;
  *) return 1 ;;
  esac
}

# "BN THREADS" of variant $1 of kernel $2 from source $3 under the -D settings that follow: what
# tilec evaluated (defaults may follow T: BN = 65536 / sizeof(T)), or, with PTX compiled
# elsewhere, what that run wrote into the PTX folder's variants.txt.
consts_of() {
  local name=$1 kernel=$2 src=$3
  shift 3
  if [ "$tilec" = - ]; then
    [ -f "$ptxdir/variants.txt" ] && awk -v n="$name" '$1 == n { print $4, $5; exit }' "$ptxdir/variants.txt"
    return 0
  fi
  "$tilec" --emit=tir --arch=sm_90a "$@" --kernel "$kernel" "$src" -o - 2>/dev/null |
    awk '$1 == "const" && $3 == "i32" && $4 == "=" { v[$2] = v[$2] == "" ? $5 : v[$2] }
         END { print v["BN:"], v["THREADS:"] }'
}

main() {
  local failures=() line name kernel settings src kv t bn threads dflags
  echo "== rows.sh: PTX in $ptxdir, logs in $out"
  : >"$ptxdir/variants.txt.new"
  for line in "${VARIANTS[@]}"; do
    read -r name kernel settings <<<"$line"
    if ! src=$(source_of "$kernel"); then
      echo "FAIL variant $name: unknown kernel '$kernel'"
      failures+=("variant $name")
      continue
    fi
    t=''
    dflags=()
    for kv in $settings; do
      case $kv in
      T=*) t=${kv#T=} ;;
      esac
      if [ "$kv" = @bench ]; then
        dflags+=(--size "$(bench_size_of "$kernel")")
      else
        dflags+=(-D "$kv")
      fi
    done
    read -r bn threads < <(consts_of "$name" "$kernel" "$src" "${dflags[@]}")
    if [ -z "$t" ] || [ -z "$bn" ] || [ -z "$threads" ]; then
      echo "FAIL variant $name: T, BN or THREADS unknown (T='$t' BN='$bn' THREADS='$threads';" \
        "read from tilec --emit=tir of ${src#"$root"/}, or from the PTX folder's variants.txt)"
      failures+=("variant $name")
      continue
    fi
    echo "$name $kernel $t $bn $threads" >>"$ptxdir/variants.txt.new"
    compile_variant "$name" "--arch=sm_90a ${dflags[*]} ${src#"$root"/}" --arch=sm_90a "${dflags[@]}" "$src"
  done
  mv "$ptxdir/variants.txt.new" "$ptxdir/variants.txt"

  run_checker rows.sh gpu_rows "$out" --ptx "$ptxdir" "$@" || return $?
  [ $compile_only -eq 1 ] && return 0
  echo "rows.sh: PASS (the benchmark's verdicts, if it ran, are in $out/rows_bench.txt)"
  return 0
}

main "$@" 2>&1 | tee "$out/rows.log"
exit "${PIPESTATUS[0]}"
