#!/bin/bash
# session 33 call 6: the unsplit dequantizing GEMMs' epilogue through a padded C tile (gemm_epi.tl) against stdlib's
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
cd tests/gpu
timeout 250 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --new-src ../../.dev/gemm_epi.tl --large 2>&1 | tee $OUT/ab_large.txt
timeout 200 python3 ab_decode.py /tmp/dev/tilec /tmp/dev/tilec --new-src ../../.dev/gemm_epi.tl 2>&1 | grep -v splitk | tee $OUT/ab_decode.txt
