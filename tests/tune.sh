#!/usr/bin/env bash
# tune.sh ROOT: `tilec tune` on the CPU device (TILEC_DEVICE=cpu, no GPU needed): the table of every
# combination of --try values, the ones that do not compile with their error, the winner's -D line,
# the budget, and the usage errors. Timing on the interpreter means nothing, so no test reads a time.
set -u
root=$1
: "${TILEC:?}"
export TILEC_DEVICE=cpu TILEC_CACHE_DIR=${TMPDIR:-/tmp}/tilec-tune-test-$$
tmp=$(mktemp -d); trap 'rm -rf "$tmp" "$TILEC_CACHE_DIR"' EXIT
fail=0
ok() { if "$@" >"$tmp/o" 2>"$tmp/e"; then echo "ok   $*"; else echo "FAIL (status $?) $*"; cat "$tmp/e"; fail=1; fi; }
bad() { # expected status, text on stderr, command...
  local want=$1 pat=$2; shift 2
  "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  if [ $rc -eq "$want" ] && grep -qF -- "$pat" "$tmp/e"; then echo "ok   (status $rc) $*"
  else echo "FAIL $* -> status $rc, want $want and '$pat'; stderr:"; cat "$tmp/e"; fail=1; fi
}
has() { grep -qF -- "$1" "$tmp/o" || { echo "FAIL: output lacks '$1'"; cat "$tmp/o"; fail=1; }; }
count() { local n; n=$(grep -cE -- "$1" "$tmp/o"); [ "$n" -eq "$2" ] || { echo "FAIL: $n lines match '$1', want $2"; cat "$tmp/o"; fail=1; }; }
tune() { "$TILEC" tune "$@"; }

cat >"$tmp/scale.tl" <<'TL'
kernel scale[BLOCK = 1024, THREADS = 128](X: f32[N], Y: f32[N]) grid(ceildiv(N, BLOCK)) as (b) threads(THREADS) {
    let x = alloc_fragment([BLOCK], f32);
    copy(X[b * BLOCK], x);
    for i in parallel(BLOCK) {
        x[i] = x[i] * 2.0;
    }
    copy(x, Y[b * BLOCK]);
}
TL
ok tune "$tmp/scale.tl" --size N=3000 --try BLOCK=256,1024 --try THREADS=64,128,4096 --reps 1 --jobs 2
has 'at N=3000: 6 candidates, median of 1 runs each'
count '^\| [1-4] \| BLOCK=(256|1024) THREADS=(64|128) \|' 4                   # four ran, ranked
count 'THREADS=4096 .*error: the thread count must be between 1 and 1024, got 4096' 2
grep -qE '^best: -D BLOCK=(256|1024) -D THREADS=(64|128)  \(' "$tmp/o" || { echo "FAIL: no best line"; cat "$tmp/o"; fail=1; }
# --save: the winner becomes the kernel's tuning result (tests/unit/test_cpu_device.c checks that
# later launches use it)
ok tune "$tmp/scale.tl" --size N=3000 --try THREADS=64,128 --reps 1 --save
has "saved in $TILEC_CACHE_DIR/tune: launches of 'scale' through the JIT"
ls "$TILEC_CACHE_DIR"/tune/*.tltune >/dev/null 2>&1 || { echo "FAIL: no tuning file"; fail=1; }
grep -qE '^N=4096 THREADS=(64|128)$' "$TILEC_CACHE_DIR"/tune/*.tltune || { echo "FAIL: the file lacks N=4096"; cat "$TILEC_CACHE_DIR"/tune/*; fail=1; }
TILEC_CACHE_DIR= HOME= XDG_CACHE_HOME= bad 1 '--save: the cache has no folder to keep tuning results in' \
  tune "$tmp/scale.tl" --size N=3000 --try THREADS=64 --reps 1 --save
# the same table order in --deterministic runs, apart from the times
ok tune "$tmp/scale.tl" --size N=3000 --try BLOCK=256,1024 --deterministic --reps 1
has '(1 threads:'
# launch constants follow --size: the candidates compile for these sizes
cat >"$tmp/rows.tl" <<'TL'
kernel rows[BN = min(next_pow2(N), 4096), THREADS = 64](X: f32[M, N], Y: f32[M, N]) grid(M) as (r) threads(THREADS) {
    let x = alloc_fragment([BN], f32);
    for k in serial(ceildiv(N, BN)) {
        copy(X[r, k * BN], x);
        copy(x, Y[r, k * BN]);
    }
}
TL
ok tune "$tmp/rows.tl" --size M=3,N=100 --try THREADS=32,64 --reps 1
count '^\| [12] \| THREADS=' 2
# a budget that runs out: what was not reached is listed (the first candidate always runs)
ok tune "$tmp/scale.tl" --size N=3000 --try BLOCK=256,512,1024,2048 --try THREADS=32,64,128,256 --budget 0.001 --jobs 1 --reps 1
has 'not tried (budget)'
count '^\| 1 \| BLOCK=256 THREADS=32 \|' 1
# nothing compiles: exit 1
bad 1 'no candidate compiled and ran' tune "$tmp/scale.tl" --size N=3000 --try THREADS=0,2048
# a --try for a constant the kernel lacks: every candidate says so
bad 1 'no candidate compiled and ran' tune "$tmp/scale.tl" --size N=3000 --try NOPE=1,2
has "warning: -D NOPE: no kernel has a constant of that name"
# usage errors
bad 1 'nothing to tune: give candidates with --try' tune "$tmp/scale.tl" --size N=10
bad 1 "--try needs NAME=V1,V2,..., got 'BLOCK='" tune "$tmp/scale.tl" --try BLOCK=
bad 1 "--try needs NAME=V1,V2,..., got 'BLOCK=1,,2'" tune "$tmp/scale.tl" --try BLOCK=1,,2
bad 1 '--try BLOCK is given twice' tune "$tmp/scale.tl" --try BLOCK=1 --try BLOCK=2
bad 1 "the size N of 'X' is not given: --size N=N" tune "$tmp/scale.tl" --try BLOCK=256
bad 1 "--size needs NAME=N[,NAME=N...], got 'N=1,M'" tune "$tmp/scale.tl" --size N=1,M --try BLOCK=256
bad 1 "--reps needs a count from 1 to 100000, got '0'" tune "$tmp/scale.tl" --reps 0 --try BLOCK=256
bad 1 "--budget needs a number of seconds above 0, got '-1'" tune "$tmp/scale.tl" --budget -1 --try BLOCK=256
v=$(seq -s, 1 17)
bad 1 'more than 4096 combinations' tune "$tmp/scale.tl" --try A=$v --try B=$v --try C=$v
bad 1 "unknown option '--bogus'" tune "$tmp/scale.tl" --bogus
TILEC_DEVICE=gpu TILEC_CUDA_LIBRARY=/nonexistent/libcuda.so.1 bad 1 'no device to time on' tune "$tmp/scale.tl" --size N=10 --try BLOCK=256
# views (strides(...)): fixed strides and stride sizes from --size, the others contiguous
ok tune "$root/tests/golden/strides.tl" --kernel scatter --size N=300,R=5 --try S=3
has 'best: -D S=3'
ok tune "$root/tests/golden/strides.tl" --kernel pad_copy --size M=40,N=70,lda=80 --try BN=32,64
ok tune "$root/tests/golden/strides.tl" --kernel pad_copy --size M=40,N=70 --try BN=32
[ $fail -eq 0 ] && echo "tune.sh: all passed"
exit $fail
