#!/usr/bin/env python3
"""seeds.py: the fuzzers' seed corpora and dictionaries, made from the tree each time, so that they
follow the language and the docs instead of copies of them.

  seeds.py compile ROOT OUT   OUT/compile/: every .tl of examples/, stdlib/, tests/golden, tests/diag,
                              tests/unit and every ```tl block of docs/ (one input per golden RUN
                              line, with its flags; FLAGS lines of tests/diag as "//-" options; the
                              stdlib's kernels also one by one, at several archs and levels);
                              OUT/tl.dict: the lexer's keywords and operators, the type names,
                              operators and intrinsics of ir/ir.h, the checker's reserved names and
                              named arguments, the pass names, fuzz_compile's "//-" options
  seeds.py meta ROOT PTXDIR OUT
                              OUT/meta/: the tilec-meta block of every PTX file in PTXDIR (and one
                              whole PTX file) and the examples of docs/abi.md; OUT/meta.dict

An input of fuzz_compile is three option bytes (arch, -O, emit: see fuzz_compile.c) and the source.
"""
import hashlib
import os
import re
import sys

ARCHS = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"]
EMITS = {"ptx": 0, "llvm": 1, "tir": 2, "ast": 3, "tokens": 4, "header": 5, "report": 7}


def header(arch="sm_90a", level=3, emit="ptx"):
    return "%d%d%d" % (ARCHS.index(arch), level, EMITS[emit])


def read(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def write_seed(outdir, name, data):
    data = data.encode("utf-8", errors="surrogateescape")
    digest = hashlib.sha1(data).hexdigest()[:10]
    with open(os.path.join(outdir, "%s-%s" % (name, digest)), "wb") as f:
        f.write(data)


def flags_to_options(words):
    """tilec flags -> (header, directive lines)."""
    arch, level, emit, lines = "sm_90a", 3, "ptx", []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--arch="):
            arch = w[7:]
        elif w.startswith("--emit="):
            emit = w[7:]
        elif re.fullmatch(r"-O[0-3]", w):
            level = int(w[2:])
        elif w == "-D" and i + 1 < len(words):
            lines.append("//-D " + words[i + 1])
            i += 1
        elif w.startswith("-D") and len(w) > 2:
            lines.append("//-D " + w[2:])
        elif w == "--kernel" and i + 1 < len(words):
            lines.append("//-k " + words[i + 1])
            i += 1
        elif w.startswith("--dump-after="):
            lines.append("//-dump " + w[13:])
        elif w == "--tma-only":
            lines.append("//-tma-only")
        i += 1
    if arch not in ARCHS or emit not in EMITS:
        arch, emit = "sm_90a", "ptx"
    return header(arch, level, emit), lines


def doc_blocks(root):
    """(name, text) of every ```tl block of docs/ and docs/tutorials/."""
    for d in ("docs", "docs/tutorials"):
        dirp = os.path.join(root, d)
        for fn in sorted(os.listdir(dirp)):
            if not fn.endswith(".md"):
                continue
            text = read(os.path.join(dirp, fn))
            for i, m in enumerate(re.finditer(r"^```tl[ \t]*\n(.*?)^```", text, re.S | re.M)):
                yield "doc-%s-%d" % (fn[:-3], i), m.group(1)


def tl_files(root):
    for d in ("examples", "stdlib", "tests/golden", "tests/diag", "tests/unit"):
        dirp = os.path.join(root, d)
        for fn in sorted(os.listdir(dirp)):
            if fn.endswith(".tl"):
                yield d, fn, read(os.path.join(dirp, fn))


def compile_seeds(root, out):
    outdir = os.path.join(out, "compile")
    os.makedirs(outdir, exist_ok=True)
    n = 0
    for d, fn, text in tl_files(root):
        base = "%s-%s" % (os.path.basename(d), fn[:-3])
        variants = []
        runs = re.findall(r"^// RUN: %tilec (.*?)%s", text, re.M)
        for run in dict.fromkeys(runs):
            variants.append(flags_to_options(run.split()))
        flags = re.findall(r"^// FLAGS: (.*)$", text, re.M)
        if flags:
            variants.append(flags_to_options(flags[0].split()))
        if not variants:
            variants.append((header(), []))
        kernels = re.findall(r"^\s*kernel\s+(\w+)", text, re.M)
        if d == "examples":  # the other end of the targets, and the -O0 path
            variants.append((header("sm_80", 3), []))
            variants.append((header("sm_86", 0), []))
        if d == "stdlib" or (d == "examples" and len(kernels) > 1):
            # One kernel at a time: the whole file takes seconds under ASan, too slow to fuzz.
            for i, k in enumerate(kernels):
                variants.append((header(ARCHS[(i + 1) % 5], (1, 2, 3)[i % 3]), ["//-k " + k]))
        for h, lines in variants:
            write_seed(outdir, base, h + "".join(l + "\n" for l in lines) + text)
            n += 1
    for name, text in doc_blocks(root):
        write_seed(outdir, name, header() + text)
        n += 1
    # Each emit kind at least once, on the smallest example.
    va = read(os.path.join(root, "examples", "vector_add.tl"))
    for i, emit in enumerate(EMITS):
        write_seed(outdir, "emit-" + emit, header(ARCHS[i % 5], i % 4, emit) + va)
        n += 1
    return n


def quoted(text):
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


def dict_line(s):
    esc = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02x" % ord(c) for c in s)
    return '"%s"\n' % esc


def write_dict(path, words):
    with open(path, "w") as f:
        for w in dict.fromkeys(words):
            if w:
                f.write(dict_line(w))


def compile_dict(root, out):
    words = []
    lex = read(os.path.join(root, "frontend", "lex.re"))
    rules = lex[lex.index("lexer_next"):]
    for line in rules.splitlines():
        if "error_at" in line or "re2c:" in line:
            continue
        for s in quoted(line):
            if s not in ("//", "/*", "\\n") and not s.startswith("%"):
                words.append(s)
    ir = read(os.path.join(root, "ir", "ir.h"))
    words += re.findall(r'X\(\w+, "([^"]+)"', ir)
    sema = read(os.path.join(root, "frontend", "sema.c"))
    for m in re.finditer(r"static const char \*(?:const )?\w+\[(?:\d*)\] = \{([^}]*)\}", sema):
        words += [s for s in quoted(m.group(1)) if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9.]*", s)]
    words += [s for s in quoted(sema) if re.fullmatch(r"(alloc|reduce|num|min|use)_[a-z_]+", s)]
    words += re.findall(r'\{"([a-z_]+)", BUILTIN_', sema)  # the builtins table
    pipeline = read(os.path.join(root, "passes", "pipeline.c"))
    table = pipeline[pipeline.index("pipeline[] = {"):]
    passes = list(dict.fromkeys(quoted(table[:table.index("};")]))) + ["all", "groups"]
    words += ["\n//-dump %s\n" % p for p in passes]
    words += ["\n//-D ", "\n//-k ", "\n//-tma-only\n", "=", "//", "/*", "*/", "\n", "0x", "e+", "_", "1_000",
              "kernel k() grid(1) threads(32) {", "kernel k[B = 256](A: f32[N]) grid(ceildiv(N, B)) as (bx) threads(B) {",
              "for i in parallel(", "for i in serial(", "for k in pipelined(", ", stages = ", "alloc_shared([",
              "alloc_fragment([", "alloc_local([", "copy(", "gemm(", "reduce_sum(", ", dim = ", ", clear = ",
              "transpose_A = true", "warps_m = ", "min_blocks_per_sm(", "use_swizzle(", "num_blocks(0)", "sizeof(",
              "select(", "let ", "var ", "if (", "} else {", "[bx * ", "f32[N]", "f16[M, K]", ": f32 = "]
    # Names that mean something to PTX or LLVM, for kernels and parameters: a kernel must not become
    # one (issue 11: k beside k_param_0, '_', WARP_SZ).
    words += ["_", "WARP_SZ", "_param_0", "_param_1", "__local_depot0", "__unnamed_1", "__cuda", "param",
              "entry", "reg", "shared", "global", "local", "const", "tex", "surf", "sreg", "tid", "ntid",
              "ctaid", "clock", "main", "llvm", "nvvm", "ptx", "f32x", "b32", "pred"]
    write_dict(os.path.join(out, "tl.dict"), words)
    return len(set(words))


def meta_seeds(root, ptxdir, out):
    outdir = os.path.join(out, "meta")
    os.makedirs(outdir, exist_ok=True)
    n = 0
    whole = None
    for fn in sorted(os.listdir(ptxdir)):
        if not fn.endswith(".ptx"):
            continue
        text = read(os.path.join(ptxdir, fn))
        lines = []
        for line in text.splitlines(True):
            if not line.startswith("// tilec-meta "):
                break
            lines.append(line)
        if lines:
            write_seed(outdir, "ptx", "".join(lines))
            n += 1
            if whole is None or len(text) < len(whole):
                whole = text
    if whole:
        write_seed(outdir, "whole-ptx", whole)
        n += 1
    abi = read(os.path.join(root, "docs", "abi.md"))
    for block in re.findall(r"^```\n(// tilec-meta .*?)^```", abi, re.S | re.M):
        write_seed(outdir, "abi", block)
        n += 1
    meta_c = read(os.path.join(root, "runtime", "meta.c"))
    words = ["// tilec-meta ", "\n// tilec-meta ", "v1", "kernel ", "param ", "tensor ", "scalar ", "size ",
             "grid ", "end", "threads=", "smem=", "params=", "rank=", "dims=", " 0", " 1", " 2", " -1",
             " 2147483647", " 4294967296", " 9223372036854775807", " 9223372036854775808", ",", " + ", " - ",
             " * ", " / ", " % ", " min", " max", " ceildiv", " num_sms", "\x00", "\r\n"]
    words += re.findall(r'X\(\w+, "([^"]+)"', read(os.path.join(root, "ir", "ir.h")))[:14]
    words += [s for s in quoted(meta_c) if re.fullmatch(r"[a-z_0-9=]+", s)]
    write_dict(os.path.join(out, "meta.dict"), words)
    return n


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "compile":
        root, out = sys.argv[2], sys.argv[3]
        n = compile_seeds(root, out)
        d = compile_dict(root, out)
        print("seeds.py: %d compile seeds, %d dictionary entries" % (n, d))
    elif len(sys.argv) == 5 and sys.argv[1] == "meta":
        n = meta_seeds(sys.argv[2], sys.argv[3], sys.argv[4])
        print("seeds.py: %d metadata seeds" % n)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
