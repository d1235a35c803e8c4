"""The class leaderboard (grader.classroom.leaderboard, issue 37 item 4) on a fixture class.

The class's autograded notebooks are made the way autograde makes them on a GPU: each verdict is
a real Verdict whose speed the real speed step sets (steps.speed.speed_item, from a GPU-like
timing), rendered by the trusted process's own _render, put into the notebook by the real
TrustedGrade._apply and passed through SafeOutputs, as autograde writes autograded/. The class
holds a hostile id and a forged record, a student who handed in nothing, one not graded yet, one
failing correctness, one whose trusted grading failed, one graded without a GPU, and a tie.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from browser import browser_page  # noqa: F401 (the fixture)
from grader.checking import exercises, trusted
from grader.checking.steps.speed import speed_item
from grader.checking.verdict import FAIL, PASS, SKIP, Item, Verdict
from grader.classroom import ladder, leaderboard, leaderboard_page, pseudonyms
from grader.classroom.autograde import VERDICTS, TrustedGrade
from grader.classroom.safe_outputs import SafeOutputs

ROOT = Path(__file__).resolve().parents[2]
A = "03-cuda-core-gemm"
SOLUTION = ROOT / "solutions" / A / f"{A}.ipynb"
HOSTILE = "\"><img src=x onerror=\"document.title='pwned'\">"
HOSTILE_COACH = "<script>document.title='pwned'</script>Global loads are not coalesced"
# student -> (tiled ratio or None, correct, coach) of a GPU grading; see _results for the others
TIMED = {"ann": (1.6, True, "Each thread reloads A and B from global memory"), "bob": (1.2, True, ""),
         "carl": (1.2, True, ""), HOSTILE: (1.9, True, HOSTILE_COACH), "dan": (None, False, "")}


@pytest.fixture(autouse=True)
def _tools_on_path(monkeypatch):
    """nbgrader's Gradebook runs `alembic` from its environment (the guide activates it)."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))


def _verdict(ex_id: str, *, correct: bool, ratio: float | None = None, coach: str = "", backend="gpu") -> dict:
    ex = exercises.get(ex_id)
    v = Verdict(ex_id, backend, items=[Item("correct: 512x512x512", PASS if correct else FAIL, "checked")],
                max_score=ex.points, score=ex.points_correct if correct else 0.0)
    if ratio is not None:  # what the timed step hands the speed step on a GPU
        v.items.append(speed_item(ex, dict(ratio=ratio, kernel_ms=1.0 / ratio, baseline_ms=1.0), v))
    elif correct and ex.target is not None:
        v.items.append(Item("speed", SKIP, "needs a GPU (none here)"))
    if coach:
        from grader.coach.findings import Finding
        from grader.coach.panel import Panel

        v.coach = Panel(ex_id, 90, findings=[Finding("global-low", 2.0, coach, "tile it", "notebook 03, section 5")])
    return trusted._render(v)


def _release() -> list[dict]:
    nb = nbformat.read(SOLUTION, as_version=4)
    tests = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
             if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")}
    return TrustedGrade()._release(SOLUTION, {g: float(c.metadata["nbgrader"]["points"]) for g, c in tests.items()},
                                   {g: c.source for g, c in tests.items()})


def _results(student: str) -> dict:
    if student == "hal":
        return dict(failed="the trusted grader was stopped: memory")
    ratio, correct, coach = TIMED.get(student, (None, True, ""))
    backend = "emu" if student == "eve" else "gpu"
    return {"grades": [
        dict(grade_id="sgemm-naive-test", score=1.0, points=1.0, printed="", error=None,
             verdicts=[_verdict("sgemm-naive", correct=True, backend=backend)]),
        dict(grade_id="sgemm-tiled-test", score=2.0 if correct else 0.0, points=2.0, printed="", error=None,
             verdicts=[_verdict("sgemm-tiled", correct=correct, ratio=ratio, coach=coach, backend=backend)])]}


def _autograded(course: Path, student: str, release: list[dict]) -> None:
    nb = nbformat.read(SOLUTION, as_version=4)
    if student == HOSTILE:  # forged records where a hand-in can write: an answer cell, a markdown cell
        forged = [dict(exercise="sgemm-tiled", correct=True, speed=dict(ratio=50.0), coach="forged")]
        for c in nb.cells:
            if c.metadata.get("nbgrader", {}).get("solution") or c.cell_type == "markdown":
                c.metadata[VERDICTS] = forged
        nb.cells.append(nbformat.v4.new_code_cell("1", metadata={VERDICTS: forged, "nbgrader": dict(
            grade=True, solution=False, grade_id="not-a-test", points=9)}))
    TrustedGrade()._apply(nb, release, _results(student))
    nb, _ = SafeOutputs().preprocess(nb, {})
    out = course / "autograded" / student / A / f"{A}.ipynb"
    out.parent.mkdir(parents=True)
    nbformat.write(nb, out)


def make_class(course: Path) -> Path:
    """ann..hal and HOSTILE (see the module doc); fay handed in nothing, gus is not graded yet."""
    course.mkdir(parents=True, exist_ok=True)
    release = _release()
    nb = nbformat.read(SOLUTION, as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    graded_ids = {c.metadata["nbgrader"]["grade_id"] for c in graded}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(A)
        gb.add_notebook(A, A)
        for c in nb.cells:
            meta = c.metadata.get("nbgrader", {})
            if meta.get("grade"):
                gb.add_grade_cell(meta["grade_id"], A, A, max_score=meta["points"], cell_type="code")
            if meta.get("grade_id"):
                gb.add_source_cell(meta["grade_id"], A, A, cell_type="code", source=c.source, checksum="c",
                                   locked=bool(meta.get("locked")))
                if meta.get("solution") and meta["grade_id"] not in graded_ids:
                    gb.add_solution_cell(meta["grade_id"], A, A)
        students = ["ann", "bob", "carl", "dan", "eve", "fay", "gus", "hal", HOSTILE]
        for s in students:
            gb.add_student(s)
        for s in students:
            if s != "fay":
                gb.add_submission(A, s)
                (course / "submitted" / s / A).mkdir(parents=True)
    for s in students:
        if s not in ("fay", "gus"):
            _autograded(course, s, release)
    return course


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + old
    try:
        yield make_class(tmp_path_factory.mktemp("leaderboard") / "course")
    finally:
        os.environ["PATH"] = old


def test_ranked_fastest_first_with_ties_and_the_rest_counted(course):
    boards, students = leaderboard.collect(course, A)
    assert [b.exercise for b in boards] == ["sgemm-tiled"]  # sgemm-naive grades no speed
    b = boards[0]
    assert [(e.student, e.rank) for e in b.ranked] == [(HOSTILE, 1), ("ann", 2), ("bob", 3), ("carl", 3)]
    assert max(e.ratio for e in b.ranked) == pytest.approx(1.9)  # the forged 50x is never read
    assert b.ranked[1].coach == TIMED["ann"][2] and b.ranked[1].kernel_ms == pytest.approx(1 / 1.6)
    assert dict(b.counted) == {leaderboard.NOTHING: 1, leaderboard.NOT_GRADED: 1, leaderboard.NOT_CORRECT: 2,
                               leaderboard.NOT_TIMED: 1}
    assert dict(b.why_not_timed) == {"needs a GPU (none here)": 1}
    assert len(students) == 9
    r = b.rungs  # the exercise record's rungs and the recorded calibration's
    ex = exercises.get("sgemm-tiled")
    assert (r.floor, r.target, r.previous) == (ex.floor, ex.target, ex.previous)
    assert r.reference_ratio is not None and r.previous_ratio is not None and r.previous_ratio < r.target


def test_records_come_only_from_the_cells_the_trusted_pass_filled(course):
    path = course / "autograded" / HOSTILE / A / f"{A}.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert any(c.metadata.get(VERDICTS, [{}])[0].get("coach") == "forged" for c in nb.cells if c.metadata.get(VERDICTS))
    got = leaderboard.trusted_records(path, {"sgemm-naive-test": ["sgemm-naive"], "sgemm-tiled-test": ["sgemm-tiled"]})
    assert sorted(r["exercise"] for r in got) == ["sgemm-naive", "sgemm-tiled"]
    assert all(r.get("coach") != "forged" for r in got)


def test_pseudonyms_are_stable_private_and_per_course(course, tmp_path):
    page = leaderboard.build(course, A)
    made = re.compile(r"made \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert made.sub("", leaderboard.build(course, A)) == made.sub("", page)  # the same names, the same page
    key = pseudonyms.course_key(course)
    names = pseudonyms.names(key, ["ann", "bob", "carl", HOSTILE])
    assert all(n in page for n in names.values())
    assert len(set(names.values())) == 4
    for sid in ("ann", "bob", "carl"):
        assert f">{sid}<" not in page
    assert "onerror" not in page and "pwned" not in page.replace("&#x27;pwned&#x27;", "")
    other = tmp_path / "other"
    shutil.copytree(course, other, ignore=shutil.ignore_patterns(pseudonyms.KEY_FILE))
    assert pseudonyms.names(pseudonyms.course_key(other), ["ann", "bob", "carl"]) != \
        {k: v for k, v in names.items() if k != HOSTILE}
    assert (os.stat(course / pseudonyms.KEY_FILE).st_mode & 0o077) == 0


def test_two_students_never_share_a_pseudonym():
    ids = [f"s{i}" for i in range(3000)]  # ~11 pairs draw the same name among 3000
    got = pseudonyms.names(b"k" * 64, ids)
    plain = [pseudonyms.name(b"k" * 64, s) for s in ids]
    assert len(set(plain)) < len(ids), "no collision drawn: the test proves nothing"
    assert len(set(got.values())) == len(ids)
    assert all(got[s] == n for s, n in zip(ids, plain) if plain.count(n) == 1)


def test_a_damaged_key_stops_the_page_saying_what_to_do(course, tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(course, other, ignore=shutil.ignore_patterns(pseudonyms.KEY_FILE, "leaderboard-*"))
    (other / pseudonyms.KEY_FILE).write_text("")
    assert leaderboard.main([A, "--course", str(other)]) == 2
    assert "holds no pseudonym key" in capsys.readouterr().err and not (other / f"leaderboard-{A}.html").exists()


def test_names_when_asked_and_everything_escaped(course):
    page = leaderboard.build(course, A, names=True)
    assert ">ann<" in page and ">carl<" in page
    assert HOSTILE not in page and "<img src=x" not in page and "<script>" not in page
    assert "&lt;img src=x onerror=" in page and "&lt;script&gt;" in page


def test_the_command_writes_the_page_and_says_what_is_wrong(course, tmp_path, capsys):
    out = tmp_path / "board.html"
    assert leaderboard.main([A, "--course", str(course), "--out", str(out)]) == 0
    assert out.read_text().startswith("<!doctype html>")
    assert leaderboard.main(["99-nope", "--course", str(course)]) == 2
    assert "no assignment '99-nope'" in capsys.readouterr().err
    assert leaderboard.main([A, "--course", str(tmp_path / "empty")]) == 2
    assert "no gradebook.db" in capsys.readouterr().err
    # as the guide runs it: in the course folder, by its module name
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "grader.classroom.leaderboard", A], cwd=course, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.strip()) == course / f"leaderboard-{A}.html"
    assert "Leaderboard: " + A in (course / f"leaderboard-{A}.html").read_text()


def test_a_notebook_cell_shows_it_in_a_sandboxed_frame(course):
    shown = leaderboard.show(A, course)._repr_html_()
    assert shown.startswith("<iframe sandbox srcdoc=") and "<img src=x" not in shown


def test_the_ladder_reads_what_calibrate_writes():
    from grader.bench import calibrate

    row = dict(id="sgemm-tiled", reference="sgemm_tiled", score=2, points=2, seconds=1.0,
               speed=dict(ratio=1.7, floor=1.05, target=1.25), previous=("sgemm_naive", 1.18, 1.6))
    text = "## Grader calibration — NVIDIA H100 80GB HBM3 (sm_90), 2030-01-02 03:04 UTC\n\n" + calibrate._line(row)
    got = ladder.calibrated(text)["sgemm-tiled"]
    assert got[:3] == (pytest.approx(1.7), "sgemm_naive", pytest.approx(1.18))
    assert got[3].startswith("NVIDIA H100 80GB HBM3, 2030-01-02")


def test_the_page_renders_in_a_browser_and_runs_nothing_injected(course, browser_page, tmp_path):
    out = tmp_path / "board.html"
    out.write_text(leaderboard.build(course, A, names=True))
    page = browser_page
    page.goto(out.as_uri(), wait_until="load")
    assert page.title() == f"Leaderboard: {A}"
    rows = page.locator("table tr")
    assert rows.count() == 1 + 4
    assert page.locator("table tr").nth(1).locator("td").nth(1).inner_text() == HOSTILE
    assert "Each thread reloads" in page.locator("table").inner_text()
    width = page.eval_on_selector("img", "i => i.complete ? i.naturalWidth : 0")
    assert width > 100
    assert page.locator("img[src='x']").count() == 0 and page.locator("script").count() == 0
    assert page.console_log == []


# ---------------------------------------------------------------- through real nbgrader (slow)
REAL = "01-memory-layout"  # its transpose is speed-graded


@pytest.fixture(scope="module")
def real_course(tmp_path_factory):
    """01 released and autograded by real nbgrader with the course config (on the CPU): honest
    (the solution, trimmed as the red team trims it), broken (the untouched release) and forger
    (the solution with forged verdict records in its cells' metadata)."""
    from redteam import require_sandbox, trim, trimmed_solution, write_submission

    from grader.classroom import workflow as classroom

    require_sandbox()
    root = classroom.new_course(tmp_path_factory.mktemp("leaderboard-real") / "course")
    classroom.release(root, REAL)
    work = tmp_path_factory.mktemp("leaderboard-handins")
    forged = [dict(exercise="transpose", correct=True, speed=dict(ratio=50.0, kernel_ms=0.01, baseline_ms=0.5),
                   coach="forged")]
    forger = trimmed_solution(REAL)
    for c in forger.cells:
        c.metadata[VERDICTS] = forged  # every cell, the test cells too
    test = next(c for c in forger.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "transpose-test")
    forger.cells.insert(0, nbformat.from_dict(dict(test, metadata=dict(test.metadata))))  # a copy placed first
    handins = {"honest": trimmed_solution(REAL), "forger": forger,
               "broken": trim(nbformat.read(root / "release" / REAL / f"{REAL}.ipynb", as_version=4))}
    for student, nb in handins.items():
        classroom.submit(root, student, REAL, [write_submission(work, student, REAL, nb)])
    classroom.autograde(root, REAL, "*")
    return root


@pytest.mark.slow
def test_autograde_keeps_the_trusted_records_and_only_those(real_course):
    boards, _ = leaderboard.collect(real_course, REAL)
    b = next(b for b in boards if b.exercise == "transpose")
    # on the CPU: honest and forger are correct, not timed (no GPU); the forged 50x is never read
    assert b.ranked == []
    assert dict(b.counted) == {leaderboard.NOT_TIMED: 2, leaderboard.NOT_CORRECT: 1}
    assert all("GPU" in why for why in b.why_not_timed)
    path = real_course / "autograded" / "forger" / REAL / f"{REAL}.ipynb"
    got = leaderboard.trusted_records(path, {"transpose-test": ["transpose"]})
    assert [r["exercise"] for r in got] == ["transpose"] and got[0]["coach"] != "forged" and got[0]["speed"] is None


@pytest.mark.slow
def test_a_gpu_speed_record_in_the_autograded_notebook_is_ranked(real_course, tmp_path):
    """What a GPU run adds to the same record (steps.speed sets v.speed; trusted.record keeps it),
    put where the CPU run put its record: the leaderboard reads it from the real notebook."""
    course = tmp_path / "course"
    shutil.copytree(real_course, course)
    path = course / "autograded" / "honest" / REAL / f"{REAL}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "transpose-test")
    gpu = _verdict("transpose", correct=True, ratio=0.83, coach="Shared-memory bank conflicts: 32-way.")["record"]
    assert set(gpu) == set(cell.metadata[VERDICTS][0])  # the same record, with a speed
    cell.metadata[VERDICTS] = [gpu]
    nbformat.write(nb, path)
    boards, _ = leaderboard.collect(course, REAL)
    b = next(b for b in boards if b.exercise == "transpose")
    assert [(e.student, round(e.ratio, 2), e.coach) for e in b.ranked] == [("honest", 0.83, gpu["coach"])]
    assert b.counted[leaderboard.NOT_TIMED] == 1


@pytest.mark.slow
def test_a_hand_in_newer_than_its_grading_is_not_ranked_by_the_earlier_one(real_course, tmp_path):
    """The student hands in again after a GPU grading (the new one not graded yet, or refused, or its
    cohort job timed out: the earlier autograded folder stays): grades.csv says pending, and the
    page must not rank the earlier kernel's speed as this hand-in's."""
    course = tmp_path / "course"
    shutil.copytree(real_course, course)
    path = course / "autograded" / "honest" / REAL / f"{REAL}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "transpose-test")
    cell.metadata[VERDICTS] = [_verdict("transpose", correct=True, ratio=0.83)["record"]]
    nbformat.write(nb, path)
    b = next(b for b in leaderboard.collect(course, REAL)[0] if b.exercise == "transpose")
    assert [e.student for e in b.ranked] == ["honest"]  # graded: ranked
    (course / "submitted" / "honest" / REAL / "timestamp.txt").write_text("2099-01-01 00:00:00 UTC")
    b = next(b for b in leaderboard.collect(course, REAL)[0] if b.exercise == "transpose")
    assert b.ranked == [] and b.counted[leaderboard.NOT_GRADED] == 1


def test_the_notebook_view_renders_in_a_browser(course, browser_page):
    page = browser_page
    page.set_content("<!doctype html><title>cell</title>" + leaderboard.show(A, course, names=True)._repr_html_())
    frame = page.frame_locator("iframe")
    assert frame.locator("table tr").count() == 1 + 4
    assert frame.locator("table tr").nth(1).locator("td").nth(1).inner_text() == HOSTILE
    assert frame.locator("img").evaluate("i => i.complete ? i.naturalWidth : 0") > 100
    assert page.title() == "cell" and page.console_log == []


def test_rows_shown_alike_share_a_rank_and_none_shows_slower_above_faster():
    # 166.249 % and 166.241 % both read 166.2 %; 166.251 % reads 166.3 % (a 2-GPU run's page once
    # ranked a 166.2 % row above a 166.3 % one, both 6th)
    ratios = {"zed": 1.66249, "amy": 1.66251, "bea": 1.66241, "cal": 1.5}
    ranked = [leaderboard.Entry(s, r, None, None, "") for s, r in ratios.items()]
    leaderboard.rank(ranked)
    rows = [(leaderboard_page.pct(e.ratio), e.rank) for e in ranked]
    assert rows == [("166.3%", 1), ("166.2%", 2), ("166.2%", 2), ("150.0%", 4)]
    assert [e.student for e in ranked][1:3] == ["bea", "zed"]  # a tie: by id, stable across runs
