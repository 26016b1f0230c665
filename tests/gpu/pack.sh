#!/usr/bin/env bash
# tests/gpu/pack.sh BUILD DEST: packs what tests/gpu/all.sh needs from a -DTILEC_STATIC_LLVM=ON build
# into DEST (default .dev, ignored by git), small enough to travel to a lent GPU machine (64 MiB):
# the programs that link LLVM (tilec, gpu_conform, gpu_levels, jit_bench, host_jit: ~37 MB each stripped) as .xz
# (~10 MB each), the others stripped. On the GPU machine, tests/gpu/unpack.sh DEST DIR unpacks them
# into DIR; then tests/gpu/all.sh DIR/tilec DIR OUTDIR.
#
# tests/gpu/pack.sh BUILD DEST --lib: a smaller set for the scripts that need the shared library
# (tests/gpu/python_binding.py): tilec, gpu_levels and jit_bench, and libtilec_jit.so.0 (as DIR/libtilec_jit.so.0).
set -euo pipefail
build=${1:?usage: pack.sh BUILD [DEST] [--lib]} dest=${2:-.dev}
lib=${3:-}
rm -rf "$dest"; mkdir -p "$dest/bin" "$dest/xz"
big=(tools/tilec tests/gpu/gpu_conform tests/gpu/gpu_levels tests/gpu/jit_bench examples/host_jit)
small=(tests/gpu/gpu_suite tests/gpu/gpu_bench tests/gpu/gpu_rows tests/gpu/gpu_gemm tests/gpu/gpu_aot_variants examples/host_aot)
if [ "$lib" = --lib ]; then
  big=(tools/tilec tests/gpu/gpu_levels tests/gpu/jit_bench packaging/libtilec_jit.so.0)
  small=()
fi
for f in "${small[@]}"; do
  strip -o "$dest/bin/$(basename "$f")" "$build/$f"
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for f in "${big[@]}"; do
  strip -o "$tmp/$(basename "$f")" "$build/$f"
  xz -T0 -6 -c "$tmp/$(basename "$f")" >"$dest/xz/$(basename "$f").xz"
done
du -sh "$dest"
