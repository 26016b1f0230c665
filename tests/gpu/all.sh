#!/usr/bin/env bash
# tests/gpu/all.sh: the whole GPU acceptance run in one command, for a lent GPU machine.
#
#   tests/gpu/all.sh TILEC BINDIR OUTDIR [--quick | --sanitize] [--part 1 | --part 2 | --part 3]
#
# Runs, in order, gpu_conform (the conformance matrix of copies and layouts, sm_90a and sm_80 code;
# needs BINDIR/gpu_conform), gpu_levels (the GPU's results against the interpreter's on every example,
# stdlib and golden kernel, the puzzles' reference solutions and random conformance kernels), sass_rega.sh (the
# SASS of the stdlib's register-A wgmma kernels), tests/gpu/run.sh (the examples: correctness, bandwidth, JIT), rows.sh
# (softmax, RMSNorm, LayerNorm), gemm.sh (tensor-core GEMM against cuBLAS) and attention.py
# --check-only (stdlib/attention.tl against float64 references), atomics.py --check-only and tutorials.py
# (docs/tutorials' kernels against torch), each with its own working folder
# under $TMPDIR, then copies their summaries into OUTDIR (up to eleven files, flat) and all of them,
# one after the other under a `==== NAME` line, into OUTDIR/all.txt: a device that returns few
# files (the lent H200: 8) may drop some; ask for all.txt first.  --quick skips the
# largest correctness shapes of rows.sh and gemm.sh.  --sanitize runs tests/gpu/sanitize.sh instead:
# every example and stdlib kernel and a sample of the conformance matrix at small shapes under
# compute-sanitizer's memcheck, racecheck, synccheck and initcheck (sanitize.txt, sanitize.log).
# --part 1 runs gpu_conform, gpu_levels and sass_rega.sh only, --part 2 run.sh, rows.sh and gemm.sh,
# --part 3 attention.py, atomics.py and tutorials.py: the whole --quick run takes more than the lent
# machine's 600 s a call (on an H100 in session 37, 470 s reached the middle of run.sh; in session 43
# part 1 took about 290 s and run.sh, rows.sh and gemm.sh under 210 s, in session 44 part 3 166 s),
# so it takes three calls, or two with a longer budget.  Each part's seconds go to the log.
# Exit status: 0 if every part passed.
set -u -o pipefail
# shellcheck source=script_common.sh
source "$(dirname "$0")/script_common.sh"
[ $# -ge 3 ] || usage
tilec=$1 bindir=$2 out=$3
quick=() part=all
shift 3
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=(--quick) ;;
    --sanitize)
      "$(cd "$(dirname "$0")" && pwd)/sanitize.sh" "$tilec" "$bindir" "$out"
      exit $? ;;
    --part) case ${2:-} in 1 | 2 | 3) part=$2; shift ;; *) echo "all.sh: --part takes 1, 2 or 3" >&2; exit 2 ;; esac ;;
    *) echo "all.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tilec-gpu.XXXXXX")
mkdir -p "$out"
status=0

mkdir -p "$work/conform"
if [ "$part" = all ] || [ "$part" = 1 ]; then
if [ -x "$bindir/gpu_conform" ]; then
  "$bindir/gpu_conform" --threads "$(nproc)" >"$work/conform/conform.log" 2>&1 || status=1
  tail -12 "$work/conform/conform.log"
else
  echo "all.sh: $bindir/gpu_conform not found" | tee "$work/conform/conform.log"; status=1
fi
# The GPU against the interpreter (docs/interpreter.md): every kernel of examples/, stdlib/ and the
# golden tests, the puzzles' reference solutions (docs/puzzles/), and random conformance kernels, at small random shapes; the summary joins conform.log.
if [ -x "$bindir/gpu_levels" ]; then
  mkdir -p "$work/levels_random"
  { "$bindir/gpu_levels" --root "$here/../.." &&
    "$bindir/gpu_levels" --dir "$here/../../docs/puzzles/solutions" &&
    "$bindir/gpu_conform" --random 100 --dump "$work/levels_random" &&
    "$bindir/gpu_levels" --dir "$work/levels_random"; } >"$work/conform/levels.log" 2>&1 || status=1
  grep -E "^FAIL|gpu_levels:|gpu_conform:" "$work/conform/levels.log" | head -40 | tee -a "$work/conform/conform.log"
else
  echo "all.sh: $bindir/gpu_levels not found" | tee -a "$work/conform/conform.log"; status=1
fi
# The SASS of every stdlib kernel with a register A operand: no write to A's registers while its
# multiply is in flight (ptxas does not protect them; docs/language.md)
if command -v cuobjdump >/dev/null; then
  "$here/sass_rega.sh" "$tilec" "$work/conform/sass_rega.txt" || status=1
  grep -E ", [1-9][0-9]* writes|failed" "$work/conform/sass_rega.txt" | head -20 | tee -a "$work/conform/conform.log"
  grep -c ", 0 writes" "$work/conform/sass_rega.txt" | sed 's/^/sass_rega: kernels clean: /' | tee -a "$work/conform/conform.log"
fi
echo "all.sh: part 1 took $SECONDS s" | tee -a "$work/conform/conform.log"
fi
if [ "$part" = all ] || [ "$part" = 2 ]; then
start=$SECONDS
"$here/run.sh" "$tilec" "$bindir" "$work/examples" || status=1
"$here/rows.sh" --ptx-dir "$work/rows_ptx" "$tilec" "$bindir" "$work/rows" "${quick[@]}" || status=1
"$here/gemm.sh" --ptx-dir "$work/gemm_ptx" "$tilec" "$bindir" "$work/gemm" "${quick[@]}" || status=1
echo "all.sh: run.sh, rows.sh and gemm.sh took $((SECONDS - start)) s" | tee "$work/part2.txt"
fi
if [ "$part" = all ] || [ "$part" = 3 ]; then
start=$SECONDS
# stdlib/attention.tl and examples/flash_attention.tl against float64 references (torch on the GPU;
# exit 2, no torch, is not a failure here)
(abs=$(readlink -f "$tilec") && cd "$here" && python3 attention.py "$abs" "$work/attention" --check-only >"$work/attention.log" 2>&1)
case $? in 0 | 2) ;; *) status=1 ;; esac
grep -E "cases|WRONG" "$work/attention.log" | head -20
# atomics (tests/golden/atomics.tl, stdlib gemm_splitk) against torch
(abs=$(readlink -f "$tilec") && cd "$here" && python3 atomics.py "$abs" "$work/atomics" --check-only >"$work/atomics.log" 2>&1)
case $? in 0 | 2) ;; *) status=1 ;; esac
grep -cE "\| ok \|" "$work/atomics.log" | sed 's/^/atomics: cases ok: /'
grep -E "WRONG" "$work/atomics.log" | head -20
# the numbered tutorials' kernels (docs/tutorials/00-06) against torch, with their timings
(abs=$(readlink -f "$tilec") && cd "$here" && python3 tutorials.py "$abs" "$work/tutorials" --reps 20 >"$work/tutorials.log" 2>&1)
case $? in 0 | 2) ;; *) status=1 ;; esac
grep -E "WRONG|FAIL" "$work/tutorials.log" | head -20
echo "all.sh: attention.py, atomics.py and tutorials.py took $((SECONDS - start)) s" | tee -a "$work/part2.txt"
fi

: >"$out/all.txt"
for f in conform/conform.log examples/suite.log examples/bench.txt examples/jit.txt rows/rows.log rows/rows_bench.txt \
         gemm/gemm.log gemm/gemm_bench.txt attention/attention.md atomics/atomics.md tutorials/tutorials.md part2.txt; do
  [ -f "$work/$f" ] || continue
  cp "$work/$f" "$out/"
  printf '==== %s\n' "$f" >>"$out/all.txt"
  cat "$work/$f" >>"$out/all.txt"
done
echo "all.sh: $( [ $status -eq 0 ] && echo PASS || echo FAIL ) (logs in $out)"
exit $status
