#!/usr/bin/env python3
"""gemm_fp8.py: 8-bit floats (docs/language.md section 15, "8-bit floats") on the GPU: conversions
checked bit for bit against torch's, gemm against float64 references, and stdlib/gemm_fp8.tl timed
against torch._scaled_mm (cuBLASLt's FP8 GEMM) in the same process.

    python3 tests/gpu/gemm_fp8.py TILEC OUTDIR [--reps R] [--quick]

Correctness, outputs poisoned first (NaN): tests/golden/gemm_fp8.tl's quantize (f32 -> e4m3 -> f16,
every byte against torch's `clamp(x, -448, 448).to(float8_e4m3fn)`: the same rounding, with the
saturation cvt.rn.satfinite does), mm_e4m3 (f32 out, 3 stages), mm_mixed (e4m3 x e5m2, f16 out,
one warpgroup, not pipelined), scaled (e5m2, per-row and per-column scales, bf16 out) and
stdlib/gemm_fp8.tl's gemm_fp8 (e4m3, and -D BT=e5m2) at the variant each shape picks, at ragged
shapes. The references are float64 sums of the same 8-bit values; the error past the output type's
rounding is reported relative to the sum of the products' magnitudes, and the tolerance (2e-3)
allows for the tensor cores' FP8 accumulation, which keeps fewer bits than f32. Then gemm_fp8 (e4m3, bf16
out, per-row and per-column scales) against torch._scaled_mm(a, b.t(), scale_a, scale_b,
out_dtype=bf16) with use_fast_accum on and off, over M in {512, 1024, 4096, 8192} x (N, K) in
{(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)} (--quick: 4 of them): median of R replays
of a CUDA graph (tlcuda.timed), TFLOP/s = 2 M N K / time. Writes OUTDIR/gemm_fp8.md and prints it.
Exit 1 when a result is wrong, 2 without a GPU or torch.
"""
import math
import os
import sys

try:
    import torch
except ImportError:
    print("gemm_fp8: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import ROOT, Kernel, gpu_script, timed, write_report  # noqa: E402

GOLDEN = os.path.join(ROOT, "tests/golden/gemm_fp8.tl")
STDLIB = os.path.join(ROOT, "stdlib/gemm_fp8.tl")
SHAPES = ((1, 1, 16), (70, 45, 200), (130, 140, 96), (257, 1000, 384), (1000, 513, 1024), (4109, 257, 4096),
          (17, 4096, 4096))
GRID_M = (512, 1024, 4096, 8192)
GRID_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192))
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def rand8(dtype, *shape, scale=4.0):
    """Random 8-bit floats from normal values (clamped to the format's range first)."""
    big = 448.0 if dtype == E4M3 else 57344.0
    return (torch.randn(shape, device="cuda") * scale).clamp(-big, big).to(dtype)


def ref(a, b):
    """A @ B^T in float64 of the 8-bit values, and the sums of the products' magnitudes."""
    a, b = a.double(), b.double()
    return a @ b.t(), a.abs() @ b.abs().t()


def main():
    setup = gpu_script(__doc__, "gemm_fp8")
    if not setup:
        return 2
    tilec, outdir, reps, drv, head = setup
    quick = "--quick" in sys.argv
    lines = ["# 8-bit float GEMM on the GPU", ""] + head + [
        "## Correctness (outputs poisoned with NaN)", "",
        "| kernel | M x N x K | variant | error | |", "|---|---|---|---|---|"]
    wrong = 0
    worst = 0.0

    def report(name, shape, variant, err, ok):
        nonlocal wrong
        wrong += not ok
        lines.append(f"| {name} | {shape} | {variant} | {err} | {'ok' if ok else '**WRONG**'} |")

    def gemm_error(o, want, mag, rnd):
        """max (|o - want| - rnd |want|) / mag: the error past the output type's rounding (rnd, 0 for
        f32), relative to the sum of the products' magnitudes (what an accumulator promises)."""
        nonlocal worst
        e = (((o.double() - want).abs() - rnd * want.abs()).clamp(min=0) / (mag + 1e-30)).max().item()
        worst = max(worst, e)
        return e

    q = Kernel(drv, tilec, GOLDEN, "quantize", None, quiet=True)
    for n in (1, 1000, 1 << 20):
        x = torch.cat([torch.randn(n, device="cuda") * s for s in (1e-3, 1.0, 300.0)])
        x[: min(8, x.numel())] = torch.tensor([464.0, -1e30, 2.0 ** -10, 1.0625, 480.0, -449.0, 0.0, -0.0],
                                              device="cuda")[: min(8, x.numel())]
        scale = 0.75
        qq = torch.full((x.numel(),), 0xAB, device="cuda", dtype=torch.uint8)
        rr = torch.full((x.numel(),), float("nan"), device="cuda", dtype=torch.half)
        q(X=x, scale=scale, Q=qq, R=rr, N=x.numel())
        torch.cuda.synchronize()
        want = (x * scale).clamp(-448, 448).to(E4M3)
        bad = int((qq != want.view(torch.uint8)).sum().item())
        bad += int((rr != want.to(torch.half)).sum().item())
        report("quantize (f32 -> e4m3 -> f16)", f"{x.numel()}", "", f"{bad} bytes differ", bad == 0)

    golden = {n: Kernel(drv, tilec, GOLDEN, n, None, quiet=True) for n in ("mm_e4m3", "mm_mixed", "scaled")}
    for M, N, K in SHAPES:
        shape = f"{M}x{N}x{K}"
        a, b = rand8(E4M3, M, K), rand8(E4M3, N, K)
        c = torch.full((M, N), float("nan"), device="cuda")
        golden["mm_e4m3"](A=a, B=b, C=c, M=M, N=N, K=K)
        torch.cuda.synchronize()
        want, mag = ref(a, b)
        e = gemm_error(c, want, mag, 0)
        report("mm_e4m3" + (" (TMA)" if golden["mm_e4m3"].tma else ""), shape, "", f"{e:.1e}", e <= 2e-3)
        b5 = rand8(E5M2, N, K, scale=0.5)
        o = torch.full((M, N), float("nan"), device="cuda", dtype=torch.half)
        golden["mm_mixed"](A=a, B=b5, C=o, M=M, N=N, K=K)
        torch.cuda.synchronize()
        want, mag = ref(a, b5)
        e = gemm_error(o, want, mag, 2.0 ** -10)
        report("mm_mixed (e4m3 x e5m2)", shape, "", f"{e:.1e}", e <= 2e-3)
        a5, b5 = rand8(E5M2, M, K), rand8(E5M2, N, K)
        sa = torch.rand(M, device="cuda") + 0.5
        sb = torch.rand(N, device="cuda") * 1e-2 + 1e-2
        o = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        golden["scaled"](A=a5, B=b5, sa=sa, sb=sb, C=o, M=M, N=N, K=K)
        torch.cuda.synchronize()
        want, mag = ref(a5, b5)
        s = sa.double()[:, None] * sb.double()[None, :]
        e = gemm_error(o, want * s, mag * s, 2.0 ** -8)
        report("scaled (e5m2, bf16 out)" + (" (TMA)" if golden["scaled"].tma else ""), shape, "", f"{e:.1e}",
               e <= 2e-3)
        for bt in ("e4m3", "e5m2"):
            k = Kernel(drv, tilec, STDLIB, "gemm_fp8", None, sizes={"M": M, "N": N, "K": K},
                       flags=["-D", f"BT={bt}"], quiet=True, tag=f"{bt}_{M}_{N}_{K}")
            bb = rand8(E4M3 if bt == "e4m3" else E5M2, N, K)
            o.fill_(float("nan"))
            k(A=a, B=bb, sa=sa, sb=sb, C=o, M=M, N=N, K=K)
            torch.cuda.synchronize()
            want, mag = ref(a, bb)
            e = gemm_error(o, want * s, mag * s, 2.0 ** -8)
            report(f"stdlib gemm_fp8 (e4m3 x {bt})" + (" (TMA)" if k.tma else ""), shape, k.variant, f"{e:.1e}",
                   e <= 2e-3)
    lines += ["", f"Largest error past the output's rounding, relative to the sum of the products' magnitudes: "
              f"{worst:.2e} (the tensor cores' FP8 accumulation; f32 additions would keep it near 1e-7 times "
              "the depth of the sum). The tolerance is 2e-3."]

    lines += ["", "## Speed: stdlib gemm_fp8 against torch._scaled_mm (cuBLASLt FP8, TN)", "",
              "e4m3 x e4m3 -> bf16 with a scale per row of A and per row of B (torch: scale_a [M, 1], "
              "scale_b [1, N], \"rowwise\"). fast: use_fast_accum = True (accumulation in the tensor cores' "
              "FP8 accumulator alone, what tilec does); exact: False (cuBLASLt promotes the partial sums to "
              "f32 every few K steps).", "",
              "| M | N | K | variant | tilec TFLOP/s | torch fast TFLOP/s | ratio | torch exact TFLOP/s | ratio |",
              "|---|---|---|---|---|---|---|---|---|"]
    ratios = []
    for M in (GRID_M[1:3] if quick else GRID_M):
        for N, K in (GRID_NK[:2] if quick else GRID_NK):
            a, b = rand8(E4M3, M, K), rand8(E4M3, N, K)
            sa = torch.rand(M, device="cuda") + 0.5
            sb = torch.rand(N, device="cuda") * 1e-2 + 1e-2
            o = torch.empty((M, N), device="cuda", dtype=torch.bfloat16)
            k = Kernel(drv, tilec, STDLIB, "gemm_fp8", None, sizes={"M": M, "N": N, "K": K}, quiet=True,
                       tag=f"t_{M}_{N}_{K}")
            k(A=a, B=b, sa=sa, sb=sb, C=o, M=M, N=N, K=K)
            torch.cuda.synchronize()
            want, mag = ref(a, b)
            s = sa.double()[:, None] * sb.double()[None, :]
            e = gemm_error(o, want * s, mag * s, 2.0 ** -8)
            if e > 2e-3:
                report("stdlib gemm_fp8 (timed shape)", f"{M}x{N}x{K}", k.variant, f"{e:.1e}", False)

            def peer(fast):
                return torch._scaled_mm(a, b.t(), scale_a=sa[:, None], scale_b=sb[None, :],
                                        out_dtype=torch.bfloat16, use_fast_accum=fast)
            t_ours = timed(lambda: k(A=a, B=b, sa=sa, sb=sb, C=o, M=M, N=N, K=K), reps)
            t_fast = timed(lambda: peer(True), reps)
            t_exact = timed(lambda: peer(False), reps)
            tf = lambda t: 2 * M * N * K / (t * 1e-3) / 1e12  # noqa: E731
            ratios.append(t_fast / t_ours)
            lines.append(f"| {M} | {N} | {K} | {k.variant}{' TMA' if k.tma else ''} | {tf(t_ours):.0f} | "
                         f"{tf(t_fast):.0f} | **{t_fast / t_ours:.3f}** | {tf(t_exact):.0f} | "
                         f"{t_exact / t_ours:.3f} |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    lines += ["", f"Geometric mean of the ratios to use_fast_accum = True: **{geo:.3f}** over {len(ratios)} shapes.",
              "", f"{wrong} wrong results." if wrong else "All results right."]
    write_report(outdir, "gemm_fp8.md", lines)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
