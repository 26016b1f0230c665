#!/usr/bin/env python3
"""slices.py: copies with slices (docs/language.md section 10) on the GPU, checked against torch and
timed beside it in the same process.

    python3 tests/gpu/slices.py TILEC OUTDIR [--reps R]

tests/golden/slices.tl's kernels at ragged shapes, outputs poisoned with NaN first: [B, S, H, D] ->
[B, H, S, D] and back (16-byte vectors; on sm_90a the way back goes through the copy engine with a
box [1, 64, 1, 64]), a column of A gathered and scattered, channels last -> first, and C = A[:, h, :]
@ B with A's [64, 32] tiles staged by a pipelined loop (cp.async, or TMA with a box [64, 1, 32] on
the H200). Then the two layout changes timed against torch's `out.copy_(x.permute(0, 2, 1, 3))` and
the device copy of the same bytes, at B = 4, S = 4096, H = 32, D = 64 (64 MiB). Median of R replays
of a CUDA graph (tlcuda.timed). Writes OUTDIR/slices.md and prints it. Exit 1 when a result is
wrong, 2 without a GPU or torch.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("slices: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import ROOT, Kernel, gpu_script, timed, write_report  # noqa: E402

SLICES = os.path.join(ROOT, "tests/golden/slices.tl")


def nan(*shape, dtype=torch.float32):
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


def main():
    setup = gpu_script(__doc__, "slices")
    if not setup:
        return 2
    tilec, outdir, reps, drv, head = setup
    k = {name: Kernel(drv, tilec, SLICES, name, None, quiet=True)
         for name in ("bshd_to_bhsd", "bhsd_to_bshd", "column", "channels_first", "gemm_mhk")}
    lines = ["# Copies with slices on the GPU", ""] + head + [
             "## Correctness (outputs poisoned with NaN)", "", "| kernel | shape | max error | |", "|---|---|---|---|"]
    wrong = 0

    def report(name, shape, err, tol=0.0):
        nonlocal wrong
        ok = err <= tol  # NaN compares false: an element never written is wrong
        wrong += not ok
        lines.append(f"| {name} | {shape} | {err:.1e} | {'ok' if ok else '**WRONG**'} |")

    for B, S, H in ((1, 1, 1), (2, 70, 3), (3, 129, 5), (1, 1000, 8)):
        q = torch.randn(B, S, H, 64, device="cuda").half()
        o, p = nan(B, H, S, 64, dtype=torch.half), nan(B, S, H, 64, dtype=torch.half)
        k["bshd_to_bhsd"](Q=q, O=o, B=B, S=S, H=H)
        k["bhsd_to_bshd"](X=o, O=p, B=B, S=S, H=H)
        torch.cuda.synchronize()
        err = max((o.float() - q.permute(0, 2, 1, 3).float()).abs().max().item(),
                  (p.float() - q.float()).abs().max().item())
        report("bshd_to_bhsd, bhsd_to_bshd" + (" (TMA store)" if k["bhsd_to_bshd"].tma else ""), f"{B}x{S}x{H}x64",
               err)
    for M, N in ((1, 1), (37, 45), (300, 7)):
        a = torch.randn(M, N, device="cuda")
        t, u = nan(N, M), nan(M, N)
        k["column"](A=a, T=t, U=u, M=M, N=N)
        torch.cuda.synchronize()
        report("column", f"{M}x{N}", max((t - a.t()).abs().max().item(), (u - a).abs().max().item()))
    for N, M, C in ((1, 1, 1), (30, 47, 15), (138, 37, 2)):
        x = torch.randn(N, M, C, device="cuda")
        y = nan(C, N, M)
        k["channels_first"](X=x, Y=y, N=N, M=M, C=C)
        torch.cuda.synchronize()
        report("channels_first", f"{N}x{M}x{C}", (y - x.permute(2, 0, 1)).abs().max().item())
    for M, H, K, N in ((37, 3, 59, 61), (6, 2, 79, 146), (256, 4, 512, 256)):
        a = (torch.rand(M, H, K, device="cuda") * 2 - 1).half()
        b = (torch.rand(K, N, device="cuda") * 2 - 1).half()
        c = nan(M, N)
        k["gemm_mhk"](A=a, B=b, C=c, h=H - 1, M=M, H=H, K=K, N=N)
        torch.cuda.synchronize()
        ref = a[:, H - 1, :].double() @ b.double()
        report("gemm_mhk" + (" (TMA)" if k["gemm_mhk"].tma else ""), f"{M}x{H}x{K} @ {K}x{N}",
               (c.double() - ref).abs().max().item(), 1e-3 * K ** 0.5)

    B, S, H = 4, 4096, 32
    q = torch.randn(B, S, H, 64, device="cuda").half()
    o = torch.empty(B, H, S, 64, device="cuda", dtype=torch.half)
    p = torch.empty_like(q)
    flat, flat_out = q.view(-1), torch.empty(q.numel(), device="cuda", dtype=torch.half)
    t_copy = timed(lambda: flat_out.copy_(flat), reps)
    t_torch = timed(lambda: o.copy_(q.permute(0, 2, 1, 3)), reps)
    t_to = timed(lambda: k["bshd_to_bhsd"](Q=q, O=o, B=B, S=S, H=H), reps)
    t_back = timed(lambda: k["bhsd_to_bshd"](X=o, O=p, B=B, S=S, H=H), reps)
    gb = 2 * q.numel() * 2 / 1e9
    lines += ["", f"## Speed ([B, S, H, D] = [{B}, {S}, {H}, 64], f16, {q.numel() * 2 >> 20} MiB each way)", "",
              "| what | us | TB/s | / copy | / torch |", "|---|---|---|---|---|"]
    for name, t in (("device copy (flat)", t_copy), ("torch permute(0, 2, 1, 3) into [B, H, S, D]", t_torch),
                    ("bshd_to_bhsd (slices: Q[b, s0 : s0 + 32, h, :])", t_to),
                    ("bhsd_to_bshd (slices: O[b, s0 : s0 + 64, h, :]" +
                     (", TMA store)" if k["bhsd_to_bshd"].tma else ")"), t_back)):
        lines.append(f"| {name} | {t * 1e3:.1f} | {gb / t:.2f} | {t_copy / t:.3f} | "
                     f"**{t_torch / t:.3f}** |")
    write_report(outdir, "slices.md", lines)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
