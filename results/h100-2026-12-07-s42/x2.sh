cd tests/gpu
python3 attention.py $DEV/tilec $OUT/x2 --speed-only --seq 8192 --d 128 --dtypes bf16 --reps 10 \
  --config bn160="-D BN=160 -D STAGES=2 -D OVERLAP=0" --config bn176="-D BN=176 -D STAGES=2 -D OVERLAP=0" \
  --config bn128s2="-D BN=128 -D STAGES=2"
