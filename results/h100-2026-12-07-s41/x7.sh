cd tests/gpu
python3 sweep_gemm.py /tmp/dev/tilec $OUT/x7 --dtypes f16,bf16 --m 384,640,768 --nk 4096x4096,14336x4096,4096x14336 --reps 10 \
  --config b192s4="-D BN=192 -D BK=64 -D STAGES=4" --config b192s5="-D BN=192 -D BK=64 -D STAGES=5"
