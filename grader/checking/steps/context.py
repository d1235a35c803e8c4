"""The submission a check is about, as the steps pass it along, and how a step stops the rest."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from grader.checking.cells import SourceCell
from grader.checking.exercises import Exercise
from grader.checking.verdict import Item, Verdict
from grader.problems.kinds import Case


class Stop(list):
    """A step's items, after which the pipeline stops (today's early returns of check)."""


@dataclass
class Submission:
    ex: Exercise
    source: str
    backend: str  # as asked ("auto", "gpu", "emu"); `chosen` once the backend step picked one
    launch: dict  # the student's launch parameters; with the exercise's defaults once accepted
    speed: bool = True
    explain: bool = False
    case_timeout: float | None = None
    verdict: Verdict = None  # the verdict being built (check makes it)
    cell: SourceCell | None = None  # inside a notebook: the cell the kernel was written in
    chosen: str = ""
    arch: int = 90
    compiled: Any = None  # NVRTC's result (PTX, warnings)
    stubs: list = field(default_factory=list)  # parts of the stub still marked YOUR CODE HERE
    coach_build: Any = None  # the coach's background compile (grader.coach.panel.start)
    cases: list[Case] = field(default_factory=list)
    dims_list: list[dict] = field(default_factory=list)
    job: dict = field(default_factory=dict)  # what the isolated child ran
    result: dict = field(default_factory=dict)  # what it sent back
    perf_seed: int = 0
    perf_samples: list[int] = field(default_factory=list)
    correct: bool = False  # every item passed before the lesson's and the speed's items
    lesson: Item | None = None
    timed: Item | None = None

    @property
    def options(self) -> list[str]:
        """The compiler options the exercise's launch parameters make (-D macros, ...)."""
        return self.ex.problem.options(self.launch)


def handed_in() -> bool:
    """Grading a handed-in notebook (the trusted grader sets TC_HANDIN): hints speak of the
    hand-in, not of re-running a cell the student is not looking at."""
    return os.environ.get("TC_HANDIN") == "1"
