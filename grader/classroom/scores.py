"""A manual score and a regrade that disagree (issue 27): nbgrader keeps a formgrader score over
any later `autograde --force`, so a correct resubmission stayed at the old hand-given 0.5.

A manual score was given against one automatic result of its cell. Each grading records, per
cell, what that result rests on (`fingerprint`: the hand-in's text, the cell's test text, the
trusted grader's verdict records with their speed measurements) in the gradebook's own table
`course_graded_against`; the record a manual score was given against is kept while the score
stands. On a regrade, ReconcileManualScores asks `what_changed` (the one rule): the result is
the same but for timing noise when the hand-in, the test and every check's pass/fail are the
same and the score moved no more than the speed verdicts' own spread explains; then the manual
score stands. Otherwise `on_change = "clear"` (the default) removes it, so the new automatic score
counts, and the log says why; `"keep"` keeps it (the feedback page then says it replaced the
automatic one, never showing both: grader.classroom.feedback). A cell graded before this record
existed (an older course) falls back to the score alone (RememberScores, before SaveAutoGrades):
any change clears. A regrade on which the grader itself failed (its verdicts say so) judges no
manual score: the score and its record stand until a regrade the grader finishes.
"""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor
from sqlalchemy import text
from traitlets import Enum

KEY = "course_auto_scores"
# a graded cell's metadata in the autograded notebook: the automatic score this grading wrote to the
# gradebook, so a gradebook that no longer holds it (restored from a backup) is seen (standing.behind)
GRADED = "tc_auto_score"
TABLE = "course_graded_against"  # in gradebook.db beside nbgrader's tables (copied to cohort jobs with them)
SPEED_NOISE = ("ratio", "floor", "target", "points", "kernel_spread", "baseline_spread")


@contextmanager
def _submission(resources):
    """(nbgrader's info, the gradebook, this notebook's submission or None), the gradebook open."""
    info = resources["nbgrader"]
    with Gradebook(info["db_url"]) as gb:
        try:
            sub = gb.find_submission_notebook(info["notebook"], info["assignment"], info["student"])
        except MissingEntry:
            sub = None
        yield info, gb, sub


# ------------------------------------------------------------------ what a result rests on
def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _is_test(cell) -> bool:
    meta = cell.metadata.get("nbgrader") or {}
    return bool(meta.get("grade")) and not meta.get("solution")


def _locked(cell) -> bool:
    return bool((cell.metadata.get("nbgrader") or {}).get("locked"))


def fingerprint(nb) -> dict[str, dict]:
    """grade id -> what its automatic score rests on in this graded notebook (after TrustedGrade,
    which wrote each graded cell's test text and verdict records): the hand-in (every cell but the
    course's locked ones, test cells included, which autograde writes from the release: a typo fixed
    there is no change of the hand-in; text only: outputs differ run to run), the test's text, the
    verdicts."""
    from grader.classroom.autograde import VERDICTS

    handin = _digest([[c.cell_type, c.source] for c in nb.cells if not (_is_test(c) or _locked(c))])
    out = {}
    for c in nb.cells:
        gid = (c.metadata.get("nbgrader") or {}).get("grade_id")
        if c.cell_type == "code" and _is_test(c) and gid and gid not in out:
            verdicts = c.metadata.get(VERDICTS) or []
            out[gid] = dict(handin=handin, test=_digest(c.source),
                            verdicts=[v for v in verdicts if isinstance(v, dict)])
    return out


def speed_noise(before: dict | None, after: dict | None) -> float | None:
    """How far one kernel's speed ratio may move between two runs by timing noise alone, or None
    where the two were not measured alike (not both, an older record, other thresholds). A ratio is
    a baseline median over a kernel median; each median is uncertain by its own spread (IQR over
    median, grader.runtime.timing.Timing.spread), and the relative errors of a quotient add; twice
    the larger run's, as grader.classroom.hang.agree allows between two runs of a kernel."""
    if not before or not after or any(k not in s for s in (before, after) for k in SPEED_NOISE):
        return None
    if (before["floor"], before["target"], before["points"]) != (after["floor"], after["target"], after["points"]):
        return None
    spread = max(s["kernel_spread"] + s["baseline_spread"] for s in (before, after))
    return 2 * spread * max(before["ratio"], after["ratio"])


def grader_failed(after: dict) -> str | None:
    """The grader's own failure in a cell's new result (grader.checking.isolate: it crashed, or the GPU
    had no memory for a check's arrays), or None. Such a result says nothing of the hand-in: a manual
    score is not judged by it (the instructor regrades once the grader or the GPU is fixed)."""
    return next((v["grader_error"] for v in after.get("verdicts") or [] if v.get("grader_error")), None)


def what_changed(before: dict, after: dict, out_of: float) -> str | None:
    """Why a cell's automatic result `after` is not the one `before` that a manual score was given
    against, or None where it is the same but for timing noise. Each: {score, and from
    `fingerprint`: handin, test, verdicts}; `out_of`: the cell's points."""
    b, a = before.get("score"), after.get("score")
    recorded = all("handin" in r for r in (before, after))
    if recorded and before["handin"] != after["handin"]:
        # what was graded by hand is not what is graded now, whatever it scores: a manual score
        # (a raise or a penalty) carried to another hand-in would grade work nobody looked at
        return "the hand-in changed" + (f" (automatic score {b:g} -> {a:g})" if None not in (a, b) else "")
    if b == a:
        return None  # the same hand-in, the same automatic score: nothing to judge again
    moved = "the automatic score changed" + (f" ({b:g} -> {a:g})" if None not in (a, b) else "")
    if None in (a, b) or not recorded:
        return moved  # a record from before this rule: any change counts
    if before["test"] != after["test"]:
        return f"{moved}: its test cell changed"
    bv, av = before["verdicts"], after["verdicts"]
    checks = [[(v.get("exercise"), v.get("correct"), v.get("grader_error")) for v in vs] for vs in (bv, av)]
    if checks[0] != checks[1]:
        return f"{moved}: its checks' pass/fail changed"
    tolerance, timed = 0.0, False
    for vb, va in zip(bv, av):
        sb, sa = vb.get("speed"), va.get("speed")
        allow = speed_noise(sb, sa)
        if allow is None:
            continue
        timed = True
        if abs(sa["ratio"] - sb["ratio"]) > allow:
            return (f"{moved}: {va.get('exercise')}'s speed moved from {sb['ratio']:.3g} to {sa['ratio']:.3g} of "
                    f"its baseline, more than the timing noise of these runs (+-{allow:.2g})")
        # the speed points this ratio band is worth in the cell (out_of: the cell's points, as
        # grader.checking.verdict.Verdict.points scales a verdict to them)
        share = sa["points"] / va["max_score"] if va.get("max_score") else 0.0
        tolerance += min(1.0, allow / (sa["target"] - sa["floor"])) * share * out_of
    if abs(a - b) <= tolerance + 1e-9:
        return None
    if not timed:
        if any(bool(vb.get("speed")) != bool(va.get("speed")) for vb, va in zip(bv, av)):
            return f"{moved}: its speed was checked in one of the two gradings only (a GPU in one, none in the other?)"
        if not any(v.get("speed") for v in [*bv, *av]):  # no speed check to blame
            return f"{moved} with the same hand-in, test cell and checks: its points changed?"
    return f"{moved}, more than the timing noise of its speed checks explains (+-{tolerance:.2g})"


def graded_apart(course_a, student_a: str, course_b, student_b: str, assignment: str) -> list[str]:
    """Why two gradings of one hand-in (two courses, e.g. plain nbgrader's and a cohort's; or two
    students who handed in the same text) differ, cell by cell, by `what_changed`: [] where every
    cell's automatic score is the same but for timing noise. A speed graded between a floor and a
    target moves a little with every run (4 H200s, 2026-11-28: 2.6018 and 2.6012 of 3 for one
    slow kernel), as it does when plain nbgrader grades the same hand-in twice; a check's pass/fail,
    the hand-in or its test, or a speed moved beyond its runs' own spread is a difference."""
    out = []
    with Gradebook(f"sqlite:///{course_a}/gradebook.db") as ga, Gradebook(f"sqlite:///{course_b}/gradebook.db") as gb:
        try:
            sa, sb = ga.find_submission(assignment, student_a), gb.find_submission(assignment, student_b)
        except MissingEntry:
            return ["not graded in both"]
        for na in sa.notebooks:
            nb = next((n for n in sb.notebooks if n.name == na.name), None)
            if nb is None:
                out.append(f"{na.name}: not graded in both")
                continue
            ra, rb = stored(ga, assignment, student_a, na.name), stored(gb, assignment, student_b, na.name)
            other = {g.name: g for g in nb.grades}
            for g in na.grades:
                h = other.get(g.name)
                if h is None:
                    out.append(f"{na.name} {g.name}: not graded in both")
                    continue
                why = what_changed(dict(ra.get(g.name, {}), score=g.auto_score),
                                  dict(rb.get(g.name, {}), score=h.auto_score), float(g.max_score or 0.0))
                if why:
                    out.append(f"{na.name} {g.name}: {why}")
    return out


# ------------------------------------------------------------------ the course's table
def _table(gb) -> None:
    gb.db.execute(text(f"CREATE TABLE IF NOT EXISTS {TABLE} (assignment VARCHAR(128) NOT NULL, "
                       "student VARCHAR(128) NOT NULL, notebook VARCHAR(128) NOT NULL, cell VARCHAR(128) NOT NULL, "
                       "record TEXT NOT NULL, PRIMARY KEY (assignment, student, notebook, cell))"))


def stored(gb, assignment: str, student: str, notebook: str) -> dict[str, dict]:
    """cell -> the result recorded for it (the one its manual score, if any, was given against)."""
    _table(gb)
    rows = gb.db.execute(text(f"SELECT cell, record FROM {TABLE} WHERE assignment = :a AND student = :s "
                              "AND notebook = :n"), dict(a=assignment, s=student, n=notebook))
    out = {}
    for cell, record in rows:
        try:
            out[cell] = json.loads(record)
        except ValueError:
            pass  # unreadable: as if never recorded (the score alone decides)
    return out


def store(gb, assignment: str, student: str, notebook: str, records: dict[str, dict]) -> None:
    _table(gb)
    for cell, record in records.items():
        key = dict(a=assignment, s=student, n=notebook, c=cell)
        gb.db.execute(text(f"DELETE FROM {TABLE} WHERE assignment = :a AND student = :s AND notebook = :n "
                           "AND cell = :c"), key)
        gb.db.execute(text(f"INSERT INTO {TABLE} (assignment, student, notebook, cell, record) "
                           "VALUES (:a, :s, :n, :c, :r)"), dict(key, r=json.dumps(record)))


def from_job(g, row: dict, seen: float | None) -> str | None:
    """A cohort job's result for one cell (`row`: auto_score, manual_score, needs_manual_grade, as
    grader.classroom.cohort_job reads them) into the course's grade `g`. The job judged the manual
    score of the gradebook's snapshot (`seen`); one given or taken back in the formgrader since then
    stands over its judgement. Returns what to tell the instructor when one given since stands."""
    g.auto_score = row["auto_score"]
    if g.manual_score == seen:  # as the job found it: its judgement (kept or cleared) counts
        g.manual_score, g.needs_manual_grade = row["manual_score"], row["needs_manual_grade"]
        return None
    if g.manual_score is None:  # taken back while the job ran
        g.needs_manual_grade = g.auto_score is None
        return None
    g.needs_manual_grade = True  # to review, as nbgrader marks a manual score after a regrade
    return (f"the manual score {g.manual_score:g} given while this regrade ran stands over its new automatic "
            f"score {row['auto_score']}")


# ------------------------------------------------------------------ the two preprocessors
class RememberScores(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        with _submission(resources) as (_, _, sub):
            if sub is not None:
                resources[KEY] = {g.name: g.auto_score for g in sub.grades}
        return nb, resources


class ReconcileManualScores(NbGraderPreprocessor):
    on_change = Enum(["clear", "keep"], "clear",
                     help="a manual score on a cell whose automatic result changed on a regrade (more than "
                          "timing noise): 'clear' it (the new automatic score counts) or 'keep' it").tag(config=True)

    def preprocess(self, nb, resources):
        remembered = resources.get(KEY, {})
        now = fingerprint(nb)
        with _submission(resources) as (info, gb, sub):
            if sub is None:
                return nb, resources
            where = (info["assignment"], info["student"], info["notebook"])
            records = stored(gb, *where)
            update = {}
            for g in sub.grades:
                after = dict(now.get(g.name, {}), score=g.auto_score)
                before = records.get(g.name) or ({"score": remembered[g.name]} if g.name in remembered else None)
                if g.manual_score is None or before is None:
                    update[g.name] = after
                    continue
                failed = grader_failed(after)
                if failed and before.get("score") != after["score"]:
                    self.log.warning("%s %s %s: the grader itself failed on this regrade (%s): the manual score %s "
                                     "stands; regrade once it is fixed", info["student"], info["assignment"], g.name,
                                     failed, g.manual_score)
                    continue  # and so does the record of the result it was given against
                why = what_changed(before, after, float(g.max_score or 0.0))
                if why is None:
                    if before.get("score") != after["score"]:
                        self.log.info("%s %s %s: the automatic score changed (%g -> %g) by timing noise only: "
                                      "the manual score %s stands", info["student"], info["assignment"], g.name,
                                      before.get("score"), g.auto_score, g.manual_score)
                    if "handin" not in before:
                        update[g.name] = after  # an older course's cell: from now on the full record
                    continue  # the record it was given against stays (noise never adds up run after run)
                update[g.name] = after
                what = f"{info['student']} {info['assignment']} {g.name}: {why} on this regrade"
                if self.on_change == "clear":
                    self.log.warning("%s: the manual score %s is cleared, %s counts "
                                     "(ReconcileManualScores.on_change = 'keep' keeps manual scores)",
                                     what, g.manual_score, g.auto_score)
                    g.manual_score = None
                    g.needs_manual_grade = g.auto_score is None
                else:
                    self.log.warning("%s: the manual score %s is kept (ReconcileManualScores.on_change = 'keep')",
                                     what, g.manual_score)
            store(gb, *where, update)
            gb.db.commit()
            stamps = {g.name: g.auto_score for g in sub.grades}
            for c in nb.cells:
                meta = c.metadata.get("nbgrader") or {}
                if meta.get("grade") and meta.get("grade_id") in stamps:
                    c.metadata[GRADED] = stamps[meta["grade_id"]]
        return nb, resources
