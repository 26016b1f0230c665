#!/usr/bin/env bash
# ptxas.sh FILE.tl ARCH [TILEC FLAGS...]: compiles every kernel of FILE.tl (with the flags, e.g.
# -D T=f32) and assembles it with
# ptxas -v; fails on any ptxas error, on any spill, and on any note of ptxas
# about wgmma (instructions serialized, or a warpgroup.wait it had to inject
# because the accumulator was used too early) or setmaxnreg (ignored when ptxas
# cannot tell the register count at entry).  Exits 77 (skip) when
# ptxas is not installed, or when FILE.tl names its targets on a "// TARGETS:" line
# and ARCH is not one of them.
set -u
f=$1; arch=$2; shift 2
: "${TILEC:?}"
[ -x "${PTXAS:-}" ] || { echo "skipped: ptxas not found"; exit 77; }
# A file for some targets only says so on a "// TARGETS: sm_90a ..." line (stdlib/gemm_fp8.tl).
only=$(sed -n 's,^// TARGETS: ,,p' "$f" | head -1)
if [ -n "$only" ] && ! echo " $only " | grep -q " $arch "; then echo "skipped: $f is for $only only"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$TILEC" --arch="$arch" "$@" "$f" -o "$tmp/k.ptx" || { echo "tilec failed"; exit 1; }
"$PTXAS" -arch="$arch" -v "$tmp/k.ptx" -o "$tmp/k.cubin" 2>"$tmp/log" || { cat "$tmp/log"; echo "ptxas failed"; exit 1; }
cat "$tmp/log"
# Spills and a stack frame fail, beyond the bytes a file tolerates on one target, saying how many
# and why on a "// PTXAS-SPILLS: ARCH BYTES" line (no file has one today; none: 0), or one
# kernel of it on a "// PTXAS-SPILLS: ARCH BYTES KERNEL" line (stdlib/gemm.tl's gemm_w4a16).
file_allow=$(sed -n "s,^// PTXAS-SPILLS: $arch \([0-9]*\)$,\1,p" "$f" | head -1)
over=$(awk '/Compiling entry function/ {split($0, q, "\047"); k = q[2]; worst[k] += 0}
            {for (s = $0; match(s, /[0-9]+ bytes (spill stores|spill loads|stack frame)/); s = substr(s, RSTART + RLENGTH)) {
               n = substr(s, RSTART) + 0; if (n > worst[k]) worst[k] = n }}
            END {for (k in worst) print k, worst[k] + 0}' "$tmp/log" | while read -r k n; do
  allow=$(sed -n "s,^// PTXAS-SPILLS: $arch \([0-9]*\) $k$,\1,p" "$f" | head -1)
  allow=${allow:-${file_allow:-0}}
  [ "$n" -le "$allow" ] || echo "$k: $n bytes (tolerated: $allow)"
done)
if [ -n "$over" ]; then echo "spills or stack frame: $over"; exit 1; fi
if grep -E 'wgmma|warpgroup|GMMA' "$tmp/log"; then echo "ptxas serialized or waited on wgmma"; exit 1; fi
if grep -E 'setmaxnreg' "$tmp/log"; then echo "ptxas ignored setmaxnreg"; exit 1; fi
grep -q 'Used [0-9]* registers' "$tmp/log" || { echo "no resource report"; exit 1; }
echo ok
