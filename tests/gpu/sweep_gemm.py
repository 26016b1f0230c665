#!/usr/bin/env python3
"""sweep_gemm.py: examples/matmul.tl (or another GEMM kernel with the same parameters) over the shape
grid of issue 14 against cuBLAS (torch.matmul) in the same process.

    python3 tests/gpu/sweep_gemm.py TILEC OUTDIR [--dtypes f16,bf16] [--m 16,64,...] [--nk 4096x4096,...]
                                    [--config NAME=FLAGS]... [--alt NAME=FILE]... [--reps R] [--file PATH --kernel NAME]
                                    [--layout nn|nt|tn]

For each dtype and shape (M, N, K): A [M, K] and B [K, N] uniform in [-1, 1), C [M, N] filled with NaN;
each config (default: `default`, the kernel at its defaults; --config big="-D BN=256 -D STAGES=4" adds
one; a config's FLAGS may start with --tilec=PATH: that compiler instead, an A/B of two builds; --alt new=old.tl adds the same kernel of another source at its defaults, a change of the kernel's
code timed against the code before it in one run) is compiled by TILEC for the shape's sizes (--size), loaded and launched through tlcuda.py (tensor
maps encoded as a host does, docs/abi.md; TILEC_NO_TMA=1 passes none, and the kernels take their
cp.async path), checked against torch's f32 product of the same inputs (every element: the largest
error over the largest |value|), and timed with CUDA events (tlcuda.timed: a CUDA graph of up to 10
calls, median of R replays) beside torch.matmul on the same tensors (cuBLAS). Shapes by default: M in
{16, 64, 128, 512, 1024, 4096, 16384} x (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336), (8192,
8192)}. --layout: how the kernel takes A and B (nn: A [M, K], B [K, N]; nt: B stored [N, K], as
stdlib/gemm.tl's gemm_nt; tn: A stored [K, M], as gemm_tn); cuBLAS gets the same storage (torch.matmul
on the transposed views). Writes OUTDIR/sweep_gemm.md (a table per dtype, the geometric mean of the ratios per config)
and prints it. A config that TILEC cannot compile (or the driver load) at a shape gets "not built" in
its cell and the sweep goes on. Exit 1 when a result is wrong or a config was not built, 2 without a GPU or torch; speed never changes it.
"""
import math
import os
import subprocess
import sys

try:
    import torch
except ImportError:
    print("sweep_gemm: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import DT, ROOT, Driver, Kernel, config_compiler, timed  # noqa: E402

M_ALL = [16, 64, 128, 512, 1024, 4096, 16384]
NK_ALL = [(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)]


def per_graph(flops):
    """Calls per CUDA graph: about a millisecond of work at 700 TFLOP/s, 1 to 10."""
    return max(1, min(10, int(1e-3 * 700e12 / flops)))


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    tilec, outdir = args[0], args[1]
    dtypes, ms, nks, reps = ["f16", "bf16"], M_ALL, NK_ALL, 5
    configs = [("default", [], None)]  # (name, -D flags, another source or None)
    path, kname = os.path.join(ROOT, "examples/matmul.tl"), "matmul"
    layout = "nn"
    i = 2
    while i < len(args):
        a, v = args[i], args[i + 1] if i + 1 < len(args) else None
        if a == "--dtypes":
            dtypes = v.split(",")
        elif a == "--m":
            ms = [int(x) for x in v.split(",")]
        elif a == "--nk":
            nks = [tuple(int(y) for y in x.split("x")) for x in v.split(",")]
        elif a == "--reps":
            reps = int(v)
        elif a == "--config":
            name, _, flags = v.partition("=")
            configs.append((name, flags.split(), None))
        elif a == "--alt":
            name, _, alt = v.partition("=")
            configs.append((name, [], alt))
        elif a == "--file":
            path = v
        elif a == "--kernel":
            kname = v
        elif a == "--layout" and v in ("nn", "nt", "tn"):
            layout = v
        else:
            print(f"sweep_gemm: unknown option {a}\n{__doc__}", file=sys.stderr)
            return 2
        i += 2
    if not torch.cuda.is_available():
        print("sweep_gemm: no GPU", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    drv = Driver()
    dev = torch.cuda.get_device_name(0)
    wrong = failed = 0
    lines = [f"# GEMM: {os.path.relpath(path, ROOT)} against cuBLAS (torch.matmul)", "",
             f"`python3 tests/gpu/sweep_gemm.py` on {dev}, torch {torch.__version__}; C = A @ B, A [M, K], "
             f"B [K, N] ({'B stored [N, K]' if layout == 'nt' else 'A stored [K, M]' if layout == 'tn' else 'row-major'}); median of {reps} replays of a CUDA graph (CUDA events); "
             f"TMA {'off (TILEC_NO_TMA=1)' if os.environ.get('TILEC_NO_TMA') == '1' else 'on'}.", ""]
    for name, flags, alt in configs:
        lines.append(f"- config `{name}`: " + (f"{alt} at its defaults" if alt else f"`{' '.join(flags) or '(defaults)'}`"))
    for dtype in dtypes:
        t = DT[dtype]
        lines += ["", f"## {dtype}", "",
                  "| M | N | K | cuBLAS TFLOP/s | " + " | ".join(f"{n} TFLOP/s | {n} / cuBLAS" for n, _, _ in configs)
                  + " | max error |",
                  "|---|---|---|---|" + "---|---|" * len(configs) + "---|"]
        logs = {n: [] for n, _, _ in configs}
        for (n, k) in nks:
            for m in ms:
                torch.manual_seed(m * 7 + n * 3 + k)
                A = (torch.rand(m, k, device="cuda") * 2 - 1).to(t)
                B = (torch.rand(k, n, device="cuda") * 2 - 1).to(t)
                ref = A.float() @ B.float()
                # the kernel's storage (Ak, Bk) and cuBLAS's views of the same memory (A, B)
                Ak = A.t().contiguous() if layout == "tn" else A
                Bk = B.t().contiguous() if layout == "nt" else B
                A = Ak.t() if layout == "tn" else A
                B = Bk.t() if layout == "nt" else B
                scale = ref.abs().max().item()
                flops = 2.0 * m * n * k
                pg = per_graph(flops)
                t_cublas = timed(lambda: torch.matmul(A, B), reps, pg)
                cells, worst = [], 0.0
                for cname, flags, alt in configs:
                    tc, fl = config_compiler(flags, tilec)
                    try:
                        kern = Kernel(drv, tc, alt or path, kname, dtype, {"M": m, "N": n, "K": k}, fl, quiet=True,
                                      tag=f"_{cname}")
                    except (subprocess.CalledProcessError, RuntimeError) as e:
                        # a config that does not compile or load at this shape: marked, the sweep goes on
                        failed += 1
                        cells.append(f"- | not built ({str(e).splitlines()[0][:60] if isinstance(e, RuntimeError) else 'tilec exit ' + str(e.returncode)})")
                        continue
                    C = torch.full((m, n), float("nan"), device="cuda", dtype=t)
                    kern(A=Ak, B=Bk, C=C, M=m, N=n, K=k)
                    torch.cuda.synchronize()
                    err = ((C.float() - ref).abs().max() / scale).item()
                    tol = 1e-2 if dtype == "f16" else 2e-2
                    ok = err == err and err <= tol
                    wrong += not ok
                    worst = max(worst, err) if err == err else float("nan")
                    tms = timed(lambda: kern(A=Ak, B=Bk, C=C, M=m, N=n, K=k), reps, pg)
                    ratio = t_cublas / tms
                    logs[cname].append(math.log(ratio))
                    cells.append(f"{flops / tms / 1e9:.0f} | **{ratio:.3f}**{'' if ok else ' WRONG'}"
                                 f"{'' if kern.tma else ' (no TMA)'}")
                    del C
                line = f"| {m} | {n} | {k} | {flops / t_cublas / 1e9:.0f} | " + " | ".join(cells) + f" | {worst:.1e} |"
                lines.append(line)
                print(dtype, line, flush=True)
                del A, B, Ak, Bk, ref
        lines.append("")
        lines.append("geometric mean of tilec / cuBLAS: " +
                     ", ".join(f"`{c}` {math.exp(sum(v) / len(v)):.3f}" for c, v in logs.items() if v) +
                     "; worst: " + ", ".join(f"`{c}` {math.exp(min(v)):.3f}" for c, v in logs.items() if v))
    lines.append("")
    with open(os.path.join(outdir, "sweep_gemm.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"sweep_gemm: {'all results right' if not wrong else f'{wrong} WRONG'}"
          f"{f', {failed} not built' if failed else ''}; table in {outdir}/sweep_gemm.md")
    return 1 if wrong or failed else 0


if __name__ == "__main__":
    sys.exit(main())
