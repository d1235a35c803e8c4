"""Before anything reads the source: autograding (the trusted pass grades), the launch
parameters the exercise takes, the backend, and a GPU too old for the exercise."""
from __future__ import annotations

import os

from grader.checking.cells import find_cell
from grader.checking.steps.context import Stop, Submission
from grader.checking.verdict import FAIL, SKIP, Item
from grader.runtime.compile import SUPPORTED_ARCHS
from grader.runtime.errors import CourseError


def autograding(sub: Submission) -> list[Item]:
    """Nobody reads this verdict under `nbgrader autograde`; the trusted pass grades."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return Stop([Item("check", SKIP, "not run while autograding; the graded cell below shows the "
                          "course's verdict")])
    return []


def notebook_cell(sub: Submission) -> list[Item]:
    """Inside a notebook: the cell the kernel was written in (messages name its lines)."""
    sub.cell = find_cell(sub.source)
    return []


def launch(sub: Submission) -> list[Item]:
    """An unknown launch parameter is said as a verdict, like every other mistake."""
    unknown = sorted(set(sub.launch) - set(sub.ex.launch_defaults))
    if unknown:
        return Stop([launch_item(sub.ex, unknown, sub.launch)])
    sub.launch = {**sub.ex.launch_defaults, **sub.launch}
    return []


def launch_item(ex, unknown: list[str], given: dict) -> Item:
    """An unknown launch parameter: list the ones this exercise takes."""
    bad = ", ".join(f"{k}={given[k]!r}" for k in unknown)
    one = len(unknown) == 1
    if ex.launch_defaults:
        takes = ", ".join(f"{k}={v}" for k, v in ex.launch_defaults.items())
        msg = (f"{ex.id} has no launch parameter{'' if one else 's'} {', '.join(unknown)} ({bad}); it "
               f"takes {', '.join(ex.launch_defaults)} (defaults: {takes})")
    else:
        msg = (f"{ex.id} takes no launch parameters (its launch is fixed by the contract); got {bad}")
    macros = ", ".join(k.upper() for k in unknown)
    hint = ("Pass only the parameters above." if ex.launch_defaults else
            f"Call check(\"{ex.id}\", source) with no launch parameters.")
    hint += (f" A constant of your own ({macros}) is a #define in your kernel source: set it there, "
             f"e.g. #define {unknown[0].upper()} {given[unknown[0]]!r}.")
    return Item("launch", FAIL, msg, hint=hint, kind="launch-parameter",
                where=dict(unknown=unknown, accepted=list(ex.launch_defaults)))


def backend(sub: Submission) -> list[Item]:
    """Pick the backend; a GPU (or TC_ARCH) below what the exercise needs is said, never a crash."""
    from grader.runtime.backend import pick

    ex = sub.ex
    try:
        sub.chosen = pick(sub.backend)
    except CourseError as e:
        return Stop([Item("backend", FAIL, e.message, hint=e.hint, kind="environment")])
    sub.verdict.backend = sub.chosen
    if sub.chosen == "gpu":
        from grader.runtime.device import needs

        why = needs(ex.min_arch)
        if why:
            return Stop([Item("arch", SKIP, f"{ex.id} {why}: it cannot run here (0 points on this GPU; "
                              "backend='emu' checks its correctness on the CPU)", kind="environment")])
    sub.arch = max(arch_here(sub.chosen), ex.min_arch)
    return []


def arch_here(backend: str) -> int:
    if backend == "gpu":
        from grader.runtime.device import device_info

        cc = device_info().cc
        return cc if cc in SUPPORTED_ARCHS else 90
    return 90
