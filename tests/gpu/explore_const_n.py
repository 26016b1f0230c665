#!/usr/bin/env python3
"""explore_const_n.py: how much the row kernels lose to N being a run-time size. Each stdlib row
kernel at its launch-chosen variant (--size M,N) beside the same source with N turned into a
compile-time constant (-D N=n: a kernel constant instead of a size), the copy and the Triton peer.

    python3 tests/gpu/explore_const_n.py TILEC OUTDIR [--dtype f16] [--n 1024,4096]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_rows as sw  # noqa: E402
import torch  # noqa: E402


def const_source(path, kind, tmp):
    src = open(path).read()
    src = re.sub(r"kernel %s\[T = f16," % kind, "kernel %s[T = f16, N = 1," % kind, src)
    out = os.path.join(tmp, f"const_{kind}.tl")
    open(out, "w").write(src)
    return out


def main():
    args = sys.argv[1:]
    tilec, outdir = args[0], args[1]
    dtype, only_n = "f16", None
    if "--dtype" in args:
        dtype = args[args.index("--dtype") + 1]
    if "--n" in args:
        only_n = [int(v) for v in args[args.index("--n") + 1].split(",")]
    os.makedirs(outdir, exist_ok=True)
    drv = sw.Driver()
    t = sw.DT[dtype]
    elem = torch.tensor([], dtype=t).element_size()
    paths = {"softmax": "stdlib/softmax.tl", "rmsnorm": "stdlib/norms.tl", "layernorm": "stdlib/norms.tl"}
    lines = [f"# run-time N against constant N ({dtype}), ratios of the copy's bandwidth", "",
             "| kernel | M | N | default | const N | triton |", "|---|---|---|---|---|---|"]
    for kind in ("softmax", "rmsnorm", "layernorm"):
        path = os.path.join(sw.ROOT, paths[kind])
        cpath = const_source(path, kind, outdir)
        for (m, n) in sw.shapes(elem, False):
            if only_n and n not in only_n:
                continue
            x = (torch.rand(m, n, device="cuda") * 8 - 4).to(t)
            w = (torch.rand(n, device="cuda") + 0.5).to(t)
            b = (torch.rand(n, device="cuda") - 0.5).to(t)
            y, y2 = torch.empty_like(x), torch.empty_like(x)
            eps = 1e-5
            rows = torch.randint(0, m, (min(m, 64),), device="cuda")
            ref = sw.reference(kind, x, w, b, eps, rows)
            t_copy = sw.timed(lambda: y2.copy_(x), 10)
            moved = 2 * m * n * elem
            res = []
            for p, flags in ((path, ["--size", f"M={m},N={n}"]), (cpath, ["--size", f"M={m}", "-D", f"N={n}"])):
                try:
                    k = sw.Kernel(drv, tilec, p, kind, dtype, flags=flags, quiet=True, tag=f"c{m}_{n}")
                except Exception as e:
                    res.append(f"no ({str(e)[:40]})")
                    continue
                call = sw.launcher(kind, k, x, w, b, y, eps)
                y.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                err = ((y[rows].float() - ref).abs().amax(-1) / ref.abs().amax(-1)).max().item()
                if not (err == err and err <= (1e-2 if dtype == "f16" else 4e-2)):
                    res.append(f"WRONG {err:.1e}")
                    continue
                res.append(f"{moved / (sw.timed(call, 10) * 1e-3) / (moved / (t_copy * 1e-3)):.3f}")
            tp = sw.triton_peer(kind, x, w, b, y, eps)
            res.append(f"{t_copy / sw.timed(tp, 10):.3f}" if tp else "-")
            lines.append(f"| {kind} | {m} | {n} | " + " | ".join(res) + " |")
            print(lines[-1], flush=True)
            del x, y, y2
    with open(os.path.join(outdir, "explore_const_n.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
