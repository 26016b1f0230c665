#!/usr/bin/env bash
# run.sh ROOT: `tilec run` (tools/run.c): kernels run on the CPU with values from the command line
# and .npy files, results written and printed; every bad input a message and status 1, never a
# crash. No numpy: the .npy files come from tilec run --out itself, or from printf below.
set -u
root=$1
ex=$root/examples
: "${TILEC:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
ok() { if "$@" >"$tmp/o" 2>"$tmp/e"; then echo "ok   $*"; else echo "FAIL (status $?) $*"; cat "$tmp/e"; fail=1; fi; }
# Every pattern is an exact substring (grep -F). A failing run prints nothing on stdout.
bad() { # expected status, text on stderr, command...
  local want=$1 pat=$2; shift 2
  "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  if [ $rc -eq "$want" ] && grep -qF -- "$pat" "$tmp/e" && [ ! -s "$tmp/o" ]; then
    echo "ok   (status $rc) $*"
  else echo "FAIL $* -> status $rc, want $want and '$pat'; stderr:"; cat "$tmp/e"; fail=1; fi
}
has() { grep -qF -- "$1" "${2:-$tmp/o}" || { echo "FAIL: ${2:-output} lacks '$1'"; cat "${2:-$tmp/o}"; fail=1; }; }
lacks() { ! grep -qF -- "$1" "${2:-$tmp/o}" || { echo "FAIL: ${2:-output} has '$1'"; fail=1; }; }
run() { "$TILEC" run "$@"; }

# npy FILE DESCR SHAPE DATA: a format 1.0 .npy file by hand (DATA as printf's \x escapes)
npy() {
  local h="{'descr': '$2', 'fortran_order': False, 'shape': $3, }" n
  n=${#h}
  printf '\x93NUMPY\x01\x00' >"$1"
  printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))" >>"$1"
  printf '%s' "$h" >>"$1"
  printf "$4" >>"$1"
}

# ---------------------------------------------------------------- kernels that run
ok run "$ex/vector_add.tl" --arg A=ones --arg B=arange --size N=1000   # a summary of each tensor
has 'A: f32[1000]  min 1  max 1  mean 1  [1, 1, 1, 1, 1, 1, ...]'
has 'B: f32[1000]  min 0  max 999  mean 499.5  [0, 1, 2, 3, 4, 5, ...]'
has 'C: f32[1000]  min 1  max 1000  mean 500.5  [1, 2, 3, 4, 5, 6, ...]'
has 'tile level: 1 block; 3000 tensor element accesses checked (bounds, unwritten reads, the order of blocks): no errors'
# two blocks, the second ragged; C back through the reader, as the input of another run
ok run "$ex/vector_add.tl" --arg A=ones --arg B=arange --size N=5000 --out C=c.npy --out A=a.npy
[ ! -s "$tmp/o" ] || { echo "FAIL: --out printed a summary"; fail=1; }
ok run "$ex/vector_add.tl" --arg A=c.npy --arg B=zeros --print C                # N from c.npy's shape
has 'C: f32[5000]'
has '[1.000e+00 2.000e+00 3.000e+00 ... 4.998e+03 4.999e+03 5.000e+03]'       # numpy's summarized form
ok run "$ex/vector_add.tl" --arg A=a.npy --arg B=c.npy --arg C=sum.npy        # C only written: its file
ok run "$ex/vector_add.tl" --arg A=sum.npy --arg B=zeros --size N=5000 --print C
has '[2.000e+00 3.000e+00 4.000e+00 ... 4.999e+03 5.000e+03 5.001e+03]'
# launch constants (docs/language.md): each run is the variant for its sizes, at both levels
g=$(dirname "$0")/golden/launch_consts.tl
for level in tile thread; do
  ok run "$g" --size M=2,N=3 --arg X=ones --print Y --level "$level"; has '[[9. 9. 9.]'     # SMALL_M = 1
  ok run "$g" --size M=100 --size N=3 --arg X=ones --print Y --level "$level"; has '[8. 8. 8.]'
done
bad 1 "--size needs NAME=N, got 'M=2,N'" run "$g" --size M=2,N --arg X=ones
# the examples of README.md and docs/cli.md
ok run "$ex/vector_add.tl" --arg A=arange --arg B=ones --size N=8 --print C; has '[1. 2. 3. 4. 5. 6. 7. 8.]'
ok run "$ex/saxpy.tl" --arg X=arange --arg Y=ones --arg a=0.5 --size N=6 --print Z; has '[1.  1.5 2.  2.5 3.  3.5]'
ok run "$ex/vector_add.tl" --arg A=rand --arg B=ones --size N=1000
has 'A: f32[1000]  min -0.997099  max 0.998206  mean 0.026895  [-0.756187, 0.925371, -0.00743775, -0.272539,'
has 'tile level: 1 block; 3000 tensor element accesses checked (bounds, unwritten reads, the order of blocks): no errors'
mkdir -p doc && ok run "$ex/vector_add.tl" --arg A=rand:1 --arg B=arange --arg C=doc/c.npy --size N=5000
has 'C: f32[5000]  min -0.0371715  max 4999.46  mean 2499.51  [-0.0371715, 0.69876, 1.30362, 2.17252, 3.8402, 4.70982, ...]'
has 'tile level: 2 blocks; 15000 tensor element accesses checked (bounds, unwritten reads, the order of blocks): no errors'
ok run "$ex/vector_add.tl" --arg A=doc/c.npy --arg B=zeros --print C
has '[-3.7171528e-02  6.9875979e-01  1.3036239e+00 ...  4.9969673e+03'
# rand: the same seed gives the same values; another seed, or another parameter, others
ok run "$ex/vector_add.tl" --arg A=rand:7 --arg B=zeros --size N=8 --print A; cp o r1
ok run "$ex/vector_add.tl" --arg A=rand:7 --arg B=zeros --size N=8 --print A; cp o r2
ok run "$ex/vector_add.tl" --arg A=rand:8 --arg B=rand:7 --size N=8 --print A --print B; cp o r3
cmp -s r1 r2 || { echo "FAIL: rand:7 differs between runs"; fail=1; }
[ "$(sed -n 2p r1)" != "$(sed -n 2p r3)" ] || { echo "FAIL: rand:8 gives rand:7's values"; fail=1; }
[ "$(sed -n 2p r1)" != "$(sed -n 4p r3)" ] || { echo "FAIL: A and B get the same random values"; fail=1; }
awk 'NR == 2 { gsub(/[][]/, ""); for (i = 1; i <= NF; i++) if ($i < -1 || $i >= 1) bad = 1 } END { exit bad }' r1 ||
  { echo "FAIL: rand outside [-1, 1): $(sed -n 2p r1)"; fail=1; }
# saxpy: a scalar, and -D as the compiler takes it
ok run "$ex/saxpy.tl" -D BLOCK=512 -D THREADS=128 --arg X=arange --arg Y=ones --arg a=2.5 --size N=1001 --print Z
has 'Z: f32[1001]'; has '[1.0000e+00 3.5000e+00 6.0000e+00 ... 2.4960e+03 2.4985e+03 2.5010e+03]'
ok run "$ex/saxpy.tl" -DBLOCK=512 --arg X=ones --arg Y=zeros --arg a=-3 --size N=4 --print Z; has '[-3. -3. -3. -3.]'
# matmul (f16 tensor cores, at tile level) with the unit test's small tiles, ragged M, N, K: ones @ ones is K
mm=(-D BM=32 -D BN=64 -D BK=32 -D STAGES=2 -D THREADS=128)
ok run "$ex/matmul.tl" "${mm[@]}" --size M=37 --size N=100 --size K=70 --arg A=ones --arg B=ones
has 'C: f16[37, 100]  min 70  max 70  mean 70'
ok run "$ex/matmul.tl" "${mm[@]}" -D T=bf16 --size M=5 --size K=8 --size N=3 --arg A=ones --arg B=arange --print C
has 'C: bf16[5, 3]'; has '[[ 84.  92. 100.]'; has ' [ 84.  92. 100.]]'
ok run "$ex/matmul.tl" "${mm[@]}" --size M=4 --size N=5 --size K=8 --arg A=ones --arg B=arange --print C
has '[[140. 148. 156. 164. 172.]'                                          # docs/cli.md's session      # sum over k of 3k + j
# a 2-D tensor printed as numpy does
ok run "$ex/matmul.tl" "${mm[@]}" --size M=2 --size K=8 --size N=3 --arg A=ones --arg B=ones --out C=mm.npy
ok run "$ex/matmul.tl" "${mm[@]}" --arg A=ones --arg B=ones --size M=2 --size K=8 --size N=3 --print A
has 'A: f16[2, 8]'; has '[[1. 1. 1. 1. 1. 1. 1. 1.]'; has ' [1. 1. 1. 1. 1. 1. 1. 1.]]'

# ---------------------------------------------------------------- other types, by hand
cat >types.tl <<'EOF'
kernel types(X: f32[N, 4], Y: i32[N], H: f16[N], Bf: bf16[N], Out: bf16[N], s: f32, c: i32, flag: bool)
    grid(1) threads(32)
{
    for i in serial(N) {
        for j in serial(4) {
            X[i, j] = X[i, j] * s;
        }
        Y[i] = Y[i] + c;
        H[i] = H[i] * f16(2.0);
        Out[i] = Bf[i] * bf16(2.0);
    }
}
EOF
one=$'\\x00\\x00\\x80\\x3f'   # 1.0f, little-endian
npy x.npy '<f4' '(2, 4)' "$one$one$one$one$one$one$one$one"
npy y.npy '<i4' '(2,)' '\x07\x00\x00\x00\xfe\xff\xff\xff'                     # 7, -2
npy h.npy '<f2' '(2,)' '\x00\x3c\x00\x42'                                     # 1.0, 3.0
npy bf32.npy '<f4' '(2,)' '\x00\x00\x80\x3f\x00\x00\x40\x40'                  # 1.0f, 3.0f: rounded to bf16
npy bfbits.npy '<u2' '(2,)' '\x80\x3f\x40\x40'                                # bf16 bits 1.0, 3.0
t=(--arg X=x.npy --arg Y=y.npy --arg H=h.npy --arg s=0.5 --arg c=3 --arg flag=true)
ok run types.tl "${t[@]}" --arg Bf=bf32.npy --print X --print Y --print H --print Out
has 'X: f32[2, 4]'; has '[[0.5 0.5 0.5 0.5]'; has 'Y: i32[2]'; has '[10  1]'; has '[2. 6.]'
has 'Out: bf16[2]'
ok run types.tl "${t[@]}" --arg Bf=bfbits.npy --out Out=out.npy --out Y=y2.npy
ok run types.tl "${t[@]}" --arg Bf=out.npy --print Out   # bf16 written as <f4, read back exactly
has '[ 4. 12.]'
grep -qF "'descr': '<f4'" out.npy || { echo "FAIL: a bf16 tensor is not written as <f4"; fail=1; }
grep -qF "'descr': '<i4', 'fortran_order': False, 'shape': (2,), }" y2.npy || { echo "FAIL: y2.npy's header"; fail=1; }
[ $(($(stat -c %s y2.npy) % 8)) -eq 0 ] && [ "$(head -c 128 y2.npy | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ] ||
  { echo "FAIL: the header is not padded to 64 bytes with a line break"; fail=1; }
ok run types.tl "${t[@]}" --arg Bf=ones                  # no --out, no --print: one line per tensor
has 'Y: i32[2]  min 1  max 10  mean 5.5  [10, 1]'
lacks 'flag'                                              # scalars are not summed up
# an input is not overwritten without --out; a tensor the kernel only writes gets its file
cp y.npy y.keep; ok run types.tl "${t[@]}" --arg Bf=ones; cmp -s y.npy y.keep || { echo "FAIL: y.npy overwritten"; fail=1; }
ok run types.tl "${t[@]}" --arg Bf=ones --arg Out=o2.npy; [ -s o2.npy ] || { echo "FAIL: --arg Out=o2.npy not written"; fail=1; }

# ---------------------------------------------------------------- e4m3, e5m2: <f4 rounded (saturating) or |u1 bits
cat >fp8.tl <<'EOF'
kernel fp8(E: e4m3[N], F: e5m2[N], Out: f32[N], G: f32[N], O8: e4m3[N], s: e4m3) grid(1) threads(32)
{
    for i in serial(N) {
        Out[i] = f32(E[i]) * f32(s);
        G[i] = f32(F[i]);
        O8[i] = E[i];
    }
}
EOF
npy e32.npy '<f4' '(3,)' '\x00\x00\x80\x3f\x9a\x99\x99\x3e\x00\x00\x7a\x44'   # 1.0f, 0.3f, 1000.0f
npy ebits.npy '|u1' '(3,)' '\x38\x3a\xfe'                                    # e4m3 bits: 1.0, 1.25, -448
npy f32.npy '<f4' '(3,)' '\x00\x00\x80\x3f\xf9\x02\x15\x50\x00\x00\x40\xc0'  # 1.0f, 1e10f, -3.0f
npy fbits.npy '|u1' '(3,)' '\x3c\x7c\x7e'                                    # e5m2 bits: 1.0, inf, NaN
ok run fp8.tl --arg E=e32.npy --arg F=f32.npy --arg s=1
has 'E: e4m3[3]  min 0.3125  max 448  mean 149.771  [1, 0.3125, 448]'   # 0.3 rounded, 1000 saturated
has 'F: e5m2[3]  min -3  max 57344  mean 19114  [1, 57344, -3]'
ok run fp8.tl --arg E=e32.npy --arg F=f32.npy --arg s=1 --out O8=o8.npy
grep -qF "'descr': '<f4'" o8.npy || { echo "FAIL: an e4m3 tensor is not written as <f4"; fail=1; }
ok run fp8.tl --arg E=o8.npy --arg F=fbits.npy --arg s=1000 --print Out --print G   # o8.npy read back exactly
has '[4.48000e+02 1.40000e+02 2.00704e+05]'                                          # s saturated to 448
has '[  1. inf  nan ]'
ok run fp8.tl --arg E=ebits.npy --arg F=fbits.npy --arg s=0.3 --print Out
has '[   0.3125      0.390625 -140.      ]'

# ---------------------------------------------------------------- views: strides(...) over .npy storage
st=$root/tests/golden/strides.tl
ok run "$st" --kernel pad_copy --arg A=arange --size M=3,N=2,lda=4 --print B --print A   # rows 4 apart
has '[[0. 1.]'; has ' [4. 5.]'; has ' [8. 9.]]'
has 'A: f16[3, 2] strides(4, 1), storage [10]'
ok run "$st" --kernel transpose_view --arg At=arange --size M=2,N=3,ldt=3 --print B --level thread
has '[[0. 3. 6.]'; has ' [1. 4. 7.]]'
# a file is the storage, of any shape: a [2, 5] f32 file (0..9) seen as [2, 3] rows 5 apart
npy s25.npy '<f4' '(2, 5)' '\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40\x00\x00\xc0\x40\x00\x00\xe0\x40\x00\x00\x00\x41\x00\x00\x10\x41'
ok run "$st" --kernel transpose_view --arg At=s25.npy --size M=3,N=2,ldt=5 --print B --out At=back.npy
has '[[0. 5.]'; has ' [2. 7.]]'
ok run "$st" --kernel transpose_view --arg At=back.npy --size M=3,N=2,ldt=5 --print B   # written back as [2, 5]
has '[[0. 5.]'
bad 1 "the size lda of kernel 'pad_copy' is not given: use --size lda=VALUE" run "$st" --kernel pad_copy --arg A=arange --size M=3,N=2
bad 1 "the view At: f32[3, 2] strides(...) reaches 11 elements of its storage, but 's25.npy' holds 10" run "$st" --kernel transpose_view --arg At=s25.npy --size M=3,N=2,ldt=8
bad 1 "has stride 0 of 0; a stride is positive" run "$st" --kernel pad_copy --arg A=arange --size M=3,N=2,lda=0

# ---------------------------------------------------------------- the interpreter's errors
cat >oob.tl <<'EOF'
// an index past the end of a shared tile
kernel oob(A: f32[N]) grid(1) threads(32) {
    let t = alloc_shared([8], f32);
    fill(t, 1.0);
    for i in serial(N) {
        A[i] = t[i];
    }
}
EOF
bad 1 "oob.tl:6:17: error: index [8] is out of bounds of shared 't': dimension 0 has size 8 (kernel 'oob', block 0, 0, 0)" \
  run oob.tl --size N=10 --out A=never.npy
has '          A[i] = t[i];' "$tmp/e"; has '                  ^' "$tmp/e"
[ ! -e never.npy ] || { echo "FAIL: a failed run wrote its output"; fail=1; }
ok run oob.tl --size N=8 --print A; has '[1. 1. 1. 1. 1. 1. 1. 1.]'
printf 'kernel k(A: f32[N]) grid(1) threads(32) {\n    A[0] = B;\n}\n' >undef.tl
bad 1 "undef.tl:2:12: error:" run undef.tl --size N=1

# ---------------------------------------------------------------- the thread level (--level thread)
ok run "$ex/vector_add.tl" --arg A=arange --arg B=ones --size N=1000 --level thread --arch sm_80 --print C
has '  997.  998.  999. 1000.]'
# matmul's wgmma lowering (sm_90a, one consumer warpgroup and the producer) at a ragged shape: every
# element 130; the tile goes to C through shared memory and a TMA store (one per block)
ok run "$ex/matmul.tl" -D SWAP=0 -D BM=64 -D BN=64 -D BK=64 -D STAGES=2 -D THREADS=128 --size M=70 --size N=100 \
  --size K=130 --arg A=ones --arg B=ones --level thread
has 'C: f16[70, 100]  min 130  max 130  mean 130'
has 'thread level (sm_90a): 4 blocks of 256 threads; 12 barriers, 262144 shared-memory bytes and 51200 tensor element accesses checked, 48 warp collectives, 28 asynchronous copies: no errors'
# the same without tensor maps: the cp.async form of the pipelined loop
ok run "$ex/matmul.tl" -D SWAP=0 -D BM=64 -D BN=64 -D BK=64 -D STAGES=2 -D THREADS=128 --size M=70 --size N=100 \
  --size K=130 --arg A=ones --arg B=ones --level thread --no-tma
has 'C: f16[70, 100]  min 130  max 130  mean 130'
has 'thread level (sm_90a): 4 blocks of 256 threads; 24 barriers, 439984 shared-memory bytes and 51200 tensor element accesses checked, 48 warp collectives, 21560 asynchronous copies: no errors'
# the transposed form (few rows: C^T = B^T A^T, rows of A rounded up to 16 as wgmma's columns, the
# tile to C through shared memory), at its defaults for these sizes: BM = 80, BN = 64
ok run "$ex/matmul.tl" --size M=70 --size N=100 --size K=130 --arg A=ones --arg B=ones --level thread
has 'C: f16[70, 100]  min 130  max 130  mean 130'
has 'thread level (sm_90a): 2 blocks of 256 threads; 6 barriers, 181936 shared-memory bytes and 38200 tensor element accesses checked'
# a race the tile level cannot see: every iteration of a parallel loop stores into one element
cat >race.tl <<'EOF'
kernel race(A: f32[N], B: f32[N]) grid(1) threads(64) {
    let s = alloc_shared([1], f32);
    for i in parallel(64) {
        s[0] = A[i];
    }
    for i in parallel(64) {
        B[i] = s[0];
    }
}
EOF
ok run race.tl --arg A=arange --size N=64 --print B    # the tile level runs the iterations in order
has '[63. 63. 63.'
bad 1 "race.tl:4:14: error: data race on shared 's'[0]: threads 0 and 1 write different values with no barrier between (kernel 'race', block 0, 0, 0, thread 1)" \
  run race.tl --arg A=arange --size N=64 --level thread
bad 1 "--level takes tile or thread, got 'warp'" run race.tl --size N=64 --level warp
bad 1 "unknown target 'sm_70' for --arch" run race.tl --size N=64 --level thread --arch sm_70

# ---------------------------------------------------------------- bad input: a message, status 1
usage="(run 'tilec run --help' for usage)"
ok run --help; has 'usage: tilec run FILE.tl [options]'; has '--arg NAME=SPEC'
bad 1 "tilec: error: no input file" run; has "$usage" "$tmp/e"
bad 1 "tilec: error: unknown option '--frob'" run "$ex/vector_add.tl" --frob; has "$usage" "$tmp/e"
bad 1 "tilec: error: more than one input file ('b.tl')" run a.tl b.tl
bad 1 "tilec: error: --arg needs NAME=SPEC, got 'A'" run "$ex/vector_add.tl" --arg A
bad 1 "tilec: error: --size needs NAME=N, got ''" run "$ex/vector_add.tl" --size
bad 1 "tilec: error: --out needs NAME=FILE.npy, got 'C='" run "$ex/vector_add.tl" --out C=
bad 1 "tilec: error: -D needs NAME=VALUE, got 'BLOCK'" run "$ex/vector_add.tl" -D BLOCK
bad 1 "tilec: error: --num-sms needs a positive integer, got '0'" run "$ex/vector_add.tl" --num-sms 0
bad 1 "tilec: error: cannot read 'none.tl': No such file or directory" run none.tl
bad 1 "$ex/gelu.tl: error: the file has 2 kernels (gelu_f16, gelu_bf16): choose one with --kernel NAME" \
  run "$ex/gelu.tl" --size N=4
bad 1 "$ex/gelu.tl: error: no kernel named 'nope'" run "$ex/gelu.tl" --kernel nope
bad 1 "vector_add.tl:9:19: error: -D BLOCK=big: the value is not a number or true/false" run "$ex/vector_add.tl" -D BLOCK=big
va=("$ex/vector_add.tl")
bad 1 "tilec: error: --arg X=ones: kernel 'vector_add' has no parameter 'X' (its parameters: A, B, C, N)" \
  run "${va[@]}" --arg X=ones --size N=4
bad 1 "tilec: error: --out Q=q.npy: kernel 'vector_add' has no parameter 'Q'" run "${va[@]}" --out Q=q.npy
bad 1 "tilec: error: --print Q: kernel 'vector_add' has no parameter 'Q'" run "${va[@]}" --print Q
bad 1 "tilec: error: --print N: 'N' is not a tensor (N: size i32)" run "${va[@]}" --print N
bad 1 "tilec: error: --arg BLOCK=2: 'BLOCK' is a constant of kernel 'vector_add': set it with -D BLOCK=VALUE" \
  run "${va[@]}" --arg BLOCK=2
bad 1 "tilec: error: --arg N=5: 'N' is a size; give it with --size N=VALUE" run "${va[@]}" --arg N=5
bad 1 "tilec: error: --size A=5: 'A' is not a size (A: f32[N]); give it with --arg" run "${va[@]}" --size A=5
bad 1 "tilec: error: --size N=-5: a size is an integer from 0 to 2147483647" run "${va[@]}" --size N=-5
bad 1 "tilec: error: --size N=3000000000: a size is an integer from 0 to 2147483647" run "${va[@]}" --size N=3000000000
bad 1 "tilec: error: the size N of kernel 'vector_add' is not given: use --size N=VALUE" \
  run "${va[@]}" --arg A=ones --arg B=ones
bad 1 "tilec: error: the tensor B: f32[N] has no value: use --arg B=FILE.npy" run "${va[@]}" --arg A=ones --size N=4
bad 1 "tilec: error: --arg A=3: 'A' is a tensor; expected FILE.npy, rand, rand:SEED, zeros, ones or arange" \
  run "${va[@]}" --arg A=3 --arg B=ones --size N=3
bad 1 "tilec: error: --arg A=rand:x: the seed of rand:SEED is a non-negative integer, got 'x'" \
  run "${va[@]}" --arg A=rand:x --arg B=ones --size N=3
bad 1 "tilec: error: the scalar a: f32 has no value: use --arg a=NUMBER" run "$ex/saxpy.tl" --arg X=ones --arg Y=ones --size N=3
bad 1 "tilec: error: --arg a=x: 'a' is a scalar of type f32; expected a number" \
  run "$ex/saxpy.tl" --arg X=ones --arg Y=ones --size N=3 --arg a=x
bad 1 "tilec: error: --arg c=1.5: 'c' is a scalar of type i32; expected an integer that fits in i32" \
  run types.tl "${t[@]}" --arg Bf=ones --arg c=1.5
bad 1 "tilec: error: --arg flag=2: 'flag' is a scalar of type bool; expected true or false" \
  run types.tl "${t[@]}" --arg Bf=ones --arg flag=2
# files: missing, malformed, of the wrong dtype or rank, shapes that disagree
bad 1 "tilec: error: --arg A=missing.npy: cannot read 'missing.npy': No such file or directory" \
  run "${va[@]}" --arg A=missing.npy --arg B=ones
bad 1 "tilec: error: --arg A=$tmp: cannot read '$tmp': Is a directory" run "${va[@]}" --arg A="$tmp" --arg B=ones
printf 'not numpy at all' >junk.npy
bad 1 "tilec: error: --arg A=junk.npy: cannot read 'junk.npy': not a .npy file: it does not start with \\x93NUMPY" \
  run "${va[@]}" --arg A=junk.npy --arg B=ones
npy short.npy '<f4' '(3,)' '\x00\x00\x80\x3f'
bad 1 "cannot read 'short.npy': the data is 4 bytes, but shape (3,) of <f4 needs 12" run "${va[@]}" --arg A=short.npy --arg B=ones
npy big.npy '>f4' '(1,)' '\x3f\x80\x00\x00'
bad 1 "cannot read 'big.npy': big-endian data ('>f4') is not supported" run "${va[@]}" --arg A=big.npy --arg B=ones
npy fort.npy '<f4' '(1,)' "$one"; sed -i 's/False/True /' fort.npy
bad 1 "cannot read 'fort.npy': the data is in Fortran order" run "${va[@]}" --arg A=fort.npy --arg B=ones
npy huge.npy '<f4' '(4294967296, 4294967296)' ''
bad 1 "cannot read 'huge.npy': shape (4294967296, 4294967296) has more elements than fit in 64 bits" \
  run "${va[@]}" --arg A=huge.npy --arg B=ones
npy neg.npy '<f4' '(-1,)' ''
bad 1 "cannot read 'neg.npy': bad header at byte" run "${va[@]}" --arg A=neg.npy --arg B=ones; has "is negative (-1)" "$tmp/e"
printf '\x93NUMPY\x01\x00\xff\xff{}' >past.npy
bad 1 "cannot read 'past.npy': the header's length (65535 bytes) runs past the end of the file (12 bytes)" \
  run "${va[@]}" --arg A=past.npy --arg B=ones
bad 1 "tilec: error: --arg A=y.npy: the tensor A: f32[N] needs <f4, but 'y.npy' holds <i4" run "${va[@]}" --arg A=y.npy --arg B=ones
bad 1 "tilec: error: --arg Bf=h.npy: the tensor Bf: bf16[N] needs <f4 (rounded to bf16) or <u2 (bf16 bits), but 'h.npy' holds <f2" \
  run types.tl "${t[@]}" --arg Bf=h.npy
bad 1 "tilec: error: --arg E=h.npy: the tensor E: e4m3[N] needs <f4 (rounded to e4m3) or |u1 (e4m3 bits), but 'h.npy' holds <f2" \
  run fp8.tl --arg E=h.npy --arg F=fbits.npy --arg s=1
bad 1 "tilec: error: --arg F=y.npy: the tensor F: e5m2[N] needs <f4 (rounded to e5m2) or |u1 (e5m2 bits), but 'y.npy' holds <i4" \
  run fp8.tl --arg E=ebits.npy --arg F=y.npy --arg s=1
bad 1 "tilec: error: --arg A=x.npy: the tensor A: f32[N] has 1 dimension, but 'x.npy' has 2" run "${va[@]}" --arg A=x.npy --arg B=ones
npy x3.npy '<f4' '(1, 3)' "$one$one$one"
bad 1 "tilec: error: --arg X=x3.npy: the tensor X: f32[N, 4] has 4 in dimension 1, but 'x3.npy' has 3" \
  run types.tl "${t[@]}" --arg Bf=ones --arg X=x3.npy
bad 1 "tilec: error: shapes disagree: N is 3 (--size N=3), but 5000 (c.npy for 'A', dimension 0)" \
  run "${va[@]}" --arg A=c.npy --arg B=ones --size N=3
bad 1 "tilec: error: shapes disagree: N is 5000 (c.npy for 'A', dimension 0), but 2 (bf32.npy for 'B', dimension 0)" \
  run "${va[@]}" --arg A=c.npy --arg B=bf32.npy
bad 1 "tilec: error: cannot write 'no/such/dir/c.npy': No such file or directory" \
  run "${va[@]}" --arg A=ones --arg B=ones --size N=3 --out C=no/such/dir/c.npy
bad 1 "tilec: error: writing '/dev/full': No space left on device" run "${va[@]}" --arg A=ones --arg B=ones --size N=3 --out C=/dev/full
bad 1 "tilec: error: writing <stdout>: No space left on device" sh -c "'$TILEC' run '$ex/vector_add.tl' --arg A=ones --arg B=ones --size N=3 >/dev/full"

# tilec FILE.tl still compiles, and its help names tilec run
ok "$TILEC" "$ex/vector_add.tl" -o - ; has '.visible .entry vector_add('
ok "$TILEC" --help; has 'tilec run FILE.tl [options]'
[ $fail -eq 0 ] && echo "run.sh: all passed"
exit $fail
