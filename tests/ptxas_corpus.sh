#!/usr/bin/env bash
# ptxas_corpus.sh TILEC OUT.txt: compiles every examples/, stdlib/ and tests/golden/ .tl for sm_90a
# and sm_80 with TILEC (its environment passes through), assembles each with ptxas -v, and writes
# one line per kernel to OUT.txt: FILE.ARCH.KERNEL regs=R spill=BYTES sass=INSTRUCTIONS (the
# .text section's size / 16). For changes whose PTX differs but must not cost registers: a
# middle-end pipeline, a back-end level (results/compile-speed.md, session 34).
# ptxas_corpus.sh --compare OLD.txt NEW.txt: geometric means of the SASS and register ratios, how
# many kernels grew or shrank, and every kernel that spills more (exit 1 if one does).
set -euo pipefail
if [ "${1:-}" = --compare ]; then
  exec python3 - "$2" "$3" <<'EOF'
import math, sys
def load(path):
    d = {}
    for line in open(path):
        p = line.split()
        if len(p) == 4:
            d[p[0]] = {k: int(v or 0) for k, v in (x.split("=") for x in p[1:])}
    return d
old, new = load(sys.argv[1]), load(sys.argv[2])
sass, regs, worse = [], [], []
for k, a in sorted(old.items()):
    b = new.get(k)
    if b is None:
        worse.append(f"{k}: missing in {sys.argv[2]}")
        continue
    sass.append(b["sass"] / max(a["sass"], 1))
    regs.append(b["regs"] / max(a["regs"], 1))
    if b["spill"] > a["spill"]:
        worse.append(f"{k}: spill {a['spill']} -> {b['spill']} bytes, registers {a['regs']} -> {b['regs']}")
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
print(f"{len(sass)} kernels: SASS geomean {g(sass):.4f} ({sum(x > 1 for x in sass)} larger, "
      f"{sum(x < 1 for x in sass)} smaller), registers geomean {g(regs):.4f} "
      f"({sum(x > 1 for x in regs)} more, {sum(x < 1 for x in regs)} fewer)")
for w in worse:
    print("  " + w)
sys.exit(1 if worse else 0)
EOF
fi
[ $# -eq 2 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tilec=$(realpath "$1") out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
command -v ptxas >/dev/null || { echo "ptxas_corpus: no ptxas on PATH" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
one() { # FILE ARCH
  local f=$1 a=$2 b
  b=$(basename "$(dirname "$f")")_$(basename "$f" .tl).$a
  "$tilec" --arch="$a" "$f" -o "$tmp/$b.ptx" 2>/dev/null || return 0 # files for one target only
  ptxas -arch="$a" -v "$tmp/$b.ptx" -o "$tmp/$b.cubin" 2>"$tmp/$b.v" || { echo "$b ptxas-failed"; return 0; }
  readelf -SW "$tmp/$b.cubin" 2>/dev/null | awk '$2 ~ /^\.text\./ {print $2, $6}' | while read -r sec size; do
    local k=${sec#.text.} info
    info=$(grep -A3 "Compiling entry function '$k'" "$tmp/$b.v")
    echo "$b.$k regs=$(grep -oE 'Used [0-9]+ registers' <<<"$info" | grep -oE '[0-9]+')" \
      "spill=$(grep -oE '[0-9]+ bytes spill stores' <<<"$info" | grep -oE '^[0-9]+')" \
      "sass=$((0x$size / 16))"
  done
}
export -f one; export tilec tmp
for f in "$root"/examples/*.tl "$root"/stdlib/*.tl "$root"/tests/golden/*.tl; do
  printf '%s sm_90a\n%s sm_80\n' "$f" "$f"
done | xargs -P "$(nproc)" -n 2 bash -c 'one "$0" "$1"' | sort >"$out"
echo "ptxas_corpus: $(wc -l <"$out") kernels -> $out"
