#!/usr/bin/env bash
# run.sh LIBRARY [BUILD_DIR]: the Python binding's tests (ctest python.binding; docs/python.md).
#
# 1. test_tilec.py with TILEC_LIBRARY=LIBRARY, run by the first of $TILEC_PYTHON, python3,
#    /usr/bin/python3 that has NumPy (a python3 earlier on PATH, a pyenv one say, may lack Debian's
#    python3-numpy). Exit 77 (skipped) when none has it.
# 2. With BUILD_DIR: `cmake --install BUILD_DIR` into a temporary prefix, then, with TILEC_LIBRARY
#    unset and PYTHONPATH=PREFIX/share/tilec/python as docs/python.md says, import tilec from there:
#    it must load PREFIX/lib's library and run vector_add on the CPU device.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
library=${1:-${TILEC_LIBRARY:-}}
build=${2:-}
unset TILEC_DEVICE TILEC_CACHE_DISABLE
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree
. "$(dirname "$0")/../numpy_python.sh"
if ! python=$(numpy_python); then
  echo "python.binding: no python3 with NumPy (Debian: python3-numpy): skipped"
  exit 77
fi
echo "python.binding: $("$python" -c 'import sys, numpy; print(sys.executable, sys.version.split()[0], "numpy", numpy.__version__)')"
TILEC_LIBRARY=$library "$python" "$root/tests/python/test_tilec.py" -v

[ -n "$build" ] || exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
out=$(cd "$tmp" && env -u TILEC_LIBRARY PYTHONPATH="$tmp/prefix/share/tilec/python" TILEC_CACHE_DIR="$tmp/cache" \
  "$python" -c '
import sys, numpy as np, tilec
add = tilec.compile_file(sys.argv[1], device="cpu")["vector_add"]
a = np.arange(1000, dtype=np.float32)
c = np.zeros_like(a)
add(a, a, c)
assert (c == 2 * a).all()
print(tilec.__file__, tilec.library_path(), tilec.stdlib_dir(), "OK")' "$root/examples/vector_add.tl") ||
  { echo "python.binding: the installed package failed"; exit 1; }
echo "python.binding: installed: $out"
[[ $out == "$tmp/prefix/share/tilec/python/tilec/__init__.py $tmp/prefix/lib/libtilec_jit.so.0 $tmp/prefix/share/tilec/stdlib OK" ]] ||
  { echo "python.binding: the installed package is not the one expected, or did not load the installed library"; exit 1; }
