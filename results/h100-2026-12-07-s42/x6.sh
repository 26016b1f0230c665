cd tests/gpu
# acceptance part 2's short-K step (issue 15's 8192 x 8192 x 1024), which the first call's tlcuda.py could not launch
python3 sweep_gemm.py $DEV/tilec $OUT/gemm_short_k --dtypes f16,bf16 --m 8192 --nk 8192x1024 --reps 30
