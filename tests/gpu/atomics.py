#!/usr/bin/env python3
"""atomics.py: atomic_add / atomic_max / atomic_min on the GPU (docs/language.md section 16), checked
against torch and timed beside it in the same process.

    python3 tests/gpu/atomics.py TILEC OUTDIR [--check-only] [--speed-only] [--reps R]

Correctness (outputs start from random values or NaN-free poison, shapes not multiples of the tiles):
tests/golden/atomics.tl's kernels (a histogram through shared atomics, column sums tile-wise from a
fragment, row max / min of rows that several threads hold with the f32 max through integer atomics on
negative and positive values, split-K with an MMA accumulator's rows, f16 / bf16 / f64 / u64 / i64
atomics) and stdlib/gemm.tl's gemm_splitk at its launch-chosen defaults (C starts random: C += A @ B^T),
f16 and bf16, decoding shapes and ragged ones, against float64.

Speed: gemm_splitk against torch.matmul (cuBLAS, f16 out) and stdlib gemm_nt at its defaults, at
decoding shapes (M = 1, 16, 64, 128 x (N, K) in {(4096, 4096), (4096, 14336), (14336, 4096)}); the
split-K time includes zeroing C (one kernel's worth: cudaMemsetAsync in the same graph). Column sums
of X f32 [M, N] (atomics.tl's colsum: every block reduces 32 rows and adds them in) against
torch.sum(X, 0) and the device copy of X. Median of R replays of a CUDA graph (tlcuda.timed).
Writes OUTDIR/atomics.md and prints it. Exit 1 when a result is wrong, 2 without a GPU or torch.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("atomics: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import DT, ROOT, Driver, Kernel, script_args, timed, write_report  # noqa: E402

GOLDEN = os.path.join(ROOT, "tests/golden/atomics.tl")
GEMM = os.path.join(ROOT, "stdlib/gemm.tl")


def verdict(ok):
    return "ok" if ok else "**WRONG**"


def check_golden(drv, tilec, lines):
    wrong = 0
    lines += ["## tests/golden/atomics.tl", "", "| kernel | shape | max error | |", "|---|---|---|---|"]
    torch.manual_seed(1)
    for N in (1, 1000, 100003):
        x = torch.randint(-100000, 100000, (N,), device="cuda", dtype=torch.int32)
        h = torch.randint(0, 5, (16,), device="cuda", dtype=torch.int32)
        blocks = torch.zeros(1, device="cuda", dtype=torch.int32)
        want = h.clone() + torch.bincount(((x % 16) + 16) % 16, minlength=16).to(torch.int32)
        Kernel(drv, tilec, GOLDEN, "hist", None, quiet=True)(X=x, H=h, Blocks=blocks, N=N)
        torch.cuda.synchronize()
        ok = torch.equal(h, want) and blocks.item() == (N + 255) // 256
        wrong += not ok
        lines.append(f"| hist | N={N} | {(h - want).abs().max().item()} | {verdict(ok)} |")
    for M, N in ((1, 1), (100, 70), (3001, 1000)):
        x = torch.rand(M, N, device="cuda") * 2 - 1
        s = torch.rand(N, device="cuda")
        want = s.double() + x.double().sum(0)
        Kernel(drv, tilec, GOLDEN, "colsum", None, quiet=True)(X=x, S=s, M=M, N=N)
        torch.cuda.synchronize()
        err = (s.double() - want).abs().max().item()
        ok = err <= 1e-5 * M
        wrong += not ok
        lines.append(f"| colsum | {M}x{N} | {err:.1e} | {verdict(ok)} |")
    for M, N, lo in ((37, 300, -1.0), (1000, 129, -5.0), (5, 1000, 0.5)):
        x = torch.rand(M, N, device="cuda") * 4 + lo  # all negative, mixed, all positive rows
        mx = torch.rand(M, device="cuda") * 2 - 7    # below every value: the max comes from x
        mn = torch.full((M,), 1 << 30, device="cuda", dtype=torch.int32)
        want_mx = x.amax(1)
        blocks = [x[:, j:j + 128].amin(1) for j in range(0, N, 128)]
        want_mn = torch.stack([(b * 1000.0).to(torch.int32) for b in blocks], 1).amin(1)
        Kernel(drv, tilec, GOLDEN, "rowmax", None, quiet=True)(X=x, Mx=mx, Mn=mn, M=M, N=N)
        torch.cuda.synchronize()
        ok = torch.equal(mx, want_mx) and torch.equal(mn, want_mn)
        wrong += not ok
        lines.append(f"| rowmax | {M}x{N} from {lo} | {(mx - want_mx).abs().max().item():.1e} | {verdict(ok)} |")
    for M, N, K in ((70, 65, 200), (5, 300, 1000), (130, 64, 64)):
        a = (torch.rand(M, K, device="cuda") * 2 - 1).half()
        b = (torch.rand(K, N, device="cuda") * 2 - 1).half()
        c, r = torch.zeros(M, N, device="cuda"), torch.zeros(M, device="cuda")
        done = torch.zeros(1, device="cuda", dtype=torch.int32)
        ref = a.double() @ b.double()
        Kernel(drv, tilec, GOLDEN, "splitk", None, quiet=True)(A=a, B=b, C=c, R=r, Done=done, M=M, N=N, K=K)
        torch.cuda.synchronize()
        err = max((c.double() - ref).abs().max().item(), (r.double() - ref.sum(1)).abs().max().item() / N)
        ok = err <= 1e-3 * (K ** 0.5) and done.item() == -(-N // 64) * -(-M // 64) * 4
        wrong += not ok
        lines.append(f"| splitk | {M}x{N}x{K} | {err:.1e} | {verdict(ok)} |")
    for N in (1, 500, 5000):  # sums of small integers, exact in f16 (< 2048) and, up to N = 500, in bf16
        a, b = torch.zeros(N, device="cuda").half(), torch.zeros(N, device="cuda").bfloat16()
        c, f = torch.zeros(N, device="cuda").double(), torch.full((N,), 9.0, device="cuda").double()
        d, e = torch.zeros(N, device="cuda", dtype=torch.int64), torch.full((N,), -3, device="cuda", dtype=torch.int64)
        v = torch.rand(N, device="cuda") * 2 - 1
        g = torch.arange(N, device="cuda")
        Kernel(drv, tilec, GOLDEN, "types", None, quiet=True)(A=a, B=b, C=c, D=d, E=e, F=f, V=v, N=N)
        torch.cuda.synchronize()
        ok = True
        for i in range(min(N, 7)):
            sel = g % 7 == i
            ok &= a[i].item() == (g[sel] % 4).sum().item()
            ok &= N > 500 or b[i].item() == (g[sel] % 4).sum().item()
            ok &= abs(c[i].item() - v[sel].double().sum().item()) < 1e-9
            ok &= d[i].item() == g[sel].sum().item() and e[i].item() == g[sel].max().item()
            ok &= f[i].item() == min(9.0, v[sel].double().min().item())
        wrong += not ok
        lines.append(f"| types | N={N} | - | {verdict(ok)} |")
    lines.append("")
    return wrong


SPLITK_CASES = [(1, 4096, 4096), (16, 4096, 14336), (37, 1000, 3000), (64, 14336, 4096), (100, 300, 70001),
                (128, 4096, 4096), (300, 130, 5000), (4096, 256, 2048)]


def check_splitk(drv, tilec, dtypes, lines):
    wrong = 0
    lines += ["## stdlib gemm_splitk (C += A @ B^T, C starting random)", "",
              "| dtype | M | N | K | variant | max error / bound | |", "|---|---|---|---|---|---|---|"]
    for dtype in dtypes:
        for M, N, K in SPLITK_CASES:
            torch.manual_seed(M + N + K)
            a = (torch.rand(M, K, device="cuda") * 2 - 1).to(DT[dtype])
            b = (torch.rand(N, K, device="cuda") * 2 - 1).to(DT[dtype])
            c = torch.rand(M, N, device="cuda") * 2 - 1
            ref = c.double() + a.double() @ b.double().t()
            k = Kernel(drv, tilec, GEMM, "gemm_splitk", dtype, {"M": M, "N": N, "K": K}, quiet=True,
                       tag=f"_{M}_{N}_{K}")
            k(A=a, B=b, C=c, M=M, N=N, K=K)
            torch.cuda.synchronize()
            bound = 2e-6 * K + 1e-5  # f32 sums of K products of magnitude <= 1, in any order
            err = (c.double() - ref).abs().max().item()
            ok = err <= bound
            wrong += not ok
            lines.append(f"| {dtype} | {M} | {N} | {K} | {k.variant} | {err / bound:.3f} | {verdict(ok)} |")
    lines.append("")
    return wrong


def speed(drv, tilec, dtypes, reps, lines):
    lines += ["## gemm_splitk against cuBLAS (torch.matmul) and gemm_nt", "",
              "Time per call in microseconds; split-K includes zeroing C (f32); ratios: cuBLAS's time over ours.", "",
              "| dtype | M | N | K | split-K variant | cuBLAS us | gemm_nt us | split-K us | gemm_nt / cuBLAS | split-K / cuBLAS |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for dtype in dtypes:
        for M in (1, 16, 64, 128):
            for N, K in ((4096, 4096), (4096, 14336), (14336, 4096)):
                t = DT[dtype]
                a = (torch.rand(M, K, device="cuda") * 2 - 1).to(t)
                b = (torch.rand(N, K, device="cuda") * 2 - 1).to(t)
                c32, c16 = torch.zeros(M, N, device="cuda"), torch.empty(M, N, device="cuda", dtype=t)
                sizes = {"M": M, "N": N, "K": K}
                sk = Kernel(drv, tilec, GEMM, "gemm_splitk", dtype, sizes, quiet=True, tag=f"_s{M}_{N}_{K}")
                nt = Kernel(drv, tilec, GEMM, "gemm_nt", dtype, sizes, quiet=True, tag=f"_n{M}_{N}_{K}")
                bt = b.t()
                t_cub = timed(lambda: torch.matmul(a, bt, out=c16), reps)
                t_nt = timed(lambda: nt(A=a, B=b, C=c16, M=M, N=N, K=K), reps)

                def splitk():
                    c32.zero_()
                    sk(A=a, B=b, C=c32, M=M, N=N, K=K)
                t_sk = timed(splitk, reps)
                ok = (c32 - (a.float() @ b.float().t())).abs().max().item() <= 2e-6 * K + 1e-5
                lines.append(f"| {dtype} | {M} | {N} | {K} | {sk.variant} | {t_cub * 1e3:.1f} | {t_nt * 1e3:.1f} | "
                             f"{t_sk * 1e3:.1f}{'' if ok else ' WRONG'} | **{t_cub / t_nt:.3f}** | **{t_cub / t_sk:.3f}** |")
    lines += ["", "## Column sums: atomics.tl colsum against torch.sum(X, 0)", "",
              "X f32 [M, N]; GB/s of X read once; ratios of the device copy's (read + write of X).", "",
              "| M | N | torch us | tilec us | copy us | torch / copy | tilec / copy | tilec / torch |",
              "|---|---|---|---|---|---|---|---|"]
    for M, N in ((16384, 4096), (4096, 16384), (65536, 1024), (1024, 65536), (1000, 1000)):
        x = torch.rand(M, N, device="cuda")
        s = torch.zeros(N, device="cuda")
        y = torch.empty_like(x)
        k = Kernel(drv, tilec, GOLDEN, "colsum", None, quiet=True)
        t_torch = timed(lambda: torch.sum(x, 0, out=s), reps)

        def ours():
            s.zero_()
            k(X=x, S=s, M=M, N=N)
        t_ours = timed(ours, reps)
        ok = (s.double() - x.double().sum(0)).abs().max().item() <= 1e-5 * M
        t_copy = timed(lambda: y.copy_(x), reps)
        # the copy moves 2x the bytes a column sum must: compare rates (bytes per second)
        lines.append(f"| {M} | {N} | {t_torch * 1e3:.1f} | {t_ours * 1e3:.1f}{'' if ok else ' WRONG'} | "
                     f"{t_copy * 1e3:.1f} | {t_copy / t_torch / 2:.3f} | {t_copy / t_ours / 2:.3f} | "
                     f"**{t_torch / t_ours:.3f}** |")
    lines.append("")


def main():
    parsed = script_args(__doc__)
    if not parsed:
        return 2
    tilec, outdir, args = parsed
    do_check, do_speed, reps, dtypes = True, True, 20, ["f16", "bf16"]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--check-only":
            do_speed, i = False, i + 1
        elif a == "--speed-only":
            do_check, i = False, i + 1
        elif a == "--reps" and i + 1 < len(args):
            reps, i = int(args[i + 1]), i + 2
        elif a == "--dtypes" and i + 1 < len(args):
            dtypes, i = args[i + 1].split(","), i + 2
        else:
            print(f"atomics: unknown option {a}\n{__doc__}", file=sys.stderr)
            return 2
    if not torch.cuda.is_available():
        print("atomics: no GPU", file=sys.stderr)
        return 2
    drv = Driver()
    lines = ["# Atomics on the GPU", "",
             f"`python3 tests/gpu/atomics.py` on {torch.cuda.get_device_name(0)}, torch {torch.__version__}.", ""]
    wrong = 0
    if do_check:
        wrong += check_golden(drv, tilec, lines)
        wrong += check_splitk(drv, tilec, dtypes, lines)
    if do_speed:
        speed(drv, tilec, dtypes, reps, lines)
    write_report(outdir, "atomics.md", lines)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
