#!/usr/bin/env python3
"""sass_wgmma.py FILE.sass [FILE.sass ...] | --self-test

Reads SASS as `cuobjdump -sass` prints it (on the GPU machine: ptxas -arch=sm_90a K.ptx -o K.cubin;
cuobjdump -sass K.cubin > K.sass) and, for every HGMMA whose A operand is in registers (the
register-A form of wgmma.mma_async: `HGMMA.64xNx16.F32 Racc, Ra, gdesc[..], ...`), follows the
control flow forward from it, through branches and the loop's back edge, to the
WARPGROUP.DEPBAR that waits for it. Any instruction on the way that writes one of the four
registers the multiply reads A from is reported: the tensor cores may read that register after it
changed. The PTX of such a kernel can be race-free (its A registers written only after
wgmma.wait_group) and the SASS not, if ptxas gives two PTX registers one physical register; this
tells the two apart (results/h200-2026-12-05-s27).

Exit status: 0 if no such write, 1 if any (each printed with the function, the HGMMA and the writer),
2 on bad usage or a file with no HGMMA at all.
"""
import re
import sys

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
FUNC = re.compile(r"Function\s*:\s*(\S+)")
REG = re.compile(r"^R(\d+)$")


def parse(text):
    """{function: (insns, labels)}: insns a list of (addr, pred, op, operands)."""
    funcs, cur = {}, None
    pending = []
    for line in text.splitlines():
        m = FUNC.search(line)
        if m:
            cur = m.group(1)
            funcs[cur] = ([], {})
            continue
        if cur is None:
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSN.search(line)
        if m:
            insns, labels = funcs[cur]
            for lab in pending:
                labels[lab] = len(insns)
            pending = []
            ops = [o.strip() for o in m.group(4).split(",")] if m.group(4).strip() else []
            insns.append((int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), ops))
    return funcs


def written(op, ops):
    """The registers an instruction writes (its first operand and the ones its width implies)."""
    base = op.split(".")[0]
    if not ops or base.startswith("ST") or base in ("RED", "BRA", "EXIT", "RET", "BAR", "CALL", "JMP",
                                                     "HGMMA", "WARPGROUP", "SYNCS", "UTMALDG", "DEPBAR"):
        return set()
    m = REG.match(ops[0].split(".")[0])
    if not m:
        return set()
    n = 1
    parts = op.split(".")
    if "128" in parts or (base == "LDSM" and parts[-1] == "4"):
        n = 4
    elif "64" in parts or "WIDE" in parts or (base == "LDSM" and parts[-1] == "2") or "F64" in parts:
        n = 2
    r = int(m.group(1))
    return {r + i for i in range(n)}


def successors(insns, labels, i):
    addr, pred, op, ops = insns[i]
    base = op.split(".")[0]
    nxt = [i + 1] if i + 1 < len(insns) else []
    if base in ("EXIT", "RET"):
        return [] if not pred else nxt
    if base in ("BRA", "JMP"):
        tgt = None
        t = ops[-1] if ops else ""
        lab = re.search(r"\.L_x_\d+", t)
        if lab and lab.group(0) in labels:
            tgt = labels[lab.group(0)]
        elif re.match(r"^0x[0-9a-f]+$", t):
            want = int(t, 16)
            tgt = next((j for j, x in enumerate(insns) if x[0] == want), None)
        out = [tgt] if tgt is not None else []
        return out + (nxt if pred else [])
    return nxt


def closes_group(op, ops):
    """An HGMMA that ends its wgmma group (wgmma.commit_group: the gsb0 token on the group's last)."""
    return op.startswith("HGMMA") and any("gsb0" in o for o in ops)


def depbar_count(ops):
    """N of WARPGROUP.DEPBAR.LE gsb0, N (wgmma.wait_group N): groups it lets stay in flight."""
    for o in ops[1:]:
        m = re.match(r"^(0x[0-9a-f]+|\d+)$", o)
        if m:
            return int(o, 0)
    return 0


def check(funcs):
    """(number of register-A HGMMAs, [report lines]).  The walk from an HGMMA counts the groups
    committed after its own: a WARPGROUP.DEPBAR.LE gsb0, N retires it once N of them are (the
    attention loop's wgmma.wait_group 1 leaves the last P V multiply in flight)."""
    count, bad = 0, []
    for name, (insns, labels) in funcs.items():
        for i, (addr, pred, op, ops) in enumerate(insns):
            if not op.startswith("HGMMA") or len(ops) < 2:
                continue
            m = REG.match(ops[1])
            if not m:
                continue  # A from shared memory (a descriptor)
            count += 1
            a = {int(m.group(1)) + k for k in range(4)}
            start = 0 if closes_group(op, ops) else -1
            seen, todo = set(), [(j, start) for j in successors(insns, labels, i)]
            while todo:
                j, c = todo.pop()
                if (j, c) in seen:
                    continue
                seen.add((j, c))
                jop, jops = insns[j][2], insns[j][3]
                if jop.startswith("WARPGROUP.DEPBAR") and c >= depbar_count(jops):
                    continue  # the wait that retires it: A may change after it
                hit = written(jop, jops) & a
                if hit:
                    bad.append("%s: %04x %s %s reads R%s; %04x %s %s writes %s before a WARPGROUP.DEPBAR" %
                               (name, addr, op, ", ".join(ops[:2]), m.group(1), insns[j][0], jop,
                                ", ".join(jops[:1]), ", ".join("R%d" % r for r in sorted(hit))))
                if closes_group(jop, jops):
                    c = min(c + 1, 4)
                todo.extend((n, c) for n in successors(insns, labels, j))
    return count, bad


SELF_TEST_OK = """
        Function : k
        /*0000*/                   MOV R100, R40 ;
        /*0010*/                   WARPGROUP.ARRIVE ;
        /*0020*/                   HGMMA.64x64x16.F32 R0, R100, gdesc[UR4], R0, gsb0 ;
        /*0030*/                   LDS.64 R40, [R2] ;
        /*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0050*/                   MOV R100, R40 ;
        /*0060*/              @P0 BRA 0x10 ;
        /*0070*/                   EXIT ;
"""
SELF_TEST_BAD_LOOP = """
        Function : k
.L_x_1:
        /*0000*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0010*/                   WARPGROUP.ARRIVE ;
        /*0020*/                   HGMMA.64x64x16.F32 R0, R100, gdesc[UR4], R0, gsb0 ;
        /*0030*/                   F2FP.F16.F32.PACK_AB R102, R7, R6 ;
        /*0040*/              @P0 BRA `(.L_x_1) ;
        /*0050*/                   EXIT ;
"""
SELF_TEST_WAIT1 = """
        Function : k
.L_x_1:
        /*0000*/                   WARPGROUP.ARRIVE ;
        /*0010*/                   HGMMA.64x64x16.F32 R32, gdesc[UR8], R32, gsb0 ;
        /*0020*/                   HGMMA.64x64x16.F32 R0, R100, gdesc[UR4], R0, gsb0 ;
        /*0030*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0040*/                   F2FP.F16.F32.PACK_AB R101, R33, R32 ;
        /*0050*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0060*/                   MOV R100, R40 ;
        /*0070*/              @P0 BRA `(.L_x_1) ;
        /*0080*/                   EXIT ;
"""


def self_test():
    n, bad = check(parse(SELF_TEST_OK))
    assert n == 1 and not bad, bad
    n, bad = check(parse(SELF_TEST_BAD_LOOP))
    assert n == 1 and len(bad) == 1 and "R102" in bad[0], bad
    n, bad = check(parse(SELF_TEST_OK.replace("LDS.64 R40", "LDS.64 R99")))  # R99, R100
    assert len(bad) == 1 and "R100" in bad[0], bad
    n, bad = check(parse(SELF_TEST_WAIT1))  # wait_group 1 right after it: R100's multiply still in flight
    assert n == 1 and len(bad) == 1 and "R101" in bad[0], bad
    n, bad = check(parse(SELF_TEST_WAIT1.replace("F2FP.F16.F32.PACK_AB R101", "F2FP.F16.F32.PACK_AB R90")))
    assert n == 1 and not bad, bad
    print("sass_wgmma.py: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    status = 0
    for path in argv[1:]:
        with open(path) as f:
            n, bad = check(parse(f.read()))
        if n == 0:
            print("%s: no HGMMA with A in registers" % path)
            status = max(status, 2)
            continue
        for line in bad:
            print("%s: %s" % (path, line))
        print("%s: %d register-A HGMMAs, %d writes to their A registers in flight" % (path, n, len(bad)))
        if bad:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
