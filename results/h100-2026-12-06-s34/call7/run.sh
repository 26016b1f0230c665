#!/bin/bash
# session 34 call 7: gemm_w4a16 with 2 stages and OVERLAP = 1 on its 256-row tiles (stdlib/gemm.tl) against the source before (gemm_head.tl)
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
cd tests/gpu
timeout 100 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --large --only gemm_w4a16 --old-src ../../.dev/gemm_head.tl > $OUT/ab_w4_large.txt 2>&1; echo "ab rc $?" >> $OUT/rc.txt
timeout 100 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --only gemm_w4a16 --old-src ../../.dev/gemm_head.tl --shapes 4096x14336x4096,16384x4096x4096,2048x8192x8192,512x4096x4096 > $OUT/ab_w4_more.txt 2>&1; echo "ab2 rc $?" >> $OUT/rc.txt
timeout 100 python3 gemm_w8a16.py /tmp/dev/tilec $OUT/w8 --quick --reps 10 > $OUT/w8a16_quick.txt 2>&1; echo "quick rc $?" >> $OUT/rc.txt
rm -rf $OUT/w8
