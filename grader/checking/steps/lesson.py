"""On the emulator, what the lesson is about: the memory traffic of a correct kernel of a
speed-graded exercise, judged against the lesson (grader.checking.lesson_point). It never
changes a score."""
from __future__ import annotations

from grader.checking import isolate, lesson_point
from grader.checking.steps.context import Submission
from grader.checking.verdict import PASS, Item
from grader.problems.kinds import Case


def lesson(sub: Submission) -> list[Item]:
    if sub.ex.target is None:
        return []
    # what the speed steps and the coach go by: the lesson's item below never counts against it
    sub.correct = all(i.status == PASS for i in sub.verdict.items)
    if sub.chosen == "emu" and sub.correct and sub.speed:
        sub.lesson = lesson_item(sub.ex, sub.job, sub.cases, sub.launch)
    return [] if sub.lesson is None else [sub.lesson]


def lesson_item(ex, job: dict, cases: list[Case], launch: dict) -> Item | None:
    """The memory traffic of a correct kernel on the emulator, judged against the lesson; None
    when it cannot be observed."""
    from grader.emu.traffic import MemoryTraffic

    idx = lesson_point.observed_case(ex)
    if idx is None:
        return None
    tjob = dict(job, cases=[], race_check=False, perf=False, traffic=cases[idx].job(), case_timeout=60.0)
    res = isolate.run(tjob, compile_timeout=240, case_timeout=60.0, perf_timeout=60.0)
    if not res.get("traffic"):
        return None
    dims = (list(ex.cpu_sizes) + [ex.cpu_sizes[0]])[idx]
    return lesson_point.item(ex, MemoryTraffic.from_dict(res["traffic"]), dims, launch)
