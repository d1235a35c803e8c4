"""The correctness stage of grader.bench.fp8 (issue #36): float64 cases of the FP8 and 2:4-sparse
GEMMs and the checks every contender passes BEFORE anything is timed: a course kernel launched on
each case, its output poisoned (check_kernel), or any launch's output, a library's or a kernel's
with its own launch geometry (check_library, which also allows a narrower accumulator where told
and then says so). Shared by grader.bench.fp8 and grader.bench.fp8_wgmma.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from grader.problems import fp8, numerics, sparse24

# A library may accumulate in less than fp32 and still be right to that precision; its check then says
# so. Hopper's FP8 tensor cores keep about 14 mantissa bits of the running sum between a library's
# promotions to fp32 (DeepSeek-V3 technical report, "Increasing accumulation precision"); a cuSPARSELt
# built for fp16 compute accumulates in fp16. The slack: that accumulator's unit over fp32's (2^-24).
FP8_ACCUMULATOR = (2.0**11, "FP8 tensor-core accumulation")
FP16_ACCUMULATOR = (2.0**13, "fp16 accumulation")


@dataclass
class Check:
    ok: bool
    worst: float = 0.0  # the worst |error| / bound over every case
    detail: str = ""  # what failed, or how the bound was met when not the plain one
    note: str = ""  # set instead when it could not run: "library not available here: ...", "FAILED: ..."

    @property
    def cell(self) -> str:
        if self.note:
            return self.note
        if not self.ok:
            return f"WRONG: {self.detail}"
        return f"yes ({self.worst:.2g} of bound{'; ' + self.detail if self.detail else ''})"


def _dims(size) -> tuple[int, int, int]:
    return tuple(size) if isinstance(size, tuple) else (size, size, size)


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def fp8_cases(sizes, rng) -> list:
    return [fp8.gemm_case(*_dims(s), rng) for s in sizes]


def sparse_cases(sizes, rng) -> list:
    return [sparse24.gemm_case(*_dims(s), rng) for s in sizes]


def check_kernel(module, kernel: str, cases, xp=np) -> Check:
    """Launch `kernel` of `module` (the GPU's or the emulator's) on every case, its output poisoned,
    and compare with the case's float64 reference and bound."""
    worst = 0.0
    for case in cases:
        args = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]
        module.launch(kernel, case.grid, case.block, args)
        for pos, e in case.expected.items():
            cmp = numerics.compare(_host(args[pos]).reshape(e.ref.shape), e.ref, e.bound)
            if not cmp.ok:
                return Check(False, cmp.worst_ratio, f"{case.label}: {cmp}")
            worst = max(worst, cmp.worst_ratio)
    return Check(True, worst)


def within_slack(got, ref, bound, fallback: tuple[float, str]) -> str:
    """An output that misses the plain fp32 bound but lies within slack x that bound, its normwise
    error also under 2^-7 (a wrong product's is about 1): what it is said to be (else ""). A
    tensor core may accumulate in less than fp32 (Hopper's FP8 wgmma keeps about 14 bits)."""
    slack, why = fallback
    got = np.asarray(got, np.float64)
    rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref)) if np.isfinite(got).all() else np.inf
    if rel <= 2.0**-7 and numerics.compare(got, ref, slack * bound).ok:
        return f"within {slack:g} x the fp32 bound only ({why}; normwise error {rel:.1e})"
    return ""


def check_library(run: Callable, cases, out_pos: int, *, fp16_out: bool = False,
                  fallback: tuple[float, str] | None = None) -> Check:
    """A library's output `run(case)` (any array) against the same float64 reference and bound as
    the course kernel's (output `out_pos` of each case); an fp16 output adds its rounding
    (2^-10 |C|). `fallback` = (slack, why): where the plain bound is missed, an output within
    slack x that bound whose normwise error is also under 2^-7 (a wrong product's is about 1)
    passes, and the check says so: a library may accumulate in less than fp32."""
    worst, loose = 0.0, ""
    for case in cases:
        e = case.expected[out_pos]
        got = np.asarray(_host(run(case)), np.float64).reshape(e.ref.shape)
        bound = e.bound + (2.0**-10 * np.abs(e.ref) if fp16_out else 0.0)
        cmp = numerics.compare(got, e.ref, bound)
        if not cmp.ok and fallback and (said := within_slack(got, e.ref, bound, fallback)):
            loose = said
            worst = max(worst, cmp.worst_ratio)  # in units of the plain bound
            continue
        if not cmp.ok:
            return Check(False, cmp.worst_ratio, f"{case.label}: {cmp}")
        worst = max(worst, cmp.worst_ratio)
    return Check(True, worst, loose)


def dense_of_sparse_case(case) -> np.ndarray:
    """The pruned fp16 A (M x K) a sparse case's (values, metadata) stand for: what a library compresses."""
    return sparse24.decompress(case.args[0], case.args[1]).astype(np.float16)
