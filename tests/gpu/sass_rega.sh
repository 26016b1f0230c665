#!/usr/bin/env bash
# tests/gpu/sass_rega.sh: the SASS of every stdlib kernel whose wgmma reads A from registers
# (attention's P V, the dequantizing GEMMs' widened weights), compiled for sm_90a at the sizes that
# pick each of their forms, checked by sass_wgmma.py: no instruction may write a register an HGMMA
# reads A from before the WARPGROUP.DEPBAR that retires it. ptxas does not keep those registers
# for the multiply in flight (results/h100-2026-12-05-s28): the PTX can be race-free and the SASS
# not. Needs ptxas and cuobjdump (the GPU machine has both); no GPU.
#
#   tests/gpu/sass_rega.sh TILEC OUTFILE
#
# Exit status: 0 if no kernel has such a write, 1 if one has, 2 on bad usage.
set -u -o pipefail
[ $# -eq 2 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tilec=$(realpath "$1") out=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tilec-sass.XXXXXX")
status=0
: >"$out"
one() { # FILE KERNEL SIZES FLAGS...
  local file=$1 kernel=$2 size=$3
  shift 3
  local name="$kernel --size $size $*"
  if ! "$tilec" "$root/$file" --kernel "$kernel" --arch=sm_90a --size "$size" "$@" -o "$work/k.ptx" 2>>"$out"; then
    echo "$name: tilec failed" >>"$out"
    status=1
    return
  fi
  if ptxas -arch=sm_90a "$work/k.ptx" -o "$work/k.cubin" 2>>"$out" && cuobjdump -sass "$work/k.cubin" >"$work/k.sass"; then
    python3 "$here/sass_wgmma.py" "$work/k.sass" | sed "s|$work/k.sass|$name|" >>"$out"
    case $? in 0 | 2) ;; *) status=1 ;; esac
  else
    echo "$name: ptxas or cuobjdump failed" >>"$out"
    status=1
  fi
}
for k in attention_fwd attention_fwd_bshd; do
  for d in 64 128 256; do
    sz="B=4,H=32,HK=8,SQ=8192"
    [ $k = attention_fwd_bshd ] && sz="B=4,H=32,SQ=8192,HD=$((32 * d)),HKD=$((8 * d))"
    for c in 0 1; do
      for sk in 1000 8192; do
        one stdlib/attention.tl $k "$sz,SK=$sk" -D D=$d -D CAUSAL=$c
      done
    done
    one stdlib/attention.tl $k "$sz,SK=8192" -D D=$d -D OVERLAP=1
  done
done
for d in 64 128 256; do
  one stdlib/attention.tl attention_decode "B=64,H=32,HK=8,SQ=1,SK=8192,BH=2048,NS=16" -D D=$d
done
for m in 16 64 512 4096; do
  one stdlib/gemm.tl gemm_w8a16 "M=$m,N=4096,K=4096"
  one stdlib/gemm.tl gemm_w8a16_splitk "M=$m,N=4096,K=4096"
  one stdlib/gemm.tl gemm_w4a16 "M=$m,N=4096,K=4096,KH=2048,KG=32"
done
for m in 64 512 4096; do # the fill interleaved with the multiplies (overlap = 1)
  one stdlib/gemm.tl gemm_w8a16 "M=$m,N=4096,K=4096" -D OVERLAP=1
  one stdlib/gemm.tl gemm_w8a16_splitk "M=$m,N=4096,K=4096" -D OVERLAP=1
  one stdlib/gemm.tl gemm_w4a16 "M=$m,N=4096,K=4096,KH=2048,KG=32" -D OVERLAP=1
done
one examples/flash_attention.tl flash_attention "B=4,H=32,S=8192" 2>/dev/null
rm -rf "$work"
exit $status
