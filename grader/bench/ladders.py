"""The notebooks' kernel ladders that an exercise is graded against, by the name its record gives
(Exercise.ladder): the rungs' launches for calibration, the coach's panels of every rung."""
from __future__ import annotations

from grader.bench import mma, wmma

LADDERS = {"wmma": wmma.LADDER, "mma": mma.LADDER}


def rungs(ex) -> list:
    """The rungs graded as exercise `ex` (none where its record names no ladder)."""
    return list(LADDERS[ex.ladder]) if ex.ladder else []


def launch_of(ex, file: str) -> dict:
    """The launch of the rung kernels/<file>.cu in `ex`'s ladder ({}: the exercise's defaults)."""
    return next((dict(r.launch) for r in rungs(ex) if r.file == file), {})
