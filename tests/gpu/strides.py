#!/usr/bin/env python3
"""strides.py: tensor parameters with explicit strides (docs/language.md, "Tensor parameters") on the
GPU, checked against torch and timed beside it in the same process.

    python3 tests/gpu/strides.py TILEC OUTDIR [--reps R]

tests/golden/strides.tl's kernels at ragged shapes, outputs poisoned with NaN first, every view a
torch view of a larger storage (its strides bind the stride sizes: tlcuda.py reads them from the
metadata): a copy through a padded-row view (strides(lda, 1): 16-byte vectors), a transposed view
(strides(1, ldt): element by element), C = A @ W^T with A a padded-row view, W^T a transposed view
of an nn.Linear-style [N, K] weight and C a padded-row view whose padding must stay untouched, and
C = A @ B with both padded (cp.async stages; on sm_90a tensor maps encoded with the row strides).
Then the views timed against torch's peers: the padded copy against `b.copy_(view)` and
`view.contiguous()`, the transposed one against `b.copy_(s.t())`, the gemms against torch.matmul on
the same views. Median of R replays of a CUDA graph (tlcuda.timed). Writes OUTDIR/strides.md and
prints it. Exit 1 when a result is wrong, 2 without a GPU or torch.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("strides: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import ROOT, Kernel, gpu_script, timed, write_report  # noqa: E402

STRIDES = os.path.join(ROOT, "tests/golden/strides.tl")


def nan(*shape, dtype=torch.float32):
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


def padded(rows, cols, pad, dtype):
    """A [rows, cols] view of a [rows, cols + pad] storage (strides (cols + pad, 1)), and the storage."""
    s = (torch.rand(rows, cols + pad, device="cuda") * 2 - 1).to(dtype)
    return s[:, :cols], s


def main():
    setup = gpu_script(__doc__, "strides")
    if not setup:
        return 2
    tilec, outdir, reps, drv, head = setup
    k = {name: Kernel(drv, tilec, STRIDES, name, None, quiet=True)
         for name in ("pad_copy", "transpose_view", "gemm_views", "gemm_padded")}
    lines = ["# Tensor parameters with strides on the GPU", ""] + head + [
             "## Correctness (outputs poisoned with NaN)", "", "| kernel | shape | strides | max error | |",
             "|---|---|---|---|---|"]
    wrong = 0

    def report(name, shape, strides, err, tol=0.0):
        nonlocal wrong
        ok = err <= tol  # NaN compares false: an element never written is wrong
        wrong += not ok
        lines.append(f"| {name} | {shape} | {strides} | {err:.1e} | {'ok' if ok else '**WRONG**'} |")

    for M, N, pad in ((1, 1, 0), (37, 45, 3), (300, 7, 9), (129, 1000, 8)):
        a, _ = padded(M, N, pad, torch.half)
        b = nan(M, N, dtype=torch.half)
        k["pad_copy"](A=a, B=b, M=M, N=N)
        torch.cuda.synchronize()
        report("pad_copy", f"{M}x{N}", f"({N + pad}, 1)", (b.float() - a.float()).abs().max().item())
    for M, N, pad in ((1, 1, 0), (37, 45, 3), (300, 7, 1), (129, 1000, 5)):
        s = torch.randn(N, M + pad, device="cuda")
        at = s[:, :M].t()  # [M, N], strides (1, M + pad)
        b = nan(M, N)
        k["transpose_view"](At=at, B=b, M=M, N=N)
        torch.cuda.synchronize()
        report("transpose_view", f"{M}x{N}", f"(1, {M + pad})", (b - at).abs().max().item())
    for M, K, N in ((37, 59, 61), (6, 79, 146), (256, 512, 256)):
        a, _ = padded(M, K, 8, torch.half)
        w, _ = padded(N, K, 3, torch.half)  # an [N, K] weight; the kernel reads W^T, [K, N] strides (1, K + 3)
        cs = torch.full((M, N + 5), -99.0, device="cuda")
        c = cs[:, :N]
        c.fill_(float("nan"))
        k["gemm_views"](A=a, Bt=w.t(), C=c, M=M, K=K, N=N)
        torch.cuda.synchronize()
        ref = a.double() @ w.double().t()
        err = (c.double() - ref).abs().max().item()
        if not bool((cs[:, N:] == -99.0).all()):
            err = float("nan")  # the padding was written
        report("gemm_views", f"{M}x{K} @ ({N}x{K})^T", f"A ({K + 8}, 1), B (1, {K + 3}), C ({N + 5}, 1)", err,
               1e-3 * K ** 0.5)
    for M, K, N in ((37, 59, 61), (6, 79, 146), (256, 512, 256), (1000, 1000, 1000)):
        a, _ = padded(M, K, 8, torch.half)
        b, _ = padded(K, N, 8, torch.half)
        c = nan(M, N)
        k["gemm_padded"](A=a, B=b, C=c, M=M, K=K, N=N)
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        report("gemm_padded" + (" (TMA)" if k["gemm_padded"].tma else ""), f"{M}x{K} @ {K}x{N}",
               f"A ({K + 8}, 1), B ({N + 8}, 1)", (c.double() - ref).abs().max().item(), 1e-3 * K ** 0.5)

    M, N, pad = 8192, 8000, 192
    a, _ = padded(M, N, pad, torch.half)
    b = torch.empty(M, N, device="cuda", dtype=torch.half)
    t_torch = timed(lambda: b.copy_(a), reps)
    t_contig = timed(lambda: a.contiguous(), reps)
    t_pad = timed(lambda: k["pad_copy"](A=a, B=b, M=M, N=N), reps)
    gb = 2 * M * N * 2 / 1e9
    lines += ["", f"## Speed: copies ([{M}, {N}] f16 views, rows {N + pad} apart; f32 [{M}, {N}] transposed)", "",
              "| what | us | GB/s | / torch |", "|---|---|---|---|"]
    for name, t in (("torch b.copy_(view)", t_torch), ("torch view.contiguous()", t_contig),
                    ("pad_copy (strides(lda, 1))", t_pad)):
        lines.append(f"| {name} | {t * 1e3:.1f} | {gb / t:.0f} | **{t_torch / t:.3f}** |")
    s = torch.randn(N, M + 64, device="cuda")
    at, bf = s[:, :M].t(), torch.empty(M, N, device="cuda")
    t_torch = timed(lambda: bf.copy_(at), reps)
    t_tr = timed(lambda: k["transpose_view"](At=at, B=bf, M=M, N=N), reps)
    gb = 2 * M * N * 4 / 1e9
    for name, t in (("torch b.copy_(s.t()) (f32)", t_torch), ("transpose_view (strides(1, ldt), f32)", t_tr)):
        lines.append(f"| {name} | {t * 1e3:.1f} | {gb / t:.0f} | **{t_torch / t:.3f}** |")

    M = K = N = 4096
    a, _ = padded(M, K, 64, torch.half)
    bp, _ = padded(K, N, 64, torch.half)
    w, _ = padded(N, K, 64, torch.half)
    c = torch.empty(M, N, device="cuda")
    cv = torch.empty(M, N + 64, device="cuda")[:, :N]
    tf = 2 * M * N * K / 1e12
    lines += ["", f"## Speed: gemms ({M}^3, f16 in, f32 out; golden/strides.tl's 64 x 64 tiles)", "",
              "| what | us | TFLOP/s | / torch |", "|---|---|---|---|"]
    t_torch = timed(lambda: torch.matmul(a, bp), reps)
    t_k = timed(lambda: k["gemm_padded"](A=a, B=bp, C=c, M=M, K=K, N=N), reps)
    lines.append(f"| torch.matmul(A view, B view) (f16 out) | {t_torch * 1e3:.1f} | {tf / t_torch:.0f} | 1 |")
    lines.append(f"| gemm_padded{' (TMA)' if k['gemm_padded'].tma else ''} | {t_k * 1e3:.1f} | {tf / t_k:.0f} | "
                 f"**{t_torch / t_k:.3f}** |")
    t_torch = timed(lambda: torch.matmul(a, w.t()), reps)
    t_k = timed(lambda: k["gemm_views"](A=a, Bt=w.t(), C=cv, M=M, K=K, N=N), reps)
    lines.append(f"| torch.matmul(A view, W view .t()) (f16 out) | {t_torch * 1e3:.1f} | {tf / t_torch:.0f} | 1 |")
    lines.append(f"| gemm_views (W^T element by element) | {t_k * 1e3:.1f} | {tf / t_k:.0f} | "
                 f"**{t_torch / t_k:.3f}** |")
    write_report(outdir, "strides.md", lines)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
