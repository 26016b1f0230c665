"""libtilec_jit.so through ctypes: where it is found, the structs of the public headers, the
prototypes of the functions the binding calls.

The structs mirror include/tilec.h, tilec_runtime.h and tilec_jit.h exactly (their layout is fixed
within a major version: docs/abi.md); tests/python/test_tilec.py checks every size and offset
against tests/abi/layout.txt. Enumerations are C ints.
"""
import ctypes
import ctypes.util
import os
import threading

from ._errors import TilecError

# ------------------------------------------------------------------------------------------ enums
TL_OK = 0
STATUS_NAMES = ("TL_OK", "TL_ERR_NO_DRIVER", "TL_ERR_NO_DEVICE", "TL_ERR_DRIVER", "TL_ERR_PTX_REJECTED",
                "TL_ERR_BAD_METADATA", "TL_ERR_NOT_FOUND", "TL_ERR_BAD_ARGUMENT", "TL_ERR_OUT_OF_MEMORY",
                "TL_ERR_IO", "TL_ERR_COMPILE", "TL_ERR_UNSUPPORTED", "TL_ERR_KERNEL_FAILED")
TL_ERR_NOT_FOUND = 6
TL_ERR_BAD_ARGUMENT = 7
TL_ERR_COMPILE = 10
TL_ERR_KERNEL_FAILED = 12

# tl_dtype: starts at 1
DTYPE_NAMES = (None, "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
               "e4m3", "e5m2")
DTYPES = {name: i for i, name in enumerate(DTYPE_NAMES) if name}
TL_BOOL, TL_I64, TL_F64 = DTYPES["bool"], DTYPES["i64"], DTYPES["f64"]
SIGNED = {DTYPES[n] for n in ("i8", "i16", "i32", "i64")}
UNSIGNED = {DTYPES[n] for n in ("u8", "u16", "u32", "u64")}
FLOATS = {DTYPES[n] for n in ("f16", "bf16", "f32", "f64", "e4m3", "e5m2")}
SIZES = (0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1)  # bytes per element, by tl_dtype

TL_PARAM_TENSOR, TL_PARAM_SCALAR, TL_PARAM_SIZE, TL_PARAM_TMAP, TL_PARAM_TMAP_OK = 1, 2, 3, 4, 5
TL_ARG_TENSOR, TL_ARG_SCALAR = 1, 2
TL_DEVICE_CPU = -1
TL_JIT_NO_CACHE, TL_JIT_NO_DISK_CACHE, TL_JIT_LINE_INFO, TL_JIT_TMA_ONLY = 1, 2, 4, 8
TL_TMAP_MAX_RANK = 5


def status_name(status):
    return STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "TL_ERR_?"


# ---------------------------------------------------------------------------------------- structs
class Define(ctypes.Structure):  # tilec_define
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class Diagnostic(ctypes.Structure):  # tilec_diagnostic
    _fields_ = [("severity", ctypes.c_int), ("file", ctypes.c_char_p), ("line", ctypes.c_int),
                ("column", ctypes.c_int), ("message", ctypes.c_char_p)]


DIAGNOSTIC_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Diagnostic))


class JitOptions(ctypes.Structure):  # tl_jit_options
    _fields_ = [("filename", ctypes.c_char_p), ("arch", ctypes.c_char_p), ("opt_level", ctypes.c_int),
                ("defines", ctypes.POINTER(Define)), ("ndefines", ctypes.c_int), ("kernel", ctypes.c_char_p),
                ("flags", ctypes.c_uint), ("on_diagnostic", DIAGNOSTIC_CALLBACK), ("user", ctypes.c_void_p)]


class Dim(ctypes.Structure):  # tl_dim
    _fields_ = [("size_param", ctypes.c_int), ("extent", ctypes.c_int64)]


class TmapInfo(ctypes.Structure):  # tl_tmap_info
    _fields_ = [("tensor", ctypes.c_int), ("rank", ctypes.c_int), ("box", ctypes.c_uint32 * TL_TMAP_MAX_RANK),
                ("swizzle", ctypes.c_int)]


class Param(ctypes.Structure):  # tl_param
    _fields_ = [("kind", ctypes.c_int), ("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.POINTER(Dim)), ("tmap", TmapInfo)]


class LaunchConst(ctypes.Structure):  # tl_launch_const
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64), ("text", ctypes.c_char_p),
                ("program", ctypes.c_void_p)]


class KernelInfo(ctypes.Structure):  # tl_kernel_info
    _fields_ = [("name", ctypes.c_char_p), ("line", ctypes.c_int), ("threads", ctypes.c_uint32),
                ("smem", ctypes.c_uint32), ("nparams", ctypes.c_int), ("nargs", ctypes.c_int),
                ("nsizes", ctypes.c_int), ("ntmaps", ctypes.c_int), ("params", ctypes.POINTER(Param)),
                ("grid_text", ctypes.c_char_p * 3), ("grid", ctypes.c_void_p * 3), ("uses_num_sms", ctypes.c_bool),
                ("nconsts", ctypes.c_int), ("consts", ctypes.POINTER(LaunchConst)),
                ("strides", ctypes.POINTER(ctypes.POINTER(Dim))),  # per param, NULL: contiguous
                ("tma_required", ctypes.c_bool)]  # compiled --tma-only: launches need tensor maps


class ArgValue(ctypes.Union):  # tl_arg.value
    _fields_ = [("i", ctypes.c_int64), ("u", ctypes.c_uint64), ("f", ctypes.c_double),
                ("strides", ctypes.POINTER(ctypes.c_int64))]  # a tensor's, in elements; NULL: contiguous


class Arg(ctypes.Structure):  # tl_arg
    _fields_ = [("kind", ctypes.c_int), ("dtype", ctypes.c_int), ("ptr", ctypes.c_ulonglong), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("value", ArgValue)]


class DeviceInfo(ctypes.Structure):  # tl_device_info
    _fields_ = [("ordinal", ctypes.c_int), ("name", ctypes.c_char * 256), ("cc_major", ctypes.c_int),
                ("cc_minor", ctypes.c_int), ("sm_count", ctypes.c_int), ("max_smem_per_block", ctypes.c_int),
                ("total_memory", ctypes.c_size_t), ("driver_version", ctypes.c_int)]


STATS_FIELDS = ("compiles", "memory_hits", "disk_hits", "disk_rejected", "disk_writes", "disk_write_failures",
                "links", "binary_loads", "memory_evictions", "memory_bytes", "disk_untrusted", "disk_evictions",
                "disk_temporaries_removed")


class JitStats(ctypes.Structure):  # tl_jit_stats
    _fields_ = [(name, ctypes.c_uint64) for name in STATS_FIELDS]


# The structs above under their C names, for the layout test.
STRUCTS = {"tilec_define": Define, "tilec_diagnostic": Diagnostic, "tl_jit_options": JitOptions, "tl_dim": Dim,
           "tl_tmap_info": TmapInfo, "tl_param": Param, "tl_launch_const": LaunchConst,
           "tl_kernel_info": KernelInfo, "tl_arg": Arg, "tl_device_info": DeviceInfo, "tl_jit_stats": JitStats}

# ------------------------------------------------------------------------------------- prototypes
_p = ctypes.c_void_p
_s = ctypes.c_char_p
_i = ctypes.c_int
_z = ctypes.c_size_t
PROTOTYPES = {
    # name: (restype, argtypes)
    "tilec_version": (_s, ()),
    "tilec_build_id": (_s, ()),
    "tl_context_create": (_i, (_i, ctypes.POINTER(_p), ctypes.c_char_p, _z)),
    "tl_context_destroy": (None, (_p,)),
    "tl_context_message": (_s, (_p,)),
    "tl_context_device": (_i, (_p, ctypes.POINTER(DeviceInfo))),
    "tl_context_jit_cache": (_p, (_p,)),
    "tl_jit_cache_dir": (_s, (_p,)),
    "tl_jit_cache_stats": (None, (_p, ctypes.POINTER(JitStats))),
    "tl_malloc": (_i, (_p, _z, ctypes.POINTER(ctypes.c_ulonglong))),
    "tl_free": (_i, (_p, ctypes.c_ulonglong)),
    "tl_memcpy_htod": (_i, (_p, ctypes.c_ulonglong, _p, _z)),
    "tl_memcpy_dtoh": (_i, (_p, _p, ctypes.c_ulonglong, _z)),
    "tl_synchronize": (_i, (_p,)),
    "tl_module_compile": (_i, (_p, _s, _z, ctypes.POINTER(JitOptions), ctypes.POINTER(_p))),
    "tl_module_compile_file": (_i, (_p, _s, ctypes.POINTER(JitOptions), ctypes.POINTER(_p))),
    "tl_module_unload": (None, (_p,)),
    "tl_module_meta": (_p, (_p,)),
    "tl_meta_kernel_count": (_i, (_p,)),
    "tl_meta_kernel": (ctypes.POINTER(KernelInfo), (_p, _i)),
    "tl_module_get_kernel": (_i, (_p, _s, ctypes.POINTER(_p))),
    "tl_kernel_get_info": (ctypes.POINTER(KernelInfo), (_p,)),
    "tl_launch": (_i, (_p, ctypes.POINTER(Arg), _i, _p)),
}

# ---------------------------------------------------------------------------------------- finding
LIBRARY_NAMES = ("libtilec_jit.so.0", "libtilec_jit.so")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def candidates():
    """Where the library is looked for, in order: [(how, path or name)]. TILEC_LIBRARY, when set, is
    the only candidate."""
    env = os.environ.get("TILEC_LIBRARY")
    if env:
        return [("TILEC_LIBRARY", env)]
    found = []
    # Installed: PREFIX/share/tilec/python/tilec/ (packaging/CMakeLists.txt), the library in
    # PREFIX/LIBDIR, LIBDIR written into _install.py by the install (else "lib").
    prefix = os.path.normpath(os.path.join(_PACKAGE_DIR, "..", "..", "..", ".."))
    try:
        from ._install import LIBDIR  # generated by the install rules only
    except ImportError:
        LIBDIR = None
    if LIBDIR is not None:
        for name in LIBRARY_NAMES:
            found.append(("installed", os.path.join(prefix, LIBDIR, name)))
    # The source tree: python/tilec/ beside build/.
    repo = os.path.normpath(os.path.join(_PACKAGE_DIR, "..", ".."))
    found.append(("build tree", os.path.join(repo, "build", "packaging", "libtilec_jit.so")))
    system = ctypes.util.find_library("tilec_jit")
    if system:
        found.append(("find_library", system))
    return found


class _Library:
    def __init__(self):
        self._lock = threading.Lock()
        self._cdll = None
        self.path = None

    def get(self):
        cdll = self._cdll
        if cdll is not None:
            return cdll
        with self._lock:
            if self._cdll is None:
                self._cdll, self.path = _load()
            return self._cdll


def _load():
    tried = []
    for how, path in candidates():
        # a path must exist (a bare name from find_library goes to the loader as it is)
        if os.sep in path and not os.path.exists(path):
            tried.append("%s: %s (no such file)" % (how, path))
            continue
        try:
            cdll = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s (%s)" % (how, path, e))
            continue
        try:
            for name, (restype, argtypes) in PROTOTYPES.items():
                fn = getattr(cdll, name)
                fn.restype = restype
                fn.argtypes = argtypes
        except AttributeError as e:
            tried.append("%s: %s (not tilec's library: %s)" % (how, path, e))
            continue
        return cdll, path
    if not tried:
        tried.append("ctypes.util.find_library('tilec_jit'): not found")
    raise TilecError("cannot load libtilec_jit.so; set TILEC_LIBRARY to its path (docs/python.md). Tried:\n  "
                     + "\n  ".join(tried))


library = _Library()


def lib():
    """The loaded library (ctypes.CDLL), loading it on first use; TilecError if it cannot be found."""
    return library.get()
