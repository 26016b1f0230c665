#!/usr/bin/env python3
"""python_binding.py: the Python binding (python/tilec, docs/python.md) on the GPU with torch.

    python3 tests/gpu/python_binding.py TILEC_LIBRARY OUTDIR

TILEC_LIBRARY is libtilec_jit.so (build/packaging/ of a build). Checks, on torch CUDA tensors:
examples/vector_add.tl at a ragged size (exact), also launched inside `with torch.cuda.stream(s)`
(the binding launches on torch's current stream), and stdlib/softmax.tl in f16 (its default T) at
three shapes against torch.softmax in f32, and stdlib/gemm_fp8.tl on torch's float8_e4m3fn tensors
(the runtime's tensor maps for 8-bit floats) against a float64 product. Then the host overhead of one Python launch: the time
per call of add(a, b, c) over a loop of 1000 calls ended by torch.cuda.synchronize() (N = 4096, so
the GPU keeps up and the loop measures the host), beside a Triton kernel doing the same vector add
and torch.add(a, b, out=c), in the same process; the median of 7 loops each. Writes
OUTDIR/python_binding.md and prints it. Exit 1 when a result is wrong, 2 without a GPU or torch.
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def usage():
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if len(sys.argv) != 3:
    usage()
os.environ["TILEC_LIBRARY"] = os.path.abspath(sys.argv[1])  # read when the binding first needs it
OUTDIR = sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.dont_write_bytecode = True

try:
    import torch
except ImportError:
    print("python_binding: no torch", file=sys.stderr)
    sys.exit(2)
if not torch.cuda.is_available():
    print("python_binding: no GPU", file=sys.stderr)
    sys.exit(2)
try:
    import triton
    import triton.language as tlang
except ImportError:
    triton = None

import tilec  # noqa: E402

if triton is not None:
    @triton.jit
    def triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tlang.constexpr):
        offs = tlang.program_id(0) * BLOCK + tlang.arange(0, BLOCK)
        mask = offs < n
        x = tlang.load(x_ptr + offs, mask=mask)
        y = tlang.load(y_ptr + offs, mask=mask)
        tlang.store(out_ptr + offs, x + y, mask=mask)


def per_call_us(fn, calls=1000, loops=7):
    """Median over `loops` of the time per call of fn() in a loop of `calls`, synchronized at the end."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(loops):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main():
    dev = torch.cuda.current_device()
    ok = True
    lines = ["# The Python binding on the GPU", "",
             "tilec %s (build %s), %s; torch %s, triton %s; library %s" % (
                 tilec.version(), tilec.build_id(), torch.cuda.get_device_name(dev), torch.__version__,
                 triton.__version__ if triton else "missing", tilec.library_path()), "",
             "## Correctness", "", "| kernel | shape | max error | |", "|---|---|---|---|"]

    def row(name, shape, err, good):
        nonlocal ok
        ok = ok and good
        lines.append("| %s | %s | %.3g | %s |" % (name, "x".join(map(str, shape)), err, "ok" if good else "WRONG"))

    t0 = time.perf_counter()
    add = tilec.compile_file(os.path.join(ROOT, "examples", "vector_add.tl"), device=dev)["vector_add"]
    compile_ms = (time.perf_counter() - t0) * 1e3
    n = 1_000_003
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.full((n,), float("nan"), device="cuda")
    add(a, b, c)
    torch.cuda.synchronize()
    err = (c - (a + b)).abs().max().item()
    row("vector_add f32", (n,), err, err == 0)

    s = torch.cuda.Stream()
    c.fill_(float("nan"))
    torch.cuda.synchronize()
    with torch.cuda.stream(s):  # the binding launches on torch's current stream: s, here
        b2 = b * 2  # made on s: a launch on another stream could read b2 before it is written
        add(a, b2, c)
    s.synchronize()
    err = (c - (a + 2 * b)).abs().max().item()
    row("vector_add f32, on a side stream", (n,), err, err == 0)

    soft = tilec.compile_file(os.path.join(ROOT, "stdlib", "softmax.tl"), device=dev)["softmax"]  # T = f16
    for m, k in ((4096, 1000), (37, 4096), (8, 40000)):
        x = (3 * torch.randn(m, k, device="cuda")).half()
        y = torch.full_like(x, float("nan"))
        soft(x, y)
        ref = torch.softmax(x.float(), dim=1)
        err = (y.float() - ref).abs().max().item()
        row("softmax f16", (m, k), err, bool(torch.allclose(y.float(), ref, rtol=4e-3, atol=1e-4)))

    # 8-bit floats: torch's float8 tensors as e4m3 arguments, the runtime's tensor maps for them (TMA)
    fp8 = tilec.compile_file(os.path.join(ROOT, "stdlib", "gemm_fp8.tl"), device=dev)["gemm_fp8"]
    for m, n8, k in ((300, 200, 256), (1000, 4096, 1024)):
        a8 = (4 * torch.randn(m, k, device="cuda")).to(torch.float8_e4m3fn)
        b8 = (4 * torch.randn(n8, k, device="cuda")).to(torch.float8_e4m3fn)
        sa, sb = torch.rand(m, device="cuda") + 0.5, torch.rand(n8, device="cuda") + 0.5
        o = torch.full((m, n8), float("nan"), device="cuda", dtype=torch.bfloat16)
        fp8(a8, b8, sa, sb, o)
        want = (a8.double() @ b8.double().t()) * sa.double()[:, None] * sb.double()[None, :]
        mag = (a8.double().abs() @ b8.double().abs().t()) * sa.double()[:, None] * sb.double()[None, :]
        err = (((o.double() - want).abs() - want.abs() * 2.0 ** -8).clamp(min=0) / mag).max().item()
        row("gemm_fp8 e4m3 -> bf16 (error past bf16 rounding / sum of magnitudes)", (m, n8, k), err, err <= 2e-3)

    try:  # an error surfaces as LaunchError, not a crash
        add(a, b.half(), c)
        row("wrong dtype refused", (n,), 0, False)
    except tilec.LaunchError as e:
        row("wrong dtype refused: `%s`" % e, (n,), 0, "expected a tensor of f32, got f16" in str(e))

    small = 4096
    a, b, c = (torch.randn(small, device="cuda") for _ in range(3))
    timings = [("tilec binding: add(a, b, c)", per_call_us(lambda: add(a, b, c)))]
    if triton is not None:
        grid = (triton.cdiv(small, 1024),)
        triton_add[grid](a, b, c, small, BLOCK=1024)  # compile it before timing
        torch.cuda.synchronize()
        timings.append(("Triton: triton_add[grid](a, b, c, n, BLOCK=1024)",
                        per_call_us(lambda: triton_add[grid](a, b, c, small, BLOCK=1024))))
    timings.append(("torch.add(a, b, out=c)", per_call_us(lambda: torch.add(a, b, out=c))))
    add(a, b, c)
    torch.cuda.synchronize()
    row("vector_add f32 (timed size)", (small,), (c - (a + b)).abs().max().item(), bool(torch.equal(c, a + b)))

    base = timings[0][1]
    lines += ["", "## Host time per launch", "",
              "N = %d f32, 1000 calls then torch.cuda.synchronize(), median of 7 loops (the GPU work is "
              "negligible: this is the launch path's host time)." % small, "",
              "| launch | us per call | vs tilec |", "|---|---|---|"]
    for name, us in timings:
        lines.append("| %s | %.2f | %.2fx |" % (name, us, us / base))
    lines += ["", "First compile of vector_add through the binding (cache hit or miss, whichever it was): "
              "%.1f ms; cache folder %s; stats %s." % (compile_ms, tilec.cache_dir(dev), tilec.cache_stats(dev)),
              "", "Result: %s" % ("OK" if ok else "WRONG")]
    os.makedirs(OUTDIR, exist_ok=True)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUTDIR, "python_binding.md"), "w") as f:
        f.write(text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
