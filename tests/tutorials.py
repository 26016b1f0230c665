#!/usr/bin/env python3
"""tutorials.py ROOT: the numbered tutorials (docs/tutorials/NN_*.md) against the compiler.

1. Every tutorial kernel runs with `tilec run` on random inputs at ragged sizes (not multiples of any
   tile), at the tile level and at the thread level for sm_80 and sm_90a, and its outputs match a NumPy
   reference.
2. Every figure a page quotes from the compiler: a fenced block right after a line
   `<!-- check: ARGS -->` must appear, line by line and in order, in the output of `tilec ARGS` run in
   ROOT, the first line anywhere, each next one on the next line of output (a line `...` skips any
   number of lines; runs of blanks count as one, blank lines as none).
3. Every `tilec` command line of a ```sh block of a numbered page runs and exits 0 (in a scratch folder
   where examples/ and stdlib/ are ROOT's).

Needs NumPy (.ci/install-deps.sh installs python3-numpy); tests/tutorials.sh picks a python3 that has it.
TILEC is the compiler to test."""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("skipped: python3 has no NumPy")
    sys.exit(77)

root = os.path.abspath(sys.argv[1])
tilec = os.environ["TILEC"]
if os.sep in tilec:
    tilec = os.path.abspath(tilec)
failures = []


def fail(msg):
    print("FAIL " + msg)
    failures.append(msg)


def tilec_run(tmp, path, kernel, sizes, args, outs, extra=()):
    cmd = [tilec, "run", os.path.join(root, path), "--kernel", kernel]
    for k, v in sizes.items():
        cmd += ["--size", "%s=%d" % (k, v)]
    for k, v in args.items():
        if isinstance(v, np.ndarray):
            f = os.path.join(tmp, "in_%s.npy" % k)
            np.save(f, v)
            v = f
        cmd += ["--arg", "%s=%s" % (k, v)]
    for k in outs:
        cmd += ["--out", "%s=%s" % (k, os.path.join(tmp, "out_%s.npy" % k))]
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s %s %s: exit %d\n%s" % (path, kernel, " ".join(extra), r.returncode, r.stderr))
        return None
    return {k: np.load(os.path.join(tmp, "out_%s.npy" % k)) for k in outs}


compared = []


def close(what, got, want, rtol, atol):
    if got is None:
        return
    compared.append(what)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got.astype(np.float64) - want)) if got.shape == want.shape else "shape"
        fail("%s: differs from NumPy (max abs error %s)" % (what, err))


def silu(x):
    return x / (1.0 + np.exp(-x))


# ---------------------------------------------------------------- 1. kernels against NumPy
rng = np.random.default_rng(18)
levels = [(), ("--level", "thread", "--arch", "sm_80"), ("--level", "thread", "--arch", "sm_90a")]
with tempfile.TemporaryDirectory() as tmp:
    for level in levels:
        tag = " ".join(level) or "tile level"
        big = 100003 if not level else 20011  # ragged: no multiple of 4096, 256 or 4

        # 00: vector add, one tile per block and one element per thread
        n = big
        a = rng.uniform(-1, 1, n).astype(np.float32)
        b = rng.uniform(-1, 1, n).astype(np.float32)
        for path, kernel in (("examples/vector_add.tl", "vector_add"),
                             ("examples/tutorial_vector_add_thread.tl", "vector_add_thread")):
            o = tilec_run(tmp, path, kernel, {"N": n}, {"A": a, "B": b}, ["C"], level)
            close("%s (%s)" % (kernel, tag), o and o["C"], (a + b).astype(np.float64), 0, 0)

        # 01: three unfused kernels, then the fused one
        x = rng.uniform(-4, 4, n).astype(np.float32)
        g = rng.uniform(-1, 1, n).astype(np.float32)
        r = rng.uniform(-1, 1, n).astype(np.float32)
        want = silu(x.astype(np.float64)) * g + r
        f = "examples/tutorial_fusion.tl"
        o1 = tilec_run(tmp, f, "silu", {"N": n}, {"X": x}, ["T"], level)
        if o1:
            close("silu (%s)" % tag, o1["T"], silu(x.astype(np.float64)), 1e-5, 1e-6)
            o2 = tilec_run(tmp, f, "mul", {"N": n}, {"T": o1["T"], "G": g}, ["U"], level)
            if o2:
                o3 = tilec_run(tmp, f, "add", {"N": n}, {"U": o2["U"], "R": r}, ["Y"], level)
                close("silu, mul, add (%s)" % tag, o3 and o3["Y"], want, 1e-5, 1e-5)
        o = tilec_run(tmp, f, "silu_mul_add", {"N": n}, {"X": x, "G": g, "R": r}, ["Y"], level)
        close("silu_mul_add (%s)" % tag, o and o["Y"], want, 1e-5, 1e-5)

        # 02: the sum, two passes and with an atomic
        n = 1000003 if not level else 70001
        x = rng.uniform(-1, 1, n).astype(np.float32)
        want = np.array([np.sum(x.astype(np.float64))])
        tol = 1e-6 * np.sum(np.abs(x))
        f = "examples/tutorial_reduce.tl"
        nb = -(-n // 16384)
        o = tilec_run(tmp, f, "sum_partials", {"N": n, "NB": nb}, {"X": x}, ["P"], level)
        if o:
            parts = x.astype(np.float64)
            parts = np.pad(parts, (0, nb * 16384 - n)).reshape(nb, 16384).sum(axis=1)
            close("sum_partials, first pass (%s)" % tag, o["P"], parts, 0, 1e-6 * 16384)
            o2 = tilec_run(tmp, f, "sum_partials", {"N": nb, "NB": 1}, {"X": o["P"]}, ["P"], level)
            close("sum_partials, second pass (%s)" % tag, o2 and o2["P"], want, 0, tol)
        o = tilec_run(tmp, f, "sum_atomic", {"N": n}, {"X": x, "S": "zeros"}, ["S"], level)
        close("sum_atomic (%s)" % tag, o and o["S"], want, 0, tol)

        # 06: the sum of 02, its tiles through a pipelined loop of 1, 2, 3 stages (and one tile only:
        # fewer iterations than stages)
        n = 1000003 if not level else 70001
        x = rng.uniform(-1, 1, n).astype(np.float32)
        f = "examples/tutorial_pipeline.tl"
        for consts in (("-D", "STAGES=1"), ("-D", "STAGES=2"), ("-D", "STAGES=3"),
                       ("-D", "STAGES=3", "-D", "TILES=1")):
            per = 2048 * (1 if "TILES=1" in consts else 8)
            nb = -(-n // per)
            o = tilec_run(tmp, f, "sum_pipelined", {"N": n, "NB": nb}, {"X": x}, ["P"], level + consts)
            parts = np.pad(x.astype(np.float64), (0, nb * per - n)).reshape(nb, per).sum(axis=1)
            close("sum_pipelined %s (%s)" % (" ".join(consts), tag), o and o["P"], parts, 0, 1e-6 * per)

        # 03: the fused softmax of section 4, f16 rows of at most BN = 32768 elements
        n = 30001 if not level else 1000
        x = rng.uniform(-4, 4, (3, n)).astype(np.float16)
        e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=1, keepdims=True))
        o = tilec_run(tmp, "examples/tutorial_softmax.tl", "softmax_fused", {"M": 3, "N": n}, {"X": x}, ["Y"],
                      level)
        close("softmax_fused (%s)" % tag, o and o["Y"].astype(np.float64), e / e.sum(axis=1, keepdims=True),
              2e-3, 1e-6)

        # 05: the matmul steps of sections 2 to 5, f16 in, f32 accumulation, f16 out; K = 70 is not a
        # multiple of 8 (the unaligned path of the copies)
        a = rng.uniform(-1, 1, (77, 70)).astype(np.float16)
        b = rng.uniform(-1, 1, (70, 141)).astype(np.float16)
        want = a.astype(np.float64) @ b.astype(np.float64)
        for kernel in ("matmul_naive", "matmul_smem", "matmul_tc", "matmul_pipelined"):
            o = tilec_run(tmp, "examples/tutorial_matmul.tl", kernel, {"M": 77, "N": 141, "K": 70},
                          {"A": a, "B": b}, ["C"], level)
            close("%s (%s)" % (kernel, tag), o and o["C"].astype(np.float64), want, 2e-3, 2e-3)

        # 04: the transpose, straight from global and through a shared tile (plain, padded, swizzled)
        m, n = (1001, 777) if not level else (203, 141)  # ragged: no multiple of 32 or 4
        a = rng.uniform(-1, 1, (m, n)).astype(np.float32)
        f = "examples/tutorial_transpose.tl"
        for kernel, consts in (("transpose_naive", ()), ("transpose_shared", ()),
                               ("transpose_shared", ("-D", "PAD=1")), ("transpose_shared", ("-D", "SWIZZLE=1"))):
            o = tilec_run(tmp, f, kernel, {"M": m, "N": n}, {"A": a}, ["B"], level + consts)
            close("%s %s (%s)" % (kernel, " ".join(consts), tag), o and o["B"], a.T.astype(np.float64), 0, 0)

# 00_vector_add.md: vector_add's 16-byte accesses, one per chunk (4) and tensor
for arch in ("sm_80", "sm_90a"):
    ptx = subprocess.run([tilec, "--arch", arch, os.path.join(root, "examples/vector_add.tl"), "-o", "-"],
                         capture_output=True, text=True).stdout
    n_ld, n_st = ptx.count("ld.global.v4.f32"), ptx.count("st.global.v4.f32")
    if (n_ld, n_st) != (8, 4):
        fail("vector_add for %s: %d ld.global.v4.f32 and %d st.global.v4.f32, the page says 8 and 4"
             % (arch, n_ld, n_st))

# 01_fusion.md: silu_mul_add's five instructions per element, 16 elements per thread
for arch in ("sm_80", "sm_90a"):
    ptx = subprocess.run([tilec, "--arch", arch, os.path.join(root, "examples/tutorial_fusion.tl"), "-o", "-"],
                         capture_output=True, text=True).stdout
    body = ptx.split(".entry silu_mul_add(")[-1].split(".entry ")[0]
    for ins in ("mul.rn.f32", "ex2.approx.ftz.f32", "add.rn.f32", "div.rn.f32", "fma.rn.f32"):
        if len(re.findall(r"\s%s\s" % re.escape(ins), body)) != 16:
            fail("silu_mul_add for %s: %d %s, the page says 16"
                 % (arch, len(re.findall(r"\s%s\s" % re.escape(ins), body)), ins))

# 02_reductions.md: per kernel, 5 + 3 butterfly shuffles, one barrier, one atomic in sum_atomic only
for arch in ("sm_80", "sm_90a"):
    ptx = subprocess.run([tilec, "--arch", arch, os.path.join(root, "examples/tutorial_reduce.tl"), "-o", "-"],
                         capture_output=True, text=True).stdout
    for kernel, atoms in (("sum_partials", 0), ("sum_atomic", 1)):
        body = ptx.split(".entry %s(" % kernel)[-1].split(".entry ")[0]
        got = (body.count("shfl.sync.bfly.b32"), body.count("bar.sync"), body.count("atom.global.add.f32"))
        if got != (8, 1, atoms):
            fail("%s for %s: %d shfl.sync.bfly.b32, %d bar.sync, %d atom.global.add.f32; the page says 8, 1, %d"
                 % ((kernel, arch) + got + (atoms,)))

# 04_transpose.md: per thread, the naive kernel's 4 element loads and stores, no vector; the shared
# kernels' one 16-byte load and store (4 scalar ones on the edge path) and 4 shared loads and stores
for arch in ("sm_80", "sm_90a"):
    for consts in ((), ("-D", "PAD=1"), ("-D", "SWIZZLE=1")):
        ptx = subprocess.run([tilec, "--arch", arch, os.path.join(root, "examples/tutorial_transpose.tl"), "-o", "-"]
                             + list(consts), capture_output=True, text=True).stdout
        kernels = {k: ptx.split(".entry %s(" % k)[-1].split(".entry ")[0]
                   for k in ("transpose_naive", "transpose_shared")}
        want = {("transpose_naive", "ld.global.f32"): 4, ("transpose_naive", "st.global.f32"): 4,
                ("transpose_naive", "ld.global.v4.f32"): 0, ("transpose_naive", "st.global.v4.f32"): 0,
                ("transpose_shared", "ld.global.v4.f32"): 1, ("transpose_shared", "st.global.v4.f32"): 1,
                ("transpose_shared", "ld.global.f32"): 4, ("transpose_shared", "st.global.f32"): 4,
                ("transpose_shared", "st.shared.f32"): 4, ("transpose_shared", "ld.shared.f32"): 4}
        for (k, ins), n in want.items():
            got = len(re.findall(r"\s%s\s" % re.escape(ins), kernels[k]))
            if got != n:
                fail("%s %s for %s: %d %s, the page says %d" % (k, " ".join(consts), arch, got, ins, n))

# 06_pipelining.md: per number of stages S, S commit groups, wait_group S - 2 in the loop and 0 after
# it, 3 barriers for 1 stage and 2 for more, 4 cp.async per place that issues a tile (S places)
for arch in ("sm_80", "sm_90a"):
    for stages in (1, 2, 3):
        ptx = subprocess.run([tilec, "--arch", arch, os.path.join(root, "examples/tutorial_pipeline.tl"), "-o", "-",
                              "-D", "STAGES=%d" % stages], capture_output=True, text=True).stdout
        waits = sorted(int(w) for w in re.findall(r"cp\.async\.wait_group (\d+);", ptx))
        got = (ptx.count("cp.async.commit_group;"), waits, ptx.count("bar.sync"),
               ptx.count("cp.async.cg.shared.global"))
        want = (stages, sorted([max(stages - 2, 0), 0]), 3 if stages == 1 else 2, 4 * stages)
        if got != want:
            fail("sum_pipelined with %d stages for %s: commit_group, wait_group, bar.sync, cp.async.cg %s;"
                 " the page says %s" % (stages, arch, got, want))

# ---------------------------------------------------------------- 2. and 3. the pages
pages = sorted(glob.glob(os.path.join(root, "docs", "tutorials", "[0-9][0-9]_*.md")))
if len(compared) != 3 * 21:
    fail("%d outputs compared, not %d" % (len(compared), 3 * 21))
if not pages:
    fail("no numbered tutorials in docs/tutorials")
checked = ran = 0
with tempfile.TemporaryDirectory() as tmp:
    for d in ("examples", "stdlib"):
        os.symlink(os.path.join(root, d), os.path.join(tmp, d))
    for page in pages:
        name = os.path.basename(page)
        lines = open(page, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            m = re.match(r"^<!-- check: (.*) -->$", lines[i])
            fence = re.match(r"^```(\w*)\s*$", lines[i])
            if m:
                if not lines[i + 1].startswith("```"):
                    fail("%s:%d: a check comment not followed by a fenced block" % (name, i + 1))
                    i += 1
                    continue
                j = i + 2
                block = []
                while not lines[j].startswith("```"):
                    block.append(" ".join(lines[j].split()))
                    j += 1
                r = subprocess.run([tilec] + shlex.split(m.group(1)), cwd=root, capture_output=True,
                                   text=True)
                out = [" ".join(s.split()) for s in (r.stdout + r.stderr).split("\n") if s.strip()]
                if r.returncode != 0:
                    fail("%s:%d: tilec %s: exit %d" % (name, i + 1, m.group(1), r.returncode))
                pos = 0
                skip = True  # the first line anywhere, the next ones right after it unless `...`
                for want in block:
                    if want == "...":
                        skip = True
                        continue
                    if want == "":
                        continue
                    k = pos
                    while k < len(out) and out[k] != want and skip:
                        k += 1
                    if k >= len(out) or out[k] != want:
                        fail("%s:%d: not in the output of `tilec %s` (or not in this order): %s"
                             % (name, i + 1, m.group(1), want))
                        break
                    pos = k + 1
                    skip = False
                checked += 1
                i = j + 1
            elif fence and fence.group(1) == "sh":
                j = i + 1
                cmds = []
                while not lines[j].startswith("```"):
                    cmds.append(lines[j])
                    j += 1
                text = "\n".join(cmds).replace("\\\n", " ")
                for cmd in text.split("\n"):
                    cmd = cmd.split(" #")[0].strip()
                    if not cmd.startswith("tilec "):
                        continue
                    r = subprocess.run([tilec] + shlex.split(cmd)[1:], cwd=tmp, capture_output=True,
                                       text=True)
                    if r.returncode != 0:
                        fail("%s:%d: `%s` exits %d:\n%s" % (name, i + 1, cmd, r.returncode, r.stderr))
                    ran += 1
                i = j + 1
            elif fence:
                j = i + 1
                while not lines[j].startswith("```"):
                    j += 1
                i = j + 1
            else:
                i += 1

print("tutorials.py: %d outputs compared with NumPy" % len(compared))
print("tutorials.py: %d pages, %d quoted outputs checked, %d command lines run, %d failures"
      % (len(pages), checked, ran, len(failures)))
sys.exit(1 if failures else 0)
