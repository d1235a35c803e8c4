"""Turn a CUDA C++ source into C++ that g++ compiles against emu_prelude.h.

Every rewrite keeps the line count of the user's source (or restores it with #line), so
g++ diagnostics, __LINE__ and DWARF line numbers are the user's own line numbers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from grader.emu import inline_ptx
from grader.runtime.errors import Unsupported


@dataclass(frozen=True)
class Param:
    """One kernel parameter as the signature spells it."""

    name: str
    ctype: str  # e.g. "const half*", "int"
    is_pointer: bool
    elem_ctype: str  # pointee type without cv-qualifiers for pointers, else the type itself


@dataclass
class Translation:
    source: str  # the C++ text to compile
    kernels: dict[str, list[Param]] = field(default_factory=dict)
    kernel_lines: dict[str, int] = field(default_factory=dict)
    shared_arrays: list[tuple[str, int]] = field(default_factory=list)  # (name, line)
    device_globals: bool = False  # file-scope __device__ variables: run blocks in one process
    checked: bool = True


def code_view(src: str) -> str:
    """The source with comments and the contents of string/char literals blanked (same
    length, newlines kept), so regexes never match inside them."""
    out = list(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


_UNSUPPORTED_INCLUDES = {
    "cooperative_groups.h": "cooperative groups (<cooperative_groups.h>)",
    "cooperative_groups": "cooperative groups",
    "cuda/pipeline": "libcu++ cuda::pipeline (<cuda/pipeline>); use <cuda_pipeline.h> primitives instead",
    "cuda/barrier": "libcu++ cuda::barrier (<cuda/barrier>)",
    "cub/cub.cuh": "CUB",
    "cuda/std/": "libcu++ (<cuda/std/...>)",
}

_ID = r"[A-Za-z_]\w*"
_TYPE = (r"(?:(?:const|volatile|unsigned|signed|long|short)\s+)*" + _ID +
         r"(?:\s*::\s*" + _ID + r")*(?:\s+(?:long|int|short|char))*")
_ALIGN = r"(?:__align__\s*\(\s*\w+\s*\)\s*|alignas\s*\(\s*\w+\s*\)\s*)?"
_EXTERN_SHARED = re.compile(
    r"\bextern\s+" + _ALIGN + r"__shared__\s+" + _ALIGN + r"(?P<type>" + _TYPE + r")\s+" + _ALIGN +
    r"(?P<name>" + _ID + r")\s*\[\s*\]\s*;")
_SHARED_ARRAY = re.compile(
    r"(?<![\w])(?:static\s+)?" + _ALIGN + r"__shared__\s+" + _ALIGN + r"(?P<type>" + _TYPE + r")\s+" + _ALIGN +
    r"(?P<name>" + _ID + r")\s*(?P<dims>(?:\[[^\[\]\n;]+\]\s*)+);")
_KERNEL = re.compile(
    r"\b__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+|inline\s+)*void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(?P<name>" + _ID + r")\s*\(")
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile|__volatile__)?\s*(?:goto\s*)?\(")
_DEVICE_GLOBAL = re.compile(r"^[ \t]*(?:static\s+)?__device__\s+(?!.*\()[^;{}]*;", re.M)


def _brace_depth_at(code: str, pos: int) -> int:
    return code.count("{", 0, pos) - code.count("}", 0, pos)


def _split_params(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_param(text: str) -> Param:
    t = re.sub(r"\b(__restrict__|__restrict|restrict|__grid_constant__)\b", " ", text)
    t = re.sub(r"=.*$", "", t)  # default arguments
    t = " ".join(t.split())
    array = False
    m = re.match(r"^(.*?)(\b" + _ID + r")\s*\[\s*\w*\s*\]$", t)
    if m:
        t, array = m.group(1) + m.group(2), True
    m = re.match(r"^(.*?)(" + _ID + r")$", t)
    if not m or not m.group(1).strip():
        raise Unsupported(f"cannot understand the kernel parameter '{text.strip()}'")
    ctype, name = m.group(1).strip(), m.group(2)
    ctype = re.sub(r"\s*\*\s*", "*", ctype)
    ctype = re.sub(r"\*(?=\w)", "* ", ctype)
    if array:
        ctype += "*"
    is_pointer = ctype.endswith("*") or "*" in ctype
    base = ctype
    if is_pointer:
        base = ctype[: ctype.index("*")]
    base = re.sub(r"\b(const|volatile)\b", " ", base)
    return Param(name=name, ctype=ctype, is_pointer=is_pointer, elem_ctype=" ".join(base.split()))


def find_kernels(code: str) -> tuple[dict[str, list[Param]], dict[str, int]]:
    kernels: dict[str, list[Param]] = {}
    lines: dict[str, int] = {}
    for m in _KERNEL.finditer(code):
        before = code[max(0, m.start() - 200): m.start()]
        if re.search(r"template\s*<[^;{}]*>\s*$", before):
            continue  # template kernels need explicit instantiation: not launchable by name
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        params_text = code[m.end(): i - 1]
        params = [] if params_text.strip() in ("", "void") else [parse_param(p) for p in _split_params(params_text)]
        kernels[m.group("name")] = params
        lines[m.group("name")] = line_of(code, m.start())
    return kernels, lines


def check_supported(src: str, code: str) -> None:
    for m in re.finditer(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]", src, re.M):
        header = m.group(1)
        for key, what in _UNSUPPORTED_INCLUDES.items():
            if header == key or (key.endswith("/") and header.startswith(key)):
                raise Unsupported(f"{what} is not supported by the CPU emulator (line {line_of(src, m.start())})")
    m = re.search(r"<<<", code)
    if m:
        raise Unsupported(f"kernel launches from device code (dynamic parallelism, line {line_of(code, m.start())}) "
                          "are not supported by the CPU emulator")
    m = re.search(r"\b(wgmma|__cluster_dims__|__stwb_cluster)\b", code)
    if m:
        raise Unsupported(f"'{m.group(1)}' (line {line_of(code, m.start())}) is not supported by the CPU emulator")


def translate(src: str, *, filename: str, checked: bool = True,
              kernels: dict[str, list[Param]] | None = None) -> Translation:
    """Rewrite `src` for g++. `checked` turns static __shared__ arrays into bounds- and
    initialisation-checked emu::SharedArray objects (else plain static arrays)."""
    src = src.replace("\r\n", "\n")
    code = code_view(src)
    check_supported(src, code)
    found, klines = find_kernels(code)
    if kernels is None:
        kernels = found
    tr = Translation(source="", kernels=kernels, kernel_lines=klines, checked=checked)
    tr.device_globals = bool(_DEVICE_GLOBAL.search(code))

    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) on src
    # <assert.h> would redefine assert after the prelude: drop those includes
    for m in re.finditer(r"^[ \t]*#[ \t]*include[ \t]*[<\"](assert\.h|cassert)[>\"][^\n]*", src, re.M):
        edits.append((m.start(), m.end(), ""))
    taken = []
    for m in _EXTERN_SHARED.finditer(code):
        t, name = " ".join(m.group("type").split()), m.group("name")
        if _brace_depth_at(code, m.start()) > 0:
            rep = f"{t}* const {name} = ({t}*)__emu_dyn_smem();"
        else:  # file scope: a macro, then restore the line numbering
            ln = line_of(code, m.end())
            rep = f"\n#define {name} (({t}*)__emu_dyn_smem())\n#line {ln}\n"
        edits.append((m.start(), m.end(), rep))
        taken.append((m.start(), m.end()))
    # inline PTX: each asm statement becomes one line of emu_ptx.h calls (grader/emu/inline_ptx.py),
    # padded with the line breaks it spanned (escaped inside a #define)
    for m in _ASM.finditer(code):
        end, cpp = inline_ptx.parse_statement(src, code, m.end() - 1, line_of(code, m.start()))
        span = src[m.start():end]
        brk = "\\\n" if "\\\n" in span else "\n"
        edits.append((m.start(), end, cpp + brk * span.count("\n")))
        taken.append((m.start(), end))
    if checked:
        for m in _SHARED_ARRAY.finditer(code):
            if any(a <= m.start() < b for a, b in taken):
                continue
            t, name = " ".join(m.group("type").split()), m.group("name")
            dims = re.findall(r"\[([^\[\]]+)\]", m.group("dims"))
            targs = ", ".join(f"(size_t)({d.strip()})" for d in dims)
            rep = f"static ::emu::SharedArray<{t}, {targs}> {name}{{\"{name}\"}};"
            edits.append((m.start(), m.end(), rep))
            tr.shared_arrays.append((name, line_of(code, m.start())))
    edits.sort()
    out, last = [], 0
    for a, b, rep in edits:
        if a < last:
            continue
        out.append(src[last:a])
        out.append(rep)
        last = b
    out.append(src[last:])
    body = "".join(out)

    tramps = []
    for name, params in kernels.items():
        args = ", ".join(f"*({p.ctype}*)a[{i}]" for i, p in enumerate(params))
        tramps.append(f'extern "C" void __emu_tramp_{name}(void** a) {{ (void)a; {name}({args}); }}')
    tr.source = (
        '#include "emu_prelude.h"\n'
        f'#line 1 "{filename}"\n'
        + body
        + ("\n" if not body.endswith("\n") else "")
        + '#line 1 "<emu-launch-stubs>"\n'
        + "\n".join(tramps)
        + "\n"
    )
    return tr
