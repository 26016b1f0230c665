#!/usr/bin/env bash
# cli.sh EXAMPLES_DIR: the command line's options and their errors.
set -u
ex=$1
: "${TILEC:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { if "$@" >"$tmp/o" 2>"$tmp/e"; then echo "ok   $*"; else echo "FAIL (status $?) $*"; cat "$tmp/e"; fail=1; fi; }
# Every pattern is an exact substring (grep -F). A failing command writes nothing to stdout.
bad() { # expected status, text on stderr, command...
  local want=$1 pat=$2; shift 2
  "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  if [ $rc -eq "$want" ] && grep -qF -- "$pat" "$tmp/e" && { [ "$want" -eq 0 ] || [ ! -s "$tmp/o" ]; }; then
    echo "ok   (status $rc) $*"
  else echo "FAIL $* -> status $rc, want $want and '$pat'; stderr:"; cat "$tmp/e"; fail=1; fi
}
# has TEXT [FILE]: FILE (default: the last command's stdout) contains TEXT; lacks: does not.
has() { grep -qF -- "$1" "${2:-$tmp/o}" || { echo "FAIL: ${2:-output} lacks '$1'"; fail=1; }; }
lacks() { ! grep -qF -- "$1" "${2:-$tmp/o}" || { echo "FAIL: ${2:-output} has '$1'"; fail=1; }; }
quiet() { [ ! -s "$tmp/o" ] || { echo "FAIL: stdout not empty with -o FILE"; fail=1; }; }

ok "$TILEC" --help; has 'usage: tilec [options] FILE.tl'; has '--dump-after=PASS'
ok "$TILEC" --version; has 'tilec 0'
ok "$TILEC" "$ex/vector_add.tl" -o "$tmp/va.ptx"; quiet
has '.target sm_90a' "$tmp/va.ptx"          # the default arch
has '.visible .entry vector_add(' "$tmp/va.ptx"
ok "$TILEC" --arch=sm_80 "$ex/vector_add.tl" -o -; has '.target sm_80'
ok "$TILEC" --arch sm_86 "$ex/vector_add.tl" -o -; has '.target sm_86'
ok "$TILEC" -D BLOCK=1024 "$ex/vector_add.tl" -o -; has 'tilec-meta grid 0 N 1024 ceildiv'
ok "$TILEC" -DBLOCK=2048 "$ex/vector_add.tl" -o -; has 'tilec-meta grid 0 N 2048 ceildiv'
ok "$TILEC" --kernel gelu_bf16 "$ex/gelu.tl" -o -; has '.entry gelu_bf16'
lacks 'gelu_f16'                            # --kernel keeps no other kernel
emit() { ok "$TILEC" --emit="$1" "$ex/saxpy.tl" -o -; has "$2"; }
emit tokens "2:1 keyword 'kernel'"
emit ast 'Kernel saxpy @2:8'
emit tir '// ---- after plan-shared'
emit llvm 'define ptx_kernel void @saxpy(ptr %X, ptr %Y, ptr %Z, float %a, i32 %N)'
emit ptx '.visible .entry saxpy('
emit header 'CUresult saxpy_launch(CUstream stream, float *X, float *Y, float *Z, float a, int32_t N);'
emit report 'kernel saxpy (sm_90a)'
# --emit=report: --gpu, --time-us, num_sms (tests/report/ checks the figures, tests/diag/report_* the
# other usage errors)
ok "$TILEC" --emit=report --gpu a100 "$ex/gelu.tl"; has 'roofline of gelu_f16 on the NVIDIA A100 SXM 80GB'
has 'roofline of gelu_bf16 on'; has 'not known: give every size with --size'
ok "$TILEC" --emit=report --gpu=l40s --time-us=3 --kernel gelu_f16 --size N=65536 "$ex/gelu.tl"
has 'measured 3 us:'
bad 1 "tilec: error: --time-us is the time of one kernel, but the report has 2; choose one with --kernel NAME" \
  "$TILEC" --emit=report --gpu=h100 --time-us=3 "$ex/gelu.tl"
bad 1 "tilec: error: --time-us needs a time in microseconds greater than 0, got '0'" \
  "$TILEC" --emit=report --gpu=h100 --time-us=0 "$ex/gelu.tl"
bad 1 "error: num_sms is a multiprocessor count from 1 to 65535, got '0'" \
  "$TILEC" --emit=report --size num_sms=0 "$ex/gelu.tl"
ok "$TILEC" --emit=llvm "$ex/saxpy.tl"; has 'define ptx_kernel void @saxpy('   # stdout by default
ok "$TILEC" -O0 "$ex/saxpy.tl" -o "$tmp/o0.ptx"; quiet; has '.visible .entry saxpy(' "$tmp/o0.ptx"
ok "$TILEC" "$ex/saxpy.tl" -o "$tmp/o3.ptx"
cmp -s "$tmp/o0.ptx" "$tmp/o3.ptx" && { echo "FAIL: -O0 gives the PTX of -O3"; fail=1; }
ok "$TILEC" --dump-after=layout "$ex/saxpy.tl" -o "$tmp/s.ptx"; quiet
has '// ---- after layout' "$tmp/e"; lacks 'after lower-tiles' "$tmp/e"; has '.visible .entry saxpy(' "$tmp/s.ptx"
# a step of the lower-tiles group, the group (its last step), and every group (what --emit=tir prints)
ok "$TILEC" --dump-after=choose-swizzles "$ex/matmul.tl" -o "$tmp/m.ptx"; has '// ---- after choose-swizzles' "$tmp/e"
has 'swizzled(128B)' "$tmp/e"; lacks 'after lower-tile-ops' "$tmp/e"
ok "$TILEC" --dump-after=lower-tiles "$ex/saxpy.tl" -o "$tmp/s.ptx"; has '// ---- after lower-tiles' "$tmp/e"
lacks 'after fold' "$tmp/e"; lacks 'after layout' "$tmp/e"
ok "$TILEC" --dump-after=groups "$ex/saxpy.tl" -o "$tmp/s.ptx"; has '// ---- after plan-shared' "$tmp/e"
lacks 'after fragments-to-locals' "$tmp/e"
ok "$TILEC" --dump-after=all "$ex/saxpy.tl" -o "$tmp/s.ptx"; has '// ---- after drop-scratch-barriers' "$tmp/e"
cp "$ex/saxpy.tl" "$tmp/copy.tl"; ok "$TILEC" "$tmp/copy.tl"; quiet
has '.visible .entry saxpy(' "$tmp/copy.ptx"  # the default output name: FILE.ptx beside the input
ok sh -c "cat '$ex/saxpy.tl' | '$TILEC' - -o -"; has '.visible .entry saxpy('

usage="(run 'tilec --help' for usage)"
bad 1 "tilec: error: unknown target 'sm_75'; expected sm_80, sm_86, sm_89, sm_90 or sm_90a" "$TILEC" --arch=sm_75 "$ex/saxpy.tl"
has "$usage" "$tmp/e"
bad 1 "tilec: error: unknown option '--frobnicate'" "$TILEC" --frobnicate "$ex/saxpy.tl"; has "$usage" "$tmp/e"
bad 1 "tilec: error: no input file" "$TILEC"; has "$usage" "$tmp/e"
# What docs/tutorials/05_matmul.md (section 7) and 07_hopper.md quote of the compiler's output for
# examples/matmul.tl: the variant for large sizes on sm_90a and sm_80, the copy engine's protocol,
# the roles' registers.
ok "$TILEC" "$ex/matmul.tl" -o -; has 'tilec-meta kernel matmul threads=384 smem=196672 '
ok "$TILEC" --arch=sm_80 --emit=tir "$ex/matmul.tl" -o -
has 'threads(256) smem(98304)'; has 'layout(mma, warps=2x4, frags=4x4)'
ok "$TILEC" --arch=sm_80 -D THREADS=128 --emit=tir "$ex/matmul.tl" -o -; has 'local acc: f32[128] layout(mma, warps=2x2'
ok "$TILEC" -D WS=0 --emit=tir "$ex/matmul.tl" -o -
has 'mbarrier.init mbar.46[0], count 1'; has 'mbarrier.init mbar.46[4], count 256'
has 'mbarrier.expect_tx mbar.46[0], bytes 49152'
# -D BM=64 where the sizes give 256-wide tiles: BK = 128 is for 64-row tiles at most 128 wide (64 x 256 x 128
# x 4 stages would need 320 KB of shared memory)
ok "$TILEC" -D BM=64 --size M=576,N=14336,K=4096 "$ex/matmul.tl" -o -; has 'tilec-meta const BK 64 '
ok "$TILEC" --emit=tir "$ex/matmul.tl" -o -; has 'setmaxnreg.dec 40'; has 'setmaxnreg.inc 232'
# A source of several kernels: one LLVM module per kernel, on threads; one PTX header, every kernel,
# and the same text whatever the number of threads (docs/compiler-api.md).
ok env TILEC_THREADS=1 "$TILEC" "$ex/../stdlib/norms.tl" -o "$tmp/norms1.ptx"
ok env TILEC_THREADS=3 "$TILEC" "$ex/../stdlib/norms.tl" -o "$tmp/norms3.ptx"
cmp -s "$tmp/norms1.ptx" "$tmp/norms3.ptx" || { echo "FAIL: the PTX depends on TILEC_THREADS"; fail=1; }
[ "$(grep -c '^\.version' "$tmp/norms3.ptx")" = 1 ] || { echo "FAIL: not one .version line"; fail=1; }
bad 0 "warning: TILEC_THREADS=two: not a whole number of at least 1; ignored" \
  env TILEC_THREADS=two "$TILEC" "$ex/../stdlib/norms.tl" -o "$tmp/norms2.ptx"
cmp -s "$tmp/norms1.ptx" "$tmp/norms2.ptx" || { echo "FAIL: a bad TILEC_THREADS changed the PTX"; fail=1; }
has '.visible .entry rmsnorm(' "$tmp/norms3.ptx"; has '.visible .entry layernorm(' "$tmp/norms3.ptx"
# What docs/tutorials/08_attention.md quotes: shared memory with P staged and in registers, the layouts
# of s and p, and the register-A wgmma.
ok "$TILEC" --emit=tir "$ex/../docs/tutorials/attention_staged.tl" -o -; has 'smem(65568)'
ok "$TILEC" --emit=tir "$ex/flash_attention.tl" -o -; has 'smem(49184)'
has 'fragment s: f32[128, 64] layout(mma, warps=8x1, frags=1x8)'
has 'fragment p: f16[128, 64] layout(mma, warps=8x1, frags=1x8)'
has 'wgmma.m64n64k16.f16 o[32] += p[(kk.'; has '* 8)] (registers) x Vs['; lacks 'ldmatrix'
# --bucket: variants in a header (docs/cli.md); a bucket the launch constants map to an earlier
# variant adds none; errors
ok "$TILEC" --emit=header --kernel softmax --bucket M=64,N=512 --bucket=M=8,N=4096 --bucket M=1,N=512 \
  "$ex/../stdlib/softmax.tl" -o "$tmp/sm.h"
has ' * 3 variants (--size and --bucket)' "$tmp/sm.h"; has 'static const char softmax_ptx_2[]' "$tmp/sm.h"
has 'static inline int softmax_variant(int32_t M, int32_t N)' "$tmp/sm.h"
has '--bucket M=64,N=512 --bucket M=8,N=4096 --bucket M=1,N=512' "$tmp/sm.h"
ok "$TILEC" --emit=header --bucket N=5 "$ex/vector_add.tl" -o "$tmp/va.h"   # no launch constants: one variant
lacks 'variant' "$tmp/va.h"
# --tma-only: the TMA forms alone, tmap_ok required; not with --emit=header, whose launchers pass
# tmap_ok = 0 when they cannot encode a map
ok "$TILEC" --tma-only "$ex/matmul.tl" -o -
has "tmap_ok tma.ok u32 required"
lacks "cp.async.cg"
bad 1 "error: --tma-only does not go with --emit=header" "$TILEC" --tma-only --emit=header "$ex/matmul.tl" -o -
bad 1 "tilec: error: --bucket makes variants for --emit=header" "$TILEC" --bucket N=5 "$ex/vector_add.tl" -o -
bad 1 "tilec: error: --bucket needs NAME=VALUE[,NAME=VALUE...], got 'N'" "$TILEC" --emit=header --bucket N \
  "$ex/vector_add.tl" -o -
bad 1 "error: bucket 2 (--bucket): --size N=5x: a size is an integer from 0 to 2147483647" "$TILEC" \
  --emit=header --bucket N=5 --bucket N=5x "$ex/vector_add.tl" -o -
bad 1 "tilec: error: more than one input file ('b.tl')" "$TILEC" a.tl b.tl; has "$usage" "$tmp/e"
bad 1 "tilec: error: cannot read '$tmp/none.tl': No such file or directory" "$TILEC" "$tmp/none.tl"
bad 1 "tilec: error: -D needs NAME=VALUE, got 'BLOCK'" "$TILEC" -D BLOCK "$ex/saxpy.tl"; has "$usage" "$tmp/e"
bad 1 "tilec: error: -o needs a file name" "$TILEC" "$ex/saxpy.tl" -o; has "$usage" "$tmp/e"
bad 1 "tilec: error: unknown --emit kind 'sass'; expected tokens, ast, tir, llvm, ptx, header or report" \
  "$TILEC" --emit=sass "$ex/saxpy.tl"
bad 1 "$ex/saxpy.tl: error: unknown pass 'nope' for dump-after" "$TILEC" --dump-after=nope "$ex/saxpy.tl" -o -
bad 1 "$ex/saxpy.tl: error: no kernel named 'nope'" "$TILEC" --kernel nope "$ex/saxpy.tl" -o -
bad 1 "tilec: error: cannot write '$tmp/no/such/dir/x.ptx': No such file or directory" \
  "$TILEC" "$ex/saxpy.tl" -o "$tmp/no/such/dir/x.ptx"
bad 0 "$ex/saxpy.tl: warning: -D NOPE: no kernel has a constant of that name" "$TILEC" -D NOPE=1 "$ex/saxpy.tl" -o -
has '.visible .entry saxpy('                # a warning, and the PTX still comes
# "-D BLOCK=64" quoted as one argument: the name would be " BLOCK", which names no constant; an error,
# not that warning, or the constant silently keeps its default (tests/CMakeLists.txt's ptxas variants did).
bad 1 "$ex/saxpy.tl: error: -D ' BLOCK': not the name of a constant" "$TILEC" "-D BLOCK=64" "$ex/saxpy.tl" -o -
bad 1 "$ex/saxpy.tl: error: -D '2X': not the name of a constant" "$TILEC" -D 2X=1 "$ex/saxpy.tl" -o -
bad 1 "tilec: error: cannot read '$tmp': Is a directory" "$TILEC" "$tmp"
bad 1 "tilec: error: cannot write '$tmp': Is a directory" "$TILEC" "$ex/saxpy.tl" -o "$tmp"

# Sources are read up to 16 MiB, and no further: /dev/zero fails at once.
bad 1 "tilec: error: cannot read '/dev/zero': source is larger than 16777216 bytes" timeout 20 "$TILEC" /dev/zero
bad 1 "tilec: error: cannot read '-': source is larger than 16777216 bytes" \
  sh -c "head -c 16777217 /dev/zero | '$TILEC' -"
head -c 16777216 /dev/zero | tr '\0' ' ' >"$tmp/16mib.tl"   # exactly the limit: read, and compiled
bad 1 "$tmp/16mib.tl: error: no kernel in the input" "$TILEC" "$tmp/16mib.tl"; rm -f "$tmp/16mib.tl"

# -o FILE: a regular file (or none) is replaced by renaming a temporary that mkstemp made beside it;
# devices, FIFOs and the files symbolic links name are written through, never replaced.
if [ -c /dev/null ]; then
  ok "$TILEC" "$ex/saxpy.tl" -o /dev/null; quiet
  [ -c /dev/null ] || { echo "FAIL: -o /dev/null left /dev/null $(stat -c %F /dev/null)"; fail=1; }
fi
if mknod "$tmp/null" c 1 3 2>/dev/null; then  # as root: a device of our own, /dev/null's twin
  ok "$TILEC" "$ex/saxpy.tl" -o "$tmp/null"
  [ -c "$tmp/null" ] || { echo "FAIL: -o DEVICE replaced the device"; fail=1; }
fi
mkfifo "$tmp/fifo"
timeout 10 cat "$tmp/fifo" >"$tmp/fifo.out" & reader=$!
ok timeout 10 "$TILEC" "$ex/saxpy.tl" -o "$tmp/fifo"; wait $reader
[ -p "$tmp/fifo" ] || { echo "FAIL: -o FIFO replaced the FIFO"; fail=1; }
has '.visible .entry saxpy(' "$tmp/fifo.out"
echo old >"$tmp/real.ptx"; chmod 640 "$tmp/real.ptx"; ln -s real.ptx "$tmp/link.ptx"
ok "$TILEC" "$ex/saxpy.tl" -o "$tmp/link.ptx"
[ -L "$tmp/link.ptx" ] || { echo "FAIL: -o SYMLINK replaced the link"; fail=1; }
has '.visible .entry saxpy(' "$tmp/real.ptx"
[ "$(stat -c %a "$tmp/real.ptx")" = 640 ] || { echo "FAIL: the replaced file lost its mode 640"; fail=1; }
(umask 027; "$TILEC" "$ex/saxpy.tl" -o "$tmp/new.ptx")
[ "$(stat -c %a "$tmp/new.ptx")" = 640 ] || { echo "FAIL: a new file is not 0666 less the umask"; fail=1; }
echo victim >"$tmp/victim"; ln -s "$tmp/victim" "$tmp/out.ptx.tmp~"   # planted at the old temporary's name
ok "$TILEC" "$ex/saxpy.tl" -o "$tmp/out.ptx"; has '.visible .entry saxpy(' "$tmp/out.ptx"
[ "$(cat "$tmp/victim")" = victim ] || { echo "FAIL: a planted symlink got its target overwritten"; fail=1; }
ok "$TILEC" "$ex/saxpy.tl" -o /dev/stdout; has '.visible .entry saxpy('
: >"$tmp/log"; for i in 1 2; do "$TILEC" "$ex/saxpy.tl" -o /dev/stdout >>"$tmp/log"; done
[ "$(grep -c '^// tilec-meta v1' "$tmp/log")" = 2 ] || { echo "FAIL: -o /dev/stdout >>FILE does not append"; fail=1; }
# After an error, an existing output is untouched and no temporary is left.
mkdir "$tmp/keep"; echo keep >"$tmp/keep/k.ptx"
untouched() {
  [ "$(cat "$tmp/keep/k.ptx")" = keep ] || { echo "FAIL: $1 changed the existing output"; fail=1; }
  [ "$(ls -A "$tmp/keep")" = k.ptx ] || { echo "FAIL: $1 left $(ls -A "$tmp/keep" | tr '\n' ' ')"; fail=1; }
}
bad 1 "-D BLOCK=big: the value is not a number or true/false" "$TILEC" -D BLOCK=big "$ex/saxpy.tl" -o "$tmp/keep/k.ptx"
untouched "a failed compile"
bad 1 "tilec: error: writing '$tmp/keep/k.ptx': File too large" \
  bash -c 'ulimit -f 4; exec "$@"' _ "$TILEC" "$ex/saxpy.tl" -o "$tmp/keep/k.ptx"
untouched "a failed write"
if [ "$(id -u)" -ne 0 ]; then                 # root writes anywhere
  mkdir "$tmp/ro"; chmod 555 "$tmp/ro"
  bad 1 "tilec: error: cannot write '$tmp/ro/x.ptx': Permission denied" "$TILEC" "$ex/saxpy.tl" -o "$tmp/ro/x.ptx"
fi

# Write errors: a full device, a closed pipe; every one is status 1 with a message, never 0.
bad 1 "tilec: error: writing '/dev/full': No space left on device" "$TILEC" "$ex/saxpy.tl" -o /dev/full
[ -c /dev/full ] || { echo "FAIL: -o /dev/full replaced /dev/full"; fail=1; }
bad 1 "tilec: error: writing <stdout>: No space left on device" sh -c "'$TILEC' '$ex/saxpy.tl' -o - >/dev/full"
bad 1 "tilec: error: writing <stdout>: No space left on device" sh -c "'$TILEC' --version >/dev/full"
# matmul's LLVM IR (370 KB) is more than a pipe holds: the writes must meet the closed end.
pipe='"$@" | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}'
timeout 60 bash -c "$pipe" _ "$TILEC" --emit=llvm "$ex/matmul.tl" -o - 2>"$tmp/e"; rc=$?
if [ $rc -eq 141 ] || { [ $rc -eq 1 ] && grep -qF 'writing <stdout>: Broken pipe' "$tmp/e"; }; then
  echo "ok   (status $rc) tilec ... -o - | head -c 10"     # 141: killed by SIGPIPE, as cat would be
else echo "FAIL: tilec ... -o - | head -c 10 -> status $rc, want 141 (SIGPIPE) or 1"; cat "$tmp/e"; fail=1; fi
bad 1 "tilec: error: writing <stdout>: Broken pipe" \
  timeout 60 bash -c "trap '' PIPE; $pipe" _ "$TILEC" --emit=llvm "$ex/matmul.tl" -o -
exit $fail
