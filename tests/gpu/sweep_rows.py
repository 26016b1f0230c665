#!/usr/bin/env python3
"""sweep_rows.py: the stdlib's row kernels (softmax, rmsnorm, layernorm) over a grid of shapes, with
their peers in the same process (issue 14: "sweeps replace single shapes").

    python3 tests/gpu/sweep_rows.py TILEC OUTDIR [--dtypes f16,bf16] [--reps 20] [--quick]
                                    [--kernels softmax,rmsnorm,layernorm]

For each kernel, dtype and shape, stdlib/KERNEL.tl is compiled by TILEC at its defaults (no tuning
flags: -D T=DTYPE only) for the shape's sizes (--size M=..,N=..: the variant whose launch constants
tl_launch would pick through the JIT; docs/language.md) for the device (sm_90a on an H200), loaded with cuModuleLoadData through ctypes into
torch's context, and launched with cuLaunchKernel on torch's stream, its grid from the PTX's
tilec-meta block (docs/abi.md). At every shape it is checked against torch (a sample of rows, f32
math) and timed with CUDA events around a CUDA graph of 10 calls (median of --reps replays, divided by
10: GPU time, not Python's launch rate) beside:

  copy     y.copy_(x): the device copy of the same bytes, the bandwidth ceiling
  torch    torch.softmax / F.rms_norm / F.layer_norm
  triton   a one-row-per-program Triton kernel (the ten-line tutorial kind), when triton imports

Shapes: N in 512 .. 65536 (powers of two) with M so that X is >= 256 MiB, and M in {1, 8, 64} with
N in {4096, 8192} (--quick: N in {1024, 4096, 32768} and M = 8). Bandwidth counts the bytes the
kernel must move (X read, Y written, W and B read once); each ratio is of the copy's bandwidth.
"floor" is the time of a launch that moves one element (the launch-latency floor that small M
approaches). Writes OUTDIR/sweep_KERNEL.md (one table per kernel, every dtype) and prints them. Exit 1 when a
result is wrong, 2 without a GPU or torch; speed never changes the exit status.
"""
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("sweep_rows: no torch", file=sys.stderr)
    sys.exit(2)
try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

from tlcuda import DT, ROOT, Driver, Kernel, timed  # noqa: E402


# ---------------------------------------------------------------------------------- the peers

if triton is not None:
    @triton.jit
    def _softmax_row(X, Y, N, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        c = tl.arange(0, BLOCK)
        x = tl.load(X + r * N + c, mask=c < N, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, 0))
        tl.store(Y + r * N + c, (e / tl.sum(e, 0)).to(Y.dtype.element_ty), mask=c < N)

    @triton.jit
    def _rmsnorm_row(X, W, Y, N, eps, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        c = tl.arange(0, BLOCK)
        x = tl.load(X + r * N + c, mask=c < N, other=0.0).to(tl.float32)
        w = tl.load(W + c, mask=c < N, other=0.0).to(tl.float32)
        y = x * tl.rsqrt(tl.sum(x * x, 0) / N + eps) * w
        tl.store(Y + r * N + c, y.to(Y.dtype.element_ty), mask=c < N)

    @triton.jit
    def _layernorm_row(X, W, B, Y, N, eps, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        c = tl.arange(0, BLOCK)
        x = tl.load(X + r * N + c, mask=c < N, other=0.0).to(tl.float32)
        mu = tl.sum(x, 0) / N
        d = tl.where(c < N, x - mu, 0.0)
        y = d * tl.rsqrt(tl.sum(d * d, 0) / N + eps)
        w = tl.load(W + c, mask=c < N, other=0.0).to(tl.float32)
        b = tl.load(B + c, mask=c < N, other=0.0).to(tl.float32)
        tl.store(Y + r * N + c, (y * w + b).to(Y.dtype.element_ty), mask=c < N)


def triton_peer(kind, x, w, b, y, eps):
    if triton is None:
        return None
    M, N = x.shape
    blk = triton.next_power_of_2(N)
    if blk > 32768:  # one row in one program's registers: beyond this it spills or does not compile
        return None
    warps = 4 if blk <= 2048 else 8 if blk <= 8192 else 16
    if kind == "softmax":
        return lambda: _softmax_row[(M,)](x, y, N, BLOCK=blk, num_warps=warps)
    if kind == "rmsnorm":
        return lambda: _rmsnorm_row[(M,)](x, w, y, N, eps, BLOCK=blk, num_warps=warps)
    return lambda: _layernorm_row[(M,)](x, w, b, y, N, eps, BLOCK=blk, num_warps=warps)


def launcher(kind, k, x, w, b, y, eps):
    """A call of the stdlib row kernel `kind` (a tlcuda Kernel k) on these tensors."""
    m, n = x.shape
    if kind == "softmax":
        return lambda: k(X=x, Y=y, M=m, N=n)
    if kind == "rmsnorm":
        return lambda: k(X=x, W=w, Y=y, eps=eps, M=m, N=n)
    return lambda: k(X=x, W=w, B=b, Y=y, eps=eps, M=m, N=n)


def torch_peer(kind, x, w, b, y, eps):
    if kind == "softmax":
        return lambda: torch.softmax(x, dim=-1)
    if kind == "rmsnorm":
        return lambda: F.rms_norm(x, (x.shape[1],), w, eps)
    return lambda: F.layer_norm(x, (x.shape[1],), w, b, eps)


def reference(kind, x, w, b, eps, rows):
    xs = x[rows].float()
    if kind == "softmax":
        return torch.softmax(xs, dim=-1)
    if kind == "rmsnorm":
        return xs * torch.rsqrt((xs * xs).mean(-1, keepdim=True) + eps) * w.float()
    mu = xs.mean(-1, keepdim=True)
    var = ((xs - mu) ** 2).mean(-1, keepdim=True)
    return (xs - mu) * torch.rsqrt(var + eps) * w.float() + b.float()


def shapes(elem, quick):
    if quick:
        return [(8, 1024), (8, 4096), (8, 32768), (65536, 1024), (16384, 4096), (2048, 32768)]
    out = []
    for n in [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]:
        out.append((max(1, (256 << 20) // (n * elem)), n))
    for n in [4096, 8192]:
        for m in [1, 8, 64]:
            out.append((m, n))
    return out


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    tilec, outdir = args[0], args[1]
    dtypes = ["f16", "bf16"]
    reps, quick = 20, False
    kinds = ["softmax", "rmsnorm", "layernorm"]
    i = 2
    while i < len(args):
        if args[i] == "--dtypes":
            dtypes = args[i + 1].split(",")
            i += 1
        elif args[i] == "--reps":
            reps = int(args[i + 1])
            i += 1
        elif args[i] == "--quick":
            quick = True
        elif args[i] == "--kernels":
            kinds = args[i + 1].split(",")
            i += 1
        i += 1
    if not torch.cuda.is_available():
        print("sweep_rows: no GPU", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    drv = Driver()
    dev = torch.cuda.get_device_name(0)
    wrong = 0
    paths = {"softmax": "stdlib/softmax.tl", "rmsnorm": "stdlib/norms.tl", "layernorm": "stdlib/norms.tl"}
    for kind in kinds:
        lines = [f"# {kind}: stdlib/{os.path.basename(paths[kind])} at its defaults against its peers",
                 "",
                 f"`python3 tests/gpu/sweep_rows.py` on {dev}, torch {torch.__version__}, triton "
                 f"{triton.__version__ if triton else 'absent'}; median of {reps} replays of a CUDA graph of 10 calls "
                 "(CUDA events), per call; "
                 "bandwidth of the bytes the kernel must move; ratios are of the device copy's.",
                 "",
                 "| dtype | M | N | variant (launch constants) | tilec µs | floor µs | tilec TB/s | copy TB/s | tilec / copy | torch / copy | triton / copy | tilec / triton | max error |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for dtype in dtypes:
            t = DT[dtype]
            elem = torch.tensor([], dtype=t).element_size()
            for (m, n) in shapes(elem, quick):
                k = Kernel(drv, tilec, os.path.join(ROOT, paths[kind]), kind, dtype, {"M": m, "N": n})
                torch.manual_seed(m * 131 + n)
                x = (torch.rand(m, n, device="cuda") * 8 - 4).to(t)
                w = (torch.rand(n, device="cuda") + 0.5).to(t)
                b = (torch.rand(n, device="cuda") - 0.5).to(t)
                y = torch.full((m, n), float("nan"), device="cuda", dtype=t)
                y2 = torch.empty_like(y)
                eps = 1e-5
                ours = launcher(kind, k, x, w, b, y, eps)
                ours()
                torch.cuda.synchronize()
                rows = torch.randint(0, m, (min(m, 64),), device="cuda")
                ref = reference(kind, x, w, b, eps, rows)
                # each row's largest error over its largest |value|: an output of zeros scores 1
                err = ((y[rows].float() - ref).abs().amax(-1) / ref.abs().amax(-1)).max().item()
                tol = 1e-2 if dtype == "f16" else 4e-2
                ok = err == err and err <= tol
                wrong += not ok
                moved = 2 * m * n * elem + (n * elem if kind == "rmsnorm" else 2 * n * elem if kind == "layernorm" else 0)
                t_ours = timed(ours, reps)
                t_copy = timed(lambda: y2.copy_(x), reps)
                t_floor = timed(lambda: y2[:1, :1].copy_(x[:1, :1]), reps)  # one launch that moves nothing
                t_torch = timed(torch_peer(kind, x, w, b, y2, eps), reps)
                tp = triton_peer(kind, x, w, b, y2, eps)
                t_triton = timed(tp, reps) if tp else None
                copy_bw = 2 * m * n * elem / (t_copy * 1e-3) / 1e12
                bw = lambda ms: moved / (ms * 1e-3) / 1e12
                r = lambda ms: f"{bw(ms) / copy_bw:.3f}" if ms else "-"
                line = (f"| {dtype} | {m} | {n} | {k.variant} | {t_ours * 1e3:.1f} | {t_floor * 1e3:.1f} | {bw(t_ours):.3f} | {copy_bw:.3f} | **{bw(t_ours) / copy_bw:.3f}** | "
                        f"{r(t_torch)} | {r(t_triton)} | "
                        f"{(t_triton / t_ours if t_triton else float('nan')):.3f} | {err:.2e}{'' if ok else ' WRONG'} |")
                lines.append(line)
                print(kind, line, flush=True)
                del x, y, y2
        lines.append("")
        with open(os.path.join(outdir, f"sweep_{kind}.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print(f"sweep_rows: {'all results right' if not wrong else f'{wrong} WRONG'}; tables in {outdir}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
