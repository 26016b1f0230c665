#!/usr/bin/env python3
"""ab_decode.py OLD_TILEC NEW_TILEC [--old-src F.tl] [--new-src F.tl] [--old-flags "BM=256 ..."]
[--new-flags ...] [--large] [--only KERNEL] [--shapes MxNxK,...]: the dequantizing GEMMs at
decoding's few rows (stdlib/gemm.tl's
gemm_w8a16, gemm_w8a16_splitk, gemm_w4a16 and gemm_w4a16_splitk at M = 1 and 16, N x K = 4096 x 4096 and 14336 x 4096,
in f16, and the first two in bf16 at 16 x 4096 x 4096, each at the variant its launch constants
choose) compiled by two compilers, checked against torch (float64 on the dequantized weights) and
timed interleaved (5 rounds of 30 graph replays each, median, tlcuda.timed) beside torch's GEMM on
the dequantized weights in the same type (cuBLAS): a codegen change told from run-to-run noise at
the shapes the 1.5x goal of issue 17 is about. --old-src / --new-src: each side compiles that file
instead of stdlib/gemm.tl (a change of the kernels' source, timed against the source before it with
one compiler given twice); --old-flags / --new-flags: constants pinned on that side (NAME=VALUE
separated by spaces), a tile setting timed against the defaults; --only: that kernel's cases alone; --shapes: these shapes instead of decoding's three (f16, and
bf16 for the 8-bit kernels); --large: gemm_w8a16 and gemm_w4a16 at prefill's rows (M = 4096, and a
ragged 1000 x 4100) instead. Prints microseconds per call and the ratios to that GEMM. Exit 1 when a result is wrong, 2 without a GPU or torch."""
import os
import sys

try:
    import torch
except ImportError:
    print("ab_decode: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import ROOT, Driver, Kernel, timed, w4_weights  # noqa: E402

tilecs, opts, large = [], {}, False
it = iter(sys.argv[1:])
for a in it:
    if a in ("--old-src", "--new-src", "--old-flags", "--new-flags", "--only", "--shapes"):
        opts[a] = next(it, None)
    elif a == "--large":
        large = True
    else:
        tilecs.append(a)
if len(tilecs) != 2 or None in opts.values():
    print(__doc__, file=sys.stderr)
    sys.exit(2)
drv = Driver()
src = os.path.join(ROOT, "stdlib/gemm.tl")
srcs = {"old": opts.get("--old-src", src), "new": opts.get("--new-src", src)}
flags = {t: [f for d in opts.get(f"--{t}-flags", "").split() for f in ("-D", d.removeprefix("-D"))] for t in srcs}
bad = 0


def w8(n, k):
    w = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int16).to(torch.int8)
    s = torch.rand(n, device="cuda") * 0.01 + 0.001
    return {"W": w, "sw": s}, (w.double() * s.double()[:, None])


def w4(n, k):
    qp, sc, wd = w4_weights(n, k)
    return {"Wq": qp, "S": sc}, wd.double()


KERNELS = ("gemm_w8a16", "gemm_w8a16_splitk", "gemm_w4a16", "gemm_w4a16_splitk")
CASES = [(kernel, "f16", shape)
         for kernel in KERNELS
         for shape in ((1, 4096, 4096), (16, 4096, 4096), (16, 14336, 4096))]
CASES += [("gemm_w8a16", "bf16", (16, 4096, 4096)), ("gemm_w8a16_splitk", "bf16", (16, 4096, 4096))]
if "--shapes" in opts:  # MxNxK,...: these shapes instead (f16, and bf16 for the 8-bit kernels)
    shapes = [tuple(int(x) for x in s.split("x")) for s in opts["--shapes"].split(",")]
    CASES = [(kernel, dtype, shape) for kernel in KERNELS
             for dtype in ("f16", "bf16") for shape in shapes if dtype == "f16" or "w8" in kernel]
if large:  # prefill's rows instead: the unsplit kernels, a ragged shape among them
    CASES = [(kernel, "f16", shape) for kernel in ("gemm_w8a16", "gemm_w4a16")
             for shape in ((4096, 4096, 4096), (4096, 14336, 4096), (1000, 4100, 4096))]
CASES = [c for c in CASES if c[0] == opts.get("--only", c[0])]
for kernel, dtype, (M, N, K) in CASES:
    sz = {"M": M, "N": N, "K": K}
    if kernel.startswith("gemm_w4a16"):
        sz.update(KH=(K + 1) // 2, KG=(K + 127) // 128)
    args, wd = (w4 if kernel.startswith("gemm_w4a16") else w8)(N, K)
    a = (torch.rand(M, K, device="cuda") * 2 - 1).to(torch.half if dtype == "f16" else torch.bfloat16)
    want = a.double() @ wd.t()
    mag = a.double().abs() @ wd.abs().t()
    split = kernel.endswith("splitk")
    ks = {t: Kernel(drv, p, srcs[t], kernel, dtype, sizes=sz, flags=flags[t], quiet=True,
                    tag=f"{t}_{kernel}_{dtype}_{M}_{N}")
          for t, p in (("old", tilecs[0]), ("new", tilecs[1]))}
    outs = {}
    for t, k in ks.items():
        o = torch.zeros((M, N), device="cuda") if split else torch.full((M, N), float("nan"), device="cuda",
                                                                           dtype=a.dtype)
        k(A=a, C=o, **args, **sz)
        torch.cuda.synchronize()
        ulp = 2.0 ** (-10 if dtype == "f16" else -7)  # the output's rounding
        e = (((o.double() - want).abs() - want.abs() * ulp).clamp(min=0) / (mag + 1e-30)).max().item()
        if not e <= 1e-4:
            bad += 1
            print("WRONG", t, kernel, M, N, K, "error", e)
        outs[t] = o
    w16 = wd.to(a.dtype)
    res = {"old": [], "new": [], "f16": []}
    for _ in range(5):
        for t, k in ks.items():
            o = outs[t]
            res[t].append(timed(lambda: k(A=a, C=o, **args, **sz), 30))
        res["f16"].append(timed(lambda: a @ w16.t(), 30))
    us = {t: sorted(v)[2] * 1000 for t, v in res.items()}
    print(f"{kernel} {dtype} M={M} N={N} K={K} variant {ks['new'].variant}: old {us['old']:.2f} us, new "
          f"{us['new']:.2f} us ({us['old'] / us['new']:.3f}x); torch {dtype} GEMM {us['f16']:.2f} us: old "
          f"{us['f16'] / us['old']:.3f}, new {us['f16'] / us['new']:.3f} of it", flush=True)
sys.exit(1 if bad else 0)
