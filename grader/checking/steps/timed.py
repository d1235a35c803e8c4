"""Every launch that was timed must have computed the answer too (GPU only): the sampled
output elements of each timed launch against a float64 reference, and a speed past what the
GPU can do refused as impossible."""
from __future__ import annotations

import secrets

import numpy as np

from grader.checking.scoring import speed_graded
from grader.checking.steps.context import Submission
from grader.checking.verdict import FAIL, PASS, Item
from grader.problems import baselines


def timed_output(sub: Submission) -> list[Item]:
    if (sub.ex.target is None or not speed_graded() or sub.chosen != "gpu" or not sub.speed or not sub.correct
            or not sub.result["perf"]):
        return []  # the speed step says why nothing was timed
    sub.timed = timed_output_item(sub.ex, sub.launch, sub.perf_seed, sub.perf_samples, sub.result["perf"])
    return [sub.timed]


TIMED_SAMPLES = 512  # output elements checked in every timed launch (isolate.LAUNCH_SAMPLES)


def perf_samples(ex, launch, seed) -> list[int]:
    case = ex.problem.make(ex.perf_size, np.random.default_rng(seed), launch, reference=False)
    n = case.args[case.outputs[0]].size
    rng = np.random.default_rng(secrets.randbits(64))
    return sorted(int(i) for i in rng.choice(n, size=min(TIMED_SAMPLES, n), replace=False))


def timed_output_item(ex, launch, seed, flat, perf: dict) -> Item:
    """Every launch that was timed must have computed the answer too, at the timed size: for
    each, sampled elements of what it wrote (into an output poisoned just before it, from an
    input scaled by that launch's own power of two) against a float64 reference of those
    elements, scaled alike; and no element left unwritten or non-finite, and the inputs as the
    grader left them. (The timed size is too large for a full reference on the CPU.)"""
    dims = ", ".join(f"{k}={v}" for k, v in ex.perf_size.items())
    label = f"correct: timed size ({dims})"
    case = ex.problem.make(ex.perf_size, np.random.default_rng(seed), launch, reference=False)
    flat = np.asarray(flat, dtype=np.int64)
    ref, bound = ex.problem.sample(case, flat)
    bound = np.broadcast_to(bound, ref.shape)
    shape = case.args[case.outputs[0]].shape
    hint = ("Your kernel is right at the small sizes but not in every launch at the size it is timed at: "
            "every timed launch is checked, each into a freshly poisoned output from fresh inputs, so "
            "each must do the whole computation.")
    n = int(perf.get("launches", 0))
    total = f"{n} timed launches"
    if n == 0:
        return Item(label, FAIL, "no timed launch was checked", kind="wrong-when-timed", hint=hint)
    if perf.get("changed_inputs"):
        return Item(label, FAIL, f"the timed launches changed input argument(s) {perf['changed_inputs']}: a "
                    "kernel only reads its inputs", kind="changed-input", hint=hint)
    samples = np.asarray(perf["launch_samples"], dtype=np.float64).reshape(n, -1)
    for i in range(n):
        s = float(perf["launch_scales"][i])
        if perf["launch_unwritten"][i]:
            return Item(label, FAIL, f"launch {i + 1} of {total}: {perf['launch_unwritten'][i]} of {perf['size']} "
                        "output elements were never written", kind="unwritten", hint=hint)
        if perf["launch_nonfinite"][i]:
            return Item(label, FAIL, f"launch {i + 1} of {total}: {perf['launch_nonfinite'][i]} output elements "
                        "are NaN or infinite", kind="nan", hint=hint)
        got = samples[i, :len(flat)]
        want = s * ref
        bad = ~(np.abs(got - want) <= abs(s) * bound)  # NaN counts as bad
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            where = np.unravel_index(flat[k], shape)
            return Item(label, FAIL, f"launch {i + 1} of {total} is wrong: {int(bad.sum())} of {len(flat)} checked "
                        f"elements; first at {tuple(int(x) for x in where)}: got {got[k]:.6g}, expected "
                        f"{want[k]:.6g}", kind="wrong-when-timed", hint=hint)
    ratio = perf.get("ratio") or perf["baseline_ms"] / perf["kernel_ms"]
    if ratio > ex.ceiling:
        base = baselines.name(ex.problem.baseline)
        return Item(label, FAIL, f"{100 * ratio:.0f}% of the speed of {base} is more than this GPU can do "
                    f"(above {100 * ex.ceiling:.0f}% is refused as impossible: it is past what the fastest "
                    "library reaches here)",
                    kind="impossible-speed",
                    hint="A correct kernel cannot be this fast: the timed launches must do the whole computation.")
    return Item(label, PASS, f"every one of the {total} was checked: {len(flat)} sampled elements each match "
                "the float64 reference, nothing left unwritten")
