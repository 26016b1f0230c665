#!/usr/bin/env python3
"""ab_w8a16.py OLD_TILEC NEW_TILEC: gemm_w8a16 compiled by two compilers at pinned tiles, timed
interleaved (5 rounds of 30 graph replays each, median), to tell a codegen change from run-to-run
noise. Prints microseconds per call for each."""
import os
import sys

import torch

from tlcuda import ROOT, Driver, Kernel, timed

if len(sys.argv) != 3:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
drv = Driver()
src = os.path.join(ROOT, "stdlib/gemm.tl")
for M, N, K, flags in ((4096, 4096, 4096, ["-D", "BN=128", "-D", "BK=128", "-D", "STAGES=4"]),
                       (4096, 4096, 4096, ["-D", "BN=64", "-D", "BK=64", "-D", "STAGES=6"]),
                       (16, 4096, 4096, ["-D", "BN=32", "-D", "BK=128", "-D", "STAGES=6"])):
    a = torch.rand(M, K, device="cuda").half()
    w = torch.randint(-128, 128, (N, K), device="cuda", dtype=torch.int16).to(torch.int8)
    s = torch.rand(N, device="cuda")
    o = torch.empty(M, N, device="cuda", dtype=torch.half)
    ks = {t: Kernel(drv, p, src, "gemm_w8a16", "f16", sizes={"M": M, "N": N, "K": K}, flags=flags, quiet=True, tag=t)
          for t, p in (("old", sys.argv[1]), ("new", sys.argv[2]))}
    res = {"old": [], "new": []}
    for _ in range(5):
        for t, k in ks.items():
            res[t].append(timed(lambda: k(A=a, W=w, sw=s, C=o, M=M, N=N, K=K), 30))
    print(M, N, K, " ".join(flags), {t: sorted(v)[2] * 1000 for t, v in res.items()}, "us")
