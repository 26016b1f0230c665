"""attention_overhead.py TILEC OUTDIR NAME=D:CAUSAL[:f=FILE][:l=bshd][:s=SK,SK..][:-D:X=V...]...

Splits attention_fwd's time into a cost per tile of 128 keys and a cost per block (Q's load, the
pipeline's fill, the epilogue): bf16, B = 4, H = 32, SQ = 8192 queries against SK keys, non-causal
at SK = 1024, 2048, 4096, 8192 (or s=...), a least-squares line through time against SK / 128;
causal at SK = 8192 only (no fit).  Each point also times SDPA's cuDNN backend in the same process
and checks the output against it.  f=FILE: a .tl file relative to the repository (default
stdlib/attention.tl); l=bshd: attention_fwd_bshd; the other fields are tilec flags.  Writes
OUTDIR/overhead.md.
"""
import math
import os
import sys

import torch
from tlcuda import DT, ROOT, Driver, timed
from attention import Attn, sizes_of, peer_times

if len(sys.argv) < 3:
    print(__doc__)
    sys.exit(2)
tilec, out = sys.argv[1], sys.argv[2]
cfgs = [a.split("=", 1) for a in sys.argv[3:]]  # name=D:causal:flags
drv = Driver()
path = os.path.join(ROOT, "stdlib", "attention.tl")
lines = []


def p(s):
    print(s, flush=True)
    lines.append(s)


B, S = 4, 8192
for name, spec in cfgs:
    D, causal, *fl = spec.split(":")
    D, causal = int(D), causal == "1"
    fpath = [x[2:] for x in fl if x.startswith("f=")]
    layout = ([x[2:] for x in fl if x.startswith("l=")] or ["bhsd"])[0]
    sks_opt = [x[2:] for x in fl if x.startswith("s=")]
    fl = [x for x in fl if x[:2] not in ("f=", "l=", "s=")]
    flags = " ".join(fl).split()
    kpath = os.path.join(ROOT, fpath[0]) if fpath else path
    H, t, scale = 32, DT["bf16"], 1 / math.sqrt(D)
    pts = []
    sks = [int(x) for x in sks_opt[0].split(",")] if sks_opt else ([8192] if causal else [1024, 2048, 4096, 8192])
    for SK in sks:
        torch.manual_seed(1)
        q = (torch.rand(B, H, S, D, device="cuda") * 2 - 1).to(t)
        k = (torch.rand(B, H, SK, D, device="cuda") * 2 - 1).to(t)
        v = (torch.rand(B, H, SK, D, device="cuda") * 2 - 1).to(t)
        kern = Attn(drv, tilec, kpath, "bf16", D, causal, layout, flags, sizes_of(layout, B, H, H, S, SK, D),
                    tag="_" + name)
        peers, ref = peer_times(q, k, v, causal, scale, 10, 3)
        if layout == "bshd":
            q, k, v, ref = (x.transpose(1, 2).contiguous() for x in (q, k, v, ref))
        o, lse = torch.full_like(q, float("nan")), torch.empty(B, H, S, device="cuda")
        kern(q, k, v, o, lse, scale)
        torch.cuda.synchronize()
        err = (o.float() - ref.float()).abs().max().item()
        tms = timed(lambda: kern(q, k, v, o, lse, scale), 10, 3)
        fl_ = 4.0 * B * H * S * SK * D / (2 if causal else 1)
        p(f"| {name} | {D} | {int(causal)} | {layout} {flags} | {SK} | {tms*1e3:.1f} us | {fl_/tms/1e9:.0f} TF | "
          f"cudnn {peers[1]*1e3:.1f} us | ratio {peers[1]/tms:.3f} | err {err:.2e} |")
        pts.append((SK, tms))
    if len(pts) > 1:
        n, y = [x / 128 for x, _ in pts], [t_ for _, t_ in pts]
        mn, my = sum(n) / len(n), sum(y) / len(y)
        a = sum((xi - mn) * (yi - my) for xi, yi in zip(n, y)) / sum((xi - mn) ** 2 for xi in n)
        c = my - a * mn
        p(f"fit {name}: ms = {a*1e3:.2f} us per 128 keys x {c*1e3:.1f} us fixed (fixed = {c/a:.1f} tiles of 128 keys)")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "overhead.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
