"""nbgrader's exchange, seen from `autograde`: a hand-in waiting in the exchange that is newer than
the one collected (or one never collected) is named before grading, so an instructor never
grades a stale hand-in without a word (course/README.md, "With a JupyterHub exchange").

`install()` (course/nbgrader_config.py) makes `nbgrader autograde` log, for each student of the
assignment(s) it grades, the exchange's newest hand-in when `submitted/` holds an older one or
none, and say to run `nbgrader collect` first. It reads the exchange through nbgrader's own
collector (its configured root and its reading of `student+assignment+time` folder names) and
changes nothing; without an exchange it says nothing.

`nbgrader release_feedback` releases every page it can: one whose hand-in came by hand (put in
submitted/, so no `submission_secret.txt` to name the released page by) is named and skipped,
where nbgrader would stop at it with a FileNotFoundError and release none after it. A page that no
longer shows what the gradebook says (made before a regrade, a manual grade, a moved due date) is
not released either: it is named, and the command exits 1 after releasing the others.
"""
from __future__ import annotations

import fnmatch
import os


def uncollected(coursedir, config) -> list[tuple[str, str, str]]:
    """(student, assignment, time) of every hand-in in the exchange newer than what submitted/
    holds for that student and assignment (or with nothing there)."""
    from nbgrader.exchange.default.collect import ExchangeCollect

    if not coursedir.course_id:
        return []
    collector = ExchangeCollect(coursedir=coursedir, config=config)
    inbound = os.path.join(collector.root, coursedir.course_id, "inbound")
    try:
        names = os.listdir(inbound)
    except OSError:
        return []  # no exchange here (or not readable): nothing to compare with
    newest: dict[tuple[str, str], object] = {}
    for name in names:
        parts = name.rsplit("+", 3)
        if len(parts) < 3:
            continue
        try:
            rec = collector._path_to_record(os.path.join(inbound, name))
        except Exception:  # noqa: BLE001 - a folder nbgrader itself could not read is not a hand-in
            continue
        key = (rec["username"], parts[1])
        if not (fnmatch.fnmatch(key[0], coursedir.student_id or "*")
                and fnmatch.fnmatch(key[1], coursedir.assignment_id or "*")):
            continue
        if key not in newest or rec["timestamp"] > newest[key]:
            newest[key] = rec["timestamp"]
    out = []
    for (student, assignment), when in sorted(newest.items()):
        folder = coursedir.format_path(coursedir.submitted_directory, student, assignment)
        have = coursedir.get_existing_timestamp(folder) if os.path.isdir(folder) else None
        if have is None or when > have:
            out.append((student, assignment, str(when)))
    return out


def warn_uncollected(converter) -> None:
    late = uncollected(converter.coursedir, converter.config)
    for student, assignment, when in late:
        converter.log.warning("%s handed in %s again (the exchange, %s): what is in submitted/ is older or "
                              "missing and is what this run grades", student, assignment, when)
    if late:
        names = sorted({a for _, a, _ in late})
        converter.log.warning("run `nbgrader collect %s` first, then autograde again: the newer hand-ins are "
                              "then graded", " / ".join(names))


def without_exchange_files(pattern: str) -> list[str]:
    """Students whose feedback folder (matching nbgrader's `pattern`) has a page but not the two
    files `nbgrader submit` leaves: their hand-in came by hand, not through the exchange."""
    import glob

    from grader.classroom.hardening import EXCHANGE_FILES

    out = []
    for folder in sorted(glob.glob(pattern)):
        if glob.glob(os.path.join(glob.escape(folder), "*.html")) and \
                not all(os.path.isfile(os.path.join(folder, n)) for n in EXCHANGE_FILES):
            out.append(os.path.basename(os.path.dirname(folder)))
    return out


def install() -> None:
    from nbgrader.converters.autograde import Autograde
    from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

    if getattr(Autograde, "_tc_exchange", False):
        return
    start = Autograde.start
    release = ExchangeReleaseFeedback.copy_files

    def release_what_can_be(self):
        # nbgrader stops at the first page without them (FileNotFoundError) and releases nothing
        # after it: a hand-in put in submitted/ by hand has no page to release through the exchange
        by_hand = without_exchange_files(self.src_path)
        for student in by_hand:
            self.log.warning("not released: %s's hand-in of %s did not come through the exchange (no "
                             "submission_secret.txt): give them feedback/%s/%s/ by hand", student,
                             self.coursedir.assignment_id, student, self.coursedir.assignment_id)
        # a page made before a regrade, a manual grade or a moved due date: the student would fetch
        # scores the gradebook no longer holds, so it waits for `generate_feedback`
        from grader.classroom.regrade import stale_feedback

        stale = [(s, why) for s, why in stale_feedback(self.coursedir, self.src_path) if s not in by_hand]
        for student, why in stale:
            self.log.error("not released: %s's feedback page of %s is stale (%s): run `nbgrader generate_feedback "
                           "%s`, then release_feedback again", student, self.coursedir.assignment_id, why,
                           self.coursedir.assignment_id)
        before = self.coursedir.student_id_exclude
        if by_hand or stale:
            self.coursedir.student_id_exclude = ",".join(filter(None, [before, *by_hand, *(s for s, _ in stale)]))
        try:
            out = release(self)
        finally:
            self.coursedir.student_id_exclude = before
        if stale:
            self.fail(f"{len(stale)} stale feedback page(s) not released (the others were): run `nbgrader "
                      f"generate_feedback {self.coursedir.assignment_id}`, then release_feedback again")
        return out

    ExchangeReleaseFeedback.copy_files = release_what_can_be

    def start_after_looking(self):
        try:
            warn_uncollected(self)
        except Exception as e:  # noqa: BLE001 - advice only: never stops a grading run
            self.log.warning("could not compare the exchange with submitted/: %s", e)
        return start(self)

    Autograde.start = start_after_looking
    Autograde._tc_exchange = True
