#!/bin/bash
# session 33 call 8: examples/matmul.tl's swapped form (few rows) with the epilogue through C's padded tile
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 tests/gpu/sweep_gemm.py /tmp/dev/tilec $OUT --dtypes f16,bf16 --m 16,33,48,80,96 --reps 7 --alt epi=.dev/matmul_epi.tl > $OUT/log.txt 2>&1; echo rc $?
grep -E "^\| [0-9]|geometric" $OUT/sweep_gemm.md | cut -c1-200
