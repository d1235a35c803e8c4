"""What the cohort command refuses or removes in submitted/ before it packs a hand-in for a job, as
plain autograde does before nbgrader reads it (grader.classroom.hardening, handin_check): links a
hand-in left, and folders past the limits on files or bytes."""
from __future__ import annotations

import sys
from pathlib import Path


class Say:
    """A log for the course's helpers that print what they do (the cohort has no nbgrader log)."""

    def __init__(self, out):
        self.out = out

    def _say(self, msg, *args):
        print("cohort: " + (msg % args if args else msg), file=self.out, flush=True)

    error = warning = info = _say


def refuse_oversized(course, assignment: str, students: list[str], out=sys.stderr) -> list[str]:
    """The hand-ins past the limits on files or bytes of a hand-in folder, refused here as plain
    autograde refuses them (grader.classroom.handin_check.refuse_oversized), before anything of them is
    packed for a job (the pack is read whole in this process, the one that sends every job, and
    written whole on a worker)."""
    from types import SimpleNamespace

    from grader.classroom import handin_check

    here = SimpleNamespace(coursedir=course.coursedir, create_student=True, log=Say(out))
    return [s for s in students
            if handin_check.refuse_oversized(here, assignment, s, course.path("submitted_directory", s, assignment))]


def sanitize(course, assignment: str, out=sys.stderr) -> None:
    """A link a hand-in left in submitted/ (its folder a link to a classmate's) is removed, never
    followed into a job's pack."""
    from grader.classroom.hardening import sanitize_students

    sanitize_students(Path(course.coursedir.format_path(course.coursedir.submitted_directory, ".", ".")), assignment,
                      Say(out))
