cd tests/gpu
python3 sweep_gemm.py $DEV/tilec $OUT/x10 --dtypes f16,bf16 --m 4096,8192 --nk 8192x1024,8192x2048,4096x1024 --reps 10 \
  --alt pers=$PWD/../../examples/matmul_persistent.tl --config m2a="-D BN=128 -D STAGES=3 -D MINB=2" \
  --config m2b="-D BN=128 -D BK=32 -D STAGES=6 -D MINB=2"
