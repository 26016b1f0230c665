#!/usr/bin/env bash
# tutorials.sh ROOT: runs tests/tutorials.py ROOT with the first of $TILEC_PYTHON, python3,
# /usr/bin/python3 that has NumPy (a python3 earlier on PATH, a pyenv one say, may lack Debian's
# python3-numpy). Exit 77 (skipped) when none has it.
set -u
. "$(dirname "$0")/numpy_python.sh"
if py=$(numpy_python); then
  exec "$py" "$(dirname "$0")/tutorials.py" "$@"
fi
echo "docs.tutorials: no python3 with NumPy (Debian: python3-numpy): skipped"
exit 77
