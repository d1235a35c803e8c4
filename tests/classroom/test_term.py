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
OPENS = {A1: "2026-11-16 09:00 UTC", A2: "2026-11-23 09:00 UTC"}  # when each was handed out
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
    files_at(d, when)  # as the exchange's collect leaves them: the files' times are the hand-in's


def files_at(folder: Path, when: str) -> None:
    """Give every file of a hand-in the time `when` (what `collect` and `cp -p` keep)."""
    from grader.classroom.handin_time import parse_time

    t = (parse_time(when) - parse_time("1970-01-01")).total_seconds()
    for p in folder.iterdir():
        os.utime(p, (t, t))


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
        f.write("assignment,due,opens\n" + "".join(f"{a},{d},{OPENS[a]}\n" for a, d in DUE.items()))
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
    files_at(course / "submitted" / "ada" / A1, "2026-11-22 10:00:00 UTC")
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


# 01's maximum where this runs: its CPU points, plus the transpose's speed point on a GPU (the
# later term's table is written in it)
M1 = classroom.cpu_max_score(classroom.SOLUTIONS / A1 / f"{A1}.ipynb") + speed_points(A1)


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
    assert "not valid JSON" in frank["status"], frank  # the reason, not "autograde it again"
    page = (term["course"] / "feedback" / "frank" / A2 / f"{A2}.html").read_text()
    assert "NOT GRADED" in page and "not valid JSON" in page, page


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
        if page.parent.parent.name == "frank":
            continue  # not graded (test_a_submission_nothing_could_grade_is_flagged_never_zero)
        text = re.sub(r"<[^>]+>", " ", page.read_text())
        said = {(float(a), float(b)) for a, b in re.findall(r"trusted grader: ([\d.]+) of ([\d.]+) points", text)}
        shown = {(float(a), float(b)) for a, b in re.findall(r"Score: ([\d.]+) / ([\d.]+)", text)}
        assert said and said <= shown, (page, said, shown)


def test_feedback_pages_hold_no_hidden_test_and_no_passed_with_zero(term):
    hidden = hidden_lines(A1) + hidden_lines(A2)
    assert hidden, "the solutions have hidden tests to look for"
    pages = sorted((term["course"] / "feedback").glob("*/*/*.html"))
    assert len(pages) == 10, pages  # every hand-in; frank's says why it was not graded
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


# ---------------------------------------------------------------- the rest of the term (issue 33)
# After the export above, what an instructor does next: a manual grade on a late hand-in (in the
# formgrader), a due date moved, hand-ins collected and not yet graded, hand-made and back-dated
# timestamps, a record of hand-in times from the LMS, regrades stopped by SIGTERM and SIGHUP, a
# half-written autograded notebook, commands from the wrong folder, CPU-only grading switched.
PCT = 10.0  # the course config's LATE_PERCENT_PER_DAY
A1_DUE_MOVED = "2026-11-24 00:00:00 UTC"  # eve's 01 (handed in 11-24 18:00) becomes 1 day late, not 2
# Every hand-in after all that: (raw score, manual points, started days late, maximum, status).
# The penalty, the score and the feedback page's numbers are computed from it (expected_row).
LATER = {
    (A1, "ada"): (M1, None, 0, M1, "graded"),
    (A1, "ben"): (2.0, None, 0, M1, "graded"),
    (A1, "cy"): (0.0, None, 0, M1, "graded"),
    (A1, "dee"): (M1, None, 0, M1, "graded"),
    (A1, "eve"): (M1, None, 1, M1, "late"),  # the due date moved: 1 day late
    (A1, "frank"): (None, None, 0, M1, "pending: collected"),  # handed in, not autograded yet: never 0
    (A1, "gus"): (None, None, 0, M1, "pending: collected"),  # not on the roster, handed in all the same
    (A1, "hal"): (0.0, None, 0, M1, "not submitted"),
    (A1, "ivy"): (0.0, None, 0, M1, "not submitted"),
    (A2, "ada"): (4.0, None, 0, 4.0, "graded"),
    (A2, "ben"): (1.0, 1.0, 3, 4.0, "late"),  # a manual 1 of 2 on decode-fp16: raw 2 -> 1, penalty recomputed
    (A2, "cy"): (0.0, None, 0, 4.0, "graded"),
    (A2, "dee"): (0.0, None, 0, 4.0, "not submitted"),
    (A2, "eve"): (4.0, None, 0, 4.0, "graded"),
    (A2, "frank"): (None, None, 0, 4.0, "NOT GRADED"),
    (A2, "gus"): (0.0, None, 0, 4.0, "not submitted"),
    (A2, "hal"): (4.0, None, 0, 4.0, "graded"),  # timestamp.txt "03/12/2026 14:00": graded at the file's time
    (A2, "ivy"): (4.0, None, 3, 4.0, "late"),  # timestamp.txt back-dated; the LMS record says 3 days late
}
CHECKED = {(A2, "hal"): "either way round", (A2, "ivy"): "the record counts"}  # every other check is empty


def expected_row(key):
    raw, manual, days, mx, status = LATER[key]
    if raw is None:
        return dict(raw=None, manual=None, penalty=None, score=None, max=mx, status=status)
    penalty = round(raw * min(1.0, days * PCT / 100), 4) if days else 0.0
    return dict(raw=raw, manual=manual, penalty=penalty, score=raw - penalty, max=mx, status=status)


FORMGRADER = r"""
import json, sys
from nbgrader.apps.api import NbGraderAPI
from nbgrader.apps.baseapp import NbGrader
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory

app = NbGrader()  # the config as the formgrader loads it (formgrader.py: load_config)
app.load_config_file()
api = NbGraderAPI(CourseDirectory(config=app.config), Authenticator(config=app.config), config=app.config)
gb = api.gradebook
if sys.argv[1] == "grade":  # the formgrader's GradeHandler.put, to the letter
    grade = gb.find_grade(sys.argv[2], sys.argv[3], sys.argv[3], sys.argv[4])
    grade.manual_score, grade.extra_credit = float(sys.argv[5]), None
    grade.needs_manual_grade = False
    gb.db.commit()
students = sys.argv[2:] if sys.argv[1] == "list" else sys.argv[-1:]
views = {st: {s["name"]: s for s in api.get_student_submissions(st)} for st in students}
print(json.dumps(views if sys.argv[1] == "list" else views[students[0]], default=str))
"""


def formgrader(course: Path, *args: str) -> dict:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env["TC_SOURCE_DIR"] = (course / ".source").read_text()
    p = subprocess.run([sys.executable, "-c", FORMGRADER, *args], cwd=course, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def stopped_regrade(course: Path, assignment: str, student: str, sig) -> str:
    """`nbgrader autograde --force` of one student, sent `sig` (to its process group, as a closing
    terminal does) while it executes the notebook; its output."""
    import signal as _signal

    env = dict(os.environ, PYTHONUNBUFFERED="1", TC_SOURCE_DIR=(course / ".source").read_text(),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", assignment, "--student", student, "--force"],
                         cwd=course, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    out, deadline = [], time.monotonic() + 120
    for line in p.stdout:
        out.append(line)
        if "Autograding" in line or time.monotonic() > deadline:
            break
    time.sleep(2)  # into the execution
    os.killpg(p.pid, sig)
    rest, _ = p.communicate(timeout=120)
    assert p.returncode != 0
    return "".join(out) + rest + f"\n[exit {p.returncode}, {_signal.Signals(sig).name}]"


def page_numbers(page: Path):
    """(score, maximum, late penalty) as a feedback page shows them."""
    text = page.read_text()
    total = re.search(r"\(Score: (-?[\d.]+) / ([\d.]+)\)</h4>", text)
    late = re.search(r"Late submission penalty \(Score: -([\d.]+)\)", text)
    return float(total.group(1)), float(total.group(2)), float(late.group(1)) if late else 0.0


@pytest.fixture(scope="module")
def later(term):
    import signal

    home, course, logs = term["home"], term["course"], {}
    release1 = nbformat.read(course / "release" / A1 / f"{A1}.ipynb", as_version=4)
    env_py = dict(capture_output=True, text=True)

    # a manual 1 of 2 on ben's late 02 cell, as the formgrader does it; its lists before and after
    logs["fg_before"] = formgrader(course, "ben")
    logs["fg_after"] = formgrader(course, "grade", "decode-fp16-test", A2, "ben", "1", "ben")
    logs["fg_eve_before"] = formgrader(course, "eve")
    # A1's due date moved 12 hours: every penalty and status follows at once
    p = subprocess.run([sys.executable, "-m", "grader.classroom.term", "schedule", f"{A1}={A1_DUE_MOVED}",
                        "--course", str(course)], **env_py)
    logs["moved"] = p.stdout + p.stderr
    logs["fg_eve_after"] = formgrader(course, "eve")

    # hand-ins collected, not yet autograded (frank's 01; gus, on no roster)
    hand_in(course, "frank", A1, release1, "2026-11-23 10:00:00 UTC")
    hand_in(course, "gus", A1, release1, "2026-11-23 11:00:00 UTC")
    # hal's hand-made timestamp, day and month either way round; ivy's back-dated by 57 h
    hand_in(course, "hal", A2, book(A2, course), "2026-11-29 10:00:00 UTC")
    (course / "submitted" / "hal" / A2 / "timestamp.txt").write_text("03/12/2026 14:00")
    files_at(course / "submitted" / "hal" / A2, "2026-11-29 10:00:00 UTC")
    hand_in(course, "ivy", A2, book(A2, course), "2026-12-02 21:00:00 UTC")  # files as collected
    (course / "submitted" / "ivy" / A2 / "timestamp.txt").write_text("2026-11-30 11:00:00 UTC")
    files_at(course / "submitted" / "ivy" / A2, "2026-12-02 21:00:00 UTC")
    logs["autograde_times"], _ = run(course, "autograde", A2, "--student", "[hi]*", "--create")
    run(course, "export", "--to", "grades-before-record.csv")
    # the LMS's record of when ivy handed in: it counts over her timestamp.txt
    (course / "handin-times.csv").write_text("student_id,assignment,time\nivy,02-precision,2026-12-02 21:00 UTC\n")

    # regrades stopped by SIGTERM and by SIGHUP (a dropped SSH session): nothing lost
    kept = {s: (course / "autograded" / s / A2 / f"{A2}.ipynb").read_bytes() for s in ("ada", "eve")}
    logs["sigterm"] = stopped_regrade(course, A2, "ada", signal.SIGTERM)
    logs["sighup"] = stopped_regrade(course, A2, "eve", signal.SIGHUP)
    logs["kept"] = {s: (course / "autograded" / s / A2 / f"{A2}.ipynb").read_bytes() == b for s, b in kept.items()}
    logs["regrade_left"] = sorted(str(p) for p in (course / "autograded" / ".regrade").rglob("*.ipynb")) \
        if (course / "autograded" / ".regrade").exists() else []

    # feedback without --force: the stale pages (ben's manual grade, eve's moved due date, ivy's
    # record) are made again; the new ones made
    logs["feedback"], _ = run(course, "generate_feedback", "*")
    p = run(course, "export", "--to", "grades-later.csv")
    logs["export"] = p[0]
    logs["fg_all"] = formgrader(course, "list", *sorted({s for _, s in LATER}))

    # a half-written autograded notebook (what a regrade killed outright leaves): refused
    agd = course / "autograded" / "cy" / A1 / f"{A1}.ipynb"
    whole, page = agd.read_bytes(), course / "feedback" / "cy" / A1 / f"{A1}.html"
    page_before = page.read_bytes()
    half = nbformat.reads(whole.decode(), as_version=4)
    for c in half.cells:
        if c.cell_type == "code":
            c.outputs = []
    nbformat.write(half, agd)
    proc = classroom.nbgrader(course, "generate_feedback", A1, "--student", "cy", "--force", check=False)
    logs["half"] = (proc.returncode, proc.stdout + proc.stderr, page.read_bytes() == page_before)
    agd.write_bytes(whole)

    # from the wrong folder, or misspelled: a clear word, nothing changed
    before = sorted(p.name for p in home.iterdir())
    wrong = {}
    for cmd in (["autograde", A1], ["export", "--to", "grades.csv"], ["generate_feedback", A1]):
        q = subprocess.run([sys.executable, "-m", "nbgrader", *cmd], cwd=home, **env_py,
                           env=dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]))
        wrong[cmd[0]] = (q.returncode, q.stdout + q.stderr)
    q = subprocess.run([sys.executable, "-m", "grader.classroom.similarity", "01-memory-layuot", "--course",
                        str(course)], **env_py)
    wrong["similarity"] = (q.returncode, q.stdout + q.stderr)
    q = subprocess.run([sys.executable, "-m", "grader.classroom.term", "schedule", "03=2026-12-20", "--course",
                        str(course)], **env_py)
    wrong["schedule"] = (q.returncode, q.stdout + q.stderr)
    state = {p.name: p.stat().st_mtime_ns for p in course.iterdir() if p.is_file()}
    for cmd in (["autograde", "01-memory-layuot"], ["export", "--assignment", "01-memory-layuot", "--to", "typo.csv"]):
        q = classroom.nbgrader(course, *cmd, check=False)
        wrong["typo " + cmd[0]] = (q.returncode, q.stdout + q.stderr)
    logs["typo_changed"] = state != {p.name: p.stat().st_mtime_ns for p in course.iterdir() if p.is_file()}
    logs["wrong"], logs["home_before"], logs["home_after"] = wrong, before, sorted(p.name for p in home.iterdir())
    with __import__("nbgrader.api").api.Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        logs["assignments"] = sorted(a.name for a in gb.assignments)

    # CPU-only grading switched (off on a CPU, on on a GPU), 01 generated again: a regrade is needed
    cfg = course / "nbgrader_config.py"
    text = cfg.read_text()
    flip = ("\nCPU_ONLY = True\n", "\nCPU_ONLY = False\n") if "\nCPU_ONLY = True\n" in text else \
        ("\nCPU_ONLY = False\n", "\nCPU_ONLY = True\n")
    cfg.write_text(text.replace(*flip))
    logs["switched"], _ = run(course, "generate_assignment", A1, "--force")
    run(course, "export", "--to", "grades-switched.csv")
    return dict(term, logs=logs)


def test_every_number_after_the_term_matches_one_table(later):
    """grades.csv, the feedback pages and the formgrader's lists: the same numbers, from LATER."""
    got = {(r["assignment"], r["student_id"]): r for r in _rows(later, "grades-later.csv")}
    assert set(got) == set(LATER), sorted(set(got) ^ set(LATER))
    num = lambda v: None if v == "" else float(v)  # noqa: E731
    for key in LATER:
        want, r = expected_row(key), got[key]
        assert r["status"].startswith(want["status"]), (key, r)
        assert (num(r["raw_score"]), num(r["manual_score"]), num(r["late_submission_penalty"]), num(r["score"]),
                num(r["max_score"])) == pytest.approx(
            (want["raw"], want["manual"], want["penalty"], want["score"], want["max"])), (key, r)
        if key in CHECKED:
            assert CHECKED[key] in r["check"], (key, r["check"])
        else:
            assert r["check"] == "", (key, r["check"])
        page = later["course"] / "feedback" / key[1] / key[0] / f"{key[0]}.html"
        fg = later["logs"]["fg_all"][key[1]].get(key[0], {})
        if want["status"] in ("graded", "late"):
            assert page_numbers(page) == pytest.approx((want["score"], want["max"], want["penalty"])), key
            assert fg.get("autograded") and fg["score"] == pytest.approx(want["score"]), (key, fg)
        elif want["status"].startswith("pending"):
            assert not page.exists(), key


def test_a_manual_grade_on_a_late_hand_in_recomputes_the_penalty_everywhere(later):
    ben = expected_row((A2, "ben"))
    fg_before, fg_after = later["logs"]["fg_before"][A2], later["logs"]["fg_after"][A2]
    assert (fg_before["score"], fg_before["late_submission_penalty"]) == pytest.approx((2.0 - 0.6, 0.6))
    assert (fg_after["score"], fg_after["raw_score"], fg_after["late_submission_penalty"]) == pytest.approx(
        (ben["score"], ben["raw"], ben["penalty"]))
    assert "Regenerating the feedback of ben 02-precision" in later["logs"]["feedback"]


def test_a_moved_due_date_recomputes_penalties_and_says_so(later):
    eve = expected_row((A1, "eve"))
    assert "eve 01-memory-layout: late penalty" in later["logs"]["moved"], later["logs"]["moved"]
    assert later["logs"]["fg_eve_before"][A1]["late_submission_penalty"] == pytest.approx(round(0.2 * M1, 4))
    assert later["logs"]["fg_eve_after"][A1]["score"] == pytest.approx(eve["score"])
    assert "Regenerating the feedback of eve 01-memory-layout" in later["logs"]["feedback"]


def test_hand_in_times_are_read_one_way_and_doubted_aloud(later):
    log = later["logs"]["autograde_times"]
    assert "hal 02-precision timestamp.txt" in log and "either way round" in log and "2026-12-01 23:59" in log
    assert "back-dated" in log  # ivy's timestamp.txt against her files' times
    before = {(r["assignment"], r["student_id"]): r for r in _rows(later, "grades-before-record.csv")}
    ivy = before[(A2, "ivy")]
    assert ivy["status"] == "graded" and "back-dated" in ivy["check"] and "3 day(s) late" in ivy["check"]
    hal = before[(A2, "hal")]
    assert float(hal["score"]) == 4.0 and hal["timestamp"].startswith("2026-11-29 10:00")


def test_regrades_stopped_by_sigterm_or_sighup_lose_nothing(later):
    logs = later["logs"]
    assert logs["kept"] == {"ada": True, "eve": True}, (logs["sigterm"][-2000:], logs["sighup"][-2000:])
    assert logs["regrade_left"] == []
    for sig in ("sigterm", "sighup"):
        assert "kept the earlier result" in logs[sig], logs[sig][-2000:]


def test_feedback_refuses_a_half_written_notebook_and_keeps_the_page(later):
    rc, out, page_kept = later["logs"]["half"]
    assert rc != 0 and "not a finished grading" in out and "nbgrader autograde 01-memory-layout --student cy" in out
    assert page_kept


def test_mistakes_cost_nothing(later):
    wrong = later["logs"]["wrong"]
    for cmd in ("autograde", "export", "generate_feedback"):
        rc, out = wrong[cmd]
        assert rc == 2 and "cd course" in out and "git checkout" not in out, (cmd, out[-1500:])
    assert later["logs"]["home_after"] == later["logs"]["home_before"]  # no gradebook.db, no grades.csv
    rc, out = wrong["similarity"]
    assert rc == 2 and "01-memory-layuot" in out and A1 in out
    assert not (later["course"] / "similarity-01-memory-layuot.html").exists()
    rc, out = wrong["schedule"]
    assert rc == 2 and "generate_assignment 03-cuda-core-gemm" in out
    assert later["logs"]["assignments"] == [A1, A2]  # 03 was not added with a maximum of 0
    for cmd in ("typo autograde", "typo export"):  # a misspelled assignment in the course folder
        rc, out = wrong[cmd]
        assert rc != 0 and "no assignment" in out and "01-memory-layuot" in out and A1 in out, (cmd, out[-1500:])
    assert not later["logs"]["typo_changed"]  # no grades file, no integrity record rewritten


def test_cpu_only_switched_says_a_regrade_is_needed(later):
    log = later["logs"]["switched"]
    assert "its maximum changed" in log and f"nbgrader autograde {A1} --force" in log, log[-2000:]
    rows = {(r["assignment"], r["student_id"]): r for r in _rows(later, "grades-switched.csv")}
    assert "the maximum is now" in rows[(A1, "ada")]["check"]
