#!/usr/bin/env bash
# check.sh LIB LIST SONAME [--update]: the ABI check of libtilec_jit.so (docs/abi.md, "The library's
# ABI"). The dynamic symbols LIB defines (nm -D --defined-only: type and name) must be exactly the
# lines of LIST, so that adding, removing or retyping an export is a deliberate edit of LIST, made
# with --update and seen in review. Also: LIB's SONAME is SONAME, and it needs no shared library
# beyond the C and C++ runtimes, zlib and zstd (no LLVM).
set -euo pipefail
lib=$1 list=$2 soname=$3
now=$(mktemp)
trap 'rm -f "$now"' EXIT
nm -D --defined-only "$lib" | awk '{ print $(NF-1), $NF }' | LC_ALL=C sort >"$now"
if [ "${4:-}" = --update ]; then
  cp "$now" "$list"
  echo "abi: wrote $(wc -l <"$list") symbols to $list"
  exit 0
fi
status=0
if ! diff -u "$list" "$now"; then
  echo "abi: $lib exports other symbols than $list (- listed, + exported)." >&2
  echo "abi: if the change is meant, run: $0 $lib $list $soname --update (docs/abi.md says when the" >&2
  echo "abi: major version, hence the SONAME, must change too)" >&2
  status=1
fi
got=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$got" != "$soname" ]; then
  echo "abi: $lib has SONAME '$got', expected '$soname'" >&2
  status=1
fi
# What a host must have besides: the C and C++ runtimes, zlib and zstd (and a sanitizer's runtime).
needed=$(readelf -d "$lib" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
for n in $needed; do
  case $n in
  libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | libz.so.* | libzstd.so.* | ld-linux-*.so.*) ;;
  libasan.so.* | libubsan.so.*) ;;
  *)
    echo "abi: $lib needs $n: only the C and C++ runtimes, zlib and zstd are expected (LLVM inside)" >&2
    status=1
    ;;
  esac
done
[ "$status" = 0 ] && echo "abi: $(wc -l <"$now") symbols as listed, SONAME $got, needs only: $needed"
exit "$status"
