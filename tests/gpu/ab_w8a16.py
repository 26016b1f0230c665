#!/usr/bin/env python3
"""ab_w8a16.py OLD_TILEC NEW_TILEC [OLD_FLAGS [NEW_FLAGS]]: gemm_w8a16 compiled by two compilers (or
one, twice) at pinned tiles, timed interleaved (5 rounds of 30 graph replays each, median), to tell a
codegen change from run-to-run noise. OLD_FLAGS and NEW_FLAGS (one string each, e.g. "" and
"-D OVERLAP=1") are added to each side's flags: the same compiler with and without a setting.
Checks both results against torch (A @ (sw * W)^T in f32) first. Prints microseconds per call for
each."""
import os
import sys

import torch

from tlcuda import ROOT, Driver, Kernel, timed

if len(sys.argv) not in (3, 4, 5):
    print(__doc__, file=sys.stderr)
    sys.exit(2)
old_flags = sys.argv[3].split() if len(sys.argv) >= 4 else []
new_flags = sys.argv[4].split() if len(sys.argv) == 5 else []
drv = Driver()
src = os.path.join(ROOT, "stdlib/gemm.tl")
bad = 0
for M, N, K, flags in ((4096, 4096, 4096, ["-D", "BN=128", "-D", "BK=128", "-D", "STAGES=4"]),
                       (4096, 4096, 4096, ["-D", "BM=256", "-D", "BN=128", "-D", "BK=64", "-D", "STAGES=4"]),
                       (4096, 14336, 4096, ["-D", "BN=128", "-D", "BK=128", "-D", "STAGES=4"]),
                       (4096, 4096, 4096, ["-D", "BN=64", "-D", "BK=64", "-D", "STAGES=6"]),
                       (1000, 4096, 4104, ["-D", "BN=128", "-D", "BK=128", "-D", "STAGES=4"]),
                       (16, 4096, 4096, ["-D", "BN=32", "-D", "BK=128", "-D", "STAGES=6"]),
                       (16, 4096, 4096, ["-D", "BN=64", "-D", "BK=128", "-D", "STAGES=6"])):
    a = torch.rand(M, K, device="cuda").half() - 0.5
    w = torch.randint(-128, 128, (N, K), device="cuda", dtype=torch.int16).to(torch.int8)
    s = torch.rand(N, device="cuda") / 256
    ref = (a.float() @ (w.float() * s[:, None]).t())
    ks = {t: Kernel(drv, p, src, "gemm_w8a16", "f16", sizes={"M": M, "N": N, "K": K},
                    flags=flags + (old_flags if t == "old" else new_flags), quiet=True, tag=t)
          for t, p in (("old", sys.argv[1]), ("new", sys.argv[2]))}
    outs = {}
    for t, k in ks.items():
        outs[t] = torch.full((M, N), float("nan"), device="cuda", dtype=torch.half)
        k(A=a, W=w, sw=s, C=outs[t], M=M, N=N, K=K)
        torch.cuda.synchronize()
        err = ((outs[t].float() - ref).abs() / (ref.abs() + 1)).max().item()
        if not err < 2e-2:
            bad += 1
            print("WRONG", t, M, N, K, " ".join(flags), "max rel err", err)
    res = {"old": [], "new": []}
    for _ in range(5):
        for t, k in ks.items():
            o = outs[t]
            res[t].append(timed(lambda: k(A=a, W=w, sw=s, C=o, M=M, N=N, K=K), 30))
    print(M, N, K, " ".join(flags), {t: round(sorted(v)[2] * 1000, 2) for t, v in res.items()}, "us")
sys.exit(1 if bad else 0)
