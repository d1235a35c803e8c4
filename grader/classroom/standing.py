"""A hand-in's standing, computed in one place: raw score, manual points, late penalty, score,
maximum, status and what to doubt (issue 33). Every view reads it: grades.csv
(grader.classroom.export), the gradebook's penalty rows that the feedback pages and the
formgrader show (`refresh`, run by autograde, by `term schedule`, by export, and on every
gradebook write that changes a manual score, a due date or a hand-in's time: `install`), the
formgrader's submission lists (their score is the score after the penalty), the cohort report.

    status           scores
    not submitted    0 (nothing handed in, as nbgrader counts it)
    pending: ...     empty: collected, not autograded yet (or resubmitted since, or being regraded:
                     the gradebook's scores stay)
    NOT GRADED: ...  empty, never 0: handed in, but nothing could grade it, or its cohort job did
                     not finish (why, and what to do)
    graded           raw_score = manual score where given, else the automatic one, per cell
    late             graded, handed in after the due date: score = raw - penalty

The penalty is LATE_PERCENT_PER_DAY of the raw score per started day late, recomputed from the
score, the due date and the hand-in's time as they are NOW: a manual grade or a moved due date
never leaves an old penalty behind.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.classroom import handin_time

# under autograded/: the cohort's job logs and its pending list (grader.classroom.cohort writes them,
# a hand-in's standing reads the list); hidden in every sandbox, skipped by nbgrader's globs
LOGS = ".cohort-logs"
KEEP = ".regrade"  # under autograded/: the earlier results a regrade keeps aside (grader.classroom.regrade)
# in an autograded folder put back in place of a stopped regrade's (regrade._put_back): a gradebook ahead of
# it (that regrade had saved new scores) is then told from one restored from a backup
STOPPED = ".regrade-stopped"
STOPPED_SAYS = "a regrade of it was stopped before it finished, and its earlier autograded notebook put back"
TERM_FILE = ".term.json"  # in the course folder: when each assignment opened (term schedule), extensions,
REMOVED_DUE = "removed_due"  # ... and due dates of assignments removed from the gradebook (grader.classroom.due_dates)
PERCENT_PER_DAY = [10.0]  # the course config's LATE_PERCENT_PER_DAY (install), one value per process


def job_log(logs: Path, student: str) -> Path:
    """A cohort job's log in `logs` (autograded/.cohort-logs/ASSIGNMENT): STUDENT.log, or, where that
    name would not fit a file name (an id of up to 255 bytes is a valid folder name; 4 more are
    not), its first bytes and a digest of the whole id."""
    import hashlib

    name = f"{student}.log"
    if len(name.encode("utf-8", "surrogateescape")) > 255:
        digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        name = f"{student.encode('utf-8', 'surrogateescape')[:200].decode('utf-8', 'ignore')}-{digest}.log"
    return Path(logs) / name


def penalty(raw: float, days: int, percent_per_day: float | None = None) -> float:
    """The late penalty of a raw score `days` started days late (at most the whole score)."""
    pct = PERCENT_PER_DAY[0] if percent_per_day is None else percent_per_day
    if days <= 0 or not raw or raw <= 0:
        return 0.0
    return round(raw * min(1.0, days * pct / 100), 4)


def grade_score(g) -> float:
    """nbgrader's Grade.score, in Python (its SQL column is stale inside a session being changed)."""
    base = g.manual_score if g.manual_score is not None else g.auto_score
    if base is None:
        return 0.0
    return float(base) + float(g.extra_credit or 0.0)


# ------------------------------------------------------------------ the term's own record
def term(course_root, strict: bool = False) -> dict:
    """The term's record ({} where there is none). One that cannot be read (a write cut short, a typo
    made by hand) reads as {} here, but `strict` (whoever writes it, and export) raises ValueError:
    written over, every extension in it would be lost; exported, none would count."""
    path = Path(course_root) / TERM_FILE
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        if strict:
            raise ValueError(f"the term's record {path} cannot be read ({type(e).__name__}: {str(e)[:120]}): its "
                             f"extensions and opening dates would not count; restore it from a backup or fix it by "
                             f"hand (nothing was changed)") from None
        return {}


def save_term(course_root, data: dict) -> None:
    """Whole or not at all: a full disk or a crash mid-write leaves the earlier record."""
    path = Path(course_root) / TERM_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def opens(course_root, assignment: str) -> datetime | None:
    text = term(course_root).get("opens", {}).get(assignment)
    return handin_time.parse_time(text) if text else None


def due_for(course_root, assignment, student: str) -> datetime | None:
    """The due date that counts for `student`: their extension (`term extend`) where it is later than
    the assignment's (a gradebook Assignment), else the assignment's. An extension gives time, never
    takes it: moved past it, the assignment's due date counts for that student too (and with none,
    nobody is late)."""
    text = term(course_root).get("extensions", {}).get(assignment.name, {}).get(student) if course_root else None
    due = assignment.duedate
    if not text or due is None:
        return due
    own = handin_time.parse_time(text)
    return max(own, due)


def _root_of(submission):
    """The course folder of a gradebook row: where its sqlite gradebook file lies (nbgrader's default,
    `gradebook.db` in the course folder), or None."""
    from sqlalchemy.orm import object_session

    return course_root_of(object_session(submission))


def course_root_of(session):
    try:
        db = session.get_bind().url.database if session is not None else None
    except Exception:  # noqa: BLE001 - no engine bound: no course to read
        return None
    return Path(db).parent if db else None


# ------------------------------------------------------------------ one hand-in
@dataclass
class Standing:
    assignment: str
    student: str
    duedate: datetime | None = None
    timestamp: datetime | None = None
    raw: float | None = None
    manual: float | None = None  # points given by hand (None: no manual score)
    penalty: float | None = None
    score: float | None = None
    max_score: float = 0.0
    status: str = "not submitted"
    days_late: int = 0
    checks: list[str] = field(default_factory=list)

    def row(self) -> dict:
        num = lambda v: "" if v is None else repr(float(v))  # noqa: E731
        return dict(assignment=self.assignment, duedate="" if self.duedate is None else str(self.duedate),
                    timestamp="" if self.timestamp is None else str(self.timestamp), student_id=self.student,
                    raw_score=num(self.raw), manual_score=num(self.manual),
                    late_submission_penalty=num(self.penalty), score=num(self.score),
                    max_score=num(self.max_score), status=self.status, check="; ".join(self.checks))


def _folder(coursedir, step: str, student: str, assignment: str) -> Path:
    return Path(coursedir.format_path(getattr(coursedir, step), student, assignment))


def handed_in(coursedir, student: str, assignment: str) -> bool:
    return any(_folder(coursedir, "submitted_directory", student, assignment).glob("*.ipynb"))


def time_of(coursedir, assignment, student: str, records=None) -> handin_time.HandinTime:
    """The hand-in's time that counts (handin_time.of_handin), for a gradebook assignment."""
    if records is None:
        records = handin_time.record(coursedir.root)
    try:
        opened = opens(coursedir.root, assignment.name)
    except ValueError:
        opened = None
    return handin_time.of_handin(_folder(coursedir, "submitted_directory", student, assignment.name), student,
                                 assignment.name, due=due_for(coursedir.root, assignment, student), opens=opened,
                                 records=records)


def ungraded_reason(coursedir, submission) -> str | None:
    """Why a submission in the gradebook has no grade to show, or None when it has one."""
    folder = _folder(coursedir, "autograded_directory", submission.student.id, submission.assignment.name)
    for nb in submission.notebooks:
        if not (folder / f"{nb.name}.ipynb").is_file():
            from grader.classroom.handin_check import rejection

            refused = rejection(coursedir, submission.assignment.name, submission.student.id)
            if refused:
                return f"{refused} (ask for the notebook again)"
            return f"no autograded notebook {nb.name}.ipynb (autograde it again)"
        missing = [g.name for g in nb.grades if g.auto_score is None and g.manual_score is None]
        if missing:
            return f"no score for {', '.join(missing)} (autograde it again, or grade it by hand)"
    return None


def _regrading(coursedir, student: str, assignment: str) -> bool:
    """Its earlier result is kept aside (grader.classroom.regrade): an autograde is regrading it now
    (its autograded folder is being written), or one was stopped and the next puts it back."""
    base = Path(coursedir.format_path(coursedir.autograded_directory, ".", "."))
    return any((base / KEEP / student / assignment).glob("*.ipynb"))


def _cohort_failed(coursedir, assignment: str, student: str) -> bool:
    """A cohort job for this hand-in was run and did not finish (grader.classroom.cohort's pending list)."""
    f = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")) / LOGS / assignment / "pending.json"
    try:
        return student in json.loads(f.read_text())
    except (OSError, ValueError):
        return False


def _resubmitted(coursedir, student: str, assignment: str) -> bool:
    """nbgrader's rule for a hand-in newer than its autograded copy (timestamp.txt of each)."""
    new = _folder(coursedir, "submitted_directory", student, assignment) / "timestamp.txt"
    old = _folder(coursedir, "autograded_directory", student, assignment) / "timestamp.txt"
    try:
        a = handin_time.parse_time(handin_time.read_stamp(new) or "")
        b = handin_time.parse_time(handin_time.read_stamp(old) or "")
    except (OSError, ValueError):
        return False
    return a > b


HANDIN_DIGEST = ".handin.sha256"  # in an autograded folder: the notebooks of the hand-in it graded (regrade.install)


def handin_digest(folder: Path) -> str:
    """The notebooks of a hand-in folder as they are now (names and bytes), as one digest."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(folder.glob("*.ipynb")):
        if p.is_file() and not p.is_symlink():
            h.update(p.name.encode() + b"\0")
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def handin_replaced(coursedir, student: str, assignment: str) -> bool:
    """The notebook in submitted/ is not the one its autograded folder graded, though its timestamp.txt is
    not newer (a file put over it by hand, keeping the time): nbgrader's rule would skip it for ever."""
    graded = _folder(coursedir, "autograded_directory", student, assignment) / HANDIN_DIGEST
    try:
        then = graded.read_text().strip()
    except OSError:
        return False  # graded before the digest was kept: nothing to compare
    return then != handin_digest(_folder(coursedir, "submitted_directory", student, assignment))


def _autograded(coursedir, submission):
    """(gradebook notebook, its autograded notebook as read: JSON) for each notebook of the hand-in
    whose autograded file can be read."""
    folder = _folder(coursedir, "autograded_directory", submission.student.id, submission.assignment.name)
    for nb in submission.notebooks:
        try:
            book = json.loads((folder / f"{nb.name}.ipynb").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(book, dict):
            yield nb, book


def stale_maximum(coursedir, submission) -> str | None:
    """The maximum changed (CPU-only grading switched, a new release) since this hand-in was graded."""
    for nb, book in _autograded(coursedir, submission):
        cells = book.get("cells", [])
        then = sum(float(c.get("metadata", {}).get("nbgrader", {}).get("points", 0) or 0) for c in cells
                   if c.get("metadata", {}).get("nbgrader", {}).get("grade"))
        now = sum(float(g.max_score or 0) for g in nb.grades)
        if abs(then - now) > 1e-9:
            return (f"graded out of {then:g}, the maximum is now {now:g}: run `nbgrader autograde "
                    f"{submission.assignment.name} --force`")
    return None


def behind(coursedir, submission) -> str | None:
    """Why the gradebook does not hold the grading its autograded notebooks record, or None: each
    graded cell carries the automatic score its grading wrote (scores.GRADED), and the gradebook's
    differs (a gradebook restored from a backup, or copied from another course folder). Left alone,
    the export and the feedback pages would show one hand-in's scores beside another's verdicts,
    and autograde would skip it as done."""
    from grader.classroom.scores import GRADED

    for nb, book in _autograded(coursedir, submission):
        cells = book.get("cells", [])
        stamps = {c["metadata"].get("nbgrader", {}).get("grade_id"): c["metadata"][GRADED] for c in cells
                  if isinstance(c, dict) and isinstance(c.get("metadata"), dict) and GRADED in c["metadata"]}
        for g in nb.grades:
            if g.name not in stamps:
                continue  # graded before the stamp existed: nothing to compare
            then, now = stamps[g.name], g.auto_score
            if (then is None) != (now is None) or (then is not None and abs(float(then) - float(now)) > 1e-9):
                show = lambda v: "nothing" if v is None else f"{float(v):g}"  # noqa: E731
                cause = STOPPED_SAYS if regrade_stopped(coursedir, submission.student.id, submission.assignment.name) \
                    else "a gradebook restored from a backup?"
                return f"its autograded notebook scored {g.name} {show(then)}, the gradebook holds {show(now)}; {cause}"
    return None


def regrade_stopped(coursedir, student: str, assignment: str) -> bool:
    """Its autograded folder was put back in place of a stopped regrade's (grader.classroom.regrade), which
    may have saved new scores (behind) or repaired the hand-in's notebook (handin_replaced) before it stopped."""
    return (_folder(coursedir, "autograded_directory", student, assignment) / STOPPED).exists()


def graded_with(notebook: dict) -> dict[str, str]:
    """grade id -> text of each locked code cell (tests, given code) of a notebook as read (JSON):
    autograde puts the gradebook's text there, so an autograded notebook holds what it was graded with."""
    out = {}
    for c in notebook.get("cells", []):
        meta = c.get("metadata", {}).get("nbgrader", {})
        if c.get("cell_type") == "code" and meta.get("locked") and meta.get("grade_id"):
            src = c.get("source", "")
            out[meta["grade_id"]] = "".join(src) if isinstance(src, list) else src
    return out


def locked_now(notebook) -> dict[str, str]:
    """grade id -> text of each locked code cell of a gradebook Notebook (the release as it is now)."""
    return {c.name: c.source for c in notebook.source_cells if c.locked and c.cell_type == "code"}


def _stale_cells(coursedir, submission) -> str | None:
    """Locked cells (tests, given code) released again with another text since this hand-in was graded."""
    changed = []
    for nb, book in _autograded(coursedir, submission):
        then = graded_with(book)
        changed += [gid for gid, text in sorted(locked_now(nb.notebook).items()) if gid in then and then[gid] != text]
    if changed:
        return (f"graded with an earlier text of {', '.join(changed)} (released again since): run `nbgrader "
                f"autograde {submission.assignment.name} --force`")
    return None


def of(gb, coursedir, assignment, student_id: str, records=None) -> Standing:
    """The standing of `student_id`'s hand-in of `assignment` (a gradebook Assignment)."""
    from nbgrader.api import MissingEntry

    st = Standing(assignment.name, student_id, duedate=due_for(coursedir.root, assignment, student_id),
                  max_score=float(assignment.max_score or 0))
    there = handed_in(coursedir, student_id, assignment.name)
    try:
        sub = gb.find_submission(assignment.name, student_id)
    except MissingEntry:
        sub = None
    if there:
        t = time_of(coursedir, assignment, student_id, records)
        st.timestamp, st.checks = t.at, list(t.flags)
    elif sub is not None:
        st.timestamp = sub.timestamp
    if sub is None:
        if there and _cohort_failed(coursedir, assignment.name, student_id):
            log = job_log(Path("autograded") / LOGS / assignment.name, student_id)
            st.status = f"NOT GRADED: its cohort job did not finish ({log}); run the cohort command again"
        elif there:
            st.status = (f"pending: collected, not autograded yet (run `nbgrader autograde {assignment.name}`)")
        else:
            st.raw = st.penalty = st.score = 0.0
        return st
    why = ungraded_reason(coursedir, sub)
    regrading = _regrading(coursedir, student_id, assignment.name)
    if why and not regrading:
        st.status = f"NOT GRADED: {why}"
        return st
    grades = [g for nb in sub.notebooks for g in nb.grades]
    st.raw = sum(grade_score(g) for g in grades)
    manual = [g.manual_score for g in grades if g.manual_score is not None]
    st.manual = float(sum(manual)) if manual else None
    st.days_late = handin_time.days_late(st.timestamp, st.duedate)
    st.penalty = sum(penalty(sum(grade_score(g) for g in nb.grades), st.days_late) for nb in sub.notebooks)
    st.score = max(0.0, st.raw - st.penalty)
    st.status = "late" if st.days_late else "graded"
    if there and _resubmitted(coursedir, student_id, assignment.name):
        st.status = (f"pending: handed in again after grading; these are the earlier hand-in's scores "
                     f"(run `nbgrader autograde {assignment.name}`)")
    elif there and not regrading and handin_replaced(coursedir, student_id, assignment.name):
        if regrade_stopped(coursedir, student_id, assignment.name):  # its hand-in check repaired the notebook
            st.status = (f"pending: {STOPPED_SAYS}; these are the gradebook's scores (run `nbgrader autograde "
                         f"{assignment.name}`)")
        else:
            st.status = (f"pending: its notebook in submitted/ was replaced after grading (its timestamp.txt is no "
                         f"newer); these are the graded one's scores (run `nbgrader autograde {assignment.name}`)")
    elif there and not regrading and (gone := behind(coursedir, sub)):
        st.status = (f"pending: the gradebook does not hold its latest grading ({gone}); these are the gradebook's "
                     f"scores (run `nbgrader autograde {assignment.name}`)")
    if regrading:
        st.status = (f"pending: being autograded again (or its regrade was stopped); these are the gradebook's "
                     f"scores now (export again once `nbgrader autograde {assignment.name}` has ended)")
    for stale in (stale_maximum(coursedir, sub), _stale_cells(coursedir, sub)):
        if stale:
            st.checks.append(stale)
    if not there:  # graded, but the hand-in it rests on is gone: its folder moved, or renamed to the
        # student's new id (whose hand-in is then graded again under that id: one person, two rows)
        st.checks.append(f"its hand-in is no longer in submitted/{student_id}/{assignment.name} (moved, or the "
                         f"student's id renamed?): these grades stand until `nbgrader db student remove "
                         f"{student_id} --force`")
    return st


def days_late(submission) -> int:
    """Started days late of a gradebook submission, by the due date that counts for its student."""
    return handin_time.days_late(submission.timestamp,
                                 due_for(_root_of(submission), submission.assignment, submission.student.id))


def set_penalties(submission) -> list[tuple[float | None, float | None]]:
    """Each notebook's late penalty from its score now, the due date that counts for the student and
    the hand-in's time in the gradebook; the (old, new) pairs that changed."""
    days = days_late(submission)
    changed = []
    for nb in submission.notebooks:
        new = penalty(sum(grade_score(g) for g in nb.grades), days) or None
        if (nb.late_submission_penalty or 0.0) != (new or 0.0):
            changed.append((nb.late_submission_penalty, new))
            nb.late_submission_penalty = new
    return changed


def refresh(gb, coursedir, submission, log=None, records=None) -> list[str]:
    """Write the standing's time and penalties into the gradebook rows nbgrader's own views read
    (submission.timestamp, each notebook's late_submission_penalty); what changed, as text."""
    changes = []
    student, name = submission.student.id, submission.assignment.name
    if handed_in(coursedir, student, name):
        t = time_of(coursedir, submission.assignment, student, records)
        if t.at != submission.timestamp:
            changes.append(f"{student} {name}: handed in {handin_time.show(t.at)} (was {handin_time.show(submission.timestamp)})")
            submission.timestamp = t.at
        for flag in t.flags:
            if log is not None:
                log.warning("%s %s: %s", student, name, flag)
    for old, new in set_penalties(submission):
        changes.append(f"{student} {name}: late penalty {old or 0:g} -> {new or 0:g}")
    for c in changes:
        if log is not None:
            log.warning("%s", c)
    return changes


def refresh_assignment(gb, coursedir, assignment_name: str, log=None) -> list[str]:
    records = handin_time.record(coursedir.root)
    out = []
    for sub in gb.assignment_submissions(assignment_name):
        out += refresh(gb, coursedir, sub, log, records)
    gb.db.commit()
    return out


# ------------------------------------------------------------------ every gradebook write
def _on_flush(session, context, instances):
    """A manual score, a due date or a hand-in's time changed (the formgrader, `nbgrader db`,
    a script): recompute the penalties of what it touches, in the same commit."""
    from nbgrader.api import Assignment, Grade, SubmittedAssignment
    from sqlalchemy import inspect

    touched = set()
    for obj in list(session.dirty) + list(session.new):
        try:
            state = inspect(obj)
        except Exception:  # noqa: BLE001 - not a mapped object
            continue
        if isinstance(obj, Grade) and (state.attrs.manual_score.history.has_changes()
                                       or state.attrs.extra_credit.history.has_changes()):
            if obj.notebook is not None:
                touched.add(obj.notebook.assignment)
        elif isinstance(obj, Assignment) and state.attrs.duedate.history.has_changes():
            touched.update(obj.submissions)
        elif isinstance(obj, SubmittedAssignment) and state.attrs.timestamp.history.has_changes():
            touched.add(obj)
    with session.no_autoflush:
        for sub in touched:
            if sub is not None:
                set_penalties(sub)


def _net_scores(api_method):
    """The formgrader's submission lists show the score after the late penalty (as grades.csv),
    with raw_score and late_submission_penalty beside it."""
    def wrapped(self, *args, **kwargs):
        from nbgrader.api import MissingEntry

        out = api_method(self, *args, **kwargs)
        # get_student_submissions calls get_submission: each dict is netted once
        subs = [s for s in (out if isinstance(out, list) else [out]) if isinstance(s, dict)
                and s.get("autograded") and s.get("score") is not None and "raw_score" not in s]
        if subs:
            with self.gradebook as gb:  # one gradebook for the whole list
                for sub in subs:
                    try:
                        pen = float(gb.find_submission(sub["name"], sub["student"]).late_submission_penalty or 0.0)
                    except MissingEntry:
                        continue
                    sub["raw_score"], sub["late_submission_penalty"] = sub["score"], pen
                    sub["score"] = max(0.0, float(sub["score"]) - pen)
        return out
    return wrapped


def install(percent_per_day: float) -> None:
    """From course/nbgrader_config.py: the penalty rate, and penalties recomputed on every
    gradebook write in this process (idempotent)."""
    PERCENT_PER_DAY[0] = float(percent_per_day)
    from nbgrader.apps.api import NbGraderAPI
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    if not event.contains(Session, "before_flush", _on_flush):
        event.listen(Session, "before_flush", _on_flush)
    if not getattr(NbGraderAPI, "_course_net_scores", False):
        NbGraderAPI.get_submission = _net_scores(NbGraderAPI.get_submission)
        NbGraderAPI.get_submissions = _net_scores(NbGraderAPI.get_submissions)
        NbGraderAPI.get_student_submissions = _net_scores(NbGraderAPI.get_student_submissions)
        NbGraderAPI._course_net_scores = True


def everyone(gb, coursedir) -> list[str]:
    """Students of the gradebook and anyone with a folder under submitted/ (a hand-in from a
    student nobody added is still a hand-in)."""
    ids = {s.id for s in gb.students}
    base = Path(coursedir.format_path(coursedir.submitted_directory, ".", "."))
    if base.is_dir():
        ids |= {d.name for d in base.iterdir() if d.is_dir() and not d.name.startswith(".")}
    return sorted(ids)

