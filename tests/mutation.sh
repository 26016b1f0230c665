#!/usr/bin/env bash
# tests/mutation.sh: does the test suite notice a bug? Plants the bugs listed in tests/mutants.txt,
# one at a time, into a copy of the tree, and reports for each whether a test failed.
#
#   tests/mutation.sh [--only NAME]... [--keep] [--list]                    the cpu mutants
#   tests/mutation.sh --gpu TILEC BINDIR [--only NAME]... [--keep]         the gpu mutants
#
# The copy: the files git tracks and the untracked ones it does not ignore, as they are in the working
# tree now (uncommitted changes included), in a temporary folder (kept with --keep). Nothing in this
# checkout is written.
#
# cpu mutants: the copy is configured and built once in its own build folder and its ctest suite run
# as the baseline; then for each mutant, its one literal replacement is made, the copy rebuilt
# incrementally, ctest run (the whole suite, or the entry's `tests` subset), and the file put back.
# Caught: a test that passed in the baseline fails. Tests that already fail in the baseline are named
# and not run again.
#
# gpu mutants need a GPU to show: without --gpu they are listed as "not run". With --gpu (on a GPU
# machine: TILEC a tilec that runs there, BINDIR the folder of the built GPU programs, as for
# tests/gpu/rows.sh), each entry's `run` command is run in the root of the copy, unmutated first (it
# must pass; if it exits 2, no GPU, its mutants are not run), then once per mutant, with TILEC, BINDIR
# and OUT (an empty folder) in its environment; a gpu mutant must therefore live in a file that
# command reads from the copy (stdlib/, tests/gpu/). Caught: the command fails (any status but 0
# and 2).
#
# Exit status: 0 when every mutant that ran was caught; 1 when one was missed or could not be planted
# (its text not found exactly once, or the copy no longer builds); 2 on a usage error or a failed
# baseline.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
list=$here/mutants.txt
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
  exit 2
}

gpu=0 keep=0 list_only=0 tilec='' bindir=''
only=()
while [ $# -gt 0 ]; do
  case $1 in
  --gpu)
    [ $# -ge 3 ] || usage
    gpu=1 tilec=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") bindir=$(cd "$3" && pwd) || exit 2
    shift 3
    ;;
  --only)
    [ $# -ge 2 ] || usage
    only+=("$2")
    shift 2
    ;;
  --keep) keep=1; shift ;;
  --list) list_only=1; shift ;;
  *) usage ;;
  esac
done

# ---------------------------------------------------------------- the list
# Entries of "key: value" lines, separated by blank lines; '#' starts a comment line.
names=() files=() finds=() repls=() suites=() tests=() runs=()
flush() {
  [ -n "$e_name" ] || return 0
  if [ -z "$e_file" ] || [ -z "$e_find" ] || { [ "$e_suite" != cpu ] && [ "$e_suite" != gpu ]; } ||
    { [ "$e_suite" = gpu ] && [ -z "$e_run" ]; }; then
    echo "mutation.sh: entry '$e_name' of $list needs file, find, replace, suite cpu|gpu (and run for gpu)"
    exit 2
  fi
  names+=("$e_name") files+=("$e_file") finds+=("$e_find") repls+=("$e_repl") suites+=("$e_suite")
  tests+=("$e_tests") runs+=("$e_run")
  e_name='' e_file='' e_find='' e_repl='' e_suite='' e_tests='' e_run=''
}
e_name='' e_file='' e_find='' e_repl='' e_suite='' e_tests='' e_run=''
while IFS= read -r line || [ -n "$line" ]; do
  case $line in
  '#'*) continue ;;
  '') flush; continue ;;
  esac
  key=${line%%:*} val=${line#*:}
  val=${val# }
  case $key in
  name) e_name=$val ;;
  file) e_file=$val ;;
  find) e_find=$val ;;
  replace) e_repl=$val ;;
  suite) e_suite=$val ;;
  tests) e_tests=$val ;;
  run) e_run=$val ;;
  why) ;;
  *) echo "mutation.sh: $list: unknown key '$key'"; exit 2 ;;
  esac
done <"$list"
flush

selected() {
  local n
  [ ${#only[@]} -eq 0 ] && return 0
  for n in "${only[@]}"; do [ "$n" = "$1" ] && return 0; done
  return 1
}

if [ $list_only -eq 1 ]; then
  for i in "${!names[@]}"; do printf '%-28s %-4s %s\n' "${names[$i]}" "${suites[$i]}" "${files[$i]}"; done
  exit 0
fi
for n in "${only[@]}"; do
  printf '%s\n' "${names[@]}" | grep -qxF -- "$n" || { echo "mutation.sh: no mutant named '$n'"; exit 2; }
done

# ---------------------------------------------------------------- the copy
work=$(mktemp -d "${TMPDIR:-/tmp}/tilec-mutation.XXXXXX") || exit 2
if [ $keep -eq 1 ]; then echo "mutation.sh: working in $work (kept)"; else trap 'rm -rf "$work"' EXIT; fi
src=$work/src
mkdir -p "$src" "$work/orig"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  # Tracked and untracked-but-not-ignored files, as they are now; not those deleted from the tree.
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$src" || exit 2
else # a copy without its git folder (a device machine's): everything but build folders
  (cd "$root" && tar --exclude='./build' --exclude='./build-*' -cf - .) | tar -xf - -C "$src" || exit 2
fi

# plant FILE FIND REPLACE: replaces the one occurrence of FIND; status 1 if there is none, 2 if
# there are several. Byte-wise (LC_ALL=C), literal (the patterns are quoted).
plant() {
  local f=$1 find=$2 repl=$3 text rest
  text=$(cat "$f" && printf x) || return 1
  text=${text%x}
  rest=${text#*"$find"}
  [ "$rest" != "$text" ] || return 1
  [[ $rest != *"$find"* ]] || return 2
  printf '%s' "${text%%"$find"*}$repl$rest" >"$f"
}
export LC_ALL=C

# Every planted file goes back to the copy's original (a fresh mtime, so that the next build
# recompiles it).
restore() { cp "$work/orig/$1" "$src/$1"; }
save() { mkdir -p "$(dirname "$work/orig/$1")" && cp "$src/$1" "$work/orig/$1"; }

results=()
missed=0
report() { # status name detail
  local line
  line=$(printf '%-9s %-28s %s' "$1" "$2" "$3")
  echo "$line"
  results+=("$line")
}

# ---------------------------------------------------------------- cpu
# run_ctest LOG [REGEX]: the failed tests' names, sorted. Tests that failed in the baseline
# ($exclude) are not run.
exclude=''
run_ctest() {
  local log=$1
  shift
  ctest --test-dir "$src/build" -j "$(nproc)" --timeout 300 ${1:+-R "$1"} ${exclude:+-E "$exclude"} >"$log" 2>&1
  sed -n 's/^[0-9]*:\(.*\)$/\1/p' "$src/build/Testing/Temporary/LastTestsFailed.log" 2>/dev/null | sort
}

cpu_mutants() {
  echo "== configuring and building the copy in $src/build"
  local t0=$SECONDS
  if ! cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake.log" 2>&1 ||
    ! ninja -C "$src/build" >"$work/build.log" 2>&1; then
    tail -n 30 "$work/cmake.log" "$work/build.log" 2>/dev/null
    echo "mutation.sh: the unmutated copy does not build"
    exit 2
  fi
  # The baseline runs the tests that some mutant runs: all of them, unless every mutant names some.
  local i base_re='' base_failed
  for i in "${!names[@]}"; do
    [ "${suites[$i]}" = cpu ] && selected "${names[$i]}" || continue
    if [ -z "${tests[$i]}" ]; then base_re='' && break; fi
    case "|$base_re|" in
    *"|(${tests[$i]})|"*) ;;
    *) base_re="${base_re:+$base_re|}(${tests[$i]})" ;;
    esac
  done
  echo "== baseline: ctest${base_re:+ -R '$base_re'}"
  rm -f "$src/build/Testing/Temporary/LastTestsFailed.log"
  base_failed=$(run_ctest "$work/baseline.log" "$base_re")
  if [ -n "$base_failed" ]; then
    echo "mutation.sh: these tests fail without any mutant and are left out:"
    printf '  %s\n' $base_failed
    exclude="^($(printf '%s\n' $base_failed | sed 's/[.+]/\\&/g' | paste -sd '|'))\$"
  fi
  if ! grep -q 'tests passed' "$work/baseline.log"; then
    tail -n 20 "$work/baseline.log"
    echo "mutation.sh: the baseline ctest run did not finish"
    exit 2
  fi
  echo "   built and tested in $((SECONDS - t0)) s"

  local f rc failed new
  for i in "${!names[@]}"; do
    [ "${suites[$i]}" = cpu ] && selected "${names[$i]}" || continue
    f=${files[$i]}
    t0=$SECONDS
    save "$f" || { report BROKEN "${names[$i]}" "no file $f"; missed=1; continue; }
    plant "$src/$f" "${finds[$i]}" "${repls[$i]}"
    rc=$?
    if [ $rc -ne 0 ]; then
      report BROKEN "${names[$i]}" "$([ $rc -eq 1 ] && echo 'not found' || echo 'found more than once') in $f"
      missed=1
      restore "$f"
      continue
    fi
    if ! ninja -C "$src/build" >"$work/${names[$i]}.build.log" 2>&1; then
      grep -m 5 -E 'error|FAILED' "$work/${names[$i]}.build.log"
      report BROKEN "${names[$i]}" "the copy does not build with it"
      missed=1
      restore "$f"
      continue
    fi
    rm -f "$src/build/Testing/Temporary/LastTestsFailed.log"
    failed=$(run_ctest "$work/${names[$i]}.ctest.log" "${tests[$i]}")
    new=$(comm -23 <(printf '%s\n' $failed) <(printf '%s\n' $base_failed) | grep . | tr '\n' ' ')
    if [ -n "$new" ]; then
      report caught "${names[$i]}" "by ${new% }  ($((SECONDS - t0)) s)"
    else
      report MISSED "${names[$i]}" "${f}: no test failed${tests[$i]:+ (ctest -R '${tests[$i]}')}"
      missed=1
    fi
    restore "$f"
  done
}

# ---------------------------------------------------------------- gpu
gpu_run() { # command label: its status
  local out=$work/out.$2
  rm -rf "$out" && mkdir -p "$out"
  (cd "$src" && TILEC=$tilec BINDIR=$bindir OUT=$out bash -c "$1") >"$work/$2.gpu.log" 2>&1
}

gpu_mutants() {
  local i j f rc base done_cmds=() base_of=()
  for i in "${!names[@]}"; do
    [ "${suites[$i]}" = gpu ] && selected "${names[$i]}" || continue
    # The baseline of this command, once: it must pass, or find no GPU (then its mutants are not run).
    base=''
    for j in "${!done_cmds[@]}"; do [ "${done_cmds[$j]}" = "${runs[$i]}" ] && base=${base_of[$j]}; done
    if [ -z "$base" ]; then
      echo "== baseline: ${runs[$i]}"
      gpu_run "${runs[$i]}" "baseline${#done_cmds[@]}"
      rc=$?
      if [ $rc -ne 0 ] && [ $rc -ne 2 ]; then
        tail -n 20 "$work/baseline${#done_cmds[@]}.gpu.log"
        echo "mutation.sh: without any mutant, '${runs[$i]}' fails (exit $rc)"
        exit 2
      fi
      base=$([ $rc -eq 2 ] && echo no-gpu || echo passed)
      done_cmds+=("${runs[$i]}")
      base_of+=("$base")
    fi
    if [ "$base" = no-gpu ]; then
      report 'not run' "${names[$i]}" "(no GPU: '${runs[$i]}' exits 2)"
      continue
    fi
    f=${files[$i]}
    save "$f" || { report BROKEN "${names[$i]}" "no file $f"; missed=1; continue; }
    plant "$src/$f" "${finds[$i]}" "${repls[$i]}"
    rc=$?
    if [ $rc -ne 0 ]; then
      report BROKEN "${names[$i]}" "$([ $rc -eq 1 ] && echo 'not found' || echo 'found more than once') in $f"
      missed=1
      restore "$f"
      continue
    fi
    gpu_run "${runs[$i]}" "${names[$i]}"
    rc=$?
    case $rc in
    0) report MISSED "${names[$i]}" "${f}: '${runs[$i]}' passed"; missed=1 ;;
    2) report 'not run' "${names[$i]}" "(no GPU)" ;;
    *) report caught "${names[$i]}" "by '${runs[$i]}' (exit $rc; log: $work/${names[$i]}.gpu.log)" ;;
    esac
    restore "$f"
  done
}

if [ $gpu -eq 1 ]; then
  gpu_mutants
else
  cpu_mutants
fi

echo "== mutation.sh: results"
printf '%s\n' "${results[@]}"
for i in "${!names[@]}"; do
  selected "${names[$i]}" || continue
  if [ $gpu -eq 0 ] && [ "${suites[$i]}" = gpu ]; then
    printf '%-9s %-28s %s\n' 'not run' "${names[$i]}" "(needs a GPU: tests/mutation.sh --gpu TILEC BINDIR)"
  elif [ $gpu -eq 1 ] && [ "${suites[$i]}" = cpu ]; then
    printf '%-9s %-28s %s\n' 'not run' "${names[$i]}" "(a cpu mutant: tests/mutation.sh without --gpu)"
  fi
done
exit $missed
