"""References and tolerances: what "correct" means for each precision (FACTS.md, Numerics).

The reference is always the float64 product of the SAME rounded inputs the kernel saw, and
the tolerance is componentwise, scaled by (|A||B|)_ij: relative error per element fails on
zero-mean data by cancellation, and a single global norm hides one bad tile.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

U32 = 2.0**-24  # unit roundoff of fp32
U16 = 2.0**-11  # unit roundoff of fp16 (machine epsilon 2^-10)


def gemm_bound(abs_ab, K: int, *, accumulate: str = "fp32", output: str = "fp32"):
    """Allowed |C - Cref| for each element, given (|A||B|)_ij.

    fp32 accumulation: K * 2^-24 * (|A||B|) + 1e-6 held with 10x margin on H100/H200 for
    fp16 products (exact) and covers fp32 FMA chains (one rounding per step). An fp16 output
    adds its own rounding, 2^-10 |C|, which the caller includes through `output`."""
    if accumulate == "fp32":
        bound = (K + 2) * U32 * abs_ab + 1e-6
    elif accumulate == "fp64":
        bound = (K + 2) * 2.0**-53 * abs_ab + 1e-12
    elif accumulate == "fp16":
        bound = (K + 2) * U16 * abs_ab + 1e-3
    else:
        raise ValueError(f"unknown accumulation precision {accumulate!r}")
    if output == "fp16":
        bound = bound + 2.0**-10 * abs_ab
    return bound


@dataclass
class Comparison:
    """Outcome of comparing an output to its reference, element by element."""

    ok: bool
    n_bad: int
    n_nonfinite: int
    first_bad: tuple[int, ...] | None  # index of the first failing element (row-major order)
    worst_ratio: float  # max |err| / bound over finite elements (<= 1 passes)
    max_abs_err: float

    def __str__(self) -> str:
        if self.ok:
            return (f"correct: its largest error is {self.worst_ratio:.2g} of the error allowed (the bound that "
                    "rounding in the accumulation can explain; 1 would be the limit)")
        parts = []
        if self.n_nonfinite:
            parts.append(f"{self.n_nonfinite} NaN/Inf")
        if self.n_bad - self.n_nonfinite:
            parts.append(f"{self.n_bad - self.n_nonfinite} beyond tolerance")
        return f"wrong: {', '.join(parts)}; first at {self.first_bad}"


def compare(out, ref, bound) -> Comparison:
    """Compare NumPy arrays: NaN/Inf in `out` always fail; else |out - ref| <= bound."""
    out = np.asarray(out, dtype=np.float64)
    finite = np.isfinite(out)
    err = np.where(finite, np.abs(out - ref), np.inf)
    bad = ~(err <= bound)
    n_bad = int(bad.sum())
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if n_bad else None
    ratio = np.where(finite, err / bound, 0.0)
    return Comparison(ok=n_bad == 0, n_bad=n_bad, n_nonfinite=int((~finite).sum()),
                      first_bad=first, worst_ratio=float(ratio.max()) if ratio.size else 0.0,
                      max_abs_err=float(np.where(finite, err, 0).max()) if err.size else 0.0)


def gemm_reference(A, B):
    """float64 C = A B and (|A||B|) from the given (already rounded) inputs, with the array
    module of the inputs (NumPy or CuPy). Returns NumPy arrays."""
    xp = _xp(A)
    a, b = A.astype(xp.float64), B.astype(xp.float64)
    ref, abs_ab = a @ b, xp.abs(a) @ xp.abs(b)
    return _np(ref), _np(abs_ab)


def _xp(a):
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def _np(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)
