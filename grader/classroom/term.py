"""The term's schedule in one command (course/README.md, "A term"): due dates into the gradebook.

    python -m grader.classroom.term schedule FILE          lines "assignment,due date" (a CSV)
    python -m grader.classroom.term schedule A=DATE ...    e.g. 01=2026-12-01T23:59Z (name or prefix)
    python -m grader.classroom.term schedule               print the schedule the gradebook holds

Run in the course folder (or pass --course). A date without a zone is taken as UTC, as nbgrader
does; a hand-in's time comes from its timestamp.txt. Late hand-ins lose what the course config
says (LATE_PERCENT_PER_DAY) when `nbgrader autograde` grades them; the penalty is in grades.csv.
Exit 0, or 2 for an unknown assignment or a date that cannot be read.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from grader.classroom.cohort import load_course, resolve
from grader.classroom.workflow import ROOT


def parse_schedule(items: list[str]) -> list[tuple[str, str]]:
    """[(assignment or prefix, date text)] from A=DATE arguments or one CSV file."""
    if len(items) == 1 and "=" not in items[0]:
        with open(items[0], newline="") as f:
            return [(r[0].strip(), r[1].strip()) for r in csv.reader(f)
                    if len(r) >= 2 and r[0].strip() and not r[0].startswith("#") and r[0].strip() != "assignment"]
    out = []
    for item in items:
        name, sep, date = item.partition("=")
        if not sep:
            raise ValueError(f"'{item}' is not ASSIGNMENT=DATE")
        out.append((name.strip(), date.strip()))
    return out


def set_due_dates(course, schedule: list[tuple[str, str]]) -> list[tuple[str, object]]:
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    done = []
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        for name, date in schedule:
            assignment = resolve(course, name)
            try:
                due = parse_utc(date)
            except Exception as e:  # dateutil's messages name the text
                raise ValueError(f"{assignment}: cannot read the date '{date}' ({e})") from None
            gb.update_or_create_assignment(assignment, duedate=due)
            done.append((assignment, due))
    return done


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
    sc.add_argument("--course", type=Path, help="the course folder (default: this folder if it holds "
                                                "nbgrader_config.py, else the repository's course/)")
    args = ap.parse_args(argv)
    root = args.course or (Path.cwd() if (Path.cwd() / "nbgrader_config.py").exists() else ROOT / "course")
    course = load_course(root)
    try:
        if args.items:
            set_due_dates(course, parse_schedule(args.items))
    except (ValueError, OSError) as e:
        print(f"schedule: {e}", file=sys.stderr)
        return 2
    for name, due in current(course):
        print(f"{name}: due {due.isoformat(sep=' ') + ' UTC' if due else '(no due date: never late)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
