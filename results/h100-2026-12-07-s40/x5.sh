cd tests/gpu
python3 sweep_gemm.py /tmp/dev/tilec $OUT/x5 --dtypes f16,bf16 --m 500,512,1024 --nk 4096x4096,4096x14336,4000x3992 --reps 15 \
  --alt old=$PWD/../../.dev/alt/matmul_old.tl
