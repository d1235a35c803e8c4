"""Red team for what a hand-in carries besides its answers (issue #32): nbgrader metadata that
nbgrader itself would choke on, files it cannot read, more cells than any notebook has, and
constants a grader might fold. Handed in to the red team's shared course (tests/redteam.py) and
autograded there by real nbgrader with the course's config, in the same run as the other cheats
and as honest students who pasted a cell twice.

- REPAIRED: metadata the gradebook can put right (grader/classroom/handin_check.py): graded, 0
  points (each starts from the untouched release), the repair named in the log and feedback.
- REFUSED: a file nothing can grade: that student alone is NOT GRADED, with the reason in the
  log, grades.csv and the feedback page; everyone else in the run is graded.
- HONEST: a student who copied and pasted a cell: graded in full.
"""
from __future__ import annotations

import copy
import csv
import json
import os
import re

import nbformat
import pytest

from grader.classroom import workflow as classroom
from redteam import answer_cell, graded_cells, require_sandbox

pytestmark = pytest.mark.slow  # one xdist work unit with the other red-team files (tests/conftest.py)

A = "01-memory-layout"  # an answer cell of Python functions, a kernel, two test cells

require_sandbox()


# ------------------------------------------------------------------------ repaired metadata
def pasted_test_cell(nb, _):
    # a test cell pasted again, the copy claiming many more points
    i = graded_cells(nb)[0]
    twin = copy.deepcopy(nb.cells[i])
    twin.metadata["nbgrader"]["points"] = 100
    twin.source = "100.0"
    nb.cells.insert(i + 1, twin)


def schema_99(nb, _):
    for c in nb.cells:
        if "nbgrader" in c.metadata:
            c.metadata["nbgrader"]["schema_version"] = 99


def schema_0(nb, _):
    nb.cells[answer_cell(nb)].metadata["nbgrader"]["schema_version"] = 0


def id_pointed_elsewhere(nb, _):
    # the answer cell claims the first test's id, as a test worth 100 points, before the real one
    test = nb.cells[graded_cells(nb)[0]].metadata["nbgrader"]
    nb.cells[answer_cell(nb)].metadata["nbgrader"] = dict(test, points=100)


def odd_fields(nb, _):
    cells = [c for c in nb.cells if "nbgrader" in c.metadata]
    cells[0].metadata["nbgrader"] = "all of them"
    cells[1].metadata["nbgrader"].update(points="lots", grade="yes")
    cells[2].metadata["nbgrader"]["grade_id"] = 7
    cells[3].metadata["nbgrader"] = dict(grade=True, solution=False, locked=False, points=50, schema_version=3,
                                         grade_id="")


REPAIRED = {"pasted-test-cell": pasted_test_cell, "schema-99": schema_99, "schema-0": schema_0,
            "id-pointed-elsewhere": id_pointed_elsewhere, "odd-fields": odd_fields}


# ------------------------------------------------- student text the grader reads but never runs
def constant_tower(nb, _):
    # constants after a raise: the notebook never computes them; the trusted pass reads every
    # top-level assignment as text, and must refuse these by their size, not fold them
    nb.cells[answer_cell(nb)].source += ("\nraise SystemExit\nX = ((9 ** 4096) ** 4096) ** 4096\n"
                                         "Y = 1 << (1 << 33)\nZ = 10 ** 4000 * 10 ** 4000 * 10 ** 4000\n")


def deep_expression(nb, _):
    nb.cells[answer_cell(nb)].source += "\nraise SystemExit\nX = " + "[" * 5000 + "]" * 5000 + "\n"


def deep_answer(nb, _):
    # an answer that sends the grader JSON nested 100,000 deep on its answer pipe
    nb.cells[answer_cell(nb)].source = (
        "import os, stat\ndef row_major_offset(i, j, ld):\n"
        "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
        "        try:\n"
        "            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
        "                os.write(fd, b'{\"ok\": ' + b'[' * 100000 + b']' * 100000 + b'}\\n')\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 0\n"
        "col_major_offset = row_major_offset\n")


READ_AS_TEXT = {"constant-tower": constant_tower, "deep-expression": deep_expression, "deep-answer": deep_answer}


# ------------------------------------------------------------------------------ refused files
def _raw(nb) -> dict:
    return json.loads(nbformat.writes(nb))


def nbformat_99(nb, _):
    data = _raw(nb)
    data["nbformat"] = 99
    return json.dumps(data)


def nested_deep(nb, _):
    # a valid notebook whose one output nests 100,000 lists deep
    text = nbformat.writes(nb)
    data = json.loads(text)
    data["cells"][0]["outputs"] = [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                    "data": {"application/json": "NEST"}}]
    return json.dumps(data).replace('"NEST"', "[" * 100_000 + "]" * 100_000)


def not_json(nb, _):
    return nbformat.writes(nb)[: 2000]


def many_cells(nb, _):
    data = _raw(nb)
    data["cells"] += [{"cell_type": "code", "execution_count": None, "id": f"x{i}", "metadata": {}, "outputs": [],
                       "source": "1"} for i in range(2500)]
    return json.dumps(data)


REFUSED = {"nbformat-99": (nbformat_99, "nbformat 99"), "nested-deep": (nested_deep, "nested deeper"),
           "not-json": (not_json, "not valid JSON"), "many-cells": (many_cells, "cells; the limit is 2,000")}


# ------------------------------------------------------------------------------- honest ones
def pasted_by_accident(_, solution):
    # the solutions, with the answer cell and a test cell each pasted a second time (as a
    # student's copy of the release has it: no hidden tests in the copy)
    j = answer_cell(solution)
    solution.cells.insert(j + 1, copy.deepcopy(solution.cells[j]))
    i = graded_cells(solution)[0]
    twin = copy.deepcopy(solution.cells[i])
    twin.source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", "", twin.source, flags=re.S)
    solution.cells.insert(i + 1, twin)


HONEST = {"pasted-by-accident": pasted_by_accident}


# files beside the notebook: past the limit (1,000) NOT GRADED, under it graded in full; the walk
# over them is linear (nbgrader's own took 98 s for 8,000 and grew with the square)
FILES_BESIDE = {"guard-many-files": 8000, "honest-with-data-files": 900}


def handins() -> dict:
    """student -> (assignment, make(release, solution) -> None (edits the release or, for
    HONEST, the solution) or the file's text)."""
    out = {f"guard-{n}": (A, f) for n, f in {**REPAIRED, **READ_AS_TEXT}.items()}
    out.update({f"guard-{n}": (A, f) for n, (f, _) in REFUSED.items()})
    out.update({f"honest-{n}": (A, f) for n, f in HONEST.items()})
    out.update({"guard-many-files": (A, lambda nb, _: None),
                "honest-with-data-files": (A, lambda _, solution: None)})
    return out


# ------------------------------------------------------------------------------------ tests
@pytest.fixture(scope="module")
def course(redteam):
    root = redteam["root"]
    fb = classroom.nbgrader(root, "generate_feedback", A, check=False)
    classroom.nbgrader(root, "export", "--to", "grades.csv")
    rows = {r["student_id"]: r for r in csv.DictReader(open(root / "grades.csv")) if r["assignment"] == A}
    return dict(redteam, rows=rows, feedback_log=fb.stdout + fb.stderr)


def _page(course, student) -> str:
    return (course["root"] / "feedback" / student / A / f"{A}.html").read_text()


@pytest.mark.parametrize("name", list(REPAIRED))
def test_repaired_metadata_is_graded_and_scores_zero(course, name):
    student = f"guard-{name}"
    row = course["rows"][student]
    assert row["status"] == "graded" and float(row["raw_score"]) == 0, row
    assert (course["root"] / "autograded" / student / A / f"{A}.ipynb").is_file()
    assert f"{student} ({A}), {A}.ipynb repaired" in course["log"]
    assert "repaired before grading" in _page(course, student)
    kept = course["root"] / "submitted" / student / A / f"{A}.ipynb.handed-in"
    assert kept.is_file(), "the student's own file is kept"


@pytest.mark.parametrize("name", list(REFUSED))
def test_unreadable_handin_is_not_graded_with_its_reason(course, name):
    student, why = f"guard-{name}", REFUSED[name][1]
    row = course["rows"][student]
    assert row["status"].startswith("NOT GRADED") and why in row["status"], row
    assert row["raw_score"] == "" and row["score"] == ""
    page = _page(course, student)
    assert "NOT GRADED" in page and why in page
    said = [line for line in course["log"].splitlines() if f"NOT GRADED: {student}'s hand-in" in line]
    assert said and why in said[0] and f"--student {student}" in said[0], said
    assert "nbgrader update" not in course["log"]


def _student_log(log: str, student: str) -> str:
    """nbgrader's lines about one student's grading (from its 'Creating/updating student' line)."""
    part = log.split(f"Creating/updating student with ID '{student}'", 1)[1]
    return part.split("Creating/updating student with ID", 1)[0]


@pytest.mark.parametrize("name", list(READ_AS_TEXT))
def test_student_text_is_read_within_bounds(course, name):
    """Graded 0 like any untouched release, and the trusted pass took seconds on it (folding the
    tower took it to its 3600 s limit before)."""
    student = f"guard-{name}"
    row = course["rows"][student]
    assert row["status"] == "graded" and float(row["raw_score"]) == 0, row
    said = re.findall(r"trusted grading of \S+: ([\d.]+) s", _student_log(course["log"], student))
    assert said and max(map(float, said)) < 120, said
    if name == "deep-answer":
        assert "not an answer" in _page(course, student)


def test_files_past_the_limit_refuse_that_hand_in_alone(course):
    row = course["rows"]["guard-many-files"]
    assert row["status"].startswith("NOT GRADED") and "more than 1,000 files" in row["status"], row
    # refused before nbgrader copies anything of it, so before nbgrader's own lines about the student
    said = [line for line in course["log"].splitlines() if "NOT GRADED: guard-many-files's hand-in" in line]
    assert said and "--student guard-many-files" in said[0], said
    honest = course["rows"]["honest-with-data-files"]
    expected = sum(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / A).glob("*.ipynb"))
    assert float(honest["raw_score"]) == pytest.approx(expected), honest


def test_the_walk_over_a_hand_ins_files_is_linear(tmp_path):
    """nbgrader's find_all_files globbed the folder once per file; the course's walk gives the
    same files (hidden names and ignored folders as nbgrader judges them) in linear time."""
    import time

    from nbgrader import utils

    from grader.classroom import hardening

    ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.ipynb"]
    for top in ("", "sub/", "feedback/", "__pycache__/"):
        (tmp_path / "small" / top).mkdir(parents=True, exist_ok=True)
        for name in ("a.txt", ".h.pyc", "x.pyc", "n.ipynb", "b[1].txt", ".dot"):
            (tmp_path / "small" / top / name).write_text("x")
    nbgraders = hardening.NBGRADER.get("find_all_files", utils.find_all_files)  # its own, unpatched
    assert nbgraders is not hardening.find_all_files
    want = nbgraders(str(tmp_path / "small"), ignore)
    assert len(want) == 8 and hardening.find_all_files(str(tmp_path / "small"), ignore) == want
    big = tmp_path / "big"
    big.mkdir()
    for i in range(8000):
        (big / f"f{i}.txt").write_text("x")
    t0 = time.perf_counter()
    assert len(hardening.find_all_files(str(big), ignore)) == 8000
    assert time.perf_counter() - t0 < 2.0


def test_everyone_else_in_the_run_is_graded(course):
    refused = {f"guard-{n}" for n in REFUSED} | {"guard-many-files"}
    handed_in = {p.parent.name for p in (course["root"] / "submitted").glob(f"*/{A}")}
    assert refused < handed_in
    for student, row in course["rows"].items():
        if student in handed_in and student not in refused:
            assert row["status"] == "graded", row
            assert (course["root"] / "autograded" / student / A).is_dir(), student


def test_honest_student_who_pasted_a_cell_keeps_full_marks(course):
    expected = sum(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / A).glob("*.ipynb"))
    for n in HONEST:
        row = course["rows"][f"honest-{n}"]
        assert float(row["raw_score"]) == pytest.approx(expected), row
        assert "a second copy of cell" in _page(course, f"honest-{n}")


def test_a_repair_keeps_the_hand_ins_times(tmp_path):
    """The course's repair rewrites the notebook, yet the files keep the times they were handed in
    with: those are the collection's record of when the hand-in was written (a back-dated check
    reads them), and a repair must not make an honest hand-in look back-dated."""
    import nbformat

    from grader.classroom import handin_check

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1")
    cell.metadata["nbgrader"] = {"grade_id": "nowhere", "grade": False, "solution": True, "locked": False,
                                 "schema_version": 3}
    nb.cells.append(cell)
    path = tmp_path / "A.ipynb"
    nbformat.write(nb, path)
    when = 1_700_000_000
    os.utime(path, (when, when))
    fixes = handin_check.check_notebook(path, {})
    assert fixes and "nbgrader" not in json.loads(path.read_text())["cells"][0]["metadata"]
    for p in (path, tmp_path / "A.ipynb.handed-in"):
        assert int(os.stat(p).st_mtime) == when, p
