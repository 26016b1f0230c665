#!/bin/bash
# session 35 call 2 (trimmed): the copy engine for mma.sync dequant loops (tilec) against 653b7ec (tilec_old):
# every dequant kernel checked on the GPU, the interleaved A/B at decoding's rows, gpu_levels on stdlib/gemm
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version --format=csv > $OUT/gpu.txt
cd tests/gpu
timeout 90 python3 ab_decode.py /tmp/dev/tilec_old /tmp/dev/tilec > $OUT/ab_decode.txt 2>&1; echo "ab_decode rc $?" >> $OUT/rc.txt
timeout 100 python3 gemm_w8a16.py /tmp/dev/tilec /tmp/w8q --quick --reps 10 > $OUT/w8a16_quick.txt 2>&1; echo "w8a16 quick rc $?" >> $OUT/rc.txt
cp /tmp/w8q/*.md $OUT/ 2>/dev/null
cd ../..
timeout 100 /tmp/dev/gpu_levels stdlib/gemm > $OUT/levels_gemm.txt 2>&1; echo "levels gemm rc $?" >> $OUT/rc.txt
