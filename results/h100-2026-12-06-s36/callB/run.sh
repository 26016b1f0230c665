#!/bin/bash
# session 36 call B: the unrolled row-tested cp.async tier for tiles over the edge along rows only,
# in place of the plain interior tier (TL_SUBSUME=R: for tiles of at most R rows), against 7ee77f1's
# two tiers (no TL_SUBSUME): speed of the decode GEMMs, large dequant, attention, matmul; GPU vs interpreter
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
printf '#!/bin/sh\nTL_SUBSUME=100000 exec /tmp/dev/tilec "$@"\n' > /tmp/dev/tilec_all
printf '#!/bin/sh\nTL_SUBSUME=16 exec /tmp/dev/tilec "$@"\n' > /tmp/dev/tilec_16
chmod +x /tmp/dev/tilec_all /tmp/dev/tilec_16
{ TL_SUBSUME=100000 timeout 60 /tmp/dev/gpu_levels --root $PWD stdlib/gemm; TL_SUBSUME=100000 timeout 30 /tmp/dev/gpu_levels --root $PWD examples/matmul; TL_SUBSUME=100000 timeout 40 /tmp/dev/gpu_levels --root $PWD stdlib/attention; } > $OUT/levels.txt 2>&1; echo "levels rc $?" >> $OUT/rc.txt
cd tests/gpu
S=1x4096x4096,16x4096x4096,17x4096x4096,33x4096x4096,100x4096x4096,1x14336x4096
timeout 70 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_all > $OUT/ab_all.txt 2>&1; echo "ab_all rc $?" >> $OUT/rc.txt
timeout 80 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_all --shapes $S >> $OUT/ab_all.txt 2>&1; echo "ab_all_shapes rc $?" >> $OUT/rc.txt
timeout 70 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_all --large >> $OUT/ab_all.txt 2>&1; echo "ab_all_large rc $?" >> $OUT/rc.txt
timeout 80 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec_16 --shapes $S > $OUT/ab_16.txt 2>&1; echo "ab_16 rc $?" >> $OUT/rc.txt
timeout 90 python3 attention.py /tmp/dev/tilec $OUT/attn --speed-only --seq 8192 --d 64,128 --dtypes bf16 --reps 15 --config all="--tilec=/tmp/dev/tilec_all" > $OUT/attn.log 2>&1; echo "attn rc $?" >> $OUT/rc.txt
timeout 80 python3 sweep_gemm.py /tmp/dev/tilec $OUT/gemm --dtypes f16 --m 16,100,1024 --nk 4096x4096,14336x4096 --reps 7 --config all="--tilec=/tmp/dev/tilec_all" > $OUT/gemm.log 2>&1; echo "gemm rc $?" >> $OUT/rc.txt
rm -rf $OUT/attn $OUT/gemm
