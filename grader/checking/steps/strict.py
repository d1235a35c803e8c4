"""A GPU grade is never laxer than the emulator's: a kernel a GPU ran right may still read out of
bounds, race, read shared memory nobody wrote or break a WMMA alignment rule, and the GPU's result
was then luck. So a kernel that passed on the GPU also runs on the emulator at its CPU sizes, and
any fault there fails the grade with the emulator's precise message (TC_GPU_STRICT=0: off)."""
from __future__ import annotations

import os
import secrets

import numpy as np

from grader.checking import isolate
from grader.checking.judge import fault_item, judge_case
from grader.checking.scoring import STRICT
from grader.checking.steps.context import Submission
from grader.checking.verdict import FAIL, PASS, SKIP, Item
from grader.runtime.errors import KernelFault


def strict(sub: Submission) -> list[Item]:
    if sub.chosen == "gpu" and all(i.status == PASS for i in sub.verdict.items):
        return strict_items(sub.ex, sub.source, sub.launch, sub.cell)
    return []


def strict_items(ex, source: str, launch: dict, cell) -> list[Item]:
    if os.environ.get("TC_GPU_STRICT", "1") == "0":
        return []
    import shutil

    from grader import emu

    if not hasattr(emu, "compile_module") or shutil.which(os.environ.get("TC_EMU_CXX", "g++")) is None:
        return [Item(STRICT, SKIP, "the emulator's strict checks need g++ on this machine (not found)")]
    sizes = list(ex.cpu_sizes)
    cases = [ex.problem.make(d, np.random.default_rng(secrets.randbits(32)), launch) for d in sizes]
    job = dict(exercise=ex.id, source=source, backend="emu", options=ex.problem.options(launch),
               kernel=ex.kernel, cases=[c.job() for c in cases], race_check=ex.race_check, launch=launch,
               perf=False, case_timeout=20.0)
    result = isolate.run(job, compile_timeout=240, case_timeout=20.0)
    err = result["error"]
    if err is not None and (not result["compiled"] or not isinstance(err, KernelFault)):
        # what the emulator cannot run (a form it does not support, a build it refuses, too slow on a
        # CPU) says nothing against the kernel: the GPU's grade stands
        return [Item(STRICT, SKIP, f"not run on the emulator: {err.message.splitlines()[0][:300]}")]
    items = []
    for case, res in zip(cases, result["cases"]):
        item = judge_case(ex, case, res, source)
        if item.status == FAIL:
            item.name = f"{STRICT}: {case.label}"
            items.append(item)
    if result["error"] is not None:
        step = result.get("error_step", 0)
        label = f"{STRICT}: " + (cases[min(step, len(cases) - 1)].label if isinstance(step, int) else "run")
        items.append(fault_item(result["error"], label, ex, cell))
    for i in items:
        i.message = ("right on the GPU, but the emulator's stricter run (CPU sizes) finds: " + i.message)
    return items or [Item(STRICT, PASS, "the emulator's stricter run at the CPU sizes found no fault "
                                        "(bounds, races, unwritten shared memory, alignment) and the same results")]
