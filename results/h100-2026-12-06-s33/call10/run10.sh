#!/bin/bash
# session 33 call 10: the unsplit dequantizing GEMMs at prefill's rows with 256 activation rows a block (and the overlap)
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
cd tests/gpu
T=/tmp/dev/tilec
for f in "BM=256 BN=128 BK=64 STAGES=4" "BM=256 BN=128 BK=64 STAGES=5" "OVERLAP=1"; do
  echo "== gemm_w8a16 default vs $f"; timeout 120 python3 ab_decode.py $T $T --large --only gemm_w8a16 --new-flags "$f" 2>&1
done | tee $OUT/ab_w8.txt
for f in "BM=256 BN=128 STAGES=3" "BM=256 BN=128 STAGES=2"; do
  echo "== gemm_w4a16 default vs $f"; timeout 120 python3 ab_decode.py $T $T --large --only gemm_w4a16 --new-flags "$f" 2>&1
done | tee $OUT/ab_w4.txt
