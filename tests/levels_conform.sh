#!/bin/sh
# tests/levels_conform.sh: the interpreter's two levels on the conformance kernels of
# tests/gpu/gpu_conform (copies between every pair of scopes, gemm with its accumulator layouts,
# reductions, chains), with no GPU: gpu_conform writes the kernels' sources, test_levels runs each at
# the tile level and the thread level of sm_80 and sm_90a on the same random inputs and compares.
#
#   tests/levels_conform.sh GPU_CONFORM TEST_LEVELS [--random N [--seed S]] [--sample K]
#
# --random N: N kernels drawn at random (a new seed each run unless --seed; gpu_conform prints it);
# otherwise the matrix (every Kth case with --sample K). Exit status: test_levels's.
set -eu
conform=$1
levels=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/tilec-levels-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$conform" "$@" --dump "$dir"
"$levels" --dir "$dir"
