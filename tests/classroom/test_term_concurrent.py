"""Two autogrades at once in one course, with real nbgrader and the course's config, on 02-precision:
an instructor regrades ada's resubmission while a colleague (a TA) starts `nbgrader autograde` for
ben in the same course folder.

Every autograde begins by putting back the earlier results a regrade kept aside (a run killed
outright leaves them: grader.classroom.regrade). The TA's run must not take ada's regrade, still
running, for such a leftover: ada's new result must be what her autograded folder holds, and
grades.csv must say she is graded. The second autograde stops at once, naming the one that runs,
and grades nothing; run again once the first has ended, it grades. grades.csv exported meanwhile says
ada is being regraded and shows her scores, not NOT GRADED with none.
"""
import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from test_term import book, hand_in, run

pytestmark = pytest.mark.slow

A = "02-precision"


def autograde(course: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", TC_SOURCE_DIR=(course / ".source").read_text(),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", A, *args], cwd=course, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    course = classroom.new_course(tmp_path_factory.mktemp("concurrent") / "course")
    run(course, "generate_assignment", A, "--force")
    hand_in(course, "ada", A, book(A, course, ("predictions",)), "2026-11-29 10:00:00 UTC")
    hand_in(course, "ben", A, book(A, course), "2026-11-29 11:00:00 UTC")
    run(course, "autograde", A)
    out = {"ben_before": (course / "autograded" / "ben" / A / f"{A}.ipynb").read_bytes()}

    # ada hands in again: the whole solution, and a cell that takes a while (the window the TA hits)
    nb = book(A, course)
    nb.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(40)"))
    hand_in(course, "ada", A, nb, "2026-11-30 09:00:00 UTC")
    first = autograde(course, "--student", "ada")
    lines, deadline = [], time.monotonic() + 180
    for line in first.stdout:  # into ada's execution: her earlier result is kept aside now
        lines.append(line)
        if "Autograding" in line or time.monotonic() > deadline:
            break
    second = autograde(course, "--student", "ben", "--force")  # the colleague's command
    out["second"] = second.communicate(timeout=300)[0]
    out["second_rc"] = second.returncode
    run(course, "export", "--to", "grades-during.csv")  # while ada's regrade still runs
    with open(course / "grades-during.csv") as f:
        out["csv_during"] = {r["student_id"]: r for r in csv.DictReader(f)}
    out["first_running"] = first.poll() is None
    out["first"] = "".join(lines) + first.communicate(timeout=300)[0]
    out["first_rc"] = first.returncode
    out["ben_after"] = (course / "autograded" / "ben" / A / f"{A}.ipynb").read_bytes()
    run(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv") as f:
        out["csv"] = {r["student_id"]: r for r in csv.DictReader(f)}
    out["again"], _ = run(course, "autograde", A, "--student", "ben", "--force")  # once ada's has ended
    out["course"] = course
    return out


def test_a_regrade_in_flight_keeps_its_new_result(term):
    course = term["course"]
    assert term["first_rc"] == 0, term["first"][-3000:]
    graded = course / "autograded" / "ada" / A
    assert (graded / "timestamp.txt").read_text().strip() == "2026-11-30 09:00:00 UTC", term["second"][-3000:]
    assert "time.sleep(40)" in (graded / f"{A}.ipynb").read_text()
    assert not (course / "autograded" / ".regrade" / "ada" / A).exists()
    assert term["csv"]["ada"]["status"] == "graded", term["csv"]["ada"]
    assert float(term["csv"]["ada"]["score"]) == float(term["csv"]["ada"]["max_score"]) > 0


def test_the_second_autograde_stops_at_once_naming_the_first(term):
    assert term["second_rc"] != 0
    assert "another autograde is running in this course" in term["second"], term["second"][-3000:]
    assert "autograde 02-precision --student ada" in term["second"]  # who holds it, as its command line
    assert "kept the earlier result" not in term["second"]
    assert term["ben_after"] == term["ben_before"]  # nothing of ben's touched


def test_an_export_while_a_regrade_runs_says_so_and_keeps_the_scores(term):
    """Not NOT GRADED with empty scores (the autograded folder is being written): the gradebook's
    scores, and what to do."""
    assert term["first_running"]
    ada = term["csv_during"]["ada"]
    assert ada["status"].startswith("pending: being autograded again"), ada
    assert ada["score"] != "" and float(ada["raw_score"]) > 0, ada
    assert term["csv_during"]["ben"]["status"] == "graded"


def test_run_again_afterwards_it_grades(term):
    assert "another autograde" not in term["again"]
    assert "ben" in term["again"] and "Autograding" in term["again"], term["again"][-3000:]
