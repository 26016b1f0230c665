#!/usr/bin/env python3
"""check.py PUZZLE FILE.tl: run a puzzle's kernel on the CPU and compare it with NumPy.

The puzzles are docs/puzzles/*.md (docs/puzzles/README.md says how to play). For each of the
puzzle's cases (ragged shapes: never a multiple of any tile), this script makes random inputs,
writes them as .npy files, runs the kernel of FILE.tl through `tilec run` (the interpreter: no
GPU), reads its outputs back and compares them element by element with a NumPy reference, within
the tolerance the puzzle states. It prints PASS, or FAIL with the first element that differs and
how to run that case yourself; a file that does not compile, or a run the interpreter stops (an
index out of bounds, a read of something never written), is a FAIL with tilec's message.

Exit status: 0 when every case passes, 1 on any failure, 2 on a usage error.

tilec is $TILEC, else build/tools/tilec of this checkout, else `tilec` on PATH. Needs NumPy
(Debian: python3-numpy; /usr/bin/python3 if the python3 first on PATH lacks it).
"""

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # pragma: no cover - depends on the machine
    sys.stderr.write("check.py needs NumPy (Debian: apt install python3-numpy; or run it with /usr/bin/python3)\n")
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------- inputs

def eighths(rng, shape, lo=-2.0, hi=2.0):
    """Multiples of 1/8 in [lo, hi]: sums and products of a few thousand of them are exact in f32
    (and products in f16), whatever the order, so a correct kernel matches the reference exactly."""
    return (rng.integers(int(lo * 8), int(hi * 8) + 1, size=shape) / 8.0).astype(np.float32)


def uniform(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def f16(x):
    return np.asarray(x).astype(np.float16)


# ---------------------------------------------------------------- references

def ref_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ref_attention(q, k, v, scale):
    s = q.astype(np.float64) @ k.astype(np.float64).T * scale
    return ref_softmax(s) @ v.astype(np.float64)


class Puzzle:
    def __init__(self, num, slug, kernel, cases, make, ref, outputs, atol, rtol, what, elementwise=False):
        self.num, self.slug, self.kernel = num, slug, kernel
        self.elementwise = elementwise  # output [idx] depends on inputs [idx]: show them on a mismatch
        self.cases = cases  # list of dicts of sizes
        self.make = make  # (rng, sizes) -> {name: array or Python scalar}
        self.ref = ref  # (inputs) -> {output name: array}
        self.outputs = outputs  # {output name: NumPy dtype}
        self.atol, self.rtol = atol, rtol
        self.what = what

    @property
    def name(self):
        return f"{self.num}_{self.slug}"


def _argmax_input(rng, s):
    x = eighths(rng, (s["M"], s["N"]))
    x[1::2] -= 3.0  # every other row all negative: a padded 0 would win there
    return {"X": x}


def _softmax_input(rng, s):
    x = uniform(rng, (s["M"], s["N"]), -4.0, 4.0)
    x[1::2] -= 40.0  # every other row far below 0: padded zeros would take the max and the sum there
    return {"X": x}


PUZZLES = [
    Puzzle("01", "add_constant", "add_constant",
           [dict(N=1000), dict(N=37), dict(N=5000), dict(N=1)],
           lambda rng, s: {"X": eighths(rng, (s["N"],))},
           lambda i: {"Y": i["X"] + 10.0},
           {"Y": np.float32}, 0.0, 0.0, "Y = X + 10", elementwise=True),
    Puzzle("02", "saxpy", "saxpy",
           [dict(N=1000, a=0.5), dict(N=37, a=-1.25), dict(N=4099, a=3.0), dict(N=1, a=2.0)],
           lambda rng, s: {"X": eighths(rng, (s["N"],)), "Y": eighths(rng, (s["N"],)), "a": s["a"]},
           lambda i: {"Z": i["a"] * i["X"] + i["Y"]},
           {"Z": np.float32}, 0.0, 0.0, "Z = a * X + Y", elementwise=True),
    Puzzle("03", "broadcast_add", "broadcast_add",
           [dict(M=37, N=100), dict(M=5, N=1000), dict(M=70, N=3), dict(M=1, N=1)],
           lambda rng, s: {"X": eighths(rng, (s["M"], s["N"])), "b": eighths(rng, (s["N"],))},
           lambda i: {"Y": i["X"] + i["b"][None, :]},
           {"Y": np.float32}, 0.0, 0.0, "Y[i, j] = X[i, j] + b[j]", elementwise=True),
    Puzzle("04", "row_sum", "row_sum",
           [dict(M=37, N=1000), dict(M=3, N=1), dict(M=64, N=300), dict(M=1, N=77)],
           lambda rng, s: {"X": eighths(rng, (s["M"], s["N"]))},
           lambda i: {"S": i["X"].astype(np.float64).sum(axis=1)},
           {"S": np.float32}, 0.0, 0.0, "S[i] = sum of row i of X"),
    Puzzle("05", "softmax", "softmax",
           [dict(M=37, N=300), dict(M=5, N=512), dict(M=9, N=1), dict(M=2, N=200)],
           _softmax_input,
           lambda i: {"Y": ref_softmax(i["X"])},
           {"Y": np.float32}, 1e-6, 1e-5, "Y = softmax of each row of X (N <= 512)"),
    Puzzle("06", "col_sum", "col_sum",
           [dict(M=37, N=100), dict(M=1000, N=5), dict(M=1, N=1), dict(M=300, N=70)],
           lambda rng, s: {"X": eighths(rng, (s["M"], s["N"]))},
           lambda i: {"S": i["X"].astype(np.float64).sum(axis=0)},
           {"S": np.float32}, 0.0, 0.0, "S[j] = sum of column j of X"),
    Puzzle("07", "transpose", "transpose",
           [dict(M=37, N=100), dict(M=100, N=37), dict(M=1, N=1), dict(M=64, N=65)],
           lambda rng, s: {"A": eighths(rng, (s["M"], s["N"]))},
           lambda i: {"B": i["A"].T.copy()},
           {"B": np.float32}, 0.0, 0.0, "B = A transposed"),
    Puzzle("08", "cumsum", "cumsum_rows",
           [dict(M=37, N=300), dict(M=3, N=1), dict(M=5, N=1000), dict(M=1, N=129)],
           lambda rng, s: {"X": eighths(rng, (s["M"], s["N"]))},
           lambda i: {"Y": np.cumsum(i["X"].astype(np.float64), axis=1)},
           {"Y": np.float32}, 0.0, 0.0, "Y[i, j] = X[i, 0] + ... + X[i, j]"),
    Puzzle("09", "argmax", "argmax_rows",
           [dict(M=37, N=1000), dict(M=5, N=3), dict(M=8, N=257), dict(M=2, N=1)],
           _argmax_input,
           lambda i: {"I": np.argmax(i["X"], axis=1).astype(np.int32)},
           {"I": np.int32}, 0.0, 0.0, "I[i] = the first j where row i of X is largest"),
    Puzzle("10", "matmul", "matmul",
           [dict(M=37, N=70, K=100), dict(M=1, N=1, K=1), dict(M=130, N=65, K=48), dict(M=16, N=200, K=17)],
           lambda rng, s: {"A": f16(eighths(rng, (s["M"], s["K"]))), "B": f16(eighths(rng, (s["K"], s["N"])))},
           lambda i: {"C": i["A"].astype(np.float64) @ i["B"].astype(np.float64)},
           {"C": np.float32}, 0.0, 0.0, "C = A @ B"),
    Puzzle("11", "matmul_bias_relu", "matmul_bias_relu",
           [dict(M=37, N=70, K=100), dict(M=1, N=1, K=1), dict(M=130, N=65, K=48), dict(M=16, N=200, K=17)],
           lambda rng, s: {"A": f16(eighths(rng, (s["M"], s["K"]))), "B": f16(eighths(rng, (s["K"], s["N"]))),
                           "bias": eighths(rng, (s["N"],), -8.0, 8.0)},
           lambda i: {"C": np.maximum(i["A"].astype(np.float64) @ i["B"].astype(np.float64) + i["bias"], 0.0)
                      .astype(np.float16)},
           {"C": np.float16}, 0.0, 0.0, "C = relu(A @ B + bias)"),
    Puzzle("12", "attention", "attention",
           [dict(M=37, N=100, scale=0.25), dict(M=1, N=1, scale=0.25), dict(M=70, N=33, scale=0.5),
            dict(M=5, N=300, scale=0.125)],
           lambda rng, s: {"Q": f16(uniform(rng, (s["M"], 32))), "K": f16(uniform(rng, (s["N"], 32))),
                           "V": f16(uniform(rng, (s["N"], 32))), "scale": s["scale"]},
           lambda i: {"O": ref_attention(i["Q"], i["K"], i["V"], i["scale"])},
           {"O": np.float32}, 2e-3, 0.0, "O = softmax(scale * Q K^T) V"),
]


def find_puzzle(key):
    key = key.strip()
    base = os.path.basename(key)
    base = base[:-3] if base.endswith(".md") or base.endswith(".tl") else base
    for p in PUZZLES:
        if base in (p.num, p.num.lstrip("0"), p.slug, p.name, p.kernel):
            return p
    return None


def find_tilec(given):
    if given:
        return given
    if os.environ.get("TILEC"):
        return os.environ["TILEC"]
    built = os.path.join(ROOT, "build", "tools", "tilec")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("tilec")


def fmt(v):
    if isinstance(v, (np.integer, int)):
        return str(int(v))
    return f"{float(v):.9g}"


def check_case(p, tl, tilec, n, seed, level, arch, workdir, timeout):
    """Runs case n (from 1) of puzzle p; returns (ok, message lines)."""
    sizes = p.cases[n - 1]
    rng = np.random.default_rng([seed, int(p.num), n])
    inputs = p.make(rng, sizes)
    want = p.ref(inputs)
    cmd = [tilec, "run", tl, "--kernel", p.kernel]
    for name, v in inputs.items():
        if isinstance(v, np.ndarray):
            path = os.path.join(workdir, f"{name}.npy")
            np.save(path, v)
            cmd += ["--arg", f"{name}={path}"]
        else:
            cmd += ["--arg", f"{name}={fmt(v)}"]
    outs = {}
    for name, dtype in p.outputs.items():
        path = os.path.join(workdir, f"{name}.out.npy")
        np.save(path, np.zeros(np.shape(want[name]), dtype=dtype))  # the value, if the kernel reads it
        cmd += ["--arg", f"{name}={path}", "--out", f"{name}={path}"]
        outs[name] = path
    if level != "tile":
        cmd += ["--level", level]
    if arch:
        cmd += ["--arch", arch]
    shown = " ".join(shlex.quote(c) for c in cmd)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, [f"tilec run took more than {timeout} s (a loop that never ends? a huge tile?)", f"  ran: {shown}"]
    except OSError as e:
        return False, [f"cannot run tilec ({tilec}): {e}"]
    if r.returncode != 0:
        lines = [f"tilec run failed (status {r.returncode}); its message:"]
        lines += ["  " + ln for ln in r.stderr.decode(errors="replace").rstrip().splitlines()]
        lines += [f"  ran: {shown}"]
        return False, lines
    for name, dtype in p.outputs.items():
        got = np.load(outs[name])
        exp = np.asarray(want[name])
        if got.shape != exp.shape:
            return False, [f"{name} has shape {got.shape}, expected {exp.shape}"]
        g = got.astype(np.float64)
        e = exp.astype(np.float64)
        bad = ~(np.abs(g - e) <= p.atol + p.rtol * np.abs(e))  # NaN is bad too
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            where = ", ".join(str(i) for i in idx)
            lines = [f"{name}[{where}] = {fmt(got[idx])}, expected {fmt(exp[idx])} "
                     f"({int(bad.sum())} of {bad.size} elements differ; the first in row-major order)"]
            same = [f"{k}[{where}] = {fmt(v[idx])}" for k, v in inputs.items()
                    if p.elementwise and isinstance(v, np.ndarray) and v.shape == exp.shape]
            if same:
                lines.append("where the input" + ("s hold " if len(same) > 1 else " holds ") + ", ".join(same))
            if not np.any(got):
                lines.append(f"{name} is all zeros: does the kernel store its result?")
            lines.append(f"  ran: {shown}")
            return False, lines
    return True, []


def main(argv):
    ap = argparse.ArgumentParser(
        prog="check.py",
        description="Check a puzzle's kernel (docs/puzzles/) on the CPU against NumPy.",
        epilog="examples: check.py 01 my_add.tl;  check.py row_sum mine.tl --level thread;  check.py --list")
    ap.add_argument("puzzle", nargs="?", help="the puzzle: its number (01 or 1), name (row_sum) or page")
    ap.add_argument("file", nargs="?", help="your .tl file")
    ap.add_argument("--list", action="store_true", help="list the puzzles")
    ap.add_argument("--level", choices=["tile", "thread"], default="tile",
                    help="tile: the kernel as written (default); thread: what the compiler made of it, every "
                         "thread, checked for races (slower)")
    ap.add_argument("--arch", help="the target of --level thread (sm_80, sm_90a; tilec's default: sm_90a)")
    ap.add_argument("--seed", type=int, default=0, help="the inputs' random seed (default 0)")
    ap.add_argument("--tilec", help="the tilec to run (default: $TILEC, build/tools/tilec, tilec on PATH)")
    ap.add_argument("--keep", metavar="DIR", help="keep the .npy files of the cases in DIR (to rerun them)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run of tilec (default 300)")
    a = ap.parse_args(argv)

    if a.list:
        for p in PUZZLES:
            print(f"{p.name:22} kernel {p.kernel:18} {p.what}")
        return 0
    if not a.puzzle or not a.file:
        ap.print_usage(sys.stderr)
        sys.stderr.write("check.py: error: give a puzzle and your .tl file (check.py --list lists the puzzles)\n")
        return 2
    if a.seed < 0:
        sys.stderr.write("check.py: error: --seed takes a number from 0 up\n")
        return 2
    p = find_puzzle(a.puzzle)
    if p is None:
        sys.stderr.write(f"check.py: error: no puzzle '{a.puzzle}'; check.py --list lists them\n")
        return 2
    if not os.path.isfile(a.file):
        sys.stderr.write(f"check.py: error: no file '{a.file}'\n")
        return 2
    tilec = find_tilec(a.tilec)
    if not tilec:
        sys.stderr.write("check.py: error: no tilec: build it (docs/install.md) or set TILEC=/path/to/tilec\n")
        return 2

    tl = os.path.abspath(a.file)
    print(f"puzzle {p.name}: {p.what}, kernel '{p.kernel}' of {a.file}, {a.level} level"
          + (f" ({a.arch})" if a.arch else ""))
    tol = "exact" if p.atol == 0 and p.rtol == 0 else f"|got - expected| <= {p.atol:g} + {p.rtol:g} |expected|"
    print(f"  tolerance: {tol}")
    failed = 0
    note = False
    for n, sizes in enumerate(p.cases, 1):
        label = ", ".join(f"{k}={fmt(v)}" for k, v in sizes.items())
        if a.keep:
            work = os.path.join(a.keep, f"case{n}")
            os.makedirs(work, exist_ok=True)
            ok, msg = check_case(p, tl, tilec, n, a.seed, a.level, a.arch, work, a.timeout)
        else:
            with tempfile.TemporaryDirectory(prefix="tilec-puzzle-") as work:
                ok, msg = check_case(p, tl, tilec, n, a.seed, a.level, a.arch, work, a.timeout)
                if not ok:  # the command shown names files that are gone: say how to keep them
                    msg = [m.replace(work, "DIR") for m in msg]
                    note = note or any(m.lstrip().startswith("ran:") for m in msg)
        print(f"  case {n}/{len(p.cases)} ({label}): {'ok' if ok else 'FAIL'}")
        for m in msg:
            print("    " + m)
        if not ok:
            failed += 1
            if msg and msg[0].startswith("tilec run failed") and n == 1:
                break  # the others would say the same (most often: it does not compile)
    if note:
        print("  (DIR: check.py --keep DIR keeps the cases' .npy files, to run them yourself)")
    if failed and n == 1 and len(p.cases) > 1:
        print(f"FAIL {p.name}: tilec stopped at the first case (the others would say the same)")
        return 1
    if failed:
        print(f"FAIL {p.name}: {failed} of {len(p.cases)} cases wrong")
        return 1
    print(f"PASS {p.name}: {len(p.cases)} cases")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # check.py ... | head: end quietly, as cat does
    sys.exit(main(sys.argv[1:]))
