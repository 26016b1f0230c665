#!/usr/bin/env python3
"""The Python binding (python/tilec, docs/python.md) on the CPU device, with NumPy.

    python3 tests/python/test_tilec.py [-v]

Needs libtilec_jit.so: TILEC_LIBRARY, else the build tree's build/packaging/libtilec_jit.so (ctest
python.binding sets TILEC_LIBRARY). Exits 77 (skipped) without NumPy. Its cache folder is a
temporary one (TILEC_CACHE_DIR).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

try:
    import numpy as np
except ImportError:
    np = None

import tilec  # noqa: E402  (must import without NumPy and without the library)
from tilec import _lib  # noqa: E402

VECTOR_ADD = os.path.join(ROOT, "examples", "vector_add.tl")
SAXPY = os.path.join(ROOT, "examples", "saxpy.tl")
SOFTMAX = os.path.join(ROOT, "stdlib", "softmax.tl")
STRIDES = os.path.join(ROOT, "tests", "golden", "strides.tl")
CACHE = None


def setUpModule():
    global CACHE
    CACHE = tempfile.mkdtemp(prefix="tilec-python-")
    os.environ["TILEC_CACHE_DIR"] = os.path.join(CACHE, "cache")  # read when the context's cache is made
    os.environ.pop("TILEC_CACHE_DISABLE", None)


def tearDownModule():
    shutil.rmtree(CACHE, ignore_errors=True)


def read(path):
    with open(path) as f:
        return f.read()


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class Layout(unittest.TestCase):
    def test_structs_match_layout_txt(self):
        """Every ctypes struct mirrors the C one: size, alignment and member offsets as
        tests/abi/layout.txt records them (x86-64)."""
        sizes, offsets = {}, {}
        with open(os.path.join(ROOT, "tests", "abi", "layout.txt")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 5 and parts[1] == "size":
                    sizes[parts[0]] = (int(parts[2]), int(parts[4]))
                elif len(parts) == 2 and line.startswith("  "):
                    offsets[parts[0]] = int(parts[1])
        import ctypes
        for cname, struct in _lib.STRUCTS.items():
            self.assertIn(cname, sizes, cname)
            self.assertEqual((ctypes.sizeof(struct), ctypes.alignment(struct)), sizes[cname], cname)
            names = [f[0] for f in struct._fields_]
            expected = sorted((off, key.split(".", 1)[1]) for key, off in offsets.items()
                              if key.startswith(cname + "."))
            self.assertEqual([n for _, n in expected], names, cname + ": members")
            for off, member in expected:
                self.assertEqual(getattr(struct, member).offset, off, "%s.%s" % (cname, member))
        self.assertEqual(ctypes.sizeof(_lib.Arg), 40)


class Dtypes(unittest.TestCase):
    def test_names_and_sizes_match_the_library(self):
        """DTYPE_NAMES and SIZES are tl_dtype's table, e4m3 (14) and e5m2 (15) included."""
        import ctypes
        cdll = ctypes.CDLL(_lib.lib()._name)  # its own handle: the binding's prototypes stay as they are
        name, size = cdll.tl_dtype_name, cdll.tl_dtype_size
        name.restype, name.argtypes = ctypes.c_char_p, (ctypes.c_int,)
        size.restype, size.argtypes = ctypes.c_size_t, (ctypes.c_int,)
        self.assertEqual(len(_lib.DTYPE_NAMES), len(_lib.SIZES))
        for t in range(1, len(_lib.DTYPE_NAMES)):
            self.assertEqual(name(t).decode(), _lib.DTYPE_NAMES[t])
            self.assertEqual(size(t), _lib.SIZES[t], _lib.DTYPE_NAMES[t])
        self.assertEqual(name(len(_lib.DTYPE_NAMES)), b"?")  # no dtype the binding lacks
        self.assertEqual((_lib.DTYPES["e4m3"], _lib.DTYPES["e5m2"]), (14, 15))
        self.assertTrue({_lib.DTYPES["e4m3"], _lib.DTYPES["e5m2"]} <= _lib.FLOATS)

    def test_torch_and_ml_dtypes(self):
        """torch.float8_e4m3fn / float8_e5m2 map to e4m3 / e5m2 (an older torch without them is fine), and
        ml_dtypes' float8 NumPy arrays ('|V1') are taken by their dtype's name."""
        from tilec import _core

        class Torch:  # the attributes the map reads; no torch needed
            float32, float8_e4m3fn, float8_e5m2 = object(), object(), object()

        class OldTorch:
            float32 = object()
        try:
            _core._torch_dtypes = None
            m = _core._torch_dtype_map(Torch)
            self.assertEqual((m[Torch.float8_e4m3fn], m[Torch.float8_e5m2], m[Torch.float32]), (14, 15, 12))
            _core._torch_dtypes = None
            self.assertEqual(_core._torch_dtype_map(OldTorch), {OldTorch.float32: 12})
        finally:
            _core._torch_dtypes = None

        class Array:
            def __init__(self, name):
                self.dtype = type("dtype", (), {"name": name})()
        for name, tl in (("float8_e4m3fn", 14), ("float8_e5m2", 15), ("bfloat16", 11)):
            iface = {"shape": (2, 3), "typestr": "|V1" if tl != 11 else "<V2", "data": (0x1000, False)}
            t = _core._from_interface(Array(name), iface, True, 0, "X")
            self.assertEqual((t.dtype, t.nbytes), (tl, 6 * _lib.SIZES[tl]), name)
        with self.assertRaisesRegex(tilec.LaunchError, "f64, e4m3, e5m2"):
            _core._from_interface(Array("float8_e4m3fnuz"), {"shape": (1,), "typestr": "|V1", "data": (0, False)},
                                  True, 0, "X")
        slot = _lib.Arg()
        _core._scalar(slot, 1.5, _lib.DTYPES["e4m3"], 0, "a")  # a float: the runtime rounds it
        self.assertEqual((slot.dtype, slot.value.f), (14, 1.5))


@unittest.skipIf(np is None, "NumPy is missing")
class Launches(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.add = tilec.compile(read(VECTOR_ADD), device="cpu")["vector_add"]

    def test_vector_add_ragged(self):
        rng = np.random.default_rng(19)
        for n in (10007, 1, 4097):
            a = rng.standard_normal(n).astype(np.float32)
            b = rng.standard_normal(n).astype(np.float32)
            c = np.full(n, np.nan, dtype=np.float32)
            self.assertIsNone(self.add(a, b, c))
            np.testing.assert_array_equal(c, a + b)  # f32 + f32 rounds once, on both sides

    def test_module_and_kernel(self):
        m = tilec.compile_file(VECTOR_ADD, device="cpu")
        self.assertEqual(m.kernels, ["vector_add"])
        self.assertIn("vector_add", m)
        k = m["vector_add"]
        self.assertIs(k, m["vector_add"])
        self.assertEqual(k.params, [("A", "tensor", "f32", 1), ("B", "tensor", "f32", 1), ("C", "tensor", "f32", 1)])
        self.assertEqual(k.sizes, ["N"])
        with self.assertRaises(tilec.KernelNotFound) as e:
            m["vector_sub"]
        self.assertIsInstance(e.exception, KeyError)
        self.assertIn("vector_add", str(e.exception))  # lists the kernels there are
        self.assertEqual(tilec.device_info("cpu")["ordinal"], -1)

    def test_defines(self):
        k = tilec.compile_file(VECTOR_ADD, defines={"BLOCK": 512, "THREADS": 128}, device="cpu")["vector_add"]
        self.assertEqual(k.threads, 128)
        a = np.arange(1000, dtype=np.float32)
        c = np.zeros_like(a)
        k(a, a, c)
        np.testing.assert_array_equal(c, 2 * a)

    def test_softmax_f32(self):
        k = tilec.compile_file(SOFTMAX, defines={"T": "f32"}, device="cpu")["softmax"]
        self.assertEqual(k.params, [("X", "tensor", "f32", 2), ("Y", "tensor", "f32", 2)])
        rng = np.random.default_rng(7)
        for m, n in ((5, 300), (9, 33)):  # ragged rows, more rows than the CPU device's 4 "SMs"
            x = (3 * rng.standard_normal((m, n))).astype(np.float32)
            y = np.empty_like(x)
            k(x, y)
            np.testing.assert_allclose(y, softmax_ref(x), rtol=2e-5, atol=1e-7)
        x2 = x.copy()
        k(x2, x2)  # in place: one buffer passed twice is staged once
        np.testing.assert_allclose(x2, softmax_ref(x), rtol=2e-5, atol=1e-7)

    def test_scalar(self):
        k = tilec.compile_file(SAXPY, device="cpu")["saxpy"]
        x = np.arange(100, dtype=np.float32)
        y = np.ones(100, dtype=np.float32)
        z = np.empty_like(x)
        k(x, y, z, 2.5)
        np.testing.assert_array_equal(z, 2.5 * x + 1)
        k(x, y, z, np.float32(-1))  # a NumPy scalar
        np.testing.assert_array_equal(z, 1 - x)
        with self.assertRaises(tilec.LaunchError) as e:
            k(x, y, z, "2")
        self.assertIn("argument 3 ('a')", str(e.exception))

    def test_read_only_input(self):
        a = np.arange(64, dtype=np.float32)
        a.setflags(write=False)
        c = np.zeros(64, dtype=np.float32)
        self.add(a, a, c)
        np.testing.assert_array_equal(c, 2 * a)

    def test_wrong_dtype_rank_count_size(self):
        a = np.zeros(10, dtype=np.float32)
        cases = [((a.astype(np.float64), a, a), "argument 0 ('A'): expected a tensor of f32, got f64"),
                 ((a, a.astype(np.float16), a), "argument 1 ('B'): expected a tensor of f32, got f16"),
                 ((a, a, np.zeros((2, 5), np.float32)), "argument 2 ('C'): expected a tensor of rank 1, got rank 2"),
                 ((a, a), "takes 3 arguments"),
                 ((a, a, np.zeros(9, np.float32)), "size N is 10"),
                 ((a, 1.0, a), "argument 1 ('B')")]
        for args, text in cases:
            with self.assertRaises(tilec.LaunchError, msg=text) as e:
                self.add(*args)
            self.assertIn(text, str(e.exception))
            self.assertEqual(e.exception.status, "TL_ERR_BAD_ARGUMENT")

    def test_strided_views(self):
        """Parameters declared with strides(...) take NumPy views with their own strides (the stride sizes
        bound from them, the storage staged on the CPU device); a contiguous parameter still refuses one."""
        m = tilec.compile(read(STRIDES), device="cpu")
        pad, tv = m["pad_copy"], m["transpose_view"]
        storage = np.arange(5 * 12, dtype=np.float16).reshape(5, 12)
        a = storage[:, :7]  # [5, 7], rows 12 apart
        b = np.full((5, 7), np.nan, dtype=np.float16)
        pad(a, b)
        np.testing.assert_array_equal(b, a)
        s = np.arange(7 * 9, dtype=np.float32).reshape(7, 9)
        at = s[:, :5].T  # [5, 7], strides (1, 9)
        bt = np.full((5, 7), np.nan, dtype=np.float32)
        tv(at, bt)
        np.testing.assert_array_equal(bt, at)
        pad(np.ascontiguousarray(a), b)  # a contiguous array: lda = N
        np.testing.assert_array_equal(b, a)
        with self.assertRaisesRegex(tilec.LaunchError, "argument 1 .*not contiguous"):
            pad(a, b[:, ::2])  # B is declared without strides
        with self.assertRaisesRegex(tilec.LaunchError, "stride 1 is 2 but kernel 'pad_copy' requires 1"):
            pad(storage[:, ::2][:, :5], np.zeros((5, 5), np.float16))

    def test_rejected_before_the_launch(self):
        a = np.zeros(20, dtype=np.float32)
        with self.assertRaisesRegex(tilec.LaunchError, "argument 0 .*not contiguous"):
            self.add(a[::2], a[:10], a[:10])

        class OnGpu:
            __cuda_array_interface__ = {"shape": (10,), "typestr": "<f4", "data": (1 << 40, False), "version": 3}

        with self.assertRaisesRegex(tilec.LaunchError, "argument 1 .*GPU array"):
            self.add(a[:10], OnGpu(), a[:10])
        with self.assertRaisesRegex(tilec.LaunchError, "argument 2 .*type object"):
            self.add(a[:10], a[:10], object())
        with self.assertRaisesRegex(tilec.LaunchError, "no tilec type"):
            self.add(a[:10], a[:10], np.zeros(10, dtype=np.complex64))

    def test_kernel_failed(self):
        src = ("kernel oob(A: f32[N]) grid(1) threads(32) {\n"
               "    let two = 2.0;\n"
               "    for i in serial(16) {\n"
               "        A[i] = two;\n"
               "    }\n"
               "}\n")
        k = tilec.compile(src, device="cpu", filename="oob.tl")["oob"]
        a = np.zeros(10, dtype=np.float32)
        with self.assertRaises(tilec.LaunchError) as e:
            k(a)
        self.assertEqual(e.exception.status, "TL_ERR_KERNEL_FAILED")
        self.assertTrue(str(e.exception).startswith("oob.tl:4:"), str(e.exception))
        np.testing.assert_array_equal(a, 2)  # what it stored before the error is copied back


class Compile(unittest.TestCase):
    def test_compile_error(self):
        src = read(VECTOR_ADD).replace("a[i] + b[i]", "a[i] + q[i]")
        with self.assertRaises(tilec.CompileError) as e:
            tilec.compile(src, device="cpu", filename="bad.tl")
        msg = str(e.exception)
        self.assertRegex(msg, r"^bad\.tl:\d+:\d+: error: ")
        self.assertIn("a[i] + q[i]", msg)  # the line, then a caret under q
        self.assertRegex(msg, r"\n *\^")
        self.assertEqual(e.exception.status, "TL_ERR_COMPILE")
        self.assertTrue(e.exception.diagnostics)
        sev, f, line, col, text = e.exception.diagnostics[0]
        self.assertEqual((sev, f), ("error", "bad.tl"))
        self.assertIn("%s:%d:%d: error: %s" % (f, line, col, text), msg)
        self.assertIsInstance(e.exception, tilec.TilecError)

    def test_compile_file_errors(self):
        with self.assertRaises(tilec.TilecError) as e:
            tilec.compile_file(os.path.join(CACHE, "missing.tl"), device="cpu")
        self.assertEqual(e.exception.status, "TL_ERR_IO")
        with self.assertRaises(tilec.TilecError) as e:
            tilec.compile("kernel k() grid(1) threads(32) {}", device="cpu", arch="sm_70")
        self.assertEqual(e.exception.status, "TL_ERR_BAD_ARGUMENT")
        with self.assertRaises(ValueError):
            tilec.compile("", device="tpu")

    def test_cache(self):
        """The context's own cache: the default folder ($TILEC_CACHE_DIR here), as in C hosts."""
        self.assertEqual(tilec.cache_dir("cpu"), os.environ["TILEC_CACHE_DIR"])
        src = read(VECTOR_ADD) + "\n// cache test\n"
        before = tilec.cache_stats("cpu")
        tilec.compile(src, device="cpu")
        tilec.compile(src, device="cpu")
        tilec.compile(src, device="cpu", cache=False)
        after = tilec.cache_stats("cpu")
        self.assertEqual(after["compiles"] - before["compiles"], 2)
        self.assertEqual(after["memory_hits"] - before["memory_hits"], 1)
        self.assertGreaterEqual(after["disk_writes"] - before["disk_writes"], 1)
        self.assertTrue(any(f.endswith(".tljit") for f in os.listdir(tilec.cache_dir("cpu"))))
        # a second process reads the entry from disk
        code = ("import sys; sys.path.insert(0, %r); import tilec; tilec.compile(open(%r).read() + %r, device='cpu');"
                "print(tilec.cache_stats('cpu')['disk_hits'])" % (os.path.join(ROOT, "python"), VECTOR_ADD,
                                                                   "\n// cache test\n"))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "1")

    def test_missing_library(self):
        """import works without the library; the first call that needs it raises TilecError."""
        missing = os.path.join(CACHE, "no-such-dir", "libtilec_jit.so")
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import tilec\n"
                "try:\n"
                "    tilec.compile('', device='cpu')\n"
                "except tilec.TilecError as e:\n"
                "    print('TilecError:', e)\n"
                "    sys.exit(3)\n" % os.path.join(ROOT, "python"))
        env = dict(os.environ, TILEC_LIBRARY=missing)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        self.assertEqual(out.returncode, 3, out.stdout + out.stderr)
        self.assertIn("cannot load libtilec_jit.so", out.stdout)
        self.assertIn(missing, out.stdout)
        self.assertIn("TILEC_LIBRARY", out.stdout)


if __name__ == "__main__":
    if np is None:
        print("test_tilec: NumPy is missing (Debian: python3-numpy): skipped")
        sys.exit(77)
    unittest.main()
