#!/bin/bash
# session 33 call 4: the split-K dequantizing GEMMs at their new defaults; correctness at ragged shapes
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
cd tests/gpu
timeout 120 python3 explore_split.py /tmp/dev/tilec --w4 2>&1 | tee $OUT/explore_w4.txt
timeout 120 python3 explore_split.py /tmp/dev/tilec 2>&1 | tee $OUT/explore_w8.txt
cd ../..
timeout 120 /tmp/dev/gpu_levels --root . gemm 2>&1 | tail -1 | tee $OUT/levels_gemm.txt
timeout 300 python3 tests/gpu/gemm_w8a16.py /tmp/dev/tilec $OUT --quick --reps 20 > $OUT/w8a16_quick.log 2>&1; echo rc $?
grep -E "WRONG|wrong|right|geometric" $OUT/gemm_w8a16.md | head -20
grep -E "^\| 16 " $OUT/gemm_w8a16.md | cut -c1-250
