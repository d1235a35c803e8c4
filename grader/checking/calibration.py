"""An exercise's speed thresholds from ONE measured number: its reference solution's speed as a
ratio to the exercise's baseline, measured on a GPU (DESIGN.md, grading policy).

The course's rule: the reference solution beats the target by MARGIN (1.3x), so the target is the
reference's ratio over MARGIN; speed credit starts at FLOOR_SHARE of the target. A ratio measured
by a bench's plain timing loop (grader.bench.*) runs ahead of what `check` measures of the same
kernel, which frames every timed launch (a freshly poisoned output, a rescaled input, sampled
outputs kept): for mma-gemm's reference on an H100 (2026-11-26) 58.0-60.3% of cuBLAS through
`check` against 63-68% in grader.bench.mma's loop, a check/bench ratio of 0.85 at worst
(BENCH_TO_CHECK), which a bench's number is discounted by first.

Most records in grader.checking.exercises still write floor and target by hand, the measurement in
a comment; a record whose thresholds come from `Measured` states the number once, with its date,
GPU and command, and `python -m grader.bench.calibrate` prints it beside what it measures now.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

MARGIN = 1.3  # the reference solution's speed over the target, at least
FLOOR_SHARE = 0.5  # the floor, as a share of the target
BENCH_TO_CHECK = 0.85  # what `check` measures over what a bench's loop measured, at worst (above)


@dataclass(frozen=True)
class Measured:
    ratio: float  # the reference's speed / the baseline's (> 1: faster), same GPU, size and run
    where: str  # when, on which GPU, by which command; "PROVISIONAL: why" while none was measured
    by: str = "check"  # "check": through grader.check (calibrate); "bench": a bench's timing loop

    @property
    def provisional(self) -> bool:
        return self.where.startswith("PROVISIONAL")


def _down(x: float, digits: int = 2) -> float:
    """x rounded DOWN to `digits` significant figures (a target rounded down keeps the margin)."""
    if x <= 0:
        raise ValueError(f"a measured speed ratio must be positive, not {x}")
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return round(math.floor(x / step + 1e-9) * step, 12)


def thresholds(m: Measured) -> tuple[float, float]:
    """(floor, target) that follow from the measured ratio by the course's rule."""
    if m.by not in ("check", "bench"):
        raise ValueError(f"Measured.by is 'check' or 'bench', not {m.by!r}")
    through_check = m.ratio * (BENCH_TO_CHECK if m.by == "bench" else 1.0)
    target = _down(through_check / MARGIN)
    return _down(FLOOR_SHARE * target), target
