"""tlcuda.py: what the GPU scripts share (sweep_rows.py, sweep_gemm.py, explore_rows.py): tilec's PTX
loaded with cuModuleLoadData through ctypes into torch's context and launched with cuLaunchKernel on
torch's stream, its parameters and grid from the PTX's tilec-meta block (docs/abi.md), tensor maps
(TMA) encoded with cuTensorMapEncodeTiled as docs/abi.md says a host does; and timing with CUDA events.

Not a binding for users (issue 19 is): a test harness, with torch as the only dependency.
"""
import ctypes
import os
import statistics
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
# CUtensorMapDataType of the element types a tensor map may have
TMAP_DTYPE = {"u8": 0, "i8": 0, "e4m3": 0, "e5m2": 0, "u16": 1, "i16": 1, "u32": 2, "i32": 3, "u64": 4,
              "i64": 5, "f16": 6, "f32": 7, "f64": 8, "bf16": 9}
ESIZE = {"u8": 1, "i8": 1, "e4m3": 1, "e5m2": 1, "u16": 2, "i16": 2, "f16": 2, "bf16": 2, "u32": 4, "i32": 4,
         "f32": 4, "u64": 8, "i64": 8, "f64": 8}
SWIZZLE = {"none": 0, "32": 1, "64": 2, "128": 3}


class Driver:
    """cuModuleLoadData / cuLaunchKernel / cuTensorMapEncodeTiled in torch's (primary) context."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # makes the primary context current
        enc = getattr(self.cu, "cuTensorMapEncodeTiled", None)
        if enc is not None:
            P64, P32 = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
            enc.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, P64, P64, P32, P32,
                            ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
            enc.restype = ctypes.c_int
        self.encode = None if os.environ.get("TILEC_NO_TMA") == "1" else enc

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: CUresult {rc}")

    def load(self, ptx):
        mod = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx.encode() + b"\0")),
                   "cuModuleLoadData")
        return mod

    def function(self, mod, name, smem):
        fn = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
        if smem > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.check(self.cu.cuFuncSetAttribute(fn, 8, ctypes.c_int(smem)), "cuFuncSetAttribute")
        return fn

    def tensor_map(self, ptr, dims, elem, box, swizzle, elem_strides=None):
        """A CUtensorMap (128 bytes, 64-byte aligned) in a buffer kept by the caller, or None if the
        driver cannot make one (no encoder, TILEC_NO_TMA=1, an alignment the copy engine refuses).
        elem_strides: a view's strides in elements (outermost first; None: contiguous)."""
        if self.encode is None or elem not in TMAP_DTYPE:
            return None
        r, e = len(dims), ESIZE[elem]
        strides, s = [], e
        for d in reversed(dims[1:]):
            s *= d
            strides.append(s)
        if elem_strides is not None:  # the view's own row strides, innermost first, in bytes
            if elem_strides[-1] != 1:
                return None
            strides = [st * e for st in reversed(elem_strides[:-1])]
        buf = ctypes.create_string_buffer(128 + 64)
        addr = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 64
        rc = self.encode(ctypes.c_void_p(addr), TMAP_DTYPE[elem], r, ctypes.c_void_p(ptr),
                         (ctypes.c_uint64 * r)(*reversed(dims)), (ctypes.c_uint64 * max(1, r - 1))(*strides),
                         (ctypes.c_uint32 * r)(*reversed(box)), (ctypes.c_uint32 * r)(*([1] * r)), 0,
                         SWIZZLE[swizzle], 2, 0)
        return (buf, addr) if rc == 0 else None

    def launch(self, fn, grid, threads, smem, addrs):
        """addrs: the address of each parameter's bytes (cuLaunchKernel's kernelParams)."""
        arr = (ctypes.c_void_p * len(addrs))(*addrs)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(self.cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], threads, 1, 1, smem, stream, arr, None),
                   "cuLaunchKernel")


def parse_meta(ptx):
    """{kernel: {threads, smem, params: [(kind, name, type, {key: value})], grid: [rpn tokens] x 3,
    consts: [(name, value)]}} of docs/abi.md."""
    kernels, cur = {}, None
    for line in ptx.splitlines():
        if not line.startswith("// tilec-meta"):
            if kernels:
                break
            continue
        w = line.split()[2:]
        if w[0] == "kernel":
            kv = dict(x.split("=") for x in w[2:])
            cur = kernels[w[1]] = {"threads": int(kv["threads"]), "smem": int(kv["smem"]), "params": [],
                                   "grid": [None] * 3, "consts": []}
        elif w[0] == "param":
            kv = dict(x.split("=", 1) for x in w[5:] if "=" in x)
            if "required" in w[5:]:  # tmap_ok of a kernel compiled with --tma-only (docs/abi.md)
                kv["required"] = "1"
            cur["params"].append((w[2], w[3], w[4], kv))
        elif w[0] == "grid":
            cur["grid"][int(w[1])] = w[2:]
        elif w[0] == "const":
            cur["consts"].append((w[1], int(w[2])))
    return kernels


def rpn(tokens, env):
    st = []
    for t in tokens:
        if t in ("+", "-", "*", "/", "%", "min", "max", "ceildiv"):
            b, a = st.pop(), st.pop()
            # only the operator asked for (a + 0 must not divide by zero on the way)
            st.append({"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: int(a / b),
                       "%": lambda: a - int(a / b) * b, "min": lambda: min(a, b), "max": lambda: max(a, b),
                       "ceildiv": lambda: (a + b - 1) // b}[t]())
        elif t.lstrip("-").isdigit():
            st.append(int(t))
        else:
            st.append(env[t])
    return st[0]


class Kernel:
    def __init__(self, drv, tilec, path, name, dtype, sizes=None, flags=(), quiet=False, tag=""):
        """sizes: {"M": m, "N": n} compiles the variant a launch at those sizes gets (--size: the
        launch constants' values there, as the JIT's tl_launch would); None: the generic variant.
        flags: more tilec flags (-D settings)."""
        out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tlcuda_{name}_{dtype}{tag}.ptx")
        flags = list(flags) + (["--size", ",".join(f"{k}={v}" for k, v in sizes.items())] if sizes else [])
        tdef = ["-D", f"T={dtype}"] if dtype else []  # None: a kernel without the type constant T
        subprocess.run([tilec, path, "--kernel", name, *tdef, *flags, "-o", out], check=True,
                       stderr=subprocess.DEVNULL if quiet else None)
        ptx = open(out).read()
        self.meta = parse_meta(ptx)[name]
        self.variant = " ".join(f"{k}={v}" for k, v in self.meta["consts"])
        self.drv, self.name = drv, name
        self.fn = drv.function(drv.load(ptx), name, self.meta["smem"])
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.maps = {}  # (param index, pointer, dims) -> encoded map, as the runtime caches them
        self.tma = None  # whether the last launch passed tensor maps

    def __call__(self, **args):
        env, keep, addrs, tensors, ok = {"num_sms": self.sms}, [], [], [], True
        bound = {}  # sizes a view's strides give (tensors declared with strides(...): docs/abi.md)
        for i, (kind, pname, ptype, kv) in enumerate(self.meta["params"]):
            if kind == "tensor":
                v = args[pname]
                tensors.append(v)
                if "strides" in kv:  # a view: its torch strides bind the stride sizes
                    for d, st in enumerate(kv["strides"].split(",")):
                        have = v.stride(d)
                        want = int(st) if st.isdigit() else bound.setdefault(st, args.get(st, have))
                        if have != want and v.shape[d] > 1:
                            takes = st if st.isdigit() else f"{st} = {want}"
                            raise RuntimeError(f"{self.name}: {pname} has stride {have} in dimension {d}, "
                                               f"the kernel takes {takes}")
                elif not v.is_contiguous():
                    raise RuntimeError(f"{self.name}: {pname} is not contiguous, and declared without strides")
                p = ctypes.c_void_p(v.data_ptr())
            elif kind == "size":
                env[pname] = args[pname] if pname in args else bound[pname]
                p = ctypes.c_int32(env[pname])
            elif kind == "scalar":
                v = args[pname]
                p = ctypes.c_float(v) if ptype == "f32" else ctypes.c_int32(v)
            elif kind == "tmap":
                t = tensors[int(kv["tensor"])] if int(kv["tensor"]) < len(tensors) else None
                box = [int(b) for b in kv["box"].split(",")]
                key = (i, t.data_ptr(), tuple(t.shape), tuple(t.stride()))
                if key not in self.maps:
                    view = list(t.stride()) if "strides" in self.meta["params"][int(kv["tensor"])][3] else None
                    self.maps[key] = self.drv.tensor_map(t.data_ptr(), list(t.shape), ptype, box, kv["swizzle"],
                                                         view)
                m = self.maps[key]
                if m is None:
                    ok = False
                    p = ctypes.create_string_buffer(128)
                else:
                    keep.append(m[0])
                    addrs.append(m[1])
                    continue
            elif kind == "tmap_ok":
                if not ok and "required" in kv:
                    raise RuntimeError(f"{self.name}: compiled with --tma-only, and these tensors cannot have "
                                       "tensor maps")
                self.tma = ok
                p = ctypes.c_uint32(1 if ok else 0)
            else:
                raise RuntimeError(f"parameter kind {kind} unknown to tlcuda.py")
            keep.append(p)
            addrs.append(ctypes.addressof(p))
        grid = [rpn(g, env) for g in self.meta["grid"]]
        if min(grid) > 0:
            self.drv.launch(self.fn, grid, self.meta["threads"], self.meta["smem"], addrs)


def w4_weights(n, k, dtype=torch.half):
    """Random 4-bit weights as stdlib/gemm.tl's gemm_w4a16 takes them: (Wq u8 [n, ceil(k / 2)], column 2c
    in the low four bits of byte c and 2c + 1 in the high four; S [n, ceil(k / 128)], a scale per
    group of 128, in dtype (the kernel's T); W f32 [n, k] = (q - 8) * S, exact, which the kernel rounds
    to T)."""
    q = torch.randint(0, 16, (n, k), device="cuda", dtype=torch.int32)
    sc = (torch.rand(n, (k + 127) // 128, device="cuda") * 0.01 + 0.001).to(dtype)
    qp = torch.zeros(n, (k + 1) // 2, device="cuda", dtype=torch.int32)
    qp[:, : (k + 1) // 2] = q[:, 0::2]
    qp[:, : k // 2] |= q[:, 1::2] << 4
    return qp.to(torch.uint8), sc, (q.float() - 8) * sc.float().repeat_interleave(128, dim=1)[:, :k]


def config_compiler(flags, tilec):
    """A config's flags may start with --tilec=PATH (an A/B of two builds in one run): (the compiler, the
    remaining flags); otherwise (tilec, flags)."""
    if flags and flags[0].startswith("--tilec="):
        return flags[0][len("--tilec="):], flags[1:]
    return tilec, flags


def timed(fn, reps, per_graph=10):
    """Milliseconds per call on the GPU: per_graph calls captured in a CUDA graph, the graph replayed
    reps times between events, the median divided by per_graph. So a small launch is timed on the GPU,
    not at the pace Python issues launches (ctypes or torch dispatch: tens of microseconds)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm-up on the capture stream (allocations, Triton's first launch)
        with torch.cuda.graph(g, stream=s):
            for _ in range(per_graph):
                fn()
    torch.cuda.current_stream().wait_stream(s)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / per_graph)
    return statistics.median(times)


def script_args(doc):
    """The GPU scripts' command line: (TILEC, OUTDIR, the other arguments), or None after printing doc
    when TILEC and OUTDIR are missing."""
    args = sys.argv[1:]
    if len(args) < 2:
        print(doc)
        return None
    return args[0], args[1], args[2:]


def gpu_script(doc, name):
    """The common start of a checking-and-timing script: (TILEC, OUTDIR, reps (--reps, default 20),
    Driver(), the report's first lines), or None after saying why (doc printed; no GPU)."""
    parsed = script_args(doc)
    if not parsed:
        return None
    tilec, outdir, args = parsed
    reps = int(args[args.index("--reps") + 1]) if "--reps" in args else 20
    if not torch.cuda.is_available():
        print(f"{name}: no GPU", file=sys.stderr)
        return None
    head = [f"`python3 tests/gpu/{name}.py` on {torch.cuda.get_device_name(0)}, torch {torch.__version__}.", ""]
    return tilec, outdir, reps, Driver(), head


def write_report(outdir, name, lines):
    """Writes lines to OUTDIR/name (made if needed) and prints them."""
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, name), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
