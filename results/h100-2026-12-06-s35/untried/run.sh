#!/bin/bash
# session 35 call 3: pipelined copies over the tensor's edge along rows only take an unrolled, row-tested
# cp.async form (tilec) against 653b7ec (tilec_old): the dequant GEMMs at decoding's rows, interleaved
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv > $OUT/gpu.txt
cd tests/gpu
timeout 80 python3 ab_decode.py /tmp/dev/tilec_old /tmp/dev/tilec > $OUT/ab_decode.txt 2>&1; echo "ab_decode rc $?" >> $OUT/rc.txt
timeout 60 python3 ab_decode.py /tmp/dev/tilec_old /tmp/dev/tilec --shapes 1x4096x4096,5x4096x4096,1x14336x4096 > $OUT/ab_m1.txt 2>&1; echo "ab_m1 rc $?" >> $OUT/rc.txt
