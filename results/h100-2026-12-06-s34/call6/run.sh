#!/bin/bash
# session 34 call 6: gemm_w4a16 at prefill's rows with OVERLAP = 1 (256-row tiles), and gemm_w8a16 with 3 stages
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
cd tests/gpu
for f in "OVERLAP=1" "OVERLAP=1 STAGES=2"; do
  echo "== gemm_w4a16 new: $f" >> $OUT/ab_large.txt
  timeout 90 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --large --only gemm_w4a16 --new-flags "$f" >> $OUT/ab_large.txt 2>&1; echo "$f rc $?" >> $OUT/rc.txt
done
echo "== gemm_w8a16 new: STAGES=3" >> $OUT/ab_large.txt
timeout 90 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --large --only gemm_w8a16 --new-flags "STAGES=3" >> $OUT/ab_large.txt 2>&1; echo "w8 rc $?" >> $OUT/rc.txt
