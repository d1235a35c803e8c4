"""nbgrader pieces the course needs.

CudaClearSolutions: a solution region inside a CUDA source string (`// BEGIN SOLUTION` ...
`// END SOLUTION`) becomes a C++ comment stub, so the student's copy still compiles and the
grader answers "not yet" with a diagnosis; nbgrader's own stub there would be Python
(`raise NotImplementedError()`) inside C++. Python regions keep nbgrader's behaviour.
The text after BEGIN SOLUTION on the marker line (e.g. "(about 6 lines)") is kept in the stub.

ColabSetupCell (the release opens in Colab), SpeedPoints (CPU-only grading: kernel cells worth
their correctness share), QuietOverwriteCells (no checksum warning for an untouched test cell).
"""
from __future__ import annotations

import re

from nbgrader.api import MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions, NbGraderPreprocessor, OverwriteCells
from nbgrader.utils import compute_checksum

from grader.checking.stubs import MARKER

CUDA_STUB = MARKER + "{note}"  # grader.stubs finds these to say which parts are still empty
_BEGIN = re.compile(r"^(\s*)//\s*BEGIN SOLUTION(.*)$")


class CudaClearSolutions(ClearSolutions):
    def _replace_solution_region(self, cell, language):
        if cell.cell_type != "code" or not any(_BEGIN.match(l) for l in cell.source.split("\n")):
            return super()._replace_solution_region(cell, language)
        out, inside, replaced = [], False, False
        for line in cell.source.split("\n"):
            m = _BEGIN.match(line)
            if m:
                if inside:
                    raise RuntimeError("encountered nested begin solution statements")
                inside = replaced = True
                note = m.group(2).rstrip()
                out.append(m.group(1) + CUDA_STUB.format(note=note))
            elif self.end_solution_delimeter in line and inside:
                inside = False
            elif not inside:
                out.append(line)
        if inside:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(out)
        return replaced


class ColabSetupCell(NbGraderPreprocessor):
    """The release is what students open, Colab included: it starts with the same setup cell as
    the notebooks/ copies (grader.classroom.colab.colab_cell), or `import grader` fails there."""

    def preprocess(self, nb, resources):
        from grader.classroom.colab import HANDOUT_REPOSITORY, PLACEHOLDER, release_problem
        from grader.classroom.handout import check_published
        from grader.classroom.colab import COLAB_CELL_ID, colab_cell

        if PLACEHOLDER in HANDOUT_REPOSITORY:
            self.log.warning("the release's Colab setup cell names no repository (%s): set handout-repository in "
                             "pyproject.toml, [tool.tensorcore-course] (course/README.md, 'Colab without the answer "
                             "key')", HANDOUT_REPOSITORY)
        why = release_problem(check_published)
        if why:  # students on Colab would be handed the answer key
            self.log.error("release refused: %s", why)
            raise RuntimeError(f"release refused: {why}")
        if not any(c.get("id") == COLAB_CELL_ID for c in nb.cells):
            nb.cells.insert(0, colab_cell())
        return nb, resources


class SpeedPoints(NbGraderPreprocessor):
    """CPU-only grading (TC_CPU_ONLY=1, set by course/nbgrader_config.py's CPU_ONLY): a kernel
    test cell is worth its correctness share only, so the gradebook's maximum, the feedback and
    the export leave the speed points out (workflow.cpu_max_score computes the same)."""

    def preprocess(self, nb, resources):
        from grader.checking import exercises
        from grader.checking.check import speed_graded
        from grader.classroom.graded_cells import exercise_of

        if speed_graded():
            return nb, resources
        for cell in nb.cells:
            exercise = exercise_of(cell)
            if exercise in exercises.EXERCISES:
                meta, ex = cell.metadata["nbgrader"], exercises.get(exercise)
                meta["points"] = float(meta.get("points", 0)) * ex.points_correct / ex.points
        return nb, resources


class QuietOverwriteCells(OverwriteCells):
    """nbgrader's OverwriteCells, without its "Attribute 'checksum' ... has changed!" for every
    honest student: the gradebook holds a test cell's source WITH its hidden tests, the release
    the same cell without them, so an untouched cell always "changed". A cell equal to its
    released text is restored silently; a cell the student edited is still reported."""

    def preprocess_cell(self, cell, resources, index):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid is not None and cell.cell_type == "code":
            try:
                src = self.gradebook.find_source_cell(gid, self.notebook_id, self.assignment_id)
            except MissingEntry:
                src = None
            if src is not None and src.locked and src.source != cell.source:
                if released_text(src.source) == cell.source.strip():
                    cell.source = src.source
                elif cell.metadata.get("nbgrader", {}).get("checksum") == compute_checksum(cell):
                    # untouched, from an earlier release (its own checksum holds): no tampering to report
                    self.log.info("%s: the hand-in has an earlier release's text of cell %s; graded with the "
                                  "current one", resources.get("nbgrader", {}).get("student", ""), gid)
                    cell.source = src.source
        return super().preprocess_cell(cell, resources, index)


def released_text(source: str) -> str:
    """A test cell's text as the release has it: hidden tests cleared (nbgrader's ClearHiddenTests)."""
    from nbformat.v4 import new_code_cell

    cell = new_code_cell(source, metadata={"nbgrader": {"grade": True, "grade_id": "x", "points": 0,
                                                         "solution": False, "locked": True}})
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source.strip()
