#!/usr/bin/env bash
# deb_system.sh BUILD_DIR: the .deb installed for real (ctest install.deb_system; docs/install.md).
#
# What a user of a fresh Debian 12 does: `dpkg -i tilec_*.deb`, then, with nothing else set up
# (no PKG_CONFIG_PATH, CMAKE_PREFIX_PATH, LD_LIBRARY_PATH or PYTHONPATH), build tests/consumer with
# CMake and with pkg-config and run both, compile with /usr/bin/tilec, and `import tilec` in python3
# and run vector_add on the CPU device; then `dpkg --purge tilec` and check nothing of it is left.
# It changes the system, so it runs only as root with TILEC_SYSTEM_INSTALL_TEST=1 (.ci/run sets it;
# CI machines are fresh), and refuses when a tilec package is already installed. Otherwise: skipped (77).
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
if [ "${TILEC_SYSTEM_INSTALL_TEST:-0}" != 1 ] || [ "$(id -u)" != 0 ]; then
  echo "deb_system: skipped (needs root and TILEC_SYSTEM_INSTALL_TEST=1: it installs into /usr)"
  exit 77
fi
fail() { echo "deb_system: $*" >&2; exit 1; }
if dpkg-query -W -f='${Status}' tilec 2>/dev/null | grep -q installed; then
  fail "a tilec package is already installed; this test would replace it (dpkg --purge tilec first)"
fi
for f in /usr/bin/tilec /usr/lib/libtilec_jit.so.0 /usr/include/tilec.h; do
  [ ! -e "$f" ] || fail "$f exists outside any package; this test would overwrite it"
done
tmp=$(mktemp -d)
installed=0
cleanup() {
  [ $installed = 0 ] || dpkg --purge tilec >/dev/null 2>&1 || echo "deb_system: dpkg --purge tilec failed" >&2
  rm -rf "$tmp"
}
trap cleanup EXIT
unset PKG_CONFIG_PATH CMAKE_PREFIX_PATH LD_LIBRARY_PATH PYTHONPATH TILEC_LIBRARY TILEC_DEVICE
export TILEC_CACHE_DIR=$tmp/cache

(cd "$build" && cpack -G DEB -B "$tmp/deb" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack failed"; }
deb=$(echo "$tmp"/deb/tilec_*.deb)
[ -f "$deb" ] || fail "no tilec_*.deb from cpack"
installed=1
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i $(basename "$deb") failed"; }
dpkg -s tilec | grep -q '^Status: install ok installed' || fail "dpkg does not list tilec as installed"

version=$(dpkg-query -W -f='${Version}' tilec)
[ "$(tilec --version)" = "tilec $version" ] || fail "tilec --version says '$(tilec --version)', the package $version"
tilec "$root/examples/vector_add.tl" -o "$tmp/vector_add.ptx" || fail "/usr/bin/tilec failed"
grep -q '^// tilec-meta' "$tmp/vector_add.ptx" || fail "/usr/bin/tilec wrote no launch metadata"

check_run() { # NAME BINARY: the OK line, and the library loaded from /usr/lib
  local out libs lib
  libs=$(ldd "$2")
  lib=$(sed -n 's/^[[:space:]]*libtilec_jit.so.0 => \([^ ]*\) .*/\1/p' <<<"$libs")
  # (with Debian's merged /usr the loader may name it /lib/...: the same file)
  [ -n "$lib" ] && [ "$(readlink -f "$lib")" = "$(readlink -f /usr/lib/libtilec_jit.so.0)" ] ||
    fail "$1 does not load /usr/lib/libtilec_jit.so.0: $libs"
  out=$("$2" "$root/examples/vector_add.tl") || fail "$1: the program failed"
  [[ $out == "consumer: tilec $version, vector_add N=10007 on cpu (tilec interpreter): OK" ]] || fail "$1: printed '$out'"
  echo "deb_system: $1: $out"
}
cmake -S "$here/consumer" -B "$tmp/cmake" -G Ninja >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "find_package(tilec) in /usr failed"; }
cmake --build "$tmp/cmake" --target consumer >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "the CMake build failed"; }
check_run cmake "$tmp/cmake/consumer"
# shellcheck disable=SC2046 # the flags are words
${CC:-cc} -std=c17 -o "$tmp/pkgconfig" "$here/consumer/main.c" $(pkg-config --cflags --libs tilec-jit) ||
  fail "cc with pkg-config tilec-jit failed"
check_run pkg-config "$tmp/pkgconfig"

# Debian's python3 (a python3 of pyenv or a venv earlier in PATH does not read dist-packages)
py=/usr/bin/python3
[ -x $py ] || fail "no $py: install python3"
if $py -c 'import numpy' 2>/dev/null; then
  out=$(cd "$tmp" && $py - "$root/examples/vector_add.tl" <<'PY'
import sys
import numpy as np
import tilec
k = tilec.compile_file(sys.argv[1], device="cpu")["vector_add"]
a = np.arange(1000, dtype=np.float32)
b = np.full(1000, 0.5, dtype=np.float32)
c = np.zeros(1000, dtype=np.float32)
k(a, b, c)
assert np.array_equal(c, a + b), "wrong sums"
print(tilec.__file__, tilec.library_path())
PY
  ) || fail "python3: import tilec and vector_add on the CPU device failed"
  [[ $out == "/usr/share/tilec/python/tilec/__init__.py /usr/lib/libtilec_jit.so.0" ]] ||
    fail "python3 found tilec and its library at: $out"
  echo "deb_system: python3: $out"
else
  (cd "$tmp" && $py -c 'import tilec') || fail "python3 -c 'import tilec' failed"
  echo "deb_system: python3: import tilec (no NumPy: not run)"
fi

dpkg --purge tilec >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg --purge tilec failed"; }
installed=0
for f in /usr/bin/tilec /usr/lib/libtilec_jit.so.0 /usr/include/tilec.h /usr/share/tilec \
  /usr/lib/python3/dist-packages/tilec.pth /usr/lib/cmake/tilec; do
  [ ! -e "$f" ] || fail "$f is left after dpkg --purge tilec"
done
echo "deb_system: $(basename "$deb") installed, used from CMake, pkg-config, the CLI and python3, purged"
