#!/usr/bin/env python3
"""variant_sweep.py TILEC PTXAS [--only SUBSTRING] [--list]

Every variant a launch can pick, through ptxas: tests/ptxas.sh assembles each stdlib and example
kernel at its defaults (the variant for large sizes), but launch constants (docs/language.md,
"Launch constants") give other variants at other sizes, with other tiles, threads and register
caps. This compiles the stdlib's kernels and examples/matmul.tl with `--size` over the shape grids
of the speed acceptance (issues 14 and 16: GEMM M x (N, K), rows M x N, attention B, H, S, D,
causal), f16 and bf16, sm_90a and sm_80, assembles each distinct PTX with `ptxas -v`, and fails on
a ptxas error, a spill, a stack frame or a note about wgmma or setmaxnreg, per kernel, unless the
variant is in KNOWN below with at most that many spilled bytes. A KNOWN entry that no variant
matches any longer fails too, so the list stays true. Exits 77 (skip) without ptxas.
"""
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import threading




# (file, kernel, arch, T, the variant's launch constants NAME=VALUE sorted, spilled bytes): spills ptxas
# reports today, measured and not yet taken on (the speed figures in results/ were measured with them).
# Most sit under a register cap the variant sets itself: softmax's MINB = 2048 / THREADS blocks per
# multiprocessor gives 32 registers (uncapped, ptxas takes 56-62 and spills nothing; with the long-row
# branch deleted, which such rows never take, it spills nothing at 32 either); rmsnorm's 1024 threads
# give 64 (with its long-row branch deleted it spills more, 20-28 bytes: not that branch's; the
# variants for rows longer than the tile, LONG = 1, compile that branch alone and spill nothing).
# gemm_w4a16's 256-row tiles overlap the widening with the multiplies in 2 stages at 168 registers
# (faster than 3 stages without the overlap, which spilled nothing: results/h100-2026-12-06-s34); 16
# bytes, not 12, since the row-tested tier of pipelined copies (on the H100 4096^3 1.04x as fast,
# 4096 x 14336 0.97x, as with 12: results/h100-2026-12-06-s36/callC). layernorm's 16-bit rows of 32
# to 64 KB in registers (WSH = 1: 1024 threads, so 64 registers) spill 4 bytes for sm_80 and nothing
# for sm_90a, where they were measured (results/h100-2026-12-07-s39). matmul's persistent grid
# (PERSIST = 1, K <= 2048) spills 8 bytes in the PTX with both forms (the CLI's and the AOT header's:
# the cp.async form beside the TMA one, the tile loop's state and 128 accumulators); the JIT's
# TMA-only variant spills nothing. Measured with the spill (both forms) at 0.92-0.99 of cuBLAS
# (results/h100-2026-12-07-s42).
KNOWN = {}
for _file, _kernel, _arch, _t, _consts, _bytes in (
        ('stdlib/softmax.tl', 'softmax', 'sm_90a', 'bf16', 'BN=2048 BPS=65536 DIRECT=1 MINB=16 STAGES=1 THREADS=128', 8),
        ('stdlib/softmax.tl', 'softmax', 'sm_90a', 'bf16', 'BN=4096 BPS=65536 DIRECT=1 MINB=8 STAGES=1 THREADS=256', 8),
        ('stdlib/softmax.tl', 'softmax', 'sm_90a', 'bf16', 'BN=8192 BPS=65536 DIRECT=1 MINB=4 STAGES=2 THREADS=512', 8),
        ('stdlib/softmax.tl', 'softmax', 'sm_90a', 'f16', 'BN=2048 BPS=65536 DIRECT=1 MINB=16 STAGES=1 THREADS=128', 8),
        ('stdlib/softmax.tl', 'softmax', 'sm_90a', 'f16', 'BN=4096 BPS=65536 DIRECT=1 MINB=8 STAGES=1 THREADS=256', 8),
        ('stdlib/softmax.tl', 'softmax', 'sm_90a', 'f16', 'BN=8192 BPS=65536 DIRECT=1 MINB=4 STAGES=2 THREADS=512', 8),
        ('stdlib/norms.tl', 'rmsnorm', 'sm_80', 'f16', 'BN=16384 LONG=0 MINB=2 THREADS=512', 4),
        ('stdlib/norms.tl', 'rmsnorm', 'sm_80', 'f16', 'BN=32768 LONG=0 MINB=0 THREADS=1024', 4),
        ('stdlib/norms.tl', 'rmsnorm', 'sm_90a', 'bf16', 'BN=16384 LONG=0 MINB=2 THREADS=512', 4),
        ('stdlib/norms.tl', 'rmsnorm', 'sm_90a', 'bf16', 'BN=32768 LONG=0 MINB=0 THREADS=1024', 4),
        ('stdlib/norms.tl', 'rmsnorm', 'sm_90a', 'f16', 'BN=16384 LONG=0 MINB=2 THREADS=512', 4),
        ('stdlib/norms.tl', 'rmsnorm', 'sm_90a', 'f16', 'BN=32768 LONG=0 MINB=0 THREADS=1024', 4),
        ('stdlib/norms.tl', 'layernorm', 'sm_80', 'f16',
         'BN=32768 DIRECT=1 LONG=0 LPIPE=0 MINB=0 RPB=16 THREADS=1024 WSH=1', 4),
        ('stdlib/norms.tl', 'layernorm', 'sm_80', 'bf16',
         'BN=32768 DIRECT=1 LONG=0 LPIPE=0 MINB=0 RPB=16 THREADS=1024 WSH=1', 4),
        ('stdlib/gemm.tl', 'gemm_w4a16', 'sm_90a', 'f16', 'BM=256 BN=128 OVERLAP=1 STAGES=2 THREADS=256', 16),
        ('stdlib/gemm.tl', 'gemm_w4a16', 'sm_90a', 'bf16', 'BM=256 BN=128 OVERLAP=1 STAGES=2 THREADS=256', 16),
        ('examples/matmul.tl', 'matmul', 'sm_90a', 'f16',
         'BK=64 BM=128 BN=256 FB=0 MINB=1 PERSIST=1 STAGES=3 SWAP=0 THREADS=256 W192=0 W224=0', 8),
        ('examples/matmul.tl', 'matmul', 'sm_90a', 'bf16',
         'BK=64 BM=128 BN=256 FB=0 MINB=1 PERSIST=1 STAGES=3 SWAP=0 THREADS=256 W192=0 W224=0', 8)):
    KNOWN[(_file, _kernel, _arch, _t, _consts)] = _bytes


def gemm_sizes():
    out = []
    for m in (1, 16, 64, 128, 512, 1024, 4096, 16384):
        for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)):
            out.append('M=%d,N=%d,K=%d' % (m, n, k))
    return out + ['M=4095,N=4097,K=4096', 'M=8192,N=8192,K=1024', 'M=17,N=33,K=65', 'M=4095,N=4097,K=123']


def row_sizes():
    out = ['M=%d,N=%d' % (max(1, (256 << 20) // (2 * n)), n)
           for n in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)]
    return out + ['M=%d,N=%d' % (m, n) for m in (1, 8, 64) for n in (4096, 8192)]


def attention_sizes(flags):
    """B = 4, H = 32 over HK = 8 (GQA), the lengths of issue 16's correctness grid; bshd's HD = H * D."""
    d = int(flags[flags.index('-D') + 1].split('=')[1]) if flags else 64
    return ['B=4,H=32,HK=8,SQ=%d,SK=%d,HD=%d,HKD=%d,BH=128' % (sq, sk, 32 * d, 8 * d)
            for sq, sk in ((1, 1), (17, 17), (1000, 1000), (8192, 8192), (1, 8192), (128, 4096))]


# (file, [flag sets], sizes): every flag set at every size, f16 and bf16, on both targets.
GRIDS = [
    ('examples/matmul.tl', [[]], gemm_sizes()),
    ('stdlib/gemm.tl', [[]], ['M=16,N=4096,K=4096', 'M=128,N=4096,K=4096', 'M=4096,N=4096,K=4096',
                              'M=16384,N=14336,K=4096', 'M=17,N=33,K=65']),
    ('stdlib/softmax.tl', [[]], row_sizes()),
    ('stdlib/norms.tl', [[]], row_sizes()),
    ('stdlib/attention.tl', [['-D', 'D=%d' % d, '-D', 'CAUSAL=%d' % c] for d in (64, 128, 256) for c in (0, 1)],
     attention_sizes),
]

NOTE = re.compile(r'wgmma|warpgroup|GMMA|setmaxnreg')


def consts_of(ptx, kernel):
    """The kernel's launch constants from the metadata, NAME=VALUE sorted."""
    out, cur = [], None
    for line in ptx.splitlines():
        if not line.startswith('// tilec-meta'):
            if out or cur:
                break
            continue
        f = line.split()
        if f[2] == 'kernel':
            cur = f[3]
        elif f[2] == 'const' and cur == kernel:
            out.append('%s=%s' % (f[3], f[4]))
    return ' '.join(sorted(out))


def ptxas_report(ptxas, arch, path):
    """{kernel: (spill bytes, stack bytes, notes)}, or a string: ptxas's error."""
    r = subprocess.run([ptxas, '-arch=' + arch, '-v', path, '-o', os.devnull], capture_output=True, text=True)
    if r.returncode:
        return r.stderr.strip()[-2000:]
    rep, cur = {}, None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            rep[cur] = [0, 0, []]
            continue
        if cur is None:
            continue
        m = re.search(r'(\d+) bytes stack frame, (\d+) bytes spill stores', line)
        if m:
            rep[cur][1] = int(m.group(1))
            rep[cur][0] = int(m.group(2))
        if NOTE.search(line):
            rep[cur][2].append(line.strip())
    return rep


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tilec, ptxas = sys.argv[1], sys.argv[2]
    only = sys.argv[sys.argv.index('--only') + 1] if '--only' in sys.argv else ''
    if not (ptxas and os.access(ptxas, os.X_OK)):
        print('skipped: ptxas not found')
        sys.exit(77)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    jobs = []
    for file, flag_sets, sizes in GRIDS:
        if only not in file:
            continue
        for arch in ('sm_90a', 'sm_80'):
            for t in ('f16', 'bf16'):
                for flags in flag_sets:
                    for size in sizes(flags) if callable(sizes) else sizes:
                        jobs.append((file, arch, t, flags, size))
    seen, lock, bad, matched = {}, threading.Lock(), [], set()

    def one(job, tmp):
        file, arch, t, flags, size = job
        path = os.path.join(tmp, '%d.ptx' % threading.get_ident())
        cmd = [tilec, os.path.join(root, file), '--arch=' + arch, '-D', 'T=' + t, '--size', size] + flags + \
              ['-o', path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        where = '%s %s T=%s %s --size %s' % (file, arch, t, ' '.join(flags), size)
        if r.returncode:
            return ['%s: tilec failed: %s' % (where, r.stderr.strip()[-500:])]
        with open(path) as fp:
            ptx = fp.read()
        h = hashlib.sha1('\n'.join(l for l in ptx.splitlines() if not l.startswith('//')).encode()).hexdigest()
        with lock:
            rep = seen.get(h)
        if rep is None:
            rep = ptxas_report(ptxas, arch, path)
            with lock:
                seen[h] = rep
        if isinstance(rep, str):
            return ['%s: ptxas failed: %s' % (where, rep)]
        out = []
        for kernel, (spill, stack, notes) in sorted(rep.items()):
            key = (file, kernel, arch, t, consts_of(ptx, kernel))
            allowed = KNOWN.get(key)
            if allowed is not None:
                with lock:
                    matched.add(key)
            if notes:
                out.append('%s: %s: %s' % (where, kernel, '; '.join(notes)))
            if spill > (allowed or 0) or (stack and allowed is None):
                out.append('%s: %s: %d bytes spilled, %d bytes of stack [%s]' % (where, kernel, spill, stack, key[4]))
        return out

    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
            for out in ex.map(lambda j: one(j, tmp), jobs):
                bad.extend(out)
    if not only:
        for key in sorted(set(KNOWN) - matched):
            bad.append('KNOWN entry no variant matches any longer (remove it): %s' % (key,))
    bad = list(dict.fromkeys(bad))
    for b in bad:
        print('FAIL', b)
    print('%d compiles, %d distinct PTX, %d failures' % (len(jobs), len(seen), len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
