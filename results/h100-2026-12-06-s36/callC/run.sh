#!/bin/bash
# session 36 call C: TL_ROLLED=1: a third tier (row-tested cp.async, zero fill) for tiles over the edge
# along rows only, kept rolled, beside 7ee77f1's interior and edge tiers; TL_SUBSUME=16 again (call B)
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
printf '#!/bin/sh\nTL_ROLLED=1 exec /tmp/dev/tilec "$@"\n' > /tmp/dev/tilec_rolled
printf '#!/bin/sh\nTL_SUBSUME=16 exec /tmp/dev/tilec "$@"\n' > /tmp/dev/tilec_16
chmod +x /tmp/dev/tilec_rolled /tmp/dev/tilec_16
{ TL_ROLLED=1 timeout 60 /tmp/dev/gpu_levels --root $PWD stdlib/gemm; TL_ROLLED=1 timeout 30 /tmp/dev/gpu_levels --root $PWD examples/matmul; } > $OUT/levels.txt 2>&1; echo "levels rc $?" >> $OUT/rc.txt
cd tests/gpu
S=1x4096x4096,5x4096x4096,16x4096x4096,1x14336x4096
timeout 70 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_rolled > $OUT/ab_rolled.txt 2>&1; echo "ab_rolled rc $?" >> $OUT/rc.txt
timeout 80 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_rolled --shapes $S >> $OUT/ab_rolled.txt 2>&1; echo "ab_rolled_shapes rc $?" >> $OUT/rc.txt
timeout 70 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_rolled --large >> $OUT/ab_rolled.txt 2>&1; echo "ab_rolled_large rc $?" >> $OUT/rc.txt
timeout 70 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_16 > $OUT/ab_16.txt 2>&1; echo "ab_16 rc $?" >> $OUT/rc.txt
