"""A kernel's machine code: NVRTC compiles it to a cubin for one arch (with `ptxas -v`: registers,
spills, shared memory), nvdisasm turns the cubin into SASS, and this module reads the instruction
mix of the kernel's main loop (the loop that does the most tensor-core work).

nvdisasm comes from the pip wheel nvidia-cuda-nvdisasm (an extra of the course, `coach`), or from a
CUDA toolkit; without it the panel gives what ptxas says and names what is missing.
Compiles and disassemblies are cached by a hash of everything that goes in (in this process and in
a folder, TC_COACH_CACHE or ~/.cache/tensorcore-course/coach), so a second check of the same source
costs nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

# ---------------------------------------------------------------- tools


def nvdisasm() -> str | None:
    """The nvdisasm binary: pip's wheel on this Python's path, PATH, or a toolkit."""
    for p in sys.path:
        for rel in ("nvidia/cu13/bin/nvdisasm", "nvidia/cuda_nvdisasm/bin/nvdisasm"):
            exe = Path(p or ".") / rel
            if exe.is_file() and os.access(exe, os.X_OK):
                return str(exe)
    found = shutil.which("nvdisasm")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "nvdisasm"), os.X_OK):
            return os.path.join(root, "bin", "nvdisasm")
    return None


MISSING_NVDISASM = ("no nvdisasm here, so no SASS instruction mix: pip install nvidia-cuda-nvdisasm==13.5.37 "
                    "(5 MB; the course's extra `coach`)")


def _cache_dir() -> Path | None:
    d = Path(os.environ.get("TC_COACH_CACHE") or Path.home() / ".cache" / "tensorcore-course" / "coach")
    try:
        d.mkdir(parents=True, exist_ok=True)
        return d if os.access(d, os.W_OK) else None
    except OSError:
        return None


_MEMO: dict[str, dict] = {}


def _cached(key: str, make) -> dict:
    if key in _MEMO:
        return _MEMO[key]
    d = _cache_dir()
    path = d / f"{key}.json" if d else None
    if path and path.is_file():
        try:
            _MEMO[key] = json.loads(path.read_text())
            return _MEMO[key]
        except (OSError, ValueError):
            pass
    value = make()
    _MEMO[key] = value
    if path and value.get("cacheable", True):
        try:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(value))
            tmp.replace(path)
        except OSError:
            pass
    return value


# ---------------------------------------------------------------- compile + disassemble


_KEY = 3  # bump when what build() returns changes: the disk cache then misses old entries


def build(source: str, kernel: str, options=(), arch: int = 90) -> dict:
    """{resources: {registers, shared_bytes, spill_stores, spill_loads, stack_bytes}, sass: text or "",
    missing: [what could not be had], notes: [where a number came from, when not from ptxas -v],
    nvrtc: version} for `kernel` compiled for sm_`arch`.

    Resources come from `ptxas -v` (NVRTC's log); when that log has none for the kernel, from the
    cubin itself (registers and stack frame from .nv.info, static shared memory from
    .nv.shared.<kernel>) and the SASS (spill bytes: the bytes of its local stores and loads), and a
    note says so with the start of the log; when neither has them, a missing line says why."""
    from grader.runtime.compile import BASE_OPTIONS, compiler_for, parse_resources
    from grader.runtime.errors import CourseError
    from grader.runtime.headers import include_options

    try:
        nv = compiler_for(arch)
    except CourseError as e:
        return dict(resources=None, sass="", missing=[e.message], notes=[], nvrtc=None, cacheable=False)
    tool = nvdisasm()
    key = hashlib.sha256(json.dumps([_KEY, source, list(options), arch, kernel, list(nv.version), str(nv.path),
                                     tool or ""]).encode()).hexdigest()[:32]

    def make():
        # -lineinfo: nvdisasm -g then names each instruction's source line (the code is the same)
        opts = [f"-arch=sm_{arch}", "-Xptxas=-v", "-lineinfo", *BASE_OPTIONS, *include_options(nv.stack.name),
                *options]
        try:
            out = nv.compile(source, opts, SOURCE_NAME, "cubin")
        except Exception as e:  # the check reports compile errors; here: say it and stop
            return dict(resources=None, sass="", missing=[f"no cubin: {str(e).splitlines()[0][:200]}"], notes=[],
                        nvrtc=list(nv.version), cacheable=False)
        res = parse_resources(out.log).get(kernel)
        missing, notes, sass = [], [], ""
        if tool is None:
            missing.append(MISSING_NVDISASM)
        else:
            with tempfile.TemporaryDirectory(prefix="tc-coach-") as tmp:
                cubin = Path(tmp) / "k.cubin"
                cubin.write_bytes(out.code)
                try:
                    r = subprocess.run([tool, "-c", "-ndf", "-g", str(cubin)], capture_output=True, text=True, timeout=60)
                    sass = r.stdout if r.returncode == 0 else ""
                    if not sass and "deprecated" in r.stderr:  # nvdisasm 13 reads no sm_70 cubin
                        missing.append(f"no SASS mix for sm_{arch}: this nvdisasm ({tool}) no longer reads that "
                                       "architecture (CUDA 13 dropped Volta)")
                    elif not sass:
                        missing.append(f"nvdisasm failed: {r.stderr.strip()[:200]}")
                except (OSError, subprocess.TimeoutExpired) as e:
                    missing.append(f"nvdisasm failed: {e}")
        sass = _only(sass, kernel)
        resources = asdict(res) if res else None
        from_log = resources is not None
        if resources is None:
            head = " | ".join(ln.strip() for ln in out.log.strip().splitlines()[:3])[:240] or "empty"
            why = (f"ptxas -v (NVRTC {nv.version[0]}.{nv.version[1]}, {nv.path}) printed no resources for "
                   f"'{kernel}' (its log: {head})")
            resources = cubin_resources(out.code, kernel, arch, sass)
            if resources is not None:
                notes.append(f"{why}; registers, stack frame and static shared memory read from the cubin"
                             + (", spill bytes from the SASS's local loads and stores" if sass else ", spills unknown"))
            else:
                missing.append(f"{why}, and the cubin has no resource table for it: no registers, no occupancy")
        return dict(resources=resources, sass=sass, missing=missing, notes=notes, nvrtc=list(nv.version),
                    cacheable=from_log and (not missing or tool is None or "no longer reads" in " ".join(missing)))

    return _cached(key, make)


# ---------------------------------------------------------------- the cubin's own resource table

_EIATTR_FRAME_SIZE, _EIATTR_REGCOUNT = 0x11, 0x2F


def _elf_sections(blob: bytes) -> dict[str, tuple[int, int, int]]:
    """{section name: (offset, size, sh_info)} of a 64-bit little-endian ELF (a cubin)."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2:
        return {}
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    out = {}
    for name, _type, _flags, _addr, off, size, _link, info, _align, _ent in heads:
        end = blob.index(b"\0", strtab + name)
        out[blob[strtab + name:end].decode(errors="replace")] = (off, size, info)
    return out


def _nv_info(data: bytes) -> list[tuple[int, bytes]]:
    """(attribute, payload) of an .nv.info section (format byte, attribute byte, then a value)."""
    out, i = [], 0
    while i + 2 <= len(data):
        fmt, attr = data[i], data[i + 1]
        if fmt == 4:  # EIFMT_SVAL: u16 size, payload
            size, = struct.unpack_from("<H", data, i + 2)
            out.append((attr, data[i + 4:i + 4 + size]))
            i += 4 + size
        elif fmt in (2, 3):  # EIFMT_BVAL / HVAL: a 2-byte value
            out.append((attr, data[i + 2:i + 4]))
            i += 4
        else:  # EIFMT_NVAL: no value
            out.append((attr, b""))
            i += 2
    return out


def cubin_resources(cubin: bytes, kernel: str, arch: int, sass: str = "") -> dict | None:
    """The kernel's resources from the cubin (what cuobjdump --dump-resource-usage reads): registers
    and stack frame from the .nv.info tables, static shared memory from .nv.shared.<kernel> (less the
    1 KB an sm_90 cubin counts there, which the occupancy model adds itself), spill bytes from the
    SASS's local stores and loads (ptxas counts them the same way). None when the cubin has no entry."""
    try:
        secs = _elf_sections(cubin)
        text = secs.get(f".text.{kernel}")
        if text is None:
            return None
        sym = text[2] & 0xFFFFFF
        regs = text[2] >> 24  # older cubins keep the count here
        frame = 0
        for name in (".nv.info", f".nv.info.{kernel}"):
            if name not in secs:
                continue
            off, size, _ = secs[name]
            for attr, val in _nv_info(cubin[off:off + size]):
                if attr in (_EIATTR_REGCOUNT, _EIATTR_FRAME_SIZE) and len(val) == 8:
                    s, v = struct.unpack("<II", val)
                    if s == sym:
                        if attr == _EIATTR_REGCOUNT:
                            regs = regs or v
                        else:
                            frame = v
        if not regs:
            return None
        shared = secs.get(f".nv.shared.{kernel}", (0, 0, 0))[1]
        if arch >= 90 and shared >= 1024:  # sm_90 cubins count the reserved 1 KB here, sm_80 ones do not
            shared -= 1024
        st = ld = 0
        if sass:
            for i in parse(sass):
                if i.op == "STL":
                    st += _width(i)
                elif i.op == "LDL":
                    ld += _width(i)
        return dict(registers=int(regs), shared_bytes=int(shared), stack_bytes=int(frame), spill_stores=st,
                    spill_loads=ld)
    except (struct.error, ValueError, IndexError):
        return None


def _only(sass: str, kernel: str) -> str:
    """The text of `kernel`'s own section of a disassembly."""
    m = re.search(rf"^\s*\.section\s+\.text\.{re.escape(kernel)},.*?(?=^\s*\.section\s|\Z)", sass, re.M | re.S)
    return m.group(0) if m else sass


# ---------------------------------------------------------------- parse

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\s*([^;]*);")


@dataclass
class Instr:
    pc: int
    op: str  # base opcode, e.g. HMMA
    full: str  # with modifiers, e.g. HMMA.16816.F32
    operands: str
    predicated: bool
    line: int | None = None  # the kernel source's line (nvdisasm -g of a -lineinfo cubin), None if unknown


_LABEL = re.compile(r"^(\.L\w+):", re.M)
_SRC_LINE = re.compile(r"^\s*//## File (.*)$", re.M)  # '"f", line N' [' inlined at "g", line M' ...]
SOURCE_NAME = "kernel.cu"  # the name build() gives NVRTC for the kernel's own source


def _source_line(comment: str) -> int | None:
    """The kernel's own line in a -g line comment: a header's line inlined into the kernel counts as the
    kernel line it was inlined at (the last of the chain in the kernel's file)."""
    lines = [int(n) for f, n in re.findall(r'"([^"]*)", line (\d+)', comment) if f.endswith(SOURCE_NAME)]
    return lines[-1] if lines else None


def parse(sass: str) -> list[Instr]:
    """The instructions, with branch targets given as labels (`(.L_x_3)) turned into addresses."""
    out = []
    labels, pending, line = {}, [], None
    for m in re.finditer(rf"{_SRC_LINE.pattern}|{_LABEL.pattern}|{_LINE.pattern}", sass, re.M):
        if m.group(1) is not None:
            line = _source_line(m.group(1))
            continue
        if m.group(2):
            pending.append(m.group(2))
            continue
        full = m.group(5)
        ins = Instr(int(m.group(3), 16), full.split(".")[0], full, m.group(6).strip(), bool(m.group(4)), line)
        for name in pending:
            labels[name] = ins.pc
        pending = []
        out.append(ins)
    for ins in out:
        if ins.op == "BRA":
            lab = re.search(r"\((\.L\w+)\)", ins.operands)
            if lab and lab.group(1) in labels:
                ins.operands = f"0x{labels[lab.group(1)]:x}"
    return out


# QMMA: mma.sync on FP8 (e4m3/e5m2) as sm_89 compiles it (QMMA.16832.F32.E4M3.E4M3); sm_90 has no
# QMMA and runs the same mma.sync as two HMMA.16816 (ptxas via NVRTC 13.0, checked on the CPU)
TENSOR_OPS = ("HMMA", "HGMMA", "QMMA", "DMMA", "IMMA", "BMMA", "IGMMA")


def tensor_flops(i: Instr) -> int:
    """FLOPs one warp's execution of a tensor-core instruction does (0: not one)."""
    if i.op not in TENSOR_OPS:
        return 0
    shape = re.search(r"\.(\d+)X(\d+)X(\d+)", i.full)  # HGMMA.64x256x16: a warpgroup of 4 warps
    if shape:
        m, n, k = (int(x) for x in shape.groups())
        return 2 * m * n * k // 4
    digits = re.search(r"\.(\d{3,5})\b", i.full)
    if digits:
        s = digits.group(1)
        # 16816 -> 16x8x16, 1688 -> 16x8x8, 1684 -> 16x8x4, 884 -> 8x8x4, 8816 -> 8x8x16
        for a, b in ((2, 1), (1, 1)):
            try:
                m, n, k = int(s[:a]), int(s[a:a + b]), int(s[a + b:])
            except ValueError:
                continue
            if m in (8, 16) and n == 8 and k in (4, 8, 16, 32):
                return 2 * m * n * k
    return 2 * 16 * 8 * 16


def _width(i: Instr) -> int:
    """Bytes one lane moves."""
    f = i.full
    if i.op == "LDSM":
        x = re.search(r"\.(\d)$", f)
        return 4 * int(x.group(1)) if x else 4  # x1: 4 B per lane (one 8x8 b16 matrix per warp)
    for suf, b in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1)):
        if suf in f:
            return b
    return 4


# FLOPs one lane's instruction does on the CUDA cores (HFMA2.MMA is a move: no math)
_FP_FLOPS = {"FFMA": 2, "DFMA": 2, "FMUL": 1, "FADD": 1, "DMUL": 1, "DADD": 1, "HFMA2": 4, "HMUL2": 2, "HADD2": 2}


def fp_flops(i: Instr) -> int:
    """FLOPs one warp's execution of a CUDA-core floating-point instruction does (0: not one)."""
    if i.op == "HFMA2" and ".MMA" in i.full:
        return 0
    return 32 * _FP_FLOPS.get(i.op, 0)


# The SM's narrow pipes (CUDA C++ Programming Guide, "Arithmetic Instructions", compute capability 9.0: results
# per clock per SM): fp64 add/multiply/fma 64, type conversions 16 (to and from 64-bit types, and all others but
# 8/16-bit integers), special functions (MUFU: reciprocal, sqrt, exp...) 16. Instructions per warp on each.
# "alu": the integer and logic instructions of the ALU pipe (integer add, compare, select, shift, bitwise, LEA: 64
# results per clock per SM, half the fp32 rate); IMAD is left out: ptxas issues it to the fp32 pipe, often as a move.
PIPES = {"fp64": ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX"), "convert": ("F2F", "F2I", "I2F", "FRND"),
         "mufu": ("MUFU",), "alu": ("IADD3", "ISETP", "SEL", "LEA", "LOP3", "SHF", "IMNMX", "IABS", "PRMT", "FSEL")}
# read-modify-writes of global memory (atomicAdd and the like), done at L2
ATOMICS = ("RED", "REDG", "ATOM", "ATOMG")


def on_fp64(i: Instr) -> bool:
    """An instruction that exists because a value is double: fp64 math, or a conversion to or from fp64."""
    return i.op in PIPES["fp64"] or (i.op in PIPES["convert"] and "64" in i.full)


KINDS = {
    "LDG": "global load", "STG": "global store", "LDGSTS": "async copy (cp.async)", "LDS": "shared load",
    "LDSM": "ldmatrix", "STS": "shared store", "LDL": "local load (spill)", "STL": "local store (spill)",
    "BAR": "barrier", "DEPBAR": "async-copy wait", "LDGDEPBAR": "async-copy commit", "UTMALDG": "TMA load",
    "SYNCS": "mbarrier",
}


@dataclass
class Mix:
    """Per warp, in one span of code (the main loop, or the whole kernel)."""

    counts: dict = field(default_factory=dict)  # opcode -> instructions
    bytes: dict = field(default_factory=dict)  # LDG/LDGSTS/LDS/LDSM/STS/LDL/STL -> bytes per warp
    wavefronts: dict = field(default_factory=dict)  # LDS/LDSM/STS/LDGSTS -> conflict-free wavefronts per warp
    tensor: int = 0  # tensor-core instructions
    tensor_flops: int = 0  # FLOPs they do, per warp
    tensor_ops: dict = field(default_factory=dict)  # full opcode -> count
    fp_flops: int = 0  # FLOPs the CUDA-core floating-point instructions do, per warp
    pipes: dict = field(default_factory=dict)  # PIPES name -> instructions per warp
    fp64_pipes: dict = field(default_factory=dict)  # of `pipes`, those there because a value is double
    lines: dict = field(default_factory=dict)  # "fp64" | "BAR" | "LDL" | "STL" | "alu" | "atomic" -> {line: instructions}
    wait_depth: int | None = None  # the least N of the DEPBAR.LE SB0, N waits (cp.async groups left in flight)
    overlapped: bool = False  # loads of a later iteration are issued before this iteration's math
    span: tuple = (0, 0)
    in_loop: bool = False

    def n(self, *ops) -> int:
        return sum(self.counts.get(o, 0) for o in ops)

    def b(self, *ops) -> int:
        return sum(self.bytes.get(o, 0) for o in ops)


def _loops(instrs: list[Instr]) -> list[tuple[int, int]]:
    """(start, end) pc of every backward branch's loop."""
    out = []
    for i in instrs:
        if i.op == "BRA":
            tgt = re.search(r"0x([0-9a-f]+)", i.operands)
            if tgt and int(tgt.group(1), 16) < i.pc:
                out.append((int(tgt.group(1), 16), i.pc))
    return out


def _mix(instrs: list[Instr], span: tuple[int, int], in_loop: bool, nested=()) -> Mix:
    """`nested`: the spans of loops inside `span` (without math: else one of them would be the main loop)."""
    mx = Mix(span=span, in_loop=in_loop)
    body = [i for i in instrs if span[0] <= i.pc <= span[1]]
    for i in body:
        mx.counts[i.op] = mx.counts.get(i.op, 0) + 1
        mx.fp_flops += fp_flops(i)
        # a nested loop's integer ops are left out of the ALU pipe: SASS counts its body once, but it runs as often as
        # its trip count says (a tile copy `for (c = threadIdx.x; c < CHUNKS; c += THREADS)` once or not at all, its
        # 4x-unrolled and remainder versions both in the SASS), and its memory traffic is charged by the emulator
        skip_alu = i.op in PIPES["alu"] and any(a <= i.pc <= e for a, e in nested)
        for pipe, ops in PIPES.items():
            if i.op in ops and not (pipe == "alu" and skip_alu):
                mx.pipes[pipe] = mx.pipes.get(pipe, 0) + 1
        for key, hit in (("fp64", on_fp64(i)), ("BAR", i.op == "BAR"), ("LDL", i.op == "LDL"), ("STL", i.op == "STL"),
                         ("alu", i.op in PIPES["alu"] and not skip_alu), ("atomic", i.op in ATOMICS)):
            if hit:
                if key == "fp64":
                    pipe = "fp64" if i.op in PIPES["fp64"] else "convert"
                    mx.fp64_pipes[pipe] = mx.fp64_pipes.get(pipe, 0) + 1
                if i.line is not None:
                    at = mx.lines.setdefault(key, {})
                    at[i.line] = at.get(i.line, 0) + 1
        if i.op in ("LDG", "LDGSTS", "LDS", "LDSM", "STS", "LDL", "STL", "STG"):
            mx.bytes[i.op] = mx.bytes.get(i.op, 0) + 32 * _width(i)
        if i.op in ("LDS", "LDSM", "STS", "LDGSTS"):  # shared memory moves 128 bytes per wavefront, 1 at least
            mx.wavefronts[i.op] = mx.wavefronts.get(i.op, 0) + max(1, 32 * _width(i) // 128)
        f = tensor_flops(i)
        if f:
            mx.tensor += 1
            mx.tensor_flops += f
            mx.tensor_ops[i.full] = mx.tensor_ops.get(i.full, 0) + 1
        if i.op == "DEPBAR":
            m = re.search(r"SB0,\s*0x([0-9a-f]+)", i.operands)
            if m:
                d = int(m.group(1), 16)
                mx.wait_depth = d if mx.wait_depth is None else min(mx.wait_depth, d)
    # loads overlapped with math: in the loop, a global load or async copy sits between tensor
    # instructions or after the first one, and the shared stores that consume register-staged loads
    # come after the math (double buffering through registers); cp.async: the wait leaves groups in flight
    first_t = next((k for k, i in enumerate(body) if tensor_flops(i) or fp_flops(i)), None)
    if first_t is not None:
        loads = [k for k, i in enumerate(body) if i.op in ("LDG", "LDGSTS", "UTMALDG")]
        if mx.n("LDGSTS") and mx.wait_depth is not None:
            mx.overlapped = mx.wait_depth > 0
        elif mx.n("UTMALDG"):
            mx.overlapped = True
        elif loads and mx.n("STS"):
            sts = [k for k, i in enumerate(body) if i.op == "STS"]
            mx.overlapped = min(loads) < first_t < min(sts)
        else:
            mx.overlapped = False
    return mx


def analyse(sass: str) -> tuple[Mix, Mix]:
    """(main loop, whole kernel). The main loop is the loop with the most tensor-core FLOPs (the most
    FMAs when there are none), the innermost of equals; without a loop, the whole kernel twice."""
    instrs = parse(sass)
    whole = _mix(instrs, (0, instrs[-1].pc if instrs else 0), False)

    def work(span):
        body = [i for i in instrs if span[0] <= i.pc <= span[1]]
        return sum(tensor_flops(i) for i in body) or sum(fp_flops(i) for i in body)

    spans = _loops(instrs)
    loops = [(work(s), -(s[1] - s[0]), s) for s in spans]
    loops = [x for x in loops if x[0] > 0]
    if not loops:
        return whole, whole
    best = max(loops)[2]
    nested = [s for s in spans if best[0] <= s[0] and s[1] <= best[1] and s != best]
    return _mix(instrs, best, True, nested), whole
