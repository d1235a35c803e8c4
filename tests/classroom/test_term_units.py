"""The pieces of an instructor's term (issue 27) one by one, without running nbgrader's commands:
late penalty, the schedule command, manual scores against a regrade (both choices), grades.csv
statuses and order, feedback pages, and a cohort that never removes an earlier result.
tests/classroom/test_term.py runs them together through real nbgrader."""
import csv
import json
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from grader.checking.verdict import SKIP, Item, Verdict
from grader.classroom import cohort, export, feedback, late, scores, term


@pytest.fixture(autouse=True)
def _tools_on_path(monkeypatch):
    """nbgrader's Gradebook runs `alembic` from its environment (the guide activates it)."""
    import os
    import sys

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))


def test_daily_penalty_per_started_day():
    p = late.DailyPenalty(percent_per_day=10)
    assert p.late_submission_penalty("s", 3.0, 0) is None
    assert p.late_submission_penalty("s", 3.0, 1) == pytest.approx(0.3)  # a second late is a day
    assert p.late_submission_penalty("s", 3.0, 30 * 3600) == pytest.approx(0.6)
    assert p.late_submission_penalty("s", 2.0, 57 * 3600) == pytest.approx(0.6)
    assert late.DailyPenalty(percent_per_day=100).late_submission_penalty("s", 2.0, 60) == pytest.approx(2.0)
    assert p.late_submission_penalty("s", 3.0, 40 * 86400) == pytest.approx(3.0)  # never more than all


def _gradebook(tmp_path: Path) -> str:
    """A course with one assignment A (notebook nb: cells t1 (2 points), t2 (1 point)) and
    students ann, bob, cid; ann and bob submitted."""
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.update_or_create_assignment("A")
        gb.add_notebook("nb", "A")
        for name, pts in (("t1", 2), ("t2", 1)):
            gb.add_grade_cell(name, "nb", "A", max_score=pts, cell_type="code")
            gb.add_source_cell(name, "nb", "A", cell_type="code", source="x", checksum="c", locked=True)
        for s in ("cid", "bob", "ann"):
            gb.add_student(s, first_name=s.title())
        for s in ("bob", "ann"):
            gb.add_submission("A", s)
    return url


def _resources(url, student="ann"):
    return {"nbgrader": dict(db_url=url, notebook="nb", assignment="A", student=student)}


@pytest.mark.parametrize("choice", ["clear", "keep"])
def test_manual_score_on_a_regraded_cell(tmp_path, choice, caplog):
    url = _gradebook(tmp_path)
    with Gradebook(url) as gb:
        t1 = gb.find_grade("t1", "nb", "A", "ann")
        t1.auto_score, t1.manual_score = 0.0, 0.5
        t2 = gb.find_grade("t2", "nb", "A", "ann")
        t2.auto_score, t2.manual_score = 1.0, 0.25  # its automatic score will not change
        gb.db.commit()
    res = _resources(url)
    scores.RememberScores().preprocess(nbformat.v4.new_notebook(), res)
    with Gradebook(url) as gb:  # what SaveAutoGrades writes for the resubmission
        gb.find_grade("t1", "nb", "A", "ann").auto_score = 2.0
        gb.find_grade("t2", "nb", "A", "ann").auto_score = 1.0
        gb.db.commit()
    caplog.set_level("WARNING")
    scores.ReconcileManualScores(on_change=choice).preprocess(nbformat.v4.new_notebook(), res)
    with Gradebook(url) as gb:
        t1 = gb.find_grade("t1", "nb", "A", "ann")
        t2 = gb.find_grade("t2", "nb", "A", "ann")
        assert t2.manual_score == 0.25  # unchanged cell: the instructor's score stands
        if choice == "clear":
            assert t1.manual_score is None and t1.score == 2.0 and not t1.needs_manual_grade
            assert "manual score 0.5 is cleared" in caplog.text
        else:
            assert t1.manual_score == 0.5 and t1.score == 0.5
            assert "manual score 0.5 is kept" in caplog.text


def test_one_score_per_cell_on_the_feedback_page(tmp_path):
    url = _gradebook(tmp_path)
    with Gradebook(url) as gb:
        g = gb.find_grade("t1", "nb", "A", "ann")
        g.auto_score, g.manual_score = 2.0, 0.5
        gb.db.commit()
    nb = nbformat.v4.new_notebook()
    for gid in ("t1", "t2"):
        c = nbformat.v4.new_code_cell("grade()", metadata={"nbgrader": {"grade": True, "grade_id": gid}})
        c.outputs = [nbformat.v4.new_output("display_data", data={
                         "text/html": "<p><i>Graded by the course's trusted grader: 2 of 2 points.</i></p>",
                         "text/plain": "Graded by the course's trusted grader: 2 of 2 points."}),
                     nbformat.v4.new_output("execute_result", data={"text/plain": "2.0"}, execution_count=1)]
        nb.cells.append(c)
    nb, _ = feedback.OneScorePerCell().preprocess(nb, _resources(url))
    manual, auto = nb.cells
    assert [o.output_type for o in manual.outputs] == ["display_data"]
    assert "2 of 2" not in json.dumps(manual.outputs) and "instructor" in json.dumps(manual.outputs)
    assert "2 of 2" in json.dumps(auto.outputs) and len(auto.outputs) == 2


def test_hidden_tests_are_cut_from_source_and_outputs():
    c = nbformat.v4.new_code_cell("a = 1\n### BEGIN HIDDEN TESTS\nassert secret()\n### END HIDDEN TESTS\nb = 2")
    c.outputs = [nbformat.v4.new_output("stream", text="### BEGIN HIDDEN TESTS\nassert secret()")]
    c, _ = feedback.StripHiddenTests().preprocess_cell(c, {}, 0)
    assert "secret" not in c.source and "b = 2" in c.source and "secret" not in c.outputs[0]["text"]


def test_a_check_that_did_not_run_never_says_passed():
    v = Verdict("wmma-gemm", "auto", max_score=1.0)
    v.items.append(Item("check", SKIP, "not run while autograding"))
    assert "PASSED" not in v.headline and "not checked here" in v.headline
    assert "PASSED" not in v._repr_html_() and "#1a7f37" not in v._repr_html_()


def _coursedir(root: Path) -> CourseDirectory:
    cfg = Config()
    cfg.CourseDirectory.root = str(root)
    return CourseDirectory(config=cfg)


def test_export_flags_what_nothing_graded_and_sorts(tmp_path):
    url = _gradebook(tmp_path)
    with Gradebook(url) as gb:
        for g in gb.find_submission_notebook("nb", "A", "bob").grades:
            g.auto_score = 1.0
        gb.db.commit()
        (tmp_path / "autograded" / "bob" / "A").mkdir(parents=True)
        (tmp_path / "autograded" / "bob" / "A" / "nb.ipynb").write_text("{}")
        got = export.rows(gb, _coursedir(tmp_path))
    assert [r["student_id"] for r in got] == ["ann", "bob", "cid"]
    ann, bob, cid = got
    assert ann["status"].startswith("NOT GRADED") and ann["raw_score"] == "" and ann["score"] == ""
    assert bob["status"] == "graded" and float(bob["score"]) == 2.0 and float(bob["max_score"]) == 3.0
    assert cid["status"] == "not submitted" and float(cid["score"]) == 0.0


def test_schedule_sets_every_due_date_in_one_command(tmp_path, capsys):
    import shutil

    from grader.classroom import workflow

    course = workflow.new_course(tmp_path / "course")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:  # as generate_assignment leaves them
        for a in ("01-memory-layout", "02-precision"):
            gb.update_or_create_assignment(a)
    (tmp_path / "s.csv").write_text("assignment,due\n01,2026-12-01 23:59 UTC\n02-precision,2026-12-08T12:00Z\n")
    assert term.main(["schedule", str(tmp_path / "s.csv"), "--course", str(course)]) == 0
    out = capsys.readouterr().out
    assert "01-memory-layout: due 2026-12-01 23:59:00 UTC" in out and "02-precision: due 2026-12-08 12:00:00" in out
    assert term.main(["schedule", "99=2026-01-01", "--course", str(course)]) == 2
    assert term.main(["schedule", "01=not a date", "--course", str(course)]) == 2
    # day and month either way round: refused, not guessed; an assignment not generated yet is
    # refused and not added (it would be in the gradebook with a maximum of 0); nothing changes
    assert term.main(["schedule", "01=03/12/2026 14:00", "--course", str(course)]) == 2
    assert term.main(["schedule", "01=2027-01-01", "03=2026-12-20", "--course", str(course)]) == 2
    err = capsys.readouterr().err
    assert "either way round" in err and "2026-12-01 23:59" in err and "generate_assignment 03-cuda-core-gemm" in err
    assert dict(term.current(cohort.load_course(course))) == {
        "01-memory-layout": __import__("datetime").datetime(2026, 12, 1, 23, 59),
        "02-precision": __import__("datetime").datetime(2026, 12, 8, 12, 0)}
    shutil.rmtree(course)


def test_cohort_keeps_earlier_results_of_failed_or_stopped_regrades(tmp_path):
    from grader.classroom import workflow

    EARLIER = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'  # a finished grading
    root = workflow.new_course(tmp_path / "course")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment("01-memory-layout")
    c = cohort.load_course(root)
    a = "01-memory-layout"
    for s in ("ann", "bob"):
        d = root / "submitted" / s / a
        d.mkdir(parents=True)
        (d / f"{a}.ipynb").write_text("{}")
        (root / "autograded" / s / a).mkdir(parents=True)
        (root / "autograded" / s / a / f"{a}.ipynb").write_text(EARLIER)
    with Gradebook(c.coursedir.db_url) as gb:
        for s in ("ann", "bob"):  # graded before: the gradebook holds their submissions
            gb.update_or_create_student(s)
            gb.update_or_create_submission(a, s)
        cohort.merge(gb, c, a, dict(student="ann", status="failed", rows=None, autograded=None))
    assert (root / "autograded" / "ann" / a / f"{a}.ipynb").read_text() == EARLIER
    cohort.forget(c, a, "bob")  # killed, timed out, or stopped by Ctrl-C
    assert (root / "autograded" / "bob" / a / f"{a}.ipynb").read_text() == EARLIER
    assert cohort.is_done(c, a, "ann") and not cohort.is_done(c, a, "bob")  # bob is graded again
    assert cohort.pending(c, a) == {"bob"}


def test_cell_limits_by_kind(monkeypatch):
    from grader.classroom.autograde import CourseExecute, stopped_message

    monkeypatch.setenv("TC_NO_SANDBOX", "1")  # no kernel is started here
    ex = CourseExecute(timeout=600, timeout_plain=60, timeout_graded=120)
    plain = nbformat.v4.new_code_cell("while True: pass")
    graded = nbformat.v4.new_code_cell("t()", metadata={"nbgrader": {"grade": True, "grade_id": "t-test"}})
    assert ex.cell_timeout(plain) == 60 and ex.cell_timeout(graded) == 120
    assert CourseExecute(timeout=30).cell_timeout(graded) == 30  # the backstop still caps
    why = stopped_message(graded, 120)
    assert "(t-test)" in why and "120 s" in why and "a graded cell" in why and "trusted grader" in why


def test_a_regrade_killed_outright_is_undone_by_the_next_run(tmp_path):
    """`autograde --force` keeps the earlier folder aside; a run killed before it could put it
    back (SIGKILL) leaves it there, and the next autograde restores it before anything else."""
    import logging

    from grader.classroom import regrade

    cd = _coursedir(tmp_path)
    kept = tmp_path / "autograded" / regrade.KEEP / "ann" / "A"
    kept.mkdir(parents=True)
    (kept / "nb.ipynb").write_text("earlier")
    half = tmp_path / "autograded" / "ann" / "A"
    half.mkdir(parents=True)
    (half / "nb.ipynb").write_text("half-written")
    regrade.restore_all(cd, logging.getLogger("test"))
    assert (half / "nb.ipynb").read_text() == "earlier" and not kept.exists()


# ------------------------------------------------------------------ one standing (issue 33)
def _late_course(tmp_path: Path):
    """ann handed in A 2 days late (raw 3.0 of 3: penalty 0.6 at 10% a day), graded."""
    from datetime import datetime

    from grader.classroom import standing

    standing.install(10.0)
    url = _gradebook(tmp_path)
    with Gradebook(url) as gb:
        gb.update_or_create_assignment("A", duedate=datetime(2026, 11, 23, 12))
        sub = gb.find_submission("A", "ann")
        sub.timestamp = datetime(2026, 11, 24, 18)
        for g in sub.notebooks[0].grades:
            g.auto_score = g.max_score
        gb.db.commit()
    d = tmp_path / "submitted" / "ann" / "A"
    d.mkdir(parents=True)
    (d / "nb.ipynb").write_text("{}")
    (d / "timestamp.txt").write_text("2026-11-24 18:00:00 UTC")
    _set_mtime(d, "2026-11-24 18:00")
    (tmp_path / "autograded" / "ann" / "A").mkdir(parents=True)
    (tmp_path / "autograded" / "ann" / "A" / "nb.ipynb").write_text("{}")
    return url


def _set_mtime(folder: Path, when: str):
    import os

    from grader.classroom.handin_time import parse_time

    t = (parse_time(when) - __import__("datetime").datetime(1970, 1, 1)).total_seconds()
    for p in folder.iterdir():
        os.utime(p, (t, t))


def _row(tmp_path, url, student="ann"):
    with Gradebook(url) as gb:
        return {r["student_id"]: r for r in export.rows(gb, _coursedir(tmp_path))}[student]


def test_a_manual_grade_on_a_late_hand_in_recomputes_its_penalty(tmp_path):
    """The issue's numbers, scaled: a manual 1 of 2 on one cell of a late hand-in. Every view
    (the gradebook rows the feedback page and the formgrader read, grades.csv) follows."""
    from grader.classroom import standing

    url = _late_course(tmp_path)
    with Gradebook(url) as gb:
        standing.refresh(gb, _coursedir(tmp_path), gb.find_submission("A", "ann"))
        gb.db.commit()
        assert gb.find_submission("A", "ann").late_submission_penalty == pytest.approx(0.6)
        gb.find_grade("t1", "nb", "A", "ann").manual_score = 1.0  # what the formgrader does
        gb.db.commit()
    with Gradebook(url) as gb:  # recomputed in the same commit: raw 2.0, 2 days late -> 0.4
        sub = gb.find_submission("A", "ann")
        assert (sub.score, sub.late_submission_penalty) == pytest.approx((2.0, 0.4))
    r = _row(tmp_path, url)
    assert (float(r["raw_score"]), float(r["manual_score"]), float(r["late_submission_penalty"]),
            float(r["score"]), r["status"]) == pytest.approx((2.0, 1.0, 0.4, 1.6, "late"))


def test_a_moved_due_date_recomputes_penalty_and_status(tmp_path, capsys):
    from grader.classroom import standing

    url = _late_course(tmp_path)
    with Gradebook(url) as gb:
        standing.refresh(gb, _coursedir(tmp_path), gb.find_submission("A", "ann"))
        gb.db.commit()
    assert _row(tmp_path, url)["status"] == "late"
    from datetime import datetime

    with Gradebook(url) as gb:  # `nbgrader db assignment add A --duedate=...`: the same gradebook call
        gb.update_or_create_assignment("A", duedate=datetime(2026, 11, 25, 12))
    with Gradebook(url) as gb:
        assert not gb.find_submission("A", "ann").late_submission_penalty
    r = _row(tmp_path, url)
    assert (float(r["score"]), float(r["late_submission_penalty"]), r["status"]) == pytest.approx((3.0, 0.0, "graded"))


def test_every_state_is_named_and_a_hand_in_there_is_never_0(tmp_path):
    url = _late_course(tmp_path)
    for s in ("cid", "dan"):  # cid: in the roster; dan: not, and no gradebook row: collected only
        d = tmp_path / "submitted" / s / "A"
        d.mkdir(parents=True)
        (d / "nb.ipynb").write_text("{}")
    with Gradebook(url) as gb:
        got = {r["student_id"]: r for r in export.rows(gb, _coursedir(tmp_path))}
    for s in ("cid", "dan"):
        assert got[s]["status"].startswith("pending: collected, not autograded yet"), got[s]
        assert got[s]["raw_score"] == got[s]["score"] == "", got[s]
    logs = tmp_path / "autograded" / cohort.LOGS / "A"  # dan's cohort job was run and did not finish
    logs.mkdir(parents=True)
    (logs / "pending.json").write_text('["dan"]')
    with Gradebook(url) as gb:
        dan = {r["student_id"]: r for r in export.rows(gb, _coursedir(tmp_path))}["dan"]
    assert dan["status"].startswith("NOT GRADED: its cohort job did not finish") and dan["score"] == "", dan
    assert got["bob"]["status"].startswith("NOT GRADED")
    assert got["ann"]["status"] == "late"


@pytest.mark.parametrize("text,expected", [
    ("2026-11-22 12:00:00 UTC", "2026-11-22 12:00:00"),
    ("2026-11-22 12:00:00.000000 UTC", "2026-11-22 12:00:00"),
    ("2026-11-22T13:00+01:00", "2026-11-22 12:00:00"),
    ("2026-11-22 07:00 -0500", "2026-11-22 12:00:00"),
    ("2026-11-22 13:00 Europe/Paris", "2026-11-22 12:00:00"),
    ("2026-11-22", "2026-11-22 00:00:00"),
])
def test_one_parser_reads_the_forms_nbgrader_and_people_write(text, expected):
    from grader.classroom.handin_time import parse_time

    assert str(parse_time(text)) == expected


@pytest.mark.parametrize("text", ["03/12/2026 14:00", "12.03.2026", "yesterday", "2026-13-01", "2026-11-22 12:00 Mars/Base",
                                  # dates whose zone moves them out of the calendar (OverflowError, not ValueError,
                                  # ended the export of the whole class: test_handin_extras.py)
                                  "0001-01-01 00:00 +01:00", "9999-12-31 23:59 -12:00", "0001-01-01 00:00 Asia/Tokyo"])
def test_ambiguous_or_unreadable_times_are_refused_naming_the_student(text):
    from grader.classroom.handin_time import FORMS, parse_time

    with pytest.raises(ValueError) as e:
        parse_time(text, "ann 01 timestamp.txt")
    assert "ann 01 timestamp.txt" in str(e.value) and FORMS in str(e.value)


def test_hand_in_times_are_checked_against_the_collection(tmp_path):
    from datetime import datetime

    from grader.classroom.handin_time import of_handin

    due = datetime(2026, 11, 30, 12)
    d = tmp_path / "h"
    d.mkdir()
    (d / "nb.ipynb").write_text("{}")
    stamp = d / "timestamp.txt"

    def check(text, files_at, **kw):
        stamp.write_text(text)
        _set_mtime(d, files_at)
        return of_handin(d, "ann", "A", due=due, **kw)

    ok = check("2026-11-30 11:00 UTC", "2026-11-30 11:00")
    assert ok.at == datetime(2026, 11, 30, 11) and not ok.flags
    back = check("2026-11-30 11:00 UTC", "2026-12-02 21:00")  # back-dated: files written 3 days late
    assert back.at == datetime(2026, 11, 30, 11) and "back-dated" in back.flags[0] and "3 day(s) late" in back.flags[0]
    bad = check("03/12/2026 14:00", "2026-12-02 21:00")  # never a 0: graded at the file's time, flagged
    assert bad.at == datetime(2026, 12, 2, 21) and bad.source == "file time" and "either way round" in bad.flags[0]
    early = check("2026-11-01 10:00 UTC", "2026-11-01 10:00", opens=datetime(2026, 11, 20))
    assert "before the assignment opened" in early.flags[0]
    rec = check("2026-11-30 11:00 UTC", "2026-11-30 11:00", records={("ann", "A"): "2026-12-01 09:00"})
    assert rec.at == datetime(2026, 12, 1, 9) and rec.source == "record" and "the record counts" in rec.flags[0]
    huge = check("2026-11-30 11:00 UTC" + " 9" * 20_000_000, "2026-11-30 11:00")  # 40 MB: read 200 bytes of it
    assert huge.source == "file time" and "cannot read the time" in huge.flags[0] and len(huge.flags[0]) < 1000


def test_the_formgrader_outside_a_course_says_where_and_creates_nothing(tmp_path):
    """A formgrader started where there is no course (a lab opened at the repository root) would
    create an empty gradebook.db there on its first page; it answers with where to start it."""
    from types import SimpleNamespace

    from nbgrader.server_extensions.formgrader import base
    from tornado import web

    from grader.classroom import hardening

    hardening.install()
    h = base.BaseHandler.__new__(base.BaseHandler)
    h.application = SimpleNamespace(settings=dict(
        nbgrader_formgrader=SimpleNamespace(coursedir=_coursedir(tmp_path)), nbgrader_gradebook=None))
    with pytest.raises(web.HTTPError) as e:
        h.gradebook
    assert "not an nbgrader course" in e.value.reason and "./course.sh grade" in e.value.reason
    assert not list(tmp_path.iterdir())
    (tmp_path / "nbgrader_config.py").write_text("")  # a course folder: the formgrader opens its gradebook
    assert h.gradebook is not None and (tmp_path / "gradebook.db").exists()


def test_a_linked_timestamp_is_never_followed(tmp_path):
    """export reads submitted/ before any autograde has removed what a student left there."""
    import os

    from grader.classroom.handin_time import of_handin, read_stamp

    secret = tmp_path / "gradebook.db"
    secret.write_text("2026-11-01 10:00 UTC secret rows")
    d = tmp_path / "h"
    d.mkdir()
    (d / "nb.ipynb").write_text("{}")
    os.symlink(secret, d / "timestamp.txt")
    assert read_stamp(d / "timestamp.txt") is None
    t = of_handin(d, "ann", "A")
    assert t.at is None and not any("secret" in f for f in t.flags)


def test_a_file_time_past_the_calendar_is_no_time():
    """A copy keeps the time a student gave a file (the exchange's collect, cp -p, unzip); where the
    filesystem holds times past year 9999 (tmpfs), reading it raised ValueError in every view of the
    hand-in's time (export, the formgrader's lists). It is no record of the collection: left out."""
    import os
    import tempfile
    from pathlib import Path

    from grader.classroom.handin_time import of_handin

    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        nb = Path(d) / "nb.ipynb"
        nb.write_text("{}")
        try:
            os.utime(nb, (2 ** 40, 2 ** 40))  # the year 36812
        except OSError:
            pytest.skip("no filesystem here holds such a time")
        if os.lstat(nb).st_mtime < 2 ** 39:
            pytest.skip("this filesystem clamps file times to its range (ext4: 2446)")
        t = of_handin(Path(d), "ann", "A")
        assert t.at is None and t.source == "none"
        (Path(d) / "timestamp.txt").write_text("2026-11-20 11:00 UTC")
        t = of_handin(Path(d), "ann", "A")
        assert str(t.at) == "2026-11-20 11:00:00" and not t.flags


def test_export_flags_student_ids_that_differ_only_in_case(tmp_path):
    """An LMS's folder "Ann" beside the roster's "ann": nbgrader grades two students, one of them 0 for
    nothing handed in; both rows say so in `check` (h-term, 2026-11-28), the others say nothing."""
    url = _gradebook(tmp_path)
    with Gradebook(url) as gb:
        gb.add_student("Ann")
        gb.add_submission("A", "Ann")
        got = {r["student_id"]: r for r in export.rows(gb, _coursedir(tmp_path))}
    assert "differs only in case (ann)" in got["Ann"]["check"] and "differs only in case (Ann)" in got["ann"]["check"]
    assert "differs only in case" not in got["bob"]["check"] + got["cid"]["check"]


# ---------------------------------------------------------------- timing noise on a regrade
def _verdict(ratio: float | None, correct: bool = True, spread: float = 0.02) -> dict:
    """The trusted grader's record of a transpose verdict (its own speed step and record): correct
    for 1 point, and on a GPU the speed measured at `ratio` with each side's IQR/median `spread`."""
    from grader.checking.exercises import get
    from grader.checking.steps.speed import speed_item
    from grader.checking.trusted import record

    ex = get("transpose")
    v = Verdict(ex.id, "gpu", max_score=ex.points)
    v.items.append(Item("correct", "pass" if correct else "fail", ""))
    if correct and ratio is not None:
        speed_item(ex, dict(ratio=ratio, kernel_ms=1.0, baseline_ms=ratio, kernel_spread=spread,
                            baseline_spread=spread), v)
    v.score = (ex.points_correct + (v.speed["fraction"] * ex.points_speed if v.speed else 0.0)) if correct else 0.0
    return record(v)


def _graded_nb(ratio, correct=True, answer="KERNEL = 'fast'", test="grade('transpose', KERNEL, points=2)",
               given="N = 64"):
    """A notebook as TrustedGrade leaves it: the course's given code (a locked cell, as autograde
    writes it from the release), the student's answer, the graded cell with its verdict."""
    from grader.classroom.autograde import VERDICTS

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(given, metadata={"nbgrader": {"locked": True, "grade_id": "g"}}))
    nb.cells.append(nbformat.v4.new_code_cell(answer, metadata={"nbgrader": {"solution": True, "grade_id": "a"}}))
    rec = _verdict(ratio, correct)
    nb.cells.append(nbformat.v4.new_code_cell(test, metadata={"nbgrader": {"grade": True, "grade_id": "t1"},
                                                               VERDICTS: [rec]}))
    return nb, rec["score"]  # out of 2, as the cell (Verdict.points scales to the cell's points)


def _result(nb, score):
    return dict(scores.fingerprint(nb)["t1"], score=score)


def test_the_regrade_rule_tells_timing_noise_from_a_real_change():
    before = _result(*_graded_nb(0.45))
    assert before["score"] == pytest.approx(1.5)
    assert scores.what_changed(before, _result(*_graded_nb(0.46)), 2.0) is None  # within 2 x (2% + 2%)
    assert scores.what_changed(before, before, 2.0) is None
    far = scores.what_changed(before, _result(*_graded_nb(0.58)), 2.0)
    assert "transpose's speed moved from 0.45 to 0.58" in far
    assert "the hand-in changed" in scores.what_changed(before, _result(*_graded_nb(0.46, answer="K = 1")), 2.0)
    assert "its test cell changed" in scores.what_changed(
        before, _result(*_graded_nb(0.46, test="grade('transpose', KERNEL, points=2)  # fixed")), 2.0)
    assert "pass/fail changed" in scores.what_changed(before, _result(*_graded_nb(None, correct=False)), 2.0)
    # the course's given code fixed and released again (generate_assignment --force), then the regrade
    # the guide asks for: the hand-in is the same, a noise move is still noise
    assert scores.what_changed(before, _result(*_graded_nb(0.46, given="N = 64  # fixed")), 2.0) is None
    nogpu = _result(*_graded_nb(None))  # the same kernel graded without a GPU: no speed, no noise to allow
    assert "its speed was checked in one of the two gradings only" in scores.what_changed(before, nogpu, 2.0)
    # no speed either time, the same checks, another score: the cell's points changed (said as noise, +-0, before)
    assert "its points changed?" in scores.what_changed(nogpu, dict(nogpu, score=nogpu["score"] * 1.5), 3.0)
    old = dict(before, verdicts=[dict(v, speed={k: x for k, x in v["speed"].items() if "spread" not in k})
                                 for v in before["verdicts"]])  # a record from before the spreads were kept
    assert scores.what_changed(old, _result(*_graded_nb(0.46)), 2.0) is not None
    assert scores.what_changed({"score": 1.5}, _result(*_graded_nb(0.46)), 2.0).startswith(
        "the automatic score changed (1.5 -> 1.53")  # an older course's record: the score alone decides
    # a new hand-in clears it even at the same automatic score: a raise or a penalty given by hand
    # graded what the instructor read, not this (found by h-red2: carried to a worse hand-in)
    assert "the hand-in changed" in scores.what_changed(before, _result(*_graded_nb(0.45, answer="K = 1")), 2.0)
    # the same hand-in regraded to the same score: nothing to judge
    assert scores.what_changed(before, _result(*_graded_nb(0.45)), 2.0) is None


def test_a_manual_score_stands_on_the_result_it_was_given_against(tmp_path, caplog):
    """Regrades whose speed creeps up by noise each time: the manual score is measured against the
    result it was given on, so the noise does not add up run after run; the third is cleared."""
    url = _gradebook(tmp_path)
    res = _resources(url)
    caplog.set_level("INFO")

    def regrade(ratio):
        nb, score = _graded_nb(ratio)
        scores.RememberScores().preprocess(nb, res)
        with Gradebook(url) as gb:  # what SaveAutoGrades writes
            gb.find_grade("t1", "nb", "A", "ann").auto_score = score
            gb.db.commit()
        caplog.clear()
        scores.ReconcileManualScores().preprocess(nb, res)
        with Gradebook(url) as gb:
            return gb.find_grade("t1", "nb", "A", "ann").manual_score

    assert regrade(0.45) is None
    with Gradebook(url) as gb:
        gb.find_grade("t1", "nb", "A", "ann").manual_score = 1.8
        gb.db.commit()
    assert regrade(0.465) == 1.8 and "by timing noise only: the manual score 1.8 stands" in caplog.text
    assert regrade(0.48) == 1.8  # 0.03 from the 0.45 it was given on, within 2 x (2% + 2%) of 0.48
    assert regrade(0.51) is None  # 0.06 from it: more than that noise, though only 0.03 from the last run
    assert "transpose's speed moved from 0.45 to 0.51" in caplog.text and "manual score 1.8 is cleared" in caplog.text
    with Gradebook(url) as gb:  # the record now is the result that counts
        assert scores.stored(gb, "A", "ann", "nb")["t1"]["score"] == pytest.approx(_graded_nb(0.51)[1])


def test_a_cohort_job_brings_back_what_each_result_rests_on(tmp_path):
    """The record ReconcileManualScores keeps travels from a cohort job's gradebook to the course's
    (cohort_job._rows, cohort.merge): a cohort regrade judges a manual grade as autograde does."""
    from grader.classroom import cohort_job, workflow

    job = tmp_path / "job"
    job.mkdir()
    url = _gradebook(job)
    nb, score = _graded_nb(0.45)
    with Gradebook(url) as gb:
        gb.find_grade("t1", "nb", "A", "ann").auto_score = score
        gb.db.commit()
    scores.ReconcileManualScores().preprocess(nb, _resources(url))
    rows = cohort_job._rows(job / "gradebook.db", "A", "ann")
    assert rows["notebooks"]["nb"]["graded_against"]["t1"]["handin"] == scores.fingerprint(nb)["t1"]["handin"]
    root = workflow.new_course(tmp_path / "course")
    _gradebook(root)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        cohort.merge(gb, cohort.load_course(root), "A", dict(student="ann", status="graded", rows=rows,
                                                              autograded=None))
        assert scores.stored(gb, "A", "ann", "nb") == rows["notebooks"]["nb"]["graded_against"]


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="making folders other accounts own needs root")
def test_a_folder_another_student_owns_is_refused_before_the_exchange_holds_evidence(tmp_path):
    """At the term's first hand-in no folder in the exchange yet shows that ids are accounts
    (self_owned is empty), so the exchange's own evidence lets a forged folder pass (h-term's open
    finding). A folder owned by the account of another student of the course (the gradebook's ids)
    is refused all the same; one owned by an account that is no student (the one shared account
    students write as) is not, even under an id that names a system account (news)."""
    import os
    import pwd

    from grader.classroom import exchange

    inbound = tmp_path / "inbound"
    inbound.mkdir()
    forged, shared = inbound / "daemon+A+2026-11-28 10:00:00.000000 UTC", inbound / "news+A+2026-11-28 10:00:00.000000 UTC"
    forged.mkdir()
    shared.mkdir()
    os.chown(forged, pwd.getpwnam("bin").pw_uid, -1)
    os.chown(shared, pwd.getpwnam("nobody").pw_uid, -1)
    accounts = exchange.self_owned(str(inbound))
    assert accounts == set()
    assert exchange.impostor(str(forged), "daemon", accounts) is None  # the exchange alone cannot tell
    why = exchange.impostor(str(forged), "daemon", accounts, {"daemon", "bin", "news"})
    assert why and "bin, another student of this course" in why
    assert exchange.impostor(str(shared), "news", accounts, {"daemon", "bin", "news"}) is None
    # the roster is read from the course's gradebook, which collect never creates
    cd = CourseDirectory(root=str(tmp_path / "course"))
    assert exchange.roster(cd) == set() and not (tmp_path / "course" / "gradebook.db").exists()
    (tmp_path / "course").mkdir()
    with Gradebook(cd.db_url) as gb:
        gb.add_student("bin")
        gb.add_student("daemon")
    assert exchange.roster(cd) == {"bin", "daemon"}
