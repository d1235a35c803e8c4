"""WMMA fragment layouts: which lane holds which matrix element, expected and measured.

The expected maps are the FACTS.md formulas for sm_80/sm_90 (verified on H200): the PTX
`mma.m16n8k16` layout applied to two n8 halves. With lane = 0..31, g = lane >> 2, t = lane & 3:
- A (16x16, row r, col k), slot i = 0..7: r = g + 8*((i>>1)&1), k = 2t + (i&1) + 8*(i>>2);
  half A/B fragments have num_elements 16 and x[i+8] repeats x[i] (bf16 A/B: 8, no repeats;
  the PTX bf16 fragment is 4 registers where the f16 one is 8).
- B (16x16, row k, col n): k = 2t + (i&1) + 8*((i>>1)&1), n = g + 8*(i>>2).
- accumulator (16x16): the A formula, 8 slots.
- tf32 A (16x8): (g,t), (g+8,t), (g,t+4), (g+8,t+4); fp64 A (8x4): (g,t);
  fp64 accumulator (8x8): (g,2t), (g,2t+1).
Kinds whose formula FACTS.md does not give are `derived` (the PTX mma layout of the
instruction WMMA lowers to: bf16 like f16, tf32 B and fp64 B from mma.m16n8k8 / m8n8k4;
all confirmed by the probe on an H200) or `measured` (m32n8k16, m8n32k16: formulas read off
kernels/fragment_maps_sm90.json, H200 sm_90). Half fragments of these shapes repeat slots:
m32n8k16 B and m8n32k16 A hold 4 distinct elements per lane, each 4 times. m8n32k16's
accumulator is the TRANSPOSED mma layout (lane holds rows 2t, 2t+1 of column g + 8j).
`kernels/fragment_probe.cu` measures them all on a GPU.

Turing (sm_75) has the same layout; bf16, tf32 and fp64 fragments need sm_80. Volta (sm_70)
differs: its m16n16k16 fragments are the PTX ISA's mma.m8n8k4 .f16 layout (PTX ISA 8.7-9.2,
section 9.7.14.5.1, "Matrix Fragments for mma.m8n8k4 with .f16 floating point type") per quad
pair of lanes, each quad pair computing one 8x8 tile (`ptx_m8n8k4`, `_volta`): a lane holds a
whole row of A (row_major) and 16 distinct values, and row/col major changes the map. Every
function takes the `arch` whose layout it means (default: sm_90's).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

MEASURED_JSON = Path(__file__).resolve().parents[2] / "kernels" / "fragment_maps_sm90.json"
MMA_LAYOUT = 90  # the default arch: sm_75 .. sm_90 share one layout (FACTS.md)


@dataclass(frozen=True)
class Kind:
    """One fragment kind and how its probe kernel is fed."""

    kernel: str  # entry point in kernels/fragment_probe.cu
    use: str  # "a" | "b" | "acc"
    shape: str  # WMMA shape, e.g. "m16n16k16"
    element: str  # fragment element type: half, bf16, tf32, float, double
    rows: int  # of the matrix the fragment holds
    cols: int
    memory: str  # NumPy dtype of M ("uint16" = bf16 bits)
    layout: str = "row"  # how M is stored: "row" or "col" (column-major)
    source: str = "facts"  # where the expected formula comes from: facts | derived | none


KINDS: dict[str, Kind] = {
    "a_f16_row": Kind("probe", "a", "m16n16k16", "half", 16, 16, "float16"),
    "a_f16_col": Kind("probe_a_f16_col", "a", "m16n16k16", "half", 16, 16, "float16", "col"),
    "b_f16_row": Kind("probe_b_f16_row", "b", "m16n16k16", "half", 16, 16, "float16"),
    "b_f16_col": Kind("probe_b_f16_col", "b", "m16n16k16", "half", 16, 16, "float16", "col"),
    "acc_f32": Kind("probe_acc_f32", "acc", "m16n16k16", "float", 16, 16, "float32"),
    "acc_f16": Kind("probe_acc_f16", "acc", "m16n16k16", "half", 16, 16, "float16",
                    source="derived"),
    "acc_f32_mma": Kind("probe_acc_mma", "acc", "m16n16k16", "float", 16, 16, "float16"),
    "a_m32n8k16": Kind("probe_a_m32n8k16", "a", "m32n8k16", "half", 32, 16, "float16",
                       source="measured"),
    "b_m32n8k16": Kind("probe_b_m32n8k16", "b", "m32n8k16", "half", 16, 8, "float16",
                       source="measured"),
    "acc_m32n8k16": Kind("probe_acc_m32n8k16", "acc", "m32n8k16", "float", 32, 8, "float32",
                         source="measured"),
    "a_m8n32k16": Kind("probe_a_m8n32k16", "a", "m8n32k16", "half", 8, 16, "float16",
                       source="measured"),
    "b_m8n32k16": Kind("probe_b_m8n32k16", "b", "m8n32k16", "half", 16, 32, "float16",
                       source="measured"),
    "acc_m8n32k16": Kind("probe_acc_m8n32k16", "acc", "m8n32k16", "float", 8, 32, "float32",
                         source="measured"),
    "a_bf16": Kind("probe_a_bf16", "a", "m16n16k16", "bf16", 16, 16, "uint16", source="derived"),
    "b_bf16": Kind("probe_b_bf16", "b", "m16n16k16", "bf16", 16, 16, "uint16", source="derived"),
    "a_tf32": Kind("probe_a_tf32", "a", "m16n16k8", "tf32", 16, 8, "float32"),
    "b_tf32": Kind("probe_b_tf32", "b", "m16n16k8", "tf32", 8, 16, "float32", source="derived"),
    "acc_tf32": Kind("probe_acc_tf32", "acc", "m16n16k8", "float", 16, 16, "float32",
                     source="derived"),
    "a_f64": Kind("probe_a_f64", "a", "m8n8k4", "double", 8, 4, "float64"),
    "b_f64": Kind("probe_b_f64", "b", "m8n8k4", "double", 4, 8, "float64", source="derived"),
    "acc_f64": Kind("probe_acc_f64", "acc", "m8n8k4", "double", 8, 8, "float64"),
}


def _a16(lane: int, i: int) -> tuple[int, int]:
    g, t, i = lane >> 2, lane & 3, i & 7  # x[i + 8] repeats x[i]
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def _b16(lane: int, i: int) -> tuple[int, int]:
    g, t, i = lane >> 2, lane & 3, i & 7
    return 2 * t + (i & 1) + 8 * ((i >> 1) & 1), g + 8 * (i >> 2)


def _a_tf32(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    return g + 8 * (i & 1), t + 4 * (i >> 1)


def _b_tf32(lane: int, i: int) -> tuple[int, int]:  # mma.m16n8k8 B: (t, g), (t+4, g) per n8 half
    g, t = lane >> 2, lane & 3
    return t + 4 * (i & 1), g + 8 * (i >> 1)


def _a_m32(lane: int, i: int) -> tuple[int, int]:  # A 32x16: the m16 layout, twice down
    r, c = _a16(lane, i & 7)
    return r + 16 * (i >> 3), c


def _b_m32(lane: int, i: int) -> tuple[int, int]:  # B 16x8: one n8 column block, x4 repeats
    g, t, i = lane >> 2, lane & 3, i & 3
    return 2 * t + (i & 1) + 8 * ((i >> 1) & 1), g


def _acc_m32(lane: int, i: int) -> tuple[int, int]:  # accumulator 32x8
    g, t = lane >> 2, lane & 3
    return g + 8 * ((i >> 1) & 1) + 16 * (i >> 2), 2 * t + (i & 1)


def _a_m8(lane: int, i: int) -> tuple[int, int]:  # A 8x16: one row block, x4 repeats
    g, t, i = lane >> 2, lane & 3, i & 3
    return g, 2 * t + (i & 1) + 8 * ((i >> 1) & 1)


def _b_m8(lane: int, i: int) -> tuple[int, int]:  # B 16x32
    g, t = lane >> 2, lane & 3
    return 2 * t + (i & 1) + 8 * ((i >> 2) & 1), g + 8 * ((i >> 1) & 1) + 16 * (i >> 3)


def _acc_m8(lane: int, i: int) -> tuple[int, int]:  # accumulator 8x32, transposed layout
    g, t = lane >> 2, lane & 3
    return 2 * t + (i & 1), g + 8 * (i >> 1)


# kind -> (slot formula, number of slots per lane, number of distinct slots per lane)
_FORMULAS: dict[str, tuple[Callable[[int, int], tuple[int, int]], int, int]] = {
    "a_f16_row": (_a16, 16, 8), "a_f16_col": (_a16, 16, 8),
    "b_f16_row": (_b16, 16, 8), "b_f16_col": (_b16, 16, 8),
    "acc_f32": (_a16, 8, 8), "acc_f16": (_a16, 8, 8), "acc_f32_mma": (_a16, 8, 8),
    "a_bf16": (_a16, 8, 8), "b_bf16": (_b16, 8, 8),  # bf16: 4 registers, no repeats
    "a_tf32": (_a_tf32, 4, 4), "b_tf32": (_b_tf32, 4, 4), "acc_tf32": (_a16, 8, 8),
    "a_m32n8k16": (_a_m32, 16, 16), "b_m32n8k16": (_b_m32, 16, 4),
    "acc_m32n8k16": (_acc_m32, 8, 8),
    "a_m8n32k16": (_a_m8, 16, 4), "b_m8n32k16": (_b_m8, 16, 16), "acc_m8n32k16": (_acc_m8, 8, 8),
    "a_f64": (lambda lane, i: (lane >> 2, lane & 3), 1, 1),
    "b_f64": (lambda lane, i: (lane & 3, lane >> 2), 1, 1),
    "acc_f64": (lambda lane, i: (lane >> 2, 2 * (lane & 3) + i), 2, 2),
}


# ------------------------------------------------------------------------ Volta (sm_70)
def ptx_m8n8k4(operand: str, layout: str, lane: int, i: int) -> tuple[int, int]:
    """(row, col) of element i of `lane` in one 8x8x4 MMA of mma.m8n8k4 with .f16 A/B, as the
    PTX ISA tabulates it (section 9.7.14.5.1). Lanes 0-3 and 16-19 form computation 1, 4-7 and
    20-23 computation 2, and so on; A is 8x4 (a0..a3), B 4x8 (b0..b3), C/D 8x8 (c0..c7).
    operand "a"/"b" with layout "row"/"col"; "c16" / "c32" the accumulator of type f16 / f32."""
    low = lane < 16
    if operand == "a":
        if layout == "row":
            return (lane % 4 if low else lane % 4 + 4), i
        return (i % 4 if low else i % 4 + 4), lane % 4
    if operand == "b":
        if layout == "row":
            return lane % 4, (i if low else i + 4)
        return i, (lane % 4 if low else lane % 4 + 4)
    if operand == "c16":
        return (lane % 4 if low else lane % 4 + 4), i
    if operand == "c32":
        x = (lane & 0b1) + (i & 0b10)
        return (x if low else x + 4), (i & 0b100) + (lane & 0b10) + (i & 0b1)
    raise ValueError(operand)


def _volta(operand: str, layout: str = "row") -> Callable[[int, int], tuple[int, int]]:
    """WMMA m16n16k16 on Volta: quad pair q = (lane >> 2) & 3 runs the 8x8 tile at rows
    8*(q & 1), cols 8*(q >> 1) of C (each tile is one of the four m8n8k4 computations), over
    four k-steps of 4: A/B slot i is element i & 3 of k-step i >> 2."""
    def slot(lane: int, i: int) -> tuple[int, int]:
        q = (lane >> 2) & 3
        r0, c0 = 8 * (q & 1), 8 * (q >> 1)
        if operand in ("c16", "c32"):
            r, c = ptx_m8n8k4(operand, layout, lane, i)
            return r0 + r, c0 + c
        r, c = ptx_m8n8k4(operand, layout, lane, i & 3)
        step = 4 * (i >> 2)
        return (r0 + r, step + c) if operand == "a" else (step + r, c0 + c)
    return slot


_FORMULAS_VOLTA: dict[str, tuple[Callable[[int, int], tuple[int, int]], int, int]] = {
    "a_f16_row": (_volta("a", "row"), 16, 16), "a_f16_col": (_volta("a", "col"), 16, 16),
    "b_f16_row": (_volta("b", "row"), 16, 16), "b_f16_col": (_volta("b", "col"), 16, 16),
    "acc_f32": (_volta("c32"), 8, 8), "acc_f16": (_volta("c16"), 8, 8), "acc_f32_mma": (_volta("c32"), 8, 8),
}


def _formulas(arch: int) -> dict:
    """The slot formulas of `arch`'s layout (kinds that do not exist there are left out)."""
    if arch < 75:
        return _FORMULAS_VOLTA  # m32n8k16 / m8n32k16 on Volta: not documented, measured only
    return {k: f for k, f in _FORMULAS.items() if supported(k, arch)}


# The probes of bf16, tf32 and fp64 fragments close kernels/fragment_probe.cu: below sm_80
# (where those types do not exist) the file is compiled up to the first of them.
FIRST_SM80_PROBE = "// A 16x16 bf16"


def probe_source(arch: int = MMA_LAYOUT) -> str:
    """kernels/fragment_probe.cu as `arch` can compile it: without the sm_80 probes below sm_80."""
    from grader.runtime import kernels

    src = kernels.source("fragment_probe")
    return src if arch >= 80 else src[: src.index(FIRST_SM80_PROBE)]


def supported(kind: str, arch: int = MMA_LAYOUT) -> bool:
    """Does fragment kind `kind` exist on `arch`? bf16, tf32 and fp64 (and their shapes
    m16n16k8, m8n8k4) need sm_80."""
    k = KINDS[kind]
    return arch >= 80 or (k.element in ("half", "float") and k.shape.endswith("k16"))


def layout_arch() -> int:
    """The arch whose layout a probe run here shows: the GPU's own (TC_ARCH changes the
    compile target, not the hardware), or, without a GPU, the emulator's (sm_90)."""
    from grader.runtime.device import device_info

    info = device_info()
    return info.native_cc if info is not None else MMA_LAYOUT


def has_expected(kind: str, arch: int = MMA_LAYOUT) -> bool:
    return kind in _formulas(arch)


def num_elements(kind: str, arch: int = MMA_LAYOUT) -> Optional[int]:
    """Expected `f.num_elements` (None where no formula is known in advance)."""
    f = _formulas(arch)
    return f[kind][1] if kind in f else None


def distinct_elements(kind: str, arch: int = MMA_LAYOUT) -> int:
    """Slots per lane holding different elements (half A/B: 8 of 16 on sm_75+, 16 on Volta)."""
    return _formulas(arch)[kind][2]


def expected_element(kind: str, lane: int, i: int, arch: int = MMA_LAYOUT) -> tuple[int, int]:
    """(row, col) of the element that `lane` holds in slot `i` (x[i])."""
    formula, n, _ = _formulas(arch)[kind]
    if not (0 <= lane < 32 and 0 <= i < n):
        raise IndexError(f"{kind}: lane {lane}, slot {i} outside 32 x {n}")
    return formula(lane, i)


def expected_owner(kind: str, r: int, c: int, arch: int = MMA_LAYOUT) -> list[tuple[int, int]]:
    """Every (lane, i) that holds element (r, c) of the matrix of fragment kind `kind`."""
    k = KINDS[kind]
    if not (0 <= r < k.rows and 0 <= c < k.cols):
        raise IndexError(f"{kind}: ({r}, {c}) outside {k.rows} x {k.cols}")
    n = num_elements(kind, arch)
    return [(lane, i) for lane in range(32) for i in range(n)
            if expected_element(kind, lane, i, arch) == (r, c)]


def expected_map(kind: str, arch: int | None = None) -> np.ndarray:
    """The (32, num_elements) array a probe should write: row-major index of each slot.
    arch=None: the layout a probe run on this machine shows (`layout_arch`), which is what
    the fragment-probe exercise is graded against: a V100 is graded on Volta's map."""
    arch = layout_arch() if arch is None else arch
    k, n = KINDS[kind], num_elements(kind, arch)
    if n is None:
        raise KeyError(f"no expected map of {kind} on sm_{arch}")
    out = np.empty((32, n), dtype=np.int64)
    for lane in range(32):
        for i in range(n):
            r, c = expected_element(kind, lane, i, arch)
            out[lane, i] = r * k.cols + c
    return out


def probe_input(kind: str) -> np.ndarray:
    """The M a probe kernel takes: every element equal to its row-major index, stored in the
    kind's layout and dtype (bf16 as its uint16 bits; acc_f32_mma: A followed by I)."""
    k = KINDS[kind]
    logical = np.arange(k.rows * k.cols, dtype=np.float64).reshape(k.rows, k.cols)
    if kind == "acc_f32_mma":
        return np.concatenate([logical.ravel(), np.eye(16).ravel()]).astype(np.float16)
    stored = logical.T if k.layout == "col" else logical
    stored = np.ascontiguousarray(stored).ravel()
    if k.memory == "uint16":  # bf16 = top half of the fp32 bits (exact for integers <= 256)
        return (stored.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return stored.astype(k.memory)


def decode(kind: str, held: np.ndarray) -> list[list[tuple[int, int]]]:
    """(row, col) per lane and slot from what a probe wrote."""
    cols = KINDS[kind].cols
    return [[(int(v) // cols, int(v) % cols) for v in lane] for lane in np.asarray(held)]


def measured_maps(path: Path | str = MEASURED_JSON) -> dict[str, np.ndarray]:
    """Maps recorded on a GPU by `python -m grader.bench.conv --fragments-json ...`:
    kind -> (32, num_elements) array of row-major indices."""
    data = json.loads(Path(path).read_text())
    return {kind: np.asarray(v["held"], dtype=np.int64) for kind, v in data["kinds"].items()}


def measure(kind: str, module=None) -> np.ndarray:
    """Run the probe of `kind` on the GPU and return its (32, num_elements) map."""
    import cupy

    from grader.runtime.gpu import GpuModule
    from grader.runtime.kernels import source

    module = module or GpuModule(source("fragment_probe"))
    M = cupy.asarray(probe_input(kind))
    held = cupy.full(32 * 16, -1, dtype=cupy.int32)  # no fragment holds more than 16 per lane
    module.launch(KINDS[kind].kernel, (1, 1, 1), (32, 1, 1), [M, held])
    h = held.get()
    used = int((h >= 0).sum())
    if used % 32:
        raise RuntimeError(f"{kind}: probe wrote {used} values, not a multiple of 32")
    return h[:used].reshape(32, used // 32).astype(np.int64)
