#!/usr/bin/env python3
"""attention.py: stdlib/attention.tl on the GPU, checked against a float64 reference and timed beside
torch's scaled_dot_product_attention (FlashAttention and cuDNN backends) in the same process.

    python3 tests/gpu/attention.py TILEC OUTDIR [--check-only] [--speed-only] [--steps] [--decode-only]
                                   [--acceptance]
                                   [--decode NAME=FACTOR:FLAGS]... [--reps R]
                                   [--dtypes f16,bf16] [--d 64,128,256] [--seq 512,1024,...]
                                   [--config NAME=FLAGS]... [--file PATH]

Correctness (every case: a fresh random Q, K, V uniform in [-1, 1), O and L filled with NaN first):
both layouts ([B, H, S, D]: attention_fwd; [B, S, H * D]: attention_fwd_bshd), f16 and bf16, D in
{64, 128, 256}, causal and not, grouped-query (H = 4 or 6 over HK = 2 or 1), sequence lengths that
are not multiples of the tiles (1, 17, 100, 129, 300, 1000), SQ != SK both ways, and causal with SQ >
SK (rows that see no key: O must be 0 and L +inf, no NaN). The reference is computed in float64 on
the GPU from the same (rounded) inputs; O passes when every element is within 1e-2 (f16) or 2e-2
(bf16) of it, relative to the largest |O|, and L within 1e-3 + 1e-3 |L|.

Speed: B x S = 16384 tokens, H x D = 2048 (H = 32, 16, 8 for D = 64, 128, 256), S in --seq (512 to
16384 by default), causal and not, f16 and bf16: the kernel at its defaults (and each --config) against
SDPA's FlashAttention and cuDNN backends, [B, H, S, D] for all. FLOPs 4 B H S^2 D (half for causal).
A --config's FLAGS may start with --tilec=PATH: that compiler instead (an A/B of two builds).
--steps (instead of the speed tables): the tutorial's steps, docs/tutorials/08_attention.md (steps()).
--acceptance (with the checks): issue 16's correctness grid, B in {1, 4}, H = 1 or 32 over 8, SQ and SK
in {1, 17, 128, 1000, 4096, 8192}, every D, causal and not, each dtype (acceptance()).

Decoding: attention_decode + attention_decode_combine (split over the keys) checked like the others
(GQA, causal drafts of SQ = 4 and 16 queries, splits past the keys, SK = 70001) and timed at SQ = 1
and 4 against SDPA, H = 32 over HK = 8, D = 128, B = 1 and 8, SK = 1024 to 65536 (GB/s of K and V).
Then issue 16's own points (issue_speed(): B = 4, H = 32, S = 8192; decoding at B = 64 against SDPA and
the device copy). Median of R replays of a CUDA graph (tlcuda.timed). Writes OUTDIR/attention.md and
prints it. Exit 1
when a result is wrong, 2 without a GPU or torch; speed never changes it.
"""
import math
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("attention: no torch", file=sys.stderr)
    sys.exit(2)

from tlcuda import DT, ROOT, Driver, Kernel, config_compiler, timed  # noqa: E402


def reference(q, k, v, scale, causal):
    """O [B, H, SQ, D] and L [B, H, SQ] in float64 from [B, H, S, D] inputs (GQA: K, V heads repeated).
    Long sequences are done one (batch, head) at a time, so that S stays a few hundred MB."""
    B, H, SQ, D = q.shape
    HK, SK = k.shape[1], k.shape[2]
    if B * H > 1 and SQ * SK > (1 << 24):
        o = torch.empty(B, H, SQ, D, device=q.device, dtype=torch.float64)
        lse = torch.empty(B, H, SQ, device=q.device, dtype=torch.float64)
        for b in range(B):
            for h in range(H):
                hk = h // (H // HK)
                o[b:b + 1, h:h + 1], lse[b:b + 1, h:h + 1] = reference(
                    q[b:b + 1, h:h + 1], k[b:b + 1, hk:hk + 1], v[b:b + 1, hk:hk + 1], scale, causal)
        return o, lse
    k = k.double().repeat_interleave(H // HK, dim=1)
    v = v.double().repeat_interleave(H // HK, dim=1)
    s = (q.double() @ k.transpose(-1, -2)) * scale
    if causal:
        i = torch.arange(SQ, device=q.device).view(-1, 1)
        j = torch.arange(SK, device=q.device).view(1, -1)
        s = s.masked_fill(j > i + SK - SQ, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1))
    p = torch.nan_to_num(p, nan=0.0)  # rows that see no key
    o = p @ v
    lse = torch.where(torch.isinf(lse), torch.full_like(lse, float("inf")), lse)
    return o, lse


class Attn:
    def __init__(self, drv, tilec, path, dtype, D, causal, layout, flags=(), sizes=None, tag=""):
        name = "attention_fwd" if layout == "bhsd" else "attention_fwd_bshd"
        self.layout = layout
        self.k = Kernel(drv, tilec, path, name, dtype, sizes,
                        ["-D", f"D={D}", "-D", f"CAUSAL={int(causal)}", *flags], quiet=True,
                        tag=f"_{layout}_{D}_{int(causal)}{tag}")

    def __call__(self, q, k, v, o, lse, scale):
        """q, k, v, o in [B, H, S, D] storage for bhsd, [B, S, H, D] for bshd."""
        if self.layout == "bhsd":
            B, H, SQ, D = q.shape
            HK, SK = k.shape[1], k.shape[2]
            self.k(Q=q, K=k, V=v, O=o, L=lse, scale=scale, B=B, H=H, HK=HK, SQ=SQ, SK=SK)
        else:
            B, SQ, H, D = q.shape
            SK, HK = k.shape[1], k.shape[2]
            self.k(Q=q.view(B, SQ, H * D), K=k.view(B, SK, HK * D), V=v.view(B, SK, HK * D),
                   O=o.view(B, SQ, H * D), L=lse, scale=scale, B=B, H=H, HD=H * D, HKD=HK * D, SQ=SQ, SK=SK)


def splits(B, HK, SK, sms, factor=8):
    """attention_decode's NS as stdlib/attention.tl suggests: about factor * sms blocks, >= 256 keys each."""
    return max(1, min(-(-factor * sms // (B * HK)), -(-SK // 256)))


class Decode:
    """attention_decode + attention_decode_combine over a workspace of NS splits."""

    def __init__(self, drv, tilec, path, dtype, D, causal, sizes, flags=(), tag=""):
        d = ["-D", f"D={D}", "-D", f"CAUSAL={int(causal)}", *flags]
        self.part = Kernel(drv, tilec, path, "attention_decode", dtype, sizes, d, quiet=True,
                           tag=f"_dec{D}_{int(causal)}{tag}")
        self.comb = Kernel(drv, tilec, path, "attention_decode_combine", dtype,
                           {k: sizes[k] for k in ("B", "H", "NS", "SQ", "BH")}, ["-D", f"D={D}"], quiet=True,
                           tag=f"_comb{D}{tag}")
        self.ns = sizes["NS"]

    def __call__(self, q, k, v, o, lse, scale, op, lp):
        B, H, SQ, D = q.shape
        HK, SK = k.shape[1], k.shape[2]
        self.part(Q=q, K=k, V=v, OP=op, LP=lp, scale=scale, B=B, H=H, HK=HK, SQ=SQ, SK=SK, NS=self.ns, BH=B * H)
        self.comb(OP=op, LP=lp, O=o, L=lse, B=B, H=H, NS=self.ns, SQ=SQ, BH=B * H)


def sizes_of(layout, B, H, HK, SQ, SK, D):
    if layout == "bhsd":
        return {"B": B, "H": H, "HK": HK, "SQ": SQ, "SK": SK}
    return {"B": B, "H": H, "HD": H * D, "HKD": HK * D, "SQ": SQ, "SK": SK}


def compare(o, lse, ref_o, ref_l, dtype, lines, label):
    """O within 1e-2 (f16) or 2e-2 (bf16) of the reference relative to its largest |value|, L within
    1e-3 relative to 1 + |L|, +inf where the reference is (a row that sees no key); appends a table row."""
    err_o = ((o.double() - ref_o).abs().max() / max(ref_o.abs().max().item(), 1e-30)).item()
    fin = torch.isfinite(ref_l)
    err_l = ((lse.double() - ref_l).abs()[fin] / (1 + ref_l.abs()[fin])).max().item() if fin.any() else 0.0
    l_inf_ok = bool((lse[~fin] == float("inf")).all()) if (~fin).any() else True
    tol = 1e-2 if dtype == "f16" else 2e-2
    ok = err_o == err_o and err_o <= tol and err_l == err_l and err_l <= 1e-3 and l_inf_ok
    lines.append(f"| {label} | {err_o:.1e} | {err_l:.1e} | {'ok' if ok else '**WRONG**'} |")
    if not ok:
        print("WRONG:", lines[-1], flush=True)
    return ok


CASES = [  # B, H, HK, SQ, SK, causal
    (1, 2, 2, 1, 1, False), (2, 4, 2, 17, 100, False), (1, 2, 1, 129, 129, True), (1, 6, 2, 300, 300, True),
    (2, 2, 2, 100, 1000, False), (1, 4, 4, 1000, 1000, True), (1, 2, 2, 300, 129, True),
    (1, 3, 1, 129, 300, True), (1, 2, 2, 1000, 17, False),
]


def check(drv, tilec, path, dtypes, ds, lines):
    wrong = 0
    lines += ["## Correctness", "", "| layout | dtype | D | B | H | HK | SQ | SK | causal | O error | L error | |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for layout in ("bhsd", "bshd"):
        for dtype in dtypes:
            t = DT[dtype]
            for D in ds:
                for (B, H, HK, SQ, SK, causal) in CASES:
                    torch.manual_seed(SQ * 31 + SK * 7 + D + H)
                    q = (torch.rand(B, H, SQ, D, device="cuda") * 2 - 1).to(t)
                    k = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                    v = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                    scale = 1.0 / math.sqrt(D)
                    ref_o, ref_l = reference(q, k, v, scale, causal)
                    kern = Attn(drv, tilec, path, dtype, D, causal, layout,
                                sizes=sizes_of(layout, B, H, HK, SQ, SK, D))
                    lse = torch.full((B, H, SQ), float("nan"), device="cuda")
                    if layout == "bhsd":
                        o = torch.full_like(q, float("nan"))
                        kern(q, k, v, o, lse, scale)
                    else:
                        qs, ks, vs = (x.transpose(1, 2).contiguous() for x in (q, k, v))
                        os_ = torch.full_like(qs, float("nan"))
                        kern(qs, ks, vs, os_, lse, scale)
                        o = os_.transpose(1, 2)
                    torch.cuda.synchronize()
                    wrong += not compare(o, lse, ref_o, ref_l, dtype, lines,
                                         f"{layout} | {dtype} | {D} | {B} | {H} | {HK} | {SQ} | {SK} | {int(causal)}")
                    del q, k, v, o, lse
    # attention_decode + combine: a few queries against long keys, split NS ways (auto, or forced)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for dtype in dtypes:
        t = DT[dtype]
        for D in ds:
            for (B, H, HK, SQ, SK, causal, ns) in ((2, 4, 2, 1, 1000, False, 0), (1, 8, 2, 4, 3000, True, 0),
                                                   (1, 2, 2, 16, 10, True, 4), (2, 2, 1, 1, 70001, False, 0),
                                                   (1, 4, 4, 3, 257, False, 7), (1, 8, 1, 9, 150, True, 2)):
                ns = ns or splits(B, HK, SK, sms)
                torch.manual_seed(SQ * 31 + SK + D)
                q = (torch.rand(B, H, SQ, D, device="cuda") * 2 - 1).to(t)
                k = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                v = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                scale = 1.0 / math.sqrt(D)
                ref_o, ref_l = reference(q, k, v, scale, causal)
                sizes = {"B": B, "H": H, "HK": HK, "SQ": SQ, "SK": SK, "NS": ns, "BH": B * H}
                kern = Decode(drv, tilec, path, dtype, D, causal, sizes)
                o = torch.full_like(q, float("nan"))
                lse = torch.full((B, H, SQ), float("nan"), device="cuda")
                op = torch.full((B * H, ns, SQ, D), float("nan"), device="cuda")
                lp = torch.full((B * H, ns, SQ), float("nan"), device="cuda")
                kern(q, k, v, o, lse, scale, op, lp)
                torch.cuda.synchronize()
                wrong += not compare(o, lse, ref_o, ref_l, dtype, lines,
                                     f"decode NS={ns} | {dtype} | {D} | {B} | {H} | {HK} | {SQ} | {SK} | {int(causal)}")
    # examples/flash_attention.tl, the tutorial's kernel ([B, H, S, D], not causal, no L)
    ex = os.path.join(ROOT, "examples/flash_attention.tl")
    for dtype in dtypes:
        t = DT[dtype]
        for D in (64, 128):
            for (B, H, S) in ((1, 2, 100), (2, 3, 1000)):
                torch.manual_seed(S + D)
                q, k, v = ((torch.rand(B, H, S, D, device="cuda") * 2 - 1).to(t) for _ in range(3))
                scale = 1.0 / math.sqrt(D)
                ref_o, _ = reference(q, k, v, scale, False)
                kern = Kernel(drv, tilec, ex, "flash_attention", dtype, {"B": B, "H": H, "S": S},
                              ["-D", f"D={D}"], quiet=True, tag=f"_ex{D}")
                o = torch.full_like(q, float("nan"))
                kern(Q=q, K=k, V=v, O=o, scale=scale, B=B, H=H, S=S)
                torch.cuda.synchronize()
                err_o = ((o.double() - ref_o).abs().max() / ref_o.abs().max()).item()
                ok = err_o == err_o and err_o <= (1e-2 if dtype == "f16" else 2e-2)
                wrong += not ok
                lines.append(f"| example | {dtype} | {D} | {B} | {H} | {H} | {S} | {S} | 0 | {err_o:.1e} | - | "
                             f"{'ok' if ok else '**WRONG**'} |")
    print(f"attention: {len(CASES) * 2 * len(dtypes) * len(ds) + 6 * len(dtypes) * len(ds) + 4 * len(dtypes)} cases, "
          f"{wrong} wrong", flush=True)
    return wrong


def acceptance(drv, tilec, path, dtypes, ds, lines):
    """Issue 16's correctness grid: B in {1, 4}, H = 1 or 32 over 8 (GQA), SQ and SK in {1, 17, 128, 1000,
    4096, 8192}, D in ds, causal and not, each dtype; [B, H, S, D]. One kernel per (dtype, D, causal),
    its generic variant (compiled without sizes: the constants that depend on SK take the values of a
    long sequence, 128-key tiles and, at D = 128, the overlap of pipelined(..., overlap = 1), also for the
    short lengths of the grid)."""
    lens = (1, 17, 128, 1000, 4096, 8192)
    wrong = total = 0
    lines += ["## Acceptance grid (issue 16)", "", "| kernel | dtype | D | B | H | HK | SQ | SK | causal | O error | "
              "L error | |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for dtype in dtypes:
        t = DT[dtype]
        for D in ds:
            for causal in (False, True):
                kern = Attn(drv, tilec, path, dtype, D, causal, "bhsd", tag="_acc")
                for B in (1, 4):
                    for (H, HK) in ((1, 1), (32, 8)):
                        for SQ in lens:
                            for SK in lens:
                                torch.manual_seed(SQ * 7 + SK + D + B + H)
                                q = (torch.rand(B, H, SQ, D, device="cuda") * 2 - 1).to(t)
                                k = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                                v = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                                scale = 1.0 / math.sqrt(D)
                                ref_o, ref_l = reference(q, k, v, scale, causal)
                                o = torch.full_like(q, float("nan"))
                                lse = torch.full((B, H, SQ), float("nan"), device="cuda")
                                kern(q, k, v, o, lse, scale)
                                torch.cuda.synchronize()
                                ok = compare(o, lse, ref_o, ref_l, dtype, lines,
                                             f"attention_fwd | {dtype} | {D} | {B} | {H} | {HK} | {SQ} | {SK} | "
                                             f"{int(causal)}")
                                wrong += not ok
                                total += 1
                                del q, k, v, o, lse, ref_o, ref_l
    print(f"attention: acceptance grid, {total} cases, {wrong} wrong", flush=True)
    return wrong


def sdpa(backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]

    def run(q, k, v, causal, scale):
        with sdpa_kernel(b):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    return run


def peer_times(q, k, v, causal, scale, reps, per_graph):
    """Milliseconds of SDPA's FlashAttention and cuDNN backends on these tensors (NaN for a backend that
    refuses them), and the first backend's output (None if both refuse)."""
    times, out = [], None
    for be in ("flash", "cudnn"):
        try:
            f = sdpa(be)
            r = f(q, k, v, causal, scale)
            out = r if out is None else out
            times.append(timed(lambda: f(q, k, v, causal, scale), reps, per_graph))
        except Exception as e:  # a backend that does not take this shape
            print(f"sdpa {be}: {str(e).splitlines()[0][:100]}", file=sys.stderr)
            times.append(float("nan"))
    return times, out


def speed(drv, tilec, path, dtypes, ds, seqs, configs, reps, lines):
    lines += ["", "## Speed", "",
              "B x S = 16384 tokens, H x D = 2048, [B, H, S, D]; TFLOP/s (4 B H S^2 D, half for causal) and "
              "ratios to the faster of SDPA's FlashAttention and cuDNN backends."]
    logs = {n: [] for n, _ in configs}
    for dtype in dtypes:
        t = DT[dtype]
        for D in ds:
            H = 2048 // D
            lines += ["", f"### {dtype}, D = {D}, H = {H}", "",
                      "| S | causal | SDPA flash | SDPA cuDNN | " +
                      " | ".join(f"{n} TFLOP/s | {n} / best SDPA" for n, _ in configs) + " |",
                      "|---|---|---|---|" + "---|---|" * len(configs)]
            for S in seqs:
                B = max(1, 16384 // S)
                for causal in (False, True):
                    torch.manual_seed(S + D)
                    q = (torch.rand(B, H, S, D, device="cuda") * 2 - 1).to(t)
                    k = (torch.rand(B, H, S, D, device="cuda") * 2 - 1).to(t)
                    v = (torch.rand(B, H, S, D, device="cuda") * 2 - 1).to(t)
                    scale = 1.0 / math.sqrt(D)
                    flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
                    peers, ref = peer_times(q, k, v, causal, scale, reps, 3)
                    best = min(x for x in peers if x == x) if any(x == x for x in peers) else float("nan")
                    cells = []
                    for cname, flags in configs:
                        tc, flags = config_compiler(flags, tilec)
                        try:
                            kern = Attn(drv, tc, path, dtype, D, causal, "bhsd", flags,
                                        sizes_of("bhsd", B, H, H, S, S, D), tag=f"_{cname}")
                        except Exception as e:  # a config that does not compile here (shared memory)
                            print(f"{cname}: {e}", file=sys.stderr)
                            cells.append("- | -")
                            continue
                        o = torch.full_like(q, float("nan"))
                        lse = torch.empty(B, H, S, device="cuda")
                        kern(q, k, v, o, lse, scale)
                        torch.cuda.synchronize()
                        err = (o.float() - ref.float()).abs().max().item() if ref is not None else 0.0
                        ok = err == err and err < (2e-2 if dtype == "f16" else 5e-2)
                        tms = timed(lambda: kern(q, k, v, o, lse, scale), reps, 3)
                        r = best / tms
                        if r == r:
                            logs[cname].append(math.log(r))
                        cells.append(f"{flops / tms / 1e9:.0f} | **{r:.3f}**{'' if ok else ' WRONG'}")
                        del o, lse
                    line = (f"| {S} | {int(causal)} | " + " | ".join(
                        f"{flops / x / 1e9:.0f}" if x == x else "-" for x in peers) + " | " + " | ".join(cells) + " |")
                    lines.append(line)
                    print(dtype, D, line, flush=True)
                    del q, k, v, ref
    lines += ["", "geometric mean of tilec / best SDPA: " +
              ", ".join(f"`{c}` {math.exp(sum(v) / len(v)):.3f}" for c, v in logs.items() if v)]


def has_decode(path):
    """Whether the .tl file at path has the decoding kernels (a --file of attention_fwd alone has not)."""
    with open(path) as f:
        return "kernel attention_decode" in f.read()


def issue_speed(drv, tilec, path, dtypes, reps, lines, decode):
    """Issue 16's speed points: B = 4, H = 32, S = 8192, D = 64 and 128, causal and not, against both SDPA
    backends; and decoding at B = 64, H = 32 over 8, SK = 8192, D = 128 against SDPA and the device copy
    (bandwidth of reading K and V, over a copy's bytes read and written), if decode (path has
    attention_decode)."""
    lines += ["", "## Issue 16's points", "", "| dtype | D | causal | SDPA flash TFLOP/s | SDPA cuDNN TFLOP/s | "
              "tilec TFLOP/s | tilec / flash | tilec / cuDNN |", "|---|---|---|---|---|---|---|---|"]
    B, H, S = 4, 32, 8192
    for dtype in dtypes:
        t = DT[dtype]
        for D in (64, 128):
            for causal in (False, True):
                torch.manual_seed(D)
                q, k, v = ((torch.rand(B, H, S, D, device="cuda") * 2 - 1).to(t) for _ in range(3))
                scale = 1.0 / math.sqrt(D)
                flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
                peers, _ = peer_times(q, k, v, causal, scale, reps, 1)
                kern = Attn(drv, tilec, path, dtype, D, causal, "bhsd", sizes=sizes_of("bhsd", B, H, H, S, S, D),
                            tag="_issue")
                o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda")
                tms = timed(lambda: kern(q, k, v, o, lse, scale), reps, 1)
                lines.append(f"| {dtype} | {D} | {int(causal)} | " + " | ".join(
                    f"{flops / x / 1e9:.0f}" if x == x else "-" for x in peers) +
                    f" | {flops / tms / 1e9:.0f} | **{peers[0] / tms:.3f}** | **{peers[1] / tms:.3f}** |")
                print(lines[-1], flush=True)
                del q, k, v, o, lse
    if not decode:
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    lines += ["", "| dtype | decode B=64 H=32/8 SK=8192 D=128: SDPA flash us | SDPA cuDNN us | tilec us | K+V read "
              "GB/s | copy GB/s (read + write) | tilec / copy |", "|---|---|---|---|---|---|---|"]
    B, H, HK, SK, D = 64, 32, 8, 8192, 128
    for dtype in dtypes:
        t = DT[dtype]
        q = (torch.rand(B, H, 1, D, device="cuda") * 2 - 1).to(t)
        k, v = ((torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t) for _ in range(2))
        ke, ve = k.repeat_interleave(H // HK, 1), v.repeat_interleave(H // HK, 1)
        scale = 1.0 / math.sqrt(D)
        peers, _ = peer_times(q, ke, ve, False, scale, reps, 3)
        ns = splits(B, HK, SK, sms)
        kern = Decode(drv, tilec, path, dtype, D, False,
                      {"B": B, "H": H, "HK": HK, "SQ": 1, "SK": SK, "NS": ns, "BH": B * H}, tag="_issue")
        o, lse = torch.empty_like(q), torch.empty(B, H, 1, device="cuda")
        op, lp = torch.empty(B * H, ns, 1, D, device="cuda"), torch.empty(B * H, ns, 1, device="cuda")
        tms = timed(lambda: kern(q, k, v, o, lse, scale, op, lp), reps, 3)
        kv = torch.cat([k.flatten(), v.flatten()])
        dst = torch.empty_like(kv)
        tcopy = timed(lambda: dst.copy_(kv), reps, 3)
        nbytes = kv.numel() * kv.element_size()
        read_bw, copy_bw = nbytes / tms / 1e6, 2 * nbytes / tcopy / 1e6
        lines.append(f"| {dtype} | " + " | ".join(f"{x * 1e3:.1f}" if x == x else "-" for x in peers) +
                     f" | {tms * 1e3:.1f} | {read_bw:.0f} | {copy_bw:.0f} | **{read_bw / copy_bw:.3f}** |")
        print(lines[-1], flush=True)
        del q, k, v, ke, ve, o, op, lp, kv, dst


def decode_speed(drv, tilec, path, dtypes, reps, lines, variants=(("default", [], 8),)):
    """SQ = 1 (and 4), H = 32 query heads over HK = 8, D = 128, B in {1, 8}: tilec's two kernels against
    SDPA (FlashAttention, cuDNN) on the same tensors; GB/s of K and V read. variants: (name, -D flags,
    the factor of splits())."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    lines += ["", "## Decoding (attention_decode + combine)", "",
              "H = 32 query heads over HK = 8 (GQA), D = 128, [B, H, S, D]; GB/s counts K and V once; ratio: the "
              "faster SDPA backend's time over tilec's (SDPA given K and V repeated to 32 heads when it "
              "refuses grouped heads).", ""]
    for name, flags, factor in variants:
        lines.append(f"- variant `{name}`: `{' '.join(flags) or '(defaults)'}`, NS = splits(factor {factor})")
    for dtype in dtypes:
        t = DT[dtype]
        lines += ["", f"### {dtype}", "", "| B | SQ | SK | SDPA flash GB/s | SDPA cuDNN GB/s | " +
                  " | ".join(f"{n} NS | {n} GB/s | {n} / best SDPA" for n, _, _ in variants) + " |",
                  "|---|---|---|---|---|" + "---|---|---|" * len(variants)]
        for B in (1, 8):
            for SQ in (1, 4):
                for SK in (1024, 4096, 16384, 65536):
                    H, HK, D = 32, 8, 128
                    torch.manual_seed(SK + B)
                    q = (torch.rand(B, H, SQ, D, device="cuda") * 2 - 1).to(t)
                    k = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                    v = (torch.rand(B, HK, SK, D, device="cuda") * 2 - 1).to(t)
                    ke, ve = k.repeat_interleave(H // HK, 1), v.repeat_interleave(H // HK, 1)
                    scale = 1.0 / math.sqrt(D)
                    nbytes = 2 * B * HK * SK * D * 2
                    peers, _ = peer_times(q, ke, ve, False, scale, reps, 10)
                    best = min(x for x in peers if x == x) if any(x == x for x in peers) else float("nan")
                    cells = []
                    for vname, flags, factor in variants:
                        ns = splits(B, HK, SK, sms, factor)
                        kern = Decode(drv, tilec, path, dtype, D, False,
                                      {"B": B, "H": H, "HK": HK, "SQ": SQ, "SK": SK, "NS": ns, "BH": B * H}, flags,
                                      tag=f"_{vname}")
                        o = torch.empty_like(q)
                        lse = torch.empty(B, H, SQ, device="cuda")
                        op = torch.empty(B * H, ns, SQ, D, device="cuda")
                        lp = torch.empty(B * H, ns, SQ, device="cuda")
                        tms = timed(lambda: kern(q, k, v, o, lse, scale, op, lp), reps, 10)
                        cells.append(f"{ns} | {nbytes / tms / 1e6:.0f} | **{best / tms:.3f}**")
                        del o, op, lp
                    line = (f"| {B} | {SQ} | {SK} | " + " | ".join(
                        f"{nbytes / x / 1e6:.0f}" if x == x else "-" for x in peers) + " | " + " | ".join(cells) + " |")
                    lines.append(line)
                    print(dtype, line, flush=True)
                    del q, k, v, ke, ve


def steps(drv, tilec, reps, lines):
    """docs/tutorials/08_attention.md's steps at B = 1, H = 16, S = 4096, f16, D = 64 and 128, not causal:
    the three-kernel form (per head: stdlib gemm_nt, softmax, gemm_nn; the scale folded into Q), the
    fused kernel with P through shared memory (docs/tutorials/attention_staged.tl), with P in registers
    (examples/flash_attention.tl), stdlib/attention.tl's attention_fwd, and SDPA; every output checked
    against torch's f32 attention (largest error relative to the largest |O|)."""
    B, H, S, dtype, t = 1, 16, 4096, "f16", torch.float16
    lines += ["", "## Tutorial steps (docs/tutorials/08_attention.md)", "",
              f"B = {B}, H = {H}, S = {S}, f16, not causal; TFLOP/s of 4 B H S^2 D; memory: bytes the "
              "form must move through DRAM at least (the three-kernel form writes and reads S and P once "
              "each per head; the fused forms read Q, K, V and write O).", ""]
    for D in (64, 128):
        torch.manual_seed(D)
        q, k, v = ((torch.rand(B, H, S, D, device="cuda") * 2 - 1).to(t) for _ in range(3))
        scale = 1.0 / math.sqrt(D)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale)
        flops = 4.0 * B * H * S * S * D
        qkvo = 4 * B * H * S * D * 2
        qs = (q.float() * scale).to(t)
        Sb, Pb = torch.empty(S, S, device="cuda", dtype=t), torch.empty(S, S, device="cuda", dtype=t)
        sizes_nt, sizes_nn = {"M": S, "N": S, "K": D}, {"M": S, "N": D, "K": S}
        gnt = Kernel(drv, tilec, os.path.join(ROOT, "stdlib/gemm.tl"), "gemm_nt", dtype, sizes_nt, quiet=True)
        sm = Kernel(drv, tilec, os.path.join(ROOT, "stdlib/softmax.tl"), "softmax", dtype, {"M": S, "N": S},
                    quiet=True)
        gnn = Kernel(drv, tilec, os.path.join(ROOT, "stdlib/gemm.tl"), "gemm_nn", dtype, sizes_nn, quiet=True,
                     tag="_nn")

        def naive(o):
            for h in range(H):
                gnt(A=qs[0, h], B=k[0, h], C=Sb, M=S, N=S, K=D)
                sm(X=Sb, Y=Pb, M=S, N=S)
                gnn(A=Pb, B=v[0, h], C=o[0, h], M=S, N=D, K=S)
        fused = {}
        for name, rel, kname in (("staged", "docs/tutorials/attention_staged.tl", "flash_attention_staged"),
                                 ("example", "examples/flash_attention.tl", "flash_attention")):
            kern = Kernel(drv, tilec, os.path.join(ROOT, rel), kname, dtype, {"B": B, "H": H, "S": S},
                          ["-D", f"D={D}"], quiet=True, tag=f"_steps{D}")
            fused[name] = (lambda kern: lambda o: kern(Q=q, K=k, V=v, O=o, scale=scale, B=B, H=H, S=S))(kern)
        lib = Attn(drv, tilec, os.path.join(ROOT, "stdlib/attention.tl"), dtype, D, False, "bhsd",
                   sizes=sizes_of("bhsd", B, H, H, S, S, D), tag="_steps")
        lse = torch.empty(B, H, S, device="cuda")
        forms = [("1. three kernels per head (gemm_nt, softmax, gemm_nn)", naive, qkvo + H * 4 * S * S * 2),
                 ("3. fused, P through shared memory (attention_staged.tl)", fused["staged"], qkvo),
                 ("4. fused, P in registers (examples/flash_attention.tl)", fused["example"], qkvo),
                 ("5. stdlib attention_fwd", lambda o: lib(q, k, v, o, lse, scale), qkvo),
                 ("SDPA FlashAttention", lambda o: o.copy_(sdpa("flash")(q, k, v, False, scale)), qkvo),
                 ("SDPA cuDNN", lambda o: o.copy_(sdpa("cudnn")(q, k, v, False, scale)), qkvo)]
        lines += [f"### D = {D}", "", "| form | ms | TFLOP/s | DRAM bytes at least | error |", "|---|---|---|---|---|"]
        for name, fn, nbytes in forms:
            o = torch.full_like(q, float("nan"))
            try:
                fn(o)
                torch.cuda.synchronize()
                err = ((o.float() - ref).abs().max() / ref.abs().max()).item()
                tms = timed(lambda: fn(o), reps, 1)
            except Exception as e:  # a backend that refuses the shape
                print(f"{name}: {str(e).splitlines()[0][:100]}", file=sys.stderr)
                continue
            lines.append(f"| {name} | {tms:.3f} | {flops / tms / 1e9:.0f} | {nbytes / 1e6:.0f} MB | {err:.1e} |")
            print(D, lines[-1], flush=True)
        del q, k, v, ref, qs, Sb, Pb


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    tilec, outdir = args[0], args[1]
    dtypes, ds, seqs, reps = ["f16", "bf16"], [64, 128, 256], [512, 1024, 2048, 4096, 8192, 16384], 10
    configs = [("default", [])]
    path = os.path.join(ROOT, "stdlib/attention.tl")
    do_check, do_speed, do_steps, do_acceptance = True, True, False, False
    variants = [("default", [], 8)]
    i = 2
    while i < len(args):
        a = args[i]
        v = args[i + 1] if i + 1 < len(args) else None
        if a == "--check-only":
            do_speed, i = False, i + 1
            continue
        if a == "--speed-only":
            do_check, i = False, i + 1
            continue
        if a == "--steps":
            do_steps, i = True, i + 1
            continue
        if a == "--decode-only":
            do_check, do_speed, i = False, False, i + 1
            continue
        if a == "--acceptance":
            do_acceptance, i = True, i + 1
            continue
        if a == "--dtypes":
            dtypes = v.split(",")
        elif a == "--d":
            ds = [int(x) for x in v.split(",")]
        elif a == "--seq":
            seqs = [int(x) for x in v.split(",")]
        elif a == "--reps":
            reps = int(v)
        elif a == "--config":
            name, _, flags = v.partition("=")
            configs.append((name, flags.split()))
        elif a == "--file":
            path = v
        elif a == "--decode":  # NAME=FACTOR:FLAGS, a variant of the decoding table
            name, _, rest = v.partition("=")
            factor, _, flags = rest.partition(":")
            variants.append((name, flags.split(), int(factor)))
        else:
            print(f"attention: unknown option {a}\n{__doc__}", file=sys.stderr)
            return 2
        i += 2
    if not torch.cuda.is_available():
        print("attention: no GPU", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    drv = Driver()
    decode = has_decode(path)
    lines = [f"# Attention: {os.path.relpath(path, ROOT)} against torch SDPA", "",
             f"`python3 tests/gpu/attention.py` on {torch.cuda.get_device_name(0)}, torch {torch.__version__}.", ""]
    for name, flags in configs:
        lines.append(f"- config `{name}`: `{' '.join(flags) or '(defaults)'}`")
    lines.append("")
    wrong = check(drv, tilec, path, dtypes, ds, lines) if do_check else 0
    if do_acceptance:
        wrong += acceptance(drv, tilec, path, dtypes, ds, lines)
    if do_steps:
        steps(drv, tilec, reps, lines)
    elif do_speed:
        speed(drv, tilec, path, dtypes, ds, seqs, configs, reps, lines)
        issue_speed(drv, tilec, path, dtypes, reps, lines, decode)
    if not do_steps and (do_speed or not do_check) and decode:
        decode_speed(drv, tilec, path, dtypes, reps, lines, variants)
    with open(os.path.join(outdir, "attention.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
