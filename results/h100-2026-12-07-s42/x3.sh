cd tests/gpu
# the persistent kernel with a TMA-store epilogue (its tile of its own, 3 stages) against matmul.tl at short K
python3 sweep_gemm.py $DEV/tilec $OUT/x3 --dtypes f16 --m 4096,8192 --nk 8192x1024,4096x1024,8192x2048,8192x8192 --reps 10 \
  --file $PWD/../../.dev/alt/pers_tma.tl --kernel matmul \
  --config p128="-D BN=128 -D STAGES=4" --config p8="-D PANEL=8" \
  --alt mm=$PWD/../../examples/matmul.tl --alt pers=$PWD/../../examples/matmul_persistent.tl
