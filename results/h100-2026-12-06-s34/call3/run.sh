#!/bin/bash
# session 34 call 3: split counts that fill one wave at decoding's M = 16, N = 4096 (512 blocks of 64 threads were 0.65 waves)
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
cd tests/gpu
T=()
for t in "SPLIT=5" "SPLIT=6" "SPLIT=6 STAGES=2" "SPLIT=6 STAGES=4" "SPLIT=5 STAGES=4" "SPLIT=8 STAGES=4" "BN=16 SPLIT=3" "BN=16 SPLIT=4 STAGES=4"; do T+=(--try "$t"); done
timeout 120 python3 explore_split.py /tmp/dev/tilec --w4 "${T[@]}" > $OUT/explore_w4.txt 2>&1; echo "w4 rc $?" >> $OUT/rc.txt
timeout 120 python3 explore_split.py /tmp/dev/tilec "${T[@]}" > $OUT/explore_w8.txt 2>&1; echo "w8 rc $?" >> $OUT/rc.txt
timeout 60 bash profile.sh /tmp/dev/tilec $OUT/prof w4a16_splitk_m16 > $OUT/prof.log 2>&1; echo "prof rc $?" >> $OUT/rc.txt
