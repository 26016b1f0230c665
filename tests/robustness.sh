#!/usr/bin/env bash
# robustness.sh: hostile inputs give diagnostics and exit status 1: never a
# crash (signal), an abort, or a hang.
set -u
: "${TILEC:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect_error() { # name file
  timeout 20 "$TILEC" "$2" -o "$tmp/out.ptx" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  if [ $rc -ne 1 ]; then
    echo "FAIL $1: exit status $rc (expected 1)"; head -c 600 "$tmp/stderr"; fail=1; return
  fi
  grep -q 'error: ' "$tmp/stderr" || { echo "FAIL $1: no error message"; fail=1; return; }
  [ "$(wc -c <"$tmp/stderr")" -lt 200000 ] || { echo "FAIL $1: diagnostics flood"; fail=1; return; }
  echo "ok   $1: $(head -n 1 "$tmp/stderr" | cut -c1-100)"
}
: >"$tmp/empty.tl"; expect_error empty "$tmp/empty.tl"
head -c 65536 /dev/urandom >"$tmp/junk.tl"; expect_error binary-junk "$tmp/junk.tl"
printf 'kernel k(A: f32[N]) grid(1) threads(32) {\n let x = \0\1\2 ;\n}\n' >"$tmp/nul.tl"; expect_error nul-bytes "$tmp/nul.tl"
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) { let x = ' + '1 + ' * 250000 + '; }')" >"$tmp/longline.tl"
expect_error one-megabyte-line "$tmp/longline.tl"
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) { let x = ' + '(' * 100000 + '1' + ')' * 100000 + '; }')" >"$tmp/parens.tl"
expect_error deep-parentheses "$tmp/parens.tl"
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) ' + '{' * 100000 + '}' * 100000)" >"$tmp/blocks.tl"
expect_error deep-blocks "$tmp/blocks.tl"
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) { let x = ' + '-' * 200000 + '1; }')" >"$tmp/unary.tl"
expect_error deep-unary "$tmp/unary.tl"
printf 'kernel k(A: f32[N]) grid(1) threads(32) {\n /* never closed\n' >"$tmp/comment.tl"; expect_error unterminated-comment "$tmp/comment.tl"
printf 'kernel k(A: f32[N]) grid(1) threads(32) {\n let x = 99999999999999999999999;\n}\n' >"$tmp/bigint.tl"; expect_error huge-integer "$tmp/bigint.tl"
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) {' + ' let x = @;' * 5000 + '}')" >"$tmp/many.tl"
expect_error many-errors "$tmp/many.tl"
printf 'kernel' >"$tmp/truncated.tl"; expect_error truncated "$tmp/truncated.tl"
expect_error missing-file "$tmp/does-not-exist.tl"

# The limits of docs/language.md section 17, each with its own message, and
# programs just inside them that compile.
expect_message() { # name file message [tilec options...]
  local name=$1 file=$2 msg=$3
  shift 3
  timeout 20 "$TILEC" "$@" "$file" -o "$tmp/out.ptx" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  if [ $rc -ne 1 ] || ! grep -qF "$msg" "$tmp/stderr"; then
    echo "FAIL $name: exit status $rc, expected 1 and '$msg'"; head -c 600 "$tmp/stderr"; fail=1; return
  fi
  echo "ok   $name: $msg"
}
expect_ok() { # name file
  if ! timeout 60 "$TILEC" "$2" -o "$tmp/out.ptx" 2>"$tmp/stderr"; then
    echo "FAIL $1: did not compile"; head -c 600 "$tmp/stderr"; fail=1; return
  fi
  echo "ok   $1: compiles"
}
nested_for() { # depth
  python3 -c "import sys; n = int(sys.argv[1]); print('kernel k(A: f32[N]) grid(1) threads(32) {' + ''.join('for v%d in serial(2) {' % i for i in range(n)) + 'A[0] = 1.0;' + '}' * n + '}')" "$1"
}
else_ifs() { # links
  python3 -c "import sys; n = int(sys.argv[1]); print('kernel k(A: f32[N], n: i32) grid(1) threads(32) { if n == 0 { A[0] = 0.0; }' + ''.join(' else if n == %d { A[0] = 1.0; }' % i for i in range(1, n + 1)) + ' }')" "$1"
}
nested_for 255 >"$tmp/for255.tl"; expect_ok nesting-255-loops "$tmp/for255.tl"
nested_for 256 >"$tmp/for256.tl"; expect_message nesting-256-loops "$tmp/for256.tl" "statements nested too deeply (more than 256 levels"
else_ifs 254 >"$tmp/elif254.tl"; expect_ok else-if-254 "$tmp/elif254.tl"
else_ifs 5000 >"$tmp/elif5000.tl"; expect_message else-if-5000 "$tmp/elif5000.tl" "statements nested too deeply (more than 256 levels"
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) { let x = ' + '1 + ' * 998 + '1; A[0] = f32(x); }')" >"$tmp/chain999.tl"
expect_ok chain-999 "$tmp/chain999.tl"
# --emit=ast printed the whole tree before the depth check (quadratic in the depth): now the parse stops.
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) { let x = ' + '1 + ' * 250000 + '1; }')" >"$tmp/chain.tl"
expect_message ast-of-a-deep-chain "$tmp/chain.tl" "expression nested too deeply (more than 1000 levels)" --emit=ast
python3 -c "print('kernel k(A: f32[N]) grid(1) threads(32) { let x = ' + '(' * 1001 + '1' + ')' * 1001 + '; }')" >"$tmp/parens1001.tl"
expect_message parentheses-1001 "$tmp/parens1001.tl" "expression nested too deeply (more than 1000 levels)"
exit $fail
