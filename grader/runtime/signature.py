"""Read the parameter lists of `extern "C" __global__` kernels from CUDA source.

The grader uses them to check launch arguments (and to convert Python scalars to the exact
C type) before anything reaches the GPU, where a wrong argument silently reads garbage.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

# C element type -> NumPy dtype of the array (or scalar) that must be passed for it.
# bf16 has no NumPy type: arrays of its raw bits (uint16) are passed instead.
DTYPES = {
    "half": np.float16, "__half": np.float16,
    "__nv_bfloat16": np.uint16, "nv_bfloat16": np.uint16,
    "float": np.float32, "double": np.float64,
    "int": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32,
    "int32_t": np.int32, "uint32_t": np.uint32,
    "long long": np.int64, "int64_t": np.int64, "long": np.int64,
    "unsigned long long": np.uint64, "uint64_t": np.uint64, "size_t": np.uint64,
    "short": np.int16, "unsigned short": np.uint16, "char": np.int8,
    "signed char": np.int8, "unsigned char": np.uint8, "int8_t": np.int8, "uint8_t": np.uint8,
    "bool": np.bool_,
    # fp8 (<cuda_fp8.h>) has no NumPy type either: arrays of the one-byte codes are passed
    "__nv_fp8_storage_t": np.uint8, "__nv_fp8_e4m3": np.uint8, "__nv_fp8_e5m2": np.uint8,
}

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_KERNEL = re.compile(
    r'extern\s+"C"\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?__global__\s+'
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)")
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # as written, normalised spacing, e.g. "const half*"
    base: str  # element type without qualifiers or '*', e.g. "half"
    is_pointer: bool
    is_const: bool

    @property
    def dtype(self):
        """NumPy dtype expected for this parameter (element dtype for pointers), or None."""
        t = DTYPES.get(self.base)
        return None if t is None else np.dtype(t)


def _param(text: str, position: int) -> Param:
    text = " ".join(text.replace("*", " * ").split())
    is_pointer = "*" in text
    is_const = bool(re.search(r"\bconst\b", text.split("*")[0])) if is_pointer else "const" in text.split()
    words = _QUALIFIERS.sub(" ", text).replace("*", " ").split()
    if len(words) >= 2:
        name, base = words[-1], " ".join(words[:-1])
    else:  # unnamed parameter
        name, base = f"arg{position}", " ".join(words)
    ctype = ("const " if is_const else "") + base + ("*" if is_pointer else "")
    return Param(name=name, ctype=ctype, base=base, is_pointer=is_pointer, is_const=is_const)


def same_type(base: str, other: str) -> bool:
    """Two spellings of one parameter's element type: the same text, or two names of the one NumPy
    dtype the grader passes for it (unsigned char, uint8_t and __nv_fp8_storage_t all take uint8
    codes; int and int32_t an int32), which is all the launch hands over (launch.prepare checks the
    same dtype)."""
    if base == other:
        return True
    a, b = DTYPES.get(base), DTYPES.get(other)
    return a is not None and b is not None and np.dtype(a) == np.dtype(b)


def parse_kernels(source: str) -> dict[str, list[Param]]:
    """Map each `extern "C" __global__` kernel name to its parameters, in order."""
    code = _COMMENTS.sub(" ", source)
    kernels: dict[str, list[Param]] = {}
    for m in _KERNEL.finditer(code):
        raw = m.group(2).strip()
        parts = [p for p in raw.split(",") if p.strip()] if raw and raw != "void" else []
        kernels[m.group(1)] = [_param(p, i) for i, p in enumerate(parts)]
    return kernels


def kernel_body(source: str, name: str) -> str | None:
    """The body of kernel `name` with comments removed (None when it cannot be found)."""
    code = _COMMENTS.sub(" ", source)
    for m in _KERNEL.finditer(code):
        if m.group(1) != name:
            continue
        start = code.find("{", m.end())
        if start < 0 or ";" in code[m.end():start]:
            continue  # a declaration, not the definition
        depth = 0
        for i in range(start, len(code)):
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            if depth == 0:
                return code[start + 1:i]
        return None
    return None
