"""Late penalties the course configures (course/nbgrader_config.py, LATE_PERCENT_PER_DAY):
nbgrader's own methods are "none" (its default: a late hand-in loses nothing) and "zero".

DailyPenalty: a late notebook loses `percent_per_day` of its score for every started day past
the assignment's due date (1 s late is one day), at most all of it. The due dates live in the
gradebook: `python -m grader.classroom.term schedule` sets the whole term's in one command.
The penalty is computed by `nbgrader autograde` and shows in grades.csv
(`late_submission_penalty`, and `score` = `raw_score` - penalty).
"""
from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float


class DailyPenalty(LateSubmissionPlugin):
    percent_per_day = Float(10.0, help="share of the score lost per started day late (100: any late hand-in "
                                       "scores 0)").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        if total_seconds_late <= 0 or not score:
            return None
        days = math.ceil(total_seconds_late / 86400)
        share = min(1.0, days * self.percent_per_day / 100)
        penalty = round(score * share, 4)
        self.log.warning("%s is %d day(s) late: penalty %g of %g (%g%% a day)", student_id, days, penalty, score,
                         self.percent_per_day)
        return penalty
