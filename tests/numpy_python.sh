# numpy_python.sh, sourced by the tests that run Python with NumPy (tests/tutorials.sh,
# tests/puzzles/run.sh, tests/python/run.sh): numpy_python prints the first of $TILEC_PYTHON,
# python3, /usr/bin/python3 that imports NumPy (a python3 earlier on PATH, a pyenv one say, may lack
# Debian's python3-numpy), or returns 1 when none does (the caller then skips: exit 77).
numpy_python() {
  local py
  for py in ${TILEC_PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy' >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  return 1
}
