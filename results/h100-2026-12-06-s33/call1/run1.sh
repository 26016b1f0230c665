#!/bin/bash
# session 33 call 1: gemm_w4a16_splitk (new) and its FMA-fill candidate; correctness of the dequant GEMMs
set -x
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
cd tests/gpu
timeout 150 python3 explore_split.py /tmp/dev/tilec --w4 --alt ../../.dev/gemm_fma.tl 2>&1 | tee $OUT/explore_w4.txt
timeout 100 python3 explore_split.py /tmp/dev/tilec 2>&1 | tee $OUT/explore_w8.txt
cd ../..
timeout 120 /tmp/dev/gpu_levels --root . gemm 2>&1 | tail -5 | tee $OUT/levels_gemm.txt
timeout 200 python3 tests/gpu/gemm_w8a16.py /tmp/dev/tilec $OUT --quick --reps 20 > $OUT/w8a16_quick.log 2>&1; echo rc $?
grep -E "WRONG|wrong|right|geometric|splitk" $OUT/gemm_w8a16.md | head -40
