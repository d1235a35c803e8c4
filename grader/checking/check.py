"""The one check path: notebook, CLI and nbgrader all call `check`.

`check` runs the steps below in order on one submission (grader.checking.steps: each takes the
submission's context and returns its items, or stops the rest): the launch parameters and the
backend -> includes (CUDA and C++ standard headers only) -> compile (NVRTC, here) -> signature ->
static checks (one preprocessor: the GPU's and the emulator's macros give the same code) -> run on
fresh random inputs in a child process and judge here against the float64 reference -> tensor-core
work the launches executed (counted by the emulator) -> on a GPU, the emulator's stricter run ->
every timed launch checked, then the speed against the library (GPU only) -> the coach's panel.
"""
from __future__ import annotations

import os

from grader.checking import exercises
from grader.checking.scoring import NO_SPEED, STRICT, score, speed_graded, worth  # noqa: F401 (imported from here)
from grader.checking.steps import (cases, coach, compile, gate, lesson, signature, speed, static_checks,
                                   strict, tensor, timed, unfilled)
from grader.checking.steps.context import Stop, Submission, handed_in  # noqa: F401 (imported from here)
from grader.checking.verdict import Verdict

STEPS = (
    gate.autograding,  # under nbgrader autograde the trusted pass grades, not this copy
    gate.notebook_cell,
    gate.launch,
    gate.backend,
    compile.includes,
    compile.compile_source,
    signature.signature,
    static_checks.redefined,
    static_checks.same_backend,
    static_checks.empty_kernel,
    unfilled.find,
    coach.start,  # the coach's compile to SASS runs beside the emulator
    cases.emulator_here,
    cases.cases,
    tensor.tensor_cores,
    unfilled.report,
    strict.strict,
    lesson.lesson,
    timed.timed_output,
    speed.speed,
    coach.show,
)


def check(exercise_id: str, source: str, *, backend: str = "auto", case_timeout: float | None = None,
          speed: bool = True, explain: bool = False, **launch) -> Verdict:
    """Grade `source` for `exercise_id`. `launch` holds the launch parameters the exercise
    takes (e.g. tile=32, or block_m/block_n/block_k/threads/shared_mem). `case_timeout`
    (seconds) overrides how long one run of the kernel may take before it counts as hung.
    A correct kernel of a speed-graded exercise gets the coach's panel, "where the time goes"
    (grader.coach); `explain=True` adds its details and, on a GPU where Nsight Compute can read
    the counters, the measured part (one profiled launch at the timed size)."""
    ex = exercises.get(exercise_id)
    sub = Submission(ex, source, backend, launch, speed=speed, explain=explain, case_timeout=case_timeout,
                     verdict=Verdict(ex.id, backend, max_score=worth(ex)))
    for step in STEPS:
        items = step(sub)
        sub.verdict.items.extend(items)
        if isinstance(items, Stop):
            break
    return score(sub.ex, sub.verdict)


def grade(exercise_id: str, source: str, points: float | None = None, **kwargs) -> float:
    """For notebook and nbgrader test cells: show the verdict and return the points as a plain
    float, scaled to `points` (the cell's points) and capped.

    Under `nbgrader autograde` this copy, which runs beside the student's code, grades nothing:
    the course's trusted grader (grader.checking.trusted) replaces this cell's output."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        print(f"{exercise_id}: graded outside this notebook by the course's trusted grader.")
        return 0.0
    ex = exercises.get(exercise_id)
    if points is not None and not speed_graded():  # the cell is worth its correctness share
        points = points * ex.points_correct / ex.points
    v = check(exercise_id, source, **kwargs)
    try:
        from IPython.display import display

        display(v)
    except ImportError:  # pragma: no cover
        print(v.text())
    return v.points(points)
