"""What a cohort run shows (grader.classroom.cohort): the progress line while it grades, and the
summary after, with the speed-up stated only against plain `nbgrader autograde`'s time."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.classroom.cohort_concurrency import describe
from grader.classroom.standing import job_log

def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else (
        f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")


@dataclass
class Progress:
    total: int
    labels: list[str]
    out: object = sys.stderr
    t0: float = field(default_factory=time.time)
    done: int = 0
    failed: int = 0
    per: dict = field(default_factory=dict)

    def __post_init__(self):
        self.tty = hasattr(self.out, "isatty") and self.out.isatty()
        self.per = {label: 0 for label in self.labels}

    def line(self, running: dict[str, str]) -> str:
        width = 24
        fill = int(width * self.done / self.total) if self.total else width
        workers = "  ".join(f"{w}: {n}" + (f" (now {running[w]})" if w in running else "")
                            for w, n in self.per.items())
        return (f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} done, {self.failed} failed"
                f" | {workers} | {_hms(time.time() - self.t0)}")

    def finished(self, result: dict, running: dict[str, str]) -> None:
        self.done += 1
        self.failed += result["status"] != "graded"
        w = result.get("worker", "?")
        self.per[w] = self.per.get(w, 0) + 1
        if not self.tty:
            print(f"{self.line(running)}  <- {result['student']}: {result['status']} ({result['seconds']:.1f} s)",
                  file=self.out, flush=True)
        else:
            self.draw(running)

    def draw(self, running: dict[str, str]) -> None:
        if self.tty:
            print("\r\033[K" + self.line(running), end="", file=self.out, flush=True)

    def close(self):
        if self.tty:
            print(file=self.out, flush=True)


def load_baseline(spec: str | None, course, assignment: str, gpu_name: str | None) -> dict | None:
    """Plain `nbgrader autograde`'s seconds per submission on one GPU, to state beside this run's:
    a number (--baseline-seconds), or the value recorded for this assignment (and GPU model) in a
    JSON file (--baseline FILE; default autograded/.cohort-logs/ASSIGNMENT/baseline.json), as
    .ci/gpu-cohort writes it: {"ASSIGNMENT": {"GPU name": {"seconds_per_submission": s, ...}}}."""
    if spec is not None:
        try:
            return dict(seconds=float(spec), source="--baseline-seconds")
        except ValueError:
            path = Path(spec)
    else:
        path = course.logs(assignment) / "baseline.json"
        if not path.exists():
            return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"cohort: cannot read the baseline {path}: {e}") from None
    per = data.get(assignment, data)
    rec = per.get(gpu_name) if gpu_name and isinstance(per.get(gpu_name), dict) else None
    if rec is None and "seconds_per_submission" not in per:
        rec = next((v for v in per.values() if isinstance(v, dict) and "seconds_per_submission" in v), None)
    rec = rec or per
    if "seconds_per_submission" not in rec:
        return None
    what = ", ".join(f"{k} {rec[k]}" for k in ("gpu", "measured", "submissions") if k in rec)
    return dict(seconds=float(rec["seconds_per_submission"]), source=f"{path}" + (f": {what}" if what else ""))


def gpu_name() -> str | None:
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30)
        names = r.stdout.split("\n")
        return names[0].strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def md(text: object) -> str:
    """A hand-in's text (a student id is a folder name: any character but '/') as one Markdown table cell
    or list item: no line breaks, no '|' to end the cell, no HTML or code span (the summary is printed and kept
    as summary.md, which JupyterLab and GitHub render)."""
    import html

    s = html.escape(" ".join(str(text).splitlines()))
    return s.replace("|", "&#124;").replace("`", "&#96;")


def summary(assignment: str, results: list[dict], skipped: list[str], wall: float, labels: list[str],
            gpus: bool, logs: Path, baseline: dict | None = None, command_wall: float | None = None,
            n_gpus: int | None = None, jobs_per_gpu: dict | None = None) -> str:
    ran = [r for r in results if r["status"] != "lost"]  # a lost job's time is not known
    secs = [r["seconds"] for r in ran]
    busy = sum(secs)
    failures = [r for r in results if r["status"] != "graded"]
    unit = "GPU-hours" if gpus else "worker-hours (emulator)"
    rows = [("submissions", f"{len(results) + len(skipped)}: {len(results) - len(failures)} graded now, "
                            f"{len(skipped)} already done (skipped)"),
            ("failures", str(len(failures)))]
    if secs:
        slow = max(ran, key=lambda r: r["seconds"])
        rows += [("time per submission", f"median {statistics.median(secs):.1f} s, mean {statistics.mean(secs):.1f} s, "
                                         f"slowest {slow['seconds']:.1f} s ({md(slow['student'])})"),
                 ("wall time", f"{_hms(wall)} on " + (
                     f"{n_gpus} GPU(s), {len(labels)} job(s) at a time: " if gpus and n_gpus and n_gpus != len(labels)
                     else f"{len(labels)} {'GPU' if gpus else 'worker'}(s): ") + ", ".join(labels)),
                 *([("jobs per GPU", describe(jobs_per_gpu))] if jobs_per_gpu else []),
                 (unit, f"{busy / 3600:.3f} ({_hms(busy)} of jobs)")]
        total = command_wall if command_wall is not None else wall
        if command_wall is not None:
            rows.append(("wall time of the command", f"{_hms(total)} ({total:.0f} s, its start-up included)"))
        graded = len(ran)
        rows.append(("this run, per submission", f"{total / graded:.1f} s of wall time ({total:.0f} s / {graded})"))
        if baseline and gpus:
            plain = baseline["seconds"] * graded
            rows.append(("plain `nbgrader autograde`, one GPU",
                         f"{baseline['seconds']:.1f} s per submission ({baseline['source']}): {graded} take "
                         f"{_hms(plain)}"))
            rows.append(("speed-up over plain nbgrader", f"{plain / total:.2f}x" + (
                f" on {n_gpus} GPU(s)" if n_gpus else "")))
        elif gpus:
            rows.append(("speed-up over plain nbgrader", "not stated: no plain `nbgrader autograde` time given "
                                                         "(--baseline-seconds S, or --baseline FILE)"))
    text = [f"## Cohort autograde of {assignment}", "", "| | |", "|---|---|"]
    text += [f"| {k} | {v} |" for k, v in rows]
    if ran:
        text += ["", "| worker | CUDA_VISIBLE_DEVICES | graded | failed | busy |", "|---|---|---|---|---|"]
        for w in sorted({r["worker"] for r in ran}):
            mine = [r for r in ran if r["worker"] == w]
            dev = mine[0].get("device")
            dev = "(unset)" if dev is None else (dev or '"" (no GPU: the emulator)')
            text.append(f"| {w} | {dev} | {sum(r['status'] == 'graded' for r in mine)} | "
                        f"{sum(r['status'] != 'graded' for r in mine)} | {_hms(sum(r['seconds'] for r in mine))} |")
    if failures:
        text += ["", "Failures (the rest of the cohort is unaffected; a rerun grades these again):"]
        text += [f"- {md(r['student'])}: {r['status']}: {md(r.get('why', ''))} (log: {md(job_log(logs, r['student']))})"
                 for r in failures]
    return "\n".join(text) + "\n"
