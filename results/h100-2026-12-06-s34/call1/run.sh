#!/bin/bash
# session 34 call 2: the w4 fold A/B (old = 15bc413, new = 383dca8), dequant checks, then issue 14's rows grid and issue 16's speed points
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $OUT/gpu.txt
cd tests/gpu
timeout 110 python3 ab_decode.py /tmp/dev/tilec_old /tmp/dev/tilec > $OUT/ab_decode.txt 2>&1; echo "ab_decode rc $?" >> $OUT/rc.txt
timeout 80 python3 ab_decode.py /tmp/dev/tilec_old /tmp/dev/tilec --large --only gemm_w4a16 > $OUT/ab_large_w4.txt 2>&1; echo "ab_large rc $?" >> $OUT/rc.txt
timeout 90 python3 gemm_w8a16.py /tmp/dev/tilec $OUT/w8a16 --quick --reps 20 > $OUT/w8a16_quick.txt 2>&1; echo "w8a16 quick rc $?" >> $OUT/rc.txt
timeout 150 python3 sweep_rows.py /tmp/dev/tilec $OUT/rows --dtypes f16,bf16 --reps 15 > $OUT/rows.log 2>&1; echo "rows rc $?" >> $OUT/rc.txt
timeout 115 python3 attention.py /tmp/dev/tilec $OUT/attn --speed-only --seq 8192 --d 64,128 --dtypes bf16 --reps 15 > $OUT/attn.log 2>&1; echo "attn rc $?" >> $OUT/rc.txt
# SASS of the w4 split kernel's fill (both compilers), for the note
cd /tmp && for t in tilec_old tilec; do /tmp/dev/$t $OLDPWD/../../stdlib/gemm.tl --kernel gemm_w4a16_splitk --size M=16,N=4096,K=4096 -o /tmp/w4_$t.ptx && ptxas -arch=sm_90a /tmp/w4_$t.ptx -o /tmp/w4_$t.cubin && cuobjdump -sass /tmp/w4_$t.cubin > $OUT/w4s_sass_$t.txt; done 2>> $OUT/rc.txt
