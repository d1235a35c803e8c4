"""Check every speed threshold on this GPU: the reference must beat the target by 1.3x
(grader.checking.calibration.MARGIN) and the previous lesson's kernel must miss it (DESIGN.md,
grading policy).

    python -m grader.bench.calibrate [--out kernels/RESULTS-grader.md]

Every exercise's reference goes through the same `check` a student's kernel does. For a record
whose floor and target follow from one measured ratio (Exercise.calibration), it also prints that
number and the floor and target this run's ratio would give (the number to put in the record).
"""
from __future__ import annotations

import argparse
import datetime
import re
import sys
import time

from grader.bench import ladders
from grader.checking import calibration, exercises
from grader.checking.check import check
from grader.runtime import kernels
from grader.runtime.device import device_info

# exercise -> the previous lesson's kernel (Exercise.previous) and its launch: its rung's in the
# exercise's ladder, else the exercise's defaults (graded under the same contract where it fits)
PREVIOUS = {ex.id: (ex.previous, ladders.launch_of(ex, ex.previous))
            for ex in exercises.EXERCISES.values() if ex.previous}


def previous_source(exercise_id: str) -> str:
    """The previous lesson's kernel for `exercise_id`, its entry point named as the exercise's
    (notebook 06's wmma_gemm graded as mma-gemm's mma_gemm; the contract is otherwise the same)."""
    name, _ = PREVIOUS[exercise_id]
    src, entry = kernels.source(name), exercises.get(exercise_id).kernel
    return src if re.search(rf"\b{entry}\(", src) else re.sub(r"\bwmma_gemm\(", f"{entry}(", src)


def rows():
    out = []
    for ex in exercises.EXERCISES.values():
        t0 = time.perf_counter()
        v = check(ex.id, kernels.source(ex.reference), backend="gpu")
        seconds = time.perf_counter() - t0
        row = dict(id=ex.id, reference=ex.reference, score=v.score, points=ex.points, seconds=seconds,
                   passed=v.passed, speed=v.speed, headline=v.headline)
        if ex.id in PREVIOUS:
            name, launch = PREVIOUS[ex.id]
            p = check(ex.id, previous_source(ex.id), backend="gpu", **launch)
            row["previous"] = (name, p.speed["ratio"] if p.speed else None, p.score)
        out.append(row)
        print(_line(row), flush=True)
    return out


def _line(r) -> str:
    s = r["speed"]
    speed = "correctness only"
    if s:
        margin = s["ratio"] / s["target"]
        speed = (f"{100 * s['ratio']:.1f}% of library (floor {100 * s['floor']:.3g}%, target "
                 f"{100 * s['target']:.3g}%, margin {margin:.2f}x"
                 + ("" if margin >= calibration.MARGIN else f", below the rule's {calibration.MARGIN:g}x") + ")")
    prev = ""
    if r.get("previous"):
        name, ratio, score = r["previous"]
        prev = f"{name}: {100 * ratio:.1f}%, {score:g} pts" if ratio is not None else f"{name}: not timed"
    return (f"| {r['id']} | {r['reference']} | {r['score']:g}/{r['points']:g} | {speed} | {prev} | "
            f"{r['seconds']:.1f} s |")


def derived(rows) -> list[str]:
    """For each record whose floor and target follow from one measured ratio: that number, and the
    floor and target this run's ratio (through check) would give."""
    out = []
    for r in rows:
        ex = exercises.get(r["id"])
        m = ex.calibration
        if m is None:
            continue
        line = (f"- {ex.id}: floor {ex.floor:g}, target {ex.target:g} follow from {m.ratio:g}x "
                f"(by {m.by}; {m.where})")
        if r["speed"]:
            now = calibration.Measured(r["speed"]["ratio"], "this run", by="check")
            floor, target = calibration.thresholds(now)
            line += (f"; this run's {now.ratio:.3g}x through check would give floor {floor:g}, target {target:g} "
                     f"(Measured({now.ratio:.3g}, \"<date>, <GPU>, python -m grader.bench.calibrate\", by=\"check\"))")
        out.append(line)
    if out:
        out.insert(0, "\nThresholds that follow from one measured ratio (grader.checking.calibration):\n")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.calibrate")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    info = device_info()
    if info is None:
        print("calibrate needs a GPU: it times every reference solution against its library "
              "baseline (CuPy sees no CUDA device here). Run it on the GPU machine you grade on.",
              file=sys.stderr)
        return 2
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"## Grader calibration — {info.name} ({info.arch}), {now}\n\n"
            "`python -m grader.bench.calibrate`: each reference solution through `grader.check` on the GPU "
            "(fresh random inputs, isolated child process, speed vs the library in the same process).\n\n"
            "| exercise | reference | points | speed | previous lesson's kernel | check took |\n"
            "|---|---|---|---|---|---|\n")
    measured = rows()
    body = "\n".join(_line(r) for r in measured)
    text = head + body + "\n" + "".join(line + "\n" for line in derived(measured))
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
