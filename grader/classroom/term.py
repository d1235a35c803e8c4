"""The term's schedule in one command (course/README.md, "A term"): due dates into the gradebook.

    python -m grader.classroom.term schedule FILE          lines "assignment,due[,opens]" (a CSV)
    python -m grader.classroom.term schedule A=DATE ...    e.g. 01=2026-12-01T23:59Z (name or prefix)
    python -m grader.classroom.term schedule               print the schedule the gradebook holds
    python -m grader.classroom.term refresh                bring every hand-in's time and penalty up to date
    python -m grader.classroom.term extend A STUDENT DATE  one student's later due date (DATE `none`: back to A's)

Run in the course folder (or pass --course). Dates are read by the course's one parser
(grader.classroom.handin_time: year first, `2026-12-01 23:59`; no zone means UTC; `03/12/2026` is
refused, not guessed). `opens` (optional) is when the assignment was handed out: a hand-in time
before it is flagged. Every assignment must have been generated (`nbgrader generate_assignment A`)
first; if one is unknown or a date unreadable, nothing is changed. A due date that moves
recomputes every penalty and status of that assignment at once (they are listed), in the
gradebook that feedback pages and the formgrader read and in the next export.
Exit 0, or 2 for an unknown assignment or a date that cannot be read.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from grader.classroom import standing
from grader.classroom.cohort import load_course, released, resolve
from grader.classroom.handin_time import parse_time
from grader.classroom.workflow import ROOT


def parse_schedule(items: list[str]) -> list[tuple[str, str, str]]:
    """[(assignment or prefix, due text, opens text or "")] from A=DATE arguments or one CSV file."""
    if len(items) == 1 and "=" not in items[0]:
        with open(items[0], newline="") as f:
            return [(r[0].strip(), r[1].strip(), r[2].strip() if len(r) > 2 else "") for r in csv.reader(f)
                    if len(r) >= 2 and r[0].strip() and not r[0].startswith("#") and r[0].strip() != "assignment"]
    out = []
    for item in items:
        name, sep, date = item.partition("=")
        if not sep:
            raise ValueError(f"'{item}' is not ASSIGNMENT=DATE")
        out.append((name.strip(), date.strip(), ""))
    return out


def set_due_dates(course, schedule: list[tuple[str, ...]]) -> list[str]:
    """Check everything first (names generated, dates readable), then set all of it; returns what
    changed in the hand-ins' penalties."""
    from nbgrader.api import Gradebook, MissingEntry

    plan = []
    if not course.db_path.exists():
        raise ValueError(f"no gradebook in {course.root}: run `nbgrader generate_assignment A` for each assignment first")
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        for name, date, *rest in schedule:
            assignment = resolve(course, name)
            try:
                gb.find_assignment(assignment)
            except MissingEntry:
                raise ValueError(f"{assignment} has not been generated yet: run `nbgrader generate_assignment "
                                 f"{assignment}` first, then schedule it (nothing was changed)") from None
            due = parse_time(date, f"{assignment} due date")
            opens = rest[0] if rest and rest[0] else ""
            plan.append((assignment, due, parse_time(opens, f"{assignment} opens") if opens else None))
        before = {(a, sub.student.id): (float(sub.late_submission_penalty or 0), standing.days_late(sub) > 0)
                  for a, _, _ in plan for sub in gb.assignment_submissions(a)}
        data = standing.term(course.root, strict=True)
        for assignment, due, opens in plan:
            gb.update_or_create_assignment(assignment, duedate=due)
            if opens is not None:
                data.setdefault("opens", {})[assignment] = opens.isoformat(sep=" ")
        if any(o for _, _, o in plan):
            standing.save_term(course.root, data)
        for assignment, _, _ in plan:
            standing.refresh_assignment(gb, course.coursedir, assignment)
        # what moved (the gradebook already recomputed it as the date changed: standing.install)
        changed = []
        for (a, student), (pen, late) in sorted(before.items()):
            sub = gb.find_submission(a, student)
            now = (float(sub.late_submission_penalty or 0), standing.days_late(sub) > 0)
            if now != (pen, late):
                changed.append(f"{student} {a}: late penalty {pen:g} -> {now[0]:g}"
                               + (f", {'late' if now[1] else 'on time'} now" if now[1] != late else ""))
    return changed


def extend(course, name: str, student: str, date: str) -> list[str]:
    """Give `student` their own due date for one assignment (an extension; `none` takes it back), kept in
    the term's record (.term.json) and read wherever a due date counts for that student; what it changed."""
    from nbgrader.api import Gradebook

    assignment = resolve(course, name)
    due = None if date.strip().lower() == "none" else parse_time(date, f"{assignment} extension for {student}")
    try:
        released(course, assignment)
    except ValueError as e:
        raise ValueError(f"{e} (nothing was changed)") from None
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        known = standing.everyone(gb, course.coursedir)
        if due is not None and student not in known:
            raise ValueError(f"no student '{student}' in the gradebook or submitted/ (add them first: `nbgrader db "
                             f"student add {student}`); the students: {', '.join(known[:20]) or 'none yet'}"
                             f"{' ...' if len(known) > 20 else ''} (nothing was changed)")
        data = standing.term(course.root, strict=True)
        given = data.setdefault("extensions", {}).setdefault(assignment, {})
        if due is None:
            given.pop(student, None)
        else:
            given[student] = due.isoformat(sep=" ")
        standing.save_term(course.root, data)
        return standing.refresh_assignment(gb, course.coursedir, assignment)


def refresh_all(course) -> list[str]:
    from nbgrader.api import Gradebook

    from grader.classroom.export import unmatched_records

    standing.term(course.root, strict=True)  # unreadable: refreshed without it, every extension would go
    out = []
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        for a in gb.assignments:
            out += standing.refresh_assignment(gb, course.coursedir, a.name)
        for line in unmatched_records(gb, course.coursedir):
            print(f"handin-times.csv: {line}; this line counts for nothing (student_id and assignment as in "
                  "submitted/)", file=sys.stderr)
    return out


def extensions(course) -> list[tuple[str, str, str]]:
    return [(a, st, due) for a, given in sorted(standing.term(course.root).get("extensions", {}).items())
            for st, due in sorted(given.items())]


def current(course) -> list[tuple[str, object]]:
    from nbgrader.api import Gradebook

    if not course.db_path.exists():
        return []
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        return [(a.name, a.duedate) for a in sorted(gb.assignments, key=lambda a: a.name)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.classroom.term", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sc = sub.add_parser("schedule", help="set (or show) the due dates of the term")
    sc.add_argument("items", nargs="*", metavar="FILE | ASSIGNMENT=DATE")
    rf = sub.add_parser("refresh", help="recompute every hand-in's time and late penalty in the gradebook")
    ex = sub.add_parser("extend", help="one student's own due date for an assignment (an extension)")
    ex.add_argument("assignment", help="its name or a unique prefix")
    ex.add_argument("student", help="the student's id")
    ex.add_argument("date", help="the student's due date (`none`: the assignment's again)")
    for p in (sc, rf, ex):
        p.add_argument("--course", type=Path, help="the course folder (default: this folder if it holds "
                                                   "nbgrader_config.py, else the repository's course/)")
    args = ap.parse_args(argv)
    root = args.course or (Path.cwd() if (Path.cwd() / "nbgrader_config.py").exists() else ROOT / "course")
    course = load_course(root)
    try:
        if args.cmd == "refresh":
            changed = refresh_all(course)
        elif args.cmd == "extend":
            changed = extend(course, args.assignment, args.student, args.date)
        elif args.items:
            changed = set_due_dates(course, parse_schedule(args.items))
        else:
            changed = []
    except (ValueError, OSError) as e:
        print(f"{args.cmd}: {e}", file=sys.stderr)
        return 2
    for line in changed:
        print(f"updated: {line}")
    if args.cmd == "refresh":
        print(f"{len(changed)} change(s); grades.csv, feedback pages (`nbgrader generate_feedback A`) and the "
              "formgrader now show the same numbers")
        return 0
    if args.cmd == "extend":
        dues = dict(current(course))
        for name, student, due in extensions(course):
            own, theirs = parse_time(due), dues.get(name)
            counts = (f"; {name}'s own due date is later and counts" if theirs is not None and theirs >= own
                      else "; no effect while it has no due date" if theirs is None else "")
            print(f"{name}: {student} due {due} UTC (extension{counts})")
    if changed:
        print("(feedback pages follow at the next `nbgrader generate_feedback A`; grades.csv at the next export)")
    for name, due in current(course):
        print(f"{name}: due {due.isoformat(sep=' ') + ' UTC' if due else '(no due date: never late)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
