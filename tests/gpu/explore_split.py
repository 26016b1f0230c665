#!/usr/bin/env python3
"""explore_split.py TILEC [--w4] [--alt SRC.tl]... [--try "NAME=V ..."]...: stdlib/gemm.tl's split-K
dequantizing GEMM (gemm_w8a16_splitk, or with --w4 gemm_w4a16_splitk) at decoding's rows (M = 1 and
16; N x K = 4096 x 4096 and 14336 x 4096, f16) at its launch-chosen SPLIT and at SPLIT = 1 .. 16 (-D
SPLIT; or at the constants of each --try instead, each checked against torch), beside the
unsplit kernel (gemm_w8a16 / gemm_w4a16) at its defaults and torch's f16 GEMM on the dequantized
weights (cuBLAS); each the median of 5 timings of 30 graph replays (tlcuda.timed). The default split
is also timed with C's zeroing (torch.zero_, a kernel of its own that a caller needs before every
call). --alt: the same kernels compiled from another source (a candidate form of the kernel), its
default split checked against torch and timed beside. Prints microseconds per call and the ratio to
torch's GEMM: the data behind the SPLIT rules (results/h100-2026-12-06-s31/explore_split.txt).
Exit 1 when a result is wrong, 2 without a GPU or torch."""
import os
import sys


def median_us(timed, fn):
    return sorted(timed(fn, 30) for _ in range(5))[2] * 1000


def main(argv):
    import torch
    from tlcuda import ROOT, Driver, Kernel, timed, w4_weights
    w4 = "--w4" in argv
    alts = [argv[i + 1] for i, a in enumerate(argv) if a == "--alt"]
    tries = [argv[i + 1] for i, a in enumerate(argv) if a == "--try"]
    tilec = argv[0]
    drv = Driver()
    srcs = [("stdlib", os.path.join(ROOT, "stdlib/gemm.tl"))] + [(os.path.basename(p), p) for p in alts]
    plain_name, split_name = ("gemm_w4a16", "gemm_w4a16_splitk") if w4 else ("gemm_w8a16", "gemm_w8a16_splitk")
    wrong = 0
    for M, N in ((1, 4096), (16, 4096), (16, 14336)):
        K = 4096
        sz = {"M": M, "N": N, "K": K}
        a = torch.rand(M, K, device="cuda").half() - 0.5
        if w4:
            qp, sc, wd = w4_weights(N, K)
            wargs = {"Wq": qp, "S": sc}
            sz.update(KH=K // 2, KG=K // 128)
        else:
            w = torch.randint(-128, 128, (N, K), device="cuda", dtype=torch.int16).to(torch.int8)
            s = torch.rand(N, device="cuda") / 256
            wargs = {"W": w, "sw": s}
            wd = w.float() * s[:, None]
        w16 = wd.half()
        want = a.double() @ w16.double().t()
        mag = a.double().abs() @ w16.double().abs().t()
        tf = median_us(timed, lambda: a @ w16.t())
        plain = Kernel(drv, tilec, srcs[0][1], plain_name, "f16", sizes=sz, quiet=True, tag=f"plain_{M}_{N}")
        o = torch.empty(M, N, device="cuda", dtype=torch.half)
        tp = median_us(timed, lambda: plain(A=a, C=o, **wargs, **sz))
        line = [f"M={M} N={N} torch {tf:.2f} us, {plain_name} {tp:.2f} us ({tf / tp:.3f})"]
        for tag, src in srcs:
            k = Kernel(drv, tilec, src, split_name, "f16", sizes=sz, quiet=True, tag=f"d_{tag}_{M}_{N}")
            kargs = dict(wargs)
            if w4 and "S: f32[N, KG]" in open(src).read():  # a source from before the scales were T
                kargs["S"] = wargs["S"].float()
            c = torch.zeros(M, N, device="cuda")
            k(A=a, C=c, **kargs, **sz)
            torch.cuda.synchronize()
            e = ((c.double() - want).abs() / (mag + 1e-30)).max().item()
            if not e <= 1e-3:  # f32 sums of f16 products: the weights are rounded to f16 as torch's are
                wrong += 1
                line.append(f"{tag} WRONG (error {e:.1e})")
                continue
            t = median_us(timed, lambda: k(A=a, C=c, **kargs, **sz))
            tz = median_us(timed, lambda: (c.zero_(), k(A=a, C=c, **kargs, **sz)))
            line.append(f"{tag} default {k.variant}: {t:.2f} us ({tf / t:.3f}), with zeroing {tz:.2f} us "
                        f"({tf / tz:.3f})")
        for n, t in enumerate(tries or [f"SPLIT={split}" for split in (1, 2, 4, 8, 16)]):
            try:
                k = Kernel(drv, tilec, srcs[0][1], split_name, "f16", sizes=sz,
                           flags=[f for d in t.split() for f in ("-D", d)], quiet=True, tag=f"try_{M}_{N}_{n}")
            except Exception:  # a setting that does not compile (shared memory, registers)
                line.append(f"{t} -")
                continue
            c = torch.zeros(M, N, device="cuda")
            k(A=a, C=c, **wargs, **sz)
            torch.cuda.synchronize()
            if not ((c.double() - want).abs() / (mag + 1e-30)).max().item() <= 1e-3:
                wrong += 1
                line.append(f"{t} WRONG")
                continue
            us = median_us(timed, lambda: k(A=a, C=c, **wargs, **sz))
            line.append(f"{t} {us:.2f} us ({tf / us:.3f})")
        print("; ".join(line), flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print("explore_split: no torch", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]) if len(sys.argv) >= 2 else print(__doc__, file=sys.stderr) or 2)
