"""grades.csv as an instructor can trust it (course/nbgrader_config.py: `nbgrader export` uses it).

nbgrader's CSV exporter writes a hand-in nobody graded (not yet, or never) as a plain 0.0 and a
penalty as it was when the hand-in was autograded, in the gradebook's order. This one writes
every hand-in's standing as grader.classroom.standing computes it NOW (the same numbers the
feedback pages and the formgrader show: export also brings the gradebook's penalty rows up to
date, and says which it changed), sorted by assignment then student, with these columns beyond
nbgrader's: `manual_score` (points given by hand, when any), `status` and `check`:

    graded           the trusted grader's scores (and any manual ones) count
    late             graded, handed in after the due date: late_submission_penalty taken from score
    pending: ...     collected, not autograded yet (scores EMPTY), or handed in again (or its notebook
                     replaced by hand) since its grading, or graded since the gradebook's backup (the
                     gradebook's scores, until autograde grades it)
    NOT GRADED: ...  handed in, but no autograded notebook exists (a hand-in refused before
                     grading says why, grader/classroom/handin_check.py; or a graded cell has no
                     score): raw_score and score are left EMPTY, never 0; what to do is said
    not submitted    nothing handed in: 0, as nbgrader counts it
    check            what to doubt: a hand-in time that disagrees with the collection's record, one
                     before the assignment opened or unreadable (grader.classroom.handin_time),
                     a maximum that changed since grading, another student id that differs only in case
"""
from __future__ import annotations

import csv

from nbgrader.coursedir import CourseDirectory
from nbgrader.plugins import CsvExportPlugin

from grader.classroom import handin_time, standing

KEYS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
        "manual_score", "late_submission_penalty", "score", "max_score", "status", "check"]


def rows(gradebook, coursedir, assignments=(), students=(), log=None) -> list[dict]:
    out = []
    records = handin_time.record(coursedir.root)
    people = {s.id: s for s in gradebook.students}
    for assignment in sorted(gradebook.assignments, key=lambda a: a.name):
        if assignments and assignment.name not in assignments:
            continue
        changed = []
        for sub in gradebook.assignment_submissions(assignment.name):
            if not students or sub.student.id in students:
                changed += standing.refresh(gradebook, coursedir, sub, None, records)
        if changed:
            gradebook.db.commit()
            if log is not None:
                log.warning("%s: the gradebook's penalties were out of date, now recomputed: %s", assignment.name,
                            "; ".join(changed))
        everyone = standing.everyone(gradebook, coursedir)
        # nbgrader tells "Alice" from "alice" (an LMS's folder against the roster): two rows, one
        # person's hand-in perhaps under the other id, the other row 0 for nothing handed in
        alike = {}
        for sid in everyone:
            alike.setdefault(sid.casefold(), []).append(sid)
        for sid in everyone:
            if students and sid not in students:
                continue
            row = standing.of(gradebook, coursedir, assignment, sid, records).row()
            twins = [t for t in alike[sid.casefold()] if t != sid]
            if twins:
                row["check"] = "; ".join(filter(None, [row.get("check"), (
                    f"another student id differs only in case ({', '.join(twins)}): nbgrader counts them as two "
                    "students; if they are one person, rename the hand-in's folder to the roster's id")]))
            who = people.get(sid)
            row.update(last_name=getattr(who, "last_name", None) or "", first_name=getattr(who, "first_name", None) or "",
                       email=getattr(who, "email", None) or "")
            out.append({k: row.get(k, "") for k in KEYS})
    return out


def unmatched_records(gradebook, coursedir) -> list[str]:
    """Lines of handin-times.csv that match no hand-in (an LMS's own spelling of an id or an assignment):
    they count for nothing, so the hand-in's own timestamp.txt counts instead; each, with what was meant."""
    names = sorted(a.name for a in gradebook.assignments)
    out = []
    for (student, assignment), when in sorted(handin_time.record(coursedir.root).items()):
        if assignment not in names:
            like = [n for n in names if n.startswith(assignment) or assignment.casefold() in n.casefold()]
            out.append(f"{student},{assignment},{when}: no assignment '{assignment}'"
                       + (f" (did you mean {', '.join(like)}?)" if like else f" (the assignments: {', '.join(names)})"))
        elif not standing.handed_in(coursedir, student, assignment):
            like = [s for s in standing.everyone(gradebook, coursedir)
                    if s.casefold() == student.casefold() and standing.handed_in(coursedir, s, assignment)]
            out.append(f"{student},{assignment},{when}: no hand-in of {assignment} by '{student}'"
                       + (f" (did you mean {', '.join(like)}?)" if like else ""))
    return out


class CourseCsvExport(CsvExportPlugin):
    def export(self, gradebook) -> None:
        dest = self.to or "grades.csv"
        coursedir = getattr(self.parent, "coursedir", None) or CourseDirectory(parent=self)
        known = {a.name for a in gradebook.assignments}
        typo = [str(a) for a in self.assignment if str(a) not in known]
        if typo:
            self.log.error("export: no assignment %s in the gradebook (the assignments: %s); nothing written",
                           ", ".join(typo), ", ".join(sorted(known)) or "none yet")
            raise SystemExit(2)
        try:  # without it every extension and opening date would silently not count
            standing.term(coursedir.root, strict=True)
        except ValueError as e:
            self.log.error("export refused: %s; %s not written", e, dest)
            raise SystemExit(2)
        out = rows(gradebook, coursedir, [str(a) for a in self.assignment], [str(s) for s in self.student], self.log)
        with open(dest, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=KEYS, lineterminator="\n")
            w.writeheader()
            w.writerows(out)
        self.log.info("Exported %d rows to %s", len(out), dest)
        for line in unmatched_records(gradebook, coursedir):
            self.log.warning("%s: %s; this line counts for nothing (student_id and assignment as in submitted/)",
                             handin_time.RECORD, line)
        for r in out:
            if r["status"].startswith(("NOT GRADED", "pending")):
                self.log.warning("%s %s: %s", r["assignment"], r["student_id"], r["status"])
            if r["check"]:
                self.log.warning("%s %s: CHECK %s", r["assignment"], r["student_id"], r["check"])
