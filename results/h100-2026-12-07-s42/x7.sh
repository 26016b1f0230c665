cd tests/gpu
# PERSIST at K = 4096 and beyond (the rule takes it to K <= 2048 only): forced against the defaults
python3 sweep_gemm.py $DEV/tilec $OUT/x7 --dtypes f16,bf16 --m 1024,4096,16384 --nk 4096x4096,14336x4096,8192x8192,4096x14336 --reps 10 \
  --config p="-D PERSIST=1 -D BM=128 -D BN=256 -D BK=64 -D STAGES=3"
