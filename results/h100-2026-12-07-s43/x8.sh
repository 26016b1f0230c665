cd tests/gpu
# compute-sanitizer racecheck and synccheck on the persistent grid (150 tiles of 128 x 256 over 132
# blocks: some blocks take two, K = 200: 4 stages' worth over 3) and on two blocks per SM with a producer
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck synccheck; do
  $CS --tool $tool --print-limit 20 python3 sweep_gemm.py $DEV/tilec $OUT/x8_$tool --dtypes f16 --m 300 --nk 12800x200 --reps 1 \
    --config p="-D PERSIST=1 -D BM=128 -D BN=256 -D BK=64 -D STAGES=3" \
    --config ws2="-D BM=128 -D BN=128 -D BK=64 -D STAGES=3 -D MINB=2 -D THREADS=128 -D WS=2" 2>&1 | tail -25
done
