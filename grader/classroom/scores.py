"""A manual score and a regrade that disagree (issue 27): nbgrader keeps a formgrader score over
any later `autograde --force`, so a correct resubmission stayed at the old hand-given 0.5.

RememberScores (before SaveAutoGrades) notes each graded cell's automatic score as it was;
ReconcileManualScores (after) compares: where the automatic score changed and a manual score
exists, `on_change = "clear"` (the default) removes the manual score, so the new automatic one
counts, and the log says so; `"keep"` keeps the instructor's score (the feedback page then says
it replaced the automatic one, never showing both: grader.classroom.feedback).
"""
from __future__ import annotations

from contextlib import contextmanager

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Enum

KEY = "course_auto_scores"


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


class RememberScores(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        with _submission(resources) as (_, _, sub):
            if sub is not None:
                resources[KEY] = {g.name: g.auto_score for g in sub.grades}
        return nb, resources


class ReconcileManualScores(NbGraderPreprocessor):
    on_change = Enum(["clear", "keep"], "clear",
                     help="a manual score on a cell whose automatic score changed on a regrade: 'clear' it "
                          "(the new automatic score counts) or 'keep' it").tag(config=True)

    def preprocess(self, nb, resources):
        before = resources.get(KEY, {})
        with _submission(resources) as (info, gb, sub):
            for g in sub.grades if sub is not None else ():
                if g.manual_score is None or g.name not in before or before[g.name] == g.auto_score:
                    continue
                what = (f"{info['student']} {info['assignment']} {g.name}: the automatic score changed on this "
                        f"regrade ({before[g.name]} -> {g.auto_score})")
                if self.on_change == "clear":
                    self.log.warning("%s: the manual score %s is cleared, %s counts "
                                     "(ReconcileManualScores.on_change = 'keep' keeps manual scores)",
                                     what, g.manual_score, g.auto_score)
                    g.manual_score = None
                    g.needs_manual_grade = g.auto_score is None
                else:
                    self.log.warning("%s: the manual score %s is kept (ReconcileManualScores.on_change = 'keep')",
                                     what, g.manual_score)
            gb.db.commit()
        return nb, resources
