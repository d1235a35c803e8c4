"""Find tensor-core instructions in PTX: the honesty check of every WMMA exercise.

`wmma.mma.sync` (what the WMMA API compiles to), `mma.sync` (the warp-level PTX the WMMA
ops lower to on newer toolkits) and Hopper's `wgmma.mma_async` all count as tensor-core work.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

_INSTR = re.compile(r"(?<![\w.])((?:wgmma\.mma_async|wmma\.mma|mma)\.(?:[\w]+\.)*[\w]+)")
_SHAPE = re.compile(r"^m\d+n\d+k\d+$")
_TYPES = {"f16", "bf16", "tf32", "f32", "f64", "s8", "u8", "s4", "u4", "b1", "e4m3", "e5m2", "s32"}


class MatrixOp(NamedTuple):
    op: str  # "wmma.mma" | "mma" | "wgmma.mma_async"
    shape: str  # e.g. "m16n16k16"
    types: tuple[str, ...]  # as PTX lists them, e.g. ("f32", "f32") or ("f32", "bf16", "bf16", "f32")

    def __str__(self) -> str:
        return f"{self.op} {self.shape} {'.'.join(self.types)}"


def matrix_instructions(ptx: str) -> Counter:
    """Count the matrix-multiply instructions in `ptx`, by (op, shape, types)."""
    found: Counter = Counter()
    for m in _INSTR.finditer(ptx):
        parts = m.group(1).split(".")
        op = "wgmma.mma_async" if parts[0] == "wgmma" else ("wmma.mma" if parts[0] == "wmma" else "mma")
        rest = parts[2:] if op != "mma" else parts[1:]
        if "sync" not in rest and op != "wgmma.mma_async":
            continue  # e.g. a label or an unrelated identifier
        shape = next((p for p in rest if _SHAPE.match(p)), "")
        if not shape:
            continue
        types = tuple(p for p in rest if p in _TYPES)
        found[MatrixOp(op, shape, types)] += 1
    return found


def uses_tensor_cores(ptx: str) -> bool:
    return bool(matrix_instructions(ptx))


def summary(ptx: str) -> str:
    """One line per instruction kind, e.g. 'wmma.mma m16n16k16 f32.f32 x2'."""
    ops = matrix_instructions(ptx)
    if not ops:
        return "no tensor-core instructions"
    return "\n".join(f"{op} x{n}" for op, n in sorted(ops.items(), key=lambda kv: str(kv[0])))
