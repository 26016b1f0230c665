#!/bin/bash
# session 37 call 2: llvm.licm.disable on loops around gemm loops (TL_LICM=1: the old behaviour);
# correctness of the kernels it changes, an A/B on the persistent GEMM, then the rest of all.sh --quick
cd "$(dirname "$0")/.."
tests/gpu/unpack.sh .dev /tmp/dev >/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
printf '#!/bin/sh\nTL_LICM=1 exec /tmp/dev/tilec "$@"\n' > /tmp/dev/tilec_licm; chmod +x /tmp/dev/tilec_licm
{ for f in persistent pipeline_reuse overlap_register_a stdlib/gemm; do timeout 25 /tmp/dev/gpu_levels --root $PWD $f; done; } > $OUT/levels.txt 2>&1; echo "levels rc $?" >> $OUT/rc.txt
cd tests/gpu
for r in 1; do
for c in tilec tilec_licm; do
timeout 40 python3 sweep_gemm.py /tmp/dev/$c /tmp/sw_$c --dtypes f16 --m 4096,8192 --nk 4096x4096,8192x8192 --reps 10 --alt pers=../../examples/matmul_persistent.tl --alt pp8=../../.dev/tl/pp8.tl > /tmp/sw_$c.log 2>&1; echo "sweep $c rc $?" >> $OUT/rc.txt
grep -E "^\| [0-9]|geometric" /tmp/sw_$c.log | sed "s/^/$c$r /" >> $OUT/ab.txt
done; done
cd ../..
W=/tmp/allrest; mkdir -p $W
timeout 30 /tmp/dev/gpu_aot_variants > $W/aot.log 2>&1; echo "aot rc $?" >> $OUT/rc.txt
timeout 80 tests/gpu/rows.sh --ptx-dir $W/rows_ptx /tmp/dev/tilec /tmp/dev $W/rows --quick > $W/rows_out.log 2>&1; echo "rows rc $?" >> $OUT/rc.txt
timeout 80 tests/gpu/gemm.sh --ptx-dir $W/gemm_ptx /tmp/dev/tilec /tmp/dev $W/gemm --quick > $W/gemm_out.log 2>&1; echo "gemm rc $?" >> $OUT/rc.txt
(cd tests/gpu && timeout 60 python3 attention.py /tmp/dev/tilec $W/attention --check-only > $W/attention.log 2>&1; echo "attn rc $?" >> $OUT/rc.txt)
(cd tests/gpu && timeout 30 python3 atomics.py /tmp/dev/tilec $W/atomics --check-only > $W/atomics.log 2>&1; echo "atomics rc $?" >> $OUT/rc.txt)
(cd tests/gpu && timeout 30 python3 tutorials.py /tmp/dev/tilec $W/tutorials --reps 5 > $W/tutorials.log 2>&1; echo "tutorials rc $?" >> $OUT/rc.txt)
for f in aot.log rows_out.log gemm_out.log attention.log atomics.log tutorials.log; do printf '==== %s\n' $f; tail -25 $W/$f; done > $OUT/rest.txt 2>&1
