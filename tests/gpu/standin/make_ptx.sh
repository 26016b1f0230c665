#!/usr/bin/env bash
# make_ptx.sh OUTDIR: build the stand-in kernels of this folder into OUTDIR/{vector_add,saxpy,gelu}.ptx
# with nvcc, each prefixed with its tilec-meta block (NAME.meta), exactly as tilec's output would be.
# For checking the GPU suite, the benchmark and the runtime without tilec: tests/gpu/run.sh --standin.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: make_ptx.sh OUTDIR}
nvcc=${NVCC:-nvcc}
if ! command -v "$nvcc" >/dev/null; then
  nvcc=/usr/local/cuda/bin/nvcc
fi
mkdir -p "$out"
for name in vector_add saxpy gelu; do
  "$nvcc" -arch=sm_90a -O3 -ptx "$here/$name.cu" -o "$out/$name.body.ptx"
  cat "$here/$name.meta" "$out/$name.body.ptx" >"$out/$name.ptx"
  rm -f "$out/$name.body.ptx"
  echo "stand-in $name.ptx: built with $("$nvcc" --version | tail -1)"
done
