"""Ordinary instructor actions in the middle of a term that tests/classroom/test_term.py and
test_term_exchange.py do not take, with real nbgrader and the course's config, on 02-precision
(Python answers only: the same scores on a CPU and a GPU). After each, grades.csv must say what
the gradebook and the hand-ins say, and the guide's next command must do what the export asks.

- a student removed from the class (`nbgrader db student remove --force`, which deletes their
  grades) and added back: the export asks for `nbgrader autograde`, which must then grade them.
- a typo fixed in a test cell and the assignment released again (`generate_assignment --force`)
  after hand-ins were graded: those graded with the earlier text are named (log and `check`),
  until regraded; a student who hands in the earlier release is not reported as tampering.
- one student granted an extension (`term extend`) after handing in late: no penalty, in
  grades.csv, the formgrader and the feedback page, also after a manual grade and after the
  assignment's due date moves; moved past the extension, the assignment's date counts for them too.
- a first autograde of a hand-in killed outright (SIGKILL: the out-of-memory killer, a machine
  lost): grades.csv and generate_feedback ask for `nbgrader autograde`, which must grade it.
- an `autograde --force` regrade killed outright just after it saved the new scores in the gradebook,
  before it wrote the autograded notebook: the earlier notebook is put back, and nothing says the
  gradebook was restored from a backup; the next commands say to run `nbgrader autograde`, which grades it.
- the assignment removed from the gradebook (`nbgrader db assignment remove A --force`) and released again:
  its due date comes back with it, and a late hand-in graded again is as late as before.
- the gradebook restored from a backup older than a grading: that hand-in is not shown as graded
  with the backup's scores beside the newer grading's verdicts; the export asks for `nbgrader
  autograde`, which grades it again (nobody else), and feedback waits for it.
- a hand-in's notebook put over by hand (the right file e-mailed), its timestamp.txt kept: nbgrader's
  rule (regrade a newer hand-in) would skip it for ever; the export and autograde see it was replaced.
- a due date set with nbgrader's own `nbgrader db assignment add A [--duedate=...]`: without a date it
  does not erase A's (and every penalty with it), a day-first date is refused as the course refuses
  it everywhere, and a date it reads moves the penalties as `term schedule` does, saying so.
- the instructor's record of hand-in times (handin-times.csv, an LMS export) with lines in the LMS's own
  spelling of an id or an assignment: they count for nothing, and the export names each.
- a test cell's points changed and the assignment released again: until `autograde --force`, the
  export flags the hand-ins graded out of the earlier maximum and no feedback page shows 4 of 3.
- the term's record of extensions (.term.json) cut short by a full disk: export, feedback and `term
  extend` refuse, saying what to restore, rather than drop every extension or write over the rest.
- a student's id renamed (an LMS's new id), their hand-in's folder renamed with it: the grades kept
  under the old id are flagged, the hand-in under the new one is pending.
- the course folder moved to another path (a new disk, a colleague's copy): autograde does not
  say the config or the sources changed; a real change to the config still is named. Copied out of
  the repository (no solutions/ beside it), autograde says so in one line, grades nothing, and
  loses nothing.
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from test_term import book, formgrader, hand_in, page_numbers, run, stopped_regrade

pytestmark = pytest.mark.slow

A = "02-precision"
DUE = "2026-11-30 12:00:00 UTC"


def term_cli(course: Path, *args: str) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "grader.classroom.term", *args, "--course", str(course)],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


KILLED_AFTER_SAVING = r"""
import os, signal, sys
from grader.classroom import scores

saved = scores.ReconcileManualScores.preprocess


def then_killed(self, nb, resources):  # the new scores are in the gradebook; the notebook not yet written
    saved(self, nb, resources)
    os.kill(os.getpid(), signal.SIGKILL)


scores.ReconcileManualScores.preprocess = then_killed
from nbgrader.apps.nbgraderapp import main
main()
"""


def killed_after_saving(course: Path, assignment: str, student: str) -> str:
    """`nbgrader autograde --force` of one student with the course's config, killed outright (SIGKILL,
    as the out-of-memory killer does) the moment the new scores are saved in the gradebook; its output."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", TC_SOURCE_DIR=(course / ".source").read_text(),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.run([sys.executable, "-c", KILLED_AFTER_SAVING, "autograde", assignment, "--student", student,
                        "--force"], cwd=course, env=env, capture_output=True, text=True)
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    return p.stdout + p.stderr


def rows(course: Path, name: str) -> dict[str, dict]:
    with open(course / name) as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    home = tmp_path_factory.mktemp("actions")
    source = home / "solutions"  # the instructor's sources, to fix a typo in
    shutil.copytree(classroom.SOLUTIONS / A, source / A)
    course = classroom.new_course(home / "course", source)
    logs = {}
    run(course, "generate_assignment", A, "--force")
    p = subprocess.run([sys.executable, "-m", "grader.classroom.term", "schedule", f"{A}={DUE}", "--course",
                        str(course)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    hand_in(course, "ada", A, book(A, course), "2026-11-29 10:00:00 UTC")
    hand_in(course, "ben", A, book(A, course, ("predictions",)), "2026-11-29 11:00:00 UTC")
    logs["autograde"], _ = run(course, "autograde", A)

    # ada leaves the class (her grades go with her, as nbgrader's --force says) and comes back
    logs["remove"], _ = run(course, "db", "student", "remove", "ada", "--force")
    run(course, "db", "student", "add", "ada", "--first-name", "Ada", "--last-name", "Lovelace")
    run(course, "export", "--to", "grades-readded.csv")
    logs["regrade_readded"], _ = run(course, "autograde", A)  # what the export's status line says to run
    run(course, "export", "--to", "grades-regraded.csv")

    # a typo fixed in the text of a test cell, and the assignment released again
    earlier = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    path = source / A / f"{A}.ipynb"
    nb = json.loads(path.read_text())
    test = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "predictions-test")
    text = "".join(test["source"])
    assert "Compares your predictions" in text
    test["source"] = text.replace("Compares your predictions", "Compares the predictions")
    path.write_text(json.dumps(nb, indent=1))
    logs["rerelease"], _ = run(course, "generate_assignment", A, "--force")
    run(course, "export", "--to", "grades-rereleased.csv")
    hand_in(course, "cy", A, earlier, "2026-11-29 12:00:00 UTC")  # fetched before the fix
    logs["cy"], _ = run(course, "autograde", A)
    hand_in(course, "eve", A, book(A, course), "2026-12-01 10:00:00 UTC")  # 1 day late
    run(course, "autograde", A, "--student", "eve")
    logs["regrade_ben"], _ = run(course, "autograde", A, "--student", "ben", "--force")
    run(course, "export", "--to", "grades-ben-regraded.csv")

    # eve is granted an extension, then a manual grade, then the assignment's due date moves
    run(course, "export", "--to", "grades-eve-late.csv")
    term_cmd = [sys.executable, "-m", "grader.classroom.term"]
    p = subprocess.run([*term_cmd, "extend", "02", "eve", "2026-12-02 12:00", "--course", str(course)],
                       capture_output=True, text=True)
    logs["extend"] = (p.returncode, p.stdout + p.stderr)
    p = subprocess.run([*term_cmd, "extend", "02", "evee", "2026-12-02 12:00", "--course", str(course)],
                       capture_output=True, text=True)
    logs["extend_typo"] = (p.returncode, p.stdout + p.stderr)
    run(course, "export", "--to", "grades-extended.csv")
    logs["fg_eve"] = formgrader(course, "grade", "decode-fp16-test", A, "eve", "1", "eve")[A]
    p = subprocess.run([*term_cmd, "schedule", f"{A}=2026-11-30 18:00", "--course", str(course)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    logs["feedback_eve"], _ = run(course, "generate_feedback", A, "--student", "eve")
    logs["page_eve"] = page_numbers(course / "feedback" / "eve" / A / f"{A}.html")
    run(course, "export", "--to", "grades-extended-later.csv")

    # dan's first grading killed outright half-way, then the guide's plain command
    hand_in(course, "dan", A, book(A, course), "2026-11-29 13:00:00 UTC")
    logs["killed"] = stopped_regrade(course, A, "dan", signal.SIGKILL)
    run(course, "export", "--to", "grades-killed.csv")
    logs["after_kill"], _ = run(course, "autograde", A)
    run(course, "export", "--to", "grades-after-kill.csv")

    # the course folder moved elsewhere (its sources too), then its config really edited
    moved = home / "elsewhere" / "course"
    moved.parent.mkdir()
    shutil.move(course, moved)
    shutil.move(source, home / "elsewhere" / "solutions")
    (moved / ".source").write_text(str(home / "elsewhere" / "solutions"))
    logs["moved"], _ = run(moved, "autograde", A)
    with open(moved / "nbgrader_config.py", "a") as f:
        f.write("\n# an edit\n")
    logs["edited"], _ = run(moved, "autograde", A)
    run(moved, "export", "--to", "grades-moved.csv")

    # A's due date moves past eve's extension, and her hand-in's time (the instructor's record) is between
    # (the LMS's export also spells two lines its own way: they match no hand-in, and must be named)
    (moved / "handin-times.csv").write_text("student_id,assignment,time\neve,02-precision,2026-12-02 18:00 UTC\n"
                                            "Ada,02-precision,2026-11-29 10:00 UTC\nben,02,2026-11-29 11:00 UTC\n")
    p = subprocess.run([*term_cmd, "schedule", f"{A}=2026-12-03 12:00", "--course", str(moved)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([*term_cmd, "extend", A, "ada", "2026-12-01 12:00", "--course", str(moved)],
                       capture_output=True, text=True)
    logs["extend_earlier"] = (p.returncode, p.stdout + p.stderr)
    logs["export_records"], _ = run(moved, "export", "--to", "grades-past-extension.csv")

    # the gradebook restored from a backup taken before ben's new hand-in was graded (a disk lost, a
    # colleague's copy put back): the autograded folder holds the new grading, the gradebook the old
    shutil.copy(moved / "gradebook.db", home / "gradebook-backup.db")
    hand_in(moved, "ben", A, book(A, moved), "2026-11-30 09:00:00 UTC")  # every answer now
    logs["ben_new"], _ = run(moved, "autograde", A)
    run(moved, "generate_feedback", A, "--student", "ben")
    page = moved / "feedback" / "ben" / A / f"{A}.html"
    logs["ben_page"] = page.read_bytes()
    shutil.copy(home / "gradebook-backup.db", moved / "gradebook.db")
    # cy handed in the wrong file and e-mails the right one, which is put over it by hand, her
    # timestamp.txt kept (she handed in on time): nbgrader's rule (a newer timestamp) would never grade it
    nbformat.write(book(A, moved), moved / "submitted" / "cy" / A / f"{A}.ipynb")
    run(moved, "export", "--to", "grades-restored.csv")
    logs["feedback_restored"] = run(moved, "generate_feedback", A, "--student", "ben", check=False)[0], \
        page.read_bytes() == logs["ben_page"]
    logs["after_restore"], _ = run(moved, "autograde", A)  # what the export's status line says to run
    run(moved, "export", "--to", "grades-restored-regraded.csv")

    # nbgrader's own command for due dates, as its documentation gives it: without --duedate (to make
    # sure the assignment is there), with a date written day first, then with one the course reads
    run(moved, "export", "--to", "grades-before-db.csv")
    logs["db_add"], _ = run(moved, "db", "assignment", "add", A)
    run(moved, "export", "--to", "grades-db-add.csv")
    logs["db_dayfirst"] = run(moved, "db", "assignment", "add", A, "--duedate=01/12/2026 12:00", check=False)
    run(moved, "export", "--to", "grades-db-dayfirst.csv")
    logs["db_date"], _ = run(moved, "db", "assignment", "add", A, "--duedate=2026-12-01 12:00")
    run(moved, "export", "--to", "grades-db-date.csv")

    # the points of a test cell changed in the source (decode-fp16-test 2 -> 1) and A released again: the
    # hand-ins graded out of 4 need `autograde --force`; until then no feedback page shows a score out of 3
    path = home / "elsewhere" / "solutions" / A / f"{A}.ipynb"
    nb = json.loads(path.read_text())
    next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "decode-fp16-test")[
        "metadata"]["nbgrader"]["points"] = 1
    path.write_text(json.dumps(nb, indent=1))
    logs["repointed"], _ = run(moved, "generate_assignment", A, "--force")
    page = moved / "feedback" / "eve" / A / f"{A}.html"
    kept = page.read_bytes()
    logs["feedback_repointed"] = run(moved, "generate_feedback", A, "--student", "eve", check=False)[0], \
        page.read_bytes() == kept
    run(moved, "export", "--to", "grades-repointed.csv")

    # eve's regrade (`--force`: her maximum changed) killed outright the moment it saved her new scores, then
    # another student's autograde (which puts her earlier result back), the export, her feedback, and the
    # plain autograde the export names
    logs["killed_after_save"] = killed_after_saving(moved, A, "eve")
    logs["after_killed_save"], _ = run(moved, "autograde", A, "--student", "ada")
    run(moved, "export", "--to", "grades-killed-after-save.csv")
    logs["feedback_killed_after_save"] = run(moved, "generate_feedback", A, "--student", "eve", check=False)[0]
    logs["regrade_killed_after_save"], _ = run(moved, "autograde", A)
    run(moved, "export", "--to", "grades-killed-regraded.csv")

    # the term's record (.term.json: the extensions) cut short, as a full disk or a crash mid-write leaves
    # it: nothing may carry on as if there were no extension, nor write over what is left of it
    record = moved / ".term.json"
    whole = record.read_bytes()
    record.write_bytes(whole[: len(whole) // 2])
    logs["cut_export"] = run(moved, "export", "--to", "grades-cut.csv", check=False)[0], \
        (moved / "grades-cut.csv").exists()
    logs["cut_feedback"] = run(moved, "generate_feedback", A, "--student", "ada", check=False)[0]
    logs["cut_extend"] = term_cli(moved, "extend", A, "ben", "2026-12-04 12:00")
    logs["cut_left"] = record.read_bytes() == whole[: len(whole) // 2]
    record.write_bytes(whole)  # restored from a backup

    # the LMS renames cy's id (cy.young): her hand-in's folder is renamed to it; her grades stay under cy
    (moved / "submitted" / "cy").rename(moved / "submitted" / "cy.young")
    logs["renamed"], _ = run(moved, "export", "--to", "grades-renamed.csv")

    # the course folder copied alone to another machine's path (no solutions/ beside it)
    alone = home / "grading-server" / "course"
    shutil.copytree(moved, alone, symlinks=True)
    (alone / ".source").unlink()  # the guide's setup: the config looks for solutions/ beside the course
    kept = (alone / "autograded" / "ada" / A / f"{A}.ipynb").read_bytes()
    env = {k: v for k, v in os.environ.items() if k != "TC_SOURCE_DIR"}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    p = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", A, "--student", "ada", "--force"], cwd=alone,
                       env=env, capture_output=True, text=True)
    logs["alone"] = (p.returncode, p.stdout + p.stderr,
                     (alone / "autograded" / "ada" / A / f"{A}.ipynb").read_bytes() == kept)

    # A removed from the gradebook with nbgrader's own command (--force: it has grades) and released again;
    # eve's late hand-in graded again (the command the export names for a hand-in with no grades)
    logs["remove_assignment"], _ = run(moved, "db", "assignment", "remove", A, "--force")
    logs["release_again"], _ = run(moved, "generate_assignment", A, "--force")
    logs["regrade_removed"], _ = run(moved, "autograde", A, "--student", "eve")
    run(moved, "export", "--to", "grades-removed-released.csv")
    return dict(home=home, course=moved, logs=logs)


def test_a_student_removed_and_added_back_is_graded_by_the_command_the_export_names(term):
    course = term["course"]
    waiting = rows(course, "grades-readded.csv")["ada"]
    assert waiting["status"].startswith("pending") and f"nbgrader autograde {A}" in waiting["status"], waiting
    assert waiting["score"] == "", waiting  # never a 0 while nothing holds her grades
    ada = rows(course, "grades-regraded.csv")["ada"]
    assert (ada["status"], float(ada["score"]), ada["first_name"]) == ("graded", 4.0, "Ada"), \
        (ada, term["logs"]["regrade_readded"][-3000:])
    assert "the gradebook holds no grades for it" in term["logs"]["regrade_readded"]
    ben = rows(course, "grades-regraded.csv")["ben"]
    assert (ben["status"], float(ben["score"])) == ("graded", 2.0), ben  # graded once, left alone


def test_a_test_cell_released_again_names_the_hand_ins_graded_with_the_earlier_text(term):
    course, logs = term["course"], term["logs"]
    assert "released again with another text of predictions-test" in logs["rerelease"], logs["rerelease"][-2000:]
    assert f"nbgrader autograde {A} --force" in logs["rerelease"]
    flagged = rows(course, "grades-rereleased.csv")
    for s in ("ada", "ben"):
        assert "earlier text of predictions-test" in flagged[s]["check"], flagged[s]
        assert flagged[s]["status"] == "graded", flagged[s]  # the scores stand until the regrade
    after = rows(course, "grades-ben-regraded.csv")
    assert after["ben"]["check"] == "" and float(after["ben"]["score"]) == 2.0, after["ben"]
    assert "earlier text of predictions-test" in after["ada"]["check"], after["ada"]
    assert after["cy"]["check"] == "" and (after["cy"]["status"], float(after["cy"]["score"])) == ("graded", 0.0)


def test_a_hand_in_of_the_earlier_release_is_not_reported_as_tampering(term):
    log = term["logs"]["cy"]
    assert "Attribute 'checksum'" not in log, log[-3000:]
    assert "earlier release's text of cell predictions-test" in log, log[-3000:]


def test_a_course_folder_moved_elsewhere_is_not_reported_as_changed(term):
    assert "changed since the last autograde" not in term["logs"]["moved"], term["logs"]["moved"][-2000:]
    assert "the course config changed since the last autograde" in term["logs"]["edited"]
    assert "instructor's sources changed" not in term["logs"]["edited"]
    moved = rows(term["course"], "grades-moved.csv")
    assert {s: (r["status"], float(r["score"])) for s, r in moved.items()} == {
        "ada": ("graded", 4.0), "ben": ("graded", 2.0), "cy": ("graded", 0.0), "dan": ("graded", 4.0),
        "eve": ("graded", 3.0)}, moved


def test_a_first_grading_killed_outright_is_graded_by_the_next_autograde(term):
    course = term["course"]
    killed = rows(course, "grades-killed.csv")["dan"]
    assert killed["status"].startswith("NOT GRADED") and killed["score"] == "", (killed, term["logs"]["killed"][-2000:])
    dan = rows(course, "grades-after-kill.csv")["dan"]
    assert (dan["status"], float(dan["score"])) == ("graded", 4.0), (dan, term["logs"]["after_kill"][-3000:])
    assert "is not a finished grading" in term["logs"]["after_kill"]


def test_an_extension_for_one_student_counts_everywhere(term):
    course, logs = term["course"], term["logs"]
    late = rows(course, "grades-eve-late.csv")["eve"]
    assert (late["status"], float(late["late_submission_penalty"]), float(late["score"])) == ("late", 0.4, 3.6), late
    rc, out = logs["extend"]
    assert rc == 0 and "eve 02-precision: late penalty 0.4 -> 0" in out, out
    rc, out = logs["extend_typo"]
    assert rc == 2 and "no student 'evee'" in out and "eve" in out, out
    eve = rows(course, "grades-extended.csv")["eve"]
    assert (eve["status"], float(eve["late_submission_penalty"]), float(eve["score"])) == ("graded", 0.0, 4.0), eve
    assert eve["duedate"].startswith("2026-12-02 12:00"), eve
    assert rows(course, "grades-extended.csv")["ada"]["duedate"].startswith("2026-11-30 12:00")
    assert (logs["fg_eve"]["score"], logs["fg_eve"]["late_submission_penalty"]) == pytest.approx((3.0, 0.0))
    later = rows(course, "grades-extended-later.csv")["eve"]
    assert (later["status"], float(later["manual_score"]), float(later["late_submission_penalty"]),
            float(later["score"])) == ("graded", 1.0, 0.0, 3.0), later
    assert logs["page_eve"] == pytest.approx((3.0, 4.0, 0.0)), logs["feedback_eve"][-2000:]


def test_a_regrade_killed_after_saving_scores_is_not_taken_for_a_restored_backup(term):
    """Before: the put-back result's scores differ from the ones the killed regrade saved, and every
    command said "a gradebook restored from a backup?" (whose guidance is to give manual scores again)."""
    course, logs = term["course"], term["logs"]
    assert "kept the earlier result" in logs["after_killed_save"], logs["after_killed_save"][-3000:]
    eve = rows(course, "grades-killed-after-save.csv")["eve"]
    assert eve["status"].startswith("pending"), eve
    for said in (eve["status"], logs["feedback_killed_after_save"], logs["regrade_killed_after_save"]):
        assert "a regrade of it was stopped before it finished" in said, said[-3000:]
        assert "backup" not in said and "replaced" not in said, said[-3000:]  # nor "its notebook was replaced"
    assert f"nbgrader autograde {A}" in eve["status"] and f"nbgrader autograde {A}" in \
        logs["feedback_killed_after_save"], logs["feedback_killed_after_save"][-3000:]
    assert "eve 02-precision: autograded before, but a regrade of it was stopped" in \
        logs["regrade_killed_after_save"], logs["regrade_killed_after_save"][-3000:]
    eve = rows(course, "grades-killed-regraded.csv")["eve"]
    assert not eve["status"].startswith(("pending", "NOT GRADED")), eve
    assert float(eve["raw_score"]) == float(eve["max_score"]) == 3.0, eve  # every answer, out of the new maximum
    assert "graded out of 4" not in eve["check"], eve


def test_an_assignment_removed_and_released_again_keeps_its_due_date(term):
    """Before: `nbgrader db assignment remove A --force` took A's due date with it, and the next
    release made A with none: eve's late hand-in, graded again, was on time."""
    course, logs = term["course"], term["logs"]
    before = rows(course, "grades-killed-regraded.csv")["eve"]
    after = rows(course, "grades-removed-released.csv")["eve"]
    assert before["status"] == "late" and float(before["late_submission_penalty"]) > 0, before
    for k in ("duedate", "status", "raw_score", "late_submission_penalty", "score"):
        assert after[k] == before[k], (k, after, before)
    assert f"{A}'s due date 2026-12-01 12:00:00 UTC is kept" in logs["remove_assignment"], \
        logs["remove_assignment"][-2000:]
    assert f"{A} gets back its due date 2026-12-01 12:00:00" in logs["release_again"], logs["release_again"][-2000:]


def test_an_extension_never_makes_a_due_date_earlier(term):
    """A's due date moved for the whole class past eve's extension: eve is as late as her classmates."""
    eve = rows(term["course"], "grades-past-extension.csv")["eve"]
    assert eve["duedate"].startswith("2026-12-03 12:00"), eve
    assert (eve["status"], float(eve["late_submission_penalty"])) == ("graded", 0.0), eve
    rc, out = term["logs"]["extend_earlier"]  # one given before A's own due date: said, and A's counts
    assert rc == 0 and "ada due 2026-12-01 12:00:00 UTC (extension; 02-precision's own due date is later" in out, out
    assert rows(term["course"], "grades-past-extension.csv")["ada"]["duedate"].startswith("2026-12-03 12:00")


def test_a_course_folder_copied_out_of_the_repository_says_where_its_sources_are(term):
    rc, out, kept = term["logs"]["alone"]
    assert rc != 0 and "the instructor's sources are not at" in out and "TC_SOURCE_DIR=" in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert kept


def test_a_gradebook_restored_from_a_backup_is_graded_again_not_mixed_with_the_newer_grading(term):
    course, logs = term["course"], term["logs"]
    restored = rows(course, "grades-restored.csv")
    ben = restored["ben"]
    assert ben["status"].startswith("pending: the gradebook does not hold its latest grading"), ben
    assert f"nbgrader autograde {A}" in ben["status"], ben
    assert all(r["status"] == "graded" for s, r in restored.items() if s not in ("ben", "cy")), restored
    out, page_kept = logs["feedback_restored"]
    assert "ben 02-precision: the gradebook does not hold its latest grading" in out, out[-3000:]
    assert page_kept  # the page of the newer grading stays until that grading is in the gradebook again
    assert "ben 02-precision: autograded before, but the gradebook does not hold its latest grading" in \
        logs["after_restore"], logs["after_restore"][-3000:]
    assert logs["after_restore"].count("autograded before, but") == 2, logs["after_restore"][-3000:]  # and cy
    again = rows(course, "grades-restored-regraded.csv")
    assert (again["ben"]["status"], float(again["ben"]["score"])) == ("graded", 4.0), again["ben"]
    assert {s: r["score"] for s, r in again.items() if s not in ("ben", "cy")} == \
        {s: r["score"] for s, r in restored.items() if s not in ("ben", "cy")}


def test_a_hand_in_replaced_by_hand_without_a_newer_time_is_graded_not_skipped(term):
    course, logs = term["course"], term["logs"]
    cy = rows(course, "grades-restored.csv")["cy"]
    assert cy["status"].startswith("pending: its notebook in submitted/ was replaced after grading"), cy
    assert f"nbgrader autograde {A}" in cy["status"], cy
    assert "cy 02-precision: autograded before, but its notebook in submitted/ is not the one graded" in \
        logs["after_restore"], logs["after_restore"][-3000:]
    cy = rows(course, "grades-restored-regraded.csv")["cy"]
    assert (cy["status"], float(cy["score"]), cy["timestamp"][:16]) == ("graded", 4.0, "2026-11-29 12:00"), cy


def test_nbgrader_db_assignment_add_reads_due_dates_as_the_course_does(term):
    course, logs = term["course"], term["logs"]
    before = rows(course, "grades-before-db.csv")
    assert rows(course, "grades-db-add.csv") == before, logs["db_add"][-2000:]  # nothing erased
    assert "keeps its due date 2026-12-03 12:00:00 UTC" in logs["db_add"], logs["db_add"][-2000:]
    out, _ = logs["db_dayfirst"]
    assert "day and month could be either way round" in out and "nothing was changed" in out, out[-2000:]
    assert rows(course, "grades-db-dayfirst.csv") == before
    eve = rows(course, "grades-db-date.csv")["eve"]  # 6 h past her extension, which now counts
    assert (eve["status"], eve["duedate"][:16], float(eve["late_submission_penalty"])) == \
        ("late", "2026-12-02 12:00", 0.3), eve
    assert "eve 02-precision: late penalty 0 -> 0.3" in logs["db_date"], logs["db_date"][-2000:]


def test_lines_of_the_hand_in_record_that_match_no_hand_in_are_named(term):
    out = term["logs"]["export_records"]
    assert "handin-times.csv: Ada,02-precision,2026-11-29 10:00 UTC: no hand-in of 02-precision by 'Ada' " \
           "(did you mean ada?)" in out, out[-3000:]
    assert "handin-times.csv: ben,02,2026-11-29 11:00 UTC: no assignment '02' (did you mean 02-precision?)" in out
    assert "handin-times.csv: eve," not in out  # the line that matches counts, and is not named


def test_points_changed_on_a_release_hold_back_feedback_until_the_regrade(term):
    logs = term["logs"]
    assert "its maximum changed from 4 to 3" in logs["repointed"], logs["repointed"][-2000:]
    out, page_kept = logs["feedback_repointed"]
    assert "eve 02-precision: graded out of 4, the maximum is now 3: run `nbgrader autograde 02-precision --force`" \
        in out and "no feedback made" in out, out[-3000:]
    assert page_kept
    eve = rows(term["course"], "grades-repointed.csv")["eve"]
    assert float(eve["max_score"]) == 3.0 and "graded out of 4" in eve["check"], eve


def test_a_term_record_cut_short_is_refused_not_read_as_no_extension(term):
    logs = term["logs"]
    out, written = logs["cut_export"]
    assert "export refused: the term's record" in out and "cannot be read" in out and not written, out[-2000:]
    assert "generate_feedback refused: the term's record" in logs["cut_feedback"], logs["cut_feedback"][-2000:]
    rc, out = logs["cut_extend"]
    assert rc == 2 and "cannot be read" in out and "nothing was changed" in out, out
    assert logs["cut_left"]  # what was left of it, untouched


def test_a_hand_in_moved_away_from_its_grades_is_flagged(term):
    renamed = rows(term["course"], "grades-renamed.csv")
    cy = renamed["cy"]
    assert cy["status"] == "graded" and "its hand-in is no longer in submitted/cy/02-precision" in cy["check"], cy
    assert renamed["cy.young"]["status"].startswith("pending: collected, not autograded yet"), renamed["cy.young"]
    assert "02-precision cy: CHECK " in term["logs"]["renamed"] and \
        "its hand-in is no longer in submitted/cy/02-precision" in term["logs"]["renamed"]
    assert all("no longer in submitted" not in r["check"] for s, r in renamed.items() if s != "cy"), renamed
