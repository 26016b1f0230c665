cd tests/gpu
python3 sweep_gemm.py /tmp/dev/tilec $OUT/x2a --dtypes f16,bf16 --m 128,256,384,512,768,1024,1536 --nk 14336x4096 --reps 15 \
  --config w0="-D W224=0"
python3 sweep_gemm.py /tmp/dev/tilec $OUT/x2b --dtypes bf16,f16 --m 256,512,768 --nk 4096x4096,4096x14336 --reps 15 \
  --config s6="-D STAGES=6" --config bk128="-D BK=128 -D STAGES=3" --config mb2="-D STAGES=3 -D MINB=2" \
  --config m64="-D BM=64 -D BN=128 -D BK=128 -D STAGES=4" --config ws0="-D WS=0"
