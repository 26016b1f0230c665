cd tests/gpu
# two blocks per SM, one consumer warpgroup each (64 x 256, or 128 x 128 on 128 threads, with and without a
# producer warpgroup): one block's epilogue runs while the other multiplies; bad=-D BM=7 checks that
# sweep_gemm.py marks a config it cannot build
python3 sweep_gemm.py $DEV/tilec $OUT/x1 --dtypes f16 --m 4096,8192 --nk 8192x1024,8192x2048,4096x1024,8192x8192 --reps 10 \
  --config w64="-D BM=64 -D BN=256 -D BK=64 -D STAGES=2 -D MINB=2" \
  --config t128="-D BM=128 -D BN=128 -D BK=64 -D STAGES=3 -D MINB=2 -D THREADS=128" \
  --config t128ws="-D BM=128 -D BN=128 -D BK=64 -D STAGES=3 -D MINB=2 -D THREADS=128 -D WS=2" \
  --config t128ws6="-D BM=128 -D BN=128 -D BK=32 -D STAGES=6 -D MINB=2 -D THREADS=128 -D WS=2" \
  --config bad="-D BM=7"
