#!/usr/bin/env python3
"""profile_cases.py: launches one of a few named cases (a stdlib kernel at one shape, or its torch peer)
a few times, for a profiler to look at: Nsight Compute picks the launches by kernel name, so the
script itself does nothing but set up inputs and launch.

    python3 tests/gpu/profile_cases.py TILEC CASE [-D NAME=VALUE ...]
    tests/gpu/profile.sh TILEC OUTDIR [CASE ...]    (ncu over each case, one text report per case)

Cases (f16): w8a16_m16 (gemm_w8a16, 16 x 4096 x 4096), w8a16_splitk_m16 (gemm_w8a16_splitk, the same
shape, C zeroed first), w4a16_splitk_m16 (gemm_w4a16_splitk, the same shape, C zeroed first),
w8a16_m4096 (gemm_w8a16, 4096^3), f16_gemm_m16 (torch: a @ w.t() at 16 x 4096 x
4096, the peer), softmax_m1 (stdlib softmax, 1 x 4096), softmax_m64_8k (64 x 8192). -D settings are passed to
tilec (pinned constants). Exit 2 without torch or a GPU.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("profile_cases: no torch", file=sys.stderr)
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlcuda import ROOT, Driver, Kernel, w4_weights  # noqa: E402

GEMM = os.path.join(ROOT, "stdlib/gemm.tl")
SOFTMAX = os.path.join(ROOT, "stdlib/softmax.tl")
CASES = ("w8a16_m16", "w8a16_splitk_m16", "w4a16_splitk_m16", "w8a16_m4096", "f16_gemm_m16", "softmax_m1", "softmax_m64_8k")


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in CASES:
        print(__doc__)
        return 2
    if not torch.cuda.is_available():
        print("profile_cases: no GPU", file=sys.stderr)
        return 2
    tilec, case = sys.argv[1], sys.argv[2]
    flags = []
    for d in sys.argv[3:]:
        flags += ["-D", d.removeprefix("-D")] if d != "-D" else []
    drv = Driver()
    torch.manual_seed(0)
    reps = 5
    if case == "w4a16_splitk_m16":
        M = 16
        N = K = 4096
        a = torch.rand(M, K, device="cuda").half() * 2 - 1
        wq, sc, _ = w4_weights(N, K)
        sz = {"M": M, "N": N, "K": K, "KH": K // 2, "KG": K // 128}
        k = Kernel(drv, tilec, GEMM, "gemm_w4a16_splitk", "f16", sizes=sz, flags=flags)
        c = torch.zeros(M, N, device="cuda")
        for _ in range(reps):
            c.zero_()
            k(A=a, Wq=wq, S=sc, C=c, **sz)
    elif case.startswith("w8a16") or case == "f16_gemm_m16":
        M = 4096 if case.endswith("m4096") else 16
        N = K = 4096
        a = torch.rand(M, K, device="cuda").half() * 2 - 1
        w = torch.randint(-127, 128, (N, K), device="cuda", dtype=torch.int8)
        s = torch.rand(N, device="cuda") * 0.01
        if case == "f16_gemm_m16":
            w16 = w.half() * s.half()[:, None]
            for _ in range(reps):
                a @ w16.t()
        elif case == "w8a16_splitk_m16":
            k = Kernel(drv, tilec, GEMM, "gemm_w8a16_splitk", "f16", sizes={"M": M, "N": N, "K": K}, flags=flags)
            c = torch.zeros(M, N, device="cuda")
            for _ in range(reps):
                c.zero_()
                k(A=a, W=w, sw=s, C=c, M=M, N=N, K=K)
        else:
            k = Kernel(drv, tilec, GEMM, "gemm_w8a16", "f16", sizes={"M": M, "N": N, "K": K}, flags=flags)
            c = torch.empty(M, N, device="cuda", dtype=torch.half)
            for _ in range(reps):
                k(A=a, W=w, sw=s, C=c, M=M, N=N, K=K)
    else:
        M, N = (1, 4096) if case == "softmax_m1" else (64, 8192)
        k = Kernel(drv, tilec, SOFTMAX, "softmax", "f16", sizes={"M": M, "N": N}, flags=flags)
        x = torch.randn(M, N, device="cuda").half()
        y = torch.empty_like(x)
        for _ in range(reps):
            k(X=x, Y=y, M=M, N=N)
    torch.cuda.synchronize()
    print(f"profile_cases: {case}: {reps} launches" + (f", variant {k.variant}" if case != "f16_gemm_m16" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
