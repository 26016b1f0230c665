#!/bin/bash
# session 33 call 2: the 4-bit kernels with T scales (f16x2 unpacking) against the f32-scale form (call 1's)
set -x
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
cd tests/gpu
timeout 150 python3 explore_split.py /tmp/dev/tilec --w4 --alt ../../.dev/gemm_f32s.tl 2>&1 | tee $OUT/explore_w4.txt
cd ../..
timeout 120 /tmp/dev/gpu_levels --root . gemm 2>&1 | tail -3 | tee $OUT/levels_gemm.txt
timeout 300 python3 tests/gpu/gemm_w8a16.py /tmp/dev/tilec $OUT --quick --reps 20 > $OUT/w8a16_quick.log 2>&1; echo rc $?
grep -E "WRONG|wrong|right|geometric" $OUT/gemm_w8a16.md | head -20
sed -n '/gemm_w4a16: speed/,$p' $OUT/gemm_w8a16.md | head -20
