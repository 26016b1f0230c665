#!/usr/bin/env bash
# deb.sh BUILD_DIR: the .deb (ctest install.deb; docs/install.md). Builds it with `cpack -G DEB` into a
# temporary folder, checks with dpkg-deb its name, version, Depends (computed by dpkg-shlibdeps) and
# files, then unpacks it and builds and runs tests/consumer/main.c against the unpacked tree with
# pkg-config: the package is usable as it stands, not only installable.
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "deb: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack failed"; }
debs=("$tmp"/tilec_*.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || fail "expected one tilec_*.deb, got: $(ls "$tmp")"
deb=${debs[0]}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
major=${version%%.*}

[ "$(dpkg-deb -f "$deb" Package)" = tilec ] || fail "the package is not named tilec"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "version $(dpkg-deb -f "$deb" Version), expected $version"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libstdc++6 libzstd1 zlib1g; do
  [[ $depends == *"$lib "* || $depends == *"$lib," || $depends == *"$lib" ]] || fail "Depends lacks $lib: $depends"
done
# With LLVM static everywhere (TILEC_STATIC_LLVM, the CLI too) nothing needs an LLVM package.
if grep -q '^TILEC_STATIC_LLVM:BOOL=ON' "$build/CMakeCache.txt" && [[ $depends == *llvm* ]]; then
  fail "Depends names LLVM in a TILEC_STATIC_LLVM build: $depends"
fi

dpkg-deb -c "$deb" | awk '{ print $6 }' >"$tmp/files"
for f in ./usr/bin/tilec ./usr/include/tilec.h ./usr/include/tilec_runtime.h ./usr/include/tilec_jit.h \
  ./usr/include/tilec_version.h \
  "./usr/lib/libtilec_jit.so.$version" "./usr/lib/libtilec_jit.so.$major" ./usr/lib/libtilec_jit.so \
  ./usr/lib/libtilec_jit.a ./usr/lib/libtilec_runtime.a ./usr/lib/cmake/tilec/tilecConfig.cmake \
  ./usr/lib/cmake/tilec/tilecConfigVersion.cmake ./usr/lib/pkgconfig/tilec-jit.pc \
  ./usr/share/man/man1/tilec.1 ./usr/share/tilec/stdlib/softmax.tl ./usr/share/doc/tilec/install.md \
  ./usr/lib/python3/dist-packages/tilec.pth ./usr/share/tilec/python/tilec/__init__.py; do
  grep -qxF "$f" "$tmp/files" || fail "the package lacks $f"
done
shlibs=$(dpkg-deb -I "$deb" shlibs)
[[ $shlibs == "libtilec_jit $major tilec (>= $version)" ]] || fail "shlibs is '$shlibs'"

dpkg-deb -x "$deb" "$tmp/root"
usr=$tmp/root/usr
flags=$(PKG_CONFIG_PATH=$usr/lib/pkgconfig pkg-config --cflags --libs tilec-jit)
# shellcheck disable=SC2086 # the flags are words
${CC:-cc} -std=c17 -o "$tmp/consumer" "$root/tests/consumer/main.c" $flags
out=$(TILEC_CACHE_DIR=$tmp/cache LD_LIBRARY_PATH=$usr/lib "$tmp/consumer" "$root/examples/vector_add.tl")
[[ $out == *": OK" ]] || fail "the consumer built from the package printed '$out'"
echo "deb: $(basename "$deb"), $(wc -l <"$tmp/files") entries; Depends: $depends"
echo "deb: $out"
