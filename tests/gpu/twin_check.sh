#!/usr/bin/env bash
# tests/gpu/twin_check.sh: is the register A operand twice (pipelined(..., overlap = 1) on a
# dequantizing loop, docs/language.md) right on this GPU, and if not, why. One short run (about a
# minute and a half on the H200) with four summaries, for a device that returns few files.
#
#   tests/gpu/twin_check.sh TILEC BINDIR OUTDIR [OLD.ptx ...]
#
# 1. OUTDIR/conform.txt: gpu_conform --filter register-a (the family's 50 kernels, bit-exact
#    against the host reference): its FAIL lines and summary.
# 2. OUTDIR/sass.txt: each sm_90a register-a kernel with overlap = 1 compiled by TILEC, assembled
#    with ptxas, disassembled with cuobjdump, and checked by sass_wgmma.py (a write to an A register
#    of an HGMMA before the WARPGROUP.DEPBAR that retires it); then the same for every OLD.ptx
#    given (results/h200-2026-12-05-s27/old15.ptx.xz, unpacked: the first form's PTX of a kernel
#    that gave wrong sums).
# 3. OUTDIR/levels.txt: gpu_levels on stdlib/gemm (its levels: lines include -D OVERLAP=1).
# 4. OUTDIR/ab.txt: ab_w8a16.py TILEC TILEC "-D OVERLAP=1" (old = the twin form, new = the default).
# Exit status: 0 if every kernel was right and no SASS had such a write.
set -u -o pipefail
[ $# -ge 3 ] || { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tilec=$(realpath "$1") bindir=$(realpath "$2") out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
out=$(realpath "$out")
work=$(mktemp -d "${TMPDIR:-/tmp}/tilec-twin.XXXXXX")
status=0

"$bindir/gpu_conform" --filter register-a --threads "$(nproc)" >"$work/conform.log" 2>&1 || status=1
grep -E '^FAIL|passed' "$work/conform.log" >"$out/conform.txt"

mkdir -p "$work/src"
"$bindir/gpu_conform" --filter register-a --dump "$work/src" >/dev/null
: >"$out/sass.txt"
check_ptx() { # NAME PTX
  if ptxas -arch=sm_90a "$2" -o "$work/k.cubin" 2>>"$out/sass.txt" &&
    cuobjdump -sass "$work/k.cubin" >"$work/k.sass"; then
    python3 "$here/sass_wgmma.py" "$work/k.sass" | sed "s|$work/k.sass|$1|" >>"$out/sass.txt" || status=1
  else
    echo "$1: ptxas or cuobjdump failed" >>"$out/sass.txt"
    status=1
  fi
}
for f in "$work"/src/sm_90a/*.tl; do
  grep -q 'overlap=1' "$f" || continue
  name=$(head -1 "$f" | sed 's|^// ||' | cut -c1-120)
  "$tilec" "$f" -o "$work/k.ptx" 2>>"$out/sass.txt" && check_ptx "$name" "$work/k.ptx"
done
for p in "$@"; do
  check_ptx "$p" "$p"
done

"$bindir/gpu_levels" --root "$root" stdlib/gemm 2>&1 | grep -E '^FAIL|gpu_levels:' >"$out/levels.txt" || status=1
grep -q '^FAIL' "$out/levels.txt" && status=1
(cd "$here" && python3 ab_w8a16.py "$tilec" "$tilec" "-D OVERLAP=1") >"$out/ab.txt" 2>&1 || status=1
rm -rf "$work"
exit $status
