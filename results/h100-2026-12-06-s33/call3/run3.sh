#!/bin/bash
# session 33 call 3: the split-K dequantizing GEMMs at other tiles, stages and splits (decode shapes)
set -x
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
cd tests/gpu
T4=()
for t in "SPLIT=4" "SPLIT=4 STAGES=3" "SPLIT=8 STAGES=3" "SPLIT=8 STAGES=2" "BK=64 SPLIT=4" "BK=64 SPLIT=8" \
         "BK=64 SPLIT=8 STAGES=4" "BK=64 SPLIT=16 STAGES=3" "BK=64 SPLIT=16 STAGES=4" "BN=16 SPLIT=4 STAGES=4" \
         "BK=64 BN=16 SPLIT=8 STAGES=4" "BK=64 BN=64 SPLIT=16 STAGES=4" "BK=64 BN=64 SPLIT=8 STAGES=6"; do T4+=(--try "$t"); done
timeout 200 python3 explore_split.py /tmp/dev/tilec --w4 "${T4[@]}" 2>&1 | tee $OUT/explore_w4.txt
T8=()
for t in "SPLIT=8" "SPLIT=8 STAGES=3" "SPLIT=8 STAGES=4" "SPLIT=16 STAGES=3" "SPLIT=16 STAGES=2" "SPLIT=4 STAGES=4" \
         "BK=128 SPLIT=8 STAGES=3" "BK=128 SPLIT=4 STAGES=4" "BN=16 SPLIT=8 STAGES=4" "BN=16 SPLIT=16 STAGES=3" \
         "BN=64 SPLIT=16 STAGES=3" "BN=64 SPLIT=8 STAGES=4"; do T8+=(--try "$t"); done
timeout 200 python3 explore_split.py /tmp/dev/tilec "${T8[@]}" 2>&1 | tee $OUT/explore_w8.txt
