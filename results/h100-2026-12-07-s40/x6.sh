cd tests/gpu
python3 sweep_gemm.py /tmp/dev/tilec $OUT/x6 --dtypes f16,bf16 --m 512 --nk 4096x3992,4000x4096,4032x4096,4096x4032,4000x3992 --reps 15 \
  --alt old=$PWD/../../.dev/alt/matmul_old.tl
