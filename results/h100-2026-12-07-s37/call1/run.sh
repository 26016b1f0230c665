#!/bin/bash
# session 37 call 1: persistent GEMM forms against examples/matmul.tl, then the owed all.sh --quick
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
cd tests/gpu
timeout 110 python3 sweep_gemm.py /tmp/dev/tilec /tmp/sw --dtypes f16 --m 4096,8192,1024 --nk 4096x4096,8192x8192,14336x4096 --reps 15 \
  --alt pers=../../examples/matmul_persistent.tl --alt pp8=../../.dev/tl/pp8.tl --alt pts=../../.dev/tl/pts.tl > $OUT/sweep.txt 2>&1; echo "sweep rc $?" >> $OUT/rc.txt
cat /tmp/sw/*.md >> $OUT/sweep.txt 2>/dev/null
cd ../..
timeout 470 tests/gpu/all.sh /tmp/dev/tilec /tmp/dev /tmp/allq --quick > $OUT/all_stdout.txt 2>&1; echo "all rc $?" >> $OUT/rc.txt
cp /tmp/allq/all.txt $OUT/all.txt 2>/dev/null
