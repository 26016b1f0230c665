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
    lv) timeout $left /tmp/dev/gpu_levels --root . > "$OUT/levels.txt" 2>&1 ;;
    x*) timeout $left bash ".dev/$p.sh" > "$OUT/$p.txt" 2>&1 ;;
  esac
  echo "$p rc $? at $((SECONDS - S)) s" | tee -a "$OUT/rc.txt"
done
cd "$OUT" && tar czf all.tgz --exclude all.tgz . && ls -la
