#!/usr/bin/env bash
# The CPU test suite: first the formatting of every C file (tools/check-format.sh,
# a few seconds), then a release build and an ASan + UBSan build, each running
# every CTest test (unit, golden, diagnostics, CLI, ptxas, the ABI checks; in the
# release build also the install, the consumer project and the .deb: docs/install.md);
# then the fuzzers for a bounded time (tests/fuzz/run.sh --ci, about 3 minutes;
# TILEC_FUZZ=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
.ci/install-deps.sh
tools/check-format.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
ctest --test-dir build --output-on-failure -j "$jobs"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTILEC_SANITIZE=ON >/dev/null
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
[ "${TILEC_FUZZ:-1}" = 0 ] || tests/fuzz/run.sh --ci
