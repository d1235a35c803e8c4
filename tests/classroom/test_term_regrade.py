"""An instructor's manual grade through a regrade of the class, with real nbgrader and the course's
config, on 01-memory-layout (its transpose kernel earns speed points on a GPU). This machine has no
GPU: the speed a GPU would measure comes from a test double (gpu_timing_double.py) that stands in
for the timing alone, at the point where the trusted grader's verdict enters nbgrader.

- ada's and ben's hand-ins are graded, each given a manual score on the kernel's cell;
- `autograde --force` of the same hand-ins, ada's speed moved by timing noise (within the spread
  her verdicts record), ben's by far more: ada's manual score stands, ben's is cleared, saying why;
- ada regraded while another process held the GPU's memory (the grader fails her check, saying it is
  not her kernel), then on an idle GPU: her manual score stands through both;
- ada's kernel edited so its check fails, and regraded: her manual score is cleared, saying why;
- cy, given no manual score, graded twice with timing noise between: `graded_apart` (what
  .ci/gpu-cohort asks of plain nbgrader's and a cohort's gradings) calls the two the same, and
  calls ben's two, and ada's edited hand-in, apart.
"""
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from gpu_timing_double import FILE, config_lines
from test_term import book, formgrader, hand_in, run

pytestmark = pytest.mark.slow

A = "01-memory-layout"
CELL = "transpose-test"
SPREAD = dict(kernel_spread=0.02, baseline_spread=0.02)  # a GPU's IQR/median of each side, typical


def timing(course: Path, **ratios: float) -> None:
    (course / FILE).write_text(json.dumps({s: dict(ratio=r, **SPREAD) for s, r in ratios.items()}))


def cell(course: Path, student: str) -> tuple[float, float | None]:
    """(automatic, manual) score of the kernel's cell in the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        g = gb.find_grade(CELL, A, A, student)
        return g.auto_score, g.manual_score


def _snapshot(course: Path, tmp_path_factory) -> Path:
    """A folder holding a copy of the course's gradebook as it is now (all graded_apart reads)."""
    d = tmp_path_factory.mktemp("book")
    shutil.copy(course / "gradebook.db", d / "gradebook.db")
    return d


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    course = classroom.new_course(tmp_path_factory.mktemp("regrade") / "course")
    with open(course / "nbgrader_config.py", "a") as f:
        f.write(config_lines(Path(__file__).parent))
    run(course, "generate_assignment", A, "--force")
    for s in ("ada", "ben", "cy"):
        hand_in(course, s, A, book(A, course), "2026-11-20 10:00:00 UTC")
    out = {}
    timing(course, ada=0.45, ben=0.45, cy=0.45)  # halfway between floor 0.3 and target 0.6
    out["first"], _ = run(course, "autograde", A)
    out["book_first"] = _snapshot(course, tmp_path_factory)
    out["auto_first"] = {s: cell(course, s)[0] for s in ("ada", "ben", "cy")}
    for s in ("ada", "ben"):
        formgrader(course, "grade", CELL, A, s, "1.8", s)

    timing(course, ada=0.46, ben=0.58, cy=0.47)  # ada, cy: noise (2 x 4% of 0.46 allows 0.037); ben: 0.13 faster
    out["noise"], _ = run(course, "autograde", A, "--force")
    out["after_noise"] = {s: cell(course, s) for s in ("ada", "ben", "cy")}
    out["book_noise"] = _snapshot(course, tmp_path_factory)

    # another process held the GPU's memory: the grader failed ada's check (not her kernel), then an idle GPU
    (course / FILE).write_text(json.dumps({"ada": {"no_memory": True}}))
    out["no_memory"], _ = run(course, "autograde", A, "--force", "--student", "ada")
    out["after_no_memory"] = cell(course, "ada")
    timing(course, ada=0.46)
    out["idle"], _ = run(course, "autograde", A, "--force", "--student", "ada")
    out["after_idle"] = cell(course, "ada")

    # ben graded by hand again, then a new hand-in that grades the same (a comment added to his
    # kernel's cell): what was graded by hand is not what is graded now, so the manual score goes
    formgrader(course, "grade", CELL, A, "ben", "1.9", "ben")
    nb = book(A, course)
    kernel = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "transpose-kernel")
    kernel.source += "\n# tidied up"
    hand_in(course, "ben", A, nb, "2026-11-21 09:00:00 UTC")
    timing(course, ben=0.58)
    out["ben_again"], _ = run(course, "autograde", A, "--force", "--student", "ben")
    out["after_ben_again"] = cell(course, "ben")

    timing(course, ada=0.45)  # a GPU again, but ada's kernel is now the release's stub: its check fails
    hand_in(course, "ada", A, book(A, course, ("transpose-kernel",)), "2026-11-21 10:00:00 UTC")
    out["edited"], _ = run(course, "autograde", A, "--force", "--student", "ada")
    out["after_edit"] = cell(course, "ada")
    out["book_edit"] = _snapshot(course, tmp_path_factory)
    yield out
    shutil.rmtree(course, ignore_errors=True)


def test_the_double_gives_speed_points_between_floor_and_target(term):
    for s in ("ada", "ben"):  # correctness 1 of 2, speed (0.45 - 0.3) / 0.3 of 1
        assert term["auto_first"][s] == pytest.approx(1.5), term["first"][-3000:]


def test_a_manual_grade_survives_a_regrade_that_only_timing_noise_moved(term):
    auto, manual = term["after_noise"]["ada"]
    assert auto == pytest.approx(1.0 + 0.16 / 0.3) and auto != term["auto_first"]["ada"]
    assert manual == pytest.approx(1.8), term["noise"][-3000:]
    assert "ada 01-memory-layout transpose-test: the automatic score changed" in term["noise"]
    assert "by timing noise only: the manual score 1.8 stands" in term["noise"]


def test_a_speed_change_beyond_the_noise_clears_the_manual_grade(term):
    auto, manual = term["after_noise"]["ben"]
    assert auto == pytest.approx(1.0 + 0.28 / 0.3) and manual is None, term["noise"][-3000:]
    assert "transpose's speed moved from 0.45 to 0.58" in term["noise"]
    assert "the manual score 1.8 is cleared" in term["noise"]


def test_a_regrade_the_grader_itself_failed_keeps_the_manual_grade(term):
    """The guide says to regrade on an idle GPU: the manual score must still be there then."""
    auto, manual = term["after_no_memory"]
    assert auto < term["auto_first"]["ada"] and manual == pytest.approx(1.8), term["no_memory"][-3000:]
    assert "transpose-test: the grader itself failed on this regrade (the GPU had no free memory" in term["no_memory"]
    assert "the manual score 1.8 stands; regrade once it is fixed" in term["no_memory"]
    auto, manual = term["after_idle"]  # judged against the result it was given against, as before
    assert auto == pytest.approx(1.0 + 0.16 / 0.3) and manual == pytest.approx(1.8), term["idle"][-3000:]
    assert "by timing noise only: the manual score 1.8 stands" in term["idle"]


def test_an_edited_hand_in_whose_check_fails_clears_the_manual_grade(term):
    auto, manual = term["after_edit"]
    assert auto == 0.0 and manual is None, term["edited"][-3000:]
    assert "the hand-in changed (automatic score 1.5 -> 0)" in term["edited"]
    assert "the manual score 1.8 is cleared, 0.0 counts" in term["edited"]


def test_a_new_hand_in_with_the_same_automatic_score_clears_the_manual_grade(term):
    """A raise or a penalty given by hand graded the hand-in the instructor read (found by h-red2:
    a student's new, worse hand-in that scored the same kept a hand-given raise)."""
    auto, manual = term["after_ben_again"]
    assert auto == pytest.approx(term["after_noise"]["ben"][0]) and manual is None, term["ben_again"][-3000:]
    assert "ben 01-memory-layout transpose-test: the hand-in changed" in term["ben_again"]
    assert "the manual score 1.9 is cleared" in term["ben_again"]


def test_two_gradings_are_told_apart_by_the_regrade_rule(term):
    """.ci/gpu-cohort judges a cohort's scores against plain nbgrader's with graded_apart: a speed
    score moved by timing noise only is the same grading (cy: 0.45 then 0.47 of the library, no
    manual score, so each grading's record is kept); a speed moved beyond its runs' spread (ben), or
    another hand-in (ada's edit), is not; two students' same hand-ins graded alike are the same."""
    from grader.classroom.scores import graded_apart

    first, noise, edit = term["book_first"], term["book_noise"], term["book_edit"]
    assert term["after_noise"]["cy"][0] != pytest.approx(term["auto_first"]["cy"])  # the score did move
    assert graded_apart(first, "cy", noise, "cy", A) == []
    assert graded_apart(first, "ada", first, "ben", A) == []
    ben = graded_apart(first, "ben", noise, "ben", A)
    assert len(ben) == 1 and "transpose's speed moved from 0.45 to 0.58" in ben[0], ben
    ada = graded_apart(first, "ada", edit, "ada", A)
    assert ada and all("the hand-in changed" in w for w in ada), ada  # every cell: another hand-in
    assert any("transpose-test: the hand-in changed (automatic score 1.5 -> 0)" in w for w in ada), ada
    assert graded_apart(first, "cy", first, "nobody", A) == ["not graded in both"]
