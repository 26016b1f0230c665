# matmul.tl through the library's JIT (the Python binding): the launch picks PERSIST's variant at
# short K (grid min(tiles, num_sms) from the runtime's plan) and the others elsewhere; C poisoned.
export TILEC_LIBRARY=$DEV/libtilec_jit.so.0
python3 - <<'PY'
import os, sys, torch
sys.path.insert(0, "python")
import tilec
for dt in (torch.float16, torch.bfloat16):
    mm = tilec.compile_file("examples/matmul.tl", defines={"T": "f16" if dt == torch.float16 else "bf16"}, device=0)["matmul"]
    for (m, n, k) in [(4096, 8192, 1024), (8192, 8192, 1024), (1000, 8192, 1000), (4095, 14336, 2048), (1000, 4096, 1024), (300, 200, 136), (4096, 4096, 4096)]:
        torch.manual_seed(m + n + k)
        A = (torch.rand(m, k, device="cuda") * 2 - 1).to(dt)
        B = (torch.rand(k, n, device="cuda") * 2 - 1).to(dt)
        C = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
        mm(A, B, C)
        torch.cuda.synchronize()
        ref = A.float() @ B.float()
        err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(20):
            s.record(); mm(A, B, C); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
        tc = []
        for _ in range(20):
            s.record(); torch.matmul(A, B); e.record(); torch.cuda.synchronize(); tc.append(s.elapsed_time(e))
        ts.sort(); tc.sort()
        ok = err == err and err < (1e-2 if dt == torch.float16 else 2e-2)
        print(f"{dt} {m}x{n}x{k}: err {err:.1e} {'ok' if ok else 'WRONG'}; JIT launch {ts[10]*1e3:.1f} us, cuBLAS {tc[10]*1e3:.1f} us, ratio {tc[10]/ts[10]:.3f}", flush=True)
PY
