#!/usr/bin/env bash
# tests/fuzz/run.sh: builds the libFuzzer targets (tests/fuzz/CMakeLists.txt, clang-19, ASan + UBSan)
# and runs them for a bounded time; fails on any crash, sanitizer report, timeout, out-of-memory,
# broken library contract (fuzz_compile.c, fuzz_meta.c) or PTX that ptxas rejects.
#
#   tests/fuzz/run.sh [--ci]           CI: 90 s of fuzz_compile beside 45 s of fuzz_meta then 45 s of
#                                      fuzz_interp (the interpreter's two levels against each other)
#   tests/fuzz/run.sh --long 4h        hours (s, m or h): 75% fuzz_compile, 12% fuzz_meta, 13%
#                                      fuzz_interp, going on after a finding, --jobs N fuzzing
#                                      processes (default 1)
#   tests/fuzz/run.sh --replay         build, replay the seeds and the regressions, assemble; no fuzzing
#
# Options: --compile-time S, --meta-time S and --interp-time S (seconds, override the mode's split), --jobs N,
# --build DIR (default build-fuzz), --keep (keep the CI's corpus of earlier runs; --long always does).
#
# What it does, in order:
#   1. configures and builds DIR (once; ninja rebuilds what changed);
#   2. seeds.py writes the seed corpora and dictionaries from the tree (every .tl, the ```tl blocks of
#      docs/, the metadata blocks of the PTX the seeds compile to);
#   3. replays every seed (each must run clean; the PTX goes to ptxas in step 6) and every input of
#      tests/fuzz/regressions/ (each must run clean: the bugs they found stay fixed);
#   4. fuzzes fuzz_compile and fuzz_meta (side by side when there are two CPUs) with the seeds that
#      compile in under a second (the others would set the pace), the dictionaries and the custom
#      token mutator, into DIR/fuzz/corpus/ (--long; kept) or DIR/fuzz/corpus-ci/ (emptied first);
#      a long run then replays its corpus with leak checks;
#   5. prints each target's executions and coverage (libFuzzer's cov: edges, ft: features);
#   6. assembles every PTX the compiler accepted during the run with ptxas -arch=ITS_ARCH
#      (/usr/local/cuda/bin/ptxas or on PATH; skipped with a note when there is none).
# Findings are under DIR/fuzz/run/artifacts/: libFuzzer's crash-/timeout-/oom- files, and for ptxas
# rejections the input and its PTX.  Turn each into a regression (tests/fuzz/README.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

mode=ci build=build-fuzz jobs=1 keep=0 compile_time= meta_time= interp_time= long=
while [ $# -gt 0 ]; do
  case $1 in
    --ci) mode=ci ;;
    --long) mode=long; long=${2:?--long needs a duration}; shift ;;
    --replay) mode=replay ;;
    --jobs) jobs=${2:?}; shift ;;
    --build) build=${2:?}; shift ;;
    --keep) keep=1 ;;
    --compile-time) compile_time=${2:?}; shift ;;
    --meta-time) meta_time=${2:?}; shift ;;
    --interp-time) interp_time=${2:?}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

seconds() { # 90, 90s, 15m, 4h
  case $1 in
    *h) echo $(( ${1%h} * 3600 )) ;; *m) echo $(( ${1%m} * 60 )) ;; *s) echo "${1%s}" ;; *) echo "$1" ;;
  esac
}
case $mode in
  ci) : "${compile_time:=90}" "${meta_time:=45}" "${interp_time:=45}" ;;
  long) total=$(seconds "$long"); keep=1
        : "${compile_time:=$(( total * 75 / 100 ))}" "${meta_time:=$(( total * 12 / 100 ))}"
        : "${interp_time:=$(( total - total * 75 / 100 - total * 12 / 100 ))}" ;;
  replay) compile_time=0 meta_time=0 interp_time=0 ;;
esac

ncpu=$(nproc 2>/dev/null || echo 2)
failures=$(mktemp); trap 'rm -f "$failures"' EXIT
fail() { echo "$1" >>"$failures"; echo "FAIL: $1"; } # also from the fuzzers' subshells
t_start=$(date +%s)
log() { printf '[fuzz %4ds] %s\n' $(( $(date +%s) - t_start )) "$*"; }

# ------------------------------------------------------------------------------------- 1. build
CC_FUZZ=${CC_FUZZ:-clang-19} CXX_FUZZ=${CXX_FUZZ:-clang++-19}
if ! command -v "$CC_FUZZ" >/dev/null; then
  echo "run.sh: $CC_FUZZ not found; install clang-19 and libclang-rt-19-dev (.ci/install-deps.sh)" >&2
  exit 1
fi
t0=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
    >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; echo "run.sh: cmake failed" >&2; exit 1; }
  rm -f "$build.configure.log"
fi
if ! ninja -C "$build" fuzz_compile fuzz_meta fuzz_interp >"$build.build.log" 2>&1; then
  tail -40 "$build.build.log"; echo "run.sh: the build failed" >&2; exit 1
fi
rm -f "$build.build.log"
log "build: $(( $(date +%s) - t0 )) s"

work=$build/fuzz
run=$work/run
corpus=$work/corpus # --long's, kept from run to run; the CI's starts empty each time
[ "$mode" = long ] || corpus=$work/corpus-ci
rm -rf "$run"
[ "$keep" = 1 ] || rm -rf "$corpus"
mkdir -p "$run/ptx" "$run/artifacts" "$run/seeds" "$corpus/compile" "$corpus/meta" "$corpus/interp"
# Short allocation stacks and a small quarantine: a quarter faster, and a finding is replayed in
# full anyway (build-fuzz/fuzz_compile FILE, or ctest's fuzz.regressions).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:malloc_context_size=4:quarantine_size_mb=32}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TILEC_FUZZ_PTX_DIR=$run/ptx TILEC_FUZZ_STATS=1
fuzz_compile=$build/fuzz_compile fuzz_meta=$build/fuzz_meta
# Limits: a 30 s input is a hang; 4 GB of RSS or a single 2 GB allocation is a runaway.  (An input
# that takes 10 s is not a finding: libFuzzer's default -report_slow_units=10 wrote one in CI on
# 2026-12-01 for a golden attention kernel that compiles in 0.5 s unsanitized and 2.3 s under ASan,
# its 10 s under ASan, coverage and a second fuzzer on the same two cores.)
limits=(-timeout=30 -report_slow_units=30 -rss_limit_mb=4096 -malloc_limit_mb=2048)

# -------------------------------------------------------------------------------------- 2. seeds
python3 tests/fuzz/seeds.py compile "$root" "$run/seeds" || exit 1

# ------------------------------------------------------------------------------------- 3. replay
# Seeds in batches of 8 on ncpu processes, with a generous timeout: some stdlib kernels take seconds
# under ASan.  libFuzzer stops a batch at its first finding, so a batch that fails is run again one
# seed at a time, to name every seed that fails.  "Executed FILE in N ms" gives each seed's time.
replay_batch() { # $1: a log file; the rest: input files
  local logf=$1; shift
  if ! "$fuzz_compile" -timeout=120 -rss_limit_mb=4096 "$@" >"$logf" 2>&1; then
    for f in "$@"; do
      "$fuzz_compile" -timeout=120 -rss_limit_mb=4096 "$f" >>"$logf.one" 2>&1 || echo "$f" >>"$logf.failed"
    done
    grep -h '^Executed ' "$logf.one" >>"$logf"
  fi
}
export -f replay_batch; export fuzz_compile
log "replaying $(ls "$run/seeds/compile" | wc -l) seeds"
mkdir -p "$run/replay"
ls "$run/seeds/compile"/* | xargs -n 8 -P "$ncpu" bash -c 'replay_batch "$0/replay/$$.log" "$@"' "$run"
mkdir -p "$run/seeds/compile-fast"
for f in $(cat "$run"/replay/*.failed 2>/dev/null); do
  fail "seed $f does not replay cleanly: $fuzz_compile $f"
done
cat "$run"/replay/*.one 2>/dev/null | grep -E '^==[0-9]+==ERROR|^SUMMARY|broke its contract|runtime error' | head -10
awk '/^Executed / && $4 < 1000 { print $2 }' "$run"/replay/*.log | sort -u | xargs -r cp -t "$run/seeds/compile-fast"
log "seeds: $(ls "$run/seeds/compile-fast" | wc -l) compile in under 1 s and seed the fuzzing"

# Regressions: one process each, so that every failing one is named.
nreg=0
for target in compile meta; do
  for f in tests/fuzz/regressions/$target/*; do
    [ -f "$f" ] || continue
    case $f in *.md|*.txt) continue ;; esac
    nreg=$((nreg + 1))
    bin=$fuzz_compile; [ $target = meta ] && bin=$fuzz_meta
    if ! "$bin" "${limits[@]}" "$f" >"$run/regression.log" 2>&1; then
      fail "regression $f"
      grep -vE '^(INFO|Running|Executed|\*\*\*)' "$run/regression.log" | head -40
    fi
  done
done
log "regressions: $nreg replayed"

python3 tests/fuzz/seeds.py meta "$root" "$run/ptx" "$run/seeds" || exit 1

# ------------------------------------------------------------------------------------ 4. fuzzing
# $1 target, $2 seconds, $3 seed folder, $4 dictionary.  CI stops at the first finding; long runs
# use libFuzzer's fork mode (--jobs processes), which records a finding and goes on.
fuzz() {
  local target=$1 secs=$2 seeds=$3 dict=$4 bin=$build/$1
  local logf=$run/$target.log extra=() dir=$corpus/${target#fuzz_}
  # Leak checks: LLVM keeps caches that grow, so a compile allocates more than it frees and libFuzzer
  # would run LSan's heap scan after every new input, for a quarter of the executions.  So none while
  # fuzzing; the seeds are replayed with them, and a long run replays its whole corpus with them.
  [ "$mode" = long ] && extra=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  log "$target: fuzzing for $secs s"
  "$bin" "${limits[@]}" -max_total_time="$secs" -print_final_stats=1 -dict="$dict" -detect_leaks=0 \
    -artifact_prefix="$run/artifacts/$target-" "${extra[@]}" "$dir" "$seeds" >"$logf" 2>&1
  local rc=$? found
  if [ "$mode" = long ] && [ $rc -eq 0 ]; then
    log "$target: replaying the corpus ($(ls "$dir" | wc -l) inputs) with leak checks"
    "$bin" "${limits[@]}" -runs=0 -detect_leaks=1 -artifact_prefix="$run/artifacts/$target-" "$dir" \
      >"$logf.leaks" 2>&1 || rc=$?
  fi
  found=$(find "$run/artifacts" -name "$target-*" | wc -l)
  if [ $rc -ne 0 ] || [ "$found" -gt 0 ]; then
    fail "$target: exit status $rc, $found finding(s) (log: $logf)"
    grep -hE '^==[0-9]+==ERROR|^SUMMARY|broke its contract|ERROR: libFuzzer|Test unit written|^artifact_prefix' \
      "$logf" "$logf.leaks" 2>/dev/null | tail -12
  fi
}

# One after the other with one CPU or --jobs; side by side otherwise (each fuzzer is one process).
# fuzz_interp takes fuzz_compile's inputs: the same seeds and dictionary.
if [ "$ncpu" -ge 2 ] && [ "$jobs" -eq 1 ]; then
  [ "$compile_time" -gt 0 ] && fuzz fuzz_compile "$compile_time" "$run/seeds/compile-fast" "$run/seeds/tl.dict" &
  {
    [ "$meta_time" -gt 0 ] && fuzz fuzz_meta "$meta_time" "$run/seeds/meta" "$run/seeds/meta.dict"
    [ "$interp_time" -gt 0 ] && fuzz fuzz_interp "$interp_time" "$run/seeds/compile-fast" "$run/seeds/tl.dict"
  } &
  wait
else
  [ "$compile_time" -gt 0 ] && fuzz fuzz_compile "$compile_time" "$run/seeds/compile-fast" "$run/seeds/tl.dict"
  [ "$meta_time" -gt 0 ] && fuzz fuzz_meta "$meta_time" "$run/seeds/meta" "$run/seeds/meta.dict"
  [ "$interp_time" -gt 0 ] && fuzz fuzz_interp "$interp_time" "$run/seeds/compile-fast" "$run/seeds/tl.dict"
fi

# -------------------------------------------------------------------------------------- 5. report
report() { # the last libFuzzer statistics of a log
  local logf=$1
  [ -f "$logf" ] || return 0
  local execs rate cov ft corp rss
  execs=$(grep -h 'stat::number_of_executed_units' "$logf" | awk '{s += $2} END {print s + 0}')
  rate=$(grep -h 'stat::average_exec_per_sec' "$logf" | tail -1 | awk '{print $2}')
  rss=$(grep -h 'stat::peak_rss_mb' "$logf" | tail -1 | awk '{print $2}')
  cov=$(grep -oE 'cov: [0-9]+' "$logf" | tail -1 | awk '{print $2}')
  ft=$(grep -oE 'ft: [0-9]+' "$logf" | tail -1 | awk '{print $2}')
  corp=$(grep -oE 'corp: [0-9]+(/[0-9]+[a-zA-Z]*)?' "$logf" | tail -1 | awk '{print $2}')
  if [ "$mode" = long ]; then # fork mode: "#N: cov: ... exec/s: E"
    execs=$(grep -oE '^#[0-9]+' "$logf" | tail -1 | tr -d '#')
    rate=$(grep -oE 'exec/s: [0-9]+' "$logf" | tail -1 | awk '{print $2}')
  fi
  printf '%-13s executions %-9s exec/s %-6s cov %-6s ft %-7s corpus %-12s peak RSS %s MB\n' \
    "$(basename "$logf" .log)" "${execs:-0}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${rss:-?}"
  grep -h '^fuzz_compile: accepted' "$logf" | grep -v 'ptx 0/0 llvm 0/0' | tail -1 | sed 's/^/              /'
  # the sum of the processes' lines; --long's fork mode keeps its workers' output out of this log
  # and its parent runs no kernel, so it has no line to show (like fuzz_compile's above)
  grep -h '^fuzz_interp: [0-9]* kernels' "$logf" |
    awk '{k += $2; b += $4; a += $9} END {if (k) printf "              fuzz_interp: %d kernels, %d ran at both levels, %d agreed\n", k, b, a}'
}

# -------------------------------------------------------------------------------------- 6. ptxas
PTXAS=${PTXAS:-}
[ -n "$PTXAS" ] || PTXAS=$(command -v ptxas || true)
[ -n "$PTXAS" ] || { [ -x /usr/local/cuda/bin/ptxas ] && PTXAS=/usr/local/cuda/bin/ptxas; }
nptx=$(find "$run/ptx" -name '*.ptx' | wc -l)
if [ -z "$PTXAS" ]; then
  log "ptxas: not found, $nptx PTX files not assembled"
elif [ "$nptx" -gt 0 ]; then
  log "ptxas: assembling $nptx PTX files"
  find "$run/ptx" -name '*.ptx' -print0 | xargs -0 -r -n 1 -P "$ncpu" sh -c '
    f=$1; arch=${f%.ptx}; arch=${arch##*.}
    if ! "$0" -arch="$arch" "$f" -o /dev/null >"$f.ptxas" 2>&1; then echo "$f" >>"${f%/*}/rejected"; fi
  ' "$PTXAS"
  if [ -f "$run/ptx/rejected" ]; then
    while read -r f; do
      base=$(basename "$f" .ptx)
      cp "$f" "$run/artifacts/ptxas-$base.ptx"
      cp "${f%.ptx}.input" "$run/artifacts/ptxas-$base.input"
      fail "ptxas rejects the PTX of $run/artifacts/ptxas-$base.input: $(head -c 300 "$f.ptxas" | tr '\n' ' ')"
    done <"$run/ptx/rejected"
  fi
fi

echo
echo "==== fuzzing: $mode mode, $(( $(date +%s) - t_start )) s in all"
report "$run/fuzz_compile.log"
report "$run/fuzz_meta.log"
report "$run/fuzz_interp.log"
echo "seeds replayed: $(ls "$run/seeds/compile" | wc -l) compile, regressions replayed: $nreg," \
     "PTX assembled: ${nptx} (${PTXAS:-no ptxas})"
arts=$(find "$run/artifacts" -type f | wc -l)
[ "$arts" -eq 0 ] || { echo "findings in $run/artifacts:"; ls -1 "$run/artifacts" | sed 's/^/  /'; }
if [ -s "$failures" ]; then
  echo "FAILED ($(wc -l <"$failures")):"
  sed 's/^/  /' "$failures"
  exit 1
fi
echo "OK"
