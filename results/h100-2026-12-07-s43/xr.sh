# small M (1, 8, 64) x N = 4096, 8192: every candidate of explore_rows.py, f16 and bf16
for dt in f16 bf16; do
  python3 tests/gpu/explore_rows.py $DEV/tilec $OUT/xr_$dt --dtype $dt --n 4096,8192 --m 1,8,64 2>&1 | tail -20
done
