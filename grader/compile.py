"""Compile CUDA C++ kernels: NVRTC alone (no GPU needed) or CuPy RawModule (on a GPU).

Both paths report errors the same way: a CompileError whose diagnostics carry the line of
the source the user wrote, so a notebook can point at the student's own line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from . import ptx as ptx_tools
from .errors import CompileError, Diagnostic
from .headers import include_options
from .signature import Param, parse_kernels

FILENAME = "kernel.cu"
# c++17 for `if constexpr` and friends students meet in samples.
BASE_OPTIONS = ("--std=c++17",)
# NVRTC 13 compiles sm_75 and newer (CUDA 13 dropped offline compilation below 7.5, FACTS.md).
SUPPORTED_ARCHS = (75, 80, 86, 89, 90)

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
    for m in _DIAG.finditer(log):
        severity = "warning" if m["sev"] in ("warning", "remark") else "error"
        message = m["msg"].strip()
        file = m["file"].strip()
        if file.endswith(filename):
            line = int(m["line"]) - line_offset
            text = lines[line - 1] if 1 <= line <= len(lines) else None
            if line < 1:
                line, text = None, None
            likely = _likely_line(message, line, lines)
            diagnostics.append(Diagnostic(severity, message, line, text, likely,
                                          lines[likely - 1] if likely else None))
        else:
            diagnostics.append(Diagnostic(severity, f"{message} (in {file}:{m['line']})"))
    if not diagnostics and log.strip():
        diagnostics.append(Diagnostic("error", log.strip().splitlines()[0]))
    return diagnostics


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
                  line_offset: int = 0) -> CompileError:
    diagnostics = parse_log(log, source, filename=filename, line_offset=line_offset)
    errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
    first = errors[0] if errors else Diagnostic("error", "compilation failed")
    hint = _hint_for(first.message, first.likely_line)
    return CompileError(f"Compilation failed: {first}", log=log, diagnostics=diagnostics,
                        hint=hint)


def _hint_for(message: str, likely_line: int | None = None) -> str:
    if "crt/mma.h" in message or "cannot open source file" in message:
        return ("A CUDA header is missing: run `python -m grader doctor` to see which "
                "include folders were found and what to install.")
    if "is undefined" in message:
        return "Check the spelling, and that it is declared before this line (or included)."
    no_layout = re.search(r"fragment<[\w:]*(matrix_[ab]),[^>]*,\s*void>", message)
    if "incomplete type" in message and no_layout:
        return (f"matrix_a/matrix_b fragments need a 6th template argument, the layout "
                f"wmma::row_major or wmma::col_major: wmma::fragment<wmma::{no_layout[1]}, 16, 16, 16, "
                "half, wmma::row_major>. Only accumulator fragments have no layout.")
    if "incomplete type" in message and "fragment" in message:
        return ("This fragment type needs a newer GPU architecture (bf16/tf32/f64 WMMA need "
                "sm_80 or later).")
    if "no instance of overloaded function" in message and "wmma::" in message:
        return ("The fragment types do not fit this call: a float accumulator stores to float*, a half "
                "one to half*; matrix_a/matrix_b need a layout; shapes must match.")
    if 'expected a ";"' in message and likely_line:
        return f"A missing `;` at the end of line {likely_line} is the usual cause."
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

    @cached_property
    def kernels(self) -> dict[str, list[Param]]:
        return parse_kernels(self.source)

    @cached_property
    def instructions(self):
        """Matrix (tensor-core) instructions in the PTX, see grader.ptx."""
        return ptx_tools.matrix_instructions(self.ptx)

    @property
    def uses_tensor_cores(self) -> bool:
        return bool(self.instructions)


def _nvrtc_run(source: str, options: list[str], filename: str):
    """Compile once with NVRTC; returns (program, log) or raises CompileError."""
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(source, filename, [], [])
    try:
        nvrtc.compileProgram(prog, options)
    except nvrtc.NVRTCError:
        log = nvrtc.getProgramLog(prog).rstrip("\x00")
        nvrtc.destroyProgram(prog)
        raise compile_error(log, source, filename=filename) from None
    return prog, nvrtc.getProgramLog(prog).rstrip("\x00")


def nvrtc_compile(source: str, *, arch: int = 90, options: tuple[str, ...] | list[str] = (),
                  resources: bool = True, filename: str = FILENAME) -> Compiled:
    """Compile with NVRTC for `arch` (75, 80, 90 ...) without needing a GPU or a driver.

    Returns PTX (for instruction inspection) and, with resources=True, the registers,
    shared memory and spills ptxas reports for each kernel (a second compile to SASS).
    """
    from cupy_backends.cuda.libs import nvrtc

    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"arch must be one of {SUPPORTED_ARCHS} for NVRTC 13, not {arch}")
    opts = [*BASE_OPTIONS, *include_options(), *options]
    prog, log = _nvrtc_run(source, [f"-arch=compute_{arch}", *opts], filename)
    try:
        ptx = nvrtc.getPTX(prog).decode() if isinstance(nvrtc.getPTX(prog), bytes) else nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    ptx = ptx.rstrip("\x00")
    found: dict[str, KernelResources] = {}
    if resources:
        prog2, log2 = _nvrtc_run(source, [f"-arch=sm_{arch}", "-Xptxas=-v", *opts], filename)
        nvrtc.destroyProgram(prog2)
        found = parse_resources(log2)
    warnings = [d for d in parse_log(log, source, filename=filename) if d.severity == "warning"]
    return Compiled(source=source, arch=arch, ptx=ptx, log=log, warnings=warnings,
                    resources=found)
