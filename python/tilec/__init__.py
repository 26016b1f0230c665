"""tilec from Python: compile .tl source with tilec's JIT and launch its kernels on torch / CuPy
tensors on the GPU, or on NumPy arrays on the CPU device (tilec's interpreter).

    import tilec
    add = tilec.compile(open("examples/vector_add.tl").read())["vector_add"]
    add(a, b, c)                       # C = A + B; N bound from the shapes

Pure Python over libtilec_jit.so (ctypes); nothing else is needed to import it, and the library is
loaded on first use: TILEC_LIBRARY (a path), else the installed tree's, else the build tree's
(build/packaging/), else the loader's (ctypes.util.find_library). docs/python.md has the whole story.
"""
import os as _os

from . import _lib
from ._core import Kernel, Module, cache_dir, cache_stats, synchronize
from ._core import _compile
from ._core import context as _context
from ._errors import CompileError, KernelNotFound, LaunchError, TilecError

__all__ = ["compile", "compile_file", "Module", "Kernel", "TilecError", "CompileError", "LaunchError",
           "KernelNotFound", "synchronize", "cache_dir", "cache_stats", "device_info", "version", "build_id",
           "library_path", "stdlib_dir"]


def compile(src, defines=None, arch=None, device=None, *, opt_level=3, kernel=None, filename=None, cache=True,
            line_info=False):
    """Compile .tl source (str or bytes) through the JIT into a module loaded on `device`.

    defines: {NAME: VALUE} (or pairs), -D overrides of kernel constants, values str()'d.
    arch: "sm_80" .. "sm_90a"; None: the device's (sm_90a on the CPU device).
    device: None (device 0: the GPU, or what $TILEC_DEVICE says: cpu, auto), "cpu", "cuda", "cuda:N",
        an int, or a torch.device.
    opt_level: 0..3. kernel: compile only this kernel. filename: the name diagnostics print ("<jit>").
    cache: True (memory and disk: the cache C hosts share), "memory" (no disk), False (none).
    line_info: .file / .loc line directives in the PTX.

    Raises CompileError (the rendered diagnostics) for a source with errors, TilecError otherwise.
    """
    return _compile(src, None, defines, arch, device, opt_level, kernel, filename, cache, line_info)


def compile_file(path, defines=None, arch=None, device=None, *, opt_level=3, kernel=None, filename=None,
                 cache=True, line_info=False):
    """compile() of a file; its path is the diagnostics' filename unless `filename` says otherwise."""
    return _compile(None, path, defines, arch, device, opt_level, kernel, filename, cache, line_info)


def device_info(device=None):
    """The device of `device`'s context (tl_device_info) as a dict: ordinal (-1 for the CPU device),
    name, cc, sm_count, max_smem_per_block, total_memory, driver_version."""
    return dict(_context(device).info)


def version():
    """The library's version, "0.1.0"."""
    return _lib.lib().tilec_version().decode()


def build_id():
    """16 hex digits identifying the compiler's build (part of every cache key)."""
    return _lib.lib().tilec_build_id().decode()


def library_path():
    """The path (or name) of the loaded libtilec_jit.so, loading it if need be."""
    _lib.lib()
    return _lib.library.path


def stdlib_dir():
    """The folder of the standard library's .tl files (stdlib/ of the source tree, or the installed
    share/tilec/stdlib), or None when neither is there."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    # python/tilec/../../stdlib in the source tree; share/tilec/python/tilec/../../stdlib installed
    d = _os.path.normpath(_os.path.join(here, "..", "..", "stdlib"))
    return d if _os.path.isfile(_os.path.join(d, "softmax.tl")) else None
