"""Inline PTX for the CPU emulator: parse an `asm(...)` statement, check every instruction of
its template against the forms include/emu_ptx.h runs, and write the C++ that runs it.

The rewrite is one line of C++ (a `do { ... } while (0)`, so it stands wherever the asm
statement stood), followed by as many line breaks as the statement spanned, so the user's
line numbers hold. Anything outside the supported forms is refused here, at compile time,
with the instruction and its line named.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from grader.runtime.errors import CompileError, Diagnostic, Unsupported

SUPPORTED = ("mma.sync m16n8k16 / m16n8k8 (f16 or bf16 in, f32 or f16 out), f64 m8n8k4 / m16n8k4 / "
             "m16n8k8 / m16n8k16, and m16n8k32 e4m3/e5m2 (f32 or f16 accumulate); mma.sp (2:4 sparse A) "
             "m16n8k16 / m16n8k32 f16 or bf16; ldmatrix m8n8 x1/x2/x4 (.trans); cp.async.ca/cg with "
             "commit_group/wait_group/wait_all; cvt.rn.satfinite.e4m3x2/e5m2x2 (.f32, .f16x2), "
             "cvt.rn.f16x2.e4m3x2/e5m2x2; cvta(.to).shared, cvt.u32.u64, mov; prmt.b32 (its generic form)")

HOPPER = ("wgmma", "mbarrier", "setmaxnreg", "elect", "tensormap")
_TYPE = {"f16": "::emu::ptx::F16", "bf16": "::emu::ptx::BF16", "f32": "::emu::ptx::F32", "f64": "::emu::ptx::F64",
         "e4m3": "::emu::ptx::E4M3", "e5m2": "::emu::ptx::E5M2"}


@dataclass
class Operand:
    constraint: str  # the letter: r l h f d n
    mode: str  # "out", "inout" or "in"
    expr: str  # the C++ expression, as written


def _unsupported(what: str, line: int) -> Unsupported:
    return Unsupported(f"{what} (line {line}) is not supported by the CPU emulator; it runs these inline PTX "
                       f"forms: {SUPPORTED}. Run this kernel on a GPU.")


def _split_top(text: str, code: str, sep: str) -> list[tuple[int, int]]:
    """Spans of `text` between top-level `sep` characters; `code` is text with strings and
    comments blanked (translate.code_view), so separators inside them do not count."""
    spans, depth, start = [], 0, 0
    for i, ch in enumerate(code):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            spans.append((start, i))
            start = i + 1
    spans.append((start, len(code)))
    return spans


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "", "0": ""}


def _template(text: str, line: int) -> str:
    """The PTX text of the asm's first part: adjacent string literals, concatenated."""
    parts, pos = [], 0
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', text):
        if text[pos:m.start()].strip():
            raise _unsupported("an asm template that is not string literals", line)
        parts.append(re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(1)), m.group(1)))
        pos = m.end()
    if text[pos:].strip() or not parts:
        raise _unsupported("an asm template that is not string literals", line)
    return "".join(parts)


def _operands(text: str, code: str, mode: str, line: int) -> list[Operand]:
    out = []
    for a, b in _split_top(text, code, ","):
        part = text[a:b].strip()
        if not part:
            continue
        m = re.fullmatch(r'(\[\w+\]\s*)?"([=+&]*)([a-zA-Z])&?"\s*\((.*)\)', part, re.S)
        if not m:
            raise _unsupported(f"the asm operand '{part[:60]}'", line)
        if m.group(1):
            raise _unsupported("named asm operands ([name])", line)
        c = m.group(3)
        if c not in "rlhfdn":
            raise _unsupported(f"the asm constraint '{c}'", line)
        mod = m.group(2)
        kind = "inout" if "+" in mod else "out" if "=" in mod else "in"
        if mode == "in" and kind != "in":
            raise _unsupported(f"an input operand with constraint '{mod}{c}'", line)
        out.append(Operand(c, kind if mode == "out" else "in", m.group(4).strip()))
    return out


def parse_statement(src: str, code: str, open_paren: int, line: int) -> tuple[int, str]:
    """The asm statement whose `(` is at `open_paren`: (index just past its `)`, C++ text)."""
    depth, i = 0, open_paren
    while i < len(code):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            break
        i += 1
    if depth:
        raise _unsupported("an unterminated asm statement", line)
    # line continuations (an asm inside a #define): blanks of the same length
    inner = src[open_paren + 1:i].replace("\\\n", "  ")
    inner_code = code[open_paren + 1:i].replace("\\\n", "  ")
    sections = _split_top(inner, inner_code, ":")
    if len(sections) > 4:
        raise _unsupported("asm goto", line)
    tmpl = _template(inner[slice(*sections[0])], line)
    outs = _operands(inner[slice(*sections[1])], inner_code[slice(*sections[1])], "out", line) if len(sections) > 1 else []
    ins = _operands(inner[slice(*sections[2])], inner_code[slice(*sections[2])], "in", line) if len(sections) > 2 else []
    return i + 1, Program(tmpl, outs + ins, line).cpp()


class Program:
    """One asm template compiled to emu_ptx.h calls."""

    def __init__(self, template: str, operands: list[Operand], line: int):
        self.ops, self.line = operands, line
        self.regs: dict[str, int] = {}  # .reg names -> index into __emu_r
        self.imms: list[str] = []  # immediates (C++ expressions): __emu_i
        self.arrays: list[str] = []  # `Slot* __emu_vN[] = {...};` declarations
        self.calls: list[str] = []
        text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", template, flags=re.S))
        for stmt in text.split(";"):
            stmt = stmt.strip()
            while stmt[:1] in ("{", "}"):  # scope braces ({ .reg ...; ...; })
                stmt = stmt[1:].strip()
            if stmt:
                self.statement(stmt)

    # ------------------------------------------------------------ operands
    def atom(self, tok: str) -> str:
        """A C++ expression of type Slot* for one register/immediate operand."""
        tok = tok.strip()
        m = re.fullmatch(r"%(\d+)", tok)
        if m:
            n = int(m.group(1))
            if n >= len(self.ops):
                raise _unsupported(f"operand %{n} of an asm with {len(self.ops)} operands", self.line)
            return f"&__emu_o[{n}]"
        if re.fullmatch(r"[A-Za-z_$][\w$]*", tok):
            if tok not in self.regs:
                raise _unsupported(f"the register '{tok}' (not a .reg of this asm, nor %N)", self.line)
            return f"&__emu_r[{self.regs[tok]}]"
        m = re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)[uU]?", tok)
        if m or tok == "%%laneid":  # an immediate, or the lane's index in its warp
            self.imms.append(str(int(tok.rstrip("uU"), 0)) if m else "__emu_cur->lane")
            return f"&__emu_i[{len(self.imms) - 1}]"
        raise _unsupported(f"the PTX operand '{tok}'", self.line)

    def vector(self, tok: str, n: int, what: str) -> str:
        tok = tok.strip()
        if not (tok.startswith("{") and tok.endswith("}")):
            items = [tok]
        else:
            items = [t for t in tok[1:-1].split(",") if t.strip()]
        if len(items) != n:
            raise _unsupported(f"{what} with {len(items)} registers where PTX has {n}", self.line)
        name = f"__emu_v{len(self.arrays)}"
        self.arrays.append(f"::emu::ptx::Slot* {name}[] = {{{', '.join(self.atom(t) for t in items)}}};")
        return name

    def address(self, tok: str) -> tuple[str, int]:
        m = re.fullmatch(r"\[\s*([^\]+\-\s]+)\s*(?:([+-])\s*(\w+))?\s*\]", tok.strip())
        if not m:
            raise _unsupported(f"the PTX address '{tok.strip()}'", self.line)
        off = int(m.group(3), 0) * (-1 if m.group(2) == "-" else 1) if m.group(3) else 0
        return self.atom(m.group(1)), off

    # ------------------------------------------------------------ instructions
    def statement(self, stmt: str) -> None:
        if stmt.startswith("@"):
            raise _unsupported(f"the predicated PTX instruction '{stmt.split()[0]} ...'", self.line)
        # any white space ends the opcode: a tab or a line break as well as a space
        opcode, rest = (stmt.split(None, 1) + [""])[:2]
        rest = rest.strip()
        args = [rest[a:b].strip() for a, b in _split_top(rest, rest, ",")] if rest else []
        parts = opcode.split(".")
        head = parts[0]
        if head == "" and len(parts) > 1 and parts[1] == "reg":  # .reg .u64 a, b<2>;
            names = [t for t in re.split(r"[\s,]+", rest) if t and not t.startswith(".")]
            for n in names:
                m = re.fullmatch(r"(\w+)<(\d+)>", n)
                for name in ([f"{m.group(1)}{k}" for k in range(int(m.group(2)))] if m else [n]):
                    self.regs[name] = len(self.regs)
            return
        if head in HOPPER or opcode.startswith(("cp.async.bulk", "fence.proxy", "fence.mbarrier_init")):
            raise Unsupported(f"the inline PTX instruction '{opcode}' (line {self.line}) is not supported by the "
                              "CPU emulator: it belongs to Hopper's asynchronous machinery (wgmma, TMA "
                              "cp.async.bulk, mbarrier, setmaxnreg), which the emulator does not model; this "
                              "kernel needs an sm_90 GPU")
        if opcode.startswith("mma."):
            return self.mma(opcode, parts, args)
        if head == "ldmatrix":
            return self.ldmatrix(opcode, parts, args)
        if opcode.startswith("cp.async.") and not opcode.startswith("cp.async.bulk"):
            return self.cp_async(opcode, parts, args)
        if head == "cvt" and ("e4m3x2" in parts or "e5m2x2" in parts):
            return self.cvt_fp8(opcode, parts, args)
        if head in ("cvta", "cvt", "mov"):
            return self.scalar(opcode, parts, args)
        if parts == ["prmt", "b32"]:  # the generic form only (no .f4e, .b4e, .rc8, .ecl, .ecr, .rc16 mode)
            self.need(args, 4, opcode)
            self.calls.append(f"::emu::ptx::prmt({', '.join(self.atom(a) for a in args)});")
            return
        raise _unsupported(f"the inline PTX instruction '{opcode}'", self.line)

    def need(self, args, n, opcode):
        if len(args) != n:
            raise _unsupported(f"'{opcode}' with {len(args)} operands", self.line)

    def mma(self, opcode, parts, args):
        mods = parts[1:]
        sparse = mods[0] in ("sp", "sp::ordered_metadata")
        ordered = mods[0] == "sp::ordered_metadata"
        if sparse:
            mods = mods[1:]
        shape = next((p for p in mods if re.fullmatch(r"m\d+n\d+k\d+", p)), "")
        types = [p for p in mods if p in ("f16", "bf16", "f32", "f64", "tf32", "s8", "u8", "s4", "u4", "b1",
                                          "e4m3", "e5m2", "s32")]
        # only .row.col exists for these shapes (A row-major, B column-major fragments)
        if mods[:2] != ["sync", "aligned"] or mods[2:5] != [shape, "row", "col"] or mods[5:] != types \
                or len(types) != 4:
            raise _unsupported(f"the inline PTX instruction '{opcode}'", self.line)
        dt, at, bt, ct = types
        M, N, K = map(int, re.findall(r"\d+", shape))
        f16ish = at in ("f16", "bf16") and at == bt and dt in ("f16", "f32") and ct in ("f16", "f32")
        fp8 = at in ("e4m3", "e5m2") and bt in ("e4m3", "e5m2") and dt == ct and dt in ("f16", "f32") \
            and (M, N, K) == (16, 8, 32)
        if sparse:
            ok = f16ish and (M, N, K) in ((16, 8, 16), (16, 8, 32))
        else:
            ok = (f16ish and (M, N, K) in ((16, 8, 16), (16, 8, 8))) or fp8 or \
                ((dt, at, bt, ct) == ("f64",) * 4 and (M, N, K) in ((8, 8, 4), (16, 8, 4), (16, 8, 8), (16, 8, 16)))
        if not ok:
            raise _unsupported(f"the inline PTX instruction '{opcode}'", self.line)
        if (M, N, K) == (16, 8, 16) and ct == "f16" and dt != "f16" and not sparse:
            # what ptxas says of this form on the GPU (CUDA 13, sm_90; H100 run of 2026-11-26): the
            # grammar lists .dtype and .ctype separately, but this shape takes an f16 C only into an f16 D
            why = ".dtype must be '.f16' when .ctype is '.f16' for 'mma' instruction with shape '.m16n8k16'"
            raise CompileError(f"Compilation failed (line {self.line}): {why} (ptxas refuses '{opcode}' on a GPU too)",
                               log=why, diagnostics=[Diagnostic("error", f"{why} ('{opcode}')", line=self.line)],
                               hint="Accumulate in the type you write: .f32.f16.f16.f32, or .f16.f16.f16.f16.")
        self.need(args, 6 if sparse else 4, opcode)

        def regs(elems, typ):  # registers per lane (an f32/f64 register holds one element)
            bits = {"f64": 64, "f32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8}[typ]
            return elems // 32 if bits >= 32 else elems // 32 * bits // 32

        d = self.vector(args[0], regs(M * N, dt), f"the D operand of '{opcode}'")
        a = self.vector(args[1], regs(M * K // (2 if sparse else 1), at), f"the A operand of '{opcode}'")
        b = self.vector(args[2], regs(K * N, bt), f"the B operand of '{opcode}'")
        c = self.vector(args[3], regs(M * N, ct), f"the C operand of '{opcode}'")
        extra = f", {self.atom(args[4])}, {self.atom(args[5])}" if sparse else ""
        if fp8:  # as ptxas refuses them below (built for an older arch: EmuModule(src, arch=80))
            self.arch_at_least(890, f"mma.sync m16n8k32 with .{at}/.{bt} inputs needs sm_89 or newer")
        elif sparse:
            self.arch_at_least(800, "mma.sp needs sm_80 or newer")
        self.calls.append(f"::emu::ptx::mma<{M}, {N}, {K}, {_TYPE[dt]}, {_TYPE[at]}, {_TYPE[bt]}, {_TYPE[ct]}, "
                          f"{'true' if sparse else 'false'}, {'true' if ordered else 'false'}>"
                          f"(__LINE__, {d}, {a}, {b}, {c}{extra});")

    def arch_at_least(self, arch: int, why: str) -> None:
        """The build's arch (__CUDA_ARCH__) must be `arch` or newer: a compile error at the asm's line."""
        self.calls.append(f'static_assert(__CUDA_ARCH__ >= {arch}, "{why}");')

    def cvt_fp8(self, opcode, parts, args):
        """cvt.rn.satfinite{.relu}.e4m3x2|e5m2x2.f32|f16x2 and cvt.rn.f16x2.e4m3x2|e5m2x2 (sm_89+)."""
        mods = parts[1:]
        self.arch_at_least(890, f"'{opcode}' needs sm_89 or newer")
        if mods[:2] == ["rn", "satfinite"]:
            rest = mods[3:] if mods[2:3] == ["relu"] else mods[2:]
            relu = "true" if mods[2:3] == ["relu"] else "false"
            if len(rest) == 2 and rest[0] in ("e4m3x2", "e5m2x2") and rest[1] in ("f32", "f16x2"):
                e5 = "true" if rest[0] == "e5m2x2" else "false"
                if rest[1] == "f32":
                    self.need(args, 3, opcode)
                    d, a, b = (self.atom(x) for x in args)
                    self.calls.append(f"::emu::ptx::cvt_f32x2_to_fp8x2<{e5}, {relu}>({d}, {a}, {b});")
                else:
                    self.need(args, 2, opcode)
                    d, a = (self.atom(x) for x in args)
                    self.calls.append(f"::emu::ptx::cvt_f16x2_to_fp8x2<{e5}, {relu}>({d}, {a});")
                return
        if mods[:2] == ["rn", "f16x2"] and mods[2:] in (["e4m3x2"], ["e5m2x2"]):
            self.need(args, 2, opcode)
            d, a = (self.atom(x) for x in args)
            self.calls.append(f"::emu::ptx::cvt_fp8x2_to_f16x2<{'true' if mods[2] == 'e5m2x2' else 'false'}>({d}, {a});")
            return
        raise _unsupported(f"the inline PTX instruction '{opcode}'", self.line)

    def ldmatrix(self, opcode, parts, args):
        mods = parts[1:]
        num = next((int(p[1:]) for p in mods if p in ("x1", "x2", "x4")), 0)
        known = {"sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta", "b16"}
        if not num or set(mods) - known or not {"sync", "aligned", "m8n8", "b16"} <= set(mods):
            raise _unsupported(f"the inline PTX instruction '{opcode}'", self.line)
        self.need(args, 2, opcode)
        d = self.vector(args[0], num, f"the destination of '{opcode}'")
        addr, off = self.address(args[1])
        shared = "true" if ("shared" in mods or "shared::cta" in mods) else "false"
        trans = "true" if "trans" in mods else "false"
        self.calls.append(f"::emu::ptx::ldmatrix<{num}, {trans}, {shared}>(__LINE__, {d}, {addr}, {off});")

    def cp_async(self, opcode, parts, args):
        mods = parts[2:]  # after cp.async
        if mods == ["commit_group"]:
            self.need(args, 0, opcode)
            self.calls.append("__emu_cp_commit();")
            return
        if mods == ["wait_group"]:
            self.need(args, 1, opcode)
            self.calls.append(f"__emu_cp_wait(({self.atom(args[0])})->v, __LINE__);")
            return
        if mods == ["wait_all"]:  # = commit_group; wait_group 0 (PTX ISA, cp.async.wait_all)
            self.need(args, 0, opcode)
            self.calls.append("__emu_cp_commit(); __emu_cp_wait(0, __LINE__);")
            return
        cache = mods[0] if mods else ""
        rest = mods[1:]
        known_l2 = {"L2::64B", "L2::128B", "L2::256B"}
        if cache not in ("ca", "cg") or not rest or rest[0] not in ("shared", "shared::cta") \
                or rest[1:2] != ["global"] or set(rest[2:]) - known_l2:
            raise _unsupported(f"the inline PTX instruction '{opcode}'", self.line)
        if len(args) not in (3, 4):
            raise _unsupported(f"'{opcode}' with {len(args)} operands", self.line)
        size = args[2].strip()
        if not re.fullmatch(r"4|8|16", size):
            raise _unsupported(f"'{opcode}' with cp-size '{size}' (4, 8 or 16)", self.line)
        if cache == "cg" and size != "16":
            raise _unsupported(f"'{opcode}' with cp-size {size} (.cg copies 16 bytes)", self.line)
        dst, doff = self.address(args[0])
        src, soff = self.address(args[1])
        src_size = self.atom(args[3]) if len(args) == 4 else "nullptr"
        self.calls.append(f"::emu::ptx::cp_async(__LINE__, {dst}, {doff}, true, {src}, {soff}, {size}, {src_size});")

    def scalar(self, opcode, parts, args):
        self.need(args, 2, opcode)
        d, a = self.atom(args[0]), self.atom(args[1])
        if parts[:3] in (["cvta", "to", "shared"],) and parts[3:] in (["u64"], ["u32"]):
            self.calls.append(f"::emu::ptx::cvta_to_shared({d}, {a});")
        elif parts[:2] == ["cvta", "shared"] and parts[2:] in (["u64"], ["u32"]):
            self.calls.append(f"::emu::ptx::cvta_shared({d}, {a}, __LINE__);")
        elif parts in (["cvt", "u32", "u64"], ["cvt", "u64", "u32"]):
            self.calls.append(f"::emu::ptx::mov({d}, {a}, 32);")
        elif parts[0] == "mov" and parts[1:] in (["b32"], ["u32"], ["s32"]):
            self.calls.append(f"::emu::ptx::mov({d}, {a}, 32);")
        elif parts[0] == "mov" and parts[1:] in (["b64"], ["u64"], ["s64"]):
            self.calls.append(f"::emu::ptx::mov({d}, {a}, 64);")
        else:
            raise _unsupported(f"the inline PTX instruction '{opcode}'", self.line)

    # ------------------------------------------------------------ C++
    def cpp(self) -> str:
        ops = ", ".join(f"::emu::ptx::{o.mode}({o.expr})" for o in self.ops)
        parts = ["do {"]
        parts.append(f"::emu::ptx::Slot __emu_o[] = {{{ops}}};" if self.ops else "::emu::ptx::Slot* __emu_o = nullptr;")
        if self.regs:
            parts.append(f"::emu::ptx::Slot __emu_r[{len(self.regs)}] = {{}};")
        if self.imms:
            parts.append(f"::emu::ptx::Slot __emu_i[] = {{{', '.join(f'::emu::ptx::imm({v})' for v in self.imms)}}};")
        parts += self.arrays + self.calls
        parts.append("(void)__emu_o; } while (0)")
        return " ".join(parts)
