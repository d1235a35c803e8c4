"""A lesson cell's speed demo while nbgrader autogrades: not measured (issue #37).

The grade never reads a lesson cell (the course's trusted grader reads the submission's text),
yet every demo timing in a notebook ran again in each student's copy under `nbgrader autograde`:
03's ladder of kernels against cuBLAS took ~4 s of each submission's notebook run, with the GPU
held shared against the other jobs' timed rounds. A helper that measures asks `skip(what)`
first; under autograde it prints one line and the helper returns what the notebook shows without
a GPU (a recorded run of the course), so the cell runs on and the instructor's view of the
notebook says why no figure was measured. A helper whose cell already prints a NotHere (timing
the student's own kernel) raises `not_measured(what)` instead: the same one line. Elsewhere (a
student, a lecturer) nothing changes.
"""
from __future__ import annotations

import os

from grader.runtime.device import NotHere

WHY = "not measured while nbgrader autogrades (no grade reads it)"


def autograding() -> bool:
    """Whether this notebook runs under `nbgrader autograde` (nbgrader sets NBGRADER_EXECUTION)."""
    return os.environ.get("NBGRADER_EXECUTION") == "autograde"


def skip(what: str, shown: str = "a recorded run of the course is shown") -> bool:
    """True, after one printed line, while nbgrader autogrades: the caller then measures nothing."""
    if not autograding():
        return False
    print(f"{what}: {WHY}; {shown}.")
    return True


def not_measured(what: str) -> NotHere | None:
    """While nbgrader autogrades, the NotHere a timing helper raises (its cell prints it); else None."""
    return NotHere(f"{what}: {WHY}; run the notebook to time it.") if autograding() else None
