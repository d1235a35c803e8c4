"""Due dates set or lost through nbgrader's own commands (course/README.md, "A term"), installed by
course/nbgrader_config.py. The due dates live in the gradebook; the course reads
and applies them in grader.classroom.standing.

- `nbgrader db assignment add` and `import` read a due date as the course reads every date (a day-first
  one is refused, nothing changed), keep A's due date when given none (nbgrader would erase it, and
  every penalty with it), and name the penalties a new one moved.
- `nbgrader db assignment remove A --force` keeps A's due date in the term's record (.term.json), and
  the next A made without one (`generate_assignment A`) gets it back: nbgrader would make A again with
  none, and every late hand-in graded again would be on time.
"""
from __future__ import annotations

from grader.classroom import handin_time, standing


def _read_due(gb, name: str, value, log):
    """A due date given to `nbgrader db assignment add/import`, read as the course reads every date (year
    first; `03/12/2026` is refused, never guessed as nbgrader's parser would), or the assignment's own
    due date where none was given (nbgrader would erase it, and every late penalty with it)."""
    from nbgrader.api import MissingEntry

    if value is None or (isinstance(value, str) and not value.strip()):
        try:
            kept = gb.find_assignment(name).duedate
        except MissingEntry:
            return None
        if kept is not None:
            log.warning("%s keeps its due date %s UTC (no due date given; to change it: `python -m "
                        "grader.classroom.term schedule %s=DATE`)", name, kept, name)
        return kept
    return value if not isinstance(value, str) else handin_time.parse_time(value, f"{name} due date")


def _keep_due_dates() -> None:
    """`nbgrader db assignment remove A --force` deletes A's row and its due date with it; the next
    `generate_assignment A` makes A again with none, so every late hand-in of A was graded on time. The
    due date is kept in the term's record when A is removed, and given back to the next A made without
    one (a due date given then counts instead), saying so both times."""
    from nbgrader.api import Gradebook
    from traitlets.log import get_logger

    remove, add = Gradebook.remove_assignment, Gradebook.add_assignment

    def remove_keeping_due(gb, name):
        due = gb.find_assignment(name).duedate  # MissingEntry: nbgrader's own message
        out = remove(gb, name)
        root = standing.course_root_of(gb.db)
        if due is not None and root is not None:
            try:
                data = standing.term(root, strict=True)
                data.setdefault(standing.REMOVED_DUE, {})[name] = due.isoformat(sep=" ")
                standing.save_term(root, data)
                get_logger().warning("%s's due date %s UTC is kept in %s: a new release of %s (`nbgrader "
                                     "generate_assignment %s`) gets it back", name, due, standing.TERM_FILE, name, name)
            except (OSError, ValueError) as e:
                get_logger().error("%s's due date was %s UTC; it could not be kept (%s): give it again after the "
                                   "next release (`python -m grader.classroom.term schedule %s=DATE`)",
                                   name, due, e, name)
        return out

    def add_with_kept_due(gb, name, **kw):
        root = standing.course_root_of(gb.db)
        data = standing.term(root) if root is not None else {}
        kept = data.get(standing.REMOVED_DUE, {}).get(name)
        if kept and kw.get("duedate") is None:
            kw["duedate"] = handin_time.parse_time(kept)
            get_logger().warning("%s gets back its due date %s UTC (kept when it was removed from the gradebook; "
                                 "to change it: `python -m grader.classroom.term schedule %s=DATE`)", name, kept, name)
        out = add(gb, name, **kw)
        if kept:
            data[standing.REMOVED_DUE].pop(name)
            standing.save_term(root, data)
        return out

    Gradebook.remove_assignment, Gradebook.add_assignment = remove_keeping_due, add_with_kept_due


def _guard_due_dates(app_class) -> None:
    """`nbgrader db assignment add` and `import` set due dates through the course's reading of dates, keep
    a due date they were not given, and say which penalties moved (course/README.md, "A term")."""
    import csv

    from nbgrader.api import Gradebook

    start = app_class.start

    def checked_start(self):
        if app_class.__name__ == "DbAssignmentImportApp" and len(self.extra_args) == 1:
            try:  # every date read before anything is written: one unreadable row changes nothing
                with open(self.extra_args[0], newline="") as f:
                    for row in csv.DictReader(f):
                        row = {(k or "").strip().lower(): v for k, v in row.items()}
                        if (row.get("duedate") or "").strip():
                            handin_time.parse_time(row["duedate"], f"{row.get('name', '?')} due date")
            except ValueError as e:
                self.fail(f"{e} (nothing was changed)")
            except OSError:
                pass  # nbgrader says the file is missing
        original = Gradebook.update_or_create_assignment

        def update(gb, name, **kw):
            if "duedate" not in kw:
                return original(gb, name, **kw)
            try:
                kw["duedate"] = _read_due(gb, name, kw["duedate"], self.log)
            except ValueError as e:
                self.fail(f"{e} (nothing was changed)")
            before = {sub.student.id: float(sub.late_submission_penalty or 0) for sub in
                      (gb.assignment_submissions(name) if name in {a.name for a in gb.assignments} else [])}
            out = original(gb, name, **kw)
            for sub in gb.assignment_submissions(name):
                now = float(sub.late_submission_penalty or 0)
                if sub.student.id in before and before[sub.student.id] != now:
                    self.log.warning("%s %s: late penalty %g -> %g", sub.student.id, name, before[sub.student.id], now)
            return out

        Gradebook.update_or_create_assignment = update
        try:
            return start(self)
        finally:
            Gradebook.update_or_create_assignment = original

    app_class.start = checked_start


def install() -> None:
    """Idempotent: each command patched once per process."""
    from nbgrader.api import Gradebook
    from nbgrader.apps.dbapp import DbAssignmentAddApp, DbAssignmentImportApp

    for app in (DbAssignmentAddApp, DbAssignmentImportApp):
        if not getattr(app, "_course_due_dates", False):
            _guard_due_dates(app)
            app._course_due_dates = True
    if not getattr(Gradebook, "_course_keeps_due", False):
        _keep_due_dates()
        Gradebook._course_keeps_due = True
