"""Where a submission's grading time goes, written as it happens (issue #28).

Off unless TC_PHASES names a file: then every `nbgrader autograde` process of the course (the
plain command and the cohort's jobs alike) appends one JSON line per step it finishes:

    {"t": epoch, "pid": ..., "student": ..., "notebook": ..., "phase": ..., "seconds": ...}

The steps: the nbgrader process's start-up (interpreter, imports, the app and its config, up to
the autograde's start), each submission's set-up (gradebook rows, files copied), its notebook's
execution in the sandboxed kernel, the trusted grading (with the trusted process's own split:
its start-up, the kernel processes' start and compile, correctness runs, the timed runs (the span
a cohort holds the GPU alone: grader.checking.isolate.HELD_ALONE) apart from their set-up and
warm-up (GPU shared), waits for the GPU lock, Python answers, references and verdicts, the compile
cache), nbgrader's other preprocessors (gradebook
rows, checksums, writing the notebook), and the whole run. `summarise` turns a file into per
submission medians; .ci/gpu-cohort prints them (course/README.md, "Grading a whole cohort").
Only this process writes the file (outside every sandbox); a line is one small append.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from collections import defaultdict

ENV = "TC_PHASES"
STARTUP = "nbgrader start-up (interpreter, imports, app, config)"
SETUP = "submission set-up (gradebook rows, files)"
EXECUTE = "notebook execution (sandboxed kernel)"
TRUSTED = "trusted grading (total)"
OTHER = "nbgrader's other preprocessors (gradebook, checksums, writing)"
WHOLE = "nbgrader autograde (whole run)"


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def record(phase: str, seconds: float, **where) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    line = json.dumps(dict(t=time.time(), pid=os.getpid(), phase=phase, seconds=round(max(seconds, 0.0), 4), **where))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())  # one write of one line: appends never interleave
        finally:
            os.close(fd)
    except OSError:
        pass  # a measurement never stops a grading


def _process_start() -> float:
    """When this process started (its fork, for a cohort job), as epoch seconds."""
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:
        return time.time()


def install() -> None:
    """Wrap nbgrader's Autograde steps to record their times (idempotent; costs nothing when
    TC_PHASES is unset)."""
    from nbgrader.converters.autograde import Autograde

    if getattr(Autograde, "_tc_phases", False):
        return
    start, init_assignment, convert_one = Autograde.start, Autograde.init_assignment, Autograde.convert_single_notebook

    def timed_start(self):
        if enabled():
            record(STARTUP, time.time() - _process_start(), student=self.coursedir.student_id)
        t0 = time.time()
        try:
            return start(self)
        finally:
            if enabled():
                record(WHOLE, time.time() - _process_start(), student=self.coursedir.student_id,
                       since_start=round(time.time() - t0, 4))

    def timed_init(self, assignment_id, student_id):
        t0 = time.time()
        try:
            return init_assignment(self, assignment_id, student_id)
        finally:
            record(SETUP, time.time() - t0, student=student_id)

    def timed_convert(self, notebook_filename):
        t0 = time.time()
        try:
            return convert_one(self, notebook_filename)
        finally:
            record("notebook (total)", time.time() - t0, notebook=os.path.splitext(os.path.basename(notebook_filename))[0],
                   student=_student_of(self, notebook_filename))

    Autograde.start, Autograde.init_assignment, Autograde.convert_single_notebook = timed_start, timed_init, timed_convert
    Autograde._tc_phases = True


def _student_of(app, notebook_filename: str) -> str | None:
    import re

    regexp = app._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
    m = re.match(regexp, os.path.dirname(notebook_filename))
    return m.group("student_id") if m else None


# ------------------------------------------------------------------ reading a file back
def load(path: str | os.PathLike) -> list[dict]:
    out = []
    try:
        with open(path) as f:
            for ln in f:
                try:
                    out.append(json.loads(ln))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def summarise(rows: list[dict]) -> dict:
    """Per-submission medians of each step, the process start-ups (per process) and derived rests:
    {"students": n, "processes": n, "per_submission": {phase: median s}, "startup": [s...],
    "whole": [s...]}. Phases a submission has several of (notebooks) are added up first."""
    per: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    startups, wholes = [], []
    for r in rows:
        ph, s, st = r.get("phase"), float(r.get("seconds", 0.0)), r.get("student")
        if ph == STARTUP:
            startups.append(s)
        elif ph == WHOLE:
            wholes.append(s)
        elif st:
            per[st][ph] += s
    for st, d in per.items():  # what a notebook's total holds beyond execution and trusted grading
        if "notebook (total)" in d:
            d[OTHER] = max(d["notebook (total)"] - d.get(EXECUTE, 0.0) - d.get(TRUSTED, 0.0), 0.0)
        inner = sum(v for k, v in d.items() if k.startswith("trusted: "))
        if TRUSTED in d and inner:
            d["trusted: the rest (sandbox, I/O, waits)"] = max(d[TRUSTED] - inner, 0.0)
    names = sorted({k for d in per.values() for k in d})
    med = {k: statistics.median([d.get(k, 0.0) for d in per.values()]) for k in names} if per else {}
    return dict(students=len(per), processes=len(startups), per_submission=med, startup=startups, whole=wholes)


ORDER = [STARTUP, SETUP, EXECUTE, TRUSTED]


def table(summary: dict, title: str = "") -> str:
    """Markdown: one row per step, the median seconds per submission."""
    med = summary["per_submission"]
    keys = [k for k in ORDER if k in med] + sorted(k for k in med if k.startswith("trusted: ")) + \
           [k for k in (OTHER, "notebook (total)") if k in med]
    lines = [f"| step{(' (' + title + ')') if title else ''} | median s per submission |", "|---|---|"]
    if summary["startup"]:
        lines.append(f"| {STARTUP}, per process ({summary['processes']} process(es) for "
                     f"{summary['students']} submission(s)) | {statistics.median(summary['startup']):.2f} |")
    for k in keys:
        lines.append(f"| {'&nbsp;&nbsp;' if k.startswith('trusted: ') else ''}{k} | {med[k]:.2f} |")
    return "\n".join(lines) + "\n"
