#!/usr/bin/env python3
"""gemm_i8.py: gemm on 8-bit integers (docs/language.md section 15, "8-bit integers") on the GPU,
checked exactly and timed against cuBLASLt's int8 GEMM (torch._int_mm) in the same process.

    python3 tests/gpu/gemm_i8.py TILEC OUTDIR [--reps R] [--quick]

Correctness, outputs poisoned first (i32: -2^31, f16: NaN), references computed on the GPU in
float64 (exact: every sum here is below 2^53): tests/golden/gemm_i8.tl's mm_i8 (i8, 3 stages),
mm_u8 (u8, one warpgroup, not pipelined) and w8a8 (i8 with per-row and per-column scales into f16,
within f16 rounding), stdlib/gemm.tl's gemm_w8a8 (the same, at its launch-chosen tiles) and examples/matmul_i8.tl at the variant each shape picks, at ragged shapes,
each on sm_90a (wgmma, TMA when the tensor maps can be made) and on sm_80 code (mma.sync m16n8k32),
the whole byte range of the inputs. Then examples/matmul_i8.tl against torch._int_mm(a, b.t()) (i8
x i8 -> i32, cuBLASLt's "TN" int8 GEMM, the layout both take) over M in {512, 1024, 4096, 8192} x
(N, K) in {(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)} (--quick: 4 of them): median of R replays of a CUDA
graph (tlcuda.timed), TOPS = 2 M N K / time; and stdlib/gemm.tl's gemm_w8a8 (f16 out) against torch's
_int_mm followed by the scaling. Writes OUTDIR/gemm_i8.md and prints it. Exit 1 when a
result is wrong, 2 without a GPU or torch.
"""
import math
import os
import sys

try:
    import torch
except ImportError:
    print("gemm_i8: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import ROOT, Kernel, gpu_script, timed, write_report  # noqa: E402

GOLDEN = os.path.join(ROOT, "tests/golden/gemm_i8.tl")
EXAMPLE = os.path.join(ROOT, "examples/matmul_i8.tl")
STDLIB = os.path.join(ROOT, "stdlib/gemm.tl")
SHAPES = ((1, 1, 16), (70, 45, 200), (130, 140, 96), (257, 1000, 384), (1000, 513, 1024), (4109, 257, 4096),
          (17, 4096, 4096))
GRID_M = (512, 1024, 4096, 8192)
GRID_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192))


def rand8(unsigned, *shape):
    lo, hi = (0, 256) if unsigned else (-128, 128)
    return torch.randint(lo, hi, shape, device="cuda", dtype=torch.int16).to(torch.uint8 if unsigned else torch.int8)


def exact(a, b):
    """A @ B^T in float64 on the GPU: exact for these sums."""
    return a.double() @ b.double().t()


def main():
    setup = gpu_script(__doc__, "gemm_i8")
    if not setup:
        return 2
    tilec, outdir, reps, drv, head = setup
    quick = "--quick" in sys.argv
    lines = ["# 8-bit integer GEMM on the GPU", ""] + head + [
        "## Correctness (outputs poisoned: i32 -2^31, f16 NaN)", "",
        "| kernel | arch | M x N x K | variant | wrong elements / max error | |", "|---|---|---|---|---|---|"]
    wrong = 0

    def report(name, arch, shape, variant, bad, ok):
        nonlocal wrong
        wrong += not ok
        lines.append(f"| {name} | {arch} | {shape} | {variant} | {bad} | {'ok' if ok else '**WRONG**'} |")

    for arch in ("sm_90a", "sm_80"):
        flags = [f"--arch={arch}"]
        golden = {n: Kernel(drv, tilec, GOLDEN, n, None, flags=flags, quiet=True, tag=arch)
                  for n in ("mm_i8", "mm_u8", "w8a8")}
        for M, N, K in SHAPES:
            for name in ("mm_i8", "mm_u8"):
                u = name == "mm_u8"
                a, b = rand8(u, M, K), rand8(u, N, K)
                c = torch.full((M, N), -2**31, device="cuda", dtype=torch.int32)
                golden[name](A=a, B=b, C=c, M=M, N=N, K=K)
                torch.cuda.synchronize()
                bad = int((c.long() != exact(a, b).long()).sum().item())
                tma = " (TMA)" if golden[name].tma else ""
                report(name + tma, arch, f"{M}x{N}x{K}", "", bad, bad == 0)
            a, b = rand8(False, M, K), rand8(False, N, K)
            sa = torch.rand(M, device="cuda") * 1e-4 + 1e-4
            sb = torch.rand(N, device="cuda") * 1e-3 + 1e-3
            o = torch.full((M, N), float("nan"), device="cuda", dtype=torch.half)
            golden["w8a8"](A=a, B=b, sa=sa, sb=sb, C=o, M=M, N=N, K=K)
            torch.cuda.synchronize()
            want = exact(a, b) * sa.double()[:, None] * sb.double()[None, :]
            err = ((o.double() - want).abs() / (want.abs() + 1e-3)).max().item()
            report("w8a8", arch, f"{M}x{N}x{K}", "", f"{err:.1e} (relative)", err <= 2e-3)
            w = Kernel(drv, tilec, STDLIB, "gemm_w8a8", "f16", sizes={"M": M, "N": N, "K": K}, flags=flags,
                       quiet=True, tag=f"w_{arch}_{M}_{N}_{K}")
            o.fill_(float("nan"))
            w(A=a, B=b, sa=sa, sb=sb, C=o, M=M, N=N, K=K)
            torch.cuda.synchronize()
            err = ((o.double() - want).abs() / (want.abs() + 1e-3)).max().item()
            report("stdlib gemm_w8a8" + (" (TMA)" if w.tma else ""), arch, f"{M}x{N}x{K}", w.variant,
                   f"{err:.1e} (relative)", err <= 2e-3)
            k = Kernel(drv, tilec, EXAMPLE, "matmul_i8", None, sizes={"M": M, "N": N, "K": K}, flags=flags,
                       quiet=True, tag=f"{arch}_{M}_{N}_{K}")
            a, b = rand8(False, M, K), rand8(False, N, K)
            c = torch.full((M, N), -2**31, device="cuda", dtype=torch.int32)
            k(A=a, B=b, C=c, M=M, N=N, K=K)
            torch.cuda.synchronize()
            bad = int((c.long() != exact(a, b).long()).sum().item())
            report("matmul_i8" + (" (TMA)" if k.tma else ""), arch, f"{M}x{N}x{K}", k.variant, bad, bad == 0)
    # the i32 wraparound: 4096 products of -128 * -128 sum to 2^26; 2^31 needs K = 131072
    M, N, K = 64, 64, 131072
    a = torch.full((M, K), -128, device="cuda", dtype=torch.int8)
    b = torch.full((N, K), -128, device="cuda", dtype=torch.int8)
    c = torch.zeros((M, N), device="cuda", dtype=torch.int32)
    k = Kernel(drv, tilec, EXAMPLE, "matmul_i8", None, sizes={"M": M, "N": N, "K": K}, quiet=True, tag="wrap")
    k(A=a, B=b, C=c, M=M, N=N, K=K)
    torch.cuda.synchronize()
    want = (128 * 128 * K) % 2**32
    want = want - 2**32 if want >= 2**31 else want
    bad = int((c.long() != want).sum().item())
    report("matmul_i8 (i32 wraps)", "sm_90a", f"{M}x{N}x{K}", f"every C = {want}", bad, bad == 0)

    lines += ["", "## Speed: examples/matmul_i8.tl against torch._int_mm (cuBLASLt int8, TN)", "",
              "| M | N | K | variant | tilec TOPS | cuBLASLt TOPS | ratio |", "|---|---|---|---|---|---|---|"]
    ratios = []
    for M in (GRID_M[1:3] if quick else GRID_M):
        for N, K in (GRID_NK[:2] if quick else GRID_NK):
            a, b = rand8(False, M, K), rand8(False, N, K)
            c = torch.empty((M, N), device="cuda", dtype=torch.int32)
            k = Kernel(drv, tilec, EXAMPLE, "matmul_i8", None, sizes={"M": M, "N": N, "K": K}, quiet=True,
                       tag=f"t_{M}_{N}_{K}")
            k(A=a, B=b, C=c, M=M, N=N, K=K)
            ref = torch._int_mm(a, b.t())
            torch.cuda.synchronize()
            if not torch.equal(c, ref):
                report("matmul_i8 vs torch._int_mm", "sm_90a", f"{M}x{N}x{K}", k.variant,
                       int((c != ref).sum().item()), False)
            t_ours = timed(lambda: k(A=a, B=b, C=c, M=M, N=N, K=K), reps)
            t_peer = timed(lambda: torch._int_mm(a, b.t()), reps)
            tops = lambda t: 2 * M * N * K / (t * 1e-3) / 1e12  # noqa: E731
            ratios.append(t_peer / t_ours)
            lines.append(f"| {M} | {N} | {K} | {k.variant}{' TMA' if k.tma else ''} | {tops(t_ours):.1f} | "
                         f"{tops(t_peer):.1f} | **{t_peer / t_ours:.3f}** |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    lines += ["", f"Geometric mean of the ratios: **{geo:.3f}** over {len(ratios)} shapes."]

    lines += ["", "## Speed: stdlib gemm_w8a8 (f16 out, row and column scales) against torch", "",
              "torch: `(torch._int_mm(a, b.t()).float() * sa[:, None] * sb[None, :]).half()`, what a torch user "
              "writes (cuBLASLt's int8 GEMM, then the scaling); `_int_mm` alone is the bound without the "
              "epilogue.", "",
              "| M | N | K | variant | tilec TOPS | torch TOPS | ratio | _int_mm alone TOPS | ratio |",
              "|---|---|---|---|---|---|---|---|---|"]
    for M in (GRID_M[1:3] if quick else GRID_M):
        for N, K in GRID_NK[:2]:
            a, b = rand8(False, M, K), rand8(False, N, K)
            sa = torch.rand(M, device="cuda") * 1e-4 + 1e-4
            sb = torch.rand(N, device="cuda") * 1e-3 + 1e-3
            o = torch.empty((M, N), device="cuda", dtype=torch.half)
            w = Kernel(drv, tilec, STDLIB, "gemm_w8a8", "f16", sizes={"M": M, "N": N, "K": K}, quiet=True,
                       tag=f"wt_{M}_{N}_{K}")
            w(A=a, B=b, sa=sa, sb=sb, C=o, M=M, N=N, K=K)
            torch.cuda.synchronize()
            want = exact(a, b) * sa.double()[:, None] * sb.double()[None, :]
            err = ((o.double() - want).abs() / (want.abs() + 1e-3)).max().item()
            if err > 2e-3:
                report("stdlib gemm_w8a8 (timed shape)", "sm_90a", f"{M}x{N}x{K}", w.variant, f"{err:.1e}", False)
            t_ours = timed(lambda: w(A=a, B=b, sa=sa, sb=sb, C=o, M=M, N=N, K=K), reps)
            t_torch = timed(lambda: (torch._int_mm(a, b.t()).float() * sa[:, None] * sb[None, :]).half(), reps)
            t_mm = timed(lambda: torch._int_mm(a, b.t()), reps)
            tops = lambda t: 2 * M * N * K / (t * 1e-3) / 1e12  # noqa: E731
            lines.append(f"| {M} | {N} | {K} | {w.variant}{' TMA' if w.tma else ''} | {tops(t_ours):.1f} | "
                         f"{tops(t_torch):.1f} | **{t_torch / t_ours:.3f}** | {tops(t_mm):.1f} | {t_mm / t_ours:.3f} |")
    lines += ["",
              f"{wrong} wrong results." if wrong else "All results right."]
    write_report(outdir, "gemm_i8.md", lines)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
