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
exit $fail
