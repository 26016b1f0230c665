cd tests/gpu
python3 sweep_gemm.py $DEV/tilec $OUT/x9 --dtypes f16,bf16 --m 300,384 --nk 4096x4096,4096x14336,4000x3992 --reps 10 \
  --config s6="-D BN=192 -D BK=64 -D STAGES=6" --config s4="-D BN=192 -D BK=64 -D STAGES=4"
