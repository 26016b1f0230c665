# rows of 65536: the long path's output pass without re-reading the tile still in registers (new)
# against the tree before (alt), twice, f16 and bf16
cd tests/gpu || exit 2
for rep in 1 2; do
  for dt in f16 bf16; do
    python3 explore_rows.py "$DEV/tilec" "$OUT/x1_${dt}_$rep" --dtype $dt --n 65536,32768 --only-alt \
      --alt "$OLDPWD/.dev/old_softmax.tl,$OLDPWD/.dev/old_norms.tl"
  done
done
