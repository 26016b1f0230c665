#!/usr/bin/env bash
# .dev/go.sh PARTS...: on the device: unpack, gpu.txt, then each step in order while time is left
set -u
S=$SECONDS
tests/gpu/unpack.sh .dev /tmp/dev
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
for p in "$@"; do
  left=$((${LIMIT:-580} - SECONDS + S))
  [ $left -gt 30 ] || { echo "skip $p"; continue; }
  case $p in
    p*) n=${p#p}; timeout $left tests/gpu/acceptance.sh /tmp/dev/tilec "$OUT/$p" "$n" > "$OUT/$p.txt" 2>&1 ;;
    ln) for t in f16 bf16; do timeout $left python3 tests/gpu/explore_rows.py /tmp/dev/tilec "$OUT/ln_$t" --kernels layernorm --dtype $t --n 16384,32768,65536 --alt .dev/alt/ln_ws4.tl,.dev/alt/ln_ws16.tl --only-alt > "$OUT/ln_$t.txt" 2>&1; done ;;
  esac
  echo "$p rc $? at $((SECONDS - S)) s" | tee -a "$OUT/rc.txt"
done
