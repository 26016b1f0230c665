#!/usr/bin/env python3
"""tutorials.py: the kernels of the numbered tutorials (docs/tutorials/00 to 06) on the GPU, checked
against torch and timed beside it in the same process.

    python3 tests/gpu/tutorials.py TILEC OUTDIR [--reps R]
    python3 tests/gpu/tutorials.py TILEC OUTDIR --dry-run     # compile only: no GPU, no torch

The kernels: 00 vector_add and vector_add_thread (examples/vector_add.tl,
examples/tutorial_vector_add_thread.tl), 01 silu, mul, add and silu_mul_add
(examples/tutorial_fusion.tl), 02 sum_partials and sum_atomic (examples/tutorial_reduce.tl), 04
transpose_naive and transpose_shared plain, -D PAD=1 and -D SWIZZLE=1
(examples/tutorial_transpose.tl), 06 sum_pipelined with STAGES = 1, 2, 3
(examples/tutorial_pipeline.tl). Each is compiled with TILEC, run on random data at ragged sizes with
its outputs poisoned (NaN) and compared with torch in float64, then timed at a large size (2^26 f32
elements, or 8192 x 8192 f32 for the transpose) beside a torch peer (a + b; silu(x) * g + r eager
and, where torch.compile works, compiled; torch.sum; A.t() into a contiguous tensor) and the device
copy of a tensor of the same size (y.copy_(x): the practical bandwidth roof). Median of R replays of
a CUDA graph (tlcuda.timed). One failing kernel is reported as such and the rest still run. Writes
OUTDIR/tutorials.md (a table per tutorial: us, GB/s, fraction of the copy's bandwidth, torch's time
over ours) and prints it. Exit 1 when a result is wrong or a kernel fails, 2 without a GPU or torch.

--dry-run compiles every kernel (sm_90a, the default target) and checks that its PTX carries the
kernel's launch metadata; it needs neither torch nor a GPU, so it runs anywhere tilec does.
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (tutorial, label, file, kernel, tilec flags)
VARIANTS = [
    ("00", "vector_add", "examples/vector_add.tl", "vector_add", ()),
    ("00", "vector_add_thread", "examples/tutorial_vector_add_thread.tl", "vector_add_thread", ()),
    ("01", "silu", "examples/tutorial_fusion.tl", "silu", ()),
    ("01", "mul", "examples/tutorial_fusion.tl", "mul", ()),
    ("01", "add", "examples/tutorial_fusion.tl", "add", ()),
    ("01", "silu_mul_add", "examples/tutorial_fusion.tl", "silu_mul_add", ()),
    ("02", "sum_partials", "examples/tutorial_reduce.tl", "sum_partials", ()),
    ("02", "sum_atomic", "examples/tutorial_reduce.tl", "sum_atomic", ()),
    ("04", "transpose_naive", "examples/tutorial_transpose.tl", "transpose_naive", ()),
    ("04", "transpose_shared", "examples/tutorial_transpose.tl", "transpose_shared", ()),
    ("04", "transpose_shared PAD=1", "examples/tutorial_transpose.tl", "transpose_shared", ("-D", "PAD=1")),
    ("04", "transpose_shared SWIZZLE=1", "examples/tutorial_transpose.tl", "transpose_shared",
     ("-D", "SWIZZLE=1")),
    ("06", "sum_pipelined STAGES=1", "examples/tutorial_pipeline.tl", "sum_pipelined", ("-D", "STAGES=1")),
    ("06", "sum_pipelined STAGES=2", "examples/tutorial_pipeline.tl", "sum_pipelined", ("-D", "STAGES=2")),
    ("06", "sum_pipelined STAGES=3", "examples/tutorial_pipeline.tl", "sum_pipelined", ("-D", "STAGES=3")),
]
PER_BLOCK = 2048 * 8  # BLOCK * TILES of sum_partials, sum_atomic and sum_pipelined


def dry_run(tilec):
    """Compiles every variant; 0 if all compile and carry their tilec-meta line, else 1."""
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (tut, label, path, name, flags) in enumerate(VARIANTS):
            out = os.path.join(tmp, "k%d.ptx" % i)
            r = subprocess.run([tilec, os.path.join(ROOT, path), "--kernel", name, *flags, "-o", out],
                               capture_output=True, text=True)
            meta = ""
            if r.returncode == 0:
                meta = next((ln for ln in open(out).read().splitlines()
                             if ln.startswith("// tilec-meta kernel %s " % name)), "")
            ok = r.returncode == 0 and meta != ""
            bad += not ok
            print("%s %-28s %s" % (tut, label, meta[len("// tilec-meta kernel "):] if ok else
                                   "FAILED (exit %d) %s" % (r.returncode, r.stderr.strip())))
    print("tutorials.py --dry-run: %d kernels, %d failed" % (len(VARIANTS), bad))
    return 1 if bad else 0


def main():
    if "--dry-run" in sys.argv[1:]:
        args = [a for a in sys.argv[1:] if a != "--dry-run"]
        if not args:
            print(__doc__)
            return 2
        return dry_run(args[0])
    try:
        import torch
    except ImportError:
        print("tutorials: no torch", file=sys.stderr)
        return 2
    from tlcuda import Kernel, gpu_script, timed, write_report

    setup = gpu_script(__doc__, "tutorials")
    if not setup:
        return 2
    tilec, outdir, reps, drv, head = setup
    lines = ["# The tutorials' kernels on the GPU", ""] + head + [
        "Correctness: random inputs at ragged sizes, outputs poisoned with NaN, compared with torch in",
        "float64. Speed: median of CUDA-graph replays (tlcuda.timed); GB/s counts the bytes the kernel",
        "must move (inputs read once, outputs written once); `/ copy` is that bandwidth over the device",
        "copy's (y.copy_(x), read + write); `torch / ours` above 1 means ours is faster.", "",
        "## Correctness", "", "| tutorial | kernel | size | max error | |", "|---|---|---|---|---|"]
    state = {"wrong": 0, "kernels": {}}

    def kernel(label):
        """The compiled kernel of VARIANTS' label (compiled once), or an exception."""
        if label not in state["kernels"]:
            tut, _, path, name, flags = next(v for v in VARIANTS if v[1] == label)
            tag = "_" + "".join(f for f in flags if f != "-D").replace("=", "")
            state["kernels"][label] = Kernel(drv, tilec, os.path.join(ROOT, path), name, None, flags=list(flags),
                                             quiet=True, tag=tag)
        return state["kernels"][label]

    def nan(*shape):
        return torch.full(shape, float("nan"), device="cuda")

    def rand(*shape):
        return torch.rand(*shape, device="cuda") * 2 - 1

    def report(tut, what, size, err, tol):
        ok = err == err and err <= tol  # NaN (a poisoned output left unwritten) is never ok
        state["wrong"] += not ok
        lines.append(f"| {tut} | {what} | {size} | {err:.1e} | {'ok' if ok else '**WRONG**'} |")

    def attempt(tut, what, fn):
        """Runs fn; a failure (compile, launch) is reported as a row and counted, not raised."""
        try:
            fn()
        except Exception as e:  # noqa: BLE001 (one kernel's failure must not lose the report)
            state["wrong"] += 1
            lines.append(f"| {tut} | {what} | | | **FAILED**: {type(e).__name__}: {str(e)[:200]} |")

    def err(got, want):
        return (got.double() - want.double()).abs().max().item()

    # ---------------------------------------------------------------- correctness
    for n in (1, 4097, 100003):
        a, b = rand(n), rand(n)
        for label in ("vector_add", "vector_add_thread"):
            def run(label=label, a=a, b=b, n=n):
                c = nan(n)
                kernel(label)(A=a, B=b, C=c, N=n)
                torch.cuda.synchronize()
                report("00", label, n, err(c, a + b), 0)
            attempt("00", label, run)

        x, g, r = rand(n) * 4, rand(n), rand(n)
        xd = x.double()
        silu = xd / (1 + torch.exp(-xd))
        want = silu * g.double() + r.double()

        def run3(x=x, g=g, r=r, n=n, silu=silu, want=want):
            t, u, y = nan(n), nan(n), nan(n)
            kernel("silu")(X=x, T=t, N=n)
            kernel("mul")(T=t, G=g, U=u, N=n)
            kernel("add")(U=u, R=r, Y=y, N=n)
            torch.cuda.synchronize()
            report("01", "silu", n, err(t, silu) / (1 + silu.abs().max().item()), 1e-5)
            report("01", "silu, mul, add", n, err(y, want) / (1 + want.abs().max().item()), 1e-5)
        attempt("01", "silu, mul, add", run3)

        def run1(x=x, g=g, r=r, n=n, want=want):
            y = nan(n)
            kernel("silu_mul_add")(X=x, G=g, R=r, Y=y, N=n)
            torch.cuda.synchronize()
            report("01", "silu_mul_add", n, err(y, want) / (1 + want.abs().max().item()), 1e-5)
        attempt("01", "silu_mul_add", run1)

    for n in (1, 16385, 1000003):
        x = rand(n)
        total = x.double().sum()
        tol = 1e-6 * x.abs().sum().item() + 1e-6
        nb = -(-n // PER_BLOCK)
        parts = torch.nn.functional.pad(x.double(), (0, nb * PER_BLOCK - n)).view(nb, PER_BLOCK).sum(1)
        for label in ("sum_partials", "sum_pipelined STAGES=1", "sum_pipelined STAGES=2", "sum_pipelined STAGES=3"):
            tut = "02" if label == "sum_partials" else "06"

            def run(label=label, tut=tut, x=x, n=n, nb=nb, parts=parts, total=total, tol=tol):
                p, s = nan(nb), nan(1)
                kernel(label)(X=x, P=p, N=n, NB=nb)
                kernel("sum_partials")(X=p, P=s, N=nb, NB=1)  # the second pass: tutorial 02's kernel
                torch.cuda.synchronize()
                report(tut, label + " (partials)", n, err(p, parts), 1e-6 * PER_BLOCK)
                report(tut, label + " + second pass", n, abs(s.double().item() - total.item()), tol)
            attempt(tut, label, run)

        def runa(x=x, n=n, total=total, tol=tol):
            s = torch.zeros(1, device="cuda")  # an atomic sum starts from 0, not from NaN
            kernel("sum_atomic")(X=x, S=s, N=n)
            torch.cuda.synchronize()
            report("02", "sum_atomic", n, abs(s.double().item() - total.item()), tol)
        attempt("02", "sum_atomic", runa)

    for m, n in ((1, 1), (33, 65), (1001, 777), (4096, 31)):
        a = rand(m, n)
        for label in ("transpose_naive", "transpose_shared", "transpose_shared PAD=1", "transpose_shared SWIZZLE=1"):
            def run(label=label, a=a, m=m, n=n):
                b = nan(n, m)
                kernel(label)(A=a, B=b, M=m, N=n)
                torch.cuda.synchronize()
                report("04", label, f"{m} x {n}", err(b, a.t()), 0)
            attempt("04", label, run)

    # ---------------------------------------------------------------- speed
    n = 1 << 26
    x1, x2 = rand(n), rand(n)
    y1 = torch.empty(n, device="cuda")
    t_copy = timed(lambda: y1.copy_(x1), reps)
    copy_gbs = 2 * 4 * n / t_copy / 1e6
    lines += ["", f"Device copy of {4 * n >> 20} MiB of f32 (y.copy_(x)): {t_copy * 1e3:.1f} us, "
              f"{copy_gbs:.0f} GB/s read + write.", ""]

    def speed(title, nbytes, torch_label, torch_fn, ours):
        """A table: torch's row, then one per (label, fn) of ours, each timed in a try."""
        rows = ["", f"## {title}", "", "| kernel | us | GB/s | / copy | torch / ours |", "|---|---|---|---|---|"]
        t_torch = None
        try:
            t_torch = timed(torch_fn, reps)
            rows.append(f"| torch: {torch_label} | {t_torch * 1e3:.1f} | {nbytes / t_torch / 1e6:.0f} | "
                        f"{nbytes / t_torch / 1e6 / copy_gbs:.3f} | 1 |")
        except Exception as e:  # noqa: BLE001
            rows.append(f"| torch: {torch_label} | **FAILED**: {type(e).__name__}: {str(e)[:200]} | | | |")
        for label, fn in ours:
            try:
                t = timed(fn, reps)
                ratio = f"**{t_torch / t:.3f}**" if t_torch else "-"
                rows.append(f"| {label} | {t * 1e3:.1f} | {nbytes / t / 1e6:.0f} | "
                            f"{nbytes / t / 1e6 / copy_gbs:.3f} | {ratio} |")
            except Exception as e:  # noqa: BLE001
                state["wrong"] += 1
                rows.append(f"| {label} | **FAILED**: {type(e).__name__}: {str(e)[:200]} | | | |")
        return rows

    def call(label, **args):
        def fn():
            kernel(label)(**args)
        return fn

    # 00
    lines += speed("00 vector add (N = 2^26 f32; 12 bytes per element)", 12 * n, "a + b",
                   lambda: torch.add(x1, x2, out=y1),
                   [(label, call(label, A=x1, B=x2, C=y1, N=n)) for label in ("vector_add", "vector_add_thread")])

    # 01
    g1, r1 = rand(n), rand(n)
    t1, u1 = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")

    def unfused():
        kernel("silu")(X=x1, T=t1, N=n)
        kernel("mul")(T=t1, G=g1, U=u1, N=n)
        kernel("add")(U=u1, R=r1, Y=y1, N=n)

    def eager(x, g, r):
        return torch.nn.functional.silu(x) * g + r

    rows01 = speed("01 fusion (N = 2^26 f32; GB/s of every row counts the 16 bytes per element the computation "
                   "must move: read x, g, r, write y; the 3 kernels move 32)",
                   16 * n, "silu(x) * g + r, eager (3 kernels)", lambda: eager(x1, g1, r1),
                   [("silu, mul, add (3 kernels)", unfused),
                    ("silu_mul_add", call("silu_mul_add", X=x1, G=g1, R=r1, Y=y1, N=n))])
    lines += rows01
    compile_row = len(lines)  # torch.compile's row goes here, timed last (below)

    # 02 and 06: the sum of 2^26 f32, 4 bytes per element
    nb = -(-n // PER_BLOCK)
    p1, s1 = torch.empty(nb, device="cuda"), torch.empty(1, device="cuda")
    s0 = torch.empty((), device="cuda")

    def two_pass(label):
        def fn():
            kernel(label)(X=x1, P=p1, N=n, NB=nb)
            kernel("sum_partials")(X=p1, P=s1, N=nb, NB=1)
        return fn

    def atomic():
        s1.zero_()
        kernel("sum_atomic")(X=x1, S=s1, N=n)

    ours = [("sum_partials, two passes", two_pass("sum_partials")),
            ("sum_partials, first pass only", call("sum_partials", X=x1, P=p1, N=n, NB=nb)),
            ("sum_atomic (with S.zero_())", atomic)]
    lines += speed("02 reductions (N = 2^26 f32; 4 bytes per element)", 4 * n, "torch.sum(x)",
                   lambda: torch.sum(x1, 0, out=s0), ours)
    ours = [(f"sum_pipelined STAGES={s}, first pass only",
             call(f"sum_pipelined STAGES={s}", X=x1, P=p1, N=n, NB=nb)) for s in (1, 2, 3)]
    ours += [("sum_partials (tutorial 02: registers, no stages), first pass only",
              call("sum_partials", X=x1, P=p1, N=n, NB=nb))]
    lines += speed("06 pipelining (N = 2^26 f32; 4 bytes per element)", 4 * n, "torch.sum(x)",
                   lambda: torch.sum(x1, 0, out=s0), ours)

    # 04: 8192 x 8192 f32, read once and written once
    m = 8192
    a = rand(m, m)
    b = torch.empty(m, m, device="cuda")
    lines += speed("04 transpose (8192 x 8192 f32; 8 bytes per element)", 8 * m * m,
                   "out.copy_(A.t()) (A.t().contiguous() into a given tensor)", lambda: b.copy_(a.t()),
                   [(label, call(label, A=a, B=b, M=m, N=m)) for label in
                    ("transpose_naive", "transpose_shared", "transpose_shared PAD=1", "transpose_shared SWIZZLE=1")])

    # Last, since a graph capture that fails inside torch.compile's code could leave the stream unusable
    # for what would follow: torch.compile's fused kernel, where this torch can compile (Triton).
    try:
        compiled = torch.compile(eager)
        compiled(x1, g1, r1)
        t_c = timed(lambda: compiled(x1, g1, r1), reps)
        row = (f"| torch.compile(silu(x) * g + r) | {t_c * 1e3:.1f} | {16 * n / t_c / 1e6:.0f} | "
               f"{16 * n / t_c / 1e6 / copy_gbs:.3f} | (a peer, not ours) |")
    except Exception as e:  # noqa: BLE001
        row = f"| torch.compile(silu(x) * g + r) | not available: {type(e).__name__}: {str(e)[:120]} | | | |"
    lines.insert(compile_row, row)

    lines += ["", f"{'All results right.' if not state['wrong'] else str(state['wrong']) + ' wrong or failed.'}"]
    write_report(outdir, "tutorials.md", lines)
    return 1 if state["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
