#!/usr/bin/env python3
"""gemm_w8a16.py: the weight-only quantized GEMMs (stdlib/gemm.tl's gemm_w8a16: f16 activations, i8
weights with a scale per output channel; gemm_w4a16: 4-bit weights two to a byte, zero point 8, a
scale per 128 weights of a row) on the GPU, checked against float64 and timed against torch's f16
GEMM on the dequantized weights (cuBLAS) in the same process.

    python3 tests/gpu/gemm_w8a16.py TILEC OUTDIR [--reps R] [--quick] [--explore-split]

Correctness, outputs poisoned (NaN) first, at ragged shapes, on sm_90a (wgmma; the swapped form for
few rows) and on sm_80 code (mma.sync): error relative to the sum of the products' magnitudes
(f16 rounding of the output allowed for). Speed: M in {16, 64, 128, 512, 4096} x (N, K) in
{(4096, 4096), (14336, 4096), (4096, 14336)} (--quick: M in {16, 4096}, the first two): the kernel
at its launch-chosen variant against `a @ w16.t()` with w16 the f16 weights already dequantized
(what the quantized model is compared with: the f16 model's GEMM), and against what a torch user
writes for W8A16 without a fused kernel (`a @ (w.half() * s.half()[:, None]).t()`); at M = 16 also
a few other tile settings (-D), to show what the defaults leave. gemm_w8a16_splitk (K split over
blocks adding into an f32 C, which the timed region zeroes) is checked at the same ragged shapes
and timed at every point of the grid; --explore-split times it at other tiles and splits at M = 16
and 64. Then gemm_w4a16 and gemm_w4a16_splitk the same way
(correctness at the ragged shapes, speed over the same grid against the f16 GEMM). Median of R replays of a CUDA
graph (tlcuda.timed). Writes OUTDIR/gemm_w8a16.md and prints it. Exit 1 when a result is wrong, 2
without a GPU or torch.
"""
import math
import os
import sys

try:
    import torch
except ImportError:
    print("gemm_w8a16: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import DT, ROOT, Kernel, gpu_script, timed, w4_weights, write_report  # noqa: E402

STDLIB = os.path.join(ROOT, "stdlib/gemm.tl")
SHAPES = ((1, 1, 16), (16, 100, 200), (37, 300, 256), (70, 45, 200), (130, 140, 96), (257, 1000, 384),
          (1000, 513, 1024), (1000, 4100, 1100))  # the last: 256-row tiles on sm_90a, rows of W not 16 bytes
GRID_M = (16, 64, 128, 512, 4096)
GRID_NK = ((4096, 4096), (14336, 4096), (4096, 14336))
EXPLORE = (("BN=16", "STAGES=8"), ("BN=16", "BK=128", "STAGES=8"), ("BN=32", "STAGES=8"), ("BN=32", "BK=128", "STAGES=6"),
           ("BN=64", "BK=128", "STAGES=6"), ("BN=128", "STAGES=6"), ("BN=128", "BK=128", "STAGES=4"),
           # the widening interleaved with the multiplies (wgmma only: 128 or more threads)
           ("OVERLAP=1",), ("BN=64", "BK=128", "STAGES=6", "OVERLAP=1"), ("BN=128", "BK=128", "STAGES=4", "OVERLAP=1"))


def weights(n, k):
    w = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int16).to(torch.int8)
    s = torch.rand(n, device="cuda") * 0.01 + 0.001
    return w, s


def explore_split(drv, tilec, reps):
    """gemm_w8a16_splitk at decode shapes with other tiles and splits (-D): f32 C zeroed in the timed
    region, against the f16 GEMM."""
    out = ["", "## gemm_w8a16_splitk at other tiles and splits (f32 C zeroed in the timed region; "
           "ratio to the f16 GEMM)", "", "| M | N | K | " + " | ".join(f"BN={bn} SPLIT={sp}" for bn, sp in SPLITS) + " |",
           "|---|---|---|" + "---|" * len(SPLITS)]
    for M in (16, 64):
        for N, K in GRID_NK:
            a = torch.rand(M, K, device="cuda").half() * 2 - 1
            w, s = weights(N, K)
            w16 = (w.half() * s.half()[:, None]).contiguous()
            t_f16 = timed(lambda: a @ w16.t(), reps)
            want = (a.double() @ w.double().t()) * s.double()[None, :]
            mag = (a.double().abs() @ w.double().abs().t()) * s.double()[None, :]
            c = torch.empty((M, N), device="cuda", dtype=torch.float32)
            cells = []
            for bn, sp in SPLITS:
                k = Kernel(drv, tilec, STDLIB, "gemm_w8a16_splitk", "f16", sizes={"M": M, "N": N, "K": K},
                           flags=["-D", f"BN={bn}", "-D", f"SPLIT={sp}"], quiet=True, tag=f"sk_{bn}_{sp}_{M}_{N}_{K}")
                c.zero_()
                k(A=a, W=w, sw=s, C=c, M=M, N=N, K=K)
                torch.cuda.synchronize()
                e = ((c.double() - want).abs() / (mag + 1e-30)).max().item()
                if e > 1e-4:
                    cells.append(f"WRONG {e:.1e}")
                    continue
                cells.append(f"{t_f16 / timed(lambda: (c.zero_(), k(A=a, W=w, sw=s, C=c, M=M, N=N, K=K)), reps):.3f}")
            out.append(f"| {M} | {N} | {K} | " + " | ".join(cells) + " |")
    return out


EXPLORE4 = (("BN=32",), ("BN=32", "STAGES=8"), ("BN=128", "STAGES=3"), ("BN=128", "STAGES=4"), ("OVERLAP=1",),
            ("BN=128", "STAGES=4", "OVERLAP=1"))
SPLITS = ((64, 1), (64, 2), (64, 4), (64, 8), (32, 4), (32, 8))


def main():
    setup = gpu_script(__doc__, "gemm_w8a16")
    if not setup:
        return 2
    tilec, outdir, reps, drv, head = setup
    quick = "--quick" in sys.argv
    lines = ["# W8A16 GEMM on the GPU", ""] + head + [
        "## Correctness (outputs poisoned with NaN)", "",
        "| arch | M x N x K | variant | error | |", "|---|---|---|---|---|"]
    wrong = 0

    def verdict(arch, shape, variant, e, bound):
        """One correctness line: the error against its bound, counted when wrong."""
        nonlocal wrong
        ok = e <= bound
        wrong += not ok
        lines.append(f"| {arch} | {'x'.join(map(str, shape))} | {variant} | {e:.1e} | {'ok' if ok else '**WRONG**'} |")
        return ok

    def check(k, a, w, s, arch, M, N, K):
        o = torch.full((M, N), float("nan"), device="cuda", dtype=torch.half)
        k(A=a, W=w, sw=s, C=o, M=M, N=N, K=K)
        torch.cuda.synchronize()
        ad, wd = a.double(), w.double()
        want = (ad @ wd.t()) * s.double()[None, :]
        mag = (ad.abs() @ wd.abs().t()) * s.double()[None, :]
        e = (((o.double() - want).abs() - want.abs() * 2.0 ** -11).clamp(min=0) / (mag + 1e-30)).max().item()
        return verdict(arch, (M, N, K), f"{k.variant}{' TMA' if k.tma else ''}", e, 1e-4)

    for arch in ("sm_90a", "sm_80"):
        for M, N, K in SHAPES:
            k = Kernel(drv, tilec, STDLIB, "gemm_w8a16", "f16", sizes={"M": M, "N": N, "K": K},
                       flags=[f"--arch={arch}"], quiet=True, tag=f"{arch}_{M}_{N}_{K}")
            a = torch.rand(M, K, device="cuda").half() * 2 - 1
            w, s = weights(N, K)
            check(k, a, w, s, arch, M, N, K)

    def check_split(k, a, w, s, arch, M, N, K):
        c = torch.zeros((M, N), device="cuda", dtype=torch.float32)
        k(A=a, W=w, sw=s, C=c, M=M, N=N, K=K)
        torch.cuda.synchronize()
        want = (a.double() @ w.double().t()) * s.double()[None, :]
        mag = (a.double().abs() @ w.double().abs().t()) * s.double()[None, :]
        e = ((c.double() - want).abs() / (mag + 1e-30)).max().item()
        return verdict(arch, (M, N, K), f"splitk {k.variant}", e, 1e-5)

    for arch in ("sm_90a", "sm_80"):
        for M, N, K in SHAPES + ((5, 100, 1100), (16, 4096, 4096)):
            k = Kernel(drv, tilec, STDLIB, "gemm_w8a16_splitk", "f16", sizes={"M": M, "N": N, "K": K},
                       flags=[f"--arch={arch}"], quiet=True, tag=f"s_{arch}_{M}_{N}_{K}")
            a = torch.rand(M, K, device="cuda").half() * 2 - 1
            w, s = weights(N, K)
            check_split(k, a, w, s, arch, M, N, K)

    lines += ["", "## Speed against torch (f16 GEMM on dequantized weights; and torch's own W8A16)", "",
              "gemm_w8a16_splitk: f32 C, zeroed in the timed region (torch.zero_, a kernel of its own).", "",
              "| M | N | K | variant | tilec TFLOP/s | f16 GEMM TFLOP/s | ratio | torch dequant + GEMM | ratio | "
              "splitk variant | splitk ratio |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    rsplit = {}
    ratios = {}
    explore = ["", "## Other tile settings at M = 16 and 4096, N = 4096 (ratio to the f16 GEMM)", "",
               "| M | N | K | default | " + " | ".join(" ".join(e) for e in EXPLORE) + " |",
               "|---|---|---|---|" + "---|" * len(EXPLORE)]
    for M in ((16, 4096) if quick else GRID_M):
        for N, K in (GRID_NK[:2] if quick else GRID_NK):
            a = torch.rand(M, K, device="cuda").half() * 2 - 1
            w, s = weights(N, K)
            w16 = (w.half() * s.half()[:, None]).contiguous()
            o = torch.empty((M, N), device="cuda", dtype=torch.half)
            k = Kernel(drv, tilec, STDLIB, "gemm_w8a16", "f16", sizes={"M": M, "N": N, "K": K}, quiet=True,
                       tag=f"t_{M}_{N}_{K}")
            if not check(k, a, w, s, "sm_90a (timed shape)", M, N, K):
                continue
            t_ours = timed(lambda: k(A=a, W=w, sw=s, C=o, M=M, N=N, K=K), reps)
            t_f16 = timed(lambda: a @ w16.t(), reps)
            t_torch = timed(lambda: a @ (w.half() * s.half()[:, None]).t(), reps)
            tf = lambda t: 2 * M * N * K / (t * 1e-3) / 1e12  # noqa: E731
            ratios.setdefault(M, []).append(t_f16 / t_ours)
            ks = Kernel(drv, tilec, STDLIB, "gemm_w8a16_splitk", "f16", sizes={"M": M, "N": N, "K": K}, quiet=True,
                        tag=f"ts_{M}_{N}_{K}")
            split = "WRONG"
            if check_split(ks, a, w, s, "sm_90a (timed shape)", M, N, K):
                c32 = torch.empty((M, N), device="cuda", dtype=torch.float32)
                t_split = timed(lambda: (c32.zero_(), ks(A=a, W=w, sw=s, C=c32, M=M, N=N, K=K)), reps)
                rsplit.setdefault(M, []).append(t_f16 / t_split)
                split = f"**{t_f16 / t_split:.3f}**"
            lines.append(f"| {M} | {N} | {K} | {k.variant} | {tf(t_ours):.0f} | {tf(t_f16):.0f} | "
                         f"**{t_f16 / t_ours:.3f}** | {tf(t_torch):.0f} | {t_torch / t_ours:.3f} | {ks.variant} | "
                         f"{split} |")
            if M in (16, 4096) and N == 4096:
                cells = []
                for e in EXPLORE:
                    flags = []
                    for d in e:
                        flags += ["-D", d]
                    try:
                        kc = Kernel(drv, tilec, STDLIB, "gemm_w8a16", "f16", sizes={"M": M, "N": N, "K": K},
                                    flags=flags, quiet=True, tag=f"x_{'_'.join(e)}_{N}_{K}")
                    except Exception:
                        cells.append("-")
                        continue
                    ok = check(kc, a, w, s, "sm_90a " + " ".join(e), M, N, K)
                    cells.append(f"{t_f16 / timed(lambda: kc(A=a, W=w, sw=s, C=o, M=M, N=N, K=K), reps):.3f}"
                                 if ok else "WRONG")
                explore.append(f"| {M} | {N} | {K} | {t_f16 / t_ours:.3f} | " + " | ".join(cells) + " |")
    lines += [""] + [f"M = {m}: geometric mean {math.exp(sum(map(math.log, r)) / len(r)):.3f} of the f16 GEMM "
                     f"over {len(r)} shapes (gemm_w8a16_splitk: "
                     f"{math.exp(sum(map(math.log, rsplit.get(m, [1]))) / len(rsplit.get(m, [1]))):.3f})."
                     for m, r in ratios.items()]

    # 4-bit weights
    def w4(n, k, dtype="f16"):
        qp, sc, wd = w4_weights(n, k, DT[dtype])
        return qp, sc, wd.to(DT[dtype])  # as the kernel rounds them

    lines += ["", "## gemm_w4a16: correctness", "", "| arch | M x N x K | variant | error | |", "|---|---|---|---|---|"]
    for dtype, arch in ((d, a) for d in ("f16", "bf16") for a in ("sm_90a", "sm_80")):
        for M, N, K in SHAPES:
            sz = {"M": M, "N": N, "K": K, "KH": (K + 1) // 2, "KG": (K + 127) // 128}
            k4 = Kernel(drv, tilec, STDLIB, "gemm_w4a16", dtype, sizes=sz, flags=[f"--arch={arch}"], quiet=True,
                        tag=f"w4_{dtype}_{arch}_{M}_{N}_{K}")
            a = (torch.rand(M, K, device="cuda") * 2 - 1).to(DT[dtype])
            qp, sc, wd = w4(N, K, dtype)
            o = torch.full((M, N), float("nan"), device="cuda", dtype=DT[dtype])
            k4(A=a, Wq=qp, S=sc, C=o, **sz)
            torch.cuda.synchronize()
            want, mag = a.double() @ wd.double().t(), a.double().abs() @ wd.double().abs().t()
            ulp = 2.0 ** (-11 if dtype == "f16" else -8)  # the output's rounding
            e = (((o.double() - want).abs() - want.abs() * ulp).clamp(min=0) / (mag + 1e-30)).max().item()
            verdict(arch, (M, N, K), f"{dtype} {k4.variant}", e, 1e-4)

    def check_split4(k, a, qp, sc, wd, arch, sz):
        c = torch.rand((sz["M"], sz["N"]), device="cuda")  # split-K adds into C
        c0 = c.double()
        k(A=a, Wq=qp, S=sc, C=c, **sz)
        torch.cuda.synchronize()
        want, mag = a.double() @ wd.double().t(), a.double().abs() @ wd.double().abs().t()
        e = ((c.double() - c0 - want).abs() / (mag + 1e-30)).max().item()
        return verdict(arch, (sz["M"], sz["N"], sz["K"]), f"splitk {k.variant}", e, 1e-5)

    for dtype, arch in ((d, a) for d in ("f16", "bf16") for a in ("sm_90a", "sm_80")):
        for M, N, K in SHAPES + ((5, 100, 1101), (16, 4096, 4096)):
            sz = {"M": M, "N": N, "K": K, "KH": (K + 1) // 2, "KG": (K + 127) // 128}
            k4 = Kernel(drv, tilec, STDLIB, "gemm_w4a16_splitk", dtype, sizes=sz, flags=[f"--arch={arch}"],
                        quiet=True, tag=f"w4s_{dtype}_{arch}_{M}_{N}_{K}")
            a = (torch.rand(M, K, device="cuda") * 2 - 1).to(DT[dtype])
            qp, sc, wd = w4(N, K, dtype)
            check_split4(k4, a, qp, sc, wd, f"{arch} {dtype}", sz)
    lines += ["", "## gemm_w4a16: speed against the f16 GEMM", "",
              "gemm_w4a16_splitk: f32 C, zeroed in the timed region (torch.zero_, a kernel of its own).", "",
              "| M | N | K | variant | tilec TFLOP/s | f16 GEMM TFLOP/s | ratio | splitk variant | splitk ratio | "
              "other tiles (-D), ratio |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    r4s = {}
    r4 = {}
    for M in ((16, 4096) if quick else GRID_M):
        for N, K in (GRID_NK[:2] if quick else GRID_NK):
            sz = {"M": M, "N": N, "K": K, "KH": (K + 1) // 2, "KG": (K + 127) // 128}
            a = torch.rand(M, K, device="cuda").half() * 2 - 1
            qp, sc, wd = w4(N, K)
            o = torch.empty((M, N), device="cuda", dtype=torch.half)
            k4 = Kernel(drv, tilec, STDLIB, "gemm_w4a16", "f16", sizes=sz, quiet=True, tag=f"w4t_{M}_{N}_{K}")
            k4(A=a, Wq=qp, S=sc, C=o, **sz)
            torch.cuda.synchronize()
            want, mag = a.double() @ wd.double().t(), a.double().abs() @ wd.double().abs().t()
            e = (((o.double() - want).abs() - want.abs() * 2.0 ** -11).clamp(min=0) / (mag + 1e-30)).max().item()
            if e > 1e-4:
                wrong += 1
                lines.append(f"| {M} | {N} | {K} | {k4.variant} | **WRONG** {e:.1e} | | |")
                continue
            t_ours = timed(lambda: k4(A=a, Wq=qp, S=sc, C=o, **sz), reps)
            t_f16 = timed(lambda: a @ wd.t(), reps)
            tf = lambda t: 2 * M * N * K / (t * 1e-3) / 1e12  # noqa: E731
            r4.setdefault(M, []).append(t_f16 / t_ours)
            others = []
            for e in (EXPLORE4 if M in (16, 4096) and N == 4096 else ()):
                flags = [x for d in e for x in ("-D", d)]
                try:
                    kx = Kernel(drv, tilec, STDLIB, "gemm_w4a16", "f16", sizes=sz, flags=flags, quiet=True,
                                tag=f"w4x_{'_'.join(e)}_{M}_{N}_{K}")
                except Exception:  # a tile that does not fit (shared memory)
                    others.append(f"{' '.join(e)}: -")
                    continue
                o.fill_(float("nan"))
                kx(A=a, Wq=qp, S=sc, C=o, **sz)
                torch.cuda.synchronize()
                ex = (((o.double() - want).abs() - want.abs() * 2.0 ** -11).clamp(min=0) / (mag + 1e-30)).max().item()
                others.append(f"{' '.join(e)}: " + (f"{t_f16 / timed(lambda: kx(A=a, Wq=qp, S=sc, C=o, **sz), reps):.3f}"
                                                    if ex <= 1e-4 else "WRONG"))
            ks = Kernel(drv, tilec, STDLIB, "gemm_w4a16_splitk", "f16", sizes=sz, quiet=True, tag=f"w4st_{M}_{N}_{K}")
            split = "WRONG"
            if check_split4(ks, a, qp, sc, wd, "sm_90a (timed shape)", sz):
                c32 = torch.empty((M, N), device="cuda", dtype=torch.float32)
                t_split = timed(lambda: (c32.zero_(), ks(A=a, Wq=qp, S=sc, C=c32, **sz)), reps)
                r4s.setdefault(M, []).append(t_f16 / t_split)
                split = f"**{t_f16 / t_split:.3f}**"
            lines.append(f"| {M} | {N} | {K} | {k4.variant} | {tf(t_ours):.0f} | {tf(t_f16):.0f} | "
                         f"**{t_f16 / t_ours:.3f}** | {ks.variant} | {split} | {'; '.join(others)} |")
    lines += [""] + [f"M = {m}: geometric mean {math.exp(sum(map(math.log, r)) / len(r)):.3f} of the f16 GEMM "
                     f"over {len(r)} shapes (gemm_w4a16_splitk: "
                     f"{math.exp(sum(map(math.log, r4s.get(m, [1]))) / len(r4s.get(m, [1]))):.3f})."
                     for m, r in r4.items()]
    if "--explore-split" in sys.argv:
        lines += explore_split(drv, tilec, reps)
    lines += explore + ["", f"{wrong} wrong results." if wrong else "All results right."]
    write_report(outdir, "gemm_w8a16.md", lines)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
