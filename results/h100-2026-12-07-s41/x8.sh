cd tests/gpu
python3 sweep_gemm.py $DEV/tilec $OUT/x8 --dtypes f16,bf16 --m 300,384,576,640,768,1280,1536 --nk 4096x4096,14336x4096,4096x14336,8192x8192,4000x3992 --reps 10 \
  --alt old=$PWD/../../.dev/alt/matmul_old.tl
python3 sweep_gemm.py $DEV/tilec $OUT/x8r --dtypes f16,bf16 --m 333,1000 --nk 4000x3992,200x136 --reps 5
