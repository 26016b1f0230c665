#!/bin/bash
# session 36 call A: examples/matmul's variants on the GPU against the interpreter (MINB fix), and the
# row-tested cp.async tier (tilec_new) against HEAD (tilec) on the dequant GEMMs at decoding's rows
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
timeout 120 /tmp/dev/gpu_levels --root $PWD examples/matmul > $OUT/levels.txt 2>&1; echo "levels rc $?" >> $OUT/rc.txt
cd tests/gpu
timeout 90 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_new > $OUT/ab_decode.txt 2>&1; echo "ab_decode rc $?" >> $OUT/rc.txt
timeout 70 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_new --shapes 1x4096x4096,5x4096x4096,1x14336x4096 > $OUT/ab_m1.txt 2>&1; echo "ab_m1 rc $?" >> $OUT/rc.txt
timeout 90 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_new --large > $OUT/ab_large.txt 2>&1; echo "ab_large rc $?" >> $OUT/rc.txt
