#!/bin/bash
# session 33 call 7: Nsight Compute on gemm_w8a16 at 4096^3 after the epilogue change: what is left
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 tests/gpu/profile.sh /tmp/dev/tilec $OUT w8a16_m4096; echo rc $?
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
cd tests/gpu
timeout 200 $ncu --clock-control none --launch-skip 2 --launch-count 1 -k regex:gemm --section SourceCounters --print-details all \
  --page source --csv --print-source sass python3 profile_cases.py /tmp/dev/tilec w8a16_m4096 > $OUT/ncu_src.csv 2>&1; echo rc $?
head -c 600 $OUT/ncu_src.csv; echo
grep -E "Stall|Eligible|Issued|Excessive|excessive|Wavefronts" $OUT/ncu_w8a16_m4096.txt | head -30
