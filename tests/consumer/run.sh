#!/usr/bin/env bash
# run.sh BUILD_DIR [LLVM_LIBDIR]: the consumer test (ctest install.consumer; docs/install.md).
#
# Installs BUILD_DIR into a temporary prefix (cmake --install), checks the files there, then builds
# main.c against that prefix three ways and runs each on the CPU device:
#   1. a CMake project: find_package(tilec 0.1) and tilec::jit (and find_package(tilec 1.0) refused);
#      with it compiler_only.c (tilec::compiler) and runtime_only.c (tilec::runtime, no tilec .so, on
#      PTX from the installed tilec);
#   2. a plain cc command with `pkg-config --cflags --libs tilec-jit`;
#   3. with LLVM_LIBDIR given: the static archives, libtilec_jit.a with that LLVM.
# The shared builds must not load libLLVM: the library carries it.
set -euo pipefail
build=$(cd "$1" && pwd)
llvm_libdir=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cc=${CC:-cc}
export TILEC_CACHE_DIR=$tmp/cache
unset TILEC_DEVICE

fail() { echo "consumer: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "install failed"; }
for f in bin/tilec include/tilec.h include/tilec_runtime.h include/tilec_jit.h include/tilec_version.h \
  lib/libtilec_jit.so lib/libtilec_jit.so.0 lib/libtilec_jit.a lib/libtilec_runtime.a \
  lib/cmake/tilec/tilecConfig.cmake lib/cmake/tilec/tilecConfigVersion.cmake lib/pkgconfig/tilec-jit.pc \
  share/tilec/stdlib/softmax.tl share/man/man1/tilec.1 share/doc/tilec/c-api.md share/doc/tilec/install.md; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done
[ "$("$prefix/bin/tilec" --version)" = "tilec $(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/tilec-jit.pc")" ] ||
  fail "the installed tilec --version and tilec-jit.pc disagree"
warnings=$(groff -man -ww -z "$prefix/share/man/man1/tilec.1" 2>&1) || fail "groff failed on tilec.1: $warnings"
[ -z "$warnings" ] || fail "tilec.1: $warnings"

run() { # run NAME BINARY: its output must be the OK line, and it must not load libLLVM
  local out
  out=$("$2" "$root/examples/vector_add.tl") || fail "$1: the program failed"
  [[ $out == "consumer: tilec "*", vector_add N=10007 on cpu (tilec interpreter): OK" ]] || fail "$1: printed '$out'"
  echo "$1: $out"
}
no_llvm() { # (ldd's output in a variable: grep -q may close a pipe before ldd is done)
  local libs
  libs=$(LD_LIBRARY_PATH=$prefix/lib ldd "$2")
  if grep -i llvm <<<"$libs"; then fail "$1 loads a shared LLVM"; fi
  grep -q "libtilec_jit.so.0 => $prefix/lib/" <<<"$libs" || fail "$1 does not load the installed libtilec_jit.so.0"
}

# 1. CMake
cmake -S "$here" -B "$tmp/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "find_package(tilec 0.1) failed"; }
cmake --build "$tmp/cmake" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "the CMake build failed"; }
no_llvm cmake "$tmp/cmake/consumer"
run cmake "$tmp/cmake/consumer"
no_llvm compiler_only "$tmp/cmake/compiler_only"
"$tmp/cmake/compiler_only" "$root/examples/vector_add.tl" || fail "compiler_only failed"
if grep -Ei 'tilec|llvm' <<<"$(ldd "$tmp/cmake/runtime_only")"; then fail "runtime_only loads more than the runtime"; fi
"$prefix/bin/tilec" "$root/examples/vector_add.tl" -o "$tmp/vector_add.ptx" || fail "the installed tilec failed"
"$tmp/cmake/runtime_only" "$tmp/vector_add.ptx" || fail "runtime_only failed"
if cmake -S "$here" -B "$tmp/cmake1" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DTILEC_WANT=1.0 >"$tmp/cmake1.log" 2>&1; then
  fail "find_package(tilec 1.0) accepted version 0.x"
fi

# 2. pkg-config
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
flags=$(pkg-config --cflags --libs tilec-jit)
# shellcheck disable=SC2086 # the flags are words
$cc -std=c17 -Wall -Wextra -Werror -o "$tmp/pc" "$here/main.c" $flags
no_llvm pkg-config "$tmp/pc"
LD_LIBRARY_PATH=$prefix/lib run pkg-config "$tmp/pc"

# 3. static
if [ -n "$llvm_libdir" ]; then
  $cc -std=c17 -o "$tmp/static" "$here/main.c" -I"$prefix/include" "$prefix/lib/libtilec_jit.a" \
    -L"$llvm_libdir" -Wl,-rpath,"$llvm_libdir" -lLLVM -lstdc++ -lm -lpthread -ldl
  if grep libtilec <<<"$(ldd "$tmp/static")"; then fail "the static build loads a tilec library"; fi
  run static "$tmp/static"
fi
