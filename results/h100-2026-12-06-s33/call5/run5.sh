#!/bin/bash
# session 33 call 5: softmax f32 with 32 threads for 2 KB rows (was 16) and 32 bytes a thread above (was 64)
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 tests/gpu/explore_rows.py /tmp/dev/tilec $OUT --kernels softmax --dtype f32 --n 256,512,1024,2048,4096,8192,16384 --alt .dev/softmax_f32.tl --only-alt 2>&1 | tail -3
cat $OUT/explore_softmax.md | head -40
