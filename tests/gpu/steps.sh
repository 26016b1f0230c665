#!/usr/bin/env bash
# tests/gpu/steps.sh PACKED OUTDIR STEP...: one call of a lent GPU machine (10 minutes a call) spent on
# several steps, in order, each cut off where the call's time would run out.
#
#   tests/gpu/steps.sh .dev "$OUT" p1 x7 lv      (run from the repository's root)
#
# Unpacks what tests/gpu/pack.sh packed into PACKED into $DEV (default /tmp/dev; the session's own
# scripts find tilec there), writes OUTDIR/gpu.txt (the card, its clock and its limit), then:
#   pN      tests/gpu/acceptance.sh DEV/tilec OUTDIR/pN N (issues 14-17's speed, part N), log OUTDIR/pN.txt
#   lv      DEV/gpu_levels --root . (every kernel of the tree on the GPU against the interpreter),
#           OUTDIR/levels.txt
#   all1, all2, all3  tests/gpu/all.sh --quick --part 1, 2 or 3 into OUTDIR/allN, log OUTDIR/allN.txt
#   NAME    bash PACKED/NAME.sh (a session's experiment, e.g. a sweep_gemm.py run; DEV and OUT
#           name the programs' and the output's folders), OUTDIR/NAME.txt
# A step starts only while more than 30 s of LIMIT (seconds, default 580) are left, and runs under
# `timeout` for what is left. OUTDIR/rc.txt gets each step's exit status (124: cut off) and the
# seconds since the start; at the end everything in OUTDIR is also packed into OUTDIR/all.tgz, for a
# device tool that brings back only so many files. Exit status: 2 on bad arguments, else 0 (the
# steps' statuses are in rc.txt).
set -u -o pipefail
# shellcheck source=script_common.sh
source "$(dirname "$0")/script_common.sh"
[ $# -ge 3 ] || usage
packed=$1 out=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
for s in "$@"; do
  case $s in
    p[1-4] | lv | all1 | all2 | all3) ;;
    *) [ -f "$packed/$s.sh" ] || { echo "steps.sh: no step '$s' (and no $packed/$s.sh)" >&2; exit 2; } ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
dev=${DEV:-/tmp/dev} limit=${LIMIT:-580} start=$SECONDS
export DEV=$dev OUT=$out
"$here/unpack.sh" "$packed" "$dev"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
for s in "$@"; do
  left=$((limit - SECONDS + start))
  if [ $left -le 30 ]; then
    echo "$s skipped: ${left} s left" | tee -a "$out/rc.txt"
    continue
  fi
  case $s in
    p*) timeout "$left" "$here/acceptance.sh" "$dev/tilec" "$out/$s" "${s#p}" >"$out/$s.txt" 2>&1 ;;
    lv) timeout "$left" "$dev/gpu_levels" --root "$here/../.." >"$out/levels.txt" 2>&1 ;;
    all1 | all2 | all3) timeout "$left" "$here/all.sh" "$dev/tilec" "$dev" "$out/$s" --quick --part "${s#all}" \
      >"$out/$s.txt" 2>&1 ;;
    *) timeout "$left" bash "$packed/$s.sh" >"$out/$s.txt" 2>&1 ;;
  esac
  echo "$s rc $? at $((SECONDS - start)) s" | tee -a "$out/rc.txt"
done
(cd "$out" && tar czf all.tgz --exclude all.tgz . && ls -la)
exit 0
