"""Run on fresh random inputs in a child process (grader.checking.isolate) and judge each case
here (grader.checking.judge); a GPU run also times the kernel against the library there."""
from __future__ import annotations

import secrets

import numpy as np

from grader.checking import hints as _hints
from grader.checking import isolate, tensor_work
from grader.checking.judge import fault_item, judge_case
from grader.checking.scoring import speed_graded
from grader.checking.steps import timed
from grader.checking.steps.context import Stop, Submission
from grader.checking.verdict import FAIL, Item
from grader.problems.kinds import Case

# Seconds the timed runs may take (kernel and library, each capped at 8 s of timing by
# timing.paired): past this the kernel hangs at the timed size, and the check stops it.
PERF_TIMEOUT = 60.0


def emulator_here(sub: Submission) -> list[Item]:
    if sub.chosen == "emu":
        from grader import emu

        if not hasattr(emu, "compile_module"):
            return Stop([Item("correctness", FAIL, "no GPU here and the CPU emulator is not available: "
                              "kernels cannot run on this machine", kind="environment")])
    return []


def cases(sub: Submission) -> list[Item]:
    ex, launch, chosen = sub.ex, sub.launch, sub.chosen
    sizes = ex.gpu_sizes if chosen == "gpu" else ex.cpu_sizes
    # a second random input of the first size, unless the input never changes (fragment-probe)
    sub.dims_list = list(sizes) + ([] if ex.problem.fixed_input else [sizes[0]])
    seeds = [secrets.randbits(32) for _ in sub.dims_list]  # unpredictable, never shown
    sub.cases = [ex.problem.make(d, np.random.default_rng(s), launch) for d, s in zip(sub.dims_list, seeds)]
    distinct_labels(sub.cases)
    do_perf = sub.speed and speed_graded() and chosen == "gpu" and ex.perf_size is not None
    sub.perf_seed = secrets.randbits(32)
    # which output elements of the timed launches are checked: unpredictable, never shown
    sub.perf_samples = timed.perf_samples(ex, launch, sub.perf_seed) if do_perf else []
    # Reference kernels take about a second per case on the emulator; 20 s means "hung".
    sub.case_timeout = sub.case_timeout or 20.0
    sub.job = dict(exercise=ex.id, source=sub.source, backend=chosen, options=sub.options,
                   kernel=ex.kernel, cases=[c.job() for c in sub.cases], race_check=ex.race_check,
                   launch=launch, perf=do_perf, perf_seed=sub.perf_seed, perf_samples=sub.perf_samples,
                   case_timeout=sub.case_timeout, tc_probe=ex.tensor_cores, tc_key=tensor_work.probe_key(ex))
    result = sub.result = isolate.run(sub.job, compile_timeout=120 if chosen == "gpu" else 240,
                                      case_timeout=sub.case_timeout, perf_timeout=PERF_TIMEOUT)
    sub.verdict.stdout = result["stdout"]
    items = [judge_case(ex, case, res, sub.source) for case, res in zip(sub.cases, result["cases"])]
    if result["error"] is not None:
        step = result.get("error_step", 0)
        label = "run" if not isinstance(step, int) else f"correct: {sub.cases[min(step, len(sub.cases) - 1)].label}"
        if not result["compiled"]:
            label = "load"
        item = fault_item(result["error"], label, ex, sub.cell)
        if isinstance(step, int) and item.kind == "out-of-bounds" and item.where.get("argument") == "A":
            case = sub.cases[min(step, len(sub.cases) - 1)]
            item.hint = _hints.swapped_grid(ex, item.where.get("block"), case.args) or item.hint
        items.append(item)
    return items


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def distinct_labels(cases: list[Case]) -> None:
    """Two random inputs of the same size get told apart: "... (2nd random input)"."""
    seen: dict[str, int] = {}
    for c in cases:
        seen[c.label] = seen.get(c.label, 0) + 1
        if seen[c.label] > 1:
            c.label = f"{c.label} ({_ordinal(seen[c.label])} random input)"
