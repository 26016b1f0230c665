cd tests/gpu
# matmul.tl's PERSIST (K <= 2048 with 128 x 256 tiles: persistent, TMA-store epilogue) against HEAD's matmul.tl
python3 sweep_gemm.py $DEV/tilec $OUT/x4 --dtypes f16,bf16 --m 4096,8192 --nk 8192x1024,4096x1024,8192x2048,14336x2048 --reps 10 \
  --alt old=$PWD/../../.dev/alt/matmul_old.tl
python3 sweep_gemm.py $DEV/tilec $OUT/x4r --dtypes f16,bf16 --m 4095,3000,1000 --nk 8192x1000,4000x2000,4096x1024 --reps 10 \
  --alt old=$PWD/../../.dev/alt/matmul_old.tl
