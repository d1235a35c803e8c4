"""The course's own rungs for one speed-graded exercise, as the class leaderboard draws them:
the exercise record's floor and target (grader.checking.exercises) and, where a calibration was
recorded on a GPU (`python -m grader.bench.calibrate --out kernels/RESULTS-grader.md`), the
reference solution's ratio and the previous lesson's kernel's, from the latest row for it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RECORD = Path(__file__).resolve().parents[2] / "kernels" / "RESULTS-grader.md"

# one row of grader.bench.calibrate's table: | id | reference | points | speed | previous | took |
_ROW = re.compile(r"^\|\s*(?P<id>[\w-]+)\s*\|\s*(?P<ref>\w+)\s*\|[^|]*\|\s*(?P<ratio>[\d.]+)% of library[^|]*\|"
                  r"\s*(?:(?P<prev>\w+): (?P<pratio>[\d.]+)%)?[^|]*\|")
_GPU = re.compile(r"NVIDIA [A-Z]\d+[\w ]*?(?= \(|,|$)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass
class Rungs:
    floor: float | None
    target: float | None
    reference: str = ""  # kernels/<file>.cu
    reference_ratio: float | None = None
    previous: str = ""
    previous_ratio: float | None = None
    recorded: str = ""  # "NVIDIA H100 80GB HBM3, 2026-11-26 (kernels/RESULTS-grader.md)"


def calibrated(text: str) -> dict[str, tuple[float, str, float | None, str]]:
    """{exercise: (reference ratio, previous kernel, its ratio or None, where recorded)}, the last
    row in the file for each (calibrations are appended)."""
    out, heading, gpu = {}, "", ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line
            found = _GPU.search(line)
            gpu = found.group(0).strip() if found else gpu if line.startswith("###") else ""
            continue
        m = _ROW.match(line)
        if m:
            date = _DATE.search(heading)
            where = ", ".join(x for x in (gpu, date.group(0) if date else "") if x) or "a GPU"
            out[m["id"]] = (float(m["ratio"]) / 100, m["prev"] or "",
                            float(m["pratio"]) / 100 if m["pratio"] else None, f"{where} ({RECORD.parent.name}/{RECORD.name})")
    return out


def rungs(exercise_id: str, record: Path = RECORD) -> Rungs:
    from grader.checking import exercises

    ex = exercises.get(exercise_id)
    r = Rungs(ex.floor, ex.target, ex.reference, previous=ex.previous)
    try:
        text = record.read_text()
    except OSError:
        return r
    found = calibrated(text).get(exercise_id)
    if found:
        r.reference_ratio, prev, r.previous_ratio, r.recorded = found
        r.previous = prev or r.previous
    return r
