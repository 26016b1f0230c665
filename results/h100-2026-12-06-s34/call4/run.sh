#!/bin/bash
# session 34 call 4: gemm_w8a16_splitk with 5 and 6 splits at M <= 16 against its default (4), interleaved
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
cd tests/gpu
for f in "SPLIT=5" "SPLIT=6 STAGES=2" "SPLIT=5 STAGES=3"; do
  echo "== new: $f" >> $OUT/ab_split.txt
  timeout 80 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --only gemm_w8a16_splitk --new-flags "$f" >> $OUT/ab_split.txt 2>&1; echo "$f rc $?" >> $OUT/rc.txt
done
