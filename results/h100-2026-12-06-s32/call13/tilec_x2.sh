#!/usr/bin/env bash
# the real tilec, then every scalar cvt.rn.bf16.f32 of its PTX rewritten as the packed cvt.rn.bf16x2.f32
# (an experiment: does ptxas's F2F.BF16.F32 on the MUFU pipe cost the bf16 row kernels their speed?)
here=$(dirname "$0")
/tmp/dev/tilec "$@" || exit $?
out=
prev=
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
[ -n "$out" ] && [ "$out" != "-" ] && sed -i -E 's/^\tcvt\.rn\.bf16\.f32 \t(%rs[0-9]+), (%f[0-9]+);$/\t{ .reg .b32 cvtx2; .reg .b16 cvths; cvt.rn.bf16x2.f32 cvtx2, \2, \2; mov.b32 {\1, cvths}, cvtx2; }/' "$out"
exit 0
