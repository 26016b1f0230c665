#!/usr/bin/env python3
"""scans.py: cumsum and reduce_argmax / reduce_argmin (docs/language.md section 14) on the GPU,
checked against torch and timed beside it in the same process.

    python3 tests/gpu/scans.py TILEC OUTDIR [--reps R]

tests/golden/cumsum.tl's `rows` (row scans of f16 in f32, inclusive and reverse exclusive, rows of at
most BN = 128 elements, BN set by -D for longer rows) and tests/golden/argmax.tl's `rows` (row
argmax / argmin of f16, ties to the lowest index: values on a grid of 1/8), at ragged shapes, then
timed against torch.cumsum and torch.argmax at M x N = 2^24 elements. Median of R replays of a CUDA
graph (tlcuda.timed). Writes OUTDIR/scans.md and prints it. Exit 1 when a result is wrong, 2 without
a GPU or torch.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("scans: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import ROOT, Kernel, gpu_script, timed, write_report  # noqa: E402

CUMSUM = os.path.join(ROOT, "tests/golden/cumsum.tl")
ARGMAX = os.path.join(ROOT, "tests/golden/argmax.tl")


def cumsum_kernel(drv, tilec, bn):
    return Kernel(drv, tilec, CUMSUM, "rows", None, flags=["-D", f"BN={bn}", "-D", f"BR={max(1, 1024 // bn)}"],
                  quiet=True, tag=f"_cs{bn}")


def main():
    setup = gpu_script(__doc__, "scans")
    if not setup:
        return 2
    tilec, outdir, reps, drv, head = setup
    lines = ["# Scans and arg-reductions on the GPU", ""] + head + [
             "## Correctness", "", "| kernel | M x N | max error | |", "|---|---|---|---|"]
    wrong = 0
    for M, N, bn in ((1, 1, 128), (37, 100, 128), (1000, 128, 128), (5, 1000, 1024)):
        x = (torch.rand(M, N, device="cuda") * 2 - 1).half()
        y, z = torch.full((M, N), float("nan"), device="cuda"), torch.full((M, N), float("nan"), device="cuda")
        cumsum_kernel(drv, tilec, bn)(X=x, Y=y, Z=z, M=M, N=N)
        torch.cuda.synchronize()
        ref = x.double().cumsum(1)
        rev = x.double().flip(1).cumsum(1).flip(1) - x.double()
        err = max((y.double() - ref).abs().max().item(), (z.double() - rev).abs().max().item())
        ok = err <= 1e-5 * N
        wrong += not ok
        lines.append(f"| cumsum (BN={bn}) | {M} x {N} | {err:.1e} | {'ok' if ok else '**WRONG**'} |")
    for M, N in ((1, 1), (37, 100), (1000, 128)):
        x = (torch.floor((torch.rand(M, N, device="cuda") * 4 - 2) * 8) / 8).half()
        i = torch.full((M,), -1, device="cuda", dtype=torch.int32)
        j = torch.full((M,), -1, device="cuda", dtype=torch.int32)
        Kernel(drv, tilec, ARGMAX, "rows", None, quiet=True)(X=x, I=i, J=j, M=M, N=N)
        torch.cuda.synchronize()
        # torch.argmax returns the first index of the maximum on CUDA
        ok = torch.equal(i.long(), x.float().argmax(1)) and torch.equal(j.long(), x.float().argmin(1))
        wrong += not ok
        lines.append(f"| argmax / argmin | {M} x {N} | - | {'ok' if ok else '**WRONG**'} |")
    lines += ["", "## Speed (cumsum along rows, f16 in, f32 out; 2^24 elements)", "",
              "| M x N | torch.cumsum us | tilec us | tilec / torch |", "|---|---|---|---|"]
    for N in (128, 1024):
        M = (1 << 24) // N
        x = (torch.rand(M, N, device="cuda") * 2 - 1).half()
        y, z = torch.empty(M, N, device="cuda"), torch.empty(M, N, device="cuda")
        k = cumsum_kernel(drv, tilec, N)
        t_torch = timed(lambda: torch.cumsum(x, 1, dtype=torch.float32, out=y), reps)
        t_ours = timed(lambda: k(X=x, Y=y, Z=z, M=M, N=N), reps)  # two scans (inclusive and reverse exclusive)
        lines.append(f"| {M} x {N} | {t_torch * 1e3:.1f} | {t_ours * 1e3:.1f} (two scans) | "
                     f"**{t_torch * 2 / t_ours:.3f}** per scan |")
    write_report(outdir, "scans.md", lines)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
