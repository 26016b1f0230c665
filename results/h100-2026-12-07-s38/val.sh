#!/bin/bash
# session 38: the JIT's TMA-only modules on a GPU: gpu_levels (tl_module_compile: sm_90a kernels with
# the TMA forms alone, and a variant with both forms for launches that cannot have maps) on every
# example, stdlib and golden kernel against the interpreter.
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt"
start=$SECONDS
timeout "${1:-280}" /tmp/dev/gpu_levels --root "$PWD" > "$OUT/levels.log" 2>&1
echo "gpu_levels rc $? in $((SECONDS - start)) s" > "$OUT/summary.txt"
grep -E "^FAIL|gpu_levels:" "$OUT/levels.log" | head -40 >> "$OUT/summary.txt"
tail -5 "$OUT/levels.log" >> "$OUT/summary.txt"
