for k in rmsnorm softmax layernorm; do
  python3 tests/gpu/explore_rows.py /tmp/dev/tilec $OUT/x3_f16 --kernels $k --dtype f16 --n 4096,8192
done
