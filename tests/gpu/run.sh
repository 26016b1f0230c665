#!/usr/bin/env bash
# tests/gpu/run.sh: the GPU acceptance run, on a machine with an NVIDIA GPU (Hopper: sm_90a).
#
#   tests/gpu/run.sh TILEC BINDIR OUTDIR [gpu_suite options...]
#   tests/gpu/run.sh --standin BINDIR OUTDIR [gpu_suite options...]
#   tests/gpu/run.sh --ptx PTXDIR BINDIR OUTDIR [gpu_suite options...]
#
# TILEC   the tilec binary (built statically on the CPU machine and copied over)
# BINDIR  the folder holding the built gpu_suite and gpu_bench (build/tests/gpu in the full build,
#         BUILD/gpu in the standalone one: cmake -S tests/gpu/standalone -B BUILD)
# OUTDIR  where the PTX and the logs go: compile.log, suite.log, bench.log, bench.txt, jit.log,
#         jit.txt, examples.log, summary.txt
# --standin  instead of tilec, build nvcc stand-ins of the example kernels (tests/gpu/standin/), to
#         check the suite, the benchmark and the runtime on their own (there are no stand-ins of
#         stdlib/activations.tl: gpu_suite runs with --skip-missing)
# --ptx PTXDIR  use PTX that tilec already compiled elsewhere (PTXDIR/NAME.ptx for each example and
#         PTXDIR/activations.ptx for stdlib/activations.tl), for when tilec itself cannot run on the
#         GPU machine
# gpu_suite options: --seed S to replay a run, --max-size N for a quick one, --skip-missing to skip
#         (not fail) a kernel whose PTX file is missing
#
# Compiles every examples/*.tl and stdlib/activations.tl (the activations gpu_suite checks, all four
# kernels in one module) with `tilec --arch=sm_90a FILE.tl -o OUTDIR/NAME.ptx`, then runs gpu_suite
# (which fails on a missing PTX file) and gpu_bench on OUTDIR. Then, when BINDIR has them (they are
# built with the compiler, statically linked to LLVM with -DTILEC_STATIC_LLVM=ON so that they run
# here): jit_bench, three fresh processes over one new cache folder OUTDIR/jit-cache with the
# driver's own cache off (CUDA_CACHE_DISABLE=1): a cold JIT compile + load + launch of vector_add,
# the same warm from the disk cache (target under 5 ms), and the host overhead per launch of
# tl_launch and of the --emit=header launcher against a bare cuLaunchKernel over 10000 launches each
# (target at most 1.2x), tables in jit.txt; the embedding examples host_jit and host_aot, and
# gpu_aot_variants (a header with a variant per --bucket, checked against a host softmax). Exits 0
# only if every example compiled, the suite had no failure and the benchmarks met their targets.
set -u -o pipefail

if [ $# -lt 3 ]; then
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
  exit 2
fi
tilec=$1
ptxdir=
if [ "$tilec" = --ptx ]; then
  ptxdir=$2
  shift
fi
bindir=$2
out=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)

for program in gpu_suite gpu_bench; do
  if [ ! -x "$bindir/$program" ]; then
    echo "run.sh: $bindir/$program not found: build it first (see docs/runtime.md)" >&2
    exit 2
  fi
done

failures=()
suite_flags=()
: >"$out/compile.log"

if [ "$tilec" = --standin ]; then
  if ! "$root/tests/gpu/standin/make_ptx.sh" "$out" 2>&1 | tee -a "$out/compile.log"; then
    failures+=("stand-in PTX")
  fi
  suite_flags=(--skip-missing) # no stand-in of stdlib/activations.tl
else
  shopt -s nullglob
  examples=("$root"/examples/*.tl)
  if [ ${#examples[@]} -eq 0 ]; then
    echo "run.sh: no examples/*.tl to compile" | tee -a "$out/compile.log"
    failures+=("no examples")
  fi
  for tl in "${examples[@]}" "$root/stdlib/activations.tl"; do
    name=$(basename "$tl" .tl)
    rel=${tl#"$root"/}
    if [ -n "$ptxdir" ]; then
      if cp "$ptxdir/$name.ptx" "$out/$name.ptx" 2>>"$out/compile.log"; then
        echo "copied $ptxdir/$name.ptx (compiled elsewhere)"
      else
        echo "FAIL no $ptxdir/$name.ptx for $rel"
        failures+=("missing $name.ptx")
      fi
      continue
    fi
    echo "== tilec --arch=sm_90a $rel -o $name.ptx" >>"$out/compile.log"
    if "$tilec" --arch=sm_90a "$tl" -o "$out/$name.ptx" >>"$out/compile.log" 2>&1; then
      echo "compiled $rel"
    else
      echo "FAIL compile $rel (see $out/compile.log)"
      failures+=("compile $name")
    fi
  done
fi

echo "== gpu_suite $out${suite_flags[*]:+ ${suite_flags[*]}}${*:+ $*}"
"$bindir/gpu_suite" "$out" ${suite_flags[@]+"${suite_flags[@]}"} "$@" 2>&1 | tee "$out/suite.log"
suite_rc=$?
[ $suite_rc -eq 0 ] || failures+=("gpu_suite (exit $suite_rc)")

echo "== gpu_bench $out $out/bench.txt"
"$bindir/gpu_bench" "$out" "$out/bench.txt" 2>&1 | tee "$out/bench.log"
bench_rc=$?
[ $bench_rc -eq 0 ] || failures+=("gpu_bench (exit $bench_rc)")

# The JIT and the launchers (include/tilec_jit.h, tilec --emit=header): each mode in a fresh
# process, in this order, over one cache folder that starts empty.
: >"$out/jit.log"
: >"$out/jit.txt"
if [ -x "$bindir/jit_bench" ]; then
  jit_cache="$out/jit-cache"
  rm -rf "$jit_cache"
  for mode in cold warm launch; do
    echo "== jit_bench $mode (TILEC_CACHE_DIR=$jit_cache CUDA_CACHE_DISABLE=1)" | tee -a "$out/jit.log"
    TILEC_CACHE_DIR="$jit_cache" CUDA_CACHE_DISABLE=1 \
      "$bindir/jit_bench" "$mode" "$root/examples/vector_add.tl" "$out/jit.txt" 2>&1 | tee -a "$out/jit.log"
    jit_rc=${PIPESTATUS[0]}
    [ "$jit_rc" -eq 0 ] || failures+=("jit_bench $mode (exit $jit_rc)")
  done
  echo "== jit_bench variants (launch constants of stdlib/softmax.tl)" | tee -a "$out/jit.log"
  TILEC_CACHE_DIR="$jit_cache" "$bindir/jit_bench" variants "$root/stdlib/softmax.tl" "$out/jit.txt" 2>&1 |
    tee -a "$out/jit.log"
  jit_rc=${PIPESTATUS[0]}
  [ "$jit_rc" -eq 0 ] || failures+=("jit_bench variants (exit $jit_rc)")
  echo "== jit_bench launch_tma (tensor maps: examples/matmul.tl)" | tee -a "$out/jit.log"
  TILEC_CACHE_DIR="$jit_cache" "$bindir/jit_bench" launch_tma "$root/examples/matmul.tl" "$out/jit.txt" 2>&1 |
    tee -a "$out/jit.log"
  jit_rc=${PIPESTATUS[0]}
  [ "$jit_rc" -eq 0 ] || failures+=("jit_bench launch_tma (exit $jit_rc)")
else
  echo "SKIP jit_bench: not in $bindir (built with the compiler: build/tests/gpu/jit_bench)" |
    tee -a "$out/jit.log"
fi
: >"$out/examples.log"
for program in host_jit host_aot gpu_aot_variants; do
  if [ -x "$bindir/$program" ]; then
    echo "== $program" | tee -a "$out/examples.log"
    TILEC_CACHE_DIR="$out/jit-cache" "$bindir/$program" 2>&1 | tee -a "$out/examples.log"
    ex_rc=${PIPESTATUS[0]}
    [ "$ex_rc" -eq 0 ] || failures+=("$program (exit $ex_rc)")
  else
    echo "SKIP $program: not in $bindir (built with the compiler: build/examples or build/tests/gpu)" |
      tee -a "$out/examples.log"
  fi
done

{
  if [ ${#failures[@]} -eq 0 ]; then
    echo "run.sh: PASS"
  else
    echo "run.sh: FAIL: ${failures[*]}"
  fi
} | tee "$out/summary.txt"
[ ${#failures[@]} -eq 0 ]
