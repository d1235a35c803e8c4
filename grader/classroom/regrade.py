"""Regrades that never lose a result, and feedback that a stray file cannot stop: two changes
to nbgrader 0.9.6's converters, installed by course/nbgrader_config.py (`install()`), so the
guide's plain commands get them.

- `nbgrader autograde --force` (or a newer submission) removes a student's autograded folder
  BEFORE grading it again, and removes the half-written one when grading fails (a missing
  sandbox, a crash, Ctrl-C): the earlier result and its feedback were lost. Here the earlier
  folder is kept aside (autograded/.regrade/<student>/<assignment>, hidden from nbgrader's
  globs and from every sandbox, like the rest of autograded/) and put back unless the new
  grading succeeded. A run killed outright (SIGKILL) leaves the copy, and the next run of any
  autograde puts it back first: the course's autograde lock (grader.classroom.course_lock) makes
  sure no autograde is running that owns it. A folder that is no finished grading with nothing to put back
  (a first grading killed outright), or whose grades the gradebook no longer holds (a student
  removed and added back), is graded again without --force (`not_done`): nbgrader's skip rule
  would skip it for ever.
- A regrade stopped by SIGTERM (`kill`, `timeout`, a scheduler) or SIGHUP (a dropped SSH session)
  is undone as one stopped by Ctrl-C: both signals become KeyboardInterrupt while autograde
  runs, so the earlier folder is put back before the command ends.
- `nbgrader generate_feedback` fails a student whose autograded folder holds a notebook that is
  not part of the assignment (a stray copy); such notebooks are skipped, with a warning.
- It refuses an autograded notebook that is not a finished grading (a graded cell without the
  trusted grader's verdict: a regrade killed half-way), saying which command fixes it, and keeps
  no stale page silently: a page older than its autograded notebook, or whose score or late
  penalty is not what the gradebook says now (a manual grade, a moved due date), is made again
  without --force, and the log says why.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

from grader.classroom.standing import KEEP, STOPPED  # under autograded/: where a regrade keeps the earlier result


def _aside(coursedir, assignment: str, student: str) -> Path:
    return Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")) / KEEP / student / assignment


def _put_back(kept: Path, dest: Path, log) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(kept, dest)
    # the stopped grading may have saved new scores before it stopped: standing.behind then says so (not
    # "a backup"), and the next plain autograde grades it again (not_done)
    (dest / STOPPED).write_text("")
    log.warning("kept the earlier result of %s: the new grading did not finish (where it had saved new scores "
                "already, the next plain `nbgrader autograde` grades it again)", dest)


def restore_all(coursedir, log) -> None:
    """Every copy kept aside is from a grading that never finished: put each back."""
    base = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")) / KEEP
    for kept in sorted(base.glob("*/*")) if base.is_dir() else []:
        _put_back(kept, Path(coursedir.format_path(coursedir.autograded_directory, kept.parent.name, kept.name)), log)


@contextmanager
def stops_like_ctrl_c():
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread while this lasts (then the
    earlier handlers are back): a dropped SSH session undoes a regrade as Ctrl-C does."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []

    def stop(signum, frame):
        if caught:  # once: `timeout` and a closing terminal may signal twice
            return
        caught.append(signum)
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


TRUSTED = "Graded by the course's trusted grader"


def unfinished(notebook: Path) -> str | None:
    """Why an autograded notebook is not a finished grading (None when it is): every graded cell
    carries the trusted grader's verdict once autograde has finished (TrustedGrade); the copy
    nbgrader writes before executing (its sanitizing pass) has none."""
    import json

    try:
        nb = json.loads(notebook.read_text())
    except (OSError, ValueError) as e:
        return f"cannot be read ({e.__class__.__name__})"
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell.get("cell_type") == "code" and TRUSTED not in json.dumps(cell.get("outputs", [])):
            return f"its graded cell {meta.get('grade_id')} has no verdict of the trusted grader"
    return None


_TOTAL = re.compile(r"\(Score: (-?[\d.]+) / ([\d.]+)\)</h4>")
_LATE = re.compile(r"Late submission penalty \(Score: -([\d.]+)\)")


def stale_page(page: Path, autograded: Path, gb, notebook: str, assignment: str, student: str) -> str | None:
    """Why an existing feedback page no longer shows what it should (None when it does)."""
    from nbgrader.api import MissingEntry

    try:
        if page.stat().st_mtime < autograded.stat().st_mtime:
            return "older than its autograded notebook (a regrade)"
        text = page.read_text(errors="replace")
    except OSError:
        return None
    try:
        nb = gb.find_submission_notebook(notebook, assignment, student)
    except MissingEntry:
        return None
    penalty = float(nb.late_submission_penalty or 0.0)
    want = (round(float(nb.score) - penalty, 2), round(float(nb.max_score), 2), round(penalty, 2))
    total, late = _TOTAL.search(text), _LATE.search(text)
    shown = (round(float(total.group(1)), 2), round(float(total.group(2)), 2),
             round(float(late.group(1)), 2) if late else 0.0) if total else None
    if shown != want:
        return (f"it shows score {shown[0]:g} / {shown[1]:g}, penalty {shown[2]:g}; the gradebook says "
                f"{want[0]:g} / {want[1]:g}, penalty {want[2]:g}" if shown else "its score cannot be read")
    return None


def stale_feedback(coursedir, pattern: str) -> list[tuple[str, str]]:
    """(student, why) for each feedback folder matching nbgrader's `pattern` (feedback/<student>/<A>)
    whose pages are not what the gradebook says now: made before a regrade, a manual grade, a moved
    due date or an extension, or over a grading the gradebook no longer holds. `release_feedback`
    releases none of them (the student would fetch a stale page); `generate_feedback` makes them again."""
    import glob

    from nbgrader.api import Gradebook, MissingEntry

    from grader.classroom import standing

    url = coursedir.db_url
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        return []
    out = []
    with Gradebook(url, coursedir.course_id) as gb:
        for folder in sorted(glob.glob(pattern)):
            pages = sorted(Path(folder).glob("*.html"))
            if not pages:
                continue
            assignment, student = Path(folder).name, Path(folder).parent.name
            src = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                out.append((student, "the gradebook holds no grades for it"))
                continue
            standing.refresh(gb, coursedir, sub)  # as generate_feedback does: the standing as it is now
            gb.db.commit()
            why = standing.behind(coursedir, sub)
            for page in pages if why is None else []:
                book = src / f"{page.stem}.ipynb"
                if not book.is_file():
                    continue
                half = unfinished(book)
                why = f"its autograded notebook is not a finished grading: {half}" if half else \
                    stale_page(page, book, gb, page.stem, assignment, student)
                if why:
                    break
            if why:
                out.append((student, why))
    return out


def _maxima(coursedir) -> dict[str, tuple[float, int, dict]]:
    """assignment -> (its maximum, how many hand-ins it has, the text of its locked code cells) in
    the gradebook, without creating one."""
    url = coursedir.db_url
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        return {}
    from nbgrader.api import Gradebook

    from grader.classroom.standing import locked_now

    with Gradebook(url, coursedir.course_id) as gb:
        return {a.name: (float(a.max_score or 0), len(a.submissions),
                         {(nb.name, gid): text for nb in a.notebooks for gid, text in locked_now(nb).items()})
                for a in gb.assignments}


def not_done(coursedir, assignment: str, student: str) -> str | None:
    """Why an existing autograded folder is no finished grading that nbgrader's skip rule (the folder
    exists, the hand-in is not newer) may skip, or None: the gradebook holds no grades for it (the
    student removed with `nbgrader db student remove --force` and added back) or other scores than
    its grading wrote (a gradebook restored from a backup: standing.behind), or a notebook in it
    has no trusted verdict (a first autograde killed outright: nothing earlier to put back).
    Skipped, such a hand-in would stay pending or NOT GRADED for ever while grades.csv and
    generate_feedback ask for the very autograde that skips it."""
    from nbgrader.api import Gradebook, MissingEntry

    dest = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
    if not dest.is_dir():
        return None
    half = sorted(p.name for p in dest.glob("*.ipynb") if unfinished(p))
    if half:
        return f"{', '.join(half)} is not a finished grading (an autograde killed half-way?)"
    from grader.classroom.standing import STOPPED_SAYS, behind, handin_replaced, regrade_stopped

    if handin_replaced(coursedir, student, assignment):  # the stopped regrade's hand-in check may have repaired it
        return STOPPED_SAYS if regrade_stopped(coursedir, student, assignment) else \
            "its notebook in submitted/ is not the one graded (replaced, with a timestamp.txt no newer)"
    url = coursedir.db_url
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        return None
    with Gradebook(url, coursedir.course_id) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return "the gradebook holds no grades for it (the student removed and added back?)"
        gone = behind(coursedir, sub)
        if gone:
            return f"the gradebook does not hold its latest grading: {gone}"
    (dest / STOPPED).unlink(missing_ok=True)  # the gradebook holds what was put back: nothing to say any more
    return None


def install() -> None:
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import Autograde, GenerateFeedback

    if getattr(Autograde, "_course_regrade", False):
        return
    init_destination, convert_notebooks = Autograde.init_destination, Autograde.convert_notebooks
    post_hook = Autograde.run_post_convert_hook

    def safe_init_destination(self, assignment_id, student_id):
        dest = Path(os.path.normpath(self._format_dest(assignment_id, student_id)))
        kept = _aside(self.coursedir, assignment_id, student_id)
        if dest.is_dir():
            if kept.exists():
                shutil.rmtree(kept)
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(dest, kept, symlinks=True)
        why = None if self.force else not_done(self.coursedir, assignment_id, student_id)
        again = why is not None
        if again:
            self.log.warning("%s %s: autograded before, but %s: grading it again", student_id, assignment_id, why)
            self.force = True
        try:
            go = init_destination(self, assignment_id, student_id)
        finally:
            if again:
                self.force = False
        if not go and kept.exists():
            shutil.rmtree(kept)  # skipped: the folder was not touched
        self._course_current = kept if go else None
        self._course_graded = (assignment_id, student_id) if go else None
        return go

    def finished(self):
        from grader.classroom.standing import HANDIN_DIGEST, handin_digest

        graded = getattr(self, "_course_graded", None)
        dest = Path(self._format_dest(*graded)) if graded is not None else None
        if dest is not None and dest.is_dir():  # what was graded (after the hand-in check's repairs), for
            # handin_replaced; first: a disk full here still puts the earlier result back
            (dest / HANDIN_DIGEST).write_text(handin_digest(Path(self._format_source(*graded))) + "\n")
        self._course_graded = None
        kept = getattr(self, "_course_current", None)
        if kept is not None and kept.exists():
            shutil.rmtree(kept)  # graded: the new result replaces the old one
        self._course_current = None
        return post_hook(self)

    def safe_convert_notebooks(self):
        restore_all(self.coursedir, self.log)
        try:
            with stops_like_ctrl_c():
                return convert_notebooks(self)
        finally:
            restore_all(self.coursedir, self.log)

    Autograde.init_destination = safe_init_destination
    Autograde.run_post_convert_hook = finished
    Autograde.convert_notebooks = safe_convert_notebooks

    init_notebooks = GenerateFeedback.init_notebooks

    def known_notebooks(self):
        init_notebooks(self)
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            for folder, books in self.assignments.items():
                m = Path(folder)
                try:
                    names = {nb.name for nb in gb.find_assignment(m.name).notebooks}
                except MissingEntry:
                    continue
                stray = [b for b in books if Path(b).stem not in names]
                for b in stray:
                    self.log.warning("Skipping %s: not a notebook of assignment %s", b, m.name)
                self.assignments[folder] = [b for b in books if Path(b).stem in names]

    GenerateFeedback.init_notebooks = known_notebooks

    from grader.classroom import standing

    fb_init_destination, fb_convert = GenerateFeedback.init_destination, GenerateFeedback.convert_notebooks

    def checked_destination(self, assignment_id, student_id):
        src = Path(self._format_source(assignment_id, student_id))
        dest = Path(self._format_dest(assignment_id, student_id))
        books = [Path(b) for b in self.notebooks]
        for b in books:
            why = unfinished(b)
            if why:
                msg = (f"{student_id} {assignment_id}: {b.name} is not a finished grading ({why}; a regrade "
                       f"stopped half-way?): no feedback made, the earlier page (if any) kept. Run `nbgrader "
                       f"autograde {assignment_id} --student {student_id}`, then generate_feedback again")
                self.log.error(msg)
                self._course_refused = getattr(self, "_course_refused", []) + [msg]
                return False
        stale = False
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            # the page shows the standing as it is now (a time record added, a penalty rule)
            try:
                sub = gb.find_submission(assignment_id, student_id)
                standing.refresh(gb, self.coursedir, sub, self.log)
                gb.db.commit()
            except MissingEntry:
                sub = None
            gone = standing.behind(self.coursedir, sub) if sub is not None else None
            # graded out of another maximum (points changed, CPU-only switched): the page would show
            # a score out of the new maximum that was earned out of the old one (4 / 3)
            other = standing.stale_maximum(self.coursedir, sub) if sub is not None and not gone else None
            if gone or other:
                msg = (f"{student_id} {assignment_id}: the gradebook does not hold its latest grading ({gone}): no "
                       f"feedback made, the earlier page (if any) kept. Run `nbgrader autograde {assignment_id}` "
                       f"(it grades it again), then generate_feedback again") if gone else (
                       f"{student_id} {assignment_id}: {other}, then generate_feedback again: no feedback made "
                       f"until then, the earlier page (if any) kept")
                self.log.error(msg)
                self._course_refused = getattr(self, "_course_refused", []) + [msg]
                return False
            for b in books if not self.force and dest.is_dir() else []:
                page = dest / (b.stem + ".html")
                why = stale_page(page, src / b.name, gb, b.stem, assignment_id, student_id) \
                    if page.exists() else None
                if why:
                    self.log.warning("Regenerating the feedback of %s %s: the page is stale (%s)",
                                     student_id, assignment_id, why)
                    page.unlink()
                    stale = True
        return True if stale else fb_init_destination(self, assignment_id, student_id)

    def feedback_convert(self):
        from nbgrader.converters.base import NbGraderException

        self._course_refused = []
        try:  # a page's late penalty would ignore every extension
            standing.term(self.coursedir.root, strict=True)
        except ValueError as e:
            self.log.error("generate_feedback refused: %s", e)
            raise NbGraderException(str(e)) from None
        fb_convert(self)
        if self._course_refused:
            raise NbGraderException("feedback refused for %d hand-in(s):\n%s" % (
                len(self._course_refused), "\n".join(self._course_refused)))

    GenerateFeedback.init_destination = checked_destination
    GenerateFeedback.convert_notebooks = feedback_convert

    from nbgrader.converters import GenerateAssignment

    ga_convert = GenerateAssignment.convert_notebooks

    def generate(self):
        before = _maxima(self.coursedir)
        ga_convert(self)
        after = _maxima(self.coursedir)
        for name, (now, graded, cells) in sorted(after.items()):
            then, _, cells_then = before.get(name, (now, 0, cells))
            changed = sorted(gid for (nb, gid), text in cells.items() if cells_then.get((nb, gid), text) != text)
            if graded and changed:
                self.log.warning("%s: released again with another text of %s: the %d hand-in(s) graded already were "
                                 "graded with the earlier one. Run `nbgrader autograde %s --force`, then `nbgrader "
                                 "generate_feedback %s`; until then grades.csv flags them", name, ", ".join(changed),
                                 graded, name, name)
            if graded and abs(then - now) > 1e-9:
                self.log.warning("%s: its maximum changed from %g to %g (CPU-only grading switched, or the points "
                                 "changed): the %d hand-in(s) graded already were graded out of %g. Run `nbgrader "
                                 "autograde %s --force`, then `nbgrader generate_feedback %s`; until then grades.csv "
                                 "flags them", name, then, now, graded, then, name, name)

    GenerateAssignment.convert_notebooks = generate
    Autograde._course_regrade = True
