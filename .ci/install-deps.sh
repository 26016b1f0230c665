#!/usr/bin/env bash
# Installs the Debian packages tilec needs to build and test (Debian 12 "bookworm").
# ptxas is optional (the CUDA toolkit at /usr/local/cuda): the tests that need it skip without it.
set -euo pipefail
pkgs=(cmake ninja-build gcc g++ llvm-19-dev llvm-19-tools libzstd-dev zlib1g-dev re2c lemon python3
      libxxhash-dev               # jit/hash.c: XXH3-128, inlined from xxhash.h
      clang-19 libclang-rt-19-dev # clang-19 and its runtimes (libFuzzer, ASan, UBSan): tests/fuzz
      clang-format-19             # tools/check-format.sh
      pkg-config dpkg-dev file groff-base # the install, consumer and .deb tests (docs/install.md)
      python3-numpy)                      # the Python binding's test, python.binding (docs/python.md)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
