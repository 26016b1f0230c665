#!/bin/bash
# session 34 call 5: gemm_w8a16_splitk's new SPLIT / STAGES formulas (stdlib/gemm.tl) against the source before (gemm_head.tl)
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
cd tests/gpu
timeout 150 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --only gemm_w8a16_splitk --old-src ../../.dev/gemm_head.tl \
  --shapes 1x4096x4096,8x4096x4096,16x4096x4096,16x14336x4096,16x4096x14336,16x8192x8192 > $OUT/ab_formula.txt 2>&1; echo "ab rc $?" >> $OUT/rc.txt
timeout 100 python3 gemm_w8a16.py /tmp/dev/tilec $OUT/w8 --quick --reps 10 > $OUT/w8a16_quick.txt 2>&1; echo "quick rc $?" >> $OUT/rc.txt
rm -rf $OUT/w8
