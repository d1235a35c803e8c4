"""Held-out red team of the cohort autograde (grader.classroom.cohort) and what reads its results
(the report, grades.csv, the leaderboard), through the guide's command on the CPU (emulator workers).

One small class of 01-memory-layout, every hand-in the course's solution trimmed to its graded
cells, so each must score what an honest one scores; what differs is who hands it in and what lies
beside it:
- "ann": nothing odd (the score every other hand-in must get);
- "-h": an id that nbgrader's command line read as its own option (help) when the job passed it
  as a separate argument: never graded by the cohort, though plain autograde grades it;
- "[x]": an id that is a glob: nbgrader itself globs its folder for notebooks, so even plain autograde
  never finds its notebook; the cohort must flag it NOT GRADED (never a 0) and grade everyone else;
- 253 x "L": a valid folder name whose job log ("<id>.log") is not: the write raised in the
  cohort's one merging loop and stopped the grading of the whole class;
- "extras": files named like the course's own beside the notebook (a gradebook.db, an
  nbgrader_config.py that would leave a mark if any process ran it, report.json, phases-*.jsonl,
  .term.json, a link to the course's gradebook): graded as ann, the course's files untouched.
And apart, with a stand-in for Dask's client: hand-ins are packed as workers free up (every one was
packed, each up to the 1 GB folder limit, in the instructor's process before the first job ended).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.classroom import workflow as classroom

A = "01-memory-layout"
LONG = "L" * 253
STUDENTS = ["ann", "-h", "[x]", LONG, "extras"]
GRADED = [s for s in STUDENTS if s != "[x]"]


def _extras(folder: Path, mark: Path) -> None:
    import sqlite3

    con = sqlite3.connect(folder / "gradebook.db")
    con.execute("CREATE TABLE forged (x)")
    con.commit()
    con.close()
    (folder / "nbgrader_config.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    (folder / "report.json").write_text(json.dumps({"results": [{"student": "extras", "status": "graded"}]}))
    (folder / "phases-1.jsonl").write_text('{"phase": "trusted grading", "seconds": 1e9}\n')
    (folder / ".term.json").write_text('{"due": {}}')
    os.symlink(folder.parents[2] / "gradebook.db", folder / "gb.db")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from redteam import require_sandbox, trimmed_solution, write_submission

    require_sandbox()
    work = tmp_path_factory.mktemp("cohort-redteam")
    root = classroom.new_course(work / "course")
    classroom.release(root, A)
    mark = work / "config-ran"
    for i, s in enumerate(STUDENTS):
        nb = write_submission(work / "handins", f"s{i}", A, trimmed_solution(A))
        folder = classroom.submit(root, s, A, [nb])
        if s == "extras":
            _extras(folder, mark)
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    report = work / "report.json"
    proc = subprocess.run([sys.executable, "-m", "grader.classroom.cohort", "autograde", A, "--workers", "2",
                           "--timeout", "300", "--report", str(report)], cwd=root, env=env, capture_output=True,
                          text=True, timeout=900)
    classroom.nbgrader(root, "export", "--to", "grades.csv")
    with open(root / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    return dict(root=root, proc=proc, report=json.loads(report.read_text()) if report.exists() else None,
                rows=rows, mark=mark)


@pytest.mark.slow
def test_every_odd_id_is_graded_as_an_honest_hand_in(graded):
    proc, report = graded["proc"], graded["report"]
    assert report is not None, proc.stderr[-3000:]  # the command ended with its report
    assert {r["student"]: r["status"] for r in report["results"]} == dict({s: "graded" for s in GRADED}, **{
        "[x]": "failed"}), proc.stdout[-3000:]
    rows = graded["rows"]
    honest = rows["ann"]["raw_score"]
    assert float(honest) > 0
    assert {s: (rows[s]["status"], rows[s]["raw_score"]) for s in GRADED} == {s: ("graded", honest) for s in GRADED}
    assert rows["[x]"]["status"].startswith("NOT GRADED") and rows["[x]"]["raw_score"] == ""  # flagged, never 0


@pytest.mark.slow
def test_every_job_keeps_its_log(graded):
    from grader.classroom.standing import LOGS, job_log

    logs = graded["root"] / "autograded" / LOGS / A
    for s in STUDENTS:
        assert job_log(logs, s).read_text().startswith("# graded" if s in GRADED else "# failed"), s


@pytest.mark.slow
def test_files_named_like_the_courses_own_change_nothing(graded):
    assert not graded["mark"].exists()  # no process read the hand-in's nbgrader_config.py as config
    root = graded["root"]
    assert not (root / "submitted" / "extras" / A / "gb.db").exists()  # the link removed, never followed
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:  # the course's gradebook, not the hand-in's
        assert set(GRADED) <= {s.id for s in gb.students} <= set(STUDENTS)
        assert "forged" not in {r[0] for r in gb.db.execute(
            __import__("sqlalchemy").text("SELECT name FROM sqlite_master"))}


class _Client:
    """A Dask client that records what the cohort hands it: the hand-in packs of the jobs it submits."""

    def __init__(self):
        self.packs: list[int] = []

    def submit(self, fn, *args, **kw):
        if fn.__name__ == "grade_job":
            self.packs.append(len(args[3]))  # the hand-in, packed whole in the instructor's process
        return object()

    def cancel(self, futures):
        pass


def test_hand_ins_are_packed_as_workers_free_up_not_all_at_once(tmp_path, monkeypatch):
    import types

    import distributed

    from grader.classroom import cohort

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    root = classroom.new_course(tmp_path / "course")
    classroom.release(root, A)
    for i in range(6):
        folder = root / "submitted" / f"s{i}" / A
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text((root / "release" / A / f"{A}.ipynb").read_text())
        (folder / "blob.bin").write_bytes(os.urandom(1 << 20))  # incompressible
    client = _Client()
    engine = types.SimpleNamespace(auto=False, groups={}, labels=["cpu0"], resources={}, client=client)

    def stop(*a, **kw):  # the instructor's Ctrl-C while the first job runs: what is held by then
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "wait", stop)
    cohort.autograde(cohort.load_course(root), A, engine=engine, out=open(os.devnull, "w"))
    assert len(client.packs) <= 2 * len(engine.labels), f"{len(client.packs)} hand-ins packed for 1 worker"
