"""Contexts, modules, kernels and launches over the C API (tilec_jit.h, tilec_runtime.h)."""
import ctypes
import operator
import os
import sys
import threading

from . import _lib as L
from ._errors import CompileError, KernelNotFound, LaunchError, TilecError

# ---------------------------------------------------------------------------------------- devices


def _ordinal(device):
    """A device spec to tl_context_create's ordinal: None (0; $TILEC_DEVICE decides cpu / gpu / auto),
    "cpu", "cuda" / "gpu", "cuda:N", an int N, or anything with .type and .index (torch.device)."""
    if device is None:
        return 0
    if isinstance(device, bool):
        raise ValueError("device: expected None, 'cpu', 'cuda', 'cuda:N' or an int, got %r" % (device,))
    if isinstance(device, int):
        return device
    if not isinstance(device, str) and hasattr(device, "type"):  # torch.device
        device = device.type if getattr(device, "index", None) is None else "%s:%d" % (device.type, device.index)
    if isinstance(device, str):
        d = device.strip().lower()
        if d == "cpu":
            return L.TL_DEVICE_CPU
        if d in ("cuda", "gpu"):
            return 0
        for prefix in ("cuda:", "gpu:"):
            if d.startswith(prefix) and d[len(prefix):].isdigit():
                return int(d[len(prefix):])
    raise ValueError("device: expected None, 'cpu', 'cuda', 'cuda:N' or an int, got %r" % (device,))


class Context:
    """One tl_context per device ordinal, made on first use and kept for the process (never destroyed:
    modules may outlive any scope, and the process's exit frees it)."""

    def __init__(self, ordinal):
        lib = L.lib()
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        status = lib.tl_context_create(ordinal, ctypes.byref(handle), err, len(err))
        if status != L.TL_OK:
            msg = err.value.decode(errors="replace")
            if status in (1, 2):  # TL_ERR_NO_DRIVER, TL_ERR_NO_DEVICE
                msg += " (for the CPU device, pass device='cpu' or set TILEC_DEVICE=cpu)"
            raise TilecError(msg, L.status_name(status))
        self.lib = lib
        self.handle = handle.value
        info = L.DeviceInfo()
        if lib.tl_context_device(self.handle, ctypes.byref(info)) != L.TL_OK:
            raise TilecError(self.message(), "TL_ERR_DRIVER")
        self.ordinal = info.ordinal
        self.is_cpu = info.ordinal == L.TL_DEVICE_CPU
        self.info = {"ordinal": info.ordinal, "name": info.name.decode(errors="replace"),
                     "cc": (info.cc_major, info.cc_minor), "sm_count": info.sm_count,
                     "max_smem_per_block": info.max_smem_per_block, "total_memory": info.total_memory,
                     "driver_version": info.driver_version}

    def message(self):
        m = self.lib.tl_context_message(self.handle)
        return m.decode(errors="replace") if m else ""

    def check(self, status, what, error=TilecError):
        if status != L.TL_OK:
            raise error("%s: %s" % (what, self.message()) if what else self.message(), L.status_name(status))

    def __repr__(self):
        return "<tilec context %d: %s>" % (self.ordinal, self.info["name"])


_contexts = {}
_contexts_lock = threading.Lock()


def context(device=None):
    """The context of `device` (see compile), made on first use."""
    ordinal = _ordinal(device)
    ctx = _contexts.get(ordinal)
    if ctx is None:
        with _contexts_lock:
            ctx = _contexts.get(ordinal)
            if ctx is None:
                ctx = _contexts[ordinal] = Context(ordinal)
    return ctx


# ---------------------------------------------------------------------------------------- compile
_SEVERITIES = ("error", "warning", "note")


def _options(defines, arch, opt_level, kernel, filename, cache, line_info, keep):
    opt = L.JitOptions()
    opt.filename = filename.encode() if filename is not None else None
    opt.arch = arch.encode() if arch is not None else None
    if not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise ValueError("opt_level: expected 0..3, got %r" % (opt_level,))
    opt.opt_level = opt_level
    items = list(defines.items()) if hasattr(defines, "items") else list(defines or ())
    if items:
        arr = (L.Define * len(items))()
        for i, (name, value) in enumerate(items):
            if isinstance(value, bool):
                value = int(value)
            arr[i].name = str(name).encode()
            arr[i].value = str(value).encode()
        keep.append(arr)
        opt.defines = arr
        opt.ndefines = len(items)
    opt.kernel = kernel.encode() if kernel is not None else None
    flags = 0
    if cache is False or cache is None:
        flags |= L.TL_JIT_NO_CACHE
    elif cache == "memory":
        flags |= L.TL_JIT_NO_DISK_CACHE
    elif cache is not True:
        raise ValueError("cache: expected True, 'memory' or False, got %r" % (cache,))
    if line_info:
        flags |= L.TL_JIT_LINE_INFO
    opt.flags = flags
    records = []

    def on_diagnostic(user, d):
        r = d.contents
        records.append((_SEVERITIES[r.severity] if 0 <= r.severity < 3 else str(r.severity),
                        r.file.decode(errors="replace") if r.file else "", r.line, r.column,
                        r.message.decode(errors="replace") if r.message else ""))

    callback = L.DIAGNOSTIC_CALLBACK(on_diagnostic)
    keep.append(callback)
    opt.on_diagnostic = callback
    return opt, records


def _compile(src, path, defines, arch, device, opt_level, kernel, filename, cache, line_info):
    ctx = context(device)
    keep = []
    opt, records = _options(defines, arch, opt_level, kernel, filename, cache, line_info, keep)
    handle = ctypes.c_void_p()
    if path is not None:
        status = ctx.lib.tl_module_compile_file(ctx.handle, os.fsencode(path), ctypes.byref(opt), ctypes.byref(handle))
    else:
        data = src.encode() if isinstance(src, str) else bytes(src)
        status = ctx.lib.tl_module_compile(ctx.handle, data, len(data), ctypes.byref(opt), ctypes.byref(handle))
    if status == L.TL_ERR_COMPILE:
        raise CompileError(ctx.message(), records)
    ctx.check(status, None)
    return Module(ctx, handle.value, records)


class Module:
    """A compiled, loaded module: ``module["name"]`` is a kernel; ``module.kernels`` their names;
    ``module.diagnostics`` the warnings and notes of its compilation (empty when it came from the
    cache, which compiles nothing)."""

    def __init__(self, ctx, handle, diagnostics):
        self._ctx = ctx
        self._handle = handle
        self._lib = ctx.lib
        self._kernels = {}
        self.diagnostics = diagnostics
        meta = self._lib.tl_module_meta(handle)
        self.kernels = [self._lib.tl_meta_kernel(meta, i).contents.name.decode()
                        for i in range(self._lib.tl_meta_kernel_count(meta))]

    @property
    def device(self):
        return self._ctx.info

    def __getitem__(self, name):
        k = self._kernels.get(name)
        if k is None:
            if not isinstance(name, str):
                raise TypeError("kernel names are strings, got %r" % (name,))
            handle = ctypes.c_void_p()
            status = self._lib.tl_module_get_kernel(self._handle, name.encode(), ctypes.byref(handle))
            if status != L.TL_OK:
                error = KernelNotFound if status == L.TL_ERR_NOT_FOUND else TilecError
                raise error(self._ctx.message(), L.status_name(status))
            k = self._kernels[name] = Kernel(self, handle.value)
        return k

    def __contains__(self, name):
        return name in self.kernels

    def __iter__(self):
        return iter(self.kernels)

    def __len__(self):
        return len(self.kernels)

    def __repr__(self):
        return "<tilec module %s on %s>" % (self.kernels, self._ctx.info["name"])

    def __del__(self):
        try:
            if self._handle:
                self._lib.tl_module_unload(self._handle)
                self._handle = None
        except Exception:  # interpreter shutdown
            pass


# ------------------------------------------------------------------------------------- arguments
# __array_interface__ / __cuda_array_interface__ typestr (kind, itemsize) -> tl_dtype
_TYPESTR = {("b", 1): "bool", ("i", 1): "i8", ("i", 2): "i16", ("i", 4): "i32", ("i", 8): "i64",
            ("u", 1): "u8", ("u", 2): "u16", ("u", 4): "u32", ("u", 8): "u64",
            ("f", 2): "f16", ("f", 4): "f32", ("f", 8): "f64"}
_TYPESTR = {k: L.DTYPES[v] for k, v in _TYPESTR.items()}
# the dtype names of ml_dtypes' types NumPy lacks -> tl_dtype name
_ML_DTYPES = {"bfloat16": "bf16", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
_torch_dtypes = None  # torch.dtype -> tl_dtype, made when the first torch tensor is seen


def _torch_dtype_map(torch):
    global _torch_dtypes
    if _torch_dtypes is None:
        m = {}
        for tname, tl in (("bool", "bool"), ("int8", "i8"), ("int16", "i16"), ("int32", "i32"), ("int64", "i64"),
                          ("uint8", "u8"), ("uint16", "u16"), ("uint32", "u32"), ("uint64", "u64"),
                          ("float16", "f16"), ("bfloat16", "bf16"), ("float32", "f32"), ("float64", "f64"),
                          ("float8_e4m3fn", "e4m3"), ("float8_e5m2", "e5m2")):
            dt = getattr(torch, tname, None)  # an older torch lacks some (uint16..uint64, float8_*)
            if dt is not None:
                m[dt] = L.DTYPES[tl]
        _torch_dtypes = m
    return _torch_dtypes


class _Tensor:
    """What a launch needs of an array: address, tl_dtype, shape, strides (elements; None: contiguous);
    host or device; writable; nbytes: the bytes from its first element to its last."""
    __slots__ = ("ptr", "dtype", "shape", "nbytes", "host", "writable", "torch_device", "strides")

    def __init__(self, ptr, dtype, shape, nbytes, host, writable, torch_device=None, strides=None):
        self.ptr, self.dtype, self.shape, self.nbytes = ptr, dtype, shape, nbytes
        self.host, self.writable, self.torch_device, self.strides = host, writable, torch_device, strides


def _span_bytes(shape, strides, itemsize):
    """The bytes a view spans, its first element to its last (0 when empty)."""
    if any(e == 0 for e in shape):
        return 0
    return (sum((e - 1) * s for e, s in zip(shape, strides)) + 1) * itemsize


def _contiguous(shape, strides, itemsize):
    """Row-major and dense (strides in bytes; dims of extent 1 may have any stride)."""
    if strides is None:
        return True
    expect = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent == 0:
            return True
        if extent != 1 and stride != expect:
            return False
        expect *= extent
    return True


def _where(i, name):
    return "argument %d ('%s')" % (i, name) if name else "argument %d" % i


def _from_interface(x, iface, host, i, name, view=False):
    shape = tuple(int(e) for e in iface["shape"])
    typestr = iface["typestr"]
    dtype = None
    nd = getattr(x, "dtype", None)
    if getattr(nd, "name", None) in _ML_DTYPES:  # ml_dtypes' NumPy arrays ('<V2', '|V1')
        dtype = L.DTYPES[_ML_DTYPES[nd.name]]
    elif len(typestr) >= 3 and typestr[0] in "<|=":
        dtype = _TYPESTR.get((typestr[1], int(typestr[2:]) if typestr[2:].isdigit() else 0))
    elif len(typestr) >= 3 and typestr[0] == ">":
        raise LaunchError("%s: a big-endian array (%s) cannot be passed" % (_where(i, name), typestr))
    if dtype is None:
        raise LaunchError("%s: element type '%s' has no tilec type (bool, i8..i64, u8..u64, f16, bf16, f32, f64, "
                          "e4m3, e5m2)" % (_where(i, name), typestr))
    itemsize = L.SIZES[dtype]
    bstrides = iface.get("strides")
    if view and bstrides is not None and not _contiguous(shape, bstrides, itemsize):
        # a parameter declared with strides(...): the array's own strides, in elements, positive
        if any(b <= 0 or b % itemsize for b in bstrides):
            raise LaunchError("%s: strides %s bytes: a view's strides are positive multiples of the element size"
                              % (_where(i, name), list(bstrides)))
        strides = tuple(b // itemsize for b in bstrides)
        data = iface.get("data")
        if not isinstance(data, tuple) or iface.get("offset"):
            raise LaunchError("%s: the array interface gives no address or has an offset" % _where(i, name))
        return _Tensor(int(data[0] or 0), dtype, shape, _span_bytes(shape, strides, itemsize), host, not data[1],
                       strides=strides)
    if not _contiguous(shape, bstrides, itemsize):
        raise LaunchError("%s: the array is not contiguous (shape %s, strides %s bytes): tilec takes row-major "
                          "dense tensors; pass a contiguous copy (numpy.ascontiguousarray, .contiguous())"
                          % (_where(i, name), list(shape), list(iface["strides"])))
    data = iface.get("data")
    if not isinstance(data, tuple):
        raise LaunchError("%s: the array interface gives no address (data=%r)" % (_where(i, name), type(data)))
    if iface.get("offset"):
        raise LaunchError("%s: an array interface with an offset is not supported" % _where(i, name))
    nbytes = itemsize
    for e in shape:
        nbytes *= e
    return _Tensor(int(data[0] or 0), dtype, shape, nbytes, host, not data[1])


def _tensor(x, i, name, torch, view=False):
    """The _Tensor of x, or None if x is not an array at all. view: the parameter is declared with
    strides(...), so a non-contiguous array passes its strides."""
    if torch is not None and isinstance(x, torch.Tensor):
        dtype = _torch_dtype_map(torch).get(x.dtype)
        if dtype is None:
            raise LaunchError("%s: torch dtype %s has no tilec type" % (_where(i, name), x.dtype))
        if view and not x.is_contiguous():
            strides = tuple(x.stride())
            if x.is_cuda:
                return _Tensor(x.data_ptr(), dtype, tuple(x.shape), 0, False, True, x.get_device(), strides)
            if x.device.type != "cpu":
                raise LaunchError("%s: a tensor on %s: tilec takes CUDA and CPU tensors" % (_where(i, name), x.device))
            return _Tensor(x.data_ptr(), dtype, tuple(x.shape), _span_bytes(x.shape, strides, x.element_size()), True,
                           True, strides=strides)
        if not x.is_contiguous():
            raise LaunchError("%s: the tensor is not contiguous (shape %s, stride %s): tilec takes row-major "
                              "dense tensors; pass x.contiguous()" % (_where(i, name), list(x.shape), list(x.stride())))
        if x.is_cuda:
            return _Tensor(x.data_ptr(), dtype, tuple(x.shape), 0, False, True, x.get_device())
        if x.device.type != "cpu":
            raise LaunchError("%s: a tensor on %s: tilec takes CUDA and CPU tensors" % (_where(i, name), x.device))
        return _Tensor(x.data_ptr(), dtype, tuple(x.shape), x.numel() * x.element_size(), True, True)
    iface = getattr(x, "__cuda_array_interface__", None)
    if iface is not None:
        return _from_interface(x, iface, False, i, name, view)
    iface = getattr(x, "__array_interface__", None)
    if iface is not None:
        return _from_interface(x, iface, True, i, name, view)
    return None


_INT64_MIN, _INT64_END, _UINT64_END = -(1 << 63), 1 << 63, 1 << 64


def _scalar(slot, x, dtype, i, name):
    """Fill slot (an L.Arg) with scalar x as tl_dtype `dtype`."""
    slot.kind = L.TL_ARG_SCALAR
    slot.dtype = dtype
    slot.ptr = 0
    slot.rank = 0
    if dtype in L.FLOATS:
        try:
            slot.value.f = float(x)
        except (TypeError, ValueError):
            raise LaunchError("%s: expected a number for %s, got %s" % (_where(i, name), L.DTYPE_NAMES[dtype],
                                                                       type(x).__name__)) from None
        return
    try:
        v = operator.index(x)
    except TypeError:
        raise LaunchError("%s: expected an integer for %s, got %s" % (_where(i, name), L.DTYPE_NAMES[dtype],
                                                                     type(x).__name__)) from None
    if dtype in L.UNSIGNED:
        if not 0 <= v < _UINT64_END:
            raise LaunchError("%s: %d is out of range for %s" % (_where(i, name), v, L.DTYPE_NAMES[dtype]))
        slot.value.u = v
    else:
        if not _INT64_MIN <= v < _INT64_END:
            raise LaunchError("%s: %d is out of range for %s" % (_where(i, name), v, L.DTYPE_NAMES[dtype]))
        slot.value.i = v


def _is_scalar_like(x):
    """A Python number or a 0-d array / NumPy scalar: what a scalar parameter takes."""
    if isinstance(x, (bool, int, float)):
        return True
    iface = getattr(x, "__array_interface__", None)
    return iface is not None and len(iface["shape"]) == 0


def _torch_stream(torch, index):
    """torch's current stream on device `index`, as a CUstream (an int)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton calls: no Stream object made
    if raw is not None:
        return raw(index)
    return torch.cuda.current_stream(index).cuda_stream


def _stream_handle(stream):
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream or None
    for attr in ("cuda_stream", "ptr", "handle"):  # torch.cuda.Stream, cupy Stream
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v or None
    raise ValueError("stream: expected None, an int (a CUstream) or a stream object, got %r" % (stream,))


class Kernel:
    """A kernel of a module: call it with its .tl parameters in order (tensors, scalars); the sizes
    are bound from the tensors' shapes by tl_launch. ``params``: [(name, kind, dtype, rank)].

    A kernel object is not meant to be called from two threads at once (neither is a tl_context)."""

    def __init__(self, module, handle):
        self._module = module  # keeps the module loaded
        self._ctx = module._ctx
        self._handle = handle
        self._launch = module._lib.tl_launch
        info = module._lib.tl_kernel_get_info(handle).contents
        self.name = info.name.decode()
        self.threads = info.threads
        self.smem = info.smem
        kinds = {L.TL_PARAM_TENSOR: "tensor", L.TL_PARAM_SCALAR: "scalar", L.TL_PARAM_SIZE: "size"}
        self.params = []
        for j in range(info.nargs):
            p = info.params[j]
            self.params.append((p.name.decode(), kinds.get(p.kind, str(p.kind)), L.DTYPE_NAMES[p.dtype], p.rank))
        self.sizes = [info.params[j].name.decode() for j in range(info.nargs, info.nargs + info.nsizes)]
        self._names = [p[0] for p in self.params]
        self._scalar_dtypes = [L.DTYPES[p[2]] if p[1] == "scalar" else None for p in self.params]
        # params declared with strides(...): their arrays may be views, passed with their strides
        self._views = [bool(info.strides and info.strides[j]) for j in range(info.nargs)]
        self._reserve(max(len(self.params), 1))

    def _reserve(self, n):
        """Room for n arguments: a tl_arg array and a shape buffer per argument, reused by every call."""
        self._args = (L.Arg * n)()
        self._slots = [self._args[j] for j in range(n)]
        self._shapes = [(ctypes.c_int64 * 8)() for _ in range(n)]
        self._strides = [(ctypes.c_int64 * 8)() for _ in range(n)]
        for slot, shp in zip(self._slots, self._shapes):
            slot.shape = shp
        self._cap = n

    def __repr__(self):
        sig = ", ".join("%s: %s%s" % (n, d, "[%d-d]" % r if k == "tensor" else "") for n, k, d, r in self.params)
        return "<tilec kernel %s(%s) on %s>" % (self.name, sig, self._ctx.info["name"])

    def __call__(self, *args, stream=None):
        n = len(args)
        if n > self._cap:
            self._reserve(n)
        ctx = self._ctx
        torch = sys.modules.get("torch")
        names, scalar_dtypes, slots = self._names, self._scalar_dtypes, self._slots
        nparams = len(names)
        host = []  # (index, _Tensor) of host tensors, for the CPU device's staging
        torch_device = None
        for i in range(n):
            x = args[i]
            name = names[i] if i < nparams else None
            sdt = scalar_dtypes[i] if i < nparams else None
            slot = slots[i]
            if sdt is not None and _is_scalar_like(x):
                _scalar(slot, x, sdt, i, name)
                continue
            t = _tensor(x, i, name, torch, i < nparams and self._views[i])
            if t is None:
                if isinstance(x, (bool, int, float)):  # a scalar where a tensor goes: tl_launch says so
                    _scalar(slot, x, L.TL_BOOL if isinstance(x, bool) else L.TL_I64 if isinstance(x, int)
                            else L.TL_F64, i, name)
                    continue
                raise LaunchError("%s: cannot pass an object of type %s (expected an array with "
                                  "__array_interface__ / __cuda_array_interface__, a torch tensor, or a number)"
                                  % (_where(i, name), type(x).__name__))
            if t.host != ctx.is_cpu:
                if ctx.is_cpu:
                    raise LaunchError("%s: a GPU array cannot be passed to a kernel on the CPU device; pass a "
                                      "host array (NumPy) or compile for the GPU" % _where(i, name))
                raise LaunchError("%s: a host array (NumPy, a CPU tensor) cannot be passed to a kernel on %s; "
                                  "use GPU arrays (torch CUDA tensors, CuPy), or the CPU device (device='cpu' or "
                                  "TILEC_DEVICE=cpu)" % (_where(i, name), ctx.info["name"]))
            if t.torch_device is not None:
                if t.torch_device != ctx.ordinal:
                    raise LaunchError("%s: the tensor is on cuda:%d, the kernel on cuda:%d"
                                      % (_where(i, name), t.torch_device, ctx.ordinal))
                torch_device = t.torch_device
            rank = len(t.shape)
            shp = self._shapes[i]
            if rank > len(shp):
                shp = self._shapes[i] = (ctypes.c_int64 * rank)()
                slot.shape = shp
            for j in range(rank):
                shp[j] = t.shape[j]
            slot.kind = L.TL_ARG_TENSOR
            slot.dtype = t.dtype
            slot.ptr = t.ptr
            slot.rank = rank
            if t.strides is None:
                slot.value.strides = None  # contiguous (and no scalar's bits left in the union)
            else:
                st = self._strides[i]
                if rank > len(st):
                    st = self._strides[i] = (ctypes.c_int64 * rank)()
                for j in range(rank):
                    st[j] = t.strides[j]
                slot.value.strides = st
            if ctx.is_cpu:
                host.append((i, t))
        if ctx.is_cpu:
            return self._launch_cpu(n, host)
        if stream is None and torch_device is not None:
            stream = _torch_stream(torch, torch_device)
        status = self._launch(self._handle, self._args, n, _stream_handle(stream))
        if status != 0:
            raise LaunchError(ctx.message(), L.status_name(status))

    def _launch_cpu(self, n, host):
        """The CPU device runs tensors that lie in its own allocations: each distinct host buffer is
        copied into one (tl_malloc, tl_memcpy_htod), the kernel runs (synchronously), and the writable
        buffers are copied back, also after a kernel that failed part way (what it stored stays
        stored, as on the GPU)."""
        ctx, lib = self._ctx, self._ctx.lib
        staged = {}  # (ptr, nbytes) -> device pointer
        order = []
        try:
            for i, t in host:
                if t.nbytes == 0:
                    self._slots[i].ptr = 0
                    continue
                key = (t.ptr, t.nbytes)
                d = staged.get(key)
                if d is None:
                    dp = ctypes.c_ulonglong()
                    ctx.check(lib.tl_malloc(ctx.handle, t.nbytes, ctypes.byref(dp)), "tl_malloc", LaunchError)
                    d = staged[key] = dp.value
                    order.append((t, d))
                    ctx.check(lib.tl_memcpy_htod(ctx.handle, d, t.ptr, t.nbytes), "tl_memcpy_htod", LaunchError)
                self._slots[i].ptr = d
            status = self._launch(self._handle, self._args, n, None)
            message = ctx.message() if status != 0 else ""
            if status == 0 or status == L.TL_ERR_KERNEL_FAILED:
                for t, d in order:
                    if t.writable:
                        ctx.check(lib.tl_memcpy_dtoh(ctx.handle, t.ptr, d, t.nbytes), "tl_memcpy_dtoh", LaunchError)
            if status != 0:
                raise LaunchError(message, L.status_name(status))
        finally:
            for _, d in order:
                lib.tl_free(ctx.handle, d)


# ------------------------------------------------------------------------------------- utilities


def synchronize(device=None):
    """Wait for the device's work (tl_synchronize); raises the first asynchronous launch failure."""
    ctx = context(device)
    ctx.check(ctx.lib.tl_synchronize(ctx.handle), "tl_synchronize")


def _cache(device):
    ctx = context(device)
    cache = ctx.lib.tl_context_jit_cache(ctx.handle)
    if not cache:
        raise TilecError("tl_context_jit_cache: " + ctx.message())
    return ctx, cache


def cache_dir(device=None):
    """The disk cache's folder of the device's context ("" when the disk cache is off)."""
    ctx, cache = _cache(device)
    d = ctx.lib.tl_jit_cache_dir(cache)
    return d.decode(errors="replace") if d else ""


def cache_stats(device=None):
    """The counters of the device's context's cache (tl_jit_stats) as a dict."""
    ctx, cache = _cache(device)
    s = L.JitStats()
    ctx.lib.tl_jit_cache_stats(cache, ctypes.byref(s))
    return {name: getattr(s, name) for name in L.STATS_FIELDS}
