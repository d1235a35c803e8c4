"""Manual grades through a cohort regrade, with real nbgrader, the course's config and the guide's
cohort command, on 02-precision (Python answers only: the same scores on a CPU and a GPU).

An instructor grades a class with plain `nbgrader autograde`, gives a manual score, then regrades
everyone with `python -m grader.classroom.cohort autograde A --force` (hours for 300 students) and
goes on grading by hand in the formgrader while it runs. Each job grades a snapshot of the
gradebook taken when the run started; its result must not carry that snapshot's manual scores
back over the ones given since, and what it records of each result must be what plain autograde
records, so the two commands can follow each other.
"""
import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.classroom import scores
from grader.classroom import workflow as classroom
from test_cohort import A as GUIDE_A
from test_cohort import _guide_command
from test_term import book, formgrader, hand_in, run

pytestmark = pytest.mark.slow

A = "02-precision"
STUDENTS = ("mona", "nils")  # names no other test's cohort job uses (jobs are found by them in /tmp)
BEFORE, DURING = "decode-fp16-test", "predictions-test"  # the cells graded by hand before and during the run


def cell(course: Path, name: str, student: str) -> tuple[float | None, float | None]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        g = gb.find_grade(name, A, A, student)
        return g.auto_score, g.manual_score


def records(course: Path, student: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return scores.stored(gb, A, student, A)


def job_in_flight(proc, limit: float = 240) -> str:
    """The student whose cohort job is running now (its scratch course holds their hand-in)."""
    base = Path("/tmp") / f"tc-cohort-{os.getuid()}"
    deadline = time.time() + limit
    while time.time() < deadline and proc.poll() is None:
        for s in STUDENTS:
            if any(base.glob(f"job-*/submitted/{s}/{A}")):
                return s
        time.sleep(0.1)
    raise AssertionError(f"no cohort job started: {proc.poll()=} {proc.communicate(timeout=60)[0][-3000:]}")


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    course = classroom.new_course(tmp_path_factory.mktemp("cohort-term") / "course")
    run(course, "generate_assignment", A, "--force")
    hand_in(course, "mona", A, book(A, course), "2026-11-29 10:00:00 UTC")
    hand_in(course, "nils", A, book(A, course, ("predictions",)), "2026-11-29 11:00:00 UTC")
    out = {}
    out["plain"], _ = run(course, "autograde", A)
    out["auto_plain"] = {s: {c: cell(course, c, s)[0] for c in (BEFORE, DURING)} for s in STUDENTS}
    out["records_plain"] = {s: records(course, s) for s in STUDENTS}
    formgrader(course, "grade", BEFORE, A, "mona", "0.5", "mona")

    # the guide's cohort command, one worker, so a job runs while the other student's waits
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               TC_SOURCE_DIR=(course / ".source").read_text())
    cmd = _guide_command(1)
    cmd[cmd.index(GUIDE_A)] = A
    proc = subprocess.Popen([*cmd, "--force"], cwd=course, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        first = job_in_flight(proc)
        waiting = next(s for s in STUDENTS if s != first)  # its job grades the snapshot taken before this grade
        formgrader(course, "grade", DURING, A, waiting, "0.25", waiting)
        out["plain_during"], _ = run(course, "autograde", A, "--student", waiting, check=False)  # a colleague's
        out["cohort"], _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, out["cohort"][-3000:]
    out["waiting"] = waiting
    out["after_cohort"] = {s: {c: cell(course, c, s) for c in (BEFORE, DURING)} for s in STUDENTS}
    out["records_cohort"] = {s: records(course, s) for s in STUDENTS}
    run(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv") as f:
        out["csv"] = {r["student_id"]: r for r in csv.DictReader(f)}

    out["plain_again"], _ = run(course, "autograde", A, "--force")  # and plain after the cohort
    out["after_plain"] = {s: {c: cell(course, c, s) for c in (BEFORE, DURING)} for s in STUDENTS}
    return out


def test_a_manual_grade_given_while_the_cohort_runs_is_kept(term):
    s = term["waiting"]
    auto, manual = term["after_cohort"][s][DURING]
    assert manual == 0.25, term["cohort"][-3000:]
    assert auto == term["auto_plain"][s][DURING]
    assert f"{s} {A} {DURING}: the manual score 0.25 given while this regrade ran stands" in term["cohort"]
    given = 0.25 + (0.5 if s == "mona" else 0.0)  # the export sums a hand-in's manual scores
    assert float(term["csv"][s]["manual_score"]) == pytest.approx(given)
    assert term["after_plain"][s][DURING][1] == 0.25  # and a plain regrade of the same hand-in keeps it


def test_a_manual_grade_from_before_the_run_is_judged_by_the_job(term):
    for run_ in ("after_cohort", "after_plain"):  # the same hand-in and result: it stands
        assert term[run_]["mona"][BEFORE] == (term["auto_plain"]["mona"][BEFORE], 0.5), term["cohort"][-3000:]
    other = next(s for s in STUDENTS if s != term["waiting"])
    assert term["after_cohort"][other][DURING][1] is None  # nobody graded it: nothing made up


def test_the_cohort_records_each_result_as_plain_autograde_does(term):
    """What a cell's result rests on is the same whichever command graded it, so a regrade by the
    other command judges a manual score by the result, not by where it was graded."""
    for s in STUDENTS:
        plain, cohort = term["records_plain"][s], term["records_cohort"][s]
        assert set(plain) == set(cohort) and plain, (plain, cohort)
        for c in plain:
            assert {k: v for k, v in cohort[c].items()} == plain[c], (s, c)


def test_a_plain_autograde_beside_the_cohort_stops_at_once(term):
    """The cohort is the course's only writer while it runs (grader.classroom.course_lock)."""
    assert "another autograde is running in this course (`cohort autograde 02-precision" in term["plain_during"], \
        term["plain_during"][-3000:]
    assert "Autograding" not in term["plain_during"]
