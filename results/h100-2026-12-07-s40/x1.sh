cd tests/gpu
python3 sweep_gemm.py /tmp/dev/tilec $OUT/x1 --dtypes bf16,f16 --m 512,1024,2048 --nk 14336x4096,4096x14336,4096x4096 --reps 15 \
  --config w0="-D W224=0" --config bn128="-D W224=0 -D BN=128" --config bm64="-D W224=0 -D BM=64 -D BN=256 -D BK=64 -D STAGES=4"
