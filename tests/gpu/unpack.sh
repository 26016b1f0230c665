#!/usr/bin/env bash
# tests/gpu/unpack.sh SRC DIR: unpacks what tests/gpu/pack.sh packed into SRC, into DIR (xz, or
# python3's lzma where xz is absent).
set -euo pipefail
src=${1:?usage: unpack.sh SRC DIR} dir=${2:?usage: unpack.sh SRC DIR}
mkdir -p "$dir"
if compgen -G "$src/bin/*" >/dev/null; then cp "$src"/bin/* "$dir"/; fi
for f in "$src"/xz/*.xz; do
  out="$dir/$(basename "$f" .xz)"
  if command -v xz >/dev/null; then xz -dc "$f" >"$out"
  else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$f" "$out"; fi
  chmod +x "$out"
done
