#!/usr/bin/env python3
"""explore_rows.py: candidate settings of the stdlib's row kernels at each shape of the sweep, timed
side by side, so that the launch constants' formulas (issue 14) come from measurements.

    python3 tests/gpu/explore_rows.py TILEC OUTDIR [--kernels softmax,rmsnorm,layernorm] [--dtype f16] [--n 1024,4096]
                                      [--m 1,8,64] [--alt FILE.tl[,FILE.tl]] [--only-alt]
                                      [--try "BN=32768,THREADS=512;BN=65536,THREADS=1024"]

For every kernel and shape (sweep_rows.py's grid), every candidate (-D settings, pinned) is compiled
by TILEC, checked against torch on sampled rows, and timed as sweep_rows.py times (CUDA graph of 10
calls, median of 10 replays); the copy and the stdlib default (no -D but T, --size M,N) in the same
run. Writes OUTDIR/explore_KERNEL.md: per shape the default, the best candidate and every
candidate's ratio of the copy's bandwidth. --alt FILE.tl: one more candidate, "alt", the same kernel of
another source (say, the stdlib file before a change, `git show HEAD:stdlib/norms.tl`; of several files,
the one that defines the kernel) at its defaults,
so that a change of the kernel's code is timed against the code before it in one run; --only-alt: the
default and "alt" alone. --n and --m keep only the shapes with those row lengths and row
counts. --try: these candidates (";" between candidates, "," between NAME=VALUE settings) instead of
the generated ones, at every shape kept. Exit 1 if a result is wrong.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_rows as sw  # noqa: E402
import torch  # noqa: E402


def pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def candidates(kind, n, elem):
    """-D settings to try at row length n (elem bytes per element)."""
    out = []
    cap = 65536 // elem  # a 64 KB row in registers at most
    if kind == "layernorm" and n * elem > 32768:  # the long-row path: tiles of 16 or 32 KB
        for b in (16384 // elem, 32768 // elem):
            for t in (256, 512, 1024):
                for mb in (0, 2):
                    if t * mb <= 1024:
                        for pipe in ((0, 3), (1, 2), (1, 3), (1, 4)):  # the statistics' tiles through shared stages or not
                            out.append(dict(BN=b, THREADS=t, MINB=mb, LPIPE=pipe[0], LSTAGES=pipe[1]))
        return out
    bn = min(pow2(n), cap)
    threads_opts = sorted({t for t in (32, 64, bn // 32, bn // 16, bn // 8) if 32 <= t <= 1024 and t <= bn})
    if n > cap:  # the long-row path
        for b, t, bps, mb in ((cap // 2, 1024, 1, 0), (cap // 2, 512, 1, 0), (cap // 4, 1024, 1, 0),
                              (cap // 4, 512, 1, 0), (cap // 4, 512, 2, 2)):
            if kind == "softmax":
                out.append(dict(BN=b, THREADS=t, BPS=bps, MINB=mb))
                if bps == 1:  # one block per row (a grid of M), not a persistent one
                    out.append(dict(BN=b, THREADS=t, BPS=65536, MINB=mb))
            else:  # rmsnorm (layernorm's long rows took their candidates above)
                out.append(dict(BN=b, THREADS=t, MINB=mb))
        return out
    if kind == "layernorm" and bn * elem > 16384:  # x, w, b and the f32 squares in registers: >= 64 B a thread
        for t in (512, 1024):
            for rpb in (1, 4):
                for mb in (0, 2):
                    out.append(dict(BN=bn, DIRECT=1, THREADS=t, RPB=rpb, MINB=mb))
        return out
    if kind == "softmax" and bn * elem == 65536:  # a 64 KB row: also through two shared stages, one persistent block per SM
        out.append(dict(BN=bn, DIRECT=0, THREADS=1024, BPS=1, STAGES=2, MINB=0))
    if kind == "softmax" and bn * elem <= 2048:  # short rows: also through the shared stages, persistent
        for t in (32, 64, 128):
            for bps in (8, 16, 32):
                if t * bps <= 2048:
                    for st in (2, 3):
                        out.append(dict(BN=bn, DIRECT=0, THREADS=t, BPS=bps, STAGES=st, MINB=bps))
    for t in threads_opts:
        occ = min(32, max(1, 2048 // t))
        if kind == "softmax":
            # DIRECT = 1: global memory straight into registers, one block per row (BPS = 65536) or a
            # persistent grid of occ blocks per SM
            for bps in (65536, occ):
                for mb in sorted({0, occ if occ > 1 else 0}):
                    out.append(dict(BN=bn, DIRECT=1, THREADS=t, BPS=bps, MINB=mb))
        elif kind == "rmsnorm":
            for mb in (0, 2, 4):
                out.append(dict(BN=bn, THREADS=t, MINB=mb))
        else:
            for rpb in (1, 4):
                for mb in (0, 2, 4):
                    out.append(dict(BN=bn, DIRECT=1, THREADS=t, RPB=rpb, MINB=mb))
    if n > 8192:  # also the long-row path with 8192-element tiles (the old default)
        if kind == "rmsnorm":
            out.append(dict(BN=8192, THREADS=256, MINB=0))
        elif kind == "layernorm":
            out.append(dict(BN=8192, THREADS=256, RPB=4, STAGES=3, MINB=2))
    return out


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    tilec, outdir = args[0], args[1]
    kinds, dtype, only_n, only_m, alt, only_alt = ["softmax", "rmsnorm", "layernorm"], "f16", None, None, None, False
    tries = None
    i = 2
    while i < len(args):
        if args[i] == "--kernels":
            kinds = args[i + 1].split(",")
            i += 1
        elif args[i] == "--dtype":
            dtype = args[i + 1]
            i += 1
        elif args[i] == "--alt":
            alt = args[i + 1]
            i += 1
        elif args[i] == "--only-alt":
            only_alt = True
        elif args[i] == "--n":  # only these row lengths
            only_n = [int(v) for v in args[i + 1].split(",")]
            i += 1
        elif args[i] == "--try":  # explicit candidates
            items = [[kv.split("=", 1) for kv in c.split(",") if kv] for c in args[i + 1].split(";") if c]
            if not items or any(len(kv) != 2 or not kv[0] or not kv[1] for c in items for kv in c):
                print("explore_rows: --try takes candidates of NAME=VALUE settings: \"A=1,B=2;A=3\"", file=sys.stderr)
                return 2
            tries = [dict(c) for c in items]
            i += 1
        elif args[i] == "--m":  # only these row counts
            only_m = [int(v) for v in args[i + 1].split(",")]
            i += 1
        i += 1
    os.makedirs(outdir, exist_ok=True)
    drv = sw.Driver()
    paths = {"softmax": "stdlib/softmax.tl", "rmsnorm": "stdlib/norms.tl", "layernorm": "stdlib/norms.tl"}
    t = sw.DT[dtype]
    elem = torch.tensor([], dtype=t).element_size()
    wrong = 0
    for kind in kinds:
        path = os.path.join(sw.ROOT, paths[kind])
        lines = [f"# {kind} ({dtype}): candidates per shape, ratio of the copy's bandwidth", ""]
        for (m, n) in sw.shapes(elem, False):
            if only_n and n not in only_n or only_m and m not in only_m:
                continue
            torch.manual_seed(m * 7 + n)
            x = (torch.rand(m, n, device="cuda") * 8 - 4).to(t)
            w = (torch.rand(n, device="cuda") + 0.5).to(t)
            b = (torch.rand(n, device="cuda") - 0.5).to(t)
            y = torch.empty_like(x)
            y2 = torch.empty_like(x)
            eps = 1e-5
            rows = torch.randint(0, m, (min(m, 64),), device="cuda")
            ref = sw.reference(kind, x, w, b, eps, rows)
            t_copy = sw.timed(lambda: y2.copy_(x), 10)
            moved = 2 * m * n * elem + (n * elem if kind == "rmsnorm" else 2 * n * elem if kind == "layernorm" else 0)
            ratio = lambda ms: moved / (ms * 1e-3) / (2 * m * n * elem / (t_copy * 1e-3))
            results = []
            cands = [("default", ["--size", f"M={m},N={n}"], path)]
            for a in (alt.split(",") if alt else []):
                if f"kernel {kind}[" in open(a).read():
                    cands.append((f"alt {os.path.basename(a)}", ["--size", f"M={m},N={n}"], a))
            for c in ([] if only_alt else tries if tries is not None else candidates(kind, n, elem)):
                flags = []
                for k2, v in c.items():
                    flags += ["-D", f"{k2}={v}"]
                cands.append((" ".join(f"{k2}={v}" for k2, v in c.items()), flags, path))
            for j, (label, flags, src) in enumerate(cands):
                try:
                    k = sw.Kernel(drv, tilec, src, kind, dtype, flags=flags, quiet=True)
                except Exception as e:  # a candidate that does not compile (registers, shared memory)
                    results.append((label, None, f"no: {str(e)[:60]}"))
                    continue
                call = sw.launcher(kind, k, x, w, b, y, eps)
                y.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                err = ((y[rows].float() - ref).abs().amax(-1) / ref.abs().amax(-1)).max().item()
                ok = err == err and err <= (1e-2 if dtype == "f16" else 4e-2)
                if not ok:
                    wrong += 1
                    results.append((label, None, f"WRONG {err:.2e}"))
                    continue
                ms = sw.timed(call, 10)
                results.append((label, ms, ""))
            good = [r for r in results[1:] if r[1]]
            best = min(good, key=lambda r: r[1]) if good else None
            d = results[0]
            head = (f"M={m} N={n}: copy {t_copy * 1e3:.1f} µs; default {d[1] * 1e3 if d[1] else 0:.1f} µs "
                    f"({ratio(d[1]) if d[1] else 0:.3f}); best {best[0] if best else '-'} "
                    f"{best[1] * 1e3 if best else 0:.1f} µs ({ratio(best[1]) if best else 0:.3f})")
            print(kind, head, flush=True)
            lines.append(f"## {head}")
            lines.append("")
            for label, ms, note in results:
                lines.append(f"- {label}: " + (f"{ms * 1e3:.1f} µs, {ratio(ms):.3f}" if ms else note))
            lines.append("")
            del x, y, y2
            with open(os.path.join(outdir, f"explore_{kind}.md"), "w") as f:  # after every shape: a run cut short keeps them
                f.write("\n".join(lines) + "\n")
    print(f"explore_rows: {'all right' if not wrong else f'{wrong} WRONG'}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
