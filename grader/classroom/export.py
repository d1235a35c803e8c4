"""grades.csv as an instructor can trust it (course/nbgrader_config.py: `nbgrader export` uses it).

nbgrader's CSV exporter writes a submission nobody could grade as a plain 0.0 (a notebook the
autograder gave up on keeps its gradebook rows), in the gradebook's order. This one writes the
same columns, sorted by assignment then student, and one more, `status`:

    graded           the trusted grader's scores (and any manual ones) count
    late             graded, then the late penalty taken (late_submission_penalty, score)
    NOT GRADED: ...  submitted, but no autograded notebook exists (a hand-in refused before
                     grading says why, grader/classroom/handin_check.py; or a graded cell has no
                     score): raw_score and score are left EMPTY, never 0
    not submitted    nothing handed in: 0, as nbgrader counts it
"""
from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.plugins import CsvExportPlugin

KEYS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
        "late_submission_penalty", "score", "max_score", "status"]


def ungraded_reason(coursedir, submission) -> str | None:
    """Why a submission in the gradebook has no grade to export, or None when it has one."""
    from grader.classroom.handin_check import rejection

    folder = Path(coursedir.format_path(coursedir.autograded_directory, submission.student.id,
                                        submission.assignment.name))
    for nb in submission.notebooks:
        if not (folder / f"{nb.name}.ipynb").is_file():
            refused = rejection(coursedir, submission.assignment.name, submission.student.id)
            if refused:
                return f"{refused} (ask for the notebook again)"
            return f"no autograded notebook {nb.name}.ipynb (autograde it again)"
        missing = [g.name for g in nb.grades if g.auto_score is None and g.manual_score is None]
        if missing:
            return f"no score for {', '.join(missing)} (autograde it again, or grade it by hand)"
    return None


def rows(gradebook, coursedir, assignments=(), students=()) -> list[dict]:
    out = []
    for assignment in sorted(gradebook.assignments, key=lambda a: a.name):
        if assignments and assignment.name not in assignments:
            continue
        for student in sorted(gradebook.students, key=lambda s: s.id):
            if students and student.id not in students:
                continue
            row = dict(assignment=assignment.name, duedate=assignment.duedate, student_id=student.id,
                       last_name=student.last_name, first_name=student.first_name, email=student.email,
                       max_score=assignment.max_score)
            try:
                sub = gradebook.find_submission(assignment.name, student.id)
            except MissingEntry:
                row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0, status="not submitted")
            else:
                why = ungraded_reason(coursedir, sub)
                penalty = sub.late_submission_penalty or 0.0
                row.update(timestamp=sub.timestamp, late_submission_penalty=penalty)
                if why:
                    row.update(raw_score="", score="", status=f"NOT GRADED: {why}")
                else:
                    row.update(raw_score=sub.score, score=max(0.0, sub.score - penalty),
                               status="late" if penalty > 0 else "graded")
            out.append({k: "" if row.get(k) is None else str(row.get(k)) for k in KEYS})
    return out


class CourseCsvExport(CsvExportPlugin):
    def export(self, gradebook) -> None:
        dest = self.to or "grades.csv"
        coursedir = getattr(self.parent, "coursedir", None) or CourseDirectory(parent=self)
        out = rows(gradebook, coursedir, [str(a) for a in self.assignment], [str(s) for s in self.student])
        with open(dest, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=KEYS, lineterminator="\n")
            w.writeheader()
            w.writerows(out)
        bad = [r for r in out if r["status"].startswith("NOT GRADED")]
        self.log.info("Exported %d rows to %s", len(out), dest)
        for r in bad:
            self.log.warning("%s %s: %s", r["assignment"], r["student_id"], r["status"])
