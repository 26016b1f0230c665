#!/usr/bin/env bash
# tests/gpu/pack.sh BUILD DEST: packs what tests/gpu/all.sh needs from a -DTILEC_STATIC_LLVM=ON build
# into DEST (default .dev, ignored by git), small enough to travel to a lent GPU machine (64 MiB):
# the programs that link LLVM (tilec, gpu_conform, gpu_levels, jit_bench, host_jit: ~37 MB each stripped) as .xz
# (~10 MB each), the others stripped. On the GPU machine, tests/gpu/unpack.sh DEST DIR unpacks them
# into DIR; then tests/gpu/all.sh DIR/tilec DIR OUTDIR.
set -euo pipefail
build=${1:?usage: pack.sh BUILD [DEST]} dest=${2:-.dev}
rm -rf "$dest"; mkdir -p "$dest/bin" "$dest/xz"
for f in tests/gpu/gpu_suite tests/gpu/gpu_bench tests/gpu/gpu_rows tests/gpu/gpu_gemm tests/gpu/gpu_aot_variants examples/host_aot; do
  strip -o "$dest/bin/$(basename "$f")" "$build/$f"
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for f in tools/tilec tests/gpu/gpu_conform tests/gpu/gpu_levels tests/gpu/jit_bench examples/host_jit; do
  strip -o "$tmp/$(basename "$f")" "$build/$f"
  xz -T0 -6 -c "$tmp/$(basename "$f")" >"$dest/xz/$(basename "$f").xz"
done
du -sh "$dest"
