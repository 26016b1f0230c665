#!/bin/bash
# session 34 call 2: gemm_w4a16_splitk's settings after the fill's changes; Nsight Compute on the split kernels;
# the back end at Default for loop kernels (tilec_cg2) against today's Aggressive (tilec) where the SASS differs
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $OUT/gpu.txt
cd tests/gpu
T4=()
for t in "STAGES=3" "STAGES=4" "STAGES=2" "SPLIT=8 STAGES=2" "SPLIT=8 STAGES=3" "SPLIT=2 STAGES=3" "SPLIT=2 STAGES=4" \
         "BN=16 STAGES=3" "BN=64 STAGES=3" "BK=64 SPLIT=8 STAGES=3"; do T4+=(--try "$t"); done
timeout 130 python3 explore_split.py /tmp/dev/tilec --w4 "${T4[@]}" > $OUT/explore_w4.txt 2>&1; echo "explore rc $?" >> $OUT/rc.txt
timeout 90 bash profile.sh /tmp/dev/tilec $OUT/prof w4a16_splitk_m16 w8a16_splitk_m16 > $OUT/prof.log 2>&1; echo "prof rc $?" >> $OUT/rc.txt
timeout 130 python3 attention.py /tmp/dev/tilec $OUT/attn --speed-only --seq 8192 --d 64,128 --dtypes bf16 --reps 15 --config cg2="--tilec=/tmp/dev/tilec_cg2" > $OUT/attn_cg2.log 2>&1; echo "attn rc $?" >> $OUT/rc.txt
timeout 110 python3 sweep_gemm.py /tmp/dev/tilec $OUT/gnt --file ../../stdlib/gemm.tl --kernel gemm_nt --layout nt --dtypes f16,bf16 --m 128,4096 --nk 4096x4096,8192x8192 --reps 15 --config cg2="--tilec=/tmp/dev/tilec_cg2" > $OUT/gemm_nt_cg2.log 2>&1; echo "gemm_nt rc $?" >> $OUT/rc.txt
rm -rf $OUT/attn $OUT/gnt
