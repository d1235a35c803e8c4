"""Speed, only for a correct kernel on a GPU whose timed launches all computed the answer
(the timed step); otherwise why it was not measured."""
from __future__ import annotations

from grader.checking import lesson_point
from grader.checking.scoring import NO_SPEED, speed_graded
from grader.checking.steps.context import Submission
from grader.checking.verdict import FAIL, PASS, SKIP, Item, Verdict
from grader.problems import baselines


def speed(sub: Submission) -> list[Item]:
    from grader.runtime.device import device_info, has_gpu, needs

    if sub.ex.target is None:
        return []
    if not speed_graded():
        return [Item("speed", SKIP, NO_SPEED)]
    if sub.chosen != "gpu":
        m = sub.ex.min_arch  # named where the exercise needs more than the course's least GPU (sm_70)
        why = "needs a GPU" + (f" of sm_{m} or newer" if m > 70 else "")
        why += " (none here)" if not has_gpu() else f" (this GPU: {device_info().arch})" if needs(m) else ""
        if sub.lesson is not None and sub.lesson.kind == "lesson-point":
            why += f"; and on the emulator it is {lesson_point.NOT_YET} (see {lesson_point.NAME})"
        return [Item("speed", SKIP, why)]
    if not sub.speed:
        return [Item("speed", SKIP, "not measured (speed=False)")]
    if not sub.correct:
        return [Item("speed", SKIP, "not timed: make it correct first")]
    if sub.timed is not None and sub.timed.status == PASS:
        return [speed_item(sub.ex, sub.result["perf"], sub.verdict)]
    return []


def speed_item(ex, perf: dict, v: Verdict) -> Item:
    # median of per-round ratios when the child timed both sides in alternating rounds
    ratio = perf.get("ratio") or perf["baseline_ms"] / perf["kernel_ms"]
    frac = min(max((ratio - ex.floor) / (ex.target - ex.floor), 0.0), 1.0)
    base = baselines.name(ex.problem.baseline)
    dims = ex.perf_size
    flops = ex.problem.flops(dims)
    if flops:
        rate = (f"{flops / (perf['kernel_ms'] * 1e-3) / 1e9:.0f} GFLOPS vs "
                f"{flops / (perf['baseline_ms'] * 1e-3) / 1e9:.0f} for {base}")
    else:
        nbytes = ex.problem.bytes(dims)
        rate = (f"{nbytes / (perf['kernel_ms'] * 1e-3) / 1e9:.0f} GB/s vs "
                f"{nbytes / (perf['baseline_ms'] * 1e-3) / 1e9:.0f} for {base}")
    # the spreads (IQR over median of each side's samples): this run's own noise, which a regrade's
    # manual-score rule allows for (grader.classroom.scores.speed_noise); points: what speed is worth
    v.speed = dict(ratio=ratio, floor=ex.floor, target=ex.target, kernel_ms=perf["kernel_ms"],
                   baseline_ms=perf["baseline_ms"], fraction=frac, points=ex.points_speed,
                   **{k: perf[k] for k in ("kernel_spread", "baseline_spread") if perf.get(k) is not None})
    provisional = ", provisional" if ex.calibration is not None and ex.calibration.provisional else ""
    msg = (f"{rate}: {100 * ratio:.1f}% of the speed of {base} (floor {100 * ex.floor:.3g}%, target "
           f"{100 * ex.target:.3g}%{provisional}) -> {frac * ex.points_speed:.2g}/{ex.points_speed:g} points")
    status = PASS if ratio >= ex.target else FAIL
    return Item("speed", status, msg, kind="" if status == PASS else "slow", hint=ex.slow_hint)
