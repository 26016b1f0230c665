#!/bin/bash
# session 33 call 9: examples/matmul.tl (epilogue through C's padded tile) at few rows, swapped or not
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 tests/gpu/sweep_gemm.py /tmp/dev/tilec $OUT --dtypes f16,bf16 --m 16,33,48,64,80,96,112,128 --reps 7 \
  --config noswap="-D SWAP=0" --config swap="-D SWAP=1" > $OUT/log.txt 2>&1; echo rc $?
grep -E "^\| [0-9]|geometric" $OUT/sweep_gemm.md | cut -c1-200
