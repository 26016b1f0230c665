#!/usr/bin/env python3
"""explore_split.py TILEC: stdlib/gemm.tl's gemm_w8a16_splitk at decoding's 16 rows (N x K = 4096 x
4096 and 14336 x 4096, f16) at SPLIT = 1 .. 16 (-D SPLIT), beside gemm_w8a16 at its defaults and
torch's f16 GEMM on the dequantized weights (cuBLAS), each the median of 5 timings of 30 graph
replays (tlcuda.timed). Prints microseconds per call and the ratio to torch's GEMM: the data behind
the SPLIT rule (results/h100-2026-12-06-s31/explore_split.txt). Speed only: ab_decode.py checks the
results. Exit 2 without a GPU or torch."""
import os
import sys


def median_us(timed, fn):
    return sorted(timed(fn, 30) for _ in range(5))[2] * 1000


def main(tilec):
    import torch
    from tlcuda import ROOT, Driver, Kernel, timed
    drv = Driver()
    src = os.path.join(ROOT, "stdlib/gemm.tl")
    for N in (4096, 14336):
        M, K = 16, 4096
        sz = {"M": M, "N": N, "K": K}
        a = torch.rand(M, K, device="cuda").half() - 0.5
        w = torch.randint(-128, 128, (N, K), device="cuda", dtype=torch.int16).to(torch.int8)
        s = torch.rand(N, device="cuda") / 256
        w16 = (w.float() * s[:, None]).half()
        tf = median_us(timed, lambda: a @ w16.t())
        plain = Kernel(drv, tilec, src, "gemm_w8a16", "f16", sizes=sz, quiet=True, tag=f"plain_{N}")
        o = torch.empty(M, N, device="cuda", dtype=torch.half)
        tp = median_us(timed, lambda: plain(A=a, W=w, sw=s, C=o, **sz))
        line = [f"N={N} torch {tf:.2f} us, gemm_w8a16 {tp:.2f} us ({tf / tp:.3f})"]
        for split in (1, 2, 3, 4, 6, 8, 12, 16):
            k = Kernel(drv, tilec, src, "gemm_w8a16_splitk", "f16", sizes=sz, flags=["-D", f"SPLIT={split}"],
                       quiet=True, tag=f"split_{N}_{split}")
            c = torch.zeros(M, N, device="cuda")
            t = median_us(timed, lambda: k(A=a, W=w, sw=s, C=c, **sz))
            line.append(f"SPLIT={split} {t:.2f} us ({tf / t:.3f})")
        print("; ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print("explore_split: no torch", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else print(__doc__, file=sys.stderr) or 2)
