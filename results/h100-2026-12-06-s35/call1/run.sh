#!/bin/bash
# session 35 call 1: on an H200, issue 14-16's acceptance sweeps; on anything else, the whole GPU correctness suite
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version --format=csv > $OUT/gpu.txt
git_head=$(cat .dev/HEAD 2>/dev/null)
if grep -q H200 $OUT/gpu.txt; then
  cd tests/gpu
  timeout 290 python3 sweep_gemm.py /tmp/dev/tilec $OUT/gemm --dtypes f16,bf16 --reps 7 > $OUT/gemm.log 2>&1; echo "gemm rc $?" >> $OUT/rc.txt
  timeout 160 python3 sweep_rows.py /tmp/dev/tilec $OUT/rows --dtypes f16,bf16 --reps 15 > $OUT/rows.log 2>&1; echo "rows rc $?" >> $OUT/rc.txt
  timeout 120 python3 attention.py /tmp/dev/tilec $OUT/attn --speed-only --seq 8192 --d 64,128 --dtypes bf16 --reps 15 > $OUT/attn.log 2>&1; echo "attn rc $?" >> $OUT/rc.txt
  for d in gemm rows attn; do [ -d $OUT/$d ] && cp $OUT/$d/*.md $OUT/ 2>/dev/null; rm -rf $OUT/$d; done
else
  timeout 585 tests/gpu/all.sh /tmp/dev/tilec /tmp/dev $OUT/all --quick > $OUT/all.log 2>&1; echo "all rc $?" >> $OUT/rc.txt
fi
ls $OUT > /dev/null
