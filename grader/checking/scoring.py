"""What a verdict is worth: the points its items earn, and whether speed counts in this class."""
from __future__ import annotations

import os

from grader.checking import lesson_point
from grader.checking.verdict import PASS, SKIP, Verdict

STRICT = "strict checks"  # the emulator's stricter run of a kernel a GPU passed
NO_SPEED = "not graded in this class (CPU-only grading: speed earns no points and counts for none)"


def speed_graded() -> bool:
    """False under CPU-only grading (TC_CPU_ONLY=1, course/nbgrader_config.py): speed earns
    nothing and counts for nothing, so an exercise is worth its correctness points only."""
    return os.environ.get("TC_CPU_ONLY", "0") in ("", "0")


def worth(ex) -> float:
    return ex.points if speed_graded() else ex.points_correct


def score(ex, v: Verdict) -> Verdict:
    correctness = [i for i in v.items if i.name not in ("speed", lesson_point.NAME)
                   and not (i.name == STRICT and i.status == SKIP)]  # a strict run that could not run
    correct = bool(correctness) and all(i.status == PASS for i in correctness) and any(
        i.name.startswith("correct") for i in correctness)
    points = ex.points_correct if correct else 0.0
    if correct and v.speed:
        points += v.speed["fraction"] * ex.points_speed
    v.score = points
    return v
