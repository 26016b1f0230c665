#!/usr/bin/env bash
# tools/check-format.sh [--fix] [-v] [FILE...]: is every C source and header formatted as
# .clang-format says? Checks the files git tracks (*.c, *.h; .clang-format-ignore names the
# exceptions), or the FILEs given, with clang-format-19 --dry-run -Werror, lists the ones that are
# not formatted and exits 1 if there is one (-v also shows what would change).
#   --fix   rewrite them in place instead (exit 0 unless clang-format fails)
# Only clang-format 19 is accepted: other versions format some constructs differently.
# $CLANG_FORMAT names another binary of version 19.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0 verbose=0 files=()
for a in "$@"; do
  case $a in
  --fix) fix=1 ;;
  -v) verbose=1 ;;
  -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "check-format: unknown option $a" >&2; exit 2 ;;
  *) files+=("$a") ;;
  esac
done

cf=${CLANG_FORMAT:-clang-format-19}
if ! command -v "$cf" >/dev/null; then
  echo "check-format: $cf not found (.ci/install-deps.sh installs clang-format-19)" >&2
  exit 2
fi
version=$("$cf" --version | sed -n 's/.*clang-format version \([0-9]*\)\..*/\1/p')
if [ "$version" != 19 ]; then
  echo "check-format: $cf is clang-format ${version:-of an unknown version}, not 19" >&2
  exit 2
fi

if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(git ls-files -- '*.c' '*.h')
fi
[ ${#files[@]} -gt 0 ] || { echo "check-format: no files" >&2; exit 2; }

if [ $fix = 1 ]; then
  # clang-format skips the files .clang-format-ignore names, also when they are given by name.
  printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc)" "$cf" -i
  exit 0
fi

# One clang-format per file, in parallel; each prints the file's name if it is not formatted.
mapfile -t bad < <(printf '%s\0' "${files[@]}" |
  xargs -0 -n 1 -P "$(nproc)" sh -c '"$0" --dry-run -Werror "$1" >/dev/null 2>&1 || echo "$1"' "$cf" | sort)
if [ ${#bad[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files formatted as .clang-format says"
  exit 0
fi
echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
for f in "${bad[@]}"; do
  echo "  $f"
  [ $verbose = 0 ] || "$cf" "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - | sed 's/^/    /' || true
done
echo "check-format: tools/check-format.sh --fix rewrites them (-v shows what changes)"
exit 1
