"""The coach's panel, "where the time goes" (grader.coach), for a correct kernel of a
speed-graded exercise: its compile to SASS starts in the background before the runs (start)
and the panel is built after them (panel). It explains; it never costs a verdict."""
from __future__ import annotations

import os
import secrets

import numpy as np

from grader.checking import isolate, lesson_point
from grader.checking.steps.context import Submission
from grader.checking.verdict import Item


def start(sub: Submission) -> list[Item]:
    """The coach's background compile beside the emulator (None: no panel for this one)."""
    ex = sub.ex
    if sub.speed and not sub.stubs and ex.target is not None and os.environ.get("TC_COACH", "1") != "0":
        from grader.coach import panel as _panel

        sub.coach_build = _panel.start(sub.source, ex.kernel, sub.options, sub.arch)
    return []


def show(sub: Submission) -> list[Item]:
    if sub.ex.target is not None and sub.coach_build is not None and sub.correct:
        sub.verdict.coach = coach_panel(sub.ex, sub.source, sub.launch, sub.arch, sub.coach_build, sub.lesson,
                                        sub.job, sub.cases, sub.chosen, sub.explain)
    return []


def coach_panel(ex, source, launch, arch, built, lesson, job, cases, chosen, explain):
    """The panel "where the time goes" (grader.coach), from the memory traffic the emulator
    observed (the lesson item's run on the CPU; its own run at the CPU size on a GPU)."""
    from grader.coach import panel
    from grader.emu.traffic import MemoryTraffic

    idx = lesson_point.observed_case(ex)
    traffic, dims, why = None, None, None
    if idx is None:
        why = f"{ex.id} names no case for the emulator to observe"
    else:
        dims = (list(ex.cpu_sizes) + [ex.cpu_sizes[0]])[idx]
        if lesson is not None and lesson.where.get("traffic"):
            traffic = MemoryTraffic.from_dict(lesson.where["traffic"])
        elif chosen == "gpu":  # the same CPU-size run the emulator makes on a CPU, in its own process
            case = ex.problem.make(dims, np.random.default_rng(secrets.randbits(32)), launch, reference=False)
            tjob = dict(job, backend="emu", cases=[], race_check=False, perf=False, traffic=case.job(),
                        case_timeout=60.0)
            res = isolate.run(tjob, compile_timeout=240, case_timeout=60.0, perf_timeout=60.0)
            if res.get("traffic"):
                traffic = MemoryTraffic.from_dict(res["traffic"])
            else:
                err = res.get("error")
                err = (getattr(err, "message", None) or str(err or "no traffic came back")).splitlines()[0][:200]
                why = f"the emulator's run at {' '.join(f'{k}={v}' for k, v in dims.items())} failed: {err}"
        else:
            why = "the emulator's run recorded no traffic" + ("" if lesson is not None else " (no lesson run)")
    block = cases[-1].block if cases else (1, 1, 1)
    threads = int(np.prod(block))
    try:
        return panel.build(exercise=ex.id, source=source, kernel=ex.kernel, options=ex.problem.options(launch),
                           arch=arch, threads=threads, smem_dynamic=cases[-1].shared_mem if cases else 0,
                           problem=ex.problem, traffic=traffic, traffic_dims=dims, perf_dims=ex.perf_size,
                           built=built, measure=explain, launch=launch, detail=explain,
                           reference=ex.reference, traffic_why=why, sections=ex.coach_sections)
    except Exception as e:  # the coach explains; it never costs a verdict
        from grader.coach.panel import Panel

        return Panel(ex.id, arch, missing=[f"the coach failed: {type(e).__name__}: {e}"])
