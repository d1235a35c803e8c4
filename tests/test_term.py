"""An instructor's whole term with real nbgrader (issue 27), as course/README.md tells it:
a roster imported, two assignments released and scheduled with due dates in one command,
hand-ins with timestamps, autograde, a manual grade then a resubmission, feedback, export,
and a regrade on a machine that lost its sandbox.

The students: ada hands in the solutions (on time); ben a partial notebook (02 57 h late); cy
the untouched releases; dee a 01 with a Python cell that never ends (and no 02); eve an
untouched 01, gets 0.5 by hand in the formgrader, then hands in the solution 30 h late, and 02
on time; frank a 02 notebook that is not a notebook (nothing can grade it).

Without a GPU the course is switched to CPU-only grading (CPU_ONLY in the course config), so
the transpose speed point counts for nothing; on a GPU the same term runs with speed points.
"""
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from grader.runtime.device import has_gpu

pytestmark = pytest.mark.slow

A1, A2 = "01-memory-layout", "02-precision"
GPU = has_gpu()
DUE = {A1: "2026-11-23 12:00:00 UTC", A2: "2026-11-30 12:00:00 UTC"}
ROSTER = [("ada", "Ada", "Lovelace"), ("ben", "Ben", "Bitdiddle"), ("cy", "Cy", "Young"), ("dee", "Dee", "Dee"),
          ("eve", "Eve", "Evans"), ("frank", "Frank", "Fleet")]


def book(assignment: str, course: Path, replace_with_release: tuple[str, ...] = ()):
    """The solution notebook, with the cells of the given grade ids as the release has them."""
    nb = nbformat.read(classroom.SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    rel = nbformat.read(course / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    released = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in rel.cells}
    for i, c in enumerate(nb.cells):
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in replace_with_release:
            nb.cells[i] = released[gid]
    return nb


def hand_in(course: Path, student: str, assignment: str, nb, when: str) -> None:
    d = course / "submitted" / student / assignment
    if d.exists():
        import shutil

        shutil.rmtree(d)
    d.mkdir(parents=True)
    if isinstance(nb, str):
        (d / f"{assignment}.ipynb").write_text(nb)
    else:
        nbformat.write(nb, d / f"{assignment}.ipynb")
    (d / "timestamp.txt").write_text(when)


def run(course: Path, *args, check=True, env=None):
    """An nbgrader command, its output, and its wall time."""
    t0 = time.monotonic()
    if env is None:
        proc = classroom.nbgrader(course, *args, check=check)
    else:
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            proc = classroom.nbgrader(course, *args, check=check)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return proc.stdout + proc.stderr, time.monotonic() - t0


def hidden_lines(assignment: str) -> list[str]:
    """Distinctive lines of the solution's hidden tests (none may reach a feedback page)."""
    nb = nbformat.read(classroom.SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    out = []
    for c in nb.cells:
        for block in re.findall(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", c.source, re.S):
            out += [ln.strip() for ln in block.splitlines() if len(ln.strip()) > 25]
    return out


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    home = tmp_path_factory.mktemp("term")
    course = classroom.new_course(home / "course")
    if not GPU:  # the guide's one switch for a class graded without a GPU
        cfg = course / "nbgrader_config.py"
        text = cfg.read_text()
        assert "\nCPU_ONLY = False\n" in text
        cfg.write_text(text.replace("\nCPU_ONLY = False\n", "\nCPU_ONLY = True\n"))
    logs = {}
    with open(home / "students.csv", "w") as f:
        f.write("id,first_name,last_name,email\n")
        f.writelines(f"{i},{fn},{ln},{i}@example.org\n" for i, fn, ln in ROSTER)
    run(course, "db", "student", "import", str(home / "students.csv"))
    logs["release"], _ = run(course, "generate_assignment", "0[12]-*", "--force")
    with open(home / "schedule.csv", "w") as f:  # the term's schedule, one command
        f.write("assignment,due\n" + "".join(f"{a},{d}\n" for a, d in DUE.items()))
    sched = subprocess.run([sys.executable, "-m", "grader.classroom.term", "schedule", str(home / "schedule.csv"),
                            "--course", str(course)], capture_output=True, text=True)
    assert sched.returncode == 0, sched.stderr
    logs["schedule"] = sched.stdout

    # 01: everyone but frank; dee's notebook loops in a cell of its own
    hand_in(course, "ada", A1, book(A1, course), "2026-11-22 10:00:00 UTC")
    hand_in(course, "ben", A1, book(A1, course, ("transpose-kernel",)), "2026-11-23 11:00:00 UTC")
    hand_in(course, "cy", A1, nbformat.read(course / "release" / A1 / f"{A1}.ipynb", as_version=4),
            "2026-11-22 09:00:00 UTC")
    hand_in(course, "eve", A1, nbformat.read(course / "release" / A1 / f"{A1}.ipynb", as_version=4),
            "2026-11-21 12:00:00 UTC")
    loop = book(A1, course)
    at = next(i for i, c in enumerate(loop.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "index-functions")
    loop.cells.insert(at + 1, nbformat.v4.new_code_cell("import time\nwhile True:  # never ends\n    time.sleep(0.2)"))
    hand_in(course, "dee", A1, loop, "2026-11-23 08:00:00 UTC")
    (course / "submitted" / "ada" / A1 / "notes.txt").write_text("stray")  # stray files cost nothing
    nbformat.write(book(A1, course), course / "submitted" / "ada" / A1 / "old-copy.ipynb")
    logs["autograde1"], _ = run(course, "autograde", A1, "--student", "[abce]*", "--create")
    logs["dee"], logs["dee_seconds"] = run(course, "autograde", A1, "--student", "dee", "--create")

    # eve: 0.5 by hand in the formgrader (the same gradebook call), then the solution, late
    from nbgrader.api import Gradebook

    db = f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(db) as gb:
        g = gb.find_grade("index-functions-test", A1, A1, "eve")
        g.manual_score = 0.5
        gb.db.commit()
    logs["eve_before"] = classroom.scores(course, A1)["eve"]
    hand_in(course, "eve", A1, book(A1, course), "2026-11-24 18:00:00 UTC")

    # 02: ben partial and 57 h late, frank's file is not a notebook
    hand_in(course, "ada", A2, book(A2, course), "2026-11-29 10:00:00 UTC")
    hand_in(course, "ben", A2, book(A2, course, ("predictions",)), "2026-12-02 21:00:00 UTC")
    hand_in(course, "cy", A2, nbformat.read(course / "release" / A2 / f"{A2}.ipynb", as_version=4),
            "2026-11-29 12:00:00 UTC")
    hand_in(course, "eve", A2, book(A2, course), "2026-11-30 11:59:00 UTC")
    hand_in(course, "frank", A2, '{"cells": [', "2026-11-30 10:00:00 UTC")
    # one nbgrader run: eve's newer 01 hand-in is graded again (the rest of 01 is skipped), and 02
    logs["autograde2"], _ = run(course, "autograde", "*", "--create", check=False)
    logs["eve"] = logs["autograde2"]

    stray = course / "autograded" / "cy" / A1 / "scratch.ipynb"  # a stray notebook beside an autograded one
    nbformat.write(nbformat.v4.new_notebook(), stray)
    logs["feedback"], _ = run(course, "generate_feedback", "*")
    logs["export"], _ = run(course, "export", "--to", "grades.csv")
    exported = (course / "grades.csv").read_text()

    # A regrade on a machine without bubblewrap: nothing graded, nothing lost
    before = {s: classroom.scores(course, A1)[s] for s in ("ada", "dee")}
    logs["nosandbox"], _ = run(course, "autograde", A1, "--force", check=False,
                               env={"PATH": str(home / "no-tools-here"), "TC_BWRAP": ""})
    after = {s: classroom.scores(course, A1)[s] for s in ("ada", "dee")}
    run(course, "export", "--to", "grades-after.csv")
    return dict(home=home, course=course, logs=logs, exported=exported, before=before, after=after)


def _rows(term, name="grades.csv"):
    with open(term["course"] / name) as f:
        return list(csv.DictReader(f))


# What each hand-in is exported as on the CPU, where speed earns nothing: (raw_score, days late,
# status, whether its kernels are the solution's, which earn every speed point on a GPU). On a GPU
# the same term must export the same scores plus the speed points (SPEED), and nothing else.
CPU_TERM = {
    (A1, "ada"): (3.0, 0, "graded", True),
    (A1, "ben"): (2.0, 0, "graded", False),  # index functions right, transpose still empty
    (A1, "cy"): (0.0, 0, "graded", False),
    (A1, "dee"): (3.0, 0, "graded", True),  # the looping cell stopped; the answers were right
    (A1, "eve"): (3.0, 2, "late", True),  # 30 h late: 2 days, 10% each
    (A1, "frank"): (0.0, 0, "not submitted", False),
    (A2, "ada"): (4.0, 0, "graded", True),
    (A2, "ben"): (2.0, 3, "late", False),  # 57 h late: 3 days
    (A2, "cy"): (0.0, 0, "graded", False),
    (A2, "dee"): (0.0, 0, "not submitted", False),
    (A2, "eve"): (4.0, 0, "graded", True),
}


def speed_points(assignment: str) -> float:
    """The points only a GPU can award in `assignment`: its exercises' speed points (0 on the CPU)."""
    if not GPU:
        return 0.0
    gpu_max = sum(float(c.metadata["nbgrader"]["points"]) for c in nbformat.read(
        classroom.SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade"))
    return gpu_max - classroom.cpu_max_score(classroom.SOLUTIONS / assignment / f"{assignment}.ipynb")


def expected(key) -> tuple:
    """(raw_score, penalty, score, max_score, status): the CPU term's, plus the speed points on a GPU."""
    raw, days, status, fast = CPU_TERM[key]
    speed = speed_points(key[0])
    raw += speed if fast else 0.0
    pen = round(0.1 * days * raw, 4)
    return raw, pen, round(raw - pen, 4), classroom.cpu_max_score(
        classroom.SOLUTIONS / key[0] / f"{key[0]}.ipynb") + speed, status


def test_speed_points_are_the_only_difference_on_a_gpu():
    """01's transpose earns a speed point on a GPU, 02 (no kernel) none; on the CPU neither."""
    assert (speed_points(A1), speed_points(A2)) == ((1.0, 0.0) if GPU else (0.0, 0.0))


def test_every_exported_score_and_penalty(term):
    rows = _rows(term)
    got = {(r["assignment"], r["student_id"]): r for r in rows}
    for key in CPU_TERM:
        raw, pen, score, mx, status = expected(key)
        r = got[key]
        assert (float(r["raw_score"]), float(r["late_submission_penalty"]), float(r["score"]),
                float(r["max_score"]), r["status"]) == pytest.approx((raw, pen, score, mx, status)), (key, r)
    assert got[(A1, "eve")]["first_name"] == "Eve" and got[(A1, "eve")]["email"] == "eve@example.org"
    assert got[(A1, "ada")]["duedate"].startswith("2026-11-23 12:00:00")


def test_a_submission_nothing_could_grade_is_flagged_never_zero(term):
    frank = next(r for r in _rows(term) if (r["assignment"], r["student_id"]) == (A2, "frank"))
    assert frank["status"].startswith("NOT GRADED"), frank
    assert frank["raw_score"] == "" and frank["score"] == "", frank


def test_export_is_sorted_by_assignment_and_student(term):
    keys = [(r["assignment"], r["student_id"]) for r in _rows(term)]
    assert keys == sorted(keys) and len(keys) == 2 * len(ROSTER)


def test_looping_notebook_graded_in_under_two_minutes(term):
    print(f"\nthe looping notebook's autograde took {term['logs']['dee_seconds']:.0f} s")
    assert term["logs"]["dee_seconds"] < 120, term["logs"]["dee"][-3000:]
    page = (term["course"] / "feedback" / "dee" / A1 / f"{A1}.html").read_text()
    assert "the autograder stopped this cell" in page and "a cell that awards no points" in page


def test_manual_score_cleared_by_the_resubmission(term):
    assert term["logs"]["eve_before"][0] == pytest.approx(0.5)
    assert "the manual score 0.5 is cleared" in term["logs"]["eve"]
    page = re.sub(r"<[^>]+>", " ", (term["course"] / "feedback" / "eve" / A1 / f"{A1}.html").read_text())
    assert not re.search(r"Score: 0\.5\b", page) and re.search(r"Score: 2(\.0)? / 2(\.0)?\b", page), \
        "the feedback still shows the manual 0.5"


def test_feedback_pages_show_one_score_per_cell(term):
    """The trusted grader's "N of M points" of each graded cell is nbgrader's "Score: N / M"."""
    for page in sorted((term["course"] / "feedback").glob("*/*/*.html")):
        text = re.sub(r"<[^>]+>", " ", page.read_text())
        said = {(float(a), float(b)) for a, b in re.findall(r"trusted grader: ([\d.]+) of ([\d.]+) points", text)}
        shown = {(float(a), float(b)) for a, b in re.findall(r"Score: ([\d.]+) / ([\d.]+)", text)}
        assert said and said <= shown, (page, said, shown)


def test_feedback_pages_hold_no_hidden_test_and_no_passed_with_zero(term):
    hidden = hidden_lines(A1) + hidden_lines(A2)
    assert hidden, "the solutions have hidden tests to look for"
    pages = sorted((term["course"] / "feedback").glob("*/*/*.html"))
    assert len(pages) == 9, pages  # every hand-in but frank's
    for page in pages:
        text = page.read_text()
        assert "BEGIN HIDDEN TESTS" not in text, page
        for line in hidden:
            assert line not in text, (page, line)
        assert not re.search(r"PASSED \(0(\.0)?/", text), page


def test_hints_fit_a_hand_in(term):
    page = (term["course"] / "feedback" / "ben" / A1 / f"{A1}.html").read_text()
    assert "hand the notebook in again" in page and "run that cell again" not in page


def test_honest_students_see_no_tampering_warning(term):
    assert "Attribute &#39;checksum&#39;" not in term["logs"]["autograde1"]
    assert "Attribute 'checksum'" not in term["logs"]["autograde1"] + term["logs"]["autograde2"]


def test_stray_files_cost_nothing(term):
    assert (term["course"] / "feedback" / "cy" / A1 / f"{A1}.html").exists()
    assert "Skipping" in term["logs"]["feedback"] and "scratch.ipynb" in term["logs"]["feedback"]
    assert "Traceback" not in term["logs"]["feedback"]
    assert "not recognized" not in term["logs"]["feedback"]  # no config noise from the course's preprocessors


def test_regrade_without_sandbox_loses_nothing(term):
    assert "bubblewrap" in term["logs"]["nosandbox"]
    assert term["after"] == term["before"]
    for s in ("ada", "dee"):
        assert (term["course"] / "autograded" / s / A1 / f"{A1}.ipynb").exists(), s
        assert (term["course"] / "feedback" / s / A1 / f"{A1}.html").exists(), s
    assert (term["course"] / "grades-after.csv").read_text() == term["exported"]


def test_release_carries_the_colab_cell(term):
    for a in (A1, A2):
        rel = nbformat.read(term["course"] / "release" / a / f"{a}.ipynb", as_version=4)
        student = nbformat.read(classroom.ROOT / "notebooks" / a / f"{a}.ipynb", as_version=4)
        assert rel.cells[0].get("id") == "colab-setup" and rel.cells[0].source == student.cells[0].source
        assert len(rel.cells) == len(student.cells)


def test_schedule_and_gradebook_stay_in_the_course(term):
    assert "01-memory-layout: due 2026-11-23 12:00:00 UTC" in term["logs"]["schedule"]
    assert sorted(p.name for p in term["home"].iterdir()) == ["course", "schedule.csv", "students.csv"]
    assert not list(term["course"].glob("*/gradebook.db"))
