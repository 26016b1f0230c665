#!/bin/bash
# session 33 call 11: 256 activation rows a block as the unsplit dequantizing GEMMs' default where there are tiles enough
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
T=/tmp/dev/tilec
cd tests/gpu
timeout 80 python3 ab_decode.py $T $T --large --old-src ../../.dev/gemm_head.tl 2>&1 | tee $OUT/ab_large.txt
cd ../..
timeout 120 python3 tests/gpu/gemm_w8a16.py $T $OUT --quick --reps 20 > $OUT/w8a16_quick.log 2>&1; echo rc $?
grep -E "WRONG|wrong|right|geometric" $OUT/gemm_w8a16.md | head -20
grep -E "^\| 4096 " $OUT/gemm_w8a16.md | cut -c1-200
