"""Compile CUDA C++ kernels: NVRTC alone (no GPU needed) or CuPy RawModule (on a GPU).

NVRTC alone goes through grader.runtime.nvrtc (ctypes), so it can be NVRTC 12 or 13 whichever
CuPy is installed: sm_70 needs NVRTC 12.

Both paths report errors the same way: a CompileError whose diagnostics carry the line of
the source the user wrote, so a notebook can point at the student's own line.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property

from grader.runtime import nvrtc as nvrtc_lib
from grader.runtime import ptx as ptx_tools
from grader.runtime.errors import CompileError, CourseError, Diagnostic
from grader.runtime.headers import include_options
from grader.runtime.signature import Param, parse_kernels

FILENAME = "kernel.cu"
# c++17 for `if constexpr` and friends students meet in samples.
BASE_OPTIONS = ("--std=c++17",)
# The GPUs the course knows: Volta, Turing, Ampere, Ada, Hopper.
COURSE_ARCHS = (70, 75, 80, 86, 89, 90)


def _supported() -> tuple[int, ...]:
    """The course's archs that an installed NVRTC targets: NVRTC 13 from sm_75 up (CUDA 13
    dropped offline compilation below 7.5, FACTS.md), NVRTC 12 also sm_70."""
    archs = {a for nv in nvrtc_lib.available() for a in nv.archs}
    return tuple(a for a in COURSE_ARCHS if a in archs) or (75, 80, 86, 89, 90)


SUPPORTED_ARCHS = _supported()

# NVRTC: `kernel.cu(13): error: identifier "x" is undefined`, also `warning #177-D:` and
# `catastrophic error:`. The caret lines that follow belong to the message before.
_DIAG = re.compile(
    r"^(?P<file>[^\n(]+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark)"
    r"(?: #[\w-]+)?: (?P<msg>.*)$", re.M)


def parse_log(log: str, source: str, *, filename: str = FILENAME,
              line_offset: int = 0) -> list[Diagnostic]:
    """Turn an NVRTC log into diagnostics. Lines in `filename` are shifted by `line_offset`
    (lines the grader put before the user's code) and paired with the user's text; messages
    from other files (headers) keep their file name in the message and no line."""
    lines = source.splitlines()
    diagnostics = []
    matches = list(_DIAG.finditer(log))
    for n, m in enumerate(matches):
        severity = "warning" if m["sev"] in ("warning", "remark") else "error"
        message = m["msg"].strip()
        file = m["file"].strip()
        if file.endswith(filename):
            line = int(m["line"]) - line_offset
            text = lines[line - 1] if 1 <= line <= len(lines) else None
            if line < 1:
                line, text = None, None
            likely = _likely_line(message, line, lines)
            body = log[m.end():matches[n + 1].start() if n + 1 < len(matches) else len(log)]
            args = _ARGS.search(body)
            diagnostics.append(Diagnostic(severity, message, line, text, likely,
                                          lines[likely - 1] if likely else None,
                                          arguments=args[1] if args else None))
        else:
            diagnostics.append(Diagnostic(severity, f"{message} (in {file}:{m['line']})"))
    if not diagnostics and log.strip():
        diagnostics.append(Diagnostic("error", log.strip().splitlines()[0]))
    return diagnostics


# The line after "no instance of overloaded function ..." naming what the call passed.
_ARGS = re.compile(r"^\s*argument types are: \((.*)\)\s*$", re.M)

_CLEAN_END = (";", "{", "}", ":", ",", "(", "[")


def _likely_line(message: str, line: int | None, lines: list[str]) -> int | None:
    """NVRTC reports a missing `;` at the next token, often the next line. When the previous
    code line (blank and comment lines skipped) does not end a statement, return it."""
    if not line or 'expected a ";"' not in message:
        return None
    for n in range(line - 1, 0, -1):
        code = re.sub(r"//.*", "", lines[n - 1]).strip()
        if not code or code.startswith(("/*", "*")):
            continue
        if code.startswith("#") or code.endswith(_CLEAN_END) or code.endswith("*/"):
            return None
        if re.match(r"^(?:}\s*)?(?:if|for|while|switch|else|do)\b", code) and not code.endswith(";"):
            return None  # `if (c)` / `else` heads a statement: the mistake is on the reported line
        return n
    return None


def compile_error(log: str, source: str, *, filename: str = FILENAME,
                  line_offset: int = 0, arch: int | None = None) -> CompileError:
    diagnostics = parse_log(log, source, filename=filename, line_offset=line_offset)
    errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
    first = errors[0] if errors else Diagnostic("error", "compilation failed")
    return CompileError(f"Compilation failed: {first}", log=log, diagnostics=diagnostics,
                        hint=hint_for(first, arch))


# WMMA fragments that exist (CUDA's crt/mma.hpp): element type -> shapes (m, n, k) and the
# accumulator types that go with them. bf16, tf32 and double need sm_80.
_WMMA_SHAPES = {
    "half": ((16, 16, 16), (32, 8, 16), (8, 32, 16)),
    "bf16": ((16, 16, 16), (32, 8, 16), (8, 32, 16)),
    "tf32": ((16, 16, 8),),
    "double": ((8, 8, 4),),
}
_ELEMENT = {"half": "half", "__half": "half", "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16",
            "precision::bf16": "bf16", "precision::tf32": "tf32", "double": "double", "float": "float",
            "int": "int", "signed char": "int8", "unsigned char": "int8"}
_FRAGMENT = re.compile(r"fragment<(?:nvcuda::)?(?:wmma::)?(matrix_a|matrix_b|accumulator),\s*(\d+),\s*(\d+),"
                       r"\s*(\d+),\s*([^,>]+?),\s*([^,>]+)>")


def _shape(mnk) -> str:
    return ", ".join(str(x) for x in mnk)


def fragment_hint(message: str, arch: int | None = None) -> str:
    """What is wrong with a WMMA fragment type NVRTC calls incomplete: its shape does not
    exist for its element type (read off the message's template arguments), or, only when
    compiling below sm_80, the type needs a newer architecture."""
    m = _FRAGMENT.search(message.split("(aka")[0])
    if not m:
        return ""
    use, mnk, raw_elem = m[1], tuple(int(x) for x in m.group(2, 3, 4)), m[5].strip()
    elem = _ELEMENT.get(re.sub(r"^(?:nvcuda::)?(?:wmma::)?", "", raw_elem), raw_elem)
    double = ("double fragments exist only as m8n8k4 (wmma::fragment<..., 8, 8, 4, double, ...>), "
              "and the accumulator must be double too.")
    tf32 = ("tf32 fragments exist only as m16n16k8 (wmma::fragment<..., 16, 16, 8, "
            "wmma::precision::tf32, ...>), with a float accumulator (fragment<wmma::accumulator, "
            "16, 16, 8, float>).")
    bf16 = ("bf16 fragments exist as m16n16k16, m32n8k16 or m8n32k16 (wmma::fragment<..., 16, 16, 16, "
            "__nv_bfloat16, ...>), with a float accumulator.")
    half = ("half fragments exist as m16n16k16, m32n8k16 or m8n32k16 (wmma::fragment<..., 16, 16, 16, "
            "half, ...>); their accumulator is float or half.")
    shape_ok = elem in _WMMA_SHAPES and mnk in _WMMA_SHAPES[elem]
    if elem == "double":
        what = "" if shape_ok else double
    elif elem == "tf32":
        what = ("The accumulator of a tf32 product is float: " + tf32) if use == "accumulator" else (
            "" if shape_ok else tf32)
    elif elem == "bf16":
        what = ("The accumulator of a bf16 product is float: " + bf16) if use == "accumulator" else (
            "" if shape_ok else bf16)
    elif mnk == (8, 8, 4):  # the double shape with another element type (a float accumulator)
        what = double if use == "accumulator" else "m8n8k4 is the double shape: " + double
        what += (" H" + half[1:]) if elem == "half" else ""
    elif mnk == (16, 16, 8):  # the tf32 shape
        what = tf32 if use == "accumulator" else "m16n16k8 is the tf32 shape: " + tf32
        what += (" H" + half[1:]) if elem == "half" and use != "accumulator" else ""
    elif elem == "half" and not shape_ok:
        what = half
    elif use == "accumulator" and elem not in ("float", "half", "int"):
        what = (f"An accumulator fragment holds float (or half, int, double), not {raw_elem}: "
                f"wmma::fragment<wmma::accumulator, {_shape(mnk)}, float>.")
    else:
        what = ""
    # The architecture only matters below sm_80 (bf16, tf32, double and their shapes need it).
    if arch is not None and arch < 80 and (elem in ("bf16", "tf32", "double") or mnk in ((8, 8, 4), (16, 16, 8))):
        what = (what + " " if what else "") + (
            f"bf16, tf32 and double WMMA fragments need sm_80 or newer; this compile targets sm_{arch}.")
    return what


def _top_level_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _overload_hint(message: str, arguments: str | None) -> str:
    """load_matrix_sync/store_matrix_sync on an accumulator without the layout_t argument,
    or with a fragment layout (wmma::row_major) where a memory layout belongs."""
    call = re.search(r'"nvcuda::wmma::(store_matrix_sync|load_matrix_sync)"', message)
    if not call or not arguments:
        return ""
    args = _top_level_args(arguments)
    fragment = args[0] if call[1] == "load_matrix_sync" else (args[1] if len(args) > 1 else "")
    if "accumulator" not in fragment:
        return ""
    verb = "store" if call[1] == "store_matrix_sync" else "load"
    if verb == "store" and args and args[0].startswith("const "):
        return ("store_matrix_sync writes through its first argument, but that pointer is `const` (an input the "
                "kernel may only read, like `const float* C`): store into the output parameter instead.")
    if len(args) == 3:
        example = "store_matrix_sync(ptr, acc, ldm, " if verb == "store" else "load_matrix_sync(acc, ptr, ldm, "
        return (f"An accumulator {verb} needs the memory layout as its 4th argument: wmma::{example}"
                "wmma::mem_row_major) (or wmma::mem_col_major). Only matrix_a/matrix_b fragments carry "
                "their layout in the type.")
    if len(args) == 4 and "layout_t" not in args[3]:
        return (f"The 4th argument of an accumulator {verb} is a memory layout, wmma::mem_row_major or "
                f"wmma::mem_col_major (not {args[3]}).")
    return ""


# a C or C++ standard header (no folder; no extension, or one of C's): not a CUDA header the install lacks
_STD_HEADER = re.compile(r'cannot open source file "((?:\w+)|(?:assert|float|limits|math|stddef|stdint|stdio|stdlib|string)'
                         r'\.h)"')
_FIXED_WIDTH = re.compile(r'identifier "(u?int(?:8|16|32|64)_t)" is undefined')
_BUILT_IN_TYPES = ("unsigned int is 32 bits and unsigned char 8 on every CUDA GPU (int, long long, size_t are "
                   "built in too): use those.")


def hint_for(d: Diagnostic, arch: int | None = None) -> str:
    """One thing to try for compiler diagnostic `d` (its line numbers as the student sees them)."""
    message = d.message
    std = _STD_HEADER.search(message)
    if std:  # the student's include, not the installation: NVRTC ships no C or C++ standard library
        return (f"NVRTC, the compiler the grader uses, finds no standard header <{std[1]}> (it ships no C++ "
                f"standard library; `python -m grader doctor` lists the folders it searched). A kernel needs none: "
                f"{_BUILT_IN_TYPES}")
    if "crt/mma.h" in message or "cannot open source file" in message:
        return ("A CUDA header is missing: run `python -m grader doctor` to see which "
                "include folders were found and what to install.")
    fixed = _FIXED_WIDTH.search(message)
    if fixed:
        return f"{fixed[1]} comes from <cstdint>, which NVRTC (the grader's compiler) does not have: {_BUILT_IN_TYPES}"
    if "is undefined" in message:
        return "Check the spelling, and that it is declared before this line (or included)."
    no_layout = re.search(r"fragment<[\w:]*(matrix_[ab]),[^>]*,\s*void>", message)
    if "incomplete type" in message and no_layout:
        return (f"matrix_a/matrix_b fragments need a 6th template argument, the layout "
                f"wmma::row_major or wmma::col_major: wmma::fragment<wmma::{no_layout[1]}, 16, 16, 16, "
                "half, wmma::row_major>. Only accumulator fragments have no layout.")
    # NVRTC 12 names no type in "incomplete type is not allowed": the declaration on the line does
    frag_text = message if "fragment" in message else (d.source_line or "")
    if "incomplete type" in message and "fragment" in frag_text:
        return fragment_hint(frag_text, arch) or (
            "This fragment type does not exist: check its shape (m, n, k) and element type against "
            "the WMMA shapes (half/bf16 m16n16k16, m32n8k16, m8n32k16; tf32 m16n16k8; double m8n8k4).")
    if ('name followed by "::" must be a class or namespace name' in message and arch is not None
            and arch < 80 and d.source_line and "precision::" in d.source_line):
        return f"wmma::precision::tf32 and bf16 need sm_80 or newer; this compile targets sm_{arch}."
    if "no instance of overloaded function" in message and "wmma::" in message:
        return _overload_hint(message, d.arguments) or (
            "The fragment types do not fit this call: a float accumulator stores to float*, a half "
            "one to half*; matrix_a/matrix_b need a layout; shapes must match.")
    if 'ambiguous "?" operation' in message and "half" in message:
        return ("Both branches of `cond ? a : b` need one type: a half and the int 0 do not mix. Write the zero "
                "as a half, e.g. `cond ? A[i] : __float2half(0.0f)`.")
    if "must be a modifiable lvalue" in message:
        target = re.match(r"\s*\*?\s*(\w+)", d.source_line or "")
        named = f"`{target[1]}`" if target else "it"
        return (f"This line writes into {named}, which cannot change here: a parameter declared `const` "
                "(`const float* C`) is an input, read-only. Write the result to the output parameter (the "
                "pointer without const), or drop a const you added yourself.")
    if 'expected a ";"' in message and d.likely_line:
        return f"A missing `;` at the end of line {d.shown(d.likely_line)} is the usual cause."
    if "expected a" in message:
        return "A missing `;`, `)` or `}` just before this line is the usual cause."
    return CompileError.hint


@dataclass
class KernelResources:
    """What ptxas reports for one kernel: a spill or a large stack frame costs speed."""

    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int


_RES_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_RES_REGS = re.compile(r"Used (\d+) registers")
_RES_SMEM = re.compile(r"(\d+) bytes smem")
_RES_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_resources(log: str) -> dict[str, KernelResources]:
    """Read `ptxas -v` output (one block per entry function)."""
    out: dict[str, KernelResources] = {}
    blocks = _RES_ENTRY.split(log)
    for name, body in zip(blocks[1::2], blocks[2::2]):
        regs = _RES_REGS.search(body)
        smem = _RES_SMEM.search(body)
        stack = _RES_STACK.search(body)
        out[name] = KernelResources(
            registers=int(regs[1]) if regs else 0,
            shared_bytes=int(smem[1]) if smem else 0,
            stack_bytes=int(stack[1]) if stack else 0,
            spill_stores=int(stack[2]) if stack else 0,
            spill_loads=int(stack[3]) if stack else 0)
    return out


@dataclass
class Compiled:
    """The result of an NVRTC compile: PTX for inspection, the log, per-kernel resources."""

    source: str
    arch: int
    ptx: str
    log: str
    warnings: list[Diagnostic] = field(default_factory=list)
    resources: dict[str, KernelResources] = field(default_factory=dict)
    nvrtc: tuple[int, int] = (0, 0)  # the NVRTC version that compiled it

    @cached_property
    def kernels(self) -> dict[str, list[Param]]:
        return parse_kernels(self.source)

    @cached_property
    def instructions(self):
        """Matrix (tensor-core) instructions in the PTX, see grader.runtime.ptx."""
        return ptx_tools.matrix_instructions(self.ptx)

    @property
    def uses_tensor_cores(self) -> bool:
        return bool(self.instructions)


class NoCompiler(CourseError):
    """No installed NVRTC targets the architecture asked for (sm_70 needs NVRTC 12)."""


def compiler_for(arch: int) -> "nvrtc_lib.Nvrtc":
    """The NVRTC that compiles for `arch`: the one of the stack CuPy uses, else another
    installed one that targets it (NVRTC 12 for sm_70 on a CUDA 13 machine). TC_NVRTC=cuda12
    (or cuda13) puts that stack's NVRTC first: a CUDA 13 GPU machine then compiles what a
    CUDA 12 machine would (.ci/gpu-cuda12)."""
    found = nvrtc_lib.available()
    prefer = os.environ.get("TC_NVRTC", "")
    found.sort(key=lambda nv: nv.stack.name != prefer)  # stable: otherwise the order stays
    for nv in found:
        if arch in nv.archs:
            return nv
    have = ", ".join(f"{nv} (sm_{min(nv.archs)} and up)" for nv in found) or "none"
    if arch < 75:
        raise NoCompiler(f"sm_{arch} needs NVRTC 12 (CUDA 13 dropped Volta); installed: {have}",
                         hint="From the course folder: pip install -e \".[nvrtc12]\" (NVRTC 12.4 and its "
                              "headers, 48 MB; no GPU needed).")
    raise NoCompiler(f"no installed NVRTC targets sm_{arch}; installed: {have}",
                     hint="Run `python -m grader doctor` to see what is missing.")


def _nvrtc_run(nv, source: str, options: list[str], filename: str, arch: int | None = None,
               output: str = "ptx"):
    """Compile once with NVRTC; returns its Output or raises CompileError."""
    try:
        return nv.compile(source, options, filename, output)
    except nvrtc_lib.NvrtcFailed as e:
        raise compile_error(e.log, source, filename=filename, arch=arch) from None


def nvrtc_compile(source: str, *, arch: int = 90, options: tuple[str, ...] | list[str] = (),
                  resources: bool = True, filename: str = FILENAME, stack: str | None = None) -> Compiled:
    """Compile with NVRTC for `arch` (70, 75, 80, 90 ...) without needing a GPU or a driver.

    Returns PTX (for instruction inspection) and, with resources=True, the registers,
    shared memory and spills ptxas reports for each kernel (a second compile to SASS).
    `stack` ("cuda12" | "cuda13") picks that stack's NVRTC; by default the one CuPy uses,
    or NVRTC 12 for sm_70.
    """
    if arch not in COURSE_ARCHS:
        raise ValueError(f"arch must be one of {COURSE_ARCHS}, not {arch}")
    if stack is not None:
        nv = nvrtc_lib.load(stack)
        if nv is None or arch not in nv.archs:
            what = "is not installed" if nv is None else f"does not target sm_{arch}"
            raise NoCompiler(f"the NVRTC of the {stack} stack {what}",
                             hint=f"From the course folder: pip install -e \".[{stack}]\"")
    else:
        nv = compiler_for(arch)
    opts = [*BASE_OPTIONS, *include_options(nv.stack.name), *options]
    out = _nvrtc_run(nv, source, [f"-arch=compute_{arch}", *opts], filename, arch)
    ptx = out.code.decode()
    found: dict[str, KernelResources] = {}
    if resources:
        log2 = _nvrtc_run(nv, source, [f"-arch=sm_{arch}", "-Xptxas=-v", *opts], filename, arch, output="log").log
        found = parse_resources(log2)
    warnings = [d for d in parse_log(out.log, source, filename=filename) if d.severity == "warning"]
    return Compiled(source=source, arch=arch, ptx=ptx, log=out.log, warnings=warnings,
                    resources=found, nvrtc=nv.version)
