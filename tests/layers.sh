#!/usr/bin/env bash
# layers.sh [ROOT]: checks that no folder includes a header of a folder above it or beside it.
#
# The layers, lowest first (docs/architecture.md, "Layers"); a folder may include its own headers,
# the public headers of include/, and the headers of any folder on a lower row, never those of a
# folder on its own row or above:
#
#   0  ir runtime                   the tile IR, target table, arena, diagnostics | the runtime
#   1  frontend passes codegen      .tl -> tile IR | tile IR -> tile IR | tile IR -> LLVM -> PTX
#   2  interp                       .tl kernels run on the CPU (interp/interp.h)
#   3  compiler                     the compiler library's front door (include/tilec.h)
#   4  jit                          .tl -> loaded modules through a cache (include/tilec_jit.h)
#   5  tools                        the tilec command line
#
# Every #include "..." of every .c, .h, .y and .re file in those folders is resolved to the folder
# that holds the header (a header found in none of them, such as a generated parse.h or
# tilec_build_id.h, counts as its generator's folder's, which is the includer's own). Each include
# that breaks the rule is printed as FILE:LINE: TEXT; the exit status is 1 if there is any.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

declare -A rank=([ir]=0 [runtime]=0 [frontend]=1 [passes]=1 [codegen]=1 [interp]=2 [compiler]=3 [jit]=4 [tools]=5)
folders="ir runtime frontend passes codegen interp compiler jit tools"

# header name -> the folder that holds it (include/ for the public ones)
declare -A home=()
for h in include/*.h; do home[$(basename "$h")]=include; done
for d in $folders; do
  for h in "$d"/*.h "$d"/*.inc; do
    [ -e "$h" ] || continue
    b=$(basename "$h")
    if [ -n "${home[$b]:-}" ] && [ "${home[$b]}" != "$d" ]; then
      echo "layers: $h and ${home[$b]}/$b share a name: an include of it is ambiguous" >&2
      exit 2
    fi
    home[$b]=$d
  done
done

bad=0 checked=0
for d in $folders; do
  for f in "$d"/*.c "$d"/*.h "$d"/*.y "$d"/*.re; do
    [ -e "$f" ] || continue
    while IFS=: read -r line text; do
      [[ $text =~ \"([^\"]+)\" ]] || continue
      name=${BASH_REMATCH[1]}
      checked=$((checked + 1))
      h=${home[$(basename "$name")]:-$d} # not in the tree: generated in the includer's own folder
      [ "$h" = include ] || [ "$h" = "$d" ] && continue
      if [ "${rank[$h]}" -ge "${rank[$d]}" ]; then
        why=above
        [ "${rank[$h]}" -eq "${rank[$d]}" ] && why=beside
        echo "$f:$line: $text    <- $h/ is $why $d/"
        bad=$((bad + 1))
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
  done
done
if [ "$bad" -ne 0 ]; then
  echo "layers: $bad of $checked includes reach a folder above or beside their own"
  exit 1
fi
echo "layers: $checked includes, none reaches above or beside its folder"
