"""Red team for what a hand-in's folder carries beside its notebook (issue #32): a timestamp.txt
whose time is a real date but lies at the edge of what a date can hold, and files far larger than
any hand-in needs. Handed in to one small course and autograded there by real nbgrader with the
course's config, beside an honest student (alice) who must be graded right in the same run; then
exported, as an instructor does after every autograde.

- A time such as `0001-01-01 00:00 +01:00` is a year-first date the course's parser accepts,
  whose zone moves it out of what a date can hold: it must be read as any unreadable
  timestamp.txt is (graded at the file's time, flagged), never end the export of the whole class.
- Files of hundreds of MB (a sparse file costs the student nothing to make) were copied, whole,
  to autograded/ and into the sandbox's scratch copy: that hand-in alone is NOT GRADED, saying
  why, and nothing of it reaches autograded/ (nor, under the cohort command, any job).
- Output sent around the notebook's output budget (results of its own making in a loop, updates
  of a display shown earlier, widget messages) stays within it, in the autograded notebook and in
  nbgrader's own memory, and a widget message nbclient cannot read no longer stops the grading.
- Output that spends the notebook's whole budget before its graded cells does not cut the trusted
  grader's verdicts out of them (the feedback page would then never be made).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from redteam import add_code, answer_cell, require_sandbox, trim, trimmed_solution, write_submission

pytestmark = pytest.mark.slow

A = "01-memory-layout"  # Python answers and one kernel: quick to grade on the emulator

require_sandbox()

# timestamp.txt texts the parser takes for a date, which no date can hold once their zone applies
STAMPS = {"stamp-year-one": "0001-01-01 00:00 +01:00", "stamp-year-9999": "9999-12-31 23:59 -12:00",
          "stamp-zone-year-one": "0001-01-01 00:00 Asia/Tokyo"}
HANDIN_MB = 64  # the hand-in limit set for this course (TC_LIMIT_HANDIN_MB), so the test stays cheap
BIG_MB = 200  # the big-file hand-in's one extra file (sparse: no disk until something copies it)


def _released_with_alice(tmp_path_factory, name: str):
    """A new course with A released and alice's honest hand-in: (root, hand_in), hand_in(student, nb)
    handing in `nb` (by default the untouched release) and returning the student's folder."""
    root = classroom.new_course(tmp_path_factory.mktemp(name) / "course")
    classroom.release(root, A)
    release_nb = sorted((root / "release" / A).glob("*.ipynb"))[0]
    work = tmp_path_factory.mktemp(f"{name}-work")

    def hand_in(student, nb=None):
        nb = trim(nbformat.read(release_nb, as_version=4)) if nb is None else nb
        return classroom.submit(root, student, A, [write_submission(work, student, A, nb)])

    hand_in("alice", trimmed_solution(A))
    return root, hand_in


def _big_file(hand_in):
    """The big-file hand-in: the untouched release and one sparse file of BIG_MB."""
    with open(hand_in("big-file") / "data.bin", "wb") as f:
        f.truncate(BIG_MB << 20)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root, hand_in = _released_with_alice(tmp_path_factory, "extras")
    for student, text in STAMPS.items():
        (hand_in(student) / "timestamp.txt").write_text(text)
    _big_file(hand_in)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TC_LIMIT_HANDIN_MB", str(HANDIN_MB))
        graded = classroom.nbgrader(root, "autograde", A, "--create", check=False)
        exported = classroom.nbgrader(root, "export", "--to", "grades.csv", check=False)
        classroom.nbgrader(root, "generate_feedback", A, check=False)
    rows = {}
    if (root / "grades.csv").is_file():
        rows = {r["student_id"]: r for r in csv.DictReader(open(root / "grades.csv")) if r["assignment"] == A}
    return dict(root=root, log=graded.stdout + graded.stderr, export=exported, rows=rows)


def _alice_graded_right(course):
    expected = sum(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / A).glob("*.ipynb"))
    row = course["rows"].get("alice")
    assert row is not None and row["status"] == "graded", row
    assert float(row["raw_score"]) == pytest.approx(expected), row


def test_a_time_no_date_can_hold_is_flagged_and_the_export_goes_on(course):
    ex = course["export"]
    assert ex.returncode == 0, f"export failed for the whole class:\n{(ex.stdout + ex.stderr)[-3000:]}"
    _alice_graded_right(course)
    for student in STAMPS:
        row = course["rows"][student]
        # graded like any untouched release (0), at its file's time, and flagged for the instructor
        assert row["status"] == "graded" and float(row["raw_score"]) == 0, row
        assert "cannot read" in row["check"], row
        assert (course["root"] / "autograded" / student / A / f"{A}.ipynb").is_file(), student
        assert f"error processing assignment: {course['root']}/submitted/{student}" not in course["log"]


def test_a_hand_in_far_larger_than_needed_is_refused_alone(course):
    _alice_graded_right(course)
    row = course["rows"]["big-file"]
    assert row["status"].startswith("NOT GRADED") and f"{HANDIN_MB} MB" in row["status"], row
    assert row["raw_score"] == "" and row["score"] == ""
    assert "NOT GRADED: big-file's hand-in" in course["log"]
    page = (course["root"] / "feedback" / "big-file" / A / f"{A}.html").read_text()
    assert "NOT GRADED" in page and "TC_LIMIT_HANDIN_MB" in page
    graded = course["root"] / "autograded" / "big-file"
    size = sum(p.stat().st_size for p in graded.rglob("*") if p.is_file()) if graded.exists() else 0
    assert size < 1 << 20, f"autograded/big-file holds {size >> 20} MB"


@pytest.fixture(scope="module")
def cohort_course(tmp_path_factory):
    """alice and the big-file hand-in, graded by the cohort command (one worker, the emulator)."""
    root, hand_in = _released_with_alice(tmp_path_factory, "extras-cohort")
    _big_file(hand_in)
    # a notebook nothing can grade: refused by the job's nbgrader (grader/classroom/handin_check.py)
    folder = hand_in("nbformat-99")
    data = json.loads((folder / f"{A}.ipynb").read_text())
    (folder / f"{A}.ipynb").write_text(json.dumps(dict(data, nbformat=99)))
    # a hand-in that is a link to a classmate's (an unzipped archive keeps links): her work as its own
    (root / "submitted" / "copycat").mkdir()
    os.symlink(root / "submitted" / "alice" / A, root / "submitted" / "copycat" / A)
    os.symlink(root / "submitted" / "alice", root / "submitted" / "copycat-whole")
    env = dict(os.environ, TC_LIMIT_HANDIN_MB=str(HANDIN_MB),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    report = root / "report.json"
    run = subprocess.run([sys.executable, "-m", "grader.classroom.cohort", "autograde", A, "--workers", "1",
                          "--report", str(report)], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TC_LIMIT_HANDIN_MB", str(HANDIN_MB))
        exported = classroom.nbgrader(root, "export", "--to", "grades.csv", check=False)
        classroom.nbgrader(root, "generate_feedback", A, check=False)
    rows = {r["student_id"]: r for r in csv.DictReader(open(root / "grades.csv")) if r["assignment"] == A} \
        if exported.returncode == 0 else {}
    return dict(root=root, run=run, rows=rows, report=report.read_text() if report.exists() else "")


def test_the_cohort_keeps_why_its_job_refused_a_hand_in(cohort_course):
    """A hand-in the job's nbgrader refuses (nbformat 99) is NOT GRADED with its reason in grades.csv
    and on its feedback page, as under plain autograde (the reason stayed in the job's scratch
    course: 'no autograded notebook ... (autograde it again)', and no page)."""
    row = cohort_course["rows"]["nbformat-99"]
    assert row["status"].startswith("NOT GRADED") and "nbformat 99" in row["status"], row
    page = cohort_course["root"] / "feedback" / "nbformat-99" / A / f"{A}.html"
    assert page.is_file() and "nbformat 99" in page.read_text()


def test_the_cohort_refuses_it_before_packing_it_for_a_job(cohort_course):
    """The cohort packs each hand-in's folder in its one process and unpacks it on a worker: a
    folder past the limits is refused before that, with its reason, as plain autograde refuses it."""
    run = cohort_course["run"]
    out = run.stdout + run.stderr
    _alice_graded_right(cohort_course)
    row = cohort_course["rows"]["big-file"]
    assert row["status"].startswith("NOT GRADED") and "TC_LIMIT_HANDIN_MB" in row["status"], (row, out[-3000:])
    assert "NOT GRADED: big-file's hand-in" in out
    assert '"big-file"' not in cohort_course["report"], "a job was sent with the whole folder"


def test_the_cohort_never_grades_a_link_to_a_classmates_hand_in(cohort_course):
    """Plain autograde removes a link a hand-in left before it reads submitted/; the cohort packed
    whatever the link led to, so a link to alice's folder was graded as the copycat's own work."""
    _alice_graded_right(cohort_course)
    for student in ("copycat", "copycat-whole"):
        row = cohort_course["rows"].get(student)
        assert row is None or row["status"] != "graded", row
        assert f'"{student}"' not in cohort_course["report"], f"{student}: a job graded what its link led to"


# ----------------------------------------------------------- output the running notebook sends
# Each of these sends far more than the notebook's output budget (20 MB: SafeOutputs) through a
# path the budget did not watch: results and errors of its own making (kept whatever their
# number), updates of a display it showed earlier, and widget messages (kept by nbclient as
# widget state). What they send, nbgrader (the instructor's own process, no sandbox around it)
# holds in its memory; the autograded notebook keeps what the budget kept.
FLOOD_MB = 30 * 40  # what the updates and the widget messages each try to leave in nbgrader's memory
FLOODS = {
    "flood-results": "for _ in range(40000):\n    get_ipython().displayhook('y' * 1900)\n",
    "flood-updates": ("from IPython.display import display\nbig = 'x' * (40 << 20)\n"
                      "for i in range(30):\n    display('small', display_id=f'd{i}')\n"
                      "for i in range(30):\n    display({'text/plain': big + str(i)}, raw=True, display_id=f'd{i}', "
                      "update=True)\n"),
    "flood-widgets": ("from comm import create_comm\nbig = 'x' * (40 << 20)\nkeep = []\n"
                      "for i in range(30):\n    keep.append(create_comm(target_name='jupyter.widget', "
                      "data={'state': {'value': big + str(i)}, 'buffer_paths': []}))\n"),
    # a cell's 2 MB, in twelve cells of its own: the notebook's 20 MB spent before its graded cells
    "flood-cells": "\n# %% cell\n".join(["print('z' * 2_000_000)"] * 12),
}


def _peak_rss_mb(argv: list[str], cwd: Path, env: dict) -> tuple[subprocess.CompletedProcess, float]:
    """Run `argv`; its own peak resident memory (VmHWM, the process alone), read until it ends."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, out = 0, []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    while proc.poll() is None:
        try:
            line = next(ln for ln in open(f"/proc/{proc.pid}/status") if ln.startswith("VmHWM:"))
            peak = max(peak, int(line.split()[1]) // 1024)
        except (OSError, StopIteration, ValueError):
            pass
        time.sleep(0.1)
    reader.join(60)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(out), ""), peak


@pytest.fixture(scope="module")
def floods(tmp_path_factory):
    root, hand_in = _released_with_alice(tmp_path_factory, "extras-floods")
    release_nb = sorted((root / "release" / A).glob("*.ipynb"))[0]
    for student, code in FLOODS.items():
        nb = trim(nbformat.read(release_nb, as_version=4))
        first, *more = code.split("\n# %% cell\n")
        add_code(nb, first)
        at = answer_cell(nb) + 1
        nb.cells[at:at] = [nbformat.v4.new_code_cell(c) for c in more]
        hand_in(student, nb)
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               TC_SOURCE_DIR=(root / ".source").read_text())
    graded, peak = _peak_rss_mb([sys.executable, "-m", "nbgrader", "autograde", A, "--create"], root, env)
    fb = classroom.nbgrader(root, "generate_feedback", A, check=False)
    rows = {r["student_id"]: r for r in classroom.export(root) if r["assignment"] == A}
    return dict(root=root, log=graded.stdout, peak=peak, rows=rows, feedback=fb)


def test_output_sent_around_the_budget_stays_within_it(floods):
    _alice_graded_right(floods)
    over = []
    for student in FLOODS:
        row = floods["rows"][student]
        assert row["status"] == "graded" and float(row["raw_score"]) == 0, row
        page = floods["root"] / "feedback" / student / A / f"{A}.html"
        if not page.is_file():  # its graded cells' verdicts were cut: "not a finished grading"
            over.append(f"{student}: no feedback page")
            continue
        for d, name in (("autograded", f"{A}.ipynb"), ("feedback", f"{A}.html")):
            size = (floods["root"] / d / student / A / name).stat().st_size
            if size > 22 << 20:
                over.append(f"{student}: its {d} file holds {size / 2 ** 20:.0f} MB (a notebook keeps 20 MB)")
    # nbgrader holds a few hundred MB grading alice alone; the floods would leave FLOOD_MB (1200) more in
    # it. Messages queue while nbgrader reads them: on a busy 2-core machine (CI at 2bf8d90, helpers
    # beside it) the peak reached 762 MB with nothing kept, so the line is drawn at 1000
    if floods["peak"] > 1000:
        over.append(f"nbgrader's own memory peaked at {floods['peak']} MB")
    assert not over, over
