"""Late penalties the course configures (course/nbgrader_config.py, LATE_PERCENT_PER_DAY):
nbgrader's own methods are "none" (its default: a late hand-in loses nothing) and "zero".

A late notebook loses `percent_per_day` of its score for every started day past the
assignment's due date (1 s late is one day), at most all of it; the rule and its arithmetic live
in grader.classroom.standing, which every view reads. The due dates live in the gradebook:
`python -m grader.classroom.term schedule` sets the whole term's in one command.

CourseLatePenalties replaces nbgrader's AssignLatePenalties in autograde: the hand-in's time is
the one the course trusts (grader.classroom.handin_time: its record, else timestamp.txt, checked
against the files' times), and the penalty is standing.refresh's, the one export and the
formgrader show. DailyPenalty is the same rule as nbgrader's plugin, for anything that asks it.
"""
from __future__ import annotations

import math

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.plugins import LateSubmissionPlugin
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float

from grader.classroom import standing


class DailyPenalty(LateSubmissionPlugin):
    percent_per_day = Float(10.0, help="share of the score lost per started day late (100: any late hand-in "
                                       "scores 0)").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        days = math.ceil(total_seconds_late / 86400) if total_seconds_late > 0 else 0
        return standing.penalty(score or 0.0, days, self.percent_per_day) or None


class CourseLatePenalties(NbGraderPreprocessor):
    """After SaveAutoGrades: the hand-in's time and its penalty, from grader.classroom.standing."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        with Gradebook(info["db_url"]) as gb:
            try:
                sub = gb.find_submission(info["assignment"], info["student"])
            except MissingEntry:
                return nb, resources
            standing.refresh(gb, coursedir, sub, self.log)
            gb.db.commit()
            days = standing.days_late(sub)
            if days:
                self.log.warning("%s %s is %d day(s) late: penalty %g of %g (%g%% a day)", info["student"],
                                 info["assignment"], days, sub.late_submission_penalty or 0, sub.score,
                                 standing.PERCENT_PER_DAY[0])
        return nb, resources
