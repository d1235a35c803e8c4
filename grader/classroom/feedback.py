"""Feedback pages a student can trust (issue 27), as nbgrader GenerateFeedback preprocessors
(course/nbgrader_config.py).

- Hidden tests never reach a page: the graded cells of an autograded notebook carry the
  course's full test source (TrustedGrade puts it back), so nbgrader's own ClearHiddenTests
  runs again here, and anything left between the markers is cut.
- One score per cell: where the instructor's manual score stands (ReconcileManualScores kept
  it), the trusted grader's "N of M points" line and the cell's numeric result, which would
  show a second score beside nbgrader's, are replaced by one sentence saying so.
"""
from __future__ import annotations

import re

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor
from traitlets import List

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?(### END HIDDEN TESTS|\Z)", re.S)
TRUSTED_LINE = re.compile(r"Graded by the course's trusted grader: [\d.]+ of [\d.]+ points\.")
MANUAL = "Graded by the course's trusted grader, then by your instructor: the score shown is the instructor's."


# nbconvert's HTML exporter configures display_data_priority for every preprocessor of the
# feedback; nbgrader's GetGrades declares it, the others would print "not recognized" warnings.
def _priority():
    return List(["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png", "image/jpeg",
                 "text/plain"]).tag(config=True)


class FeedbackClearHiddenTests(ClearHiddenTests):
    display_data_priority = _priority()


class StripHiddenTests(NbGraderPreprocessor):
    """Whatever ClearHiddenTests left (a marker it does not parse) is cut, in source and outputs."""

    display_data_priority = _priority()

    def preprocess_cell(self, cell, resources, index):
        if "### BEGIN HIDDEN TESTS" in cell.get("source", ""):
            cell.source = HIDDEN.sub("", cell.source)
        for out in cell.get("outputs", []):
            for key, value in list(out.get("data", {}).items()):
                if isinstance(value, str) and "### BEGIN HIDDEN TESTS" in value:
                    out["data"][key] = HIDDEN.sub("", value)
            if isinstance(out.get("text"), str) and "### BEGIN HIDDEN TESTS" in out["text"]:
                out["text"] = HIDDEN.sub("", out["text"])
        return cell, resources


class OneScorePerCell(NbGraderPreprocessor):
    display_data_priority = _priority()

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        manual = set()
        with Gradebook(info["db_url"]) as gb:
            try:
                sub = gb.find_submission_notebook(info["notebook"], info["assignment"], info["student"])
                manual = {g.name for g in sub.grades if g.manual_score is not None}
            except MissingEntry:
                pass
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") not in manual or cell.cell_type != "code":
                continue
            kept = []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "execute_result":
                    continue  # the automatic score as a number
                for key, value in list(out.get("data", {}).items()):
                    if isinstance(value, str):
                        out["data"][key] = TRUSTED_LINE.sub(MANUAL, value)
                kept.append(out)
            cell.outputs = kept
        return nb, resources
